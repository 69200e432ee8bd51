/* Misuse of the per-iteration values (TensorArrays, TensorLists, Optionals, DF_VARIANT
   tensors): each gives a status that names the node, at graph build or in the run, never a
   crash. The cases: an unwritten TensorArray element read (element shape unknown), an element
   of the wrong shape or dtype written, a closed array read or written, a handle that no
   TensorArrayV3 made (a float, a stack's handle, a handle fetched from an earlier run and fed
   back: the array it named is gone), OptionalGetValue of OptionalNone, TensorListGetItem out
   of range, a list read with the wrong element dtype, a list where an optional is wanted and
   the other way round, and variants given to ops that take numbers (Add, Sin, Cast) at graph
   build.

   Fetching and feeding a variant (documented here): df_session_run fetches a TensorList or
   Optional as a DF_VARIANT scalar tensor (df_tensor_data is opaque; df_tensor_describe shows
   the payload); it can be fed back through a variant Placeholder in the same or another
   session of this process. It cannot be written to a file (.npy), nor made by
   df_tensor_new, nor sent to another process (the wire refuses variants). A variant
   Placeholder left unfed, or fed a float, is a status naming the placeholder. */
#include "harness.h"

/* ---- helpers ---- */
static df_output f32v(df_graph *g, int n, const float *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_FLOAT, 1, &d, v, (size_t)n * sizeof(float), NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output i32v(df_graph *g, int n, const int32_t *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, &d, v, (size_t)n * 4, NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
/* A node of `type` named `name` with inputs in[0..n-1] and, when t is nonzero, attribute
   `attr` = t. */
static df_node *node(df_graph *g, const char *type, const char *name, const df_output *in, int n, const char *attr, df_dtype t) {
    df_op_builder *b = df_op_new(g, type, name);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    if (attr && t) df_op_set_attr_type(b, attr, t);
    return df_op_finish(b);
}
static df_output out0(df_node *n) { return (df_output){n, 0}; }

/* A TensorArrayV3 named `name` of `size` floats with element shape (rank, dims) (-1: any). */
static df_tensor_array ta_new(df_graph *g, const char *name, int size, int rank, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "TensorArrayV3", name);
    df_op_add_input(b, df_scalar_i32(g, size));
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_bool(b, "clear_after_read", 0);
    df_op_set_attr_shape(b, "element_shape", rank, dims);
    df_node *n = df_op_finish(b);
    df_tensor_array a = {{n, 0}, {n, 1}, DF_FLOAT};
    return a;
}
static df_output ta_write(df_graph *g, const char *name, df_output handle, int index, df_output v, df_output flow) {
    df_output in[4] = {handle, df_scalar_i32(g, index), v, flow};
    return out0(node(g, "TensorArrayWriteV3", name, in, 4, NULL, 0));
}
static df_output ta_read(df_graph *g, const char *name, df_output handle, int index, df_output flow) {
    df_output in[3] = {handle, df_scalar_i32(g, index), flow};
    return out0(node(g, "TensorArrayReadV3", name, in, 3, "dtype", DF_FLOAT));
}

/* The graph builds; a run fetching `fetch` (and running `target`) fails with `code`, its
   message holding `needle` and naming node `who`. */
static void expect_run_error(df_graph *g, df_output fetch, df_node *target, df_code code, const char *needle,
                             const char *who) {
    df_status st;
    CHECK_OK(df_graph_status(g));
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    if (!s) return;
    df_tensor *v = NULL;
    df_session_run(s, NULL, NULL, 0, fetch.node ? &fetch : NULL, fetch.node ? &v : NULL, fetch.node ? 1 : 0,
                   target ? &target : NULL, target ? 1 : 0, &st);
    CHECK_STATUS(&st, code, needle);
    CHECK_MSG(strstr(st.message, who) != NULL, "the status does not name node '%s': %s", who, st.message);
    CHECK(v == NULL);
    df_tensor_release(v);
    df_session_free(s);
}
/* Building failed with `code`, the graph's status holding `needle` and naming `who`. */
static void expect_build_error(df_graph *g, df_code code, const char *needle, const char *who) {
    const df_status *st = df_graph_status(g);
    CHECK_STATUS(st, code, needle);
    CHECK_MSG(strstr(st->message, who) != NULL, "the status does not name node '%s': %s", who, st->message);
}

/* ---- TensorArrays ---- */
DF_TEST(cf_misuse_ta_read_of_unwritten_element) {
    df_graph *g = df_graph_new();
    df_tensor_array a = ta_new(g, "ta", 3, -1, NULL);   /* element shape unknown: no zeros to give */
    df_output w = ta_write(g, "w0", a.handle, 0, f32v(g, 2, (float[]){1, 2}), a.flow);
    expect_run_error(g, ta_read(g, "read_unwritten", a.handle, 2, w), NULL, DF_INVALID_ARGUMENT,
                     "Could not read from TensorArray index 2", "read_unwritten");
    df_graph_free(g);
}

DF_TEST(cf_misuse_ta_element_of_wrong_shape_or_dtype) {
    int64_t two = 2;
    {   /* the array's element_shape [2], a [3] written */
        df_graph *g = df_graph_new();
        df_tensor_array a = ta_new(g, "ta", 2, 1, &two);
        df_output w = ta_write(g, "w_wide", a.handle, 0, f32v(g, 3, (float[]){1, 2, 3}), a.flow);
        expect_run_error(g, w, NULL, DF_INVALID_ARGUMENT, "shape", "w_wide");
        df_graph_free(g);
    }
    {   /* element shape unknown: the second write's shape differs from the first one's, then a stack */
        df_graph *g = df_graph_new();
        df_tensor_array a = ta_new(g, "ta", 2, -1, NULL);
        df_output w0 = ta_write(g, "w0", a.handle, 0, f32v(g, 2, (float[]){1, 2}), a.flow);
        df_output w1 = ta_write(g, "w1", a.handle, 1, f32v(g, 3, (float[]){1, 2, 3}), w0);
        df_tensor_array at = df_tensor_array_at_flow(a, w1);
        df_output stacked = df_tensor_array_stack(g, at);
        CHECK_OK(df_graph_status(g));
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        df_tensor *v = NULL;
        df_session_run(s, NULL, NULL, 0, &stacked, &v, 1, NULL, 0, &st);
        CHECK(st.code != DF_OK && st.code != DF_INTERNAL);
        CHECK_MSG(strstr(st.message, df_node_name(stacked.node)) || strstr(st.message, "w1"),
                  "names neither the stack nor the write: %s", st.message);
        df_tensor_release(v);
        df_session_free(s);
        df_graph_free(g);
    }
    {   /* an int32 element written to a float array: refused when the graph is built */
        df_graph *g = df_graph_new();
        df_tensor_array a = ta_new(g, "ta", 2, -1, NULL);
        df_output w = ta_write(g, "w_int", a.handle, 0, i32v(g, 2, (int32_t[]){1, 2}), a.flow);
        df_status st;
        df_session *s = df_graph_status(g)->code ? NULL : df_session_new(g, NULL, &st);
        if (s) {   /* (the dtype is known only at run time: then the run must refuse it) */
            df_tensor *v = NULL;
            df_session_run(s, NULL, NULL, 0, &w, &v, 1, NULL, 0, &st);
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "w_int");
            df_tensor_release(v);
            df_session_free(s);
        } else {
            expect_build_error(g, DF_INVALID_ARGUMENT, "", "w_int");
        }
        df_graph_free(g);
    }
}

