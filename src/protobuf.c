/* ==========================================================================================
   src/protobuf.c: Protocol buffers: a bounded reader and writer                   >>protobuf
   Protocol buffers: a bounded reader and writer of the wire format.
   Enough for GraphDef and what it holds. The reader works on a byte range: every varint,
   tag,
   length and nesting depth is checked against what is left, so no read goes past the buffer.
   Unknown fields are skipped by their wire type (groups are refused).
   ========================================================================================== */
DF_PRIVATE int df__pb_varint(df__pb *r, uint64_t *v) {
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return 0;
        uint8_t c = *r->p++;
        if (i == 9 && c > 1) return 0;                  /* more than 64 bits */
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) { *v = x; return 1; }
    }
    return 0;
}
DF_PRIVATE int df__pb_fixed(df__pb *r, int bytes, uint64_t *v) {
    if (r->end - r->p < bytes) return 0;
    uint64_t x = 0;
    for (int i = 0; i < bytes; i++) x |= (uint64_t)r->p[i] << (8 * i);
    r->p += bytes;
    *v = x;
    return 1;
}
/* The next field: its number (1 .. 2^29-1) and wire type; 0 at the end or when malformed
   (*bad set then). */
DF_PRIVATE int df__pb_next(df__pb *r, uint32_t *field, int *wt, int *bad) {
    *bad = 0;
    if (r->p >= r->end) return 0;
    uint64_t key;
    if (!df__pb_varint(r, &key) || key >> 32) { *bad = 1; return 0; }
    *field = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    if (*field == 0 || (*wt != DF__PB_VARINT && *wt != DF__PB_I64 && *wt != DF__PB_LEN && *wt != DF__PB_I32)) {
        *bad = 1;
        return 0;
    }
    return 1;
}
/* A length-delimited field's bytes as a sub-reader. */
DF_PRIVATE int df__pb_sub(df__pb *r, df__pb *sub) {
    uint64_t n;
    if (!df__pb_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return 0;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 1;
}
DF_PRIVATE int df__pb_skip(df__pb *r, int wt) {
    uint64_t v;
    df__pb s;
    switch (wt) {
    case DF__PB_VARINT: return df__pb_varint(r, &v);
    case DF__PB_I64: return df__pb_fixed(r, 8, &v);
    case DF__PB_I32: return df__pb_fixed(r, 4, &v);
    case DF__PB_LEN: return df__pb_sub(r, &s);
    default: return 0;
    }
}
/* Calls fn for each value of a repeated scalar field, packed (one LEN field) or not. */
DF_PRIVATE int df__pb_each(df__pb *r, int wt, int scalar_wt, int (*fn)(void *, uint64_t), void *user) {
    uint64_t v;
    if (wt == scalar_wt) {
        if (!(scalar_wt == DF__PB_VARINT ? df__pb_varint(r, &v) : df__pb_fixed(r, scalar_wt == DF__PB_I64 ? 8 : 4, &v))) return 0;
        return fn(user, v);
    }
    if (wt != DF__PB_LEN) return 0;
    df__pb s;
    if (!df__pb_sub(r, &s)) return 0;
    while (s.p < s.end) {
        if (!(scalar_wt == DF__PB_VARINT ? df__pb_varint(&s, &v) : df__pb_fixed(&s, scalar_wt == DF__PB_I64 ? 8 : 4, &v))) return 0;
        if (!fn(user, v)) return 0;
    }
    return 1;
}

DF_PRIVATE void df__pbw_raw(df__pbw *w, const void *data, size_t n) {
    if (w->oom || !n) return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n) cap *= 2;
        uint8_t *nb = (uint8_t *)DF_REALLOC(w->buf, cap);
        if (!nb) { w->oom = 1; return; }
        w->buf = nb;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
}
DF_PRIVATE void df__pbw_varint(df__pbw *w, uint64_t v) {
    uint8_t b[10];
    int n = 0;
    do { b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
    df__pbw_raw(w, b, (size_t)n);
}
DF_PRIVATE void df__pbw_tag(df__pbw *w, uint32_t field, int wt) { df__pbw_varint(w, (uint64_t)field << 3 | (uint64_t)wt); }
/* A double's 8 bytes, little endian (no tag); a double or a float field, written whatever the
   value (proto3 leaves out zeros of plain fields: the caller decides). */
DF_PRIVATE void df__pbw_f64_bytes(df__pbw *w, double v) {
    uint64_t b;
    uint8_t o[8];
    memcpy(&b, &v, 8);
    for (int i = 0; i < 8; i++) o[i] = (uint8_t)(b >> (8 * i));
    df__pbw_raw(w, o, 8);
}
DF_PRIVATE void df__pbw_f64(df__pbw *w, uint32_t field, double v) {
    df__pbw_tag(w, field, DF__PB_I64);
    df__pbw_f64_bytes(w, v);
}
DF_PRIVATE void df__pbw_f32(df__pbw *w, uint32_t field, float v) {
    uint32_t b;
    uint8_t o[4];
    memcpy(&b, &v, 4);
    for (int i = 0; i < 4; i++) o[i] = (uint8_t)(b >> (8 * i));
    df__pbw_tag(w, field, DF__PB_I32);
    df__pbw_raw(w, o, 4);
}
DF_PRIVATE void df__pbw_uint(df__pbw *w, uint32_t field, uint64_t v) { df__pbw_tag(w, field, DF__PB_VARINT); df__pbw_varint(w, v); }
DF_PRIVATE void df__pbw_bytes(df__pbw *w, uint32_t field, const void *data, size_t n) {
    df__pbw_tag(w, field, DF__PB_LEN);
    df__pbw_varint(w, n);
    df__pbw_raw(w, data, n);
}
DF_PRIVATE void df__pbw_str(df__pbw *w, uint32_t field, const char *s) { df__pbw_bytes(w, field, s, strlen(s)); }
DF_PRIVATE void df__pbw_msg(df__pbw *w, uint32_t field, df__pbw *sub) {   /* appends sub, frees it */
    if (sub->oom) w->oom = 1;
    else df__pbw_bytes(w, field, sub->buf, sub->len);
    DF_FREE(sub->buf);
    memset(sub, 0, sizeof *sub);
}
