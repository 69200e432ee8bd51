/* GPU benchmarks, every figure a ratio to a reference measured in the same run (built by
   `./build.sh bench` when nvcc is found; without a visible GPU it says so and exits 0):
   1. SGEMM n = 1024 .. 8192 through df_cuda_gemm_f32 against cublasSgemm called directly on the
      same buffers and a stream of its own: our overhead in percent (target: at most 3% for
      n >= 2048).
   2. Launchers against memory bandwidth on 256M floats (1 GiB per operand): elementwise Add and
      Relu (df_cuda_elementwise_f32), and df_cuda_reduce's sum over everything, over each row and
      over each column of a 16384 x 16384 matrix, as a fraction of cudaMemcpyAsync
      device-to-device of the same bytes (read plus written; target: at least 90%).
   3. MatMul through a session (num_gpu_devices = 1, FP32) against the same cublasSgemm, n =
      2048, 4096, 8192: operands in two variables initialised once on the GPU, K MatMuls chained
      in one run (X = X B, so no n x n result crosses to the host), and a one-element slice of
      the last fetched (its copy to the host waits for the stream, so a run ends when the GPU is
      done): time per MatMul and overhead (target: at most 3%).
   4. Per-node cost on the GPU, one session run each: a chain of 1000 one-element Adds (per node,
      and per node beyond a run of one Add); a while loop of 10000 iterations with an int32
      counter (on the host, TensorFlow's int32 rule) and x = x + 1.0 on the GPU (per iteration).
      Target: at most 8 us per node and per iteration. The chain again with cuda_graphs (the
      partition captured once and replayed: target at most 3 us per node), and the loop with
      cuda_graphs (its counter on the host: the whole loop one graph; target at most 3 us per
      iteration).
   5. One training step of an MLP 784-1024-1024-10 (relu, sparse softmax cross-entropy, SGD 0.01
      through df_minimize), batch 256 in GPU constants, the loss fetched every step; then the
      same with cuda_graphs.
   6. PyTorch (bench/peers/torch_gpu.py, eager, torch.optim.SGD) and JAX (bench/peers/jax_gpu.py:
      Adds dispatched one by one, a jitted lax.while_loop, a jitted training step) on the same
      GPU for what they offer of 4 and 5, side by side: ratio = peer time / ours (above 1: we
      are faster). Their matmul is cuBLAS itself, so 3 has no peer row.
   Timing: a run is several calls that end by waiting for the GPU (ours and the references
   alike), after warm-up calls; each figure is the median of 7 runs. A session run returns when
   its fetches are on the host; work it queued that no fetch waits for (the MLP's updates) is
   waited for by a one-element fetch that ends each run of steps.

   Environment: DF_BENCH_QUICK=1 shrinks every size and repetition (to check that every path
   runs, not to time anything); DF_BENCH_PEERS=0 leaves the peers out. Each peer runs with
   .venv/bin/python, else python3, whichever has torch (jax) with a GPU; run from the repository
   root.

   Host emulation: the CUDA runtime and cuBLAS functions this file calls are weak references.
   Linked with tests/cuda/gpu_emulator.c instead of dataflow_cuda.o and -lcudart -lcublas (or
   built with -DDF_BENCH_EMULATED, or without the CUDA headers), it finds them missing, times by
   the host clock and lets dataflow's own launchers stand in for the bare libraries (the headings
   say so); the peers then run on the CPU. Every path runs on a machine without a GPU:
       cc -std=c11 -O2 -DDATAFLOW_CUDA -I. bench/cuda/bench_cuda.c dataflow.c \
          tests/cuda/gpu_emulator.c -o build/cuda_bench_emulated -lm -lpthread
       DF_BENCH_QUICK=1 ./build/cuda_bench_emulated */
#define _POSIX_C_SOURCE 200809L
#include "../../dataflow.h"
#include "../bench_util.h"
#include <math.h>
#include <stdint.h>
#include <unistd.h>

/* The CUDA runtime and cuBLAS, where their headers are found (DF_BENCH_EMULATED: never). Their
   functions are weak references: a build linked with the host emulator instead of
   dataflow_cuda.o and -lcudart -lcublas has none of them, and uses the stand-ins below. */
#if !defined(DF_BENCH_EMULATED) && defined(__has_include)
#if __has_include(<cuda_runtime.h>) && __has_include(<cublas_v2.h>)
#define BENCH_CUDA_HEADERS 1
#endif
#endif
#ifndef BENCH_CUDA_HEADERS
#define BENCH_CUDA_HEADERS 0
#endif
#if BENCH_CUDA_HEADERS
#include <cublas_v2.h>
#include <cuda_runtime.h>
#define BENCH_WEAK(f) extern __typeof__(f) f __attribute__((weak));
BENCH_WEAK(cudaStreamCreate) BENCH_WEAK(cudaStreamDestroy) BENCH_WEAK(cudaStreamSynchronize)
BENCH_WEAK(cudaEventCreate) BENCH_WEAK(cudaEventDestroy) BENCH_WEAK(cudaEventRecord)
BENCH_WEAK(cudaEventSynchronize) BENCH_WEAK(cudaEventElapsedTime) BENCH_WEAK(cudaDeviceSynchronize)
BENCH_WEAK(cudaMemcpyAsync) BENCH_WEAK(cudaMemset) BENCH_WEAK(cudaGetDeviceProperties)
BENCH_WEAK(cublasCreate) BENCH_WEAK(cublasDestroy) BENCH_WEAK(cublasSetStream) BENCH_WEAK(cublasSgemm)
#endif
/* Defined by tests/cuda/gpu_emulator.c only: whether "the GPU" is the host emulation. */
extern int64_t df_emu_launches(void) __attribute__((weak));

/* ==========================================================================================
   Sizes and repetitions: the full run, or DF_BENCH_QUICK's small one.
   ========================================================================================== */
typedef struct bench_sizes {
    int quick, reps, warm;
    int gemm_from, gemm_to;              /* 1: n doubling from .. to */
    int64_t rows, cols;                  /* 2: the matrix of floats */
    int mm_n[3], mm_chain[3];            /* 3: sizes and MatMuls per run */
    int n_adds, loop_iters;              /* 4 */
    int batch, hidden1, hidden2, steps;  /* 5: steps per timed run */
} bench_sizes;
static bench_sizes cfg;

