/* ==========================================================================================
   src/graph.c: Graph construction                                                    >>graph
   A graph owns its nodes (insertion order = id order), a name index, the scope stacks and the
   control-flow contexts. The first error is sticky: later building calls return NULL/{NULL,0}
   and do nothing. df_op_finish checks a node against its op definition, captures inputs that
   cross into a cond or while context, adds pivot control edges, infers types and shapes.
   ========================================================================================== */

DF_PRIVATE void df__attr_clear(df__attr *a) {
    switch (a->kind) {
    case DF__A_STRING: case DF__A_FUNC: DF_FREE(a->u.s); break;
    case DF__A_TENSOR: df_tensor_release(a->u.tensor); break;
    case DF__A_INT_LIST: case DF__A_SHAPE_LIST: DF_FREE(a->u.ints.v); break;
    case DF__A_TYPE_LIST: DF_FREE(a->u.types.v); break;
    default: break;
    }
    DF_FREE((char *)a->name);
    a->kind = DF__A_NONE;
}

/* Deep copy; returns 0 on OOM, leaving dst owning nothing (kind DF__A_NONE, no name), so that
   df__attr_clear on it is a no-op and never frees src's values. */
DF_PRIVATE int df__attr_copy(df__attr *dst, const df__attr *src) {
    *dst = *src;
    dst->name = df__strdup(src->name);
    if (!dst->name) goto oom;
    switch (src->kind) {
    case DF__A_STRING: case DF__A_FUNC:
        if (src->u.s && !(dst->u.s = df__strdup(src->u.s))) goto oom;
        break;
    case DF__A_TENSOR: df_tensor_retain(src->u.tensor); break;
    case DF__A_INT_LIST: case DF__A_SHAPE_LIST:
        dst->u.ints.v = NULL;
        if (src->u.ints.n) {
            if (!(dst->u.ints.v = (int64_t *)DF_MALLOC((size_t)src->u.ints.n * 8))) goto oom;
            memcpy(dst->u.ints.v, src->u.ints.v, (size_t)src->u.ints.n * 8);
        }
        break;
    case DF__A_TYPE_LIST:
        dst->u.types.v = NULL;
        if (src->u.types.n) {
            size_t bytes = (size_t)src->u.types.n * sizeof(df_dtype);
            if (!(dst->u.types.v = (df_dtype *)DF_MALLOC(bytes))) goto oom;
            memcpy(dst->u.types.v, src->u.types.v, bytes);
        }
        break;
    default: break;
    }
    return 1;
oom:
    DF_FREE((char *)dst->name);
    memset(dst, 0, sizeof *dst);
    dst->kind = DF__A_NONE;
    return 0;
}

DF_PRIVATE df_code df__fail(df_status *st, const df_node *n, df_code code, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return df_status_set(st, code, "%s {{node %s}}", msg, n && n->name ? n->name : "?");
}

DF_PRIVATE const df__attr *df__node_attr(const df_node *n, const char *name) {
    for (int i = 0; n && i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}
DF_PRIVATE int64_t df__attr_i(const df_node *n, const char *name, int64_t def) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_INT ? a->u.i : def;
}
DF_PRIVATE int df__attr_b(const df_node *n, const char *name, int def) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_BOOL ? a->u.b : def;
}
DF_PRIVATE df_dtype df__attr_type(const df_node *n, const char *name) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_TYPE ? a->u.type : (df_dtype)0;
}
DF_PRIVATE const char *df__attr_s(const df_node *n, const char *name) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_STRING && a->u.s ? a->u.s : "";
}

DF_PRIVATE const df__attr *df__attr_find_kind(const df_node *n, const char *attr, df__attr_kind kind) {
    const df__attr *a = df__node_attr(n, attr ? attr : "");
    return a && a->kind == kind ? a : NULL;
}
int df_node_attr_int(const df_node *n, const char *attr, int64_t *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_INT);
    if (a && v) *v = a->u.i;
    return a != NULL;
}
int df_node_attr_float(const df_node *n, const char *attr, float *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_FLOAT);
    if (a && v) *v = a->u.f;
    return a != NULL;
}
int df_node_attr_bool(const df_node *n, const char *attr, int *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_BOOL);
    if (a && v) *v = a->u.b;
    return a != NULL;
}
int df_node_attr_type(const df_node *n, const char *attr, df_dtype *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_TYPE);
    if (a && v) *v = a->u.type;
    return a != NULL;
}
int df_node_attr_string(const df_node *n, const char *attr, const char **v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_STRING);
    if (a && v) *v = a->u.s ? a->u.s : "";
    return a != NULL;
}
int df_node_attr_tensor(const df_node *n, const char *attr, const df_tensor **v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_TENSOR);
    if (a && v) *v = a->u.tensor;
    return a != NULL;
}

/* Sets the graph's sticky error (first one wins) and returns its code. */
DF_PRIVATE df_code df__graph_error(df_graph *g, df_code code, const char *fmt, ...) {
    if (!g || g->status.code != DF_OK) return g ? g->status.code : code;
    va_list ap;
    g->status.code = code;
    va_start(ap, fmt);
    vsnprintf(g->status.message, sizeof g->status.message, fmt, ap);
    va_end(ap);
    return code;
}

df_graph *df_graph_new(void) {
    df_graph *g = (df_graph *)DF_MALLOC(sizeof *g);
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    g->holds = 1;
    return g;
}

#ifdef DATAFLOW_CUDA
#endif
DF_PRIVATE void df__node_free(df_node *n) {
    if (!n) return;
#ifdef DATAFLOW_CUDA
    df__gg_free(n->gg);
#endif
    DF_FREE(n->name); DF_FREE(n->device); DF_FREE(n->inputs); DF_FREE(n->controls);
    DF_FREE(n->out_types); DF_FREE(n->out_shapes); DF_FREE(n->out_is_ref);
    for (int i = 0; i < n->n_attrs; i++) df__attr_clear(&n->attrs[i]);
    DF_FREE(n->attrs);
    DF_FREE(n);
}

