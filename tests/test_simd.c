/* The vector (AVX2) elementwise kernels against the plain ones: every op, float32 and float64,
   lengths around the vector width, broadcasting both ways, special values (NaN, infinities,
   signed zeros); results must be identical bit for bit, and right against a float64
   reference. Also buffer forwarding: an elementwise result may take its input's buffer only
   when nothing else holds it. */
#include "harness.h"

typedef df_output (*bin_fn)(df_graph *, df_output, df_output);
static df_output op2(df_graph *g, const char *op, df_output a, df_output b) {
    df_op_builder *bd = df_op_new(g, op, NULL);
    df_op_add_input(bd, a);
    df_op_add_input(bd, b);
    return (df_output){df_op_finish(bd), 0};
}
static df_output op1(df_graph *g, const char *op, df_output a) {
    df_op_builder *bd = df_op_new(g, op, NULL);
    df_op_add_input(bd, a);
    return (df_output){df_op_finish(bd), 0};
}
static double special(int i, unsigned *r) {
    *r = *r * 1103515245u + 12345u;
    switch (i % 23) {
    case 3: return NAN;
    case 7: return INFINITY;
    case 11: return -INFINITY;
    case 13: return -0.0;
    case 17: return 0.0;
    default: return ((double)(*r >> 8 & 0xffff) / 65536.0 - 0.5) * 8;
    }
}
/* Runs op on inputs of the given shapes under one kernel set; result into out (float64). */
static int run(const char *isa, const char *op, int unary, df_dtype t, int ra, const int64_t *da, int rb,
               const int64_t *db, const double *va, const double *vb, double *out, int64_t *n_out) {
    if (df_set_kernel_isa(isa) != DF_OK) return 0;
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "a", t, ra, da), b = df_placeholder(g, "b", t, rb, db);
    df_output y = unary ? op1(g, op, a) : op2(g, op, a, b);
    df_tensor *ta = df_tensor_new(t, ra, da, NULL), *tb = df_tensor_new(t, rb, db, NULL), *v = NULL;
    for (int64_t i = 0; i < df_tensor_num_elements(ta); i++) {
        if (t == DF_FLOAT) ((float *)df_tensor_data(ta))[i] = (float)va[i]; else ((double *)df_tensor_data(ta))[i] = va[i];
    }
    for (int64_t i = 0; i < df_tensor_num_elements(tb); i++) {
        if (t == DF_FLOAT) ((float *)df_tensor_data(tb))[i] = (float)vb[i]; else ((double *)df_tensor_data(tb))[i] = vb[i];
    }
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_output feeds[2] = {a, b};
    df_tensor *fv[2] = {ta, tb};
    df_session_run(s, feeds, fv, unary ? 1 : 2, &y, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    *n_out = v ? df_tensor_num_elements(v) : 0;
    for (int64_t i = 0; i < *n_out; i++)
        out[i] = t == DF_FLOAT ? (double)((float *)df_tensor_data(v))[i] : ((double *)df_tensor_data(v))[i];
    df_tensor_release(ta); df_tensor_release(tb); df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
    df_set_kernel_isa("auto");
    return 1;
}
static int same_bits(double x, double y) {
    if (x != x && y != y) return 1;
    return !memcmp(&x, &y, sizeof x);
}

