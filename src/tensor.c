/* ==========================================================================================
   src/tensor.c: Tensors                                                             >>tensor
   A tensor is a header (dtype, shape, refcount) over a 64-byte aligned buffer from a BFC
   allocator. A view (Reshape, Identity) shares the buffer by holding a reference to its base.
   Element counts and byte sizes are checked for int64/size_t overflow before anything is made.
   A DF_VARIANT buffer holds payload pointers (NULL or one reference each), zeroed when made
   and released with the buffer, so its header is never recycled with payloads in it.
   ========================================================================================== */

/* A device's allocator, reference counted: tensors fetched from a session keep their buffers
   (and so the allocator) alive after the session is freed. Small tensors (at most
   DF__RECYCLE_BYTES, each with one 256-byte chunk) are recycled whole, header and chunk: loops
   make and drop scalars at a high rate. Two levels: each thread keeps a few per-allocator stacks
   (df__tc below: no lock, no atomic), over the allocator's shared stack under its spinlock.
   A tensor in a thread's stack keeps its reference to the allocator (so popping or pushing one
   touches no shared line); one in the shared stack holds none, and the last release drains those.
   DF_NO_TENSOR_RECYCLE turns both off, so that ASan sees a tensor used after its last release. */
#define DF__RECYCLE_BYTES 256
static void df__allocator_destroy(df__allocator *a) {
    for (int i = 0; i < a->n_recycled; i++) { df_bfc_free(a->bfc, a->recycled[i]->data); DF_FREE(a->recycled[i]); }
    df_bfc_free_all(a->bfc);
    if (a->on_release) a->on_release(a->on_release_arg);
    DF_FREE(a);
}
/* Drops k references (a tensor's, or those of k tensors from a thread's stack). */
static void df__allocator_unref(df__allocator *a, int k) {
    if (__atomic_sub_fetch(&a->refs, k, __ATOMIC_ACQ_REL) == 0) df__allocator_destroy(a);
}
DF_PRIVATE df__allocator *df__allocator_new(const df_bfc_options *o) {
    df__allocator *a = (df__allocator *)DF_MALLOC(sizeof *a);
    if (!a) return NULL;
    memset(a, 0, sizeof *a);
    a->refs = 1;
    if (!(a->bfc = df_bfc_new(o))) { DF_FREE(a); return NULL; }
    return a;
}

/* ---- the threads' stacks of recycled tensors ----
   A thread's df__tc has DF__TC_WAYS ways, each a stack of up to DF__TC_DEPTH tensors of one
   allocator; only the owning thread reads or writes them. Invariants: every tensor in a way is
   a whole small tensor of way.a (no base, not a variant, its 256-byte chunk) holding one
   reference to way.a, so a way with n > 0 keeps its allocator alive; a way with n == 0 may name
   an allocator that is gone (a hint, never followed). An allocator's tc_state says whether
   threads may keep its tensors: 0 not yet decided, DF__TC_OK yes, DF__TC_CLOSED bit no
   (its owner let go: the tensors left go back to the shared stack, so that the last release
   frees it at once; GPU allocators, whose owner closes the device when they go, and the
   process-wide host allocator, whose held blocks the leak checks count, never use them).
   A full way moves half its tensors to the shared stack, an empty one takes up to half a way
   from it, both under one lock. A thread's exit (a pthread key) gives its ways back. */
enum { DF__TC_OK = 1, DF__TC_CLOSED = 2 };
#ifndef DF_NO_TENSOR_RECYCLE
#define DF__TC_WAYS 4
#define DF__TC_DEPTH 32
typedef struct df__tc_way { df__allocator *a; int n; df_tensor **v; } df__tc_way;
typedef struct df__tc {
    df__tc_way w[DF__TC_WAYS];          /* w[0]: the allocator last used (the fast paths' way) */
    df_tensor *store[DF__TC_WAYS][DF__TC_DEPTH];   /* the ways' stacks (w[i].v points into it) */
    int hooked;                         /* the thread-exit hook is set */
} df__tc;
#ifndef DF_NO_THREADS
static _Thread_local df__tc df__tls_tc;
static pthread_once_t df__tc_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t df__tc_key;
static int df__tc_key_ok;
#else
static df__tc df__tls_tc;
#endif

/* Gives way w's tensors back: onto the shared stack as far as it has room, the rest freed;
   then drops the references they held (which may free the allocator). */
