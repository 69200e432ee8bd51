/* ==========================================================================================
   src/kernels/elementwise.c: CPU kernels: elementwise ops, Cast, control flow      >>kernels
   A kernel reads c->in, writes c->out (new references) and reports errors through c->st with
   the node's name. Kernels never trust static shapes: every size, axis and index is checked
   again here. Elementwise ops broadcast NumPy-style over a row-wise odometer; sizes are
   int64 throughout. Vector speed comes later; nothing here is quadratic where TF is linear.
   ========================================================================================== */

DF_PRIVATE df_tensor *df__k_alloc(df__kctx *c, int i, df_dtype t, int rank, const int64_t *dims) {
    df__allocator *a = (c->host_out >> DF__MIN(i, 31) & 1) ? df__host_allocator() : c->alloc;
    df_tensor *x = a ? df__tensor_alloc(a, t, rank, dims, c->st) : NULL;
    if (!a) df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
    if (!x) {
        char msg[sizeof c->st->message];
        memcpy(msg, c->st->message, sizeof msg);
        if (c->dev && !c->dev->host_memory && !(c->host_out >> DF__MIN(i, 31) & 1))
            df_status_set(c->st, c->st->code ? c->st->code : DF_RESOURCE_EXHAUSTED, "%.*s (on %s) {{node %s}}",
                          360, msg, c->dev->name, c->node->name);
        else df_status_set(c->st, c->st->code ? c->st->code : DF_RESOURCE_EXHAUSTED, "%.*s {{node %s}}",
                           400, msg, c->node->name);
        return NULL;
    }
    c->out[i] = x;
    return x;
}
/* TensorFlow's buffer forwarding: output i takes input `in`'s buffer when this node holds the
   only reference to it (not a constant's value, a variable, a feed or a view of a shared
   buffer) and it has the output's type and shape. The kernel must then compute in place, each
   element read before it is written. Else a new tensor. */
DF_PRIVATE df_tensor *df__k_reuse_or_alloc(df__kctx *c, int i, int in, df_dtype t, int rank, const int64_t *dims) {
    df_tensor *x = in < c->n_in ? c->in[in] : NULL;
    if (x && x->dtype == t && x->rank == rank && !x->base && !x->ref && x->alloc &&
        __atomic_load_n(&x->refs, __ATOMIC_ACQUIRE) == 1 &&
        (rank == 0 || !memcmp(x->dims, dims, (size_t)rank * sizeof *dims))) {
        c->out[i] = x;
        c->in[in] = NULL;
        return x;
    }
    return df__k_alloc(c, i, t, rank, dims);
}
DF_PRIVATE df_tensor *df__k_alloc_like(df__kctx *c, int i, df_dtype t, const df_tensor *like) {
    return df__k_alloc(c, i, t, like->rank, like->dims);
}
/* Passes an input through: the node owns its input references, so it hands this one on. */
DF_PRIVATE void df__k_forward(df__kctx *c, int out, int in) { c->out[out] = c->in[in]; c->in[in] = NULL; }

/* ---- CPU features: which vector kernels run (AVX-512 for the GEMM and convolutions, AVX2+FMA
   for the rest, where the CPU has them; else portable) ----
   DF_EMULATE_AVX512 (tests only) compiles the AVX-512 kernel against SIMDe's portable
   definitions of the same intrinsics and reports the CPU as having it, so that kernel's logic
   runs on machines without AVX-512. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(DF_NO_SIMD)
#define DF__X86 1
#define DF__TARGET_AVX2 __attribute__((target("avx2,fma")))
#ifdef DF_EMULATE_AVX512
#define DF__Z(f) simde_mm512_##f
#define DF__ZT(t) simde__m512##t
#define DF__TARGET_AVX512
#else
#define DF__Z(f) _mm512_##f
#define DF__ZT(t) __m512##t
#define DF__TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#endif
#endif

enum { DF__ISA_PORTABLE = 0, DF__ISA_AVX2 = 1, DF__ISA_AVX512 = 2 };
static int df__isa_forced = -1;                 /* -1: the best the CPU has */
static int df__cpu_has_avx512(void) {
#if defined(DF__X86) && defined(DF_EMULATE_AVX512)
    return 1;
#elif defined(DF__X86)
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();           /* also checks that the OS saves the zmm registers */
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}
static int df__cpu_has_avx2(void) {
#ifdef DF__X86
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}
DF_PRIVATE int df__isa(void) {
    int f = __atomic_load_n(&df__isa_forced, __ATOMIC_RELAXED);
    if (f >= 0) return f;
    return df__cpu_has_avx512() ? DF__ISA_AVX512 : df__cpu_has_avx2() ? DF__ISA_AVX2 : DF__ISA_PORTABLE;
}
#ifdef DF__X86   /* its callers are all x86 vector paths: unused (a warning) elsewhere */
/* The set for kernels that have no AVX-512 version: AVX2 on an AVX-512 machine. */
DF_PRIVATE int df__vec_isa(void) { int i = df__isa(); return i > DF__ISA_AVX2 ? DF__ISA_AVX2 : i; }
#endif
df_code df_set_kernel_isa(const char *isa) {
    int v;
    if (!isa || !strcmp(isa, "auto")) v = -1;
    else if (!strcmp(isa, "portable")) v = DF__ISA_PORTABLE;
    else if (!strcmp(isa, "avx2")) { if (!df__cpu_has_avx2()) return DF_UNAVAILABLE; v = DF__ISA_AVX2; }
    else if (!strcmp(isa, "avx512")) { if (!df__cpu_has_avx512()) return DF_UNAVAILABLE; v = DF__ISA_AVX512; }
    else return DF_INVALID_ARGUMENT;
    __atomic_store_n(&df__isa_forced, v, __ATOMIC_RELAXED);
    return DF_OK;
}
const char *df_kernel_isa(void) {
    int i = df__isa();
    return i == DF__ISA_AVX512 ? "avx512" : i == DF__ISA_AVX2 ? "avx2" : "portable";
}

