/* GEMM benchmark: the library's df_gemm_f32 / df_gemm_f64 against OpenBLAS in the same run.

   1. SGEMM, row-major C = A B: square n = 64, 128, 256, 512, 1024, 2048, 4096 (--quick: up to
      1024; n = 4096 one call per measurement)
      and tall-skinny shapes (16384 x 64 x 64, 16384 x 128 x 128, 1024 x 1024 x 64), with 1 and
      2 threads, against cblas_sgemm(CblasRowMajor) with openblas_set_num_threads set to the
      same count. GFLOPS = 2mnk / time for both, the ratio dataflow / OpenBLAS, and each as a
      fraction of the machine's FMA peak measured here.
   2. DGEMM, square n = 128, 512, 1024, against cblas_dgemm, 1 thread.
   3. Agreement: the largest |dataflow - OpenBLAS| over the whole of C, relative to the largest
      |C| from OpenBLAS, after the warm-up and again after the timed calls (a race between
      threads shows in the second); and, with or without OpenBLAS, sampled entries against a
      float64 dot product. Over 1e-3 (float) or 1e-9 (double) exits with status 1.

   Timing: a warm-up call, then calls repeated for at least 0.2 s (0.05 s with --quick) make one
   measurement; the figure is the median of 5 measurements. The two libraries take turns in
   bursts of 0.02 s within each measurement, so both see the same load on a noisy machine.
   With several threads a turn is a whole measurement, followed by a pause after OpenBLAS's:
   its idle threads spin for a while after a call, and that would slow ours.

   FMA peak: a loop of AVX2 FMAs (AVX-512 ones when the library runs its AVX-512 kernels) on 12 independent register accumulators (enough to cover the
   FMA latency on two pipes), no memory traffic, best of 7 runs; 1 thread, and N threads at
   once for the N-thread peak (on a VM two vCPUs may share one core's FMA units). The float64
   peak is half the float32 one (same instructions, half the lanes). Without AVX2+FMA no peak
   is given.

   OpenBLAS is loaded at run time (dlopen "libopenblas.so.0"), so this builds and runs
   without it; then it says so and prints our figures alone (bench/peers/setup.sh installs it).
   Target (issue 31): dataflow >= 1.0x OpenBLAS at every square n, 1 and 2 threads. OpenBLAS
   0.3.21 takes a CPU it does not know (AMD Zen 4/5 with AVX-512) for Haswell: set
   OPENBLAS_CORETYPE=SkylakeX to compare with its AVX-512 kernels, Haswell with --isa avx2.
   "best ratio": the same ratio from the fastest of the measurements of each (on a loaded
   machine the least disturbed figure; the median is the one to quote on a quiet one).
   4. --rnn: instead of 1-3, the small products of a digits RNN training step (batch 64, 8
      inputs, 32 units, 10 classes: the forward products and their gradients, with transposes),
      ours alone on one thread: ns a call (best of 15 measurements of 2000 calls) and the sum over
      one step (each loop product 8 times).
   Usage: bench_gemm [--quick] [--no-peers] [--threads N] [--isa auto|portable|avx2|avx512]
                     [--sizes N,N,...] [--rnn]
   (--threads N: only N threads instead of 1 and 2, 0 meaning the number of cores; --no-peers:
   skip OpenBLAS; --isa: df_set_kernel_isa first; --sizes: only these square sizes, no tall
   shapes, no DGEMM) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BENCH_X86 1
#endif

enum { REPS = 5, PEAK_RUNS = 7, MAX_THREAD_COUNTS = 2, N_SAMPLES = 61 };
#define FLOAT_TOLERANCE 1e-3
#define DOUBLE_TOLERANCE 1e-9
#define BIG_RATIO_TARGET 1.0
#define OPENBLAS_SETTLE_S 0.15   /* OpenBLAS's default thread timeout is 2^28 cycles, ~0.1 s */
#define BURST_S 0.02             /* one library's turn, single-threaded */

static void pause_s(double s) {
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}
static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_gemm: %s: %s\n", what, msg);
    exit(1);
}
static void *alloc_aligned(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64)) die("posix_memalign", "out of memory");
    return p;
}

