/* ==========================================================================================
   src/passes.c: Graph optimisation passes                                         >>optimize
   Before a (feeds, fetches, targets) signature is placed, the session copies the nodes it
   needs into a working graph and rewrites that copy; the caller's graph is left as it was.
   Fed, fetched and target nodes are kept as they are, so feeds, fetches and error messages
   name the nodes the caller knows. Passes (each can be turned off with
   df_session_options.disable_passes):
   - pruning: only the nodes the fetches and targets need are copied;
   - identity removal: Identity, IdentityN and StopGradient that only forward a value on the
     same device (no control edges in or out, not fed or fetched, not reading a variable) are
     bypassed;
   - common subexpression elimination: value numbering in topological order; two nodes merge
     when op, device, attrs, inputs and control inputs are equal, and neither is stateful,
     control flow, a transfer, fed, or reading a variable. Equal inputs put both in the same
     frame, so nothing merges across loop frames or cond branches;
   - constant folding: a node whose inputs are all constants with no control inputs (so it sits
     outside every loop frame and cond branch), not stateful and not control flow, is evaluated
     once on the CPU at compile time and replaced by a Const, if its outputs are at most
     DF_MAX_FOLDED_BYTES. Errors leave the node to fail at run time as it would have;
   - dependency optimizer (last): NoOps that only pass control on are bypassed, duplicate and
     transitively implied control edges dropped, keeping order and dead values (below).
   Function calls, If and While are always lowered (inlined) before this: there is no function
   runtime to run them otherwise.
   ========================================================================================== */
#define DF_MAX_FOLDED_BYTES ((size_t)10 << 20)

static int df__attr_equal(const df__attr *a, const df__attr *b) {
    if (a->kind != b->kind || strcmp(a->name, b->name)) return 0;
    switch (a->kind) {
    case DF__A_INT: return a->u.i == b->u.i;
    case DF__A_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
    case DF__A_BOOL: return a->u.b == b->u.b;
    case DF__A_TYPE: return a->u.type == b->u.type;
    case DF__A_STRING: case DF__A_FUNC: return !strcmp(a->u.s ? a->u.s : "", b->u.s ? b->u.s : "");
    case DF__A_SHAPE:
        if (a->u.shape.rank != b->u.shape.rank) return 0;
        for (int i = 0; i < a->u.shape.rank && i < DF_MAX_RANK; i++) if (a->u.shape.dims[i] != b->u.shape.dims[i]) return 0;
        return 1;
    case DF__A_TENSOR: {
        const df_tensor *x = a->u.tensor, *y = b->u.tensor;
        if (x == y) return 1;
        if (!x || !y || x->dtype != y->dtype || x->rank != y->rank || x->nbytes != y->nbytes || x->dtype == DF_STRING) return 0;
        for (int i = 0; i < x->rank; i++) if (x->dims[i] != y->dims[i]) return 0;
        return !x->nbytes || !memcmp(x->data, y->data, x->nbytes);
    }
    case DF__A_INT_LIST:
        return a->u.ints.n == b->u.ints.n && (!a->u.ints.n || !memcmp(a->u.ints.v, b->u.ints.v, (size_t)a->u.ints.n * 8));
    case DF__A_TYPE_LIST:
        return a->u.types.n == b->u.types.n && (!a->u.types.n || !memcmp(a->u.types.v, b->u.types.v, (size_t)a->u.types.n * sizeof(df_dtype)));
    default: return 0;
    }
}
static uint64_t df__attr_hash(const df__attr *a) {
    uint64_t h = df__hash_str(a->name) ^ (uint64_t)a->kind;
    switch (a->kind) {
    case DF__A_INT: return df__hash_mix(h, (uint64_t)a->u.i);
    case DF__A_TYPE: return df__hash_mix(h, (uint64_t)a->u.type);
    case DF__A_BOOL: return df__hash_mix(h, (uint64_t)a->u.b);
    case DF__A_STRING: case DF__A_FUNC: return df__hash_mix(h, df__hash_str(a->u.s ? a->u.s : ""));
    case DF__A_TENSOR: {
        const df_tensor *t = a->u.tensor;
        if (!t) return h;
        h = df__hash_mix(h, (uint64_t)t->dtype * 31 + (uint64_t)t->nbytes);
        if (t->dtype != DF_STRING) {
            size_t n = t->nbytes < 64 ? t->nbytes : 64;
            for (size_t i = 0; i < n; i++) h = df__hash_mix(h, ((const uint8_t *)t->data)[i]);
        }
        return h;
    }
    default: return h;
    }
}

/* Control flow, transfers, stateful ops and readers of variables are never merged or folded. */
static int df__opt_plain(const df_node *n) {
    unsigned f = n->op->flags;
    if (f & (DF__OP_STATEFUL | DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT | DF__OP_NEXT_ITERATION |
             DF__OP_LOOP_COND | DF__OP_CONTROL_TRIGGER | DF__OP_TRANSFER | DF__OP_RECV | DF__OP_LOOP_COUNT | DF__OP_FUNCTIONAL))
        return 0;
    if (n->gstack || !n->op->kernels[DF__DEV_CPU].fn) return 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i].node->out_is_ref[n->inputs[i].index]) return 0;
    for (int i = 0; i < n->n_outputs; i++) if (n->out_is_ref[i]) return 0;
    return strcmp(n->op->name, "Placeholder") && strcmp(n->op->name, "PlaceholderWithDefault") && strcmp(n->op->name, "_Arg");
}

