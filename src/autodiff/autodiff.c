/* ==========================================================================================
   src/autodiff/autodiff.c: Automatic differentiation                              >>autodiff
   df_gradients walks back from ys over the nodes that lie between xs and ys (reachable from an
   x and reaching a y), in reverse topological order, summing the gradients that reach each
   output (AddN) and calling each op's gradient function. A cond is differentiated op by op
   (Merge <-> Switch duality, with zeros gated so exactly one side is live). A while loop is one
   unit: its gradient is another while loop, built with df_while_loop, that runs N times and
   differentiates the loop body once per iteration. N is the forward loop's LoopCount, which
   the executor gives once every node of every iteration has run. Forward values go on stacks
   indexed by iteration (LoopStackPush keeps iteration i's value at i; no order among pushes is
   needed), and the gradient loop, whose predicate is LoopIterationLess(N) (no counting loop
   variable), pops in its iteration k the value of iteration N-1-k. The values of the loop's body
   itself (not of a cond in it) share one stack of rows: one LoopStackPushN per iteration keeps
   them all, one LoopStackPopN gives them back. Gradients of loop invariants
   are summed by a SumAccumulator, one add per iteration (SumAccumulatorMulAdd where the part
   is a Mul nothing else reads: its product goes into the sum in one kernel), summed in iteration order whatever the
   arrival order, read once the gradient loop's own LoopCount fires (by accumulator loop
   variables when checkpointing, whose sequential stacks still use a forward counter). A loop
   nested in another gets its stacks made in the outer loop's body, one per outer iteration,
   and their handles reach its gradient loop through the outer loop's stacks. The gradient loop
   is an ordinary loop whose pops are its per-iteration inputs, so differentiating it again
   (second order) works the same way: the gradients of its pops are pushed on a stack that the
   next gradient of the forward loop pops where the values were pushed.
   ========================================================================================== */

DF_PRIVATE int df__is_float(df_dtype t) { return t == DF_FLOAT || t == DF_DOUBLE || t == DF_HALF || t == DF_BFLOAT16; }
DF_PRIVATE df__ctx *df__loop_of(df__ctx *c) { while (c && c->kind != DF__CTX_WHILE) c = c->outer; return c; }
/* The loop a node belongs to: an Exit belongs to the loop it leaves. */
DF_PRIVATE df__ctx *df__node_loop(const df_node *n) {
    if ((n->op->flags & DF__OP_EXIT) && n->n_inputs) return df__loop_of(n->inputs[0].node->ctx);
    return df__loop_of(n->ctx);
}
DF_PRIVATE int df__ok(df_graph *g) { return g->status.code == DF_OK; }

/* Starts an op in context ctx with the given inputs and control inputs; finish with df__finish_in. */
DF_PRIVATE df_op_builder *df__begin(df_graph *g, df__ctx *ctx, const char *op, const df_output *ins, int n_ins,
                                df_node *const *ctl, int n_ctl, int raw) {
    df__ctx *saved = g->ctx;
    g->ctx = ctx;
    df_op_builder *b = df_op_new(g, op, NULL);
    if (b) {
        b->raw = raw;
        for (int i = 0; i < n_ins; i++) df_op_add_input(b, ins[i]);
        for (int i = 0; i < n_ctl; i++) df_op_add_control_input(b, ctl[i]);
    }
    g->ctx = saved;
    return b;
}
DF_PRIVATE df_node *df__finish_in(df_graph *g, df__ctx *ctx, df_op_builder *b) {
    df__ctx *saved = g->ctx;
    g->ctx = ctx;
    df_node *n = df_op_finish(b);
    g->ctx = saved;
    return n;
}
DF_PRIVATE int df__add_control_edge(df_graph *g, df_node *n, df_node *c) {
    if (!n || !c) return 0;
    if (!df__node_add_control(n, c)) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return 0; }
    __atomic_add_fetch(&g->edit_version, 1, __ATOMIC_RELAXED);
    return 1;
}

/* The LoopCount of loop W (made once): the number of iterations W ran, given once every node
   of every iteration has run, so every push of W has happened when something reads it. */
