/* ==========================================================================================
   src/kernels/tensor_array.c: TensorArrays: kernels, shapes and gradients      >>tensorarray
   TensorFlow's TensorArrayV3 family. An array is per-run state, like the gradient stacks: its
   handle is a resource scalar holding a check word and the array's index in the run (a forged
   handle is refused), and it is freed when the run ends. An element keeps a reference to the
   tensor written (reads hand it back; gather and concat copy each element once). The float
   `flow` values carry no data: they order reads after writes and carry gradients. Every
   access takes the array's lock (parallel loop iterations write at once). A gradient array
   (TensorArrayGradV3) is made once per (array, source), sums repeated writes, and reads zeros
   where nothing was written, as TensorFlow's multiple_writes_aggregate arrays do.
   ========================================================================================== */
typedef struct df__ta_elem {
    df_tensor *t;                /* the value (shared with its writer); NULL: none, or cleared */
    df__shape shape;             /* its shape once written (gradient arrays: the forward one's) */
    unsigned char written, read, cleared, local;   /* local: t is this array's own sum */
} df__ta_elem;
typedef struct df__ta_grad { char *source; int64_t id; } df__ta_grad;
struct df__tarray {
    df__spin lock;
    df_dtype type;
    df__ta_elem *v;
    int n, cap;
    df__shape elem;              /* the element shape known so far (rank -1: unknown) */
    int identical;               /* identical_element_shapes: the first write fixes the shape */
    int dynamic, clear_after_read, closed;
    int is_grad;                 /* a gradient array: writes to one index sum, unwritten reads are zeros */
    int summed;                  /* some index was written twice: no gradient array may be made of it */
    int32_t marked;              /* the size split recorded (TF's marked size); -1: none */
    char name[200];              /* for messages: tensor_array_name (or the node's) + "_" + a counter */
    df__ta_grad *grads;          /* its gradient arrays, by source */
    int n_grads, cap_grads;
};
static int64_t df__ta_counter;   /* atomic: TF makes every array's name unique per process */

DF_PRIVATE void df__ta_free(df__tarray *a) {
    if (!a) return;
    for (int i = 0; i < a->n; i++) df_tensor_release(a->v[i].t);
    for (int i = 0; i < a->n_grads; i++) DF_FREE(a->grads[i].source);
    DF_FREE(a->grads);
    DF_FREE(a->v);
    DF_FREE(a);
}

/* ---- partial shapes: rank -1 unknown, a dim -1 unknown ---- */
static const char *df__ta_shape_str(const df__shape *s, char *buf, size_t n) {
    if (s->rank < 0) { snprintf(buf, n, "<unknown>"); return buf; }
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->rank && len < n; i++) {
        if (s->dims[i] < 0) len += (size_t)snprintf(buf + len, n - len, i ? ",?" : "?");
        else len += (size_t)snprintf(buf + len, n - len, i ? ",%lld" : "%lld", (long long)s->dims[i]);
    }
    if (len < n) snprintf(buf + len, n - len, "]");
    return buf;
}
static int df__ta_full(const df__shape *s) {
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] < 0) return 0;
    return 1;
}
static int df__ta_fits(const df__shape *p, const df__shape *s) {
    if (p->rank < 0) return 1;
    if (p->rank != s->rank) return 0;
    for (int i = 0; i < p->rank; i++) if (p->dims[i] >= 0 && p->dims[i] != s->dims[i]) return 0;
    return 1;
}
/* TF's PartialTensorShape::MergeWith: 0 when the two disagree. */
static int df__ta_merge(const df__shape *a, const df__shape *b, df__shape *out) {
    if (a->rank < 0) { *out = *b; return 1; }
    if (b->rank < 0) { *out = *a; return 1; }
    if (a->rank != b->rank) return 0;
    *out = *a;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i]) return 0;
        if (a->dims[i] < 0) out->dims[i] = b->dims[i];
    }
    return 1;
}
static df__shape df__ta_shape_attr(const df_node *n, const char *name) {
    const df__attr *a = df__node_attr(n, name);
    df__shape s = df__shape_unknown();
    if (a && a->kind == DF__A_SHAPE && a->u.shape.rank >= 0 && a->u.shape.rank <= DF_MAX_RANK) {
        s.rank = a->u.shape.rank;
        for (int i = 0; i < s.rank; i++) s.dims[i] = a->u.shape.dims[i];
    }
    return s;
}

/* ---- handles ---- */
static df_tensor *df__ta_handle_out(df__kctx *c, int i, int64_t id) {
    df_tensor *o = df__k_alloc(c, i, DF_RESOURCE, 0, NULL);
    if (o) { uint64_t w = ((uint64_t)DF__TA_MAGIC << 32) | (uint64_t)id; memcpy(o->data, &w, 8); }
    return o;
}
static df__tarray *df__ta_of(df__kctx *c) {
    const df_tensor *h = c->in[0];
    df__tarray *a = h->dtype == DF_RESOURCE && h->n == 1 ? df__step_ta_get(c->step, h) : NULL;
    if (!a) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Not a TensorArray handle made by TensorArrayV3 in this run");
    return a;
}
/* A new array of n elements, registered with the run; NULL with the status set. */
static df__tarray *df__ta_new(df__kctx *c, df_dtype type, int n, int64_t *id) {
    df__tarray *a = (df__tarray *)DF_MALLOC(sizeof *a);
    if (a) memset(a, 0, sizeof *a);
    if (!a || (n && !df__grow(&a->v, &a->cap, n, sizeof(df__ta_elem)))) {
        df__ta_free(a);
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making a TensorArray of size %d", n);
        return NULL;
    }
    if (n) memset(a->v, 0, (size_t)n * sizeof(df__ta_elem));
    a->n = n;
    a->type = type;
    a->elem = df__shape_unknown();
    a->marked = -1;
    int64_t got = df__step_ta_add(c->step, a);
    if (got < 0) {
        df__ta_free(a);
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making a TensorArray");
        return NULL;
    }
    *id = got;
    return a;
}
static int df__ta_scalar_flow(df__kctx *c, int i) {
    df_tensor *f = df__k_alloc(c, i, DF_FLOAT, 0, NULL);
    if (f) *(float *)f->data = 0.0f;     /* TF: the value means nothing; it is 0 */
    return f != NULL;
}

