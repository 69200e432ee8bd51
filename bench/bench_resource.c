/* Resource-variable benchmarks: the time of one session run of

     adam        ResourceApplyAdam on a variable of 1M floats (its two slots too)
     adam_ref    ApplyAdam on VariableV2s of the same size (the ref twin, src/kernels/training.c)
     rmsprop     ResourceApplyCenteredRMSProp on 1M floats (three slots)
     assign_add  AssignAddVariableOp of 16 floats then ReadVariableOp fetched (per-run overhead)
     gather      ResourceGather of 4096 rows of 64 floats from a 16384 x 64 table

   and, in the same run, the same graphs in TensorFlow (tf.compat.v1 graph mode, resource
   variables: bench/peers/tf_resource.py) when a Python with TensorFlow is found. Timing: warm-up
   runs, then the median of individually timed runs. Prints a table with ratios (TensorFlow's
   time / ours). Usage:
       bench_resource [--quick] [--no-peers] [--threads N] [--python PATH]
   (N: intra-op threads, 0 means the number of cores; PATH defaults to .venv/bin/python) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <unistd.h>

enum { BIG = 1 << 20, SMALL = 16, ROWS = 16384, COLS = 64, PICK = 4096 };

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_resource: %s: %s\n", what, msg);
    exit(1);
}
static df_tensor *filled(int rank, const int64_t *dims, float scale) {
    df_tensor *t = df_tensor_new(DF_FLOAT, rank, dims, NULL);
    float *p = (float *)df_tensor_data(t);
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) p[i] = scale * (float)((i * 7919) % 1000) / 1000.0f;
    return t;
}
/* A variable (resource, or VariableV2 when ref) of the given shape and its initializer. */
static df_output variable(df_graph *g, const char *name, int ref, int rank, const int64_t *dims, float scale, df_node **init) {
    df_op_builder *b = df_op_new(g, ref ? "VariableV2" : "VarHandleOp", name);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", rank, dims);
    df_output v = {df_op_finish(b), 0};
    df_tensor *t = filled(rank, dims, scale);
    b = df_op_new(g, ref ? "Assign" : "AssignVariableOp", NULL);
    df_op_add_input(b, v);
    df_op_add_input(b, df_const(g, t));
    *init = df_op_finish(b);
    df_tensor_release(t);
    return v;
}
static df_output scalar(df_graph *g, float v) { return df_scalar_f32(g, v); }

typedef struct bench_case { df_graph *g; df_session *s; df_node *target; df_output fetch; int has_fetch; } bench_case;

static void open_case(bench_case *c, df_node **init, int n_init, int threads) {
    if (df_graph_status(c->g)->code) die("graph", df_graph_status(c->g)->message);
    df_session_options o = {0};
    o.intra_op_threads = threads;
    df_status st;
    c->s = df_session_new(c->g, &o, &st);
    if (!c->s) die("session", st.message);
    if (df_session_run(c->s, NULL, NULL, 0, NULL, NULL, 0, init, n_init, &st)) die("init", st.message);
}
static double time_case(bench_case *c, int warm, int reps) {
    double *ts = (double *)malloc((size_t)reps * sizeof(double));
    df_status st;
    for (int i = 0; i < warm + reps; i++) {
        df_tensor *out = NULL;
        double t0 = now();
        df_session_run(c->s, NULL, NULL, 0, c->has_fetch ? &c->fetch : NULL, c->has_fetch ? &out : NULL, c->has_fetch,
                       c->target ? &c->target : NULL, c->target ? 1 : 0, &st);
        double t1 = now();
        if (st.code) die("run", st.message);
        df_tensor_release(out);
        if (i >= warm) ts[i - warm] = (t1 - t0) * 1e6;
    }
    double m = median(ts, reps);
    free(ts);
    df_session_free(c->s);
    df_graph_free(c->g);
    return m;
}

