/* ==========================================================================================
   src/graphdef/parse.c: GraphDef parsing                                          >>graphdef
   TensorFlow GraphDef import and export.
   GraphDef: node = 1 (NodeDef), versions = 4; NodeDef: name 1, op 2, input 3, device 4, attr
   5
   (map entries: key 1, value 2); AttrValue: list 1, s 2, i 3, f 4, b 5, type 6, shape 7,
   tensor 8; ListValue: s 2, i 3, f 4, b 5, type 6; TensorShapeProto: dim 2 (size 1),
   unknown_rank 3; TensorProto: dtype 1, tensor_shape 2, tensor_content 4, then the typed
   value fields. Import maps each NodeDef onto the op of the same name, in an order where
   every
   input exists first (NextIteration -> Merge edges, the loops' back edges, are patched in
   afterwards), so a graph TensorFlow wrote with v1 control flow comes back as it was.
   ========================================================================================== */
enum { DF__GD_MAX_TENSOR_FILL = 1 << 28 };   /* bytes a short TensorProto may be expanded to */

static df_code df__gd_bad(df__gd *d, const char *what, const df__gd_node *n) {
    if (n && n->name.n)
        return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s {{node %.*s}}", what, (int)DF__MIN(n->name.n, (size_t)200),
                             (const char *)n->name.p);
    return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s", what);
}
/* A string field: no NUL bytes inside (names, ops, devices become C strings). */
DF_PRIVATE int df__gd_string(df__pb *r, df__gd_str *s) {
    df__pb sub;
    if (!df__pb_sub(r, &sub)) return 0;
    s->p = sub.p;
    s->n = (size_t)(sub.end - sub.p);
    return memchr(s->p, 0, s->n) == NULL;
}
DF_PRIVATE char *df__gd_cstr(df__gd_str s, const char *prefix) {
    size_t pl = prefix && *prefix ? strlen(prefix) + 1 : 0;
    char *c = (char *)DF_MALLOC(pl + s.n + 1);
    if (!c) return NULL;
    if (pl) { memcpy(c, prefix, pl - 1); c[pl - 1] = '/'; }
    if (s.n) memcpy(c + pl, s.p, s.n);
    c[pl + s.n] = 0;
    return c;
}
static int df__gd_eq(df__gd_str s, const char *c) { return strlen(c) == s.n && !memcmp(s.p, c, s.n); }

