/* ==========================================================================================
   src/kernels/tensor_list.c: TensorList and Optional ops (DF_VARIANT)             >>tensorlist
   A DF_VARIANT element points at a reference-counted df__variant: a list (element tensors,
   NULL for TensorFlow's uninitialised element, an element dtype, a partial element shape) or
   an optional (a value of n tensors, or none). Lists are values: an op that changes one
   returns a new list, changing its input in place only when this node holds the only
   reference to both the tensor and its payload (TensorFlow's forwarding). Elements are shared
   by reference, never copied; Stack, Gather and Concat copy each element's bytes once.
   ========================================================================================== */

/* ---- payloads ---- */
static df__variant *df__variant_new(int kind, int64_t cap) {
    df__variant *v = (df__variant *)DF_MALLOC(sizeof *v);
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->refs = 1;
    v->kind = kind;
    v->element_shape.rank = -1;
    v->max_num_elements = -1;
    if (cap > 0) {
        if ((uint64_t)cap > (uint64_t)(SIZE_MAX / sizeof(df_tensor *)) ||
            !(v->v = (df_tensor **)DF_MALLOC((size_t)cap * sizeof(df_tensor *)))) { DF_FREE(v); return NULL; }
        memset(v->v, 0, (size_t)cap * sizeof(df_tensor *));
        v->cap = cap;
    }
    return v;
}
DF_PRIVATE void df__variant_release(df__variant *v) {
    if (!v || DF__ATOMIC_DEC(&v->refs) != 0) return;
    for (int64_t i = 0; i < v->n; i++) df_tensor_release(v->v[i]);
    DF_FREE(v->v);
    DF_FREE(v);
}
/* Called by df_tensor_release when a DF_VARIANT buffer goes (or is recycled). */
DF_PRIVATE void df__variant_release_buffer(df_tensor *t) {
    df__variant **p = (df__variant **)t->data;
    for (int64_t i = 0; i < t->n; i++) { df__variant_release(p[i]); p[i] = NULL; }
}
/* After a variant buffer's bytes were copied from another's: one more reference each. */
DF_PRIVATE void df__variant_retain_buffer(df_tensor *t) {
    df__variant **p = (df__variant **)t->data;
    for (int64_t i = 0; i < t->n; i++) if (p[i]) DF__ATOMIC_INC(&p[i]->refs);
}
static int df__variant_reserve(df__variant *v, int64_t n) {
    if (n <= v->cap) return 1;
    int64_t cap = v->cap < 4 ? 4 : v->cap;
    while (cap < n) cap = cap > INT64_MAX / 2 ? n : cap * 2;
    if ((uint64_t)cap > (uint64_t)(SIZE_MAX / sizeof(df_tensor *))) return 0;
    df_tensor **p = (df_tensor **)DF_REALLOC(v->v, (size_t)cap * sizeof(df_tensor *));
    if (!p) return 0;
    memset(p + v->cap, 0, (size_t)(cap - v->cap) * sizeof(df_tensor *));
    v->v = p;
    v->cap = cap;
    return 1;
}
/* A new payload with the same header and elements (each retained), room for `cap`. */
static df__variant *df__variant_copy(const df__variant *src, int64_t cap) {
    df__variant *v = df__variant_new(src->kind, DF__MAX(cap, src->n));
    if (!v) return NULL;
    v->element_dtype = src->element_dtype;
    v->element_shape = src->element_shape;
    v->max_num_elements = src->max_num_elements;
    v->has_value = src->has_value;
    v->n = src->n;
    for (int64_t i = 0; i < src->n; i++) v->v[i] = df_tensor_retain(src->v[i]);
    return v;
}
/* Copies element bytes; a variant element's payloads gain a reference each (lists of lists,
   lists of Optionals: TensorFlow 2's If inside a While accumulates Optionals). */
static void df__tl_copy_bytes(df_dtype t, void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    memcpy(dst, src, bytes);
    if (t != DF_VARIANT) return;
    df__variant **p = (df__variant **)dst;
    for (size_t i = 0; i < bytes / sizeof *p; i++) if (p[i]) DF__ATOMIC_INC(&p[i]->refs);
}
DF_PRIVATE void df__variant_describe(const df__variant *v, char *buf, size_t n) {
    char shp[96];
    if (!n) return;
    if (!v) snprintf(buf, n, "<empty variant>");
    else if (v->kind == DF__VARIANT_LIST) {
        df__dims_str(v->element_shape.rank, v->element_shape.dims, shp, sizeof shp);
        snprintf(buf, n, "TensorList<%s%s>(%lld)", df_dtype_name(v->element_dtype), v->element_shape.rank < 0 ? "" : shp,
                 (long long)v->n);
    } else if (v->has_value) snprintf(buf, n, "Optional(%lld values)", (long long)v->n);
    else snprintf(buf, n, "Optional(none)");
}

/* ---- partial shapes (rank -1: unknown; a dim -1: unknown) ---- */
static int df__pshape_defined(const df__shape *s) {
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] < 0) return 0;
    return 1;
}
static int df__pshape_merge(const df__shape *a, const df__shape *b, df__shape *out) {
    if (a->rank < 0) { *out = *b; return 1; }
    if (b->rank < 0) { *out = *a; return 1; }
    if (a->rank != b->rank) return 0;
    df__shape m = *a;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i]) return 0;
        m.dims[i] = a->dims[i] >= 0 ? a->dims[i] : b->dims[i];
    }
    *out = m;
    return 1;
}
static const char *df__pshape_str(const df__shape *s, char *buf, size_t n) {
    if (s->rank < 0) { snprintf(buf, n, "<unknown>"); return buf; }
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->rank && len < n; i++)
        len += (size_t)(s->dims[i] < 0 ? snprintf(buf + len, n - len, i ? ",?" : "?")
                                       : snprintf(buf + len, n - len, i ? ",%lld" : "%lld", (long long)s->dims[i]));
    if (len < n) snprintf(buf + len, n - len, "]");
    return buf;
}
/* TensorFlow's element_shape argument: a scalar -1 (unknown rank) or a vector of dims, -1 unknown. */
static df_code df__pshape_parse(const df_node *node, const df_tensor *t, df__shape *out, df_status *st) {
    if (!df__is_int_tensor(t) || t->rank > 1)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "element_shape must be an int32/int64 scalar or vector, got %s of rank %d",
                        df_dtype_name(t->dtype), t->rank);
    if (t->rank == 0) {
        if (df__int_at(t, 0) != -1)
            return df__fail(st, node, DF_INVALID_ARGUMENT, "element_shape as a scalar must be -1 (unknown rank), got %lld",
                            (long long)df__int_at(t, 0));
        out->rank = -1;
        return DF_OK;
    }
    if (t->n > DF_MAX_RANK) return df__fail(st, node, DF_INVALID_ARGUMENT, "element_shape has rank %lld, above the maximum %d", (long long)t->n, DF_MAX_RANK);
    memset(out, 0, sizeof *out);
    out->rank = (int)t->n;
    for (int i = 0; i < out->rank; i++) {
        out->dims[i] = df__int_at(t, i);
        if (out->dims[i] < -1) return df__fail(st, node, DF_INVALID_ARGUMENT, "element_shape[%d] = %lld; dims must be >= -1", i, (long long)out->dims[i]);
    }
    return DF_OK;
}

