/* demo: a while loop with a cond inside (Collatz step counts), run in a session.

   while (n != 1) { n = n % 2 == 0 ? n / 2 : 3 * n + 1; steps += 1; }

   Build and run: ./build.sh   (or: cc -O2 -DDATAFLOW_IMPLEMENTATION examples/demo.c dataflow.c -lm -lpthread) */
#include "../dataflow.h"
#include <stdio.h>
#include <stdlib.h>

static df_output not_one(df_graph *g, void *user, const df_output *vars) {
    (void)user;
    return df_not_equal(g, vars[0], df_scalar_i64(g, 1));
}

static void halve(df_graph *g, void *user, df_output *outs) {
    df_output n = *(const df_output *)user;
    df_op_builder *b = df_op_new(g, "FloorDiv", NULL);
    df_op_add_input(b, n);
    df_op_add_input(b, df_scalar_i64(g, 2));
    outs[0].node = df_op_finish(b);
    outs[0].index = 0;
}

static void triple_plus_one(df_graph *g, void *user, df_output *outs) {
    df_output n = *(const df_output *)user;
    outs[0] = df_add(g, df_mul(g, n, df_scalar_i64(g, 3)), df_scalar_i64(g, 1));
}

static void collatz_step(df_graph *g, void *user, const df_output *vars, df_output *next) {
    (void)user;
    df_output n = vars[0];
    df_output even = df_equal(g, df_floor_mod_i(g, n, df_scalar_i64(g, 2)), df_scalar_i64(g, 0));
    df_cond(g, even, 1, halve, triple_plus_one, &n, &next[0]);
    next[1] = df_add(g, vars[1], df_scalar_i64(g, 1));
}

int main(void) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output start = df_placeholder(g, "start", DF_INT64, 0, NULL);
    df_output init[2] = {start, df_scalar_i64(g, 0)}, result[2];
    df_while_options opts = {0};
    opts.name = "collatz";
    if (df_while_loop(g, 2, init, not_one, collatz_step, NULL, &opts, result) != DF_OK) {
        fprintf(stderr, "building the graph failed: %s\n", df_graph_status(g)->message);
        return 1;
    }
    df_session *s = df_session_new(g, NULL, &st);
    if (!s) { fprintf(stderr, "session: %s\n", st.message); return 1; }
    printf("dataflow %s: Collatz step counts from a while loop with a cond inside\n", df_version());
    const int64_t starts[] = {1, 6, 7, 27, 97, 871};
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        df_tensor *feed = df_tensor_from_data(DF_INT64, 0, NULL, &starts[i], sizeof starts[i], &st);
        df_tensor *steps = NULL;
        if (df_session_run(s, &start, &feed, 1, &result[1], &steps, 1, NULL, 0, &st) != DF_OK) {
            fprintf(stderr, "run failed: %s\n", st.message);
            return 1;
        }
        printf("  %4lld reaches 1 after %3lld steps\n", (long long)starts[i], (long long)*(int64_t *)df_tensor_data(steps));
        df_tensor_release(steps);
        df_tensor_release(feed);
    }
    FILE *f = fopen("build/demo.dot", "w");
    if (f) { df_graph_write_dot(g, f); fclose(f); printf("graph picture: build/demo.dot (%d nodes)\n", df_graph_num_nodes(g)); }
    df_session_free(s);
    df_graph_free(g);
    return 0;
}
