/* ==========================================================================================
   src/placer.c: The placer                                                          >>placer
   Runs once per run signature, after the whole pruned graph compiled and validated as one
   executor (its items and static frames are what the placer and the partitioner read). The
   plan's structs (df__plan, df__part) open this file: the partitioner fills them.
   Placer: union-find colocation groups (`_class` "loc:@name" entries, ref and resource
   edges), merged device requests, kernels per device type, soft placement; generators go to
   their consumers' device, Shape/Size/Rank to their input's; everything else to the first
   device (or, in the cost-model mode, where a simulation says it would finish first).
   Switch and Exit then follow their data input, Enter and NextIteration their first consumer.
   ========================================================================================== */

DF_PRIVATE void df__plan_free(df__plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_parts; i++) {
        df__exec_free(p->parts[i].x);
        if (p->owns_graphs) df_graph_free(p->parts[i].g);
        DF_FREE(p->parts[i].feed_map);
        DF_FREE(p->parts[i].fetch_map);
        for (int k = 0; p->parts[i].io_names && k < p->parts[i].n_feeds + p->parts[i].n_fetches; k++) DF_FREE(p->parts[i].io_names[k]);
        DF_FREE(p->parts[i].io_names);
    }
    DF_FREE(p->parts);
    df_graph_free(p->work);
    DF_FREE(p);
}

/* ---- placer ---- */
static int df__uf_find(int32_t *parent, int i) {
    while (parent[i] != i) { parent[i] = parent[parent[i]]; i = parent[i]; }
    return i;
}
static void df__uf_union(int32_t *parent, int32_t *rank, int a, int b) {
    a = df__uf_find(parent, a); b = df__uf_find(parent, b);
    if (a == b) return;
    if (rank[a] < rank[b]) { int t = a; a = b; b = t; }
    parent[b] = a;
    if (rank[a] == rank[b]) rank[a]++;
}
/* Item -> output frame: Enter opens its child frame, Exit (and LoopCount) return to the parent. */
DF_PRIVATE int df__item_out_frame(const df__exec *x, int i) {
    const df__xitem *it = &x->items[i];
    if (it->kind == DF__X_ENTER) return it->child_frame;
    if (it->kind == DF__X_EXIT || it->kind == DF__X_COUNT) return x->frames[it->frame].parent;
    return it->frame;
}
static int df__is_metadata_op(const df__opdef *op) {
    return !strcmp(op->name, "Shape") || !strcmp(op->name, "Size") || !strcmp(op->name, "Rank");
}

/* Where colocation groups of `_class` are written: "loc:@a" entries separated by commas or
   spaces (a GraphDef's list(string) arrives joined). Calls fn for each name. */
static int df__class_names(const df_node *n, int (*fn)(void *, const char *, size_t), void *user) {
    const char *c = df__attr_s(n, "_class");
    while (*c) {
        while (*c == ',' || *c == ' ') c++;
        size_t len = 0;
        while (c[len] && c[len] != ',' && c[len] != ' ') len++;
        if (len > 5 && !strncmp(c, "loc:@", 5) && !fn(user, c + 5, len - 5)) return 0;
        c += len;
    }
    return 1;
}
typedef struct df__place_ctx {
    const df__exec *x;
    const df_graph *g;
    const int32_t *item_of_node;
    int32_t *parent, *rank;
    df__devspec *spec;           /* per item: its request, then per group root: the merged one */
    int self;
} df__place_ctx;
static int df__place_colocate(void *user, const char *name, size_t len) {
    df__place_ctx *c = (df__place_ctx *)user;
    char buf[256];
    if (len >= sizeof buf) return 1;
    memcpy(buf, name, len);
    buf[len] = 0;
    const df_node *other = df_graph_find(c->g, buf);
    if (!other) return 1;                      /* TF ignores names it cannot find here too */
    int j = c->item_of_node[other->id];
    if (j >= 0) df__uf_union(c->parent, c->rank, c->self, j);
    else {                                     /* not in this run: its request still binds */
        df__devspec ds;
        if (other->device && df__parse_device(other->device, &ds)) df__devspec_merge(&c->spec[c->self], &ds);
    }
    return 1;
}

