/* bench_random2 - throughput of the random2 ops against TensorFlow in the same run:
   StatelessRandomUniformV2 (float), StatelessRandomNormalV2 (float) and RandomUniformInt
   (int32 in [0, 1000), seed 1) making 16M elements, with 1 and 2 intra-op threads. Each is one
   session run of a graph whose shape is fed (so no pass folds the op), the op run as a target;
   the median of 7 runs after 2 warm ones. TensorFlow's numbers come from bench/peers/tf_random2.py
   (TF1 graph-mode Session, same threads), run as a separate process after ours.

   Build: cc -std=c11 -O2 -march=native -I. bench/bench_random2.c dataflow.c -o build/bench_random2 -lm -lpthread
   Usage: build/bench_random2 [--no-peers] [--n N]      (run from the repository root) */
#define _POSIX_C_SOURCE 200809L
#include "dataflow.h"
#include "bench/bench_util.h"
#include <stdint.h>

#define N_OPS 3
static const char *const op_names[N_OPS] = {"StatelessRandomUniformV2", "StatelessRandomNormalV2", "RandomUniformInt"};

static df_output scalar_const(df_graph *g, df_dtype t, const void *v, int rank, int64_t n0) {
    df_status st;
    df_status_clear(&st);
    df_tensor *x = df_tensor_new(t, rank, &n0, &st);
    memcpy(df_tensor_data(x), v, df_dtype_size(t) * (size_t)(rank ? n0 : 1));
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}

/* Median ms of one run of op k making n elements with the given intra-op threads. */
static double time_ours(int k, int64_t n, int threads) {
    df_status st;
    df_status_clear(&st);
    df_graph *g = df_graph_new();
    df_output shape = df_placeholder(g, "shape", DF_INT32, 1, (int64_t[]){1});
    df_op_builder *b = df_op_new(g, op_names[k], "r");
    df_op_add_input(b, shape);
    if (k < 2) {
        uint64_t key = 12345, ctr[2] = {0, 678};
        int32_t alg = 1;
        df_op_add_input(b, scalar_const(g, DF_UINT64, &key, 1, 1));
        df_op_add_input(b, scalar_const(g, DF_UINT64, ctr, 1, 2));
        df_op_add_input(b, scalar_const(g, DF_INT32, &alg, 0, 0));
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
    } else {
        int32_t lo = 0, hi = 1000;
        df_op_add_input(b, scalar_const(g, DF_INT32, &lo, 0, 0));
        df_op_add_input(b, scalar_const(g, DF_INT32, &hi, 0, 0));
        df_op_set_attr_int(b, "seed", 1);
    }
    df_node *y = df_op_finish(b);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = threads;
    o.inter_op_threads = 1;
    df_session *s = df_session_new(g, &o, &st);
    int64_t one = 1;
    df_tensor *sv = df_tensor_new(DF_INT32, 1, &one, &st);
    *(int32_t *)df_tensor_data(sv) = (int32_t)n;
    double t[7];
    for (int r = 0; r < 9 && st.code == DF_OK; r++) {
        double t0 = now();
        df_session_run(s, &shape, &sv, 1, NULL, NULL, 0, &y, 1, &st);
        if (r >= 2) t[r - 2] = (now() - t0) * 1e3;
    }
    if (st.code != DF_OK) { fprintf(stderr, "%s: %s\n", op_names[k], st.message); exit(1); }
    df_tensor_release(sv);
    df_session_free(s);
    df_graph_free(g);
    return median(t, 7);
}

int main(int argc, char **argv) {
    int peers = 1;
    int64_t n = 1 << 24;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoll(argv[++i]);
    }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("bench_random2: %lld elements, CPU %s\n", (long long)n, cpu);
    double ours[N_OPS][2], tf[N_OPS][2];
    for (int k = 0; k < N_OPS; k++)
        for (int t = 0; t < 2; t++) { ours[k][t] = time_ours(k, n, t + 1); tf[k][t] = -1; }
    FILE *probe = fopen(".venv/bin/python", "r");
    if (probe) fclose(probe);
    else if (peers) { printf("(TensorFlow skipped: no .venv; bench/peers/setup.sh makes it)\n"); peers = 0; }
    for (int t = 0; peers && t < 2; t++) {
        char cmd[256], line[256];
        snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_random2.py --threads %d --n %lld 2>/dev/null", t + 1, (long long)n);
        FILE *p = popen(cmd, "r");
        while (p && fgets(line, sizeof line, p)) {
            char name[64];
            int th;
            double ms;
            if (sscanf(line, "%63s %d %lf", name, &th, &ms) != 3) continue;
            for (int k = 0; k < N_OPS; k++) if (!strcmp(name, op_names[k]) && th == t + 1) tf[k][t] = ms;
        }
        if (p) pclose(p);
    }
    printf("| op (16M elements) | threads | ours ms | TF ms | TF / ours |\n|---|---|---|---|---|\n");
    for (int k = 0; k < N_OPS; k++)
        for (int t = 0; t < 2; t++) {
            if (tf[k][t] > 0)
                printf("| %s | %d | %.1f | %.1f | %.2f |\n", op_names[k], t + 1, ours[k][t], tf[k][t], tf[k][t] / ours[k][t]);
            else printf("| %s | %d | %.1f | - | - |\n", op_names[k], t + 1, ours[k][t]);
        }
    return 0;
}
