/* bench_index.c - the indexing, scatter and segment kernels (src/kernels/index.c) on large
   tensors, as bandwidth: the bytes each op must read and write (data and result; the indices
   apart) over its median time, against memcpy of the same bytes. Cases:
     gather_nd rows    GatherNd of 262144 rows of 64 floats (indices [262144,1], shuffled)
     gather_nd elems   GatherNd of 4M single floats from a [2048,2048] matrix (indices [4M,2])
     scatter_nd rows   ScatterNd of 262144 rows of 64 floats into [262144,64] (a permutation)
     segment_sum       SegmentSum of [1M,16] floats, 16 rows a segment (sorted ids)
     unsorted_max      UnsortedSegmentMax of [1M,16] floats into 65536 segments (shuffled ids)
   with 1 thread and with 2 (the session's intra-op threads). The optional peer,
   bench/peers/tf_index.py, times the same ops and sizes in TensorFlow (graph mode, the same
   thread counts); run it from the repository root with a python that has TensorFlow:
     bench_index [--quick] [--no-peers] [--python PATH]
   Timing: 2 warm-up runs, then the median of individually timed runs (inputs fed, so nothing
   is folded away; a fed tensor is not copied). */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <stdint.h>

static void die(const char *what, const char *msg) { fprintf(stderr, "bench_index: %s: %s\n", what, msg); exit(1); }
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17; return rng_state; }
static df_tensor *tensor(df_dtype t, int rank, const int64_t *dims) {
    df_status st;
    df_tensor *x = df_tensor_new(t, rank, dims, &st);
    if (!x) die("df_tensor_new", st.message);
    return x;
}
static df_tensor *floats(int rank, const int64_t *dims) {
    df_tensor *x = tensor(DF_FLOAT, rank, dims);
    float *p = (float *)df_tensor_data(x);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) p[i] = (float)(rnd() % 1000) * 0.001f - 0.5f;
    return x;
}
/* A shuffled permutation of [0, n) (as int32), each value repeated `rep` times in a row if sorted. */
static void shuffle(int32_t *v, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) { int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1)); int32_t t = v[i]; v[i] = v[j]; v[j] = t; }
}
typedef struct { const char *name; const char *op; int n_in; df_tensor *in[3]; double bytes; double secs[2]; } bcase;