/* ---- kernel helpers ---- */
static df__variant *df__variant_at(const df_tensor *t, int64_t i) { return ((df__variant *const *)t->data)[i]; }
static const df__variant *df__tl_get(df__kctx *c, int in, int kind) {
    const df_tensor *t = c->in[in];
    const df__variant *v = t->dtype == DF_VARIANT && t->rank == 0 ? df__variant_at(t, 0) : NULL;
    if (!v || v->kind != kind) {
        char what[96];
        if (t->dtype != DF_VARIANT || t->rank != 0) snprintf(what, sizeof what, "a %s tensor of rank %d", df_dtype_name(t->dtype), t->rank);
        else df__variant_describe(v, what, sizeof what);
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input handle is not %s. Saw: '%s'", kind == DF__VARIANT_LIST ? "a list" : "an optional", what);
        return NULL;
    }
    return v;
}
static const df__variant *df__tl_list(df__kctx *c, int in) { return df__tl_get(c, in, DF__VARIANT_LIST); }
static int df__tl_check_dtype(df__kctx *c, const df__variant *l, df_dtype want) {
    if (l->element_dtype == want) return 1;
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid data types; op elements %s but list elements %s",
              df_dtype_name(want), df_dtype_name(l->element_dtype));
    return 0;
}
/* A new scalar variant as output `out` holding v (which it takes). */
static int df__tl_emit(df__kctx *c, int out, df__variant *v) {
    if (!v) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making a %s", "TensorList"); return 0; }
    df_tensor *o = df__k_alloc(c, out, DF_VARIANT, 0, NULL);
    if (!o) { df__variant_release(v); return 0; }
    *(df__variant **)o->data = v;
    return 1;
}
/* The list of input `in` as output `out`, ready to change: the input itself when this node
   holds the only reference to it and to its payload, else a copy of the pointer array. */
static df__variant *df__tl_mutable(df__kctx *c, int out, int in, int64_t cap) {
    df_tensor *x = c->in[in];
    df__variant *l = df__variant_at(x, 0);
    if (!x->base && !x->ref && x->alloc && __atomic_load_n(&x->refs, __ATOMIC_ACQUIRE) == 1 &&
        __atomic_load_n(&l->refs, __ATOMIC_ACQUIRE) == 1) {
        if (!df__variant_reserve(l, cap)) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory growing a TensorList"); return NULL; }
        df__k_forward(c, out, in);
        return l;
    }
    df__variant *v = df__variant_copy(l, cap);
    return df__tl_emit(c, out, v) ? v : NULL;
}
/* Elements live in host memory, whatever the device (a GPU runs list ops' host kernels). */
static df__allocator *df__tl_alloc(df__kctx *c) { return c->gpu || (c->dev && !c->dev->host_memory) ? df__host_allocator() : c->alloc; }
static df_tensor *df__tl_new_tensor(df__kctx *c, df_dtype t, int rank, const int64_t *dims) {
    df__allocator *a = df__tl_alloc(c);
    df_tensor *x = a ? df__tensor_alloc(a, t, rank, dims, c->st) : NULL;
    if (!x) {
        char msg[sizeof c->st->message];
        memcpy(msg, c->st->message, sizeof msg);
        DF__KFAIL(c, c->st->code ? c->st->code : DF_RESOURCE_EXHAUSTED, "%.*s", 400, msg);
    }
    return x;
}
static df_tensor *df__tl_zeros(df__kctx *c, df_dtype t, const df__shape *s) {
    df_tensor *x = df__tl_new_tensor(c, t, s->rank, s->dims);
    if (x && t != DF_VARIANT) memset(x->data, 0, x->nbytes);
    return x;
}
/* Rows i .. i+rows-1 of x (rank >= 1) as a new tensor; rows < 0: row i alone, of rank-1. */
static df_tensor *df__tl_slice(df__kctx *c, const df_tensor *x, int64_t i, int64_t rows) {
    int64_t dims[DF_MAX_RANK];
    for (int d = 1; d < x->rank; d++) dims[d] = x->dims[d];
    dims[0] = rows;
    int keep_rank = rows >= 0;
    df_tensor *o = keep_rank ? df__tl_new_tensor(c, x->dtype, x->rank, dims) : df__tl_new_tensor(c, x->dtype, x->rank - 1, dims + 1);
    if (!o) return NULL;
    size_t row = x->dims[0] ? x->nbytes / (size_t)x->dims[0] : 0;
    df__tl_copy_bytes(x->dtype, o->data, (const char *)x->data + (size_t)i * row, o->nbytes);
    return o;
}
static int df__tl_compatible(const df__shape *partial, int rank, const int64_t *dims) {
    if (partial->rank < 0) return 1;
    if (partial->rank != rank) return 0;
    for (int i = 0; i < rank; i++) if (partial->dims[i] >= 0 && partial->dims[i] != dims[i]) return 0;
    return 1;
}
static int df__tl_read_shape(df__kctx *c, int in, df__shape *s) {
    return df__pshape_parse(c->node, c->in[in], s, c->st) == DF_OK;
}
static int df__tl_scalar_int(df__kctx *c, int in, const char *what, int64_t *v) {
    const df_tensor *t = c->in[in];
    if (!df__is_int_tensor(t) || t->n != 1 || t->rank > 1) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be an int32/int64 scalar, got %s of %lld elements", what,
                  df_dtype_name(t->dtype), (long long)t->n);
        return 0;
    }
    *v = df__int_at(t, 0);
    return 1;
}
/* The element shape a read of uninitialised elements needs: the list's merged with the op's,
   then (TensorFlow) with every set element's; it must end fully defined. */
