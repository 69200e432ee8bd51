/* test_extra_ops.c - Split, SplitV, DynamicStitch, Sin and Cos (src/kernels/extra.c): values and
   gradients against TensorFlow 2.21's (the numbers below are what TensorFlow printed for the same
   inputs: tf.raw_ops.Split/SplitV/DynamicStitch, tf.sin, tf.cos and tf.GradientTape), and each
   kernel's bad-input status. Public API and the harness only. */
#include "harness.h"
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})

/* A Const of dtype t (float, double or int32) holding v. */
static df_output konst(df_graph *g, df_dtype t, int rank, const int64_t *dims, const double *v) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (!x) return df_const(g, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = (float)v[i];
        else if (t == DF_DOUBLE) ((double *)df_tensor_data(x))[i] = v[i];
        else ((int32_t *)df_tensor_data(x))[i] = (int32_t)v[i];
    }
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
static df_output fconst(df_graph *g, int rank, const int64_t *dims, const double *v) { return konst(g, DF_FLOAT, rank, dims, v); }

/* Runs the fetches of g (n at most 8); the values go to out[], the status is returned. */
static df_code run(df_graph *g, const df_output *fetches, int n, df_tensor **out, df_status *st) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    df_session *s = df_session_new(g, NULL, st);
    if (!s) return st->code;
    df_session_run(s, NULL, NULL, 0, fetches, out, n, NULL, 0, st);
    df_session_free(s);
    return st->code;
}
/* t has shape dims and the values want (TensorFlow's), to 1e-6 relative. */
static void check_tensor(const char *what, const df_tensor *t, int rank, const int64_t *dims, const double *want) {
    CHECK_MSG(t != NULL, "%s: no value", what);
    if (!t) return;
    int same = df_tensor_rank(t) == rank;
    for (int d = 0; same && d < rank; d++) same = df_tensor_dim(t, d) == dims[d];
    CHECK_MSG(same, "%s: shape differs (rank %d)", what, df_tensor_rank(t));
    if (!same) return;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) {
        double got = df_tensor_dtype(t) == DF_DOUBLE ? ((const double *)df_tensor_data(t))[i] : ((const float *)df_tensor_data(t))[i];
        CHECK_MSG(fabs(got - want[i]) <= 1e-6 * (1 + fabs(want[i])), "%s[%lld]: %.9g, TensorFlow %.9g", what, (long long)i, got, want[i]);
    }
}
static df_node *split_node(df_graph *g, df_output x, int axis, int num) {
    df_op_builder *b = df_op_new(g, "Split", NULL);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_add_input(b, x);
    df_op_set_attr_int(b, "num_split", num);
    return df_op_finish(b);
}
static df_node *splitv_node(df_graph *g, df_output x, df_output sizes, int axis, int num) {
    df_op_builder *b = df_op_new(g, "SplitV", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, sizes);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_set_attr_int(b, "num_split", num);
    return df_op_finish(b);
}
static df_output sum_all(df_graph *g, df_output x, int rank) {
    df_op_builder *b = df_op_new(g, "Sum", NULL);
    int64_t n = rank;
    double axes[DF_MAX_RANK];
    for (int i = 0; i < rank; i++) axes[i] = i;
    df_op_add_input(b, x);
    df_op_add_input(b, konst(g, DF_INT32, 1, &n, axes));
    df_node *s = df_op_finish(b);
    df_output o = {s, 0};
    return o;
}
static df_output op1(df_graph *g, const char *op, df_output x) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(split_values_and_gradient_match_tensorflow) {
    df_graph *g = df_graph_new();
    /* x = arange(12).reshape(2, 6) * 0.5 - 1, three ways along axis -1 */
    double xv[12];
    for (int i = 0; i < 12; i++) xv[i] = i * 0.5 - 1.0;
    df_output x = fconst(g, 2, D(2, 6), xv);
    df_node *s = split_node(g, x, -1, 3);
    CHECK_OK(df_graph_status(g));
    /* loss = sum(o0 * w0) + sum(o2 * w2): o1 gets no gradient (zeros in the concatenation) */
    df_output o0 = {s, 0}, o1 = {s, 1}, o2 = {s, 2};
    df_output loss = df_add(g, sum_all(g, df_mul(g, o0, fconst(g, 2, D(2, 2), F(1.5, -2, 0.25, 3))), 2),
                            sum_all(g, df_mul(g, o2, fconst(g, 2, D(2, 2), F(-1, 0.5, 2, 4))), 2));
    df_output dx;
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &x, &dx), DF_OK);
    df_output f[4] = {o0, o1, o2, dx};
    df_tensor *out[4];
    df_status st;
    CHECK_EQ_INT(run(g, f, 4, out, &st), DF_OK);
    CHECK_OK(&st);
    check_tensor("split0", out[0], 2, D(2, 2), F(-1, -0.5, 2, 2.5));
    check_tensor("split1", out[1], 2, D(2, 2), F(0, 0.5, 3, 3.5));
    check_tensor("split2", out[2], 2, D(2, 2), F(1, 1.5, 4, 4.5));
    check_tensor("split grad", out[3], 2, D(2, 6), F(1.5, -2, 0, 0, -1, 0.5, 0.25, 3, 0, 0, 2, 4));
    for (int i = 0; i < 4; i++) df_tensor_release(out[i]);
    /* static shapes from the shape function */
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(o1, dims), 2);
    CHECK(dims[0] == 2 && dims[1] == 2);
    df_graph_free(g);
}

