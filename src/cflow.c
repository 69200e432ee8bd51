/* ==========================================================================================
   src/cflow.c: Control-flow construction                                             >>cflow
   df_cond and df_while_loop emit Switch, Merge, Enter, Exit, NextIteration and LoopCond as the
   seed documents describe. A context stack records where a node is made; a tensor used inside
   a context it was not made in is captured: a Switch per (tensor, branch) for cond, a constant
   Enter per (tensor, loop) for while (RefSwitch, RefEnter for a variable's reference),
   recursively through every enclosing context. Ops with no inputs, or only loop-invariant
   inputs, get a control edge from the context's pivot (TF #26371: else they run once more).
   ========================================================================================== */
static int df__ctx_contains(const df__ctx *outer, const df__ctx *inner) {
    if (!outer) return 1;
    for (const df__ctx *c = inner; c; c = c->outer) if (c == outer) return 1;
    return 0;
}

DF_PRIVATE df_node *df__ctx_control_pivot(df__ctx *ctx) {
    if (!ctx) return NULL;
    if (ctx->kind == DF__CTX_COND) return ctx->pivot;
    return ctx->pivot_for_body ? ctx->pivot_for_body : ctx->pivot_for_pred;
}

static df__ctx *df__ctx_new(df_graph *g, df__ctx_kind kind) {
    df__ctx *c = (df__ctx *)DF_MALLOC(sizeof *c);
    if (!c || !df__grow(&g->ctxs, &g->cap_ctxs, g->n_ctxs + 1, sizeof(df__ctx *))) {
        DF_FREE(c);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory making a control-flow context");
        return NULL;
    }
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->outer = g->ctx;
    g->ctxs[g->n_ctxs++] = c;
    return c;
}

/* Makes an op with the given inputs in context `ctx`, without capture or pivot edges. */
DF_PRIVATE df_node *df__raw_op(df_graph *g, df__ctx *ctx, const char *op, const df_output *ins, int n_ins,
                           int ins_as_list) {
    df__ctx *saved = g->ctx;
    g->ctx = ctx;
    df_op_builder *b = df_op_new(g, op, NULL);
    if (b) {
        b->raw = 1;
        if (ins_as_list) df_op_add_input_list(b, ins, n_ins);
        else for (int i = 0; i < n_ins; i++) df_op_add_input(b, ins[i]);
    }
    df_node *n = df_op_finish(b);
    g->ctx = saved;
    return n;
}

/* A reference (a variable) captured as a loop invariant enters as itself (RefEnter, TF's
   _Enter(use_ref=True)): an Assign or Apply* in the body updates the variable, and a reader
   reads it when it runs, in each iteration. A loop variable enters as a value. */
DF_PRIVATE df_node *df__make_enter(df_graph *g, df__ctx *loop, df_output x, int is_constant) {
    df__ctx *saved = g->ctx;
    g->ctx = loop;
    int ref = is_constant && x.node && x.index >= 0 && x.index < x.node->n_outputs && x.node->out_is_ref[x.index];
    df_op_builder *b = df_op_new(g, ref ? "RefEnter" : "Enter", NULL);
    if (b) {
        b->raw = 1;
        df_op_add_input(b, x);
        df_op_set_attr_string(b, "frame_name", loop->frame_name);
        df_op_set_attr_bool(b, "is_constant", is_constant);
        df_op_set_attr_int(b, "parallel_iterations", loop->parallel_iterations);
        /* An Enter of a loop nested in another loop fires once per outer iteration, gated by the
           outer pivot, so that the dead final outer iteration does not run the inner loop. */
        df_node *outer_pivot = loop->outer && loop->outer->kind == DF__CTX_WHILE
                               ? df__ctx_control_pivot(loop->outer) : NULL;
        if (outer_pivot) df_op_add_control_input(b, outer_pivot);
    }
    df_node *n = df_op_finish(b);
    g->ctx = saved;
    if (n) n->cf_part = 1;
    return n;
}

