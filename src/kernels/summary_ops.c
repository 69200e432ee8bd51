/* ==========================================================================================
   src/kernels/summary_ops.c: Summary ops and histograms (TensorBoard)            >>summaryops
   TensorFlow's ScalarSummary, HistogramSummary, MergeSummary and TensorSummaryV2: each outputs
   a scalar string tensor holding a serialized Summary proto, the bytes TensorFlow's kernels
   give for the same inputs (proto3 encoding: fields in number order, a plain field left out at
   its zero value, a oneof member always written, repeated doubles packed).
     Summary { repeated Value value = 1; }
     Value   { tag = 1; simple_value = 2 (float); histo = 5; tensor = 8; metadata = 9 }
     HistogramProto { min = 1; max = 2; num = 3; sum = 4; sum_squares = 5 (doubles);
                      bucket_limit = 6; bucket = 7 (packed doubles) }
   Histograms use TensorFlow's default buckets: limits from 1e-12 growing by 10% while below
   1e20, then DBL_MAX, mirrored for negatives around 0; a value goes to the first bucket whose
   limit is above it. Encoded as TF's EncodeToProto(preserve_zero_buckets = false): a run of
   empty buckets becomes one entry (the run's last limit, count 0); no bucket at all becomes
   {DBL_MAX: 0}. MergeSummary copies each input's Value messages as they are (after checking
   the proto is well formed) and refuses a non-empty tag seen twice.
   The host-side df_summary_writer_add_scalar / _add_histogram (no graph) encode the same bytes
   and hand them to df_summary_writer_add_summary. Builders at the end.
   ========================================================================================== */
#include <float.h>

/* proto3's rule for a plain (non-oneof) double: left out when all its bits are zero (-0.0 is written) */
static void df__spb_f64_nz(df__pbw *w, uint32_t field, double v) {
    uint64_t b;
    memcpy(&b, &v, 8);
    if (b) df__pbw_f64(w, field, v);
}
static void df__spb_packed_f64(df__pbw *w, uint32_t field, const double *v, size_t n) {
    if (!n) return;
    df__pbw_tag(w, field, DF__PB_LEN);
    df__pbw_varint(w, (uint64_t)n * 8);
    for (size_t i = 0; i < n; i++) df__pbw_f64_bytes(w, v[i]);
}
static void df__spb_tag(df__pbw *w, const char *tag, size_t len) { if (len) df__pbw_bytes(w, 1, tag, len); }

/* ---- element conversions: TF's float(x) and static_cast<double>(x) ----
   TensorFlow runs its kernels with the CPU flushing subnormals to zero (FTZ and DAZ): a
   subnormal read by an arithmetic instruction counts as a zero of its sign, and a subnormal
   result becomes one. The histogram and the conversions below do the same by hand, so their
   bytes are TensorFlow's (a float32 subnormal converted to double is 0; one in a double stays
   as it is where it is only stored (min, max), and counts as 0 in comparisons and sums). */
