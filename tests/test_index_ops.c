/* test_index_ops.c - the indexing, scatter, segment and set ops of src/kernels/index.c
   (GatherNd, ScatterNd, TensorScatterUpdate/Add/Sub/Max/Min, Where, Unique, ListDiff,
   Segment{Sum,Mean,Max,Min,Prod}, UnsortedSegment{Max,Min,Prod}, ReverseV2, Roll, ShapeN,
   InTopKV2, Bincount, DenseBincount): values against what TensorFlow 2.21 printed for the
   same inputs (tf.raw_ops, eager); gradients against central differences in float64; bad
   indices and shapes give TensorFlow's InvalidArgument wording naming the node. Public API and
   the harness only. */
#include "harness.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})

/* A Const of dtype t holding v. */
static df_output konst(df_graph *g, df_dtype t, int rank, const int64_t *dims, const double *v) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (!x) return df_const(g, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        void *p = df_tensor_data(x);
        switch (t) {
        case DF_FLOAT: ((float *)p)[i] = (float)v[i]; break;
        case DF_DOUBLE: ((double *)p)[i] = v[i]; break;
        case DF_BOOL: ((uint8_t *)p)[i] = v[i] != 0; break;
        case DF_INT64: ((int64_t *)p)[i] = (int64_t)v[i]; break;
        default: ((int32_t *)p)[i] = (int32_t)v[i]; break;
        }
    }
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
static df_node *opn(df_graph *g, const char *op, const char *name, int n, const df_output *ins) {
    df_op_builder *b = df_op_new(g, op, name);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    return df_op_finish(b);
}
static df_output op(df_graph *g, const char *type, int n, const df_output *ins) {
    df_output o = {opn(g, type, NULL, n, ins), 0};
    return o;
}
static df_code run(df_graph *g, const df_output *fetches, int n, df_tensor **out, df_status *st) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    df_session *s = df_session_new(g, NULL, st);
    if (!s) return st->code;
    df_session_run(s, NULL, NULL, 0, fetches, out, n, NULL, 0, st);
    df_session_free(s);
    return st->code;
}
static double elem(const df_tensor *t, int64_t i) {
    const void *p = df_tensor_data(t);
    switch (df_tensor_dtype(t)) {
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i];
    default: return NAN;
    }
}
static void check_values(const char *what, const df_tensor *t, df_dtype dt, int rank, const int64_t *dims, const double *want) {
    CHECK_MSG(t != NULL, "%s: no value", what);
    if (!t) return;
    CHECK_MSG(df_tensor_dtype(t) == dt, "%s: dtype %s", what, df_dtype_name(df_tensor_dtype(t)));
    int ok = df_tensor_rank(t) == rank;
    for (int d = 0; ok && d < rank; d++) ok = df_tensor_dim(t, d) == dims[d];
    CHECK_MSG(ok, "%s: shape differs (rank %d, dim0 %lld)", what, df_tensor_rank(t), rank ? (long long)df_tensor_dim(t, 0) : 0ll);
    if (!ok) return;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) {
        double got = elem(t, i), w = want[i];
        int same = isnan(w) ? isnan(got) : got == w || fabs(got - w) <= 1e-6 * fabs(w);
        CHECK_MSG(same, "%s[%lld]: %.17g, TensorFlow %.17g", what, (long long)i, got, w);
    }
}
/* Runs one output and checks it. */
static void expect(const char *what, df_graph *g, df_output y, df_dtype dt, int rank, const int64_t *dims, const double *want) {
    df_tensor *out = NULL;
    df_status st;
    CHECK_MSG(run(g, &y, 1, &out, &st) == DF_OK, "%s: %s", what, st.message);
    check_values(what, out, dt, rank, dims, want);
    df_tensor_release(out);
}
/* Runs y, expecting code and a message holding needle and the node's name. */
static void expect_error(const char *what, df_graph *g, df_output y, df_code code, const char *needle, const char *node) {
    df_tensor *out = NULL;
    df_status st;
    if (!y.node) {            /* failed when built: the graph's status */
        const df_status *gs = df_graph_status(g);
        CHECK_MSG(gs->code == code && strstr(gs->message, needle) && strstr(gs->message, node), "%s: %s: %s", what,
                  df_code_name(gs->code), gs->message);
        return;
    }
    run(g, &y, 1, &out, &st);
    CHECK_MSG(st.code == code, "%s: code %s: %s", what, df_code_name(st.code), st.message);
    CHECK_MSG(strstr(st.message, needle) != NULL, "%s: message '%s' lacks '%s'", what, st.message, needle);
    char tag[128];
    snprintf(tag, sizeof tag, "{{node %s}}", node);
    CHECK_MSG(strstr(st.message, tag) != NULL, "%s: message '%s' does not name %s", what, st.message, node);
    df_tensor_release(out);
}
static const double P12[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

DF_TEST(gather_nd_matches_tensorflow) {
    df_graph *g = df_graph_new();
    df_output p = konst(g, DF_DOUBLE, 3, D(3, 2, 2), P12);
    df_output in[2] = {p, konst(g, DF_INT32, 2, D(2, 2), F(0, 1, 2, 0))};
    expect("rows", g, op(g, "GatherNd", 2, in), DF_DOUBLE, 2, D(2, 2), F(2, 3, 8, 9));
    in[1] = konst(g, DF_INT64, 3, D(2, 1, 1), F(1, 2));
    expect("int64 slices", g, op(g, "GatherNd", 2, in), DF_DOUBLE, 4, D(2, 1, 2, 2), F(4, 5, 6, 7, 8, 9, 10, 11));
    in[1] = konst(g, DF_INT32, 2, D(2, 3), F(1, 0, 1, 2, 1, 0));
    expect("elements", g, op(g, "GatherNd", 2, in), DF_DOUBLE, 1, D(2), F(5, 10));
    in[0] = konst(g, DF_FLOAT, 1, D(2), F(1, 2));
    in[1] = konst(g, DF_INT32, 2, D(2, 0), F(0));
    expect("empty index rows", g, op(g, "GatherNd", 2, in), DF_FLOAT, 2, D(2, 2), F(1, 2, 1, 2));
    df_graph_free(g);
}
DF_TEST(scatter_nd_and_tensor_scatter_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output in[3] = {konst(g, DF_INT32, 2, D(3, 1), F(1, 3, 1)), konst(g, DF_DOUBLE, 2, D(3, 2), F(1, 2, 3, 4, 5, 6)),
                       konst(g, DF_INT32, 1, D(2), F(4, 2))};
    expect("ScatterNd (duplicates add)", g, op(g, "ScatterNd", 3, in), DF_DOUBLE, 2, D(4, 2), F(0, 0, 6, 8, 0, 0, 3, 4));
    static const char *ops[] = {"TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMax", "TensorScatterMin"};
    static const double want[5][4] = {{1, 9, -2, 7}, {1, 16, -2, 7}, {1, -6, -2, -7}, {1, 9, -2, 7}, {1, 2, -2, 0}};
    for (int k = 0; k < 5; k++) {
        df_dtype t = k % 2 ? DF_FLOAT : DF_INT64;
        df_output ts[3] = {konst(g, t, 1, D(4), F(1, 5, -2, 0)), konst(g, k == 4 ? DF_INT64 : DF_INT32, 2, D(3, 1), F(1, 3, 1)),
                           konst(g, t, 1, D(3), F(2, 7, 9))};
        expect(ops[k], g, op(g, ops[k], 3, ts), t, 1, D(4), want[k]);
    }
    df_graph_free(g);
}
DF_TEST(where_unique_list_diff_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output x = konst(g, DF_DOUBLE, 2, D(2, 3), F(0, 1.5, 0, NAN, -0.0, 2));
    expect("Where (NaN true, -0 false)", g, op(g, "Where", 1, &x), DF_INT64, 2, D(3, 2), F(0, 1, 1, 0, 1, 2));
    x = konst(g, DF_BOOL, 3, D(1, 2, 2), F(1, 0, 0, 1));
    expect("Where bool", g, op(g, "Where", 1, &x), DF_INT64, 2, D(2, 3), F(0, 0, 0, 0, 1, 1));
    x = konst(g, DF_INT32, 2, D(2, 2), F(0, 0, 0, 0));
    expect("Where none", g, op(g, "Where", 1, &x), DF_INT64, 2, D(0, 2), F(0));

    df_output u = konst(g, DF_INT32, 1, D(5), F(3, 1, 3, 2, 1));
    df_node *un = opn(g, "Unique", NULL, 1, &u);
    df_output uo[2] = {{un, 0}, {un, 1}};
    df_tensor *out[2];
    df_status st;
    CHECK_MSG(run(g, uo, 2, out, &st) == DF_OK, "%s", st.message);
    check_values("Unique y", out[0], DF_INT32, 1, D(3), F(3, 1, 2));
    check_values("Unique idx", out[1], DF_INT32, 1, D(5), F(0, 1, 0, 2, 1));
    df_tensor_release(out[0]); df_tensor_release(out[1]);
    u = konst(g, DF_DOUBLE, 1, D(6), F(0.0, -0.0, NAN, NAN, 1, 1));
    df_op_builder *b = df_op_new(g, "Unique", NULL);
    df_op_add_input(b, u);
    df_op_set_attr_type(b, "out_idx", DF_INT64);
    un = df_op_finish(b);
    uo[0].node = un; uo[1].node = un;
    CHECK_MSG(run(g, uo, 2, out, &st) == DF_OK, "%s", st.message);
    check_values("Unique y (float: -0 is 0, NaNs apart)", out[0], DF_DOUBLE, 1, D(4), F(0, NAN, NAN, 1));
    check_values("Unique idx int64", out[1], DF_INT64, 1, D(6), F(0, 0, 1, 2, 3, 3));
    if (out[0]) CHECK(!signbit(elem(out[0], 0)));
    df_tensor_release(out[0]); df_tensor_release(out[1]);

    df_output ld[2] = {konst(g, DF_DOUBLE, 1, D(6), F(1, NAN, -0.0, 3, 2, 1)), konst(g, DF_DOUBLE, 1, D(3), F(1, 0, NAN))};
    df_node *ln = opn(g, "ListDiff", NULL, 2, ld);
    df_output lo[2] = {{ln, 0}, {ln, 1}};
    CHECK_MSG(run(g, lo, 2, out, &st) == DF_OK, "%s", st.message);
    check_values("ListDiff out", out[0], DF_DOUBLE, 1, D(3), F(NAN, 3, 2));
    check_values("ListDiff idx", out[1], DF_INT32, 1, D(3), F(1, 3, 4));
    df_tensor_release(out[0]); df_tensor_release(out[1]);
    df_graph_free(g);
}
static const double SEG_D[] = {1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10};
DF_TEST(segment_ops_match_tensorflow) {
    static const char *ops[] = {"SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"};
    static const double want[5][8] = {{4, 2, 0, 0, 7.5, -2, 9, 10}, {2, 1, 0, 0, 3.75, -1, 9, 10}, {3, 4, 0, 0, 7, 6, 9, 10},
                                      {1, -2, 0, 0, 0.5, -8, 9, 10}, {3, -8, 1, 1, 3.5, -48, 9, 10}};
    df_graph *g = df_graph_new();
    for (int k = 0; k < 5; k++)
        for (int t = 0; t < 2; t++) {
            df_output in[2] = {konst(g, t ? DF_FLOAT : DF_DOUBLE, 2, D(5, 2), SEG_D), konst(g, t ? DF_INT64 : DF_INT32, 1, D(5), F(0, 0, 2, 2, 3))};
            expect(ops[k], g, op(g, ops[k], 2, in), t ? DF_FLOAT : DF_DOUBLE, 2, D(4, 2), want[k]);
        }
    df_output in[2] = {konst(g, DF_INT32, 1, D(4), F(1, 2, 4, 7)), konst(g, DF_INT64, 1, D(4), F(0, 0, 2, 2))};
    expect("SegmentMean int32 (integer division)", g, op(g, "SegmentMean", 2, in), DF_INT32, 1, D(3), F(1, 0, 5));
    in[0] = konst(g, DF_FLOAT, 2, D(0, 3), F(0));
    in[1] = konst(g, DF_INT32, 1, D(0), F(0));
    expect("SegmentSum of nothing", g, op(g, "SegmentSum", 2, in), DF_FLOAT, 2, D(0, 3), F(0));
    /* large enough to be split between threads: every row its own segment twice */
    enum { N = 40000 };
    static double big[2 * N], ids[2 * N], want_big[N];
    for (int i = 0; i < 2 * N; i++) { big[i] = (i % 7) - 3; ids[i] = i / 2; }
    for (int i = 0; i < N; i++) want_big[i] = big[2 * i] + big[2 * i + 1];
    in[0] = konst(g, DF_FLOAT, 2, D(2 * N, 1), big);
    in[1] = konst(g, DF_INT32, 1, D(2 * N), ids);
    expect("SegmentSum large", g, op(g, "SegmentSum", 2, in), DF_FLOAT, 2, D(N, 1), want_big);
    df_graph_free(g);
}
DF_TEST(unsorted_segment_max_min_prod_match_tensorflow) {
    static const char *ops[] = {"UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"};
    const double FM = 3.4028234663852886e+38, IM = 2147483647.0;
    const double wf[3][6] = {{1, -FM, 7, -FM, -2, -FM}, {0.5, FM, 7, FM, -8, FM}, {0.5, 1, 7, 1, 16, 1}};
    const double wi[3][6] = {{5, -IM - 1, 7, -IM - 1, -2, -IM - 1}, {1, IM, 7, IM, -8, IM}, {5, 1, 7, 1, 16, 1}};
    df_graph *g = df_graph_new();
    for (int k = 0; k < 3; k++) {
        df_output in[3] = {konst(g, DF_FLOAT, 1, D(6), F(1, -2, 3, 0.5, 7, -8)), konst(g, DF_INT32, 1, D(6), F(0, 4, -1, 0, 2, 4)),
                           konst(g, DF_INT32, 0, NULL, F(6))};
        expect(ops[k], g, op(g, ops[k], 3, in), DF_FLOAT, 1, D(6), wf[k]);
        in[0] = konst(g, DF_INT32, 1, D(6), F(1, -2, 3, 5, 7, -8));
        in[2] = konst(g, DF_INT64, 0, NULL, F(6));
        expect(ops[k], g, op(g, ops[k], 3, in), DF_INT32, 1, D(6), wi[k]);
    }
    df_graph_free(g);
}
DF_TEST(reverse_roll_shape_n_match_tensorflow) {
    double x24[24];
    for (int i = 0; i < 24; i++) x24[i] = i;
    df_graph *g = df_graph_new();
    df_output x = konst(g, DF_DOUBLE, 3, D(2, 3, 4), x24);
    df_output in[3] = {x, konst(g, DF_INT32, 1, D(2), F(0, 2))};
    expect("ReverseV2 [0,2]", g, op(g, "ReverseV2", 2, in), DF_DOUBLE, 3, D(2, 3, 4),
           F(15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8));
    in[1] = konst(g, DF_INT64, 1, D(1), F(-2));
    expect("ReverseV2 [-2]", g, op(g, "ReverseV2", 2, in), DF_DOUBLE, 3, D(2, 3, 4),
           F(8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 20, 21, 22, 23, 16, 17, 18, 19, 12, 13, 14, 15));
    in[1] = konst(g, DF_INT32, 1, D(0), F(0));
    expect("ReverseV2 []", g, op(g, "ReverseV2", 2, in), DF_DOUBLE, 3, D(2, 3, 4), x24);
    df_output m = konst(g, DF_INT32, 2, D(3, 4), P12);
    df_output r[3] = {m, konst(g, DF_INT32, 1, D(2), F(1, -3)), konst(g, DF_INT32, 1, D(2), F(0, 1))};
    expect("Roll", g, op(g, "Roll", 3, r), DF_INT32, 2, D(3, 4), F(11, 8, 9, 10, 3, 0, 1, 2, 7, 4, 5, 6));
    r[1] = konst(g, DF_INT64, 1, D(2), F(5, 2));
    r[2] = konst(g, DF_INT32, 1, D(2), F(1, -1));
    expect("Roll one axis twice", g, op(g, "Roll", 3, r), DF_INT32, 2, D(3, 4), F(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8));
    r[0] = x; r[1] = konst(g, DF_INT32, 0, NULL, F(7)); r[2] = konst(g, DF_INT32, 0, NULL, F(1));
    expect("Roll scalar", g, op(g, "Roll", 3, r), DF_DOUBLE, 3, D(2, 3, 4),
           F(8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 16, 17, 18, 19));

    df_output sn[3] = {x, konst(g, DF_DOUBLE, 2, D(3, 4), P12), konst(g, DF_DOUBLE, 0, NULL, F(1))};
    df_op_builder *b = df_op_new(g, "ShapeN", NULL);
    df_op_add_input_list(b, sn, 3);
    df_op_set_attr_type(b, "out_type", DF_INT64);
    df_node *s = df_op_finish(b);
    df_output so[3] = {{s, 0}, {s, 1}, {s, 2}};
    df_tensor *out[3];
    df_status st;
    CHECK_MSG(run(g, so, 3, out, &st) == DF_OK, "%s", st.message);
    check_values("ShapeN 0", out[0], DF_INT64, 1, D(3), F(2, 3, 4));
    check_values("ShapeN 1", out[1], DF_INT64, 1, D(2), F(3, 4));
    check_values("ShapeN 2", out[2], DF_INT64, 1, D(0), F(0));
    for (int i = 0; i < 3; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}
DF_TEST(in_top_k_and_bincount_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output p = konst(g, DF_FLOAT, 2, D(4, 3), F(1, 3, 3, 3, 3, 1, 0.1, NAN, 0.2, 5, 4, 3));
    df_output in[3] = {p, konst(g, DF_INT32, 1, D(4), F(1, 1, 1, 7)), konst(g, DF_INT32, 0, NULL, F(1))};
    expect("InTopKV2 (ties in, NaN and bad targets out)", g, op(g, "InTopKV2", 3, in), DF_BOOL, 1, D(4), F(1, 1, 0, 0));
    in[1] = konst(g, DF_INT64, 1, D(4), F(0, 0, 2, 1));
    in[2] = konst(g, DF_INT64, 0, NULL, F(2));
    expect("InTopKV2 k=2", g, op(g, "InTopKV2", 3, in), DF_BOOL, 1, D(4), F(0, 1, 1, 1));

    df_output bc[3] = {konst(g, DF_INT32, 1, D(5), F(1, 1, 2, 7, 0)), konst(g, DF_INT32, 0, NULL, F(4)),
                       konst(g, DF_FLOAT, 1, D(5), F(0.5, 1, 2, 3, 4))};
    expect("Bincount weighted", g, op(g, "Bincount", 3, bc), DF_FLOAT, 1, D(4), F(4, 1.5, 2, 0));
    bc[0] = konst(g, DF_INT32, 2, D(2, 2), F(1, 1, 2, 7));
    bc[1] = konst(g, DF_INT32, 0, NULL, F(3));
    bc[2] = konst(g, DF_INT32, 1, D(0), F(0));
    expect("Bincount counts", g, op(g, "Bincount", 3, bc), DF_INT32, 1, D(3), F(0, 2, 1));
    bc[0] = konst(g, DF_INT64, 2, D(2, 3), F(1, 1, 2, 0, 0, 9));
    bc[1] = konst(g, DF_INT64, 0, NULL, F(3));
    bc[2] = konst(g, DF_DOUBLE, 2, D(2, 3), F(1, 2, 3, 4, 5, 6));
    expect("DenseBincount 2-D", g, op(g, "DenseBincount", 3, bc), DF_DOUBLE, 2, D(2, 3), F(0, 3, 3, 9, 0, 0));
    bc[0] = konst(g, DF_INT32, 1, D(4), F(1, 1, 2, 0));
    bc[1] = konst(g, DF_INT32, 0, NULL, F(4));
    bc[2] = konst(g, DF_FLOAT, 1, D(0), F(0));
    df_op_builder *b = df_op_new(g, "DenseBincount", NULL);
    for (int i = 0; i < 3; i++) df_op_add_input(b, bc[i]);
    df_op_set_attr_bool(b, "binary_output", 1);
    df_output y = {df_op_finish(b), 0};
    expect("DenseBincount binary", g, y, DF_FLOAT, 1, D(4), F(1, 1, 1, 0));
    df_graph_free(g);
}

/* bad_indices_policy IGNORE (TensorFlow 2.21's values): a gather gives zeros for a bad row, the
   scatters skip it; another value is an error naming the node. */
static df_output with_policy(df_graph *g, const char *type, const char *name, int n, const df_output *ins, const char *pol) {
    df_op_builder *b = df_op_new(g, type, name);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    df_op_set_attr_string(b, "bad_indices_policy", pol);
    df_output o = {df_op_finish(b), 0};
    return o;
}
DF_TEST(bad_indices_policy_ignore_matches_tensorflow) {
    df_graph *g = df_graph_new();
    df_output p = konst(g, DF_DOUBLE, 2, D(3, 2), P12);
    df_output in[3] = {p, konst(g, DF_INT32, 2, D(3, 2), F(0, 1, 5, 0, 2, 1))};
    expect("GatherNd IGNORE", g, with_policy(g, "GatherNd", NULL, 2, in, "IGNORE"), DF_DOUBLE, 1, D(3), F(1, 0, 5));
    in[1] = konst(g, DF_INT64, 2, D(2, 1), F(1, -1));
    expect("GatherNd IGNORE rows", g, with_policy(g, "GatherNd", NULL, 2, in, "IGNORE"), DF_DOUBLE, 2, D(2, 2), F(2, 3, 0, 0));
    df_output s[3] = {konst(g, DF_INT32, 2, D(3, 1), F(1, 7, 1)), konst(g, DF_FLOAT, 1, D(3), F(1, 2, 3)), konst(g, DF_INT32, 1, D(1), F(4))};
    expect("ScatterNd IGNORE", g, with_policy(g, "ScatterNd", NULL, 3, s, "IGNORE"), DF_FLOAT, 1, D(4), F(0, 4, 0, 0));
    df_output t[3] = {konst(g, DF_FLOAT, 1, D(4), F(1, 1, 1, 1)), konst(g, DF_INT32, 2, D(2, 1), F(1, 7)), konst(g, DF_FLOAT, 1, D(2), F(5, 2))};
    expect("TensorScatterUpdate IGNORE", g, with_policy(g, "TensorScatterUpdate", NULL, 3, t, "IGNORE"), DF_FLOAT, 1, D(4), F(1, 5, 1, 1));
    t[1] = konst(g, DF_INT64, 2, D(2, 1), F(1, -7));
    expect("TensorScatterAdd IGNORE", g, with_policy(g, "TensorScatterAdd", NULL, 3, t, "IGNORE"), DF_FLOAT, 1, D(4), F(1, 6, 1, 1));
    expect("TensorScatterMax IGNORE", g, with_policy(g, "TensorScatterMax", NULL, 3, t, "IGNORE"), DF_FLOAT, 1, D(4), F(1, 5, 1, 1));
    expect_error("GatherNd ERROR", g, with_policy(g, "GatherNd", "gnd_err", 2, in, "ERROR"), DF_INVALID_ARGUMENT,
                 "indices[1] = [-1] does not index into param shape [3,2]", "gnd_err");
    expect_error("GatherNd FOO", g, with_policy(g, "GatherNd", "gnd_foo", 2, in, "FOO"), DF_INVALID_ARGUMENT,
                 "bad_indices_policy must be '', 'DEFAULT', 'ERROR' or 'IGNORE', got 'FOO'", "gnd_foo");
    df_graph_free(g);
}

/* ---- bad inputs ---- */
static df_output named(df_graph *g, const char *type, const char *name, int n, const df_output *ins) {
    df_output o = {opn(g, type, name, n, ins), 0};
    return o;
}
/* A case: op on inputs (float64 ones are differentiated by the gradient test; the others are
   index inputs). */
typedef struct { const char *op; int n; df_dtype t[3]; int rank[3]; int64_t dims[3][4]; double v[3][24]; } gcase;
static df_output build(df_graph *g, const gcase *k, df_output *in, const char *name) {
    for (int i = 0; i < k->n; i++) in[i] = konst(g, k->t[i], k->rank[i], k->dims[i], k->v[i]);
    df_output o = {opn(g, k->op, name, k->n, in), 0};
    return o;
}
DF_TEST(bad_indices_give_tensorflow_errors_naming_the_node) {
    const df_dtype Dd = DF_DOUBLE, Fl = DF_FLOAT, I32 = DF_INT32, I64 = DF_INT64;
    static const struct { const char *name, *needle; } want[] = {
        {"gnd", "indices[1] = [5, 0] does not index into param shape [3,2], node name: gnd"},
        {"gnd_neg", "indices[0,1] = [-1] does not index into param shape [3,2]"},
        {"gnd_deep", "index innermost dimension length must be <= params rank; saw: 3 vs. 2"},
        {"snd", "indices[1] = [7] does not index into shape [4]"},
        {"snd_shape", "Dimensions [0,1) of indices[shape=[2,1]] must match dimensions [0,1) of updates[shape=[3]]"},
        {"tsu", "indices[1] = [9] does not index into shape [4]"},
        {"tsa", "indices[1] = [-1] does not index into shape [4]"},
        {"tss", "indices[1] = [4] does not index into shape [4]"},
        {"tsmax", "indices[1] = [-1] does not index into shape [4]"},
        {"tsmin", "indices[1] = [9] does not index into shape [4]"},
        {"seg_unsorted", "segment ids are not increasing"},
        {"seg_neg", "Segment id -1 out of range [0, 2), possibly because 'segment_ids' input is not sorted."},
        {"seg_len", "segment_ids should be the same size as dimension 0 of input."},
        {"usmax", "segment_ids[1] = 5 is out of range [0, 3)"},
        {"usprod", "must not be negative"},
        {"rev_dup", "axis 0 specified more than once."},
        {"rev_oob", "'axis'[0] = 2 is out of valid range [0, 1"},
        {"roll_oob", "axis 2 is out of range"},
        {"roll_mis", "shift and axis must have the same size"},
        {"bc_neg", "Input arr must be non-negative!"},
        {"dbc_w", "`weights` must be the same shape as `arr` or a length-0 `Tensor`"},
        {"itk", "First dimension of predictions 1 must match length of targets 2"},
        {"uq2", "unique expects a 1D vector."},
    };
    gcase cases[] = {
        {"GatherNd", 2, {Dd, I32}, {2, 2}, {{3, 2}, {2, 2}}, {{0, 1, 2, 3, 4, 5}, {0, 1, 5, 0}}},
        {"GatherNd", 2, {Dd, I64}, {2, 3}, {{3, 2}, {1, 2, 1}}, {{0, 1, 2, 3, 4, 5}, {0, -1}}},
        {"GatherNd", 2, {Dd, I32}, {2, 2}, {{3, 2}, {1, 3}}, {{0, 1, 2, 3, 4, 5}, {0, 1, 0}}},
        {"ScatterNd", 3, {I32, Fl, I32}, {2, 1, 1}, {{2, 1}, {2}, {1}}, {{1, 7}, {1, 2}, {4}}},
        {"ScatterNd", 3, {I32, Fl, I32}, {2, 1, 1}, {{2, 1}, {3}, {1}}, {{1, 2}, {1, 2, 3}, {4}}},
        {"TensorScatterUpdate", 3, {Fl, I32, Fl}, {1, 2, 1}, {{4}, {2, 1}, {2}}, {{0}, {1, 9}, {1, 2}}},
        {"TensorScatterAdd", 3, {Fl, I64, Fl}, {1, 2, 1}, {{4}, {2, 1}, {2}}, {{0}, {1, -1}, {1, 2}}},
        {"TensorScatterSub", 3, {I32, I32, I32}, {1, 2, 1}, {{4}, {2, 1}, {2}}, {{0}, {1, 4}, {1, 2}}},
        {"TensorScatterMax", 3, {Dd, I32, Dd}, {1, 2, 1}, {{4}, {2, 1}, {2}}, {{0}, {1, -1}, {1, 2}}},
        {"TensorScatterMin", 3, {I64, I32, I64}, {1, 2, 1}, {{4}, {2, 1}, {2}}, {{0}, {1, 9}, {1, 2}}},
        {"SegmentSum", 2, {Fl, I32}, {1, 1}, {{3}, {3}}, {{1, 2, 3}, {0, 2, 1}}},
        {"SegmentMax", 2, {Fl, I64}, {1, 1}, {{3}, {3}}, {{1, 2, 3}, {-1, 0, 1}}},
        {"SegmentProd", 2, {Fl, I32}, {1, 1}, {{3}, {2}}, {{1, 2, 3}, {0, 1}}},
        {"UnsortedSegmentMax", 3, {Fl, I32, I32}, {1, 1, 0}, {{3}, {3}, {0}}, {{1, 2, 3}, {0, 5, 2}, {3}}},
        {"UnsortedSegmentProd", 3, {Fl, I32, I32}, {1, 1, 0}, {{3}, {3}, {0}}, {{1, 2, 3}, {0, 1, 2}, {-2}}},
        {"ReverseV2", 2, {Dd, I32}, {2, 1}, {{3, 2}, {2}}, {{0, 1, 2, 3, 4, 5}, {0, 0}}},
        {"ReverseV2", 2, {Dd, I32}, {2, 1}, {{3, 2}, {1}}, {{0, 1, 2, 3, 4, 5}, {2}}},
        {"Roll", 3, {Dd, I32, I32}, {2, 1, 1}, {{3, 2}, {1}, {1}}, {{0, 1, 2, 3, 4, 5}, {1}, {2}}},
        {"Roll", 3, {Dd, I32, I32}, {2, 1, 1}, {{3, 2}, {2}, {1}}, {{0, 1, 2, 3, 4, 5}, {1, 2}, {0}}},
        {"Bincount", 3, {I32, I32, Fl}, {1, 0, 1}, {{3}, {0}, {0}}, {{1, -1, 2}, {3}, {0}}},
        {"DenseBincount", 3, {I32, I32, Fl}, {1, 0, 1}, {{3}, {0}, {2}}, {{1, 1, 2}, {3}, {1, 2}}},
        {"InTopKV2", 3, {Fl, I32, I32}, {2, 1, 0}, {{1, 3}, {2}, {0}}, {{1, 2, 3}, {0, 1}, {1}}},
        {"Unique", 1, {I32}, {2}, {{1, 2}}, {{1, 2}}},
    };
    for (int i = 0; i < LEN(cases); i++) {
        df_graph *g = df_graph_new();
        df_output in[3];
        df_output y = build(g, &cases[i], in, want[i].name);
        expect_error(cases[i].op, g, y, DF_INVALID_ARGUMENT, want[i].needle, want[i].name);
        df_graph_free(g);
    }
}

/* ---- gradients against central differences in float64 ---- */
static double loss_at(const gcase *k, int *ok) {
    df_graph *g = df_graph_new();
    df_output in[3];
    df_output y = build(g, k, in, NULL);
    df_tensor *out = NULL;
    df_status st;
    double s = NAN;
    if (run(g, &y, 1, &out, &st) == DF_OK && out) {
        s = 0;
        for (int64_t i = 0; i < df_tensor_num_elements(out); i++) s += elem(out, i) * (1.0 + 0.25 * (double)(i % 5));
    } else *ok = 0;
    df_tensor_release(out);
    df_graph_free(g);
    return s;
}
static int64_t count(int rank, const int64_t *dims) { int64_t c = 1; for (int d = 0; d < rank; d++) c *= dims[d]; return c; }
static void check_grad(gcase *k) {
    df_graph *g = df_graph_new();
    df_output in[3];
    df_output y = build(g, k, in, NULL);
    int64_t yd[DF_MAX_RANK];
    int yr = 0;
    df_tensor *yv = NULL;
    df_status st;
    if (run(g, &y, 1, &yv, &st) == DF_OK && yv) {           /* y's shape (a segment count is known at run time) */
        yr = df_tensor_rank(yv);
        for (int d = 0; d < yr; d++) yd[d] = df_tensor_dim(yv, d);
    }
    df_tensor_release(yv);
    double w[64];
    for (int64_t i = 0; i < count(yr, yd) && i < 64; i++) w[i] = 1.0 + 0.25 * (double)(i % 5);
    df_output wy = konst(g, DF_DOUBLE, yr, yd, w);
    df_output xs[3], dx[3];
    int nx = 0, which[3];
    for (int i = 0; i < k->n; i++) if (k->t[i] == DF_DOUBLE) { which[nx] = i; xs[nx++] = in[i]; }
    CHECK_MSG(df_gradients(g, 1, &y, &wy, nx, xs, dx) == DF_OK, "%s: %s", k->op, df_graph_status(g)->message);
    df_tensor *out[3] = {NULL, NULL, NULL};
    int have = 1;
    for (int i = 0; i < nx; i++) have &= dx[i].node != NULL;
    CHECK_MSG(have, "%s: a gradient is missing", k->op);
    if (have) CHECK_MSG(run(g, dx, nx, out, &st) == DF_OK, "%s gradient: %s", k->op, st.message);
    for (int j = 0; j < nx; j++) {
        int i = which[j];
        if (!out[j]) continue;
        for (int64_t e = 0; e < count(k->rank[i], k->dims[i]); e++) {
            int ok = 1;
            double keep = k->v[i][e], h = 1e-6 * (1 + fabs(keep));
            k->v[i][e] = keep + h;
            double lp = loss_at(k, &ok);
            k->v[i][e] = keep - h;
            double lm = loss_at(k, &ok);
            k->v[i][e] = keep;
            double num = (lp - lm) / (2 * h), got = elem(out[j], e);
            CHECK_MSG(ok && fabs(got - num) <= 1e-6 * (1 + fabs(num)), "%s: d/d input %d [%lld]: %.12g, numeric %.12g",
                      k->op, i, (long long)e, got, num);
        }
        df_tensor_release(out[j]);
    }
    df_graph_free(g);
}
DF_TEST(index_gradients_match_central_differences) {
    const df_dtype Dd = DF_DOUBLE, I32 = DF_INT32, I64 = DF_INT64;
    gcase cases[] = {
        {"GatherNd", 2, {Dd, I32}, {3, 2}, {{3, 2, 2}, {3, 2}}, {{0.1, 1.2, -2.3, 3.4, 4.5, -5.6, 6.7, 7.8, 8.9, -9.1, 1.5, 2.5}, {0, 1, 2, 0, 0, 1}}},
        {"GatherNd", 2, {Dd, I64}, {2, 2}, {{3, 2}, {3, 1}}, {{0.5, -1.5, 2.5, 3.5, -4.5, 5.5}, {2, 0, 2}}},
        {"ScatterNd", 3, {I32, Dd, I32}, {2, 2, 1}, {{3, 1}, {3, 2}, {2}}, {{1, 3, 1}, {1, 2, 3, 4, 5, 6}, {4, 2}}},
        {"TensorScatterUpdate", 3, {Dd, I32, Dd}, {2, 2, 2}, {{4, 2}, {2, 1}, {2, 2}}, {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 3}, {-1, 0.5, 2, 3}}},
        {"TensorScatterAdd", 3, {Dd, I64, Dd}, {2, 2, 2}, {{4, 2}, {3, 1}, {3, 2}}, {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 3, 1}, {-1, 0.5, 2, 3, 4, 5}}},
        {"TensorScatterSub", 3, {Dd, I32, Dd}, {2, 2, 2}, {{4, 2}, {3, 1}, {3, 2}}, {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 3, 1}, {-1, 0.5, 2, 3, 4, 5}}},
        {"TensorScatterMax", 3, {Dd, I32, Dd}, {1, 2, 1}, {{5}, {3, 1}, {3}}, {{1, 2, 3, 4, 5}, {1, 3, 4}, {2.5, 1.5, 6}}},
        {"TensorScatterMin", 3, {Dd, I32, Dd}, {1, 2, 1}, {{5}, {3, 1}, {3}}, {{1, 2, 3, 4, 5}, {1, 3, 4}, {2.5, 1.5, 6}}},
        {"SegmentSum", 2, {Dd, I32}, {2, 1}, {{5, 2}, {5}}, {{1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10}, {0, 0, 2, 2, 3}}},
        {"SegmentMean", 2, {Dd, I64}, {2, 1}, {{5, 2}, {5}}, {{1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10}, {0, 0, 2, 2, 3}}},
        {"SegmentMax", 2, {Dd, I32}, {2, 1}, {{5, 2}, {5}}, {{1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10}, {0, 0, 2, 2, 3}}},
        {"SegmentMin", 2, {Dd, I32}, {2, 1}, {{5, 2}, {5}}, {{1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10}, {0, 0, 2, 2, 3}}},
        {"SegmentProd", 2, {Dd, I32}, {2, 1}, {{5, 2}, {5}}, {{1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10}, {0, 0, 2, 2, 3}}},
        /* one zero in a segment (its gradient: the product of the others) */
        {"SegmentProd", 2, {Dd, I32}, {1, 1}, {{6}, {6}}, {{2, 0, 3, 1.5, -2, 0.5}, {0, 0, 0, 1, 1, 2}}},
        {"UnsortedSegmentMax", 3, {Dd, I32, I32}, {2, 1, 0}, {{6, 2}, {6}, {0}}, {{1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10, 2, 2.5}, {0, 3, -1, 1, 2, 3}, {4}}},
        {"UnsortedSegmentMin", 3, {Dd, I64, I32}, {2, 1, 0}, {{6, 2}, {6}, {0}}, {{1, -2, 3, 4, 0.5, 6, 7, -8, 9, 10, 2, 2.5}, {0, 3, -1, 1, 2, 3}, {4}}},
        {"UnsortedSegmentProd", 3, {Dd, I32, I64}, {1, 1, 0}, {{6}, {6}, {0}}, {{2, 0, 3, 1.5, -2, 0.5}, {0, 0, 2, 1, -1, 1}, {4}}},
        {"ReverseV2", 2, {Dd, I32}, {3, 1}, {{2, 3, 2}, {2}}, {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {0, -1}}},
        {"Roll", 3, {Dd, I32, I32}, {2, 1, 1}, {{3, 4}, {2}, {2}}, {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, -3}, {0, 1}}},
    };
    for (int i = 0; i < LEN(cases); i++) check_grad(&cases[i]);
}
DF_TEST(no_gradient_ops) {
    /* Where, ShapeN and InTopKV2 are not differentiable (flagged): no gradient, no error */
    df_graph *g = df_graph_new();
    df_output x = konst(g, DF_DOUBLE, 1, D(3), F(0.5, 0, 2)), dx;
    df_output y = df_cast(g, op(g, "Where", 1, &x), DF_DOUBLE);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &x, &dx), DF_OK);
    CHECK(dx.node == NULL);
    df_op_builder *b = df_op_new(g, "ShapeN", NULL);
    df_op_add_input_list(b, &x, 1);
    y = df_cast(g, (df_output){df_op_finish(b), 0}, DF_DOUBLE);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &x, &dx), DF_OK);
    CHECK(dx.node == NULL);
    df_graph_free(g);
    /* Unique has no gradient in TensorFlow: asking is an error naming the node */
    g = df_graph_new();
    x = konst(g, DF_DOUBLE, 1, D(3), F(0.5, 0, 0.5));
    y = named(g, "Unique", "uq", 1, &x);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &x, &dx), DF_UNIMPLEMENTED);
    CHECK_MSG(strstr(df_graph_status(g)->message, "'uq'") != NULL, "%s", df_graph_status(g)->message);
    df_graph_free(g);
}
