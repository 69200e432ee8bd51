/* make_graphs.c - GraphDefs for ./build.sh's checks of dfrun's bounds, written into DIR:
     loop.pb   a while loop that never ends (x >= 0; x = x + 1 in float32 stays there); fetch "out"
     fill.pb   Fill of 1.0 to the shape fed to "dims" (int32 [1]); fetch "big"
     dims.npy  [268435456]: a 1 GiB float32 tensor
     save.pb   SaveV2 of x to the path "../escaped.ckpt" before fetch "out" (a control edge)
     small.pb  i = 0, x = 1; while i < 5: i += 1, x *= 2 (the Mul on /cpu:1); fetch "out" (32),
               for --trace with --devices cpu:2 (Sends and Recvs between the two)
   Usage: make_graphs DIR. Built with dataflow.c as the other examples are. */
#include "../../dataflow.h"
#include <stdio.h>
#include <stdlib.h>

static df_output loop_cond(df_graph *g, void *user, const df_output *vars) {
    (void)user;
    return df_greater_equal(g, vars[0], df_scalar_f32(g, 0.0f));
}
static void loop_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    (void)user;
    next[0] = df_add(g, vars[0], df_scalar_f32(g, 1.0f));
}
static df_output small_cond(df_graph *g, void *user, const df_output *vars) {
    (void)user;
    return df_less(g, vars[0], df_scalar_i32(g, 5));
}
static void small_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    (void)user;
    next[0] = df_add(g, vars[0], df_scalar_i32(g, 1));
    df_graph_push_device(g, "/cpu:1");
    next[1] = df_mul(g, vars[1], df_scalar_f32(g, 2.0f));
    df_graph_pop_device(g);
}
static df_output named_identity(df_graph *g, const char *name, df_output x, df_node *after) {
    df_op_builder *b = df_op_new(g, "Identity", name);
    df_op_add_input(b, x);
    if (after) df_op_add_control_input(b, after);
    return (df_output){df_op_finish(b), 0};
}
static int write_graph(df_graph *g, const char *dir, const char *file) {
    char path[1024];
    void *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (df_graph_status(g)->code || df_graph_export_graphdef(g, &data, &len) != DF_OK) {
        fprintf(stderr, "make_graphs: %s: %s\n", file, df_graph_status(g)->message);
        return 1;
    }
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(data, 1, len, f) != len;
    if (f && fclose(f)) bad = 1;
    free(data);
    if (bad) fprintf(stderr, "make_graphs: cannot write %s\n", path);
    return bad;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: make_graphs DIR\n"); return 2; }
    int bad = 0;
    df_graph *g = df_graph_new();
    df_output init = df_scalar_f32(g, 0.0f), out;
    df_while_loop(g, 1, &init, loop_cond, loop_body, NULL, NULL, &out);
    named_identity(g, "out", out, NULL);
    bad |= write_graph(g, argv[1], "loop.pb");
    df_graph_free(g);

    g = df_graph_new();
    df_output dims = df_placeholder(g, "dims", DF_INT32, 1, (const int64_t[]){1});
    df_op_builder *b = df_op_new(g, "Fill", "fill");
    df_op_add_input(b, dims);
    df_op_add_input(b, df_scalar_f32(g, 1.0f));
    named_identity(g, "big", (df_output){df_op_finish(b), 0}, NULL);
    bad |= write_graph(g, argv[1], "fill.pb");
    df_graph_free(g);
    int32_t n = 1 << 28;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, (const int64_t[]){1}, &n, sizeof n, NULL);
    char path[1024];
    snprintf(path, sizeof path, "%s/dims.npy", argv[1]);
    if (!t || df_tensor_write_npy(t, path) != DF_OK) { fprintf(stderr, "make_graphs: cannot write %s\n", path); bad = 1; }
    df_tensor_release(t);

    g = df_graph_new();
    const char *where = "../escaped.ckpt", *name = "x", *slice = "";
    df_tensor *p = df_tensor_new_strings(0, NULL, &where, NULL);
    df_tensor *nm = df_tensor_new_strings(1, (const int64_t[]){1}, &name, NULL);
    df_tensor *sl = df_tensor_new_strings(1, (const int64_t[]){1}, &slice, NULL);
    df_output x = df_scalar_f32(g, 3.0f);
    b = df_op_new(g, "SaveV2", "save");
    df_op_add_input(b, df_const(g, p));
    df_op_add_input(b, df_const(g, nm));
    df_op_add_input(b, df_const(g, sl));
    df_op_add_input_list(b, &x, 1);
    df_op_set_attr_type_list(b, "dtypes", (const df_dtype[]){DF_FLOAT}, 1);
    named_identity(g, "out", x, df_op_finish(b));
    df_tensor_release(p); df_tensor_release(nm); df_tensor_release(sl);
    bad |= write_graph(g, argv[1], "save.pb");
    df_graph_free(g);

    g = df_graph_new();
    df_output vars[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 1.0f)}, outs[2];
    df_while_loop(g, 2, vars, small_cond, small_body, NULL, NULL, outs);
    named_identity(g, "out", outs[1], NULL);
    bad |= write_graph(g, argv[1], "small.pb");
    df_graph_free(g);
    return bad;
}
