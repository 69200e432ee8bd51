/* Summary ops (ScalarSummary, HistogramSummary, MergeSummary, TensorSummaryV2): our serialized
   Summary protos equal TensorFlow's byte for byte (tests/summary/fixtures.h, made by
   tests/summary/make_summary_fixtures.py with TensorFlow), their errors, a TensorFlow GraphDef
   using them, the builders, and the writer's host-side add_scalar / add_histogram. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "summary/fixtures.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static df_tensor *values_tensor(const sf_case *c) {
    df_status st;
    df_tensor *t = df_tensor_new((df_dtype)c->dtype, c->rank, c->dims, &st);
    if (t && c->values_len) memcpy(df_tensor_data(t), c->values, c->values_len);
    return t;
}
static df_tensor *strings_tensor(int rank, const int64_t *dims, const char *const *s) {
    df_status st;
    return df_tensor_new_strings(rank, dims, s, &st);
}
static df_output const_of(df_graph *g, df_tensor *t) {
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output raw_op(df_graph *g, const char *op, const df_output *in, int n) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    df_output o = {df_op_finish(b), 0};
    return o;
}
/* The node a fixture case describes, with the raw op (tags of the values' shape). */
static df_output case_node(df_graph *g, const sf_case *c) {
    df_output in[3];
    if (c->op == 0) in[0] = const_of(g, strings_tensor(c->rank, c->dims, c->tags));
    else in[0] = const_of(g, strings_tensor(0, NULL, c->tags));
    in[1] = const_of(g, values_tensor(c));
    if (c->op == 2) {
        /* metadata without NULs: a string const */
        char meta[256];
        memcpy(meta, c->meta, c->meta_len);
        meta[c->meta_len] = 0;
        const char *mp = meta;
        in[2] = const_of(g, strings_tensor(0, NULL, &mp));
    }
    static const char *const ops[] = {"ScalarSummary", "HistogramSummary", "TensorSummaryV2"};
    return raw_op(g, ops[c->op], in, c->op == 2 ? 3 : 2);
}
/* Runs fetch; returns the scalar string's bytes (a copy, malloc'd) or NULL with st set. */
static unsigned char *run_bytes(df_graph *g, df_output fetch, const df_output *feeds, df_tensor *const *fv, int nf,
                                size_t *n, df_status *st) {
    *n = 0;
    if (df_graph_status(g)->code != DF_OK) { *st = *df_graph_status(g); return NULL; }
    df_session *s = df_session_new(g, NULL, st);
    if (!s) return NULL;
    df_tensor *out = NULL;
    unsigned char *copy = NULL;
    if (df_session_run(s, feeds, fv, nf, &fetch, &out, 1, NULL, 0, st) == DF_OK) {
        const char *p = df_tensor_string(out, 0, n);
        if (p && df_tensor_rank(out) == 0) {
            copy = malloc(*n + 1);
            memcpy(copy, p, *n);
        } else {
            df_status_set(st, DF_INTERNAL, "not a scalar string");
        }
    }
    df_tensor_release(out);
    df_session_free(s);
    return copy;
}
static int bytes_equal(const char *what, const unsigned char *got, size_t n, const unsigned char *want, size_t wn) {
    if (n == wn && (!n || !memcmp(got, want, n))) return 1;
    size_t i = 0;
    while (i < n && i < wn && got[i] == want[i]) i++;
    fprintf(stderr, "  %s: %zu bytes vs TensorFlow's %zu, first difference at byte %zu\n", what, n, wn, i);
    return 0;
}

DF_TEST(summary_ops_match_tensorflow_bytes) {
    int scalar = 0, histo = 0, tensor = 0;
    for (int k = 0; k < SF_N_CASES; k++) {
        const sf_case *c = &sf_cases[k];
        df_graph *g = df_graph_new();
        df_output o = case_node(g, c);
        df_status st;
        size_t n;
        unsigned char *got = run_bytes(g, o, NULL, NULL, 0, &n, &st);
        CHECK_MSG(got != NULL, "%s: %s", c->name, st.message);
        if (got) CHECK_MSG(bytes_equal(c->name, got, n, c->expected, c->expected_len), "%s: bytes differ from TensorFlow's", c->name);
        free(got);
        df_graph_free(g);
        scalar += c->op == 0;
        histo += c->op == 1;
        tensor += c->op == 2;
    }
    CHECK(scalar >= 10);
    CHECK(histo >= 10);
    CHECK(tensor >= 3);
}

