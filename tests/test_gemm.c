/* test_gemm.c - the matrix product: df_gemm_f32 and df_gemm_f64 against a float64 reference on
   shapes around the blocking sizes, every transpose, strided operands whose padding holds NaN,
   zero sizes, one and two threads, each micro-kernel forced in turn; IEEE propagation through
   zeros on the direct and the packed path; MatMul and BatchMatMulV2 in sessions with one and two
   intra-op threads; bad arguments. Public API and the harness only; everything is freed. */
#include "harness.h"
#include <pthread.h>
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---------------------------------------------------------------------------------------------
   Deterministic random numbers (splitmix64). Values are multiples of 2^-23 in [-1, 1): exact in
   float, so one float64 reference serves both precisions.
   --------------------------------------------------------------------------------------------- */
static uint64_t rng_state;
static void rng_seed(uint64_t seed) { rng_state = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull; }
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int64_t rng_below(int64_t n) { return (int64_t)(rng_next() % (uint64_t)n); }
static double rng_value(void) { return (double)(rng_next() >> 40) / 8388608.0 - 1.0; }

/* n doubles (at least one, so that empty products have somewhere to point); caller frees. */
static double *new_doubles(int64_t n) { return (double *)malloc((size_t)(n > 0 ? n : 1) * sizeof(double)); }

static double *random_matrix(int64_t rows, int64_t cols) {
    double *v = new_doubles(rows * cols);
    for (int64_t i = 0; i < rows * cols; i++) v[i] = rng_value();
    return v;
}

/* ---------------------------------------------------------------------------------------------
   Reference and strided storage
   --------------------------------------------------------------------------------------------- */
/* ref = a b (a: m x k, b: k x n, row-major) in float64; mag = sum over k of |a||b|, the scale
   of the rounding error any summation order may make. */
static void reference(const double *a, const double *b, int64_t m, int64_t n, int64_t k,
                      double *ref, double *mag) {
    for (int64_t i = 0; i < m * n; i++) ref[i] = mag[i] = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            double av = a[i * k + p];
            const double *br = b + p * n;
            double *rr = ref + i * n, *mr = mag + i * n;
            for (int64_t j = 0; j < n; j++) { rr[j] += av * br[j]; mr[j] += fabs(av) * fabs(br[j]); }
        }
}

/* A matrix as the library sees it: logical r x c values v stored transposed when t, row stride
   ld, the first element `off` elements into the buffer. Everything else in the buffer is NaN
   (dbl 0: float, 1: double). The buffer ends at the last stored element so that ASan sees any
   read past it. */
typedef struct strided {
    void *buf;
    size_t len;             /* elements in buf */
    int64_t ld, off;
} strided;

