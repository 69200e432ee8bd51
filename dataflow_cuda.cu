/* SPDX-License-Identifier: MIT */
/* dataflow_cuda.cu - the GPU side of dataflow (compiled with nvcc, linked with -lcudart -lcublas).

   What is here: device discovery, and one GPU's building blocks for the runtime's GPU device:
   a compute stream and a copy stream, memory from the BFC allocator over cudaMalloc'd regions
   (the same allocator code as the host's, as a sub-allocator: its bookkeeping lives in host
   memory, so device memory is never touched from the CPU), copies through pinned host staging,
   matrix products through cuBLAS (cublasGemmEx with an explicit compute type, TF32 on request),
   and elementwise float kernels. Every CUDA and cuBLAS error becomes a df_status (never an
   abort); a GPU out of memory is DF_RESOURCE_EXHAUSTED. The session's GPU device (placement,
   Send/Recv copies, the executor) is built on these.

   The second half holds the launchers dataflow.c calls for the kernels it runs on a GPU
   (dataflow.h, "The launchers behind the session's GPU device"): each checks its arguments,
   queues its kernels on the compute stream and returns; the results follow dataflow.c's CPU
   kernels (the same formulas, NaN rules and edge cases) to within floating-point rounding, and
   where the CPU's order of operations is cheap to keep (elementwise ops, pooling, optimizers)
   the bits are the same. */
#define DATAFLOW_CUDA 1
#include "dataflow.h"
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

extern "C" int df_cuda_device_count(df_status *st) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();            /* clear the sticky error for later calls */
        /* No driver or no device is not an error for discovery: zero GPUs. */
        if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
            df_status_clear(st);
            return 0;
        }
        df_status_set(st, DF_UNAVAILABLE, "cudaGetDeviceCount failed: %s", cudaGetErrorString(err));
        return 0;
    }
    df_status_clear(st);
    return n;
}

/* ---- errors ---- */
static df_code df_cuda_fail(df_status *st, cudaError_t err, const char *what) {
    (void)cudaGetLastError();
    df_code code = err == cudaErrorMemoryAllocation ? DF_RESOURCE_EXHAUSTED
                 : err == cudaErrorInvalidValue || err == cudaErrorInvalidDevicePointer ? DF_INVALID_ARGUMENT
                 : DF_INTERNAL;
    return df_status_set(st, code, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}
#define DF_CUDA_CHECK(st, call, what)                                                             \
    do { cudaError_t df_err_ = (call); if (df_err_ != cudaSuccess) return df_cuda_fail(st, df_err_, what); } while (0)
static const char *df_cublas_name(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "a cuBLAS error";
    }
}

/* ---- one GPU ---- */
/* Scratch of the split reductions: a counter per group of blocks and 8-byte partial results.
   Kernels on one stream run one after another, so one kernel at a time owns it; the last block
   of a group puts its counter back to zero. */
enum { DF_CUDA_COUNTERS = 16384, DF_CUDA_PARTIALS = 131072 };
struct df_cuda {
    int device;
    int sms;                         /* multiprocessors, read once at open: grid sizes */
    cudaStream_t compute, copy;
    cublasHandle_t blas;
    df_bfc *bfc;                     /* device memory: BFC over cudaMalloc'd regions */
    void *staging;                   /* pinned host buffer for copies */
    size_t staging_bytes;
    cudaEvent_t compute_mark, copy_mark;   /* made on first use (no timing): copies vs compute */
    void *scratch;                   /* DF_CUDA_COUNTERS unsigned, then DF_CUDA_PARTIALS 8-byte slots */
    /* CUDA graphs: one capture at a time, on a stream and cuBLAS handle of its own (made on the
       first capture), so launches of other threads on compute are never captured by mistake */
    int capturing;                   /* 1 while a thread captures (taken by compare-and-swap) */
    cudaStream_t capture;
    cublasHandle_t capture_blas;
    void *capture_ws;                /* cuBLAS workspace of the captured products */
    /* a loop inside the capture: its body is captured on a stream of its own, which `capture`
       names meanwhile (outer: the capture's own stream) */
    cudaStream_t capture_body, capture_outer;
    int in_loop;
    unsigned long long loop_handle;  /* the conditional node's handle */
};

/* The stream and cuBLAS handle a launcher queues on: the capture's while this thread captures
   on g, else the compute stream. */
static thread_local df_cuda *df_cuda_tls_capturing;
#define DF_CS(g) (df_cuda_tls_capturing == (g) ? (g)->capture : (g)->compute)
#define DF_BLAS(g) (df_cuda_tls_capturing == (g) ? (g)->capture_blas : (g)->blas)
/* Waits and copies to or from the host cannot be captured: refused while this thread captures. */
#define DF_CUDA_NOT_CAPTURING(g, st, who)                                                         \
    do { if (df_cuda_tls_capturing == (g))                                                        \
             return df_status_set(st, DF_UNIMPLEMENTED, "%s: a copy or wait cannot be part of a CUDA graph", who); } while (0)

extern "C" void *df_cuda_region_alloc(size_t bytes, void *user) {
    df_cuda *g = (df_cuda *)user;
    void *p = NULL;
    if (cudaSetDevice(g->device) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError();    /* out of memory: the allocator reports NULL */
        return NULL;
    }
    return p;
}
extern "C" void df_cuda_region_free(void *p, size_t bytes, void *user) {
    (void)bytes;
    df_cuda *g = (df_cuda *)user;
    cudaSetDevice(g->device);
    cudaFree(p);
}

/* Pinned host memory, portable to every GPU (the staging of values sent to other processes). */
extern "C" void *df_cuda_pinned_alloc(size_t bytes, void *user) {
    (void)user;
    void *p = NULL;
    if (!bytes || cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError();    /* none to be had: the allocator reports NULL */
        return NULL;
    }
    return p;
}
extern "C" void df_cuda_pinned_free(void *p, size_t bytes, void *user) {
    (void)bytes; (void)user;
    if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" df_cuda *df_cuda_open(int device, size_t memory_limit, df_status *st) {
    df_status local;
    if (!st) st = &local;
    int n = df_cuda_device_count(st);
    if (st->code) return NULL;
    if (device < 0 || device >= n) {
        df_status_set(st, DF_INVALID_ARGUMENT, "GPU %d does not exist (%d visible)", device, n);
        return NULL;
    }
    df_cuda *g = (df_cuda *)calloc(1, sizeof *g);
    if (!g) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    g->device = device;
    cudaError_t err;
    if ((err = cudaSetDevice(device)) != cudaSuccess ||
        (err = cudaStreamCreateWithFlags(&g->compute, cudaStreamNonBlocking)) != cudaSuccess ||
        (err = cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking)) != cudaSuccess) {
        df_cuda_fail(st, err, "Cannot start the GPU's streams");
        df_cuda_close(g);
        return NULL;
    }
    cublasStatus_t bs = cublasCreate(&g->blas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        g->blas = NULL;
        df_status_set(st, DF_UNAVAILABLE, "cublasCreate failed: %s", df_cublas_name(bs));
        df_cuda_close(g);
        return NULL;
    }
    cublasSetStream(g->blas, g->compute);
    if ((err = cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess ||
        (err = cudaMalloc(&g->scratch, (size_t)DF_CUDA_COUNTERS * sizeof(unsigned) + (size_t)DF_CUDA_PARTIALS * 8)) != cudaSuccess ||
        (err = cudaMemsetAsync(g->scratch, 0, (size_t)DF_CUDA_COUNTERS * sizeof(unsigned), g->compute)) != cudaSuccess) {
        df_cuda_fail(st, err, "Cannot set up the GPU's launch state");
        df_cuda_close(g);
        return NULL;
    }
    if (g->sms < 1) g->sms = 1;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = memory_limit;
    o.allow_growth = 1;
    o.garbage_collection = 1;
    o.sys_alloc = df_cuda_region_alloc;
    o.sys_free = df_cuda_region_free;
    o.user = g;
    if (!(g->bfc = df_bfc_new(&o))) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory for the GPU allocator");
        df_cuda_close(g);
        return NULL;
    }
    df_status_clear(st);
    return g;
}
extern "C" void df_cuda_close(df_cuda *g) {
    if (!g) return;
    cudaSetDevice(g->device);
    if (g->compute) cudaStreamSynchronize(g->compute);
    if (g->copy) cudaStreamSynchronize(g->copy);
    if (g->bfc) df_bfc_free_all(g->bfc);
    if (g->blas) cublasDestroy(g->blas);
    if (g->capture_blas) cublasDestroy(g->capture_blas);
    if (g->capture_ws) cudaFree(g->capture_ws);
    if (g->in_loop) g->capture = g->capture_outer;
    if (g->capture) cudaStreamDestroy(g->capture);
    if (g->capture_body) cudaStreamDestroy(g->capture_body);
    if (g->staging) cudaFreeHost(g->staging);
    if (g->scratch) cudaFree(g->scratch);
    if (g->compute_mark) cudaEventDestroy(g->compute_mark);
    if (g->copy_mark) cudaEventDestroy(g->copy_mark);
    if (g->compute) cudaStreamDestroy(g->compute);
    if (g->copy) cudaStreamDestroy(g->copy);
    (void)cudaGetLastError();
    free(g);
}

extern "C" void *df_cuda_alloc(df_cuda *g, size_t bytes, df_status *st) {
    df_status local;
    if (!st) st = &local;
    if (!g) { df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_alloc: NULL GPU"); return NULL; }
    void *p = df_bfc_alloc(g->bfc, bytes ? bytes : 1);
    if (!p) {
        char summary[512];
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes on GPU %d: %s", bytes, g->device,
                      df_bfc_summary(g->bfc, summary, sizeof summary));
        return NULL;
    }
    df_status_clear(st);
    return p;
}
extern "C" void df_cuda_free(df_cuda *g, void *p) { if (g && p) df_bfc_free(g->bfc, p); }
extern "C" void df_cuda_get_stats(df_cuda *g, df_alloc_stats *out) { if (g && out) df_bfc_get_stats(g->bfc, out); }

/* ---- copies: through a pinned staging buffer on the copy stream, in pieces ---- */
enum { DF_CUDA_STAGING = 8 << 20 };
static df_code df_cuda_staging(df_cuda *g, df_status *st) {
    if (g->staging) return DF_OK;
    DF_CUDA_CHECK(st, cudaMallocHost(&g->staging, DF_CUDA_STAGING), "cudaMallocHost (pinned staging)");
    g->staging_bytes = DF_CUDA_STAGING;
    return DF_OK;
}
extern "C" df_code df_cuda_copy_to_device(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g || (bytes && (!dst || !src))) return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_copy_to_device: NULL argument");
    DF_CUDA_NOT_CAPTURING(g, st, "df_cuda_copy_to_device");
    DF_CUDA_CHECK(st, cudaSetDevice(g->device), "cudaSetDevice");
    if (df_cuda_staging(g, st)) return st->code;
    for (size_t off = 0; off < bytes; off += g->staging_bytes) {
        size_t n = bytes - off < g->staging_bytes ? bytes - off : g->staging_bytes;
        memcpy(g->staging, (const char *)src + off, n);
        DF_CUDA_CHECK(st, cudaMemcpyAsync((char *)dst + off, g->staging, n, cudaMemcpyHostToDevice, g->copy), "cudaMemcpyAsync to the GPU");
        DF_CUDA_CHECK(st, cudaStreamSynchronize(g->copy), "copy to the GPU");
    }
    return DF_OK;
}
extern "C" df_code df_cuda_copy_to_host(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g || (bytes && (!dst || !src))) return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_copy_to_host: NULL argument");
    DF_CUDA_NOT_CAPTURING(g, st, "df_cuda_copy_to_host");
    DF_CUDA_CHECK(st, cudaSetDevice(g->device), "cudaSetDevice");
    if (df_cuda_staging(g, st)) return st->code;
    DF_CUDA_CHECK(st, cudaStreamSynchronize(g->compute), "waiting for the GPU's work");   /* the value must be final */
    for (size_t off = 0; off < bytes; off += g->staging_bytes) {
        size_t n = bytes - off < g->staging_bytes ? bytes - off : g->staging_bytes;
        DF_CUDA_CHECK(st, cudaMemcpyAsync(g->staging, (const char *)src + off, n, cudaMemcpyDeviceToHost, g->copy), "cudaMemcpyAsync to the host");
        DF_CUDA_CHECK(st, cudaStreamSynchronize(g->copy), "copy to the host");
        memcpy((char *)dst + off, g->staging, n);
    }
    return DF_OK;
}
extern "C" df_code df_cuda_synchronize(df_cuda *g, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_synchronize: NULL GPU");
    DF_CUDA_NOT_CAPTURING(g, st, "df_cuda_synchronize");
    DF_CUDA_CHECK(st, cudaSetDevice(g->device), "cudaSetDevice");
    DF_CUDA_CHECK(st, cudaStreamSynchronize(g->compute), "the GPU's work");
    return DF_OK;
}

/* ---- matrix products: row-major C = op(A) op(B) through column-major cuBLAS ----
   Row-major C (m x n) is column-major C^T (n x m) = op(B)^T op(A)^T, so cuBLAS gets B first. */
extern "C" df_code df_cuda_gemm_f32(df_cuda *g, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                    const float *b, int64_t ldb, float *c, int64_t ldc, int tf32, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_gemm_f32: NULL GPU");
    if (m < 0 || n < 0 || k < 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX)
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_gemm_f32: sizes out of cuBLAS's int range");
    if (m == 0 || n == 0) return DF_OK;
    DF_CUDA_CHECK(st, cudaSetDevice(g->device), "cudaSetDevice");
    if (k == 0) {
        for (int64_t i = 0; i < m; i++) DF_CUDA_CHECK(st, cudaMemsetAsync(c + i * ldc, 0, (size_t)n * sizeof(float), DF_CS(g)), "cudaMemsetAsync");
        return DF_OK;
    }
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = cublasGemmEx(DF_BLAS(g), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                    &one, b, CUDA_R_32F, (int)ldb, a, CUDA_R_32F, (int)lda, &zero, c, CUDA_R_32F, (int)ldc,
                                    tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
        return df_status_set(st, s == CUBLAS_STATUS_ALLOC_FAILED ? DF_RESOURCE_EXHAUSTED : s == CUBLAS_STATUS_INVALID_VALUE ? DF_INVALID_ARGUMENT : DF_INTERNAL,
                             "cublasGemmEx (%lld x %lld x %lld) failed: %s", (long long)m, (long long)n, (long long)k, df_cublas_name(s));
    DF_CUDA_CHECK(st, cudaGetLastError(), "cublasGemmEx");
    return DF_OK;
}

/* ---- elementwise float kernels: 16-byte loads where the pointers allow, a grid-stride loop ---- */
__device__ __forceinline__ float df_cuda_ew(int op, float x, float y) {
    switch (op) {
    case DF_CUDA_ADD: return x + y;
    case DF_CUDA_SUB: return x - y;
    case DF_CUDA_MUL: return x * y;
    case DF_CUDA_MAX: return x != x || x > y ? x : y;
    case DF_CUDA_RELU: return x > 0.0f || x != x ? x : 0.0f;
    default: return tanhf(x);
    }
}
__global__ void df_cuda_elementwise4(int op, const float4 *a, const float4 *b, float4 *c, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 x = a[i], y = b ? b[i] : x, r;
        r.x = df_cuda_ew(op, x.x, y.x); r.y = df_cuda_ew(op, x.y, y.y);
        r.z = df_cuda_ew(op, x.z, y.z); r.w = df_cuda_ew(op, x.w, y.w);
        c[i] = r;
    }
}
__global__ void df_cuda_elementwise1(int op, const float *a, const float *b, float *c, int64_t lo, int64_t n) {
    for (int64_t i = lo + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        c[i] = df_cuda_ew(op, a[i], b ? b[i] : a[i]);
}
/* c = op(a, b) over n floats (b NULL for the unary ops Relu and Tanh), on the compute stream. */
extern "C" df_code df_cuda_elementwise_f32(df_cuda *g, int op, const float *a, const float *b, float *c, int64_t n, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g || op < DF_CUDA_ADD || op > DF_CUDA_TANH || n < 0 || (n && (!a || !c)) || (op < DF_CUDA_RELU && n && !b))
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_elementwise_f32: bad arguments");
    if (op >= DF_CUDA_RELU) b = NULL;
    if (!n) return DF_OK;
    DF_CUDA_CHECK(st, cudaSetDevice(g->device), "cudaSetDevice");
    const int sms = g->sms;
    const int threads = 256;
    int aligned = !((uintptr_t)a & 15) && !((uintptr_t)c & 15) && (!b || !((uintptr_t)b & 15));
    int64_t n4 = aligned ? n / 4 : 0;
    if (n4) {
        int64_t blocks = (n4 + threads - 1) / threads, cap = (int64_t)sms * 8;
        df_cuda_elementwise4<<<(unsigned)(blocks < cap ? blocks : cap), threads, 0, DF_CS(g)>>>(
            op, (const float4 *)a, (const float4 *)b, (float4 *)c, n4);
        DF_CUDA_CHECK(st, cudaGetLastError(), "launching an elementwise kernel");
    }
    if (n4 * 4 < n) {
        int64_t blocks = (n - n4 * 4 + threads - 1) / threads, cap = (int64_t)sms * 8;
        df_cuda_elementwise1<<<(unsigned)(blocks < cap ? blocks : cap), threads, 0, DF_CS(g)>>>(op, a, b, c, n4 * 4, n);
        DF_CUDA_CHECK(st, cudaGetLastError(), "launching an elementwise kernel");
    }
    return DF_OK;
}

/* ==========================================================================================
   The launchers behind the session's GPU device (dataflow.h). Each one: checks its arguments
   (a bad one is DF_INVALID_ARGUMENT naming the launcher), makes the GPU current, queues its
   kernels on the compute stream, turns a failed launch into a status. Kernels walk their
   elements with 64-bit grid-stride loops over at most enough blocks to fill the GPU once.
   ========================================================================================== */
enum { DF_CUDA_THREADS = 256 };
#define DF_CUDA_ENTER(who)                                                                        \
    df_status df_local_;                                                                          \
    if (!st) st = &df_local_;                                                                     \
    df_status_clear(st);                                                                          \
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "%s: NULL GPU", who)
#define DF_CUDA_BAD(...) return df_status_set(st, DF_INVALID_ARGUMENT, __VA_ARGS__)
#define DF_CUDA_LAUNCHED(who) DF_CUDA_CHECK(st, cudaGetLastError(), who)

static df_code df_cuda_use(df_cuda *g, df_status *st) {
    DF_CUDA_CHECK(st, cudaSetDevice(g->device), "cudaSetDevice");
    return DF_OK;
}
/* Blocks of DF_CUDA_THREADS of kernel K that the GPU holds at once, per multiprocessor: asked
   once per kernel (the first GPU asked answers for all; they are assumed alike). */
template <auto K> static int df_cuda_resident(void) {
    static int per_sm;
    int v = __atomic_load_n(&per_sm, __ATOMIC_RELAXED);
    if (!v) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, K, DF_CUDA_THREADS, 0) != cudaSuccess || v < 1) {
            (void)cudaGetLastError();
            v = 2048 / DF_CUDA_THREADS;
        }
        __atomic_store_n(&per_sm, v, __ATOMIC_RELAXED);
    }
    return v;
}
/* Blocks for `units` pieces of work of kernel K's grid-stride loop: one per piece up to one
   full wave of the GPU, so no block waits for a second wave. */
template <auto K> static unsigned df_cuda_grid(const df_cuda *g, int64_t units) {
    int64_t blocks = (units + DF_CUDA_THREADS - 1) / DF_CUDA_THREADS, cap = (int64_t)g->sms * df_cuda_resident<K>();
    if (blocks > cap) blocks = cap;
    return (unsigned)(blocks < 1 ? 1 : blocks);
}
static int df_cuda_misaligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) != 0; }
/* The alignment an element of es bytes needs (16-byte elements are read as two 8-byte words). */
static size_t df_cuda_elem_align(size_t es) { return es > 8 ? 8 : es; }
static int df_cuda_elem_size_ok(size_t es) { return es == 1 || es == 2 || es == 4 || es == 8 || es == 16; }
static int df_cuda_is_float(df_dtype t) { return t == DF_FLOAT || t == DF_DOUBLE; }
/* a * b for counts; 0 when negative or past INT64_MAX. */
static int df_cuda_mul(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0 || (a && b > INT64_MAX / a)) return 0;
    *out = a * b;
    return 1;
}
/* The element count of a shape; 0 for a bad rank, a negative dim or an overflowing count. */
static int df_cuda_count(int rank, const int64_t *dims, int64_t *n) {
    *n = 0;
    if (rank < 0 || rank > DF_MAX_RANK || (rank && !dims)) return 0;
    int64_t p = 1;
    int zero = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) return 0;
        if (dims[d] == 0) zero = 1;
        else if (!df_cuda_mul(p, dims[d], &p)) return 0;
    }
    *n = zero ? 0 : p;
    return 1;
}

/* ---- index spaces: dims with up to three operands' element strides ----
   Passed to kernels by value. Built with size-1 dims dropped and neighbours merged where every
   operand steps over the pair as over one dim, so the common cases come out as rank 0 or 1
   (a multiply per element instead of divisions). */
typedef struct df_cuda_index {
    int rank;
    int64_t dims[DF_MAX_RANK];
    int64_t strides[3][DF_MAX_RANK];
} df_cuda_index;
static void df_cuda_index_make(df_cuda_index *ix, int rank, const int64_t *dims, int n_ops, const int64_t *const *strides) {
    memset(ix, 0, sizeof *ix);
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1) continue;
        int merge = r > 0;
        for (int k = 0; merge && k < n_ops; k++)
            merge = ix->strides[k][r - 1] == (int64_t)((uint64_t)strides[k][d] * (uint64_t)dims[d]);
        if (merge) {
            ix->dims[r - 1] *= dims[d];
            for (int k = 0; k < n_ops; k++) ix->strides[k][r - 1] = strides[k][d];
        } else {
            ix->dims[r] = dims[d];
            for (int k = 0; k < n_ops; k++) ix->strides[k][r] = strides[k][d];
            r++;
        }
    }
    ix->rank = r;
}
/* q = i / n and *r = i % n for i >= 0, n > 0, in 32 bits when both fit. */
__device__ __forceinline__ int64_t df_cu_divmod(int64_t i, int64_t n, int64_t *r) {
    if (((uint64_t)i | (uint64_t)n) <= 0xffffffffull) {
        uint32_t q = (uint32_t)i / (uint32_t)n;
        *r = i - (int64_t)q * n;
        return q;
    }
    int64_t q = i / n;
    *r = i - q * n;
    return q;
}
/* Element offsets of linear index i (row-major over ix.dims) for each operand. The loop over
   dims is unrolled so the struct stays in the parameter bank. */
template <int NOPS>
__device__ __forceinline__ void df_cu_offsets(const df_cuda_index &ix, int64_t i, int64_t *off) {
    if (ix.rank <= 1) {
#pragma unroll
        for (int k = 0; k < NOPS; k++) off[k] = i * ix.strides[k][0];
        return;
    }
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = 0;
#pragma unroll
    for (int d = DF_MAX_RANK - 1; d >= 0; d--) {
        if (d < ix.rank) {
            int64_t r, q = df_cu_divmod(i, ix.dims[d], &r);
#pragma unroll
            for (int k = 0; k < NOPS; k++) off[k] += r * ix.strides[k][d];
            i = q;
        }
    }
}
/* floor(a / b) for b > 0 and any a. */
__device__ __forceinline__ int64_t df_cu_floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* N elements of T in one 16-byte (or smaller) access. */
template <class T, int N> struct alignas(sizeof(T) * N) df_cu_vec { T v[N]; };
/* A 16-byte element at 8-byte alignment (complex128). */
struct alignas(8) df_cu_b16 { unsigned long long lo, hi; };

/* Products that the compiler must not fuse with a following add: the CPU kernels round the
   product first (they are built without FMA contraction), and so do these. */
