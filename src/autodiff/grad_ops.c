/* ==========================================================================================
   src/autodiff/grad_ops.c: Gradient functions, one per op                          >>gradops
   Each op's gradient function (df__gfn: the node, the summed gradient of each output) builds
   ops that compute the gradient of each input, or leaves it empty where there is none. They
   follow TensorFlow's gradient functions op for op, so graphs and numbers match. Switch and
   Merge are each other's gradients (the cond's duality).
   ========================================================================================== */

#define DF__X(c, i) ((c)->n->inputs[i])
static df_output df__Y(df__gfn *c, int i) { df_output o = {c->n, i}; return o; }
static df_output df__g_i32s(df_graph *g, const int64_t *v, int n) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_INT32, 1, &d, NULL);
    if (!t) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return df__out(NULL, 0); }
    for (int i = 0; i < n; i++) ((int32_t *)t->data)[i] = (int32_t)v[i];
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static int df__static_full(df_output x, df__shape *s) {
    *s = x.node->out_shapes[x.index];
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] < 0) return 0;
    return 1;
}
static df_output df__shape_of_out(df_graph *g, df_output x) {      /* int32 shape, const if static */
    df__shape s;
    if (df__static_full(x, &s)) return df__g_i32s(g, s.dims, s.rank);
    return df_shape(g, x);
}
static df_output df__op_attr_int(df_graph *g, const char *op, const df_output *ins, int n, const char *attr, int64_t v) {
    df_op_builder *b = df_op_new(g, op, NULL);
    if (!strcmp(op, "Pack")) df_op_add_input_list(b, ins, n);
    else for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    if (attr) df_op_set_attr_int(b, attr, v);
    return df__out(df_op_finish(b), 0);
}
static df_output df__reduce_op(df_graph *g, const char *op, df_output x, df_output axes, int keep) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, axes);
    df_op_set_attr_bool(b, "keep_dims", keep);
    return df__out(df_op_finish(b), 0);
}
/* Sums grad down to x's shape (undoing broadcasting). */
DF_PRIVATE df_output df__sum_to(df_graph *g, df_output grad, df_output x) {
    if (!grad.node || !df__ok(g)) return df__out(NULL, 0);
    df__shape sx, sg;
    int fx = df__static_full(x, &sx), fg = df__static_full(grad, &sg);
    if (fx && fg) {
        if (df__shapes_equal(&sx, &sg)) return grad;
        int64_t axes[DF_MAX_RANK];
        int n = 0, lead = sg.rank - sx.rank;
        if (lead < 0) return df_reshape(g, grad, sx.rank, sx.dims);
        for (int d = 0; d < sg.rank; d++)
            if (d < lead || (sx.dims[d - lead] == 1 && sg.dims[d] != 1)) axes[n++] = d;
        df_output r = n ? df__reduce_op(g, "Sum", grad, df__g_i32s(g, axes, n), 0) : grad;
        return df_reshape(g, r, sx.rank, sx.dims);
    }
    df_output shx = df_shape(g, x), shg = df_shape(g, grad);
    df_op_builder *b = df_op_new(g, "BroadcastGradientArgs", NULL);
    df_op_add_input(b, shx);
    df_op_add_input(b, shg);
    df_node *bga = df_op_finish(b);
    if (!bga) return df__out(NULL, 0);
    df_output r = df__reduce_op(g, "Sum", grad, df__out(bga, 0), 0);
    b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, r);
    df_op_add_input(b, shx);
    return df__out(df_op_finish(b), 0);
}
DF_PRIVATE df_output df__zeros_like(df_graph *g, df_output x) {
    if (df_output_dtype(x) == DF_RESOURCE) return df__res_zeros(g, x);   /* a variable's handle: its value's zeros */
    return df__op1(g, "ZerosLike", x);
}
/* A scalar constant of dtype t (integers take v's integer part). */
DF_PRIVATE df_output df__scalar_of(df_graph *g, df_dtype t, double v) {
    df_tensor *k = df_tensor_new(t, 0, NULL, NULL);
    if (!k) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return df__out(NULL, 0); }
    if (df__is_integer_type(t)) df__set_from_i64(t, k->data, 0, (int64_t)v);
    else df__set_from_f64(t, k->data, 0, v);
    df_output o = df_const(g, k);
    df_tensor_release(k);
    return o;
}
static df_output df__scalar_like(df_graph *g, df_output x, double v) { return df__scalar_of(g, df_output_dtype(x), v); }

static void df__g_identity(df__gfn *c) { for (int i = 0; i < c->n->n_inputs && i < c->n->n_outputs; i++) c->dx[i] = c->dy[i]; }
static void df__g_first(df__gfn *c) { c->dx[0] = c->dy[0]; }
static void df__g_add_n(df__gfn *c) { for (int i = 0; i < c->n->n_inputs; i++) c->dx[i] = c->dy[0]; }
static void df__g_add(df__gfn *c) {
    c->dx[0] = df__sum_to(c->g, c->dy[0], DF__X(c, 0));
    c->dx[1] = df__sum_to(c->g, c->dy[0], DF__X(c, 1));
}
static void df__g_sub(df__gfn *c) {
    c->dx[0] = df__sum_to(c->g, c->dy[0], DF__X(c, 0));
    c->dx[1] = df__sum_to(c->g, df_neg(c->g, c->dy[0]), DF__X(c, 1));
}
static void df__g_mul(df__gfn *c) {
    df_graph *g = c->g;
    c->dx[0] = df__sum_to(g, df_mul(g, c->dy[0], DF__X(c, 1)), DF__X(c, 0));
    c->dx[1] = df__sum_to(g, df_mul(g, DF__X(c, 0), c->dy[0]), DF__X(c, 1));
}
/* SumAccumulatorMulAdd's output is x * y (inputs 1 and 2): Mul's gradient (a second-order
   gradient through a loop invariant's sum reaches it). */
