/* ==========================================================================================
   src/kernels/conv.c: CPU kernels: convolutions and pooling                           >>conv
   Conv2D (NHWC) and its two gradients, MaxPool/AvgPool and theirs.
   Geometry as TensorFlow: VALID gives ceil((in - (k-1)*d) / s) outputs, SAME ceil(in / s)
   with the padding split before/after (the extra one after), EXPLICIT (convolutions only) the
   explicit_paddings' before/after per dimension: only the leading padding (ph, pw) and the
   output size matter to the kernels below.
   Convolutions are direct: no patch matrix. A micro-kernel keeps MR output pixels x NR
   output
   channels in registers and reads each pixel's taps where they lie in a zero-padded copy of
   the
   input (pixel r starts at arow[r]; a tap is a run of tk contiguous values at arow[r] +
   toff[t];
   with no dilation along x a whole filter row is one run). The filter is packed once into
   NR-wide slivers in the same order. The input gradient is the same computation on the
   padded
   dY, once per stride phase (the output pixels y = ry + sh*j, x = rx + sw*i) with the taps
   that
   phase reaches and the filter transposed. The filter gradient reduces over runs of pixels
   (the
   output rows) instead, with the filter's rows as the tile's rows. A 1x1 stride-1 forward
   convolution is one GEMM over the batch.
   ========================================================================================== */
static int df__list4(const df_node *n, const char *attr, int64_t def, int64_t *v) {
    const df__attr *a = df__node_attr(n, attr);
    v[0] = v[1] = v[2] = v[3] = def;
    if (!a || a->kind != DF__A_INT_LIST || a->u.ints.n == 0) return 1;
    if (a->u.ints.n != 4) return 0;
    for (int i = 0; i < 4; i++) v[i] = a->u.ints.v[i];
    return 1;
}
/* Output size and leading padding of one spatial dimension; 0 if impossible. same: 1 SAME,
   0 VALID, -1 EXPLICIT with the given padding before (*pad on entry) and after. */
static int df__conv_dim(int64_t in, int64_t k, int64_t s, int64_t d, int same, int64_t after, int64_t *out, int64_t *pad) {
    int64_t ek = (k - 1) * d + 1;
    if (k < 1 || s < 1 || d < 1 || in < 0) return 0;
    if (same < 0) {
        int64_t span = in + *pad + after;
        *out = span < ek ? 0 : (span - ek) / s + 1;
    } else if (same) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + ek - in;
        *pad = total > 0 ? total / 2 : 0;
    } else {
        if (in < ek) { *out = 0; *pad = 0; return in >= 0; }
        *out = (in - ek) / s + 1;
        *pad = 0;
    }
    return 1;
}
/* Reads strides, dilations, padding and data_format; with the window (kh, kw) fills g's
   output size and padding. in: [n,h,w,c] (entries may be -1 for shape inference). */
DF_PRIVATE df_code df__conv_setup(const df_node *node, const int64_t *in, int64_t kh, int64_t kw, int pool,
                                  df__conv_geo *g, df_status *st) {
    int64_t s[4], d[4];
    if (!df__list4(node, "strides", 1, s) || !df__list4(node, "dilations", 1, d))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "strides and dilations must have 4 entries");
    const char *fmt = df__attr_s(node, "data_format"), *pad = df__attr_s(node, "padding");
    if (*fmt && strcmp(fmt, "NHWC"))
        return df__fail(st, node, DF_UNIMPLEMENTED, "data_format %s is not supported on the CPU (use NHWC)", fmt);
    if (s[0] != 1 || s[3] != 1 || d[0] != 1 || d[3] != 1)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Strides and dilations in the batch and depth dimensions must be 1");
    if (s[1] < 1 || s[2] < 1 || d[1] < 1 || d[2] < 1 || s[1] > (1 << 20) || s[2] > (1 << 20) || d[1] > (1 << 20) || d[2] > (1 << 20))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Strides and dilations must be positive");
    if (pool && (d[1] != 1 || d[2] != 1)) return df__fail(st, node, DF_INVALID_ARGUMENT, "Pooling has no dilations");
    int same = !strcmp(pad, "SAME") ? 1 : !strcmp(pad, "EXPLICIT") && !pool ? -1 : 0;
    if (!same && strcmp(pad, "VALID"))
        return df__fail(st, node, DF_INVALID_ARGUMENT, pool ? "padding must be SAME or VALID, got '%s'"
                                                                         : "padding must be SAME, VALID or EXPLICIT, got '%s'", pad);
    /* EXPLICIT: explicit_paddings holds (before, after) per dimension, TF's checks and wording */
    const df__attr *ea = df__node_attr(node, "explicit_paddings");
    int n_ep = ea && ea->kind == DF__A_INT_LIST ? ea->u.ints.n : 0;
    int64_t ep[8] = {0};
    if (same >= 0 && n_ep)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT");
    if (same < 0) {
        if (n_ep != 8)
            return df__fail(st, node, DF_INVALID_ARGUMENT, "explicit_paddings attribute must contain 8 values, but got: %d", n_ep);
        for (int i = 0; i < 8; i++) {
            ep[i] = ea->u.ints.v[i];
            if (ep[i] < 0 || ep[i] > (1 << 20))
                return df__fail(st, node, DF_INVALID_ARGUMENT, "All elements of explicit_paddings must be nonnegative");
        }
        if (ep[0] || ep[1] || ep[6] || ep[7])
            return df__fail(st, node, DF_INVALID_ARGUMENT, "Nonzero explicit padding in the batch or depth dimensions is not supported");
    }
    memset(g, 0, sizeof *g);
    g->n = in[0]; g->h = in[1]; g->w = in[2]; g->c = in[3]; g->kh = kh; g->kw = kw;
    g->sh = s[1]; g->sw = s[2]; g->dh = d[1]; g->dw = d[2];
    g->oh = g->ow = -1;
    if (kh < 1 || kw < 1 || kh > (1 << 20) || kw > (1 << 20))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "The window must be at least 1x1, got %lldx%lld", (long long)kh, (long long)kw);
    g->ph = ep[2]; g->pw = ep[4];
    if (g->h >= 0 && !df__conv_dim(g->h, kh, g->sh, g->dh, same, ep[3], &g->oh, &g->ph))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Bad convolution geometry (height)");
    if (g->w >= 0 && !df__conv_dim(g->w, kw, g->sw, g->dw, same, ep[5], &g->ow, &g->pw))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Bad convolution geometry (width)");
    return DF_OK;
}
static int df__rank4(const df_tensor *t) { return t->rank == 4; }

/* ---- direct convolution micro-kernels ----
   cukr: rows[r] (= or +=) sum over taps t, p < tk of ar[r][toff[t] + p] * b[k][0..NR), with b the
   packed filter sliver advancing NR per k (the filter gradient uses the GEMM's kernel). */
#define DF__CONV_UKR_PORTABLE(T, MR, NR)                                                          \
    static void df__cukr_##T##_portable(int ntap, const int64_t *toff, int64_t tk, const T *const *ar, \
                                        const T *b, T *const *cr, int acc) {                      \
        T t[MR][NR];                                                                              \
        memset(t, 0, sizeof t);                                                                   \
        for (int tp = 0; tp < ntap; tp++)                                                         \
            for (int64_t p = 0; p < tk; p++, b += NR)                                             \
                for (int r = 0; r < MR; r++) {                                                    \
                    T av = ar[r][toff[tp] + p];                                                   \
                    for (int j = 0; j < NR; j++) t[r][j] += av * b[j];                            \
                }                                                                                 \
        for (int r = 0; r < MR; r++)                                                              \
            for (int j = 0; j < NR; j++) cr[r][j] = acc ? cr[r][j] + t[r][j] : t[r][j];           \
    }                                                                                             \
    static void df__wukr_##T##_portable(int64_t kc, const T *const *pix, int64_t off, const T *b, T *c, \
                                        int64_t ldc, int acc) {                                   \
        T t[MR][NR];                                                                              \
        memset(t, 0, sizeof t);                                                                   \
        for (int64_t p = 0; p < kc; p++, b += NR)                                                 \
            for (int r = 0; r < MR; r++) {                                                        \
                T av = pix[p][off + r];                                                           \
                for (int j = 0; j < NR; j++) t[r][j] += av * b[j];                                \
            }                                                                                     \
        for (int r = 0; r < MR; r++)                                                              \
            for (int j = 0; j < NR; j++) c[r * ldc + j] = acc ? c[r * ldc + j] + t[r][j] : t[r][j]; \
    }
DF__CONV_UKR_PORTABLE(float, 4, 8)
DF__CONV_UKR_PORTABLE(double, 4, 4)

#ifdef DF__X86
/* AVX2+FMA, 6 pixels (or filter rows) x 2 vectors as in the GEMM's kernel. */
#define DF__CONV_UKR_AVX2(T, V, W, L, BC)                                                         \
    DF__TARGET_AVX2 static void df__cukr_##T##_avx2(int ntap, const int64_t *toff, int64_t tk, const T *const *ar, \
                                                    const T *b, T *const *cr, int acc) {          \
        DF__TILE_ZERO(V, W)                                                                       \
        for (int tp = 0; tp < ntap; tp++) {                                                       \
            const int64_t o = toff[tp];                                                           \
            const T *a0 = ar[0] + o, *a1 = ar[1] + o, *a2 = ar[2] + o, *a3 = ar[3] + o, *a4 = ar[4] + o, *a5 = ar[5] + o; \
            _Pragma("GCC unroll 4")                                                               \
            for (int64_t p = 0; p < tk; p++, b += 2 * L) {                                        \
                V b0 = _mm256_loadu_##W(b), b1 = _mm256_loadu_##W(b + L);                             \
                DF__TILE_STEP(V, W, BC, a0 + p, a1 + p, a2 + p, a3 + p, a4 + p, a5 + p)           \
            }                                                                                     \
        }                                                                                         \
        DF__TILE_STORE(T, cr[0], cr[1], cr[2], cr[3], cr[4], cr[5])                               \
    }                                                                                             \
    DF__TARGET_AVX2 static void df__wukr_##T##_avx2(int64_t kc, const T *const *pix, int64_t off, const T *b, T *c, \
                                                    int64_t ldc, int acc) {                       \
        DF__TILE_ZERO(V, W)                                                                       \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, b += 2 * L) {                                            \
            const T *a = pix[p] + off;                                                            \
            V b0 = _mm256_loadu_##W(b), b1 = _mm256_loadu_##W(b + L);                             \
            DF__TILE_STEP(V, W, BC, a, a + 1, a + 2, a + 3, a + 4, a + 5)                         \
        }                                                                                         \
        DF__TILE_STORE(T, c, c + ldc, c + 2 * ldc, c + 3 * ldc, c + 4 * ldc, c + 5 * ldc)         \
    }
