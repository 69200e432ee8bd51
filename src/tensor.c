/* ==========================================================================================
   src/tensor.c: Tensors                                                             >>tensor
   A tensor is a header (dtype, shape, refcount) over a 64-byte aligned buffer from a BFC
   allocator. A view (Reshape, Identity) shares the buffer by holding a reference to its base.
   Element counts and byte sizes are checked for int64/size_t overflow before anything is made.
   A DF_VARIANT buffer holds payload pointers (NULL or one reference each), zeroed when made
   and released with the buffer, so its header is never recycled with payloads in it.
   ========================================================================================== */

/* A device's allocator, reference counted: tensors fetched from a session keep their buffers
   (and so the allocator) alive after the session is freed. Small tensors are recycled whole
   (header and one 256-byte chunk) through a short stack: loops make and drop scalars at a high
   rate. Recycled tensors hold no reference; the last release drains them. DF_NO_TENSOR_RECYCLE
   turns the stack off, so that ASan sees a tensor used after its last release. */
#define DF__RECYCLE_BYTES 256
DF_PRIVATE void df__allocator_release(df__allocator *a) {
    if (!a || DF__ATOMIC_DEC(&a->refs) != 0) return;
    for (int i = 0; i < a->n_recycled; i++) { df_bfc_free(a->bfc, a->recycled[i]->data); DF_FREE(a->recycled[i]); }
    df_bfc_free_all(a->bfc);
    if (a->on_release) a->on_release(a->on_release_arg);
    DF_FREE(a);
}
DF_PRIVATE df__allocator *df__allocator_new(const df_bfc_options *o) {
    df__allocator *a = (df__allocator *)DF_MALLOC(sizeof *a);
    if (!a) return NULL;
    memset(a, 0, sizeof *a);
    a->refs = 1;
    if (!(a->bfc = df_bfc_new(o))) { DF_FREE(a); return NULL; }
    return a;
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

/* A new uninitialised tensor with data from `alloc` (the host allocator if NULL). */
DF_PRIVATE df_tensor *df__tensor_alloc(df__allocator *alloc, df_dtype t, int rank, const int64_t *dims,
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
    if (bytes && bytes <= DF__RECYCLE_BYTES && __atomic_load_n(&alloc->n_recycled, __ATOMIC_RELAXED)) {
        df_tensor *x = NULL;
        df__spin_lock(&alloc->recycle_lock);
        int k = alloc->n_recycled;
        if (k) { x = alloc->recycled[k - 1]; __atomic_store_n(&alloc->n_recycled, k - 1, __ATOMIC_RELAXED); }
        df__spin_unlock(&alloc->recycle_lock);
        if (x) {
            DF__ATOMIC_INC(&alloc->refs);
            x->refs = 1; x->dtype = t; x->rank = rank; x->n = n; x->nbytes = bytes;
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
void df_tensor_release(df_tensor *t) {
    if (!t || DF__ATOMIC_DEC(&t->refs) != 0) return;
    if (t->base) df_tensor_release(t->base);
    else if (t->alloc) {
        df__allocator *a = t->alloc;
        if (t->dtype == DF_VARIANT) df__variant_release_buffer(t);
#ifdef DATAFLOW_CUDA
        if (DF__UNLIKELY(df__tls_hold != NULL) && df__tls_hold->alloc == a && df__hold_keep(t)) return;
#endif
        int kept = 0;
#ifndef DF_NO_TENSOR_RECYCLE
        if (t->nbytes <= DF__RECYCLE_BYTES && __atomic_load_n(&a->n_recycled, __ATOMIC_RELAXED) < DF__RECYCLE_SLOTS) {
            df__spin_lock(&a->recycle_lock);
            int k = a->n_recycled;
            if (k < DF__RECYCLE_SLOTS) { a->recycled[k] = t; __atomic_store_n(&a->n_recycled, k + 1, __ATOMIC_RELAXED); kept = 1; }
            df__spin_unlock(&a->recycle_lock);
        }
#endif
        if (!kept) df_bfc_free(a->bfc, t->data);
        df__allocator_release(a);
        if (kept) return;
    }
    DF_FREE(t);
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
