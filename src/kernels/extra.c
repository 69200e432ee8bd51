/* ==========================================================================================
   src/kernels/extra.c: CPU kernels: Split, SplitV, DynamicStitch, Sin, Cos           >>extra
   Ops TensorFlow's RNN, TensorArray and tf.function graphs use beside the control flow:
   Split/SplitV (equal or given sizes along one axis; SplitV infers one -1 size), DynamicStitch
   and ParallelDynamicStitch (rows of the data inputs to the places their indices name; a later
   input wins a duplicated index; rows no index names are zeros), Sin and Cos. Their gradient
   functions (here, listed in src/autodiff/grad_ops.c's table) follow TensorFlow's.
   ========================================================================================== */

/* ---- Split, SplitV ---- */
/* The axis from a split_dim tensor, normalised into [0, rank); -1 and a status if out of range. */
static int df__split_axis(const df_node *n, const df_tensor *t, int rank, df_status *st) {
    if (!df__is_int_tensor(t) || t->n != 1) { df__fail(st, n, DF_INVALID_ARGUMENT, "split_dim must be a scalar integer"); return -1; }
    int64_t ax = df__int_at(t, 0);
    if (ax < -rank || ax >= rank) {
        df__fail(st, n, DF_INVALID_ARGUMENT, "-input rank(-%d) <= split_dim < input rank (%d), but got %lld", rank, rank, (long long)ax);
        return -1;
    }
    return (int)(ax < 0 ? ax + rank : ax);
}
/* SplitV's sizes: size_splits with its one -1 filled in from `total` (-1 unknown: left as -1).
   Returns 0 and a status on a bad list. */
static int df__splitv_sizes(const df_node *n, const df_tensor *sizes, int num, int64_t total, int64_t *out, df_status *st) {
    if (!df__is_int_tensor(sizes) || sizes->rank != 1 || sizes->n != num) {
        df__fail(st, n, DF_INVALID_ARGUMENT, "size_splits must be a 1-D integer tensor of num_split (%d) elements", num);
        return 0;
    }
    int64_t known = 0;
    int neg = -1;
    for (int i = 0; i < num; i++) {
        out[i] = df__int_at(sizes, i);
        if (out[i] == -1) {
            if (neg >= 0) { df__fail(st, n, DF_INVALID_ARGUMENT, "There can only be one -1 in the input."); return 0; }
            neg = i;
        } else if (out[i] < 0) {
            df__fail(st, n, DF_INVALID_ARGUMENT, "Split size at index %d must be >= 0. Got: %lld", i, (long long)out[i]);
            return 0;
        } else known += out[i];
    }
    if (total < 0) return 1;
    if ((neg < 0 && known != total) || (neg >= 0 && known > total)) {
        df__fail(st, n, DF_INVALID_ARGUMENT, "Determined shape must either match input shape along split_dim exactly if "
                 "fully specified, or be less than the size of the input along split_dim if not fully specified.  "
                 "Got: %lld", (long long)known);
        return 0;
    }
    if (neg >= 0) out[neg] = total - known;
    return 1;
}
/* Inputs of Split: (split_dim, value); of SplitV: (value, size_splits, split_dim). */
static int df__is_splitv(const df_node *n) { return !strcmp(n->op->name, "SplitV"); }

