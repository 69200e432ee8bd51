/* ==========================================================================================
   src/kernels/nn_extra.c: CPU kernels: fused batch norm, depthwise convolution        >>nnx
   FusedBatchNorm, V2, V3 and their gradient ops (FusedBatchNormGrad, V2, V3) as TensorFlow's
   CPU kernels compute them: x (float, half or bfloat16; 4-D or 5-D) is read as float, the
   per-channel sums are float over blocks of rows, then double; training normalises with the
   biased batch variance and reports the Bessel-corrected one (blended with the running one
   when exponential_avg_factor != 1); reserve_space_1/2 hold the batch mean and biased variance
   the gradient op reads. DepthwiseConv2dNative and its two backprop ops (NHWC; input
   [n,h,w,c], filter [kh,kw,c,m], output channel c*m + k): the forward tiles 4 output pixels x 8
   channels in AVX2 registers; the input gradient is the forward with the filter turned at
   stride 1 and a gather per input pixel otherwise; the filter gradient sums per thread share
   into slots added in a fixed order (3x3: the nine taps in registers). Work is split between
   the intra-op threads in fixed shares: the same bits every run for a given thread count.
   Gradient functions (second order included) follow TensorFlow's nn_grad.py.
   ========================================================================================== */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(DF_NO_SIMD)
#define DF__NNX_X86 1
#define DF__NNX_AVX2 __attribute__((target("avx2,fma")))
#endif

static float df__nnx_attr_f(const df_node *n, const char *name, float def) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_FLOAT ? a->u.f : def;
}
/* Element i of a float, half or bfloat16 buffer as float, and back (round to nearest even). */
static float df__nnx_get(df_dtype t, const void *p, int64_t i) {
    if (t == DF_HALF) return df_half_to_float(((const uint16_t *)p)[i]);
    if (t == DF_BFLOAT16) return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}
static void df__nnx_set(df_dtype t, void *p, int64_t i, float v) {
    if (t == DF_HALF) ((uint16_t *)p)[i] = df_float_to_half(v);
    else if (t == DF_BFLOAT16) ((uint16_t *)p)[i] = df_float_to_bfloat16(v);
    else ((float *)p)[i] = v;
}
static int df__nnx_half_like(df_dtype t) { return t == DF_HALF || t == DF_BFLOAT16; }
/* A float copy of a half or bfloat16 tensor's values (NULL: out of memory, reported). */
static float *df__nnx_floats(df__kctx *c, const df_tensor *t) {
    float *f = (float *)DF_MALLOC((size_t)t->n * sizeof(float) + 1);
    if (!f) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    for (int64_t i = 0; i < t->n; i++) f[i] = df__nnx_get(t->dtype, t->data, i);
    return f;
}

/* ---- FusedBatchNorm ---- */
/* x seen as [outer][c][inner]: channels last (NHWC, NDHWC) has inner 1, channels first (NCHW,
   NCDHW) outer n. rest = outer * inner values per channel. */
typedef struct df__bn_geo { int64_t outer, c, inner, rest; } df__bn_geo;
static int df__bn_layout(df__kctx *c, const df_tensor *x, const char *what, df__bn_geo *g) {
    const char *fmt = df__attr_s(c->node, "data_format");
    int first = !strcmp(fmt, "NCHW") || !strcmp(fmt, "NCDHW");
    if (*fmt && !first && strcmp(fmt, "NHWC") && strcmp(fmt, "NDHWC")) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid data format '%s'", fmt);
        return 0;
    }
    if (x->rank != 4 && x->rank != 5) {
        char s[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be 4 or 5-dimensional%s", what, df__dims_str(x->rank, x->dims, s, 96));
        return 0;
    }
    g->c = x->dims[first ? 1 : x->rank - 1];
    g->outer = first ? x->dims[0] : 1;
    g->inner = 1;
    for (int d = 0; d < x->rank; d++)
        if (d != (first ? 1 : x->rank - 1)) { if (first && d > 0) g->inner *= x->dims[d]; else if (!first) g->outer *= x->dims[d]; }
    g->rest = g->outer * g->inner;
    return 1;
}
/* A 1-D float argument with C values (TF's checks and wording); what2 prefixes the count error. */
static int df__bn_vec(df__kctx *c, const df_tensor *t, const char *what, const char *prefix, int64_t ch) {
    if (t->rank != 1) {
        char s[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be 1-dimensional%s", what, df__dims_str(t->rank, t->dims, s, 96));
        return 0;
    }
    if (t->dtype != DF_FLOAT) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no CPU kernel for %s %s", c->node->op->name, what, df_dtype_name(t->dtype));
        return 0;
    }
    if (ch >= 0 && t->dims[0] != ch) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s%s must have the same number of elements as the channels of x, got %lld and %lld",
                  prefix, what, (long long)t->dims[0], (long long)ch);
        return 0;
    }
    return 1;
}
static int df__bn_x_type(df__kctx *c, df_dtype t) {
    if (t == DF_FLOAT || df__nnx_half_like(t)) return 1;
    DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no CPU kernel for %s", c->node->op->name, df_dtype_name(t));
    return 0;
}
/* The passes over x (and dy): sums of x (MEAN), of (x - mu)^2 (VAR), of dy and dy * (x - mu) * k1
   (GSUM); the outputs y = (x - mu) * k1 + k2 (Y) and dx (DX: training k1 * ((dy - k2) - (x - mu)
   * k3), inference dy * k1). Channels-last rows go through vector helpers over the channels;
   channels-first runs of `inner` values through plain loops. Sums are kept in float over
   blocks of rows, then in double, per thread share (slot), and the slots added in order. */