static void sizes_init(void) {
    static const bench_sizes full = {0, 7, 3, 1024, 8192, 16384, 16384, {2048, 4096, 8192}, {32, 8, 4}, 1000, 10000, 256, 1024, 1024, 20};
    static const bench_sizes quick = {1, 3, 1, 64, 256, 1024, 1024, {64, 128, 256}, {4, 3, 2}, 200, 1000, 32, 64, 64, 3};
    const char *q = getenv("DF_BENCH_QUICK");
    cfg = q && *q && strcmp(q, "0") != 0 ? quick : full;
}

/* ==========================================================================================
   The bare libraries: CUDA runtime and cuBLAS called directly on a stream of their own, timing
   by the GPU's events. Where they are not linked, dataflow's own launchers stand in for them,
   timing by the host clock, and the table headings say so.
   ========================================================================================== */
#if BENCH_CUDA_HEADERS
static int bare_linked;                  /* 1: the CUDA runtime and cuBLAS are called directly */
#endif
static const char *bare_gemm_name = "df_cuda_gemm_f32 (stand-in: cuBLAS not linked)";
static const char *bare_copy_name = "df_cuda_memcpy_d2d (stand-in: the CUDA runtime not linked)";
static void bare_detect(void) {
#if BENCH_CUDA_HEADERS
    bare_linked = cudaStreamCreate && cudaStreamDestroy && cudaStreamSynchronize && cudaEventCreate &&
                  cudaEventDestroy && cudaEventRecord && cudaEventSynchronize && cudaEventElapsedTime &&
                  cudaDeviceSynchronize && cudaMemcpyAsync && cudaMemset && cudaGetDeviceProperties &&
                  cublasCreate && cublasDestroy && cublasSetStream && cublasSgemm;
    if (bare_linked) { bare_gemm_name = "cublasSgemm"; bare_copy_name = "cudaMemcpyAsync"; }
#endif
}
typedef struct bare {
    df_cuda *g;
#if BENCH_CUDA_HEADERS
    cudaStream_t s;
    cublasHandle_t h;
#endif
} bare;
static int bare_open(bare *b, df_cuda *g) {
    b->g = g;
#if BENCH_CUDA_HEADERS
    if (!bare_linked) return 1;
    if (cudaStreamCreate(&b->s) != cudaSuccess) return 0;
    if (cublasCreate(&b->h) != CUBLAS_STATUS_SUCCESS) { cudaStreamDestroy(b->s); return 0; }
    cublasSetStream(b->h, b->s);
#endif
    return 1;
}
static void bare_close(bare *b) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) { cublasDestroy(b->h); cudaStreamDestroy(b->s); }
#endif
    (void)b;
}
/* C = X Y, row-major n x n */
static void bare_sgemm(bare *b, int64_t n, const float *x, const float *y, float *c) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) {           /* row-major C = X Y is column-major C^T = Y^T X^T */
        const float one = 1, zero = 0;
        int k = (int)n;
        cublasSgemm(b->h, CUBLAS_OP_N, CUBLAS_OP_N, k, k, k, &one, y, k, x, k, &zero, c, k);
        return;
    }
#endif
    df_status st;
    df_cuda_gemm_f32(b->g, 0, 0, n, n, n, x, n, y, n, c, n, 0, &st);
}
static void bare_copy(bare *b, void *dst, const void *src, size_t bytes) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, b->s); return; }
#endif
    df_status st;
    df_cuda_memcpy_d2d(b->g, dst, src, bytes, &st);
}
static void bare_wait(bare *b) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) { cudaStreamSynchronize(b->s); return; }
#endif
    df_status st;
    df_cuda_synchronize(b->g, &st);
}
static void bare_set_bytes(bare *b, void *p, int byte, size_t bytes) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) { cudaMemset(p, byte, bytes); cudaDeviceSynchronize(); return; }
#endif
    df_status st;
    unsigned char v = (unsigned char)byte;
    df_cuda_fill(b->g, p, (int64_t)bytes, 1, &v, &st);
    df_cuda_synchronize(b->g, &st);
}
static int gpu_is_emulated(void) { return df_emu_launches != NULL; }
static void gpu_describe(char *out, size_t size) {
    if (gpu_is_emulated()) { snprintf(out, size, "host emulation (tests/cuda/gpu_emulator.c): timings mean nothing"); return; }
#if BENCH_CUDA_HEADERS
    struct cudaDeviceProp prop;
    if (bare_linked && cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
        snprintf(out, size, "%.200s, %d SMs", prop.name, prop.multiProcessorCount);
        return;
    }
#endif
    snprintf(out, size, "GPU 0");
}

typedef struct bench_timer {
#if BENCH_CUDA_HEADERS
    cudaEvent_t a, b;
#endif
    double start;
} bench_timer;
static void timer_init(bench_timer *t) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) { cudaEventCreate(&t->a); cudaEventCreate(&t->b); }
#endif
    t->start = 0;
}
static void timer_free(bench_timer *t) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) { cudaEventDestroy(t->a); cudaEventDestroy(t->b); }
#endif
    (void)t;
}
/* Events on the default stream with the device idle before; the timed work ends by waiting for
   its own stream, so the second event is recorded after it. */
static void timer_start(bench_timer *t) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) { cudaDeviceSynchronize(); cudaEventRecord(t->a, 0); return; }
#endif
    t->start = now();
}
static double timer_stop_ms(bench_timer *t) {
#if BENCH_CUDA_HEADERS
    if (bare_linked) {
        float ms = 0;
        cudaEventRecord(t->b, 0);
        cudaEventSynchronize(t->b);
        cudaEventElapsedTime(&ms, t->a, t->b);
        return ms;
    }
#endif
    return (now() - t->start) * 1e3;
}

/* ==========================================================================================
   Timing: median milliseconds per call of fn over cfg.reps runs of `calls` calls, after cfg.warm
   warm-up calls; `done` (which waits for the stream fn queues on) ends each run, so ours and
   the bare libraries are timed alike.
   ========================================================================================== */
