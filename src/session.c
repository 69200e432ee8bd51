/* ==========================================================================================
   src/session.c: Sessions                                                          >>session
   A session owns its devices, the inter-op pool, the variables and random-number state, and a
   cache of compiled executors keyed by the (feeds, fetches, targets) signature and the graph's
   edit version. Compiling prunes the graph to what the fetches and targets need, replaces fed
   outputs by feed items and runs the static frame analysis. Feeds are never modified.
   ========================================================================================== */

static df__var *df__step_var(df__step *s, const df_node *var_node, df_status *st) {
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

static uint64_t df__step_rng_next(df__step *s, const df_node *n, uint64_t count) {
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
static int df__step_tf32(const df__step *s) { return s && s->session && s->session->opts.allow_tf32; }
#endif

df_session *df_session_new(df_graph *g, const df_session_options *opts, df_status *st) {
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
    s->seed_salt = df__hash_mix((uint64_t)time(NULL), (uint64_t)(uintptr_t)s);
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

/* Feed lookup: feed index of (node id, output) or -1. first_feed[id] chains feeds of a node. */
static int df__feed_index(const int *first_feed, const int *next_feed, const df_output *feeds, df_output o) {
    for (int f = first_feed[o.node->id]; f >= 0; f = next_feed[f])
        if (feeds[f].index == o.index) return f;
    return -1;
}

static df__exec *df__compile(df_session *ss, df_graph *g, const df_output *feeds, int n_feeds, const df_output *fetches,
                             int n_fetches, df_node *const *targets, int n_targets, const df__device *dev, df_status *st) {
    DF__UNUSED(ss);
    int devmem = dev && !dev->host_memory;       /* kernels of dev's type, memory types apply */
    int nn = g->n_nodes;
    df__exec *x = (df__exec *)DF_MALLOC(sizeof *x);
    int *item_of = (int *)DF_MALLOC((size_t)(nn + 1) * sizeof(int));
    int *first_feed = (int *)DF_MALLOC((size_t)(nn + 1) * sizeof(int));
    int *next_feed = (int *)DF_MALLOC((size_t)(n_feeds + 1) * sizeof(int));
    int *feed_item = (int *)DF_MALLOC((size_t)(n_feeds + 1) * sizeof(int));
    int32_t *stack = (int32_t *)DF_MALLOC((size_t)(nn + 1) * sizeof(int32_t));
    int32_t *deg = NULL;
    if (x) memset(x, 0, sizeof *x);           /* df__exec_free reads it */
    if (!x || !item_of || !first_feed || !next_feed || !feed_item || !stack) goto oom;
    x->graph = g;
    for (int i = 0; i < nn; i++) { item_of[i] = -1; first_feed[i] = -1; }
    for (int f = 0; f < n_feeds; f++) { next_feed[f] = first_feed[feeds[f].node->id]; first_feed[feeds[f].node->id] = f; feed_item[f] = -1; }
    /* 1. prune: walk back from fetches and targets, stopping at fed outputs */
    int sp = 0, n_items = 0;
    for (int i = 0; i < n_fetches; i++)
        if (df__feed_index(first_feed, next_feed, feeds, fetches[i]) < 0 && item_of[fetches[i].node->id] == -1) {
            item_of[fetches[i].node->id] = -2;
            stack[sp++] = fetches[i].node->id;
        }
    for (int i = 0; i < n_targets; i++)
        if (item_of[targets[i]->id] == -1) { item_of[targets[i]->id] = -2; stack[sp++] = targets[i]->id; }
    while (sp) {
        const df_node *n = g->nodes[stack[--sp]];
        item_of[n->id] = n_items++;
        for (int i = 0; i < n->n_inputs; i++) {
            df_output in = n->inputs[i];
            if (df__feed_index(first_feed, next_feed, feeds, in) >= 0) continue;
            if (item_of[in.node->id] == -1) { item_of[in.node->id] = -2; stack[sp++] = in.node->id; }
        }
        for (int i = 0; i < n->n_controls; i++) {
            /* a control edge from a node whose first output is fed comes from the feed (TF) */
            if (df__feed_index(first_feed, next_feed, feeds, (df_output){n->controls[i], 0}) >= 0) continue;
            if (item_of[n->controls[i]->id] == -1) { item_of[n->controls[i]->id] = -2; stack[sp++] = n->controls[i]->id; }
        }
    }
    /* feed items for fed outputs that something reads */
    for (int i = 0; i < nn; i++) {
        if (item_of[i] < 0) continue;
        const df_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int f = df__feed_index(first_feed, next_feed, feeds, n->inputs[k]);
            if (f >= 0 && feed_item[f] < 0) feed_item[f] = n_items++;
        }
        for (int k = 0; k < n->n_controls; k++) {
            int f = df__feed_index(first_feed, next_feed, feeds, (df_output){n->controls[k], 0});
            if (f >= 0 && feed_item[f] < 0) feed_item[f] = n_items++;
        }
    }
    for (int i = 0; i < n_fetches; i++) {
        int f = df__feed_index(first_feed, next_feed, feeds, fetches[i]);
        if (f >= 0 && feed_item[f] < 0) feed_item[f] = n_items++;
    }
    int fetch_base = n_items;
    n_items += n_fetches;
    x->n_items = n_items;
    x->items = (df__xitem *)DF_MALLOC((size_t)(n_items + 1) * sizeof(df__xitem));
    deg = (int32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(int32_t));
    if (!x->items || !deg) goto oom;
    memset(x->items, 0, (size_t)(n_items + 1) * sizeof(df__xitem));
    if (devmem) {
        if (!(x->host_out = (uint32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(uint32_t)))) goto oom;
        for (int i = 0; i <= n_items; i++) x->host_out[i] = ~0u;
    }
    for (int i = 0; i < nn; i++) {
        if (item_of[i] < 0) continue;
        const df_node *n = g->nodes[i];
        df__xitem *it = &x->items[item_of[i]];
        unsigned f = n->op->flags;
        it->node = n;
        it->kernel = n->op->kernels[DF__DEV_CPU].fn;
        if (devmem) {
            uint32_t host_out = ~0u;
            int host_only = 0;
            if (!(it->kernel = df__node_kernel(n, dev->kernel_type, NULL, &host_out, &host_only))) {
                df_status_set(st, DF_INTERNAL, "No %s kernel for op %s (placed on %s) {{node %s}}", dev->type, n->op->name,
                              dev->name, n->name);
                goto fail;
            }
            x->host_out[item_of[i]] = host_only ? ~0u : host_out;
        }
        it->cost = (uint8_t)DF__MIN(n->op->cost, 255.0f);
        it->n_inputs = n->n_inputs;
        it->n_outputs = n->n_outputs;
        it->n_control_in = n->n_controls;
        it->kind = (f & DF__OP_MERGE) ? DF__X_MERGE : (f & DF__OP_ENTER) ? DF__X_ENTER
                 : (f & DF__OP_LOOP_COUNT) ? DF__X_COUNT : (f & DF__OP_EXIT) ? DF__X_EXIT
                 : (f & DF__OP_NEXT_ITERATION) ? DF__X_NEXT : DF__X_NORMAL;
        if ((f & DF__OP_ENTER) && df__attr_b(n, "is_constant", 0)) it->flags |= DF__XF_CONST_ENTER;
        if (f & DF__OP_CONTROL_TRIGGER) it->flags |= DF__XF_CTRL_TRIGGER;
        if (f & DF__OP_EXPENSIVE) {
            /* Known-small static inputs (scalars in loops, say) never make a node worth a thread. */
            int64_t work = 0;
            for (int k = 0; k < n->n_inputs && work >= 0; k++) {
                int64_t c = df__shape_count(&n->inputs[k].node->out_shapes[n->inputs[k].index]);
                work = c < 0 ? -1 : work + c;
            }
            if (work < 0 || work >= 4096 || strstr(n->op->name, "MatMul")) it->flags |= DF__XF_EXPENSIVE;
        }
        if (f & DF__OP_SWITCH) it->flags |= DF__XF_SWITCH;
        if (f & DF__OP_TRANSFER) {
            it->flags |= DF__XF_TRANSFER;
            it->aux = (int32_t)df__attr_i(n, "_key", -1);
            it->child_frame = (int32_t)df__attr_i(n, "_recv_memory", -1);
        }
        if (f & DF__OP_LOOP_COND) it->flags |= DF__XF_LOOP_COND;
        if (f & DF__OP_ASYNC) { it->flags |= DF__XF_ASYNC; x->has_async = 1; }
        if (!strcmp(n->op->name, "MatMul")) it->flags |= DF__XF_MATMUL;
        if (it->kernel == df__k_noop) it->flags |= DF__XF_NO_KERNEL;
        for (int k = 0; k < n->n_inputs; k++)      /* (Assign's value is read: only its Ref(T) may be uninitialised) */
            if (n->inputs[k].node->out_is_ref[n->inputs[k].index] && (!(f & DF__OP_ALLOWS_UNINIT) || (n->op->n_in > k &&
                !n->op->in[k].is_list && !df__ref_arg(n->op, k)))) it->flags |= DF__XF_DEREF;
    }
    for (int f = 0; f < n_feeds; f++) {
        if (feed_item[f] < 0) continue;
        df__xitem *it = &x->items[feed_item[f]];
        it->kind = DF__X_FEED; it->n_outputs = 1; it->aux = f;
        if (devmem && df__attr_b(feeds[f].node, "_device_memory", 0)) it->flags |= DF__XF_DEVICE_VALUE;
    }
    for (int i = 0; i < n_fetches; i++) {
        df__xitem *it = &x->items[fetch_base + i];
        it->kind = DF__X_FETCH; it->n_inputs = 1; it->aux = i;
        it->node = fetches[i].node; it->child_frame = fetches[i].index;
        if (devmem && !df__out_on_host(fetches[i].node, fetches[i].index, dev)) it->flags |= DF__XF_DEVICE_VALUE;
    }
    /* 2. out-edges (CSR): count per source, then fill; data edges carry the local input slot */
    x->n_feeds = n_feeds;
    x->n_fetches = n_fetches;
    int n_edges = 0;
    for (int i = 0; i < n_items; i++) deg[i] = 0;
#define DF__SRC_ITEM(o, fidx) ((fidx) >= 0 ? feed_item[fidx] : item_of[(o).node->id])
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nn; i++) {
            if (item_of[i] < 0) continue;
            const df_node *n = g->nodes[i];
            for (int k = 0; k < n->n_inputs; k++) {
                int fi = df__feed_index(first_feed, next_feed, feeds, n->inputs[k]);
                int src = DF__SRC_ITEM(n->inputs[k], fi);
                if (pass == 0) { deg[src]++; n_edges++; continue; }
                df__xedge *e = &x->edges[x->items[src].edge_start + x->items[src].n_edges++];
                e->dst = item_of[i]; e->slot = k; e->src_out = (uint16_t)(fi >= 0 ? 0 : n->inputs[k].index);
            }
            for (int k = 0; k < n->n_controls; k++) {
                int fc = df__feed_index(first_feed, next_feed, feeds, (df_output){n->controls[k], 0});
                int src = fc >= 0 ? feed_item[fc] : item_of[n->controls[k]->id];
                if (pass == 0) { deg[src]++; n_edges++; continue; }
                df__xedge *e = &x->edges[x->items[src].edge_start + x->items[src].n_edges++];
                e->dst = item_of[i]; e->slot = -1; e->src_out = 0;
            }
        }
        for (int i = 0; i < n_fetches; i++) {
            int fi = df__feed_index(first_feed, next_feed, feeds, fetches[i]);
            int src = DF__SRC_ITEM(fetches[i], fi);
            if (pass == 0) { deg[src]++; n_edges++; continue; }
            df__xedge *e = &x->edges[x->items[src].edge_start + x->items[src].n_edges++];
            e->dst = fetch_base + i; e->slot = 0; e->src_out = (uint16_t)(fi >= 0 ? 0 : fetches[i].index);
        }
        if (pass == 0) {
            x->edges = (df__xedge *)DF_MALLOC((size_t)(n_edges + 1) * sizeof(df__xedge));
            if (!x->edges) goto oom;
            x->n_edges = n_edges;
            int at = 0;
            for (int i = 0; i < n_items; i++) { x->items[i].edge_start = at; x->items[i].n_edges = 0; at += deg[i]; }
        }
    }
#undef DF__SRC_ITEM
    /* Data edges before control edges within each source: TF's order, and what `need` uses. */
    for (int i = 0; i < n_items; i++) {
        df__xitem *it = &x->items[i];
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot >= 0) it->need |= ed->src_out >= 31 ? 0x80000000u : 1u << ed->src_out;
        }
        if (it->n_outputs > 31 && (it->need & 0x80000000u)) it->need = 0xffffffffu;
    }
    /* 3. frames, validation, layout */
    if (df__analyze_frames(x, st) != DF_OK) goto fail;
    /* 4. roots */
    x->roots = (int32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(int32_t));
    if (!x->roots) goto oom;
    for (int i = 0; i < n_items; i++)
        if (x->items[i].n_inputs + x->items[i].n_control_in == 0) x->roots[x->n_roots++] = i;
    DF_FREE(item_of); DF_FREE(first_feed); DF_FREE(next_feed); DF_FREE(feed_item); DF_FREE(stack); DF_FREE(deg);
    return x;
oom:
    df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory compiling the graph for a run");
fail:
    DF_FREE(item_of); DF_FREE(first_feed); DF_FREE(next_feed); DF_FREE(feed_item); DF_FREE(stack); DF_FREE(deg);
    df__exec_free(x);
    return NULL;
}
