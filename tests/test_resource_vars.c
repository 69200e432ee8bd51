/* Resource variables (VarHandleOp, ReadVariableOp, AssignVariableOp, ..., ResourceApply*):
   values, errors naming the node, TF 2.21's numbers for three optimizer steps, gradients through
   the handle against central differences, loops, threads, placement, and a tf.compat.v1 program
   (TF2's default resource variables) imported from tests/graphdef/fixtures_resource/. */
#include "harness.h"
#ifndef DF_NO_THREADS
#include <pthread.h>
#endif

static df_output var_handle(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "VarHandleOp", df_graph_find(g, name) ? NULL : name);   /* (a second handle: any node name) */
    df_op_set_attr_type(b, "dtype", t);
    df_op_set_attr_shape(b, "shape", rank, dims);
    df_op_set_attr_string(b, "shared_name", name);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output read_var(df_graph *g, df_output h, df_dtype t) {
    df_op_builder *b = df_op_new(g, "ReadVariableOp", NULL);
    df_op_add_input(b, h);
    df_op_set_attr_type(b, "dtype", t);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_node *update(df_graph *g, const char *op, df_output h, df_output v) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, h);
    df_op_add_input(b, v);
    return df_op_finish(b);
}
static df_output const_f32(df_graph *g, int n, const float *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    memcpy(df_tensor_data(t), v, (size_t)n * sizeof(float));
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output const_f64(df_graph *g, int n, const double *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_DOUBLE, 1, &d, NULL);
    memcpy(df_tensor_data(t), v, (size_t)n * sizeof(double));
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output const_i32(df_graph *g, int n, const int32_t *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_INT32, 1, &d, NULL);
    memcpy(df_tensor_data(t), v, (size_t)n * sizeof(int32_t));
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static int out_rank(df_output o) { int64_t d[DF_MAX_RANK]; return df_output_shape(o, d); }
static df_session *session(df_graph *g) {
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    return s;
}
static df_code run_targets(df_session *s, df_node *const *t, int n, df_status *st) {
    return df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, t, n, st);
}
static df_tensor *fetch1(df_session *s, df_output o, df_status *st) {
    df_tensor *v = NULL;
    df_session_run(s, NULL, NULL, 0, &o, &v, 1, NULL, 0, st);
    return v;
}

