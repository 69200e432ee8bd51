/* ==========================================================================================
   src/autodiff/loops.c: While-loop gradients                                     >>gradloops
   The gradient of a while loop is another while loop that runs the forward loop's count of
   iterations and differentiates the body once per iteration, popping the forward values the
   forward loop pushed (or, when checkpointing, recomputing them from every k-th iteration's
   loop variables).
   ========================================================================================== */
typedef struct df__gloop {
    df__ctx *W;
    int nv;                      /* float loop variables with a gradient variable */
    int *var;                    /* their indices in W */
    int ninv;
    df_node **inv;               /* loop-invariant Enters whose gradient is summed */
    int nseq_out;
    df__gstack **seq_out;        /* stacks pushed in W whose pops got gradients (second order) */
    int nseq_in;
    df_output *seq_in;           /* pops' outputs in W (W is itself a gradient loop) */
    df__gstack **seq_in_s;       /*   and their stacks */
    int base;                    /* index of the first gradient variable: 1 when a placeholder
                                    variable (or, checkpointing, the count) comes first */
    df_output zero, one;         /* checkpoints: int32 constants made outside the loop (entered once) */
    df__gstack **acc;            /* per invariant: the accumulator summing its gradient */
    int nacc_out;
    df_node **acc_out;           /* second order: accumulator adds in W whose reads got gradients */
    df_output *acc_gy;           /*   and those gradients */
} df__gloop;

/* The gradient loop runs while its iteration number is below W's count: no counting variable
   (LoopIterationLess reads the number the executor keeps). */
static df_output df__gloop_cond(df_graph *g, void *user, const df_output *vars) {
    df__gloop *L = (df__gloop *)user;
    df__ctx *G = g->ctx;
    df_node *ctl = vars[0].node;
    df_output n = df__ctx_capture(g, G, df__out(L->W->lcount, 0));
    if (!n.node) return n;
    return df__out(df__finish_in(g, G, df__begin(g, G, "LoopIterationLess", &n, 1, &ctl, 1, 1)), 0);
}

/* Whether the gradient part d of a loop invariant is a Mul of gradient loop G that nothing
   reads: its accumulation then takes the Mul's operands (SumAccumulatorMulAdd), one kernel per
   iteration where a Mul and an add took two, and the Mul is left unread (pruned from runs). */
static int df__gloop_fusable_mul(df_graph *g, df__ctx *G, df_output d) {
    df_node *m = d.node;
    if (!m || m->ctx != G || d.index != 0 || strcmp(m->op->name, "Mul") || m->n_inputs != 2 || m->n_controls ||
        !df__is_float(df_output_dtype(d)) || df_output_dtype(d) == DF_HALF || df_output_dtype(d) == DF_BFLOAT16 ||
        df_output_dtype(m->inputs[0]) != df_output_dtype(d) || df_output_dtype(m->inputs[1]) != df_output_dtype(d))
        return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const df_node *n = g->nodes[i];
        for (int j = 0; j < n->n_inputs; j++) if (n->inputs[j].node == m) return 0;
        for (int j = 0; j < n->n_controls; j++) if (n->controls[j] == m) return 0;
    }
    return 1;
}
/* The value an accumulator's add puts in: SumAccumulatorAdd's input, or the product that
   SumAccumulatorMulAdd gives. */
static df_output df__gloop_added(df_node *add) {
    if (!strcmp(add->op->name, "SumAccumulatorMulAdd")) return df__out(add, 0);
    return add->inputs[1];
}