static void df__graph_destroy(df_graph *g) {
    for (int i = 0; i < g->n_funcs; i++) df__func_free(g->funcs[i]);
    DF_FREE(g->funcs);
    df__strmap_free(&g->func_names);
    DF_FREE(g->fcap_src); DF_FREE(g->fcap_args);
    for (int i = 0; i < g->n_nodes; i++) df__node_free(g->nodes[i]);
    DF_FREE(g->nodes);
    df__strmap_free(&g->names);
    df__strmap_free(&g->name_counts);
    for (int i = 0; i < g->n_scopes; i++) DF_FREE(g->scopes[i]);
    DF_FREE(g->scopes);
    for (int i = 0; i < g->n_devices; i++) DF_FREE(g->devices[i]);
    DF_FREE(g->devices);
    for (int i = 0; i < g->n_ctl; i++) DF_FREE(g->ctl[i].deps);
    DF_FREE(g->ctl);
    for (int i = 0; i < g->n_ctxs; i++) {
        DF_FREE(g->ctxs[i]->frame_name);
        DF_FREE(g->ctxs[i]->captures);
        DF_FREE(g->ctxs[i]->enters);
        DF_FREE(g->ctxs[i]->pops);
        DF_FREE(g->ctxs[i]);
    }
    DF_FREE(g->ctxs);
    df__gstacks_free(g);
    DF_FREE(g->initializers);
    DF_FREE(g);
}
DF_PRIVATE void df__graph_release(df_graph *g) {
    if (__atomic_sub_fetch(&g->holds, 1, __ATOMIC_ACQ_REL) == 0) df__graph_destroy(g);
}
void df_graph_free(df_graph *g) {
    if (!g) return;
    /* (a second call, while sessions still hold g, must not let go of a hold that is theirs) */
    if (__atomic_exchange_n(&g->freed_by_user, 1, __ATOMIC_ACQ_REL)) return;
    df__graph_release(g);
}

const df_status *df_graph_status(const df_graph *g) {
    static const df_status null_graph = {DF_INVALID_ARGUMENT, "graph is NULL"};
    return g ? &g->status : &null_graph;
}
df_node *df_graph_find(const df_graph *g, const char *name) {
    int id;
    if (!g || !name || !df__strmap_get(&g->names, name, &id)) return NULL;
    return g->nodes[id];
}
int df_graph_num_nodes(const df_graph *g) { return g ? g->n_nodes : 0; }
df_node *df_graph_node_at(const df_graph *g, int i) {
    return g && i >= 0 && i < g->n_nodes ? g->nodes[i] : NULL;
}
const char *df_node_name(const df_node *n) { return n ? n->name : ""; }
const char *df_node_op(const df_node *n) { return n ? n->op->name : ""; }
const char *df_node_device(const df_node *n) { return n && n->device ? n->device : ""; }
int df_node_num_outputs(const df_node *n) { return n ? n->n_outputs : 0; }
int df_node_num_inputs(const df_node *n) { return n ? n->n_inputs : 0; }
df_output df_node_input(const df_node *n, int i) {
    df_output none = {NULL, 0};
    return n && i >= 0 && i < n->n_inputs ? n->inputs[i] : none;
}
int df_node_num_control_inputs(const df_node *n) { return n ? n->n_controls : 0; }
df_node *df_node_control_input(const df_node *n, int i) {
    return n && i >= 0 && i < n->n_controls ? n->controls[i] : NULL;
}
DF_PRIVATE int df__output_valid(df_output o) { return o.node && o.index >= 0 && o.index < o.node->n_outputs; }
df_dtype df_output_dtype(df_output o) { return df__output_valid(o) ? o.node->out_types[o.index] : (df_dtype)0; }
int df_output_shape(df_output o, int64_t dims[DF_MAX_RANK]) {
    if (!df__output_valid(o)) return -1;
    const df__shape *s = &o.node->out_shapes[o.index];
    for (int i = 0; dims && i < s->rank; i++) dims[i] = s->dims[i];
    return s->rank;
}

/* ---- scopes ---- */
DF_PRIVATE const char *df__scope(const df_graph *g) { return g->n_scopes ? g->scopes[g->n_scopes - 1] : ""; }

void df_graph_push_name_scope(df_graph *g, const char *scope) {
    if (!g || g->status.code) return;
    if (scope && *scope && !g->internal_names && !df__valid_node_name(scope)) {   /* (its nodes' names would be invalid) */
        df__graph_error(g, DF_INVALID_ARGUMENT, "Invalid name scope '%s': names use letters, digits and . _ - / "
                        "and do not start with _ - /", scope);
        return;
    }
    if (!df__grow(&g->scopes, &g->cap_scopes, g->n_scopes + 1, sizeof(char *))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing a name scope");
        return;
    }
    const char *prefix = df__scope(g);
    size_t n = strlen(prefix) + (scope ? strlen(scope) : 0) + 2;
    char *full = (char *)DF_MALLOC(n);
    if (!full) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing a name scope"); return; }
    if (scope && *scope) snprintf(full, n, "%s%s/", prefix, scope);
    else snprintf(full, n, "%s", prefix);
    g->scopes[g->n_scopes++] = full;
}
void df_graph_pop_name_scope(df_graph *g) {
    if (g && g->n_scopes) DF_FREE(g->scopes[--g->n_scopes]);
}
void df_graph_push_device(df_graph *g, const char *device) {
    if (!g || g->status.code) return;
    char *d = df__strdup(device ? device : "");
    if (!d || !df__grow(&g->devices, &g->cap_devices, g->n_devices + 1, sizeof(char *))) {
        DF_FREE(d);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing a device scope");
        return;
    }
    g->devices[g->n_devices++] = d;
}
/* Variables round robin over the ps tasks, every other op on worker_device: TensorFlow's
   replica_device_setter. Popped with df_graph_pop_device. */
void df_graph_push_replica_device_setter(df_graph *g, int ps_tasks, const char *worker_device) {
    if (!g || g->status.code) return;
    if (ps_tasks < 1 || ps_tasks > 1 << 20) { df__graph_error(g, DF_INVALID_ARGUMENT, "replica_device_setter: %d ps tasks", ps_tasks); return; }
    char spec[128];
    int n = snprintf(spec, sizeof spec, "%c%d:%s", 1, ps_tasks, worker_device ? worker_device : "/job:worker");
    if (n < 0 || (size_t)n >= sizeof spec) { df__graph_error(g, DF_INVALID_ARGUMENT, "replica_device_setter: worker device '%s' is too long", worker_device); return; }
    df_graph_push_device(g, spec);
}
void df_graph_pop_device(df_graph *g) {
    if (g && g->n_devices) DF_FREE(g->devices[--g->n_devices]);
}
void df_graph_push_control_deps(df_graph *g, df_node *const *deps, int n) {
    if (!g || g->status.code) return;
    if (n < 0 || (n > 0 && !deps)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "push_control_deps: bad dependency list (n=%d)", n);
        return;
    }
    for (int i = 0; i < n; i++)
        if (!deps[i] || deps[i]->graph != g) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "push_control_deps: dependency %d is NULL or "
                            "from another graph", i);
            return;
        }
    if (!df__grow(&g->ctl, &g->cap_ctl, g->n_ctl + 1, sizeof *g->ctl)) goto oom;
    df__ctl_scope *c = &g->ctl[g->n_ctl];
    c->n = n;
    c->deps = NULL;
    if (n && !(c->deps = (df_node **)DF_MALLOC((size_t)n * sizeof(df_node *)))) goto oom;
    if (n) memcpy(c->deps, deps, (size_t)n * sizeof(df_node *));
    g->n_ctl++;
    return;
oom:
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing control dependencies");
}
void df_graph_pop_control_deps(df_graph *g) {
    if (g && g->n_ctl) DF_FREE(g->ctl[--g->n_ctl].deps);
}

