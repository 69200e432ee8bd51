/* test_small_gemm.c - the float32 GEMM's small-product path on AVX-512 (8- and 4-row tiles of one
   or two 16-lane vectors, masked edge columns, a transposed B transposed into a buffer first):
   every transpose, every edge of rows (1..17) and columns (1..70), depths 0..300, strided operands
   whose padding holds NaN (a masked load that reads past its columns would spread it), C's padding
   left alone; against a float64 reference loop, and bit for bit against the AVX2 kernels (the same
   chain of fused multiply-adds per element) where depths fit one block; the digits RNN's shapes;
   MatMul in a session. Public API and the harness only; everything is freed. */
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

/* op(X) of r x c logical values v, stored transposed when t, row stride ld; the rest NaN. The
   buffer ends at the last stored element (ASan sees a read past it). */
static float *store(const double *v, int64_t r, int64_t c, int t, int64_t ld, size_t *len) {
    int64_t rows = t ? c : r, cols = t ? r : c;
    size_t n = rows && cols ? (size_t)((rows - 1) * ld + cols) : 1;
    float *buf = (float *)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) buf[i] = NAN;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) buf[t ? j * ld + i : i * ld + j] = (float)v[i * c + j];
    if (len) *len = n;
    return buf;
}

/* C = op(A) op(B) with the named kernels (NULL: as set); C's buffer NaN first. */
static float *run(const char *isa, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, int64_t ldc, df_code *code) {
    size_t len = m && n ? (size_t)((m - 1) * ldc + n) : 1;
    float *c = (float *)malloc(len * sizeof(float));
    for (size_t i = 0; i < len; i++) c[i] = NAN;
    if (isa) df_set_kernel_isa(isa);
    *code = df_gemm_f32(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, 1);
    if (isa) df_set_kernel_isa("auto");
    return c;
}

/* One shape: the AVX-512 result within rounding of the reference, C's padding still NaN, and
   (have_avx2, k <= 256) the same bits as the AVX2 kernels. Returns the number of failures. */
static int small_case(const char *file, int line, int64_t m, int64_t n, int64_t k, int ta, int tb, int have_avx2) {
    double *av = (double *)malloc((size_t)(m * k + 1) * sizeof(double)), *bv = (double *)malloc((size_t)(k * n + 1) * sizeof(double));
    for (int64_t i = 0; i < m * k; i++) av[i] = rng_value();
    for (int64_t i = 0; i < k * n; i++) bv[i] = rng_value();
    int64_t lda = (ta ? m : k) + (int64_t)(rng_next() % 3), ldb = (tb ? k : n) + (int64_t)(rng_next() % 3);
    int64_t ldc = n + (int64_t)(rng_next() % 3);
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    if (ldc < 1) ldc = 1;
    float *a = store(av, m, k, ta, lda, NULL), *b = store(bv, k, n, tb, ldb, NULL);
    df_code c1, c2 = DF_OK;
    float *got = run("avx512", ta, tb, m, n, k, a, lda, b, ldb, ldc, &c1);
    float *ref2 = have_avx2 && k <= 256 ? run("avx2", ta, tb, m, n, k, a, lda, b, ldb, ldc, &c2) : NULL;
    int bad = 0;
    if (c1 != DF_OK || c2 != DF_OK) {
        df_test_fail(file, line, "%lldx%lldx%lld ta=%d tb=%d: returned %s / %s", (long long)m, (long long)n, (long long)k,
                     ta, tb, df_code_name(c1), df_code_name(c2));
        bad++;
    }
    for (int64_t i = 0; i < m && !bad; i++)
        for (int64_t j = 0; j < ldc && bad < 3; j++) {
            if (i == m - 1 && j >= n) break;        /* the buffer ends at C's last element */
            float g = got[i * ldc + j];
            if (j >= n) {
                if (!isnan(g)) { df_test_fail(file, line, "%lldx%lldx%lld ta=%d tb=%d: padding C[%lld,%lld] written", (long long)m,
                                              (long long)n, (long long)k, ta, tb, (long long)i, (long long)j); bad++; }
                continue;
            }
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) { ref += av[i * k + p] * bv[p * n + j]; mag += fabs(av[i * k + p] * bv[p * n + j]); }
            if (!(fabs((double)g - ref) <= 2e-6 * mag)) {
                df_test_fail(file, line, "%lldx%lldx%lld ta=%d tb=%d: C[%lld,%lld] = %.9g, want %.9g", (long long)m, (long long)n,
                             (long long)k, ta, tb, (long long)i, (long long)j, (double)g, ref);
                bad++;
            } else if (ref2 && memcmp(&g, &ref2[i * ldc + j], sizeof g)) {
                df_test_fail(file, line, "%lldx%lldx%lld ta=%d tb=%d: C[%lld,%lld] = %.9g, the AVX2 kernels %.9g", (long long)m,
                             (long long)n, (long long)k, ta, tb, (long long)i, (long long)j, (double)g, (double)ref2[i * ldc + j]);
                bad++;
            }
        }
    free(av); free(bv); free(a); free(b); free(got); free(ref2);
    return bad;
}
#define SMALL_CASE(m, n, k, ta, tb, x) small_case(__FILE__, __LINE__, m, n, k, ta, tb, x)