DF__CONV_UKR_AVX2(float, __m256, ps, 8, _mm256_broadcast_ss)
DF__CONV_UKR_AVX2(double, __m256d, pd, 4, _mm256_broadcast_sd)
/* AVX-512: the same 6 x 2-vector tile with vectors twice as wide (float 6x32, double 6x16), the
   filter packed in slivers of that width (the GEMM's AVX-512 tile sizes). */
#define DF__Z_TILE_ZERO(V, W)                                                                     \
    V c00 = DF__Z(setzero_##W)(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;          \
    V c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#define DF__Z_TILE_STEP(V, W, P0, P1, P2, P3, P4, P5)                                             \
    {                                                                                             \
        V av;                                                                                     \
        av = DF__Z(set1_##W)(*(P0)); c00 = DF__Z(fmadd_##W)(av, b0, c00); c01 = DF__Z(fmadd_##W)(av, b1, c01); \
        av = DF__Z(set1_##W)(*(P1)); c10 = DF__Z(fmadd_##W)(av, b0, c10); c11 = DF__Z(fmadd_##W)(av, b1, c11); \
        av = DF__Z(set1_##W)(*(P2)); c20 = DF__Z(fmadd_##W)(av, b0, c20); c21 = DF__Z(fmadd_##W)(av, b1, c21); \
        av = DF__Z(set1_##W)(*(P3)); c30 = DF__Z(fmadd_##W)(av, b0, c30); c31 = DF__Z(fmadd_##W)(av, b1, c31); \
        av = DF__Z(set1_##W)(*(P4)); c40 = DF__Z(fmadd_##W)(av, b0, c40); c41 = DF__Z(fmadd_##W)(av, b1, c41); \
        av = DF__Z(set1_##W)(*(P5)); c50 = DF__Z(fmadd_##W)(av, b0, c50); c51 = DF__Z(fmadd_##W)(av, b1, c51); \
    }
#define DF__Z_TILE_STORE(T, R0, R1, R2, R3, R4, R5)                                               \
    df__ukr512_store_##T(R0, c00, c01, acc); df__ukr512_store_##T(R1, c10, c11, acc);             \
    df__ukr512_store_##T(R2, c20, c21, acc); df__ukr512_store_##T(R3, c30, c31, acc);             \
    df__ukr512_store_##T(R4, c40, c41, acc); df__ukr512_store_##T(R5, c50, c51, acc);
#define DF__CONV_UKR_AVX512(T, V, W, L)                                                           \
    DF__TARGET_AVX512 static void df__cukr_##T##_avx512(int ntap, const int64_t *toff, int64_t tk, const T *const *ar, \
                                                        const T *b, T *const *cr, int acc) {      \
        DF__Z_TILE_ZERO(V, W)                                                                     \
        for (int tp = 0; tp < ntap; tp++) {                                                       \
            const int64_t o = toff[tp];                                                           \
            const T *a0 = ar[0] + o, *a1 = ar[1] + o, *a2 = ar[2] + o, *a3 = ar[3] + o, *a4 = ar[4] + o, *a5 = ar[5] + o; \
            _Pragma("GCC unroll 4")                                                               \
            for (int64_t p = 0; p < tk; p++, b += 2 * L) {                                        \
                V b0 = DF__Z(loadu_##W)(b), b1 = DF__Z(loadu_##W)(b + L);                         \
                DF__Z_TILE_STEP(V, W, a0 + p, a1 + p, a2 + p, a3 + p, a4 + p, a5 + p)             \
            }                                                                                     \
        }                                                                                         \
        DF__Z_TILE_STORE(T, cr[0], cr[1], cr[2], cr[3], cr[4], cr[5])                             \
    }                                                                                             \
    DF__TARGET_AVX512 static void df__wukr_##T##_avx512(int64_t kc, const T *const *pix, int64_t off, const T *b, T *c, \
                                                        int64_t ldc, int acc) {                   \
        DF__Z_TILE_ZERO(V, W)                                                                     \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, b += 2 * L) {                                            \
            const T *a = pix[p] + off;                                                            \
            V b0 = DF__Z(loadu_##W)(b), b1 = DF__Z(loadu_##W)(b + L);                             \
            DF__Z_TILE_STEP(V, W, a, a + 1, a + 2, a + 3, a + 4, a + 5)                           \
        }                                                                                         \
        DF__Z_TILE_STORE(T, c, c + ldc, c + 2 * ldc, c + 3 * ldc, c + 4 * ldc, c + 5 * ldc)       \
    }
DF__CONV_UKR_AVX512(float, DF__ZT(), ps, 16)
DF__CONV_UKR_AVX512(double, DF__ZT(d), pd, 8)
#define DF__CONV_PICK_float                                                                       \
    if (isa == DF__ISA_AVX2) { cukr = df__cukr_float_avx2; ukr = df__ukr_float_avx2; wukr = df__wukr_float_avx2; } \
    if (isa == DF__ISA_AVX512) { cukr = df__cukr_float_avx512; ukr = df__ukr_float_avx512; wukr = df__wukr_float_avx512; }
#define DF__CONV_PICK_double                                                                      \
    if (isa == DF__ISA_AVX2) { cukr = df__cukr_double_avx2; ukr = df__ukr_double_avx2; wukr = df__wukr_double_avx2; } \
    if (isa == DF__ISA_AVX512) { cukr = df__cukr_double_avx512; ukr = df__ukr_double_avx512; wukr = df__wukr_double_avx512; }
#else
#define DF__CONV_PICK_float
#define DF__CONV_PICK_double
#endif

/* One gather pass: out pixel q (b, j, i) = a + b*a_img + j*a_row + i*a_col (bytes), written at
   c + b*c_img + j*c_row + i*c_col; nout channels from the packed filter bp ([block][K][NR]).
   Taps are split into k-blocks [kb[i], kb[i+1]) so one sliver of the filter stays in L1 while
   a chunk of pixels passes under it. A pass with no taps writes zeros. */
typedef struct df__conv_pass {
    int isa, ntap, nkb, failed;
    int64_t npix, per_img, cols, chunk, tk, nout;
    const char *a;
    char *c;
    int64_t a_img, a_row, a_col, c_img, c_row, c_col;
    const int64_t *toff;
    const int *kb;
    const void *bp;
} df__conv_pass;
/* The filter gradient: dW rows (tap t, r < tk) x nout summed over the npix output pixels, a
   GEMM whose k runs over pixels: per chunk of pixels, dY is packed into NR-wide slivers and each
   m-tile's input values (MR filter rows: MR consecutive values at pixel base + toff[t] + m0)
   into an MR-tall one. Pixel q (b, oy, ox) has its input at a + b*a_img + oy*a_row + ox*a_col
   (elements) and its dY row at dy + q*nout. Threads take ranges of pixels; each sums into a
   slot of its own ([tiles*MR][whole slivers]), and the slots are added up afterwards. */
typedef struct df__wgrad_pass {
    int isa, failed, next_slot;
    int64_t npix, per_img, cols, a_img, a_row, a_col, tk, per_tap, tiles, nout, kc;
    const void *a, *dy;
    const int64_t *toff;
    void *slots, *dw;
} df__wgrad_pass;
/* The input gradient for few input channels (an RGB stem), where a phase's tile would be mostly
   empty columns: each dY pixel times the filter transposed gives its whole patch of dX (kh*kw*c
   values, the tile's columns), added where the patch lies in a padded dX; each share of pixels
   adds into its own copy (slot), summed afterwards. */
typedef struct df__conv_scatter {
    int isa, failed, next_slot;
    int64_t npix, per_img, cols, oc, kh, kw, c, Hb, Wb, sh, sw, dh, dw, chunk;
    const void *dy, *bp;
    void *acc;                      /* slots of [n][Hb][Wb][c] */
} df__conv_scatter;
/* The kernels a pass may call: the plain ones, replaced by AVX2 or AVX-512 ones where the isa
   says so. */
#define DF__CONV_KERNELS(T, ISA)                                                                  \
    void (*cukr)(int, const int64_t *, int64_t, const T *const *, const T *, T *const *, int) = df__cukr_##T##_portable; \
    void (*ukr)(int64_t, const T *, int64_t, int64_t, const T *, int64_t, T *, int64_t, int) = df__ukr_##T##_portable; \
    void (*wukr)(int64_t, const T *const *, int64_t, const T *, T *, int64_t, int) = df__wukr_##T##_portable; \
    { const int isa = (ISA); DF__CONV_PICK_##T DF__UNUSED(isa); }                                  \
    DF__UNUSED(cukr); DF__UNUSED(ukr); DF__UNUSED(wukr);
#define DF__CONV_PASSES(T)                                                                        \
    static void df__conv_pass_##T(void *arg, int64_t lo, int64_t hi) {                           \
        df__conv_pass *P = (df__conv_pass *)arg;                                                  \
        const df__gemm_cfg *g = &df__gemm_cfgs[sizeof(T) == 8][P->isa];                          \
        const int mr = g->mr, nr = g->nr;                                                         \
        DF__CONV_KERNELS(T, P->isa)                                                               \
        const int64_t chunk = P->chunk, nblk = (P->nout + nr - 1) / nr, K = (int64_t)P->ntap * P->tk; \
        char *mem = (char *)DF_MALLOC((size_t)chunk * 2 * sizeof(void *) + (size_t)(chunk * nr) * sizeof(T) + 64); \
        if (!mem) { __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED); return; }                  \
        const T **arow = (const T **)(void *)mem;                                                 \
        T **crow = (T **)(void *)(mem + (size_t)chunk * sizeof(void *));                          \
        T *tmp = (T *)(void *)(((uintptr_t)(mem + (size_t)chunk * 2 * sizeof(void *)) + 63) & ~(uintptr_t)63); \
        for (int64_t q0 = lo; q0 < hi; q0 += chunk) {                                             \
            int64_t cnt = DF__MIN(chunk, hi - q0), cntp = (cnt + mr - 1) / mr * mr;               \
            for (int64_t i = 0; i < cnt; i++) {                                                   \
                int64_t q = q0 + i, b = q / P->per_img, rem = q - b * P->per_img, j = rem / P->cols, x = rem - j * P->cols; \
                arow[i] = (const T *)(const void *)(P->a + b * P->a_img + j * P->a_row + x * P->a_col); \
                crow[i] = (T *)(void *)(P->c + b * P->c_img + j * P->c_row + x * P->c_col);       \
            }                                                                                     \
            if (P->ntap == 0) {                                                                   \
                for (int64_t i = 0; i < cnt; i++) memset(crow[i], 0, (size_t)P->nout * sizeof(T)); \
                continue;                                                                         \
            }                                                                                     \
            for (int64_t i = cnt; i < cntp; i++) arow[i] = arow[0];                               \
            for (int64_t jb = 0; jb < nblk; jb++) {                                               \
                int64_t j0 = jb * nr, cols = DF__MIN(nr, P->nout - j0);                           \
                const T *sliver = (const T *)P->bp + (size_t)(jb * K * nr);                       \
                for (int kb = 0; kb < P->nkb; kb++) {                                             \
                    int t0 = P->kb[kb], t1 = P->kb[kb + 1];                                       \
                    const T *bk = sliver + (size_t)((int64_t)t0 * P->tk * nr);                    \
                    for (int64_t i = 0; i < cntp; i += mr) {                                      \
                        T *cr[8];                                                                 \
                        for (int r = 0; r < mr; r++) {                                            \
                            int64_t q = i + r;                                                    \
                            cr[r] = cols == nr && q < cnt ? crow[q] + j0 : tmp + q * nr;          \
                        }                                                                         \
                        cukr(t1 - t0, P->toff + t0, P->tk, arow + i, bk, cr, kb > 0);             \
                    }                                                                             \
                }                                                                                 \
                if (cols < nr)                                                                    \
                    for (int64_t i = 0; i < cnt; i++) memcpy(crow[i] + j0, tmp + i * nr, (size_t)cols * sizeof(T)); \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(mem);                                                                             \
    }                                                                                             \
    static void df__wgrad_pass_##T(void *arg, int64_t lo, int64_t hi) {                          \
        df__wgrad_pass *P = (df__wgrad_pass *)arg;                                                \
        const df__gemm_cfg *g = &df__gemm_cfgs[sizeof(T) == 8][P->isa];                          \
        const int mr = g->mr, nr = g->nr;                                                         \
        DF__CONV_KERNELS(T, P->isa)                                                               \
        const int64_t nblk = (P->nout + nr - 1) / nr, ldt = nblk * nr, kc = P->kc;               \
        size_t b_n = (size_t)(ldt * kc), a_n = (size_t)(mr * kc);                                 \
        char *mem = (char *)DF_MALLOC((b_n + a_n) * sizeof(T) + (size_t)kc * sizeof(void *) + 128); \
        if (!mem) { __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED); return; }                  \
        int slot = __atomic_fetch_add(&P->next_slot, 1, __ATOMIC_RELAXED);                        \
        T *tmp = (T *)P->slots + (size_t)slot * (size_t)(P->tiles * mr * ldt);                    \
        T *bpk = (T *)(void *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);                           \
        T *apk = (T *)(void *)(((uintptr_t)(bpk + b_n) + 63) & ~(uintptr_t)63);                   \
        const T **pix = (const T **)(void *)(apk + a_n);                                          \
        const T *a = (const T *)P->a, *dy = (const T *)P->dy;                                     \
        for (int64_t q0 = lo; q0 < hi; q0 += kc) {                                                \
            int64_t cnt = DF__MIN(kc, hi - q0);                                                   \
            for (int64_t p = 0; p < cnt; p++) {                                                   \
                int64_t q = q0 + p, b = q / P->per_img, rem = q - b * P->per_img, oy = rem / P->cols; \
                pix[p] = a + b * P->a_img + oy * P->a_row + (rem - oy * P->cols) * P->a_col;      \
                const T *d = dy + q * P->nout;                                                    \
                for (int64_t jb = 0; jb < nblk; jb++) {                                           \
                    T *o = bpk + (size_t)((jb * kc + p) * nr);                                    \
                    int64_t j0 = jb * nr, cols = DF__MIN(nr, P->nout - j0);                       \
                    memcpy(o, d + j0, (size_t)cols * sizeof(T));                                  \
                    for (int64_t j = cols; j < nr; j++) o[j] = 0;                                 \
                }                                                                                 \
            }                                                                                     \
            for (int64_t mt = 0; mt < P->tiles; mt++) {                                           \
                int64_t tap = mt / P->per_tap, m0 = (mt - tap * P->per_tap) * mr, rows = DF__MIN(mr, P->tk - m0); \
                int64_t off = P->toff[tap] + m0;                                                  \
                T *trow = tmp + (size_t)(mt * mr * ldt);                                          \
                if (rows == mr) {   /* a whole tile reads the input where it lies */              \
                    for (int64_t jb = 0; jb < nblk; jb++)                                         \
                        wukr(cnt, pix, off, bpk + (size_t)(jb * kc * nr), trow + jb * nr, ldt, q0 > lo); \
                    continue;                                                                     \
                }                                                                                 \
                for (int64_t p = 0; p < cnt; p++) { /* a tap's last rows: packed, zero-padded */  \
                    const T *src = pix[p] + off;                                                  \
                    T *o = apk + p * mr;                                                          \
                    int64_t r = 0;                                                                \
                    for (; r < rows; r++) o[r] = src[r];                                          \
                    for (; r < mr; r++) o[r] = 0;                                                 \
                }                                                                                 \
                for (int64_t jb = 0; jb < nblk; jb++)                                             \
                    ukr(cnt, apk, 1, mr, bpk + (size_t)(jb * kc * nr), nr, trow + jb * nr, ldt, q0 > lo); \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(mem);                                                                             \
    }                                                                                             \
    /* The slots' sum, the filter rows of each tile (not its padding), into dW. */                \
    static void df__wgrad_finish_##T(const df__wgrad_pass *P, int mr, int nr) {                   \
        const int64_t ldt = (P->nout + nr - 1) / nr * nr, per_slot = P->tiles * mr * ldt;         \
        T *s0 = (T *)P->slots;                                                                    \
        for (int k = 1; k < P->next_slot; k++) {                                                  \
            const T *sk = s0 + (size_t)(k * per_slot);                                            \
            for (int64_t i = 0; i < per_slot; i++) s0[i] += sk[i];                                \
        }                                                                                         \
        for (int64_t mt = 0; mt < P->tiles; mt++) {                                               \
            int64_t tap = mt / P->per_tap, m0 = (mt - tap * P->per_tap) * mr, rows = DF__MIN(mr, P->tk - m0); \
            for (int64_t r = 0; r < rows; r++)                                                    \
                memcpy((T *)P->dw + (size_t)((tap * P->tk + m0 + r) * P->nout), s0 + (size_t)((mt * mr + r) * ldt), \
                       (size_t)P->nout * sizeof(T));                                              \
        }                                                                                         \
    }                                                                                             \
    static void df__conv_scatter_##T(void *arg, int64_t lo, int64_t hi) {                        \
        df__conv_scatter *P = (df__conv_scatter *)arg;                                            \
        const df__gemm_cfg *g = &df__gemm_cfgs[sizeof(T) == 8][P->isa];                          \
        const int mr = g->mr, nr = g->nr;                                                         \
        DF__CONV_KERNELS(T, P->isa)                                                               \
        const int64_t K = P->kh * P->kw * P->c, nblk = (K + nr - 1) / nr, ldt = nblk * nr, chunk = P->chunk; \
        const int64_t zero = 0;                                                                   \
        char *mem = (char *)DF_MALLOC((size_t)chunk * sizeof(void *) + (size_t)(chunk * ldt) * sizeof(T) + 64); \
        if (!mem) { __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED); return; }                  \
        const T **arow = (const T **)(void *)mem;                                                 \
        T *tmp = (T *)(void *)(((uintptr_t)(mem + (size_t)chunk * sizeof(void *)) + 63) & ~(uintptr_t)63); \
        int slot = __atomic_fetch_add(&P->next_slot, 1, __ATOMIC_RELAXED);                        \
        T *acc = (T *)P->acc + (size_t)slot * (size_t)(P->npix / P->per_img * P->Hb * P->Wb * P->c); \
        const int64_t run = P->dw == 1 ? P->kw * P->c : P->c;                                     \
        for (int64_t q0 = lo; q0 < hi; q0 += chunk) {                                            \
            int64_t cnt = DF__MIN(chunk, hi - q0), cntp = (cnt + mr - 1) / mr * mr;               \
            for (int64_t i = 0; i < cntp; i++) arow[i] = (const T *)P->dy + (q0 + DF__MIN(i, cnt - 1)) * P->oc; \
            for (int64_t jb = 0; jb < nblk; jb++) {                                               \
                const T *sliver = (const T *)P->bp + (size_t)(jb * P->oc * nr);                   \
                for (int64_t i = 0; i < cntp; i += mr) {                                          \
                    T *cr[8];                                                                     \
                    for (int r = 0; r < mr; r++) cr[r] = tmp + (i + r) * ldt + jb * nr;           \
                    cukr(1, &zero, P->oc, arow + i, sliver, cr, 0);                               \
                }                                                                                 \
            }                                                                                     \
            for (int64_t i = 0; i < cnt; i++) {                                                   \
                int64_t q = q0 + i, b = q / P->per_img, rem = q - b * P->per_img, oy = rem / P->cols, ox = rem - oy * P->cols; \
                const T *src = tmp + i * ldt;                                                     \
                for (int64_t ky = 0; ky < P->kh; ky++)                                            \
                    for (int64_t kx = 0; kx < P->kw; kx += run / P->c) {                          \
                        T *d = acc + ((b * P->Hb + oy * P->sh + ky * P->dh) * P->Wb + ox * P->sw + kx * P->dw) * P->c; \
                        for (int64_t e = 0; e < run; e++) d[e] += src[e];                         \
                        src += run;                                                               \
                    }                                                                             \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(mem);                                                                             \
    }
DF__CONV_PASSES(float)
DF__CONV_PASSES(double)

static int df__conv_direct(const df__conv_geo *g) {       /* 1x1, stride 1, no padding */
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 && g->oh == g->h && g->ow == g->w;
}
/* Filter slivers: dst[block][k][0..nr) = w[koff[k] + (block*nr + j)*js], zero past nout. */
#define DF__CONV_PACK(T)                                                                          \
    static void df__conv_pack_##T(const T *w, const int64_t *koff, int64_t K, int64_t js, int64_t nout, int nr, T *dst) { \
        for (int64_t j0 = 0; j0 < nout; j0 += nr)                                                 \
            for (int64_t k = 0; k < K; k++, dst += nr) {                                          \
                const T *s = w + koff[k];                                                         \
                for (int j = 0; j < nr; j++) dst[j] = j0 + j < nout ? s[(j0 + j) * js] : 0;      \
            }                                                                                     \
    }
DF__CONV_PACK(float)
DF__CONV_PACK(double)

static int64_t df__floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
/* [n][H][W][c] zeros with images [n][h][w][c] placed at row top, column left (clipped to the
   buffer). */
static void df__conv_pad(const char *src, char *dst, int64_t n, int64_t h, int64_t w, int64_t c, int64_t H,
                         int64_t W, int64_t top, int64_t left, size_t es) {
    memset(dst, 0, (size_t)(n * H * W * c) * es);
    int64_t cols = DF__MIN(w, W - left);
    if (cols <= 0) return;
    for (int64_t b = 0; b < n; b++)
        for (int64_t y = 0; y < h && y + top < H; y++)
            memcpy(dst + (size_t)(((b * H + y + top) * W + left) * c) * es, src + (size_t)(((b * h + y) * w) * c) * es,
                   (size_t)(cols * c) * es);
}
/* Splits taps into k-blocks of about 16 KB of filter sliver each; returns how many. */
static int df__conv_kblocks(int ntap, int64_t tk, int nr, size_t es, int *kb) {
    int64_t per = DF__MAX((int64_t)1, (int64_t)(16384 / ((size_t)nr * es)) / DF__MAX(tk, (int64_t)1));
    int n = 0;
    kb[0] = 0;
    for (int t = 0; t < ntap; t = kb[n]) { n++; kb[n] = (int)DF__MIN((int64_t)ntap, t + per); }
    return n;
}

/* What the passes of one convolution share: the geometry, kernel set, the (padded) source and
   its buffer dimensions (Hb x Wb, with dY's leading padding Ty, Tx for the input gradient), the
   packed filter buffer, tap and filter-row offsets, k-blocks, threads. */
typedef struct df__conv_ws {
    df__kctx *c;
    const df__conv_geo *g;
    int dbl, isa, mr, nr, threads;
    size_t es;
    int64_t Hb, Wb, Ty, Tx, chunk;
    const char *a;
    char *bp;
    int64_t *toff, *koff;
    int *kb;
} df__conv_ws;
/* Taps of the forward filter over a buffer Wb wide: a filter row is one run when dw == 1. */
static int df__conv_taps(const df__conv_ws *W, int64_t *tk) {
    const df__conv_geo *g = W->g;
    int merged = g->dw == 1, ntap = (int)(merged ? g->kh : g->kh * g->kw);
    *tk = merged ? g->kw * g->c : g->c;
    for (int t = 0; t < ntap; t++) {
        int64_t ky = merged ? t : t / g->kw, kx = merged ? 0 : t % g->kw;
        W->toff[t] = (ky * g->dh * W->Wb + kx * g->dw) * g->c;
    }
    return ntap;
}
static void df__conv_pack(const df__conv_ws *W, const void *w, int64_t K, int64_t js, int64_t nout) {
    if (W->dbl) df__conv_pack_double((const double *)w, W->koff, K, js, nout, W->nr, (double *)(void *)W->bp);
    else df__conv_pack_float((const float *)w, W->koff, K, js, nout, W->nr, (float *)(void *)W->bp);
}
static int df__conv_forward(const df__conv_ws *W, const void *w, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t es = (int64_t)W->es, C = g->c, OC = g->oc, P = g->oh * g->ow, K = g->kh * g->kw * C;
    int64_t tk;
    int ntap = df__conv_taps(W, &tk);
    for (int64_t k = 0; k < K; k++) W->koff[k] = k * OC;
    df__conv_pack(W, w, K, 1, OC);
    df__conv_pass p;
    memset(&p, 0, sizeof p);
    p.isa = W->isa; p.ntap = ntap; p.tk = tk; p.toff = W->toff; p.kb = W->kb;
    p.nkb = df__conv_kblocks(ntap, tk, W->nr, W->es, W->kb);
    p.npix = g->n * P; p.per_img = P; p.cols = g->ow; p.chunk = W->chunk; p.nout = OC; p.bp = W->bp;
    p.a = W->a; p.a_img = W->Hb * W->Wb * C * es; p.a_row = g->sh * W->Wb * C * es; p.a_col = g->sw * C * es;
    p.c = (char *)out; p.c_img = P * OC * es; p.c_row = g->ow * OC * es; p.c_col = OC * es;
    df__parallel_for(W->c->ipool, p.npix, W->chunk, W->threads, W->dbl ? df__conv_pass_double : df__conv_pass_float, &p);
    return !p.failed;
}
static int df__conv_filter_grad(const df__conv_ws *W, const void *dy, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t C = g->c, OC = g->oc, P = g->oh * g->ow;
    const int mr = W->mr, nr = W->nr, threads = W->threads;
    df__wgrad_pass p;
    memset(&p, 0, sizeof p);
    int64_t tk;
    int ntap = df__conv_taps(W, &tk);
    p.isa = W->isa; p.tk = tk; p.toff = W->toff; p.per_tap = (tk + mr - 1) / mr; p.nout = OC; p.dw = out;
    p.npix = g->n * P; p.per_img = P; p.cols = g->ow; p.a = W->a; p.dy = dy;
    p.kc = DF__MIN((int64_t)256, DF__MAX((int64_t)64, (p.npix + 4 * threads - 1) / (4 * threads)));  /* even shares */
    p.a_img = W->Hb * W->Wb * C; p.a_row = g->sh * W->Wb * C; p.a_col = g->sw * C;
    p.tiles = ntap * p.per_tap;
    int64_t per_slot = p.tiles * mr * ((OC + nr - 1) / nr * nr);
    p.slots = (double)per_slot * threads * (double)W->es < 1e15 ? DF_MALLOC((size_t)(per_slot * threads) * W->es) : NULL;
    if (!p.slots) return 0;
    df__parallel_for(W->c->ipool, p.npix, p.kc, threads, W->dbl ? df__wgrad_pass_double : df__wgrad_pass_float, &p);
    if (!p.failed) { if (W->dbl) df__wgrad_finish_double(&p, mr, nr); else df__wgrad_finish_float(&p, mr, nr); }
    DF_FREE(p.slots);
    return !p.failed;
}
/* The input gradient for few input channels: patches scattered into per-share padded sums. */
static int df__conv_input_grad_scatter(const df__conv_ws *W, const void *w, const void *dy, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t C = g->c, OC = g->oc, P = g->oh * g->ow, K = g->kh * g->kw * C;
    const int64_t Hb = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1, Wb = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    const size_t es = W->es;
    for (int64_t o = 0; o < OC; o++) W->koff[o] = o;
    df__conv_pack(W, w, OC, OC, K);
    df__conv_scatter p;
    memset(&p, 0, sizeof p);
    p.isa = W->isa; p.npix = g->n * P; p.per_img = P; p.cols = g->ow; p.oc = OC; p.kh = g->kh; p.kw = g->kw; p.c = C;
    p.Hb = Hb; p.Wb = Wb; p.sh = g->sh; p.sw = g->sw; p.dh = g->dh; p.dw = g->dw; p.chunk = W->chunk; p.dy = dy; p.bp = W->bp;
    int64_t slot_n = g->n * Hb * Wb * C, n_acc = slot_n * W->threads;
    df_status st;
    df_tensor *acct = (double)slot_n * W->threads * (double)es < 1e15
                    ? df__tensor_alloc(W->c->alloc, W->dbl ? DF_DOUBLE : DF_FLOAT, 1, &n_acc, &st) : NULL;
    if (!acct) return 0;
    memset(acct->data, 0, (size_t)n_acc * es);
    p.acc = acct->data;
    df__parallel_for(W->c->ipool, p.npix, W->chunk, W->threads, W->dbl ? df__conv_scatter_double : df__conv_scatter_float, &p);
    for (int s = 1; s < p.next_slot && !p.failed; s++) {      /* the shares' sums into slot 0 */
        if (W->dbl) { double *d = (double *)acct->data; const double *e = d + s * slot_n; for (int64_t i = 0; i < slot_n; i++) d[i] += e[i]; }
        else { float *d = (float *)acct->data; const float *e = d + s * slot_n; for (int64_t i = 0; i < slot_n; i++) d[i] += e[i]; }
    }
    for (int64_t b = 0; b < g->n && !p.failed; b++)          /* the inside of the padded sum is dX */
        for (int64_t y = 0; y < g->h; y++) {
            char *dst = (char *)out + (size_t)((b * g->h + y) * g->w * C) * es;
            memset(dst, 0, (size_t)(g->w * C) * es);
            int64_t cols = DF__MIN(g->w, Wb - g->pw);
            if (y + g->ph < Hb && cols > 0)
                memcpy(dst, (char *)acct->data + (size_t)(((b * Hb + y + g->ph) * Wb + g->pw) * C) * es, (size_t)(cols * C) * es);
        }
    df_tensor_release(acct);
    return !p.failed;
}
/* The input gradient, one stride phase (ry, rx) at a time, from the padded dY in W->a. */
static int df__conv_input_grad_phases(const df__conv_ws *W, const void *w, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t es = (int64_t)W->es, C = g->c, OC = g->oc;
    int merged = g->sw == 1 && g->dw == 1;
    for (int64_t ry = 0; ry < DF__MIN(g->sh, g->h); ry++)
        for (int64_t rx = 0; rx < DF__MIN(g->sw, g->w); rx++) {
            int ntap = 0;
            int64_t tk = merged ? g->kw * OC : OC, nk = 0;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t ny = ry + g->ph - ky * g->dh;
                if (((ny % g->sh) + g->sh) % g->sh) continue;
                int64_t rowoff = (ny / g->sh + W->Ty) * W->Wb;
                for (int64_t kx = g->kw - 1; kx >= 0; kx--) {
                    int64_t nx = rx + g->pw - kx * g->dw;
                    if (((nx % g->sw) + g->sw) % g->sw) continue;
                    if (!merged || kx == g->kw - 1) W->toff[ntap++] = (rowoff + nx / g->sw + W->Tx) * OC;
                    for (int64_t o = 0; o < OC; o++) W->koff[nk++] = ((ky * g->kw + kx) * C) * OC + o;
                }
            }
            df__conv_pack(W, w, nk, OC, C);
            df__conv_pass p;
            memset(&p, 0, sizeof p);
            int64_t nj = (g->h - ry + g->sh - 1) / g->sh, ni = (g->w - rx + g->sw - 1) / g->sw;
            p.isa = W->isa; p.ntap = ntap; p.tk = tk; p.toff = W->toff; p.kb = W->kb;
            p.nkb = df__conv_kblocks(ntap, tk, W->nr, W->es, W->kb);
            p.npix = g->n * nj * ni; p.per_img = nj * ni; p.cols = ni; p.chunk = W->chunk; p.nout = C; p.bp = W->bp;
            p.a = W->a; p.a_img = W->Hb * W->Wb * OC * es; p.a_row = W->Wb * OC * es; p.a_col = OC * es;
            p.c = (char *)out + (size_t)((ry * g->w + rx) * C) * W->es;
            p.c_img = g->h * g->w * C * es; p.c_row = g->sh * g->w * C * es; p.c_col = g->sw * C * es;
            int th = (double)p.npix * (double)nk * (double)C < 4.0e6 ? 1 : W->threads;
            df__parallel_for(W->c->ipool, p.npix, W->chunk, th, W->dbl ? df__conv_pass_double : df__conv_pass_float, &p);
            if (p.failed) return 0;
        }
    return 1;
}

/* mode 0: Y = conv(X, W); 1: dX from (W, dY); 2: dW from (X, dY). Tensors NHWC, W [kh,kw,c,oc]. */
#ifdef DATAFLOW_CUDA
#endif
static int df__conv_run(df__kctx *c, int mode, const df__conv_geo *g, int dbl, const void *x, const void *w,
                        const void *dy, void *out) {
#ifdef DATAFLOW_CUDA
    if (c->gpu) {              /* on a GPU: dataflow_cuda.cu's convolutions, scratch from the device */
        df_cuda_conv p = {g->n, g->h, g->w, g->c, g->kh, g->kw, g->oc, g->oh, g->ow, g->sh, g->sw, g->dh, g->dw, g->ph, g->pw};
        size_t bytes = df_cuda_conv2d_workspace(&p);
        int64_t words = (int64_t)((bytes + 7) / 8);
        df_tensor *scratch = bytes ? df__tensor_alloc(c->alloc, DF_DOUBLE, 1, &words, c->st) : NULL;
        if (bytes && !scratch) return 0;
        df_dtype t = dbl ? DF_DOUBLE : DF_FLOAT;
        void *ws = scratch ? scratch->data : NULL;
        int tf32 = df__step_tf32(c->step);
        df_code code = mode == 0 ? df_cuda_conv2d((df_cuda *)c->gpu, t, &p, x, w, out, ws, tf32, c->st)
                     : mode == 1 ? df_cuda_conv2d_bp_input((df_cuda *)c->gpu, t, &p, w, dy, out, ws, tf32, c->st)
                     : df_cuda_conv2d_bp_filter((df_cuda *)c->gpu, t, &p, x, dy, out, ws, tf32, c->st);
        df_tensor_release(scratch);
        return code == DF_OK;
    }
#endif
    df__conv_ws W;
    memset(&W, 0, sizeof W);
    W.c = c; W.g = g; W.dbl = dbl; W.es = dbl ? 8 : 4;
    W.isa = df__isa();                     /* AVX-512 tiles where the CPU has them */
    W.mr = df__gemm_cfgs[dbl][W.isa].mr; W.nr = df__gemm_cfgs[dbl][W.isa].nr; W.chunk = (int64_t)W.mr * 16;
    const size_t es = W.es;
    const int nr = W.nr;
    const int64_t C = g->c, OC = g->oc, P = g->oh * g->ow, K = g->kh * g->kw * C;
    if (df__conv_direct(g) && mode != 2) {  /* 1x1, stride 1, no padding: the batch is one [n*h*w, c] matrix
                                               (the filter gradient is faster below) */
        int64_t rows = g->n * P;
        int ok = mode == 0 ? df__gemm_fp(dbl, rows, OC, K, x, K, 0, w, OC, 0, out, OC, c->ipool, 0)
                           : df__gemm_fp(dbl, rows, K, OC, dy, OC, 0, w, OC, 1, out, K, c->ipool, 0);
        if (!ok) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the matrix product's packing buffers");
        return ok;
    }
    if (C == 0 || OC == 0 || P == 0) {          /* nothing to sum: zeros */
        int64_t n_out = mode == 0 ? g->n * P * OC : mode == 1 ? g->n * g->h * g->w * C : K * OC;
        memset(out, 0, (size_t)n_out * es);
        return 1;
    }
    /* the padded source: the input (modes 0, 2) or dY (mode 1) */
    int64_t top, left, src_h, src_w, src_c;
    if (mode != 1) {
        W.Hb = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1; W.Wb = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
        top = g->ph; left = g->pw; src_h = g->h; src_w = g->w; src_c = C;
    } else {
        W.Ty = DF__MAX((int64_t)0, -df__floor_div(g->ph - (g->kh - 1) * g->dh, g->sh));
        W.Tx = DF__MAX((int64_t)0, -df__floor_div(g->pw - (g->kw - 1) * g->dw, g->sw));
        W.Hb = W.Ty + DF__MAX(g->oh, df__floor_div(g->h - 1 + g->ph, g->sh) + 1);
        W.Wb = W.Tx + DF__MAX(g->ow, df__floor_div(g->w - 1 + g->pw, g->sw) + 1);
        top = W.Ty; left = W.Tx; src_h = g->oh; src_w = g->ow; src_c = OC;
    }
    const void *src = mode == 1 ? dy : x;
    const int scatter = mode == 1 && C * 2 < nr;
    int copy = !scatter && (top || left || W.Hb > src_h || W.Wb > src_w), ok = 0;
    if (!copy) { W.Hb = src_h; W.Wb = src_w; }
    int64_t max_taps = g->kh * g->kw, max_k = max_taps * DF__MAX(C, OC);
    int64_t nblk = ((mode == 1 ? C : OC) + nr - 1) / nr;
    double pad_elems = copy ? (double)g->n * (double)W.Hb * (double)W.Wb * (double)src_c : 0;
    double want = (pad_elems + (double)nblk * nr * (double)max_k) * (double)es + (double)max_taps * 12 + (double)max_k * 8;
    df_status scratch_st;
    int64_t n_pad = copy ? (int64_t)pad_elems : 0, n_pack = mode == 2 ? 0 : nblk * nr * max_k, n_scr = n_pad + n_pack + 8;
    df_tensor *scr = want < 1e15 ? df__tensor_alloc(c->alloc, dbl ? DF_DOUBLE : DF_FLOAT, 1, &n_scr, &scratch_st) : NULL;
    W.toff = want < 1e15 ? (int64_t *)DF_MALLOC((size_t)max_taps * sizeof(int64_t) + (size_t)(mode == 2 ? 1 : max_k) * sizeof(int64_t)) : NULL;
    W.kb = want < 1e15 ? (int *)DF_MALLOC((size_t)(max_taps + 1) * sizeof(int)) : NULL;
    if (scr && W.toff && W.kb) {
        char *pad = (char *)scr->data;
        W.bp = pad + (size_t)n_pad * es;
        W.koff = W.toff + max_taps;
        W.a = (const char *)src;
        if (copy) { df__conv_pad((const char *)src, pad, g->n, src_h, src_w, src_c, W.Hb, W.Wb, top, left, es); W.a = pad; }
        double macs = (double)g->n * (double)P * (double)K * (double)OC;
        W.threads = macs < 4.0e6 ? 1 : df__ipool_threads(c->ipool);
        ok = mode == 0 ? df__conv_forward(&W, w, out)
           : mode == 2 ? df__conv_filter_grad(&W, dy, out)
           : scatter ? df__conv_input_grad_scatter(&W, w, dy, out)
           : df__conv_input_grad_phases(&W, w, out);
    }
    df_tensor_release(scr); DF_FREE(W.toff); DF_FREE(W.kb);
    if (!ok) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the convolution's buffers");
    return ok;
}
static int df__conv_float_type(df__kctx *c, const df_tensor *t) {
    if (t->dtype == DF_FLOAT || t->dtype == DF_DOUBLE) return 1;
    DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t->dtype));
    return 0;
}
/* The 4-vector of an int32 sizes input (input_sizes, filter_sizes, orig_input_shape). */
static int df__sizes4(df__kctx *c, const df_tensor *t, int64_t *v) {
    if (t->n != 4 || t->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "The sizes input must be a 4-vector"); return 0; }
    for (int i = 0; i < 4; i++) {
        v[i] = df__int_at(t, i);
        if (v[i] < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "The sizes input has a negative entry"); return 0; }
    }
    return 1;
}
/* The number of groups of a convolution whose filter in_depth divides the input depth (TensorFlow's
   grouped convolution: Keras' Conv2D(groups=...)); 0 after a status. */