static void df__gloop_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    df__gloop *L = (df__gloop *)user;
    df__ctx *G = g->ctx, *W = L->W;
    int vb = L->base;
    if (vb) next[0] = vars[0];
    int ny = L->nv + L->nseq_out + L->nacc_out, nx = L->nv + L->ninv + L->nseq_in;
    df_output *buf = (df_output *)DF_MALLOC((size_t)(2 * ny + 2 * nx + 2) * sizeof(df_output));
    if (!buf) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    df_output *ys = buf, *gys = buf + ny, *xs = buf + 2 * ny, *dxs = buf + 2 * ny + nx;
    for (int k = 0; k < L->nv; k++) {
        ys[k] = W->nexts[L->var[k]]->inputs[0];
        gys[k] = vars[vb + k];
        xs[k].node = W->bodies[L->var[k]];     /* an Identity, or in gradient loops the Switch */
        xs[k].index = (W->bodies[L->var[k]]->op->flags & DF__OP_SWITCH) ? 1 : 0;
    }
    for (int k = 0; k < L->nseq_out; k++) {
        df__gstack *s = L->seq_out[k];
        df_output v = s->push->inputs[1 + s->slot];        /* the value pushed */
        ys[L->nv + k] = v;
        gys[L->nv + k] = df__gstack_pop(g, G, s->grad, s->push_ctx, W, df_output_dtype(v), &v.node->out_shapes[v.index]);
    }
    for (int k = 0; k < L->nacc_out; k++) {     /* each add's value gets its reads' gradient */
        ys[L->nv + L->nseq_out + k] = df__gloop_added(L->acc_out[k]);
        gys[L->nv + L->nseq_out + k] = L->acc_gy[k];
    }
    for (int k = 0; k < L->ninv; k++) { xs[L->nv + k].node = L->inv[k]; xs[L->nv + k].index = 0; }
    for (int k = 0; k < L->nseq_in; k++) xs[L->nv + L->ninv + k] = L->seq_in[k];
    if (df__ok(g)) df__grad_region(g, W, ny, ys, gys, nx, xs, dxs);
    if (!df__ok(g)) { DF_FREE(buf); return; }
    for (int k = 0; k < L->nv; k++) next[vb + k] = dxs[k].node ? dxs[k] : df__zeros_like(g, vars[vb + k]);
    /* loop invariants: this iteration's part of their gradient goes into an accumulator, which
       sums in iteration order */
    for (int k = 0; k < L->ninv && df__ok(g); k++) {
        df_output d = dxs[L->nv + k];
        if (!d.node) continue;
        df__gstack *A = L->acc[k];
        df_output h = df__ctx_capture(g, G, df__out(A->stack, 0));
        int fuse = h.node && df__gloop_fusable_mul(g, G, d);
        df_output ins[3] = {h, fuse ? d.node->inputs[0] : d, fuse ? d.node->inputs[1] : d};
        df_node *ctl = df__ctx_control_pivot(G);
        df_op_builder *b = df__begin(g, G, fuse ? "SumAccumulatorMulAdd" : "SumAccumulatorAdd", ins, fuse ? 3 : 2, &ctl, ctl ? 1 : 0, 1);
        df_node *add = df__finish_in(g, G, b);
        if (!add) break;
        add->gstack = A->stack->gstack;
        A->push = add; A->push_ctx = G; A->push_loop = G;
    }
    /* second order: the gradients of W's pops go on the stacks' gradient stacks */
    for (int k = 0; k < L->nseq_in && df__ok(g); k++) {
        df_output d = dxs[L->nv + L->ninv + k];
        if (!d.node) continue;
        df__gstack *s = L->seq_in_s[k];
        if (!s->grad && !(s->grad = df__gstack_for(g, df_output_dtype(d), G))) break;
        if (!df__gstack_push(g, s->grad, d, G, G, W->swap_memory)) break;
    }
    DF_FREE(buf);
}

/* ---- checkpointed loop gradients: the forward loop keeps its variables every k-th iteration;
   the gradient loop, at the last iteration of each segment (going backwards), recomputes the
   segment from its checkpoint in a small loop that stacks each iteration's variables, and then
   recomputes each iteration's body from them and differentiates it in place. Stack memory:
   N/k checkpoints plus k segment entries. ---- */
typedef struct df__ckpt {
    df__gloop *L;
    df__gstack **ck, **seg;      /* per user variable: checkpoints and segment stacks */
    int nu;                      /* user variables (the maximum_iterations counter excluded) */
    df_output index;
} df__ckpt;

