/* Fuzz target: GraphDef import and export.

   Any bytes may be handed to df_graph_import_graphdef: it must answer with a graph or a status,
   never crash, leak or read out of bounds. A graph it accepts must survive a round trip: its
   export must import again, to a graph with the same nodes (name, op, inputs). A failure of
   that round trip is a library bug, so it aborts, which the fuzzer reports as a crash with the
   input that caused it.

   Built by ./build.sh fuzz with clang -fsanitize=fuzzer,address,undefined; by ./build.sh test
   with tests/fuzz/standalone.c (replays the committed corpus without libFuzzer). */
#include "../../dataflow.h"
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
    if (code != DF_OK) fail_round_trip("an imported graph does not export", df_code_name(code));

    df_graph *again = df_graph_import_graphdef(out, out_len, &st);
    if (!again) fail_round_trip("an exported graph does not import again", st.message);
    check_same_nodes(g, again);

    df_graph_free(again);
    free(out);
    df_graph_free(g);
    return 0;
}
