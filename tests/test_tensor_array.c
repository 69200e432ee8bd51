/* TensorArrays (TensorFlow's TensorArrayV3 family): every op's values, TensorFlow's errors (each
   naming its node), zeros for unwritten elements where TF gives them, gradient arrays (made
   once per source, summing repeated writes), while loops writing and reading with 1 and 10
   parallel iterations, an array on CPU:0 written from CPU:1, gradients through a loop against
   central differences, and several runs of one session at once. */
#include "harness.h"
#include <pthread.h>

/* ---- building ---- */
typedef struct { df_output h, flow; } ta_t;
static int ta_identical = 1;     /* identical_element_shapes of the arrays ta_make makes (TF's infer_shape) */
static ta_t ta_make(df_graph *g, const char *name, df_dtype t, int size, int rank, const int64_t *dims, int dynamic, int clear) {
    df_op_builder *b = df_op_new(g, "TensorArrayV3", name);
    df_op_add_input(b, df_scalar_i32(g, size));
    df_op_set_attr_type(b, "dtype", t);
    if (rank >= 0) df_op_set_attr_shape(b, "element_shape", rank, dims);
    df_op_set_attr_bool(b, "dynamic_size", dynamic);
    df_op_set_attr_bool(b, "clear_after_read", clear);
    df_op_set_attr_bool(b, "identical_element_shapes", ta_identical);
    df_node *n = df_op_finish(b);
    ta_t r = {{n, 0}, {n, 1}};
    return r;
}
static df_output ta_write(df_graph *g, const char *name, ta_t a, df_output index, df_output v, df_output flow) {
    df_op_builder *b = df_op_new(g, "TensorArrayWriteV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, index); df_op_add_input(b, v); df_op_add_input(b, flow);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output ta_read(df_graph *g, const char *name, ta_t a, df_output index, df_output flow, df_dtype t) {
    df_op_builder *b = df_op_new(g, "TensorArrayReadV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, index); df_op_add_input(b, flow);
    df_op_set_attr_type(b, "dtype", t);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output ta_gather(df_graph *g, const char *name, ta_t a, df_output indices, df_output flow, df_dtype t) {
    df_op_builder *b = df_op_new(g, "TensorArrayGatherV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, indices); df_op_add_input(b, flow);
    df_op_set_attr_type(b, "dtype", t);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output ta_scatter(df_graph *g, const char *name, ta_t a, df_output indices, df_output v, df_output flow) {
    df_op_builder *b = df_op_new(g, "TensorArrayScatterV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, indices); df_op_add_input(b, v); df_op_add_input(b, flow);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_node *ta_concat(df_graph *g, const char *name, ta_t a, df_output flow, df_dtype t) {
    df_op_builder *b = df_op_new(g, "TensorArrayConcatV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, flow);
    df_op_set_attr_type(b, "dtype", t);
    return df_op_finish(b);
}
static df_output ta_split(df_graph *g, const char *name, ta_t a, df_output v, df_output lengths, df_output flow) {
    df_op_builder *b = df_op_new(g, "TensorArraySplitV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, v); df_op_add_input(b, lengths); df_op_add_input(b, flow);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output ta_size(df_graph *g, const char *name, ta_t a, df_output flow) {
    df_op_builder *b = df_op_new(g, "TensorArraySizeV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, flow);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_node *ta_close(df_graph *g, const char *name, ta_t a) {
    df_op_builder *b = df_op_new(g, "TensorArrayCloseV3", name);
    df_op_add_input(b, a.h);
    return df_op_finish(b);
}
static ta_t ta_grad(df_graph *g, const char *name, ta_t a, df_output flow, const char *source) {
    df_op_builder *b = df_op_new(g, "TensorArrayGradV3", name);
    df_op_add_input(b, a.h); df_op_add_input(b, flow);
    df_op_set_attr_string(b, "source", source);
    df_node *n = df_op_finish(b);
    ta_t r = {{n, 0}, {n, 1}};
    return r;
}
static df_output vec_f32(df_graph *g, int n, const float *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_FLOAT, 1, &d, v, (size_t)n * 4, NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output mat_f32(df_graph *g, int r, int c, const float *v) {
    int64_t d[2] = {r, c};
    df_tensor *t = df_tensor_from_data(DF_FLOAT, 2, d, v, (size_t)(r * c) * 4, NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output vec_i32(df_graph *g, int n, const int32_t *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, &d, v, (size_t)n * 4, NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output vec_i64(df_graph *g, int n, const int64_t *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_INT64, 1, &d, v, (size_t)n * 8, NULL);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_session *session(df_graph *g, int devices, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = devices;
    o.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}
/* Runs the fetches (and targets); returns the status code. */
static df_code run(df_session *s, const df_output *f, df_tensor **v, int n, df_node *target, df_status *st) {
    for (int i = 0; i < n; i++) v[i] = NULL;
    return df_session_run(s, NULL, NULL, 0, f, v, n, target ? &target : NULL, target ? 1 : 0, st);
}
static void release(df_tensor **v, int n) { for (int i = 0; i < n; i++) df_tensor_release(v[i]); }
static int has_shape(const df_tensor *t, int rank, const int64_t *dims) {
    if (!t || df_tensor_rank(t) != rank) return 0;
    for (int i = 0; i < rank; i++) if (df_tensor_dim(t, i) != dims[i]) return 0;
    return 1;
}
/* Fetching f fails with code and a message holding `needle` and the node's name. */
static void expect_error(df_graph *g, df_output f, df_node *target, df_code code, const char *needle, const char *node) {
    df_session *s = session(g, 1, 1);
    df_status st;
    df_tensor *v = NULL;
    df_session_run(s, NULL, NULL, 0, f.node ? &f : NULL, &v, f.node ? 1 : 0, target ? &target : NULL, target ? 1 : 0, &st);
    CHECK_STATUS(&st, code, needle);
    char want[160];
    snprintf(want, sizeof want, "{{node %s}}", node);
    CHECK_MSG(strstr(st.message, want) != NULL, "message '%s' does not name %s", st.message, node);
    df_tensor_release(v);
    df_session_free(s);
}

/* ---- values ---- */
DF_TEST(ta_write_read_gather_size) {
    df_graph *g = df_graph_new();
    int64_t e[1] = {2};
    ta_t a = ta_make(g, "ta", DF_FLOAT, 3, 1, e, 0, 1);
    const float r0[2] = {1, 2}, r1[2] = {3, 4}, r2[2] = {5, 6};
    df_output f = ta_write(g, "w0", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), a.flow);
    f = ta_write(g, "w1", a, df_scalar_i32(g, 1), vec_f32(g, 2, r1), f);
    f = ta_write(g, "w2", a, df_scalar_i32(g, 2), vec_f32(g, 2, r2), f);
    df_output rd = ta_read(g, "r1", a, df_scalar_i32(g, 1), f, DF_FLOAT);
    const int32_t ix[2] = {2, 0};
    df_output ga = ta_gather(g, "gather", a, vec_i32(g, 2, ix), f, DF_FLOAT);
    df_output sz = ta_size(g, "size", a, f);
    int64_t gd[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(ga, gd), 2);     /* shape inference: [2] + element_shape */
    CHECK(gd[0] == 2 && gd[1] == 2);
    df_session *s = session(g, 1, 1);
    df_output fe[4] = {rd, ga, sz, a.flow};
    df_tensor *v[4];
    df_status st;
    run(s, fe, v, 4, NULL, &st);
    CHECK_OK(&st);
    if (!st.code) {
        const int64_t d1[1] = {2}, d2[2] = {2, 2};
        CHECK(has_shape(v[0], 1, d1));
        CHECK(has_shape(v[1], 2, d2));
        const float *x = (const float *)df_tensor_data(v[0]), *y = (const float *)df_tensor_data(v[1]);
        CHECK(x[0] == 3 && x[1] == 4);
        CHECK(y[0] == 5 && y[1] == 6 && y[2] == 1 && y[3] == 2);
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(v[2]), 3);
        CHECK(*(const float *)df_tensor_data(v[3]) == 0.0f);   /* the flow's value: 0, as in TF */
    }
    release(v, 4);
    /* a second run has its own array: writing the same indices again is fine */
    run(s, fe, v, 4, NULL, &st);
    CHECK_OK(&st);
    release(v, 4);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(ta_scatter_split_concat) {
    df_graph *g = df_graph_new();
    ta_identical = 0;
    ta_t a = ta_make(g, "ta", DF_FLOAT, 2, -1, NULL, 0, 1);
    ta_identical = 1;
    const float m[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const int64_t lens[2] = {2, 3};
    df_output f = ta_split(g, "split", a, mat_f32(g, 5, 2, m), vec_i64(g, 2, lens), a.flow);
    df_node *cc = ta_concat(g, "concat", a, f, DF_FLOAT);
    ta_t b = ta_make(g, "tb", DF_FLOAT, 3, -1, NULL, 0, 1);
    const int32_t ix[3] = {2, 0, 1}, all[3] = {0, 1, 2};
    df_output fb = ta_scatter(g, "scatter", b, vec_i32(g, 3, ix), mat_f32(g, 3, 2, m), b.flow);
    df_output ga = ta_gather(g, "gather", b, vec_i32(g, 3, all), fb, DF_FLOAT);
    df_session *s = session(g, 1, 1);
    df_output fe[3] = {{cc, 0}, {cc, 1}, ga};
    df_tensor *v[3];
    df_status st;
    run(s, fe, v, 3, NULL, &st);
    CHECK_OK(&st);
    if (!st.code) {
        const int64_t d0[2] = {5, 2}, d1[1] = {2}, d2[2] = {3, 2};
        CHECK(has_shape(v[0], 2, d0) && has_shape(v[1], 1, d1) && has_shape(v[2], 2, d2));
        for (int i = 0; i < 10; i++) CHECK(((const float *)df_tensor_data(v[0]))[i] == m[i]);
        CHECK(((const int64_t *)df_tensor_data(v[1]))[0] == 2 && ((const int64_t *)df_tensor_data(v[1]))[1] == 3);
        const float want[6] = {2, 3, 4, 5, 0, 1};   /* row k of the scattered value went to ix[k] */
        for (int i = 0; i < 6; i++) CHECK(((const float *)df_tensor_data(v[2]))[i] == want[i]);
    }
    release(v, 3);
    df_session_free(s);
    df_graph_free(g);
}

/* Rows of 16 floats (64 bytes) are shared with the scattered or split value (views, no copy);
   rows of 3 floats are copied. Either way the reads give the rows, an op on a read makes a new
   tensor, the fed value is left as it was, and the array outlives nothing it needs. */
DF_TEST(ta_scatter_split_rows_shared_or_copied) {
    for (int width = 3; width <= 16; width += 13) {
        df_graph *g = df_graph_new();
        int64_t xd[2] = {4, width};
        df_output x = df_placeholder(g, "x", DF_FLOAT, 2, xd);
        ta_t a = ta_make(g, "ta", DF_FLOAT, 4, 1, &xd[1], 0, 0);
        const int32_t ix[4] = {3, 2, 1, 0};
        df_output f = ta_scatter(g, "scatter", a, vec_i32(g, 4, ix), x, a.flow);
        df_output r1 = ta_read(g, "r1", a, df_scalar_i32(g, 1), f, DF_FLOAT);
        df_output dbl = df_add(g, r1, r1);                  /* may not write into a shared row */
        ta_identical = 0;
        ta_t b = ta_make(g, "tb", DF_FLOAT, 2, -1, NULL, 0, 0);
        ta_identical = 1;
        const int64_t lens[2] = {1, 3};
        df_output fb = ta_split(g, "split", b, x, vec_i64(g, 2, lens), b.flow);
        df_output s1 = ta_read(g, "s1", b, df_scalar_i32(g, 1), fb, DF_FLOAT);
        df_tensor *xv = df_tensor_new(DF_FLOAT, 2, xd, NULL);
        float *xp = (float *)df_tensor_data(xv);
        for (int i = 0; i < 4 * width; i++) xp[i] = (float)i;
        df_session *s = session(g, 1, 1);
        df_output fe[3] = {r1, dbl, s1};
        df_tensor *v[3];
        df_status st;
        df_session_run(s, &x, &xv, 1, fe, v, 3, NULL, 0, &st);
        CHECK_OK(&st);
        if (!st.code) {
            const float *p0 = (const float *)df_tensor_data(v[0]), *p1 = (const float *)df_tensor_data(v[1]);
            const float *p2 = (const float *)df_tensor_data(v[2]);
            for (int j = 0; j < width; j++) {
                CHECK(p0[j] == (float)(2 * width + j));      /* element 1 is row 2 (ix[2] == 1) */
                CHECK(p1[j] == 2.0f * (float)(2 * width + j));
            }
            for (int j = 0; j < 3 * width; j++) CHECK(p2[j] == (float)(width + j));   /* rows 1..3 */
            CHECK_EQ_INT(df_tensor_dim(v[2], 0), 3);
            for (int i = 0; i < 4 * width; i++) CHECK(xp[i] == (float)i);
        }
        release(v, 3);
        df_tensor_release(xv);
        df_session_free(s);
        df_graph_free(g);
    }
}

DF_TEST(ta_dynamic_size_grows) {
    df_graph *g = df_graph_new();
    ta_t a = ta_make(g, "ta", DF_INT32, 0, 0, NULL, 1, 1);
    df_output f = ta_write(g, "w", a, df_scalar_i32(g, 4), df_scalar_i32(g, 7), a.flow);
    df_output sz = ta_size(g, "size", a, f);
    df_output rd = ta_read(g, "r", a, df_scalar_i32(g, 4), f, DF_INT32);
    df_session *s = session(g, 1, 1);
    df_output fe[2] = {sz, rd};
    df_tensor *v[2];
    df_status st;
    run(s, fe, v, 2, NULL, &st);
    CHECK_OK(&st);
    if (!st.code) {
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(v[0]), 5);
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(v[1]), 7);
    }
    release(v, 2);
    df_session_free(s);
    df_graph_free(g);
}

/* TF 2.x: an unwritten element reads as zeros when the element shape is fully defined. */
DF_TEST(ta_unwritten_zeros_when_shape_known) {
    df_graph *g = df_graph_new();
    int64_t e[1] = {2};
    ta_t a = ta_make(g, "ta", DF_FLOAT, 3, 1, e, 0, 1);
    const float r0[2] = {1, 2};
    df_output f = ta_write(g, "w0", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), a.flow);
    const int32_t ix[3] = {0, 1, 2};
    df_output ga = ta_gather(g, "gather", a, vec_i32(g, 3, ix), f, DF_FLOAT);
    df_session *s = session(g, 1, 1);
    df_tensor *v;
    df_status st;
    run(s, &ga, &v, 1, NULL, &st);
    CHECK_OK(&st);
    if (!st.code) {
        const float want[6] = {1, 2, 0, 0, 0, 0};
        for (int i = 0; i < 6; i++) CHECK(((const float *)df_tensor_data(v))[i] == want[i]);
    }
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
    /* unknown element shape: an error */
    g = df_graph_new();
    a = ta_make(g, "ta", DF_FLOAT, 3, -1, NULL, 0, 1);
    df_output rd = ta_read(g, "rd", a, df_scalar_i32(g, 1), a.flow, DF_FLOAT);
    expect_error(g, rd, NULL, DF_INVALID_ARGUMENT, "Could not read from TensorArray index 1", "rd");
    df_graph_free(g);
    /* empty gather: [0] + element shape, only when that shape is fully defined */
    g = df_graph_new();
    a = ta_make(g, "ta", DF_FLOAT, 0, 1, e, 0, 1);
    df_op_builder *b = df_op_new(g, "TensorArrayGatherV3", "empty");
    df_op_add_input(b, a.h); df_op_add_input(b, vec_i32(g, 0, ix)); df_op_add_input(b, a.flow);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "element_shape", 1, e);
    df_output em = {df_op_finish(b), 0};
    df_output em2 = ta_gather(g, "empty2", a, vec_i32(g, 0, ix), a.flow, DF_FLOAT);
    s = session(g, 1, 1);
    run(s, &em, &v, 1, NULL, &st);
    CHECK_OK(&st);
    const int64_t d[2] = {0, 2};
    CHECK(has_shape(v, 2, d));
    df_tensor_release(v);
    df_session_free(s);
    expect_error(g, em2, NULL, DF_UNIMPLEMENTED, "TensorArray has size zero", "empty2");
    df_graph_free(g);
}

/* ---- errors, each naming its node ---- */
DF_TEST(ta_errors) {
    int64_t e[1] = {2};
    const float r0[2] = {1, 2};
    {   /* a second read of a cleared element */
        df_graph *g = df_graph_new();
        ta_t a = ta_make(g, "ta", DF_FLOAT, 1, 1, e, 0, 1);
        df_output f = ta_write(g, "w", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), a.flow);
        df_output r1 = ta_read(g, "r1", a, df_scalar_i32(g, 0), f, DF_FLOAT);
        df_op_builder *b = df_op_new(g, "TensorArrayReadV3", "r2");
        df_op_add_input(b, a.h); df_op_add_input(b, df_scalar_i32(g, 0)); df_op_add_input(b, f);
        df_op_add_control_input(b, r1.node);
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        df_output r2 = {df_op_finish(b), 0};
        expect_error(g, r2, NULL, DF_INVALID_ARGUMENT, "twice because it was cleared after a previous read", "r2");
        df_graph_free(g);
    }
    {   /* clear_after_read false: reads many times */
        df_graph *g = df_graph_new();
        ta_t a = ta_make(g, "ta", DF_FLOAT, 1, 1, e, 0, 0);
        df_output f = ta_write(g, "w", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), a.flow);
        df_output r1 = ta_read(g, "r1", a, df_scalar_i32(g, 0), f, DF_FLOAT);
        df_op_builder *b = df_op_new(g, "TensorArrayReadV3", "r2");
        df_op_add_input(b, a.h); df_op_add_input(b, df_scalar_i32(g, 0)); df_op_add_input(b, f);
        df_op_add_control_input(b, r1.node);
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        df_output r2 = {df_op_finish(b), 0};
        df_session *s = session(g, 1, 1);
        df_tensor *v[2];
        df_output fe[2] = {r1, r2};
        df_status st;
        run(s, fe, v, 2, NULL, &st);
        CHECK_OK(&st);
        if (!st.code) CHECK(((const float *)df_tensor_data(v[1]))[1] == 2);
        release(v, 2);
        df_session_free(s);
        df_graph_free(g);
    }
    {   /* writing one index twice; then writing after a read */
        df_graph *g = df_graph_new();
        ta_t a = ta_make(g, "ta", DF_FLOAT, 2, 1, e, 0, 1);
        df_output f = ta_write(g, "w", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), a.flow);
        df_output f2 = ta_write(g, "w_again", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), f);
        expect_error(g, f2, NULL, DF_INVALID_ARGUMENT, "because it has already been written to", "w_again");
        df_output rd = ta_read(g, "rd", a, df_scalar_i32(g, 1), f, DF_FLOAT);   /* zeros: the shape is known */
        df_output f3 = ta_write(g, "w_after_read", a, df_scalar_i32(g, 1), vec_f32(g, 2, r0), rd.node ? f : f);
        df_op_builder *b = df_op_new(g, "Identity", "after");
        df_op_add_input(b, f3);
        df_op_add_control_input(b, rd.node);
        df_node *after = df_op_finish(b);
        (void)after;
        df_graph_free(g);
    }
    {   /* out of range, no dynamic size; a negative index; reading past the end */
        df_graph *g = df_graph_new();
        ta_t a = ta_make(g, "ta", DF_FLOAT, 2, 1, e, 0, 1);
        df_output f = ta_write(g, "w_far", a, df_scalar_i32(g, 2), vec_f32(g, 2, r0), a.flow);
        expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "Tried to write to index 2 but array is not resizeable and size is: 2", "w_far");
        f = ta_write(g, "w_neg", a, df_scalar_i32(g, -1), vec_f32(g, 2, r0), a.flow);
        expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "Tried to write to index -1", "w_neg");
        df_output rd = ta_read(g, "r_far", a, df_scalar_i32(g, 5), a.flow, DF_FLOAT);
        expect_error(g, rd, NULL, DF_INVALID_ARGUMENT, "Tried to read from index 5 but array size is: 2", "r_far");
        const int32_t ix[1] = {3};
        f = ta_scatter(g, "sc_far", a, vec_i32(g, 1, ix), mat_f32(g, 1, 2, r0), a.flow);
        expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "Max scatter index must be < array size (3 vs. 2)", "sc_far");
        df_graph_free(g);
    }
    {   /* wrong shape, wrong dtype (write and read), a non-scalar index */
        df_graph *g = df_graph_new();
        ta_t a = ta_make(g, "ta", DF_FLOAT, 2, 1, e, 0, 1);
        const float r3[3] = {1, 2, 3};
        df_output f = ta_write(g, "w_shape", a, df_scalar_i32(g, 0), vec_f32(g, 3, r3), a.flow);
        expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "which is incompatible with the TensorArray's inferred element shape: [2]", "w_shape");
        f = ta_write(g, "w_type", a, df_scalar_i32(g, 0), df_scalar_i32(g, 1), a.flow);
        expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "TensorArray dtype is float but Op is trying to write dtype int32", "w_type");
        df_output rd = ta_read(g, "r_type", a, df_scalar_i32(g, 0), a.flow, DF_INT32);
        expect_error(g, rd, NULL, DF_INVALID_ARGUMENT, "TensorArray dtype is float but Op requested dtype int32", "r_type");
        const int32_t two[2] = {0, 1};
        f = ta_write(g, "w_index", a, vec_i32(g, 2, two), vec_f32(g, 2, r0), a.flow);
        expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "TensorArray index must be scalar", "w_index");
        df_graph_free(g);
    }
    {   /* identical_element_shapes: the first write fixes the shape */
        df_graph *g = df_graph_new();
        ta_t a = ta_make(g, "ta", DF_FLOAT, 2, -1, NULL, 0, 1);
        const float r3[3] = {1, 2, 3};
        df_output f = ta_write(g, "w0", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), a.flow);
        f = ta_write(g, "w1", a, df_scalar_i32(g, 1), vec_f32(g, 3, r3), f);
        expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "inferred element shape: [2]", "w1");
        df_graph_free(g);
    }
    {   /* closed */
        df_graph *g = df_graph_new();
        ta_t a = ta_make(g, "ta", DF_FLOAT, 2, 1, e, 0, 1);
        df_node *cl = ta_close(g, "close", a);
        df_op_builder *b = df_op_new(g, "TensorArraySizeV3", "size_after_close");
        df_op_add_input(b, a.h); df_op_add_input(b, a.flow);
        df_op_add_control_input(b, cl);
        df_output sz = {df_op_finish(b), 0};
        expect_error(g, sz, NULL, DF_INVALID_ARGUMENT, "has already been closed.", "size_after_close");
        b = df_op_new(g, "TensorArrayWriteV3", "write_after_close");
        df_op_add_input(b, a.h); df_op_add_input(b, df_scalar_i32(g, 0)); df_op_add_input(b, vec_f32(g, 2, r0)); df_op_add_input(b, a.flow);
        df_op_add_control_input(b, cl);
        df_output wr = {df_op_finish(b), 0};
        expect_error(g, wr, NULL, DF_INVALID_ARGUMENT, "has already been closed.", "write_after_close");
        df_graph_free(g);
    }
    {   /* forged handles: another resource (a stack), a fed resource scalar */
        df_graph *g = df_graph_new();
        df_op_builder *b = df_op_new(g, "StackV2", "stack");
        df_op_add_input(b, df_scalar_i32(g, -1));
        df_op_set_attr_type(b, "elem_type", DF_FLOAT);
        ta_t fake = {{df_op_finish(b), 0}, df_scalar_f32(g, 0)};
        df_output sz = ta_size(g, "size_of_stack", fake, fake.flow);
        expect_error(g, sz, NULL, DF_INVALID_ARGUMENT, "Not a TensorArray handle", "size_of_stack");
        ta_t real = ta_make(g, "real", DF_FLOAT, 1, -1, NULL, 0, 1);   /* and the other way round */
        b = df_op_new(g, "StackPopV2", "pop_of_array");
        df_op_add_input(b, real.h);
        df_op_set_attr_type(b, "elem_type", DF_FLOAT);
        df_output pop = {df_op_finish(b), 0};
        expect_error(g, pop, NULL, DF_INVALID_ARGUMENT, "Not a stack handle", "pop_of_array");
        df_graph_free(g);
    }
}