DF_PRIVATE df_output df__ctx_capture(df_graph *g, df__ctx *ctx, df_output x) {
    df_output none = {NULL, 0};
    if (!ctx || df__ctx_contains(ctx, x.node->ctx)) return x;
    for (int i = 0; i < ctx->n_captures; i++)
        if (ctx->captures[i].src == x.node && ctx->captures[i].index == x.index) return ctx->captures[i].value;
    df_output v;
    if (ctx->kind == DF__CTX_WHILE && ctx->grad_of && df__ctx_contains(ctx->grad_of, x.node->ctx)) {
        /* a gradient loop reading a value of the loop it differentiates */
        v = df__grad_real_value(g, ctx, x);
        if (!v.node) return none;
        goto record;
    }
    df_output outer_x = df__ctx_capture(g, ctx->outer, x);
    if (!outer_x.node) return none;
    if (ctx->kind == DF__CTX_COND) {
        df_output ins[2] = {outer_x, ctx->pred};   /* (a variable's reference: RefSwitch) */
        df_node *sw = df__raw_op(g, ctx->outer, outer_x.node->out_is_ref[outer_x.index] ? "RefSwitch" : "Switch", ins, 2, 0);
        if (!sw) return none;
        sw->ctx = ctx;          /* its live output belongs to this branch */
        v.node = sw;
        v.index = ctx->branch;
    } else {
        df_node *e = df__make_enter(g, ctx, outer_x, 1);
        if (!e) return none;
        v.node = e;
        v.index = 0;
    }
record:
    if (!df__grow(&ctx->captures, &ctx->cap_captures, ctx->n_captures + 1, sizeof(df__capture))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory capturing a tensor");
        return none;
    }
    ctx->captures[ctx->n_captures].src = x.node;
    ctx->captures[ctx->n_captures].index = x.index;
    ctx->captures[ctx->n_captures].value = v;
    ctx->n_captures++;
    return v;
}

/* A control input from outside a while loop cannot cross into the loop's frame directly: it
   becomes a small constant made after the outside node, captured like any tensor. */
DF_PRIVATE df_node *df__ctx_capture_control(df_graph *g, df__ctx *ctx, df_node *c) {
    if (df__ctx_contains(ctx, c->ctx)) return c;
    int crosses_loop = 0;
    for (df__ctx *k = ctx; k && !df__ctx_contains(k, c->ctx); k = k->outer)
        if (k->kind == DF__CTX_WHILE) crosses_loop = 1;
    if (!crosses_loop) return c;
    df__ctx *saved = g->ctx;
    g->ctx = c->ctx;
    df_tensor *zero = df_tensor_scalar_i32(0);
    df_op_builder *b = zero ? df_op_new(g, "Const", NULL) : NULL;
    if (b) {
        b->raw = 1;
        df_op_set_attr_tensor(b, "value", zero);
        df_op_set_attr_type(b, "dtype", DF_INT32);
        df_op_add_control_input(b, c);
    } else if (!zero) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    }
    df_tensor_release(zero);
    df_node *k = df_op_finish(b);
    g->ctx = saved;
    if (!k) return NULL;
    df_output kv = {k, 0};
    df_output v = df__ctx_capture(g, ctx, kv);
    return v.node;
}

/* A unique relative scope name: "cond", "cond_1", ... within the current scope. */
DF_PRIVATE int df__unique_scope(df_graph *g, const char *base, char *out, size_t n) {
    char key[256];
    snprintf(key, sizeof key, "%s%s/", df__scope(g), base);
    int next = 0;
    df__strmap_get(&g->name_counts, key, &next);
    if (!df__strmap_put(&g->name_counts, key, next + 1)) return 0;
    if (next == 0) snprintf(out, n, "%s", base);
    else snprintf(out, n, "%s_%d", base, next);
    return 1;
}

DF_PRIVATE df_code df__check_pred(df_graph *g, df_output pred, const char *what) {
    if (!df__output_valid(pred) || pred.node->graph != g)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: the predicate is NULL or invalid", what);
    if (df_output_dtype(pred) != DF_BOOL)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: the predicate must be a bool scalar, got %s "
                               "{{node %s}}", what, df_dtype_name(df_output_dtype(pred)), pred.node->name);
    int rank = pred.node->out_shapes[pred.index].rank;
    if (rank > 0)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: the predicate must be a scalar, got rank %d "
                               "{{node %s}}", what, rank, pred.node->name);
    return DF_OK;
}

