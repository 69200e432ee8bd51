/* ==========================================================================================
   src/cuda_graphs.c: CUDA graphs (df_session_options.cuda_graphs)                  >>cugraph
   A GPU partition of a run without control flow (no Switch anywhere in the plan, so no value
   can arrive dead) becomes one _GpuGraph node: its inputs are the values the partition
   receives (Recvs, feeds), its outputs the values it sends or fetches, and it holds the
   partition's other nodes in a topological order. Its kernel runs them one after another (the
   executor's work without the executor), and on the second step whose inputs are alike (dtypes,
   shapes, memory; bytes for host-memory inputs such as shapes) captures their launches as a
   CUDA graph, which later steps replay: the inputs are copied into the buffers the graph reads,
   one launch does the rest. Every buffer the capture touched stays the graph's (memory freed
   while capturing is held, not given back), so replays never write memory others use. A step
   whose inputs differ, or whose variables were replaced (Assign makes a new tensor), captures
   again (at most DF__GG_RECAPTURES times; then, and after a failed capture, the partition runs
   node by node for good). A capture fails where a kernel copies to the host or waits: what
   cannot be captured is run.
   ========================================================================================== */
#ifdef DATAFLOW_CUDA
enum { DF__GG_RECAPTURES = 8, DF__GG_SMALL = 16 };

DF_PRIVATE uint32_t df__gg_mask(const df__gg *gg, int out) { return out ? gg->host_out_mask : gg->host_in; }
static void df__gg_loop_free(struct df__gg_loop *L);
static void df__gg_drop(df__gg *gg) {      /* forgets the captured graph and what it holds */
    if (gg->exec) df_cuda_graph_free((df_cuda *)gg->dev->gpu, gg->exec);
    gg->exec = NULL;
    for (int j = 0; j < gg->n_in; j++) { df_tensor_release(gg->static_in[j]); gg->static_in[j] = NULL; }
    for (int j = 0; gg->static_out && j < gg->n_out; j++) { df_tensor_release(gg->static_out[j]); gg->static_out[j] = NULL; }
    for (int i = 0; i < gg->held.n; i++) df_tensor_release(gg->held.v[i]);
    gg->held.n = 0; gg->held.failed = 0;
    gg->n_vars = 0;
}
DF_PRIVATE void df__gg_free(df__gg *gg) {
    if (!gg) return;
    if (gg->static_in) df__gg_drop(gg);
    for (int j = 0; gg->sig && j < gg->n_in; j++) df_tensor_release(gg->sig[j].bytes);
    DF_FREE(gg->nodes); DF_FREE(gg->kernels); DF_FREE(gg->host_out); DF_FREE(gg->need); DF_FREE(gg->in_start);
    df__exec_free(gg->sub);
    df__gg_loop_free(gg->loop);
    DF_FREE(gg->val_start); DF_FREE(gg->pair); DF_FREE(gg->srcs); DF_FREE(gg->outs); DF_FREE(gg->uses); DF_FREE(gg->sig);
    DF_FREE(gg->static_in); DF_FREE(gg->static_out); DF_FREE(gg->out_owned); DF_FREE(gg->out_idle); DF_FREE(gg->held.v); DF_FREE(gg->vars);
    DF_FREE(gg);
}

/* Whether the inputs are like the last step's; records them as the last step's when `keep`. */
static int df__gg_alike(df__gg *gg, df_tensor *const *in, int keep, df_status *st) {
    int same = 1;
    for (int j = 0; j < gg->n_in; j++) {
        const df_tensor *t = in[j];
        df__gg_sig *s = &gg->sig[j];
        int host = df__tensor_gpu(t) == NULL;
        if (t->ref || s->ref) { if (s->ref != (const void *)t->ref) same = 0; continue; }   /* a variable: the same one */
        if (s->dtype != t->dtype || s->rank != t->rank || s->host != host ||
            memcmp(s->dims, t->dims, (size_t)t->rank * sizeof(int64_t)) ||
            (host && (!s->bytes || s->bytes->nbytes != t->nbytes || memcmp(s->bytes->data, t->data, t->nbytes))))
            same = 0;
    }
    if (same || !keep) return same;
    for (int j = 0; j < gg->n_in; j++) {
        const df_tensor *t = in[j];
        df__gg_sig *s = &gg->sig[j];
        s->ref = t->ref;
        if (t->ref) continue;
        s->dtype = t->dtype; s->rank = t->rank; s->host = df__tensor_gpu(t) == NULL;
        memcpy(s->dims, t->dims, (size_t)t->rank * sizeof(int64_t));
        df_tensor_release(s->bytes);
        s->bytes = NULL;
        if (s->host && t->dtype != DF_STRING && t->dtype != DF_VARIANT) {
            if (!(s->bytes = df__tensor_alloc(NULL, t->dtype, t->rank, t->dims, st))) { s->rank = -1; return 0; }
            memcpy(s->bytes->data, t->data, t->nbytes);
        } else if (s->host) s->rank = -1;                     /* strings, lists (a pointer says nothing of its contents): never alike */
    }
    return 0;
}

/* A variable the capture reads: its tensor and buffer as the capture found them, before any
   node ran (not retained: a reference would make the Apply ops copy the value aside). */
static int df__gg_note_var(df__gg *gg, df__var *v) {
    for (int i = 0; i < gg->n_vars; i++) if (gg->vars[i].v == v) return 1;
    if (!df__grow(&gg->vars, &gg->cap_vars, gg->n_vars + 1, sizeof *gg->vars)) return 0;
    df__spin_lock(&v->lock);
    gg->vars[gg->n_vars].v = v;
    gg->vars[gg->n_vars].value = v->value;
    gg->vars[gg->n_vars].data = v->value ? v->value->data : NULL;
    df__spin_unlock(&v->lock);
    gg->n_vars++;
    return 1;
}

/* Runs the nodes in order on `in` into outs (new references): the executor's work for a node
   (dereferenced variables, the kernel, the output checks) without its bookkeeping. While
   capturing (`record`), the variables read are noted. */
static int df__gg_run_sub(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record) {
    df_status *st = c->st;
    for (int j = 0; record && j < gg->n_in; j++)
        if (in[j]->ref && !df__gg_note_var(gg, in[j]->ref)) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"), 0;
    for (int p = 0; record && p < gg->n_nodes; p++)
        if (!strcmp(gg->nodes[p]->op->name, "VariableV2")) {
            df__var *v = df__step_var(c->step, gg->nodes[p], st);
            if (!v || !df__gg_note_var(gg, v)) { if (!st->code) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return 0; }
        }
    df__step step;
    memset(&step, 0, sizeof step);
    step.x = gg->sub;
    step.session = c->step->session;
    step.scope = c->step->scope;
    step.device = gg->dev;
    step.feeds = in;
    step.fetches = outs;
    step.ipool = c->ipool;
    step.deadline_ms = c->step->deadline_ms;
    step.timeout_ms = c->step->timeout_ms;
    for (int j = 0; j < gg->n_out; j++) outs[j] = NULL;
    if (df__execute(&step, st) == DF_OK) return 1;
    for (int j = 0; j < gg->n_out; j++) { df_tensor_release(outs[j]); outs[j] = NULL; }
    return 0;
}
/* Runs node i of the graph's order: its inputs from `in` (the graph node's) and `vals` (the
   members' values so far), its outputs into vals (new references). kin and kout: room for the
   node's arguments. While capturing (`record`), the variables read are noted. */
