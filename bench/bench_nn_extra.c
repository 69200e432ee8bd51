/* bench_nn_extra: DepthwiseConv2dNative (forward and both backprops) on MobileNetV2's depthwise
   shapes, and FusedBatchNormV3 training with its gradient op, against PyTorch (eager, NCHW:
   F.conv2d(groups=c, padding=1) and F.batch_norm(training=True) with autograd for the
   gradients; bench/peers/torch_nn_extra.py), with 1 and 2 threads on both sides (our session's
   intra-op threads; torch.set_num_threads).

   Ours: a session runs one op whose float inputs are fed (so nothing is folded), NHWC; the
   time is the whole df_session_run call. Warm-up calls, then the median of individually timed
   calls; the peer does the same with the same counts. Ratio = peer time / dataflow time: above
   1, we are faster.

   --cpu measures process CPU time instead of wall time on both sides (clock_gettime's
   CLOCK_PROCESS_CPUTIME_ID, Python's time.process_time): on a machine shared with other work the
   wall time of a call longer than a scheduler slice grows with the load, its CPU time does not.
   With more than one thread CPU time adds the threads' times (and counts a peer's spinning).

   Build and run from the repository root (the peer runs from .venv, or the Python given with
   --python):
     cc -std=c11 -O2 -march=native -I. bench/bench_nn_extra.c dataflow.c -o build/bench_nn_extra -lm -lpthread
     ./build/bench_nn_extra [--quick] [--no-peers] [--cpu] [--python PATH] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <unistd.h>

enum { N_DW = 10, N_BN = 2, N_THREADS = 2, MAX_OPS = 3 };
typedef struct { int64_t n, h, w, c, s; } dw_case;
typedef struct { int64_t n, h, w, c; } bn_case;
static const int thread_list[N_THREADS] = {1, 2};
static int use_cpu_time;
static double clock_s(void) {
    if (!use_cpu_time) return now();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_nn_extra: %s: %s\n", what, msg);
    exit(1);
}
static df_tensor *filled(df_dtype t, int rank, const int64_t *dims, unsigned seed, double scale) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (!x) die("df_tensor_new", "out of memory");
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        seed = seed * 1103515245u + 12345u;
        double v = ((double)((seed >> 8) & 0xffff) / 32768.0 - 1.0) * scale;
        if (t == DF_INT32) ((int32_t *)df_tensor_data(x))[i] = (int32_t)dims[i];
        else ((float *)df_tensor_data(x))[i] = (float)v;
    }
    return x;
}
static df_session *new_session(df_graph *g, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = 1;
    o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) die("df_session_new", st.message);
    return s;
}
/* Median seconds of one df_session_run of `fetch` with the feeds. */
static double time_run(df_graph *g, int threads, const df_output *feeds, df_tensor *const *values, int n_feeds,
                       df_output fetch, int warm, int reps) {
    df_session *s = new_session(g, threads);
    double t[64];
    df_status st;
    for (int i = 0; i < warm + reps; i++) {
        df_tensor *o = NULL;
        double t0 = clock_s();
        if (df_session_run(s, feeds, (df_tensor **)values, n_feeds, &fetch, &o, 1, NULL, 0, &st)) die("run", st.message);
        double dt = clock_s() - t0;
        df_tensor_release(o);
        if (i >= warm) t[i - warm] = dt;
    }
    df_session_free(s);
    return median(t, reps);
}
static df_output window(df_graph *g, const char *op, const df_output *in, int n, int64_t stride) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    int64_t st[4] = {1, stride, stride, 1};
    df_op_set_attr_int_list(b, "strides", st, 4);
    df_op_set_attr_string(b, "padding", "SAME");
    df_output o = {df_op_finish(b), 0};
    return o;
}
/* ours[case][thread][op]: forward, input gradient, filter gradient. */
static void run_dw(const dw_case *c, int warm, int reps, double ours[N_THREADS][MAX_OPS]) {
    int64_t oh = (c->h + c->s - 1) / c->s, ow = (c->w + c->s - 1) / c->s;
    int64_t xd[4] = {c->n, c->h, c->w, c->c}, fd[4] = {3, 3, c->c, 1}, yd[4] = {c->n, oh, ow, c->c};
    df_tensor *x = filled(DF_FLOAT, 4, xd, 1, 1.0), *f = filled(DF_FLOAT, 4, fd, 2, 0.1), *dy = filled(DF_FLOAT, 4, yd, 3, 1.0);
    df_graph *g = df_graph_new();
    df_output px = df_placeholder(g, "x", DF_FLOAT, 4, xd), pf = df_placeholder(g, "f", DF_FLOAT, 4, fd);
    df_output pdy = df_placeholder(g, "dy", DF_FLOAT, 4, yd);
    df_tensor *xs = filled(DF_INT32, 1, (int64_t[]){4}, 0, 0), *fs = filled(DF_INT32, 1, (int64_t[]){4}, 0, 0);
    for (int i = 0; i < 4; i++) { ((int32_t *)df_tensor_data(xs))[i] = (int32_t)xd[i]; ((int32_t *)df_tensor_data(fs))[i] = (int32_t)fd[i]; }
    df_output fwd_in[2] = {px, pf}, bi_in[3] = {df_const(g, xs), pf, pdy}, bf_in[3] = {px, df_const(g, fs), pdy};
    df_output y = window(g, "DepthwiseConv2dNative", fwd_in, 2, c->s);
    df_output bi = window(g, "DepthwiseConv2dNativeBackpropInput", bi_in, 3, c->s);
    df_output bf = window(g, "DepthwiseConv2dNativeBackpropFilter", bf_in, 3, c->s);
    if (df_graph_status(g)->code) die("building the depthwise graph", df_graph_status(g)->message);
    df_output feeds[3] = {px, pf, pdy};
    df_tensor *values[3] = {x, f, dy};
    for (int t = 0; t < N_THREADS; t++) {
        ours[t][0] = time_run(g, thread_list[t], feeds, values, 2, y, warm, reps);
        df_output fi[2] = {pf, pdy}, ff[2] = {px, pdy};
        df_tensor *vi[2] = {f, dy}, *vf[2] = {x, dy};
        ours[t][1] = time_run(g, thread_list[t], fi, vi, 2, bi, warm, reps);
        ours[t][2] = time_run(g, thread_list[t], ff, vf, 2, bf, warm, reps);
    }
    df_graph_free(g);
    df_tensor_release(x); df_tensor_release(f); df_tensor_release(dy); df_tensor_release(xs); df_tensor_release(fs);
}
static df_node *bn_node(df_graph *g, const char *op, const df_output *in, int n) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    df_op_set_attr_float(b, "epsilon", 0.001f);
    df_op_set_attr_bool(b, "is_training", 1);
    return df_op_finish(b);
}
/* ours[thread][op]: forward (training), gradient op. */
static void run_bn(const bn_case *c, int warm, int reps, double ours[N_THREADS][MAX_OPS]) {
    int64_t xd[4] = {c->n, c->h, c->w, c->c}, cd = c->c;
    df_tensor *x = filled(DF_FLOAT, 4, xd, 4, 1.0), *dy = filled(DF_FLOAT, 4, xd, 5, 1.0);
    df_tensor *sc = filled(DF_FLOAT, 1, &cd, 6, 1.0), *of = filled(DF_FLOAT, 1, &cd, 7, 1.0);
    df_graph *g = df_graph_new();
    df_output px = df_placeholder(g, "x", DF_FLOAT, 4, xd), pdy = df_placeholder(g, "dy", DF_FLOAT, 4, xd);
    df_output in[5] = {px, df_const(g, sc), df_const(g, of), df_const(g, of), df_const(g, sc)};
    df_node *bn = bn_node(g, "FusedBatchNormV3", in, 5);
    df_output gin[6] = {pdy, px, in[1], df_const(g, of), df_const(g, sc), df_const(g, of)};
    df_node *gr = bn_node(g, "FusedBatchNormGradV3", gin, 6);
    if (df_graph_status(g)->code) die("building the batch norm graph", df_graph_status(g)->message);
    df_output feeds[2] = {px, pdy}, y = {bn, 0}, dx = {gr, 0};
    df_tensor *values[2] = {x, dy};
    for (int t = 0; t < N_THREADS; t++) {
        ours[t][0] = time_run(g, thread_list[t], feeds, values, 1, y, warm, reps);
        ours[t][1] = time_run(g, thread_list[t], feeds, values, 2, dx, warm, reps);
    }
    df_graph_free(g);
    df_tensor_release(x); df_tensor_release(dy); df_tensor_release(sc); df_tensor_release(of);
}

