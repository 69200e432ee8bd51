/* ==========================================================================================
   src/run.c: The run pipeline                                                          >>run
   df_session_run looks its (feeds, fetches, targets) signature up in the session's cache; on
   a miss df__plan_build makes a plan, in this order:
     lower       If, While and calls become the five primitives (src/function.c)
     passes      the working graph: pruned, identities removed, CSE, constants folded (df__optimize,
                 here; the passes themselves in src/passes.c)
     compile     the working graph as one executor, to validate it (src/compile.c)
     place       a device per item (src/placer.c)
     partition   a graph per device with _Send/_Recv between them, each compiled (src/partition.c;
                 one device: the compiled graph is the plan's only partition)
   and df__run_plan executes it: every partition at once on the session's pool (src/executor.c),
   Sends meeting Recvs in the run's rendezvous (src/transfer.c). The caller gets new references
   to the fetched values.
   ========================================================================================== */
/* The working graph for a run of g: the nodes it needs, rewritten by the passes opts allow. */
static df_code df__optimize(df_session *ss, const df_output *feeds, int n_feeds, const df_output *fetches, int n_fetches,
                            df_node *const *targets, int n_targets, df__opt *o, df_pass_stats *stats, df_status *st) {
    const df_graph *g = ss->g;
    int mask = ~ss->opts.disable_passes;
    memset(o, 0, sizeof *o);
    memset(stats, 0, sizeof *stats);
    stats->nodes_in = g->n_nodes;
    int n = g->n_nodes, sp = 0, m = 0;
    int32_t *map = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    int *stack = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    o->wg = df_graph_new();
    o->fetches = (df_output *)DF_MALLOC((size_t)(n_fetches + 1) * sizeof(df_output));
    o->feeds = (df_output *)DF_MALLOC((size_t)(n_feeds + 1) * sizeof(df_output));
    o->targets = (df_node **)DF_MALLOC((size_t)(n_targets + 1) * sizeof(df_node *));
    if (!map || !stack || !o->wg || !o->fetches || !o->feeds || !o->targets) goto oom;
    o->wg->internal_names = 1;
    o->wg->lib_from = g;
    for (int i = 0; i < n; i++) map[i] = -1;
#define DF__OPT_PUSH0(id) do { int id_ = (id); if (o->outside[id_]) { o->outside[id_] = 0; stack[sp++] = id_; } } while (0)
    if (mask & DF_PASS_PRUNE) {
#define DF__OPT_PUSH(id) do { int id_ = (id); if (map[id_] == -1) { map[id_] = -2; stack[sp++] = id_; } } while (0)
        for (int i = 0; i < n_fetches; i++) DF__OPT_PUSH(fetches[i].node->id);
        for (int i = 0; i < n_targets; i++) DF__OPT_PUSH(targets[i]->id);
        for (int i = 0; i < n_feeds; i++) DF__OPT_PUSH(feeds[i].node->id);
        while (sp) {
            const df_node *x = g->nodes[stack[--sp]];
            for (int k = 0; k < x->n_inputs; k++) DF__OPT_PUSH(x->inputs[k].node->id);
            for (int k = 0; k < x->n_controls; k++) DF__OPT_PUSH(x->controls[k]->id);
        }
#undef DF__OPT_PUSH
    } else {
        /* every node is copied; those the run does not need stay even when the passes leave
           them unused, so the picture with pruning off is the graph as built */
        o->outside = (unsigned char *)DF_MALLOC((size_t)n + 1);
        if (!o->outside) goto oom;
        memset(o->outside, 1, (size_t)n + 1);
        o->n_outside = n;
        for (int i = 0; i < n_fetches; i++) DF__OPT_PUSH0(fetches[i].node->id);
        for (int i = 0; i < n_targets; i++) DF__OPT_PUSH0(targets[i]->id);
        for (int i = 0; i < n_feeds; i++) DF__OPT_PUSH0(feeds[i].node->id);
        while (sp) {
            const df_node *x = g->nodes[stack[--sp]];
            for (int k = 0; k < x->n_inputs; k++) DF__OPT_PUSH0(x->inputs[k].node->id);
            for (int k = 0; k < x->n_controls; k++) DF__OPT_PUSH0(x->controls[k]->id);
        }
        for (int i = 0; i < n; i++) map[i] = -2;
    }
#undef DF__OPT_PUSH0
    for (int i = 0; i < n; i++) {
        if (map[i] != -2) continue;
        df_node *c = df__node_clone(o->wg, g->nodes[i], g->nodes[i]->device ? g->nodes[i]->device : "");
        if (!c) goto oom;
        c->cf_part = g->nodes[i]->cf_part;
        map[i] = m++;
    }
    stats->nodes_needed = m;
    for (int i = 0; i < n; i++) {
        if (map[i] < 0) continue;
        const df_node *x = g->nodes[i];
        df_node *c = o->wg->nodes[map[i]];
        for (int k = 0; k < x->n_inputs; k++) c->inputs[k] = (df_output){o->wg->nodes[map[x->inputs[k].node->id]], x->inputs[k].index};
        for (int k = 0; k < x->n_controls; k++)
            if (!df__node_add_control(c, o->wg->nodes[map[x->controls[k]->id]])) goto oom;
    }
    o->n_fetches = n_fetches; o->n_feeds = n_feeds; o->n_targets = n_targets;
    for (int i = 0; i < n_fetches; i++) o->fetches[i] = (df_output){o->wg->nodes[map[fetches[i].node->id]], fetches[i].index};
    for (int i = 0; i < n_feeds; i++) o->feeds[i] = (df_output){o->wg->nodes[map[feeds[i].node->id]], feeds[i].index};
    for (int i = 0; i < n_targets; i++) o->targets[i] = o->wg->nodes[map[targets[i]->id]];
    o->cap_removed = o->cap_pinned = m + 1;
    o->removed = (unsigned char *)DF_MALLOC((size_t)m + 1);
    o->pinned = (unsigned char *)DF_MALLOC((size_t)m + 1);
    if (!o->removed || !o->pinned) goto oom;
    memset(o->removed, 0, (size_t)m + 1);
    memset(o->pinned, 0, (size_t)m + 1);
    for (int i = 0; i < n_feeds; i++) o->pinned[o->feeds[i].node->id] = 1;
    for (int i = 0; i < n_targets; i++) o->pinned[o->targets[i]->id] = 1;
    for (int i = 0; i < n_fetches; i++) o->pinned[o->fetches[i].node->id] = 1;   /* (as TF's nodes to preserve) */
    DF_FREE(map); DF_FREE(stack);
    map = NULL; stack = NULL;
    int r;
    if (mask & DF_PASS_IDENTITY) { if ((r = df__opt_identities(o)) < 0) goto oom; stats->identities_removed = r; }
    if (mask & DF_PASS_CSE) { if ((r = df__opt_cse(o)) < 0) goto oom; stats->cse_merged = r; }
    if (mask & DF_PASS_CONSTANT_FOLDING) {
        if ((r = df__opt_fold(o, ss)) < 0) goto oom;
        stats->constants_folded = r;
        if (r && (mask & DF_PASS_CSE)) {          /* equal folded constants, and what reads them */
            if ((r = df__opt_cse(o)) < 0) goto oom;
            stats->cse_merged += r;
        }
    }
    if (mask & DF_PASS_DEPENDENCY) {
        if ((r = df__opt_dependencies(o, &stats->control_edges_removed)) < 0) goto oom;
        stats->dependencies_removed = r;
    }
    if (!df__opt_compact(o)) goto oom;
    stats->nodes_out = o->wg->n_nodes;
    if (o->wg->status.code) { df_status_set(st, o->wg->status.code, "Optimising the graph: %s", o->wg->status.message); df__opt_free(o); return st->code; }
    return DF_OK;
oom:
    DF_FREE(map); DF_FREE(stack);
    df__opt_free(o);
    return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory optimising the graph");
}

