/* ==========================================================================================
   src/kernels/half.c: half and bfloat16 kernels computing in float32                  >>half
   One mechanism for the ops a mixed-precision graph runs on DT_HALF and DT_BFLOAT16: at
   registry build time the ops listed here get half and bfloat16 added to their type attr and
   a wrapper kernel; for 16-bit inputs the wrapper converts them to float32 tensors, runs the
   op's float kernel, and rounds its float outputs once to the node's type (as TensorFlow's CPU
   kernels do for most ops). Where TensorFlow's CPU kernel works in the 16-bit type itself
   (Sum, Mean, Softmax on half; LogSoftmax; Sigmoid, the activation gradients, Softplus, Elu,
   Selu, LeakyRelu, SquaredDifference, AddN) the result is reproduced step by step, Eigen's
   summation order included, so values match TensorFlow 2.21 bit for bit. Cast to and from the
   16-bit types has its own loop. Data movement ops already take any dtype and move 2-byte
   elements as they are. Another op joins by a row in df__half_ops.
   ========================================================================================== */

/* ---- conversions: loops of 8 the compiler vectorises, F16C where the CPU has it ---- */
#if defined(DF__X86) && !defined(DF_EMULATE_AVX512)
#define DF__HALF_F16C 1
__attribute__((target("avx,f16c"))) static void df__h2f_f16c(const uint16_t *s, float *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + i))));
    for (; i < n; i++) d[i] = df_half_to_float(s[i]);
}
__attribute__((target("avx,f16c"))) static void df__f2h_f16c(const float *s, uint16_t *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = df_float_to_half(s[i]);
}
#endif
static uint32_t df__half_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float df__half_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
/* Branch-free forms of src/dtype.c's conversions, same results (NaN: a quiet NaN). */
static inline float df__h2f_one(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, e = h & 0x7c00u;
    uint32_t normal = (em << 13) + 0x38000000u, special = (em << 13) | 0x7f800000u;
    uint32_t sub = df__half_bits((float)(h & 0x3ffu) * (1.0f / 16777216.0f));
    return df__half_float(sign | (e == 0x7c00u ? special : e == 0 ? sub : normal));
}
static inline uint16_t df__f2bf_one(float f) {
    uint32_t x = df__half_bits(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16, q = (x >> 16) | 0x40u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? q : r);
}
static void df__h2f(const uint16_t *s, float *d, int64_t n) {
#ifdef DF__HALF_F16C
    if (df__isa() >= DF__ISA_AVX2) { df__h2f_f16c(s, d, n); return; }   /* every AVX2 CPU has F16C */
#endif
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) d[i + k] = df__h2f_one(s[i + k]);
    for (; i < n; i++) d[i] = df__h2f_one(s[i]);
}
static void df__f2h(const float *s, uint16_t *d, int64_t n) {
#ifdef DF__HALF_F16C
    if (df__isa() >= DF__ISA_AVX2) { df__f2h_f16c(s, d, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = df_float_to_half(s[i]);
}
static void df__bf2f(const uint16_t *s, float *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) d[i + k] = df__half_float((uint32_t)s[i + k] << 16);
    for (; i < n; i++) d[i] = df__half_float((uint32_t)s[i] << 16);
}
static void df__f2bf(const float *s, uint16_t *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) d[i + k] = df__f2bf_one(s[i + k]);
    for (; i < n; i++) d[i] = df__f2bf_one(s[i]);
}
static int df__is16(df_dtype t) { return t == DF_HALF || t == DF_BFLOAT16; }

/* 16-bit <-> float over n elements, split between the intra-op threads when large. */
typedef struct df__half_cvt { const void *src; void *dst; df_dtype t; int to_float; } df__half_cvt;
static void df__half_cvt_share(void *arg, int64_t lo, int64_t hi) {
    const df__half_cvt *j = (const df__half_cvt *)arg;
    if (j->to_float) {
        const uint16_t *s = (const uint16_t *)j->src + lo;
        float *d = (float *)j->dst + lo;
        if (j->t == DF_HALF) df__h2f(s, d, hi - lo); else df__bf2f(s, d, hi - lo);
    } else {
        const float *s = (const float *)j->src + lo;
        uint16_t *d = (uint16_t *)j->dst + lo;
        if (j->t == DF_HALF) df__f2h(s, d, hi - lo); else df__f2bf(s, d, hi - lo);
    }
}
static void df__half_convert(df__kctx *c, df_dtype t, int to_float, const void *src, void *dst, int64_t n) {
    df__half_cvt j = {src, dst, t, to_float};
    if (n < (1 << 17)) df__half_cvt_share(&j, 0, n);
    else df__parallel_for(c->ipool, n, 4096, df__ipool_threads(c->ipool), df__half_cvt_share, &j);
}