/* ---- the builder ---- */
DF_PRIVATE int df__valid_node_name(const char *s) {
    if (!s || !*s) return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || (p != s && (c == '_' || c == '-' || c == '/' || c == '>'));
        if (!ok) return 0;
    }
    return 1;
}

/* A unique name "scope/base", "scope/base_1", ... */
DF_PRIVATE char *df__unique_name(df_graph *g, const char *base) {
    const char *scope = df__scope(g);
    size_t n = strlen(scope) + strlen(base) + 24;
    char *name = (char *)DF_MALLOC(n);
    if (!name) return NULL;
    snprintf(name, n, "%s%s", scope, base);
    int next = 0;
    df__strmap_get(&g->name_counts, name, &next);
    char *candidate = (char *)DF_MALLOC(n);
    if (!candidate) { DF_FREE(name); return NULL; }
    for (;;) {
        if (next == 0) snprintf(candidate, n, "%s", name);
        else snprintf(candidate, n, "%s_%d", name, next);
        next++;
        if (!df__strmap_get(&g->names, candidate, NULL)) break;
    }
    if (!df__strmap_put(&g->name_counts, name, next)) { DF_FREE(name); DF_FREE(candidate); return NULL; }
    DF_FREE(name);
    return candidate;
}

df_op_builder *df_op_new(df_graph *g, const char *op_type, const char *name) {
    if (!g || g->status.code != DF_OK) return NULL;
    const df__opdef *op = df__op_lookup(op_type);
    if (!op) {
        df_status why;
        df__op_lookup_failure(op_type, name, &why);
        df__graph_error(g, why.code, "%s", why.message);
        return NULL;
    }
    df_op_builder *b = (df_op_builder *)DF_MALLOC(sizeof *b);
    if (!b) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory in df_op_new"); return NULL; }
    memset(b, 0, sizeof *b);
    b->g = g;
    b->op = op;
    if (name) {
        const char *scope = df__scope(g);
        size_t n = strlen(scope) + strlen(name) + 1;
        if ((b->name = (char *)DF_MALLOC(n))) snprintf(b->name, n, "%s%s", scope, name);
        if (!g->internal_names && !df__valid_node_name(name)) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "Invalid node name '%s' for op %s: names use "
                            "letters, digits and . _ - / and do not start with _ - /", name, op->name);
            DF_FREE(b->name); DF_FREE(b);
            return NULL;
        }
    } else {                   /* (from "_Arg", "Arg": a name must not start with _) */
        const char *base = op->name;
        while (!g->internal_names && *base == '_') base++;
        b->name = df__unique_name(g, base);
    }
    if (!b->name) { b->oom = 1; }
    const char *top = g->n_devices ? g->devices[g->n_devices - 1] : NULL;
    if (top && top[0] == '\001') {              /* a replica device setter: "\001ps_tasks:worker_device" */
        int ps_tasks = atoi(top + 1);
        const char *worker = strchr(top, ':') + 1;
        char dev[96];
        if (!strcmp(op->name, "VariableV2") || !strcmp(op->name, "VarHandleOp") || !strcmp(op->name, "Variable"))
            snprintf(dev, sizeof dev, "/job:ps/task:%d", g->replica_next++ % ps_tasks);
        else snprintf(dev, sizeof dev, "%s", worker);
        if (!(b->device = df__strdup(dev))) b->oom = 1;
    } else if (top && !(b->device = df__strdup(top))) b->oom = 1;
    return b;
}

DF_PRIVATE void df__builder_free(df_op_builder *b) {
    if (!b) return;
    DF_FREE(b->name); DF_FREE(b->device); DF_FREE(b->inputs); DF_FREE(b->groups);
    DF_FREE(b->controls);
    for (int i = 0; i < b->n_attrs; i++) df__attr_clear(&b->attrs[i]);
    DF_FREE(b->attrs);
    DF_FREE(b);
}

static void df__builder_inputs(df_op_builder *b, const df_output *ins, int n, int is_list) {
    if (!b) return;
    if (n < 0 || (n > 0 && !ins)) { b->oom = 2; return; }
    if (!df__grow(&b->inputs, &b->cap_inputs, b->n_inputs + n, sizeof(df_output)) ||
        !df__grow(&b->groups, &b->cap_groups, b->n_groups + 1, sizeof *b->groups)) { b->oom = 1; return; }
    b->groups[b->n_groups].start = b->n_inputs;
    b->groups[b->n_groups].count = n;
    b->groups[b->n_groups].is_list = is_list;
    b->n_groups++;
    if (n) memcpy(b->inputs + b->n_inputs, ins, (size_t)n * sizeof(df_output));
    b->n_inputs += n;
}
void df_op_add_input(df_op_builder *b, df_output in) { df__builder_inputs(b, &in, 1, 0); }
void df_op_add_input_list(df_op_builder *b, const df_output *ins, int n) { df__builder_inputs(b, ins, n, 1); }

void df_op_add_control_input(df_op_builder *b, df_node *n) {
    if (!b) return;
    if (!df__grow(&b->controls, &b->cap_controls, b->n_controls + 1, sizeof(df_node *))) { b->oom = 1; return; }
    b->controls[b->n_controls++] = n;     /* NULL is reported at finish */
}

void df_op_set_device(df_op_builder *b, const char *device) {
    if (!b) return;
    DF_FREE(b->device);
    if (!(b->device = df__strdup(device ? device : ""))) b->oom = 1;
}

df_code df_node_set_device(df_graph *g, df_node *n, const char *device) {
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (!n || n->graph != g || n->id < 0 || n->id >= g->n_nodes || g->nodes[n->id] != n)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_node_set_device: the node is not this graph's");
    if (__atomic_load_n(&g->holds, __ATOMIC_ACQUIRE) > 1)
        return df__graph_error(g, DF_FAILED_PRECONDITION, "df_node_set_device: a session has been made on the graph "
                               "{{node %s}}", n->name);
    char *d = df__strdup(device ? device : "");
    if (!d) return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    DF_FREE(n->device);
    n->device = d;
    return DF_OK;
}

void df_op_colocate_with(df_op_builder *b, const df_node *n) {
    if (!b || b->oom) return;
    if (!n || !n->name) { b->oom = 2; return; }
    const char *prev = "";
    for (int i = 0; i < b->n_attrs; i++)
        if (!strcmp(b->attrs[i].name, "_class") && b->attrs[i].kind == DF__A_STRING && b->attrs[i].u.s) prev = b->attrs[i].u.s;
    size_t len = strlen(prev) + strlen(n->name) + 8;
    char *v = (char *)DF_MALLOC(len);
    if (!v) { b->oom = 1; return; }
    snprintf(v, len, "%s%sloc:@%s", prev, *prev ? "," : "", n->name);
    df_op_set_attr_string(b, "_class", v);
    DF_FREE(v);
}

