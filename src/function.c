/* ==========================================================================================
   src/function.c: Functions and functional control flow                               >>func
   A root graph holds a library of named functions. A function's body is a graph of its own:
   _Arg nodes stand for its arguments, and values of the graph it was defined in that the body
   uses are captured as extra arguments, which every call passes. If/StatelessIf and
   While/StatelessWhile take functions as attrs (then_branch, else_branch, cond, body);
   PartitionedCall/StatefulPartitionedCall call one (attr f). Inside a body, df_cond and
   df_while_loop build If and While, so bodies hold no Switch/Merge/Enter/Exit.
   Before a graph runs, and before df_gradients walks it, every such node is lowered: its
   functions are instantiated in the graph, inside df_cond / df_while_loop for If and While,
   and the node itself becomes an IdentityN of the results (a NoOp when it has none), so
   handles to its outputs stay valid and the executor, the partitioner and autodiff see only
   the five primitives.
   ========================================================================================== */
static void df__call_rt_free(struct df__call_rt *rt);

static df_graph *df__fn_root(const df_graph *g) {
    for (;;) {
        while (g->fn_parent) g = g->fn_parent;
        if (!g->lib_from) return (df_graph *)g;
        g = g->lib_from;
    }
}
DF_PRIVATE df__func *df__fn_find(const df_graph *g, const char *name) {
    const df_graph *r = df__fn_root(g);
    int i;
    return name && df__strmap_get(&r->func_names, name, &i) ? r->funcs[i] : NULL;
}
DF_PRIVATE void df__func_free(df__func *f) {
    if (!f) return;
    df__call_rt_free(f->rt);
    df_graph_free(f->body);
    DF_FREE(f->name); DF_FREE(f->args); DF_FREE(f->rets);
    DF_FREE(f);
}
DF_PRIVATE int df__fn_encloses(const df_graph *outer, const df_graph *g) {
    for (g = g->fn_parent; g; g = g->fn_parent) if (g == outer) return 1;
    return 0;
}
static int df__fn_nesting(const df_graph *g) {
    int d = 0;
    for (; g->fn_parent; g = g->fn_parent) d++;
    return d;
}
static const char *df__attr_s_kind(const df_node *n, const char *name) {
    const df__attr *a = df__node_attr(n, name);
    return a && (a->kind == DF__A_FUNC || a->kind == DF__A_STRING) && a->u.s ? a->u.s : "";
}
static int df__is_functional(const df_node *n) { return (n->op->flags & DF__OP_FUNCTIONAL) != 0; }

/* A new _Arg in body g: dtype t, shape s (NULL: unknown), position index. */
static df_node *df__fn_new_arg(df_graph *g, df_dtype t, const df__shape *s, int index, const char *base) {
    df_op_builder *b = df_op_new(g, "_Arg", NULL);
    if (!b) return NULL;
    char *name = df__unique_name(g, base);
    if (!name) { b->oom = 1; } else { DF_FREE(b->name); b->name = name; }
    b->raw = 1;
    df_op_set_attr_type(b, "T", t);
    df_op_set_attr_int(b, "index", index);
    df__shape unknown = df__shape_unknown();
    if (!s) s = &unknown;
    df_op_set_attr_shape(b, "shape", s->rank, s->dims);
    return df_op_finish(b);
}

/* x, a value of a graph enclosing body g, as g sees it: an _Arg of g made once per value
   (captured into the graphs in between first). */
DF_PRIVATE df_output df__fn_capture(df_graph *g, df_output x) {
    df_output none = {NULL, 0};
    df_output outer = x;
    if (!g->fn_parent) return none;
    if (x.node->graph != g->fn_parent) {
        outer = df__fn_capture(g->fn_parent, x);
        if (!outer.node) {
            if (!g->status.code) df__graph_error(g, g->fn_parent->status.code ? g->fn_parent->status.code : DF_INTERNAL,
                                                 "Capturing '%s': %s", x.node->name, g->fn_parent->status.message);
            return none;
        }
    }
    for (int i = 0; i < g->n_fcap; i++)
        if (g->fcap_src[i].node == outer.node && g->fcap_src[i].index == outer.index)
            return (df_output){g->fcap_args[i], 0};
    if (!df__grow(&g->fcap_src, &g->cap_fcap_src, g->n_fcap + 1, sizeof(df_output)) ||
        !df__grow(&g->fcap_args, &g->cap_fcap_args, g->n_fcap + 1, sizeof(df_node *))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory capturing a value");
        return none;
    }
    df_node *a = df__fn_new_arg(g, df_output_dtype(outer), &outer.node->out_shapes[outer.index], -1, "capture");
    if (!a) return none;
    a->out_is_ref[0] = outer.node->out_is_ref[outer.index];     /* a variable stays one */
    g->fcap_src[g->n_fcap] = outer;
    g->fcap_args[g->n_fcap++] = a;
    return (df_output){a, 0};
}

/* The functions a node uses, through its func attrs. */
static int df__fn_uses(const df_node *n, const char **names, int max) {
    int k = 0;
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].kind == DF__A_FUNC && k < max) names[k++] = n->attrs[i].u.s ? n->attrs[i].u.s : "";
    return k;
}