DF_TEST(resource_vars_init_read_assign) {
    df_graph *g = df_graph_new();
    int64_t d = 3;
    df_output h = var_handle(g, "v", DF_FLOAT, 1, &d);
    const float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    df_node *init = update(g, "AssignVariableOp", h, const_f32(g, 3, a));
    df_node *add = update(g, "AssignAddVariableOp", h, const_f32(g, 3, b));
    df_node *sub = update(g, "AssignSubVariableOp", h, const_f32(g, 3, a));
    df_output r = read_var(g, h, DF_FLOAT);
    df_op_builder *bi = df_op_new(g, "VarIsInitializedOp", NULL);
    df_op_add_input(bi, h);
    df_output is_init = {df_op_finish(bi), 0};
    df_op_builder *bs = df_op_new(g, "VariableShape", NULL);
    df_op_add_input(bs, h);
    df_op_set_attr_type(bs, "out_type", DF_INT64);
    df_output shape = {df_op_finish(bs), 0};
    df_op_builder *bd = df_op_new(g, "DestroyResourceOp", NULL);
    df_op_add_input(bd, h);
    df_node *destroy = df_op_finish(bd);
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(r.node ? out_rank(r) : -2, 1);
    df_session *s = session(g);
    df_status st;
    df_tensor *t = fetch1(s, is_init, &st);
    CHECK_OK(&st);
    CHECK(t && *(const unsigned char *)df_tensor_data(t) == 0);
    df_tensor_release(t);
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    t = fetch1(s, is_init, &st);
    CHECK(t && *(const unsigned char *)df_tensor_data(t) == 1);
    df_tensor_release(t);
    run_targets(s, &add, 1, &st);
    run_targets(s, &add, 1, &st);
    run_targets(s, &sub, 1, &st);
    CHECK_OK(&st);
    t = fetch1(s, r, &st);
    CHECK_OK(&st);
    const float *p = t ? (const float *)df_tensor_data(t) : NULL;
    for (int i = 0; p && i < 3; i++) CHECK_NEAR(p[i], a[i] + 2 * b[i] - a[i], 0);
    /* what a reader fetched stays as it was after later updates */
    run_targets(s, &add, 1, &st);
    for (int i = 0; p && i < 3; i++) CHECK_NEAR(p[i], 2 * b[i], 0);
    df_tensor_release(t);
    t = fetch1(s, shape, &st);
    CHECK_OK(&st);
    CHECK(t && df_tensor_dtype(t) == DF_INT64 && df_tensor_num_elements(t) == 1 && ((const int64_t *)df_tensor_data(t))[0] == 3);
    df_tensor_release(t);
    run_targets(s, &destroy, 1, &st);
    CHECK_OK(&st);
    t = fetch1(s, is_init, &st);
    CHECK(t && *(const unsigned char *)df_tensor_data(t) == 0);
    df_tensor_release(t);
    t = fetch1(s, shape, &st);
    CHECK_STATUS(&st, DF_NOT_FOUND, "v");
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(resource_vars_uninitialized_read_fails_naming_the_variable) {
    df_graph *g = df_graph_new();
    int64_t d = 2;
    df_output h = var_handle(g, "weights", DF_FLOAT, 1, &d);
    df_output r = read_var(g, h, DF_FLOAT);
    df_node *add = update(g, "AssignAddVariableOp", h, const_f32(g, 2, (const float[]){1, 2}));
    df_op_builder *b = df_op_new(g, "ResourceApplyGradientDescent", NULL);
    df_op_add_input(b, h);
    df_op_add_input(b, df_scalar_f32(g, 0.1f));
    df_op_add_input(b, const_f32(g, 2, (const float[]){1, 2}));
    df_node *gd = df_op_finish(b);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    df_tensor *t = fetch1(s, r, &st);
    CHECK(!t);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "Could not find variable weights");
    CHECK_MSG(strstr(st.message, df_node_name(r.node)) != NULL, "message names the node: %s", st.message);
    run_targets(s, &add, 1, &st);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "weights");
    run_targets(s, &gd, 1, &st);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "weights");
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(resource_vars_shape_and_dtype_mismatches) {
    /* building: the value must fit the handle's shape, the dtype its dtype (as TF's shape fns) */
    df_graph *g = df_graph_new();
    int64_t d2 = 2;
    df_output h = var_handle(g, "v", DF_FLOAT, 1, &d2);
    df_node *bad = update(g, "AssignVariableOp", h, const_f32(g, 3, (const float[]){1, 2, 3}));
    CHECK(!bad);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2] and [3].");
    CHECK(strstr(df_graph_status(g)->message, "AssignVariableOp") != NULL);
    df_graph_free(g);
    g = df_graph_new();
    h = var_handle(g, "v", DF_FLOAT, 1, &d2);
    df_output r = read_var(g, h, DF_INT32);
    CHECK(!r.node);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected float got int32");
    df_graph_free(g);
    /* running: a handle of unknown shape; validate_shape compares with the current value */
    g = df_graph_new();
    h = var_handle(g, "u", DF_FLOAT, -1, NULL);
    df_node *init = update(g, "AssignVariableOp", h, const_f32(g, 2, (const float[]){1, 2}));
    df_op_builder *b = df_op_new(g, "AssignVariableOp", "strict");
    df_op_add_input(b, h);
    df_op_add_input(b, const_f32(g, 3, (const float[]){1, 2, 3}));
    df_op_set_attr_bool(b, "validate_shape", 1);
    df_node *strict = df_op_finish(b);
    df_node *loose = update(g, "AssignVariableOp", h, const_f32(g, 3, (const float[]){4, 5, 6}));
    df_node *add = update(g, "AssignAddVariableOp", h, const_f32(g, 2, (const float[]){1, 2}));
    /* another handle of the same variable that claims int32: the dtype is checked when it runs */
    df_output h_int = var_handle(g, "u", DF_INT32, -1, NULL);
    df_node *as_int = update(g, "AssignVariableOp", h_int, const_i32(g, 1, (const int32_t[]){7}));
    r = read_var(g, h, DF_FLOAT);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    run_targets(s, &strict, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Trying to assign to variable with tensor with wrong shape. Expected [2] got [3]");
    CHECK(strstr(st.message, "strict") != NULL);
    run_targets(s, &loose, 1, &st);        /* validate_shape false (TF's default): the shape may change */
    CHECK_OK(&st);
    df_tensor *t = fetch1(s, r, &st);
    CHECK(t && df_tensor_num_elements(t) == 3 && ((const float *)df_tensor_data(t))[2] == 6);
    df_tensor_release(t);
    run_targets(s, &add, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Cannot update variable with shape [3] using a Tensor with shape [2]");
    run_targets(s, &as_int, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Trying to assign variable with wrong dtype. Expected float got int32");
    df_session_free(s);
    df_graph_free(g);
}

/* A VariableV2 and a VarHandleOp of one shared_name are one variable of the session's store. */
DF_TEST(resource_vars_share_storage_with_ref_variables) {
    df_graph *g = df_graph_new();
    int64_t d = 2;
    df_op_builder *b = df_op_new(g, "VariableV2", "ref_w");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 1, &d);
    df_op_set_attr_string(b, "shared_name", "w");
    df_output ref = {df_op_finish(b), 0};
    df_op_builder *ba = df_op_new(g, "Assign", NULL);
    df_op_add_input(ba, ref);
    df_op_add_input(ba, const_f32(g, 2, (const float[]){3, 4}));
    df_node *assign = df_op_finish(ba);
    df_output h = var_handle(g, "w", DF_FLOAT, 1, &d);
    df_output r = read_var(g, h, DF_FLOAT);
    df_node *add = update(g, "AssignAddVariableOp", h, const_f32(g, 2, (const float[]){1, 1}));
    df_output via_ref = df_identity(g, ref);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    run_targets(s, &assign, 1, &st);
    CHECK_OK(&st);
    df_tensor *t = fetch1(s, r, &st);
    CHECK_OK(&st);
    CHECK(t && ((const float *)df_tensor_data(t))[1] == 4);
    df_tensor_release(t);
    run_targets(s, &add, 1, &st);
    t = fetch1(s, via_ref, &st);
    CHECK_OK(&st);
    CHECK(t && ((const float *)df_tensor_data(t))[0] == 4 && ((const float *)df_tensor_data(t))[1] == 5);
    df_tensor_release(t);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(resource_vars_gather_and_scatter) {
    df_graph *g = df_graph_new();
    int64_t d[2] = {4, 2};
    df_output h = var_handle(g, "table", DF_FLOAT, 2, d);
    const float init_v[8] = {0, 1, 10, 11, 20, 21, 30, 31};
    int64_t d8 = 8;
    df_tensor *iv = df_tensor_new(DF_FLOAT, 1, &d8, NULL);
    memcpy(df_tensor_data(iv), init_v, sizeof init_v);
    df_output flat = df_const(g, iv);
    df_tensor_release(iv);
    df_op_builder *br = df_op_new(g, "Reshape", NULL);
    df_op_add_input(br, flat);
    df_op_add_input(br, const_i32(g, 2, (const int32_t[]){4, 2}));
    df_node *init = update(g, "AssignVariableOp", h, (df_output){df_op_finish(br), 0});
    int64_t d22[2] = {2, 2};
    df_tensor *ix = df_tensor_new(DF_INT32, 2, d22, NULL);
    memcpy(df_tensor_data(ix), (const int32_t[]){3, 0, 1, 3}, 16);
    df_output idx = df_const(g, ix);
    df_tensor_release(ix);
    df_op_builder *bg = df_op_new(g, "ResourceGather", NULL);
    df_op_add_input(bg, h);
    df_op_add_input(bg, idx);
    df_op_set_attr_type(bg, "dtype", DF_FLOAT);
    df_output gathered = {df_op_finish(bg), 0};
    /* scatter: add [1,1] twice to row 3 (duplicates add up), subtract from row 0, update row 2 */
    df_op_builder *bsa = df_op_new(g, "ResourceScatterAdd", NULL);
    df_op_add_input(bsa, h);
    df_op_add_input(bsa, const_i32(g, 2, (const int32_t[]){3, 3}));
    int64_t d2x2[2] = {2, 2};
    df_tensor *ones = df_tensor_new(DF_FLOAT, 2, d2x2, NULL);
    for (int i = 0; i < 4; i++) ((float *)df_tensor_data(ones))[i] = 1;
    df_op_add_input(bsa, df_const(g, ones));
    df_tensor_release(ones);
    df_node *sadd = df_op_finish(bsa);
    df_op_builder *bss = df_op_new(g, "ResourceScatterSub", NULL);
    df_op_add_input(bss, h);
    df_op_add_input(bss, const_i32(g, 1, (const int32_t[]){0}));
    int64_t d1x2[2] = {1, 2};
    df_tensor *tw = df_tensor_new(DF_FLOAT, 2, d1x2, NULL);
    ((float *)df_tensor_data(tw))[0] = 5; ((float *)df_tensor_data(tw))[1] = 6;
    df_op_add_input(bss, df_const(g, tw));
    df_tensor_release(tw);
    df_node *ssub = df_op_finish(bss);
    df_op_builder *bsu = df_op_new(g, "ResourceScatterUpdate", NULL);
    df_op_add_input(bsu, h);
    df_op_add_input(bsu, const_i32(g, 1, (const int32_t[]){2}));
    df_op_add_input(bsu, df_scalar_f32(g, -7));
    df_node *supd = df_op_finish(bsu);
    df_op_builder *bbad = df_op_new(g, "ResourceScatterAdd", "bad_scatter");
    df_op_add_input(bbad, h);
    df_op_add_input(bbad, const_i32(g, 1, (const int32_t[]){4}));
    df_tensor *tb = df_tensor_new(DF_FLOAT, 2, d1x2, NULL);
    df_op_add_input(bbad, df_const(g, tb));
    df_tensor_release(tb);
    df_node *bad = df_op_finish(bbad);
    df_op_builder *bgb = df_op_new(g, "ResourceGather", "bad_gather");
    df_op_add_input(bgb, h);
    df_op_add_input(bgb, const_i32(g, 1, (const int32_t[]){-1}));
    df_op_set_attr_type(bgb, "dtype", DF_FLOAT);
    df_output bad_gather = {df_op_finish(bgb), 0};
    df_output r = read_var(g, h, DF_FLOAT);
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(out_rank(gathered), 3);
    df_session *s = session(g);
    df_status st;
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    df_tensor *t = fetch1(s, gathered, &st);
    CHECK_OK(&st);
    const float want_g[8] = {30, 31, 0, 1, 10, 11, 30, 31};
    CHECK(t && df_tensor_num_elements(t) == 8 && df_tensor_dim(t, 0) == 2 && df_tensor_dim(t, 2) == 2);
    for (int i = 0; t && i < 8; i++) CHECK_NEAR(((const float *)df_tensor_data(t))[i], want_g[i], 0);
    df_tensor_release(t);
    df_node *ups[3] = {sadd, ssub, supd};
    run_targets(s, ups, 3, &st);
    CHECK_OK(&st);
    t = fetch1(s, r, &st);
    const float want_r[8] = {-5, -5, 10, 11, -7, -7, 32, 33};
    for (int i = 0; t && i < 8; i++) CHECK_NEAR(((const float *)df_tensor_data(t))[i], want_r[i], 0);
    df_tensor_release(t);
    run_targets(s, &bad, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "indices[0] = 4 is not in [0, 4)");
    CHECK(strstr(st.message, "bad_scatter") != NULL);
    t = fetch1(s, bad_gather, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "indices[0] = -1 is not in [0, 4)");
    CHECK(strstr(st.message, "bad_gather") != NULL);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- optimizer updates: three steps against TF 2.21 (ResourceApply* on tf.Variable, float32) ----
   var starts at [1, -2, 0.5]; step t (0, 1, 2) has grad [0.1, -0.2, 0.3] * (t + 1). Rows: var,
   then the slots in input order, after each step. */
static const float want_gd[3][3] = {
    {0.99000001f, -1.98000002f, 0.469999999f},
    {0.970000029f, -1.94000006f, 0.409999996f},
    {0.940000057f, -1.88000011f, 0.319999993f},
};
static const float want_momentum0[3][6] = {
    {0.99000001f, -1.98000002f, 0.469999999f, 0.100000001f, -0.200000003f, 0.300000012f},
    {0.961000025f, -1.92200005f, 0.382999986f, 0.289999992f, -0.579999983f, 0.870000005f},
    {0.904900014f, -1.80980003f, 0.214699969f, 0.56099999f, -1.12199998f, 1.68300009f},
};
static const float want_keras_momentum0[3][6] = {
    {0.99000001f, -1.98000002f, 0.469999999f, -0.0100000007f, 0.0200000014f, -0.0300000012f},
    {0.961000025f, -1.92200005f, 0.382999986f, -0.0290000029f, 0.0580000058f, -0.0870000049f},
    {0.904900014f, -1.80980003f, 0.214699984f, -0.0561000034f, 0.112200007f, -0.168300003f},
};
static const float want_adam0[3][9] = {
    {0.990000308f, -1.99000013f, 0.490000099f, 0.0100000026f, -0.0200000051f, 0.0300000086f, 9.99987151e-06f, 3.9999486e-05f, 8.99988445e-05f},
    {0.980348527f, -1.98034823f, 0.4803482f, 0.0290000066f, -0.0580000132f, 0.0870000198f, 4.99893613e-05f, 0.000199957445f, 0.000449904241f},
    {0.970768571f, -1.97076821f, 0.470768183f, 0.0561000109f, -0.112200022f, 0.168300033f, 0.000139938216f, 0.000559752865f, 0.00125944405f},
};
static const float want_momentum1[3][6] = {
    {0.981000006f, -1.96200001f, 0.442999989f, 0.100000001f, -0.200000003f, 0.300000012f},
    {0.934899986f, -1.86979997f, 0.304699987f, 0.289999992f, -0.579999983f, 0.870000005f},
    {0.854409993f, -1.70881999f, 0.0632299781f, 0.56099999f, -1.12199998f, 1.68300009f},
};
static const float want_keras_momentum1[3][6] = {
    {0.981000006f, -1.96200001f, 0.442999989f, -0.0100000007f, 0.0200000014f, -0.0300000012f},
    {0.934899986f, -1.86979997f, 0.304699987f, -0.0290000029f, 0.0580000058f, -0.0870000049f},
    {0.854409993f, -1.70881999f, 0.0632299781f, -0.0561000034f, 0.112200007f, -0.168300003f},
};
static const float want_adam1[3][9] = {
    {0.981000602f, -1.9810003f, 0.481000185f, 0.0100000026f, -0.0200000051f, 0.0300000086f, 9.99987151e-06f, 3.9999486e-05f, 8.99988445e-05f},
    {0.965657592f, -1.96565711f, 0.465657026f, 0.0290000066f, -0.0580000132f, 0.0870000198f, 4.99893613e-05f, 0.000199957445f, 0.000449904241f},
    {0.951912642f, -1.95191216f, 0.451912016f, 0.0561000109f, -0.112200022f, 0.168300033f, 0.000139938216f, 0.000559752865f, 0.00125944405f},
};
static const float want_adagrad[3][6] = {
    {0.969848871f, -1.94654775f, 0.431175292f, 0.109999999f, 0.140000001f, 0.189999998f},
    {0.918209076f, -1.87351811f, 0.350271314f, 0.150000006f, 0.300000012f, 0.550000012f},
    {0.85697186f, -1.79966319f, 0.273096949f, 0.24000001f, 0.660000026f, 1.36000013f},
};
static const float want_rmsprop[3][9] = {
    {0.998946488f, -1.99789643f, 0.496853411f, 0.900999963f, 0.903999984f, 0.908999979f, 0.00105350756f, -0.0021035159f, 0.00314658391f},
    {0.996204197f, -1.9924531f, 0.48878783f, 0.814899921f, 0.829599977f, 0.854099989f, 0.00274228491f, -0.0054433872f, 0.00806556642f},
    {0.991351306f, -1.98294926f, 0.474991381f, 0.742409945f, 0.78263998f, 0.84969002f, 0.0048529068f, -0.00950388797f, 0.0137964347f},
};
static const float want_centered_rmsprop[3][12] = {
    {0.998946428f, -1.99789608f, 0.496851861f, 0.0100000026f, -0.0200000051f, 0.0300000086f, 0.900999963f, 0.903999984f, 0.908999979f, 0.001053566f, -0.00210398156f, 0.00314814295f},
    {0.996202946f, -1.99244356f, 0.488756567f, 0.0290000066f, -0.0580000132f, 0.0870000198f, 0.814899921f, 0.829599977f, 0.854099989f, 0.00274345838f, -0.00545255095f, 0.00809530634f},
    {0.991342068f, -1.98287988f, 0.474778354f, 0.0561000109f, -0.112200022f, 0.168300033f, 0.742409945f, 0.78263998f, 0.84969002f, 0.00486089662f, -0.0095636826f, 0.013978228f},
};

enum { SC_LR = -1, SC_GRAD = -2, SC_B1P = -3, SC_B2P = -4 };
typedef struct {
    const char *op;
    int n_vars;
    float slot_init[3];
    int n_in;                  /* inputs after the variables */
    float scalars[8];          /* per input after the variables: a value, or a marker (grad, beta powers) */
    int marker[8];
    int nesterov;              /* -1: no use_nesterov attr */
    const float *want;         /* [3][n_vars * 3] */
} apply_case;

/* Runs one update three times on resource variables (ref variables when ref), checking every
   variable after each step. */
static void check_apply(const apply_case *c, int ref) {
    df_graph *g = df_graph_new();
    int64_t d = 3;
    df_output vars[4], reads[4];
    df_node *inits[4];
    char name[32];
    float w0[3] = {1, -2, 0.5f};
    for (int i = 0; i < c->n_vars; i++) {
        snprintf(name, sizeof name, "v%d", i);
        float init[3];
        for (int k = 0; k < 3; k++) init[k] = i == 0 ? w0[k] : c->slot_init[i - 1];
        if (ref) {
            df_op_builder *b = df_op_new(g, "VariableV2", name);
            df_op_set_attr_type(b, "dtype", DF_FLOAT);
            df_op_set_attr_shape(b, "shape", 1, &d);
            vars[i] = (df_output){df_op_finish(b), 0};
            df_op_builder *ba = df_op_new(g, "Assign", NULL);
            df_op_add_input(ba, vars[i]);
            df_op_add_input(ba, const_f32(g, 3, init));
            inits[i] = df_op_finish(ba);
            reads[i] = df_identity(g, vars[i]);
        } else {
            vars[i] = var_handle(g, name, DF_FLOAT, 1, &d);
            inits[i] = update(g, "AssignVariableOp", vars[i], const_f32(g, 3, init));
            reads[i] = read_var(g, vars[i], DF_FLOAT);
        }
    }
    df_output grad = df_placeholder(g, "grad", DF_FLOAT, 1, &d);
    df_output b1p = df_placeholder(g, "b1p", DF_FLOAT, 0, NULL), b2p = df_placeholder(g, "b2p", DF_FLOAT, 0, NULL);
    char op[64];
    snprintf(op, sizeof op, "%s%s", ref ? "" : "Resource", c->op);
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < c->n_vars; i++) df_op_add_input(b, vars[i]);
    for (int i = 0; i < c->n_in; i++)
        df_op_add_input(b, c->marker[i] == SC_GRAD ? grad : c->marker[i] == SC_B1P ? b1p : c->marker[i] == SC_B2P ? b2p
                         : df_scalar_f32(g, c->scalars[i]));
    if (c->nesterov >= 0) df_op_set_attr_bool(b, "use_nesterov", c->nesterov);
    df_node *step = df_op_finish(b);
    CHECK_MSG(df_graph_status(g)->code == DF_OK, "%s: %s", op, df_graph_status(g)->message);
    df_session *s = session(g);
    df_status st;
    run_targets(s, inits, c->n_vars, &st);
    CHECK_OK(&st);
    for (int t = 0; t < 3 && st.code == DF_OK; t++) {
        df_tensor *gv = df_tensor_new(DF_FLOAT, 1, &d, NULL), *p1 = df_tensor_new(DF_FLOAT, 0, NULL, NULL),
                  *p2 = df_tensor_new(DF_FLOAT, 0, NULL, NULL);
        const float base[3] = {0.1f, -0.2f, 0.3f};
        for (int k = 0; k < 3; k++) ((float *)df_tensor_data(gv))[k] = base[k] * (float)(t + 1);
        *(float *)df_tensor_data(p1) = (float)pow(0.9, t + 1);
        *(float *)df_tensor_data(p2) = (float)pow(0.999, t + 1);
        df_output feeds[3] = {grad, b1p, b2p};
        df_tensor *fv[3] = {gv, p1, p2};
        df_session_run(s, feeds, fv, 3, NULL, NULL, 0, &step, 1, &st);
        CHECK_MSG(st.code == DF_OK, "%s step %d: %s", op, t, st.message);
        df_tensor *got[4] = {NULL, NULL, NULL, NULL};
        df_session_run(s, NULL, NULL, 0, reads, got, c->n_vars, NULL, 0, &st);
        CHECK_OK(&st);
        for (int i = 0; i < c->n_vars && st.code == DF_OK; i++)
            for (int k = 0; k < 3; k++) {
                float w = c->want[t * c->n_vars * 3 + i * 3 + k], v = ((const float *)df_tensor_data(got[i]))[k];
                CHECK_MSG(fabsf(v - w) <= 2e-6f * fabsf(w) + 1e-9f, "%s (nesterov %d) step %d var %d [%d]: %.9g vs TF %.9g",
                          op, c->nesterov, t, i, k, v, w);
            }
        for (int i = 0; i < 4; i++) df_tensor_release(got[i]);
        df_tensor_release(gv); df_tensor_release(p1); df_tensor_release(p2);
    }
    df_session_free(s);
    df_graph_free(g);
}

static const apply_case cases[] = {
    {"ApplyGradientDescent", 1, {0}, 2, {0.1f, 0}, {0, SC_GRAD}, -1, &want_gd[0][0]},
    {"ApplyMomentum", 2, {0}, 3, {0.1f, 0, 0.9f}, {0, SC_GRAD, 0}, 0, &want_momentum0[0][0]},
    {"ApplyMomentum", 2, {0}, 3, {0.1f, 0, 0.9f}, {0, SC_GRAD, 0}, 1, &want_momentum1[0][0]},
    {"ApplyKerasMomentum", 2, {0}, 3, {0.1f, 0, 0.9f}, {0, SC_GRAD, 0}, 0, &want_keras_momentum0[0][0]},
    {"ApplyKerasMomentum", 2, {0}, 3, {0.1f, 0, 0.9f}, {0, SC_GRAD, 0}, 1, &want_keras_momentum1[0][0]},
    {"ApplyAdam", 3, {0, 0}, 7, {0, 0, 0.01f, 0.9f, 0.999f, 1e-7f, 0}, {SC_B1P, SC_B2P, 0, 0, 0, 0, SC_GRAD}, 0, &want_adam0[0][0]},
    {"ApplyAdam", 3, {0, 0}, 7, {0, 0, 0.01f, 0.9f, 0.999f, 1e-7f, 0}, {SC_B1P, SC_B2P, 0, 0, 0, 0, SC_GRAD}, 1, &want_adam1[0][0]},
    {"ApplyAdagrad", 2, {0.1f}, 2, {0.1f, 0}, {0, SC_GRAD}, -1, &want_adagrad[0][0]},
    {"ApplyAdagradV2", 2, {0.1f}, 3, {0.1f, 1e-7f, 0}, {0, 0, SC_GRAD}, -1, &want_adagrad[0][0]},
    {"ApplyRMSProp", 3, {1, 0}, 5, {0.01f, 0.9f, 0.5f, 1e-10f, 0}, {0, 0, 0, 0, SC_GRAD}, -1, &want_rmsprop[0][0]},
    {"ApplyCenteredRMSProp", 4, {0, 1, 0}, 5, {0.01f, 0.9f, 0.5f, 1e-10f, 0}, {0, 0, 0, 0, SC_GRAD}, -1, &want_centered_rmsprop[0][0]},
};

DF_TEST(resource_vars_apply_ops_match_tensorflow) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_apply(&cases[i], 0);
}
/* The ref twins (VariableV2): ApplyAdagrad, ApplyRMSProp and ApplyCenteredRMSProp are new; the
   others (src/kernels/training.c) must agree with them. */
DF_TEST(resource_vars_ref_apply_ops_match_tensorflow) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (!strcmp(cases[i].op, "ApplyKerasMomentum") || !strcmp(cases[i].op, "ApplyAdagradV2")) continue;   /* (no ref op in TF) */
        check_apply(&cases[i], 1);
    }
}