static int have(const char *isa) {
    df_code code = df_set_kernel_isa(isa);
    df_set_kernel_isa("auto");
    if (code == DF_UNAVAILABLE) printf("    (no %s kernels on this CPU)\n", isa);
    return code == DF_OK;
}

DF_TEST(small_gemm_every_edge_and_transpose) {
    if (!have("avx512")) return;
    int avx2 = have("avx2"), bad = 0;
    rng_state = 41;
    /* rows across the 4- and 8-row tiles, columns across one and two vectors and past 32 */
    static const int64_t rows[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17};
    static const int64_t cols[] = {1, 5, 15, 16, 17, 31, 32, 33, 47, 48, 49, 64, 70};
    static const int64_t depths[] = {1, 2, 7, 8, 9, 33};
    for (int t = 0; t < 4 && !bad; t++)
        for (int i = 0; i < LEN(rows) && !bad; i++)
            for (int j = 0; j < LEN(cols) && !bad; j++)
                bad += SMALL_CASE(rows[i], cols[j], depths[(i + j + t) % LEN(depths)], t >> 1, t & 1, avx2);
    CHECK_EQ_INT(bad, 0);
}

DF_TEST(small_gemm_deep_and_empty) {
    if (!have("avx512")) return;
    int avx2 = have("avx2"), bad = 0;
    rng_state = 42;
    /* deeper than one packed block (k > 256: the packed path's sums differ, the reference holds),
       a transposed B over the stack buffer (k * n > 4096 floats: a heap copy), few rows against a
       B that fits L2 (past the 128^3 limit) */
    static const int64_t shapes[][3] = {{5, 9, 300}, {9, 33, 257}, {3, 70, 100}, {64, 128, 40}, {40, 200, 300}, {2, 513, 300}};
    for (int t = 0; t < 4 && !bad; t++)
        for (int i = 0; i < LEN(shapes) && !bad; i++) bad += SMALL_CASE(shapes[i][0], shapes[i][1], shapes[i][2], t >> 1, t & 1, avx2);
    CHECK_EQ_INT(bad, 0);
    /* k = 0 writes zeros; m = 0 or n = 0 writes nothing */
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[6];
    for (int tb = 0; tb < 2; tb++) {
        for (int i = 0; i < 6; i++) c[i] = NAN;
        CHECK_EQ_INT(df_gemm_f32(0, tb, 2, 3, 0, a, 1, b, 3, c, 3, 1), DF_OK);
        for (int i = 0; i < 6; i++) CHECK(c[i] == 0);
        for (int i = 0; i < 6; i++) c[i] = NAN;
        CHECK_EQ_INT(df_gemm_f32(0, tb, 0, 3, 2, a, 2, b, tb ? 2 : 3, c, 3, 1), DF_OK);
        CHECK_EQ_INT(df_gemm_f32(0, tb, 2, 0, 2, a, 2, b, tb ? 2 : 1, c, 1, 1), DF_OK);
        for (int i = 0; i < 6; i++) CHECK(isnan(c[i]));
    }
}