__device__ __forceinline__ float df_cu_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double df_cu_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float df_cu_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double df_cu_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float df_cu_exp(float v) { return expf(v); }
__device__ __forceinline__ double df_cu_exp(double v) { return exp(v); }
__device__ __forceinline__ float df_cu_log(float v) { return logf(v); }
__device__ __forceinline__ double df_cu_log(double v) { return log(v); }
__device__ __forceinline__ float df_cu_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double df_cu_tanh(double v) { return tanh(v); }
__device__ __forceinline__ float df_cu_floor(float v) { return floorf(v); }
__device__ __forceinline__ double df_cu_floor(double v) { return floor(v); }
__device__ __forceinline__ float df_cu_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double df_cu_pow(double x, double y) { return pow(x, y); }

/* ---- copies ---- */
/* One of the two ordering events, made on first use (two threads may race to make it: the
   loser destroys its own). */
static df_code df_cuda_mark(cudaEvent_t *slot, df_status *st, cudaEvent_t *out) {
    cudaEvent_t e = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!e) {
        cudaEvent_t made = NULL, expected = NULL;
        DF_CUDA_CHECK(st, cudaEventCreateWithFlags(&made, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        if (__atomic_compare_exchange_n(slot, &expected, made, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) e = made;
        else { cudaEventDestroy(made); e = expected; }
    }
    *out = e;
    return DF_OK;
}
/* The copy stream waits for the work queued on compute so far. */
static df_code df_cuda_copy_after_compute(df_cuda *g, df_status *st) {
    cudaEvent_t e;
    if (df_cuda_mark(&g->compute_mark, st, &e)) return st->code;
    DF_CUDA_CHECK(st, cudaEventRecord(e, g->compute), "cudaEventRecord (compute)");
    DF_CUDA_CHECK(st, cudaStreamWaitEvent(g->copy, e, 0), "cudaStreamWaitEvent (copy after compute)");
    return DF_OK;
}
/* Pageable host memory is staged by cudaMemcpyAsync before it returns; pinned or managed
   memory is read later by the DMA engine, so the copy is waited for before host_src is given
   back. A later record of the same event by another thread only marks a later point. */
extern "C" df_code df_cuda_memcpy_h2d(df_cuda *g, void *dst, const void *host_src, size_t bytes, df_status *st) {
    DF_CUDA_ENTER("df_cuda_memcpy_h2d");
    if (!bytes) return DF_OK;
    if (!dst || !host_src) DF_CUDA_BAD("df_cuda_memcpy_h2d: NULL pointer for %zu bytes", bytes);
    DF_CUDA_NOT_CAPTURING(g, st, "df_cuda_memcpy_h2d");
    if (df_cuda_use(g, st)) return st->code;
    if (df_cuda_copy_after_compute(g, st)) return st->code;
    DF_CUDA_CHECK(st, cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, g->copy), "cudaMemcpyAsync to the GPU");
    cudaEvent_t done;
    if (df_cuda_mark(&g->copy_mark, st, &done)) return st->code;
    DF_CUDA_CHECK(st, cudaEventRecord(done, g->copy), "cudaEventRecord (copy)");
    DF_CUDA_CHECK(st, cudaStreamWaitEvent(g->compute, done, 0), "cudaStreamWaitEvent (compute after copy)");
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, host_src) != cudaSuccess) (void)cudaGetLastError();   /* plain memory */
    else if (attr.type != cudaMemoryTypeUnregistered) DF_CUDA_CHECK(st, cudaEventSynchronize(done), "copy to the GPU");
    return DF_OK;
}
extern "C" df_code df_cuda_memcpy_d2h(df_cuda *g, void *host_dst, const void *src, size_t bytes, df_status *st) {
    DF_CUDA_ENTER("df_cuda_memcpy_d2h");
    if (!bytes) return DF_OK;
    if (!host_dst || !src) DF_CUDA_BAD("df_cuda_memcpy_d2h: NULL pointer for %zu bytes", bytes);
    DF_CUDA_NOT_CAPTURING(g, st, "df_cuda_memcpy_d2h");
    if (df_cuda_use(g, st)) return st->code;
    if (df_cuda_copy_after_compute(g, st)) return st->code;
    DF_CUDA_CHECK(st, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, g->copy), "cudaMemcpyAsync to the host");
    DF_CUDA_CHECK(st, cudaStreamSynchronize(g->copy), "copy to the host");
    return DF_OK;
}
extern "C" df_code df_cuda_memcpy_d2d(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st) {
    DF_CUDA_ENTER("df_cuda_memcpy_d2d");
    if (!bytes) return DF_OK;
    if (!dst || !src) DF_CUDA_BAD("df_cuda_memcpy_d2d: NULL pointer for %zu bytes", bytes);
    if (df_cuda_use(g, st)) return st->code;
    DF_CUDA_CHECK(st, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, DF_CS(g)), "cudaMemcpyAsync on the GPU");
    return DF_OK;
}

/* ---- fill ---- */
template <class E>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_fill(E *dst, int64_t n, E v) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) dst[i] = v;
}
template <class E>
static df_code df_cuda_fill_run(df_cuda *g, void *dst, int64_t n, const void *value, df_status *st) {
    E v;
    memcpy(&v, value, sizeof v);
    df_cu_fill<E><<<df_cuda_grid<df_cu_fill<E>>(g, n), DF_CUDA_THREADS, 0, DF_CS(g)>>>((E *)dst, n, v);
    DF_CUDA_LAUNCHED("df_cuda_fill");
    return DF_OK;
}
/* A value of equal bytes is a memset; else 16-byte stores of the value repeated where dst is
   16-byte aligned, the rest one element at a time. */
extern "C" df_code df_cuda_fill(df_cuda *g, void *dst, int64_t n, size_t elem_size, const void *host_value, df_status *st) {
    DF_CUDA_ENTER("df_cuda_fill");
    if (!df_cuda_elem_size_ok(elem_size)) DF_CUDA_BAD("df_cuda_fill: element size %zu is not 1, 2, 4, 8 or 16", elem_size);
    if (n < 0) DF_CUDA_BAD("df_cuda_fill: negative count %lld", (long long)n);
    if (!n) return DF_OK;
    int64_t bytes;
    if (!df_cuda_mul(n, (int64_t)elem_size, &bytes)) DF_CUDA_BAD("df_cuda_fill: %lld elements are too many", (long long)n);
    if (!dst || !host_value) DF_CUDA_BAD("df_cuda_fill: NULL pointer");
    if (df_cuda_misaligned(dst, df_cuda_elem_align(elem_size)))
        DF_CUDA_BAD("df_cuda_fill: destination not aligned to its %zu-byte elements", elem_size);
    if (df_cuda_use(g, st)) return st->code;
    const unsigned char *v = (const unsigned char *)host_value;
    int same = 1;
    for (size_t i = 1; i < elem_size; i++) same &= v[i] == v[0];
    if (same) {
        DF_CUDA_CHECK(st, cudaMemsetAsync(dst, v[0], (size_t)bytes, DF_CS(g)), "df_cuda_fill: cudaMemsetAsync");
        return DF_OK;
    }
    int64_t done = 0;
    if (!df_cuda_misaligned(dst, 16) && bytes >= 16) {
        unsigned char pattern[16];
        for (size_t i = 0; i < 16; i++) pattern[i] = v[i % elem_size];
        if (df_cuda_fill_run<uint4>(g, dst, bytes / 16, pattern, st)) return st->code;
        done = bytes / 16 * 16 / (int64_t)elem_size;
        if (done == n) return DF_OK;
    }
    char *rest = (char *)dst + (size_t)done * elem_size;
    switch (elem_size) {
    case 1: return df_cuda_fill_run<uint8_t>(g, rest, n - done, v, st);
    case 2: return df_cuda_fill_run<uint16_t>(g, rest, n - done, v, st);
    case 4: return df_cuda_fill_run<uint32_t>(g, rest, n - done, v, st);
    case 8: return df_cuda_fill_run<unsigned long long>(g, rest, n - done, v, st);
    default: return df_cuda_fill_run<df_cu_b16>(g, rest, n - done, v, st);
    }
}

/* ---- elementwise unary and binary ops ----
   An op is a functor F (in_t, out_t, f(x, y)); kernels: flat (every operand dense or a scalar:
   16-byte vectors where the pointers allow, the tail one element per thread) and strided (an
   index space of rank up to DF_MAX_RANK). The formulas are dataflow.c's DF__UNARY_FLOAT,
   DF__ARITH_ROWS and DF__GRAD_ROWS, in the same order of operations. */
template <int OP, class T> struct df_cu_unary_fn {
    typedef T in_t;
    typedef T out_t;
    static __device__ __forceinline__ T f(T v, T) {
        if constexpr (OP == DF_CUDA_U_NEG) return -v;
        else if constexpr (OP == DF_CUDA_U_SQUARE) return v * v;
        else if constexpr (OP == DF_CUDA_U_SQRT) return df_cu_sqrt(v);
        else if constexpr (OP == DF_CUDA_U_RSQRT) return (T)1 / df_cu_sqrt(v);
        else if constexpr (OP == DF_CUDA_U_EXP) return df_cu_exp(v);
        else if constexpr (OP == DF_CUDA_U_LOG) return df_cu_log(v);
        else if constexpr (OP == DF_CUDA_U_TANH) return df_cu_tanh(v);
        else if constexpr (OP == DF_CUDA_U_SIGMOID)   /* the exponent is never positive: no overflow */
            return v >= 0 ? (T)1 / ((T)1 + df_cu_exp(-v)) : df_cu_exp(v) / ((T)1 + df_cu_exp(v));
        else if constexpr (OP == DF_CUDA_U_RELU) return v > 0 ? v : (v != v ? v : (T)0);
        else if constexpr (OP == DF_CUDA_U_ABS) return v < 0 ? -v : v;
        else if constexpr (OP == DF_CUDA_U_SIGN) return v > 0 ? (T)1 : v < 0 ? (T)-1 : v == 0 ? (T)0 : v;   /* +0 for -0, NaN stays */
        else if constexpr (OP == DF_CUDA_U_NOT) return (T)!v;
        else if constexpr (OP == DF_CUDA_U_RECIPROCAL) return (T)1 / v;
        else return df_cu_floor(v);
    }
};
template <int OP> struct df_cu_is_predicate {
    static constexpr bool value = OP >= DF_CUDA_B_LESS && OP <= DF_CUDA_B_OR;
};
template <int OP, class T> struct df_cu_binary_fn {
    typedef T in_t;
    typedef typename std::conditional<df_cu_is_predicate<OP>::value, uint8_t, T>::type out_t;
    static __device__ __forceinline__ out_t f(T x, T y) {
        if constexpr (OP == DF_CUDA_B_ADD) return x + y;
        else if constexpr (OP == DF_CUDA_B_SUB) return x - y;
        else if constexpr (OP == DF_CUDA_B_MUL) return x * y;
        else if constexpr (OP == DF_CUDA_B_DIV) return x / y;
        else if constexpr (OP == DF_CUDA_B_MAX) return (x > y || x != x) ? x : y;
        else if constexpr (OP == DF_CUDA_B_MIN) return (x < y || x != x) ? x : y;
        else if constexpr (OP == DF_CUDA_B_POW) return df_cu_pow(x, y);
        else if constexpr (OP == DF_CUDA_B_FLOORMOD) {   /* in double for float too, as the CPU's fmod */
            double r = fmod((double)x, (double)y);
            return (T)(r != 0 && ((r < 0) != (y < 0)) ? r + (double)y : r);
        }
        else if constexpr (OP == DF_CUDA_B_FLOORDIV) return df_cu_floor(x / y);
        else if constexpr (OP == DF_CUDA_B_SQDIFF) return (x - y) * (x - y);
        else if constexpr (OP == DF_CUDA_B_LESS) return (uint8_t)(x < y);
        else if constexpr (OP == DF_CUDA_B_LESS_EQ) return (uint8_t)(x <= y);
        else if constexpr (OP == DF_CUDA_B_GREATER) return (uint8_t)(x > y);
        else if constexpr (OP == DF_CUDA_B_GREATER_EQ) return (uint8_t)(x >= y);
        else if constexpr (OP == DF_CUDA_B_EQUAL) return (uint8_t)(x == y);
        else if constexpr (OP == DF_CUDA_B_NOT_EQUAL) return (uint8_t)(x != y);
        else if constexpr (OP == DF_CUDA_B_AND) return (uint8_t)(x && y);
        else if constexpr (OP == DF_CUDA_B_OR) return (uint8_t)(x || y);
        else if constexpr (OP == DF_CUDA_B_RELU_GRAD) return y > 0 ? x : (T)0;                     /* (dy, x) */
        else if constexpr (OP == DF_CUDA_B_TANH_GRAD) return y * ((T)1 - df_cu_mul(x, x));           /* (y, dy) from here */
        else if constexpr (OP == DF_CUDA_B_SIGMOID_GRAD) return y * x * ((T)1 - x);
        else if constexpr (OP == DF_CUDA_B_SQRT_GRAD) return y * (T)0.5 / x;
        else if constexpr (OP == DF_CUDA_B_RSQRT_GRAD) return y * (T)-0.5 * x * x * x;
        else return -y * x * x;
    }
};

/* c[i] = f(a[i or 0], b[i or 0]): sa/sb 1 for a dense operand, 0 for a scalar one. */
template <class F, int V>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_flat(const typename F::in_t *a, const typename F::in_t *b, typename F::out_t *c, int64_t n, int sa, int sb, F fn) {
    typedef typename F::in_t T;
    typedef typename F::out_t TO;
    typedef df_cu_vec<T, V> VI;
    typedef df_cu_vec<TO, V> VO;
    const T xs = sa ? T() : a[0], ys = sb ? T() : b[0];
    const int64_t nv = n / V, step = (int64_t)gridDim.x * blockDim.x, first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (int64_t i = first; i < nv; i += step) {
        VI x, y;
        VO r;
        if (sa) x = ((const VI *)a)[i];
        else {
#pragma unroll
            for (int k = 0; k < V; k++) x.v[k] = xs;
        }
        if (sb) y = ((const VI *)b)[i];
        else {
#pragma unroll
            for (int k = 0; k < V; k++) y.v[k] = ys;
        }
#pragma unroll
        for (int k = 0; k < V; k++) r.v[k] = fn.f(x.v[k], y.v[k]);
        ((VO *)c)[i] = r;
    }
    if (V > 1) {   /* fewer than V left: one each for the first threads */
        int64_t t = nv * V + first;
        if (t < n) c[t] = fn.f(sa ? a[t] : xs, sb ? b[t] : ys);
    }
}
template <class F>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_strided(df_cuda_index ix, const typename F::in_t *a, const typename F::in_t *b, typename F::out_t *c, int64_t n, F fn) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        df_cu_offsets<2>(ix, i, off);
        c[i] = fn.f(a[off[0]], b[off[1]]);
    }
}
/* Runs F over the index space ix (operands a, b; c dense) of n > 0 elements (fn: the functor,
   with the parameters of the ops that take some). */
template <class F>
static df_code df_cuda_elementwise_run(df_cuda *g, const df_cuda_index &ix, int64_t n, const void *a, const void *b, void *c,
                                       const char *who, df_status *st, F fn = F()) {
    typedef typename F::in_t T;
    typedef typename F::out_t TO;
    const T *pa = (const T *)a, *pb = (const T *)b;
    TO *pc = (TO *)c;
    const int flat = ix.rank == 0 || (ix.rank == 1 && (ix.strides[0][0] == 0 || ix.strides[0][0] == 1) &&
                                      (ix.strides[1][0] == 0 || ix.strides[1][0] == 1));
    if (flat) {
        const int sa = ix.rank == 1 && ix.strides[0][0] == 1, sb = ix.rank == 1 && ix.strides[1][0] == 1;
        constexpr int V = 16 / sizeof(T);
        const int vec = n >= V && (!sa || !df_cuda_misaligned(a, 16)) && (!sb || !df_cuda_misaligned(b, 16)) &&
                        !df_cuda_misaligned(c, V * sizeof(TO));
        if (vec) df_cu_flat<F, V><<<df_cuda_grid<df_cu_flat<F, V>>(g, n / V), DF_CUDA_THREADS, 0, DF_CS(g)>>>(pa, pb, pc, n, sa, sb, fn);
        else df_cu_flat<F, 1><<<df_cuda_grid<df_cu_flat<F, 1>>(g, n), DF_CUDA_THREADS, 0, DF_CS(g)>>>(pa, pb, pc, n, sa, sb, fn);
    } else {
        df_cu_strided<F><<<df_cuda_grid<df_cu_strided<F>>(g, n), DF_CUDA_THREADS, 0, DF_CS(g)>>>(ix, pa, pb, pc, n, fn);
    }
    DF_CUDA_LAUNCHED(who);
    return DF_OK;
}

template <int OP>
static df_code df_cuda_unary_op(df_cuda *g, df_dtype t, const void *x, void *y, int64_t n, df_status *st) {
    df_cuda_index ix;
    const int64_t one = 1, *strides[2] = {&one, &one};
    df_cuda_index_make(&ix, 1, &n, 2, strides);
    if constexpr (OP == DF_CUDA_U_NOT) {
        (void)t;
        return df_cuda_elementwise_run<df_cu_unary_fn<OP, uint8_t>>(g, ix, n, x, x, y, "df_cuda_unary", st);
    } else {
        if (t == DF_FLOAT) return df_cuda_elementwise_run<df_cu_unary_fn<OP, float>>(g, ix, n, x, x, y, "df_cuda_unary", st);
        return df_cuda_elementwise_run<df_cu_unary_fn<OP, double>>(g, ix, n, x, x, y, "df_cuda_unary", st);
    }
}
extern "C" df_code df_cuda_unary(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t n, df_status *st) {
    DF_CUDA_ENTER("df_cuda_unary");
    if (op < 0 || op >= DF_CUDA_U_COUNT) DF_CUDA_BAD("df_cuda_unary: unknown op %d", op);
    if (op == DF_CUDA_U_NOT ? t != DF_BOOL : !df_cuda_is_float(t))
        DF_CUDA_BAD("df_cuda_unary: op %d has no kernel for %s", op, df_dtype_name(t));
    if (n < 0) DF_CUDA_BAD("df_cuda_unary: negative count %lld", (long long)n);
    if (!n) return DF_OK;
    if (!x || !y) DF_CUDA_BAD("df_cuda_unary: NULL pointer");
    size_t es = df_dtype_size(t);
    if (df_cuda_misaligned(x, es) || df_cuda_misaligned(y, es)) DF_CUDA_BAD("df_cuda_unary: pointer not aligned to %s", df_dtype_name(t));
    if (df_cuda_use(g, st)) return st->code;
    switch (op) {
#define DF_CU_UNARY_CASE(OP) case OP: return df_cuda_unary_op<OP>(g, t, x, y, n, st);
    DF_CU_UNARY_CASE(DF_CUDA_U_NEG) DF_CU_UNARY_CASE(DF_CUDA_U_SQUARE) DF_CU_UNARY_CASE(DF_CUDA_U_SQRT)
    DF_CU_UNARY_CASE(DF_CUDA_U_RSQRT) DF_CU_UNARY_CASE(DF_CUDA_U_EXP) DF_CU_UNARY_CASE(DF_CUDA_U_LOG)
    DF_CU_UNARY_CASE(DF_CUDA_U_TANH) DF_CU_UNARY_CASE(DF_CUDA_U_SIGMOID) DF_CU_UNARY_CASE(DF_CUDA_U_RELU)
    DF_CU_UNARY_CASE(DF_CUDA_U_ABS) DF_CU_UNARY_CASE(DF_CUDA_U_SIGN) DF_CU_UNARY_CASE(DF_CUDA_U_NOT)
    DF_CU_UNARY_CASE(DF_CUDA_U_RECIPROCAL) DF_CU_UNARY_CASE(DF_CUDA_U_FLOOR)
#undef DF_CU_UNARY_CASE
    default: DF_CUDA_BAD("df_cuda_unary: unknown op %d", op);
    }
}

template <int OP>
static df_code df_cuda_binary_op(df_cuda *g, df_dtype t, const df_cuda_index &ix, int64_t n, const void *a, const void *b, void *c,
                                 df_status *st) {
    if constexpr (OP == DF_CUDA_B_AND || OP == DF_CUDA_B_OR) {
        (void)t;
        return df_cuda_elementwise_run<df_cu_binary_fn<OP, uint8_t>>(g, ix, n, a, b, c, "df_cuda_binary", st);
    } else {
        if (t == DF_FLOAT) return df_cuda_elementwise_run<df_cu_binary_fn<OP, float>>(g, ix, n, a, b, c, "df_cuda_binary", st);
        return df_cuda_elementwise_run<df_cu_binary_fn<OP, double>>(g, ix, n, a, b, c, "df_cuda_binary", st);
    }
}
extern "C" df_code df_cuda_binary(df_cuda *g, int op, df_dtype t, int rank, const int64_t *dims, const void *a,
                                  const int64_t *sa, const void *b, const int64_t *sb, void *c, df_status *st) {
    DF_CUDA_ENTER("df_cuda_binary");
    if (op < 0 || op >= DF_CUDA_B_COUNT) DF_CUDA_BAD("df_cuda_binary: unknown op %d", op);
    const int logic = op == DF_CUDA_B_AND || op == DF_CUDA_B_OR;
    if (logic ? t != DF_BOOL : !df_cuda_is_float(t))
        DF_CUDA_BAD("df_cuda_binary: op %d has no kernel for %s", op, df_dtype_name(t));
    int64_t n;
    if (!df_cuda_count(rank, dims, &n)) DF_CUDA_BAD("df_cuda_binary: bad shape (rank %d)", rank);
    if (rank && (!sa || !sb)) DF_CUDA_BAD("df_cuda_binary: NULL strides");
    if (!n) return DF_OK;
    if (!a || !b || !c) DF_CUDA_BAD("df_cuda_binary: NULL pointer");
    size_t es = df_dtype_size(t), eo = op >= DF_CUDA_B_LESS && op <= DF_CUDA_B_OR ? 1 : es;
    if (df_cuda_misaligned(a, es) || df_cuda_misaligned(b, es) || df_cuda_misaligned(c, eo))
        DF_CUDA_BAD("df_cuda_binary: pointer not aligned to its elements");
    const int64_t *strides[2] = {sa, sb};
    df_cuda_index ix;
    df_cuda_index_make(&ix, rank, dims, 2, strides);
    if (df_cuda_use(g, st)) return st->code;
    switch (op) {
#define DF_CU_BINARY_CASE(OP) case OP: return df_cuda_binary_op<OP>(g, t, ix, n, a, b, c, st);
    DF_CU_BINARY_CASE(DF_CUDA_B_ADD) DF_CU_BINARY_CASE(DF_CUDA_B_SUB) DF_CU_BINARY_CASE(DF_CUDA_B_MUL)
    DF_CU_BINARY_CASE(DF_CUDA_B_DIV) DF_CU_BINARY_CASE(DF_CUDA_B_MAX) DF_CU_BINARY_CASE(DF_CUDA_B_MIN)
    DF_CU_BINARY_CASE(DF_CUDA_B_POW) DF_CU_BINARY_CASE(DF_CUDA_B_FLOORMOD) DF_CU_BINARY_CASE(DF_CUDA_B_FLOORDIV)
    DF_CU_BINARY_CASE(DF_CUDA_B_SQDIFF) DF_CU_BINARY_CASE(DF_CUDA_B_LESS) DF_CU_BINARY_CASE(DF_CUDA_B_LESS_EQ)
    DF_CU_BINARY_CASE(DF_CUDA_B_GREATER) DF_CU_BINARY_CASE(DF_CUDA_B_GREATER_EQ) DF_CU_BINARY_CASE(DF_CUDA_B_EQUAL)
    DF_CU_BINARY_CASE(DF_CUDA_B_NOT_EQUAL) DF_CU_BINARY_CASE(DF_CUDA_B_AND) DF_CU_BINARY_CASE(DF_CUDA_B_OR)
    DF_CU_BINARY_CASE(DF_CUDA_B_RELU_GRAD) DF_CU_BINARY_CASE(DF_CUDA_B_TANH_GRAD) DF_CU_BINARY_CASE(DF_CUDA_B_SIGMOID_GRAD)
    DF_CU_BINARY_CASE(DF_CUDA_B_SQRT_GRAD) DF_CU_BINARY_CASE(DF_CUDA_B_RSQRT_GRAD) DF_CU_BINARY_CASE(DF_CUDA_B_RECIP_GRAD)
#undef DF_CU_BINARY_CASE
    default: DF_CUDA_BAD("df_cuda_binary: unknown op %d", op);
    }
}