/* An item that runs a node of the caller's graph (not a feed or fetch). */
DF_PRIVATE int df__node_item(const df__exec *x, int i) {
    return x->items[i].node && x->items[i].kind != DF__X_FETCH && x->items[i].kind != DF__X_FEED;
}
static int df__spec_constrained(const df__devspec *s) {
    return s->type[0] || s->index >= 0 || s->job[0] || s->task >= 0 || s->replica >= 0;
}
/* The cost model's time to move a value of this shape to another device: ~2 us, ~8 GB/s. */
static double df__transfer_ns(const df__shape *sh, df_dtype t) {
    int64_t cnt = df__shape_count(sh);
    return 2000.0 + (double)(cnt < 0 ? 4096 : cnt) * (double)df_dtype_size(t) / 8.0;
}
/* A rough cost in nanoseconds of running item i (the cost-model placement). */
static double df__item_cost_ns(const df__exec *x, int i) {
    const df_node *n = x->items[i].node;
    double elems = 1;
    for (int k = 0; k < n->n_outputs; k++) {
        int64_t c = df__shape_count(&n->out_shapes[k]);
        elems += c < 0 ? 1000 : (double)c;
    }
    if (!strcmp(n->op->name, "MatMul") && n->n_inputs == 2) {
        const df__shape *a = &n->inputs[0].node->out_shapes[n->inputs[0].index];
        if (a->rank == 2 && a->dims[1] > 0) elems *= (double)a->dims[1];
    }
    return 100.0 + (double)n->op->cost * elems / 3.0;
}

/* What df__place's phases share. Per-group arrays are indexed by the group's root item. */
typedef struct df__placer {
    df_session *ss;
    const df__exec *x;
    int32_t *dev;                /* the result, per item */
    int32_t *item_of_node;       /* per node of x's graph: its item, -1 when not in this run */
    int32_t *parent, *rank;      /* union-find of the colocation groups */
    df__devspec *spec;           /* per item: its request, then per group root: the merged one */
    uint32_t *kinds;             /* per root: device kinds all members can run on */
    int32_t *group_dev;          /* per root: its device */
    int32_t *gsize;              /* per root: members */
    unsigned char *decided;      /* per root: device fixed */
    double *finish, *dev_free;   /* cost model only: per item its finish, per device when it is free */
    df_status *st;
} df__placer;

/* Every item's own device request parsed before any grouping, so a malformed one is reported
   against the node that wrote it. */
static df_code df__place_read_requests(df__placer *pl) {
    const df__exec *x = pl->x;
    const df_graph *g = x->graph;
    int n = x->n_items;
    for (int i = 0; i < g->n_nodes; i++) pl->item_of_node[i] = -1;
    for (int i = 0; i < n; i++) {
        pl->parent[i] = i; pl->rank[i] = 0; pl->group_dev[i] = -1; pl->dev[i] = -1;
        const df_node *nd_ = x->items[i].node;
        df__parse_device(NULL, &pl->spec[i]);
        if (!df__node_item(x, i)) continue;
        pl->item_of_node[nd_->id] = i;
        if (nd_->device && *nd_->device && !df__parse_device(nd_->device, &pl->spec[i]))
            return df_status_set(pl->st, DF_INVALID_ARGUMENT, "Malformed device specification '%s' {{node %s}}", nd_->device, nd_->name);
    }
    return DF_OK;
}

/* Whether input k of a is a value a stack keeps rather than a resource it uses: the element of
   a stack push. A nested loop's gradient pushes a resource made inside the outer loop (a
   TensorArray's handle) onto a stack of its own device; the handle then travels like any
   value (arrays are per-run state, found from any local device), where colocating it would
   tie the stack's group to the array's and refuse two devices' requests. */
static int df__place_pushed_value(const df_node *a, int k) {
    return k == 1 && (!strcmp(a->op->name, "LoopStackPush") || !strcmp(a->op->name, "StackPushV2"));
}

/* Colocation groups: _class entries, then ref and resource edges (TF keeps a reference or a
   resource on the device of what it refers to), save the element a stack push keeps. Along such an edge the group of what is referred
   to wins: a consumer's request that conflicts with the group's (the variable's, or an earlier
   consumer's: a variable read through RefEnters in loops placed on different devices) yields
   to it, as TF's ColocateResourceOrRefEdge. */