DF_TEST(simd_elementwise_matches_plain_loops) {
    static const char *binary[] = {"AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SquaredDifference",
                                   "ReluGrad", "TanhGrad", "SigmoidGrad"};
    static const char *unary[] = {"Neg", "Square", "Sqrt", "Rsqrt", "Reciprocal", "Floor", "Relu", "Abs"};
    if (df_set_kernel_isa("avx2") != DF_OK) { printf("    (no AVX2 on this CPU: only the plain kernels exist)\n"); return; }
    df_set_kernel_isa("auto");
    static double va[200], vb[200], r1[200], r2[200];
    unsigned seed = 7;
    for (int i = 0; i < 200; i++) { va[i] = special(i, &seed); vb[i] = special(i + 5, &seed); }
    int compared = 0;
    for (int ti = 0; ti < 2; ti++) {
        df_dtype t = ti ? DF_DOUBLE : DF_FLOAT;
        for (int len = 1; len <= 37; len += (len < 18 ? 1 : 9)) {
            int64_t d[1] = {len}, one[1] = {1}, mat[2] = {3, len}, row[1] = {len};
            for (size_t o = 0; o < sizeof binary / sizeof *binary; o++)
                for (int shape = 0; shape < 4; shape++) {
                    /* same shapes; scalar right; scalar left; [3,len] with a broadcast row */
                    int ra = shape == 2 ? 0 : shape == 3 ? 2 : 1, rb = shape == 1 ? 0 : 1;
                    const int64_t *da = shape == 3 ? mat : shape == 2 ? one : d, *db = shape == 3 ? row : shape == 1 ? one : d;
                    int64_t n1, n2;
                    if (!run("portable", binary[o], 0, t, ra, da, rb, db, va, vb, r1, &n1) ||
                        !run("avx2", binary[o], 0, t, ra, da, rb, db, va, vb, r2, &n2)) continue;
                    CHECK_EQ_INT(n1, n2);
                    for (int64_t i = 0; i < n1 && i < n2; i++)
                        CHECK_MSG(same_bits(r1[i], r2[i]), "%s %s len %d shape %d [%lld]: plain %.17g avx2 %.17g",
                                  binary[o], df_dtype_name(t), len, shape, (long long)i, r1[i], r2[i]);
                    compared++;
                }
            for (size_t o = 0; o < sizeof unary / sizeof *unary; o++) {
                int64_t n1, n2;
                if (!run("portable", unary[o], 1, t, 1, d, 1, d, va, vb, r1, &n1) ||
                    !run("avx2", unary[o], 1, t, 1, d, 1, d, va, vb, r2, &n2)) continue;
                CHECK_EQ_INT(n1, n2);
                for (int64_t i = 0; i < n1; i++) {
                    CHECK_MSG(same_bits(r1[i], r2[i]), "%s %s len %d [%lld]: plain %.17g avx2 %.17g",
                              unary[o], df_dtype_name(t), len, (long long)i, r1[i], r2[i]);
                    double x = t == DF_FLOAT ? (double)(float)va[i] : va[i], want = NAN;   /* a few references */
                    if (!strcmp(unary[o], "Neg")) want = -x;
                    else if (!strcmp(unary[o], "Abs")) want = x < 0 ? -x : x;
                    else if (!strcmp(unary[o], "Relu")) want = x > 0 ? x : (x != x ? x : 0);
                    else if (!strcmp(unary[o], "Floor")) want = floor(x);
                    else continue;
                    CHECK_MSG(same_bits(r2[i], want), "%s %s [%lld]: %.17g, want %.17g", unary[o], df_dtype_name(t),
                              (long long)i, r2[i], want);
                }
                compared++;
            }
        }
    }
    CHECK(compared > 500);
}

/* Maximum keeps TensorFlow's NaN rule in both kernel sets: a NaN on the left wins. */
DF_TEST(simd_maximum_nan_rule) {
    double a[9] = {NAN, 1, NAN, -0.0, 0.0, 2, 3, 4, 5}, b[9] = {1, NAN, NAN, 0.0, -0.0, 1, 9, 4, 6}, r[9];
    int64_t d[1] = {9}, n;
    for (int k = 0; k < 2; k++) {
        if (!run(k ? "avx2" : "portable", "Maximum", 0, DF_FLOAT, 1, d, 1, d, a, b, r, &n)) continue;
        CHECK(r[0] != r[0]);            /* NaN, 1 -> NaN */
        CHECK(r[1] != r[1]);            /* 1, NaN -> NaN (x > y false: y) */
        CHECK(r[2] != r[2]);
        CHECK_NEAR(r[5], 2, 0); CHECK_NEAR(r[6], 9, 0); CHECK_NEAR(r[8], 6, 0);
    }
}

