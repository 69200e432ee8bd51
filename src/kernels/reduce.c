/* ==========================================================================================
   src/kernels/reduce.c: CPU kernels: BiasAdd, reductions, ArgMax                    >>reduce
   BiasAdd and BiasAddGrad; Sum, Mean, Max, Min and Prod over any set of axes (a pass per run
   of adjacent reduced axes, sums in float64 for float32 inputs where TensorFlow is as
   exact; Sum, Mean, Max and Min over leading or trailing axes split between threads);
   ArgMax. Axes are checked against the input's rank at run time, negative axes count from
   the end.
   ========================================================================================== */
static int df__bias_axis(const df_node *n, int rank) {
    return !strcmp(df__attr_s(n, "data_format"), "NCHW") && rank >= 3 ? 1 : rank - 1;
}
DF_PRIVATE df_code df__sf_bias_add(df__shape_ctx *c) {
    const df__shape *v = &c->in_shapes[0], *b = &c->in_shapes[1];
    *df__sc_out(c, 0) = *v;
    if (v->rank >= 0 && v->rank < 2)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Input to BiasAdd must be at least 2-D, got rank %d", v->rank);
    if (b->rank >= 0 && b->rank != 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Biases must be 1-D, got rank %d", b->rank);
    if (v->rank >= 2 && b->rank == 1) {
        int ax = df__bias_axis(c->node, v->rank);
        if (v->dims[ax] >= 0 && b->dims[0] >= 0 && v->dims[ax] != b->dims[0])
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Must provide as many biases as the channel "
                            "dimension of the input: %lld vs. %lld", (long long)b->dims[0], (long long)v->dims[ax]);
    }
    return DF_OK;
}
/* Rows [lo, hi) of a channels-last BiasAdd: each row of ch values plus the bias vector. */
typedef struct df__bias_job { df__row_fn add; char *o; const char *v, *b; int64_t ch; size_t es; } df__bias_job;
static void df__bias_rows(void *arg, int64_t lo, int64_t hi) {
    const df__bias_job *j = (const df__bias_job *)arg;
    for (int64_t r = lo; r < hi; r++)
        j->add(j->o + (size_t)(r * j->ch) * j->es, j->v + (size_t)(r * j->ch) * j->es, j->b, j->ch, 1, 1);
}
DF_PRIVATE void df__k_bias_add(df__kctx *c) {
    const df_tensor *v = c->in[0], *b = c->in[1];
    if (v->rank < 2 || b->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAdd needs a value of rank >= 2 and 1-D biases"); return; }
    int ax = df__bias_axis(c->node, v->rank);
    if (v->dims[ax] != b->dims[0]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Must provide as many biases as the channel dimension of the input: %lld vs. %lld", (long long)b->dims[0], (long long)v->dims[ax]); return; }
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, v->dtype, v->rank, v->dims);
    if (!o || !o->n) return;
    int64_t inner = 1, ch = v->dims[ax];
    for (int i = ax + 1; i < v->rank; i++) inner *= v->dims[i];
    /* blocks of `inner` elements share one bias; with the channels last (NHWC, a dense layer)
       inner is 1 and each row adds the bias vector, which the row kernels vectorise */
    df__row_fn add = df__binary_row(DF__B_ADD, v->dtype);
    size_t es = df_dtype_size(v->dtype);
    if (inner == 1) {          /* over 1 MB: rows shared between the intra-op threads */
        df__bias_job j = {add, (char *)o->data, (const char *)v->data, (const char *)b->data, ch, es};
        int threads = (size_t)v->n * es < ((size_t)1 << 20) ? 1 : df__ipool_threads(c->ipool);
        df__parallel_for(c->ipool, v->n / ch, DF__MAX((int64_t)1, 1024 / ch), threads, df__bias_rows, &j);
        return;
    }
    for (int64_t blk = 0; blk < v->n / inner; blk++)
        add((char *)o->data + (size_t)(blk * inner) * es, (const char *)v->data + (size_t)(blk * inner) * es,
            (const char *)b->data + (size_t)(blk % ch) * es, inner, 1, 0);
}

/* BiasAddGrad: the bias's gradient, out_backprop summed over every axis but the channels. */
DF_PRIVATE df_code df__sf_bias_add_grad(df__shape_ctx *c) {
    const df__shape *v = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1;
    o->dims[0] = -1;
    if (v->rank >= 0 && v->rank < 2)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Input to BiasAddGrad must be at least 2-D, got rank %d", v->rank);
    if (v->rank >= 2) o->dims[0] = v->dims[df__bias_axis(c->node, v->rank)];
    return DF_OK;
}
DF_PRIVATE void df__k_bias_add_grad(df__kctx *c) {
    const df_tensor *v = c->in[0];
    if (v->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAddGrad needs out_backprop of rank >= 2, got %d", v->rank); return; }
    int ax = df__bias_axis(c->node, v->rank);
    int64_t ch = v->dims[ax], inner = 1;
    for (int i = ax + 1; i < v->rank; i++) inner *= v->dims[i];
    df_tensor *o = df__k_alloc(c, 0, v->dtype, 1, &ch);
    if (!o || !ch) return;
    double *acc = (double *)DF_MALLOC((size_t)ch * sizeof(double));
    if (!acc) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in BiasAddGrad"); return; }
    for (int64_t j = 0; j < ch; j++) acc[j] = 0;
    int f32 = v->dtype == DF_FLOAT;
    /* v is [outer, ch, inner]: walk it in that order (no division per element) */
    int64_t outer = inner ? v->n / (ch * inner) : 0;
    const float *pf = (const float *)v->data;
    const double *pd = (const double *)v->data;
    if (inner == 1) {                   /* channels last: add each row */
        for (int64_t r = 0; r < outer; r++) {
            if (f32) for (int64_t j = 0; j < ch; j++) acc[j] += pf[r * ch + j];
            else for (int64_t j = 0; j < ch; j++) acc[j] += pd[r * ch + j];
        }
        outer = 0;
    }
    for (int64_t r = 0, i = 0; r < outer; r++)
        for (int64_t j = 0; j < ch; j++) {
            double s = 0;
            if (f32) for (int64_t q = 0; q < inner; q++) s += pf[i + q];
            else for (int64_t q = 0; q < inner; q++) s += pd[i + q];
            acc[j] += s;
            i += inner;
        }
    for (int64_t j = 0; j < ch; j++) {
        if (f32) ((float *)o->data)[j] = (float)acc[j]; else ((double *)o->data)[j] = acc[j];
    }
    DF_FREE(acc);
}

/* ---- reductions: Sum, Mean, Max, Min, Prod over any axes ---- */

DF_PRIVATE df_code df__norm_axes(const df_node *n, const df_tensor *axes, int rank, unsigned *mask, df_status *st) {
    *mask = 0;
    if (!df__is_int_tensor(axes) || axes->rank > 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "reduction_indices must be a scalar or 1-D int32/int64 tensor");
    for (int64_t i = 0; i < axes->n; i++) {
        int64_t a = df__int_at(axes, i);
        if (a < -rank || a >= rank)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Invalid reduction dimension %lld for input with %d dimensions",
                            (long long)a, rank);
        unsigned bit = 1u << (a < 0 ? a + rank : a);
        if (*mask & bit)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Axes contains duplicate dimension: %lld", (long long)(a < 0 ? a + rank : a));
        *mask |= bit;
    }
    return DF_OK;
}
DF_PRIVATE void df__reduced_shape(int rank, const int64_t *dims, unsigned mask, int keep, df__shape *out) {
    out->rank = 0;
    for (int i = 0; i < rank; i++) {
        if (mask & (1u << i)) { if (keep) out->dims[out->rank++] = 1; }
        else out->dims[out->rank++] = dims[i];
    }
}
DF_PRIVATE df_code df__sf_reduce(df__shape_ctx *c) {
    const df_tensor *axes = df__sc_const(c, 1);
    const df__shape *in = &c->in_shapes[0];
    int keep = df__attr_b(c->node, "keep_dims", 0);
    df__shape *o = df__sc_out(c, 0);
    if (in->rank < 0 || !axes) {
        *o = df__shape_unknown();
        if (keep && in->rank >= 0) { o->rank = in->rank; for (int i = 0; i < in->rank; i++) o->dims[i] = -1; }
        return DF_OK;
    }
    unsigned mask;
    if (df__norm_axes(c->node, axes, in->rank, &mask, c->st)) return c->st->code;
    df__reduced_shape(in->rank, in->dims, mask, keep, o);
    return DF_OK;
}
#ifdef DF__X86
/* Sums of a float32/float64 row in float64, four vector accumulators (the plain loop's order
   differs only in the last bits of a float64 sum). */
DF__TARGET_AVX2 static double df__vsum_f32(const float *x, int64_t n) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        /* into L2, 8 KB ahead: 30 to 35 GB/s on one thread (an AMD EPYC VM; 1 KB ahead into L1
           made it slower) */
        _mm_prefetch((const char *)(x + i) + 8192, _MM_HINT_T1);
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(b)));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)));
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
    double r = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < n; i++) r += x[i];
    return r;
}
DF__TARGET_AVX2 static double df__vsum_f64(const double *x, int64_t n) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_pd(s0, _mm256_loadu_pd(x + i));
        s1 = _mm256_add_pd(s1, _mm256_loadu_pd(x + i + 4));
        s2 = _mm256_add_pd(s2, _mm256_loadu_pd(x + i + 8));
        s3 = _mm256_add_pd(s3, _mm256_loadu_pd(x + i + 12));
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
    double r = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < n; i++) r += x[i];
    return r;
}
/* acc[j] += row[j] for a float32 or float64 row (column sums), float64 accumulators. */
DF__TARGET_AVX2 static void df__vacc_f32(double *acc, const float *row, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 a = _mm256_loadu_ps(row + j);
        _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), _mm256_cvtps_pd(_mm256_castps256_ps128(a))));
        _mm256_storeu_pd(acc + j + 4, _mm256_add_pd(_mm256_loadu_pd(acc + j + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))));
    }
    for (; j < n; j++) acc[j] += row[j];
}
DF__TARGET_AVX2 static void df__vacc_f64(double *acc, const double *row, int64_t n) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), _mm256_loadu_pd(row + j)));
    for (; j < n; j++) acc[j] += row[j];
}
#endif
/* Sum and Mean of float32/float64 in float64 where x is [on, count] summed within rows
   (cols = 0) or [count, on] summed over rows (cols = 1). Past 1 MB the work is split over the
   intra-op threads: by output where outputs are many; otherwise by blocks of a fixed size whose
   partial sums are added in order, so the bits never depend on the number of threads. Returns 0
   after setting the status when memory ran out. */
