/* ==========================================================================================
   src/kernels/gemm.c: CPU kernels: the intra-op pool and the GEMM                     >>gemm
   The intra-op pool: kernels split big work over it (df__parallel_for)
   One job at a time: workers wait for a new generation, take parts until none is left; the
   caller takes parts too and waits for the last. A kernel that finds the pool busy (another
   kernel's job) runs its work itself, so nothing waits on anything but its own parts.
   ========================================================================================== */
#ifndef DF_NO_THREADS
/* Spins (without the lock) for up to about DF__IPOOL_SPIN_NS while *v == while_eq (wait_ne 1)
   or *v < while_lt (wait_ne 0): a sleeping thread's wake-up costs tens of microseconds on a
   virtual machine, as much as a 256-cube product's share. */
#define DF__IPOOL_SPIN_NS 60000
static void df__ipool_spin(const volatile uint64_t *g, uint64_t seen, const volatile int *fin, int parts) {
    int64_t t0 = df__trace_now();
    for (int i = 1;; i++) {
        if (g && __atomic_load_n(g, __ATOMIC_ACQUIRE) != seen) return;
        if (fin && __atomic_load_n(fin, __ATOMIC_ACQUIRE) >= parts) return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (!(i & 63) && df__trace_now() - t0 > DF__IPOOL_SPIN_NS) return;
    }
}
/* Takes and runs parts of the current job; returns with the lock held. */
static void df__ipool_work(df__ipool *p) {
    while (p->next < p->parts) {
        int i = p->next++;
        int64_t lo = (int64_t)i * p->chunk, hi = DF__MIN(p->len, lo + p->chunk);
        df__par_fn fn = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        if (lo < hi) fn(arg, lo, hi);
        pthread_mutex_lock(&p->mu);
        if (__atomic_add_fetch(&p->finished, 1, __ATOMIC_RELEASE) == p->parts) pthread_cond_broadcast(&p->done_cv);
    }
}
static void *df__ipool_main(void *arg) {
    df__ipool *p = (df__ipool *)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (!p->shutdown && p->gen == seen) {   /* the next job often follows at once: spin first */
            pthread_mutex_unlock(&p->mu);
            df__ipool_spin(&p->gen, seen, NULL, 0);
            pthread_mutex_lock(&p->mu);
        }
        while (!p->shutdown && p->gen == seen) pthread_cond_wait(&p->cv, &p->mu);
        if (p->shutdown) break;
        seen = p->gen;
        df__ipool_work(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}
DF_PRIVATE df__ipool *df__ipool_new(int n_threads) {
    df__ipool *p = (df__ipool *)DF_MALLOC(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    if (!(p->threads = (pthread_t *)DF_MALLOC((size_t)DF__MAX(n_threads, 1) * sizeof(pthread_t)))) { DF_FREE(p); return NULL; }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (int i = 0; i < n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, df__ipool_main, p) != 0) break;
        p->n_threads++;
    }
    return p;
}
DF_PRIVATE void df__ipool_free(df__ipool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->done_cv);
    DF_FREE(p->threads);
    DF_FREE(p);
}
DF_PRIVATE int df__ipool_threads(df__ipool *p) { return p ? p->n_threads + 1 : 1; }
/* fn over [0, len) in at most `parts` pieces whose bounds are multiples of `unit`. */
DF_PRIVATE void df__parallel_for(df__ipool *p, int64_t len, int64_t unit, int parts, df__par_fn fn, void *arg) {
    if (unit < 1) unit = 1;
    int64_t units = (len + unit - 1) / unit;
    if (parts > units) parts = (int)units;
    if (!p || parts <= 1) { if (len > 0) fn(arg, 0, len); return; }
    pthread_mutex_lock(&p->mu);
    if (p->busy) { pthread_mutex_unlock(&p->mu); fn(arg, 0, len); return; }
    p->busy = 1;
    p->fn = fn; p->arg = arg; p->len = len;
    p->chunk = (units + parts - 1) / parts * unit;
    p->parts = parts; p->next = 0; p->finished = 0;
    __atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->cv);
    df__ipool_work(p);
    if (p->finished < p->parts) {
        pthread_mutex_unlock(&p->mu);
        df__ipool_spin(NULL, 0, &p->finished, p->parts);
        pthread_mutex_lock(&p->mu);
    }
    while (p->finished < p->parts) pthread_cond_wait(&p->done_cv, &p->mu);
    p->busy = 0;
    pthread_mutex_unlock(&p->mu);
}
#else
DF_PRIVATE int df__ipool_threads(df__ipool *p) { DF__UNUSED(p); return 1; }
DF_PRIVATE void df__parallel_for(df__ipool *p, int64_t len, int64_t unit, int parts, df__par_fn fn, void *arg) {
    DF__UNUSED(p); DF__UNUSED(unit); DF__UNUSED(parts);
    if (len > 0) fn(arg, 0, len);
}
#endif

/* ---- GEMM: C[m,n] = op(A)[m,k] op(B)[k,n], float32 and float64 ----
   BLIS's five loops: B panels of KC x NC packed into NR-wide slivers (L3/L1), A blocks of
   MC x KC packed into MR-tall slivers (L2), and a micro-kernel that keeps an MR x NR block of C
   in registers. Transposes are read by the packing, never copied first. Micro-kernels: AVX-512,
   AVX2+FMA and a portable one, chosen at run time from the CPU's features (df_set_kernel_isa forces one).
   Small products skip packing: the direct kernel reads A and B where they are (float32 on
   AVX-512: the small kernels below, masked edges, a transposed B transposed first). Big products
   are split over the session's intra-op threads by rows or columns of C. */
/* Blocking per (precision, isa): MR x NR registers, KC x NR of B in L1, MC x KC of A in L2. */
/* Block sizes (rows of A, depth, columns of B per packed block) may be set when compiling, for
   tuning on a new machine: -DDF_GEMM_F32_AVX512_BLOCKS="240,256,4064" and likewise for F64 and
   AVX2. The micro-tile sizes (mr, nr) belong to the kernels and are fixed. */
#ifndef DF_GEMM_F32_AVX2_BLOCKS
#define DF_GEMM_F32_AVX2_BLOCKS 240, 256, 4080
#endif
#ifndef DF_GEMM_F32_AVX512_BLOCKS
#define DF_GEMM_F32_AVX512_BLOCKS 240, 256, 4064
#endif
#ifndef DF_GEMM_F64_AVX2_BLOCKS
#define DF_GEMM_F64_AVX2_BLOCKS 72, 256, 2040
#endif
#ifndef DF_GEMM_F64_AVX512_BLOCKS
#define DF_GEMM_F64_AVX512_BLOCKS 120, 256, 2032
#endif
static const df__gemm_cfg df__gemm_cfgs[2][3] = {
    /* float:  portable, avx2, avx512 */
    {{4, 8, 128, 256, 2048}, {6, 16, DF_GEMM_F32_AVX2_BLOCKS}, {6, 32, DF_GEMM_F32_AVX512_BLOCKS}},
    /* double: portable, avx2, avx512 */
    {{4, 4, 96, 256, 1024}, {6, 8, DF_GEMM_F64_AVX2_BLOCKS}, {6, 16, DF_GEMM_F64_AVX512_BLOCKS}},
};

/* ---- packing (zero-padded to full slivers) ---- */
#if defined(DF__X86) && !defined(DF_EMULATE_AVX512)
/* dst[p * ldd + c] = src[c * lds + p] for an 8 x 8 block: a transpose through registers. */
DF__TARGET_AVX2 static void df__tr8x8_f32(const float *src, int64_t lds, float *dst, int64_t ldd) {
    /* named registers, not arrays: gcc -O2 keeps arrays on the stack */
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds), r2 = _mm256_loadu_ps(src + 2 * lds),
           r3 = _mm256_loadu_ps(src + 3 * lds), r4 = _mm256_loadu_ps(src + 4 * lds),
           r5 = _mm256_loadu_ps(src + 5 * lds), r6 = _mm256_loadu_ps(src + 6 * lds),
           r7 = _mm256_loadu_ps(src + 7 * lds);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);   /* cols 0 1 | 4 5, 2 3 | 6 7 */
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);   /* rows 0..3 */
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);   /* rows 4..7 */
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}
/* A full NR-wide sliver of B stored transposed (B^T rows col0 .., from depth p0) packed 8 x 8
   at a time; returns how many of the kc depths it did (a multiple of 8), or 0 when the kernels
   in use are not AVX2 or better, or nr is not a multiple of 8. */