DF_TEST(cf_misuse_ta_closed_array) {
    df_graph *g = df_graph_new();
    df_tensor_array a = ta_new(g, "ta", 2, -1, NULL);
    df_output w = ta_write(g, "w0", a.handle, 0, f32v(g, 2, (float[]){1, 2}), a.flow);
    df_op_builder *b = df_op_new(g, "TensorArrayCloseV3", "close");
    df_op_add_input(b, a.handle);
    df_op_add_control_input(b, w.node);
    df_node *close = df_op_finish(b);
    /* a read after the close (a control edge orders it) */
    b = df_op_new(g, "TensorArrayReadV3", "read_closed");
    df_op_add_input(b, a.handle);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_op_add_input(b, w);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_add_control_input(b, close);
    df_output r = out0(df_op_finish(b));
    expect_run_error(g, r, NULL, DF_INVALID_ARGUMENT, "closed", "read_closed");
    /* and a write after it */
    b = df_op_new(g, "TensorArrayWriteV3", "write_closed");
    df_op_add_input(b, a.handle);
    df_op_add_input(b, df_scalar_i32(g, 1));
    df_op_add_input(b, f32v(g, 2, (float[]){3, 4}));
    df_op_add_input(b, w);
    df_op_add_control_input(b, close);
    df_output w2 = out0(df_op_finish(b));
    expect_run_error(g, w2, NULL, DF_INVALID_ARGUMENT, "closed", "write_closed");
    df_graph_free(g);
}