enum { DF__SUM_BLOCK = 1 << 15 };
typedef struct df__sum_job {
    int f32, vec, mode;         /* 0 row sums, 1 one long row in blocks, 2 column ranges, 3 row blocks */
    const void *x;
    int64_t on, count, rows_per_block;
    double *acc, *part;
} df__sum_job;
static double df__row_sum(const df__sum_job *j, int64_t off, int64_t n) {
#ifdef DF__X86
    if (j->vec) return j->f32 ? df__vsum_f32((const float *)j->x + off, n) : df__vsum_f64((const double *)j->x + off, n);
#endif
    double s = 0;
    if (j->f32) { const float *r = (const float *)j->x + off; for (int64_t i = 0; i < n; i++) s += r[i]; }
    else { const double *r = (const double *)j->x + off; for (int64_t i = 0; i < n; i++) s += r[i]; }
    return s;
}
static void df__col_acc(const df__sum_job *j, double *acc, int64_t off, int64_t n) {
#ifdef DF__X86
    if (j->vec) {
        if (j->f32) df__vacc_f32(acc, (const float *)j->x + off, n); else df__vacc_f64(acc, (const double *)j->x + off, n);
        return;
    }
#endif
    if (j->f32) { const float *r = (const float *)j->x + off; for (int64_t i = 0; i < n; i++) acc[i] += r[i]; }
    else { const double *r = (const double *)j->x + off; for (int64_t i = 0; i < n; i++) acc[i] += r[i]; }
}
static void df__sum_share(void *arg, int64_t lo, int64_t hi) {
    const df__sum_job *j = (const df__sum_job *)arg;
    switch (j->mode) {
    case 0: for (int64_t i = lo; i < hi; i++) j->acc[i] = df__row_sum(j, i * j->count, j->count); break;
    case 1:
        for (int64_t b = lo; b < hi; b++)
            j->part[b] = df__row_sum(j, b * DF__SUM_BLOCK, DF__MIN((int64_t)DF__SUM_BLOCK, j->count - b * DF__SUM_BLOCK));
        break;
    case 2:
        for (int64_t i = lo; i < hi; i++) j->acc[i] = 0;
        for (int64_t r = 0; r < j->count; r++) df__col_acc(j, j->acc + lo, r * j->on + lo, hi - lo);
        break;
    default:
        for (int64_t b = lo; b < hi; b++) {
            double *p = j->part + b * j->on;
            for (int64_t i = 0; i < j->on; i++) p[i] = 0;
            int64_t r1 = DF__MIN(j->count, (b + 1) * j->rows_per_block);
            for (int64_t r = b * j->rows_per_block; r < r1; r++) df__col_acc(j, p, r * j->on, j->on);
        }
    }
}
static int df__float_sums(df__kctx *c, const df_tensor *x, int cols, int64_t on, int64_t count, int mean, df_tensor *o) {
    df__sum_job j;
    memset(&j, 0, sizeof j);
    j.f32 = x->dtype == DF_FLOAT; j.x = x->data; j.on = on; j.count = count;
#ifdef DF__X86
    j.vec = df__vec_isa() == DF__ISA_AVX2;
#endif
    int64_t len, unit = 1, blocks = 0;
    if (!cols && on > 1) { j.mode = 0; len = on; }
    else if (!cols) { j.mode = 1; blocks = len = (count + DF__SUM_BLOCK - 1) / DF__SUM_BLOCK; }
    else if (on >= 256 || count * on <= DF__SUM_BLOCK) { j.mode = 2; len = on; unit = 64; }
    else {
        j.mode = 3;
        j.rows_per_block = DF__MAX((int64_t)1, DF__SUM_BLOCK / on);
        blocks = len = (count + j.rows_per_block - 1) / j.rows_per_block;
    }
    size_t accn = (size_t)DF__MAX(on, 1), partn = (size_t)blocks * (j.mode == 3 ? (size_t)on : 1);
    j.acc = (double *)DF_MALLOC((accn + partn) * sizeof(double));
    if (!j.acc) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in reduction"); return 0; }
    j.part = j.acc + accn;
    int threads = (size_t)x->n * df_dtype_size(x->dtype) >= ((size_t)1 << 20) ? df__ipool_threads(c->ipool) : 1;
    df__parallel_for(c->ipool, len, unit, threads, df__sum_share, &j);
    if (j.mode == 1) { double s = 0; for (int64_t b = 0; b < blocks; b++) s += j.part[b]; j.acc[0] = s; }
    if (j.mode == 3)
        for (int64_t i = 0; i < on; i++) {
            double s = 0;
            for (int64_t b = 0; b < blocks; b++) s += j.part[b * on + i];
            j.acc[i] = s;
        }
    if (count == 0) for (int64_t i = 0; i < on; i++) j.acc[i] = 0;
    for (int64_t i = 0; i < on; i++) {
        double v = mean ? (count ? j.acc[i] / (double)count : NAN) : j.acc[i];
        if (j.f32) ((float *)o->data)[i] = (float)v; else ((double *)o->data)[i] = v;
    }
    DF_FREE(j.acc);
    return 1;
}
/* Max and Min of float32/float64/int32/int64 where x is [on, count] reduced within rows (cols
   = 0) or [count, on] reduced over rows (cols = 1), count >= 1. A NaN wins, as in the general
   loop below. Past 1 MB the work is split over the intra-op threads like the sums' (by output,
   or a long row in blocks whose results are combined); Max and Min are exact in any order, so
   the threads never change the result. Four accumulators per row keep the loop off the
   latency of one compare chain. */
