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
   After them (the section below says how each takes its stream): RandomUniformInt, RandomShuffle,
   Multinomial, the V1 stateless ops (StatelessRandomUniform, -Normal, StatelessTruncatedNormal,
   -UniformInt, -UniformFullInt, StatelessMultinomial), the V2 ones (key, counter, alg) and
   StatelessRandomGetKeyCounter, -GetAlg, -GetKeyCounterAlg, also bit for bit (half and bfloat16
   too; Multinomial as TF's single-shard output). Fills split between the intra-op threads by
   groups; Philox runs eight blocks in AVX2 lanes where the CPU has them.
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

/* ==========================================================================================
   The integer, shuffle, multinomial and stateless ops (RandomUniformInt, RandomShuffle,
   Multinomial, StatelessRandom*V1/V2, StatelessMultinomial, StatelessRandomGet*): TensorFlow's
   numbers bit for bit on CPU. A Philox stream is a key and a 128-bit counter:
   - stateful ops (seed/seed2 attrs): key = seed, counter = (0, seed2), and each run first skips
     the blocks the node's earlier runs reserved (RandomUniformInt 256 per element, RandomShuffle
     ceil((rows - 1) / 4), Multinomial 256 * batch * 2 * ceil4(num_samples));
   - V1 stateless ops: the seed pair (s0, s1) is scrambled: one Philox block of counter
     (s0, s1) under key 0x02461E29'3EC8F720 gives the key (words 0, 1) and the counter's upper
     half (words 2, 3), lower half zero; StatelessRandomGetKeyCounter returns that key and counter;
   - V2 stateless ops: key [1] and counter [2] (uint64) given; alg 1 Philox, 3 (auto-select) is
     Philox on CPU, 2 ThreeFry is refused as TensorFlow's CPU kernels refuse it.
   Fill ops make groups (4 values of 32 bits, 2 of 64) from one block each, group g from block g;
   truncated normals start group g's own stream 256 (128 for 64-bit types) blocks after group
   g-1's, as TF's 'variable samples per output' rule does, so no value depends on the threads.
   Multinomial draws doubles from one stream row after row (2 words each, RandDouble), as TF's
   kernel does when one shard covers the batch; we start row b at word 2 * b * num_samples, which
   is that single-shard stream (TF's multi-shard layout, chosen from its thread count for big
   batches, is not reproduced). RandomShuffle is TF's Fisher-Yates: for i < rows - 1 swap
   row i with row i + (word % (rows - i)).
   ========================================================================================== */

enum { DF__RK_UNIFORM, DF__RK_NORMAL, DF__RK_TRUNC, DF__RK_INT, DF__RK_FULLINT };

static int df__r_wide(df_dtype t) { return t == DF_DOUBLE || t == DF_INT64 || t == DF_UINT64; }

/* One word at a time from a stream (TF's SingleSampleAdapter). */
typedef struct df__philox1 { df__philox g; uint32_t buf[4]; int used; } df__philox1;
static void df__philox1_init(df__philox1 *s, const df__philox *g, uint64_t word) {
    s->g = *g;
    df__philox_skip(&s->g, word / 4);
    s->used = 4;
    if (word % 4) { df__philox_block(&s->g, s->buf); s->used = (int)(word % 4); }
}
static uint32_t df__philox1_next(df__philox1 *s) {
    if (s->used == 4) { df__philox_block(&s->g, s->buf); s->used = 0; }
    return s->buf[s->used++];
}

/* Eight consecutive blocks of g (advancing it by 8): out[j] is block j. The AVX2 version runs
   the eight as lanes (the 32x32->64 products of even and odd lanes apart); same words. */
static void df__philox_block8(df__philox *g, uint32_t out[8][4]) {
    for (int j = 0; j < 8; j++) df__philox_block(g, out[j]);
}
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(DF_NO_SIMD)
#define DF__RAND_AVX2 1
/* The counters of 8 consecutive blocks as lanes (g advanced by 8), then the 10 rounds. */
__attribute__((target("avx2"))) static void df__philox_rounds8_avx2(df__philox *g, __m256i c[4]) {
    if (g->ctr[0] <= 0xFFFFFFF7u) {               /* no carry out of word 0 within the 8 */
        c[0] = _mm256_add_epi32(_mm256_set1_epi32((int)g->ctr[0]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (int w = 1; w < 4; w++) c[w] = _mm256_set1_epi32((int)g->ctr[w]);
        g->ctr[0] += 8;
    } else {
        uint32_t ctr[4][8];
        for (int j = 0; j < 8; j++) {
            for (int w = 0; w < 4; w++) ctr[w][j] = g->ctr[w];
            if (++g->ctr[0] == 0 && ++g->ctr[1] == 0 && ++g->ctr[2] == 0) ++g->ctr[3];
        }
        for (int w = 0; w < 4; w++) c[w] = _mm256_loadu_si256((const __m256i *)ctr[w]);
    }
    __m256i c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    const __m256i ma = _mm256_set1_epi64x(0xD2511F53), mb = _mm256_set1_epi64x(0xCD9E8D57);
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 10; r++) {
        __m256i pa_e = _mm256_mul_epu32(c0, ma), pa_o = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), ma);
        __m256i pb_e = _mm256_mul_epu32(c2, mb), pb_o = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), mb);
        __m256i hi_a = _mm256_blend_epi32(_mm256_srli_epi64(pa_e, 32), pa_o, 0xAA);
        __m256i lo_a = _mm256_blend_epi32(pa_e, _mm256_slli_epi64(pa_o, 32), 0xAA);
        __m256i hi_b = _mm256_blend_epi32(_mm256_srli_epi64(pb_e, 32), pb_o, 0xAA);
        __m256i lo_b = _mm256_blend_epi32(pb_e, _mm256_slli_epi64(pb_o, 32), 0xAA);
        c0 = _mm256_xor_si256(_mm256_xor_si256(hi_b, c1), _mm256_set1_epi32((int)k0));
        c2 = _mm256_xor_si256(_mm256_xor_si256(hi_a, c3), _mm256_set1_epi32((int)k1));
        c1 = lo_b; c3 = lo_a;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    /* transpose the 4 x 8 words to 8 blocks of 4: c[0] = blocks 0, 1; c[1] = 2, 3; ... */
    __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    __m256i b0 = _mm256_unpacklo_epi64(t0, t2), b1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i b2 = _mm256_unpacklo_epi64(t1, t3), b3 = _mm256_unpackhi_epi64(t1, t3);
    /* b0 = blocks 0 and 4, b1 = 1 and 5, b2 = 2 and 6, b3 = 3 and 7 (128-bit halves) */
    c[0] = _mm256_permute2x128_si256(b0, b1, 0x20);
    c[1] = _mm256_permute2x128_si256(b2, b3, 0x20);
    c[2] = _mm256_permute2x128_si256(b0, b1, 0x31);
    c[3] = _mm256_permute2x128_si256(b2, b3, 0x31);
}
__attribute__((target("avx2"))) static void df__philox_block8_avx2(df__philox *g, uint32_t out[8][4]) {
    __m256i c[4];
    df__philox_rounds8_avx2(g, c);
    for (int i = 0; i < 4; i++) _mm256_storeu_si256((__m256i *)out[2 * i], c[i]);
}
/* a * m mod 2^64 (m = mh:ml), then (that * d) >> 64, per 64-bit lane, a and d in the lanes' low words:
   Lemire's exact a % d for 32-bit a and d (m = 2^64 / d + 1, wrapping), as the scalar code does. */