DF_PRIVATE df__func *df__fn_make(df_graph *g, const char *name, int n_args, const df_dtype *types,
                             const df__shape *shapes, int n_out, df__fn_build_fn build, void *user) {
    if (g->status.code) return NULL;
    if (df__fn_nesting(g) >= DF_MAX_FUNCTION_DEPTH) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "Function '%s': functions nest more than %d deep", name, DF_MAX_FUNCTION_DEPTH);
        return NULL;
    }
    df_graph *root = df__fn_root(g);
    if (df__strmap_get(&root->func_names, name, NULL)) {
        df__graph_error(g, DF_ALREADY_EXISTS, "Function '%s' is already defined in the graph's library", name);
        return NULL;
    }
    df__func *f = (df__func *)DF_MALLOC(sizeof *f);
    df_output *outs = (df_output *)DF_MALLOC((size_t)(n_out + 1) * sizeof(df_output));
    if (!f || !outs || !df__grow(&root->funcs, &root->cap_funcs, root->n_funcs + 1, sizeof(df__func *))) {
        DF_FREE(f); DF_FREE(outs);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory defining function '%s'", name);
        return NULL;
    }
    memset(f, 0, sizeof *f);
    memset(outs, 0, (size_t)(n_out + 1) * sizeof(df_output));
    f->name = df__strdup(name);
    f->body = df_graph_new();
    f->n_rets = n_out;
    f->defining = 1;
    f->args = (df_node **)DF_MALLOC((size_t)(n_args + 1) * sizeof(df_node *));
    if (!f->name || !f->body || !f->args || !df__strmap_put(&root->func_names, name, root->n_funcs)) {
        df__func_free(f); DF_FREE(outs);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory defining function '%s'", name);
        return NULL;
    }
    root->funcs[root->n_funcs++] = f;     /* listed while it is built, so a use of it is seen */
    df_graph *fg = f->body;
    fg->fn_parent = g;
    for (int i = 0; i < n_args; i++) {
        char base[32];
        snprintf(base, sizeof base, "arg%d", i);
        f->args[i] = df__fn_new_arg(fg, types[i], shapes ? &shapes[i] : NULL, i, base);
    }
    df_output *args = (df_output *)DF_MALLOC((size_t)(n_args + 1) * sizeof(df_output));
    if (args) {
        for (int i = 0; i < n_args; i++) args[i] = (df_output){f->args[i], 0};
        if (!fg->status.code) build(fg, user, args, outs);
    } else df__graph_error(fg, DF_RESOURCE_EXHAUSTED, "Out of memory");
    DF_FREE(args);
    /* results from an enclosing graph are captured like any other use */
    for (int i = 0; i < n_out && !fg->status.code; i++) {
        if (!df__output_valid(outs[i])) {
            df__graph_error(fg, DF_INVALID_ARGUMENT, "result %d was not set (or is invalid)", i);
        } else if (outs[i].node->graph != fg) {
            if (df__fn_encloses(outs[i].node->graph, fg)) outs[i] = df__fn_capture(fg, outs[i]);
            else df__graph_error(fg, DF_INVALID_ARGUMENT, "result %d comes from another graph", i);
        }
    }
    if (fg->status.code) {
        if (!g->status.code) df__graph_error(g, fg->status.code, "%s (in function '%s')", fg->status.message, name);   /* (the reason first: nesting appends) */
        DF_FREE(outs);
        return NULL;
    }
    df_node **all = (df_node **)DF_REALLOC(f->args, (size_t)(n_args + fg->n_fcap + 1) * sizeof(df_node *));
    if (!all) { DF_FREE(outs); df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    f->args = all;
    for (int k = 0; k < fg->n_fcap; k++) {
        f->args[n_args + k] = fg->fcap_args[k];
        df__node_attr_mut(fg->fcap_args[k], "index")->u.i = n_args + k;
    }
    f->n_caps = fg->n_fcap;
    f->n_args = n_args + fg->n_fcap;
    f->rets = outs;
    int depth = 0;
    int64_t size = fg->n_nodes;
    const df_node *deepest = NULL;
    for (int i = 0; i < fg->n_nodes; i++) {
        const df_node *n = fg->nodes[i];
        if (n->op->flags & DF__OP_STATEFUL) f->stateful = 1;
        const char *used[4];
        int k = df__fn_uses(n, used, 4);
        for (int j = 0; j < k; j++) {
            const df__func *u = df__fn_find(g, used[j]);
            if (u && u->depth > depth) { depth = u->depth; deepest = n; }
            if (u) size = DF__MIN(size + u->size, (int64_t)1 << 62);   /* (calls of calls grow exponentially) */
        }
    }
    f->depth = depth + 1;
    f->size = size;
    if (f->depth > DF_MAX_FUNCTION_DEPTH) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "Function '%s' calls functions %d deep; the limit is %d (DF_MAX_FUNCTION_DEPTH) "
                        "{{node %s}}", name, f->depth, DF_MAX_FUNCTION_DEPTH, deepest ? deepest->name : "?");
        return NULL;
    }
    f->defining = 0;
    return f;
}

typedef struct df__fn_user { df_function_fn fn; void *user; } df__fn_user;
static void df__fn_build_user(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const df__fn_user *u = (const df__fn_user *)user;
    u->fn(fg, u->user, args, outs);
}

df_code df_function_define(df_graph *g, const char *name, int n_args, const df_dtype *arg_types, int n_out,
                           df_function_fn fn, void *user) {
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (!name || !df__valid_node_name(name) || strlen(name) > 200)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_function_define: invalid function name '%s' (letters, "
                               "digits and . _ - /, not starting with _ - /, at most 200 characters)", name ? name : "(null)");
    if (n_args < 0 || n_out < 0 || (n_args > 0 && !arg_types) || !fn)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_function_define: bad arguments for '%s' (n_args %d, n_out %d, "
                               "arg_types and fn must be set)", name, n_args, n_out);
    for (int i = 0; i < n_args; i++)
        if (!df_dtype_size(arg_types[i]) && arg_types[i] != DF_STRING)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_function_define: argument %d of '%s' has bad dtype %d",
                                   i, name, (int)arg_types[i]);
    df__fn_user u = {fn, user};
    return df__fn_make(g, name, n_args, arg_types, NULL, n_out, df__fn_build_user, &u) ? DF_OK : g->status.code;
}

int df_graph_num_functions(const df_graph *g) { return g ? df__fn_root(g)->n_funcs : 0; }
const char *df_graph_function_name(const df_graph *g, int i) {
    const df_graph *r = g ? df__fn_root(g) : NULL;
    return r && i >= 0 && i < r->n_funcs ? r->funcs[i]->name : NULL;
}
const df_graph *df_graph_function_body(const df_graph *g, const char *name) {
    const df__func *f = g ? df__fn_find(g, name) : NULL;
    return f ? f->body : NULL;
}

/* A function name not yet in g's library: base_1, base_2, ... */
static int df__fn_fresh_name(df_graph *g, const char *base, char *out, size_t n) {
    df_graph *r = df__fn_root(g);
    for (int k = r->n_funcs;; k++) {
        snprintf(out, n, "%s_%d", base, k);
        if (!df__strmap_get(&r->func_names, out, NULL)) return 1;
    }
}

/* The node for a function call, If or While: inputs in groups (one single input, then a list). */
static df_node *df__fn_node(df_graph *g, const char *op, const char *base, const df_output *single,
                            const df_output *list, int n_list, const char *const *fattr, const char *const *fname,
                            int n_f, const char *types_attr, const df_dtype *types, int n_types) {
    df_op_builder *b = df_op_new(g, op, NULL);
    if (!b) return NULL;
    char *name = df__unique_name(g, base);
    if (!name) b->oom = 1; else { DF_FREE(b->name); b->name = name; }
    if (single) df_op_add_input(b, *single);
    static const df_output dummy = {NULL, 0};
    df_op_add_input_list(b, n_list ? list : &dummy, n_list);
    for (int i = 0; i < n_f; i++) df_op_set_attr_func(b, fattr[i], fname[i]);
    if (types_attr) df_op_set_attr_type_list(b, types_attr, types, n_types);
    return df_op_finish(b);
}