/* ---- Eigen's summation of half values, rounding as it does ----
   TensorFlow's CPU Sum on half adds in half: 8-lane packets (each lane's sum rounded to half
   after every add), four packet accumulators over blocks of 32, the lanes then added in float
   and rounded, leftovers added one by one; above 8 * 200 values the range is halved at a
   packet boundary of the absolute index and the halves added (Eigen's tree reduction).
   Values are the float images of the half inputs; every result is a half value. */
static float df__hr(float v) { return df_half_to_float(df_float_to_half(v)); }
static float df__bfr(float v) { return df__half_float((uint32_t)df__f2bf_one(v) << 16); }
typedef float (*df__round_fn)(float);
static float df__eigen_leaf(const float *x, int64_t first, int64_t n, df__round_fn r) {
    float acc0[8] = {0};
    int64_t start = 0;
    if (n >= 32) {
        float a[4][8] = {{0}};
        int64_t v4 = n / 32 * 32;
        for (int64_t j = 0; j < v4; j += 32)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 8; l++) a[k][l] = r(a[k][l] + x[first + j + 8 * k + l]);
        for (int l = 0; l < 8; l++) acc0[l] = r(r(r(a[0][l] + a[1][l]) + a[2][l]) + a[3][l]);
        start = v4;
    }
    if (start <= n - 8) {
        int64_t v = n / 8 * 8;
        for (int64_t j = start; j < v; j += 8)
            for (int l = 0; l < 8; l++) acc0[l] = r(acc0[l] + x[first + j + l]);
        start = v;
    }
    float acc = 0;
    for (int64_t j = start; j < n; j++) acc = r(acc + x[first + j]);
    float s0 = acc0[0] + acc0[4], s1 = acc0[1] + acc0[5], s2 = acc0[2] + acc0[6], s3 = acc0[3] + acc0[7];
    return r(acc + r((s0 + s2) + (s1 + s3)));
}
static float df__eigen_sum(const float *x, int64_t first, int64_t n, df__round_fn r, int64_t leaf) {
    if (n <= 8 * leaf) return df__eigen_leaf(x, first, n, r);
    int64_t split = 8 * ((first + (n + 1) / 2 + 7) / 8), left = DF__MIN(split - first, n);
    float acc = df__eigen_sum(x, first, left, r, leaf);
    if (left < n) acc = r(acc + df__eigen_sum(x, split, n - left, r, leaf));
    return acc;
}
/* Reducing the middle of [outer, red, inner] into [outer, inner]: outputs in aligned packets
   of 8 that lie within one row take four accumulators (rows j mod 4) when red >= 16; the
   others add in order. */
static void df__eigen_sum_outer(const float *x, int64_t outer, int64_t red, int64_t inner, float *o) {
    int64_t on = outer * inner, full = on / 8 * 8;
    for (int64_t k = 0; k < on; k++) {
        int64_t oi = k / inner, ii = k % inner;
        const float *p = x + oi * red * inner + ii;
        int64_t k0 = k / 8 * 8;
        int packet = k0 < full && (k0 % inner) + 7 < inner;
        float acc = 0;
        int64_t j = 0;
        if (packet && red >= 16) {
            float a[4] = {0, 0, 0, 0};
            for (; j < red / 4 * 4; j += 4)
                for (int q = 0; q < 4; q++) a[q] = df__hr(a[q] + p[(j + q) * inner]);
            acc = df__hr(df__hr(df__hr(a[0] + a[1]) + a[2]) + a[3]);
        }
        for (; j < red; j++) acc = df__hr(acc + p[j * inner]);
        o[k] = acc;
    }
}

