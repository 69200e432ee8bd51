/* ==========================================================================================
   src/device.c: Devices                                                             >>device
   A device owns an allocator, names itself the TensorFlow way and implements a small interface
   (allocate, free, copy to and from host memory, run a kernel, synchronise). CPU devices
   implement it here; the GPU (dataflow_cuda.cu) and remote devices implement it later. Several
   CPU devices in one process are real devices: each has its own allocator and incarnation, and
   values cross between them only through Send/Recv.
   ========================================================================================== */

static int df__parse_uint(const char **p, int *out) {
    if (**p == '*') { (*p)++; *out = -1; return 1; }
    if (**p < '0' || **p > '9') return 0;
    long v = 0;
    while (**p >= '0' && **p <= '9') { v = v * 10 + (**p - '0'); if (v > 1 << 20) return 0; (*p)++; }
    *out = (int)v;
    return 1;
}
DF_PRIVATE int df__parse_device(const char *s, df__devspec *d) {
    memset(d, 0, sizeof *d);
    d->replica = d->task = d->index = -1;
    if (!s || !*s) return 1;
    if (*s != '/') return 0;
    const char *p = s;
    while (*p == '/') {
        p++;
        if (!strncmp(p, "job:", 4)) {
            p += 4;
            size_t n = 0;
            while (p[n] && p[n] != '/') n++;
            if (!n || n >= sizeof d->job) return 0;
            memcpy(d->job, p, n); d->job[n] = 0; p += n;
        } else if (!strncmp(p, "replica:", 8)) { p += 8; if (!df__parse_uint(&p, &d->replica)) return 0; }
        else if (!strncmp(p, "task:", 5)) { p += 5; if (!df__parse_uint(&p, &d->task)) return 0; }
        else {
            if (!strncmp(p, "device:", 7)) p += 7;
            size_t n = 0;
            while (p[n] && p[n] != ':' && p[n] != '/') n++;
            if (!n || n >= sizeof d->type || p[n] != ':') return 0;
            for (size_t i = 0; i < n; i++) d->type[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 32 : p[i]);
            d->type[n] = 0;
            p += n + 1;
            if (!df__parse_uint(&p, &d->index)) return 0;
        }
        if (*p && *p != '/') return 0;
    }
    return *p == 0;
}

/* A full spec matches a device when every component it names agrees. */
DF_PRIVATE int df__devspec_matches(const df__devspec *sp, const df__device *d) {
    df__devspec dd;
    if (!df__parse_device(d->name, &dd)) return 0;
    return (!sp->job[0] || !strcmp(sp->job, dd.job)) && (sp->replica < 0 || sp->replica == dd.replica) &&
           (sp->task < 0 || sp->task == dd.task) && (!sp->type[0] || !strcmp(sp->type, dd.type)) &&
           (sp->index < 0 || sp->index == dd.index);
}
/* Two specs can name one device: no component set in both disagrees. Merges b into a. */
DF_PRIVATE int df__devspec_merge(df__devspec *a, const df__devspec *b) {
    if (a->job[0] && b->job[0] && strcmp(a->job, b->job)) return 0;
    if (a->type[0] && b->type[0] && strcmp(a->type, b->type)) return 0;
    if (a->replica >= 0 && b->replica >= 0 && a->replica != b->replica) return 0;
    if (a->task >= 0 && b->task >= 0 && a->task != b->task) return 0;
    if (a->index >= 0 && b->index >= 0 && a->index != b->index) return 0;
    if (!a->job[0]) memcpy(a->job, b->job, sizeof a->job);
    if (!a->type[0]) memcpy(a->type, b->type, sizeof a->type);
    if (a->replica < 0) a->replica = b->replica;
    if (a->task < 0) a->task = b->task;
    if (a->index < 0) a->index = b->index;
    return 1;
}
DF_PRIVATE void df__devspec_str(const df__devspec *sp, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    if (sp->job[0]) len += (size_t)snprintf(buf + len, n - len, "/job:%s", sp->job);
    if (len < n && sp->replica >= 0) len += (size_t)snprintf(buf + len, n - len, "/replica:%d", sp->replica);
    if (len < n && sp->task >= 0) len += (size_t)snprintf(buf + len, n - len, "/task:%d", sp->task);
    if (len < n && sp->type[0]) {
        if (sp->index >= 0) snprintf(buf + len, n - len, "/device:%s:%d", sp->type, sp->index);
        else snprintf(buf + len, n - len, "/device:%s:*", sp->type);
    }
}

