/* GPU building blocks against the bare libraries, on the GPU, in one run (built by
   `./build.sh bench` when nvcc is found; needs a GPU):
   1. SGEMM n = 1024 .. 8192 through df_cuda_gemm_f32 against cublasSgemm called directly on the
      same buffers and stream: our overhead in percent (target: at most 3% for n >= 2048).
   2. Elementwise Add and Relu on 256M floats (1 GiB per operand) against cudaMemcpyAsync
      device-to-device of the same bytes read plus written: fraction of copy bandwidth
      (target: at least 90%).
   Timing with CUDA events around runs of several calls that end by waiting for their stream
   (the same for ours and the bare library), after warm-up: the median of 7 runs. */
#include "../../dataflow.h"
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return x < y ? -1 : x > y; }
typedef void (*work_fn)(void *user);
/* Median milliseconds per call of fn over 7 runs of `calls` calls, after 3 warm-up calls: CUDA
   events on the default stream around each run, the device idle before and `done` (which waits
   for the stream fn queues on) inside, so ours and the bare library are timed alike. */
static float time_ms(work_fn fn, work_fn done, void *user, int calls) {
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    for (int i = 0; i < 3; i++) fn(user);
    done(user);
    float t[7];
    for (int r = 0; r < 7; r++) {
        cudaDeviceSynchronize();
        cudaEventRecord(a, 0);
        for (int i = 0; i < calls; i++) fn(user);
        done(user);
        cudaEventRecord(b, 0);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&t[r], a, b);
        t[r] /= (float)calls;
    }
    cudaEventDestroy(a); cudaEventDestroy(b);
    qsort(t, 7, sizeof t[0], cmp);
    return t[3];
}
typedef struct gemm_args { df_cuda *g; cublasHandle_t h; int n; float *a, *b, *c; cudaStream_t s; } gemm_args;
static void ours_gemm(void *u) {
    gemm_args *x = (gemm_args *)u;
    df_status st;
    df_cuda_gemm_f32(x->g, 0, 0, x->n, x->n, x->n, x->a, x->n, x->b, x->n, x->c, x->n, 0, &st);
}
static void ours_done(void *u) { df_status st; df_cuda_synchronize(*(df_cuda **)u, &st); }   /* g comes first */
static void bare_done(void *u) { cudaStreamSynchronize(((gemm_args *)u)->s); }
static void bare_gemm(void *u) {
    gemm_args *x = (gemm_args *)u;
    const float one = 1, zero = 0;
    cublasSgemm(x->h, CUBLAS_OP_N, CUBLAS_OP_N, x->n, x->n, x->n, &one, x->b, x->n, x->a, x->n, &zero, x->c, x->n);
}
typedef struct ew_args { df_cuda *g; int op; float *a, *b, *c; int64_t n; cudaStream_t s; } ew_args;
static void ours_ew(void *u) {
    ew_args *x = (ew_args *)u;
    df_status st;
    df_cuda_elementwise_f32(x->g, x->op, x->a, x->b, x->c, x->n, &st);
}
static void copy_done(void *u) { cudaStreamSynchronize(((ew_args *)u)->s); }
static void copy_ew(void *u) {
    ew_args *x = (ew_args *)u;
    cudaMemcpyAsync(x->c, x->a, (size_t)x->n * 4, cudaMemcpyDeviceToDevice, x->s);
}

int main(void) {
    df_status st;
    if (df_cuda_device_count(&st) < 1) { printf("bench_cuda: no GPU visible; skipped\n"); return 0; }
    df_cuda *g = df_cuda_open(0, 0, &st);
    if (!g) { printf("bench_cuda: %s\n", st.message); return 1; }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("gpu: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    /* the bare cuBLAS calls run on a stream of their own (ours are on the GPU's private stream) */
    cudaStream_t s;
    cudaStreamCreate(&s);
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetStream(h, s);
    printf("\n1. SGEMM (FP32 compute), ms per call; overhead = ours / direct cublasSgemm - 1\n");
    printf("%6s %10s %10s %9s %8s\n", "n", "ours", "cublas", "overhead", "TFLOPS");
    for (int n = 1024; n <= 8192; n *= 2) {
        size_t bytes = (size_t)n * n * 4;
        float *a = (float *)df_cuda_alloc(g, bytes, &st), *b = (float *)df_cuda_alloc(g, bytes, &st), *c = (float *)df_cuda_alloc(g, bytes, &st);
        if (!a || !b || !c) { printf("alloc failed: %s\n", st.message); return 1; }
        float *host = (float *)malloc(bytes);
        for (size_t i = 0; i < (size_t)n * n; i++) host[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
        df_cuda_copy_to_device(g, a, host, bytes, &st);
        df_cuda_copy_to_device(g, b, host, bytes, &st);
        free(host);
        gemm_args x = {g, h, n, a, b, c, s};
        int calls = n >= 4096 ? 5 : 20;
        float tb = time_ms(bare_gemm, bare_done, &x, calls), to = time_ms(ours_gemm, ours_done, &x, calls);
        printf("%6d %10.3f %10.3f %8.1f%% %8.1f\n", n, to, tb, 100.0 * (to / tb - 1), 2.0 * n * n * (double)n / (to * 1e-3) * 1e-12);
        df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);
    }
    printf("\n2. Elementwise on 256M floats; GB/s = bytes read + written / time; copy = device-to-device memcpy\n");
    int64_t n = (int64_t)256 << 20;
    size_t bytes = (size_t)n * 4;
    float *a = (float *)df_cuda_alloc(g, bytes, &st), *b = (float *)df_cuda_alloc(g, bytes, &st), *c = (float *)df_cuda_alloc(g, bytes, &st);
    if (!a || !b || !c) { printf("alloc failed: %s\n", st.message); return 1; }
    cudaMemset(a, 0x3c, bytes); cudaMemset(b, 0x3d, bytes);
    cudaDeviceSynchronize();
    ew_args e = {g, DF_CUDA_ADD, a, b, c, n, s};
    float tcopy = time_ms(copy_ew, copy_done, &e, 5);
    double copy_gbs = 2.0 * bytes / (tcopy * 1e-3) * 1e-9;
    printf("%-8s %9.3f ms %9.1f GB/s\n", "copy", tcopy, copy_gbs);
    const char *names[2] = {"Add", "Relu"};
    int ops[2] = {DF_CUDA_ADD, DF_CUDA_RELU};
    for (int k = 0; k < 2; k++) {
        e.op = ops[k];
        float t = time_ms(ours_ew, ours_done, &e, 5);
        double moved = (k == 0 ? 3.0 : 2.0) * bytes;
        double gbs = moved / (t * 1e-3) * 1e-9;
        printf("%-8s %9.3f ms %9.1f GB/s  %5.1f%% of copy\n", names[k], t, gbs, 100.0 * gbs / copy_gbs);
    }
    df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);
    cublasDestroy(h);
    cudaStreamDestroy(s);
    df_cuda_close(g);
    return 0;
}