static void df__tc_drain(df__tc_way *w, int keep) {
    int n = w->n - keep;
    if (n <= 0) return;
    df__allocator *a = w->a;
    df_tensor **v = w->v + keep;
    w->n = keep;
    df__spin_lock(&a->recycle_lock);
    int k = a->n_recycled, m = DF__MIN(n, DF__RECYCLE_SLOTS - k);
    for (int i = 0; i < m; i++) a->recycled[k + i] = v[i];
    __atomic_store_n(&a->n_recycled, k + m, __ATOMIC_RELAXED);
    df__spin_unlock(&a->recycle_lock);
    for (int i = m; i < n; i++) { df_bfc_free(a->bfc, v[i]->data); DF_FREE(v[i]); }
    df__allocator_unref(a, n);
}

#ifndef DF_NO_THREADS
static void df__tc_thread_exit(void *p) {
    df__tc *c = (df__tc *)p;
    c->hooked = 0;
    for (int i = 0; i < DF__TC_WAYS; i++) df__tc_drain(&c->w[i], 0);
}
static void df__tc_key_make(void) { df__tc_key_ok = pthread_key_create(&df__tc_key, df__tc_thread_exit) == 0; }
#endif

/* Whether threads may keep a's tensors (decided once, on first use). */
static int df__tc_usable(df__allocator *a) {
    int s = __atomic_load_n(&a->tc_state, __ATOMIC_ACQUIRE);
    if (!s) {
        int want = a->gpu || a->on_release ? DF__TC_CLOSED : DF__TC_OK;
        if (!__atomic_compare_exchange_n(&a->tc_state, &s, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return s == DF__TC_OK;
        s = want;
    }
    return s == DF__TC_OK;
}

/* The calling thread's way for a, made if need be (ways of closed allocators are given back on
   the way), moved to the front; NULL if this thread cannot keep a's tensors. */
static df__tc_way *df__tc_way_for(df__allocator *a) {
    df__tc *c = &df__tls_tc;
    df__tc_way *found = NULL, *empty = NULL;
    if (!c->w[0].v)
        for (int i = 0; i < DF__TC_WAYS; i++) c->w[i].v = c->store[i];
    for (int i = 0; i < DF__TC_WAYS; i++) {
        df__tc_way *w = &c->w[i];
        if (w->a == a) { found = w; continue; }
        if (w->n && (__atomic_load_n(&w->a->tc_state, __ATOMIC_ACQUIRE) & DF__TC_CLOSED)) df__tc_drain(w, 0);
        if (!w->n && !empty) empty = w;
    }
    if (!(found && found->n) && !df__tc_usable(a)) return NULL;   /* (an empty way's a is a hint) */
#ifndef DF_NO_THREADS
    if (!c->hooked) {                   /* the thread-exit hook, before the first tensor is kept */
        pthread_once(&df__tc_key_once, df__tc_key_make);
        if (!df__tc_key_ok || pthread_setspecific(df__tc_key, c) != 0) return NULL;
        c->hooked = 1;
    }
#endif
    if (!found) {
        if (!empty) {                   /* every way holds tensors: give the last one's back */
            empty = &c->w[DF__TC_WAYS - 1];
            df__tc_drain(empty, 0);
        }
        empty->a = a;
        found = empty;
    }
    if (found != &c->w[0]) {            /* to the front; the others move down one */
        df__tc_way f = *found;
        memmove(&c->w[1], &c->w[0], (size_t)(found - &c->w[0]) * sizeof *found);
        c->w[0] = f;
    }
    return &c->w[0];
}

/* An allocation that found the thread's way for a empty (or no way): refills the way with up
   to half a way's tensors from the shared stack and returns one of them, else NULL. */
static df_tensor *df__tc_refill(df__allocator *a) {
    df__tc_way *w = df__tc_way_for(a);
    if (w && w->n) return w->v[--w->n];               /* it was another way */
    if (!w || !__atomic_load_n(&a->n_recycled, __ATOMIC_RELAXED)) return NULL;
    df__spin_lock(&a->recycle_lock);
    int k = a->n_recycled, m = DF__MIN(k, DF__TC_DEPTH / 2);
    for (int i = 0; i < m; i++) w->v[i] = a->recycled[k - m + i];
    __atomic_store_n(&a->n_recycled, k - m, __ATOMIC_RELAXED);
    df__spin_unlock(&a->recycle_lock);
    if (!m) return NULL;
    __atomic_add_fetch(&a->refs, m, __ATOMIC_RELAXED);
    w->n = m - 1;
    return w->v[m - 1];
}

/* A release whose fast path did not apply (no way for t's allocator yet, a full way, a closed
   allocator): keeps t in the thread's way if it can; 0 if it did not. */
static int df__tc_keep_slow(df_tensor *t) {
    df__allocator *a = t->alloc;
    if (__atomic_load_n(&a->tc_state, __ATOMIC_RELAXED) & DF__TC_CLOSED) return 0;
    df__tc_way *w = df__tc_way_for(a);
    if (!w) return 0;
    if (w->n == DF__TC_DEPTH) df__tc_drain(w, DF__TC_DEPTH / 2);
    w->v[w->n++] = t;
    return 1;
}
#endif

/* The owner's release (a device's free): its thread gives back the tensors it keeps, and no
   thread keeps any after, so that the last tensor's release frees the allocator. */
DF_PRIVATE void df__allocator_release(df__allocator *a) {
    if (!a) return;
#ifndef DF_NO_TENSOR_RECYCLE
    __atomic_fetch_or(&a->tc_state, DF__TC_CLOSED, __ATOMIC_ACQ_REL);
    for (int i = 0; i < DF__TC_WAYS; i++)
        if (df__tls_tc.w[i].a == a && df__tls_tc.w[i].n) df__tc_drain(&df__tls_tc.w[i], 0);
#endif
    df__allocator_unref(a, 1);
}

/* The buffer of every zero-byte tensor: data is never NULL for a valid tensor. */
static _Alignas(64) unsigned char df__empty_buffer[64];

/* The host allocator behind df_tensor_new (devices have their own). Made once, thread safe. */
static df__allocator *df__host_alloc;
DF_PRIVATE df__allocator *df__host_allocator(void) {
    df__allocator *a = __atomic_load_n(&df__host_alloc, __ATOMIC_ACQUIRE);
    if (a) return a;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.allow_growth = 1;
    o.garbage_collection = 1;
    df__allocator *fresh = df__allocator_new(&o);
    if (!fresh) return NULL;
    fresh->tc_state = DF__TC_CLOSED;     /* its small tensors go to its shared stack only */
    df__allocator *expected = NULL;
    if (!__atomic_compare_exchange_n(&df__host_alloc, &expected, fresh, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        df__allocator_release(fresh);
        return expected;
    }
    return fresh;                /* lives as long as the process */
}

/* Validates a shape; writes the element count. The message names what was wrong. */
DF_PRIVATE df_code df__shape_check(df_dtype t, int rank, const int64_t *dims, int64_t *n_out,
                               size_t *bytes_out, int internal, df_status *st) {
    if (!df__dtype_valid(t) && !(t == DF_RESOURCE && rank == 0 && internal) && !(t == DF_VARIANT && internal))
        return df_status_set(st, DF_INVALID_ARGUMENT, "Invalid or unsupported dtype %d", (int)t);
    if (rank < 0 || rank > DF_MAX_RANK)
        return df_status_set(st, DF_INVALID_ARGUMENT, "Rank %d is outside [0, %d]", rank, DF_MAX_RANK);
    if (rank > 0 && !dims)
        return df_status_set(st, DF_INVALID_ARGUMENT, "dims is NULL for rank %d", rank);
    int64_t n = 1;
    int overflow = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return df_status_set(st, DF_INVALID_ARGUMENT, "Dimension %d is negative (%lld)", i,
                                 (long long)dims[i]);
        if (dims[i] && n > DF_MAX_ELEMENTS / dims[i]) overflow = 1;
        else n *= dims[i];
    }
    if (overflow && n != 0) {
        for (int i = 0; i < rank; i++) if (!dims[i]) { overflow = 0; n = 0; }
    }
    if (overflow)
        return df_status_set(st, DF_INVALID_ARGUMENT, "Shape has too many elements (int64 overflow)");
    size_t es = df_dtype_size(t);
    if ((uint64_t)n > (uint64_t)DF_MAX_TENSOR_BYTES / es)
        return df_status_set(st, DF_INVALID_ARGUMENT, "Tensor byte size overflows size_t (more than DF_MAX_TENSOR_BYTES)");
    *n_out = n;
    *bytes_out = (size_t)n * es;
    return DF_OK;
}

/* A new uninitialised tensor with data from `alloc` (the host allocator if NULL): the general
   path, for what the thread's way did not have. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static df_tensor *df__tensor_alloc_slow(df__allocator *alloc, df_dtype t, int rank, const int64_t *dims,
                                        df_status *st) {
    int64_t n = 1;
    size_t bytes = 0;
    if (rank == 0 && df__dtype_valid(t)) bytes = df_dtype_size(t);     /* a scalar (loops make many) */
    else if (df__shape_check(t, rank, dims, &n, &bytes, alloc != NULL, st) != DF_OK) return NULL;
    if (!alloc && !(alloc = df__host_allocator())) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
        return NULL;
    }
    if (t == DF_VARIANT && alloc->gpu) {
        df_status_set(st, DF_UNIMPLEMENTED, "Variant tensors (TensorLists, Optionals) live in host memory only");
        return NULL;
    }
#ifndef DF_NO_TENSOR_RECYCLE
    if (bytes && bytes <= DF__RECYCLE_BYTES) {
        df_tensor *x = NULL;
        if (t != DF_VARIANT && !(__atomic_load_n(&alloc->tc_state, __ATOMIC_RELAXED) & DF__TC_CLOSED))
            x = df__tc_refill(alloc);    /* (it holds a reference to alloc) */
        else if (__atomic_load_n(&alloc->n_recycled, __ATOMIC_RELAXED)) {
            df__spin_lock(&alloc->recycle_lock);
            int k = alloc->n_recycled;
            if (k) { x = alloc->recycled[k - 1]; __atomic_store_n(&alloc->n_recycled, k - 1, __ATOMIC_RELAXED); }
            df__spin_unlock(&alloc->recycle_lock);
            if (x) DF__ATOMIC_INC(&alloc->refs);
        }
        if (x) {
            x->refs = 1; x->dtype = t; x->rank = rank; x->n = n; x->nbytes = bytes; x->ref = NULL;
            memset(x->dims, 0, sizeof x->dims);
            if (rank) memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
            if (t == DF_VARIANT) memset(x->data, 0, bytes);
            return x;
        }
    }
#endif
    df_tensor *x = (df_tensor *)DF_MALLOC(sizeof *x);
    if (!x) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory for a tensor header"); return NULL; }
    x->refs = 1; x->dtype = t; x->rank = rank; x->n = n; x->nbytes = bytes; x->base = NULL; x->ref = NULL;
    memset(x->dims, 0, sizeof x->dims);
    if (rank) memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
    if (bytes == 0) { x->data = df__empty_buffer; x->alloc = NULL; return x; }
    x->data = df_bfc_alloc(alloc->bfc, bytes);
    x->alloc = alloc;
    if (x->data) DF__ATOMIC_INC(&alloc->refs);
    if (!x->data) {
        char summary[256];
        df_bfc_summary(alloc->bfc, summary, sizeof summary);
        df_status_set(st, DF_RESOURCE_EXHAUSTED,
                      "Out of memory allocating tensor of type %s with %lld elements (%zu bytes). %s",
                      df_dtype_name(t), (long long)n, bytes, summary);
        DF_FREE(x);
        return NULL;
    }
    if (t == DF_VARIANT) memset(x->data, 0, bytes);
    return x;
}