static const sf_case *case_named(const char *name) {
    for (int k = 0; k < SF_N_CASES; k++) if (!strcmp(sf_cases[k].name, name)) return &sf_cases[k];
    return NULL;
}

DF_TEST(summary_merge_matches_tensorflow_bytes) {
    df_graph *g = df_graph_new();
    df_output parts[SF_N_MERGE];
    for (int i = 0; i < SF_N_MERGE; i++) {
        const sf_case *c = case_named(sf_merge_names[i]);
        CHECK(c != NULL);
        if (!c) { df_graph_free(g); return; }
        parts[i] = case_node(g, c);
    }
    df_output m = df_summary_merge(g, SF_N_MERGE, parts);
    df_status st;
    size_t n;
    unsigned char *got = run_bytes(g, m, NULL, NULL, 0, &n, &st);
    CHECK_MSG(got != NULL, "%s", st.message);
    if (got) CHECK(bytes_equal("merge", got, n, sf_merge_expected, sizeof sf_merge_expected));
    free(got);
    df_graph_free(g);
}

/* the typed builders give the raw ops' bytes */
DF_TEST(summary_builders_match_tensorflow_bytes) {
    const char *names[] = {"scalar_f32", "scalar_f64_round", "histo_f64", "histo_empty", "tensor_f32"};
    for (int i = 0; i < 5; i++) {
        const sf_case *c = case_named(names[i]);
        CHECK(c != NULL);
        if (!c) continue;
        df_graph *g = df_graph_new();
        df_output v = const_of(g, values_tensor(c)), o;
        if (c->op == 0) o = df_summary_scalar(g, c->tags[0], v);
        else if (c->op == 1) o = df_summary_histogram(g, c->tags[0], v);
        else o = df_summary_tensor(g, c->tags[0], v);
        df_output merged = df_summary_merge(g, 1, &o);
        df_status st;
        size_t n;
        unsigned char *got = run_bytes(g, o, NULL, NULL, 0, &n, &st);
        CHECK_MSG(got != NULL, "%s: %s", c->name, st.message);
        if (got) CHECK_MSG(bytes_equal(c->name, got, n, c->expected, c->expected_len), "%s (builder)", c->name);
        free(got);
        got = run_bytes(g, merged, NULL, NULL, 0, &n, &st);   /* merging one summary keeps it as it is */
        CHECK_MSG(got != NULL, "%s: %s", c->name, st.message);
        if (got) CHECK_MSG(bytes_equal(c->name, got, n, c->expected, c->expected_len), "%s (merged alone)", c->name);
        free(got);
        df_graph_free(g);
    }
}

DF_TEST(summary_graphdef_from_tensorflow_runs) {
    df_status st;
    df_graph *g = df_graph_import_graphdef(sf_graphdef, sizeof sf_graphdef, &st);
    CHECK_OK(&st);
    CHECK(g != NULL);
    if (!g) return;
    df_node *x = df_graph_find(g, "x"), *m = df_graph_find(g, "merged");
    CHECK(x != NULL && m != NULL);
    if (x && m) {
        int64_t d = SF_GRAPH_FEED_N;
        df_tensor *xv = df_tensor_new(DF_FLOAT, 1, &d, &st);
        memcpy(df_tensor_data(xv), sf_graph_feed, sizeof sf_graph_feed);
        df_output feed = {x, 0}, fetch = {m, 0};
        size_t n;
        unsigned char *got = run_bytes(g, fetch, &feed, &xv, 1, &n, &st);
        CHECK_MSG(got != NULL, "%s", st.message);
        if (got) CHECK(bytes_equal("graphdef merged", got, n, sf_graph_expected, sizeof sf_graph_expected));
        free(got);
        df_tensor_release(xv);
    }
    df_graph_free(g);
}

