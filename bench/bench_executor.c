/* Executor benchmarks: per-node cost on a chain of 10,000 NoOps and a 1024x1024 NoOp DAG, and
   per-iteration cost of `i = 0; while i < N: i += 1` with N = 1,000,000. Each is run with 1 and
   2 inter-op threads; TensorFlow (tf.compat.v1 graph mode, same graphs) is measured in the same
   run through bench/peers/tf_executor.py when .venv holds it. Prints a table with ratios.
   Each case runs plainly (df_session_run: "off") and traced (df_session_run_with_options with
   DF_TRACE_FULL and a df_run_metadata: "traced"); the "on/off" column is what tracing costs.
   The executor is measured with the graph passes off (DF_PASS_ALL disabled: otherwise CSE merges
   the DAG's identical NoOps and the figure measures almost nothing), and TensorFlow with
   Grappler off likewise; "passes" and "tf default" beside them are what a user gets with every
   optimisation on (ours, TensorFlow's), per node of the graph as built.
   "dataflow" is what runs by default: these three graphs all run from static schedules (a flat
   list for the chain and the DAG, the loop iteration after iteration); "tagged" is the tagged
   executor alone (df_session_options.dynamic_only), what runs graphs that need it.
   Usage: bench_executor [--quick] [--no-peers] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void die(const char *what, const df_status *st) {
    fprintf(stderr, "bench_executor: %s: %s\n", what, st ? st->message : "failed");
    exit(1);
}

/* Median seconds of `reps` runs of target (after `warm` untimed ones); md: traced runs into it. */
static double time_target(df_session *s, df_node *target, const df_output *fetch, int warm, int reps,
                          df_run_metadata *md) {
    df_status st;
    static const df_run_options traced = {DF_TRACE_FULL, 0};
    double *t = (double *)malloc((size_t)reps * sizeof(double));
    for (int i = 0; i < warm + reps; i++) {
        df_tensor *out = NULL;
        double t0 = now();
        if (md ? df_session_run_with_options(s, &traced, NULL, NULL, 0, fetch, fetch ? &out : NULL, fetch ? 1 : 0,
                                             target ? &target : NULL, target ? 1 : 0, md, &st) != DF_OK
               : df_session_run(s, NULL, NULL, 0, fetch, fetch ? &out : NULL, fetch ? 1 : 0,
                                target ? &target : NULL, target ? 1 : 0, &st) != DF_OK)
            die("run", &st);
        double dt = now() - t0;
        df_tensor_release(out);
        if (i >= warm) t[i - warm] = dt;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double m = t[reps / 2];
    free(t);
    return m;
}

static df_session *session(df_graph *g, int threads, int passes, int dynamic) {
    df_session_options o;
    df_status st;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = threads;
    o.disable_passes = passes ? 0 : DF_PASS_ALL;
    o.dynamic_only = dynamic;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) die("session", &st);
    return s;
}

static df_node *build_chain(df_graph *g, int n) {
    df_node *prev = NULL;
    for (int i = 0; i < n; i++) prev = df_no_op(g, prev ? &prev : NULL, prev ? 1 : 0);
    return prev;
}

static df_node *build_dag(df_graph *g, int width, int depth) {
    df_node **prev = (df_node **)malloc((size_t)width * sizeof(df_node *));
    df_node **cur = (df_node **)malloc((size_t)width * sizeof(df_node *));
    for (int i = 0; i < width; i++) prev[i] = df_no_op(g, NULL, 0);
    for (int d = 1; d < depth; d++) {
        for (int i = 0; i < width; i++) {
            df_node *deps[2] = {prev[i], prev[(i + 1) % width]};
            cur[i] = df_no_op(g, deps, 2);
        }
        df_node **t = prev; prev = cur; cur = t;
    }
    df_node *last = df_no_op(g, prev, width);
    free(prev);
    free(cur);
    return last;
}

static df_output loop_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], *(const df_output *)user);
}
static void loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}

typedef struct { double chain_ns, dag_ns, while_us; char dag_dims[32]; int have; } peer_result;