DF_PRIVATE void df__k_ta(df__kctx *c) {
    const df_tensor *sz = c->in[0];
    if (sz->dtype != DF_INT32 || sz->rank != 0) {
        char s[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray size must be scalar, but had shape: %s", df__dims_str(sz->rank, sz->dims, s, sizeof s));
        return;
    }
    int32_t n = *(const int32_t *)sz->data;
    if (n < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Size should be >= 0."); return; }
    df_dtype t = df__attr_type(c->node, "dtype");
    if (t == DF_STRING || t == DF_RESOURCE || !df_dtype_size(t)) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "TensorArrays of %s are not supported", df_dtype_name(t));
        return;
    }
    int64_t id;
    df__tarray *a = df__ta_new(c, t, n, &id);
    if (!a) return;
    a->elem = df__ta_shape_attr(c->node, "element_shape");
    a->dynamic = df__attr_b(c->node, "dynamic_size", 0);
    a->clear_after_read = df__attr_b(c->node, "clear_after_read", 1);
    a->identical = df__attr_b(c->node, "identical_element_shapes", 0);
    const char *nm = df__attr_s(c->node, "tensor_array_name");
    snprintf(a->name, sizeof a->name, "%.150s_%lld", nm && *nm ? nm : c->node->name,
             (long long)__atomic_fetch_add(&df__ta_counter, 1, __ATOMIC_RELAXED));
    if (df__ta_handle_out(c, 0, id)) df__ta_scalar_flow(c, 1);
}

/* TensorArrayGradV3 / TensorArrayGradWithShape: the gradient array of `source` for the array
   behind the handle, made on first use (sized like the array then, holding its written
   elements' shapes so unwritten reads give zeros) and found again afterwards. From then on the
   forward array no longer grows. */
DF_PRIVATE void df__k_ta_grad(df__kctx *c) {
    df__tarray *f = df__ta_of(c);
    if (!f) return;
    const char *source = df__attr_s(c->node, "source");
    if (!source) source = "";
    df__shape pre = df__shape_scalar();           /* TensorArrayGradWithShape's shape_to_prepend */
    if (c->node->op->code == 1) {
        const df_tensor *p = c->in[2];
        if (!df__is_int_tensor(p) || p->rank != 1 || p->n > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "shape_to_prepend must be an integer vector of at most %d dims", DF_MAX_RANK); return; }
        pre.rank = (int)p->n;
        for (int i = 0; i < pre.rank; i++) {
            pre.dims[i] = df__int_at(p, i);
            if (pre.dims[i] < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "shape_to_prepend has a negative dim"); return; }
        }
    }
    if (f->is_grad) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Wrong input container. %s is a gradient TensorArray", f->name); return; }
    df__spin_lock(&f->lock);
    int64_t id = -1;
    for (int i = 0; i < f->n_grads; i++) if (!strcmp(f->grads[i].source, source)) id = f->grads[i].id;
    const char *err = NULL;
    df_code code = DF_INVALID_ARGUMENT;
    if (id < 0) {
        f->dynamic = 0;
        if (f->closed) err = "has already been closed.";
        else if (f->summed) err = "was written twice at one index: gradients are impossible when multiple writes are performed to the same index";
        else if (pre.rank + (f->elem.rank > 0 ? f->elem.rank : 0) > DF_MAX_RANK) err = "would have gradient elements of too many dims";
    }
    df__tarray *g = NULL;
    if (id < 0 && !err) {
        char *src = df__strdup(source);
        int ok = src && df__grow(&f->grads, &f->cap_grads, f->n_grads + 1, sizeof(df__ta_grad));
        if (ok) g = df__ta_new(c, f->type, f->n, &id);
        if (!g) { DF_FREE(src); df__spin_unlock(&f->lock); if (!c->st->code) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
        f->grads[f->n_grads].source = src;
        f->grads[f->n_grads++].id = id;
        g->is_grad = 1;
        g->clear_after_read = 1;
        g->identical = f->identical;
        g->marked = f->marked;
        g->elem = f->elem;
        if (pre.rank && f->elem.rank >= 0) {
            g->elem.rank = pre.rank + f->elem.rank;
            for (int i = 0; i < f->elem.rank; i++) g->elem.dims[pre.rank + i] = f->elem.dims[i];
            for (int i = 0; i < pre.rank; i++) g->elem.dims[i] = pre.dims[i];
        } else if (pre.rank) {
            g->elem = df__shape_unknown();
        }
        snprintf(g->name, sizeof g->name, "%.120s@%.70s", f->name, source);
        for (int i = 0; i < f->n; i++) {          /* TF's CopyShapesFrom */
            if (!f->v[i].written) continue;
            if (pre.rank + f->v[i].shape.rank > DF_MAX_RANK) { err = "would have gradient elements of too many dims"; break; }
            g->v[i].written = 1;
            g->v[i].shape.rank = pre.rank + f->v[i].shape.rank;
            for (int k = 0; k < pre.rank; k++) g->v[i].shape.dims[k] = pre.dims[k];
            for (int k = 0; k < f->v[i].shape.rank; k++) g->v[i].shape.dims[pre.rank + k] = f->v[i].shape.dims[k];
        }
    }
    df__spin_unlock(&f->lock);
    if (err) { DF__KFAIL(c, code, "Unable to create a gradients TensorArray for %s: it %s", f->name, err); return; }
    if (df__ta_handle_out(c, 0, id)) df__ta_scalar_flow(c, 1);
}