/* ---- the CPU device: host memory from its own BFC allocator; kernels run inline ---- */
static void *df__cpu_allocate(df__device *d, size_t bytes) { return df_bfc_alloc(d->alloc->bfc, bytes); }
static void df__cpu_deallocate(df__device *d, void *p) { df_bfc_free(d->alloc->bfc, p); }
static df_code df__cpu_copy(df__device *d, void *dst, const void *src, size_t bytes) {
    DF__UNUSED(d);
    if (bytes) memcpy(dst, src, bytes);
    return DF_OK;
}
static void df__cpu_run_kernel(df__device *d, void (*kernel)(struct df__kctx *), struct df__kctx *k) {
    DF__UNUSED(d);
    kernel(k);
}
static df_code df__cpu_synchronize(df__device *d) { DF__UNUSED(d); return DF_OK; }
static const df__device_ops df__cpu_ops = {
    df__cpu_allocate, df__cpu_deallocate, df__cpu_copy, df__cpu_copy, df__cpu_run_kernel, df__cpu_synchronize
};

static uint64_t df__incarnation_counter;
DF_PRIVATE df__device *df__device_new_cpu(int index, size_t memory_limit, df_status *st) {
    df__device *d = (df__device *)DF_MALLOC(sizeof *d);
    if (!d) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a device"); return NULL; }
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:CPU:%d", index);
    memcpy(d->type, "CPU", 4);
    d->kernel_type = DF__DEV_CPU;
    d->index = index;
    d->host_memory = 1;
    d->ops = &df__cpu_ops;
    /* nonzero and different for every device instance of this process (a restarted worker's
       devices get new ones, which is what incarnations are for) */
    uint64_t c = __atomic_add_fetch(&df__incarnation_counter, 1, __ATOMIC_RELAXED);
    d->incarnation = df__hash_mix(df__hash_mix((uint64_t)time(NULL), (uint64_t)(uintptr_t)d), c) | 1;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = memory_limit;
    o.allow_growth = 1;
    o.garbage_collection = 1;
    if (!(d->alloc = df__allocator_new(&o))) {
        DF_FREE(d);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a device allocator");
        return NULL;
    }
    return d;
}

#ifdef DATAFLOW_CUDA
/* ---- the GPU device: memory from a BFC allocator over cudaMalloc'd regions, kernels queued on
   the GPU's compute stream by the kernels themselves (they call dataflow_cuda.cu's launchers), so
   running one is calling it. The df_cuda closes when the allocator's last tensor is gone. ---- */
static void *df__gpu_allocate(df__device *d, size_t bytes) { return df_bfc_alloc(d->alloc->bfc, bytes); }
static void df__gpu_deallocate(df__device *d, void *p) { df_bfc_free(d->alloc->bfc, p); }
static df_code df__gpu_to_host(df__device *d, void *dst, const void *src, size_t bytes) {
    df_status st;
    return bytes ? df_cuda_memcpy_d2h((df_cuda *)d->gpu, dst, src, bytes, &st) : DF_OK;
}
static df_code df__gpu_from_host(df__device *d, void *dst, const void *src, size_t bytes) {
    df_status st;
    return bytes ? df_cuda_memcpy_h2d((df_cuda *)d->gpu, dst, src, bytes, &st) : DF_OK;
}
static df_code df__gpu_synchronize(df__device *d) { df_status st; return df_cuda_synchronize((df_cuda *)d->gpu, &st); }
static const df__device_ops df__gpu_ops = {
    df__gpu_allocate, df__gpu_deallocate, df__gpu_to_host, df__gpu_from_host, df__cpu_run_kernel, df__gpu_synchronize
};
static void df__gpu_close(void *g) { df_cuda_close((df_cuda *)g); }
DF_PRIVATE df__device *df__device_new_gpu(int index, size_t memory_limit, df_status *st) {
    df__device *d = (df__device *)DF_MALLOC(sizeof *d);
    if (!d) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a device"); return NULL; }
    memset(d, 0, sizeof *d);
    df_cuda *g = df_cuda_open(index, 0, st);
    if (!g) { DF_FREE(d); return NULL; }
    snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:GPU:%d", index);
    memcpy(d->type, "GPU", 4);
    d->kernel_type = DF__DEV_GPU;
    d->index = index;
    d->ops = &df__gpu_ops;
    d->gpu = g;
    uint64_t c = __atomic_add_fetch(&df__incarnation_counter, 1, __ATOMIC_RELAXED);
    d->incarnation = df__hash_mix(df__hash_mix((uint64_t)time(NULL), (uint64_t)(uintptr_t)d), c) | 1;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = memory_limit;
    o.allow_growth = 1;
    o.garbage_collection = 1;
    o.sys_alloc = df_cuda_region_alloc;
    o.sys_free = df_cuda_region_free;
    o.user = g;
    if (!(d->alloc = df__allocator_new(&o))) {
        df_cuda_close(g);
        DF_FREE(d);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a GPU allocator");
        return NULL;
    }
    d->alloc->on_release = df__gpu_close;
    d->alloc->gpu = g;
    d->alloc->on_release_arg = g;
    return d;
}
#endif