static void df__g_accum_mul_add(df__gfn *c) {
    df_graph *g = c->g;
    c->dx[1] = df__sum_to(g, df_mul(g, c->dy[0], DF__X(c, 2)), DF__X(c, 1));
    c->dx[2] = df__sum_to(g, df_mul(g, DF__X(c, 1), c->dy[0]), DF__X(c, 2));
}
static void df__g_div(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1), d = c->dy[0];
    if (!df__is_float(df_output_dtype(x))) return;
    c->dx[0] = df__sum_to(g, df_div(g, d, y), x);
    c->dx[1] = df__sum_to(g, df_mul(g, d, df_div(g, df_div(g, df_neg(g, x), y), y)), y);
}
static void df__g_maxmin(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1), d = c->dy[0];
    df_output mask = strcmp(c->n->op->name, "Maximum") ? df_less_equal(g, x, y) : df_greater_equal(g, x, y);
    df_output z = df__zeros_like(g, d);
    c->dx[0] = df__sum_to(g, df_select(g, mask, d, z), x);
    c->dx[1] = df__sum_to(g, df_select(g, mask, z, d), y);
}
static void df__g_pow(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1), d = c->dy[0], z = df__Y(c, 0);
    if (!df__is_float(df_output_dtype(x))) return;
    df_output ym1 = df_sub(g, y, df__scalar_like(g, y, 1));
    c->dx[0] = df__sum_to(g, df_mul(g, d, df_mul(g, y, df__op2(g, "Pow", x, ym1))), x);
    df_output mask = df_greater(g, x, df__scalar_like(g, x, 0));
    df_output safe = df_select(g, mask, x, df__op1(g, "OnesLike", x));
    df_output logx = df_select(g, mask, df_log(g, safe), df__zeros_like(g, x));
    c->dx[1] = df__sum_to(g, df_mul(g, d, df_mul(g, z, logx)), y);
}
static void df__g_sqdiff(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1);
    df_output t = df_mul(g, df_mul(g, c->dy[0], df__scalar_like(g, c->dy[0], 2)), df_sub(g, x, y));
    c->dx[0] = df__sum_to(g, t, x);
    c->dx[1] = df__sum_to(g, df_neg(g, t), y);
}
static void df__g_floormod(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1);
    if (!df__is_float(df_output_dtype(x))) return;
    c->dx[0] = df__sum_to(g, c->dy[0], x);
    c->dx[1] = df__sum_to(g, df_mul(g, c->dy[0], df_neg(g, df__op2(g, "FloorDiv", x, y))), y);
}
static void df__g_neg(df__gfn *c) { c->dx[0] = df_neg(c->g, c->dy[0]); }
static void df__g_square(df__gfn *c) {
    c->dx[0] = df_mul(c->g, c->dy[0], df_mul(c->g, DF__X(c, 0), df__scalar_like(c->g, DF__X(c, 0), 2)));
}
static void df__g_abs(df__gfn *c) { c->dx[0] = df_mul(c->g, c->dy[0], df__op1(c->g, "Sign", DF__X(c, 0))); }
static void df__g_zero(df__gfn *c) { c->dx[0] = df__zeros_like(c->g, DF__X(c, 0)); }
static void df__g_exp(df__gfn *c) { c->dx[0] = df_mul(c->g, c->dy[0], df__Y(c, 0)); }
static void df__g_log(df__gfn *c) { c->dx[0] = df_mul(c->g, c->dy[0], df__op1(c->g, "Reciprocal", DF__X(c, 0))); }
/* y-based unary gradients through their fused TF ops: (y, dy) or, for Relu, (dy, y). */
static void df__g_fused_y(df__gfn *c) {
    const char *op = c->n->op->name;
    const char *gop = !strcmp(op, "Tanh") ? "TanhGrad" : !strcmp(op, "Sigmoid") ? "SigmoidGrad"
                    : !strcmp(op, "Sqrt") ? "SqrtGrad" : !strcmp(op, "Rsqrt") ? "RsqrtGrad" : "ReciprocalGrad";
    if (!df__is_float(df_output_dtype(DF__X(c, 0)))) return;
    c->dx[0] = df__op2(c->g, gop, df__Y(c, 0), c->dy[0]);
}
static void df__g_relu(df__gfn *c) {
    if (!df__is_float(df_output_dtype(DF__X(c, 0)))) return;
    c->dx[0] = df__op2(c->g, "ReluGrad", c->dy[0], df__Y(c, 0));
}
/* Second order of the fused ops. */
static void df__g_relu_grad(df__gfn *c) {
    c->dx[0] = df__op2(c->g, "ReluGrad", c->dy[0], DF__X(c, 1));
    c->dx[1] = df__zeros_like(c->g, DF__X(c, 1));
}
static void df__g_unary_grad(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    df_output y = DF__X(c, 0), d = DF__X(c, 1), dz = c->dy[0];
    c->dx[1] = df__op2(g, op, y, dz);                       /* each is linear in dy */
    df_output k;
    if (!strcmp(op, "TanhGrad")) k = df_mul(g, df_mul(g, d, y), df__scalar_like(g, y, -2));
    else if (!strcmp(op, "SigmoidGrad")) k = df_mul(g, d, df_sub(g, df__scalar_like(g, y, 1), df_mul(g, y, df__scalar_like(g, y, 2))));
    else if (!strcmp(op, "SqrtGrad")) k = df_neg(g, df_div(g, df__Y(c, 0), y));
    else if (!strcmp(op, "RsqrtGrad")) k = df_mul(g, df_mul(g, d, df_square(g, y)), df__scalar_like(g, y, -1.5));
    else k = df_mul(g, df_mul(g, d, y), df__scalar_like(g, y, -2));      /* ReciprocalGrad */
    c->dx[0] = df_mul(g, dz, k);
}
static void df__g_select(df__gfn *c) {
    df_graph *g = c->g;
    df_output cnd = DF__X(c, 0), d = c->dy[0], z = df__zeros_like(g, d);
    const char *op = c->n->op->name;
    df_output a, b;
    df_output ia[3] = {cnd, d, z}, ib[3] = {cnd, z, d};
    df_op_builder *bb = df_op_new(g, op, NULL);
    for (int i = 0; i < 3; i++) df_op_add_input(bb, ia[i]);
    a = df__out(df_op_finish(bb), 0);
    bb = df_op_new(g, op, NULL);
    for (int i = 0; i < 3; i++) df_op_add_input(bb, ib[i]);
    b = df__out(df_op_finish(bb), 0);
    c->dx[1] = df__sum_to(g, a, DF__X(c, 1));
    c->dx[2] = df__sum_to(g, b, DF__X(c, 2));
}
static void df__g_cast(df__gfn *c) {
    df_dtype src = df_output_dtype(DF__X(c, 0)), dst = df_output_dtype(df__Y(c, 0));
    if (df__is_float(src) && df__is_float(dst)) c->dx[0] = df_cast(c->g, c->dy[0], src);
}
static df_output df__mm(df_graph *g, const char *op, df_output a, df_output b, int ta, int tb) {
    df_op_builder *k = df_op_new(g, op, NULL);
    df_op_add_input(k, a);
    df_op_add_input(k, b);
    int bmm = !strcmp(op, "BatchMatMulV2");
    df_op_set_attr_bool(k, bmm ? "adj_x" : "transpose_a", ta);
    df_op_set_attr_bool(k, bmm ? "adj_y" : "transpose_b", tb);
    return df__out(df_op_finish(k), 0);
}
static void df__g_matmul(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    int bmm = !strcmp(op, "BatchMatMulV2");
    int ta = df__attr_b(c->n, bmm ? "adj_x" : "transpose_a", 0), tb = df__attr_b(c->n, bmm ? "adj_y" : "transpose_b", 0);
    df_output a = DF__X(c, 0), b = DF__X(c, 1), d = c->dy[0], da, db;
    if (!df__is_float(df_output_dtype(a))) return;
    if (!ta && !tb) { da = df__mm(g, op, d, b, 0, 1); db = df__mm(g, op, a, d, 1, 0); }
    else if (ta && !tb) { da = df__mm(g, op, b, d, 0, 1); db = df__mm(g, op, a, d, 0, 0); }
    else if (!ta && tb) { da = df__mm(g, op, d, b, 0, 0); db = df__mm(g, op, d, a, 1, 0); }
    else { da = df__mm(g, op, b, d, 1, 1); db = df__mm(g, op, d, a, 1, 1); }
    c->dx[0] = bmm ? df__sum_to(g, da, a) : da;
    c->dx[1] = bmm ? df__sum_to(g, db, b) : db;
}
static void df__g_bias_add(df__gfn *c) {
    df_graph *g = c->g;
    c->dx[0] = c->dy[0];
    const char *fmt = df__attr_s(c->n, "data_format");
    int rank = DF__X(c, 0).node->out_shapes[DF__X(c, 0).index].rank;
    if (fmt && !strcmp(fmt, "NCHW")) {
        if (rank < 0) { df__graph_error(g, DF_UNIMPLEMENTED, "BiasAdd (NCHW) gradient needs a known rank {{node %s}}", c->n->name); return; }
        int64_t axes[DF_MAX_RANK];
        int n = 0;
        for (int d = 0; d < rank; d++) if (d != 1) axes[n++] = d;
        c->dx[1] = df__reduce_op(g, "Sum", c->dy[0], df__g_i32s(g, axes, n), 0);
    } else {
        c->dx[1] = df__sum_to(g, c->dy[0], DF__X(c, 1));
    }
}
/* The constant reduction axes of a reduction node, normalised and sorted; -1 if unknown. */
static int df__red_axes(df__gfn *c, int rank, int64_t *axes) {
    const df_tensor *t = df__const_value(DF__X(c, 1));
    if (!t || !df__is_int_tensor(t) || rank < 0) return -1;
    int n = 0;
    unsigned char seen[DF_MAX_RANK] = {0};
    for (int64_t i = 0; i < t->n; i++) {
        int64_t a = df__int_at(t, i);
        if (a < 0) a += rank;
        if (a < 0 || a >= rank) return -1;
        seen[a] = 1;
    }
    for (int d = 0; d < rank; d++) if (seen[d]) axes[n++] = d;
    return n;
}
/* grad of a reduction brought back to the kept-dims shape (rank of x, reduced axes 1). */
static df_output df__keep(df__gfn *c, df_output v, int rank, const int64_t *axes, int n) {
    df_graph *g = c->g;
    if (df__attr_b(c->n, "keep_dims", 0)) return v;
    for (int i = 0; i < n; i++) v = df__op2(g, "ExpandDims", v, df_scalar_i32(g, (int32_t)axes[i]));
    DF__UNUSED(rank);
    return v;
}
static void df__g_reduce(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    df_output x = DF__X(c, 0), d = c->dy[0];
    int rank = x.node->out_shapes[x.index].rank;
    int64_t axes[DF_MAX_RANK];
    int n = df__red_axes(c, rank, axes);
    if (n < 0) { df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of %s needs constant reduction axes and a known rank {{node %s}}", op, c->n->name); return; }
    if (!df__is_float(df_output_dtype(x))) return;
    df_output dk = df__keep(c, d, rank, axes, n);
    df_output shx = df__shape_of_out(g, x);
    if (!strcmp(op, "Sum") || !strcmp(op, "Mean")) {
        df_output r = df__op2(g, "BroadcastTo", dk, shx);
        if (!strcmp(op, "Mean")) {
            df_output cnt = df_div(g, df_cast(g, df__op1(g, "Size", x), df_output_dtype(x)),
                                   df_cast(g, df__op1(g, "Size", df__Y(c, 0)), df_output_dtype(x)));
            r = df_div(g, r, cnt);
        }
        c->dx[0] = r;
    } else if (!strcmp(op, "Max") || !strcmp(op, "Min")) {
        df_output yk = df__keep(c, df__Y(c, 0), rank, axes, n);
        df_output ind = df_cast(g, df_equal(g, x, yk), df_output_dtype(x));
        df_output num = df__reduce_op(g, "Sum", ind, df__g_i32s(g, axes, n), 1);
        c->dx[0] = df_mul(g, df_div(g, ind, num), dk);
    } else {                     /* Prod: products of everything else, by exclusive cumprods */
        int64_t perm[DF_MAX_RANK], inv[DF_MAX_RANK], other[DF_MAX_RANK];
        int k = 0, no = 0;
        unsigned char red[DF_MAX_RANK] = {0};
        for (int i = 0; i < n; i++) { red[axes[i]] = 1; perm[k++] = axes[i]; }
        for (int i = 0; i < rank; i++) if (!red[i]) { perm[k++] = i; other[no++] = i; }
        for (int i = 0; i < rank; i++) inv[perm[i]] = i;
        df_output xt = df__op2(g, "Transpose", x, df__g_i32s(g, perm, rank));
        df_output sh = df_shape(g, x), zero = df_scalar_i32(g, 0);
        df_output gi[3] = {sh, df__g_i32s(g, axes, n), zero}, go[3] = {sh, df__g_i32s(g, other, no), zero};
        df_output rsz = df__reduce_op(g, "Prod", df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0), zero, 0);
        df_output osz = df__reduce_op(g, "Prod", df__op_attr_int(g, "GatherV2", go, 3, "batch_dims", 0), zero, 0);
        df_output both[2] = {rsz, osz};
        df_output two = df__op_attr_int(g, "Pack", both, 2, "axis", 0);
        df_op_builder *b = df_op_new(g, "Reshape", NULL);
        df_op_add_input(b, xt);
        df_op_add_input(b, two);
        df_output flat = df__out(df_op_finish(b), 0);
        df_output cp[2];
        for (int rev = 0; rev < 2; rev++) {
            b = df_op_new(g, "Cumprod", NULL);
            df_op_add_input(b, flat);
            df_op_add_input(b, zero);
            df_op_set_attr_bool(b, "exclusive", 1);
            df_op_set_attr_bool(b, "reverse", rev);
            cp[rev] = df__out(df_op_finish(b), 0);
        }
        df_output y = df_mul(g, cp[0], cp[1]);
        b = df_op_new(g, "Reshape", NULL);
        df_op_add_input(b, y);
        df_op_add_input(b, df_shape(g, xt));
        y = df__out(df_op_finish(b), 0);
        y = df__op2(g, "Transpose", y, df__g_i32s(g, inv, rank));
        c->dx[0] = df_mul(g, y, df__op2(g, "BroadcastTo", dk, shx));
    }
}
static void df__g_reshape(df__gfn *c) {
    df_graph *g = c->g;
    df_op_builder *b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, df__shape_of_out(g, DF__X(c, 0)));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_transpose(df__gfn *c) {
    df_graph *g = c->g;
    const df_tensor *p = df__const_value(DF__X(c, 1));
    df_output inv;
    if (p && df__is_int_tensor(p) && p->n <= DF_MAX_RANK) {
        int64_t v[DF_MAX_RANK];
        for (int64_t i = 0; i < p->n; i++) {
            int64_t k = df__int_at(p, i);
            if (k < 0 || k >= p->n) { df__graph_error(g, DF_INVALID_ARGUMENT, "Bad permutation {{node %s}}", c->n->name); return; }
            v[k] = i;
        }
        inv = df__g_i32s(g, v, (int)p->n);
    } else {
        inv = df__op1(g, "InvertPermutation", DF__X(c, 1));
    }
    c->dx[0] = df__op2(g, "Transpose", c->dy[0], inv);
}
static void df__g_fill(df__gfn *c) {
    df_graph *g = c->g;
    int64_t m1 = -1;
    df_output flat = df_reshape(g, c->dy[0], 1, &m1);
    c->dx[1] = df__reduce_op(g, "Sum", flat, df_scalar_i32(g, 0), 0);
}
static void df__g_concat(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_inputs - 1;
    df_output axis = df_cast(g, DF__X(c, n), DF_INT32);
    df_output *sh = (df_output *)DF_MALLOC((size_t)(n + 1) * sizeof(df_output));
    if (!sh) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int i = 0; i < n; i++) sh[i] = df_shape(g, DF__X(c, i));
    df_op_builder *b = df_op_new(g, "ConcatOffset", NULL);
    df_op_add_input(b, axis);
    df_op_add_input_list(b, sh, n);
    df_node *off = df_op_finish(b);
    for (int i = 0; off && i < n; i++) {
        b = df_op_new(g, "Slice", NULL);
        df_op_add_input(b, c->dy[0]);
        df_op_add_input(b, df__out(off, i));
        df_op_add_input(b, sh[i]);
        c->dx[i] = df__out(df_op_finish(b), 0);
    }
    DF_FREE(sh);
}
static void df__g_pack(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_inputs;
    df_op_builder *b = df_op_new(g, "Unpack", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_set_attr_int(b, "num", n);
    df_op_set_attr_int(b, "axis", df__attr_i(c->n, "axis", 0));
    df_node *u = df_op_finish(b);
    for (int i = 0; u && i < n; i++) c->dx[i] = df__out(u, i);
}
static void df__g_unpack(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_outputs;
    df_output *v = (df_output *)DF_MALLOC((size_t)DF__MAX(n, 1) * sizeof(df_output));
    if (!v) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int i = 0; i < n; i++) v[i] = c->dy[i].node ? c->dy[i] : df__zeros_like(g, df__Y(c, i));
    df_op_builder *b = df_op_new(g, "Pack", NULL);
    df_op_add_input_list(b, v, n);
    df_op_set_attr_int(b, "axis", df__attr_i(c->n, "axis", 0));
    c->dx[0] = df__out(df_op_finish(b), 0);
    DF_FREE(v);
}
static void df__g_slice(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), begin = df_cast(g, DF__X(c, 1), DF_INT32);
    df_output after = df_sub(g, df_sub(g, df__shape_of_out(g, x), begin), df_shape(g, c->dy[0]));
    df_output pp[2] = {begin, after};
    df_output pads = df__op_attr_int(g, "Pack", pp, 2, "axis", 1);
    c->dx[0] = df__op2(g, "Pad", c->dy[0], pads);
}
static void df__g_strided_slice(df__gfn *c) {
    df_graph *g = c->g;
    static const char *masks[] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
    df_output x = DF__X(c, 0);
    df_dtype it = df_output_dtype(DF__X(c, 1));
    df_op_builder *b = df_op_new(g, "Shape", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "out_type", it);
    df_output sh = df__out(df_op_finish(b), 0);
    b = df_op_new(g, "StridedSliceGrad", NULL);
    df_op_add_input(b, sh);
    for (int i = 1; i < 4; i++) df_op_add_input(b, DF__X(c, i));
    df_op_add_input(b, c->dy[0]);
    for (int i = 0; i < 5; i++) df_op_set_attr_int(b, masks[i], df__attr_i(c->n, masks[i], 0));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_strided_slice_grad(df__gfn *c) {
    df_graph *g = c->g;
    static const char *masks[] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
    df_op_builder *b = df_op_new(g, "StridedSlice", NULL);
    df_op_add_input(b, c->dy[0]);
    for (int i = 1; i < 4; i++) df_op_add_input(b, DF__X(c, i));
    for (int i = 0; i < 5; i++) df_op_set_attr_int(b, masks[i], df__attr_i(c->n, masks[i], 0));
    c->dx[4] = df__out(df_op_finish(b), 0);
}
static void df__g_pad(df__gfn *c) {
    df_graph *g = c->g;
    df_output p = df_cast(g, DF__X(c, 1), DF_INT32);
    int64_t z2[2] = {0, 0}, s2[2] = {-1, 1}, m1 = -1;
    df_op_builder *b = df_op_new(g, "Slice", NULL);
    df_op_add_input(b, p);
    df_op_add_input(b, df__g_i32s(g, z2, 2));
    df_op_add_input(b, df__g_i32s(g, s2, 2));
    df_output begin = df_reshape(g, df__out(df_op_finish(b), 0), 1, &m1);
    b = df_op_new(g, "Slice", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, begin);
    df_op_add_input(b, df__shape_of_out(g, DF__X(c, 0)));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_tile(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), m = df_cast(g, DF__X(c, 1), DF_INT32);
    df_output pk[2] = {m, df_shape(g, x)};
    df_output st = df__op_attr_int(g, "Pack", pk, 2, "axis", 1);       /* [rank, 2]: (m_i, d_i) */
    int64_t m1 = -1;
    df_output split = df_reshape(g, st, 1, &m1);
    df_op_builder *b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, split);
    df_output r = df__out(df_op_finish(b), 0);
    df_output rin[3] = {df_scalar_i32(g, 0), df__op1(g, "Size", split), df_scalar_i32(g, 2)};
    b = df_op_new(g, "Range", NULL);
    for (int i = 0; i < 3; i++) df_op_add_input(b, rin[i]);
    df_output axes = df__out(df_op_finish(b), 0);
    df_output s = df__reduce_op(g, "Sum", r, axes, 0);
    b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, s);
    df_op_add_input(b, df__shape_of_out(g, x));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
