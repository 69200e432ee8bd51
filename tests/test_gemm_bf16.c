/* test_gemm_bf16.c - bfloat16 MatMul in sessions (the AVX512_BF16 GEMM where the CPU has it, the
   float32 GEMM and one rounding elsewhere) against a float64 reference of the same bfloat16
   inputs: odd shapes 1..67, every transpose, odd and even k, k past one packed block (512), rows
   past one packed block (240), columns off the 32-wide panels; one and two intra-op threads give
   the same bits; the same graph with the float32 kernels forced agrees within bfloat16's
   rounding. Public API and the harness only; everything is freed. */
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
/* a value exact in bfloat16: 8 significant bits, magnitude in [2^-4, 2) or 0 */
static float rng_bf16_value(void) {
    uint64_t r = rng_next();
    if ((r & 15) == 0) return 0.0f;
    float v = (float)((r >> 8) & 0xff) / 128.0f + 1.0f / 16.0f;
    return df_bfloat16_to_float(df_float_to_bfloat16((r & 16) ? -v : v));
}

/* An r x c bfloat16 tensor holding logical values v (row-major r x c), stored transposed when t. */
static df_tensor *bf16_matrix(int64_t r, int64_t c, int t, const float *v) {
    int64_t dims[2] = {t ? c : r, t ? r : c};
    df_status st;
    df_tensor *x = df_tensor_new(DF_BFLOAT16, 2, dims, &st);
    if (!x) return NULL;
    uint16_t *d = (uint16_t *)df_tensor_data(x);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) d[t ? j * r + i : i * c + j] = df_float_to_bfloat16(v[i * c + j]);
    return x;
}

/* y = op(A) op(B) run with `intra` intra-op threads; NULL (a failure recorded) on error. */
static df_tensor *run_matmul(const char *file, int line, df_tensor *a, df_tensor *b, int ta, int tb, int intra) {
    df_graph *g = df_graph_new();
    df_output y = df_matmul(g, df_const(g, a), df_const(g, b), ta, tb);
    const df_status *gs = df_graph_status(g);
    if (gs && gs->code != DF_OK) {
        df_test_fail(file, line, "graph error: %s", gs->message);
        df_graph_free(g);
        return NULL;
    }
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = intra;
    df_status st;
    df_status_clear(&st);
    df_session *s = df_session_new(g, &o, &st);
    df_tensor *out = NULL;
    if (!s) df_test_fail(file, line, "df_session_new: %s", st.message);
    else {
        df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
        df_session_free(s);
        if (st.code != DF_OK) {
            df_test_fail(file, line, "run: %s: %s", df_code_name(st.code), st.message);
            df_tensor_release(out);
            out = NULL;
        }
    }
    df_graph_free(g);
    return out;
}

/* One shape: bfloat16 results within the rounding of the result (2^-8 relative, one half ulp
   plus the float32 sums' error) of the float64 product; 2 threads bit for bit as 1; returns
   the number of failures. */
static int bf16_case(const char *file, int line, int64_t m, int64_t n, int64_t k, int ta, int tb) {
    float *av = (float *)malloc((size_t)(m * k + 1) * sizeof(float));
    float *bv = (float *)malloc((size_t)(k * n + 1) * sizeof(float));
    for (int64_t i = 0; i < m * k; i++) av[i] = rng_bf16_value();
    for (int64_t i = 0; i < k * n; i++) bv[i] = rng_bf16_value();
    df_tensor *a = bf16_matrix(m, k, ta, av), *b = bf16_matrix(k, n, tb, bv);
    int bad = 0;
    df_tensor *y1 = run_matmul(file, line, a, b, ta, tb, 1), *y2 = run_matmul(file, line, a, b, ta, tb, 2);
    if (!y1 || !y2) bad++;
    else if (df_tensor_dtype(y1) != DF_BFLOAT16 || df_tensor_rank(y1) != 2 || df_tensor_dim(y1, 0) != m ||
             df_tensor_dim(y1, 1) != n) {
        df_test_fail(file, line, "m=%lld n=%lld k=%lld: result is %s rank %d", (long long)m, (long long)n,
                     (long long)k, df_dtype_name(df_tensor_dtype(y1)), df_tensor_rank(y1));
        bad++;
    } else {
        const uint16_t *g1 = (const uint16_t *)df_tensor_data(y1), *g2 = (const uint16_t *)df_tensor_data(y2);
        for (int64_t i = 0; i < m && bad < 3; i++)
            for (int64_t j = 0; j < n && bad < 3; j++) {
                double ref = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    double t = (double)av[i * k + p] * (double)bv[p * n + j];
                    ref += t;
                    mag += fabs(t);
                }
                double got = df_bfloat16_to_float(g1[i * n + j]);
                double tol = fabs(ref) / 256.0 + mag * 1e-6;
                if (!(fabs(got - ref) <= tol)) {
                    df_test_fail(file, line, "m=%lld n=%lld k=%lld ta=%d tb=%d: C[%lld,%lld] = %.9g, want %.9g",
                                 (long long)m, (long long)n, (long long)k, ta, tb, (long long)i, (long long)j, got, ref);
                    bad++;
                }
                if (g2[i * n + j] != g1[i * n + j]) {
                    df_test_fail(file, line, "m=%lld n=%lld k=%lld ta=%d tb=%d: C[%lld,%lld] differs with 2 threads "
                                 "(0x%04x vs 0x%04x)", (long long)m, (long long)n, (long long)k, ta, tb, (long long)i,
                                 (long long)j, g2[i * n + j], g1[i * n + j]);
                    bad++;
                }
            }
    }
    df_tensor_release(y1);
    df_tensor_release(y2);
    df_tensor_release(a);
    df_tensor_release(b);
    free(av);
    free(bv);
    return bad;
}
#define BF16_CASE(m, n, k, ta, tb) bf16_case(__FILE__, __LINE__, m, n, k, ta, tb)