/* Conds and loops nested in one another as they are built (each level is a C call of the builder
   and of the captures through it): at most DF_MAX_CONTROL_FLOW_DEPTH. */
static df_code df__check_nesting(df_graph *g, const char *what, const df_node *at) {
    int depth = 0;
    for (const df__ctx *c = g->ctx; c; c = c->outer) depth++;
    if (depth < DF_MAX_CONTROL_FLOW_DEPTH) return DF_OK;
    return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: conds and while loops nest more than %d deep "
                           "(DF_MAX_CONTROL_FLOW_DEPTH) {{node %s}}", what, DF_MAX_CONTROL_FLOW_DEPTH, at->name);
}

df_code df_cond(df_graph *g, df_output pred, int n_out, df_branch_fn then_fn, df_branch_fn else_fn,
                void *user, df_output *outs) {
    for (int i = 0; outs && i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (g->fn_parent) return df_if(g, pred, n_out, then_fn, else_fn, user, outs);   /* in a function: If */
    if (n_out < 0 || (n_out > 0 && !outs) || !then_fn || !else_fn)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_cond: bad arguments (n_out %d, outs %s, "
                               "then_fn %s, else_fn %s)", n_out, outs ? "set" : "NULL",
                               then_fn ? "set" : "NULL", else_fn ? "set" : "NULL");
    for (int i = 0; i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    if (df__check_pred(g, pred, "df_cond") || df__check_nesting(g, "df_cond", pred.node)) return g->status.code;
    char scope[64];
    if (!df__unique_scope(g, "cond", scope, sizeof scope))
        return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    df_graph_push_name_scope(g, scope);
    df__ctx *outer = g->ctx;
    df_output *res = (df_output *)DF_MALLOC((size_t)(2 * n_out + 1) * sizeof(df_output));
    if (!res) { df_graph_pop_name_scope(g); return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    memset(res, 0, (size_t)(2 * n_out + 1) * sizeof(df_output));
    df_output *res_t = res, *res_f = res + n_out;

    df_op_builder *b = df_op_new(g, "Switch", "switch");
    df_op_add_input(b, pred);
    df_op_add_input(b, pred);
    df_node *sw = df_op_finish(b);
    b = df_op_new(g, "Identity", "pred_id");
    df_op_add_input(b, pred);
    df_node *pred_id = df_op_finish(b);
    df_output sw_t = {sw, 1}, sw_f = {sw, 0};
    b = df_op_new(g, "Identity", "switch_t");
    df_op_add_input(b, sw_t);
    df_node *pivot_t = df_op_finish(b);
    b = df_op_new(g, "Identity", "switch_f");
    df_op_add_input(b, sw_f);
    df_node *pivot_f = df_op_finish(b);
    df__ctx *ctx_t = g->status.code ? NULL : df__ctx_new(g, DF__CTX_COND);
    df__ctx *ctx_f = g->status.code ? NULL : df__ctx_new(g, DF__CTX_COND);
    if (ctx_t && ctx_f) {
        df_output pid = {pred_id, 0};
        ctx_t->pred = pid; ctx_t->branch = 1; ctx_t->pivot = pivot_t; pivot_t->ctx = ctx_t;
        ctx_f->pred = pid; ctx_f->branch = 0; ctx_f->pivot = pivot_f; pivot_f->ctx = ctx_f;
        for (int br = 0; br < 2 && !g->status.code; br++) {
            df__ctx *ctx = br == 0 ? ctx_t : ctx_f;
            df_output *r = br == 0 ? res_t : res_f;
            g->ctx = ctx;
            (br == 0 ? then_fn : else_fn)(g, user, r);
            for (int i = 0; i < n_out && !g->status.code; i++) {
                if (!df__output_valid(r[i]) || r[i].node->graph != g) {
                    df__graph_error(g, DF_INVALID_ARGUMENT, "df_cond: the %s branch left output %d "
                                    "NULL or invalid", br == 0 ? "then" : "else", i);
                    break;
                }
                r[i] = df__ctx_capture(g, ctx, r[i]);   /* a branch may return an outside tensor */
            }
            g->ctx = outer;
        }
    }
    g->ctx = outer;
    for (int i = 0; i < n_out && !g->status.code; i++) {
        if (df_output_dtype(res_t[i]) != df_output_dtype(res_f[i])) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_cond: output %d of the then branch is %s but "
                            "the else branch gives %s", i, df_dtype_name(df_output_dtype(res_t[i])),
                            df_dtype_name(df_output_dtype(res_f[i])));
            break;
        }
        df_output pair[2] = {res_f[i], res_t[i]};     /* value_index equals the branch taken */
        b = df_op_new(g, "Merge", NULL);
        if (b) b->raw = 1;
        df_op_add_input_list(b, pair, 2);
        df_node *m = df_op_finish(b);
        if (m) { m->cond = ctx_t; outs[i].node = m; outs[i].index = 0; }
    }
    DF_FREE(res);
    df_graph_pop_name_scope(g);
    if (g->status.code) for (int i = 0; i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    return g->status.code;
}

/* Whether value-producing node n of while loop C is surely dead once C's predicate is false:
   one of C's body Identities (of its Switches' true outputs), or an op of C (no Merge, whose one
   live input suffices; no Enter, whose invariant lives in every iteration; no call, If or While,
   whose lowering may hand an argument straight to a result, bypassing the others) with an
   input or a control input that is. A bounded search (depth 6, 64 nodes looked at): not finding it only
   costs the caller a control edge it may not have needed. */
static int df__fed_by_pivot_search(const df_node *n, const df__ctx *C, int depth, int *budget) {
    if (!n || n->ctx != C || --*budget < 0) return 0;
    if (!strcmp(n->op->name, "Identity") && n->n_inputs == 1) {
        const df_node *sw = n->inputs[0].node;
        if ((sw->op->flags & DF__OP_SWITCH) && sw->cf_part && sw->ctx == C && n->inputs[0].index == 1) return 1;
    }
    if (depth == 0 || (n->op->flags & (DF__OP_MERGE | DF__OP_ENTER | DF__OP_SWITCH | DF__OP_NEXT_ITERATION |
                                       DF__OP_FUNCTIONAL))) return 0;
    for (int i = 0; i < n->n_controls; i++)
        if (df__fed_by_pivot_search(n->controls[i], C, depth - 1, budget)) return 1;
    for (int i = 0; i < n->n_inputs; i++)
        if (df__fed_by_pivot_search(n->inputs[i].node, C, depth - 1, budget)) return 1;
    return 0;
}
static int df__fed_by_pivot(const df_node *n, const df__ctx *C) {
    int budget = 64;
    return df__fed_by_pivot_search(n, C, 6, &budget);
}

DF_PRIVATE int df__shapes_equal(const df__shape *a, const df__shape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++) if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* The most specific shape both a and b satisfy. */
DF_PRIVATE df__shape df__shape_relax(const df__shape *a, const df__shape *b) {
    df__shape r = {0};
    if (a->rank != b->rank || a->rank < 0) { r.rank = -1; return r; }
    r.rank = a->rank;
    for (int i = 0; i < a->rank; i++) r.dims[i] = a->dims[i] == b->dims[i] ? a->dims[i] : -1;
    return r;
}

/* What the phases of df_while_loop share: the loop's context and, per loop variable (the
   iteration counter first when there is one), the tensors each phase makes for the next. */
typedef struct df__while_build {
    df_graph *g;
    df__ctx *C, *outer;          /* the loop's context and the one it is built in */
    int n, has_counter;          /* n counts the counter too */
    int parallel_iterations;
    int64_t max_iter;            /* 0: no limit */
    const char *base;            /* the name its scope is made unique from */
    df_output *vals, *merges, *switches, *body_in, *next;
} df__while_build;

/* Arguments are checked before anything is made, so that a bad call leaves the graph as it was
   apart from its status. Fills the options part of w. */
static df_code df__while_check_args(df__while_build *w, int n_vars, const df_output *init, df_loop_cond_fn cond,
                                    df_loop_body_fn body, const df_while_options *opts, df_output *outs) {
    df_graph *g = w->g;
    if (n_vars < 1 || !init || !cond || !body || !outs)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: bad arguments (n_vars %d must be "
                               ">= 1; init, cond, body and outs must be set)", n_vars);
    for (int i = 0; i < n_vars; i++) outs[i].node = NULL, outs[i].index = 0;
    for (int i = 0; i < n_vars; i++)
        if (!df__output_valid(init[i]) || init[i].node->graph != g)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: loop variable %d is NULL or "
                                   "invalid", i);
    if (df__check_nesting(g, "df_while_loop", init[0].node)) return g->status.code;
    int par = opts ? opts->parallel_iterations : 0;
    int64_t max_iter = opts ? opts->maximum_iterations : 0;
    if (par < 0) return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: parallel_iterations must "
                                        "be positive, got %d", par);
    if (max_iter < 0) return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: maximum_iterations "
                                             "must be >= 0 (0 means no limit), got %lld", (long long)max_iter);
    if (par == 0) par = 10;
    const char *base = opts && opts->name && *opts->name ? opts->name : "while";
    if (!df__valid_node_name(base))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: invalid name '%s'", base);
    w->parallel_iterations = par;
    w->max_iter = max_iter;
    w->base = base;
    return DF_OK;
}