enum { DF__BN_MEAN, DF__BN_VAR, DF__BN_GSUM, DF__BN_Y, DF__BN_DX };
typedef struct df__bn_job {
    const df__bn_geo *g;
    int pass, train, isa;
    int64_t parts;
    const float *x, *dy, *mu, *k1, *k2, *k3;
    float *out;
    double *slots;               /* parts x 2C */
    float *tmp;                  /* parts x 2C: a share's float sums over a block of rows */
} df__bn_job;
static void df__bn_row_sums(int pass, const float *x, const float *dy, const float *mu, const float *k1, int64_t C,
                            float *t1, float *t2) {
    if (pass == DF__BN_MEAN) for (int64_t i = 0; i < C; i++) t1[i] += x[i];
    else if (pass == DF__BN_VAR) for (int64_t i = 0; i < C; i++) { float d = x[i] - mu[i]; t1[i] += d * d; }
    else for (int64_t i = 0; i < C; i++) { t1[i] += dy[i]; t2[i] += dy[i] * ((x[i] - mu[i]) * k1[i]); }
}
static void df__bn_row_out(int pass, int train, const float *x, const float *dy, const float *mu, const float *k1,
                           const float *k2, const float *k3, int64_t C, float *o) {
    if (pass == DF__BN_Y) for (int64_t i = 0; i < C; i++) o[i] = (x[i] - mu[i]) * k1[i] + k2[i];
    else if (train) for (int64_t i = 0; i < C; i++) o[i] = k1[i] * ((dy[i] - k2[i]) - (x[i] - mu[i]) * k3[i]);
    else for (int64_t i = 0; i < C; i++) o[i] = dy[i] * k1[i];
}
#ifdef DF__NNX_X86
DF__NNX_AVX2 static void df__bn_row_sums_avx2(int pass, const float *x, const float *dy, const float *mu, const float *k1,
                                             int64_t C, float *t1, float *t2) {
    int64_t i = 0;
    for (; i + 8 <= C; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i), a = _mm256_loadu_ps(t1 + i);
        if (pass == DF__BN_MEAN) a = _mm256_add_ps(a, xv);
        else if (pass == DF__BN_VAR) { __m256 d = _mm256_sub_ps(xv, _mm256_loadu_ps(mu + i)); a = _mm256_add_ps(a, _mm256_mul_ps(d, d)); }
        else {
            __m256 dv = _mm256_loadu_ps(dy + i), xs = _mm256_mul_ps(_mm256_sub_ps(xv, _mm256_loadu_ps(mu + i)), _mm256_loadu_ps(k1 + i));
            a = _mm256_add_ps(a, dv);
            _mm256_storeu_ps(t2 + i, _mm256_add_ps(_mm256_loadu_ps(t2 + i), _mm256_mul_ps(dv, xs)));
        }
        _mm256_storeu_ps(t1 + i, a);
    }
    df__bn_row_sums(pass, x + i, dy ? dy + i : NULL, mu ? mu + i : NULL, k1 ? k1 + i : NULL, C - i, t1 + i, t2 ? t2 + i : NULL);
}
DF__NNX_AVX2 static void df__bn_row_out_avx2(int pass, int train, const float *x, const float *dy, const float *mu,
                                            const float *k1, const float *k2, const float *k3, int64_t C, float *o) {
    int64_t i = 0;
    for (; i + 8 <= C; i += 8) {
        __m256 r, a = _mm256_loadu_ps(k1 + i);
        if (pass == DF__BN_Y)
            r = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(mu + i)), a), _mm256_loadu_ps(k2 + i));
        else if (train) {
            __m256 c = _mm256_sub_ps(_mm256_loadu_ps(dy + i), _mm256_loadu_ps(k2 + i));
            __m256 xc = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(mu + i)), _mm256_loadu_ps(k3 + i));
            r = _mm256_mul_ps(a, _mm256_sub_ps(c, xc));
        } else r = _mm256_mul_ps(_mm256_loadu_ps(dy + i), a);
        _mm256_storeu_ps(o + i, r);
    }
    df__bn_row_out(pass, train, x + i, dy ? dy + i : NULL, mu + i, k1 + i, k2 ? k2 + i : NULL, k3 ? k3 + i : NULL, C - i, o + i);
}
#endif
/* Share s of J->parts: outer rows [s*outer/parts, (s+1)*outer/parts). */
static void df__bn_share(void *arg, int64_t lo, int64_t hi) {
    const df__bn_job *J = (const df__bn_job *)arg;
    const df__bn_geo *g = J->g;
    const int64_t C = g->c, in = g->inner;
    void (*sums)(int, const float *, const float *, const float *, const float *, int64_t, float *, float *) = df__bn_row_sums;
    void (*outs)(int, int, const float *, const float *, const float *, const float *, const float *, const float *,
                 int64_t, float *) = df__bn_row_out;
#ifdef DF__NNX_X86
    if (J->isa) { sums = df__bn_row_sums_avx2; outs = df__bn_row_out_avx2; }
#endif
    int sum = J->pass <= DF__BN_GSUM;
    for (int64_t s = lo; s < hi; s++) {
        float *tmp = sum ? J->tmp + s * 2 * C : NULL;
        int64_t o0 = s * g->outer / J->parts, o1 = (s + 1) * g->outer / J->parts;
        double *s1 = J->slots ? J->slots + s * 2 * C : NULL, *s2 = s1 ? s1 + C : NULL;
        if (sum) { for (int64_t ch = 0; ch < 2 * C; ch++) s1[ch] = 0; }
        if (in == 1) {                  /* channels last: rows of C */
            for (int64_t o = o0; o < o1;) {
                int64_t stop = DF__MIN(o1, o + 256);
                if (sum) memset(tmp, 0, (size_t)(2 * C) * sizeof(float));
                for (; o < stop; o++) {
                    const float *xr = J->x + o * C, *dr = J->dy ? J->dy + o * C : NULL;
                    if (sum) sums(J->pass, xr, dr, J->mu, J->k1, C, tmp, tmp + C);
                    else outs(J->pass, J->train, xr, dr, J->mu, J->k1, J->k2, J->k3, C, J->out + o * C);
                }
                if (sum) for (int64_t ch = 0; ch < 2 * C; ch++) s1[ch] += tmp[ch];
            }
            continue;
        }
        for (int64_t o = o0; o < o1; o++)   /* channels first: runs of `inner` values */
            for (int64_t ch = 0; ch < C; ch++) {
                int64_t base = (o * C + ch) * in;
                const float *xr = J->x + base, *dr = J->dy ? J->dy + base : NULL;
                float m = J->mu ? J->mu[ch] : 0, a = J->k1 ? J->k1[ch] : 0, b = J->k2 ? J->k2[ch] : 0, q = J->k3 ? J->k3[ch] : 0;
                float u = 0, v = 0;
                switch (J->pass) {
                case DF__BN_MEAN: for (int64_t e = 0; e < in; e++) u += xr[e]; break;
                case DF__BN_VAR: for (int64_t e = 0; e < in; e++) { float d = xr[e] - m; u += d * d; } break;
                case DF__BN_GSUM: for (int64_t e = 0; e < in; e++) { u += dr[e]; v += dr[e] * ((xr[e] - m) * a); } break;
                case DF__BN_Y: for (int64_t e = 0; e < in; e++) J->out[base + e] = (xr[e] - m) * a + b; break;
                default:
                    if (J->train) for (int64_t e = 0; e < in; e++) J->out[base + e] = a * ((dr[e] - b) - (xr[e] - m) * q);
                    else for (int64_t e = 0; e < in; e++) J->out[base + e] = dr[e] * a;
                }
                if (sum) { s1[ch] += u; s2[ch] += v; }
            }
    }
}
/* Runs one pass over the intra-op threads; sums (when the pass makes them) into s1, s2.
   Returns 0 out of memory. */
static int df__bn_pass(df__kctx *c, df__bn_job *J, double *s1, double *s2) {
    const df__bn_geo *g = J->g;
    int64_t n = g->outer * g->c * g->inner;
    int threads = n < 65536 ? 1 : df__ipool_threads(c->ipool);
    J->parts = DF__MAX((int64_t)1, DF__MIN((int64_t)threads, g->outer));
    J->slots = NULL;
    J->tmp = NULL;
#ifdef DF__NNX_X86
    J->isa = df__isa() >= 1;
#endif
    if (J->pass <= DF__BN_GSUM) {
        J->slots = (double *)DF_MALLOC((size_t)(J->parts * 2 * g->c) * sizeof(double) + 1);
        J->tmp = (float *)DF_MALLOC((size_t)(J->parts * 2 * g->c) * sizeof(float) + 1);
        if (!J->slots || !J->tmp) { DF_FREE(J->slots); DF_FREE(J->tmp); return 0; }
    }
    df__parallel_for(c->ipool, J->parts, 1, (int)J->parts, df__bn_share, J);
    if (J->slots)
        for (int64_t ch = 0; ch < g->c; ch++) {
            double a = 0, b = 0;
            for (int64_t p = 0; p < J->parts; p++) { a += J->slots[p * 2 * g->c + ch]; b += J->slots[p * 2 * g->c + g->c + ch]; }
            s1[ch] = a;
            if (s2) s2[ch] = b;
        }
    DF_FREE(J->slots);
    DF_FREE(J->tmp);
    return 1;
}