typedef struct df__mm_job {
    int is_max, mode;           /* 0 rows, 1 one long row in blocks, 2 column ranges, 3 row blocks */
    df_dtype t;
    const void *x;
    void *out, *part;
    int64_t on, count, rows_per_block;
} df__mm_job;
#define DF__MM_NAN_F(v) ((v) != (v))
#define DF__MM_NAN_I(v) 0
#define DF__MM_TAKE(is_max, m, v, ISNAN) (((is_max) ? (v) > (m) : (v) < (m)) || ISNAN(v))
#ifdef DF__X86
/* AVX2 rows and column accumulations of Max/Min for float32/float64: vector max/min (which
   drop a NaN) with the NaNs tracked beside them, one unordered compare per two vectors. The
   prefetch 2 KB ahead matters on one thread: a Max over rows of 1024 floats read memory at
   22 GB/s without it and 36 to 40 with it (an AMD EPYC VM, best runs; prefetching into L2 8 KB
   ahead as well did better alone but worse in bench_memspeed, between memcpys). */
#define DF__VMM_FUNCS(T, SUF, VT, W, LOAD, STORE, SET1, VMAX, VMIN, CMP, OR, MASK, BLEND)               \
    DF__TARGET_AVX2 static T df__vmm_row_##SUF(const T *x, int64_t n, int is_max) {                   \
        VT m0 = SET1(x[0]), m1 = m0, m2 = m0, m3 = m0, bad = CMP(m0, m0, _CMP_UNORD_Q);               \
        int64_t i = 0;                                                                                \
        if (is_max)                                                                                   \
            for (; i + 4 * W <= n; i += 4 * W) {                                                      \
                VT a = LOAD(x + i), b = LOAD(x + i + W), c = LOAD(x + i + 2 * W), d = LOAD(x + i + 3 * W); \
                _mm_prefetch((const char *)(x + i) + 2048, _MM_HINT_T0);                                \
                m0 = VMAX(m0, a); m1 = VMAX(m1, b); m2 = VMAX(m2, c); m3 = VMAX(m3, d);                 \
                bad = OR(bad, OR(CMP(a, b, _CMP_UNORD_Q), CMP(c, d, _CMP_UNORD_Q)));                  \
            }                                                                                         \
        else                                                                                          \
            for (; i + 4 * W <= n; i += 4 * W) {                                                      \
                VT a = LOAD(x + i), b = LOAD(x + i + W), c = LOAD(x + i + 2 * W), d = LOAD(x + i + 3 * W); \
                _mm_prefetch((const char *)(x + i) + 2048, _MM_HINT_T0);                                \
                m0 = VMIN(m0, a); m1 = VMIN(m1, b); m2 = VMIN(m2, c); m3 = VMIN(m3, d);                 \
                bad = OR(bad, OR(CMP(a, b, _CMP_UNORD_Q), CMP(c, d, _CMP_UNORD_Q)));                  \
            }                                                                                         \
        if (MASK(bad)) return (T)NAN;                                                                 \
        T t[W];                         /* no NaN in the accumulators: vector max/min combine them */ \
        STORE(t, is_max ? VMAX(VMAX(m0, m1), VMAX(m2, m3)) : VMIN(VMIN(m0, m1), VMIN(m2, m3)));        \
        T r = t[0];                                                                                   \
        for (int k = 1; k < W; k++) if (DF__MM_TAKE(is_max, r, t[k], DF__MM_NAN_F)) r = t[k];          \
        for (; i < n; i++) if (DF__MM_TAKE(is_max, r, x[i], DF__MM_NAN_F)) r = x[i];                   \
        return r;                                                                                     \
    }                                                                                                 \
    DF__TARGET_AVX2 static void df__vmm_acc_##SUF(T *acc, const T *row, int64_t n, int is_max) {      \
        int64_t i = 0;                                                                                \
        for (; i + W <= n; i += W) {                                                                  \
            VT r = LOAD(row + i), a = LOAD(acc + i);                                                  \
            VT m = is_max ? VMAX(r, a) : VMIN(r, a);    /* a where either is NaN: a NaN in acc stays */ \
            STORE(acc + i, BLEND(m, r, CMP(r, r, _CMP_UNORD_Q)));                                     \
        }                                                                                             \
        for (; i < n; i++) if (DF__MM_TAKE(is_max, acc[i], row[i], DF__MM_NAN_F)) acc[i] = row[i];     \
    }