static double df__ftz(double x) { return fpclassify(x) == FP_SUBNORMAL ? copysign(0.0, x) : x; }
static float df__ftzf(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }
static int df__sum_real(df_dtype t) {
    switch (t) {
    case DF_FLOAT: case DF_DOUBLE: case DF_INT32: case DF_UINT8: case DF_INT16: case DF_INT8: case DF_INT64:
    case DF_BFLOAT16: case DF_UINT16: case DF_HALF: case DF_UINT32: case DF_UINT64: return 1;
    default: return 0;
    }
}
static double df__sum_f64(const df_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case DF_FLOAT: return (double)df__ftzf(((const float *)p)[i]);
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_INT32: return (double)((const int32_t *)p)[i];
    case DF_UINT8: return (double)((const uint8_t *)p)[i];
    case DF_INT16: return (double)((const int16_t *)p)[i];
    case DF_INT8: return (double)((const int8_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_BFLOAT16: return (double)df__ftzf(df_bfloat16_to_float(((const uint16_t *)p)[i]));
    case DF_UINT16: return (double)((const uint16_t *)p)[i];
    case DF_HALF: return (double)df_half_to_float(((const uint16_t *)p)[i]);
    case DF_UINT32: return (double)((const uint32_t *)p)[i];
    case DF_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0.0;
    }
}
static float df__sum_f32(const df_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case DF_DOUBLE: return df__ftzf((float)((const double *)p)[i]);
    case DF_INT64: return (float)((const int64_t *)p)[i];      /* rounded once, as C++'s float(int64) */
    case DF_UINT64: return (float)((const uint64_t *)p)[i];
    case DF_UINT32: return (float)((const uint32_t *)p)[i];
    case DF_INT32: return (float)((const int32_t *)p)[i];
    case DF_FLOAT: return ((const float *)p)[i];                /* (no arithmetic: kept) */
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    default: return (float)df__sum_f64(t, i);                  /* exact in float */
    }
}

/* ---- the histogram ---- */
typedef struct df__histo {
    double *limits, *counts;
    int n;                       /* buckets */
    double min, max, num, sum, sum_sq;
} df__histo;

/* TF's default bucket limits (computed the same way, so the same doubles). */
static int df__histo_init(df__histo *h) {
    int half = 0;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) half++;
    h->n = 2 * (half + 1) + 1;
    h->limits = (double *)DF_MALLOC((size_t)h->n * 2 * sizeof(double));
    if (!h->limits) return 0;
    h->counts = h->limits + h->n;
    int k = 0;
    double v = 1.0e-12;
    for (; k < half; k++, v *= 1.1) {
        h->limits[half + 2 + k] = v;
        h->limits[half - k] = -v;
    }
    h->limits[h->n - 1] = DBL_MAX;
    h->limits[0] = -DBL_MAX;
    h->limits[half + 1] = 0.0;
    for (int i = 0; i < h->n; i++) h->counts[i] = 0.0;
    h->min = DBL_MAX;
    h->max = -DBL_MAX;
    h->num = h->sum = h->sum_sq = 0.0;
    return 1;
}
static void df__histo_add(df__histo *h, double x) {
    double z = df__ftz(x);                     /* what the FPU sees */
    int lo = 0, hi = h->n;                     /* the first limit above it */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (h->limits[mid] > z) hi = mid; else lo = mid + 1;
    }
    if (lo >= h->n) lo = h->n - 1;             /* (DBL_MAX: past TF's last bucket) */
    h->counts[lo] += 1.0;
    if (df__ftz(h->min) > z) h->min = x;
    if (df__ftz(h->max) < z) h->max = x;
    h->num += 1.0;
    h->sum = df__ftz(h->sum + z);
    volatile double sq = df__ftz(z * z);       /* rounded before the add, as TF's (no fused multiply-add) */
    h->sum_sq = df__ftz(h->sum_sq + sq);
}
/* HistogramProto, runs of empty buckets collapsed */
static void df__histo_encode(const df__histo *h, df__pbw *w) {
    double *lim = (double *)DF_MALLOC((size_t)(h->n + 1) * 2 * sizeof(double));
    if (!lim) { w->oom = 1; return; }
    double *cnt = lim + h->n + 1;
    size_t k = 0;
    for (int i = 0; i < h->n;) {
        double end = h->limits[i], c = h->counts[i];
        i++;
        if (c <= 0.0)
            while (i < h->n && h->counts[i] <= 0.0) { end = h->limits[i]; c = h->counts[i]; i++; }
        lim[k] = end;
        cnt[k++] = c;
    }
    if (!k) { lim[0] = DBL_MAX; cnt[0] = 0.0; k = 1; }
    df__spb_f64_nz(w, 1, h->min);
    df__spb_f64_nz(w, 2, h->max);
    df__spb_f64_nz(w, 3, h->num);
    df__spb_f64_nz(w, 4, h->sum);
    df__spb_f64_nz(w, 5, h->sum_sq);
    df__spb_packed_f64(w, 6, lim, k);
    df__spb_packed_f64(w, 7, cnt, k);
    DF_FREE(lim);
}