__attribute__((target("avx2"))) static __m256i df__fastmod_lanes(__m256i a, __m256i ml, __m256i mh, __m256i d) {
    __m256i low = _mm256_add_epi64(_mm256_mul_epu32(a, ml), _mm256_slli_epi64(_mm256_mullo_epi32(a, mh), 32));
    __m256i t = _mm256_srli_epi64(_mm256_mul_epu32(low, d), 32);
    return _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(low, 32), d), t), 32);
}
/* 8 * k consecutive blocks (32 * k values) straight to dst: mode 0 float uniforms, 1 int32
   lo + word % d (fm = 2^64 / d + 1), 2 the words themselves. */
__attribute__((target("avx2"))) static void df__philox_fill32_avx2(df__philox *g, void *dst, int64_t k, int mode,
                                                                   uint64_t fm, uint32_t d, uint32_t lo) {
    const __m256i mant = _mm256_set1_epi32(0x7FFFFF), one_bits = _mm256_set1_epi32(0x3F800000);
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256i ml = _mm256_set1_epi64x((long long)(uint32_t)fm), mh = _mm256_set1_epi32((int)(uint32_t)(fm >> 32));
    const __m256i dv = _mm256_set1_epi64x((long long)d), lov = _mm256_set1_epi32((int)lo);
    for (int64_t i = 0; i < k; i++) {
        __m256i c[4];
        df__philox_rounds8_avx2(g, c);
        for (int v = 0; v < 4; v++) {
            if (mode == 0) {
                __m256 f = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(c[v], mant), one_bits));
                _mm256_storeu_ps((float *)dst + 32 * i + 8 * v, _mm256_sub_ps(f, one));
                continue;
            }
            __m256i r = c[v];
            if (mode == 1) {
                __m256i ev = df__fastmod_lanes(r, ml, mh, dv);
                __m256i od = df__fastmod_lanes(_mm256_srli_epi64(r, 32), ml, mh, dv);
                r = _mm256_add_epi32(_mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA), lov);
            }
            _mm256_storeu_si256((__m256i *)((uint32_t *)dst + 32 * i + 8 * v), r);
        }
    }
}
#endif