static void df__ck_push_then(df_graph *g, void *user, df_output *outs) {
    df__ckpt *K = (df__ckpt *)user;
    df__ctx *W = K->L->W;
    for (int u = 0; u < K->nu && df__ok(g); u++) {
        df_output v = df__ctx_capture(g, g->ctx, df__out(W->bodies[W->has_counter + u], 0));
        if (v.node) df__gstack_push_seq(g, K->ck[u], v, g->ctx, W, W->swap_memory);
    }
    outs[0] = df_scalar_i32(g, 0);
}
static df_output df__ck_gloop_cond(df_graph *g, void *user, const df_output *vars) {
    return df_greater(g, vars[0], ((df__ckpt *)user)->L->zero);
}
static void df__ck_zero(df_graph *g, void *user, df_output *outs) { DF__UNUSED(user); outs[0] = df_scalar_i32(g, 0); }

static df_output df__ck_seg_cond(df_graph *g, void *user, const df_output *v) {
    DF__UNUSED(user);
    return df_less_equal(g, v[0], v[1]);
}
static void df__ck_seg_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    df__ckpt *K = (df__ckpt *)user;
    df__ctx *W = K->L->W, *R = g->ctx;
    for (int u = 0; u < K->nu && df__ok(g); u++) df__gstack_push_seq(g, K->seg[u], v[2 + u], R, R, W->swap_memory);
    if (!df__ok(g)) return;
    W->body_fn(g, W->user, v + 2, next + 2);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
}
static void df__ck_recompute(df_graph *g, void *user, df_output *outs) {
    df__ckpt *K = (df__ckpt *)user;
    df__ctx *G = g->ctx->outer;      /* the gradient loop around this branch */
    int nu = K->nu;
    df_output *init = (df_output *)DF_MALLOC((size_t)(2 * (nu + 2)) * sizeof(df_output));
    if (!init) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    df_output *out = init + nu + 2;
    df_output kk = df_scalar_i32(g, (int32_t)K->L->W->checkpoint_every);
    init[0] = df_sub(g, K->index, df_floor_mod_i(g, K->index, kk));      /* the segment's checkpoint */
    init[1] = K->index;
    for (int u = 0; u < nu && df__ok(g); u++) {
        df_output h = df__ctx_capture(g, g->ctx, df__out(K->ck[u]->stack, 0));
        df_op_builder *b = df_op_new(g, "StackPopV2", NULL);
        df_op_add_input(b, h);
        df_op_set_attr_type(b, "elem_type", df_output_dtype(df__out(K->L->W->bodies[K->L->W->has_counter + u], 0)));
        df_node *pop = df_op_finish(b);
        if (!pop) break;
        pop->out_shapes[0] = K->L->W->bodies[K->L->W->has_counter + u]->out_shapes[0];
        if (!df__grow(&G->pops, &G->cap_pops, G->n_pops + 1, sizeof(df_node *))) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); break; }
        G->pops[G->n_pops++] = pop;
        init[2 + u] = df__out(pop, 0);
    }
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = K->L->W->parallel_iterations;
    o.name = "recompute";
    df__ctx *before = g->n_ctxs ? g->ctxs[g->n_ctxs - 1] : NULL;
    if (df__ok(g)) df_while_loop(g, nu + 2, init, df__ck_seg_cond, df__ck_seg_body, K, &o, out);
    /* the recompute loop's own counter ends after its last push */
    df__ctx *R = NULL;
    for (int i = g->n_ctxs - 1; i >= 0 && g->ctxs[i] != before; i--)
        if (g->ctxs[i]->kind == DF__CTX_WHILE && g->ctxs[i]->outer == g->ctx) R = g->ctxs[i];
    outs[0] = R && R->fc_exit ? df__out(R->fc_exit, 0) : out[0];
    DF_FREE(init);
}

