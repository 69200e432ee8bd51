/* dataflow_cuda.cu - the GPU side of dataflow (compiled with nvcc, linked with -lcudart -lcublas).
   This version provides device discovery only; kernels, device memory under the BFC allocator,
   cuBLAS and transfers come with the GPU device work. Every CUDA error becomes a df_status. */
#include "dataflow.h"
#include <cuda_runtime.h>

extern "C" int df_cuda_device_count(df_status *st) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
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
