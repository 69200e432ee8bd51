/* Multi-device benchmarks: what it costs to cut a graph across devices.

   1. Split while loop. `i = 0; x = x0; while i < N: i += 1; x = x * w + c` on 4 floats, N =
      10,000 (2,000 with --quick). The loop machinery (Enter, Merge, Switch, LoopCond, Exit,
      NextIteration, the counter) is on /cpu:0 and the body's Mul and Add on /cpu:1, so every
      iteration crosses devices twice (x to /cpu:1 and back to NextIteration) and /cpu:1 needs
      its own control loop. Measured against the same loop without device requests on one
      device; per-iteration microseconds, median of 7 runs after a warm-up run, with 1 and 2
      inter-op threads. Both must compute the same i and x (checked; exit status 1 otherwise).
      Targets: at most 2 us per iteration for the split loop, at least 10x faster than
      TensorFlow running the same split (bench/peers/tf_split_loop.py, tf.compat.v1 graph mode,
      device_count {'CPU': 2}, the body under tf.device('/cpu:1'), through .venv when
      bench/peers/setup.sh has made it).
   2. Partitioning time. Graphs of 25,000, 50,000 and 100,000 nodes (--quick: the first two):
      chains of cheap elementwise ops on float scalars with cross-chain edges, every node on a
      device drawn from /cpu:0..3 by a fixed-seed generator, summed into one scalar that is
      fetched; a session with 4 CPU devices. The first run prunes, places, partitions, compiles
      and executes; later runs only execute. compile+partition = first run - execution (median
      of 3 later runs), per node, median over 3 fresh sessions. Linear scaling means the
      per-node cost at the largest size is at most 1.5x the cost at 25,000 nodes.

   The partition counts are printed: a session that ran the split loop as one partition has
   not cut the graph, and its figures are single-device figures.
   Usage: bench_partition [--quick] [--no-peers] [--threads N]   (N: run only with N inter-op
   threads instead of 1 and 2; 0 means the number of cores) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WIDTH = 4, LOOP_REPS = 7, PART_SESSIONS = 3, PART_EXEC_REPS = 3, N_DEVICES_BIG = 4 };
#define SPLIT_TARGET_US 2.0
#define PEER_TARGET_RATIO 10.0
#define LINEAR_LIMIT 1.5

/* x0, w and c of the loop. Lane 3 (w = 1) ends at x0 + N * c exactly, so a wrong iteration
   count shows in x too; the other lanes converge to c / (1 - w). */
static const float loop_x0[WIDTH] = {0.0f, 1.0f, 2.0f, 3.0f};
static const float loop_w[WIDTH] = {0.5f, 0.9f, -0.75f, 1.0f};
static const float loop_c[WIDTH] = {1.0f, 0.1f, 0.5f, 0.25f};

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_partition: %s: %s\n", what, msg);
    exit(1);
}
static void check_graph(df_graph *g, const char *what) {
    if (df_graph_status(g)->code) die(what, df_graph_status(g)->message);
}
static df_session *session(df_graph *g, int n_devices, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = n_devices;
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) die("session", st.message);
    return s;
}

/* ---- 1. The split loop ---- */
typedef struct loop_graph {
    df_graph *g;
    df_output i, x;        /* the loop's final values */
} loop_graph;
typedef struct loop_user { df_output w, c; int n, split; } loop_user;

static df_output loop_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], df_scalar_i32(g, ((const loop_user *)user)->n));
}
static void loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const loop_user *u = (const loop_user *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    /* Only the body's arithmetic (and the constant Enters of w and c it captures) goes to
       /cpu:1; the counter stays with the loop machinery. */
    if (u->split) df_graph_push_device(g, "/cpu:1");
    next[1] = df_add(g, df_mul(g, v[1], u->w), u->c);
    if (u->split) df_graph_pop_device(g);
}

static df_output vector(df_graph *g, const float *v) {
    int64_t n = WIDTH;
    df_status st;
    df_tensor *t = df_tensor_from_data(DF_FLOAT, 1, &n, v, WIDTH * sizeof(float), &st);
    if (!t) die("tensor", st.message);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}