/* ---- the further math ops (dataflow.c's src/kernels/math.c and extra.c) ----
   Each element in double, rounded once to T, as the CPU kernels (Sin and Cos in T). */
template <int OP> struct df_cu_math_is_predicate {
    static constexpr bool value = OP == DF_CUDA_M_IS_FINITE || OP == DF_CUDA_M_IS_NAN || OP == DF_CUDA_M_IS_INF;
};
#define DF_CU_SELU_SCALE 1.0507009873554804934193349852946
#define DF_CU_SELU_ALPHA 1.6732632423543772848170429916717
template <int OP, class T> struct df_cu_math_fn {
    typedef T in_t;
    typedef typename std::conditional<df_cu_math_is_predicate<OP>::value, uint8_t, T>::type out_t;
    double alpha, th;     /* LeakyRelu's alpha; Softplus's threshold log(epsilon) + 2 */
    __device__ __forceinline__ out_t f(T xt, T yt) const {
        const double v = (double)xt, a = v, b = (double)yt;
        if constexpr (OP == DF_CUDA_M_IS_FINITE) return (uint8_t)(isfinite(v) != 0);
        else if constexpr (OP == DF_CUDA_M_IS_NAN) return (uint8_t)(v != v);
        else if constexpr (OP == DF_CUDA_M_IS_INF) return (uint8_t)(isinf(v) != 0);
        else if constexpr (OP == DF_CUDA_M_SIN) { if constexpr (sizeof(T) == 4) return sinf((float)xt); else return (T)sin(v); }
        else if constexpr (OP == DF_CUDA_M_COS) { if constexpr (sizeof(T) == 4) return cosf((float)xt); else return (T)cos(v); }
        else {
            double r;
            if constexpr (OP == DF_CUDA_M_SOFTPLUS) r = v > -th ? v : v < th ? exp(v) : log1p(exp(v));
            else if constexpr (OP == DF_CUDA_M_SOFTSIGN) r = v / (1.0 + fabs(v));
            else if constexpr (OP == DF_CUDA_M_ELU) r = v < 0 ? expm1(v) : v;
            else if constexpr (OP == DF_CUDA_M_SELU) r = v < 0 ? DF_CU_SELU_SCALE * DF_CU_SELU_ALPHA * expm1(v) : DF_CU_SELU_SCALE * v;
            else if constexpr (OP == DF_CUDA_M_LEAKY_RELU) r = v < 0 ? v * alpha : v;
            else if constexpr (OP == DF_CUDA_M_RELU6) r = v != v ? v : v < 0 ? 0.0 : v > 6 ? 6.0 : v;
            else if constexpr (OP == DF_CUDA_M_LOG1P) r = log1p(v);
            else if constexpr (OP == DF_CUDA_M_EXPM1) r = expm1(v);
            else if constexpr (OP == DF_CUDA_M_ERF) r = erf(v);
            else if constexpr (OP == DF_CUDA_M_ERFC) r = erfc(v);
            else if constexpr (OP == DF_CUDA_M_TAN) r = tan(v);
            else if constexpr (OP == DF_CUDA_M_ASIN) r = asin(v);
            else if constexpr (OP == DF_CUDA_M_ACOS) r = acos(v);
            else if constexpr (OP == DF_CUDA_M_ATAN) r = atan(v);
            else if constexpr (OP == DF_CUDA_M_SINH) r = sinh(v);
            else if constexpr (OP == DF_CUDA_M_COSH) r = cosh(v);
            else if constexpr (OP == DF_CUDA_M_ROUND || OP == DF_CUDA_M_RINT) r = rint(v);     /* half to even */
            else if constexpr (OP == DF_CUDA_M_CEIL) r = ceil(v);
            else if constexpr (OP == DF_CUDA_M_ATAN2) r = atan2(a, b);
            else if constexpr (OP == DF_CUDA_M_TRUNCATE_DIV) r = trunc(a / b);
            else if constexpr (OP == DF_CUDA_M_TRUNCATE_MOD) r = fmod(a, b);
            else if constexpr (OP == DF_CUDA_M_ELU_GRAD) r = b < 0 ? a * (b + 1) : a;
            else if constexpr (OP == DF_CUDA_M_SELU_GRAD) r = b < 0 ? a * (b + DF_CU_SELU_SCALE * DF_CU_SELU_ALPHA) : a * DF_CU_SELU_SCALE;
            else if constexpr (OP == DF_CUDA_M_SOFTPLUS_GRAD) r = a / (1 + exp(-b));
            else if constexpr (OP == DF_CUDA_M_SOFTSIGN_GRAD) r = a / ((1 + fabs(b)) * (1 + fabs(b)));
            else if constexpr (OP == DF_CUDA_M_LEAKY_RELU_GRAD) r = b > 0 ? a : a * alpha;
            else r = a * (double)(b > 0 && b < 6);                                     /* RELU6_GRAD */
            return (T)r;
        }
    }
};
static int df_cuda_math_is_binary(int op) { return op >= DF_CUDA_M_ATAN2 && op <= DF_CUDA_M_RELU6_GRAD; }
template <int OP>
static df_code df_cuda_math_op(df_cuda *g, df_dtype t, const df_cuda_index &ix, int64_t n, const void *a, const void *b, void *c,
                               double alpha, const char *who, df_status *st) {
    if (t == DF_FLOAT) {
        df_cu_math_fn<OP, float> fn;
        fn.alpha = alpha; fn.th = log((double)FLT_EPSILON) + 2.0;
        return df_cuda_elementwise_run<df_cu_math_fn<OP, float>>(g, ix, n, a, b, c, who, st, fn);
    }
    df_cu_math_fn<OP, double> fn;
    fn.alpha = alpha; fn.th = log(DBL_EPSILON) + 2.0;
    return df_cuda_elementwise_run<df_cu_math_fn<OP, double>>(g, ix, n, a, b, c, who, st, fn);
}
static df_code df_cuda_math_switch(df_cuda *g, int op, df_dtype t, const df_cuda_index &ix, int64_t n, const void *a,
                                   const void *b, void *c, double alpha, const char *who, df_status *st) {
    switch (op) {
#define DF_CU_MATH_CASE(OP) case OP: return df_cuda_math_op<OP>(g, t, ix, n, a, b, c, alpha, who, st);
    DF_CU_MATH_CASE(DF_CUDA_M_IS_FINITE) DF_CU_MATH_CASE(DF_CUDA_M_IS_NAN) DF_CU_MATH_CASE(DF_CUDA_M_IS_INF)
    DF_CU_MATH_CASE(DF_CUDA_M_SOFTPLUS) DF_CU_MATH_CASE(DF_CUDA_M_SOFTSIGN) DF_CU_MATH_CASE(DF_CUDA_M_ELU)
    DF_CU_MATH_CASE(DF_CUDA_M_SELU) DF_CU_MATH_CASE(DF_CUDA_M_LEAKY_RELU) DF_CU_MATH_CASE(DF_CUDA_M_RELU6)
    DF_CU_MATH_CASE(DF_CUDA_M_LOG1P) DF_CU_MATH_CASE(DF_CUDA_M_EXPM1) DF_CU_MATH_CASE(DF_CUDA_M_ERF)
    DF_CU_MATH_CASE(DF_CUDA_M_ERFC) DF_CU_MATH_CASE(DF_CUDA_M_TAN) DF_CU_MATH_CASE(DF_CUDA_M_ASIN)
    DF_CU_MATH_CASE(DF_CUDA_M_ACOS) DF_CU_MATH_CASE(DF_CUDA_M_ATAN) DF_CU_MATH_CASE(DF_CUDA_M_SINH)
    DF_CU_MATH_CASE(DF_CUDA_M_COSH) DF_CU_MATH_CASE(DF_CUDA_M_ROUND) DF_CU_MATH_CASE(DF_CUDA_M_RINT)
    DF_CU_MATH_CASE(DF_CUDA_M_CEIL) DF_CU_MATH_CASE(DF_CUDA_M_ATAN2) DF_CU_MATH_CASE(DF_CUDA_M_TRUNCATE_DIV)
    DF_CU_MATH_CASE(DF_CUDA_M_TRUNCATE_MOD) DF_CU_MATH_CASE(DF_CUDA_M_ELU_GRAD) DF_CU_MATH_CASE(DF_CUDA_M_SELU_GRAD)
    DF_CU_MATH_CASE(DF_CUDA_M_SOFTPLUS_GRAD) DF_CU_MATH_CASE(DF_CUDA_M_SOFTSIGN_GRAD)
    DF_CU_MATH_CASE(DF_CUDA_M_LEAKY_RELU_GRAD) DF_CU_MATH_CASE(DF_CUDA_M_RELU6_GRAD)
    DF_CU_MATH_CASE(DF_CUDA_M_SIN) DF_CU_MATH_CASE(DF_CUDA_M_COS)
#undef DF_CU_MATH_CASE
    default: DF_CUDA_BAD("%s: unknown op %d", who, op);
    }
}
extern "C" df_code df_cuda_math_unary(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t n, double alpha,
                                      df_status *st) {
    DF_CUDA_ENTER("df_cuda_math_unary");
    if (op < 0 || op >= DF_CUDA_M_COUNT || df_cuda_math_is_binary(op)) DF_CUDA_BAD("df_cuda_math_unary: unknown op %d", op);
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_math_unary: op %d has no kernel for %s", op, df_dtype_name(t));
    if (n < 0) DF_CUDA_BAD("df_cuda_math_unary: negative count %lld", (long long)n);
    if (!n) return DF_OK;
    if (!x || !y) DF_CUDA_BAD("df_cuda_math_unary: NULL pointer");
    size_t es = df_dtype_size(t);
    if (df_cuda_misaligned(x, es) || df_cuda_misaligned(y, op <= DF_CUDA_M_IS_INF ? 1 : es))
        DF_CUDA_BAD("df_cuda_math_unary: pointer not aligned to %s", df_dtype_name(t));
    if (df_cuda_use(g, st)) return st->code;
    df_cuda_index ix;
    const int64_t one = 1, *strides[2] = {&one, &one};
    df_cuda_index_make(&ix, 1, &n, 2, strides);
    return df_cuda_math_switch(g, op, t, ix, n, x, x, y, alpha, "df_cuda_math_unary", st);
}
extern "C" df_code df_cuda_math_binary(df_cuda *g, int op, df_dtype t, int rank, const int64_t *dims, const void *a,
                                       const int64_t *sa, const void *b, const int64_t *sb, void *c, double alpha, df_status *st) {
    DF_CUDA_ENTER("df_cuda_math_binary");
    if (!df_cuda_math_is_binary(op)) DF_CUDA_BAD("df_cuda_math_binary: unknown op %d", op);
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_math_binary: op %d has no kernel for %s", op, df_dtype_name(t));
    int64_t n;
    if (!df_cuda_count(rank, dims, &n)) DF_CUDA_BAD("df_cuda_math_binary: bad shape (rank %d)", rank);
    if (rank && (!sa || !sb)) DF_CUDA_BAD("df_cuda_math_binary: NULL strides");
    if (!n) return DF_OK;
    if (!a || !b || !c) DF_CUDA_BAD("df_cuda_math_binary: NULL pointer");
    size_t es = df_dtype_size(t);
    if (df_cuda_misaligned(a, es) || df_cuda_misaligned(b, es) || df_cuda_misaligned(c, es))
        DF_CUDA_BAD("df_cuda_math_binary: pointer not aligned to its elements");
    const int64_t *strides[2] = {sa, sb};
    df_cuda_index ix;
    df_cuda_index_make(&ix, rank, dims, 2, strides);
    if (df_cuda_use(g, st)) return st->code;
    return df_cuda_math_switch(g, op, t, ix, n, a, b, c, alpha, "df_cuda_math_binary", st);
}

/* ---- Select, AddN, Cast ---- */
template <class E>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_select(df_cuda_index ix, const uint8_t *cond, const E *x, const E *y, E *out, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        df_cu_offsets<3>(ix, i, off);
        out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
    }
}
template <class E>
static df_code df_cuda_select_run(df_cuda *g, const df_cuda_index &ix, int64_t n, const void *cond, const void *x, const void *y,
                                  void *out, df_status *st) {
    const unsigned blocks = df_cuda_grid<df_cu_select<E>>(g, n);
    df_cu_select<E><<<blocks, DF_CUDA_THREADS, 0, DF_CS(g)>>>(ix, (const uint8_t *)cond, (const E *)x, (const E *)y, (E *)out, n);
    DF_CUDA_LAUNCHED("df_cuda_select");
    return DF_OK;
}
extern "C" df_code df_cuda_select(df_cuda *g, size_t elem_size, int rank, const int64_t *dims, const void *cond,
                                  const int64_t *sc, const void *x, const int64_t *sx, const void *y, const int64_t *sy,
                                  void *out, df_status *st) {
    DF_CUDA_ENTER("df_cuda_select");
    if (!df_cuda_elem_size_ok(elem_size)) DF_CUDA_BAD("df_cuda_select: element size %zu is not 1, 2, 4, 8 or 16", elem_size);
    int64_t n;
    if (!df_cuda_count(rank, dims, &n)) DF_CUDA_BAD("df_cuda_select: bad shape (rank %d)", rank);
    if (rank && (!sc || !sx || !sy)) DF_CUDA_BAD("df_cuda_select: NULL strides");
    if (!n) return DF_OK;
    if (!cond || !x || !y || !out) DF_CUDA_BAD("df_cuda_select: NULL pointer");
    size_t al = df_cuda_elem_align(elem_size);
    if (df_cuda_misaligned(x, al) || df_cuda_misaligned(y, al) || df_cuda_misaligned(out, al))
        DF_CUDA_BAD("df_cuda_select: pointer not aligned to its %zu-byte elements", elem_size);
    const int64_t *strides[3] = {sc, sx, sy};
    df_cuda_index ix;
    df_cuda_index_make(&ix, rank, dims, 3, strides);
    if (df_cuda_use(g, st)) return st->code;
    switch (elem_size) {
    case 1: return df_cuda_select_run<uint8_t>(g, ix, n, cond, x, y, out, st);
    case 2: return df_cuda_select_run<uint16_t>(g, ix, n, cond, x, y, out, st);
    case 4: return df_cuda_select_run<uint32_t>(g, ix, n, cond, x, y, out, st);
    case 8: return df_cuda_select_run<unsigned long long>(g, ix, n, cond, x, y, out, st);
    default:
        if (!df_cuda_misaligned(x, 16) && !df_cuda_misaligned(y, 16) && !df_cuda_misaligned(out, 16))
            return df_cuda_select_run<uint4>(g, ix, n, cond, x, y, out, st);
        return df_cuda_select_run<df_cu_b16>(g, ix, n, cond, x, y, out, st);
    }
}

/* Up to eight inputs per pass, added in input order as the CPU does (((x0 + x1) + x2) ...);
   a later pass starts from out. */
enum { DF_CUDA_ADDN_PER_PASS = 8 };
template <class T> struct df_cu_inputs { const T *p[DF_CUDA_ADDN_PER_PASS]; };
template <class T, int V>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_add_n(df_cu_inputs<T> in, int n_in, int from_out, T *out, int64_t n) {
    typedef df_cu_vec<T, V> VT;
    const int64_t nv = n / V, step = (int64_t)gridDim.x * blockDim.x, first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (int64_t i = first; i < nv; i += step) {
        VT acc = from_out ? ((const VT *)out)[i] : ((const VT *)in.p[0])[i];
#pragma unroll
        for (int k = 0; k < DF_CUDA_ADDN_PER_PASS; k++) {
            if (k < (from_out ? 0 : 1) || k >= n_in) continue;
            VT x = ((const VT *)in.p[k])[i];
#pragma unroll
            for (int j = 0; j < V; j++) acc.v[j] = acc.v[j] + x.v[j];
        }
        ((VT *)out)[i] = acc;
    }
    if (V > 1) {
        int64_t t = nv * V + first;
        if (t < n) {
            T acc = from_out ? out[t] : in.p[0][t];
#pragma unroll
            for (int k = 0; k < DF_CUDA_ADDN_PER_PASS; k++)
                if (k >= (from_out ? 0 : 1) && k < n_in) acc = acc + in.p[k][t];
            out[t] = acc;
        }
    }
}
template <class T>
static df_code df_cuda_add_n_run(df_cuda *g, int n_inputs, const void *const *host_inputs, void *out, int64_t n, df_status *st) {
    constexpr int V = 16 / sizeof(T);
    int vec = n >= V && !df_cuda_misaligned(out, 16);
    for (int i = 0; i < n_inputs; i++) vec &= !df_cuda_misaligned(host_inputs[i], 16);
    for (int done = 0; done < n_inputs;) {
        df_cu_inputs<T> in;
        memset(&in, 0, sizeof in);
        int from_out = done > 0, k = 0;   /* after the first pass, out holds the sum so far */
        while (k < DF_CUDA_ADDN_PER_PASS && done < n_inputs) in.p[k++] = (const T *)host_inputs[done++];
        if (vec)
            df_cu_add_n<T, V><<<df_cuda_grid<df_cu_add_n<T, V>>(g, n / V), DF_CUDA_THREADS, 0, DF_CS(g)>>>(in, k, from_out, (T *)out, n);
        else
            df_cu_add_n<T, 1><<<df_cuda_grid<df_cu_add_n<T, 1>>(g, n), DF_CUDA_THREADS, 0, DF_CS(g)>>>(in, k, from_out, (T *)out, n);
        DF_CUDA_LAUNCHED("df_cuda_add_n");
    }
    return DF_OK;
}
/* out may be one of the first eight inputs exactly (each element is read before it is
   written); a later input would be read after the first pass overwrote it. */
extern "C" df_code df_cuda_add_n(df_cuda *g, df_dtype t, int n_inputs, const void *const *host_inputs, void *out, int64_t n,
                                 df_status *st) {
    DF_CUDA_ENTER("df_cuda_add_n");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_add_n: no kernel for %s", df_dtype_name(t));
    if (n_inputs < 1 || !host_inputs) DF_CUDA_BAD("df_cuda_add_n: needs at least one input, got %d", n_inputs);
    if (n < 0) DF_CUDA_BAD("df_cuda_add_n: negative count %lld", (long long)n);
    if (!n) return DF_OK;
    size_t es = df_dtype_size(t);
    if (!out || df_cuda_misaligned(out, es)) DF_CUDA_BAD("df_cuda_add_n: NULL or misaligned output");
    for (int i = 0; i < n_inputs; i++) {
        if (!host_inputs[i] || df_cuda_misaligned(host_inputs[i], es)) DF_CUDA_BAD("df_cuda_add_n: input %d is NULL or misaligned", i);
        const char *p = (const char *)host_inputs[i], *o = (const char *)out;
        if ((i >= DF_CUDA_ADDN_PER_PASS || p != o) && p < o + (size_t)n * es && o < p + (size_t)n * es)
            DF_CUDA_BAD("df_cuda_add_n: the output overlaps input %d (it may only be one of the first %d)", i, DF_CUDA_ADDN_PER_PASS);
    }
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_add_n_run<float>(g, n_inputs, host_inputs, out, n, st)
                         : df_cuda_add_n_run<double>(g, n_inputs, host_inputs, out, n, st);
}

/* Cast as dataflow.c's df__k_cast: integers (and bool) convert through int64, floats through
   double; to an integer, a float truncates toward zero after saturating at the int32 range
   (to int32), the int64 range (to int64) or [0, INT64_MAX] (to uint8 and int8, then wrapping),
   NaN giving 0; to half and bfloat16 through float with round-to-nearest-even. */
