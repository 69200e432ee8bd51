/* force_gpu.h - every session of a test suite on a GPU, without editing the suite:

       cc ... -DDATAFLOW_CUDA -include tests/cuda/force_gpu.h tests/test_ops.c ... tests/cuda/force_gpu.c

   df_session_new becomes df_test_gpu_session_new (tests/cuda/force_gpu.c, compiled without this
   header), which asks for one GPU where the options ask for none. The placer then puts every
   node that has a GPU kernel and no device request on /gpu:0, so the suite's own checks run
   against the GPU kernels, transfers and memory types. With DF_TEST_CUDA_GRAPHS=1 in the
   environment, every session also has cuda_graphs on. */
#ifndef DF_FORCE_GPU_H
#define DF_FORCE_GPU_H
#include "../../dataflow.h"

#ifdef __cplusplus
extern "C" {
#endif
/* df_session_new with num_gpu_devices = 1 where opts (NULL: the defaults) leaves it 0. */
df_session *df_test_gpu_session_new(df_graph *g, const df_session_options *opts, df_status *st);
/* df_session_free, counting what cuda_graphs did first (DF_TEST_CUDA_GRAPHS=1 turns it on). */
void df_test_gpu_session_free(df_session *s);
#ifdef __cplusplus
}
#endif

#define df_session_new df_test_gpu_session_new
#define df_session_free df_test_gpu_session_free
#endif /* DF_FORCE_GPU_H */