static void build_loop(loop_graph *L, int split, int n) {
    df_graph *g = L->g = df_graph_new();
    if (split) df_graph_push_device(g, "/cpu:0");
    loop_user u;
    u.w = vector(g, loop_w);
    u.c = vector(g, loop_c);
    u.n = n;
    u.split = split;
    df_output init[2] = {df_scalar_i32(g, 0), vector(g, loop_x0)}, out[2];
    df_while_options opts;
    memset(&opts, 0, sizeof opts);
    opts.name = "loop";
    df_while_loop(g, 2, init, loop_cond, loop_body, &u, &opts, out);
    if (split) df_graph_pop_device(g);
    check_graph(g, split ? "building the split loop" : "building the one-device loop");
    L->i = out[0];
    L->x = out[1];
}

/* One run of the loop: seconds; the final i and x into *i, x. */
static double run_loop(df_session *s, const loop_graph *L, int32_t *i, float *x) {
    df_output fetches[2] = {L->i, L->x};
    df_tensor *vals[2] = {NULL, NULL};
    df_status st;
    double t0 = now();
    if (df_session_run(s, NULL, NULL, 0, fetches, vals, 2, NULL, 0, &st)) die("loop run", st.message);
    double dt = now() - t0;
    *i = *(const int32_t *)df_tensor_data(vals[0]);
    memcpy(x, df_tensor_data(vals[1]), WIDTH * sizeof(float));
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    return dt;
}

/* The device of the partition that holds the loop body's Mul, or "?" (after a run). */
static const char *mul_device(df_session *s) {
    for (int p = 0; p < df_session_num_partitions(s); p++) {
        const char *device = NULL;
        const df_graph *pg = df_session_partition(s, p, &device);
        for (int k = 0; pg && k < df_graph_num_nodes(pg); k++)
            if (!strcmp(df_node_op(df_graph_node_at(pg, k)), "Mul")) return device ? device : "?";
    }
    return "?";
}

typedef struct loop_result {
    double one_us, split_us;       /* per iteration, median */
    int    one_parts, split_parts;
    char   mul_device[96];
    int32_t i;
    float  x[WIDTH];
} loop_result;

/* Runs of the one-device and the split loop alternate, so both medians see the same load. */
static void time_loops(const loop_graph *one, const loop_graph *split, int n, int threads, loop_result *r) {
    df_session *s1 = session(one->g, 1, threads), *s2 = session(split->g, 2, threads);
    double t[2][LOOP_REPS];
    int32_t i1, i2;
    float x1[WIDTH], x2[WIDTH];
    for (int rep = -1; rep < LOOP_REPS; rep++) {        /* rep -1: the warm-up run */
        double a = run_loop(s1, one, &i1, x1), b = run_loop(s2, split, &i2, x2);
        if (i1 != n || i2 != n || memcmp(x1, x2, sizeof x1)) {
            fprintf(stderr, "bench_partition: MISMATCH with %d threads: one device i=%d x=[%.9g %.9g %.9g %.9g], "
                    "split i=%d x=[%.9g %.9g %.9g %.9g] (expected i=%d)\n", threads, i1, x1[0], x1[1], x1[2], x1[3],
                    i2, x2[0], x2[1], x2[2], x2[3], n);
            exit(1);
        }
        if (rep >= 0) t[0][rep] = a, t[1][rep] = b;
    }
    r->one_us = median(t[0], LOOP_REPS) / n * 1e6;
    r->split_us = median(t[1], LOOP_REPS) / n * 1e6;
    r->one_parts = df_session_num_partitions(s1);
    r->split_parts = df_session_num_partitions(s2);
    snprintf(r->mul_device, sizeof r->mul_device, "%s", mul_device(s2));
    r->i = i2;
    memcpy(r->x, x2, sizeof x2);
    df_session_free(s1);
    df_session_free(s2);
}