static double get_at(int dbl, const void *p, size_t i) {
    return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
static void set_at(int dbl, void *p, size_t i, double v) {
    if (dbl) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

static strided store_matrix(int dbl, const double *v, int64_t r, int64_t c, int t, int64_t pad,
                            int64_t off) {
    strided s;
    int64_t sr = t ? c : r, sc = t ? r : c;
    s.ld = sc + pad;
    s.off = off;
    s.len = (sr && sc) ? (size_t)(off + (sr - 1) * s.ld + sc) : (size_t)off + 1;
    s.buf = malloc(s.len * (dbl ? 8 : 4));
    for (size_t i = 0; i < s.len; i++) set_at(dbl, s.buf, i, NAN);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            set_at(dbl, s.buf, (size_t)(off + (t ? j * s.ld + i : i * s.ld + j)), v[i * c + j]);
    return s;
}
static const void *first(int dbl, const strided *s) {
    return (const char *)s->buf + (size_t)s->off * (dbl ? 8 : 4);
}

#define SENTINEL 1234.5

/* C's buffer: the m x n region (row stride ldc, at offset off) holds NaN, which a product that
   reads C before writing it would keep; everything else holds SENTINEL. */
static strided make_c(int dbl, int64_t m, int64_t n, int64_t pad, int64_t off) {
    strided s;
    s.ld = n + pad;
    s.off = off;
    s.len = (m && n) ? (size_t)(off + (m - 1) * s.ld + n) : (size_t)off + 1;
    s.buf = malloc(s.len * (dbl ? 8 : 4));
    for (size_t i = 0; i < s.len; i++) set_at(dbl, s.buf, i, SENTINEL);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) set_at(dbl, s.buf, (size_t)(off + i * s.ld + j), NAN);
    return s;
}

/* Checks C against ref within tol * mag (exact where mag is 0) and that nothing outside the
   region changed. Returns the number of bad elements; reports the first few with `what`. */
static int check_c(const char *file, int line, int dbl, const strided *c, int64_t m, int64_t n,
                   const double *ref, const double *mag, double tol, const char *what) {
    int bad = 0;
    for (size_t idx = 0; idx < c->len; idx++) {
        int64_t rel = (int64_t)idx - c->off, i = -1, j = -1;
        if (rel >= 0 && m && n) { i = rel / c->ld; j = rel % c->ld; }
        int inside = i >= 0 && i < m && j >= 0 && j < n;
        double got = get_at(dbl, c->buf, idx);
        if (!inside) {
            if (!(got == SENTINEL) && bad++ < 3)
                df_test_fail(file, line, "%s: element %lld outside C was overwritten with %.9g",
                             what, (long long)rel, got);
            continue;
        }
        double want = ref[i * n + j], err = fabs(got - want);
        if (!(err <= tol * mag[i * n + j]) && bad++ < 3)
            df_test_fail(file, line, "%s: C[%lld,%lld] = %.17g, want %.17g (error %.3g, allowed %.3g)",
                         what, (long long)i, (long long)j, got, want, err, tol * mag[i * n + j]);
    }
    return bad;
}

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* One call of df_gemm_f32/_f64 on logical a (m x k) and b (k x n) with the given transposes,
   pads and thread count, checked against ref/mag. Returns the number of bad elements. */
static int gemm_case(const char *file, int line, int dbl, int ta, int tb, int64_t m, int64_t n,
                     int64_t k, const double *a, const double *b, const double *ref,
                     const double *mag, int64_t pad_a, int64_t pad_b, int64_t pad_c, int64_t off,
                     int threads) {
    strided sa = store_matrix(dbl, a, m, k, ta, pad_a, off);
    strided sb = store_matrix(dbl, b, k, n, tb, pad_b, off ? off + 1 : 0);
    strided sc = make_c(dbl, m, n, pad_c, off ? off + 2 : 0);
    char what[200];
    snprintf(what, sizeof what, "%s m=%lld n=%lld k=%lld ta=%d tb=%d lda=%lld ldb=%lld ldc=%lld "
             "threads=%d isa=%s", dbl ? "df_gemm_f64" : "df_gemm_f32",
             (long long)m, (long long)n, (long long)k, ta, tb, (long long)sa.ld, (long long)sb.ld,
             (long long)sc.ld, threads, df_kernel_isa());
    df_code code;
    void *c0 = (char *)sc.buf + (size_t)sc.off * (dbl ? 8 : 4);
    if (dbl)
        code = df_gemm_f64(ta, tb, m, n, k, (const double *)first(1, &sa), sa.ld,
                           (const double *)first(1, &sb), sb.ld, (double *)c0, sc.ld, threads);
    else
        code = df_gemm_f32(ta, tb, m, n, k, (const float *)first(0, &sa), sa.ld,
                           (const float *)first(0, &sb), sb.ld, (float *)c0, sc.ld, threads);
    int bad = 0;
    if (code != DF_OK) {
        df_test_fail(file, line, "%s: returned %s", what, df_code_name(code));
        bad = 1;
    } else {
        bad = check_c(file, line, dbl, &sc, m, n, ref, mag, dbl ? TOL_F64 : TOL_F32, what);
    }
    free(sa.buf); free(sb.buf); free(sc.buf);
    return bad;
}

/* Every precision and transpose combination for one shape. threads_mode 0: one thread, 1: two,
   2: both; 3 and 4 (for big shapes): each transpose combination once, the precision and the
   thread count taking both values in turn, 4 the other way round from 3. Random pads (often
   zero, so that tight storage is covered too) and offsets. Stops at the first failing call so
   that one bug does not flood the log. */
static int gemm_shape(const char *file, int line, int64_t m, int64_t n, int64_t k, int threads_mode) {
    double *a = random_matrix(m, k), *b = random_matrix(k, n);
    double *ref = new_doubles(m * n), *mag = new_doubles(m * n);
    reference(a, b, m, n, k, ref, mag);
    static const int64_t pads[] = {0, 0, 1, 3, 8, 17};
    int bad = 0;
    for (int dbl = 0; dbl < 2 && !bad; dbl++)
        for (int t = 0; t < 4 && !bad; t++)
            for (int th = 1; th <= 2 && !bad; th++) {
                if ((threads_mode == 0 && th == 2) || (threads_mode == 1 && th == 1)) continue;
                if (threads_mode >= 3) {
                    int phase = threads_mode - 3;
                    if (dbl != ((t + phase) & 1) || th != 1 + (((t >> 1) + phase) & 1)) continue;
                }
                int64_t pa = pads[rng_below(LEN(pads))], pb = pads[rng_below(LEN(pads))];
                int64_t pc = pads[rng_below(LEN(pads))], off = rng_below(4);
                bad += gemm_case(file, line, dbl, t >> 1, t & 1, m, n, k, a, b, ref, mag, pa, pb, pc,
                                 off, th);
            }
    free(a); free(b); free(ref); free(mag);
    return bad;
}
#define GEMM_SHAPE(m, n, k, mode) gemm_shape(__FILE__, __LINE__, m, n, k, mode)

/* Sizes around the blocking: micro-tile edges (4, 6, 8, 16), MC (72, 96, 128, 240), KC (256). */
static const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 7, 15, 16, 17, 31, 32, 33, 47, 48, 49,
                                95, 96, 97, 127, 128, 129, 191, 255, 256, 257, 300};