/* Returns the slot for attr `name`, clearing any earlier value. */
DF_PRIVATE df__attr *df__builder_attr(df_op_builder *b, const char *name, df__attr_kind kind) {
    if (!b) return NULL;
    if (!name) { b->oom = 3; return NULL; }
    for (int i = 0; i < b->n_attrs; i++)
        if (!strcmp(b->attrs[i].name, name)) {
            df__attr_clear(&b->attrs[i]);
            memset(&b->attrs[i].u, 0, sizeof b->attrs[i].u);   /* (an empty list keeps no freed pointer) */
            b->attrs[i].name = df__strdup(name);
            b->attrs[i].kind = kind;
            if (!b->attrs[i].name) { b->oom = 1; return NULL; }
            return &b->attrs[i];
        }
    if (!df__grow(&b->attrs, &b->cap_attrs, b->n_attrs + 1, sizeof(df__attr))) { b->oom = 1; return NULL; }
    df__attr *a = &b->attrs[b->n_attrs];
    memset(a, 0, sizeof *a);
    if (!(a->name = df__strdup(name))) { b->oom = 1; return NULL; }
    a->kind = kind;
    b->n_attrs++;
    return a;
}
void df_op_set_attr_int(df_op_builder *b, const char *attr, int64_t v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_INT); if (a) a->u.i = v;
}
void df_op_set_attr_float(df_op_builder *b, const char *attr, float v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_FLOAT); if (a) a->u.f = v;
}
void df_op_set_attr_bool(df_op_builder *b, const char *attr, int v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_BOOL); if (a) a->u.b = v != 0;
}
void df_op_set_attr_type(df_op_builder *b, const char *attr, df_dtype v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_TYPE); if (a) a->u.type = v;
}
void df_op_set_attr_string(df_op_builder *b, const char *attr, const char *v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_STRING);
    if (a && !(a->u.s = df__strdup(v ? v : ""))) b->oom = 1;
}
void df_op_set_attr_func(df_op_builder *b, const char *attr, const char *function) {
    df__attr *a = df__builder_attr(b, attr, DF__A_FUNC);
    if (a && !(a->u.s = df__strdup(function ? function : ""))) b->oom = 1;
}
void df_op_set_attr_shape(df_op_builder *b, const char *attr, int rank, const int64_t *dims) {
    df__attr *a = df__builder_attr(b, attr, DF__A_SHAPE);
    if (!a) return;
    if (rank > 0 && !dims) { b->oom = 4; a->u.shape.rank = -1; return; }
    a->u.shape.rank = rank;     /* a bad rank is reported by df_op_finish, naming the node */
    for (int i = 0; i < DF_MAX_RANK; i++) a->u.shape.dims[i] = i < rank ? dims[i] : 0;
}
void df_op_set_attr_tensor(df_op_builder *b, const char *attr, df_tensor *v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_TENSOR);
    if (a) a->u.tensor = df_tensor_retain(v);
}
void df_op_set_attr_int_list(df_op_builder *b, const char *attr, const int64_t *v, int n) {
    df__attr *a = df__builder_attr(b, attr, DF__A_INT_LIST);
    if (!a) return;
    if (n < 0 || (n > 0 && !v)) { b->oom = 5; return; }
    a->u.ints.n = n;
    if (n && !(a->u.ints.v = (int64_t *)DF_MALLOC((size_t)n * 8))) { b->oom = 1; a->u.ints.n = 0; return; }
    if (n) memcpy(a->u.ints.v, v, (size_t)n * 8);
}
void df_op_set_attr_type_list(df_op_builder *b, const char *attr, const df_dtype *v, int n) {
    df__attr *a = df__builder_attr(b, attr, DF__A_TYPE_LIST);
    if (!a) return;
    if (n < 0 || (n > 0 && !v)) { b->oom = 5; return; }
    a->u.types.n = n;
    if (n && !(a->u.types.v = (df_dtype *)DF_MALLOC((size_t)n * sizeof(df_dtype)))) { b->oom = 1; a->u.types.n = 0; return; }
    if (n) memcpy(a->u.types.v, v, (size_t)n * sizeof(df_dtype));
}

DF_PRIVATE const char *df__kind_name(df__attr_kind k) {
    static const char *names[] = {"none", "int", "float", "bool", "type", "string", "shape",
                                  "tensor", "list(int)", "list(type)", "func", "list(shape)"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

/* Sets or checks a `type` attr on the node from an input; returns DF_OK or an error. */
static df_code df__bind_type(df_node *n, const df__attrdef *ad, df_dtype t, const char *arg,
                             df_status *st) {
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, ad->name)) {
            if (n->attrs[i].u.type != t)
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of '%s' Op has type %s "
                    "that does not match type %s of attr '%s'", arg, n->op->name, df_dtype_name(t),
                    df_dtype_name(n->attrs[i].u.type), ad->name);
            return DF_OK;
        }
    df__attr a;
    memset(&a, 0, sizeof a);
    a.kind = DF__A_TYPE;
    a.u.type = t;
    if (!(a.name = df__strdup(ad->name))) return df__fail(st, n, DF_RESOURCE_EXHAUSTED, "Out of memory setting attr '%s' of %s", ad->name, n->op->name);
    n->attrs[n->n_attrs++] = a;    /* capacity reserved for every attr of the op */
    return DF_OK;
}

DF_PRIVATE df__attr *df__node_attr_mut(df_node *n, const char *name) {
    return (df__attr *)df__node_attr(n, name);
}

/* Sets attr `number_attr` from the length of the input list, or checks it against one given. */
static df_code df__typecheck_number_attr(df_node *n, const df__argdef *arg, const struct df__group *grp,
                                         df_status *st) {
    const df__opdef *op = n->op;
    const df__attrdef *ad = df__op_attrdef(op, arg->number_attr);
    df__attr *have = df__node_attr_mut(n, arg->number_attr);
    if (have && have->u.i != grp->count)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' is %lld but input '%s' "
            "has %d tensors", arg->number_attr, (long long)have->u.i, arg->name, grp->count);
    if (ad && ad->min != INT64_MIN && grp->count < ad->min)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of %s needs at least %lld "
            "tensors, got %d", arg->name, op->name, (long long)ad->min, grp->count);
    if (!have) {
        df__attr a;
        memset(&a, 0, sizeof a);
        a.kind = DF__A_INT; a.u.i = grp->count;
        if (!(a.name = df__strdup(arg->number_attr))) return df__fail(st, n, DF_RESOURCE_EXHAUSTED, "Out of memory setting attr '%s' of %s", arg->number_attr, op->name);
        n->attrs[n->n_attrs++] = a;
    }
    return DF_OK;
}

/* A list(type) input: binds the attr from the inputs' dtypes when not given, then checks each
   input against it. */