template <int D> struct df_cu_dtype;
template <> struct df_cu_dtype<DF_FLOAT> { typedef float type; };
template <> struct df_cu_dtype<DF_DOUBLE> { typedef double type; };
template <> struct df_cu_dtype<DF_HALF> { typedef uint16_t type; };
template <> struct df_cu_dtype<DF_BFLOAT16> { typedef uint16_t type; };
template <> struct df_cu_dtype<DF_INT32> { typedef int32_t type; };
template <> struct df_cu_dtype<DF_INT64> { typedef long long type; };
template <> struct df_cu_dtype<DF_UINT8> { typedef uint8_t type; };
template <> struct df_cu_dtype<DF_INT8> { typedef int8_t type; };
template <> struct df_cu_dtype<DF_BOOL> { typedef uint8_t type; };
template <int D> struct df_cu_integral {   /* dataflow.c's df__is_integer_type, and bool */
    static constexpr bool value = D == DF_INT32 || D == DF_INT64 || D == DF_UINT8 || D == DF_INT8;
    static constexpr bool or_bool = value || D == DF_BOOL;
};
/* The CPU's df_half_to_float, df_float_to_half and df_float_to_bfloat16, bit for bit. */
__device__ __forceinline__ float df_cu_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return __uint_as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (!m) return __uint_as_float(sign);
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
}
__device__ __forceinline__ uint16_t df_cu_float_to_half(float f) {
    uint32_t x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) {
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int s = 126 - (int)(absx >> 23);
        uint32_t q = mant >> s, rem = mant & ((1u << s) - 1), halfway = 1u << (s - 1);
        if (rem > halfway || (rem == halfway && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t e = (absx >> 23) - 112, m = absx & 0x7fffffu, h = (e << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}
__device__ __forceinline__ uint16_t df_cu_float_to_bfloat16(float f) {
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
template <int D> __device__ __forceinline__ double df_cu_get_f64(typename df_cu_dtype<D>::type v) {
    if constexpr (D == DF_HALF) return df_cu_half_to_float(v);
    else if constexpr (D == DF_BFLOAT16) return __uint_as_float((uint32_t)v << 16);
    else if constexpr (D == DF_BOOL) return v != 0;
    else return (double)v;
}
template <int D> __device__ __forceinline__ long long df_cu_get_i64(typename df_cu_dtype<D>::type v) {
    if constexpr (D == DF_BOOL) return v != 0;
    else return (long long)v;
}
template <int D> __device__ __forceinline__ typename df_cu_dtype<D>::type df_cu_set_f64(double v) {
    if constexpr (D == DF_FLOAT) return (float)v;
    else if constexpr (D == DF_DOUBLE) return v;
    else if constexpr (D == DF_HALF) return df_cu_float_to_half((float)v);
    else if constexpr (D == DF_BFLOAT16) return df_cu_float_to_bfloat16((float)v);
    else return (uint8_t)(v != 0);   /* bool */
}
template <int D> __device__ __forceinline__ typename df_cu_dtype<D>::type df_cu_set_i64(long long v) {
    if constexpr (D == DF_INT32) return (int32_t)(uint32_t)(unsigned long long)v;
    else if constexpr (D == DF_INT64) return v;
    else if constexpr (D == DF_UINT8) return (uint8_t)v;
    else if constexpr (D == DF_INT8) return (int8_t)(uint8_t)v;
    else return (uint8_t)(v != 0);   /* bool */
}
__device__ __forceinline__ long long df_cu_f2i(double v, long long lo, long long hi) {
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    return (long long)v;
}
/* From half or bfloat16 to an integer, as src/kernels/half.c's Cast (TensorFlow's CPU): through
   float, truncating; what does not fit (inf, NaN) x86's INT_MIN (INT64_MIN to int64); narrow
   types wrap from half and saturate from bfloat16 (0 for what does not fit int32). */
template <int FROM, int TO> __device__ __forceinline__ long long df_cu_16_to_int(float v) {
    bool fits32 = v == v && v > -2147483904.0f && v < 2147483648.0f;
    long long t32 = fits32 ? (long long)v : (long long)INT32_MIN;
    if constexpr (TO == DF_INT64) return v == v && v > -9.3e18f && v < 9.2e18f ? (long long)v : LLONG_MIN;
    else if constexpr (FROM == DF_BFLOAT16 && (TO == DF_UINT8 || TO == DF_INT8)) {
        constexpr long long lo = TO == DF_INT8 ? -128 : 0, hi = TO == DF_INT8 ? 127 : 255;
        return !fits32 ? 0 : t32 < lo ? lo : t32 > hi ? hi : t32;
    } else return t32;
}
template <int FROM, int TO>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_cast(const typename df_cu_dtype<FROM>::type *x, typename df_cu_dtype<TO>::type *y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        typename df_cu_dtype<FROM>::type v = x[i];
        if constexpr (df_cu_integral<TO>::value) {
            constexpr long long lo = TO == DF_INT32 ? INT32_MIN : TO == DF_INT64 ? LLONG_MIN : 0;
            constexpr long long hi = TO == DF_INT32 ? INT32_MAX : LLONG_MAX;
            long long iv;
            if constexpr (df_cu_integral<FROM>::or_bool) iv = df_cu_get_i64<FROM>(v);
            else if constexpr (FROM == DF_HALF || FROM == DF_BFLOAT16) iv = df_cu_16_to_int<FROM, TO>((float)df_cu_get_f64<FROM>(v));
            else iv = df_cu_f2i(df_cu_get_f64<FROM>(v), lo, hi);
            y[i] = df_cu_set_i64<TO>(iv);
        } else if constexpr (df_cu_integral<FROM>::or_bool && TO != DF_BOOL) {
            y[i] = df_cu_set_f64<TO>((double)df_cu_get_i64<FROM>(v));
        } else {
            y[i] = df_cu_set_f64<TO>(df_cu_get_f64<FROM>(v));
        }
    }
}
template <int FROM, int TO>
static df_code df_cuda_cast_run(df_cuda *g, const void *x, void *y, int64_t n, df_status *st) {
    df_cu_cast<FROM, TO><<<df_cuda_grid<df_cu_cast<FROM, TO>>(g, n), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
        (const typename df_cu_dtype<FROM>::type *)x, (typename df_cu_dtype<TO>::type *)y, n);
    DF_CUDA_LAUNCHED("df_cuda_cast");
    return DF_OK;
}
static int df_cuda_cast_type(df_dtype t) {
    return t == DF_FLOAT || t == DF_DOUBLE || t == DF_HALF || t == DF_BFLOAT16 || t == DF_INT32 || t == DF_INT64 ||
           t == DF_UINT8 || t == DF_INT8 || t == DF_BOOL;
}
extern "C" df_code df_cuda_cast(df_cuda *g, df_dtype from, const void *x, df_dtype to, void *y, int64_t n, df_status *st) {
    DF_CUDA_ENTER("df_cuda_cast");
    if (!df_cuda_cast_type(from) || !df_cuda_cast_type(to))
        DF_CUDA_BAD("df_cuda_cast: no kernel from %s to %s", df_dtype_name(from), df_dtype_name(to));
    if (n < 0) DF_CUDA_BAD("df_cuda_cast: negative count %lld", (long long)n);
    if (!n) return DF_OK;
    if (!x || !y) DF_CUDA_BAD("df_cuda_cast: NULL pointer");
    if (df_cuda_misaligned(x, df_dtype_size(from)) || df_cuda_misaligned(y, df_dtype_size(to)))
        DF_CUDA_BAD("df_cuda_cast: pointer not aligned to its elements");
    if (df_cuda_use(g, st)) return st->code;
    if (from == to) {
        DF_CUDA_CHECK(st, cudaMemcpyAsync(y, x, (size_t)n * df_dtype_size(to), cudaMemcpyDeviceToDevice, DF_CS(g)), "df_cuda_cast");
        return DF_OK;
    }
#define DF_CU_CAST_TO(FROM)                                                                       \
    switch (to) {                                                                                 \
    case DF_FLOAT: return df_cuda_cast_run<FROM, DF_FLOAT>(g, x, y, n, st);                       \
    case DF_DOUBLE: return df_cuda_cast_run<FROM, DF_DOUBLE>(g, x, y, n, st);                     \
    case DF_HALF: return df_cuda_cast_run<FROM, DF_HALF>(g, x, y, n, st);                         \
    case DF_BFLOAT16: return df_cuda_cast_run<FROM, DF_BFLOAT16>(g, x, y, n, st);                 \
    case DF_INT32: return df_cuda_cast_run<FROM, DF_INT32>(g, x, y, n, st);                       \
    case DF_INT64: return df_cuda_cast_run<FROM, DF_INT64>(g, x, y, n, st);                       \
    case DF_UINT8: return df_cuda_cast_run<FROM, DF_UINT8>(g, x, y, n, st);                       \
    case DF_INT8: return df_cuda_cast_run<FROM, DF_INT8>(g, x, y, n, st);                         \
    case DF_BOOL: return df_cuda_cast_run<FROM, DF_BOOL>(g, x, y, n, st);                         \
    default: break;                                                                               \
    }                                                                                             \
    break;
    switch (from) {
    case DF_FLOAT: DF_CU_CAST_TO(DF_FLOAT)
    case DF_DOUBLE: DF_CU_CAST_TO(DF_DOUBLE)
    case DF_HALF: DF_CU_CAST_TO(DF_HALF)
    case DF_BFLOAT16: DF_CU_CAST_TO(DF_BFLOAT16)
    case DF_INT32: DF_CU_CAST_TO(DF_INT32)
    case DF_INT64: DF_CU_CAST_TO(DF_INT64)
    case DF_UINT8: DF_CU_CAST_TO(DF_UINT8)
    case DF_INT8: DF_CU_CAST_TO(DF_INT8)
    case DF_BOOL: DF_CU_CAST_TO(DF_BOOL)
    default: break;
    }
#undef DF_CU_CAST_TO
    DF_CUDA_BAD("df_cuda_cast: no kernel from %s to %s", df_dtype_name(from), df_dtype_name(to));
}

/* ---- strided copies, Gather, segment sums ---- */
template <class E>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_strided_copy(df_cuda_index ix, const E *src, E *dst, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        df_cu_offsets<2>(ix, i, off);
        dst[off[1]] = src[off[0]];
    }
}
template <class E>
static df_code df_cuda_strided_copy_run(df_cuda *g, const df_cuda_index &ix, int64_t n, const void *src, void *dst, df_status *st) {
    df_cu_strided_copy<E><<<df_cuda_grid<df_cu_strided_copy<E>>(g, n), DF_CUDA_THREADS, 0, DF_CS(g)>>>(ix, (const E *)src, (E *)dst, n);
    DF_CUDA_LAUNCHED("df_cuda_strided_copy");
    return DF_OK;
}
/* Index spaces that merge to one dense run are one cudaMemcpyAsync. Where the innermost dim is
   dense on both sides, its elements go in wider units (up to 16 bytes) when the run's length,
   the pointers and every other stride allow: slices and concatenation pieces copy as vectors. */
extern "C" df_code df_cuda_strided_copy(df_cuda *g, size_t elem_size, int rank, const int64_t *dims, const void *src,
                                        const int64_t *src_strides, void *dst, const int64_t *dst_strides, df_status *st) {
    DF_CUDA_ENTER("df_cuda_strided_copy");
    if (!df_cuda_elem_size_ok(elem_size)) DF_CUDA_BAD("df_cuda_strided_copy: element size %zu is not 1, 2, 4, 8 or 16", elem_size);
    int64_t n;
    if (!df_cuda_count(rank, dims, &n)) DF_CUDA_BAD("df_cuda_strided_copy: bad shape (rank %d)", rank);
    if (rank && (!src_strides || !dst_strides)) DF_CUDA_BAD("df_cuda_strided_copy: NULL strides");
    if (!n) return DF_OK;
    if (!src || !dst) DF_CUDA_BAD("df_cuda_strided_copy: NULL pointer");
    size_t al = df_cuda_elem_align(elem_size);
    if (df_cuda_misaligned(src, al) || df_cuda_misaligned(dst, al))
        DF_CUDA_BAD("df_cuda_strided_copy: pointer not aligned to its %zu-byte elements", elem_size);
    const int64_t *strides[2] = {src_strides, dst_strides};
    df_cuda_index ix;
    df_cuda_index_make(&ix, rank, dims, 2, strides);
    if (df_cuda_use(g, st)) return st->code;
    int64_t es = (int64_t)elem_size;
    if (ix.rank == 0 || (ix.rank == 1 && ix.strides[0][0] == 1 && ix.strides[1][0] == 1)) {
        DF_CUDA_CHECK(st, cudaMemcpyAsync(dst, src, (size_t)(n * es), cudaMemcpyDeviceToDevice, DF_CS(g)), "df_cuda_strided_copy");
        return DF_OK;
    }
    const int r = ix.rank;
    if (ix.strides[0][r - 1] == 1 && ix.strides[1][r - 1] == 1)
        for (int64_t wide = 16; wide > es; wide /= 2) {
            int ok = (ix.dims[r - 1] * es) % wide == 0 && !df_cuda_misaligned(src, (size_t)wide) && !df_cuda_misaligned(dst, (size_t)wide);
            for (int d = 0; ok && d < r - 1; d++) ok = (ix.strides[0][d] * es) % wide == 0 && (ix.strides[1][d] * es) % wide == 0;
            if (!ok) continue;
            int64_t f = wide / es;
            ix.dims[r - 1] /= f;
            n /= f;
            for (int d = 0; d < r - 1; d++) { ix.strides[0][d] /= f; ix.strides[1][d] /= f; }
            es = wide;
            break;
        }
    switch (es) {
    case 1: return df_cuda_strided_copy_run<uint8_t>(g, ix, n, src, dst, st);
    case 2: return df_cuda_strided_copy_run<uint16_t>(g, ix, n, src, dst, st);
    case 4: return df_cuda_strided_copy_run<uint32_t>(g, ix, n, src, dst, st);
    case 8: return df_cuda_strided_copy_run<unsigned long long>(g, ix, n, src, dst, st);
    default:   /* 16: every offset is a multiple of 16 bytes, so the pointers decide */
        if (!df_cuda_misaligned(src, 16) && !df_cuda_misaligned(dst, 16)) return df_cuda_strided_copy_run<uint4>(g, ix, n, src, dst, st);
        return df_cuda_strided_copy_run<df_cu_b16>(g, ix, n, src, dst, st);
    }
}

/* out[o][j][i] = params[o][idx[j]][i]; zeros for an index outside [0, axis_dim). */
template <class E, class I>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_gather(const E *params, const I *idx, E *out, int64_t axis_dim, int64_t inner, int64_t n_idx, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i, j, row = df_cu_divmod(e, inner, &i), o = df_cu_divmod(row, n_idx, &j);
        int64_t k = (int64_t)idx[j];
        out[e] = k >= 0 && k < axis_dim ? params[(o * axis_dim + k) * inner + i] : E();
    }
}
/* With batch dims: params [n_batch, outer, axis_dim, inner], indices [n_batch, n_idx]:
   out[b][o][j][i] = params[b][o][idx[b][j]][i]; zeros for an index outside [0, axis_dim). */
template <class E, class I>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_gather_batch(const E *params, const I *idx, E *out, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx,
                   int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i, j, o, row = df_cu_divmod(e, inner, &i), rest = df_cu_divmod(row, n_idx, &j), b = df_cu_divmod(rest, outer, &o);
        int64_t k = (int64_t)idx[b * n_idx + j];
        out[e] = k >= 0 && k < axis_dim ? params[(rest * axis_dim + k) * inner + i] : E();
    }
}
template <class E>
static df_code df_cuda_gather_run(df_cuda *g, const void *params, const void *indices, df_dtype index_t, void *out, int batched,
                                  int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx, int64_t total, df_status *st) {
    if (batched && index_t == DF_INT32)
        df_cu_gather_batch<E, int32_t><<<df_cuda_grid<df_cu_gather_batch<E, int32_t>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const E *)params, (const int32_t *)indices, (E *)out, outer, axis_dim, inner, n_idx, total);
    else if (batched)
        df_cu_gather_batch<E, long long><<<df_cuda_grid<df_cu_gather_batch<E, long long>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const E *)params, (const long long *)indices, (E *)out, outer, axis_dim, inner, n_idx, total);
    else if (index_t == DF_INT32)
        df_cu_gather<E, int32_t><<<df_cuda_grid<df_cu_gather<E, int32_t>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const E *)params, (const int32_t *)indices, (E *)out, axis_dim, inner, n_idx, total);
    else
        df_cu_gather<E, long long><<<df_cuda_grid<df_cu_gather<E, long long>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const E *)params, (const long long *)indices, (E *)out, axis_dim, inner, n_idx, total);
    DF_CUDA_LAUNCHED("df_cuda_gather");
    return DF_OK;
}
/* df_cuda_gather (n_batch 0: one batch, the plain kernel) and df_cuda_gather_batch. A row of
   inner elements moves in the widest unit (up to 16 bytes) that its length and the two
   pointers allow. */
static df_code df_cuda_gather_any(df_cuda *g, const char *who, size_t elem_size, const void *params, const void *indices,
                                  df_dtype index_t, void *out, int64_t n_batch, int64_t outer, int64_t axis_dim, int64_t inner,
                                  int64_t n_idx, df_status *st) {
    DF_CUDA_ENTER(who);
    if (!df_cuda_elem_size_ok(elem_size)) DF_CUDA_BAD("%s: element size %zu is not 1, 2, 4, 8 or 16", who, elem_size);
    if (index_t != DF_INT32 && index_t != DF_INT64)
        DF_CUDA_BAD("%s: indices must be int32 or int64, not %s", who, df_dtype_name(index_t));
    int batched = n_batch > 0;
    if (!batched) n_batch = 1;
    const int64_t out_dims[4] = {n_batch, outer, n_idx, inner}, in_dims[4] = {n_batch, outer, axis_dim, inner};
    int64_t total, in_total, bytes, n_ix;
    if (!df_cuda_count(4, out_dims, &total) || !df_cuda_count(4, in_dims, &in_total) || !df_cuda_mul(total, (int64_t)elem_size, &bytes) ||
        !df_cuda_mul(in_total, (int64_t)elem_size, &bytes) || !df_cuda_mul(n_batch, n_idx, &n_ix))
        DF_CUDA_BAD("%s: bad sizes [%lld, %lld, %lld, %lld] with %lld indices", who, (long long)n_batch, (long long)outer,
                    (long long)axis_dim, (long long)inner, (long long)n_idx);
    if (!total) return DF_OK;
    if (!indices || !out || (!params && axis_dim)) DF_CUDA_BAD("%s: NULL pointer", who);
    size_t al = df_cuda_elem_align(elem_size);
    if (df_cuda_misaligned(params, al) || df_cuda_misaligned(out, al) || df_cuda_misaligned(indices, df_dtype_size(index_t)))
        DF_CUDA_BAD("%s: pointer not aligned to its elements", who);
    if (df_cuda_use(g, st)) return st->code;
    int64_t es = (int64_t)elem_size, row = inner * es;
    for (int64_t wide = 16; wide > es; wide /= 2)
        if (row % wide == 0 && !df_cuda_misaligned(params, (size_t)wide) && !df_cuda_misaligned(out, (size_t)wide)) { es = wide; break; }
    inner = row / es;
    total = n_batch * outer * n_idx * inner;
    switch (es) {
    case 1: return df_cuda_gather_run<uint8_t>(g, params, indices, index_t, out, batched, outer, axis_dim, inner, n_idx, total, st);
    case 2: return df_cuda_gather_run<uint16_t>(g, params, indices, index_t, out, batched, outer, axis_dim, inner, n_idx, total, st);
    case 4: return df_cuda_gather_run<uint32_t>(g, params, indices, index_t, out, batched, outer, axis_dim, inner, n_idx, total, st);
    case 8: return df_cuda_gather_run<unsigned long long>(g, params, indices, index_t, out, batched, outer, axis_dim, inner, n_idx, total, st);
    default:
        if (!df_cuda_misaligned(params, 16) && !df_cuda_misaligned(out, 16))
            return df_cuda_gather_run<uint4>(g, params, indices, index_t, out, batched, outer, axis_dim, inner, n_idx, total, st);
        return df_cuda_gather_run<df_cu_b16>(g, params, indices, index_t, out, batched, outer, axis_dim, inner, n_idx, total, st);
    }
}
extern "C" df_code df_cuda_gather(df_cuda *g, size_t elem_size, const void *params, const void *indices, df_dtype index_t,
                                  void *out, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx, df_status *st) {
    return df_cuda_gather_any(g, "df_cuda_gather", elem_size, params, indices, index_t, out, 0, outer, axis_dim, inner, n_idx, st);
}
extern "C" df_code df_cuda_gather_batch(df_cuda *g, size_t elem_size, const void *params, const void *indices, df_dtype index_t,
                                        void *out, int64_t n_batch, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx,
                                        df_status *st) {
    if (n_batch < 1) {
        df_status local;
        if (!st) st = &local;
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_gather_batch: n_batch must be at least 1, got %lld", (long long)n_batch);
    }
    return df_cuda_gather_any(g, "df_cuda_gather_batch", elem_size, params, indices, index_t, out, n_batch, outer, axis_dim, inner,
                              n_idx, st);
}

/* out[ids[j]][i] += data[j][i] with atomic adds (so the order of a segment's sum varies). */
template <class T, class I>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_segment_sum(const T *data, const I *ids, T *out, int64_t inner, int64_t num_segments, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i, j = df_cu_divmod(e, inner, &i);
        int64_t s = (int64_t)ids[j];
        if (s >= 0 && s < num_segments) atomicAdd(&out[s * inner + i], data[e]);
    }
}
template <class T>
static df_code df_cuda_segment_sum_run(df_cuda *g, const void *data, const void *ids, df_dtype index_t, void *out, int64_t inner,
                                       int64_t num_segments, int64_t total, df_status *st) {
    if (index_t == DF_INT32)
        df_cu_segment_sum<T, int32_t><<<df_cuda_grid<df_cu_segment_sum<T, int32_t>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const T *)data, (const int32_t *)ids, (T *)out, inner, num_segments, total);
    else
        df_cu_segment_sum<T, long long><<<df_cuda_grid<df_cu_segment_sum<T, long long>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const T *)data, (const long long *)ids, (T *)out, inner, num_segments, total);
    DF_CUDA_LAUNCHED("df_cuda_segment_sum");
    return DF_OK;
}
extern "C" df_code df_cuda_segment_sum(df_cuda *g, df_dtype t, const void *data, const void *ids, df_dtype index_t, void *out,
                                       int64_t n_ids, int64_t inner, int64_t num_segments, df_status *st) {
    DF_CUDA_ENTER("df_cuda_segment_sum");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_segment_sum: no kernel for %s", df_dtype_name(t));
    if (index_t != DF_INT32 && index_t != DF_INT64)
        DF_CUDA_BAD("df_cuda_segment_sum: ids must be int32 or int64, not %s", df_dtype_name(index_t));
    const size_t es = df_dtype_size(t);
    int64_t out_n, total, bytes;
    if (n_ids < 0 || inner < 0 || num_segments < 0 || !df_cuda_mul(num_segments, inner, &out_n) || !df_cuda_mul(n_ids, inner, &total) ||
        !df_cuda_mul(total, (int64_t)es, &bytes) || !df_cuda_mul(out_n, (int64_t)es, &bytes))
        DF_CUDA_BAD("df_cuda_segment_sum: bad sizes (%lld ids, inner %lld, %lld segments)", (long long)n_ids, (long long)inner,
                    (long long)num_segments);
    if (!out_n) return DF_OK;
    if (!out || df_cuda_misaligned(out, es) || (total && (!data || !ids || df_cuda_misaligned(data, es) ||
                                                         df_cuda_misaligned(ids, df_dtype_size(index_t)))))
        DF_CUDA_BAD("df_cuda_segment_sum: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    DF_CUDA_CHECK(st, cudaMemsetAsync(out, 0, (size_t)bytes, DF_CS(g)), "df_cuda_segment_sum: cudaMemsetAsync");
    if (!total) return DF_OK;
    return t == DF_FLOAT ? df_cuda_segment_sum_run<float>(g, data, ids, index_t, out, inner, num_segments, total, st)
                         : df_cuda_segment_sum_run<double>(g, data, ids, index_t, out, inner, num_segments, total, st);
}

/* ---- reductions: Sum, Mean, Max, Min, Prod over [outer, red, inner] ----
   Accumulated in double, as dataflow.c's df__k_reduce; Max and Min keep a NaN. Paths: inner ==
   1, a warp per short row or a block per long row (16-byte loads); inner > 1, a thread per
   output for short columns (red <= 32), else coalesced columns: all of a narrow row's columns
   in one block, or 32-column tiles. Where that gives too few blocks to fill the GPU, each row
   or column group is split over several blocks whose partial results go to the scratch; the
   group's last block to finish (an atomic ticket) combines them in a fixed order. No atomics
   touch the values, so the bits never vary from run to run. */
template <int OP, class T> struct df_cu_reducer {
    typedef double A;
    static __device__ __forceinline__ A init() {
        if constexpr (OP == DF_CUDA_R_SUM || OP == DF_CUDA_R_MEAN) return 0;
        else if constexpr (OP == DF_CUDA_R_PROD) return 1;
        else if constexpr (OP == DF_CUDA_R_MAX) return -(double)INFINITY;
        else return (double)INFINITY;
    }
    static __device__ __forceinline__ A step(A a, A v) {
        if constexpr (OP == DF_CUDA_R_SUM || OP == DF_CUDA_R_MEAN) return a + v;
        else if constexpr (OP == DF_CUDA_R_PROD) return a * v;
        else if constexpr (OP == DF_CUDA_R_MAX) return (v > a || v != v) ? v : a;
        else return (v < a || v != v) ? v : a;
    }
    static __device__ __forceinline__ T final(A a, int64_t red) {
        if constexpr (OP == DF_CUDA_R_MEAN) return (T)(a / (double)red);   /* red == 0: NaN */
        else return (T)a;
    }
};
template <class R, class A>
__device__ __forceinline__ A df_cu_warp_reduce(A v) {   /* the lane 0 result */
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = R::step(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}
/* The block's result in thread 0 of a 1-D block; every thread must call. */
template <class R, class A>
__device__ __forceinline__ A df_cu_block_reduce(A v) {
    __shared__ A warp_part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
    v = df_cu_warp_reduce<R>(v);
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    if (warp == 0) v = df_cu_warp_reduce<R>(lane < n_warps ? warp_part[lane] : R::init());
    __syncthreads();   /* warp_part is free for the next call */
    return v;
}
/* This thread's share (elements tid, tid + nth, ...) of p[0, len), 16-byte loads after an
   unaligned head. */
template <class R, class T>
__device__ __forceinline__ typename R::A df_cu_span(const T *p, int64_t len, int tid, int nth) {
    typedef typename R::A A;
    constexpr int V = 16 / sizeof(T);
    typedef df_cu_vec<T, V> VT;
    A acc = R::init();
    int64_t head = (int64_t)(((16 - ((uintptr_t)p & 15)) & 15) / sizeof(T));
    if (head > len) head = len;
    if (tid < head) acc = R::step(acc, (A)p[tid]);   /* head < V <= nth */
    const VT *pv = (const VT *)(p + head);
    const int64_t nv = (len - head) / V, rest = head + nv * V;
#pragma unroll 4
    for (int64_t k = tid; k < nv; k += nth) {
        VT v = pv[k];
#pragma unroll
        for (int j = 0; j < V; j++) acc = R::step(acc, (A)v.v[j]);
    }
    if (rest + tid < len) acc = R::step(acc, (A)p[rest + tid]);   /* fewer than V left */
    return acc;
}
/* Partial results of other blocks: from L2, past this multiprocessor's (incoherent) L1. */
template <class A> __device__ __forceinline__ A df_cu_load_partial(const A *p) { return __ldcg(p); }
/* Split groups: each block's threads fence their partial results, then one thread counts the
   block in; the block that counts last (the others' results are then visible) combines them. */
__device__ __forceinline__ int df_cu_counted_last(unsigned *count, int split) {
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) last = atomicAdd(count, 1u) == (unsigned)split - 1;
    __syncthreads();
    if (last) __threadfence();
    return last;
}

template <class R, class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_reduce_rows_warp(const T *x, T *y, int64_t outer, int64_t red) {
    const int lane = threadIdx.x & 31;
    const int64_t first = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5, step = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t row = first; row < outer; row += step) {
        typename R::A acc = df_cu_warp_reduce<R>(df_cu_span<R>(x + row * red, red, lane, 32));
        if (lane == 0) y[row] = R::final(acc, red);
    }
}
/* red <= 32 with inner > 1: a thread per output, reading down its column (a warp's threads
   read neighbouring columns). */
