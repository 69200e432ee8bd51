/* ==========================================================================================
   src/graphdef/library.c: GraphDef function library                              >>gdlibrary
   The function library (FunctionDefLibrary, GraphDef field 2)
   Each FunctionDef used by the graph (through func attrs, transitively) becomes a function
   of
   g's library: its body is rewritten as a GraphDef (an _Arg node per input_arg; inputs
   "node:out_arg:i" turned into "node:flat index") and imported by the same code, so bodies
   get
   the same checks as graphs. Functions are made callees first; a cycle is recursion,
   refused.
   ========================================================================================== */
typedef struct df__gd_fdef {
    df__gd_str name;
    df__pb sig, whole;           /* OpDef signature; the FunctionDef */
    int used, state;             /* state: 0 not made, 1 being made, 2 made */
} df__gd_fdef;
typedef struct df__gd_lib { df__gd_fdef *f; int n, cap; df__strmap names; } df__gd_lib;   /* names: name -> first index */

static df_code df__gd_lib_parse(df__pb lib, df__gd_lib *L, df_status *st) {
    uint32_t f;
    int wt, bad;
    while (df__pb_next(&lib, &f, &wt, &bad)) {
        if (f == 1 && wt == DF__PB_LEN) {
            df__pb fd;
            if (!df__pb_sub(&lib, &fd)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: truncated FunctionDef");
            if (L->n >= (1 << 16)) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: more than 65536 functions");
            if (!df__grow(&L->f, &L->cap, L->n + 1, sizeof *L->f)) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            df__gd_fdef *e = &L->f[L->n++];
            memset(e, 0, sizeof *e);
            e->whole = fd;
            df__pb r = fd;
            uint32_t g2;
            int w2, b2;
            while (df__pb_next(&r, &g2, &w2, &b2)) {
                if (g2 == 1 && w2 == DF__PB_LEN) {
                    if (!df__pb_sub(&r, &e->sig)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: truncated function signature");
                    df__pb s = e->sig;
                    uint32_t g3;
                    int w3, b3;
                    while (df__pb_next(&s, &g3, &w3, &b3)) {
                        if (g3 == 1 && w3 == DF__PB_LEN) { if (!df__gd_string(&s, &e->name)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: bad function name"); }
                        else if (!df__pb_skip(&s, w3)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed function signature");
                    }
                    if (b3) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed function signature");
                } else if (!df__pb_skip(&r, w2)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed FunctionDef");
            }
            if (b2) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed FunctionDef");
            if (!e->name.n) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: a FunctionDef has no name");
            /* a name defined twice: the same definition again is harmless; another is refused, as
               TensorFlow's FunctionLibraryDefinition does */
            char *nm = df__gd_cstr(e->name, NULL);
            int first;
            if (!nm) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            if (df__strmap_get(&L->names, nm, &first)) {
                const df__gd_fdef *o = &L->f[first];
                if (o->whole.end - o->whole.p != e->whole.end - e->whole.p || memcmp(o->whole.p, e->whole.p, (size_t)(e->whole.end - e->whole.p))) {
                    df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: the function library defines '%.200s' twice, differently", nm);
                    DF_FREE(nm);
                    return st->code;
                }
            } else if (!df__strmap_put(&L->names, nm, L->n - 1)) { DF_FREE(nm); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); }
            DF_FREE(nm);
        } else if (!df__pb_skip(&lib, wt)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed function library");
    }
    if (bad) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed function library");
    return DF_OK;
}
static int df__gd_lib_find(const df__gd_lib *L, df__gd_str name) {
    char *nm = df__gd_cstr(name, NULL);
    int i = -1;
    if (nm && !df__strmap_get(&L->names, nm, &i)) i = -1;
    DF_FREE(nm);
    return i;
}
/* Calls fn(user, name) for each function an attr map entry (an AttrValue) names. */
static void df__gd_attr_funcs(df__pb value, void (*fn)(void *, df__gd_str), void *user) {
    df__gd_val v;
    if (!df__gd_attr_value(value, &v) || v.field != 10 || v.wt != DF__PB_LEN) return;
    df__pb r = v.sub;
    uint32_t f;
    int wt, bad;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        df__gd_str s;
        if (f == 1 && wt == DF__PB_LEN) { if (df__gd_string(&r, &s)) fn(user, s); else return; }
        else if (!df__pb_skip(&r, wt)) return;
    }
}

typedef struct df__gd_fb {      /* a FunctionDef's body being rewritten */
    df__gd nodes;                /* its node_defs, parsed as NodeDefs */
    df__gd_str *arg_names;
    df_dtype *arg_types;
    int n_args, cap_args;
    df__gd_str *out_names;
    int n_outs, cap_outs;
    df__gd_str *ret_keys, *ret_vals;
    int n_rets, cap_rk, cap_rv;
} df__gd_fb;

static int df__gd_argdef(df__pb a, df__gd_str *name, df_dtype *type, int *poly) {
    uint32_t f;
    int wt, bad;
    *type = 0;
    *poly = 0;
    name->n = 0;
    while (df__pb_next(&a, &f, &wt, &bad)) {
        if (f == 1 && wt == DF__PB_LEN) { if (!df__gd_string(&a, name)) return 0; }
        else if (f == 3 && wt == DF__PB_VARINT) { uint64_t v; if (!df__pb_varint(&a, &v)) return 0; *type = (df_dtype)(v > 100 ? v - 100 : v); }
        else if ((f == 4 || f == 5 || f == 6) && wt == DF__PB_LEN) { df__gd_str s; if (!df__gd_string(&a, &s)) return 0; if (s.n) *poly = 1; }
        else if (!df__pb_skip(&a, wt)) return 0;
    }
    return !bad && name->n;
}

/* "node:out_arg:i" (or an argument's name) to "node:flat" in w; the op of `node` gives the flat index. */
static int df__gd_fn_input(const df__gd_fb *b, df__gd_str in, char *out, size_t cap, const char **why) {
    int control = in.n && in.p[0] == '^';
    const uint8_t *p = in.p + control;
    size_t n = in.n - (size_t)control;
    const uint8_t *c1 = memchr(p, ':', n);
    if (!c1) { snprintf(out, cap, "%s%.*s", control ? "^" : "", (int)DF__MIN(n, (size_t)400), (const char *)p); return 1; }
    if (control) { *why = "a control input names an output"; return 0; }
    const uint8_t *c2 = memchr(c1 + 1, ':', (size_t)(p + n - c1 - 1));
    df__gd_str node = {p, (size_t)(c1 - p)};
    if (!c2) { snprintf(out, cap, "%.*s", (int)DF__MIN(n, (size_t)400), (const char *)p); return 1; }   /* node:i */
    df__gd_str arg = {c1 + 1, (size_t)(c2 - c1 - 1)};
    long idx = 0;
    for (const uint8_t *q = c2 + 1; q < p + n; q++) {
        if (*q < '0' || *q > '9' || idx > 100000000) { *why = "a bad output index"; return 0; }
        idx = idx * 10 + (*q - '0');
    }
    const df__gd_node *src = NULL;
    for (int i = 0; i < b->nodes.n; i++)
        if (b->nodes.nodes[i].name.n == node.n && !memcmp(b->nodes.nodes[i].name.p, node.p, node.n)) src = &b->nodes.nodes[i];
    if (!src) { *why = "an input names no node of the function"; return 0; }
    char opname[128];
    snprintf(opname, sizeof opname, "%.*s", (int)DF__MIN(src->op.n, (size_t)120), (const char *)src->op.p);
    const df__opdef *op = df__op_lookup(opname);
    long flat = -1, base = 0;
    for (int k = 0; op && k < op->n_out; k++) {
        if (strlen(op->out[k].name) == arg.n && !memcmp(op->out[k].name, arg.p, arg.n)) { flat = base + idx; break; }
        if (op->out[k].is_list) { base = -1; break; }      /* a list before it: its size is in the attrs */
        base++;
    }
    if (flat < 0 && op && op->n_out == 1) flat = idx;     /* our output's name differs; one output: no doubt */
    if (flat < 0) { *why = op ? "an output argument name the op does not have" : "an input from an op that is not registered here"; return 0; }
    snprintf(out, cap, "%.*s:%ld", (int)DF__MIN(node.n, (size_t)400), (const char *)node.p, flat);
    return 1;
}

static df_code df__gd_make_function(df_graph *g, df__gd_lib *L, int fi, df_status *st, int depth);

static df_code df__gd_fn_deps(df_graph *g, df__gd_lib *L, df__pb whole, df_status *st, int depth);
typedef struct df__gd_dep_ctx { df_graph *g; df__gd_lib *L; df_status *st; int depth; df__gd_str node; } df__gd_dep_ctx;
/* An error met through a node's func attr names that node (the innermost one: the call that
   closes a cycle, or the one that goes too deep), unless a node is named already. */
static void df__gd_dep_name_node(df_status *st, df__gd_str node) {
    if (!st->code || !node.n || strstr(st->message, "{{node ")) return;
    size_t len = strlen(st->message);
    if (len < sizeof st->message)
        snprintf(st->message + len, sizeof st->message - len, " {{node %.*s}}", (int)DF__MIN(node.n, (size_t)200), (const char *)node.p);
}
static void df__gd_dep_visit(void *user, df__gd_str name) {
    df__gd_dep_ctx *c = (df__gd_dep_ctx *)user;
    if (c->st->code) return;
    int k = df__gd_lib_find(c->L, name);
    if (k < 0) {            /* perhaps already in g's library (imported before) */
        char nm[256];
        snprintf(nm, sizeof nm, "%.*s", (int)DF__MIN(name.n, (size_t)250), (const char *)name.p);
        if (!df__fn_find(c->g, nm)) df_status_set(c->st, DF_NOT_FOUND, "GraphDef: function '%s' is not in the library", nm);
        df__gd_dep_name_node(c->st, c->node);
        return;
    }
    df__gd_make_function(c->g, c->L, k, c->st, c->depth + 1);
    df__gd_dep_name_node(c->st, c->node);
}
/* Makes the functions the nodes of a NodeDef list (field `field` of msg) use. */
static df_code df__gd_nodes_deps(df_graph *g, df__gd_lib *L, df__pb msg, uint32_t field, df_status *st, int depth) {
    uint32_t f;
    int wt, bad;
    df__gd_dep_ctx c = {g, L, st, depth, {NULL, 0}};
    while (!st->code && df__pb_next(&msg, &f, &wt, &bad)) {
        if (f == field && wt == DF__PB_LEN) {
            df__pb nd;
            if (!df__pb_sub(&msg, &nd)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: truncated NodeDef");
            uint32_t g2;
            int w2, b2;
            c.node.n = 0;
            for (df__pb scan = nd; df__pb_next(&scan, &g2, &w2, &b2);)    /* its name, for messages */
                if (g2 == 1 && w2 == DF__PB_LEN ? !df__gd_string(&scan, &c.node) : !df__pb_skip(&scan, w2)) { c.node.n = 0; break; }
            while (!st->code && df__pb_next(&nd, &g2, &w2, &b2)) {
                if (g2 == 5 && w2 == DF__PB_LEN) {
                    df__pb e;
                    if (!df__pb_sub(&nd, &e)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: truncated attr");
                    uint32_t g3;
                    int w3, b3;
                    while (!st->code && df__pb_next(&e, &g3, &w3, &b3)) {
                        df__pb v;
                        if (g3 == 2 && w3 == DF__PB_LEN) { if (!df__pb_sub(&e, &v)) break; df__gd_attr_funcs(v, df__gd_dep_visit, &c); }
                        else if (!df__pb_skip(&e, w3)) break;
                    }
                } else if (!df__pb_skip(&nd, w2)) break;
            }
        } else if (!df__pb_skip(&msg, wt)) break;
    }
    return st->code;
}
static df_code df__gd_fn_deps(df_graph *g, df__gd_lib *L, df__pb whole, df_status *st, int depth) {
    return df__gd_nodes_deps(g, L, whole, 3, st, depth);
}

static void df__gd_fb_free(df__gd_fb *b) {
    df__gd_free(&b->nodes);
    DF_FREE(b->arg_names); DF_FREE(b->arg_types); DF_FREE(b->out_names); DF_FREE(b->ret_keys); DF_FREE(b->ret_vals);
}

typedef struct df__gd_fn_user { const df__pbw *body; const df__gd_fb *fb; df_status *st; } df__gd_fn_user;
static void df__gd_fn_build(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const df__gd_fn_user *u = (const df__gd_fn_user *)user;
    DF__UNUSED(args);
    fg->internal_names = 1;            /* TensorFlow names arguments "___redundant_placeholder" */
    if (df__gd_import(fg, u->body->buf, u->body->len, NULL, u->st)) {
        df__graph_error(fg, u->st->code, "%s", u->st->message);
        return;
    }
    for (int r = 0; r < u->fb->n_outs; r++) {
        df__gd_str val = {NULL, 0};
        for (int k = 0; k < u->fb->n_rets; k++)
            if (u->fb->ret_keys[k].n == u->fb->out_names[r].n && !memcmp(u->fb->ret_keys[k].p, u->fb->out_names[r].p, u->fb->out_names[r].n)) val = u->fb->ret_vals[k];
        char conv[512];
        const char *why = "no ret entry";
        if (!val.p || !df__gd_fn_input(u->fb, val, conv, sizeof conv, &why)) {
            df__graph_error(fg, DF_INVALID_ARGUMENT, "GraphDef: result %d of the function: %s", r, why);
            return;
        }
        char *colon = strrchr(conv, ':');
        int idx = 0;
        if (colon && colon != conv) { idx = atoi(colon + 1); *colon = 0; }
        df_node *n = df_graph_find(fg, conv);
        if (!n || idx < 0 || idx >= n->n_outputs) { df__graph_error(fg, DF_INVALID_ARGUMENT, "GraphDef: result %d of the function names '%s', which it lacks", r, conv); return; }
        outs[r] = (df_output){n, idx};
    }
}

/* The one message for every allocation that fails while a function is made. */
static df_code df__gd_fn_oom(df_status *st, const char *name) {
    return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory importing function '%s'", name);
}

/* The signature's input_arg (2) and output_arg (3): each of a fixed type, since a function
   here is made once, not per instantiation of its type attrs. */
static df_code df__gd_fn_signature(df__gd_fb *b, df__pb s, const char *name, df_status *st) {
    uint32_t f;
    int wt, bad;
    while (df__pb_next(&s, &f, &wt, &bad)) {
        if ((f == 2 || f == 3) && wt == DF__PB_LEN) {
            df__pb a;
            df__gd_str an;
            df_dtype t;
            int poly;
            if (!df__pb_sub(&s, &a) || !df__gd_argdef(a, &an, &t, &poly)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s': malformed argument", name);
            if (poly || (f == 2 && !df_dtype_size(t) && t != DF_STRING && t != DF_BOOL)) return df_status_set(st, DF_UNIMPLEMENTED, "GraphDef: function '%s': argument '%.*s' has a type given by an attr or a type not supported here", name, (int)DF__MIN(an.n, (size_t)100), (const char *)an.p);
            if (f == 2) {
                if (!df__grow(&b->arg_names, &b->cap_args, b->n_args + 1, sizeof *b->arg_names)) return df__gd_fn_oom(st, name);
                df_dtype *types = (df_dtype *)DF_REALLOC(b->arg_types, (size_t)b->cap_args * sizeof(df_dtype));
                if (!types) return df__gd_fn_oom(st, name);     /* (b->arg_types stays b's, freed with it) */
                b->arg_types = types;
                b->arg_names[b->n_args] = an;
                b->arg_types[b->n_args++] = t;
            } else {
                if (!df__grow(&b->out_names, &b->cap_outs, b->n_outs + 1, sizeof *b->out_names)) return df__gd_fn_oom(st, name);
                b->out_names[b->n_outs++] = an;
            }
        } else if (!df__pb_skip(&s, wt)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s': malformed signature", name);
    }
    return DF_OK;
}

/* Argument names are unique among the inputs and among the outputs (TensorFlow's
   ValidateOpDef): the body and the ret map refer to them by name. */
static df_code df__gd_fn_unique_args(const df__gd_fb *b, const char *name, df_status *st) {
    for (int list = 0; list < 2; list++) {
        const df__gd_str *v = list ? b->out_names : b->arg_names;
        int nv = list ? b->n_outs : b->n_args, dup = -1;
        df__strmap seen;
        memset(&seen, 0, sizeof seen);
        for (int i = 0; i < nv && dup < 0; i++) {
            char *an = df__gd_cstr(v[i], NULL);
            if (!an || (!df__strmap_get(&seen, an, NULL) && !df__strmap_put(&seen, an, i))) { DF_FREE(an); df__strmap_free(&seen); return df__gd_fn_oom(st, name); }
            if (seen.count <= i) dup = i;
            DF_FREE(an);
        }
        df__strmap_free(&seen);
        if (dup >= 0)
            return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s' has two %s arguments named '%.*s'", name,
                                 list ? "output" : "input", (int)DF__MIN(v[dup].n, (size_t)100), (const char *)v[dup].p);
    }
    return DF_OK;
}

/* The FunctionDef's node_def (3), parsed as a GraphDef's NodeDefs are, and its ret map (4),
   output name -> "node:out_arg:i". */
static df_code df__gd_fn_body(df__gd_fb *b, df__pb r, const char *name, df_status *st) {
    uint32_t f;
    int wt, bad;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (f == 3 && wt == DF__PB_LEN) {
            df__pb sub;
            if (!df__pb_sub(&r, &sub)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s': truncated NodeDef", name);
            if (b->nodes.n >= DF_MAX_GRAPH_NODES) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: function '%s' has more "
                                                                   "nodes than a graph may have (DF_MAX_GRAPH_NODES)", name);
            if (!df__grow(&b->nodes.nodes, &b->nodes.cap, b->nodes.n + 1, sizeof *b->nodes.nodes)) return df__gd_fn_oom(st, name);
            df__gd_node *n = &b->nodes.nodes[b->nodes.n++];
            memset(n, 0, sizeof *n);
            if (df__gd_parse_node(&b->nodes, &sub, n)) return st->code;
        } else if (f == 4 && wt == DF__PB_LEN) {
            df__pb m;
            df__gd_str k = {NULL, 0}, v = {NULL, 0};
            if (!df__pb_sub(&r, &m)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s': truncated ret", name);
            uint32_t g2;
            int w2, b2;
            while (df__pb_next(&m, &g2, &w2, &b2)) {
                if (g2 == 1 && w2 == DF__PB_LEN) { if (!df__gd_string(&m, &k)) break; }
                else if (g2 == 2 && w2 == DF__PB_LEN) { if (!df__gd_string(&m, &v)) break; }
                else if (!df__pb_skip(&m, w2)) break;
            }
            if (!df__grow(&b->ret_keys, &b->cap_rk, b->n_rets + 1, sizeof *b->ret_keys) ||
                !df__grow(&b->ret_vals, &b->cap_rv, b->n_rets + 1, sizeof *b->ret_vals)) return df__gd_fn_oom(st, name);
            b->ret_keys[b->n_rets] = k;
            b->ret_vals[b->n_rets++] = v;
        } else if (!df__pb_skip(&r, wt)) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s': malformed FunctionDef", name);
    }
    return DF_OK;
}

/* The body as a GraphDef in w, so it is imported with a graph's checks: an _Arg node per
   input argument, then the nodes with their inputs rewritten to "node:flat index". A failed
   write is left in w->oom for the caller. */
static df_code df__gd_fn_graphdef(const df__gd_fb *b, df__pbw *w, const char *name, df_status *st) {
    for (int i = 0; i < b->n_args; i++) {
        df__pbw nd, av;
        memset(&nd, 0, sizeof nd);
        memset(&av, 0, sizeof av);
        df__pbw_bytes(&nd, 1, b->arg_names[i].p, b->arg_names[i].n);
        df__pbw_str(&nd, 2, "_Arg");
        df__pbw ent;
        memset(&ent, 0, sizeof ent);
        df__pbw_str(&ent, 1, "T");
        df__pbw_uint(&av, 6, (uint64_t)b->arg_types[i]);
        df__pbw_msg(&ent, 2, &av);
        df__pbw_msg(&nd, 5, &ent);
        memset(&ent, 0, sizeof ent);
        df__pbw_str(&ent, 1, "index");
        df__pbw_uint(&av, 3, (uint64_t)i);
        df__pbw_msg(&ent, 2, &av);
        df__pbw_msg(&nd, 5, &ent);
        df__pbw_msg(w, 1, &nd);
    }
    for (int i = 0; i < b->nodes.n; i++) {
        const df__gd_node *n = &b->nodes.nodes[i];
        df__pbw nd;
        memset(&nd, 0, sizeof nd);
        df__pbw_bytes(&nd, 1, n->name.p, n->name.n);
        df__pbw_bytes(&nd, 2, n->op.p, n->op.n);
        for (int k = 0; k < n->n_inputs; k++) {
            char conv[512];
            const char *why = "";
            if (!df__gd_fn_input(b, n->inputs[k], conv, sizeof conv, &why)) {
                DF_FREE(nd.buf);
                return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s': input '%.*s': %s {{node %.*s}}", name,
                                     (int)DF__MIN(n->inputs[k].n, (size_t)100), (const char *)n->inputs[k].p, why,
                                     (int)DF__MIN(n->name.n, (size_t)100), (const char *)n->name.p);
            }
            df__pbw_str(&nd, 3, conv);
        }
        if (n->device.n) df__pbw_bytes(&nd, 4, n->device.p, n->device.n);
        for (int k = 0; k < n->n_attrs; k++) {
            df__pbw ent;
            memset(&ent, 0, sizeof ent);
            df__pbw_bytes(&ent, 1, n->attrs[k].key.p, n->attrs[k].key.n);
            df__pbw_bytes(&ent, 2, n->attrs[k].value.p, (size_t)(n->attrs[k].value.end - n->attrs[k].value.p));
            df__pbw_msg(&nd, 5, &ent);
        }
        df__pbw_msg(w, 1, &nd);
    }
    return DF_OK;
}

static df_code df__gd_make_function(df_graph *g, df__gd_lib *L, int fi, df_status *st, int depth) {
    df__gd_fdef *e = &L->f[fi];
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)DF__MIN(e->name.n, (size_t)250), (const char *)e->name.p);
    if (e->state == 2 || df__fn_find(g, name)) return DF_OK;
    if (e->state == 1) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: function '%s' uses itself (directly or "
                                            "through other functions); recursion is not supported", name);
    if (depth > DF_MAX_FUNCTION_DEPTH)
        return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: functions call each other more than %d deep (DF_MAX_FUNCTION_DEPTH; at '%s')",
                             DF_MAX_FUNCTION_DEPTH, name);
    e->state = 1;
    if (df__gd_fn_deps(g, L, e->whole, st, depth)) return st->code;
    df__gd_fb b;
    memset(&b, 0, sizeof b);
    b.nodes.st = st;
    df__pbw w;
    memset(&w, 0, sizeof w);
    df_code code = df__gd_fn_signature(&b, e->sig, name, st);
    if (!code) code = df__gd_fn_unique_args(&b, name, st);
    if (!code) code = df__gd_fn_body(&b, e->whole, name, st);
    if (!code) code = df__gd_fn_graphdef(&b, &w, name, st);
    if (code) goto out;
    if (w.oom) goto oom;
    {
        df__gd_fn_user u = {&w, &b, st};
        /* df__fn_make makes _Arg nodes named arg0..; the body's own, named as in the FunctionDef,
           come with the import: the function's arguments are those */
        df__func *fn = df__fn_make(g, name, 0, NULL, NULL, b.n_outs, df__gd_fn_build, &u);
        if (!fn) {
            if (!st->code || st->code == DF_OK) df_status_set(st, g->status.code, "%s", g->status.message);
            code = st->code;
            goto out;
        }
        df_node **args = (df_node **)DF_MALLOC((size_t)(b.n_args + 1) * sizeof(df_node *));
        if (!args) goto oom;
        for (int i = 0; i < b.n_args; i++) {
            char an[256];
            snprintf(an, sizeof an, "%.*s", (int)DF__MIN(b.arg_names[i].n, (size_t)250), (const char *)b.arg_names[i].p);
            args[i] = df_graph_find(fn->body, an);
        }
        DF_FREE(fn->args);
        fn->args = args;
        fn->n_args = b.n_args;
        fn->n_caps = 0;
        df_status_clear(st);
    }
    e->state = 2;
    goto out;
oom:
    code = df__gd_fn_oom(st, name);
out:
    DF_FREE(w.buf);
    df__gd_fb_free(&b);
    return code ? code : st->code;
}

/* Makes the library functions the graph's nodes use (transitively). */
DF_PRIVATE df_code df__gd_import_library(df_graph *g, const df__gd *d, df__pb lib, const void *data, size_t len, df_status *st) {
    DF__UNUSED(d);
    df__gd_lib L;
    memset(&L, 0, sizeof L);
    df_status_clear(st);
    df_code c = df__gd_lib_parse(lib, &L, st);
    if (!c) {
        df__pb whole = {(const uint8_t *)data, (const uint8_t *)data + len};
        c = df__gd_nodes_deps(g, &L, whole, 1, st, 0);
    }
    DF_FREE(L.f);
    df__strmap_free(&L.names);
    return c;
}
