/* Parallel branches: a graph without control flow whose expensive nodes can run at the same time.
   B branches of D levels; each level of a branch is MatMul(its last value, the next branch's
   last value) scaled and put through Tanh, so every level reads two branches (n x n float32).
   Static schedules split such a graph between the inter-op threads by a plan made when it is
   compiled (src/schedule.c: each thread runs its list in order, waiting only for the values of
   other lists it reads); the tagged executor (df_session_options.dynamic_only) hands nodes to
   threads as they become ready. TensorFlow (tf.compat.v1, Grappler off, the same graph built by
   bench/peers/tf_branches.py) runs in the same run when .venv holds it.
   Every session: 2 inter-op threads and 1 intra-op thread (the split is what is measured: a
   kernel that splits itself would take both cores whatever the executor does), graph passes
   off. Also printed: the same graph with 1 inter-op thread (flat list on one thread).
   Prints microseconds per run (median of runs) and ratios.
   Usage: bench_branches [--quick] [--no-peers]      (run from the repository root) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void die(const char *what, const df_status *st) {
    fprintf(stderr, "bench_branches: %s: %s\n", what, st ? st->message : "");
    exit(1);
}

static df_output build(df_graph *g, df_output a, int width, int depth) {
    df_output cur[16] = {{0}}, prev[16] = {{0}};
    for (int j = 0; j < width; j++) cur[j] = df_mul(g, a, df_scalar_f32(g, 1.0f + 0.125f * (float)j));
    for (int l = 0; l < depth; l++) {
        for (int j = 0; j < width; j++) prev[j] = cur[j];
        for (int j = 0; j < width; j++)
            cur[j] = df_tanh(g, df_mul(g, df_matmul(g, prev[j], prev[(j + 1) % width], 0, 0), df_scalar_f32(g, 0.0625f)));
    }
    df_output s = cur[0];
    for (int j = 1; j < width; j++) s = df_add(g, s, cur[j]);
    return s;
}

/* Median microseconds per run of y with a fed, after warm-up. */
static double time_runs(df_graph *g, df_output a, df_output y, int n, int threads, int dynamic, int reps, float *check) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = threads;
    o.intra_op_threads = 1;
    o.dynamic_only = dynamic;
    o.disable_passes = DF_PASS_ALL;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) die("session", &st);
    int64_t d[2] = {n, n};
    df_tensor *av = df_tensor_new(DF_FLOAT, 2, d, &st);
    float *v = (float *)df_tensor_data(av);
    for (int i = 0; i < n * n; i++) v[i] = (float)((i * 53) % 97) / 97.0f - 0.5f;
    double *t = (double *)malloc((size_t)reps * sizeof(double));
    for (int r = -3; r < reps; r++) {
        df_tensor *out = NULL;
        double t0 = now();
        if (df_session_run(s, &a, &av, 1, &y, &out, 1, NULL, 0, &st)) die("run", &st);
        if (r >= 0) t[r] = now() - t0;
        if (r == 0) *check = ((float *)df_tensor_data(out))[n + 1];
        df_tensor_release(out);
    }
    if (!dynamic && threads > 1) {
        df_schedule_stats ss;
        df_session_schedule_stats(s, &ss);
        if (ss.flat_parallel_runs != reps + 3) fprintf(stderr, "bench_branches: the plan did not run (%lld)\n", (long long)ss.flat_parallel_runs);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = t[reps / 2] * 1e6;
    free(t);
    df_tensor_release(av);
    df_session_free(s);
    return med;
}

static double run_peer(int width, int depth, int n, int reps) {
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) return 0;
    fclose(probe);
    char cmd[256], line[256];
    snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_branches.py --width %d --depth %d --n %d --reps %d 2>/dev/null",
             width, depth, n, reps);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    double us = 0;
    while (fgets(line, sizeof line, p)) sscanf(line, "tf_branches_us %lf", &us);
    pclose(p);
    return us;
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        if (!strcmp(argv[i], "--no-peers")) peers = 0;
    }
    struct { int width, depth, n; } cases[] = {{2, 50, 32}, {4, 25, 64}, {8, 10, 128}, {2, 8, 256}};
    int reps = quick ? 21 : 101;
    printf("parallel branches (us per run, median of %d; 2 inter-op threads, 1 intra-op thread, passes and\n"
           "Grappler off; plan: static schedule split between threads; tagged: the tagged executor;\n"
           "1 thread: the flat list on one thread; ratio = other / plan)\n", reps);
    printf("%-28s %10s %10s %10s %10s %8s %8s %8s\n", "case", "plan", "tagged", "1 thread", "tensorflow", "tagged/", "1thr/", "tf/");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int w = cases[c].width, dp = cases[c].depth, n = cases[c].n;
        df_graph *g = df_graph_new();
        int64_t d[2] = {n, n};
        df_output a = df_placeholder(g, "a", DF_FLOAT, 2, d);
        df_output y = build(g, a, w, dp);
        if (df_graph_status(g)->code) die("graph", df_graph_status(g));
        float c1 = 0, c2 = 0, c3 = 0;
        double plan = time_runs(g, a, y, n, 2, 0, reps, &c1);
        double tagged = time_runs(g, a, y, n, 2, 1, reps, &c2);
        double one = time_runs(g, a, y, n, 1, 0, reps, &c3);
        if (c1 != c2 || c1 != c3) die("the schedules disagree", NULL);
        double tf = peers ? run_peer(w, dp, n, reps) : 0;
        char label[64];
        snprintf(label, sizeof label, "%d x %d levels, n=%d", w, dp, n);
        printf("%-28s %10.1f %10.1f %10.1f", label, plan, tagged, one);
        if (tf > 0) printf(" %10.1f", tf); else printf(" %10s", "-");
        printf(" %7.2fx %7.2fx", tagged / plan, one / plan);
        if (tf > 0) printf(" %7.2fx\n", tf / plan); else printf(" %8s\n", "-");
        df_graph_free(g);
    }
    return 0;
}