/* The vector path (AVX, 8 floats at a time) gives the scalar loop's bits: every update on 45
   elements (5 vectors and a tail), three steps, the portable kernels against the machine's. */
static void run_apply_steps(const apply_case *c, int n, int nesterov_off, float *out) {
    df_graph *g = df_graph_new();
    int64_t d = n;
    df_output vars[4];
    df_node *inits[4];
    for (int i = 0; i < c->n_vars; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        float *init = (float *)malloc((size_t)n * sizeof(float));
        for (int k = 0; k < n; k++) init[k] = i == 0 ? (float)sin(k * 0.7) : c->slot_init[i - 1] + 0.01f * (float)(k % 5);
        vars[i] = var_handle(g, name, DF_FLOAT, 1, &d);
        inits[i] = update(g, "AssignVariableOp", vars[i], const_f32(g, n, init));
        free(init);
    }
    df_output grad = df_placeholder(g, "grad", DF_FLOAT, 1, &d);
    char op[64];
    snprintf(op, sizeof op, "Resource%s", c->op);
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < c->n_vars; i++) df_op_add_input(b, vars[i]);
    for (int i = 0; i < c->n_in; i++)
        df_op_add_input(b, c->marker[i] == SC_GRAD ? grad : c->marker[i] == SC_B1P ? df_scalar_f32(g, 0.9f)
                         : c->marker[i] == SC_B2P ? df_scalar_f32(g, 0.999f) : df_scalar_f32(g, c->scalars[i]));
    if (c->nesterov >= 0) df_op_set_attr_bool(b, "use_nesterov", nesterov_off ? 0 : c->nesterov);
    df_node *step = df_op_finish(b);
    df_output reads[4];
    for (int i = 0; i < c->n_vars; i++) reads[i] = read_var(g, vars[i], DF_FLOAT);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    run_targets(s, inits, c->n_vars, &st);
    df_tensor *gv = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    for (int t = 0; t < 3; t++) {
        for (int k = 0; k < n; k++) ((float *)df_tensor_data(gv))[k] = (float)cos(k * 1.3 + t) * 0.3f;
        df_session_run(s, &grad, &gv, 1, NULL, NULL, 0, &step, 1, &st);
        CHECK_OK(&st);
    }
    df_tensor *got[4] = {NULL, NULL, NULL, NULL};
    df_session_run(s, NULL, NULL, 0, reads, got, c->n_vars, NULL, 0, &st);
    CHECK_OK(&st);
    for (int i = 0; i < c->n_vars; i++)
        if (got[i]) memcpy(out + (size_t)i * (size_t)n, df_tensor_data(got[i]), (size_t)n * sizeof(float));
    for (int i = 0; i < 4; i++) df_tensor_release(got[i]);
    df_tensor_release(gv);
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(resource_vars_apply_vector_path_matches_scalar) {
    enum { N = 45 };
    const char *native = df_kernel_isa();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float a[4 * N], b[4 * N];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        CHECK_EQ_INT(df_set_kernel_isa("portable"), DF_OK);
        run_apply_steps(&cases[i], N, 0, a);
        CHECK_EQ_INT(df_set_kernel_isa("auto"), DF_OK);
        run_apply_steps(&cases[i], N, 0, b);
        int bad = 0;
        for (int k = 0; k < cases[i].n_vars * N; k++) bad += memcmp(&a[k], &b[k], sizeof(float)) != 0;
        CHECK_MSG(bad == 0, "%s (nesterov %d): %d of %d values differ between the portable and %s kernels", cases[i].op,
                  cases[i].nesterov, bad, cases[i].n_vars * N, native);
    }
}