DF_PRIVATE int df__loop_count(df_graph *g, df__ctx *W) {
    if (W->lcount) return 1;
    if (!df__ok(g)) return 0;
    df_output lc = {W->loop_cond, 0};
    df_node *n = df__raw_op(g, W->outer, "LoopCount", &lc, 1, 0);
    if (!n) return 0;
    n->cf_part = 1;
    W->lcount = n;
    return 1;
}

/* The forward counter of loop W, for checkpointed loop gradients, whose stacks are sequential:
   counts iterations (made once). Its Add runs once per iteration before that iteration's
   pushes; its NextIteration waits for them, so pushes happen in iteration order whatever
   parallel_iterations allows. */
DF_PRIVATE int df__loop_counter(df_graph *g, df__ctx *W) {
    if (W->fc_exit) return 1;
    if (!df__ok(g)) return 0;
    df__ctx *saved = g->ctx, *outer_loop = df__loop_of(W->outer);
    if (outer_loop && !df__loop_counter(g, outer_loop)) return 0;
    /* A separate counter, not a loop variable that already counts: pushes order themselves on
       it, and a run of the forward loop alone (inference) must not run them. */
    g->ctx = W->outer;
    df_output zero = df_scalar_i32(g, 0);
    g->ctx = saved;
    if (!zero.node) return 0;
    if (outer_loop && !df__add_control_edge(g, zero.node, outer_loop->fc_add)) return 0;
    df_node *e = df__make_enter(g, W, zero, 0);
    if (!e) return 0;
    df_output ev = {e, 0}, pair[2] = {ev, ev};
    df_node *m = df__raw_op(g, W, "Merge", pair, 2, 1);
    if (!m) return 0;
    df_output mv = {m, 0}, lc = {W->loop_cond, 0}, swin[2] = {mv, lc};
    df_node *sw = df__raw_op(g, W, "Switch", swin, 2, 0);
    if (!sw) return 0;
    g->ctx = W->outer;           /* made outside and entered once, not run every iteration */
    df_output one = df_scalar_i32(g, 1);
    g->ctx = saved;
    if (one.node) one = df__ctx_capture(g, W, one);
    df_output t = {sw, 1}, addin[2] = {t, one};
    df_node *add = one.node ? df__raw_op(g, W, "AddV2", addin, 2, 0) : NULL;
    if (!add) return 0;
    df_output av = {add, 0}, f = {sw, 0};
    df_node *nx = df__raw_op(g, W, "NextIteration", &av, 1, 0);
    if (!nx) return 0;
    df_output nv = {nx, 0};
    if (df_node_update_input(g, m, 1, nv)) return 0;
    df_node *ex = df__raw_op(g, W->outer, "Exit", &f, 1, 0);
    if (!ex) return 0;
    e->cf_part = m->cf_part = sw->cf_part = nx->cf_part = ex->cf_part = 1;
    W->fc_add = add; W->fc_next = nx; W->fc_exit = ex;
    return 1;
}

DF_PRIVATE df__gstack *df__gstack_new(df_graph *g, df_dtype t) { return df__gstack_new_op(g, t, 0, NULL); }
/* A stack for values pushed in loop W: made in the loop around W (one stack per frame of W,
   whose iterations index it), or outside every loop. */