df_code df_call(df_graph *g, const char *name, int n_args, const df_output *args, int n_out, df_output *outs) {
    for (int i = 0; outs && i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (!name || n_args < 0 || n_out < 0 || (n_args && !args) || (n_out && !outs))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_call: bad arguments");
    df__func *f = df__fn_find(g, name);
    if (!f) return df__graph_error(g, DF_NOT_FOUND, "df_call: function '%s' is not in the graph's library", name);
    if (f->defining)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_call: function '%s' calls itself (directly or through other "
                               "functions); recursion is not supported", name);
    if (n_args != f->n_args - f->n_caps || n_out != f->n_rets)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_call: function '%s' takes %d argument%s and gives %d result%s; "
                               "called with %d and %d", name, f->n_args - f->n_caps, f->n_args - f->n_caps == 1 ? "" : "s",
                               f->n_rets, f->n_rets == 1 ? "" : "s", n_args, n_out);
    const df_graph *home = f->body->fn_parent;
    if (f->n_caps && home != g && !df__fn_encloses(home, g))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_call: function '%s' captures values of the body it was "
                               "defined in; call it from there", name);
    df_output *in = (df_output *)DF_MALLOC((size_t)(f->n_args + 1) * sizeof(df_output));
    df_dtype *tout = (df_dtype *)DF_MALLOC((size_t)(f->n_rets + 1) * sizeof(df_dtype));
    if (!in || !tout) { DF_FREE(in); DF_FREE(tout); return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    for (int i = 0; i < n_args; i++) in[i] = args[i];
    for (int k = 0; k < f->n_caps; k++) in[n_args + k] = f->body->fcap_src[k];
    for (int i = 0; i < f->n_rets; i++) tout[i] = df_output_dtype(f->rets[i]);
    const char *fa = "f";
    df_node *n = df__fn_node(g, f->stateful ? "StatefulPartitionedCall" : "PartitionedCall", name, NULL, in,
                             f->n_args, &fa, (const char *const *)&f->name, 1, "Tout", tout, f->n_rets);
    DF_FREE(in); DF_FREE(tout);
    if (!n) return g->status.code;
    for (int i = 0; i < n_out; i++) outs[i] = (df_output){n, i};
    return DF_OK;
}

/* Gives functions fa and fb the same arguments: the union of their captures, fa's first. The
   captures are the values the If or While passes after its declared inputs (n_decl). */
static df_output *df__fn_union_captures(df_graph *g, df__func *fa, df__func *fb, int n_decl, int *n_union) {
    int na = fa->n_caps, nb = fb->n_caps;
    df_output *u = (df_output *)DF_MALLOC((size_t)(na + nb + 1) * sizeof(df_output));
    df_node **aa = (df_node **)DF_MALLOC((size_t)(n_decl + na + nb + 1) * sizeof(df_node *));
    df_node **ab = (df_node **)DF_MALLOC((size_t)(n_decl + na + nb + 1) * sizeof(df_node *));
    if (!u || !aa || !ab) goto oom;
    int n = 0;
    for (int k = 0; k < na; k++) u[n++] = fa->body->fcap_src[k];
    for (int k = 0; k < nb; k++) {
        int seen = 0;
        for (int j = 0; j < na; j++) if (u[j].node == fb->body->fcap_src[k].node && u[j].index == fb->body->fcap_src[k].index) seen = 1;
        if (!seen) u[n++] = fb->body->fcap_src[k];
    }
    for (int side = 0; side < 2; side++) {
        df__func *f = side ? fb : fa;
        df_node **a = side ? ab : aa;
        for (int i = 0; i < n_decl; i++) a[i] = f->args[i];
        for (int j = 0; j < n; j++) {
            a[n_decl + j] = NULL;
            for (int k = 0; k < f->n_caps; k++)
                if (f->body->fcap_src[k].node == u[j].node && f->body->fcap_src[k].index == u[j].index) a[n_decl + j] = f->body->fcap_args[k];
            if (!a[n_decl + j]) {           /* a value only the other function uses */
                a[n_decl + j] = df__fn_new_arg(f->body, df_output_dtype(u[j]), &u[j].node->out_shapes[u[j].index], n_decl + j, "unused");
                if (!a[n_decl + j]) {
                    df__graph_error(g, f->body->status.code, "In function '%s': %s", f->name, f->body->status.message);
                    DF_FREE(u); DF_FREE(ab);
                    if (side == 0) DF_FREE(aa);            /* (after side 0, fa->args) */
                    return NULL;
                }
            }
            df__node_attr_mut(a[n_decl + j], "index")->u.i = n_decl + j;
        }
        DF_FREE(f->args);
        f->args = a;
        f->n_args = n_decl + n;
        f->n_caps = n;
    }
    *n_union = n;
    return u;
oom:
    DF_FREE(u); DF_FREE(aa); DF_FREE(ab);
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    return NULL;
}

typedef struct df__if_user { df_branch_fn fn; void *user; } df__if_user;
static void df__fn_build_branch(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    DF__UNUSED(args);
    const df__if_user *u = (const df__if_user *)user;
    u->fn(fg, u->user, outs);
}

df_code df_if(df_graph *g, df_output pred, int n_out, df_branch_fn then_fn, df_branch_fn else_fn,
              void *user, df_output *outs) {
    for (int i = 0; outs && i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (n_out < 0 || (n_out > 0 && !outs) || !then_fn || !else_fn)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_if: bad arguments (n_out %d; outs, then_fn and else_fn "
                               "must be set)", n_out);
    if (df__check_pred(g, pred, "df_if")) return g->status.code;
    char tname[64], ename[64];
    df__fn_fresh_name(g, "if_then", tname, sizeof tname);
    df__if_user ut = {then_fn, user}, ue = {else_fn, user};
    df__func *ft = df__fn_make(g, tname, 0, NULL, NULL, n_out, df__fn_build_branch, &ut);
    if (!ft) return g->status.code;
    df__fn_fresh_name(g, "if_else", ename, sizeof ename);
    df__func *fe = df__fn_make(g, ename, 0, NULL, NULL, n_out, df__fn_build_branch, &ue);
    if (!fe) return g->status.code;
    for (int i = 0; i < n_out; i++)
        if (df_output_dtype(ft->rets[i]) != df_output_dtype(fe->rets[i]))
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_if: output %d is %s in the then branch but %s in the "
                                   "else branch", i, df_dtype_name(df_output_dtype(ft->rets[i])),
                                   df_dtype_name(df_output_dtype(fe->rets[i])));
    int n_in = 0;
    df_output *in = df__fn_union_captures(g, ft, fe, 0, &n_in);
    if (!in) return g->status.code;
    df_dtype *tout = (df_dtype *)DF_MALLOC((size_t)(n_out + 1) * sizeof(df_dtype));
    if (!tout) { DF_FREE(in); return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    for (int i = 0; i < n_out; i++) tout[i] = df_output_dtype(ft->rets[i]);
    const char *fa[2] = {"then_branch", "else_branch"}, *fn[2] = {ft->name, fe->name};
    df_node *n = df__fn_node(g, ft->stateful || fe->stateful ? "If" : "StatelessIf", "If", &pred, in, n_in,
                             fa, fn, 2, "Tout", tout, n_out);
    DF_FREE(in); DF_FREE(tout);
    if (!n) return g->status.code;
    for (int i = 0; i < n_out; i++) outs[i] = (df_output){n, i};
    return DF_OK;
}

typedef struct df__while_user {
    df_loop_cond_fn cond;
    df_loop_body_fn body;
    void *user;
    int n_vars;
    int64_t max_iter;            /* > 0: the first argument counts iterations */
} df__while_user;
static df_output df__fn_scalar(df_graph *g, df_dtype t, double v) {
    df_tensor *c = df_tensor_new(t, 0, NULL, NULL);
    if (!c) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return (df_output){NULL, 0}; }
    if (t == DF_INT32) *(int32_t *)c->data = (int32_t)v;
    else if (t == DF_INT64) *(int64_t *)c->data = (int64_t)v;
    else if (t == DF_BOOL) *(unsigned char *)c->data = v != 0;
    df_output o = df_const(g, c);
    df_tensor_release(c);
    return o;
}
static void df__fn_build_cond(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const df__while_user *u = (const df__while_user *)user;
    int c = u->max_iter > 0;
    df_output p = u->cond(fg, u->user, args + c);
    if (c && p.node) {
        df_output lim = df__fn_scalar(fg, DF_INT32, (double)u->max_iter);
        df_output more = df_less(fg, args[0], lim);
        df_op_builder *b = df_op_new(fg, "LogicalAnd", NULL);
        df_op_add_input(b, more);
        df_op_add_input(b, p);
        df_node *n = df_op_finish(b);
        p = n ? (df_output){n, 0} : (df_output){NULL, 0};
    }
    outs[0] = p;
}
static void df__fn_build_body(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const df__while_user *u = (const df__while_user *)user;
    int c = u->max_iter > 0;
    u->body(fg, u->user, args + c, outs + c);
    if (c) outs[0] = df_add(fg, args[0], df__fn_scalar(fg, DF_INT32, 1));
}