DF_PRIVATE void df__k_fused_batch_norm(df__kctx *c) {
    const df_tensor *x = c->in[0], *scale = c->in[1], *offset = c->in[2], *mean = c->in[3], *var = c->in[4];
    const df_node *n = c->node;
    int train = df__attr_b(n, "is_training", 1), v3 = c->n_out > 5;
    float eps = df__nnx_attr_f(n, "epsilon", 1e-4f), factor = df__nnx_attr_f(n, "exponential_avg_factor", 1.0f);
    df__bn_geo g;
    if (!df__bn_x_type(c, x->dtype) || !df__bn_layout(c, x, "input", &g)) return;
    if (!df__bn_vec(c, scale, "scale", "", g.c) || !df__bn_vec(c, offset, "offset", "", g.c)) return;
    int use_running = !train || factor != 1.0f;
    const char *pre = train ? "When exponential_avg_factor != 1, " : "When is_training=false, ";
    if (!df__bn_vec(c, mean, "mean", pre, use_running ? g.c : -1) || !df__bn_vec(c, var, "variance", pre, use_running ? g.c : -1)) return;
    int64_t cd = g.c, zero = 0;
    df_tensor *y = df__k_alloc(c, 0, x->dtype, x->rank, x->dims), *bm = df__k_alloc(c, 1, DF_FLOAT, 1, &cd);
    df_tensor *bv = df__k_alloc(c, 2, DF_FLOAT, 1, &cd), *r1 = df__k_alloc(c, 3, DF_FLOAT, 1, &cd);
    df_tensor *r2 = df__k_alloc(c, 4, DF_FLOAT, 1, &cd), *r3 = v3 ? df__k_alloc(c, 5, DF_FLOAT, 0, &zero) : NULL;
    if (!y || !bm || !bv || !r1 || !r2 || (v3 && !r3)) return;
    if (r3) ((float *)r3->data)[0] = 0;          /* TF's CPU kernel: a scalar placeholder */
    int conv = x->dtype != DF_FLOAT;
    const float *xf = conv ? df__nnx_floats(c, x) : (const float *)x->data;
    float *yf = !conv ? (float *)y->data : xf ? (float *)DF_MALLOC((size_t)x->n * sizeof(float) + 1) : NULL;
    double *acc = (double *)DF_MALLOC((size_t)(2 * g.c) * sizeof(double) + 1);
    float *mu = (float *)DF_MALLOC((size_t)(2 * g.c) * sizeof(float) + 1);
    int ok = xf && yf && acc && mu;
    float *sf = ok ? mu + g.c : NULL;            /* scale * rsqrt(variance + epsilon) */
    const float *sc = (const float *)scale->data, *of = (const float *)offset->data;
    float *obm = (float *)bm->data, *obv = (float *)bv->data, *or1 = (float *)r1->data, *or2 = (float *)r2->data;
    df__bn_job J;
    memset(&J, 0, sizeof J);
    J.g = &g; J.x = xf;
    if (ok && train) {
        double *s1 = acc, *s2 = acc + g.c;
        J.pass = DF__BN_MEAN;
        ok = df__bn_pass(c, &J, s1, NULL);
        float inv = 1.0f / (float)g.rest;        /* an empty batch gives NaN statistics, as TF's */
        for (int64_t ch = 0; ok && ch < g.c; ch++) mu[ch] = (float)s1[ch] * inv;
        J.pass = DF__BN_VAR; J.mu = mu;
        ok = ok && df__bn_pass(c, &J, s2, NULL);
        float adjust = (float)g.rest / (float)(g.rest > 1 ? g.rest - 1 : 1);   /* Bessel's correction */
        for (int64_t ch = 0; ok && ch < g.c; ch++) {
            float bvar = (float)s2[ch] * inv;
            sf[ch] = 1.0f / sqrtf(bvar + eps) * sc[ch];
            or1[ch] = mu[ch]; or2[ch] = bvar;
            if (factor == 1.0f) { obm[ch] = mu[ch]; obv[ch] = bvar * adjust; }
            else {
                float keep = 1.0f - factor;
                obm[ch] = keep * ((const float *)mean->data)[ch] + factor * mu[ch];
                obv[ch] = keep * ((const float *)var->data)[ch] + factor * adjust * bvar;
            }
        }
    } else if (ok) {
        const float *em = (const float *)mean->data, *ev = (const float *)var->data;
        for (int64_t ch = 0; ch < g.c; ch++) {
            mu[ch] = em[ch];
            sf[ch] = 1.0f / sqrtf(ev[ch] + eps) * sc[ch];
            obm[ch] = or1[ch] = em[ch];
            obv[ch] = or2[ch] = ev[ch];
        }
    }
    J.pass = DF__BN_Y; J.mu = mu; J.k1 = sf; J.k2 = of; J.out = yf;
    ok = ok && df__bn_pass(c, &J, NULL, NULL);
    if (ok && conv) for (int64_t i = 0; i < x->n; i++) df__nnx_set(x->dtype, y->data, i, yf[i]);
    if (!ok && c->st->code == DF_OK) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory");
    if (conv) { DF_FREE((void *)(uintptr_t)xf); DF_FREE(yf); }
    DF_FREE(acc);
    DF_FREE(mu);
}

/* The gradient op: x_backprop, scale_backprop, offset_backprop from y_backprop, x, scale and the
   saved mean and (biased) variance; is_training=false reads the running ones instead. */
DF_PRIVATE void df__k_fused_batch_norm_grad(df__kctx *c) {
    const df_tensor *dy = c->in[0], *x = c->in[1], *scale = c->in[2], *mean = c->in[3], *var = c->in[4];
    const df_node *n = c->node;
    int train = df__attr_b(n, "is_training", 1);
    float eps = df__nnx_attr_f(n, "epsilon", 1e-4f);
    df__bn_geo g, gd;
    if (!df__bn_x_type(c, x->dtype) || !df__bn_layout(c, dy, "y_backprop", &gd) || !df__bn_layout(c, x, "x", &g)) return;
    int same = dy->rank == x->rank && dy->dtype == x->dtype;
    for (int d = 0; same && d < x->rank; d++) same = dy->dims[d] == x->dims[d];
    if (!same) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "x and y_backprop must have same shape, but x has shape %s and y_backprop has shape %s",
                  df__dims_str(x->rank, x->dims, s1, 96), df__dims_str(dy->rank, dy->dims, s2, 96));
        return;
    }
    if (!df__bn_vec(c, scale, "scale", "", g.c) || !df__bn_vec(c, mean, "reserve_space_1", "", g.c) ||
        !df__bn_vec(c, var, "reserve_space_2", "", g.c)) return;
    int64_t cd = g.c, zero = 0;
    df_tensor *dx = df__k_alloc(c, 0, x->dtype, x->rank, x->dims), *ds = df__k_alloc(c, 1, DF_FLOAT, 1, &cd);
    df_tensor *db = df__k_alloc(c, 2, DF_FLOAT, 1, &cd), *r4 = df__k_alloc(c, 3, DF_FLOAT, 1, &zero);
    df_tensor *r5 = df__k_alloc(c, 4, DF_FLOAT, 1, &zero);
    if (!dx || !ds || !db || !r4 || !r5) return;
    int conv = x->dtype != DF_FLOAT;
    const float *xf = conv ? df__nnx_floats(c, x) : (const float *)x->data;
    const float *df = !conv ? (const float *)dy->data : xf ? df__nnx_floats(c, dy) : NULL;
    float *dxf = !conv ? (float *)dx->data : df ? (float *)DF_MALLOC((size_t)x->n * sizeof(float) + 1) : NULL;
    double *acc = (double *)DF_MALLOC((size_t)(2 * g.c) * sizeof(double) + 1);
    float *k = (float *)DF_MALLOC((size_t)(4 * g.c) * sizeof(float) + 1);
    int ok = xf && df && dxf && acc && k;
    const float *sc = (const float *)scale->data, *mu = (const float *)mean->data, *vr = (const float *)var->data;
    float *coef0 = k, *coef1 = ok ? k + g.c : NULL, *mdy = ok ? k + 2 * g.c : NULL, *q = ok ? k + 3 * g.c : NULL;
    float *ods = (float *)ds->data, *odb = (float *)db->data;
    for (int64_t ch = 0; ok && ch < g.c; ch++) { coef0[ch] = 1.0f / sqrtf(vr[ch] + eps); coef1[ch] = sc[ch] * coef0[ch]; }
    df__bn_job J;
    memset(&J, 0, sizeof J);
    J.g = &g; J.x = xf; J.dy = df; J.mu = mu; J.k1 = coef0;
    J.pass = DF__BN_GSUM;                       /* sum(dy), sum(dy * x_scaled) */
    ok = ok && df__bn_pass(c, &J, acc, acc + g.c);
    float inv = 1.0f / (float)(g.rest ? g.rest : 1);
    for (int64_t ch = 0; ok && ch < g.c; ch++) {
        odb[ch] = (float)acc[ch];
        ods[ch] = (float)acc[g.c + ch];
        mdy[ch] = (float)acc[ch] * inv;
        q[ch] = coef0[ch] * ((float)acc[g.c + ch] * inv);
    }
    J.pass = DF__BN_DX; J.train = train; J.k1 = coef1; J.k2 = mdy; J.k3 = q; J.out = dxf;
    ok = ok && df__bn_pass(c, &J, NULL, NULL);
    if (ok && conv) for (int64_t i = 0; i < x->n; i++) df__nnx_set(x->dtype, dx->data, i, dxf[i]);
    if (!ok && c->st->code == DF_OK) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory");
    if (conv) { DF_FREE((void *)(uintptr_t)xf); DF_FREE((void *)(uintptr_t)df); DF_FREE(dxf); }
    DF_FREE(acc);
    DF_FREE(k);
}

/* Shapes: y like x; the statistics [C] (from x's channel dim or scale); V3's reserve_space_3 a
   scalar. The gradient op: x_backprop like x, [C] twice, two empty placeholders. */
