/* RNN and map_fn benchmarks ("values per iteration"): loops that carry tensors through
   TensorArrays, against TensorFlow and PyTorch.

   Cases:
     LSTM   tf.compat.v1.nn.dynamic_rnn (time-major) of an LSTM cell, batch 32, 128 units,
            input 128, 50 steps: z = [x_t, h] @ kernel + bias (one matmul for the four gates),
            [i, j, f, o] = split(z), c = sigmoid(f + 1) c + sigmoid(i) tanh(j),
            h = sigmoid(o) tanh(c). "forward" fetches the outputs and the final h; "fwd+bwd"
            fetches loss = sum(outputs^2) and its gradients wrt x, kernel and bias.
     map    tf.compat.v1.map_fn(lambda r: r * r + 1, elems), elems [10000, 4]: 10,000
            iterations of a tiny body (the per-iteration cost of a loop through TensorArrays).

   TensorFlow makes the graphs (bench/peers/tf_rnn.py --make, writing build/rnn/lstm.pb,
   map_fn.pb and the input and weights as .npy). Columns:
     ours:import   df_graph_import_graphdef of TensorFlow's very GraphDef, run by a session
                   with inter_op = intra_op = 1 or 2 threads, our graph passes at their
                   defaults (prune, identity, CSE, constant folding, inline)
     ours:C-API    the same model built with our C API: the LSTM with df_scan over the input
                   (a TensorArray loop; ConcatV2 + one MatMul + Split per step), df_gradients
                   for the backward pass; the map with df_map_fn
     TF:grappler   TensorFlow 2.21 running the same GraphDef in a tf.compat.v1 Session (v1
                   control flow), same thread counts, grappler at its defaults
     TF:off        the same with grappler and the graph optimizer off
     torch:loop    PyTorch eager, the cell in torch ops driven by a Python loop over the 50
                   steps (autograd for the backward pass); for the map a Python loop over rows
     torch:fused   torch.nn.LSTM (its fused sequence kernel) with the same weights; for the map
                   torch.vmap (one vectorised op: no loop at all, listed for reference)
   Each side runs in its own phase (ours, then each peer in its own process), with warm-up runs,
   then the median of 7..15 runs, of the wall time and of the process's CPU time (all its
   threads; the steadier figure for one thread on a loaded machine). Ratios are peer time /
   ours:import time (above 1: we are faster). The losses, a gradient sum and the map's sum are
   printed for each side as a check.

   Usage: bench_rnn [--no-peers]      (run from the repository root) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <sys/stat.h>

#define DIR_RNN "build/rnn"
enum { T_STEPS = 50, BATCH = 32, DIM = 128, UNITS = 128, MAP_N = 10000, MAP_W = 4 };
enum { C_FWD, C_BWD, C_MAP, N_CASES };
enum { COL_IMPORT, COL_CAPI, COL_TF_ON, COL_TF_OFF, COL_TORCH_LOOP, COL_TORCH_FUSED, N_COLS };
static const char *const case_names[N_CASES] = {"LSTM forward (ms)", "LSTM fwd+bwd (ms)", "map_fn 10000 (ms)"};

static double res[N_CASES][2][N_COLS];     /* wall microseconds; 0 when not measured */
static double cpu[N_CASES][2][N_COLS];     /* process CPU microseconds (all threads) */
static double val_loss[N_COLS], val_gk[N_COLS], val_map[N_COLS];
static int have_val[N_COLS];

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_rnn: %s: %s\n", what, msg);
    exit(1);
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median wall microseconds of df_session_run with these feeds and fetches (warm runs first);
   *cpu_us the median process CPU microseconds. */
static double time_run(df_session *s, const df_output *feeds, df_tensor *const *fv, int nf,
                       const df_output *fetches, int nfe, int warm, int reps, df_tensor **keep, double *cpu_us) {
    double t[32], c[32];
    df_tensor *outs[8];
    df_status st;
    for (int r = -warm; r < reps; r++) {
        double c0 = cpu_now(), t0 = now();
        if (df_session_run(s, feeds, fv, nf, fetches, outs, nfe, NULL, 0, &st)) die("run", st.message);
        double dt = now() - t0, dc = cpu_now() - c0;
        if (r >= 0) { t[r] = dt; c[r] = dc; }
        for (int i = 0; i < nfe; i++) {
            if (keep && r == reps - 1) keep[i] = outs[i];
            else df_tensor_release(outs[i]);
        }
    }
    *cpu_us = median(c, reps) * 1e6;
    return median(t, reps) * 1e6;
}

