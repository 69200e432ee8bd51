/* test_functions.c - the function library, calls, functional If/While and their lowering:
   results and gradients equal to df_cond/df_while_loop, on one device and split over CPU
   devices; captured values; nesting; recursion and depth refused; bad uses give statuses. */
#include "harness.h"

static df_tensor *fn_scalar(float v) {
    df_tensor *t = df_tensor_new(DF_FLOAT, 0, NULL, NULL);
    *(float *)df_tensor_data(t) = v;
    return t;
}
static df_tensor *fn_vec(int n, const float *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    memcpy(df_tensor_data(t), v, (size_t)n * sizeof(float));
    return t;
}
static df_output fn_const(df_graph *g, float v) {
    df_tensor *t = fn_scalar(v);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output fn_placeholder(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "Placeholder", name);
    df_op_set_attr_type(b, "dtype", t);
    df_op_set_attr_shape(b, "shape", rank, dims);
    df_node *n = df_op_finish(b);
    return (df_output){n, 0};
}
static int fn_count_ops(const df_graph *g, const char *op) {
    int k = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) k += !strcmp(df_node_op(df_graph_node_at(g, i)), op);
    return k;
}

/* Runs fetches with feeds; returns the first element of each fetch in out. */
static int fn_run(df_graph *g, int n_cpu, int n_feeds, const df_output *feeds, df_tensor *const *vals, int n_fetch,
                  const df_output *fetches, float *out, df_status *st) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = n_cpu;
    df_session *s = df_session_new(g, &o, st);
    if (!s) return 0;
    df_tensor *res[16] = {0};
    df_code c = df_session_run(s, feeds, vals, n_feeds, fetches, res, n_fetch, NULL, 0, st);
    for (int i = 0; i < n_fetch; i++) {
        if (c == DF_OK) out[i] = df_tensor_dtype(res[i]) == DF_FLOAT ? *(const float *)df_tensor_data(res[i])
                                                                       : (float)*(const int32_t *)df_tensor_data(res[i]);
        df_tensor_release(res[i]);
    }
    df_session_free(s);
    return c == DF_OK;
}

/* ---- calls ---- */
typedef struct fn_ctx { df_output c; const char *device; } fn_ctx;
static void fn_square_plus(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const fn_ctx *u = (const fn_ctx *)user;
    outs[0] = df_add(fg, df_mul(fg, args[0], args[0]), u->c);      /* u->c: captured from the outer graph */
    outs[1] = df_neg(fg, args[0]);
}
DF_TEST(functions_call_with_captured_values) {
    df_graph *g = df_graph_new();
    fn_ctx u = {fn_const(g, 3.0f), NULL};
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "square_plus", 1, &t, 2, fn_square_plus, &u), DF_OK);
    CHECK_EQ_INT(df_graph_num_functions(g), 1);
    CHECK(!strcmp(df_graph_function_name(g, 0), "square_plus"));
    const df_graph *body = df_graph_function_body(g, "square_plus");
    CHECK(body != NULL);
    CHECK_EQ_INT(fn_count_ops(body, "_Arg"), 2);         /* x and the captured constant */
    df_output x = fn_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_output r1[2], r2[2];
    CHECK_EQ_INT(df_call(g, "square_plus", 1, &x, 2, r1), DF_OK);
    CHECK_EQ_INT(df_call(g, "square_plus", 1, &r1[0], 2, r2), DF_OK);
    CHECK(!strcmp(df_node_op(r1[0].node), "PartitionedCall"));
    df_tensor *xv = fn_scalar(2.0f);
    df_output fetch[3] = {r1[0], r1[1], r2[0]};
    float out[3];
    df_status st;
    CHECK(fn_run(g, 1, 1, &x, &xv, 3, fetch, out, &st));
    CHECK_OK(&st);
    CHECK_NEAR(out[0], 7.0, 1e-6);           /* 2*2 + 3 */
    CHECK_NEAR(out[1], -2.0, 1e-6);
    CHECK_NEAR(out[2], 52.0, 1e-5);          /* 7*7 + 3 */
    /* the calls were inlined: no call node is left, the handles now read IdentityN */
    CHECK_EQ_INT(fn_count_ops(g, "PartitionedCall"), 0);
    CHECK(!strcmp(df_node_op(r1[0].node), "IdentityN"));
    /* gradient through the (lowered) calls: d/dx ((x^2+3)^2 + 3) = 2 (x^2+3) 2x = 56 at x=2 */
    df_output dx;
    CHECK_EQ_INT(df_gradients(g, 1, &r2[0], NULL, 1, &x, &dx), DF_OK);
    CHECK(fn_run(g, 1, 1, &x, &xv, 1, &dx, out, &st));
    CHECK_NEAR(out[0], 56.0, 1e-4);
    df_tensor_release(xv);
    df_graph_free(g);
}