static double time_case(bcase *k, int threads, int reps) {
    df_graph *g = df_graph_new();
    df_output ph[3];
    for (int i = 0; i < k->n_in; i++) {
        int64_t dims[DF_MAX_RANK];
        int r = df_tensor_rank(k->in[i]);
        for (int d = 0; d < r; d++) dims[d] = df_tensor_dim(k->in[i], d);
        char nm[16];
        snprintf(nm, sizeof nm, "in%d", i);
        ph[i] = df_placeholder(g, nm, df_tensor_dtype(k->in[i]), r, dims);
    }
    df_op_builder *b = df_op_new(g, k->op, NULL);
    for (int i = 0; i < k->n_in; i++) df_op_add_input(b, ph[i]);
    df_output y = {df_op_finish(b), 0};
    if (!y.node) die(k->op, df_graph_status(g)->message);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) die("df_session_new", st.message);
    double t[64];
    int n = 0;
    for (int i = 0; i < reps + 2; i++) {
        df_tensor *v = NULL;
        double t0 = now();
        if (df_session_run(s, ph, k->in, k->n_in, &y, &v, 1, NULL, 0, &st)) die(k->name, st.message);
        double dt = now() - t0;
        df_tensor_release(v);
        if (i >= 2) t[n++] = dt;
    }
    df_session_free(s);
    df_graph_free(g);
    return median(t, n);
}
static double time_memcpy(size_t bytes, int reps) {
    char *a = (char *)malloc(bytes), *b = (char *)malloc(bytes);
    if (!a || !b) die("malloc", "out of memory");
    memset(a, 1, bytes); memset(b, 2, bytes);
    double t[64];
    for (int i = 0; i < reps + 2; i++) {
        double t0 = now();
        memcpy(b, a, bytes);
        double dt = now() - t0;
        if (i >= 2) t[i - 2] = dt;
        a[i % bytes] = b[(i * 7) % bytes];
    }
    free(a); free(b);
    return median(t, reps);
}
/* The peer's seconds for `name` at `threads` (0 if not found). Lines: "name threads seconds". */
static double peer_secs(const char *out, const char *name, int threads) {
    char key[96];
    snprintf(key, sizeof key, "%s %d ", name, threads);
    const char *p = strstr(out, key);
    return p ? atof(p + strlen(key)) : 0.0;
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1;
    const char *python = ".venv/bin/python";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else { fprintf(stderr, "usage: bench_index [--quick] [--no-peers] [--python PATH]\n"); return 2; }
    }
    int reps = quick ? 3 : 9, scale = quick ? 4 : 1;
    int64_t R = 262144 / scale, E = 4194304 / scale, S = 1048576 / scale;
    bcase cases[5];
    memset(cases, 0, sizeof cases);
    /* gather_nd rows */
    {
        df_tensor *ix = tensor(DF_INT32, 2, (int64_t[]){R, 1});
        int32_t *v = (int32_t *)df_tensor_data(ix);
        for (int64_t i = 0; i < R; i++) v[i] = (int32_t)i;
        shuffle(v, R);
        cases[0] = (bcase){"gather_nd rows", "GatherNd", 2, {floats(2, (int64_t[]){R, 64}), ix}, 2.0 * (double)R * 64 * 4, {0, 0}};
    }
    {
        df_tensor *ix = tensor(DF_INT32, 2, (int64_t[]){E, 2});
        int32_t *v = (int32_t *)df_tensor_data(ix);
        for (int64_t i = 0; i < 2 * E; i++) v[i] = (int32_t)(rnd() % 2048);
        cases[1] = (bcase){"gather_nd elems", "GatherNd", 2, {floats(2, (int64_t[]){2048, 2048}), ix}, 2.0 * (double)E * 4, {0, 0}};
    }
    {
        df_tensor *ix = tensor(DF_INT32, 2, (int64_t[]){R, 1}), *shp = tensor(DF_INT32, 1, (int64_t[]){2});
        int32_t *v = (int32_t *)df_tensor_data(ix);
        for (int64_t i = 0; i < R; i++) v[i] = (int32_t)i;
        shuffle(v, R);
        ((int32_t *)df_tensor_data(shp))[0] = (int32_t)R;
        ((int32_t *)df_tensor_data(shp))[1] = 64;
        /* zero the output, then read the updates and read-modify-write the rows: count 3 passes */
        cases[2] = (bcase){"scatter_nd rows", "ScatterNd", 3, {ix, floats(2, (int64_t[]){R, 64}), shp}, 3.0 * (double)R * 64 * 4, {0, 0}};
    }
    {
        df_tensor *ids = tensor(DF_INT32, 1, (int64_t[]){S});
        int32_t *v = (int32_t *)df_tensor_data(ids);
        for (int64_t i = 0; i < S; i++) v[i] = (int32_t)(i / 16);
        cases[3] = (bcase){"segment_sum", "SegmentSum", 2, {floats(2, (int64_t[]){S, 16}), ids}, (double)S * 16 * 4 * (1.0 + 1.0 / 16), {0, 0}};
    }
    {
        df_tensor *ids = tensor(DF_INT32, 1, (int64_t[]){S}), *num = tensor(DF_INT32, 0, NULL);
        int32_t *v = (int32_t *)df_tensor_data(ids);
        for (int64_t i = 0; i < S; i++) v[i] = (int32_t)(i / 16);
        shuffle(v, S);
        *(int32_t *)df_tensor_data(num) = (int32_t)(S / 16);
        cases[4] = (bcase){"unsorted_max", "UnsortedSegmentMax", 3, {floats(2, (int64_t[]){S, 16}), ids, num}, (double)S * 16 * 4 * (1.0 + 1.0 / 16), {0, 0}};
    }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("bench_index: %s, %d reps (median)%s\n", cpu, reps, quick ? ", quick sizes" : "");
    double mc = time_memcpy((size_t)R * 64 * 4, reps);
    printf("memcpy of %.0f MB: %.2f ms, %.2f GB/s (read + write)\n", (double)R * 64 * 4 / 1e6, mc * 1e3, 2.0 * (double)R * 64 * 4 / mc / 1e9);
    char pout[4096] = "";
    if (peers) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s bench/peers/tf_index.py --scale %d --reps %d 2>/dev/null", python, scale, reps);
        FILE *f = fopen(python, "r");
        if (f) {
            fclose(f);
            FILE *p = popen(cmd, "r");
            if (p) { size_t n = fread(pout, 1, sizeof pout - 1, p); pout[n] = 0; pclose(p); }
        }
        if (!pout[0]) printf("(no TensorFlow peer: %s not found or failed)\n", python);
    }
    printf("%-16s %8s %10s %8s %10s %8s %10s %10s\n", "case", "1 thr ms", "GB/s", "memcpy%", "2 thr ms", "GB/s", "TF 1thr ms", "TF 2thr ms");
    for (int k = 0; k < 5; k++) {
        bcase *c = &cases[k];
        for (int t = 0; t < 2; t++) c->secs[t] = time_case(c, t + 1, reps);
        double bw1 = c->bytes / c->secs[0] / 1e9, bw2 = c->bytes / c->secs[1] / 1e9, mbw = 2.0 * (double)R * 64 * 4 / mc / 1e9;
        double p1 = peer_secs(pout, c->name, 1), p2 = peer_secs(pout, c->name, 2);
        printf("%-16s %8.2f %10.2f %7.0f%% %10.2f %8.2f", c->name, c->secs[0] * 1e3, bw1, 100.0 * bw1 / mbw, c->secs[1] * 1e3, bw2);
        if (p1 > 0) printf(" %10.2f %10.2f   (TF/ours at 2 threads: %.2fx)", p1 * 1e3, p2 * 1e3, p2 / c->secs[1]);
        printf("\n");
        for (int i = 0; i < c->n_in; i++) df_tensor_release(c->in[i]);
    }
    return 0;
}