static int df__tl_read_element_shape(df__kctx *c, const df__variant *l, int in, df__shape *out, const char *what) {
    df__shape s, m;
    char a[96], b[96];
    if (in >= 0) { if (!df__tl_read_shape(c, in, &s)) return 0; } else s.rank = -1;
    if (!df__pshape_merge(&l->element_shape, &s, &m)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: the list's element shape is %s, the op's %s",
                  df__pshape_str(&l->element_shape, a, sizeof a), df__pshape_str(&s, b, sizeof b));
        return 0;
    }
    for (int64_t i = 0; i < l->n && !df__pshape_defined(&m); i++) {
        if (!l->v[i]) continue;
        df__shape e = df__shape_of(l->v[i]);
        if (!df__pshape_merge(&m, &e, &m)) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes in the list: element %lld has shape %s, expected %s",
                      (long long)i, df__pshape_str(&e, a, sizeof a), df__pshape_str(&m, b, sizeof b));
            return 0;
        }
    }
    if (!df__pshape_defined(&m)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s but element_shape is not fully defined: %s and no list element is set.",
                  what, df__pshape_str(&m, a, sizeof a));
        return 0;
    }
    *out = m;
    return 1;
}
/* An element to store: the item's dtype and shape against the list's. */
static int df__tl_check_item(df__kctx *c, const df__variant *l, const df_tensor *t, const char *action) {
    char a[96], b[96];
    if (t->dtype != l->element_dtype) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid data types; op elements %s but list elements %s",
                  df_dtype_name(t->dtype), df_dtype_name(l->element_dtype));
        return 0;
    }
    if (!df__tl_compatible(&l->element_shape, t->rank, t->dims)) {
        df__shape s = df__shape_of(t);
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to %s a tensor with incompatible shape to a list. Op element shape: %s list shape: %s",
                  action, df__pshape_str(&s, a, sizeof a), df__pshape_str(&l->element_shape, b, sizeof b));
        return 0;
    }
    return 1;
}
/* Takes input `in` (its reference) for storing in a list. */
static df_tensor *df__tl_take(df__kctx *c, int in) { df_tensor *t = c->in[in]; c->in[in] = NULL; return t; }

/* ---- making lists ---- */
static df__variant *df__tl_new_list(df__kctx *c, int shape_in, int64_t n) {
    df__shape s;
    if (!df__tl_read_shape(c, shape_in, &s)) return NULL;
    df__variant *v = df__variant_new(DF__VARIANT_LIST, n);
    if (!v) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making a TensorList"); return NULL; }
    v->element_dtype = df__attr_type(c->node, "element_dtype");
    v->element_shape = s;
    return v;
}
DF_PRIVATE void df__k_empty_tensor_list(df__kctx *c) {
    int64_t max;
    if (!df__tl_scalar_int(c, 1, "max_num_elements", &max)) return;
    if (max < -1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "max_num_elements must be -1 (no limit) or >= 0, got %lld", (long long)max); return; }
    df__variant *v = df__tl_new_list(c, 0, 0);
    if (!v) return;
    v->max_num_elements = max;
    df__tl_emit(c, 0, v);
}
DF_PRIVATE void df__k_tensor_list_reserve(df__kctx *c) {
    int64_t n;
    if (!df__tl_scalar_int(c, 1, "num_elements", &n)) return;
    if (n < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "The num_elements to reserve must be a non negative number, but got %lld", (long long)n); return; }
    df__variant *v = df__tl_new_list(c, 0, n);
    if (!v) return;
    v->n = n;
    df__tl_emit(c, 0, v);
}
DF_PRIVATE void df__k_tensor_list_from_tensor(df__kctx *c) {
    const df_tensor *x = c->in[0];
    char a[96], b[96];
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tensor must be at least a vector, but saw shape: %s", df__dims_str(x->rank, x->dims, a, sizeof a)); return; }
    df__variant *v = df__tl_new_list(c, 1, x->dims[0]);
    if (!v) return;
    if (!df__tl_compatible(&v->element_shape, x->rank - 1, x->dims + 1)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Specified a list with shape %s from a tensor with shape %s",
                  df__pshape_str(&v->element_shape, a, sizeof a), df__dims_str(x->rank, x->dims, b, sizeof b));
        df__variant_release(v);
        return;
    }
    v->element_dtype = x->dtype;
    for (int64_t i = 0; i < x->dims[0]; i++) {
        if (!(v->v[i] = df__tl_slice(c, x, i, -1))) { df__variant_release(v); return; }
        v->n = i + 1;
    }
    df__tl_emit(c, 0, v);
}
DF_PRIVATE void df__k_tensor_list_split(df__kctx *c) {
    const df_tensor *x = c->in[0], *len = c->in[2];
    char a[96], b[96];
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tensor must be at least a vector, but saw shape: %s", df__dims_str(x->rank, x->dims, a, sizeof a)); return; }
    if (!df__is_int_tensor(len) || len->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected lengths to be a vector, received shape: %s", df__dims_str(len->rank, len->dims, a, sizeof a)); return; }
    df__variant *v = df__tl_new_list(c, 1, len->n);
    if (!v) return;
    df__shape rest = v->element_shape;          /* the element shape but its first dim */
    if (rest.rank > 0) rest.dims[0] = x->dims[0];
    if (rest.rank == 0 || !df__tl_compatible(&rest, x->rank, x->dims)) {
        if (rest.rank == 0) DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorListSplit requires element_shape to be at least of rank 1, but saw: []");
        else DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tensor shape %s is not compatible with the element shape %s",
                       df__dims_str(x->rank, x->dims, b, sizeof b), df__pshape_str(&v->element_shape, a, sizeof a));
        df__variant_release(v);
        return;
    }
    v->element_dtype = x->dtype;
    int64_t at = 0;
    for (int64_t i = 0; i < len->n; i++) {
        int64_t k = df__int_at(len, i);
        if (k < 0 || k > x->dims[0] - at) {
            if (k < 0) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid value in lengths: %lld", (long long)k);
            else DF__KFAIL(c, DF_INVALID_ARGUMENT, "Attempting to slice [%lld, %lld] from tensor with length %lld",
                           (long long)at, (long long)(at + k), (long long)x->dims[0]);
            df__variant_release(v);
            return;
        }
        if (!(v->v[i] = df__tl_slice(c, x, at, k))) { df__variant_release(v); return; }
        v->n = i + 1;
        at += k;
    }
    if (at != x->dims[0]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Unused values in tensor. Length of tensor: %lld Values used: %lld", (long long)x->dims[0], (long long)at);
        df__variant_release(v);
        return;
    }
    df__tl_emit(c, 0, v);
}

