/* A program that uses dataflow as an installed or embedded library would: it includes only
   dataflow.h and links the library (tests/packaging/check.sh builds it through find_package,
   add_subdirectory and pkg-config). Exits 0 when the graph gives the right value. A GPU build
   (DATAFLOW_CUDA, which the library's users get from it) runs the product on the first GPU where
   one is visible. */
#include "dataflow.h"
#include <stdio.h>
#include <string.h>

int main(void) {
    /* The header and the library it links must be the same release. */
    if (strcmp(df_version(), DF_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: library %s, header %s\n", df_version(), DF_VERSION_STRING);
        return 1;
    }
    df_status st;
    int n_gpus = 0;
#ifdef DATAFLOW_CUDA
    n_gpus = df_cuda_device_count(&st);
    if (st.code != DF_OK) { fprintf(stderr, "consumer: df_cuda_device_count: %s\n", st.message); return 1; }
#endif
#ifdef DATAFLOW_MPI
    /* An MPI build: its users see the transport's entry point, and it links (it runs only
       under mpirun, so it is not called). */
    df_code (*volatile mpi_init)(int *, char ***, const char **, df_status *) = df_mpi_init;
    if (!mpi_init) return 1;
#endif
    df_graph *g = df_graph_new();
    const int64_t dims[2] = {2, 2};
    const float x_data[4] = {1, 2, 3, 4}, w_data[4] = {5, 6, 7, 8};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, dims);
    df_tensor *w_value = df_tensor_from_data(DF_FLOAT, 2, dims, w_data, sizeof w_data, &st);
    df_output w = df_const(g, w_value);
    df_tensor_release(w_value);
    /* sum([[1,2],[3,4]] @ [[5,6],[7,8]]) + 1 = 19 + 22 + 43 + 50 + 1 */
    if (n_gpus > 0) df_graph_push_device(g, "/gpu:0");
    df_output product = df_matmul(g, x, w, 0, 0);
    if (n_gpus > 0) df_graph_pop_device(g);
    df_output y = df_add(g, df_reduce_sum(g, product, 0, NULL, 0), df_scalar_f32(g, 1));
    if (df_graph_status(g)->code != DF_OK) {
        fprintf(stderr, "consumer: building the graph: %s\n", df_graph_status(g)->message);
        return 1;
    }
    df_session_options opts = {0};
    opts.num_gpu_devices = n_gpus;
    df_session *s = df_session_new(g, &opts, &st);
    if (!s) { fprintf(stderr, "consumer: session: %s\n", st.message); return 1; }
    df_tensor *feed = df_tensor_from_data(DF_FLOAT, 2, dims, x_data, sizeof x_data, &st);
    df_tensor *out = NULL;
    int ok = 0;
    if (df_session_run(s, &x, &feed, 1, &y, &out, 1, NULL, 0, &st) != DF_OK) {
        fprintf(stderr, "consumer: run: %s\n", st.message);
    } else {
        float v = *(const float *)df_tensor_data(out);
        ok = v == 135.0f;
        printf("consumer: dataflow %s computed %g%s (%s)\n", df_version(), v, n_gpus > 0 ? " on a GPU" : "",
               ok ? "ok" : "expected 135");
    }
    df_tensor_release(out);
    df_tensor_release(feed);
    df_session_free(s);
    df_graph_free(g);
    return ok ? 0 : 1;
}