template <class R, class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_reduce_short(const T *x, T *y, int64_t outer, int64_t red, int64_t inner) {
    const int64_t n = outer * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i, o = df_cu_divmod(e, inner, &i);
        const T *p = x + o * red * inner + i;
        typename R::A acc = R::init();
        for (int64_t r = 0; r < red; r++) acc = R::step(acc, (typename R::A)p[r * inner]);
        y[e] = R::final(acc, red);
    }
}
/* Rows over blockIdx.y; with split > 1 (then gridDim.y == outer), blockIdx.x takes one of
   split equal pieces of the row, and the row's last block combines the pieces' results, a
   strided share per thread, then the block's tree (a fixed order). */
template <class R, class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_reduce_rows_block(const T *x, T *y, int64_t outer, int64_t red, int split, typename R::A *part, unsigned *count) {
    typedef typename R::A A;
    const int64_t piece = (red + split - 1) / split;
    for (int64_t row = blockIdx.y; row < outer; row += gridDim.y) {
        int64_t p0 = blockIdx.x * piece, p1 = p0 + piece;
        if (p0 > red) p0 = red;
        if (p1 > red) p1 = red;
        A acc = df_cu_block_reduce<R>(df_cu_span<R>(x + row * red + p0, p1 - p0, threadIdx.x, blockDim.x));
        if (split == 1) {
            if (threadIdx.x == 0) y[row] = R::final(acc, red);
            continue;
        }
        if (threadIdx.x == 0) part[row * split + blockIdx.x] = acc;
        if (!df_cu_counted_last(&count[row], split)) continue;
        acc = R::init();
        for (int b = threadIdx.x; b < split; b += blockDim.x) acc = R::step(acc, df_cu_load_partial(&part[row * split + b]));
        acc = df_cu_block_reduce<R>(acc);
        if (threadIdx.x == 0) {
            y[row] = R::final(acc, red);
            count[row] = 0;
        }
    }
}
/* inner <= 128: one block holds all columns of an outer index; thread t reads column t % inner
   of rows t / inner + k * (256 / inner), so a warp reads consecutive addresses, and the
   threads of a column combine in a fixed order. Split: the last block of an outer index
   combines the pieces the same way. */
template <class R, class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_reduce_cols_narrow(const T *x, T *y, int64_t outer, int64_t red, int inner, int split, typename R::A *part, unsigned *count) {
    typedef typename R::A A;
    __shared__ A cell[DF_CUDA_THREADS];
    const int t = threadIdx.x, per_step = DF_CUDA_THREADS / inner, used = per_step * inner, c = t % inner, q = t / inner;
    const int64_t piece = (red + split - 1) / split;
    for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
        int64_t r0 = blockIdx.x * piece, r1 = r0 + piece;
        if (r0 > red) r0 = red;
        if (r1 > red) r1 = red;
        A acc = R::init();
        if (t < used) {
            const T *base = x + o * red * inner + c;
#pragma unroll 4
            for (int64_t r = r0 + q; r < r1; r += per_step) acc = R::step(acc, (A)base[r * inner]);
        }
        cell[t] = acc;
        __syncthreads();
        if (t < inner) {
            A v = cell[t];
            for (int k = 1; k < per_step; k++) v = R::step(v, cell[k * inner + t]);
            if (split == 1) y[o * inner + t] = R::final(v, red);
            else part[(o * split + blockIdx.x) * inner + t] = v;
        }
        if (split > 1 && df_cu_counted_last(&count[o], split)) {
            acc = R::init();
            if (t < used)
                for (int b = q; b < split; b += per_step) acc = R::step(acc, df_cu_load_partial(&part[(o * split + b) * inner + c]));
            cell[t] = acc;
            __syncthreads();
            if (t < inner) {
                A v = cell[t];
                for (int k = 1; k < per_step; k++) v = R::step(v, cell[k * inner + t]);
                y[o * inner + t] = R::final(v, red);
            }
            if (t == 0) count[o] = 0;
        }
        __syncthreads();
    }
}
/* inner > 128: blocks of 32 columns x 8 row lanes; blockIdx.x picks the tile, y the outer
   index, z the piece of the rows (split > 1: gridDim.y == outer); the lanes of a column
   combine in a fixed order. */
template <class R, class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_reduce_cols_tile(const T *x, T *y, int64_t outer, int64_t red, int64_t inner, int split, typename R::A *part, unsigned *count) {
    typedef typename R::A A;
    __shared__ A cell[8][32];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t i = blockIdx.x * (int64_t)32 + tx, piece = (red + split - 1) / split;
    for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
        int64_t r0 = blockIdx.z * piece, r1 = r0 + piece;
        if (r0 > red) r0 = red;
        if (r1 > red) r1 = red;
        A acc = R::init();
        if (i < inner) {
            const T *base = x + o * red * inner + i;
#pragma unroll 4
            for (int64_t r = r0 + ty; r < r1; r += 8) acc = R::step(acc, (A)base[r * inner]);
        }
        cell[ty][tx] = acc;
        __syncthreads();
        const int64_t group = o * gridDim.x + blockIdx.x;
        if (ty == 0 && i < inner) {
            A v = cell[0][tx];
#pragma unroll
            for (int k = 1; k < 8; k++) v = R::step(v, cell[k][tx]);
            if (split == 1) y[o * inner + i] = R::final(v, red);
            else part[(group * split + blockIdx.z) * 32 + tx] = v;
        }
        if (split > 1 && df_cu_counted_last(&count[group], split)) {
            acc = R::init();
            if (i < inner)
                for (int b = ty; b < split; b += 8) acc = R::step(acc, df_cu_load_partial(&part[(group * split + b) * 32 + tx]));
            cell[ty][tx] = acc;
            __syncthreads();
            if (ty == 0 && i < inner) {
                A v = cell[0][tx];
#pragma unroll
                for (int k = 1; k < 8; k++) v = R::step(v, cell[k][tx]);
                y[o * inner + i] = R::final(v, red);
            }
            if (tx == 0 && ty == 0) count[group] = 0;
        }
        __syncthreads();
    }
}
/* How many blocks share each of `groups` groups: waves of kernel K as full as can be (up to
   two waves' worth), at least min_work elements each, within the scratch. */
