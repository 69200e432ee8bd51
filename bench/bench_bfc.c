/* Benchmark of the BFC allocator against glibc malloc, measured side by side in one run.
       cc -std=c11 -O2 bench/bench_bfc.c dataflow.c -lm -lpthread -o build/bench_bfc   (or ./build.sh bench)
   Rows: ns per alloc/free pair (median of repetitions) for a fixed pseudo-random sequence of
   sizes with a window of 64 live blocks; aggregate pairs/s with 1 and 2 threads on one shared
   allocator; and fragmentation when replaying synthetic training-step traces. */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 64
#define N_SIZES 4096
#define PAIRS 2000000
#define REPS 9

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

/* sizes log-uniform in [lo, hi] */
static void make_sizes(size_t *sizes, uint16_t *slots, size_t lo, size_t hi, uint64_t seed) {
    int lo_bits = 0, hi_bits = 0;
    while (((size_t)1 << (lo_bits + 1)) <= lo) lo_bits++;
    while (((size_t)1 << hi_bits) < hi) hi_bits++;
    for (int i = 0; i < N_SIZES; i++) {
        int b = lo_bits + (int)(rng(&seed) % (uint64_t)(hi_bits - lo_bits));
        size_t n = ((size_t)1 << b) + (size_t)(rng(&seed) % ((size_t)1 << b));
        sizes[i] = n < lo ? lo : n > hi ? hi : n;
        slots[i] = (uint16_t)(rng(&seed) % WINDOW);
    }
}

typedef struct {
    df_bfc *bfc;               /* NULL: use malloc */
    const size_t *sizes;
    const uint16_t *slots;
    long pairs;
    int offset;                /* where in the size sequence this thread starts */
    void *window[WINDOW];
} run_ctx;

static void run_pairs(run_ctx *c) {
    void **w = c->window;
    if (c->bfc) {
        df_bfc *a = c->bfc;
        for (long i = 0; i < c->pairs; i++) {
            int k = (int)((i + c->offset) & (N_SIZES - 1));
            int s = c->slots[k];
            df_bfc_free(a, w[s]);
            char *p = (char *)df_bfc_alloc(a, c->sizes[k]);
            p[0] = (char)i;
            w[s] = p;
        }
    } else {
        for (long i = 0; i < c->pairs; i++) {
            int k = (int)((i + c->offset) & (N_SIZES - 1));
            int s = c->slots[k];
            free(w[s]);
            char *p = (char *)malloc(c->sizes[k]);
            p[0] = (char)i;
            w[s] = p;
        }
    }
}

static void drain(run_ctx *c) {
    for (int s = 0; s < WINDOW; s++) {
        if (c->bfc) df_bfc_free(c->bfc, c->window[s]); else free(c->window[s]);
        c->window[s] = NULL;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* ns per pair, median over REPS; the two allocators alternate so drift hits both alike */
static void bench_pairs(const char *name, size_t lo, size_t hi) {
    static size_t sizes[N_SIZES];
    static uint16_t slots[N_SIZES];
    make_sizes(sizes, slots, lo, hi, 0x2545F4914F6CDD1Dull);
    double t_bfc[REPS], t_mal[REPS];
    df_bfc *a = df_bfc_new(NULL);
    static run_ctx cb, cm;
    memset(&cb, 0, sizeof cb);
    memset(&cm, 0, sizeof cm);
    cb.bfc = a; cb.sizes = sizes; cb.slots = slots; cb.pairs = PAIRS / 10;
    cm = cb; cm.bfc = NULL;
    run_pairs(&cb); run_pairs(&cm);            /* warm up: regions, heap, caches */
    cb.pairs = cm.pairs = PAIRS;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        run_pairs(&cb);
        double t1 = now_s();
        run_pairs(&cm);
        double t2 = now_s();
        t_bfc[r] = (t1 - t0) * 1e9 / PAIRS;
        t_mal[r] = (t2 - t1) * 1e9 / PAIRS;
    }
    drain(&cb); drain(&cm);
    df_bfc_free_all(a);
    double b = median(t_bfc, REPS), m = median(t_mal, REPS);
    printf("%-28s %8.1f   malloc %8.1f   ratio %5.2f\n", name, b, m, b / m);
}

/* ---- threads: aggregate pairs/s on one shared allocator ---- */
typedef struct { run_ctx ctx; pthread_barrier_t *bar; } thread_arg;

static void *thread_main(void *p) {
    thread_arg *t = (thread_arg *)p;
    pthread_barrier_wait(t->bar);
    run_pairs(&t->ctx);
    return NULL;
}

static double run_threads(df_bfc *a, int n_threads, const size_t *sizes, const uint16_t *slots,
                          long pairs) {
    pthread_t th[8];
    thread_arg args[8];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n_threads + 1);
    for (int i = 0; i < n_threads; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].ctx.bfc = a; args[i].ctx.sizes = sizes; args[i].ctx.slots = slots;
        args[i].ctx.pairs = pairs;
        args[i].ctx.offset = i * (N_SIZES / 3);
        args[i].bar = &bar;
        pthread_create(&th[i], NULL, thread_main, &args[i]);
    }
    pthread_barrier_wait(&bar);
    double t0 = now_s();
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    double t = now_s() - t0;
    for (int i = 0; i < n_threads; i++) drain(&args[i].ctx);
    pthread_barrier_destroy(&bar);
    return (double)pairs * n_threads / t;
}