/* dy has params' shape with the axis replaced by indices' non-batch dims. The index dims (batch
   dims first) go to the front and an UnsortedSegmentSum adds the rows into the axis; with
   batch_dims b > 0 the ids of batch k are shifted by k * params.shape[axis] so that each batch
   sums into its own block of rows, the blocks then reshaped back into the batch dims. */
static void df__g_gather(df__gfn *c) {
    df_graph *g = c->g;
    const df_tensor *ax = df__const_value(DF__X(c, 2));
    df_output p = DF__X(c, 0), ix = DF__X(c, 1);
    int pr = p.node->out_shapes[p.index].rank, q = ix.node->out_shapes[ix.index].rank;
    int64_t a = ax && df__is_int_tensor(ax) && ax->n == 1 ? df__int_at(ax, 0) : INT64_MIN;
    int64_t b = df__attr_i(c->n, "batch_dims", 0);
    if (a != INT64_MIN && a < 0 && pr >= 0) a += pr;
    if (b < 0 && q >= 0) b += q;
    if (a == INT64_MIN || a < 0 || ((a != 0 || b != 0) && (pr < 0 || q < 0))) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of GatherV2 needs a constant axis (and known ranks for an axis "
                        "or batch_dims other than 0) {{node %s}}", c->n->name);
        return;
    }
    if (b < 0 || b > q || b > a) {   /* the shape function refuses these when the ranks are known */
        df__graph_error(g, DF_INVALID_ARGUMENT, "Gradient of GatherV2: batch_dims %lld does not fit axis %lld and indices of rank %d {{node %s}}",
                        (long long)df__attr_i(c->n, "batch_dims", 0), (long long)a, q, c->n->name);
        return;
    }
    df_output shp = df__shape_of_out(g, p), zero = df_scalar_i32(g, 0);
    df_output gi[3] = {shp, df_scalar_i32(g, (int32_t)a), zero};
    df_output num = df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0), ids = ix;
    df_output d = c->dy[0];
    int64_t perm[DF_MAX_RANK], back[DF_MAX_RANK], lead[DF_MAX_RANK];
    if (a != b) {                /* index dims (batch dims first) to the front, then params' other dims */
        int k = 0;
        for (int i = 0; i < b; i++) perm[k++] = i;
        for (int i = 0; i < q - b; i++) perm[k++] = a + i;
        for (int i = (int)b; i < a; i++) perm[k++] = i;
        for (int i = (int)a + q - (int)b; i < pr - 1 + q - b; i++) perm[k++] = i;
        d = df__op2(g, "Transpose", d, df__g_i32s(g, perm, k));
    }
    if (b > 0) {
        for (int i = 0; i < b; i++) lead[i] = i;
        gi[1] = df__g_i32s(g, lead, (int)b);
        df_output batch_shape = df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0);
        df_output n_batch = df__reduce_op(g, "Prod", batch_shape, zero, 0);
        df_op_builder *rb = df_op_new(g, "Range", NULL);
        df_op_add_input(rb, zero);
        df_op_add_input(rb, n_batch);
        df_op_add_input(rb, df_scalar_i32(g, 1));
        df_output first = df_mul(g, df__out(df_op_finish(rb), 0), num);   /* batch k's first row */
        first = df__op2(g, "Reshape", first, batch_shape);
        for (int i = (int)b; i < q; i++) first = df__op2(g, "ExpandDims", first, df_scalar_i32(g, -1));
        df_dtype it = df_output_dtype(ix);
        /* an index out of range would land in another batch's rows: drop it (-1), as the
           segment sum drops it when batch_dims is 0 */
        df_output valid = df_logical_and(g, df_greater_equal(g, ix, df__scalar_like(g, ix, 0)), df_less(g, ix, df_cast(g, num, it)));
        ids = df_select(g, valid, df_add(g, ix, df_cast(g, first, it)), df__scalar_like(g, ix, -1));
        num = df_mul(g, n_batch, num);
    }
    df_op_builder *sb = df_op_new(g, "UnsortedSegmentSum", NULL);
    df_op_add_input(sb, d);
    df_op_add_input(sb, ids);
    df_op_add_input(sb, num);
    df_output r = df__out(df_op_finish(sb), 0);
    if (b > 0) {                 /* [batch * axis, ...] to [batch dims, axis, dims between, ...] */
        int k = 0;
        for (int i = 0; i < b; i++) lead[k++] = i;
        lead[k++] = a;
        for (int i = (int)b; i < a; i++) lead[k++] = i;
        for (int i = (int)a + 1; i < pr; i++) lead[k++] = i;
        gi[1] = df__g_i32s(g, lead, k);
        r = df__op2(g, "Reshape", r, df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0));
    }
    if (a != b) {
        for (int i = 0; i < pr; i++) back[i] = i < b ? i : i < a ? i + 1 : i == a ? b : i;
        r = df__op2(g, "Transpose", r, df__g_i32s(g, back, pr));
    }
    c->dx[0] = r;
}
static void df__g_segment_sum(df__gfn *c) {
    /* ids outside [0, num_segments) were dropped: their rows get zero gradient */
    df_graph *g = c->g;
    df_output ids = DF__X(c, 1), num = df_cast(g, DF__X(c, 2), df_output_dtype(ids));
    int ri = ids.node->out_shapes[ids.index].rank, rd = DF__X(c, 0).node->out_shapes[DF__X(c, 0).index].rank;
    if (ri < 0 || rd < 0) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of UnsortedSegmentSum needs known ranks {{node %s}}", c->n->name);
        return;
    }
    df_output zero = df__scalar_like(g, ids, 0);
    df_output valid = df_logical_and(g, df_greater_equal(g, ids, zero), df_less(g, ids, num));
    df_output safe = df_select(g, valid, ids, df__zeros_like(g, ids));
    df_output gi[3] = {c->dy[0], safe, df_scalar_i32(g, 0)};
    df_output rows = df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0);
    for (int k = ri; k < rd; k++) valid = df__op2(g, "ExpandDims", valid, df_scalar_i32(g, -1));
    c->dx[0] = df_select(g, valid, rows, df__zeros_like(g, rows));
}
static void df__g_broadcast_to(df__gfn *c) { c->dx[0] = df__sum_to(c->g, c->dy[0], DF__X(c, 0)); }
static df_output df__last_axis_sum(df_graph *g, df_output v) { return df__reduce_op(g, "Sum", v, df_scalar_i32(g, -1), 1); }
static void df__g_softmax(df__gfn *c) {
    df_graph *g = c->g;
    df_output y = df__Y(c, 0), d = c->dy[0];
    if (!strcmp(c->n->op->name, "Softmax"))
        c->dx[0] = df_mul(g, df_sub(g, d, df__last_axis_sum(g, df_mul(g, d, y))), y);
    else
        c->dx[0] = df_sub(g, d, df_mul(g, df__last_axis_sum(g, d), df_exp(g, y)));
}
static void df__g_xent(df__gfn *c) {
    df_graph *g = c->g;
    int sparse = c->n->op->code == 1;
    df_output f = DF__X(c, 0), gl = c->dy[0], gb = c->dy[1], df = {NULL, 0}, dl = {NULL, 0};
    if (gl.node) {
        df_output e = df__op2(g, "ExpandDims", gl, df_scalar_i32(g, -1));
        df = df_mul(g, e, df__Y(c, 1));
        if (!sparse) dl = df_mul(g, e, df_neg(g, df__op1(g, "LogSoftmax", f)));
    }
    if (gb.node) {
        df_output sm = df_softmax(g, f);
        df_output t = df_mul(g, df_sub(g, gb, df__last_axis_sum(g, df_mul(g, gb, sm))), sm);
        df = df.node ? df_add(g, df, t) : t;
        if (!sparse) { df_output ng = df_neg(g, gb); dl = dl.node ? df_add(g, dl, ng) : ng; }
    }
    c->dx[0] = df;
    if (!sparse) c->dx[1] = dl;
}
/* Switch: whichever output was live carries the gradient; the other side gets zeros that are
   live exactly when that side was, and a Merge passes on the one live value. */