static int64_t df__pack_bt_fast_float(const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t col0, int nr,
                                      float *dst) {
    if (nr % 8 || df__isa() < DF__ISA_AVX2) return 0;
    int64_t p8 = kc / 8 * 8;
    for (int64_t c = 0; c < nr; c += 8)
        for (int64_t p = 0; p < p8; p += 8) df__tr8x8_f32(b + (col0 + c) * ldb + p0 + p, ldb, dst + p * nr + c, nr);
    return p8;
}
#define DF__PACK_BT_FAST_float(b, ldb, p0, kc, col0, nr, dst) df__pack_bt_fast_float(b, ldb, p0, kc, col0, nr, dst)
/* A full 6-tall sliver of A (rows row0.., depths p0..p0+kc) into dst[p * 6 + r], in vectors
   (the scalar loop's strided stores were 1/8 of a 256-cube's time). Not transposed: 8 depths of
   the 6 rows at a time, transposed in registers, each depth's 6 values stored as 4 + 2;
   transposed: each depth's 6 values are contiguous (masked load and store). */
DF__TARGET_AVX2 static void df__pack_a6_avx2(const float *a, int64_t lda, int ta, int64_t row0, int64_t p0,
                                            int64_t kc, float *dst) {
    if (ta) {
        const __m256i six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
        const float *s = a + p0 * lda + row0;
        for (int64_t p = 0; p < kc; p++, s += lda) _mm256_maskstore_ps(dst + p * 6, six, _mm256_maskload_ps(s, six));
        return;
    }
    const float *s = a + row0 * lda + p0;
    int64_t p8 = kc / 8 * 8, p = 0;
    for (; p < p8; p += 8) {
        __m256 r0 = _mm256_loadu_ps(s + p), r1 = _mm256_loadu_ps(s + lda + p), r2 = _mm256_loadu_ps(s + 2 * lda + p),
               r3 = _mm256_loadu_ps(s + 3 * lda + p), r4 = _mm256_loadu_ps(s + 4 * lda + p),
               r5 = _mm256_loadu_ps(s + 5 * lda + p);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        __m256 u4 = _mm256_shuffle_ps(t4, t4, 0x44), u5 = _mm256_shuffle_ps(t4, t4, 0xEE);
        __m256 u6 = _mm256_shuffle_ps(t5, t5, 0x44), u7 = _mm256_shuffle_ps(t5, t5, 0xEE);
        /* u0..u3: depths (0|4), (1|5), (2|6), (3|7) of rows 0..3; u4..u7 the same of rows 4, 5 */
        float *d = dst + p * 6;
        _mm_storeu_ps(d, _mm256_castps256_ps128(u0)); _mm_storel_pi((__m64 *)(d + 4), _mm256_castps256_ps128(u4));
        _mm_storeu_ps(d + 6, _mm256_castps256_ps128(u1)); _mm_storel_pi((__m64 *)(d + 10), _mm256_castps256_ps128(u5));
        _mm_storeu_ps(d + 12, _mm256_castps256_ps128(u2)); _mm_storel_pi((__m64 *)(d + 16), _mm256_castps256_ps128(u6));
        _mm_storeu_ps(d + 18, _mm256_castps256_ps128(u3)); _mm_storel_pi((__m64 *)(d + 22), _mm256_castps256_ps128(u7));
        _mm_storeu_ps(d + 24, _mm256_extractf128_ps(u0, 1)); _mm_storel_pi((__m64 *)(d + 28), _mm256_extractf128_ps(u4, 1));
        _mm_storeu_ps(d + 30, _mm256_extractf128_ps(u1, 1)); _mm_storel_pi((__m64 *)(d + 34), _mm256_extractf128_ps(u5, 1));
        _mm_storeu_ps(d + 36, _mm256_extractf128_ps(u2, 1)); _mm_storel_pi((__m64 *)(d + 40), _mm256_extractf128_ps(u6, 1));
        _mm_storeu_ps(d + 42, _mm256_extractf128_ps(u3, 1)); _mm_storel_pi((__m64 *)(d + 46), _mm256_extractf128_ps(u7, 1));
    }
    for (; p < kc; p++)   /* memcpy: the bfloat16 GEMM packs its 32-bit pairs through this too */
        for (int r = 0; r < 6; r++) memcpy(dst + p * 6 + r, s + r * lda + p, 4);
}
#define DF__PACK_A6_FAST_float(a, lda, ta, row0, p0, kc, mr, dst) \
    (mr == 6 && df__isa() >= DF__ISA_AVX2 ? (df__pack_a6_avx2(a, lda, ta, row0, p0, kc, dst), 1) : 0)
#else
#define DF__PACK_BT_FAST_float(b, ldb, p0, kc, col0, nr, dst) 0
#define DF__PACK_A6_FAST_float(a, lda, ta, row0, p0, kc, mr, dst) 0
#endif
#define DF__PACK_BT_FAST_double(b, ldb, p0, kc, col0, nr, dst) 0
#define DF__PACK_A6_FAST_double(a, lda, ta, row0, p0, kc, mr, dst) 0
#define DF__PACK(T)                                                                               \
    /* A block rows [i0, i0+mc), cols [p0, p0+kc) of op(A) into MR-tall k-major slivers */        \
    static void df__pack_a_##T(const T *a, int64_t lda, int ta, int64_t i0, int64_t mc, int64_t p0, \
                               int64_t kc, int mr, T *dst) {                                      \
        for (int64_t i = 0; i < mc; i += mr) {                                                    \
            int64_t rows = DF__MIN(mr, mc - i);                                                   \
            if (rows == mr && DF__PACK_A6_FAST_##T(a, lda, ta, i0 + i, p0, kc, mr, dst)) {           \
                dst += (size_t)mr * (size_t)kc;                                                   \
                continue;                                                                         \
            }                                                                                     \
            for (int64_t r = 0; r < mr; r++) {                                                    \
                T *d = dst + r;                                                                   \
                if (r >= rows) { for (int64_t p = 0; p < kc; p++, d += mr) *d = 0; continue; }    \
                if (!ta) { const T *s = a + (i0 + i + r) * lda + p0;                              \
                           for (int64_t p = 0; p < kc; p++, d += mr) *d = s[p]; }                 \
                else { const T *s = a + p0 * lda + i0 + i + r;                                    \
                       for (int64_t p = 0; p < kc; p++, d += mr, s += lda) *d = *s; }             \
            }                                                                                     \
            dst += (size_t)mr * (size_t)kc;                                                       \
        }                                                                                         \
    }                                                                                             \
    /* B panel rows [p0, p0+kc), cols [j0, j0+nc) of op(B) into NR-wide k-major slivers */        \
    static void df__pack_b_##T(const T *b, int64_t ldb, int tb, int64_t p0, int64_t kc, int64_t j0, \
                               int64_t nc, int nr, T *dst) {                                      \
        for (int64_t j = 0; j < nc; j += nr) {                                                    \
            int64_t cols = DF__MIN(nr, nc - j);                                                   \
            if (!tb) {                                                                            \
                for (int64_t p = 0; p < kc; p++) {                                                \
                    const T *s = b + (p0 + p) * ldb + j0 + j;                                     \
                    T *d = dst + p * nr;                                                          \
                    int64_t c = 0;                                                                \
                    if (cols == nr) { memcpy(d, s, (size_t)nr * sizeof(T)); continue; }          \
                    for (; c < cols; c++) d[c] = s[c];                                            \
                    for (; c < nr; c++) d[c] = 0;                                                 \
                }                                                                                 \
            } else {                                                                              \
                int64_t done = cols == nr ? DF__PACK_BT_FAST_##T(b, ldb, p0, kc, j0 + j, nr, dst) : 0; \
                for (int64_t c = 0; c < nr; c++) {                                                \
                    T *d = dst + c + done * nr;                                                   \
                    if (c >= cols) { for (int64_t p = done; p < kc; p++, d += nr) *d = 0; continue; } \
                    const T *s = b + (j0 + j + c) * ldb + p0;                                     \
                    for (int64_t p = done; p < kc; p++, d += nr) *d = s[p];                       \
                }                                                                                 \
            }                                                                                     \
            dst += (size_t)nr * (size_t)kc;                                                       \
        }                                                                                         \
    }
DF__PACK(float)
DF__PACK(double)