/* ---- the wrapper ---- */
enum { DF__HALF_CONVERT, DF__HALF_REDUCE, DF__HALF_SOFTMAX, DF__HALF_CAST, DF__HALF_STEP };
/* elementwise ops whose TensorFlow CPU kernel rounds after each step on 16-bit types */
enum { DF__HS_SIGMOID = 1, DF__HS_TANH_GRAD, DF__HS_SIGMOID_GRAD, DF__HS_SQRT_GRAD, DF__HS_RSQRT_GRAD, DF__HS_RECIP_GRAD,
       DF__HS_SQDIFF, DF__HS_SOFTPLUS, DF__HS_ELU, DF__HS_SELU, DF__HS_LEAKY_RELU, DF__HS_SOFTPLUS_GRAD, DF__HS_ELU_GRAD,
       DF__HS_ADD_N };
typedef struct df__half_op { const char *name; int mode, step; } df__half_op;
static const df__half_op df__half_ops[] = {
    {"MatMul", 0, 0}, {"BatchMatMulV2", 0, 0}, {"Conv2D", 0, 0}, {"Conv2DBackpropInput", 0, 0},
    {"Conv2DBackpropFilter", 0, 0}, {"BiasAdd", 0, 0}, {"BiasAddGrad", 0, 0}, {"MaxPool", 0, 0}, {"AvgPool", 0, 0},
    {"MaxPoolGrad", 0, 0}, {"AvgPoolGrad", 0, 0}, {"AddV2", 0, 0}, {"Add", 0, 0}, {"Sub", 0, 0}, {"Mul", 0, 0},
    {"RealDiv", 0, 0}, {"Div", 0, 0}, {"Maximum", 0, 0}, {"Minimum", 0, 0}, {"Pow", 0, 0},
    {"SquaredDifference", DF__HALF_STEP, DF__HS_SQDIFF}, {"FloorDiv", 0, 0}, {"FloorMod", 0, 0}, {"Less", 0, 0},
    {"LessEqual", 0, 0}, {"Greater", 0, 0}, {"GreaterEqual", 0, 0}, {"Equal", 0, 0}, {"NotEqual", 0, 0},
    {"Neg", 0, 0}, {"Square", 0, 0}, {"Abs", 0, 0}, {"Sign", 0, 0}, {"Relu", 0, 0}, {"Sqrt", 0, 0}, {"Rsqrt", 0, 0},
    {"Exp", 0, 0}, {"Log", 0, 0}, {"Tanh", 0, 0}, {"Sigmoid", DF__HALF_STEP, DF__HS_SIGMOID}, {"Reciprocal", 0, 0},
    {"Floor", 0, 0}, {"Ceil", 0, 0}, {"Round", 0, 0}, {"Rint", 0, 0}, {"Sin", 0, 0}, {"Cos", 0, 0}, {"Tan", 0, 0},
    {"Log1p", 0, 0}, {"Expm1", 0, 0}, {"Erf", 0, 0}, {"Erfc", 0, 0}, {"IsFinite", 0, 0}, {"IsNan", 0, 0},
    {"IsInf", 0, 0}, {"Softplus", DF__HALF_STEP, DF__HS_SOFTPLUS}, {"Softsign", 0, 0},
    {"Elu", DF__HALF_STEP, DF__HS_ELU}, {"Selu", DF__HALF_STEP, DF__HS_SELU},
    {"LeakyRelu", DF__HALF_STEP, DF__HS_LEAKY_RELU}, {"Relu6", 0, 0}, {"ReluGrad", 0, 0},
    {"TanhGrad", DF__HALF_STEP, DF__HS_TANH_GRAD}, {"SigmoidGrad", DF__HALF_STEP, DF__HS_SIGMOID_GRAD},
    {"SqrtGrad", DF__HALF_STEP, DF__HS_SQRT_GRAD}, {"RsqrtGrad", DF__HALF_STEP, DF__HS_RSQRT_GRAD},
    {"ReciprocalGrad", DF__HALF_STEP, DF__HS_RECIP_GRAD}, {"SoftplusGrad", DF__HALF_STEP, DF__HS_SOFTPLUS_GRAD},
    {"SoftsignGrad", 0, 0}, {"EluGrad", DF__HALF_STEP, DF__HS_ELU_GRAD}, {"SeluGrad", 0, 0}, {"LeakyReluGrad", 0, 0},
    {"Relu6Grad", 0, 0}, {"Sum", DF__HALF_REDUCE, 0}, {"Mean", DF__HALF_REDUCE, 0}, {"Max", 0, 0}, {"Min", 0, 0},
    {"Prod", 0, 0}, {"ArgMax", 0, 0}, {"ArgMin", 0, 0}, {"Softmax", DF__HALF_SOFTMAX, 0},
    {"LogSoftmax", DF__HALF_SOFTMAX, 0}, {"SoftmaxCrossEntropyWithLogits", 0, 0},
    {"SparseSoftmaxCrossEntropyWithLogits", 0, 0}, {"Cast", DF__HALF_CAST, 0}, {"AddN", DF__HALF_STEP, DF__HS_ADD_N},
    {"L2Loss", 0, 0}, {"UnsortedSegmentSum", 0, 0}, {"Cumprod", 0, 0},
};
#define DF__HALF_N_OPS ((int)(sizeof df__half_ops / sizeof *df__half_ops))
static struct { const df__opdef *op; df__kernel_fn fn; int mode, step; } df__half_orig[DF__HALF_N_OPS];
static int df__half_n_orig;
/* op index in the registry -> 1 + its df__half_orig entry, so the wrapper finds the float
   kernel without a search (a static table: the registry holds no allocation of ours; past
   DF__HALF_MAX_OPS ops the wrapper searches) */