static int df__gg_node(df__kctx *c, df__gg *gg, int i, df_tensor *const *in, df_tensor **vals, df_tensor **kin, df_tensor **kout, int record) {
    df_status *st = c->st;
    const df_node *n = gg->nodes[i];
    const df__gg_src *src = gg->srcs + gg->in_start[i];
    int ni = n->n_inputs, no = n->n_outputs, ok = 1;
    for (int k = 0; k < ni; k++) kin[k] = NULL;
    for (int k = 0; k < no; k++) kout[k] = NULL;
    for (int k = 0; ok && k < ni; k++) {
        df_tensor *t = src[k].node < 0 ? in[src[k].out] : vals[gg->val_start[src[k].node] + src[k].out];
        if (!t) { ok = 0; df__fail(st, n, DF_INTERNAL, "Input %d of %s has no value in its GPU graph", k, n->name); break; }
        kin[k] = df_tensor_retain(t);
        if (t->ref && record && !df__gg_note_var(gg, t->ref)) { ok = 0; df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
        if (ok && t->ref && !df__ref_arg(n->op, k) && !(kin[k] = df__deref(kin[k], n, st))) ok = 0;
    }
    if (ok && (n->op->flags & DF__OP_TRANSFER)) {
        /* a pair within the device: the Send keeps nothing, its Recv fills device memory
           with the Send's value element by element (the bytes travel in the launches) */
        if (n->op->flags & DF__OP_RECV) {
            int sp = gg->pair[i];
            const df__gg_src *ss = gg->srcs + gg->in_start[sp];
            const df_tensor *h = ss->node < 0 ? in[ss->out] : vals[gg->val_start[ss->node] + ss->out];
            size_t es = df_dtype_size(h ? h->dtype : DF_FLOAT);
            if (!h || !(kout[0] = df__tensor_alloc(gg->dev->alloc, h->dtype, h->rank, h->dims, st))) ok = 0;
            for (int64_t e = 0; ok && e < h->n; e++)
                if (df_cuda_fill((df_cuda *)gg->dev->gpu, (char *)kout[0]->data + e * es, 1, es, (const char *)h->data + e * es, st)) ok = 0;
        }
    } else if (ok) {
        df__kctx k;
        memset(&k, 0, sizeof k);
        k.in = kin; k.out = kout; k.node = n; k.n_in = ni; k.n_out = no; k.need = gg->need[i];
        k.alloc = gg->dev->alloc; k.step = c->step; k.st = st; k.ipool = c->ipool; k.dev = gg->dev;
        k.host_out = gg->host_out[i];
        k.gpu = k.host_out == ~0u ? NULL : gg->dev->gpu;
        if (k.host_out == ~0u && !(k.alloc = df__host_allocator())) {
            ok = 0;
            df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
        } else {
            gg->dev->ops->run_kernel(gg->dev, gg->kernels[i], &k);
            ok = !st->code && df__check_outputs(n, kout, no, gg->need[i], st) == DF_OK;
        }
    }
    for (int k = 0; k < ni; k++) df_tensor_release(kin[k]);
    for (int o = 0; o < no; o++) {
        if (ok) { df_tensor_release(vals[gg->val_start[i] + o]); vals[gg->val_start[i] + o] = kout[o]; }
        else df_tensor_release(kout[o]);
    }
    return ok;
}
static int df__gg_run_loop(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record);
static int df__gg_run(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record) {
    df_status *st = c->st;
    if (gg->sub) return df__gg_run_sub(c, gg, in, outs, record);
    if (gg->loop) return df__gg_run_loop(c, gg, in, outs, record);
    df_tensor **vals = (df_tensor **)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(df_tensor *));
    int32_t *left = (int32_t *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(int32_t));
    df_tensor **kin = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    df_tensor **kout = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    int ok = vals && left && kin && kout;
    if (vals) memset(vals, 0, (size_t)gg->n_values * sizeof(df_tensor *));   /* (released below either way) */
    if (!ok) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory running a GPU graph's nodes");
    else memcpy(left, gg->uses, (size_t)gg->n_values * sizeof(int32_t));
    for (int i = 0; ok && i < gg->n_nodes; i++) {
        const df_node *n = gg->nodes[i];
        const df__gg_src *src = gg->srcs + gg->in_start[i];
        ok = df__gg_node(c, gg, i, in, vals, kin, kout, record);
        int keep = (n->op->flags & DF__OP_TRANSFER) != 0;   /* (a Send's value: its Recv reads it) */
        for (int k = 0; ok && !keep && k < n->n_inputs; k++)  /* values nothing reads any more go back */
            if (src[k].node >= 0) {
                int v = gg->val_start[src[k].node] + src[k].out;
                if (--left[v] == 0) { df_tensor_release(vals[v]); vals[v] = NULL; }
            }
    }
    for (int j = 0; ok && j < gg->n_out; j++) {
        const df__gg_src *o = &gg->outs[j];
        outs[j] = df_tensor_retain(o->node < 0 ? in[o->out] : vals[gg->val_start[o->node] + o->out]);
    }
    for (int v = 0; vals && v < gg->n_values; v++) df_tensor_release(vals[v]);
    DF_FREE(vals); DF_FREE(left); DF_FREE(kin); DF_FREE(kout);
    return ok;
}

/* A while loop whose predicate is a GPU value. The partition holds the loop and nothing else of
   control flow: one frame, one LoopCond fed through a pair within the device (the predicate's
   copy to host memory), each loop variable an Enter -> Merge -> Switch -> (Exit, body ...
   NextIteration) chain. Its nodes fall in phases: before the loop, the predicate's (from the
   Merges), the body's (from the Switches), after it (from the Exits). Run node by node, the
   predicate is copied to the host each iteration. Captured, the loop becomes a conditional
   WHILE node whose body is one iteration: the body's launches, copies of the next values into
   the loop's own buffers, the predicate's launches again and a kernel that sets the node's
   condition from the predicate on the device; no copy to the host at all. A capture needs the
   loop's variables in device memory, their shapes fixed: then what the loop computes in host
   memory (shapes, axes, constants) is the same in every iteration, and a capture may keep it. */
enum { DF__GL_PRE, DF__GL_PRED, DF__GL_BODY, DF__GL_POST, DF__GL_CTRL };
typedef struct df__gg_loop {
    int n_vars;
    int32_t *var;                    /* per variable: Enter, Merge, Switch, NextIteration, Exit (-1: none) */
    unsigned char *phase;            /* per node of the order */
    int32_t pred;                    /* the value the loop tests (a bool in device memory) */
} df__gg_loop;
static void df__gg_loop_free(df__gg_loop *L) {
    if (!L) return;
    DF_FREE(L->var); DF_FREE(L->phase); DF_FREE(L);
}

