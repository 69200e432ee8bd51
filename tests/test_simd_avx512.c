/* The AVX-512 elementwise, transcendental, softmax and pooling kernels against the AVX2 and
   plain ones: the same bits wherever the AVX2 kernels give the plain kernels' bits (the
   arithmetic rows, Relu & co, pooling and its gradients), the same bits as the AVX2
   approximations for Exp, Log, Tanh and Sigmoid (and within 4 ulp of libm, as documented for
   them), Softmax/LogSoftmax within 2e-6 of float64. Lengths 1 to 67 and a few long ones, so that
   every tail length of a 16- and 8-lane vector goes through the masked loads and stores;
   special values everywhere (NaN, infinities, signed zeros, subnormals, huge and tiny). On a
   CPU without AVX-512 (and no DF_EMULATE_AVX512 build) the tests say so and check nothing. */
#include "harness.h"

static int have_avx512(void) {
    if (df_set_kernel_isa("avx512") != DF_OK) {
        printf("    (no avx512 kernels on this CPU: nothing to compare)\n");
        return 0;
    }
    df_set_kernel_isa("auto");
    return 1;
}
static double value(int i, unsigned *r) {
    static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-40, -3e-39, 1e-45, 3.4e38, -3.4e38, 1e30,
                                -1e-30, 88.7, -87.5, -103.9, 9.5, -9.5, 0.54, 0.56, 1.0, -1.0, 1e300, 4.9e-324};
    *r = *r * 1103515245u + 12345u;
    if (i % 5 == 2) return sp[(*r >> 9) % (sizeof sp / sizeof *sp)];
    return ((double)(*r >> 8 & 0xffff) / 65536.0 - 0.5) * ((*r >> 4 & 1) ? 8 : 200);
}
static df_tensor *tensor_of(df_dtype t, int rank, const int64_t *d, const double *v) {
    df_tensor *x = df_tensor_new(t, rank, d, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = (float)v[i];
        else ((double *)df_tensor_data(x))[i] = v[i];
    }
    return x;
}
static df_output op_n(df_graph *g, const char *op, int n, const df_output *in) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    return (df_output){df_op_finish(b), 0};
}
/* Runs op on the fed tensors under one kernel set; its first output back (a new reference). */
static df_tensor *run_op(const char *isa, const char *op, int n, df_tensor **in) {
    if (df_set_kernel_isa(isa) != DF_OK) return NULL;
    df_graph *g = df_graph_new();
    df_output p[3];
    char name[16];
    for (int i = 0; i < n; i++) {
        int64_t d[8];
        for (int k = 0; k < df_tensor_rank(in[i]) && k < 8; k++) d[k] = df_tensor_dim(in[i], k);
        snprintf(name, sizeof name, "in%d", i);
        p[i] = df_placeholder(g, name, df_tensor_dtype(in[i]), df_tensor_rank(in[i]), d);
    }
    df_output y = op_n(g, op, n, p);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *out = NULL;
    df_session_run(s, p, in, n, &y, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    df_session_free(s);
    df_graph_free(g);
    df_set_kernel_isa("auto");
    return out;
}
static double at(const df_tensor *t, int64_t i) {
    return df_tensor_dtype(t) == DF_FLOAT ? (double)((const float *)df_tensor_data(t))[i] : ((const double *)df_tensor_data(t))[i];
}
/* Same shape and the same bits (any NaN matching any NaN); the first difference reported. */
static int same(const df_tensor *a, const df_tensor *b, const char *what, const char *op, int len) {
    if (!a || !b) { CHECK_MSG(0, "%s %s len %d: no result", what, op, len); return 0; }
    if (df_tensor_num_elements(a) != df_tensor_num_elements(b)) { CHECK_MSG(0, "%s %s len %d: sizes differ", what, op, len); return 0; }
    for (int64_t i = 0; i < df_tensor_num_elements(a); i++) {
        double x = at(a, i), y = at(b, i);
        if ((x != x && y == y) || (x == x && y != y) || (x == x && memcmp(&x, &y, sizeof x))) {
            CHECK_MSG(0, "%s %s %s len %d [%lld]: %.17g vs %.17g", what, op, df_dtype_name(df_tensor_dtype(a)), len, (long long)i, x, y);
            return 0;
        }
    }
    return 1;
}

DF_TEST(simd512_rows_and_unary_ops_match_avx2_and_plain_bits) {
    static const char *binary[] = {"AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SquaredDifference",
                                   "ReluGrad", "TanhGrad", "SigmoidGrad"};
    static const char *unary[] = {"Neg", "Square", "Sqrt", "Rsqrt", "Reciprocal", "Floor", "Relu", "Abs"};
    if (!have_avx512()) return;
    static double va[3 * 1100], vb[3 * 1100];
    unsigned seed = 11;
    for (int i = 0; i < 3 * 1100; i++) { va[i] = value(i, &seed); vb[i] = value(i + 3, &seed); }
    int compared = 0;
    for (int ti = 0; ti < 2; ti++) {
        df_dtype t = ti ? DF_DOUBLE : DF_FLOAT;
        for (int len = 1; len <= 1100; len = len < 67 ? len + 1 : len == 67 ? 128 : len == 128 ? 1027 : 2000) {
            int64_t d[1] = {len}, one[1] = {1}, mat[2] = {3, len};
            for (size_t o = 0; o < sizeof binary / sizeof *binary; o++)
                for (int shape = 0; shape < 4; shape++) {
                    /* both full, b a scalar, a a scalar, a row broadcast over a matrix */
                    int ra = shape == 2 ? 0 : shape == 3 ? 2 : 1, rb = shape == 1 ? 0 : 1;
                    df_tensor *in[2] = {tensor_of(t, ra, shape == 3 ? mat : shape == 2 ? one : d, va),
                                        tensor_of(t, rb, shape == 1 ? one : d, vb)};
                    df_tensor *z = run_op("avx512", binary[o], 2, in), *v = run_op("avx2", binary[o], 2, in);
                    df_tensor *p = run_op("portable", binary[o], 2, in);
                    if (same(z, p, "avx512 vs portable", binary[o], len) && (!v || same(z, v, "avx512 vs avx2", binary[o], len)))
                        compared++;
                    df_tensor_release(z); df_tensor_release(v); df_tensor_release(p);
                    df_tensor_release(in[0]); df_tensor_release(in[1]);
                }
            for (size_t o = 0; o < sizeof unary / sizeof *unary; o++) {
                df_tensor *in = tensor_of(t, 1, d, va);
                df_tensor *z = run_op("avx512", unary[o], 1, &in), *p = run_op("portable", unary[o], 1, &in);
                if (same(z, p, "avx512 vs portable", unary[o], len)) compared++;
                df_tensor_release(z); df_tensor_release(p); df_tensor_release(in);
            }
        }
    }
    CHECK_EQ_INT(compared, 2 * 69 * (10 * 4 + 8));
}

/* Relu keeps NaN and maps -0 to +0; Abs keeps -0 (as the plain loop: -0 < 0 is false). */
DF_TEST(simd512_relu_abs_neg_signed_zero_and_nan) {
    if (!have_avx512()) return;
    double v[19] = {-0.0, 0.0, NAN, -1.5, 2.5, -INFINITY, INFINITY, 1e-45, -1e-45};
    for (int i = 9; i < 19; i++) v[i] = v[i - 9];
    int64_t d[1] = {19};
    df_tensor *x = tensor_of(DF_FLOAT, 1, d, v);
    df_tensor *relu = run_op("avx512", "Relu", 1, &x), *abs_ = run_op("avx512", "Abs", 1, &x), *neg = run_op("avx512", "Neg", 1, &x);
    CHECK(relu && abs_ && neg);
    if (relu && abs_ && neg) {
        const float *r = (const float *)df_tensor_data(relu), *a = (const float *)df_tensor_data(abs_), *n = (const float *)df_tensor_data(neg);
        for (int k = 0; k < 10; k += 9) {       /* a whole-vector lane and a tail lane */
            CHECK(r[k] == 0 && !signbit(r[k]));
            CHECK(a[k] == 0 && signbit(a[k]));
            CHECK(n[k] == 0 && !signbit(n[k]) && n[k + 1] == 0 && signbit(n[k + 1]));
            CHECK(isnan(r[k + 2]) && isnan(a[k + 2]) && isnan(n[k + 2]));
            CHECK(r[k + 3] == 0 && r[k + 4] == 2.5f && r[k + 5] == 0 && isinf(r[k + 6]));
            CHECK(a[k + 3] == 1.5f && a[k + 5] == INFINITY && a[k + 8] == 1e-45f);
        }
    }
    df_tensor_release(relu); df_tensor_release(abs_); df_tensor_release(neg); df_tensor_release(x);
}

/* Exp, Log, Tanh, Sigmoid: the AVX2 approximations' bits on every input of a sweep over all
   exponents (subnormals, infinities, NaN, -0 included), within 4 ulp of libm where the result
   is finite and nonzero, exactly inf, 0 or NaN where that is the right result; every tail. */
static double reference(const char *op, double x) {
    if (!strcmp(op, "Exp")) return exp(x);
    if (!strcmp(op, "Log")) return log(x);
    if (!strcmp(op, "Tanh")) return tanh(x);
    return 1 / (1 + exp(-x));
}
DF_TEST(simd512_exp_log_tanh_sigmoid_bits_of_avx2_and_4_ulp) {
    static const char *ops[] = {"Exp", "Log", "Tanh", "Sigmoid"};
    if (!have_avx512()) return;
    enum { N = (1 << 16) + 13 };
    int64_t d[1] = {N};
    df_tensor *in = df_tensor_new(DF_FLOAT, 1, d, NULL);
    float *v = (float *)df_tensor_data(in);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t bits = i * 65536u + (i * 40503u & 0xffffu);
        memcpy(&v[i], &bits, sizeof bits);
    }
    static const float sp[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-45f, -1e-45f, 1e-40f, 88.72f, 88.73f, -87.33f,
                               -103.97f, -104.0f, 3.4e38f, -3.4e38f, 0.5493f, 0.55f, -0.55f, 9.0f, -9.0f, 1e-8f};
    for (int i = 0; i < 21; i++) v[N - 21 + i] = v[i * 3] = sp[i];
    for (int o = 0; o < 4; o++) {
        df_tensor *z = run_op("avx512", ops[o], 1, &in), *a = run_op("avx2", ops[o], 1, &in);
#ifndef DF_EMULATE_AVX512   /* (SIMDe's fmadd rounds twice: the bits differ there, the ulp bound holds) */
        if (a) same(z, a, "avx512 vs avx2", ops[o], N);
#endif
        const float *r = z ? (const float *)df_tensor_data(z) : NULL;
        double worst = 0, worst_x = 0;
        int special_bad = 0;
        for (int i = 0; r && i < N; i++) {
            double want = reference(ops[o], v[i]);
            float wf = (float)want;
            if (isnan(wf) || isinf(wf) || wf == 0) {
                int ok = isnan(wf) ? isnan(r[i]) : r[i] == wf || fabs(r[i] - want) <= 1.5e-45;
                if (!ok && !special_bad) { special_bad = 1; CHECK_MSG(0, "avx512 %s(%.9g) = %.9g, want %.9g", ops[o], v[i], r[i], want); }
                continue;
            }
            double ulp = fabs((double)r[i] - want) / (double)(nextafterf(fabsf(wf), INFINITY) - fabsf(wf));
            if (!(ulp <= worst)) { worst = ulp; worst_x = v[i]; }
        }
        CHECK(r != NULL);
        CHECK_MSG(worst <= 4, "avx512 %s: %.2f ulp at %.9g", ops[o], worst, worst_x);
        /* every tail: lengths 1..67 from an offset, the long run's bits for the same inputs */
        for (int len = 1; r && len <= 67; len++) {
            int64_t dl[1] = {len};
            df_tensor *piece = df_tensor_new(DF_FLOAT, 1, dl, NULL);
            memcpy(df_tensor_data(piece), v + 1000 + len * 7, (size_t)len * sizeof(float));
            df_tensor *zp = run_op("avx512", ops[o], 1, &piece);
            const float *q = zp ? (const float *)df_tensor_data(zp) : NULL;
            for (int j = 0; q && j < len; j++)
                if (memcmp(&q[j], &r[1000 + len * 7 + j], sizeof(float)) && !(isnan(q[j]) && isnan(r[1000 + len * 7 + j]))) {
                    CHECK_MSG(0, "avx512 %s tail of %d [%d]: %.9g, in a long run %.9g", ops[o], len, j, q[j], r[1000 + len * 7 + j]);
                    len = 68;
                    break;
                }
            CHECK(q != NULL);
            df_tensor_release(zp); df_tensor_release(piece);
        }
        df_tensor_release(z); df_tensor_release(a);
    }
    df_tensor_release(in);
}

