/* TensorList and Optional ops (DF_VARIANT): values against hand-computed results, TensorFlow's
   error cases (each a status naming the node), lists as values (a change never shows through
   another consumer), elements shared not copied, a list as a loop variable, over two CPU
   devices and several threads, and the gradients of the list and optional ops. */
#include "harness.h"
#ifndef DF_NO_THREADS
#include <pthread.h>
#endif

static df_output f32s(df_graph *g, int rank, const int64_t *dims, const float *v) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    df_tensor *t = df_tensor_from_data(DF_FLOAT, rank, dims, v, (size_t)n * sizeof(float), NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output i32s(df_graph *g, int n, const int32_t *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, &d, v, (size_t)n * 4, NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_node *op(df_graph *g, const char *type, const char *name, const df_output *in, int n, df_dtype element_dtype) {
    df_op_builder *b = df_op_new(g, type, name);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    if (element_dtype) df_op_set_attr_type(b, "element_dtype", element_dtype);
    return df_op_finish(b);
}
static df_output op0(df_graph *g, const char *type, const char *name, const df_output *in, int n, df_dtype element_dtype) {
    df_output o = {op(g, type, name, in, n, element_dtype), 0};
    return o;
}
/* EmptyTensorList of floats with element shape `shape` (an int32 vector, or scalar -1). */
static df_output empty_list(df_graph *g, const char *name, df_output shape, int max) {
    df_output in[2] = {shape, df_scalar_i32(g, max)};
    return op0(g, "EmptyTensorList", name, in, 2, DF_FLOAT);
}
static df_output push(df_graph *g, const char *name, df_output l, df_output x) {
    df_output in[2] = {l, x};
    return op0(g, "TensorListPushBack", name, in, 2, df_output_dtype(x));
}
static df_output stack(df_graph *g, const char *name, df_output l, df_output shape) {
    df_output in[2] = {l, shape};
    return op0(g, "TensorListStack", name, in, 2, DF_FLOAT);
}
static df_output get_item(df_graph *g, const char *name, df_output l, int i, df_output shape, df_dtype t) {
    df_output in[3] = {l, df_scalar_i32(g, i), shape};
    return op0(g, "TensorListGetItem", name, in, 3, t);
}
static df_output set_item(df_graph *g, const char *name, df_output l, int i, df_output x) {
    df_output in[3] = {l, df_scalar_i32(g, i), x};
    return op0(g, "TensorListSetItem", name, in, 3, df_output_dtype(x));
}
static df_output from_tensor(df_graph *g, const char *name, df_output x, df_output shape) {
    df_output in[2] = {x, shape};
    df_op_builder *b = df_op_new(g, "TensorListFromTensor", name);
    df_op_add_input(b, in[0]);
    df_op_add_input(b, in[1]);
    return (df_output){df_op_finish(b), 0};
}
static df_code run(df_graph *g, const df_output *fetches, df_tensor **out, int n, df_status *st) {
    df_session *s = df_session_new(g, NULL, st);
    if (!s) return st->code;
    df_session_run(s, NULL, NULL, 0, fetches, out, n, NULL, 0, st);
    df_session_free(s);
    return st->code;
}
static int floats_are(const df_tensor *t, int n, const float *want) {
    if (!t || df_tensor_dtype(t) != DF_FLOAT || df_tensor_num_elements(t) != n) return 0;
    for (int i = 0; i < n; i++) if (((const float *)df_tensor_data(t))[i] != want[i]) return 0;
    return 1;
}

DF_TEST(tensor_list_push_back_stack_get_item_length) {
    df_graph *g = df_graph_new();
    int64_t d2 = 2;
    df_output l = empty_list(g, "l", i32s(g, 1, (int32_t[]){2}), -1);
    l = push(g, "p1", l, f32s(g, 1, &d2, (float[]){1, 2}));
    l = push(g, "p2", l, f32s(g, 1, &d2, (float[]){3, 4}));
    df_output f[5] = {stack(g, "stack", l, i32s(g, 1, (int32_t[]){-1})),
                      get_item(g, "get", l, 1, i32s(g, 1, (int32_t[]){2}), DF_FLOAT),
                      op0(g, "TensorListLength", "len", &l, 1, 0), {NULL, 0}, l};
    df_op_builder *b = df_op_new(g, "TensorListElementShape", "eshape");
    df_op_add_input(b, l);
    df_op_set_attr_type(b, "shape_type", DF_INT64);
    f[3] = (df_output){df_op_finish(b), 0};
    df_tensor *out[5] = {0};
    df_status st;
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(run(g, f, out, 5, &st), DF_OK);
    CHECK_OK(&st);
    CHECK(floats_are(out[0], 4, (float[]){1, 2, 3, 4}));
    CHECK(out[0] && df_tensor_rank(out[0]) == 2 && df_tensor_dim(out[0], 0) == 2 && df_tensor_dim(out[0], 1) == 2);
    CHECK(floats_are(out[1], 2, (float[]){3, 4}));
    CHECK(out[2] && df_tensor_dtype(out[2]) == DF_INT32 && *(int32_t *)df_tensor_data(out[2]) == 2);
    CHECK(out[3] && df_tensor_dtype(out[3]) == DF_INT64 && df_tensor_num_elements(out[3]) == 1 && *(int64_t *)df_tensor_data(out[3]) == 2);
    /* the list itself comes back as a variant scalar */
    CHECK(out[4] && df_tensor_dtype(out[4]) == DF_VARIANT && df_tensor_rank(out[4]) == 0);
    char buf[128];
    df_tensor_describe(out[4], buf, sizeof buf);
    CHECK_MSG(strstr(buf, "variant") && strstr(buf, "TensorList<float[2]>(2)"), "describe: %s", buf);
    for (int i = 0; i < 5; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}

DF_TEST(tensor_list_reserve_set_item_uninitialized_elements_read_as_zeros) {
    df_graph *g = df_graph_new();
    int64_t d3 = 3;
    df_output in[2] = {i32s(g, 1, (int32_t[]){3}), df_scalar_i32(g, 3)};
    df_output l = op0(g, "TensorListReserve", "reserve", in, 2, DF_FLOAT);
    df_output l2 = set_item(g, "set", l, 1, f32s(g, 1, &d3, (float[]){7, 8, 9}));
    df_output f[3] = {stack(g, "stack", l2, i32s(g, 1, (int32_t[]){3})),
                      get_item(g, "get0", l2, 0, i32s(g, 1, (int32_t[]){-1}), DF_FLOAT),
                      op0(g, "TensorListLength", "len", &l, 1, 0)};
    df_tensor *out[3] = {0};
    df_status st;
    CHECK_EQ_INT(run(g, f, out, 3, &st), DF_OK);
    CHECK_OK(&st);
    CHECK(floats_are(out[0], 9, (float[]){0, 0, 0, 7, 8, 9, 0, 0, 0}));
    CHECK(floats_are(out[1], 3, (float[]){0, 0, 0}));
    CHECK(out[2] && *(int32_t *)df_tensor_data(out[2]) == 3);
    for (int i = 0; i < 3; i++) df_tensor_release(out[i]);
    df_graph_free(g);

    /* an unknown element shape and nothing set: the read cannot know the zeros' shape */
    g = df_graph_new();
    df_output in2[2] = {df_scalar_i32(g, -1), df_scalar_i32(g, 2)};
    l = op0(g, "TensorListReserve", "reserve", in2, 2, DF_FLOAT);
    df_output bad = get_item(g, "read_unset", l, 0, df_scalar_i32(g, -1), DF_FLOAT);
    df_tensor *o = NULL;
    CHECK_EQ_INT(run(g, &bad, &o, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not fully defined");
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "{{node read_unset}}");
    df_output bad2 = stack(g, "stack_unset", l, df_scalar_i32(g, -1));
    CHECK_EQ_INT(run(g, &bad2, &o, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "{{node stack_unset}}");
    df_graph_free(g);
}

DF_TEST(tensor_list_from_tensor_gather_scatter_resize_concat_split) {
    df_graph *g = df_graph_new();
    int64_t d32[2] = {3, 2}, d22[2] = {2, 2};
    df_output x = f32s(g, 2, d32, (float[]){1, 2, 3, 4, 5, 6});
    df_output l = from_tensor(g, "from", x, i32s(g, 1, (int32_t[]){2}));
    df_output gin[3] = {l, i32s(g, 2, (int32_t[]){2, 0}), i32s(g, 1, (int32_t[]){2})};
    df_output gathered = op0(g, "TensorListGather", "gather", gin, 3, DF_FLOAT);
    df_output sin[3] = {l, f32s(g, 2, d22, (float[]){10, 20, 30, 40}), i32s(g, 2, (int32_t[]){0, 4})};
    df_output scattered = op0(g, "TensorListScatterIntoExistingList", "scatter_into", sin, 3, DF_FLOAT);
    df_output rin[2] = {scattered, df_scalar_i32(g, 4)};
    df_output resized = op0(g, "TensorListResize", "resize", rin, 2, 0);
    df_output rin2[2] = {l, df_scalar_i32(g, 1)};
    df_output shrunk = op0(g, "TensorListResize", "shrink", rin2, 2, 0);
    /* Split [5] into lengths {2, 0, 3}, then ConcatV2 back */
    int64_t d5 = 5, d3 = 3;
    df_output v5 = f32s(g, 1, &d5, (float[]){1, 2, 3, 4, 5});
    int64_t lens[3] = {2, 0, 3};
    df_tensor *lt = df_tensor_from_data(DF_INT64, 1, &d3, lens, sizeof lens, NULL);
    df_output spin[3] = {v5, i32s(g, 1, (int32_t[]){-1}), df_const(g, lt)};
    df_tensor_release(lt);
    df_output split = op0(g, "TensorListSplit", "split", spin, 3, 0);
    df_tensor *lead = df_tensor_new(DF_INT64, 1, (int64_t[]){0}, NULL);
    df_output cin[3] = {split, i32s(g, 1, (int32_t[]){-1}), df_const(g, lead)};
    df_tensor_release(lead);
    df_node *concat = op(g, "TensorListConcatV2", "concat", cin, 3, DF_FLOAT);
    /* ScatterV2 into a new list of 3 with row 1 unset */
    df_output svin[4] = {f32s(g, 2, d22, (float[]){1, 1, 2, 2}), i32s(g, 2, (int32_t[]){2, 0}), i32s(g, 1, (int32_t[]){2}), df_scalar_i32(g, 3)};
    df_output sv2 = op0(g, "TensorListScatterV2", "scatter_v2", svin, 4, 0);
    df_output f[8] = {gathered, stack(g, "stack_scattered", scattered, i32s(g, 1, (int32_t[]){2})),
                      op0(g, "TensorListLength", "len_resized", &resized, 1, 0), stack(g, "stack_shrunk", shrunk, i32s(g, 1, (int32_t[]){2})),
                      {concat, 0}, {concat, 1}, stack(g, "stack_v2", sv2, i32s(g, 1, (int32_t[]){2})),
                      stack(g, "stack_from", l, i32s(g, 1, (int32_t[]){2}))};
    df_tensor *out[8] = {0};
    df_status st;
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(run(g, f, out, 8, &st), DF_OK);
    CHECK_OK(&st);
    CHECK(floats_are(out[0], 4, (float[]){5, 6, 1, 2}));
    CHECK(floats_are(out[1], 10, (float[]){10, 20, 3, 4, 5, 6, 0, 0, 30, 40}));   /* grown to index 4 (TensorFlow) */
    CHECK(out[2] && *(int32_t *)df_tensor_data(out[2]) == 4);
    CHECK(floats_are(out[3], 2, (float[]){1, 2}));
    CHECK(floats_are(out[4], 5, (float[]){1, 2, 3, 4, 5}));
    CHECK(out[5] && df_tensor_num_elements(out[5]) == 3 && ((int64_t *)df_tensor_data(out[5]))[0] == 2 &&
          ((int64_t *)df_tensor_data(out[5]))[1] == 0 && ((int64_t *)df_tensor_data(out[5]))[2] == 3);
    CHECK(floats_are(out[6], 6, (float[]){2, 2, 0, 0, 1, 1}));
    CHECK(floats_are(out[7], 6, (float[]){1, 2, 3, 4, 5, 6}));     /* the scatter did not change l */
    for (int i = 0; i < 8; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}

/* Each of TensorFlow's error cases: the message and the node's name. */
static void expect_error(df_output (*build)(df_graph *), const char *needle, const char *node) {
    df_graph *g = df_graph_new();
    df_output f = build(g);
    df_tensor *o = NULL;
    df_status st;
    CHECK_MSG(df_graph_status(g)->code == DF_OK, "%s: graph: %s", node, df_graph_status(g)->message);
    run(g, &f, &o, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, needle);
    char want[96];
    snprintf(want, sizeof want, "{{node %s}}", node);
    CHECK_MSG(strstr(st.message, want) != NULL, "message %s lacks %s", st.message, want);
    CHECK(o == NULL);
    df_tensor_release(o);
    df_graph_free(g);
}
static df_output two_floats(df_graph *g) {
    int64_t d2 = 2;
    return from_tensor(g, "from", f32s(g, 1, &d2, (float[]){1, 2}), df_scalar_i32(g, -1));
}
static df_output build_get_out_of_range(df_graph *g) { return get_item(g, "get5", two_floats(g), 5, df_scalar_i32(g, -1), DF_FLOAT); }
static df_output build_get_negative(df_graph *g) { return get_item(g, "get_neg", two_floats(g), -1, df_scalar_i32(g, -1), DF_FLOAT); }
static df_output build_get_wrong_dtype(df_graph *g) { return get_item(g, "get_int", two_floats(g), 0, df_scalar_i32(g, -1), DF_INT32); }
static df_output build_push_wrong_shape(df_graph *g) {
    int64_t d3 = 3;
    df_output l = empty_list(g, "l", i32s(g, 1, (int32_t[]){2}), -1);
    return push(g, "push3", l, f32s(g, 1, &d3, (float[]){1, 2, 3}));
}
static df_output build_push_wrong_dtype(df_graph *g) {
    df_output l = empty_list(g, "l", df_scalar_i32(g, -1), -1);
    return push(g, "push_int", l, df_scalar_i32(g, 1));
}
static df_output build_push_full(df_graph *g) {
    df_output l = empty_list(g, "l", df_scalar_i32(g, -1), 1);
    l = push(g, "push_a", l, df_scalar_f32(g, 1));
    return push(g, "push_b", l, df_scalar_f32(g, 2));
}
static df_output build_pop_empty(df_graph *g) {
    df_output l = empty_list(g, "l", df_scalar_i32(g, -1), -1);
    df_output in[2] = {l, df_scalar_i32(g, -1)};
    return (df_output){op(g, "TensorListPopBack", "pop_empty", in, 2, DF_FLOAT), 1};
}
static df_output build_set_out_of_range(df_graph *g) { return set_item(g, "set9", two_floats(g), 9, df_scalar_f32(g, 1)); }
static df_output build_stack_count(df_graph *g) {
    df_op_builder *b = df_op_new(g, "TensorListStack", "stack3");
    df_op_add_input(b, two_floats(g));
    df_op_add_input(b, df_scalar_i32(g, -1));
    df_op_set_attr_type(b, "element_dtype", DF_FLOAT);
    df_op_set_attr_int(b, "num_elements", 3);
    return (df_output){df_op_finish(b), 0};
}
static df_output build_optional_none_get(df_graph *g) {
    df_output none = op0(g, "OptionalNone", "none", NULL, 0, 0);
    df_op_builder *b = df_op_new(g, "OptionalGetValue", "get_none");
    df_op_add_input(b, none);
    df_dtype t = DF_FLOAT;
    int rank = 0;
    const int64_t *dims[1] = {NULL};
    df_op_set_attr_type_list(b, "output_types", &t, 1);
    df_op_set_attr_shape_list(b, "output_shapes", 1, &rank, dims);
    return (df_output){df_op_finish(b), 0};
}
static df_output build_list_as_optional(df_graph *g) {
    df_output in[1] = {two_floats(g)};
    return op0(g, "OptionalHasValue", "has", in, 1, 0);
}
static df_output build_scatter_out_of_range(df_graph *g) {     /* num_elements fixes the size */
    int64_t d1 = 1;
    df_output in[4] = {f32s(g, 1, &d1, (float[]){5}), i32s(g, 1, (int32_t[]){3}), df_scalar_i32(g, -1), df_scalar_i32(g, 2)};
    return op0(g, "TensorListScatterV2", "scatter3", in, 4, 0);
}
static df_output build_scatter_negative(df_graph *g) {
    int64_t d1 = 1;
    df_output in[3] = {two_floats(g), f32s(g, 1, &d1, (float[]){5}), i32s(g, 1, (int32_t[]){-1})};
    return op0(g, "TensorListScatterIntoExistingList", "scatter_neg", in, 3, DF_FLOAT);
}
static df_output build_from_scalar(df_graph *g) { return from_tensor(g, "from_scalar", df_scalar_f32(g, 1), df_scalar_i32(g, -1)); }
DF_TEST(tensor_list_errors_name_the_node) {
    expect_error(build_scatter_out_of_range, "TensorListScatter: Trying to scatter at index 3 in list with size 2", "scatter3");
    expect_error(build_scatter_negative, "Indices in TensorListScatter must all be non-negative", "scatter_neg");
    expect_error(build_from_scalar, "Tensor must be at least a vector", "from_scalar");
    expect_error(build_get_out_of_range, "Trying to access element 5 in a list with 2 elements", "get5");
    expect_error(build_get_negative, "Trying to access element -1 in a list with 2 elements", "get_neg");
    expect_error(build_get_wrong_dtype, "Invalid data types; op elements int32 but list elements float", "get_int");
    expect_error(build_push_wrong_shape, "incompatible shape", "push3");
    expect_error(build_push_wrong_dtype, "Invalid data types; op elements int32 but list elements float", "push_int");
    expect_error(build_push_full, "Tried to push item into a full list", "push_b");
    expect_error(build_pop_empty, "Trying to pop from an empty list", "pop_empty");
    expect_error(build_set_out_of_range, "Trying to modify element 9 in a list with 2 elements", "set9");
    expect_error(build_stack_count, "expected a list with 3 elements but got a list with 2", "stack3");
    expect_error(build_optional_none_get, "The given optional does not have a value", "get_none");
    expect_error(build_list_as_optional, "Input handle is not an optional", "has");
}

/* Lists are values: a SetItem and a PushBack on a list another node also reads change only
   their own result; elements are shared (same bytes) not copied. */
DF_TEST(tensor_list_values_are_immutable_and_elements_shared) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, (int64_t[]){2});
    df_output l = push(g, "push", empty_list(g, "l", df_scalar_i32(g, -1), -1), x);
    df_output set = set_item(g, "set", l, 0, df_scalar_f32(g, 5) /* wrong shape is allowed: unknown element shape */);
    df_output pushed = push(g, "push2", l, x);
    df_output f[5] = {get_item(g, "get_orig", l, 0, df_scalar_i32(g, -1), DF_FLOAT),
                      get_item(g, "get_set", set, 0, df_scalar_i32(g, -1), DF_FLOAT),
                      op0(g, "TensorListLength", "len_orig", &l, 1, 0),
                      op0(g, "TensorListLength", "len_pushed", &pushed, 1, 0),
                      get_item(g, "get_pushed", pushed, 1, df_scalar_i32(g, -1), DF_FLOAT)};
    df_tensor *xv = df_tensor_from_data(DF_FLOAT, 1, (int64_t[]){2}, (float[]){1.5f, 2.5f}, 8, NULL);
    df_tensor *out[5] = {0};
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    for (int rep = 0; s && rep < 3; rep++) {
        df_session_run(s, &x, &xv, 1, f, out, 5, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK(floats_are(out[0], 2, (float[]){1.5f, 2.5f}));
        CHECK(floats_are(out[1], 1, (float[]){5}));
        CHECK(out[2] && *(int32_t *)df_tensor_data(out[2]) == 1);
        CHECK(out[3] && *(int32_t *)df_tensor_data(out[3]) == 2);
        /* no byte copies: the element read back is the fed tensor's buffer */
        CHECK(out[0] && df_tensor_data(out[0]) == df_tensor_data(xv));
        CHECK(out[4] && df_tensor_data(out[4]) == df_tensor_data(xv));
        for (int i = 0; i < 5; i++) { df_tensor_release(out[i]); out[i] = NULL; }
    }
    df_session_free(s);
    df_tensor_release(xv);
    df_graph_free(g);
}

DF_TEST(tensor_list_variant_tensors_are_made_only_by_kernels_and_feed_back) {
    df_status st;
    CHECK(df_tensor_new(DF_VARIANT, 0, NULL, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "dtype");
    CHECK(strcmp(df_dtype_name(DF_VARIANT), "variant") == 0);
    CHECK_EQ_INT(DF_VARIANT, 21);
    /* a fetched list fed back through a variant Placeholder */
    df_graph *g = df_graph_new();
    int64_t d2 = 2;
    df_output l = from_tensor(g, "from", f32s(g, 1, &d2, (float[]){3, 4}), df_scalar_i32(g, -1));
    df_output p = df_placeholder(g, "p", DF_VARIANT, 0, NULL);
    df_output s1 = stack(g, "stack", p, df_scalar_i32(g, -1));
    CHECK_OK(df_graph_status(g));
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *lv = NULL, *sv = NULL;
    df_session_run(s, NULL, NULL, 0, &l, &lv, 1, NULL, 0, &st);
    CHECK_OK(&st);
    df_session_run(s, &p, &lv, 1, &s1, &sv, 1, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(floats_are(sv, 2, (float[]){3, 4}));
    /* files cannot hold one */
    char path[512];
    snprintf(path, sizeof path, "%s/variant.npy", df_test_tmpdir());
    CHECK(df_tensor_write_npy(lv, path) != DF_OK);
    snprintf(path, sizeof path, "%s/variant.ckpt", df_test_tmpdir());
    const char *name = "list";
    CHECK_EQ_INT(df_checkpoint_write(path, 1, &name, &lv, &st), DF_UNIMPLEMENTED);
    CHECK_STATUS(&st, DF_UNIMPLEMENTED, "of type variant");
    df_tensor_release(sv);
    df_tensor_release(lv);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(tensor_list_optional_ops) {
    df_graph *g = df_graph_new();
    df_output comps[2] = {df_scalar_f32(g, 2.5f), df_scalar_i32(g, 7)};
    df_op_builder *b = df_op_new(g, "OptionalFromValue", "opt");
    df_op_add_input_list(b, comps, 2);
    df_output opt = {df_op_finish(b), 0};
    df_output none = op0(g, "OptionalNone", "none", NULL, 0, 0);
    b = df_op_new(g, "OptionalGetValue", "get");
    df_op_add_input(b, opt);
    df_dtype types[2] = {DF_FLOAT, DF_INT32};
    int ranks[2] = {0, 0};
    const int64_t *dims[2] = {NULL, NULL};
    df_op_set_attr_type_list(b, "output_types", types, 2);
    df_op_set_attr_shape_list(b, "output_shapes", 2, ranks, dims);
    df_node *get = df_op_finish(b);
    df_output f[4] = {op0(g, "OptionalHasValue", "has", &opt, 1, 0), op0(g, "OptionalHasValue", "has_none", &none, 1, 0),
                      {get, 0}, {get, 1}};
    df_tensor *out[4] = {0};
    df_status st;
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(run(g, f, out, 4, &st), DF_OK);
    CHECK(out[0] && *(uint8_t *)df_tensor_data(out[0]) == 1);
    CHECK(out[1] && *(uint8_t *)df_tensor_data(out[1]) == 0);
    CHECK(floats_are(out[2], 1, (float[]){2.5f}));
    CHECK(out[3] && *(int32_t *)df_tensor_data(out[3]) == 7);
    for (int i = 0; i < 4; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}

DF_TEST(tensor_list_zeros_like_and_add_n_of_lists) {
    df_graph *g = df_graph_new();
    int64_t d3 = 3;
    df_output a = from_tensor(g, "a", f32s(g, 1, &d3, (float[]){1, 2, 3}), df_scalar_i32(g, -1));
    df_output b = from_tensor(g, "b", f32s(g, 1, &d3, (float[]){10, 20, 30}), df_scalar_i32(g, -1));
    df_output rin[2] = {df_scalar_i32(g, -1), df_scalar_i32(g, 3)};
    df_output c = set_item(g, "c", op0(g, "TensorListReserve", "r", rin, 2, DF_FLOAT), 1, df_scalar_f32(g, 100));
    df_output ab[3] = {a, b, c};
    df_output sum = df_add_n(g, ab, 3);
    df_output zl = op0(g, "ZerosLike", "zeros", &a, 1, 0);
    df_output f[2] = {stack(g, "stack_sum", sum, df_scalar_i32(g, -1)), stack(g, "stack_zeros", zl, df_scalar_i32(g, -1))};
    df_tensor *out[2] = {0};
    df_status st;
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(run(g, f, out, 2, &st), DF_OK);
    CHECK_OK(&st);
    CHECK(floats_are(out[0], 3, (float[]){11, 122, 33}));
    CHECK(floats_are(out[1], 3, (float[]){0, 0, 0}));
    for (int i = 0; i < 2; i++) df_tensor_release(out[i]);
    /* lists of different lengths do not add */
    df_output two[2] = {a, two_floats(g)};
    df_output bad = stack(g, "stack_bad", df_add_n(g, two, 2), df_scalar_i32(g, -1));
    df_tensor *o = NULL;
    CHECK_EQ_INT(run(g, &bad, &o, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "different lengths");
    df_graph_free(g);
}

/* A list as a while-loop variable: i pushed each iteration, stacked after the loop. */
static df_output loop_cond(df_graph *g, void *user, const df_output *v) { return df_less(g, v[0], df_scalar_i32(g, *(int *)user)); }
static void loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = push(g, NULL, v[1], df_cast(g, df_mul(g, v[0], v[0]), DF_FLOAT));
}
DF_TEST(tensor_list_as_while_loop_variable) {
    df_graph *g = df_graph_new();
    int n = 6;
    df_output init[2] = {df_scalar_i32(g, 0), empty_list(g, "acc", df_scalar_i32(g, -1), -1)}, outs[2];
    CHECK_EQ_INT(df_while_loop(g, 2, init, loop_cond, loop_body, &n, NULL, outs), DF_OK);
    df_output f[2] = {stack(g, "stack", outs[1], df_scalar_i32(g, -1)), op0(g, "TensorListLength", "len", &outs[1], 1, 0)};
    df_tensor *out[2] = {0};
    df_status st;
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(run(g, f, out, 2, &st), DF_OK);
    CHECK_OK(&st);
    CHECK(floats_are(out[0], 6, (float[]){0, 1, 4, 9, 16, 25}));
    CHECK(out[1] && *(int32_t *)df_tensor_data(out[1]) == 6);
    for (int i = 0; i < 2; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}

/* A list made on one CPU device, changed on another, read on the first: Send/Recv share it. */
DF_TEST(tensor_list_crosses_two_cpu_devices) {
    df_graph *g = df_graph_new();
    int64_t d2 = 2;
    df_graph_push_device(g, "/cpu:0");
    df_output l = from_tensor(g, "from", f32s(g, 1, &d2, (float[]){1, 2}), df_scalar_i32(g, -1));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/cpu:1");
    df_output l2 = push(g, "push", l, df_scalar_f32(g, 3));
    df_output l3 = set_item(g, "set", l, 0, df_scalar_f32(g, 9));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/cpu:0");
    df_output f[3] = {stack(g, "stack2", l2, df_scalar_i32(g, -1)), stack(g, "stack3", l3, df_scalar_i32(g, -1)),
                      stack(g, "stack1", l, df_scalar_i32(g, -1))};
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = 2;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    df_tensor *out[3] = {0};
    for (int rep = 0; s && rep < 4; rep++) {
        df_session_run(s, NULL, NULL, 0, f, out, 3, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK(floats_are(out[0], 3, (float[]){1, 2, 3}));
        CHECK(floats_are(out[1], 2, (float[]){9, 2}));
        CHECK(floats_are(out[2], 2, (float[]){1, 2}));
        for (int i = 0; i < 3; i++) { df_tensor_release(out[i]); out[i] = NULL; }
    }
    df_session_free(s);
    df_graph_free(g);
}

#ifndef DF_NO_THREADS
typedef struct { df_session *s; df_output x, y; int id, bad; } tl_thread;
static void *tl_thread_main(void *arg) {
    tl_thread *t = (tl_thread *)arg;
    for (int rep = 0; rep < 40; rep++) {
        float v = (float)(t->id * 100 + rep);
        df_tensor *xv = df_tensor_from_data(DF_FLOAT, 0, NULL, &v, 4, NULL), *out = NULL;
        df_status st;
        df_session_run(t->s, &t->x, &xv, 1, &t->y, &out, 1, NULL, 0, &st);
        if (st.code || !out || df_tensor_num_elements(out) != 3 || ((float *)df_tensor_data(out))[0] != v ||
            ((float *)df_tensor_data(out))[1] != 2 * v || ((float *)df_tensor_data(out))[2] != v) t->bad++;
        df_tensor_release(out);
        df_tensor_release(xv);
    }
    return NULL;
}
DF_TEST(tensor_list_several_threads_run_one_session) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_output l = empty_list(g, "l", df_scalar_i32(g, -1), -1);
    l = push(g, "p1", l, x);
    df_output shared = push(g, "p2", l, df_add(g, x, x));
    df_output in[2] = {shared, df_scalar_i32(g, -1)};
    df_node *pop = op(g, "TensorListPopBack", "pop", in, 2, DF_FLOAT);
    df_output back = push(g, "p3", (df_output){pop, 0}, (df_output){pop, 1});  /* pop then push back: same list */
    df_output l4 = push(g, "p4", back, get_item(g, "first", shared, 0, df_scalar_i32(g, -1), DF_FLOAT));
    df_output y = stack(g, "stack", l4, df_scalar_i32(g, -1));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    tl_thread t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) { t[i] = (tl_thread){s, x, y, i, 0}; pthread_create(&th[i], NULL, tl_thread_main, &t[i]); }
    for (int i = 0; i < 4; i++) { pthread_join(th[i], NULL); CHECK_EQ_INT(t[i].bad, 0); }
    df_session_free(s);
    df_graph_free(g);
}
#endif

/* Gradients through the list ops: FromTensor, SetItem, GetItem, Stack, PushBack/PopBack,
   Gather/Scatter, and the Optionals. */
DF_TEST(tensor_list_gradients) {
    df_graph *g = df_graph_new();
    int64_t d32[2] = {3, 2};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, d32);
    df_output y = df_placeholder(g, "y", DF_FLOAT, 1, (int64_t[]){2});
    df_output l = from_tensor(g, "from", x, i32s(g, 1, (int32_t[]){2}));
    df_output l2 = set_item(g, "set", l, 1, df_mul(g, y, df_scalar_f32(g, 2)));
    df_output st1 = stack(g, "stack", l2, i32s(g, 1, (int32_t[]){2}));
    df_output item = get_item(g, "get", l, 2, i32s(g, 1, (int32_t[]){2}), DF_FLOAT);
    /* push y, pop it back: the popped value squared */
    df_output pl = push(g, "push", empty_list(g, "e", i32s(g, 1, (int32_t[]){2}), -1), y);
    df_output pin[2] = {pl, i32s(g, 1, (int32_t[]){2})};
    df_node *pop = op(g, "TensorListPopBack", "pop", pin, 2, DF_FLOAT);
    df_output popped = {pop, 1};
    /* gather rows 0 and 2 of x, times 3 */
    df_output gin[3] = {l, i32s(g, 2, (int32_t[]){0, 2}), i32s(g, 1, (int32_t[]){2})};
    df_output gathered = op0(g, "TensorListGather", "gather", gin, 3, DF_FLOAT);
    /* y through an Optional */
    df_output yy[1] = {y};
    df_op_builder *b = df_op_new(g, "OptionalFromValue", "opt");
    df_op_add_input_list(b, yy, 1);
    df_output opt = {df_op_finish(b), 0};
    b = df_op_new(g, "OptionalGetValue", "opt_get");
    df_op_add_input(b, opt);
    df_dtype ft = DF_FLOAT;
    int r1 = 1;
    const int64_t *dd[1] = {(int64_t[]){2}};
    df_op_set_attr_type_list(b, "output_types", &ft, 1);
    df_op_set_attr_shape_list(b, "output_shapes", 1, &r1, dd);
    df_output from_opt = {df_op_finish(b), 0};
    df_output terms[5] = {df_reduce_sum(g, st1, 0, NULL, 0), df_reduce_sum(g, df_mul(g, item, item), 0, NULL, 0),
                          df_reduce_sum(g, df_mul(g, popped, popped), 0, NULL, 0),
                          df_reduce_sum(g, df_mul(g, gathered, df_scalar_f32(g, 3)), 0, NULL, 0),
                          df_reduce_sum(g, df_mul(g, from_opt, df_scalar_f32(g, 5)), 0, NULL, 0)};
    df_output loss = df_add_n(g, terms, 5);
    df_output xs[2] = {x, y}, dxs[2];
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 2, xs, dxs), DF_OK);
    CHECK_OK(df_graph_status(g));
    df_tensor *xv = df_tensor_from_data(DF_FLOAT, 2, d32, (float[]){1, 2, 3, 4, 5, 6}, 24, NULL);
    df_tensor *yv = df_tensor_from_data(DF_FLOAT, 1, (int64_t[]){2}, (float[]){7, 8}, 8, NULL);
    df_output feeds[2] = {x, y};
    df_tensor *fv[2] = {xv, yv}, *out[2] = {0};
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    if (s) df_session_run(s, feeds, fv, 2, dxs, out, 2, NULL, 0, &st);
    CHECK_OK(&st);
    /* d/dx: 1 from the stack except row 1 (replaced), + 2*x on row 2, + 3 on rows 0 and 2 */
    CHECK(floats_are(out[0], 6, (float[]){1 + 3, 1 + 3, 0, 0, 1 + 10 + 3, 1 + 12 + 3}));
    /* d/dy: 2 from the stack's row 1, + 2*y from the pop, + 5 through the optional */
    CHECK(floats_are(out[1], 2, (float[]){2 + 14 + 5, 2 + 16 + 5}));
    for (int i = 0; i < 2; i++) df_tensor_release(out[i]);
    df_session_free(s);
    df_tensor_release(xv);
    df_tensor_release(yv);
    df_graph_free(g);
}

#ifndef DF_NO_THREADS
/* Over workers (other processes in general): a list's payload lives in one process's memory,
   so a list crossing to another task, or fetched from one, is refused with a clear status. */
static void tl_quiet(void *user, const char *line) { (void)user; (void)line; }
DF_TEST(tensor_list_refused_between_processes) {
    df_worker *w[2] = {NULL, NULL};
    char target[256] = "";
    for (int i = 0; i < 2; i++) {
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = i;
        o.log = tl_quiet;
        df_status st;
        if (!(w[i] = df_worker_start(&o, &st))) { CHECK_MSG(0, "worker %d: %s", i, st.message); break; }
        size_t k = strlen(target);
        snprintf(target + k, sizeof target - k, "%s127.0.0.1:%d", i ? "," : "", df_worker_port(w[i]));
    }
    if (w[0] && w[1]) {
        df_graph *g = df_graph_new();
        int64_t d2 = 2;
        df_graph_push_device(g, "/job:worker/task:0");
        df_output l = from_tensor(g, "from", f32s(g, 1, &d2, (float[]){1, 2}), df_scalar_i32(g, -1));
        df_output local = stack(g, "stack0", l, df_scalar_i32(g, -1));
        df_graph_pop_device(g);
        df_graph_push_device(g, "/job:worker/task:1");
        df_output far = stack(g, "stack1", l, df_scalar_i32(g, -1));
        df_graph_pop_device(g);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.target = target;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        CHECK_MSG(s != NULL, "session: %s", st.message);
        df_tensor *out = NULL;
        if (s) {
            df_session_run(s, NULL, NULL, 0, &local, &out, 1, NULL, 0, &st);    /* within one task: fine */
            CHECK_OK(&st);
            CHECK(floats_are(out, 2, (float[]){1, 2}));
            df_tensor_release(out); out = NULL;
            df_session_run(s, NULL, NULL, 0, &far, &out, 1, NULL, 0, &st);
            CHECK_STATUS(&st, DF_UNIMPLEMENTED, "cannot be sent to another process");
            CHECK(out == NULL);
            df_session_run(s, NULL, NULL, 0, &l, &out, 1, NULL, 0, &st);
            CHECK_STATUS(&st, DF_UNIMPLEMENTED, "variant");
            CHECK(out == NULL);
            df_tensor_release(out);
        }
        df_session_free(s);
        df_graph_free(g);
    }
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}
#endif

/* The gradient through a list carried by a while loop (pushes in the loop, a Stack after it):
   d/dx sum_i x*i = sum_i i. A list read inside a loop without being a loop variable cannot be
   differentiated here: a clear error, not a silent zero. */
static df_output grad_x;
static df_output scalar_shape(df_graph *g) {
    df_tensor *t = df_tensor_new(DF_INT32, 1, (int64_t[]){0}, NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static void grad_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = push(g, NULL, v[1], df_mul(g, grad_x, df_cast(g, v[0], DF_FLOAT)));
}
static df_output captured_list;
static void read_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], get_item(g, NULL, captured_list, 0, scalar_shape(g), DF_FLOAT));
}
DF_TEST(tensor_list_gradient_through_a_while_loop_variable) {
    df_graph *g = df_graph_new();
    int n = 50;
    grad_x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_output init[2] = {df_scalar_i32(g, 0), empty_list(g, "acc", scalar_shape(g), -1)}, outs[2], dx;
    CHECK_EQ_INT(df_while_loop(g, 2, init, loop_cond, grad_body, &n, NULL, outs), DF_OK);
    df_output loss = df_reduce_sum(g, stack(g, "stack", outs[1], scalar_shape(g)), 0, NULL, 0);
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &grad_x, &dx), DF_OK);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *xv = df_tensor_scalar_f32(2), *out[2] = {0};
    df_output f[2] = {loss, dx};
    if (s) df_session_run(s, &grad_x, &xv, 1, f, out, 2, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(out[0] && *(float *)df_tensor_data(out[0]) == 2 * 1225);
    CHECK(out[1] && *(float *)df_tensor_data(out[1]) == 1225);
    for (int i = 0; i < 2; i++) df_tensor_release(out[i]);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);

    g = df_graph_new();
    df_output y = df_placeholder(g, "y", DF_FLOAT, 0, NULL);
    captured_list = push(g, "outside", empty_list(g, "l", scalar_shape(g), -1), y);
    df_output init2[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 0)};
    CHECK_EQ_INT(df_while_loop(g, 2, init2, loop_cond, read_body, &n, NULL, outs), DF_OK);
    CHECK_EQ_INT(df_gradients(g, 1, &outs[1], NULL, 1, &y, &dx), DF_UNIMPLEMENTED);
    CHECK_STATUS(df_graph_status(g), DF_UNIMPLEMENTED, "make it a loop variable");
    df_graph_free(g);
}

/* ConcatV2 and Split are each other's gradients. */
DF_TEST(tensor_list_concat_split_gradients) {
    df_graph *g = df_graph_new();
    int64_t d5 = 5, d2 = 2;
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, &d5);
    int64_t lens[2] = {3, 2};
    df_tensor *lt = df_tensor_from_data(DF_INT64, 1, &d2, lens, sizeof lens, NULL);
    df_output in[3] = {x, df_scalar_i32(g, -1), df_const(g, lt)};
    df_tensor_release(lt);
    df_output l = op0(g, "TensorListSplit", "split", in, 3, 0);
    df_tensor *lead = df_tensor_new(DF_INT64, 1, (int64_t[]){0}, NULL);
    df_output cin[3] = {set_item(g, "set", l, 1, df_mul(g, get_item(g, "get", l, 1, df_scalar_i32(g, -1), DF_FLOAT), df_scalar_f32(g, 4))),
                        i32s(g, 1, (int32_t[]){-1}), df_const(g, lead)};
    df_tensor_release(lead);
    df_output cat = op0(g, "TensorListConcatV2", "concat", cin, 3, DF_FLOAT);
    df_output loss = df_reduce_sum(g, df_mul(g, cat, df_scalar_f32(g, 1)), 1, (int32_t[]){0}, 0), dx;
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &x, &dx), DF_OK);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *xv = df_tensor_from_data(DF_FLOAT, 1, &d5, (float[]){1, 2, 3, 4, 5}, 20, NULL), *out[2] = {0};
    df_output f[2] = {cat, dx};
    if (s) df_session_run(s, &x, &xv, 1, f, out, 2, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(floats_are(out[0], 5, (float[]){1, 2, 3, 16, 20}));
    CHECK(floats_are(out[1], 5, (float[]){1, 1, 1, 4, 4}));
    for (int i = 0; i < 2; i++) df_tensor_release(out[i]);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);
}

