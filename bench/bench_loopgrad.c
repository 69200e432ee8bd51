/* The cost of a while loop's gradient: h = tanh(h * w + x) on a vector of 16 floats for N
   iterations (the loop of bench_training), run forward only (fetch h) and forward + backward
   (fetch d sum(h) / dw). Prints the median time per iteration of each and their ratio
   (forward+backward) / forward (target: at most 1.5x), with TensorFlow's from
   bench/peers/tf_loopgrad.py in the same run when .venv holds it.

   Usage: bench_loopgrad [--n N] [--reps R] [--threads T] [--no-peers]
          bench_loopgrad --only fwd|fwdbwd [--n N] [--reps R] [--threads T]
   The second form runs only one of the two fetches, R times, inside run_fetches(), for
   counting instructions:
       valgrind --tool=callgrind --toggle-collect=run_fetches bench_loopgrad --only fwd --n 1000
   at two N; the difference over the difference of N is the cost of one iteration. */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "../examples/digits_common.h"
#include <unistd.h>

enum { LOOP_WIDTH = 16 };
static int loop_n = 1000;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_loopgrad: %s: %s\n", what, msg);
    exit(1);
}
static df_output loop_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, loop_n));
}
static void loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const df_output *wx = (const df_output *)user;            /* w, x: captured loop invariants */
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_tanh(g, df_add(g, df_mul(g, v[1], wx[0]), wx[1]));
}

typedef struct loop { df_graph *g; df_session *s; df_output fetch[2]; } loop;

static void build(loop *L, int threads) {
    df_graph *g = L->g = df_graph_new();
    float wv[LOOP_WIDTH], xv[LOOP_WIDTH];
    digits_rng r = digits_rng_seed(3u);
    for (int i = 0; i < LOOP_WIDTH; i++) wv[i] = (float)(digits_rng_uniform(&r) - 0.5), xv[i] = (float)(digits_rng_uniform(&r) - 0.5);
    int64_t n = LOOP_WIDTH;
    df_node *init = NULL;
    int n_init = 0;
    df_tensor *xt = digits_tensor(DF_FLOAT, 1, &n, xv), *h0t = digits_tensor(DF_FLOAT, 1, &n, NULL);
    df_output wx[2] = {digits_variable(g, "w", 1, &n, wv, &init, &n_init), df_const(g, xt)};
    df_output start[2] = {df_scalar_i32(g, 0), df_const(g, h0t)}, out[2], dw;
    df_tensor_release(xt);
    df_tensor_release(h0t);
    df_while_loop(g, 2, start, loop_cond, loop_body, wx, NULL, out);
    df_output total = df_reduce_sum(g, out[1], 0, NULL, 0);
    df_gradients(g, 1, &total, NULL, 1, &wx[0], &dw);
    if (df_graph_status(g)->code) die("building the loop gradient", df_graph_status(g)->message);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    L->s = df_session_new(g, &o, &st);
    if (!L->s || df_session_run(L->s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st)) die("loop session", st.message);
    L->fetch[0] = out[1];
    L->fetch[1] = dw;
}

/* Runs fetch k `reps` times; *sum: the first element of the last value (a check). */
__attribute__((noinline)) void run_fetches(loop *L, int k, int reps, double *t, float *first) {
    df_status st;
    for (int i = 0; i < reps; i++) {
        df_tensor *v = NULL;
        double t0 = digits_now();
        if (df_session_run(L->s, NULL, NULL, 0, &L->fetch[k], &v, 1, NULL, 0, &st)) die("loop run", st.message);
        if (t) t[i] = digits_now() - t0;
        *first = *(const float *)df_tensor_data(v);
        df_tensor_release(v);
    }
}

int main(int argc, char **argv) {
    int reps = 31, threads = 0, peers = 1, only = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) loop_n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) { i++; only = !strcmp(argv[i], "fwdbwd") ? 1 : 0; }
        else { fprintf(stderr, "usage: bench_loopgrad [--n N] [--reps R] [--threads T] [--no-peers] [--only fwd|fwdbwd]\n"); return 2; }
    }
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (int)cores : 1;
    }
    if (loop_n < 1 || reps < 1) die("arguments", "--n and --reps must be positive");
    loop L;
    build(&L, threads);
    float v[2];
    if (only >= 0) {                      /* (first-run costs cancel in the difference of two N) */
        float w;
        run_fetches(&L, only, reps, NULL, &w);
        printf("%s n=%d reps=%d first=%.9g\n", only ? "fwdbwd" : "fwd", loop_n, reps, w);
    } else {
        double *t = (double *)malloc((size_t)(2 * reps) * sizeof(double)), tt[1];
        for (int w = 0; w < 2; w++) for (int k = 0; k < 2; k++) run_fetches(&L, k, 1, tt, &v[k]);
        /* forward and forward+backward alternate, so both medians see the same machine load */
        for (int i = 0; i < reps; i++) for (int k = 0; k < 2; k++) run_fetches(&L, k, 1, &t[k * reps + i], &v[k]);
        double med[2];
        for (int k = 0; k < 2; k++) {
            qsort(t + k * reps, (size_t)reps, sizeof *t, cmp_double);
            med[k] = t[k * reps + reps / 2] / loop_n * 1e6;
        }
        free(t);
        double tf[2] = {0, 0};
        if (peers) {
            char cmd[256], line[256];
            snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_loopgrad.py --n %d --reps %d --threads %d 2>/dev/null",
                     loop_n, reps, threads);
            fflush(NULL);
            FILE *f = popen(cmd, "r");
            while (f && fgets(line, sizeof line, f)) {
                sscanf(line, "while_fwd_us_per_iter %lf", &tf[0]);
                sscanf(line, "while_fwdbwd_us_per_iter %lf", &tf[1]);
            }
            if (f) pclose(f);
        }
        printf("while loop gradient, %d iterations of tanh(h*w + x) on %d floats, %d threads, median of %d runs\n",
               loop_n, LOOP_WIDTH, threads, reps);
        printf("%-12s %14s %14s %10s\n", "", "forward us/it", "fwd+bwd us/it", "ratio");
        printf("%-12s %14.3f %14.3f %9.2fx   (h[0] %.6g, dw[0] %.6g)\n", "dataflow", med[0], med[1], med[1] / med[0], v[0], v[1]);
        if (tf[0] > 0) printf("%-12s %14.3f %14.3f %9.2fx\n", "tensorflow", tf[0], tf[1], tf[1] / tf[0]);
        else printf("tensorflow   (not run: --no-peers, or no .venv with tensorflow: bench/peers/setup.sh)\n");
    }
    df_session_free(L.s);
    df_graph_free(L.g);
    return 0;
}