DF_PRIVATE df_code df__sf_split(df__shape_ctx *c) {
    int v = df__is_splitv(c->node), num = c->node->n_outputs;
    const df__shape *s = &c->in_shapes[v ? 0 : 1];
    const df_tensor *axis_t = df__sc_const(c, v ? 2 : 0);
    for (int i = 0; i < num; i++) *df__sc_out(c, i) = df__shape_unknown();
    if (s->rank < 0) return DF_OK;
    if (s->rank == 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Can't split a scalar (rank 0)");
    if (!axis_t) {               /* the axis unknown: only the rank is */
        for (int i = 0; i < num; i++) {
            df__shape *o = df__sc_out(c, i);
            o->rank = s->rank;
            for (int d = 0; d < s->rank; d++) o->dims[d] = -1;
        }
        return DF_OK;
    }
    int ax = df__split_axis(c->node, axis_t, s->rank, c->st);
    if (ax < 0) return c->st->code;
    int64_t total = s->dims[ax];
    int64_t *sizes = (int64_t *)DF_MALLOC((size_t)DF__MAX(num, 1) * sizeof(int64_t));
    if (!sizes) return df__fail(c->st, c->node, DF_RESOURCE_EXHAUSTED, "Out of memory");
    if (v) {
        const df_tensor *st_ = df__sc_const(c, 1);
        if (!st_) for (int i = 0; i < num; i++) sizes[i] = -1;
        else if (!df__splitv_sizes(c->node, st_, num, total, sizes, c->st)) { DF_FREE(sizes); return c->st->code; }
    } else {
        if (total >= 0 && total % num) {
            DF_FREE(sizes);
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Number of ways to split should evenly divide the split "
                            "dimension, but got split_dim %d (size = %lld) and num_split %d", ax, (long long)total, num);
        }
        for (int i = 0; i < num; i++) sizes[i] = total < 0 ? -1 : total / num;
    }
    for (int i = 0; i < num; i++) {
        df__shape *o = df__sc_out(c, i);
        *o = *s;
        o->dims[ax] = sizes[i];
    }
    DF_FREE(sizes);
    return DF_OK;
}
DF_PRIVATE void df__k_split(df__kctx *c) {
    int v = df__is_splitv(c->node), num = c->n_out;
    const df_tensor *x = c->in[v ? 0 : 1];
    if (x->rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Can't split a scalar (rank 0)"); return; }
    int ax = df__split_axis(c->node, c->in[v ? 2 : 0], x->rank, c->st);
    if (ax < 0) return;
    int64_t total = x->dims[ax];
    int64_t *sizes = (int64_t *)DF_MALLOC((size_t)DF__MAX(num, 1) * sizeof(int64_t));
    if (!sizes) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    if (v) {
        if (!df__splitv_sizes(c->node, c->in[1], num, total, sizes, c->st)) { DF_FREE(sizes); return; }
    } else {
        if (total % num) {
            DF_FREE(sizes);
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Number of ways to split should evenly divide the split dimension, but got "
                      "split_dim %d (size = %lld) and num_split %d", ax, (long long)total, num);
            return;
        }
        for (int i = 0; i < num; i++) sizes[i] = total / num;
    }
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) outer *= x->dims[d];
    for (int d = ax + 1; d < x->rank; d++) inner *= x->dims[d];
    size_t es = df_dtype_size(x->dtype), row = (size_t)(total * inner) * es;
    int64_t start = 0;
    for (int i = 0; i < num; i++) {
        int64_t dims[DF_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        dims[ax] = sizes[i];
        df_tensor *o = df__k_alloc(c, i, x->dtype, x->rank, dims);
        if (!o) break;
        size_t chunk = (size_t)(sizes[i] * inner) * es;
        for (int64_t q = 0; q < outer && chunk; q++)
            memcpy((char *)o->data + (size_t)q * chunk, (const char *)x->data + (size_t)q * row + (size_t)(start * inner) * es, chunk);
        start += sizes[i];
    }
    DF_FREE(sizes);
}

/* ---- DynamicStitch, ParallelDynamicStitch: inputs (indices[N], data[N]) ---- */
DF_PRIVATE df_code df__sf_dynamic_stitch(df__shape_ctx *c) {
    int n = c->node->n_inputs / 2;
    df__shape *o = df__sc_out(c, 0);
    *o = df__shape_unknown();
    int64_t rows = -1;               /* max index + 1 when every indices input is constant */
    int all_const = 1;
    for (int i = 0; i < n; i++) {
        const df_tensor *ix = df__sc_const(c, i);
        if (!ix) { all_const = 0; continue; }
        for (int64_t k = 0; k < ix->n; k++) rows = DF__MAX(rows, df__int_at(ix, k));
    }
    /* the output is [rows] + data[i].shape[indices[i].rank:] for any i with known ranks */
    for (int i = 0; i < n; i++) {
        const df__shape *si = &c->in_shapes[i], *sd = &c->in_shapes[n + i];
        if (si->rank < 0 || sd->rank < 0) continue;
        if (sd->rank < si->rank)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "data[%d] has rank %d, less than the rank %d of indices[%d]",
                            i, sd->rank, si->rank, i);
        if (sd->rank - si->rank + 1 > DF_MAX_RANK) return DF_OK;
        o->rank = sd->rank - si->rank + 1;
        o->dims[0] = all_const ? rows + 1 : -1;
        for (int d = si->rank; d < sd->rank; d++) o->dims[d - si->rank + 1] = sd->dims[d];
        break;
    }
    return DF_OK;
}
DF_PRIVATE void df__k_dynamic_stitch(df__kctx *c) {
    int n = c->n_in / 2;
    const df_tensor *d0 = c->in[n], *i0 = c->in[0];
    int64_t max_index = -1;
    if (d0->rank < i0->rank) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "data[0] has rank %d, less than the rank %d of indices[0]", d0->rank, i0->rank);
        return;
    }
    for (int i = 0; i < n; i++) {
        const df_tensor *ix = c->in[i], *d = c->in[n + i];
        if (!df__is_int_tensor(ix)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices[%d] must be int32", i); return; }
        if (d->dtype != d0->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "data[%d] has type %s, data[0] %s", i, df_dtype_name(d->dtype), df_dtype_name(d0->dtype)); return; }
        /* data[i].shape must be indices[i].shape + data[0].shape[indices[0].rank:] */
        int ok = d->rank == ix->rank + d0->rank - i0->rank;
        for (int k = 0; ok && k < ix->rank; k++) ok = d->dims[k] == ix->dims[k];
        for (int k = 0; ok && k < d0->rank - i0->rank; k++) ok = d->dims[ix->rank + k] == d0->dims[i0->rank + k];
        if (!ok) {
            char a[96], b[96], e[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "data[%d].shape = %s does not start with indices[%d].shape = %s (and end "
                      "with data[0]'s trailing shape %s)", i, df__dims_str(d->rank, d->dims, a, sizeof a), i,
                      df__dims_str(ix->rank, ix->dims, b, sizeof b),
                      df__dims_str(d0->rank - i0->rank, d0->dims + i0->rank, e, sizeof e));
            return;
        }
        for (int64_t k = 0; k < ix->n; k++) max_index = DF__MAX(max_index, df__int_at(ix, k));
    }
    int rank = d0->rank - i0->rank + 1;
    if (rank > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "merged rank %d exceeds %d", rank, DF_MAX_RANK); return; }
    int64_t dims[DF_MAX_RANK], inner = 1;
    dims[0] = max_index + 1;
    for (int d = 1; d < rank; d++) { dims[d] = d0->dims[i0->rank + d - 1]; inner *= dims[d]; }
    df_tensor *o = df__k_alloc(c, 0, d0->dtype, rank, dims);
    if (!o) return;
    size_t es = df_dtype_size(d0->dtype), row = (size_t)inner * es;
    if (o->nbytes) memset(o->data, 0, o->nbytes);
    for (int i = 0; i < n; i++) {
        const df_tensor *ix = c->in[i], *d = c->in[n + i];
        for (int64_t k = 0; k < ix->n; k++) {
            int64_t r = df__int_at(ix, k);
            if (r < 0 || r > max_index) {
                DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices[%lld] is out of range (input %d's index %lld is not in [0, %lld))",
                          (long long)k, i, (long long)r, (long long)(max_index + 1));
                return;
            }
            if (row) memcpy((char *)o->data + (size_t)r * row, (const char *)d->data + (size_t)k * row, row);
        }
    }
}