static int64_t df__conv_groups(df__kctx *c, const df__conv_geo *g, const int64_t *wd) {
    if (g->c <= 0) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input depth must be positive, got %lld", (long long)g->c);
        return 0;
    }
    if (wd[2] <= 0 || g->c % wd[2]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input depth must be evenly divisible by filter depth: %lld vs %lld",
                  (long long)g->c, (long long)wd[2]);
        return 0;
    }
    int64_t groups = g->c / wd[2];
    if (wd[3] % groups) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "output depth must be evenly divisible by number of groups: %lld vs %lld",
                  (long long)wd[3], (long long)groups);
        return 0;
    }
    if (groups > 1 && c->gpu) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "grouped convolution (input depth %lld, filter in_depth %lld) has no GPU kernel",
                  (long long)g->c, (long long)wd[2]);
        return 0;
    }
    return groups;
}
static int64_t df__conv_check(df__kctx *c, const df__conv_geo *g, const int64_t *wd, const df_tensor *dy) {
    int64_t groups = df__conv_groups(c, g, wd);
    if (!groups) return 0;
    if (dy && (dy->rank != 4 || dy->dims[0] != g->n || dy->dims[1] != g->oh || dy->dims[2] != g->ow || dy->dims[3] != wd[3])) {
        char s1[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "out_backprop has shape %s; the convolution gives [%lld,%lld,%lld,%lld]",
                  df__dims_str(dy->rank, dy->dims, s1, 96), (long long)g->n, (long long)g->oh, (long long)g->ow, (long long)wd[3]);
        return 0;
    }
    return groups;
}
/* Columns [col, col + cols) of a [rows, stride] matrix to a packed [rows, cols] one, or back. */
static void df__conv_cols(char *packed, char *m, int64_t rows, int64_t stride, int64_t col, int64_t cols, size_t es, int back) {
    for (int64_t r = 0; r < rows; r++) {
        char *a = packed + (size_t)(r * cols) * es, *b = m + (size_t)(r * stride + col) * es;
        if (back) memcpy(b, a, (size_t)cols * es); else memcpy(a, b, (size_t)cols * es);
    }
}
/* A grouped convolution (mode as df__conv_run; g->c and g->oc the full depths): one filter in
   depth per group is a depthwise convolution (the filter's bytes are already in that layout);
   otherwise each group's columns are packed, convolved and put back. */