/* Forwarding: a chain of elementwise ops reuses its intermediate buffers, but never a fed
   tensor or a constant's value. */
DF_TEST(simd_forwarding_never_touches_feeds_or_constants) {
    df_graph *g = df_graph_new();
    int64_t d[1] = {1000};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, d);
    df_tensor *cv = df_tensor_new(DF_FLOAT, 1, d, NULL);
    for (int i = 0; i < 1000; i++) ((float *)df_tensor_data(cv))[i] = 2;
    df_output c = df_const(g, cv);
    df_output y = df_neg(g, df_tanh(g, df_add(g, df_mul(g, x, c), c)));
    df_output z = df_add(g, y, c);
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, d, NULL), *out[2] = {NULL, NULL};
    for (int i = 0; i < 1000; i++) ((float *)df_tensor_data(xv))[i] = (float)i / 1000;
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_output f[2] = {y, z};
    for (int rep = 0; rep < 3; rep++) {
        df_session_run(s, &x, &xv, 1, f, out, 2, NULL, 0, &st);
        CHECK_OK(&st);
        for (int i = 0; i < 1000; i += 111) {
            float want = -tanhf((float)i / 1000 * 2 + 2);
            CHECK_NEAR(((float *)df_tensor_data(out[0]))[i], want, 1e-6);
            CHECK_NEAR(((float *)df_tensor_data(out[1]))[i], want + 2, 1e-6);
            CHECK_NEAR(((float *)df_tensor_data(xv))[i], (float)i / 1000, 0);   /* the feed is untouched */
            CHECK_NEAR(((float *)df_tensor_data(cv))[i], 2, 0);                 /* and the constant */
        }
        df_tensor_release(out[0]); df_tensor_release(out[1]);
        out[0] = out[1] = NULL;
    }
    df_tensor_release(xv); df_tensor_release(cv);
    df_session_free(s);
    df_graph_free(g);
}

/* Sums over the last or the first axis: the vector kernels against the plain ones and a
   float64 reference (sums are kept in float64 either way; only the order differs). */
DF_TEST(simd_sums_match_plain_and_reference) {
    if (df_set_kernel_isa("avx2") != DF_OK) { printf("    (no AVX2 on this CPU)\n"); return; }
    df_set_kernel_isa("auto");
    for (int ti = 0; ti < 2; ti++)
        for (int rows = 1; rows <= 5; rows += 2)
            for (int cols = 1; cols <= 70; cols += 23)
                for (int axis = 0; axis < 2; axis++) {
                    df_dtype t = ti ? DF_DOUBLE : DF_FLOAT;
                    int64_t d[2] = {rows, cols}, n = rows * cols;
                    double want[70] = {0}, got[2][70];
                    df_tensor *x = df_tensor_new(t, 2, d, NULL);
                    for (int64_t i = 0; i < n; i++) {
                        double v = sin((double)i * 0.7) * 100 + 1e-3 * (double)i;
                        if (t == DF_FLOAT) { ((float *)df_tensor_data(x))[i] = (float)v; v = (float)v; }
                        else ((double *)df_tensor_data(x))[i] = v;
                        want[axis ? i / cols : i % cols] += v;
                    }
                    for (int k = 0; k < 2; k++) {
                        CHECK_EQ_INT(df_set_kernel_isa(k ? "avx2" : "portable"), DF_OK);
                        df_graph *g = df_graph_new();
                        df_output p = df_placeholder(g, "x", t, 2, d);
                        int32_t ax = axis;
                        df_output s = df_reduce_sum(g, p, 1, &ax, 0);
                        df_tensor *v = NULL;
                        df_status st;
                        df_session *sess = df_session_new(g, NULL, &st);
                        df_session_run(sess, &p, &x, 1, &s, &v, 1, NULL, 0, &st);
                        CHECK_OK(&st);
                        for (int64_t i = 0; v && i < df_tensor_num_elements(v); i++)
                            got[k][i] = t == DF_FLOAT ? ((float *)df_tensor_data(v))[i] : ((double *)df_tensor_data(v))[i];
                        int64_t m = v ? df_tensor_num_elements(v) : 0;
                        CHECK_EQ_INT(m, axis ? rows : cols);
                        for (int64_t i = 0; i < m; i++)
                            CHECK_NEAR(got[k][i], want[i], (t == DF_FLOAT ? 1e-6 : 1e-12) * (1 + fabs(want[i])));
                        df_tensor_release(v);
                        df_session_free(sess);
                        df_graph_free(g);
                    }
                    df_set_kernel_isa("auto");
                    df_tensor_release(x);
                }
}