DF_TEST(cf_misuse_ta_forged_handles) {
    {   /* a float where the handle goes: refused at build */
        df_graph *g = df_graph_new();
        df_output in[3] = {df_scalar_f32(g, 0), df_scalar_i32(g, 0), df_scalar_f32(g, 0)};
        node(g, "TensorArrayReadV3", "read_float_handle", in, 3, "dtype", DF_FLOAT);
        expect_build_error(g, DF_INVALID_ARGUMENT, "", "read_float_handle");
        df_graph_free(g);
    }
    {   /* TensorArrayGradV3 of a float */
        df_graph *g = df_graph_new();
        df_output in[2] = {df_scalar_f32(g, 1), df_scalar_f32(g, 0)};
        df_op_builder *b = df_op_new(g, "TensorArrayGradV3", "grad_of_float");
        df_op_add_input(b, in[0]);
        df_op_add_input(b, in[1]);
        df_op_set_attr_string(b, "source", "gradients");
        df_op_finish(b);
        expect_build_error(g, DF_INVALID_ARGUMENT, "", "grad_of_float");
        df_graph_free(g);
    }
    {   /* a stack's handle (a resource, but not an array's): read, and TensorArrayGradV3 of it */
        df_graph *g = df_graph_new();
        df_output max = df_scalar_i32(g, 4);
        df_output h = out0(node(g, "StackV2", "stack", &max, 1, "elem_type", DF_FLOAT));
        df_output r = ta_read(g, "read_stack_handle", h, 0, df_scalar_f32(g, 0));
        expect_run_error(g, r, NULL, DF_INVALID_ARGUMENT, "", "read_stack_handle");
        df_op_builder *b = df_op_new(g, "TensorArrayGradV3", "grad_of_stack");
        df_op_add_input(b, h);
        df_op_add_input(b, df_scalar_f32(g, 0));
        df_op_set_attr_string(b, "source", "gradients");
        df_node *gr = df_op_finish(b);
        expect_run_error(g, (df_output){gr, 1}, NULL, DF_INVALID_ARGUMENT, "", "grad_of_stack");
        df_graph_free(g);
    }
    {   /* an array's handle fetched from one run and fed to the next: the array is gone */
        df_graph *g = df_graph_new();
        df_tensor_array a = ta_new(g, "ta", 2, -1, NULL);
        df_output w = ta_write(g, "w0", a.handle, 0, f32v(g, 2, (float[]){1, 2}), a.flow);
        df_output ph = df_placeholder(g, "h", DF_RESOURCE, 0, NULL);
        df_output r = ta_read(g, "read_stale", ph, 0, df_scalar_f32(g, 0));
        df_status st;
        if (!df_graph_status(g)->code) {
            df_session *s = df_session_new(g, NULL, &st);
            df_tensor *hv[2] = {NULL, NULL};
            df_output f[2] = {a.handle, w};
            df_session_run(s, NULL, NULL, 0, f, hv, 2, NULL, 0, &st);
            if (st.code == DF_OK) {   /* a handle may be fetched: it is a resource scalar */
                df_tensor *v = NULL;
                CHECK(hv[0] && df_tensor_dtype(hv[0]) == DF_RESOURCE);
                df_session_run(s, &ph, &hv[0], 1, &r, &v, 1, NULL, 0, &st);
                CHECK(st.code != DF_OK && st.code != DF_INTERNAL);
                CHECK_MSG(strstr(st.message, "read_stale") != NULL, "%s", st.message);
                CHECK(v == NULL);
                df_tensor_release(v);
            } else {
                CHECK(st.code != DF_INTERNAL);
                CHECK_MSG(strstr(st.message, "ta") != NULL, "%s", st.message);
            }
            df_tensor_release(hv[0]);
            df_tensor_release(hv[1]);
            df_session_free(s);
        } else {
            expect_build_error(g, DF_INVALID_ARGUMENT, "", "h");
        }
        df_graph_free(g);
    }
}

