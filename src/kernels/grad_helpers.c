/* ==========================================================================================
   src/kernels/grad_helpers.c: CPU kernels: plumbing shapes, gradient helpers   >>gradhelpers
   Shape functions of Const, Placeholder and the other plumbing ops; the helper ops gradients
   are built from, under TensorFlow's names (StridedSliceGrad, BroadcastGradientArgs,
   UnsortedSegmentSum, Pad, BroadcastTo, ConcatOffset).
   ========================================================================================== */
DF_PRIVATE df_code df__sf_const(df__shape_ctx *c) {
    const df__attr *v = df__node_attr(c->node, "value");
    if (!v->u.tensor) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Const needs a value tensor");
    if (v->u.tensor->dtype != df__attr_type(c->node, "dtype"))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Const: the value's dtype %s does not match attr dtype %s",
                        df_dtype_name(v->u.tensor->dtype), df_dtype_name(df__attr_type(c->node, "dtype")));
    c->node->out_types[0] = v->u.tensor->dtype;
    *df__sc_out(c, 0) = df__shape_of(v->u.tensor);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_placeholder(df__shape_ctx *c) {
    const df__attr *s = df__node_attr(c->node, "shape");
    df__shape *o = df__sc_out(c, 0);
    o->rank = s->u.shape.rank;
    for (int i = 0; i < o->rank; i++) {
        if (s->u.shape.dims[i] < -1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Dimension %d of the shape is %lld; "
                                                   "dims must be >= 0 or -1 (unknown)", i, (long long)s->u.shape.dims[i]);
        o->dims[i] = s->u.shape.dims[i];
    }
    if (c->node->n_inputs) {   /* PlaceholderWithDefault: the default must fit the shape */
        const df__shape *in = &c->in_shapes[0];
        if (o->rank >= 0 && in->rank >= 0) {
            int ok = in->rank == o->rank;
            for (int i = 0; ok && i < o->rank; i++) if (o->dims[i] >= 0 && in->dims[i] >= 0 && o->dims[i] != in->dims[i]) ok = 0;
            if (!ok) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "PlaceholderWithDefault: the default's shape does not match attr shape");
        }
        if (o->rank < 0) *o = *in;
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_switch(df__shape_ctx *c) {
    const df__shape *p = &c->in_shapes[1];
    if (p->rank > 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "The predicate of Switch must be a scalar, got rank %d", p->rank);
    *df__sc_out(c, 0) = *df__sc_out(c, 1) = c->in_shapes[0];
    return DF_OK;
}
DF_PRIVATE df_code df__sf_merge(df__shape_ctx *c) {
    df__shape s = c->in_shapes[0];
    for (int i = 1; i < c->node->n_inputs; i++)
        if (!df__shapes_equal(&s, &c->in_shapes[i])) s = df__shape_relax(&s, &c->in_shapes[i]);
    *df__sc_out(c, 0) = s;
    *df__sc_out(c, 1) = df__shape_scalar();
    return DF_OK;
}
DF_PRIVATE df_code df__sf_loop_cond(df__shape_ctx *c) {
    if (c->in_shapes[0].rank > 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "LoopCond's input must be a scalar bool, got rank %d", c->in_shapes[0].rank);
    *df__sc_out(c, 0) = df__shape_scalar();
    return DF_OK;
}
DF_PRIVATE df_code df__sf_enter(df__shape_ctx *c) {
    if (!*df__attr_s(c->node, "frame_name"))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Enter needs a non-empty frame_name");
    if (df__attr_i(c->node, "parallel_iterations", 10) < 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "parallel_iterations must be positive");
    return df__sf_same(c);
}
DF_PRIVATE df_code df__sf_identity_n(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = c->in_shapes[i];
    return DF_OK;
}

/* ---- Gradient helper ops (TensorFlow's names) ---- */
/* StridedSliceGrad and Pad: the strided copy the other way, into a zeroed full tensor. */
static void df__strided_scatter(df_tensor *x, const df_tensor *o, const int64_t *begin, const int64_t *step,
                                const int64_t *odims, int rank) {
    df__strided_move(x, (df_tensor *)o, begin, step, odims, rank, 1);
}
DF_PRIVATE df_code df__sf_shape_input(df__shape_ctx *c) {      /* output shaped by the const input 0 */
    const df_tensor *s = df__sc_const(c, 0);
    if (!s) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, s, df__sc_out(c, 0), "shape", c->st);
}
DF_PRIVATE void df__k_strided_slice_grad(df__kctx *c) {
    df__shape xs;
    if (df__dims_from(c->node, c->in[0], &xs, "shape", c->st)) return;
    const df_tensor *dy = c->in[4];
    df_tensor x;
    memset(&x, 0, sizeof x);
    x.rank = xs.rank;
    memcpy(x.dims, xs.dims, sizeof xs.dims);
    int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK], odims[DF_MAX_RANK], n = 1;
    df__shape fin;
    if (df__strided_args(c->node, &x, c->in[1], c->in[2], c->in[3], begin, step, odims, &fin, c->st)) return;
    for (int d = 0; d < fin.rank; d++) n *= fin.dims[d];
    if (n != dy->n) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "StridedSliceGrad: dy has %lld elements, the slice %lld", (long long)dy->n, (long long)n); return; }
    df_tensor *o = df__k_alloc(c, 0, dy->dtype, xs.rank, xs.dims);
    if (!o || df__zero_data(o, c->st)) return;
    if (o->n && dy->n) df__strided_scatter(o, dy, begin, step, odims, xs.rank);
}