/* Exp, Log, Tanh and Sigmoid in float32: each kernel set (the AVX2 one has its own
   approximations) within 4 units in the last place of the float64 result on a sweep of bit
   patterns that covers every exponent (subnormals, infinities and NaN included); where the true
   result is NaN, an infinity or zero, exactly that. */
static double transcendental(const char *op, double x) {
    if (!strcmp(op, "Exp")) return exp(x);
    if (!strcmp(op, "Log")) return log(x);
    if (!strcmp(op, "Tanh")) return tanh(x);
    return 1 / (1 + exp(-x));
}
DF_TEST(simd_float_exp_log_tanh_sigmoid_within_4_ulp) {
    static const char *ops[] = {"Exp", "Log", "Tanh", "Sigmoid"};
    enum { N = 1 << 16 };
    int64_t d[1] = {N};
    df_tensor *in = df_tensor_new(DF_FLOAT, 1, d, NULL);
    float *v = (float *)df_tensor_data(in);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t bits = i * 65536u + (i * 40503u & 0xffffu);
        memcpy(&v[i], &bits, sizeof bits);
    }
    int checked = 0;
    for (int k = 0; k < 2; k++) {
        if (df_set_kernel_isa(k ? "avx2" : "portable") != DF_OK) continue;
        for (int o = 0; o < 4; o++) {
            df_graph *g = df_graph_new();
            df_output x = df_placeholder(g, "x", DF_FLOAT, 1, d);
            df_output y = op1(g, ops[o], x);
            df_status st;
            df_session *s = df_session_new(g, NULL, &st);
            df_tensor *out = NULL;
            df_session_run(s, &x, &in, 1, &y, &out, 1, NULL, 0, &st);
            CHECK_OK(&st);
            const float *r = out ? (const float *)df_tensor_data(out) : NULL;
            double worst = 0, worst_x = 0;
            int special_bad = 0;
            for (int i = 0; r && i < N; i++) {
                double want = transcendental(ops[o], v[i]);
                float wf = (float)want;
                if (isnan(wf) || isinf(wf) || wf == 0) {
                    int ok = isnan(wf) ? isnan(r[i]) : r[i] == wf || fabs(r[i] - want) <= 1.5e-45;
                    if (!ok && !special_bad) {
                        special_bad = 1;
                        CHECK_MSG(0, "%s %s(%.9g) = %.9g, want %.9g", df_kernel_isa(), ops[o], v[i], r[i], want);
                    }
                    continue;
                }
                double ulp = fabs((double)r[i] - want) / (double)(nextafterf(fabsf(wf), INFINITY) - fabsf(wf));
                if (!(ulp <= worst)) { worst = ulp; worst_x = v[i]; }
            }
            CHECK_MSG(worst <= 4, "%s %s: %.2f ulp at %.9g", df_kernel_isa(), ops[o], worst, worst_x);
            checked++;
            df_tensor_release(out);
            df_session_free(s);
            df_graph_free(g);
        }
    }
    df_set_kernel_isa("auto");
    df_tensor_release(in);
    CHECK(checked >= 4);
}

/* Softmax, LogSoftmax and both cross-entropies in float32 against float64 references, with
   rows long enough for whole vectors plus a tail, in each kernel set. */