DF_TEST(resource_vars_apply_bad_input) {
    df_graph *g = df_graph_new();
    int64_t d = 3, d2 = 2;
    df_output v = var_handle(g, "v", DF_FLOAT, 1, &d), a = var_handle(g, "a", DF_FLOAT, 1, &d2);
    df_node *i1 = update(g, "AssignVariableOp", v, const_f32(g, 3, (const float[]){1, 2, 3}));
    df_node *i2 = update(g, "AssignVariableOp", a, const_f32(g, 2, (const float[]){1, 2}));
    df_op_builder *b = df_op_new(g, "ResourceApplyMomentum", "mom_step");
    df_op_add_input(b, v);
    df_op_add_input(b, a);
    df_op_add_input(b, df_scalar_f32(g, 0.1f));
    df_op_add_input(b, const_f32(g, 3, (const float[]){1, 2, 3}));
    df_op_add_input(b, df_scalar_f32(g, 0.9f));
    df_node *mom = df_op_finish(b);
    b = df_op_new(g, "ResourceApplyGradientDescent", "gd_step");
    df_op_add_input(b, v);
    df_op_add_input(b, const_f32(g, 2, (const float[]){1, 2}));
    df_op_add_input(b, const_f32(g, 3, (const float[]){1, 2, 3}));
    df_node *gd = df_op_finish(b);
    b = df_op_new(g, "ResourceApplyMomentum", "same_twice");
    df_op_add_input(b, v);
    df_op_add_input(b, v);
    df_op_add_input(b, df_scalar_f32(g, 0.1f));
    df_op_add_input(b, const_f32(g, 3, (const float[]){1, 2, 3}));
    df_op_add_input(b, df_scalar_f32(g, 0.9f));
    df_node *twice = df_op_finish(b);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    df_node *inits[2] = {i1, i2};
    run_targets(s, inits, 2, &st);
    CHECK_OK(&st);
    run_targets(s, &mom, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "var and accum do not have the same shape");
    CHECK(strstr(st.message, "mom_step") != NULL);
    run_targets(s, &gd, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "alpha is not a scalar");
    CHECK(strstr(st.message, "gd_step") != NULL);
    run_targets(s, &twice, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "distinct variables");
    df_session_free(s);
    df_graph_free(g);
}

