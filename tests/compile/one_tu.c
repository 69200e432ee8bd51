/* The one-translation-unit use: the implementation is pulled in by the header. */
#define DATAFLOW_IMPLEMENTATION
#include "../../dataflow.h"
#include <stdio.h>
int main(void) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output sum = df_add(g, df_scalar_f32(g, 2.0f), df_scalar_f32(g, 3.0f));
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *out = NULL;
    df_session_run(s, NULL, NULL, 0, &sum, &out, 1, NULL, 0, &st);
    int ok = st.code == DF_OK && *(float *)df_tensor_data(out) == 5.0f;
    printf("one translation unit: %s\n", ok ? "ok" : st.message);
    df_tensor_release(out);
    df_session_free(s);
    df_graph_free(g);
    return ok ? 0 : 1;
}