typedef struct rng { uint64_t state; } rng;
static uint64_t rng_next(rng *r) {                   /* splitmix64 */
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * (2.0 / 9007199254740992.0) - 1.0; }

/* ---- OpenBLAS, loaded at run time ---- */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };   /* cblas.h's values */
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int,
                         double, double *, int);
typedef void (*set_threads_fn)(int);
typedef char *(*get_string_fn)(void);
typedef struct openblas {
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    set_threads_fn set_threads;
    char about[160], skip[160];
} openblas;

/* dlsym's object pointer into a function pointer without the cast ISO C leaves undefined. */
static void *symbol(void *lib, const char *name, void *fn_out, size_t fn_size) {
    void *s = dlsym(lib, name);
    if (s) memcpy(fn_out, &s, fn_size);
    return s;
}
static void load_openblas(openblas *ob) {
    memset(ob, 0, sizeof *ob);
    const char *names[2] = {"libopenblas.so.0", "libopenblas.so"};
    void *lib = NULL;
    for (int i = 0; i < 2 && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(ob->skip, sizeof ob->skip, "OpenBLAS not found (libopenblas.so.0; bench/peers/setup.sh installs it)");
        return;
    }
    get_string_fn config = NULL, corename = NULL;
    if (!symbol(lib, "cblas_sgemm", &ob->sgemm, sizeof ob->sgemm) ||
        !symbol(lib, "cblas_dgemm", &ob->dgemm, sizeof ob->dgemm) ||
        !symbol(lib, "openblas_set_num_threads", &ob->set_threads, sizeof ob->set_threads)) {
        snprintf(ob->skip, sizeof ob->skip,
                 "libopenblas.so.0 lacks cblas_sgemm, cblas_dgemm or openblas_set_num_threads");
        ob->sgemm = NULL;
        return;
    }
    symbol(lib, "openblas_get_config", &config, sizeof config);
    symbol(lib, "openblas_get_corename", &corename, sizeof corename);
    snprintf(ob->about, sizeof ob->about, "%s%s%s", config ? config() : "OpenBLAS", corename ? ", kernels for " : "",
             corename ? corename() : "");
    /* the library stays loaded for the life of the process */
}

/* ---- FMA peak ---- */
static volatile float peak_sink;

#ifdef BENCH_X86
/* 12 chains c = c * a + b of 8 floats each: 192 flops per iteration, no loads or stores. The
   chains start apart so that no compiler can merge them. */
