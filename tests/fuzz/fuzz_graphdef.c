/* Fuzz target: GraphDef import and export.

   Any bytes may be handed to df_graph_import_graphdef: it must answer with a graph or a status,
   never crash, leak or read out of bounds. A graph it accepts must survive a round trip: its
   export must import again, to a graph with the same nodes (name, op, inputs). A failure of
   that round trip is a library bug, so it aborts, which the fuzzer reports as a crash with the
   input that caused it. (A graph with a function library, TensorFlow 2's If and While, is not
   exported: the export writes no library and says DF_UNIMPLEMENTED; it is still run.)

   Then the graph runs, with bounded effort: its functions lowered, its placeholders fed small
   zero tensors (unknown dimensions 1), its first Assigns run, then a few of its last nodes
   fetched, in a deterministic session (every node on the calling thread) whose devices have
   2 MiB of memory, so no tensor gets big, and with a deadline of 200 ms, so that a loop built
   to run without end (or a dequeue from an empty queue) ends with DF_DEADLINE_EXCEEDED.
   Graphs that touch files or other processes are not run (fuzz_bounds.h says which).
   The run must end with a status other than DF_INTERNAL (the code of the library's own bugs);
   a successful one must fill each fetch with a tensor of the fetched output's dtype. A few bits of the input pick the session options (optimisation
   passes on or off, one or two CPU devices).

   Built by ./build.sh fuzz with clang -fsanitize=fuzzer,address,undefined; by ./build.sh test
   with tests/fuzz/standalone.c (replays the committed corpus without libFuzzer). */
#include "../../dataflow.h"
#include "fuzz_bounds.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail_round_trip(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_graphdef: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

/* The second graph came from exporting the first: the same nodes in the same order. */
static void check_same_nodes(const df_graph *a, const df_graph *b) {
    char why[600];
    int n = df_graph_num_nodes(a);
    if (df_graph_num_nodes(b) != n) {
        snprintf(why, sizeof why, "%d nodes imported, %d after the round trip", n, df_graph_num_nodes(b));
        fail_round_trip("the round trip changed the graph", why);
    }
    for (int i = 0; i < n; i++) {
        const df_node *x = df_graph_node_at(a, i), *y = df_graph_node_at(b, i);
        int same = !strcmp(df_node_name(x), df_node_name(y)) && !strcmp(df_node_op(x), df_node_op(y)) &&
                   df_node_num_inputs(x) == df_node_num_inputs(y) &&
                   df_node_num_control_inputs(x) == df_node_num_control_inputs(y) &&
                   df_node_num_outputs(x) == df_node_num_outputs(y);
        for (int k = 0; same && k < df_node_num_inputs(x); k++) {
            df_output u = df_node_input(x, k), v = df_node_input(y, k);
            same = u.index == v.index && u.node && v.node && !strcmp(df_node_name(u.node), df_node_name(v.node));
        }
        if (!same) {
            snprintf(why, sizeof why, "node %d: '%.200s' (%.40s) became '%.200s' (%.40s)", i, df_node_name(x),
                     df_node_op(x), df_node_name(y), df_node_op(y));
            fail_round_trip("the round trip changed the graph", why);
        }
    }
}

/* A zero tensor of o's static type and shape (unknown dimensions 1, unknown rank a scalar);
   NULL when there is none to make (a resource, or over 4096 elements). */
static df_tensor *zero_feed(df_output o) {
    df_dtype t = df_output_dtype(o);
    int64_t dims[DF_MAX_RANK], n = 1;
    int rank = df_output_shape(o, dims);
    if (rank < 0) rank = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) dims[d] = 1;
        if (dims[d] > 4096 || (n *= dims[d]) > 4096) return NULL;
    }
    if (t == DF_STRING) {
        const char *empty[4096];
        for (int64_t i = 0; i < n; i++) empty[i] = "";
        return df_tensor_new_strings(rank, dims, empty, NULL);
    }
    if (t == DF_RESOURCE || !df_dtype_size(t)) return NULL;
    return df_tensor_new(t, rank, dims, NULL);
}

enum { MAX_FEEDS = 16, MAX_FETCHES = 3 };