/* The context records what the loop's Enters name (frame, parallel_iterations) and what its
   gradient needs (the body, and its nodes per variable). An allocation that fails here is
   recorded on the graph, and the phases after it make nothing. */
static void df__while_init_ctx(df__while_build *w, df_loop_body_fn body, void *user, const df_while_options *opts) {
    df_graph *g = w->g;
    df__ctx *C = w->C;
    int n = w->n;
    const char *full = df__scope(g);
    size_t len = strlen(full);
    C->frame_name = (char *)DF_MALLOC(len + 1);
    if (C->frame_name) { memcpy(C->frame_name, full, len); C->frame_name[len ? len - 1 : 0] = 0; }
    else df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    C->parallel_iterations = w->parallel_iterations;
    C->grad_of = g->next_grad_of;
    g->next_grad_of = NULL;
    C->swap_memory = opts ? opts->swap_memory : 0;
    C->checkpoint_every = opts && opts->checkpoint_every > 0 ? opts->checkpoint_every : 0;
    C->body_fn = body; C->user = user;
    C->n_vars = n;
    C->has_counter = w->has_counter;
    C->enters = (df_node **)DF_MALLOC((size_t)(6 * n) * sizeof(df_node *));
    if (C->enters) {
        memset(C->enters, 0, (size_t)(6 * n) * sizeof(df_node *));
        C->merges = C->enters + n; C->switches = C->enters + 2 * n; C->bodies = C->enters + 3 * n;
        C->nexts = C->enters + 4 * n; C->exits = C->enters + 5 * n;
    } else {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    }
}