static void df__gloop_body_ckpt(df_graph *g, void *user, const df_output *vars, df_output *next) {
    df__ckpt *K = (df__ckpt *)user;
    df__gloop *L = K->L;
    df__ctx *G = g->ctx, *W = L->W;
    int nu = K->nu, hc = W->has_counter;
    df_output index = df_sub(g, vars[0], L->one);
    if (!index.node) return;
    G->b_index = index.node;
    K->index = index;
    df_output n = df__ctx_capture(g, G, df__out(W->fc_exit, 0));
    df_output kk = df_scalar_i32(g, (int32_t)W->checkpoint_every);
    df_output last = df_logical_or(g, df_equal(g, df_floor_mod_i(g, index, kk), df_scalar_i32(g, (int32_t)W->checkpoint_every - 1)),
                                   df_equal(g, index, df_sub(g, n, df_scalar_i32(g, 1))));
    df_output done;
    if (df__ok(g)) df_cond(g, last, 1, df__ck_recompute, df__ck_zero, K, &done);
    if (!df__ok(g)) return;
    int ny = L->nv, nx = L->nv + L->ninv;
    df_output *buf = (df_output *)DF_MALLOC((size_t)(2 * nu + 2 * ny + 2 * nx + 2) * sizeof(df_output));
    if (!buf) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    df_output *v = buf, *nv = buf + nu, *ys = buf + 2 * nu, *gys = ys + ny, *xs = gys + ny, *dxs = xs + nx;
    for (int u = 0; u < nu && df__ok(g); u++) {
        df_output h = df__ctx_capture(g, G, df__out(K->seg[u]->stack, 0));
        df_node *ctl = done.node;
        df_op_builder *b = df__begin(g, G, "StackPopV2", &h, 1, &ctl, 1, 1);
        if (b) df_op_set_attr_type(b, "elem_type", df_output_dtype(df__out(W->bodies[hc + u], 0)));
        df_node *pop = df__finish_in(g, G, b);
        if (!pop) break;
        pop->out_shapes[0] = W->bodies[hc + u]->out_shapes[0];
        if (!df__grow(&G->pops, &G->cap_pops, G->n_pops + 1, sizeof(df_node *))) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); break; }
        G->pops[G->n_pops++] = pop;
        v[u] = df__out(pop, 0);
    }
    if (df__ok(g)) W->body_fn(g, W->user, v, nv);          /* this iteration, recomputed */
    for (int k = 0; k < L->nv && df__ok(g); k++) {
        int u = L->var[k] - hc;
        ys[k] = df__ctx_capture(g, G, nv[u]);
        gys[k] = vars[1 + k];
        xs[k] = v[u];
    }
    for (int k = 0; k < L->ninv && df__ok(g); k++) xs[L->nv + k] = df__ctx_capture(g, G, L->inv[k]->inputs[0]);
    if (df__ok(g)) df__grad_region(g, G, ny, ys, gys, nx, xs, dxs);
    if (df__ok(g)) {
        for (int k = 0; k < L->nv; k++) next[1 + k] = dxs[k].node ? dxs[k] : df__zeros_like(g, vars[1 + k]);
        for (int k = 0; k < L->ninv; k++) {
            df_output a = vars[1 + L->nv + k], d = dxs[L->nv + k];
            next[1 + L->nv + k] = d.node ? df_add(g, a, d) : a;
        }
        df_node *t = df__raw_op(g, G, "ControlTrigger", NULL, 0, 0);
        for (int i = 0; t && i < G->n_pops; i++) if (!df__add_control_edge(g, t, G->pops[i])) break;
        df_op_builder *b = df_op_new(g, "Identity", NULL);
        if (b) { b->raw = 1; df_op_add_input(b, index); if (t) df_op_add_control_input(b, t); }
        next[0] = df__out(df_op_finish(b), 0);
    }
    DF_FREE(buf);
}

/* Sets up the checkpoint pushes in W and the stacks; returns 0 on error. */
static int df__ckpt_prepare(df_graph *g, df__ckpt *K) {
    df__ctx *W = K->L->W;
    K->nu = W->n_vars - W->has_counter;
    K->ck = (df__gstack **)DF_MALLOC((size_t)(2 * K->nu + 1) * sizeof(df__gstack *));
    if (!K->ck) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return 0; }
    K->seg = K->ck + K->nu;
    for (int u = 0; u < K->nu; u++) {
        df_dtype t = W->bodies[W->has_counter + u]->out_types[0];
        if (!(K->ck[u] = df__gstack_new(g, t)) || !(K->seg[u] = df__gstack_new(g, t))) return 0;
    }
    if (!df__loop_counter(g, W)) return 0;
    df__ctx *saved = g->ctx;
    g->ctx = W;
    df_output t = W->fc_add->inputs[0];          /* this iteration's index */
    df_output pred = df_equal(g, df_floor_mod_i(g, t, df_scalar_i32(g, (int32_t)W->checkpoint_every)), df_scalar_i32(g, 0));
    df_output dummy;
    if (df__ok(g)) df_cond(g, pred, 1, df__ck_push_then, df__ck_zero, K, &dummy);
    g->ctx = saved;
    return df__ok(g);
}

