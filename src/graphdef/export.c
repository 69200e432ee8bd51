/* ==========================================================================================
   src/graphdef/export.c: GraphDef export                                          >>gdexport
   Writes a graph as a GraphDef TensorFlow reads: nodes in their order, attrs sorted by name,
   tensors as tensor_content, and the function library.
   ========================================================================================== */
static void df__gdw_shape(df__pbw *w, uint32_t field, int rank, const int64_t *dims) {
    df__pbw s;
    memset(&s, 0, sizeof s);
    if (rank < 0) df__pbw_uint(&s, 3, 1);
    for (int i = 0; i < rank; i++) {
        df__pbw dim;
        memset(&dim, 0, sizeof dim);
        df__pbw_uint(&dim, 1, (uint64_t)dims[i]);
        df__pbw_msg(&s, 2, &dim);
    }
    df__pbw_msg(w, field, &s);
}
static df_code df__gdw_tensor(df__pbw *w, uint32_t field, const df_tensor *t) {
    int vwt;
    df__pbw s;
    memset(&s, 0, sizeof s);
    if (t->dtype == DF_STRING) {                  /* string_val, one per element */
        df__pbw_uint(&s, 1, (uint64_t)t->dtype);
        df__gdw_shape(&s, 2, t->rank, t->dims);
        for (int64_t i = 0; i < t->n; i++) {
            size_t len = 0;
            const char *v = df_tensor_string(t, i, &len);
            if (!v) { DF_FREE(s.buf); return DF_INVALID_ARGUMENT; }
            df__pbw_bytes(&s, 8, v, len);
        }
        df__pbw_msg(w, field, &s);
        return DF_OK;
    }
    if (!df__gd_value_field(t->dtype, &vwt)) return DF_UNIMPLEMENTED;   /* resources */
    df__pbw_uint(&s, 1, (uint64_t)t->dtype);
    df__gdw_shape(&s, 2, t->rank, t->dims);
    if (t->nbytes) df__pbw_bytes(&s, 4, t->data, t->nbytes);   /* little-endian, as tensor_content is */
    df__pbw_msg(w, field, &s);
    return DF_OK;
}
static df_code df__gdw_attr(df__pbw *w, const df__attr *a) {
    df__pbw v;
    memset(&v, 0, sizeof v);
    df_code c = DF_OK;
    switch (a->kind) {
    case DF__A_INT: df__pbw_uint(&v, 3, (uint64_t)a->u.i); break;
    case DF__A_FLOAT: { uint32_t bits; memcpy(&bits, &a->u.f, 4); df__pbw_tag(&v, 4, DF__PB_I32); uint8_t b[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16), (uint8_t)(bits >> 24)}; df__pbw_raw(&v, b, 4); break; }
    case DF__A_BOOL: df__pbw_uint(&v, 5, a->u.b ? 1 : 0); break;
    case DF__A_TYPE: df__pbw_uint(&v, 6, (uint64_t)a->u.type); break;
    case DF__A_STRING:
        if (!strcmp(a->name, "_class")) {     /* back to a list of strings */
            df__pbw l;
            memset(&l, 0, sizeof l);
            const char *s = a->u.s ? a->u.s : "";
            while (*s) {
                while (*s == ',' || *s == ' ') s++;
                size_t n = 0;
                while (s[n] && s[n] != ',' && s[n] != ' ') n++;
                if (n) df__pbw_bytes(&l, 2, s, n);
                s += n;
            }
            df__pbw_msg(&v, 1, &l);
        } else df__pbw_str(&v, 2, a->u.s ? a->u.s : "");
        break;
    case DF__A_SHAPE: df__gdw_shape(&v, 7, a->u.shape.rank, a->u.shape.dims); break;
    case DF__A_FUNC: {
        df__pbw l;
        memset(&l, 0, sizeof l);
        df__pbw_str(&l, 1, a->u.s ? a->u.s : "");
        df__pbw_msg(&v, 10, &l);
        break;
    }
    case DF__A_TENSOR: c = a->u.tensor ? df__gdw_tensor(&v, 8, a->u.tensor) : DF_INVALID_ARGUMENT; break;
    case DF__A_INT_LIST: case DF__A_TYPE_LIST: {
        df__pbw l, p;
        memset(&l, 0, sizeof l);
        memset(&p, 0, sizeof p);
        int n = a->kind == DF__A_INT_LIST ? a->u.ints.n : a->u.types.n;
        for (int i = 0; i < n; i++) df__pbw_varint(&p, a->kind == DF__A_INT_LIST ? (uint64_t)a->u.ints.v[i] : (uint64_t)a->u.types.v[i]);
        if (n) df__pbw_msg(&l, a->kind == DF__A_INT_LIST ? 3 : 6, &p);
        df__pbw_msg(&v, 1, &l);
        break;
    }
    case DF__A_SHAPE_LIST: {                    /* each shape a TensorShapeProto, field 7 of the list */
        df__pbw l;
        memset(&l, 0, sizeof l);
        for (const int64_t *p = a->u.ints.v, *end = p ? p + a->u.ints.n : p; p < end; p += DF__MAX(p[0], 0) + 1)
            df__gdw_shape(&l, 7, (int)p[0], p + 1);
        df__pbw_msg(&v, 1, &l);
        break;
    }
    default: c = DF_UNIMPLEMENTED;
    }
    if (c) { DF_FREE(v.buf); return c; }
    df__pbw e;
    memset(&e, 0, sizeof e);
    df__pbw_str(&e, 1, a->name);
    df__pbw_msg(&e, 2, &v);
    df__pbw_msg(w, 5, &e);
    return DF_OK;
}
static int df__gdw_attr_cmp(const void *x, const void *y) {
    return strcmp((*(const df__attr *const *)x)->name, (*(const df__attr *const *)y)->name);
}
df_code df_graph_export_graphdef(const df_graph *g, void **data, size_t *len) {
    if (data) *data = NULL;
    if (len) *len = 0;
    if (!g || !data || !len) return DF_INVALID_ARGUMENT;
    /* the function library is not written: a graph that still calls functions (If, While,
       calls) is refused; df_graph_lower_functions makes it exportable */
    if (df__graph_has_functional(g)) return DF_UNIMPLEMENTED;
    df__pbw w;
    memset(&w, 0, sizeof w);
    df_code c = DF_OK;
    const df__attr **sorted = NULL;
    int cap_sorted = 0;
    for (int i = 0; i < g->n_nodes && !c; i++) {
        const df_node *n = g->nodes[i];
        df__pbw nd;
        memset(&nd, 0, sizeof nd);
        df__pbw_str(&nd, 1, n->name);
        df__pbw_str(&nd, 2, n->op->name);
        for (int k = 0; k < n->n_inputs; k++) {
            const df_output in = n->inputs[k];
            if (in.index) {
                size_t nl = strlen(in.node->name);
                char *s = (char *)DF_MALLOC(nl + 16);
                if (!s) { w.oom = 1; break; }
                snprintf(s, nl + 16, "%s:%d", in.node->name, in.index);
                df__pbw_str(&nd, 3, s);
                DF_FREE(s);
            } else df__pbw_str(&nd, 3, in.node->name);
        }
        for (int k = 0; k < n->n_controls; k++) {
            size_t nl = strlen(n->controls[k]->name);
            char *s = (char *)DF_MALLOC(nl + 2);
            if (!s) { w.oom = 1; break; }
            s[0] = '^';
            memcpy(s + 1, n->controls[k]->name, nl + 1);
            df__pbw_str(&nd, 3, s);
            DF_FREE(s);
        }
        if (n->device && *n->device) df__pbw_str(&nd, 4, n->device);
        if (!df__grow((void *)&sorted, &cap_sorted, DF__MAX(n->n_attrs, 1), sizeof *sorted)) { w.oom = 1; DF_FREE(nd.buf); break; }
        for (int k = 0; k < n->n_attrs; k++) sorted[k] = &n->attrs[k];
        qsort((void *)sorted, (size_t)n->n_attrs, sizeof *sorted, df__gdw_attr_cmp);
        for (int k = 0; k < n->n_attrs && !c; k++) c = df__gdw_attr(&nd, sorted[k]);
        if (c) { DF_FREE(nd.buf); break; }
        df__pbw_msg(&w, 1, &nd);
    }
    DF_FREE((void *)sorted);
    if (!c) {                                   /* versions: producer 134, min_consumer 0 */
        df__pbw v;
        memset(&v, 0, sizeof v);
        df__pbw_uint(&v, 1, 134);
        df__pbw_msg(&w, 4, &v);
    }
    if (c || w.oom) { DF_FREE(w.buf); return c ? c : DF_RESOURCE_EXHAUSTED; }
    /* the caller frees the buffer with free(): copy out of DF_MALLOC's memory when it differs */
    void *out = malloc(w.len ? w.len : 1);
    if (!out) { DF_FREE(w.buf); return DF_RESOURCE_EXHAUSTED; }
    if (w.len) memcpy(out, w.buf, w.len);
    DF_FREE(w.buf);
    *data = out;
    *len = w.len;
    return DF_OK;
}