static void bench_threads(int n_threads) {
    static size_t sizes[N_SIZES];
    static uint16_t slots[N_SIZES];
    make_sizes(sizes, slots, 16, 64 << 10, 0x9E3779B97F4A7C15ull);
    double r_bfc[5], r_mal[5];
    df_bfc *a = df_bfc_new(NULL);
    run_threads(a, n_threads, sizes, slots, PAIRS / 20);
    run_threads(NULL, n_threads, sizes, slots, PAIRS / 20);
    for (int r = 0; r < 5; r++) {
        r_bfc[r] = run_threads(a, n_threads, sizes, slots, PAIRS / 2) / 1e6;
        r_mal[r] = run_threads(NULL, n_threads, sizes, slots, PAIRS / 2) / 1e6;
    }
    df_bfc_free_all(a);
    double b = median(r_bfc, 5), m = median(r_mal, 5);
    char name[64];
    snprintf(name, sizeof name, "bfc_mixed_%dthr_Mpairs_s", n_threads);
    printf("%-28s %8.2f   malloc %8.2f   ratio %5.2f\n", name, b, m, b / m);
}

/* ---- fragmentation: synthetic training-step traces ---- */
/* An event allocates (size > 0) or frees (size == 0) the tensor with id `id`. */
typedef struct { int id; size_t size; } trace_event;
typedef struct { trace_event *ev; int n, cap, next_id; } trace;

static int t_alloc(trace *t, size_t size) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->ev = (trace_event *)realloc(t->ev, (size_t)t->cap * sizeof *t->ev);
        if (!t->ev) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
    t->ev[t->n].id = t->next_id;
    t->ev[t->n].size = size;
    t->n++;
    return t->next_id++;
}
static void t_free(trace *t, int id) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->ev = (trace_event *)realloc(t->ev, (size_t)t->cap * sizeof *t->ev);
        if (!t->ev) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
    t->ev[t->n].id = id;
    t->ev[t->n].size = 0;
    t->n++;
}

/* A convnet (conv-relu-pool x3, then two dense layers), batch 32, trained for `steps` steps:
   forward keeps activations, im2col temporaries die at once; backward frees in reverse;
   the optimizer updates weights with temporaries; small scalars throughout. The last batch is
   smaller, as at the end of an epoch. */
