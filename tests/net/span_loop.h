/* A while loop whose body spans three workers (x * w on task 1, + 0.5 on task 2, the predicate
   on task 0), forward and its gradient, run on a cluster and in one process: the check that
   the network-namespace and MPI tests share. */
#ifndef SPAN_LOOP_H
#define SPAN_LOOP_H
#include "../../dataflow.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static df_output cond_fn(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, df_reduce_sum(g, v[0], 0, NULL, 0), df_scalar_f32(g, 50)); }
static void body_fn(df_graph *g, void *u, const df_output *v, df_output *next) {
    df_output w = *(const df_output *)u;
    df_graph_push_device(g, "/job:worker/task:1");
    df_output y = df_mul(g, v[0], w);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:2");
    next[0] = df_add(g, y, df_scalar_f32(g, 0.5f));
    df_graph_pop_device(g);
}
static df_graph *build(df_output *x0, df_output f[3], df_node **init) {
    df_graph *g = df_graph_new();
    *x0 = df_placeholder(g, "x0", DF_FLOAT, 1, (const int64_t[]){2});
    df_graph_push_device(g, "/job:worker/task:0");
    df_output w = df_variable(g, "w", DF_FLOAT, 1, (const int64_t[]){2});
    df_tensor *w0 = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){2}, NULL);
    ((float *)df_tensor_data(w0))[0] = 1.5f;
    ((float *)df_tensor_data(w0))[1] = 1.25f;
    *init = df_assign(g, w, df_const(g, w0));
    df_tensor_release(w0);
    df_while_loop(g, 1, x0, cond_fn, body_fn, &w, NULL, &f[0]);
    df_output loss = df_reduce_sum(g, f[0], 0, NULL, 0), xs[2] = {w, *x0};
    df_gradients(g, 1, &loss, NULL, 2, xs, &f[1]);
    df_graph_pop_device(g);
    return g;
}
/* Three steps on the cluster at `target` and in one process; 0 when every output agrees within
   1e-4 (relative), 1 when one differs, 2 when a run fails. Messages start with `who`. */
static int span_loop_check(const char *who, const char *target) {
    df_output x0[2], f[2][3];
    df_node *init[2];
    df_graph *g[2] = {build(&x0[0], f[0], &init[0]), build(&x0[1], f[1], &init[1])};
    df_session_options o[2];
    memset(o, 0, sizeof o);
    o[0].target = target;
    o[1].soft_placement = 1;
    df_status st;
    df_session *s[2] = {NULL, NULL};
    int bad = 0;
    for (int k = 0; k < 2 && !bad; k++)
        if (!(s[k] = df_session_new(g[k], &o[k], &st)) || df_session_run(s[k], NULL, NULL, 0, NULL, NULL, 0, &init[k], 1, &st)) {
            fprintf(stderr, "%s: %s session: %s\n", who, k ? "local" : "cluster", st.message);
            bad = 2;
        }
    for (int step = 0; !bad && step < 3; step++) {
        df_tensor *xv = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){2}, NULL), *v[2][3] = {{NULL, NULL, NULL}, {NULL, NULL, NULL}};
        ((float *)df_tensor_data(xv))[0] = 0.5f + (float)step;
        ((float *)df_tensor_data(xv))[1] = 1.0f;
        for (int k = 0; k < 2 && !bad; k++)
            if (df_session_run(s[k], &x0[k], &xv, 1, f[k], v[k], 3, NULL, 0, &st)) { fprintf(stderr, "%s: step %d: %s\n", who, step, st.message); bad = 2; }
        for (int j = 0; !bad && j < 3; j++)
            for (int i = 0; i < 2; i++) {
                float a = ((float *)df_tensor_data(v[0][j]))[i], b = ((float *)df_tensor_data(v[1][j]))[i];
                if (fabsf(a - b) > 1e-4f * fabsf(b)) { fprintf(stderr, "%s: step %d output %d[%d]: %g vs %g\n", who, step, j, i, a, b); bad = 1; }
            }
        for (int k = 0; k < 2; k++) for (int j = 0; j < 3; j++) df_tensor_release(v[k][j]);
        df_tensor_release(xv);
    }
    if (!bad) printf("%s: %d partitions on %s; 3 steps of the loop and its gradient equal one process\n", who, df_session_num_partitions(s[0]), target);
    for (int k = 0; k < 2; k++) { df_session_free(s[k]); df_graph_free(g[k]); }
    return bad;
}
#endif