df_code df_while(df_graph *g, int n_vars, const df_output *init, df_loop_cond_fn cond, df_loop_body_fn body,
                 void *user, const df_while_options *opts, df_output *outs) {
    for (int i = 0; outs && i < n_vars; i++) outs[i].node = NULL, outs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (n_vars < 1 || !init || !cond || !body || !outs)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while: bad arguments (n_vars %d must be >= 1; init, cond, "
                               "body and outs must be set)", n_vars);
    for (int i = 0; i < n_vars; i++)
        if (!df__output_valid(init[i]) || (init[i].node->graph != g && !df__fn_encloses(init[i].node->graph, g)))
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while: loop variable %d is NULL or invalid", i);
    int par = opts ? opts->parallel_iterations : 0;
    int64_t max_iter = opts ? opts->maximum_iterations : 0;
    if (par < 0 || max_iter < 0 || max_iter > INT32_MAX)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while: parallel_iterations (%d) must be positive and "
                               "maximum_iterations (%lld) in [0, 2^31)", par, (long long)max_iter);
    int c = max_iter > 0, nv = n_vars + c;
    df_output *vars = (df_output *)DF_MALLOC((size_t)(nv + 1) * sizeof(df_output));
    df_dtype *types = (df_dtype *)DF_MALLOC((size_t)(nv + 1) * sizeof(df_dtype));
    df__shape *shapes = (df__shape *)DF_MALLOC((size_t)(nv + 1) * sizeof(df__shape));
    df_output *rets = NULL;
    df_code code = DF_OK;
    if (!vars || !types || !shapes) { code = df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); goto done; }
    if (c) vars[0] = df__fn_scalar(g, DF_INT32, 0);
    for (int i = 0; i < n_vars; i++) vars[c + i] = init[i];
    if (g->status.code) { code = g->status.code; goto done; }
    for (int i = 0; i < nv; i++) {
        types[i] = df_output_dtype(vars[i]);
        shapes[i] = vars[i].node->out_shapes[vars[i].index];
    }
    df__while_user u = {cond, body, user, n_vars, max_iter};
    char cname[64], bname[64];
    df__fn_fresh_name(g, "while_cond", cname, sizeof cname);
    df__func *fc = df__fn_make(g, cname, nv, types, shapes, 1, df__fn_build_cond, &u);
    if (!fc) { code = g->status.code; goto done; }
    df__fn_fresh_name(g, "while_body", bname, sizeof bname);
    df__func *fb = df__fn_make(g, bname, nv, types, shapes, nv, df__fn_build_body, &u);
    if (!fb) { code = g->status.code; goto done; }
    if (df_output_dtype(fc->rets[0]) != DF_BOOL || fc->rets[0].node->out_shapes[fc->rets[0].index].rank > 0) {
        code = df__graph_error(g, DF_INVALID_ARGUMENT, "df_while: the condition must give a bool scalar, got %s of rank %d",
                               df_dtype_name(df_output_dtype(fc->rets[0])), fc->rets[0].node->out_shapes[fc->rets[0].index].rank);
        goto done;
    }
    for (int i = 0; i < nv; i++)
        if (df_output_dtype(fb->rets[i]) != types[i]) {
            code = df__graph_error(g, DF_INVALID_ARGUMENT, "df_while: loop variable %d enters as %s but the body gives %s",
                                   i - c, df_dtype_name(types[i]), df_dtype_name(df_output_dtype(fb->rets[i])));
            goto done;
        }
    int n_caps = 0;
    df_output *caps = df__fn_union_captures(g, fc, fb, nv, &n_caps);
    if (!caps) { code = g->status.code; goto done; }
    /* the body passes the captured values on unchanged */
    rets = (df_output *)DF_MALLOC((size_t)(nv + n_caps + 1) * sizeof(df_output));
    df_output *all = (df_output *)DF_MALLOC((size_t)(nv + n_caps + 1) * sizeof(df_output));
    if (!rets || !all) { DF_FREE(caps); DF_FREE(all); code = df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); goto done; }
    for (int i = 0; i < nv; i++) { rets[i] = fb->rets[i]; all[i] = vars[i]; }
    for (int k = 0; k < n_caps; k++) { rets[nv + k] = (df_output){fb->args[nv + k], 0}; all[nv + k] = caps[k]; }
    DF_FREE(fb->rets);
    fb->rets = rets;
    fb->n_rets = nv + n_caps;
    rets = NULL;
    DF_FREE(caps);
    const char *fa[2] = {"cond", "body"}, *fn[2] = {fc->name, fb->name};
    df_node *n = df__fn_node(g, fc->stateful || fb->stateful ? "While" : "StatelessWhile", opts && opts->name && *opts->name ? opts->name : "While",
                             NULL, all, nv + n_caps, fa, fn, 2, NULL, NULL, 0);
    DF_FREE(all);
    if (!n) { code = g->status.code; goto done; }
    df__node_attr_mut(n, "parallel_iterations")->u.i = par ? par : 10;
    for (int i = 0; i < n_vars; i++) outs[i] = (df_output){n, c + i};
done:
    DF_FREE(vars); DF_FREE(types); DF_FREE(shapes); DF_FREE(rets);
    return code;
}