/* ---- elementwise binary ---- */

#define DF__ROW(NAME, TI, TO, EXPR)                                                            \
    static void NAME(void *o_, const void *a_, const void *b_, int64_t n, int sa, int sb) {    \
        TO *o = (TO *)o_;                                                                      \
        const TI *a = (const TI *)a_, *b = (const TI *)b_;                                     \
        if (sa && sb) for (int64_t i = 0; i < n; i++) { TI x = a[i], y = b[i]; o[i] = (TO)(EXPR); } \
        else if (sa) { TI y = b[0]; for (int64_t i = 0; i < n; i++) { TI x = a[i]; o[i] = (TO)(EXPR); } } \
        else if (sb) { TI x = a[0]; for (int64_t i = 0; i < n; i++) { TI y = b[i]; o[i] = (TO)(EXPR); } } \
        else { TI x = a[0], y = b[0]; TO v = (TO)(EXPR); for (int64_t i = 0; i < n; i++) o[i] = v; } \
    }

static int32_t df__ipow32(int32_t x, int32_t y) { int32_t r = 1; while (y > 0) { if (y & 1) r = (int32_t)((uint32_t)r * (uint32_t)x); x = (int32_t)((uint32_t)x * (uint32_t)x); y >>= 1; } return r; }
static int64_t df__ipow64(int64_t x, int64_t y) { int64_t r = 1; while (y > 0) { if (y & 1) r = (int64_t)((uint64_t)r * (uint64_t)x); x = (int64_t)((uint64_t)x * (uint64_t)x); y >>= 1; } return r; }
/* y == -1 is handled apart: INT_MIN / -1 and INT_MIN % -1 trap on x86. */
#define DF__IFMOD(x, y) ((y) == -1 ? 0 : (x) % (y) != 0 && (((x) % (y) < 0) != ((y) < 0)) ? (x) % (y) + (y) : (x) % (y))
#define DF__IFDIV(T, U, x, y) ((y) == -1 ? (T)((U)0 - (U)(x)) : (x) / (y) - (((x) % (y) != 0) && (((x) < 0) != ((y) < 0))))
#define DF__FFMOD(x, y) (fmod((x), (y)) != 0 && ((fmod((x), (y)) < 0) != ((y) < 0)) ? fmod((x), (y)) + (y) : fmod((x), (y)))
/* Integer add/sub/mul wrap as two's complement (TensorFlow's behaviour), without UB. */
#define DF__WRAP(T, U, OP, x, y) ((T)((U)(x) OP (U)(y)))