/* A histogram of one bad value fails the run naming the node */
static void check_histo_error(df_dtype t, double bad, const char *needle) {
    df_graph *g = df_graph_new();
    int64_t d = 3;
    df_status st;
    df_tensor *v = df_tensor_new(t, 1, &d, &st);
    if (t == DF_FLOAT) { float *p = df_tensor_data(v); p[0] = 1; p[1] = (float)bad; p[2] = 2; }
    else { double *p = df_tensor_data(v); p[0] = 1; p[1] = bad; p[2] = 2; }
    df_op_builder *b = df_op_new(g, "HistogramSummary", "weights_histogram");
    df_op_add_input(b, const_of(g, strings_tensor(0, NULL, (const char *const[]){"w"})));
    df_op_add_input(b, const_of(g, v));
    df_output o = {df_op_finish(b), 0};
    size_t n;
    unsigned char *got = run_bytes(g, o, NULL, NULL, 0, &n, &st);
    CHECK(got == NULL);
    free(got);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, needle);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "weights_histogram");
    df_graph_free(g);
}

DF_TEST(summary_histogram_nan_inf_fail) {
    check_histo_error(DF_FLOAT, NAN, "Nan in summary histogram for: weights_histogram");
    check_histo_error(DF_DOUBLE, NAN, "Nan in summary histogram for: weights_histogram");
    check_histo_error(DF_FLOAT, INFINITY, "Infinity in summary histogram for: weights_histogram");
    check_histo_error(DF_DOUBLE, -INFINITY, "Infinity in summary histogram for: weights_histogram");
}

DF_TEST(summary_scalar_shape_mismatch) {
    df_graph *g = df_graph_new();
    int64_t d2 = 2, d3 = 3;
    df_status st;
    df_output in[2] = {const_of(g, strings_tensor(1, &d2, (const char *const[]){"a", "b"})),
                       const_of(g, df_tensor_new(DF_FLOAT, 1, &d3, &st))};
    df_output o = raw_op(g, "ScalarSummary", in, 2);
    size_t n;
    unsigned char *got = run_bytes(g, o, NULL, NULL, 0, &n, &st);
    CHECK(got == NULL);
    free(got);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "tags and values not the same shape: [2] != [3]");
    df_graph_free(g);

    /* one tag, a vector of values: the tag is named, as TensorFlow's */
    g = df_graph_new();
    df_output in2[2] = {const_of(g, strings_tensor(0, NULL, (const char *const[]){"loss"})),
                        const_of(g, df_tensor_new(DF_DOUBLE, 1, &d2, &st))};
    o = raw_op(g, "ScalarSummary", in2, 2);
    got = run_bytes(g, o, NULL, NULL, 0, &n, &st);
    CHECK(got == NULL);
    free(got);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "tags and values not the same shape: [] != [2] (tag 'loss')");
    df_graph_free(g);

    /* a tag for a non-real dtype is refused when the graph is built */
    g = df_graph_new();
    df_output in3[2] = {const_of(g, strings_tensor(0, NULL, (const char *const[]){"b"})),
                        const_of(g, df_tensor_new(DF_BOOL, 0, NULL, &st))};
    raw_op(g, "ScalarSummary", in3, 2);
    CHECK(df_graph_status(g)->code != DF_OK);
    df_graph_free(g);
}

DF_TEST(summary_merge_duplicate_tag) {
    df_graph *g = df_graph_new();
    float one = 1.0f;
    df_output v = df_const_from_data(g, NULL, DF_FLOAT, 0, NULL, &one);
    df_output parts[3] = {df_summary_scalar(g, "loss", v), df_summary_histogram(g, "w", v), df_summary_scalar(g, "loss", v)};
    df_output m = df_summary_merge(g, 3, parts);
    df_status st;
    size_t n;
    unsigned char *got = run_bytes(g, m, NULL, NULL, 0, &n, &st);
    CHECK(got == NULL);
    free(got);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Duplicate tag loss found in summary inputs");
    df_graph_free(g);

    /* empty tags are never duplicates (TensorFlow's rule) */
    g = df_graph_new();
    v = df_const_from_data(g, NULL, DF_FLOAT, 0, NULL, &one);
    df_output e[2] = {df_summary_scalar(g, "", v), df_summary_scalar(g, "", v)};
    m = df_summary_merge(g, 2, e);
    got = run_bytes(g, m, NULL, NULL, 0, &n, &st);
    CHECK_OK(&st);
    static const unsigned char want[] = {0x0a, 0x05, 0x15, 0, 0, 0x80, 0x3f, 0x0a, 0x05, 0x15, 0, 0, 0x80, 0x3f};
    if (got) CHECK(bytes_equal("empty tags", got, n, want, sizeof want));
    free(got);
    df_graph_free(g);
}