typedef struct df__rfill {
    int kind;
    df_dtype t;
    df__philox g;                /* the stream at group 0 */
    uint64_t lo, range;          /* DF__RK_INT: lo + bits % range (wrapping) */
    void *data;
    int64_t n;
} df__rfill;

static void df__rfill_store_f32(df_dtype t, void *data, int64_t i, float v) {
    if (t == DF_FLOAT) ((float *)data)[i] = v;
    else if (t == DF_HALF) ((uint16_t *)data)[i] = df_float_to_half(v);
    else ((uint16_t *)data)[i] = df_float_to_bfloat16(v);
}

/* Truncated normal groups [g0, g1): group g's own stream starts 256 (128 for 64-bit types) blocks after g-1's. */
static void df__rfill_trunc(const df__rfill *f, int64_t g0, int64_t g1) {
    int wide = df__r_wide(f->t), per = wide ? 2 : 4;
    for (int64_t grp = g0; grp < g1; grp++) {
        int64_t base = grp * per;
        int cnt = f->n - base < per ? (int)(f->n - base) : per;
        double v[4];
        df__philox h = f->g;
        df__philox_skip(&h, (uint64_t)grp * (wide ? 128u : 256u));
        df__random_group(2, wide, &h, v);
        for (int j = 0; j < cnt; j++) {
            if (wide) ((double *)f->data)[base + j] = v[j];
            else df__rfill_store_f32(f->t, f->data, base + j, (float)v[j]);
        }
    }
}