#define DF__HALF_MAX_OPS 1024
static unsigned char df__half_slot[DF__HALF_MAX_OPS];
static const df__opdef *df__half_base;
static int df__half_n_ops;

static void df__k_half(df__kctx *c);
/* Called once while the registry is built: widens T and puts the wrapper in front. */
DF_PRIVATE void df__half_register(df__opdef *ops, int n_ops) {
    uint32_t bits = df__type_bit(DF_HALF) | df__type_bit(DF_BFLOAT16);
    df__half_n_orig = 0;
    memset(df__half_slot, 0, sizeof df__half_slot);   /* (a registry build retried after running out of memory) */
    df__half_base = ops;
    df__half_n_ops = n_ops;
    for (int i = 0; i < DF__HALF_N_OPS; i++)
        for (int k = 0; k < n_ops; k++) {
            df__opdef *op = &ops[k];
            if (strcmp(op->name, df__half_ops[i].name) || !op->kernels[DF__DEV_CPU].fn) continue;
            for (int a = 0; a < op->n_attrs; a++)
                if (op->attrs[a].kind == DF__A_TYPE && !strcmp(op->attrs[a].name, "T") && op->attrs[a].allowed)
                    op->attrs[a].allowed |= bits;
            df__half_orig[df__half_n_orig].op = op;
            df__half_orig[df__half_n_orig].fn = op->kernels[DF__DEV_CPU].fn;
            df__half_orig[df__half_n_orig].step = df__half_ops[i].step;
            df__half_orig[df__half_n_orig++].mode = df__half_ops[i].mode;
            if (k < DF__HALF_MAX_OPS) df__half_slot[k] = (unsigned char)df__half_n_orig;
            op->kernels[DF__DEV_CPU].fn = df__k_half;
            break;
        }
}

/* A float32 copy of a 16-bit tensor (NULL, the status set, when memory ran out). */
static df_tensor *df__half_to_f32(df__kctx *c, const df_tensor *x) {
    df_tensor *f = df__tensor_alloc(c->alloc, DF_FLOAT, x->rank, x->dims, c->st);
    if (!f) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory converting %s to float", df_dtype_name(x->dtype)); return NULL; }
    df__half_convert(c, x->dtype, 1, x->data, f->data, x->n);
    return f;
}