static df_code df__typecheck_type_list(df_node *n, const df__argdef *arg, const df__attrdef *tad,
                                       const struct df__group *grp, df_status *st) {
    const df__opdef *op = n->op;
    df__attr *have = df__node_attr_mut(n, tad->name);
    if (have) {
        if (have->u.types.n != grp->count)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' lists %d types but input "
                "'%s' has %d tensors", tad->name, have->u.types.n, arg->name, grp->count);
    } else {
        df__attr a;
        memset(&a, 0, sizeof a);
        a.kind = DF__A_TYPE_LIST;
        a.u.types.n = grp->count;
        if (!(a.name = df__strdup(tad->name))) return df__fail(st, n, DF_RESOURCE_EXHAUSTED, "Out of memory setting attr '%s' of %s", tad->name, op->name);
        if (grp->count && !(a.u.types.v = (df_dtype *)DF_MALLOC((size_t)grp->count * sizeof(df_dtype)))) {
            DF_FREE((char *)a.name);
            return df__fail(st, n, DF_RESOURCE_EXHAUSTED, "Out of memory setting attr '%s' of %s", tad->name, op->name);
        }
        for (int j = 0; j < grp->count; j++) a.u.types.v[j] = df_output_dtype(n->inputs[grp->start + j]);
        n->attrs[n->n_attrs++] = a;
        have = &n->attrs[n->n_attrs - 1];
    }
    for (int j = 0; j < grp->count; j++)
        if (have->u.types.v[j] != df_output_dtype(n->inputs[grp->start + j]))
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' %d of %s has type %s "
                "but attr '%s' says %s", arg->name, j, op->name,
                df_dtype_name(df_output_dtype(n->inputs[grp->start + j])), tad->name,
                df_dtype_name(have->u.types.v[j]));
    return DF_OK;
}

/* Each tensor of an input: a ref where the op writes through it, the fixed dtype, or an
   allowed one that binds (or must match) the input's `type` attr. */
static df_code df__typecheck_tensors(df_node *n, const df__argdef *arg, const df__attrdef *tad,
                                     const struct df__group *grp, df_status *st) {
    const df__opdef *op = n->op;
    for (int j = 0; j < grp->count; j++) {
        df_output in = n->inputs[grp->start + j];
        df_dtype t = df_output_dtype(in);
        if (arg->is_ref && !in.node->out_is_ref[in.index])
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of %s must be a variable "
                "(a ref output such as VariableV2's), got %s:%d of op %s", arg->name, op->name,
                in.node->name, in.index, in.node->op->name);
        if (arg->fixed && t != arg->fixed)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of '%s' Op has type %s "
                "that does not match expected type of %s", arg->name, op->name, df_dtype_name(t),
                df_dtype_name(arg->fixed));
        if (tad) {
            if (tad->allowed && !(tad->allowed & df__type_bit(t)))
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Value for attr '%s' of %s is not "
                    "in the list of allowed values for input '%s' of %s", tad->name, df_dtype_name(t),
                    arg->name, op->name);
            df_code c = df__bind_type(n, tad, t, arg->name, st);
            if (c) return c;
        }
    }
    return DF_OK;
}

/* One input argument of the op against its group of tensors. */
static df_code df__typecheck_input(df_node *n, const df__argdef *arg, const struct df__group *grp,
                                   df_status *st) {
    const df__opdef *op = n->op;
    if (!arg->is_list && grp->count != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of %s takes one tensor, "
                              "got a list of %d", arg->name, op->name, grp->count);
    if (arg->number_attr[0]) {
        df_code c = df__typecheck_number_attr(n, arg, grp, st);
        if (c) return c;
    }
    const df__attrdef *tad = arg->type_attr[0] ? df__op_attrdef(op, arg->type_attr) : NULL;
    if (tad && tad->kind == DF__A_TYPE_LIST) return df__typecheck_type_list(n, arg, tad, grp, st);
    return df__typecheck_tensors(n, arg, tad, grp, st);
}

/* Which dtypes a `type` attr may hold: the valid ones, plus resource handles and strings on the
   few ops that carry them. */
static int df__type_attr_accepts(const df__opdef *op, df_dtype t) {
    return df__dtype_valid(t) ||
        (t == DF_RESOURCE && ((op->flags & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER |
          DF__OP_EXIT | DF__OP_NEXT_ITERATION | DF__OP_TRANSFER)) || !strcmp(op->name, "Identity") ||
          !strcmp(op->name, "StackV2") || !strcmp(op->name, "LoopStackPush") ||
          !strcmp(op->name, "LoopStackPop"))) ||  /* handles flow, and are stacked (nested loop gradients) */
        (t == DF_STRING && ((op->flags & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT |
          DF__OP_NEXT_ITERATION | DF__OP_TRANSFER)) || !strcmp(op->name, "Identity") || !strcmp(op->name, "Const") ||
          !strcmp(op->name, "Placeholder") || !strcmp(op->name, "PlaceholderWithDefault") ||
          !strcmp(op->name, "TensorSummaryV2"))) ||  /* strings: paths and names, summaries of them */
        (t == DF_VARIANT && ((op->flags & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT |
          DF__OP_NEXT_ITERATION | DF__OP_TRANSFER)) || !strcmp(op->name, "Identity") || !strcmp(op->name, "StopGradient") ||
          !strcmp(op->name, "Placeholder") || !strcmp(op->name, "PlaceholderWithDefault") || !strcmp(op->name, "_Arg") ||
          !strcmp(op->name, "_Retval") || !strcmp(op->name, "ZerosLike") || !strcmp(op->name, "AddN") ||
          !strcmp(op->name, "Pack") || !strncmp(op->name, "TensorList", 10) || !strcmp(op->name, "EmptyTensorList") ||
          !strncmp(op->name, "Optional", 8)));  /* lists flow, add, and hold lists and optionals */
}

/* A shape attr must have a rank the runtime holds and an element count int64 can hold. */
static df_code df__typecheck_shape_attr(df_node *n, const df__attrdef *ad, const df__attr *a, df_status *st) {
    int64_t count = 1;
    if (a->u.shape.rank < -1 || a->u.shape.rank > DF_MAX_RANK)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s': rank %d is outside [-1, %d]", ad->name, a->u.shape.rank, DF_MAX_RANK);
    for (int d = 0; d < a->u.shape.rank; d++) {
        int64_t v = a->u.shape.dims[d];
        if (v < -1)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s': dimension %d is %lld; dims must be >= 0 "
                                  "or -1 (unknown)", ad->name, d, (long long)v);
        if (v > 0 && count > INT64_MAX / v)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s': the shape has too many elements "
                                  "(int64 overflow)", ad->name);
        if (v >= 0) count *= v;
    }
    return DF_OK;
}

/* Attr i against the op's definition (kind, allowed values, minimum, a sane shape), after the
   inputs have bound theirs, so that inferred attrs are checked like given ones. */