static df_session *session(df_graph *g, int threads) {
    df_session_options o = {0};
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) die("session", st.message);
    return s;
}

static double sum_f32(const df_tensor *t) {
    double s = 0;
    const float *p = (const float *)df_tensor_data((df_tensor *)t);
    for (int64_t i = 0, n = df_tensor_num_elements(t); i < n; i++) s += p[i];
    return s;
}

static void *load_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    *len = (size_t)n;
    return buf;
}
static df_output by_name(df_graph *g, const char *name) {
    df_node *n = df_graph_find(g, name);
    if (!n) die(name, "not in the imported graph");
    return (df_output){n, 0};
}

/* The input and weights from tf_rnn.py --make, or deterministic pseudo-random ones. */
static df_tensor *input_or_random(const char *file, int rank, const int64_t *dims, float scale, unsigned seed) {
    char path[256];
    snprintf(path, sizeof path, DIR_RNN "/%s", file);
    df_status st;
    df_tensor *t = df_tensor_read_npy(path, &st);
    if (t) return t;
    t = df_tensor_new(DF_FLOAT, rank, dims, &st);
    if (!t) die("tensor", st.message);
    float *p = (float *)df_tensor_data(t);
    unsigned x = seed;
    for (int64_t i = 0, n = df_tensor_num_elements(t); i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = scale * ((float)(x >> 8) / 16777216.0f * 2.0f - 1.0f);
    }
    return t;
}

/* ---- TensorFlow's GraphDefs, imported ---- */
static void run_imported_lstm(df_tensor *xv) {
    size_t len;
    void *data = load_file(DIR_RNN "/lstm.pb", &len);
    if (!data) { printf("(no " DIR_RNN "/lstm.pb: the ours:import LSTM rows need TensorFlow once)\n"); return; }
    df_status st;
    df_graph *g = df_graph_import_graphdef(data, len, &st);
    free(data);
    if (!g) die("import lstm.pb", st.message);
    df_output x = by_name(g, "x");
    df_output fwd[2] = {by_name(g, "out_outputs"), by_name(g, "out_h")};
    df_output bwd[4] = {by_name(g, "out_loss"), by_name(g, "grad_x"), by_name(g, "grad_kernel"), by_name(g, "grad_bias")};
    for (int ti = 0; ti < 2; ti++) {
        df_session *s = session(g, ti + 1);
        df_tensor *keep[4];
        res[C_FWD][ti][COL_IMPORT] = time_run(s, &x, &xv, 1, fwd, 2, 3, 15, NULL, &cpu[C_FWD][ti][COL_IMPORT]);
        res[C_BWD][ti][COL_IMPORT] = time_run(s, &x, &xv, 1, bwd, 4, 3, 9, keep, &cpu[C_BWD][ti][COL_IMPORT]);
        if (ti == 0) {
            val_loss[COL_IMPORT] = *(const float *)df_tensor_data(keep[0]);
            val_gk[COL_IMPORT] = sum_f32(keep[2]);
            have_val[COL_IMPORT] |= 1;
        }
        for (int i = 0; i < 4; i++) df_tensor_release(keep[i]);
        df_session_free(s);
    }
    df_graph_free(g);
}

/* Allocations of device 0 per map_fn iteration, from the session's BFC statistics. */
static double map_allocs_per_iter = -1;

static void run_imported_map(df_tensor *ev) {
    size_t len;
    void *data = load_file(DIR_RNN "/map_fn.pb", &len);
    if (!data) { printf("(no " DIR_RNN "/map_fn.pb: the ours:import map rows need TensorFlow once)\n"); return; }
    df_status st;
    df_graph *g = df_graph_import_graphdef(data, len, &st);
    free(data);
    if (!g) die("import map_fn.pb", st.message);
    df_output e = by_name(g, "elems"), y = by_name(g, "out_map");
    for (int ti = 0; ti < 2; ti++) {
        df_session *s = session(g, ti + 1);
        df_tensor *keep;
        res[C_MAP][ti][COL_IMPORT] = time_run(s, &e, &ev, 1, &y, 1, 1, 7, &keep, &cpu[C_MAP][ti][COL_IMPORT]);
        if (ti == 0) {
            val_map[COL_IMPORT] = sum_f32(keep);
            have_val[COL_IMPORT] |= 2;
            df_alloc_stats a, b;
            df_tensor *o;
            if (df_session_device_alloc_stats(s, 0, &a)) {
                if (df_session_run(s, &e, &ev, 1, &y, &o, 1, NULL, 0, &st)) die("run", st.message);
                df_tensor_release(o);
                df_session_device_alloc_stats(s, 0, &b);
                map_allocs_per_iter = (double)(b.num_allocs - a.num_allocs) / MAP_N;
            }
        }
        df_tensor_release(keep);
        df_session_free(s);
    }
    df_graph_free(g);
}