static int64_t df__bn_channels(df__shape_ctx *c, const df__shape *x) {
    const char *fmt = df__attr_s(c->node, "data_format");
    int first = !strcmp(fmt, "NCHW") || !strcmp(fmt, "NCDHW");
    int64_t ch = x->rank >= 4 ? x->dims[first ? 1 : x->rank - 1] : -1;
    for (int i = 1; ch < 0 && i < 3; i++)
        if (c->in_shapes[i].rank == 1) ch = c->in_shapes[i].dims[0];
    return ch;
}
DF_PRIVATE df_code df__sf_fused_batch_norm(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    if (x->rank >= 0 && x->rank != 4 && x->rank != 5)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input must be 4 or 5-dimensional, got rank %d", x->rank);
    for (int i = 1; i < 5; i++)
        if (c->in_shapes[i].rank >= 0 && c->in_shapes[i].rank != 1)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "%s must be 1-dimensional, got rank %d",
                            c->node->op->in[i].name, c->in_shapes[i].rank);
    int64_t ch = df__bn_channels(c, x);
    *df__sc_out(c, 0) = *x;
    for (int i = 1; i < 5; i++) { df__shape *o = df__sc_out(c, i); o->rank = 1; o->dims[0] = ch; }
    if (c->node->n_outputs > 5) *df__sc_out(c, 5) = df__shape_scalar();
    return DF_OK;
}
DF_PRIVATE df_code df__sf_fused_batch_norm_grad(df__shape_ctx *c) {
    const df__shape *dy = &c->in_shapes[0], *x = &c->in_shapes[1];
    if ((x->rank >= 0 && x->rank != 4 && x->rank != 5) || (dy->rank >= 0 && dy->rank != 4 && dy->rank != 5))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "x and y_backprop must be 4 or 5-dimensional");
    const df__shape *known = x->rank >= 0 ? x : dy;
    int64_t ch = -1;
    if (known->rank >= 4) {
        const char *fmt = df__attr_s(c->node, "data_format");
        ch = known->dims[!strcmp(fmt, "NCHW") || !strcmp(fmt, "NCDHW") ? 1 : known->rank - 1];
    }
    if (ch < 0 && c->in_shapes[2].rank == 1) ch = c->in_shapes[2].dims[0];
    *df__sc_out(c, 0) = *known;
    for (int i = 1; i < 3; i++) { df__shape *o = df__sc_out(c, i); o->rank = 1; o->dims[0] = ch; }
    for (int i = 3; i < 5; i++) { df__shape *o = df__sc_out(c, i); o->rank = 1; o->dims[0] = 0; }
    return DF_OK;
}

/* ---- DepthwiseConv2dNative and its backprops ---- */
/* Geometry from the input dims and filter dims [kh,kw,c,m] (g->oc = c*m); 0 after a status. */
static int df__dw_setup(const df_node *node, const int64_t *in, const int64_t *fd, df__conv_geo *g, df_status *st) {
    const char *fmt = df__attr_s(node, "data_format");
    if (*fmt && strcmp(fmt, "NHWC")) {
        df__fail(st, node, DF_UNIMPLEMENTED, "Depthwise convolution on CPU is only supported for NHWC format, got %s", fmt);
        return 0;
    }
    if (in[3] >= 0 && fd[2] >= 0 && in[3] != fd[2]) {
        df__fail(st, node, DF_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld", (long long)in[3], (long long)fd[2]);
        return 0;
    }
    if (fd[0] == 0 || fd[1] == 0 || fd[3] == 0) {
        df__fail(st, node, DF_INVALID_ARGUMENT, "filter must not have zero elements (i.e. all dimensions must be non-zero)");
        return 0;
    }
    if (fd[0] < 0 || fd[1] < 0) return 1;     /* shape inference with an unknown window */
    if (df__conv_setup(node, in, fd[0], fd[1], 0, g, st)) return 0;
    g->oc = in[3] >= 0 && fd[3] >= 0 ? in[3] * fd[3] : -1;
    return 1;
}
typedef struct df__dw_job {
    const df__conv_geo *g;
    int64_t m, parts;
    int isa, dbl;
    const void *x, *f, *dy;
    void *out, *slots;
} df__dw_job;

/* acc[i] += a[i] * b[i] over n values. */
#define DF__DW_FMA(T) static void df__dw_fma_##T(T *acc, const T *a, const T *b, int64_t n) { for (int64_t i = 0; i < n; i++) acc[i] += a[i] * b[i]; }
DF__DW_FMA(float)
DF__DW_FMA(double)
#ifdef DF__NNX_X86
DF__NNX_AVX2 static void df__dw_fma_float_avx2(float *acc, const float *a, const float *b, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), _mm256_loadu_ps(acc + i)));
    for (; i < n; i++) acc[i] += a[i] * b[i];
}
/* Forward, channel multiplier 1: output pixels [ox0, ox1) of row (b, oy), all their taps inside
   the image along x. Four pixels x 8 channels in registers; each filter vector serves four. */
DF__NNX_AVX2 static void df__dw_row_inner_avx2(const df__conv_geo *g, const float *x, const float *f, float *o,
                                              int64_t b, int64_t oy, int64_t ox0, int64_t ox1, int64_t ky0, int64_t ky1) {
    const int64_t C = g->c, W = g->w, sw = g->sw;
    const int64_t step = sw * C;
    int64_t ox = ox0;
    if (sw == 1 && g->dw == 1 && g->kw == 3 && C % 8 == 0)
        /* the common 3-wide window, stride 1: 6 pixels share each input vector, which is loaded
           once and added into the (up to) three sums it belongs to */
        for (; ox + 6 <= ox1; ox += 6)
            for (int64_t cb = 0; cb < C; cb += 8) {
                __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, v;
                for (int64_t ky = ky0; ky < ky1; ky++) {
                    const float *p = x + ((b * g->h + oy * g->sh - g->ph + ky * g->dh) * W + ox - g->pw) * C + cb;
                    const float *fr = f + ky * 3 * C + cb;
                    const __m256 f0 = _mm256_loadu_ps(fr), f1 = _mm256_loadu_ps(fr + C), f2 = _mm256_loadu_ps(fr + 2 * C);
                    v = _mm256_loadu_ps(p);
                    a0 = _mm256_fmadd_ps(v, f0, a0);
                    v = _mm256_loadu_ps(p + C);
                    a0 = _mm256_fmadd_ps(v, f1, a0); a1 = _mm256_fmadd_ps(v, f0, a1);
                    v = _mm256_loadu_ps(p + 2 * C);
                    a0 = _mm256_fmadd_ps(v, f2, a0); a1 = _mm256_fmadd_ps(v, f1, a1); a2 = _mm256_fmadd_ps(v, f0, a2);
                    v = _mm256_loadu_ps(p + 3 * C);
                    a1 = _mm256_fmadd_ps(v, f2, a1); a2 = _mm256_fmadd_ps(v, f1, a2); a3 = _mm256_fmadd_ps(v, f0, a3);
                    v = _mm256_loadu_ps(p + 4 * C);
                    a2 = _mm256_fmadd_ps(v, f2, a2); a3 = _mm256_fmadd_ps(v, f1, a3); a4 = _mm256_fmadd_ps(v, f0, a4);
                    v = _mm256_loadu_ps(p + 5 * C);
                    a3 = _mm256_fmadd_ps(v, f2, a3); a4 = _mm256_fmadd_ps(v, f1, a4); a5 = _mm256_fmadd_ps(v, f0, a5);
                    v = _mm256_loadu_ps(p + 6 * C);
                    a4 = _mm256_fmadd_ps(v, f2, a4); a5 = _mm256_fmadd_ps(v, f1, a5);
                    v = _mm256_loadu_ps(p + 7 * C);
                    a5 = _mm256_fmadd_ps(v, f2, a5);
                }
                float *op = o + ox * C + cb;
                _mm256_storeu_ps(op, a0); _mm256_storeu_ps(op + C, a1); _mm256_storeu_ps(op + 2 * C, a2);
                _mm256_storeu_ps(op + 3 * C, a3); _mm256_storeu_ps(op + 4 * C, a4); _mm256_storeu_ps(op + 5 * C, a5);
            }
    for (; ox + 4 <= ox1; ox += 4) {
        int64_t cb = 0;
        for (; cb + 8 <= C; cb += 8) {
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t ky = ky0; ky < ky1; ky++) {
                const float *row = x + ((b * g->h + oy * g->sh - g->ph + ky * g->dh) * W + ox * sw - g->pw) * C + cb;
                const float *fr = f + ky * g->kw * C + cb;
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    __m256 fv = _mm256_loadu_ps(fr + kx * C);
                    const float *p = row + kx * g->dw * C;
                    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), fv, a0);
                    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + step), fv, a1);
                    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * step), fv, a2);
                    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * step), fv, a3);
                }
            }
            float *op = o + ox * C + cb;
            _mm256_storeu_ps(op, a0); _mm256_storeu_ps(op + C, a1);
            _mm256_storeu_ps(op + 2 * C, a2); _mm256_storeu_ps(op + 3 * C, a3);
        }
        for (; cb < C; cb++)
            for (int p = 0; p < 4; p++) {
                float s = 0;
                for (int64_t ky = ky0; ky < ky1; ky++) {
                    const float *row = x + ((b * g->h + oy * g->sh - g->ph + ky * g->dh) * W + (ox + p) * sw - g->pw) * C + cb;
                    for (int64_t kx = 0; kx < g->kw; kx++) s += row[kx * g->dw * C] * f[(ky * g->kw + kx) * C + cb];
                }
                o[(ox + p) * C + cb] = s;
            }
    }
    for (; ox < ox1; ox++) {
        float *op = o + ox * C;
        memset(op, 0, (size_t)C * sizeof(float));
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *row = x + ((b * g->h + oy * g->sh - g->ph + ky * g->dh) * W + ox * sw - g->pw) * C;
            for (int64_t kx = 0; kx < g->kw; kx++) df__dw_fma_float_avx2(op, row + kx * g->dw * C, f + (ky * g->kw + kx) * C, C);
        }
    }
}
/* Filter gradient, 3x3, multiplier 1: output row r = (b, oy) with all three filter rows inside
   the image, pixels [ox0, ox1) with all taps inside along x. The nine taps' sums for 8 channels
   stay in registers over the row; each dY vector serves nine. */
