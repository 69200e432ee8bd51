/* test_op_hardening.c - hostile inputs to the new ops that once reached undefined behaviour: a
   convolution over zero input channels (a division by zero), MirrorPadGrad paddings past its
   output and PadV2 paddings near INT64_MAX (writes out of bounds), and an unsorted segment op
   whose output would exceed the largest rank. Each must give INVALID_ARGUMENT (or, for the huge
   pad, RESOURCE_EXHAUSTED), never a crash. */
#include "harness.h"
#include <stdint.h>
/* A Const of t holding data (zeros when NULL). */
static df_output cst(df_graph *g, df_dtype t, int rank, const int64_t *dims, const void *data) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (x && data) memcpy(df_tensor_data(x), data, (size_t)df_tensor_num_elements(x) * df_dtype_size(t));
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
/* Runs y once; the status's code. */
static df_code run1(df_graph *g, df_output y, df_status *st) {
    df_tensor *out = NULL;
    df_session *s = df_session_new(g, NULL, st);
    if (s) df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, st);
    df_tensor_release(out);
    df_session_free(s);
    return st->code;
}
DF_TEST(new_ops_refuse_hostile_sizes) {
    df_status st = {0};
    /* conv depth 0 */
    df_graph *g = df_graph_new();
    int64_t xd[4] = {1, 3, 3, 0}, wd[4] = {1, 1, 1, 1};
    float wv[1] = {1};
    df_op_builder *b = df_op_new(g, "Conv2D", "c");
    df_op_add_input(b, cst(g, DF_FLOAT, 4, xd, NULL)); df_op_add_input(b, cst(g, DF_FLOAT, 4, wd, wv));
    int64_t s4[4] = {1, 1, 1, 1}; df_op_set_attr_int_list(b, "strides", s4, 4); df_op_set_attr_string(b, "padding", "SAME");
    df_output y = {df_op_finish(b), 0};
    df_code code = df_graph_status(g)->code ? df_graph_status(g)->code : run1(g, y, &st);
    CHECK_MSG(code == DF_INVALID_ARGUMENT, "conv depth 0: %d %s", code, st.message);
    df_graph_free(g);
    /* MirrorPadGrad with paddings beyond the output */
    g = df_graph_new(); memset(&st, 0, sizeof st);
    int64_t xd1[1] = {10}, pd[2] = {1, 2}; float xv[10] = {0}; int32_t pv[2] = {8, 0};
    b = df_op_new(g, "MirrorPadGrad", "m");
    df_op_add_input(b, cst(g, DF_FLOAT, 1, xd1, xv)); df_op_add_input(b, cst(g, DF_INT32, 2, pd, pv)); df_op_set_attr_string(b, "mode", "REFLECT");
    y.node = df_op_finish(b);
    code = df_graph_status(g)->code ? df_graph_status(g)->code : run1(g, y, &st);
    CHECK_MSG(code == DF_INVALID_ARGUMENT, "mirror pad grad: %d %s", code, st.message);
    df_graph_free(g);
    /* PadV2 with huge paddings */
    g = df_graph_new(); memset(&st, 0, sizeof st);
    int64_t pv64[2] = {INT64_MAX, INT64_MAX}; float cv = 0;
    b = df_op_new(g, "PadV2", "p");
    df_op_add_input(b, cst(g, DF_FLOAT, 1, xd1, xv)); df_op_add_input(b, cst(g, DF_INT64, 2, pd, pv64)); df_op_add_input(b, cst(g, DF_FLOAT, 0, NULL, &cv));
    y.node = df_op_finish(b);
    code = df_graph_status(g)->code ? df_graph_status(g)->code : run1(g, y, &st);
    CHECK_MSG(code == DF_INVALID_ARGUMENT || code == DF_RESOURCE_EXHAUSTED, "padv2: %d %s", code, st.message);
    df_graph_free(g);
    /* UnsortedSegmentMax of a rank-8 input with scalar ids */
    g = df_graph_new(); memset(&st, 0, sizeof st);
    int64_t d8[8] = {1, 1, 1, 1, 1, 1, 1, 2}; float v8[2] = {1, 2}; int32_t id = 0, ns = 1;
    b = df_op_new(g, "UnsortedSegmentMax", "u");
    df_op_add_input(b, cst(g, DF_FLOAT, 8, d8, v8)); df_op_add_input(b, cst(g, DF_INT32, 0, NULL, &id)); df_op_add_input(b, cst(g, DF_INT32, 0, NULL, &ns));
    y.node = df_op_finish(b);
    code = df_graph_status(g)->code ? df_graph_status(g)->code : run1(g, y, &st);
    CHECK_MSG(code == DF_INVALID_ARGUMENT, "useg rank: %d %s", code, st.message);
    df_graph_free(g);
}
