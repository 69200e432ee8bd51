/* Prints the number of visible CUDA GPUs (0 without a driver or device): build.sh runs the GPU
   tests only when it is above 0, and counts them as skipped otherwise. */
#include "../../dataflow.h"
#include <stdio.h>
int main(void) {
    df_status st;
    int n = df_cuda_device_count(&st);
    printf("%d\n", st.code == DF_OK ? n : 0);
    if (st.code != DF_OK) fprintf(stderr, "%s\n", st.message);
    return 0;
}