__attribute__((target("avx2,fma"))) static float fma_loop(int64_t iters, float seed) {
    const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(seed * 1e-7f);
#define ACC(i) __m256 c##i = _mm256_set1_ps(seed + 0.01f * (float)(i))
    ACC(0); ACC(1); ACC(2); ACC(3); ACC(4); ACC(5); ACC(6); ACC(7); ACC(8); ACC(9); ACC(10); ACC(11);
#undef ACC
    for (int64_t it = 0; it < iters; it++) {
        c0 = _mm256_fmadd_ps(c0, a, b); c1 = _mm256_fmadd_ps(c1, a, b); c2 = _mm256_fmadd_ps(c2, a, b);
        c3 = _mm256_fmadd_ps(c3, a, b); c4 = _mm256_fmadd_ps(c4, a, b); c5 = _mm256_fmadd_ps(c5, a, b);
        c6 = _mm256_fmadd_ps(c6, a, b); c7 = _mm256_fmadd_ps(c7, a, b); c8 = _mm256_fmadd_ps(c8, a, b);
        c9 = _mm256_fmadd_ps(c9, a, b); c10 = _mm256_fmadd_ps(c10, a, b); c11 = _mm256_fmadd_ps(c11, a, b);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                             _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}
/* The same with 512-bit registers (16 floats a chain: 384 flops per iteration), used for the
   peak when the library runs its AVX-512 kernels. */
__attribute__((target("avx512f"))) static float fma_loop512(int64_t iters, float seed) {
    const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(seed * 1e-7f);
#define ACC(i) __m512 c##i = _mm512_set1_ps(seed + 0.01f * (float)(i))
    ACC(0); ACC(1); ACC(2); ACC(3); ACC(4); ACC(5); ACC(6); ACC(7); ACC(8); ACC(9); ACC(10); ACC(11);
#undef ACC
    for (int64_t it = 0; it < iters; it++) {
        c0 = _mm512_fmadd_ps(c0, a, b); c1 = _mm512_fmadd_ps(c1, a, b); c2 = _mm512_fmadd_ps(c2, a, b);
        c3 = _mm512_fmadd_ps(c3, a, b); c4 = _mm512_fmadd_ps(c4, a, b); c5 = _mm512_fmadd_ps(c5, a, b);
        c6 = _mm512_fmadd_ps(c6, a, b); c7 = _mm512_fmadd_ps(c7, a, b); c8 = _mm512_fmadd_ps(c8, a, b);
        c9 = _mm512_fmadd_ps(c9, a, b); c10 = _mm512_fmadd_ps(c10, a, b); c11 = _mm512_fmadd_ps(c11, a, b);
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                             _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
    return _mm512_reduce_add_ps(s);
}
static int use_512;   /* set when df_kernel_isa() is "avx512": the peak loop uses zmm registers */
static float peak_loop(int64_t iters, float seed) {
    return use_512 ? fma_loop512(iters, seed) : fma_loop(iters, seed);
}
#define FLOPS_PER_ITER (use_512 ? 384.0 : 192.0)
#define FMA_PEAK_NAME (use_512 ? "AVX-512" : "AVX2")

static int have_avx2_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

typedef struct peak_worker {
    pthread_barrier_t *start;
    int64_t iters;
    float seed;
} peak_worker;
static void *peak_thread(void *arg) {
    peak_worker *w = (peak_worker *)arg;
    pthread_barrier_wait(w->start);
    peak_sink = peak_loop(w->iters, w->seed);
    return NULL;
}
/* Seconds for `threads` threads that each run `iters` iterations at once (wall clock from the
   common start to the last one's end; thread creation is outside it). */
static double time_fma(int threads, int64_t iters) {
    if (threads <= 1) {
        double t0 = now();
        peak_sink = peak_loop(iters, 1.0f);
        return now() - t0;
    }
    pthread_t tid[64];
    peak_worker w[64];
    pthread_barrier_t start;
    if (threads > 64) threads = 64;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    int made = 0;
    for (; made < threads; made++) {
        w[made].start = &start;
        w[made].iters = iters;
        w[made].seed = 1.0f + 0.001f * (float)made;
        if (pthread_create(&tid[made], NULL, peak_thread, &w[made])) die("pthread_create", "cannot start a thread");
    }
    pthread_barrier_wait(&start);
    double t0 = now();
    for (int i = 0; i < made; i++) pthread_join(tid[i], NULL);
    double dt = now() - t0;
    pthread_barrier_destroy(&start);
    return dt;
}
/* Float32 GFLOPS of `threads` threads together: the best of PEAK_RUNS runs of about `seconds`
   each. The best, not the median: a loop with no memory traffic is only ever slowed down by the
   machine (another tenant, a migration), so its fastest run is the closest to the hardware. */
static double fma_peak(int threads, double seconds) {
    if (threads > 64) threads = 64;
    int64_t iters = 1 << 16;
    double dt;
    while ((dt = time_fma(1, iters)) < 0.02) iters *= 2;
    iters = (int64_t)((double)iters * seconds / dt) + 1;
    double best = 0.0;
    for (int r = 0; r < PEAK_RUNS; r++) {
        double g = FLOPS_PER_ITER * (double)iters * threads / time_fma(threads, iters) * 1e-9;
        if (g > best) best = g;
    }
    return best;
}
#else
#define FMA_PEAK_NAME "AVX2"
static int have_avx2_fma(void) { return 0; }
static double fma_peak(int threads, double seconds) { (void)threads; (void)seconds; return 0.0; }
#endif

/* ---- the products ---- */
typedef struct gemm_case {
    const char *kind;              /* "square" or "tall" */
    int64_t m, n, k;
    int dbl, threads;
    /* results */
    double ours_gflops, ob_gflops, ob_diff, ref_diff;
    double ours_best, ob_best;     /* GFLOPS of the fastest of the REPS measurements */
    int have_ob;
} gemm_case;

typedef struct operands {
    void *a, *b, *c_ours, *c_ob;
} operands;

enum { LIB_OURS = 0, LIB_OPENBLAS = 1 };

static void call_gemm(int lib, const gemm_case *g, const openblas *ob, const operands *o) {
    if (lib == LIB_OPENBLAS) {
        if (g->dbl) ob->dgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)g->m, (int)g->n, (int)g->k, 1.0,
                              (const double *)o->a, (int)g->k, (const double *)o->b, (int)g->n, 0.0,
                              (double *)o->c_ob, (int)g->n);
        else ob->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)g->m, (int)g->n, (int)g->k, 1.0f,
                       (const float *)o->a, (int)g->k, (const float *)o->b, (int)g->n, 0.0f, (float *)o->c_ob,
                       (int)g->n);
        return;
    }
    df_code code = g->dbl ? df_gemm_f64(0, 0, g->m, g->n, g->k, (const double *)o->a, g->k, (const double *)o->b,
                                        g->n, (double *)o->c_ours, g->n, g->threads)
                          : df_gemm_f32(0, 0, g->m, g->n, g->k, (const float *)o->a, g->k, (const float *)o->b,
                                        g->n, (float *)o->c_ours, g->n, g->threads);
    if (code != DF_OK) die(g->dbl ? "df_gemm_f64" : "df_gemm_f32", "returned an error");
}