/* ---- gradients through the handle, float64, against central differences ---- */
/* loss = sum(read(v)^2 * c) + sum(gather(v, [2, 0, 2]) * k) */
static df_output grad_loss(df_graph *g, df_output h) {
    df_output r = read_var(g, h, DF_DOUBLE);
    df_output c = const_f64(g, 3, (const double[]){0.5, -1.5, 2.0});
    df_op_builder *bg = df_op_new(g, "ResourceGather", NULL);
    df_op_add_input(bg, h);
    df_op_add_input(bg, const_i32(g, 3, (const int32_t[]){2, 0, 2}));
    df_op_set_attr_type(bg, "dtype", DF_DOUBLE);
    df_output gth = {df_op_finish(bg), 0};
    df_output k = const_f64(g, 3, (const double[]){3.0, -1.0, 0.25});
    df_output a = df_reduce_sum(g, df_mul(g, df_square(g, r), c), 0, NULL, 0);
    df_output b = df_reduce_sum(g, df_mul(g, gth, k), 0, NULL, 0);
    return df_add(g, a, b);
}
DF_TEST(resource_vars_gradient_through_handle_matches_central_differences) {
    df_graph *g = df_graph_new();
    int64_t d = 3;
    df_output h = var_handle(g, "p", DF_DOUBLE, 1, &d);
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 1, &d);
    df_node *set = update(g, "AssignVariableOp", h, x);
    df_output loss = grad_loss(g, h);
    df_output dh;
    df_gradients(g, 1, &loss, NULL, 1, &h, &dh);
    CHECK_OK(df_graph_status(g));
    CHECK(dh.node && df_output_dtype(dh) == DF_DOUBLE);
    df_session *s = session(g);
    df_status st;
    const double x0[3] = {0.3, -1.2, 0.7};
    df_tensor *xv = df_tensor_new(DF_DOUBLE, 1, &d, NULL);
    memcpy(df_tensor_data(xv), x0, sizeof x0);
    df_session_run(s, &x, &xv, 1, NULL, NULL, 0, &set, 1, &st);
    CHECK_OK(&st);
    df_tensor *gv = fetch1(s, dh, &st);
    CHECK_OK(&st);
    for (int i = 0; gv && i < 3; i++) {
        double f[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            double *p = (double *)df_tensor_data(xv);
            memcpy(p, x0, sizeof x0);
            p[i] += sgn ? -1e-6 : 1e-6;
            df_session_run(s, &x, &xv, 1, NULL, NULL, 0, &set, 1, &st);
            df_tensor *lv = fetch1(s, loss, &st);
            CHECK_OK(&st);
            f[sgn] = lv ? *(const double *)df_tensor_data(lv) : 0;
            df_tensor_release(lv);
        }
        double num = (f[0] - f[1]) / 2e-6, got = ((const double *)df_tensor_data(gv))[i];
        CHECK_NEAR(got, num, 1e-6 * (1 + fabs(num)));
    }
    /* the analytic value too: 2 v c + gather's scatter of k */
    const double want[3] = {2 * 0.3 * 0.5 - 1.0, 2 * -1.2 * -1.5, 2 * 0.7 * 2.0 + 3.0 + 0.25};
    for (int i = 0; gv && i < 3; i++) CHECK_NEAR(((const double *)df_tensor_data(gv))[i], want[i], 1e-12);
    df_tensor_release(gv);
    /* with respect to a ReadVariableOp's output instead: that read's share alone (2 v c) */
    df_output r = {NULL, 0};
    for (int i = 0; i < df_graph_num_nodes(g) && !r.node; i++)
        if (!strcmp(df_node_op(df_graph_node_at(g, i)), "ReadVariableOp")) r = (df_output){df_graph_node_at(g, i), 0};
    df_output dr = {NULL, 0};
    df_gradients(g, 1, &loss, NULL, 1, &r, &dr);
    CHECK_OK(df_graph_status(g));
    memcpy(df_tensor_data(xv), x0, sizeof x0);
    df_session_run(s, &x, &xv, 1, NULL, NULL, 0, &set, 1, &st);
    gv = dr.node ? fetch1(s, dr, &st) : NULL;
    CHECK_OK(&st);
    const double cw[3] = {0.5, -1.5, 2.0};
    for (int i = 0; gv && i < 3; i++) CHECK_NEAR(((const double *)df_tensor_data(gv))[i], 2 * x0[i] * cw[i], 1e-12);
    CHECK(gv != NULL);
    df_tensor_release(gv);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- control flow: a loop body that updates a captured variable each iteration ---- */