/* ---- The same models with our C API ---- */
typedef struct lstm_w { df_output kernel, bias, one, axis1, split_dim; } lstm_w;

static df_output concat2(df_graph *g, df_output a, df_output b, df_output axis) {
    df_op_builder *o = df_op_new(g, "ConcatV2", NULL);
    df_output v[2] = {a, b};
    df_op_add_input_list(o, v, 2);
    df_op_add_input(o, axis);
    return (df_output){df_op_finish(o), 0};
}

/* acc = (c, h), x_t [BATCH, DIM]; next = (c', h'). */
static void lstm_cell(df_graph *g, void *user, const df_output *acc, df_output x_t, df_output *next) {
    const lstm_w *w = (const lstm_w *)user;
    df_output z = df_add(g, df_matmul(g, concat2(g, x_t, acc[1], w->axis1), w->kernel, 0, 0), w->bias);
    df_op_builder *o = df_op_new(g, "Split", NULL);
    df_op_add_input(o, w->split_dim);
    df_op_add_input(o, z);
    df_op_set_attr_int(o, "num_split", 4);
    df_node *sp = df_op_finish(o);
    df_output i = {sp, 0}, j = {sp, 1}, f = {sp, 2}, og = {sp, 3};
    df_output c = df_add(g, df_mul(g, df_sigmoid(g, df_add(g, f, w->one)), acc[0]), df_mul(g, df_sigmoid(g, i), df_tanh(g, j)));
    next[0] = c;
    next[1] = df_mul(g, df_sigmoid(g, og), df_tanh(g, c));
}

static void run_capi_lstm(df_tensor *xv, df_tensor *kv, df_tensor *bv) {
    df_graph *g = df_graph_new();
    int64_t xd[3] = {T_STEPS, BATCH, DIM}, zd[2] = {BATCH, UNITS};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 3, xd);
    lstm_w w;
    w.kernel = df_const(g, kv);
    w.bias = df_const(g, bv);
    w.one = df_scalar_f32(g, 1.0f);
    w.axis1 = df_scalar_i32(g, 1);
    w.split_dim = df_scalar_i32(g, 1);
    df_status st;
    df_tensor *zt = df_tensor_new(DF_FLOAT, 2, zd, &st);
    memset(df_tensor_data(zt), 0, sizeof(float) * BATCH * UNITS);
    df_output z0 = df_const(g, zt);
    df_tensor_release(zt);
    df_output init[2] = {z0, z0}, outs[2];
    df_while_options opts = {0};
    opts.name = "lstm";
    df_scan(g, 2, init, x, lstm_cell, &w, &opts, outs);
    df_output y = outs[1];
    df_output loss = df_reduce_sum(g, df_mul(g, y, y), 0, NULL, 0);
    df_output xs[3] = {x, w.kernel, w.bias}, dx[3];
    df_gradients(g, 1, &loss, NULL, 3, xs, dx);
    if (df_graph_status(g)->code) die("C-API LSTM", df_graph_status(g)->message);
    df_output bwd[4] = {loss, dx[0], dx[1], dx[2]};
    for (int ti = 0; ti < 2; ti++) {
        df_session *s = session(g, ti + 1);
        df_tensor *keep[4];
        res[C_FWD][ti][COL_CAPI] = time_run(s, &x, &xv, 1, &y, 1, 3, 15, NULL, &cpu[C_FWD][ti][COL_CAPI]);
        res[C_BWD][ti][COL_CAPI] = time_run(s, &x, &xv, 1, bwd, 4, 3, 9, keep, &cpu[C_BWD][ti][COL_CAPI]);
        if (ti == 0) {
            val_loss[COL_CAPI] = *(const float *)df_tensor_data(keep[0]);
            val_gk[COL_CAPI] = sum_f32(keep[2]);
            have_val[COL_CAPI] |= 1;
        }
        for (int i = 0; i < 4; i++) df_tensor_release(keep[i]);
        df_session_free(s);
    }
    df_graph_free(g);
}