/* Sum and Mean on half as TensorFlow computes them (see df__eigen_sum). */
static void df__half_reduce(df__kctx *c, df_tensor *xf) {
    const df_tensor *x = c->in[0];
    int mean = c->node->op->code == DF__R_MEAN, keep = df__attr_b(c->node, "keep_dims", 0);
    unsigned mask;
    if (df__norm_axes(c->node, c->in[1], x->rank, &mask, c->st)) return;
    if (!mask) { df__k_forward(c, 0, 0); return; }
    df__shape os;
    df__reduced_shape(x->rank, x->dims, mask, keep, &os);
    df_tensor *o = df__k_alloc(c, 0, DF_HALF, os.rank, os.dims);
    if (!o || !o->n) return;
    /* TensorFlow merges adjacent axes of one kind: [outer, red, inner] when the reduced axes
       are contiguous; else (axes with kept ones between) in order, one by one */
    int lo = 0, hi = x->rank;
    while (lo < x->rank && !(mask >> lo & 1u)) lo++;
    while (hi > lo && !(mask >> (hi - 1) & 1u)) hi--;
    int contiguous = 1;
    for (int d = lo; d < hi; d++) if (!(mask >> d & 1u)) contiguous = 0;
    float *acc = (float *)DF_MALLOC((size_t)o->n * sizeof(float));
    if (!acc) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in reduction"); return; }
    const float *v = (const float *)xf->data;
    int64_t outer = 1, red = 1, inner = 1;
    for (int d = 0; d < lo; d++) outer *= x->dims[d];
    for (int d = lo; d < hi; d++) red *= x->dims[d];
    for (int d = hi; d < x->rank; d++) inner *= x->dims[d];
    if (contiguous && inner == 1)
        for (int64_t r = 0; r < outer; r++) acc[r] = df__eigen_sum(v, r * red, red, df__hr, 200);
    else if (contiguous) df__eigen_sum_outer(v, outer, red, inner, acc);
    else {                       /* in order, each output's inputs one after another */
        int64_t ostride[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, oi = 0;
        for (int d = x->rank - 1; d >= 0; d--) { ostride[d] = (mask >> d & 1u) ? 0 : s; if (!(mask >> d & 1u)) s *= x->dims[d]; }
        for (int64_t i = 0; i < o->n; i++) acc[i] = 0;
        for (int64_t i = 0; i < x->n; i++) {
            acc[oi] = df__hr(acc[oi] + v[i]);
            for (int d = x->rank - 1; d >= 0; d--) {
                idx[d]++; oi += ostride[d];
                if (idx[d] < x->dims[d]) break;
                oi -= ostride[d] * idx[d]; idx[d] = 0;
            }
        }
    }
    int64_t count = o->n ? x->n / o->n : 0;
    if (mean) for (int64_t i = 0; i < o->n; i++) acc[i] = count ? acc[i] / (float)count : NAN;
    df__half_convert(c, DF_HALF, 0, acc, o->data, o->n);
    DF_FREE(acc);
}

/* Softmax and LogSoftmax rounding each step to the 16-bit type, as TensorFlow's Eigen
   expression does on CPU: shifted = x - max, e = exp(shifted), sum in the 16-bit type, then
   e * (1 / sum) or shifted - log(sum). */
static void df__half_softmax(df__kctx *c, df_tensor *xf) {
    const df_tensor *x = c->in[0];
    int log_sm = c->node->op->code == 1;
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must have >= 1 dimension, got %s", "[]"); return; }
    df__round_fn r = x->dtype == DF_HALF ? df__hr : df__bfr;
    int64_t leaf = x->dtype == DF_HALF ? 200 : 128;
    df_tensor *o = df__k_alloc_like(c, 0, x->dtype, x);
    if (!o || !o->n) return;
    int64_t cols = x->dims[x->rank - 1], rows = x->n / cols;
    float *v = (float *)xf->data, *e = (float *)DF_MALLOC((size_t)cols * sizeof(float) + 1);
    if (!e) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in softmax"); return; }
    for (int64_t i = 0; i < rows; i++) {
        float *row = v + i * cols, m = row[0];
        for (int64_t j = 1; j < cols; j++) if (row[j] > m) m = row[j];
        for (int64_t j = 0; j < cols; j++) { row[j] = r(row[j] - m); e[j] = r(expf(row[j])); }
        /* the sum's packets split at absolute indices of the whole [rows, cols] tensor */
        float s = df__eigen_sum(e - i * cols, i * cols, cols, r, leaf);
        if (log_sm) { float l = r(logf(s)); for (int64_t j = 0; j < cols; j++) row[j] = r(row[j] - l); }
        else { float inv = r(1.0f / s); for (int64_t j = 0; j < cols; j++) row[j] = r(e[j] * inv); }
    }
    DF_FREE(e);
    df__half_convert(c, x->dtype, 0, v, o->data, o->n);
}


/* Cast from or to half / bfloat16 as TensorFlow's CPU kernel: to a 16-bit type through float
   (so double and int64 round twice, as there); from one, integers truncate toward zero, and
   where the value does not fit (inf, NaN) the result is what x86's truncating conversion gives
   (INT_MIN; 0 for the narrow types). Narrow integers wrap from half but saturate from
   bfloat16, which is what TensorFlow 2.21 returns. */
static float df__cast_src_float(const df_tensor *x, int64_t i) {
    const void *p = x->data;
    switch (x->dtype) {
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return (float)((const double *)p)[i];
    case DF_INT64: return (float)((const int64_t *)p)[i];
    case DF_UINT64: return (float)((const uint64_t *)p)[i];
    default: return (float)df__get_i64(x->dtype, p, i);
    }
}
static void df__half_cast(df__kctx *c, df_dtype to) {
    const df_tensor *x = c->in[0];
    df_tensor *y = df__k_alloc_like(c, 0, to, x);
    if (!y) return;
    void *o = y->data;
    for (int64_t i = 0; i < x->n; i++) {
        float v = df__cast_src_float(x, i);
        int fits32 = v == v && v > -2147483904.0f && v < 2147483648.0f;
        int64_t t32 = fits32 ? (int64_t)v : INT32_MIN;
        switch (to) {
        case DF_HALF: ((uint16_t *)o)[i] = df_float_to_half(v); break;
        case DF_BFLOAT16: ((uint16_t *)o)[i] = df__f2bf_one(v); break;
        case DF_FLOAT: ((float *)o)[i] = v; break;
        case DF_DOUBLE: ((double *)o)[i] = v; break;
        case DF_BOOL: ((uint8_t *)o)[i] = v != 0; break;
        case DF_INT32: ((int32_t *)o)[i] = (int32_t)t32; break;
        case DF_INT64: ((int64_t *)o)[i] = v == v && v > -9.3e18f && v < 9.2e18f ? (int64_t)v : INT64_MIN; break;
        default:
            if (x->dtype == DF_BFLOAT16 && (to == DF_UINT8 || to == DF_INT8 || to == DF_INT16 || to == DF_UINT16)) {
                int64_t lo = to == DF_INT8 ? -128 : to == DF_INT16 ? -32768 : 0;
                int64_t hi = to == DF_INT8 ? 127 : to == DF_INT16 ? 32767 : to == DF_UINT8 ? 255 : 65535;
                int64_t s = !fits32 ? 0 : t32 < lo ? lo : t32 > hi ? hi : t32;
                df__set_from_i64(to, o, i, s);
            } else df__set_from_i64(to, o, i, t32);
        }
    }
}

/* The elementwise ops whose TensorFlow kernel is an Eigen expression evaluated in the 16-bit
   type: each operation rounds, so the steps are reproduced here (Eigen's functors: sigmoid
   e / (1 + e) with e = exp(x); TanhGrad dy * (1 - y * y); SigmoidGrad (dy * y) * (1 - y);
   SqrtGrad dy * (0.5 / y); RsqrtGrad (-0.5 * (dy * y)) * (y * y); ReciprocalGrad -dy * (y * y);
   SquaredDifference (x - y)^2; Softplus log1p(exp(x)) between +-(log(eps) + 2); Elu, Selu
   exp(x) - 1 scaled; LeakyRelu x * alpha; SoftplusGrad dy / (exp(-x) + 1); EluGrad (y + 1) * dy;
   AddN left to right). Returns 0 when the inputs' shapes differ (broadcasting: the float
   kernel then runs and rounds once). */
static int df__half_step(df__kctx *c, int step, df_tensor *const *fin) {
    const df_tensor *x = c->in[0];
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i]->n != x->n || c->in[i]->rank != x->rank || memcmp(c->in[i]->dims, x->dims, (size_t)x->rank * sizeof(int64_t)))
            return 0;
    df__round_fn r = x->dtype == DF_HALF ? df__hr : df__bfr;
    df_tensor *o = df__k_alloc_like(c, 0, x->dtype, x);
    if (!o) return 1;
    float *a = (float *)fin[0]->data;                  /* the result goes in place of the first input */
    const float *b = c->n_in > 1 ? (const float *)fin[1]->data : NULL;
    float eps = x->dtype == DF_HALF ? 0.0009765625f : 0.0078125f;
    const df__attr *al = df__node_attr(c->node, "alpha");
    float thr = r(r(logf(eps)) + 2.0f), alpha = r(al && al->kind == DF__A_FLOAT ? al->u.f : 0.2f);
    float scale = r(1.0507009873554805f), scale_alpha = r(1.7580993408473768f);
    for (int64_t i = 0; i < x->n; i++) {
        float v = a[i], w = b ? b[i] : 0, e;
        switch (step) {
        case DF__HS_SIGMOID: e = r(expf(v)); v = r(e / r(1.0f + e)); break;
        case DF__HS_TANH_GRAD: v = r(w * r(1.0f - r(v * v))); break;              /* (y, dy) */
        case DF__HS_SIGMOID_GRAD: v = r(r(w * v) * r(1.0f - v)); break;
        case DF__HS_SQRT_GRAD: v = r(w * r(0.5f / v)); break;
        case DF__HS_RSQRT_GRAD: v = r(r(-0.5f * r(w * v)) * r(v * v)) + 0.0f; break;   /* TF: +0, not -0 */
        case DF__HS_RECIP_GRAD: v = r(-w * r(v * v)) + 0.0f; break;
        case DF__HS_SQDIFF: e = r(v - w); v = r(e * e); break;
        case DF__HS_SOFTPLUS: e = r(expf(v)); v = v > -thr ? v : v < thr ? e : r(log1pf(e)); break;
        case DF__HS_ELU: if (v < 0) v = r(r(expf(v)) - 1.0f); break;
        case DF__HS_SELU: v = v < 0 ? r(scale_alpha * r(r(expf(v)) - 1.0f)) : r(scale * v); break;
        case DF__HS_LEAKY_RELU: if (!(v > 0)) v = r(v * alpha); break;
        case DF__HS_SOFTPLUS_GRAD: v = r(v / r(r(expf(-w)) + 1.0f)); break;          /* (dy, x) */
        case DF__HS_ELU_GRAD: if (w < 0) v = r(r(w + 1.0f) * v); break;              /* (dy, y) */
        case DF__HS_ADD_N: for (int k = 1; k < c->n_in; k++) v = r(v + ((const float *)fin[k]->data)[i]); break;
        default: break;
        }
        a[i] = v;
    }
    df__half_convert(c, x->dtype, 0, a, o->data, o->n);
    return 1;
}