typedef struct { df_output h; } loop_user;
static df_output loop_cond(df_graph *g, void *user, const df_output *vars) {
    (void)user;
    return df_less(g, vars[0], df_scalar_i32(g, 5));
}
static void loop_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    loop_user *u = (loop_user *)user;
    df_op_builder *b = df_op_new(g, "AssignAddVariableOp", NULL);
    df_op_add_input(b, u->h);
    df_op_add_input(b, df_scalar_f32(g, 1.5f));
    df_node *add = df_op_finish(b);
    df_op_builder *bi = df_op_new(g, "Identity", NULL);
    df_op_add_input(bi, df_add(g, vars[0], df_scalar_i32(g, 1)));
    df_op_add_control_input(bi, add);
    next[0] = (df_output){df_op_finish(bi), 0};
}
DF_TEST(resource_vars_while_loop_updates_a_captured_handle) {
    df_graph *g = df_graph_new();
    df_output h = var_handle(g, "counter", DF_FLOAT, 0, NULL);
    df_node *init = update(g, "AssignVariableOp", h, df_scalar_f32(g, 0));
    loop_user u = {h};
    df_output i0 = df_scalar_i32(g, 0), out;
    df_while_loop(g, 1, &i0, loop_cond, loop_body, &u, NULL, &out);
    df_op_builder *b = df_op_new(g, "ReadVariableOp", NULL);
    df_op_add_input(b, h);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_add_control_input(b, out.node);
    df_output r = {df_op_finish(b), 0};
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    for (int rep = 1; rep <= 2; rep++) {
        run_targets(s, &init, 1, &st);
        CHECK_OK(&st);
        df_tensor *t = fetch1(s, r, &st);
        CHECK_OK(&st);
        CHECK(t && *(const float *)df_tensor_data(t) == 7.5f);
        df_tensor_release(t);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- placement: the handle and its users stay on the variable's device ---- */
DF_TEST(resource_vars_ops_are_placed_with_their_variable) {
    df_graph *g = df_graph_new();
    int64_t d = 2;
    df_op_builder *b = df_op_new(g, "VarHandleOp", "dev_var");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 1, &d);
    df_op_set_device(b, "/cpu:1");
    df_output h = {df_op_finish(b), 0};
    df_op_builder *bc = df_op_new(g, "Const", "two");
    df_tensor *tv = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    ((float *)df_tensor_data(tv))[0] = 2; ((float *)df_tensor_data(tv))[1] = 3;
    df_op_set_attr_tensor(bc, "value", tv);
    df_op_set_attr_type(bc, "dtype", DF_FLOAT);
    df_op_set_device(bc, "/cpu:0");
    df_output two = {df_op_finish(bc), 0};
    df_tensor_release(tv);
    df_node *init = update(g, "AssignVariableOp", h, two);
    df_output r = read_var(g, h, DF_FLOAT);
    df_op_builder *bm = df_op_new(g, "Mul", NULL);
    df_op_add_input(bm, r);
    df_op_add_input(bm, r);
    df_op_set_device(bm, "/cpu:0");
    df_output sq = {df_op_finish(bm), 0};
    CHECK_OK(df_graph_status(g));
    df_session_options o = {0};
    o.num_cpu_devices = 2;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    df_tensor *t = fetch1(s, sq, &st);
    CHECK_OK(&st);
    CHECK(t && ((const float *)df_tensor_data(t))[1] == 9);
    df_tensor_release(t);
    /* the read ran beside the variable: its partition is CPU:1's */
    int found = 0;
    for (int p = 0; p < df_session_num_partitions(s); p++) {
        const char *dev = NULL;
        const df_graph *pg = df_session_partition(s, p, &dev);
        for (int i = 0; pg && i < df_graph_num_nodes(pg); i++) {
            df_node *n = df_graph_node_at(pg, i);
            if (!strcmp(df_node_op(n), "ReadVariableOp") || !strcmp(df_node_op(n), "VarHandleOp")) {
                found++;
                CHECK_MSG(dev && strstr(dev, "CPU:1"), "%s placed on %s", df_node_name(n), dev ? dev : "?");
            }
            if (!strcmp(df_node_op(n), "_Send") || !strcmp(df_node_op(n), "_Recv")) {
                df_dtype tt = DF_FLOAT;
                df_node_attr_type(n, "T", &tt);
                CHECK_MSG(tt != DF_RESOURCE, "a handle crosses devices at %s", df_node_name(n));
            }
        }
    }
    CHECK_EQ_INT(found, 2);
    df_session_free(s);
    df_graph_free(g);
}

#ifndef DF_NO_THREADS
/* ---- threads: two threads running steps on one session, a third reading ---- */
typedef struct { df_session *s; df_node *step; int n; df_code code; } thread_arg;
static void *thread_steps(void *p) {
    thread_arg *a = (thread_arg *)p;
    df_status st;
    a->code = DF_OK;
    for (int i = 0; i < a->n && a->code == DF_OK; i++) a->code = run_targets(a->s, &a->step, 1, &st);
    return NULL;
}
/* A reader beside the updaters: every value it fetches is one update's whole result (the
   updates change the variable in place only when no reader holds its value). */
typedef struct { df_session *s; df_output r; int n, torn; df_code code; } reader_arg;
static void *thread_reads(void *p) {
    reader_arg *a = (reader_arg *)p;
    df_status st;
    for (int i = 0; i < a->n; i++) {
        df_tensor *t = fetch1(a->s, a->r, &st);
        if (st.code) { a->code = st.code; break; }
        const float *v = (const float *)df_tensor_data(t);
        for (int64_t k = 1; k < df_tensor_num_elements(t); k++) if (v[k] != v[0]) { a->torn++; break; }
        df_tensor_release(t);
    }
    return NULL;
}
DF_TEST(resource_vars_two_threads_update_one_session) {
    df_graph *g = df_graph_new();
    int64_t d = 1024;
    df_output h = var_handle(g, "acc", DF_FLOAT, 1, &d), w = var_handle(g, "w", DF_FLOAT, 1, &d);
    df_tensor *zeros = df_tensor_new(DF_FLOAT, 1, &d, NULL), *ones = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    for (int i = 0; i < d; i++) ((float *)df_tensor_data(zeros))[i] = 0, ((float *)df_tensor_data(ones))[i] = 1;
    df_output z = df_const(g, zeros), one = df_const(g, ones);
    df_node *inits[2] = {update(g, "AssignVariableOp", h, z), update(g, "AssignVariableOp", w, z)};
    df_node *add = update(g, "AssignAddVariableOp", h, one);
    df_op_builder *b = df_op_new(g, "ResourceApplyGradientDescent", NULL);
    df_op_add_input(b, w);
    df_op_add_input(b, df_scalar_f32(g, -1.0f));
    df_op_add_input(b, one);
    df_node *gd = df_op_finish(b);
    df_op_builder *bn = df_op_new(g, "NoOp", NULL);
    df_op_add_control_input(bn, add);
    df_op_add_control_input(bn, gd);
    df_node *step = df_op_finish(bn);
    df_output reads[2] = {read_var(g, h, DF_FLOAT), read_var(g, w, DF_FLOAT)};
    df_tensor_release(zeros);
    df_tensor_release(ones);
    CHECK_OK(df_graph_status(g));
    df_session_options o = {0};
    o.inter_op_threads = 2;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    run_targets(s, inits, 2, &st);
    CHECK_OK(&st);
    pthread_t th[3];
    thread_arg args[2] = {{s, step, 200, DF_OK}, {s, step, 200, DF_OK}};
    reader_arg rd = {s, reads[1], 200, 0, DF_OK};
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_steps, &args[i]);
    pthread_create(&th[2], NULL, thread_reads, &rd);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    CHECK_EQ_INT(args[0].code, DF_OK);
    CHECK_EQ_INT(args[1].code, DF_OK);
    CHECK_EQ_INT(rd.code, DF_OK);
    CHECK_EQ_INT(rd.torn, 0);
    df_tensor *got[2] = {NULL, NULL};
    df_session_run(s, NULL, NULL, 0, reads, got, 2, NULL, 0, &st);
    CHECK_OK(&st);
    for (int k = 0; k < 2 && got[k]; k++) {
        const float *p = (const float *)df_tensor_data(got[k]);
        int bad = 0;
        for (int i = 0; i < d; i++) bad += p[i] != 400.0f;
        CHECK_MSG(bad == 0, "variable %d: %d of %lld elements differ from 400 (e.g. %g)", k, bad, (long long)d, p[0]);
    }
    df_tensor_release(got[0]);
    df_tensor_release(got[1]);
    df_session_free(s);
    df_graph_free(g);
}
#endif

/* ---- checkpoints: tf.compat.v1.train.Saver over resource variables ----
   tests/graphdef/fixtures_resource/saver (tests/graphdef/make_resource_fixtures.py): TF's Saver
   graph reads the variables through ReadVariableOp into SaveV2 and assigns RestoreV2's tensors
   through AssignVariableOp. The values after the initializer and one Adam step are TF's; they
   are saved, the variables reset by the initializer in a fresh session, and restored. */
#define SAVER_DIR "tests/graphdef/fixtures_resource/saver"
typedef struct { char filename[128], save[128], restore[128], init[128], train[128]; char fetch[16][128], file[16][128]; int n; } saver_manifest;
static int read_saver_manifest(saver_manifest *m) {
    memset(m, 0, sizeof *m);
    FILE *f = fopen(SAVER_DIR "/manifest.txt", "r");
    if (!f) return 0;
    char line[512], kind[32], a[128], b[128];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        int k = sscanf(line, "%31s %127s %127s", kind, a, b);
        if (k < 2) continue;
        if (!strcmp(kind, "filename")) strcpy(m->filename, a);
        else if (!strcmp(kind, "save")) strcpy(m->save, a);
        else if (!strcmp(kind, "restore")) strcpy(m->restore, a);
        else if (!strcmp(kind, "init")) strcpy(m->init, a);
        else if (!strcmp(kind, "train")) strcpy(m->train, a);
        else if (k == 3 && !strcmp(kind, "fetch") && m->n < 16) { strcpy(m->fetch[m->n], a); strcpy(m->file[m->n++], b); }
    }
    fclose(f);
    return m->n > 0 && m->filename[0] && m->save[0] && m->restore[0] && m->init[0] && m->train[0];
}
static df_output by_name(df_graph *g, const char *tensor) {
    char node[128];
    snprintf(node, sizeof node, "%s", tensor);
    char *colon = strrchr(node, ':');
    int index = 0;
    if (colon) { index = atoi(colon + 1); *colon = 0; }
    df_output o = {df_graph_find(g, node), index};
    return o;
}
static df_graph *import_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    df_status st;
    df_graph *g = df_graph_import_graphdef(buf, n, &st);
    CHECK_OK(&st);
    return g;
}
/* Feeds the Saver's filename with path and runs its op (the save tensor as a fetch, or the
   restore op as a target). */
