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

/* ---- CPU features: which vector kernels run (AVX-512 for the GEMM, the convolutions, the
   float elementwise ops, Exp/Log/Tanh/Sigmoid, Softmax and pooling; AVX2+FMA for the rest,
   where the CPU has them; else portable) ----
   DF_EMULATE_AVX512 (tests only) compiles the AVX-512 kernels against SIMDe's portable
   definitions of the same intrinsics (DF__ZX below: the few SIMDe lacks) and reports the CPU
   as having it, so those kernels' logic runs on machines without AVX-512. */
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
    static int cached = -1;              /* (asked by every vector kernel call) */
    int f = __atomic_load_n(&df__isa_forced, __ATOMIC_RELAXED);
    if (f >= 0) return f;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        v = df__cpu_has_avx512() ? DF__ISA_AVX512 : df__cpu_has_avx2() ? DF__ISA_AVX2 : DF__ISA_PORTABLE;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
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

/* TanhGrad's y (1 - x^2) in three statements: a compiler that fuses a product into a sum
   within one expression (clang's default) would round 1 - x^2 once here and twice in the
   vector rows, whose results must be the same. */
static inline float df__tanhg_f32(float x, float y) { float s = x * x; float d = 1 - s; return y * d; }
static inline double df__tanhg_f64(double x, double y) { double s = x * x; double d = 1 - s; return y * d; }
#define DF__GRAD_ROWS(SUF, T, SQRTF)                                                           \
    DF__ROW(df__row_relug_##SUF, T, T, y > 0 ? x : 0) DF__ROW(df__row_tanhg_##SUF, T, T, df__tanhg_##SUF(x, y)) \
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
             _mm256_mul_##W(y, _mm256_sub_##W(ONE, _mm256_mul_##W(x, x))), df__tanhg_##SUF(xs, ys)) \
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

/* ---- AVX-512 rows and unary ops (float32: 16 lanes, float64: 8) ----
   The same lane-by-lane IEEE operations as the AVX2 rows above, so the same bits; the tail
   (fewer than a vector) goes through masked loads and stores instead of a scalar loop.
   DF__ZX: the few AVX-512 intrinsics SIMDe 0.7 does not define, lane by lane in its place
   (DF_EMULATE_AVX512 only; the native build uses the instructions). */
#ifdef DF__X86
#ifdef DF_EMULATE_AVX512
#define DF__ZX(f) df__zemu_##f
#define DF__ZEMU_LOAD(W, T, L, V)                                                                 \
    static inline V df__zemu_maskz_loadu_##W(uint32_t k, const void *p) {                        \
        T v[L] = {0};                                                                             \
        for (int i = 0; i < L; i++) if (k >> i & 1) memcpy(&v[i], (const char *)p + i * sizeof(T), sizeof(T)); \
        V r;                                                                                      \
        memcpy(&r, v, sizeof r);                                                                  \
        return r;                                                                                 \
    }                                                                                             \
    static inline void df__zemu_mask_storeu_##W(void *p, uint32_t k, V x) {                      \
        T v[L];                                                                                   \
        memcpy(v, &x, sizeof v);                                                                  \
        for (int i = 0; i < L; i++) if (k >> i & 1) memcpy((char *)p + i * sizeof(T), &v[i], sizeof(T)); \
    }
DF__ZEMU_LOAD(ps, float, 16, simde__m512)
DF__ZEMU_LOAD(pd, double, 8, simde__m512d)
/* (SIMDe 0.7's roundscale ignores the rounding mode when the no-exception bit is set) */
#define DF__ZEMU_ROUND(W, T, L, V, RINT, FLOOR, CEIL, TRUNC)                                      \
    static inline V df__zemu_roundscale_##W(V x, int mode) {                                      \
        T v[L];                                                                                   \
        memcpy(v, &x, sizeof v);                                                                  \
        for (int i = 0; i < L; i++)                                                               \
            v[i] = (mode & 3) == 0 ? RINT(v[i]) : (mode & 3) == 1 ? FLOOR(v[i]) : (mode & 3) == 2 ? CEIL(v[i]) : TRUNC(v[i]); \
        memcpy(&x, v, sizeof v);                                                                  \
        return x;                                                                                 \
    }