/* A bfloat16 MatMul through the AVX512_BF16 GEMM (float32 accumulation, one rounding at the
   end, as the float path): 1 when it ran (or failed with the status set), 0 when this CPU has no
   such kernel or the shapes are not plain matrices that agree (the float kernel then runs, and
   says what is wrong). Products of bfloat16 are exact in float32, so only the order of the sums
   and vdpbf16ps's flushing of subnormals differ from the float path. */
static int df__half_matmul_bf16(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    if (a->dtype != DF_BFLOAT16 || b->dtype != DF_BFLOAT16 || a->rank != 2 || b->rank != 2) return 0;
    int ta = df__attr_b(c->node, "transpose_a", 0), tb = df__attr_b(c->node, "transpose_b", 0);
    int64_t m = a->dims[ta], k = a->dims[!ta], n = b->dims[!tb];
    if (b->dims[tb] != k || m * n * k < 32 * 32 * 32) return 0;   /* tiny: conversions cost as much */
    int64_t dims[2] = {m, n};
    float *f = (float *)DF_MALLOC((size_t)(m * n) * sizeof(float) + 64);
    if (!f) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the bfloat16 product"); return 1; }
    int done = df__gemm_bf16(m, n, k, (const uint16_t *)a->data, ta ? m : k, ta, (const uint16_t *)b->data,
                             tb ? k : n, tb, f, n, c->ipool, 0);
    if (done < 0) { DF_FREE(f); return 0; }
    if (!done) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the matrix product's packing buffers");
    else {
        df_tensor *o = df__k_alloc(c, 0, DF_BFLOAT16, 2, dims);
        if (o) df__half_convert(c, DF_BFLOAT16, 0, f, o->data, o->n);
    }
    DF_FREE(f);
    return 1;
}