/* The plan of gg's loop, or NULL with *why saying what does not fit. */
static df__gg_loop *df__gg_loop_plan(const df__gg *gg, const char **why) {
    int n = gg->n_nodes, lc = -1, n_merge = 0, max_id = 0;
    const char *frame = NULL;
    *why = "out of memory";
    for (int p = 0; p < n; p++) max_id = DF__MAX(max_id, gg->nodes[p]->id);
    df__gg_loop *L = (df__gg_loop *)DF_MALLOC(sizeof *L);
    int32_t *pos = (int32_t *)DF_MALLOC(((size_t)max_id + 1) * sizeof(int32_t));
    unsigned char *inf = (unsigned char *)DF_MALLOC((size_t)n + 1), *after = (unsigned char *)DF_MALLOC((size_t)n + 1);
    int32_t *stack = (int32_t *)DF_MALLOC(((size_t)n + 1) * sizeof(int32_t));
    if (L) memset(L, 0, sizeof *L);
    if (n <= 0) { *why = "no nodes"; goto fail; }
    if (!L || !pos || !inf || !after || !stack || !(L->phase = (unsigned char *)DF_MALLOC((size_t)n + 1))) goto fail;
    for (int i = 0; i <= max_id; i++) pos[i] = -1;
    for (int p = 0; p < n; p++) pos[gg->nodes[p]->id] = p;
    memset(inf, 0, (size_t)n); memset(after, 0, (size_t)n); memset(L->phase, 0xff, (size_t)n);
#define DF__GL_SRC(p, k) (gg->srcs[gg->in_start[p] + (k)])
#define DF__GL_IS(p, flag) ((gg->nodes[p]->op->flags & (flag)) != 0)
    for (int p = 0; p < n; p++) {
        const df_node *x = gg->nodes[p];
        if (DF__GL_IS(p, DF__OP_LOOP_COND)) { if (lc >= 0) { *why = "two loops"; goto fail; } lc = p; }
        if (DF__GL_IS(p, DF__OP_MERGE)) n_merge++;
        if (DF__GL_IS(p, DF__OP_ENTER)) {
            if (frame && strcmp(frame, df__attr_s(x, "frame_name"))) { *why = "two loop frames"; goto fail; }
            frame = df__attr_s(x, "frame_name");
            if (x->out_is_ref[0] && !df__attr_b(x, "is_constant", 0)) { *why = "a reference is a loop variable"; goto fail; }
        }
        /* a variable that only enters to be read is read once, as the loop starts (nothing in
           the loop changes it); one the loop assigns must be read where each reader runs */
        for (int k = 0; k < x->n_inputs; k++)
            if (df__ref_arg(x->op, k) && !DF__GL_IS(p, DF__OP_ENTER | DF__OP_SWITCH | DF__OP_MERGE | DF__OP_EXIT |
                                                       DF__OP_NEXT_ITERATION) && strcmp(x->op->name, "RefIdentity")) {
                *why = "the loop assigns a variable";
                goto fail;
            }
    }
    if (lc < 0 || !n_merge) { *why = "no loop"; goto fail; }
    /* the predicate: LoopCond <- its pair's Recv <- Send <- a device-memory bool */
    {
        df__gg_src r = DF__GL_SRC(lc, 0);
        int sp = r.node >= 0 && DF__GL_IS(r.node, DF__OP_RECV) ? gg->pair[r.node] : -1;
        df__gg_src v = sp >= 0 ? DF__GL_SRC(sp, 0) : (df__gg_src){-1, 0};
        if (v.node < 0 || gg->host_out[v.node] == ~0u || (gg->host_out[v.node] >> DF__MIN(v.out, 31) & 1) ||
            gg->nodes[v.node]->out_types[v.out] != DF_BOOL) { *why = "the predicate is not a bool the GPU makes"; goto fail; }
        L->pred = gg->val_start[v.node] + v.out;
        L->phase[lc] = L->phase[r.node] = L->phase[sp] = DF__GL_CTRL;
        inf[lc] = inf[r.node] = inf[sp] = 1;
    }
    if (!(L->var = (int32_t *)DF_MALLOC((size_t)n_merge * 5 * sizeof(int32_t)))) goto fail;
    for (int p = 0; p < n; p++) {
        if (!DF__GL_IS(p, DF__OP_MERGE)) continue;
        int32_t *v = L->var + 5 * L->n_vars++;
        v[0] = v[1] = v[2] = v[3] = v[4] = -1;
        v[1] = p;
        for (int k = 0; k < gg->nodes[p]->n_inputs && k < 3; k++) {
            df__gg_src a = DF__GL_SRC(p, k);
            if (a.node < 0 || gg->nodes[p]->n_inputs != 2) break;
            if (DF__GL_IS(a.node, DF__OP_ENTER) && !df__attr_b(gg->nodes[a.node], "is_constant", 0)) v[0] = a.node;
            if (DF__GL_IS(a.node, DF__OP_NEXT_ITERATION)) v[3] = a.node;
        }
        for (int q = 0; q < n; q++) {
            if (DF__GL_IS(q, DF__OP_SWITCH) && gg->nodes[q]->n_inputs == 2 && DF__GL_SRC(q, 0).node == p && DF__GL_SRC(q, 0).out == 0 &&
                DF__GL_SRC(q, 1).node == lc) { if (v[2] >= 0) v[2] = -2; else v[2] = q; }
        }
        for (int q = 0; v[2] >= 0 && q < n; q++)
            if (DF__GL_IS(q, DF__OP_EXIT) && DF__GL_SRC(q, 0).node == v[2] && DF__GL_SRC(q, 0).out == 0) { if (v[4] >= 0) v[2] = -2; else v[4] = q; }
        if (v[0] < 0 || v[2] < 0 || v[3] < 0) { *why = "a loop variable is not Enter, Merge, Switch, NextIteration"; goto fail; }
        for (int k = 0; k < 5; k++) if (v[k] >= 0) { L->phase[v[k]] = DF__GL_CTRL; inf[v[k]] = 1; }
    }
    /* every other control-flow node: a constant Enter, or not this kind of loop */
    for (int p = 0; p < n; p++) {
        if (L->phase[p] == DF__GL_CTRL) continue;
        if (DF__GL_IS(p, DF__OP_ENTER) && df__attr_b(gg->nodes[p], "is_constant", 0)) { L->phase[p] = DF__GL_CTRL; inf[p] = 1; continue; }
        if (DF__GL_IS(p, DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT | DF__OP_NEXT_ITERATION | DF__OP_LOOP_COND | DF__OP_TRANSFER)) {
            *why = "other control flow or transfers beside the loop";
            goto fail;
        }
    }
    /* in the frame: what the loop's nodes feed, up to the Exits; after it: what the Exits feed.
       (The order is topological but for NextIteration's edges, which lead to Merges.) */
    for (int p = 0; p < n; p++) {
        const df_node *x = gg->nodes[p];
        if (L->phase[p] == DF__GL_CTRL) { after[p] = DF__GL_IS(p, DF__OP_EXIT); continue; }
        for (int k = 0; k < x->n_inputs + x->n_controls; k++) {
            int u = k < x->n_inputs ? DF__GL_SRC(p, k).node : pos[x->controls[k - x->n_inputs]->id];
            if (u < 0) continue;
            if (after[u]) after[p] = 1;
            else if (inf[u] && !DF__GL_IS(u, DF__OP_EXIT)) inf[p] = 1;
        }
        if (inf[p] && after[p]) { *why = "a node reads values of the loop and after it"; goto fail; }
    }
    /* the predicate's nodes: what the tested value waits for, back to the Merges */
    {
        int top = 0;
        int sp = gg->pair[DF__GL_SRC(lc, 0).node];
        stack[top++] = DF__GL_SRC(sp, 0).node;
        while (top) {
            int u = stack[--top];
            if (L->phase[u] == DF__GL_CTRL || L->phase[u] == DF__GL_PRED) continue;
            if (!inf[u]) { *why = "the predicate reads a value from outside the loop without an Enter"; goto fail; }
            L->phase[u] = DF__GL_PRED;
            const df_node *x = gg->nodes[u];
            for (int k = 0; k < x->n_inputs + x->n_controls; k++) {
                int w = k < x->n_inputs ? DF__GL_SRC(u, k).node : pos[x->controls[k - x->n_inputs]->id];
                if (w >= 0) stack[top++] = w;
            }
        }
    }
    for (int p = 0; p < n; p++)
        if (L->phase[p] == 0xff) L->phase[p] = (unsigned char)(inf[p] ? DF__GL_BODY : after[p] ? DF__GL_POST : DF__GL_PRE);
    /* what each phase may read: the loop's values flow only through its control nodes */
    for (int p = 0; p < n; p++) {
        const df_node *x = gg->nodes[p];
        int ph = L->phase[p];
        for (int k = 0; k < x->n_inputs; k++) {
            df__gg_src a = DF__GL_SRC(p, k);
            int up = a.node < 0 ? -1 : L->phase[a.node];
            const df_node *u = a.node < 0 ? NULL : gg->nodes[a.node];
            int const_enter = u && (u->op->flags & DF__OP_ENTER) && df__attr_b(u, "is_constant", 0);
            int fine = 1;
            if (ph == DF__GL_PRE) fine = up < 0 || up == DF__GL_PRE;
            else if (ph == DF__GL_POST) fine = up < 0 || up == DF__GL_PRE || up == DF__GL_POST || (u->op->flags & DF__OP_EXIT);
            else if (ph == DF__GL_PRED) fine = up == DF__GL_PRED || const_enter || (u && (u->op->flags & DF__OP_MERGE) && a.out == 0);
            else if (ph == DF__GL_BODY) fine = up == DF__GL_BODY || const_enter || (u && (u->op->flags & DF__OP_SWITCH) && a.out == 1);
            else if (x->op->flags & DF__OP_NEXT_ITERATION)
                fine = up == DF__GL_BODY || const_enter || (u && (u->op->flags & DF__OP_SWITCH) && a.out == 1);
            if (!fine) { *why = "a value crosses the loop's boundary outside its control nodes"; goto fail; }
        }
        for (int k = 0; k < x->n_controls; k++) {
            int u = pos[x->controls[k]->id];
            if (u < 0) continue;
            int up = L->phase[u];
            int fine = ph == DF__GL_POST || up == DF__GL_PRE ||
                       ((ph == DF__GL_PRED || ph == DF__GL_BODY || ph == DF__GL_CTRL) && inf[u] && !(gg->nodes[u]->op->flags & DF__OP_EXIT) &&
                        (ph != DF__GL_PRED || up != DF__GL_BODY));
            if (!fine) { *why = "a control edge crosses the loop's boundary"; goto fail; }
        }
    }
    for (int j = 0; j < gg->n_out; j++) {
        int u = gg->outs[j].node;
        if (u >= 0 && inf[u] && !DF__GL_IS(u, DF__OP_EXIT)) { *why = "a value leaves from inside the loop"; goto fail; }
    }
#undef DF__GL_SRC
#undef DF__GL_IS
    DF_FREE(pos); DF_FREE(inf); DF_FREE(after); DF_FREE(stack);
    return L;
fail:
    df__gg_loop_free(L);
    DF_FREE(pos); DF_FREE(inf); DF_FREE(after); DF_FREE(stack);
    return NULL;
}

static int df__gg_same_shape(const df_tensor *a, const df_tensor *b) {
    return a->dtype == b->dtype && a->rank == b->rank && !memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int64_t));
}
static int df__gg_overlap(const df_tensor *a, const df_tensor *b) {
    const char *pa = (const char *)a->data, *pb = (const char *)b->data;
    return a->nbytes && b->nbytes && pa < pb + b->nbytes && pb < pa + a->nbytes;
}

/* Runs gg's loop plan (see above). Node by node, the loop's variables are the values the body
   makes; captured (`record`), they live in buffers of the loop's own, the body is recorded once
   as the conditional node's body, and the predicate's nodes twice (before the node, and at the
   end of its body). */
static int df__gg_run_loop(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record) {
    df_status *st = c->st;
    const df__gg_loop *L = gg->loop;
    df_cuda *gpu = (df_cuda *)gg->dev->gpu;
    int n = gg->n_nodes, nv = L->n_vars;
    df_tensor **vals = (df_tensor **)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(df_tensor *));
    df_tensor **kin = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    df_tensor **kout = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    df_tensor **cur = (df_tensor **)DF_MALLOC((size_t)(2 * nv + 1) * sizeof(df_tensor *)), **stage = cur ? cur + nv : NULL;
    int ok = vals && kin && kout && cur;
    if (vals) memset(vals, 0, (size_t)gg->n_values * sizeof(df_tensor *));   /* (released below either way) */
    if (cur) memset(cur, 0, (size_t)(2 * nv) * sizeof(df_tensor *));
    if (!ok) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory running a GPU graph's loop");