DF__ZEMU_ROUND(ps, float, 16, simde__m512, nearbyintf, floorf, ceilf, truncf)
DF__ZEMU_ROUND(pd, double, 8, simde__m512d, nearbyint, floor, ceil, trunc)
static inline simde__m512i df__zemu_cvtps_epi32(simde__m512 x) {   /* x holds whole numbers here */
    float f[16];
    int32_t v[16];
    simde__m512i r;
    memcpy(f, &x, sizeof f);
    for (int i = 0; i < 16; i++) v[i] = (int32_t)f[i];
    memcpy(&r, v, sizeof r);
    return r;
}
static inline simde__m512 df__zemu_cvtepi32_ps(simde__m512i x) {
    int32_t v[16];
    float f[16];
    simde__m512 r;
    memcpy(v, &x, sizeof v);
    for (int i = 0; i < 16; i++) f[i] = (float)v[i];
    memcpy(&r, f, sizeof r);
    return r;
}
static inline simde__m512i df__zemu_srai_epi32(simde__m512i x, int s) {
    int32_t v[16];
    memcpy(v, &x, sizeof v);
    for (int i = 0; i < 16; i++) v[i] >>= s;   /* arithmetic on the compilers that build this */
    memcpy(&x, v, sizeof v);
    return x;
}
#else
#define DF__ZX(f) _mm512_##f
#endif
/* The lanes of a tail of n (< a vector) elements. */
#define DF__ZTAIL(n) ((uint32_t)((1u << (n)) - 1u))