static df_output map_body(df_graph *g, void *user, df_output r) {
    (void)user;
    return df_add(g, df_mul(g, r, r), df_scalar_f32(g, 1.0f));
}

static void run_capi_map(df_tensor *ev) {
    df_graph *g = df_graph_new();
    int64_t ed[2] = {MAP_N, MAP_W};
    df_output e = df_placeholder(g, "elems", DF_FLOAT, 2, ed), y;
    df_map_fn(g, e, DF_FLOAT, map_body, NULL, NULL, &y);
    if (df_graph_status(g)->code) die("C-API map", df_graph_status(g)->message);
    for (int ti = 0; ti < 2; ti++) {
        df_session *s = session(g, ti + 1);
        df_tensor *keep;
        res[C_MAP][ti][COL_CAPI] = time_run(s, &e, &ev, 1, &y, 1, 1, 7, &keep, &cpu[C_MAP][ti][COL_CAPI]);
        if (ti == 0) { val_map[COL_CAPI] = sum_f32(keep); have_val[COL_CAPI] |= 2; }
        df_tensor_release(keep);
        df_session_free(s);
    }
    df_graph_free(g);
}

/* ---- Peers ---- */
static int have_python(void) {
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) return 0;
    fclose(probe);
    return 1;
}

static int case_of(const char *key) {
    return !strcmp(key, "lstm_fwd") ? C_FWD : !strcmp(key, "lstm_bwd") ? C_BWD : !strcmp(key, "map") ? C_MAP : -1;
}

static void run_peer(const char *script, int threads, int torch) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/%s --%s " DIR_RNN " --threads %d 2>build/rnn/%s_%d.log",
             script, torch ? "dir" : "time", threads, torch ? "torch" : "tf", threads);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char line[512], a[64], b[64];
    double v;
    int ti = threads - 1;
    while (fgets(line, sizeof line, p)) {
        double vc = 0;
        if (sscanf(line, "time %63s %63s %lf %lf", a, b, &v, &vc) >= 3) {
            int c = case_of(a);
            if (c < 0) continue;
            int col = torch ? (!strcmp(b, "cell") || !strcmp(b, "loop") ? COL_TORCH_LOOP : COL_TORCH_FUSED)
                            : (!strcmp(b, "on") ? COL_TF_ON : COL_TF_OFF);
            res[c][ti][col] = v;
            cpu[c][ti][col] = vc;
        } else if (sscanf(line, "value %63s %lf", a, &v) == 2 && ti == 0) {
            int col = torch ? COL_TORCH_LOOP : COL_TF_ON;
            if (!strcmp(a, "lstm_loss") || !strcmp(a, "lstm_loss_cell")) { val_loss[col] = v; have_val[col] |= 1; }
            else if (!strcmp(a, "lstm_gk_sum") || !strcmp(a, "lstm_gk_sum_cell")) val_gk[col] = v;
            else if (!strcmp(a, "map_sum")) { val_map[col] = v; have_val[col] |= 2; }
        }
    }
    if (pclose(p)) printf("(%s --threads %d failed: see build/rnn/%s_%d.log)\n", script, threads, torch ? "torch" : "tf", threads);
}

static void cell(double us) {
    if (us > 0) printf(" %11.2f", us / 1000.0);
    else printf(" %11s", "-");
}
static void ratio(double peer, double ours) {
    if (peer > 0 && ours > 0) printf(" %8.2fx", peer / ours);
    else printf(" %9s", "-");
}