static void df__k_half(df__kctx *c) {
    int k = 0;
    ptrdiff_t at = c->node->op - df__half_base;
    if (at >= 0 && at < df__half_n_ops && at < DF__HALF_MAX_OPS && df__half_slot[at]) k = df__half_slot[at] - 1;
    else while (k < df__half_n_orig && df__half_orig[k].op != c->node->op) k++;
    if (k == df__half_n_orig) { DF__KFAIL(c, DF_INTERNAL, "No kernel for %s", c->node->op->name); return; }
    df__kernel_fn fn = df__half_orig[k].fn;
    if (df__half_orig[k].mode == DF__HALF_CAST) {
        df_dtype to = df__attr_type(c->node, "DstT");
        if (to != c->in[0]->dtype && (df__is16(to) || df__is16(c->in[0]->dtype))) df__half_cast(c, to);
        else fn(c);
        return;
    }
    df_dtype t16 = DF_FLOAT;
    for (int i = 0; i < c->n_in; i++) if (c->in[i] && df__is16(c->in[i]->dtype)) { t16 = c->in[i]->dtype; break; }
    if (t16 == DF_FLOAT) { fn(c); return; }       /* not a 16-bit node: the kernel itself */
    if (t16 == DF_BFLOAT16 && c->n_in == 2 && !strcmp(c->node->op->name, "MatMul") && df__half_matmul_bf16(c)) return;
    df_tensor *fin_here[12] = {NULL}, *fout[4] = {NULL};
    unsigned char converted_here[12] = {0};
    if (c->n_out > 4) { DF__KFAIL(c, DF_INTERNAL, "%s has more than 4 outputs", c->node->op->name); return; }
    /* AddN of many gradients: the per-input arrays on the heap */
    df_tensor **fin = c->n_in <= 12 ? fin_here : (df_tensor **)DF_MALLOC((size_t)c->n_in * sizeof *fin);
    unsigned char *converted = c->n_in <= 12 ? converted_here : (unsigned char *)DF_MALLOC((size_t)c->n_in);
    if (!fin || !converted) {
        if (fin != fin_here) DF_FREE(fin);
        if (converted != converted_here) DF_FREE(converted);
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory converting %s inputs", df_dtype_name(t16));
        return;
    }
    memset(converted, 0, (size_t)c->n_in);
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i] && df__is16(c->in[i]->dtype)) {
            if (!(fin[i] = df__half_to_f32(c, c->in[i]))) goto done;
            converted[i] = 1;
        } else fin[i] = c->in[i];
    }
    int mode = df__half_orig[k].mode;
    if (mode == DF__HALF_REDUCE && t16 == DF_HALF) { df__half_reduce(c, fin[0]); goto done; }
    if (mode == DF__HALF_SOFTMAX && (t16 == DF_HALF || c->node->op->code == 1)) { df__half_softmax(c, fin[0]); goto done; }
    if (mode == DF__HALF_STEP && df__half_step(c, df__half_orig[k].step, fin)) goto done;
    df__kctx sub = *c;
    sub.in = fin;
    sub.out = fout;
    fn(&sub);
    /* an input the float kernel handed on to an output is no longer this node's to drop */
    for (int i = 0; i < c->n_in; i++) if (!converted[i] && !fin[i]) c->in[i] = NULL;
    for (int j = 0; j < c->n_out; j++) {
        df_tensor *f = fout[j];
        if (!f) continue;
        fout[j] = NULL;
        if (c->st->code != DF_OK || f->dtype != DF_FLOAT || !df__is16(c->node->out_types[j])) { c->out[j] = f; continue; }
        df_tensor *h = df__k_alloc(c, j, c->node->out_types[j], f->rank, f->dims);
        if (h) df__half_convert(c, h->dtype, 0, f->data, h->data, f->n);
        df_tensor_release(f);
    }
