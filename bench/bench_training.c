/* Training benchmarks: the time of one training step (forward, df_minimize's gradient, Adam
   update) of the two digits models of examples/ on a fixed batch of 64 images:

     mlp   relu(x W1 + b1) W2 + b2, 64-64-10
     rnn   8 rows of 8 pixels through h = tanh(x_t Wx + h Wh + b) in a while loop, 32 units,
           then h Wo + bo

   and, in the same run, the same models in TensorFlow (tf.compat.v1 graph mode, tf.while_loop,
   AdamOptimizer: bench/peers/tf_training.py) and PyTorch (eager, a Python loop over the rows,
   torch.optim.Adam: bench/peers/torch_training.py), when .venv holds them (bench/peers/setup.sh).
   All three start from the same weights and use the same batch: this program writes them to
   build/training_*.npy and the peers read them; the loss of the first step, printed for each,
   shows that they compute the same function.

   Also the cost of a while loop's gradient: h = tanh(h * w + x) on a vector of 16 for 1000
   iterations, run forward only (fetch h) and forward + backward (fetch dsum(h)/dw); the ratio
   of the two per-iteration times (target: at most 2).

   Prints a table with ratios (peer time / dataflow time). Usage:
       bench_training [--quick] [--no-peers] [--threads N]      (N: 0 means the number of cores) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "../examples/digits_common.h"
#include <unistd.h>

enum { BATCH = 64, MLP_HIDDEN = 64, RNN_HIDDEN = 32, LOOP_N = 1000, LOOP_WIDTH = 16 };
#define LEARNING_RATE 0.01
#define NPY_DIR "build"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_training: %s: %s\n", what, msg);
    exit(1);
}
static void check_graph(df_graph *g, const char *what) {
    if (df_graph_status(g)->code) die(what, df_graph_status(g)->message);
}

/* A Glorot-uniform (or zero, fan_in 0) weight: a variable initialised from it, and the same
   values in build/training_<name>.npy for the peers. */
static df_output weight(df_graph *g, const char *name, int fan_in, int fan_out, digits_rng *r,
                        df_node **init_ops, int *n_init) {
    int64_t dims[2] = {fan_in, fan_out};
    int rank = fan_in ? 2 : 1, n = fan_in ? fan_in * fan_out : fan_out;
    float *w = (float *)calloc((size_t)n, sizeof(float));
    if (!w) die("malloc", "out of memory");
    if (fan_in) digits_glorot(r, w, fan_in, fan_out);
    const int64_t *shape = fan_in ? dims : &dims[1];
    df_output v = digits_variable(g, name, rank, shape, w, init_ops, n_init);
    df_tensor *t = digits_tensor(DF_FLOAT, rank, shape, w);
    char path[256];
    snprintf(path, sizeof path, NPY_DIR "/training_%s.npy", name);
    if (df_tensor_write_npy(t, path) != DF_OK) die(path, "cannot write the .npy file");
    df_tensor_release(t);
    free(w);
    return v;
}

typedef struct model {
    df_graph   *g;
    df_session *s;
    df_output   x, y, loss;
    df_node    *train;
} model;


/* The examples' models, the same graphs (examples/digits_mlp.c, examples/digits_rnn.c); the
   RNN's h0 is a constant here, as the batch is fixed. */