/* Replaces every use of node `from`'s outputs by `to`'s (same index), control edges too. */
static void df__opt_redirect(df__opt *o, const df_node *from, df_node *to, const int *first_use, const int *next_use,
                             const int32_t *use_node, const int32_t *use_slot) {
    df_graph *g = o->wg;
    for (int u = first_use[from->id]; u >= 0; u = next_use[u]) {
        df_node *c = g->nodes[use_node[u]];
        int k = use_slot[u];
        if (k >= 0) { if (c->inputs[k].node == from) c->inputs[k].node = to; }
        else for (int j = 0; j < c->n_controls; j++) if (c->controls[j] == from) c->controls[j] = to;
    }
    for (int i = 0; i < o->n_fetches; i++) if (o->fetches[i].node == from) o->fetches[i].node = to;
    for (int i = 0; i < o->n_targets; i++) if (o->targets[i] == from) o->targets[i] = to;
}

/* Uses of every node: (consumer, input slot or -1 for a control edge), linked per producer. */
typedef struct df__opt_uses { int *first, *next; int32_t *node, *slot; int n, cap; } df__opt_uses;
static int df__opt_add_use(df__opt_uses *u, int producer, int consumer, int slot) {
    if (u->n >= u->cap) {
        int cap = u->cap ? u->cap * 2 : 256;
        int *nx = (int *)DF_REALLOC(u->next, (size_t)cap * sizeof(int));
        if (nx) u->next = nx;
        int32_t *nd = (int32_t *)DF_REALLOC(u->node, (size_t)cap * sizeof(int32_t));
        if (nd) u->node = nd;
        int32_t *sl = (int32_t *)DF_REALLOC(u->slot, (size_t)cap * sizeof(int32_t));
        if (sl) u->slot = sl;
        if (!nx || !nd || !sl) return 0;
        u->cap = cap;
    }
    u->node[u->n] = consumer;
    u->slot[u->n] = slot;
    u->next[u->n] = u->first[producer];
    u->first[producer] = u->n++;
    return 1;
}
static int df__opt_uses_build(const df_graph *g, df__opt_uses *u) {
    u->first = (int *)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(int));
    if (!u->first) return 0;
    for (int i = 0; i < g->n_nodes; i++) u->first[i] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const df_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) if (!df__opt_add_use(u, n->inputs[k].node->id, i, k)) return 0;
        for (int k = 0; k < n->n_controls; k++) if (!df__opt_add_use(u, n->controls[k]->id, i, -1)) return 0;
    }
    return 1;
}
static void df__opt_uses_free(df__opt_uses *u) { DF_FREE(u->first); DF_FREE(u->next); DF_FREE(u->node); DF_FREE(u->slot); memset(u, 0, sizeof *u); }

/* An order with every node after its inputs (a NextIteration's edge into Merge left out). */
static int *df__opt_topo(const df_graph *g) {
    int n = g->n_nodes;
    int *order = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int)), *indeg = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    df__opt_uses u;
    memset(&u, 0, sizeof u);
    if (!order || !indeg || !df__opt_uses_build(g, &u)) { DF_FREE(order); DF_FREE(indeg); df__opt_uses_free(&u); return NULL; }
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        indeg[i] = x->n_controls;
        for (int k = 0; k < x->n_inputs; k++) indeg[i] += !(x->inputs[k].node->op->flags & DF__OP_NEXT_ITERATION);
    }
    int m = 0;
    for (int i = 0; i < n; i++) if (!indeg[i]) order[m++] = i;
    for (int q = 0; q < m; q++)
        for (int e = u.first[order[q]]; e >= 0; e = u.next[e]) {
            int c = u.node[e];
            if (u.slot[e] >= 0 && (g->nodes[order[q]]->op->flags & DF__OP_NEXT_ITERATION)) continue;
            if (--indeg[c] == 0) order[m++] = c;
        }
    DF_FREE(indeg);
    df__opt_uses_free(&u);
    if (m < n) { DF_FREE(order); return NULL; }
    return order;
}

static int df__opt_identity_like(const df_node *n) {
    return !strcmp(n->op->name, "Identity") || !strcmp(n->op->name, "IdentityN") || !strcmp(n->op->name, "StopGradient");
}

/* Identity removal. Returns how many nodes were bypassed (-1: out of memory). */
DF_PRIVATE int df__opt_identities(df__opt *o) {
    df_graph *g = o->wg;
    df__opt_uses u;
    memset(&u, 0, sizeof u);
    if (!df__opt_uses_build(g, &u)) { df__opt_uses_free(&u); return -1; }
    int count = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        df_node *n = g->nodes[i];
        if (o->removed[i] || o->pinned[i] || !df__opt_identity_like(n) || n->n_controls || n->n_inputs != n->n_outputs) continue;
        int ok = 1;
        for (int e = u.first[i]; e >= 0 && ok; e = u.next[e]) ok = u.slot[e] >= 0;       /* no control consumers */
        for (int k = 0; k < n->n_inputs && ok; k++) {
            const df_node *s = n->inputs[k].node;
            if (s->out_is_ref[n->inputs[k].index] || strcmp(s->device ? s->device : "", n->device ? n->device : "")) ok = 0;
        }
        if (!ok) continue;
        for (int e = u.first[i]; e >= 0; e = u.next[e]) {
            df_node *c = g->nodes[u.node[e]];
            df_output *in = &c->inputs[u.slot[e]];
            if (in->node != n) continue;
            *in = n->inputs[in->index];
            /* the bypassed node's input now has this consumer too */
            if (!df__opt_add_use(&u, in->node->id, u.node[e], u.slot[e])) { df__opt_uses_free(&u); return -1; }
        }
        for (int f = 0; f < o->n_fetches; f++)
            if (o->fetches[f].node == n) o->fetches[f] = n->inputs[o->fetches[f].index];
        o->removed[i] = 1;
        count++;
    }
    df__opt_uses_free(&u);
    return count;
}