static int df__conv_grouped(df__kctx *c, int mode, const df__conv_geo *g, int64_t groups, df_dtype t, const df_tensor *x,
                            const df_tensor *w, const df_tensor *dy, df_tensor *out) {
    const int64_t fi = g->c / groups, ocg = g->oc / groups;
    if (fi == 1) return df__dw_run(c, mode, g, ocg, t, x, w, dy, out);
    const size_t es = t == DF_DOUBLE ? 8 : 4;
    df__conv_geo sub = *g;
    sub.c = fi; sub.oc = ocg;
    const int64_t xr = g->n * g->h * g->w, yr = g->n * g->oh * g->ow, wr = g->kh * g->kw * fi;
    char *xg = (char *)DF_MALLOC((size_t)(xr * fi) * es + 1), *wg = (char *)DF_MALLOC((size_t)(wr * ocg) * es + 1);
    char *yg = (char *)DF_MALLOC((size_t)(yr * ocg) * es + 1);
    int ok = xg && wg && yg;
    if (!ok) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the grouped convolution's buffers");
    for (int64_t k = 0; ok && k < groups; k++) {
        if (mode != 1) df__conv_cols(xg, (char *)x->data, xr, g->c, k * fi, fi, es, 0);
        if (mode != 2) df__conv_cols(wg, (char *)w->data, wr, g->oc, k * ocg, ocg, es, 0);
        if (mode != 0) df__conv_cols(yg, (char *)dy->data, yr, g->oc, k * ocg, ocg, es, 0);
        char *res = mode == 0 ? yg : mode == 1 ? xg : wg;
        ok = df__conv_run(c, mode, &sub, t == DF_DOUBLE, xg, wg, yg, res);
        if (ok) df__conv_cols(res, (char *)out->data, mode == 0 ? yr : mode == 1 ? xr : wr, mode == 1 ? g->c : g->oc,
                              k * (mode == 1 ? fi : ocg), mode == 1 ? fi : ocg, es, 1);
    }
    DF_FREE(xg); DF_FREE(wg); DF_FREE(yg);
    return ok;
}
DF_PRIVATE void df__k_conv2d(df__kctx *c) {
    const df_tensor *x = c->in[0], *w = c->in[1];
    if (!df__conv_float_type(c, x)) return;
    if (!df__rank4(x) || !df__rank4(w)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input and filter must be 4-D, got ranks %d and %d", x->rank, w->rank); return; }
    if (!w->n) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "filter must not have zero elements (i.e. all dimensions must be non-zero)"); return; }
    df__conv_geo g;
    int64_t groups;
    if (df__conv_setup(c->node, x->dims, w->dims[0], w->dims[1], 0, &g, c->st) || !(groups = df__conv_check(c, &g, w->dims, NULL))) return;
    g.oc = w->dims[3];
    int64_t od[4] = {g.n, g.oh, g.ow, g.oc};
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, od);
    if (o && o->n && groups > 1) df__conv_grouped(c, 0, &g, groups, x->dtype, x, w, NULL, o);
    else if (o && o->n) df__conv_run(c, 0, &g, x->dtype == DF_DOUBLE, x->data, w->data, NULL, o->data);
}
DF_PRIVATE void df__k_conv2d_bp_input(df__kctx *c) {
    const df_tensor *w = c->in[1], *dy = c->in[2];
    int64_t xd[4];
    if (!df__conv_float_type(c, w) || !df__sizes4(c, c->in[0], xd)) return;
    if (!df__rank4(w)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "filter must be 4-D"); return; }
    df__conv_geo g;
    int64_t groups;
    if (df__conv_setup(c->node, xd, w->dims[0], w->dims[1], 0, &g, c->st) || !(groups = df__conv_check(c, &g, w->dims, dy))) return;
    g.oc = w->dims[3];
    df_tensor *o = df__k_alloc(c, 0, w->dtype, 4, xd);
    if (!o || !o->n) return;
    if (!dy->n || !g.oc) { df__zero_data(o, c->st); return; }
    if (groups > 1) df__conv_grouped(c, 1, &g, groups, w->dtype, NULL, w, dy, o);
    else df__conv_run(c, 1, &g, w->dtype == DF_DOUBLE, NULL, w->data, dy->data, o->data);
}
DF_PRIVATE void df__k_conv2d_bp_filter(df__kctx *c) {
    const df_tensor *x = c->in[0], *dy = c->in[2];
    int64_t wd[4];
    if (!df__conv_float_type(c, x) || !df__sizes4(c, c->in[1], wd)) return;
    if (!df__rank4(x)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be 4-D"); return; }
    df__conv_geo g;
    int64_t groups;
    if (df__conv_setup(c->node, x->dims, wd[0], wd[1], 0, &g, c->st) || !(groups = df__conv_check(c, &g, wd, dy))) return;
    g.oc = wd[3];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, wd);
    if (!o || !o->n) return;
    if (!dy->n) { df__zero_data(o, c->st); return; }
    if (groups > 1) df__conv_grouped(c, 2, &g, groups, x->dtype, x, NULL, dy, o);
    else df__conv_run(c, 2, &g, x->dtype == DF_DOUBLE, x->data, NULL, dy->data, o->data);
}
DF_PRIVATE df_code df__sf_conv2d(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0], *w = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (x->rank < 0 || w->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (x->rank != 4 || w->rank != 4) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input and filter must be 4-D");
    if (x->dims[3] >= 0 && w->dims[2] > 0 && x->dims[3] % w->dims[2])
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input depth must be evenly divisible by filter depth: %lld vs %lld",
                        (long long)x->dims[3], (long long)w->dims[2]);
    df__conv_geo g;
    if (!w->dims[0] || !w->dims[1] || !w->dims[2] || !w->dims[3])      /* TF: no filters without elements */
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "filter must not have zero elements (i.e. all dimensions must be non-zero)");
    if (w->dims[0] < 0 || w->dims[1] < 0) {
        o->rank = 4; o->dims[0] = x->dims[0]; o->dims[1] = o->dims[2] = -1; o->dims[3] = w->dims[3];
        return DF_OK;
    }
    if (df__conv_setup(c->node, x->dims, w->dims[0], w->dims[1], 0, &g, c->st)) return c->st->code;
    o->rank = 4; o->dims[0] = x->dims[0]; o->dims[1] = g.oh; o->dims[2] = g.ow; o->dims[3] = w->dims[3];
    return DF_OK;
}
/* A shape from a constant sizes input (input_sizes, filter_sizes, orig_input_shape). */
static df_code df__sf_sizes_input(df__shape_ctx *c, int which) {
    df__shape *o = df__sc_out(c, 0);
    const df_tensor *t = df__sc_const(c, which);
    if (!t || t->n != 4) { o->rank = 4; for (int i = 0; i < 4; i++) o->dims[i] = -1; return DF_OK; }
    o->rank = 4;
    for (int i = 0; i < 4; i++) o->dims[i] = df__int_at(t, i);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_conv_bp_input(df__shape_ctx *c) { return df__sf_sizes_input(c, 0); }
DF_PRIVATE df_code df__sf_conv_bp_filter(df__shape_ctx *c) { return df__sf_sizes_input(c, 1); }
DF_PRIVATE df_code df__sf_pool_grad_avg(df__shape_ctx *c) { return df__sf_sizes_input(c, 0); }

/* ---- pooling ---- */
static int df__pool_setup(df__kctx *c, const int64_t *in, df__conv_geo *g) {
    int64_t k[4];
    if (!df__list4(c->node, "ksize", 1, k) || k[0] != 1 || k[3] != 1) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "ksize must have 4 entries, 1 in the batch and depth dimensions");
        return 0;
    }
    if (df__conv_setup(c->node, in, k[1], k[2], 1, g, c->st)) return 0;
    g->oc = g->c;
    return 1;
}
/* Pooling works on whole channel vectors of a pixel (NHWC): a window's inputs are combined
   with helpers that take n channels at once (AVX2 where present). pmax: o = p where p > o or p
   is NaN (NaN wins, as TensorFlow's); padd: o += p; pgrad (MaxPool's gradient, one window
   position): where x equals the max m (NaN matching NaN) and no earlier position of the
   window did (flag f), dx += d. */