typedef void (*work_fn)(void *user);
static double time_ms(work_fn fn, work_fn done, void *user, int calls) {
    bench_timer tm;
    timer_init(&tm);
    for (int i = 0; i < cfg.warm; i++) fn(user);
    done(user);
    double t[16];
    for (int r = 0; r < cfg.reps; r++) {
        timer_start(&tm);
        for (int i = 0; i < calls; i++) fn(user);
        done(user);
        t[r] = timer_stop_ms(&tm) / calls;
    }
    timer_free(&tm);
    return median(t, cfg.reps);
}
static int failures;                     /* sections that could not run: the exit status says so */
static void fail(const char *what, const char *msg) {
    printf("  FAILED %s: %.*s\n", what, (int)strcspn(msg, "\n"), msg);     /* the first line of a status */
    failures++;
}

typedef struct gemm_args { df_cuda *g; bare *bl; int64_t n; float *a, *b, *c; } gemm_args;
static void ours_gemm(void *u) {
    gemm_args *x = (gemm_args *)u;
    df_status st;
    df_cuda_gemm_f32(x->g, 0, 0, x->n, x->n, x->n, x->a, x->n, x->b, x->n, x->c, x->n, 0, &st);
}
static void ours_done(void *u) { df_status st; df_cuda_synchronize(*(df_cuda **)u, &st); }   /* g comes first */
static void bare_gemm(void *u) { gemm_args *x = (gemm_args *)u; bare_sgemm(x->bl, x->n, x->a, x->b, x->c); }
static void bare_gemm_done(void *u) { bare_wait(((gemm_args *)u)->bl); }

typedef struct ew_args { df_cuda *g; bare *bl; int op; float *a, *b, *c; int64_t n; } ew_args;
static void ours_ew(void *u) {
    ew_args *x = (ew_args *)u;
    df_status st;
    df_cuda_elementwise_f32(x->g, x->op, x->a, x->b, x->c, x->n, &st);
}
static void copy_ew(void *u) { ew_args *x = (ew_args *)u; bare_copy(x->bl, x->c, x->a, (size_t)x->n * 4); }
static void copy_done(void *u) { bare_wait(((ew_args *)u)->bl); }

typedef struct reduce_args { df_cuda *g; const float *x; float *y; int64_t outer, red, inner; } reduce_args;
static void ours_reduce(void *u) {
    reduce_args *r = (reduce_args *)u;
    df_status st;
    df_cuda_reduce(r->g, DF_CUDA_R_SUM, DF_FLOAT, r->x, r->y, r->outer, r->red, r->inner, &st);
}

/* ==========================================================================================
   1 and 2: the launchers against the bare libraries
   ========================================================================================== */
static void bench_gemm(df_cuda *g, bare *bl) {
    df_status st;
    printf("\n1. SGEMM (FP32 compute), ms per call; overhead = ours / direct %s - 1\n", bare_gemm_name);
    printf("%6s %10s %10s %9s %8s\n", "n", "ours", "direct", "overhead", "TFLOPS");
    for (int n = cfg.gemm_from; n <= cfg.gemm_to; n *= 2) {
        size_t bytes = (size_t)n * n * 4;
        float *a = (float *)df_cuda_alloc(g, bytes, &st), *b = (float *)df_cuda_alloc(g, bytes, &st), *c = (float *)df_cuda_alloc(g, bytes, &st);
        float *host = (float *)malloc(bytes);
        if (!a || !b || !c || !host) {
            fail("SGEMM buffers", st.code ? st.message : "out of host memory");
            df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c); free(host);
            return;
        }
        for (size_t i = 0; i < (size_t)n * n; i++) host[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
        df_cuda_copy_to_device(g, a, host, bytes, &st);
        df_cuda_copy_to_device(g, b, host, bytes, &st);
        free(host);
        gemm_args x = {g, bl, n, a, b, c};
        int calls = cfg.quick ? 2 : n >= 4096 ? 5 : 20;
        double tb = time_ms(bare_gemm, bare_gemm_done, &x, calls), to = time_ms(ours_gemm, ours_done, &x, calls);
        printf("%6d %10.3f %10.3f %8.1f%% %8.1f\n", n, to, tb, 100.0 * (to / tb - 1), 2.0 * n * n * (double)n / (to * 1e-3) * 1e-12);
        df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);
    }
}

static void bench_bandwidth(df_cuda *g, bare *bl) {
    df_status st;
    int64_t n = cfg.rows * cfg.cols;
    size_t bytes = (size_t)n * 4;
    printf("\n2. Launchers on %lld floats (%.0f MiB per operand); GB/s = bytes read + written / time; "
           "copy = %s device to device\n", (long long)n, bytes / 1048576.0, bare_copy_name);
    float *a = (float *)df_cuda_alloc(g, bytes, &st), *b = (float *)df_cuda_alloc(g, bytes, &st), *c = (float *)df_cuda_alloc(g, bytes, &st);
    if (!a || !b || !c) {
        fail("bandwidth buffers", st.message);
        df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);
        return;
    }
    bare_set_bytes(bl, a, 0x3c, bytes);          /* 0x3c3c3c3c: 0.01150 as a float */
    bare_set_bytes(bl, b, 0x3d, bytes);
    ew_args e = {g, bl, DF_CUDA_ADD, a, b, c, n};
    double tcopy = time_ms(copy_ew, copy_done, &e, 5);
    double copy_gbs = 2.0 * bytes / (tcopy * 1e-3) * 1e-9;
    printf("%-26s %9.3f ms %9.1f GB/s\n", "copy", tcopy, copy_gbs);
    const char *names[2] = {"Add", "Relu"};
    int ops[2] = {DF_CUDA_ADD, DF_CUDA_RELU};
    for (int k = 0; k < 2; k++) {
        e.op = ops[k];
        double t = time_ms(ours_ew, ours_done, &e, 5);
        double gbs = (k == 0 ? 3.0 : 2.0) * bytes / (t * 1e-3) * 1e-9;
        printf("%-26s %9.3f ms %9.1f GB/s  %5.1f%% of copy\n", names[k], t, gbs, 100.0 * gbs / copy_gbs);
    }
    /* [outer, red, inner]: everything, each row of [rows, cols], each column of it */
    struct { const char *name; int64_t outer, red, inner; } shapes[3] = {
        {"sum, all", 1, n, 1}, {"sum, each row", cfg.rows, cfg.cols, 1}, {"sum, each column", 1, cfg.rows, cfg.cols}};
    char label[64];
    for (int k = 0; k < 3; k++) {
        reduce_args r = {g, a, c, shapes[k].outer, shapes[k].red, shapes[k].inner};
        double t = time_ms(ours_reduce, ours_done, &r, 5);
        double gbs = (double)(bytes + (size_t)(r.outer * r.inner) * 4) / (t * 1e-3) * 1e-9;
        snprintf(label, sizeof label, "Reduce %s", shapes[k].name);
        printf("%-26s %9.3f ms %9.1f GB/s  %5.1f%% of copy\n", label, t, gbs, 100.0 * gbs / copy_gbs);
    }
    /* the full sum once more, read back: a reduction fast because it skips work shows here */
    float sum = 0, elem = 0;
    reduce_args r = {g, a, c, 1, n, 1};
    ours_reduce(&r);
    df_cuda_copy_to_host(g, &sum, c, 4, &st);
    df_cuda_copy_to_host(g, &elem, a, 4, &st);
    double want = (double)elem * (double)n;
    if (!(fabs(sum - want) <= 1e-3 * fabs(want))) {
        char msg[128];
        snprintf(msg, sizeof msg, "%.6g, expected %.6g", (double)sum, want);
        fail("full sum", msg);
    }
    df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);
}