static void fn_inner(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    (void)user;
    outs[0] = df_mul(fg, args[0], fn_const(fg, 2.0f));
}
typedef struct fn_outer_ctx { df_output scale; } fn_outer_ctx;
static void fn_outer(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const fn_outer_ctx *u = (const fn_outer_ctx *)user;
    df_output a;
    df_call(fg, "inner", 1, &args[0], 1, &a);
    df_output b;
    df_call(fg, "inner", 1, &a, 1, &b);
    outs[0] = df_add(fg, b, u->scale);
}
DF_TEST(functions_nested_calls_inline_to_the_same_result) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    fn_outer_ctx u = {fn_const(g, 0.5f)};
    CHECK_EQ_INT(df_function_define(g, "inner", 1, &t, 1, fn_inner, NULL), DF_OK);
    CHECK_EQ_INT(df_function_define(g, "outer", 1, &t, 1, fn_outer, &u), DF_OK);
    df_output x = fn_placeholder(g, "x", DF_FLOAT, 0, NULL), y;
    CHECK_EQ_INT(df_call(g, "outer", 1, &x, 1, &y), DF_OK);
    df_tensor *xv = fn_scalar(1.5f);
    float out[1];
    df_status st;
    CHECK(fn_run(g, 1, 1, &x, &xv, 1, &y, out, &st));
    CHECK_OK(&st);
    CHECK_NEAR(out[0], 6.5, 1e-6);           /* 1.5*4 + 0.5 */
    CHECK_EQ_INT(fn_count_ops(g, "PartitionedCall"), 0);
    df_tensor_release(xv);
    df_graph_free(g);
}

static void fn_recursive(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    (void)user;
    df_call(fg, "rec", 1, args, 1, outs);
}
DF_TEST(functions_recursion_is_refused) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "rec", 1, &t, 1, fn_recursive, NULL), DF_INVALID_ARGUMENT);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "recursion is not supported");
    df_graph_free(g);
    /* through the op builder: a call node naming the function being defined */
    g = df_graph_new();
    CHECK_EQ_INT(df_function_define(g, "ok", 1, &t, 1, fn_inner, NULL), DF_OK);
    df_op_builder *b = df_op_new(g, "PartitionedCall", "c");
    df_output x = fn_const(g, 1.0f);
    df_op_add_input_list(b, &x, 1);
    df_dtype tout = DF_FLOAT;
    df_op_set_attr_type_list(b, "Tout", &tout, 1);
    df_op_set_attr_func(b, "f", "missing");
    CHECK(df_op_finish(b) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_NOT_FOUND, "missing");
    df_graph_free(g);
}

typedef struct fn_chain { int k; } fn_chain;
static void fn_chain_body(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const fn_chain *u = (const fn_chain *)user;
    char prev[32];
    snprintf(prev, sizeof prev, "f%d", u->k - 1);
    df_call(fg, prev, 1, args, 1, outs);
}
DF_TEST(functions_depth_is_bounded) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "f0", 1, &t, 1, fn_inner, NULL), DF_OK);
    int k, code = DF_OK;
    for (k = 1; k < 2 * DF_MAX_FUNCTION_DEPTH && code == DF_OK; k++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", k);
        fn_chain u = {k};
        code = df_function_define(g, name, 1, &t, 1, fn_chain_body, &u);
    }
    CHECK_EQ_INT(code, DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(k - 1, DF_MAX_FUNCTION_DEPTH);          /* f0 .. f{MAX-1} fit */
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "the limit is");
    df_graph_free(g);
}

