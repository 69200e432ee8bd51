/* ==========================================================================================
   src/session.c: Sessions                                                          >>session
   A session owns its devices, the inter-op pool, the variables and random-number state (by
   scope: each master of a worker has its own, see df__resource_key), and a cache of compiled
   executors keyed by the (feeds, fetches, targets) signature and the graph's edit version (what
   a run does with them: src/run.c). A session holds its graph: the graph is freed with the last
   session on it once df_graph_free was called (TF_DeleteGraph). Feeds are never modified.
   ========================================================================================== */

/* ---- resources and their scopes ----
   A session's variables, random-number states and queues are found by key. A step with a scope
   (a worker's connection: df__step.scope) makes and sees its own, unless the node names a
   container: that one is shared by every scope, as TensorFlow's resource containers are by the
   sessions of one server. Keys are unambiguous whatever the names hold:
     "k:c<len>:<container>/<name>"  in a named container
     "k:s<16 hex digits>:<name>"    in a scope
     "k:g:<name>"                   otherwise (every in-process run) */
DF_PRIVATE uint64_t df__resource_key(df__buf *b, char kind, uint64_t scope, const char *container, const char *name) {
    if (container && *container) {
        df__buf_printf(b, "%c:c%zu:%s/%s", kind, strlen(container), container, name);
        return 0;
    }
    if (scope) df__buf_printf(b, "%c:s%016llx:%s", kind, (unsigned long long)scope, name);
    else df__buf_printf(b, "%c:g:%s", kind, name);
    return scope;
}

/* A slot for a new entry of an array with a free list (*n_free of them in free_at), or a new
   one at the end; -1 when out of memory. Called with the session's lock held. */
static int df__slot_take(void *arr, int *n, int *cap, size_t elem, int *free_at, int *n_free) {
    if (*n_free) return free_at[--*n_free];
    if (*n == INT32_MAX || !df__grow(arr, cap, *n + 1, elem)) return -1;
    return (*n)++;
}

DF_PRIVATE df__var *df__step_var(df__step *s, const df_node *var_node, df_status *st) {
    struct df_session *ss = s->session;
    const char *shared = df__attr_s(var_node, "shared_name");
    df__buf key = {NULL, 0, 0, 0};
    uint64_t scope = df__resource_key(&key, 'v', s->scope, df__attr_s(var_node, "container"), *shared ? shared : var_node->name);
    df__var *v = NULL;
    int idx;
    if (!key.oom) {
        df__spin_lock(&ss->lock);
        if (df__strmap_get(&ss->resources, key.s, &idx)) v = ss->vars[idx];
        else if ((v = (df__var *)DF_MALLOC(sizeof *v)) != NULL) {
            memset(v, 0, sizeof *v);
            v->name = df__strdup(var_node->name);
            v->scope = scope;
            v->handle.refs = 1 << 30;
            v->handle.dtype = df__attr_type(var_node, "dtype");
            v->handle.data = df__empty_buffer;
            v->handle.ref = v;
            idx = v->name ? df__slot_take(&ss->vars, &ss->n_vars, &ss->cap_vars, sizeof(df__var *), ss->free_vars, &ss->n_free_vars) : -1;
            if (idx >= 0 && df__strmap_put(&ss->resources, key.s, idx)) { v->index = idx; ss->vars[idx] = v; }
            else {
                if (idx >= 0) {                  /* (the slot goes back: a free slot, or the last one) */
                    if (idx == ss->n_vars - 1) ss->n_vars--;
                    else ss->free_vars[ss->n_free_vars++] = idx;
                }
                DF_FREE(v->name); DF_FREE(v); v = NULL;
            }
        }
        df__spin_unlock(&ss->lock);
    }
    DF_FREE(key.s);
    if (!v) df__fail(st, var_node, DF_RESOURCE_EXHAUSTED, "Out of memory creating variable state");
    return v;
}

DF_PRIVATE uint64_t df__step_rng_next(df__step *s, const df_node *n, uint64_t count) {
    struct df_session *ss = s->session;
    df__buf key = {NULL, 0, 0, 0};
    df__resource_key(&key, 'r', s->scope, NULL, n->name);
    uint64_t base = 0;
    int idx = -1;
    if (!key.oom) {
        df__spin_lock(&ss->lock);
        if (!df__strmap_get(&ss->resources, key.s, &idx)) {
            idx = df__slot_take(&ss->rng_counters, &ss->n_rng, &ss->cap_rng, sizeof(uint64_t), ss->free_rng, &ss->n_free_rng);
            if (idx >= 0 && !df__strmap_put(&ss->resources, key.s, idx)) {
                if (idx == ss->n_rng - 1) ss->n_rng--;
                else ss->free_rng[ss->n_free_rng++] = idx;
                idx = -1;
            }
            if (idx >= 0) {
                /* unseeded ops start somewhere different per session (and per scope: two masters of
                   one worker draw different numbers); seeded ones at zero */
                int seeded = df__attr_i(n, "seed", 0) || df__attr_i(n, "seed2", 0);
                uint64_t salt = ss->seed_salt ^ s->scope * 0x9e3779b97f4a7c15ull;
                ss->rng_counters[idx] = seeded ? 0 : df__hash_mix(salt, df__hash_str(n->name)) >> 8;
            }
        }
        if (idx >= 0) { base = ss->rng_counters[idx]; ss->rng_counters[idx] += count; }
        df__spin_unlock(&ss->lock);
    }
    DF_FREE(key.s);
    return base;
}

#ifdef DF__NET
/* Removes key k (which may be the map's own copy of it) from a map of src/util.c; 1 when it was
   there. The entries after it in its run move back (backward-shift deletion: lookups need no
   tombstones). A walk over the slots that removes the entry at slot i looks at slot i again: it
   may now hold an entry from further on, and no entry the walk has not reached moves behind i. */
