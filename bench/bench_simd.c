/* The vector kernels on one thread: AVX2 against AVX-512 (df_set_kernel_isa) and PyTorch, at
   sizes that live in L1, in L2 and in memory, against the memory's own speed.

   Ops: Add and Mul (with a second tensor of the same shape), Relu, Exp, Tanh, Sigmoid, Softmax
   (rows of 1024) and MaxPool (3x3, stride 1, SAME, NHWC with 64 channels), float32. Each is
   timed as a chain of `chain` nodes y = op(y) (Add: y = y + b) in one session run, the first
   node reading the fed x: after it the elementwise ops compute in place (buffer forwarding), so
   an L1 case stays in L1. Time per node = run time / chain (it includes the executor's cost of
   a node, a few tens of ns, which is what a user gets; it matters only at the L1 size). One
   intra-op and one inter-op thread; the graph passes off (they would fold Relu(Relu(x))).
   Sizes (elements a tensor): L1 2048 (8 KiB), L2 65536 (256 KiB), memory 16M (64 MiB;
   --quick: 4M).
   Printed per case and kernel set: ns per element and GB/s (bytes = inputs read + output
   written by one node: 12 per element for Add and Mul, 8 for the rest, nominal for Softmax
   and MaxPool), the AVX-512 speed-up over AVX2, PyTorch's time (bench/peers/torch_simd.py,
   torch.set_num_threads(1), run in its own process before ours) and the ratio PyTorch time /
   ours (above 1: we are faster). Then memcpy on one thread at each size (GB/s counting the
   bytes read and written, the same way), the ceiling for the memory-sized rows: each row's
   fraction of it.
   Timing: warm-up runs, then `reps` (default 7) timed runs of each kernel set, alternating;
   medians. Also the load average (the machine may be shared).
   Usage: bench_simd [--quick] [--no-peers] [--reps N] [--python PATH]
   (run from the repository root: the peer is bench/peers/torch_simd.py, run by .venv/bin/python
   unless --python says otherwise) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <stdint.h>

enum { N_OPS = 8, N_TIERS = 3, MAX_REPS = 51 };
static const char *const ops[N_OPS] = {"Add", "Mul", "Relu", "Exp", "Tanh", "Sigmoid", "Softmax", "MaxPool"};
static const char *const tiers[N_TIERS] = {"L1", "L2", "mem"};
static const int chains[N_TIERS] = {64, 16, 2};

static void die(const char *what, const char *why) {
    fprintf(stderr, "bench_simd: %s: %s\n", what, why);
    exit(1);
}
/* The shape of op's tensors at a tier (elements n). */
static int shape_of(int op, int64_t n, int64_t *d) {
    if (!strcmp(ops[op], "Softmax")) { d[0] = n / 1024; d[1] = 1024; return 2; }
    if (!strcmp(ops[op], "MaxPool")) {
        int64_t pix = n / 64, h = 1;
        while (h * h * 4 <= pix) h *= 2;          /* h x (pix / h) pixels, h a power of two */
        d[0] = 1; d[1] = h; d[2] = pix / h; d[3] = 64;
        return 4;
    }
    d[0] = n;
    return 1;
}
static df_output node(df_graph *g, int op, df_output y, df_output b) {
    const char *name = ops[op];
    if (!strcmp(name, "Softmax")) return df_softmax(g, y);
    df_op_builder *bd = df_op_new(g, !strcmp(name, "Add") ? "AddV2" : name, NULL);
    df_op_add_input(bd, y);
    if (!strcmp(name, "Add") || !strcmp(name, "Mul")) df_op_add_input(bd, b);
    if (!strcmp(name, "MaxPool")) {
        int64_t k[4] = {1, 3, 3, 1}, s[4] = {1, 1, 1, 1};
        df_op_set_attr_type(bd, "T", DF_FLOAT);
        df_op_set_attr_int_list(bd, "ksize", k, 4);
        df_op_set_attr_int_list(bd, "strides", s, 4);
        df_op_set_attr_string(bd, "padding", "SAME");
    }
    return (df_output){df_op_finish(bd), 0};
}