static df_code df__typecheck_attr(df_node *n, int i, df_status *st) {
    const df__opdef *op = n->op;
    const df__attrdef *ad = df__op_attrdef(op, n->attrs[i].name);
    if (!ad && n->attrs[i].name[0] == '_') return DF_OK;  /* internal attrs (_class, ...) as TF allows */
    if (!ad)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Op %s has no attr named '%s'", op->name,
                              n->attrs[i].name);
    if (ad->kind != n->attrs[i].kind)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' of %s has kind %s, got %s",
                              ad->name, op->name, df__kind_name(ad->kind), df__kind_name(n->attrs[i].kind));
    /* TF: "Invalid data format"; the V3 batch norms also take the 5-D formats */
    int five_d = !strcmp(op->name, "FusedBatchNormV3") || !strcmp(op->name, "FusedBatchNormGradV3");
    if (ad->kind == DF__A_STRING && !strcmp(ad->name, "data_format") && n->attrs[i].u.s &&
        strcmp(n->attrs[i].u.s, "NHWC") && strcmp(n->attrs[i].u.s, "NCHW") &&
        !(five_d && (!strcmp(n->attrs[i].u.s, "NDHWC") || !strcmp(n->attrs[i].u.s, "NCDHW"))))
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Invalid data_format '%.64s' for %s: NHWC or NCHW%s", n->attrs[i].u.s,
                        op->name, five_d ? " (NDHWC or NCDHW for 5-D inputs)" : "");
    if (ad->kind == DF__A_TYPE && ad->allowed && !(ad->allowed & df__type_bit(n->attrs[i].u.type)))
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Value for attr '%s' of %s is not in the "
            "list of allowed values for %s", ad->name, df_dtype_name(n->attrs[i].u.type), op->name);
    if (ad->kind == DF__A_TYPE && !df__type_attr_accepts(op, n->attrs[i].u.type))
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' of %s is an invalid dtype: %s (%d)",
                              ad->name, op->name, df_dtype_name(n->attrs[i].u.type), (int)n->attrs[i].u.type);
    if (ad->kind == DF__A_SHAPE) {
        df_code c = df__typecheck_shape_attr(n, ad, &n->attrs[i], st);
        if (c) return c;
    }
    if (ad->kind == DF__A_INT && ad->min != INT64_MIN && n->attrs[i].u.i < ad->min)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Value for attr '%s' of %lld must be at "
            "least minimum %lld", ad->name, (long long)n->attrs[i].u.i, (long long)ad->min);
    for (int j = 0; j < i; j++)
        if (!strcmp(n->attrs[j].name, n->attrs[i].name))
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Duplicate attr '%s'", ad->name);
    return DF_OK;
}

/* Every attr of the op not given takes its default; one without a default is an error. */
static df_code df__typecheck_defaults(df_node *n, df_status *st) {
    const df__opdef *op = n->op;
    for (int i = 0; i < op->n_attrs; i++) {
        const df__attrdef *ad = &op->attrs[i];
        if (df__node_attr(n, ad->name)) continue;
        if (!ad->has_default)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "NodeDef missing attr '%s' (%s) from Op %s",
                                  ad->name, df__kind_name(ad->kind), op->name);
        if (!df__attr_copy(&n->attrs[n->n_attrs], &ad->def))
            return df__fail(st, n, DF_RESOURCE_EXHAUSTED, "Out of memory setting attr '%s' of %s", ad->name, op->name);
        n->n_attrs++;
    }
    return DF_OK;
}

/* outputs: counted from the now complete attrs, then typed; shapes start unknown for the
   shape function to fill in. */
static df_code df__typecheck_outputs(df_node *n, df_status *st) {
    const df__opdef *op = n->op;
    int n_out = 0;
    for (int k = 0; k < op->n_out; k++) {
        const df__argdef *arg = &op->out[k];
        if (arg->number_attr[0]) n_out += (int)df__attr_i(n, arg->number_attr, 0);
        else if (arg->type_attr[0] && df__node_attr(n, arg->type_attr)->kind == DF__A_TYPE_LIST)
            n_out += df__node_attr(n, arg->type_attr)->u.types.n;
        else n_out++;
    }
    if (n_out > 0) {
        n->out_types = (df_dtype *)DF_MALLOC((size_t)n_out * sizeof(df_dtype));
        n->out_shapes = (df__shape *)DF_MALLOC((size_t)n_out * sizeof(df__shape));
        n->out_is_ref = (unsigned char *)DF_MALLOC((size_t)n_out);
        if (!n->out_types || !n->out_shapes || !n->out_is_ref)
            return df__fail(st, n, DF_RESOURCE_EXHAUSTED, "Out of memory for the outputs of %s", op->name);
    }
    if (n_out > 65535)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "%s would have %d outputs; at most 65535 are supported", op->name, n_out);
    n->n_outputs = n_out;
    int o = 0;
    for (int k = 0; k < op->n_out; k++) {
        const df__argdef *arg = &op->out[k];
        const df__attr *ta = arg->type_attr[0] ? df__node_attr(n, arg->type_attr) : NULL;
        int count = arg->number_attr[0] ? (int)df__attr_i(n, arg->number_attr, 0)
                    : (ta && ta->kind == DF__A_TYPE_LIST) ? ta->u.types.n : 1;
        for (int j = 0; j < count; j++, o++) {
            n->out_types[o] = arg->fixed ? arg->fixed
                              : ta->kind == DF__A_TYPE_LIST ? ta->u.types.v[j] : ta->u.type;
            n->out_is_ref[o] = (unsigned char)arg->is_ref;
            n->out_shapes[o].rank = -1;
        }
    }
    return DF_OK;
}

/* Type-checks inputs against the op definition, binds inferred attrs, fills in defaults and
   computes output dtypes. */
static df_code df__typecheck(df_node *n, const struct df__group *groups, int n_groups, df_status *st) {
    const df__opdef *op = n->op;
    df_code c;
    if (n_groups != op->n_in)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "%s expects %d input%s, got %d",
                              op->name, op->n_in, op->n_in == 1 ? "" : "s", n_groups);
    for (int i = 0; i < n->n_attrs; i++) {      /* kinds first: the inputs' checks read attrs by kind */
        const df__attrdef *ad = df__op_attrdef(op, n->attrs[i].name);
        if (ad && ad->kind != n->attrs[i].kind)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' of %s has kind %s, got %s",
                                  ad->name, op->name, df__kind_name(ad->kind), df__kind_name(n->attrs[i].kind));
    }
    for (int k = 0; k < op->n_in; k++)
        if ((c = df__typecheck_input(n, &op->in[k], &groups[k], st))) return c;
    for (int i = 0; i < n->n_attrs; i++)
        if ((c = df__typecheck_attr(n, i, st))) return c;
    if ((c = df__typecheck_defaults(n, st))) return c;
    return df__typecheck_outputs(n, st);
}

static int df__node_has_control(const df_node *n, const df_node *c) {
    for (int i = 0; i < n->n_controls; i++) if (n->controls[i] == c) return 1;
    return 0;
}
DF_PRIVATE int df__node_add_control(df_node *n, df_node *c) {
    if (df__node_has_control(n, c)) return 1;
    if (!df__grow(&n->controls, &n->cap_controls, n->n_controls + 1, sizeof(df_node *))) return 0;
    n->controls[n->n_controls++] = c;
    return 1;
}