/* A new uninitialised tensor with data from `alloc` (the host allocator if NULL). The fast path:
   a small tensor (at most DF__RECYCLE_BYTES, every dimension checked as df__shape_check would)
   from the thread's first way, with no lock and no atomic. */
DF_PRIVATE df_tensor *df__tensor_alloc(df__allocator *alloc, df_dtype t, int rank, const int64_t *dims,
                                   df_status *st) {
#ifndef DF_NO_TENSOR_RECYCLE
    df__tc_way *w = &df__tls_tc.w[0];
    if (DF__LIKELY(w->a == alloc && w->n)) {        /* (w->n: alloc is not NULL) */
        size_t es = df_dtype_size(t);               /* 0: not a type a tensor holds */
        int64_t n = 1;
        if (DF__LIKELY(rank == 0)) {                /* a scalar: loops make many */
            if (DF__UNLIKELY(!es || t == DF_VARIANT)) goto slow;
        } else {
            if ((unsigned)rank > DF_MAX_RANK || t == DF_RESOURCE || t == DF_VARIANT) goto slow;
            for (int i = 0; i < rank; i++) {
                uint64_t d = (uint64_t)dims[i];     /* negative: huge */
                if (d > DF__RECYCLE_BYTES) goto slow;
                n *= (int64_t)d;
                if (n > DF__RECYCLE_BYTES) goto slow;
            }
            if ((size_t)n * es - 1 >= DF__RECYCLE_BYTES) goto slow;    /* empty, or too big */
        }
        df_tensor *x = w->v[--w->n];
        x->refs = 1; x->dtype = t; x->rank = rank; x->n = n; x->nbytes = (size_t)n * es; x->ref = NULL;
        memset(x->dims, 0, sizeof x->dims);
        for (int i = 0; i < rank; i++) x->dims[i] = dims[i];
        return x;
    }
slow:
#endif
    return df__tensor_alloc_slow(alloc, t, rank, dims, st);
}