/* ---- element access: the caller holds the lock. Each returns NULL, or a message (with the
   code in *code) naming what was wrong. ---- */
static const char *df__ta_closed(const df__tarray *a, char *msg, size_t n) {
    if (!a->closed) return NULL;
    snprintf(msg, n, "TensorArray %s has already been closed.", a->name);
    return msg;
}
/* Keeps x at index i (TF's LockedWriteOrAggregate); takes a new reference to x. */
static const char *df__ta_put(df__kctx *c, df__tarray *a, int64_t i, df_tensor *x, char *msg, size_t n) {
    char s1[96], s2[96];
    if (df__ta_closed(a, msg, n)) return msg;
    if (i < 0 || (!a->dynamic && i >= a->n)) {
        snprintf(msg, n, "TensorArray %s: Tried to write to index %lld but array is not resizeable and size is: %d", a->name, (long long)i, a->n);
        return msg;
    }
    if (i >= INT32_MAX) { snprintf(msg, n, "TensorArray %s: index %lld is too large", a->name, (long long)i); return msg; }
    if (i >= a->n) {
        int old = a->n;
        if (!df__grow(&a->v, &a->cap, (int)i + 1, sizeof(df__ta_elem))) { snprintf(msg, n, "Out of memory growing TensorArray %s", a->name); return msg; }
        memset(a->v + old, 0, (size_t)(i + 1 - old) * sizeof(df__ta_elem));
        a->n = (int)i + 1;
    }
    df__ta_elem *e = &a->v[i];
    if (x->dtype != a->type) {
        snprintf(msg, n, "TensorArray %s: Could not write to TensorArray index %lld because the value dtype is %s but TensorArray dtype is %s.",
                 a->name, (long long)i, df_dtype_name(x->dtype), df_dtype_name(a->type));
        return msg;
    }
    df__shape xs = df__shape_of(x);
    if (!df__ta_fits(&a->elem, &xs)) {
        snprintf(msg, n, "TensorArray %s: Could not write to TensorArray index %lld because the value shape is %s which is incompatible "
                 "with the TensorArray's inferred element shape: %s (consider setting infer_shape=False).", a->name, (long long)i,
                 df__ta_shape_str(&xs, s1, sizeof s1), df__ta_shape_str(&a->elem, s2, sizeof s2));
        return msg;
    }
    if (a->identical && !df__ta_full(&a->elem)) a->elem = xs;
    if (e->read) { snprintf(msg, n, "TensorArray %s: Could not write to TensorArray index %lld because it has already been read.", a->name, (long long)i); return msg; }
    if (e->written && !a->is_grad) {
        snprintf(msg, n, "TensorArray %s: Could not write to TensorArray index %lld because it has already been written to.", a->name, (long long)i);
        return msg;
    }
    if (!e->written) {
        e->t = df_tensor_retain(x);
        e->shape = xs;
        e->written = 1;
        return NULL;
    }
    if (!df__shapes_equal(&e->shape, &xs)) {
        snprintf(msg, n, "TensorArray %s: Could not aggregate to TensorArray index %lld because the existing shape is %s but the new input shape is %s.",
                 a->name, (long long)i, df__ta_shape_str(&e->shape, s1, sizeof s1), df__ta_shape_str(&xs, s2, sizeof s2));
        return msg;
    }
    if (!e->t || !e->t->n) {                      /* only a shape (zeros) so far */
        df_tensor_release(e->t);
        e->t = df_tensor_retain(x);
        return NULL;
    }
    if (x->dtype != DF_FLOAT && x->dtype != DF_DOUBLE && x->dtype != DF_INT32 && x->dtype != DF_INT64) {
        snprintf(msg, n, "TensorArray %s: Could not aggregate %s values at index %lld", a->name, df_dtype_name(x->dtype), (long long)i);
        return msg;
    }
    if (e->local) {
        if (df__add_data(DF__B_ADD, e->t, e->t, x, c->st)) { snprintf(msg, n, "%.300s", c->st->message); return msg; }
    } else {
        df_tensor *sum = df__tensor_alloc(c->alloc, x->dtype, x->rank, x->dims, c->st);
        if (!sum || df__add_data(DF__B_ADD, sum, e->t, x, c->st)) {
            df_tensor_release(sum);
            snprintf(msg, n, "Out of memory summing into TensorArray %s", a->name);
            return msg;
        }
        df_tensor_release(e->t);
        e->t = sum;
        e->local = 1;
    }
    a->summed = 1;
    return NULL;
}
/* The value at index i, a new reference (TF's LockedRead): zeros where TF gives them. */
static df_tensor *df__ta_get(df__kctx *c, df__tarray *a, int64_t i, char *msg, size_t n) {
    char s1[96];
    if (df__ta_closed(a, msg, n)) return NULL;
    if (i < 0 || (!a->is_grad && i >= a->n)) { snprintf(msg, n, "Tried to read from index %lld but array size is: %d", (long long)i, a->n); return NULL; }
    if (i >= INT32_MAX) { snprintf(msg, n, "TensorArray %s: index %lld is too large", a->name, (long long)i); return NULL; }
    if (i >= a->n || !a->v[i].written) {
        /* TF: zeros of the element shape (a gradient array: the shape the forward element had) */
        df__shape s;
        if (a->is_grad && i < a->n && a->v[i].shape.rank > 0) s = a->v[i].shape;
        else if (!df__ta_full(&a->elem)) {
            snprintf(msg, n, "TensorArray %s: Could not read from TensorArray index %lld.  Furthermore, the element shape is not fully "
                     "defined: %s.  It is possible you are working with a resizeable TensorArray and stop_gradients is not allowing the "
                     "gradients to be written.  If you set the full element_shape property on the forward TensorArray, the proper "
                     "all-zeros tensor will be returned instead of incurring this error.", a->name, (long long)i, df__ta_shape_str(&a->elem, s1, sizeof s1));
            return NULL;
        } else s = a->elem;
        if (i >= a->n) {
            int old = a->n;
            if (!df__grow(&a->v, &a->cap, (int)i + 1, sizeof(df__ta_elem))) { snprintf(msg, n, "Out of memory growing TensorArray %s", a->name); return NULL; }
            memset(a->v + old, 0, (size_t)(i + 1 - old) * sizeof(df__ta_elem));
            a->n = (int)i + 1;
            for (int k = old; k <= i; k++) { a->v[k].shape = s; a->v[k].written = 1; }
        } else {
            a->v[i].shape = s;
            a->v[i].written = 1;
        }
    }
    df__ta_elem *e = &a->v[i];
    if (e->cleared) {
        snprintf(msg, n, "TensorArray %s: Could not read index %lld twice because it was cleared after a previous read (perhaps try setting "
                 "clear_after_read = false?).", a->name, (long long)i);
        return NULL;
    }
    if (!e->t || !e->t->n) {
        df_tensor *z = df__tensor_alloc(c->alloc, a->type, e->shape.rank, e->shape.dims, c->st);
        if (!z || df__zero_data(z, c->st)) { df_tensor_release(z); snprintf(msg, n, "Out of memory reading TensorArray %s", a->name); return NULL; }
        df_tensor_release(e->t);
        e->t = z;
    }
    df_tensor *r = df_tensor_retain(e->t);
    if (a->clear_after_read) { df_tensor_release(e->t); e->t = NULL; e->cleared = 1; }
    e->read = 1;
    return r;
}
static void df__ta_fail(df__kctx *c, const char *msg) {
    DF__KFAIL(c, strncmp(msg, "Out of memory", 13) ? DF_INVALID_ARGUMENT : DF_RESOURCE_EXHAUSTED, "%.900s", msg);
}
static int df__ta_dtype_ok(df__kctx *c, const df__tarray *a) {
    df_dtype t = df__attr_type(c->node, "dtype");
    if (t == a->type) return 1;
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray dtype is %s but Op requested dtype %s.", df_dtype_name(a->type), df_dtype_name(t));
    return 0;
}
static int df__ta_index(df__kctx *c, const df_tensor *t, int64_t *i) {
    if (t->dtype != DF_INT32 || t->rank != 0) {
        char s[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray index must be scalar, but had shape: %s", df__dims_str(t->rank, t->dims, s, sizeof s));
        return 0;
    }
    *i = *(const int32_t *)t->data;
    return 1;
}
static int df__ta_indices(df__kctx *c, const df_tensor *t) {
    if (t->dtype == DF_INT32 && t->rank == 1) return 1;
    char s[96];
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected indices to be a vector, but received shape: %s", df__dims_str(t->rank, t->dims, s, sizeof s));
    return 0;
}

DF_PRIVATE void df__k_ta_write(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    int64_t i;
    if (!a || !df__ta_index(c, c->in[1], &i)) return;
    if (c->in[2]->dtype != a->type) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray dtype is %s but Op is trying to write dtype %s.", df_dtype_name(a->type), df_dtype_name(c->in[2]->dtype));
        return;
    }
    char msg[1024];
    df__spin_lock(&a->lock);
    const char *err = df__ta_put(c, a, i, c->in[2], msg, sizeof msg);
    df__spin_unlock(&a->lock);
    if (err) { df__ta_fail(c, err); return; }
    df__k_forward(c, 0, 3);
}
DF_PRIVATE void df__k_ta_read(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    int64_t i;
    if (!a || !df__ta_index(c, c->in[1], &i) || !df__ta_dtype_ok(c, a)) return;
    char msg[1024];
    df__spin_lock(&a->lock);
    df_tensor *x = df__ta_get(c, a, i, msg, sizeof msg);
    df__spin_unlock(&a->lock);
    if (!x) { df__ta_fail(c, msg); return; }
    c->out[0] = x;
}

