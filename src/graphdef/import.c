/* ==========================================================================================
   src/graphdef/import.c: GraphDef import                                          >>gdimport
   Maps each NodeDef onto the op of the same name, in an order where every input exists
   first; NextIteration -> Merge back edges are patched in afterwards, so a graph TensorFlow
   wrote with v1 control flow comes back as it was. A GraphDef is a program from outside:
   every name, index and attr is checked, and the first problem is the status.
   ========================================================================================== */
/* What the import's phases share; whichever phase stops, df__gd_import frees it all once. */
typedef struct df__gd_imp {
    df_graph *g;
    const df_import_options *o;
    const char *prefix;              /* NULL: none */
    df_status *st;
    df__gd d;
    int64_t n_edges;                 /* inputs that are not loops' back edges */
    int *order, n_order;             /* every node after the nodes of its inputs */
    int *first_out, *outs;           /* per node, the nodes its outputs feed (CSR) */
    df_output *ins;                  /* one node's data inputs, reused from node to node */
    int cap_ins;
} df__gd_imp;

/* Names must be unique before any input can be resolved by name; each node gets its full
   (prefixed) name and room for its inputs' sources. */
static df_code df__gd_import_names(df__gd_imp *m) {
    df__gd *d = &m->d;
    df_status *st = m->st;
    for (int i = 0; i < d->n; i++) {
        df__gd_node *n = &d->nodes[i];
        char *plain = df__gd_cstr(n->name, NULL);
        if (!plain || !(n->full = df__gd_cstr(n->name, m->prefix))) { DF_FREE(plain); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); }
        int dup = df__strmap_get(&d->index, plain, NULL);
        int ok = dup || df__strmap_put(&d->index, plain, i);
        DF_FREE(plain);
        if (dup) return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: duplicate node name '%s' {{node %s}}", n->full, n->full);
        if (!ok) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
        if (n->n_inputs && !(n->src = (int *)DF_MALLOC((size_t)n->n_inputs * sizeof(int)))) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
    }
    return DF_OK;
}

/* Every input must name a node of the GraphDef, data inputs before control ones (TensorFlow's
   rule); counts each node's forward inputs for the ordering. */
static df_code df__gd_import_inputs(df__gd_imp *m) {
    df__gd *d = &m->d;
    df_status *st = m->st;
    for (int i = 0; i < d->n; i++) {
        df__gd_node *n = &d->nodes[i];
        int seen_control = 0;
        for (int k = 0; k < n->n_inputs; k++) {
            df__gd_str name;
            int index, control, src;
            if (!df__gd_input(n->inputs[k], &name, &index, &control))
                return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed input '%.*s' {{node %s}}",
                                     (int)DF__MIN(n->inputs[k].n, (size_t)200), (const char *)n->inputs[k].p, n->full);
            if (!control && seen_control)
                return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: data input '%.*s' after a control input {{node %s}}",
                                     (int)DF__MIN(name.n, (size_t)200), (const char *)name.p, n->full);
            seen_control |= control;
            if (!control) n->n_data = k + 1;
            char *key = df__gd_cstr(name, NULL);
            if (!key) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            int found = df__strmap_get(&d->index, key, &src);
            DF_FREE(key);
            if (!found)
                return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: unknown input node '%.*s' {{node %s}}",
                                     (int)DF__MIN(name.n, (size_t)200), (const char *)name.p, n->full);
            n->src[k] = src;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (!df__gd_back_edge(d, i, k)) { n->indeg++; m->n_edges++; }
    }
    return DF_OK;
}

/* An order in which every input is made first (Kahn; loops' back edges left out); a node left
   over sits on a cycle that no NextIteration explains. */
