/* Graph optimisation passes: node count and step time with the passes on (the default) and off
   (df_session_options.disable_passes = DF_PASS_ALL, the graph run as built), and with each pass
   alone, on two graphs:

     rnn        the digits RNN's training step (examples/digits_rnn.c's model: a while loop over 8
                rows, 32 units, df_minimize's gradient of the loop and an Adam update), batch 64
     tf2_loop   the GraphDef TensorFlow 2.21 wrote for an AutoGraph-converted tf.function
                (tests/graphdef/fixtures_tf2/tf2_matmul_loop: a While over tf.range with a
                FunctionDefLibrary), imported and run to its committed output

   Sessions of both settings are made side by side and their steps interleaved; medians over
   several rounds. The ratio is the time as built over the time optimised (above 1: the passes
   help). Also writes build/passes_<graph>_{before,after}.dot, the graph as built (after
   lowering) and the graph that runs, for Graphviz. Usage: bench_passes [--quick] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "../examples/digits_common.h"
#include "bench_util.h"

enum { BATCH = 64, RNN_HIDDEN = 32 };

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_passes: %s: %s\n", what, msg);
    exit(1);
}

typedef struct bench_graph {
    const char *name;
    df_graph *g;
    df_output feeds[2];
    df_tensor *values[2];
    int n_feeds;
    df_output fetch;
    df_node *target;             /* NULL: none */
    df_node *init, *init2;       /* run once per session, in this order; NULL: none */
} bench_graph;

