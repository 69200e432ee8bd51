/* test_simd_rnn.c - the small-tensor paths an RNN step takes: Fill of zeros (one memset), of
   4- and 8-byte values (a typed loop) and of other sizes, with -0.0 and NaN payloads kept bit for
   bit; Tanh on AVX-512 over vectors wholly in the series range, wholly outside it, mixed, with
   NaN and the masked tail, the same bits as the AVX2 kernel and within 4 ulp of libm; the sparse
   cross-entropy's rows of 1..15 classes (the short sum) the same bits as the AVX2 kernel, rows to
   18 near float64. Public
   API and the harness only; everything is freed. */
#include "harness.h"
#include <stdint.h>
/* SIMDe's fmadd (the emulated AVX-512 build) rounds twice: there the exp-based results agree
   with the AVX2 kernel's within a few ulp, not bit for bit */
#ifdef DF_EMULATE_AVX512
#define SAME_REL 1e-6
#else
#define SAME_REL 0.0
#endif

static df_output op_n(df_graph *g, const char *op, int n, const df_output *in) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    return (df_output){df_op_finish(b), 0};
}
/* Runs op (fed in[0..n)) under the kernel set isa (NULL: as it is); output `out` back. */
static df_tensor *run_op(const char *isa, const char *op, int n, df_tensor **in, int out_index) {
    if (isa && df_set_kernel_isa(isa) != DF_OK) return NULL;
    df_graph *g = df_graph_new();
    df_output p[3];
    for (int i = 0; i < n; i++) {
        int64_t d[8];
        char name[16];
        for (int k = 0; k < df_tensor_rank(in[i]) && k < 8; k++) d[k] = df_tensor_dim(in[i], k);
        snprintf(name, sizeof name, "in%d", i);
        p[i] = df_placeholder(g, name, df_tensor_dtype(in[i]), df_tensor_rank(in[i]), d);
    }
    df_output y = op_n(g, op, n, p);
    y.index = out_index;
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *out = NULL;
    df_session_run(s, p, in, n, &y, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    df_session_free(s);
    df_graph_free(g);
    if (isa) df_set_kernel_isa("auto");
    return out;
}

/* Fill(dims, value) for one dtype: every element holds value's bytes. */
static void fill_case(df_dtype t, const void *value, const char *what) {
    int32_t dims[2] = {7, 5};
    int64_t two = 2;
    df_tensor *in[2] = {df_tensor_from_data(DF_INT32, 1, &two, dims, sizeof dims, NULL), df_tensor_new(t, 0, NULL, NULL)};
    size_t es = df_tensor_nbytes(in[1]);
    memcpy(df_tensor_data(in[1]), value, es);
    df_tensor *o = run_op(NULL, "Fill", 2, in, 0);
    CHECK_MSG(o != NULL, "Fill %s: no result", what);
    if (o) {
        CHECK_EQ_INT(df_tensor_num_elements(o), 35);
        CHECK_EQ_INT(df_tensor_dtype(o), t);
        for (int64_t i = 0; i < df_tensor_num_elements(o); i++)
            if (memcmp((const char *)df_tensor_data(o) + (size_t)i * es, value, es)) {
                CHECK_MSG(0, "Fill %s: element %lld differs", what, (long long)i);
                break;
            }
    }
    df_tensor_release(o);
    df_tensor_release(in[0]);
    df_tensor_release(in[1]);
}

DF_TEST(simd_rnn_fill_values_bit_for_bit) {
    float fz = 0.0f, fnz = -0.0f, fv = 3.5f, fnan;
    uint32_t nan_bits = 0x7fc01234u;
    memcpy(&fnan, &nan_bits, 4);
    double dz = 0.0, dnz = -0.0, dv = -2.25;
    int64_t i64 = -7;
    int32_t i32z = 0, i32 = 123456;
    uint8_t b1 = 1;
    int8_t i8 = -3;
    int16_t i16 = 0x1234;
    fill_case(DF_FLOAT, &fz, "float 0");
    fill_case(DF_FLOAT, &fnz, "float -0");
    fill_case(DF_FLOAT, &fv, "float 3.5");
    fill_case(DF_FLOAT, &fnan, "float NaN payload");
    fill_case(DF_DOUBLE, &dz, "double 0");
    fill_case(DF_DOUBLE, &dnz, "double -0");
    fill_case(DF_DOUBLE, &dv, "double -2.25");
    fill_case(DF_INT64, &i64, "int64 -7");
    fill_case(DF_INT32, &i32z, "int32 0");
    fill_case(DF_INT32, &i32, "int32 123456");
    fill_case(DF_BOOL, &b1, "bool true");
    fill_case(DF_INT8, &i8, "int8 -3");
    fill_case(DF_INT16, &i16, "int16");
}

static int have_avx512(void) {
    if (df_set_kernel_isa("avx512") != DF_OK) {
        printf("    (no avx512 kernels on this CPU: nothing to compare)\n");
        return 0;
    }
    df_set_kernel_isa("auto");
    return 1;
}
static int same_bits(const df_tensor *a, const df_tensor *b, const char *what) {
    if (!a || !b || df_tensor_num_elements(a) != df_tensor_num_elements(b)) { CHECK_MSG(0, "%s: no result or sizes differ", what); return 0; }
    const float *x = (const float *)df_tensor_data(a), *y = (const float *)df_tensor_data(b);
    for (int64_t i = 0; i < df_tensor_num_elements(a); i++)
        if (isnan(x[i]) != isnan(y[i]) ||
            (!isnan(x[i]) && (SAME_REL > 0 ? !(fabs(x[i] - y[i]) <= SAME_REL * fabs(y[i])) : memcmp(&x[i], &y[i], 4) != 0))) {
            CHECK_MSG(0, "%s [%lld]: %.9g vs %.9g", what, (long long)i, (double)x[i], (double)y[i]);
            return 0;
        }
    return 1;
}

/* 16-lane vectors wholly inside |x| < 0.55, wholly outside, mixed, with NaN, and a tail of 7. */
DF_TEST(simd_rnn_tanh_series_and_exp_vectors) {
    if (!have_avx512()) return;
    enum { N = 16 * 6 + 7 };
    float v[N];
    for (int i = 0; i < N; i++) {
        int vec = i / 16, lane = i % 16;
        float t = (float)(lane + 1) / 17.0f;                  /* (0, 1) */
        switch (vec) {
        case 0: v[i] = (lane & 1 ? -0.549f : 0.5f) * t; break;   /* all in the series */
        case 1: v[i] = (lane & 1 ? -1.0f : 1.0f) * (0.56f + 30 * t); break;   /* all outside */
        case 2: v[i] = (lane & 1 ? -1.0f : 1.0f) * 1.2f * t; break;   /* mixed */
        case 3: v[i] = lane == 5 ? NAN : 0.3f * t; break;           /* series and a NaN */
        case 4: v[i] = lane == 9 ? NAN : 3.0f + t; break;           /* outside and a NaN */
        case 5: v[i] = lane < 2 ? (lane ? -0.0f : 0.0f) : lane < 4 ? (lane & 1 ? -INFINITY : INFINITY) : 1e-30f * t; break;
        default: v[i] = 0.25f * t - (i & 1 ? 0.1f : 0.0f); break;  /* the tail: series only */
        }
    }
    int64_t d = N;
    df_tensor *x = df_tensor_from_data(DF_FLOAT, 1, &d, v, sizeof v, NULL);
    df_tensor *z = run_op("avx512", "Tanh", 1, &x, 0), *a = run_op("avx2", "Tanh", 1, &x, 0);
    if (a) same_bits(z, a, "Tanh avx512 vs avx2");
    if (z) {
        const float *o = (const float *)df_tensor_data(z);
        for (int i = 0; i < N; i++) {
            double want = tanh((double)v[i]);
            if (isnan(want)) { CHECK_MSG(isnan(o[i]), "tanh(NaN) [%d] = %g", i, (double)o[i]); continue; }
            double ulp = fmax(fabs(want), 1.17549435e-38) * 1.1920929e-7;
            CHECK_MSG(fabs(o[i] - want) <= 4 * ulp, "tanh(%.9g) = %.9g, want %.9g", (double)v[i], (double)o[i], want);
        }
    }
    df_tensor_release(z);
    df_tensor_release(a);
    df_tensor_release(x);
}

/* SparseSoftmaxCrossEntropyWithLogits over rows of 1..18 classes: loss and backprop the same bits
   under the AVX-512 and AVX2 kernels below 16 classes, and the loss near float64. */
DF_TEST(simd_rnn_short_cross_entropy_rows) {
    if (!have_avx512()) return;
    for (int k = 1; k <= 18; k++) {
        enum { B = 5 };
        int64_t d[2] = {B, k}, db = B;
        float xv[B * 18];
        unsigned seed = 11u + (unsigned)k;
        for (int i = 0; i < B * k; i++) { seed = seed * 1103515245u + 12345u; xv[i] = ((float)(seed >> 8 & 0xffff) / 65536.0f - 0.5f) * 12; }
        int32_t lab[B];
        for (int i = 0; i < B; i++) lab[i] = (i * 5 + 1) % k;
        df_tensor *in[2] = {df_tensor_from_data(DF_FLOAT, 2, d, xv, sizeof(float) * (size_t)(B * k), NULL),
                            df_tensor_from_data(DF_INT32, 1, &db, lab, sizeof lab, NULL)};
        for (int out = 0; out < 2; out++) {
            df_tensor *z = run_op("avx512", "SparseSoftmaxCrossEntropyWithLogits", 2, in, out);
            df_tensor *a = run_op("avx2", "SparseSoftmaxCrossEntropyWithLogits", 2, in, out);
            char what[64];
            snprintf(what, sizeof what, "xent k=%d output %d", k, out);
            if (a && k < 16) same_bits(z, a, what);   /* (from 16 the AVX2 kernel adds lanes j and j + 8 first) */
            if (z && out == 0)
                for (int r = 0; r < B; r++) {
                    double m = -INFINITY, s = 0;
                    for (int c = 0; c < k; c++) m = fmax(m, xv[r * k + c]);
                    for (int c = 0; c < k; c++) s += exp(xv[r * k + c] - m);
                    double loss = -(xv[r * k + lab[r]] - m - log(s));
                    CHECK_NEAR(((const float *)df_tensor_data(z))[r], loss, 2e-6 * (1 + loss));
                }
            df_tensor_release(z);
            df_tensor_release(a);
        }
        df_tensor_release(in[0]);
        df_tensor_release(in[1]);
    }
}