done:
    for (int i = 0; i < c->n_in; i++) if (converted[i]) df_tensor_release(fin[i]);
    if (fin != fin_here) DF_FREE(fin);
    if (converted != converted_here) DF_FREE(converted);
}

/* The kernel an item of node n can call directly: the float kernel under the 16-bit wrapper
   when none of n's inputs (nor a Cast's target) is float16 or bfloat16, which the graph's types
   settle before any run (fed values must have their placeholder's type); else fn itself. */
DF_PRIVATE df__kernel_fn df__half_unwrap(const df_node *n, df__kernel_fn fn) {
    if (fn != df__k_half) return fn;
    int k = 0;
    ptrdiff_t at = n->op - df__half_base;
    if (at >= 0 && at < df__half_n_ops && at < DF__HALF_MAX_OPS && df__half_slot[at]) k = df__half_slot[at] - 1;
    else while (k < df__half_n_orig && df__half_orig[k].op != n->op) k++;
    if (k == df__half_n_orig) return fn;
    for (int i = 0; i < n->n_inputs; i++)
        if (df__is16(n->inputs[i].node->out_types[n->inputs[i].index])) return fn;
    for (int i = 0; i < n->n_outputs; i++) if (df__is16(n->out_types[i])) return fn;
    return df__half_orig[k].fn;
}