typedef struct bench_case {
    df_graph *g;
    df_session *s;
    df_output x, b, y;
    df_tensor *xv, *bv;
    int64_t n;
    int two;
} bench_case;
static void case_make(bench_case *c, int op, int tier, int64_t n) {
    int64_t d[4];
    int rank = shape_of(op, n, d);
    c->n = 1;
    for (int i = 0; i < rank; i++) c->n *= d[i];
    c->two = op < 2;
    c->g = df_graph_new();
    c->x = df_placeholder(c->g, "x", DF_FLOAT, rank, d);
    c->b = df_placeholder(c->g, "b", DF_FLOAT, rank, d);
    df_output y = c->x;
    for (int i = 0; i < chains[tier]; i++) y = node(c->g, op, y, c->b);
    c->y = y;
    if (df_graph_status(c->g)->code) die(ops[op], df_graph_status(c->g)->message);
    c->xv = df_tensor_new(DF_FLOAT, rank, d, NULL);
    c->bv = df_tensor_new(DF_FLOAT, rank, d, NULL);
    float *xp = (float *)df_tensor_data(c->xv), *bp = (float *)df_tensor_data(c->bv);
    uint32_t r = 7;
    for (int64_t i = 0; i < c->n; i++) {
        r = r * 1103515245u + 12345u;
        xp[i] = (float)((double)(r >> 8) / 16777216.0 * 2 - 1);
        bp[i] = op == 1 ? ((r >> 3 & 1) ? 1.0f : -1.0f) : 0.01f * (float)((double)(r >> 9 & 1023) / 1024.0);
    }
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = 1;
    o.disable_passes = DF_PASS_ALL;
    df_status st;
    c->s = df_session_new(c->g, &o, &st);
    if (!c->s) die("df_session_new", st.message);
}
static double case_run(bench_case *c) {
    df_output feeds[2] = {c->x, c->b};
    df_tensor *fv[2] = {c->xv, c->bv}, *out = NULL;
    df_status st;
    double t0 = now();
    if (df_session_run(c->s, feeds, fv, c->two ? 2 : 1, &c->y, &out, 1, NULL, 0, &st)) die("run", st.message);
    double t = now() - t0;
    df_tensor_release(out);
    return t;
}
static void case_free(bench_case *c) {
    df_session_free(c->s);
    df_graph_free(c->g);
    df_tensor_release(c->xv);
    df_tensor_release(c->bv);
}

/* memcpy of n floats on this thread, GB/s counting read + written bytes; median of reps. */
static double memcpy_rate(int64_t n, int reps) {
    size_t bytes = (size_t)n * sizeof(float);
    int inner = n <= 65536 ? (int)(((int64_t)1 << 26) / n) : 1;
    char *a = malloc(bytes), *b = malloc(bytes);
    if (!a || !b) die("memcpy", "out of memory");
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double t[MAX_REPS];
    for (int r = -2; r < reps; r++) {
        double t0 = now();
        for (int i = 0; i < inner; i++) { memcpy(i & 1 ? a : b, i & 1 ? b : a, bytes); __asm__ volatile("" ::: "memory"); }
        if (r >= 0) t[r] = (now() - t0) / inner;
    }
    free(a);
    free(b);
    return 2.0 * (double)bytes / median(t, reps) * 1e-9;
}