DF_TEST(splitv_values_and_gradient_match_tensorflow) {
    df_graph *g = df_graph_new();
    double yv[10];
    for (int i = 0; i < 10; i++) yv[i] = i - 4.5;
    df_output y = fconst(g, 2, D(5, 2), yv);
    df_node *s = splitv_node(g, y, konst(g, DF_INT32, 1, D(3), F(2, -1, 1)), 0, 3);   /* the -1 is 2 */
    CHECK_OK(df_graph_status(g));
    df_output o0 = {s, 0}, o1 = {s, 1}, o2 = {s, 2};
    df_output loss = df_add(g, sum_all(g, df_mul(g, o2, fconst(g, 2, D(1, 2), F(2, -1))), 2), sum_all(g, df_mul(g, o0, o0), 2));
    df_output dy;
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &y, &dy), DF_OK);
    df_output f[4] = {o0, o1, o2, dy};
    df_tensor *out[4];
    df_status st;
    CHECK_EQ_INT(run(g, f, 4, out, &st), DF_OK);
    CHECK_OK(&st);
    check_tensor("splitv0", out[0], 2, D(2, 2), F(-4.5, -3.5, -2.5, -1.5));
    check_tensor("splitv1", out[1], 2, D(2, 2), F(-0.5, 0.5, 1.5, 2.5));
    check_tensor("splitv2", out[2], 2, D(1, 2), F(3.5, 4.5));
    check_tensor("splitv grad", out[3], 2, D(5, 2), F(-9, -7, -5, -3, 0, 0, 0, 0, 2, -1));
    for (int i = 0; i < 4; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}

DF_TEST(split_bad_inputs_give_tensorflows_status) {
    df_status st;
    /* uneven: refused when the graph is built (static shape) */
    df_graph *g = df_graph_new();
    split_node(g, fconst(g, 2, D(2, 5), F(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)), 1, 2);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT,
                 "Number of ways to split should evenly divide the split dimension, but got split_dim 1 (size = 5) and num_split 2");
    df_graph_free(g);
    /* and at run time, the shape unknown until then */
    g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_FLOAT, -1, NULL);
    df_node *s = split_node(g, p, 1, 2);
    df_output o = {s, 0};
    df_session *sess = df_session_new(g, NULL, &st);
    df_tensor *v = df_tensor_new(DF_FLOAT, 2, D(2, 5), NULL), *out = NULL;
    memset(df_tensor_data(v), 0, 40);
    df_session_run(sess, &p, &v, 1, &o, &out, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "should evenly divide the split dimension");
    CHECK(strstr(st.message, s ? df_node_name(s) : "?") != NULL);
    /* axis out of range */
    df_node *s3 = split_node(g, p, 2, 1);
    df_output o3 = {s3, 0};
    df_session_run(sess, &p, &v, 1, &o3, &out, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "-input rank(-2) <= split_dim < input rank (2), but got 2");
    df_tensor_release(v);
    df_tensor_release(out);
    df_session_free(sess);
    df_graph_free(g);
    /* SplitV: two -1s; sizes that do not add up */
    g = df_graph_new();
    df_output y = fconst(g, 1, D(4), F(1, 2, 3, 4));
    splitv_node(g, y, konst(g, DF_INT32, 1, D(3), F(-1, -1, 1)), 0, 3);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "There can only be one -1 in the input.");
    df_graph_free(g);
    g = df_graph_new();
    y = fconst(g, 1, D(4), F(1, 2, 3, 4));
    splitv_node(g, y, konst(g, DF_INT32, 1, D(2), F(1, 2)), 0, 2);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Determined shape must either match input shape along split_dim exactly");
    df_graph_free(g);
}