/* ---- shape functions ---- */
DF_PRIVATE df_code df__sf_arg(df__shape_ctx *c) {
    const df__attr *s = df__node_attr(c->node, "shape");
    df__shape *o = df__sc_out(c, 0);
    *o = df__shape_unknown();
    if (s && s->kind == DF__A_SHAPE && s->u.shape.rank >= 0 && s->u.shape.rank <= DF_MAX_RANK) {
        o->rank = s->u.shape.rank;
        for (int i = 0; i < o->rank; i++) o->dims[i] = s->u.shape.dims[i] < -1 ? -1 : s->u.shape.dims[i];
    }
    return DF_OK;
}
static df__func *df__sf_func(df__shape_ctx *c, const char *attr) {
    const df__attr *a = df__node_attr(c->node, attr);
    df__func *f = a && a->kind == DF__A_FUNC ? df__fn_find(c->g, a->u.s) : NULL;
    if (!f) df__fail(c->st, c->node, DF_NOT_FOUND, "Function '%s' (attr %s) is not in the graph's library",
                     a && a->u.s ? a->u.s : "", attr);
    else if (f->defining) {
        df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Function '%s' uses itself (directly or through other functions); "
                 "recursion is not supported", f->name);
        f = NULL;
    }
    return f;
}
/* Arguments first_in.. of the node against f's, and f's results against outputs (NULL: none). */
static df_code df__sf_match(df__shape_ctx *c, const df__func *f, int first_in, int check_outs) {
    int n_in = c->node->n_inputs - first_in;
    if (n_in != f->n_args)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "%s passes %d input%s to function '%s', which takes %d",
                        c->node->op->name, n_in, n_in == 1 ? "" : "s", f->name, f->n_args);
    for (int i = 0; i < n_in; i++)
        if (c->in_types[first_in + i] != f->args[i]->out_types[0])
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Input %d of %s is %s but argument %d of function '%s' is %s",
                            first_in + i, c->node->op->name, df_dtype_name(c->in_types[first_in + i]), i, f->name,
                            df_dtype_name(f->args[i]->out_types[0]));
    if (check_outs) {
        if (c->node->n_outputs != f->n_rets)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "%s has %d output%s but function '%s' gives %d",
                            c->node->op->name, c->node->n_outputs, c->node->n_outputs == 1 ? "" : "s", f->name, f->n_rets);
        for (int i = 0; i < f->n_rets; i++)
            if (c->node->out_types[i] != df_output_dtype(f->rets[i]))
                return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Output %d of %s is %s but function '%s' gives %s",
                                i, c->node->op->name, df_dtype_name(c->node->out_types[i]), f->name,
                                df_dtype_name(df_output_dtype(f->rets[i])));
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_call(df__shape_ctx *c) {
    df__func *f = df__sf_func(c, "f");
    if (!f || df__sf_match(c, f, 0, 1)) return c->st->code;
    for (int i = 0; i < f->n_rets; i++) *df__sc_out(c, i) = f->rets[i].node->out_shapes[f->rets[i].index];
    return DF_OK;
}
DF_PRIVATE df_code df__sf_if(df__shape_ctx *c) {
    df__func *t = df__sf_func(c, "then_branch"), *e = t ? df__sf_func(c, "else_branch") : NULL;
    if (!t || !e || df__sf_match(c, t, 1, 1) || df__sf_match(c, e, 1, 1)) return c->st->code;
    if (c->in_shapes[0].rank > 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "The predicate of %s must be a scalar, got rank %d",
                        c->node->op->name, c->in_shapes[0].rank);
    for (int i = 0; i < t->n_rets; i++)
        *df__sc_out(c, i) = df__shape_relax(&t->rets[i].node->out_shapes[t->rets[i].index],
                                            &e->rets[i].node->out_shapes[e->rets[i].index]);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_while(df__shape_ctx *c) {
    df__func *fc = df__sf_func(c, "cond"), *fb = fc ? df__sf_func(c, "body") : NULL;
    if (!fc || !fb || df__sf_match(c, fc, 0, 0) || df__sf_match(c, fb, 0, 1)) return c->st->code;
    if (fc->n_rets != 1 || df_output_dtype(fc->rets[0]) != DF_BOOL)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "The condition '%s' of %s must give one bool", fc->name, c->node->op->name);
    for (int i = 0; i < fb->n_rets; i++)
        *df__sc_out(c, i) = df__shape_relax(&c->in_shapes[i], &fb->rets[i].node->out_shapes[fb->rets[i].index]);
    return DF_OK;
}

/* ---- lowering ---- */
/* How many inputs each input argument of n takes. */
static int df__node_group_sizes(const df_node *n, int *sizes) {
    int total = 0;
    for (int k = 0; k < n->op->n_in; k++) {
        const df__argdef *a = &n->op->in[k];
        int cnt = 1;
        if (a->is_list) {
            if (a->number_attr[0]) cnt = (int)df__attr_i(n, a->number_attr, 0);
            else {
                const df__attr *t = df__node_attr(n, a->type_attr);
                cnt = t && t->kind == DF__A_TYPE_LIST ? t->u.types.n : 0;
            }
        }
        sizes[k] = cnt;
        total += cnt;
    }
    return total == n->n_inputs;
}

/* Instantiates f's body in g (in g's current context): args in, results into outs; the
   body's stateful nodes that nothing in it reads go to *sinks (n_sinks of them). */