/* Softmax and LogSoftmax: rows of 1..67 columns and a long one, with -inf entries and huge
   spreads, against float64; the AVX-512 and AVX2 results within the same bound. */
DF_TEST(simd512_softmax_log_softmax_every_row_length) {
    if (!have_avx512()) return;
    int checked = 0;
    for (int cols = 1; cols <= 1030; cols = cols < 67 ? cols + 1 : cols == 67 ? 1030 : 2000) {
        enum { R = 3 };
        int64_t d[2] = {R, cols};
        double *xv = malloc(sizeof(double) * R * (size_t)cols), *want = malloc(sizeof(double) * R * (size_t)cols * 2);
        unsigned seed = (unsigned)cols;
        for (int i = 0; i < R * cols; i++) {
            seed = seed * 1103515245u + 12345u;
            xv[i] = ((double)(seed >> 8 & 0xffff) / 65536.0 - 0.5) * (i % 3 == 1 ? 60 : 6);
            if (i % 11 == 5) xv[i] = -INFINITY;
            xv[i] = (float)xv[i];
        }
        if (cols > 1) xv[1] = -INFINITY;
        for (int r = 0; r < R; r++) {
            double m = -INFINITY, s = 0;
            for (int c = 0; c < cols; c++) if (xv[r * cols + c] > m) m = xv[r * cols + c];
            for (int c = 0; c < cols; c++) s += exp(xv[r * cols + c] - m);
            for (int c = 0; c < cols; c++) {
                want[R * cols + r * cols + c] = xv[r * cols + c] - m - log(s);
                want[r * cols + c] = exp(want[R * cols + r * cols + c]);
            }
        }
        df_tensor *x = tensor_of(DF_FLOAT, 2, d, xv);
        for (int lg = 0; lg < 2; lg++)
            for (int k = 0; k < 2; k++) {
                df_tensor *y = run_op(k ? "avx2" : "avx512", lg ? "LogSoftmax" : "Softmax", 1, &x);
                if (!y) continue;
                const float *r = (const float *)df_tensor_data(y);
                for (int i = 0; i < R * cols; i++) {
                    double w = want[lg * R * cols + i];
                    int ok = isinf(w) ? r[i] == w : fabs(r[i] - w) <= 2e-6 * (1 + fabs(w));
                    if (!ok) { CHECK_MSG(0, "%s %s cols %d [%d]: %.9g, want %.9g", k ? "avx2" : "avx512", lg ? "LogSoftmax" : "Softmax", cols, i, r[i], w); break; }
                }
                if (!k) checked++;
                df_tensor_release(y);
            }
        df_tensor_release(x);
        free(xv); free(want);
    }
    CHECK_EQ_INT(checked, 2 * 68);
}