/* Stacks values[0..n) (one shape) into a new tensor of shape [n] + that shape as output 0. */
static void df__ta_stack_into(df__kctx *c, df_tensor **vals, int64_t n, const df__shape *es) {
    int64_t dims[DF_MAX_RANK];
    dims[0] = n;
    for (int k = 0; k < es->rank; k++) dims[k + 1] = es->dims[k];
    df_tensor *o = df__k_alloc(c, 0, vals[0]->dtype, es->rank + 1, dims);
    if (!o) return;
    size_t off = 0;
    for (int64_t i = 0; i < n && !c->st->code; i++) {
        df_tensor part = *o;
        part.data = (char *)o->data + off;
        part.nbytes = vals[i]->nbytes;
        df__copy_data(&part, vals[i], c->st);
        off += vals[i]->nbytes;
    }
}
DF_PRIVATE void df__k_ta_gather(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    if (!a || !df__ta_dtype_ok(c, a) || !df__ta_indices(c, c->in[1])) return;
    const df_tensor *ix = c->in[1];
    df__shape want = df__ta_shape_attr(c->node, "element_shape");
    char msg[1024], s1[96], s2[96];
    int64_t n = ix->n;
    df_tensor **vals = (df_tensor **)DF_MALLOC((size_t)(n + 1) * sizeof(df_tensor *));
    if (!vals) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    const char *err = NULL;
    int64_t got = 0;
    df__spin_lock(&a->lock);
    df__shape merged;
    if (!(err = df__ta_closed(a, msg, sizeof msg))) {
        if (!df__ta_merge(&a->elem, &want, &merged)) {
            snprintf(msg, sizeof msg, "Incompatible shapes during merge: %s vs. %s", df__ta_shape_str(&a->elem, s1, sizeof s1), df__ta_shape_str(&want, s2, sizeof s2));
            err = msg;
        } else {
            a->elem = merged;
        }
    }
    for (; !err && got < n; got++) {
        vals[got] = df__ta_get(c, a, ((const int32_t *)ix->data)[got], msg, sizeof msg);
        if (!vals[got]) err = msg;
    }
    df__spin_unlock(&a->lock);
    if (err) { df__ta_fail(c, err); goto out; }
    if (n == 0) {
        if (!df__ta_full(&want)) {
            DF__KFAIL(c, DF_UNIMPLEMENTED, "TensorArray has size zero, but element shape %s is not fully defined. Currently only static shapes "
                      "are supported when packing zero-size TensorArrays.", df__ta_shape_str(&want, s1, sizeof s1));
            goto out;
        }
        int64_t dims[DF_MAX_RANK];
        dims[0] = 0;
        for (int k = 0; k < want.rank && k + 1 < DF_MAX_RANK; k++) dims[k + 1] = want.dims[k];
        df__k_alloc(c, 0, a->type, want.rank + 1 > DF_MAX_RANK ? DF_MAX_RANK : want.rank + 1, dims);
        goto out;
    }
    df__shape s0 = df__shape_of(vals[0]);
    if (!df__ta_fits(&want, &s0)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray was passed element_shape %s which does not match the Tensor at index 0: %s",
                  df__ta_shape_str(&want, s1, sizeof s1), df__ta_shape_str(&s0, s2, sizeof s2));
        goto out;
    }
    if (s0.rank + 1 > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray elements of rank %d cannot be stacked (at most %d dims)", s0.rank, DF_MAX_RANK); goto out; }
    for (int64_t i = 1; i < n; i++) {
        df__shape si = df__shape_of(vals[i]);
        if (!df__shapes_equal(&s0, &si)) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray has inconsistent shapes.  Index 0 has shape: %s but index %lld has shape: %s",
                      df__ta_shape_str(&s0, s1, sizeof s1), (long long)i, df__ta_shape_str(&si, s2, sizeof s2));
            goto out;
        }
    }
    df__ta_stack_into(c, vals, n, &s0);