/* Each variable enters the loop's frame once, and a Merge picks the entering value on the first
   iteration and the NextIteration's (wired later) after it. */
static void df__while_enter_vars(df__while_build *w, const df_output *init, int n_vars) {
    df_graph *g = w->g;
    df__ctx *C = w->C;
    /* Initial values, valid in the outer context. */
    if (w->has_counter) {
        df_output zero = df_scalar_i64(g, 0);
        w->vals[0] = zero;
    }
    for (int i = 0; i < n_vars && !g->status.code; i++)
        w->vals[w->has_counter + i] = w->outer ? df__ctx_capture(g, w->outer, init[i]) : init[i];
    /* Enter and Merge per variable. */
    for (int i = 0; i < w->n && !g->status.code; i++) {
        df_node *e = df__make_enter(g, C, w->vals[i], 0);
        if (!e) break;
        df_output ev = {e, 0}, pair[2] = {ev, ev};
        df_node *m = df__raw_op(g, C, "Merge", pair, 2, 1);
        if (!m) break;
        m->cf_part = 1;
        C->enters[i] = e; C->merges[i] = m;
        w->merges[i].node = m;
        w->merges[i].index = 0;
    }
}

/* The user's predicate, and'ed with the iteration limit, becomes the LoopCond that every
   variable's Switch reads: its true side feeds the body (through an Identity, the first of which
   is the body's pivot), its false side the Exit. */