/* The shape suite, under whatever kernels are selected now. */
static void gemm_suite(uint64_t seed) {
    rng_seed(seed);
    int bad = 0;
    /* every tiny shape: all the edge-tile cases of every micro-kernel */
    for (int64_t m = 1; m <= 7 && !bad; m++)
        for (int64_t n = 1; n <= 7 && !bad; n++)
            for (int64_t k = 1; k <= 7 && !bad; k += 2) bad += GEMM_SHAPE(m, n, k, (int)((m + n + k) % 3));
    /* zero sizes: k = 0 writes zeros, m = 0 or n = 0 writes nothing */
    static const int64_t zeros[][3] = {{0, 5, 7}, {5, 0, 7}, {5, 7, 0}, {0, 0, 0}, {0, 0, 5},
                                       {0, 9, 0}, {17, 33, 0}};
    for (int i = 0; i < LEN(zeros) && !bad; i++) bad += GEMM_SHAPE(zeros[i][0], zeros[i][1], zeros[i][2], 2);
    /* random shapes from the sizes list, kept moderate */
    for (int drawn = 0; drawn < 30 && !bad;) {
        int64_t m = sizes[rng_below(LEN(sizes))], n = sizes[rng_below(LEN(sizes))];
        int64_t k = sizes[rng_below(LEN(sizes))];
        if (m * n * k > 300000) continue;
        drawn++;
        bad += GEMM_SHAPE(m, n, k, (int)rng_below(5));
    }
    /* chosen ones: past KC, past every MC, just over the direct path's limit (128^3), past every
       NC, and products over the threading threshold (4M) split by rows, by columns, and by
       columns past NC; a few rows against a B that fits L2 (direct on one thread, blocked on two:
       an RNN step's shape, with edge tiles both ways) */
    static const int64_t chosen[][4] = {
        {17, 33, 257, 2}, {241, 17, 9, 2}, {49, 97, 300, 2}, {129, 128, 128, 3},
        {3, 4100, 15, 2}, {250, 64, 260, 3}, {250, 64, 260, 4}, {64, 250, 260, 3},
        {64, 250, 260, 4}, {4, 4100, 260, 3}, {4, 4100, 260, 4}, {33, 500, 257, 2},
    };
    for (int i = 0; i < LEN(chosen) && !bad; i++)
        bad += GEMM_SHAPE(chosen[i][0], chosen[i][1], chosen[i][2], (int)chosen[i][3]);
}

/* Forces kernels by name; 1 if they are in use, 0 (with a printed line) if this CPU lacks them. */
static int force_isa(const char *isa) {
    df_code code = df_set_kernel_isa(isa);
    if (code == DF_UNAVAILABLE) {
        printf("    (this CPU has no %s kernels: skipping that part)\n", isa);
        return 0;
    }
    CHECK_MSG(code == DF_OK, "df_set_kernel_isa(\"%s\") returned %s", isa, df_code_name(code));
    CHECK_MSG(!strcmp(df_kernel_isa(), isa), "df_kernel_isa() is %s after setting %s", df_kernel_isa(), isa);
    return code == DF_OK;
}

/* ---------------------------------------------------------------------------------------------
   The GEMM itself
   --------------------------------------------------------------------------------------------- */
DF_TEST(gemm_kernel_isa_selection) {
    CHECK_EQ_INT(df_set_kernel_isa("portable"), DF_OK);
    CHECK(!strcmp(df_kernel_isa(), "portable"));
    df_code avx2 = df_set_kernel_isa("avx2");
    CHECK_MSG(avx2 == DF_OK || avx2 == DF_UNAVAILABLE, "avx2: %s", df_code_name(avx2));
    if (avx2 == DF_OK) CHECK(!strcmp(df_kernel_isa(), "avx2"));
    else {
        printf("    (this CPU has no avx2 kernels)\n");
        CHECK(!strcmp(df_kernel_isa(), "portable"));   /* a refused request changes nothing */
    }
    /* refused names leave the setting as it was */
    CHECK_EQ_INT(df_set_kernel_isa("portable"), DF_OK);
    df_code avx512 = df_set_kernel_isa("avx512");
    CHECK_MSG(avx512 == DF_OK || avx512 == DF_UNAVAILABLE, "avx512: %s", df_code_name(avx512));
    CHECK(!strcmp(df_kernel_isa(), avx512 == DF_OK ? "avx512" : "portable"));
    CHECK_EQ_INT(df_set_kernel_isa("portable"), DF_OK);
    CHECK_EQ_INT(df_set_kernel_isa("sse9"), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_set_kernel_isa(""), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_set_kernel_isa("AVX2x"), DF_INVALID_ARGUMENT);
    CHECK(!strcmp(df_kernel_isa(), "portable"));
    /* auto: the best this CPU has */
    CHECK_EQ_INT(df_set_kernel_isa("auto"), DF_OK);
    CHECK(!strcmp(df_kernel_isa(), avx512 == DF_OK ? "avx512" : avx2 == DF_OK ? "avx2" : "portable"));
}

DF_TEST(gemm_shapes_portable_kernels) {
    if (force_isa("portable")) gemm_suite(11);
    df_set_kernel_isa("auto");
}

DF_TEST(gemm_shapes_avx2_kernels) {
    if (force_isa("avx2")) gemm_suite(12);
    df_set_kernel_isa("auto");
}

/* On CPUs without AVX-512 this kernel runs in the build with DF_EMULATE_AVX512 (build.sh test). */
DF_TEST(gemm_shapes_avx512_kernels) {
    if (force_isa("avx512")) gemm_suite(13);
    df_set_kernel_isa("auto");
}

/* A case with NaN or inf among zeros, checked element by element against float64 arithmetic
   (which skips nothing): NaN exactly where the reference has NaN, the exact value elsewhere. */