template <auto K>
static int df_cuda_split(const df_cuda *g, int64_t groups, int64_t elems_per_group, int64_t part_per_block, int64_t max_split) {
    const int64_t target = (int64_t)g->sms * df_cuda_resident<K>(), min_work = 8192;
    if (groups >= target || groups > DF_CUDA_COUNTERS || elems_per_group < 2 * min_work) return 1;
    int64_t most = 2 * ((target + groups - 1) / groups);
    if (most > elems_per_group / min_work) most = elems_per_group / min_work;
    if (most > max_split) most = max_split;
    if (most * groups * part_per_block > DF_CUDA_PARTIALS) most = DF_CUDA_PARTIALS / (groups * part_per_block);
    /* the split whose blocks fill their waves best (a last wave half empty costs a third of
       a two-wave run); the smallest of equals */
    int64_t split = 1;
    double best = 0;
    for (int64_t s = 1; s <= most; s++) {
        const int64_t blocks = groups * s, waves = (blocks + target - 1) / target;
        const double fill = (double)blocks / (double)(waves * target);
        if (fill > best + 1e-9) { best = fill; split = s; }
    }
    return (int)split;
}
template <int OP, class T>
static df_code df_cuda_reduce_run(df_cuda *g, const void *xv, void *yv, int64_t outer, int64_t red, int64_t inner, df_status *st) {
    typedef df_cu_reducer<OP, T> R;
    typedef typename R::A A;
    const T *x = (const T *)xv;
    T *y = (T *)yv;
    unsigned *count = (unsigned *)g->scratch;
    A *part = (A *)((char *)g->scratch + (size_t)DF_CUDA_COUNTERS * sizeof(unsigned));
    if (inner == 1 && red <= 512) {
        const unsigned blocks = df_cuda_grid<df_cu_reduce_rows_warp<R, T>>(g, outer * 32);
        df_cu_reduce_rows_warp<R, T><<<blocks, DF_CUDA_THREADS, 0, DF_CS(g)>>>(x, y, outer, red);
    } else if (inner == 1) {
        int split = df_cuda_split<df_cu_reduce_rows_block<R, T>>(g, outer, red, 1, INT_MAX);
        dim3 grid(split, split > 1 ? (unsigned)outer : (unsigned)(outer < 65535 ? outer : 65535));
        df_cu_reduce_rows_block<R, T><<<grid, DF_CUDA_THREADS, 0, DF_CS(g)>>>(x, y, outer, red, split, part, count);
    } else if (red <= 32) {
        const unsigned blocks = df_cuda_grid<df_cu_reduce_short<R, T>>(g, outer * inner);
        df_cu_reduce_short<R, T><<<blocks, DF_CUDA_THREADS, 0, DF_CS(g)>>>(x, y, outer, red, inner);
    } else if (inner <= 128) {
        int split = df_cuda_split<df_cu_reduce_cols_narrow<R, T>>(g, outer, red * inner, inner, INT_MAX);
        dim3 grid(split, split > 1 ? (unsigned)outer : (unsigned)(outer < 65535 ? outer : 65535));
        df_cu_reduce_cols_narrow<R, T><<<grid, DF_CUDA_THREADS, 0, DF_CS(g)>>>(x, y, outer, red, (int)inner, split, part, count);
    } else {
        const int64_t tiles = (inner + 31) / 32, groups = outer * tiles;
        if (tiles > INT_MAX) DF_CUDA_BAD("df_cuda_reduce: inner size %lld is too large", (long long)inner);
        int split = df_cuda_split<df_cu_reduce_cols_tile<R, T>>(g, groups, red * 32, 32, 65535);
        dim3 grid((unsigned)tiles, split > 1 ? (unsigned)outer : (unsigned)(outer < 65535 ? outer : 65535), split);
        df_cu_reduce_cols_tile<R, T><<<grid, dim3(32, 8), 0, DF_CS(g)>>>(x, y, outer, red, inner, split, part, count);
    }
    DF_CUDA_LAUNCHED("df_cuda_reduce");
    return DF_OK;
}
template <class T>
static df_code df_cuda_reduce_typed(df_cuda *g, int op, const void *x, void *y, int64_t outer, int64_t red, int64_t inner, df_status *st) {
    switch (op) {
    case DF_CUDA_R_SUM: return df_cuda_reduce_run<DF_CUDA_R_SUM, T>(g, x, y, outer, red, inner, st);
    case DF_CUDA_R_MEAN: return df_cuda_reduce_run<DF_CUDA_R_MEAN, T>(g, x, y, outer, red, inner, st);
    case DF_CUDA_R_MAX: return df_cuda_reduce_run<DF_CUDA_R_MAX, T>(g, x, y, outer, red, inner, st);
    case DF_CUDA_R_MIN: return df_cuda_reduce_run<DF_CUDA_R_MIN, T>(g, x, y, outer, red, inner, st);
    default: return df_cuda_reduce_run<DF_CUDA_R_PROD, T>(g, x, y, outer, red, inner, st);
    }
}
extern "C" df_code df_cuda_reduce(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t outer, int64_t red,
                                  int64_t inner, df_status *st) {
    DF_CUDA_ENTER("df_cuda_reduce");
    if (op < 0 || op >= DF_CUDA_R_COUNT) DF_CUDA_BAD("df_cuda_reduce: unknown op %d", op);
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_reduce: no kernel for %s", df_dtype_name(t));
    const int64_t dims[3] = {outer, red, inner};
    int64_t in_n, out_n, bytes;
    if (!df_cuda_count(3, dims, &in_n) || !df_cuda_mul(outer, inner, &out_n) || !df_cuda_mul(in_n, 8, &bytes) ||
        !df_cuda_mul(out_n, 64, &bytes))
        DF_CUDA_BAD("df_cuda_reduce: bad sizes [%lld, %lld, %lld]", (long long)outer, (long long)red, (long long)inner);
    if (!out_n) return DF_OK;
    size_t es = df_dtype_size(t);
    if (!y || (red && !x) || df_cuda_misaligned(x, es) || df_cuda_misaligned(y, es))
        DF_CUDA_BAD("df_cuda_reduce: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_reduce_typed<float>(g, op, x, y, outer, red, inner, st)
                         : df_cuda_reduce_typed<double>(g, op, x, y, outer, red, inner, st);
}

/* ---- ArgMax, ArgMin ----
   The CPU's rule: the first element is the start; a later one replaces the best only when it
   is strictly better and the best is not NaN. So a NaN first element gives 0, and other NaNs
   are never chosen. Rows (inner == 1) are shared by a warp or a block: each thread keeps its
   first best non-NaN element, ties go to the lower index. Columns are one thread each, in the
   CPU's order. */
template <class T>
__device__ __forceinline__ void df_cu_arg_take(int is_min, T v, long long j, T *bv, long long *bj) {
    if (j >= 0 && v == v && (*bj < 0 || (is_min ? v < *bv : v > *bv) || (v == *bv && j < *bj))) { *bv = v; *bj = j; }
}
template <class T>
__device__ __forceinline__ void df_cu_arg_warp(int is_min, T *bv, long long *bj) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        T v = __shfl_down_sync(0xffffffffu, *bv, o);
        long long j = __shfl_down_sync(0xffffffffu, *bj, o);
        df_cu_arg_take(is_min, v, j, bv, bj);
    }
}
template <class T, class I>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_argmax_rows(const T *x, I *y, int64_t outer, int64_t red, int is_min, int per_warp) {
    __shared__ T best_v[32];
    __shared__ long long best_j[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tid = per_warp ? lane : threadIdx.x, nth = per_warp ? 32 : blockDim.x;
    const int64_t first = per_warp ? (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5 : blockIdx.x;
    const int64_t step = per_warp ? ((int64_t)gridDim.x * blockDim.x) >> 5 : gridDim.x;
    for (int64_t row = first; row < outer; row += step) {
        const T *p = x + row * red;
        T bv = p[0];
        long long bj = -1;
        for (int64_t j = tid; j < red; j += nth) df_cu_arg_take(is_min, p[j], (long long)j, &bv, &bj);
        df_cu_arg_warp(is_min, &bv, &bj);
        if (!per_warp) {
            if (lane == 0) { best_v[warp] = bv; best_j[warp] = bj; }
            __syncthreads();
            if (warp == 0) {
                bv = lane < (int)(blockDim.x >> 5) ? best_v[lane] : p[0];
                bj = lane < (int)(blockDim.x >> 5) ? best_j[lane] : -1;
                df_cu_arg_warp(is_min, &bv, &bj);
            }
            __syncthreads();
        }
        if (tid == 0) {
            T v0 = p[0];
            y[row] = (I)(unsigned long long)(v0 != v0 || bj < 0 ? 0 : bj);
        }
    }
}
template <class T, class I>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_argmax_cols(const T *x, I *y, int64_t outer, int64_t red, int64_t inner, int is_min) {
    const int64_t n = outer * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i, o = df_cu_divmod(e, inner, &i);
        const T *p = x + o * red * inner + i;
        T bv = p[0];
        int64_t best = 0;
        for (int64_t j = 1; j < red; j++) {
            T v = p[j * inner];
            if ((is_min ? v < bv : v > bv) && bv == bv) { bv = v; best = j; }
        }
        y[e] = (I)(unsigned long long)best;
    }
}
template <class T, class I>
static df_code df_cuda_argmax_run(df_cuda *g, const void *x, void *y, int64_t outer, int64_t red, int64_t inner, int is_min,
                                  df_status *st) {
    if (inner == 1) {
        const int per_warp = red <= 4096 || outer >= (int64_t)g->sms * 8;
        const unsigned blocks = per_warp ? df_cuda_grid<df_cu_argmax_rows<T, I>>(g, outer * 32) : (unsigned)(outer < 65535 ? outer : 65535);
        df_cu_argmax_rows<T, I><<<blocks, DF_CUDA_THREADS, 0, DF_CS(g)>>>((const T *)x, (I *)y, outer, red, is_min, per_warp);
    } else {
        const unsigned blocks = df_cuda_grid<df_cu_argmax_cols<T, I>>(g, outer * inner);
        df_cu_argmax_cols<T, I><<<blocks, DF_CUDA_THREADS, 0, DF_CS(g)>>>((const T *)x, (I *)y, outer, red, inner, is_min);
    }
    DF_CUDA_LAUNCHED("df_cuda_argmax");
    return DF_OK;
}
template <class T>
static df_code df_cuda_argmax_typed(df_cuda *g, const void *x, df_dtype out_t, void *y, int64_t outer, int64_t red, int64_t inner,
                                    int is_min, df_status *st) {
    if (out_t == DF_INT32) return df_cuda_argmax_run<T, int32_t>(g, x, y, outer, red, inner, is_min, st);
    return df_cuda_argmax_run<T, long long>(g, x, y, outer, red, inner, is_min, st);
}
extern "C" df_code df_cuda_argmax(df_cuda *g, df_dtype t, const void *x, df_dtype out_t, void *y, int64_t outer,
                                  int64_t red, int64_t inner, int is_min, df_status *st) {
    DF_CUDA_ENTER("df_cuda_argmax");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_argmax: no kernel for %s", df_dtype_name(t));
    if (out_t != DF_INT32 && out_t != DF_INT64) DF_CUDA_BAD("df_cuda_argmax: output must be int32 or int64, not %s", df_dtype_name(out_t));
    const int64_t dims[3] = {outer, red, inner};
    int64_t in_n, out_n, bytes;
    if (!df_cuda_count(3, dims, &in_n) || !df_cuda_mul(outer, inner, &out_n) || !df_cuda_mul(in_n, 8, &bytes) ||
        !df_cuda_mul(out_n, 64, &bytes))
        DF_CUDA_BAD("df_cuda_argmax: bad sizes [%lld, %lld, %lld]", (long long)outer, (long long)red, (long long)inner);
    if (!out_n) return DF_OK;
    if (red < 1) DF_CUDA_BAD("df_cuda_argmax: the reduced dimension is empty");
    if (!x || !y || df_cuda_misaligned(x, df_dtype_size(t)) || df_cuda_misaligned(y, df_dtype_size(out_t)))
        DF_CUDA_BAD("df_cuda_argmax: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    is_min = is_min != 0;
    return t == DF_FLOAT ? df_cuda_argmax_typed<float>(g, x, out_t, y, outer, red, inner, is_min, st)
                         : df_cuda_argmax_typed<double>(g, x, out_t, y, outer, red, inner, is_min, st);
}

/* ---- Softmax, LogSoftmax, the two cross-entropies ----
   A warp per row up to 1024 columns, else a block per row. As the CPU: the row's max (NaNs
   skipped) is subtracted first, the sum of exponentials is taken in double; float rows then
   use e^(x - max) * (float)(1 / sum) and (x - max) - (float)log(sum) (the CPU's vector path),
   double rows exp(x - max - log(sum)) and x - max - log(sum). The group-wide max and sums are
   butterflies, so every thread holds the same bits. */
template <bool WARP> struct df_cu_group {
    int tid, nth;
    int64_t first, step;
    __device__ df_cu_group() {
        tid = WARP ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
        nth = WARP ? 32 : (int)blockDim.x;
        first = WARP ? (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5 : (int64_t)blockIdx.x;
        step = WARP ? ((int64_t)gridDim.x * blockDim.x) >> 5 : (int64_t)gridDim.x;
    }
};
/* max (which != 0) or sum over the group, the same in every thread */
template <bool WARP, class A>
__device__ __forceinline__ A df_cu_all(A v, int which) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        A u = __shfl_xor_sync(0xffffffffu, v, o);
        v = which ? (u > v ? u : v) : v + u;
    }
    if (!WARP) {
        __shared__ A warp_part[32];
        const int n_warps = (blockDim.x + 31) >> 5;
        if ((threadIdx.x & 31) == 0) warp_part[threadIdx.x >> 5] = v;
        __syncthreads();
        v = warp_part[0];
        for (int w = 1; w < n_warps; w++) { A u = warp_part[w]; v = which ? (u > v ? u : v) : v + u; }
        __syncthreads();
    }
    return v;
}
template <class T, bool WARP>
__device__ __forceinline__ void df_cu_row_stats(const df_cu_group<WARP> &gr, const T *xr, int64_t cols, T *mx, double *sum) {
    T m = -(T)INFINITY;
    for (int64_t j = gr.tid; j < cols; j += gr.nth) { T v = xr[j]; if (v > m) m = v; }
    m = df_cu_all<WARP>(m, 1);
    double s = 0;
    for (int64_t j = gr.tid; j < cols; j += gr.nth) s += (double)df_cu_exp(xr[j] - m);
    *mx = m;
    *sum = df_cu_all<WARP>(s, 0);
}
template <class T, bool WARP>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_softmax(const T *x, T *y, int64_t rows, int64_t cols, int log_sm) {
    const df_cu_group<WARP> gr;
    for (int64_t r = gr.first; r < rows; r += gr.step) {
        const T *xr = x + r * cols;
        T *yr = y + r * cols, mx;
        double sum;
        df_cu_row_stats(gr, xr, cols, &mx, &sum);
        if constexpr (std::is_same<T, float>::value) {
            const float inv = (float)(1.0 / sum), lse = (float)log(sum);
            for (int64_t j = gr.tid; j < cols; j += gr.nth)
                yr[j] = log_sm ? (xr[j] - mx) - lse : df_cu_mul(expf(xr[j] - mx), inv);
        } else {
            const double lse = log(sum);
            for (int64_t j = gr.tid; j < cols; j += gr.nth) {
                double z = xr[j] - mx;
                yr[j] = log_sm ? z - lse : exp(z - lse);
            }
        }
    }
}
template <class T>
static df_code df_cuda_softmax_run(df_cuda *g, const void *x, void *y, int64_t rows, int64_t cols, int log_sm, df_status *st) {
    if (cols <= 1024)
        df_cu_softmax<T, true><<<df_cuda_grid<df_cu_softmax<T, true>>(g, rows * 32), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const T *)x, (T *)y, rows, cols, log_sm);
    else
        df_cu_softmax<T, false><<<(unsigned)(rows < INT_MAX ? rows : INT_MAX), DF_CUDA_THREADS, 0, DF_CS(g)>>>((const T *)x, (T *)y, rows,
                                                                                                         cols, log_sm);
    DF_CUDA_LAUNCHED("df_cuda_softmax");
    return DF_OK;
}
extern "C" df_code df_cuda_softmax(df_cuda *g, df_dtype t, const void *x, void *y, int64_t rows, int64_t cols, int log,
                                   df_status *st) {
    DF_CUDA_ENTER("df_cuda_softmax");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_softmax: no kernel for %s", df_dtype_name(t));
    int64_t n, bytes;
    if (rows < 0 || cols < 0 || !df_cuda_mul(rows, cols, &n) || !df_cuda_mul(n, 8, &bytes))
        DF_CUDA_BAD("df_cuda_softmax: bad sizes [%lld, %lld]", (long long)rows, (long long)cols);
    if (!n) return DF_OK;
    size_t es = df_dtype_size(t);
    if (!x || !y || df_cuda_misaligned(x, es) || df_cuda_misaligned(y, es)) DF_CUDA_BAD("df_cuda_softmax: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_softmax_run<float>(g, x, y, rows, cols, log != 0, st)
                         : df_cuda_softmax_run<double>(g, x, y, rows, cols, log != 0, st);
}

/* L is T for dense label rows, int32_t or long long for class ids (SPARSE). */
template <class T, class L, bool SPARSE, bool WARP>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_xent(const T *logits, const L *labels, T *loss, T *backprop, int64_t rows, int64_t cols) {
    const df_cu_group<WARP> gr;
    for (int64_t r = gr.first; r < rows; r += gr.step) {
        const T *xr = logits + r * cols;
        T *br = backprop + r * cols, mx;
        long long id = -1;
        if constexpr (SPARSE) {
            id = (long long)labels[r];
            if (id < 0 || id >= cols) {   /* TensorFlow's GPU rule: the row is NaN */
                for (int64_t j = gr.tid; j < cols; j += gr.nth) br[j] = (T)NAN;
                if (gr.tid == 0) loss[r] = (T)NAN;
                continue;
            }
        }
        double sum;
        df_cu_row_stats(gr, xr, cols, &mx, &sum);
        const double lse = log(sum);
        const float inv = (float)(1.0 / sum);
        double total = 0;
        for (int64_t j = gr.tid; j < cols; j += gr.nth) {
            T xv = xr[j], yv;
            if constexpr (SPARSE) yv = j == id ? (T)1 : (T)0;
            else yv = labels[r * cols + j];
            double logp = (double)xv - (double)mx - lse;
            if (yv != 0) total -= df_cu_mul((double)yv, logp);
            if constexpr (std::is_same<T, float>::value) br[j] = df_cu_mul(expf(xv - mx), inv) - yv;
            else br[j] = exp(logp) - yv;
        }
        total = df_cu_all<WARP>(total, 0);
        if (gr.tid == 0) loss[r] = (T)total;
    }
}
template <class T, class L, bool SPARSE>
static df_code df_cuda_xent_run(df_cuda *g, const void *logits, const void *labels, void *loss, void *backprop, int64_t rows, int64_t cols,
                                df_status *st) {
    if (cols <= 1024)
        df_cu_xent<T, L, SPARSE, true><<<df_cuda_grid<df_cu_xent<T, L, SPARSE, true>>(g, rows * 32), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const T *)logits, (const L *)labels, (T *)loss, (T *)backprop, rows, cols);
    else
        df_cu_xent<T, L, SPARSE, false><<<(unsigned)(rows < INT_MAX ? rows : INT_MAX), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const T *)logits, (const L *)labels, (T *)loss, (T *)backprop, rows, cols);
    DF_CUDA_LAUNCHED("df_cuda_xent");
    return DF_OK;
}
template <class T>
static df_code df_cuda_xent_typed(df_cuda *g, const void *logits, const void *labels, df_dtype label_t, void *loss, void *backprop,
                                  int64_t rows, int64_t cols, df_status *st) {
    if (label_t == DF_INT32) return df_cuda_xent_run<T, int32_t, true>(g, logits, labels, loss, backprop, rows, cols, st);
    if (label_t == DF_INT64) return df_cuda_xent_run<T, long long, true>(g, logits, labels, loss, backprop, rows, cols, st);
    return df_cuda_xent_run<T, T, false>(g, logits, labels, loss, backprop, rows, cols, st);
}
/* With cols == 0 the rows' losses are 0 (dense labels) or NaN (every id is outside [0, 0)). */
extern "C" df_code df_cuda_xent(df_cuda *g, df_dtype t, const void *logits, const void *labels, df_dtype label_t, void *loss,
                                void *backprop, int64_t rows, int64_t cols, df_status *st) {
    DF_CUDA_ENTER("df_cuda_xent");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_xent: no kernel for %s", df_dtype_name(t));
    if (label_t != t && label_t != DF_INT32 && label_t != DF_INT64)
        DF_CUDA_BAD("df_cuda_xent: labels must be %s rows or int32/int64 ids, not %s", df_dtype_name(t), df_dtype_name(label_t));
    int64_t n, bytes;
    if (rows < 0 || cols < 0 || !df_cuda_mul(rows, cols, &n) || !df_cuda_mul(n, 8, &bytes))
        DF_CUDA_BAD("df_cuda_xent: bad sizes [%lld, %lld]", (long long)rows, (long long)cols);
    if (!rows) return DF_OK;
    size_t es = df_dtype_size(t);
    if (!labels || !loss || (n && (!logits || !backprop)) || df_cuda_misaligned(logits, es) || df_cuda_misaligned(backprop, es) ||
        df_cuda_misaligned(loss, es) || df_cuda_misaligned(labels, df_dtype_size(label_t)))
        DF_CUDA_BAD("df_cuda_xent: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_xent_typed<float>(g, logits, labels, label_t, loss, backprop, rows, cols, st)
                         : df_cuda_xent_typed<double>(g, logits, labels, label_t, loss, backprop, rows, cols, st);
}

/* ---- random numbers: dataflow.c's Philox4x32-10 stream ----
   Block j is philox({counter + j low, high, 0, 0}, key), its words taken last first: a uniform
   is two words (53 bits), so uniform 2j and 2j+1 come from block j; a normal is two uniforms
   (Box-Muller, cosine branch), so normal i is block i. Computed in double as on the CPU. */
__device__ __forceinline__ void df_cu_philox(unsigned long long counter, uint32_t k0, uint32_t k1, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
#pragma unroll
    for (int r = 0; r < 10; r++) {
        uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c1 = lo1; c3 = lo0; c0 = n0; c2 = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}
__device__ __forceinline__ double df_cu_uniform(uint32_t hi, uint32_t lo) {
    return ((double)(hi >> 5) * 67108864.0 + (double)(lo >> 6)) * (1.0 / 9007199254740992.0);
}
__device__ __forceinline__ double df_cu_normal(const uint32_t w[4]) {
    double u1 = df_cu_uniform(w[3], w[2]), u2 = df_cu_uniform(w[1], w[0]);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
template <class T> __device__ __forceinline__ T df_cu_from_uniform(double v) {
    if constexpr (std::is_same<T, float>::value) {
        if ((float)v >= 1.0f) v = 0.99999994;   /* float rounding must stay < 1 (as the CPU) */
    }
    return (T)v;
}
template <class T, int KIND>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_random(T *out, int64_t n, uint32_t k0, uint32_t k1, unsigned long long counter) {
    const int64_t units = KIND == 0 ? (n + 1) / 2 : n;
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < units; u += (int64_t)gridDim.x * blockDim.x) {
        uint32_t w[4];
        if constexpr (KIND == 0) {
            df_cu_philox(counter + (unsigned long long)u, k0, k1, w);
            out[2 * u] = df_cu_from_uniform<T>(df_cu_uniform(w[3], w[2]));
            if (2 * u + 1 < n) out[2 * u + 1] = df_cu_from_uniform<T>(df_cu_uniform(w[1], w[0]));
        } else if constexpr (KIND == 1) {
            df_cu_philox(counter + (unsigned long long)u, k0, k1, w);
            out[u] = (T)df_cu_normal(w);
        } else {
            /* Tries blocks counter + u + k n, k < 4, keeping the first within 2; should all four
               miss (about 4e-6 of elements) the fourth is clamped to [-2, 2] (as the emulator). */
            double v = 0;
            for (int k = 0; k < 4; k++) {
                df_cu_philox(counter + (unsigned long long)u + (unsigned long long)k * (unsigned long long)n, k0, k1, w);
                v = df_cu_normal(w);
                if (fabs(v) <= 2.0) break;
            }
            out[u] = (T)(v > 2.0 ? 2.0 : v < -2.0 ? -2.0 : v);
        }
    }
}
template <class T, int KIND>
static df_code df_cuda_random_run(df_cuda *g, void *out, int64_t n, uint32_t key0, uint32_t key1, uint64_t counter, df_status *st) {
    const unsigned blocks = df_cuda_grid<df_cu_random<T, KIND>>(g, KIND == 0 ? (n + 1) / 2 : n);
    df_cu_random<T, KIND><<<blocks, DF_CUDA_THREADS, 0, DF_CS(g)>>>((T *)out, n, key0, key1, counter);
    DF_CUDA_LAUNCHED("df_cuda_random");
    return DF_OK;
}
template <class T>
static df_code df_cuda_random_typed(df_cuda *g, int kind, void *out, int64_t n, uint32_t key0, uint32_t key1, uint64_t counter,
                                    df_status *st) {
    if (kind == 0) return df_cuda_random_run<T, 0>(g, out, n, key0, key1, counter, st);
    if (kind == 1) return df_cuda_random_run<T, 1>(g, out, n, key0, key1, counter, st);
    return df_cuda_random_run<T, 2>(g, out, n, key0, key1, counter, st);
}
extern "C" df_code df_cuda_random(df_cuda *g, int kind, df_dtype t, void *out, int64_t n, uint32_t key0, uint32_t key1,
                                  uint64_t counter, df_status *st) {
    DF_CUDA_ENTER("df_cuda_random");
    if (kind < 0 || kind > 2) DF_CUDA_BAD("df_cuda_random: unknown kind %d (0 uniform, 1 normal, 2 truncated normal)", kind);
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_random: no kernel for %s", df_dtype_name(t));
    int64_t bytes;
    if (n < 0 || !df_cuda_mul(n, 8, &bytes)) DF_CUDA_BAD("df_cuda_random: bad count %lld", (long long)n);
    if (!n) return DF_OK;
    if (!out || df_cuda_misaligned(out, df_dtype_size(t))) DF_CUDA_BAD("df_cuda_random: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_random_typed<float>(g, kind, out, n, key0, key1, counter, st)
                         : df_cuda_random_typed<double>(g, kind, out, n, key0, key1, counter, st);
}

/* ---- optimizer updates (dataflow.c's df__k_apply) ----
   Hyperparameters are read on the device by every thread (one cached load each). Gradient
   descent and float Adam without Nesterov use the CPU's float formulas; Momentum and the rest
   of Adam compute in double and round once, as the CPU's df__get_f64/df__set_from_f64 loop. */
struct df_cu_hyper { const void *p[6]; };
template <class T> __device__ __forceinline__ double df_cu_hyper_at(const df_cu_hyper &h, int i) { return (double)*(const T *)h.p[i]; }
template <class T, int KIND>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_apply(int64_t n, T *var, T *acc, T *acc2, const T *grad, df_cu_hyper h, int nesterov) {
    const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x;
    if constexpr (KIND == 0) {
        const T lr = (T)df_cu_hyper_at<T>(h, 0);
        for (int64_t i = first; i < n; i += step) var[i] = var[i] - df_cu_mul(lr, grad[i]);
    } else if constexpr (KIND == 1) {
        const double lr = df_cu_hyper_at<T>(h, 0), mom = df_cu_hyper_at<T>(h, 1);
        for (int64_t i = first; i < n; i += step) {
            double gi = grad[i], a = df_cu_mul((double)acc[i], mom) + gi;
            acc[i] = (T)a;
            double w = var[i];
            w -= nesterov ? df_cu_mul(gi, lr) + df_cu_mul(df_cu_mul(a, mom), lr) : df_cu_mul(a, lr);
            var[i] = (T)w;
        }
    } else {
        const double b1p = df_cu_hyper_at<T>(h, 0), b2p = df_cu_hyper_at<T>(h, 1), lr = df_cu_hyper_at<T>(h, 2);
        const double b1 = df_cu_hyper_at<T>(h, 3), b2 = df_cu_hyper_at<T>(h, 4), eps = df_cu_hyper_at<T>(h, 5);
        const double alpha = lr * sqrt(1 - b2p) / (1 - b1p);
        if (std::is_same<T, float>::value && !nesterov) {
            const float fb1 = (float)b1, fb2 = (float)b2, fa = (float)alpha, fe = (float)eps;
            for (int64_t i = first; i < n; i += step) {
                float gi = (float)grad[i], m = (float)acc[i], v = (float)acc2[i];
                m += df_cu_mul(gi - m, 1 - fb1);
                v += df_cu_mul(df_cu_mul(gi, gi) - v, 1 - fb2);
                acc[i] = (T)m;
                acc2[i] = (T)v;
                var[i] = (T)((float)var[i] - fa * m / (sqrtf(v) + fe));
            }
        } else {
            for (int64_t i = first; i < n; i += step) {
                double gi = grad[i], m = acc[i], v = acc2[i];
                m += df_cu_mul(gi - m, 1 - b1);
                v += df_cu_mul(df_cu_mul(gi, gi) - v, 1 - b2);
                acc[i] = (T)m;
                acc2[i] = (T)v;
                double step_ = nesterov ? df_cu_mul(m, b1) + df_cu_mul(1 - b1, gi) : m;
                var[i] = (T)((double)var[i] - alpha * step_ / (sqrt(v) + eps));
            }
        }
    }
}
template <class T, int KIND>
static df_code df_cuda_apply_run(df_cuda *g, int64_t n, void *var, void *acc, void *acc2, const void *grad, const df_cu_hyper &h,
                                 int nesterov, df_status *st) {
    const unsigned blocks = df_cuda_grid<df_cu_apply<T, KIND>>(g, n);
    df_cu_apply<T, KIND><<<blocks, DF_CUDA_THREADS, 0, DF_CS(g)>>>(n, (T *)var, (T *)acc, (T *)acc2, (const T *)grad, h, nesterov);
    DF_CUDA_LAUNCHED("df_cuda_apply");
    return DF_OK;
}
template <class T>
static df_code df_cuda_apply_typed(df_cuda *g, int kind, int64_t n, void *var, void *acc, void *acc2, const void *grad,
                                   const df_cu_hyper &h, int nesterov, df_status *st) {
    if (kind == 0) return df_cuda_apply_run<T, 0>(g, n, var, acc, acc2, grad, h, nesterov, st);
    if (kind == 1) return df_cuda_apply_run<T, 1>(g, n, var, acc, acc2, grad, h, nesterov, st);
    return df_cuda_apply_run<T, 2>(g, n, var, acc, acc2, grad, h, nesterov, st);
}
extern "C" df_code df_cuda_apply(df_cuda *g, int kind, df_dtype t, int64_t n, void *var, void *acc, void *acc2, const void *grad,
                                 const void *const *host_scalars, int nesterov, df_status *st) {
    DF_CUDA_ENTER("df_cuda_apply");
    if (kind < 0 || kind > 2) DF_CUDA_BAD("df_cuda_apply: unknown kind %d (0 gradient descent, 1 momentum, 2 Adam)", kind);
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_apply: no kernel for %s", df_dtype_name(t));
    if (n < 0) DF_CUDA_BAD("df_cuda_apply: negative count %lld", (long long)n);
    if (!n) return DF_OK;
    const int n_scalars = kind == 0 ? 1 : kind == 1 ? 2 : 6;
    const size_t es = df_dtype_size(t);
    df_cu_hyper h;
    memset(&h, 0, sizeof h);
    if (!host_scalars) DF_CUDA_BAD("df_cuda_apply: NULL hyperparameters");
    for (int i = 0; i < n_scalars; i++) {
        if (!host_scalars[i] || df_cuda_misaligned(host_scalars[i], es))
            DF_CUDA_BAD("df_cuda_apply: hyperparameter %d is NULL or misaligned", i);
        h.p[i] = host_scalars[i];
    }
    if (!var || !grad || (kind >= 1 && !acc) || (kind == 2 && !acc2) || df_cuda_misaligned(var, es) || df_cuda_misaligned(grad, es) ||
        df_cuda_misaligned(acc, es) || df_cuda_misaligned(acc2, es))
        DF_CUDA_BAD("df_cuda_apply: NULL or misaligned tensor for kind %d", kind);
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_apply_typed<float>(g, kind, n, var, acc, acc2, grad, h, nesterov != 0, st)
                         : df_cuda_apply_typed<double>(g, kind, n, var, acc, acc2, grad, h, nesterov != 0, st);
}

/* ---- matrix products through cuBLAS ----
   Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so cuBLAS gets B first.
   float: 32F (or TF32 on request), double: 64F, half and bfloat16: float accumulation. */
static df_code df_cublas_fail(df_status *st, cublasStatus_t s, const char *what, int64_t m, int64_t n, int64_t k) {
    (void)cudaGetLastError();
    df_code code = s == CUBLAS_STATUS_ALLOC_FAILED ? DF_RESOURCE_EXHAUSTED
                 : s == CUBLAS_STATUS_INVALID_VALUE ? DF_INVALID_ARGUMENT : DF_INTERNAL;
    return df_status_set(st, code, "%s (%lld x %lld x %lld) failed: %s", what, (long long)m, (long long)n, (long long)k, df_cublas_name(s));
}
template <class E>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_zero_matrices(E *c, int64_t m, int64_t n, int64_t ldc, int64_t stride_c, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t col, row, b = df_cu_divmod(df_cu_divmod(e, n, &col), m, &row);
        c[b * stride_c + row * ldc + col] = E();
    }
}
template <class E>
static df_code df_cuda_zero_matrices(df_cuda *g, void *c, int64_t m, int64_t n, int64_t ldc, int64_t stride_c, int64_t batch,
                                     const char *who, df_status *st) {
    const int64_t total = batch * m * n;
    df_cu_zero_matrices<E><<<df_cuda_grid<df_cu_zero_matrices<E>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>((E *)c, m, n, ldc, stride_c,
                                                                                                             total);
    DF_CUDA_LAUNCHED(who);
    return DF_OK;
}
/* Arguments checked by the caller. accumulate: C += op(A) op(B) (the filter gradient's chunks). */
static df_code df_cuda_gemm_rm(df_cuda *g, df_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                               int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, void *c, int64_t ldc, int64_t stride_c,
                               int64_t batch, int tf32, int accumulate, const char *who, df_status *st) {
    if (!m || !n || !batch) return DF_OK;
    if (!k) {   /* an empty sum: C = 0 (or C unchanged) */
        if (accumulate) return DF_OK;
        if (t == DF_DOUBLE) return df_cuda_zero_matrices<unsigned long long>(g, c, m, n, ldc, stride_c, batch, who, st);
        if (t == DF_FLOAT) return df_cuda_zero_matrices<uint32_t>(g, c, m, n, ldc, stride_c, batch, who, st);
        return df_cuda_zero_matrices<uint16_t>(g, c, m, n, ldc, stride_c, batch, who, st);
    }
    cudaDataType type = t == DF_DOUBLE ? CUDA_R_64F : t == DF_HALF ? CUDA_R_16F : t == DF_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t compute = t == DF_DOUBLE ? CUBLAS_COMPUTE_64F
                                : t == DF_FLOAT && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const float f_one = 1.0f, f_beta = accumulate ? 1.0f : 0.0f;
    const double d_one = 1.0, d_beta = accumulate ? 1.0 : 0.0;
    const void *alpha = t == DF_DOUBLE ? (const void *)&d_one : (const void *)&f_one;
    const void *beta = t == DF_DOUBLE ? (const void *)&d_beta : (const void *)&f_beta;
    cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t s;
    if (batch == 1)
        s = cublasGemmEx(DF_BLAS(g), op_b, op_a, (int)n, (int)m, (int)k, alpha, b, type, (int)ldb, a, type, (int)lda, beta, c, type, (int)ldc,
                         compute, CUBLAS_GEMM_DEFAULT);
    else
        s = cublasGemmStridedBatchedEx(DF_BLAS(g), op_b, op_a, (int)n, (int)m, (int)k, alpha, b, type, (int)ldb, (long long)stride_b, a, type,
                                       (int)lda, (long long)stride_a, beta, c, type, (int)ldc, (long long)stride_c, (int)batch, compute,
                                       CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) return df_cublas_fail(st, s, batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx", m, n, k);
    DF_CUDA_LAUNCHED(who);
    return DF_OK;
}
extern "C" df_code df_cuda_gemm(df_cuda *g, df_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                const void *a, int64_t lda, int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                                void *c, int64_t ldc, int64_t stride_c, int64_t batch, int tf32, df_status *st) {
    DF_CUDA_ENTER("df_cuda_gemm");
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_HALF && t != DF_BFLOAT16)
        DF_CUDA_BAD("df_cuda_gemm: no kernel for %s", df_dtype_name(t));
    if (m < 0 || n < 0 || k < 0 || batch < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX || batch > INT_MAX || lda > INT_MAX ||
        ldb > INT_MAX || ldc > INT_MAX)
        DF_CUDA_BAD("df_cuda_gemm: sizes %lld x %lld x %lld (batch %lld) out of cuBLAS's int range", (long long)m, (long long)n,
                    (long long)k, (long long)batch);
    if ((m && k && lda < (ta ? m : k)) || (k && n && ldb < (tb ? k : n)) || (m && n && ldc < n))   /* rows covered */
        DF_CUDA_BAD("df_cuda_gemm: leading dimensions %lld, %lld, %lld too small for %lld x %lld x %lld", (long long)lda, (long long)ldb,
                    (long long)ldc, (long long)m, (long long)n, (long long)k);
    if (stride_a < 0 || stride_b < 0 || stride_c < 0 || (batch > 1 && stride_c == 0 && m && n))
        DF_CUDA_BAD("df_cuda_gemm: batch strides must be >= 0 (and C's nonzero)");
    if (!m || !n || !batch) return DF_OK;
    size_t es = df_dtype_size(t);
    if (!c || (k && (!a || !b)) || df_cuda_misaligned(a, es) || df_cuda_misaligned(b, es) || df_cuda_misaligned(c, es))
        DF_CUDA_BAD("df_cuda_gemm: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return df_cuda_gemm_rm(g, t, ta != 0, tb != 0, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch, tf32 != 0, 0,
                           "df_cuda_gemm", st);
}

/* ---- Conv2D (NHWC, filters HWIO) and its two gradients ----
   The patch matrix of a group of images (rows: output pixels, columns: (ky, kx, ci), the
   filter's row order) goes to the workspace, then one cuBLAS product: Y = cols F, dcols =
   dY F^T (then summed back into dX by a gather, image by image), dF += cols^T dY. A 1x1,
   stride 1, unpadded convolution needs no patch matrix: the input is it. The workspace holds
   the columns of as many images as fit in 64 MiB (at least one), counted at 8 bytes an
   element so one size serves float and double (float takes twice the images). */
enum { DF_CUDA_CONV_BUDGET = 64 << 20 };
static int df_cuda_conv_direct(const df_cuda_conv *p) {
    return p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
           p->oh == p->h && p->ow == p->w;
}
/* Every size non-negative, windows and steps at least 1, every count within int64. */
static int df_cuda_conv_sane(const df_cuda_conv *p, int pool) {
    int64_t v;
    if (!p || p->n < 0 || p->h < 0 || p->w < 0 || p->c < 0 || p->oh < 0 || p->ow < 0 || p->kh < 1 || p->kw < 1 ||
        p->stride_h < 1 || p->stride_w < 1 || p->pad_top < 0 || p->pad_left < 0)
        return 0;
    if (!pool && (p->oc < 0 || p->dil_h < 1 || p->dil_w < 1)) return 0;   /* pooling: oc and dilations unused */
    const int64_t lim = (int64_t)1 << 30;   /* keeps products such as oy * stride_h far inside int64 */
    if (p->h > lim || p->w > lim || p->oh > lim || p->ow > lim || p->kh > lim || p->kw > lim || p->stride_h > lim || p->stride_w > lim ||
        p->pad_top > lim || p->pad_left > lim || (!pool && (p->dil_h > (1 << 20) || p->dil_w > (1 << 20))))
        return 0;
    const int64_t oc = pool ? p->c : p->oc;
    return df_cuda_mul(p->n, p->h, &v) && df_cuda_mul(v, p->w, &v) && df_cuda_mul(v, p->c, &v) && df_cuda_mul(v, 8, &v) &&
           df_cuda_mul(p->n, p->oh, &v) && df_cuda_mul(v, p->ow, &v) && df_cuda_mul(v, oc, &v) && df_cuda_mul(v, 8, &v) &&
           df_cuda_mul(p->kh, p->kw, &v) && df_cuda_mul(v, p->c, &v) && df_cuda_mul(v, pool ? 1 : oc, &v) && df_cuda_mul(v, 8, &v) &&
           df_cuda_mul(p->oh, p->ow, &v) && df_cuda_mul(v, p->kh, &v) && df_cuda_mul(v, p->kw, &v) && df_cuda_mul(v, p->c, &v) &&
           df_cuda_mul(v, 8, &v);
}
/* Images per chunk for elements of es bytes given the workspace bytes; 0 when the sizes are
   past what cuBLAS takes. */
static int64_t df_cuda_conv_images(const df_cuda_conv *p, size_t es, size_t workspace) {
    const int64_t pixels = p->oh * p->ow, k = p->kh * p->kw * p->c;
    if (pixels > INT_MAX || k > INT_MAX || p->oc > INT_MAX || p->c > INT_MAX) return 0;
    if (!pixels || !k) return 1;   /* nothing to chunk: the launchers return before the products */
    int64_t images = df_cuda_conv_direct(p) ? p->n : (int64_t)(workspace / ((size_t)pixels * (size_t)k * es));
    if (images > INT_MAX / pixels) images = INT_MAX / pixels;
    if (images > p->n) images = p->n;
    return images < 1 ? 1 : images;
}
extern "C" size_t df_cuda_conv2d_workspace(const df_cuda_conv *p) {
    if (!df_cuda_conv_sane(p, 0) || df_cuda_conv_direct(p)) return 0;
    const int64_t per_image = p->oh * p->ow * p->kh * p->kw * p->c * 8;
    if (!per_image || !p->n) return 0;
    int64_t images = DF_CUDA_CONV_BUDGET / per_image;
    if (images < 1) images = 1;
    if (images > p->n) images = p->n;
    return (size_t)(images * per_image);
}
template <class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_im2col(const T *x, T *cols, df_cuda_conv p, int64_t p0, int64_t rows) {
    const int64_t k_total = p.kh * p.kw * p.c;
    for (int64_t row = blockIdx.y * (int64_t)blockDim.y + threadIdx.y; row < rows; row += (int64_t)gridDim.y * blockDim.y) {
        int64_t ox, oy, b = df_cu_divmod(df_cu_divmod(p0 + row, p.ow, &ox), p.oh, &oy);
        const int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
        const T *img = x + b * p.h * p.w * p.c;
        T *out = cols + row * k_total;
        for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < k_total; k += (int64_t)gridDim.x * blockDim.x) {
            int64_t ci, kx, ky = df_cu_divmod(df_cu_divmod(k, p.c, &ci), p.kw, &kx);
            int64_t iy = y0 + ky * p.dil_h, ix = x0 + kx * p.dil_w;
            out[k] = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w ? img[(iy * p.w + ix) * p.c + ci] : (T)0;
        }
    }
}
/* dX of images [b0, b0 + images) from their dcols: each input element sums the taps that read
   it, in (ky, kx) order. */
template <class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_col2im(const T *cols, T *dx, df_cuda_conv p, int64_t b0, int64_t images) {
    const int64_t k_total = p.kh * p.kw * p.c, total = images * p.h * p.w * p.c;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t ci, ix, iy, b = df_cu_divmod(df_cu_divmod(df_cu_divmod(e, p.c, &ci), p.w, &ix), p.h, &iy);
        T acc = 0;
        for (int64_t ky = 0; ky < p.kh; ky++) {
            const int64_t ty = iy + p.pad_top - ky * p.dil_h;
            if (ty < 0) break;   /* smaller still for the next ky */
            if (ty % p.stride_h) continue;
            const int64_t oy = ty / p.stride_h;
            if (oy >= p.oh) continue;
            for (int64_t kx = 0; kx < p.kw; kx++) {
                const int64_t tx = ix + p.pad_left - kx * p.dil_w;
                if (tx < 0) break;
                if (tx % p.stride_w) continue;
                const int64_t ox = tx / p.stride_w;
                if (ox >= p.ow) continue;
                acc += cols[((b * p.oh + oy) * p.ow + ox) * k_total + (ky * p.kw + kx) * p.c + ci];
            }
        }
        dx[(b0 * p.h * p.w * p.c) + e] = acc;
    }
}
template <class T>
static df_code df_cuda_im2col(df_cuda *g, const df_cuda_conv *p, const void *x, void *cols, int64_t p0, int64_t rows, const char *who,
                              df_status *st) {
    const int64_t k_total = p->kh * p->kw * p->c;
    const unsigned bx = k_total >= DF_CUDA_THREADS ? (unsigned)DF_CUDA_THREADS : (unsigned)((k_total + 31) / 32 * 32);
    const unsigned by = DF_CUDA_THREADS / bx;
    int64_t gx = (k_total + bx - 1) / bx, gy = (rows + by - 1) / by;
    dim3 grid((unsigned)(gx < 64 ? gx : 64), (unsigned)(gy < 65535 ? gy : 65535));
    df_cu_im2col<T><<<grid, dim3(bx, by), 0, DF_CS(g)>>>((const T *)x, (T *)cols, *p, p0, rows);
    DF_CUDA_LAUNCHED(who);
    return DF_OK;
}
/* The workspace check shared by the three convolution launchers; the images per chunk in *images. */
static df_code df_cuda_conv_begin(df_cuda *g, df_dtype t, const df_cuda_conv *p, void *workspace, const char *who, int64_t *images,
                                  df_status *st) {
    const size_t ws = df_cuda_conv2d_workspace(p);
    if (ws && (!workspace || df_cuda_misaligned(workspace, df_dtype_size(t))))
        return df_status_set(st, DF_INVALID_ARGUMENT, "%s: needs a workspace of %zu bytes (df_cuda_conv2d_workspace)", who, ws);
    *images = df_cuda_conv_images(p, df_dtype_size(t), ws);
    if (!*images) return df_status_set(st, DF_INVALID_ARGUMENT, "%s: sizes past cuBLAS's int range", who);
    return df_cuda_use(g, st);
}
template <class T>
static df_code df_cuda_conv2d_run(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *filter, void *y, void *ws,
                                  int64_t images, int tf32, df_status *st) {
    const int64_t pixels = p->oh * p->ow, k_total = p->kh * p->kw * p->c;
    const int direct = df_cuda_conv_direct(p);
    for (int64_t b0 = 0; b0 < p->n; b0 += images) {
        const int64_t rows = (images < p->n - b0 ? images : p->n - b0) * pixels, p0 = b0 * pixels;
        const void *cols = (const T *)x + p0 * k_total;
        if (!direct) {
            if (df_cuda_im2col<T>(g, p, x, ws, p0, rows, "df_cuda_conv2d", st)) return st->code;
            cols = ws;
        }
        if (df_cuda_gemm_rm(g, t, 0, 0, rows, p->oc, k_total, cols, k_total, 0, filter, p->oc, 0, (T *)y + p0 * p->oc, p->oc, 0, 1, tf32,
                            0, "df_cuda_conv2d", st))
            return st->code;
    }
    return DF_OK;
}
extern "C" df_code df_cuda_conv2d(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *filter, void *y,
                                  void *workspace, int tf32, df_status *st) {
    DF_CUDA_ENTER("df_cuda_conv2d");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_conv2d: no kernel for %s", df_dtype_name(t));
    if (!df_cuda_conv_sane(p, 0)) DF_CUDA_BAD("df_cuda_conv2d: bad convolution geometry");
    if (!p->n || !p->oh || !p->ow || !p->oc) return DF_OK;
    const size_t es = df_dtype_size(t);
    if (!y || df_cuda_misaligned(y, es) || (p->c && (!x || !filter || df_cuda_misaligned(x, es) || df_cuda_misaligned(filter, es))))
        DF_CUDA_BAD("df_cuda_conv2d: NULL or misaligned pointer");
    if (!p->c) {   /* empty windows: Y is zero */
        if (df_cuda_use(g, st)) return st->code;
        DF_CUDA_CHECK(st, cudaMemsetAsync(y, 0, (size_t)(p->n * p->oh * p->ow * p->oc) * es, DF_CS(g)), "df_cuda_conv2d");
        return DF_OK;
    }
    int64_t images;
    if (df_cuda_conv_begin(g, t, p, workspace, "df_cuda_conv2d", &images, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_conv2d_run<float>(g, t, p, x, filter, y, workspace, images, tf32 != 0, st)
                         : df_cuda_conv2d_run<double>(g, t, p, x, filter, y, workspace, images, 0, st);
}
template <class T>
static df_code df_cuda_conv2d_bp_input_run(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *filter, const void *dy, void *dx,
                                           void *ws, int64_t images, int tf32, df_status *st) {
    const int64_t pixels = p->oh * p->ow, k_total = p->kh * p->kw * p->c, image = p->h * p->w * p->c;
    const int direct = df_cuda_conv_direct(p);
    for (int64_t b0 = 0; b0 < p->n; b0 += images) {
        const int64_t nb = images < p->n - b0 ? images : p->n - b0, rows = nb * pixels, p0 = b0 * pixels;
        void *dcols = direct ? (void *)((T *)dx + p0 * k_total) : ws;
        if (df_cuda_gemm_rm(g, t, 0, 1, rows, k_total, p->oc, (const T *)dy + p0 * p->oc, p->oc, 0, filter, p->oc, 0, dcols, k_total, 0, 1,
                            tf32, 0, "df_cuda_conv2d_bp_input", st))
            return st->code;
        if (!direct) {
            df_cu_col2im<T><<<df_cuda_grid<df_cu_col2im<T>>(g, nb * image), DF_CUDA_THREADS, 0, DF_CS(g)>>>((const T *)ws, (T *)dx, *p,
                                                                                                        b0, nb);
            DF_CUDA_LAUNCHED("df_cuda_conv2d_bp_input");
        }
    }
    return DF_OK;
}
extern "C" df_code df_cuda_conv2d_bp_input(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *filter, const void *dy,
                                           void *dx, void *workspace, int tf32, df_status *st) {
    DF_CUDA_ENTER("df_cuda_conv2d_bp_input");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_conv2d_bp_input: no kernel for %s", df_dtype_name(t));
    if (!df_cuda_conv_sane(p, 0)) DF_CUDA_BAD("df_cuda_conv2d_bp_input: bad convolution geometry");
    if (!p->n || !p->h || !p->w || !p->c) return DF_OK;
    const size_t es = df_dtype_size(t);
    const int empty = !p->oh || !p->ow || !p->oc;   /* nothing flows back: dX is zero */
    if (!dx || df_cuda_misaligned(dx, es) || (!empty && (!filter || !dy || df_cuda_misaligned(filter, es) || df_cuda_misaligned(dy, es))))
        DF_CUDA_BAD("df_cuda_conv2d_bp_input: NULL or misaligned pointer");
    if (empty) {
        if (df_cuda_use(g, st)) return st->code;
        DF_CUDA_CHECK(st, cudaMemsetAsync(dx, 0, (size_t)(p->n * p->h * p->w * p->c) * es, DF_CS(g)), "df_cuda_conv2d_bp_input");
        return DF_OK;
    }
    int64_t images;
    if (df_cuda_conv_begin(g, t, p, workspace, "df_cuda_conv2d_bp_input", &images, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_conv2d_bp_input_run<float>(g, t, p, filter, dy, dx, workspace, images, tf32 != 0, st)
                         : df_cuda_conv2d_bp_input_run<double>(g, t, p, filter, dy, dx, workspace, images, 0, st);
}
template <class T>
static df_code df_cuda_conv2d_bp_filter_run(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *dy, void *dfilter,
                                            void *ws, int64_t images, int tf32, df_status *st) {
    const int64_t pixels = p->oh * p->ow, k_total = p->kh * p->kw * p->c;
    const int direct = df_cuda_conv_direct(p);
    for (int64_t b0 = 0; b0 < p->n; b0 += images) {
        const int64_t rows = (images < p->n - b0 ? images : p->n - b0) * pixels, p0 = b0 * pixels;
        const void *cols = (const T *)x + p0 * k_total;
        if (!direct) {
            if (df_cuda_im2col<T>(g, p, x, ws, p0, rows, "df_cuda_conv2d_bp_filter", st)) return st->code;
            cols = ws;
        }
        if (df_cuda_gemm_rm(g, t, 1, 0, k_total, p->oc, rows, cols, k_total, 0, (const T *)dy + p0 * p->oc, p->oc, 0, dfilter, p->oc, 0, 1,
                            tf32, b0 > 0, "df_cuda_conv2d_bp_filter", st))
            return st->code;
    }
    return DF_OK;
}
extern "C" df_code df_cuda_conv2d_bp_filter(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *dy,
                                            void *dfilter, void *workspace, int tf32, df_status *st) {
    DF_CUDA_ENTER("df_cuda_conv2d_bp_filter");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_conv2d_bp_filter: no kernel for %s", df_dtype_name(t));
    if (!df_cuda_conv_sane(p, 0)) DF_CUDA_BAD("df_cuda_conv2d_bp_filter: bad convolution geometry");
    if (!p->c || !p->oc) return DF_OK;   /* kh, kw >= 1: dF has elements exactly when c and oc do */
    const size_t es = df_dtype_size(t);
    const int empty = !p->n || !p->oh || !p->ow;   /* no output pixels: dF is zero */
    if (!dfilter || df_cuda_misaligned(dfilter, es) || (!empty && (!x || !dy || df_cuda_misaligned(x, es) || df_cuda_misaligned(dy, es))))
        DF_CUDA_BAD("df_cuda_conv2d_bp_filter: NULL or misaligned pointer");
    if (empty) {
        if (df_cuda_use(g, st)) return st->code;
        DF_CUDA_CHECK(st, cudaMemsetAsync(dfilter, 0, (size_t)(p->kh * p->kw * p->c * p->oc) * es, DF_CS(g)), "df_cuda_conv2d_bp_filter");
        return DF_OK;
    }
    int64_t images;
    if (df_cuda_conv_begin(g, t, p, workspace, "df_cuda_conv2d_bp_filter", &images, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_conv2d_bp_filter_run<float>(g, t, p, x, dy, dfilter, workspace, images, tf32 != 0, st)
                         : df_cuda_conv2d_bp_filter_run<double>(g, t, p, x, dy, dfilter, workspace, images, 0, st);
}

/* ---- pooling (dataflow.c's df__pool_rows and df__pool_grad_imgs, element by element) ----
   A window is clipped to the image. Forward: the first element, then Max takes a larger or NaN
   one; Avg sums in window order and multiplies by 1 / (the clipped window's size); an empty
   window gives -inf (Max) or 0. The gradients gather instead of scatter: each input element
   visits the windows that hold it in the CPU's (oy, ox) order, so its sum is the CPU's. For
   MaxPool a window's gradient goes to its first element (row-major) equal to its max, NaN
   matching NaN. */
template <class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_pool(const T *x, T *y, df_cuda_conv p, int max, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t ci, ox, oy, b = df_cu_divmod(df_cu_divmod(df_cu_divmod(e, p.c, &ci), p.ow, &ox), p.oh, &oy);
        int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left, y1 = y0 + p.kh, x1 = x0 + p.kw;
        if (y0 < 0) y0 = 0;
        if (x0 < 0) x0 = 0;
        if (y1 > p.h) y1 = p.h;
        if (x1 > p.w) x1 = p.w;
        if (y0 >= y1 || x0 >= x1) { y[e] = max ? -(T)INFINITY : (T)0; continue; }
        const T *img = x + b * p.h * p.w * p.c + ci;
        T o = img[(y0 * p.w + x0) * p.c];
        for (int64_t yy = y0; yy < y1; yy++)
            for (int64_t xx = yy == y0 ? x0 + 1 : x0; xx < x1; xx++) {
                T v = img[(yy * p.w + xx) * p.c];
                if (!max) o += v;
                else if (v > o || v != v) o = v;
            }
        if (!max) o *= (T)1 / (T)((y1 - y0) * (x1 - x0));
        y[e] = o;
    }
}
/* The windows (oy in [*lo, *hi]) whose rows hold input row i. */
__device__ __forceinline__ void df_cu_windows(int64_t i, int64_t pad, int64_t k, int64_t s, int64_t n_out, int64_t *lo, int64_t *hi) {
    *lo = -df_cu_floor_div(-(i + pad - k + 1), s);   /* ceil */
    if (*lo < 0) *lo = 0;
    *hi = df_cu_floor_div(i + pad, s);
    if (*hi > n_out - 1) *hi = n_out - 1;
}
template <class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_max_pool_grad(const T *x, const T *y, const T *dy, T *dx, df_cuda_conv p, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t ci, ix, iy, b = df_cu_divmod(df_cu_divmod(df_cu_divmod(e, p.c, &ci), p.w, &ix), p.h, &iy);
        int64_t oy0, oy1, ox0, ox1;
        df_cu_windows(iy, p.pad_top, p.kh, p.stride_h, p.oh, &oy0, &oy1);
        df_cu_windows(ix, p.pad_left, p.kw, p.stride_w, p.ow, &ox0, &ox1);
        const T xv = x[e];
        const T *img = x + b * p.h * p.w * p.c + ci;
        T acc = 0;
        for (int64_t oy = oy0; oy <= oy1; oy++)
            for (int64_t ox = ox0; ox <= ox1; ox++) {
                const int64_t at = ((b * p.oh + oy) * p.ow + ox) * p.c + ci;
                const T m = y[at];
                if (!(xv == m || (xv != xv && m != m))) continue;
                /* first in its window? look at the window's elements before (iy, ix) */
                int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left, x1 = x0 + p.kw;
                if (y0 < 0) y0 = 0;
                if (x0 < 0) x0 = 0;
                if (x1 > p.w) x1 = p.w;
                int earlier = 0;
                for (int64_t yy = y0; yy <= iy && !earlier; yy++)
                    for (int64_t xx = x0, end = yy < iy ? x1 : ix; xx < end; xx++) {
                        const T v = img[(yy * p.w + xx) * p.c];
                        if (v == m || (v != v && m != m)) { earlier = 1; break; }
                    }
                if (!earlier) acc += dy[at];
            }
        dx[e] = acc;
    }
}
template <class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_avg_pool_grad(const T *dy, T *dx, df_cuda_conv p, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t ci, ix, iy, b = df_cu_divmod(df_cu_divmod(df_cu_divmod(e, p.c, &ci), p.w, &ix), p.h, &iy);
        int64_t oy0, oy1, ox0, ox1;
        df_cu_windows(iy, p.pad_top, p.kh, p.stride_h, p.oh, &oy0, &oy1);
        df_cu_windows(ix, p.pad_left, p.kw, p.stride_w, p.ow, &ox0, &ox1);
        T acc = 0;
        for (int64_t oy = oy0; oy <= oy1; oy++) {
            int64_t y0 = oy * p.stride_h - p.pad_top, y1 = y0 + p.kh;
            if (y0 < 0) y0 = 0;
            if (y1 > p.h) y1 = p.h;
            for (int64_t ox = ox0; ox <= ox1; ox++) {
                int64_t x0 = ox * p.stride_w - p.pad_left, x1 = x0 + p.kw;
                if (x0 < 0) x0 = 0;
                if (x1 > p.w) x1 = p.w;
                const T inv = (T)1 / (T)((y1 - y0) * (x1 - x0));
                acc += df_cu_mul(dy[((b * p.oh + oy) * p.ow + ox) * p.c + ci], inv);
            }
        }
        dx[e] = acc;
    }
}
static df_code df_cuda_pool_begin(df_dtype t, const df_cuda_conv *p, const char *who, df_status *st) {
    if (!df_cuda_is_float(t)) return df_status_set(st, DF_INVALID_ARGUMENT, "%s: no kernel for %s", who, df_dtype_name(t));
    if (!df_cuda_conv_sane(p, 1)) return df_status_set(st, DF_INVALID_ARGUMENT, "%s: bad pooling geometry", who);
    return DF_OK;
}
/* which: 0 pooling, 1 MaxPoolGrad, 2 AvgPoolGrad; `total` output elements. */
template <class T>
static df_code df_cuda_pool_run(df_cuda *g, int which, const df_cuda_conv *p, int max, const void *x, const void *y, const void *dy,
                                void *out, int64_t total, const char *who, df_status *st) {
    if (which == 0)
        df_cu_pool<T><<<df_cuda_grid<df_cu_pool<T>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>((const T *)x, (T *)out, *p, max, total);
    else if (which == 1)
        df_cu_max_pool_grad<T><<<df_cuda_grid<df_cu_max_pool_grad<T>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const T *)x, (const T *)y, (const T *)dy, (T *)out, *p, total);
    else
        df_cu_avg_pool_grad<T><<<df_cuda_grid<df_cu_avg_pool_grad<T>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>((const T *)dy, (T *)out,
                                                                                                              *p, total);
    DF_CUDA_LAUNCHED(who);
    return DF_OK;
}
/* ---- depthwise convolution and batch norm: direct kernels, one thread per result element ---- */
template <class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_depthwise(int which, df_cuda_conv p, int64_t m, const T *a, const T *b, T *out, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        T acc = 0;
        if (which == 0) {                        /* e over y [n, oh, ow, c*m] */
            int64_t oc = e % p.oc, r = e / p.oc, ox = r % p.ow, oy = r / p.ow % p.oh, n = r / p.ow / p.oh;
            int64_t ci = oc / m, k = oc % m;
            for (int64_t ky = 0; ky < p.kh; ky++) {
                int64_t iy = oy * p.stride_h + ky * p.dil_h - p.pad_top;
                if (iy < 0 || iy >= p.h) continue;
                for (int64_t kx = 0; kx < p.kw; kx++) {
                    int64_t ix = ox * p.stride_w + kx * p.dil_w - p.pad_left;
                    if (ix < 0 || ix >= p.w) continue;
                    acc += a[((n * p.h + iy) * p.w + ix) * p.c + ci] * b[((ky * p.kw + kx) * p.c + ci) * m + k];
                }
            }
        } else if (which == 1) {                 /* e over dx [n, h, w, c] */
            int64_t ci = e % p.c, r = e / p.c, x = r % p.w, y = r / p.w % p.h, n = r / p.w / p.h;
            for (int64_t ky = 0; ky < p.kh; ky++) {
                int64_t ty = y + p.pad_top - ky * p.dil_h;
                if (ty < 0 || ty % p.stride_h) continue;
                int64_t oy = ty / p.stride_h;
                if (oy >= p.oh) continue;
                for (int64_t kx = 0; kx < p.kw; kx++) {
                    int64_t tx = x + p.pad_left - kx * p.dil_w;
                    if (tx < 0 || tx % p.stride_w) continue;
                    int64_t ox = tx / p.stride_w;
                    if (ox >= p.ow) continue;
                    for (int64_t k = 0; k < m; k++)
                        acc += b[((n * p.oh + oy) * p.ow + ox) * p.oc + ci * m + k] * a[((ky * p.kw + kx) * p.c + ci) * m + k];
                }
            }
        } else {                                 /* e over dfilter [kh, kw, c, m] */
            int64_t k = e % m, ci = e / m % p.c, kx = e / m / p.c % p.kw, ky = e / m / p.c / p.kw;
            for (int64_t n = 0; n < p.n; n++)
                for (int64_t oy = 0; oy < p.oh; oy++) {
                    int64_t iy = oy * p.stride_h + ky * p.dil_h - p.pad_top;
                    if (iy < 0 || iy >= p.h) continue;
                    for (int64_t ox = 0; ox < p.ow; ox++) {
                        int64_t ix = ox * p.stride_w + kx * p.dil_w - p.pad_left;
                        if (ix < 0 || ix >= p.w) continue;
                        acc += a[((n * p.h + iy) * p.w + ix) * p.c + ci] * b[((n * p.oh + oy) * p.ow + ox) * p.oc + ci * m + k];
                    }
                }
        }
        out[e] = acc;
    }
}
extern "C" df_code df_cuda_depthwise_conv2d(df_cuda *g, int which, df_dtype t, const df_cuda_conv *p, int64_t m, const void *a,
                                            const void *b, void *out, df_status *st) {
    DF_CUDA_ENTER("df_cuda_depthwise_conv2d");
    if (!df_cuda_is_float(t)) DF_CUDA_BAD("df_cuda_depthwise_conv2d: no kernel for %s", df_dtype_name(t));
    if (which < 0 || which > 2) DF_CUDA_BAD("df_cuda_depthwise_conv2d: which is %d (0, 1 or 2)", which);
    if (!df_cuda_conv_sane(p, 0) || m < 1 || p->oc != p->c * m) DF_CUDA_BAD("df_cuda_depthwise_conv2d: bad geometry");
    int64_t total = which == 0 ? p->n * p->oh * p->ow * p->oc : which == 1 ? p->n * p->h * p->w * p->c : p->kh * p->kw * p->c * m;
    if (!total) return DF_OK;
    if (!a || !b || !out) DF_CUDA_BAD("df_cuda_depthwise_conv2d: NULL pointer");
    if (df_cuda_use(g, st)) return st->code;
    if (t == DF_FLOAT)
        df_cu_depthwise<float><<<df_cuda_grid<df_cu_depthwise<float>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            which, *p, m, (const float *)a, (const float *)b, (float *)out, total);
    else
        df_cu_depthwise<double><<<df_cuda_grid<df_cu_depthwise<double>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            which, *p, m, (const double *)a, (const double *)b, (double *)out, total);
    DF_CUDA_LAUNCHED("df_cuda_depthwise_conv2d");
    return DF_OK;
}
/* One thread per channel: the statistics (or the given ones) into the four vectors. */
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_bn_stats(int train, const float *x, const float *mean, const float *variance, float *bm, float *bv, float *r1, float *r2,
               int64_t outer, int64_t c, int64_t inner, float factor) {
    for (int64_t ch = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; ch < c; ch += (int64_t)gridDim.x * blockDim.x) {
        if (!train) { bm[ch] = r1[ch] = mean[ch]; bv[ch] = r2[ch] = variance[ch]; continue; }
        const int64_t rest = outer * inner;
        double s = 0, q = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) s += x[(o * c + ch) * inner + i];
        const float inv = 1.0f / (float)rest, mu = (float)s * inv;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) { float d = x[(o * c + ch) * inner + i] - mu; q += d * d; }
        const float bvar = (float)q * inv, adjust = (float)rest / (float)(rest > 1 ? rest - 1 : 1);
        r1[ch] = mu; r2[ch] = bvar;
        if (factor == 1.0f) { bm[ch] = mu; bv[ch] = bvar * adjust; }
        else { bm[ch] = (1.0f - factor) * mean[ch] + factor * mu; bv[ch] = (1.0f - factor) * variance[ch] + factor * adjust * bvar; }
    }
}
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_bn_y(const float *x, const float *scale, const float *offset, const float *mu, const float *var, float *y, int64_t c,
           int64_t inner, float eps, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t ch = e / inner % c;
        const float k1 = 1.0f / sqrtf(var[ch] + eps) * scale[ch];
        y[e] = (x[e] - mu[ch]) * k1 + offset[ch];
    }
}
extern "C" df_code df_cuda_batch_norm(df_cuda *g, int train, const float *x, const float *scale, const float *offset,
                                      const float *mean, const float *variance, float *y, float *batch_mean, float *batch_variance,
                                      float *reserve_1, float *reserve_2, int64_t outer, int64_t c, int64_t inner, float epsilon,
                                      float factor, df_status *st) {
    DF_CUDA_ENTER("df_cuda_batch_norm");
    int64_t total;
    if (outer < 0 || c < 0 || inner < 0 || !df_cuda_mul(outer, c, &total) || !df_cuda_mul(total, inner, &total))
        DF_CUDA_BAD("df_cuda_batch_norm: bad shape");
    if (!c) return DF_OK;
    if (!scale || !offset || !batch_mean || !batch_variance || !reserve_1 || !reserve_2 || (total && (!x || !y)) ||
        ((!train || factor != 1.0f) && (!mean || !variance)))
        DF_CUDA_BAD("df_cuda_batch_norm: NULL pointer");
    if (df_cuda_use(g, st)) return st->code;
    df_cu_bn_stats<<<df_cuda_grid<df_cu_bn_stats>(g, c), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
        train, x, mean, variance, batch_mean, batch_variance, reserve_1, reserve_2, outer, c, inner, factor);
    DF_CUDA_LAUNCHED("df_cuda_batch_norm");
    if (!total) return DF_OK;
    df_cu_bn_y<<<df_cuda_grid<df_cu_bn_y>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(x, scale, offset, reserve_1, reserve_2, y, c,
                                                                                     inner, epsilon, total);
    DF_CUDA_LAUNCHED("df_cuda_batch_norm");
    return DF_OK;
}

