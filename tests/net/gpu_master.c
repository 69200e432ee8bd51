/* A master built without DATAFLOW_CUDA places on a worker's GPU (build.sh: gpu_master_check):
   task 0 is a dfworker serving a GPU (--gpus 1; built with CUDA, or the emulated GPU), task 1 a
   plain one. y = a b on task 0's GPU, fed from here, z = y + 1 on task 1's CPU, u = 2z back on
   the GPU, and Lgamma (no GPU kernel) asked for on the GPU falls back to task 0's CPU with soft
   placement; the results must equal one process's, and each node must run where it asked.
   Usage: gpu_master host:port,host:port   (exit 0: all good; 1: not; 2: no run) */
#include "../../dataflow.h"
#include <stdio.h>
#include <string.h>

static df_graph *build(int placed, df_output *in, df_output *out) {
    df_graph *g = df_graph_new();
    in[0] = df_placeholder(g, "a", DF_FLOAT, 2, (const int64_t[]){6, 5});
    in[1] = df_placeholder(g, "b", DF_FLOAT, 2, (const int64_t[]){5, 7});
    if (placed) df_graph_push_device(g, "/job:worker/task:0/device:GPU:0");
    out[0] = df_matmul(g, in[0], in[1], 0, 0);
    if (placed) { df_graph_pop_device(g); df_graph_push_device(g, "/job:worker/task:1/device:CPU:0"); }
    out[1] = df_add(g, out[0], df_scalar_f32(g, 1));
    if (placed) { df_graph_pop_device(g); df_graph_push_device(g, "/job:worker/task:0/device:GPU:0"); }
    out[2] = df_mul(g, out[1], df_scalar_f32(g, 2));
    df_op_builder *b = df_op_new(g, "Lgamma", "lg");
    df_op_add_input(b, df_add(g, df_mul(g, out[2], out[2]), df_scalar_f32(g, 1)));
    out[3] = (df_output){df_op_finish(b), 0};
    if (placed) df_graph_pop_device(g);
    return g;
}
static const char *device_of(df_session *s, const char *name) {
    for (int i = 0; i < df_session_num_partitions(s); i++) {
        const char *dev = NULL;
        const df_graph *p = df_session_partition(s, i, &dev);
        if (p && df_graph_find(p, name)) return dev;
    }
    return "nothing";
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: gpu_master host:port,host:port\n"); return 2; }
    df_output in[2], out[4], rin[2], rout[4];
    df_graph *g = build(1, in, out), *r = build(0, rin, rout);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = argv[1];
    o.soft_placement = 1;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) { fprintf(stderr, "gpu_master: %s\n", st.message); return 2; }
    df_session *rs = df_session_new(r, NULL, &st);
    df_tensor *feed[2] = {df_tensor_new(DF_FLOAT, 2, (const int64_t[]){6, 5}, NULL), df_tensor_new(DF_FLOAT, 2, (const int64_t[]){5, 7}, NULL)};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 35; i++) ((float *)df_tensor_data(feed[k]))[i] = (float)((i * 5 + k) % 9) * 0.25f - 1.0f;
    df_tensor *x[4] = {NULL, NULL, NULL, NULL}, *y[4] = {NULL, NULL, NULL, NULL};
    int bad = 0;
    if (df_session_run(s, in, feed, 2, out, x, 4, NULL, 0, &st)) { fprintf(stderr, "gpu_master: %s\n", st.message); bad = 1; }
    if (!bad && df_session_run(rs, rin, feed, 2, rout, y, 4, NULL, 0, &st)) { fprintf(stderr, "gpu_master: reference: %s\n", st.message); bad = 1; }
    for (int k = 0; !bad && k < 4; k++)
        for (int i = 0; i < 42 && !bad; i++) {
            float a = ((float *)df_tensor_data(x[k]))[i], b = ((float *)df_tensor_data(y[k]))[i];
            if (!(a - b < 1e-3f && b - a < 1e-3f)) { fprintf(stderr, "gpu_master: fetch %d [%d]: %g, one process %g\n", k, i, a, b); bad = 1; }
        }
    const char *want[4][2] = {{df_node_name(out[0].node), "/job:worker/replica:0/task:0/device:GPU:0"},
                              {df_node_name(out[1].node), "/job:worker/replica:0/task:1/device:CPU:0"},
                              {df_node_name(out[2].node), "/job:worker/replica:0/task:0/device:GPU:0"},
                              {"lg", "/job:worker/replica:0/task:0/device:CPU:0"}};
    for (int k = 0; !bad && k < 4; k++)
        if (strcmp(device_of(s, want[k][0]), want[k][1])) { fprintf(stderr, "gpu_master: %s ran on %s, not %s\n", want[k][0], device_of(s, want[k][0]), want[k][1]); bad = 1; }
    if (!bad) printf("gpu_master: a MatMul on task 0's GPU, fed from a master without CUDA, equals one process's; Lgamma fell back to task 0's CPU\n");
    for (int k = 0; k < 4; k++) { df_tensor_release(x[k]); df_tensor_release(y[k]); }
    df_tensor_release(feed[0]); df_tensor_release(feed[1]);
    df_session_free(s); df_session_free(rs);
    df_graph_free(g); df_graph_free(r);
    return bad;
}