int main(int argc, char **argv) {
    int peers = !(argc > 1 && !strcmp(argv[1], "--no-peers"));
    mkdir("build", 0777);
    mkdir(DIR_RNN, 0777);
    char model[256];
    cpu_model(model, sizeof model);
    printf("cpu: %s\n", model);
    if (peers && !have_python()) { printf("(peers skipped: no .venv; bench/peers/setup.sh makes it)\n"); peers = 0; }
    if (peers && system(".venv/bin/python bench/peers/tf_rnn.py --make " DIR_RNN " >/dev/null 2>build/rnn/make.log"))
        printf("(tf_rnn.py --make failed: see build/rnn/make.log; using what " DIR_RNN " holds)\n");

    /* Phase 1: ours. */
    int64_t xd[3] = {T_STEPS, BATCH, DIM}, kd[2] = {DIM + UNITS, 4 * UNITS}, bd[1] = {4 * UNITS}, ed[2] = {MAP_N, MAP_W};
    df_tensor *xv = input_or_random("lstm_x.npy", 3, xd, 1.0f, 1u);
    df_tensor *kv = input_or_random("lstm_kernel.npy", 2, kd, 0.1f, 2u);
    df_tensor *bv = input_or_random("lstm_bias.npy", 1, bd, 0.1f, 3u);
    df_tensor *ev = input_or_random("map_elems.npy", 2, ed, 1.0f, 4u);
    run_imported_lstm(xv);
    run_capi_lstm(xv, kv, bv);
    run_imported_map(ev);
    run_capi_map(ev);
    /* Phase 2: the peers, each in its own process. */
    if (peers) {
        for (int t = 1; t <= 2; t++) run_peer("tf_rnn.py", t, 0);
        for (int t = 1; t <= 2; t++) run_peer("torch_rnn.py", t, 1);
    }

    for (int kind = 0; kind < 2; kind++) {
        if (!kind) printf("\nRNN and map_fn: wall time (median ms; ours with our graph passes at their defaults; ratio = peer / ours:import)\n");
        else printf("\nthe same runs: process CPU time (median ms, every thread of the process; on a loaded machine the\n"
                    "one-thread rows are the steadier comparison; with 2 threads it counts spinning and helper threads)\n");
        printf("%-19s %3s %11s %11s %11s %11s %11s %11s %9s %9s %9s\n", "case", "thr", "ours:import", "ours:C-API",
               "TF:grappler", "TF:off", "torch:loop", "torch:fused", "TF/ours", "loop/ours", "fused/ours");
        for (int c = 0; c < N_CASES; c++)
            for (int ti = 0; ti < 2; ti++) {
                const double *r = kind ? cpu[c][ti] : res[c][ti];
                printf("%-19s %3d", case_names[c], ti + 1);
                for (int k = 0; k < N_COLS; k++) cell(r[k]);
                ratio(r[COL_TF_ON], r[COL_IMPORT]);
                ratio(r[COL_TORCH_LOOP], r[COL_IMPORT]);
                ratio(r[COL_TORCH_FUSED], r[COL_IMPORT]);
                printf("\n");
            }
    }
    printf("torch:fused is torch.nn.LSTM for the LSTM and torch.vmap (no loop) for the map.\n");
    if (map_allocs_per_iter >= 0)
        printf("map_fn (imported): %.2f allocator calls per iteration on CPU:0 (the body's r * r; + 1 runs in place,\n"
               "TensorArrayReadV3/WriteV3 hand tensors over by reference: a copy there would add 1 or 2)\n", map_allocs_per_iter);

    printf("\nchecks (loss = sum(outputs^2); sum of d loss / d kernel; sum of the map's output)\n");
    const char *col_names[N_COLS] = {"ours:import", "ours:C-API", "TensorFlow", "", "PyTorch (loop)", ""};
    double ref_loss = have_val[COL_TF_ON] & 1 ? val_loss[COL_TF_ON] : val_loss[COL_IMPORT];
    int bad = 0;
    for (int k = 0; k < N_COLS; k++) {
        if (!have_val[k]) continue;
        printf("%-15s", col_names[k]);
        if (have_val[k] & 1) printf(" loss %.7g  dkernel sum %.7g", val_loss[k], val_gk[k]);
        if (have_val[k] & 2) printf("  map sum %.7g", val_map[k]);
        printf("\n");
        if ((have_val[k] & 1) && fabs(val_loss[k] - ref_loss) > 1e-3 * fabs(ref_loss)) bad = 1;
    }
    if (bad) printf("WARNING: the losses differ by more than 1e-3 (relative)\n");
    df_tensor_release(xv);
    df_tensor_release(kv);
    df_tensor_release(bv);
    df_tensor_release(ev);
    return 0;
}
