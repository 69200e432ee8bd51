/* test_gemm_split.c - the float32 and float64 GEMM split over two threads (by rows of C, or by
   columns when C is much wider than tall) gives the same bits as one thread on the packed path,
   and both agree with a float64 reference: square and odd shapes past every block size (rows
   past MC, depth past KC in uneven blocks, columns past NC), every transpose, strided operands;
   the direct path's overlapping last tile on shapes 1..67. Each kernel set in turn. Public API
   and the harness only; everything is freed. */
#include "harness.h"
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static uint64_t rng_state;
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* multiples of 2^-12 in [-1, 1): exact in float */
static double rng_value(void) { return (double)(int64_t)(rng_next() >> 51) / 4096.0 - 1.0; }

/* op(X) of r x c logical values v, stored transposed when t, row stride ld >= its row length,
   the padding NaN; as float (dbl 0) or double. */
static void *store(int dbl, const double *v, int64_t r, int64_t c, int t, int64_t ld) {
    int64_t rows = t ? c : r;
    size_t es = dbl ? 8 : 4, n = (size_t)(rows * ld + 1);
    void *buf = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
        if (dbl) ((double *)buf)[i] = NAN;
        else ((float *)buf)[i] = NAN;
    }
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            size_t at = (size_t)(t ? j * ld + i : i * ld + j);
            if (dbl) ((double *)buf)[at] = v[i * c + j];
            else ((float *)buf)[at] = (float)v[i * c + j];
        }
    return buf;
}
static double at(int dbl, const void *c, size_t i) { return dbl ? ((const double *)c)[i] : ((const float *)c)[i]; }

static df_code gemm(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                    const void *b, int64_t ldb, void *c, int64_t ldc, int threads) {
    return dbl ? df_gemm_f64(ta, tb, m, n, k, (const double *)a, lda, (const double *)b, ldb, (double *)c, ldc, threads)
               : df_gemm_f32(ta, tb, m, n, k, (const float *)a, lda, (const float *)b, ldb, (float *)c, ldc, threads);
}

/* One shape: 1 and 2 threads (same bits when `same`), each within rounding of the reference. */
static int split_case(const char *file, int line, int dbl, int64_t m, int64_t n, int64_t k, int ta, int tb, int same) {
    double *a = (double *)malloc((size_t)(m * k + 1) * sizeof(double)), *b = (double *)malloc((size_t)(k * n + 1) * sizeof(double));
    for (int64_t i = 0; i < m * k; i++) a[i] = rng_value();
    for (int64_t i = 0; i < k * n; i++) b[i] = rng_value();
    int64_t lda = (ta ? m : k) + (int64_t)(rng_next() % 3), ldb = (tb ? k : n) + (int64_t)(rng_next() % 3);
    int64_t ldc = n + (int64_t)(rng_next() % 3);
    void *sa = store(dbl, a, m, k, ta, lda), *sb = store(dbl, b, k, n, tb, ldb);
    double *zero = (double *)calloc((size_t)(m * n + 1), sizeof(double));
    void *c1 = store(dbl, zero, m, n, 0, ldc), *c2 = store(dbl, zero, m, n, 0, ldc);
    int bad = 0;
    df_code r1 = gemm(dbl, ta, tb, m, n, k, sa, lda, sb, ldb, c1, ldc, 1);
    df_code r2 = gemm(dbl, ta, tb, m, n, k, sa, lda, sb, ldb, c2, ldc, 2);
    if (r1 != DF_OK || r2 != DF_OK) {
        df_test_fail(file, line, "returned %s / %s", df_code_name(r1), df_code_name(r2));
        bad++;
    }
    double tol = dbl ? 1e-13 : 2e-6;
    for (int64_t i = 0; i < m && !bad; i++)
        for (int64_t j = 0; j < n && bad < 3; j++) {
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) { ref += a[i * k + p] * b[p * n + j]; mag += fabs(a[i * k + p] * b[p * n + j]); }
            size_t e = (size_t)(i * ldc + j);
            double g1 = at(dbl, c1, e), g2 = at(dbl, c2, e);
            if (!(fabs(g1 - ref) <= tol * mag) || !(fabs(g2 - ref) <= tol * mag)) {
                df_test_fail(file, line, "%s %lldx%lldx%lld ta=%d tb=%d isa=%s: C[%lld,%lld] = %.9g (1 thread), %.9g (2), want %.9g",
                             dbl ? "f64" : "f32", (long long)m, (long long)n, (long long)k, ta, tb, df_kernel_isa(),
                             (long long)i, (long long)j, g1, g2, ref);
                bad++;
            } else if (same && memcmp(dbl ? (const void *)&((const double *)c1)[e] : (const void *)&((const float *)c1)[e],
                                      dbl ? (const void *)&((const double *)c2)[e] : (const void *)&((const float *)c2)[e],
                                      dbl ? 8 : 4)) {
                df_test_fail(file, line, "%s %lldx%lldx%lld ta=%d tb=%d isa=%s: C[%lld,%lld] = %.9g with 2 threads, %.9g with 1",
                             dbl ? "f64" : "f32", (long long)m, (long long)n, (long long)k, ta, tb, df_kernel_isa(),
                             (long long)i, (long long)j, g2, g1);
                bad++;
            }
        }
    /* the padding of C is untouched */
    for (int64_t i = 0; i < m && !bad; i++)
        for (int64_t j = n; j < ldc; j++)
            if (!isnan(at(dbl, c1, (size_t)(i * ldc + j))) || !isnan(at(dbl, c2, (size_t)(i * ldc + j)))) {
                df_test_fail(file, line, "padding of C row %lld written", (long long)i);
                bad++;
                break;
            }
    free(a); free(b); free(sa); free(sb); free(zero); free(c1); free(c2);
    return bad;
}
#define SPLIT_CASE(dbl, m, n, k, ta, tb, same) split_case(__FILE__, __LINE__, dbl, m, n, k, ta, tb, same)