/* ==========================================================================================
   Graph and session helpers for 3 to 5. Every builder records the first error on the graph
   (checked once per graph); a session run's error stops that section.
   ========================================================================================== */
static df_output const_i32(df_graph *g, int n, const int32_t *v) {
    df_status st;
    int64_t dim = n;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, &dim, v, (size_t)n * 4, &st);
    df_output o = t ? df_const(g, t) : (df_output){NULL, 0};
    df_tensor_release(t);
    return o;
}
/* v NULL: zeros */
static df_output const_f32(df_graph *g, int rank, const int64_t *dims, const float *v) {
    df_status st;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    df_tensor *t = v ? df_tensor_from_data(DF_FLOAT, rank, dims, v, (size_t)n * 4, &st) : df_tensor_new(DF_FLOAT, rank, dims, &st);
    df_output o = t ? df_const(g, t) : (df_output){NULL, 0};
    df_tensor_release(t);
    return o;
}
/* Uniform in [lo, hi) from RandomUniform, made on the device the graph places it on. */
static df_output uniform(df_graph *g, int rank, const int64_t *dims, float lo, float hi, int seed) {
    int32_t shape[DF_MAX_RANK];
    for (int i = 0; i < rank; i++) shape[i] = (int32_t)dims[i];
    df_op_builder *b = df_op_new(g, "RandomUniform", NULL);
    df_op_add_input(b, const_i32(g, rank, shape));
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_int(b, "seed", 17);
    df_op_set_attr_int(b, "seed2", seed);
    df_output r = {df_op_finish(b), 0};
    return df_add(g, df_mul(g, r, df_scalar_f32(g, hi - lo)), df_scalar_f32(g, lo));
}
/* x[0, .., 0] as a tensor of one element: a copy of 4 bytes to the host, where a fetch of x
   would copy all of it. */
static df_output first_element(df_graph *g, df_output x, int rank) {
    int32_t begin[DF_MAX_RANK] = {0}, size[DF_MAX_RANK];
    for (int i = 0; i < rank; i++) size[i] = 1;
    df_op_builder *b = df_op_new(g, "Slice", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, const_i32(g, rank, begin));
    df_op_add_input(b, const_i32(g, rank, size));
    return (df_output){df_op_finish(b), 0};
}
/* mode: 0 the defaults, 1 deterministic = 1, 2 cuda_graphs = 1 */
enum { MODE_DEFAULT, MODE_DETERMINISTIC, MODE_GRAPHS };
static df_session *gpu_session(df_graph *g, int mode, const char *what) {
    if (df_graph_status(g)->code) { fail(what, df_graph_status(g)->message); return NULL; }
    df_session_options o = {0};
    o.num_gpu_devices = 1;
    o.deterministic = mode == MODE_DETERMINISTIC;
    o.cuda_graphs = mode == MODE_GRAPHS;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) fail(what, st.message);
    return s;
}

/* One session run as a work_fn: targets, one fetch (its first element kept in `value`), and
   for `done` an optional second run that fetches `sync` (a copy to the host, after whatever the
   runs before queued on the GPU's stream). */
typedef struct sess_call {
    df_session *s;
    df_output fetch, sync;
    df_node *target;
    float value;
    int failed;
    df_status st;
} sess_call;
static int run_once(sess_call *c, df_output fetch, df_node *target) {
    if (c->failed) return 0;
    df_tensor *v = NULL;
    int n_fetch = fetch.node != NULL, n_target = target != NULL;
    if (df_session_run(c->s, NULL, NULL, 0, n_fetch ? &fetch : NULL, n_fetch ? &v : NULL, n_fetch,
                       n_target ? &target : NULL, n_target, &c->st) != DF_OK) {
        c->failed = 1;
        return 0;
    }
    if (v) {
        c->value = df_tensor_dtype(v) == DF_FLOAT && df_tensor_num_elements(v) > 0 ? ((const float *)df_tensor_data(v))[0] : NAN;
        df_tensor_release(v);
    }
    return 1;
}
static void sess_run(void *u) { sess_call *c = (sess_call *)u; run_once(c, c->fetch, c->target); }
static void sess_done(void *u) {
    sess_call *c = (sess_call *)u;
    if (c->sync.node) run_once(c, c->sync, NULL);
}

/* ==========================================================================================
   3. MatMul through a session against cuBLAS called directly
   ========================================================================================== */