DF_PRIVATE int df__strmap_del(df__strmap *m, const char *k) {
    if (!m->cap) return 0;
    uint64_t mask = (uint64_t)(m->cap - 1), i = df__hash_str(k) & mask;
    while (m->keys[i] && strcmp(m->keys[i], k)) i = (i + 1) & mask;
    if (!m->keys[i]) return 0;
    DF_FREE(m->keys[i]);                         /* (k is not read after this) */
    m->keys[i] = NULL;
    m->count--;
    for (uint64_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        uint64_t home = df__hash_str(m->keys[j]) & mask;
        if (i < j ? (home > i && home <= j) : (home > i || home <= j)) continue;   /* home in (i, j]: it stays */
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->keys[j] = NULL;
        i = j;
    }
    return 1;
}
/* Whether key (of df__resource_key, any kind) is of that scope. */
DF_PRIVATE int df__resource_key_in_scope(const char *key, uint64_t scope) {
    char tag[24];
    snprintf(tag, sizeof tag, "s%016llx:", (unsigned long long)scope);
    return key[0] && key[1] == ':' && !strncmp(key + 2, tag, 18);
}

/* Frees every resource of a scope: its variables (their values released), its random-number
   states and its queues. The caller guarantees that no step of that scope runs or will run
   again (a worker drops a connection's scope when the last reference to the connection goes,
   after its steps ended; its ids are never reused); steps of other scopes never reach these
   resources (df__res_var and df__queue_of refuse another scope's handle), so nothing else
   holds them. Their slots are taken again by later resources. */
DF_PRIVATE void df__session_drop_scope(struct df_session *ss, uint64_t scope) {
    if (!ss || !scope) return;
    df__queues_drop_scope(ss, scope);
    df__accums_drop_scope(ss, scope);
    /* the variables go into gone[], freed after the lock; its room is the slots there were before
       (the scope makes no new ones); without it they are freed under the lock */
    df__spin_lock(&ss->lock);
    int room = ss->n_vars;
    df__spin_unlock(&ss->lock);
    df__var **gone = room ? (df__var **)DF_MALLOC((size_t)room * sizeof(df__var *)) : NULL;
    int n_gone = 0;
    df__spin_lock(&ss->lock);
    df__strmap *m = &ss->resources;
    for (int i = 0; i < m->cap; i++)
        while (m->keys[i] && df__resource_key_in_scope(m->keys[i], scope)) {
            int kind = m->keys[i][0], idx = m->vals[i];
            if (kind == 'v' && idx >= 0 && idx < ss->n_vars && ss->vars[idx]) {
                df__var *v = ss->vars[idx];
                ss->vars[idx] = NULL;
                if (df__grow(&ss->free_vars, &ss->cap_free_vars, ss->n_free_vars + 1, sizeof(int))) ss->free_vars[ss->n_free_vars++] = idx;
                if (gone && n_gone < room) gone[n_gone++] = v;
                else { df_tensor_release(v->value); DF_FREE(v->name); DF_FREE(v); }
            } else if (kind == 'r' && idx >= 0 && idx < ss->n_rng &&
                       df__grow(&ss->free_rng, &ss->cap_free_rng, ss->n_free_rng + 1, sizeof(int)))
                ss->free_rng[ss->n_free_rng++] = idx;
            df__strmap_del(m, m->keys[i]);      /* (a slot not listed as free stays unused) */
        }
    df__spin_unlock(&ss->lock);
    for (int i = 0; i < n_gone; i++) { df_tensor_release(gone[i]->value); DF_FREE(gone[i]->name); DF_FREE(gone[i]); }
    DF_FREE(gone);
}
#endif

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
        /* and the system's random numbers: processes forked from one parent in the same second
           have the same heap and counter, and their masters then numbered their steps alike on a
           shared worker, which mixed up the steps' tensors (between-graph replication) */
        uint64_t r = 0;
        if (!df__random_bytes(&r, sizeof r)) s->seed_salt = df__hash_mix(s->seed_salt, r);
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
    df__cluster_cancel(s->cluster);   /* runs waiting on workers end (their takes, dequeues) */
    df__accums_cancel(s);      /* ends the takes that wait on gradient accumulators */
    df__queues_end(s);         /* cancels what waits on the queues, waits for runs in flight */
    df__accums_free(s);
    df__cluster_close(s->cluster);
#ifndef DF_NO_THREADS
    df__pool_free(s->pool);
    df__ipool_free(s->ipool);
#endif
    for (int i = 0; i < s->n_plans; i++) df__plan_free(s->plans[i]);
    DF_FREE(s->plans);
    df__strmap_free(&s->cache);
    for (int i = 0; i < s->n_vars; i++)
        if (s->vars[i]) { df_tensor_release(s->vars[i]->value); DF_FREE(s->vars[i]->name); DF_FREE(s->vars[i]); }
    DF_FREE(s->vars);
    DF_FREE(s->rng_counters);
    DF_FREE(s->free_vars);
    DF_FREE(s->free_rng);
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

void df_session_schedule_stats(df_session *s, df_schedule_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!s) return;
    out->flat_runs = __atomic_load_n(&s->sched_stats[0], __ATOMIC_RELAXED);
    out->static_loops = __atomic_load_n(&s->sched_stats[1], __ATOMIC_RELAXED);
    out->dynamic_loops = __atomic_load_n(&s->sched_stats[2], __ATOMIC_RELAXED);
    out->flat_parallel_runs = __atomic_load_n(&s->sched_stats[3], __ATOMIC_RELAXED);
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