/* A view of src with another shape of the same element count; shares src's buffer. */
DF_PRIVATE df_tensor *df__tensor_view(df_tensor *src, int rank, const int64_t *dims, df_status *st) {
    df_tensor *x = (df_tensor *)DF_MALLOC(sizeof *x);
    if (!x) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory for a tensor header"); return NULL; }
    *x = *src;
    x->refs = 1;
    x->rank = rank;
    for (int i = 0; i < DF_MAX_RANK; i++) x->dims[i] = i < rank ? dims[i] : 0;
    x->base = src->base ? src->base : src;
    df_tensor_retain(x->base);
    x->alloc = NULL;
    return x;
}

df_tensor *df_tensor_new(df_dtype t, int rank, const int64_t *dims, df_status *st) {
    df_tensor *x = df__tensor_alloc(NULL, t, rank, dims, st);
    if (x) { memset(x->data, 0, x->nbytes); df_status_clear(st); }
    return x;
}

df_tensor *df_tensor_from_data(df_dtype t, int rank, const int64_t *dims, const void *data,
                               size_t nbytes, df_status *st) {
    int64_t n = 0;
    size_t bytes = 0;
    if (df__shape_check(t, rank, dims, &n, &bytes, 0, st) != DF_OK) return NULL;
    if (nbytes != bytes) {
        df_status_set(st, DF_INVALID_ARGUMENT, "nbytes is %zu but a %s tensor of %lld elements "
                      "needs %zu bytes", nbytes, df_dtype_name(t), (long long)n, bytes);
        return NULL;
    }
    if (bytes && !data) { df_status_set(st, DF_INVALID_ARGUMENT, "data is NULL"); return NULL; }
    df_tensor *x = df__tensor_alloc(NULL, t, rank, dims, st);
    if (x) { if (bytes) memcpy(x->data, data, bytes); df_status_clear(st); }
    return x;
}