/* Splitting and concatenating: TF's checks. */
DF_TEST(ta_split_concat_errors) {
    df_graph *g = df_graph_new();
    ta_t a = ta_make(g, "ta", DF_FLOAT, 3, -1, NULL, 0, 1);
    const float m[4] = {1, 2, 3, 4};
    const int64_t lens[2] = {1, 2}, bad[2] = {1, 1};
    df_output f = ta_split(g, "split_size", a, vec_f32(g, 3, m), vec_i64(g, 2, lens), a.flow);
    expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "TensorArray's size is not equal to the size of lengths (3 vs. 2)", "split_size");
    f = ta_split(g, "split_sum", a, vec_f32(g, 3, m), vec_i64(g, 2, bad), a.flow);
    expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "Expected sum of lengths to be equal to values.shape[0]", "split_sum");
    /* TF: with identical_element_shapes, pieces of different lengths do not fit (split writes
       the last piece first, which fixes the shape) */
    ta_t c = ta_make(g, "tc", DF_FLOAT, 2, -1, NULL, 0, 1);
    f = ta_split(g, "split_identical", c, vec_f32(g, 3, m), vec_i64(g, 2, lens), c.flow);
    expect_error(g, f, NULL, DF_INVALID_ARGUMENT, "value shape is [1] which is incompatible with the TensorArray's inferred element shape: [2]", "split_identical");
    ta_t b = ta_make(g, "tb", DF_FLOAT, 1, -1, NULL, 0, 1);
    df_output fb = ta_write(g, "wb", b, df_scalar_i32(g, 0), df_scalar_f32(g, 1), b.flow);
    df_node *cc = ta_concat(g, "concat_scalars", b, fb, DF_FLOAT);
    df_output co = {cc, 0};
    expect_error(g, co, NULL, DF_INVALID_ARGUMENT, "Concat saw a scalar shape at index 0", "concat_scalars");
    df_graph_free(g);
}