static void saver_run(df_session *s, df_graph *g, const saver_manifest *m, const char *path, int save, df_status *st) {
    df_output fname = by_name(g, m->filename);
    df_tensor *p = df_tensor_new_strings(0, NULL, &path, st);
    if (save) {
        df_output out = by_name(g, m->save);
        df_tensor *got = NULL;
        df_session_run(s, &fname, &p, 1, &out, &got, 1, NULL, 0, st);
        df_tensor_release(got);
    } else {
        df_node *restore = df_graph_find(g, m->restore);
        df_session_run(s, &fname, &p, 1, NULL, NULL, 0, &restore, 1, st);
    }
    df_tensor_release(p);
}
/* Every fetched variable equals TensorFlow's value (tol 0: restored) or is near it. */
static void check_values(df_session *s, df_graph *g, const saver_manifest *m, const char *how, float tol) {
    for (int i = 0; i < m->n; i++) {
        df_status st;
        char path[512];
        snprintf(path, sizeof path, SAVER_DIR "/%s", m->file[i]);
        df_tensor *want = df_tensor_read_npy(path, &st);
        CHECK_OK(&st);
        df_tensor *got = fetch1(s, by_name(g, m->fetch[i]), &st);
        CHECK_OK(&st);
        if (!want || !got) { df_tensor_release(want); df_tensor_release(got); continue; }
        CHECK_EQ_INT(df_tensor_num_elements(got), df_tensor_num_elements(want));
        int bad = 0;
        for (int64_t k = 0; k < df_tensor_num_elements(want) && k < df_tensor_num_elements(got); k++) {
            float a = ((const float *)df_tensor_data(got))[k], b = ((const float *)df_tensor_data(want))[k];
            bad += !(fabsf(a - b) <= tol * (1 + fabsf(b)));
        }
        CHECK_MSG(bad == 0, "%s: %s differs from TensorFlow's in %d elements", how, m->fetch[i], bad);
        df_tensor_release(want);
        df_tensor_release(got);
    }
}
DF_TEST(resource_vars_tensorflow_saver_saves_and_restores) {
    saver_manifest m;
    CHECK_MSG(read_saver_manifest(&m), "no " SAVER_DIR "/manifest.txt (run the tests from the repository root)");
    if (!m.n) return;
    df_graph *g = import_file(SAVER_DIR "/graph.pb");
    CHECK(g != NULL);
    if (!g) return;
    df_session *s = session(g);
    df_status st;
    /* before anything: reading a variable fails, naming it */
    df_tensor *t = fetch1(s, by_name(g, m.fetch[0]), &st);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "Could not find variable");
    df_tensor_release(t);
    df_node *init = df_graph_find(g, m.init), *train = df_graph_find(g, m.train);
    CHECK(init && train);
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    run_targets(s, &train, 1, &st);
    CHECK_OK(&st);
    check_values(s, g, &m, "after one step", 1e-6f);
    char mine[512];
    snprintf(mine, sizeof mine, "%s/resource_saver.ckpt", df_test_tmpdir());
    saver_run(s, g, &m, mine, 1, &st);
    CHECK_OK(&st);
    df_tensor *w_saved = fetch1(s, by_name(g, m.fetch[0]), &st);
    df_session_free(s);
    s = session(g);
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    t = fetch1(s, by_name(g, m.fetch[0]), &st);
    CHECK(t && w_saved && memcmp(df_tensor_data(t), df_tensor_data(w_saved), 4 * (size_t)df_tensor_num_elements(t)));
    df_tensor_release(t);
    saver_run(s, g, &m, mine, 0, &st);
    CHECK_OK(&st);
    t = fetch1(s, by_name(g, m.fetch[0]), &st);
    CHECK(t && w_saved && !memcmp(df_tensor_data(t), df_tensor_data(w_saved), 4 * (size_t)df_tensor_num_elements(t)));
    df_tensor_release(t);
    df_tensor_release(w_saved);
    check_values(s, g, &m, "saved and restored", 1e-6f);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- a TF-made training program with its variables on two devices ----
   tests/graphdef/fixtures/resource_optimizers (also run on one device by tests/test_graphdef.c):
   each VarHandleOp goes to CPU:0 or CPU:1 in turn and the placer keeps every op using a handle
   beside it; the values after the initializer and three train steps are TensorFlow's. */
DF_TEST(resource_vars_tensorflow_program_over_two_devices) {
    const char *dir = "tests/graphdef/fixtures/resource_optimizers";
    char path[512], line[512], kind[32], a[128], b[128];
    snprintf(path, sizeof path, "%s/graph.pb", dir);
    df_graph *g = import_file(path);
    CHECK_MSG(g != NULL, "no %s (run the tests from the repository root)", path);
    if (!g) return;
    int k = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *n = df_graph_node_at(g, i);
        /* (the primary variables: their slots follow them through _class, as in TF) */
        if (!strcmp(df_node_op(n), "VarHandleOp") && !strchr(df_node_name(n), '/')) df_node_set_device(g, n, k++ % 2 ? "/device:CPU:1" : "/device:CPU:0");
    }
    CHECK(k >= 5);
    df_session_options o = {0};
    o.num_cpu_devices = 2;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int targets = 0, fetched = 0;
    while (f && fgets(line, sizeof line, f) && st.code == DF_OK) {
        if (line[0] == '#') continue;
        int nf = sscanf(line, "%31s %127s %127s", kind, a, b);
        if (nf >= 2 && !strcmp(kind, "target")) {
            df_node *t = df_graph_find(g, a);
            CHECK(t != NULL);
            run_targets(s, &t, 1, &st);
            CHECK_OK(&st);
            targets++;
        } else if (nf == 3 && !strcmp(kind, "fetch")) {
            snprintf(path, sizeof path, "%s/%s", dir, b);
            df_tensor *want = df_tensor_read_npy(path, &st);
            CHECK_OK(&st);
            df_tensor *got = fetch1(s, by_name(g, a), &st);
            CHECK_OK(&st);
            for (int64_t i = 0; want && got && i < df_tensor_num_elements(want); i++) {
                float w = ((const float *)df_tensor_data(want))[i], v = ((const float *)df_tensor_data(got))[i];
                CHECK_MSG(fabsf(v - w) <= 1e-5f * (1 + fabsf(w)), "%s[%lld]: %.9g, TensorFlow %.9g", a, (long long)i, v, w);
            }
            df_tensor_release(want);
            df_tensor_release(got);
            fetched++;
        }
    }
    if (f) fclose(f);
    CHECK_EQ_INT(targets, 4);
    CHECK(fetched >= 10);
    CHECK(df_session_num_partitions(s) == 2);
    /* no handle crosses between the devices */
    for (int p = 0; p < df_session_num_partitions(s); p++) {
        const df_graph *pg = df_session_partition(s, p, NULL);
        for (int i = 0; pg && i < df_graph_num_nodes(pg); i++) {
            df_node *n = df_graph_node_at(pg, i);
            df_dtype tt = DF_FLOAT;
            if ((!strcmp(df_node_op(n), "_Send") || !strcmp(df_node_op(n), "_Recv")) && df_node_attr_type(n, "T", &tt))
                CHECK_MSG(tt != DF_RESOURCE, "a handle crosses devices at %s", df_node_name(n));
        }
    }
    df_session_free(s);
    df_graph_free(g);
}

/* A loop body reading a captured variable: the gradient reaches the handle through the loop
   (TF's v1 control flow accumulates a loop invariant's gradient). acc = h^3 after 3 iterations. */