static void df__while_cond_and_switches(df__while_build *w, df_loop_cond_fn cond, void *user) {
    df_graph *g = w->g;
    df__ctx *C = w->C, *outer = w->outer;
    df_output *merges = w->merges;
    C->pivot_for_pred = merges[0].node;
    g->ctx = C;
    df_output c = cond(g, user, merges + w->has_counter);
    g->ctx = outer;
    if (!g->status.code && (!df__output_valid(c) || c.node->graph != g))
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: cond returned a NULL or invalid tensor");
    if (!g->status.code) {
        g->ctx = C;
        c = df__ctx_capture(g, C, c);
        if (!g->status.code && df__check_pred(g, c, "df_while_loop cond") == DF_OK && w->has_counter) {
            df_output limit = df_scalar_i64(g, w->max_iter);
            df_output lt = df_less(g, merges[0], limit);
            c = df_logical_and(g, lt, c);
        }
        g->ctx = outer;
    }
    df_node *lc = g->status.code ? NULL : df__raw_op(g, C, "LoopCond", &c, 1, 0);
    if (lc) { lc->cf_part = 1; C->loop_cond = lc; }
    for (int i = 0; i < w->n && lc; i++) {
        df_output lcv = {lc, 0}, ins[2] = {merges[i], lcv};
        df_node *sw = df__raw_op(g, C, "Switch", ins, 2, 0);
        if (!sw) break;
        w->switches[i].node = sw;
        df_output t = {sw, 1};
        sw->cf_part = 1;
        C->switches[i] = sw;
        if (C->grad_of && i > 0) {      /* gradient loops: only the pivot needs an Identity */
            C->bodies[i] = sw;
            w->body_in[i] = t;
            continue;
        }
        df_node *id = df__raw_op(g, C, "Identity", &t, 1, 0);
        if (!id) break;
        id->cf_part = 1;
        C->bodies[i] = id;
        w->body_in[i].node = id;
        if (i == 0) C->pivot_for_body = id;
    }
}

/* The user's body makes the next values inside the loop; each must be a valid tensor of its
   variable's dtype (captured into the loop if the body returned an outer one). */
static void df__while_call_body(df__while_build *w, df_loop_body_fn body, void *user) {
    df_graph *g = w->g;
    df__ctx *C = w->C;
    int has_counter = w->has_counter;
    df_output *merges = w->merges, *next = w->next;
    g->ctx = C;
    body(g, user, w->body_in + has_counter, next + has_counter);
    if (has_counter && !g->status.code) next[0] = df_add(g, w->body_in[0], df_scalar_i64(g, 1));
    for (int i = 0; i < w->n && !g->status.code; i++) {
        if (!df__output_valid(next[i]) || next[i].node->graph != g) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: the body left output %d NULL or "
                            "invalid", i - has_counter);
            break;
        }
        next[i] = df__ctx_capture(g, C, next[i]);
        if (!next[i].node) break;
        if (df_output_dtype(next[i]) != df_output_dtype(merges[i])) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: loop variable %d enters the loop "
                            "as %s but the body returns %s {{node %s}}", i - has_counter,
                            df_dtype_name(df_output_dtype(merges[i])), df_dtype_name(df_output_dtype(next[i])),
                            next[i].node->name);
            break;
        }
    }
    g->ctx = w->outer;
}

/* The back edges: a NextIteration per variable becomes its Merge's second input, and the Merge's
   shape relaxes to what both iterations agree on. */