static void ieee_case(const char *file, int line, int dbl, int ta, int tb, int64_t m, int64_t n,
                      int64_t k) {
    double *a = (double *)calloc((size_t)(m * k), sizeof(double));
    double *b = (double *)calloc((size_t)(k * n), sizeof(double));
    /* B: zeros but NaN, +inf and -inf in the last column, the first and a middle one (the NaN in
       the last row of B, past the first KC block where k allows); A: zeros but one inf in its
       last row, which meets B's zeros: 0 * NaN, 0 * inf and inf * 0 must all give NaN */
    int64_t p1 = k - 1, p2 = k / 2, p3 = 0;
    b[p1 * n + (n - 1)] = NAN;
    b[p2 * n + 0] = INFINITY;
    if (n > 2) b[p3 * n + n / 2] = -INFINITY;
    if (m > 1) a[(m - 1) * k + k / 3] = INFINITY;
    double *ref = new_doubles(m * n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
            ref[i * n + j] = s;
        }
    strided sa = store_matrix(dbl, a, m, k, ta, 0, 0), sb = store_matrix(dbl, b, k, n, tb, 0, 0);
    strided sc = make_c(dbl, m, n, 0, 0);
    df_code code = dbl ? df_gemm_f64(ta, tb, m, n, k, (const double *)sa.buf, sa.ld, (const double *)sb.buf,
                                     sb.ld, (double *)sc.buf, sc.ld, 1)
                       : df_gemm_f32(ta, tb, m, n, k, (const float *)sa.buf, sa.ld, (const float *)sb.buf,
                                     sb.ld, (float *)sc.buf, sc.ld, 1);
    if (code != DF_OK) df_test_fail(file, line, "returned %s", df_code_name(code));
    else {
        int bad = 0, n_nan = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double got = get_at(dbl, sc.buf, (size_t)(i * sc.ld + j)), want = ref[i * n + j];
                n_nan += isnan(want);
                int ok = isnan(want) ? isnan(got) : got == want;
                if (!ok && bad++ < 3)
                    df_test_fail(file, line, "%s m=%lld n=%lld k=%lld ta=%d tb=%d isa=%s: C[%lld,%lld] = %g, want %g",
                                 dbl ? "f64" : "f32", (long long)m, (long long)n, (long long)k, ta, tb,
                                 df_kernel_isa(), (long long)i, (long long)j, got, want);
            }
        if (n_nan < m) df_test_fail(file, line, "the case has too few NaNs to mean anything");
    }
    free(a); free(b); free(ref); free(sa.buf); free(sb.buf); free(sc.buf);
}

static void ieee_suite(void) {
    /* direct path (B not transposed, small), full tiles and edge tiles; then the packed path:
       B transposed, a product over 128^3, and k past one KC block */
    static const int64_t shapes[][4] = {
        {6, 16, 4, 0}, {7, 19, 5, 0}, {12, 32, 9, 0}, {3, 5, 2, 0},
        {6, 16, 4, 1}, {7, 19, 5, 1}, {130, 130, 130, 0}, {9, 20, 300, 1}, {9, 20, 300, 0},
    };
    for (int dbl = 0; dbl < 2; dbl++)
        for (int i = 0; i < LEN(shapes); i++)
            for (int ta = 0; ta < 2; ta++)
                ieee_case(__FILE__, __LINE__, dbl, ta, (int)shapes[i][3], shapes[i][0], shapes[i][1], shapes[i][2]);
}

DF_TEST(gemm_ieee_no_zero_skipping) {
    if (force_isa("portable")) ieee_suite();
    if (force_isa("avx2")) ieee_suite();
    if (force_isa("avx512")) ieee_suite();
    df_set_kernel_isa("auto");
}

