/* test_bad_input.c - every public function meets malformed input: NULL pointers, negative and
   overflowing sizes, wrong dtypes, unknown ops, missing and mistyped attrs, wrong input counts,
   incompatible shapes, axes out of range, bad feeds and fetches, malformed files (the advisory
   list in reference/perf-and-reliability.md 5.3). Each gets a clear non-OK status, never a crash.
   Graph-building errors are sticky, so each bad case gets a fresh graph. */
#include "harness.h"
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})
#define NOUT ((df_output){NULL, 0})

#define CHECK_CODE(st, c)                                                                      \
    do { if ((st)->code != (c)) df_test_fail(__FILE__, __LINE__, "expected %s, got %s: %s",    \
             df_code_name(c), df_code_name((st)->code), (st)->message); } while (0)

/* ---------------------------------------------------------------------------------------------
   Helpers
   --------------------------------------------------------------------------------------------- */
static void store_as(df_dtype dt, void *p, int64_t i, double v) {
    switch (dt) {
    case DF_FLOAT: ((float *)p)[i] = (float)v; break;
    case DF_DOUBLE: ((double *)p)[i] = v; break;
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case DF_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    default: break;
    }
}

static df_tensor *tensor_of(df_dtype dt, int rank, const int64_t *dims, const double *v) {
    df_status st;
    df_status_clear(&st);
    df_tensor *t = df_tensor_new(dt, rank, dims, &st);
    if (!t) { df_test_fail(__FILE__, __LINE__, "df_tensor_new: %s", st.message); return NULL; }
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) store_as(dt, df_tensor_data(t), i, v[i]);
    return t;
}

static df_output konst(df_graph *g, df_dtype dt, int rank, const int64_t *dims, const double *v) {
    df_tensor *t = tensor_of(dt, rank, dims, v);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}

/* int64 constants that doubles cannot carry exactly */
static df_output konst_i64(df_graph *g, int n, const int64_t *v) {
    df_status st;
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_INT64, 1, &d, v, (size_t)n * 8, &st);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
#define KI64(g, ...) konst_i64(g, LEN(((const int64_t[]){__VA_ARGS__})), (const int64_t[]){__VA_ARGS__})

static df_output kvec_i32(df_graph *g, int n, const int32_t *v) {
    df_status st;
    int64_t d = n;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, &d, v, (size_t)n * 4, &st);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
#define KI32(g, ...) kvec_i32(g, LEN(((const int32_t[]){__VA_ARGS__})), (const int32_t[]){__VA_ARGS__})

static df_output f23(df_graph *g) { return konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)); }

/* An op with an explicit name and n data inputs. */
static df_output named(df_graph *g, const char *type, const char *name, int n, const df_output *in) {
    df_op_builder *b = df_op_new(g, type, name);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output named1(df_graph *g, const char *type, const char *name, df_output x) {
    return named(g, type, name, 1, &x);
}
static df_output named2(df_graph *g, const char *type, const char *name, df_output a, df_output b) {
    df_output in[2] = {a, b};
    return named(g, type, name, 2, in);
}
static df_output named3(df_graph *g, const char *type, const char *name, df_output a, df_output b,
                        df_output c) {
    df_output in[3] = {a, b, c};
    return named(g, type, name, 3, in);
}

static df_output ph(df_graph *g, const char *name, df_dtype dt, int rank, const int64_t *dims) {
    return df_placeholder(g, name, dt, rank, dims);
}

/* The message names the node TF-style and holds needle. */
static void check_message(const char *file, int line, const df_status *st, const char *needle,
                          const char *node) {
    if (needle && !strstr(st->message, needle))
        df_test_fail(file, line, "message '%s' lacks '%s'", st->message, needle);
    if (node) {
        char want[256];
        snprintf(want, sizeof want, "{{node %s}}", node);
        if (!strstr(st->message, want))
            df_test_fail(file, line, "message '%s' lacks '%s'", st->message, want);
    }
}

/* A run of g refuses with `code`: either df_session_new fails with it or the run does. */
static void check_session_refuses(const char *file, int line, df_graph *g, df_code code) {
    df_status st;
    df_status_clear(&st);
    df_session *s = df_session_new(g, NULL, &st);
    if (!s) {
        if (st.code != code)
            df_test_fail(file, line, "session_new on a failed graph: %s, want %s: %s",
                         df_code_name(st.code), df_code_name(code), st.message);
        return;
    }
    df_output fetch = NOUT;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *n = df_graph_node_at(g, i);
        if (n && df_node_num_outputs(n) > 0) { fetch.node = n; break; }
    }
    df_tensor *out = NULL;
    df_code rc = df_session_run(s, NULL, NULL, 0, &fetch, &out, fetch.node ? 1 : 0, NULL, 0, &st);
    if (rc != code || st.code != code)
        df_test_fail(file, line, "run on a failed graph returned %s (status %s), want %s",
                     df_code_name(rc), df_code_name(st.code), df_code_name(code));
    df_tensor_release(out);
    df_session_free(s);
}

/* g holds a sticky build error with code, needle and {{node NAME}}. Checks that later building
   is a no-op and that sessions refuse. Frees g. */
static void expect_build_error_(const char *file, int line, df_graph *g, df_code code,
                                const char *needle, const char *node) {
    const df_status *gs = df_graph_status(g);
    if (!gs || gs->code == DF_OK) {
        df_test_fail(file, line, "expected a build error %s, graph is OK", df_code_name(code));
        df_graph_free(g);
        return;
    }
    if (gs->code != code)
        df_test_fail(file, line, "build error %s, want %s: %s", df_code_name(gs->code),
                     df_code_name(code), gs->message);
    check_message(file, line, gs, needle, node);
    df_status first = *gs;
    int n0 = df_graph_num_nodes(g);
    df_output c = df_scalar_f32(g, 1.0f);
    if (c.node) df_test_fail(file, line, "building after an error returned a node");
    df_op_builder *b = df_op_new(g, "NoOp", "built_after_error");
    if (df_op_finish(b)) df_test_fail(file, line, "df_op_finish after an error returned a node");
    if (df_graph_num_nodes(g) != n0 || df_graph_find(g, "built_after_error"))
        df_test_fail(file, line, "building after an error added nodes");
    gs = df_graph_status(g);
    if (!gs || gs->code != first.code || strcmp(gs->message, first.message) != 0)
        df_test_fail(file, line, "the first error was not kept");
    check_session_refuses(file, line, g, first.code);
    df_graph_free(g);
}
#define BUILD_ERR(g, code, needle, node) expect_build_error_(__FILE__, __LINE__, g, code, needle, node)

/* An error either while building (shape inference on constant inputs, as TF does) or when
   running y with the given feeds. Frees g. */
static void expect_error_(const char *file, int line, df_graph *g, df_output y, int n_feeds,
                          const df_output *feeds, df_tensor *const *vals, df_code code,
                          const char *needle, const char *node) {
    const df_status *gs = df_graph_status(g);
    if (gs && gs->code != DF_OK) {
        if (gs->code != code)
            df_test_fail(file, line, "build error %s, want %s: %s", df_code_name(gs->code),
                         df_code_name(code), gs->message);
        check_message(file, line, gs, needle, node);
        if (y.node) df_test_fail(file, line, "a failed build returned a node");
        df_graph_free(g);
        return;
    }
    if (!y.node) {
        df_test_fail(file, line, "no node and no graph error");
        df_graph_free(g);
        return;
    }
    df_status st;
    df_status_clear(&st);
    df_session *s = df_session_new(g, NULL, &st);
    if (!s) {
        df_test_fail(file, line, "df_session_new: %s", st.message);
        df_graph_free(g);
        return;
    }
    df_tensor *out = NULL;
    df_code rc = df_session_run(s, feeds, vals, n_feeds, &y, &out, 1, NULL, 0, &st);
    if (rc != st.code) df_test_fail(file, line, "run returned %s, status %s", df_code_name(rc), df_code_name(st.code));
    if (st.code == DF_OK) {
        char buf[160];
        df_test_fail(file, line, "expected %s, the run succeeded: %s", df_code_name(code),
                     out ? df_tensor_describe(out, buf, sizeof buf) : "(null)");
    } else {
        if (st.code != code)
            df_test_fail(file, line, "run error %s, want %s: %s", df_code_name(st.code),
                         df_code_name(code), st.message);
        check_message(file, line, &st, needle, node);
    }
    df_tensor_release(out);
    df_session_free(s);
    df_graph_free(g);
}
#define ANY_ERR(g, y, code, needle, node) expect_error_(__FILE__, __LINE__, g, y, 0, NULL, NULL, code, needle, node)
#define FEED_ERR(g, y, nf, f, v, code, needle, node) expect_error_(__FILE__, __LINE__, g, y, nf, f, v, code, needle, node)

/* Runs y; returns the value (or NULL after a recorded failure). */
static df_tensor *run_ok_(const char *file, int line, df_graph *g, df_output y) {
    df_status st;
    df_status_clear(&st);
    df_session *s = df_session_new(g, NULL, &st);
    if (!s) { df_test_fail(file, line, "session: %s", st.message); return NULL; }
    df_tensor *out = NULL;
    df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
    if (st.code != DF_OK) df_test_fail(file, line, "run: %s: %s", df_code_name(st.code), st.message);
    df_session_free(s);
    return out;
}
#define RUN_OK(g, y) run_ok_(__FILE__, __LINE__, g, y)

/* ---------------------------------------------------------------------------------------------
   Graph structure: unknown ops, attrs, input counts, names, dtypes
   --------------------------------------------------------------------------------------------- */
DF_TEST(bad_unknown_op) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "NoSuchOp", "x");
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_NOT_FOUND, "NoSuchOp", NULL);          /* TF: NotFound "Op type not registered" */
    g = df_graph_new();
    b = df_op_new(g, NULL, "x");
    CHECK(df_op_finish(b) == NULL);
    {
        const df_status *gs0 = df_graph_status(g);
        CHECK_MSG(gs0 && (gs0->code == DF_INVALID_ARGUMENT || gs0->code == DF_NOT_FOUND), "NULL op type: %s",
                  gs0 ? df_code_name(gs0->code) : "no status");
        CHECK(gs0 && !strstr(gs0->message, "(null)"));      /* printf("%s", NULL) is undefined */
    }
    df_graph_free(g);
    g = df_graph_new();
    b = df_op_new(g, "", NULL);
    CHECK(df_op_finish(b) == NULL);
    const df_status *gs = df_graph_status(g);
    CHECK(gs && gs->code != DF_OK);
    df_graph_free(g);
    CHECK(df_op_is_registered("AddV2"));
    CHECK(df_op_is_registered("SparseSoftmaxCrossEntropyWithLogits"));
    CHECK(!df_op_is_registered("NoSuchOp"));
    CHECK(!df_op_is_registered("addv2"));
    CHECK(!df_op_is_registered(""));
    CHECK(!df_op_is_registered(NULL));
}

DF_TEST(bad_missing_attrs) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "Placeholder", "p");
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "dtype", "p");

    g = df_graph_new();
    b = df_op_new(g, "Const", "c");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "value", "c");

    g = df_graph_new();
    df_tensor *t = df_tensor_scalar_f32(1);
    b = df_op_new(g, "Const", "c");
    df_op_set_attr_tensor(b, "value", t);
    CHECK(df_op_finish(b) == NULL);                          /* TF: Const needs dtype too */
    df_tensor_release(t);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "dtype", "c");

    g = df_graph_new();
    b = df_op_new(g, "Cast", "cast");
    df_op_add_input(b, df_scalar_f32(g, 1));
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "DstT", "cast");

    g = df_graph_new();
    b = df_op_new(g, "VariableV2", "v");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "shape", "v");

    g = df_graph_new();
    b = df_op_new(g, "Unpack", "u");
    df_op_add_input(b, f23(g));
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "num", "u");

    g = df_graph_new();
    b = df_op_new(g, "RandomUniform", "r");
    df_op_add_input(b, KI32(g, 2));
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "dtype", "r");
}

DF_TEST(bad_mistyped_and_unknown_attrs) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "Placeholder", "p");
    df_op_set_attr_int(b, "dtype", 1);                        /* an int where a type is wanted */
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "dtype", "p");

    g = df_graph_new();
    b = df_op_new(g, "MatMul", "mm");
    df_op_add_input(b, f23(g));
    df_op_add_input(b, konst(g, DF_FLOAT, 2, D(3, 1), V(1, 2, 3)));
    df_op_set_attr_string(b, "transpose_a", "yes");
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "transpose_a", "mm");

    g = df_graph_new();
    b = df_op_new(g, "Squeeze", "sq");
    df_op_add_input(b, konst(g, DF_FLOAT, 2, D(1, 1), V(1)));
    df_op_set_attr_int(b, "squeeze_dims", 0);                 /* an int where a list is wanted */
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "squeeze_dims", "sq");

    g = df_graph_new();
    b = df_op_new(g, "AddV2", "add");
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_op_add_input(b, df_scalar_f32(g, 2));
    df_op_set_attr_int(b, "bogus_attr", 3);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "bogus_attr", "add");

    /* invalid, reference and resource dtypes (advisories 7, 37); a variant Placeholder is
       TensorFlow's way to feed a TensorList back, so it is allowed (tests/test_tensor_list.c) */
    const int bad_types[] = {0, 999, -1, 101, 20};
    for (int i = 0; i < LEN(bad_types); i++) {
        g = df_graph_new();
        b = df_op_new(g, "Placeholder", "p");
        df_op_set_attr_type(b, "dtype", (df_dtype)bad_types[i]);
        CHECK(df_op_finish(b) == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "p");
    }
    g = df_graph_new();
    CHECK(df_placeholder(g, "p", (df_dtype)999, 0, NULL).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "p");
    g = df_graph_new();
    CHECK(df_cast(g, df_scalar_f32(g, 1), (df_dtype)77).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);

    /* NULL attribute names and values */
    g = df_graph_new();
    b = df_op_new(g, "Placeholder", "p");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_int(b, NULL, 3);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "p");
    g = df_graph_new();
    b = df_op_new(g, "Const", "c");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_tensor(b, "value", NULL);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "c");
}