/* Common subexpression elimination. Returns the number of nodes merged away (-1: OOM). */
DF_PRIVATE int df__opt_cse(df__opt *o) {
    df_graph *g = o->wg;
    int n = g->n_nodes, count = 0;
    int *order = df__opt_topo(g);
    if (!order) return 0;               /* (a cycle or OOM: no CSE) */
    df__opt_uses u;
    memset(&u, 0, sizeof u);
    int cap = 16;
    while (cap < 2 * n) cap *= 2;
    int *table = (int *)DF_MALLOC((size_t)cap * sizeof(int));
    uint64_t *hash = (uint64_t *)DF_MALLOC((size_t)(n + 1) * sizeof(uint64_t));
    if (!table || !hash || !df__opt_uses_build(g, &u)) { DF_FREE(order); DF_FREE(table); DF_FREE(hash); df__opt_uses_free(&u); return -1; }
    for (int i = 0; i < cap; i++) table[i] = -1;
    for (int q = 0; q < n; q++) {
        int i = order[q];
        df_node *x = g->nodes[i];
        if (o->removed[i] || o->pinned[i] || !df__opt_plain(x)) continue;
        uint64_t h = df__hash_str(x->op->name);
        h = df__hash_mix(h, df__hash_str(x->device ? x->device : ""));
        for (int k = 0; k < x->n_inputs; k++) h = df__hash_mix(h, (uint64_t)x->inputs[k].node->id * 64 + (uint64_t)x->inputs[k].index);
        uint64_t hc = 0;
        for (int k = 0; k < x->n_controls; k++) hc += df__hash_mix(7, (uint64_t)x->controls[k]->id);   /* order-free */
        h = df__hash_mix(h, hc);
        for (int k = 0; k < x->n_attrs; k++) h = df__hash_mix(h, df__attr_hash(&x->attrs[k]));
        hash[i] = h;
        int slot = (int)(h & (uint64_t)(cap - 1)), found = -1;
        for (; table[slot] >= 0; slot = (slot + 1) & (cap - 1)) {
            const df_node *y = g->nodes[table[slot]];
            if (hash[y->id] != h || y->op != x->op || y->n_inputs != x->n_inputs || y->n_controls != x->n_controls ||
                y->n_attrs != x->n_attrs || strcmp(y->device ? y->device : "", x->device ? x->device : "")) continue;
            int same = 1;
            for (int k = 0; k < x->n_inputs && same; k++)
                same = y->inputs[k].node == x->inputs[k].node && y->inputs[k].index == x->inputs[k].index;
            for (int k = 0; k < x->n_controls && same; k++) {
                int hit = 0;
                for (int j = 0; j < y->n_controls && !hit; j++) hit = y->controls[j] == x->controls[k];
                same = hit;
            }
            for (int k = 0; k < x->n_attrs && same; k++) {
                const df__attr *b = df__node_attr(y, x->attrs[k].name);
                same = b && df__attr_equal(&x->attrs[k], b);
            }
            if (same) { found = y->id; break; }
        }
        if (found < 0) { table[slot] = i; continue; }
        df__opt_redirect(o, x, g->nodes[found], u.first, u.next, u.node, u.slot);
        /* x's uses become the survivor's */
        for (int e = u.first[i]; e >= 0; e = u.next[e]) if (!df__opt_add_use(&u, found, u.node[e], u.slot[e])) { count = -1; break; }
        if (count < 0) break;
        o->removed[i] = 1;
        count++;
    }
    DF_FREE(order); DF_FREE(table); DF_FREE(hash);
    df__opt_uses_free(&u);
    return count;
}