static void bench_session_matmul(df_cuda *g, bare *bl, int64_t n, int chain) {
    char what[64];
    snprintf(what, sizeof what, "session MatMul n=%lld", (long long)n);
    /* the direct reference: `chain` calls in a row on the same sizes */
    df_status st;
    size_t bytes = (size_t)n * n * 4;
    float *a = (float *)df_cuda_alloc(g, bytes, &st), *b = (float *)df_cuda_alloc(g, bytes, &st), *c = (float *)df_cuda_alloc(g, bytes, &st);
    if (!a || !b || !c) {
        fail(what, st.message);
        df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);
        return;
    }
    float fill = 1.0f / (float)n;
    df_cuda_fill(g, a, n * n, 4, &fill, &st);
    df_cuda_fill(g, b, n * n, 4, &fill, &st);
    df_cuda_synchronize(g, &st);             /* the fills ran on our stream, cuBLAS reads on its own */
    gemm_args x = {g, bl, n, a, b, c};
    double t_bare = time_ms(bare_gemm, bare_gemm_done, &x, chain);
    df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);

    /* B's entries have variance 1/n, so X B keeps X's scale along the chain */
    df_graph *gr = df_graph_new();
    if (!gr) { fail(what, "out of memory"); return; }
    int64_t dims[2] = {n, n};
    float r = sqrtf(3.0f / (float)n);
    df_output va = df_variable(gr, "a", DF_FLOAT, 2, dims), vb = df_variable(gr, "b", DF_FLOAT, 2, dims);
    df_node *inits[2] = {df_assign(gr, va, uniform(gr, 2, dims, -0.5f, 0.5f, 1)), df_assign(gr, vb, uniform(gr, 2, dims, -r, r, 2))};
    df_node *init = df_no_op(gr, inits, 2);
    df_output xk = va;
    for (int k = 0; k < chain; k++) xk = df_matmul(gr, xk, vb, 0, 0);
    sess_call sc = {0};
    sc.fetch = first_element(gr, xk, 2);
    if ((sc.s = gpu_session(gr, 0, what)) && run_once(&sc, (df_output){NULL, 0}, init)) {
        double t_sess = time_ms(sess_run, sess_done, &sc, 1) / chain;
        if (sc.failed) fail(what, sc.st.message);
        else {
            printf("%6lld %6d %10.3f %10.3f %8.1f%% %8.1f%s\n", (long long)n, chain, t_sess, t_bare, 100.0 * (t_sess / t_bare - 1),
                   2.0 * n * n * (double)n / (t_sess * 1e-3) * 1e-12, isfinite(sc.value) ? "" : "  (result not finite!)");
        }
    } else if (sc.s) fail(what, sc.st.message);
    df_session_free(sc.s);
    df_graph_free(gr);
}

/* ==========================================================================================
   4. Per-node cost: a chain of Adds, a while loop
   ========================================================================================== */
typedef struct node_results { double chain_us, loop_us, chain_graph_us, loop_graph_us, dloop_us, dloop_graph_us; } node_results;     /* us */
/* "captured N, replayed M" of a session with cuda_graphs (the proof that replays were timed) */
static void graph_note(df_session *s, char *buf, size_t n) {
    df_cuda_graph_stats gs;
    df_session_cuda_graph_stats(s, &gs);
    snprintf(buf, n, "(cuda_graphs: %lld captured, %lld steps replayed, %lld node by node, %lld failed captures)",
             (long long)gs.captures, (long long)gs.replays, (long long)gs.eager_runs, (long long)gs.failed_captures);
}
static char graph_notes[4][160];

/* us per node of a run of the chain (and of one Add), in a session of its own */
static int time_add_chain(df_graph *gr, df_node *init, df_output one_add, df_output chain_end, int mode,
                          double *per_node, double *per_node_marginal) {
    sess_call c = {0};
    const char *what = mode == MODE_GRAPHS ? "Add chain, cuda_graphs" : mode ? "Add chain, deterministic" : "Add chain";
    if (!(c.s = gpu_session(gr, mode, what))) return 0;
    int ok = run_once(&c, (df_output){NULL, 0}, init);
    double t_one = 0, t_all = 0;
    if (ok) { c.fetch = one_add; t_one = time_ms(sess_run, sess_done, &c, 1); }
    if (ok && !c.failed) { c.fetch = chain_end; t_all = time_ms(sess_run, sess_done, &c, 1); }
    ok = ok && !c.failed;
    if (!ok) fail(what, c.st.message);
    else if (c.value != (float)cfg.n_adds) {
        char msg[96];
        snprintf(msg, sizeof msg, "the chain gave %g, expected %d", (double)c.value, cfg.n_adds);
        fail(what, msg);
        ok = 0;
    }
    if (mode == MODE_GRAPHS) graph_note(c.s, graph_notes[0], sizeof graph_notes[0]);
    df_session_free(c.s);
    *per_node = t_all * 1e3 / cfg.n_adds;
    *per_node_marginal = (t_all - t_one) * 1e3 / (cfg.n_adds - 1);
    return ok;
}

/* the loop: an int32 counter (host memory, TensorFlow's rule) and x = x + 1; or, `device_pred`,
   x alone tested against the limit as a float (the predicate made on the GPU) */
typedef struct loop_ctx { int32_t limit; int device_pred; } loop_ctx;
static df_output loop_cond(df_graph *g, void *user, const df_output *vars) {
    loop_ctx *lc = (loop_ctx *)user;
    if (lc->device_pred) return df_less(g, vars[0], df_scalar_f32(g, (float)lc->limit));
    return df_less(g, vars[0], df_scalar_i32(g, lc->limit));
}
static void loop_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    if (((loop_ctx *)user)->device_pred) { next[0] = df_add(g, vars[0], df_scalar_f32(g, 1.0f)); return; }
    next[0] = df_add(g, vars[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, vars[1], df_scalar_f32(g, 1.0f));
}
static int time_loop(df_graph *gr, df_node *init, df_output result, int mode, int device_pred, double *per_iter) {
    sess_call c = {0};
    const char *what = mode == MODE_GRAPHS ? "while loop, cuda_graphs" : mode ? "while loop, deterministic" : "while loop";
    if (!(c.s = gpu_session(gr, mode, what))) return 0;
    int ok = run_once(&c, (df_output){NULL, 0}, init);
    double t = 0;
    if (ok) { c.fetch = result; t = time_ms(sess_run, sess_done, &c, 1); }
    ok = ok && !c.failed;
    if (!ok) fail(what, c.st.message);
    else if (c.value != (float)cfg.loop_iters) {
        char msg[96];
        snprintf(msg, sizeof msg, "the loop gave %g, expected %d", (double)c.value, cfg.loop_iters);
        fail(what, msg);
        ok = 0;
    }
    if (mode == MODE_GRAPHS) graph_note(c.s, graph_notes[device_pred ? 3 : 2], sizeof graph_notes[2]);
    df_session_free(c.s);
    *per_iter = t * 1e3 / cfg.loop_iters;
    return ok;
}