DF_PRIVATE df_code df__gd_parse_node(df__gd *d, df__pb *r, df__gd_node *n) {
    uint32_t f;
    int wt, bad;
    while (df__pb_next(r, &f, &wt, &bad)) {
        int ok = 1;
        if ((f == 1 || f == 2 || f == 3 || f == 4) && wt != DF__PB_LEN)
            return df__gd_bad(d, "a NodeDef string field has the wrong wire type", n);
        if (f == 1) ok = df__gd_string(r, &n->name);
        else if (f == 2) ok = df__gd_string(r, &n->op);
        else if (f == 4) ok = df__gd_string(r, &n->device);
        else if (f == 3) {
            if (!df__grow(&n->inputs, &n->cap_inputs, n->n_inputs + 1, sizeof *n->inputs))
                return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            ok = df__gd_string(r, &n->inputs[n->n_inputs++]);
        } else if (f == 5) {
            if (wt != DF__PB_LEN) return df__gd_bad(d, "an attr entry has the wrong wire type", n);
            df__pb e;
            if (!df__pb_sub(r, &e)) return df__gd_bad(d, "truncated attr entry", n);
            df__gd_attr a;
            memset(&a, 0, sizeof a);
            a.value.p = a.value.end = e.p;
            uint32_t ef;
            int ewt, ebad;
            while (df__pb_next(&e, &ef, &ewt, &ebad)) {
                if (ef == 1 && ewt == DF__PB_LEN) { if (!df__gd_string(&e, &a.key)) return df__gd_bad(d, "bad attr name", n); }
                else if (ef == 2 && ewt == DF__PB_LEN) { if (!df__pb_sub(&e, &a.value)) return df__gd_bad(d, "truncated attr value", n); }
                else if (ef == 1 || ef == 2) return df__gd_bad(d, "an attr entry field has the wrong wire type", n);
                else if (!df__pb_skip(&e, ewt)) return df__gd_bad(d, "truncated attr entry", n);
            }
            if (ebad) return df__gd_bad(d, "malformed attr entry", n);
            if (!a.key.n) return df__gd_bad(d, "an attr has an empty name", n);
            int i = 0;              /* a repeated key: the last one wins, as in a protobuf map */
            while (i < n->n_attrs && !(n->attrs[i].key.n == a.key.n && !memcmp(n->attrs[i].key.p, a.key.p, a.key.n))) i++;
            if (i == n->n_attrs) {
                if (!df__grow(&n->attrs, &n->cap_attrs, n->n_attrs + 1, sizeof *n->attrs))
                    return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
                n->n_attrs++;
            }
            n->attrs[i] = a;
        } else ok = df__pb_skip(r, wt);
        if (!ok) return df__gd_bad(d, "truncated or malformed NodeDef field (or a NUL byte in a name)", n);
    }
    if (bad) return df__gd_bad(d, "malformed NodeDef (bad tag or wire type)", n);
    if (!n->name.n) return df__gd_bad(d, "a NodeDef has no name", NULL);
    if (!n->op.n) return df__gd_bad(d, "a NodeDef has no op", n);
    return DF_OK;
}
DF_PRIVATE df_code df__gd_parse(df__gd *d, const void *data, size_t len) {
    df__pb r = {(const uint8_t *)data, (const uint8_t *)data + len};
    uint32_t f;
    int wt, bad;
    {   /* the nodes counted before any is parsed: claiming more than a graph may hold costs nothing */
        df__pb scan = r;
        int64_t count = 0;
        while (df__pb_next(&scan, &f, &wt, &bad) && df__pb_skip(&scan, wt)) count += f == 1;
        if (count > DF_MAX_GRAPH_NODES)
            return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: %lld nodes, more than a graph may have "
                                 "(DF_MAX_GRAPH_NODES, %d)", (long long)count, DF_MAX_GRAPH_NODES);
    }
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (f == 1) {
            if (wt != DF__PB_LEN) return df__gd_bad(d, "GraphDef.node has the wrong wire type", NULL);
            df__pb sub;
            if (!df__pb_sub(&r, &sub)) return df__gd_bad(d, "truncated NodeDef (a length runs past the end of the data)", NULL);
            if (d->n >= DF_MAX_GRAPH_NODES) return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: more than %d nodes", DF_MAX_GRAPH_NODES);
            if (!df__grow(&d->nodes, &d->cap, d->n + 1, sizeof *d->nodes))
                return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            df__gd_node *n = &d->nodes[d->n++];
            memset(n, 0, sizeof *n);
            if (df__gd_parse_node(d, &sub, n)) return d->st->code;
        } else if (f == 2 && wt == DF__PB_LEN) {
            if (!df__pb_sub(&r, &d->lib)) return df__gd_bad(d, "truncated function library", NULL);
            d->has_lib = 1;
        } else if (!df__pb_skip(&r, wt)) return df__gd_bad(d, "truncated or malformed GraphDef field", NULL);
    }
    if (bad) return df__gd_bad(d, "malformed GraphDef (bad tag or wire type): not a binary GraphDef?", NULL);
    return DF_OK;
}
DF_PRIVATE void df__gd_free(df__gd *d) {
    for (int i = 0; i < d->n; i++) {
        DF_FREE(d->nodes[i].inputs); DF_FREE(d->nodes[i].attrs); DF_FREE(d->nodes[i].full); DF_FREE(d->nodes[i].src);
    }
    DF_FREE(d->nodes);
    df__strmap_free(&d->index);
}