/* ---- micro-kernels: C[mr x nr] (= or +=) Ap(mr x kc) Bp(kc x nr), row stride ldc ---- */
#define DF__UKR_PORTABLE(T, MR, NR)                                                               \
    static void df__ukr_##T##_portable(int64_t kc, const T *a, int64_t rsa, int64_t csa, const T *b, \
                                       int64_t ldb, T *c, int64_t ldc, int acc) {                 \
        T t[MR][NR];                                                                              \
        for (int r = 0; r < MR; r++) for (int j = 0; j < NR; j++) t[r][j] = 0;                     \
        for (int64_t p = 0; p < kc; p++, a += csa, b += ldb)                                      \
            for (int r = 0; r < MR; r++) { T av = a[r * rsa]; for (int j = 0; j < NR; j++) t[r][j] += av * b[j]; } \
        for (int r = 0; r < MR; r++)                                                              \
            for (int j = 0; j < NR; j++) c[r * ldc + j] = acc ? c[r * ldc + j] + t[r][j] : t[r][j]; \
    }
DF__UKR_PORTABLE(float, 4, 8)
DF__UKR_PORTABLE(double, 4, 4)

#ifdef DF__X86
/* Writes (or adds into) one row of the tile: two vectors. */
#define DF__UKR_STORE(T, V, W, L)                                                                 \
    DF__TARGET_AVX2 static inline void df__ukr_store_##T(T *cr, V lo, V hi, int acc) {            \
        if (acc) { lo = _mm256_add_##W(lo, _mm256_loadu_##W(cr)); hi = _mm256_add_##W(hi, _mm256_loadu_##W(cr + L)); } \
        _mm256_storeu_##W(cr, lo);                                                                \
        _mm256_storeu_##W(cr + L, hi);                                                            \
    }
DF__UKR_STORE(float, __m256, ps, 8)
DF__UKR_STORE(double, __m256d, pd, 4)
/* The 6 x 2-vector register tile shared by the AVX2 kernels: accumulators c00..c51, one k step
   (row r gets broadcast(*Pr) times the two vectors b0, b1 of B), and the stores of the rows. */
#define DF__TILE_ZERO(V, W)                                                                       \
    V c00 = _mm256_setzero_##W(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;          \
    V c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#define DF__TILE_STEP(V, W, BC, P0, P1, P2, P3, P4, P5)                                           \
    {                                                                                             \
        V av;                                                                                     \
        av = BC(P0); c00 = _mm256_fmadd_##W(av, b0, c00); c01 = _mm256_fmadd_##W(av, b1, c01);    \
        av = BC(P1); c10 = _mm256_fmadd_##W(av, b0, c10); c11 = _mm256_fmadd_##W(av, b1, c11);    \
        av = BC(P2); c20 = _mm256_fmadd_##W(av, b0, c20); c21 = _mm256_fmadd_##W(av, b1, c21);    \
        av = BC(P3); c30 = _mm256_fmadd_##W(av, b0, c30); c31 = _mm256_fmadd_##W(av, b1, c31);    \
        av = BC(P4); c40 = _mm256_fmadd_##W(av, b0, c40); c41 = _mm256_fmadd_##W(av, b1, c41);    \
        av = BC(P5); c50 = _mm256_fmadd_##W(av, b0, c50); c51 = _mm256_fmadd_##W(av, b1, c51);    \
    }
#define DF__TILE_STORE(T, R0, R1, R2, R3, R4, R5)                                                 \
    df__ukr_store_##T(R0, c00, c01, acc); df__ukr_store_##T(R1, c10, c11, acc);                   \
    df__ukr_store_##T(R2, c20, c21, acc); df__ukr_store_##T(R3, c30, c31, acc);                   \
    df__ukr_store_##T(R4, c40, c41, acc); df__ukr_store_##T(R5, c50, c51, acc);
/* AVX2+FMA: 6 rows x 2 vectors of C in 12 registers; each k step loads 2 vectors of B and
   broadcasts 6 elements of A. (float: 6x16, double: 6x8) */
#define DF__UKR_AVX2(T, V, W, L, BC)                                                              \
    DF__TARGET_AVX2 static void df__ukr_##T##_avx2(int64_t kc, const T *a, int64_t rsa, int64_t csa, const T *b, \
                                                   int64_t ldb, T *c, int64_t ldc, int acc) {     \
        const int64_t r2 = 2 * rsa, r3 = 3 * rsa, r4 = 4 * rsa, r5 = 5 * rsa;                     \
        for (int r = 0; r < 6; r++) _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);       \
        DF__TILE_ZERO(V, W)                                                                       \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, a += csa, b += ldb) {                                    \
            V b0 = _mm256_loadu_##W(b), b1 = _mm256_loadu_##W(b + L);                             \
            DF__TILE_STEP(V, W, BC, a, a + rsa, a + r2, a + r3, a + r4, a + r5)                   \
        }                                                                                         \
        DF__TILE_STORE(T, c, c + ldc, c + 2 * ldc, c + 3 * ldc, c + 4 * ldc, c + 5 * ldc)         \
    }