static void run_graph(df_graph *g, unsigned options) {
    df_status st;
    if (df_graph_num_functions(g) && df_graph_lower_functions(g, &st) != DF_OK) return;
    if (!fuzz_runnable_with_deadline(g)) return;
    df_output feeds[MAX_FEEDS], fetches[MAX_FETCHES];
    df_tensor *feed_values[MAX_FEEDS], *fetch_values[MAX_FETCHES];
    df_node *target = NULL;
    int n_feeds = 0, n_fetches = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *n = df_graph_node_at(g, i);
        if (strcmp(df_node_op(n), "Placeholder") || n_feeds == MAX_FEEDS) continue;
        df_tensor *v = zero_feed((df_output){n, 0});
        if (v) { feeds[n_feeds] = (df_output){n, 0}; feed_values[n_feeds++] = v; }
    }
    for (int i = df_graph_num_nodes(g) - 1; i >= 0 && (n_fetches < MAX_FETCHES || !target); i--) {
        df_node *n = df_graph_node_at(g, i);
        if (df_node_num_outputs(n) > 0) { if (n_fetches < MAX_FETCHES) fetches[n_fetches++] = (df_output){n, 0}; }
        else if (!target) target = n;
    }
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.deterministic = 1;
    so.memory_limit = (size_t)2 << 20;
    so.disable_passes = options & 1 ? DF_PASS_ALL : 0;
    so.num_cpu_devices = options & 2 ? 2 : 1;
    so.soft_placement = 1;
    so.run_timeout_ms = 200;
    df_session *s = df_session_new(g, &so, &st);
    if (!s && st.code == DF_INTERNAL) fail_round_trip("making a session gave DF_INTERNAL", st.message);
    if (s) {
        df_node *assigns[4];                    /* variables initialised first, as a program would */
        int n_assigns = 0;
        for (int i = 0; i < df_graph_num_nodes(g) && n_assigns < 4; i++)
            if (!strcmp(df_node_op(df_graph_node_at(g, i)), "Assign")) assigns[n_assigns++] = df_graph_node_at(g, i);
        if (n_assigns && df_session_run(s, feeds, feed_values, n_feeds, NULL, NULL, 0, assigns, n_assigns, &st) == DF_INTERNAL)
            fail_round_trip("running the assignments gave DF_INTERNAL", st.message);
        memset(fetch_values, 0, sizeof fetch_values);
        df_code code = df_session_run(s, feeds, feed_values, n_feeds, fetches, fetch_values, n_fetches,
                                      target ? &target : NULL, target ? 1 : 0, &st);
        if (code == DF_INTERNAL) fail_round_trip("a run gave DF_INTERNAL", st.message);
        for (int k = 0; k < n_fetches; k++) {
            if (code == DF_OK && (!fetch_values[k] || df_tensor_dtype(fetch_values[k]) != df_output_dtype(fetches[k]))) {
                char why[400];
                snprintf(why, sizeof why, "fetch %d ('%.200s:0', %s) gave %s", k, df_node_name(fetches[k].node),
                         df_dtype_name(df_output_dtype(fetches[k])),
                         fetch_values[k] ? df_dtype_name(df_tensor_dtype(fetch_values[k])) : "no tensor");
                fprintf(stderr, "fuzz_graphdef: a successful run did not fill its fetches: %s\n", why);
                abort();
            }
            df_tensor_release(fetch_values[k]);
        }
        df_session_free(s);
    }
    for (int k = 0; k < n_feeds; k++) df_tensor_release(feed_values[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_status st;
    df_graph *g = df_graph_import_graphdef(data, size, &st);
    if (!g) return 0;
    /* The frame analysis on whatever the importer accepted: it must report, not crash. */
    df_status validate;
    df_graph_validate(g, &validate);

    void *out = NULL;
    size_t out_len = 0;
    df_code code = df_graph_export_graphdef(g, &out, &out_len);
    if (code == DF_RESOURCE_EXHAUSTED) { df_graph_free(g); return 0; }
    /* The export writes no function library, so it refuses a graph with functional ops (If,
       While, calls: TensorFlow 2's graphs); such a graph still runs, below, after lowering. */
    int functional = code == DF_UNIMPLEMENTED && df_graph_num_functions(g) > 0;
    if (code != DF_OK && !functional) fail_round_trip("an imported graph does not export", df_code_name(code));

    if (code == DF_OK) {
        df_graph *again = df_graph_import_graphdef(out, out_len, &st);
        if (!again) fail_round_trip("an exported graph does not import again", st.message);
        check_same_nodes(g, again);
        df_graph_free(again);
    }
    free(out);

    unsigned options = 0;                       /* (a hash of the input: mutations flip it) */
    for (size_t i = 0; i < size; i++) options = options * 31 + data[i];
    run_graph(g, options >> 7);
    df_graph_free(g);
    return 0;
}