/* Calls until `seconds` have passed; adds the time and the count to *time, *calls. */
static void burst(int lib, const gemm_case *g, const openblas *ob, const operands *o, double seconds, double *time,
                  int64_t *calls) {
    double t0 = now(), dt;
    do {
        call_gemm(lib, g, ob, o);
        (*calls)++;
    } while ((dt = now() - t0) < seconds);
    *time += dt;
}

/* One measurement of each library: bursts of calls, the libraries taking turns (and turns at
   going first), until each has run for min_time; seconds per call into t_ours, t_ob. Short
   bursts let both libraries see the same load; with several threads a burst is the whole
   min_time, and a pause follows each OpenBLAS burst, for its spinning threads to go idle. */
static void measure(const gemm_case *g, const openblas *ob, const operands *o, double min_time, int round,
                    double *t_ours, double *t_ob) {
    int threaded_peer = g->have_ob && g->threads > 1;
    double slice = threaded_peer ? min_time : BURST_S, time[2] = {0.0, 0.0};
    int64_t calls[2] = {0, 0};
    for (int turn = round & 1; time[LIB_OURS] < min_time || (g->have_ob && time[LIB_OPENBLAS] < min_time); turn++) {
        int lib = (turn & 1) ? LIB_OPENBLAS : LIB_OURS;
        if (lib == LIB_OPENBLAS && !g->have_ob) continue;
        if (time[lib] >= min_time) continue;
        burst(lib, g, ob, o, slice, &time[lib], &calls[lib]);
        if (lib == LIB_OPENBLAS && threaded_peer) pause_s(OPENBLAS_SETTLE_S);
    }
    *t_ours = time[LIB_OURS] / (double)calls[LIB_OURS];
    *t_ob = g->have_ob ? time[LIB_OPENBLAS] / (double)calls[LIB_OPENBLAS] : 0.0;
}

