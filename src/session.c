/* ==========================================================================================
   src/session.c: Sessions                                                          >>session
   A session owns its devices, the inter-op pool, the variables and random-number state, and a
   cache of compiled executors keyed by the (feeds, fetches, targets) signature and the graph's
   edit version (what a run does with them: src/run.c). A session holds its graph: the graph is
   freed with the last session on it once df_graph_free was called (TF_DeleteGraph). Feeds are
   never modified.
   ========================================================================================== */

DF_PRIVATE df__var *df__step_var(df__step *s, const df_node *var_node, df_status *st) {
    struct df_session *ss = s->session;
    const char *shared = df__attr_s(var_node, "shared_name");
    char key[300];
    snprintf(key, sizeof key, "v:%.280s", *shared ? shared : var_node->name);
    df__spin_lock(&ss->lock);
    int idx;
    df__var *v = NULL;
    if (df__strmap_get(&ss->resources, key, &idx)) v = ss->vars[idx];
    else if (df__grow(&ss->vars, &ss->cap_vars, ss->n_vars + 1, sizeof(df__var *)) &&
             (v = (df__var *)DF_MALLOC(sizeof *v)) != NULL) {
        memset(v, 0, sizeof *v);
        v->name = var_node->name;
        v->handle.refs = 1 << 30;
        v->handle.dtype = df__attr_type(var_node, "dtype");
        v->handle.data = df__empty_buffer;
        v->handle.ref = v;
        if (df__strmap_put(&ss->resources, key, ss->n_vars)) ss->vars[ss->n_vars++] = v;
        else { DF_FREE(v); v = NULL; }
    }
    df__spin_unlock(&ss->lock);
    if (!v) df__fail(st, var_node, DF_RESOURCE_EXHAUSTED, "Out of memory creating variable state");
    return v;
}

DF_PRIVATE uint64_t df__step_rng_next(df__step *s, const df_node *n, uint64_t count) {
    struct df_session *ss = s->session;
    char key[300];
    snprintf(key, sizeof key, "r:%.280s", n->name);
    uint64_t base = 0;
    df__spin_lock(&ss->lock);
    int idx;
    if (!df__strmap_get(&ss->resources, key, &idx)) {
        idx = -1;
        if (df__grow(&ss->rng_counters, &ss->cap_rng, ss->n_rng + 1, sizeof(uint64_t)) &&
            df__strmap_put(&ss->resources, key, ss->n_rng)) {
            idx = ss->n_rng++;
            /* unseeded ops start somewhere different per session; seeded ones at zero */
            int seeded = df__attr_i(n, "seed", 0) || df__attr_i(n, "seed2", 0);
            ss->rng_counters[idx] = seeded ? 0 : df__hash_mix(ss->seed_salt, df__hash_str(n->name)) >> 8;
        }
    }
    if (idx >= 0) { base = ss->rng_counters[idx]; ss->rng_counters[idx] += count; }
    df__spin_unlock(&ss->lock);
    return base;
}

#ifdef DATAFLOW_CUDA
DF_PRIVATE int df__step_tf32(const df__step *s) { return s && s->session && s->session->opts.allow_tf32; }
#endif

df_session *df_session_new(df_graph *g, const df_session_options *opts, df_status *st) {
    df_status local;                          /* st may be NULL; what is below may read it */
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) { df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: graph is NULL"); return NULL; }
    if (__atomic_load_n(&g->freed_by_user, __ATOMIC_ACQUIRE)) {     /* (seen while other sessions keep it) */
        df_status_set(st, DF_FAILED_PRECONDITION, "df_session_new: the graph was freed (df_graph_free)");
        return NULL;
    }
    df_session_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.num_cpu_devices < 0 || o.inter_op_threads < 0 || o.intra_op_threads < 0 || o.num_gpu_devices < -1) {
        df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: negative device or thread count");
        return NULL;
    }
#ifdef DATAFLOW_CUDA
    if (o.num_gpu_devices != 0) {
        df_status found;
        int visible = df_cuda_device_count(&found);
        if (found.code) { if (st) *st = found; return NULL; }
        if (o.num_gpu_devices < 0) o.num_gpu_devices = visible;
        else if (o.num_gpu_devices > visible) {
            df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: %d GPU device%s asked for, %d visible",
                          o.num_gpu_devices, o.num_gpu_devices == 1 ? "" : "s", visible);
            return NULL;
        }
    }
#else
    if (o.num_gpu_devices > 0) {
        df_status_set(st, DF_UNIMPLEMENTED, "df_session_new: GPU devices are not available in this build "
                      "(compile dataflow.c with -DDATAFLOW_CUDA and link dataflow_cuda.cu)");
        return NULL;
    }
    o.num_gpu_devices = 0;