__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_bn_grad_sums(const float *dy, const float *x, const float *mean, const float *variance, float *ds, float *db,
                   int64_t outer, int64_t c, int64_t inner, float eps) {
    for (int64_t ch = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; ch < c; ch += (int64_t)gridDim.x * blockDim.x) {
        const float mu = mean[ch], coef0 = 1.0f / sqrtf(variance[ch] + eps);
        double s = 0, q = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                const int64_t e = (o * c + ch) * inner + i;
                s += dy[e];
                q += dy[e] * ((x[e] - mu) * coef0);
            }
        db[ch] = (float)s;
        ds[ch] = (float)q;
    }
}
__global__ void __launch_bounds__(DF_CUDA_THREADS)
df_cu_bn_grad_dx(int train, const float *dy, const float *x, const float *scale, const float *mean, const float *variance,
                 const float *ds, const float *db, float *dx, int64_t c, int64_t inner, int64_t rest, float eps, int64_t total) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t ch = e / inner % c;
        const float coef0 = 1.0f / sqrtf(variance[ch] + eps), coef1 = scale[ch] * coef0;
        if (!train) { dx[e] = dy[e] * coef1; continue; }
        const float inv = 1.0f / (float)(rest ? rest : 1), mdy = db[ch] * inv, q = coef0 * (ds[ch] * inv);
        dx[e] = coef1 * ((dy[e] - mdy) - (x[e] - mean[ch]) * q);
    }
}
extern "C" df_code df_cuda_batch_norm_grad(df_cuda *g, int train, const float *dy, const float *x, const float *scale,
                                           const float *mean, const float *variance, float *dx, float *scale_backprop,
                                           float *offset_backprop, int64_t outer, int64_t c, int64_t inner, float epsilon,
                                           df_status *st) {
    DF_CUDA_ENTER("df_cuda_batch_norm_grad");
    int64_t total;
    if (outer < 0 || c < 0 || inner < 0 || !df_cuda_mul(outer, c, &total) || !df_cuda_mul(total, inner, &total))
        DF_CUDA_BAD("df_cuda_batch_norm_grad: bad shape");
    if (!c) return DF_OK;
    if (!scale || !mean || !variance || !scale_backprop || !offset_backprop || (total && (!x || !dy || !dx)))
        DF_CUDA_BAD("df_cuda_batch_norm_grad: NULL pointer");
    if (df_cuda_use(g, st)) return st->code;
    df_cu_bn_grad_sums<<<df_cuda_grid<df_cu_bn_grad_sums>(g, c), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
        dy, x, mean, variance, scale_backprop, offset_backprop, outer, c, inner, epsilon);
    DF_CUDA_LAUNCHED("df_cuda_batch_norm_grad");
    if (!total) return DF_OK;
    df_cu_bn_grad_dx<<<df_cuda_grid<df_cu_bn_grad_dx>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
        train, dy, x, scale, mean, variance, scale_backprop, offset_backprop, dx, c, inner, outer * inner, epsilon, total);
    DF_CUDA_LAUNCHED("df_cuda_batch_norm_grad");
    return DF_OK;
}