static void df__g_switch(df__gfn *c) {
    df_graph *g = c->g;
    df_output data = DF__X(c, 0), pred = DF__X(c, 1);
    if (!c->dy[0].node && !c->dy[1].node) return;
    df_output side[2];
    for (int k = 0; k < 2; k++) {
        if (c->dy[k].node) { side[k] = c->dy[k]; continue; }
        df__shape s;
        df_output src = data;
        if (df_output_dtype(data) != DF_RESOURCE && df__static_full(data, &s)) {   /* (a handle's zeros: df__zeros_like) */
            df_output fin[2] = {df__g_i32s(g, s.dims, s.rank), df__scalar_like(g, data, 0)};
            df_op_builder *b = df_op_new(g, "Fill", NULL);
            df_op_add_input(b, fin[0]);
            df_op_add_input(b, fin[1]);
            src = df__out(df_op_finish(b), 0);
        }
        df_op_builder *b = df_op_new(g, "Switch", NULL);
        df_op_add_input(b, src);
        df_op_add_input(b, pred);
        df_output gate = df__out(df_op_finish(b), k);
        side[k] = src.node == data.node && src.index == data.index ? df__zeros_like(g, gate) : df_identity(g, gate);
    }
    df_op_builder *b = df_op_new(g, "Merge", NULL);
    df_op_add_input_list(b, side, 2);
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_merge(df__gfn *c) {
    df_graph *g = c->g;
    df_output d = c->dy[0];
    if (!d.node) return;
    if (c->n->cond && c->n->n_inputs == 2) {               /* a cond's Merge: Switch on its predicate */
        df_op_builder *b = df_op_new(g, "Switch", NULL);
        df_op_add_input(b, d);
        df_op_add_input(b, c->n->cond->pred);
        df_node *sw = df_op_finish(b);
        c->dx[0] = df__out(sw, 0);
        c->dx[1] = df__out(sw, 1);
        return;
    }
    /* A Merge made by hand: input i gets dy where value_index is i. Where it is not, a live
       input (taken twice, or one that lost the race) gets zeros, and a dead one stays dead:
       Merge(Switch(dy, taken):1, Switch(zeros_like(x_i), taken):0). A dead gradient for a live
       input would kill the sum of its gradients, and in a loop the gradient loop with it. */
    for (int i = 0; i < c->n->n_inputs; i++) {
        df_output taken = df_equal(g, df__Y(c, 1), df_scalar_i32(g, i)), side[2];
        df_op_builder *b = df_op_new(g, "Switch", NULL);
        df_op_add_input(b, d);
        df_op_add_input(b, taken);
        side[0] = df__out(df_op_finish(b), 1);
        b = df_op_new(g, "Switch", NULL);
        df_op_add_input(b, df__zeros_like(g, DF__X(c, i)));
        df_op_add_input(b, taken);
        side[1] = df__out(df_op_finish(b), 0);
        b = df_op_new(g, "Merge", NULL);
        df_op_add_input_list(b, side, 2);
        c->dx[i] = df__out(df_op_finish(b), 0);
    }
}

/* Conv2D: the two backprop ops; pools: their grad ops. The window attrs are copied over. */
static void df__copy_window_attrs(df_op_builder *b, const df_node *n) {
    static const char *const names[] = {"strides", "dilations", "ksize", "explicit_paddings"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const df__attr *a = df__node_attr(n, names[i]);
        if (a && a->kind == DF__A_INT_LIST) df_op_set_attr_int_list(b, names[i], a->u.ints.v, a->u.ints.n);
    }
    df_op_set_attr_string(b, "padding", df__attr_s(n, "padding"));
    df_op_set_attr_string(b, "data_format", *df__attr_s(n, "data_format") ? df__attr_s(n, "data_format") : "NHWC");
}
static df_output df__window_op(df_graph *g, const char *op, const df_node *like, const df_output *ins, int n) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    df__copy_window_attrs(b, like);
    return df__out(df_op_finish(b), 0);
}
static void df__g_conv2d(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), w = DF__X(c, 1);
    df_output bi[3] = {df__shape_of_out(g, x), w, c->dy[0]}, bf[3] = {x, df__shape_of_out(g, w), c->dy[0]};
    c->dx[0] = df__window_op(g, "Conv2DBackpropInput", c->n, bi, 3);
    c->dx[1] = df__window_op(g, "Conv2DBackpropFilter", c->n, bf, 3);
}
static void df__g_max_pool(df__gfn *c) {
    df_output in[3] = {DF__X(c, 0), df__Y(c, 0), c->dy[0]};
    c->dx[0] = df__window_op(c->g, "MaxPoolGrad", c->n, in, 3);
}
static void df__g_avg_pool(df__gfn *c) {
    df_output in[2] = {df__shape_of_out(c->g, DF__X(c, 0)), c->dy[0]};
    c->dx[0] = df__window_op(c->g, "AvgPoolGrad", c->n, in, 2);
}

