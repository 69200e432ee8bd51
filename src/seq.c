/* ==========================================================================================
   src/seq.c: Tensor arrays and loops over sequences                                    >>seq
   The C user's side of TensorFlow's TensorArray and of its map_fn, scan, foldl and foldr:
   typed builders of the TensorArrayV3 ops (src/kernels/tensor_array.c runs them), and loops
   built with df_while_loop that read their elements from a tensor array (unstacked once
   before the loop, as TensorFlow does) and write what they make into others, stacked after.
   Everything here is graph building: ordinary nodes, so df_gradients goes through them.
   ========================================================================================== */
static df_tensor_array df__ta_none(void) {
    df_tensor_array t;
    memset(&t, 0, sizeof t);
    return t;
}

df_tensor_array df_tensor_array_new(df_graph *g, df_dtype t, df_output size, int dynamic_size,
                                    int element_rank, const int64_t *element_dims) {
    if (!g || g->status.code) return df__ta_none();
    if (element_rank < -1 || element_rank > DF_MAX_RANK || (element_rank > 0 && !element_dims)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_tensor_array_new: bad element rank %d or NULL dims", element_rank);
        return df__ta_none();
    }
    df_op_builder *b = df_op_new(g, "TensorArrayV3", NULL);
    df_op_add_input(b, size);
    df_op_set_attr_type(b, "dtype", t);
    df_op_set_attr_bool(b, "dynamic_size", dynamic_size != 0);
    df_op_set_attr_bool(b, "clear_after_read", 0);
    df_op_set_attr_bool(b, "identical_element_shapes", element_rank >= 0);
    df_op_set_attr_shape(b, "element_shape", element_rank, element_dims);
    df_node *n = df_op_finish(b);
    if (!n) return df__ta_none();
    df_tensor_array a = {df__out(n, 0), df__out(n, 1), t};
    return a;
}

df_tensor_array df_tensor_array_at_flow(df_tensor_array ta, df_output flow) {
    ta.flow = flow;
    return ta;
}

/* Write or Scatter (handle, where, value, flow_in) -> flow_out: the array with its new flow. */
static df_tensor_array df__seq_ta_put(df_graph *g, const char *op, df_tensor_array ta, df_output where, df_output value) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, ta.handle);
    df_op_add_input(b, where);
    df_op_add_input(b, value);
    df_op_add_input(b, ta.flow);
    df_node *n = df_op_finish(b);
    if (!n) return df__ta_none();
    ta.flow = df__out(n, 0);
    return ta;
}
df_tensor_array df_tensor_array_write(df_graph *g, df_tensor_array ta, df_output index, df_output value) {
    return df__seq_ta_put(g, "TensorArrayWriteV3", ta, index, value);
}

df_output df_tensor_array_read(df_graph *g, df_tensor_array ta, df_output index) {
    df_op_builder *b = df_op_new(g, "TensorArrayReadV3", NULL);
    df_op_add_input(b, ta.handle);
    df_op_add_input(b, index);
    df_op_add_input(b, ta.flow);
    df_op_set_attr_type(b, "dtype", ta.dtype);
    return df__out(df_op_finish(b), 0);
}

df_output df_tensor_array_size(df_graph *g, df_tensor_array ta) {
    return df__op2(g, "TensorArraySizeV3", ta.handle, ta.flow);
}

/* 0 .. n-1 as an int32 vector. */
static df_output df__seq_range(df_graph *g, df_output n) {
    df_op_builder *b = df_op_new(g, "Range", NULL);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_op_add_input(b, n);
    df_op_add_input(b, df_scalar_i32(g, 1));
    return df__out(df_op_finish(b), 0);
}

/* Stack, telling the gather the elements' static shape when the caller knows it (rank >= 0). */
static df_output df__ta_stack_shaped(df_graph *g, df_tensor_array ta, int rank, const int64_t *dims) {
    df_output idx = df__seq_range(g, df_tensor_array_size(g, ta));
    df_op_builder *b = df_op_new(g, "TensorArrayGatherV3", NULL);
    df_op_add_input(b, ta.handle);
    df_op_add_input(b, idx);
    df_op_add_input(b, ta.flow);
    df_op_set_attr_type(b, "dtype", ta.dtype);
    if (rank >= 0) df_op_set_attr_shape(b, "element_shape", rank, dims);
    return df__out(df_op_finish(b), 0);
}
/* As TensorFlow's TensorArray.stack, the gather is told the element shape the array was made
   with (when its handle comes straight from TensorArrayV3), so an empty array of a known
   element shape stacks to [0, ...] instead of failing. */