DF_TEST(gemm_bad_arguments) {
    float a[64], b[64], c[64];
    for (int i = 0; i < 64; i++) { a[i] = b[i] = 1; c[i] = (float)SENTINEL; }
    /* sizes */
    CHECK_EQ_INT(df_gemm_f32(0, 0, -1, 2, 2, a, 2, b, 2, c, 2, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 2, -1, 2, a, 2, b, 2, c, 2, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 2, 2, -1, a, 2, b, 2, c, 2, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 2, 2, INT64_MIN, a, 2, b, 2, c, 2, 1), DF_INVALID_ARGUMENT);
    /* NULL with something to read or write */
    CHECK_EQ_INT(df_gemm_f32(0, 0, 2, 2, 2, NULL, 2, b, 2, c, 2, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 2, 2, 2, a, 2, NULL, 2, c, 2, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 2, 2, 2, a, 2, b, 2, NULL, 2, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 2, 2, 0, a, 2, b, 2, NULL, 2, 1), DF_INVALID_ARGUMENT);
    /* leading dimensions shorter than a stored row: A is m x k (k x m when ta), B k x n (n x k) */
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 4, 5, a, 4, b, 4, c, 4, 1), DF_INVALID_ARGUMENT);  /* lda < k */
    CHECK_EQ_INT(df_gemm_f32(1, 0, 3, 4, 5, a, 2, b, 4, c, 4, 1), DF_INVALID_ARGUMENT);  /* lda < m */
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 4, 5, a, 5, b, 3, c, 4, 1), DF_INVALID_ARGUMENT);  /* ldb < n */
    CHECK_EQ_INT(df_gemm_f32(0, 1, 3, 4, 5, a, 5, b, 4, c, 4, 1), DF_INVALID_ARGUMENT);  /* ldb < k */
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 4, 5, a, 5, b, 4, c, 3, 1), DF_INVALID_ARGUMENT);  /* ldc < n */
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 4, 5, a, -5, b, 4, c, 4, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 4, 5, a, 5, b, 4, c, -4, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f64(0, 0, 3, 4, 5, (const double *)NULL, 5, (const double *)NULL, 4, NULL, 4, 1),
                 DF_INVALID_ARGUMENT);
    double ad[16] = {0}, bd[20] = {0}, cd[12];
    for (int i = 0; i < 12; i++) cd[i] = SENTINEL;
    CHECK_EQ_INT(df_gemm_f64(1, 0, 3, 4, 5, ad, 2, bd, 4, cd, 4, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f64(0, 1, 3, 4, 5, ad, 5, bd, 4, cd, 4, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f64(0, 0, 3, 4, 5, ad, 5, bd, 4, cd, 3, 1), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_gemm_f64(0, 0, -3, 4, 5, ad, 5, bd, 4, cd, 4, 1), DF_INVALID_ARGUMENT);
    for (int i = 0; i < 12; i++) CHECK_MSG(cd[i] == SENTINEL, "a refused call wrote C[%d]", i);
    for (int i = 0; i < 64; i++) CHECK_MSG(c[i] == (float)SENTINEL, "a refused call wrote C[%d]", i);
    /* the strides that are right for the transposes are accepted: ta with lda = m < k, tb with
       ldb = k < n */
    CHECK_EQ_INT(df_gemm_f32(0, 1, 3, 7, 2, a, 2, b, 2, c, 7, 1), DF_OK);
    for (int i = 0; i < 21; i++) CHECK_NEAR(c[i], 2.0, 0);
    CHECK_EQ_INT(df_gemm_f32(1, 0, 3, 4, 5, a, 3, b, 4, c, 4, 1), DF_OK);
    for (int i = 0; i < 12; i++) CHECK_NEAR(c[i], 5.0, 0);
    /* nothing to read or write: NULL is fine; thread counts 0 and negative mean one thread */
    CHECK_EQ_INT(df_gemm_f32(0, 0, 0, 4, 5, NULL, 5, b, 4, NULL, 4, 1), DF_OK);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 0, 5, a, 5, NULL, 0, NULL, 0, 1), DF_OK);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 4, 5, a, 5, b, 4, c, 4, 0), DF_OK);
    CHECK_EQ_INT(df_gemm_f32(0, 0, 3, 4, 5, a, 5, b, 4, c, 4, -3), DF_OK);
    for (int i = 0; i < 12; i++) CHECK_NEAR(c[i], 5.0, 0);
    for (int i = 0; i < 4; i++) c[i] = NAN;
    CHECK_EQ_INT(df_gemm_f32(0, 0, 1, 4, 0, NULL, 0, NULL, 4, c, 4, 1), DF_OK);   /* k = 0: zeros */
    for (int i = 0; i < 4; i++) CHECK_NEAR(c[i], 0.0, 0);
}

/* Two threads calling the threaded GEMM at once share its process-wide pool. */
typedef struct concurrent_job {
    int dbl;
    int64_t m, n, k;
    const double *a, *b, *ref, *mag;
    int bad;
} concurrent_job;
static void *concurrent_main(void *arg) {
    concurrent_job *j = (concurrent_job *)arg;
    for (int rep = 0; rep < 2; rep++)
        j->bad += gemm_case(__FILE__, __LINE__, j->dbl, rep, 0, j->m, j->n, j->k, j->a, j->b, j->ref, j->mag,
                            0, 0, 0, 0, 2);
    return NULL;
}
DF_TEST(gemm_concurrent_callers) {
    rng_seed(31);
    int64_t m = 160, n = 140, k = 190;   /* 4.3M multiply-adds: over the threading threshold */
    double *a = random_matrix(m, k), *b = random_matrix(k, n);
    double *ref = new_doubles(m * n), *mag = new_doubles(m * n);
    reference(a, b, m, n, k, ref, mag);
    concurrent_job jobs[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        jobs[i].dbl = i; jobs[i].m = m; jobs[i].n = n; jobs[i].k = k;
        jobs[i].a = a; jobs[i].b = b; jobs[i].ref = ref; jobs[i].mag = mag; jobs[i].bad = 0;
        CHECK(pthread_create(&th[i], NULL, concurrent_main, &jobs[i]) == 0);
    }
    for (int i = 0; i < 2; i++) { pthread_join(th[i], NULL); CHECK_EQ_INT(jobs[i].bad, 0); }
    free(a); free(b); free(ref); free(mag);
}

/* ---------------------------------------------------------------------------------------------
   Through the ops: MatMul and BatchMatMulV2 in sessions
   --------------------------------------------------------------------------------------------- */
/* A tensor of dtype dt (float, double or int32) and shape dims holding v (converted). */
static df_tensor *tensor_of(df_dtype dt, int rank, const int64_t *dims, const double *v) {
    df_status st;
    df_status_clear(&st);
    df_tensor *t = df_tensor_new(dt, rank, dims, &st);
    if (!t) { df_test_fail(__FILE__, __LINE__, "df_tensor_new: %s", st.message); return NULL; }
    int64_t n = df_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) {
        if (dt == DF_INT32) ((int32_t *)df_tensor_data(t))[i] = (int32_t)v[i];
        else set_at(dt == DF_DOUBLE, df_tensor_data(t), (size_t)i, v[i]);
    }
    return t;
}

/* Logical batch of count matrices r x c (v, batch-major) as a tensor with batch dims bdims and
   the matrices stored transposed when t. */
