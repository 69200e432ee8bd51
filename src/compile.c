/* ==========================================================================================
   src/compile.c: Compiling a graph into an executor                                  >>compile
   df__compile turns the nodes a run needs into a df__exec: one item per node (feeds and fetches
   as items of their own), its kernel for the device it will run on, its edges with their input
   slots, and the static frames of its loops (src/frames.c). It runs on the whole pruned graph
   once per run signature, to validate it and give the placer and partitioner their items, and
   again on each partition. What it shares with the partitioner, which kernel a node runs on a
   device and whether each argument lives in host memory, is here, so neither calls the other.
   ========================================================================================== */
/* The kernel a node runs on a device type, with its memory types. On a GPU, a node whose
   inputs and outputs are all integers, booleans, strings or handles runs its CPU kernel with
   every argument in host memory (TensorFlow's int32 rule: shapes, counters and predicates
   stay on the host, so loop control never waits for the device); otherwise the GPU kernel
   runs, and it must support the dtypes of its device-memory arguments. host_only (may be
   NULL) says which of the two. NULL: no kernel. */
static int df__host_dtype(df_dtype t) {
    return t == DF_INT32 || t == DF_INT64 || t == DF_BOOL || t == DF_STRING || t == DF_RESOURCE || t == DF_VARIANT;
}
#ifdef DATAFLOW_CUDA
#endif
DF_PRIVATE df__kernel_fn df__node_kernel(const df_node *n, int kernel_type, uint32_t *host_in, uint32_t *host_out,
                                     int *host_only) {
    const df__kernel_def *k = &n->op->kernels[kernel_type];
    if (host_only) *host_only = 0;
    if (!k->fn) return NULL;
#ifdef DATAFLOW_CUDA
    if (n->gg) {                                  /* the memory types its members take and make */
        if (host_in) *host_in = df__gg_mask(n->gg, 0);
        if (host_out) *host_out = df__gg_mask(n->gg, 1);
        return k->fn;
    }
#endif
    if (kernel_type == DF__DEV_CPU || (n->op->flags & DF__OP_TRANSFER)) {   /* _Send/_Recv: by name */
        if (kernel_type != DF__DEV_CPU) {
            if (host_in) *host_in = k->host_inputs;
            if (host_out) *host_out = k->host_outputs;
            return k->fn;
        }
        if (host_in) *host_in = ~0u;
        if (host_out) *host_out = ~0u;
        return k->fn;
    }
    int all_host = 1, ok = 1;
    for (int i = 0; i < n->n_inputs; i++) {
        df_dtype t = n->inputs[i].node->out_types[n->inputs[i].index];
        if (!df__host_dtype(t)) all_host = 0;
        uint32_t hin = (k->host_inputs & 0x80000000u) ? (i == n->n_inputs - 1) : k->host_inputs >> DF__MIN(i, 31) & 1;
        if (!hin && k->types && !df__host_dtype(t) && !(k->types >> ((unsigned)t & 31) & 1)) ok = 0;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        df_dtype t = n->out_types[i];
        if (!df__host_dtype(t)) all_host = 0;
        if (!(k->host_outputs >> DF__MIN(i, 31) & 1) && k->types && !df__host_dtype(t) && !(k->types >> ((unsigned)t & 31) & 1)) ok = 0;
    }
    if (all_host) {
        if (host_in) *host_in = ~0u;
        if (host_out) *host_out = ~0u;
        if (host_only) *host_only = 1;
        return n->op->kernels[DF__DEV_CPU].fn;
    }
    if (!ok) return NULL;
    if (host_in) *host_in = (k->host_inputs & 0x80000000u) && n->n_inputs > 0 && n->n_inputs <= 31
                          ? (k->host_inputs & 0x7fffffffu) | 1u << (n->n_inputs - 1) : k->host_inputs;
    if (host_out) *host_out = k->host_outputs;
    return k->fn;
}
DF_PRIVATE int df__node_has_kernel(const df_node *n, const df__device *d) { return df__node_kernel(n, d->kernel_type, NULL, NULL, NULL) != NULL; }