/* The cross-entropies on the AVX-512 exp row: loss and backprop against float64. */
DF_TEST(simd512_sparse_cross_entropy_rows) {
    if (!have_avx512()) return;
    for (int k = 1; k <= 40; k += 13) {
        enum { B = 4 };
        int64_t d[2] = {B, k}, db[1] = {B};
        double xv[B * 40];
        unsigned seed = 5;
        for (int i = 0; i < B * k; i++) { seed = seed * 1103515245u + 12345u; xv[i] = (float)(((double)(seed >> 8 & 0xffff) / 65536.0 - 0.5) * 10); }
        df_tensor *in[2] = {tensor_of(DF_FLOAT, 2, d, xv), df_tensor_new(DF_INT32, 1, db, NULL)};
        for (int i = 0; i < B; i++) ((int32_t *)df_tensor_data(in[1]))[i] = (i * 7) % k;
        CHECK_EQ_INT(df_set_kernel_isa("avx512"), DF_OK);
        df_graph *g = df_graph_new();
        df_output p[2] = {df_placeholder(g, "x", DF_FLOAT, 2, d), df_placeholder(g, "l", DF_INT32, 1, db)};
        df_node *n = op_n(g, "SparseSoftmaxCrossEntropyWithLogits", 2, p).node;
        df_output f[2] = {{n, 0}, {n, 1}};
        df_tensor *out[2] = {NULL, NULL};
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        df_session_run(s, p, in, 2, f, out, 2, NULL, 0, &st);
        CHECK_OK(&st);
        for (int r = 0; out[0] && out[1] && r < B; r++) {
            double m = -INFINITY, sum = 0;
            for (int c = 0; c < k; c++) if (xv[r * k + c] > m) m = xv[r * k + c];
            for (int c = 0; c < k; c++) sum += exp(xv[r * k + c] - m);
            int lab = (r * 7) % k;
            double loss = -(xv[r * k + lab] - m - log(sum));
            CHECK_NEAR(((float *)df_tensor_data(out[0]))[r], loss, 2e-6 * (1 + loss));
            for (int c = 0; c < k; c++) {
                double bp = exp(xv[r * k + c] - m) / sum - (c == lab);
                CHECK_NEAR(((float *)df_tensor_data(out[1]))[r * k + c], bp, 2e-6);
            }
        }
        df_tensor_release(out[0]); df_tensor_release(out[1]);
        df_session_free(s);
        df_graph_free(g);
        df_tensor_release(in[0]); df_tensor_release(in[1]);
        df_set_kernel_isa("auto");
    }
}