static void bench_nodes(node_results *res) {
    printf("\n4. Per-node cost on the GPU, one session run each (us; target: at most 8 per node or iteration); "
           "deterministic = 1 runs every node on the calling thread\n");
    /* x starts from a variable, so no part of the graph is a constant */
    df_graph *gr = df_graph_new();
    if (!gr) { fail("Add chain", "out of memory"); return; }
    int64_t one_dim = 1;
    float zero = 0, one = 1;
    df_output v = df_variable(gr, "x0", DF_FLOAT, 1, &one_dim);
    df_node *init = df_assign(gr, v, const_f32(gr, 1, &one_dim, &zero));
    df_output c1 = const_f32(gr, 1, &one_dim, &one);
    df_output one_add = df_add(gr, v, c1), x = v;
    for (int i = 0; i < cfg.n_adds; i++) x = df_add(gr, x, c1);
    printf("%-62s %10s %10s\n", "case", "per node", "run");     /* a loop's node: one iteration */
    for (int det = 0; det < 3; det++) {
        double per, marginal;
        if (!time_add_chain(gr, init, one_add, x, det, &per, &marginal)) continue;
        char label[96];
        snprintf(label, sizeof label, "chain of %d one-element Adds%s", cfg.n_adds,
                 det == MODE_GRAPHS ? ", cuda_graphs = 1" : det ? ", deterministic = 1" : "");
        printf("%-62s %10.2f %10.1f\n", label, per, per * cfg.n_adds);
        snprintf(label, sizeof label, "  beyond a run of one Add: (t(%d) - t(1)) / %d", cfg.n_adds, cfg.n_adds - 1);
        printf("%-62s %10.2f\n", label, marginal);
        if (!det) res->chain_us = per;
        if (det == MODE_GRAPHS) { res->chain_graph_us = per; printf("  %s\n", graph_notes[0]); }
    }
    df_graph_free(gr);

    if (!(gr = df_graph_new())) { fail("while loop", "out of memory"); return; }
    df_output v0 = df_variable(gr, "x0", DF_FLOAT, 0, NULL);
    df_node *init0 = df_assign(gr, v0, df_scalar_f32(gr, 0));
    loop_ctx lc = {cfg.loop_iters, 0};
    df_output start[2] = {df_scalar_i32(gr, 0), v0}, outs[2] = {{NULL, 0}, {NULL, 0}};
    df_while_loop(gr, 2, start, loop_cond, loop_body, &lc, NULL, outs);
    for (int det = 0; det < 3; det++) {
        double per;
        if (!time_loop(gr, init0, outs[1], det, 0, &per)) continue;
        char label[96];
        snprintf(label, sizeof label, "while loop of %d iterations, x = x + 1%s", cfg.loop_iters,
                 det == MODE_GRAPHS ? ", cuda_graphs = 1" : det ? ", deterministic = 1" : "");
        printf("%-62s %10.2f %10.1f\n", label, per, per * cfg.loop_iters);
        if (!det) res->loop_us = per;
        if (det == MODE_GRAPHS) { res->loop_graph_us = per; printf("  %s\n", graph_notes[2]); }
    }
    df_graph_free(gr);

    /* the same count with the predicate made on the GPU: x < N as floats */
    if (!(gr = df_graph_new())) { fail("while loop", "out of memory"); return; }
    v0 = df_variable(gr, "x0", DF_FLOAT, 0, NULL);
    init0 = df_assign(gr, v0, df_scalar_f32(gr, 0));
    loop_ctx dl = {cfg.loop_iters, 1};
    df_output dstart[1] = {v0}, douts[1] = {{NULL, 0}};
    df_while_loop(gr, 1, dstart, loop_cond, loop_body, &dl, NULL, douts);
    for (int det = 0; det < 3; det += 2) {
        double per;
        if (!time_loop(gr, init0, douts[0], det, 1, &per)) continue;
        char label[96];
        snprintf(label, sizeof label, "while x < %d (a GPU predicate), x = x + 1%s", cfg.loop_iters,
                 det == MODE_GRAPHS ? ", cuda_graphs = 1" : "");
        printf("%-62s %10.2f %10.1f\n", label, per, per * cfg.loop_iters);
        if (!det) res->dloop_us = per;
        if (det == MODE_GRAPHS) { res->dloop_graph_us = per; printf("  %s\n", graph_notes[3]); }
    }
    df_graph_free(gr);
}

/* ==========================================================================================
   5. An MLP training step
   ========================================================================================== */