/* A copy of v moved between host memory and device d's (a new reference; NULL with st set). */
static df_tensor *df__move(df__device *d, const df_tensor *v, int to_device, df_status *st) {
    df__allocator *a = to_device ? d->alloc : df__host_allocator();
    df_tensor *x = a ? df__tensor_alloc(a, v->dtype, v->rank, v->dims, st) : NULL;
    if (!a) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
    if (!x) return NULL;
    df_code code = !x->nbytes ? DF_OK : to_device ? d->ops->copy_from_host(d, x->data, v->data, v->nbytes)
                 : d->ops->copy_to_host(d, x->data, v->data, v->nbytes);
    if (code) {
        df_status_set(st, code, "Copying %zu bytes %s %s failed", v->nbytes, to_device ? "to" : "from", d->name);
        df_tensor_release(x);
        return NULL;
    }
    return x;
}
DF_PRIVATE df_tensor *df__to_device(df__device *d, const df_tensor *v, df_status *st) { return df__move(d, v, 1, st); }
DF_PRIVATE df_tensor *df__to_host(df__device *d, const df_tensor *v, df_status *st) { return df__move(d, v, 0, st); }
#ifdef DATAFLOW_CUDA
/* A copy of v (in d's memory) in pinned host memory, for the wire: the DMA engine fills it at
   full speed and the socket (or MPI) sends it as it is. One allocator for the process, at most
   DF__PINNED_LIMIT bytes; past it, or where no pinned memory can be had, ordinary host memory. */
#define DF__PINNED_LIMIT ((size_t)1 << 30)
static df__allocator *df__pinned_alloc;
DF_PRIVATE df_tensor *df__to_host_pinned(df__device *d, const df_tensor *v, df_status *st) {
    df__allocator *a = __atomic_load_n(&df__pinned_alloc, __ATOMIC_ACQUIRE);
    if (!a) {
        df_bfc_options o;
        memset(&o, 0, sizeof o);
        o.memory_limit = DF__PINNED_LIMIT;
        o.allow_growth = 1;
        o.garbage_collection = 1;
        o.sys_alloc = df_cuda_pinned_alloc;
        o.sys_free = df_cuda_pinned_free;
        df__allocator *fresh = df__allocator_new(&o), *expected = NULL;
        if (fresh && !__atomic_compare_exchange_n(&df__pinned_alloc, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            df__allocator_release(fresh);
            fresh = expected;
        }
        a = fresh;                        /* (lives as long as the process) */
    }
    df_status local;
    df_tensor *x = a && v->nbytes ? df__tensor_alloc(a, v->dtype, v->rank, v->dims, &local) : NULL;
    if (!x) return df__to_host(d, v, st);
    df_code code = d->ops->copy_to_host(d, x->data, v->data, v->nbytes);
    if (code) {
        df_status_set(st, code, "Copying %zu bytes from %s failed", v->nbytes, d->name);
        df_tensor_release(x);
        return NULL;
    }
    return x;
}
/* The GPU whose memory holds t's data; NULL: host memory. */
DF_PRIVATE df_cuda *df__tensor_gpu(const df_tensor *t) {
    const df_tensor *b = t->base ? t->base : t;
    return b->alloc ? (df_cuda *)b->alloc->gpu : NULL;
}
#endif

/* dst's bytes = src's (same size), in whichever memory they live: a GPU copy is queued. */
DF_PRIVATE df_code df__copy_data(df_tensor *dst, const df_tensor *src, df_status *st) {
    if (!src->nbytes) return DF_OK;
#ifdef DATAFLOW_CUDA
    if (df__tensor_gpu(src)) return df_cuda_memcpy_d2d(df__tensor_gpu(src), dst->data, src->data, src->nbytes, st);
#else
    DF__UNUSED(st);
#endif
    memcpy(dst->data, src->data, src->nbytes);
    return DF_OK;
}
/* All of t's bytes set to zero, in its memory. */
DF_PRIVATE df_code df__zero_data(df_tensor *t, df_status *st) {
    if (!t->nbytes) return DF_OK;
#ifdef DATAFLOW_CUDA
    if (df__tensor_gpu(t)) {
        unsigned char zero = 0;
        return df_cuda_fill(df__tensor_gpu(t), t->data, (int64_t)t->nbytes, 1, &zero, st);
    }
#else
    DF__UNUSED(st);
#endif
    memset(t->data, 0, t->nbytes);
    return DF_OK;
}
DF_PRIVATE df_code df__add_data(int code, df_tensor *dst, const df_tensor *a, const df_tensor *b, df_status *st) {
#ifdef DATAFLOW_CUDA
    if (df__tensor_gpu(a)) {
        int64_t one = 1;
        return a->n ? df_cuda_binary(df__tensor_gpu(a), code, a->dtype, 1, &a->n, a->data, &one, b->data, &one, dst->data, st) : DF_OK;
    }
#else
    DF__UNUSED(st);
#endif
    df__binary_row(code, a->dtype)(dst->data, a->data, b->data, a->n, 1, 1);
    return DF_OK;
}

DF_PRIVATE void df__device_free(df__device *d) {
    if (!d) return;
    for (int i = 0; i < d->n_cache; i++) { df_tensor_release(d->cache[i].host); df_tensor_release(d->cache[i].dev); }
    DF_FREE(d->cache);
    df__allocator_release(d->alloc);
    DF_FREE(d);
}
