/* Memory speed of elementwise ops and reductions on large tensors, against memcpy.

   On 16M floats (64 MiB a tensor), through a session with 1 and 2 intra-op (and inter-op)
   threads: Add and Mul (two inputs), Relu, Neg and Square (one), and the reductions Sum, Mean
   and Max over all axes and over the last axis (rows of 1024). Bytes = inputs read + output
   written; the op's rate in GB/s is set against memcpy moving the same bytes (copying half of
   them: it reads that half and writes it) on as many threads, timed just after each run of the
   op. Printed: the best run of each (what it does when nothing else runs: on a shared machine
   the medians swing with the load) and their ratio, then both medians. The bar: at
   least 80% of memcpy's rate.

   Inputs are fed (the session reads the fed tensors in place) and the output is fetched. Timing:
   warm-up runs, then individually timed runs; the memcpy the same.
   Usage: bench_memspeed [--quick] [--threads N] [--reps N]
   (--quick: 4M floats, fewer runs; --reps: timed runs per row, 21 by default) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <pthread.h>
#include <stdint.h>

enum { ROW = 1024, N_OPS = 11, MAX_THREADS = 16 };
#define DF_MIN(a, b) ((a) < (b) ? (a) : (b))
static const char *const op_names[N_OPS] = {"Add", "Mul", "Relu", "Neg", "Square", "Sum (all)", "Sum (last axis)",
                                            "Mean (all)", "Mean (last axis)", "Max (all)", "Max (last axis)"};

static void die(const char *what, const char *why) {
    fprintf(stderr, "bench_memspeed: %s: %s\n", what, why);
    exit(1);
}

/* memcpy on `threads` threads: workers released by a barrier, each copying one slice. */
typedef struct copier {
    int threads, quit;
    pthread_t tid[MAX_THREADS];
    pthread_barrier_t start, done;
    char *dst;
    const char *src;
    size_t bytes;
} copier;
typedef struct copier_arg { copier *c; int i; } copier_arg;
static copier_arg copier_args[MAX_THREADS];
static void copy_slice(copier *c, int i) {
    size_t per = (c->bytes / (size_t)c->threads + 63) & ~(size_t)63, lo = per * (size_t)i;
    if (lo >= c->bytes) return;
    memcpy(c->dst + lo, c->src + lo, c->bytes - lo < per ? c->bytes - lo : per);
}
static void *copier_main(void *arg) {
    copier_arg *a = (copier_arg *)arg;
    for (;;) {
        pthread_barrier_wait(&a->c->start);
        if (a->c->quit) return NULL;
        copy_slice(a->c, a->i);
        pthread_barrier_wait(&a->c->done);
    }
}
static void copier_start(copier *c, int threads) {
    memset(c, 0, sizeof *c);
    c->threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    pthread_barrier_init(&c->start, NULL, (unsigned)c->threads);
    pthread_barrier_init(&c->done, NULL, (unsigned)c->threads);
    for (int i = 1; i < c->threads; i++) {
        copier_args[i].c = c, copier_args[i].i = i;
        if (pthread_create(&c->tid[i], NULL, copier_main, &copier_args[i])) die("pthread_create", "cannot start a thread");
    }
}
static void copier_run(copier *c, char *dst, const char *src, size_t bytes) {
    c->dst = dst, c->src = src, c->bytes = bytes;
    if (c->threads > 1) pthread_barrier_wait(&c->start);
    copy_slice(c, 0);
    if (c->threads > 1) pthread_barrier_wait(&c->done);
}
static void copier_stop(copier *c) {
    c->quit = 1;
    if (c->threads > 1) pthread_barrier_wait(&c->start);
    for (int i = 1; i < c->threads; i++) pthread_join(c->tid[i], NULL);
    pthread_barrier_destroy(&c->start);
    pthread_barrier_destroy(&c->done);
}

static df_tensor *filled(int rank, const int64_t *dims, uint64_t seed) {
    df_status st;
    df_tensor *t = df_tensor_new(DF_FLOAT, rank, dims, &st);
    if (!t) die("df_tensor_new", st.message);
    float *p = (float *)df_tensor_data(t);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (float)((double)(x >> 11) * (4.0 / 9007199254740992.0) - 2.0);
    }
    return t;
}