static void split_suite(uint64_t seed) {
    rng_state = seed;
    int bad = 0;
    /* over the two-thread threshold, on the packed path: square (rows split), wide (columns),
       tall, depth past KC in uneven blocks, columns past NC (4064 / 2032) */
    static const int64_t packed[][3] = {{256, 256, 256}, {250, 700, 130}, {8, 4100, 300},
                                        {700, 100, 520}, {1000, 64, 130}, {67, 257, 611}, {241, 241, 257}};
    for (int dbl = 0; dbl < 2; dbl++)
        for (int i = 0; i < LEN(packed) && !bad; i++)
            for (int t = 0; t < 4 && !bad; t += 1 + (i + dbl) % 3)   /* no transpose and one or two others */
                bad += SPLIT_CASE(dbl, packed[i][0], packed[i][1], packed[i][2], t >> 1, t & 1, 1);
    /* the direct path (small, B not transposed): the last tile overlapping the one before */
    static const int64_t odd[] = {1, 5, 6, 7, 13, 31, 32, 33, 47, 64, 65, 67};
    for (int s = 0; s < 40 && !bad; s++) {
        int64_t m = odd[rng_next() % LEN(odd)], n = odd[rng_next() % LEN(odd)], k = odd[rng_next() % LEN(odd)];
        bad += SPLIT_CASE(s & 1, m, n, k, (s >> 1) & 1, 0, 1);
    }
}

static int force(const char *isa) {
    df_code code = df_set_kernel_isa(isa);
    if (code == DF_UNAVAILABLE) { printf("    (no %s kernels on this CPU)\n", isa); return 0; }
    CHECK_EQ_INT(code, DF_OK);
    return code == DF_OK;
}
DF_TEST(gemm_split_avx512) { if (force("avx512")) split_suite(31); df_set_kernel_isa("auto"); }
DF_TEST(gemm_split_avx2) { if (force("avx2")) split_suite(32); df_set_kernel_isa("auto"); }
DF_TEST(gemm_split_portable) { if (force("portable")) split_suite(33); df_set_kernel_isa("auto"); }