#define DF__POOL_HELPERS(T)                                                                       \
    static void df__pmax_##T(T *o, const T *p, int64_t n) {                                       \
        for (int64_t i = 0; i < n; i++) if (p[i] > o[i] || p[i] != p[i]) o[i] = p[i];            \
    }                                                                                             \
    static void df__padd_##T(T *o, const T *p, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] += p[i]; } \
    static void df__pgrad_##T(T *dx, const T *x, const T *m, const T *d, T *f, int64_t n) {       \
        for (int64_t i = 0; i < n; i++)                                                           \
            if (f[i] == 0 && (x[i] == m[i] || (x[i] != x[i] && m[i] != m[i]))) { dx[i] += d[i]; f[i] = 1; } \
    }
DF__POOL_HELPERS(float)
DF__POOL_HELPERS(double)
#ifdef DF__X86
#define DF__POOL_HELPERS_AVX2(T, V, W, L)                                                         \
    DF__TARGET_AVX2 static void df__pmax_##T##_avx2(T *o, const T *p, int64_t n) {                \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) {                                                              \
            V ov = _mm256_loadu_##W(o + i), pv = _mm256_loadu_##W(p + i);                         \
            V take = _mm256_or_##W(_mm256_cmp_##W(pv, ov, _CMP_GT_OQ), _mm256_cmp_##W(pv, pv, _CMP_UNORD_Q)); \
            _mm256_storeu_##W(o + i, _mm256_blendv_##W(ov, pv, take));                           \
        }                                                                                         \
        df__pmax_##T(o + i, p + i, n - i);                                                        \
    }                                                                                             \
    DF__TARGET_AVX2 static void df__padd_##T##_avx2(T *o, const T *p, int64_t n) {                \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_add_##W(_mm256_loadu_##W(o + i), _mm256_loadu_##W(p + i))); \
        df__padd_##T(o + i, p + i, n - i);                                                        \
    }                                                                                             \
    DF__TARGET_AVX2 static void df__pgrad_##T##_avx2(T *dx, const T *x, const T *m, const T *d, T *f, int64_t n) { \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) {  /* f holds all-ones lanes where a position took it */       \
            V xv = _mm256_loadu_##W(x + i), mv = _mm256_loadu_##W(m + i), fv = _mm256_loadu_##W(f + i); \
            V eq = _mm256_or_##W(_mm256_cmp_##W(xv, mv, _CMP_EQ_OQ),                              \
                                 _mm256_and_##W(_mm256_cmp_##W(xv, xv, _CMP_UNORD_Q), _mm256_cmp_##W(mv, mv, _CMP_UNORD_Q))); \
            V take = _mm256_andnot_##W(fv, eq);                                                   \
            _mm256_storeu_##W(dx + i, _mm256_add_##W(_mm256_loadu_##W(dx + i), _mm256_and_##W(take, _mm256_loadu_##W(d + i)))); \
            _mm256_storeu_##W(f + i, _mm256_or_##W(fv, eq));                                      \
        }                                                                                         \
        df__pgrad_##T(dx + i, x + i, m + i, d + i, f + i, n - i);                                 \
    }