df_output df_tensor_array_stack(df_graph *g, df_tensor_array ta) {
    const df__attr *a = df__output_valid(ta.handle) && !strcmp(ta.handle.node->op->name, "TensorArrayV3")
                            ? df__attr_find_kind(ta.handle.node, "element_shape", DF__A_SHAPE) : NULL;
    if (a && a->u.shape.rank >= 0) return df__ta_stack_shaped(g, ta, a->u.shape.rank, a->u.shape.dims);
    return df__ta_stack_shaped(g, ta, -1, NULL);
}

/* The first dimension of x as an int32 scalar: a constant when the static shape knows it. */
static df_output df__seq_len(df_graph *g, df_output x) {
    int64_t d[DF_MAX_RANK];
    int r = df__output_valid(x) ? df_output_shape(x, d) : -1;
    if (r >= 1 && d[0] >= 0 && d[0] <= INT32_MAX) return df_scalar_i32(g, (int32_t)d[0]);
    int32_t zero = 0, one = 1;
    df_op_builder *b = df_op_new(g, "StridedSlice", NULL);
    df_op_add_input(b, df_shape(g, x));
    df_op_add_input(b, df__vector_i32(g, 1, &zero));
    df_op_add_input(b, df__vector_i32(g, 1, &one));
    df_op_add_input(b, df__vector_i32(g, 1, &one));
    df_op_set_attr_int(b, "shrink_axis_mask", 1);
    return df__out(df_op_finish(b), 0);
}

df_tensor_array df_tensor_array_unstack(df_graph *g, df_tensor_array ta, df_output value) {
    return df__seq_ta_put(g, "TensorArrayScatterV3", ta, df__seq_range(g, df__seq_len(g, value)), value);
}

/* ---- map_fn, scan, foldl, foldr: one loop over i with the accumulators and output flows ---- */
enum { DF__SEQ_MAP, DF__SEQ_SCAN, DF__SEQ_FOLDL, DF__SEQ_FOLDR };
typedef struct df__seq {
    int kind, n_acc, n_out;      /* n_out: output arrays written each iteration */
    df_output n;                 /* the number of elements */
    df_tensor_array in;          /* elems, unstacked */
    df_tensor_array *out;        /* n_out arrays (their flows are loop variables) */
    int out_rank[8];             /* the static shapes of what the body writes into them */
    int64_t out_dims[8][DF_MAX_RANK];
    df_elem_fn map_fn;
    df_scan_fn scan_fn;
    void *user;
} df__seq;

/* Loop variables: i, then the n_acc accumulators, then the n_out output flows. */
static df_output df__seq_cond(df_graph *g, void *user, const df_output *vars) {
    df__seq *q = (df__seq *)user;
    return df_less(g, vars[0], q->n);
}

static void df__seq_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    df__seq *q = (df__seq *)user;
    df_output i = vars[0];
    df_output at = q->kind == DF__SEQ_FOLDR ? df_sub(g, df_sub(g, q->n, df_scalar_i32(g, 1)), i) : i;
    df_output elem = df_tensor_array_read(g, q->in, at);
    df_output made[DF_MAX_RANK > 8 ? DF_MAX_RANK : 8];
    df_output *acc_next = next + 1;
    if (q->kind == DF__SEQ_MAP) {
        made[0] = q->map_fn(g, q->user, elem);
    } else {
        for (int k = 0; k < q->n_acc; k++) acc_next[k] = df__out(NULL, 0);
        q->scan_fn(g, q->user, vars + 1, elem, acc_next);
        for (int k = 0; k < q->n_acc; k++) made[k] = acc_next[k];
    }
    for (int k = 0; k < q->n_out; k++) {
        df_tensor_array o = df_tensor_array_at_flow(q->out[k], vars[1 + q->n_acc + k]);
        next[1 + q->n_acc + k] = df_tensor_array_write(g, o, at, made[k]).flow;
        q->out_rank[k] = df__output_valid(made[k]) ? df_output_shape(made[k], q->out_dims[k]) : -1;
    }
    next[0] = df_add(g, i, df_scalar_i32(g, 1));
}

/* Checks, names the construct and runs it; outs get the stacked outputs (map, scan) or the
   final accumulators (folds). */
