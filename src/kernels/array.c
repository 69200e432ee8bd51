/* ==========================================================================================
   src/kernels/array.c: CPU kernels: shapes, slices, gathers                          >>array
   Reshape, ExpandDims, Squeeze, Transpose, Fill and their shape functions; ConcatV2, Pack
   and Unpack; Slice, StridedSlice and Tile, which all reduce to one strided copy; GatherV2
   and OneHot. Every index and size read from a tensor is checked before it is used.
   ========================================================================================== */
static df_code df__reshape_dims(const df_node *n, int64_t in_count, const df_tensor *shape, df__shape *out,
                                int in_known, df_status *st) {
    if (!df__is_int_tensor(shape) || shape->rank > 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "shape must be a 1-D int32/int64 tensor");
    if (shape->n > DF_MAX_RANK)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Reshape to rank %lld exceeds the maximum %d", (long long)shape->n, DF_MAX_RANK);
    int unknown = -1;
    int64_t product = 1;
    out->rank = (int)shape->n;
    for (int i = 0; i < out->rank; i++) {
        int64_t d = df__int_at(shape, i);
        out->dims[i] = d;
        if (d == -1) {
            if (unknown >= 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Only one input size may be -1, not both %d and %d", unknown, i);
            unknown = i;
        } else if (d < 0) {
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Size %d must be non-negative, not %lld", i, (long long)d);
        } else {
            if (d && product > INT64_MAX / d) return df__fail(st, n, DF_INVALID_ARGUMENT, "Reshape: shape has too many elements");
            product *= d;
        }
    }
    if (!in_known) return DF_OK;
    if (unknown >= 0) {
        if (product == 0 || in_count % product != 0)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, but the "
                            "requested shape cannot hold them (product of known dims %lld)", (long long)in_count, (long long)product);
        out->dims[unknown] = in_count / product;
    } else if (product != in_count) {
        char s[128];
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, but the "
                        "requested shape has %lld (shape %s)", (long long)in_count, (long long)product,
                        df__dims_str(out->rank, out->dims, s, sizeof s));
    }
    return DF_OK;
}
DF_PRIVATE int64_t df__shape_count(const df__shape *s) {
    if (s->rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] < 0) return -1;
    for (int i = 0; i < s->rank; i++) {
        if (!s->dims[i]) return 0;
        if (n > INT64_MAX / s->dims[i]) n = INT64_MAX;        /* (no node's shape gets here: see df_op_finish) */
        else n *= s->dims[i];
    }
    return n;
}
DF_PRIVATE df_code df__sf_reshape(df__shape_ctx *c) {
    const df_tensor *shape = df__sc_const(c, 1);
    if (!shape) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    int64_t count = df__shape_count(&c->in_shapes[0]);
    return df__reshape_dims(c->node, count, shape, df__sc_out(c, 0), count >= 0, c->st);
}
DF_PRIVATE void df__k_reshape(df__kctx *c) {
    df__shape s;
    if (df__reshape_dims(c->node, c->in[0]->n, c->in[1], &s, 1, c->st)) return;
    c->out[0] = df__tensor_view(c->in[0], s.rank, s.dims, c->st);
}