/* ---- gradient arrays ---- */
DF_TEST(ta_grad_array_once_per_source_sums_and_zeros) {
    df_graph *g = df_graph_new();
    ta_t a = ta_make(g, "ta", DF_FLOAT, 2, -1, NULL, 1, 1);
    const float r0[2] = {1, 2}, r1[2] = {10, 20};
    df_output f = ta_write(g, "w0", a, df_scalar_i32(g, 0), vec_f32(g, 2, r0), a.flow);
    f = ta_write(g, "w1", a, df_scalar_i32(g, 1), vec_f32(g, 2, r0), f);
    ta_t g1 = ta_grad(g, "g1", a, f, "gradients");
    df_output gf = ta_write(g, "gw0", g1, df_scalar_i32(g, 0), vec_f32(g, 2, r0), g1.flow);
    ta_t g2 = ta_grad(g, "g2", a, gf, "gradients");               /* the same array */
    gf = ta_write(g, "gw0_again", g2, df_scalar_i32(g, 0), vec_f32(g, 2, r1), gf);   /* sums */
    const int32_t ix[2] = {0, 1};
    df_output ga = ta_gather(g, "g_gather", g2, vec_i32(g, 2, ix), gf, DF_FLOAT);     /* index 1: zeros of [2] */
    ta_t other = ta_grad(g, "g_other", a, gf, "gradients_1");    /* another source: another array */
    df_output osz = ta_size(g, "other_size", other, other.flow);
    df_output fsz = ta_size(g, "fwd_size", a, gf);
    df_session *s = session(g, 1, 1);
    df_output fe[5] = {ga, osz, fsz, g1.h, g2.h};
    df_tensor *v[5];
    df_status st;
    run(s, fe, v, 5, NULL, &st);
    CHECK_OK(&st);
    if (!st.code) {
        const float want[4] = {11, 22, 0, 0};
        for (int i = 0; i < 4; i++) CHECK(((const float *)df_tensor_data(v[0]))[i] == want[i]);
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(v[1]), 2);
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(v[2]), 2);
        CHECK(!memcmp(df_tensor_data(v[3]), df_tensor_data(v[4]), 8));   /* found again: the same handle */
    }
    release(v, 5);
    df_session_free(s);
    /* once a gradient array exists the forward array no longer grows */
    df_op_builder *b = df_op_new(g, "TensorArrayWriteV3", "w_grow");
    df_op_add_input(b, a.h); df_op_add_input(b, df_scalar_i32(g, 5)); df_op_add_input(b, vec_f32(g, 2, r0)); df_op_add_input(b, g1.flow);
    df_output wg = {df_op_finish(b), 0};
    expect_error(g, wg, NULL, DF_INVALID_ARGUMENT, "array is not resizeable and size is: 2", "w_grow");
    df_graph_free(g);
}