static double element(const void *p, int dbl, int64_t i) {
    return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
/* max |x - y| over C / max |y| over C */
static double max_rel_diff(const void *x, const void *y, int dbl, int64_t count) {
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double a = element(x, dbl, i), b = element(y, dbl, i);
        double d = fabs(a - b);
        if (!(d <= worst)) worst = d;            /* a NaN sticks */
        if (fabs(b) > scale) scale = fabs(b);
    }
    return worst / (scale > 0.0 ? scale : 1.0);
}
/* N_SAMPLES entries of C (corners included) against float64 dot products. */
static double sample_ref_diff(const gemm_case *g, const operands *o, rng *r) {
    double worst = 0.0, scale = 0.0;
    for (int s = 0; s < N_SAMPLES; s++) {
        int64_t i = s == 0 ? 0 : s == 1 ? g->m - 1 : (int64_t)(rng_next(r) % (uint64_t)g->m);
        int64_t j = s == 0 ? 0 : s == 1 ? g->n - 1 : (int64_t)(rng_next(r) % (uint64_t)g->n);
        double ref = 0.0;
        for (int64_t p = 0; p < g->k; p++)
            ref += element(o->a, g->dbl, i * g->k + p) * element(o->b, g->dbl, p * g->n + j);
        double d = fabs(element(o->c_ours, g->dbl, i * g->n + j) - ref);
        if (!(d <= worst)) worst = d;
        if (fabs(ref) > scale) scale = fabs(ref);
    }
    return worst / (scale > 0.0 ? scale : 1.0);
}

static void run_case(gemm_case *g, const openblas *ob, double min_time, uint64_t seed) {
    size_t es = g->dbl ? sizeof(double) : sizeof(float);
    operands o;
    o.a = alloc_aligned((size_t)(g->m * g->k) * es);
    o.b = alloc_aligned((size_t)(g->k * g->n) * es);
    o.c_ours = alloc_aligned((size_t)(g->m * g->n) * es);
    o.c_ob = alloc_aligned((size_t)(g->m * g->n) * es);
    rng r = {seed};
    for (int64_t i = 0; i < g->m * g->k; i++) {
        double v = rng_uniform(&r);
        if (g->dbl) ((double *)o.a)[i] = v; else ((float *)o.a)[i] = (float)v;
    }
    for (int64_t i = 0; i < g->k * g->n; i++) {
        double v = rng_uniform(&r);
        if (g->dbl) ((double *)o.b)[i] = v; else ((float *)o.b)[i] = (float)v;
    }
    /* C starts as garbage (NaN bytes): both libraries must overwrite it, beta being 0 */
    memset(o.c_ours, 0xff, (size_t)(g->m * g->n) * es);
    memset(o.c_ob, 0xff, (size_t)(g->m * g->n) * es);

    g->have_ob = ob->sgemm != NULL;
    if (g->have_ob) ob->set_threads(g->threads);
    call_gemm(LIB_OURS, g, ob, &o);                      /* warm-ups; their results are checked */
    if (g->have_ob) call_gemm(LIB_OPENBLAS, g, ob, &o);
    g->ref_diff = sample_ref_diff(g, &o, &r);
    g->ob_diff = g->have_ob ? max_rel_diff(o.c_ours, o.c_ob, g->dbl, g->m * g->n) : 0.0;

    double t_ours[REPS], t_ob[REPS];
    if (g->have_ob && g->threads > 1) pause_s(OPENBLAS_SETTLE_S);
    for (int rep = 0; rep < REPS; rep++) measure(g, ob, &o, min_time, rep, &t_ours[rep], &t_ob[rep]);
    if (g->have_ob) {
        double again = max_rel_diff(o.c_ours, o.c_ob, g->dbl, g->m * g->n);
        if (!(again <= g->ob_diff)) g->ob_diff = again;
    }
    double flops = 2.0 * (double)g->m * (double)g->n * (double)g->k, best_ours = t_ours[0], best_ob = t_ob[0];
    for (int rep = 1; rep < REPS; rep++) {
        if (t_ours[rep] < best_ours) best_ours = t_ours[rep];
        if (t_ob[rep] < best_ob) best_ob = t_ob[rep];
    }
    g->ours_gflops = flops / median(t_ours, REPS) * 1e-9;
    g->ob_gflops = g->have_ob ? flops / median(t_ob, REPS) * 1e-9 : 0.0;
    g->ours_best = flops / best_ours * 1e-9;
    g->ob_best = g->have_ob ? flops / best_ob * 1e-9 : 0.0;
    free(o.a);
    free(o.b);
    free(o.c_ours);
    free(o.c_ob);
}