static df__plan *df__plan_build_lowered(df_session *ss, const df_output *feeds, int n_feeds, const df_output *fetches,
                                        int n_fetches, df_node *const *targets, int n_targets, df_status *st);
static df__plan *df__plan_build(df_session *ss, const df_output *feeds, int n_feeds, const df_output *fetches,
                                int n_fetches, df_node *const *targets, int n_targets, df_status *st) {
    /* calls are inlined unless the inline pass is off (never with workers: they get no library) */
    int keep_calls = (ss->opts.disable_passes & DF_PASS_INLINE) && !ss->cluster;
    df__graph_rw_lock(0);
    if (df__graph_has_functional_ex(ss->g, keep_calls)) {
        df__graph_rw_unlock();
        df__graph_rw_lock(1);
        df_code lc = df__graph_has_functional_ex(ss->g, keep_calls) ? df__lower_all_ex(ss->g, keep_calls) : DF_OK;
        df__graph_rw_unlock();
        if (lc != DF_OK) { *st = ss->g->status; return NULL; }
        df__graph_rw_lock(0);
    }
    df__plan *plan = df__plan_build_lowered(ss, feeds, n_feeds, fetches, n_fetches, targets, n_targets, st);
    df__graph_rw_unlock();
    return plan;
}
static df__plan *df__plan_build_lowered(df_session *ss, const df_output *feeds, int n_feeds, const df_output *fetches,
                                        int n_fetches, df_node *const *targets, int n_targets, df_status *st) {
    df__opt o;
    df_pass_stats stats;
    memset(&o, 0, sizeof o);
    memset(&stats, 0, sizeof stats);
    df_graph *run_g = ss->g;
    const int copy_passes = DF_PASS_ALL & ~DF_PASS_INLINE;    /* (inlining is done in place) */
    if ((ss->opts.disable_passes & copy_passes) != copy_passes) {
        if (df__optimize(ss, feeds, n_feeds, fetches, n_fetches, targets, n_targets, &o, &stats, st) != DF_OK) return NULL;
        run_g = o.wg;
        feeds = o.feeds; fetches = o.fetches; targets = o.targets;
    }
    df__exec *x = df__compile(ss, run_g, feeds, n_feeds, fetches, n_fetches, targets, n_targets, NULL, st);
    if (!x) { df__opt_free(&o); return NULL; }
    int32_t *dev = (int32_t *)DF_MALLOC((size_t)(x->n_items + 1) * sizeof(int32_t));
    if (!dev) { df__exec_free(x); df__opt_free(&o); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory placing the graph"); return NULL; }
    if (df__place(ss, x, dev, st) != DF_OK) { DF_FREE(dev); df__exec_free(x); df__opt_free(&o); return NULL; }
    int first = -1, many = 0;
    for (int i = 0; i < x->n_items; i++)
        if (dev[i] >= 0) { if (first < 0) first = dev[i]; else if (dev[i] != first) many = 1; }
    df__plan *plan = NULL;
    /* A device without host memory always gets a partition of its own: its graph runs its own
       kernels, and values cross between memory types through Send/Recv pairs. */
    if (many || ss->cluster || (first >= 0 && !ss->devices[first]->host_memory)) {
        plan = df__partition(ss, x, dev, feeds, n_feeds, fetches, n_fetches, st);
        df__exec_free(x);
        if (plan && ss->cluster && df__cluster_register(ss, plan, st) != DF_OK) { df__plan_free(plan); plan = NULL; }
    } else {
        plan = (df__plan *)DF_MALLOC(sizeof *plan);
        df__part *pt = (df__part *)DF_MALLOC(sizeof *pt);
        if (!plan || !pt) {
            DF_FREE(plan); DF_FREE(pt); df__exec_free(x);
            df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a plan");
            plan = NULL;
        } else {
            memset(plan, 0, sizeof *plan);
            memset(pt, 0, sizeof *pt);
            pt->g = run_g; pt->x = x; pt->dev = ss->devices[first < 0 ? 0 : first];
            plan->parts = pt; plan->n_parts = 1;
        }
    }
    DF_FREE(dev);
    if (plan) {                   /* the plan keeps the working graph: its executors point into it */
        plan->work = o.wg;
        plan->stats = stats;
        o.wg = NULL;
    }
    df__opt_free(&o);
    return plan;
}

/* Runs a plan: one executor on the calling thread, or every partition together. */
static df_code df__run_plan(df_session *s, df__plan *plan, df_tensor *const *feed_values, df_tensor **fetch_values,
                            int n_fetches, const char *files_node, int timeout_ms, df__trace *trace, df_status *st) {
    if (s->cluster) return df__cluster_run(s, plan, feed_values, fetch_values, n_fetches, timeout_ms, trace, st);
    if (!plan->owns_graphs) {
        df__step step;
        memset(&step, 0, sizeof step);
        step.x = plan->parts[0].x;
        step.session = s;
        step.device = plan->parts[0].dev;
        step.feeds = feed_values;
        step.fetches = fetch_values;
        step.ipool = s->ipool;
        df__step_set_deadline(&step, timeout_ms);
        step.files_node = files_node;
        step.trace = trace;
#ifndef DF_NO_THREADS
        step.pool = s->pool;
        step.threaded = s->pool != NULL;
#endif
        return df__execute(&step, st);
    }
    int np = plan->n_parts;
    df__pgroup g;
    memset(&g, 0, sizeof g);
    size_t nfeeds = 0, nfetch = 0;
    for (int p = 0; p < np; p++) { nfeeds += (size_t)plan->parts[p].n_feeds; nfetch += (size_t)plan->parts[p].n_fetches; }
    g.steps = (df__step *)DF_MALLOC((size_t)np * sizeof(df__step));
    df_tensor **feeds = (df_tensor **)DF_MALLOC((nfeeds + 1) * sizeof(df_tensor *));
    df_tensor **fetches = (df_tensor **)DF_MALLOC((nfetch + 1) * sizeof(df_tensor *));
    if (!g.steps || !feeds || !fetches || !df__rv_init(&g.rv)) {
        DF_FREE(g.steps); DF_FREE(feeds); DF_FREE(fetches); DF_FREE(g.rv.buckets);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a partitioned run");
    }
    memset(g.steps, 0, (size_t)np * sizeof(df__step));
    memset(fetches, 0, (nfetch + 1) * sizeof(df_tensor *));
    g.n_steps = np;
    size_t fa = 0, fo = 0;
    for (int p = 0; p < np; p++) {
        df__part *pt = &plan->parts[p];
        df__step *step = &g.steps[p];
        for (int k = 0; k < pt->n_feeds; k++) feeds[fa + (size_t)k] = feed_values[pt->feed_map[k]];
        step->x = pt->x;
        step->session = s;
        step->device = pt->dev;
        step->feeds = feeds + fa;
        step->fetches = fetches + fo;
        step->group = &g;
        step->home = &g.steps[0];
        step->ipool = s->ipool;
        df__step_set_deadline(step, timeout_ms);
        step->files_node = files_node;
        step->trace = trace;
#ifndef DF_NO_THREADS
        step->pool = s->pool;
        step->threaded = s->pool != NULL;
        step->shared = step->threaded;
#endif
        fa += (size_t)pt->n_feeds;
        fo += (size_t)pt->n_fetches;
    }
    df_code code = df__group_execute(&g, st);
    fo = 0;
    for (int p = 0; p < np; p++) {
        const df__part *pt = &plan->parts[p];
        for (int k = 0; k < pt->n_fetches; k++) {
            df_tensor *v = fetches[fo + (size_t)k];
            if (code == DF_OK && n_fetches > pt->fetch_map[k]) fetch_values[pt->fetch_map[k]] = v;
            else df_tensor_release(v);
        }
        fo += (size_t)pt->n_fetches;
    }
    df__rv_free(&g.rv);
    DF_FREE(g.steps); DF_FREE(feeds); DF_FREE(fetches);
    return code;
}

df_code df_graph_validate(const df_graph *g, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "df_graph_validate: graph is NULL");
    if (g->status.code) { *st = g->status; return st->code; }
    struct df_session fake;
    memset(&fake, 0, sizeof fake);
    fake.g = (df_graph *)g;
    df_node **all = (df_node **)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(df_node *));
    if (!all) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    for (int i = 0; i < g->n_nodes; i++) all[i] = g->nodes[i];
    df__exec *x = df__compile(&fake, (df_graph *)g, NULL, 0, NULL, 0, all, g->n_nodes, NULL, st);
    DF_FREE(all);
    df__exec_free(x);
    return st->code;
}