static df_tensor *df__scalar(df_dtype t, const void *v) {
    df_tensor *x = df__tensor_alloc(NULL, t, 0, NULL, NULL);
    if (x) memcpy(x->data, v, df_dtype_size(t));
    return x;
}
df_tensor *df_tensor_scalar_f32(float v) { return df__scalar(DF_FLOAT, &v); }
df_tensor *df_tensor_scalar_f64(double v) { return df__scalar(DF_DOUBLE, &v); }
df_tensor *df_tensor_scalar_i32(int32_t v) { return df__scalar(DF_INT32, &v); }
df_tensor *df_tensor_scalar_i64(int64_t v) { return df__scalar(DF_INT64, &v); }
df_tensor *df_tensor_scalar_bool(int v) { unsigned char b = v != 0; return df__scalar(DF_BOOL, &b); }

df_tensor *df_tensor_retain(df_tensor *t) {
    if (t) DF__ATOMIC_INC(&t->refs);
    return t;
}

#ifdef DATAFLOW_CUDA
#ifndef DF_NO_THREADS
#else
#endif
static int df__hold_keep(df_tensor *t) {
    df__hold *h = df__tls_hold;
    if (!df__grow(&h->v, &h->cap, h->n + 1, sizeof(df_tensor *))) { h->failed = 1; return 0; }
    t->refs = 1;
    h->v[h->n++] = t;
    return 1;
}
#endif
/* What the last release of t does, past the fast path of df_tensor_release. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void df__tensor_free(df_tensor *t) {
    if (t->base) df_tensor_release(t->base);
    else if (t->alloc) {
        df__allocator *a = t->alloc;
        if (t->dtype == DF_VARIANT) df__variant_release_buffer(t);
#ifdef DATAFLOW_CUDA
        if (DF__UNLIKELY(df__tls_hold != NULL) && df__tls_hold->alloc == a && df__hold_keep(t)) return;
#endif
        int kept = 0;
#ifndef DF_NO_TENSOR_RECYCLE
        if (t->nbytes <= DF__RECYCLE_BYTES && t->dtype != DF_VARIANT && df__tc_keep_slow(t)) return;
        if (t->nbytes <= DF__RECYCLE_BYTES && __atomic_load_n(&a->n_recycled, __ATOMIC_RELAXED) < DF__RECYCLE_SLOTS) {
            df__spin_lock(&a->recycle_lock);
            int k = a->n_recycled;
            if (k < DF__RECYCLE_SLOTS) { a->recycled[k] = t; __atomic_store_n(&a->n_recycled, k + 1, __ATOMIC_RELAXED); kept = 1; }
            df__spin_unlock(&a->recycle_lock);
        }
#endif
        if (!kept) df_bfc_free(a->bfc, t->data);
        df__allocator_unref(a, 1);
        if (kept) return;
    }
    DF_FREE(t);
}

/* The fast path of a small tensor's last release: onto the thread's first way, when it is t's
   allocator's and has room (t keeps its reference to the allocator there). */