out:
    for (int64_t i = 0; i < got; i++) df_tensor_release(vals[i]);
    DF_FREE(vals);
}
DF_PRIVATE void df__k_ta_concat(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    if (!a || !df__ta_dtype_ok(c, a)) return;
    df__shape want = df__ta_shape_attr(c->node, "element_shape_except0");
    char msg[1024], s1[96], s2[96];
    df__spin_lock(&a->lock);
    const char *err = df__ta_closed(a, msg, sizeof msg);
    int64_t n = err ? 0 : (a->is_grad && a->marked >= 0 ? a->marked : a->n);
    df_tensor **vals = err ? NULL : (df_tensor **)DF_MALLOC((size_t)(n + 1) * sizeof(df_tensor *));
    if (!err && !vals) err = strcpy(msg, "Out of memory");
    int64_t got = 0;
    for (; !err && got < n; got++) {
        vals[got] = df__ta_get(c, a, got, msg, sizeof msg);
        if (!vals[got]) err = msg;
    }
    df__spin_unlock(&a->lock);
    if (err) { df__ta_fail(c, err); goto out; }
    int64_t d0 = n;
    df_tensor *lens = df__k_alloc(c, 1, DF_INT64, 1, &d0);
    if (!lens) goto out;
    if (n == 0) {
        if (!df__ta_full(&want) || want.rank + 1 > DF_MAX_RANK) {
            DF__KFAIL(c, DF_UNIMPLEMENTED, "TensorArray has size zero, but element_shape_except0 %s is not fully defined. Currently only static "
                      "shapes are supported when concatenating zero-size TensorArrays.", df__ta_shape_str(&want, s1, sizeof s1));
            goto out;
        }
        int64_t dims[DF_MAX_RANK];
        dims[0] = 0;
        for (int k = 0; k < want.rank; k++) dims[k + 1] = want.dims[k];
        df__k_alloc(c, 0, a->type, want.rank + 1, dims);
        goto out;
    }
    df__shape rest0 = df__shape_scalar();
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        const df_tensor *v = vals[i];
        if (v->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat saw a scalar shape at index %lld but requires at least vectors.  Did you mean to call pack?", (long long)i); goto out; }
        df__shape rest;
        rest.rank = v->rank - 1;
        for (int k = 1; k < v->rank; k++) rest.dims[k - 1] = v->dims[k];
        ((int64_t *)lens->data)[i] = v->dims[0];
        total += v->dims[0];
        if (i == 0) {
            rest0 = rest;
            if (!df__ta_fits(&want, &rest)) {
                DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray was passed element_shape_except0 %s but index 0 has (excepting dimension 0) shape: %s "
                          "which does not match.", df__ta_shape_str(&want, s1, sizeof s1), df__ta_shape_str(&rest, s2, sizeof s2));
                goto out;
            }
        } else if (!df__shapes_equal(&rest0, &rest)) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: %s but index %lld "
                      "has (excepting dimension 0) shape: %s", df__ta_shape_str(&rest0, s1, sizeof s1), (long long)i, df__ta_shape_str(&rest, s2, sizeof s2));
            goto out;
        }
    }
    int64_t dims[DF_MAX_RANK];
    dims[0] = total;
    for (int k = 0; k < rest0.rank; k++) dims[k + 1] = rest0.dims[k];
    df_tensor *o = df__k_alloc(c, 0, a->type, rest0.rank + 1, dims);
    size_t off = 0;
    for (int64_t i = 0; o && i < n && !c->st->code; i++) {
        df_tensor part = *o;
        part.data = (char *)o->data + off;
        part.nbytes = vals[i]->nbytes;
        df__copy_data(&part, vals[i], c->st);
        off += vals[i]->nbytes;
    }