DF_TEST(functions_bad_calls_give_statuses) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "inner", 1, &t, 1, fn_inner, NULL), DF_OK);
    df_output x = fn_const(g, 1.0f), y[2];
    CHECK_EQ_INT(df_call(g, "inner", 1, &x, 2, y), DF_INVALID_ARGUMENT);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "takes 1 argument");
    df_graph_free(g);
    g = df_graph_new();
    x = fn_const(g, 1.0f);
    CHECK_EQ_INT(df_call(g, "nope", 1, &x, 1, y), DF_NOT_FOUND);
    df_graph_free(g);
    g = df_graph_new();
    CHECK_EQ_INT(df_function_define(g, "inner", 1, &t, 1, fn_inner, NULL), DF_OK);
    CHECK_EQ_INT(df_function_define(g, "inner", 1, &t, 1, fn_inner, NULL), DF_ALREADY_EXISTS);
    df_graph_free(g);
    g = df_graph_new();
    CHECK_EQ_INT(df_function_define(g, "_bad", 1, &t, 1, fn_inner, NULL), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    /* an int argument passed a float */
    g = df_graph_new();
    df_dtype ti = DF_INT32;
    CHECK_EQ_INT(df_function_define(g, "ints", 1, &ti, 0, fn_inner, NULL), DF_INVALID_ARGUMENT);  /* Mul int*float */
    df_graph_free(g);
}

