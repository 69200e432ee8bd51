/* The MPI transport: `mpirun -np 4 build/mpi_test`. Rank 0 runs a while loop whose body spans
   the three worker ranks, forward and gradient, through MPI, and compares with one process.
   Exit 0: equal. */
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
int main(int argc, char **argv) {
    const char *target = NULL;
    df_status st;
    if (df_mpi_init(&argc, &argv, &target, &st) != DF_OK) { fprintf(stderr, "mpi_test: %s\n", st.message); return 2; }
    /* (only rank 0 gets here) */
    df_output x0[2], f[2][3];
    df_node *init[2];
    df_graph *g[2] = {build(&x0[0], f[0], &init[0]), build(&x0[1], f[1], &init[1])};
    df_session_options o[2];
    memset(o, 0, sizeof o);
    o[0].target = target;
    o[1].soft_placement = 1;
    df_session *s[2];
    int bad = 0;
    for (int k = 0; k < 2 && !bad; k++)
        if (!(s[k] = df_session_new(g[k], &o[k], &st)) || df_session_run(s[k], NULL, NULL, 0, NULL, NULL, 0, &init[k], 1, &st)) {
            fprintf(stderr, "mpi_test: %s session: %s\n", k ? "local" : "MPI", st.message);
            bad = 2;
        }
    for (int step = 0; !bad && step < 3; step++) {
        df_tensor *xv = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){2}, NULL), *v[2][3];
        ((float *)df_tensor_data(xv))[0] = 0.5f + (float)step;
        ((float *)df_tensor_data(xv))[1] = 1.0f;
        for (int k = 0; k < 2 && !bad; k++)
            if (df_session_run(s[k], &x0[k], &xv, 1, f[k], v[k], 3, NULL, 0, &st)) { fprintf(stderr, "mpi_test: step %d: %s\n", step, st.message); bad = 2; }
        for (int j = 0; !bad && j < 3; j++)
            for (int i = 0; i < 2; i++) {
                float a = ((float *)df_tensor_data(v[0][j]))[i], b = ((float *)df_tensor_data(v[1][j]))[i];
                if (fabsf(a - b) > 1e-4f * fabsf(b)) { fprintf(stderr, "mpi_test: step %d output %d[%d]: %g vs %g\n", step, j, i, a, b); bad = 1; }
            }
        for (int k = 0; k < 2 && bad != 2; k++) for (int j = 0; j < 3; j++) df_tensor_release(v[k][j]);
        df_tensor_release(xv);
    }
    if (!bad) printf("mpi_test: %s; 3 steps of the loop and its gradient over 3 worker ranks equal one process\n", target);
    for (int k = 0; k < 2; k++) { df_session_free(s[k]); df_graph_free(g[k]); }
    df_mpi_finalize();
    return bad;
}