static df_tensor *batch_tensor(df_dtype dt, int brank, const int64_t *bdims, int64_t r, int64_t c, int t,
                               const double *v) {
    int64_t dims[DF_MAX_RANK], count = 1;
    for (int i = 0; i < brank; i++) { dims[i] = bdims[i]; count *= bdims[i]; }
    dims[brank] = t ? c : r;
    dims[brank + 1] = t ? r : c;
    double *s = new_doubles(count * r * c);
    for (int64_t q = 0; q < count; q++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++)
                s[q * r * c + (t ? j * r + i : i * c + j)] = v[q * r * c + i * c + j];
    df_tensor *out = tensor_of(dt, brank + 2, dims, s);
    free(s);
    return out;
}

static df_output konst(df_graph *g, df_tensor *t) {
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}

/* Runs y in a fresh session with `intra` intra-op threads; the caller releases the result. */
static df_tensor *run_threads(const char *file, int line, df_graph *g, df_output y, int intra) {
    const df_status *gs = df_graph_status(g);
    if (gs && gs->code != DF_OK) {
        df_test_fail(file, line, "graph error: %s", gs->message);
        return NULL;
    }
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = intra;
    df_status st;
    df_status_clear(&st);
    df_session *s = df_session_new(g, &o, &st);
    if (!s) { df_test_fail(file, line, "df_session_new: %s", st.message); return NULL; }
    df_tensor *out = NULL;
    df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
    df_session_free(s);
    if (st.code != DF_OK) {
        df_test_fail(file, line, "run: %s: %s", df_code_name(st.code), st.message);
        df_tensor_release(out);
        return NULL;
    }
    return out;
}

/* t has dtype dt, shape dims, and values within tol * mag of ref (exact where mag is 0). */
static void expect_close(const char *file, int line, const df_tensor *t, df_dtype dt, int rank,
                         const int64_t *dims, const double *ref, const double *mag, const char *what) {
    if (!t) return;
    if (df_tensor_dtype(t) != dt || df_tensor_rank(t) != rank) {
        df_test_fail(file, line, "%s: dtype %s rank %d, want %s rank %d", what,
                     df_dtype_name(df_tensor_dtype(t)), df_tensor_rank(t), df_dtype_name(dt), rank);
        return;
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        n *= dims[i];
        if (df_tensor_dim(t, i) != dims[i]) {
            df_test_fail(file, line, "%s: dim %d is %lld, want %lld", what, i,
                         (long long)df_tensor_dim(t, i), (long long)dims[i]);
            return;
        }
    }
    double tol = dt == DF_DOUBLE ? TOL_F64 : TOL_F32;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double got = get_at(dt == DF_DOUBLE, df_tensor_data(t), (size_t)i);
        if (!(fabs(got - ref[i]) <= tol * mag[i]) && bad++ < 3)
            df_test_fail(file, line, "%s: element %lld is %.17g, want %.17g", what, (long long)i, got, ref[i]);
    }
}

DF_TEST(gemm_matmul_op_transposes_and_threads) {
    rng_seed(41);
    static const int64_t shapes[][3] = {{37, 29, 45}, {6, 16, 8}, {130, 150, 220}};
    for (int s = 0; s < LEN(shapes); s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        double *a = random_matrix(m, k), *b = random_matrix(k, n);
        double *ref = new_doubles(m * n), *mag = new_doubles(m * n);
        reference(a, b, m, n, k, ref, mag);
        for (int d = 0; d < 2; d++) {
            df_dtype dt = d ? DF_DOUBLE : DF_FLOAT;
            for (int t = 0; t < 4; t++) {
                int ta = t >> 1, tb = t & 1;
                df_graph *g = df_graph_new();
                df_output y = df_matmul(g, konst(g, batch_tensor(dt, 0, NULL, m, k, ta, a)),
                                        konst(g, batch_tensor(dt, 0, NULL, k, n, tb, b)), ta, tb);
                int64_t od[2] = {m, n}, sd[DF_MAX_RANK];
                CHECK(y.node && df_output_shape(y, sd) == 2 && sd[0] == m && sd[1] == n);
                for (int intra = 1; intra <= 2; intra++) {
                    char what[128];
                    snprintf(what, sizeof what, "MatMul %s %lldx%lldx%lld transpose_a=%d transpose_b=%d intra=%d",
                             df_dtype_name(dt), (long long)m, (long long)n, (long long)k, ta, tb, intra);
                    df_tensor *out = run_threads(__FILE__, __LINE__, g, y, intra);
                    expect_close(__FILE__, __LINE__, out, dt, 2, od, ref, mag, what);
                    df_tensor_release(out);
                }
                df_graph_free(g);
            }
        }
        free(a); free(b); free(ref); free(mag);
    }
}

/* NumPy broadcasting of batch dims, as BatchMatMulV2 does. Returns the output batch rank. */
static int bcast_batch(int ra, const int64_t *da, int rb, const int64_t *db, int64_t *out) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
        out[i] = x == 1 ? y : x;
    }
    return r;
}
/* Index of the operand's batch (shape d, rank ra) that output batch q (shape od, rank r) reads. */
static int64_t batch_source(int ra, const int64_t *d, int r, const int64_t *od, int64_t q) {
    int64_t idx = 0, stride = 1;
    for (int i = r - 1; i >= 0; i--) {
        int64_t coord = q % od[i];
        q /= od[i];
        int ia = i - (r - ra);
        if (ia < 0) continue;
        idx += (d[ia] == 1 ? 0 : coord) * stride;
        stride *= d[ia];
    }
    return idx;
}