#define DF__GL_VAL(a) ((a).node < 0 ? in[(a).out] : vals[gg->val_start[(a).node] + (a).out])
#define DF__GL_SET(p, t) do { int v_ = gg->val_start[p]; df_tensor_release(vals[v_]); vals[v_] = df_tensor_retain(t); } while (0)
    for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_PRE) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
    for (int p = 0; ok && p < n; p++)                          /* the Enters */
        if ((gg->nodes[p]->op->flags & DF__OP_ENTER)) {
            df_tensor *t = DF__GL_VAL(gg->srcs[gg->in_start[p]]);
            if (!t) { ok = df__fail(st, gg->nodes[p], DF_INTERNAL, "Enter %s has no value in its GPU graph", gg->nodes[p]->name) == DF_OK; break; }
            if (t->ref && record && !df__gg_note_var(gg, t->ref)) { ok = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory") == DF_OK; break; }
            if (!(t = df__deref(df_tensor_retain(t), gg->nodes[p], st))) { ok = 0; break; }
            DF__GL_SET(p, t);
            df_tensor_release(t);
        }
    for (int i = 0; ok && i < nv; i++) {
        df_tensor *t = vals[gg->val_start[L->var[5 * i]]];
        if (!record) { cur[i] = df_tensor_retain(t); continue; }
        if (!df__tensor_gpu(t)) { df_status_set(st, DF_UNIMPLEMENTED, "Loop variable %d is in host memory", i); ok = 0; break; }
        if (!(cur[i] = df__tensor_alloc(gg->dev->alloc, t->dtype, t->rank, t->dims, st)) ||
            (t->nbytes && df_cuda_memcpy_d2d(gpu, cur[i]->data, t->data, t->nbytes, st))) ok = 0;
    }
    for (int64_t it = 0; ok; it++) {
        for (int i = 0; i < nv; i++) DF__GL_SET(L->var[5 * i + 1], cur[i]);
        for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_PRED) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
        const df_tensor *pt = ok ? vals[L->pred] : NULL;
        if (ok && (!pt || pt->dtype != DF_BOOL || pt->n != 1 || !df__tensor_gpu(pt))) {
            df_status_set(st, DF_INVALID_ARGUMENT, "A loop's predicate must be one bool, made on the GPU");
            ok = 0;
        }
        if (!ok) break;
        if (record) {
            if (it == 1) { ok = df_cuda_capture_loop_end(gpu, pt->data, st) == DF_OK; break; }
            if (df_cuda_capture_loop_begin(gpu, pt->data, st)) { ok = 0; break; }
        } else {
            unsigned char go = 0;
            if (df_cuda_memcpy_d2h(gpu, &go, pt->data, 1, st)) { ok = 0; break; }
            if (!go) break;
            if (__atomic_load_n(&c->step->aborted, __ATOMIC_ACQUIRE)) {
                if (!st->code) df_status_set(st, DF_CANCELLED, "The step was cancelled inside a GPU loop");
                ok = 0;
                break;
            }
        }
        for (int i = 0; i < nv; i++) {                          /* the Switches' true sides */ int v_ = gg->val_start[L->var[5 * i + 2]] + 1; df_tensor_release(vals[v_]); vals[v_] = df_tensor_retain(cur[i]); }
        for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_BODY) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
        int staged = 0;
        for (int i = 0; ok && i < nv; i++) {
            df_tensor *nx = DF__GL_VAL(gg->srcs[gg->in_start[L->var[5 * i + 3]]]);
            if (!nx) { ok = df__fail(st, gg->nodes[L->var[5 * i + 3]], DF_INTERNAL, "NextIteration has no value in its GPU graph") == DF_OK; break; }
            if (!record) { stage[i] = df_tensor_retain(nx); continue; }
            if (nx->ref || !df__tensor_gpu(nx) || !df__gg_same_shape(nx, cur[i])) {
                df_status_set(st, DF_UNIMPLEMENTED, "Loop variable %d changes shape or memory", i);
                ok = 0;
                break;
            }
            for (int j = 0; j < nv; j++)
                if (df__gg_overlap(nx, cur[j]) && !(i == j && nx->data == cur[j]->data)) staged = 1;
        }
        if (ok && !record) {
            for (int i = 0; i < nv; i++) { df_tensor_release(cur[i]); cur[i] = stage[i]; stage[i] = NULL; }
        } else if (ok) {
            /* the next values into the loop's buffers; through copies of their own when one is a
               loop buffer itself (variables swapped, say) */
            for (int i = 0; ok && i < nv; i++) {
                df_tensor *nx = DF__GL_VAL(gg->srcs[gg->in_start[L->var[5 * i + 3]]]);
                if (staged) {
                    if (!(stage[i] = df__tensor_alloc(gg->dev->alloc, nx->dtype, nx->rank, nx->dims, st)) ||
                        (nx->nbytes && df_cuda_memcpy_d2d(gpu, stage[i]->data, nx->data, nx->nbytes, st))) ok = 0;
                } else if (nx->data != cur[i]->data && nx->nbytes && df_cuda_memcpy_d2d(gpu, cur[i]->data, nx->data, nx->nbytes, st)) ok = 0;
            }
            for (int i = 0; ok && staged && i < nv; i++)
                if (cur[i]->nbytes && df_cuda_memcpy_d2d(gpu, cur[i]->data, stage[i]->data, cur[i]->nbytes, st)) ok = 0;
            for (int i = 0; i < nv; i++) { df_tensor_release(stage[i]); stage[i] = NULL; }
        }
        for (int p = 0; p < n; p++)                             /* the iteration's values go back */
            if (L->phase[p] == DF__GL_PRED || L->phase[p] == DF__GL_BODY ||
                (L->phase[p] == DF__GL_CTRL && !(gg->nodes[p]->op->flags & DF__OP_ENTER)))
                for (int o = 0; o < gg->nodes[p]->n_outputs; o++) { df_tensor_release(vals[gg->val_start[p] + o]); vals[gg->val_start[p] + o] = NULL; }
    }
    for (int i = 0; ok && i < nv; i++) if (L->var[5 * i + 4] >= 0) DF__GL_SET(L->var[5 * i + 4], cur[i]);
    for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_POST) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
    for (int j = 0; ok && j < gg->n_out; j++)
        if (!DF__GL_VAL(gg->outs[j])) ok = df__fail(st, gg->nodes[gg->outs[j].node], DF_INTERNAL, "An output of a GPU graph's loop has no value") == DF_OK;
    for (int j = 0; ok && j < gg->n_out; j++) outs[j] = df_tensor_retain(DF__GL_VAL(gg->outs[j]));
#undef DF__GL_VAL
#undef DF__GL_SET
    for (int v = 0; vals && v < gg->n_values; v++) df_tensor_release(vals[v]);
    for (int i = 0; cur && i < 2 * nv; i++) df_tensor_release(cur[i]);
    DF_FREE(vals); DF_FREE(kin); DF_FREE(kout); DF_FREE(cur);
    if (!ok && !st->code) df_status_set(st, DF_INTERNAL, "A GPU graph's loop failed");
    return ok;
}

static void df__gg_count(df__kctx *c, int which) {
    __atomic_add_fetch(&c->step->session->gg_stats[which], 1, __ATOMIC_RELAXED);
}