out:
    for (int64_t i = 0; i < got; i++) df_tensor_release(vals[i]);
    DF_FREE(vals);
}

/* Rows [lo, lo + len) of x (dim 0) as a new tensor, with dim 0 set to len (rank kept): a view
   of x's buffer (no copy) where the rows start on a 64-byte boundary, as TensorFlow shares
   aligned slices; else a copy. Kernels never write into views (they forward only tensors
   without a base), so the rows stay x's. */
static df_tensor *df__ta_rows(df__kctx *c, const df_tensor *x, int64_t lo, int64_t len, int keep_dim0) {
    int64_t dims[DF_MAX_RANK];
    int rank = keep_dim0 ? x->rank : x->rank - 1;
    if (keep_dim0) { dims[0] = len; for (int k = 1; k < x->rank; k++) dims[k] = x->dims[k]; }
    else for (int k = 1; k < x->rank; k++) dims[k - 1] = x->dims[k];
    size_t row = x->dims[0] ? x->nbytes / (size_t)x->dims[0] : 0;
    char *at = (char *)x->data + (size_t)lo * row;
    if (x->dtype != DF_STRING && x->dtype != DF_VARIANT && x->dtype != DF_RESOURCE && len > 0 && row &&
        (uintptr_t)at % 64 == 0) {
        df_tensor *v = df__tensor_view((df_tensor *)x, rank, dims, c->st);
        if (!v) return NULL;
        v->data = at;
        v->nbytes = (size_t)len * row;
        v->n = x->n / x->dims[0] * len;
        return v;
    }
    df_tensor *t = df__tensor_alloc(c->alloc, x->dtype, rank, dims, c->st);
    if (!t) return NULL;
    df_tensor part = *x;
    part.data = (char *)x->data + (size_t)lo * row;
    part.nbytes = t->nbytes;
    if (df__copy_data(t, &part, c->st)) { df_tensor_release(t); return NULL; }
    return t;
}
/* Writes parts[k] at idx[k] under one lock, in reverse order as TF does; releases the parts. */
static void df__ta_put_many(df__kctx *c, df__tarray *a, const int32_t *idx, int64_t first, df_tensor **parts, int64_t n, int32_t mark) {
    char msg[1024];
    const char *err = NULL;
    df__spin_lock(&a->lock);
    if (mark >= 0 && !(err = df__ta_closed(a, msg, sizeof msg)) && !a->is_grad) a->marked = mark;
    for (int64_t k = n - 1; !err && k >= 0; k--) err = df__ta_put(c, a, idx ? idx[k] : first + k, parts[k], msg, sizeof msg);
    df__spin_unlock(&a->lock);
    for (int64_t k = 0; k < n; k++) df_tensor_release(parts[k]);
    if (err) df__ta_fail(c, err);
}
DF_PRIVATE void df__k_ta_scatter(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    if (!a || !df__ta_indices(c, c->in[1])) return;
    const df_tensor *ix = c->in[1], *x = c->in[2];
    char s1[96];
    if (x->dtype != a->type) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray dtype is %s but Op is trying to write dtype %s.", df_dtype_name(a->type), df_dtype_name(x->dtype)); return; }
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input value for unpack must be at least a vector but received shape: %s", df__dims_str(x->rank, x->dims, s1, sizeof s1)); return; }
    if (ix->n != x->dims[0]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected len(indices) == values.shape[0], but saw: %lld vs. %lld", (long long)ix->n, (long long)x->dims[0]); return; }
    const int32_t *idx = (const int32_t *)ix->data;
    int64_t n = ix->n, max = -1;
    for (int64_t k = 0; k < n; k++) if (idx[k] > max) max = idx[k];
    df__spin_lock(&a->lock);
    int size = a->n, dyn = a->dynamic;
    df__spin_unlock(&a->lock);
    if (dyn && size < max + 1) size = (int)max + 1;
    if (max >= size) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Max scatter index must be < array size (%lld vs. %d)", (long long)max, size); return; }
    df_tensor **parts = (df_tensor **)DF_MALLOC((size_t)(n + 1) * sizeof(df_tensor *));
    if (!parts) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    int64_t made = 0;
    for (; made < n; made++) if (!(parts[made] = df__ta_rows(c, x, made, 1, 0))) break;
    if (made < n) {
        for (int64_t k = 0; k < made; k++) df_tensor_release(parts[k]);
        DF_FREE(parts);
        char m[sizeof c->st->message];
        memcpy(m, c->st->message, sizeof m);
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "%.400s", m);
        return;
    }
    df__ta_put_many(c, a, idx, 0, parts, n, -1);
    DF_FREE(parts);
    if (!c->st->code) df__k_forward(c, 0, 3);
}
DF_PRIVATE void df__k_ta_split(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    if (!a) return;
    const df_tensor *x = c->in[1], *len = c->in[2];
    char s1[96];
    if (len->dtype != DF_INT64 || len->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected lengths to be a vector, received shape: %s", df__dims_str(len->rank, len->dims, s1, sizeof s1)); return; }
    if (len->n >= INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected lengths to have < max int32 entries"); return; }
    const int64_t *l = (const int64_t *)len->data;
    int64_t n = len->n, total = 0;
    for (int64_t k = 0; k < n; k++) {
        if (l[k] < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected lengths to be non-negative, but lengths[%lld] is %lld", (long long)k, (long long)l[k]); return; }
        total += l[k];
    }
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected value to be at least a vector, but received shape: %s", df__dims_str(x->rank, x->dims, s1, sizeof s1)); return; }
    if (total != x->dims[0]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is %lld and value's shape is: %s",
                  (long long)total, df__dims_str(x->rank, x->dims, s1, sizeof s1));
        return;
    }
    df__spin_lock(&a->lock);
    int64_t size = a->n;
    int dyn = a->dynamic;
    df__spin_unlock(&a->lock);
    if (dyn && size < n) size = n;
    if (size != n) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray's size is not equal to the size of lengths (%lld vs. %lld), and the TensorArray is not marked "
                  "as dynamically resizeable", (long long)size, (long long)n);
        return;
    }
    if (x->dtype != a->type) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorArray dtype is %s but Op is trying to write dtype %s.", df_dtype_name(a->type), df_dtype_name(x->dtype)); return; }
    df_tensor **parts = (df_tensor **)DF_MALLOC((size_t)(n + 1) * sizeof(df_tensor *));
    if (!parts) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    int64_t made = 0, at = 0;
    for (; made < n; at += l[made], made++) if (!(parts[made] = df__ta_rows(c, x, at, l[made], 1))) break;
    if (made < n) {
        for (int64_t k = 0; k < made; k++) df_tensor_release(parts[k]);
        DF_FREE(parts);
        char m[sizeof c->st->message];
        memcpy(m, c->st->message, sizeof m);
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "%.400s", m);
        return;
    }
    df__ta_put_many(c, a, NULL, 0, parts, n, (int32_t)n);
    DF_FREE(parts);
    if (!c->st->code) df__k_forward(c, 0, 3);
}
DF_PRIVATE void df__k_ta_size(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    if (!a) return;
    char msg[256];
    df__spin_lock(&a->lock);
    const char *err = df__ta_closed(a, msg, sizeof msg);
    int n = a->n;
    df__spin_unlock(&a->lock);
    if (err) { df__ta_fail(c, err); return; }
    df_tensor *o = df__k_alloc(c, 0, DF_INT32, 0, NULL);
    if (o) *(int32_t *)o->data = n;
}
/* TF clears the array and marks it closed; it stays in the run until the run ends. */
DF_PRIVATE void df__k_ta_close(df__kctx *c) {
    df__tarray *a = df__ta_of(c);
    if (!a) return;
    df__spin_lock(&a->lock);
    for (int i = 0; i < a->n; i++) df_tensor_release(a->v[i].t);
    a->n = 0;
    a->closed = 1;
    df__spin_unlock(&a->lock);
}