/* Constant folding. Returns the nodes replaced by constants (-1: OOM). */
DF_PRIVATE int df__opt_fold(df__opt *o, df_session *ss) {
    df_graph *g = o->wg;
    int n = g->n_nodes;
    int *order = df__opt_topo(g);
    if (!order) return 0;
    unsigned char *konst = (unsigned char *)DF_MALLOC((size_t)n + 1);
    df__opt_uses u;
    memset(&u, 0, sizeof u);
    if (!konst || !df__opt_uses_build(g, &u)) { DF_FREE(order); DF_FREE(konst); df__opt_uses_free(&u); return -1; }
    memset(konst, 0, (size_t)n + 1);
    /* 1: constant (a Const with no control inputs), 2: foldable */
    int n_fold = 0;
    for (int q = 0; q < n; q++) {
        int i = order[q];
        const df_node *x = g->nodes[i];
        if (o->removed[i] || o->pinned[i]) continue;
        if (!strcmp(x->op->name, "Const")) { konst[i] = x->n_controls ? 0 : 1; continue; }
        if (!df__opt_plain(x) || x->n_controls || !x->n_inputs) continue;
        int all = 1;
        for (int k = 0; k < x->n_inputs && all; k++) all = konst[x->inputs[k].node->id] != 0;
        size_t bytes = 0;
        for (int k = 0; k < x->n_outputs && all; k++) {
            const df__shape *s = &x->out_shapes[k];
            if (s->rank < 0 || x->out_types[k] == DF_STRING || x->out_types[k] == DF_VARIANT) { all = 0; break; }
            size_t e = df_dtype_size(x->out_types[k]);
            for (int d = 0; d < s->rank; d++) {
                if (s->dims[d] < 0 || (s->dims[d] && e > DF_MAX_FOLDED_BYTES / (size_t)s->dims[d])) { all = 0; break; }
                e *= (size_t)s->dims[d];
            }
            bytes += e;
        }
        if (all && bytes <= DF_MAX_FOLDED_BYTES) { konst[i] = 2; n_fold++; }
    }
    int count = 0;
    if (n_fold) {
        /* the frontier: outputs of folded nodes that something not folded reads, or fetches */
        df_output *fr = (df_output *)DF_MALLOC((size_t)(2 * n + o->n_fetches + 1) * sizeof(df_output));
        int nf = 0;
        if (!fr) { count = -1; goto out; }
        for (int i = 0; i < n; i++) {
            if (konst[i] != 2) continue;
            const df_node *x = g->nodes[i];
            for (int k = 0; k < x->n_outputs; k++) {
                int needed = 0;
                for (int e = u.first[i]; e >= 0 && !needed; e = u.next[e])
                    needed = u.slot[e] >= 0 && g->nodes[u.node[e]]->inputs[u.slot[e]].index == k && konst[u.node[e]] != 2 && !o->removed[u.node[e]];
                for (int f = 0; f < o->n_fetches && !needed; f++) needed = o->fetches[f].node == x && o->fetches[f].index == k;
                if (needed) fr[nf++] = (df_output){(df_node *)x, k};
            }
        }
        df_tensor **vals = nf ? (df_tensor **)DF_MALLOC((size_t)nf * sizeof(df_tensor *)) : NULL;
        if (nf && !vals) { DF_FREE(fr); count = -1; goto out; }
        if (nf) {
            /* evaluate them in a session of their own on one CPU device, on the calling thread */
            df_session_options so;
            memset(&so, 0, sizeof so);
            so.deterministic = 1;
            so.inter_op_threads = 1;
            so.intra_op_threads = ss->opts.intra_op_threads;
            so.disable_passes = DF_PASS_ALL;
            df_status fst;
            df_graph *fg = df_graph_new();
            df_node **clone = (df_node **)DF_MALLOC((size_t)(n + 1) * sizeof(df_node *));
            df_output *ff = (df_output *)DF_MALLOC((size_t)(nf + 1) * sizeof(df_output));
            int ok = fg && clone && ff;
            for (int q = 0; q < n && ok; q++) {
                int i = order[q];
                if (!konst[i]) continue;
                const df_node *x = g->nodes[i];
                df_node *c = df__node_clone(fg, x, "");
                if (!c) { ok = 0; break; }
                for (int k = 0; k < x->n_inputs; k++) c->inputs[k] = (df_output){clone[x->inputs[k].node->id], x->inputs[k].index};
                clone[i] = c;
            }
            for (int f = 0; f < nf && ok; f++) ff[f] = (df_output){clone[fr[f].node->id], fr[f].index};
            df_session *fs = ok ? df_session_new(fg, &so, &fst) : NULL;
            int ran = fs && df_session_run(fs, NULL, NULL, 0, ff, vals, nf, NULL, 0, &fst) == DF_OK;
            df_session_free(fs);
            df_graph_free(fg);
            DF_FREE(clone); DF_FREE(ff);
            if (ran) {
                for (int f = 0; f < nf; f++) {
                    const df_node *x = fr[f].node;
                    char base[320];
                    snprintf(base, sizeof base, "%.280s/folded_%d", x->name, fr[f].index);
                    df_op_builder *b = df_op_new(g, "Const", NULL);
                    df_node *c = NULL;
                    if (b) {
                        char *nm = df__pgraph_name(g, base);
                        if (nm) { DF_FREE(b->name); b->name = nm; } else b->oom = 1;
                        b->raw = 1;
                        df_op_set_attr_tensor(b, "value", vals[f]);
                        df_op_set_attr_type(b, "dtype", vals[f]->dtype);
                        if (x->device && *x->device) df_op_set_device(b, x->device);
                        c = df_op_finish(b);
                    }
                    if (!c) { g->status.code = DF_OK; continue; }      /* (left unfolded) */
                    if (!df__grow(&o->removed, &o->cap_removed, g->n_nodes + 1, 1) || !df__grow(&o->pinned, &o->cap_pinned, g->n_nodes + 1, 1)) { count = -1; break; }
                    o->removed[c->id] = 0;
                    o->pinned[c->id] = 0;
                    for (int e = u.first[x->id]; e >= 0; e = u.next[e]) {
                        df_node *cn = g->nodes[u.node[e]];
                        if (u.slot[e] >= 0 && konst[cn->id] != 2 && cn->inputs[u.slot[e]].node == x && cn->inputs[u.slot[e]].index == fr[f].index)
                            cn->inputs[u.slot[e]] = (df_output){c, 0};
                    }
                    for (int k = 0; k < o->n_fetches; k++)
                        if (o->fetches[k].node == x && o->fetches[k].index == fr[f].index) o->fetches[k] = (df_output){c, 0};
                }
                for (int i = 0; i < n && count >= 0; i++) if (konst[i] == 2) count++;
            }
            for (int f = 0; f < nf; f++) df_tensor_release(vals[f]);
        }
        DF_FREE(vals);
        DF_FREE(fr);
    }
out:
    DF_FREE(order); DF_FREE(konst);
    df__opt_uses_free(&u);
    return count;
}