static void bf16_suite(uint64_t seed) {
    rng_state = seed;
    int bad = 0;
    /* odd shapes 1..67 (below 32^3 multiply-adds the float path runs: both are checked) */
    static const int64_t odd[] = {1, 2, 5, 6, 7, 31, 32, 33, 47, 64, 65, 67};
    for (int s = 0; s < 24 && !bad; s++) {
        int64_t m = odd[rng_next() % LEN(odd)], n = odd[rng_next() % LEN(odd)], k = odd[rng_next() % LEN(odd)];
        bad += BF16_CASE(m, n, k, s & 1, (s >> 1) & 1);
    }
    /* blocks: k past one block of 256 pairs (odd and even), rows past 240, columns off 32 */
    static const int64_t chosen[][3] = {{67, 33, 513}, {6, 32, 1030}, {250, 70, 97}, {41, 129, 600},
                                        {245, 65, 514}, {64, 64, 64}, {33, 67, 1}, {12, 40, 2}};
    for (int i = 0; i < LEN(chosen) && !bad; i++)
        for (int t = 0; t < 4 && !bad; t++) bad += BF16_CASE(chosen[i][0], chosen[i][1], chosen[i][2], t >> 1, t & 1);
}

DF_TEST(gemm_bf16_matmul_shapes_and_threads) {
    bf16_suite(7);
}

/* The float32 kernels forced (no bfloat16 instructions): the same checks hold. */
DF_TEST(gemm_bf16_matmul_float_path) {
    df_code code = df_set_kernel_isa("avx2");
    if (code == DF_UNAVAILABLE) code = df_set_kernel_isa("portable");
    CHECK_EQ_INT(code, DF_OK);
    bf16_suite(8);
    df_set_kernel_isa("auto");
}

/* k = 0 and empty products give zeros and empty results, not errors. */
DF_TEST(gemm_bf16_matmul_empty_and_k_zero) {
    float one = 1.0f;
    static const int64_t shapes[][3] = {{40, 40, 0}, {0, 40, 40}, {40, 0, 40}};
    for (int s = 0; s < LEN(shapes); s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *av = (float *)calloc((size_t)(m * k + 1), sizeof(float)), *bv = (float *)calloc((size_t)(k * n + 1), sizeof(float));
        av[0] = bv[0] = one;
        df_tensor *a = bf16_matrix(m, k, 0, av), *b = bf16_matrix(k, n, 0, bv);
        df_tensor *y = run_matmul(__FILE__, __LINE__, a, b, 0, 0, 2);
        CHECK(y != NULL);
        if (y) {
            CHECK_EQ_INT(df_tensor_dim(y, 0), m);
            CHECK_EQ_INT(df_tensor_dim(y, 1), n);
            const uint16_t *d = (const uint16_t *)df_tensor_data(y);
            for (int64_t i = 0; i < m * n; i++) CHECK_MSG(d[i] == 0, "element %lld is 0x%04x", (long long)i, d[i]);
        }
        df_tensor_release(y);
        df_tensor_release(a);
        df_tensor_release(b);
        free(av);
        free(bv);
    }
}
