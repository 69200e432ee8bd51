/* Writes an event file for tests/summary/check_tensorboard.py with the public API only:
   scalars "loss" = 1/(step+1) and "accuracy" = step/10 (float32) for steps 0..9, a histogram
   "weights" at steps 0 and 5, the graph of a small model (add_graph), and the session's
   partitions and optimized graph under the tag "session" (add_session_graphs, with a
   hand-made trace). The Summary protos are encoded by hand here, as TensorFlow's
   ScalarSummary and HistogramSummary make them, so this program does not depend on the
   summary ops. Usage: write_events LOGDIR */
#include "../../dataflow.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned char b[4096]; size_t n; } buf;
static void put(buf *o, const void *d, size_t n) {
    if (o->n + n > sizeof o->b) { fprintf(stderr, "write_events: buffer full\n"); exit(2); }
    memcpy(o->b + o->n, d, n);
    o->n += n;
}
static void varint(buf *o, uint64_t v) {
    do { unsigned char c = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); put(o, &c, 1); v >>= 7; } while (v);
}
static void key(buf *o, int field, int wt) { varint(o, (uint64_t)field << 3 | (uint64_t)wt); }
static void bytes(buf *o, int field, const void *d, size_t n) { key(o, field, 2); varint(o, n); put(o, d, n); }
static void f64(buf *o, int field, double v) {   /* little-endian host */
    key(o, field, 1);
    put(o, &v, 8);
}
static void packed_f64(buf *o, int field, const double *v, int n) {
    key(o, field, 2);
    varint(o, (uint64_t)n * 8);
    put(o, v, (size_t)n * 8);
}

/* Summary{value{tag, simple_value (field 2, float)}} */
static void scalar_summary(buf *s, const char *tag, float v) {
    buf val = {{0}, 0};
    bytes(&val, 1, tag, strlen(tag));
    key(&val, 2, 5);
    put(&val, &v, 4);
    bytes(s, 1, val.b, val.n);
}

/* Summary{value{tag, histo (field 5): HistogramProto{min 1, max 2, num 3, sum 4, sum_squares 5,
   bucket_limit 6, bucket 7}}}: the values counted into the buckets given by their limits. */
static void histogram_summary(buf *s, const char *tag, const double *x, int n, const double *limits, int nb) {
    double lo = x[0], hi = x[0], sum = 0, sq = 0, counts[16] = {0};
    for (int i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
        sum += x[i];
        sq += x[i] * x[i];
        int b = 0;
        while (b < nb - 1 && x[i] > limits[b]) b++;   /* bucket b holds (limits[b-1], limits[b]] */
        counts[b] += 1;
    }
    buf h = {{0}, 0}, val = {{0}, 0};
    f64(&h, 1, lo);
    f64(&h, 2, hi);
    f64(&h, 3, n);
    f64(&h, 4, sum);
    f64(&h, 5, sq);
    packed_f64(&h, 6, limits, nb);
    packed_f64(&h, 7, counts, nb);
    bytes(&val, 1, tag, strlen(tag));
    bytes(&val, 5, h.b, h.n);
    bytes(s, 1, val.b, val.n);
}

static int check(df_code c, const df_status *st, const char *what) {
    if (c == DF_OK) return 0;
    fprintf(stderr, "write_events: %s: %s: %s\n", what, df_code_name(c), st->message);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: write_events LOGDIR\n"); return 2; }
    df_status st;
    df_summary_writer_options o = {0};
    o.max_queue = 4;
    df_summary_writer *w = df_summary_writer_new_with_options(argv[1], &o, &st);
    if (!w) check(st.code, &st, "df_summary_writer_new");
    for (int step = 0; step < 10; step++) {
        buf s = {{0}, 0};
        scalar_summary(&s, "loss", 1.0f / (float)(step + 1));
        scalar_summary(&s, "accuracy", (float)step / 10.0f);
        check(df_summary_writer_add_summary(w, s.b, s.n, step, &st), &st, "add_summary");
        if (step % 5 == 0) {
            const double x[6] = {-1.5, -0.25, 0.0, 0.5 + step, 1.0, 2.0};
            const double limits[4] = {-1.0, 0.0, 1.0, 1e300};
            buf hs = {{0}, 0};
            histogram_summary(&hs, "weights", x, 6, limits, 4);
            check(df_summary_writer_add_summary(w, hs.b, hs.n, step, &st), &st, "add_summary (histogram)");
        }
    }
    /* y = relu(x * 2 + 1) with the multiply in a scope and on a second device */
    df_graph *g = df_graph_new();
    int64_t dims[1] = {3};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, dims);
    df_graph_push_name_scope(g, "layer1");
    df_graph_push_device(g, "/cpu:1");
    df_output m = df_mul(g, x, df_scalar_f32(g, 2));
    df_graph_pop_device(g);
    df_output y = df_add(g, m, df_scalar_f32(g, 1));
    df_graph_pop_name_scope(g);
    check(df_summary_writer_add_graph(w, g, &st), &st, "add_graph");

    df_session_options so;
    memset(&so, 0, sizeof so);
    so.num_cpu_devices = 2;
    so.disable_passes = DF_PASS_CONSTANT_FOLDING;
    df_session *sess = df_session_new(g, &so, &st);
    if (!sess) check(st.code, &st, "df_session_new");
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, dims, &st);
    float *xp = (float *)df_tensor_data(xv);
    xp[0] = 1; xp[1] = 2; xp[2] = 3;
    df_tensor *out = NULL;
    check(df_session_run(sess, &x, &xv, 1, &y, &out, 1, NULL, 0, &st), &st, "df_session_run");
    /* a trace by hand: every node of every partition, 1 us apart, 2 us long */
    df_node_trace nodes[64];
    int nn = 0;
    for (int p = 0; p < df_session_num_partitions(sess); p++) {
        const char *dev = NULL;
        const df_graph *pg = df_session_partition(sess, p, &dev);
        for (int i = 0; i < df_graph_num_nodes(pg) && nn < 64; i++, nn++) {
            df_node *n = df_graph_node_at(pg, i);
            memset(&nodes[nn], 0, sizeof nodes[nn]);
            nodes[nn].node = df_node_name(n);
            nodes[nn].op = df_node_op(n);
            nodes[nn].device = dev;
            nodes[nn].thread = p;
            nodes[nn].start_ns = nn * 1000;
            nodes[nn].end_ns = nn * 1000 + 2000;
            nodes[nn].bytes = 12;
        }
    }
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    md.nodes = nodes;
    md.n_nodes = nn;
    md.start_unix_us = 1700000000000000LL;
    check(df_summary_writer_add_session_graphs(w, sess, "session", &md, 10, &st), &st, "add_session_graphs");
    check(df_summary_writer_close(w, &st), &st, "close");
    printf("%s\n", df_summary_writer_path(w));
    df_summary_writer_free(w);
    df_tensor_release(out);
    df_tensor_release(xv);
    df_session_free(sess);
    df_graph_free(g);
    return 0;
}