/* ---- TensorLists and Optionals ---- */
static df_output list_of(df_graph *g, const char *name, df_output x) {
    df_output in[2] = {x, df_scalar_i32(g, -1)};
    return out0(node(g, "TensorListFromTensor", name, in, 2, NULL, 0));
}

DF_TEST(cf_misuse_optional_get_value_of_none) {
    df_graph *g = df_graph_new();
    df_output none = out0(node(g, "OptionalNone", "none", NULL, 0, NULL, 0));
    df_op_builder *b = df_op_new(g, "OptionalGetValue", "get_none");
    df_op_add_input(b, none);
    df_dtype t = DF_FLOAT;
    int rank = 0;
    const int64_t *dims[1] = {NULL};
    df_op_set_attr_type_list(b, "output_types", &t, 1);
    df_op_set_attr_shape_list(b, "output_shapes", 1, &rank, dims);
    df_output v = out0(df_op_finish(b));
    expect_run_error(g, v, NULL, DF_INVALID_ARGUMENT, "does not have a value", "get_none");
    df_graph_free(g);
}

DF_TEST(cf_misuse_tensor_list_get_item_out_of_range_and_wrong_dtype) {
    df_graph *g = df_graph_new();
    int64_t d[2] = {2, 1};
    df_tensor *x = df_tensor_from_data(DF_FLOAT, 2, d, (float[]){1, 2}, 8, NULL);
    df_output l = list_of(g, "list", df_const(g, x));
    df_tensor_release(x);
    df_output in[3] = {l, df_scalar_i32(g, 2), df_scalar_i32(g, -1)};
    df_output past = out0(node(g, "TensorListGetItem", "get_past_end", in, 3, "element_dtype", DF_FLOAT));
    expect_run_error(g, past, NULL, DF_INVALID_ARGUMENT, "Trying to access element 2 in a list with 2 elements",
                     "get_past_end");
    in[1] = df_scalar_i32(g, -3);
    df_output neg = out0(node(g, "TensorListGetItem", "get_negative", in, 3, "element_dtype", DF_FLOAT));
    expect_run_error(g, neg, NULL, DF_INVALID_ARGUMENT, "element -3", "get_negative");
    in[1] = df_scalar_i32(g, 0);
    df_output as_int = out0(node(g, "TensorListGetItem", "get_as_int", in, 3, "element_dtype", DF_INT32));
    expect_run_error(g, as_int, NULL, DF_INVALID_ARGUMENT, "int32 but list elements float", "get_as_int");
    df_output sin[2] = {l, df_scalar_i32(g, -1)};
    df_output st_d = out0(node(g, "TensorListStack", "stack_as_double", sin, 2, "element_dtype", DF_DOUBLE));
    expect_run_error(g, st_d, NULL, DF_INVALID_ARGUMENT, "", "stack_as_double");
    df_output pin[2] = {l, df_scalar_i32(g, 7)};
    df_output push_int = out0(node(g, "TensorListPushBack", "push_int", pin, 2, NULL, 0));
    expect_run_error(g, push_int, NULL, DF_INVALID_ARGUMENT, "op elements int32 but list elements float", "push_int");
    df_graph_free(g);
}