/* Captures the nodes' launches on the inputs and, when that works, keeps the graph. */
static int df__gg_capture(df__kctx *c, df__gg *gg) {
    df_cuda *gpu = (df_cuda *)gg->dev->gpu;
    df_status st;
    df_status_clear(&st);
    df_tensor **in = (df_tensor **)DF_MALLOC((size_t)(gg->n_in + 1) * sizeof(df_tensor *));
    df_tensor **outs = (df_tensor **)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    int ok = in && outs;
    if (outs) memset(outs, 0, (size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    for (int j = 0; ok && j < gg->n_in; j++) {     /* the buffers the graph will read */
        df_tensor *t = c->in[j];
        in[j] = t;
        if (df__tensor_gpu(t) && !(gg->static_in[j] = df__tensor_alloc(gg->dev->alloc, t->dtype, t->rank, t->dims, &st))) ok = 0;
        if (gg->static_in[j]) in[j] = gg->static_in[j];
    }
    if (ok) {
        gg->held.alloc = gg->dev->alloc;
        df__tls_hold = &gg->held;
        ok = df_cuda_capture_begin(gpu, &st) == DF_OK;
        if (ok) {
            df__kctx k = *c;
            k.st = &st;
            int ran = df__gg_run(&k, gg, in, outs, 1);
            df_status end;
            df_cuda_capture_end(gpu, &gg->exec, &end);
            ok = ran && gg->exec && !gg->held.failed;
        }
        df__tls_hold = NULL;
    }
    if (ok) {
        /* device outputs (made by the graph, or its input buffers) but variables' values are
           the graph's memory, which the next replay rewrites */
        for (int j = 0; j < gg->n_out; j++) {
            const df_tensor *t = outs[j], *b = t->base ? t->base : t;
            int owned = df__tensor_gpu(t) != NULL;
            for (int i = 0; owned && i < gg->n_vars; i++) if (gg->vars[i].value == b || gg->vars[i].value == t) owned = 0;
            gg->static_out[j] = outs[j];
            gg->out_owned[j] = (unsigned char)owned;
        }
        for (int j = 0; j < gg->n_out; j++) gg->out_idle[j] = __atomic_load_n(&gg->static_out[j]->refs, __ATOMIC_ACQUIRE);
    } else {
        if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph for %d nodes on %s: %s\n", gg->n_nodes, gg->dev->name, st.code ? st.message : "(capture failed)");
        for (int j = 0; outs && j < gg->n_out; j++) if (outs[j]) df_tensor_release(outs[j]);
        df__gg_drop(gg);
        gg->off = 1;
        df__gg_count(c, 3);
    }
    DF_FREE(in); DF_FREE(outs);
    return ok;
}

/* Whether the captured graph may run now: the variables it read hold the same tensors, and no
   output it made is still held from an earlier step. */
static int df__gg_replayable(df__gg *gg, int *stale) {
    *stale = 0;
    for (int i = 0; i < gg->n_vars; i++) {
        df__var *v = gg->vars[i].v;
        df__spin_lock(&v->lock);
        int same = v->value == gg->vars[i].value && v->value && v->value->data == gg->vars[i].data;
        df__spin_unlock(&v->lock);
        if (!same) { *stale = 1; return 0; }
    }
    for (int j = 0; j < gg->n_out; j++)
        if (gg->out_owned[j] && __atomic_load_n(&gg->static_out[j]->refs, __ATOMIC_ACQUIRE) != gg->out_idle[j]) return 0;
    return 1;
}
static int df__gg_replay(df__kctx *c, df__gg *gg) {
    df_cuda *gpu = (df_cuda *)gg->dev->gpu;
    for (int j = 0; j < gg->n_in; j++)
        if (gg->static_in[j] && gg->static_in[j]->data != c->in[j]->data &&
            df_cuda_memcpy_d2d(gpu, gg->static_in[j]->data, c->in[j]->data, c->in[j]->nbytes, c->st)) return 0;
    if (df_cuda_graph_launch(gpu, gg->exec, c->st)) return 0;
    for (int j = 0; j < gg->n_out; j++) c->out[j] = df_tensor_retain(gg->static_out[j]);
    return 1;
}

DF_PRIVATE void df__gk_gpu_graph(df__kctx *c) {
    df__gg *gg = c->node->gg;
    if (!gg) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "_GpuGraph nodes are made by the runtime, not by graphs"); return; }
    int expected = 0;
    if (!__atomic_compare_exchange_n(&gg->busy, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        df__gg_count(c, 2);                       /* another thread has the graph: run the nodes */
        df__gg_run(c, gg, c->in, c->out, 0);
        return;
    }
    int done = 0;
    if (!gg->off) {
        int alike = df__gg_alike(gg, c->in, !gg->exec, c->st), stale = 0;
        if (gg->exec && alike && df__gg_replayable(gg, &stale)) {
            done = df__gg_replay(c, gg);
            if (done) df__gg_count(c, 1);
            else gg->off = 1;                      /* (c->st says why; the step fails) */
        } else if (gg->exec && (!alike || stale)) {
            df__gg_drop(gg);                       /* new shapes or new variables: capture again */
            gg->alike = 0;
            if (++gg->recaptures > DF__GG_RECAPTURES) gg->off = 1;
            else df__gg_alike(gg, c->in, 1, c->st);
            gg->alike = 1;
        } else if (!gg->exec && alike && gg->alike >= 1) {
            if (df__gg_capture(c, gg)) {
                df__gg_count(c, 0);
                done = df__gg_replay(c, gg);
                if (!done) gg->off = 1;
            }
        } else if (!gg->exec) {
            gg->alike = alike ? gg->alike + 1 : 1;
        }
    }
    __atomic_store_n(&gg->busy, 0, __ATOMIC_RELEASE);
    if (!done && !c->st->code) {
        df__gg_count(c, 2);
        df__gg_run(c, gg, c->in, c->out, 0);
    }
}

/* The partition's nodes that a GPU graph may hold: no control flow, no state but variables read
   and updated in place (the Apply ops), a kernel for the GPU; fed placeholders and Send/Recv
   stay outside. Returns 0 (no graph) when any other node is there. */
static int df__gg_member(const df_node *n, const df__device *d, int *member, int *loops) {
    static const char *const stateful_ok[] = {"VariableV2", "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam"};
    unsigned f = n->op->flags;
    *member = 0;
    if (f & DF__OP_TRANSFER) return 1;         /* (a pair within the device may join: below) */
    if (f & (DF__OP_CONTROL_TRIGGER | DF__OP_LOOP_COUNT)) return 0;
    if (f & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT | DF__OP_NEXT_ITERATION | DF__OP_LOOP_COND)) *loops = 1;
    /* the stateless random ops: made on the host and copied up (src/kernels/gpu.c), a copy a
       capture refuses, so they are left alone as the stateful random ops are */
    if (!strncmp(n->op->name, "Stateless", 9)) return 0;
    if (f & DF__OP_STATEFUL) {
        int ok = 0;
        for (size_t i = 0; i < sizeof stateful_ok / sizeof *stateful_ok; i++) ok |= !strcmp(n->op->name, stateful_ok[i]);
        if (!ok) return 0;
    }
    if (!df__node_kernel(n, d->kernel_type, NULL, NULL, NULL)) return 0;
    *member = 1;
    return 1;
}

/* What the phases of df__gg_rewrite share; the cleanup frees what is not NULL. */
typedef struct df__gg_build {
    df_session *ss;
    df_graph *g;
    df__device *d;
    const df_output *feeds;
    df_output *fetches;
    int n_feeds, n_fetches;
    int n, n_s;                  /* the partition's nodes; the members among them */
    int loops, pairs, pred_pairs;   /* loop nodes; Send/Recv pairs within the device; those of loop predicates */
    unsigned char *in_s;         /* per node id: a member */
    int32_t *order;              /* the members in a topological order (a stack before) */
    int32_t *deg;                /* scratch: marks, in-degrees, then pos */
    int32_t *pos;                /* = deg: node id -> position in order, -1 outside */
    df__gg *gg;
    df_output *ext;              /* the node's inputs, until node->inputs holds them */
    int n_ext, n_srcs;
    int32_t *out_of;             /* per member value: the node's output that carries it, or -1 */
    df_node *node, **all;
} df__gg_build;

/* The members: every node not fed, when each may join (df__gg_member); 0 when one may not. */
static int df__gg_pick_members(df__gg_build *b) {
    const df_graph *g = b->g;
    int n = b->n, n_s = 0;
    unsigned char *in_s = b->in_s;
    memset(in_s, 0, (size_t)n);
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        int fed = 0, member = 0;
        for (int f = 0; f < b->n_feeds && !fed; f++) fed = b->feeds[f].node == x;
        if (fed) continue;
        if (!df__gg_member(x, b->d, &member, &b->loops)) {
            if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: node %s (%s)\n", b->d->name, x->name, x->op->name);
            b->n_s = 0;
            return 0;
        }
        in_s[i] = (unsigned char)member;
        n_s += member;
    }
    b->n_s = n_s;
    return 1;
}

/* A Send to this device's other memory (a host value a kernel reads in device memory, say)
   comes back through its Recv: it and everything it waits for stay outside. */
static void df__gg_place_device_pairs(df__gg_build *b) {
    const df_graph *g = b->g;
    int n = b->n, n_s = b->n_s;
    unsigned char *in_s = b->in_s;
    int32_t *order = b->order, *deg = b->deg;
    int top = 0;
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if ((x->op->flags & DF__OP_TRANSFER) && x->n_inputs > 0 &&
            !strcmp(df__attr_s(x, "send_device"), df__attr_s(x, "recv_device"))) {
            /* a small host value (a size, a shape) a kernel reads in device memory: the pair
               joins the graph, its copy made by fills that carry the bytes */
            const df__shape *sh = &x->inputs[0].node->out_shapes[x->inputs[0].index];
            int64_t count = df__shape_count(sh);
            int r_at = -1, to_loop_cond = 0;
            for (int r = 0; r < n && r_at < 0; r++)
                if (g->nodes[r]->op->flags & DF__OP_RECV && df__attr_i(g->nodes[r], "_key", -2) == df__attr_i(x, "_key", -1)) r_at = r;
            for (int r = 0; r_at >= 0 && r < n; r++)        /* read by LoopConds alone */
                for (int k = 0; k < g->nodes[r]->n_inputs; k++)
                    if (g->nodes[r]->inputs[k].node == g->nodes[r_at]) to_loop_cond = (g->nodes[r]->op->flags & DF__OP_LOOP_COND) && to_loop_cond >= 0 ? 1 : -1;
            if (!strcmp(x->op->name, "_Send") && to_loop_cond == 1 && x->inputs[0].node->out_types[x->inputs[0].index] == DF_BOOL) {
                /* a loop's predicate made on the GPU: the loop's plan below reads it */
                b->pred_pairs++;
                if (!in_s[i]) { in_s[i] = 1; n_s++; }
                if (!in_s[r_at]) { in_s[r_at] = 1; n_s++; }
                continue;
            }
            b->pairs = 1;
            if (!strcmp(x->op->name, "_HostSend") && count >= 0 && count <= DF__GG_SMALL) {
                in_s[i] = 1;
                n_s++;
                for (int r = 0; r < n; r++)
                    if (g->nodes[r]->op->flags & DF__OP_RECV && df__attr_i(g->nodes[r], "_key", -2) == df__attr_i(x, "_key", -1) &&
                        !in_s[r]) { in_s[r] = 1; n_s++; }
            } else order[top++] = i;
        }
    }
    memset(deg, 0, (size_t)n * sizeof(int32_t));               /* (deg: seen) */
    for (int i = 0; i < top; i++) deg[order[i]] = 1;
    while (top) {
        const df_node *x = g->nodes[order[--top]];
        if (in_s[x->id]) { in_s[x->id] = 0; n_s--; }
        for (int k = 0; k < x->n_inputs + x->n_controls; k++) {
            int u = k < x->n_inputs ? x->inputs[k].node->id : x->controls[k - x->n_inputs]->id;
            if (!deg[u]) { deg[u] = 1; order[top++] = u; }
        }
    }
    b->n_s = n_s;
}