static df_code df__gd_import_order(df__gd_imp *m) {
    df__gd *d = &m->d;
    df_status *st = m->st;
    int *order = m->order = (int *)DF_MALLOC((size_t)DF__MAX(d->n, 1) * sizeof(int));
    int *first_out = m->first_out = (int *)DF_MALLOC((size_t)(d->n + 1) * sizeof(int));
    int *outs = m->outs = (int *)DF_MALLOC((size_t)DF__MAX(m->n_edges, (int64_t)1) * sizeof(int));
    if (!order || !first_out || !outs) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
    memset(first_out, 0, (size_t)(d->n + 1) * sizeof(int));
    for (int i = 0; i < d->n; i++)
        for (int k = 0; k < d->nodes[i].n_inputs; k++)
            if (!df__gd_back_edge(d, i, k)) first_out[d->nodes[i].src[k] + 1]++;
    for (int i = 0; i < d->n; i++) first_out[i + 1] += first_out[i];
    int *fill = (int *)DF_MALLOC((size_t)DF__MAX(d->n, 1) * sizeof(int));
    if (!fill) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
    memcpy(fill, first_out, (size_t)d->n * sizeof(int));
    for (int i = 0; i < d->n; i++)
        for (int k = 0; k < d->nodes[i].n_inputs; k++)
            if (!df__gd_back_edge(d, i, k)) outs[fill[d->nodes[i].src[k]]++] = i;
    DF_FREE(fill);
    int n_order = 0;
    for (int i = 0; i < d->n; i++) if (!d->nodes[i].indeg) order[n_order++] = i;
    for (int q = 0; q < n_order; q++)
        for (int e = first_out[order[q]]; e < first_out[order[q] + 1]; e++)
            if (--d->nodes[outs[e]].indeg == 0) order[n_order++] = outs[e];
    m->n_order = n_order;
    if (n_order == d->n) return DF_OK;
    for (int i = 0; i < d->n; i++)
        if (d->nodes[i].indeg)
            return df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: the graph has a cycle that is not a while loop's back edge "
                                 "{{node %s}}", d->nodes[i].full);
    return DF_INVALID_ARGUMENT;      /* not reached: a node left out of the order has an input left */
}

/* The node's data inputs into m->ins, in NodeDef order; a back edge stands in as the Merge's
   first forward input until the NextIteration exists (df__gd_import_back_edges). */