static df_code df__perm(const df_node *n, const df_tensor *perm, int rank, int *p, df_status *st) {
    if (!df__is_int_tensor(perm) || perm->rank != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "perm must be a 1-D int32/int64 tensor");
    if (perm->n != rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "transpose expects a vector of size %d. But input(1) is a vector of size %lld", rank, (long long)perm->n);
    unsigned seen = 0;
    for (int i = 0; i < rank; i++) {
        int64_t v = df__int_at(perm, i);
        if (v < 0 || v >= rank) return df__fail(st, n, DF_INVALID_ARGUMENT, "%lld is out of range [0 .. %d)", (long long)v, rank);
        if (seen & (1u << v)) return df__fail(st, n, DF_INVALID_ARGUMENT, "%lld is duplicated in perm: not a permutation", (long long)v);
        seen |= 1u << v;
        p[i] = (int)v;
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_transpose(df__shape_ctx *c) {
    const df_tensor *perm = df__sc_const(c, 1);
    const df__shape *in = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    if (in->rank < 0 || !perm) { *o = df__shape_unknown(); if (perm && perm->rank == 1 && perm->n <= DF_MAX_RANK) { o->rank = (int)perm->n; for (int i = 0; i < o->rank; i++) o->dims[i] = -1; } return DF_OK; }
    int p[DF_MAX_RANK];
    if (df__perm(c->node, perm, in->rank, p, c->st)) return c->st->code;
    o->rank = in->rank;
    for (int i = 0; i < in->rank; i++) o->dims[i] = in->dims[p[i]];
    return DF_OK;
}
DF_PRIVATE void df__k_transpose(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int p[DF_MAX_RANK];
    if (df__perm(c->node, c->in[1], x->rank, p, c->st)) return;
    int64_t dims[DF_MAX_RANK], istride[DF_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) { istride[d] = s; s *= x->dims[d]; }
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[p[i]];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    int64_t idx[DF_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < o->n; i++) {
        memcpy((char *)o->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
        for (int d = x->rank - 1; d >= 0; d--) {
            idx[d]++; off += istride[p[d]];
            if (idx[d] < dims[d]) break;
            off -= istride[p[d]] * idx[d]; idx[d] = 0;
        }
    }
}

static df_code df__expand_dims(const df_node *n, const df__shape *in, const df_tensor *dim, df__shape *o, df_status *st) {
    if (!df__is_int_tensor(dim) || dim->n != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "dim must be a scalar (or single-element) int32/int64 tensor");
    if (in->rank + 1 > DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "ExpandDims: rank would exceed %d", DF_MAX_RANK);
    int64_t d = df__int_at(dim, 0);
    if (d < -in->rank - 1 || d > in->rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Tried to expand dim index %lld for tensor with %d dimensions", (long long)d, in->rank);
    if (d < 0) d += in->rank + 1;
    o->rank = in->rank + 1;
    for (int i = 0, j = 0; i < o->rank; i++) o->dims[i] = i == d ? 1 : in->dims[j++];
    return DF_OK;
}
DF_PRIVATE df_code df__sf_expand_dims(df__shape_ctx *c) {
    const df_tensor *dim = df__sc_const(c, 1);
    if (!dim || c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__expand_dims(c->node, &c->in_shapes[0], dim, df__sc_out(c, 0), c->st);
}
DF_PRIVATE void df__k_expand_dims(df__kctx *c) {
    df__shape in = df__shape_of(c->in[0]), o;
    if (df__expand_dims(c->node, &in, c->in[1], &o, c->st)) return;
    c->out[0] = df__tensor_view(c->in[0], o.rank, o.dims, c->st);
}

static df_code df__squeeze(const df_node *n, const df__shape *in, df__shape *o, df_status *st) {
    const df__attr *a = df__node_attr(n, "squeeze_dims");
    unsigned mask = 0;
    for (int i = 0; a && i < a->u.ints.n; i++) {
        int64_t d = a->u.ints.v[i];
        if (d < -in->rank || d >= in->rank)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Tried to squeeze dim index %lld for tensor with %d dimensions", (long long)d, in->rank);
        if (d < 0) d += in->rank;
        if (in->dims[d] != 1 && in->dims[d] != -1)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Can not squeeze dim[%lld], expected a dimension of 1, got %lld", (long long)d, (long long)in->dims[d]);
        mask |= 1u << d;
    }
    o->rank = 0;
    for (int i = 0; i < in->rank; i++) {
        int drop = mask ? (mask >> i) & 1 : in->dims[i] == 1;
        if (!drop) o->dims[o->rank++] = in->dims[i];
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_squeeze(df__shape_ctx *c) {
    if (c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__squeeze(c->node, &c->in_shapes[0], df__sc_out(c, 0), c->st);
}
DF_PRIVATE void df__k_squeeze(df__kctx *c) {
    df__shape in = df__shape_of(c->in[0]), o;
    if (df__squeeze(c->node, &in, &o, c->st)) return;
    c->out[0] = df__tensor_view(c->in[0], o.rank, o.dims, c->st);
}

DF_PRIVATE df_code df__sf_shape_op(df__shape_ctx *c) {
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1;
    o->dims[0] = c->in_shapes[0].rank;
    return DF_OK;
}
DF_PRIVATE void df__k_shape(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t n = x->rank;
    df_dtype t = df__attr_type(c->node, "out_type");
    df_tensor *o = df__k_alloc(c, 0, t, 1, &n);
    if (!o) return;
    for (int i = 0; i < x->rank; i++) {
        if (t == DF_INT32 && x->dims[i] > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Dimension %d does not fit int32; use out_type int64", i); return; }
        df__set_from_i64(t, o->data, i, x->dims[i]);
    }
}
DF_PRIVATE void df__k_size(df__kctx *c) {
    df_dtype t = df__attr_type(c->node, "out_type");
    if (t == DF_INT32 && c->in[0]->n > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Number of elements does not fit int32; use out_type int64"); return; }
    df_tensor *o = df__k_alloc(c, 0, t, 0, NULL);
    if (o) df__set_from_i64(t, o->data, 0, c->in[0]->n);
}
DF_PRIVATE void df__k_rank(df__kctx *c) {
    df_tensor *o = df__k_alloc(c, 0, DF_INT32, 0, NULL);
    if (o) *(int32_t *)o->data = c->in[0]->rank;
}

DF_PRIVATE df_code df__dims_from(const df_node *n, const df_tensor *t, df__shape *o, const char *what, df_status *st) {
    if (!df__is_int_tensor(t) || t->rank != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "%s must be a 1-D int32/int64 tensor", what);
    if (t->n > DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "%s has rank %lld, above the maximum %d", what, (long long)t->n, DF_MAX_RANK);
    o->rank = (int)t->n;
    int64_t count = 1;
    for (int i = 0; i < o->rank; i++) {
        o->dims[i] = df__int_at(t, i);
        if (o->dims[i] < 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "%s[%d] = %lld must be non-negative", what, i, (long long)o->dims[i]);
        if (o->dims[i] && count > INT64_MAX / o->dims[i]) return df__fail(st, n, DF_INVALID_ARGUMENT, "%s has too many elements", what);
        count *= o->dims[i];
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_fill(df__shape_ctx *c) {
    const df_tensor *d = df__sc_const(c, 0);
    if (c->in_shapes[1].rank > 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "value must be a scalar");
    if (!d) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, d, df__sc_out(c, 0), "dims", c->st);
}
static void df__fill_value(df_tensor *o, const void *v) {
    size_t es = df_dtype_size(o->dtype);
    static const char zeros[16];
    /* zeros (most fills: a gradient's start, a loop's first state): one memset; 4- and 8-byte
       values: a typed loop (the compiler vectorises it), not a memcpy call an element */
    if (es <= sizeof zeros && !memcmp(v, zeros, es)) { memset(o->data, 0, (size_t)o->n * es); return; }
    if (es == 4) {
        uint32_t x, *d = (uint32_t *)o->data;
        memcpy(&x, v, 4);
        for (int64_t i = 0; i < o->n; i++) d[i] = x;
        return;
    }
    if (es == 8) {
        uint64_t x, *d = (uint64_t *)o->data;
        memcpy(&x, v, 8);
        for (int64_t i = 0; i < o->n; i++) d[i] = x;
        return;
    }
    for (int64_t i = 0; i < o->n; i++) memcpy((char *)o->data + (size_t)i * es, v, es);
}
DF_PRIVATE void df__k_fill(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "dims", c->st)) return;
    if (c->in[1]->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "value must be a scalar"); return; }
    df_tensor *o = df__k_alloc(c, 0, c->in[1]->dtype, s.rank, s.dims);
    if (o) df__fill_value(o, c->in[1]->data);
}
DF_PRIVATE void df__k_zeros_like(df__kctx *c) {
    if (c->in[0]->dtype == DF_VARIANT) { df__k_variant_zeros_like(c); return; }   /* lists of zeros */
    df_tensor *o = df__k_alloc_like(c, 0, c->in[0]->dtype, c->in[0]);
    if (!o) return;
    if (c->node->op->code == 0) memset(o->data, 0, o->nbytes);
    else for (int64_t i = 0; i < o->n; i++) {
        if (df__is_integer_type(o->dtype)) df__set_from_i64(o->dtype, o->data, i, 1);
        else df__set_from_f64(o->dtype, o->data, i, 1.0);
    }
}

static df_code df__range_count(const df_node *n, double start, double limit, double delta, int is_int,
                               int64_t *count, df_status *st) {
    if (delta == 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires delta != 0: %g", delta);
    if (delta > 0 && start > limit) return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: %g/%g", start, limit);
    if (delta < 0 && start < limit) return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires start >= limit when delta < 0: %g/%g", start, limit);
    double size = is_int ? ceil(fabs(limit - start) / fabs(delta)) : ceil(fabs((limit - start) / delta));
    if (!(size >= 0) || size > (double)(INT64_MAX / 16))
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires a size that fits int64: %g", size);
    *count = (int64_t)size;
    return DF_OK;
}
DF_PRIVATE df_code df__sf_range(df__shape_ctx *c) {
    const df_tensor *s = df__sc_const(c, 0), *l = df__sc_const(c, 1), *d = df__sc_const(c, 2);
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1; o->dims[0] = -1;
    if (s && l && d && s->n == 1 && l->n == 1 && d->n == 1)
        return df__range_count(c->node, df__get_f64(s->dtype, s->data, 0), df__get_f64(l->dtype, l->data, 0),
                               df__get_f64(d->dtype, d->data, 0), df__is_integer_type(s->dtype), &o->dims[0], c->st);
    return DF_OK;
}
DF_PRIVATE void df__k_range(df__kctx *c) {
    const df_tensor *s = c->in[0], *l = c->in[1], *d = c->in[2];
    if (s->rank || l->rank || d->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "start, limit and delta must be scalars"); return; }
    int is_int = df__is_integer_type(s->dtype);
    int64_t n;
    if (is_int) {
        int64_t a = df__int_at(s, 0), b = df__int_at(l, 0), e = df__int_at(d, 0);
        if (df__range_count(c->node, (double)a, (double)b, (double)e, 1, &n, c->st)) return;
        df_tensor *o = df__k_alloc(c, 0, s->dtype, 1, &n);
        if (o) for (int64_t i = 0; i < n; i++) df__set_from_i64(s->dtype, o->data, i, a + i * e);
    } else {
        double a = df__get_f64(s->dtype, s->data, 0), b = df__get_f64(l->dtype, l->data, 0), e = df__get_f64(d->dtype, d->data, 0);
        if (df__range_count(c->node, a, b, e, 0, &n, c->st)) return;
        df_tensor *o = df__k_alloc(c, 0, s->dtype, 1, &n);
        if (o) for (int64_t i = 0; i < n; i++) df__set_from_f64(s->dtype, o->data, i, a + (double)i * e);
    }
}

/* ---- ConcatV2, Pack, Unpack ---- */
DF_PRIVATE df_code df__sf_concat(df__shape_ctx *c) {
    int n = c->node->n_inputs - 1;
    const df_tensor *axis_t = df__sc_const(c, n);
    df__shape *o = df__sc_out(c, 0);
    int rank = -1;
    for (int i = 0; i < n; i++) {
        if (c->in_shapes[i].rank < 0) continue;
        if (rank >= 0 && c->in_shapes[i].rank != rank)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ConcatOp: Ranks of all input tensors should match: "
                            "shape[0] has rank %d, shape[%d] has rank %d", rank, i, c->in_shapes[i].rank);
        rank = c->in_shapes[i].rank;
    }
    if (rank < 0 || !axis_t) { *o = df__shape_unknown(); if (rank >= 0) { o->rank = rank; for (int d = 0; d < rank; d++) o->dims[d] = -1; } return DF_OK; }
    if (axis_t->n != 1 || !df__is_int_tensor(axis_t)) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "axis must be a scalar int32/int64");
    int64_t ax = df__int_at(axis_t, 0);
    if (ax < -rank || ax >= rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %lld", -rank, rank, (long long)ax);
    if (ax < 0) ax += rank;
    o->rank = rank;
    for (int d = 0; d < rank; d++) o->dims[d] = d == ax ? 0 : -1;
    for (int i = 0; i < n; i++) {
        const df__shape *s = &c->in_shapes[i];
        if (s->rank < 0) { o->dims[ax] = -1; continue; }
        for (int d = 0; d < rank; d++) {
            if (d == ax) { o->dims[d] = (o->dims[d] < 0 || s->dims[d] < 0) ? -1 : o->dims[d] + s->dims[d]; continue; }
            if (o->dims[d] < 0) o->dims[d] = s->dims[d];
            else if (s->dims[d] >= 0 && s->dims[d] != o->dims[d])
                return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ConcatOp : Dimension %d in both shapes must be equal: %lld vs %lld", d, (long long)o->dims[d], (long long)s->dims[d]);
        }
    }
    return DF_OK;
}
DF_PRIVATE void df__k_concat(df__kctx *c) {
    int n = c->n_in - 1;
    const df_tensor *axis_t = c->in[n], *x0 = c->in[0];
    int rank = x0->rank;
    if (!df__is_int_tensor(axis_t) || axis_t->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis must be a scalar int32/int64"); return; }
    int64_t ax = df__int_at(axis_t, 0);
    if (rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Can't concatenate scalars (use tf.stack instead)"); return; }
    if (ax < -rank || ax >= rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %lld", -rank, rank, (long long)ax); return; }
    if (ax < 0) ax += rank;
    int64_t dims[DF_MAX_RANK];
    memcpy(dims, x0->dims, sizeof dims);
    dims[ax] = 0;
    for (int i = 0; i < n; i++) {
        const df_tensor *x = c->in[i];
        if (x->rank != rank || x->dtype != x0->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "ConcatOp : Ranks of all input tensors should match: shape[0] has rank %d, shape[%d] has rank %d", rank, i, x->rank); return; }
        for (int d = 0; d < rank; d++)
            if (d != ax && x->dims[d] != x0->dims[d]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "ConcatOp : Dimension %d in both shapes must be equal: shape[0] = %lld vs. shape[%d] = %lld", d, (long long)x0->dims[d], i, (long long)x->dims[d]); return; }
        dims[ax] += x->dims[ax];
    }
    df_tensor *o = df__k_alloc(c, 0, x0->dtype, rank, dims);
    if (!o || !o->n) return;
    int64_t outer = 1, inner_el = 1;
    for (int d = 0; d < ax; d++) outer *= dims[d];
    for (int d = (int)ax + 1; d < rank; d++) inner_el *= dims[d];
    size_t es = df_dtype_size(x0->dtype);
    char *dst = (char *)o->data;
    for (int64_t r = 0; r < outer; r++)
        for (int i = 0; i < n; i++) {
            size_t chunk = (size_t)(c->in[i]->dims[ax] * inner_el) * es;
            memcpy(dst, (const char *)c->in[i]->data + (size_t)r * chunk, chunk);
            dst += chunk;
        }
}
/* The inputs' static shapes merged, as TensorFlow's shape function merges them: a dimension
   known in one input and unknown (-1) in another is the known one, so partial shapes of one
   value (a loop variable's, [?,?] after an import, beside its [3,0] from outside the loop) are
   not refused; two known dimensions or ranks that differ are. */
DF_PRIVATE df_code df__sf_pack(df__shape_ctx *c) {
    int n = c->node->n_inputs;
    df__shape merged = df__shape_unknown();
    const df__shape *s0 = &merged;
    df__shape *o = df__sc_out(c, 0);
    for (int i = 0; i < n; i++) {
        const df__shape *si = &c->in_shapes[i];
        if (si->rank < 0) continue;
        if (merged.rank < 0) { merged = *si; continue; }
        int ok = merged.rank == si->rank;
        for (int d = 0; ok && d < si->rank; d++) {
            if (merged.dims[d] >= 0 && si->dims[d] >= 0 && merged.dims[d] != si->dims[d]) ok = 0;
            else if (merged.dims[d] < 0) merged.dims[d] = si->dims[d];
        }
        if (!ok) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shapes of all inputs must match: values[0] and values[%d] differ", i);
    }
    if (s0->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    int64_t ax = df__attr_i(c->node, "axis", 0);
    int r = s0->rank + 1;
    if (r > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Pack: rank would exceed %d", DF_MAX_RANK);
    if (ax < -r || ax >= r) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -r, r);
    if (ax < 0) ax += r;
    o->rank = r;
    for (int d = 0, j = 0; d < r; d++) o->dims[d] = d == ax ? n : s0->dims[j++];
    return DF_OK;
}
DF_PRIVATE void df__k_pack(df__kctx *c) {
    const df_tensor *x0 = c->in[0];
    int n = c->n_in, r = x0->rank + 1;
    int64_t ax = df__attr_i(c->node, "axis", 0);
    if (r > DF_MAX_RANK || ax < -r || ax >= r) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -r, r); return; }
    if (ax < 0) ax += r;
    for (int i = 1; i < n; i++) {
        df__shape a = df__shape_of(x0), b = df__shape_of(c->in[i]);
        if (!df__shapes_equal(&a, &b)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shapes of all inputs must match: values[0] and values[%d] differ", i); return; }
    }
    int64_t dims[DF_MAX_RANK];
    for (int d = 0, j = 0; d < r; d++) dims[d] = d == ax ? n : x0->dims[j++];
    df_tensor *o = df__k_alloc(c, 0, x0->dtype, r, dims);
    if (!o || !o->n) return;
    int64_t outer = 1;
    for (int d = 0; d < ax; d++) outer *= dims[d];
    size_t chunk = (size_t)(x0->n / DF__MAX(outer, 1)) * df_dtype_size(x0->dtype);
    char *dst = (char *)o->data;
    for (int64_t q = 0; q < outer; q++)
        for (int i = 0; i < n; i++) { memcpy(dst, (const char *)c->in[i]->data + (size_t)q * chunk, chunk); dst += chunk; }
    if (o->dtype == DF_VARIANT) df__variant_retain_buffer(o);     /* a vector of lists: each payload shared */
}
DF_PRIVATE df_code df__sf_unpack(df__shape_ctx *c) {
    const df__shape *s = &c->in_shapes[0];
    int64_t num = df__attr_i(c->node, "num", 0), ax = df__attr_i(c->node, "axis", 0);
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = df__shape_unknown();
    if (s->rank < 0) return DF_OK;
    if (ax < -s->rank || ax >= s->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -s->rank, s->rank);
    if (ax < 0) ax += s->rank;
    if (s->dims[ax] >= 0 && s->dims[ax] != num) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Dimension must be %lld but is %lld", (long long)num, (long long)s->dims[ax]);
    for (int i = 0; i < c->node->n_outputs; i++) df__reduced_shape(s->rank, s->dims, 1u << ax, 0, df__sc_out(c, i));
    return DF_OK;
}
DF_PRIVATE void df__k_unpack(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t ax = df__attr_i(c->node, "axis", 0), num = c->n_out;
    if (ax < -x->rank || ax >= x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -x->rank, x->rank); return; }
    if (ax < 0) ax += x->rank;
    if (x->dims[ax] != num) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input shape axis %lld must equal %lld, got %lld", (long long)ax, (long long)num, (long long)x->dims[ax]); return; }
    df__shape os;
    df__reduced_shape(x->rank, x->dims, 1u << ax, 0, &os);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) outer *= x->dims[d];
    for (int d = (int)ax + 1; d < x->rank; d++) inner *= x->dims[d];
    size_t es = df_dtype_size(x->dtype);
    for (int64_t i = 0; i < num; i++) {
        df_tensor *o = df__k_alloc(c, (int)i, x->dtype, os.rank, os.dims);
        if (!o) return;
#ifdef DATAFLOW_CUDA
        if (c->gpu) {                /* one strided copy per output, queued */
            int64_t dims[2] = {outer, inner}, ss[2] = {num * inner, 1}, ds[2] = {inner, 1};
            if (o->n && df_cuda_strided_copy((df_cuda *)c->gpu, es, 2, dims, (const char *)x->data + (size_t)(i * inner) * es, ss,
                                             o->data, ds, c->st)) return;
            continue;
        }
#endif
        for (int64_t q = 0; q < outer && inner; q++)
            memcpy((char *)o->data + (size_t)(q * inner) * es, (const char *)x->data + (size_t)((q * num + i) * inner) * es, (size_t)inner * es);
    }
}

/* ---- Slice, StridedSlice, Tile: all reduce to a strided copy ---- */
/* Copies the strided region of x (begin, step, odims per dim) to the dense o, or, when
   `scatter`, the dense o into that region of x. */
DF_PRIVATE void df__strided_move(df_tensor *x, df_tensor *o, const int64_t *begin, const int64_t *step,
                             const int64_t *odims, int rank, int scatter) {
    size_t es = df_dtype_size(x->dtype);
    int64_t istride[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, off = 0;
    for (int d = x->rank - 1; d >= 0; d--) { istride[d] = s; s *= x->dims[d]; }
    for (int d = 0; d < rank; d++) off += begin[d] * istride[d];
#ifdef DATAFLOW_CUDA
    df_cuda *gpu = df__tensor_gpu(x);
    if (gpu) {                                   /* on a GPU: one strided copy, queued */
        int64_t xs[DF_MAX_RANK], os[DF_MAX_RANK], one = 1, zero = 0, so = 1;
        for (int d = rank - 1; d >= 0; d--) { xs[d] = step[d] * istride[d]; os[d] = so; so *= odims[d]; }
        char *full = (char *)x->data + off * (int64_t)es;
        df_status st;
        if (rank == 0) df_cuda_strided_copy(gpu, es, 1, &one, scatter ? o->data : full, &zero,
                                            scatter ? full : o->data, &zero, &st);
        else df_cuda_strided_copy(gpu, es, rank, odims, scatter ? o->data : full, scatter ? os : xs,
                                  scatter ? full : o->data, scatter ? xs : os, &st);
        return;
    }
#endif
    for (int64_t i = 0; i < o->n; i++) {
        char *full = (char *)x->data + (size_t)off * es, *flat = (char *)o->data + (size_t)i * es;
        if (scatter) memcpy(full, flat, es); else memcpy(flat, full, es);
        for (int d = rank - 1; d >= 0; d--) {
            idx[d]++; off += step[d] * istride[d];
            if (idx[d] < odims[d]) break;
            off -= step[d] * istride[d] * idx[d]; idx[d] = 0;
        }
    }
}
static void df__strided_copy(const df_tensor *x, df_tensor *o, const int64_t *begin, const int64_t *step,
                             const int64_t *odims, int rank) {
    df__strided_move((df_tensor *)x, o, begin, step, odims, rank, 0);
}
static df_code df__slice_args(const df_node *n, const df_tensor *x, const df_tensor *b, const df_tensor *sz,
                              int64_t *begin, int64_t *size, df_status *st) {
    if (!df__is_int_tensor(b) || !df__is_int_tensor(sz) || b->rank != 1 || sz->rank != 1 || b->n != x->rank || sz->n != x->rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected begin and size arguments to be 1-D tensors of size %d", x->rank);
    for (int d = 0; d < x->rank; d++) {
        begin[d] = df__int_at(b, d);
        size[d] = df__int_at(sz, d);
        if (size[d] == -1) size[d] = x->dims[d] - begin[d];
        if (begin[d] < 0 || size[d] < 0 || begin[d] > x->dims[d] || size[d] > x->dims[d] - begin[d])
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected begin[%d] in [0, %lld] and size[%d] in [0, %lld], "
                            "but got %lld and %lld", d, (long long)x->dims[d], d, (long long)(x->dims[d] - begin[d]),
                            (long long)begin[d], (long long)size[d]);
    }
    return DF_OK;
}
/* A stand-in tensor carrying only a static shape, for sharing shape logic with kernels. */
static int df__static_tensor(const df__shape *s, df_tensor *t) {
    if (s->rank < 0) return 0;
    memset(t, 0, sizeof *t);
    t->rank = s->rank;
    for (int i = 0; i < s->rank; i++) { if (s->dims[i] < 0) return 0; t->dims[i] = s->dims[i]; }
    return 1;
}
DF_PRIVATE df_code df__sf_slice(df__shape_ctx *c) {
    const df_tensor *b = df__sc_const(c, 1), *sz = df__sc_const(c, 2);
    df__shape *o = df__sc_out(c, 0);
    df_tensor x;
    *o = df__shape_unknown();
    if (b && sz && df__static_tensor(&c->in_shapes[0], &x)) {
        int64_t begin[DF_MAX_RANK], size[DF_MAX_RANK];
        if (df__slice_args(c->node, &x, b, sz, begin, size, c->st)) return c->st->code;
        o->rank = x.rank;
        memcpy(o->dims, size, (size_t)x.rank * 8);
        return DF_OK;
    }
    if (sz && df__is_int_tensor(sz) && sz->rank == 1 && sz->n <= DF_MAX_RANK) {
        o->rank = (int)sz->n;
        for (int d = 0; d < o->rank; d++) {
            int64_t v = df__int_at(sz, d);
            if (v < -1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "size[%d] = %lld must be >= -1", d, (long long)v);
            o->dims[d] = v;
        }
    }
    return DF_OK;
}
DF_PRIVATE void df__k_slice(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t begin[DF_MAX_RANK], size[DF_MAX_RANK], step[DF_MAX_RANK];
    if (df__slice_args(c->node, x, c->in[1], c->in[2], begin, size, c->st)) return;
    for (int d = 0; d < x->rank; d++) step[d] = 1;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, size);
    if (o && o->n) df__strided_copy(x, o, begin, step, size, x->rank);
}
/* StridedSlice: begin/end masks, shrink_axis_mask, ellipsis_mask and new_axis_mask, negative
   indices and strides. The sparse spec is expanded to one entry per input dimension; the final
   shape then adds the new axes and drops the shrunk ones. */
DF_PRIVATE df_code df__strided_args(const df_node *n, const df_tensor *x, const df_tensor *bt, const df_tensor *et,
                                const df_tensor *stt, int64_t *begin, int64_t *step, int64_t *odims,
                                df__shape *final, df_status *st) {
    if (!df__is_int_tensor(bt) || !df__is_int_tensor(et) || !df__is_int_tensor(stt) || bt->rank != 1 ||
        bt->n != et->n || bt->n != stt->n || bt->n > 32)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "begin, end and strides must be 1-D of equal length (at most 32)");
    int64_t bm = df__attr_i(n, "begin_mask", 0), em = df__attr_i(n, "end_mask", 0), sm = df__attr_i(n, "shrink_axis_mask", 0);
    int64_t ell = df__attr_i(n, "ellipsis_mask", 0), nam = df__attr_i(n, "new_axis_mask", 0);
    int sparse = (int)bt->n, full = 0, saw_ellipsis = 0;
    if (ell & (ell - 1)) return df__fail(st, n, DF_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");
    final->rank = 0;
    for (int k = 0; k <= sparse; k++) {
        int implicit_tail = k == sparse;
        if (implicit_tail || (ell >> k & 1)) {
            if (implicit_tail && saw_ellipsis) break;
            int later = 0;                     /* input dims the entries after the ellipsis consume */
            for (int j = k + 1; !implicit_tail && j < sparse; j++) if (!(nam >> j & 1)) later++;
            int upto = implicit_tail ? x->rank : x->rank - later;
            if (upto < full) return df__fail(st, n, DF_INVALID_ARGUMENT, "Index out of range using input dim %d; input has only %d dims", full, x->rank);
            for (; full < upto; full++) {
                if (final->rank >= DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "StridedSlice: result rank too large");
                begin[full] = 0; step[full] = 1; odims[full] = x->dims[full];
                final->dims[final->rank++] = x->dims[full];
            }
            saw_ellipsis = !implicit_tail;
            continue;
        }
        if (nam >> k & 1) {
            if (final->rank >= DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "StridedSlice: result rank too large");
            final->dims[final->rank++] = 1;
            continue;
        }
        if (full >= x->rank) return df__fail(st, n, DF_INVALID_ARGUMENT, "Index out of range using input dim %d; input has only %d dims", full, x->rank);
        int64_t dim = x->dims[full], s = df__int_at(stt, k), b = df__int_at(bt, k), e = df__int_at(et, k);
        if (s == 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "strides[%d] must be non-zero", k);
        if (sm >> k & 1) {
            if (b < 0) b += dim;
            if (b < 0 || b >= dim) return df__fail(st, n, DF_INVALID_ARGUMENT, "slice index %lld of dimension %d out of bounds.", (long long)df__int_at(bt, k), full);
            begin[full] = b; step[full] = 1; odims[full] = 1;
            full++;
            continue;
        }
        int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
        if (bm >> k & 1) b = s > 0 ? lo : hi;
        else { if (b < 0) b += dim; b = b < lo ? lo : b > hi ? hi : b; }
        if (em >> k & 1) e = s > 0 ? hi : lo;
        else { if (e < 0) e += dim; e = e < lo ? lo : e > hi ? hi : e; }
        int64_t len = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e + (-s) - 1) / (-s) : 0);
        begin[full] = len ? b : 0; step[full] = s; odims[full] = len;
        if (final->rank >= DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "StridedSlice: result rank too large");
        final->dims[final->rank++] = len;
        full++;
    }
    return DF_OK;
}
DF_PRIVATE void df__k_strided_slice(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK], odims[DF_MAX_RANK];
    df__shape fin;
    if (df__strided_args(c->node, x, c->in[1], c->in[2], c->in[3], begin, step, odims, &fin, c->st)) return;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, fin.rank, fin.dims);
    if (o && o->n) df__strided_copy(x, o, begin, step, odims, x->rank);
}
DF_PRIVATE df_code df__sf_strided_slice(df__shape_ctx *c) {
    const df_tensor *b = df__sc_const(c, 1), *e = df__sc_const(c, 2), *stt = df__sc_const(c, 3);
    df_tensor x;
    *df__sc_out(c, 0) = df__shape_unknown();
    if (stt && df__is_int_tensor(stt))
        for (int64_t i = 0; i < stt->n; i++)
            if (df__int_at(stt, i) == 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "strides[%lld] must be non-zero", (long long)i);
    if (b && e && stt && df__static_tensor(&c->in_shapes[0], &x)) {
        int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK], odims[DF_MAX_RANK];
        return df__strided_args(c->node, &x, b, e, stt, begin, step, odims, df__sc_out(c, 0), c->st);
    }
    return DF_OK;
}
static df_code df__tile_dims(const df_node *n, const df__shape *in, const df_tensor *m, df__shape *o, df_status *st) {
    if (!df__is_int_tensor(m) || m->rank != 1 || m->n != in->rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected multiples argument to be a vector of length %d", in->rank);
    o->rank = in->rank;
    for (int d = 0; d < in->rank; d++) {
        int64_t k = df__int_at(m, d);
        if (k < 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", d, (long long)k);
        if (in->dims[d] < 0) { o->dims[d] = -1; continue; }
        if (k && in->dims[d] > INT64_MAX / k) return df__fail(st, n, DF_INVALID_ARGUMENT, "Tile: output too large");
        o->dims[d] = in->dims[d] * k;
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_tile(df__shape_ctx *c) {
    const df_tensor *m = df__sc_const(c, 1);
    if (!m || c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__tile_dims(c->node, &c->in_shapes[0], m, df__sc_out(c, 0), c->st);
}
DF_PRIVATE void df__k_tile(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__shape in = df__shape_of(x), os;
    if (df__tile_dims(c->node, &in, c->in[1], &os, c->st)) return;
    int64_t n = 1;
    for (int d = 0; d < os.rank; d++) {
        if (os.dims[d] && n > INT64_MAX / os.dims[d]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tile: output too large"); return; }
        n *= os.dims[d];
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    int64_t idx[DF_MAX_RANK] = {0}, istride[DF_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) { istride[d] = s; s *= x->dims[d]; }
    for (int64_t i = 0; i < o->n; i++) {
        int64_t off = 0;
        for (int d = 0; d < x->rank; d++) off += (idx[d] % x->dims[d]) * istride[d];
        memcpy((char *)o->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
        for (int d = os.rank - 1; d >= 0; d--) { if (++idx[d] < os.dims[d]) break; idx[d] = 0; }
    }
}

/* ---- GatherV2, OneHot ---- */
DF_PRIVATE df_code df__gather_axis(const df_node *n, const df_tensor *axis_t, int rank, int *axis, df_status *st) {
    if (!df__is_int_tensor(axis_t) || axis_t->n != 1) return df__fail(st, n, DF_INVALID_ARGUMENT, "axis must be a scalar int32/int64");
    int64_t a = df__int_at(axis_t, 0);
    if (a < -rank || a >= rank) return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld", -rank, rank, (long long)a);
    *axis = (int)(a < 0 ? a + rank : a);
    return DF_OK;
}
/* batch_dims made non-negative and checked as TF does: within [-rank(indices), rank(indices)],
   at most the axis, and params and indices agree on the batch dims (-1, an unknown static dim,
   agrees with anything). */
DF_PRIVATE df_code df__gather_batch_dims(const df_node *n, const int64_t *p_dims, int ix_rank, const int64_t *ix_dims, int axis,
                                     int *batch_dims, df_status *st) {
    int64_t b = df__attr_i(n, "batch_dims", 0);
    if (b < -ix_rank || b > ix_rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected batch_dims in the range [%d, %d], but got %lld", -ix_rank, ix_rank, (long long)b);
    if (b < 0) b += ix_rank;
    if (b > axis) return df__fail(st, n, DF_INVALID_ARGUMENT, "batch_dims (%lld) must be less than or equal to axis (%d)", (long long)b, axis);
    for (int d = 0; d < b; d++)
        if (p_dims[d] >= 0 && ix_dims[d] >= 0 && p_dims[d] != ix_dims[d])
            return df__fail(st, n, DF_INVALID_ARGUMENT, "params.shape[%d]: %lld should be equal to indices.shape[%d]: %lld (batch_dims %lld)",
                            d, (long long)p_dims[d], d, (long long)ix_dims[d], (long long)b);
    *batch_dims = (int)b;
    return DF_OK;
}
DF_PRIVATE df_code df__sf_gather(df__shape_ctx *c) {
    const df_tensor *ax = df__sc_const(c, 2);
    const df__shape *p = &c->in_shapes[0], *ix = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (!ax || p->rank < 0 || ix->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    int axis, batch;
    if (df__gather_axis(c->node, ax, p->rank, &axis, c->st)) return c->st->code;
    if (df__gather_batch_dims(c->node, p->dims, ix->rank, ix->dims, axis, &batch, c->st)) return c->st->code;
    if (p->rank - 1 + ix->rank - batch > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Gather: result rank too large");
    o->rank = 0;
    for (int d = 0; d < axis; d++) o->dims[o->rank++] = d < batch && p->dims[d] < 0 ? ix->dims[d] : p->dims[d];
    for (int d = batch; d < ix->rank; d++) o->dims[o->rank++] = ix->dims[d];
    for (int d = axis + 1; d < p->rank; d++) o->dims[o->rank++] = p->dims[d];
    return DF_OK;
}
/* With batch_dims b: out[i_0..i_b-1, mid.., j.., tail..] = params[i_0..i_b-1, mid.., indices[i_0..i_b-1, j..], tail..]. */
DF_PRIVATE void df__k_gather(df__kctx *c) {
    const df_tensor *p = c->in[0], *ix = c->in[1];
    int axis, batch;
    if (df__gather_axis(c->node, c->in[2], p->rank, &axis, c->st)) return;
    if (df__gather_batch_dims(c->node, p->dims, ix->rank, ix->dims, axis, &batch, c->st)) return;
    if (p->rank - 1 + ix->rank - batch > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Gather: result rank too large"); return; }
    int64_t dims[DF_MAX_RANK];
    int r = 0;
    for (int d = 0; d < axis; d++) dims[r++] = p->dims[d];
    for (int d = batch; d < ix->rank; d++) dims[r++] = ix->dims[d];
    for (int d = axis + 1; d < p->rank; d++) dims[r++] = p->dims[d];
    int64_t limit = p->dims[axis];
    for (int64_t i = 0; i < ix->n; i++) {
        int64_t v = df__int_at(ix, i);
        if (v < 0 || v >= limit) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices[%lld] = %lld is not in [0, %lld)", (long long)i, (long long)v, (long long)limit); return; }
    }
    df_tensor *o = df__k_alloc(c, 0, p->dtype, r, dims);
    if (!o || !o->n) return;
    int64_t n_batch = 1, outer = 1, inner = 1, per_batch = 1;
    for (int d = 0; d < batch; d++) n_batch *= p->dims[d];
    for (int d = batch; d < axis; d++) outer *= p->dims[d];
    for (int d = axis + 1; d < p->rank; d++) inner *= p->dims[d];
    for (int d = batch; d < ix->rank; d++) per_batch *= ix->dims[d];
    size_t chunk = (size_t)inner * df_dtype_size(p->dtype);
    char *dst = (char *)o->data;
    for (int64_t bt = 0; bt < n_batch; bt++)
        for (int64_t q = 0; q < outer; q++)
            for (int64_t i = 0; i < per_batch; i++) {
                memcpy(dst, (const char *)p->data + (size_t)((bt * outer + q) * limit + df__int_at(ix, bt * per_batch + i)) * chunk, chunk);
                dst += chunk;
            }
}
DF_PRIVATE df_code df__sf_one_hot(df__shape_ctx *c) {
    const df_tensor *depth = df__sc_const(c, 1);
    const df__shape *ix = &c->in_shapes[0];
    int64_t axis = df__attr_i(c->node, "axis", -1), d = -1;
    df__shape *o = df__sc_out(c, 0);
    if (depth) {
        if (depth->n != 1 || !df__is_int_tensor(depth)) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "depth must be a scalar int32");
        d = df__int_at(depth, 0);
        if (d < 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "depth must be non-negative, got: %lld", (long long)d);
    }
    if (ix->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (axis < -1 || axis > ix->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d).  But received: %lld", ix->rank + 1, (long long)axis);
    if (ix->rank + 1 > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "OneHot: rank too large");
    if (axis == -1) axis = ix->rank;
    o->rank = ix->rank + 1;
    for (int i = 0, j = 0; i < o->rank; i++) o->dims[i] = i == axis ? d : ix->dims[j++];
    return DF_OK;
}
/* OneHot's checks and output (NULL: failed, or nothing to write): [outer, depth, inner]. */
DF_PRIVATE df_tensor *df__one_hot_prep(df__kctx *c, int64_t *outer, int64_t *depth, int64_t *inner) {
    const df_tensor *ix = c->in[0], *dt = c->in[1], *on = c->in[2], *off = c->in[3];
    if (dt->n != 1 || on->n != 1 || off->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "depth, on_value and off_value must be scalars"); return NULL; }
    int64_t d = df__int_at(dt, 0), axis = df__attr_i(c->node, "axis", -1);
    if (d < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "depth must be non-negative, got: %lld", (long long)d); return NULL; }
    if (axis < -1 || axis > ix->rank || ix->rank + 1 > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d)", ix->rank + 1); return NULL; }
    if (axis == -1) axis = ix->rank;
    int64_t dims[DF_MAX_RANK];
    for (int i = 0, j = 0; i < ix->rank + 1; i++) dims[i] = i == axis ? d : ix->dims[j++];
    df_tensor *o = df__k_alloc(c, 0, on->dtype, ix->rank + 1, dims);
    if (!o || !o->n) return NULL;
    *outer = 1; *inner = 1; *depth = d;
    for (int i = 0; i < axis; i++) *outer *= ix->dims[i];
    for (int i = (int)axis; i < ix->rank; i++) *inner *= ix->dims[i];
    return o;
}
DF_PRIVATE void df__k_one_hot(df__kctx *c) {
    const df_tensor *ix = c->in[0], *on = c->in[2], *off = c->in[3];
    int64_t outer, d, inner;
    df_tensor *o = df__one_hot_prep(c, &outer, &d, &inner);
    if (!o) return;
    size_t es = df_dtype_size(on->dtype);
    for (int64_t q = 0; q < outer; q++)
        for (int64_t k = 0; k < d; k++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t v = df__int_at(ix, q * inner + j);
                memcpy((char *)o->data + (size_t)((q * d + k) * inner + j) * es, v == k ? on->data : off->data, es);
            }
}
