/* ==========================================================================================
   src/shape.c: Shape inference                                                       >>shape
   Shape functions run when a node is made. They use constant inputs (Const, or an Identity or
   Enter of one) where an op takes a shape or axis as a tensor, and leave dims unknown (-1)
   otherwise. The checks here are repeated by the kernels: static shapes are a hint, not a promise.
   ========================================================================================== */

DF_PRIVATE const df_tensor *df__const_value(df_output o) {
    for (int depth = 0; o.node && depth < 8; depth++) {
        unsigned f = o.node->op->flags;
        if (!strcmp(o.node->op->name, "Const")) {
            const df__attr *a = df__node_attr(o.node, "value");
            return a && a->kind == DF__A_TENSOR ? a->u.tensor : NULL;
        }
        if ((f & DF__OP_ENTER) || !strcmp(o.node->op->name, "Identity")) o = o.node->inputs[0];
        else return NULL;
    }
    return NULL;
}
DF_PRIVATE const df_tensor *df__sc_const(df__shape_ctx *c, int i) {
    return i < c->node->n_inputs ? df__const_value(c->node->inputs[i]) : NULL;
}
DF_PRIVATE df__shape *df__sc_out(df__shape_ctx *c, int i) { return &c->node->out_shapes[i]; }
DF_PRIVATE df__shape df__shape_of(const df_tensor *t) {
    df__shape s;
    s.rank = t->rank;
    for (int i = 0; i < t->rank; i++) s.dims[i] = t->dims[i];
    return s;
}
DF_PRIVATE df__shape df__shape_unknown(void) { df__shape s; s.rank = -1; return s; }
DF_PRIVATE df__shape df__shape_scalar(void) { df__shape s; s.rank = 0; return s; }

/* Integer element i of an int32/int64 tensor. */
DF_PRIVATE int64_t df__int_at(const df_tensor *t, int64_t i) {
    return t->dtype == DF_INT64 ? ((const int64_t *)t->data)[i] : (int64_t)((const int32_t *)t->data)[i];
}
DF_PRIVATE int df__is_int_tensor(const df_tensor *t) { return t && (t->dtype == DF_INT32 || t->dtype == DF_INT64); }

DF_PRIVATE int df__broadcast(int ra, const int64_t *da, int rb, const int64_t *db, df__bcast *bc) {
    int r = DF__MAX(ra, rb);
    int64_t stride_a = 1, stride_b = 1;
    bc->rank = r;
    for (int i = r - 1; i >= 0; i--) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
        if (x == y) bc->dims[i] = x;
        else if (x == 1) bc->dims[i] = y;
        else if (y == 1) bc->dims[i] = x;
        else if (x == -1 || y == -1) bc->dims[i] = x == -1 ? (y == 1 ? -1 : y) : x;
        else return 0;
        bc->sa[i] = (x == 1 && bc->dims[i] != 1) ? 0 : stride_a;
        bc->sb[i] = (y == 1 && bc->dims[i] != 1) ? 0 : stride_b;
        stride_a *= x < 0 ? 1 : x;
        stride_b *= y < 0 ? 1 : y;
    }
    return 1;
}

DF_PRIVATE const char *df__dims_str(int rank, const int64_t *dims, char *buf, size_t n) {
    df__shape_str(rank, dims, buf, n);
    return buf;
}

DF_PRIVATE df_code df__sf_same(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++)
        *df__sc_out(c, i) = c->node->n_inputs ? c->in_shapes[0] : df__shape_unknown();
    return DF_OK;
}
DF_PRIVATE df_code df__sf_scalar(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = df__shape_scalar();
    return DF_OK;
}
DF_PRIVATE df_code df__sf_binary(df__shape_ctx *c) {
    const df__shape *a = &c->in_shapes[0], *b = &c->in_shapes[1];
    if (a->rank < 0 || b->rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    df__bcast bc;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                        df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96),
                        c->node->op->name);
    }
    df__shape *o = df__sc_out(c, 0);
    o->rank = bc.rank;
    memcpy(o->dims, bc.dims, sizeof bc.dims);
    return DF_OK;
}