/* Groups [g0, g1) of a fill, 8 blocks (32 words in output order) at a time. */
static void df__rfill_groups(void *arg, int64_t g0, int64_t g1) {
    const df__rfill *f = (const df__rfill *)arg;
    if (f->kind == DF__RK_TRUNC) { df__rfill_trunc(f, g0, g1); return; }
    df_dtype t = f->t;
    int wide = df__r_wide(t), per = wide ? 2 : 4;
    df__philox g = f->g;
    df__philox_skip(&g, (uint64_t)g0);
    void (*gen8)(df__philox *, uint32_t[8][4]) = df__philox_block8;
#ifdef DF__RAND_AVX2
    if (df__isa() >= 1) gen8 = df__philox_block8_avx2;       /* 1: DF__ISA_AVX2 (src/kernels/elementwise.c) */
#endif
    /* a % d for 32-bit a and d as two multiplications (exact: Lemire's "fastmod") */
    uint64_t fm = f->kind == DF__RK_INT && !wide ? UINT64_MAX / (uint32_t)f->range + 1 : 0, d32 = (uint32_t)f->range;
#ifdef DF__RAND_AVX2
    int mode = f->kind == DF__RK_UNIFORM && t == DF_FLOAT ? 0 : f->kind == DF__RK_INT && !wide ? 1
             : f->kind == DF__RK_FULLINT && !wide ? 2 : -1;
    if (mode >= 0 && gen8 != df__philox_block8 && g1 - g0 >= 8) {
        int64_t k = (g1 - g0) / 8;
        if (g0 + 8 * k == (f->n + 3) / 4 && f->n % 4) k--;     /* the last, partial group: below */
        df__philox_fill32_avx2(&g, (uint32_t *)f->data + 4 * g0, k, mode, fm, (uint32_t)d32, (uint32_t)f->lo);
        g0 += 8 * k;
    }
#endif
    uint32_t blocks[8][4];
    const uint32_t *w = &blocks[0][0];
    for (int64_t grp = g0; grp < g1; grp += 8) {
        gen8(&g, blocks);
        int64_t base = grp * per, nb = g1 - grp < 8 ? g1 - grp : 8;
        int cnt = (int)(f->n - base < nb * per ? f->n - base : nb * per);
        switch (f->kind) {
        case DF__RK_UNIFORM:
            if (t == DF_FLOAT) {
                float *o = (float *)f->data + base;
                for (int j = 0; j < cnt; j++) o[j] = df__u32_to_f32(w[j]);
            } else if (t == DF_DOUBLE) {
                double *o = (double *)f->data + base;
                for (int j = 0; j < cnt; j++) o[j] = df__u32x2_to_f64(w[2 * j], w[2 * j + 1]);
            } else {                 /* 10 (half) or 7 (bfloat16) mantissa bits: [1, 2) - 1, exact */
                uint16_t *o = (uint16_t *)f->data + base;
                if (t == DF_HALF) for (int j = 0; j < cnt; j++) o[j] = df_float_to_half((float)(w[j] & 0x3FFu) / 1024.0f);
                else for (int j = 0; j < cnt; j++) o[j] = df_float_to_bfloat16((float)(w[j] & 0x7Fu) / 128.0f);
            }
            break;
        case DF__RK_NORMAL:
            if (wide) {
                double *o = (double *)f->data + base, z[2];
                for (int j = 0; j < cnt; j += 2) {
                    df__box_muller_f64(w + 2 * j, &z[0], &z[1]);
                    o[j] = z[0];
                    if (j + 1 < cnt) o[j + 1] = z[1];
                }
            } else {
                float z[2];
                for (int j = 0; j < cnt; j += 2) {
                    df__box_muller_f32(w[j], w[j + 1], &z[0], &z[1]);
                    df__rfill_store_f32(t, f->data, base + j, z[0]);
                    if (j + 1 < cnt) df__rfill_store_f32(t, f->data, base + j + 1, z[1]);
                }
            }
            break;
        case DF__RK_INT:
            if (wide) {
                uint64_t *o = (uint64_t *)f->data + base;
                for (int j = 0; j < cnt; j++) o[j] = f->lo + ((uint64_t)w[2 * j] | (uint64_t)w[2 * j + 1] << 32) % f->range;
            } else {
                uint32_t *o = (uint32_t *)f->data + base, lo = (uint32_t)f->lo;
                for (int j = 0; j < cnt; j++) {
                    uint64_t low = fm * w[j];
                    o[j] = lo + (uint32_t)(((low >> 32) * d32 + (((low & 0xFFFFFFFFu) * d32) >> 32)) >> 32);
                }
            }
            break;
        default:                 /* DF__RK_FULLINT */
            if (wide) {
                uint64_t *o = (uint64_t *)f->data + base;
                for (int j = 0; j < cnt; j++) o[j] = (uint64_t)w[2 * j] | (uint64_t)w[2 * j + 1] << 32;
            } else memcpy((uint32_t *)f->data + base, w, sizeof(uint32_t) * (size_t)cnt);
        }
    }
}

static void df__rfill_run(df__kctx *c, df__rfill *f) {
    int per = df__r_wide(f->t) ? 2 : 4;
    int64_t groups = (f->n + per - 1) / per;
    int64_t unit = f->kind == DF__RK_TRUNC || f->kind == DF__RK_NORMAL ? 256 : 2048;
    if (groups < 2 * unit) df__rfill_groups(f, 0, groups);
    else df__parallel_for(c->ipool, groups, unit, df__ipool_threads(c->ipool), df__rfill_groups, f);
}

/* TF's seed scrambling of the V1 stateless ops (GenerateKey). */
static void df__stateless_key(uint64_t s0, uint64_t s1, df__philox *g) {
    df__philox m = {{0x3EC8F720u, 0x02461E29u}, {(uint32_t)s0, (uint32_t)(s0 >> 32), (uint32_t)s1, (uint32_t)(s1 >> 32)}};
    uint32_t w[4];
    df__philox_block(&m, w);
    g->key[0] = w[0]; g->key[1] = w[1];
    g->ctr[0] = 0; g->ctr[1] = 0; g->ctr[2] = w[2]; g->ctr[3] = w[3];
}

/* The seed input of a V1 stateless op: shape [2], int32 or int64 (sign-extended, as TF). */
static int df__stateless_seed(df__kctx *c, const df_tensor *s, df__philox *g) {
    if (s->rank != 1 || s->dims[0] != 2) {
        char b[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "seed must have shape [2], not %s", df__dims_str(s->rank, s->dims, b, sizeof b));
        return 0;
    }
    if (s->dtype != DF_INT32 && s->dtype != DF_INT64) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid seed type: %s", df_dtype_name(s->dtype));
        return 0;
    }
    df__stateless_key((uint64_t)df__int_at(s, 0), (uint64_t)df__int_at(s, 1), g);
    return 1;
}