static int df__fn_inline(df_graph *g, const df__func *f, const df_output *in, const char *prefix, df_output *outs,
                         df_node ***sinks, int *n_sinks) {
    const df_graph *b = f->body;
    df_output *map = (df_output *)DF_MALLOC((size_t)(b->n_nodes + 1) * sizeof(df_output));
    unsigned char *read = (unsigned char *)DF_MALLOC((size_t)b->n_nodes + 1);
    df_output *ins = NULL;
    df_node **ctl = NULL;
    int cap_ins = 0, cap_ctl = 0, ok = 1;
    *sinks = NULL;
    *n_sinks = 0;
    if (!map || !read) { DF_FREE(map); DF_FREE(read); df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory inlining '%s'", f->name); return 0; }
    memset(read, 0, (size_t)b->n_nodes + 1);
    for (int i = 0; i < b->n_nodes; i++) {
        const df_node *n = b->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) read[n->inputs[k].node->id] = 1;
        for (int k = 0; k < n->n_controls; k++) read[n->controls[k]->id] = 1;
    }
    for (int r = 0; r < f->n_rets; r++) read[f->rets[r].node->id] = 1;
    for (int i = 0; i < b->n_nodes && ok; i++) {
        const df_node *n = b->nodes[i];
        if (!strcmp(n->op->name, "_Arg")) {
            int64_t idx = df__attr_i(n, "index", -1);
            if (idx < 0 || idx >= f->n_args) { df__graph_error(g, DF_INTERNAL, "Function '%s': argument index %lld out of range", f->name, (long long)idx); ok = 0; break; }
            map[i] = in[idx];
            continue;
        }
        int sizes[12];
        if (!df__node_group_sizes(n, sizes)) { df__graph_error(g, DF_INTERNAL, "Function '%s': node '%s' has inputs its attrs do not describe", f->name, n->name); ok = 0; break; }
        df_op_builder *ob = df_op_new(g, n->op->name, NULL);
        if (!ob) { ok = 0; break; }
        size_t len = strlen(prefix) + strlen(n->name) + 2;
        char *base = (char *)DF_MALLOC(len);
        if (base) {
            snprintf(base, len, "%s/%s", prefix, n->name);
            char *name = df__unique_name(g, base);
            DF_FREE(base);
            if (name) { DF_FREE(ob->name); ob->name = name; } else ob->oom = 1;
        } else ob->oom = 1;
        if (n->device && *n->device) df_op_set_device(ob, n->device);
        if (!df__grow(&ins, &cap_ins, n->n_inputs + 1, sizeof(df_output))) ob->oom = 1;
        else {
            for (int k = 0; k < n->n_inputs; k++) {
                df_output x = n->inputs[k];
                ins[k] = (df_output){map[x.node->id].node, map[x.node->id].index + x.index};
            }
            int at = 0;
            for (int k = 0; k < n->op->n_in; k++) {
                if (n->op->in[k].is_list) df_op_add_input_list(ob, sizes[k] ? ins + at : ins, sizes[k]);
                else df_op_add_input(ob, ins[at]);
                at += sizes[k];
            }
        }
        for (int k = 0; k < n->n_controls; k++) {
            const df_node *cn = n->controls[k];
            if (!strcmp(cn->op->name, "_Arg")) continue;       /* arguments are there from the start */
            df_op_add_control_input(ob, map[cn->id].node);
        }
        if (!df__grow(&ob->attrs, &ob->cap_attrs, ob->n_attrs + n->n_attrs + 1, sizeof(df__attr))) ob->oom = 1;
        else for (int k = 0; k < n->n_attrs; k++) {
            if (!df__attr_copy(&ob->attrs[ob->n_attrs], &n->attrs[k])) { df__attr_clear(&ob->attrs[ob->n_attrs]); ob->oom = 1; break; }
            ob->n_attrs++;
        }
        df_node *m = df_op_finish(ob);
        if (!m) { ok = 0; break; }
        map[i] = (df_output){m, 0};
        if ((n->op->flags & DF__OP_STATEFUL) && !read[i]) {
            if (!df__grow(&ctl, &cap_ctl, *n_sinks + 1, sizeof(df_node *))) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); ok = 0; break; }
            ctl[(*n_sinks)++] = m;
        }
    }
    for (int r = 0; ok && r < f->n_rets; r++) {
        df_output x = f->rets[r];
        outs[r] = (df_output){map[x.node->id].node, map[x.node->id].index + x.index};
    }
    DF_FREE(map); DF_FREE(read); DF_FREE(ins);
    if (!ok) { DF_FREE(ctl); *n_sinks = 0; return 0; }
    *sinks = ctl;
    return 1;
}

/* Node n becomes IdentityN(outs) (NoOp when n_out is 0), with control inputs ctl added. */
static int df__fn_replace(df_graph *g, df_node *n, const df_output *outs, int n_out, df_node *const *ctl, int n_ctl) {
    for (int i = 0; i < n_out; i++)
        if (df_output_dtype(outs[i]) != n->out_types[i]) {
            df__graph_error(g, DF_INTERNAL, "Lowering: output %d of %s is %s, its function gave %s {{node %s}}", i, n->op->name,
                            df_dtype_name(n->out_types[i]), df_dtype_name(df_output_dtype(outs[i])), n->name);
            return 0;
        }
    df_output *in = (df_output *)DF_MALLOC((size_t)(n_out + 1) * sizeof(df_output));
    df__attr *attrs = (df__attr *)DF_MALLOC(2 * sizeof(df__attr));
    df_dtype *types = (df_dtype *)DF_MALLOC((size_t)(n_out + 1) * sizeof(df_dtype));
    char *t_name = n_out ? df__strdup("T") : NULL;   /* (before n changes: a failure leaves it whole) */
    if (!in || !attrs || !types || (n_out && !t_name)) {
        DF_FREE(in); DF_FREE(attrs); DF_FREE(types); DF_FREE(t_name);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory lowering '%s'", n->name);
        return 0;
    }
    for (int i = 0; i < n_ctl; i++)
        if (!df__node_add_control(n, ctl[i])) {
            DF_FREE(in); DF_FREE(attrs); DF_FREE(types); DF_FREE(t_name);
            df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory lowering '%s'", n->name);
            return 0;
        }
    memcpy(in, outs, (size_t)n_out * sizeof(df_output));
    memcpy(types, n->out_types, (size_t)n_out * sizeof(df_dtype));
    for (int i = 0; i < n->n_attrs; i++) df__attr_clear(&n->attrs[i]);
    DF_FREE(n->attrs);
    n->attrs = attrs;
    n->n_attrs = 0;
    if (n_out) {
        memset(&attrs[0], 0, sizeof attrs[0]);
        attrs[0].name = t_name;
        attrs[0].kind = DF__A_TYPE_LIST;
        attrs[0].u.types.n = n_out;
        attrs[0].u.types.v = types;
        n->n_attrs = 1;
    } else DF_FREE(types);
    DF_FREE(n->inputs);
    n->inputs = in;
    n->n_inputs = n_out;
    n->op = df__op_lookup(n_out ? "IdentityN" : "NoOp");
    __atomic_add_fetch(&g->edit_version, 1, __ATOMIC_RELAXED);
    return 1;
}

typedef struct df__lower_user {
    const df__func *f[2];
    const df_output *in;         /* If: its inputs after the predicate */
    const char *prefix;
    int n_out, extra;            /* extra: one more output, a bool that waits for side effects */
} df__lower_user;

static void df__lower_branch(df_graph *g, const df__lower_user *u, int which, df_output *outs) {
    df_node **sinks = NULL;
    int n_sinks = 0;
    char prefix[400];
    snprintf(prefix, sizeof prefix, "%s/%s", u->prefix, which ? "else" : "then");
    if (!df__fn_inline(g, u->f[which], u->in, prefix, outs, &sinks, &n_sinks)) return;
    if (u->extra) {
        if (n_sinks) df_graph_push_control_deps(g, sinks, n_sinks);
        outs[u->n_out] = df__fn_scalar(g, DF_BOOL, 1);
        if (n_sinks) df_graph_pop_control_deps(g);
    }
    DF_FREE(sinks);
}
static void df__lower_then(df_graph *g, void *user, df_output *outs) { df__lower_branch(g, (const df__lower_user *)user, 0, outs); }
static void df__lower_else(df_graph *g, void *user, df_output *outs) { df__lower_branch(g, (const df__lower_user *)user, 1, outs); }
static df_output df__lower_cond(df_graph *g, void *user, const df_output *vars) {
    const df__lower_user *u = (const df__lower_user *)user;
    df_output out[1] = {{NULL, 0}};
    df_node **sinks = NULL;
    int n_sinks = 0;
    char prefix[400];
    snprintf(prefix, sizeof prefix, "%s/cond", u->prefix);
    if (df__fn_inline(g, u->f[0], vars, prefix, out, &sinks, &n_sinks)) DF_FREE(sinks);
    return out[0];
}
static void df__lower_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    const df__lower_user *u = (const df__lower_user *)user;
    df_node **sinks = NULL;
    int n_sinks = 0;
    char prefix[400];
    snprintf(prefix, sizeof prefix, "%s/body", u->prefix);
    if (!df__fn_inline(g, u->f[1], vars, prefix, next, &sinks, &n_sinks)) return;
    if (n_sinks) {                   /* every pass waits for the body's side effects */
        df_graph_push_control_deps(g, sinks, n_sinks);
        for (int i = 0; i < u->n_out; i++) next[i] = df_identity(g, next[i]);
        df_graph_pop_control_deps(g);
    }
    DF_FREE(sinks);
}