/* ---- shape functions ---- */
/* The element shape of the TensorArrayV3 a handle comes from (through Enter, Identity, Switch),
   or unknown. */
static df__shape df__ta_source_shape(df_output h) {
    for (int depth = 0; h.node && depth < 64; depth++) {
        const df_node *n = h.node;
        if (!strcmp(n->op->name, "TensorArrayV3")) return df__ta_shape_attr(n, "element_shape");
        if (!n->n_inputs || !((n->op->flags & (DF__OP_ENTER | DF__OP_SWITCH)) || !strcmp(n->op->name, "Identity"))) break;
        h = n->inputs[0];
    }
    return df__shape_unknown();
}
DF_PRIVATE df_code df__sf_ta(df__shape_ctx *c) {
    *df__sc_out(c, 0) = df__shape_scalar();
    *df__sc_out(c, 1) = df__shape_scalar();
    return DF_OK;
}
DF_PRIVATE df_code df__sf_ta_read(df__shape_ctx *c) {
    *df__sc_out(c, 0) = df__ta_source_shape(c->node->inputs[0]);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_ta_gather(df__shape_ctx *c) {
    df__shape e = df__ta_shape_attr(c->node, "element_shape"), s = df__ta_source_shape(c->node->inputs[0]), m, *o = df__sc_out(c, 0);
    if (!df__ta_merge(&e, &s, &m)) m = e;
    if (m.rank < 0 || m.rank + 1 > DF_MAX_RANK) { *o = df__shape_unknown(); return DF_OK; }
    o->rank = m.rank + 1;
    o->dims[0] = c->in_shapes[1].rank == 1 ? c->in_shapes[1].dims[0] : -1;
    for (int k = 0; k < m.rank; k++) o->dims[k + 1] = m.dims[k];
    return DF_OK;
}
DF_PRIVATE df_code df__sf_ta_concat(df__shape_ctx *c) {
    df__shape e = df__ta_shape_attr(c->node, "element_shape_except0"), *o = df__sc_out(c, 0), *l = df__sc_out(c, 1);
    if (e.rank < 0 || e.rank + 1 > DF_MAX_RANK) *o = df__shape_unknown();
    else {
        o->rank = e.rank + 1;
        o->dims[0] = -1;
        for (int k = 0; k < e.rank; k++) o->dims[k + 1] = e.dims[k];
    }
    l->rank = 1;
    l->dims[0] = -1;
    return DF_OK;
}

/* ---- gradients (TensorFlow's python/ops/tensor_array_grad.py): Read <-> Write, Gather <->
   Scatter, Concat <-> Split. Each finds the gradient array of its source (the gradient's name
   scope) with TensorArrayGradV3; the flow carries the gradient between them. ---- */
static df_output df__ta_op_out(df_node *n, int i) { df_output o = {n, i}; return o; }
/* TF's _GetGradSource: the gradient's name up to its last part that starts with "gradients". */
static void df__ta_grad_source(df_output dy, char *buf, size_t n) {
    const char *name = dy.node ? dy.node->name : "", *end = NULL;
    for (const char *p = name; *p; ) {
        if (!strncmp(p, "gradients", 9)) { end = strchr(p, '/'); if (!end) end = p + strlen(p); }
        const char *slash = strchr(p, '/');
        if (!slash) break;
        p = slash + 1;
    }
    if (!end) { snprintf(buf, n, "gradients"); return; }
    snprintf(buf, n, "%.*s", (int)(end - name), name);
}
/* The gradient array of the array behind `handle` for source: its handle, and in *gflow the
   flow to use with it (TF: the flow, after the gradient array is made). */
static df_output df__ta_grad_array(df_graph *g, df_output handle, df_output flow, const char *source, df_output *gflow) {
    df_op_builder *b = df_op_new(g, "TensorArrayGradV3", NULL);
    df_op_add_input(b, handle);
    df_op_add_input(b, flow);
    df_op_set_attr_string(b, "source", source);
    df_node *gh = df_op_finish(b);
    b = df_op_new(g, "Identity", NULL);
    df_op_add_input(b, flow);
    if (gh) df_op_add_control_input(b, gh);
    *gflow = df__ta_op_out(df_op_finish(b), 0);
    return df__ta_op_out(gh, 0);
}
/* TF's write barrier: the incoming flow gradient, after the forward op's flow_out. Outside
   loops only: in a gradient loop the forward loop has finished before any of it runs. */
static df_output df__ta_barrier(df_graph *g, const df_node *n, df_output flow) {
    if (df__node_loop(n)) return flow;
    df_output fo = df_identity(g, df__ta_op_out((df_node *)n, 0));
    df_op_builder *b = df_op_new(g, "Identity", NULL);
    df_op_add_input(b, flow);
    if (fo.node) df_op_add_control_input(b, fo.node);
    return df__ta_op_out(df_op_finish(b), 0);
}
static df_node *df__ta_op(df_graph *g, const char *op, const df_output *ins, int n, const char *tattr, df_dtype t) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    df_op_set_attr_type(b, tattr, t);
    return df_op_finish(b);
}
/* Read and Gather (handle, index or indices, flow_in) -> value: the gradient writes dy into the
   gradient array with `op` (Write, Scatter) at the same places. */