DF__NNX_AVX2 static void df__dw_wgrad3_row_avx2(const df__conv_geo *g, const float *x, const float *dy, float *acc,
                                               int64_t b, int64_t oy, int64_t r, int64_t ox0, int64_t ox1) {
    const int64_t C = g->c, W = g->w, step = g->dw * C;
    const float *x0 = x + (b * g->h + oy * g->sh - g->ph) * W * C, *x1 = x0 + g->dh * W * C, *x2 = x1 + g->dh * W * C;
    const float *d0 = dy + r * g->ow * C;
    int64_t cb = 0;
    for (; cb + 8 <= C; cb += 8) {
        __m256 a0 = _mm256_loadu_ps(acc + cb), a1 = _mm256_loadu_ps(acc + C + cb), a2 = _mm256_loadu_ps(acc + 2 * C + cb);
        __m256 a3 = _mm256_loadu_ps(acc + 3 * C + cb), a4 = _mm256_loadu_ps(acc + 4 * C + cb), a5 = _mm256_loadu_ps(acc + 5 * C + cb);
        __m256 a6 = _mm256_loadu_ps(acc + 6 * C + cb), a7 = _mm256_loadu_ps(acc + 7 * C + cb), a8 = _mm256_loadu_ps(acc + 8 * C + cb);
        for (int64_t ox = ox0; ox < ox1; ox++) {
            __m256 d = _mm256_loadu_ps(d0 + ox * C + cb);
            int64_t p = (ox * g->sw - g->pw) * C + cb;
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + p), d, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + p + step), d, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + p + 2 * step), d, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x1 + p), d, a3);
            a4 = _mm256_fmadd_ps(_mm256_loadu_ps(x1 + p + step), d, a4);
            a5 = _mm256_fmadd_ps(_mm256_loadu_ps(x1 + p + 2 * step), d, a5);
            a6 = _mm256_fmadd_ps(_mm256_loadu_ps(x2 + p), d, a6);
            a7 = _mm256_fmadd_ps(_mm256_loadu_ps(x2 + p + step), d, a7);
            a8 = _mm256_fmadd_ps(_mm256_loadu_ps(x2 + p + 2 * step), d, a8);
        }
        _mm256_storeu_ps(acc + cb, a0); _mm256_storeu_ps(acc + C + cb, a1); _mm256_storeu_ps(acc + 2 * C + cb, a2);
        _mm256_storeu_ps(acc + 3 * C + cb, a3); _mm256_storeu_ps(acc + 4 * C + cb, a4); _mm256_storeu_ps(acc + 5 * C + cb, a5);
        _mm256_storeu_ps(acc + 6 * C + cb, a6); _mm256_storeu_ps(acc + 7 * C + cb, a7); _mm256_storeu_ps(acc + 8 * C + cb, a8);
    }
    for (; cb < C; cb++)
        for (int64_t ox = ox0; ox < ox1; ox++) {
            float d = d0[ox * C + cb];
            int64_t p = (ox * g->sw - g->pw) * C + cb;
            const float *rows[3] = {x0, x1, x2};
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++) acc[(ky * 3 + kx) * C + cb] += rows[ky][p + kx * step] * d;
        }
}
#endif

/* One output pixel (b, oy, ox): o[c*m + k] = sum over taps inside the image. */
#define DF__DW_PIXEL(T)                                                                           \
    static void df__dw_pixel_##T(const df__dw_job *J, const T *x, const T *f, T *o, int64_t b, int64_t oy, int64_t ox, \
                                 void (*fma)(T *, const T *, const T *, int64_t)) {               \
        const df__conv_geo *g = J->g;                                                             \
        const int64_t C = g->c, M = J->m;                                                         \
        memset(o, 0, (size_t)(C * M) * sizeof(T));                                                \
        for (int64_t ky = 0; ky < g->kh; ky++) {                                                  \
            int64_t iy = oy * g->sh - g->ph + ky * g->dh;                                         \
            if (iy < 0 || iy >= g->h) continue;                                                   \
            for (int64_t kx = 0; kx < g->kw; kx++) {                                              \
                int64_t ix = ox * g->sw - g->pw + kx * g->dw;                                     \
                if (ix < 0 || ix >= g->w) continue;                                               \
                const T *xp = x + ((b * g->h + iy) * g->w + ix) * C, *fp = f + (ky * g->kw + kx) * C * M; \
                if (M == 1) fma(o, xp, fp, C);                                                    \
                else for (int64_t ch = 0; ch < C; ch++)                                           \
                    for (int64_t k = 0; k < M; k++) o[ch * M + k] += xp[ch] * fp[ch * M + k];      \
            }                                                                                     \
        }                                                                                         \
    }
DF__DW_PIXEL(float)
DF__DW_PIXEL(double)

/* Forward: output rows [lo, hi) of (b, oy). */
#define DF__DW_FORWARD(T)                                                                         \
    static void df__dw_forward_##T(void *arg, int64_t lo, int64_t hi) {                           \
        const df__dw_job *J = (const df__dw_job *)arg;                                            \
        const df__conv_geo *g = J->g;                                                             \
        const T *x = (const T *)J->x, *f = (const T *)J->f;                                       \
        void (*fma)(T *, const T *, const T *, int64_t) = df__dw_fma_##T;                         \
        DF__DW_PICK_##T                                                                           \
        for (int64_t r = lo; r < hi; r++) {                                                       \
            int64_t b = r / g->oh, oy = r - b * g->oh;                                            \
            T *o = (T *)J->out + r * g->ow * g->oc;                                               \
            int64_t ox0 = 0, ox1 = 0;        /* the pixels a fast path did */                      \
            DF__DW_FAST_##T                                                                       \
            for (int64_t ox = 0; ox < g->ow; ox++)                                                \
                if (ox < ox0 || ox >= ox1) df__dw_pixel_##T(J, x, f, o + ox * g->oc, b, oy, ox, fma); \
        }                                                                                         \
    }
#ifdef DF__NNX_X86
#define DF__DW_PICK_float if (J->isa) fma = df__dw_fma_float_avx2;
/* The AVX2 tile covers the pixels whose taps all lie inside along x; rows cut off by the
   padding at the top or bottom skip those filter rows (ky0..ky1). */
#define DF__DW_FAST_float                                                                         \
    if (J->isa && J->m == 1) {                                                                    \
        int64_t lead = g->pw, reach = g->pw - (g->kw - 1) * g->dw + g->w - 1;                     \
        ox0 = (lead + g->sw - 1) / g->sw;                                                         \
        ox1 = reach < 0 ? 0 : reach / g->sw + 1;                                                  \
        if (ox1 > g->ow) ox1 = g->ow;                                                             \
        if (ox0 > ox1) ox0 = ox1;                                                                 \
        int64_t y0 = oy * g->sh - g->ph, ky0 = 0, ky1 = g->kh;                                    \
        while (ky0 < ky1 && y0 + ky0 * g->dh < 0) ky0++;                                          \
        while (ky1 > ky0 && y0 + (ky1 - 1) * g->dh >= g->h) ky1--;                                \
        if (ox0 < ox1) df__dw_row_inner_avx2(g, x, f, o, b, oy, ox0, ox1, ky0, ky1);              \
        else ox0 = ox1 = 0;                                                                       \
    }