/* ---- reading lists ---- */
/* Elements idx[0..k) (all when idx is NULL) stacked into output 0 (Stack, Gather). */
static void df__tl_stack(df__kctx *c, const df__variant *l, const df_tensor *idx, int shape_in) {
    char a[96], b[96];
    int64_t k = idx ? idx->n : l->n;
    if (!df__tl_check_dtype(c, l, df__attr_type(c->node, "element_dtype"))) return;
    for (int64_t j = 0; idx && j < k; j++) {
        int64_t i = df__int_at(idx, j);
        if (i < 0 || i >= l->n) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to gather element %lld in a list with %lld elements.", (long long)i, (long long)l->n);
            return;
        }
    }
    df__shape s, m;
    if (!df__tl_read_shape(c, shape_in, &s)) return;
    if (!df__pshape_merge(&l->element_shape, &s, &m)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: the list's element shape is %s, the op's %s",
                  df__pshape_str(&l->element_shape, a, sizeof a), df__pshape_str(&s, b, sizeof b));
        return;
    }
    int any = 0;
    for (int64_t i = 0; i < l->n && !df__pshape_defined(&m); i++) {
        if (!l->v[i]) continue;
        any = 1;
        df__shape e = df__shape_of(l->v[i]);
        if (!df__pshape_merge(&m, &e, &m)) break;       /* reported below, element by element */
    }
    if (!df__pshape_defined(&m)) {
        if (!l->n) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to stack elements of an empty list with non-fully-defined element_shape: %s", df__pshape_str(&m, a, sizeof a));
        else DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to stack list which only contains uninitialized tensors and has a non-fully-defined element_shape: %s%s",
                       df__pshape_str(&m, a, sizeof a), any ? " (or elements of different shapes)" : "");
        return;
    }
    if (m.rank >= DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stacking elements of rank %d gives a rank above the maximum %d", m.rank, DF_MAX_RANK); return; }
    int64_t dims[DF_MAX_RANK];
    dims[0] = k;
    for (int d = 0; d < m.rank; d++) dims[d + 1] = m.dims[d];
    df_tensor *o = df__k_alloc(c, 0, l->element_dtype, m.rank + 1, dims);
    if (!o) return;
    size_t row = k ? o->nbytes / (size_t)k : 0;
    for (int64_t j = 0; j < k; j++) {
        const df_tensor *e = l->v[idx ? df__int_at(idx, j) : j];
        char *dst = (char *)o->data + (size_t)j * row;
        if (!e) { memset(dst, 0, row); continue; }
        if (e->rank != m.rank || (m.rank && memcmp(e->dims, m.dims, (size_t)m.rank * sizeof *m.dims))) {
            df__shape es = df__shape_of(e);
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes during stack: element %lld has shape %s, expected %s",
                      (long long)(idx ? df__int_at(idx, j) : j), df__pshape_str(&es, a, sizeof a), df__pshape_str(&m, b, sizeof b));
            return;
        }
        df__tl_copy_bytes(e->dtype, dst, e->data, row);
    }
}
DF_PRIVATE void df__k_tensor_list_stack(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    if (!l) return;
    int64_t want = df__attr_i(c->node, "num_elements", -1);
    if (want != -1 && want != l->n) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Operation expected a list with %lld elements but got a list with %lld elements.", (long long)want, (long long)l->n);
        return;
    }
    df__tl_stack(c, l, NULL, 1);
}
DF_PRIVATE void df__k_tensor_list_gather(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    if (!l) return;
    if (!df__is_int_tensor(c->in[1])) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices must be int32/int64"); return; }
    df__tl_stack(c, l, c->in[1], 2);
}
DF_PRIVATE void df__k_tensor_list_get_item(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    int64_t i;
    if (!l || !df__tl_scalar_int(c, 1, "index", &i) || !df__tl_check_dtype(c, l, df__attr_type(c->node, "element_dtype"))) return;
    if (i < 0 || i >= l->n) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to access element %lld in a list with %lld elements.", (long long)i, (long long)l->n);
        return;
    }
    if (l->v[i]) { c->out[0] = df_tensor_retain(l->v[i]); return; }
    df__shape s;
    if (df__tl_read_element_shape(c, l, 2, &s, "Trying to read an uninitialized tensor"))
        c->out[0] = df__tl_zeros(c, l->element_dtype, &s);
}
DF_PRIVATE void df__k_tensor_list_length(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    if (!l) return;
    if (l->n > INT32_MAX) { DF__KFAIL(c, DF_OUT_OF_RANGE, "The list has %lld elements, more than int32 holds", (long long)l->n); return; }
    df_tensor *o = df__k_alloc(c, 0, DF_INT32, 0, NULL);
    if (o) *(int32_t *)o->data = (int32_t)l->n;
}
DF_PRIVATE void df__k_tensor_list_element_shape(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    if (!l) return;
    df_dtype t = df__attr_type(c->node, "shape_type");
    int64_t n = l->element_shape.rank;
    df_tensor *o = l->element_shape.rank < 0 ? df__k_alloc(c, 0, t, 0, NULL) : df__k_alloc(c, 0, t, 1, &n);
    if (!o) return;
    if (l->element_shape.rank < 0) df__set_from_i64(t, o->data, 0, -1);
    for (int i = 0; i < l->element_shape.rank; i++) df__set_from_i64(t, o->data, i, l->element_shape.dims[i]);
}
DF_PRIVATE void df__k_tensor_list_concat(df__kctx *c) {
    char a[96], b[96];
    const df__variant *l = df__tl_list(c, 0);
    if (!l || !df__tl_check_dtype(c, l, df__attr_type(c->node, "element_dtype"))) return;
    const df_tensor *lead = c->in[2];
    df__shape s, m;
    if (!df__tl_read_shape(c, 1, &s)) return;
    if (!df__pshape_merge(&l->element_shape, &s, &m)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: the list's element shape is %s, the op's %s",
                  df__pshape_str(&l->element_shape, a, sizeof a), df__pshape_str(&s, b, sizeof b));
        return;
    }
    if (m.rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat requires elements to be at least vectors, found scalars instead."); return; }
    for (int64_t i = 0; i < l->n; i++) {          /* the dims after the first, from the set elements */
        const df_tensor *e = l->v[i];
        if (!e) continue;
        if (e->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat saw a scalar shape at index %lld but requires at least vectors.", (long long)i); return; }
        df__shape es = df__shape_of(e), r = m;
        if (r.rank >= 0) r.dims[0] = -1;
        es.dims[0] = -1;
        if (!df__pshape_merge(&r, &es, &r)) {
            es = df__shape_of(e);
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to concat tensors with unequal shapes: %s vs %s",
                      df__pshape_str(&m, a, sizeof a), df__pshape_str(&es, b, sizeof b));
            return;
        }
        int64_t first = m.rank >= 0 ? m.dims[0] : -1;
        m = r;
        m.dims[0] = first;
    }
    df__shape rest = m;
    if (rest.rank > 0) rest.dims[0] = 0;
    if (!df__pshape_defined(&rest)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "All except the first dimension must be fully defined when concating an empty tensor list "
                  "or one of uninitialized elements. element_shape: %s", df__pshape_str(&m, a, sizeof a));
        return;
    }
    int64_t total = 0, n_len = l->n;
    df_tensor *lengths = df__k_alloc(c, 1, DF_INT64, 1, &n_len);
    if (!lengths) return;
    for (int64_t i = 0; i < l->n; i++) {
        int64_t k = l->v[i] ? l->v[i]->dims[0] : m.dims[0] >= 0 ? m.dims[0] : lead->n == l->n && df__is_int_tensor(lead) ? df__int_at(lead, i) : -1;
        if (k < 0) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Element %lld is uninitialized and neither element_shape's first dim nor leading_dims "
                      "(%lld values for %lld elements) gives its length", (long long)i, (long long)lead->n, (long long)l->n);
            return;
        }
        ((int64_t *)lengths->data)[i] = k;
        if (k > DF_MAX_ELEMENTS - total) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat gives too many rows"); return; }
        total += k;
    }
    int64_t dims[DF_MAX_RANK];
    for (int d = 0; d < m.rank; d++) dims[d] = m.dims[d];
    dims[0] = total;
    df_tensor *o = df__k_alloc(c, 0, l->element_dtype, m.rank, dims);
    if (!o) return;
    char *dst = (char *)o->data;
    size_t row = total ? o->nbytes / (size_t)total : 0;
    for (int64_t i = 0; i < l->n; i++) {
        size_t bytes = (size_t)((int64_t *)lengths->data)[i] * row;
        if (l->v[i]) df__tl_copy_bytes(l->element_dtype, dst, l->v[i]->data, bytes);
        else memset(dst, 0, bytes);
        dst += bytes;
    }
}