/* Drops the nodes of wg that no root needs (roots: fetches, targets, fed nodes). */
DF_PRIVATE int df__opt_compact(df__opt *o) {
    df_graph *g = o->wg;
    int n = g->n_nodes, sp = 0;
    unsigned char *keep = (unsigned char *)DF_MALLOC((size_t)n + 1);
    int *stack = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    if (!keep || !stack) { DF_FREE(keep); DF_FREE(stack); return 0; }
    memset(keep, 0, (size_t)n + 1);
#define DF__OPT_PUSH(id) do { int id_ = (id); if (!keep[id_]) { keep[id_] = 1; stack[sp++] = id_; } } while (0)
    for (int i = 0; i < o->n_fetches; i++) DF__OPT_PUSH(o->fetches[i].node->id);
    for (int i = 0; i < o->n_targets; i++) DF__OPT_PUSH(o->targets[i]->id);
    for (int i = 0; i < o->n_feeds; i++) DF__OPT_PUSH(o->feeds[i].node->id);
    while (sp) {
        const df_node *x = g->nodes[stack[--sp]];
        for (int k = 0; k < x->n_inputs; k++) DF__OPT_PUSH(x->inputs[k].node->id);
        for (int k = 0; k < x->n_controls; k++) DF__OPT_PUSH(x->controls[k]->id);
    }
#undef DF__OPT_PUSH
    for (int i = 0; i < o->n_outside && i < n; i++) if (o->outside[i]) keep[i] = 1;   /* pruning is off */
    int m = 0;
    df__strmap_free(&g->names);
    memset(&g->names, 0, sizeof g->names);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        df_node *x = g->nodes[i];
        if (!keep[i]) { df__node_free(x); continue; }
        x->id = m;
        g->nodes[m++] = x;
        if (!df__strmap_put(&g->names, x->name, x->id)) ok = 0;
    }
    g->n_nodes = m;
    DF_FREE(keep); DF_FREE(stack);
    return ok;
}

DF_PRIVATE void df__opt_free(df__opt *o) {
    df_graph_free(o->wg);
    DF_FREE(o->removed); DF_FREE(o->pinned); DF_FREE(o->fetches); DF_FREE(o->feeds); DF_FREE(o->targets);
    DF_FREE(o->outside);
    memset(o, 0, sizeof *o);
}

/* ---- dependency optimizer ----------------------------------------------------------------
   Grappler's dependency optimizer, on the working graph: a NoOp (or an Identity, StopGradient or
   Snapshot whose value nothing reads) that only passes control on is removed, each of its control
   consumers waiting instead on each of its inputs; duplicate control edges, control edges beside a
   data edge from the same node, and control edges implied by a longer path (transitive
   reduction) are dropped. As TensorFlow: a node is bypassed only when fan-in * fan-out is at most
   fan-in + fan-out and no more edges would cross devices; fetched, fed and target nodes stay.
   Deadness is kept: a control edge carries its source's deadness, so a consumer of the bypassed
   node sees the same dead inputs, and paths that could lose it (through Merge, ControlTrigger,
   Enter/Exit/NextIteration, or a fed node) never make an edge redundant. Unlike TensorFlow,
   other ops read only through control edges are not turned into NoOps (their errors stay), and
   a data edge into a Merge does not order the Merge (it fires at its first live input). */

/* The loop machinery that changes frames, and LoopCount (an Exit). */
#define DF__DEP_FRAME (DF__OP_ENTER | DF__OP_EXIT | DF__OP_NEXT_ITERATION | DF__OP_LOOP_COUNT)

typedef struct df__dep {
    df__opt *o;
    df_graph *g;
    int n;
    int **cons;                  /* per node: nodes it has a control edge to (may hold stale entries) */
    int *n_cons, *cap_cons;
    int *n_data;                 /* per node: live data consumers */
    int *mark;                   /* stamps for set membership */
    int stamp;
    int *work, n_work, cap_work; /* nodes to look at (again) */
    unsigned char *queued, *fed;
    uint64_t *edges;             /* the live control edges (df__dep_key), open addressing */
    size_t cap_edges, used_edges, n_edges;
    df_node **ins;               /* df__dep_bypass's scratch: the inputs of the node */
    int n_in, cap_ins, n_out;
    int64_t edges_removed;
} df__dep;

static const char *df__dep_dev(const df_node *x) { return x->device ? x->device : ""; }

static int df__dep_add_cons(df__dep *d, int from, int to) {
    if (!df__grow(&d->cons[from], &d->cap_cons[from], d->n_cons[from] + 1, sizeof(int))) return 0;
    d->cons[from][d->n_cons[from]++] = to;
    return 1;
}
static int df__dep_push(df__dep *d, int i) {
    if (d->queued[i]) return 1;
    if (!df__grow(&d->work, &d->cap_work, d->n_work + 1, sizeof(int))) return 0;
    d->work[d->n_work++] = i;
    d->queued[i] = 1;
    return 1;
}
static int df__dep_has_data_from(const df_node *c, const df_node *x) {
    for (int k = 0; k < c->n_inputs; k++) if (c->inputs[k].node == x) return 1;
    return 0;
}


/* The live control edges (source, consumer), as a set: a node's `controls` may keep stale
   entries while the pass runs; df__dep_sweep brings them in line with the set. */