static void df__g_ta_get(df__gfn *c, const char *op) {
    df_graph *g = c->g;
    char src[256];
    if (!c->dy[0].node) return;
    df__ta_grad_source(c->dy[0], src, sizeof src);
    df_output gflow, gh = df__ta_grad_array(g, c->n->inputs[0], c->n->inputs[2], src, &gflow);
    df_output ins[4] = {gh, c->n->inputs[1], c->dy[0], gflow};
    c->dx[2] = df__ta_op_out(df__ta_op(g, op, ins, 4, "T", df__attr_type(c->n, "dtype")), 0);
}
/* Write and Scatter (handle, index or indices, value, flow_in) -> flow_out: the value's gradient
   is read from the gradient array with `op` (Read, Gather); the flow's is the incoming one. */
static void df__g_ta_put(df__gfn *c, const char *op) {
    df_graph *g = c->g;
    char src[256];
    if (!c->dy[0].node) return;
    df__ta_grad_source(c->dy[0], src, sizeof src);
    df_output flow = df__ta_barrier(g, c->n, c->dy[0]);
    df_output gflow, gh = df__ta_grad_array(g, c->n->inputs[0], flow, src, &gflow);
    df_output ins[3] = {gh, c->n->inputs[1], gflow};
    c->dx[2] = df__ta_op_out(df__ta_op(g, op, ins, 3, "dtype", df__attr_type(c->n, "T")), 0);
    c->dx[3] = flow;
}
DF_PRIVATE void df__g_ta_read(df__gfn *c) { df__g_ta_get(c, "TensorArrayWriteV3"); }
DF_PRIVATE void df__g_ta_gather(df__gfn *c) { df__g_ta_get(c, "TensorArrayScatterV3"); }
DF_PRIVATE void df__g_ta_write(df__gfn *c) { df__g_ta_put(c, "TensorArrayReadV3"); }
DF_PRIVATE void df__g_ta_scatter(df__gfn *c) { df__g_ta_put(c, "TensorArrayGatherV3"); }
DF_PRIVATE void df__g_ta_concat(df__gfn *c) {           /* (handle, flow_in) -> (value, lengths) */
    df_graph *g = c->g;
    char src[256];
    if (!c->dy[0].node) return;
    df__ta_grad_source(c->dy[0], src, sizeof src);
    df_output gflow, gh = df__ta_grad_array(g, c->n->inputs[0], c->n->inputs[1], src, &gflow);
    df_output ins[4] = {gh, c->dy[0], df__ta_op_out(c->n, 1), gflow};
    c->dx[1] = df__ta_op_out(df__ta_op(g, "TensorArraySplitV3", ins, 4, "T", df__attr_type(c->n, "dtype")), 0);
}
DF_PRIVATE void df__g_ta_split(df__gfn *c) {            /* (handle, value, lengths, flow_in) -> flow_out */
    df_graph *g = c->g;
    char src[256];
    if (!c->dy[0].node) return;
    df__ta_grad_source(c->dy[0], src, sizeof src);
    df_output flow = df__ta_barrier(g, c->n, c->dy[0]);
    df_output gflow, gh = df__ta_grad_array(g, c->n->inputs[0], flow, src, &gflow);
    df_output ins[2] = {gh, gflow};
    c->dx[1] = df__ta_op_out(df__ta_op(g, "TensorArrayConcatV3", ins, 2, "dtype", df__attr_type(c->n, "T")), 0);
    c->dx[3] = flow;
}