DF_PRIVATE df__gstack *df__gstack_for(df_graph *g, df_dtype t, df__ctx *W) { return df__gstack_new_op(g, t, 0, df__loop_of(W->outer)); }
/* A stack made in context `at`, or (sum) a SumAccumulator made where the graph's context is. */
DF_PRIVATE df__gstack *df__gstack_new_op(df_graph *g, df_dtype t, int sum, df__ctx *at) {
    df__gstack *s = (df__gstack *)DF_MALLOC(sizeof *s);
    if (!s || !df__grow(&g->gstacks, &g->cap_gstacks, g->n_gstacks + 1, sizeof(df__gstack *))) {
        DF_FREE(s);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory making a gradient stack");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    g->gstacks[g->n_gstacks++] = s;
    df__ctx *saved = g->ctx;
    df_op_builder *b;
    if (sum) {                   /* one per run of the gradient loop: made where that loop is made */
        b = df_op_new(g, "SumAccumulator", NULL);
        if (b) df_op_set_attr_type(b, "dtype", t);
    } else {
        g->ctx = at;
        df_output m = df_scalar_i32(g, -1);
        b = df_op_new(g, "StackV2", NULL);
        if (b) { b->raw = 1; df_op_add_input(b, m); df_op_set_attr_type(b, "elem_type", t); }
    }
    s->stack = df_op_finish(b);
    g->ctx = saved;
    if (s->stack) s->stack->gstack = g->n_gstacks;
    return s->stack ? s : NULL;
}

/* Pushes x (made in context cx, inside loop W) on s under W's iteration: LoopStackPush, which
   needs no order among pushes. */
DF_PRIVATE int df__gstack_push(df_graph *g, df__gstack *s, df_output x, df__ctx *cx, df__ctx *W, int swap) {
    if (!df__loop_count(g, W)) return 0;
    df__ctx *saved = g->ctx;
    g->ctx = cx;
    df_output h = df__ctx_capture(g, cx, df__out(s->stack, 0));
    g->ctx = saved;
    if (!h.node) return 0;
    df_output ins[2] = {h, x};
    df_op_builder *b = df__begin(g, cx, "LoopStackPush", ins, 2, NULL, 0, 1);
    if (b) df_op_set_attr_bool(b, "swap_memory", swap);
    df_node *p = df__finish_in(g, cx, b);
    if (!p) return 0;
    p->gstack = s->stack->gstack;
    s->push = p; s->push_ctx = cx; s->push_loop = W; s->count = W->lcount;
    return df__add_control_edge(g, W->lcount, p);       /* a run that reads the count runs the push */
}

/* Checkpoints: pushes x (made in context cx, inside loop W) on s, once per iteration of W, in
   order (StackPushV2 after the forward counter's Add). */
DF_PRIVATE int df__gstack_push_seq(df_graph *g, df__gstack *s, df_output x, df__ctx *cx, df__ctx *W, int swap) {
    if (!df__loop_counter(g, W)) return 0;
    df__ctx *saved = g->ctx;
    g->ctx = cx;
    df_output h = {s->stack, 0};
    h = df__ctx_capture(g, cx, h);
    g->ctx = saved;
    if (!h.node) return 0;
    df_output ins[2] = {h, x};
    df_node *ctl = W->fc_add;
    df_op_builder *b = df__begin(g, cx, "StackPushV2", ins, 2, &ctl, 1, 1);
    if (b) df_op_set_attr_bool(b, "swap_memory", swap);
    df_node *p = df__finish_in(g, cx, b);
    if (!p) return 0;
    p->gstack = s->stack->gstack;
    s->push = p; s->push_ctx = cx; s->push_loop = W;
    if (cx == W) return df__add_control_edge(g, W->fc_next, p);
    if (!W->f_sync) {
        df_node *t = df__raw_op(g, W, "ControlTrigger", NULL, 0, 0);
        if (!t || !df__add_control_edge(g, W->fc_next, t)) return 0;
        W->f_sync = t;
    }
    return df__add_control_edge(g, W->f_sync, p);
}

/* A pop the gradient loop made from stack s: noted on it (a second-order gradient finds its
   pops there); its output 0, or {NULL,0} with the graph's error set when memory ran out. */
static df_output df__gstack_note_pop(df_graph *g, df__gstack *s, df_node *pop) {
    df_output none = {NULL, 0};
    pop->gstack = s->stack->gstack;
    if (!df__grow(&s->pops, &s->cap_pops, s->n_pops + 1, sizeof(df_node *))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
        return none;
    }
    s->pops[s->n_pops++] = pop;
    df_output r = {pop, 0};
    return r;
}

/* Pops, in gradient loop G, the value pushed by s in context cx of loop W (in G's iteration k,
   that of W's iteration count-1-k); dead when the iteration it belongs to did not take the
   branch cx lies on. The count, given once the pushing loop is done, orders every pop after
   every push. */
static df_output df__gstack_pop_guarded(df_graph *g, df__ctx *G, df__gstack *s, df__ctx *cx, df__ctx *W, df_dtype t,
                                        const df__shape *shape, int n_guards, const df_output *preds, const int *ports);
DF_PRIVATE df_output df__gstack_pop(df_graph *g, df__ctx *G, df__gstack *s, df__ctx *cx, df__ctx *W, df_dtype t,
                                const df__shape *shape) {
    return df__gstack_pop_guarded(g, G, s, cx, W, t, shape, 0, NULL, NULL);
}
/* The same, the stack's handle first going through Switch(h, preds[k]):ports[k] for each guard. */
static df_output df__gstack_pop_guarded(df_graph *g, df__ctx *G, df__gstack *s, df__ctx *cx, df__ctx *W, df_dtype t,
                                        const df__shape *shape, int n_guards, const df_output *preds, const int *ports) {
    df_output none = {NULL, 0};
    df__ctx *saved = g->ctx;
    df_output h = {s->stack, 0};
    if (!s->count) { df__graph_error(g, DF_INTERNAL, "Popping a gradient stack that has no push"); return none; }
    g->ctx = G;
    df_output cnt = df__ctx_capture(g, G, df__out(s->count, 0));
    h = cnt.node ? df__ctx_capture(g, G, h) : none;
    if (h.node && cx != W && cx->kind == DF__CTX_COND) {
        df_output p = df__ctx_capture(g, G, cx->pred);
        df_output ins[2] = {h, p};
        df_node *sw = p.node ? df__raw_op(g, G, "Switch", ins, 2, 0) : NULL;
        h.node = sw;
        h.index = cx->branch;
    }
    for (int k = 0; h.node && k < n_guards; k++) {
        df_output ins[2] = {h, preds[k]};
        h.node = df__raw_op(g, G, "Switch", ins, 2, 0);
        h.index = ports[k];
    }
    g->ctx = saved;
    if (!h.node) return none;
    df_node *ctl = df__ctx_control_pivot(G);     /* not in the loop's last, dead, iteration */
    df_output ins[2] = {h, cnt};
    df_op_builder *b = df__begin(g, G, "LoopStackPop", ins, 2, &ctl, ctl ? 1 : 0, 1);
    if (b) df_op_set_attr_type(b, "elem_type", t);
    df_node *pop = df__finish_in(g, G, b);
    if (!pop) return none;
    if (shape) pop->out_shapes[0] = *shape;
    return df__gstack_note_pop(g, s, pop);
}

/* The Switch outputs made inside gradient loop W (by a cond's gradient there) that value x
   depends on, not through a Merge: an op is live only when all its inputs are, so x is live in
   an iteration of W exactly when all of these are. Adds them to sw/port (up to max, skipping
   those already there) and returns how many there are then; -1: out of memory, -2: more than
   max. A walk with a stack of its own (not recursion: a loop body may be a chain as long as
   the graph). */
static int df__switches_behind(df_output x, const df__ctx *W, const df_node **sw, int *port, int n, int max) {
    const df_node *start = x.node;
    df_graph *g = start->graph;
#define DF__IS_W_SWITCH(m) ((m)->ctx == W && !(m)->cf_part && ((m)->op->flags & DF__OP_SWITCH))
#define DF__ADD_SWITCH(m, p)                                                                    \
    do {                                                                                        \
        int k_ = 0;                                                                             \
        while (k_ < n && (sw[k_] != (m) || port[k_] != (p))) k_++;                              \
        if (k_ == n) { if (n == max) { r = -2; break; } sw[n] = (m); port[n++] = (p); }         \
    } while (0)
    int r = 0;
    if (DF__IS_W_SWITCH(start)) {
        DF__ADD_SWITCH(start, x.index);
        return r ? r : n;
    }
    int limit = g->n_nodes, top = 0;
    unsigned char *seen = (unsigned char *)DF_MALLOC((size_t)limit + 1);
    const df_node **stack = (const df_node **)DF_MALLOC(((size_t)limit + 1) * sizeof *stack);
    if (!seen || !stack) { DF_FREE(seen); DF_FREE(stack); return -1; }
    memset(seen, 0, (size_t)limit + 1);
    if (start->id < limit) { seen[start->id] = 1; stack[top++] = start; }      /* (each node pushed once) */
    while (top && !r) {
        const df_node *m = stack[--top];
        if (m->ctx != W || m->cf_part || (m->op->flags & DF__OP_MERGE)) continue;
        for (int i = 0; i < m->n_inputs && !r; i++) {
            const df_node *src = m->inputs[i].node;
            if (DF__IS_W_SWITCH(src)) DF__ADD_SWITCH(src, m->inputs[i].index);
            else if (src->id < limit && !seen[src->id]) { seen[src->id] = 1; stack[top++] = src; }
        }
    }
#undef DF__ADD_SWITCH
#undef DF__IS_W_SWITCH
    DF_FREE(seen);
    DF_FREE(stack);
    return r ? r : n;
}

/* What decides whether x is live, as (predicate read in G, output port) pairs: every Switch
   output of W that x depends on, and those its data depends on, and so on. A pop of x in G goes
   through Switches on them all, so it runs exactly in the iterations where x was pushed.
   Returns the number of guards, or -1 (the graph's error set). */
#define DF__MAX_POP_GUARDS 16
static int df__live_guards(df_graph *g, df__ctx *G, df_output x, df_output *preds, int *ports) {
    const df_node *sw[DF__MAX_POP_GUARDS];
    int port[DF__MAX_POP_GUARDS], n = df__switches_behind(x, G->grad_of, sw, port, 0, DF__MAX_POP_GUARDS);
    for (int k = 0; k < n; k++)            /* a Switch's data may be behind others in turn */
        n = df__switches_behind(sw[k]->inputs[0], G->grad_of, sw, port, n, DF__MAX_POP_GUARDS);
    if (n == -1) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory differentiating a gradient loop"); return -1; }
    if (n < 0) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Differentiating a gradient loop through a value behind more than %d "
                        "cond branches at once {{node %s}}", DF__MAX_POP_GUARDS, x.node->name);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        const df_node *ps[1];
        int pp[1], r = df__switches_behind(sw[k]->inputs[1], G->grad_of, ps, pp, 0, 1);
        if (r != 0) {
            if (r == -1) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory differentiating a gradient loop");
            else df__graph_error(g, DF_UNIMPLEMENTED, "Differentiating a gradient loop through a cond whose "
                                 "predicate is itself inside a cond is not supported {{node %s}}", sw[k]->name);
            return -1;
        }
        preds[k] = df__grad_real_value(g, G, sw[k]->inputs[1]);
        ports[k] = port[k];
        if (!preds[k].node) return -1;
    }
    return n;
}