/* ---- Sin, Cos ---- */
DF_PRIVATE void df__k_trig(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int cosine = c->node->op->code;
    df_tensor *y = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (!y) return;
    if (x->dtype == DF_FLOAT) {
        const float *a = (const float *)x->data;
        float *o = (float *)y->data;
        for (int64_t i = 0; i < x->n; i++) o[i] = cosine ? cosf(a[i]) : sinf(a[i]);
    } else if (x->dtype == DF_DOUBLE) {
        const double *a = (const double *)x->data;
        double *o = (double *)y->data;
        for (int64_t i = 0; i < x->n; i++) o[i] = cosine ? cos(a[i]) : sin(a[i]);
    } else DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: no kernel for %s", c->node->op->name, df_dtype_name(x->dtype));
}

/* ---- gradients (TensorFlow's array_grad.py, data_flow_grad.py and math_grad.py) ---- */
/* Split, SplitV: the output gradients (zeros where none) concatenated along the axis. */
DF_PRIVATE void df__g_split(df__gfn *c) {
    df_graph *g = c->g;
    int v = df__is_splitv(c->n), n = c->n->n_outputs;
    if (n < 1) return;
    df_output *parts = (df_output *)DF_MALLOC((size_t)n * sizeof(df_output));
    if (!parts) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int i = 0; i < n; i++) parts[i] = c->dy[i].node ? c->dy[i] : df__zeros_like(g, df__out(c->n, i));
    df_output grad = n == 1 ? parts[0] : df__out(NULL, 0);
    if (n > 1) {
        df_op_builder *b = df_op_new(g, "ConcatV2", NULL);
        df_op_add_input_list(b, parts, n);
        df_op_add_input(b, c->n->inputs[v ? 2 : 0]);
        grad = df__out(df_op_finish(b), 0);
    }
    c->dx[v ? 0 : 1] = grad;
    DF_FREE(parts);
}
/* DynamicStitch: data[i]'s gradient is the rows of the output gradient its indices name. */
DF_PRIVATE void df__g_dynamic_stitch(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_inputs / 2;
    for (int i = 0; i < n; i++) {
        df_output ix = c->n->inputs[i];
        if (df_output_dtype(ix) != DF_INT32) ix = df_cast(g, ix, DF_INT32);
        df_op_builder *b = df_op_new(g, "GatherV2", NULL);
        df_op_add_input(b, c->dy[0]);
        df_op_add_input(b, ix);
        df_op_add_input(b, df_scalar_i32(g, 0));
        c->dx[n + i] = df__out(df_op_finish(b), 0);
    }
}
/* Sin: dy * cos(x); Cos: -dy * sin(x). */
DF_PRIVATE void df__g_trig(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = c->n->inputs[0];
    if (!strcmp(c->n->op->name, "Sin")) c->dx[0] = df_mul(g, c->dy[0], df__op1(g, "Cos", x));
    else c->dx[0] = df_mul(g, df_neg(g, c->dy[0]), df__op1(g, "Sin", x));
}