/* Summary{Value{tag, histo}} of every element of values into *out (an empty writer). Returns
   DF_OK, DF_INVALID_ARGUMENT for a NaN or an infinity (why names `who`), or
   DF_RESOURCE_EXHAUSTED. */
static df_code df__histo_summary(const char *tag, size_t tag_len, const df_tensor *values, df__pbw *out,
                                 char *why, size_t why_size) {
    df__histo h;
    if (!df__histo_init(&h)) { snprintf(why, why_size, "Out of memory making a histogram"); return DF_RESOURCE_EXHAUSTED; }
    for (int64_t i = 0; i < values->n; i++) {
        double x = df__sum_f64(values, i);
        if (isnan(x) || isinf(x)) {
            snprintf(why, why_size, "%s", isnan(x) ? "Nan" : "Infinity");
            DF_FREE(h.limits);
            return DF_INVALID_ARGUMENT;
        }
        df__histo_add(&h, x);
    }
    df__pbw v = {0}, hp = {0};
    df__spb_tag(&v, tag, tag_len);
    df__histo_encode(&h, &hp);
    df__pbw_msg(&v, 5, &hp);
    df__pbw_msg(out, 1, &v);
    DF_FREE(h.limits);
    if (out->oom) { snprintf(why, why_size, "Out of memory encoding a histogram"); return DF_RESOURCE_EXHAUSTED; }
    return DF_OK;
}

/* A scalar DF_STRING tensor of the writer's bytes (which may hold NULs); in t (DF_UINT8 of
   16 + n + 1 bytes) made by the caller. */
static void df__summary_fill(df_tensor *t, const df__pbw *w) {
    uint64_t zero = 0, end = (uint64_t)w->len + 1;
    unsigned char *d = (unsigned char *)t->data;
    memcpy(d, &zero, 8);
    memcpy(d + 8, &end, 8);
    if (w->len) memcpy(d + 16, w->buf, w->len);
    d[16 + w->len] = 0;
    t->dtype = DF_STRING;
    t->rank = 0;
    memset(t->dims, 0, sizeof t->dims);
    t->n = 1;
}
/* The kernel's output 0: a scalar string of w's bytes; frees w's buffer. */
static void df__summary_out(df__kctx *c, df__pbw *w) {
    if (w->oom) {
        DF_FREE(w->buf);
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory encoding a summary");
        return;
    }
    int64_t flat = (int64_t)w->len + 17;
    df_tensor *t = df__k_alloc(c, 0, DF_UINT8, 1, &flat);
    if (t) df__summary_fill(t, w);
    DF_FREE(w->buf);
    memset(w, 0, sizeof *w);
}