/* The products of a digits RNN training step (batch 64, 8 inputs, 32 units, 10 classes). */
DF_TEST(small_gemm_rnn_step_shapes) {
    if (!have("avx512")) return;
    int avx2 = have("avx2"), bad = 0;
    rng_state = 43;
    static const int64_t shapes[][5] = {{64, 32, 8, 0, 0}, {64, 32, 32, 0, 0}, {8, 32, 64, 1, 0}, {32, 32, 64, 1, 0},
                                        {64, 32, 32, 0, 1}, {64, 8, 32, 0, 1}, {64, 10, 32, 0, 0}, {32, 10, 64, 1, 0},
                                        {64, 32, 10, 0, 1}, {1, 32, 32, 1, 1}};
    for (int i = 0; i < LEN(shapes) && !bad; i++)
        bad += SMALL_CASE(shapes[i][0], shapes[i][1], shapes[i][2], (int)shapes[i][3], (int)shapes[i][4], avx2);
    CHECK_EQ_INT(bad, 0);
}

/* IEEE: a NaN or inf among zeros reaches C (no product is skipped), through both transposes. */
DF_TEST(small_gemm_nan_and_inf_propagate) {
    if (!have("avx512")) return;
    df_set_kernel_isa("avx512");
    for (int tb = 0; tb < 2; tb++) {
        float a[3 * 5] = {0}, b[5 * 20] = {0}, c[3 * 20];
        b[tb ? 19 * 5 + 4 : 4 * 20 + 19] = NAN;     /* B[4][19] */
        a[1 * 5 + 2] = INFINITY;                    /* A[1][2] meets B's zero row 2 */
        CHECK_EQ_INT(df_gemm_f32(0, tb, 3, 20, 5, a, 5, b, tb ? 5 : 20, c, 20, 1), DF_OK);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 20; j++) {
                int want_nan = j == 19 || i == 1;
                CHECK_MSG(want_nan ? isnan(c[i * 20 + j]) : c[i * 20 + j] == 0, "tb=%d C[%d,%d] = %g", tb, i, j, (double)c[i * 20 + j]);
            }
    }
    df_set_kernel_isa("auto");
}

/* MatMul in a session with every transpose: the op's products go the same way. */
DF_TEST(small_gemm_matmul_op_transposes) {
    for (int t = 0; t < 4; t++) {
        int ta = t >> 1, tb = t & 1;
        enum { M = 13, N = 19, K = 11 };
        float av[M * K], bv[K * N];
        for (int i = 0; i < M * K; i++) av[i] = (float)((i * 7) % 13) / 8 - 0.75f;
        for (int i = 0; i < K * N; i++) bv[i] = (float)((i * 5) % 11) / 4 - 1.25f;
        float as[M * K], bs[K * N];     /* stored transposed where asked */
        for (int i = 0; i < M; i++) for (int p = 0; p < K; p++) as[ta ? p * M + i : i * K + p] = av[i * K + p];
        for (int p = 0; p < K; p++) for (int j = 0; j < N; j++) bs[tb ? j * K + p : p * N + j] = bv[p * N + j];
        int64_t da[2] = {ta ? K : M, ta ? M : K}, db[2] = {tb ? N : K, tb ? K : N};
        df_graph *g = df_graph_new();
        df_tensor *ta_t = df_tensor_from_data(DF_FLOAT, 2, da, as, sizeof as, NULL);
        df_tensor *tb_t = df_tensor_from_data(DF_FLOAT, 2, db, bs, sizeof bs, NULL);
        df_output x = df_const(g, ta_t), y = df_const(g, tb_t);
        df_tensor_release(ta_t);
        df_tensor_release(tb_t);
        df_output z = df_matmul(g, x, y, ta, tb);
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        df_tensor *out = NULL;
        CHECK(s != NULL);
        if (s && df_session_run(s, NULL, NULL, 0, &z, &out, 1, NULL, 0, &st) == DF_OK) {
            const float *o = (const float *)df_tensor_data(out);
            int bad = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double ref = 0;
                    for (int p = 0; p < K; p++) ref += (double)av[i * K + p] * bv[p * N + j];
                    if (fabs(o[i * N + j] - ref) > 1e-5 && bad++ < 3)
                        CHECK_MSG(0, "ta=%d tb=%d: [%d,%d] = %g, want %g", ta, tb, i, j, (double)o[i * N + j], ref);
                }
            df_tensor_release(out);
        } else CHECK_OK(&st);
        df_session_free(s);
        df_graph_free(g);
    }
}