extern "C" df_code df_cuda_pool(df_cuda *g, df_dtype t, const df_cuda_conv *p, int max, const void *x, void *y, df_status *st) {
    DF_CUDA_ENTER("df_cuda_pool");
    if (df_cuda_pool_begin(t, p, "df_cuda_pool", st)) return st->code;
    const int64_t total = p->n * p->oh * p->ow * p->c;
    if (!total) return DF_OK;
    const size_t es = df_dtype_size(t);
    if (!y || df_cuda_misaligned(y, es) || (p->h && p->w && (!x || df_cuda_misaligned(x, es))))
        DF_CUDA_BAD("df_cuda_pool: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_pool_run<float>(g, 0, p, max != 0, x, NULL, NULL, y, total, "df_cuda_pool", st)
                         : df_cuda_pool_run<double>(g, 0, p, max != 0, x, NULL, NULL, y, total, "df_cuda_pool", st);
}
extern "C" df_code df_cuda_max_pool_grad(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *y,
                                         const void *dy, void *dx, df_status *st) {
    DF_CUDA_ENTER("df_cuda_max_pool_grad");
    if (df_cuda_pool_begin(t, p, "df_cuda_max_pool_grad", st)) return st->code;
    const int64_t total = p->n * p->h * p->w * p->c;
    if (!total) return DF_OK;
    const size_t es = df_dtype_size(t);
    const int windows = p->oh && p->ow;
    if (!x || !dx || df_cuda_misaligned(x, es) || df_cuda_misaligned(dx, es) ||
        (windows && (!y || !dy || df_cuda_misaligned(y, es) || df_cuda_misaligned(dy, es))))
        DF_CUDA_BAD("df_cuda_max_pool_grad: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_pool_run<float>(g, 1, p, 1, x, y, dy, dx, total, "df_cuda_max_pool_grad", st)
                         : df_cuda_pool_run<double>(g, 1, p, 1, x, y, dy, dx, total, "df_cuda_max_pool_grad", st);
}
extern "C" df_code df_cuda_avg_pool_grad(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *dy, void *dx, df_status *st) {
    DF_CUDA_ENTER("df_cuda_avg_pool_grad");
    if (df_cuda_pool_begin(t, p, "df_cuda_avg_pool_grad", st)) return st->code;
    const int64_t total = p->n * p->h * p->w * p->c;
    if (!total) return DF_OK;
    const size_t es = df_dtype_size(t);
    if (!dx || df_cuda_misaligned(dx, es) || (p->oh && p->ow && (!dy || df_cuda_misaligned(dy, es))))
        DF_CUDA_BAD("df_cuda_avg_pool_grad: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    return t == DF_FLOAT ? df_cuda_pool_run<float>(g, 2, p, 0, NULL, NULL, dy, dx, total, "df_cuda_avg_pool_grad", st)
                         : df_cuda_pool_run<double>(g, 2, p, 0, NULL, NULL, dy, dx, total, "df_cuda_avg_pool_grad", st);
}

/* ---- CUDA graphs: capture the launchers of one thread, replay them on the compute stream ----
   While this thread captures on g, every launcher it calls queues on g's capture stream (with
   the capture's cuBLAS handle), which records instead of running; copies to or from the host
   and waits are refused. One capture at a time per GPU: a second gets DF_UNAVAILABLE. */
enum { DF_CUDA_CAPTURE_WS = 32 << 20 };
extern "C" df_code df_cuda_capture_begin(df_cuda *g, df_status *st) {
    DF_CUDA_ENTER("df_cuda_capture_begin");
    if (df_cuda_tls_capturing) return df_status_set(st, DF_FAILED_PRECONDITION, "df_cuda_capture_begin: this thread captures already");
    int expected = 0;
    if (!__atomic_compare_exchange_n(&g->capturing, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return df_status_set(st, DF_UNAVAILABLE, "df_cuda_capture_begin: GPU %d is capturing on another thread", g->device);
    cudaError_t err = cudaSetDevice(g->device);
    if (err == cudaSuccess && !g->capture) err = cudaStreamCreateWithFlags(&g->capture, cudaStreamNonBlocking);
    if (err == cudaSuccess && !g->capture_ws) err = cudaMalloc(&g->capture_ws, DF_CUDA_CAPTURE_WS);
    if (err == cudaSuccess && !g->capture_blas) {
        cublasStatus_t bs = cublasCreate(&g->capture_blas);
        if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(g->capture_blas, g->capture);
        if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetWorkspace(g->capture_blas, g->capture_ws, DF_CUDA_CAPTURE_WS);
        if (bs != CUBLAS_STATUS_SUCCESS) {
            if (g->capture_blas) cublasDestroy(g->capture_blas);
            g->capture_blas = NULL;
            __atomic_store_n(&g->capturing, 0, __ATOMIC_RELEASE);
            return df_status_set(st, DF_UNAVAILABLE, "df_cuda_capture_begin: cuBLAS handle: %s", df_cublas_name(bs));
        }
    }
    if (err == cudaSuccess) err = cudaStreamBeginCapture(g->capture, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
        __atomic_store_n(&g->capturing, 0, __ATOMIC_RELEASE);
        return df_cuda_fail(st, err, "df_cuda_capture_begin");
    }
    df_cuda_tls_capturing = g;
    return DF_OK;
}
/* Leaves a loop's body capture: back to the capture's own stream (and the cuBLAS handle too). */
static cudaError_t df_cuda_loop_leave(df_cuda *g) {
    cudaGraph_t body = NULL;
    cudaError_t err = cudaStreamEndCapture(g->capture, &body);    /* (the body is the node's) */
    g->capture = g->capture_outer;
    g->in_loop = 0;
    if (cublasSetStream(g->capture_blas, g->capture) != CUBLAS_STATUS_SUCCESS && err == cudaSuccess) err = cudaErrorUnknown;
    return err;
}
extern "C" df_code df_cuda_capture_end(df_cuda *g, void **graph, df_status *st) {
    DF_CUDA_ENTER("df_cuda_capture_end");
    if (graph) *graph = NULL;
    if (df_cuda_tls_capturing != g) return df_status_set(st, DF_FAILED_PRECONDITION, "df_cuda_capture_end: this thread does not capture on GPU %d", g->device);
    void **want = graph;
    if (g->in_loop) {                    /* a loop's capture left unfinished: no graph */
        (void)df_cuda_loop_leave(g);
        graph = NULL;
    }
    df_cuda_tls_capturing = NULL;
    cudaGraph_t made = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t err = cudaStreamEndCapture(g->capture, &made);
    if (err == cudaSuccess && graph) err = cudaGraphInstantiate(&exec, made, 0);
    if (made) cudaGraphDestroy(made);
    __atomic_store_n(&g->capturing, 0, __ATOMIC_RELEASE);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return df_cuda_fail(st, err, "df_cuda_capture_end");
    }
    if (graph) *graph = (void *)exec;
    if (want && !graph) return df_status_set(st, DF_ABORTED, "df_cuda_capture_end: a loop's capture was left unfinished");
    return DF_OK;
}
/* Loops: a conditional WHILE node (CUDA 12.4 and later), its body captured on capture_body
   through cudaStreamBeginCaptureToGraph; a one-thread kernel sets the condition from the
   predicate before the node and at the end of each pass of its body. */
#if CUDART_VERSION >= 12040
#define DF_CUDA_LOOPS 1
#if CUDART_VERSION >= 13000
#define DF_CUDA_CAPTURE_INFO(s, cs, gr, deps, nd) cudaStreamGetCaptureInfo((s), (cs), NULL, (gr), (deps), NULL, (nd))
#define DF_CUDA_ADD_NODE(node, gr, deps, nd, params) cudaGraphAddNode((node), (gr), (deps), NULL, (nd), (params))
#define DF_CUDA_SET_DEPS(s, deps, nd) cudaStreamUpdateCaptureDependencies((s), (deps), NULL, (nd), cudaStreamSetCaptureDependencies)
#else
#define DF_CUDA_CAPTURE_INFO(s, cs, gr, deps, nd) cudaStreamGetCaptureInfo((s), (cs), NULL, (gr), (deps), (nd))
#define DF_CUDA_ADD_NODE(node, gr, deps, nd, params) cudaGraphAddNode((node), (gr), (deps), (nd), (params))
#define DF_CUDA_SET_DEPS(s, deps, nd) cudaStreamUpdateCaptureDependencies((s), (deps), (nd), cudaStreamSetCaptureDependencies)
#endif
__global__ void df_cu_loop_condition(cudaGraphConditionalHandle h, const unsigned char *pred) {
    cudaGraphSetConditional(h, *pred ? 1u : 0u);
}
#endif
extern "C" df_code df_cuda_capture_loop_begin(df_cuda *g, const void *pred, df_status *st) {
    DF_CUDA_ENTER("df_cuda_capture_loop_begin");
    if (df_cuda_tls_capturing != g) return df_status_set(st, DF_FAILED_PRECONDITION, "df_cuda_capture_loop_begin: this thread does not capture on GPU %d", g->device);
    if (g->in_loop) return df_status_set(st, DF_UNIMPLEMENTED, "df_cuda_capture_loop_begin: a loop inside a captured loop");
    if (!pred) DF_CUDA_BAD("df_cuda_capture_loop_begin: NULL predicate");
#ifndef DF_CUDA_LOOPS
    return df_status_set(st, DF_UNIMPLEMENTED, "df_cuda_capture_loop_begin: conditional graph nodes need CUDA 12.4 or later");
#else
    cudaError_t err = cudaSuccess;
    if (!g->capture_body) err = cudaStreamCreateWithFlags(&g->capture_body, cudaStreamNonBlocking);
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = NULL;
    const cudaGraphNode_t *deps = NULL;
    size_t nd = 0;
    cudaGraphConditionalHandle h = 0;
    if (err == cudaSuccess) err = DF_CUDA_CAPTURE_INFO(g->capture, &cs, &graph, &deps, &nd);
    if (err == cudaSuccess && cs != cudaStreamCaptureStatusActive) err = cudaErrorStreamCaptureInvalidated;
    if (err == cudaSuccess) err = cudaGraphConditionalHandleCreate(&h, graph, 0, 0);
    if (err == cudaSuccess) {
        df_cu_loop_condition<<<1, 1, 0, g->capture>>>(h, (const unsigned char *)pred);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) err = DF_CUDA_CAPTURE_INFO(g->capture, &cs, &graph, &deps, &nd);   /* (after that kernel) */
    cudaGraphNodeParams cp = {cudaGraphNodeTypeConditional, {0, 0, 0}, {}, 0};   /* (all zero but the type) */
    cp.conditional.handle = h;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    cudaGraphNode_t node = NULL;
    if (err == cudaSuccess) err = DF_CUDA_ADD_NODE(&node, graph, deps, nd, &cp);
    if (err == cudaSuccess) err = DF_CUDA_SET_DEPS(g->capture, &node, 1);
    if (err == cudaSuccess)
        err = cudaStreamBeginCaptureToGraph(g->capture_body, cp.conditional.phGraph_out[0], NULL, NULL, 0, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return df_cuda_fail(st, err, "df_cuda_capture_loop_begin");
    }
    g->capture_outer = g->capture;
    g->capture = g->capture_body;
    g->in_loop = 1;
    g->loop_handle = h;
    if (cublasSetStream(g->capture_blas, g->capture) != CUBLAS_STATUS_SUCCESS) {
        (void)df_cuda_loop_leave(g);
        return df_status_set(st, DF_INTERNAL, "df_cuda_capture_loop_begin: cublasSetStream failed");
    }
    return DF_OK;
#endif
}
extern "C" df_code df_cuda_capture_loop_end(df_cuda *g, const void *pred, df_status *st) {
    DF_CUDA_ENTER("df_cuda_capture_loop_end");
    if (df_cuda_tls_capturing != g || !g->in_loop) return df_status_set(st, DF_FAILED_PRECONDITION, "df_cuda_capture_loop_end: no loop is being captured on GPU %d", g->device);
    cudaError_t err = pred ? cudaSuccess : cudaErrorInvalidValue;
#ifdef DF_CUDA_LOOPS
    if (err == cudaSuccess) {
        df_cu_loop_condition<<<1, 1, 0, g->capture>>>((cudaGraphConditionalHandle)g->loop_handle, (const unsigned char *)pred);
        err = cudaGetLastError();
    }
#endif
    cudaError_t left = df_cuda_loop_leave(g);
    if (err == cudaSuccess) err = left;
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return df_cuda_fail(st, err, "df_cuda_capture_loop_end");
    }
    return DF_OK;
}
extern "C" df_code df_cuda_graph_launch(df_cuda *g, void *graph, df_status *st) {
    DF_CUDA_ENTER("df_cuda_graph_launch");
    if (!graph) DF_CUDA_BAD("df_cuda_graph_launch: NULL graph");
    if (df_cuda_use(g, st)) return st->code;
    DF_CUDA_CHECK(st, cudaGraphLaunch((cudaGraphExec_t)graph, DF_CS(g)), "cudaGraphLaunch");
    return DF_OK;
}
extern "C" void df_cuda_graph_free(df_cuda *g, void *graph) {
    if (!g || !graph) return;
    cudaSetDevice(g->device);
    cudaGraphExecDestroy((cudaGraphExec_t)graph);
    (void)cudaGetLastError();
}

/* ---- Cumprod: one thread per (outer, inner) column, in the CPU's order, in double ---- */
template <class T>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_cumprod(const T *x, T *y, int64_t outer, int64_t len, int64_t inner,
                                                                 int exclusive, int reverse) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < outer * inner; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = t / inner, j = t % inner;
        double p = 1;
        for (int64_t k0 = 0; k0 < len; k0++) {
            const int64_t k = reverse ? len - 1 - k0 : k0, at = (q * len + k) * inner + j;
            const double v = (double)x[at];
            if (!exclusive) p *= v;
            y[at] = (T)p;
            if (exclusive) p *= v;
        }
    }
}
extern "C" df_code df_cuda_cumprod(df_cuda *g, df_dtype t, const void *x, void *y, int64_t outer, int64_t len, int64_t inner,
                                   int exclusive, int reverse, df_status *st) {
    DF_CUDA_ENTER("df_cuda_cumprod");
    if (t != DF_FLOAT && t != DF_DOUBLE) DF_CUDA_BAD("df_cuda_cumprod: type %s is not float or double", df_dtype_name(t));
    const int64_t dims[3] = {outer, len, inner};
    int64_t total;
    if (!df_cuda_count(3, dims, &total)) DF_CUDA_BAD("df_cuda_cumprod: bad sizes [%lld, %lld, %lld]", (long long)outer, (long long)len, (long long)inner);
    if (!total) return DF_OK;
    const size_t es = df_dtype_size(t);
    if (!x || !y || df_cuda_misaligned(x, es) || df_cuda_misaligned(y, es)) DF_CUDA_BAD("df_cuda_cumprod: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    if (t == DF_FLOAT)
        df_cu_cumprod<float><<<df_cuda_grid<df_cu_cumprod<float>>(g, outer * inner), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const float *)x, (float *)y, outer, len, inner, exclusive, reverse);
    else
        df_cu_cumprod<double><<<df_cuda_grid<df_cu_cumprod<double>>(g, outer * inner), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const double *)x, (double *)y, outer, len, inner, exclusive, reverse);
    DF_CUDA_LAUNCHED("df_cuda_cumprod");
    return DF_OK;
}

/* ---- OneHot: y[q, k, j] = indices[q, j] == k ? on : off ---- */
template <class E, class I>
__global__ void __launch_bounds__(DF_CUDA_THREADS) df_cu_one_hot(const I *ix, E *y, int64_t depth, int64_t inner, int64_t total, E on, E off) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = t % inner, k = (t / inner) % depth, q = t / (inner * depth);
        y[t] = (int64_t)ix[q * inner + j] == k ? on : off;
    }
}
template <class E>
static df_code df_cuda_one_hot_run(df_cuda *g, const void *ix, df_dtype index_t, void *y, int64_t depth, int64_t inner, int64_t total,
                                   const void *on, const void *off, df_status *st) {
    E a, b;
    memcpy(&a, on, sizeof a);
    memcpy(&b, off, sizeof b);
    if (index_t == DF_INT32)
        df_cu_one_hot<E, int32_t><<<df_cuda_grid<df_cu_one_hot<E, int32_t>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const int32_t *)ix, (E *)y, depth, inner, total, a, b);
    else
        df_cu_one_hot<E, int64_t><<<df_cuda_grid<df_cu_one_hot<E, int64_t>>(g, total), DF_CUDA_THREADS, 0, DF_CS(g)>>>(
            (const int64_t *)ix, (E *)y, depth, inner, total, a, b);
    DF_CUDA_LAUNCHED("df_cuda_one_hot");
    return DF_OK;
}
extern "C" df_code df_cuda_one_hot(df_cuda *g, size_t elem_size, const void *indices, df_dtype index_t, void *y, int64_t outer,
                                   int64_t depth, int64_t inner, const void *host_on, const void *host_off, df_status *st) {
    DF_CUDA_ENTER("df_cuda_one_hot");
    if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) DF_CUDA_BAD("df_cuda_one_hot: element size %zu is not 1, 2, 4 or 8", elem_size);
    if (index_t != DF_INT32 && index_t != DF_INT64) DF_CUDA_BAD("df_cuda_one_hot: indices must be int32 or int64, not %s", df_dtype_name(index_t));
    const int64_t dims[3] = {outer, depth, inner};
    int64_t total;
    if (!df_cuda_count(3, dims, &total)) DF_CUDA_BAD("df_cuda_one_hot: bad sizes [%lld, %lld, %lld]", (long long)outer, (long long)depth, (long long)inner);
    if (!total) return DF_OK;
    if (!indices || !y || !host_on || !host_off || df_cuda_misaligned(y, elem_size) || df_cuda_misaligned(indices, df_dtype_size(index_t)))
        DF_CUDA_BAD("df_cuda_one_hot: NULL or misaligned pointer");
    if (df_cuda_use(g, st)) return st->code;
    switch (elem_size) {
    case 1: return df_cuda_one_hot_run<uint8_t>(g, indices, index_t, y, depth, inner, total, host_on, host_off, st);
    case 2: return df_cuda_one_hot_run<uint16_t>(g, indices, index_t, y, depth, inner, total, host_on, host_off, st);
    case 4: return df_cuda_one_hot_run<uint32_t>(g, indices, index_t, y, depth, inner, total, host_on, host_off, st);
    default: return df_cuda_one_hot_run<unsigned long long>(g, indices, index_t, y, depth, inner, total, host_on, host_off, st);
    }
}
