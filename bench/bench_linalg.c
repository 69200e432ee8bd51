/* bench_linalg.c - Einsum in Keras MultiHeadAttention's shapes (its four equations, batch 8,
   sequence 128, 8 heads of 64, model width 512), TopKV2 (k = 5 of 1e6; k = 100 of each of 1000
   rows of 1000) and Cumsum (1000 x 1000 along either axis), float32, against TensorFlow
   (tf.function) and PyTorch on the same number of threads, each side in its own process after
   warm-ups. Prints the median wall time and process CPU time (all threads; the steadier figure
   on a loaded machine) and the ratios peer / ours of each (above 1: we are faster), and checks
   that the three sides' outputs sum to the same value.

   Usage: bench_linalg [--no-peers] [--threads N]   (run from the repository root; the peers
   need .venv with tensorflow and torch, which bench/peers/setup.sh makes) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <stdint.h>

enum { K_EINSUM, K_TOPK, K_CUMSUM };
#define B 8
#define T 128
#define N 8
#define H 64
#define DM 512
static const struct { const char *name; int kind, n_in, rank[2]; int64_t dims[2][4]; const char *eq; int arg; } CASES[] = {
    {"einsum_qk", K_EINSUM, 2, {4, 4}, {{B, T, N, H}, {B, T, N, H}}, "aecd,abcd->acbe", 0},
    {"einsum_av", K_EINSUM, 2, {4, 4}, {{B, N, T, T}, {B, T, N, H}}, "acbe,aecd->abcd", 0},
    {"einsum_proj", K_EINSUM, 2, {3, 3}, {{B, T, DM}, {DM, N, H}}, "abc,cde->abde", 0},
    {"einsum_out", K_EINSUM, 2, {4, 3}, {{B, T, N, H}, {N, H, DM}}, "abcd,cde->abe", 0},
    {"topk_1e6_k5", K_TOPK, 1, {1}, {{1000000}}, NULL, 5},
    {"topk_1000x1000_k100", K_TOPK, 1, {2}, {{1000, 1000}}, NULL, 100},
    {"cumsum_1000x1000_ax1", K_CUMSUM, 1, {2}, {{1000, 1000}}, NULL, 1},
    {"cumsum_1000x1000_ax0", K_CUMSUM, 1, {2}, {{1000, 1000}}, NULL, 0},
};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))
static double ours[N_CASES], ours_cpu[N_CASES], ours_sum[N_CASES], peer[2][N_CASES], peer_cpu[2][N_CASES], peer_sum[2][N_CASES];
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* element i of input k: ((i * 7919 + 13 k) mod 1000) / 500 - 1, as the peer script */
static df_tensor *input(int rank, const int64_t *dims, int k) {
    df_tensor *t = df_tensor_new(DF_FLOAT, rank, dims, NULL);
    float *p = (float *)df_tensor_data(t);
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) p[i] = (float)((double)((i * 7919 + 13 * k) % 1000) / 500.0 - 1.0);
    return t;
}
static void run_ours(int c, int threads, int reps) {
    df_graph *g = df_graph_new();
    df_output x[2];
    df_tensor *v[2];
    for (int i = 0; i < CASES[c].n_in; i++) {
        x[i] = df_placeholder(g, NULL, DF_FLOAT, CASES[c].rank[i], CASES[c].dims[i]);
        v[i] = input(CASES[c].rank[i], CASES[c].dims[i], i);
    }
    df_op_builder *b = df_op_new(g, CASES[c].kind == K_EINSUM ? "Einsum" : CASES[c].kind == K_TOPK ? "TopKV2" : "Cumsum", NULL);
    if (CASES[c].kind == K_EINSUM) {
        df_op_add_input_list(b, x, 2);
        df_op_set_attr_string(b, "equation", CASES[c].eq);
    } else {
        df_op_add_input(b, x[0]);
        df_op_add_input(b, df_scalar_i32(g, CASES[c].arg));
    }
    df_output y = {df_op_finish(b), 0};
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = threads;
    o.inter_op_threads = 1;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    double ts[64], cs[64];
    for (int r = -3; r < reps; r++) {
        df_tensor *out = NULL;
        double t0 = now(), c0 = cpu_now();
        df_session_run(s, x, v, CASES[c].n_in, &y, &out, 1, NULL, 0, &st);
        double t1 = now(), c1 = cpu_now();
        if (st.code != DF_OK) { printf("%s: %s\n", CASES[c].name, st.message); break; }
        if (r >= 0) { ts[r] = (t1 - t0) * 1e6; cs[r] = (c1 - c0) * 1e6; }
        if (r == 0) {
            double sum = 0;
            for (int64_t i = 0; i < df_tensor_num_elements(out); i++) sum += ((const float *)df_tensor_data(out))[i];
            ours_sum[c] = sum;
        }
        df_tensor_release(out);
    }
    if (st.code == DF_OK) { ours[c] = median(ts, reps); ours_cpu[c] = median(cs, reps); }
    for (int i = 0; i < CASES[c].n_in; i++) df_tensor_release(v[i]);
    df_session_free(s);
    df_graph_free(g);
}
static int find(const char *name) {
    for (int c = 0; c < N_CASES; c++) if (!strcmp(CASES[c].name, name)) return c;
    return -1;
}
static void run_peers(int threads) {
    char cmd[256], line[256], a[64], w[16];
    double v, vc;
    const char *py = getenv("DF_PEER_PYTHON") ? getenv("DF_PEER_PYTHON") : ".venv/bin/python";
    snprintf(cmd, sizeof cmd, "%s bench/peers/tf_torch_linalg.py --threads %d 2>/dev/null", py, threads);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p)) {
        int isv = sscanf(line, "value %63s %15s %lf", a, w, &v) == 3, ist = !isv && sscanf(line, "time %63s %15s %lf %lf", a, w, &v, &vc) == 4;
        int c = find(a), k = !strcmp(w, "torch");
        if (c < 0 || (!isv && !ist)) continue;
        if (isv) peer_sum[k][c] = v;
        else { peer[k][c] = v; peer_cpu[k][c] = vc; }
    }
    if (pclose(p)) printf("(peer script failed: run %s bench/peers/tf_torch_linalg.py by hand)\n", py);
}
int main(int argc, char **argv) {
    int peers = 1, threads = 2, reps = 9;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    }
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("bench_linalg: %s, %d threads, float32, median of %d runs (ms); ratio = peer / ours\n", cpu, threads, reps);
    for (int c = 0; c < N_CASES; c++) run_ours(c, threads, reps);
    if (peers) run_peers(threads);
    printf("%-22s %21s %21s %21s %21s %21s  %s\n", "case (wall | cpu ms)", "ours", "tf", "torch", "tf/ours", "torch/ours", "sums agree");
    for (int c = 0; c < N_CASES; c++) {
        printf("%-22s %10.3f %10.3f", CASES[c].name, ours[c] / 1000, ours_cpu[c] / 1000);
        for (int k = 0; k < 2; k++) {
            if (peer[k][c] > 0) printf(" %10.3f %10.3f", peer[k][c] / 1000, peer_cpu[k][c] / 1000);
            else printf(" %10s %10s", "-", "-");
        }
        for (int k = 0; k < 2; k++) {
            if (peer[k][c] > 0 && ours[c] > 0) printf(" %9.2fx %9.2fx", peer[k][c] / ours[c], peer_cpu[k][c] / ours_cpu[c]);
            else printf(" %10s %10s", "-", "-");
        }
        int agree = 1;
        for (int k = 0; k < 2; k++)
            if (peer[k][c] > 0) agree &= fabs(peer_sum[k][c] - ours_sum[c]) <= 1e-3 * (1 + fabs(ours_sum[c]));
        printf("  %s\n", peers ? (agree ? "yes" : "NO") : "-");
    }
    return 0;
}