/* How a phase of df_op_finish ended, so that it releases the builder and the node the same way
   on every path: the error is on the graph already (FAIL), in the local status (STATUS), or is
   out of memory (OOM). */
typedef enum { DF__FINISH_OK, DF__FINISH_FAIL, DF__FINISH_STATUS, DF__FINISH_OOM } df__finish_end;

/* A failed graph, a failed builder call, a full graph, a taken name or a bad device stop the node
   before anything is built. */
static df__finish_end df__finish_check_builder(df_op_builder *b) {
    df_graph *g = b->g;
    if (g->status.code != DF_OK) return DF__FINISH_FAIL;
    if (b->oom) {
        if (b->oom == 1) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory building %s node '%s'", b->op ? b->op->name : "a",
                                         b->name ? b->name : "?");
        else df__graph_error(g, DF_INVALID_ARGUMENT, "Bad argument (NULL list, negative count, bad rank "
                             "or NULL attr name) while building node '%s' {{node %s}}", b->name ? b->name : "?", b->name ? b->name : "?");
        return DF__FINISH_FAIL;
    }
    if (g->n_nodes >= DF_MAX_GRAPH_NODES) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "The graph has %d nodes, the most it may have (DF_MAX_GRAPH_NODES) "
                        "{{node %s}}", g->n_nodes, b->name);
        return DF__FINISH_FAIL;
    }
    if (df__strmap_get(&g->names, b->name, NULL)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "Duplicate node name in graph: '%s' {{node %s}}", b->name, b->name);
        return DF__FINISH_FAIL;
    }
    df__devspec ds;
    if (b->device && !df__parse_device(b->device, &ds)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "Malformed device specification '%s' {{node %s}}", b->device, b->name);
        return DF__FINISH_FAIL;
    }
    return DF__FINISH_OK;
}

/* Inputs must name real outputs of this graph (or, in a function's body, of a graph enclosing it,
   which are captured); control inputs must be nodes of this graph. */
static df__finish_end df__finish_check_inputs(df_op_builder *b) {
    df_graph *g = b->g;
    for (int i = 0; i < b->n_inputs; i++) {
        df_output in = b->inputs[i];
        if (!in.node)
            { df__graph_error(g, DF_INVALID_ARGUMENT, "Input %d of %s is NULL (did an earlier call fail?) "
                              "{{node %s}}", i, b->op->name, b->name); return DF__FINISH_FAIL; }
        if (in.index < 0 || in.index >= in.node->n_outputs)
            { df__graph_error(g, DF_INVALID_ARGUMENT, "Input %d of %s refers to output %d of '%s', which has "
                              "%d outputs {{node %s}}", i, b->op->name, in.index, in.node->name,
                              in.node->n_outputs, b->name); return DF__FINISH_FAIL; }
        if (in.node->graph != g) {
            /* a function's body may use values of the graphs it was defined in: captured */
            if (!b->raw && df__fn_encloses(in.node->graph, g)) {
                if (!(b->inputs[i] = df__fn_capture(g, in)).node) return DF__FINISH_FAIL;
                continue;
            }
            df__graph_error(g, DF_INVALID_ARGUMENT, "Input %d of %s comes from another graph {{node %s}}",
                            i, b->op->name, b->name);
            return DF__FINISH_FAIL;
        }
    }
    for (int i = 0; i < b->n_controls; i++)
        if (!b->controls[i] || b->controls[i]->graph != g)
            { df__graph_error(g, DF_INVALID_ARGUMENT, "Control input %d of %s is NULL or from another graph "
                              "{{node %s}}", i, b->op->name, b->name); return DF__FINISH_FAIL; }
    return DF__FINISH_OK;
}

/* Rewires the builder's edges for the scopes the node is built in; raw nodes (control-flow
   plumbing) keep them as given. */
static df__finish_end df__finish_capture(df_op_builder *b) {
    df_graph *g = b->g;
    /* Capture tensors that cross into the current cond/while context. */
    if (g->ctx && !b->raw) {
        for (int i = 0; i < b->n_inputs; i++) {
            df_output x = df__ctx_capture(g, g->ctx, b->inputs[i]);
            if (!x.node) return DF__FINISH_FAIL;
            b->inputs[i] = x;
        }
        for (int i = 0; i < b->n_controls; i++) {
            df_node *c = df__ctx_capture_control(g, g->ctx, b->controls[i]);
            if (!c) return DF__FINISH_FAIL;
            b->controls[i] = c;
        }
    }
    /* Control-dependency scopes apply to every node made inside them. */
    if (!b->raw)
        for (int s = 0; s < g->n_ctl; s++)
            for (int i = 0; i < g->ctl[s].n; i++) {
                df_node *c = g->ctl[s].deps[i];
                if (g->ctx && !(c = df__ctx_capture_control(g, g->ctx, c))) return DF__FINISH_FAIL;
                if (!df__grow(&b->controls, &b->cap_controls, b->n_controls + 1, sizeof(df_node *))) return DF__FINISH_OOM;
                b->controls[b->n_controls++] = c;
            }
    return DF__FINISH_OK;
}

/* The node takes over the builder's name, device and attrs and copies its edges; *out is set as
   soon as the node exists, so that the caller frees whatever part of it was made. */
static df__finish_end df__finish_new_node(df_op_builder *b, df_node **out) {
    df_graph *g = b->g;
    df_node *n;
    if (!(n = *out = (df_node *)DF_MALLOC(sizeof *n))) return DF__FINISH_OOM;
    memset(n, 0, sizeof *n);
    n->graph = g;
    n->op = b->op;
    n->ctx = g->ctx;
    n->name = b->name; b->name = NULL;
    n->device = b->device; b->device = NULL;
    n->n_inputs = b->n_inputs;
    if (b->n_inputs) {
        if (!(n->inputs = (df_output *)DF_MALLOC((size_t)b->n_inputs * sizeof(df_output)))) return DF__FINISH_OOM;
        memcpy(n->inputs, b->inputs, (size_t)b->n_inputs * sizeof(df_output));
    }
    /* Duplicate control inputs are harmless (each edge counts once each way), and checking for
       them here would be quadratic in a group of many nodes. */
    if (b->n_controls) {
        if (!(n->controls = (df_node **)DF_MALLOC((size_t)b->n_controls * sizeof(df_node *)))) return DF__FINISH_OOM;
        memcpy(n->controls, b->controls, (size_t)b->n_controls * sizeof(df_node *));
        n->n_controls = n->cap_controls = b->n_controls;
    }
    /* Room for every attr the op knows plus the ones given (unknown ones are reported). */
    if (!(n->attrs = (df__attr *)DF_MALLOC((size_t)(b->n_attrs + b->op->n_attrs + 1) * sizeof(df__attr)))) return DF__FINISH_OOM;
    for (int i = 0; i < b->n_attrs; i++) { n->attrs[i] = b->attrs[i]; }
    n->n_attrs = b->n_attrs;
    b->n_attrs = 0;
    return DF__FINISH_OK;
}

