/* ==========================================================================================
   src/api.c: Public op wrappers                                                        >>api
   df_add, df_matmul, df_variable and the other typed helpers of dataflow.h: each builds one
   node with df_op_new .. df_op_finish, so a failure is recorded on the graph like any other.
   ========================================================================================== */
DF_PRIVATE df_output df__out(df_node *n, int i) { df_output o = {n, n ? i : 0}; return o; }
DF_PRIVATE df_output df__op1(df_graph *g, const char *op, df_output a) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, a);
    return df__out(df_op_finish(b), 0);
}
DF_PRIVATE df_output df__op2(df_graph *g, const char *op, df_output a, df_output c) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, a);
    df_op_add_input(b, c);
    return df__out(df_op_finish(b), 0);
}
df_output df_const(df_graph *g, df_tensor *value) {
    if (g && !g->status.code && !value) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_const: value is NULL");
        return df__out(NULL, 0);
    }
    df_op_builder *b = df_op_new(g, "Const", NULL);
    if (b) { df_op_set_attr_tensor(b, "value", value); df_op_set_attr_type(b, "dtype", value->dtype); }
    return df__out(df_op_finish(b), 0);
}
static df_output df__scalar_const(df_graph *g, df_tensor *t) {
    if (!t) { if (g) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory making a constant"); return df__out(NULL, 0); }
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
df_output df_scalar_f32(df_graph *g, float v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_f32(v)) : df__out(NULL, 0); }
df_output df_scalar_f64(df_graph *g, double v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_f64(v)) : df__out(NULL, 0); }
df_output df_scalar_i32(df_graph *g, int32_t v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_i32(v)) : df__out(NULL, 0); }
df_output df_scalar_i64(df_graph *g, int64_t v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_i64(v)) : df__out(NULL, 0); }
df_output df_scalar_bool(df_graph *g, int v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_bool(v)) : df__out(NULL, 0); }
static df_output df__vector_i64(df_graph *g, int n, const int64_t *v) {
    if (!g || g->status.code) return df__out(NULL, 0);
    int64_t dim = n;
    df_status st;
    df_tensor *t = df_tensor_from_data(DF_INT64, 1, &dim, v, (size_t)n * 8, &st);
    if (!t) { df__graph_error(g, st.code, "%s", st.message); return df__out(NULL, 0); }
    return df__scalar_const(g, t);
}
DF_PRIVATE df_output df__vector_i32(df_graph *g, int n, const int32_t *v) {
    if (!g || g->status.code) return df__out(NULL, 0);
    int64_t dim = n;
    df_status st;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, &dim, v, (size_t)n * 4, &st);
    if (!t) { df__graph_error(g, st.code, "%s", st.message); return df__out(NULL, 0); }
    return df__scalar_const(g, t);
}
df_output df_placeholder(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "Placeholder", name);
    df_op_set_attr_type(b, "dtype", t);
    if (rank != -1) df_op_set_attr_shape(b, "shape", rank, dims);   /* -1: unknown rank */
    return df__out(df_op_finish(b), 0);
}
df_output df_identity(df_graph *g, df_output x) { return df__op1(g, "Identity", x); }
df_output df_add(df_graph *g, df_output a, df_output b) { return df__op2(g, "AddV2", a, b); }
df_output df_sub(df_graph *g, df_output a, df_output b) { return df__op2(g, "Sub", a, b); }
df_output df_mul(df_graph *g, df_output a, df_output b) { return df__op2(g, "Mul", a, b); }
df_output df_div(df_graph *g, df_output a, df_output b) { return df__op2(g, "RealDiv", a, b); }
df_output df_maximum(df_graph *g, df_output a, df_output b) { return df__op2(g, "Maximum", a, b); }
df_output df_minimum(df_graph *g, df_output a, df_output b) { return df__op2(g, "Minimum", a, b); }
df_output df_floor_mod_i(df_graph *g, df_output a, df_output b) { return df__op2(g, "FloorMod", a, b); }
df_output df_neg(df_graph *g, df_output x) { return df__op1(g, "Neg", x); }
df_output df_square(df_graph *g, df_output x) { return df__op1(g, "Square", x); }
df_output df_exp(df_graph *g, df_output x) { return df__op1(g, "Exp", x); }
df_output df_log(df_graph *g, df_output x) { return df__op1(g, "Log", x); }
df_output df_tanh(df_graph *g, df_output x) { return df__op1(g, "Tanh", x); }
df_output df_sigmoid(df_graph *g, df_output x) { return df__op1(g, "Sigmoid", x); }
df_output df_relu(df_graph *g, df_output x) { return df__op1(g, "Relu", x); }
df_output df_less(df_graph *g, df_output a, df_output b) { return df__op2(g, "Less", a, b); }
df_output df_less_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "LessEqual", a, b); }
df_output df_greater(df_graph *g, df_output a, df_output b) { return df__op2(g, "Greater", a, b); }
df_output df_greater_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "GreaterEqual", a, b); }
df_output df_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "Equal", a, b); }
df_output df_not_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "NotEqual", a, b); }
df_output df_logical_and(df_graph *g, df_output a, df_output b) { return df__op2(g, "LogicalAnd", a, b); }
df_output df_logical_or(df_graph *g, df_output a, df_output b) { return df__op2(g, "LogicalOr", a, b); }
df_output df_logical_not(df_graph *g, df_output x) { return df__op1(g, "LogicalNot", x); }
df_output df_shape(df_graph *g, df_output x) { return df__op1(g, "Shape", x); }
df_output df_stop_gradient(df_graph *g, df_output x) { return df__op1(g, "StopGradient", x); }
df_output df_select(df_graph *g, df_output cond, df_output a, df_output b) {
    df_op_builder *bl = df_op_new(g, "SelectV2", NULL);
    df_op_add_input(bl, cond);
    df_op_add_input(bl, a);
    df_op_add_input(bl, b);
    return df__out(df_op_finish(bl), 0);
}
df_output df_cast(df_graph *g, df_output x, df_dtype to) {
    df_op_builder *b = df_op_new(g, "Cast", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "DstT", to);
    return df__out(df_op_finish(b), 0);
}
df_output df_matmul(df_graph *g, df_output a, df_output b, int transpose_a, int transpose_b) {
    df_op_builder *bl = df_op_new(g, "MatMul", NULL);
    df_op_add_input(bl, a);
    df_op_add_input(bl, b);
    df_op_set_attr_bool(bl, "transpose_a", transpose_a);
    df_op_set_attr_bool(bl, "transpose_b", transpose_b);
    return df__out(df_op_finish(bl), 0);
}
df_output df_reshape(df_graph *g, df_output x, int rank, const int64_t *dims) {
    if (g && !g->status.code && (rank < 0 || rank > DF_MAX_RANK || (rank > 0 && !dims))) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_reshape: bad rank %d or NULL dims", rank);
        return df__out(NULL, 0);
    }
    return df__op2(g, "Reshape", x, df__vector_i64(g, rank, dims));
}
df_output df_add_n(df_graph *g, const df_output *xs, int n) {
    df_op_builder *b = df_op_new(g, "AddN", NULL);
    df_op_add_input_list(b, xs, n);
    return df__out(df_op_finish(b), 0);
}
/* The axes tensor of a reduction: the given axes, or every axis (Range(0, Rank(x)) if unknown). */
static df_output df__axes(df_graph *g, df_output x, int n_axes, const int32_t *axes) {
    if (!g || g->status.code) return df__out(NULL, 0);
    if (n_axes < 0 || (n_axes > 0 && !axes)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "reduction: bad axes (n_axes %d)", n_axes);
        return df__out(NULL, 0);
    }
    if (n_axes > 0) return df__vector_i32(g, n_axes, axes);
    int rank = df__output_valid(x) ? x.node->out_shapes[x.index].rank : -1;
    if (rank >= 0) {
        int32_t all[DF_MAX_RANK];
        for (int i = 0; i < rank; i++) all[i] = i;
        return df__vector_i32(g, rank, all);
    }
    df_op_builder *b = df_op_new(g, "Range", NULL);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_op_add_input(b, df__op1(g, "Rank", x));
    df_op_add_input(b, df_scalar_i32(g, 1));
    return df__out(df_op_finish(b), 0);
}
static df_output df__reduce(df_graph *g, const char *op, df_output x, int n_axes, const int32_t *axes, int keep) {
    df_output ax = df__axes(g, x, n_axes, axes);
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, ax);
    df_op_set_attr_bool(b, "keep_dims", keep);
    return df__out(df_op_finish(b), 0);
}
df_output df_reduce_sum(df_graph *g, df_output x, int n_axes, const int32_t *axes, int keep_dims) {
    return df__reduce(g, "Sum", x, n_axes, axes, keep_dims);
}
df_output df_reduce_mean(df_graph *g, df_output x, int n_axes, const int32_t *axes, int keep_dims) {
    return df__reduce(g, "Mean", x, n_axes, axes, keep_dims);
}
df_output df_softmax(df_graph *g, df_output logits) { return df__op1(g, "Softmax", logits); }
df_output df_sparse_softmax_cross_entropy(df_graph *g, df_output logits, df_output labels) {
    df_op_builder *b = df_op_new(g, "SparseSoftmaxCrossEntropyWithLogits", NULL);
    df_op_add_input(b, logits);
    df_op_add_input(b, labels);
    df_output loss = df__out(df_op_finish(b), 0);
    int32_t axis0 = 0;
    return df_reduce_mean(g, loss, 1, &axis0, 0);
}
df_output df_variable(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "VariableV2", name);
    df_op_set_attr_type(b, "dtype", t);
    df_op_set_attr_shape(b, "shape", rank, dims);
    return df__out(df_op_finish(b), 0);
}
static df_node *df__assign_op(df_graph *g, const char *op, df_output var, df_output value) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, var);
    df_op_add_input(b, value);
    return df_op_finish(b);
}
df_node *df_assign(df_graph *g, df_output var, df_output value) { return df__assign_op(g, "Assign", var, value); }
df_node *df_assign_add(df_graph *g, df_output var, df_output value) { return df__assign_op(g, "AssignAdd", var, value); }
df_node *df_assign_sub(df_graph *g, df_output var, df_output value) { return df__assign_op(g, "AssignSub", var, value); }
df_node *df_no_op(df_graph *g, df_node *const *deps, int n) {
    if (g && !g->status.code && (n < 0 || (n > 0 && !deps))) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_no_op: bad dependency list (n=%d)", n);
        return NULL;
    }
    df_op_builder *b = df_op_new(g, "NoOp", NULL);
    for (int i = 0; b && i < n; i++) df_op_add_control_input(b, deps[i]);
    return df_op_finish(b);
}