enum { DF__DEP_EMPTY = 0, DF__DEP_GONE = 1 };
static uint64_t df__dep_key(int s, int c) { return ((uint64_t)(uint32_t)s << 32 | (uint32_t)c) + 2; }
static size_t df__dep_find(const df__dep *d, uint64_t key) {
    size_t m = d->cap_edges - 1, i = (size_t)df__hash_mix(0x9e3779b97f4a7c15ull, key) & m;
    while (d->edges[i] != DF__DEP_EMPTY && d->edges[i] != key) i = (i + 1) & m;
    return i;
}
static int df__dep_has(const df__dep *d, int s, int c) {
    uint64_t key = df__dep_key(s, c);
    return d->edges[df__dep_find(d, key)] == key;
}
static int df__dep_insert(df__dep *d, int s, int c) {
    uint64_t key = df__dep_key(s, c);
    if (d->edges[df__dep_find(d, key)] == key) return 1;
    if ((d->used_edges + 1) * 2 > d->cap_edges) {          /* grow, dropping the tombstones */
        size_t cap = d->cap_edges;
        while ((d->n_edges + 1) * 4 > cap) cap *= 2;
        uint64_t *old = d->edges;
        size_t old_cap = d->cap_edges;
        d->edges = (uint64_t *)DF_MALLOC(cap * sizeof(uint64_t));
        if (!d->edges) { d->edges = old; return 0; }
        memset(d->edges, 0, cap * sizeof(uint64_t));
        d->cap_edges = cap;
        d->used_edges = d->n_edges;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i] > DF__DEP_GONE) d->edges[df__dep_find(d, old[i])] = old[i];
        DF_FREE(old);
    }
    size_t m = d->cap_edges - 1, i = (size_t)df__hash_mix(0x9e3779b97f4a7c15ull, key) & m;
    while (d->edges[i] > DF__DEP_GONE) i = (i + 1) & m;
    if (d->edges[i] == DF__DEP_EMPTY) d->used_edges++;
    d->edges[i] = key;
    d->n_edges++;
    return 1;
}
static void df__dep_erase(df__dep *d, int s, int c) {
    uint64_t key = df__dep_key(s, c);
    size_t i = df__dep_find(d, key);
    if (d->edges[i] == key) { d->edges[i] = DF__DEP_GONE; d->n_edges--; }
}

/* Brings c->controls in line with the edge set (order kept), dropping duplicates and, but on a
   Merge (which waits for one data input only), control inputs from a node that is also a data
   input: the data edge orders and kills as much. */
static void df__dep_sweep(df__dep *d, df_node *c) {
    int data = ++d->stamp, ctl = ++d->stamp;
    int merge = (c->op->flags & DF__OP_MERGE) != 0, m = 0;
    if (!merge) for (int k = 0; k < c->n_inputs; k++) d->mark[c->inputs[k].node->id] = data;
    for (int k = 0; k < c->n_controls; k++) {
        df_node *s = c->controls[k];
        if (d->mark[s->id] == ctl || !df__dep_has(d, s->id, c->id)) { d->edges_removed += d->mark[s->id] == ctl; continue; }
        if (d->mark[s->id] == data) { df__dep_erase(d, s->id, c->id); d->edges_removed++; continue; }
        d->mark[s->id] = ctl;
        c->controls[m++] = s;
    }
    c->n_controls = m;
}

/* A node that only forwards control: a NoOp, or an Identity-like node whose value nothing reads
   (not after a Switch, whose untaken output is dead while its control edges are not; not after
   a variable, a transfer or the loop machinery, as TensorFlow). */
static int df__dep_forwarder(const df__dep *d, const df_node *x, int *is_identity) {
    *is_identity = 0;
    if (!strcmp(x->op->name, "NoOp")) return x->n_inputs == 0;
    if (strcmp(x->op->name, "Identity") && strcmp(x->op->name, "StopGradient") && strcmp(x->op->name, "Snapshot")) return 0;
    if (x->n_inputs != 1 || x->n_outputs != 1 || d->n_data[x->id] || x->out_is_ref[0]) return 0;
    const df_node *s = x->inputs[0].node;
    if (s->out_is_ref[x->inputs[0].index] || (s->op->flags & (DF__OP_SWITCH | DF__OP_STATEFUL | DF__OP_TRANSFER | DF__OP_RECV |
                                                               DF__OP_NEXT_ITERATION | DF__OP_LOOP_COUNT)))
        return 0;
    *is_identity = 1;
    return 1;
}

/* Bypasses node i if it only forwards control and that does not add edges (TensorFlow's rule:
   fan-in * fan-out <= fan-in + fan-out) or device crossings. Returns 1 if it was removed,
   0 if not, -1 on OOM. */