#define DF__DW_WFAST_float                                                                        \
    if (J->isa && M == 1 && g->kh == 3 && g->kw == 3 && oy * g->sh - g->ph >= 0 &&                \
        oy * g->sh - g->ph + 2 * g->dh < g->h) {                                                  \
        int64_t reach = g->pw - 2 * g->dw + g->w - 1;                                             \
        fx0 = (g->pw + g->sw - 1) / g->sw;                                                        \
        fx1 = reach < 0 ? 0 : DF__MIN(g->ow, reach / g->sw + 1);                                  \
        if (fx0 < fx1) df__dw_wgrad3_row_avx2(g, x, dy, acc, b, oy, r, fx0, fx1);                 \
        else fx0 = fx1 = 0;                                                                       \
    }
#else
#define DF__DW_PICK_float
#define DF__DW_FAST_float
#define DF__DW_WFAST_float
#endif
#define DF__DW_PICK_double
#define DF__DW_FAST_double
#define DF__DW_WFAST_double
DF__DW_FORWARD(float)
DF__DW_FORWARD(double)

/* Input gradient: input rows [lo, hi) of (b, iy); each input pixel gathers the output pixels
   whose windows hold it. */
#define DF__DW_BP_INPUT(T)                                                                        \
    static void df__dw_bp_input_##T(void *arg, int64_t lo, int64_t hi) {                          \
        const df__dw_job *J = (const df__dw_job *)arg;                                            \
        const df__conv_geo *g = J->g;                                                             \
        const T *dy = (const T *)J->dy, *f = (const T *)J->f;                                     \
        const int64_t C = g->c, M = J->m;                                                         \
        void (*fma)(T *, const T *, const T *, int64_t) = df__dw_fma_##T;                         \
        DF__DW_PICK_##T                                                                           \
        for (int64_t r = lo; r < hi; r++) {                                                       \
            int64_t b = r / g->h, iy = r - b * g->h;                                              \
            for (int64_t ix = 0; ix < g->w; ix++) {                                               \
                T *o = (T *)J->out + (r * g->w + ix) * C;                                         \
                memset(o, 0, (size_t)C * sizeof(T));                                              \
                for (int64_t ky = 0; ky < g->kh; ky++) {                                          \
                    int64_t ny = iy + g->ph - ky * g->dh;                                         \
                    if (ny < 0 || ny % g->sh) continue;                                           \
                    int64_t oy = ny / g->sh;                                                      \
                    if (oy >= g->oh) continue;                                                    \
                    for (int64_t kx = 0; kx < g->kw; kx++) {                                      \
                        int64_t nx = ix + g->pw - kx * g->dw;                                     \
                        if (nx < 0 || nx % g->sw) continue;                                       \
                        int64_t ox = nx / g->sw;                                                  \
                        if (ox >= g->ow) continue;                                                \
                        const T *d = dy + ((b * g->oh + oy) * g->ow + ox) * g->oc, *fp = f + (ky * g->kw + kx) * g->oc; \
                        if (M == 1) fma(o, d, fp, C);                                             \
                        else for (int64_t ch = 0; ch < C; ch++)                                   \
                            for (int64_t k = 0; k < M; k++) o[ch] += d[ch * M + k] * fp[ch * M + k]; \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
DF__DW_BP_INPUT(float)
DF__DW_BP_INPUT(double)

/* Filter gradient: share s of J->parts sums output rows [s*rows/parts, (s+1)*rows/parts) into
   slot s; the slots are added in order afterwards (the same bits every run). */
#define DF__DW_BP_FILTER(T)                                                                       \
    static void df__dw_bp_filter_##T(void *arg, int64_t lo, int64_t hi) {                         \
        const df__dw_job *J = (const df__dw_job *)arg;                                            \
        const df__conv_geo *g = J->g;                                                             \
        const T *x = (const T *)J->x, *dy = (const T *)J->dy;                                     \
        const int64_t C = g->c, M = J->m, rows = g->n * g->oh, per = g->kh * g->kw * g->oc;       \
        void (*fma)(T *, const T *, const T *, int64_t) = df__dw_fma_##T;                         \
        DF__DW_PICK_##T                                                                           \
        for (int64_t s = lo; s < hi; s++) {                                                       \
            T *acc = (T *)J->slots + s * per;                                                     \
            memset(acc, 0, (size_t)per * sizeof(T));                                              \
            for (int64_t r = s * rows / J->parts; r < (s + 1) * rows / J->parts; r++) {           \
                int64_t b = r / g->oh, oy = r - b * g->oh, fx0 = 0, fx1 = 0;  /* pixels done fast */ \
                DF__DW_WFAST_##T                                                                  \
                for (int64_t ky = 0; ky < g->kh; ky++) {                                          \
                    int64_t iy = oy * g->sh - g->ph + ky * g->dh;                                 \
                    if (iy < 0 || iy >= g->h) continue;                                           \
                    for (int64_t ox = 0; ox < g->ow; ox++) {                                      \
                        if (ox >= fx0 && ox < fx1) continue;                                      \
                        const T *d = dy + (r * g->ow + ox) * g->oc;                               \
                        for (int64_t kx = 0; kx < g->kw; kx++) {                                  \
                            int64_t ix = ox * g->sw - g->pw + kx * g->dw;                         \
                            if (ix < 0 || ix >= g->w) continue;                                   \
                            const T *xp = x + ((b * g->h + iy) * g->w + ix) * C;                  \
                            T *a = acc + (ky * g->kw + kx) * g->oc;                               \
                            if (M == 1) fma(a, xp, d, C);                                         \
                            else for (int64_t ch = 0; ch < C; ch++)                               \
                                for (int64_t k = 0; k < M; k++) a[ch * M + k] += xp[ch] * d[ch * M + k]; \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
DF__DW_BP_FILTER(float)
DF__DW_BP_FILTER(double)

/* mode 0: the forward; 1: the input gradient; 2: the filter gradient. Float, double, and half
   or bfloat16 through float copies. Returns 0 after a status. */
DF_PRIVATE int df__dw_run(df__kctx *c, int mode, const df__conv_geo *g, int64_t m, df_dtype t, const df_tensor *x,
                      const df_tensor *f, const df_tensor *dy, df_tensor *out) {
    df__dw_job J;
    memset(&J, 0, sizeof J);
    J.g = g; J.m = m; J.dbl = t == DF_DOUBLE;
#ifdef DF__NNX_X86
    J.isa = t != DF_DOUBLE && df__isa() >= 1;        /* AVX2 or better */
#endif
    float *tmp[4] = {NULL, NULL, NULL, NULL};
    int ok = 1;
    const df_tensor *ins[3] = {x, f, dy};
    const void *data[3] = {x ? x->data : NULL, f ? f->data : NULL, dy ? dy->data : NULL};
    void *od = out->data;
    if (df__nnx_half_like(t)) {
        for (int i = 0; i < 3 && ok; i++)
            if (ins[i]) { tmp[i] = df__nnx_floats(c, ins[i]); ok = tmp[i] != NULL; data[i] = tmp[i]; }
        if (ok) { tmp[3] = (float *)DF_MALLOC((size_t)out->n * sizeof(float) + 1); od = tmp[3]; }
        if (ok && !tmp[3]) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); ok = 0; }
    }
    J.x = data[0]; J.f = data[1]; J.dy = data[2]; J.out = od;
    size_t es = J.dbl ? 8 : 4;
    double macs = (double)g->n * (double)g->oh * (double)g->ow * (double)g->oc * (double)(g->kh * g->kw);
    int threads = macs < 2.0e5 ? 1 : df__ipool_threads(c->ipool);
    if (ok && mode == 0)
        df__parallel_for(c->ipool, g->n * g->oh, 1, threads, J.dbl ? df__dw_forward_double : df__dw_forward_float, &J);
    else if (ok && mode == 1 && m == 1 && g->sh == 1 && g->sw == 1 && (g->kh - 1) * g->dh >= g->ph &&
             (g->kw - 1) * g->dw >= g->pw) {
        /* stride 1: dX is the forward convolution of dY with the filter turned half round,
           padded (k-1)*d - p before */
        df__conv_geo t = *g;
        t.h = g->oh; t.w = g->ow; t.oh = g->h; t.ow = g->w; t.oc = g->c;
        t.ph = (g->kh - 1) * g->dh - g->ph; t.pw = (g->kw - 1) * g->dw - g->pw;
        int64_t taps = g->kh * g->kw, row = g->c * (int64_t)es;
        char *turned = (char *)DF_MALLOC((size_t)(taps * row) + 1);
        if (!turned) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); ok = 0; }
        else {
            for (int64_t k = 0; k < taps; k++) memcpy(turned + k * row, (const char *)J.f + (taps - 1 - k) * row, (size_t)row);
            df__dw_job turned_job = J;
            turned_job.g = &t; turned_job.x = J.dy; turned_job.f = turned;
            df__parallel_for(c->ipool, t.n * t.oh, 1, threads, J.dbl ? df__dw_forward_double : df__dw_forward_float, &turned_job);
            DF_FREE(turned);
        }
    } else if (ok && mode == 1)
        df__parallel_for(c->ipool, g->n * g->h, 1, threads, J.dbl ? df__dw_bp_input_double : df__dw_bp_input_float, &J);
    else if (ok) {
        int64_t per = g->kh * g->kw * g->oc;
        J.parts = DF__MAX((int64_t)1, DF__MIN((int64_t)threads, g->n * g->oh));
        J.slots = DF_MALLOC((size_t)(J.parts * per) * es + 1);
        if (!J.slots) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); ok = 0; }
        else {
            df__parallel_for(c->ipool, J.parts, 1, (int)J.parts, J.dbl ? df__dw_bp_filter_double : df__dw_bp_filter_float, &J);
            for (int64_t i = 0; i < per; i++) {
                if (J.dbl) {
                    double s = 0;
                    for (int64_t p = 0; p < J.parts; p++) s += ((double *)J.slots)[p * per + i];
                    ((double *)od)[i] = s;
                } else {
                    float s = 0;
                    for (int64_t p = 0; p < J.parts; p++) s += ((float *)J.slots)[p * per + i];
                    ((float *)od)[i] = s;
                }
            }
            DF_FREE(J.slots);
        }
    }
    if (ok && tmp[3])
        for (int64_t i = 0; i < out->n; i++) df__nnx_set(t, out->data, i, tmp[3][i]);
    for (int i = 0; i < 4; i++) DF_FREE(tmp[i]);
    return ok;
}
static int df__dw_type(df__kctx *c, df_dtype t) {
    if (t == DF_FLOAT || t == DF_DOUBLE || df__nnx_half_like(t)) return 1;
    DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t));
    return 0;
}
static int df__dw_sizes(df__kctx *c, const df_tensor *t, const char *what, int64_t *v) {
    if (t->rank != 1 || t->n != 4) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be a 4-vector", what);
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        v[i] = df__int_at(t, i);
        if (v[i] < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s has a negative entry", what); return 0; }
    }
    return 1;
}
static int df__dw_check_dy(df__kctx *c, const df__conv_geo *g, const df_tensor *dy) {
    if (dy->rank == 4 && dy->dims[0] == g->n && dy->dims[1] == g->oh && dy->dims[2] == g->ow && dy->dims[3] == g->oc) return 1;
    char s[96];
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "out_backprop has shape %s; the depthwise convolution gives [%lld,%lld,%lld,%lld]",
              df__dims_str(dy->rank, dy->dims, s, 96), (long long)g->n, (long long)g->oh, (long long)g->ow, (long long)g->oc);
    return 0;
}
DF_PRIVATE void df__k_depthwise_conv2d(df__kctx *c) {
    const df_tensor *x = c->in[0], *f = c->in[1];
    if (!df__dw_type(c, x->dtype)) return;
    if (x->rank != 4 || f->rank != 4) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input and filter must be 4-dimensional, got ranks %d and %d", x->rank, f->rank);
        return;
    }
    df__conv_geo g;
    if (!df__dw_setup(c->node, x->dims, f->dims, &g, c->st)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.oc};
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, od);
    if (o && o->n) df__dw_run(c, 0, &g, f->dims[3], x->dtype, x, f, NULL, o);
}
DF_PRIVATE void df__k_depthwise_conv2d_bp_input(df__kctx *c) {
    const df_tensor *f = c->in[1], *dy = c->in[2];
    int64_t xd[4];
    if (!df__dw_type(c, f->dtype) || !df__dw_sizes(c, c->in[0], "input_sizes", xd)) return;
    if (f->rank != 4) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "filter must be 4-dimensional, got rank %d", f->rank); return; }
    df__conv_geo g;
    if (!df__dw_setup(c->node, xd, f->dims, &g, c->st) || !df__dw_check_dy(c, &g, dy)) return;
    df_tensor *o = df__k_alloc(c, 0, f->dtype, 4, xd);
    if (!o || !o->n) return;
    if (!dy->n) { df__zero_data(o, c->st); return; }
    df__dw_run(c, 1, &g, f->dims[3], f->dtype, NULL, f, dy, o);
}
DF_PRIVATE void df__k_depthwise_conv2d_bp_filter(df__kctx *c) {
    const df_tensor *x = c->in[0], *dy = c->in[2];
    int64_t fd[4];
    if (!df__dw_type(c, x->dtype) || !df__dw_sizes(c, c->in[1], "filter_sizes", fd)) return;
    if (x->rank != 4) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be 4-dimensional, got rank %d", x->rank); return; }
    df__conv_geo g;
    if (!df__dw_setup(c->node, x->dims, fd, &g, c->st) || !df__dw_check_dy(c, &g, dy)) return;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, fd);
    if (!o || !o->n) return;
    if (!dy->n) { df__zero_data(o, c->st); return; }
    df__dw_run(c, 2, &g, fd[3], x->dtype, x, NULL, dy, o);
}
DF_PRIVATE df_code df__sf_depthwise_conv2d(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0], *f = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (x->rank < 0 || f->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (x->rank != 4 || f->rank != 4)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input and filter must be 4-dimensional, got ranks %d and %d", x->rank, f->rank);
    df__conv_geo g;
    memset(&g, 0, sizeof g);
    g.oh = g.ow = -1;
    if (!df__dw_setup(c->node, x->dims, f->dims, &g, c->st)) return c->st->code;
    o->rank = 4; o->dims[0] = x->dims[0]; o->dims[1] = g.oh; o->dims[2] = g.ow;
    o->dims[3] = x->dims[3] >= 0 && f->dims[3] >= 0 ? x->dims[3] * f->dims[3] : -1;
    return DF_OK;
}
/* The backprops' shapes: their constant sizes input (input_sizes, filter_sizes). */
DF_PRIVATE df_code df__sf_depthwise_sizes(df__shape_ctx *c) {
    df__shape *o = df__sc_out(c, 0);
    const df_tensor *t = df__sc_const(c, !strcmp(c->node->op->name, "DepthwiseConv2dNativeBackpropInput") ? 0 : 1);
    o->rank = 4;
    for (int i = 0; i < 4; i++) o->dims[i] = t && t->n == 4 ? df__int_at(t, i) : -1;
    return DF_OK;
}