static void bmm_case(const char *file, int line, df_dtype dt, int ra, const int64_t *da, int rb,
                     const int64_t *db, int64_t m, int64_t n, int64_t k, int adj_x, int adj_y) {
    int64_t count_a = 1, count_b = 1, count_o = 1, ob[DF_MAX_RANK];
    for (int i = 0; i < ra; i++) count_a *= da[i];
    for (int i = 0; i < rb; i++) count_b *= db[i];
    int r = bcast_batch(ra, da, rb, db, ob);
    for (int i = 0; i < r; i++) count_o *= ob[i];
    double *a = random_matrix(count_a * m, k), *b = random_matrix(count_b * k, n);
    double *ref = new_doubles(count_o * m * n), *mag = new_doubles(count_o * m * n);
    for (int64_t q = 0; q < count_o; q++)
        reference(a + batch_source(ra, da, r, ob, q) * m * k, b + batch_source(rb, db, r, ob, q) * k * n,
                  m, n, k, ref + q * m * n, mag + q * m * n);
    df_graph *g = df_graph_new();
    df_op_builder *bl = df_op_new(g, "BatchMatMulV2", NULL);
    df_op_add_input(bl, konst(g, batch_tensor(dt, ra, da, m, k, adj_x, a)));
    df_op_add_input(bl, konst(g, batch_tensor(dt, rb, db, k, n, adj_y, b)));
    df_op_set_attr_bool(bl, "adj_x", adj_x);
    df_op_set_attr_bool(bl, "adj_y", adj_y);
    df_output y = {df_op_finish(bl), 0};
    int64_t od[DF_MAX_RANK];
    for (int i = 0; i < r; i++) od[i] = ob[i];
    od[r] = m;
    od[r + 1] = n;
    int64_t sd[DF_MAX_RANK];
    if (!y.node || df_output_shape(y, sd) != r + 2) df_test_fail(file, line, "BatchMatMulV2 static shape");
    else
        for (int i = 0; i < r + 2; i++)
            if (sd[i] != od[i]) df_test_fail(file, line, "BatchMatMulV2 static dim %d: %lld", i, (long long)sd[i]);
    for (int intra = 1; intra <= 2; intra++) {
        char what[160];
        snprintf(what, sizeof what, "BatchMatMulV2 %s ranks %d,%d m=%lld n=%lld k=%lld adj_x=%d adj_y=%d intra=%d",
                 df_dtype_name(dt), ra + 2, rb + 2, (long long)m, (long long)n, (long long)k, adj_x, adj_y, intra);
        df_tensor *out = run_threads(file, line, g, y, intra);
        expect_close(file, line, out, dt, r + 2, od, ref, mag, what);
        df_tensor_release(out);
    }
    df_graph_free(g);
    free(a); free(b); free(ref); free(mag);
}

DF_TEST(gemm_batch_matmul_broadcast_and_adjoints) {
    rng_seed(51);
    for (int d = 0; d < 2; d++) {
        df_dtype dt = d ? DF_DOUBLE : DF_FLOAT;
        for (int t = 0; t < 4; t++) {
            int ax = t >> 1, ay = t & 1;
            /* [2,1] x [3] -> [2,3]; a plain matrix against a batch; a batch against a matrix */
            bmm_case(__FILE__, __LINE__, dt, 2, (const int64_t[]){2, 1}, 1, (const int64_t[]){3}, 5, 9, 7, ax, ay);
            bmm_case(__FILE__, __LINE__, dt, 0, NULL, 2, (const int64_t[]){2, 2}, 7, 17, 13, ax, ay);
            bmm_case(__FILE__, __LINE__, dt, 1, (const int64_t[]){3}, 0, NULL, 33, 20, 40, ax, ay);
            bmm_case(__FILE__, __LINE__, dt, 3, (const int64_t[]){1, 2, 1}, 2, (const int64_t[]){2, 1}, 6, 16, 3,
                     ax, ay);
        }
        /* batches big enough for the threaded path */
        bmm_case(__FILE__, __LINE__, dt, 1, (const int64_t[]){2}, 1, (const int64_t[]){1}, 120, 130, 270, !d, d);
    }
}

