/* ==========================================================================================
   src/kernels/random.c: TensorFlow-compatible Philox random numbers                 >>random
   RandomUniform, RandomStandardNormal and TruncatedNormal give TensorFlow's numbers bit for bit
   (float and double) when seed or seed2 is nonzero. The generator is Philox4x32-10: the key is
   seed (low word, high word), the 128-bit counter's upper half is seed2 and its lower half starts
   at zero; each run of a node reserves 256 counter steps per output element, so the second run of
   a session gives TF's second-run numbers too. The output is made in groups (4 floats or 2
   doubles); uniform and normal groups take one Philox block each, in order; a truncated-normal
   group starts its own stream 256 (float) or 128 (double) blocks after the previous group and
   draws from it until the group is full. The layout of every element is fixed by its group, so
   the numbers do not depend on how many threads fill the tensor (TF's single-thread and
   multi-thread outputs are the same too). With seed == seed2 == 0 TensorFlow picks random seeds;
   we keep key 0 and start the counter at a per-session random place (see df__step_rng_next), so
   unseeded numbers are not reproducible across sessions, as in TF, but are not TF's either.
   ========================================================================================== */

typedef struct df__philox { uint32_t key[2]; uint32_t ctr[4]; } df__philox;

static void df__philox_block(df__philox *g, uint32_t out[4]) {
    uint32_t c0 = g->ctr[0], c1 = g->ctr[1], c2 = g->ctr[2], c3 = g->ctr[3];
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t pa = (uint64_t)0xD2511F53u * c0, pb = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(pb >> 32) ^ c1 ^ k0, n2 = (uint32_t)(pa >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)pb; c3 = (uint32_t)pa; c0 = n0; c2 = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
    if (++g->ctr[0] == 0 && ++g->ctr[1] == 0 && ++g->ctr[2] == 0) ++g->ctr[3];
}

/* Advance the 128-bit counter by n blocks. */
static void df__philox_skip(df__philox *g, uint64_t n) {
    uint64_t lo = ((uint64_t)g->ctr[1] << 32 | g->ctr[0]), sum = lo + n;
    g->ctr[0] = (uint32_t)sum; g->ctr[1] = (uint32_t)(sum >> 32);
    if (sum < lo && ++g->ctr[2] == 0) ++g->ctr[3];
}

/* The 23 low bits as the mantissa of a float in [1, 2), minus 1. */
static float df__u32_to_f32(uint32_t x) {
    uint32_t bits = 0x3F800000u | (x & 0x7FFFFFu);
    float f;
    memcpy(&f, &bits, 4);
    return f - 1.0f;
}
/* 20 bits of a and 32 of b as the mantissa of a double in [1, 2), minus 1. */
static double df__u32x2_to_f64(uint32_t a, uint32_t b) {
    uint64_t bits = (uint64_t)0x3FF0000000000000ull | ((uint64_t)(a & 0xFFFFFu) << 32) | b;
    double d;
    memcpy(&d, &bits, 8);
    return d - 1.0;
}
static void df__box_muller_f32(uint32_t a, uint32_t b, float *z0, float *z1) {
    float u = df__u32_to_f32(a);
    if (u < 1.0e-7f) u = 1.0e-7f;
    float angle = (float)(2.0 * 3.14159265358979323846 * df__u32_to_f32(b));
    float rad = sqrtf(-2.0f * logf(u));
    *z0 = sinf(angle) * rad;
    *z1 = cosf(angle) * rad;
}
static void df__box_muller_f64(const uint32_t w[4], double *z0, double *z1) {
    double u = df__u32x2_to_f64(w[0], w[1]);
    if (u < 1.0e-7) u = 1.0e-7;
    double angle = 2.0 * 3.14159265358979323846 * df__u32x2_to_f64(w[2], w[3]);
    double rad = sqrt(-2.0 * log(u));
    *z0 = sin(angle) * rad;
    *z1 = cos(angle) * rad;
}

/* Fill one group (up to 4 floats or 2 doubles) of kind 0 uniform, 1 normal, 2 truncated normal. */
static void df__random_group(int kind, int dbl, df__philox *g, double out[4]) {
    uint32_t w[4];
    if (kind != 2) {
        df__philox_block(g, w);
        if (!dbl && kind == 0) for (int i = 0; i < 4; i++) out[i] = df__u32_to_f32(w[i]);
        else if (dbl && kind == 0) { out[0] = df__u32x2_to_f64(w[0], w[1]); out[1] = df__u32x2_to_f64(w[2], w[3]); }
        else if (!dbl) {
            float z[4];
            df__box_muller_f32(w[0], w[1], &z[0], &z[1]);
            df__box_muller_f32(w[2], w[3], &z[2], &z[3]);
            for (int i = 0; i < 4; i++) out[i] = z[i];
        } else df__box_muller_f64(w, &out[0], &out[1]);
        return;
    }
    /* truncated: single words from the stream, pairs of normals, keep those with |z| < 2 */
    int want = dbl ? 2 : 4, have = 0, used = 4;
    uint32_t buf[4];
    while (have < want) {
        uint32_t x[4];
        for (int i = 0; i < (dbl ? 4 : 2); i++) {
            if (used == 4) { df__philox_block(g, buf); used = 0; }
            x[i] = buf[used++];
        }
        double z[2];
        if (dbl) df__box_muller_f64(x, &z[0], &z[1]);
        else {
            float f0, f1;
            df__box_muller_f32(x[0], x[1], &f0, &f1);
            z[0] = f0; z[1] = f1;
        }
        for (int j = 0; j < 2 && have < want; j++) if (fabs(z[j]) < 2.0) out[have++] = z[j];
    }
}

DF_PRIVATE void df__random_fill(int kind, df_dtype t, uint64_t seed, uint64_t seed2, uint64_t skip,
                                void *data, int64_t n) {
    df__philox g = {{(uint32_t)seed, (uint32_t)(seed >> 32)}, {0, 0, (uint32_t)seed2, (uint32_t)(seed2 >> 32)}};
    df__philox_skip(&g, skip);
    int dbl = t == DF_DOUBLE, per = dbl ? 2 : 4;
    for (int64_t i = 0, grp = 0; i < n; i += per, grp++) {
        double v[4];
        if (kind == 2) {
            df__philox h = g;
            df__philox_skip(&h, (uint64_t)grp * (dbl ? 128u : 256u));
            df__random_group(kind, dbl, &h, v);
        } else df__random_group(kind, dbl, &g, v);
        for (int j = 0; j < per && i + j < n; j++) {
            if (dbl) ((double *)data)[i + j] = v[j];
            else if (t == DF_FLOAT) ((float *)data)[i + j] = (float)v[j];
            else df__set_from_f64(t, data, i + j, v[j]);
        }
    }
}