static double bench_mlp(int graphs) {
    printf("\n5%s. MLP 784-%d-%d-10 training step on the GPU (relu, sparse softmax cross-entropy, SGD 0.01 via "
           "df_minimize), batch %d%s\n", graphs ? "b" : "", cfg.hidden1, cfg.hidden2, cfg.batch, graphs ? ", cuda_graphs = 1" : "");
    const int in = 784, classes = 10;
    int widths[4] = {in, cfg.hidden1, cfg.hidden2, classes};
    df_graph *gr = df_graph_new();
    /* the batch: fixed pixels and labels in constants, which the GPU keeps */
    float *pixels = (float *)malloc((size_t)cfg.batch * in * 4);
    int32_t *labels = (int32_t *)malloc((size_t)cfg.batch * 4);
    if (!gr || !pixels || !labels) { free(pixels); free(labels); df_graph_free(gr); fail("MLP", "out of host memory"); return 0; }
    uint32_t rng = 12345;
    for (int64_t i = 0; i < (int64_t)cfg.batch * in; i++) { rng = rng * 1664525u + 1013904223u; pixels[i] = (float)(rng >> 8) / 16777216.0f; }
    for (int i = 0; i < cfg.batch; i++) labels[i] = i % classes;
    df_output x = const_f32(gr, 2, (const int64_t[]){cfg.batch, in}, pixels), y = const_i32(gr, cfg.batch, labels);
    free(pixels); free(labels);
    df_output vars[6];
    df_node *inits[6];
    for (int l = 0; l < 3; l++) {
        char name[8];
        int64_t wd[2] = {widths[l], widths[l + 1]};
        float r = sqrtf(6.0f / (float)(widths[l] + widths[l + 1]));      /* Glorot uniform */
        snprintf(name, sizeof name, "w%d", l + 1);
        vars[2 * l] = df_variable(gr, name, DF_FLOAT, 2, wd);
        inits[2 * l] = df_assign(gr, vars[2 * l], uniform(gr, 2, wd, -r, r, 10 + l));
        snprintf(name, sizeof name, "b%d", l + 1);
        vars[2 * l + 1] = df_variable(gr, name, DF_FLOAT, 1, &wd[1]);
        inits[2 * l + 1] = df_assign(gr, vars[2 * l + 1], const_f32(gr, 1, &wd[1], NULL));
    }
    df_node *init = df_no_op(gr, inits, 6);
    df_output h = x;
    for (int l = 0; l < 3; l++) {
        h = df_add(gr, df_matmul(gr, h, vars[2 * l], 0, 0), vars[2 * l + 1]);
        if (l < 2) h = df_relu(gr, h);
    }
    df_output loss = df_sparse_softmax_cross_entropy(gr, h, y);
    df_optimizer sgd = {0};
    sgd.kind = DF_OPT_SGD;
    sgd.learning_rate = 0.01;
    sess_call c = {0};
    c.target = df_minimize(gr, loss, 6, vars, &sgd, NULL);
    c.fetch = loss;
    /* after a group of steps, a copy of one weight to the host waits for their updates */
    c.sync = first_element(gr, vars[4], 2);
    double us = 0;
    c.s = gpu_session(gr, graphs ? MODE_GRAPHS : MODE_DEFAULT, "MLP");
    if (c.s && run_once(&c, (df_output){NULL, 0}, init) && run_once(&c, loss, NULL)) {
        float loss0 = c.value;
        us = time_ms(sess_run, sess_done, &c, cfg.steps) * 1e3;
        run_once(&c, loss, NULL);            /* after the last update */
        if (c.failed) { fail("MLP", c.st.message); us = 0; }
        else {
            printf("mean step: %.1f us (%d steps per timed run); loss %.4f before the first step, %.4f after the last\n",
                   us, cfg.steps, (double)loss0, (double)c.value);
            if (!(c.value < loss0)) fail("MLP", "the loss did not go down");
        }
    } else if (c.s) fail("MLP", c.st.message);
    if (c.s && graphs) { graph_note(c.s, graph_notes[1], sizeof graph_notes[1]); printf("%s\n", graph_notes[1]); }
    df_session_free(c.s);
    df_graph_free(gr);
    return us;
}

/* ==========================================================================================
   6. PyTorch on the same GPU: bench/peers/torch_gpu.py prints "torch_gpu NAME VALUE" lines.
   ========================================================================================== */
typedef struct torch_results {
    char skip[256], version[64], python[64];
    double chain_us, loop_us, mlp_us;
    int have;                            /* bits 1, 2, 4: chain, loop, mlp */
} torch_results;

/* The first of .venv/bin/python and python3 that imports `module` and passes `test`. */
static int find_python(const char *module, const char *test, char *out, size_t size) {
    const char *candidates[2] = {".venv/bin/python", "python3"};
    for (int i = 0; i < 2; i++) {
        if (strchr(candidates[i], '/') && access(candidates[i], X_OK) != 0) continue;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s -c \"import sys, %s; sys.exit(0 if %s else 1)\" >/dev/null 2>&1", candidates[i], module, test);
        if (system(cmd) == 0) { snprintf(out, size, "%s", candidates[i]); return 1; }
    }
    return 0;
}

/* Runs a peer script (bench/peers/NAME.py, printing "NAME key value" lines) with the first
   Python whose `module` passes `gpu_test` (on the emulator: imports at all; then it runs on
   the CPU, a check of the path only). */
static void run_peer(torch_results *p, const char *name, const char *module, const char *gpu_test, const char *cpu_device,
                     const char *gpu_device) {
    memset(p, 0, sizeof *p);
    const char *peers = getenv("DF_BENCH_PEERS");
    if (peers && !strcmp(peers, "0")) { snprintf(p->skip, sizeof p->skip, "DF_BENCH_PEERS=0"); return; }
    char script[128], prefix[64];
    snprintf(script, sizeof script, "bench/peers/%s.py", name);
    snprintf(prefix, sizeof prefix, "%s ", name);
    if (access(script, R_OK) != 0) {
        snprintf(p->skip, sizeof p->skip, "%s not found (run from the repository root)", script);
        return;
    }
    int emulated = gpu_is_emulated();
    if (!find_python(module, emulated ? "True" : gpu_test, p->python, sizeof p->python)) {
        snprintf(p->skip, sizeof p->skip, "no Python with %s%s (tried .venv/bin/python, python3)", module, emulated ? "" : " and a GPU");
        return;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s --device %s --adds %d --iters %d --batch %d --hidden %d %d "
             "--steps %d --reps %d --warm %d 2>&1", p->python, script, emulated ? cpu_device : gpu_device, cfg.n_adds,
             cfg.loop_iters, cfg.batch, cfg.hidden1, cfg.hidden2, cfg.steps, cfg.reps, cfg.warm);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(p->skip, sizeof p->skip, "cannot run %s", p->python); return; }
    char line[512], last[256] = "";
    size_t plen = strlen(prefix);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char key[64];
        double v;
        if (!strncmp(line, "skip ", 5)) snprintf(p->skip, sizeof p->skip, "%.240s", line + 5);
        else if (!strncmp(line, prefix, plen) && sscanf(line + plen, "version %63s", p->version) == 1) continue;
        else if (!strncmp(line, prefix, plen) && sscanf(line + plen, "%63s %lf", key, &v) == 2) {
            if (!strcmp(key, "add_chain_us_per_node")) { p->chain_us = v; p->have |= 1; }
            else if (!strcmp(key, "while_us_per_iter")) { p->loop_us = v; p->have |= 2; }
            else if (!strcmp(key, "mlp_step_us")) { p->mlp_us = v; p->have |= 4; }
        } else if (line[0] && line[0] != '#') snprintf(last, sizeof last, "%.200s", line);
    }
    int status = pclose(f);
    if (status != 0 && !p->skip[0]) snprintf(p->skip, sizeof p->skip, "%s failed (status %d): %s", script, status, last);
}