/* PyTorch's ns per element for every case (0: none), from its own process. */
static void run_peer(const char *python, int64_t *sizes, int reps, double peer[N_OPS][N_TIERS], char *version, char *skip) {
    char cases[2048] = "", cmd[2600];
    size_t at = 0;
    for (int op = 0; op < N_OPS; op++)
        for (int t = 0; t < N_TIERS; t++) {
            int64_t d[4];
            int rank = shape_of(op, sizes[t], d);
            at += (size_t)snprintf(cases + at, sizeof cases - at, "%s%s:%s:", at ? "," : "", ops[op], tiers[t]);
            for (int i = 0; i < rank; i++) at += (size_t)snprintf(cases + at, sizeof cases - at, "%s%lld", i ? "x" : "", (long long)d[i]);
            at += (size_t)snprintf(cases + at, sizeof cases - at, ":%d", chains[t]);
        }
    snprintf(cmd, sizeof cmd, "%s bench/peers/torch_simd.py --reps %d --cases %s", python, reps, cases);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(skip, 256, "cannot run %s", python); return; }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char a[64], b[64];
        double v;
        if (!strncmp(line, "skip ", 5)) { snprintf(skip, 256, "%.200s", line + 5); skip[strcspn(skip, "\n")] = 0; }
        else if (!strncmp(line, "version ", 8)) { snprintf(version, 64, "%.40s", line + 8); version[strcspn(version, "\n")] = 0; }
        else if (sscanf(line, "%63s %63s %lf", a, b, &v) == 3)
            for (int op = 0; op < N_OPS; op++)
                for (int t = 0; t < N_TIERS; t++)
                    if (!strcmp(a, ops[op]) && !strcmp(b, tiers[t])) peer[op][t] = v;
    }
    if (pclose(f) != 0 && !skip[0]) snprintf(skip, 256, "the peer failed (%s)", python);
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1, reps = 7;
    const char *python = ".venv/bin/python";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else { fprintf(stderr, "usage: bench_simd [--quick] [--no-peers] [--reps N] [--python PATH]\n"); return 2; }
    }
    if (reps < 5) reps = 5;
    if (reps > MAX_REPS) reps = MAX_REPS;
    int64_t sizes[N_TIERS] = {2048, 65536, quick ? (int64_t)1 << 22 : (int64_t)1 << 24};
    char cpu[256], version[64] = "-", skip[256] = "";
    cpu_model(cpu, sizeof cpu);
    double load[3] = {0, 0, 0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) { if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1; fclose(la); }
    int has512 = df_set_kernel_isa("avx512") == DF_OK, has2 = df_set_kernel_isa("avx2") == DF_OK;
    df_set_kernel_isa("auto");
    printf("bench_simd: %s; kernel sets: avx2 %s, avx512 %s; one thread; medians of %d runs; load average %.2f %.2f %.2f\n",
           cpu, has2 ? "yes" : "no", has512 ? "yes" : "no", reps, load[0], load[1], load[2]);
    if (!has2) { printf("no AVX2 on this CPU: nothing to compare\n"); return 0; }

    double peer[N_OPS][N_TIERS] = {{0}};
    if (peers) run_peer(python, sizes, reps, peer, version, skip);
    else snprintf(skip, sizeof skip, "--no-peers");
    printf("peer: pytorch %s%s%s\n", version, skip[0] ? "; skipped: " : "", skip);

    double mc[N_TIERS];
    for (int t = 0; t < N_TIERS; t++) mc[t] = memcpy_rate(sizes[t], reps);

    printf("\n%-8s %-4s %9s %6s | %9s %7s | %9s %7s | %7s | %9s %7s | %s\n", "op", "size", "elements", "chain",
           "avx2 ns/e", "GB/s", "512 ns/e", "GB/s", "512/avx2", "torch ns/e", "ratio", "of memcpy");
    for (int op = 0; op < N_OPS; op++)
        for (int t = 0; t < N_TIERS; t++) {
            bench_case c;
            case_make(&c, op, t, sizes[t]);
            double tm[2][MAX_REPS];
            int warm = t == 2 ? 2 : 5;
            for (int r = -warm; r < reps; r++)
                for (int k = 0; k < 2; k++) {
                    if (k == 1 && !has512) { tm[1][r < 0 ? 0 : r] = 0; continue; }
                    df_set_kernel_isa(k ? "avx512" : "avx2");
                    double v = case_run(&c);
                    if (r >= 0) tm[k][r] = v;
                }
            df_set_kernel_isa("auto");
            double per = 1e9 / ((double)chains[t] * (double)c.n);
            double a2 = median(tm[0], reps) * per, a5 = has512 ? median(tm[1], reps) * per : 0;
            double bpe = op < 2 ? 12 : 8;
            double best = a5 > 0 ? a5 : a2;
            char pt[32] = "-", ratio[32] = "-", frac[32] = "";
            if (peer[op][t] > 0) { snprintf(pt, sizeof pt, "%.4f", peer[op][t]); snprintf(ratio, sizeof ratio, "%.2fx", peer[op][t] / best); }
            if (t == 2) snprintf(frac, sizeof frac, "%.0f%%", 100 * bpe / best / mc[t]);
            printf("%-8s %-4s %9lld %6d | %9.4f %7.1f | %9.4f %7.1f | %6.2fx | %9s %7s | %s\n", ops[op], tiers[t], (long long)c.n,
                   chains[t], a2, bpe / a2, a5, a5 > 0 ? bpe / a5 : 0, a5 > 0 ? a2 / a5 : 0, pt, ratio, frac);
            fflush(stdout);
            case_free(&c);
        }
    printf("\nmemcpy, one thread (GB/s, read + written):");
    for (int t = 0; t < N_TIERS; t++) printf(" %s %.1f", tiers[t], mc[t]);
    printf("\n(ratio = PyTorch time / our best kernel set's time; 'of memcpy' = the row's GB/s / memcpy's at that size)\n");
    if (la && (la = fopen("/proc/loadavg", "r"))) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) == 3) printf("load average after: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
        fclose(la);
    }
    return 0;
}