#endif
    if (o.num_gpu_devices > 16) { df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: at most 16 GPU devices"); return NULL; }
    if (o.target && *o.target && (o.num_gpu_devices > 0 || opts->num_cpu_devices > 0)) {
        df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: with a target, the devices are the workers'; num_cpu_devices and num_gpu_devices must be 0");
        return NULL;
    }
    if (o.num_cpu_devices == 0) o.num_cpu_devices = 1;
    if (o.num_cpu_devices > 64) { df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: at most 64 CPU devices"); return NULL; }
    if (o.inter_op_threads == 0) o.inter_op_threads = df__num_cores();
    if (o.intra_op_threads == 0) o.intra_op_threads = df__num_cores();
    if (o.inter_op_threads > 256) o.inter_op_threads = 256;
    df_session *s = (df_session *)DF_MALLOC(sizeof *s);
    if (!s) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a session"); return NULL; }
    memset(s, 0, sizeof *s);
    s->g = g;
    __atomic_add_fetch(&g->holds, 1, __ATOMIC_RELAXED);     /* (df_session_free lets go, also of a session half made) */
    s->opts = o;
    s->opts.data_dir = NULL;                  /* (the caller's string may go: a copy of it) */
    if (o.data_dir) {
        size_t n = strlen(o.data_dir) + 1;
        char *copy = (char *)DF_MALLOC(n);
        if (!copy) { df_session_free(s); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a session"); return NULL; }
        memcpy(copy, o.data_dir, n);
        s->opts.data_dir = copy;
    }
    {   /* (a counter too: a session made in the same second at a freed one's address) */
        static uint64_t sessions_made;
        uint64_t k = __atomic_add_fetch(&sessions_made, 1, __ATOMIC_RELAXED);
        s->seed_salt = df__hash_mix((uint64_t)time(NULL) ^ k << 32, (uint64_t)(uintptr_t)s ^ k * 0x9e3779b97f4a7c15ull);
    }
    if (o.target && *o.target) {              /* the workers' devices, and no local one */
        if (df__cluster_open(s, st) != DF_OK) { df_session_free(s); return NULL; }
        o.num_cpu_devices = 0;
    } else if (!(s->devices = (df__device **)DF_MALLOC((size_t)(o.num_cpu_devices + o.num_gpu_devices) * sizeof(df__device *)))) {
        df_session_free(s); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a session"); return NULL;
    }
    for (int i = 0; i < o.num_cpu_devices; i++) {
        if (!(s->devices[i] = df__device_new_cpu(i, o.memory_limit, st))) { df_session_free(s); return NULL; }
        s->n_devices++;
    }
#ifdef DATAFLOW_CUDA
    for (int i = 0; i < o.num_gpu_devices; i++) {
        if (!(s->devices[s->n_devices] = df__device_new_gpu(i, o.memory_limit, st))) { df_session_free(s); return NULL; }
        s->n_devices++;
    }
#endif
#ifndef DF_NO_THREADS
    if (o.inter_op_threads > 1 && !o.deterministic) {
        s->pool = df__pool_new(o.inter_op_threads - 1);
        if (!s->pool) { df_session_free(s); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the thread pool"); return NULL; }
    }
    if (o.intra_op_threads > 1 && !o.deterministic) {
        s->ipool = df__ipool_new(DF__MIN(o.intra_op_threads, 256) - 1);
        if (!s->ipool) { df_session_free(s); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the intra-op threads"); return NULL; }
    }
#endif
    return s;
}

void df_session_free(df_session *s) {
    if (!s) return;
    df__queues_end(s);         /* cancels what waits on the queues, waits for runs in flight */
    df__cluster_close(s->cluster);
#ifndef DF_NO_THREADS
    df__pool_free(s->pool);
    df__ipool_free(s->ipool);
#endif
    for (int i = 0; i < s->n_plans; i++) df__plan_free(s->plans[i]);
    DF_FREE(s->plans);
    df__strmap_free(&s->cache);
    for (int i = 0; i < s->n_vars; i++) { df_tensor_release(s->vars[i]->value); DF_FREE(s->vars[i]); }
    DF_FREE(s->vars);
    DF_FREE(s->rng_counters);
    df__strmap_free(&s->resources);
    for (int i = 0; i < s->n_devices; i++) df__device_free(s->devices[i]);
    DF_FREE(s->devices);
    DF_FREE((void *)s->opts.data_dir);
    df_graph *g = s->g;
    DF_FREE(s);
    if (g) df__graph_release(g);           /* last: the plans and pools above may read g */
}

void df_session_cuda_graph_stats(df_session *s, df_cuda_graph_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!s) return;
    out->captures = __atomic_load_n(&s->gg_stats[0], __ATOMIC_RELAXED);
    out->replays = __atomic_load_n(&s->gg_stats[1], __ATOMIC_RELAXED);
    out->eager_runs = __atomic_load_n(&s->gg_stats[2], __ATOMIC_RELAXED);
    out->failed_captures = __atomic_load_n(&s->gg_stats[3], __ATOMIC_RELAXED);
}

int df_session_num_partitions(df_session *s) {
    df__plan *p = s ? __atomic_load_n(&s->last_plan, __ATOMIC_ACQUIRE) : NULL;
    return p ? p->n_parts : 0;
}
const df_graph *df_session_partition(df_session *s, int i, const char **device) {
    df__plan *p = s ? __atomic_load_n(&s->last_plan, __ATOMIC_ACQUIRE) : NULL;
    if (!p || i < 0 || i >= p->n_parts) { if (device) *device = NULL; return NULL; }
    if (device) *device = p->parts[i].dev->name;
    return p->parts[i].g;
}
const df_graph *df_session_optimized_graph(df_session *s, df_pass_stats *stats) {
    df__plan *p = s ? __atomic_load_n(&s->last_plan, __ATOMIC_ACQUIRE) : NULL;
    if (stats) { if (p) *stats = p->stats; else memset(stats, 0, sizeof *stats); }
    return p ? (p->work ? p->work : s->g) : NULL;
}
int df_session_device_alloc_stats(df_session *s, int device, df_alloc_stats *out) {
    if (!s || device < 0 || device >= s->n_devices || !out) return 0;
    df_bfc_get_stats(s->devices[device]->alloc->bfc, out);
    return 1;
}