DF_PRIVATE int df__shape_compatible(const df__shape *s, const df_tensor *t) {
    if (s->rank < 0) return 1;
    if (s->rank != t->rank) return 0;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] >= 0 && s->dims[i] != t->dims[i]) return 0;
    return 1;
}

df_code df_session_run(df_session *s, const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                       const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                       df_node *const *targets, int n_targets, df_status *st) {
    return df__session_run_files(s, feeds, feed_values, n_feeds, fetches, fetch_values, n_fetches, targets, n_targets, NULL, st);
}
/* A run: timeout_ms < 0 is the session's run_timeout_ms; trace (NULL: none) records the nodes. */
static df_code df__session_run_ex(df_session *s, const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                                  const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                                  df_node *const *targets, int n_targets, const char *file_node, int timeout_ms,
                                  df__trace *trace, df_status *st);
DF_PRIVATE df_code df__session_run_files(df_session *s, const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                                         const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                                         df_node *const *targets, int n_targets, const char *file_node, df_status *st) {
    return df__session_run_ex(s, feeds, feed_values, n_feeds, fetches, fetch_values, n_fetches, targets, n_targets, file_node,
                              -1, NULL, st);
}
df_code df_session_run_with_options(df_session *s, const df_run_options *ro,
                                    const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                                    const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                                    df_node *const *targets, int n_targets, df_run_metadata *md, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    df_run_metadata_clear(md);
    int level = ro ? ro->trace_level : DF_TRACE_NONE, timeout_ms = ro && ro->timeout_ms ? ro->timeout_ms : -1;
    if (ro && (ro->trace_level < DF_TRACE_NONE || ro->trace_level > DF_TRACE_FULL))
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run_with_options: trace_level %d is not one of DF_TRACE_NONE..DF_TRACE_FULL",
                             ro->trace_level);
    if (ro && ro->timeout_ms < 0)
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run_with_options: timeout_ms %d is negative", ro->timeout_ms);
    if (level == DF_TRACE_NONE || !md)
        return df__session_run_ex(s, feeds, feed_values, n_feeds, fetches, fetch_values, n_fetches, targets, n_targets, NULL,
                                  timeout_ms, NULL, st);
    df__trace *tr = (df__trace *)DF_MALLOC(sizeof *tr);
    if (!tr) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a traced run");
    df__trace_begin(tr);
    df_code code = df__session_run_ex(s, feeds, feed_values, n_feeds, fetches, fetch_values, n_fetches, targets, n_targets,
                                      NULL, timeout_ms, tr, st);
    /* (the metadata of a failed run holds what ran before the error) */
    df_status mst;
    df_status_clear(&mst);
    if (df__trace_finish(tr, md, &mst) != DF_OK && code == DF_OK) {
        *st = mst;
        code = mst.code;
        for (int i = 0; i < n_fetches; i++) { df_tensor_release(fetch_values[i]); fetch_values[i] = NULL; }
    }
    DF_FREE(tr);
    return code;
}
static df_code df__session_run_ex(df_session *s, const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                                  const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                                  df_node *const *targets, int n_targets, const char *file_node, int timeout_ms,
                                  df__trace *trace, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!s) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run: session is NULL");
    if (n_feeds < 0 || n_fetches < 0 || n_targets < 0)
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run: negative count");
    if ((n_feeds && (!feeds || !feed_values)) || (n_fetches && (!fetches || !fetch_values)) || (n_targets && !targets))
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run: an array is NULL but its count is not zero");
    for (int i = 0; i < n_fetches; i++) fetch_values[i] = NULL;
    df_graph *g = s->g;
    if (g->status.code)
        return df_status_set(st, g->status.code, "The graph has an error and cannot run: %s", g->status.message);
    for (int i = 0; i < n_feeds; i++) {
        df_output o = feeds[i];
        if (!o.node || o.node->graph != g) return df_status_set(st, DF_INVALID_ARGUMENT, "Feed %d is NULL or from another graph", i);
        if (!df__output_valid(o)) return df_status_set(st, DF_INVALID_ARGUMENT, "Feed %d: '%s' has no output %d {{node %s}}", i, o.node->name, o.index, o.node->name);
        const df_tensor *v = feed_values[i];
        if (!v) return df_status_set(st, DF_INVALID_ARGUMENT, "Feed %d ('%s:%d') has a NULL value", i, o.node->name, o.index);
        if (v->dtype != o.node->out_types[o.index])
            return df_status_set(st, DF_INVALID_ARGUMENT, "Cannot feed a %s tensor to '%s:%d', which has type %s {{node %s}}",
                                 df_dtype_name(v->dtype), o.node->name, o.index, df_dtype_name(o.node->out_types[o.index]), o.node->name);
        if (!df__shape_compatible(&o.node->out_shapes[o.index], v)) {
            char s1[128], s2[128];
            const df__shape *sh = &o.node->out_shapes[o.index];
            return df_status_set(st, DF_INVALID_ARGUMENT, "Cannot feed value of shape %s for tensor '%s:%d', which has shape %s {{node %s}}",
                                 df__dims_str(v->rank, v->dims, s1, 128), o.node->name, o.index,
                                 df__dims_str(sh->rank, sh->dims, s2, 128), o.node->name);
        }
        for (int j = 0; j < i; j++)
            if (feeds[j].node == o.node && feeds[j].index == o.index)
                return df_status_set(st, DF_INVALID_ARGUMENT, "'%s:%d' is fed more than once {{node %s}}", o.node->name, o.index, o.node->name);
    }
    for (int i = 0; i < n_fetches; i++) {
        df_output o = fetches[i];
        if (!o.node || o.node->graph != g) return df_status_set(st, DF_INVALID_ARGUMENT, "Fetch %d is NULL or from another graph", i);
        if (!df__output_valid(o)) return df_status_set(st, DF_INVALID_ARGUMENT, "Fetch %d: '%s' has no output %d {{node %s}}", i, o.node->name, o.index, o.node->name);
    }
    for (int i = 0; i < n_targets; i++)
        if (!targets[i] || targets[i]->graph != g) return df_status_set(st, DF_INVALID_ARGUMENT, "Target %d is NULL or from another graph", i);
    /* the signature */
    df__buf key = {NULL, 0, 0, 0};
    df__buf_printf(&key, "e%llu;", (unsigned long long)__atomic_load_n(&g->edit_version, __ATOMIC_RELAXED));
    for (int i = 0; i < n_feeds; i++) df__buf_printf(&key, "f%d:%d,", feeds[i].node->id, feeds[i].index);
    for (int i = 0; i < n_fetches; i++) df__buf_printf(&key, "o%d:%d,", fetches[i].node->id, fetches[i].index);
    for (int i = 0; i < n_targets; i++) df__buf_printf(&key, "t%d,", targets[i]->id);
    if (key.oom) { DF_FREE(key.s); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    df__plan *plan = NULL;
    int idx;
    df__spin_lock(&s->lock);
    if (df__strmap_get(&s->cache, key.s, &idx)) plan = s->plans[idx];
    df__spin_unlock(&s->lock);
    if (!plan) {
        plan = df__plan_build(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, st);
        if (!plan) { DF_FREE(key.s); return st->code; }
        df__spin_lock(&s->lock);
        if (df__strmap_get(&s->cache, key.s, &idx)) {          /* another thread won the race */
            df__plan_free(plan);
            plan = s->plans[idx];
        } else if (df__grow(&s->plans, &s->cap_plans, s->n_plans + 1, sizeof(df__plan *)) &&
                   df__strmap_put(&s->cache, key.s, s->n_plans)) {
            s->plans[s->n_plans++] = plan;
        } else {
            df__spin_unlock(&s->lock);
            df__plan_free(plan);
            DF_FREE(key.s);
            return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory caching an executor");
        }
        df__spin_unlock(&s->lock);
    }
    DF_FREE(key.s);
    __atomic_store_n(&s->last_plan, plan, __ATOMIC_RELEASE);
    __atomic_add_fetch(&s->runs_in_flight, 1, __ATOMIC_ACQ_REL);
    df_code code = df__run_plan(s, plan, feed_values, fetch_values, n_fetches, file_node,
                                timeout_ms < 0 ? s->opts.run_timeout_ms : timeout_ms, trace, st);
    __atomic_store_n(&s->ran, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&s->runs_in_flight, 1, __ATOMIC_ACQ_REL);
    for (int i = 0; code == DF_OK && i < n_fetches; i++)
        if (!fetch_values[i])
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Fetch %d ('%s:%d') was never computed: a node it "
                                 "depends on waits for an input or control edge that this run never produces",
                                 i, fetches[i].node->name, fetches[i].index);
    if (code != DF_OK)
        for (int i = 0; i < n_fetches; i++) { df_tensor_release(fetch_values[i]); fetch_values[i] = NULL; }
    return code;
}