static void build(model *m, int rnn, int threads) {
    df_graph *g = m->g = df_graph_new();
    digits_rng r = digits_rng_seed(rnn ? 2u : 1u);
    df_node *init_ops[8];
    int n_init = 0;
    m->y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){BATCH});
    df_output logits, vars[5];
    int n_vars;
    if (!rnn) {
        m->x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){BATCH, DIGITS_PIXELS});
        vars[0] = weight(g, "mlp_w1", DIGITS_PIXELS, MLP_HIDDEN, &r, init_ops, &n_init);
        vars[1] = weight(g, "mlp_b1", 0, MLP_HIDDEN, &r, init_ops, &n_init);
        vars[2] = weight(g, "mlp_w2", MLP_HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
        vars[3] = weight(g, "mlp_b2", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
        n_vars = 4;
        df_output h = df_relu(g, df_add(g, df_matmul(g, m->x, vars[0], 0, 0), vars[1]));
        logits = df_add(g, df_matmul(g, h, vars[2], 0, 0), vars[3]);
    } else {
        m->x = df_placeholder(g, "x", DF_FLOAT, 3, (const int64_t[]){BATCH, DIGITS_SIDE, DIGITS_SIDE});
        digits_rnn_weights w;
        w.x = m->x;
        w.wx = vars[0] = weight(g, "rnn_wx", DIGITS_SIDE, RNN_HIDDEN, &r, init_ops, &n_init);
        w.wh = vars[1] = weight(g, "rnn_wh", RNN_HIDDEN, RNN_HIDDEN, &r, init_ops, &n_init);
        w.b = vars[2] = weight(g, "rnn_b", 0, RNN_HIDDEN, &r, init_ops, &n_init);
        vars[3] = weight(g, "rnn_wo", RNN_HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
        vars[4] = weight(g, "rnn_bo", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
        n_vars = 5;
        df_tensor *zeros = digits_tensor(DF_FLOAT, 2, (const int64_t[]){BATCH, RNN_HIDDEN}, NULL);
        df_output init[2] = {df_scalar_i32(g, 0), df_const(g, zeros)}, out[2];
        df_tensor_release(zeros);
        df_while_options opts = {0};
        opts.name = "rnn";
        df_while_loop(g, 2, init, digits_rows_left, digits_rnn_step, &w, &opts, out);
        logits = df_add(g, df_matmul(g, out[1], vars[3], 0, 0), vars[4]);
    }
    m->loss = df_sparse_softmax_cross_entropy(g, logits, m->y);
    df_optimizer adam = {0};
    adam.kind = DF_OPT_ADAM;
    adam.learning_rate = LEARNING_RATE;
    df_node *adam_init = NULL, *init = df_no_op(g, init_ops, n_init);
    m->train = df_minimize(g, m->loss, n_vars, vars, &adam, &adam_init);
    check_graph(g, rnn ? "building the RNN" : "building the MLP");
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    if (!(m->s = df_session_new(g, &o, &st))) die("session", st.message);
    if (df_session_run(m->s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) ||
        (adam_init && df_session_run(m->s, NULL, NULL, 0, NULL, NULL, 0, &adam_init, 1, &st)))
        die("initialising", st.message);
}

/* Median microseconds of a training step over `reps` steps after `warm`; *loss0: the first loss. */
static double time_steps(model *m, df_tensor *x, df_tensor *y, int warm, int reps, double *loss0) {
    df_status st;
    double *t = (double *)malloc((size_t)reps * sizeof(double));
    df_output feeds[2] = {m->x, m->y};
    df_tensor *values[2] = {x, y};
    for (int i = 0; i < warm + reps; i++) {
        df_tensor *loss = NULL;
        double t0 = digits_now();
        if (df_session_run(m->s, feeds, values, 2, &m->loss, &loss, 1, &m->train, 1, &st)) die("training step", st.message);
        double dt = digits_now() - t0;
        if (i == 0) *loss0 = *(const float *)df_tensor_data(loss);
        df_tensor_release(loss);
        if (i >= warm) t[i - warm] = dt;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = t[reps / 2] * 1e6;
    free(t);
    return med;
}

/* ---- The while loop's gradient cost ---- */
static df_output loop_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, LOOP_N));
}
static void loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const df_output *wx = (const df_output *)user;            /* w, x: captured loop invariants */
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_tanh(g, df_add(g, df_mul(g, v[1], wx[0]), wx[1]));
}
/* Median microseconds per iteration of the forward loop and of forward + backward. */
static void time_loop_gradient(int threads, int reps, double *fwd_us, double *fwdbwd_us) {
    df_graph *g = df_graph_new();
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
    check_graph(g, "building the loop gradient");
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s || df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st)) die("loop session", st.message);
    /* Forward and forward+backward runs alternate, so both medians see the same machine load. */
    double *t = (double *)malloc((size_t)(2 * reps) * sizeof(double));
    df_output fetches[2] = {out[1], dw};
    for (int i = 0; i < reps + 2; i++)
        for (int k = 0; k < 2; k++) {
            df_tensor *v = NULL;
            double t0 = digits_now();
            if (df_session_run(s, NULL, NULL, 0, &fetches[k], &v, 1, NULL, 0, &st)) die("loop run", st.message);
            double dt = digits_now() - t0;
            df_tensor_release(v);
            if (i >= 2) t[k * reps + i - 2] = dt;
        }
    for (int k = 0; k < 2; k++) {
        qsort(t + k * reps, (size_t)reps, sizeof *t, cmp_double);
        *(k ? fwdbwd_us : fwd_us) = t[k * reps + reps / 2] / LOOP_N * 1e6;
    }
    free(t);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- Peers ---- */