int main(int argc, char **argv) {
    int quick = 0, only_threads = -1, reps_arg = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps_arg = atoi(argv[++i]);
        else { fprintf(stderr, "usage: bench_memspeed [--quick] [--threads N] [--reps N]\n"); return 2; }
    }
    int thread_list[2] = {1, 2}, n_threads = 2;
    if (only_threads >= 0) thread_list[0] = only_threads, n_threads = 1;
    const int64_t n = quick ? (1 << 22) : (1 << 24);
    const int warm = quick ? 2 : 3, reps = reps_arg > 0 ? reps_arg : quick ? 7 : 21;
    int64_t flat[1] = {n}, matrix[2] = {n / ROW, ROW};
    df_tensor *a = filled(1, flat, 1), *b = filled(1, flat, 2), *m = filled(2, matrix, 3);

    df_graph *g = df_graph_new();
    df_output pa = df_placeholder(g, "a", DF_FLOAT, 1, flat), pb = df_placeholder(g, "b", DF_FLOAT, 1, flat);
    df_output pm = df_placeholder(g, "m", DF_FLOAT, 2, matrix);
    int32_t last = 1;
    df_output outs[N_OPS];
    outs[0] = df_add(g, pa, pb);
    outs[1] = df_mul(g, pa, pb);
    outs[2] = df_relu(g, pa);
    outs[3] = df_neg(g, pa);
    outs[4] = df_square(g, pa);
    outs[5] = df_reduce_sum(g, pa, 0, NULL, 0);
    outs[6] = df_reduce_sum(g, pm, 1, &last, 0);
    outs[7] = df_reduce_mean(g, pa, 0, NULL, 0);
    outs[8] = df_reduce_mean(g, pm, 1, &last, 0);
    for (int k = 0; k < 2; k++) {      /* Max: the generic builder (no typed helper); axis 0 of a or 1 of m */
        df_op_builder *bl = df_op_new(g, "Max", NULL);
        df_op_add_input(bl, k ? pm : pa);
        df_op_add_input(bl, df_scalar_i32(g, k));
        outs[9 + k] = (df_output){df_op_finish(bl), 0};
    }
    if (df_graph_status(g)->code) die("building the graph", df_graph_status(g)->message);

    size_t max_copy = (size_t)(3 * n) * sizeof(float) / 2;
    char *src = (char *)malloc(max_copy), *dst = (char *)malloc(max_copy);
    if (!src || !dst) die("malloc", "out of memory");
    memset(src, 1, max_copy);
    memset(dst, 2, max_copy);
    double *t_op = (double *)malloc((size_t)reps * sizeof(double)), *t_cp = (double *)malloc((size_t)reps * sizeof(double));
    if (!t_op || !t_cp) die("malloc", "out of memory");

    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("bench_memspeed: %lld floats (%.0f MiB a tensor), rows of %d for the last axis; %s\n", (long long)n,
           (double)n * 4 / 1048576.0, ROW, cpu);
    printf("%-18s %7s %9s %9s %9s %9s %9s %9s\n", "op", "threads", "MB moved", "GB/s", "memcpy", "ratio", "median", "memcpy");
    int below = 0;
    for (int k = 0; k < n_threads; k++) {
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.inter_op_threads = o.intra_op_threads = thread_list[k];
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        if (!s) die("df_session_new", st.message);
        copier c;
        copier_start(&c, thread_list[k]);
        for (int op = 0; op < N_OPS; op++) {
            int two = op < 2, rows = op == 6 || op == 8 || op == 10;
            df_output feeds[2] = {rows ? pm : pa, pb};
            df_tensor *values[2] = {rows ? m : a, b};
            double in_bytes = (two ? 2.0 : 1.0) * (double)n * 4.0;
            double out_bytes = op < 5 ? (double)n * 4.0 : rows ? (double)(n / ROW) * 4.0 : 4.0;
            double bytes = in_bytes + out_bytes;
            for (int i = 0; i < warm + reps; i++) {
                df_tensor *y = NULL;
                double t0 = now();
                if (df_session_run(s, feeds, values, two ? 2 : 1, &outs[op], &y, 1, NULL, 0, &st)) die(op_names[op], st.message);
                double dt = now() - t0;
                df_tensor_release(y);
                t0 = now();
                copier_run(&c, dst, src, (size_t)(bytes / 2));
                double dc = now() - t0;
                if (i >= warm) t_op[i - warm] = dt, t_cp[i - warm] = dc;
            }
            /* the best run of each: what it does when nothing else runs (medians follow the load) */
            double best_op = t_op[0], best_cp = t_cp[0], mid_op = median(t_op, reps), mid_cp = median(t_cp, reps);
            for (int i = 0; i < reps; i++) best_op = DF_MIN(best_op, t_op[i]), best_cp = DF_MIN(best_cp, t_cp[i]);
            double ours = bytes / best_op * 1e-9, copy = bytes / best_cp * 1e-9;
            if (ours < 0.8 * copy) below++;
            printf("%-18s %7d %9.0f %9.2f %9.2f %8.0f%% %9.2f %9.2f\n", op_names[op], thread_list[k], bytes / 1e6, ours, copy,
                   100.0 * ours / copy, bytes / mid_op * 1e-9, bytes / mid_cp * 1e-9);
            fflush(stdout);
        }
        copier_stop(&c);
        df_session_free(s);
    }
    printf("GB/s, memcpy and ratio: the best of %d runs each; then the medians' GB/s\n", reps);
    printf("%d row%s below 80%% of memcpy (best against best)\n", below, below == 1 ? "" : "s");
    free(t_op); free(t_cp); free(src); free(dst);
    df_graph_free(g);
    df_tensor_release(a); df_tensor_release(b); df_tensor_release(m);
    return 0;
}