DF_TEST(summary_merge_malformed_input) {
    /* none holds a NUL (string consts); each is not a Summary TensorFlow can parse */
    static const char *const bad[] = {
        "\x0a\x05\x0a\x03" "ab",          /* Value's length past the end */
        "\x0a",                           /* a tag without its length */
        "\x0a\x7f",                       /* length past the end */
        "\x0b\x01",                       /* a group start */
        "\x0a\x03\x2a\x05\x01",           /* histo longer than its Value */
        "\x0a\x04\x2a\x02\x0f\x01",       /* a bad wire type inside histo */
        "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",   /* a key past 64 bits */
        "\x15\x01\x02",                   /* a float field cut short */
        /* what TensorFlow's parser refuses beyond the wire format (each checked with TF 2.21) */
        "\x0a\x05\x0a\x03" "a\xff" "c",                           /* a tag that is not UTF-8 */
        "\x0a\x10\x0a\x03" "abc\x2a\x09\x3a\x07\x01\x01\x01\x01\x01\x01\x01",  /* packed doubles: 7 bytes */
        "\x0a\x04\x3a\x02\xff\xfe",                         /* node_name not UTF-8 */
        "\x0a\x0b\x0a\x02" "ab\x4a\x05\x0a\x03\x0a\x01\xff",   /* a plugin name not UTF-8 */
        "\x0a\x0a\x0a\x02" "ab\x42\x04\x3a\x02\x80\x80",      /* packed int_val: a varint cut short */
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
        df_graph *g = df_graph_new();
        df_output in = const_of(g, strings_tensor(0, NULL, &bad[i]));
        df_output m = df_summary_merge(g, 1, &in);
        df_status st;
        size_t n;
        unsigned char *got = run_bytes(g, m, NULL, NULL, 0, &n, &st);
        CHECK_MSG(got == NULL, "malformed input %d accepted", i);
        free(got);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
        df_graph_free(g);
    }
    /* and what it accepts: 8 bytes of packed doubles, a whole varint */
    static const char *const fine[] = {
        "\x0a\x11\x0a\x03" "abc\x2a\x0a\x3a\x08\x01\x01\x01\x01\x01\x01\x01\x01",
        "\x0a\x0a\x0a\x02" "ab\x42\x04\x3a\x02\x80\x01",
    };
    for (int i = 0; i < (int)(sizeof fine / sizeof *fine); i++) {
        df_graph *g = df_graph_new();
        df_output in = const_of(g, strings_tensor(0, NULL, &fine[i]));
        df_output m = df_summary_merge(g, 1, &in);
        df_status st;
        size_t n;
        unsigned char *got = run_bytes(g, m, NULL, NULL, 0, &n, &st);
        CHECK_MSG(got != NULL, "well-formed input %d refused: %s", i, st.message);
        if (got) CHECK(n == strlen(fine[i]) && !memcmp(got, fine[i], n));
        free(got);
        df_graph_free(g);
    }
    /* well formed, with fields other than value (skipped) and a vector of summaries */
    df_graph *g = df_graph_new();
    int64_t d = 3;
    df_output in = const_of(g, strings_tensor(1, &d, (const char *const[]){"", "\x10\x01", "\x0a\x03\x0a\x01q"}));
    df_output m = df_summary_merge(g, 1, &in);
    df_status st;
    size_t n;
    unsigned char *got = run_bytes(g, m, NULL, NULL, 0, &n, &st);
    CHECK_OK(&st);
    static const unsigned char want[] = {0x0a, 0x03, 0x0a, 0x01, 'q'};
    if (got) CHECK(bytes_equal("skipped fields", got, n, want, sizeof want));
    free(got);
    df_graph_free(g);
}