/* Memory types: on a device whose memory is not the host's, host-memory arguments of a kernel
   (shapes, predicates) live in host memory; an edge between the two kinds needs a transfer even
   on one device. CPU devices have host memory only. */
DF_PRIVATE int df__out_on_host(const df_node *n, int out, const df__device *d) {
    uint32_t host_out = ~0u;
    if (d->host_memory || out < 0) return 1;
    df__node_kernel(n, d->kernel_type, NULL, &host_out, NULL);
    return host_out >> DF__MIN(out, 31) & 1;
}
DF_PRIVATE int df__in_on_host(const df_node *n, int in, const df__device *d) {
    uint32_t host_in = ~0u;
    if (d->host_memory || in < 0) return 1;
    df__node_kernel(n, d->kernel_type, &host_in, NULL, NULL);
    return host_in >> DF__MIN(in, 31) & 1;
}

/* Feed lookup: feed index of (node id, output) or -1. first_feed[id] chains feeds of a node. */
static int df__feed_index(const int *first_feed, const int *next_feed, const df_output *feeds, df_output o) {
    for (int f = first_feed[o.node->id]; f >= 0; f = next_feed[f])
        if (feeds[f].index == o.index) return f;
    return -1;
}

/* What the phases of df__compile share: the run's feeds and fetches, and the item each node and
   feed became. The phases copy what their loops read into locals, as one function would. */
typedef struct df__compile_state {
    df__exec *x;
    df_graph *g;
    const df_output *feeds, *fetches;
    int n_feeds, n_fetches;
    const df__device *dev;
    int devmem;                  /* kernels of dev's type, memory types apply */
    int *item_of;                /* per node id: its item; -1 pruned, -2 while on the stack */
    int *first_feed, *next_feed; /* the feeds of a node, chained (df__feed_index) */
    int *feed_item;              /* per feed: its item; -1 while nothing reads it */
    int32_t *stack, *deg;
    int fetch_base;              /* fetch items come last, in fetch order */
} df__compile_state;

/* Only what the fetches and targets need runs: a walk back from them, stopping at fed outputs,
   numbers the nodes it reaches. Returns how many items that made. */
static int df__compile_prune(df__compile_state *s, df_node *const *targets, int n_targets) {
    const df_graph *g = s->g;
    const df_output *feeds = s->feeds, *fetches = s->fetches;
    const int *first_feed = s->first_feed, *next_feed = s->next_feed;
    int *item_of = s->item_of;
    int32_t *stack = s->stack;
    int n_fetches = s->n_fetches;
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
    return n_items;
}

/* A feed is an item only when a kept node or a fetch reads it; numbers those after the nodes.
   Returns the item count so far. */
static int df__compile_number_feeds(df__compile_state *s, int n_items) {
    const df_graph *g = s->g;
    const df_output *feeds = s->feeds, *fetches = s->fetches;
    const int *first_feed = s->first_feed, *next_feed = s->next_feed, *item_of = s->item_of;
    int *feed_item = s->feed_item;
    int nn = g->n_nodes, n_fetches = s->n_fetches;
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
    return n_items;
}

/* The items, zeroed, their out-degree counts, and on a device without host memory the memory
   types of their outputs (all host until a kernel says otherwise). 0: out of memory. */
static int df__compile_alloc_items(df__compile_state *s, int n_items) {
    df__exec *x = s->x;
    x->n_items = n_items;
    x->items = (df__xitem *)DF_MALLOC((size_t)(n_items + 1) * sizeof(df__xitem));
    s->deg = (int32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(int32_t));
    if (!x->items || !s->deg) return 0;
    memset(x->items, 0, (size_t)(n_items + 1) * sizeof(df__xitem));
    if (s->devmem) {
        if (!(x->host_out = (uint32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(uint32_t)))) return 0;
        for (int i = 0; i <= n_items; i++) x->host_out[i] = ~0u;
    }
    return 1;
}

/* An item carries what the executor asks of its node on every run (kind, cost, flags), so that
   running it never looks at the op. */