/* The stream of a seeded stateful op on this run: key seed, counter (0, seed2), past the
   blocks of the node's earlier runs; reserve: the blocks this run takes. */
static void df__stateful_gen(df__kctx *c, uint64_t reserve, df__philox *g) {
    uint64_t seed = (uint64_t)df__attr_i(c->node, "seed", 0), seed2 = (uint64_t)df__attr_i(c->node, "seed2", 0);
    df__philox s = {{(uint32_t)seed, (uint32_t)(seed >> 32)}, {0, 0, (uint32_t)seed2, (uint32_t)(seed2 >> 32)}};
    df__philox_skip(&s, df__step_rng_next(c->step, c->node, reserve));
    *g = s;
}

/* minval, maxval: scalars with minval < maxval; lo and range for DF__RK_INT. */
static int df__uniform_int_bounds(df__kctx *c, const df_tensor *mn, const df_tensor *mx, df__rfill *f) {
    const df_tensor *b[2] = {mn, mx};
    for (int i = 0; i < 2; i++)
        if (b[i]->rank != 0) {
            char s[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", i ? "maxval" : "minval",
                      df__dims_str(b[i]->rank, b[i]->dims, s, sizeof s));
            return 0;
        }
    df_dtype t = f->t;
    if (t == DF_UINT32 || t == DF_UINT64) {
        uint64_t lo = t == DF_UINT32 ? *(const uint32_t *)mn->data : *(const uint64_t *)mn->data;
        uint64_t hi = t == DF_UINT32 ? *(const uint32_t *)mx->data : *(const uint64_t *)mx->data;
        if (lo >= hi) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Need minval < maxval, got %llu >= %llu", (unsigned long long)lo, (unsigned long long)hi);
            return 0;
        }
        f->lo = lo; f->range = hi - lo;
        return 1;
    }
    int64_t lo = df__int_at(mn, 0), hi = df__int_at(mx, 0);
    if (lo >= hi) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Need minval < maxval, got %lld >= %lld", (long long)lo, (long long)hi);
        return 0;
    }
    f->lo = (uint64_t)lo;
    f->range = t == DF_INT32 ? (uint64_t)(uint32_t)((uint32_t)hi - (uint32_t)lo) : (uint64_t)hi - (uint64_t)lo;
    return 1;
}

static int df__rkind_of(const char *op) {
    if (strstr(op, "FullInt")) return DF__RK_FULLINT;
    if (strstr(op, "Int")) return DF__RK_INT;
    if (strstr(op, "Truncated")) return DF__RK_TRUNC;
    if (strstr(op, "Normal")) return DF__RK_NORMAL;
    return DF__RK_UNIFORM;
}

static int df__rtype_ok(df__kctx *c, int kind, df_dtype t) {
    int ok = kind == DF__RK_INT ? t == DF_INT32 || t == DF_INT64     /* TF's CPU kernels: no unsigned here */
        : kind == DF__RK_FULLINT ? t == DF_INT32 || t == DF_INT64 || t == DF_UINT32 || t == DF_UINT64
        : t == DF_FLOAT || t == DF_DOUBLE || t == DF_HALF || t == DF_BFLOAT16;
    if (!ok) DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no CPU kernel for %s", c->node->op->name, df_dtype_name(t));
    return ok;
}

/* RandomUniformInt: shape, minval, maxval; seed/seed2 attrs. */
DF_PRIVATE void df__k_random_uniform_int(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "shape", c->st)) return;
    df__rfill f = {DF__RK_INT, df__attr_type(c->node, "Tout"), {{0, 0}, {0, 0, 0, 0}}, 0, 0, NULL, 0};
    if (!df__rtype_ok(c, f.kind, f.t)) return;
    for (int i = 1; i < 3; i++)
        if (c->in[i]->rank != 0) {
            char b[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", i == 1 ? "minval" : "maxval",
                      df__dims_str(c->in[i]->rank, c->in[i]->dims, b, sizeof b));
            return;
        }
    df_tensor *o = df__k_alloc(c, 0, f.t, s.rank, s.dims);
    if (!o || o->n == 0) return;           /* zero impossible things are fine (TF) */
    if (!df__uniform_int_bounds(c, c->in[1], c->in[2], &f)) return;
    df__stateful_gen(c, (uint64_t)o->n * 256, &f.g);
    f.data = o->data; f.n = o->n;
    df__rfill_run(c, &f);
}