DF__UKR_AVX2(float, __m256, ps, 8, _mm256_broadcast_ss)
DF__UKR_AVX2(double, __m256d, pd, 4, _mm256_broadcast_sd)
/* AVX-512: the same 6 rows x 2 vectors, each vector twice as wide (float: 6x32, double: 6x16). */
#define DF__UKR_AVX512(T, V, W, L)                                                                \
    DF__TARGET_AVX512 static inline void df__ukr512_store_##T(T *cr, V lo, V hi, int acc) {       \
        if (acc) { lo = DF__Z(add_##W)(lo, DF__Z(loadu_##W)(cr)); hi = DF__Z(add_##W)(hi, DF__Z(loadu_##W)(cr + L)); } \
        DF__Z(storeu_##W)(cr, lo);                                                                \
        DF__Z(storeu_##W)(cr + L, hi);                                                            \
    }                                                                                             \
    DF__TARGET_AVX512 static void df__ukr_##T##_avx512(int64_t kc, const T *a, int64_t rsa, int64_t csa, const T *b, \
                                                       int64_t ldb, T *c, int64_t ldc, int acc) { \
        const int64_t r2 = 2 * rsa, r3 = 3 * rsa, r4 = 4 * rsa, r5 = 5 * rsa;                     \
        for (int r = 0; r < 6; r++) {                                                             \
            _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);                               \
            _mm_prefetch((const char *)(c + r * ldc + 2 * L - 1), _MM_HINT_T0);                   \
        }                                                                                         \
        V c00 = DF__Z(setzero_##W)(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;      \
        V c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;                       \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, a += csa, b += ldb) {                                    \
            V b0 = DF__Z(loadu_##W)(b), b1 = DF__Z(loadu_##W)(b + L), av;                          \
            av = DF__Z(set1_##W)(a[0]); c00 = DF__Z(fmadd_##W)(av, b0, c00); c01 = DF__Z(fmadd_##W)(av, b1, c01); \
            av = DF__Z(set1_##W)(a[rsa]); c10 = DF__Z(fmadd_##W)(av, b0, c10); c11 = DF__Z(fmadd_##W)(av, b1, c11); \
            av = DF__Z(set1_##W)(a[r2]); c20 = DF__Z(fmadd_##W)(av, b0, c20); c21 = DF__Z(fmadd_##W)(av, b1, c21); \
            av = DF__Z(set1_##W)(a[r3]); c30 = DF__Z(fmadd_##W)(av, b0, c30); c31 = DF__Z(fmadd_##W)(av, b1, c31); \
            av = DF__Z(set1_##W)(a[r4]); c40 = DF__Z(fmadd_##W)(av, b0, c40); c41 = DF__Z(fmadd_##W)(av, b1, c41); \
            av = DF__Z(set1_##W)(a[r5]); c50 = DF__Z(fmadd_##W)(av, b0, c50); c51 = DF__Z(fmadd_##W)(av, b1, c51); \
        }                                                                                         \
        df__ukr512_store_##T(c, c00, c01, acc); df__ukr512_store_##T(c + ldc, c10, c11, acc);     \
        df__ukr512_store_##T(c + 2 * ldc, c20, c21, acc); df__ukr512_store_##T(c + 3 * ldc, c30, c31, acc); \
        df__ukr512_store_##T(c + 4 * ldc, c40, c41, acc); df__ukr512_store_##T(c + 5 * ldc, c50, c51, acc); \
    }
DF__UKR_AVX512(float, DF__ZT(), ps, 16)
DF__UKR_AVX512(double, DF__ZT(d), pd, 8)
#endif

/* The block size for a span: as many blocks as `most` needs, of equal size rounded up to a
   multiple of `unit` (never above `most`, a multiple of unit). */
static int64_t df__gemm_even(int64_t span, int64_t most, int64_t unit) {
    if (span <= most) return span;
    int64_t blocks = (span + most - 1) / most, b = (span + blocks - 1) / blocks;
    return DF__MIN(most, (b + unit - 1) / unit * unit);
}
/* One thread's share: C rows [m0, m1) x cols [n0, n1). abuf/bbuf: aligned packing buffers. */
#define DF__GEMM_BLOCKED(T)                                                                       \
    static void df__gemm_blocked_##T(const df__gemm_cfg *g, int isa, int64_t m0, int64_t m1, int64_t n0, \
                                     int64_t n1, int64_t k, const T *a, int64_t lda, int ta, const T *b, \
                                     int64_t ldb, int tb, T *c, int64_t ldc, T *abuf, T *bbuf) {  \
        const int mr = g->mr, nr = g->nr;                                                         \
        T tile[16 * 16];                                                                          \
        void (*ukr)(int64_t, const T *, int64_t, int64_t, const T *, int64_t, T *, int64_t, int) = df__ukr_##T##_portable; \
        DF__GEMM_PICK_##T                                                                         \
        /* blocks of about equal size, at most the configured ones (n = 4096 made a 4064 and a    \
           32-column block, packing all of A twice; k = 300 a 256 and a 44-deep one) */          \
        const int64_t NC = df__gemm_even(n1 - n0, g->nc, nr), KC = df__gemm_even(k, g->kc, 1);  \
        const int64_t MC = df__gemm_even(m1 - m0, g->mc, mr);                                     \
        for (int64_t jc = n0; jc < n1; jc += NC) {                                                \
            int64_t nc = DF__MIN(NC, n1 - jc);                                                    \
            for (int64_t pc = 0; pc < k; pc += KC) {                                              \
                int64_t kc = DF__MIN(KC, k - pc);                                                 \
                df__pack_b_##T(b, ldb, tb, pc, kc, jc, nc, nr, bbuf);                            \
                for (int64_t ic = m0; ic < m1; ic += MC) {                                        \
                    int64_t mc = DF__MIN(MC, m1 - ic);                                            \
                    df__pack_a_##T(a, lda, ta, ic, mc, pc, kc, mr, abuf);                         \
                    for (int64_t jr = 0; jr < nc; jr += nr) {                                     \
                        int64_t cols = DF__MIN(nr, nc - jr);                                      \
                        const T *bp = bbuf + (size_t)(jr / nr) * (size_t)nr * (size_t)kc;         \
                        for (int64_t ir = 0; ir < mc; ir += mr) {                                 \
                            int64_t rows = DF__MIN(mr, mc - ir);                                  \
                            const T *ap = abuf + (size_t)(ir / mr) * (size_t)mr * (size_t)kc;     \
                            T *cp = c + (ic + ir) * ldc + jc + jr;                                \
                            if (rows == mr && cols == nr) { ukr(kc, ap, 1, mr, bp, nr, cp, ldc, pc > 0); continue; } \
                            ukr(kc, ap, 1, mr, bp, nr, tile, nr, 0);                              \
                            for (int64_t r = 0; r < rows; r++)                                    \
                                for (int64_t j = 0; j < cols; j++)                                \
                                    cp[r * ldc + j] = pc > 0 ? cp[r * ldc + j] + tile[r * nr + j] : tile[r * nr + j]; \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
#ifdef DF__X86
#define DF__GEMM_PICK_float if (isa == DF__ISA_AVX2) ukr = df__ukr_float_avx2; if (isa == DF__ISA_AVX512) ukr = df__ukr_float_avx512;
#define DF__GEMM_PICK_double if (isa == DF__ISA_AVX2) ukr = df__ukr_double_avx2; if (isa == DF__ISA_AVX512) ukr = df__ukr_double_avx512;
#else
#define DF__GEMM_PICK_float DF__UNUSED(isa);
#define DF__GEMM_PICK_double DF__UNUSED(isa);
#endif
DF__GEMM_BLOCKED(float)
DF__GEMM_BLOCKED(double)

/* Direct (no packing) for small products with B not transposed: full tiles read A through its
   strides and B's rows where they are; edge tiles first copy their few rows or columns into a
   zero-padded block. Returns 0 on OOM. */
#define DF__GEMM_DIRECT(T)                                                                        \
    static int df__gemm_direct_##T(const df__gemm_cfg *g, int isa, int64_t m, int64_t n, int64_t k, \
                                   const T *a, int64_t lda, int ta, const T *b, int64_t ldb, T *c, int64_t ldc) { \
        const int mr = g->mr, nr = g->nr;                                                         \
        const int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;                                     \
        T tile[16 * 16];                                                                          \
        void (*ukr)(int64_t, const T *, int64_t, int64_t, const T *, int64_t, T *, int64_t, int) = df__ukr_##T##_portable; \
        DF__GEMM_PICK_##T                                                                         \
        /* a last partial tile overlaps the one before when the product has a full tile's rows \
           (columns): the overlap is computed twice, the same way, and C is only written */      \
        int over_m = m >= mr, over_n = n >= nr;                                                   \
        int64_t n_full = over_n ? n : n / nr * nr, m_full = over_m ? m : m / mr * mr;             \
        T *edge = NULL, *aedge = NULL, *bedge = NULL;                                             \
        if (n_full < n || m_full < m) {                                                           \
            edge = (T *)DF_MALLOC((size_t)(mr + nr) * (size_t)k * sizeof(T) + 64);                \
            if (!edge) return 0;                                                                  \
            aedge = edge; bedge = edge + (size_t)mr * (size_t)k;                                  \
            if (n_full < n)                                                                       \
                for (int64_t p = 0; p < k; p++)                                                   \
                    for (int64_t j = 0; j < nr; j++) bedge[p * nr + j] = n_full + j < n ? b[p * ldb + n_full + j] : 0; \
        }                                                                                         \
        for (int64_t i0 = 0; i0 < m; i0 += mr) {                                                  \
            int64_t i = over_m && i0 + mr > m ? m - mr : i0, rows = DF__MIN(mr, m - i);           \
            const T *ap = a + i * rsa;                                                            \
            int64_t ars = rsa, acs = csa;                                                         \
            if (rows < mr) {                                                                      \
                for (int64_t p = 0; p < k; p++)                                                   \
                    for (int64_t r = 0; r < mr; r++) aedge[p * mr + r] = r < rows ? a[(i + r) * rsa + p * csa] : 0; \
                ap = aedge; ars = 1; acs = mr;                                                    \
            }                                                                                     \
            for (int64_t j0 = 0; j0 < n; j0 += nr) {                                              \
                int64_t j = over_n && j0 + nr > n ? n - nr : j0;                                  \
                T *cp = c + i * ldc + j;                                                          \
                if (j < n_full && rows == mr) { ukr(k, ap, ars, acs, b + j, ldb, cp, ldc, 0); continue; } \
                int64_t cols = DF__MIN(nr, n - j);                                                \
                if (j < n_full) ukr(k, ap, ars, acs, b + j, ldb, tile, nr, 0);                    \
                else ukr(k, ap, ars, acs, bedge, nr, tile, nr, 0);                                \
                for (int64_t r = 0; r < rows; r++)                                                \
                    for (int64_t jj = 0; jj < cols; jj++) cp[r * ldc + jj] = tile[r * nr + jj];   \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(edge);                                                                            \
        return 1;                                                                                 \
    }
DF__GEMM_DIRECT(float)
DF__GEMM_DIRECT(double)

/* ---- small float32 products on AVX-512 (df__gemm_small_f32) ----
   An RNN step's products (batch x 8 or 32 by 32 columns, their gradients with a transposed
   operand) are over in well under a microsecond, so what the direct path above spends around the
   multiply-adds shows: the 6-row tile leaves a partial last tile, edge columns go through a
   zero-padded copy and a scratch tile, and a transposed B takes the packed path. Here a tile is
   8 (or 4) rows by one or two 16-lane vectors whose edge columns are masked (loads of B and
   stores of C), and a tile's rows past the end read the last row again and are not stored: no
   copies, no scratch tile. A transposed B is first transposed into a buffer (k x n). Each
   element of C is the same chain of fused multiply-adds over p = 0 .. k-1 from zero as in the
   kernels above (their k blocks are whole here), so the same bits as the direct path. */
#ifdef DF__X86
#define DF__ZS_ROW(r)                                                                             \
    {                                                                                             \
        DF__ZT() av = DF__Z(set1_ps)(a[o##r]);                                                    \
        c##r##0 = DF__Z(fmadd_ps)(av, b0, c##r##0);                                               \
        if (nv > 1) c##r##1 = DF__Z(fmadd_ps)(av, b1, c##r##1);                                   \
    }
#define DF__ZS_STORE(r)                                                                           \
    if (r < rows) {                                                                               \
        DF__ZX(mask_storeu_ps)(c + r * ldc, m0, c##r##0);                                         \
        if (nv > 1) DF__ZX(mask_storeu_ps)(c + r * ldc + 16, m1, c##r##1);                        \
    }
/* C[rows x cols] = A's rows (r * rsa, depth p at p * csa) times B (row p at p * ldb); R rows
   (rows <= R), NV vectors of 16 columns, m0/m1 the columns of each vector. */
#define DF__ZSMALL(R, NV)                                                                         \
    DF__TARGET_AVX512 static void df__zsmall_##R##x##NV(int64_t k, const float *a, int64_t rsa, int64_t csa, \
                                                       const float *b, int64_t ldb, float *c, int64_t ldc, int rows, \
                                                       uint32_t m0, uint32_t m1) {               \
        const int nv = NV;                                                                        \
        DF__UNUSED(m1);                                                                           \
        const int64_t last = rows - 1;                                                            \
        const int64_t o0 = 0, o1 = DF__MIN(1, last) * rsa, o2 = DF__MIN(2, last) * rsa, o3 = DF__MIN(3, last) * rsa; \
        const int64_t o4 = DF__MIN(4, last) * rsa, o5 = DF__MIN(5, last) * rsa, o6 = DF__MIN(6, last) * rsa; \
        const int64_t o7 = DF__MIN(7, last) * rsa;                                                \
        DF__UNUSED(o4); DF__UNUSED(o5); DF__UNUSED(o6); DF__UNUSED(o7);                           \
        DF__ZT() c00 = DF__Z(setzero_ps)(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00; \
        DF__ZT() c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00; \
        for (int64_t p = 0; p < k; p++, a += csa, b += ldb) {                                     \
            DF__ZT() b0 = DF__ZX(maskz_loadu_ps)(m0, b), b1 = b0;                                 \
            if (nv > 1) b1 = DF__ZX(maskz_loadu_ps)(m1, b + 16);                                  \
            DF__ZS_ROW(0) DF__ZS_ROW(1) DF__ZS_ROW(2) DF__ZS_ROW(3)                               \
            if (R > 4) { DF__ZS_ROW(4) DF__ZS_ROW(5) DF__ZS_ROW(6) DF__ZS_ROW(7) }                \
        }                                                                                         \
        DF__ZS_STORE(0) DF__ZS_STORE(1) DF__ZS_STORE(2) DF__ZS_STORE(3)                           \
        if (R > 4) { DF__ZS_STORE(4) DF__ZS_STORE(5) DF__ZS_STORE(6) DF__ZS_STORE(7) }            \
    }
DF__ZSMALL(8, 2)
DF__ZSMALL(8, 1)
DF__ZSMALL(4, 2)
DF__ZSMALL(4, 1)
/* lanes of the first n (0..16) columns */
#define DF__ZS_MASK(n) ((n) >= 16 ? 0xFFFFu : (uint32_t)((1u << (n)) - 1u))
/* C = op(A) B (B not transposed, row stride ldb), float32 on AVX-512. */
static void df__zsmall_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, int ta, const float *b,
                           int64_t ldb, float *c, int64_t ldc) {
    const int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;
    for (int64_t j = 0; j < n; j += 32) {
        int64_t cols = DF__MIN(32, n - j);
        uint32_t m0 = DF__ZS_MASK(cols), m1 = cols > 16 ? DF__ZS_MASK(cols - 16) : 0;
        for (int64_t i = 0; i < m; i += 8) {
            int rows = (int)DF__MIN(8, m - i);
            const float *ap = a + i * rsa;
            float *cp = c + i * ldc + j;
            if (rows > 4) (cols > 16 ? df__zsmall_8x2 : df__zsmall_8x1)(k, ap, rsa, csa, b + j, ldb, cp, ldc, rows, m0, m1);
            else (cols > 16 ? df__zsmall_4x2 : df__zsmall_4x1)(k, ap, rsa, csa, b + j, ldb, cp, ldc, rows, m0, m1);
        }
    }
}
/* dst[p * n + j] = b[j * ldb + p] (k x n from B stored transposed, n rows of k) */
__attribute__((noinline)) static const float *df__gemm_transpose_f32(const float *b, int64_t ldb, int64_t k, int64_t n, float *dst) {
    int64_t j8 = 0, p8 = 0;
#ifndef DF_EMULATE_AVX512
    j8 = n / 8 * 8; p8 = k / 8 * 8;
    for (int64_t j = 0; j < j8; j += 8)
        for (int64_t p = 0; p < p8; p += 8) df__tr8x8_f32(b + j * ldb + p, ldb, dst + p * n + j, n);
#endif
    for (int64_t j = 0; j < n; j++)           /* what the 8 x 8 blocks left: the last rows, columns */
        for (int64_t p = j < j8 ? p8 : 0; p < k; p++) dst[p * n + j] = b[j * ldb + p];
    return dst;
}
/* C = op(A) op(B) through df__zsmall_f32; a transposed B is transposed first (on the stack when
   it is small). Returns 0 when memory ran out. */
#define DF__ZS_STACK 4096   /* floats of a transposed B kept on the stack (16 KiB) */
static int df__gemm_small_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, int ta, const float *b,
                              int64_t ldb, int tb, float *c, int64_t ldc) {
    if (!tb) { df__zsmall_f32(m, n, k, a, lda, ta, b, ldb, c, ldc); return 1; }
    float stack[DF__ZS_STACK], *bt = stack;
    if (k * n > DF__ZS_STACK && !(bt = (float *)DF_MALLOC((size_t)(k * n) * sizeof(float)))) return 0;
    df__zsmall_f32(m, n, k, a, lda, ta, df__gemm_transpose_f32(b, ldb, k, n, bt), n, c, ldc);
    if (bt != stack) DF_FREE(bt);
    return 1;
}
#endif

/* A few rows of A (at most DIRECT_ROWS) against a B of at most DIRECT_B_BYTES (it stays in L2) go
   the direct way: packing B would cost about as much as the product (an RNN step). */
#define DF__GEMM_DIRECT_ROWS 64
#define DF__GEMM_DIRECT_B_BYTES (512 * 1024)
/* One share of a blocked product: rows or columns [lo, hi) of C, with buffers of its own. */
typedef struct df__gemm_job {
    int dbl, isa;
    const df__gemm_cfg *g;
    int64_t m, n, k, lda, ldb, ldc;
    const void *a, *b;
    void *c;
    int ta, tb, split_rows, failed;
} df__gemm_job;
static void df__gemm_share(void *arg, int64_t lo, int64_t hi) {
    df__gemm_job *j = (df__gemm_job *)arg;
    const df__gemm_cfg *g = j->g;
    int64_t m0 = j->split_rows ? lo : 0, m1 = j->split_rows ? hi : j->m;
    int64_t n0 = j->split_rows ? 0 : lo, n1 = j->split_rows ? j->n : hi;
    if (m1 <= m0 || n1 <= n0) return;
    size_t es = j->dbl ? 8 : 4;
    if (!j->tb && m1 - m0 <= DF__GEMM_DIRECT_ROWS && (size_t)(j->k * (n1 - n0)) * es <= DF__GEMM_DIRECT_B_BYTES) {
        /* a few rows against a share of B that fits L2: no packing (as df__gemm_fp on one thread) */
        const char *a = (const char *)j->a + (size_t)(j->ta ? m0 : m0 * j->lda) * es;
        const char *b = (const char *)j->b + (size_t)n0 * es;
        char *c = (char *)j->c + (size_t)(m0 * j->ldc + n0) * es;
#ifdef DF__X86
        if (!j->dbl && j->isa == DF__ISA_AVX512) {
            df__zsmall_f32(m1 - m0, n1 - n0, j->k, (const float *)(const void *)a, j->lda, j->ta,
                           (const float *)(const void *)b, j->ldb, (float *)(void *)c, j->ldc);
            return;
        }
#endif
        int ok = j->dbl ? df__gemm_direct_double(g, j->isa, m1 - m0, n1 - n0, j->k, (const double *)a, j->lda, j->ta,
                                                 (const double *)b, j->ldb, (double *)c, j->ldc)
                        : df__gemm_direct_float(g, j->isa, m1 - m0, n1 - n0, j->k, (const float *)a, j->lda, j->ta,
                                                (const float *)b, j->ldb, (float *)c, j->ldc);
        if (!ok) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t kc = DF__MIN(g->kc, j->k);
    int64_t mc = (DF__MIN(g->mc, m1 - m0) + g->mr - 1) / g->mr * g->mr;
    int64_t nc = (DF__MIN(g->nc, n1 - n0) + g->nr - 1) / g->nr * g->nr;
    size_t abytes = (size_t)mc * (size_t)kc * es, bbytes = (size_t)nc * (size_t)kc * es;
    char *raw = (char *)DF_MALLOC(abytes + bbytes + 128);
    if (!raw) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); return; }
    char *abuf = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    char *bbuf = (char *)(((uintptr_t)abuf + abytes + 63) & ~(uintptr_t)63);
    if (j->dbl) df__gemm_blocked_double(g, j->isa, m0, m1, n0, n1, j->k, (const double *)j->a, j->lda, j->ta,
                                        (const double *)j->b, j->ldb, j->tb, (double *)j->c, j->ldc, (double *)abuf, (double *)bbuf);
    else df__gemm_blocked_float(g, j->isa, m0, m1, n0, n1, j->k, (const float *)j->a, j->lda, j->ta,
                                (const float *)j->b, j->ldb, j->tb, (float *)j->c, j->ldc, (float *)abuf, (float *)bbuf);
    DF_FREE(raw);
}

/* ---- bfloat16 GEMM: C[m,n] (float32) = op(A) op(B), A and B bfloat16 ----
   With AVX512_BF16 (detected at run time; AVX-512 kernels in use): vdpbf16ps multiplies pairs
   of bfloat16 along k (exact products) and adds them to float32 accumulators, twice the
   multiply-adds per instruction of the float32 kernel. Operands are packed as 32-bit pairs
   (k, k+1), a zero after an odd k's last: B once and whole, as 32-column panels [q][32 columns]
   shared by the threads; A per block, as 6-row slivers [q][6 rows]. The micro-kernel keeps a
   6 x 32 block of C in 12 registers, as the float32 one. Threads split the rows. */
#define DF__BF16_MC 240   /* rows of A per packed block */
#define DF__BF16_KQ 256   /* k pairs per block: a 32-column sliver of B is 32 KiB (L1) */
#if defined(DF__X86) && !defined(DF_EMULATE_AVX512)
#define DF__TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))
static int df__cpu_has_bf16(void) {
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
        if (v) { __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(1)); v = (eax >> 5) & 1; }
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}
DF__TARGET_BF16 static inline void df__bf16_store(float *cr, __m512 lo, __m512 hi, int acc) {
    if (acc) { lo = _mm512_add_ps(lo, _mm512_loadu_ps(cr)); hi = _mm512_add_ps(hi, _mm512_loadu_ps(cr + 16)); }
    _mm512_storeu_ps(cr, lo);
    _mm512_storeu_ps(cr + 16, hi);
}
/* C[6 x 32] (= or +=) the kq pairs of a 6-row sliver of A times a 32-column sliver of B */
DF__TARGET_BF16 static void df__ukr_bf16(int64_t kq, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc,
                                         int acc) {
    for (int r = 0; r < 6; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + 31), _MM_HINT_T0);
    }
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    _Pragma("GCC unroll 4")
    for (int64_t q = 0; q < kq; q++, a += 6, b += 32) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16), av;
        av = (__m512bh)_mm512_set1_epi32((int)a[0]); c00 = _mm512_dpbf16_ps(c00, av, b0); c01 = _mm512_dpbf16_ps(c01, av, b1);
        av = (__m512bh)_mm512_set1_epi32((int)a[1]); c10 = _mm512_dpbf16_ps(c10, av, b0); c11 = _mm512_dpbf16_ps(c11, av, b1);
        av = (__m512bh)_mm512_set1_epi32((int)a[2]); c20 = _mm512_dpbf16_ps(c20, av, b0); c21 = _mm512_dpbf16_ps(c21, av, b1);
        av = (__m512bh)_mm512_set1_epi32((int)a[3]); c30 = _mm512_dpbf16_ps(c30, av, b0); c31 = _mm512_dpbf16_ps(c31, av, b1);
        av = (__m512bh)_mm512_set1_epi32((int)a[4]); c40 = _mm512_dpbf16_ps(c40, av, b0); c41 = _mm512_dpbf16_ps(c41, av, b1);
        av = (__m512bh)_mm512_set1_epi32((int)a[5]); c50 = _mm512_dpbf16_ps(c50, av, b0); c51 = _mm512_dpbf16_ps(c51, av, b1);
    }
    df__bf16_store(c, c00, c01, acc); df__bf16_store(c + ldc, c10, c11, acc);
    df__bf16_store(c + 2 * ldc, c20, c21, acc); df__bf16_store(c + 3 * ldc, c30, c31, acc);
    df__bf16_store(c + 4 * ldc, c40, c41, acc); df__bf16_store(c + 5 * ldc, c50, c51, acc);
}
/* the pair (x[p], x[p + step]) of op(X) along k, the second 0 past k */
static inline uint32_t df__bf16_pair(const uint16_t *x, int64_t step, int64_t p, int64_t k) {
    return (uint32_t)x[0] | (p + 1 < k ? (uint32_t)x[step] << 16 : 0u);
}
typedef struct df__bf16_job {
    int64_t m, n, k, kq, lda, ldb, ldc;
    const uint16_t *a, *b;
    int ta, tb, failed;
    uint32_t *bp;          /* packed B: ceil(n / 32) panels of kq x 32 pairs */
    float *c;
} df__bf16_job;
/* Packs B's 32-column panels [lo, hi) (in columns). */
DF__TARGET_BF16 static void df__bf16_pack_b(void *arg, int64_t lo, int64_t hi) {
    df__bf16_job *j = (df__bf16_job *)arg;
    const int64_t k = j->k, kq = j->kq, ldb = j->ldb;
    /* interleaves 32 columns of rows 2q and 2q + 1: word 2c + e of the output is row e's column c */
    static const uint16_t lo_ix[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                                     8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i ix0 = _mm512_loadu_si512(lo_ix), ix1 = _mm512_add_epi16(ix0, _mm512_set1_epi16(16));
    for (int64_t j0 = lo; j0 < hi; j0 += 32) {
        int64_t cols = DF__MIN(32, j->n - j0);
        uint32_t *d = j->bp + (size_t)(j0 / 32) * (size_t)kq * 32;
        if (!j->tb) {
            __mmask32 mk = cols == 32 ? 0xffffffffu : (__mmask32)((1u << cols) - 1u);
            for (int64_t q = 0; q < kq; q++, d += 32) {
                const uint16_t *r0 = j->b + 2 * q * ldb + j0;
                __m512i x0 = _mm512_maskz_loadu_epi16(mk, r0);
                __m512i x1 = 2 * q + 1 < k ? _mm512_maskz_loadu_epi16(mk, r0 + ldb) : _mm512_setzero_si512();
                _mm512_storeu_si512(d, _mm512_permutex2var_epi16(x0, ix0, x1));
                _mm512_storeu_si512(d + 16, _mm512_permutex2var_epi16(x0, ix1, x1));
            }
        } else {
            for (int64_t q = 0; q < kq; q++, d += 32)
                for (int64_t c = 0; c < 32; c++)
                    d[c] = c < cols ? df__bf16_pair(j->b + (j0 + c) * ldb + 2 * q, 1, 2 * q, k) : 0u;
        }
    }
}
/* Packs rows [i0, i0 + mc) x pairs [q0, q0 + nq) of op(A) into 6-row slivers. */
static void df__bf16_pack_a(const df__bf16_job *j, int64_t i0, int64_t mc, int64_t q0, int64_t nq, uint32_t *dst) {
    const int64_t lda = j->lda, k = j->k;
    for (int64_t i = 0; i < mc; i += 6, dst += 6 * nq) {
        int64_t rows = DF__MIN(6, mc - i);
        /* full pairs of a full sliver, A not transposed, rows of whole pairs: the float packer on 32-bit pairs */
        int64_t whole = DF__MIN(nq, k / 2 - q0);
        int64_t done = 0;
        if (!j->ta && rows == 6 && !(lda & 1) && whole > 0) {
            df__pack_a6_avx2((const float *)(const void *)j->a, lda / 2, 0, i0 + i, q0, whole, (float *)(void *)dst);
            done = whole;
        }
        for (int64_t q = done; q < nq; q++)
            for (int64_t r = 0; r < 6; r++) {
                int64_t p = 2 * (q0 + q);
                dst[q * 6 + r] = r >= rows ? 0u : j->ta ? df__bf16_pair(j->a + p * lda + i0 + i + r, lda, p, k)
                                                         : df__bf16_pair(j->a + (i0 + i + r) * lda + p, 1, p, k);
            }
    }
}
static void df__bf16_share(void *arg, int64_t lo, int64_t hi) {
    df__bf16_job *j = (df__bf16_job *)arg;
    int64_t mcap = DF__MIN(DF__BF16_MC, (hi - lo + 5) / 6 * 6), kqcap = DF__MIN(DF__BF16_KQ, j->kq);
    uint32_t *abuf = (uint32_t *)DF_MALLOC((size_t)mcap * (size_t)kqcap * 4 + 64);
    if (!abuf) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); return; }
    float tile[6 * 32];
    for (int64_t ic = lo; ic < hi; ic += DF__BF16_MC) {
        int64_t mc = DF__MIN(DF__BF16_MC, hi - ic);
        for (int64_t qc = 0; qc < j->kq; qc += DF__BF16_KQ) {
            int64_t nq = DF__MIN(DF__BF16_KQ, j->kq - qc);
            df__bf16_pack_a(j, ic, mc, qc, nq, abuf);
            for (int64_t jr = 0; jr < j->n; jr += 32) {
                int64_t cols = DF__MIN(32, j->n - jr);
                const uint32_t *bp = j->bp + (size_t)(jr / 32) * (size_t)j->kq * 32 + (size_t)qc * 32;
                for (int64_t ir = 0; ir < mc; ir += 6) {
                    int64_t rows = DF__MIN(6, mc - ir);
                    const uint32_t *ap = abuf + (size_t)ir * (size_t)nq;
                    float *cp = j->c + (ic + ir) * j->ldc + jr;
                    if (rows == 6 && cols == 32) { df__ukr_bf16(nq, ap, bp, cp, j->ldc, qc > 0); continue; }
                    df__ukr_bf16(nq, ap, bp, tile, 32, 0);
                    for (int64_t r = 0; r < rows; r++)
                        for (int64_t c = 0; c < cols; c++)
                            cp[r * j->ldc + c] = qc > 0 ? cp[r * j->ldc + c] + tile[r * 32 + c] : tile[r * 32 + c];
                }
            }
        }
    }
    DF_FREE(abuf);
}
DF_PRIVATE int df__gemm_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t lda, int ta,
                             const uint16_t *b, int64_t ldb, int tb, float *c, int64_t ldc, struct df__ipool *pool,
                             int max_threads) {
    if (df__isa() != DF__ISA_AVX512 || !df__cpu_has_bf16()) return -1;
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0) { for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * 4); return 1; }
    df__bf16_job j;
    memset(&j, 0, sizeof j);
    j.m = m; j.n = n; j.k = k; j.kq = (k + 1) / 2; j.lda = lda; j.ldb = ldb; j.ldc = ldc;
    j.a = a; j.b = b; j.ta = ta; j.tb = tb; j.c = c;
    int64_t panels = (n + 31) / 32;
    void *raw = DF_MALLOC((size_t)panels * (size_t)j.kq * 32 * 4 + 64);
    if (!raw) return 0;
    j.bp = (uint32_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    /* threads as the float32 GEMM's, for twice the multiply-adds per share (they go twice as fast) */
    double macs = (double)m * (double)n * (double)k;
    int threads = macs < 16.0e6 ? 1 : (int)DF__MIN((double)df__ipool_threads(pool), macs / 8.0e6);
    if (max_threads > 0 && threads > max_threads) threads = max_threads;
    df__parallel_for(pool, n, 32, threads, df__bf16_pack_b, &j);
    df__parallel_for(pool, m, 6, threads, df__bf16_share, &j);
    DF_FREE(raw);
    return !j.failed;
}
#else
DF_PRIVATE int df__gemm_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t lda, int ta,
                             const uint16_t *b, int64_t ldb, int tb, float *c, int64_t ldc, struct df__ipool *pool,
                             int max_threads) {
    DF__UNUSED(m); DF__UNUSED(n); DF__UNUSED(k); DF__UNUSED(a); DF__UNUSED(lda); DF__UNUSED(ta); DF__UNUSED(b);
    DF__UNUSED(ldb); DF__UNUSED(tb); DF__UNUSED(c); DF__UNUSED(ldc); DF__UNUSED(pool); DF__UNUSED(max_threads);
    return -1;
}
#endif

/* C = op(A) op(B) for float (dbl 0) or double (dbl 1); row-major with leading dimensions; at
   most max_threads threads (0: as many as the pool has). Returns 0 when memory ran out. */
#define DF__GEMM_DIRECT_MAX (128 * 128 * 128)
DF_PRIVATE int df__gemm_fp(int dbl, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda, int ta,
                       const void *b, int64_t ldb, int tb, void *c, int64_t ldc, struct df__ipool *pool,
                       int max_threads) {
    size_t es = dbl ? 8 : 4;
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0) { for (int64_t i = 0; i < m; i++) memset((char *)c + (size_t)(i * ldc) * es, 0, (size_t)n * es); return 1; }
    int isa = df__isa();
    const df__gemm_cfg *g = &df__gemm_cfgs[dbl][isa];
    /* each thread's share at least ~4M multiply-adds: below, waking another thread costs more
       than it saves (an RNN step's 32 x 256 x 512 product ran slower on two threads than one) */
    double macs = (double)m * (double)n * (double)k;
    int threads = macs < 8.0e6 ? 1 : (int)DF__MIN((double)df__ipool_threads(pool), macs / 4.0e6);
    if (max_threads > 0 && threads > max_threads) threads = max_threads;
    /* Direct also for a few rows of A against a B that stays in L2 (an RNN step, batch x
       [x, h] times the gate kernel) when one thread does it; split over threads, each share
       takes the same way in df__gemm_share. */
    int few_rows = m <= DF__GEMM_DIRECT_ROWS && (size_t)(k * n) * es <= DF__GEMM_DIRECT_B_BYTES && threads <= 1;
#ifdef DF__X86
    /* float32 on AVX-512: the small kernels, a transposed B included (transposed first) */
    if (!dbl && isa == DF__ISA_AVX512 && (m * n * k <= DF__GEMM_DIRECT_MAX || few_rows))
        return df__gemm_small_f32(m, n, k, (const float *)a, lda, ta, (const float *)b, ldb, tb, (float *)c, ldc);
#endif
    if (!tb && (m * n * k <= DF__GEMM_DIRECT_MAX || few_rows))
        return dbl ? df__gemm_direct_double(g, isa, m, n, k, (const double *)a, lda, ta, (const double *)b, ldb, (double *)c, ldc)
                   : df__gemm_direct_float(g, isa, m, n, k, (const float *)a, lda, ta, (const float *)b, ldb, (float *)c, ldc);
    df__gemm_job j;
    memset(&j, 0, sizeof j);
    j.dbl = dbl; j.isa = isa; j.g = g; j.m = m; j.n = n; j.k = k; j.lda = lda; j.ldb = ldb; j.ldc = ldc;
    j.a = a; j.b = b; j.c = c; j.ta = ta; j.tb = tb;
    /* rows unless C is much wider than tall: each share then packs its rows of A (the costlier
       packing, a transpose into slivers) and all of B (row copies); by columns each would pack
       all of A */
    j.split_rows = 2 * m >= n;
    int64_t len = j.split_rows ? m : n, unit = j.split_rows ? g->mr : g->nr;
    df__parallel_for(pool, len, unit, threads, df__gemm_share, &j);
    return !j.failed;
}

/* The public entry: the same GEMM on caller-owned row-major matrices. Threads come from one
   process-wide intra-op pool made on first use (it lives as long as the process). */
#ifndef DF_NO_THREADS
static df__ipool *df__global_ipool;
#endif
static df_code df__gemm_public(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                               const void *b, int64_t ldb, void *c, int64_t ldc, int n_threads) {
    if (m < 0 || n < 0 || k < 0 || (m && n && !c) || (m && k && !a) || (k && n && !b)) return DF_INVALID_ARGUMENT;
    if ((m && k && lda < (ta ? m : k)) || (k && n && ldb < (tb ? k : n)) || (m && n && ldc < n)) return DF_INVALID_ARGUMENT;
    df__ipool *pool = NULL;
#ifndef DF_NO_THREADS
    if (n_threads > 1) {
        pool = __atomic_load_n(&df__global_ipool, __ATOMIC_ACQUIRE);
        if (!pool) {
            df__ipool *fresh = df__ipool_new(df__num_cores() - 1), *expected = NULL;
            if (fresh && !__atomic_compare_exchange_n(&df__global_ipool, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                df__ipool_free(fresh);
                fresh = expected;
            }
            pool = fresh;
        }
    }
#else
    DF__UNUSED(n_threads);
#endif
    return df__gemm_fp(dbl, m, n, k, a, lda, ta, b, ldb, tb, c, ldc, pool, n_threads) ? DF_OK : DF_RESOURCE_EXHAUSTED;
}
df_code df_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float *c, int64_t ldc, int n_threads) {
    return df__gemm_public(0, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, n_threads);
}
df_code df_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                    const double *b, int64_t ldb, double *c, int64_t ldc, int n_threads) {
    return df__gemm_public(1, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, n_threads);
}

/* int32 products: a plain loop with wrapping arithmetic, as TensorFlow's. */
static void df__gemm_int32(int64_t m, int64_t n, int64_t k, const int32_t *a, int ta, const int32_t *b, int tb, int32_t *o) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint32_t s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (uint32_t)(ta ? a[p * m + i] : a[i * k + p]) * (uint32_t)(tb ? b[j * k + p] : b[p * n + j]);
            o[i * n + j] = (int32_t)s;
        }
}
/* MatMul's product: float and double through the GEMM above. 0, with the kernel's status set,
   when memory ran out. */
static int df__gemm(df__kctx *c, df_dtype t, int64_t m, int64_t n, int64_t k, const void *a, int ta, const void *b,
                    int tb, void *o) {
    if (t == DF_INT32) { df__gemm_int32(m, n, k, (const int32_t *)a, ta, (const int32_t *)b, tb, (int32_t *)o); return 1; }
    if (df__gemm_fp(t == DF_DOUBLE, m, n, k, a, ta ? m : k, ta, b, tb ? k : n, tb, o, n, c->ipool, 0)) return 1;
    DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the matrix product's packing buffers");
    return 0;
}

static df_code df__matmul_dims(const df_node *node, int ra, const int64_t *da, int rb, const int64_t *db,
                               int ta, int tb, int64_t *m, int64_t *n, int64_t *k, df_status *st) {
    if (ra != 2 || rb != 2)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "In[0] and In[1] must be matrices, got ranks %d and %d", ra, rb);
    *m = ta ? da[1] : da[0];
    *k = ta ? da[0] : da[1];
    int64_t k2 = tb ? db[1] : db[0];
    *n = tb ? db[0] : db[1];
    if (*k >= 0 && k2 >= 0 && *k != k2) {
        char s1[96], s2[96];
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s "
                        "(transpose_a=%d, transpose_b=%d)", df__dims_str(ra, da, s1, 96), df__dims_str(rb, db, s2, 96), ta, tb);
    }
    return DF_OK;
}
DF_PRIVATE void df__k_matmul(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ta = df__attr_b(c->node, "transpose_a", 0), tb = df__attr_b(c->node, "transpose_b", 0);
    int64_t m = 0, n = 0, k = 0;
    if (df__matmul_dims(c->node, a->rank, a->dims, b->rank, b->dims, ta, tb, &m, &n, &k, c->st)) return;
    int64_t dims[2] = {m, n};
    df_tensor *o = df__k_alloc(c, 0, a->dtype, 2, dims);
    if (o && o->n) {
        if (k == 0) memset(o->data, 0, o->nbytes);
        else df__gemm(c, a->dtype, m, n, k, a->data, ta, b->data, tb, o->data);
    }
}
DF_PRIVATE df_code df__sf_matmul(df__shape_ctx *c) {
    const df__shape *a = &c->in_shapes[0], *b = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (a->rank < 0 || b->rank < 0) { o->rank = 2; o->dims[0] = o->dims[1] = -1; return DF_OK; }
    int64_t m = 0, n = 0, k = 0;
    if (df__matmul_dims(c->node, a->rank, a->dims, b->rank, b->dims, df__attr_b(c->node, "transpose_a", 0),
                        df__attr_b(c->node, "transpose_b", 0), &m, &n, &k, c->st)) return c->st->code;
    o->rank = 2; o->dims[0] = m; o->dims[1] = n;
    return DF_OK;
}