void df_tensor_release(df_tensor *t) {
    if (!t || DF__ATOMIC_DEC(&t->refs) != 0) return;
#ifndef DF_NO_TENSOR_RECYCLE
    df__tc_way *w = &df__tls_tc.w[0];
    df__allocator *a = t->alloc;
    if (DF__LIKELY(w->a == a && w->n < DF__TC_DEPTH) && a && !t->base && t->nbytes <= DF__RECYCLE_BYTES &&
        t->dtype != DF_VARIANT && __atomic_load_n(&a->tc_state, __ATOMIC_RELAXED) == DF__TC_OK
#ifdef DATAFLOW_CUDA
        && !df__tls_hold
#endif
        ) {
        w->v[w->n++] = t;
        return;
    }
#endif
    df__tensor_free(t);
}

df_dtype df_tensor_dtype(const df_tensor *t) { return t ? t->dtype : (df_dtype)0; }
int df_tensor_rank(const df_tensor *t) { return t ? t->rank : 0; }
int64_t df_tensor_dim(const df_tensor *t, int i) { return t && i >= 0 && i < t->rank ? t->dims[i] : -1; }
int64_t df_tensor_num_elements(const df_tensor *t) { return t ? t->n : 0; }
size_t df_tensor_nbytes(const df_tensor *t) { return t ? t->nbytes : 0; }
void *df_tensor_data(const df_tensor *t) { return t ? t->data : NULL; }

DF_PRIVATE double df__get_f64(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    case DF_INT16: return ((const int16_t *)p)[i];
    case DF_UINT16: return ((const uint16_t *)p)[i];
    case DF_UINT32: return ((const uint32_t *)p)[i];
    case DF_UINT64: return (double)((const uint64_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i] != 0;
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    case DF_COMPLEX64: return ((const float *)p)[2 * i];
    case DF_COMPLEX128: return ((const double *)p)[2 * i];
    default: return 0;
    }
}

DF_PRIVATE void df__shape_str(int rank, const int64_t *dims, char *buf, size_t n) {
    size_t len = 0;
    if (rank < 0) { snprintf(buf, n, "<unknown>"); return; }
    len += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

char *df_tensor_describe(const df_tensor *t, char *buf, size_t n) {
    if (!buf || !n) return buf;
    if (!t) { snprintf(buf, n, "(null)"); return buf; }
    char shp[128];
    df__shape_str(t->rank, t->dims, shp, sizeof shp);
    size_t len = (size_t)snprintf(buf, n, "%s %s {", df_dtype_name(t->dtype), shp);
    for (int64_t i = 0; i < t->n && i < 8 && len < n; i++) {
        if (i) len += (size_t)snprintf(buf + len, n - len, ", ");
        if (len >= n) break;
        if (t->dtype == DF_VARIANT) df__variant_describe(((df__variant *const *)t->data)[i], buf + len, n - len);
        else snprintf(buf + len, n - len, "%g", df__get_f64(t->dtype, t->data, i));
        len += strlen(buf + len);
    }
    if (len < n) snprintf(buf + len, n - len, t->n > 8 ? ", ...}" : "}");
    return buf;
}