/* ---- changing lists (a new list, or the input in place when only this node holds it) ---- */
DF_PRIVATE void df__k_tensor_list_push_back(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    if (!l || !df__tl_check_item(c, l, c->in[1], "append")) return;
    if (l->max_num_elements != -1 && l->n >= l->max_num_elements) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to push item into a full list list size: %lld max_num_elements: %lld",
                  (long long)l->n, (long long)l->max_num_elements);
        return;
    }
    df__variant *v = df__tl_mutable(c, 0, 0, l->n + 1);
    if (v) v->v[v->n++] = df__tl_take(c, 1);
}
DF_PRIVATE void df__k_tensor_list_pop_back(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    if (!l || !df__tl_check_dtype(c, l, df__attr_type(c->node, "element_dtype"))) return;
    if (!l->n) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to pop from an empty list."); return; }
    if (l->v[l->n - 1]) c->out[1] = df_tensor_retain(l->v[l->n - 1]);
    else {
        df__shape s;
        if (!df__tl_read_element_shape(c, l, 1, &s, "Trying to read an uninitialized tensor")) return;
        if (!(c->out[1] = df__tl_zeros(c, l->element_dtype, &s))) return;
    }
    df__variant *v = df__tl_mutable(c, 0, 0, l->n);
    if (!v) return;
    df_tensor_release(v->v[v->n - 1]);
    v->v[--v->n] = NULL;
}
DF_PRIVATE void df__k_tensor_list_set_item(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    int64_t i;
    if (!l || !df__tl_scalar_int(c, 1, "index", &i) || !df__tl_check_dtype(c, l, df__attr_type(c->node, "element_dtype"))) return;
    const df_tensor *item = c->in[2];
    if (!df__tl_compatible(&l->element_shape, item->rank, item->dims)) {
        char a[96], b[96];
        df__shape s = df__shape_of(item);
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to set a tensor with incompatible shape at a list index. Item element shape: %s list shape: %s",
                  df__pshape_str(&s, a, sizeof a), df__pshape_str(&l->element_shape, b, sizeof b));
        return;
    }
    int resize = df__attr_b(c->node, "resize_if_index_out_of_bounds", 0);
    if (i < 0 || (i >= l->n && !resize)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to modify element %lld in a list with %lld elements.", (long long)i, (long long)l->n);
        return;
    }
    if (i >= DF_MAX_ELEMENTS) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Index %lld is too large", (long long)i); return; }
    df__variant *v = df__tl_mutable(c, 0, 0, DF__MAX(l->n, i + 1));
    if (!v) return;
    if (i >= v->n) v->n = i + 1;
    df_tensor_release(v->v[i]);
    v->v[i] = df__tl_take(c, 2);
}
DF_PRIVATE void df__k_tensor_list_resize(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    int64_t n;
    if (!l || !df__tl_scalar_int(c, 1, "size", &n)) return;
    if (n < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorListSlice expects size to be non-negative. Got: %lld", (long long)n); return; }
    if (n > DF_MAX_ELEMENTS) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "size %lld is too large", (long long)n); return; }
    df__variant *v = df__tl_mutable(c, 0, 0, n);
    if (!v) return;
    for (int64_t i = n; i < v->n; i++) { df_tensor_release(v->v[i]); v->v[i] = NULL; }
    v->n = n;
}
/* TensorListPushBackBatch: row b of tensor pushed onto list b of a vector of lists. */
DF_PRIVATE void df__k_tensor_list_push_back_batch(df__kctx *c) {
    const df_tensor *h = c->in[0], *x = c->in[1];
    char a[96];
    if (h->dtype != DF_VARIANT || h->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected input_handles to be a vector, but saw shape: %s", df__dims_str(h->rank, h->dims, a, sizeof a)); return; }
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected tensor to be at least a vector, but saw shape: %s", df__dims_str(x->rank, x->dims, a, sizeof a)); return; }
    if (x->dims[0] != h->n) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected tensor.shape[0] == input_handles.size, but saw %lld vs. %lld", (long long)x->dims[0], (long long)h->n); return; }
    for (int64_t b = 0; b < h->n; b++) {
        const df__variant *l = df__variant_at(h, b);
        if (!l || l->kind != DF__VARIANT_LIST) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input handle at index %lld is not a list", (long long)b); return; }
        if (l->element_dtype != x->dtype) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid data type at index %lld; list elements %s but tried to append %s", (long long)b,
                      df_dtype_name(l->element_dtype), df_dtype_name(x->dtype));
            return;
        }
        if (!df__tl_compatible(&l->element_shape, x->rank - 1, x->dims + 1)) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to append a tensor with incompatible shape to list at index %lld", (long long)b);
            return;
        }
        if (l->max_num_elements != -1 && l->n >= l->max_num_elements) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to push item into a full list at index %lld list size: %lld max_num_elements: %lld",
                      (long long)b, (long long)l->n, (long long)l->max_num_elements);
            return;
        }
    }
    df_tensor *o = df__k_alloc(c, 0, DF_VARIANT, 1, h->dims);
    if (!o) return;
    for (int64_t b = 0; b < h->n; b++) {
        const df__variant *l = df__variant_at(h, b);
        df__variant *v = df__variant_copy(l, l->n + 1);
        df_tensor *e = v ? df__tl_slice(c, x, b, -1) : NULL;
        if (!e) { if (!v) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory copying a TensorList"); df__variant_release(v); return; }
        v->v[v->n++] = e;
        ((df__variant **)o->data)[b] = v;
    }
}
/* TensorListConcatLists: list i of the output is a[i]'s elements then b[i]'s. */
DF_PRIVATE void df__k_tensor_list_concat_lists(df__kctx *c) {
    const df_tensor *ta = c->in[0], *tb = c->in[1];
    char s1[96], s2[96];
    df_dtype t = df__attr_type(c->node, "element_dtype");
    if (ta->rank != tb->rank || (ta->rank && memcmp(ta->dims, tb->dims, (size_t)ta->rank * sizeof *ta->dims))) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input_a and input_b should have the same shape, but saw shapes: %s vs. %s",
                  df__dims_str(ta->rank, ta->dims, s1, sizeof s1), df__dims_str(tb->rank, tb->dims, s2, sizeof s2));
        return;
    }
    df_tensor *o = df__k_alloc(c, 0, DF_VARIANT, ta->rank, ta->dims);
    if (!o) return;
    for (int64_t i = 0; i < ta->n; i++) {
        const df__variant *a = df__variant_at(ta, i), *b = df__variant_at(tb, i);
        df__shape m;
        if (!a || !b || a->kind != DF__VARIANT_LIST || b->kind != DF__VARIANT_LIST) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input_a[%lld] or input_b[%lld] is not a list", (long long)i, (long long)i); return; }
        if (a->element_dtype != t || b->element_dtype != t) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "input_%s[%lld].dtype != element_dtype.  Saw: %s vs. %s", a->element_dtype != t ? "a" : "b", (long long)i,
                      df_dtype_name(a->element_dtype != t ? a->element_dtype : b->element_dtype), df_dtype_name(t));
            return;
        }
        if (!df__pshape_merge(&a->element_shape, &b->element_shape, &m)) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "input_a[%lld].shape != input_b[%lld].shape: %s vs. %s", (long long)i, (long long)i,
                      df__pshape_str(&a->element_shape, s1, sizeof s1), df__pshape_str(&b->element_shape, s2, sizeof s2));
            return;
        }
        df__variant *v = df__variant_copy(a, a->n + b->n);
        if (!v) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory concatenating TensorLists"); return; }
        v->element_shape = m;
        for (int64_t k = 0; k < b->n; k++) v->v[v->n++] = df_tensor_retain(b->v[k]);
        ((df__variant **)o->data)[i] = v;
    }
}
/* Scatter's indices against a list of n elements, and x's rows against its element shape. */
static int df__tl_scatter_check(df__kctx *c, const df__variant *l, const df_tensor *x, const df_tensor *idx) {
    char a[96], b[96];
    for (int64_t j = 0; j < idx->n; j++) {
        int64_t i = df__int_at(idx, j);
        if (i < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Indices in TensorListScatter must all be non-negative."); return 0; }
        if (i >= l->n) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorListScatter: Trying to scatter at index %lld in list with size %lld", (long long)i, (long long)l->n); return 0; }
    }
    if (!df__tl_compatible(&l->element_shape, x->rank - 1, x->dims + 1)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tried to scatter a tensor of shape %s into a list of element shape %s",
                  df__dims_str(x->rank, x->dims, a, sizeof a), df__pshape_str(&l->element_shape, b, sizeof b));
        return 0;
    }
    return 1;
}
/* Rows of x into v at indices idx (checked already). */
static int df__tl_scatter(df__kctx *c, df__variant *v, const df_tensor *x, const df_tensor *idx) {
    for (int64_t j = 0; j < idx->n; j++) {
        int64_t i = df__int_at(idx, j);
        df_tensor *e = df__tl_slice(c, x, j, -1);
        if (!e) return 0;
        df_tensor_release(v->v[i]);
        v->v[i] = e;
    }
    return 1;
}
static int df__tl_scatter_args(df__kctx *c, const df_tensor *x, const df_tensor *idx) {
    char a[96];
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tensor must be at least a vector, but saw shape: %s", df__dims_str(x->rank, x->dims, a, sizeof a)); return 0; }
    if (!df__is_int_tensor(idx) || idx->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected indices to be a vector, received shape: %s", df__dims_str(idx->rank, idx->dims, a, sizeof a)); return 0; }
    if (idx->n != x->dims[0]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid number of rows in input tensor. Expected: %lld Actual: %lld", (long long)idx->n, (long long)x->dims[0]);
        return 0;
    }
    return 1;
}
DF_PRIVATE void df__k_tensor_list_scatter_into(df__kctx *c) {
    const df__variant *l = df__tl_list(c, 0);
    const df_tensor *x = c->in[1], *idx = c->in[2];
    if (!l || !df__tl_scatter_args(c, x, idx)) return;
    if (x->dtype != l->element_dtype) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid data types; list elements %s but tried to scatter %s", df_dtype_name(l->element_dtype), df_dtype_name(x->dtype));
        return;
    }
    int64_t top = -1;
    for (int64_t j = 0; j < idx->n; j++) top = DF__MAX(top, df__int_at(idx, j));
    if (top >= DF_MAX_ELEMENTS) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Index %lld is too large", (long long)top); return; }
    df__variant grown = *l;                  /* TensorFlow grows the list to the largest index */
    grown.n = DF__MAX(l->n, top + 1);
    if (!df__tl_scatter_check(c, &grown, x, idx)) return;    /* before the list is touched */
    df__variant *v = df__tl_mutable(c, 0, 0, grown.n);
    if (!v) return;
    v->n = grown.n;                          /* the new slots are NULL: uninitialised elements */
    df__tl_scatter(c, v, x, idx);
}
/* TensorListScatter and TensorListScatterV2 (num_elements: the size, or -1 for the largest
   index plus one). */