static void make_convnet_trace(trace *t, int steps) {
    enum { L = 5 };
    const size_t f = sizeof(float);
    const size_t cin[L] = {3, 32, 64, 8192, 256}, cout[L] = {32, 64, 128, 256, 10};
    const size_t hw[L] = {64, 32, 16, 1, 1};            /* spatial size at the layer's input */
    const int conv[L] = {1, 1, 1, 0, 0};
    for (int l = 0; l < L; l++) {                        /* weights and momentum: persistent */
        size_t n = conv[l] ? 3 * 3 * cin[l] * cout[l] : cin[l] * cout[l];
        t_alloc(t, n * f);
        t_alloc(t, n * f);
        t_alloc(t, cout[l] * f);                         /* bias, never freed */
    }
    for (int s = 0; s < steps; s++) {
        size_t batch = s == steps - 1 ? 20 : 32;
        int x = t_alloc(t, batch * 3 * 64 * 64 * f), labels = t_alloc(t, batch * 4);
        int act[L + 1], pre[L], argm[L];
        act[0] = x;
        for (int l = 0; l < L; l++) {
            size_t out = conv[l] ? batch * cout[l] * hw[l] * hw[l] : batch * cout[l];
            if (conv[l]) {
                int col = t_alloc(t, batch * 9 * cin[l] * hw[l] * hw[l] * f);   /* im2col */
                pre[l] = t_alloc(t, out * f);            /* conv output, kept for relu' */
                t_free(t, col);
                int scalar = t_alloc(t, 4);
                act[l + 1] = t_alloc(t, out / 4 * f);    /* relu + maxpool 2x2 */
                argm[l] = t_alloc(t, out / 4 * 4);       /* pool indices, kept */
                t_free(t, scalar);
            } else {
                pre[l] = act[l + 1] = t_alloc(t, out * f);   /* matmul + bias */
                argm[l] = -1;
            }
        }
        int loss = t_alloc(t, 4), probs = t_alloc(t, batch * 10 * f);
        int grad = t_alloc(t, batch * 10 * f);           /* d loss / d logits */
        t_free(t, probs);
        t_free(t, loss);
        for (int l = L - 1; l >= 0; l--) {
            size_t n = conv[l] ? 3 * 3 * cin[l] * cout[l] : cin[l] * cout[l];
            size_t in = conv[l] ? batch * cin[l] * hw[l] * hw[l] : batch * cin[l];
            int gw = t_alloc(t, n * f), gb = t_alloc(t, cout[l] * f);
            if (conv[l]) {
                int gpre = t_alloc(t, batch * cout[l] * hw[l] * hw[l] * f);   /* unpool, relu' */
                t_free(t, grad);
                t_free(t, argm[l]);
                t_free(t, pre[l]);
                grad = gpre;
            }
            t_free(t, act[l + 1]);
            int col = conv[l] ? t_alloc(t, batch * 9 * cin[l] * hw[l] * hw[l] * f) : -1;
            int gin = l > 0 ? t_alloc(t, in * f) : -1;   /* col2im / matmul into the input grad */
            if (col >= 0) t_free(t, col);
            t_free(t, grad);
            grad = gin;
            /* optimizer: momentum update with a temporary, then the gradients die */
            int upd = t_alloc(t, n * f);
            t_free(t, upd);
            t_free(t, gw);
            t_free(t, gb);
        }
        t_free(t, x);
        t_free(t, labels);
    }
}

/* A 4-layer MLP with batch 256 and layer widths that are not powers of two. */
static void make_mlp_trace(trace *t, int steps) {
    enum { L = 4 };
    const size_t f = sizeof(float), dims[L + 1] = {784, 1000, 700, 300, 10};
    for (int l = 0; l < L; l++) {
        t_alloc(t, dims[l] * dims[l + 1] * f);
        t_alloc(t, dims[l] * dims[l + 1] * f);           /* Adam slots */
        t_alloc(t, dims[l] * dims[l + 1] * f);
        t_alloc(t, dims[l + 1] * f);
    }
    for (int s = 0; s < steps; s++) {
        size_t batch = 256 - (size_t)(s % 3) * 8;        /* ragged batches */
        int act[L + 1];
        act[0] = t_alloc(t, batch * dims[0] * f);
        for (int l = 0; l < L; l++) {
            int z = t_alloc(t, batch * dims[l + 1] * f);
            int sc = t_alloc(t, 8);
            act[l + 1] = t_alloc(t, batch * dims[l + 1] * f);   /* activation(z) */
            t_free(t, sc);
            t_free(t, z);
        }
        int grad = t_alloc(t, batch * dims[L] * f);
        for (int l = L - 1; l >= 0; l--) {
            int gw = t_alloc(t, dims[l] * dims[l + 1] * f);
            int gin = t_alloc(t, batch * dims[l] * f);
            t_free(t, grad);
            t_free(t, act[l + 1]);
            int m1 = t_alloc(t, dims[l] * dims[l + 1] * f), m2 = t_alloc(t, dims[l] * dims[l + 1] * f);
            t_free(t, m1);
            t_free(t, m2);
            t_free(t, gw);
            grad = gin;
        }
        t_free(t, grad);
        t_free(t, act[0]);
    }
}

/* Replays a trace; returns 0 on out of memory. */
static int replay(const trace *t, df_bfc *a, df_alloc_stats *st) {
    void **ptr = (void **)calloc((size_t)t->next_id + 1, sizeof *ptr);
    int ok = 1;
    for (int i = 0; i < t->n && ok; i++) {
        const trace_event *e = &t->ev[i];
        if (e->size) {
            ptr[e->id] = df_bfc_alloc(a, e->size);
            if (!ptr[e->id]) ok = 0;
            else ((char *)ptr[e->id])[0] = 1;
        } else {
            df_bfc_free(a, ptr[e->id]);
            ptr[e->id] = NULL;
        }
    }
    df_bfc_get_stats(a, st);
    for (int i = 0; i <= t->next_id; i++) df_bfc_free(a, ptr[i]);
    free(ptr);
    return ok;
}