DF_TEST(cf_misuse_list_and_optional_swapped) {
    df_graph *g = df_graph_new();
    df_output l = list_of(g, "list", f32v(g, 2, (float[]){1, 2}));
    df_output none = out0(node(g, "OptionalNone", "none", NULL, 0, NULL, 0));
    df_output has = out0(node(g, "OptionalHasValue", "has_of_list", &l, 1, NULL, 0));
    expect_run_error(g, has, NULL, DF_INVALID_ARGUMENT, "not an optional", "has_of_list");
    df_output len = out0(node(g, "TensorListLength", "length_of_optional", &none, 1, NULL, 0));
    expect_run_error(g, len, NULL, DF_INVALID_ARGUMENT, "", "length_of_optional");
    df_graph_free(g);
}

/* ---- variant tensors: at graph build, fed and fetched ---- */
DF_TEST(cf_misuse_variant_into_number_ops_at_build) {
    static const char *const ops[] = {"Add", "Sin", "Cast", "Tanh", "Sum"};
    for (int k = 0; k < 5; k++) {
        df_graph *g = df_graph_new();
        df_output l = list_of(g, "list", f32v(g, 2, (float[]){1, 2}));
        df_op_builder *b = df_op_new(g, ops[k], "numbers_only");
        df_op_add_input(b, l);
        if (k == 0) df_op_add_input(b, l);
        if (k == 2) df_op_set_attr_type(b, "DstT", DF_FLOAT);
        if (k == 4) df_op_add_input(b, df_scalar_i32(g, 0));
        CHECK_MSG(df_op_finish(b) == NULL, "%s took a variant", ops[k]);
        expect_build_error(g, DF_INVALID_ARGUMENT, "variant", "numbers_only");
        df_graph_free(g);
    }
    /* the typed helpers too */
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "pv", DF_VARIANT, 0, NULL);
    df_output y = df_add(g, p, df_scalar_f32(g, 1));
    CHECK(y.node == NULL);
    CHECK(df_graph_status(g)->code == DF_INVALID_ARGUMENT);
    CHECK_MSG(strstr(df_graph_status(g)->message, "variant") != NULL, "%s", df_graph_status(g)->message);
    df_graph_free(g);
}