DF_TEST(simd_softmax_and_cross_entropy_match_reference) {
    enum { B = 5, K = 37 };
    int64_t d[2] = {B, K}, db[1] = {B};
    df_tensor *x = df_tensor_new(DF_FLOAT, 2, d, NULL), *y = df_tensor_new(DF_FLOAT, 2, d, NULL);
    df_tensor *lab = df_tensor_new(DF_INT32, 1, db, NULL);
    float *xv = (float *)df_tensor_data(x), *yv = (float *)df_tensor_data(y);
    unsigned seed = 3;
    for (int i = 0; i < B * K; i++) { xv[i] = (float)special(i % 23 == 3 || i % 23 == 7 || i % 23 == 11 ? 1 : i, &seed) * 3; yv[i] = 0; }
    for (int i = 0; i < B; i++) { ((int32_t *)df_tensor_data(lab))[i] = (i * 7) % K; yv[i * K + (i * 7) % K] = 0.75f; yv[i * K + (i * 3) % K] += 0.25f; }
    double sm[B * K], lsm[B * K], loss_s[B], loss_d[B], bp_s[B * K], bp_d[B * K];
    for (int r = 0; r < B; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < K; c++) if (xv[r * K + c] > m) m = xv[r * K + c];
        for (int c = 0; c < K; c++) s += exp(xv[r * K + c] - m);
        loss_s[r] = loss_d[r] = 0;
        for (int c = 0; c < K; c++) {
            int i = r * K + c;
            lsm[i] = xv[i] - m - log(s);
            sm[i] = exp(lsm[i]);
            double hot = c == (r * 7) % K;
            bp_s[i] = sm[i] - hot;
            bp_d[i] = sm[i] - yv[i];
            loss_s[r] -= hot * lsm[i];
            loss_d[r] -= yv[i] * lsm[i];
        }
    }
    int runs = 0;
    for (int k = 0; k < 2; k++) {
        if (df_set_kernel_isa(k ? "avx2" : "portable") != DF_OK) continue;
        df_graph *g = df_graph_new();
        df_output xp = df_placeholder(g, "x", DF_FLOAT, 2, d), yp = df_placeholder(g, "y", DF_FLOAT, 2, d);
        df_output lp = df_placeholder(g, "l", DF_INT32, 1, db);
        df_op_builder *bs = df_op_new(g, "SparseSoftmaxCrossEntropyWithLogits", NULL);
        df_op_add_input(bs, xp); df_op_add_input(bs, lp);
        df_node *ns = df_op_finish(bs);
        df_op_builder *bd = df_op_new(g, "SoftmaxCrossEntropyWithLogits", NULL);
        df_op_add_input(bd, xp); df_op_add_input(bd, yp);
        df_node *nd = df_op_finish(bd);
        df_output f[6] = {op1(g, "Softmax", xp), op1(g, "LogSoftmax", xp), {ns, 0}, {ns, 1}, {nd, 0}, {nd, 1}};
        const double *want[6] = {sm, lsm, loss_s, bp_s, loss_d, bp_d};
        const int n[6] = {B * K, B * K, B, B * K, B, B * K};
        df_output feeds[3] = {xp, yp, lp};
        df_tensor *fv[3] = {x, y, lab}, *out[6] = {NULL};
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        df_session_run(s, feeds, fv, 3, f, out, 6, NULL, 0, &st);
        CHECK_OK(&st);
        for (int o = 0; o < 6 && st.code == DF_OK; o++) {
            const float *r = (const float *)df_tensor_data(out[o]);
            for (int i = 0; i < n[o]; i++)
                if (!(fabs(r[i] - want[o][i]) <= 2e-6 * (1 + fabs(want[o][i])))) {
                    CHECK_MSG(0, "%s output %d [%d]: %.9g, want %.9g", df_kernel_isa(), o, i, r[i], want[o][i]);
                    break;
                }
        }
        for (int o = 0; o < 6; o++) df_tensor_release(out[o]);
        df_session_free(s);
        df_graph_free(g);
        runs++;
    }
    df_set_kernel_isa("auto");
    df_tensor_release(x); df_tensor_release(y); df_tensor_release(lab);
    CHECK(runs >= 1);
}