DF__VMM_FUNCS(float, f32, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_max_ps, _mm256_min_ps,
              _mm256_cmp_ps, _mm256_or_ps, _mm256_movemask_ps, _mm256_blendv_ps)
DF__VMM_FUNCS(double, f64, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_max_pd, _mm256_min_pd,
              _mm256_cmp_pd, _mm256_or_pd, _mm256_movemask_pd, _mm256_blendv_pd)
#define DF__VMM_ROW(SUF, p, n, is_max) if (df__vec_isa() == DF__ISA_AVX2) return df__vmm_row_##SUF(p, n, is_max)
#define DF__VMM_ACC(SUF, acc, row, n, is_max) \
    if (df__vec_isa() == DF__ISA_AVX2) { df__vmm_acc_##SUF(acc, row, n, is_max); return; }
#else
#define DF__VMM_ROW(SUF, p, n, is_max) (void)0
#define DF__VMM_ACC(SUF, acc, row, n, is_max) (void)0
#endif
#define DF__VMM_ROW_i32(p, n, is_max) (void)0
#define DF__VMM_ROW_i64(p, n, is_max) (void)0
#define DF__VMM_ACC_i32(acc, row, n, is_max) (void)0
#define DF__VMM_ACC_i64(acc, row, n, is_max) (void)0
#define DF__VMM_ROW_f32(p, n, is_max) DF__VMM_ROW(f32, p, n, is_max)
#define DF__VMM_ROW_f64(p, n, is_max) DF__VMM_ROW(f64, p, n, is_max)
#define DF__VMM_ACC_f32(acc, row, n, is_max) DF__VMM_ACC(f32, acc, row, n, is_max)
#define DF__VMM_ACC_f64(acc, row, n, is_max) DF__VMM_ACC(f64, acc, row, n, is_max)
#define DF__MM_FUNCS(T, SUF, ISNAN)                                                                   \
    static T df__mm_row_##SUF(const T *p, int64_t n, int is_max) {                                    \
        DF__VMM_ROW_##SUF(p, n, is_max);                                                              \
        T m0 = p[0], m1 = p[0], m2 = p[0], m3 = p[0];                                                 \
        int64_t i = 1;                                                                                \
        if (is_max) {                                                                                 \
            for (; i + 4 <= n; i += 4) {                                                              \
                if (DF__MM_TAKE(1, m0, p[i], ISNAN)) m0 = p[i];                                       \
                if (DF__MM_TAKE(1, m1, p[i + 1], ISNAN)) m1 = p[i + 1];                               \
                if (DF__MM_TAKE(1, m2, p[i + 2], ISNAN)) m2 = p[i + 2];                               \
                if (DF__MM_TAKE(1, m3, p[i + 3], ISNAN)) m3 = p[i + 3];                               \
            }                                                                                         \
        } else {                                                                                      \
            for (; i + 4 <= n; i += 4) {                                                              \
                if (DF__MM_TAKE(0, m0, p[i], ISNAN)) m0 = p[i];                                       \
                if (DF__MM_TAKE(0, m1, p[i + 1], ISNAN)) m1 = p[i + 1];                               \
                if (DF__MM_TAKE(0, m2, p[i + 2], ISNAN)) m2 = p[i + 2];                               \
                if (DF__MM_TAKE(0, m3, p[i + 3], ISNAN)) m3 = p[i + 3];                               \
            }                                                                                         \
        }                                                                                             \
        for (; i < n; i++) if (DF__MM_TAKE(is_max, m0, p[i], ISNAN)) m0 = p[i];                       \
        if (DF__MM_TAKE(is_max, m0, m1, ISNAN)) m0 = m1;                                              \
        if (DF__MM_TAKE(is_max, m2, m3, ISNAN)) m2 = m3;                                              \
        if (DF__MM_TAKE(is_max, m0, m2, ISNAN)) m0 = m2;                                              \
        return m0;                                                                                    \
    }                                                                                                 \
    static void df__mm_acc_##SUF(T *acc, const T *row, int64_t n, int is_max) {                       \
        DF__VMM_ACC_##SUF(acc, row, n, is_max);                                                       \
        if (is_max) { for (int64_t i = 0; i < n; i++) if (DF__MM_TAKE(1, acc[i], row[i], ISNAN)) acc[i] = row[i]; } \
        else { for (int64_t i = 0; i < n; i++) if (DF__MM_TAKE(0, acc[i], row[i], ISNAN)) acc[i] = row[i]; }         \
    }                                                                                                 \
    static void df__mm_share_##SUF(const df__mm_job *j, int64_t lo, int64_t hi) {                     \
        const T *x = (const T *)j->x;                                                                 \
        T *out = (T *)j->out, *part = (T *)j->part;                                                   \
        switch (j->mode) {                                                                            \
        case 0: for (int64_t i = lo; i < hi; i++) out[i] = df__mm_row_##SUF(x + i * j->count, j->count, j->is_max); break; \
        case 1:                                                                                       \
            for (int64_t b = lo; b < hi; b++)                                                         \
                part[b] = df__mm_row_##SUF(x + b * DF__SUM_BLOCK, DF__MIN((int64_t)DF__SUM_BLOCK, j->count - b * DF__SUM_BLOCK), j->is_max); \
            break;                                                                                    \
        case 2:                                                                                       \
            memcpy(out + lo, x + lo, (size_t)(hi - lo) * sizeof(T));                                  \
            for (int64_t r = 1; r < j->count; r++) df__mm_acc_##SUF(out + lo, x + r * j->on + lo, hi - lo, j->is_max); \
            break;                                                                                    \
        default:                                                                                      \
            for (int64_t b = lo; b < hi; b++) {                                                       \
                int64_t r0 = b * j->rows_per_block, r1 = DF__MIN(j->count, r0 + j->rows_per_block);  \
                T *p = part + b * j->on;                                                              \
                memcpy(p, x + r0 * j->on, (size_t)j->on * sizeof(T));                                 \
                for (int64_t r = r0 + 1; r < r1; r++) df__mm_acc_##SUF(p, x + r * j->on, j->on, j->is_max); \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    static void df__mm_finish_##SUF(const df__mm_job *j, int64_t blocks) {                            \
        T *out = (T *)j->out, *part = (T *)j->part;                                                   \
        if (j->mode == 1) out[0] = df__mm_row_##SUF(part, blocks, j->is_max);                         \
        if (j->mode == 3) {                                                                           \
            memcpy(out, part, (size_t)j->on * sizeof(T));                                             \
            for (int64_t b = 1; b < blocks; b++) df__mm_acc_##SUF(out, part + b * j->on, j->on, j->is_max); \
        }                                                                                             \
    }
DF__MM_FUNCS(float, f32, DF__MM_NAN_F)
DF__MM_FUNCS(double, f64, DF__MM_NAN_F)
DF__MM_FUNCS(int32_t, i32, DF__MM_NAN_I)
DF__MM_FUNCS(int64_t, i64, DF__MM_NAN_I)
static void df__mm_share(void *arg, int64_t lo, int64_t hi) {
    const df__mm_job *j = (const df__mm_job *)arg;
    switch (j->t) {
    case DF_FLOAT: df__mm_share_f32(j, lo, hi); break;
    case DF_DOUBLE: df__mm_share_f64(j, lo, hi); break;
    case DF_INT32: df__mm_share_i32(j, lo, hi); break;
    default: df__mm_share_i64(j, lo, hi); break;
    }
}
static void df__minmax(df__kctx *c, const df_tensor *x, int cols, int64_t on, int64_t count, int is_max, df_tensor *o) {
    df__mm_job j;
    memset(&j, 0, sizeof j);
    j.is_max = is_max; j.t = x->dtype; j.x = x->data; j.out = o->data; j.on = on; j.count = count;
    size_t es = df_dtype_size(x->dtype);
    int64_t len, unit = 1, blocks = 0;
    if (!cols && on > 1) { j.mode = 0; len = on; }
    else if (!cols) { j.mode = 1; blocks = len = (count + DF__SUM_BLOCK - 1) / DF__SUM_BLOCK; }
    else if (on >= 256 || count * on <= DF__SUM_BLOCK) { j.mode = 2; len = on; unit = 64; }
    else {
        j.mode = 3;
        j.rows_per_block = DF__MAX((int64_t)1, DF__SUM_BLOCK / on);
        blocks = len = (count + j.rows_per_block - 1) / j.rows_per_block;
    }
    if (blocks) {
        j.part = DF_MALLOC((size_t)blocks * (j.mode == 3 ? (size_t)on : 1) * es);
        if (!j.part) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in reduction"); return; }
    }
    int threads = (size_t)x->n * es >= ((size_t)1 << 20) ? df__ipool_threads(c->ipool) : 1;
    df__parallel_for(c->ipool, len, unit, threads, df__mm_share, &j);
    switch (j.t) {
    case DF_FLOAT: df__mm_finish_f32(&j, blocks); break;
    case DF_DOUBLE: df__mm_finish_f64(&j, blocks); break;
    case DF_INT32: df__mm_finish_i32(&j, blocks); break;
    default: df__mm_finish_i64(&j, blocks); break;
    }
    DF_FREE(j.part);
}
DF_PRIVATE void df__k_reduce(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int code = c->node->op->code, keep = df__attr_b(c->node, "keep_dims", 0);
    unsigned mask;
    if (df__norm_axes(c->node, c->in[1], x->rank, &mask, c->st)) return;
    /* no axis: the input itself, whatever the op (the gradient of a broadcast Add whose side
       was not broadcast asks for this, once per loop iteration in an RNN) */
    if (!mask) { df__k_forward(c, 0, 0); return; }
    df__shape os;
    df__reduced_shape(x->rank, x->dims, mask, keep, &os);
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o) return;
    int64_t on = o->n, count = on ? x->n / on : 0;
    if (x->n == 0) count = 0;
    else if (on == 0) return;
    int sums = (x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE) && (code == DF__R_SUM || code == DF__R_MEAN);
    int extremes = (x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE || x->dtype == DF_INT32 || x->dtype == DF_INT64) &&
                   (code == DF__R_MAX || code == DF__R_MIN) && count > 0;
    if (sums || extremes) {
        /* fast paths: the reduced axes lead (reduce rows together) or trail (reduce within rows) */
        int lo = 0, hi = x->rank;
        while (lo < x->rank && (mask >> lo & 1u)) lo++;
        while (hi > 0 && (mask >> (hi - 1) & 1u)) hi--;
        int prefix = (mask >> lo) == 0, suffix = hi == 0 || (mask & ((1u << hi) - 1)) == 0;
        if (prefix || suffix) {
            int cols = prefix && !(suffix && on == 1);
            if (sums) df__float_sums(c, x, cols, on, count, code == DF__R_MEAN, o);
            else df__minmax(c, x, cols, on, count, code == DF__R_MAX, o);
            return;
        }
    }
    double *acc = (double *)DF_MALLOC((size_t)DF__MAX(on, 1) * sizeof(double));
    int64_t *iacc = (int64_t *)DF_MALLOC((size_t)DF__MAX(on, 1) * sizeof(int64_t));
    if (!acc || !iacc) { DF_FREE(acc); DF_FREE(iacc); DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in reduction"); return; }
    int is_int = df__is_integer_type(x->dtype);
    double init = code == DF__R_PROD ? 1 : code == DF__R_MAX ? -INFINITY : code == DF__R_MIN ? INFINITY : 0;
    int64_t iinit = code == DF__R_PROD ? 1 : code == DF__R_MAX ? (x->dtype == DF_INT32 ? INT32_MIN : INT64_MIN)
                  : code == DF__R_MIN ? (x->dtype == DF_INT32 ? INT32_MAX : INT64_MAX) : 0;
    for (int64_t i = 0; i < on; i++) { acc[i] = init; iacc[i] = iinit; }
    /* output stride of each input dim (0 where reduced) */
    int64_t ostride[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, oi = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        if (mask & (1u << d)) ostride[d] = 0;
        else { ostride[d] = s; s *= x->dims[d]; }
    }
    for (int64_t i = 0; i < x->n; i++) {
        if (is_int) {
            int64_t v = df__get_i64(x->dtype, x->data, i), *a = &iacc[oi];
            switch (code) {
            case DF__R_SUM: case DF__R_MEAN: *a = (int64_t)((uint64_t)*a + (uint64_t)v); break;
            case DF__R_PROD: *a = (int64_t)((uint64_t)*a * (uint64_t)v); break;
            case DF__R_MAX: if (v > *a) *a = v; break;
            default: if (v < *a) *a = v; break;
            }
        } else {
            double v = df__get_f64(x->dtype, x->data, i), *a = &acc[oi];
            switch (code) {
            case DF__R_SUM: case DF__R_MEAN: *a += v; break;
            case DF__R_PROD: *a *= v; break;
            case DF__R_MAX: if (v > *a || v != v) *a = v; break;
            default: if (v < *a || v != v) *a = v; break;
            }
        }
        for (int d = x->rank - 1; d >= 0; d--) {
            idx[d]++; oi += ostride[d];
            if (idx[d] < x->dims[d]) break;
            oi -= ostride[d] * idx[d]; idx[d] = 0;
        }
    }
    for (int64_t i = 0; i < on; i++) {
        if (is_int) {
            int64_t v = iacc[i];
            if (code == DF__R_MEAN) v = count ? v / count : 0;
            df__set_from_i64(x->dtype, o->data, i, v);
        } else {
            double v = acc[i];
            if (code == DF__R_MEAN) v = count ? v / (double)count : NAN;
            df__set_from_f64(x->dtype, o->data, i, v);
        }
    }
    DF_FREE(acc);
    DF_FREE(iacc);
}

/* ---- ArgMax ---- */
static df_code df__argmax_axis(const df_node *n, const df_tensor *dim, int rank, int *axis, df_status *st) {
    if (!df__is_int_tensor(dim) || dim->n != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "dimension must be a scalar int32/int64");
    int64_t a = df__int_at(dim, 0);
    if (a < -rank || a >= rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected dimension in the range [%d, %d), but got %lld", -rank, rank, (long long)a);
    *axis = (int)(a < 0 ? a + rank : a);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_argmax(df__shape_ctx *c) {
    const df_tensor *dim = df__sc_const(c, 1);
    const df__shape *in = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    if (in->rank < 0 || !dim) { *o = df__shape_unknown(); return DF_OK; }
    int axis;
    if (df__argmax_axis(c->node, dim, in->rank, &axis, c->st)) return c->st->code;
    df__reduced_shape(in->rank, in->dims, 1u << axis, 0, o);
    return DF_OK;
}
DF_PRIVATE void df__k_argmax(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int axis;
    if (df__argmax_axis(c->node, c->in[1], x->rank, &axis, c->st)) return;
    if (x->dims[axis] == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Reduction axis %d is empty in shape of rank %d", axis, x->rank); return; }
    df__shape os;
    df__reduced_shape(x->rank, x->dims, 1u << axis, 0, &os);
    df_dtype ot = df__attr_type(c->node, "output_type");
    df_tensor *o = df__k_alloc(c, 0, ot, os.rank, os.dims);
    if (!o || !o->n) return;
    int64_t inner = 1, len = x->dims[axis];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    int is_max = c->node->op->code == 0;
    for (int64_t oi = 0; oi < o->n; oi++) {
        int64_t outer = oi / inner, in_i = oi % inner, best = 0;
        int64_t base = outer * len * inner + in_i;
        double bv = df__get_f64(x->dtype, x->data, base);
        for (int64_t j = 1; j < len; j++) {
            double v = df__get_f64(x->dtype, x->data, base + j * inner);
            if ((is_max ? v > bv : v < bv) && bv == bv) { bv = v; best = j; }
        }
        df__set_from_i64(ot, o->data, oi, best);
    }
}