static df_output pow_cond(df_graph *g, void *user, const df_output *vars) {
    (void)user;
    return df_less(g, vars[0], df_scalar_i32(g, 3));
}
static void pow_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    loop_user *u = (loop_user *)user;
    next[0] = df_add(g, vars[0], df_scalar_i32(g, 1));
    next[1] = df_mul(g, vars[1], read_var(g, u->h, DF_DOUBLE));
}
DF_TEST(resource_vars_gradient_through_a_while_loop) {
    df_graph *g = df_graph_new();
    df_output h = var_handle(g, "base", DF_DOUBLE, 0, NULL);
    df_node *init = update(g, "AssignVariableOp", h, df_scalar_f64(g, 1.5));
    loop_user u = {h};
    df_output in[2] = {df_scalar_i32(g, 0), df_scalar_f64(g, 1.0)}, out[2];
    df_while_loop(g, 2, in, pow_cond, pow_body, &u, NULL, out);
    df_output dh = {NULL, 0};
    df_gradients(g, 1, &out[1], NULL, 1, &h, &dh);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    df_output f[2] = {out[1], dh};
    df_tensor *v[2] = {NULL, NULL};
    if (dh.node) df_session_run(s, NULL, NULL, 0, f, v, 2, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(v[0] && fabs(*(const double *)df_tensor_data(v[0]) - 3.375) < 1e-12);
    CHECK(v[1] && fabs(*(const double *)df_tensor_data(v[1]) - 6.75) < 1e-12);
    df_tensor_release(v[0]);
    df_tensor_release(v[1]);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- df_gradients against tf.gradients on a TF-made graph ----
   tests/graphdef/fixtures_resource/grad: a loss reading w twice and table through ResourceGather;
   our gradients with respect to the imported handles equal TF's (and TF's own gradient graph,
   imported, runs to the same values). */
DF_TEST(resource_vars_gradients_match_tf_gradients) {
    const char *dir = "tests/graphdef/fixtures_resource/grad";
    char path[512], line[512], kind[32], a[128], b[128], init_name[128] = "", loss_name[128] = "";
    char wrt[4][128], wrt_file[4][128], fetch[4][128], fetch_file[4][128];
    int n_wrt = 0, n_fetch = 0;
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "no %s (run the tests from the repository root)", path);
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        int k = sscanf(line, "%31s %127s %127s", kind, a, b);
        if (k >= 2 && !strcmp(kind, "init")) strcpy(init_name, a);
        else if (k >= 2 && !strcmp(kind, "loss")) strcpy(loss_name, a);
        else if (k == 3 && !strcmp(kind, "wrt") && n_wrt < 4) { strcpy(wrt[n_wrt], a); strcpy(wrt_file[n_wrt++], b); }
        else if (k == 3 && !strcmp(kind, "fetch") && n_fetch < 4) { strcpy(fetch[n_fetch], a); strcpy(fetch_file[n_fetch++], b); }
    }
    fclose(f);
    CHECK_EQ_INT(n_wrt, 2);
    snprintf(path, sizeof path, "%s/graph.pb", dir);
    df_graph *g = import_file(path);
    CHECK(g != NULL);
    if (!g || n_wrt != 2) { df_graph_free(g); return; }
    df_output loss = by_name(g, loss_name), xs[2] = {by_name(g, wrt[0]), by_name(g, wrt[1])}, dxs[2];
    CHECK(loss.node && xs[0].node && xs[1].node && df_output_dtype(xs[0]) == DF_RESOURCE);
    df_gradients(g, 1, &loss, NULL, 2, xs, dxs);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    df_node *init = df_graph_find(g, init_name);
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    for (int i = 0; i < n_wrt + n_fetch; i++) {
        df_output o = i < n_wrt ? dxs[i] : by_name(g, fetch[i - n_wrt]);
        snprintf(path, sizeof path, "%s/%s", dir, i < n_wrt ? wrt_file[i] : fetch_file[i - n_wrt]);
        df_tensor *want = df_tensor_read_npy(path, &st);
        CHECK_OK(&st);
        df_tensor *got = o.node ? fetch1(s, o, &st) : NULL;
        CHECK_OK(&st);
        CHECK(got && want && df_tensor_num_elements(got) == df_tensor_num_elements(want));
        for (int64_t k = 0; got && want && k < df_tensor_num_elements(want) && k < df_tensor_num_elements(got); k++) {
            float w = ((const float *)df_tensor_data(want))[k], v = ((const float *)df_tensor_data(got))[k];
            CHECK_MSG(fabsf(v - w) <= 1e-5f * (1 + fabsf(w)), "%s[%lld]: %.9g, TensorFlow %.9g",
                      i < n_wrt ? wrt[i] : fetch[i - n_wrt], (long long)k, v, w);
        }
        df_tensor_release(want);
        df_tensor_release(got);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* A cond whose taken branch reads the variable and whose other branch does not: the gradient
   reaches the handle through the Switch (zeros of the variable for the untaken branch). */
static void cond_then(df_graph *g, void *user, df_output *outs) {
    loop_user *u = (loop_user *)user;
    df_output r = read_var(g, u->h, DF_DOUBLE);
    outs[0] = df_mul(g, r, r);
}
static void cond_else(df_graph *g, void *user, df_output *outs) {
    (void)user;
    outs[0] = df_scalar_f64(g, 2.0);
}
DF_TEST(resource_vars_gradient_through_a_cond) {
    df_graph *g = df_graph_new();
    df_output h = var_handle(g, "c", DF_DOUBLE, 0, NULL);
    df_node *init = update(g, "AssignVariableOp", h, df_scalar_f64(g, 3.0));
    df_output pred = df_placeholder(g, "pred", DF_BOOL, 0, NULL);
    loop_user u = {h};
    df_output y, dh = {NULL, 0};
    df_cond(g, pred, 1, cond_then, cond_else, &u, &y);
    df_gradients(g, 1, &y, NULL, 1, &h, &dh);
    CHECK_OK(df_graph_status(g));
    df_session *s = session(g);
    df_status st;
    run_targets(s, &init, 1, &st);
    CHECK_OK(&st);
    for (int taken = 0; taken < 2 && dh.node; taken++) {
        df_tensor *p = df_tensor_new(DF_BOOL, 0, NULL, NULL);
        *(unsigned char *)df_tensor_data(p) = (unsigned char)taken;
        df_tensor *v = NULL;
        df_session_run(s, &pred, &p, 1, &dh, &v, 1, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK_MSG(v && *(const double *)df_tensor_data(v) == (taken ? 6.0 : 0.0), "pred %d: %g", taken,
                  v ? *(const double *)df_tensor_data(v) : -1.0);
        df_tensor_release(v);
        df_tensor_release(p);
    }
    df_session_free(s);
    df_graph_free(g);
}

#ifndef DF_NO_THREADS
/* ---- a session with workers: the variable lives on worker task 1, its users run beside it and
   a value read from it crosses to task 0 as data; a handle fetched by the client is refused ---- */
static void quiet_log(void *user, const char *line) { (void)user; (void)line; }
DF_TEST(resource_vars_on_a_worker_process) {
    df_worker *w[2] = {NULL, NULL};
    char target[256] = "";
    for (int i = 0; i < 2; i++) {
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = i;
        o.log = quiet_log;
        df_status st;
        w[i] = df_worker_start(&o, &st);
        CHECK_MSG(w[i] != NULL, "worker %d: %s", i, st.message);
        if (!w[i]) { for (int k = 0; k < i; k++) df_worker_stop(w[k]); return; }
        size_t k = strlen(target);
        snprintf(target + k, sizeof target - k, "%s127.0.0.1:%d", i ? "," : "", df_worker_port(w[i]));
    }
    df_graph *g = df_graph_new();
    int64_t d = 3;
    df_graph_push_device(g, "/job:worker/task:1");
    df_output h = var_handle(g, "remote_v", DF_FLOAT, 1, &d);
    df_graph_pop_device(g);
    df_node *init = update(g, "AssignVariableOp", h, const_f32(g, 3, (const float[]){1, 2, 3}));
    df_op_builder *b = df_op_new(g, "ResourceApplyGradientDescent", NULL);
    df_op_add_input(b, h);
    df_op_add_input(b, df_scalar_f32(g, 0.5f));
    df_op_add_input(b, const_f32(g, 3, (const float[]){2, 2, 2}));
    df_node *step = df_op_finish(b);
    df_output r = read_var(g, h, DF_FLOAT);
    df_graph_push_device(g, "/job:worker/task:0");
    df_output twice = df_mul(g, r, df_scalar_f32(g, 2));
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    if (s) {
        run_targets(s, &init, 1, &st);
        CHECK_OK(&st);
        for (int i = 0; i < 3; i++) run_targets(s, &step, 1, &st);
        CHECK_OK(&st);
        df_tensor *t = fetch1(s, twice, &st);
        CHECK_OK(&st);
        for (int i = 0; t && i < 3; i++) CHECK_NEAR(((const float *)df_tensor_data(t))[i], 2 * (i + 1 - 3.0), 0);
        df_tensor_release(t);
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        t = fetch1(s, h, &st);
        CHECK(!t);
        CHECK_STATUS(&st, DF_UNIMPLEMENTED, "is a resource handle");
        CHECK(strstr(st.message, "remote_v") != NULL);
        df_tensor_release(t);
        df_session_free(s);
    }
    df_graph_free(g);
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}
#endif