DF_TEST(cf_misuse_variant_fetch_and_feed) {
    df_graph *g = df_graph_new();
    df_output l = list_of(g, "list", f32v(g, 3, (float[]){1, 2, 3}));
    df_output p = df_placeholder(g, "pv", DF_VARIANT, 0, NULL);
    df_output len = out0(node(g, "TensorListLength", "length", &p, 1, NULL, 0));
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    if (!s) { df_graph_free(g); return; }
    /* fetched: a variant scalar that describes its list */
    df_tensor *lv = NULL, *n = NULL;
    df_session_run(s, NULL, NULL, 0, &l, &lv, 1, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(lv && df_tensor_dtype(lv) == DF_VARIANT && df_tensor_rank(lv) == 0);
    char desc[256] = "";
    if (lv) df_tensor_describe(lv, desc, sizeof desc);
    CHECK_MSG(strstr(desc, "variant") != NULL, "%s", desc);
    /* fed back */
    df_session_run(s, &p, &lv, 1, &len, &n, 1, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(n && *(const int32_t *)df_tensor_data(n) == 3);
    df_tensor_release(n);
    n = NULL;
    /* not fed */
    df_session_run(s, NULL, NULL, 0, &len, &n, 1, NULL, 0, &st);
    CHECK(st.code != DF_OK && st.code != DF_INTERNAL);
    CHECK_MSG(strstr(st.message, "pv") != NULL, "%s", st.message);
    CHECK(n == NULL);
    /* fed a float */
    df_tensor *f = df_tensor_scalar_f32(1);
    df_session_run(s, &p, &f, 1, &len, &n, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "pv");
    CHECK(n == NULL);
    df_tensor_release(f);
    /* a variant that is not a list (an optional) fed where a list is read */
    df_output none = out0(node(g, "OptionalNone", "none", NULL, 0, NULL, 0));
    (void)none;
    df_tensor_release(lv);
    df_session_free(s);
    /* the optional, fetched from another session, fed where the list goes */
    df_session *s2 = df_session_new(g, NULL, &st);
    df_tensor *ov = NULL;
    if (s2) {
        df_session_run(s2, NULL, NULL, 0, &none, &ov, 1, NULL, 0, &st);
        CHECK_OK(&st);
        df_session_run(s2, &p, &ov, 1, &len, &n, 1, NULL, 0, &st);
        CHECK(st.code != DF_OK && st.code != DF_INTERNAL);
        CHECK_MSG(strstr(st.message, "length") != NULL, "%s", st.message);
        CHECK(n == NULL);
        df_tensor_release(ov);
        df_session_free(s2);
    }
    /* a variant cannot be written to a file */
    char path[512];
    snprintf(path, sizeof path, "%s/variant.npy", df_test_tmpdir());
    df_graph_free(g);
    g = df_graph_new();
    l = list_of(g, "list", f32v(g, 1, (float[]){1}));
    s = df_session_new(g, NULL, &st);
    lv = NULL;
    if (s) df_session_run(s, NULL, NULL, 0, &l, &lv, 1, NULL, 0, &st);
    CHECK(lv != NULL);
    if (lv) CHECK(df_tensor_write_npy(lv, path) != DF_OK);
    df_tensor_release(lv);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- found by the random partition corpus (tests/test_partition_random.c, TensorArray sweep) ---- */

/* df_tensor_array_stack of an array that got no writes (a loop that ran 0 times) failed with
   UNIMPLEMENTED ("size zero, but element shape <unknown>"): the gather was not told the element
   shape the array was made with, as TensorFlow's TensorArray.stack tells it. */
DF_TEST(cf_empty_array_of_known_element_shape_stacks) {
    df_graph *g = df_graph_new();
    int64_t dims[2] = {2, 3};
    df_tensor_array a = df_tensor_array_new(g, DF_FLOAT, df_scalar_i32(g, 0), 0, 2, dims);
    df_output stacked = df_tensor_array_stack(g, a);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *v = NULL;
    if (s) df_session_run(s, NULL, NULL, 0, &stacked, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(v && df_tensor_rank(v) == 3 && df_tensor_dim(v, 0) == 0 && df_tensor_dim(v, 1) == 2 && df_tensor_dim(v, 2) == 3);
    df_tensor_release(v);
    df_session_free(s);
    /* an unknown element shape still cannot be stacked empty (TensorFlow's error) */
    a = df_tensor_array_new(g, DF_FLOAT, df_scalar_i32(g, 0), 0, -1, NULL);
    stacked = df_tensor_array_stack(g, a);
    expect_run_error(g, stacked, NULL, DF_UNIMPLEMENTED, "not fully defined", df_node_name(stacked.node));
    df_graph_free(g);
}

/* An outer loop whose body makes a TensorArray on CPU:1 and fills it in an inner loop; the
   outer loop's gradient keeps the array's handle per iteration on a stack of CPU:0. The placer
   colocated the stack push with the handle it pushes, tying the stack's group to CPU:1, and
   refused the session ("Cannot colocate nodes"). Values and gradient as on one device. */
typedef struct nest { df_tensor_array ta; df_output x; const char *array_device; } nest;
static df_output nest_inner_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 2));
}
static void nest_inner_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    nest *n = (nest *)user;
    df_output value = df_tanh(g, df_mul(g, v[2], n->x));
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_tensor_array_write(g, df_tensor_array_at_flow(n->ta, v[1]), v[0], value).flow;
    next[2] = value;
}
static df_output nest_outer_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 2));
}
static void nest_outer_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    nest *n = (nest *)user;
    nest inner = *n;
    df_graph_push_device(g, n->array_device);
    int64_t d = 2;
    inner.ta = df_tensor_array_new(g, DF_FLOAT, df_scalar_i32(g, 2), 0, 1, &d);
    df_graph_pop_device(g);
    df_output init[3] = {df_scalar_i32(g, 0), inner.ta.flow, v[1]}, outs[3];
    df_while_loop(g, 3, init, nest_inner_cond, nest_inner_body, &inner, NULL, outs);
    int32_t axis = 0;
    df_output sum = df_reduce_sum(g, df_tensor_array_stack(g, df_tensor_array_at_flow(inner.ta, outs[1])), 1, &axis, 0);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_tanh(g, sum);
}
DF_TEST(cf_nested_loop_gradient_pushes_array_handle_across_devices) {
    df_tensor *want[2] = {NULL, NULL};
    for (int devices = 1; devices <= 2; devices++) {
        df_graph *g = df_graph_new();
        nest n;
        memset(&n, 0, sizeof n);
        n.x = df_placeholder(g, "x", DF_FLOAT, 1, (int64_t[]){2});
        n.array_device = devices == 2 ? "/cpu:1" : "/cpu:0";
        df_graph_push_device(g, "/cpu:0");
        df_output init[2] = {df_scalar_i32(g, 0), n.x}, outs[2];
        CHECK_EQ_INT(df_while_loop(g, 2, init, nest_outer_cond, nest_outer_body, &n, NULL, outs), DF_OK);
        df_output loss = df_reduce_sum(g, outs[1], 0, NULL, 0), dx;
        CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &n.x, &dx), DF_OK);
        df_graph_pop_device(g);
        CHECK_OK(df_graph_status(g));
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.num_cpu_devices = devices;
        df_status st;
        df_session *s = df_session_new(g, &so, &st);
        CHECK_OK(&st);
        df_tensor *xv = df_tensor_from_data(DF_FLOAT, 1, (int64_t[]){2}, (float[]){0.5f, -0.25f}, 8, NULL);
        df_output f[2] = {outs[1], dx};
        df_tensor *got[2] = {NULL, NULL};
        if (s) df_session_run(s, &n.x, &xv, 1, f, got, 2, NULL, 0, &st);
        CHECK_OK(&st);
        if (s && devices == 2) CHECK(df_session_num_partitions(s) >= 2);
        for (int k = 0; k < 2; k++) {
            if (devices == 1) { want[k] = got[k]; continue; }
            CHECK(got[k] && want[k] && df_tensor_nbytes(got[k]) == df_tensor_nbytes(want[k]) &&
                  !memcmp(df_tensor_data(got[k]), df_tensor_data(want[k]), df_tensor_nbytes(got[k])));
            df_tensor_release(got[k]);
        }
        df_tensor_release(xv);
        df_session_free(s);
        df_graph_free(g);
    }
    df_tensor_release(want[0]);
    df_tensor_release(want[1]);
}