#define DF__ZROW(NAME, T, V, W, L, VEXPR)                                                       \
    DF__TARGET_AVX512 static void NAME(void *o_, const void *a_, const void *b_, int64_t n, int sa, int sb) { \
        T *o = (T *)o_;                                                                         \
        const T *a = (const T *)a_, *b = (const T *)b_;                                         \
        int64_t i = 0;                                                                          \
        if (sa && sb) {                                                                         \
            for (; i + L <= n; i += L) { V x = DF__Z(loadu_##W)(a + i), y = DF__Z(loadu_##W)(b + i); DF__Z(storeu_##W)(o + i, VEXPR); } \
            if (i < n) { uint32_t k = DF__ZTAIL(n - i);                                         \
                V x = DF__ZX(maskz_loadu_##W)(k, a + i), y = DF__ZX(maskz_loadu_##W)(k, b + i); DF__ZX(mask_storeu_##W)(o + i, k, VEXPR); } \
        } else if (sa) {                                                                        \
            V y = DF__Z(set1_##W)(b[0]);                                                        \
            for (; i + L <= n; i += L) { V x = DF__Z(loadu_##W)(a + i); DF__Z(storeu_##W)(o + i, VEXPR); } \
            if (i < n) { uint32_t k = DF__ZTAIL(n - i);                                         \
                V x = DF__ZX(maskz_loadu_##W)(k, a + i); DF__ZX(mask_storeu_##W)(o + i, k, VEXPR); } \
        } else if (sb) {                                                                        \
            V x = DF__Z(set1_##W)(a[0]);                                                        \
            for (; i + L <= n; i += L) { V y = DF__Z(loadu_##W)(b + i); DF__Z(storeu_##W)(o + i, VEXPR); } \
            if (i < n) { uint32_t k = DF__ZTAIL(n - i);                                         \
                V y = DF__ZX(maskz_loadu_##W)(k, b + i); DF__ZX(mask_storeu_##W)(o + i, k, VEXPR); } \
        } else {                                                                                \
            V x = DF__Z(set1_##W)(a[0]), y = DF__Z(set1_##W)(b[0]);                             \
            T v[L];                                                                             \
            DF__Z(storeu_##W)(v, VEXPR);                                                        \
            for (; i < n; i++) o[i] = v[0];                                                     \
        }                                                                                       \
    }
#define DF__ZROWS(SUF, T, V, W, L)                                                              \
    DF__ZROW(df__zrow_add_##SUF, T, V, W, L, DF__Z(add_##W)(x, y))                              \
    DF__ZROW(df__zrow_sub_##SUF, T, V, W, L, DF__Z(sub_##W)(x, y))                              \
    DF__ZROW(df__zrow_mul_##SUF, T, V, W, L, DF__Z(mul_##W)(x, y))                              \
    DF__ZROW(df__zrow_div_##SUF, T, V, W, L, DF__Z(div_##W)(x, y))                              \
    DF__ZROW(df__zrow_max_##SUF, T, V, W, L,                                                    \
             DF__Z(mask_blend_##W)(DF__Z(cmp_##W##_mask)(x, y, _CMP_GT_OQ) | DF__Z(cmp_##W##_mask)(x, x, _CMP_UNORD_Q), y, x)) \
    DF__ZROW(df__zrow_min_##SUF, T, V, W, L,                                                    \
             DF__Z(mask_blend_##W)(DF__Z(cmp_##W##_mask)(x, y, _CMP_LT_OQ) | DF__Z(cmp_##W##_mask)(x, x, _CMP_UNORD_Q), y, x)) \
    DF__ZROW(df__zrow_sqd_##SUF, T, V, W, L, DF__Z(mul_##W)(DF__Z(sub_##W)(x, y), DF__Z(sub_##W)(x, y))) \
    DF__ZROW(df__zrow_relug_##SUF, T, V, W, L,                                                  \
             DF__Z(maskz_mov_##W)(DF__Z(cmp_##W##_mask)(y, DF__Z(setzero_##W)(), _CMP_GT_OQ), x)) \
    DF__ZROW(df__zrow_tanhg_##SUF, T, V, W, L,                                                  \
             DF__Z(mul_##W)(y, DF__Z(sub_##W)(DF__Z(set1_##W)(1), DF__Z(mul_##W)(x, x))))       \
    DF__ZROW(df__zrow_sigg_##SUF, T, V, W, L,                                                   \
             DF__Z(mul_##W)(DF__Z(mul_##W)(y, x), DF__Z(sub_##W)(DF__Z(set1_##W)(1), x)))
DF__ZROWS(f32, float, DF__ZT(), ps, 16)
DF__ZROWS(f64, double, DF__ZT(d), pd, 8)
#define DF__ZROWSET(SUF) { df__zrow_add_##SUF, df__zrow_sub_##SUF, df__zrow_mul_##SUF, df__zrow_div_##SUF, \
    df__zrow_max_##SUF, df__zrow_min_##SUF, NULL, NULL, NULL, df__zrow_sqd_##SUF, NULL, NULL, NULL, NULL, \
    NULL, NULL, NULL, NULL, df__zrow_relug_##SUF, df__zrow_tanhg_##SUF, df__zrow_sigg_##SUF, NULL, NULL, NULL }
static const df__row_fn df__zrows_f32[DF__B_COUNT] = DF__ZROWSET(f32);
static const df__row_fn df__zrows_f64[DF__B_COUNT] = DF__ZROWSET(f64);

/* v = the input vector, EXPR the result: whole vectors, then the tail under a mask. */
#define DF__ZLOOP(V, W, L, EXPR)                                                                \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + L <= n; i += L) { V v = DF__Z(loadu_##W)(a + i); DF__Z(storeu_##W)(o + i, EXPR); } \
        if (i < n) { uint32_t k = DF__ZTAIL(n - i); V v = DF__ZX(maskz_loadu_##W)(k, a + i); DF__ZX(mask_storeu_##W)(o + i, k, EXPR); } \
        DF__UNUSED(zero); DF__UNUSED(one);                                                      \
        return 1;                                                                               \
    }
/* The AVX2 unary ops on AVX-512 (the same results); 0 if not handled. Abs keeps -0 and a
   negative NaN as they are (v < 0 is false for both), as the plain loop does. */
#define DF__ZUNARY(SUF, T, V, W, L)                                                              \
    DF__TARGET_AVX512 static int df__zunary_##SUF(int code, const T *a, T *o, int64_t n) {        \
        const V zero = DF__Z(setzero_##W)(), one = DF__Z(set1_##W)((T)1);                         \
        switch (code) {                                                                           \
        case DF__U_NEG: DF__ZLOOP(V, W, L, DF__Z(castsi512_##W)(DF__Z(xor_si512)(DF__Z(cast##W##_si512)(v), \
                                                                             DF__Z(cast##W##_si512)(DF__Z(set1_##W)((T)-0.0))))) \
        case DF__U_SQUARE: DF__ZLOOP(V, W, L, DF__Z(mul_##W)(v, v))                                \
        case DF__U_SQRT: DF__ZLOOP(V, W, L, DF__Z(sqrt_##W)(v))                                    \
        case DF__U_RSQRT: DF__ZLOOP(V, W, L, DF__Z(div_##W)(one, DF__Z(sqrt_##W)(v)))               \
        case DF__U_RECIPROCAL: DF__ZLOOP(V, W, L, DF__Z(div_##W)(one, v))                          \
        case DF__U_FLOOR: DF__ZLOOP(V, W, L, DF__ZX(roundscale_##W)(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)) \
        case DF__U_RELU: DF__ZLOOP(V, W, L, DF__Z(maskz_mov_##W)(DF__Z(cmp_##W##_mask)(v, zero, _CMP_NLE_UQ), v)) \
        case DF__U_ABS: DF__ZLOOP(V, W, L, DF__Z(mask_sub_##W)(v, DF__Z(cmp_##W##_mask)(v, zero, _CMP_LT_OQ), zero, v)) \
        default: DF__UNUSED(zero); DF__UNUSED(one); return 0;                                     \
        }                                                                                         \
    }
DF__ZUNARY(f32, float, DF__ZT(), ps, 16)
DF__ZUNARY(f64, double, DF__ZT(d), pd, 8)
#endif

DF_PRIVATE df__row_fn df__binary_row(int code, df_dtype t) {
#ifdef DF__X86
    if ((t == DF_FLOAT || t == DF_DOUBLE) && df__isa() == DF__ISA_AVX512) {
        df__row_fn v = (t == DF_FLOAT ? df__zrows_f32 : df__zrows_f64)[code];
        if (v) return v;
    }
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
    int orank = a->rank;
    const int64_t *odims = a->dims;
    if (a->rank != b->rank || memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims)) {   /* (same shapes: no odometer) */
        if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
            char s1[96], s2[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                      df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
            return;
        }
        orank = bc.rank;
        odims = bc.dims;
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
    df_tensor *o = df__k_reuse_or_alloc(c, 0, a->n == b->n || b->n == 1 ? 0 : 1, ot, orank, odims);
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
/* ---- float32 exp, log, tanh and sigmoid on 16 lanes (AVX-512) ----
   The AVX2 versions' steps (the same constants, roundings and fused operations, blends as
   masked moves), so the same bits as they give, lane by lane; tanh's e^(2|x|) skips what
   cannot change its result (the NaN rule, the split scaling for results near overflow or
   subnormal), sigmoid's the NaN rule (both set NaN lanes at the end). */
#define DF__ZPS(f) DF__Z(f##_ps)
#define DF__ZC(v) DF__Z(set1_ps)(v)
#define DF__ZI2F(x) DF__Z(castsi512_ps)(x)
#define DF__ZF2I(x) DF__Z(castps_si512)(x)
/* p = e^r for |r| <= ln2/2: its Taylor series to r^7. */
#define DF__Z_EXP_SERIES(p, r)                                                                    \
    DF__ZT() p = DF__ZC(1.0f / 5040);                                                             \
    p = DF__ZPS(fmadd)(p, r, DF__ZC(1.0f / 720));                                                 \
    p = DF__ZPS(fmadd)(p, r, DF__ZC(1.0f / 120));                                                 \
    p = DF__ZPS(fmadd)(p, r, DF__ZC(1.0f / 24));                                                  \
    p = DF__ZPS(fmadd)(p, r, DF__ZC(1.0f / 6));                                                   \
    p = DF__ZPS(fmadd)(p, r, DF__ZC(0.5f));                                                       \
    p = DF__ZPS(fmadd)(p, r, DF__ZC(1.0f));                                                       \
    p = DF__ZPS(fmadd)(p, r, DF__ZC(1.0f));
/* e^x without the NaN rule (a NaN lane's result is any number: the callers set it). */
DF__TARGET_AVX512 static inline DF__ZT() df__v16_exp_core(DF__ZT() x) {
    DF__ZT() xc = DF__ZPS(min)(DF__ZPS(max)(x, DF__ZC(-110.0f)), DF__ZC(90.0f));
    DF__ZT() n = DF__ZX(roundscale_ps)(DF__ZPS(mul)(xc, DF__ZC(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    DF__ZT() r = DF__ZPS(fnmadd)(n, DF__ZC(0.693145751953125f), xc);
    r = DF__ZPS(fnmadd)(n, DF__ZC(1.428606820309417232e-6f), r);
    DF__Z_EXP_SERIES(p, r)
    DF__ZT(i) ni = DF__ZX(cvtps_epi32)(n), n1 = DF__ZX(srai_epi32)(ni, 1), n2 = DF__Z(sub_epi32)(ni, n1);
    DF__ZT() s1 = DF__ZI2F(DF__Z(slli_epi32)(DF__Z(add_epi32)(n1, DF__Z(set1_epi32)(127)), 23));
    DF__ZT() s2 = DF__ZI2F(DF__Z(slli_epi32)(DF__Z(add_epi32)(n2, DF__Z(set1_epi32)(127)), 23));
    return DF__ZPS(mul)(DF__ZPS(mul)(p, s1), s2);
}
/* e^t for t in [0, 20] only (tanh's e^(2|x|), past 20 clamped: tanh is then 1 either way): the
   same steps as df__v16_exp_core, whose two scalings by 2^n1 and 2^n2 are exact here, so one
   by 2^n gives the same bits. */
DF__TARGET_AVX512 static inline DF__ZT() df__v16_exp_0_20(DF__ZT() t) {
    DF__ZT() xc = DF__ZPS(min)(t, DF__ZC(20.0f));
    DF__ZT() n = DF__ZX(roundscale_ps)(DF__ZPS(mul)(xc, DF__ZC(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    DF__ZT() r = DF__ZPS(fnmadd)(n, DF__ZC(0.693145751953125f), xc);
    r = DF__ZPS(fnmadd)(n, DF__ZC(1.428606820309417232e-6f), r);
    DF__Z_EXP_SERIES(p, r)
    DF__ZT() s = DF__ZI2F(DF__Z(slli_epi32)(DF__Z(add_epi32)(DF__ZX(cvtps_epi32)(n), DF__Z(set1_epi32)(127)), 23));
    return DF__ZPS(mul)(p, s);
}
DF__TARGET_AVX512 DF_PRIVATE inline DF__ZT() df__v16_exp(DF__ZT() x) {
    return DF__ZPS(mask_mov)(df__v16_exp_core(x), DF__Z(cmp_ps_mask)(x, x, _CMP_UNORD_Q), x);
}
DF__TARGET_AVX512 static inline DF__ZT() df__v16_log(DF__ZT() x) {
    const DF__ZT() one = DF__ZC(1.0f);
    uint32_t tiny = DF__Z(cmp_ps_mask)(x, DF__ZC(1.17549435e-38f), _CMP_LT_OQ);     /* subnormals: scaled by 2^23 first */
    DF__ZT() xs = DF__ZPS(mask_mov)(x, tiny, DF__ZPS(mul)(x, DF__ZC(8388608.0f)));
    DF__ZT(i) bits = DF__ZF2I(xs);
    DF__ZT(i) e = DF__Z(sub_epi32)(DF__Z(srli_epi32)(bits, 23), DF__Z(set1_epi32)(127));
    DF__ZT() m = DF__ZI2F(DF__Z(or_si512)(DF__Z(and_si512)(bits, DF__Z(set1_epi32)(0x007fffff)), DF__Z(set1_epi32)(0x3f800000)));
    uint32_t big = DF__Z(cmp_ps_mask)(m, DF__ZC(1.41421356f), _CMP_GT_OQ);
    m = DF__ZPS(mask_mov)(m, big, DF__ZPS(mul)(m, DF__ZC(0.5f)));
    DF__ZT() ef = DF__ZPS(mask_add)(DF__ZX(cvtepi32_ps)(e), big, DF__ZX(cvtepi32_ps)(e), one);
    ef = DF__ZPS(mask_sub)(ef, tiny, ef, DF__ZC(23.0f));
    DF__ZT() f = DF__ZPS(sub)(m, one), s = DF__ZPS(div)(f, DF__ZPS(add)(f, DF__ZC(2.0f))), s2 = DF__ZPS(mul)(s, s);
    DF__ZT() R = DF__ZC(2.0f / 9);
    R = DF__ZPS(fmadd)(R, s2, DF__ZC(2.0f / 7));
    R = DF__ZPS(fmadd)(R, s2, DF__ZC(2.0f / 5));
    R = DF__ZPS(fmadd)(R, s2, DF__ZC(2.0f / 3));
    R = DF__ZPS(mul)(R, s2);
    DF__ZT() hf = DF__ZPS(mul)(DF__ZC(0.5f), DF__ZPS(mul)(f, f));
    DF__ZT() lm = DF__ZPS(sub)(f, DF__ZPS(fnmadd)(s, DF__ZPS(add)(hf, R), hf));
    DF__ZT() y = DF__ZPS(fmadd)(ef, DF__ZC(0.693145751953125f), DF__ZPS(fmadd)(ef, DF__ZC(1.428606820309417232e-6f), lm));
    const DF__ZT() zero = DF__Z(setzero_ps)(), inf = DF__ZC(INFINITY);
    y = DF__ZPS(mask_mov)(y, DF__Z(cmp_ps_mask)(x, zero, _CMP_EQ_OQ), DF__ZC(-INFINITY));
    y = DF__ZPS(mask_mov)(y, DF__Z(cmp_ps_mask)(x, inf, _CMP_EQ_OQ), inf);
    y = DF__ZPS(mask_mov)(y, DF__Z(cmp_ps_mask)(x, zero, _CMP_LT_OQ), DF__ZC(NAN));
    return DF__ZPS(mask_mov)(y, DF__Z(cmp_ps_mask)(x, x, _CMP_UNORD_Q), x);
}
DF__TARGET_AVX512 static inline DF__ZT() df__v16_tanh(DF__ZT() x) {
    const DF__ZT(i) sign = DF__Z(set1_epi32)((int32_t)0x80000000u);
    const DF__ZT() one = DF__ZC(1.0f);
    DF__ZT() ax = DF__ZI2F(DF__Z(andnot_si512)(sign, DF__ZF2I(x))), x2 = DF__ZPS(mul)(x, x);
    /* lanes of the series (|x| < 0.55; a NaN lane is in neither set): a vector wholly in one set
       skips the other's steps (the same bits: each lane takes the value it would take anyway) */
    uint32_t in_series = DF__Z(cmp_ps_mask)(ax, DF__ZC(0.55f), _CMP_LT_OQ);
    DF__ZT() small = x;
    if (in_series) {
        DF__ZT() p = DF__ZC(-0.00145583438705131827f);
        p = DF__ZPS(fmadd)(p, x2, DF__ZC(0.00359212803657248102f));
        p = DF__ZPS(fmadd)(p, x2, DF__ZC(-0.00886323552990219656f));
        p = DF__ZPS(fmadd)(p, x2, DF__ZC(0.0218694885361552028f));
        p = DF__ZPS(fmadd)(p, x2, DF__ZC(-0.0539682539682539683f));
        p = DF__ZPS(fmadd)(p, x2, DF__ZC(0.133333333333333333f));
        p = DF__ZPS(fmadd)(p, x2, DF__ZC(-0.333333333333333333f));
        small = DF__ZPS(fmadd)(DF__ZPS(mul)(p, x2), x, x);
        if (in_series == 0xFFFFu) return small;
    }
    DF__ZT() e = df__v16_exp_0_20(DF__ZPS(add)(ax, ax));
    DF__ZT() large = DF__ZPS(sub)(one, DF__ZPS(div)(DF__ZC(2.0f), DF__ZPS(add)(e, one)));
    large = DF__ZI2F(DF__Z(or_si512)(DF__ZF2I(large), DF__Z(and_si512)(DF__ZF2I(x), sign)));
    DF__ZT() y = DF__ZPS(mask_mov)(large, in_series, small);
    return DF__ZPS(mask_mov)(y, DF__Z(cmp_ps_mask)(x, x, _CMP_UNORD_Q), x);
}
DF__TARGET_AVX512 static inline DF__ZT() df__v16_sigmoid(DF__ZT() x) {
    const DF__ZT() one = DF__ZC(1.0f);
    uint32_t neg = DF__Z(cmp_ps_mask)(x, DF__Z(setzero_ps)(), _CMP_LT_OQ);        /* e^-|x| never overflows */
    DF__ZT() e = df__v16_exp_core(DF__ZI2F(DF__Z(or_si512)(DF__ZF2I(x), DF__Z(set1_epi32)((int32_t)0x80000000u))));
    DF__ZT() y = DF__ZPS(div)(DF__ZPS(mask_mov)(one, neg, e), DF__ZPS(add)(one, e));
    return DF__ZPS(mask_mov)(y, DF__Z(cmp_ps_mask)(x, x, _CMP_UNORD_Q), x);
}
/* o[i] = f(a[i]) for Exp, Log, Tanh, Sigmoid (float32) on AVX-512; 0 for other ops. */
#define DF__ZTRANS(F)                                                                             \
    {                                                                                             \
        for (; i + 16 <= n; i += 16) DF__Z(storeu_ps)(o + i, F(DF__Z(loadu_ps)(a + i)));          \
        if (i < n) { uint32_t k = DF__ZTAIL(n - i); DF__ZX(mask_storeu_ps)(o + i, k, F(DF__ZX(maskz_loadu_ps)(k, a + i))); } \
        return 1;                                                                                 \
    }
DF__TARGET_AVX512 static int df__ztrans_f32(int code, const float *a, float *o, int64_t n) {
    int64_t i = 0;
    switch (code) {
    case DF__U_EXP: DF__ZTRANS(df__v16_exp)
    case DF__U_LOG: DF__ZTRANS(df__v16_log)
    case DF__U_TANH: DF__ZTRANS(df__v16_tanh)
    case DF__U_SIGMOID: DF__ZTRANS(df__v16_sigmoid)
    default: return 0;
    }
}
#endif

#ifdef DF__X86
typedef struct df__vtrans_job { int code; const float *a; float *o; } df__vtrans_job;
static void df__vtrans_share(void *arg, int64_t lo, int64_t hi) {
    const df__vtrans_job *j = (const df__vtrans_job *)arg;
    if (df__isa() == DF__ISA_AVX512) df__ztrans_f32(j->code, j->a + lo, j->o + lo, hi - lo);
    else df__vtrans_f32(j->code, j->a + lo, j->o + lo, hi - lo);
}
/* The memory-bound vector ops (Neg, Relu, Abs...) on a piece, float32 or float64. */
typedef struct df__vunary_job { int code, dbl; const char *a; char *o; } df__vunary_job;
static void df__vunary_share(void *arg, int64_t lo, int64_t hi) {
    const df__vunary_job *j = (const df__vunary_job *)arg;
    int z = df__isa() == DF__ISA_AVX512;
    if (j->dbl) (z ? df__zunary_f64 : df__vunary_f64)(j->code, (const double *)j->a + lo, (double *)j->o + lo, hi - lo);
    else (z ? df__zunary_f32 : df__vunary_f32)(j->code, (const float *)j->a + lo, (float *)j->o + lo, hi - lo);
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
    if ((x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE) && df__isa() == DF__ISA_AVX512 &&
        (x->dtype == DF_FLOAT ? df__zunary_f32(code, (const float *)x->data, (float *)y->data, n) ||
                                df__ztrans_f32(code, (const float *)x->data, (float *)y->data, n)
                              : df__zunary_f64(code, (const double *)x->data, (double *)y->data, n)))
        return;
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