static df_node *stitch(df_graph *g, const char *op, const df_output *ix, const df_output *data, int n) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input_list(b, ix, n);
    df_op_add_input_list(b, data, n);
    return df_op_finish(b);
}

DF_TEST(dynamic_stitch_values_and_gradient_match_tensorflow) {
    static const char *const ops[] = {"DynamicStitch", "ParallelDynamicStitch"};
    for (int k = 0; k < 2; k++) {
        df_graph *g = df_graph_new();
        /* TensorFlow's documentation example: indices 6, [4, 1], [[5, 2], [0, 3]] */
        df_output ix[3] = {konst(g, DF_INT32, 0, NULL, F(6)), konst(g, DF_INT32, 1, D(2), F(4, 1)),
                           konst(g, DF_INT32, 2, D(2, 2), F(5, 2, 0, 3))};
        df_output data[3] = {fconst(g, 1, D(2), F(61, 62)), fconst(g, 2, D(2, 2), F(41, 42, 11, 12)),
                             fconst(g, 3, D(2, 2, 2), F(51, 52, 21, 22, 1, 2, 31, 32))};
        df_node *s = stitch(g, ops[k], ix, data, 3);
        CHECK_OK(df_graph_status(g));
        df_output merged = {s, 0};
        int64_t dims[DF_MAX_RANK];
        CHECK_EQ_INT(df_output_shape(merged, dims), 2);   /* constant indices: [7, 2] */
        CHECK(dims[0] == 7 && dims[1] == 2);
        double w[14];
        for (int i = 0; i < 14; i++) w[i] = i * 0.5 - 2;
        df_output loss = sum_all(g, df_mul(g, merged, fconst(g, 2, D(7, 2), w)), 2), dd[3];
        CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 3, data, dd), DF_OK);
        /* gaps are zeros, a duplicated index takes the later value */
        df_output ix2[2] = {konst(g, DF_INT32, 1, D(2), F(0, 4)), konst(g, DF_INT32, 1, D(2), F(4, 2))};
        df_output data2[2] = {fconst(g, 1, D(2), F(1, 2)), fconst(g, 1, D(2), F(3, 5))};
        df_output gap = {stitch(g, ops[k], ix2, data2, 2), 0};
        df_output f[5] = {merged, dd[0], dd[1], dd[2], gap};
        df_tensor *out[5];
        df_status st;
        CHECK_EQ_INT(run(g, f, 5, out, &st), DF_OK);
        CHECK_OK(&st);
        check_tensor("stitch", out[0], 2, D(7, 2), F(1, 2, 11, 12, 21, 22, 31, 32, 41, 42, 51, 52, 61, 62));
        check_tensor("stitch grad0", out[1], 1, D(2), F(4, 4.5));
        check_tensor("stitch grad1", out[2], 2, D(2, 2), F(2, 2.5, -1, -0.5));
        check_tensor("stitch grad2", out[3], 3, D(2, 2, 2), F(3, 3.5, 0, 0.5, -2, -1.5, 1, 1.5));
        check_tensor("stitch gaps and duplicates", out[4], 1, D(5), F(1, 0, 5, 0, 3));
        for (int i = 0; i < 5; i++) df_tensor_release(out[i]);
        df_graph_free(g);
    }
}

