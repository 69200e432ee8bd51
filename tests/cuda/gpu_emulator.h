/* gpu_emulator.h - what the host emulation of the GPU (tests/cuda/gpu_emulator.c) adds for tests.

   The emulator defines every function of dataflow.h's DATAFLOW_CUDA section; link it instead of
   dataflow_cuda.o and compile dataflow.c with -DDATAFLOW_CUDA. Device memory is host memory
   whose addresses carry a tag bit, so a device pointer dereferenced on the host faults at once.
   Environment: DF_EMULATED_GPUS (how many GPUs; default 1, 0 allowed) and
   DF_EMULATED_GPU_MEMORY (bytes of memory per GPU, with an optional K, M, G or T suffix;
   default: no limit beyond half of the host's memory). */
#ifndef DF_GPU_EMULATOR_H
#define DF_GPU_EMULATOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if p points into live emulated device memory (a region from df_cuda_region_alloc, which
   df_cuda_alloc's blocks come from); 0 for host pointers, NULL and freed regions. */
int     df_emu_is_device_pointer(const void *p);
/* Memory of each emulated GPU in bytes (0: no limit), replacing DF_EMULATED_GPU_MEMORY. A region
   that would take a GPU past it is refused (df_cuda_region_alloc returns NULL), so allocations
   fail with DF_RESOURCE_EXHAUSTED. Regions already made stay. */
void    df_emu_set_memory_limit(size_t bytes);
/* Process-wide counters since start (never reset; tests compare differences). launches: calls
   that ran device work (the kernels, df_cuda_memcpy_d2d, df_cuda_gemm_f32 and
   df_cuda_elementwise_f32 with at least one element); h2d and d2h: copies of at least one byte
   between host and device (df_cuda_memcpy_* and df_cuda_copy_to_*). */
int64_t df_emu_launches(void);
int64_t df_emu_h2d_copies(void);
int64_t df_emu_d2h_copies(void);
int64_t df_emu_captures_refused(void);   /* df_cuda_capture_begin calls (all refused) */
/* Regions of pinned host memory made (df_cuda_pinned_alloc) since start. */
int64_t df_emu_pinned_regions(void);
/* Bytes of the live regions of all emulated GPUs together. */
int64_t df_emu_bytes_in_use(void);

#ifdef __cplusplus
}
#endif
#endif /* DF_GPU_EMULATOR_H */