/* ---- gradients (TensorFlow's nn_grad.py) ---- */
static df_output df__nnx_i32s(df_graph *g, const int64_t *v, int n) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_INT32, 1, &d, NULL);
    if (!t) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return df__out(NULL, 0); }
    for (int i = 0; i < n; i++) ((int32_t *)df_tensor_data(t))[i] = (int32_t)v[i];
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output df__nnx_transpose(df_graph *g, df_output x, const int64_t *perm, int rank) {
    df_op_builder *b = df_op_new(g, "Transpose", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, df__nnx_i32s(g, perm, rank));
    return df__out(df_op_finish(b), 0);
}
/* FusedBatchNorm, V2, V3: FusedBatchNormGrad of the same version. Training reads the saved
   statistics (reserve_space outputs); inference the running mean and variance inputs, in NHWC
   (an NCHW x and dy are transposed there and back, as nn_grad.py does). */
DF_PRIVATE void df__g_fused_batch_norm(df__gfn *c) {
    df_graph *g = c->g;
    df_node *n = c->n;
    const char *op = n->op->name;
    int version = !strcmp(op, "FusedBatchNormV3") ? 2 : !strcmp(op, "FusedBatchNormV2") ? 1 : 0;
    int train = df__attr_b(n, "is_training", 1);
    const char *fmt = *df__attr_s(n, "data_format") ? df__attr_s(n, "data_format") : "NHWC";
    df_output x = n->inputs[0], dy = c->dy[0];
    if (!dy.node) return;                          /* TF: only y's gradient flows back */
    /* channels first at inference: 4 or 5 (NCDHW) dims moved to channels last and back */
    int first = !train && (!strcmp(fmt, "NCHW") || !strcmp(fmt, "NCDHW")), rank = !strcmp(fmt, "NCDHW") ? 5 : 4;
    static const int64_t to_last[2][5] = {{0, 2, 3, 1}, {0, 2, 3, 4, 1}}, to_first[2][5] = {{0, 3, 1, 2}, {0, 4, 1, 2, 3}};
    if (first) {
        x = df__nnx_transpose(g, x, to_last[rank - 4], rank);
        dy = df__nnx_transpose(g, dy, to_last[rank - 4], rank);
    }
    df_op_builder *b = df_op_new(g, version == 2 ? "FusedBatchNormGradV3" : version == 1 ? "FusedBatchNormGradV2" : "FusedBatchNormGrad", NULL);
    df_op_add_input(b, dy);
    df_op_add_input(b, x);
    df_op_add_input(b, n->inputs[1]);
    df_op_add_input(b, train ? df__out(n, 3) : n->inputs[3]);
    df_op_add_input(b, train ? df__out(n, 4) : n->inputs[4]);
    if (version == 2) df_op_add_input(b, df__out(n, 5));
    df_op_set_attr_float(b, "epsilon", df__nnx_attr_f(n, "epsilon", 1e-4f));
    df_op_set_attr_string(b, "data_format", train ? fmt : !strcmp(fmt, "NCHW") || !strcmp(fmt, "NHWC") ? "NHWC" : "NDHWC");
    df_op_set_attr_bool(b, "is_training", train);
    df_node *gr = df_op_finish(b);
    if (!gr) return;
    df_output dx = df__out(gr, 0);
    if (first) dx = df__nnx_transpose(g, dx, to_first[rank - 4], rank);
    c->dx[0] = dx;
    c->dx[1] = df__out(gr, 1);
    c->dx[2] = df__out(gr, 2);
}
/* A depthwise op with the window attrs of `like`. */
static df_output df__dw_op(df_graph *g, const char *op, const df_node *like, df_output a, df_output b2, df_output c2) {
    static const char *const lists[] = {"strides", "dilations", "explicit_paddings"};
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, a);
    df_op_add_input(b, b2);
    if (c2.node) df_op_add_input(b, c2);
    for (int i = 0; i < 3; i++) {
        const df__attr *at = df__node_attr(like, lists[i]);
        if (at && at->kind == DF__A_INT_LIST) df_op_set_attr_int_list(b, lists[i], at->u.ints.v, at->u.ints.n);
    }
    df_op_set_attr_string(b, "padding", df__attr_s(like, "padding"));
    df_op_set_attr_string(b, "data_format", *df__attr_s(like, "data_format") ? df__attr_s(like, "data_format") : "NHWC");
    return df__out(df_op_finish(b), 0);
}
DF_PRIVATE void df__g_depthwise_conv2d(df__gfn *c) {
    df_graph *g = c->g;
    const df_node *n = c->n;
    const char *op = n->op->name;
    df_output none = {NULL, 0}, d = c->dy[0];
    if (!strcmp(op, "DepthwiseConv2dNative")) {
        df_output x = n->inputs[0], w = n->inputs[1];
        c->dx[0] = df__dw_op(g, "DepthwiseConv2dNativeBackpropInput", n, df_shape(g, x), w, d);
        c->dx[1] = df__dw_op(g, "DepthwiseConv2dNativeBackpropFilter", n, x, df_shape(g, w), d);
    } else if (!strcmp(op, "DepthwiseConv2dNativeBackpropInput")) {   /* (input_sizes, filter, dy) */
        df_output w = n->inputs[1], dy = n->inputs[2];
        c->dx[1] = df__dw_op(g, "DepthwiseConv2dNativeBackpropFilter", n, d, df_shape(g, w), dy);
        c->dx[2] = df__dw_op(g, "DepthwiseConv2dNative", n, d, w, none);
    } else {                                                            /* (input, filter_sizes, dy) */
        df_output x = n->inputs[0], dy = n->inputs[2];
        c->dx[0] = df__dw_op(g, "DepthwiseConv2dNativeBackpropInput", n, df_shape(g, x), d, dy);
        c->dx[2] = df__dw_op(g, "DepthwiseConv2dNative", n, x, d, none);
    }
}
/* FusedBatchNormGrad, V2, V3 (second order, nn_grad.py's _BatchNormGradGrad): the first-order
   gradient rebuilt from plain ops (its _BatchNormGrad) and differentiated with respect to
   y_backprop, x and scale, seeded with the incoming gradients of x_backprop, scale_backprop
   and offset_backprop. Float32 4-D NHWC or NCHW. */