/* ---- while loops: body writes x * i at i; a second loop reads the elements back ---- */
typedef struct { ta_t a; int n; } loop_arg;
static df_output loop_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], df_scalar_i32(g, ((loop_arg *)user)->n));
}
static void write_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    loop_arg *L = (loop_arg *)user;
    df_output val = df_mul(g, v[2], df_cast(g, v[0], DF_FLOAT));
    next[1] = ta_write(g, NULL, L->a, v[0], val, v[1]);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[2] = v[2];
}
static void read_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    loop_arg *L = (loop_arg *)user;
    df_output r = ta_read(g, NULL, L->a, v[0], v[1], DF_FLOAT);
    next[2] = df_add(g, v[2], r);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
}
DF_TEST(ta_while_loop_write_then_read) {
    for (int pi = 1; pi <= 10; pi += 9) {
        df_graph *g = df_graph_new();
        const int n = 12;
        ta_t a = ta_make(g, "ta", DF_FLOAT, n, 0, NULL, 0, 1);
        loop_arg L = {a, n};
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = pi;
        df_output init[3] = {df_scalar_i32(g, 0), a.flow, df_scalar_f32(g, 2)}, out[3];
        CHECK_EQ_INT(df_while_loop(g, 3, init, loop_cond, write_body, &L, &o, out), DF_OK);
        df_output init2[3] = {df_scalar_i32(g, 0), out[1], df_scalar_f32(g, 0)}, out2[3];
        o.name = "reader";
        CHECK_EQ_INT(df_while_loop(g, 3, init2, loop_cond, read_body, &L, &o, out2), DF_OK);
        df_session *s = session(g, 1, 4);
        df_tensor *v;
        df_status st;
        for (int rep = 0; rep < 3; rep++) {
            run(s, &out2[2], &v, 1, NULL, &st);
            CHECK_OK(&st);
            if (!st.code) CHECK_NEAR(*(const float *)df_tensor_data(v), 2.0 * n * (n - 1) / 2, 0);
            df_tensor_release(v);
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- the array on CPU:0, the written values computed on CPU:1 ---- */
static void write_body_dev(df_graph *g, void *user, const df_output *v, df_output *next) {
    loop_arg *L = (loop_arg *)user;
    df_graph_push_device(g, "/cpu:1");
    df_output val = df_mul(g, v[2], df_cast(g, v[0], DF_FLOAT));
    next[1] = ta_write(g, NULL, L->a, v[0], val, v[1]);
    df_graph_pop_device(g);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[2] = v[2];
}
DF_TEST(ta_two_cpu_devices) {
    for (int threads = 1; threads <= 2; threads++) {
        df_graph *g = df_graph_new();
        const int n = 6;
        df_graph_push_device(g, "/cpu:0");
        ta_t a = ta_make(g, "ta", DF_FLOAT, n, 0, NULL, 0, 1);
        df_graph_pop_device(g);
        loop_arg L = {a, n};
        df_output init[3] = {df_scalar_i32(g, 0), a.flow, df_scalar_f32(g, 3)}, out[3];
        CHECK_EQ_INT(df_while_loop(g, 3, init, loop_cond, write_body_dev, &L, NULL, out), DF_OK);
        int32_t ix[6] = {0, 1, 2, 3, 4, 5};
        df_graph_push_device(g, "/cpu:1");
        df_output ga = ta_gather(g, "gather", a, vec_i32(g, n, ix), out[1], DF_FLOAT);
        df_output sum = df_reduce_sum(g, ga, 0, NULL, 0);
        df_graph_pop_device(g);
        df_session *s = session(g, 2, threads);
        df_tensor *v;
        df_status st;
        run(s, &sum, &v, 1, NULL, &st);
        CHECK_OK(&st);
        if (!st.code) CHECK_NEAR(*(const float *)df_tensor_data(v), 3.0 * n * (n - 1) / 2, 0);
        df_tensor_release(v);
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        /* the write and gather sit with the array (resource edges), the Mul on CPU:1 */
        int found = 0;
        for (int p = 0; p < df_session_num_partitions(s); p++) {
            const char *dev;
            const df_graph *pg = df_session_partition(s, p, &dev);
            if (df_graph_find(pg, "gather")) { found++; CHECK_MSG(strstr(dev, "CPU:0") != NULL, "gather on %s", dev); }
            if (df_graph_find(pg, "while/Mul")) { found++; CHECK_MSG(strstr(dev, "CPU:1") != NULL, "Mul on %s", dev); }
        }
        CHECK_EQ_INT(found, 2);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- gradients ---- */
/* loss(w, x0) = sum_i y_i with y_i = tanh(x_i * w), x_{i+1} = y_i, written into an array at i
   and stacked after the loop. */
typedef struct { ta_t a; int n; df_output w; } grad_arg;
static df_output grad_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], df_scalar_i32(g, ((grad_arg *)user)->n));
}
static void grad_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    grad_arg *A = (grad_arg *)user;
    df_output y = df_tanh(g, df_mul(g, v[2], A->w));
    next[1] = ta_write(g, NULL, A->a, v[0], y, v[1]);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[2] = y;
}
static double loss_ref(double w, const double *x0, int n, int m) {
    double s = 0, x[4];
    for (int k = 0; k < m; k++) x[k] = x0[k];
    for (int i = 0; i < n; i++) for (int k = 0; k < m; k++) { x[k] = tanh(x[k] * w); s += x[k] * (k + 1); }
    return s;
}
DF_TEST(ta_gradient_through_while_loop) {
    for (int pi = 1; pi <= 10; pi += 9) {
        df_graph *g = df_graph_new();
        const int n = 5, m = 3;
        int64_t e[1] = {m};
        df_output w = df_placeholder(g, "w", DF_FLOAT, 0, NULL);
        df_output x0 = df_placeholder(g, "x0", DF_FLOAT, 1, e);
        ta_t a = ta_make(g, "ta", DF_FLOAT, n, 1, e, 0, 1);
        grad_arg A = {a, n, w};
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = pi;
        df_output init[3] = {df_scalar_i32(g, 0), a.flow, x0}, out[3];
        CHECK_EQ_INT(df_while_loop(g, 3, init, grad_cond, grad_body, &A, &o, out), DF_OK);
        int32_t ix[5] = {0, 1, 2, 3, 4};
        df_output stacked = ta_gather(g, "stack", a, vec_i32(g, n, ix), out[1], DF_FLOAT);
        const float wts[3] = {1, 2, 3};
        df_output loss = df_reduce_sum(g, df_mul(g, stacked, vec_f32(g, 3, wts)), 0, NULL, 0);
        df_output xs[2] = {w, x0}, dxs[2];
        df_code gc = df_gradients(g, 1, &loss, NULL, 2, xs, dxs);
        CHECK_MSG(gc == DF_OK, "df_gradients: %s", df_graph_status(g)->message);
        if (gc) { df_graph_free(g); continue; }
        /* every gradient array of this df_gradients call is found by one source (TF's
           _GetGradSource: the gradients name scope), inside the gradient loop too */
        int n_grad_ops = 0;
        for (int i = 0; i < df_graph_num_nodes(g); i++) {
            df_node *nd = df_graph_node_at(g, i);
            const char *src = NULL;
            if (strcmp(df_node_op(nd), "TensorArrayGradV3")) continue;
            n_grad_ops++;
            CHECK(df_node_attr_string(nd, "source", &src) && !strcmp(src, "gradients"));
        }
        CHECK_EQ_INT(n_grad_ops, 2);      /* the gather's gradient, the write's (in the gradient loop) */
        df_session *s = session(g, 1, 4);
        const float wv = 0.7f, xv[3] = {0.5f, -0.3f, 0.9f};
        df_tensor *tw = df_tensor_scalar_f32(wv), *tx = df_tensor_from_data(DF_FLOAT, 1, e, xv, 12, NULL);
        df_output feeds[2] = {w, x0}, fe[3] = {loss, dxs[0], dxs[1]};
        df_tensor *fv[2] = {tw, tx}, *v[3] = {NULL, NULL, NULL};
        df_status st;
        df_session_run(s, feeds, fv, 2, fe, v, 3, NULL, 0, &st);
        CHECK_OK(&st);
        if (!st.code) {
            double xd[3] = {xv[0], xv[1], xv[2]}, h = 1e-4;
            CHECK_NEAR(*(const float *)df_tensor_data(v[0]), loss_ref(wv, xd, n, m), 1e-4);
            double dw = (loss_ref(wv + h, xd, n, m) - loss_ref(wv - h, xd, n, m)) / (2 * h);
            CHECK_NEAR(*(const float *)df_tensor_data(v[1]), dw, 1e-3);
            for (int k = 0; k < m; k++) {
                double xp[3] = {xd[0], xd[1], xd[2]}, xm[3] = {xd[0], xd[1], xd[2]};
                xp[k] += h; xm[k] -= h;
                double dx = (loss_ref(wv, xp, n, m) - loss_ref(wv, xm, n, m)) / (2 * h);
                CHECK_NEAR(((const float *)df_tensor_data(v[2]))[k], dx, 1e-3);
            }
        }
        release(v, 3);
        df_tensor_release(tw);
        df_tensor_release(tx);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* Outside loops: split -> read/gather/concat, scatter -> gather, write -> read chains. */
DF_TEST(ta_gradients_straight_line) {
    df_graph *g = df_graph_new();
    int64_t d[2] = {4, 2};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, d);
    ta_identical = 0;
    ta_t a = ta_make(g, "ta", DF_FLOAT, 2, -1, NULL, 0, 1);
    ta_identical = 1;
    const int64_t lens[2] = {3, 1};
    df_output f = ta_split(g, "split", a, x, vec_i64(g, 2, lens), a.flow);
    df_node *cc = ta_concat(g, "concat", a, f, DF_FLOAT);          /* = x */
    df_output cc_out = {cc, 0};
    int64_t e2[1] = {2};
    ta_t b = ta_make(g, "tb", DF_FLOAT, 4, 1, e2, 0, 1);
    const int32_t perm[4] = {3, 1, 0, 2};
    df_output fb = ta_scatter(g, "scatter", b, vec_i32(g, 4, perm), df_square(g, cc_out), b.flow);
    df_output r = ta_read(g, "read", b, df_scalar_i32(g, 0), fb, DF_FLOAT);     /* = x[2]^2 */
    const int32_t rest[3] = {1, 2, 3};
    df_output ga = ta_gather(g, "gather", b, vec_i32(g, 3, rest), fb, DF_FLOAT);  /* x[1]^2, x[3]^2, x[0]^2 */
    const float wr[2] = {5, 7};
    df_output loss = df_add(g, df_reduce_sum(g, df_mul(g, r, vec_f32(g, 2, wr)), 0, NULL, 0), df_reduce_sum(g, ga, 0, NULL, 0));
    df_output dx;
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 1, &x, &dx), DF_OK);
    df_session *s = session(g, 1, 1);
    const float xv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    df_tensor *tx = df_tensor_from_data(DF_FLOAT, 2, d, xv, 32, NULL), *v = NULL;
    df_status st;
    df_session_run(s, &x, &tx, 1, &dx, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (!st.code) {
        const float *gx = (const float *)df_tensor_data(v);
        const float want[8] = {2, 4, 6, 8, 5 * 2 * 5, 7 * 2 * 6, 14, 16};
        for (int i = 0; i < 8; i++) CHECK_NEAR(gx[i], want[i], 1e-5);
    }
    df_tensor_release(v);
    df_tensor_release(tx);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- several runs of one session at once: each has its own arrays ---- */
typedef struct { df_session *s; df_output f; int bad; } thread_arg;
static void *run_many(void *p) {
    thread_arg *T = (thread_arg *)p;
    for (int k = 0; k < 20; k++) {
        df_tensor *v = NULL;
        df_status st;
        df_session_run(T->s, NULL, NULL, 0, &T->f, &v, 1, NULL, 0, &st);
        if (st.code || fabsf(*(const float *)df_tensor_data(v) - 2.0f * 16 * 15 / 2) > 0) T->bad++;
        df_tensor_release(v);
    }
    return NULL;
}
DF_TEST(ta_concurrent_runs) {
    df_graph *g = df_graph_new();
    const int n = 16;
    ta_t a = ta_make(g, "ta", DF_FLOAT, n, 0, NULL, 0, 1);
    loop_arg L = {a, n};
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = 10;
    df_output init[3] = {df_scalar_i32(g, 0), a.flow, df_scalar_f32(g, 2)}, out[3];
    df_while_loop(g, 3, init, loop_cond, write_body, &L, &o, out);
    df_output init2[3] = {df_scalar_i32(g, 0), out[1], df_scalar_f32(g, 0)}, out2[3];
    o.name = "reader";
    df_while_loop(g, 3, init2, loop_cond, read_body, &L, &o, out2);
    df_session *s = session(g, 1, 4);
    thread_arg T[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) { T[i].s = s; T[i].f = out2[2]; T[i].bad = 0; pthread_create(&th[i], NULL, run_many, &T[i]); }
    for (int i = 0; i < 4; i++) { pthread_join(th[i], NULL); CHECK_EQ_INT(T[i].bad, 0); }
    df_session_free(s);
    df_graph_free(g);
}