static void run_peer(int threads, int quick, int defaults, peer_result *r) {
    memset(r, 0, sizeof *r);
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) return;
    fclose(probe);
    char cmd[256];
    snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_executor.py --threads %d%s%s 2>/dev/null",
             threads, quick ? " --quick" : "", defaults ? " --defaults" : "");
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char line[256];
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "tf_chain_ns_per_node %lf", &r->chain_ns) == 1) r->have |= 1;
        if (sscanf(line, "tf_dag_ns_per_node %lf dims %31s", &r->dag_ns, r->dag_dims) >= 1) r->have |= 2;
        if (sscanf(line, "tf_while_us_per_iter %lf", &r->while_us) == 1) r->have |= 4;
    }
    pclose(p);
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        if (!strcmp(argv[i], "--no-peers")) peers = 0;
    }
    const int chain_n = 10000, dag_w = quick ? 256 : 1024, dag_d = quick ? 256 : 1024;
    const int loop_n = quick ? 100000 : 1000000;
    df_status st;
    df_graph *gc = df_graph_new(), *gd = df_graph_new(), *gw = df_graph_new();
    df_node *chain = build_chain(gc, chain_n);
    df_node *dag = build_dag(gd, dag_w, dag_d);
    df_output limit = df_placeholder(gw, "n", DF_INT32, 0, NULL), i0 = df_scalar_i32(gw, 0), result;
    df_while_loop(gw, 1, &i0, loop_cond, loop_body, &limit, NULL, &result);
    if (df_graph_status(gc)->code || df_graph_status(gd)->code || df_graph_status(gw)->code) {
        fprintf(stderr, "graph: %s %s %s\n", df_graph_status(gc)->message, df_graph_status(gd)->message,
                df_graph_status(gw)->message);
        return 1;
    }
    double ours[2][3][4];   /* [threads 1,2][chain, dag, while][off, traced, with passes, tagged executor] */
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    for (int ti = 0; ti < 2; ti++) {
        int threads = ti + 1;
        for (int mode = 0; mode < 4; mode++) {
            int on = mode == 1, passes = mode == 2, dynamic = mode == 3;
            df_run_metadata *mdp = on ? &md : NULL;
            df_session *s = session(gc, threads, passes, dynamic);
            ours[ti][0][mode] = time_target(s, chain, NULL, 20, 51, mdp) / (chain_n + 0.0) * 1e9;
            df_session_free(s);
            s = session(gd, threads, passes, dynamic);
            ours[ti][1][mode] = time_target(s, dag, NULL, 2, quick ? 5 : 7, mdp) / ((double)dag_w * dag_d + 1) * 1e9;
            df_session_free(s);
            s = session(gw, threads, passes, dynamic);
            df_tensor *nv = df_tensor_scalar_i32(loop_n), *out = NULL;
            static const df_run_options traced = {DF_TRACE_FULL, 0};
            double best[5];
            for (int r = 0; r < 5; r++) {
                double t0 = now();
                if (on ? df_session_run_with_options(s, &traced, &limit, &nv, 1, &result, &out, 1, NULL, 0, &md, &st)
                       : df_session_run(s, &limit, &nv, 1, &result, &out, 1, NULL, 0, &st))
                    die("while", &st);
                best[r] = now() - t0;
                if (*(int32_t *)df_tensor_data(out) != loop_n) die("while loop result is wrong", NULL);
                df_tensor_release(out);
            }
            qsort(best, 5, sizeof *best, cmp_double);
            ours[ti][2][mode] = best[2] / loop_n * 1e6;
            df_tensor_release(nv);
            df_session_free(s);
            df_run_metadata_clear(&md);
        }
    }
    peer_result tf[2], tfd[2];   /* Grappler off; TensorFlow's defaults */
    for (int ti = 0; ti < 2; ti++) {
        if (peers) { run_peer(ti + 1, quick, 0, &tf[ti]); run_peer(ti + 1, quick, 1, &tfd[ti]); }
        else { memset(&tf[ti], 0, sizeof tf[ti]); memset(&tfd[ti], 0, sizeof tfd[ti]); }
    }
    printf("executor benchmarks (median of runs; graph passes and Grappler off, so every node runs;\n"
           "dataflow: static schedules where the graph allows them, as by default; tagged: the\n"
           "tagged executor alone (df_session_options.dynamic_only); ratio = TensorFlow time /\n"
           "dataflow time; traced: DF_TRACE_FULL into a df_run_metadata (it runs the tagged\n"
           "executor), on/off its cost against tagged; passes and tf default: every optimisation\n"
           "on, per node of the graph as built, what a user gets)\n");
    printf("%-34s %7s %10s %10s %10s %7s %10s %9s %10s %9s\n", "case", "threads", "dataflow", "tagged", "traced", "on/off",
           "tensorflow", "ratio", "passes", "tf default");
    const char *names[3] = {"chain of 10000 NoOps (ns/node)", "NoOp DAG (ns/node)", "while i<N: i+=1 (us/iter)"};
    for (int k = 0; k < 3; k++)
        for (int ti = 0; ti < 2; ti++) {
            double peer = k == 0 ? tf[ti].chain_ns : k == 1 ? tf[ti].dag_ns : tf[ti].while_us;
            int have = tf[ti].have >> k & 1;
            char label[64];
            if (k == 1) snprintf(label, sizeof label, "NoOp DAG %dx%d (ns/node)", dag_w, dag_d);
            else snprintf(label, sizeof label, "%s", names[k]);
            double off = ours[ti][k][0], on = ours[ti][k][1], pass = ours[ti][k][2], tagged = ours[ti][k][3];
            double peer_d = k == 0 ? tfd[ti].chain_ns : k == 1 ? tfd[ti].dag_ns : tfd[ti].while_us;
            int have_d = tfd[ti].have >> k & 1;
            printf("%-34s %7d %10.3f %10.3f %10.3f %6.2fx", label, ti + 1, off, tagged, on, on / tagged);
            if (have) printf(" %10.3f %8.1fx", peer, peer / off);
            else printf(" %10s %9s", "-", "-");
            printf(" %10.3f", pass);
            if (have_d) printf(" %9.3f\n", peer_d);
            else printf(" %9s\n", "-");
        }
    if (tf[0].have & 2 && strcmp(tf[0].dag_dims, "")) printf("(TensorFlow's DAG: %s)\n", tf[0].dag_dims);
    printf("targets: chain <= 3 ns/node (at least 6x TensorFlow); while <= 0.1 us/iteration (at least 10x\n"
           "TensorFlow); 2 threads no slower than 1\n");
    df_graph_free(gc);
    df_graph_free(gd);
    df_graph_free(gw);
    return 0;
}