static void bench_fragmentation(const char *name, void (*make)(trace *, int)) {
    trace t = {0};
    make(&t, 12);
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.allow_growth = 1;
    df_bfc *a = df_bfc_new(&o);
    df_alloc_stats st;
    replay(&t, a, &st);
    df_bfc_free_all(a);
    double peak_mib = (double)st.peak_bytes_in_use / (1 << 20);
    char row[64];
    snprintf(row, sizeof row, "%s_reserved/peak", name);
    printf("%-28s %8.3f   (allow_growth; peak in use %.1f MiB, peak reserved %.1f MiB)\n", row,
           (double)st.peak_bytes_reserved / (double)st.peak_bytes_in_use, peak_mib,
           (double)st.peak_bytes_reserved / (1 << 20));
    /* the smallest single region (allow_growth off) that runs the whole trace: BFC's own
       fragmentation, without the doubling policy's slack */
    size_t lo = (size_t)st.peak_bytes_in_use, hi = (size_t)st.peak_bytes_in_use * 2;
    while (hi - lo > 4096) {
        size_t mid = (lo + hi) / 2;
        o.allow_growth = 0;
        o.memory_limit = mid;
        df_bfc *b = df_bfc_new(&o);
        df_alloc_stats s2;
        if (replay(&t, b, &s2)) hi = mid; else lo = mid;
        df_bfc_free_all(b);
    }
    snprintf(row, sizeof row, "%s_minlimit/peak", name);
    printf("%-28s %8.4f   (smallest single-region memory_limit that runs it: %.1f MiB)\n", row,
           (double)hi / (double)st.peak_bytes_in_use, (double)hi / (1 << 20));
    free(t.ev);
}

/* `bench_bfc count N [lo hi]`: N single-thread alloc/free pairs on one allocator, nothing else,
   for instruction counts (valgrind --tool=callgrind): the difference of two N, divided by the
   difference of N, is the cost of one pair without the warm-up. */
static int count_pairs(long n, size_t lo, size_t hi) {
    static size_t sizes[N_SIZES];
    static uint16_t slots[N_SIZES];
    make_sizes(sizes, slots, lo, hi, 0x2545F4914F6CDD1Dull);
    df_bfc *a = df_bfc_new(NULL);
    static run_ctx c;
    memset(&c, 0, sizeof c);
    c.bfc = a; c.sizes = sizes; c.slots = slots; c.pairs = N_SIZES * 4;
    run_pairs(&c);                             /* warm up: regions, caches */
    c.pairs = n;
    run_pairs(&c);
    drain(&c);
    df_alloc_stats st;
    df_bfc_get_stats(a, &st);
    df_bfc_free_all(a);
    printf("%ld pairs of %zu to %zu bytes: %lld allocations, %lld bytes in use at the end\n", n,
           lo, hi, (long long)st.num_allocs, (long long)st.bytes_in_use);
    return st.bytes_in_use != 0;
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : "";          /* e.g. "pair", "thr", "frag" */
    if (!strcmp(only, "count") && argc > 2)
        return count_pairs(atol(argv[2]), argc > 4 ? (size_t)atol(argv[3]) : 16,
                           argc > 4 ? (size_t)atol(argv[4]) : 1024);
    printf("%-28s %8s   %-15s   %s\n", "benchmark (df_bfc)", "ours", "peer", "ours/peer");
    if (strstr("bfc_pair_small", only)) bench_pairs("bfc_pair_small_ns", 16, 1024);
    if (strstr("bfc_pair_mixed", only)) bench_pairs("bfc_pair_mixed_ns", 16, 64 << 10);
    if (strstr("bfc_pair_large", only)) bench_pairs("bfc_pair_large_ns", 64 << 10, 1 << 20);
    if (strstr("bfc_1thr", only)) bench_threads(1);
    if (strstr("bfc_2thr", only)) bench_threads(2);
    if (strstr("frag_convnet", only)) bench_fragmentation("frag_convnet", make_convnet_trace);
    if (strstr("frag_mlp", only)) bench_fragmentation("frag_mlp", make_mlp_trace);
    return 0;
}