DF__POOL_HELPERS_AVX2(float, __m256, ps, 8)
DF__POOL_HELPERS_AVX2(double, __m256d, pd, 4)
/* The same on AVX-512, the tail (channels past the last whole vector) under a mask. pgrad's
   flags: a lane of f is nonzero once a position took it (1 here; the plain helper's 1 or the
   AVX2 one's all-ones bits would read the same). */
#define DF__POOL_HELPERS_AVX512(T, V, W, L)                                                       \
    DF__TARGET_AVX512 static inline void df__pmax1_##T##_avx512(T *o, const T *p, uint32_t k, int full) { \
        V ov = full ? DF__Z(loadu_##W)(o) : DF__ZX(maskz_loadu_##W)(k, o);                        \
        V pv = full ? DF__Z(loadu_##W)(p) : DF__ZX(maskz_loadu_##W)(k, p);                        \
        uint32_t take = DF__Z(cmp_##W##_mask)(pv, ov, _CMP_GT_OQ) | DF__Z(cmp_##W##_mask)(pv, pv, _CMP_UNORD_Q); \
        if (full) DF__Z(storeu_##W)(o, DF__Z(mask_blend_##W)(take, ov, pv));                      \
        else DF__ZX(mask_storeu_##W)(o, k & take, pv);                                            \
    }                                                                                             \
    DF__TARGET_AVX512 static void df__pmax_##T##_avx512(T *o, const T *p, int64_t n) {            \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) df__pmax1_##T##_avx512(o + i, p + i, 0, 1);                     \
        if (i < n) df__pmax1_##T##_avx512(o + i, p + i, DF__ZTAIL(n - i), 0);                      \
    }                                                                                             \
    DF__TARGET_AVX512 static void df__padd_##T##_avx512(T *o, const T *p, int64_t n) {            \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) DF__Z(storeu_##W)(o + i, DF__Z(add_##W)(DF__Z(loadu_##W)(o + i), DF__Z(loadu_##W)(p + i))); \
        if (i < n) {                                                                              \
            uint32_t k = DF__ZTAIL(n - i);                                                        \
            DF__ZX(mask_storeu_##W)(o + i, k, DF__Z(add_##W)(DF__ZX(maskz_loadu_##W)(k, o + i), DF__ZX(maskz_loadu_##W)(k, p + i))); \
        }                                                                                         \
    }                                                                                             \
    DF__TARGET_AVX512 static inline void df__pgrad1_##T##_avx512(T *dx, const T *x, const T *m, const T *d, T *f, uint32_t k, int full) { \
        V xv = full ? DF__Z(loadu_##W)(x) : DF__ZX(maskz_loadu_##W)(k, x);                        \
        V mv = full ? DF__Z(loadu_##W)(m) : DF__ZX(maskz_loadu_##W)(k, m);                        \
        V fv = full ? DF__Z(loadu_##W)(f) : DF__ZX(maskz_loadu_##W)(k, f);                        \
        uint32_t eq = k & (DF__Z(cmp_##W##_mask)(xv, mv, _CMP_EQ_OQ) |                             \
                           (DF__Z(cmp_##W##_mask)(xv, xv, _CMP_UNORD_Q) & DF__Z(cmp_##W##_mask)(mv, mv, _CMP_UNORD_Q))); \
        uint32_t take = eq & ~(uint32_t)DF__Z(cmp_##W##_mask)(fv, DF__Z(setzero_##W)(), _CMP_NEQ_UQ); \
        if (!take) return;                                                                        \
        V dv = full ? DF__Z(loadu_##W)(dx) : DF__ZX(maskz_loadu_##W)(k, dx);                      \
        V gv = full ? DF__Z(loadu_##W)(d) : DF__ZX(maskz_loadu_##W)(k, d);                        \
        if (full) {                                                                               \
            DF__Z(storeu_##W)(dx, DF__Z(mask_add_##W)(dv, take, dv, gv));                         \
            DF__Z(storeu_##W)(f, DF__Z(mask_mov_##W)(fv, take, DF__Z(set1_##W)((T)1)));           \
        } else {                                                                                  \
            DF__ZX(mask_storeu_##W)(dx, take, DF__Z(add_##W)(dv, gv));                            \
            DF__ZX(mask_storeu_##W)(f, take, DF__Z(set1_##W)((T)1));                              \
        }                                                                                         \
    }                                                                                             \
    DF__TARGET_AVX512 static void df__pgrad_##T##_avx512(T *dx, const T *x, const T *m, const T *d, T *f, int64_t n) { \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) df__pgrad1_##T##_avx512(dx + i, x + i, m + i, d + i, f + i, DF__ZTAIL(L), 1); \
        if (i < n) df__pgrad1_##T##_avx512(dx + i, x + i, m + i, d + i, f + i, DF__ZTAIL(n - i), 0); \
    }
/* MaxPool's whole window for one output pixel: each block of channels kept in a register over
   the window's ny x nx positions (row stride rs, pixel stride c), in the order and with the
   rule of the pmax calls (the same bits), stored once. */
#define DF__POOL_WINDOW_AVX512(T, V, W, L)                                                        \
    DF__TARGET_AVX512 static void df__pwin_##T##_avx512(T *o, const T *p, int64_t ny, int64_t nx, int64_t rs, int64_t c) { \
        for (int64_t ci = 0; ci < c; ci += L) {                                                   \
            int full = c - ci >= L;                                                               \
            uint32_t k = full ? DF__ZTAIL(L) : DF__ZTAIL(c - ci);                                 \
            V acc = full ? DF__Z(loadu_##W)(p + ci) : DF__ZX(maskz_loadu_##W)(k, p + ci);          \
            for (int64_t yy = 0; yy < ny; yy++)                                                   \
                for (int64_t xx = yy ? 0 : 1; xx < nx; xx++) {                                    \
                    const T *q = p + yy * rs + xx * c + ci;                                       \
                    V pv = full ? DF__Z(loadu_##W)(q) : DF__ZX(maskz_loadu_##W)(k, q);             \
                    uint32_t take = DF__Z(cmp_##W##_mask)(pv, acc, _CMP_GT_OQ) | DF__Z(cmp_##W##_mask)(pv, pv, _CMP_UNORD_Q); \
                    acc = DF__Z(mask_blend_##W)(take, acc, pv);                                   \
                }                                                                                 \
            if (full) DF__Z(storeu_##W)(o + ci, acc);                                             \
            else DF__ZX(mask_storeu_##W)(o + ci, k, acc);                                         \
        }                                                                                         \
    }
DF__POOL_HELPERS_AVX512(float, DF__ZT(), ps, 16)
DF__POOL_HELPERS_AVX512(double, DF__ZT(d), pd, 8)
DF__POOL_WINDOW_AVX512(float, DF__ZT(), ps, 16)
DF__POOL_WINDOW_AVX512(double, DF__ZT(d), pd, 8)
#define DF__POOL_PICK(T)                                                                          \
    if (df__isa() == DF__ISA_AVX512) { pmax = df__pmax_##T##_avx512; padd = df__padd_##T##_avx512; pgrad = df__pgrad_##T##_avx512; \
                                       pwin = df__pwin_##T##_avx512; }                            \
    else if (df__vec_isa() == DF__ISA_AVX2) { pmax = df__pmax_##T##_avx2; padd = df__padd_##T##_avx2; pgrad = df__pgrad_##T##_avx2; }
#else
#define DF__POOL_PICK(T)
#endif

typedef struct df__pool_job {
    const df__conv_geo *g;
    int max, failed;
    const void *x, *y, *dy;
    void *out;
} df__pool_job;
/* Forward: output rows [lo, hi) of (image, oy). Gradient: images [lo, hi) (windows of one image
   may overlap; images never do). */
#define DF__POOL(T)                                                                               \
    static void df__pool_rows_##T(void *arg, int64_t lo, int64_t hi) {                           \
        const df__pool_job *J = (const df__pool_job *)arg;                                        \
        const df__conv_geo *g = J->g;                                                             \
        const T *x = (const T *)J->x;                                                             \
        void (*pmax)(T *, const T *, int64_t) = df__pmax_##T, (*padd)(T *, const T *, int64_t) = df__padd_##T; \
        void (*pgrad)(T *, const T *, const T *, const T *, T *, int64_t) = df__pgrad_##T;         \
        void (*pwin)(T *, const T *, int64_t, int64_t, int64_t, int64_t) = NULL;                  \
        DF__POOL_PICK(T)                                                                          \
        DF__UNUSED(pgrad);                                                                        \
        for (int64_t r = lo; r < hi; r++) {                                                       \
            int64_t b = r / g->oh, oy = r - b * g->oh;                                            \
            int64_t y0 = DF__MAX(oy * g->sh - g->ph, 0), y1 = DF__MIN(oy * g->sh - g->ph + g->kh, g->h); \
            for (int64_t ox = 0; ox < g->ow; ox++) {                                              \
                T *o = (T *)J->out + (r * g->ow + ox) * g->c;                                     \
                int64_t x0 = DF__MAX(ox * g->sw - g->pw, 0), x1 = DF__MIN(ox * g->sw - g->pw + g->kw, g->w); \
                if (y0 >= y1 || x0 >= x1) { for (int64_t ci = 0; ci < g->c; ci++) o[ci] = J->max ? -(T)INFINITY : 0; continue; } \
                if (J->max && pwin) {                                                             \
                    pwin(o, x + ((b * g->h + y0) * g->w + x0) * g->c, y1 - y0, x1 - x0, g->w * g->c, g->c); \
                    continue;                                                                     \
                }                                                                                 \
                int first = 1;                                                                    \
                for (int64_t yy = y0; yy < y1; yy++)                                              \
                    for (int64_t xx = x0; xx < x1; xx++) {                                        \
                        const T *p = x + ((b * g->h + yy) * g->w + xx) * g->c;                    \
                        if (first) { memcpy(o, p, (size_t)g->c * sizeof(T)); first = 0; }        \
                        else if (J->max) pmax(o, p, g->c);                                        \
                        else padd(o, p, g->c);                                                    \
                    }                                                                             \
                if (!J->max) { T inv = (T)1 / (T)((y1 - y0) * (x1 - x0)); for (int64_t ci = 0; ci < g->c; ci++) o[ci] *= inv; } \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* dX: MaxPool sends each gradient to the first input equal to the window's max (TF's     \
       choice); AvgPool spreads it evenly over the window's part inside the image. */         \
    static void df__pool_grad_imgs_##T(void *arg, int64_t lo, int64_t hi) {                      \
        df__pool_job *J = (df__pool_job *)arg;                                                    \
        const df__conv_geo *g = J->g;                                                             \
        const T *x = (const T *)J->x, *y = (const T *)J->y, *dy = (const T *)J->dy;               \
        void (*pmax)(T *, const T *, int64_t) = df__pmax_##T, (*padd)(T *, const T *, int64_t) = df__padd_##T; \
        void (*pgrad)(T *, const T *, const T *, const T *, T *, int64_t) = df__pgrad_##T;         \
        void (*pwin)(T *, const T *, int64_t, int64_t, int64_t, int64_t) = NULL;                  \
        DF__POOL_PICK(T)                                                                          \
        DF__UNUSED(pmax); DF__UNUSED(pwin);                                                       \
        T *f = (T *)DF_MALLOC((size_t)g->c * sizeof(T) + 1);                                      \
        if (!f) { __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED); return; }                    \
        for (int64_t b = lo; b < hi; b++) {                                                       \
            T *dx = (T *)J->out + b * g->h * g->w * g->c;                                         \
            memset(dx, 0, (size_t)(g->h * g->w * g->c) * sizeof(T));                               \
            for (int64_t oy = 0; oy < g->oh; oy++)                                                \
                for (int64_t ox = 0; ox < g->ow; ox++) {                                          \
                    int64_t at = ((b * g->oh + oy) * g->ow + ox) * g->c;                          \
                    int64_t y0 = DF__MAX(oy * g->sh - g->ph, 0), y1 = DF__MIN(oy * g->sh - g->ph + g->kh, g->h); \
                    int64_t x0 = DF__MAX(ox * g->sw - g->pw, 0), x1 = DF__MIN(ox * g->sw - g->pw + g->kw, g->w); \
                    if (y0 >= y1 || x0 >= x1) continue;                                           \
                    if (!J->max) {                                                                \
                        T inv = (T)1 / (T)((y1 - y0) * (x1 - x0));                                \
                        for (int64_t ci = 0; ci < g->c; ci++) f[ci] = dy[at + ci] * inv;          \
                        for (int64_t yy = y0; yy < y1; yy++)                                      \
                            for (int64_t xx = x0; xx < x1; xx++) padd(dx + (yy * g->w + xx) * g->c, f, g->c); \
                        continue;                                                                 \
                    }                                                                             \
                    memset(f, 0, (size_t)g->c * sizeof(T));                                       \
                    for (int64_t yy = y0; yy < y1; yy++)                                          \
                        for (int64_t xx = x0; xx < x1; xx++) {                                    \
                            int64_t i = ((b * g->h + yy) * g->w + xx) * g->c;                     \
                            pgrad(dx + (yy * g->w + xx) * g->c, x + i, y + at, dy + at, f, g->c);  \
                        }                                                                         \
                }                                                                                 \
        }                                                                                         \
        DF_FREE(f);                                                                               \
    }
DF__POOL(float)
DF__POOL(double)
/* Runs pooling (grad 0) or its gradient over the session's intra-op threads when it is big. */
static int df__pool_run(df__kctx *c, int grad, int dbl, df__pool_job *J) {
    const df__conv_geo *g = J->g;
#ifdef DATAFLOW_CUDA
    if (c->gpu) {
        df_cuda_conv p = {g->n, g->h, g->w, g->c, g->kh, g->kw, g->oc, g->oh, g->ow, g->sh, g->sw, g->dh, g->dw, g->ph, g->pw};
        df_dtype t = dbl ? DF_DOUBLE : DF_FLOAT;
        df_cuda *gpu = (df_cuda *)c->gpu;
        df_code code = !grad ? df_cuda_pool(gpu, t, &p, J->max, J->x, J->out, c->st)
                     : J->max ? df_cuda_max_pool_grad(gpu, t, &p, J->x, J->y, J->dy, J->out, c->st)
                     : df_cuda_avg_pool_grad(gpu, t, &p, J->dy, J->out, c->st);
        return code == DF_OK;
    }
#endif
    double work = (double)g->n * (double)g->oh * (double)g->ow * (double)g->c * (double)(g->kh * g->kw);
    int threads = work < 1.0e6 ? 1 : df__ipool_threads(c->ipool);
    if (!grad) df__parallel_for(c->ipool, g->n * g->oh, 1, threads, dbl ? df__pool_rows_double : df__pool_rows_float, J);
    else df__parallel_for(c->ipool, g->n, 1, threads, dbl ? df__pool_grad_imgs_double : df__pool_grad_imgs_float, J);
    if (J->failed) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in pooling");
    return !J->failed;
}

DF_PRIVATE void df__k_pool(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (!df__conv_float_type(c, x)) return;
    if (!df__rank4(x)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be 4-D, got rank %d", x->rank); return; }
    df__conv_geo g;
    if (!df__pool_setup(c, x->dims, &g)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.c};
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, od);
    if (!o || !o->n) return;
    df__pool_job J = {&g, c->node->op->code, 0, x->data, NULL, NULL, o->data};
    df__pool_run(c, 0, x->dtype == DF_DOUBLE, &J);
}
DF_PRIVATE void df__k_max_pool_grad(df__kctx *c) {
    const df_tensor *x = c->in[0], *y = c->in[1], *dy = c->in[2];
    if (!df__conv_float_type(c, x)) return;
    if (!df__rank4(x)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "orig_input must be 4-D"); return; }
    df__conv_geo g;
    if (!df__pool_setup(c, x->dims, &g)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.c};
    for (int i = 0; i < 4; i++)
        if (y->rank != 4 || dy->rank != 4 || y->dims[i] != od[i] || dy->dims[i] != od[i] || y->dtype != x->dtype || dy->dtype != x->dtype) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "orig_output and grad must have the pooled shape [%lld,%lld,%lld,%lld]",
                      (long long)od[0], (long long)od[1], (long long)od[2], (long long)od[3]);
            return;
        }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, x->dims);
    if (!o || !o->n) return;
    df__pool_job J = {&g, 1, 0, x->data, y->data, dy->data, o->data};
    df__pool_run(c, 1, x->dtype == DF_DOUBLE, &J);
}
DF_PRIVATE void df__k_avg_pool_grad(df__kctx *c) {
    const df_tensor *dy = c->in[1];
    int64_t xd[4];
    if (!df__conv_float_type(c, dy) || !df__sizes4(c, c->in[0], xd)) return;
    df__conv_geo g;
    if (!df__pool_setup(c, xd, &g)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.c};
    for (int i = 0; i < 4; i++)
        if (dy->rank != 4 || dy->dims[i] != od[i]) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "grad must have the pooled shape [%lld,%lld,%lld,%lld]",
                      (long long)od[0], (long long)od[1], (long long)od[2], (long long)od[3]);
            return;
        }
    df_tensor *o = df__k_alloc(c, 0, dy->dtype, 4, xd);
    if (!o || !o->n) return;
    df__pool_job J = {&g, 0, 0, NULL, NULL, dy->data, o->data};
    df__pool_run(c, 1, dy->dtype == DF_DOUBLE, &J);
}
DF_PRIVATE df_code df__sf_pool(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    if (x->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (x->rank != 4) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input must be 4-D, got rank %d", x->rank);
    int64_t k[4];
    if (!df__list4(c->node, "ksize", 1, k) || k[0] != 1 || k[3] != 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ksize must have 4 entries, 1 in the batch and depth dimensions");
    df__conv_geo g;
    if (df__conv_setup(c->node, x->dims, k[1], k[2], 1, &g, c->st)) return c->st->code;
    o->rank = 4; o->dims[0] = x->dims[0]; o->dims[1] = g.oh; o->dims[2] = g.ow; o->dims[3] = x->dims[3];
    return DF_OK;
}