/* a topological order of the members (data and control edges among them) into order; returns
   how many it holds (fewer than the members: a cycle), -1 when out of memory */
static int df__gg_order_members(df__gg_build *b) {
    const df_graph *g = b->g;
    int n = b->n;
    const unsigned char *in_s = b->in_s;
    int32_t *order = b->order, *deg = b->deg;
    memset(deg, 0, (size_t)n * sizeof(int32_t));
#define DF__GG_EDGE(u) (in_s[(u)->id] && !((u)->op->flags & DF__OP_NEXT_ITERATION))   /* (loops: back edges aside) */
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (!in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (DF__GG_EDGE(x->inputs[k].node)) deg[i]++;
        for (int k = 0; k < x->n_controls; k++) if (DF__GG_EDGE(x->controls[k])) deg[i]++;
    }
    /* consumers among the members (CSR over node ids), then Kahn's walk */
    int32_t *cstart = (int32_t *)DF_MALLOC(((size_t)n + 2) * sizeof(int32_t)), *cons = NULL;
    if (!cstart) return -1;
    memset(cstart, 0, ((size_t)n + 2) * sizeof(int32_t));
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (!in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (DF__GG_EDGE(x->inputs[k].node)) cstart[x->inputs[k].node->id + 2]++;
        for (int k = 0; k < x->n_controls; k++) if (DF__GG_EDGE(x->controls[k])) cstart[x->controls[k]->id + 2]++;
    }
    for (int i = 0; i < n; i++) cstart[i + 2] += cstart[i + 1];
    if (!(cons = (int32_t *)DF_MALLOC(((size_t)cstart[n + 1] + 1) * sizeof(int32_t)))) { DF_FREE(cstart); return -1; }
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (!in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (DF__GG_EDGE(x->inputs[k].node)) cons[cstart[x->inputs[k].node->id + 1]++] = i;
        for (int k = 0; k < x->n_controls; k++) if (DF__GG_EDGE(x->controls[k])) cons[cstart[x->controls[k]->id + 1]++] = i;
#undef DF__GG_EDGE
    }
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) if (in_s[i] && !deg[i]) order[tail++] = i;
    while (head < tail) {
        int u = order[head++];
        for (int e = cstart[u]; e < cstart[u + 1]; e++) if (--deg[cons[e]] == 0) order[tail++] = cons[e];
    }
    DF_FREE(cstart); DF_FREE(cons);
    return tail;
}

/* The graph and its per-member tables, in that order: kernels, memory, a Recv's Send, where
   each input comes from (a member's output or one of ext); 0 when out of memory. */
static int df__gg_make_tables(df__gg_build *b) {
    const df_graph *g = b->g;
    int n = b->n, n_s = b->n_s;
    const int32_t *order = b->order;
    df__gg *gg = b->gg = (df__gg *)DF_MALLOC(sizeof *gg);
    if (!gg) return 0;
    memset(gg, 0, sizeof *gg);
    gg->dev = b->d;
    gg->n_nodes = n_s;
    int n_srcs = 0;
    gg->max_io = 1;
    for (int p = 0; p < n_s; p++) {
        const df_node *x = g->nodes[order[p]];
        n_srcs += x->n_inputs;
        gg->max_io = DF__MAX(gg->max_io, DF__MAX(x->n_inputs, x->n_outputs));
    }
    gg->nodes = (const df_node **)DF_MALLOC((size_t)n_s * sizeof(df_node *));
    gg->kernels = (df__kernel_fn *)DF_MALLOC((size_t)n_s * sizeof(df__kernel_fn));
    gg->host_out = (uint32_t *)DF_MALLOC((size_t)n_s * sizeof(uint32_t));
    gg->need = (uint32_t *)DF_MALLOC((size_t)n_s * sizeof(uint32_t));
    gg->in_start = (int32_t *)DF_MALLOC((size_t)n_s * sizeof(int32_t));
    gg->val_start = (int32_t *)DF_MALLOC((size_t)n_s * sizeof(int32_t));
    gg->pair = (int32_t *)DF_MALLOC((size_t)n_s * sizeof(int32_t));
    gg->srcs = (df__gg_src *)DF_MALLOC((size_t)(n_srcs + 1) * sizeof(df__gg_src));
    if (!gg->nodes || !gg->kernels || !gg->host_out || !gg->need || !gg->in_start || !gg->val_start || !gg->pair || !gg->srcs) return 0;
    int32_t *pos = b->pos = b->deg;                              /* node id -> position in order */
    for (int i = 0; i < n; i++) pos[i] = -1;
    for (int p = 0; p < n_s; p++) pos[order[p]] = p;
    /* external inputs: distinct (node, output) outside the members, in order of first use */
    df_output *ext = b->ext = (df_output *)DF_MALLOC((size_t)(n_srcs + 1) * sizeof(df_output));
    if (!ext) return 0;
    int n_ext = 0, s_i = 0;
    for (int p = 0; p < n_s; p++) {
        const df_node *x = g->nodes[order[p]];
        int host_only = 0;
        gg->nodes[p] = x;
        gg->kernels[p] = df__node_kernel(x, b->d->kernel_type, NULL, &gg->host_out[p], &host_only);
        if (host_only) gg->host_out[p] = ~0u;
        gg->need[p] = 0;
        gg->pair[p] = -1;
        if (x->op->flags & DF__OP_RECV)
            for (int q = 0; q < n_s; q++)
                if ((g->nodes[order[q]]->op->flags & DF__OP_TRANSFER) && g->nodes[order[q]]->n_inputs > 0 &&
                    df__attr_i(g->nodes[order[q]], "_key", -1) == df__attr_i(x, "_key", -2)) gg->pair[p] = q;
        gg->in_start[p] = s_i;
        gg->val_start[p] = gg->n_values;
        gg->n_values += x->n_outputs;
        for (int k = 0; k < x->n_inputs; k++, s_i++) {
            df_output o = x->inputs[k];
            if (pos[o.node->id] >= 0) { gg->srcs[s_i] = (df__gg_src){pos[o.node->id], o.index}; continue; }
            int e = 0;
            while (e < n_ext && !(ext[e].node == o.node && ext[e].index == o.index)) e++;
            if (e == n_ext) ext[n_ext++] = o;
            gg->srcs[s_i] = (df__gg_src){-1, e};
        }
    }
    b->n_ext = n_ext;
    b->n_srcs = s_i;
    return 1;
}

/* outputs: member values read outside (by other nodes or fetches); per value, its reads;
   0 when out of memory */
static int df__gg_find_outputs(df__gg_build *b) {
    const df_graph *g = b->g;
    int n = b->n;
    df__gg *gg = b->gg;
    const int32_t *pos = b->pos;
    gg->uses = (int32_t *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(int32_t));
    int32_t *out_of = b->out_of = (int32_t *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(int32_t));
    gg->outs = (df__gg_src *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(df__gg_src));
    if (!gg->uses || !out_of || !gg->outs) return 0;
    memset(gg->uses, 0, (size_t)gg->n_values * sizeof(int32_t));
    for (int v = 0; v < gg->n_values; v++) out_of[v] = -1;
    for (int s = 0; s < b->n_srcs; s++)
        if (gg->srcs[s].node >= 0) {
            int p = gg->srcs[s].node;
            gg->uses[gg->val_start[p] + gg->srcs[s].out]++;
            gg->need[p] |= 1u << DF__MIN(gg->srcs[s].out, 31);
        }
#define DF__GG_OUT(nd, idx) do {                                                                  \
        int p_ = pos[(nd)->id], v_ = gg->val_start[p_] + (idx);                                 \
        if (out_of[v_] < 0) { out_of[v_] = gg->n_out; gg->outs[gg->n_out++] = (df__gg_src){p_, (idx)}; \
                              gg->uses[v_]++; gg->need[p_] |= 1u << DF__MIN((idx), 31); }        \
    } while (0)
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (b->in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (pos[x->inputs[k].node->id] >= 0) DF__GG_OUT(x->inputs[k].node, x->inputs[k].index);
    }
    for (int f = 0; f < b->n_fetches; f++) if (pos[b->fetches[f].node->id] >= 0) DF__GG_OUT(b->fetches[f].node, b->fetches[f].index);
#undef DF__GG_OUT
    return 1;
}

/* memory types of the node's arguments: as its members take and make them (one bit for
   arguments 31 and above, as everywhere: they must agree, or there is no graph: 0) */