static df_code df__place_colocation_groups(df__placer *pl) {
    const df__exec *x = pl->x;
    int n = x->n_items;
    int32_t *item_of_node = pl->item_of_node, *parent = pl->parent, *rank = pl->rank;
    df__devspec *spec = pl->spec;
    df__place_ctx pc = {x, x->graph, item_of_node, parent, rank, spec, 0};
    for (int i = 0; i < n; i++) {
        if (!df__node_item(x, i)) continue;
        pc.self = i;
        df__class_names(x->items[i].node, df__place_colocate, &pc);
    }
    df__devspec *gspec = (df__devspec *)DF_MALLOC((size_t)(n + 1) * sizeof(df__devspec));   /* per root */
    if (!gspec) return df_status_set(pl->st, DF_RESOURCE_EXHAUSTED, "Out of memory placing the graph");
    for (int i = 0; i < n; i++) gspec[i] = spec[i];
    for (int i = 0; i < n; i++) {       /* (a conflict inside a _class group is reported later) */
        int r = df__uf_find(parent, i);
        df__devspec merged = gspec[r];
        if (r != i && df__devspec_merge(&merged, &spec[i])) gspec[r] = merged;
    }
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        for (int k = 0; k < a->n_inputs; k++) {
            df_output in = a->inputs[k];
            int j = item_of_node[in.node->id];
            if (j < 0) continue;                       /* fed */
            if (!df__ref_arg(a->op, k) && (in.node->out_types[in.index] != DF_RESOURCE || df__place_pushed_value(a, k))) continue;
            int ra = df__uf_find(parent, j), rb = df__uf_find(parent, i);
            if (ra == rb) continue;
            df__devspec merged = gspec[ra];
            if (!df__devspec_merge(&merged, &gspec[rb])) { merged = gspec[ra]; spec[i] = gspec[ra]; }
            df__uf_union(parent, rank, i, j);
            gspec[df__uf_find(parent, i)] = merged;
        }
    }
    DF_FREE(gspec);
    return DF_OK;
}

/* One request and one set of kernel kinds per group, so a group is placed as a whole; requests
   that cannot be merged are an error unless soft placement lets the first one stand. */
static df_code df__place_merge_group_requests(df__placer *pl) {
    const df__exec *x = pl->x;
    int n = x->n_items;
    df__devspec *spec = pl->spec;
    uint32_t *kinds = pl->kinds;
    for (int i = 0; i < n; i++) kinds[i] = ~0u;
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        int r = df__uf_find(pl->parent, i);
        uint32_t k = 0;
        for (int t = 0; t < DF__DEV_TYPES; t++) if (df__node_kernel(a, t, NULL, NULL, NULL)) k |= 1u << t;
        kinds[r] &= k;
        if (r == i) continue;
        df__devspec merged = spec[r];
        if (!df__devspec_merge(&merged, &spec[i])) {
            if (pl->ss->opts.soft_placement) continue;           /* the group keeps its first request */
            char s1[96], s2[96];
            df__devspec_str(&spec[r], s1, sizeof s1);
            df__devspec_str(&spec[i], s2, sizeof s2);
            return df_status_set(pl->st, DF_INVALID_ARGUMENT, "Cannot colocate nodes '%s' and '%s': their device "
                                 "requests '%s' and '%s' are incompatible {{node %s}}", a->name,
                                 x->items[r].node->name, s2, s1, a->name);
        }
        spec[r] = merged;
    }
    return DF_OK;
}

/* The error for group r (node a) when no device matches its request: it says whether the
   device is missing or only lacks a kernel, and what this session has. */