static void print_header(void) {
    printf("%-24s %7s %9s %9s %7s %8s %8s %12s %12s %11s\n", "m x n x k", "threads", "dataflow", "openblas", "ratio",
           "df/peak", "ob/peak", "diff vs ob", "diff vs f64", "best ratio");
}
static void print_row(const gemm_case *g, double peak) {
    char label[64], peak_ours[16] = "-", peak_ob[16] = "-";
    snprintf(label, sizeof label, "%lld x %lld x %lld%s", (long long)g->m, (long long)g->n, (long long)g->k,
             strcmp(g->kind, "tall") ? "" : " (tall)");
    if (peak > 0.0) {
        snprintf(peak_ours, sizeof peak_ours, "%.0f%%", 100.0 * g->ours_gflops / peak);
        if (g->have_ob) snprintf(peak_ob, sizeof peak_ob, "%.0f%%", 100.0 * g->ob_gflops / peak);
    }
    if (g->have_ob)
        printf("%-24s %7d %9.1f %9.1f %6.2fx %8s %8s %12.2e %12.2e %10.2fx\n", label, g->threads, g->ours_gflops,
               g->ob_gflops, g->ours_gflops / g->ob_gflops, peak_ours, peak_ob, g->ob_diff, g->ref_diff,
               g->ours_best / g->ob_best);
    else
        printf("%-24s %7d %9.1f %9s %7s %8s %8s %12s %12.2e\n", label, g->threads, g->ours_gflops, "-", "-",
               peak_ours, "-", "-", g->ref_diff);
}