typedef struct peer {
    const char *name, *script;
    char   version[64], skip[256];
    double mlp_us, rnn_us, mlp_loss0, rnn_loss0, loop_fwd_us, loop_fwdbwd_us;
    int    have;                     /* bits: 1 mlp, 2 rnn, 4 loop */
} peer;

static void run_peer(peer *p, int threads, int quick) {
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) { snprintf(p->skip, sizeof p->skip, "no .venv (bench/peers/setup.sh makes it)"); return; }
    fclose(probe);
    char cmd[512], line[512];
    snprintf(cmd, sizeof cmd, ".venv/bin/python %s --threads %d --dir " NPY_DIR "%s 2>build/%s.log", p->script,
             threads, quick ? " --quick" : "", p->name);
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(p->skip, sizeof p->skip, "cannot run %s", p->script); return; }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "skip ", 5)) snprintf(p->skip, sizeof p->skip, "%.240s", line + 5);
        sscanf(line, "version %63s", p->version);
        if (sscanf(line, "mlp_step_us %lf", &p->mlp_us) == 1) p->have |= 1;
        if (sscanf(line, "rnn_step_us %lf", &p->rnn_us) == 1) p->have |= 2;
        sscanf(line, "mlp_loss0 %lf", &p->mlp_loss0);
        sscanf(line, "rnn_loss0 %lf", &p->rnn_loss0);
        if (sscanf(line, "while_fwd_us_per_iter %lf", &p->loop_fwd_us) == 1) p->have |= 4;
        sscanf(line, "while_fwdbwd_us_per_iter %lf", &p->loop_fwdbwd_us);
    }
    int status = pclose(f);
    if (!p->have && !p->skip[0])
        snprintf(p->skip, sizeof p->skip, "%s failed (status %d; see build/%s.log)", p->script, status, p->name);
}