/* BroadcastGradientArgs: the axes each input was broadcast along. */
DF_PRIVATE void df__k_bcast_grad_args(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    if (a->rank != 1 || b->rank != 1 || a->n > DF_MAX_RANK || b->n > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BroadcastGradientArgs: shapes must be vectors of at most %d", DF_MAX_RANK); return; }
    int r = (int)DF__MAX(a->n, b->n);
    int64_t ra[DF_MAX_RANK], rb[DF_MAX_RANK];
    int na = 0, nb = 0;
    for (int d = 0; d < r; d++) {
        int64_t da = d - (r - (int)a->n) >= 0 ? df__int_at(a, d - (r - (int)a->n)) : 1;
        int64_t db = d - (r - (int)b->n) >= 0 ? df__int_at(b, d - (r - (int)b->n)) : 1;
        if (da != db && da != 1 && db != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes in BroadcastGradientArgs at axis %d: %lld vs %lld", d, (long long)da, (long long)db); return; }
        /* an axis is reduced for an input that lacks it, or has 1 where the other does not */
        int ha = d >= r - (int)a->n, hb = d >= r - (int)b->n;
        if (!ha || (da == 1 && db != 1)) ra[na++] = d;
        if (!hb || (db == 1 && da != 1)) rb[nb++] = d;
    }
    int64_t da_ = na, db_ = nb;
    df_tensor *oa = df__k_alloc(c, 0, a->dtype, 1, &da_), *ob = oa ? df__k_alloc(c, 1, a->dtype, 1, &db_) : NULL;
    if (!ob) return;
    for (int i = 0; i < na; i++) df__set_from_i64(a->dtype, oa->data, i, ra[i]);
    for (int i = 0; i < nb; i++) df__set_from_i64(a->dtype, ob->data, i, rb[i]);
}
DF_PRIVATE df_code df__sf_bcast_grad_args(df__shape_ctx *c) {
    df__sc_out(c, 0)->rank = 1; df__sc_out(c, 0)->dims[0] = -1;
    df__sc_out(c, 1)->rank = 1; df__sc_out(c, 1)->dims[0] = -1;
    return DF_OK;
}

/* UnsortedSegmentSum: out[ids[i], ...] += data[i, ...]; ids outside [0, n) are dropped, as in TF. */
DF_PRIVATE df_code df__sf_segment_sum(df__shape_ctx *c) {
    const df__shape *d = &c->in_shapes[0], *ix = &c->in_shapes[1];
    const df_tensor *num = df__sc_const(c, 2);
    df__shape *o = df__sc_out(c, 0);
    if (d->rank < 0 || ix->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (ix->rank > d->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "segment_ids rank %d exceeds data rank %d", ix->rank, d->rank);
    if (d->rank - ix->rank + 1 > DF_MAX_RANK)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "the output would have rank %d (at most %d)", d->rank - ix->rank + 1, DF_MAX_RANK);
    o->rank = d->rank - ix->rank + 1;
    o->dims[0] = num && df__is_int_tensor(num) && num->n == 1 ? df__int_at(num, 0) : -1;
    for (int i = ix->rank; i < d->rank; i++) o->dims[i - ix->rank + 1] = d->dims[i];
    return DF_OK;
}
DF_PRIVATE void df__k_segment_sum(df__kctx *c) {
    const df_tensor *d = c->in[0], *ix = c->in[1], *num = c->in[2];
    if (!df__is_int_tensor(num) || num->n != 1 || df__int_at(num, 0) < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_segments must be a non-negative scalar"); return; }
    if (ix->rank > d->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment_ids rank %d exceeds data rank %d", ix->rank, d->rank); return; }
    for (int i = 0; i < ix->rank; i++)
        if (ix->dims[i] != d->dims[i]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "data.shape must start with segment_ids.shape"); return; }
    int64_t n = df__int_at(num, 0), dims[DF_MAX_RANK], inner = 1;
    int r = d->rank - ix->rank + 1;
    if (r > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "the output would have rank %d (at most %d)", r, DF_MAX_RANK); return; }
    dims[0] = n;
    for (int i = ix->rank; i < d->rank; i++) { dims[i - ix->rank + 1] = d->dims[i]; inner *= d->dims[i]; }
    df_tensor *o = df__k_alloc(c, 0, d->dtype, r, dims);
    if (!o) return;
    memset(o->data, 0, o->nbytes);
    for (int64_t i = 0; i < ix->n; i++) {
        int64_t s = df__int_at(ix, i);
        if (s < 0 || s >= n) continue;
        if (d->dtype == DF_FLOAT) {
            float *dst = (float *)o->data + s * inner;
            const float *src = (const float *)d->data + i * inner;
            for (int64_t j = 0; j < inner; j++) dst[j] += src[j];
        } else if (df__is_integer_type(d->dtype)) {   /* two's complement wrap, as TF */
            for (int64_t j = 0; j < inner; j++)
                df__set_from_i64(d->dtype, o->data, s * inner + j, (int64_t)((uint64_t)df__get_i64(d->dtype, o->data, s * inner + j) +
                                 (uint64_t)df__get_i64(d->dtype, d->data, i * inner + j)));
        } else {
            for (int64_t j = 0; j < inner; j++)
                df__set_from_f64(d->dtype, o->data, s * inner + j, df__get_f64(d->dtype, o->data, s * inner + j) +
                                 df__get_f64(d->dtype, d->data, i * inner + j));
        }
    }
}

/* Pad with zeros: paddings [rank, 2]. */
static df_code df__pad_dims(const df_node *n, const df__shape *in, const df_tensor *p, df__shape *o, df_status *st) {
    if (!df__is_int_tensor(p) || p->rank != 2 || p->dims[0] != in->rank || p->dims[1] != 2)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "paddings must be a matrix with 2 columns and %d rows", in->rank);
    o->rank = in->rank;
    for (int d = 0; d < in->rank; d++) {
        int64_t lo = df__int_at(p, 2 * d), hi = df__int_at(p, 2 * d + 1);
        if (lo < 0 || hi < 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld", (long long)lo, (long long)hi);
        if (lo > INT64_MAX / 4 || hi > INT64_MAX / 4 || (in->dims[d] > 0 && in->dims[d] > INT64_MAX / 4))
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Pad: dimension %d would be too large", d);
        o->dims[d] = in->dims[d] < 0 ? -1 : in->dims[d] + lo + hi;
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_pad(df__shape_ctx *c) {
    const df_tensor *p = df__sc_const(c, 1);
    if (!p || c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__pad_dims(c->node, &c->in_shapes[0], p, df__sc_out(c, 0), c->st);
}
DF_PRIVATE void df__k_pad(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__shape in = df__shape_of(x), os;
    if (df__pad_dims(c->node, &in, c->in[1], &os, c->st)) return;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o || df__zero_data(o, c->st)) return;
    if (!x->n) return;
    int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK];
    for (int d = 0; d < x->rank; d++) { begin[d] = df__int_at(c->in[1], 2 * d); step[d] = 1; }
    if (x->rank == 0) { df__copy_data(o, x, c->st); return; }
    df__strided_scatter(o, x, begin, step, x->dims, x->rank);
}

DF_PRIVATE void df__k_invert_permutation(df__kctx *c) {
    const df_tensor *p = c->in[0];
    if (p->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "permutation must be a vector"); return; }
    df_tensor *o = df__k_alloc_like(c, 0, p->dtype, p);
    if (!o) return;
    for (int64_t i = 0; i < p->n; i++) df__set_from_i64(p->dtype, o->data, i, -1);
    for (int64_t i = 0; i < p->n; i++) {
        int64_t v = df__int_at(p, i);
        if (v < 0 || v >= p->n || df__int_at(o, v) != -1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%lld is not a permutation index or appears twice", (long long)v); return; }
        df__set_from_i64(p->dtype, o->data, v, i);
    }
}

/* BroadcastTo: NumPy broadcasting of the input to a given shape. */
DF_PRIVATE df_code df__sf_broadcast_to(df__shape_ctx *c) {
    const df_tensor *s = df__sc_const(c, 1);
    if (!s) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, s, df__sc_out(c, 0), "shape", c->st);
}
DF_PRIVATE void df__k_broadcast_to(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__shape s;
    if (df__dims_from(c->node, c->in[1], &s, "shape", c->st)) return;
    df__bcast bc;
    if (!df__broadcast(x->rank, x->dims, s.rank, s.dims, &bc) || bc.rank != s.rank) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Unable to broadcast tensor of shape %s to tensor of shape %s",
                  df__dims_str(x->rank, x->dims, s1, 96), df__dims_str(s.rank, s.dims, s2, 96));
        return;
    }
    for (int d = 0; d < s.rank; d++)
        if (bc.dims[d] != s.dims[d]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Unable to broadcast to the requested shape"); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, s.rank, s.dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    if (x->n == 1) {                    /* one value everywhere: fill by doubling copies */
        memcpy(o->data, x->data, es);
        for (int64_t done = 1; done < o->n;) {
            int64_t k = DF__MIN(done, o->n - done);
            memcpy((char *)o->data + (size_t)done * es, o->data, (size_t)k * es);
            done += k;
        }
        return;
    }
    /* whole rows at a time where the last axis is not broadcast */
    int last = s.rank - 1;
    int64_t run = last >= 0 && bc.sa[last] == 1 ? s.dims[last] : 1;
    int64_t idx[DF_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < o->n; i += run) {
        memcpy((char *)o->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, (size_t)run * es);
        for (int d = run > 1 ? last - 1 : last; d >= 0; d--) {
            idx[d]++; off += bc.sa[d];
            if (idx[d] < s.dims[d]) break;
            off -= bc.sa[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* Cumprod along an axis (exclusive / reverse as TF's attrs). */
/* Cumprod's checks and output (NULL: failed, or nothing to write): [outer, len, inner]. */
DF_PRIVATE df_tensor *df__cumprod_prep(df__kctx *c, int64_t *outer, int64_t *len, int64_t *inner) {
    const df_tensor *x = c->in[0], *ax = c->in[1];
    if (!df__is_int_tensor(ax) || ax->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis must be a scalar"); return NULL; }
    int64_t a = df__int_at(ax, 0);
    if (a < -x->rank || a >= x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis %lld out of range for rank %d", (long long)a, x->rank); return NULL; }
    if (a < 0) a += x->rank;
    df_tensor *o = df__k_alloc_like(c, 0, x->dtype, x);
    if (!o || !o->n) return NULL;
    *outer = 1; *len = x->dims[a]; *inner = 1;
    for (int d = 0; d < a; d++) *outer *= x->dims[d];
    for (int d = (int)a + 1; d < x->rank; d++) *inner *= x->dims[d];
    return o;
}
DF_PRIVATE void df__k_cumprod(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int excl = df__attr_b(c->node, "exclusive", 0), rev = df__attr_b(c->node, "reverse", 0);
    int64_t outer, len, inner;
    df_tensor *o = df__cumprod_prep(c, &outer, &len, &inner);
    if (!o) return;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t j = 0; j < inner; j++) {
            double p = 1;
            for (int64_t k0 = 0; k0 < len; k0++) {
                int64_t k = rev ? len - 1 - k0 : k0, at = (q * len + k) * inner + j;
                double v = df__get_f64(x->dtype, x->data, at);
                if (!excl) p *= v;
                df__set_from_f64(x->dtype, o->data, at, p);
                if (excl) p *= v;
            }
        }
}

/* ConcatOffset: where each input starts along the concat axis. */
DF_PRIVATE void df__k_concat_offset(df__kctx *c) {
    const df_tensor *ax = c->in[0];
    int n = c->n_in - 1;
    if (!df__is_int_tensor(ax) || ax->n != 1 || n < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "concat_dim must be a scalar"); return; }
    int64_t r = c->in[1]->n, a = df__int_at(ax, 0), off = 0;
    if (a < -r || a >= r) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat dim %lld out of range for rank %lld", (long long)a, (long long)r); return; }
    if (a < 0) a += r;
    for (int i = 0; i < n; i++) {
        const df_tensor *s = c->in[1 + i];
        if (s->n != r) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input %d should contain %lld elements, but got %lld", i, (long long)r, (long long)s->n); return; }
        df_tensor *o = df__k_alloc_like(c, i, DF_INT32, s);
        if (!o) return;
        for (int64_t d = 0; d < r; d++) ((int32_t *)o->data)[d] = d == a ? (int32_t)off : 0;
        off += df__int_at(s, a);
    }
}
DF_PRIVATE df_code df__sf_concat_offset(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = c->in_shapes[i + 1];
    return DF_OK;
}