DF_TEST(summary_builders_bad_arguments) {
    df_graph *g = df_graph_new();
    df_output none = {NULL, 0};
    CHECK(df_summary_merge(g, 0, NULL).node == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "df_summary_merge");
    df_graph_free(g);
    g = df_graph_new();
    float one = 1.0f;
    df_output v = df_const_from_data(g, NULL, DF_FLOAT, 0, NULL, &one);
    CHECK(df_summary_scalar(g, NULL, v).node == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "df_summary_scalar: tag is NULL");
    df_graph_free(g);
    g = df_graph_new();
    CHECK(df_summary_histogram(g, "h", none).node == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "df_summary_histogram");
    df_graph_free(g);
    CHECK(df_summary_tensor(NULL, "t", none).node == NULL);
    /* a string for a histogram's values: refused by the op's T */
    g = df_graph_new();
    df_output s = const_of(g, strings_tensor(0, NULL, (const char *const[]){"x"}));
    CHECK(df_summary_histogram(g, "h", s).node == NULL);
    CHECK(df_graph_status(g)->code != DF_OK);
    df_graph_free(g);
}

/* Summaries beside a model: gradients ignore them, one run gives both. */
DF_TEST(summary_ops_with_gradients) {
    df_graph *g = df_graph_new();
    int64_t d = 4;
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, &d);
    df_output sq = df_square(g, x);
    df_output loss = df_reduce_mean(g, sq, 0, NULL, 0);
    df_output parts[2] = {df_summary_scalar(g, "loss", loss), df_summary_histogram(g, "sq", sq)};
    df_output merged = df_summary_merge(g, 2, parts);
    df_output dx = {NULL, 0};
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &x, &dx), DF_OK);
    CHECK(dx.node != NULL);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, &d, &st);
    float *xp = df_tensor_data(xv);
    for (int i = 0; i < 4; i++) xp[i] = (float)i - 1.0f;
    df_output fetch[2] = {dx, merged};
    df_tensor *out[2] = {NULL, NULL};
    if (s && dx.node) {
        CHECK_EQ_INT(df_session_run(s, &x, &xv, 1, fetch, out, 2, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        if (out[0]) CHECK_NEAR(((float *)df_tensor_data(out[0]))[3], 2.0 * 2.0 / 4.0, 1e-6);
        size_t n = 0;
        const char *p = out[1] ? df_tensor_string(out[1], 0, &n) : NULL;
        CHECK(p != NULL && n > 20 && p[0] == 0x0a);
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);

    /* the gradient of a summary itself (a string): an error on the graph, no crash */
    g = df_graph_new();
    x = df_placeholder(g, "x", DF_FLOAT, 1, &d);
    df_output sum = df_summary_histogram(g, "x", x);
    df_output ds = {NULL, 0};
    CHECK(df_gradients(g, 1, &sum, NULL, 1, &x, &ds) != DF_OK);
    CHECK(ds.node == NULL);
    CHECK(df_graph_status(g)->code != DF_OK);
    df_graph_free(g);
}

/* ---- host side ---- */
static uint64_t rd_varint(const unsigned char **p, const unsigned char *end) {
    uint64_t v = 0;
    int s = 0;
    while (*p < end && (**p & 0x80)) { v |= (uint64_t)(**p & 0x7f) << s; s += 7; (*p)++; }
    if (*p < end) { v |= (uint64_t)**p << s; (*p)++; }
    return v;
}
/* The summary bytes (Event field 5) and step of each record after the first of an event file. */
static int read_event_summaries(const char *path, unsigned char **sums, size_t *lens, int64_t *steps, int max) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int n = 0, rec = 0;
    unsigned char hdr[12], tail[4];
    while (fread(hdr, 1, 12, f) == 12) {
        uint64_t len = 0;
        for (int i = 0; i < 8; i++) len |= (uint64_t)hdr[i] << (8 * i);
        unsigned char *buf = malloc((size_t)len + 1);
        if (fread(buf, 1, (size_t)len, f) != len || fread(tail, 1, 4, f) != 4) { free(buf); break; }
        const unsigned char *p = buf, *end = buf + len;
        sums[n] = NULL;
        lens[n] = 0;
        steps[n] = -1;
        while (p < end) {
            uint64_t key = rd_varint(&p, end);
            int wt = (int)(key & 7);
            uint64_t field = key >> 3;
            if (wt == 0) { uint64_t v = rd_varint(&p, end); if (field == 2) steps[n] = (int64_t)v; }
            else if (wt == 1) p += 8;
            else if (wt == 5) p += 4;
            else if (wt == 2) {
                uint64_t l = rd_varint(&p, end);
                if (field == 5 && rec > 0) { sums[n] = malloc((size_t)l + 1); memcpy(sums[n], p, (size_t)l); lens[n] = (size_t)l; }
                p += l;
            } else break;
        }
        if (rec++ > 0 && n < max) n++;
        else free(sums[n]);
        free(buf);
    }
    fclose(f);
    return n;
}