static void df__while_next_iterations(df__while_build *w) {
    df_graph *g = w->g;
    df__ctx *C = w->C;
    df_output *merges = w->merges, *next = w->next;
    for (int i = 0; i < w->n && !g->status.code; i++) {
        df_node *ni = df__raw_op(g, C, "NextIteration", &next[i], 1, 0);
        if (!ni) break;
        ni->cf_part = 1;
        /* A NextIteration whose value may be live when the predicate is false (fed by a loop
           invariant, or by a Merge the body made with one among its inputs) fires in the
           dead iteration after the loop ended too, and starts iterations without end. TF
           (_MaybeAddControlDependency) gates the first case on the pivot; here every
           NextIteration not fed by the pivot's own branch waits for the pivot (dead when
           the loop ends), which covers both. */
        if (C->pivot_for_body && !df__fed_by_pivot(next[i].node, C) &&
            !df__node_add_control(ni, C->pivot_for_body)) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); break; }
        C->nexts[i] = ni;
        df_output niv = {ni, 0};
        df__shape *ms = &merges[i].node->out_shapes[0];
        if (!df__shapes_equal(ms, &ni->out_shapes[0])) *ms = df__shape_relax(ms, &ni->out_shapes[0]);
        df_node_update_input(g, merges[i].node, 1, niv);
    }
}

/* An Exit per variable, in the outer context, takes the Switch's false side: the loop's results
   (the counter's Exit is made too, but not returned). */
static void df__while_exits(df__while_build *w, df_output *outs) {
    df_graph *g = w->g;
    int has_counter = w->has_counter;
    df_output *merges = w->merges, *switches = w->switches;
    for (int i = 0; i < w->n && !g->status.code; i++) {
        df_output f = {switches[i].node, 0};
        switches[i].node->out_shapes[0] = switches[i].node->out_shapes[1] = merges[i].node->out_shapes[0];
        df_node *ex = df__raw_op(g, w->outer, "Exit", &f, 1, 0);
        if (!ex) break;
        ex->cf_part = 1;
        w->C->exits[i] = ex;
        ex->out_shapes[0] = merges[i].node->out_shapes[0];
        if (i >= has_counter) { outs[i - has_counter].node = ex; outs[i - has_counter].index = 0; }
    }
}

df_code df_while_loop(df_graph *g, int n_vars, const df_output *init, df_loop_cond_fn cond,
                      df_loop_body_fn body, void *user, const df_while_options *opts,
                      df_output *outs) {
    for (int i = 0; outs && i < n_vars; i++) outs[i].node = NULL, outs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (g->fn_parent) return df_while(g, n_vars, init, cond, body, user, opts, outs);   /* in a function: While */
    df__while_build w;
    memset(&w, 0, sizeof w);
    w.g = g;
    df_code code = df__while_check_args(&w, n_vars, init, cond, body, opts, outs);
    if (code) return code;
    char scope[96];
    if (!df__unique_scope(g, w.base, scope, sizeof scope))
        return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    df_graph_push_name_scope(g, scope);
    w.outer = g->ctx;
    w.has_counter = w.max_iter > 0;
    int n = w.n = n_vars + w.has_counter;
    df_output *mem = (df_output *)DF_MALLOC((size_t)(5 * n + 2) * sizeof(df_output));
    w.C = mem ? df__ctx_new(g, DF__CTX_WHILE) : NULL;
    if (!mem || !w.C) {
        DF_FREE(mem);
        df_graph_pop_name_scope(g);
        return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    }
    memset(mem, 0, (size_t)(5 * n + 2) * sizeof(df_output));
    w.vals = mem; w.merges = mem + n; w.switches = mem + 2 * n; w.body_in = mem + 3 * n; w.next = mem + 4 * n;
    df__while_init_ctx(&w, body, user, opts);
    df__while_enter_vars(&w, init, n_vars);
    if (!g->status.code) df__while_cond_and_switches(&w, cond, user);
    if (!g->status.code) {
        df__while_call_body(&w, body, user);
        df__while_next_iterations(&w);
        df__while_exits(&w, outs);
    }
    g->ctx = w.outer;
    DF_FREE(mem);
    df_graph_pop_name_scope(g);
    if (g->status.code) for (int i = 0; i < n_vars; i++) outs[i].node = NULL, outs[i].index = 0;
    return g->status.code;
}
