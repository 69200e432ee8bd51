/* ==========================================================================================
   src/autodiff/gradients.c: df_gradients: the driver                             >>gradients
   Walks back from ys over the nodes between xs and ys in reverse topological order, one unit
   at a time (a node, or a whole while loop nested in the region), summing the gradients that
   reach each output (AddN) before calling the op's gradient function. A region is the top
   level or a loop's body: loops are differentiated by src/autodiff/loops.c.
   ========================================================================================== */

DF_PRIVATE int df__greg_add(df__greg *r, df_output at, df_output v) {
    if (!at.node || !v.node || at.node->id >= r->n0) return 1;
    if (r->obase[at.node->id] + at.index >= r->obase[at.node->id + 1]) return 1;   /* (an output added since: a row stack's pop) */
    df__gacc *a = &r->acc[r->obase[at.node->id] + at.index];
    if (!df__grow(&a->v, &a->cap, a->n + 1, sizeof(df_output))) {
        df__graph_error(r->g, DF_RESOURCE_EXHAUSTED, "Out of memory accumulating gradients");
        return 0;
    }
    a->v[a->n++] = v;
    return 1;
}
DF_PRIVATE df_output df__greg_sum(df__greg *r, df_output at) {
    df_output none = {NULL, 0};
    if (!at.node || at.node->id >= r->n0 || r->obase[at.node->id] + at.index >= r->obase[at.node->id + 1]) return none;
    df__gacc *a = &r->acc[r->obase[at.node->id] + at.index];
    if (a->n == 0) return none;
    if (a->n == 1) return a->v[0];
    df_output s = df_add_n(r->g, a->v, a->n);
    a->n = 1;
    a->v[0] = s;
    return s;
}
DF_PRIVATE int df__greg_between(const df__greg *r, const df_node *n) { return n->id < r->n0 && r->fwd[n->id] && r->bwd[n->id]; }

static int df__greg_unit(df__greg *r, df_node *n) {
    df__ctx *L = df__node_loop(n);
    if (L == r->R) return n->cf_part ? -1 : n->id;
    df__ctx *child = L;
    while (child && df__loop_of(child->outer) != r->R) child = df__loop_of(child->outer);
    if (!child) return -1;
    for (int i = 0; i < r->n_loops; i++) if (r->loops[i] == child) return r->n0 + i;
    if (!df__grow(&r->loops, &r->cap_loops, r->n_loops + 1, sizeof(df__ctx *))) return -2;
    r->loops[r->n_loops++] = child;
    return r->n0 + r->n_loops - 1;
}

static void df__greg_free(df__greg *r) {
    if (r->acc) for (int i = 0; i < r->obase[r->n0]; i++) DF_FREE(r->acc[i].v);
    DF_FREE(r->obase); DF_FREE(r->acc); DF_FREE(r->fwd); DF_FREE(r->bwd); DF_FREE(r->unit);
    DF_FREE(r->loops); DF_FREE(r->cstart); DF_FREE(r->cons);
}

/* Visits the pushes of the stack a pop reads (the edges second-order gradients follow). */
DF_PRIVATE df__gstack *df__node_gstack(df_graph *g, const df_node *n) {
    return n->gstack > 0 && n->gstack <= g->n_gstacks ? g->gstacks[n->gstack - 1] : NULL;
}
/* Pops (and accumulator reads) depend on the pushes (adds) of their stack: the edges that
   second-order gradients follow. */
static int df__is_pop(const df_node *n) {
    return n->gstack && (!strcmp(n->op->name, "LoopStackPop") || !strcmp(n->op->name, "LoopStackPopN") || !strcmp(n->op->name, "StackPopV2") ||
                         !strcmp(n->op->name, "SumAccumulatorRead"));
}
static int df__is_push(const df_node *n) {
    return n->gstack && (!strcmp(n->op->name, "LoopStackPush") || !strcmp(n->op->name, "LoopStackPushN") || !strcmp(n->op->name, "StackPushV2") ||
                         !strcmp(n->op->name, "SumAccumulatorAdd") || !strcmp(n->op->name, "SumAccumulatorMulAdd"));
}

/* The units feeding node d (of unit u) through data edges, and a pop through its stack's push:
   counts each between producer in another unit (delta +1), or releases it (delta -1), queueing
   a unit whose count reaches zero. */
static void df__greg_edges(const df__greg *r, const df_node *d, int u, int *pending, int delta, int *queue, int *qt) {
    for (int k = 0; k <= d->n_inputs; k++) {
        const df_node *s = NULL;
        if (k < d->n_inputs) s = d->inputs[k].node;
        else if (df__is_pop(d)) { df__gstack *gs = df__node_gstack(r->g, d); s = gs ? gs->push : NULL; }
        if (!s || s->id >= r->n0 || r->unit[s->id] < 0 || r->unit[s->id] == u || !df__greg_between(r, s)) continue;
        pending[r->unit[s->id]] += delta;
        if (delta < 0 && pending[r->unit[s->id]] == 0) queue[(*qt)++] = r->unit[s->id];
    }
}