/* ---- 2. Partitioning time ---- */
typedef struct rng { uint64_t state; } rng;
static uint64_t rng_next(rng *r) {                   /* splitmix64 */
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rng_below(rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }

static const char *const big_devices[N_DEVICES_BIG] = {"/cpu:0", "/cpu:1", "/cpu:2", "/cpu:3"};

/* Chains of about 50 nodes: x = tanh(x), sigmoid(x), neg(x) or, one step in eight,
   tanh(x + y) with y a node of an earlier chain; then a balanced tree of Adds over the chain
   ends. Every node (constants and the tree included) asks for a random device. */
static df_output build_big(df_graph *g, int target_nodes, uint64_t seed) {
    rng r = {seed};
    enum { CHAIN = 50 };
    int n_chains = target_nodes / (CHAIN + 1);
    if (n_chains < 2) n_chains = 2;
    int chain_budget = target_nodes - (n_chains - 1);       /* the tree adds n_chains - 1 */
    df_output *ends = (df_output *)malloc((size_t)n_chains * sizeof(df_output));
    df_output *made = (df_output *)malloc((size_t)target_nodes * 2 * sizeof(df_output));
    if (!ends || !made) die("malloc", "out of memory");
    int n_made = 0;
#define ON_RANDOM_DEVICE(expr) (df_graph_push_device(g, big_devices[rng_below(&r, N_DEVICES_BIG)]), (expr))
    for (int c = 0; c < n_chains; c++) {
        int chain_start = n_made, stop = (int)((int64_t)chain_budget * (c + 1) / n_chains);
        df_output x = ON_RANDOM_DEVICE(df_scalar_f32(g, (float)(c % 17) * 0.1f - 0.8f));
        df_graph_pop_device(g);
        made[n_made++] = x;
        while (df_graph_num_nodes(g) < stop) {
            int kind = rng_below(&r, 8);
            if (kind == 0 && chain_start > 0) {
                df_output y = made[rng_below(&r, chain_start)];
                x = ON_RANDOM_DEVICE(df_add(g, x, y));
                df_graph_pop_device(g);
                made[n_made++] = x;
                x = ON_RANDOM_DEVICE(df_tanh(g, x));
            } else if (kind <= 3) {
                x = ON_RANDOM_DEVICE(df_tanh(g, x));
            } else if (kind <= 5) {
                x = ON_RANDOM_DEVICE(df_sigmoid(g, x));
            } else {
                x = ON_RANDOM_DEVICE(df_neg(g, x));
            }
            df_graph_pop_device(g);
            made[n_made++] = x;
            if (df_graph_status(g)->code) break;
        }
        ends[c] = x;
    }
    for (int n = n_chains; n > 1; n = (n + 1) / 2)
        for (int k = 0; k < n / 2; k++) {
            ends[k] = ON_RANDOM_DEVICE(df_add(g, ends[2 * k], ends[2 * k + 1]));
            df_graph_pop_device(g);
            if (n % 2 && k == n / 2 - 1) ends[k + 1] = ends[n - 1];
        }
#undef ON_RANDOM_DEVICE
    df_output root = ends[0];
    free(ends);
    free(made);
    check_graph(g, "building the partitioning graph");
    return root;
}

typedef struct part_result {
    int    target, nodes, partitions;
    double first_ms, exec_ms, compile_ms, ns_per_node;
} part_result;

static void time_partitioning(int target_nodes, int threads, part_result *r) {
    df_graph *g = df_graph_new();
    df_output root = build_big(g, target_nodes, 0x5eed0000u + (uint64_t)target_nodes);
    double first[PART_SESSIONS], exec[PART_SESSIONS], compile[PART_SESSIONS];
    float value0 = 0.0f;
    r->target = target_nodes;
    r->nodes = df_graph_num_nodes(g);
    for (int k = 0; k < PART_SESSIONS; k++) {
        df_session *s = session(g, N_DEVICES_BIG, threads);
        double t[1 + PART_EXEC_REPS];
        for (int run = 0; run < 1 + PART_EXEC_REPS; run++) {
            df_tensor *v = NULL;
            df_status st;
            double t0 = now();
            if (df_session_run(s, NULL, NULL, 0, &root, &v, 1, NULL, 0, &st)) die("partitioning run", st.message);
            t[run] = now() - t0;
            float value = *(const float *)df_tensor_data(v);
            df_tensor_release(v);
            if (k == 0 && run == 0) value0 = value;
            else if (memcmp(&value, &value0, sizeof value))
                die("partitioning run", "the sum differs between runs");
        }
        first[k] = t[0];
        exec[k] = median(t + 1, PART_EXEC_REPS);
        compile[k] = first[k] - exec[k];
        r->partitions = df_session_num_partitions(s);
        df_session_free(s);
    }
    r->first_ms = median(first, PART_SESSIONS) * 1e3;
    r->exec_ms = median(exec, PART_SESSIONS) * 1e3;
    r->compile_ms = median(compile, PART_SESSIONS) * 1e3;
    r->ns_per_node = r->compile_ms * 1e6 / r->nodes;
    df_graph_free(g);
}

/* ---- 3. TensorFlow ---- */
typedef struct peer_result {
    double one_us, split_us;
    int    have;                   /* bits: 1 one device, 2 split, 4 result */
    int32_t i;
    float  x[WIDTH];
    char   version[64], placement[256], skip[256];
} peer_result;

static void run_peer(int threads, int n, int quick, peer_result *p) {
    memset(p, 0, sizeof *p);
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) { snprintf(p->skip, sizeof p->skip, "no .venv (bench/peers/setup.sh makes it)"); return; }
    fclose(probe);
    char log[64], cmd[512], line[512];
    snprintf(log, sizeof log, "build/tf_split_loop_%d.log", threads);
    FILE *lf = fopen(log, "w");               /* stderr goes to build/ when there is one */
    if (lf) fclose(lf);
    else snprintf(log, sizeof log, "/dev/null");
    snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_split_loop.py --threads %d --n %d%s 2>%s",
             threads, n, quick ? " --quick" : "", log);
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(p->skip, sizeof p->skip, "cannot run bench/peers/tf_split_loop.py"); return; }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "skip ", 5)) snprintf(p->skip, sizeof p->skip, "%.240s", line + 5);
        if (!strncmp(line, "tf_split_placement ", 19)) snprintf(p->placement, sizeof p->placement, "%.240s", line + 19);
        sscanf(line, "version %63s", p->version);
        if (sscanf(line, "tf_one_device_us_per_iter %lf", &p->one_us) == 1) p->have |= 1;
        if (sscanf(line, "tf_split_us_per_iter %lf", &p->split_us) == 1) p->have |= 2;
        if (sscanf(line, "tf_result %d %f %f %f %f", &p->i, &p->x[0], &p->x[1], &p->x[2], &p->x[3]) == 1 + WIDTH)
            p->have |= 4;
    }
    int status = pclose(f);
    if (!(p->have & 3) && !p->skip[0])
        snprintf(p->skip, sizeof p->skip, "tf_split_loop.py failed (status %d; see %s)", status, log);
}