/* --rnn: the products of a digits RNN step (examples/digits_rnn.c), one thread, ns a call. */
static void rnn_shapes(void) {
    static const struct { int ta, tb, m, n, k, per_step; const char *what; } s[] = {
        {0, 0, 64, 32, 8, 8, "x_t Wx"}, {0, 0, 64, 32, 32, 8, "h Wh"}, {1, 0, 8, 32, 64, 8, "x_t^T dz (dWx)"},
        {1, 0, 32, 32, 64, 8, "h^T dz (dWh)"}, {0, 1, 64, 32, 32, 8, "dz Wh^T (dh)"}, {0, 0, 64, 10, 32, 1, "h Wo (logits)"},
        {1, 0, 32, 10, 64, 1, "h^T dlogits (dWo)"}, {0, 1, 64, 32, 10, 1, "dlogits Wo^T"}};
    float *a = (float *)malloc(64 * 64 * sizeof(float)), *b = (float *)malloc(64 * 64 * sizeof(float)),
          *c = (float *)malloc(64 * 64 * sizeof(float));
    if (!a || !b || !c) die("--rnn", "out of memory");
    for (int i = 0; i < 64 * 64; i++) { a[i] = (float)(i % 7) * 0.1f - 0.3f; b[i] = (float)(i % 5) * 0.2f - 0.4f; }
    double step = 0;
    printf("%-20s %3s %3s %4s %4s %4s %10s %9s\n", "product", "ta", "tb", "m", "n", "k", "ns/call", "MAC/ns");
    for (size_t q = 0; q < sizeof s / sizeof s[0]; q++) {
        double best = 1e30;
        for (int rep = 0; rep < 15; rep++) {
            double t0 = now();
            for (int it = 0; it < 2000; it++)
                if (df_gemm_f32(s[q].ta, s[q].tb, s[q].m, s[q].n, s[q].k, a, s[q].ta ? s[q].m : s[q].k, b,
                                s[q].tb ? s[q].k : s[q].n, c, s[q].n, 1) != DF_OK) die("--rnn", "df_gemm_f32 failed");
            double t = (now() - t0) / 2000 * 1e9;
            if (t < best) best = t;
        }
        printf("%-20s %3d %3d %4d %4d %4d %10.1f %9.1f\n", s[q].what, s[q].ta, s[q].tb, s[q].m, s[q].n, s[q].k, best,
               (double)s[q].m * s[q].n * s[q].k / best);
        step += best * s[q].per_step;
    }
    printf("one training step's products: %.2f us\n", step / 1000);
    free(a); free(b); free(c);
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1, only_threads = -1, n_only = 0, rnn = 0;
    int64_t only_sizes[8];
    const char *isa = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--rnn")) rnn = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            for (char *t = strtok(argv[++i], ","); t && n_only < 8; t = strtok(NULL, ",")) only_sizes[n_only++] = atoll(t);
        }
        else {
            fprintf(stderr, "usage: bench_gemm [--quick] [--no-peers] [--threads N] [--isa auto|portable|avx2|avx512] "
                            "[--sizes N,N,...] [--rnn]\n");
            return 2;
        }
    }
    if (isa && df_set_kernel_isa(isa) != DF_OK) die("--isa", "unknown, or not available on this CPU");
    if (rnn) {
        printf("dataflow kernels: %s\n", df_kernel_isa());
        rnn_shapes();
        return 0;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    int thread_list[MAX_THREAD_COUNTS] = {1, 2}, n_thread_counts = 2;
    if (only_threads >= 0) {
        thread_list[0] = only_threads > 0 ? only_threads : (int)cores;
        n_thread_counts = 1;
    }
    const double min_time = quick ? 0.05 : 0.2;

    char model[256];
    cpu_model(model, sizeof model);
    printf("cpu: %s, %ld core%s online; dataflow kernels: %s\n", model, cores, cores == 1 ? "" : "s", df_kernel_isa());
    double load = 0.0;
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf", &load) == 1 && load >= 0.5)
            printf("(load average %.2f before the start: other processes share the CPU; expect low, noisy "
                   "figures)\n", load);
        fclose(lf);
    }

    /* The peak first, before OpenBLAS is loaded: it starts its threads when loaded, and they
       spin for a while. */
    double peak[MAX_THREAD_COUNTS] = {0.0, 0.0};
    if (have_avx2_fma()) {
#ifdef BENCH_X86
        use_512 = !strcmp(df_kernel_isa(), "avx512");
#endif
        printf("FMA peak (register-only %s FMA loop, 12 accumulators, best of %d), float32:",
               FMA_PEAK_NAME, PEAK_RUNS);
        for (int t = 0; t < n_thread_counts; t++) {
            peak[t] = fma_peak(thread_list[t], quick ? 0.05 : 0.1);
            printf("%s %.1f GFLOPS with %d thread%s", t ? ";" : "", peak[t], thread_list[t],
                   thread_list[t] == 1 ? "" : "s at once");
        }
        printf("\n");
    } else printf("FMA peak: not measured (this CPU or compiler lacks AVX2+FMA)\n");

    openblas ob;
    if (peers) load_openblas(&ob);
    else memset(&ob, 0, sizeof ob), snprintf(ob.skip, sizeof ob.skip, "OpenBLAS skipped (--no-peers)");
    printf("%s\n", ob.sgemm ? ob.about : ob.skip);

    /* SGEMM */
    enum { MAX_CASES = 32 };
    static const int64_t all_squares[7] = {64, 128, 256, 512, 1024, 2048, 4096};
    static const int64_t talls[3][3] = {{16384, 64, 64}, {16384, 128, 128}, {1024, 1024, 64}};
    int n_squares = quick ? 5 : 7;
    const int64_t *squares = n_only ? only_sizes : all_squares;
    if (n_only) n_squares = n_only;
    gemm_case cases[MAX_CASES];
    int n_cases = 0;
    for (int t = 0; t < n_thread_counts; t++) {
        for (int s = 0; s < n_squares; s++) {
            gemm_case *g = &cases[n_cases++];
            memset(g, 0, sizeof *g);
            g->kind = "square";
            g->m = g->n = g->k = squares[s];
            g->threads = thread_list[t];
        }
        for (int s = 0; s < 3 && !n_only; s++) {
            gemm_case *g = &cases[n_cases++];
            memset(g, 0, sizeof *g);
            g->kind = "tall";
            g->m = talls[s][0];
            g->n = talls[s][1];
            g->k = talls[s][2];
            g->threads = thread_list[t];
        }
    }
    /* n = 4096 (a call takes about half a second): one call per measurement */
    for (int c = 0; c < n_cases; c++)
        run_case(&cases[c], &ob, cases[c].m * cases[c].n * cases[c].k >= (int64_t)1 << 36 ? 0.01 : min_time,
                 0x6e77u + (uint64_t)c);

    /* DGEMM, with the first thread count (1 unless --threads says otherwise) */
    static const int64_t dsizes[3] = {128, 512, 1024};
    gemm_case dcases[3];
    int n_dcases = n_only ? 0 : 3;
    for (int s = 0; s < n_dcases; s++) {
        gemm_case *g = &dcases[s];
        memset(g, 0, sizeof *g);
        g->kind = "square";
        g->m = g->n = g->k = dsizes[s];
        g->dbl = 1;
        g->threads = thread_list[0];
        run_case(g, &ob, min_time, 0xd6e77u + (uint64_t)s);
    }

    printf("\nSGEMM, row-major C = A B; GFLOPS = 2mnk / time, median of %d measurements of >= %.2f s each after "
           "a warm-up,\nthe libraries taking turns; ratio = dataflow / OpenBLAS (above 1: we are faster); x/peak = "
           "fraction of\nthe FMA peak with as many threads; diff = max |C - C'| / max |C'| (vs f64: %d sampled "
           "entries)\n",
           REPS, min_time, N_SAMPLES);
    if (!ob.sgemm) printf("(no OpenBLAS columns: %s)\n", ob.skip);
    print_header();
    for (int c = 0; c < n_cases; c++) {
        int t = 0;
        while (t + 1 < n_thread_counts && thread_list[t] != cases[c].threads) t++;
        print_row(&cases[c], peak[t]);
    }

    printf("\nDGEMM, row-major C = A B (float64 peak taken as half the float32 one)\n");
    print_header();
    for (int s = 0; s < n_dcases; s++) print_row(&dcases[s], peak[0] / 2.0);

    /* targets, for square sizes */
    printf("\ntargets (square n; ratio = dataflow / OpenBLAS):\n");
    if (!ob.sgemm) printf("  not judged: %s\n", ob.skip);
    for (int t = 0; t < n_thread_counts && ob.sgemm; t++) {
        for (int which = 0; which < 2; which++) {
            printf("  %d thread%s, %s:", thread_list[t], thread_list[t] == 1 ? "" : "s",
                   which == 0 ? "every n, median ratio >= 1.0" : "every n, best ratio >= 1.0");
            for (int c = 0; c < n_cases; c++) {
                const gemm_case *g = &cases[c];
                if (strcmp(g->kind, "square") || g->threads != thread_list[t]) continue;
                double ratio = which == 0 ? g->ours_gflops / g->ob_gflops : g->ours_best / g->ob_best;
                int met = ratio >= BIG_RATIO_TARGET;
                printf(" n=%lld %.2fx %s;", (long long)g->n, ratio, met ? "met" : "NOT met");
            }
            printf("\n");
        }
    }

    /* agreement */
    int bad = 0;
    for (int c = 0; c < n_cases + n_dcases; c++) {
        const gemm_case *g = c < n_cases ? &cases[c] : &dcases[c - n_cases];
        double tol = g->dbl ? DOUBLE_TOLERANCE : FLOAT_TOLERANCE;
        double worst = g->have_ob && !(g->ob_diff <= g->ref_diff) ? g->ob_diff : g->ref_diff;
        if (!(worst <= tol)) {
            printf("MISMATCH: %s %lld x %lld x %lld, %d thread%s: relative difference %.3g vs OpenBLAS, %.3g vs "
                   "float64 (tolerance %.0e)\n", g->dbl ? "DGEMM" : "SGEMM", (long long)g->m, (long long)g->n,
                   (long long)g->k, g->threads, g->threads == 1 ? "" : "s", g->ob_diff, g->ref_diff, tol);
            bad = 1;
        }
    }
    if (!bad) printf("results agree%s (relative difference <= %.0e for float, %.0e for double)\n",
                     ob.sgemm ? " with OpenBLAS and with float64 dot products" : " with float64 dot products",
                     FLOAT_TOLERANCE, DOUBLE_TOLERANCE);
    return bad;
}