/* TensorShape::DebugString: "[2,3]", "[]" */
static void df__sum_shape_str(const df_tensor *t, char *s, size_t n) {
    size_t at = 0;
    at += (size_t)snprintf(s + at, n - at, "[");
    for (int i = 0; i < t->rank && at < n; i++)
        at += (size_t)snprintf(s + at, n - at, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (at < n) snprintf(s + at, n - at, "]");
}
static int df__sum_same_shape(const df_tensor *a, const df_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++) if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* ScalarSummary(tags, values): one Value{tag, simple_value} per element */
DF_PRIVATE void df__k_scalar_summary(df__kctx *c) {
    const df_tensor *tags = c->in[0], *values = c->in[1];
    if (!tags || !values || tags->dtype != DF_STRING || !df__sum_real(values->dtype)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "ScalarSummary needs string tags and real values");
        return;
    }
    if (!df__sum_same_shape(tags, values)) {
        char a[160], b[160], one[200] = "";
        df__sum_shape_str(tags, a, sizeof a);
        df__sum_shape_str(values, b, sizeof b);
        const char *t0 = tags->n == 1 ? df_tensor_string(tags, 0, NULL) : NULL;
        if (t0) snprintf(one, sizeof one, " (tag '%.180s')", t0);
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "tags and values not the same shape: %s != %s%s", a, b, one);
        return;
    }
    df__pbw s = {0};
    for (int64_t i = 0; i < tags->n; i++) {
        size_t len;
        const char *tag = df_tensor_string(tags, i, &len);
        if (!tag) { DF_FREE(s.buf); DF__KFAIL(c, DF_INVALID_ARGUMENT, "ScalarSummary: bad string tensor"); return; }
        df__pbw v = {0};
        df__spb_tag(&v, tag, len);
        df__pbw_f32(&v, 2, df__sum_f32(values, i));
        df__pbw_msg(&s, 1, &v);
    }
    df__summary_out(c, &s);
}

/* HistogramSummary(tag, values) */
DF_PRIVATE void df__k_histogram_summary(df__kctx *c) {
    const df_tensor *tag = c->in[0], *values = c->in[1];
    if (!tag || !values || tag->dtype != DF_STRING || !df__sum_real(values->dtype)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "HistogramSummary needs a string tag and real values");
        return;
    }
    if (tag->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "tags must be scalar"); return; }
    size_t len;
    const char *t = df_tensor_string(tag, 0, &len);
    if (!t) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "HistogramSummary: bad string tensor"); return; }
    df__pbw s = {0};
    char why[96];
    df_code rc = df__histo_summary(t, len, values, &s, why, sizeof why);
    if (rc != DF_OK) {
        DF_FREE(s.buf);
        if (rc == DF_INVALID_ARGUMENT) DF__KFAIL(c, rc, "%s in summary histogram for: %s", why, c->node->name);
        else DF__KFAIL(c, rc, "%s", why);
        return;
    }
    df__summary_out(c, &s);
}

/* ---- MergeSummary ---- */
/* What TensorFlow's proto parser checks beyond the wire format, for the messages a Summary
   value holds: strings are UTF-8 (proto3), packed numbers fill their bytes exactly, and every
   message inside is well formed. One row per checked field of each message. */
enum { DF__SK_STR = 1, DF__SK_MSG, DF__SK_P64, DF__SK_P32, DF__SK_PVAR };
enum { DF__SM_VALUE, DF__SM_META, DF__SM_PLUGIN, DF__SM_IMAGE, DF__SM_AUDIO, DF__SM_HISTO, DF__SM_TENSOR,
       DF__SM_SHAPE, DF__SM_DIM, DF__SM_HANDLE, DF__SM_DTSHAPE, DF__SM_VARIANT, DF__SM_N };