static int df__fn_has_sinks(const df__func *f) {
    if (!f->stateful) return 0;
    for (int i = 0; i < f->body->n_nodes; i++) if (f->body->nodes[i]->op->flags & DF__OP_STATEFUL) return 1;
    return 0;
}

/* Lowers node n of g in place (g's context set to n's). */
static int df__lower_node(df_graph *g, df_node *n) {
    df__ctx *saved_ctx = g->ctx;
    int saved_scopes = g->n_scopes;
    g->ctx = n->ctx;
    if (n->n_controls) df_graph_push_control_deps(g, n->controls, n->n_controls);
    int ok = 0, n_out = n->n_outputs;
    df_output *outs = (df_output *)DF_MALLOC((size_t)(n_out + 2) * sizeof(df_output));
    df_node **sinks = NULL, *done = NULL;
    int n_sinks = 0;
    const char *op = n->op->name;
    if (!outs) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory lowering '%s'", n->name); goto out; }
    memset(outs, 0, (size_t)(n_out + 2) * sizeof(df_output));
    if (strstr(op, "PartitionedCall")) {
        const df__func *f = df__fn_find(g, df__attr_s_kind(n, "f"));
        if (!f) { df__graph_error(g, DF_NOT_FOUND, "Function '%s' is not in the graph's library {{node %s}}", df__attr_s_kind(n, "f"), n->name); goto out; }
        if (!df__fn_inline(g, f, n->inputs, n->name, outs, &sinks, &n_sinks)) goto out;
        ok = df__fn_replace(g, n, outs, n_out, sinks, n_sinks);
    } else if (strstr(op, "If")) {
        df__lower_user u;
        memset(&u, 0, sizeof u);
        u.f[0] = df__fn_find(g, df__attr_s_kind(n, "then_branch"));
        u.f[1] = df__fn_find(g, df__attr_s_kind(n, "else_branch"));
        if (!u.f[0] || !u.f[1]) { df__graph_error(g, DF_NOT_FOUND, "A branch function of %s is not in the graph's library {{node %s}}", op, n->name); goto out; }
        u.in = n->inputs + 1;
        u.prefix = n->name;
        u.n_out = n_out;
        u.extra = df__fn_has_sinks(u.f[0]) || df__fn_has_sinks(u.f[1]) || n_out == 0;
        df_output pred = n->inputs[0];
        if (df_cond(g, pred, n_out + u.extra, df__lower_then, df__lower_else, &u, outs) != DF_OK) goto out;
        if (u.extra) done = outs[n_out].node;
        ok = df__fn_replace(g, n, outs, n_out, &done, done ? 1 : 0);
    } else {
        df__lower_user u;
        memset(&u, 0, sizeof u);
        u.f[0] = df__fn_find(g, df__attr_s_kind(n, "cond"));
        u.f[1] = df__fn_find(g, df__attr_s_kind(n, "body"));
        if (!u.f[0] || !u.f[1]) { df__graph_error(g, DF_NOT_FOUND, "The cond or body function of %s is not in the graph's library {{node %s}}", op, n->name); goto out; }
        u.prefix = n->name;
        u.n_out = n_out;
        if (n_out < 1) { df__graph_error(g, DF_INVALID_ARGUMENT, "%s has no loop variables {{node %s}}", op, n->name); goto out; }
        df_while_options o;
        memset(&o, 0, sizeof o);
        int64_t par = df__attr_i(n, "parallel_iterations", 10);
        o.parallel_iterations = par > 0 && par < (1 << 20) ? (int)par : 10;
        if (df_while_loop(g, n_out, n->inputs, df__lower_cond, df__lower_body, &u, &o, outs) != DF_OK) goto out;
        ok = df__fn_replace(g, n, outs, n_out, NULL, 0);
    }
out:
    if (n->n_controls && g->n_ctl) df_graph_pop_control_deps(g);
    while (g->n_scopes > saved_scopes) df_graph_pop_name_scope(g);
    g->ctx = saved_ctx;
    DF_FREE(outs);
    DF_FREE(sinks);
    return ok;
}

/* Runs lower a session's graph in place, the first time they meet a functional node, while
   other runs of it (of any session on it) may be reading it to build their plans: plan builds
   hold this lock shared, lowering exclusive. A thread that holds it does not take it again (a
   plan build runs a session of its own for constant folding, over a graph of its own). */
#ifndef DF_NO_THREADS
static pthread_mutex_t df__graph_rw_mu = PTHREAD_MUTEX_INITIALIZER;   /* (no pthread_rwlock_t: it */
static pthread_cond_t df__graph_rw_cv = PTHREAD_COND_INITIALIZER;     /* needs feature macros that a */
static int df__graph_readers, df__graph_writer;                       /* one-file user may not set) */
static _Thread_local int df__graph_rw_depth;
DF_PRIVATE void df__graph_rw_lock(int exclusive) {
    if (df__graph_rw_depth++) return;
    pthread_mutex_lock(&df__graph_rw_mu);
    while (df__graph_writer || (exclusive && df__graph_readers)) pthread_cond_wait(&df__graph_rw_cv, &df__graph_rw_mu);
    if (exclusive) df__graph_writer = 1;
    else df__graph_readers++;
    pthread_mutex_unlock(&df__graph_rw_mu);
}
DF_PRIVATE void df__graph_rw_unlock(void) {
    if (--df__graph_rw_depth) return;
    pthread_mutex_lock(&df__graph_rw_mu);
    if (df__graph_writer) df__graph_writer = 0;       /* (a writer holds it alone) */
    else df__graph_readers--;
    if (!df__graph_writer && !df__graph_readers) pthread_cond_broadcast(&df__graph_rw_cv);
    pthread_mutex_unlock(&df__graph_rw_mu);
}
#else
DF_PRIVATE void df__graph_rw_lock(int exclusive) { DF__UNUSED(exclusive); }
DF_PRIVATE void df__graph_rw_unlock(void) {}
#endif
DF_PRIVATE int df__graph_has_functional(const df_graph *g) {
    for (int i = 0; i < g->n_nodes; i++) if (df__is_functional(g->nodes[i])) return 1;
    return 0;
}