/* Past 1 MB, Add (same shapes and with a scalar) and BiasAdd are split between intra-op
   threads: every element still right, with 1 and 3 threads. */
DF_TEST(simd_big_elementwise_split_between_threads) {
    enum { R = 700, C = 515 };               /* 1.4 MB of floats; rows not a multiple of anything */
    int64_t d[2] = {R, C}, dc[1] = {C};
    df_tensor *x = df_tensor_new(DF_FLOAT, 2, d, NULL), *y = df_tensor_new(DF_FLOAT, 2, d, NULL);
    df_tensor *bias = df_tensor_new(DF_FLOAT, 1, dc, NULL);
    float *xv = (float *)df_tensor_data(x), *yv = (float *)df_tensor_data(y), *bv = (float *)df_tensor_data(bias);
    for (int i = 0; i < R * C; i++) { xv[i] = (float)(i % 1000) * 0.5f; yv[i] = (float)(i % 7) - 3; }
    for (int j = 0; j < C; j++) bv[j] = (float)j * 0.25f;
    for (int threads = 1; threads <= 3; threads += 2) {
        df_graph *g = df_graph_new();
        df_output xp = df_placeholder(g, "x", DF_FLOAT, 2, d), yp = df_placeholder(g, "y", DF_FLOAT, 2, d);
        df_output bp = df_placeholder(g, "b", DF_FLOAT, 1, dc);
        df_output f[3] = {df_add(g, xp, yp), df_add(g, xp, df_scalar_f32(g, 2)), op2(g, "BiasAdd", xp, bp)};
        CHECK_OK(df_graph_status(g));
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.intra_op_threads = threads;
        df_status st;
        df_session *s = df_session_new(g, &so, &st);
        df_output feeds[3] = {xp, yp, bp};
        df_tensor *fv[3] = {x, y, bias}, *out[3] = {NULL, NULL, NULL};
        df_session_run(s, feeds, fv, 3, f, out, 3, NULL, 0, &st);
        CHECK_OK(&st);
        for (int k = 0; k < 3 && st.code == DF_OK; k++) {
            const float *r = (const float *)df_tensor_data(out[k]);
            int bad = -1;
            for (int i = 0; i < R * C && bad < 0; i++) {
                float want = k == 0 ? xv[i] + yv[i] : k == 1 ? xv[i] + 2 : xv[i] + bv[i % C];
                if (r[i] != want) bad = i;
            }
            CHECK_MSG(bad < 0, "threads %d output %d element %d: %g", threads, k, bad, bad < 0 ? 0.0 : (double)r[bad]);
            df_tensor_release(out[k]);
        }
        df_session_free(s);
        df_graph_free(g);
    }
    df_tensor_release(x); df_tensor_release(y); df_tensor_release(bias);
}

/* Past 1 MB, the memory-bound unary ops (Relu, Neg, Square) and float sums (all elements, over
   the first axis with many or few columns, over the last axis, Mean) are split between intra-op
   threads: the unary results exact, the sums within float tolerance of a float64 reference,
   and every output the same bits with 1 and 3 threads. */