DF_TEST(summary_writer_host_side_equals_kernels) {
    char dir[] = "/tmp/df_sumops_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    df_status st;
    df_summary_writer *w = df_summary_writer_new(dir, &st);
    CHECK_OK(&st);
    if (!w) return;
    const sf_case *sc = case_named("scalar_f32"), *sd = case_named("scalar_f64_round"), *h1 = case_named("histo_f64"),
                  *h2 = case_named("histo_i32"), *h3 = case_named("histo_empty");
    CHECK(sc && sd && h1 && h2 && h3);
    if (!(sc && sd && h1 && h2 && h3)) { df_summary_writer_free(w); return; }
    CHECK_EQ_INT(df_summary_writer_add_scalar(w, "loss", 0.25, 3, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_add_scalar(w, "acc", 0.1, 4, &st), DF_OK);   /* a double, as TF's float(0.1) */
    const sf_case *hs[3] = {h1, h2, h3};
    for (int i = 0; i < 3; i++) {
        df_tensor *t = values_tensor(hs[i]);
        CHECK_EQ_INT(df_summary_writer_add_histogram(w, hs[i]->tags[0], t, 10 + i, &st), DF_OK);
        df_tensor_release(t);
    }
    /* NaN: refused, nothing written; bad arguments */
    int64_t d = 2;
    df_tensor *bad = df_tensor_new(DF_FLOAT, 1, &d, &st);
    ((float *)df_tensor_data(bad))[1] = NAN;
    CHECK_EQ_INT(df_summary_writer_add_histogram(w, "bad", bad, 20, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Nan in summary histogram for: bad");
    df_tensor_release(bad);
    df_tensor *str = strings_tensor(0, NULL, (const char *const[]){"s"});
    CHECK_EQ_INT(df_summary_writer_add_histogram(w, "s", str, 21, &st), DF_INVALID_ARGUMENT);
    df_tensor_release(str);
    CHECK_EQ_INT(df_summary_writer_add_scalar(w, NULL, 1.0, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_summary_writer_add_histogram(NULL, "x", NULL, 1, &st), DF_INVALID_ARGUMENT);
    char path[512];
    snprintf(path, sizeof path, "%s", df_summary_writer_path(w));
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);

    unsigned char *sums[8] = {0};
    size_t lens[8];
    int64_t steps[8];
    int n = read_event_summaries(path, sums, lens, steps, 8);
    CHECK_EQ_INT(n, 5);
    const sf_case *want[5] = {sc, sd, h1, h2, h3};
    const int64_t want_steps[5] = {3, 4, 10, 11, 12};
    for (int i = 0; i < n && i < 5; i++) {
        CHECK_EQ_INT(steps[i], want_steps[i]);
        CHECK_MSG(sums[i] && bytes_equal(want[i]->name, sums[i], lens[i], want[i]->expected, want[i]->expected_len),
                  "host-side %s differs from TensorFlow's bytes", want[i]->name);
    }
    for (int i = 0; i < n; i++) free(sums[i]);
    unlink(path);
    rmdir(dir);
}

DF_TEST(summary_tensor_of_strings_matches_tensorflow_bytes) {
    df_graph *g = df_graph_new();
    int64_t d = SF_N_STRINGS;
    df_output t = const_of(g, strings_tensor(1, &d, sf_strings));
    df_output o = df_summary_tensor(g, "ts", t);
    df_status st;
    size_t n;
    unsigned char *got = run_bytes(g, o, NULL, NULL, 0, &n, &st);
    CHECK_MSG(got != NULL, "%s", st.message);
    if (got) CHECK(bytes_equal("strings", got, n, sf_strings_expected, sizeof sf_strings_expected));
    free(got);
    df_graph_free(g);
}

/* tags and metadata that are not scalars: TensorFlow's messages */
DF_TEST(summary_tag_not_scalar) {
    int64_t d = 2;
    const char *const two[] = {"a", "b"};
    for (int k = 0; k < 3; k++) {
        df_graph *g = df_graph_new();
        df_status st;
        float v[2] = {1, 2};
        df_output in[3];
        in[0] = const_of(g, k == 2 ? strings_tensor(0, NULL, two) : strings_tensor(1, &d, two));
        in[1] = df_const_from_data(g, NULL, DF_FLOAT, 1, &d, v);
        in[2] = const_of(g, k == 2 ? strings_tensor(1, &d, two) : strings_tensor(0, NULL, two));
        df_output o = raw_op(g, k == 0 ? "HistogramSummary" : "TensorSummaryV2", in, k == 0 ? 2 : 3);
        size_t n;
        unsigned char *got = run_bytes(g, o, NULL, NULL, 0, &n, &st);
        CHECK(got == NULL);
        free(got);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, k == 0 ? "tags must be scalar" : k == 1 ? "tag must be scalar"
                                                      : "serialized_summary_metadata must be scalar");
        df_graph_free(g);
    }
}

/* MergeSummary on damaged summaries (TensorFlow's own, truncated and with bytes changed) and on
   random bytes: a status or a result, never a crash; a result only for a well-formed proto. */
DF_TEST(summary_merge_damaged_inputs) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "s", DF_STRING, 0, NULL);
    df_output m = df_summary_merge(g, 1, &p);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    if (!s) { df_graph_free(g); return; }
    unsigned seed = 12345;
    int ok = 0, refused = 0;
    char buf[1200];
    for (int it = 0; it < 600; it++) {
        const sf_case *c = &sf_cases[it % SF_N_CASES];
        size_t len;
        if (it % 3 == 2) {                       /* random bytes */
            seed = seed * 1103515245u + 12345u;
            len = (seed >> 16) % 64;
            for (size_t i = 0; i < len; i++) { seed = seed * 1103515245u + 12345u; buf[i] = (char)(1 + (seed >> 16) % 255); }
        } else {                                 /* a fixture, NULs made 1s, cut or changed */
            len = c->expected_len < sizeof buf - 1 ? c->expected_len : sizeof buf - 1;
            for (size_t i = 0; i < len; i++) buf[i] = c->expected[i] ? (char)c->expected[i] : 1;
            seed = seed * 1103515245u + 12345u;
            if (it % 3 == 0 && len) len = (seed >> 16) % len;
            else if (len) buf[(seed >> 16) % len] = (char)(1 + (seed >> 8) % 255);
        }
        buf[len] = 0;
        const char *sp = buf;
        df_tensor *in = df_tensor_new_strings(0, NULL, &sp, &st);
        df_tensor *out = NULL;
        df_code rc = df_session_run(s, &p, &in, 1, &m, &out, 1, NULL, 0, &st);
        if (rc == DF_OK) ok++;
        else {
            refused++;
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "summary inputs");
        }
        df_tensor_release(out);
        df_tensor_release(in);
    }
    CHECK(ok > 0 && refused > 0);
    df_session_free(s);
    df_graph_free(g);
}