static void row(const char *label, int threads, double ours, int have, double theirs) {
    if (have) printf("%-40s %7d %10.3f %11.3f %8.1fx\n", label, threads, ours, theirs, theirs / ours);
    else printf("%-40s %7d %10.3f %11s %9s\n", label, threads, ours, "-", "-");
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1, only_threads = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only_threads = atoi(argv[++i]);
        else { fprintf(stderr, "usage: bench_partition [--quick] [--no-peers] [--threads N]\n"); return 2; }
    }
    int thread_list[2] = {1, 2}, n_threads = 2;
    if (only_threads >= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        thread_list[0] = only_threads > 0 ? only_threads : cores > 0 ? (int)cores : 1;
        n_threads = 1;
    }
    const int n = quick ? 2000 : 10000;
    const int sizes[3] = {25000, 50000, 100000}, n_sizes = quick ? 2 : 3;

    loop_graph one, split;
    build_loop(&one, 0, n);
    build_loop(&split, 1, n);
    loop_result lr[2];
    for (int t = 0; t < n_threads; t++) time_loops(&one, &split, n, thread_list[t], &lr[t]);

    part_result pr[3];
    int big_threads = thread_list[n_threads - 1];
    for (int k = 0; k < n_sizes; k++) time_partitioning(sizes[k], big_threads, &pr[k]);

    peer_result tf[2];
    for (int t = 0; t < n_threads; t++) {
        if (peers) run_peer(thread_list[t], n, quick, &tf[t]);
        else memset(&tf[t], 0, sizeof tf[t]), snprintf(tf[t].skip, sizeof tf[t].skip, "--no-peers");
    }

    /* The table. */
    printf("split while loop: x = x * w + c on %d floats, %d iterations; loop on /cpu:0, Mul and Add on /cpu:1;\n"
           "median of %d runs after a warm-up; ratio = TensorFlow time / dataflow time\n", WIDTH, n, LOOP_REPS);
    printf("%-40s %7s %10s %11s %9s\n", "case", "threads", "dataflow", "tensorflow", "ratio");
    for (int t = 0; t < n_threads; t++)
        row("loop, 1 device (us/iter)", thread_list[t], lr[t].one_us, tf[t].have & 1, tf[t].one_us);
    for (int t = 0; t < n_threads; t++)
        row("split loop, 2 devices (us/iter)", thread_list[t], lr[t].split_us, tf[t].have & 2, tf[t].split_us);
    for (int t = 0; t < n_threads; t++) {
        const loop_result *r = &lr[t];
        printf("threads %d: split / one device %.2fx; split %.3f us/iter (target <= %.0f: %s)", thread_list[t],
               r->split_us / r->one_us, r->split_us, SPLIT_TARGET_US, r->split_us <= SPLIT_TARGET_US ? "met" : "NOT met");
        if (tf[t].have & 2)
            printf("; tensorflow / dataflow %.1fx (target >= %.0fx: %s)", tf[t].split_us / r->split_us,
                   PEER_TARGET_RATIO, tf[t].split_us / r->split_us >= PEER_TARGET_RATIO ? "met" : "NOT met");
        printf("\n");
    }
    printf("partitions: split loop %d (Mul in the partition of %s), one-device loop %d%s\n", lr[0].split_parts,
           lr[0].mul_device, lr[0].one_parts,
           lr[0].split_parts < 2 ? "; one partition: the split loop ran unpartitioned on one device" : "");
    printf("result (same on 1 and 2 devices): i = %d, x = [%.7g %.7g %.7g %.7g]", lr[0].i, lr[0].x[0], lr[0].x[1],
           lr[0].x[2], lr[0].x[3]);
    int bad_peer = 0;
    for (int t = 0; t < n_threads; t++) {
        if (!(tf[t].have & 4)) continue;
        int same = tf[t].i == lr[0].i;
        for (int k = 0; k < WIDTH; k++)
            same &= fabsf(tf[t].x[k] - lr[0].x[k]) <= 1e-5f * (1.0f + fabsf(lr[0].x[k]));
        if (!same) {
            printf("\nMISMATCH: tensorflow (%d threads) i = %d, x = [%.7g %.7g %.7g %.7g]", thread_list[t], tf[t].i,
                   tf[t].x[0], tf[t].x[1], tf[t].x[2], tf[t].x[3]);
            bad_peer = 1;
        } else if (t == 0) printf("; tensorflow agrees");
    }
    printf("\n");
    for (int t = 0; t < n_threads; t++) {
        if (tf[t].skip[0]) {
            if (t == 0 || strcmp(tf[t].skip, tf[0].skip)) printf("(tensorflow skipped: %s)\n", tf[t].skip);
            continue;
        }
        if (t == 0 && tf[t].version[0]) printf("(tensorflow %s", tf[t].version);
        else printf("(tensorflow");
        printf(", %d thread%s: %s)\n", thread_list[t], thread_list[t] == 1 ? "" : "s",
               tf[t].placement[0] ? tf[t].placement : "placement not reported");
    }

    printf("\npartitioning: chains of elementwise scalar ops, random devices among /cpu:0..3, 4 CPU devices, "
           "%d inter-op thread%s;\ncompile+partition = first run - execution run, median of %d sessions\n",
           big_threads, big_threads == 1 ? "" : "s", PART_SESSIONS);
    printf("%-10s %10s %14s %12s %18s %10s\n", "nodes", "partitions", "first run ms", "execute ms",
           "compile+part. ms", "ns/node");
    for (int k = 0; k < n_sizes; k++)
        printf("%-10d %10d %14.2f %12.2f %18.2f %10.1f\n", pr[k].nodes, pr[k].partitions, pr[k].first_ms,
               pr[k].exec_ms, pr[k].compile_ms, pr[k].ns_per_node);
    const part_result *lo = &pr[0], *hi = &pr[n_sizes - 1];
    double growth = hi->ns_per_node / lo->ns_per_node;
    printf("per-node compile+partition cost, %d vs %d nodes: %.2fx (linear: <= %.1fx: %s)\n", hi->nodes, lo->nodes,
           growth, LINEAR_LIMIT, growth <= LINEAR_LIMIT ? "yes" : "NO");
    if (lo->partitions < 2) printf("(one partition: the graphs ran unpartitioned on one device)\n");

    df_graph_free(one.g);
    df_graph_free(split.g);
    return bad_peer;
}
