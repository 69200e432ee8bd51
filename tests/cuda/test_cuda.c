/* The GPU building blocks (dataflow_cuda.cu) against the CPU: copies, cuBLAS products, the
   elementwise kernels, errors and out-of-memory. Built with -DDATAFLOW_CUDA and run by
   build.sh only where a GPU is visible (tests/cuda/gpu_count.c). */
#include "../harness.h"
#include <stdint.h>

static unsigned rs = 777;
static float rnd(void) { rs = rs * 1664525u + 1013904223u; return (float)((double)(rs >> 8) / 16777216.0 - 0.5); }

static df_cuda *open_gpu(size_t limit) {
    df_status st;
    df_cuda *g = df_cuda_open(0, limit, &st);
    CHECK_MSG(g != NULL, "df_cuda_open: %s", st.message);
    return g;
}

DF_TEST(cuda_open_bad_device_and_null_arguments) {
    df_status st;
    CHECK(df_cuda_open(-1, 0, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "does not exist");
    CHECK(df_cuda_open(1 << 20, 0, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "does not exist");
    CHECK(df_cuda_alloc(NULL, 16, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "NULL GPU");
    CHECK_EQ_INT(df_cuda_copy_to_device(NULL, NULL, NULL, 4, &st), DF_INVALID_ARGUMENT);
    df_cuda *g = open_gpu(0);
    if (!g) return;
    CHECK_EQ_INT(df_cuda_elementwise_f32(g, 99, NULL, NULL, NULL, 4, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_gemm_f32(g, 0, 0, -1, 2, 2, NULL, 2, NULL, 2, NULL, 2, 0, &st), DF_INVALID_ARGUMENT);
    df_cuda_close(g);
}

/* Host -> GPU -> host, sizes that cross the pinned staging buffer's pieces. */
DF_TEST(cuda_copies_round_trip) {
    df_cuda *g = open_gpu(0);
    if (!g) return;
    size_t sizes[] = {0, 1, 13, 4096, (8u << 20) + 3, (20u << 20) + 1};
    for (int i = 0; i < 6; i++) {
        size_t n = sizes[i];
        unsigned char *src = malloc(n + 1), *back = malloc(n + 1);
        for (size_t k = 0; k < n; k++) src[k] = (unsigned char)(k * 131 + i);
        memset(back, 0xee, n + 1);
        df_status st;
        void *d = df_cuda_alloc(g, n, &st);
        CHECK_MSG(d != NULL, "alloc %zu: %s", n, st.message);
        if (d) {
            CHECK_EQ_INT(df_cuda_copy_to_device(g, d, src, n, &st), DF_OK);
            CHECK_EQ_INT(df_cuda_copy_to_host(g, back, d, n, &st), DF_OK);
            CHECK_MSG(!memcmp(src, back, n) && back[n] == 0xee, "%zu bytes differ after the round trip", n);
            df_cuda_free(g, d);
        }
        free(src); free(back);
    }
    df_alloc_stats s;
    df_cuda_get_stats(g, &s);
    CHECK_EQ_INT(s.bytes_in_use, 0);
    CHECK(s.peak_bytes_in_use >= (int64_t)(20u << 20));
    df_cuda_close(g);
}

/* cuBLAS against df_gemm_f32 on random shapes, both transposes: FP32 within 1e-5 relative to
   the largest |C|, TF32 within 3e-3. */
DF_TEST(cuda_gemm_matches_cpu) {
    df_cuda *g = open_gpu(0);
    if (!g) return;
    int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {64, 64, 64}, {129, 65, 257}, {512, 300, 1000}, {3, 2000, 17}, {5, 4, 0}};
    for (int s = 0; s < 7; s++)
        for (int t = 0; t < 4; t++)
            for (int tf32 = 0; tf32 < 2; tf32++) {
                int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                int ta = t & 1, tb = t >> 1;
                int64_t lda = ta ? m : k, ldb = tb ? k : n;
                size_t na = (size_t)(m * k), nb = (size_t)(k * n), nc = (size_t)(m * n);
                float *a = malloc((na + 1) * 4), *b = malloc((nb + 1) * 4), *c = malloc((nc + 1) * 4), *want = malloc((nc + 1) * 4);
                for (size_t i = 0; i < na; i++) a[i] = rnd();
                for (size_t i = 0; i < nb; i++) b[i] = rnd();
                for (size_t i = 0; i < nc; i++) c[i] = NAN;   /* every element must be written */
                CHECK_EQ_INT(df_gemm_f32(ta, tb, m, n, k, a, lda, b, ldb, want, n, 1), DF_OK);
                df_status st;
                float *da = df_cuda_alloc(g, na * 4, &st), *db = df_cuda_alloc(g, nb * 4, &st), *dc = df_cuda_alloc(g, nc * 4, &st);
                CHECK(da && db && dc);
                if (da && db && dc) {
                    df_cuda_copy_to_device(g, da, a, na * 4, &st);
                    df_cuda_copy_to_device(g, db, b, nb * 4, &st);
                    df_cuda_copy_to_device(g, dc, c, nc * 4, &st);
                    CHECK_EQ_INT(df_cuda_gemm_f32(g, ta, tb, m, n, k, da, lda, db, ldb, dc, n, tf32, &st), DF_OK);
                    CHECK_EQ_INT(df_cuda_copy_to_host(g, c, dc, nc * 4, &st), DF_OK);
                    double big = 1e-30, worst = 0;
                    for (size_t i = 0; i < nc; i++) if (fabs(want[i]) > big) big = fabs(want[i]);
                    for (size_t i = 0; i < nc; i++) {
                        double d = fabs((double)c[i] - want[i]);
                        if (!(d <= worst)) worst = d;         /* NaN (unwritten) makes it NaN */
                    }
                    double tol = tf32 ? 3e-3 : 1e-5;
                    CHECK_MSG(worst / big <= tol || (k == 0 && worst == 0), "%lldx%lldx%lld ta%d tb%d tf32 %d: error %.3g",
                              (long long)m, (long long)n, (long long)k, ta, tb, tf32, worst / big);
                }
                df_cuda_free(g, da); df_cuda_free(g, db); df_cuda_free(g, dc);
                free(a); free(b); free(c); free(want);
            }
    df_cuda_close(g);
}

/* Each elementwise op against the plain loop: aligned and misaligned pointers, sizes not a
   multiple of 4, NaN kept by Maximum and Relu. */
DF_TEST(cuda_elementwise_matches_cpu) {
    df_cuda *g = open_gpu(0);
    if (!g) return;
    int64_t sizes[] = {1, 3, 1000, 1 << 20, (1 << 20) + 7};
    for (int si = 0; si < 5; si++)
        for (int off = 0; off < 2; off++)
            for (int op = DF_CUDA_ADD; op <= DF_CUDA_TANH; op++) {
                int64_t n = sizes[si];
                size_t bytes = (size_t)(n + 1) * 4;
                float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
                for (int64_t i = 0; i <= n; i++) { a[i] = rnd() * 8; b[i] = rnd() * 8; }
                a[0] = NAN;
                df_status st;
                float *da = df_cuda_alloc(g, bytes, &st), *db = df_cuda_alloc(g, bytes, &st), *dc = df_cuda_alloc(g, bytes, &st);
                if (!(da && db && dc)) { CHECK(0); break; }
                df_cuda_copy_to_device(g, da, a, bytes, &st);
                df_cuda_copy_to_device(g, db, b, bytes, &st);
                CHECK_EQ_INT(df_cuda_elementwise_f32(g, op, da + off, db + off, dc + off, n - off, &st), DF_OK);
                CHECK_EQ_INT(df_cuda_copy_to_host(g, c, dc, bytes, &st), DF_OK);
                int64_t bad = -1;
                for (int64_t i = off; i < n && bad < 0; i++) {
                    float x = a[i], y = b[i], want;
                    switch (op) {
                    case DF_CUDA_ADD: want = x + y; break;
                    case DF_CUDA_SUB: want = x - y; break;
                    case DF_CUDA_MUL: want = x * y; break;
                    case DF_CUDA_MAX: want = x != x || x > y ? x : y; break;
                    case DF_CUDA_RELU: want = x > 0 || x != x ? x : 0; break;
                    default: want = tanhf(x);
                    }
                    float got = c[i];
                    int same = (want != want && got != got) || fabsf(got - want) <= (op == DF_CUDA_TANH ? 2e-6f : 0.0f);
                    if (!same) bad = i;
                }
                CHECK_MSG(bad < 0, "op %d n %lld offset %d: element %lld is %g", op, (long long)n, off, (long long)bad, bad < 0 ? 0.0 : c[bad]);
                df_cuda_free(g, da); df_cuda_free(g, db); df_cuda_free(g, dc);
                free(a); free(b); free(c);
            }
    df_cuda_close(g);
}

/* Out of memory is a status: past a memory limit, and past what the GPU has. */
DF_TEST(cuda_out_of_memory_is_resource_exhausted) {
    df_cuda *g = open_gpu((size_t)64 << 20);
    if (!g) return;
    df_status st;
    void *p = df_cuda_alloc(g, (size_t)128 << 20, &st);
    CHECK(p == NULL);
    CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "OOM when allocating");
    void *q = df_cuda_alloc(g, (size_t)32 << 20, &st);   /* still usable */
    CHECK_MSG(q != NULL, "%s", st.message);
    df_cuda_free(g, q);
    df_cuda_close(g);
    g = open_gpu(0);
    if (!g) return;
    p = df_cuda_alloc(g, (size_t)1 << 44, &st);            /* 16 TiB */
    CHECK(p == NULL);
    CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "OOM");
    q = df_cuda_alloc(g, 1 << 20, &st);
    CHECK_MSG(q != NULL, "after a failed huge allocation: %s", st.message);
    df_cuda_free(g, q);
    df_cuda_close(g);
}