/* StatelessRandomUniform/Normal/TruncatedNormal/UniformInt/UniformFullInt (V1): shape, seed[, minval, maxval]. */
DF_PRIVATE void df__k_stateless_random(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "shape", c->st)) return;
    df__rfill f = {df__rkind_of(c->node->op->name), df__attr_type(c->node, "dtype"), {{0, 0}, {0, 0, 0, 0}}, 0, 0, NULL, 0};
    if (!df__rtype_ok(c, f.kind, f.t)) return;
    const df_tensor *seed = c->in[1];
    if (seed->rank != 1 || seed->dims[0] != 2) { df__stateless_seed(c, seed, &f.g); return; }
    df_tensor *o = df__k_alloc(c, 0, f.t, s.rank, s.dims);
    if (!o || o->n == 0) return;
    if (!df__stateless_seed(c, seed, &f.g)) return;
    if (f.kind == DF__RK_INT && !df__uniform_int_bounds(c, c->in[2], c->in[3], &f)) return;
    f.data = o->data; f.n = o->n;
    df__rfill_run(c, &f);
}

/* key [1], counter [>= counter size] and alg [] of a V2 op (inputs ki, ki + 1, ki + 2). */
static int df__key_counter_alg(df__kctx *c, int ki, int *alg) {
    const df_tensor *k = c->in[ki], *ct = c->in[ki + 1], *a = c->in[ki + 2];
    char b[96];
    if (a->rank != 0) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input %d (0-based) must have shape [], not %s", ki + 2, df__dims_str(a->rank, a->dims, b, sizeof b));
        return 0;
    }
    *alg = *(const int32_t *)a->data;
    if (*alg == 3) *alg = 1;     /* auto-select: Philox on CPU */
    if (*alg != 1 && *alg != 2) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Unsupported algorithm id: %d", *alg);
        return 0;
    }
    if (k->rank != 1 || k->dims[0] != 1) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "key must have shape [1], not %s. (Note that batched keys are not supported yet.)",
                  df__dims_str(k->rank, k->dims, b, sizeof b));
        return 0;
    }
    int need = *alg == 1 ? 2 : 1;
    if (ct->rank != 1 || ct->dims[0] < need) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "counter must be a vector with length at least %d; got shape: %s. "
                  "(Note that batched counters are not supported yet.)", need, df__dims_str(ct->rank, ct->dims, b, sizeof b));
        return 0;
    }
    return 1;
}

/* StatelessRandomUniformV2/NormalV2/TruncatedNormalV2/UniformIntV2/UniformFullIntV2:
   shape, key, counter, alg[, minval, maxval]. */
DF_PRIVATE void df__k_stateless_random_v2(df__kctx *c) {
    int alg;
    if (!df__key_counter_alg(c, 1, &alg)) return;
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "shape", c->st)) return;
    df__rfill f = {df__rkind_of(c->node->op->name), df__attr_type(c->node, "dtype"), {{0, 0}, {0, 0, 0, 0}}, 0, 0, NULL, 0};
    if (!df__rtype_ok(c, f.kind, f.t)) return;
    df_tensor *o = df__k_alloc(c, 0, f.t, s.rank, s.dims);
    if (!o || o->n == 0) return;
    if (f.kind == DF__RK_INT && !df__uniform_int_bounds(c, c->in[4], c->in[5], &f)) return;
    if (alg != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Unsupported algorithm id: %d", alg); return; }
    uint64_t key = ((const uint64_t *)c->in[1]->data)[0];
    const uint64_t *ctr = (const uint64_t *)c->in[2]->data;
    df__philox g = {{(uint32_t)key, (uint32_t)(key >> 32)},
                    {(uint32_t)ctr[0], (uint32_t)(ctr[0] >> 32), (uint32_t)ctr[1], (uint32_t)(ctr[1] >> 32)}};
    f.g = g;
    f.data = o->data; f.n = o->n;
    df__rfill_run(c, &f);
}