DF_PRIVATE void df__k_tensor_list_scatter(df__kctx *c) {
    const df_tensor *x = c->in[0], *idx = c->in[1];
    if (!df__tl_scatter_args(c, x, idx)) return;
    int64_t n = -1, top = -1;
    if (c->n_in > 3 && !df__tl_scalar_int(c, 3, "num_elements", &n)) return;
    for (int64_t j = 0; j < idx->n; j++) top = DF__MAX(top, df__int_at(idx, j));
    if (top >= DF_MAX_ELEMENTS) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Index %lld is too large", (long long)top); return; }
    if (n == -1) n = top + 1;
    if (n < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_elements must be -1 or >= 0, got %lld", (long long)n); return; }
    df__variant *v = df__tl_new_list(c, 2, n);
    if (!v) return;
    v->n = n;
    v->element_dtype = x->dtype;
    if (!df__tl_scatter_check(c, v, x, idx) || !df__tl_scatter(c, v, x, idx)) { df__variant_release(v); return; }
    df__tl_emit(c, 0, v);
}

/* ---- Optionals (TensorFlow 2's If gradients keep a branch's intermediates in them) ---- */
DF_PRIVATE void df__k_optional_none(df__kctx *c) { df__tl_emit(c, 0, df__variant_new(DF__VARIANT_OPTIONAL, 0)); }
DF_PRIVATE void df__k_optional_from_value(df__kctx *c) {
    df__variant *v = df__variant_new(DF__VARIANT_OPTIONAL, c->n_in);
    if (!v) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making an Optional"); return; }
    v->has_value = 1;
    for (int i = 0; i < c->n_in; i++) v->v[v->n++] = df__tl_take(c, i);
    df__tl_emit(c, 0, v);
}
DF_PRIVATE void df__k_optional_has_value(df__kctx *c) {
    const df__variant *v = df__tl_get(c, 0, DF__VARIANT_OPTIONAL);
    df_tensor *o = v ? df__k_alloc(c, 0, DF_BOOL, 0, NULL) : NULL;
    if (o) *(uint8_t *)o->data = (uint8_t)(v->has_value != 0);
}
DF_PRIVATE void df__k_optional_get_value(df__kctx *c) {
    const df__variant *v = df__tl_get(c, 0, DF__VARIANT_OPTIONAL);
    if (!v) return;
    if (!v->has_value) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "The given optional does not have a value."); return; }
    if (v->n != c->n_out) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "The expected number of components is %d but the optional has %lld", c->n_out, (long long)v->n);
        return;
    }
    const df__attr *types = df__node_attr(c->node, "output_types");
    for (int i = 0; i < c->n_out; i++)
        if (types && i < types->u.types.n && types->u.types.v[i] != v->v[i]->dtype) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "The expected type of component %d is %s but the optional holds %s", i,
                      df_dtype_name(types->u.types.v[i]), df_dtype_name(v->v[i]->dtype));
            return;
        }
    for (int i = 0; i < c->n_out; i++) c->out[i] = df_tensor_retain(v->v[i]);
}