static df_code df__place_unsatisfiable(const df__placer *pl, const df_node *a, int r) {
    df_session *ss = pl->ss;
    int nd = ss->n_devices;
    char req[96];
    df__devspec_str(&pl->spec[r], req, sizeof req);
    int exists = 0, ngpu = 0;
    for (int d = 0; d < nd; d++) if (df__devspec_matches(&pl->spec[r], ss->devices[d])) exists = 1;
    for (int d = 0; d < nd; d++) ngpu += ss->devices[d]->kernel_type == DF__DEV_GPU;
    return df_status_set(pl->st, DF_INVALID_ARGUMENT, "Cannot assign a device for operation %s: could not "
        "satisfy explicit device specification '%s' because %s (this session has %d CPU device%s and "
        "%d GPU device%s; set soft_placement to fall back) {{node %s}}", a->name, req, exists ?
        "no kernel for that device type supports the op (or an op colocated with it)" :
        "no such device exists here", nd - ngpu, nd - ngpu == 1 ? "" : "s", ngpu, ngpu == 1 ? "" : "s", a->name);
}

/* A device per group: the first (GPUs before CPUs, then by number) that matches the request
   and runs every member's kernel; with soft placement, the nearest that runs them all. */
static df_code df__place_choose_group_devices(df__placer *pl) {
    df_session *ss = pl->ss;
    const df__exec *x = pl->x;
    int n = x->n_items, nd = ss->n_devices;
    const uint32_t *kinds = pl->kinds;
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        int r = df__uf_find(pl->parent, i);
        if (pl->group_dev[r] >= 0) continue;
        if (!kinds[r])
            return df_status_set(pl->st, DF_INVALID_ARGUMENT, "Cannot place '%s' and the nodes colocated with it: no "
                                 "device type has a kernel for all of their ops {{node %s}}", a->name, a->name);
        int best = -1, any = -1;
        for (int pass = 0; pass < 2 && best < 0; pass++)
            for (int d = 0; d < nd && best < 0; d++) {
                const df__device *dv = ss->devices[d];
                if ((pass == 0) != (dv->kernel_type == DF__DEV_GPU)) continue;
                if (!(kinds[r] >> dv->kernel_type & 1)) continue;
                if (any < 0) any = d;
                if (df__devspec_matches(&pl->spec[r], dv)) best = d;
            }
        if (best < 0) {
            if (!ss->opts.soft_placement || any < 0) return df__place_unsatisfiable(pl, a, r);
            /* soft placement: the same type with any number, else any device that can run it */
            df__devspec loose = pl->spec[r];
            loose.index = -1;
            for (int d = 0; d < nd && best < 0; d++)
                if ((kinds[r] >> ss->devices[d]->kernel_type & 1) && df__devspec_matches(&loose, ss->devices[d])) best = d;
            loose.type[0] = '\0';                /* then another type of the same job and task (a worker's CPU for its GPU) */
            for (int d = 0; d < nd && best < 0; d++)
                if ((kinds[r] >> ss->devices[d]->kernel_type & 1) && df__devspec_matches(&loose, ss->devices[d])) best = d;
            if (best < 0) best = any;
        }
        pl->group_dev[r] = best;
        pl->decided[r] = (unsigned char)df__spec_constrained(&pl->spec[r]);
    }
    return DF_OK;
}

/* The cost model's choice for item i (group r): the device where it would finish first,
   counting its inputs' transfers and, off the group's device, its results' way back. -1 when
   no device has its kernel. */
static int df__place_fastest_device(const df__placer *pl, int i, int r) {
    df_session *ss = pl->ss;
    const df__exec *x = pl->x;
    const df_node *a = x->items[i].node;
    const int32_t *item_of_node = pl->item_of_node, *dev = pl->dev;
    double best_t = 0;
    int best_d = -1;
    for (int c = 0; c < ss->n_devices; c++) {
        if (!df__node_has_kernel(a, ss->devices[c])) continue;
        double start = pl->dev_free[c];
        for (int k = 0; k < a->n_inputs; k++) {
            int src = item_of_node[a->inputs[k].node->id];
            int from = src >= 0 ? dev[src] : 0;          /* feeds arrive on the first device */
            if (from < 0) continue;
            double ready = src >= 0 ? pl->finish[src] : 0;
            if (from != c)
                ready += df__transfer_ns(&a->inputs[k].node->out_shapes[a->inputs[k].index], df_output_dtype(a->inputs[k]));
            if (ready > start) start = ready;
        }
        double t = start + df__item_cost_ns(x, i);
        if (c != pl->group_dev[r])                        /* and its results go back, likely */
            for (int k = 0; k < a->n_outputs; k++) t += df__transfer_ns(&a->out_shapes[k], a->out_types[k]);
        if (best_d < 0 || t < best_t) { best_t = t; best_d = c; }
    }
    return best_d;
}