static void df__compile_describe_item(df__exec *x, df__xitem *it, const df_node *n) {
    unsigned f = n->op->flags;
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

/* Each kept node's item with its kernel: on a device whose memory is not the host's, the one for
   the device's type and its memory types. Fails when the device has no kernel for a node. */
static df_code df__compile_node_items(df__compile_state *s, df_status *st) {
    df__exec *x = s->x;
    const df_graph *g = s->g;
    const df__device *dev = s->dev;
    const int *item_of = s->item_of;
    int nn = g->n_nodes, devmem = s->devmem;
    for (int i = 0; i < nn; i++) {
        if (item_of[i] < 0) continue;
        const df_node *n = g->nodes[i];
        df__xitem *it = &x->items[item_of[i]];
        it->node = n;
        it->kernel = df__half_unwrap(n, n->op->kernels[DF__DEV_CPU].fn);
        if (devmem) {
            uint32_t host_out = ~0u;
            int host_only = 0;
            if (!(it->kernel = df__node_kernel(n, dev->kernel_type, NULL, &host_out, &host_only))) {
                df_status_set(st, DF_INTERNAL, "No %s kernel for op %s (placed on %s) {{node %s}}", dev->type, n->op->name,
                              dev->name, n->name);
                return DF_INTERNAL;
            }
            x->host_out[item_of[i]] = host_only ? ~0u : host_out;
        }
        df__compile_describe_item(x, it, n);
    }
    return DF_OK;
}

/* Feed and fetch items stand for the caller's tensors: aux is their index in the run's arrays. */
static void df__compile_feed_fetch_items(df__compile_state *s) {
    df__exec *x = s->x;
    const df_output *feeds = s->feeds, *fetches = s->fetches;
    const int *feed_item = s->feed_item;
    int n_feeds = s->n_feeds, n_fetches = s->n_fetches, devmem = s->devmem;
    for (int f = 0; f < n_feeds; f++) {
        if (feed_item[f] < 0) continue;
        df__xitem *it = &x->items[feed_item[f]];
        it->kind = DF__X_FEED; it->n_outputs = 1; it->aux = f;
        if (devmem && df__attr_b(feeds[f].node, "_device_memory", 0)) it->flags |= DF__XF_DEVICE_VALUE;
    }
    for (int i = 0; i < n_fetches; i++) {
        df__xitem *it = &x->items[s->fetch_base + i];
        it->kind = DF__X_FETCH; it->n_inputs = 1; it->aux = i;
        it->node = fetches[i].node; it->child_frame = fetches[i].index;
        if (devmem && !df__out_on_host(fetches[i].node, fetches[i].index, s->dev)) it->flags |= DF__XF_DEVICE_VALUE;
    }
}

/* Out-edges in CSR, so that activating a node's successors walks one array: the first pass
   counts per source, the second fills; data edges carry the local input slot. 0: out of memory. */
static int df__compile_edges(df__compile_state *s) {
    df__exec *x = s->x;
    const df_graph *g = s->g;
    const df_output *feeds = s->feeds, *fetches = s->fetches;
    const int *first_feed = s->first_feed, *next_feed = s->next_feed;
    const int *item_of = s->item_of, *feed_item = s->feed_item;
    int32_t *deg = s->deg;
    int nn = g->n_nodes, n_items = x->n_items, n_fetches = s->n_fetches, fetch_base = s->fetch_base;
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
            if (!x->edges) return 0;
            x->n_edges = n_edges;
            int at = 0;
            for (int i = 0; i < n_items; i++) { x->items[i].edge_start = at; x->items[i].n_edges = 0; at += deg[i]; }
        }
    }
#undef DF__SRC_ITEM
    return 1;
}

/* `need`: which outputs of an item something consumes, so that no other is kept. */
static void df__compile_need_masks(df__exec *x) {
    int n_items = x->n_items;
    /* Data edges before control edges within each source: TF's order, and what `need` uses. */
    for (int i = 0; i < n_items; i++) {
        df__xitem *it = &x->items[i];
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot >= 0) it->need |= ed->src_out >= 31 ? 0x80000000u : 1u << ed->src_out;
        }
        if (it->n_outputs > 31 && (it->need & 0x80000000u)) it->need = 0xffffffffu;
    }
}