static int df__dep_bypass(df__dep *d, int i) {
    df__opt *o = d->o;
    df_node *x = d->g->nodes[i];
    int ident;
    if (o->removed[i] || o->pinned[i] || d->fed[i] || (o->outside && i < o->n_outside && o->outside[i]) ||
        !df__dep_forwarder(d, x, &ident))
        return 0;
    /* its inputs: the data input of an Identity, then the live control inputs (the sweep drops
       stale entries, so a node looked at again and again is not walked in full each time) */
    df__dep_sweep(d, x);
    d->n_in = 0;
    if (!df__grow(&d->ins, &d->cap_ins, x->n_controls + 1, sizeof(df_node *))) return -1;
    if (ident) d->ins[d->n_in++] = x->inputs[0].node;
    for (int k = 0; k < x->n_controls; k++) d->ins[d->n_in++] = x->controls[k];
    /* its consumers (all through control edges) */
    d->stamp++;
    d->n_out = 0;
    int m = 0;
    for (int k = 0; k < d->n_cons[i]; k++) {
        int c = d->cons[i][k];
        if (d->mark[c] == d->stamp || !df__dep_has(d, i, c)) continue;
        d->mark[c] = d->stamp;
        d->cons[i][m++] = c;                  /* (the stale entries go) */
    }
    d->n_cons[i] = d->n_out = m;
    int64_t n_in = d->n_in, n_out = d->n_out;
    if (n_in * n_out > n_in + n_out) return 0;
    const char *dx = df__dep_dev(x);
    if (n_in == 1 && n_out > 1 && strcmp(df__dep_dev(d->ins[0]), dx)) return 0;
    if (n_in > 1 && n_out == 1 && strcmp(df__dep_dev(d->g->nodes[d->cons[i][0]]), dx)) return 0;
    int cross_in = 0, cross_out = 0, cross_after = 0;
    for (int a = 0; a < d->n_in; a++) cross_in += strcmp(df__dep_dev(d->ins[a]), dx) != 0;
    for (int b = 0; b < d->n_out; b++) cross_out += strcmp(df__dep_dev(d->g->nodes[d->cons[i][b]]), dx) != 0;
    for (int a = 0; a < d->n_in; a++)
        for (int b = 0; b < d->n_out; b++)
            cross_after += strcmp(df__dep_dev(d->ins[a]), df__dep_dev(d->g->nodes[d->cons[i][b]])) != 0;
    if (cross_after > cross_in + cross_out) return 0;
    if (ident && cross_in && cross_out && cross_after) return 0;     /* (maybe after a Recv once partitioned) */
    /* each consumer waits on each input instead */
    for (int b = 0; b < d->n_out; b++) {
        df_node *c = d->g->nodes[d->cons[i][b]];
        df__dep_erase(d, i, c->id);
        int merge = (c->op->flags & DF__OP_MERGE) != 0;
        for (int a = 0; a < d->n_in; a++) {
            df_node *s = d->ins[a];
            if (s == c || df__dep_has(d, s->id, c->id) || (!merge && df__dep_has_data_from(c, s))) continue;
            if (!df__grow(&c->controls, &c->cap_controls, c->n_controls + 1, sizeof(df_node *)) ||
                !df__dep_insert(d, s->id, c->id) || !df__dep_add_cons(d, s->id, c->id) || !df__dep_push(d, s->id))
                return -1;
            c->controls[c->n_controls++] = s;
        }
        if (!df__dep_push(d, c->id)) return -1;
    }
    for (int a = 0; a < d->n_in; a++) {
        if (a > 0 || !ident) df__dep_erase(d, d->ins[a]->id, i);
        if (!df__dep_push(d, d->ins[a]->id)) return -1;
    }
    if (ident) d->n_data[x->inputs[0].node->id]--;
    x->n_controls = 0;
    d->n_cons[i] = 0;
    o->removed[i] = 1;
    return 1;
}

/* Transitive reduction of the control edges (TensorFlow's: per source, in topological order,
   the nodes reached by a path of two or more edges; a control edge to such a node is implied).
   Paths go only through edges that carry both the order and the deadness of their source: none
   out of a Merge or ControlTrigger (live after dead inputs), out of or into Enter, Exit,
   NextIteration or LoopCount (they change frames), into a fed node (it does not wait for its
   inputs) or, as data, into a Merge. `budget` bounds the edges walked (the walk is quadratic at
   worst); what is left unreduced is only slower. Returns the edges removed, -1 on OOM. */
static int df__dep_edge_ok(const df__dep *d, const df_node *s, const df_node *c, int control) {
    if ((s->op->flags & (DF__DEP_FRAME | DF__OP_MERGE | DF__OP_CONTROL_TRIGGER)) || (c->op->flags & DF__DEP_FRAME) ||
        d->fed[c->id])
        return 0;
    return control || !(c->op->flags & DF__OP_MERGE);
}
static int64_t df__dep_reduce(df__dep *d, int64_t budget) {
    df_graph *g = d->g;
    int n = d->n;
    int *order = df__opt_topo(g);
    if (!order) return 0;                           /* (a cycle: left as it is) */
    int64_t removed = 0;
    int *pos = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int)), *first = (int *)DF_MALLOC((size_t)(n + 2) * sizeof(int));
    int *adj = NULL, *stack = (int *)DF_MALLOC((size_t)(2 * n + 2) * sizeof(int)), *seen = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    unsigned char *dist = (unsigned char *)DF_MALLOC((size_t)n + 1);
    unsigned char *ctl = NULL;
    int64_t n_adj = 0;
    if (!pos || !first || !stack || !seen || !dist) { removed = -1; goto out; }
    for (int q = 0; q < n; q++) pos[order[q]] = q;
    /* out-edges in CSR form, per source: its consumers along the edges paths may use */
    memset(first, 0, (size_t)(n + 2) * sizeof(int));
    for (int c = 0; c < n; c++) {
        const df_node *x = g->nodes[c];
        if (d->o->removed[c]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (df__dep_edge_ok(d, x->inputs[k].node, x, 0)) first[x->inputs[k].node->id + 1]++;
        for (int k = 0; k < x->n_controls; k++) if (df__dep_edge_ok(d, x->controls[k], x, 1)) first[x->controls[k]->id + 1]++;
    }
    for (int i = 0; i < n; i++) first[i + 1] += first[i];
    n_adj = first[n];
    adj = (int *)DF_MALLOC((size_t)(n_adj + 1) * sizeof(int));
    ctl = (unsigned char *)DF_MALLOC((size_t)n_adj + 1);
    if (!adj || !ctl) { removed = -1; goto out; }
    for (int i = 0; i < n; i++) seen[i] = first[i];
    for (int c = 0; c < n; c++) {
        const df_node *x = g->nodes[c];
        if (d->o->removed[c]) continue;
        for (int k = 0; k < x->n_inputs; k++)
            if (df__dep_edge_ok(d, x->inputs[k].node, x, 0)) { int e = seen[x->inputs[k].node->id]++; adj[e] = c; ctl[e] = 0; }
        for (int k = 0; k < x->n_controls; k++)
            if (df__dep_edge_ok(d, x->controls[k], x, 1)) { int e = seen[x->controls[k]->id]++; adj[e] = c; ctl[e] = 1; }
    }
    memset(dist, 0, (size_t)n + 1);
    for (int i = 0; i < n; i++) seen[i] = -1;
    for (int q = 0; q < n && budget > 0; q++) {
        int s = order[q], lo = n, hi = -1;
        for (int e = first[s]; e < first[s + 1]; e++) {
            if (pos[adj[e]] < lo) lo = pos[adj[e]];
            if (ctl[e] && pos[adj[e]] > hi) hi = pos[adj[e]];
        }
        if (lo >= hi) continue;                     /* no control edge that a longer path could imply */
        /* dist: 1 reached once, 2 reached by two or more edges (a path of length >= 2) */
        int sp = 0;
        stack[sp++] = s;
        while (sp) {
            int u = stack[--sp];
            for (int e = first[u]; e < first[u + 1]; e++) {
                int v = adj[e];
                budget--;
                if (pos[v] < lo || pos[v] > hi) continue;
                if (seen[v] != s) { seen[v] = s; dist[v] = 0; }
                if (dist[v] == 2) continue;
                dist[v]++;
                stack[sp++] = v;
            }
        }
        for (int e = first[s]; e < first[s + 1]; e++)
            if (ctl[e] && seen[adj[e]] == s && dist[adj[e]] == 2) { df__dep_erase(d, s, adj[e]); removed++; }
    }
out:
    DF_FREE(order); DF_FREE(pos); DF_FREE(first); DF_FREE(adj); DF_FREE(ctl); DF_FREE(stack); DF_FREE(seen); DF_FREE(dist);
    return removed;
}