/* ---- functional If and While against df_cond and df_while_loop ---- */
typedef struct fn_cf { df_output x, w; const char *dev; } fn_cf;
static void fn_then(df_graph *g, void *user, df_output *outs) {
    const fn_cf *u = (const fn_cf *)user;
    if (u->dev) df_graph_push_device(g, u->dev);
    outs[0] = df_tanh(g, df_mul(g, u->x, u->w));
    outs[1] = df_add(g, u->x, fn_const(g, 1.0f));
    if (u->dev) df_graph_pop_device(g);
}
static void fn_else(df_graph *g, void *user, df_output *outs) {
    const fn_cf *u = (const fn_cf *)user;
    outs[0] = df_sub(g, df_mul(g, u->x, u->x), u->w);
    outs[1] = u->x;                                          /* an outer value returned as is */
}
static df_output fn_wcond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], fn_const(g, 5.0f));
}
static void fn_wbody(df_graph *g, void *user, const df_output *v, df_output *next) {
    const fn_cf *u = (const fn_cf *)user;
    if (u->dev) df_graph_push_device(g, u->dev);
    next[0] = df_add(g, v[0], fn_const(g, 1.0f));
    next[1] = df_add(g, df_mul(g, v[1], u->w), u->x);        /* w, x captured */
    if (u->dev) df_graph_pop_device(g);
}
/* Builds cond + while (functional or not), their gradients w.r.t. x and w; runs for pred. */
static int fn_cf_case(int functional, int pred_v, int n_cpu, const char *dev, float *out) {
    df_graph *g = df_graph_new();
    df_output pred = fn_placeholder(g, "pred", DF_BOOL, 0, NULL);
    df_output x = fn_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_output w = fn_placeholder(g, "w", DF_FLOAT, 0, NULL);
    fn_cf u = {x, w, dev};
    df_output c[2], l[2];
    df_code code = functional ? df_if(g, pred, 2, fn_then, fn_else, &u, c) : df_cond(g, pred, 2, fn_then, fn_else, &u, c);
    CHECK_EQ_INT(code, DF_OK);
    df_output init[2] = {fn_const(g, 0.0f), c[0]};
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.maximum_iterations = 4;
    code = functional ? df_while(g, 2, init, fn_wcond, fn_wbody, &u, &o, l) : df_while_loop(g, 2, init, fn_wcond, fn_wbody, &u, &o, l);
    CHECK_EQ_INT(code, DF_OK);
    if (functional) {
        CHECK(!strcmp(df_node_op(c[0].node), "StatelessIf"));
        CHECK(!strcmp(df_node_op(l[0].node), "StatelessWhile"));
    }
    df_output y = df_add(g, df_mul(g, l[1], c[1]), l[0]);
    df_output xs[2] = {x, w}, d[2];
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 2, xs, d), DF_OK);
    df_output fetch[6] = {c[0], c[1], l[0], l[1], d[0], d[1]};
    df_tensor *pv = df_tensor_new(DF_BOOL, 0, NULL, NULL);
    *(unsigned char *)df_tensor_data(pv) = (unsigned char)pred_v;
    df_tensor *xv = fn_scalar(0.7f), *wv = fn_scalar(-1.3f);
    df_output feeds[3] = {pred, x, w};
    df_tensor *vals[3] = {pv, xv, wv};
    df_status st;
    int ok = fn_run(g, n_cpu, 3, feeds, vals, 6, fetch, out, &st);
    CHECK_MSG(ok, "functional=%d pred=%d cpus=%d: %s: %s", functional, pred_v, n_cpu, df_code_name(st.code), st.message);
    df_tensor_release(pv); df_tensor_release(xv); df_tensor_release(wv);
    df_graph_free(g);
    return ok;
}
DF_TEST(functions_if_and_while_match_cond_and_while_loop_with_gradients) {
    for (int cpus = 1; cpus <= 2; cpus++)
        for (int p = 0; p <= 1; p++) {
            float a[6], b[6];
            const char *dev = cpus == 2 ? "/cpu:1" : NULL;
            if (!fn_cf_case(0, p, cpus, dev, a) || !fn_cf_case(1, p, cpus, dev, b)) continue;
            for (int i = 0; i < 6; i++)
                CHECK_MSG(fabs(a[i] - b[i]) <= 1e-5 * (1 + fabs(a[i])), "pred=%d cpus=%d fetch %d: %g (df_cond/df_while_loop) vs %g (If/While)",
                          p, cpus, i, a[i], b[i]);
            CHECK_NEAR(a[2], 4.0, 0);            /* maximum_iterations stops the loop at 4 */
        }
}