/* An input string: "^name" (control), "name:k" or "name". */
DF_PRIVATE int df__gd_input(df__gd_str s, df__gd_str *name, int *index, int *control) {
    *control = s.n > 0 && s.p[0] == '^';
    name->p = s.p + *control;
    name->n = s.n - (size_t)*control;
    *index = 0;
    const uint8_t *colon = NULL;
    for (size_t i = 0; i < name->n; i++) if (name->p[i] == ':') colon = name->p + i;
    if (colon && !*control) {
        size_t digits = (size_t)(name->p + name->n - colon - 1);
        if (digits == 0 || digits > 9) return 0;
        int64_t v = 0;
        for (size_t i = 1; i <= digits; i++) {
            if (colon[i] < '0' || colon[i] > '9') return 0;
            v = v * 10 + (colon[i] - '0');
        }
        *index = (int)v;
        name->n = (size_t)(colon - name->p);
    }
    return name->n > 0;
}

/* ---- AttrValue and TensorProto decoding ---- */
/* The AttrValue's one set field (the last one written wins, as for a protobuf oneof). */
DF_PRIVATE int df__gd_attr_value(df__pb r, df__gd_val *out) {
    uint32_t f;
    int wt, bad;
    memset(out, 0, sizeof *out);
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (f < 1 || f > 10) { if (!df__pb_skip(&r, wt)) return 0; continue; }
        df__gd_val v;
        memset(&v, 0, sizeof v);
        v.field = f;
        v.wt = wt;
        if (wt == DF__PB_LEN) { if (!df__pb_sub(&r, &v.sub)) return 0; }
        else if (wt == DF__PB_VARINT) { if (!df__pb_varint(&r, &v.v)) return 0; }
        else if (!df__pb_fixed(&r, wt == DF__PB_I64 ? 8 : 4, &v.v)) return 0;
        *out = v;
    }
    return !bad;
}
static const char *df__gd_field_kind(uint32_t f) {
    static const char *k[] = {"nothing", "list", "string", "int", "float", "bool", "type", "shape", "tensor",
                               "placeholder", "func"};
    return f <= 10 ? k[f] : "unknown";
}
static int df__gd_shape(df__pb r, int *rank, int64_t *dims, int depth) {
    uint32_t f;
    int wt, bad, unknown = 0;
    *rank = 0;
    if (depth > DF__PB_MAX_DEPTH) return 0;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (f == 2 && wt == DF__PB_LEN) {
            df__pb dr;
            if (!df__pb_sub(&r, &dr) || *rank >= DF_MAX_RANK) return 0;
            int64_t size = 0;
            uint32_t df_;
            int dwt, dbad;
            while (df__pb_next(&dr, &df_, &dwt, &dbad)) {
                uint64_t v;
                if (df_ == 1 && dwt == DF__PB_VARINT) { if (!df__pb_varint(&dr, &v)) return 0; size = (int64_t)v; }
                else if (df_ == 1) return 0;
                else if (!df__pb_skip(&dr, dwt)) return 0;
            }
            if (dbad || size < -1) return 0;
            dims[(*rank)++] = size;
        } else if (f == 3 && wt == DF__PB_VARINT) {
            uint64_t v;
            if (!df__pb_varint(&r, &v)) return 0;
            unknown = v != 0;
        } else if (f == 2 || f == 3) return 0;
        else if (!df__pb_skip(&r, wt)) return 0;
    }
    if (bad) return 0;
    if (unknown) *rank = -1;
    return 1;
}
typedef struct df__gd_fill { df_tensor *t; int64_t i, cap; int wide; } df__gd_fill;
/* Stores value v (raw bits from the wire) as element i of the tensor, converting by dtype. */
static int df__gd_put(void *user, uint64_t v) {
    df__gd_fill *f = (df__gd_fill *)user;
    df_tensor *t = f->t;
    if (f->i >= f->cap) { f->i++; return 1; }          /* counted: too many is an error later */
    int64_t i = f->i++;
    void *p = t->data;
    switch (t->dtype) {
    case DF_FLOAT: { uint32_t b = (uint32_t)v; memcpy((float *)p + i, &b, 4); break; }
    case DF_DOUBLE: memcpy((double *)p + i, &v, 8); break;
    case DF_COMPLEX64: { uint32_t b = (uint32_t)v; memcpy((float *)p + i, &b, 4); break; }
    case DF_COMPLEX128: memcpy((double *)p + i, &v, 8); break;
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case DF_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case DF_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case DF_UINT16: case DF_HALF: case DF_BFLOAT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case DF_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case DF_INT64: case DF_UINT64: ((uint64_t *)p)[i] = v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: return 0;
    }
    return 1;
}
/* The typed value field of each dtype, and the wire type of its elements. */
DF_PRIVATE int df__gd_value_field(df_dtype t, int *wt) {
    *wt = DF__PB_VARINT;
    switch (t) {
    case DF_FLOAT: *wt = DF__PB_I32; return 5;
    case DF_DOUBLE: *wt = DF__PB_I64; return 6;
    case DF_COMPLEX64: *wt = DF__PB_I32; return 9;
    case DF_COMPLEX128: *wt = DF__PB_I64; return 12;
    case DF_INT32: case DF_INT16: case DF_INT8: case DF_UINT8: case DF_UINT16: return 7;
    case DF_INT64: return 10;
    case DF_BOOL: return 11;
    case DF_HALF: case DF_BFLOAT16: return 13;
    case DF_UINT32: return 16;
    case DF_UINT64: return 17;
    default: return 0;
    }
}
static df_tensor *df__gd_tensor(df__pb r, const char *where, df_status *st) {
    uint32_t f;
    int wt, bad, rank = -2;
    int64_t dims[DF_MAX_RANK];
    uint64_t dtype = 0;
    df__pb content = {NULL, NULL};
    int has_content = 0;
    df__pb scan = r;
    while (df__pb_next(&scan, &f, &wt, &bad)) {
        if (f == 1 && wt == DF__PB_VARINT) { if (!df__pb_varint(&scan, &dtype)) goto malformed; }
        else if (f == 2 && wt == DF__PB_LEN) {
            df__pb s;
            if (!df__pb_sub(&scan, &s) || !df__gd_shape(s, &rank, dims, 1)) goto malformed;
        } else if (f == 4 && wt == DF__PB_LEN) { if (!df__pb_sub(&scan, &content)) goto malformed; has_content = 1; }
        else if (f == 1 || f == 2 || f == 4) goto malformed;
        else if (!df__pb_skip(&scan, wt)) goto malformed;
    }
    if (bad) goto malformed;
    if (rank == -2) rank = 0;                       /* no shape: a scalar */
    if (rank < 0) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a tensor value has an unknown rank", where); return NULL; }
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a tensor value has an unknown dimension", where); return NULL; }
    df_dtype t = (df_dtype)dtype;
    if (t == DF_STRING) {                        /* string_val (8): one per element, or one for all */
        int64_t n = 1, count = 0, total = 0;
        for (int i = 0; i < rank; i++) {
            if (dims[i] && n > (int64_t)(1 << 24) / dims[i]) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: too many strings", where); return NULL; }
            n *= dims[i];
        }
        scan = r;
        while (df__pb_next(&scan, &f, &wt, &bad)) {
            df__pb sv;
            if (f == 8 && wt == DF__PB_LEN) { if (!df__pb_sub(&scan, &sv)) goto malformed; count++; total += sv.end - sv.p; }
            else if (!df__pb_skip(&scan, wt)) goto malformed;
        }
        if (bad || (count != n && !(count == 1 && n > 0)) || (count == 0 && n > 0) || total > ((int64_t)64 << 20)) {
            df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: %lld strings for a tensor of %lld, or over 64 MiB", where, (long long)count, (long long)n);
            return NULL;
        }
        char **v = (char **)DF_MALLOC(((size_t)n + 1) * sizeof(char *));
        if (!v) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); return NULL; }
        memset(v, 0, ((size_t)n + 1) * sizeof(char *));
        int64_t k = 0, ok = 1;
        scan = r;
        while (ok && df__pb_next(&scan, &f, &wt, &bad)) {
            df__pb sv;
            if (f == 8 && wt == DF__PB_LEN) {
                if (!df__pb_sub(&scan, &sv)) { ok = 0; break; }
                size_t len = (size_t)(sv.end - sv.p);
                if (memchr(sv.p, 0, len) || !(v[k] = (char *)DF_MALLOC(len + 1))) { ok = 0; break; }
                memcpy(v[k], sv.p, len);
                v[k++][len] = '\0';
            } else if (!df__pb_skip(&scan, wt)) ok = 0;
        }
        for (; ok && k < n; k++) v[k] = v[0];       /* (one value for all: shared, freed once) */
        df_tensor *out = ok ? df_tensor_new_strings(rank, dims, (const char *const *)v, st) : NULL;
        for (int64_t i = 0; i < n && i < (count == n ? n : 1); i++) DF_FREE(v[i]);
        DF_FREE(v);
        if (!ok) df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a malformed string, or one with a NUL byte", where);
        return out;
    }
    int vwt, vfield = dtype < 64 ? df__gd_value_field(t, &vwt) : 0;
    if (!vfield && (dtype == 0 || dtype >= 64)) {     /* DT_INVALID, a reference type (101..) or no dtype at all */
        df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a tensor value of dtype %llu (a reference or invalid type)", where,
                      (unsigned long long)dtype);
        return NULL;
    }
    if (!vfield) {
        df_status_set(st, DF_UNIMPLEMENTED, "GraphDef: %s: tensor values of dtype %llu (%s) are not supported", where,
                      (unsigned long long)dtype, df_dtype_name(t));
        return NULL;
    }
    /* the size, checked before anything is allocated */
    size_t es = df_dtype_size(t);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] && n > INT64_MAX / dims[i]) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: tensor size overflows", where); return NULL; }
        n *= dims[i];
    }
    if (n > (int64_t)(SIZE_MAX / 2 / es)) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: tensor size overflows", where); return NULL; }
    size_t nbytes = (size_t)n * es;
    if (has_content && (size_t)(content.end - content.p) != nbytes) {
        df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: tensor_content has %zu bytes; a %s tensor of %lld elements needs %zu",
                      where, (size_t)(content.end - content.p), df_dtype_name(t), (long long)n, nbytes);
        return NULL;
    }
    if (!has_content && nbytes > DF__GD_MAX_TENSOR_FILL) {
        df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a tensor of %zu bytes given by repeated values is over the "
                      "limit of %d bytes", where, nbytes, DF__GD_MAX_TENSOR_FILL);
        return NULL;
    }
    df_tensor *out = df__tensor_alloc(NULL, t, rank, dims, st);
    if (!out) return NULL;
    if (has_content) {
        if (nbytes) memcpy(out->data, content.p, nbytes);
        if (t == DF_BOOL) for (size_t i = 0; i < nbytes; i++) ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
        return out;
    }
    memset(out->data, 0, nbytes);
    int lanes = t == DF_COMPLEX64 || t == DF_COMPLEX128 ? 2 : 1;
    df__gd_fill fill = {out, 0, n * lanes, 0};
    scan = r;
    while (df__pb_next(&scan, &f, &wt, &bad)) {
        if (f == (uint32_t)vfield) { if (!df__pb_each(&scan, wt, vwt, df__gd_put, &fill)) { df_tensor_release(out); goto malformed; } }
        else if (f == 8 && t != DF_STRING) { if (!df__pb_skip(&scan, wt)) { df_tensor_release(out); goto malformed; } }
        else if (!df__pb_skip(&scan, wt)) { df_tensor_release(out); goto malformed; }
    }
    if (fill.i > fill.cap || fill.i % lanes) {    /* (complex values come in pairs: one float repeats nothing) */
        if (fill.i % lanes) df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: %lld floats for complex values, which come in pairs",
                                          where, (long long)fill.i);
        else df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: %lld values for a tensor of %lld elements", where,
                           (long long)(fill.i / lanes), (long long)n);
        df_tensor_release(out);
        return NULL;
    }
    if (fill.i > 0 && fill.i < fill.cap) {          /* fewer values: the last one repeats */
        size_t unit = es, have = (size_t)(fill.i / lanes);
        for (size_t i = have; i < (size_t)n; i++) memcpy((char *)out->data + i * unit, (char *)out->data + (have - 1) * unit, unit);
    }
    return out;