static int df__gg_memory_types(df__gg_build *b) {
    df__gg *gg = b->gg;
    int h31[2] = {-1, -1}, mixed = 0;
    for (int p = 0; p < b->n_s; p++)
        for (int k = 0; k < gg->nodes[p]->n_inputs; k++) {
            const df__gg_src *sr = &gg->srcs[gg->in_start[p] + k];
            if (sr->node >= 0) continue;
            int h = df__in_on_host(gg->nodes[p], k, b->d);
            if (h) gg->host_in |= 1u << DF__MIN(sr->out, 31);
            if (sr->out >= 31) { if (h31[0] < 0) h31[0] = h; else if (h31[0] != h) mixed = 1; }
        }
    for (int j = 0; j < gg->n_out; j++) {
        int h = gg->host_out[gg->outs[j].node] >> DF__MIN(gg->outs[j].out, 31) & 1;
        if (h) gg->host_out_mask |= 1u << DF__MIN(j, 31);
        if (j >= 31) { if (h31[1] < 0) h31[1] = h; else if (h31[1] != h) mixed = 1; }
    }
    return !mixed;
}

/* a loop whose predicate the GPU makes: run by its plan; 0 when it has none */
static int df__gg_plan_predicate_loop(df__gg_build *b) {
    df__gg *gg = b->gg;
    const char *why = NULL;
    if (!(gg->loop = df__gg_loop_plan(gg, &why))) {
        if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: a loop with a GPU predicate: %s\n", b->d->name, why);
        return 0;
    }
    if (getenv("DF_CUDA_GRAPHS_DEBUG")) {
        int count[5] = {0, 0, 0, 0, 0};
        for (int p = 0; p < b->n_s; p++) count[gg->loop->phase[p]]++;
        fprintf(stderr, "dataflow: GPU graph on %s: a loop with a GPU predicate, %d variables; %d nodes before it, %d of its predicate, %d of its body, %d after it\n",
                b->d->name, gg->loop->n_vars, count[DF__GL_PRE], count[DF__GL_PRED], count[DF__GL_BODY], count[DF__GL_POST]);
    }
    return 1;
}

/* a loop inside: the nodes run under an executor of their own (one thread, no rendezvous),
   fed the node's inputs, fetching its outputs in the memory they are made; 0 when they do not
   compile so */
static int df__gg_compile_loops(df__gg_build *b) {
    df__gg *gg = b->gg;
    int n_s = b->n_s;
    df_output *gouts = (df_output *)DF_MALLOC(((size_t)gg->n_out + 1) * sizeof(df_output));
    df_node **targets = (df_node **)DF_MALLOC(((size_t)n_s + 1) * sizeof(df_node *));
    df_status cst;
    df_status_clear(&cst);
    if (gouts && targets) {
        for (int j = 0; j < gg->n_out; j++) gouts[j] = (df_output){(df_node *)gg->nodes[gg->outs[j].node], gg->outs[j].out};
        for (int p = 0; p < n_s; p++) targets[p] = (df_node *)gg->nodes[p];
        gg->sub = df__compile(b->ss, b->g, b->ext, b->n_ext, gouts, gg->n_out, targets, n_s, b->d, &cst);
    }
    DF_FREE(gouts); DF_FREE(targets);
    int fine = gg->sub != NULL;
    for (int i = 0; fine && i < gg->sub->n_items; i++) {
        df__xitem *it = &gg->sub->items[i];
        if (it->kind == DF__X_FETCH) fine = it->frame == 0;
        if (it->kind == DF__X_FETCH || it->kind == DF__X_FEED) it->flags &= (uint16_t)~DF__XF_DEVICE_VALUE;   /* (no copies) */
    }
    if (!fine) {
        if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: its loops do not compile alone: %s\n", b->d->name, cst.code ? cst.message : "a value leaves from inside a loop");
        return 0;
    }
    return 1;
}

/* the node: inputs ext, outputs gg->outs, control inputs the members' from outside; added to
   the partition's graph, it owns gg. Also allocates `all`. 0 when out of memory. */