/* A while loop inside a function body, inside an If branch, inside a While body. */
static df_output fn_in_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], fn_const(g, 3.0f));
}
static void fn_in_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], fn_const(g, 1.0f));
    next[1] = df_mul(g, v[1], fn_const(g, 1.5f));
}
static void fn_loop_fn(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    (void)user;
    df_output init[2] = {fn_const(fg, 0.0f), args[0]}, r[2];
    df_while_loop(fg, 2, init, fn_in_cond, fn_in_body, NULL, NULL, r);     /* becomes a While */
    outs[0] = r[1];
}
typedef struct fn_nest { df_output x; } fn_nest;
static void fn_nest_then(df_graph *g, void *user, df_output *outs) {
    const fn_nest *u = (const fn_nest *)user;
    df_call(g, "loop_fn", 1, &u->x, 1, outs);
}
static void fn_nest_else(df_graph *g, void *user, df_output *outs) {
    const fn_nest *u = (const fn_nest *)user;
    outs[0] = df_neg(g, u->x);
}
static df_output fn_outer_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], fn_const(g, 2.0f));
}
static void fn_outer_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    fn_nest u = {v[1]};
    df_output pos = df_greater(g, v[1], fn_const(g, 0.0f)), r;
    df_if(g, pos, 1, fn_nest_then, fn_nest_else, &u, &r);
    next[0] = df_add(g, v[0], fn_const(g, 1.0f));
    next[1] = r;
}
DF_TEST(functions_nested_functional_control_flow_and_its_gradient) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "loop_fn", 1, &t, 1, fn_loop_fn, NULL), DF_OK);
    CHECK(fn_count_ops(df_graph_function_body(g, "loop_fn"), "StatelessWhile") == 1);
    CHECK(fn_count_ops(df_graph_function_body(g, "loop_fn"), "Enter") == 0);
    df_output x = fn_placeholder(g, "x", DF_FLOAT, 0, NULL), r[2];
    df_output init[2] = {fn_const(g, 0.0f), x};
    CHECK_EQ_INT(df_while(g, 2, init, fn_outer_cond, fn_outer_body, NULL, NULL, r), DF_OK);
    df_output dx;
    CHECK_EQ_INT(df_gradients(g, 1, &r[1], NULL, 1, &x, &dx), DF_OK);
    CHECK_EQ_INT(fn_count_ops(g, "StatelessWhile") + fn_count_ops(g, "StatelessIf") + fn_count_ops(g, "PartitionedCall"), 0);
    float out[2];
    df_status st;
    for (int sign = -1; sign <= 1; sign += 2) {
        df_tensor *xv = fn_scalar(0.8f * (float)sign);
        df_output fetch[2] = {r[1], dx};
        CHECK(fn_run(g, 1, 1, &x, &xv, 2, fetch, out, &st));
        CHECK_OK(&st);
        /* x > 0: each of the 2 outer passes multiplies by 1.5^3; x < 0: negated, then * 1.5^3 */
        double want = sign > 0 ? 0.8 * pow(1.5, 6) : 0.8 * pow(1.5, 3), dwant = sign > 0 ? pow(1.5, 6) : -pow(1.5, 3);
        CHECK_NEAR(out[0], want, 1e-4);
        CHECK_NEAR(out[1], dwant, 1e-4);
        df_tensor_release(xv);
    }
    df_graph_free(g);
}

/* A stateful body whose effect nothing reads still runs once per call. */
typedef struct fn_state { df_output var; } fn_state;
static void fn_bump(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const fn_state *u = (const fn_state *)user;
    df_assign_add(fg, u->var, args[0]);
    outs[0] = df_identity(fg, args[0]);
}
DF_TEST(functions_side_effects_run_once_per_call) {
    df_graph *g = df_graph_new();
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, v, fn_const(g, 0.0f));
    fn_state u = {v};
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "bump", 1, &t, 1, fn_bump, &u), DF_OK);
    df_output one = fn_const(g, 1.0f), r1, r2;
    CHECK_EQ_INT(df_call(g, "bump", 1, &one, 1, &r1), DF_OK);
    CHECK(!strcmp(df_node_op(r1.node), "StatefulPartitionedCall"));
    CHECK_EQ_INT(df_call(g, "bump", 1, &r1, 1, &r2), DF_OK);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st), DF_OK);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &r2.node, 1, &st), DF_OK);
    df_tensor *val = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &v, &val, 1, NULL, 0, &st), DF_OK);
    if (val) CHECK_NEAR(*(const float *)df_tensor_data(val), 2.0, 0);
    df_tensor_release(val);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(functions_vectors_and_while_shapes) {
    df_graph *g = df_graph_new();
    int64_t d = 3;
    df_output x = fn_placeholder(g, "x", DF_FLOAT, 1, &d);
    fn_cf u = {x, fn_const(g, 0.5f), NULL};
    df_output init[2] = {fn_const(g, 0.0f), x}, l[2];
    CHECK_EQ_INT(df_while(g, 2, init, fn_wcond, fn_wbody, &u, NULL, l), DF_OK);
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(l[1], dims), 1);
    CHECK_EQ_INT(dims[0], 3);
    float xv[3] = {1, 2, 3};
    df_tensor *t = fn_vec(3, xv), *res = NULL;
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_EQ_INT(df_session_run(s, &x, &t, 1, &l[1], &res, 1, NULL, 0, &st), DF_OK);
    if (res) {
        const float *r = (const float *)df_tensor_data(res);
        for (int i = 0; i < 3; i++) {
            double v = xv[i];                    /* 5 passes of v = v*0.5 + x */
            for (int k = 0; k < 5; k++) v = v * 0.5 + xv[i];
            CHECK_NEAR(r[i], v, 1e-5);
        }
    }
    df_tensor_release(res);
    df_tensor_release(t);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- calls run as calls: the inline pass off ---- */