static void peer_row(const char *label, double ours, const torch_results *p, const torch_results *j, int bit,
                     double theirs, double jax) {
    char a[16] = "-", b[16] = "-", ra[16] = "-", rb[16] = "-";
    if (p->have & bit) snprintf(a, sizeof a, "%.2f", theirs);
    if (j->have & bit) snprintf(b, sizeof b, "%.2f", jax);
    if (ours > 0 && (p->have & bit)) snprintf(ra, sizeof ra, "%.2fx", theirs / ours);
    if (ours > 0 && (j->have & bit)) snprintf(rb, sizeof rb, "%.2fx", jax / ours);
    if (ours <= 0) printf("%-46s %10s %10s %10s %9s %9s\n", label, "-", a, b, "-", "-");
    else printf("%-46s %10.2f %10s %10s %9s %9s\n", label, ours, a, b, ra, rb);
}

static void print_side_by_side(const node_results *ours, double mlp_us, double mlp_graph_us) {
    torch_results p, j;
    run_peer(&p, "torch_gpu", "torch", "torch.cuda.is_available()", "cpu", "cuda");
    run_peer(&j, "jax_gpu", "jax", "bool(jax.devices('gpu'))", "cpu", "gpu");
    printf("\n6. Side by side with PyTorch (eager) and JAX on the same GPU (bench/peers/torch_gpu.py, jax_gpu.py); "
           "ratio = peer / ours, above 1: ours faster\n");
    printf("%-46s %10s %10s %10s %9s %9s\n", "case (us)", "ours", "PyTorch", "JAX", "PyTorch/o", "JAX/o");
    char label[96];
    snprintf(label, sizeof label, "chain of %d tiny Adds, per node", cfg.n_adds);
    peer_row(label, ours->chain_us, &p, &j, 1, p.chain_us, j.chain_us);
    snprintf(label, sizeof label, "chain of %d tiny Adds, cuda_graphs, per node", cfg.n_adds);
    peer_row(label, ours->chain_graph_us, &p, &j, 1, p.chain_us, j.chain_us);
    snprintf(label, sizeof label, "while loop of %d, per iteration", cfg.loop_iters);
    peer_row(label, ours->loop_us, &p, &j, 2, p.loop_us, j.loop_us);
    snprintf(label, sizeof label, "while loop of %d, cuda_graphs, per iteration", cfg.loop_iters);
    peer_row(label, ours->loop_graph_us, &p, &j, 2, p.loop_us, j.loop_us);
    snprintf(label, sizeof label, "while x < %d on the GPU, per iteration", cfg.loop_iters);
    peer_row(label, ours->dloop_us, &p, &j, 2, p.loop_us, j.loop_us);
    snprintf(label, sizeof label, "while x < %d on the GPU, cuda_graphs", cfg.loop_iters);
    peer_row(label, ours->dloop_graph_us, &p, &j, 2, p.loop_us, j.loop_us);
    snprintf(label, sizeof label, "MLP 784-%d-%d-10 step, batch %d", cfg.hidden1, cfg.hidden2, cfg.batch);
    peer_row(label, mlp_us, &p, &j, 4, p.mlp_us, j.mlp_us);
    peer_row("MLP step as above, cuda_graphs", mlp_graph_us, &p, &j, 4, p.mlp_us, j.mlp_us);
    printf("%-46s %10s %10s %10s %9s %9s\n", "MatMul through the framework vs cuBLAS", "see 3", "n/a", "n/a", "-", "-");
    const char *where = gpu_is_emulated() ? "the CPU (GPU emulated: a check of the path only)" : "the GPU";
    if (p.skip[0]) printf("(PyTorch not measured: %s)\n", p.skip);
    else printf("(PyTorch %s on %s, via %s; eager; its loop counts on the host, as Python does; its MLP step ends with loss.item())\n",
                p.version[0] ? p.version : "?", where, p.python);
    if (j.skip[0]) printf("(JAX not measured: %s)\n", j.skip);
    else printf("(JAX %s on %s, via %s; its Adds dispatched one by one, its loop one jitted lax.while_loop, its MLP step "
                "jitted, with float(loss) each step)\n", j.version[0] ? j.version : "?", where, j.python);
}

int main(void) {
    df_status st;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (df_cuda_device_count(&st) < 1) { printf("bench_cuda: no GPU visible; skipped\n"); return 0; }
    sizes_init();
    bare_detect();
    df_cuda *g = df_cuda_open(0, 0, &st);
    if (!g) { printf("bench_cuda: %s\n", st.message); return 1; }
    char name[256];
    gpu_describe(name, sizeof name);
    printf("gpu: %s%s\n", name, cfg.quick ? "; DF_BENCH_QUICK: small sizes, few repetitions (timings mean little)" : "");
    bare bl;
    if (!bare_open(&bl, g)) { printf("bench_cuda: cannot make a stream and a cuBLAS handle\n"); df_cuda_close(g); return 1; }

    bench_gemm(g, &bl);
    bench_bandwidth(g, &bl);

    printf("\n3. MatMul through a session (FP32), ms per MatMul: K chained in one run, one element fetched; "
           "overhead = session / direct %s - 1 (target: at most 3%%)\n", bare_gemm_name);
    printf("%6s %6s %10s %10s %9s %8s\n", "n", "K", "session", "direct", "overhead", "TFLOPS");
    for (int i = 0; i < 3; i++) bench_session_matmul(g, &bl, cfg.mm_n[i], cfg.mm_chain[i]);
    bare_close(&bl);
    df_cuda_close(g);          /* its memory back before the sessions and PyTorch take theirs */

    node_results nodes = {0};
    bench_nodes(&nodes);
    double mlp_us = bench_mlp(0), mlp_graph_us = bench_mlp(1);
    print_side_by_side(&nodes, mlp_us, mlp_graph_us);
    if (failures) printf("\nbench_cuda: %d case%s FAILED (above)\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