/* A variant fetched from a session whose graph runs in a worker (over TCP): the wire cannot
   carry one, and the run says so, naming the node, instead of sending a pointer. */
static void quiet_log(void *user, const char *line) { (void)user; (void)line; }
DF_TEST(cf_misuse_variant_fetch_over_the_wire) {
    df_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.log = quiet_log;
    df_status st;
    df_worker *w = df_worker_start(&wo, &st);
    CHECK_OK(&st);
    if (!w) return;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", df_worker_port(w));
    df_graph *g = df_graph_new();
    df_output l = list_of(g, "remote_list", f32v(g, 2, (float[]){1, 2}));
    df_output len = out0(node(g, "TensorListLength", "remote_length", &l, 1, NULL, 0));
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.target = target;
    df_session *s = df_session_new(g, &so, &st);
    CHECK_OK(&st);
    if (s) {
        df_tensor *v = NULL;
        df_session_run(s, NULL, NULL, 0, &len, &v, 1, NULL, 0, &st);   /* a number: fine */
        CHECK_OK(&st);
        CHECK(v && *(const int32_t *)df_tensor_data(v) == 2);
        df_tensor_release(v);
        v = NULL;
        df_session_run(s, NULL, NULL, 0, &l, &v, 1, NULL, 0, &st);
        CHECK(st.code != DF_OK && st.code != DF_INTERNAL);
        CHECK_MSG(strstr(st.message, "variant") != NULL, "%s", st.message);
        CHECK_MSG(strstr(st.message, "{{node remote_list}}") != NULL, "%s", st.message);
        CHECK(v == NULL);
        df_tensor_release(v);
        df_session_free(s);
    }
    df_graph_free(g);
    df_worker_stop(w);
}