DF_TEST(bad_attr_list_and_shape_arguments) {
    /* NULL arrays with nonzero counts, negative counts, bad shapes */
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "Squeeze", "sq");
    df_op_add_input(b, konst(g, DF_FLOAT, 2, D(1, 1), V(1)));
    df_op_set_attr_int_list(b, "squeeze_dims", NULL, 2);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);

    g = df_graph_new();
    b = df_op_new(g, "Squeeze", "sq");
    df_op_add_input(b, konst(g, DF_FLOAT, 2, D(1, 1), V(1)));
    df_op_set_attr_int_list(b, "squeeze_dims", D(0), -1);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);

    g = df_graph_new();
    b = df_op_new(g, "IdentityN", "idn");
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_op_set_attr_type_list(b, "T", NULL, 3);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);

    const struct { int rank; int64_t dims[9]; } shapes[] = {
        {2, {2, -2}}, {1, {-5}}, {9, {1, 1, 1, 1, 1, 1, 1, 1, 1}}, {-2, {0}},
        {2, {(int64_t)1 << 32, (int64_t)1 << 32}}, {3, {INT64_MAX, 2, 1}}, {1, {INT64_MIN}},
    };
    for (int i = 0; i < LEN(shapes); i++) {
        g = df_graph_new();
        b = df_op_new(g, "Placeholder", "p");
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        df_op_set_attr_shape(b, "shape", shapes[i].rank, shapes[i].dims);
        CHECK(df_op_finish(b) == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "p");
        g = df_graph_new();
        CHECK(df_placeholder(g, "p", DF_FLOAT, shapes[i].rank, shapes[i].dims).node == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "p");
        g = df_graph_new();
        CHECK(df_variable(g, "v", DF_FLOAT, shapes[i].rank, shapes[i].dims).node == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "v");
    }
    g = df_graph_new();
    b = df_op_new(g, "Placeholder", "p");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 2, NULL);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_placeholder(g, "p", DF_FLOAT, 2, NULL).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_variable(g, "v", DF_FLOAT, 3, NULL).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);

    /* unknown rank (-1) and unknown dims (-1) are legal */
    g = df_graph_new();
    CHECK(df_placeholder(g, "p", DF_FLOAT, -1, NULL).node != NULL);
    CHECK(df_placeholder(g, "q", DF_FLOAT, 2, D(-1, 3)).node != NULL);
    CHECK_EQ_INT(df_graph_status(g)->code, DF_OK);
    df_graph_free(g);
}