static df_code df__gd_import_node_inputs(df__gd_imp *m, int id, int *back_edges) {
    df__gd_node *n = &m->d.nodes[id];
    int n_data = n->n_data, placeholder = -1;
    for (int k = 0; k < n_data && placeholder < 0; k++)
        if (!df__gd_back_edge(&m->d, id, k)) placeholder = k;
    if (!df__grow(&m->ins, &m->cap_ins, DF__MAX(n_data, 1), sizeof *m->ins)) return df_status_set(m->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
    for (int k = 0; k < n_data; k++) {
        df__gd_str name;
        int index, control, src = n->src[k];
        df__gd_input(n->inputs[k], &name, &index, &control);
        if (df__gd_back_edge(&m->d, id, k)) {
            *back_edges = 1;
            if (placeholder < 0) return df_status_set(m->st, DF_INVALID_ARGUMENT, "GraphDef: a Merge has only back edges as inputs {{node %s}}", n->full);
            df__gd_input(n->inputs[placeholder], &name, &index, &control);
            src = n->src[placeholder];
        }
        m->ins[k] = df__gd_value(&m->d, m->o, name, index, src);
    }
    return DF_OK;
}

/* A NodeDef lists its data inputs flat; the op's arguments take them in turn, a list argument
   as many as its number or type-list attr says, and every input must be taken. */
static df_code df__gd_import_node_args(df__gd_imp *m, const df__gd_node *n, const df__opdef *op, df_op_builder *b) {
    int n_data = n->n_data, pos = 0;
    for (int a = 0; a < op->n_in; a++) {
        const df__argdef *arg = &op->in[a];
        int64_t count = 1;
        if (arg->number_attr[0] || arg->is_list) {
            int ok = arg->number_attr[0] ? df__gd_attr_count(n, arg->number_attr, 0, &count)
                                         : df__gd_attr_count(n, arg->type_attr, 1, &count);
            if (!ok) count = op->n_in == 1 ? n_data : -1;
            if (count < 0 || count > n_data - pos)
                return df_status_set(m->st, DF_INVALID_ARGUMENT, "GraphDef: the size of list input '%s' of %s does not match "
                                     "its inputs {{node %s}}", arg->name, op->name, n->full);
            df_op_add_input_list(b, m->ins + pos, (int)count);
        } else if (pos < n_data) df_op_add_input(b, m->ins[pos]);
        else { count = 0; }
        pos += (int)count;
        if (count == 0 && !(arg->number_attr[0] || arg->is_list)) break;
    }
    if (pos != n_data)
        return df_status_set(m->st, DF_INVALID_ARGUMENT, "GraphDef: op %s takes %d input%s, the NodeDef has %d {{node %s}}", op->name,
                             pos, pos == 1 ? "" : "s", n_data, n->full);
    return DF_OK;
}

/* The device and the attrs the op declares are checked against it; others are dropped, save
   _class and, in a partition shipped to a worker, its transfer keys. */
static df_code df__gd_import_node_attrs(df__gd_imp *m, df__gd_node *n, const df__opdef *op, df_op_builder *b) {
    df_status *st = m->st;
    if (n->device.n) {
        char *dev = df__gd_cstr(n->device, NULL);
        if (!dev) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
        df_op_set_device(b, dev);
        DF_FREE(dev);
    }
    for (int k = 0; k < n->n_attrs; k++) {
        char *key = df__gd_cstr(n->attrs[k].key, NULL);
        if (!key) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
        const df__attrdef *ad = df__op_attrdef(op, key);
        df_code c = !strcmp(key, "_class") ? df__gd_class(&m->d, n, b, n->attrs[k].value, m->prefix)
                  : ad ? df__gd_set_attr(&m->d, n, b, ad, n->attrs[k].value) : DF_OK;   /* attrs the op lacks: ignored */
        if (!ad && m->g->internal_names && (!strcmp(key, "_key") || !strcmp(key, "_recv_memory"))) {
            df__gd_val v;               /* (a partition shipped to a worker: its transfer keys) */
            if (df__gd_attr_value(n->attrs[k].value, &v) && v.field == 3 && v.wt == DF__PB_VARINT) df_op_set_attr_int(b, key, (int64_t)v.v);
            else c = df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed %s {{node %s}}", key, n->full);
        }
        if (!ad && m->g->internal_names && !strcmp(key, "_device_memory")) {
            df__gd_val v;               /* (a feed of a partition on a worker's GPU: copied to the device) */
            if (df__gd_attr_value(n->attrs[k].value, &v) && v.field == 5 && v.wt == DF__PB_VARINT) df_op_set_attr_bool(b, key, v.v != 0);
            else c = df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed %s {{node %s}}", key, n->full);
        }
        DF_FREE(key);
        if (c) return c;
    }
    return DF_OK;
}

/* One NodeDef becomes a node of its registered op; the nodes of its inputs exist already. */
static df_code df__gd_import_node(df__gd_imp *m, int id) {
    df__gd_node *n = &m->d.nodes[id];
    df_graph *g = m->g;
    df_status *st = m->st;
    char *opname = df__gd_cstr(n->op, NULL);
    if (!opname) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
    const df__opdef *op = df__op_lookup(opname);
    if (!op) {
        df_code c = df_status_set(st, DF_UNIMPLEMENTED, "GraphDef: op '%s' is not registered here {{node %s}}", opname, n->full);
        DF_FREE(opname);
        return c;
    }
    DF_FREE(opname);
    df_op_builder *b = df_op_new(g, op->name, n->full);
    if (!b) return df_status_set(st, g->status.code ? g->status.code : DF_RESOURCE_EXHAUSTED, "GraphDef: %s {{node %s}}", g->status.code ? g->status.message : "out of memory", n->full);
    b->raw = 1;
    int back_edges = 0;
    df_code c = df__gd_import_node_inputs(m, id, &back_edges);
    if (!c) c = df__gd_import_node_args(m, n, op, b);
    if (!c) {
        for (int k = n->n_data; k < n->n_inputs; k++) df_op_add_control_input(b, m->d.nodes[n->src[k]].made);
        c = df__gd_import_node_attrs(m, n, op, b);
    }
    if (c) { df__builder_free(b); return c; }
    if (!(n->made = df_op_finish(b)))
        return df_status_set(st, g->status.code ? g->status.code : DF_INTERNAL, "GraphDef: %s", g->status.message);
    /* TF (ShapeRefiner): a back edge's shape is unknown when its Merge is made, so the Merge's
       is too; the forward input's would be wrong for a variable whose shape changes */
    if (back_edges) n->made->out_shapes[0] = df__shape_unknown();
    return DF_OK;
}

/* The loops' back edges, now that every NextIteration exists. */
static df_code df__gd_import_back_edges(df__gd_imp *m) {
    for (int i = 0; i < m->d.n; i++) {
        df__gd_node *n = &m->d.nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (!df__gd_back_edge(&m->d, i, k)) continue;
            df__gd_str name;
            int index, control;
            df__gd_input(n->inputs[k], &name, &index, &control);
            if (df_node_update_input(m->g, n->made, k, df__gd_value(&m->d, m->o, name, index, n->src[k])))
                return df_status_set(m->st, m->g->status.code, "GraphDef: %s", m->g->status.message);
        }
    }
    return DF_OK;
}

