/* ==========================================================================================
   src/graphdef/import.c: GraphDef import                                          >>gdimport
   Maps each NodeDef onto the op of the same name, in an order where every input exists
   first; NextIteration -> Merge back edges are patched in afterwards, so a graph TensorFlow
   wrote with v1 control flow comes back as it was. A GraphDef is a program from outside:
   every name, index and attr is checked, and the first problem is the status.
   ========================================================================================== */
static df_code df__gd_import(df_graph *g, const void *data, size_t len, const df_import_options *o, df_status *st) {
    df__gd d;
    memset(&d, 0, sizeof d);
    d.st = st;
    const char *prefix = o && o->prefix && *o->prefix ? o->prefix : NULL;
    int *order = NULL, *first_out = NULL, *outs = NULL;
    df_output *ins = NULL;
    int cap_ins = 0;
    if (!data && len) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: NULL data"); goto done; }
    if (df__gd_parse(&d, data, len)) goto done;
    if (d.has_lib && df__gd_import_library(g, &d, d.lib, data, len, st)) goto done;
    /* names: unique, then every input resolved */
    for (int i = 0; i < d.n; i++) {
        df__gd_node *n = &d.nodes[i];
        char *plain = df__gd_cstr(n->name, NULL);
        if (!plain || !(n->full = df__gd_cstr(n->name, prefix))) { DF_FREE(plain); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        int dup = df__strmap_get(&d.index, plain, NULL);
        int ok = dup || df__strmap_put(&d.index, plain, i);
        DF_FREE(plain);
        if (dup) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: duplicate node name '%s' {{node %s}}", n->full, n->full); goto done; }
        if (!ok) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        if (n->n_inputs && !(n->src = (int *)DF_MALLOC((size_t)n->n_inputs * sizeof(int)))) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
    }
    int64_t n_edges = 0;
    for (int i = 0; i < d.n; i++) {
        df__gd_node *n = &d.nodes[i];
        int seen_control = 0;
        for (int k = 0; k < n->n_inputs; k++) {
            df__gd_str name;
            int index, control, src;
            if (!df__gd_input(n->inputs[k], &name, &index, &control)) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed input '%.*s' {{node %s}}",
                              (int)DF__MIN(n->inputs[k].n, (size_t)200), (const char *)n->inputs[k].p, n->full);
                goto done;
            }
            if (!control && seen_control) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: data input '%.*s' after a control input {{node %s}}",
                              (int)DF__MIN(name.n, (size_t)200), (const char *)name.p, n->full);
                goto done;
            }
            seen_control |= control;
            if (!control) n->n_data = k + 1;
            char *key = df__gd_cstr(name, NULL);
            if (!key) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
            int found = df__strmap_get(&d.index, key, &src);
            DF_FREE(key);
            if (!found) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: unknown input node '%.*s' {{node %s}}",
                              (int)DF__MIN(name.n, (size_t)200), (const char *)name.p, n->full);
                goto done;
            }
            n->src[k] = src;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (!df__gd_back_edge(&d, i, k)) { n->indeg++; n_edges++; }
    }
    /* an order in which every input is made first (Kahn; loops' back edges left out) */
    order = (int *)DF_MALLOC((size_t)DF__MAX(d.n, 1) * sizeof(int));
    first_out = (int *)DF_MALLOC((size_t)(d.n + 1) * sizeof(int));
    outs = (int *)DF_MALLOC((size_t)DF__MAX(n_edges, (int64_t)1) * sizeof(int));
    if (!order || !first_out || !outs) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
    memset(first_out, 0, (size_t)(d.n + 1) * sizeof(int));
    for (int i = 0; i < d.n; i++)
        for (int k = 0; k < d.nodes[i].n_inputs; k++)
            if (!df__gd_back_edge(&d, i, k)) first_out[d.nodes[i].src[k] + 1]++;
    for (int i = 0; i < d.n; i++) first_out[i + 1] += first_out[i];
    {
        int *fill = (int *)DF_MALLOC((size_t)DF__MAX(d.n, 1) * sizeof(int));
        if (!fill) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        memcpy(fill, first_out, (size_t)d.n * sizeof(int));
        for (int i = 0; i < d.n; i++)
            for (int k = 0; k < d.nodes[i].n_inputs; k++)
                if (!df__gd_back_edge(&d, i, k)) outs[fill[d.nodes[i].src[k]]++] = i;
        DF_FREE(fill);
    }
    int n_order = 0;
    for (int i = 0; i < d.n; i++) if (!d.nodes[i].indeg) order[n_order++] = i;
    for (int q = 0; q < n_order; q++)
        for (int e = first_out[order[q]]; e < first_out[order[q] + 1]; e++)
            if (--d.nodes[outs[e]].indeg == 0) order[n_order++] = outs[e];
    if (n_order < d.n) {
        for (int i = 0; i < d.n; i++)
            if (d.nodes[i].indeg) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: the graph has a cycle that is not a while loop's back edge "
                              "{{node %s}}", d.nodes[i].full);
                break;
            }
        goto done;
    }
    /* the nodes, in that order */
    for (int q = 0; q < n_order; q++) {
        df__gd_node *n = &d.nodes[order[q]];
        char *opname = df__gd_cstr(n->op, NULL);
        if (!opname) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        const df__opdef *op = df__op_lookup(opname);
        if (!op) {
            df_status_set(st, DF_UNIMPLEMENTED, "GraphDef: op '%s' is not registered here {{node %s}}", opname, n->full);
            DF_FREE(opname);
            goto done;
        }
        DF_FREE(opname);
        df_op_builder *b = df_op_new(g, op->name, n->full);
        if (!b) { df_status_set(st, g->status.code ? g->status.code : DF_RESOURCE_EXHAUSTED, "GraphDef: %s {{node %s}}", g->status.code ? g->status.message : "out of memory", n->full); goto done; }
        b->raw = 1;
        /* data inputs, grouped by the op's arguments */
        int n_data = n->n_data, pos = 0, placeholder = -1, back_edges = 0;
        for (int k = 0; k < n_data && placeholder < 0; k++)
            if (!df__gd_back_edge(&d, order[q], k)) placeholder = k;
        if (!df__grow(&ins, &cap_ins, DF__MAX(n_data, 1), sizeof *ins)) { df__builder_free(b); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        for (int k = 0; k < n_data; k++) {
            df__gd_str name;
            int index, control, src = n->src[k];
            df__gd_input(n->inputs[k], &name, &index, &control);
            if (df__gd_back_edge(&d, order[q], k)) {     /* patched below, once the NextIteration exists */
                back_edges = 1;
                if (placeholder < 0) { df__builder_free(b); df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: a Merge has only back edges as inputs {{node %s}}", n->full); goto done; }
                df__gd_input(n->inputs[placeholder], &name, &index, &control);
                src = n->src[placeholder];
            }
            ins[k] = df__gd_value(&d, o, name, index, src);
        }
        for (int a = 0; a < op->n_in; a++) {
            const df__argdef *arg = &op->in[a];
            int64_t count = 1;
            if (arg->number_attr[0] || arg->is_list) {
                int ok = arg->number_attr[0] ? df__gd_attr_count(n, arg->number_attr, 0, &count)
                                             : df__gd_attr_count(n, arg->type_attr, 1, &count);
                if (!ok) count = op->n_in == 1 ? n_data : -1;
                if (count < 0 || count > n_data - pos) {
                    df__builder_free(b);
                    df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: the size of list input '%s' of %s does not match "
                                  "its inputs {{node %s}}", arg->name, op->name, n->full);
                    goto done;
                }
                df_op_add_input_list(b, ins + pos, (int)count);
            } else if (pos < n_data) df_op_add_input(b, ins[pos]);
            else { count = 0; }
            pos += (int)count;
            if (count == 0 && !(arg->number_attr[0] || arg->is_list)) break;
        }
        if (pos != n_data) {
            df__builder_free(b);
            df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: op %s takes %d input%s, the NodeDef has %d {{node %s}}", op->name,
                          pos, pos == 1 ? "" : "s", n_data, n->full);
            goto done;
        }
        for (int k = n_data; k < n->n_inputs; k++) df_op_add_control_input(b, d.nodes[n->src[k]].made);
        if (n->device.n) {
            char *dev = df__gd_cstr(n->device, NULL);
            if (!dev) { df__builder_free(b); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
            df_op_set_device(b, dev);
            DF_FREE(dev);
        }
        for (int k = 0; k < n->n_attrs; k++) {
            char *key = df__gd_cstr(n->attrs[k].key, NULL);
            if (!key) { df__builder_free(b); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
            const df__attrdef *ad = df__op_attrdef(op, key);
            df_code c = !strcmp(key, "_class") ? df__gd_class(&d, n, b, n->attrs[k].value, prefix)
                      : ad ? df__gd_set_attr(&d, n, b, ad, n->attrs[k].value) : DF_OK;   /* attrs the op lacks: ignored */
            if (!ad && g->internal_names && (!strcmp(key, "_key") || !strcmp(key, "_recv_memory"))) {
                df__gd_val v;               /* (a partition shipped to a worker: its transfer keys) */
                if (df__gd_attr_value(n->attrs[k].value, &v) && v.field == 3 && v.wt == DF__PB_VARINT) df_op_set_attr_int(b, key, (int64_t)v.v);
                else c = df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: malformed %s {{node %s}}", key, n->full);
            }
            DF_FREE(key);
            if (c) { df__builder_free(b); goto done; }
        }
        if (!(n->made = df_op_finish(b))) {
            df_status_set(st, g->status.code ? g->status.code : DF_INTERNAL, "GraphDef: %s", g->status.message);
            goto done;
        }
        /* TF (ShapeRefiner): a back edge's shape is unknown when its Merge is made, so the Merge's
           is too; the forward input's would be wrong for a variable whose shape changes */
        if (back_edges) n->made->out_shapes[0] = df__shape_unknown();
    }
    /* the loops' back edges */
    for (int i = 0; i < d.n; i++) {
        df__gd_node *n = &d.nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (!df__gd_back_edge(&d, i, k)) continue;
            df__gd_str name;
            int index, control;
            df__gd_input(n->inputs[k], &name, &index, &control);
            if (df_node_update_input(g, n->made, k, df__gd_value(&d, o, name, index, n->src[k]))) {
                df_status_set(st, g->status.code, "GraphDef: %s", g->status.message);
                goto done;
            }
        }
    }
    df_status_clear(st);
done:
    DF_FREE(order); DF_FREE(first_out); DF_FREE(outs); DF_FREE(ins);
    df__gd_free(&d);
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
