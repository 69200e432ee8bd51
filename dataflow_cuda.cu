/* dataflow_cuda.cu - the GPU side of dataflow (compiled with nvcc, linked with -lcudart -lcublas).

   What is here: device discovery, and one GPU's building blocks for the runtime's GPU device:
   a compute stream and a copy stream, memory from the BFC allocator over cudaMalloc'd regions
   (the same allocator code as the host's, as a sub-allocator: its bookkeeping lives in host
   memory, so device memory is never touched from the CPU), copies through pinned host staging,
   matrix products through cuBLAS (cublasGemmEx with an explicit compute type, TF32 on request),
   and elementwise float kernels. Every CUDA and cuBLAS error becomes a df_status (never an
   abort); a GPU out of memory is DF_RESOURCE_EXHAUSTED. The session's GPU device (placement,
   Send/Recv copies, the executor) is built on these. */
#define DATAFLOW_CUDA 1
#include "dataflow.h"
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
struct df_cuda {
    int device;
    cudaStream_t compute, copy;
    cublasHandle_t blas;
    df_bfc *bfc;                     /* device memory: BFC over cudaMalloc'd regions */
    void *staging;                   /* pinned host buffer for copies */
    size_t staging_bytes;
};

static void *df_cuda_region_alloc(size_t bytes, void *user) {
    df_cuda *g = (df_cuda *)user;
    void *p = NULL;
    if (cudaSetDevice(g->device) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError();    /* out of memory: the allocator reports NULL */
        return NULL;
    }
    return p;
}
static void df_cuda_region_free(void *p, size_t bytes, void *user) {
    (void)bytes;
    df_cuda *g = (df_cuda *)user;
    cudaSetDevice(g->device);
    cudaFree(p);
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
    if (g->staging) cudaFreeHost(g->staging);
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
        for (int64_t i = 0; i < m; i++) DF_CUDA_CHECK(st, cudaMemsetAsync(c + i * ldc, 0, (size_t)n * sizeof(float), g->compute), "cudaMemsetAsync");
        return DF_OK;
    }
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = cublasGemmEx(g->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                    &one, b, CUDA_R_32F, (int)ldb, a, CUDA_R_32F, (int)lda, &zero, c, CUDA_R_32F, (int)ldc,
                                    tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
        return df_status_set(st, s == CUBLAS_STATUS_ALLOC_FAILED ? DF_RESOURCE_EXHAUSTED : s == CUBLAS_STATUS_INVALID_VALUE ? DF_INVALID_ARGUMENT : DF_INTERNAL,
                             "cublasGemmEx (%lld x %lld x %lld) failed: %s", (long long)m, (long long)n, (long long)k, df_cublas_name(s));
    DF_CUDA_CHECK(st, cudaGetLastError(), "cublasGemmEx");
    return DF_OK;
}

/* ---- elementwise float kernels: 16-byte loads where the pointers allow, a grid-stride loop ---- */
__device__ __forceinline__ float df_cuda_apply(int op, float x, float y) {
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
        r.x = df_cuda_apply(op, x.x, y.x); r.y = df_cuda_apply(op, x.y, y.y);
        r.z = df_cuda_apply(op, x.z, y.z); r.w = df_cuda_apply(op, x.w, y.w);
        c[i] = r;
    }
}
__global__ void df_cuda_elementwise1(int op, const float *a, const float *b, float *c, int64_t lo, int64_t n) {
    for (int64_t i = lo + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        c[i] = df_cuda_apply(op, a[i], b ? b[i] : a[i]);
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
    int sms = 132;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->device);
    const int threads = 256;
    int aligned = !((uintptr_t)a & 15) && !((uintptr_t)c & 15) && (!b || !((uintptr_t)b & 15));
    int64_t n4 = aligned ? n / 4 : 0;
    if (n4) {
        int64_t blocks = (n4 + threads - 1) / threads, cap = (int64_t)sms * 8;
        df_cuda_elementwise4<<<(unsigned)(blocks < cap ? blocks : cap), threads, 0, g->compute>>>(
            op, (const float4 *)a, (const float4 *)b, (float4 *)c, n4);
        DF_CUDA_CHECK(st, cudaGetLastError(), "launching an elementwise kernel");
    }
    if (n4 * 4 < n) {
        int64_t blocks = (n - n4 * 4 + threads - 1) / threads, cap = (int64_t)sms * 8;
        df_cuda_elementwise1<<<(unsigned)(blocks < cap ? blocks : cap), threads, 0, g->compute>>>(op, a, b, c, n4 * 4, n);
        DF_CUDA_CHECK(st, cudaGetLastError(), "launching an elementwise kernel");
    }
    return DF_OK;
}