static void big_unary_and_sums(df_dtype t, int64_t rows, int64_t cols) {
    int64_t d[2] = {rows, cols}, n = rows * cols;
    df_tensor *x = df_tensor_new(t, 2, d, NULL);
    double *ref = (double *)malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        double v = sin((double)i * 0.37) * 10 + (double)(i % 13) * 0.01;
        if (t == DF_FLOAT) { ((float *)df_tensor_data(x))[i] = (float)v; ref[i] = (float)v; }
        else { ((double *)df_tensor_data(x))[i] = v; ref[i] = v; }
    }
    enum { N_OUT = 7 };
    df_tensor *first[N_OUT] = {NULL};
    for (int threads = 1; threads <= 3; threads += 2) {
        df_graph *g = df_graph_new();
        df_output xp = df_placeholder(g, "x", t, 2, d);
        int32_t a0 = 0, a1 = 1, both[2] = {0, 1};
        df_output f[N_OUT] = {op1(g, "Relu", xp), op1(g, "Neg", xp), op1(g, "Square", xp),
                              df_reduce_sum(g, xp, 2, both, 0), df_reduce_sum(g, xp, 1, &a0, 0),
                              df_reduce_sum(g, xp, 1, &a1, 0), df_reduce_mean(g, xp, 1, &a0, 0)};
        CHECK_OK(df_graph_status(g));
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.intra_op_threads = threads;
        df_status st;
        df_session *s = df_session_new(g, &so, &st);
        df_tensor *out[N_OUT] = {NULL};
        df_session_run(s, &xp, &x, 1, f, out, N_OUT, NULL, 0, &st);
        CHECK_OK(&st);
        for (int k = 0; k < N_OUT && st.code == DF_OK; k++) {
            int64_t m = df_tensor_num_elements(out[k]);
            CHECK_EQ_INT(m, k < 3 ? n : k == 3 ? 1 : k == 5 ? rows : cols);
            int bad = -1;
            double worst = 0;
            for (int64_t i = 0; i < m && bad < 0; i++) {
                double got = t == DF_FLOAT ? ((float *)df_tensor_data(out[k]))[i] : ((double *)df_tensor_data(out[k]))[i];
                if (k < 3) {
                    double v = ref[i], want = k == 0 ? (v > 0 ? v : 0) : k == 1 ? -v : v * v;
                    if (t == DF_FLOAT) want = (float)want;
                    if (got != want) bad = (int)i;
                    continue;
                }
                double want = 0, mag = 0;
                int64_t cnt = k == 3 ? n : k == 5 ? cols : rows;
                for (int64_t q = 0; q < cnt; q++) {
                    double v = k == 3 ? ref[q] : k == 5 ? ref[i * cols + q] : ref[q * cols + i];
                    want += v; mag += fabs(v);
                }
                if (k == 6) { want /= (double)rows; mag /= (double)rows; }
                double err = fabs(got - want) / (mag + 1e-30);
                if (err > worst) worst = err;
            }
            CHECK_MSG(bad < 0, "%s %lldx%lld threads %d output %d element %d differs", df_dtype_name(t), (long long)rows,
                      (long long)cols, threads, k, bad);
            CHECK_MSG(worst <= (t == DF_FLOAT ? 1e-7 : 1e-12), "%s %lldx%lld threads %d output %d: error %.3g", df_dtype_name(t),
                      (long long)rows, (long long)cols, threads, k, worst);
            if (!first[k]) { first[k] = out[k]; continue; }
            CHECK_MSG(memcmp(df_tensor_data(first[k]), df_tensor_data(out[k]), (size_t)m * df_dtype_size(t)) == 0,
                      "%s %lldx%lld output %d: 1 and 3 threads give different bits", df_dtype_name(t), (long long)rows,
                      (long long)cols, k);
            df_tensor_release(out[k]);
        }
        df_session_free(s);
        df_graph_free(g);
    }
    for (int k = 0; k < N_OUT; k++) df_tensor_release(first[k]);
    df_tensor_release(x);
    free(ref);
}
DF_TEST(simd_big_unary_and_sums_split_between_threads) {
    big_unary_and_sums(DF_FLOAT, 700, 515);      /* 1.4 MB: many rows and many columns */
    big_unary_and_sums(DF_FLOAT, 40000, 10);     /* few columns: column sums by row blocks */
    big_unary_and_sums(DF_DOUBLE, 300, 521);
    big_unary_and_sums(DF_FLOAT, 1, 300001);     /* one long row: blocks of a fixed size */
}