/* The dependency optimizer. Returns the nodes removed (-1: out of memory); *edges: the control
   edges dropped besides those of the removed nodes. */
DF_PRIVATE int df__opt_dependencies(df__opt *o, int *edges) {
    df_graph *g = o->wg;
    df__dep d;
    memset(&d, 0, sizeof d);
    d.o = o;
    d.g = g;
    d.n = g->n_nodes;
    int n = d.n, count = 0, ok = 0;
    *edges = 0;
    d.cons = (int **)DF_MALLOC((size_t)(n + 1) * sizeof(int *));
    if (d.cons) memset(d.cons, 0, (size_t)(n + 1) * sizeof(int *));      /* (freed entry by entry) */
    d.n_cons = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    d.cap_cons = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    d.n_data = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    d.mark = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    d.queued = (unsigned char *)DF_MALLOC((size_t)n + 1);
    d.fed = (unsigned char *)DF_MALLOC((size_t)n + 1);
    int64_t n_ctl = 0;
    for (int i = 0; i < n; i++) n_ctl += g->nodes[i]->n_controls;
    d.cap_edges = 64;
    while ((size_t)(n_ctl + 1) * 4 > d.cap_edges) d.cap_edges *= 2;
    d.edges = (uint64_t *)DF_MALLOC(d.cap_edges * sizeof(uint64_t));
    if (!d.cons || !d.n_cons || !d.cap_cons || !d.n_data || !d.mark || !d.queued || !d.fed || !d.edges) goto out;
    memset(d.n_cons, 0, (size_t)(n + 1) * sizeof(int));
    memset(d.cap_cons, 0, (size_t)(n + 1) * sizeof(int));
    memset(d.n_data, 0, (size_t)(n + 1) * sizeof(int));
    memset(d.mark, 0, (size_t)(n + 1) * sizeof(int));
    memset(d.queued, 0, (size_t)n + 1);
    memset(d.fed, 0, (size_t)n + 1);
    memset(d.edges, 0, d.cap_edges * sizeof(uint64_t));
    for (int f = 0; f < o->n_feeds; f++) d.fed[o->feeds[f].node->id] = 1;
    for (int c = 0; c < n; c++) {
        const df_node *x = g->nodes[c];
        if (o->removed[c]) continue;
        for (int k = 0; k < x->n_inputs; k++) d.n_data[x->inputs[k].node->id]++;
        for (int k = 0; k < x->n_controls; k++)
            if (!df__dep_insert(&d, x->controls[k]->id, c) || !df__dep_add_cons(&d, x->controls[k]->id, c)) goto out;
    }
    for (int c = 0; c < n; c++) if (!o->removed[c]) df__dep_sweep(&d, g->nodes[c]);
    /* as TensorFlow: twice (reduce, bypass, clean up); each bypass may make more */
    for (int round = 0; round < 2; round++) {
        int64_t r = df__dep_reduce(&d, (int64_t)64 << 20);
        if (r < 0) goto out;
        d.edges_removed += r;
        for (int c = 0; c < n; c++) if (!o->removed[c]) df__dep_sweep(&d, g->nodes[c]);
        for (int i = 0; i < n; i++) if (!df__dep_push(&d, i)) goto out;
        while (d.n_work) {
            int i = d.work[--d.n_work];
            d.queued[i] = 0;
            int b = df__dep_bypass(&d, i);
            if (b < 0) goto out;
            count += b;
        }
        for (int c = 0; c < n; c++) if (!o->removed[c]) df__dep_sweep(&d, g->nodes[c]);
    }
    ok = 1;
out:
    if (d.cons) for (int i = 0; i < n; i++) DF_FREE(d.cons[i]);
    DF_FREE(d.cons); DF_FREE(d.n_cons); DF_FREE(d.cap_cons); DF_FREE(d.n_data); DF_FREE(d.mark); DF_FREE(d.queued);
    DF_FREE(d.fed); DF_FREE(d.edges); DF_FREE(d.work); DF_FREE(d.ins);
    *edges = d.edges_removed > INT32_MAX ? INT32_MAX : (int)d.edges_removed;
    return ok ? count : -1;
}