/* StatelessRandomGetKeyCounter (code 0) and StatelessRandomGetKeyCounterAlg (code 1): seed [2]. */
DF_PRIVATE void df__k_stateless_get_key_counter(df__kctx *c) {
    df__philox g;
    if (!df__stateless_seed(c, c->in[0], &g)) return;
    int64_t one = 1, two = 2;
    df_tensor *k = df__k_alloc(c, 0, DF_UINT64, 1, &one), *ct = df__k_alloc(c, 1, DF_UINT64, 1, &two);
    if (!k || !ct) return;
    ((uint64_t *)k->data)[0] = (uint64_t)g.key[0] | (uint64_t)g.key[1] << 32;
    ((uint64_t *)ct->data)[0] = (uint64_t)g.ctr[0] | (uint64_t)g.ctr[1] << 32;
    ((uint64_t *)ct->data)[1] = (uint64_t)g.ctr[2] | (uint64_t)g.ctr[3] << 32;
    if (c->node->op->code == 1) {
        df_tensor *a = df__k_alloc(c, 2, DF_INT32, 0, NULL);
        if (a) *(int32_t *)a->data = 1;
    }
}
/* StatelessRandomGetAlg: Philox (1), the CPU's choice. */
DF_PRIVATE void df__k_stateless_get_alg(df__kctx *c) {
    df_tensor *a = df__k_alloc(c, 0, DF_INT32, 0, NULL);
    if (a) *(int32_t *)a->data = 1;
}
DF_PRIVATE df_code df__sf_key_counter(df__shape_ctx *c) {
    df__shape *k = df__sc_out(c, 0), *ct = df__sc_out(c, 1);
    k->rank = 1; k->dims[0] = 1;
    ct->rank = 1; ct->dims[0] = 2;
    if (c->node->op->code == 1) *df__sc_out(c, 2) = df__shape_scalar();
    return DF_OK;
}

/* ---- RandomShuffle ---- */
DF_PRIVATE void df__k_random_shuffle(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (x->n <= 1 || x->dims[0] <= 1) { df__k_forward(c, 0, 0); return; }
    size_t es = df_dtype_size(x->dtype);
    if (x->dtype == DF_STRING || x->dtype == DF_RESOURCE || x->dtype == DF_VARIANT || es == 0) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "RandomShuffle has no CPU kernel for %s", df_dtype_name(x->dtype));
        return;
    }
    int64_t rows = x->dims[0], row_bytes = (int64_t)es * (x->n / rows);
    int64_t *perm = (int64_t *)DF_MALLOC(sizeof(int64_t) * (size_t)rows);
    if (!perm) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory shuffling %lld rows", (long long)rows); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, x->dims);
    if (!o) { DF_FREE(perm); return; }
    df__philox g;
    df__stateful_gen(c, (uint64_t)(rows - 1 + 3) / 4, &g);
    df__philox1 s;
    df__philox1_init(&s, &g, 0);
    for (int64_t i = 0; i < rows; i++) perm[i] = i;
    for (int64_t i = 0; i < rows - 1; i++) {
        uint32_t span = (uint32_t)(rows - i);          /* TF's uniform(uint32 n) */
        int64_t j = i + (int64_t)(df__philox1_next(&s) % span);
        int64_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    for (int64_t i = 0; i < rows; i++)
        memcpy((char *)o->data + i * row_bytes, (const char *)x->data + perm[i] * row_bytes, (size_t)row_bytes);
    DF_FREE(perm);
}

/* ---- Multinomial (code 0, seed/seed2 attrs) and StatelessMultinomial (code 1, seed input) ---- */
typedef struct df__mn_job {
    const df_tensor *logits;
    df_tensor *out;
    df__philox g;
    int64_t classes, samples;
    double *cdf;                 /* classes per part, allocated by the caller for `parts` parts */
    int64_t rows_per_part;
} df__mn_job;

static double df__lowest(df_dtype t) {
    return t == DF_FLOAT ? -(double)FLT_MAX : t == DF_HALF ? -65504.0 : t == DF_BFLOAT16 ? -3.3895313892515355e38 : -DBL_MAX;
}