/* The peer's figures: theirs_dw[case][thread][op], theirs_bn[case][thread][op] (0: none). */
static void run_peer(const char *python, const dw_case *dw, const bn_case *bn, int warm, int reps, char *version,
                     char *skip, double theirs_dw[N_DW][N_THREADS][MAX_OPS], double theirs_bn[N_BN][N_THREADS][MAX_OPS]) {
    FILE *probe = fopen(python, "r");
    if (!probe) { snprintf(skip, 256, "no %s (bench/peers/setup.sh makes .venv; or give --python)", python); return; }
    fclose(probe);
    char cmd[4096], line[512];
    int len = snprintf(cmd, sizeof cmd, "%s bench/peers/torch_nn_extra.py --threads 1,2 --warm %d --reps %d%s", python, warm, reps,
                   use_cpu_time ? " --cpu" : "");
    for (int i = 0; i < N_DW; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --dw %lld,%lld,%lld,%lld,%lld", (long long)dw[i].n,
                        (long long)dw[i].h, (long long)dw[i].w, (long long)dw[i].c, (long long)dw[i].s);
    for (int i = 0; i < N_BN; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --bn %lld,%lld,%lld,%lld", (long long)bn[i].n,
                        (long long)bn[i].h, (long long)bn[i].w, (long long)bn[i].c);
    snprintf(cmd + len, sizeof cmd - (size_t)len, " 2>/dev/null");
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(skip, 256, "cannot run the peer"); return; }
    while (fgets(line, sizeof line, f)) {
        int c, t;
        double v;
        char what[32];
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "skip ", 5)) snprintf(skip, 256, "%.240s", line + 5);
        sscanf(line, "version %63s", version);
        int slot = -1;
        if (sscanf(line, "dw %d %d %31s %lf", &c, &t, what, &v) == 4 && c >= 0 && c < N_DW && (slot = t - 1) >= 0 && slot < N_THREADS) {
            int op = !strcmp(what, "fwd_us") ? 0 : !strcmp(what, "bwd_input_us") ? 1 : !strcmp(what, "bwd_filter_us") ? 2 : -1;
            if (op >= 0) theirs_dw[c][slot][op] = v * 1e-6;
        }
        if (sscanf(line, "bn %d %d %31s %lf", &c, &t, what, &v) == 4 && c >= 0 && c < N_BN && (slot = t - 1) >= 0 && slot < N_THREADS) {
            int op = !strcmp(what, "fwd_us") ? 0 : !strcmp(what, "bwd_us") ? 1 : -1;
            if (op >= 0) theirs_bn[c][slot][op] = v * 1e-6;
        }
    }
    pclose(f);
}
static void cells(double ours, double theirs) {
    printf(" %9.3f", ours * 1e3);
    if (theirs > 0) printf(" %9.3f %6.2fx", theirs * 1e3, theirs / ours);
    else printf(" %9s %7s", "-", "-");
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1;
    const char *python = ".venv/bin/python";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--cpu")) use_cpu_time = 1;
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else { fprintf(stderr, "usage: bench_nn_extra [--quick] [--no-peers] [--cpu] [--python PATH]\n"); return 2; }
    }
    const int warm = 2, reps = quick ? 5 : 15;
    static const dw_case dw[N_DW] = {
        {1, 112, 112, 32, 1}, {1, 56, 56, 144, 1}, {1, 28, 28, 192, 2}, {1, 14, 14, 576, 1}, {1, 7, 7, 960, 1},
        {8, 112, 112, 32, 1}, {8, 56, 56, 144, 1}, {8, 28, 28, 192, 2}, {8, 14, 14, 576, 1}, {8, 7, 7, 960, 1}};
    static const bn_case bn[N_BN] = {{8, 56, 56, 144}, {8, 14, 14, 576}};
    char model[256];
    cpu_model(model, sizeof model);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("cpu: %s, %ld cores online; dataflow kernels: %s\n", model, cores, df_kernel_isa());
    fflush(stdout);
    static double ours_dw[N_DW][N_THREADS][MAX_OPS], ours_bn[N_BN][N_THREADS][MAX_OPS];
    static double theirs_dw[N_DW][N_THREADS][MAX_OPS], theirs_bn[N_BN][N_THREADS][MAX_OPS];
    for (int i = 0; i < N_DW; i++) run_dw(&dw[i], warm, reps, ours_dw[i]);
    for (int i = 0; i < N_BN; i++) run_bn(&bn[i], warm, reps, ours_bn[i]);
    char version[64] = "", skip[256] = "";
    if (peers) run_peer(python, dw, bn, warm, reps, version, skip, theirs_dw, theirs_bn);
    else snprintf(skip, sizeof skip, "--no-peers");
    printf("peer: pytorch %s%s%s\n", version[0] ? version : "-", skip[0] ? "; skipped: " : "", skip);

    static const char *const dw_ops[3] = {"forward", "input grad", "filter grad"};
    printf("\n1. DepthwiseConv2dNative 3x3, multiplier 1, SAME, NHWC float32 (PyTorch: NCHW groups=c);\n"
           "   median ms (%s) of %d calls after %d warm-up; ratio = pytorch / dataflow (above 1: we are faster)\n",
           use_cpu_time ? "process CPU time" : "wall time", reps, warm);
    printf("%-24s %3s %-11s %9s %9s %7s\n", "n h w c / stride", "thr", "op", "dataflow", "pytorch", "ratio");
    for (int i = 0; i < N_DW; i++)
        for (int t = 0; t < N_THREADS; t++)
            for (int op = 0; op < 3; op++) {
                char shape[64];
                snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld s%lld", (long long)dw[i].n, (long long)dw[i].h,
                         (long long)dw[i].w, (long long)dw[i].c, (long long)dw[i].s);
                printf("%-24s %3d %-11s", shape, thread_list[t], dw_ops[op]);
                cells(ours_dw[i][t][op], theirs_dw[i][t][op]);
                printf("\n");
            }
    printf("\n2. FusedBatchNormV3 training, NHWC float32 (PyTorch: F.batch_norm training=True, NCHW);\n"
           "   gradient: FusedBatchNormGradV3 (PyTorch: autograd of x, weight, bias)\n");
    printf("%-24s %3s %-11s %9s %9s %7s\n", "n h w c", "thr", "op", "dataflow", "pytorch", "ratio");
    for (int i = 0; i < N_BN; i++)
        for (int t = 0; t < N_THREADS; t++)
            for (int op = 0; op < 2; op++) {
                char shape[64];
                snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)bn[i].n, (long long)bn[i].h,
                         (long long)bn[i].w, (long long)bn[i].c);
                printf("%-24s %3d %-11s", shape, thread_list[t], op ? "gradient" : "forward");
                cells(ours_bn[i][t][op], theirs_bn[i][t][op]);
                printf("\n");
            }
    return 0;
}