/* Adam (ref: the VariableV2 twin) or centered RMSProp on BIG floats. */
static double bench_apply(int which, int threads, int warm, int reps) {
    bench_case c = {df_graph_new(), NULL, NULL, {NULL, 0}, 0};
    int64_t n = BIG;
    int ref = which == 1, nv = which == 2 ? 4 : 3;
    df_node *init[4];
    df_output v[4];
    const char *names[4] = {"var", "s1", "s2", "s3"};
    for (int i = 0; i < nv; i++) v[i] = variable(c.g, names[i], ref, 1, &n, i == 0 ? 1.0f : 0.1f, &init[i]);
    df_tensor *gt = filled(1, &n, 0.01f);
    df_output grad = df_const(c.g, gt);
    df_tensor_release(gt);
    df_op_builder *b = df_op_new(c.g, which == 2 ? "ResourceApplyCenteredRMSProp" : ref ? "ApplyAdam" : "ResourceApplyAdam", NULL);
    for (int i = 0; i < nv; i++) df_op_add_input(b, v[i]);
    if (which == 2) {
        const float k[4] = {0.001f, 0.9f, 0.5f, 1e-7f};
        for (int i = 0; i < 4; i++) df_op_add_input(b, scalar(c.g, k[i]));
    } else {
        const float k[6] = {0.9f, 0.999f, 0.001f, 0.9f, 0.999f, 1e-7f};
        for (int i = 0; i < 6; i++) df_op_add_input(b, scalar(c.g, k[i]));
    }
    df_op_add_input(b, grad);
    c.target = df_op_finish(b);
    open_case(&c, init, nv, threads);
    return time_case(&c, warm, reps);
}
static double bench_assign_add(int threads, int warm, int reps) {
    bench_case c = {df_graph_new(), NULL, NULL, {NULL, 0}, 1};
    int64_t n = SMALL;
    df_node *init;
    df_output v = variable(c.g, "acc", 0, 1, &n, 1.0f, &init);
    df_tensor *t = filled(1, &n, 0.5f);
    df_op_builder *b = df_op_new(c.g, "AssignAddVariableOp", NULL);
    df_op_add_input(b, v);
    df_op_add_input(b, df_const(c.g, t));
    df_node *add = df_op_finish(b);
    df_tensor_release(t);
    b = df_op_new(c.g, "ReadVariableOp", NULL);
    df_op_add_input(b, v);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_add_control_input(b, add);
    c.fetch = (df_output){df_op_finish(b), 0};
    open_case(&c, &init, 1, threads);
    return time_case(&c, warm, reps);
}
static double bench_gather(int threads, int warm, int reps) {
    bench_case c = {df_graph_new(), NULL, NULL, {NULL, 0}, 1};
    int64_t dims[2] = {ROWS, COLS}, np = PICK;
    df_node *init;
    df_output v = variable(c.g, "table", 0, 2, dims, 1.0f, &init);
    df_tensor *ix = df_tensor_new(DF_INT32, 1, &np, NULL);
    for (int i = 0; i < PICK; i++) ((int32_t *)df_tensor_data(ix))[i] = (int32_t)(((int64_t)i * 7919) % ROWS);
    df_op_builder *b = df_op_new(c.g, "ResourceGather", NULL);
    df_op_add_input(b, v);
    df_op_add_input(b, df_const(c.g, ix));
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    c.fetch = (df_output){df_op_finish(b), 0};
    df_tensor_release(ix);
    open_case(&c, &init, 1, threads);
    return time_case(&c, warm, reps);
}

/* ---- the TensorFlow peer ---- */
typedef struct peer { char version[64], skip[256]; double us[5]; int have; } peer;
static const char *const keys[5] = {"adam_us", "adam_ref_us", "rmsprop_us", "assign_add_us", "gather_us"};

static void run_peer(peer *p, const char *python, int threads, int quick) {
    if (access(python, X_OK)) { snprintf(p->skip, sizeof p->skip, "no %s (bench/peers/setup.sh makes .venv)", python); return; }
    char cmd[768], line[512];
    snprintf(cmd, sizeof cmd, "%s bench/peers/tf_resource.py --threads %d%s 2>build/tf_resource.log", python, threads,
             quick ? " --quick" : "");
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(p->skip, sizeof p->skip, "cannot run bench/peers/tf_resource.py"); return; }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "skip ", 5)) snprintf(p->skip, sizeof p->skip, "%.240s", line + 5);
        sscanf(line, "version %63s", p->version);
        for (int k = 0; k < 5; k++) {
            char fmt[64];
            snprintf(fmt, sizeof fmt, "%s %%lf", keys[k]);
            if (sscanf(line, fmt, &p->us[k]) == 1) p->have |= 1 << k;
        }
    }
    int status = pclose(f);
    if (!p->have && !p->skip[0]) snprintf(p->skip, sizeof p->skip, "the peer failed (status %d; see build/tf_resource.log)", status);
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1, threads = 0;
    const char *python = ".venv/bin/python";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else { fprintf(stderr, "usage: bench_resource [--quick] [--no-peers] [--threads N] [--python PATH]\n"); return 2; }
    }
    if (threads <= 0) { long c = sysconf(_SC_NPROCESSORS_ONLN); threads = c > 0 ? (int)c : 1; }
    int warm = quick ? 2 : 5, reps = quick ? 7 : 31;
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("bench_resource: %s, %d threads, median of %d runs\n", cpu, threads, reps);
    double ours[5] = {bench_apply(0, threads, warm, reps), bench_apply(1, threads, warm, reps), bench_apply(2, threads, warm, reps),
                      bench_assign_add(threads, warm, reps * 10), bench_gather(threads, warm, reps)};
    peer p;
    memset(&p, 0, sizeof p);
    if (peers) run_peer(&p, python, threads, quick);
    else snprintf(p.skip, sizeof p.skip, "--no-peers");
    const char *labels[5] = {"ResourceApplyAdam, 1M floats", "ApplyAdam (VariableV2), 1M floats",
                             "ResourceApplyCenteredRMSProp, 1M floats", "AssignAddVariableOp + read, 16 floats",
                             "ResourceGather 4096 x 64 of 16384 rows"};
    printf("%-42s %12s %14s %9s\n", "case (one session run)", "dataflow us", "tensorflow us", "ratio");
    for (int k = 0; k < 5; k++) {
        if (p.have & (1 << k)) printf("%-42s %12.1f %14.1f %8.2fx\n", labels[k], ours[k], p.us[k], p.us[k] / ours[k]);
        else printf("%-42s %12.1f %14s %9s\n", labels[k], ours[k], "-", "-");
    }
    if (p.version[0]) printf("tensorflow %s\n", p.version);
    if (p.skip[0]) printf("tensorflow skipped: %s\n", p.skip);
    return 0;
}