typedef struct df__sum_field { uint8_t msg, field, kind, sub; } df__sum_field;
static const df__sum_field df__sum_schema[] = {
    {DF__SM_VALUE, 1, DF__SK_STR, 0}, {DF__SM_VALUE, 7, DF__SK_STR, 0},
    {DF__SM_VALUE, 9, DF__SK_MSG, DF__SM_META}, {DF__SM_VALUE, 4, DF__SK_MSG, DF__SM_IMAGE},
    {DF__SM_VALUE, 5, DF__SK_MSG, DF__SM_HISTO}, {DF__SM_VALUE, 6, DF__SK_MSG, DF__SM_AUDIO},
    {DF__SM_VALUE, 8, DF__SK_MSG, DF__SM_TENSOR},
    {DF__SM_META, 1, DF__SK_MSG, DF__SM_PLUGIN}, {DF__SM_META, 2, DF__SK_STR, 0}, {DF__SM_META, 3, DF__SK_STR, 0},
    {DF__SM_PLUGIN, 1, DF__SK_STR, 0},
    {DF__SM_IMAGE, 1, DF__SK_PVAR, 0}, {DF__SM_IMAGE, 2, DF__SK_PVAR, 0}, {DF__SM_IMAGE, 3, DF__SK_PVAR, 0},
    {DF__SM_AUDIO, 5, DF__SK_STR, 0},
    {DF__SM_HISTO, 6, DF__SK_P64, 0}, {DF__SM_HISTO, 7, DF__SK_P64, 0},
    {DF__SM_TENSOR, 2, DF__SK_MSG, DF__SM_SHAPE}, {DF__SM_TENSOR, 5, DF__SK_P32, 0}, {DF__SM_TENSOR, 6, DF__SK_P64, 0},
    {DF__SM_TENSOR, 7, DF__SK_PVAR, 0}, {DF__SM_TENSOR, 9, DF__SK_P32, 0}, {DF__SM_TENSOR, 10, DF__SK_PVAR, 0},
    {DF__SM_TENSOR, 11, DF__SK_PVAR, 0}, {DF__SM_TENSOR, 12, DF__SK_P64, 0}, {DF__SM_TENSOR, 13, DF__SK_PVAR, 0},
    {DF__SM_TENSOR, 14, DF__SK_MSG, DF__SM_HANDLE}, {DF__SM_TENSOR, 15, DF__SK_MSG, DF__SM_VARIANT},
    {DF__SM_TENSOR, 16, DF__SK_PVAR, 0}, {DF__SM_TENSOR, 17, DF__SK_PVAR, 0},
    {DF__SM_SHAPE, 2, DF__SK_MSG, DF__SM_DIM}, {DF__SM_DIM, 2, DF__SK_STR, 0},
    {DF__SM_HANDLE, 1, DF__SK_STR, 0}, {DF__SM_HANDLE, 2, DF__SK_STR, 0}, {DF__SM_HANDLE, 3, DF__SK_STR, 0},
    {DF__SM_HANDLE, 5, DF__SK_STR, 0}, {DF__SM_HANDLE, 6, DF__SK_MSG, DF__SM_DTSHAPE},
    {DF__SM_DTSHAPE, 2, DF__SK_MSG, DF__SM_SHAPE},
    {DF__SM_VARIANT, 1, DF__SK_STR, 0}, {DF__SM_VARIANT, 3, DF__SK_MSG, DF__SM_TENSOR},
};
static int df__sum_utf8(const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        int k = df__utf8_seq(p, (size_t)(end - p));
        if (!k) return 0;
        p += k;
    }
    return 1;
}
/* r, a message of kind msg, as TensorFlow's parser would accept it (nesting at most
   DF__PB_MAX_DEPTH deep). Unknown fields, and known ones of another wire type, are skipped
   (the parser keeps them as unknown). */
static int df__sum_check(df__pb r, int msg, int depth) {
    uint32_t f;
    int wt, bad;
    if (depth > DF__PB_MAX_DEPTH) return 0;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (wt != DF__PB_LEN) { if (!df__pb_skip(&r, wt)) return 0; continue; }
        df__pb sub;
        if (!df__pb_sub(&r, &sub)) return 0;
        const df__sum_field *k = NULL;
        for (size_t i = 0; i < sizeof df__sum_schema / sizeof *df__sum_schema && !k; i++)
            if (df__sum_schema[i].msg == msg && df__sum_schema[i].field == f) k = &df__sum_schema[i];
        if (!k) continue;
        size_t n = (size_t)(sub.end - sub.p);
        if (k->kind == DF__SK_STR && !df__sum_utf8(sub.p, sub.end)) return 0;
        if (k->kind == DF__SK_MSG && !df__sum_check(sub, k->sub, depth + 1)) return 0;
        if ((k->kind == DF__SK_P64 && n % 8) || (k->kind == DF__SK_P32 && n % 4)) return 0;
        if (k->kind == DF__SK_PVAR)
            while (sub.p < sub.end) if (!df__pb_skip(&sub, DF__PB_VARINT)) return 0;
    }
    return !bad;
}
/* A Value: well formed, its messages too; *tag (NULL: none) is its last tag field. */
static int df__sum_value(df__pb r, const uint8_t **tag, size_t *tag_len) {
    uint32_t f;
    int wt, bad;
    *tag = NULL;
    *tag_len = 0;
    if (!df__sum_check(r, DF__SM_VALUE, 0)) return 0;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (wt != DF__PB_LEN) { if (!df__pb_skip(&r, wt)) return 0; continue; }
        df__pb sub;
        if (!df__pb_sub(&r, &sub)) return 0;
        if (f == 1) { *tag = sub.p; *tag_len = (size_t)(sub.end - sub.p); }
    }
    return !bad;
}