static int df__gg_add_node(df__gg_build *b) {
    df_graph *g = b->g;
    df__gg *gg = b->gg;
    int n_ext = b->n_ext;
    const int32_t *pos = b->pos;
    df_node *node = b->node = (df_node *)DF_MALLOC(sizeof *node);
    if (!node) return 0;
    memset(node, 0, sizeof *node);
    node->op = df__op_lookup("_GpuGraph");
    node->name = df__pgraph_name(g, "_gpu_graph");
    node->device = df__strdup(b->d->name);
    node->inputs = (df_output *)DF_MALLOC((size_t)(n_ext + 1) * sizeof(df_output));
    node->out_types = (df_dtype *)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df_dtype));
    node->out_shapes = (df__shape *)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df__shape));
    node->out_is_ref = (unsigned char *)DF_MALLOC((size_t)gg->n_out + 1);
    gg->n_in = n_ext;
    gg->sig = (df__gg_sig *)DF_MALLOC((size_t)(n_ext + 1) * sizeof(df__gg_sig));
    gg->static_in = (df_tensor **)DF_MALLOC((size_t)(n_ext + 1) * sizeof(df_tensor *));
    gg->static_out = (df_tensor **)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    gg->out_owned = (unsigned char *)DF_MALLOC((size_t)gg->n_out + 1);
    gg->out_idle = (int32_t *)DF_MALLOC(((size_t)gg->n_out + 1) * sizeof(int32_t));
    b->all = (df_node **)DF_MALLOC((size_t)(b->n + 2) * sizeof(df_node *));
    /* zeroed before the check: on out of memory df__gg_free releases what these arrays hold */
    if (gg->sig) {
        memset(gg->sig, 0, (size_t)(n_ext + 1) * sizeof(df__gg_sig));
        for (int j = 0; j < n_ext; j++) gg->sig[j].rank = -1;
    }
    if (gg->static_in) memset(gg->static_in, 0, (size_t)(n_ext + 1) * sizeof(df_tensor *));
    if (gg->static_out) memset(gg->static_out, 0, (size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    if (!node->op || !node->name || !node->device || !node->inputs || !node->out_types || !node->out_shapes ||
        !node->out_is_ref || !gg->sig || !gg->static_in || !gg->static_out || !gg->out_owned || !gg->out_idle || !b->all)
        return 0;
    memcpy(node->inputs, b->ext, (size_t)n_ext * sizeof(df_output));
    node->n_inputs = n_ext;
    node->n_outputs = gg->n_out;
    for (int j = 0; j < gg->n_out; j++) {
        const df_node *x = gg->nodes[gg->outs[j].node];
        int o = gg->outs[j].out;
        node->out_types[j] = x->out_types[o];
        node->out_shapes[j] = x->out_shapes[o];
        node->out_is_ref[j] = x->out_is_ref[o];
    }
    DF_FREE(b->ext);
    b->ext = NULL;
    for (int p = 0; p < b->n_s; p++) {
        const df_node *x = gg->nodes[p];
        for (int k = 0; k < x->n_controls; k++)
            if (pos[x->controls[k]->id] < 0 && !df__node_add_control(node, x->controls[k])) return 0;
    }
    if (!df__pgraph_add(g, node)) return 0;
    node->gg = gg;
    return 1;
}

/* outside nodes read the node's outputs and wait for it instead of the members; the fetches
   too */
static void df__gg_redirect_readers(df__gg_build *b) {
    df_graph *g = b->g;
    df_node *node = b->node;
    const df__gg *gg = b->gg;
    const int32_t *pos = b->pos, *out_of = b->out_of;
    for (int i = 0; i < b->n; i++) {
        df_node *x = g->nodes[i];
        if (b->in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) {
            df_output *o = &x->inputs[k];
            if (pos[o->node->id] >= 0) { int v = gg->val_start[pos[o->node->id]] + o->index; *o = (df_output){node, out_of[v]}; }
        }
        int had = 0, w = 0;
        for (int k = 0; k < x->n_controls; k++) {
            if (pos[x->controls[k]->id] >= 0) { if (!had++) x->controls[w++] = node; }
            else x->controls[w++] = x->controls[k];
        }
        x->n_controls = w;
    }
    for (int f = 0; f < b->n_fetches; f++)
        if (b->fetches[f].node != node && pos[b->fetches[f].node->id] >= 0) {
            int v = gg->val_start[pos[b->fetches[f].node->id]] + b->fetches[f].index;
            b->fetches[f] = (df_output){node, out_of[v]};
        }
}

/* what the partition compiles: the nodes neither fed nor members, then the node; returns how
   many */
static int df__gg_list_to_compile(df__gg_build *b) {
    const df_graph *g = b->g;
    int n_all = 0;
    for (int i = 0; i < b->n; i++) {
        int fed = 0;
        for (int f = 0; f < b->n_feeds && !fed; f++) fed = b->feeds[f].node == g->nodes[i];
        if (!fed && !b->in_s[i]) b->all[n_all++] = g->nodes[i];
    }
    b->all[n_all++] = b->node;
    return n_all;
}

/* Makes partition pt's GPU graph node when its nodes allow one (see above); `fetches` (the
   partition's) are redirected to the node's outputs. *all receives the nodes to compile. */
static df_code df__gg_rewrite(df_session *ss, df__part *pt, const df_output *feeds, int n_feeds, df_output *fetches, int n_fetches,
                              df_node ***all_out, int *n_all_out, df_status *st) {
    df__gg_build b;
    memset(&b, 0, sizeof b);
    b.ss = ss; b.g = pt->g; b.d = pt->dev;
    b.feeds = feeds; b.n_feeds = n_feeds; b.fetches = fetches; b.n_fetches = n_fetches;
    int n = b.n = b.g->n_nodes, n_ordered = 0;
    *all_out = NULL; *n_all_out = 0;
    b.in_s = (unsigned char *)DF_MALLOC((size_t)n + 1);
    b.order = (int32_t *)DF_MALLOC(((size_t)n + 1) * sizeof(int32_t));   /* node id -> position, then back */
    b.deg = (int32_t *)DF_MALLOC(((size_t)n + 1) * sizeof(int32_t));
    if (!b.in_s || !b.order || !b.deg) goto oom;
    if (!df__gg_pick_members(&b)) goto none;
    df__gg_place_device_pairs(&b);
    if (b.loops && b.pairs) {      /* (the loop's executor below has no rendezvous for the pair) */
        if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: loops and a Send/Recv pair within the device\n", b.d->name);
        goto none;
    }
    if (getenv("DF_CUDA_GRAPHS_DEBUG")) {
        fprintf(stderr, "dataflow: GPU graph of %d of %d nodes on %s; outside:", b.n_s, n, b.d->name);
        for (int i = 0; i < n && i < 4000; i++) if (!b.in_s[i]) fprintf(stderr, " %s(%s)", b.g->nodes[i]->name, b.g->nodes[i]->op->name);
        fprintf(stderr, "\n");
    }
    if (b.n_s < 2) goto none;
    if ((n_ordered = df__gg_order_members(&b)) < 0) goto oom;
    if (n_ordered != b.n_s) goto none;                           /* (a cycle: leave it to the executor) */
    if (!df__gg_make_tables(&b) || !df__gg_find_outputs(&b)) goto oom;
    if (!df__gg_memory_types(&b)) goto none;
    if (b.pred_pairs) { if (!df__gg_plan_predicate_loop(&b)) goto none; }
    else if (b.loops && !df__gg_compile_loops(&b)) goto none;
    if (!df__gg_add_node(&b)) goto oom;
    df__gg_redirect_readers(&b);
    DF_FREE(b.out_of);
    *n_all_out = df__gg_list_to_compile(&b);
    *all_out = b.all;
    DF_FREE(b.in_s); DF_FREE(b.order); DF_FREE(b.deg);
    return DF_OK;
none:
    DF_FREE(b.ext); DF_FREE(b.out_of); df__gg_free(b.gg);
    DF_FREE(b.in_s); DF_FREE(b.order); DF_FREE(b.deg);
    return DF_OK;
oom:
    DF_FREE(b.ext); DF_FREE(b.out_of);
    if (b.node && !b.node->gg) df__node_free(b.node);
    df__gg_free(b.gg);
    DF_FREE(b.all); DF_FREE(b.in_s); DF_FREE(b.order); DF_FREE(b.deg);
    return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a GPU graph");
}
#endif /* DATAFLOW_CUDA */

/* Whether a value partition p sends can come back to p through other partitions (p's nodes
   then cannot wait for each other as one node). A walk from p's Sends: to the Recv of the same
   key, forward through that partition's consumers, through its Sends, and so on. */
DF_PRIVATE int df__gg_returns(const df__plan *plan, int p, df_status *st) {
    int np = plan->n_parts, total = 0, found = 0;
    for (int q = 0; q < np; q++) total += plan->parts[q].g->n_nodes;
    int32_t *base = (int32_t *)DF_MALLOC(((size_t)np + 1) * sizeof(int32_t));
    int32_t *start = (int32_t *)DF_MALLOC(((size_t)total + 2) * sizeof(int32_t));
    unsigned char *seen = (unsigned char *)DF_MALLOC((size_t)total + 1);
    int32_t *stack = (int32_t *)DF_MALLOC(((size_t)total + 1) * sizeof(int32_t)), *cons = NULL;
    df__strmap recvs;                                /* "_key" -> global index of its Recv */
    memset(&recvs, 0, sizeof recvs);
    int ok = base && start && seen && stack;
    if (ok) {
        memset(seen, 0, (size_t)total);
        memset(start, 0, ((size_t)total + 2) * sizeof(int32_t));
        for (int q = 0, b = 0; q < np; q++) { base[q] = b; b += plan->parts[q].g->n_nodes; }
        /* consumers (CSR over global indices): data and control edges within each partition */
        for (int q = 0; q < np; q++) {
            const df_graph *g = plan->parts[q].g;
            for (int i = 0; i < g->n_nodes; i++) {
                const df_node *x = g->nodes[i];
                for (int k = 0; k < x->n_inputs; k++) start[base[q] + x->inputs[k].node->id + 2]++;
                for (int k = 0; k < x->n_controls; k++) start[base[q] + x->controls[k]->id + 2]++;
            }
        }
        for (int i = 0; i < total; i++) start[i + 2] += start[i + 1];
        ok = (cons = (int32_t *)DF_MALLOC(((size_t)start[total + 1] + 1) * sizeof(int32_t))) != NULL;
        for (int q = 0; ok && q < np; q++) {
            const df_graph *g = plan->parts[q].g;
            for (int i = 0; i < g->n_nodes; i++) {
                const df_node *x = g->nodes[i];
                for (int k = 0; k < x->n_inputs; k++) cons[start[base[q] + x->inputs[k].node->id + 1]++] = base[q] + i;
                for (int k = 0; k < x->n_controls; k++) cons[start[base[q] + x->controls[k]->id + 1]++] = base[q] + i;
                if ((x->op->flags & DF__OP_RECV) || ((x->op->flags & DF__OP_TRANSFER) && x->n_inputs == 0)) {
                    char key[32];
                    snprintf(key, sizeof key, "%lld", (long long)df__attr_i(x, "_key", -1));
                    if (!df__strmap_put(&recvs, key, base[q] + i)) ok = 0;
                }
            }
        }
    }
    int top = 0;
    const df_graph *pg = ok ? plan->parts[p].g : NULL;
    for (int i = 0; ok && i < pg->n_nodes; i++) stack[top++] = base[p] + i;   /* p's nodes; only Sends leave */
    while (ok && top && !found) {
        int u = stack[--top], q = 0;
        while (q + 1 < np && base[q + 1] <= u) q++;
        const df_node *x = plan->parts[q].g->nodes[u - base[q]];
        if (q != p) for (int e = start[u]; e < start[u + 1]; e++) if (!seen[cons[e]]) { seen[cons[e]] = 1; stack[top++] = cons[e]; }
        if ((x->op->flags & DF__OP_TRANSFER) && x->n_inputs > 0) {             /* a Send: to its Recv */
            char key[32];
            int r;
            snprintf(key, sizeof key, "%lld", (long long)df__attr_i(x, "_key", -1));
            if (df__strmap_get(&recvs, key, &r)) {
                if (r >= base[p] && r < base[p] + pg->n_nodes) { if (q != p) found = 1; }
                else if (!seen[r]) { seen[r] = 1; stack[top++] = r; }
            }
        }
    }
    if (!ok) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory looking for paths between partitions");
    df__strmap_free(&recvs);
    DF_FREE(base); DF_FREE(start); DF_FREE(seen); DF_FREE(stack); DF_FREE(cons);
    return found;
}

/* A partition's executor: everything in its graph runs (the whole graph was pruned already).
   A GPU partition of a run without Switch becomes a GPU graph node with cuda_graphs. */
DF_PRIVATE df_code df__pb_compile(df_session *ss, df__part *pt, const df_output *feeds, int n_feeds,
                              df_output *fetches, int n_fetches, int no_switch, df_status *st) {
    df_graph *g = pt->g;
    df_node **all = NULL;
    int n_all = 0;
#ifdef DATAFLOW_CUDA
    if (ss->opts.cuda_graphs && pt->dev->gpu && no_switch &&
        df__gg_rewrite(ss, pt, feeds, n_feeds, fetches, n_fetches, &all, &n_all, st) != DF_OK) return st->code;
#else
    DF__UNUSED(no_switch);
#endif
    if (!all) {
        all = (df_node **)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(df_node *));
        if (!all) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory compiling a partition");
        for (int i = 0; i < g->n_nodes; i++) {
            int fed = 0;                     /* a fed placeholder only stands for its value */
            for (int f = 0; f < n_feeds && !fed; f++) fed = feeds[f].node == g->nodes[i];
            if (!fed) all[n_all++] = g->nodes[i];
        }
    }
    pt->x = df__compile(ss, g, feeds, n_feeds, fetches, n_fetches, all, n_all, pt->dev, st);
    DF_FREE(all);
    if (!pt->x && st->code != DF_RESOURCE_EXHAUSTED) {
        char why[sizeof st->message];
        memcpy(why, st->message, sizeof why);
        return df_status_set(st, DF_INTERNAL, "The partition for %s does not compile: %.400s", pt->dev->name, why);
    }
    return pt->x ? DF_OK : st->code;
}

/* Prune and validate (one executor over the caller's graph), place, and when several devices
   are used, partition. */