/* ---- ZerosLike and AddN of variants (TensorFlow 2's gradients aggregate list gradients) ---- */
static df_tensor *df__tl_zeros_like_tensor(df__kctx *c, const df_tensor *x);
static int df__variant_zeros(df__kctx *c, const df__variant *v, df__variant **out) {
    *out = NULL;
    if (!v) return 1;
    df__variant *z = df__variant_copy(v, v->n);
    if (!z) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making a TensorList"); return 0; }
    for (int64_t i = 0; i < z->n; i++) {
        if (!z->v[i]) continue;
        df_tensor *e = df__tl_zeros_like_tensor(c, z->v[i]);
        df_tensor_release(z->v[i]);
        if (!(z->v[i] = e)) { df__variant_release(z); return 0; }
    }
    *out = z;
    return 1;
}
static df_tensor *df__tl_zeros_like_tensor(df__kctx *c, const df_tensor *x) {
    df__shape s = df__shape_of(x);
    df_tensor *o = df__tl_zeros(c, x->dtype, &s);
    if (!o || x->dtype != DF_VARIANT) return o;
    for (int64_t i = 0; i < x->n; i++)
        if (!df__variant_zeros(c, df__variant_at(x, i), &((df__variant **)o->data)[i])) { df_tensor_release(o); return NULL; }
    return o;
}
DF_PRIVATE void df__k_variant_zeros_like(df__kctx *c) {
    if (c->node->op->code != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s does not support variant tensors", c->node->op->name); return; }
    c->out[0] = df__tl_zeros_like_tensor(c, c->in[0]);
}
static df_tensor *df__tl_add_tensors(df__kctx *c, const df_tensor *x, const df_tensor *y);
static int df__variant_add(df__kctx *c, const df__variant *a, const df__variant *b, df__variant **out) {
    char s1[96], s2[96];
    *out = NULL;
    if (!a || !b) { const df__variant *k = a ? a : b; if (k) { DF__ATOMIC_INC(&((df__variant *)k)->refs); *out = (df__variant *)k; } return 1; }
    if (a->kind != b->kind) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Cannot add a TensorList and an Optional"); return 0; }
    df__shape es = a->element_shape;
    if (a->kind == DF__VARIANT_LIST) {
        if (a->element_dtype != b->element_dtype) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to add two lists of tensors of different dtypes. One is %s and the other is %s",
                      df_dtype_name(a->element_dtype), df_dtype_name(b->element_dtype));
            return 0;
        }
        if (!df__pshape_merge(&a->element_shape, &b->element_shape, &es)) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to add two lists of tensors with incompatible element shapes. One is %s and the other is %s",
                      df__pshape_str(&a->element_shape, s1, sizeof s1), df__pshape_str(&b->element_shape, s2, sizeof s2));
            return 0;
        }
        if (a->n != b->n) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to add two lists of tensors with different lengths. One is %lld and the other is %lld",
                      (long long)a->n, (long long)b->n);
            return 0;
        }
    } else if (a->has_value != b->has_value || a->n != b->n) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Cannot add optionals because one has a value and the other doesn't.");
        return 0;
    }
    df__variant *v = df__variant_copy(a, a->n);
    if (!v) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory adding TensorLists"); return 0; }
    v->element_shape = es;
    for (int64_t i = 0; i < v->n; i++) {
        if (!b->v[i]) continue;
        df_tensor *sum = a->v[i] ? df__tl_add_tensors(c, a->v[i], b->v[i]) : df_tensor_retain(b->v[i]);
        df_tensor_release(v->v[i]);
        if (!(v->v[i] = sum)) { df__variant_release(v); return 0; }
    }
    *out = v;
    return 1;
}
static df_tensor *df__tl_add_tensors(df__kctx *c, const df_tensor *x, const df_tensor *y) {
    char s1[96], s2[96];
    if (x->dtype != y->dtype || x->rank != y->rank || (x->rank && memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims))) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to add two list elements of different dtypes or shapes: %s %s and %s %s",
                  df_dtype_name(x->dtype), df__dims_str(x->rank, x->dims, s1, sizeof s1), df_dtype_name(y->dtype), df__dims_str(y->rank, y->dims, s2, sizeof s2));
        return NULL;
    }
    df__row_fn add = x->dtype == DF_VARIANT ? NULL : df__binary_row(DF__B_ADD, x->dtype);
    if (x->dtype != DF_VARIANT && !add) { DF__KFAIL(c, DF_UNIMPLEMENTED, "Adding list elements of type %s is not supported", df_dtype_name(x->dtype)); return NULL; }
    df_tensor *o = df__tl_new_tensor(c, x->dtype, x->rank, x->dims);
    if (!o) return NULL;
    if (add) { add(o->data, x->data, y->data, o->n, 1, 1); return o; }
    for (int64_t i = 0; i < x->n; i++)
        if (!df__variant_add(c, df__variant_at(x, i), df__variant_at(y, i), &((df__variant **)o->data)[i])) { df_tensor_release(o); return NULL; }
    return o;
}
DF_PRIVATE void df__k_variant_add_n(df__kctx *c) {
    df_tensor *acc = df_tensor_retain(c->in[0]);
    for (int i = 1; i < c->n_in && acc; i++) {
        df_tensor *next = df__tl_add_tensors(c, acc, c->in[i]);
        df_tensor_release(acc);
        acc = next;
    }
    c->out[0] = acc;
}