static void row(const char *label, double ours, const peer *p, int bit, double theirs) {
    if (p->have & bit) printf("%-36s %10.2f  %-10s %10.2f %8.2fx\n", label, ours, p->name, theirs, theirs / ours);
    else printf("%-36s %10.2f  %-10s %10s %9s\n", label, ours, p->name, "-", "-");
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else { fprintf(stderr, "usage: bench_training [--quick] [--no-peers] [--threads N]\n"); return 2; }
    }
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (int)cores : 1;
    }
    int warm = quick ? 10 : 30, mlp_reps = quick ? 100 : 500, rnn_reps = quick ? 50 : 200, loop_reps = quick ? 5 : 31;

    /* The fixed batch: the first 64 training images of the examples' split. */
    digits_data train, test;
    const char *path = digits_path(NULL);
    digits_data all;
    digits_load(path, &all);
    digits_split(&all, digits_n_train(all.n), DIGITS_SPLIT_SEED, &train, &test);
    if (train.n < BATCH) die(path, "fewer rows than one batch");
    df_tensor *x2 = digits_tensor(DF_FLOAT, 2, (const int64_t[]){BATCH, DIGITS_PIXELS}, train.pixels);
    df_tensor *x3 = digits_tensor(DF_FLOAT, 3, (const int64_t[]){BATCH, DIGITS_SIDE, DIGITS_SIDE}, train.pixels);
    df_tensor *y = digits_tensor(DF_INT32, 1, (const int64_t[]){BATCH}, train.labels);
    if (df_tensor_write_npy(x2, NPY_DIR "/training_x.npy") || df_tensor_write_npy(y, NPY_DIR "/training_y.npy"))
        die(NPY_DIR, "cannot write the batch (.npy)");

    model mlp, rnn;
    build(&mlp, 0, threads);
    build(&rnn, 1, threads);
    double mlp_loss0, rnn_loss0, loop_fwd, loop_fwdbwd;
    double mlp_us = time_steps(&mlp, x2, y, warm, mlp_reps, &mlp_loss0);
    double rnn_us = time_steps(&rnn, x3, y, warm, rnn_reps, &rnn_loss0);
    time_loop_gradient(threads, loop_reps, &loop_fwd, &loop_fwdbwd);

    peer ps[2];
    memset(ps, 0, sizeof ps);
    ps[0].name = "tensorflow", ps[0].script = "bench/peers/tf_training.py";
    ps[1].name = "pytorch", ps[1].script = "bench/peers/torch_training.py";
    for (int i = 0; i < 2; i++) {
        if (peers) run_peer(&ps[i], threads, quick);
        else snprintf(ps[i].skip, sizeof ps[i].skip, "--no-peers");
    }

    printf("training benchmarks: batch %d, Adam, %d threads; median step time; ratio = peer time / dataflow time\n",
           BATCH, threads);
    printf("%-36s %10s  %-10s %10s %9s\n", "case", "dataflow", "peer", "peer", "ratio");
    char label[64];
    snprintf(label, sizeof label, "MLP 64-%d-10 step (us)", MLP_HIDDEN);
    for (int i = 0; i < 2; i++) row(label, mlp_us, &ps[i], 1, ps[i].mlp_us);
    snprintf(label, sizeof label, "RNN 8 rows, %d units, step (us)", RNN_HIDDEN);
    for (int i = 0; i < 2; i++) row(label, rnn_us, &ps[i], 2, ps[i].rnn_us);
    row("while loop forward (us/iter)", loop_fwd, &ps[0], 4, ps[0].loop_fwd_us);
    row("while loop fwd+bwd (us/iter)", loop_fwdbwd, &ps[0], 4, ps[0].loop_fwdbwd_us);
    printf("while loop gradient cost, %d iterations of tanh(h*w + x) on %d floats: (forward+backward) / forward = "
           "%.2fx (target <= 2x)", LOOP_N, LOOP_WIDTH, loop_fwdbwd / loop_fwd);
    if (ps[0].have & 4 && ps[0].loop_fwd_us > 0) printf("; tensorflow %.2fx", ps[0].loop_fwdbwd_us / ps[0].loop_fwd_us);
    printf("\nfirst-step loss (same weights, same batch): MLP dataflow %.5f", mlp_loss0);
    for (int i = 0; i < 2; i++) if (ps[i].have & 1) printf(", %s %.5f", ps[i].name, ps[i].mlp_loss0);
    printf("; RNN dataflow %.5f", rnn_loss0);
    for (int i = 0; i < 2; i++) if (ps[i].have & 2) printf(", %s %.5f", ps[i].name, ps[i].rnn_loss0);
    printf("\n");
    for (int i = 0; i < 2; i++) {
        if (ps[i].skip[0]) printf("(%s skipped: %s)\n", ps[i].name, ps[i].skip);
        else if (ps[i].version[0]) printf("(%s %s)\n", ps[i].name, ps[i].version);
    }

    df_session_free(mlp.s);
    df_graph_free(mlp.g);
    df_session_free(rnn.s);
    df_graph_free(rnn.g);
    df_tensor_release(x2);
    df_tensor_release(x3);
    df_tensor_release(y);
    digits_data_free(&all);
    digits_data_free(&train);
    digits_data_free(&test);
    return 0;
}