/* MaxPool, AvgPool and their gradients (MaxPoolGrad, AvgPoolGrad through df_gradients) for
   channel counts 1..67 (every tail of 16 and 8 lanes), windows that overlap, SAME padding;
   ties (repeated values) and NaN in the input: the same bits as the plain helpers. */
static void set_list(df_op_builder *b, const char *attr, int64_t a, int64_t c) {
    int64_t v[4] = {1, a, c, 1};
    df_op_set_attr_int_list(b, attr, v, 4);
}
static void pool_case(df_dtype t, int max, int c, int same_pad, df_tensor *out[2][2]) {
    enum { N = 2, H = 5, W = 4 };
    int64_t xd[4] = {N, H, W, c};
    int64_t nx = (int64_t)N * H * W * c;
    double *xv = malloc(sizeof(double) * (size_t)nx);
    unsigned seed = (unsigned)c * 31u + (unsigned)max;
    for (int64_t i = 0; i < nx; i++) {
        seed = seed * 1103515245u + 12345u;
        xv[i] = (double)((seed >> 10) % 7) - 3;              /* few distinct values: many ties */
        if ((seed >> 4) % 97 == 0) xv[i] = NAN;
        if ((seed >> 4) % 89 == 1) xv[i] = -INFINITY;
        if (i % 13 == 0) xv[i] = (double)((seed >> 12) % 1000) / 7.0;
    }
    for (int k = 0; k < 2; k++) {
        out[k][0] = out[k][1] = NULL;
        if (df_set_kernel_isa(k ? "portable" : "avx512") != DF_OK) continue;
        df_graph *g = df_graph_new();
        df_output x = df_placeholder(g, "x", t, 4, xd);
        df_op_builder *b = df_op_new(g, max ? "MaxPool" : "AvgPool", "pool");
        df_op_add_input(b, x);
        df_op_set_attr_type(b, "T", t);
        set_list(b, "ksize", 3, 2);
        set_list(b, "strides", 2, 1);
        df_op_set_attr_string(b, "padding", same_pad ? "SAME" : "VALID");
        df_output y = {df_op_finish(b), 0};
        int64_t yd[4] = {N, same_pad ? (H + 1) / 2 : (H - 3) / 2 + 1, same_pad ? W : W - 1, c};
        df_output w = df_placeholder(g, "w", t, 4, yd);
        df_output loss = df_reduce_sum(g, df_mul(g, y, w), 0, NULL, 0), dx;
        CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &x, &dx), DF_OK);
        CHECK_OK(df_graph_status(g));
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        df_tensor *xt = tensor_of(t, 4, xd, xv);
        int64_t ny = yd[0] * yd[1] * yd[2] * yd[3];
        double *wv = malloc(sizeof(double) * (size_t)ny);
        for (int64_t i = 0; i < ny; i++) wv[i] = (double)(i % 5) - 1.5;
        df_tensor *wt = tensor_of(t, 4, yd, wv);
        df_output feeds[2] = {x, w}, fetches[2] = {y, dx};
        df_tensor *fv[2] = {xt, wt};
        df_session_run(s, feeds, fv, 2, fetches, out[k], 2, NULL, 0, &st);
        CHECK_OK(&st);
        df_tensor_release(wt);
        free(wv);
        df_tensor_release(xt);
        df_session_free(s);
        df_graph_free(g);
    }
    df_set_kernel_isa("auto");
    free(xv);
}
DF_TEST(simd512_pooling_and_gradients_match_plain_bits) {
    if (!have_avx512()) return;
    int cases = 0, tried = 0;
    for (int ti = 0; ti < 2; ti++)
        for (int c = 1; c <= 67; c += (c < 20 ? 1 : 5))
            for (int max = 0; max < 2; max++, tried++) {
                df_tensor *out[2][2];
                df_dtype t = ti ? DF_DOUBLE : DF_FLOAT;
                pool_case(t, max, c, (c & 1), out);
                const char *op = max ? "MaxPool" : "AvgPool";
                if (same(out[0][0], out[1][0], "avx512 vs portable (forward)", op, c) &&
                    same(out[0][1], out[1][1], "avx512 vs portable (gradient)", op, c))
                    cases++;
                for (int k = 0; k < 2; k++) { df_tensor_release(out[k][0]); df_tensor_release(out[k][1]); }
            }
    CHECK_EQ_INT(tried, 2 * 29 * 2);
    CHECK_EQ_INT(cases, tried);
}

/* The kernel set can be chosen and reported: "avx512" where the CPU has it, and back. */
DF_TEST(simd512_kernel_isa_switch) {
    if (!have_avx512()) return;
    CHECK_EQ_INT(df_set_kernel_isa("avx512"), DF_OK);
    CHECK(!strcmp(df_kernel_isa(), "avx512"));
    CHECK_EQ_INT(df_set_kernel_isa("avx2"), DF_OK);
    CHECK(!strcmp(df_kernel_isa(), "avx2"));
    CHECK_EQ_INT(df_set_kernel_isa("auto"), DF_OK);
    CHECK(!strcmp(df_kernel_isa(), "avx512"));
}