/* The digits RNN's training step on a fixed random batch. */
static void build_rnn(bench_graph *b) {
    df_graph *g = b->g = df_graph_new();
    digits_rng r = digits_rng_seed(2u);
    df_node *init_ops[8];
    int n_init = 0;
    df_output y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){BATCH});
    df_output x = df_placeholder(g, "x", DF_FLOAT, 3, (const int64_t[]){BATCH, DIGITS_SIDE, DIGITS_SIDE});
    digits_rnn_weights w;
    df_output vars[5];
    w.x = x;
    w.wx = vars[0] = digits_weight(g, "rnn_wx", DIGITS_SIDE, RNN_HIDDEN, &r, init_ops, &n_init);
    w.wh = vars[1] = digits_weight(g, "rnn_wh", RNN_HIDDEN, RNN_HIDDEN, &r, init_ops, &n_init);
    w.b = vars[2] = digits_weight(g, "rnn_b", 0, RNN_HIDDEN, &r, init_ops, &n_init);
    vars[3] = digits_weight(g, "rnn_wo", RNN_HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
    vars[4] = digits_weight(g, "rnn_bo", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_tensor *zeros = digits_tensor(DF_FLOAT, 2, (const int64_t[]){BATCH, RNN_HIDDEN}, NULL);
    df_output init[2] = {df_scalar_i32(g, 0), df_const(g, zeros)}, out[2];
    df_tensor_release(zeros);
    df_while_options opts = {0};
    opts.name = "rnn";
    df_while_loop(g, 2, init, digits_rows_left, digits_rnn_step, &w, &opts, out);
    df_output logits = df_add(g, df_matmul(g, out[1], vars[3], 0, 0), vars[4]);
    b->fetch = df_sparse_softmax_cross_entropy(g, logits, y);
    df_optimizer adam = {0};
    adam.kind = DF_OPT_ADAM;
    adam.learning_rate = 0.01;
    df_node *adam_init = NULL;
    b->target = df_minimize(g, b->fetch, 5, vars, &adam, &adam_init);
    b->init = df_no_op(g, init_ops, n_init);
    b->init2 = adam_init;
    if (df_graph_status(g)->code) die("building the RNN", df_graph_status(g)->message);
    float *xv = (float *)malloc(sizeof(float) * BATCH * DIGITS_PIXELS);
    int32_t yv[BATCH];
    for (int i = 0; i < BATCH * DIGITS_PIXELS; i++) xv[i] = (float)(digits_rng_u64(&r) % 17) / 16.0f;
    for (int i = 0; i < BATCH; i++) yv[i] = (int32_t)(digits_rng_u64(&r) % DIGITS_CLASSES);
    b->feeds[0] = x; b->feeds[1] = y;
    b->values[0] = digits_tensor(DF_FLOAT, 3, (const int64_t[]){BATCH, DIGITS_SIDE, DIGITS_SIDE}, xv);
    b->values[1] = df_tensor_from_data(DF_INT32, 1, (const int64_t[]){BATCH}, yv, sizeof yv, NULL);
    b->n_feeds = 2;
    free(xv);
}

static void *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) { free(p); p = NULL; }
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* The TF2 fixture; returns 0 when it cannot be read (run from the repository's root). */
static int build_tf2(bench_graph *b, df_tensor **want) {
    const char *dir = "tests/graphdef/fixtures_tf2/tf2_matmul_loop";
    char path[256];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/graph.pb", dir);
    void *data = read_file(path, &len);
    if (!data) return 0;
    df_status st;
    b->g = df_graph_import_graphdef(data, len, &st);
    free(data);
    if (!b->g) die("importing tf2_matmul_loop", st.message);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    b->values[0] = df_tensor_read_npy(path, &st);
    snprintf(path, sizeof path, "%s/out_h.npy", dir);
    *want = df_tensor_read_npy(path, &st);
    df_node *x = df_graph_find(b->g, "x"), *h = df_graph_find(b->g, "out_h");
    if (!b->values[0] || !*want || !x || !h) die("tf2_matmul_loop", "fixture incomplete");
    b->feeds[0] = (df_output){x, 0};
    b->n_feeds = 1;
    b->fetch = (df_output){h, 0};
    return 1;
}

static df_session *make_session(const bench_graph *b, int disable) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.disable_passes = disable;
    o.inter_op_threads = 1;      /* (2 threads on 2 cores: more noise than help for these sizes) */
    o.intra_op_threads = 1;
    df_status st;
    df_session *s = df_session_new(b->g, &o, &st);
    if (!s) die("session", st.message);
    if (b->init && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &b->init, 1, &st)) die("initialising", st.message);
    if (b->init2 && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &b->init2, 1, &st)) die("initialising", st.message);
    return s;
}
static double step(df_session *s, const bench_graph *b, df_tensor **out) {
    df_status st;
    df_tensor *r = NULL;
    double t0 = now();
    if (df_session_run(s, b->feeds, b->values, b->n_feeds, &b->fetch, &r, 1, b->target ? &b->target : NULL,
                       b->target ? 1 : 0, &st))
        die(b->name, st.message);
    double dt = now() - t0;
    if (out) *out = r;
    else df_tensor_release(r);
    return dt;
}

static void write_dot(const df_graph *g, const char *name, const char *when) {
    char path[256];
    snprintf(path, sizeof path, "build/passes_%s_%s.dot", name, when);
    FILE *f = fopen(path, "w");
    if (!f) return;
    df_graph_write_dot(g, f);
    fclose(f);
}

static const struct { const char *name; int disable; } settings[] = {
    {"as built", DF_PASS_ALL},
    {"prune only", DF_PASS_ALL & ~DF_PASS_PRUNE},
    {"identity only", DF_PASS_ALL & ~DF_PASS_IDENTITY},
    {"cse only", DF_PASS_ALL & ~DF_PASS_CSE},
    {"folding only", DF_PASS_ALL & ~DF_PASS_CONSTANT_FOLDING},
    {"depend. only", DF_PASS_ALL & ~DF_PASS_DEPENDENCY},
    {"all passes", 0},
};
enum { N_SETTINGS = (int)(sizeof settings / sizeof settings[0]) };