DF_PRIVATE df_code df__gd_import(df_graph *g, const void *data, size_t len, const df_import_options *o, df_status *st) {
    df__gd_imp m;
    memset(&m, 0, sizeof m);
    m.g = g;
    m.o = o;
    m.st = m.d.st = st;
    m.prefix = o && o->prefix && *o->prefix ? o->prefix : NULL;
    if (!data && len) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: NULL data"); goto done; }
    if (df__gd_parse(&m.d, data, len)) goto done;
    if (m.d.has_lib && df__gd_import_library(g, &m.d, m.d.lib, data, len, st)) goto done;
    if (df__gd_import_names(&m) || df__gd_import_inputs(&m) || df__gd_import_order(&m)) goto done;
    for (int q = 0; q < m.n_order; q++)
        if (df__gd_import_node(&m, m.order[q])) goto done;
    if (df__gd_import_back_edges(&m)) goto done;
    df_status_clear(st);
done:
    DF_FREE(m.order); DF_FREE(m.first_out); DF_FREE(m.outs); DF_FREE(m.ins);
    df__gd_free(&m.d);
    return st->code;
}

df_graph *df_graph_import_graphdef(const void *data, size_t len, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_graph *g = df_graph_new();
    if (!g) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    if (df__gd_import(g, data, len, NULL, st)) { df_graph_free(g); return NULL; }
    return g;
}
df_code df_graph_import_graphdef_into(df_graph *g, const void *data, size_t len, const df_import_options *o, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "df_graph_import_graphdef_into: NULL graph");
    if (g->status.code) return df_status_set(st, g->status.code, "The graph already has an error: %s", g->status.message);
    if (o && o->n_input_map < 0) return df_status_set(st, DF_INVALID_ARGUMENT, "df_import_options: negative n_input_map");
    if (o && o->n_input_map > 0 && (!o->input_map_names || !o->input_map_values))
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_import_options: input_map_names and input_map_values must both be set");
    for (int m = 0; o && m < o->n_input_map; m++) {
        if (!o->input_map_names[m] || !df__output_valid(o->input_map_values[m]) || o->input_map_values[m].node->graph != g)
            return df_status_set(st, DF_INVALID_ARGUMENT, "df_import_options: input_map entry %d is not a name and an "
                                 "output of this graph", m);
    }
    /* A trial import into a scratch graph first (mapped inputs become placeholders of their
       types), so that a GraphDef that fails leaves g as it was. */
    df_graph *t = df_graph_new();
    df_output *mapped = o && o->n_input_map ? (df_output *)DF_MALLOC((size_t)o->n_input_map * sizeof(df_output)) : NULL;
    if (!t || (o && o->n_input_map && !mapped)) { df_graph_free(t); DF_FREE(mapped); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    df_import_options to;
    memset(&to, 0, sizeof to);
    if (o) {
        to = *o;
        for (int m = 0; m < o->n_input_map; m++) {
            char nm[32];
            snprintf(nm, sizeof nm, "import.input_map.%d", m);
            mapped[m] = df_placeholder(t, nm, df_output_dtype(o->input_map_values[m]), -1, NULL);
        }
        to.input_map_values = mapped;
    }
    df_code c = df__gd_import(t, data, len, o ? &to : NULL, st);
    for (int m = 0; !c && o && m < o->n_input_map; m++) {     /* each mapped tensor exists in the GraphDef */
        const char *k = o->input_map_names[m], *colon = strrchr(k, ':');
        char nm[512];
        snprintf(nm, sizeof nm, "%s%s%.*s", o->prefix && *o->prefix ? o->prefix : "", o->prefix && *o->prefix ? "/" : "",
                 (int)(colon ? (size_t)(colon - k) : strlen(k)), k);
        df_node *x = df_graph_find(t, nm);
        int index = colon ? atoi(colon + 1) : 0;
        if (!x || index < 0 || index >= x->n_outputs)
            c = df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: input_map names '%s', which is not a tensor of the GraphDef", k);
    }
    for (int i = 0; !c && i < t->n_nodes; i++)
        if (strncmp(t->nodes[i]->name, "import.input_map.", 17) && df_graph_find(g, t->nodes[i]->name))
            c = df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s' already exists in the graph (use a prefix) {{node %s}}",
                              t->nodes[i]->name, t->nodes[i]->name);
    df_graph_free(t);
    DF_FREE(mapped);
    if (c) return c;
    return df__gd_import(g, data, len, o, st);
}