malformed:
    df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed TensorProto", where);
    return NULL;
}

/* Sets attr `ad` of the node being built from its AttrValue; reports kind confusion. */
typedef struct df__gd_list { int64_t *v; int n, cap, oom; } df__gd_list;
static int df__gd_list_add(void *user, uint64_t v) {
    df__gd_list *l = (df__gd_list *)user;
    if (l->n >= (1 << 20)) return 0;
    if (!df__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) { l->oom = 1; return 0; }
    l->v[l->n++] = (int64_t)v;
    return 1;
}
DF_PRIVATE df_code df__gd_set_attr(df__gd *d, const df__gd_node *n, df_op_builder *b, const df__attrdef *ad, df__pb value) {
    df__gd_val v;
    char where[320];
    snprintf(where, sizeof where, "attr '%.60s' of {{node %.200s}}", ad->name, n->full);
    if (!df__gd_attr_value(value, &v)) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed AttrValue", where);
    static const uint32_t want_field[] = {
        [DF__A_INT] = 3, [DF__A_FLOAT] = 4, [DF__A_BOOL] = 5, [DF__A_TYPE] = 6, [DF__A_STRING] = 2,
        [DF__A_SHAPE] = 7, [DF__A_TENSOR] = 8, [DF__A_INT_LIST] = 1, [DF__A_TYPE_LIST] = 1, [DF__A_FUNC] = 10,
        [DF__A_SHAPE_LIST] = 1};
    uint32_t want = want_field[ad->kind];
    int want_wt = want == 4 ? DF__PB_I32 : (want == 1 || want == 2 || want == 7 || want == 8 || want == 10) ? DF__PB_LEN : DF__PB_VARINT;
    if (v.field == 0 && want == 1) { v.field = 1; v.wt = DF__PB_LEN; v.sub.p = v.sub.end = value.p; }  /* an empty list */
    if (v.field != want || v.wt != want_wt)
        return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: Op %s expects a %s, the AttrValue holds a %s",
                             where, b->op->name, df__kind_name(ad->kind), df__gd_field_kind(v.field));
    switch (ad->kind) {
    case DF__A_INT: df_op_set_attr_int(b, ad->name, (int64_t)v.v); break;
    case DF__A_FLOAT: { uint32_t bits = (uint32_t)v.v; float x; memcpy(&x, &bits, 4); df_op_set_attr_float(b, ad->name, x); break; }
    case DF__A_BOOL: df_op_set_attr_bool(b, ad->name, v.v != 0); break;
    case DF__A_TYPE:
        if (v.v > 1000) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: bad dtype %llu", where, (unsigned long long)v.v);
        if (v.v > 100) v.v -= 100;              /* a reference type: the attr names the value type */
        df_op_set_attr_type(b, ad->name, (df_dtype)v.v);
        break;
    case DF__A_STRING: {
        char *s = df__gd_cstr((df__gd_str){v.sub.p, (size_t)(v.sub.end - v.sub.p)}, NULL);
        if (!s) return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
        if (strlen(s) != (size_t)(v.sub.end - v.sub.p)) { DF_FREE(s); return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: a NUL byte in a string attr", where); }
        df_op_set_attr_string(b, ad->name, s);
        DF_FREE(s);
        break;
    }
    case DF__A_FUNC: {                          /* NameAttrList: the name (1); attrs (2) are not used */
        df__pb r = v.sub;
        uint32_t f;
        int wt, bad;
        char *name = NULL;
        while (df__pb_next(&r, &f, &wt, &bad)) {
            if (f == 1 && wt == DF__PB_LEN) {
                df__pb sub;
                if (!df__pb_sub(&r, &sub)) { bad = 1; break; }
                DF_FREE(name);
                name = df__gd_cstr((df__gd_str){sub.p, (size_t)(sub.end - sub.p)}, NULL);
                if (!name) return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            } else if (!df__pb_skip(&r, wt)) { bad = 1; break; }
        }
        if (bad || !name || !*name) { DF_FREE(name); return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed function attr", where); }
        df_op_set_attr_func(b, ad->name, name);
        DF_FREE(name);
        break;
    }
    case DF__A_SHAPE: {
        int rank;
        int64_t dims[DF_MAX_RANK];
        if (!df__gd_shape(v.sub, &rank, dims, 1)) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed TensorShapeProto (or rank above %d)", where, DF_MAX_RANK);
        df_op_set_attr_shape(b, ad->name, rank, dims);
        break;
    }
    case DF__A_TENSOR: {
        df_tensor *t = df__gd_tensor(v.sub, where, d->st);
        if (!t) return d->st->code;
        df_op_set_attr_tensor(b, ad->name, t);
        df_tensor_release(t);
        break;
    }
    case DF__A_SHAPE_LIST: {                    /* list(shape): kept flattened (see df__attr_kind) */
        df__gd_list l = {NULL, 0, 0, 0};
        uint32_t f;
        int wt, bad, ok = 1, rank;
        int64_t dims[DF_MAX_RANK];
        df__pb r = v.sub, sr;
        while (ok && df__pb_next(&r, &f, &wt, &bad)) {
            if (f != 7) { ok = df__pb_skip(&r, wt); continue; }
            ok = wt == DF__PB_LEN && df__pb_sub(&r, &sr) && df__gd_shape(sr, &rank, dims, 1) && df__gd_list_add(&l, (uint64_t)(int64_t)rank);
            for (int i = 0; ok && i < rank; i++) ok = df__gd_list_add(&l, (uint64_t)dims[i]);
        }
        if (!ok || bad) { DF_FREE(l.v); return l.oom ? df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory")
                                                : df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed list of shapes", where); }
        df__op_set_attr_shapes_flat(b, ad->name, l.v, l.n);
        DF_FREE(l.v);
        break;
    }
    default: {                                  /* list(int), list(type) */
        int field = ad->kind == DF__A_INT_LIST ? 3 : 6;
        df__gd_list l = {NULL, 0, 0, 0};
        uint32_t f;
        int wt, bad;
        df__pb r = v.sub;
        while (df__pb_next(&r, &f, &wt, &bad)) {
            int ok = f == (uint32_t)field ? df__pb_each(&r, wt, DF__PB_VARINT, df__gd_list_add, &l) : df__pb_skip(&r, wt);
            if (!ok) { DF_FREE(l.v); return l.oom ? df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory")
                                              : df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed list", where); }
        }
        if (bad) { DF_FREE(l.v); return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed list", where); }
        if (ad->kind == DF__A_INT_LIST) df_op_set_attr_int_list(b, ad->name, l.v, l.n);
        else {
            df_dtype *types = (df_dtype *)DF_MALLOC((size_t)DF__MAX(l.n, 1) * sizeof(df_dtype));
            if (!types) { DF_FREE(l.v); return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); }
            for (int i = 0; i < l.n; i++) types[i] = (df_dtype)(l.v[i] > 100 && l.v[i] <= 1000 ? l.v[i] - 100 : l.v[i]);
            df_op_set_attr_type_list(b, ad->name, types, l.n);
            DF_FREE(types);
        }
        DF_FREE(l.v);
    }
    }
    return DF_OK;
}
/* `_class`: a list of "loc:@name" strings, kept joined by commas (the placer's form). */
DF_PRIVATE df_code df__gd_class(df__gd *d, const df__gd_node *n, df_op_builder *b, df__pb value, const char *prefix) {
    df__gd_val v;
    if (!df__gd_attr_value(value, &v)) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: malformed _class {{node %s}}", n->full);
    if (v.field != 1) return DF_OK;             /* not a list: ignored, as TF ignores what it cannot use */
    char *joined = NULL;
    size_t len = 0;
    uint32_t f;
    int wt, bad;
    df__pb r = v.sub;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        df__gd_str s;
        if (f != 2 || wt != DF__PB_LEN) { if (!df__pb_skip(&r, wt)) break; continue; }
        if (!df__gd_string(&r, &s)) { bad = 1; break; }
        if (s.n < 6 || memcmp(s.p, "loc:@", 5)) continue;
        size_t pl = prefix && *prefix ? strlen(prefix) + 1 : 0, add = 5 + pl + (s.n - 5) + 1;
        char *nj = (char *)DF_REALLOC(joined, len + add + 1);
        if (!nj) { DF_FREE(joined); return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); }
        joined = nj;
        if (len) joined[len++] = ',';
        memcpy(joined + len, "loc:@", 5); len += 5;
        if (pl) { memcpy(joined + len, prefix, pl - 1); joined[len + pl - 1] = '/'; len += pl; }
        memcpy(joined + len, s.p + 5, s.n - 5); len += s.n - 5;
        joined[len] = 0;
    }
    if (bad) { DF_FREE(joined); return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: malformed _class {{node %s}}", n->full); }
    if (joined) df_op_set_attr_string(b, "_class", joined);
    DF_FREE(joined);
    return DF_OK;
}

/* The int (or list length) of attr `name` in a NodeDef, for list arguments' sizes. */
DF_PRIVATE int df__gd_attr_count(const df__gd_node *n, const char *name, int list, int64_t *out) {
    for (int i = 0; i < n->n_attrs; i++) {
        if (!df__gd_eq(n->attrs[i].key, name)) continue;
        df__gd_val v;
        if (!df__gd_attr_value(n->attrs[i].value, &v)) return 0;
        if (!list) { if (v.field != 3 || v.wt != DF__PB_VARINT) return 0; *out = (int64_t)v.v; return 1; }
        if (v.field == 0) { *out = 0; return 1; }
        if (v.field != 1 || v.wt != DF__PB_LEN) return 0;
        df__gd_list l = {NULL, 0, 0, 0};
        uint32_t f;
        int wt, bad, ok = 1;
        df__pb r = v.sub;
        while (ok && df__pb_next(&r, &f, &wt, &bad)) ok = f == 6 ? df__pb_each(&r, wt, DF__PB_VARINT, df__gd_list_add, &l) : df__pb_skip(&r, wt);
        DF_FREE(l.v);
        if (!ok || bad) return 0;
        *out = l.n;
        return 1;
    }
    return 0;
}
/* Data input k of node dst is a loop's back edge (NextIteration -> Merge, or their Ref twins):
   made after dst. */
DF_PRIVATE int df__gd_back_edge(const df__gd *d, int dst, int k) {
    const df__gd_node *n = &d->nodes[dst];
    if (k >= n->n_data) return 0;
    df__gd_str src = d->nodes[n->src[k]].op;
    return (df__gd_eq(src, "NextIteration") || df__gd_eq(src, "RefNextIteration")) &&
           (df__gd_eq(n->op, "Merge") || df__gd_eq(n->op, "RefMerge"));
}
/* An input's value: the mapped output when the import options map that tensor, else the output
   of the node made for it. */
DF_PRIVATE df_output df__gd_value(const df__gd *d, const df_import_options *o, df__gd_str name, int index, int src) {
    if (o)
        for (int m = 0; m < o->n_input_map; m++) {
            const char *k = o->input_map_names ? o->input_map_names[m] : NULL;
            if (!k) continue;
            const char *colon = strrchr(k, ':');
            size_t kn = colon ? (size_t)(colon - k) : strlen(k);
            int ki = colon ? atoi(colon + 1) : 0;
            if (kn == name.n && !memcmp(k, name.p, kn) && ki == index) return o->input_map_values[m];
        }
    df_output out = {d->nodes[src].made, index};
    return out;
}