static void bench(bench_graph *b, int rounds, int steps) {
    df_session *s[N_SETTINGS];
    df_pass_stats ps[N_SETTINGS];
    double *t[N_SETTINGS];
    for (int k = 0; k < N_SETTINGS; k++) {
        s[k] = make_session(b, settings[k].disable);
        step(s[k], b, NULL);      /* builds the plan */
        memset(&ps[k], 0, sizeof ps[k]);
        df_session_optimized_graph(s[k], &ps[k]);
        t[k] = (double *)malloc(sizeof(double) * (size_t)rounds);
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < N_SETTINGS; k++) {
            double sample[64];
            for (int i = 0; i < steps; i++) sample[i] = step(s[k], b, NULL);
            t[k][r] = median(sample, steps);
        }
    int as_built = df_graph_num_nodes(b->g);       /* (after lowering, which the first run did) */
    double base = median(t[0], rounds);
    printf("\n%s: %d nodes as built (after If/While/call lowering)\n", b->name, as_built);
    printf("  %-14s %7s %7s %7s %7s %7s %7s %12s %8s\n", "passes", "nodes", "pruned", "ident", "cse", "folded", "deps",
           "step (us)", "ratio");
    for (int k = 0; k < N_SETTINGS; k++) {
        double m = median(t[k], rounds);
        int nodes = k == 0 ? as_built : ps[k].nodes_out;
        printf("  %-14s %7d %7d %7d %7d %7d %7d %12.1f %7.2fx\n", settings[k].name, nodes,
               k == 0 ? 0 : ps[k].nodes_in - ps[k].nodes_needed, ps[k].identities_removed, ps[k].cse_merged,
               ps[k].constants_folded, ps[k].dependencies_removed, m * 1e6, base / m);
    }
    write_dot(b->g, b->name, "before");
    write_dot(df_session_optimized_graph(s[N_SETTINGS - 1], NULL), b->name, "after");
    printf("  pictures: build/passes_%s_before.dot, build/passes_%s_after.dot\n", b->name, b->name);
    for (int k = 0; k < N_SETTINGS; k++) { df_session_free(s[k]); free(t[k]); }
}

/* The dependency optimizer's own cost on large graphs of control edges: the first run (which
   builds the plan: lowering, the passes, compiling) with every pass on, and with all but it,
   then the step. Graphs: a chain of NoOps; layers of NoOps and AssignAdds, each waiting on two
   nodes of the layer before (CSE merges little: the pairs differ). */