static df_output fn_iloop_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], fn_const(g, 3.0f));
}
static void fn_iloop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], fn_const(g, 1.0f));
    df_call(g, "outer", 1, &v[1], 1, &next[1]);          /* a call in every iteration */
}
static int fn_run_passes(df_graph *g, int n_cpu, int disable, df_node *init, df_output x, df_tensor *xv, int n_fetch,
                         const df_output *fetches, float *out, int *n_calls, int *n_stateful_calls) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = n_cpu;
    o.disable_passes = disable;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) return 0;
    df_tensor *res[8] = {0};
    df_code c = df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st);
    if (c == DF_OK) c = df_session_run(s, &x, &xv, 1, fetches, res, n_fetch, NULL, 0, &st);
    CHECK_MSG(c == DF_OK, "%s: %s", df_code_name(st.code), st.message);
    for (int i = 0; i < n_fetch; i++) {
        if (c == DF_OK) out[i] = *(const float *)df_tensor_data(res[i]);
        df_tensor_release(res[i]);
    }
    *n_calls = *n_stateful_calls = 0;
    for (int p = 0; p < df_session_num_partitions(s); p++) {
        const df_graph *pg = df_session_partition(s, p, NULL);
        *n_calls += fn_count_ops(pg, "PartitionedCall");
        *n_stateful_calls += fn_count_ops(pg, "StatefulPartitionedCall");
    }
    df_session_free(s);
    return c == DF_OK;
}
DF_TEST(functions_calls_run_as_calls_with_inlining_off) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    fn_outer_ctx u = {fn_const(g, 0.5f)};
    CHECK_EQ_INT(df_function_define(g, "inner", 1, &t, 1, fn_inner, NULL), DF_OK);
    CHECK_EQ_INT(df_function_define(g, "outer", 1, &t, 1, fn_outer, &u), DF_OK);
    CHECK_EQ_INT(df_function_define(g, "loop_fn", 1, &t, 1, fn_loop_fn, NULL), DF_OK);   /* holds a While */
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    fn_state su = {v};
    CHECK_EQ_INT(df_function_define(g, "bump", 1, &t, 1, fn_bump, &su), DF_OK);
    df_output x = fn_placeholder(g, "x", DF_FLOAT, 0, NULL), y, z, w, loop[2];
    CHECK_EQ_INT(df_call(g, "outer", 1, &x, 1, &y), DF_OK);
    CHECK_EQ_INT(df_call(g, "loop_fn", 1, &x, 1, &z), DF_OK);
    df_output init[2] = {fn_const(g, 0.0f), x};
    CHECK_EQ_INT(df_while_loop(g, 2, init, fn_iloop_cond, fn_iloop_body, NULL, NULL, loop), DF_OK);
    CHECK_EQ_INT(df_call(g, "bump", 1, &y, 1, &w), DF_OK);                                  /* stateful */
    df_node *vinit = df_assign(g, v, fn_const(g, 0.0f));
    df_tensor *xv = fn_scalar(1.5f);
    df_output fetch[4] = {y, z, loop[1], w};
    float as_calls[2][4], inlined[4];
    int calls = 0, stateful = 0;
    for (int n_cpu = 1; n_cpu <= 2; n_cpu++) {
        CHECK(fn_run_passes(g, n_cpu, DF_PASS_INLINE, vinit, x, xv, 4, fetch, as_calls[n_cpu - 1], &calls, &stateful));
        CHECK_MSG(calls >= 3, "%d calls left in the run's graph on %d CPUs", calls, n_cpu);   /* outer, loop_fn, the loop's */
        CHECK_EQ_INT(stateful, 0);                       /* a stateful call is inlined all the same */
        CHECK(fn_count_ops(g, "PartitionedCall") == 3);  /* the caller's graph keeps its calls */
    }
    CHECK(fn_run_passes(g, 1, DF_PASS_ALL, vinit, x, xv, 4, fetch, as_calls[1], &calls, &stateful));   /* as built */
    CHECK(calls >= 3);
    CHECK(fn_run_passes(g, 2, 0, vinit, x, xv, 4, fetch, inlined, &calls, &stateful));
    CHECK_EQ_INT(calls, 0);
    CHECK_EQ_INT(fn_count_ops(g, "PartitionedCall"), 0);   /* now inlined in place */
    double loop_want = 1.5;
    for (int i = 0; i < 3; i++) loop_want = loop_want * 4 + 0.5;
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(as_calls[0][i] == inlined[i] && as_calls[1][i] == inlined[i], "fetch %d: %g and %g as calls, %g inlined",
                  i, (double)as_calls[0][i], (double)as_calls[1][i], (double)inlined[i]);
    }
    CHECK_NEAR(inlined[0], 6.5, 1e-6);
    CHECK_NEAR(inlined[1], 1.5 * pow(1.5, 3), 1e-4);
    CHECK_NEAR(inlined[2], loop_want, 1e-3);
    CHECK_NEAR(inlined[3], 6.5, 1e-6);
    df_tensor_release(xv);
    df_graph_free(g);
}