typedef struct df__tagset { const uint8_t **p; size_t *len; size_t cap, n; } df__tagset;
static uint64_t df__tag_hash(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; }
    return h;
}
/* 1 added, 0 already there, -1 out of memory */
static int df__tagset_add(df__tagset *s, const uint8_t *p, size_t n) {
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        const uint8_t **np = (const uint8_t **)DF_MALLOC(cap * sizeof *np);
        size_t *nl = (size_t *)DF_MALLOC(cap * sizeof *nl);
        if (!np || !nl) { DF_FREE((void *)np); DF_FREE(nl); return -1; }
        for (size_t i = 0; i < cap; i++) np[i] = NULL;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->p[i]) continue;
            size_t k = (size_t)df__tag_hash(s->p[i], s->len[i]) & (cap - 1);
            while (np[k]) k = (k + 1) & (cap - 1);
            np[k] = s->p[i];
            nl[k] = s->len[i];
        }
        DF_FREE((void *)s->p);
        DF_FREE(s->len);
        s->p = np;
        s->len = nl;
        s->cap = cap;
    }
    size_t k = (size_t)df__tag_hash(p, n) & (s->cap - 1);
    for (; s->p[k]; k = (k + 1) & (s->cap - 1))
        if (s->len[k] == n && !memcmp(s->p[k], p, n)) return 0;
    s->p[k] = p;
    s->len[k] = n;
    s->n++;
    return 1;
}