/* The items with no inputs at all start every step. 0: out of memory. */
static int df__compile_roots(df__exec *x) {
    int n_items = x->n_items;
    x->roots = (int32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(int32_t));
    if (!x->roots) return 0;
    for (int i = 0; i < n_items; i++)
        if (x->items[i].n_inputs + x->items[i].n_control_in == 0) x->roots[x->n_roots++] = i;
    return 1;
}

DF_PRIVATE df__exec *df__compile(df_session *ss, df_graph *g, const df_output *feeds, int n_feeds, const df_output *fetches,
                             int n_fetches, df_node *const *targets, int n_targets, const df__device *dev, df_status *st) {
    df__compile_state s = {0};
    int nn = g->n_nodes;
    s.g = g;
    s.feeds = feeds; s.n_feeds = n_feeds;
    s.fetches = fetches; s.n_fetches = n_fetches;
    s.dev = dev;
    s.devmem = dev && !dev->host_memory;
    df__exec *x = s.x = (df__exec *)DF_MALLOC(sizeof *x);
    s.item_of = (int *)DF_MALLOC((size_t)(nn + 1) * sizeof(int));
    s.first_feed = (int *)DF_MALLOC((size_t)(nn + 1) * sizeof(int));
    s.next_feed = (int *)DF_MALLOC((size_t)(n_feeds + 1) * sizeof(int));
    s.feed_item = (int *)DF_MALLOC((size_t)(n_feeds + 1) * sizeof(int));
    s.stack = (int32_t *)DF_MALLOC((size_t)(nn + 1) * sizeof(int32_t));
    if (x) memset(x, 0, sizeof *x);           /* df__exec_free reads it */
    if (!x || !s.item_of || !s.first_feed || !s.next_feed || !s.feed_item || !s.stack) goto oom;
    x->graph = g;
    for (int i = 0; i < nn; i++) { s.item_of[i] = -1; s.first_feed[i] = -1; }
    s.next_feed[n_feeds] = -1;                /* (gcc -O3 cannot see the chains end before it) */
    for (int f = 0; f < n_feeds; f++) {
        s.next_feed[f] = s.first_feed[feeds[f].node->id]; s.first_feed[feeds[f].node->id] = f; s.feed_item[f] = -1;
    }
    /* 1. prune: walk back from fetches and targets, stopping at fed outputs; then the items */
    int n_items = df__compile_prune(&s, targets, n_targets);
    n_items = df__compile_number_feeds(&s, n_items);
    s.fetch_base = n_items;
    if (!df__compile_alloc_items(&s, n_items + n_fetches)) goto oom;
    if (df__compile_node_items(&s, st) != DF_OK) goto fail;
    df__compile_feed_fetch_items(&s);
    /* 2. out-edges and the outputs each item must keep */
    x->n_feeds = n_feeds;
    x->n_fetches = n_fetches;
    if (!df__compile_edges(&s)) goto oom;
    df__compile_need_masks(x);
    /* 3. frames, validation, layout */
    if (df__analyze_frames(x, st) != DF_OK) goto fail;
    /* 4. roots */
    if (!df__compile_roots(x)) goto oom;
    /* 5. what can run from a static schedule */
#ifndef DF_NO_THREADS
    df__schedule_build(x, ss && ss->pool ? ss->pool->n_threads + 1 : 1);
#else
    DF__UNUSED(ss);
    df__schedule_build(x, 1);
#endif
    DF_FREE(s.item_of); DF_FREE(s.first_feed); DF_FREE(s.next_feed); DF_FREE(s.feed_item); DF_FREE(s.stack); DF_FREE(s.deg);
    return x;
oom:
    df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory compiling the graph for a run");
fail:
    DF_FREE(s.item_of); DF_FREE(s.first_feed); DF_FREE(s.next_feed); DF_FREE(s.feed_item); DF_FREE(s.stack); DF_FREE(s.deg);
    df__exec_free(x);
    return NULL;
}