static void df__mn_rows(void *arg, int64_t r0, int64_t r1) {
    const df__mn_job *j = (const df__mn_job *)arg;
    const df_tensor *l = j->logits;
    int64_t nc = j->classes, ns = j->samples;
    double *cdf = j->cdf + (r0 / j->rows_per_part) * nc;
    df__philox1 s;
    df__philox1_init(&s, &j->g, (uint64_t)(2 * r0 * ns));
    for (int64_t b = r0; b < r1; b++) {
        double mx = df__lowest(l->dtype), total = 0;
        for (int64_t k = 0; k < nc; k++) {
            double v = df__get_f64(l->dtype, l->data, b * nc + k);
            if (isfinite(v) && v > mx) mx = v;
        }
        for (int64_t k = 0; k < nc; k++) {
            double v = df__get_f64(l->dtype, l->data, b * nc + k);
            if (isfinite(v)) total += exp(v - mx);
            cdf[k] = total;
        }
        for (int64_t k = 0; k < ns; k++) {
            uint32_t a = df__philox1_next(&s), bb = df__philox1_next(&s);
            double find = df__u32x2_to_f64(a, bb) * total;
            int64_t lo = 0, hi = nc;                    /* first cdf > find (upper_bound) */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] <= find) lo = mid + 1; else hi = mid;
            }
            if (j->out->dtype == DF_INT32) ((int32_t *)j->out->data)[b * ns + k] = (int32_t)lo;
            else ((int64_t *)j->out->data)[b * ns + k] = lo;
        }
    }
}

DF_PRIVATE void df__k_multinomial(df__kctx *c) {
    const df_tensor *l = c->in[0], *nst = c->in[1];
    int stateless = c->node->op->code == 1;
    df__philox g = {{0, 0}, {0, 0, 0, 0}};
    char b[96];
    if (stateless) {
        const df_tensor *seed = c->in[2];
        if (seed->rank != 1 || seed->dims[0] != 2) { df__stateless_seed(c, seed, &g); return; }
        if (!df__stateless_seed(c, seed, &g)) return;
    }
    if (l->rank != 2) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits should be a matrix, got shape %s", df__dims_str(l->rank, l->dims, b, sizeof b));
        return;
    }
    if (nst->rank != 0) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_samples should be a scalar, got shape %s", df__dims_str(nst->rank, nst->dims, b, sizeof b));
        return;
    }
    int32_t ns = *(const int32_t *)nst->data;
    if (ns < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_samples should be non-negative, got %d", ns); return; }
    if (l->dims[0] > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "batch_size cannot exceed max int"); return; }
    if (l->dims[1] > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_classes cannot exceed max int"); return; }
    if (l->dims[1] <= 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_classes should be positive, got %lld", (long long)l->dims[1]); return; }
    df_dtype lt = l->dtype, ot = df__attr_type(c->node, "output_dtype");
    if (lt != DF_FLOAT && lt != DF_DOUBLE && lt != DF_HALF && lt != DF_BFLOAT16) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no CPU kernel for %s logits", c->node->op->name, df_dtype_name(lt));
        return;
    }
    int64_t dims[2] = {l->dims[0], ns};
    df_tensor *o = df__k_alloc(c, 0, ot == DF_INT32 ? DF_INT32 : DF_INT64, 2, dims);
    if (!o || o->n == 0) return;
    if (!stateless) df__stateful_gen(c, (uint64_t)l->dims[0] * (uint64_t)(((int64_t)ns + 3) / 4 * 4) * 2 * 256, &g);
    int parts = df__ipool_threads(c->ipool);
    int64_t rows = l->dims[0];
    if ((double)rows * (double)ns * 8 + (double)rows * (double)l->dims[1] < 1 << 18) parts = 1;
    if (parts > rows) parts = (int)rows;
    df__mn_job j = {l, o, g, l->dims[1], ns, NULL, (rows + parts - 1) / parts};
    j.cdf = (double *)DF_MALLOC(sizeof(double) * (size_t)(l->dims[1] * parts));
    if (!j.cdf) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for %lld classes", (long long)l->dims[1]); return; }
    if (parts <= 1) df__mn_rows(&j, 0, rows);
    else df__parallel_for(c->ipool, rows, j.rows_per_part, parts, df__mn_rows, &j);
    DF_FREE(j.cdf);
}

DF_PRIVATE df_code df__sf_multinomial(df__shape_ctx *c) {
    const df__shape *l = &c->in_shapes[0];
    if (l->rank >= 0 && l->rank != 2) {
        char b[96];
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits should be a matrix, got shape %s", df__dims_str(l->rank, l->dims, b, sizeof b));
    }
    df__shape *o = df__sc_out(c, 0);
    const df_tensor *ns = df__sc_const(c, 1);
    o->rank = 2;
    o->dims[0] = l->rank == 2 ? l->dims[0] : -1;
    o->dims[1] = ns && ns->rank == 0 && ns->dtype == DF_INT32 ? *(const int32_t *)ns->data : -1;
    return DF_OK;
}