/* TensorListPushBackBatch over a vector of lists (Pack of handles), TensorListConcatLists. */
DF_TEST(tensor_list_push_back_batch_and_concat_lists) {
    df_graph *g = df_graph_new();
    int64_t d2 = 2, d22[2] = {2, 2};
    df_output a = from_tensor(g, "a", f32s(g, 1, &d2, (float[]){1, 2}), df_scalar_i32(g, -1));
    df_output b = from_tensor(g, "b", f32s(g, 1, &d2, (float[]){3, 4}), df_scalar_i32(g, -1));
    df_output ab[2] = {a, b};
    df_op_builder *bl = df_op_new(g, "Pack", "handles");
    df_op_add_input_list(bl, ab, 2);
    df_output handles = {df_op_finish(bl), 0};
    df_output pin[2] = {handles, f32s(g, 2, d22, (float[]){10, 20, 30, 40})};
    df_output pushed = op0(g, "TensorListPushBackBatch", "push_batch", pin, 2, DF_FLOAT);
    df_output cin[2] = {a, b};
    df_output cat = op0(g, "TensorListConcatLists", "concat_lists", cin, 2, DF_FLOAT);
    df_output f[2] = {pushed, stack(g, "stack_cat", cat, df_scalar_i32(g, -1))};
    df_tensor *out[2] = {0};
    df_status st;
    CHECK_OK(df_graph_status(g));
    CHECK_EQ_INT(run(g, f, out, 2, &st), DF_OK);
    CHECK_OK(&st);
    CHECK(out[0] && df_tensor_dtype(out[0]) == DF_VARIANT && df_tensor_rank(out[0]) == 1 && df_tensor_dim(out[0], 0) == 2);
    char buf[160];
    df_tensor_describe(out[0], buf, sizeof buf);
    CHECK_MSG(strstr(buf, "TensorList<float>(3), TensorList<float>(3)") != NULL, "describe: %s", buf);
    CHECK(floats_are(out[1], 4, (float[]){1, 2, 3, 4}));
    for (int i = 0; i < 2; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}