/* Unconstrained groups refined, in topological order: metadata follows its input and (cost
   model) others go where they would finish first; a group follows its first member. */
static void df__place_refine_unconstrained(df__placer *pl) {
    df_session *ss = pl->ss;
    const df__exec *x = pl->x;
    int n = x->n_items;
    int32_t *dev = pl->dev, *group_dev = pl->group_dev;
    const int32_t *item_of_node = pl->item_of_node;
    double *finish = pl->finish, *dev_free = pl->dev_free;
    for (int i = 0; i < n; i++) {               /* (items are in topological order) */
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        int r = df__uf_find(pl->parent, i);
        int d = group_dev[r];
        if (!pl->decided[r]) {
            if (pl->gsize[r] == 1 && df__is_metadata_op(a->op) && a->n_inputs) {
                int src = item_of_node[a->inputs[0].node->id];
                if (src >= 0 && dev[src] >= 0 && df__node_has_kernel(a, ss->devices[dev[src]])) d = dev[src];
            } else if (finish) {
                int best_d = df__place_fastest_device(pl, i, r);
                if (best_d >= 0) d = best_d;
            }
            group_dev[r] = d;
            pl->decided[r] = 1;                            /* later members follow */
        }
        dev[i] = d;
        if (finish) {
            double start = dev_free[d];
            for (int k = 0; k < a->n_inputs; k++) {
                int src = item_of_node[a->inputs[k].node->id];
                if (src >= 0 && dev[src] >= 0 && finish[src] > start) start = finish[src];
            }
            finish[i] = start + df__item_cost_ns(x, i);
            dev_free[d] = finish[i];
        }
    }
}

/* Generators alone in their group join their consumers when those all share one device, so
   a constant does not cross to the device that reads it. */
static void df__place_generators_with_consumers(df__placer *pl) {
    df_session *ss = pl->ss;
    const df__exec *x = pl->x;
    int32_t *dev = pl->dev;
    for (int i = x->n_items - 1; i >= 0; i--) {
        const df_node *a = x->items[i].node;
        const df__xitem *it = &x->items[i];
        if (!df__node_item(x, i) || a->n_inputs || a->n_outputs != 1 || a->out_is_ref[0]) continue;
        int r = df__uf_find(pl->parent, i);
        if (pl->gsize[r] != 1 || df__spec_constrained(&pl->spec[r])) continue;
        int d = -1, same = 1;
        for (int e = 0; e < it->n_edges && same; e++) {       /* (control consumers count too) */
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (x->items[ed->dst].kind == DF__X_FETCH) continue;
            int c = dev[ed->dst];
            if (c < 0) continue;
            if (d < 0) d = c; else if (d != c) same = 0;
        }
        if (same && d >= 0 && df__node_has_kernel(a, ss->devices[d])) dev[i] = d;
    }
}

/* Control flow: Switch and Exit with their data input (forward), non-ref Enter and any
   NextIteration with their first data consumer (backward); resource values stay put.
   (A NextIteration of a reference goes with its Merge all the same: the partitioner has no
   way to carry a back edge from another device, while a reference crosses as a value.)
   RefEnter, RefSwitch and the other Ref ops stay in their variable's colocation group: a
   reference never crosses a Send/Recv. */