DF_TEST(dynamic_stitch_bad_inputs_give_a_status) {
    df_graph *g = df_graph_new();
    df_output ix = konst(g, DF_INT32, 1, D(2), F(0, -1)), data = fconst(g, 1, D(2), F(1, 2));
    df_output m = {stitch(g, "DynamicStitch", &ix, &data, 1), 0};
    df_tensor *out[1];
    df_status st;
    run(g, &m, 1, out, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "indices[1] is out of range");
    df_tensor_release(out[0]);
    df_graph_free(g);
    /* data whose shape does not start with its indices' shape */
    g = df_graph_new();
    df_output ix2[2] = {konst(g, DF_INT32, 1, D(2), F(0, 1)), konst(g, DF_INT32, 1, D(1), F(2))};
    df_output p = df_placeholder(g, "p", DF_FLOAT, -1, NULL);
    df_output data2[2] = {fconst(g, 2, D(2, 3), F(1, 2, 3, 4, 5, 6)), p};
    m.node = stitch(g, "DynamicStitch", ix2, data2, 2);
    CHECK_OK(df_graph_status(g));
    df_session *sess = df_session_new(g, NULL, &st);
    df_tensor *v = df_tensor_new(DF_FLOAT, 2, D(2, 3), NULL);
    memset(df_tensor_data(v), 0, 24);
    out[0] = NULL;
    df_session_run(sess, &p, &v, 1, &m, out, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "data[1].shape = [2,3] does not start with indices[1].shape = [1]");
    /* data of a lower rank than its indices (unknown when the graph was built) */
    df_output q = df_placeholder(g, "q", DF_FLOAT, -1, NULL);
    df_output ix3 = konst(g, DF_INT32, 2, D(1, 1), F(0));
    df_output m3 = {stitch(g, "DynamicStitch", &ix3, &q, 1), 0};
    df_tensor *qv = df_tensor_new(DF_FLOAT, 1, D(1), NULL);
    ((float *)df_tensor_data(qv))[0] = 1;
    df_tensor_release(out[0]);
    out[0] = NULL;
    df_session_run(sess, &q, &qv, 1, &m3, out, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "data[0] has rank 1, less than the rank 2 of indices[0]");
    df_tensor_release(qv);
    df_tensor_release(v);
    df_tensor_release(out[0]);
    df_session_free(sess);
    df_graph_free(g);
}

DF_TEST(sin_cos_values_and_gradients_match_tensorflow) {
    df_graph *g = df_graph_new();
    const double *xs = F(-2.5, -0.3, 0, 0.7, 3.0, 10.0);
    df_output x = fconst(g, 1, D(6), xs);
    df_output s = op1(g, "Sin", x), c = op1(g, "Cos", x);
    /* d/dx sum(sin(x) * cos(2x)) */
    df_output loss = sum_all(g, df_mul(g, s, op1(g, "Cos", df_mul(g, x, df_scalar_f32(g, 2.0f)))), 1), dx;
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &x, &dx), DF_OK);
    /* second order in float64: d/dx sum((d sum(sin x)/dx)^2) = -2 sin(x) cos(x) */
    df_output xd = konst(g, DF_DOUBLE, 1, D(6), xs), g1, g2;
    df_output l1 = sum_all(g, op1(g, "Sin", xd), 1);
    CHECK_EQ_INT(df_gradients(g, 1, &l1, NULL, 1, &xd, &g1), DF_OK);
    df_output l2 = sum_all(g, df_mul(g, g1, g1), 1);
    CHECK_EQ_INT(df_gradients(g, 1, &l2, NULL, 1, &xd, &g2), DF_OK);
    df_output f[4] = {s, c, dx, g2};
    df_tensor *out[4];
    df_status st;
    CHECK_EQ_INT(run(g, f, 4, out, &st), DF_OK);
    CHECK_OK(&st);
    check_tensor("sin", out[0], 1, D(6), F(-0.598472118, -0.295520216, 0, 0.64421767, 0.141120002, -0.54402113));
    check_tensor("cos", out[1], 1, D(6), F(-0.801143587, 0.955336511, 1, 0.764842212, -0.989992499, -0.839071512));
    check_tensor("trig grad", out[2], 1, D(6), F(0.920524716, 0.454746693, 1, -1.13969016, -0.871699095, 0.650913));
    check_tensor("sin second order", out[3], 1, D(6), F(-0.958924275, 0.564642493, -0, -0.985449726, 0.279415498, -0.912945251));
    for (int i = 0; i < 4; i++) df_tensor_release(out[i]);
    /* integers are not allowed (TensorFlow's Sin takes floating and complex types only) */
    op1(g, "Sin", df_scalar_i32(g, 1));
    CHECK(df_graph_status(g)->code == DF_INVALID_ARGUMENT);
    df_graph_free(g);
}
