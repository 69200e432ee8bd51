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
     DF_MAX_FOLDED_BYTES. Errors leave the node to fail at run time as it would have.
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