DF_PRIVATE void df__k_merge_summary(df__kctx *c) {
    df__pbw s = {0};
    df__tagset tags = {0};
    df_code rc = DF_OK;
    for (int k = 0; k < c->n_in && rc == DF_OK; k++) {
        const df_tensor *in = c->in[k];
        if (!in || in->dtype != DF_STRING) { rc = DF__KFAIL(c, DF_INVALID_ARGUMENT, "MergeSummary: input %d is not a string tensor", k); break; }
        for (int64_t i = 0; i < in->n && rc == DF_OK; i++) {
            size_t len;
            const char *str = df_tensor_string(in, i, &len);
            if (!str) { rc = DF__KFAIL(c, DF_INVALID_ARGUMENT, "Could not parse one of the summary inputs"); break; }
            df__pb r = {(const uint8_t *)str, (const uint8_t *)str + len};
            uint32_t f;
            int wt, bad = 0;
            while (rc == DF_OK && df__pb_next(&r, &f, &wt, &bad)) {
                if (f != 1 || wt != DF__PB_LEN) {
                    if (!df__pb_skip(&r, wt)) bad = 1;
                    if (bad) break;
                    continue;
                }
                df__pb v;
                const uint8_t *tag;
                size_t tag_len;
                if (!df__pb_sub(&r, &v) || !df__sum_value(v, &tag, &tag_len)) { bad = 1; break; }
                if (tag_len) {
                    int added = df__tagset_add(&tags, tag, tag_len);
                    if (added < 0) { rc = DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory merging summaries"); break; }
                    if (!added) {
                        rc = DF__KFAIL(c, DF_INVALID_ARGUMENT, "Duplicate tag %.*s found in summary inputs",
                                       (int)DF__MIN(tag_len, 200), (const char *)tag);
                        break;
                    }
                }
                df__pbw_bytes(&s, 1, v.p, (size_t)(v.end - v.p));
            }
            if (rc == DF_OK && bad) rc = DF__KFAIL(c, DF_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
        }
    }
    DF_FREE((void *)tags.p);
    DF_FREE(tags.len);
    if (rc != DF_OK) { DF_FREE(s.buf); return; }
    df__summary_out(c, &s);
}

/* ---- TensorSummaryV2(tag, tensor, serialized_summary_metadata): Value{tag, tensor, metadata} ---- */
DF_PRIVATE void df__k_tensor_summary_v2(df__kctx *c) {
    const df_tensor *tag = c->in[0], *x = c->in[1], *meta = c->in[2];
    if (!tag || !x || !meta || tag->dtype != DF_STRING || meta->dtype != DF_STRING) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorSummaryV2 needs a string tag and string metadata");
        return;
    }
    if (tag->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "tag must be scalar"); return; }
    if (meta->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "serialized_summary_metadata must be scalar"); return; }
    if (x->dtype == DF_RESOURCE || x->dtype == DF_VARIANT || (x->dtype != DF_STRING && !df_dtype_size(x->dtype))) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "TensorSummaryV2 of a %s tensor", df_dtype_name(x->dtype));
        return;
    }
    size_t tlen, mlen;
    const char *t = df_tensor_string(tag, 0, &tlen), *m = df_tensor_string(meta, 0, &mlen);
    if (!t || !m) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorSummaryV2: bad string tensor"); return; }
    /* TensorProto: dtype = 1, tensor_shape = 2 {dim = 2 {size = 1}}, tensor_content = 4, string_val = 8 */
    df__pbw tp = {0}, shp = {0}, v = {0}, s = {0};
    if (x->dtype) df__pbw_uint(&tp, 1, (uint64_t)x->dtype);
    for (int i = 0; i < x->rank; i++) {
        df__pbw d = {0};
        if (x->dims[i]) df__pbw_uint(&d, 1, (uint64_t)x->dims[i]);
        df__pbw_msg(&shp, 2, &d);
    }
    df__pbw_msg(&tp, 2, &shp);
    if (x->dtype == DF_STRING) {
        for (int64_t i = 0; i < x->n; i++) {
            size_t len;
            const char *e = df_tensor_string(x, i, &len);
            if (!e) { DF_FREE(tp.buf); DF__KFAIL(c, DF_INVALID_ARGUMENT, "TensorSummaryV2: bad string tensor"); return; }
            df__pbw_bytes(&tp, 8, e, len);
        }
    } else if (x->n) {
        df__pbw_bytes(&tp, 4, x->data, (size_t)x->n * df_dtype_size(x->dtype));
    }
    df__spb_tag(&v, t, tlen);
    df__pbw_msg(&v, 8, &tp);
    df__pb mr = {(const uint8_t *)m, (const uint8_t *)m + mlen};
    df__pbw_bytes(&v, 9, m, df__sum_check(mr, DF__SM_META, 0) ? mlen : 0);   /* (TF leaves metadata it cannot parse empty) */
    df__pbw_msg(&s, 1, &v);
    df__summary_out(c, &s);
}