/* A call that may run as a call (its function's graph run by the PartitionedCall kernel)
   rather than be inlined: a stateless one (a stateful body's effects are ordered by inlining). */
static int df__is_kept_call(const df_node *n) { return !strcmp(n->op->name, "PartitionedCall"); }

/* Lowers every If, While and call of g (and those their functions hold) to the primitives;
   with keep_calls, stateless calls stay calls. */
DF_PRIVATE df_code df__lower_all_ex(df_graph *g, int keep_calls) {
    if (g->status.code) return g->status.code;
    if (g->fn_parent) return df__graph_error(g, DF_FAILED_PRECONDITION, "A function's body is not run or differentiated "
                                             "by itself; call the function");
    for (int i = 0; i < g->n_nodes; i++) {
        if (!df__is_functional(g->nodes[i]) || (keep_calls && df__is_kept_call(g->nodes[i]))) continue;
        /* what it will instantiate, counted first: functions calling functions twice grow the
           graph exponentially with their depth */
        const char *used[4];
        int k = df__fn_uses(g->nodes[i], used, 4);
        int64_t grow = 0;
        for (int j = 0; j < k; j++) {
            const df__func *u = df__fn_find(g, used[j]);
            if (u) grow = DF__MIN(grow + u->size, (int64_t)1 << 62);
        }
        if (g->n_nodes + grow > DF_MAX_GRAPH_NODES)
            return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Lowering this node would instantiate %lld nodes of functions in a "
                                   "graph of %d; a graph may have %d (DF_MAX_GRAPH_NODES) {{node %s}}", (long long)grow,
                                   g->n_nodes, DF_MAX_GRAPH_NODES, g->nodes[i]->name);
        if (!df__lower_node(g, g->nodes[i])) return g->status.code ? g->status.code : DF_INTERNAL;
    }
    return DF_OK;
}
DF_PRIVATE df_code df__lower_all(df_graph *g) { return df__lower_all_ex(g, 0); }

/* ---- Calls run as calls (the inline pass off): the function inlined once into a graph of its
   own behind placeholders, run by a session of its own on the calling thread. Runs of one
   function are serialised; the calls its body makes run as calls too. ---- */
typedef struct df__call_rt {
    df_graph *g;
    df_session *s;
    df_output *args, *rets;
#ifndef DF_NO_THREADS
    pthread_mutex_t mu;
#endif
} df__call_rt;
static void df__call_rt_free(df__call_rt *rt) {
    if (!rt) return;
    df_session_free(rt->s);
    df_graph_free(rt->g);
    DF_FREE(rt->args); DF_FREE(rt->rets);
#ifndef DF_NO_THREADS
    pthread_mutex_destroy(&rt->mu);
#endif
    DF_FREE(rt);
}
#ifndef DF_NO_THREADS
static pthread_mutex_t df__call_mutex = PTHREAD_MUTEX_INITIALIZER;
#endif
static df__call_rt *df__call_rt_make(df__func *f, df_status *st) {
    df__call_rt *rt = (df__call_rt *)DF_MALLOC(sizeof *rt);
    if (!rt) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a call of '%s'", f->name); return NULL; }
    memset(rt, 0, sizeof *rt);
#ifndef DF_NO_THREADS
    pthread_mutex_init(&rt->mu, NULL);
#endif
    rt->g = df_graph_new();
    rt->args = (df_output *)DF_MALLOC((size_t)(f->n_args + 1) * sizeof(df_output));
    rt->rets = (df_output *)DF_MALLOC((size_t)(f->n_rets + 1) * sizeof(df_output));
    if (!rt->g || !rt->args || !rt->rets) {
        df__call_rt_free(rt);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a call of '%s'", f->name);
        return NULL;
    }
    rt->g->lib_from = df__fn_root(f->body);
    rt->g->internal_names = 1;
    for (int i = 0; i < f->n_args; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "arg_%d", i);
        rt->args[i] = df_placeholder(rt->g, nm, f->args[i]->out_types[0], -1, NULL);
    }
    df_node **sinks = NULL;
    int n_sinks = 0;
    if (!rt->g->status.code) df__fn_inline(rt->g, f, rt->args, f->name, rt->rets, &sinks, &n_sinks);
    DF_FREE(sinks);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.deterministic = 1;
    so.inter_op_threads = 1;
    so.intra_op_threads = 1;
    so.disable_passes = DF_PASS_INLINE;
    if (rt->g->status.code) {
        df_status_set(st, rt->g->status.code, "Making a call of '%s': %s", f->name, rt->g->status.message);
        df__call_rt_free(rt);
        return NULL;
    }
    if (!(rt->s = df_session_new(rt->g, &so, st))) { df__call_rt_free(rt); return NULL; }
    return rt;
}

/* PartitionedCall run as a call: the function's graph for its arguments. */
DF_PRIVATE void df__k_call(df__kctx *c) {
    const char *name = df__attr_s_kind(c->node, "f");
    df__func *f = df__fn_find(c->node->graph, name);
    if (!f) { DF__KFAIL(c, DF_NOT_FOUND, "Function '%s' is not in the graph's library", name ? name : "?"); return; }
    if (f->n_args != c->n_in || f->n_rets != c->n_out) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "'%s' takes %d arguments and gives %d results; the call has %d and %d", f->name,
                  f->n_args, f->n_rets, c->n_in, c->n_out);
        return;
    }
    df_status st;
    df_status_clear(&st);
#ifndef DF_NO_THREADS
    pthread_mutex_lock(&df__call_mutex);
#endif
    if (!f->rt) f->rt = df__call_rt_make(f, &st);
    df__call_rt *rt = f->rt;
#ifndef DF_NO_THREADS
    pthread_mutex_unlock(&df__call_mutex);
#endif
    if (!rt) { DF__KFAIL(c, st.code ? st.code : DF_INTERNAL, "%s", st.message); return; }
#ifndef DF_NO_THREADS
    pthread_mutex_lock(&rt->mu);
#endif
    df_session_run(rt->s, rt->args, c->in, c->n_in, rt->rets, c->out, c->n_out, NULL, 0, &st);
#ifndef DF_NO_THREADS
    pthread_mutex_unlock(&rt->mu);
#endif
    if (st.code) DF__KFAIL(c, st.code, "In a call of '%s': %s", f->name, st.message);
}
DF_PRIVATE int df__graph_has_functional_ex(const df_graph *g, int keep_calls) {
    for (int i = 0; i < g->n_nodes; i++)
        if (df__is_functional(g->nodes[i]) && !(keep_calls && df__is_kept_call(g->nodes[i]))) return 1;
    return 0;
}

df_code df_graph_lower_functions(df_graph *g, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "df_graph_lower_functions: graph is NULL");
    if (df__lower_all(g) != DF_OK) *st = g->status;
    return st->code;
}