/* TensorLists and Optionals (TensorFlow's list_ops.py and optional gradients): a list's
   gradient is a list of its elements' gradients; uninitialised elements stand for zeros. */
static df_node *df__tl_build(df_graph *g, const char *op, const df_output *in, int n, df_dtype element_dtype) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    if (element_dtype) df_op_set_attr_type(b, "element_dtype", element_dtype);
    return df_op_finish(b);
}
static df_output df__tl_op(df_graph *g, const char *op, const df_output *in, int n, df_dtype element_dtype) {
    return df__out(df__tl_build(g, op, in, n, element_dtype), 0);
}
static df_output df__tl_element_shape(df_graph *g, df_output list) {
    df_op_builder *b = df_op_new(g, "TensorListElementShape", NULL);
    df_op_add_input(b, list);
    df_op_set_attr_type(b, "shape_type", DF_INT32);
    return df__out(df_op_finish(b), 0);
}
/* x's shape without its first dim (int32; -1 where unknown; a scalar -1 for an unknown rank). */
static df_output df__tl_row_shape(df_graph *g, df_output x) {
    df__shape s = x.node->out_shapes[x.index];
    if (s.rank >= 1) {
        int full = 1;
        for (int d = 1; d < s.rank; d++) full &= s.dims[d] >= 0;
        if (full) return df__g_i32s(g, s.dims + 1, s.rank - 1);
    }
    if (s.rank == 0) return df_scalar_i32(g, -1);
    df_output in[3] = {df_shape(g, x), df__g_i32s(g, (int64_t[]){1}, 1), df__g_i32s(g, (int64_t[]){-1}, 1)};
    return df__tl_op(g, "Slice", in, 3, 0);
}
static df_dtype df__tl_elem_type(const df__gfn *c) { return df__attr_type(c->n, "element_dtype"); }
static void df__g_tl_push_back(df__gfn *c) {
    if (!c->dy[0].node) return;
    df_output in[2] = {c->dy[0], df_shape(c->g, DF__X(c, 1))};
    df_node *p = df__tl_build(c->g, "TensorListPopBack", in, 2, df__tl_elem_type(c));
    c->dx[0] = df__out(p, 0);
    c->dx[1] = df__out(p, 1);
}
static void df__g_tl_pop_back(df__gfn *c) {
    df_graph *g = c->g;
    df_output dlist = c->dy[0], delem = c->dy[1];
    if (!dlist.node && !delem.node) return;
    if (!dlist.node) {
        df_output in[2] = {df__tl_element_shape(g, df__Y(c, 0)), df_scalar_i32(g, -1)};
        df_op_builder *b = df_op_new(g, "EmptyTensorList", NULL);
        df_op_add_input(b, in[0]);
        df_op_add_input(b, in[1]);
        df_op_set_attr_type(b, "element_dtype", df__tl_elem_type(c));
        dlist = df__out(df_op_finish(b), 0);
    }
    if (!delem.node) delem = df__zeros_like(g, df__Y(c, 1));
    df_output in[2] = {dlist, delem};
    c->dx[0] = df__tl_op(g, "TensorListPushBack", in, 2, df__tl_elem_type(c));
}
static void df__g_tl_stack(df__gfn *c) {
    if (!c->dy[0].node) return;
    df_output in[2] = {c->dy[0], df__tl_row_shape(c->g, c->dy[0])};
    c->dx[0] = df__tl_op(c->g, "TensorListFromTensor", in, 2, df__tl_elem_type(c));
}
static void df__g_tl_from_tensor(df__gfn *c) {
    df_graph *g = c->g;
    df_output t = DF__X(c, 0), dlist = c->dy[0];
    if (!dlist.node) return;       /* (TensorFlow builds an empty list here: its Stack is zeros) */
    const df__shape *s = &t.node->out_shapes[t.index];
    df_op_builder *b = df_op_new(g, "TensorListStack", NULL);
    df_op_add_input(b, dlist);
    df_op_add_input(b, df__tl_row_shape(g, t));
    df_op_set_attr_type(b, "element_dtype", df_output_dtype(t));
    if (s->rank >= 1 && s->dims[0] >= 0) df_op_set_attr_int(b, "num_elements", s->dims[0]);
    c->dx[0] = df__out(df_op_finish(b), 0);
}
/* A list of the input's length whose element `index` is item, the others uninitialised. */
static df_output df__tl_one_hot_list(df_graph *g, df_output like, df_output index, df_output item) {
    df_output len = df__op1(g, "TensorListLength", like);
    df_op_builder *b = df_op_new(g, "TensorListReserve", NULL);
    df_op_add_input(b, df__tl_element_shape(g, like));
    df_op_add_input(b, len);
    df_op_set_attr_type(b, "element_dtype", df_output_dtype(item));
    df_output in[3] = {df__out(df_op_finish(b), 0), index, item};
    return df__tl_op(g, "TensorListSetItem", in, 3, df_output_dtype(item));
}
static void df__g_tl_get_item(df__gfn *c) {
    if (!c->dy[0].node) return;
    c->dx[0] = df__tl_one_hot_list(c->g, DF__X(c, 0), DF__X(c, 1), c->dy[0]);
}
static void df__g_tl_set_item(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output item = DF__X(c, 2);
    df_output in[3] = {c->dy[0], DF__X(c, 1), df__zeros_like(g, item)};
    df_output dlist = df__tl_op(g, "TensorListSetItem", in, 3, df_output_dtype(item));
    df_output gin[3] = {c->dy[0], DF__X(c, 1), df_shape(g, item)};
    c->dx[2] = df__tl_op(g, "TensorListGetItem", gin, 3, df_output_dtype(item));
    if (df__attr_b(c->n, "resize_if_index_out_of_bounds", 0)) {
        df_output rin[2] = {dlist, df__op1(g, "TensorListLength", DF__X(c, 0))};
        dlist = df__tl_op(g, "TensorListResize", rin, 2, 0);
    }
    c->dx[0] = dlist;
}
static void df__g_tl_resize(df__gfn *c) {
    if (!c->dy[0].node) return;
    df_output in[2] = {c->dy[0], df__op1(c->g, "TensorListLength", DF__X(c, 0))};
    c->dx[0] = df__tl_op(c->g, "TensorListResize", in, 2, 0);
}
static void df__g_tl_gather(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output list = DF__X(c, 0);
    df_dtype t = df_output_dtype(c->dy[0]);
    df_op_builder *b = df_op_new(g, "TensorListReserve", NULL);
    df_op_add_input(b, df__tl_element_shape(g, list));
    df_op_add_input(b, df__op1(g, "TensorListLength", list));
    df_op_set_attr_type(b, "element_dtype", t);
    df_output in[3] = {df__out(df_op_finish(b), 0), c->dy[0], DF__X(c, 1)};
    c->dx[0] = df__tl_op(g, "TensorListScatterIntoExistingList", in, 3, t);
}
static void df__g_tl_scatter(df__gfn *c) {       /* TensorListScatter, TensorListScatterV2 */
    if (!c->dy[0].node) return;
    df_output t = DF__X(c, 0);
    df_output in[3] = {c->dy[0], DF__X(c, 1), df__tl_row_shape(c->g, t)};
    c->dx[0] = df__tl_op(c->g, "TensorListGather", in, 3, df_output_dtype(t));
}
static void df__g_tl_scatter_into(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output t = DF__X(c, 1), idx = DF__X(c, 2);
    df_output in[3] = {c->dy[0], idx, df__tl_row_shape(g, t)};
    c->dx[1] = df__tl_op(g, "TensorListGather", in, 3, df_output_dtype(t));
    df_output sin[3] = {c->dy[0], df__zeros_like(g, t), idx};
    c->dx[0] = df__tl_op(g, "TensorListScatterIntoExistingList", sin, 3, df_output_dtype(t));
}
static void df__g_tl_concat(df__gfn *c) {       /* TensorListConcatV2: split the gradient back */
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_op_builder *b = df_op_new(g, "TensorListElementShape", NULL);
    df_op_add_input(b, DF__X(c, 0));
    df_op_set_attr_type(b, "shape_type", DF_INT64);
    df_output in[3] = {c->dy[0], df__out(df_op_finish(b), 0), df__Y(c, 1)};
    c->dx[0] = df__tl_op(g, "TensorListSplit", in, 3, 0);
}
static void df__g_tl_split(df__gfn *c) {        /* TensorListSplit: concatenate the gradient */
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output t = DF__X(c, 0), shape;
    df__shape s = t.node->out_shapes[t.index];
    if (s.rank < 1) shape = df_scalar_i32(g, -1);
    else {
        df_output parts[2] = {df__g_i32s(g, (int64_t[]){-1}, 1), df__tl_row_shape(g, t)};
        df_op_builder *b = df_op_new(g, "ConcatV2", NULL);
        df_op_add_input_list(b, parts, 2);
        df_op_add_input(b, df_scalar_i32(g, 0));
        shape = df__out(df_op_finish(b), 0);
    }
    df_output in[3] = {c->dy[0], shape, DF__X(c, 2)};
    c->dx[0] = df__tl_op(g, "TensorListConcatV2", in, 3, df_output_dtype(t));
}
static void df__g_optional_from_value(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    int n = c->n->n_inputs;
    df_dtype types[12] = {0};
    int ranks[12] = {0};
    const int64_t *dims[12] = {0};
    if (n > 12) { df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of OptionalFromValue with more than 12 components {{node %s}}", c->n->name); return; }
    for (int i = 0; i < n; i++) {
        df_output x = DF__X(c, i);
        types[i] = df_output_dtype(x);
        ranks[i] = x.node->out_shapes[x.index].rank;
        dims[i] = x.node->out_shapes[x.index].dims;
    }
    df_op_builder *b = df_op_new(g, "OptionalGetValue", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_set_attr_type_list(b, "output_types", types, n);
    df_op_set_attr_shape_list(b, "output_shapes", n, ranks, dims);
    df_node *v = df_op_finish(b);
    for (int i = 0; i < n; i++) c->dx[i] = df__out(v, i);
}
static void df__g_optional_get_value(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_outputs, any = 0;
    df_output in[12];
    if (n > 12) { df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of OptionalGetValue with more than 12 components {{node %s}}", c->n->name); return; }
    for (int i = 0; i < n; i++) any |= c->dy[i].node != NULL;
    if (!any) return;
    for (int i = 0; i < n; i++) in[i] = c->dy[i].node ? c->dy[i] : df__zeros_like(g, df__Y(c, i));
    df_op_builder *b = df_op_new(g, "OptionalFromValue", NULL);
    df_op_add_input_list(b, in, n);
    c->dx[0] = df__out(df_op_finish(b), 0);
}

static const struct { const char *op; df__grad_fn fn; } df__grad_table[] = {
    {"TensorArrayReadV3", df__g_ta_read}, {"TensorArrayWriteV3", df__g_ta_write}, {"TensorArrayGatherV3", df__g_ta_gather},
    {"TensorArrayScatterV3", df__g_ta_scatter}, {"TensorArrayConcatV3", df__g_ta_concat}, {"TensorArraySplitV3", df__g_ta_split},
    {"Identity", df__g_identity}, {"IdentityN", df__g_identity}, {"PlaceholderWithDefault", df__g_first},
    {"AddN", df__g_add_n}, {"AddV2", df__g_add}, {"Add", df__g_add}, {"Sub", df__g_sub}, {"Mul", df__g_mul}, {"SumAccumulatorMulAdd", df__g_accum_mul_add},
    {"RealDiv", df__g_div}, {"Div", df__g_div}, {"Maximum", df__g_maxmin}, {"Minimum", df__g_maxmin},
    {"Pow", df__g_pow}, {"SquaredDifference", df__g_sqdiff}, {"FloorMod", df__g_floormod},
    {"Neg", df__g_neg}, {"Square", df__g_square}, {"Abs", df__g_abs}, {"Sign", df__g_zero},
    {"Relu", df__g_relu}, {"Sqrt", df__g_fused_y}, {"Rsqrt", df__g_fused_y}, {"Exp", df__g_exp},
    {"Log", df__g_log}, {"Tanh", df__g_fused_y}, {"Sigmoid", df__g_fused_y}, {"Reciprocal", df__g_fused_y},
    {"ReluGrad", df__g_relu_grad}, {"TanhGrad", df__g_unary_grad}, {"SigmoidGrad", df__g_unary_grad},
    {"SqrtGrad", df__g_unary_grad}, {"RsqrtGrad", df__g_unary_grad}, {"ReciprocalGrad", df__g_unary_grad},
    {"Select", df__g_select}, {"SelectV2", df__g_select}, {"Cast", df__g_cast},
    {"MatMul", df__g_matmul}, {"BatchMatMulV2", df__g_matmul}, {"BiasAdd", df__g_bias_add},
    {"Conv2D", df__g_conv2d}, {"MaxPool", df__g_max_pool}, {"AvgPool", df__g_avg_pool},
    {"Split", df__g_split}, {"SplitV", df__g_split}, {"DynamicStitch", df__g_dynamic_stitch},
    {"ParallelDynamicStitch", df__g_dynamic_stitch}, {"Sin", df__g_trig}, {"Cos", df__g_trig},
    {"Sum", df__g_reduce}, {"Mean", df__g_reduce}, {"Max", df__g_reduce}, {"Min", df__g_reduce}, {"Prod", df__g_reduce},
    {"Reshape", df__g_reshape}, {"ExpandDims", df__g_reshape}, {"Squeeze", df__g_reshape},
    {"Transpose", df__g_transpose}, {"Fill", df__g_fill}, {"ConcatV2", df__g_concat}, {"Pack", df__g_pack},
    {"Unpack", df__g_unpack}, {"Slice", df__g_slice}, {"StridedSlice", df__g_strided_slice},
    {"StridedSliceGrad", df__g_strided_slice_grad}, {"Pad", df__g_pad}, {"Tile", df__g_tile},
    {"GatherV2", df__g_gather}, {"UnsortedSegmentSum", df__g_segment_sum}, {"BroadcastTo", df__g_broadcast_to},
    {"Softmax", df__g_softmax}, {"LogSoftmax", df__g_softmax}, {"SoftmaxCrossEntropyWithLogits", df__g_xent},
    {"SparseSoftmaxCrossEntropyWithLogits", df__g_xent}, {"Switch", df__g_switch}, {"Merge", df__g_merge},
    {"TensorListPushBack", df__g_tl_push_back}, {"TensorListPopBack", df__g_tl_pop_back},
    {"TensorListStack", df__g_tl_stack}, {"TensorListFromTensor", df__g_tl_from_tensor},
    {"TensorListGetItem", df__g_tl_get_item}, {"TensorListSetItem", df__g_tl_set_item},
    {"TensorListResize", df__g_tl_resize}, {"TensorListGather", df__g_tl_gather},
    {"TensorListScatter", df__g_tl_scatter}, {"TensorListScatterV2", df__g_tl_scatter},
    {"TensorListScatterIntoExistingList", df__g_tl_scatter_into},
    {"OptionalFromValue", df__g_optional_from_value}, {"OptionalGetValue", df__g_optional_get_value},
    {"TensorListConcatV2", df__g_tl_concat}, {"TensorListSplit", df__g_tl_split},
    /* TF1's Ref control-flow ops differentiate as their twins (RefEnter, RefExit and
       RefNextIteration, as Enter, Exit and NextIteration, with their loop: src/autodiff/loops.c) */
    {"RefSwitch", df__g_switch}, {"RefMerge", df__g_merge}, {"RefIdentity", df__g_identity},
    /* src/kernels/math.c */
    {"Softplus", df__g_math_unary}, {"Softsign", df__g_math_unary}, {"Elu", df__g_math_unary},
    {"Selu", df__g_math_unary}, {"LeakyRelu", df__g_math_unary}, {"Relu6", df__g_math_unary},
    {"Log1p", df__g_math_unary}, {"Expm1", df__g_math_unary}, {"Erf", df__g_math_unary}, {"Erfc", df__g_math_unary},
    {"Tan", df__g_math_unary}, {"Asin", df__g_math_unary}, {"Acos", df__g_math_unary}, {"Atan", df__g_math_unary},
    {"Sinh", df__g_math_unary}, {"Cosh", df__g_math_unary}, {"L2Loss", df__g_math_unary}, {"Atan2", df__g_atan2},
    {"EluGrad", df__g_math_grad_grad}, {"SeluGrad", df__g_math_grad_grad}, {"Relu6Grad", df__g_math_grad_grad},
    {"LeakyReluGrad", df__g_math_grad_grad}, {"SoftplusGrad", df__g_math_grad_grad},

    /* ---- index gradients (src/kernels/index.c): begin ---- */
    {"GatherNd", df__g_gather_nd}, {"ScatterNd", df__g_scatter_nd}, {"TensorScatterUpdate", df__g_tensor_scatter},
    {"TensorScatterAdd", df__g_tensor_scatter}, {"TensorScatterSub", df__g_tensor_scatter},
    {"TensorScatterMax", df__g_tensor_scatter}, {"TensorScatterMin", df__g_tensor_scatter},
    {"SegmentSum", df__g_segment}, {"SegmentMean", df__g_segment}, {"SegmentMax", df__g_segment},
    {"SegmentMin", df__g_segment}, {"SegmentProd", df__g_segment}, {"UnsortedSegmentMax", df__g_unsorted_segment},
    {"UnsortedSegmentMin", df__g_unsorted_segment}, {"UnsortedSegmentProd", df__g_unsorted_segment},
    {"ReverseV2", df__g_reverse}, {"Roll", df__g_roll},
    /* ---- index gradients: end ---- */

    /* ---- linalg gradients (src/kernels/linalg.c): begin ---- */
    {"Einsum", df__g_einsum}, {"TopKV2", df__g_topk}, {"Cumsum", df__g_cumsum}, {"Cumprod", df__g_cumprod},
    {"MatrixBandPart", df__g_band_part}, {"MatrixDiagV3", df__g_diag_v3}, {"MatrixDiagPartV3", df__g_diag_part_v3},
    {"MatrixSetDiagV3", df__g_set_diag_v3}, {"EuclideanNorm", df__g_euclidean_norm},
    {"DivNoNan", df__g_la_binary}, {"Xdivy", df__g_la_binary}, {"Xlogy", df__g_la_binary}, {"Xlog1py", df__g_la_binary},
    {"Polygamma", df__g_la_binary}, {"Lgamma", df__g_la_unary}, {"Digamma", df__g_la_unary},
    {"PadV2", df__g_pad}, {"MirrorPad", df__g_mirror_pad}, {"MirrorPadGrad", df__g_mirror_pad},
    /* ---- linalg gradients: end ---- */

    /* ---- nn_extra gradients (src/kernels/nn_extra.c): begin ---- */
    {"FusedBatchNorm", df__g_fused_batch_norm}, {"FusedBatchNormV2", df__g_fused_batch_norm},
    {"FusedBatchNormV3", df__g_fused_batch_norm}, {"DepthwiseConv2dNative", df__g_depthwise_conv2d},
    {"DepthwiseConv2dNativeBackpropInput", df__g_depthwise_conv2d},
    {"DepthwiseConv2dNativeBackpropFilter", df__g_depthwise_conv2d}, {"FusedBatchNormGrad", df__g_fused_batch_norm_grad},
    {"FusedBatchNormGradV2", df__g_fused_batch_norm_grad}, {"FusedBatchNormGradV3", df__g_fused_batch_norm_grad},
    /* ---- nn_extra gradients: end ---- */

    /* ---- resource gradients (src/kernels/resource.c): begin ---- */
    {"ReadVariableOp", df__g_read_variable}, {"ResourceGather", df__g_resource_gather},
    /* ---- resource gradients: end ---- */

    /* ---- half gradients (src/kernels/half.c): begin ---- */
    /* ---- half gradients: end ---- */

    /* ---- random2 gradients (src/kernels/random.c): begin ---- */
    /* ---- random2 gradients: end ---- */

    /* ---- resize gradients (src/kernels/resize.c): begin ---- */
    {"ResizeBilinear", df__g_resize_bilinear}, {"ResizeNearestNeighbor", df__g_resize_nearest},
    /* ---- resize gradients: end ---- */

};
DF_PRIVATE df__grad_fn df__grad_fn_for(const df__opdef *op) {
    if (op->grad) return (df__grad_fn)op->grad;
    for (size_t i = 0; i < sizeof df__grad_table / sizeof *df__grad_table; i++)
        if (!strcmp(df__grad_table[i].op, op->name)) return df__grad_table[i].fn;
    return NULL;
}