/* ---- Row stacks: the values of W's body itself (not of a cond in it) that gradient loop G
   reads share one stack, whose push in W keeps them all as the row of its iteration and whose
   pop in G gives them all back (LoopStackPushN, LoopStackPopN): per iteration one push and one
   pop, and one stack handle entering each loop, however many values the gradient reads. The
   push and the pop grow by one value each time G reads another; each value keeps a gstack of
   its own (slot: its place in the row) for second-order gradients. One row stack per (W, G),
   whatever devices the values are on: the push and the pop go with the stack's handle, as the
   one-value pushes and pops do (the graph is the same however it is placed). ---- */
static int df__row_dtype(df_dtype t) { return t != DF_RESOURCE && t != DF_VARIANT && t != DF_STRING; }
/* A gstack for slot k of row stack s0 (same stack, push and pop). */
static df__gstack *df__row_slot(df_graph *g, const df__gstack *s0, int k) {
    df__gstack *s = (df__gstack *)DF_MALLOC(sizeof *s);
    df_node **pops = (df_node **)DF_MALLOC(sizeof(df_node *));
    if (!s || !pops || !df__grow(&g->gstacks, &g->cap_gstacks, g->n_gstacks + 1, sizeof(df__gstack *))) {
        DF_FREE(s); DF_FREE(pops);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory making a gradient stack");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->stack = s0->stack; s->push = s0->push; s->count = s0->count;
    s->push_ctx = s0->push_ctx; s->push_loop = s0->push_loop;
    s->pops = pops; s->n_pops = s->cap_pops = 1; pops[0] = s0->pops[0];
    s->slot = k;
    g->gstacks[g->n_gstacks++] = s;
    return s;
}
/* x (of W's body, read in G) as an output of the row stack's pop: a new row stack, or one more
   value of the one there is. */
static df_output df__row_value(df_graph *g, df__ctx *G, df__ctx *W, df_output x) {
    df_output none = {NULL, 0};
    df_node *n = x.node;
    df_dtype t = df_output_dtype(x);
    df__gstack *s0 = NULL;
    for (int i = g->n_gstacks - 1; i >= 0 && !s0; i--) {        /* (G's own: among the newest) */
        df__gstack *s = g->gstacks[i];
        if (s->slot == 0 && s->push && s->push_loop == W && s->n_pops == 1 && s->pops[0]->ctx == G &&
            !strcmp(s->push->op->name, "LoopStackPushN")) s0 = s;
    }
    if (s0) {                    /* one more value in the row: the push and the pop grow */
        df_node *p = s0->push, *pop = s0->pops[0];
        int k = pop->n_outputs, ni = p->n_inputs;
        df__attr *pt = df__node_attr_mut(p, "T"), *ot = df__node_attr_mut(pop, "T");
        if (!pt || !ot || pt->kind != DF__A_TYPE_LIST || ot->kind != DF__A_TYPE_LIST || pt->u.types.n != k ||
            ot->u.types.n != k || ni != k + 1) {
            df__graph_error(g, DF_INTERNAL, "Row stack push and pop disagree {{node %s}}", pop->name);
            return none;
        }
        /* every array first (a failure leaves the nodes as they were), then the new value */
        df_output *in = (df_output *)DF_REALLOC(p->inputs, (size_t)(ni + 1) * sizeof(df_output));
        if (in) p->inputs = in;
        df_dtype *tv = in ? (df_dtype *)DF_REALLOC(pt->u.types.v, (size_t)(k + 1) * sizeof(df_dtype)) : NULL;
        if (tv) pt->u.types.v = tv;
        df_dtype *ov = tv ? (df_dtype *)DF_REALLOC(ot->u.types.v, (size_t)(k + 1) * sizeof(df_dtype)) : NULL;
        if (ov) ot->u.types.v = ov;
        df_dtype *oty = ov ? (df_dtype *)DF_REALLOC(pop->out_types, (size_t)(k + 1) * sizeof(df_dtype)) : NULL;
        if (oty) pop->out_types = oty;
        df__shape *osh = oty ? (df__shape *)DF_REALLOC(pop->out_shapes, (size_t)(k + 1) * sizeof(df__shape)) : NULL;
        if (osh) pop->out_shapes = osh;
        unsigned char *orf = osh ? (unsigned char *)DF_REALLOC(pop->out_is_ref, (size_t)(k + 1)) : NULL;
        if (orf) pop->out_is_ref = orf;
        df__gstack *s = orf ? df__row_slot(g, s0, k) : NULL;
        if (!s) {
            if (df__ok(g)) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory growing a gradient stack");
            return none;
        }
        p->inputs[ni] = x;
        p->n_inputs = ni + 1;
        pt->u.types.v[k] = t; pt->u.types.n = k + 1;
        ot->u.types.v[k] = t; ot->u.types.n = k + 1;
        pop->out_types[k] = t;
        pop->out_shapes[k] = n->out_shapes[x.index];
        pop->out_is_ref[k] = 0;
        pop->n_outputs = k + 1;
        __atomic_add_fetch(&g->edit_version, 1, __ATOMIC_RELAXED);
        df_output r = {pop, k};
        return r;
    }
    if (!df__loop_count(g, W)) return none;
    df__gstack *s = df__gstack_for(g, t, W);
    if (!s) return none;
    df__ctx *saved = g->ctx;
    g->ctx = W;
    df_output h = df__ctx_capture(g, W, df__out(s->stack, 0));
    g->ctx = saved;
    if (!h.node) return none;
    df_op_builder *b = df__begin(g, W, "LoopStackPushN", &h, 1, NULL, 0, 1);
    if (b) {
        df_op_add_input_list(b, &x, 1);
        df_op_set_attr_type_list(b, "T", &t, 1);
        df_op_set_attr_bool(b, "swap_memory", G->swap_memory);
    }
    df_node *p = df__finish_in(g, W, b);
    if (!p) return none;
    p->gstack = s->stack->gstack;
    s->push = p; s->push_ctx = W; s->push_loop = W; s->count = W->lcount;
    if (!df__add_control_edge(g, W->lcount, p)) return none;     /* a run that reads the count runs the push */
    g->ctx = G;
    df_output cnt = df__ctx_capture(g, G, df__out(s->count, 0)), hg = cnt.node ? df__ctx_capture(g, G, df__out(s->stack, 0)) : none;
    g->ctx = saved;
    if (!hg.node) return none;
    df_node *ctl = df__ctx_control_pivot(G);     /* not in the loop's last, dead, iteration */
    df_output ins[2] = {hg, cnt};
    b = df__begin(g, G, "LoopStackPopN", ins, 2, &ctl, ctl ? 1 : 0, 1);
    if (b) df_op_set_attr_type_list(b, "T", &t, 1);
    df_node *pop = df__finish_in(g, G, b);
    if (!pop) return none;
    pop->out_shapes[0] = n->out_shapes[x.index];
    return df__gstack_note_pop(g, s, pop);
}

/* What gradient loop G reads when its ops use x, a value of the forward loop G->grad_of:
   constants are cloned, loop invariants read from outside, anything else comes off a stack. */
DF_PRIVATE df_output df__grad_real_value(df_graph *g, df__ctx *G, df_output x) {
    df_output none = {NULL, 0};
    df__ctx *W = G->grad_of;
    df_node *n = x.node;
    if (!strcmp(n->op->name, "Const")) {
        const df__attr *a = df__node_attr(n, "value");
        df__ctx *saved = g->ctx;
        int saved_ctl = g->n_ctl;
        g->ctx = G;
        g->n_ctl = 0;          /* a copy of a forward value: the caller's control scopes are not its
                                  own (they could even reach back into W, to this copy again) */
        df_output c = a && a->kind == DF__A_TENSOR ? df_const(g, a->u.tensor) : none;
        g->ctx = saved;
        g->n_ctl = saved_ctl;
        return c;
    }
    if ((n->op->flags & DF__OP_ENTER) && df__attr_b(n, "is_constant", 0) && n->ctx == W)
        return df__ctx_capture(g, G, n->inputs[0]);
    if (df__loop_of(n->ctx) != W) {
        df__graph_error(g, DF_INTERNAL, "Gradient loop reads '%s' from a loop nested in the one it "
                        "differentiates", n->name);
        return none;
    }
    /* A value behind a Switch of W (the gradient of a cond in the loop W differentiates) is
       pushed only in the iterations that took its branch; its pop goes through Switches on the
       same predicates, so it is dead (and pops nothing) in the others. */
    df_output preds[DF__MAX_POP_GUARDS];
    int ports[DF__MAX_POP_GUARDS], n_guards = W->grad_of ? df__live_guards(g, G, x, preds, ports) : 0;
    if (n_guards < 0) return none;
    if (!n_guards && n->ctx == W && df__row_dtype(df_output_dtype(x))) return df__row_value(g, G, W, x);
    df__gstack *s = df__gstack_for(g, df_output_dtype(x), W);
    if (!s || !df__gstack_push(g, s, x, n->ctx, W, G->swap_memory)) return none;
    return df__gstack_pop_guarded(g, G, s, n->ctx, W, df_output_dtype(x), &n->out_shapes[x.index], n_guards, preds, ports);
}