/* Batch dims broadcast; the last two are the matrices. */
static df_code df__bmm_shape(const df_node *node, int ra, const int64_t *da, int rb, const int64_t *db,
                             int adj_x, int adj_y, df__shape *out, df__bcast *bc, df_status *st) {
    if (ra < 2 || rb < 2)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "BatchMatMul inputs must have rank >= 2, got %d and %d", ra, rb);
    if (!df__broadcast(ra - 2, da, rb - 2, db, bc)) {
        char s1[96], s2[96];
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Batch dimensions do not broadcast: %s vs. %s",
                        df__dims_str(ra, da, s1, 96), df__dims_str(rb, db, s2, 96));
    }
    int64_t m = adj_x ? da[ra - 1] : da[ra - 2], k = adj_x ? da[ra - 2] : da[ra - 1];
    int64_t k2 = adj_y ? db[rb - 1] : db[rb - 2], n = adj_y ? db[rb - 2] : db[rb - 1];
    if (k >= 0 && k2 >= 0 && k != k2) {
        char s1[96], s2[96];
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s",
                        df__dims_str(ra, da, s1, 96), df__dims_str(rb, db, s2, 96));
    }
    if (bc->rank + 2 > DF_MAX_RANK) return df__fail(st, node, DF_INVALID_ARGUMENT, "Rank too large");
    out->rank = bc->rank + 2;
    memcpy(out->dims, bc->dims, (size_t)bc->rank * 8);
    out->dims[bc->rank] = m;
    out->dims[bc->rank + 1] = n;
    return DF_OK;
}
DF_PRIVATE df_code df__sf_bmm(df__shape_ctx *c) {
    const df__shape *a = &c->in_shapes[0], *b = &c->in_shapes[1];
    if (a->rank < 0 || b->rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    df__bcast bc;
    return df__bmm_shape(c->node, a->rank, a->dims, b->rank, b->dims, df__attr_b(c->node, "adj_x", 0),
                         df__attr_b(c->node, "adj_y", 0), df__sc_out(c, 0), &bc, c->st);
}
DF_PRIVATE void df__k_bmm(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ax = df__attr_b(c->node, "adj_x", 0), ay = df__attr_b(c->node, "adj_y", 0);
    df__shape os;
    df__bcast bc;
    if (df__bmm_shape(c->node, a->rank, a->dims, b->rank, b->dims, ax, ay, &os, &bc, c->st)) return;
    df_tensor *o = df__k_alloc(c, 0, a->dtype, os.rank, os.dims);
    if (!o || !o->n) return;
    int64_t m = os.dims[os.rank - 2], n = os.dims[os.rank - 1];
    int64_t k = ax ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    int64_t batches = 1, idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;
    for (int i = 0; i < bc.rank; i++) batches *= bc.dims[i];
    size_t es = df_dtype_size(a->dtype);
    int64_t sz_a = a->dims[a->rank - 2] * a->dims[a->rank - 1], sz_b = b->dims[b->rank - 2] * b->dims[b->rank - 1];
    for (int64_t bi = 0; bi < batches; bi++) {
        char *op = (char *)o->data + (size_t)(bi * m * n) * es;
        if (k == 0) memset(op, 0, (size_t)(m * n) * es);
        else if (!df__gemm(c, a->dtype, m, n, k, (const char *)a->data + (size_t)(oa * sz_a) * es, ax,
                           (const char *)b->data + (size_t)(ob * sz_b) * es, ay, op)) return;
        for (int d = bc.rank - 1; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}