static df_node *build_layers(df_graph *g, int width, int depth, unsigned seed) {
    df_node **prev = (df_node **)malloc(sizeof(df_node *) * (size_t)width), **cur = (df_node **)malloc(sizeof(df_node *) * (size_t)width);
    df_output v = df_variable(g, "acc", DF_INT32, 0, NULL), one = df_scalar_i32(g, 1);
    for (int i = 0; i < width; i++) prev[i] = df_no_op(g, NULL, 0);
    for (int d = 1; d < depth; d++) {
        for (int i = 0; i < width; i++) {
            seed = seed * 1103515245u + 12345u;
            df_node *deps[2] = {prev[i], prev[(seed >> 8) % (unsigned)width]};
            if (i % 16 == 0) {
                df_graph_push_control_deps(g, deps, 2);
                cur[i] = df_assign_add(g, v, one);
                df_graph_pop_control_deps(g);
            } else {
                cur[i] = df_no_op(g, deps, 2);
            }
        }
        df_node **t = prev; prev = cur; cur = t;
    }
    df_node *last = df_no_op(g, prev, width);
    free(prev);
    free(cur);
    return last;
}
static void bench_dependency_cost(int quick) {
    printf("\ndependency optimizer on large graphs (first run: plan build; step: median)\n");
    printf("  %-22s %8s %8s %8s %8s %14s %14s %12s %12s\n", "graph", "nodes", "nodes out", "bypassed", "edges -",
           "first run, on", "first run, off", "step, on", "step, off");
    for (int which = 0; which < 2; which++) {
        df_graph *g = df_graph_new();
        df_node *target;
        char label[64];
        df_node *init = NULL;
        if (which == 0) {
            int n = quick ? 20000 : 100000;
            df_node *prev = NULL;
            for (int i = 0; i < n; i++) prev = df_no_op(g, prev ? &prev : NULL, prev ? 1 : 0);
            target = prev;
            snprintf(label, sizeof label, "NoOp chain");
        } else {
            int w = quick ? 100 : 200, d = quick ? 100 : 250;
            target = build_layers(g, w, d, 7u);
            init = df_assign(g, (df_output){df_graph_find(g, "acc"), 0}, df_scalar_i32(g, 0));
            snprintf(label, sizeof label, "layers %dx%d", w, d);
        }
        if (df_graph_status(g)->code) die("building", df_graph_status(g)->message);
        double first[2], steps[2];
        df_pass_stats ps[2];
        for (int off = 0; off < 2; off++) {
            df_session_options o;
            memset(&o, 0, sizeof o);
            o.disable_passes = off ? DF_PASS_DEPENDENCY : 0;
            o.inter_op_threads = 1;
            df_status st;
            df_session *s = df_session_new(g, &o, &st);
            if (!s) die("session", st.message);
            if (init && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st)) die("init", st.message);
            double t0 = now();
            if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1, &st)) die("run", st.message);
            first[off] = now() - t0;
            df_session_optimized_graph(s, &ps[off]);
            double sample[15];
            for (int i = 0; i < 15; i++) {
                t0 = now();
                if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1, &st)) die("run", st.message);
                sample[i] = now() - t0;
            }
            steps[off] = median(sample, 15);
            df_session_free(s);
        }
        printf("  %-22s %8d %8d %8d %8d %11.1f ms %11.1f ms %9.1f us %9.1f us\n", label, df_graph_num_nodes(g),
               ps[0].nodes_out, ps[0].dependencies_removed, ps[0].control_edges_removed, first[0] * 1e3,
               first[1] * 1e3, steps[0] * 1e6, steps[1] * 1e6);
        df_graph_free(g);
    }
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("graph optimisation passes (%s); ratio: step time as built / step time with the passes\n", cpu);
    bench_graph rnn;
    memset(&rnn, 0, sizeof rnn);
    rnn.name = "rnn";
    build_rnn(&rnn);
    bench(&rnn, quick ? 3 : 9, quick ? 5 : 21);
    bench_graph tf2;
    memset(&tf2, 0, sizeof tf2);
    tf2.name = "tf2_loop";
    df_tensor *want = NULL;
    if (build_tf2(&tf2, &want)) {
        /* the imported graph gives TensorFlow's output with the passes on */
        df_session *s = make_session(&tf2, 0);
        df_tensor *got = NULL;
        step(s, &tf2, &got);
        double err = 0;
        for (int64_t i = 0; i < df_tensor_num_elements(want); i++) {
            double d = (double)((const float *)df_tensor_data(got))[i] - ((const float *)df_tensor_data(want))[i];
            if (d < 0) d = -d;
            if (d > err) err = d;
        }
        printf("\ntf2_loop: largest difference from TensorFlow's output with the passes on: %.3g\n", err);
        if (err > 1e-4) die("tf2_loop", "the optimised graph differs from TensorFlow's output");
        df_tensor_release(got);
        df_session_free(s);
        bench(&tf2, quick ? 3 : 9, quick ? 10 : 41);
        df_tensor_release(want);
        df_tensor_release(tf2.values[0]);
        df_graph_free(tf2.g);
    } else {
        printf("\ntf2_loop: tests/graphdef/fixtures_tf2/tf2_matmul_loop not found (run from the repository's root)\n");
    }
    bench_dependency_cost(quick);
    for (int i = 0; i < rnn.n_feeds; i++) df_tensor_release(rnn.values[i]);
    df_graph_free(rnn.g);
    return 0;
}