/* A call left as a call whose function fails: the status names the call and the function. */
static void fn_fails(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    (void)user;
    int64_t d = 4;
    outs[0] = df_reshape(fg, args[0], 1, &d);            /* a 3-vector cannot be reshaped to 4 */
}
DF_TEST(functions_a_failing_call_run_as_a_call_gives_its_status) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "fails", 1, &t, 1, fn_fails, NULL), DF_OK);
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL), y;
    CHECK_EQ_INT(df_call(g, "fails", 1, &x, 1, &y), DF_OK);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.disable_passes = DF_PASS_INLINE;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    float v[3] = {1, 2, 3};
    df_tensor *xv = fn_vec(3, v), *out = NULL;
    df_session_run(s, &x, &xv, 1, &y, &out, 1, NULL, 0, &st);
    CHECK_EQ_INT(st.code, DF_INVALID_ARGUMENT);
    CHECK_MSG(strstr(st.message, "fails") != NULL, "%s", st.message);
    CHECK(out == NULL);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);
}

/* Export writes no function library: a graph with calls is refused, its lowered form exports and
   imports to the same result. */
DF_TEST(functions_export_needs_lowering_first) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "inner", 1, &t, 1, fn_inner, NULL), DF_OK);
    df_output x = fn_placeholder(g, "x", DF_FLOAT, 0, NULL), y;
    CHECK_EQ_INT(df_call(g, "inner", 1, &x, 1, &y), DF_OK);
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ_INT(df_graph_export_graphdef(g, &data, &len), DF_UNIMPLEMENTED);
    CHECK(data == NULL);
    df_status st;
    CHECK_EQ_INT(df_graph_lower_functions(g, &st), DF_OK);
    CHECK_EQ_INT(df_graph_export_graphdef(g, &data, &len), DF_OK);
    df_graph *h = data ? df_graph_import_graphdef(data, len, &st) : NULL;
    free(data);
    CHECK(h != NULL);
    if (h) {
        df_output hx = {df_graph_find(h, "x"), 0}, hy = {df_graph_find(h, df_node_name(y.node)), y.index};
        df_tensor *xv = fn_scalar(1.25f);
        float out[1];
        CHECK(hx.node && hy.node && fn_run(h, 1, 1, &hx, &xv, 1, &hy, out, &st));
        CHECK_NEAR(out[0], 2.5, 1e-6);
        df_tensor_release(xv);
        df_graph_free(h);
    }
    df_graph_free(g);
}