DF_TEST(bad_input_counts) {
    df_graph *g = df_graph_new();
    CHECK(named1(g, "AddV2", "add", df_scalar_f32(g, 1)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "add");
    g = df_graph_new();
    df_output x = df_scalar_f32(g, 1);
    CHECK(named3(g, "AddV2", "add", x, x, x).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "add");
    g = df_graph_new();
    CHECK(named(g, "Neg", "neg", 0, NULL).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "neg");
    g = df_graph_new();
    CHECK(named1(g, "MatMul", "mm", f23(g)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "mm");
    g = df_graph_new();
    df_tensor *t = df_tensor_scalar_f32(1);
    df_op_builder *b = df_op_new(g, "Const", "c");
    df_op_add_input(b, df_scalar_f32(g, 2));
    df_op_set_attr_tensor(b, "value", t);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    CHECK(df_op_finish(b) == NULL);
    df_tensor_release(t);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "c");
    g = df_graph_new();
    CHECK(named2(g, "Reshape", "r", f23(g), KI32(g, 6)).node != NULL);   /* control */
    CHECK(named(g, "Reshape", "r2", 1, (df_output[]){f23(g)}).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "r2");

    /* list inputs: AddN needs N >= 1; ConcatV2 needs N >= 2 (TF's op definitions) */
    g = df_graph_new();
    b = df_op_new(g, "AddN", "an");
    df_op_add_input_list(b, NULL, 0);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "an");
    g = df_graph_new();
    CHECK(df_add_n(g, NULL, 0).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_add_n(g, NULL, 2).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    x = df_scalar_f32(g, 1);
    CHECK(df_add_n(g, &x, -1).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    b = df_op_new(g, "ConcatV2", "cc");
    x = f23(g);
    df_op_add_input_list(b, &x, 1);
    df_op_add_input(b, df_scalar_i32(g, 0));
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "cc");
    g = df_graph_new();
    b = df_op_new(g, "AddN", "an");
    df_op_add_input_list(b, NULL, 2);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    b = df_op_new(g, "AddN", "an");
    x = df_scalar_f32(g, 1);
    df_op_add_input_list(b, &x, -3);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
}

DF_TEST(bad_null_and_dangling_inputs) {
    df_graph *g = df_graph_new();
    CHECK(df_add(g, NOUT, df_scalar_f32(g, 1)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_neg(g, NOUT).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(named1(g, "Identity", "id", NOUT).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "id");
    g = df_graph_new();
    df_output xs[2] = {df_scalar_f32(g, 1), NOUT};
    CHECK(df_add_n(g, xs, 2).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    /* output index out of range, negative */
    g = df_graph_new();
    df_output c = df_scalar_f32(g, 1);
    c.index = 3;
    CHECK(named1(g, "Identity", "id", c).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "id");
    g = df_graph_new();
    c = df_scalar_f32(g, 1);
    c.index = -1;
    CHECK(named1(g, "Identity", "id", c).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "id");
    /* a node of another graph */
    df_graph *other = df_graph_new();
    df_output foreign = df_scalar_f32(other, 1);
    g = df_graph_new();
    CHECK(named1(g, "Identity", "id", foreign).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "id");
    g = df_graph_new();
    df_op_builder *b = df_op_new(g, "NoOp", "n");
    df_op_add_control_input(b, foreign.node);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "n");
    g = df_graph_new();
    b = df_op_new(g, "NoOp", "n");
    df_op_add_control_input(b, NULL);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "n");
    g = df_graph_new();
    df_node *deps[2] = {foreign.node, NULL};
    CHECK(df_no_op(g, deps, 2) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_no_op(g, NULL, 2) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    df_graph_push_control_deps(g, NULL, 2);
    CHECK(df_scalar_f32(g, 1).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    df_graph_free(other);
    /* a control dependency scope with a valid node works (control) */
    g = df_graph_new();
    df_node *first = df_scalar_f32(g, 1).node;
    df_graph_push_control_deps(g, &first, 1);
    df_output after = df_scalar_f32(g, 2);
    df_graph_pop_control_deps(g);
    CHECK(after.node && df_node_num_control_inputs(after.node) == 1 && df_node_control_input(after.node, 0) == first);
    CHECK_EQ_INT(df_graph_status(g)->code, DF_OK);
    df_graph_free(g);
}

DF_TEST(bad_duplicate_and_malformed_names) {
    df_graph *g = df_graph_new();
    CHECK(ph(g, "x", DF_FLOAT, 0, NULL).node != NULL);
    CHECK(ph(g, "x", DF_FLOAT, 0, NULL).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "x", NULL);             /* TF C API: InvalidArgument */
    g = df_graph_new();
    CHECK(named1(g, "Identity", "dup", df_scalar_f32(g, 1)).node != NULL);
    CHECK(named1(g, "Neg", "dup", df_scalar_f32(g, 1)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "dup", NULL);
    g = df_graph_new();
    CHECK(df_variable(g, "w", DF_FLOAT, 0, NULL).node != NULL);
    CHECK(df_variable(g, "w", DF_FLOAT, 0, NULL).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "w", NULL);
    /* names that would break "name:index" tensor names or are empty */
    const char *bad[] = {"a:0", "a b", "/lead"};
    for (int i = 0; i < LEN(bad); i++) {
        g = df_graph_new();
        CHECK_MSG(named1(g, "Identity", bad[i], df_scalar_f32(g, 1)).node == NULL, "name '%s' accepted", bad[i]);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    }
    /* automatic names never collide with explicit ones */
    g = df_graph_new();
    df_output a = named1(g, "Identity", "Identity", df_scalar_f32(g, 1));
    df_output b2 = df_identity(g, a);
    CHECK(a.node && b2.node && strcmp(df_node_name(b2.node), "Identity") != 0);
    CHECK_EQ_INT(df_graph_status(g)->code, DF_OK);
    df_graph_free(g);
}

DF_TEST(bad_dtypes_for_typed_ops) {
    struct { const char *op; int n; df_dtype in[4]; } c[] = {
        {"AddV2", 2, {DF_FLOAT, DF_INT32}},  {"Sub", 2, {DF_DOUBLE, DF_FLOAT}},
        {"Mul", 2, {DF_INT64, DF_INT32}},    {"Maximum", 2, {DF_BOOL, DF_BOOL}},
        {"MatMul", 2, {DF_BOOL, DF_BOOL}},   {"MatMul", 2, {DF_FLOAT, DF_DOUBLE}},
        {"Sqrt", 1, {DF_INT32}},             {"Exp", 1, {DF_BOOL}},
        {"Relu", 1, {DF_BOOL}},              {"LogicalNot", 1, {DF_FLOAT}},
        {"LogicalAnd", 2, {DF_INT32, DF_INT32}}, {"Softmax", 1, {DF_INT32}},
        {"Less", 2, {DF_FLOAT, DF_INT32}},   {"Select", 3, {DF_FLOAT, DF_FLOAT, DF_FLOAT}},
        {"SelectV2", 3, {DF_BOOL, DF_FLOAT, DF_INT32}}, {"Sum", 2, {DF_FLOAT, DF_FLOAT}},
        {"Reshape", 2, {DF_FLOAT, DF_FLOAT}}, {"Transpose", 2, {DF_FLOAT, DF_FLOAT}},
        {"Fill", 2, {DF_FLOAT, DF_FLOAT}},   {"Tile", 2, {DF_FLOAT, DF_BOOL}},
        {"ExpandDims", 2, {DF_FLOAT, DF_FLOAT}}, {"Range", 3, {DF_INT32, DF_FLOAT, DF_INT32}},
        {"GatherV2", 3, {DF_FLOAT, DF_FLOAT, DF_INT32}}, {"ArgMax", 2, {DF_FLOAT, DF_FLOAT}},
        {"BiasAdd", 2, {DF_FLOAT, DF_DOUBLE}}, {"RealDiv", 2, {DF_BOOL, DF_BOOL}},
        {"SparseSoftmaxCrossEntropyWithLogits", 2, {DF_FLOAT, DF_FLOAT}},
        {"SoftmaxCrossEntropyWithLogits", 2, {DF_FLOAT, DF_INT32}},
        {"Slice", 3, {DF_FLOAT, DF_FLOAT, DF_FLOAT}}, {"Pow", 2, {DF_BOOL, DF_BOOL}},
    };
    for (int i = 0; i < LEN(c); i++) {
        df_graph *g = df_graph_new();
        df_output in[4];
        for (int k = 0; k < c[i].n; k++) in[k] = konst(g, c[i].in[k], 2, D(2, 2), V(1, 0, 1, 1));
        CHECK_MSG(named(g, c[i].op, "bad", c[i].n, in).node == NULL, "%s accepted bad dtypes", c[i].op);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "bad");
    }
    /* list inputs of mixed dtypes */
    df_graph *g = df_graph_new();
    df_output mix[2] = {df_scalar_f32(g, 1), df_scalar_i32(g, 1)};
    CHECK(df_add_n(g, mix, 2).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    mix[0] = df_scalar_f32(g, 1);
    mix[1] = df_scalar_i32(g, 1);
    df_op_builder *b = df_op_new(g, "ConcatV2", "cc");
    df_op_add_input_list(b, mix, 2);
    df_op_add_input(b, df_scalar_i32(g, 0));
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "cc");
    g = df_graph_new();
    mix[0] = df_scalar_f32(g, 1);
    mix[1] = df_scalar_f64(g, 1);
    b = df_op_new(g, "Pack", "pk");
    df_op_add_input_list(b, mix, 2);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "pk");
    /* Assign: value dtype differs from the variable's; target not a variable */
    g = df_graph_new();
    CHECK(df_assign(g, df_variable(g, "v", DF_FLOAT, 1, D(2)), konst(g, DF_INT32, 1, D(2), V(1, 2))) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_assign(g, konst(g, DF_FLOAT, 1, D(2), V(1, 2)), konst(g, DF_FLOAT, 1, D(2), V(3, 4))) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_assign_add(g, df_scalar_f32(g, 1), df_scalar_f32(g, 1)) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    /* Const whose tensor dtype does not match its dtype attr (advisory 5) */
    g = df_graph_new();
    df_tensor *t = df_tensor_scalar_f32(1);
    b = df_op_new(g, "Const", "c");
    df_op_set_attr_tensor(b, "value", t);
    df_op_set_attr_type(b, "dtype", DF_INT32);
    df_output cy = {df_op_finish(b), 0};
    df_tensor_release(t);
    ANY_ERR(g, cy, DF_INVALID_ARGUMENT, NULL, "c");
    /* Cast's SrcT contradicting the input */
    g = df_graph_new();
    b = df_op_new(g, "Cast", "cast");
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_op_set_attr_type(b, "SrcT", DF_INT32);
    df_op_set_attr_type(b, "DstT", DF_FLOAT);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "cast");
}

/* ---------------------------------------------------------------------------------------------
   Incompatible static shapes
   --------------------------------------------------------------------------------------------- */
DF_TEST(bad_incompatible_shapes_broadcast) {
    df_graph *g = df_graph_new();
    df_output y = named2(g, "AddV2", "add", ph(g, "a", DF_FLOAT, 2, D(3, 4)), ph(g, "b", DF_FLOAT, 1, D(5)));
    CHECK(y.node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "Incompatible shapes", "add");
    /* the node name is the full scoped name */
    g = df_graph_new();
    df_output a = ph(g, "a", DF_FLOAT, 2, D(3, 4)), b = ph(g, "b", DF_FLOAT, 1, D(5));
    df_graph_push_name_scope(g, "layer1");
    CHECK(named2(g, "AddV2", "add", a, b).node == NULL);
    df_graph_pop_name_scope(g);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "Incompatible shapes", "layer1/add");
    const char *ops[] = {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow", "Less", "Equal",
                         "NotEqual", "GreaterEqual"};
    for (int i = 0; i < LEN(ops); i++) {
        g = df_graph_new();
        CHECK(named2(g, ops[i], "op", konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)),
                     konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6))).node == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, "Incompatible shapes", "op");
    }
    g = df_graph_new();
    CHECK(named2(g, "LogicalAnd", "and", konst(g, DF_BOOL, 1, D(2), V(1, 0)), konst(g, DF_BOOL, 1, D(3), V(1, 0, 1))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "Incompatible shapes", "and");
    /* unknown dims do not hide a known clash */
    g = df_graph_new();
    CHECK(named2(g, "Mul", "mul", ph(g, "a", DF_FLOAT, 2, D(-1, 4)), ph(g, "b", DF_FLOAT, 2, D(-1, 3))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, "Incompatible shapes", "mul");
    /* and when the clash is only known at run time, the kernel reports it */
    g = df_graph_new();
    df_output pa = ph(g, "a", DF_FLOAT, 1, D(-1)), pb = ph(g, "b", DF_FLOAT, 1, D(-1));
    y = named2(g, "AddV2", "add", pa, pb);
    df_tensor *va = tensor_of(DF_FLOAT, 1, D(3), V(1, 2, 3)), *vb = tensor_of(DF_FLOAT, 1, D(2), V(1, 2));
    df_output feeds[2] = {pa, pb};
    df_tensor *vals[2] = {va, vb};
    FEED_ERR(g, y, 2, feeds, vals, DF_INVALID_ARGUMENT, "Incompatible shapes", "add");
    df_tensor_release(va);
    df_tensor_release(vb);
    /* SelectV2 three-way broadcasting clash */
    g = df_graph_new();
    CHECK(named3(g, "SelectV2", "sel", konst(g, DF_BOOL, 1, D(2), V(1, 0)), f23(g), f23(g)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "sel");
}

DF_TEST(bad_incompatible_shapes_matmul_and_friends) {
    df_graph *g = df_graph_new();
    CHECK(named2(g, "MatMul", "mm", ph(g, "a", DF_FLOAT, 2, D(2, 3)), ph(g, "b", DF_FLOAT, 2, D(4, 2))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "mm");
    g = df_graph_new();
    CHECK(df_matmul(g, ph(g, "a", DF_FLOAT, 2, D(2, 3)), ph(g, "b", DF_FLOAT, 2, D(3, 4)), 1, 0).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(named2(g, "MatMul", "mm", ph(g, "a", DF_FLOAT, 1, D(3)), ph(g, "b", DF_FLOAT, 2, D(3, 4))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "mm");
    g = df_graph_new();
    CHECK(named2(g, "MatMul", "mm", ph(g, "a", DF_FLOAT, 3, D(1, 2, 3)), ph(g, "b", DF_FLOAT, 2, D(3, 4))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "mm");
    /* run-time inner mismatch through unknown dims */
    g = df_graph_new();
    df_output pa = ph(g, "a", DF_FLOAT, 2, D(-1, -1)), pb = ph(g, "b", DF_FLOAT, 2, D(-1, -1));
    df_output y = named2(g, "MatMul", "mm", pa, pb);
    df_tensor *va = tensor_of(DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)), *vb = tensor_of(DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    df_output feeds[2] = {pa, pb};
    df_tensor *vals[2] = {va, vb};
    FEED_ERR(g, y, 2, feeds, vals, DF_INVALID_ARGUMENT, NULL, "mm");
    df_tensor_release(va);
    df_tensor_release(vb);

    g = df_graph_new();
    CHECK(named2(g, "BatchMatMulV2", "bmm", ph(g, "a", DF_FLOAT, 3, D(2, 2, 3)), ph(g, "b", DF_FLOAT, 3, D(3, 3, 4))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "bmm");
    g = df_graph_new();
    CHECK(named2(g, "BatchMatMulV2", "bmm", ph(g, "a", DF_FLOAT, 3, D(2, 2, 3)), ph(g, "b", DF_FLOAT, 3, D(2, 2, 4))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "bmm");
    g = df_graph_new();
    CHECK(named2(g, "BatchMatMulV2", "bmm", ph(g, "a", DF_FLOAT, 1, D(3)), ph(g, "b", DF_FLOAT, 2, D(3, 4))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "bmm");

    g = df_graph_new();
    CHECK(named2(g, "BiasAdd", "ba", f23(g), konst(g, DF_FLOAT, 1, D(4), V(1, 2, 3, 4))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "ba");
    g = df_graph_new();
    CHECK(named2(g, "BiasAdd", "ba", f23(g), f23(g)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "ba");
    g = df_graph_new();
    CHECK(named2(g, "BiasAdd", "ba", konst(g, DF_FLOAT, 1, D(3), V(1, 2, 3)), konst(g, DF_FLOAT, 1, D(3), V(1, 2, 3))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "ba");

    /* Select v1: vector condition must match the first dimension; then/else must match */
    g = df_graph_new();
    CHECK(named3(g, "Select", "sel", konst(g, DF_BOOL, 1, D(3), V(1, 0, 1)), f23(g), f23(g)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "sel");
    g = df_graph_new();
    CHECK(named3(g, "Select", "sel", konst(g, DF_BOOL, 1, D(2), V(1, 0)), f23(g),
                 konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "sel");

    /* cross entropy */
    g = df_graph_new();
    CHECK(named2(g, "SoftmaxCrossEntropyWithLogits", "xent", f23(g),
                 konst(g, DF_FLOAT, 2, D(2, 4), V(0, 0, 0, 1, 0, 0, 0, 1))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "xent");
    g = df_graph_new();
    CHECK(named2(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", f23(g), konst(g, DF_INT32, 1, D(3), V(0, 1, 2))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "xent");
    g = df_graph_new();
    CHECK(named2(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", f23(g), konst(g, DF_INT32, 2, D(2, 1), V(0, 1))).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "xent");
    g = df_graph_new();
    CHECK(named1(g, "Softmax", "sm", df_scalar_f32(g, 1)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "sm");
    g = df_graph_new();
    CHECK(named1(g, "LogSoftmax", "lsm", df_scalar_f32(g, 1)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "lsm");

    /* list ops whose members disagree */
    g = df_graph_new();
    df_output two[2] = {f23(g), konst(g, DF_FLOAT, 1, D(3), V(1, 2, 3))};
    df_op_builder *b = df_op_new(g, "ConcatV2", "cc");
    df_op_add_input_list(b, two, 2);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_output cc = {df_op_finish(b), 0};
    ANY_ERR(g, cc, DF_INVALID_ARGUMENT, NULL, "cc");             /* rank mismatch */
    g = df_graph_new();
    two[0] = f23(g);
    two[1] = konst(g, DF_FLOAT, 2, D(3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9));
    b = df_op_new(g, "ConcatV2", "cc");
    df_op_add_input_list(b, two, 2);
    df_op_add_input(b, df_scalar_i32(g, 1));
    cc.node = df_op_finish(b);
    ANY_ERR(g, cc, DF_INVALID_ARGUMENT, NULL, "cc");             /* non-axis dimension mismatch */
    g = df_graph_new();
    two[0] = f23(g);
    two[1] = konst(g, DF_FLOAT, 1, D(6), V(1, 2, 3, 4, 5, 6));
    b = df_op_new(g, "Pack", "pk");
    df_op_add_input_list(b, two, 2);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "pk");
    g = df_graph_new();
    two[0] = f23(g);
    two[1] = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    b = df_op_new(g, "AddN", "an");
    df_op_add_input_list(b, two, 2);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "an");

    /* Assign with validate_shape (the default) */
    g = df_graph_new();
    df_node *as = df_assign(g, df_variable(g, "v", DF_FLOAT, 1, D(3)), konst(g, DF_FLOAT, 1, D(4), V(1, 2, 3, 4)));
    df_output ao = {as, 0};
    ANY_ERR(g, ao, DF_INVALID_ARGUMENT, NULL, NULL);
}

/* ---------------------------------------------------------------------------------------------
   Reshape, axes, permutations, sizes
   --------------------------------------------------------------------------------------------- */
DF_TEST(bad_reshape) {
    df_graph *g = df_graph_new();
    df_output y = named2(g, "Reshape", "r", f23(g), KI32(g, 4));
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    g = df_graph_new();
    y = named2(g, "Reshape", "r", f23(g), KI32(g, 3, -2));       /* negative other than -1 */
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    g = df_graph_new();
    y = named2(g, "Reshape", "r", f23(g), KI32(g, -1, -1));      /* two unknowns */
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    g = df_graph_new();
    y = named2(g, "Reshape", "r", f23(g), KI32(g, -1, 4));       /* 6 is not a multiple of 4 */
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    g = df_graph_new();
    y = named2(g, "Reshape", "r", f23(g), konst(g, DF_INT32, 2, D(1, 2), V(2, 3)));   /* shape of rank 2 */
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    g = df_graph_new();
    y = named2(g, "Reshape", "r", konst(g, DF_FLOAT, 2, D(0, 3), V(0)), KI32(g, -1, 0));   /* cannot infer */
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    /* a shape whose product wraps around to 6 in 64-bit arithmetic */
    g = df_graph_new();
    const int64_t a = ((int64_t)1 << 32) + 1, b = ((int64_t)1 << 32) - 1;
    y = named2(g, "Reshape", "r", f23(g), KI64(g, a, b, a, b, 6));
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    g = df_graph_new();
    y = named2(g, "Reshape", "r", f23(g), KI64(g, INT64_MAX, INT64_MAX));
    ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "r");
    g = df_graph_new();
    CHECK(df_reshape(g, f23(g), 9, D(1, 1, 1, 1, 1, 1, 1, 1, 6)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_reshape(g, f23(g), 2, NULL).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_reshape(g, f23(g), -3, D(6)).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    /* the shape fed at run time: the kernel checks */
    g = df_graph_new();
    df_output s = ph(g, "s", DF_INT32, 1, D(-1));
    y = named2(g, "Reshape", "r", f23(g), s);
    df_tensor *sv = tensor_of(DF_INT32, 1, D(2), V(4, 2));
    FEED_ERR(g, y, 1, &s, &sv, DF_INVALID_ARGUMENT, NULL, "r");
    df_tensor_release(sv);
    g = df_graph_new();
    s = ph(g, "s", DF_INT64, 1, D(-1));
    y = named2(g, "Reshape", "r", f23(g), s);
    sv = df_tensor_from_data(DF_INT64, 1, D(5), (const int64_t[]){a, b, a, b, 6}, 40, NULL);
    FEED_ERR(g, y, 1, &s, &sv, DF_INVALID_ARGUMENT, NULL, "r");
    df_tensor_release(sv);
}

static df_output reduce(df_graph *g, const char *op, const char *name, df_output x, df_output axes) {
    return named2(g, op, name, x, axes);
}

DF_TEST(bad_axes_out_of_range) {
    const int32_t bad[] = {2, -3, 100, -100, INT32_MIN, INT32_MAX};
    const char *red[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    for (int i = 0; i < LEN(bad); i++) {
        df_graph *g;
        for (int r = 0; r < LEN(red); r++) {
            g = df_graph_new();
            ANY_ERR(g, reduce(g, red[r], "red", f23(g), KI32(g, bad[i])), DF_INVALID_ARGUMENT, NULL, "red");
        }
        g = df_graph_new();
        df_output two[2] = {f23(g), f23(g)};
        df_op_builder *b = df_op_new(g, "ConcatV2", "cc");
        df_op_add_input_list(b, two, 2);
        df_op_add_input(b, df_scalar_i32(g, bad[i]));
        df_output cc = {df_op_finish(b), 0};
        ANY_ERR(g, cc, DF_INVALID_ARGUMENT, NULL, "cc");
        g = df_graph_new();
        ANY_ERR(g, named3(g, "GatherV2", "gather", f23(g), KI32(g, 0), df_scalar_i32(g, bad[i])),
                DF_INVALID_ARGUMENT, NULL, "gather");
        g = df_graph_new();
        ANY_ERR(g, named2(g, "ArgMax", "argmax", f23(g), df_scalar_i32(g, bad[i])), DF_INVALID_ARGUMENT, NULL, "argmax");
        if (bad[i] != 2) {   /* 2 is a valid ExpandDims position for rank 2 */
            g = df_graph_new();
            ANY_ERR(g, named2(g, "ExpandDims", "ed", f23(g), df_scalar_i32(g, bad[i] == -3 ? -4 : bad[i])),
                    DF_INVALID_ARGUMENT, NULL, "ed");
        }
        /* attr axes */
        g = df_graph_new();
        two[0] = konst(g, DF_FLOAT, 1, D(2), V(1, 2));
        two[1] = konst(g, DF_FLOAT, 1, D(2), V(3, 4));
        b = df_op_new(g, "Pack", "pk");
        df_op_add_input_list(b, two, 2);
        df_op_set_attr_int(b, "axis", bad[i]);
        CHECK(df_op_finish(b) == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "pk");
        g = df_graph_new();
        b = df_op_new(g, "Unpack", "up");
        df_op_add_input(b, f23(g));
        df_op_set_attr_int(b, "num", 2);
        df_op_set_attr_int(b, "axis", bad[i]);
        CHECK(df_op_finish(b) == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "up");
        g = df_graph_new();
        b = df_op_new(g, "Squeeze", "sq");
        df_op_add_input(b, konst(g, DF_FLOAT, 2, D(1, 1), V(1)));
        df_op_set_attr_int_list(b, "squeeze_dims", (const int64_t[]){bad[i]}, 1);
        CHECK(df_op_finish(b) == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "sq");
        g = df_graph_new();
        b = df_op_new(g, "OneHot", "oh");
        df_op_add_input(b, KI32(g, 0, 1));
        df_op_add_input(b, df_scalar_i32(g, 3));
        df_op_add_input(b, df_scalar_f32(g, 1));
        df_op_add_input(b, df_scalar_f32(g, 0));
        df_op_set_attr_int(b, "axis", bad[i] == 2 ? -2 : bad[i]);
        CHECK(df_op_finish(b) == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "oh");
    }
    /* duplicate reduction axes (TF: "Axes contains duplicate dimension") */
    df_graph *g = df_graph_new();
    ANY_ERR(g, reduce(g, "Sum", "red", f23(g), KI32(g, 1, -1)), DF_INVALID_ARGUMENT, "duplicate", "red");
    /* the helpers */
    g = df_graph_new();
    ANY_ERR(g, df_reduce_sum(g, f23(g), 1, (const int32_t[]){5}, 0), DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    ANY_ERR(g, df_reduce_mean(g, f23(g), 1, (const int32_t[]){INT32_MIN}, 1), DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_reduce_sum(g, f23(g), 2, NULL, 0).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    g = df_graph_new();
    CHECK(df_reduce_mean(g, f23(g), -1, (const int32_t[]){0}, 0).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, NULL);
    /* axes fed at run time */
    g = df_graph_new();
    df_output ax = ph(g, "ax", DF_INT32, 1, D(-1));
    df_output y = reduce(g, "Sum", "red", f23(g), ax);
    df_tensor *av = tensor_of(DF_INT32, 1, D(1), V(-7));
    FEED_ERR(g, y, 1, &ax, &av, DF_INVALID_ARGUMENT, NULL, "red");
    df_tensor_release(av);
    g = df_graph_new();
    ax = ph(g, "ax", DF_INT32, 0, NULL);
    y = named3(g, "GatherV2", "gather", f23(g), KI32(g, 0), ax);
    av = df_tensor_scalar_i32(INT32_MIN);
    FEED_ERR(g, y, 1, &ax, &av, DF_INVALID_ARGUMENT, NULL, "gather");
    df_tensor_release(av);
    /* non-scalar axis (advisory 26) */
    g = df_graph_new();
    df_output two[2] = {f23(g), f23(g)};
    df_op_builder *b = df_op_new(g, "ConcatV2", "cc");
    df_op_add_input_list(b, two, 2);
    df_op_add_input(b, KI32(g, 0, 1));
    df_output cc = {df_op_finish(b), 0};
    ANY_ERR(g, cc, DF_INVALID_ARGUMENT, NULL, "cc");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "ArgMax", "argmax", f23(g), KI32(g, 0, 1)), DF_INVALID_ARGUMENT, NULL, "argmax");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "ExpandDims", "ed", f23(g), KI32(g, 0, 1)), DF_INVALID_ARGUMENT, NULL, "ed");
    /* ArgMax over an empty dimension */
    g = df_graph_new();
    ANY_ERR(g, named2(g, "ArgMax", "argmax", konst(g, DF_FLOAT, 2, D(2, 0), V(0)), df_scalar_i32(g, 1)),
            DF_INVALID_ARGUMENT, NULL, "argmax");
    /* Squeeze of a dimension that is not 1; Unpack with the wrong num */
    g = df_graph_new();
    b = df_op_new(g, "Squeeze", "sq");
    df_op_add_input(b, f23(g));
    df_op_set_attr_int_list(b, "squeeze_dims", D(1), 1);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "sq");
    g = df_graph_new();
    b = df_op_new(g, "Unpack", "up");
    df_op_add_input(b, f23(g));
    df_op_set_attr_int(b, "num", 3);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "up");
    g = df_graph_new();
    b = df_op_new(g, "Unpack", "up");
    df_op_add_input(b, f23(g));
    df_op_set_attr_int(b, "num", -2);
    CHECK(df_op_finish(b) == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "up");
}

DF_TEST(bad_transpose_perm) {
    const struct { int n; int32_t p[3]; } perms[] = {
        {2, {0, 0}}, {2, {1, 1}}, {2, {0, 5}}, {2, {-10, 0}}, {2, {INT32_MIN, 0}}, {2, {INT32_MAX, 0}},
        {1, {0}}, {3, {0, 1, 2}}, {2, {-1, 0}},
    };
    for (int i = 0; i < LEN(perms); i++) {
        df_graph *g = df_graph_new();
        ANY_ERR(g, named2(g, "Transpose", "tr", f23(g), kvec_i32(g, perms[i].n, perms[i].p)),
                DF_INVALID_ARGUMENT, NULL, "tr");
        /* the same fed at run time */
        g = df_graph_new();
        df_output p = ph(g, "perm", DF_INT32, 1, D(-1));
        df_output y = named2(g, "Transpose", "tr", f23(g), p);
        int64_t n = perms[i].n;
        df_tensor *pv = df_tensor_from_data(DF_INT32, 1, &n, perms[i].p, (size_t)n * 4, NULL);
        FEED_ERR(g, y, 1, &p, &pv, DF_INVALID_ARGUMENT, NULL, "tr");
        df_tensor_release(pv);
    }
    df_graph *g = df_graph_new();
    ANY_ERR(g, named2(g, "Transpose", "tr", f23(g), konst(g, DF_INT32, 2, D(1, 2), V(1, 0))),
            DF_INVALID_ARGUMENT, NULL, "tr");
}

static df_output range3(df_graph *g, df_output a, df_output b, df_output c) {
    return named3(g, "Range", "range", a, b, c);
}

DF_TEST(bad_range) {
    df_graph *g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_i32(g, 0), df_scalar_i32(g, 10), df_scalar_i32(g, 0)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_f32(g, 0), df_scalar_f32(g, 1), df_scalar_f32(g, 0)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();                                      /* wrong direction */
    ANY_ERR(g, range3(g, df_scalar_i32(g, 0), df_scalar_i32(g, 10), df_scalar_i32(g, -1)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_i32(g, 10), df_scalar_i32(g, 0), df_scalar_i32(g, 1)),
            DF_INVALID_ARGUMENT, NULL, "range");
    /* sizes that overflow (advisory 18) */
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_i64(g, INT64_MIN), df_scalar_i64(g, INT64_MAX), df_scalar_i64(g, 1)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_i64(g, INT64_MAX), df_scalar_i64(g, INT64_MIN), df_scalar_i64(g, -1)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_f32(g, 0), df_scalar_f32(g, 1e30f), df_scalar_f32(g, 1e-30f)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_f64(g, 0), df_scalar_f64(g, 1e19), df_scalar_f64(g, 1)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_f32(g, 0), df_scalar_f32(g, INFINITY), df_scalar_f32(g, 1)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_f32(g, 0), df_scalar_f32(g, 10), df_scalar_f32(g, NAN)),
            DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    ANY_ERR(g, range3(g, df_scalar_f32(g, NAN), df_scalar_f32(g, 10), df_scalar_f32(g, 1)),
            DF_INVALID_ARGUMENT, NULL, "range");
    /* non-scalar arguments */
    g = df_graph_new();
    ANY_ERR(g, range3(g, KI32(g, 0, 1), df_scalar_i32(g, 10), df_scalar_i32(g, 1)), DF_INVALID_ARGUMENT, NULL, "range");
    /* fits int64 but not in bytes: must not wrap into a small allocation */
    g = df_graph_new();
    df_output y = range3(g, df_scalar_i64(g, 0), df_scalar_i64(g, (int64_t)1 << 62), df_scalar_i64(g, 1));
    const df_status *gs = df_graph_status(g);
    if (gs->code != DF_OK) {
        CHECK_MSG(gs->code == DF_INVALID_ARGUMENT || gs->code == DF_RESOURCE_EXHAUSTED, "%s", gs->message);
        df_graph_free(g);
    } else {
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        df_tensor *out = NULL;
        if (s) df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
        CHECK(s && out == NULL);
        CHECK_MSG(st.code == DF_INVALID_ARGUMENT || st.code == DF_RESOURCE_EXHAUSTED, "%s: %s",
                  df_code_name(st.code), st.message);
        df_tensor_release(out);
        df_session_free(s);
        df_graph_free(g);
    }
}

DF_TEST(bad_fill_tile_onehot_random_sizes) {
    df_graph *g = df_graph_new();
    ANY_ERR(g, named2(g, "Fill", "fill", KI32(g, -1, 2), df_scalar_f32(g, 0)), DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "Fill", "fill", KI64(g, (int64_t)1 << 32, (int64_t)1 << 32), df_scalar_f32(g, 0)),
            DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "Fill", "fill", KI64(g, INT64_MIN), df_scalar_f32(g, 0)), DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "Fill", "fill", KI32(g, 2, 2), KI32(g, 1, 2)), DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "Fill", "fill", konst(g, DF_INT32, 2, D(1, 2), V(2, 2)), df_scalar_f32(g, 0)),
            DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();                                      /* dims fed at run time */
    df_output d = ph(g, "dims", DF_INT32, 1, D(-1));
    df_output y = named2(g, "Fill", "fill", d, df_scalar_f32(g, 0));
    df_tensor *dv = tensor_of(DF_INT32, 1, D(2), V(3, -4));
    FEED_ERR(g, y, 1, &d, &dv, DF_INVALID_ARGUMENT, NULL, "fill");
    df_tensor_release(dv);

    g = df_graph_new();
    ANY_ERR(g, named2(g, "Tile", "tile", f23(g), KI32(g, -1, 1)), DF_INVALID_ARGUMENT, NULL, "tile");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "Tile", "tile", f23(g), KI32(g, 2)), DF_INVALID_ARGUMENT, NULL, "tile");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "Tile", "tile", f23(g), KI64(g, (int64_t)1 << 62, (int64_t)1 << 62)),
            DF_INVALID_ARGUMENT, NULL, "tile");
    g = df_graph_new();
    d = ph(g, "m", DF_INT32, 1, D(2));
    y = named2(g, "Tile", "tile", f23(g), d);
    dv = tensor_of(DF_INT32, 1, D(2), V(1, -3));
    FEED_ERR(g, y, 1, &d, &dv, DF_INVALID_ARGUMENT, NULL, "tile");
    df_tensor_release(dv);

    const int depths[] = {-1, INT32_MIN};
    for (int i = 0; i < LEN(depths); i++) {
        g = df_graph_new();
        df_op_builder *b = df_op_new(g, "OneHot", "oh");
        df_op_add_input(b, KI32(g, 0, 1));
        df_op_add_input(b, df_scalar_i32(g, depths[i]));
        df_op_add_input(b, df_scalar_f32(g, 1));
        df_op_add_input(b, df_scalar_f32(g, 0));
        df_output oh = {df_op_finish(b), 0};
        ANY_ERR(g, oh, DF_INVALID_ARGUMENT, NULL, "oh");
    }
    g = df_graph_new();
    df_op_builder *b = df_op_new(g, "OneHot", "oh");
    df_op_add_input(b, KI32(g, 0, 1));
    df_op_add_input(b, KI32(g, 3, 3));                        /* depth must be a scalar */
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_op_add_input(b, df_scalar_f32(g, 0));
    df_output oh = {df_op_finish(b), 0};
    ANY_ERR(g, oh, DF_INVALID_ARGUMENT, NULL, "oh");

    const char *rnd[] = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"};
    for (int i = 0; i < 3; i++) {
        g = df_graph_new();
        b = df_op_new(g, rnd[i], "rnd");
        df_op_add_input(b, KI32(g, -1, 2));
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        df_output r = {df_op_finish(b), 0};
        ANY_ERR(g, r, DF_INVALID_ARGUMENT, NULL, "rnd");
        g = df_graph_new();
        b = df_op_new(g, rnd[i], "rnd");
        df_op_add_input(b, KI64(g, (int64_t)1 << 32, (int64_t)1 << 32));
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        r.node = df_op_finish(b);
        ANY_ERR(g, r, DF_INVALID_ARGUMENT, NULL, "rnd");
        g = df_graph_new();
        b = df_op_new(g, rnd[i], "rnd");
        df_op_add_input(b, KI32(g, 2));
        df_op_set_attr_type(b, "dtype", DF_INT32);            /* not a float type */
        CHECK(df_op_finish(b) == NULL);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "rnd");
    }
}

static df_output sslice(df_graph *g, df_output x, df_output b, df_output e, df_output s, int shrink) {
    df_op_builder *bl = df_op_new(g, "StridedSlice", "ss");
    df_op_add_input(bl, x);
    df_op_add_input(bl, b);
    df_op_add_input(bl, e);
    df_op_add_input(bl, s);
    df_op_set_attr_int(bl, "shrink_axis_mask", shrink);
    df_output o = {df_op_finish(bl), 0};
    return o;
}

DF_TEST(bad_slices) {
    df_graph *g = df_graph_new();
    ANY_ERR(g, sslice(g, f23(g), KI32(g, 0), KI32(g, 2), KI32(g, 0), 0), DF_INVALID_ARGUMENT, NULL, "ss");
    g = df_graph_new();
    ANY_ERR(g, sslice(g, f23(g), KI32(g, 0, 0), KI32(g, 2), KI32(g, 1), 0), DF_INVALID_ARGUMENT, NULL, "ss");
    g = df_graph_new();                                      /* x[5] on a dimension of 2 */
    ANY_ERR(g, sslice(g, f23(g), KI32(g, 5), KI32(g, 6), KI32(g, 1), 1), DF_INVALID_ARGUMENT, NULL, "ss");
    g = df_graph_new();
    ANY_ERR(g, sslice(g, f23(g), KI32(g, -3), KI32(g, 0), KI32(g, 1), 1), DF_INVALID_ARGUMENT, NULL, "ss");
    g = df_graph_new();                                      /* stride 0 fed at run time */
    df_output s = ph(g, "strides", DF_INT32, 1, D(1));
    df_output y = sslice(g, f23(g), KI32(g, 0), KI32(g, 2), s, 0);
    df_tensor *sv = tensor_of(DF_INT32, 1, D(1), V(0));
    FEED_ERR(g, y, 1, &s, &sv, DF_INVALID_ARGUMENT, NULL, "ss");
    df_tensor_release(sv);

    const struct { int32_t b[2], s[2]; } sl[] = {
        {{3, 0}, {1, 1}}, {{0, 0}, {3, 4}}, {{-1, 0}, {1, 1}}, {{0, 0}, {-2, 1}}, {{1, 1}, {2, 1}},
        {{0, INT32_MAX}, {1, 1}}, {{0, 2}, {1, INT32_MAX}},
    };
    for (int i = 0; i < LEN(sl); i++) {
        g = df_graph_new();
        ANY_ERR(g, named3(g, "Slice", "slice", f23(g), kvec_i32(g, 2, sl[i].b), kvec_i32(g, 2, sl[i].s)),
                DF_INVALID_ARGUMENT, NULL, "slice");
    }
    g = df_graph_new();
    ANY_ERR(g, named3(g, "Slice", "slice", f23(g), KI32(g, 0), KI32(g, 1)), DF_INVALID_ARGUMENT, NULL, "slice");
}

/* GatherV2 named "gather" with a batch_dims attr. */
static df_output gather_batch(df_graph *g, df_output params, df_output indices, int axis, int batch_dims) {
    df_op_builder *b = df_op_new(g, "GatherV2", "gather");
    df_op_add_input(b, params);
    df_op_add_input(b, indices);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_set_attr_int(b, "batch_dims", batch_dims);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(bad_gather_index_out_of_range_is_a_status) {
    df_graph *g = df_graph_new();
    df_output p = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    ANY_ERR(g, named3(g, "GatherV2", "gather", p, KI32(g, 0, 3), df_scalar_i32(g, 0)), DF_INVALID_ARGUMENT,
            NULL, "gather");
    g = df_graph_new();
    p = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    ANY_ERR(g, named3(g, "GatherV2", "gather", p, KI32(g, -1), df_scalar_i32(g, 0)), DF_INVALID_ARGUMENT,
            NULL, "gather");
    g = df_graph_new();
    p = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    ANY_ERR(g, named3(g, "GatherV2", "gather", p, KI64(g, INT64_MAX), df_scalar_i32(g, 0)), DF_INVALID_ARGUMENT,
            NULL, "gather");
    g = df_graph_new();
    p = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    ANY_ERR(g, named3(g, "GatherV2", "gather", p, KI64(g, INT64_MIN), df_scalar_i32(g, 1)), DF_INVALID_ARGUMENT,
            NULL, "gather");
    g = df_graph_new();                                      /* gathering from an empty axis */
    p = konst(g, DF_FLOAT, 2, D(0, 2), V(0));
    ANY_ERR(g, named3(g, "GatherV2", "gather", p, KI32(g, 0), df_scalar_i32(g, 0)), DF_INVALID_ARGUMENT,
            NULL, "gather");
    /* with batch_dims, an index out of range in a later batch: the same error */
    const double bad[2] = {4, -1};
    for (int i = 0; i < 2; i++) {
        g = df_graph_new();
        p = konst(g, DF_FLOAT, 3, D(3, 4, 2), (const double[24]){0});
        ANY_ERR(g, gather_batch(g, p, konst(g, DF_INT64, 2, D(3, 2), V(0, 3, 2, 2, 1, bad[i])), 1, 1),
                DF_INVALID_ARGUMENT, "is not in [0, 4)", "gather");
    }

    /* fed indices: the error is a status, and the session still works afterwards */
    g = df_graph_new();
    p = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    df_output idx = ph(g, "idx", DF_INT32, 1, D(2));
    df_output y = named3(g, "GatherV2", "gather", p, idx, df_scalar_i32(g, 0));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s) {
        df_tensor *bad = tensor_of(DF_INT32, 1, D(2), V(5, 0)), *good = tensor_of(DF_INT32, 1, D(2), V(2, 1));
        df_tensor *out = NULL;
        CHECK_EQ_INT(df_session_run(s, &idx, &bad, 1, &y, &out, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
        CHECK_CODE(&st, DF_INVALID_ARGUMENT);
        check_message(__FILE__, __LINE__, &st, NULL, "gather");
        df_tensor_release(out);
        out = NULL;
        df_session_run(s, &idx, &good, 1, &y, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK(out && ((const float *)df_tensor_data(out))[0] == 5 && ((const float *)df_tensor_data(out))[3] == 4);
        df_tensor_release(out);
        df_tensor_release(bad);
        df_tensor_release(good);
        df_session_free(s);
    }
    df_graph_free(g);

    /* sparse cross entropy labels out of range */
    const int bad_labels[] = {3, -1};
    for (int i = 0; i < 2; i++) {
        g = df_graph_new();
        ANY_ERR(g, named2(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", f23(g),
                          konst(g, DF_INT32, 1, D(2), V(bad_labels[i], 0))),
                DF_INVALID_ARGUMENT, NULL, "xent");
    }
}

DF_TEST(bad_gather_batch_dims_is_a_status) {
    /* params [3,4,2], indices [rows,2]; TF's messages */
    static const struct { int64_t rows; int axis, batch; const char *needle; } cases[] = {
        {3, 1, 3, "Expected batch_dims in the range [-2, 2], but got 3"},
        {3, 1, -3, "Expected batch_dims in the range [-2, 2], but got -3"},
        {3, 1, 2, "batch_dims (2) must be less than or equal to axis (1)"},
        {3, 0, -1, "batch_dims (1) must be less than or equal to axis (0)"},
        {2, 1, 1, "params.shape[0]: 3 should be equal to indices.shape[0]: 2"},
        {3, -1, 2, "params.shape[1]: 4 should be equal to indices.shape[1]: 2"},
    };
    double zeros[24] = {0};
    for (int i = 0; i < LEN(cases); i++) {
        /* static shapes: the shape function refuses while building */
        df_graph *g = df_graph_new();
        gather_batch(g, konst(g, DF_FLOAT, 3, D(3, 4, 2), zeros), konst(g, DF_INT32, 2, D(cases[i].rows, 2), zeros),
                     cases[i].axis, cases[i].batch);
        BUILD_ERR(g, DF_INVALID_ARGUMENT, cases[i].needle, "gather");
        /* shapes unknown until the run: the kernel refuses */
        g = df_graph_new();
        df_output feeds[2] = {ph(g, "params", DF_FLOAT, -1, NULL), ph(g, "indices", DF_INT32, -1, NULL)};
        df_output y = gather_batch(g, feeds[0], feeds[1], cases[i].axis, cases[i].batch);
        df_tensor *vals[2] = {tensor_of(DF_FLOAT, 3, D(3, 4, 2), zeros), tensor_of(DF_INT32, 2, D(cases[i].rows, 2), zeros)};
        FEED_ERR(g, y, 2, feeds, vals, DF_INVALID_ARGUMENT, cases[i].needle, "gather");
        df_tensor_release(vals[0]);
        df_tensor_release(vals[1]);
    }
}

DF_TEST(bad_integer_arithmetic) {
    /* integer division by zero is a status, not SIGFPE */
    df_graph *g = df_graph_new();
    ANY_ERR(g, named2(g, "FloorMod", "fm", konst(g, DF_INT32, 1, D(2), V(5, 7)), konst(g, DF_INT32, 1, D(2), V(2, 0))),
            DF_INVALID_ARGUMENT, NULL, "fm");
    g = df_graph_new();
    ANY_ERR(g, named2(g, "FloorMod", "fm", df_scalar_i64(g, 5), df_scalar_i64(g, 0)), DF_INVALID_ARGUMENT, NULL, "fm");
    /* TF: "Integers to negative integer powers are not allowed" */
    g = df_graph_new();
    ANY_ERR(g, named2(g, "Pow", "pw", konst(g, DF_INT32, 1, D(2), V(2, 3)), konst(g, DF_INT32, 1, D(2), V(1, -1))),
            DF_INVALID_ARGUMENT, NULL, "pw");
}

DF_TEST(int32_overflow_wraps_without_trapping) {
    /* TF's CPU kernels wrap; this must not trap (INT_MIN % -1 is SIGFPE on x86) */
    df_graph *g = df_graph_new();
    df_output mx = df_scalar_i32(g, INT32_MAX), mn = df_scalar_i32(g, INT32_MIN);
    struct { df_output y; int32_t want; } c[] = {
        {df_add(g, mx, df_scalar_i32(g, 1)), INT32_MIN},
        {df_sub(g, mn, df_scalar_i32(g, 1)), INT32_MAX},
        {df_mul(g, mx, df_scalar_i32(g, 2)), -2},
        {df_neg(g, mn), INT32_MIN},
        {df_square(g, df_scalar_i32(g, 65536)), 0},
    };
    for (int i = 0; i < LEN(c); i++) {
        df_tensor *t = RUN_OK(g, c[i].y);
        CHECK_MSG(t && *(const int32_t *)df_tensor_data(t) == c[i].want, "case %d: %d", i,
                  t ? *(const int32_t *)df_tensor_data(t) : -1);
        df_tensor_release(t);
    }
    /* Range whose (limit - start) overflows int32 but whose size is 3 */
    df_output r = named3(g, "Range", "range", mn, mx, df_scalar_i32(g, INT32_MAX));
    df_tensor *t = RUN_OK(g, r);
    CHECK(t && df_tensor_num_elements(t) == 3);
    if (t && df_tensor_num_elements(t) == 3) {
        const int32_t *v = (const int32_t *)df_tensor_data(t);
        CHECK(v[0] == INT32_MIN && v[1] == -1 && v[2] == INT32_MAX - 1);
    }
    df_tensor_release(t);
    df_graph_free(g);
}

DF_TEST(int32_floor_mod_min_by_minus_one_does_not_trap) {
    /* INT32_MIN % -1 overflows (SIGFPE on x86); floor_mod(INT32_MIN, -1) is 0 */
    df_graph *g = df_graph_new();
    df_tensor *t = RUN_OK(g, df_floor_mod_i(g, df_scalar_i32(g, INT32_MIN), df_scalar_i32(g, -1)));
    CHECK(t && *(const int32_t *)df_tensor_data(t) == 0);
    df_tensor_release(t);
    t = RUN_OK(g, df_floor_mod_i(g, df_scalar_i64(g, INT64_MIN), df_scalar_i64(g, -1)));
    CHECK(t && *(const int64_t *)df_tensor_data(t) == 0);
    df_tensor_release(t);
    df_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
   Sticky errors
   --------------------------------------------------------------------------------------------- */
static void branch_f(df_graph *g, void *u, df_output *outs) { (void)u; outs[0] = df_scalar_f32(g, 1); }
static void branch_i(df_graph *g, void *u, df_output *outs) { (void)u; outs[0] = df_scalar_i32(g, 1); }
static void branch_null(df_graph *g, void *u, df_output *outs) { (void)g; (void)u; outs[0] = NOUT; }
static df_output cond_lt10(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_i32(g, 10)); }
static df_output cond_float(df_graph *g, void *u, const df_output *v) { (void)u; (void)v; return df_scalar_f32(g, 1); }
static df_output cond_vector(df_graph *g, void *u, const df_output *v) {
    (void)u;
    return df_less(g, konst(g, DF_INT32, 1, D(2), V(0, 1)), v[0]);
}
static df_output cond_null(df_graph *g, void *u, const df_output *v) { (void)g; (void)u; (void)v; return NOUT; }
static void body_inc(df_graph *g, void *u, const df_output *v, df_output *next) {
    (void)u;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}
static void body_to_float(df_graph *g, void *u, const df_output *v, df_output *next) {
    (void)u;
    next[0] = df_cast(g, v[0], DF_FLOAT);
}
static void body_null(df_graph *g, void *u, const df_output *v, df_output *next) { (void)g; (void)u; (void)v; next[0] = NOUT; }

DF_TEST(bad_sticky_error_makes_building_a_no_op) {
    df_graph *g = df_graph_new();
    df_output ok = df_scalar_f32(g, 1);
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_output iv = df_scalar_i32(g, 0);
    CHECK(ok.node && v.node && iv.node);
    CHECK(named2(g, "AddV2", "bad", ph(g, "a", DF_FLOAT, 1, D(2)), ph(g, "b", DF_FLOAT, 1, D(3))).node == NULL);
    const df_status *gs = df_graph_status(g);
    CHECK(gs && gs->code == DF_INVALID_ARGUMENT);
    df_status first = *gs;
    int n0 = df_graph_num_nodes(g);
    df_output o;
    o = df_scalar_f32(g, 2);                  CHECK(o.node == NULL && o.index == 0);
    o = df_scalar_i32(g, 2);                  CHECK(o.node == NULL);
    o = df_scalar_f64(g, 2);                  CHECK(o.node == NULL);
    o = df_scalar_i64(g, 2);                  CHECK(o.node == NULL);
    o = df_scalar_bool(g, 1);                 CHECK(o.node == NULL);
    o = df_placeholder(g, "p2", DF_FLOAT, 0, NULL); CHECK(o.node == NULL);
    o = df_identity(g, ok);                   CHECK(o.node == NULL);
    o = df_add(g, ok, ok);                    CHECK(o.node == NULL);
    o = df_matmul(g, ok, ok, 0, 0);           CHECK(o.node == NULL);
    o = df_reduce_sum(g, ok, 0, NULL, 0);     CHECK(o.node == NULL);
    o = df_reshape(g, ok, 1, D(1));           CHECK(o.node == NULL);
    o = df_softmax(g, ok);                    CHECK(o.node == NULL);
    o = df_cast(g, ok, DF_INT32);             CHECK(o.node == NULL);
    o = df_shape(g, ok);                      CHECK(o.node == NULL);
    o = df_add_n(g, &ok, 1);                  CHECK(o.node == NULL);
    o = df_variable(g, "v2", DF_FLOAT, 0, NULL); CHECK(o.node == NULL);
    CHECK(df_assign(g, v, ok) == NULL);
    CHECK(df_assign_add(g, v, ok) == NULL);
    CHECK(df_assign_sub(g, v, ok) == NULL);
    CHECK(df_no_op(g, NULL, 0) == NULL);
    df_op_builder *b = df_op_new(g, "NoOp", "n");
    df_op_set_attr_int(b, "x", 1);
    df_op_add_input(b, ok);
    CHECK(df_op_finish(b) == NULL);
    df_output outs[1] = {{(df_node *)1, 7}};
    CHECK(df_cond(g, df_scalar_bool(g, 1), 1, branch_f, branch_f, NULL, outs) != DF_OK);
    CHECK(outs[0].node == NULL);
    outs[0].node = (df_node *)1;
    CHECK(df_while_loop(g, 1, &iv, cond_lt10, body_inc, NULL, NULL, outs) != DF_OK);
    CHECK(outs[0].node == NULL);
    df_output dx = {(df_node *)1, 3};
    CHECK(df_gradients(g, 1, &ok, NULL, 1, &ok, &dx) != DF_OK);
    CHECK(dx.node == NULL);
    CHECK(df_node_update_input(g, ok.node, 0, ok) != DF_OK);
    df_graph_push_name_scope(g, "s");
    df_graph_pop_name_scope(g);
    df_graph_push_device(g, "/cpu:0");
    df_graph_pop_device(g);
    CHECK_EQ_INT(df_graph_num_nodes(g), n0);
    gs = df_graph_status(g);
    CHECK(gs && gs->code == first.code && strcmp(gs->message, first.message) == 0);
    CHECK(strstr(gs->message, "{{node bad}}") != NULL);
    /* sessions refuse, fetching a node built before the error included */
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    if (s) {
        df_tensor *out = NULL;
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &ok, &out, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
        CHECK(out == NULL);
        df_tensor_release(out);
        df_session_free(s);
    } else {
        CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    }
    df_graph_free(g);

    /* a session made before the error refuses afterwards too */
    g = df_graph_new();
    ok = df_scalar_f32(g, 1);
    s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    df_tensor *out = NULL;
    if (s) {
        df_session_run(s, NULL, NULL, 0, &ok, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        df_tensor_release(out);
        out = NULL;
        CHECK(named1(g, "Neg", "late", NOUT).node == NULL);
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &ok, &out, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
        df_tensor_release(out);
        df_session_free(s);
    }
    df_graph_free(g);
}

DF_TEST(bad_control_flow_arguments) {
    df_output outs[2];
    df_graph *g;
    /* controls: valid cond and loop */
    g = df_graph_new();
    CHECK_EQ_INT(df_cond(g, df_scalar_bool(g, 0), 1, branch_f, branch_f, NULL, outs), DF_OK);
    df_output i0 = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 1, &i0, cond_lt10, body_inc, NULL, NULL, outs), DF_OK);
    df_tensor *t = RUN_OK(g, outs[0]);
    CHECK(t && *(const int32_t *)df_tensor_data(t) == 10);
    df_tensor_release(t);
    df_graph_free(g);

    /* sticky: type and shape errors must also leave the graph failed; for NULL arguments the
       returned code is enough */
#define COND_BAD(pred_expr, n, tf, ef, outp, sticky)                                           \
    do { g = df_graph_new(); df_output pred_ = (pred_expr);                                    \
         CHECK_EQ_INT(df_cond(g, pred_, n, tf, ef, NULL, outp), DF_INVALID_ARGUMENT);          \
         if (sticky) CHECK(df_graph_status(g)->code != DF_OK);                                 \
         df_graph_free(g); } while (0)
    COND_BAD(df_scalar_f32(g, 1), 1, branch_f, branch_f, outs, 1);                 /* float predicate */
    COND_BAD(konst(g, DF_BOOL, 1, D(2), V(1, 0)), 1, branch_f, branch_f, outs, 1); /* non-scalar */
    COND_BAD(NOUT, 1, branch_f, branch_f, outs, 1);
    COND_BAD(df_scalar_bool(g, 1), 1, branch_f, branch_i, outs, 1);                /* dtypes differ */
    COND_BAD(df_scalar_bool(g, 1), 1, branch_null, branch_f, outs, 1);
    COND_BAD(df_scalar_bool(g, 1), 1, NULL, branch_f, outs, 0);
    COND_BAD(df_scalar_bool(g, 1), 1, branch_f, NULL, outs, 0);
    COND_BAD(df_scalar_bool(g, 1), 1, branch_f, branch_f, NULL, 0);
    COND_BAD(df_scalar_bool(g, 1), -1, branch_f, branch_f, outs, 0);
#undef COND_BAD
#define LOOP_BAD(n, init, c, b, outp, sticky)                                                   \
    do { g = df_graph_new(); df_output init_ = (init);                                         \
         CHECK_EQ_INT(df_while_loop(g, n, &init_, c, b, NULL, NULL, outp), DF_INVALID_ARGUMENT); \
         if (sticky) CHECK(df_graph_status(g)->code != DF_OK);                                 \
         df_graph_free(g); } while (0)
    LOOP_BAD(1, NOUT, cond_lt10, body_inc, outs, 1);
    LOOP_BAD(1, df_scalar_i32(g, 0), cond_float, body_inc, outs, 1);
    LOOP_BAD(1, df_scalar_i32(g, 0), cond_vector, body_inc, outs, 1);
    LOOP_BAD(1, df_scalar_i32(g, 0), cond_null, body_inc, outs, 1);
    LOOP_BAD(1, df_scalar_i32(g, 0), cond_lt10, body_to_float, outs, 1);           /* dtype changes */
    LOOP_BAD(1, df_scalar_i32(g, 0), cond_lt10, body_null, outs, 1);
    LOOP_BAD(0, df_scalar_i32(g, 0), cond_lt10, body_inc, outs, 0);
    LOOP_BAD(-1, df_scalar_i32(g, 0), cond_lt10, body_inc, outs, 0);
    LOOP_BAD(1, df_scalar_i32(g, 0), NULL, body_inc, outs, 0);
    LOOP_BAD(1, df_scalar_i32(g, 0), cond_lt10, NULL, outs, 0);
    LOOP_BAD(1, df_scalar_i32(g, 0), cond_lt10, body_inc, NULL, 0);
#undef LOOP_BAD
    g = df_graph_new();
    CHECK_EQ_INT(df_while_loop(g, 2, NULL, cond_lt10, body_inc, NULL, NULL, outs), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    /* NULL graph */
    df_output x = {NULL, 0};
    CHECK(df_cond(NULL, x, 1, branch_f, branch_f, NULL, outs) != DF_OK);
    CHECK(df_while_loop(NULL, 1, &x, cond_lt10, body_inc, NULL, NULL, outs) != DF_OK);
}

DF_TEST(bad_gradients_and_update_input_arguments) {
    df_graph *g = df_graph_new();
    df_output x = ph(g, "x", DF_FLOAT, 0, NULL);
    df_output y = df_square(g, x);
    df_output dx;
    CHECK_EQ_INT(df_gradients(g, 1, NULL, NULL, 1, &x, &dx), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();
    x = ph(g, "x", DF_FLOAT, 0, NULL);
    y = df_square(g, x);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, NULL, &dx), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();
    x = ph(g, "x", DF_FLOAT, 0, NULL);
    y = df_square(g, x);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &x, NULL), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();
    x = ph(g, "x", DF_FLOAT, 0, NULL);
    y = df_square(g, x);
    CHECK_EQ_INT(df_gradients(g, -1, &y, NULL, 1, &x, &dx), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();
    x = ph(g, "x", DF_FLOAT, 0, NULL);
    df_output ny = NOUT;
    CHECK_EQ_INT(df_gradients(g, 1, &ny, NULL, 1, &x, &dx), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();                                      /* grad_ys of the wrong shape */
    x = ph(g, "x", DF_FLOAT, 1, D(3));
    y = df_square(g, x);
    df_output gy = konst(g, DF_FLOAT, 1, D(2), V(1, 1));
    CHECK(df_gradients(g, 1, &y, &gy, 1, &x, &dx) == DF_INVALID_ARGUMENT || df_graph_status(g)->code != DF_OK);
    df_graph_free(g);
    g = df_graph_new();
    x = ph(g, "x", DF_FLOAT, 0, NULL);
    y = df_square(g, x);
    CHECK(df_gradients(NULL, 1, &y, NULL, 1, &x, &dx) != DF_OK);
    df_graph_free(g);
    /* a valid call works; grad_ys of the wrong dtype is refused */
    g = df_graph_new();
    x = ph(g, "x", DF_FLOAT, 0, NULL);
    y = df_square(g, x);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &x, &dx), DF_OK);
    CHECK(dx.node != NULL);
    df_output gy64 = df_scalar_f64(g, 1.0);
    CHECK_EQ_INT(df_gradients(g, 1, &y, &gy64, 1, &x, &dx), DF_INVALID_ARGUMENT);
    CHECK(dx.node == NULL);
    df_graph_free(g);

    /* df_node_update_input */
    g = df_graph_new();
    df_output a = df_scalar_f32(g, 1);
    df_output id = df_identity(g, a);
    CHECK_EQ_INT(df_node_update_input(NULL, id.node, 0, a), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_node_update_input(g, NULL, 0, a), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();
    a = df_scalar_f32(g, 1);
    id = df_identity(g, a);
    CHECK_EQ_INT(df_node_update_input(g, id.node, 5, a), DF_OUT_OF_RANGE);  /* TF Graph::UpdateEdge */
    df_graph_free(g);
    g = df_graph_new();
    a = df_scalar_f32(g, 1);
    id = df_identity(g, a);
    CHECK_EQ_INT(df_node_update_input(g, id.node, -1, a), DF_OUT_OF_RANGE);
    df_graph_free(g);
    g = df_graph_new();
    a = df_scalar_f32(g, 1);
    id = df_identity(g, a);
    CHECK_EQ_INT(df_node_update_input(g, id.node, 0, NOUT), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();
    a = df_scalar_f32(g, 1);
    id = df_identity(g, a);
    CHECK_EQ_INT(df_node_update_input(g, id.node, 0, df_scalar_i32(g, 1)), DF_INVALID_ARGUMENT);  /* type */
    df_graph_free(g);
    g = df_graph_new();
    a = df_scalar_f32(g, 1);
    id = df_identity(g, a);
    df_output b2 = df_scalar_f32(g, 2);
    CHECK_EQ_INT(df_node_update_input(g, id.node, 0, b2), DF_OK);                        /* control */
    df_output idin = df_node_input(id.node, 0);
    CHECK(idin.node == b2.node && idin.index == 0);
    df_graph_free(g);

    /* validation */
    df_status st;
    CHECK_EQ_INT(df_graph_validate(NULL, &st), DF_INVALID_ARGUMENT);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    g = df_graph_new();
    df_identity(g, df_scalar_f32(g, 1));
    CHECK_EQ_INT(df_graph_validate(g, NULL), DF_OK);
    CHECK_EQ_INT(df_graph_validate(g, &st), DF_OK);
    df_graph_free(g);
    /* a cycle not through NextIteration, made with update_input */
    g = df_graph_new();
    a = df_scalar_f32(g, 1);
    df_output i1 = df_identity(g, a);
    df_output i2 = df_identity(g, i1);
    df_code rc = df_node_update_input(g, i1.node, 0, i2);
    if (rc == DF_OK) {
        CHECK_EQ_INT(df_graph_validate(g, &st), DF_INVALID_ARGUMENT);
        df_session *s = df_session_new(g, NULL, &st);
        df_tensor *out = NULL;
        if (s) {
            CHECK(df_session_run(s, NULL, NULL, 0, &i2, &out, 1, NULL, 0, &st) == DF_INVALID_ARGUMENT);
            df_tensor_release(out);
            df_session_free(s);
        }
    } else {
        CHECK_EQ_INT(rc, DF_INVALID_ARGUMENT);
    }
    df_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
   Sessions: feeds, fetches, targets
   --------------------------------------------------------------------------------------------- */
static void expect_run_code_(const char *file, int line, df_session *s, const df_output *feeds,
                             df_tensor *const *vals, int nf, const df_output *fetches, int n,
                             df_node *const *targets, int nt, df_code code, const char *node) {
    df_status st;
    df_status_clear(&st);
    df_tensor *out[4] = {NULL, NULL, NULL, NULL};
    df_code rc = df_session_run(s, feeds, vals, nf, fetches, n > 0 && n <= 4 ? out : NULL, n, targets, nt, &st);
    if (rc != code || st.code != code)
        df_test_fail(file, line, "run returned %s (status %s: %s), want %s", df_code_name(rc),
                     df_code_name(st.code), st.message, df_code_name(code));
    if (code != DF_OK && !st.message[0]) df_test_fail(file, line, "empty error message");
    if (node) check_message(file, line, &st, NULL, node);
    for (int i = 0; i < 4; i++) df_tensor_release(out[i]);
}
#define EXPECT_RUN_CODE(s, f, v, nf, fe, n, t, nt, code, node) \
    expect_run_code_(__FILE__, __LINE__, s, f, v, nf, fe, n, t, nt, code, node)

DF_TEST(bad_session_feeds_and_fetches) {
    df_graph *g = df_graph_new();
    df_output x = ph(g, "x", DF_FLOAT, 1, D(2));
    df_output u = ph(g, "u", DF_FLOAT, 2, D(-1, 2));
    df_output y = named1(g, "Identity", "y", x);
    df_output yu = named1(g, "Identity", "yu", u);
    df_output c = df_scalar_f32(g, 3);
    df_node *noop = df_no_op(g, NULL, 0);
    df_graph *other = df_graph_new();
    df_output foreign = df_scalar_f32(other, 1);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (!s) { df_graph_free(g); df_graph_free(other); return; }
    df_tensor *good = tensor_of(DF_FLOAT, 1, D(2), V(1, 2));
    df_tensor *i32 = tensor_of(DF_INT32, 1, D(2), V(1, 2));
    df_tensor *f3 = tensor_of(DF_FLOAT, 1, D(3), V(1, 2, 3));
    df_tensor *f12 = tensor_of(DF_FLOAT, 2, D(1, 2), V(1, 2));
    df_tensor *fs = df_tensor_scalar_f32(1);
    df_tensor *f52 = tensor_of(DF_FLOAT, 2, D(5, 2), V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
    df_tensor *f53 = tensor_of(DF_FLOAT, 2, D(5, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    df_tensor *nullv = NULL;

    /* controls */
    EXPECT_RUN_CODE(s, &x, &good, 1, &y, 1, NULL, 0, DF_OK, NULL);
    EXPECT_RUN_CODE(s, &u, &f52, 1, &yu, 1, NULL, 0, DF_OK, NULL);
    EXPECT_RUN_CODE(s, NULL, NULL, 0, NULL, 0, &noop, 1, DF_OK, NULL);
    EXPECT_RUN_CODE(s, NULL, NULL, 0, NULL, 0, NULL, 0, DF_OK, NULL);
    EXPECT_RUN_CODE(s, &c, &fs, 1, &c, 1, NULL, 0, DF_OK, NULL);       /* any tensor can be fed */

    /* an unfed placeholder */
    EXPECT_RUN_CODE(s, NULL, NULL, 0, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, "x");
    /* feeds that contradict the placeholder */
    EXPECT_RUN_CODE(s, &x, &i32, 1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &f3, 1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &f12, 1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &fs, 1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &u, &f53, 1, &yu, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &u, &good, 1, &yu, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &c, &i32, 1, &c, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);   /* dtype vs a Const */
    EXPECT_RUN_CODE(s, &x, &nullv, 1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    /* NULL arrays with nonzero counts, negative counts */
    EXPECT_RUN_CODE(s, NULL, &good, 1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, NULL, 1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &good, 1, NULL, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &good, 1, &y, 1, NULL, 2, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &good, -1, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &good, 1, &y, -1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    EXPECT_RUN_CODE(s, &x, &good, 1, &y, 1, &noop, -1, DF_INVALID_ARGUMENT, NULL);
    CHECK_EQ_INT(df_session_run(s, &x, &good, 1, &y, NULL, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    /* indices out of range, NULL nodes, nodes of other graphs */
    df_output bad_out[] = {{x.node, 1}, {x.node, -1}, {NULL, 0}, {noop, 0}, foreign};
    for (int i = 0; i < LEN(bad_out); i++) {
        df_tensor *out = NULL;
        df_code rc = df_session_run(s, &bad_out[i], &good, 1, &c, &out, 1, NULL, 0, &st);
        CHECK_MSG(rc == DF_INVALID_ARGUMENT || (i == 4 && rc == DF_NOT_FOUND), "feed case %d: %s", i,
                  df_code_name(rc));
        df_tensor_release(out);
        out = NULL;
        rc = df_session_run(s, &x, &good, 1, &bad_out[i], &out, 1, NULL, 0, &st);
        CHECK_MSG(rc == DF_INVALID_ARGUMENT || (i == 4 && rc == DF_NOT_FOUND), "fetch case %d: %s", i,
                  df_code_name(rc));
        CHECK(out == NULL);
        df_tensor_release(out);
    }
    df_node *bad_targets[2] = {NULL, foreign.node};
    EXPECT_RUN_CODE(s, NULL, NULL, 0, NULL, 0, &bad_targets[0], 1, DF_INVALID_ARGUMENT, NULL);
    {
        df_code rc = df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &bad_targets[1], 1, &st);
        CHECK(rc == DF_INVALID_ARGUMENT || rc == DF_NOT_FOUND);
    }
    /* the same tensor fed twice */
    df_output two[2] = {x, x};
    df_tensor *twov[2] = {good, good};
    EXPECT_RUN_CODE(s, two, twov, 2, &y, 1, NULL, 0, DF_INVALID_ARGUMENT, NULL);
    /* after all that the session still works, and the feed is untouched */
    df_tensor *out = NULL;
    df_session_run(s, &x, &good, 1, &y, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(out && ((const float *)df_tensor_data(out))[1] == 2);
    CHECK(((const float *)df_tensor_data(good))[0] == 1);
    df_tensor_release(out);
    /* st may be NULL: the code is still returned */
    out = NULL;
    CHECK_EQ_INT(df_session_run(s, &x, &good, 1, &y, &out, 1, NULL, 0, NULL), DF_OK);
    df_tensor_release(out);
    out = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, NULL), DF_INVALID_ARGUMENT);
    df_tensor_release(out);
    /* a NULL session */
    CHECK_EQ_INT(df_session_run(NULL, &x, &good, 1, &y, &out, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);

    df_tensor *all[] = {good, i32, f3, f12, fs, f52, f53};
    for (int i = 0; i < LEN(all); i++) df_tensor_release(all[i]);
    df_session_free(s);
    df_graph_free(g);
    df_graph_free(other);
}

DF_TEST(bad_session_construction_and_variables) {
    df_status st;
    CHECK(df_session_new(NULL, NULL, &st) == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    CHECK(df_session_new(NULL, NULL, NULL) == NULL);
    df_graph *g = df_graph_new();
    df_output c = df_scalar_f32(g, 1);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = -1;
    df_session *s = df_session_new(g, &o, &st);
    CHECK(s == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    df_session_free(s);
    /* (negative inter_op_threads means "the caller's thread" in TF, so it is not tested here) */
    s = df_session_new(g, NULL, NULL);                      /* st may be NULL */
    CHECK(s != NULL);
    df_session_free(s);
    o.num_cpu_devices = 0;                                  /* ... also where the workers fail */
    o.target = "127.0.0.1:1";                               /* (nothing listens on port 1) */
    o.worker_timeout_ms = 2000;
    CHECK(df_session_new(g, &o, NULL) == NULL);
    CHECK(df_session_new(g, &o, &st) == NULL);
    CHECK(st.code != DF_OK);
    (void)c;
    df_graph_free(g);

    /* an uninitialised variable: FailedPrecondition, as TF */
    g = df_graph_new();
    df_output v = df_variable(g, "weights_v", DF_FLOAT, 1, D(2));
    df_node *inc = df_assign_add(g, v, konst(g, DF_FLOAT, 1, D(2), V(1, 1)));
    s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s) {
        EXPECT_RUN_CODE(s, NULL, NULL, 0, &v, 1, NULL, 0, DF_FAILED_PRECONDITION, NULL);
        df_tensor *out = NULL;
        df_session_run(s, NULL, NULL, 0, &v, &out, 1, NULL, 0, &st);
        CHECK(strstr(st.message, "weights_v") != NULL);
        df_tensor_release(out);
        EXPECT_RUN_CODE(s, NULL, NULL, 0, NULL, 0, &inc, 1, DF_FAILED_PRECONDITION, NULL);
        df_session_free(s);
    }
    df_graph_free(g);

    /* a device that does not exist or does not parse */
    const char *devs[] = {"/device:CPU:7", "/device:XPU:0", "/device:CPU:abc", "garbage"};
    for (int i = 0; i < LEN(devs); i++) {
        g = df_graph_new();
        df_op_builder *b = df_op_new(g, "Identity", "placed");
        df_op_add_input(b, df_scalar_f32(g, 1));
        df_op_set_device(b, devs[i]);
        df_output y = {df_op_finish(b), 0};
        ANY_ERR(g, y, DF_INVALID_ARGUMENT, NULL, NULL);
    }
    /* soft placement falls back for a well-formed but absent device */
    g = df_graph_new();
    df_op_builder *b = df_op_new(g, "Identity", "placed");
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_op_set_device(b, "/device:CPU:7");
    df_output y = {df_op_finish(b), 0};
    memset(&o, 0, sizeof o);
    o.soft_placement = 1;
    s = df_session_new(g, &o, &st);
    if (s) {
        df_tensor *out = NULL;
        df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        df_tensor_release(out);
        df_session_free(s);
    } else CHECK(s != NULL);
    df_graph_free(g);

    /* out of memory under a session memory limit is a status (the value is fed so that no
       constant folding can move the allocation elsewhere) */
    g = df_graph_new();
    df_output val = ph(g, "val", DF_FLOAT, 0, NULL);
    y = named2(g, "Fill", "big", KI32(g, 1024, 1024), val);
    memset(&o, 0, sizeof o);
    o.memory_limit = 64 * 1024;
    s = df_session_new(g, &o, &st);
    CHECK(s != NULL);
    if (s) {
        df_tensor *out = NULL, *one = df_tensor_scalar_f32(1);
        CHECK_EQ_INT(df_session_run(s, &val, &one, 1, &y, &out, 1, NULL, 0, &st), DF_RESOURCE_EXHAUSTED);
        df_tensor_release(one);
        check_message(__FILE__, __LINE__, &st, NULL, "big");
        CHECK(out == NULL);
        df_tensor_release(out);
        df_session_free(s);
    }
    df_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
   NULL pointers through every public function
   --------------------------------------------------------------------------------------------- */
DF_TEST(null_pointers_everywhere) {
    df_status st;
    char buf[64];
    int64_t dims[DF_MAX_RANK];
    /* status and types */
    CHECK(df_code_name((df_code)1234) != NULL);
    CHECK_EQ_INT(df_status_set(NULL, DF_INTERNAL, "x"), DF_INTERNAL);
    df_status_clear(NULL);
    /* tensors */
    CHECK(df_tensor_new(DF_FLOAT, 2, NULL, &st) == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    CHECK(df_tensor_new(DF_FLOAT, 2, NULL, NULL) == NULL);
    CHECK(df_tensor_from_data(DF_FLOAT, 1, NULL, NULL, 4, &st) == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    CHECK(df_tensor_from_data(DF_FLOAT, 1, D(1), NULL, 4, NULL) == NULL);
    CHECK(df_tensor_retain(NULL) == NULL);
    df_tensor_release(NULL);
    (void)df_tensor_dtype(NULL);
    (void)df_tensor_rank(NULL);
    CHECK_EQ_INT(df_tensor_dim(NULL, 0), -1);
    CHECK(df_tensor_num_elements(NULL) <= 0);
    CHECK_EQ_INT(df_tensor_nbytes(NULL), 0);
    CHECK(df_tensor_data(NULL) == NULL);
    memset(buf, 'z', sizeof buf);
    CHECK(df_tensor_describe(NULL, buf, sizeof buf) == buf);
    CHECK(memchr(buf, 0, sizeof buf) != NULL);
    df_tensor *t = df_tensor_scalar_f32(1);
    CHECK(df_tensor_describe(t, NULL, 0) == NULL);
    memset(buf, 'z', sizeof buf);
    df_tensor_describe(t, buf, 1);
    CHECK_EQ_INT(buf[0], 0);
    df_tensor_release(t);
    /* graphs and nodes */
    df_graph_free(NULL);
    const df_status *gs = df_graph_status(NULL);
    CHECK(gs == NULL || gs->code != DF_OK);
    CHECK(df_graph_find(NULL, "x") == NULL);
    CHECK_EQ_INT(df_graph_num_nodes(NULL), 0);
    CHECK(df_graph_node_at(NULL, 0) == NULL);
    (void)df_node_name(NULL);
    (void)df_node_op(NULL);
    (void)df_node_device(NULL);
    CHECK_EQ_INT(df_node_num_outputs(NULL), 0);
    CHECK_EQ_INT(df_node_num_inputs(NULL), 0);
    CHECK(df_node_input(NULL, 0).node == NULL);
    CHECK_EQ_INT(df_node_num_control_inputs(NULL), 0);
    CHECK(df_node_control_input(NULL, 0) == NULL);
    CHECK_EQ_INT(df_dtype_size(df_output_dtype(NOUT)), 0);
    CHECK_EQ_INT(df_output_shape(NOUT, dims), -1);
    int64_t iv;
    float fv;
    int bv;
    df_dtype tv;
    const char *sv;
    CHECK(!df_node_attr_int(NULL, "N", &iv));
    CHECK(!df_node_attr_float(NULL, "x", &fv));
    CHECK(!df_node_attr_bool(NULL, "x", &bv));
    CHECK(!df_node_attr_type(NULL, "T", &tv));
    CHECK(!df_node_attr_string(NULL, "x", &sv));

    df_graph *g = df_graph_new();
    df_output c = df_scalar_f32(g, 1);
    df_output m = df_matmul(g, konst(g, DF_FLOAT, 2, D(1, 1), V(1)), konst(g, DF_FLOAT, 2, D(1, 1), V(2)), 0, 0);
    CHECK(df_graph_find(g, NULL) == NULL);
    CHECK(df_graph_find(g, "") == NULL);
    CHECK(df_graph_find(g, "no such node") == NULL);
    CHECK(df_graph_node_at(g, -1) == NULL);
    CHECK(df_graph_node_at(g, df_graph_num_nodes(g)) == NULL);
    CHECK(df_graph_node_at(g, INT32_MAX) == NULL);
    CHECK(df_node_input(c.node, 0).node == NULL);
    CHECK(df_node_input(m.node, 2).node == NULL);
    CHECK(df_node_input(m.node, -1).node == NULL);
    CHECK(df_node_control_input(m.node, 0) == NULL);
    CHECK(df_node_control_input(m.node, -1) == NULL);
    df_output oob = {m.node, 1};
    CHECK_EQ_INT(df_output_shape(oob, dims), -1);
    CHECK_EQ_INT(df_dtype_size(df_output_dtype(oob)), 0);
    oob.index = -1;
    CHECK_EQ_INT(df_output_shape(oob, dims), -1);
    int r = df_output_shape(m, NULL);
    CHECK(r == 2 || r == -1);
    CHECK(!df_node_attr_bool(m.node, NULL, &bv));
    CHECK(!df_node_attr_bool(m.node, "no_such_attr", &bv));
    CHECK(!df_node_attr_int(m.node, "transpose_a", &iv));      /* wrong kind */
    CHECK(!df_node_attr_string(m.node, "T", &sv));
    CHECK(df_node_attr_type(m.node, "T", &tv) && tv == DF_FLOAT);
    (void)df_node_attr_type(m.node, "T", NULL);
    /* builder with NULL everywhere */
    CHECK(df_op_new(NULL, "NoOp", NULL) == NULL);
    df_op_add_input(NULL, c);
    df_op_add_input_list(NULL, &c, 1);
    df_op_add_control_input(NULL, c.node);
    df_op_set_device(NULL, "/cpu:0");
    df_op_set_attr_int(NULL, "a", 1);
    df_op_set_attr_float(NULL, "a", 1);
    df_op_set_attr_bool(NULL, "a", 1);
    df_op_set_attr_type(NULL, "a", DF_FLOAT);
    df_op_set_attr_string(NULL, "a", "s");
    df_op_set_attr_shape(NULL, "a", 1, D(1));
    df_op_set_attr_tensor(NULL, "a", NULL);
    df_op_set_attr_int_list(NULL, "a", D(1), 1);
    df_op_set_attr_type_list(NULL, "a", NULL, 0);
    CHECK(df_op_finish(NULL) == NULL);
    CHECK_EQ_INT(df_graph_status(g)->code, DF_OK);          /* nothing above touched g */
    /* helpers with a NULL graph */
    df_tensor *ct = df_tensor_scalar_f32(2);
    CHECK(df_const(NULL, ct).node == NULL);
    df_tensor_release(ct);                                  /* no leak: the graph never retained it */
    CHECK(df_scalar_f32(NULL, 1).node == NULL);
    CHECK(df_scalar_i32(NULL, 1).node == NULL);
    CHECK(df_scalar_f64(NULL, 1).node == NULL);
    CHECK(df_scalar_i64(NULL, 1).node == NULL);
    CHECK(df_scalar_bool(NULL, 1).node == NULL);
    CHECK(df_placeholder(NULL, "p", DF_FLOAT, 0, NULL).node == NULL);
    CHECK(df_identity(NULL, c).node == NULL);
    CHECK(df_add(NULL, c, c).node == NULL);
    CHECK(df_sub(NULL, c, c).node == NULL);
    CHECK(df_mul(NULL, c, c).node == NULL);
    CHECK(df_div(NULL, c, c).node == NULL);
    CHECK(df_neg(NULL, c).node == NULL);
    CHECK(df_square(NULL, c).node == NULL);
    CHECK(df_exp(NULL, c).node == NULL);
    CHECK(df_log(NULL, c).node == NULL);
    CHECK(df_tanh(NULL, c).node == NULL);
    CHECK(df_sigmoid(NULL, c).node == NULL);
    CHECK(df_relu(NULL, c).node == NULL);
    CHECK(df_matmul(NULL, c, c, 0, 0).node == NULL);
    CHECK(df_less(NULL, c, c).node == NULL);
    CHECK(df_greater(NULL, c, c).node == NULL);
    CHECK(df_equal(NULL, c, c).node == NULL);
    CHECK(df_logical_not(NULL, c).node == NULL);
    CHECK(df_cast(NULL, c, DF_INT32).node == NULL);
    CHECK(df_reshape(NULL, c, 1, D(1)).node == NULL);
    CHECK(df_reduce_sum(NULL, c, 0, NULL, 0).node == NULL);
    CHECK(df_reduce_mean(NULL, c, 0, NULL, 0).node == NULL);
    CHECK(df_softmax(NULL, c).node == NULL);
    CHECK(df_sparse_softmax_cross_entropy(NULL, c, c).node == NULL);
    CHECK(df_variable(NULL, "v", DF_FLOAT, 0, NULL).node == NULL);
    CHECK(df_assign(NULL, c, c) == NULL);
    CHECK(df_assign_add(NULL, c, c) == NULL);
    CHECK(df_assign_sub(NULL, c, c) == NULL);
    CHECK(df_no_op(NULL, NULL, 0) == NULL);
    CHECK(df_maximum(NULL, c, c).node == NULL);
    CHECK(df_minimum(NULL, c, c).node == NULL);
    CHECK(df_less_equal(NULL, c, c).node == NULL);
    CHECK(df_greater_equal(NULL, c, c).node == NULL);
    CHECK(df_not_equal(NULL, c, c).node == NULL);
    CHECK(df_logical_and(NULL, c, c).node == NULL);
    CHECK(df_logical_or(NULL, c, c).node == NULL);
    CHECK(df_select(NULL, c, c, c).node == NULL);
    CHECK(df_floor_mod_i(NULL, c, c).node == NULL);
    CHECK(df_add_n(NULL, &c, 1).node == NULL);
    CHECK(df_shape(NULL, c).node == NULL);
    CHECK(df_stop_gradient(NULL, c).node == NULL);
    df_graph_push_name_scope(NULL, "s");
    df_graph_pop_name_scope(NULL);
    df_graph_push_device(NULL, "/cpu:0");
    df_graph_pop_device(NULL);
    df_graph_push_control_deps(NULL, NULL, 0);
    df_graph_pop_control_deps(NULL);
    /* popping more scopes than were pushed is harmless */
    df_graph_pop_name_scope(g);
    df_graph_pop_device(g);
    df_graph_pop_control_deps(g);
    df_output after = df_identity(g, c);
    CHECK(after.node != NULL || df_graph_status(g)->code != DF_OK);
    df_graph_free(g);
    /* sessions and partitions */
    df_session_free(NULL);
    CHECK_EQ_INT(df_session_num_partitions(NULL), 0);
    const char *dev = NULL;
    CHECK(df_session_partition(NULL, 0, &dev) == NULL);
    df_alloc_stats as;
    CHECK_EQ_INT(df_session_device_alloc_stats(NULL, 0, &as), 0);
    g = df_graph_new();
    c = df_scalar_f32(g, 1);
    df_session *s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s) {
        df_tensor *out = NULL;
        df_session_run(s, NULL, NULL, 0, &c, &out, 1, NULL, 0, &st);
        df_tensor_release(out);
        CHECK(df_session_partition(s, -1, &dev) == NULL);
        CHECK(df_session_partition(s, 1000, &dev) == NULL);
        (void)df_session_partition(s, 0, NULL);
        CHECK_EQ_INT(df_session_device_alloc_stats(s, -1, &as), 0);
        CHECK_EQ_INT(df_session_device_alloc_stats(s, 1000, &as), 0);
        (void)df_session_device_alloc_stats(s, 0, NULL);
        CHECK_EQ_INT(df_session_device_alloc_stats(s, 0, &as), 1);
        df_session_free(s);
    }
    df_graph_free(g);
}

DF_TEST(bad_bfc_allocator_arguments) {
    CHECK(df_bfc_alloc(NULL, 16) == NULL);
    df_bfc_free(NULL, NULL);
    CHECK_EQ_INT(df_bfc_allocated_size(NULL, NULL), 0);
    df_alloc_stats s;
    memset(&s, 0x55, sizeof s);
    df_bfc_get_stats(NULL, &s);
    df_bfc_free_all(NULL);
    char buf[64];
    memset(buf, 'z', sizeof buf);
    CHECK(df_bfc_summary(NULL, buf, sizeof buf) == buf);
    CHECK(memchr(buf, 0, sizeof buf) != NULL);
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = 1 << 20;
    df_bfc *a = df_bfc_new(&o);
    CHECK(a != NULL);
    if (!a) return;
    df_bfc_free(a, NULL);
    CHECK_EQ_INT(df_bfc_allocated_size(a, NULL), 0);
    CHECK(df_bfc_alloc(a, SIZE_MAX) == NULL);                  /* rounding must not wrap */
    CHECK(df_bfc_alloc(a, SIZE_MAX - 255) == NULL);
    CHECK(df_bfc_alloc(a, (size_t)1 << 62) == NULL);
    CHECK(df_bfc_alloc(a, (1 << 20) + 1) == NULL);             /* over the limit */
    void *p = df_bfc_alloc(a, 1000);
    CHECK(p != NULL);
    CHECK(df_bfc_allocated_size(a, p) >= 1000);
    df_bfc_get_stats(a, &s);
    CHECK_EQ_INT(s.bytes_limit, 1 << 20);
    CHECK(s.bytes_in_use >= 1000);
    df_bfc_free(a, p);
    df_bfc_get_stats(a, &s);
    CHECK_EQ_INT(s.bytes_in_use, 0);
    /* NULL out-parameters */
    CHECK(df_bfc_summary(a, NULL, 0) == NULL);
    df_bfc_get_stats(a, NULL);
    df_bfc_free_all(a);
}

/* ---------------------------------------------------------------------------------------------
   Files: .npy and GraphDef
   --------------------------------------------------------------------------------------------- */
static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    if (n) CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

/* An .npy (version 1.0) with the given header dict and payload; header_len_delta lies about
   the header length. */
static void write_npy(const char *path, const char *dict, const void *data, size_t n, int header_len_delta) {
    unsigned char buf[512];
    size_t dl = strlen(dict), total = 10 + dl + 1;
    size_t padded = (total + 63) / 64 * 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    size_t hl = padded - 10;
    unsigned hlv = (unsigned)((long)hl + header_len_delta);
    buf[8] = (unsigned char)(hlv & 0xff);
    buf[9] = (unsigned char)((hlv >> 8) & 0xff);
    memcpy(buf + 10, dict, dl);
    memset(buf + 10 + dl, ' ', padded - 10 - dl);
    buf[padded - 1] = '\n';
    unsigned char *all = (unsigned char *)malloc(padded + n + 1);
    memcpy(all, buf, padded);
    if (n) memcpy(all + padded, data, n);
    write_file(path, all, padded + n);
    free(all);
}

static int malformed_code(df_code c) {
    return c == DF_INVALID_ARGUMENT || c == DF_DATA_LOSS || c == DF_UNIMPLEMENTED;
}

DF_TEST(bad_npy_files) {
    char path[512];
    df_status st;
    snprintf(path, sizeof path, "%s/bad_input.npy", df_test_tmpdir());
    const float v3[3] = {1, 2, 3};
    /* control */
    write_npy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", v3, 12, 0);
    df_tensor *t = df_tensor_read_npy(path, &st);
    CHECK_OK(&st);
    CHECK(t && df_tensor_num_elements(t) == 3 && ((const float *)df_tensor_data(t))[2] == 3);
    df_tensor_release(t);
    struct { const char *dict; size_t n; int delta; } bad[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }", 12, 0},      /* truncated */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12, 0},         /* extra bytes */
        {"{'descr': '<U4', 'fortran_order': False, 'shape': (3,), }", 12, 0},         /* unsupported */
        {"{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 12, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 12, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }", 12, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,3), }", 12, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 12, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, 40000},     /* header past EOF */
        {"{'descr': '<f4', 'fortran_order': False, }", 12, 0},                        /* no shape */
        {"{'descr': '<f4', 'shape': (3,", 12, 0},                                    /* unterminated */
        {"", 12, 0},
    };
    for (int i = 0; i < LEN(bad); i++) {
        write_npy(path, bad[i].dict, v3, bad[i].n, bad[i].delta);
        df_status_clear(&st);
        t = df_tensor_read_npy(path, &st);
        CHECK_MSG(t == NULL, "malformed npy %d accepted", i);
        CHECK_MSG(malformed_code(st.code), "npy case %d: %s: %s", i, df_code_name(st.code), st.message);
        df_tensor_release(t);
        CHECK(df_tensor_read_npy(path, NULL) == NULL);
    }
    write_file(path, "\x93NUMPX\x01\x00\x10\x00", 10);
    t = df_tensor_read_npy(path, &st);
    CHECK(t == NULL && malformed_code(st.code));
    df_tensor_release(t);
    write_file(path, "", 0);
    t = df_tensor_read_npy(path, &st);
    CHECK(t == NULL && malformed_code(st.code));
    df_tensor_release(t);
    snprintf(path, sizeof path, "%s/does_not_exist_%d.npy", df_test_tmpdir(), 12345);
    remove(path);
    t = df_tensor_read_npy(path, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_NOT_FOUND);
    CHECK(df_tensor_read_npy(NULL, &st) == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    /* writing */
    df_tensor *w = df_tensor_scalar_f32(1);
    CHECK_EQ_INT(df_tensor_write_npy(NULL, path), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_tensor_write_npy(w, NULL), DF_INVALID_ARGUMENT);
    CHECK(df_tensor_write_npy(w, "/nonexistent_dir_for_df_tests/x.npy") != DF_OK);
    df_tensor_release(w);
}

DF_TEST(bad_tensor_shapes_that_wrap) {
    df_status st;
    const int64_t a = ((int64_t)1 << 32) + 1, b = ((int64_t)1 << 32) - 1;
    const int64_t wrap6[5] = {a, b, a, b, 6};                 /* product is 6 modulo 2^64 */
    df_tensor *t = df_tensor_new(DF_FLOAT, 5, wrap6, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    df_tensor_release(t);
    const float six[6] = {0};
    t = df_tensor_from_data(DF_FLOAT, 5, wrap6, six, sizeof six, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    df_tensor_release(t);
    const int64_t wrap0[2] = {(int64_t)1 << 62, 4};           /* product is 0 modulo 2^64 */
    t = df_tensor_new(DF_UINT8, 2, wrap0, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    df_tensor_release(t);
    t = df_tensor_from_data(DF_UINT8, 2, wrap0, six, 0, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    df_tensor_release(t);
    /* and as a placeholder shape */
    df_graph *g = df_graph_new();
    CHECK(df_placeholder(g, "p", DF_FLOAT, 5, wrap6).node == NULL);
    BUILD_ERR(g, DF_INVALID_ARGUMENT, NULL, "p");
    /* a Const built from a tensor is fine; the graph keeps its own reference */
    g = df_graph_new();
    t = df_tensor_scalar_f32(7);
    df_output c = df_const(g, t);
    df_tensor_release(t);
    df_tensor *out = RUN_OK(g, c);
    CHECK(out && *(const float *)df_tensor_data(out) == 7);
    df_tensor_release(out);
    df_graph_free(g);
}