DF_PRIVATE df_code df__grad_loop(df__greg *r, df__ctx *W) {
    df_graph *g = r->g;
    df__gloop L;
    memset(&L, 0, sizeof L);
    L.W = W;
    int n = W->n_vars;
    L.var = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    L.inv = (df_node **)DF_MALLOC((size_t)(W->n_captures + 1) * sizeof(df_node *));
    df_output *dy = (df_output *)DF_MALLOC((size_t)(n + 1) * sizeof(df_output));
    int any = 0;
    if (!L.var || !L.inv || !dy) goto oom;
    for (int i = 0; i < n; i++) {
        dy[i] = df__greg_sum(r, df__out(W->exits[i], 0));
        if (df__is_float(W->exits[i]->out_types[0]) || W->exits[i]->out_types[0] == DF_VARIANT) L.var[L.nv++] = i;   /* lists carry gradients */
        if (dy[i].node) any = 1;
    }
    for (int i = 0; i < W->n_captures; i++) {
        df_node *e = W->captures[i].value.node;
        if ((e->op->flags & DF__OP_ENTER) && e->ctx == W && e->out_types[0] == DF_VARIANT && e->inputs[0].node->id < r->n0 &&
            df__greg_between(r, e->inputs[0].node)) {   /* its per-iteration sum would need a list accumulator */
            df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of a TensorList or Optional read inside a while loop (not a loop "
                            "variable) is not supported: make it a loop variable {{node %s}}", e->inputs[0].node->name);
            goto done;
        }
        if (!(e->op->flags & DF__OP_ENTER) || e->ctx != W ||
            !df__is_float(e->out_types[0] == DF_RESOURCE ? df__res_value_dtype(e->inputs[0]) : e->out_types[0])) continue;   /* (a variable's handle: its value's gradient) */
        df_node *src = e->inputs[0].node;
        int seen = 0;            /* one Enter may be recorded under two sources (a gradient loop's reads) */
        for (int k = 0; k < L.ninv; k++) if (L.inv[k] == e) seen = 1;
        if (!seen && src->id < r->n0 && df__greg_between(r, src)) L.inv[L.ninv++] = e;
    }
    /* second order: pushes in W whose pops received gradients; pops in W */
    for (int i = 0; i < g->n_gstacks; i++) {
        df__gstack *s = g->gstacks[i];
        if (s->push && s->push_loop == W && s->grad && s->push->id < r->n0) {
            df__gstack **nv = (df__gstack **)DF_REALLOC(L.seq_out, (size_t)(L.nseq_out + 1) * sizeof(df__gstack *));
            if (!nv) goto oom;
            L.seq_out = nv;
            L.seq_out[L.nseq_out++] = s;
            any = 1;
        }
        if (s->push && s->push_loop == W && s->push->id < r->n0 && (!strcmp(s->push->op->name, "SumAccumulatorAdd") || !strcmp(s->push->op->name, "SumAccumulatorMulAdd"))) {
            df_output gy = {NULL, 0};          /* second order: what reached the accumulator's reads */
            for (int k = 0; k < s->n_pops; k++)
                if (s->pops[k]->id < r->n0) {
                    df_output gk = df__greg_sum(r, df__out(s->pops[k], 0));
                    if (gk.node) gy = gy.node ? df_add(g, gy, gk) : gk;
                }
            if (gy.node) {
                df_node **nv = (df_node **)DF_REALLOC(L.acc_out, (size_t)(L.nacc_out + 1) * sizeof(df_node *));
                df_output *ng = (df_output *)DF_REALLOC(L.acc_gy, (size_t)(L.nacc_out + 1) * sizeof(df_output));
                if (nv) L.acc_out = nv;
                if (ng) L.acc_gy = ng;
                if (!nv || !ng) goto oom;
                L.acc_out[L.nacc_out] = s->push;
                L.acc_gy[L.nacc_out++] = gy;
                any = 1;
            }
        }
        for (int k = 0; k < s->n_pops; k++) {
            df_node *p = s->pops[k];
            if (p->id >= r->n0 || (strcmp(p->op->name, "LoopStackPop") && strcmp(p->op->name, "LoopStackPopN")) ||
                df__loop_of(p->ctx) != W || s->slot >= p->n_outputs || !df__is_float(p->out_types[s->slot]) ||
                !df__greg_between(r, p)) continue;
            df_output *nv = (df_output *)DF_REALLOC(L.seq_in, (size_t)(L.nseq_in + 1) * sizeof(df_output));
            if (nv) L.seq_in = nv;
            df__gstack **ns = (df__gstack **)DF_REALLOC(L.seq_in_s, (size_t)(L.nseq_in + 1) * sizeof(df__gstack *));
            if (ns) L.seq_in_s = ns;
            if (!nv || !ns) goto oom;
            L.seq_in[L.nseq_in] = df__out(p, s->slot);
            L.seq_in_s[L.nseq_in++] = s;
        }
    }
    if (!any) goto done;
    {
        int ckpt = W->checkpoint_every > 0 && W->body_fn && !L.nseq_out && !L.nseq_in && !L.nacc_out;
        if (ckpt ? !df__loop_counter(g, W) : !df__loop_count(g, W)) goto done;
        /* variables: [the count (checkpoints) or a placeholder when no gradient variable],
           gradient variables, [invariants' gradients when checkpointing; else accumulators] */
        L.base = ckpt || L.nv == 0;
        int vb = L.base, nv = vb + L.nv + (ckpt ? L.ninv : 0);
        df_output *init = (df_output *)DF_MALLOC((size_t)(2 * (1 + L.nv + L.ninv)) * sizeof(df_output));
        if (!init) goto oom;
        df_output *outs = init + nv;
        if (vb) init[0] = ckpt ? df__out(W->fc_exit, 0) : df_scalar_i32(g, 0);
        for (int k = 0; k < L.nv; k++) {
            int i = L.var[k];
            init[vb + k] = dy[i].node ? dy[i] : df__zeros_like(g, df__out(W->exits[i], 0));
        }
        if (ckpt) for (int k = 0; k < L.ninv; k++) init[vb + L.nv + k] = df__zeros_like(g, L.inv[k]->inputs[0]);
        else if (L.ninv) {
            if (!(L.acc = (df__gstack **)DF_MALLOC((size_t)L.ninv * sizeof(df__gstack *)))) { DF_FREE(init); goto oom; }
            for (int k = 0; k < L.ninv; k++)
                if (!(L.acc[k] = df__gstack_new_op(g, L.inv[k]->out_types[0] == DF_RESOURCE ? df__res_value_dtype(L.inv[k]->inputs[0])
                                                   : L.inv[k]->out_types[0], 1, NULL))) { DF_FREE(init); goto done; }
        }
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = W->parallel_iterations;
        o.name = "while_grad";
        o.swap_memory = W->swap_memory;
        df__ckpt K;
        memset(&K, 0, sizeof K);
        K.L = &L;
        if (ckpt) {              /* the checkpointed loop's count and index */
            L.zero = df_scalar_i32(g, 0);
            L.one = df_scalar_i32(g, 1);
        }
        if (ckpt && !df__ckpt_prepare(g, &K)) { DF_FREE(K.ck); DF_FREE(init); goto done; }
        g->next_grad_of = W;
        if (ckpt) df_while_loop(g, nv, init, df__ck_gloop_cond, df__gloop_body_ckpt, &K, &o, outs);
        else df_while_loop(g, nv, init, df__gloop_cond, df__gloop_body, &L, &o, outs);
        g->next_grad_of = NULL;
        DF_FREE(K.ck);
        for (int k = 0; k < L.nv && df__ok(g); k++) {
            df_node *e = W->enters[L.var[k]];
            if (df__greg_between(r, e->inputs[0].node)) df__greg_add(r, e->inputs[0], outs[vb + k]);
        }
        for (int k = 0; k < L.ninv && df__ok(g) && ckpt; k++) df__greg_add(r, L.inv[k]->inputs[0], outs[vb + L.nv + k]);
        df__ctx *G = df__ok(g) && outs[0].node ? df__node_loop(outs[0].node) : NULL;
        for (int k = 0; k < L.ninv && df__ok(g) && !ckpt && G; k++) {
            /* the sum, read once every iteration of the gradient loop is done (zeros if nothing
               was added) */
            if (!df__loop_count(g, G)) break;
            df__gstack *A = L.acc[k];
            if (A->push && !df__add_control_edge(g, G->lcount, A->push)) break;
            df_output src = L.inv[k]->inputs[0];
            df_output ins[2] = {df__ctx_capture(g, g->ctx, df__out(A->stack, 0)), df__zeros_like(g, src)};
            df_node *ctl = G->lcount;
            df_op_builder *b = df__begin(g, g->ctx, "SumAccumulatorRead", ins, 2, &ctl, 1, 0);
            df_node *rd = df__finish_in(g, g->ctx, b);
            if (!rd) break;
            rd->gstack = A->stack->gstack;
            if (!df__grow(&A->pops, &A->cap_pops, A->n_pops + 1, sizeof(df_node *))) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); break; }
            A->pops[A->n_pops++] = rd;
            df__greg_add(r, src, df__out(rd, 0));
        }
        DF_FREE(init);
    }
    goto done;