DF_PRIVATE void df__g_fused_batch_norm_grad(df__gfn *c) {
    df_graph *g = c->g;
    df_node *n = c->n;
    df_output dy = n->inputs[0], x = n->inputs[1], scale = n->inputs[2], mean = n->inputs[3], var = n->inputs[4];
    const char *fmt = *df__attr_s(n, "data_format") ? df__attr_s(n, "data_format") : "NHWC";
    int train = df__attr_b(n, "is_training", 1), nchw = !strcmp(fmt, "NCHW");
    float eps = df__nnx_attr_f(n, "epsilon", 1e-4f);
    if (df_output_dtype(x) != DF_FLOAT || (!nchw && strcmp(fmt, "NHWC"))) {
        df__graph_error(g, DF_UNIMPLEMENTED, "The gradient of %s is implemented for float32 4-D NHWC or NCHW inputs, "
                        "not %s %s {{node %s}}", n->op->name, df_dtype_name(df_output_dtype(x)), fmt, n->name);
        return;
    }
    const int32_t axes_nhwc[3] = {0, 1, 2}, axes_nchw[3] = {0, 2, 3};
    const int32_t *axes = nchw ? axes_nchw : axes_nhwc;
    const int64_t per_channel[4] = {1, -1, 1, 1};
    df_output sc = nchw ? df_reshape(g, scale, 4, per_channel) : scale, keps = df__scalar_of(g, DF_FLOAT, eps);
    df_output gx, gs, go;
    if (train) {
        int keep = nchw;
        df_output mean_dy = df_reduce_mean(g, dy, 3, axes, keep), mean_x = df_reduce_mean(g, x, 3, axes, keep);
        df_op_builder *b = df_op_new(g, "SquaredDifference", NULL);
        df_op_add_input(b, x);
        df_op_add_input(b, df_stop_gradient(g, mean_x));
        df_output var_x = df_reduce_mean(g, df__out(df_op_finish(b), 0), 3, axes, keep);
        df_output x_off = df_sub(g, x, mean_x), ve = df_add(g, var_x, keps), rs = df__op1(g, "Rsqrt", ve);
        df_output m = df_reduce_mean(g, df_mul(g, dy, x_off), 3, axes, keep);
        gx = df_mul(g, df_mul(g, sc, rs), df_sub(g, df_sub(g, dy, mean_dy), df_mul(g, df_mul(g, df__op1(g, "Reciprocal", ve), m), x_off)));
        gs = df_mul(g, rs, df_reduce_sum(g, df_mul(g, dy, x_off), 3, axes, keep));
        if (nchw) { const int64_t flat[1] = {-1}; gs = df_reshape(g, gs, 1, flat); }
        go = df_reduce_sum(g, dy, 3, axes, 0);
    } else {
        df_output pm = nchw ? df_reshape(g, mean, 4, per_channel) : mean, pv = nchw ? df_reshape(g, var, 4, per_channel) : var;
        df_output rs = df__op1(g, "Rsqrt", df_add(g, pv, keps));
        go = df_reduce_sum(g, dy, 3, axes, 0);
        gs = df_reduce_sum(g, df_mul(g, df_mul(g, dy, df_sub(g, x, pm)), rs), 3, axes, 0);
        gx = df_mul(g, df_mul(g, dy, sc), rs);
    }
    df_output ys[3], seeds[3], xs[3] = {dy, x, scale}, d[3];
    df_output firsts[3] = {gx, gs, go};
    int k = 0;
    for (int i = 0; i < 3; i++)
        if (c->dy[i].node) { ys[k] = firsts[i]; seeds[k] = c->dy[i]; k++; }
    if (!k || df_gradients(g, k, ys, seeds, 3, xs, d) != DF_OK) return;
    for (int i = 0; i < 3; i++) c->dx[i] = d[i];
}