/* ---- shape functions: handles are scalars; an element's shape comes from a constant
   element_shape input when there is one (there is no handle shape data here) ---- */
static df__shape df__sf_tl_elem(df__shape_ctx *c, int in) {
    df__shape s = df__shape_unknown();
    const df_tensor *t = in < c->node->n_inputs ? df__sc_const(c, in) : NULL;
    df_status local;
    df_status_clear(&local);
    if (t && df__pshape_parse(c->node, t, &s, &local) != DF_OK) s = df__shape_unknown();
    return s;
}
DF_PRIVATE df_code df__sf_tl_handle(df__shape_ctx *c) {
    *df__sc_out(c, 0) = df__shape_scalar();
    return DF_OK;
}
DF_PRIVATE df_code df__sf_tl_batch(df__shape_ctx *c) {        /* the handles' vector */
    *df__sc_out(c, 0) = c->in_shapes[0];
    return DF_OK;
}
DF_PRIVATE df_code df__sf_tl_pop_back(df__shape_ctx *c) {
    *df__sc_out(c, 0) = df__shape_scalar();
    *df__sc_out(c, 1) = df__sf_tl_elem(c, 1);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_tl_get_item(df__shape_ctx *c) {
    *df__sc_out(c, 0) = df__sf_tl_elem(c, 2);
    return DF_OK;
}
static df_code df__sf_tl_stacked(df__shape_ctx *c, int64_t n, int shape_in) {
    df__shape e = df__sf_tl_elem(c, shape_in), *o = df__sc_out(c, 0);
    if (e.rank < 0 || e.rank >= DF_MAX_RANK) { *o = df__shape_unknown(); return DF_OK; }
    o->rank = e.rank + 1;
    o->dims[0] = n;
    for (int d = 0; d < e.rank; d++) o->dims[d + 1] = e.dims[d];
    return DF_OK;
}
DF_PRIVATE df_code df__sf_tl_stack(df__shape_ctx *c) { return df__sf_tl_stacked(c, df__attr_i(c->node, "num_elements", -1), 1); }
DF_PRIVATE df_code df__sf_tl_gather(df__shape_ctx *c) {
    const df__shape *i = &c->in_shapes[1];
    return df__sf_tl_stacked(c, i->rank == 1 ? i->dims[0] : -1, 2);
}
DF_PRIVATE df_code df__sf_tl_concat(df__shape_ctx *c) {
    df__shape e = df__sf_tl_elem(c, 1), *o = df__sc_out(c, 0), *len = df__sc_out(c, 1);
    *o = e.rank > 0 ? e : df__shape_unknown();
    if (o->rank > 0) o->dims[0] = -1;
    len->rank = 1;
    len->dims[0] = -1;
    return DF_OK;
}
DF_PRIVATE df_code df__sf_tl_element_shape(df__shape_ctx *c) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
DF_PRIVATE df_code df__sf_optional_get_value(df__shape_ctx *c) {
    const df__attr *s = df__attr_find_kind(c->node, "output_shapes", DF__A_SHAPE_LIST);
    for (int i = 0; i < c->node->n_outputs; i++) {
        df__shape *o = df__sc_out(c, i);
        *o = df__shape_unknown();
        if (s && df__shape_list(s, -1, NULL) == c->node->n_outputs) df__shape_list(s, i, o);
    }
    return DF_OK;
}