static df_code df__seq_run(df_graph *g, df__seq *q, const df_output *init, df_output elems, df_dtype out_type,
                           const df_while_options *opts, const char *name, df_output *outs) {
    int n_res = q->kind == DF__SEQ_MAP ? 1 : q->n_acc;
    for (int k = 0; outs && k < n_res; k++) outs[k] = df__out(NULL, 0);
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (!outs || (q->kind == DF__SEQ_MAP ? !q->map_fn : !q->scan_fn) || !df__output_valid(elems) ||
        (q->kind != DF__SEQ_MAP && (q->n_acc < 1 || q->n_acc > 8 || !init)))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: bad arguments (NULL callback, outs or elems, or "
                               "an accumulator count outside 1 .. 8)", name);
    for (int k = 0; q->kind != DF__SEQ_MAP && k < q->n_acc; k++)
        if (!df__output_valid(init[k])) return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: init[%d] is not an output", name, k);
    int64_t d[DF_MAX_RANK];
    int r = df_output_shape(elems, d);
    if (r == 0) return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: elems is a scalar; it needs a first axis to run over", name);
    df_while_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if (!o.name) o.name = name;
    df_graph_push_name_scope(g, o.name);
    q->n = df__seq_len(g, elems);
    q->in = df_tensor_array_new(g, df_output_dtype(elems), q->n, 0, r > 0 ? r - 1 : -1, d + 1);
    q->in = df_tensor_array_unstack(g, q->in, elems);
    q->n_out = q->kind == DF__SEQ_MAP ? 1 : q->kind == DF__SEQ_SCAN ? q->n_acc : 0;
    df_tensor_array out_arr[8];
    q->out = out_arr;
    for (int k = 0; k < q->n_out; k++) {
        df_output src = q->kind == DF__SEQ_MAP ? df__out(NULL, 0) : init[k];
        int64_t ed[DF_MAX_RANK];
        int er = q->kind == DF__SEQ_MAP ? -1 : df_output_shape(src, ed);
        out_arr[k] = df_tensor_array_new(g, q->kind == DF__SEQ_MAP ? out_type : df_output_dtype(src), q->n, 0, er, ed);
    }
    int n_vars = 1 + q->n_acc + q->n_out;
    df_output vinit[1 + 8 + 8], vout[1 + 8 + 8];
    vinit[0] = df_scalar_i32(g, 0);
    for (int k = 0; k < q->n_acc; k++) vinit[1 + k] = init[k];
    for (int k = 0; k < q->n_out; k++) vinit[1 + q->n_acc + k] = out_arr[k].flow;
    df_graph_pop_name_scope(g);
    df_code code = df_while_loop(g, n_vars, vinit, df__seq_cond, df__seq_body, q, &o, vout);
    if (code) return code;
    df_graph_push_name_scope(g, o.name);
    if (q->kind == DF__SEQ_MAP || q->kind == DF__SEQ_SCAN) {
        for (int k = 0; k < q->n_out; k++)
            outs[k] = df__ta_stack_shaped(g, df_tensor_array_at_flow(out_arr[k], vout[1 + q->n_acc + k]),
                                          q->out_rank[k], q->out_dims[k]);
    } else {
        for (int k = 0; k < q->n_acc; k++) outs[k] = df_identity(g, vout[1 + k]);
    }
    df_graph_pop_name_scope(g);
    if (g->status.code) {
        for (int k = 0; k < n_res; k++) outs[k] = df__out(NULL, 0);
        return g->status.code;
    }
    return DF_OK;
}

df_code df_map_fn(df_graph *g, df_output elems, df_dtype out_type, df_elem_fn fn, void *user,
                  const df_while_options *opts, df_output *out) {
    df__seq q;
    memset(&q, 0, sizeof q);
    q.kind = DF__SEQ_MAP;
    q.map_fn = fn;
    q.user = user;
    return df__seq_run(g, &q, NULL, elems, out_type, opts, "map", out);
}

static df_code df__seq_acc(df_graph *g, int kind, int n_acc, const df_output *init, df_output elems, df_scan_fn fn,
                           void *user, const df_while_options *opts, const char *name, df_output *outs) {
    df__seq q;
    memset(&q, 0, sizeof q);
    q.kind = kind;
    q.n_acc = n_acc;
    q.scan_fn = fn;
    q.user = user;
    return df__seq_run(g, &q, init, elems, DF_FLOAT, opts, name, outs);
}
df_code df_scan(df_graph *g, int n_acc, const df_output *init, df_output elems, df_scan_fn fn, void *user,
                const df_while_options *opts, df_output *outs) {
    return df__seq_acc(g, DF__SEQ_SCAN, n_acc, init, elems, fn, user, opts, "scan", outs);
}
df_code df_foldl(df_graph *g, int n_acc, const df_output *init, df_output elems, df_scan_fn fn, void *user,
                 const df_while_options *opts, df_output *outs) {
    return df__seq_acc(g, DF__SEQ_FOLDL, n_acc, init, elems, fn, user, opts, "foldl", outs);
}
df_code df_foldr(df_graph *g, int n_acc, const df_output *init, df_output elems, df_scan_fn fn, void *user,
                 const df_while_options *opts, df_output *outs) {
    return df__seq_acc(g, DF__SEQ_FOLDR, n_acc, init, elems, fn, user, opts, "foldr", outs);
}