#define DF__ARITH_ROWS(SUF, T, ISFLOAT, POWF, FMODF, FDIVF, ADDX, SUBX, MULX, DIVX)           \
    DF__ROW(df__row_add_##SUF, T, T, ADDX) DF__ROW(df__row_sub_##SUF, T, T, SUBX)              \
    DF__ROW(df__row_mul_##SUF, T, T, MULX) DF__ROW(df__row_div_##SUF, T, T, DIVX)              \
    DF__ROW(df__row_max_##SUF, T, T, (x > y || (ISFLOAT && x != x)) ? x : y)                   \
    DF__ROW(df__row_min_##SUF, T, T, (x < y || (ISFLOAT && x != x)) ? x : y)                   \
    DF__ROW(df__row_pow_##SUF, T, T, POWF) DF__ROW(df__row_fmod_##SUF, T, T, FMODF)            \
    DF__ROW(df__row_fdiv_##SUF, T, T, FDIVF) DF__ROW(df__row_sqd_##SUF, T, T, (x - y) * (x - y)) \
    DF__ROW(df__row_lt_##SUF, T, uint8_t, x < y) DF__ROW(df__row_le_##SUF, T, uint8_t, x <= y) \
    DF__ROW(df__row_gt_##SUF, T, uint8_t, x > y) DF__ROW(df__row_ge_##SUF, T, uint8_t, x >= y) \
    DF__ROW(df__row_eq_##SUF, T, uint8_t, x == y) DF__ROW(df__row_ne_##SUF, T, uint8_t, x != y)

DF__ARITH_ROWS(f32, float, 1, powf(x, y), (float)DF__FFMOD(x, y), floorf(x / y), x + y, x - y, x * y, x / y)
DF__ARITH_ROWS(f64, double, 1, pow(x, y), DF__FFMOD(x, y), floor(x / y), x + y, x - y, x * y, x / y)
DF__ARITH_ROWS(i32, int32_t, 0, df__ipow32(x, y), DF__IFMOD(x, y), DF__IFDIV(int32_t, uint32_t, x, y),
               DF__WRAP(int32_t, uint32_t, +, x, y), DF__WRAP(int32_t, uint32_t, -, x, y),
               DF__WRAP(int32_t, uint32_t, *, x, y), (y == -1 ? DF__WRAP(int32_t, uint32_t, -, 0, x) : x / y))
DF__ARITH_ROWS(i64, int64_t, 0, df__ipow64(x, y), DF__IFMOD(x, y), DF__IFDIV(int64_t, uint64_t, x, y),
               DF__WRAP(int64_t, uint64_t, +, x, y), DF__WRAP(int64_t, uint64_t, -, x, y),
               DF__WRAP(int64_t, uint64_t, *, x, y), (y == -1 ? DF__WRAP(int64_t, uint64_t, -, 0, x) : x / y))
DF__ROW(df__row_and_b, uint8_t, uint8_t, x && y)
DF__ROW(df__row_or_b, uint8_t, uint8_t, x || y)
DF__ROW(df__row_eq_b, uint8_t, uint8_t, (x != 0) == (y != 0))
DF__ROW(df__row_ne_b, uint8_t, uint8_t, (x != 0) != (y != 0))

#define DF__GRAD_ROWS(SUF, T, SQRTF)                                                           \
    DF__ROW(df__row_relug_##SUF, T, T, y > 0 ? x : 0) DF__ROW(df__row_tanhg_##SUF, T, T, y * (1 - x * x)) \
    DF__ROW(df__row_sigg_##SUF, T, T, y * x * (1 - x)) DF__ROW(df__row_sqrtg_##SUF, T, T, y * (T)0.5 / x) \
    DF__ROW(df__row_rsqrtg_##SUF, T, T, y * (T)-0.5 * x * x * x) DF__ROW(df__row_recipg_##SUF, T, T, -y * x * x)
DF__GRAD_ROWS(f32, float, sqrtf)
DF__GRAD_ROWS(f64, double, sqrt)
#define DF__ROWSET(SUF, GRADS) { df__row_add_##SUF, df__row_sub_##SUF, df__row_mul_##SUF, df__row_div_##SUF, \
    df__row_max_##SUF, df__row_min_##SUF, df__row_pow_##SUF, df__row_fmod_##SUF, df__row_fdiv_##SUF, \
    df__row_sqd_##SUF, df__row_lt_##SUF, df__row_le_##SUF, df__row_gt_##SUF, df__row_ge_##SUF, \
    df__row_eq_##SUF, df__row_ne_##SUF, NULL, NULL, GRADS }
#define DF__GRADSET(SUF) df__row_relug_##SUF, df__row_tanhg_##SUF, df__row_sigg_##SUF, df__row_sqrtg_##SUF, \
    df__row_rsqrtg_##SUF, df__row_recipg_##SUF
static const df__row_fn df__rows_f32[DF__B_COUNT] = DF__ROWSET(f32, DF__GRADSET(f32));
static const df__row_fn df__rows_f64[DF__B_COUNT] = DF__ROWSET(f64, DF__GRADSET(f64));
static const df__row_fn df__rows_i32[DF__B_COUNT] = DF__ROWSET(i32, NULL);
static const df__row_fn df__rows_i64[DF__B_COUNT] = DF__ROWSET(i64, NULL);

/* AVX2 rows for float32 and float64: the same results as the plain rows (IEEE operations lane
   by lane; Maximum/Minimum keep TensorFlow's NaN rule), eight or four elements at a time. */
#ifdef DF__X86
#define DF__VROW(NAME, T, V, W, L, SET1, VEXPR, SEXPR)                                          \
    DF__TARGET_AVX2 static void NAME(void *o_, const void *a_, const void *b_, int64_t n, int sa, int sb) { \
        T *o = (T *)o_;                                                                         \
        const T *a = (const T *)a_, *b = (const T *)b_;                                         \
        int64_t i = 0;                                                                          \
        if (sa && sb) {                                                                         \
            for (; i + L <= n; i += L) { V x = _mm256_loadu_##W(a + i), y = _mm256_loadu_##W(b + i); _mm256_storeu_##W(o + i, VEXPR); } \
            for (; i < n; i++) { T xs = a[i], ys = b[i]; o[i] = SEXPR; }                        \
        } else if (sa) {                                                                        \
            T ys = b[0]; V y = SET1(ys);                                                        \
            for (; i + L <= n; i += L) { V x = _mm256_loadu_##W(a + i); _mm256_storeu_##W(o + i, VEXPR); } \
            for (; i < n; i++) { T xs = a[i]; o[i] = SEXPR; }                                   \
        } else if (sb) {                                                                        \
            T xs = a[0]; V x = SET1(xs);                                                        \
            for (; i + L <= n; i += L) { V y = _mm256_loadu_##W(b + i); _mm256_storeu_##W(o + i, VEXPR); } \
            for (; i < n; i++) { T ys = b[i]; o[i] = SEXPR; }                                   \
        } else {                                                                                \
            T xs = a[0], ys = b[0], v = SEXPR;                                                  \
            for (; i < n; i++) o[i] = v;                                                        \
        }                                                                                       \
    }
#define DF__VROWS(SUF, T, V, W, L, SET1, CMP, BLEND, ONE)                                       \
    DF__VROW(df__vrow_add_##SUF, T, V, W, L, SET1, _mm256_add_##W(x, y), xs + ys)               \
    DF__VROW(df__vrow_sub_##SUF, T, V, W, L, SET1, _mm256_sub_##W(x, y), xs - ys)               \
    DF__VROW(df__vrow_mul_##SUF, T, V, W, L, SET1, _mm256_mul_##W(x, y), xs * ys)               \
    DF__VROW(df__vrow_div_##SUF, T, V, W, L, SET1, _mm256_div_##W(x, y), xs / ys)               \
    DF__VROW(df__vrow_max_##SUF, T, V, W, L, SET1,                                              \
             BLEND(y, x, _mm256_or_##W(CMP(x, y, _CMP_GT_OQ), CMP(x, x, _CMP_UNORD_Q))),         \
             (xs > ys || xs != xs) ? xs : ys)                                                   \
    DF__VROW(df__vrow_min_##SUF, T, V, W, L, SET1,                                              \
             BLEND(y, x, _mm256_or_##W(CMP(x, y, _CMP_LT_OQ), CMP(x, x, _CMP_UNORD_Q))),         \
             (xs < ys || xs != xs) ? xs : ys)                                                   \
    DF__VROW(df__vrow_sqd_##SUF, T, V, W, L, SET1, _mm256_mul_##W(_mm256_sub_##W(x, y), _mm256_sub_##W(x, y)), (xs - ys) * (xs - ys)) \
    DF__VROW(df__vrow_relug_##SUF, T, V, W, L, SET1,                                            \
             _mm256_and_##W(x, CMP(y, _mm256_setzero_##W(), _CMP_GT_OQ)), ys > 0 ? xs : 0)      \
    DF__VROW(df__vrow_tanhg_##SUF, T, V, W, L, SET1,                                            \
             _mm256_mul_##W(y, _mm256_sub_##W(ONE, _mm256_mul_##W(x, x))), ys * (1 - xs * xs))  \
    DF__VROW(df__vrow_sigg_##SUF, T, V, W, L, SET1,                                             \
             _mm256_mul_##W(_mm256_mul_##W(y, x), _mm256_sub_##W(ONE, x)), ys * xs * (1 - xs))
DF__VROWS(f32, float, __m256, ps, 8, _mm256_set1_ps, _mm256_cmp_ps, _mm256_blendv_ps, _mm256_set1_ps(1.0f))
DF__VROWS(f64, double, __m256d, pd, 4, _mm256_set1_pd, _mm256_cmp_pd, _mm256_blendv_pd, _mm256_set1_pd(1.0))
#define DF__VROWSET(SUF) { df__vrow_add_##SUF, df__vrow_sub_##SUF, df__vrow_mul_##SUF, df__vrow_div_##SUF, \
    df__vrow_max_##SUF, df__vrow_min_##SUF, NULL, NULL, NULL, df__vrow_sqd_##SUF, NULL, NULL, NULL, NULL, \
    NULL, NULL, NULL, NULL, df__vrow_relug_##SUF, df__vrow_tanhg_##SUF, df__vrow_sigg_##SUF, NULL, NULL, NULL }
static const df__row_fn df__vrows_f32[DF__B_COUNT] = DF__VROWSET(f32);
static const df__row_fn df__vrows_f64[DF__B_COUNT] = DF__VROWSET(f64);
#endif

DF_PRIVATE df__row_fn df__binary_row(int code, df_dtype t) {
#ifdef DF__X86
    if ((t == DF_FLOAT || t == DF_DOUBLE) && df__vec_isa() == DF__ISA_AVX2) {
        df__row_fn v = (t == DF_FLOAT ? df__vrows_f32 : df__vrows_f64)[code];
        if (v) return v;
    }
#endif
    switch (t) {
    case DF_FLOAT: return df__rows_f32[code];
    case DF_DOUBLE: return df__rows_f64[code];
    case DF_INT32: return df__rows_i32[code];
    case DF_INT64: return df__rows_i64[code];
    case DF_BOOL:
        return code == DF__B_AND ? df__row_and_b : code == DF__B_OR ? df__row_or_b
             : code == DF__B_EQUAL ? df__row_eq_b : code == DF__B_NOT_EQUAL ? df__row_ne_b : NULL;
    default: return NULL;
    }
}

static int df__any_zero_int(const df_tensor *t) {
    for (int64_t i = 0; i < t->n; i++) if (df__int_at(t, i) == 0) return 1;
    return 0;
}

static void df__parallel_for(struct df__ipool *p, int64_t len, int64_t unit, int parts,
                             void (*fn)(void *arg, int64_t lo, int64_t hi), void *arg);
/* A row function over n elements, in pieces on the intra-op threads when the tensors are big
   enough (past about 1 MB) for the hand-off to pay. sa, sb: 1 to step through a, b; 0 to
   repeat their first element. Elementwise, so the pieces give the same bits as one call. */
typedef struct df__row_job {
    df__row_fn row;
    char *o;
    const char *a, *b;
    size_t es, eo;
    int sa, sb;
} df__row_job;
static void df__row_share(void *arg, int64_t lo, int64_t hi) {
    const df__row_job *j = (const df__row_job *)arg;
    j->row(j->o + (size_t)lo * j->eo, j->a + (size_t)lo * j->es * (size_t)j->sa, j->b + (size_t)lo * j->es * (size_t)j->sb,
           hi - lo, j->sa, j->sb);
}
static void df__row_run(df__kctx *c, df__row_fn row, char *o, const char *a, const char *b, int64_t n, int sa, int sb,
                        size_t es, size_t eo) {
    if ((size_t)n * es < ((size_t)1 << 20)) { row(o, a, b, n, sa, sb); return; }
    df__row_job j = {row, o, a, b, es, eo, sa, sb};
    df__parallel_for(c->ipool, n, 1024, df__ipool_threads(c->ipool), df__row_share, &j);
}
DF_PRIVATE void df__k_binary(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int code = c->node->op->code;
    df__row_fn row = df__binary_row(code, a->dtype);
    if (!row) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(a->dtype)); return; }
    if (a->rank == 0 && b->rank == 0 && code != DF__B_DIV && code != DF__B_FLOORMOD && code != DF__B_FLOORDIV &&
        code != DF__B_POW) {                          /* scalars: the common case in loops */
        df_tensor *o = df__k_alloc(c, 0, code >= DF__B_LESS && code <= DF__B_NOT_EQUAL ? DF_BOOL : a->dtype, 0, NULL);
        if (o) row(o->data, a->data, b->data, 1, 1, 1);
        return;
    }
    df__bcast bc;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                  df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
        return;
    }
    int is_int = a->dtype == DF_INT32 || a->dtype == DF_INT64;
    if (is_int && (code == DF__B_DIV || code == DF__B_FLOORMOD || code == DF__B_FLOORDIV) && df__any_zero_int(b)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Integer division by zero in %s", c->node->op->name);
        return;
    }
    if (is_int && code == DF__B_POW)
        for (int64_t i = 0; i < b->n; i++)
            if (df__int_at(b, i) < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Integers to negative integer powers are not allowed"); return; }
    df_dtype ot = code >= DF__B_LESS && code <= DF__B_NOT_EQUAL ? DF_BOOL : a->dtype;
    /* (a and b stay readable: a forwarded input is the output, the other one is untouched) */
    df_tensor *o = df__k_reuse_or_alloc(c, 0, a->n == b->n || b->n == 1 ? 0 : 1, ot, bc.rank, bc.dims);
    if (!o || o->n == 0) return;
    size_t es = df_dtype_size(a->dtype), eo = df_dtype_size(ot);
    const char *pa = (const char *)a->data, *pb = (const char *)b->data;
    char *po = (char *)o->data;
    if (a->n == o->n && b->n == o->n) { df__row_run(c, row, po, pa, pb, o->n, 1, 1, es, eo); return; }
    if (b->n == 1 && a->n == o->n) { df__row_run(c, row, po, pa, pb, o->n, 1, 0, es, eo); return; }
    if (a->n == 1 && b->n == o->n) { df__row_run(c, row, po, pa, pb, o->n, 0, 1, es, eo); return; }
    /* general: odometer over all dims but the last */
    int r = bc.rank;
    int64_t inner = bc.dims[r - 1], idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;
    int sa = bc.sa[r - 1] != 0, sb = bc.sb[r - 1] != 0;
    for (int64_t done = 0; done < o->n; done += inner) {
        row(po + (size_t)done * eo, pa + (size_t)oa * es, pb + (size_t)ob * es, inner, sa, sb);
        for (int d = r - 2; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* ---- elementwise unary ---- */

#define DF__UNARY_LOOP(T, EXPR) { const T *a = (const T *)x->data; T *o = (T *)y->data; \
    for (int64_t i = 0; i < n; i++) { T v = a[i]; o[i] = (T)(EXPR); } }
#define DF__UNARY_FLOAT(T, SQRT, EXP, LOG, TANH, FLOOR)                                      \
    switch (code) {                                                                        \
    case DF__U_NEG: DF__UNARY_LOOP(T, -v) break;                                           \
    case DF__U_SQUARE: DF__UNARY_LOOP(T, v * v) break;                                     \
    case DF__U_SQRT: DF__UNARY_LOOP(T, SQRT(v)) break;                                     \
    case DF__U_RSQRT: DF__UNARY_LOOP(T, (T)1 / SQRT(v)) break;                             \
    case DF__U_EXP: DF__UNARY_LOOP(T, EXP(v)) break;                                       \
    case DF__U_LOG: DF__UNARY_LOOP(T, LOG(v)) break;                                       \
    case DF__U_TANH: DF__UNARY_LOOP(T, TANH(v)) break;                                     \
    case DF__U_SIGMOID: DF__UNARY_LOOP(T, v >= 0 ? (T)1 / ((T)1 + EXP(-v)) : EXP(v) / ((T)1 + EXP(v))) break; \
    case DF__U_RELU: DF__UNARY_LOOP(T, v > 0 ? v : (v != v ? v : (T)0)) break;             \
    case DF__U_ABS: DF__UNARY_LOOP(T, v < 0 ? -v : v) break;                               \
    case DF__U_SIGN: DF__UNARY_LOOP(T, v > 0 ? (T)1 : v < 0 ? (T)-1 : v == 0 ? (T)0 : v) break; \
    case DF__U_RECIPROCAL: DF__UNARY_LOOP(T, (T)1 / v) break;                              \
    case DF__U_FLOOR: DF__UNARY_LOOP(T, FLOOR(v)) break;                                   \
    default: ok = 0;                                                                       \
    }
#define DF__UNARY_INT(T, U)                                                                \
    switch (code) {                                                                        \
    case DF__U_NEG: DF__UNARY_LOOP(T, (T)(0 - (U)v)) break;                                \
    case DF__U_SQUARE: DF__UNARY_LOOP(T, (T)((U)v * (U)v)) break;                          \
    case DF__U_RELU: DF__UNARY_LOOP(T, v > 0 ? v : 0) break;                               \
    case DF__U_ABS: DF__UNARY_LOOP(T, v < 0 ? (T)(0 - (U)v) : v) break;                    \
    case DF__U_SIGN: DF__UNARY_LOOP(T, v > 0 ? 1 : v < 0 ? -1 : 0) break;                  \
    default: ok = 0;                                                                       \
    }

#ifdef DF__X86
/* AVX2 unary ops for float32/float64 with the plain loops' exact results; 0 if not handled
   (exp, log, tanh, sigmoid: the plain loops). */
#define DF__VUNARY(SUF, T, V, W, L, SET1, CMP, BLEND, SQRT, FLOOR)                                              \
    DF__TARGET_AVX2 static int df__vunary_##SUF(int code, const T *a, T *o, int64_t n) {          \
        const V zero = _mm256_setzero_##W(), one = SET1((T)1);                                    \
        int64_t i = 0;                                                                            \
        switch (code) {                                                                           \
        case DF__U_NEG: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_xor_##W(SET1((T)-0.0), _mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = -a[i]; } \
            return 1;                                            \
        case DF__U_SQUARE: for (; i + L <= n; i += L) { V v = _mm256_loadu_##W(a + i); _mm256_storeu_##W(o + i, _mm256_mul_##W(v, v)); } \
            for (; i < n; i++) { o[i] = a[i] * a[i]; } \
            return 1;                                      \
        case DF__U_SQRT: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_sqrt_##W(_mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = SQRT(a[i]); } \
            return 1;                                                                                \
        case DF__U_RSQRT: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_div_##W(one, _mm256_sqrt_##W(_mm256_loadu_##W(a + i)))); \
            for (; i < n; i++) { o[i] = (T)1 / SQRT(a[i]); } \
            return 1;                                                                                \
        case DF__U_RECIPROCAL: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_div_##W(one, _mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = (T)1 / a[i]; } \
            return 1;                                      \
        case DF__U_FLOOR: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_floor_##W(_mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = FLOOR(a[i]); } \
            return 1;                                                                                \
        case DF__U_RELU: for (; i + L <= n; i += L) { V v = _mm256_loadu_##W(a + i);             \
                _mm256_storeu_##W(o + i, BLEND(zero, v, _mm256_or_##W(CMP(v, zero, _CMP_GT_OQ), CMP(v, v, _CMP_UNORD_Q)))); } \
            for (; i < n; i++) { T v = a[i]; o[i] = v > 0 ? v : (v != v ? v : (T)0); } \
            return 1;  \
        case DF__U_ABS: for (; i + L <= n; i += L) { V v = _mm256_loadu_##W(a + i);              \
                _mm256_storeu_##W(o + i, BLEND(v, _mm256_sub_##W(zero, v), CMP(v, zero, _CMP_LT_OQ))); } \
            for (; i < n; i++) { T v = a[i]; o[i] = v < 0 ? -v : v; } \
            return 1;                   \
        default: return 0; \
        } \
    }
DF__VUNARY(f32, float, __m256, ps, 8, _mm256_set1_ps, _mm256_cmp_ps, _mm256_blendv_ps, sqrtf, floorf)
DF__VUNARY(f64, double, __m256d, pd, 4, _mm256_set1_pd, _mm256_cmp_pd, _mm256_blendv_pd, sqrt, floor)
#endif

#ifdef DF__X86
/* ---- float32 exp, log, tanh and sigmoid on 8 lanes (AVX2+FMA) ----
   Written here, within a few units in the last place of the correctly rounded result:
   exp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so n ln2 is exact), e^r from its
   Taylor series to r^7 (the next term is below 2^-28 there), times 2^n built in two halves so
   results near overflow and subnormal ones come out right. log: x = m 2^e with m in
   [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m-1)/(m+1), |s| <= 0.172, series to s^9.
   tanh: the odd Taylor series to x^15 below |x| = 0.55 (relative error < 1e-7 there), else
   sign(x) (1 - 2 / (e^(2|x|) + 1)). sigmoid: 1 / (1 + e^-x), or e^x / (1 + e^x) for x < 0 (so
   e^-x cannot overflow while the result is still above zero). NaN in gives NaN out. */
DF__TARGET_AVX2 DF_PRIVATE inline __m256 df__v8_exp(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-110.0f), hi = _mm256_set1_ps(90.0f);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606820309417232e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
DF__TARGET_AVX2 static inline __m256 df__v8_log(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    /* subnormals: scaled by 2^23 first */
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), tiny);
    __m256i bits = _mm256_castps_si256(xs);
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127));
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
    __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
    __m256 ef = _mm256_add_ps(_mm256_cvtepi32_ps(e), _mm256_and_ps(big, one));
    ef = _mm256_sub_ps(ef, _mm256_and_ps(tiny, _mm256_set1_ps(23.0f)));
    /* with f = m - 1 (exact) and R = 2 atanh(s)/s - 2: log m = f - (f^2/2 - s (f^2/2 + R)) */
    __m256 f = _mm256_sub_ps(m, one), s = _mm256_div_ps(f, _mm256_add_ps(f, _mm256_set1_ps(2.0f))), s2 = _mm256_mul_ps(s, s);
    __m256 R = _mm256_set1_ps(2.0f / 9);
    R = _mm256_fmadd_ps(R, s2, _mm256_set1_ps(2.0f / 7));
    R = _mm256_fmadd_ps(R, s2, _mm256_set1_ps(2.0f / 5));
    R = _mm256_fmadd_ps(R, s2, _mm256_set1_ps(2.0f / 3));
    R = _mm256_mul_ps(R, s2);
    __m256 hf = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_mul_ps(f, f));
    __m256 lm = _mm256_sub_ps(f, _mm256_fnmadd_ps(s, _mm256_add_ps(hf, R), hf));
    __m256 y = _mm256_fmadd_ps(ef, _mm256_set1_ps(0.693145751953125f), _mm256_fmadd_ps(ef, _mm256_set1_ps(1.428606820309417232e-6f), lm));
    const __m256 zero = _mm256_setzero_ps(), inf = _mm256_set1_ps(INFINITY);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(-INFINITY), _mm256_cmp_ps(x, zero, _CMP_EQ_OQ));
    y = _mm256_blendv_ps(y, inf, _mm256_cmp_ps(x, inf, _CMP_EQ_OQ));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(NAN), _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
DF__TARGET_AVX2 static inline __m256 df__v8_tanh(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    __m256 ax = _mm256_andnot_ps(sign, x), x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-0.00145583438705131827f);          /* -929569/638512875 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.00359212803657248102f));   /* 21844/6081075 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.00886323552990219656f));  /* -1382/155925 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.0218694885361552028f));    /* 62/2835 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.0539682539682539683f));   /* -17/315 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.133333333333333333f));     /* 2/15 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.333333333333333333f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x);
    __m256 e = df__v8_exp(_mm256_add_ps(ax, ax));
    __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    large = _mm256_or_ps(large, _mm256_and_ps(x, sign));
    __m256 y = _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.55f), _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
DF__TARGET_AVX2 static inline __m256 df__v8_sigmoid(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);        /* e^-|x| never overflows */
    __m256 e = df__v8_exp(_mm256_or_ps(x, _mm256_set1_ps(-0.0f)));
    __m256 y = _mm256_div_ps(_mm256_blendv_ps(one, e, neg), _mm256_add_ps(one, e));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
/* o[i] = f(a[i]) for Exp, Log, Tanh, Sigmoid (float32); 0 for other ops. The tail goes
   through the same vector code on a padded copy, so every element gets the same function. */
DF__TARGET_AVX2 static int df__vtrans_f32(int code, const float *a, float *o, int64_t n) {
    if (code != DF__U_EXP && code != DF__U_LOG && code != DF__U_TANH && code != DF__U_SIGMOID) return 0;
    for (int64_t i = 0; i < n; i += 8) {
        float in[8], out[8];
        int full = i + 8 <= n;
        __m256 v;
        if (full) v = _mm256_loadu_ps(a + i);
        else { memset(in, 0, sizeof in); memcpy(in, a + i, (size_t)(n - i) * sizeof(float)); v = _mm256_loadu_ps(in); }
        __m256 y = code == DF__U_EXP ? df__v8_exp(v) : code == DF__U_LOG ? df__v8_log(v)
                 : code == DF__U_TANH ? df__v8_tanh(v) : df__v8_sigmoid(v);
        if (full) _mm256_storeu_ps(o + i, y);
        else { _mm256_storeu_ps(out, y); memcpy(o + i, out, (size_t)(n - i) * sizeof(float)); }
    }
    return 1;
}
#endif

#ifdef DF__X86
typedef struct df__vtrans_job { int code; const float *a; float *o; } df__vtrans_job;
static void df__vtrans_share(void *arg, int64_t lo, int64_t hi) {
    const df__vtrans_job *j = (const df__vtrans_job *)arg;
    df__vtrans_f32(j->code, j->a + lo, j->o + lo, hi - lo);
}
/* The memory-bound vector ops (Neg, Relu, Abs...) on a piece, float32 or float64. */
typedef struct df__vunary_job { int code, dbl; const char *a; char *o; } df__vunary_job;
static void df__vunary_share(void *arg, int64_t lo, int64_t hi) {
    const df__vunary_job *j = (const df__vunary_job *)arg;
    if (j->dbl) df__vunary_f64(j->code, (const double *)j->a + lo, (double *)j->o + lo, hi - lo);
    else df__vunary_f32(j->code, (const float *)j->a + lo, (float *)j->o + lo, hi - lo);
}
#endif
DF_PRIVATE void df__k_unary(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int code = c->node->op->code, ok = 1;
    df_tensor *y = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (!y) return;
    int64_t n = x->n;
#ifdef DF__X86
    if (x->dtype == DF_FLOAT && df__vec_isa() == DF__ISA_AVX2 && n >= (1 << 16) &&
        (code == DF__U_EXP || code == DF__U_LOG || code == DF__U_TANH || code == DF__U_SIGMOID)) {
        /* compute-bound: shared between the intra-op threads (pieces of whole vectors) */
        df__vtrans_job j = {code, (const float *)x->data, (float *)y->data};
        df__parallel_for(c->ipool, n, 4096, df__ipool_threads(c->ipool), df__vtrans_share, &j);
        return;
    }
    if ((x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE) && df__vec_isa() == DF__ISA_AVX2 &&
        (size_t)n * df_dtype_size(x->dtype) >= ((size_t)1 << 20) &&
        (x->dtype == DF_FLOAT ? df__vunary_f32(code, NULL, NULL, 0) : df__vunary_f64(code, NULL, NULL, 0))) {
        /* memory-bound, past 1 MB: pieces on the intra-op threads (same bits as one call) */
        df__vunary_job j = {code, x->dtype == DF_DOUBLE, (const char *)x->data, (char *)y->data};
        df__parallel_for(c->ipool, n, 1024, df__ipool_threads(c->ipool), df__vunary_share, &j);
        return;
    }
    if ((x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE) && df__vec_isa() == DF__ISA_AVX2 &&
        (x->dtype == DF_FLOAT ? df__vunary_f32(code, (const float *)x->data, (float *)y->data, n) ||
                                df__vtrans_f32(code, (const float *)x->data, (float *)y->data, n)
                              : df__vunary_f64(code, (const double *)x->data, (double *)y->data, n)))
        return;
#endif
    switch (x->dtype) {
    case DF_FLOAT: DF__UNARY_FLOAT(float, sqrtf, expf, logf, tanhf, floorf) break;
    case DF_DOUBLE: DF__UNARY_FLOAT(double, sqrt, exp, log, tanh, floor) break;
    case DF_INT32: DF__UNARY_INT(int32_t, uint32_t) break;
    case DF_INT64: DF__UNARY_INT(int64_t, uint64_t) break;
    case DF_BOOL:
        if (code == DF__U_NOT) DF__UNARY_LOOP(uint8_t, !v)
        else ok = 0;
        break;
    default: ok = 0;
    }
    if (!ok) DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(x->dtype));
}

/* ---- Cast ---- */
DF_PRIVATE void df__set_from_f64(df_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case DF_FLOAT: ((float *)p)[i] = (float)v; break;
    case DF_DOUBLE: ((double *)p)[i] = v; break;
    case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)v); break;
    case DF_BFLOAT16: ((uint16_t *)p)[i] = df_float_to_bfloat16((float)v); break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}
/* Float to integer conversion that saturates and maps NaN to 0 instead of undefined behaviour. */
static int64_t df__f2i(double v, int64_t lo, int64_t hi) {
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    return (int64_t)v;
}
DF_PRIVATE void df__set_from_i64(df_dtype t, void *p, int64_t i, int64_t v) {
    switch (t) {
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case DF_INT64: ((int64_t *)p)[i] = v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case DF_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case DF_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case DF_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case DF_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case DF_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: df__set_from_f64(t, p, i, (double)v);
    }
}
DF_PRIVATE int df__is_integer_type(df_dtype t) {
    return t == DF_INT32 || t == DF_INT64 || t == DF_UINT8 || t == DF_INT8 || t == DF_INT16 ||
           t == DF_UINT16 || t == DF_UINT32 || t == DF_UINT64;
}
DF_PRIVATE int64_t df__get_i64(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return ((const int64_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    case DF_INT16: return ((const int16_t *)p)[i];
    case DF_UINT16: return ((const uint16_t *)p)[i];
    case DF_UINT32: return ((const uint32_t *)p)[i];
    case DF_UINT64: return (int64_t)((const uint64_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return df__f2i(df__get_f64(t, p, i), INT64_MIN, INT64_MAX);
    }
}
DF_PRIVATE void df__k_cast(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_dtype to = df__attr_type(c->node, "DstT");
    if (to == x->dtype) { df__k_forward(c, 0, 0); return; }
    df_tensor *y = df__k_alloc_like(c, 0, to, x);
    if (!y) return;
    int from_int = df__is_integer_type(x->dtype) || x->dtype == DF_BOOL;
    for (int64_t i = 0; i < x->n; i++) {
        if (df__is_integer_type(to)) {
            int64_t lo = to == DF_INT32 ? INT32_MIN : to == DF_INT64 ? INT64_MIN : 0;
            int64_t hi = to == DF_INT32 ? INT32_MAX : INT64_MAX;
            int64_t v = from_int ? df__get_i64(x->dtype, x->data, i) : df__f2i(df__get_f64(x->dtype, x->data, i), lo, hi);
            df__set_from_i64(to, y->data, i, v);
        } else if (from_int && to != DF_BOOL) {
            df__set_from_f64(to, y->data, i, (double)df__get_i64(x->dtype, x->data, i));
        } else {
            df__set_from_f64(to, y->data, i, df__get_f64(x->dtype, x->data, i));
        }
    }
}

/* ---- pass-through, constants, control flow ---- */
DF_PRIVATE void df__k_identity(df__kctx *c) { for (int i = 0; i < c->n_out; i++) df__k_forward(c, i, i); }
DF_PRIVATE void df__k_noop(df__kctx *c) { DF__UNUSED(c); }
/* Assert: fails the step when the condition is false, showing the first values of the data. */
DF_PRIVATE void df__k_assert(df__kctx *c) {
    const df_tensor *p = c->in[0];
    if (p->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "The condition of Assert must be a single bool, got %lld elements", (long long)p->n); return; }
    if (*(const unsigned char *)p->data) return;
    char msg[300] = "";
    size_t at = 0;
    int64_t summarize = df__attr_i(c->node, "summarize", 3);
    for (int i = 1; i < c->n_in && at + 40 < sizeof msg; i++) {
        const df_tensor *t = c->in[i];
        at += (size_t)snprintf(msg + at, sizeof msg - at, "%s[", i > 1 ? " " : "");
        for (int64_t k = 0; k < t->n && k < summarize && at + 24 < sizeof msg; k++) {
            double v = t->dtype == DF_FLOAT ? ((const float *)t->data)[k] : t->dtype == DF_INT32 ? ((const int32_t *)t->data)[k]
                     : t->dtype == DF_DOUBLE ? ((const double *)t->data)[k] : t->dtype == DF_INT64 ? (double)((const int64_t *)t->data)[k] : 0;
            at += (size_t)snprintf(msg + at, sizeof msg - at, "%s%g", k ? " " : "", v);
        }
        at += (size_t)snprintf(msg + at, sizeof msg - at, "%s]", t->n > summarize ? "..." : "");
    }
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "assertion failed: %s", msg);
}
DF_PRIVATE void df__k_const(df__kctx *c) {
    const df__attr *a = df__node_attr(c->node, "value");
    c->out[0] = df_tensor_retain(a->u.tensor);
}
DF_PRIVATE void df__k_placeholder(df__kctx *c) {
    const df__attr *s = df__node_attr(c->node, "shape");
    char shp[128];
    df__shape_str(s ? s->u.shape.rank : -1, s ? s->u.shape.dims : NULL, shp, sizeof shp);
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "You must feed a value for placeholder tensor '%s' with dtype %s "
              "and shape %s", c->node->name, df_dtype_name(df__attr_type(c->node, "dtype")), shp);
}
DF_PRIVATE void df__k_switch(df__kctx *c) {
    const df_tensor *p = c->in[1];
    if (p->rank != 0 || p->dtype != DF_BOOL) {
        char shp[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "The second input must be a scalar bool, but it has type %s "
                  "and shape %s", df_dtype_name(p->dtype), df__dims_str(p->rank, p->dims, shp, 96));
        return;
    }
    df__k_forward(c, *(const uint8_t *)p->data ? 1 : 0, 0);
}
DF_PRIVATE void df__k_merge(df__kctx *c) {
    for (int i = 0; i < c->n_in; i++) {
        if (!c->in[i]) continue;
        df__k_forward(c, 0, i);
        if (c->need & 2) {
            df_tensor *vi = df__k_alloc(c, 1, DF_INT32, 0, NULL);
            if (vi) *(int32_t *)vi->data = i;
        }
        return;
    }
    DF__KFAIL(c, DF_INTERNAL, "Merge ran with no live input");
}
DF_PRIVATE void df__k_loop_cond(df__kctx *c) {
    const df_tensor *p = c->in[0];
    if (p->rank != 0 || p->dtype != DF_BOOL) {
        char shp[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "LoopCond's input must be a scalar bool, got %s %s",
                  df_dtype_name(p->dtype), df__dims_str(p->rank, p->dims, shp, 96));
        return;
    }
    df__k_forward(c, 0, 0);
}