DF_TEST(gemm_matmul_empty_and_k_zero) {
    for (int d = 0; d < 2; d++) {
        df_dtype dt = d ? DF_DOUBLE : DF_FLOAT;
        static const double none[1] = {0};
        static const double zeros[64] = {0};
        /* k = 0: a [3,0] (or [0,3] transposed) times b [0,4] (or [4,0]): zeros of [3,4] */
        for (int t = 0; t < 4; t++) {
            int ta = t >> 1, tb = t & 1;
            df_graph *g = df_graph_new();
            int64_t da[2] = {ta ? 0 : 3, ta ? 3 : 0}, db[2] = {tb ? 4 : 0, tb ? 0 : 4}, od[2] = {3, 4};
            df_output y = df_matmul(g, konst(g, tensor_of(dt, 2, da, none)),
                                    konst(g, tensor_of(dt, 2, db, none)), ta, tb);
            for (int intra = 1; intra <= 2; intra++) {
                df_tensor *out = run_threads(__FILE__, __LINE__, g, y, intra);
                expect_close(__FILE__, __LINE__, out, dt, 2, od, zeros, zeros, "MatMul with k = 0");
                df_tensor_release(out);
            }
            df_graph_free(g);
        }
        /* m = 0 and n = 0: empty results of the right shapes */
        {
            df_graph *g = df_graph_new();
            double v[20];
            for (int i = 0; i < 20; i++) v[i] = i;
            df_output y0 = df_matmul(g, konst(g, tensor_of(dt, 2, (const int64_t[]){0, 5}, none)),
                                     konst(g, tensor_of(dt, 2, (const int64_t[]){5, 4}, v)), 0, 0);
            df_output y1 = df_matmul(g, konst(g, tensor_of(dt, 2, (const int64_t[]){5, 4}, v)),
                                     konst(g, tensor_of(dt, 2, (const int64_t[]){0, 5}, none)), 1, 1);
            df_output y2 = df_matmul(g, konst(g, tensor_of(dt, 2, (const int64_t[]){4, 5}, v)),
                                     konst(g, tensor_of(dt, 2, (const int64_t[]){5, 0}, none)), 0, 0);
            df_tensor *o0 = run_threads(__FILE__, __LINE__, g, y0, 2);
            df_tensor *o1 = run_threads(__FILE__, __LINE__, g, y1, 2);
            df_tensor *o2 = run_threads(__FILE__, __LINE__, g, y2, 1);
            expect_close(__FILE__, __LINE__, o0, dt, 2, (const int64_t[]){0, 4}, zeros, zeros, "MatMul m = 0");
            expect_close(__FILE__, __LINE__, o1, dt, 2, (const int64_t[]){4, 0}, zeros, zeros,
                         "MatMul n = 0 (transposed)");
            expect_close(__FILE__, __LINE__, o2, dt, 2, (const int64_t[]){4, 0}, zeros, zeros, "MatMul n = 0");
            df_tensor_release(o0); df_tensor_release(o1); df_tensor_release(o2);
            df_graph_free(g);
        }
        /* BatchMatMulV2 with k = 0: zeros; with an empty batch: an empty result */
        {
            df_graph *g = df_graph_new();
            df_op_builder *bl = df_op_new(g, "BatchMatMulV2", NULL);
            df_op_add_input(bl, konst(g, tensor_of(dt, 3, (const int64_t[]){2, 3, 0}, none)));
            df_op_add_input(bl, konst(g, tensor_of(dt, 2, (const int64_t[]){0, 4}, none)));
            df_output y = {df_op_finish(bl), 0};
            bl = df_op_new(g, "BatchMatMulV2", NULL);
            df_op_add_input(bl, konst(g, tensor_of(dt, 3, (const int64_t[]){0, 3, 2}, none)));
            df_op_add_input(bl, konst(g, tensor_of(dt, 3, (const int64_t[]){1, 2, 4}, zeros)));
            df_output e = {df_op_finish(bl), 0};
            df_tensor *o = run_threads(__FILE__, __LINE__, g, y, 2), *oe = run_threads(__FILE__, __LINE__, g, e, 1);
            expect_close(__FILE__, __LINE__, o, dt, 3, (const int64_t[]){2, 3, 4}, zeros, zeros,
                         "BatchMatMulV2 k = 0");
            expect_close(__FILE__, __LINE__, oe, dt, 3, (const int64_t[]){0, 3, 4}, zeros, zeros,
                         "BatchMatMulV2 empty batch");
            df_tensor_release(o); df_tensor_release(oe);
            df_graph_free(g);
        }
    }
}

/* int32 takes the plain loop beside the GEMM: every transpose, exact, wrapping on overflow. */
DF_TEST(gemm_matmul_int32_transposes) {
    rng_seed(61);
    int64_t m = 7, n = 9, k = 11;
    double a[77], b[99];
    for (int i = 0; i < 77; i++) a[i] = (double)(rng_below(41) - 20);
    for (int i = 0; i < 99; i++) b[i] = (double)(rng_below(41) - 20);
    a[0] = 65536; b[0] = 65536;   /* their product, 2^32, wraps to 0 inside C[0,0] */
    double ref[63];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint32_t s = 0;
            for (int64_t p = 0; p < k; p++) s += (uint32_t)(int32_t)a[i * k + p] * (uint32_t)(int32_t)b[p * n + j];
            ref[i * n + j] = (double)(int32_t)s;
        }
    for (int t = 0; t < 4; t++) {
        int ta = t >> 1, tb = t & 1;
        df_graph *g = df_graph_new();
        int64_t da[2] = {ta ? k : m, ta ? m : k}, db[2] = {tb ? n : k, tb ? k : n};
        double sa[77], sb[99];
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) sa[ta ? p * m + i : i * k + p] = a[i * k + p];
        for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < n; j++) sb[tb ? j * k + p : p * n + j] = b[p * n + j];
        df_output y = df_matmul(g, konst(g, tensor_of(DF_INT32, 2, da, sa)), konst(g, tensor_of(DF_INT32, 2, db, sb)),
                                ta, tb);
        df_tensor *out = run_threads(__FILE__, __LINE__, g, y, 2);
        if (out) {
            CHECK_EQ_INT(df_tensor_dtype(out), DF_INT32);
            CHECK_EQ_INT(df_tensor_num_elements(out), m * n);
            if (df_tensor_num_elements(out) == m * n)
                for (int64_t i = 0; i < m * n; i++)
                    CHECK_MSG(((const int32_t *)df_tensor_data(out))[i] == (int32_t)ref[i],
                              "int32 MatMul ta=%d tb=%d element %lld: %d, want %d", ta, tb, (long long)i,
                              ((const int32_t *)df_tensor_data(out))[i], (int32_t)ref[i]);
        }
        df_tensor_release(out);
        df_graph_free(g);
    }
}