/* ---- host side: the writer's shortcuts ---- */
df_code df_summary_writer_add_scalar(df_summary_writer *w, const char *tag, double value, int64_t step,
                                     df_status *st) {
    if (!w || !tag) return df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: NULL writer or tag");
    df__pbw s = {0}, v = {0};
    df__spb_tag(&v, tag, strlen(tag));
    df__pbw_f32(&v, 2, df__ftzf((float)value));
    df__pbw_msg(&s, 1, &v);
    if (s.oom) { DF_FREE(s.buf); return df__fail(st, NULL, DF_RESOURCE_EXHAUSTED, "summary writer: out of memory"); }
    df_code rc = df_summary_writer_add_summary(w, s.buf, s.len, step, st);
    DF_FREE(s.buf);
    return rc;
}
df_code df_summary_writer_add_histogram(df_summary_writer *w, const char *tag, const df_tensor *values,
                                        int64_t step, df_status *st) {
    if (!w || !tag || !values) return df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: NULL writer, tag or values");
    if (!df__sum_real(values->dtype) || values->ref || (values->n && !values->data))
        return df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: a histogram of %s values (a real dtype is needed)",
                        df_dtype_name(values->dtype));
    df__pbw s = {0};
    char why[96];
    df_code rc = df__histo_summary(tag, strlen(tag), values, &s, why, sizeof why);
    if (rc != DF_OK) {
        DF_FREE(s.buf);
        if (rc == DF_INVALID_ARGUMENT)
            return df__fail(st, NULL, rc, "%s in summary histogram for: %s", why, tag);
        return df__fail(st, NULL, rc, "summary writer: %s", why);
    }
    rc = df_summary_writer_add_summary(w, s.buf, s.len, step, st);
    DF_FREE(s.buf);
    return rc;
}

/* ---- builders ---- */
static df_output df__sum_tag_const(df_graph *g, const char *tag) {
    df_status st;
    df_tensor *t = df_tensor_new_strings(0, NULL, &tag, &st);
    if (!t) { df__graph_error(g, st.code, "summary tag: %s", st.message); return df__out(NULL, 0); }
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static int df__sum_args(df_graph *g, const char *what, const char *tag, df_output x) {
    if (!g) return 0;
    if (!df__ok(g)) return 0;
    if (!tag || !x.node) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "%s: %s is NULL", what, !tag ? "tag" : "the input");
        return 0;
    }
    return 1;
}
static df_output df__sum_build(df_graph *g, const char *op, const char *tag, df_output x, int with_meta) {
    df_output t = df__sum_tag_const(g, tag);
    df_output m = {NULL, 0};
    if (with_meta) m = df__sum_tag_const(g, "");
    if (!t.node || (with_meta && !m.node)) return df__out(NULL, 0);
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, t);
    df_op_add_input(b, x);
    if (with_meta) df_op_add_input(b, m);
    return df__out(df_op_finish(b), 0);
}
df_output df_summary_scalar(df_graph *g, const char *tag, df_output value) {
    if (!df__sum_args(g, "df_summary_scalar", tag, value)) return df__out(NULL, 0);
    return df__sum_build(g, "ScalarSummary", tag, value, 0);
}
df_output df_summary_histogram(df_graph *g, const char *tag, df_output values) {
    if (!df__sum_args(g, "df_summary_histogram", tag, values)) return df__out(NULL, 0);
    return df__sum_build(g, "HistogramSummary", tag, values, 0);
}
df_output df_summary_tensor(df_graph *g, const char *tag, df_output tensor) {
    if (!df__sum_args(g, "df_summary_tensor", tag, tensor)) return df__out(NULL, 0);
    return df__sum_build(g, "TensorSummaryV2", tag, tensor, 1);
}
df_output df_summary_merge(df_graph *g, int n, const df_output *summaries) {
    if (!g || !df__ok(g)) return df__out(NULL, 0);
    if (n < 1 || !summaries) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_summary_merge: needs at least one summary (n %d%s)", n,
                        summaries ? "" : ", summaries NULL");
        return df__out(NULL, 0);
    }
    for (int i = 0; i < n; i++)
        if (!summaries[i].node) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_summary_merge: summary %d is NULL", i);
            return df__out(NULL, 0);
        }
    df_op_builder *b = df_op_new(g, "MergeSummary", NULL);
    df_op_add_input_list(b, summaries, n);
    return df__out(df_op_finish(b), 0);
}