static void df__place_control_flow(df__placer *pl) {
    df_session *ss = pl->ss;
    const df__exec *x = pl->x;
    int n = x->n_items;
    int32_t *dev = pl->dev;
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        const df__xitem *it = &x->items[i];
        if (!a || it->kind == DF__X_FETCH || it->kind == DF__X_FEED || !a->n_inputs) continue;
        if (!((it->flags & DF__XF_SWITCH) || it->kind == DF__X_EXIT || it->kind == DF__X_COUNT)) continue;
        if (df_output_dtype(a->inputs[0]) == DF_RESOURCE || a->inputs[0].node->out_is_ref[a->inputs[0].index] ||
            (a->n_outputs && a->out_is_ref[0])) continue;
        int src = pl->item_of_node[a->inputs[0].node->id];
        if (src >= 0 && dev[src] >= 0 && df__node_has_kernel(a, ss->devices[dev[src]])) dev[i] = dev[src];
    }
    for (int i = n - 1; i >= 0; i--) {
        const df_node *a = x->items[i].node;
        const df__xitem *it = &x->items[i];
        if (!a || !(it->kind == DF__X_ENTER || it->kind == DF__X_NEXT) || !a->n_inputs) continue;
        if (df_output_dtype(a->inputs[0]) == DF_RESOURCE || (a->n_outputs && a->out_is_ref[0]) ||
            (it->kind == DF__X_ENTER && a->inputs[0].node->out_is_ref[a->inputs[0].index])) continue;
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot < 0 || x->items[ed->dst].kind == DF__X_FETCH || dev[ed->dst] < 0) continue;
            if (df__node_has_kernel(a, ss->devices[dev[ed->dst]])) dev[i] = dev[ed->dst];
            break;
        }
    }
}

/* Places every node item of x on one of the session's devices: dev[i] (-1 for feed and fetch
   items). Returns st->code. */
DF_PRIVATE df_code df__place(df_session *ss, const df__exec *x, int32_t *dev, df_status *st) {
    int n = x->n_items, nd = ss->n_devices;
    df__placer pl;
    memset(&pl, 0, sizeof pl);
    pl.ss = ss; pl.x = x; pl.dev = dev; pl.st = st;
    pl.item_of_node = (int32_t *)DF_MALLOC((size_t)(x->graph->n_nodes + 1) * sizeof(int32_t));
    pl.parent = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    pl.rank = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    pl.spec = (df__devspec *)DF_MALLOC((size_t)(n + 1) * sizeof(df__devspec));
    pl.kinds = (uint32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(uint32_t));
    pl.group_dev = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    pl.gsize = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    pl.decided = (unsigned char *)DF_MALLOC((size_t)(n + 1));
    df_code code = DF_OK;
    if (!pl.item_of_node || !pl.parent || !pl.rank || !pl.spec || !pl.kinds || !pl.group_dev || !pl.gsize || !pl.decided) goto oom;
    if ((code = df__place_read_requests(&pl)) != DF_OK) goto done;
    /* 1. colocation groups */
    if ((code = df__place_colocation_groups(&pl)) != DF_OK) goto done;
    /* 2. merged requests and kernel kinds per group */
    if ((code = df__place_merge_group_requests(&pl)) != DF_OK) goto done;
    /* 3. a device per group */
    if ((code = df__place_choose_group_devices(&pl)) != DF_OK) goto done;
    /* 4. unconstrained nodes refined, then generators moved to their consumers */
    for (int i = 0; i < n; i++) pl.gsize[i] = 0;
    for (int i = 0; i < n; i++) if (df__node_item(x, i)) pl.gsize[df__uf_find(pl.parent, i)]++;
    if (ss->opts.placement == DF_PLACEMENT_COST_MODEL) {
        pl.finish = (double *)DF_MALLOC((size_t)(n + 1) * sizeof(double));
        pl.dev_free = (double *)DF_MALLOC((size_t)(nd + 1) * sizeof(double));
        if (!pl.finish || !pl.dev_free) goto oom;
        for (int d = 0; d < nd; d++) pl.dev_free[d] = 0;
    }
    df__place_refine_unconstrained(&pl);
    df__place_generators_with_consumers(&pl);
    /* 5. control flow nodes beside the values they pass on */
    df__place_control_flow(&pl);
    goto done;
oom:
    code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory placing the graph");
done:
    DF_FREE(pl.item_of_node); DF_FREE(pl.parent); DF_FREE(pl.rank); DF_FREE(pl.spec); DF_FREE(pl.kinds); DF_FREE(pl.group_dev);
    DF_FREE(pl.gsize); DF_FREE(pl.decided);
    DF_FREE(pl.finish); DF_FREE(pl.dev_free);
    return code;
}