DF_PRIVATE df_code df__grad_region(df_graph *g, df__ctx *R, int n_y, const df_output *ys, const df_output *gys,
                               int n_x, const df_output *xs, df_output *dxs) {
    df__greg r;
    memset(&r, 0, sizeof r);
    r.g = g; r.R = R; r.n0 = g->n_nodes;
    int n0 = r.n0;
    int *stack = NULL, *pending = NULL, *queue = NULL;
    r.obase = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
    r.fwd = (unsigned char *)DF_MALLOC((size_t)n0 + 1);
    r.bwd = (unsigned char *)DF_MALLOC((size_t)n0 + 1);
    r.unit = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
    r.cstart = (int *)DF_MALLOC((size_t)(n0 + 2) * sizeof(int));
    stack = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
    if (!r.obase || !r.fwd || !r.bwd || !r.unit || !r.cstart || !stack) goto oom;
    memset(r.fwd, 0, (size_t)n0 + 1);
    memset(r.bwd, 0, (size_t)n0 + 1);
    int total = 0, n_edges = 0;
    for (int i = 0; i < n0; i++) {
        r.obase[i] = total;
        total += g->nodes[i]->n_outputs;
        n_edges += g->nodes[i]->n_inputs;
        int u = df__greg_unit(&r, g->nodes[i]);
        if (u == -2) goto oom;
        r.unit[i] = u;
    }
    r.obase[n0] = total;
    r.acc = (df__gacc *)DF_MALLOC((size_t)(total + 1) * sizeof(df__gacc));
    r.cons = (int *)DF_MALLOC((size_t)(n_edges + 1) * sizeof(int));
    if (r.acc) memset(r.acc, 0, (size_t)(total + 1) * sizeof(df__gacc));   /* df__greg_free reads it */
    if (!r.acc || !r.cons) goto oom;
    memset(r.cstart, 0, (size_t)(n0 + 2) * sizeof(int));
    for (int i = 0; i < n0; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++) r.cstart[g->nodes[i]->inputs[k].node->id + 1]++;
    for (int i = 0; i < n0; i++) r.cstart[i + 1] += r.cstart[i];
    {
        int *fill = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
        if (!fill) goto oom;
        memcpy(fill, r.cstart, (size_t)(n0 + 1) * sizeof(int));
        for (int i = 0; i < n0; i++)
            for (int k = 0; k < g->nodes[i]->n_inputs; k++) r.cons[fill[g->nodes[i]->inputs[k].node->id]++] = i;
        DF_FREE(fill);
    }
    /* backward from ys, forward from xs; a pop leads back to its stack's push */
    int sp = 0;
    for (int i = 0; i < n_y; i++)
        if (ys[i].node->id < n0 && !r.bwd[ys[i].node->id]) { r.bwd[ys[i].node->id] = 1; stack[sp++] = ys[i].node->id; }
    while (sp) {
        df_node *n = g->nodes[stack[--sp]];
        if (r.unit[n->id] < 0) continue;       /* loop machinery: nothing behind it in this region */
        for (int k = 0; k < n->n_inputs; k++) {
            df_node *s = n->inputs[k].node;
            if (s->id < n0 && !r.bwd[s->id]) { r.bwd[s->id] = 1; if (r.unit[s->id] >= 0) stack[sp++] = s->id; }
        }
        df__gstack *gs = df__is_pop(n) ? df__node_gstack(g, n) : NULL;
        if (gs && gs->push && gs->push->id < n0 && !r.bwd[gs->push->id] && r.unit[gs->push->id] >= 0) {
            r.bwd[gs->push->id] = 1; stack[sp++] = gs->push->id;
        }
    }
    for (int i = 0; i < n_x; i++)
        if (xs[i].node->id < n0 && !r.fwd[xs[i].node->id]) { r.fwd[xs[i].node->id] = 1; stack[sp++] = xs[i].node->id; }
    while (sp) {
        df_node *n = g->nodes[stack[--sp]];
        for (int e = r.cstart[n->id]; e < r.cstart[n->id + 1]; e++) {
            int d = r.cons[e];
            if (!r.fwd[d] && r.unit[d] >= 0) { r.fwd[d] = 1; stack[sp++] = d; }
        }
        df__gstack *gs = df__is_push(n) ? df__node_gstack(g, n) : NULL;
        for (int k = 0; gs && k < gs->n_pops; k++) {
            int d = gs->pops[k]->id;
            if (d < n0 && !r.fwd[d] && r.unit[d] >= 0) { r.fwd[d] = 1; stack[sp++] = d; }
        }
    }
    /* pending counts per unit: edges from between nodes to between consumers in other units */
    int n_units = n0 + r.n_loops;
    pending = (int *)DF_MALLOC((size_t)(n_units + 1) * sizeof(int));
    queue = (int *)DF_MALLOC((size_t)(n_units + 1) * sizeof(int));
    unsigned char *ubetween = (unsigned char *)DF_MALLOC((size_t)n_units + 1), *done = NULL;
    if (!pending || !queue || !ubetween) { DF_FREE(ubetween); goto oom; }
    memset(pending, 0, (size_t)(n_units + 1) * sizeof(int));
    memset(ubetween, 0, (size_t)n_units + 1);
    for (int i = 0; i < n0; i++) {
        df_node *d = g->nodes[i];
        if (r.unit[i] < 0 || !df__greg_between(&r, d)) continue;
        ubetween[r.unit[i]] = 1;
        df__greg_edges(&r, d, r.unit[i], pending, 1, NULL, NULL);
    }
    /* seeds */
    for (int i = 0; i < n_y; i++) if (!df__greg_add(&r, ys[i], gys[i])) { DF_FREE(ubetween); goto fail; }
    int qh = 0, qt = 0;
    done = (unsigned char *)DF_MALLOC((size_t)n_units + 1);
    if (!done) { DF_FREE(ubetween); goto oom; }
    memset(done, 0, (size_t)n_units + 1);
    for (int u = 0; u < n_units; u++) if (ubetween[u] && pending[u] == 0) queue[qt++] = u;
    while (qh < qt && df__ok(g)) {
        int u = queue[qh++];
        if (done[u]) continue;
        done[u] = 1;
        if (u < n0) {
            df_node *n = g->nodes[u];
            df_output dy_small[4], dx_small[8];
            df_output *dy = n->n_outputs <= 4 ? dy_small : (df_output *)DF_MALLOC((size_t)n->n_outputs * sizeof(df_output));
            df_output *dx = n->n_inputs <= 8 ? dx_small : (df_output *)DF_MALLOC((size_t)n->n_inputs * sizeof(df_output));
            if (!dy || !dx) { if (dy != dy_small) DF_FREE(dy); if (dx != dx_small) DF_FREE(dx); DF_FREE(ubetween); DF_FREE(done); goto oom; }
            int any = 0;
            for (int i = 0; i < n->n_outputs; i++) { dy[i] = df__greg_sum(&r, df__out(n, i)); if (dy[i].node) any = 1; }
            for (int i = 0; i < n->n_inputs; i++) dx[i].node = NULL, dx[i].index = 0;
            if (any && !(n->op->flags & DF__OP_NO_GRADIENT)) {
                df__grad_fn fn = df__grad_fn_for(n->op);
                int needed = 0;
                for (int i = 0; i < n->n_inputs; i++)
                    if (df__greg_between(&r, n->inputs[i].node) && (df__is_float(df_output_dtype(n->inputs[i])) ||
                        df_output_dtype(n->inputs[i]) == DF_VARIANT ||      /* lists carry gradients */
                        (fn && df_output_dtype(n->inputs[i]) == DF_RESOURCE))) needed = 1;  /* and variable handles (ReadVariableOp) */
                if (!fn && needed) {
                    df__graph_error(g, DF_UNIMPLEMENTED, "No gradient defined for operation '%s' (op type: %s) "
                                    "{{node %s}}", n->name, n->op->name, n->name);
                } else if (fn && needed) {
                    df__gfn c;
                    c.g = g; c.n = n; c.dy = dy; c.dx = dx;
                    df_graph_push_name_scope(g, "gradients");
                    fn(&c);
                    df_graph_pop_name_scope(g);
                    for (int i = 0; i < n->n_inputs && df__ok(g); i++)
                        if (dx[i].node && df__greg_between(&r, n->inputs[i].node)) df__greg_add(&r, n->inputs[i], dx[i]);
                }
            }
            if (dy != dy_small) DF_FREE(dy);
            if (dx != dx_small) DF_FREE(dx);
            df__greg_edges(&r, n, u, pending, -1, queue, &qt);
        } else {
            if (df__grad_loop(&r, r.loops[u - n0])) break;
            for (int i = 0; i < n0; i++)          /* release the units feeding this loop */
                if (r.unit[i] == u && df__greg_between(&r, g->nodes[i]))
                    df__greg_edges(&r, g->nodes[i], u, pending, -1, queue, &qt);
        }
    }
    DF_FREE(ubetween);
    DF_FREE(done);
    for (int i = 0; i < n_x && df__ok(g); i++) dxs[i] = df__greg_sum(&r, xs[i]);
    goto out;
oom:
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory computing gradients");
fail:
out:
    DF_FREE(stack); DF_FREE(pending); DF_FREE(queue);
    df__greg_free(&r);
    if (!df__ok(g)) for (int i = 0; i < n_x; i++) dxs[i].node = NULL, dxs[i].index = 0;
    return g->status.code;
}