oom:
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory differentiating a while loop");
done:
    DF_FREE(L.var); DF_FREE(L.inv); DF_FREE(L.seq_out); DF_FREE(L.seq_in); DF_FREE(L.seq_in_s); DF_FREE(dy);
    DF_FREE(L.acc); DF_FREE(L.acc_out); DF_FREE(L.acc_gy);
    return g->status.code;
}

df_code df_gradients(df_graph *g, int n_y, const df_output *ys, const df_output *grad_ys, int n_x,
                     const df_output *xs, df_output *dxs) {
    for (int i = 0; dxs && i < n_x; i++) dxs[i].node = NULL, dxs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (g->fn_parent) return df__graph_error(g, DF_UNIMPLEMENTED, "df_gradients: inside a function's body; differentiate "
                                             "the graph that calls the function");
    /* If, While and calls are differentiated through their lowered form */
    if (df__graph_has_functional(g) && df__lower_all(g) != DF_OK) return g->status.code;
    if (n_y < 1 || n_x < 1 || !ys || !xs || !dxs)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: bad arguments (n_y %d, n_x %d, ys, xs and dxs "
                               "must be set)", n_y, n_x);
    for (int i = 0; i < n_y; i++)
        if (!df__output_valid(ys[i]) || ys[i].node->graph != g)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: ys[%d] is NULL or invalid", i);
    for (int i = 0; i < n_x; i++)
        if (!df__output_valid(xs[i]) || xs[i].node->graph != g)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: xs[%d] is NULL or invalid", i);
    for (int i = 0; i < n_y + n_x; i++) {
        const df_node *n = i < n_y ? ys[i].node : xs[i - n_y].node;
        if (df__loop_of(n->ctx))
                return df__graph_error(g, DF_UNIMPLEMENTED, "df_gradients: %s[%d] ('%s') lies inside a while loop; "
                                       "differentiate the loop's outputs instead", i < n_y ? "ys" : "xs",
                                       i < n_y ? i : i - n_y, n->name);
    }
    df_output *gys = (df_output *)DF_MALLOC((size_t)n_y * sizeof(df_output));
    if (!gys) return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    for (int i = 0; i < n_y && df__ok(g); i++) {
        if (grad_ys && grad_ys[i].node) {
            if (!df__output_valid(grad_ys[i]) || grad_ys[i].node->graph != g ||
                df_output_dtype(grad_ys[i]) != df_output_dtype(ys[i])) {
                DF_FREE(gys);
                return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: grad_ys[%d] is invalid or its dtype "
                                       "differs from ys[%d]'s (%s)", i, i, df_dtype_name(df_output_dtype(ys[i])));
            }
            gys[i] = grad_ys[i];
        } else {
            gys[i] = df__op1(g, "OnesLike", ys[i]);
        }
    }
    if (df__ok(g)) df__grad_region(g, NULL, n_y, ys, gys, n_x, xs, dxs);
    DF_FREE(gys);
    if (!df__ok(g)) for (int i = 0; i < n_x; i++) dxs[i].node = NULL, dxs[i].index = 0;
    return g->status.code;
}