/* Pivot control edges: inside a context, a node with no inputs, or (in a loop) with only
   loop-invariant inputs, would run in the wrong frame or once too often (TF #26371). */
static df__finish_end df__finish_add_pivot(df_graph *g, df_node *n) {
    df_node *pivot = df__ctx_control_pivot(g->ctx);
    int gate = n->n_inputs == 0 && n->n_controls == 0;
    if (!gate && g->ctx->kind == DF__CTX_WHILE) {   /* (control inputs too: an outside one is a constant Enter) */
        gate = 1;
        for (int i = 0; i < n->n_inputs + n->n_controls && gate; i++) {
            const df_node *src = i < n->n_inputs ? n->inputs[i].node : n->controls[i - n->n_inputs];
            if (!((src->op->flags & DF__OP_ENTER) && df__attr_b(src, "is_constant", 0) &&
                  src->ctx == g->ctx)) gate = 0;
        }
    }
    if (gate && pivot && !df__node_add_control(n, pivot)) return DF__FINISH_OOM;
    return DF__FINISH_OK;
}

/* TF's shape inference: a known shape whose element count overflows int64 is an error */
static df__finish_end df__finish_check_output_sizes(df_node *n, df_status *st) {
    for (int k = 0; k < n->n_outputs; k++) {
        const df__shape *o = &n->out_shapes[k];
        int64_t count = 1;
        int over = 0;
        for (int d = 0; d < o->rank; d++) {
            if (o->dims[d] <= 0) { over = 0; break; }          /* unknown: not yet; 0: no elements */
            if (over || count > DF_MAX_ELEMENTS / o->dims[d]) over = 1;
            else count *= o->dims[d];
        }
        if (over) {
            df__fail(st, n, DF_INVALID_ARGUMENT, "Output %d of %s would have more elements than int64 can count", k, n->op->name);
            return DF__FINISH_STATUS;
        }
    }
    return DF__FINISH_OK;
}

/* Shapes: the op's shape function sees its inputs' shapes and dtypes (on the stack for up to
   eight inputs, the common case). */
static df__finish_end df__finish_infer_shapes(df_graph *g, df_node *n, df_status *st) {
    df__shape_ctx sc;
    df__shape in_shapes_small[8];
    df_dtype in_types_small[8];
    df__shape *in_shapes = in_shapes_small;
    df_dtype *in_types = in_types_small;
    if (n->n_inputs > 8) {
        in_shapes = (df__shape *)DF_MALLOC((size_t)n->n_inputs * sizeof(df__shape));
        in_types = (df_dtype *)DF_MALLOC((size_t)n->n_inputs * sizeof(df_dtype));
        if (!in_shapes || !in_types) {
            if (in_shapes != in_shapes_small) DF_FREE(in_shapes);
            if (in_types != in_types_small) DF_FREE(in_types);
            return DF__FINISH_OOM;
        }
    }
    for (int i = 0; i < n->n_inputs; i++) {
        in_shapes[i] = n->inputs[i].node->out_shapes[n->inputs[i].index];
        in_types[i] = n->inputs[i].node->out_types[n->inputs[i].index];
    }
    sc.g = g; sc.node = n; sc.in_shapes = in_shapes; sc.in_types = in_types; sc.st = st;
    df_code c = n->op->shape_fn(&sc);
    if (in_shapes != in_shapes_small) DF_FREE(in_shapes);
    if (in_types != in_types_small) DF_FREE(in_types);
    if (c != DF_OK) return DF__FINISH_STATUS;
    return df__finish_check_output_sizes(n, st);
}

/* Only a node that passed every check gets an id and its name in the index. */
static df__finish_end df__finish_add_to_graph(df_graph *g, df_node *n) {
    if (!df__grow(&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(df_node *))) return DF__FINISH_OOM;
    if (!df__strmap_put(&g->names, n->name, g->n_nodes)) return DF__FINISH_OOM;
    n->id = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    return DF__FINISH_OK;
}

df_node *df_op_finish(df_op_builder *b) {
    if (!b) return NULL;
    df_graph *g = b->g;
    df_node *n = NULL;
    df_status st;
    df_status_clear(&st);
    df__finish_end end;
    if ((end = df__finish_check_builder(b)) != DF__FINISH_OK) goto failed;
    if ((end = df__finish_check_inputs(b)) != DF__FINISH_OK) goto failed;
    if ((end = df__finish_capture(b)) != DF__FINISH_OK) goto failed;
    if ((end = df__finish_new_node(b, &n)) != DF__FINISH_OK) goto failed;
    if (df__typecheck(n, b->groups, b->n_groups, &st) != DF_OK) { end = DF__FINISH_STATUS; goto failed; }
    if (g->ctx && !b->raw && (end = df__finish_add_pivot(g, n)) != DF__FINISH_OK) goto failed;
    if (n->op->shape_fn && (end = df__finish_infer_shapes(g, n, &st)) != DF__FINISH_OK) goto failed;
    if ((end = df__finish_add_to_graph(g, n)) != DF__FINISH_OK) goto failed;
    df__builder_free(b);
    return n;
failed:
    if (end == DF__FINISH_STATUS) df__graph_error(g, st.code, "%s", st.message);
    else if (end == DF__FINISH_OOM) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory building a node");
    df__node_free(n);
    df__builder_free(b);
    return NULL;
}

df_code df_node_update_input(df_graph *g, df_node *dst, int index, df_output src) {
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (!dst || dst->graph != g || !src.node || src.node->graph != g)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_node_update_input: node is NULL or from "
                               "another graph");
    if (index < 0 || index >= dst->n_inputs)
        return df__graph_error(g, DF_OUT_OF_RANGE, "df_node_update_input: input %d out of range "
                               "(node has %d) {{node %s}}", index, dst->n_inputs, dst->name);
    if (!df__output_valid(src))
        return df__graph_error(g, DF_OUT_OF_RANGE, "df_node_update_input: '%s' has no output %d "
                               "{{node %s}}", src.node->name, src.index, dst->name);
    if (df_output_dtype(src) != df_output_dtype(dst->inputs[index]))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_node_update_input: input %d of %s is %s "
            "but '%s:%d' is %s {{node %s}}", index, dst->op->name,
            df_dtype_name(df_output_dtype(dst->inputs[index])), src.node->name, src.index,
            df_dtype_name(df_output_dtype(src)), dst->name);
    if (df__ref_arg(dst->op, index) && !src.node->out_is_ref[src.index])   /* (RefMerge's back edge) */
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_node_update_input: input %d of %s must be a "
            "variable (a ref output), got '%s:%d' of op %s {{node %s}}", index, dst->op->name, src.node->name,
            src.index, src.node->op->name, dst->name);
    dst->inputs[index] = src;
    __atomic_add_fetch(&g->edit_version, 1, __ATOMIC_RELAXED);
    return DF_OK;
}
