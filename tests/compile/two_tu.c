/* The two-translation-unit use: cc -DDATAFLOW_IMPLEMENTATION two_tu.c dataflow.c */
#include "../../dataflow.h"
#include <stdio.h>
int main(void) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output prod = df_mul(g, df_scalar_i32(g, 6), df_scalar_i32(g, 7));
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *out = NULL;
    df_session_run(s, NULL, NULL, 0, &prod, &out, 1, NULL, 0, &st);
    int ok = st.code == DF_OK && *(int32_t *)df_tensor_data(out) == 42;
    printf("two translation units: %s\n", ok ? "ok" : st.message);
    df_tensor_release(out);
    df_session_free(s);
    df_graph_free(g);
    return ok ? 0 : 1;
}
