/* Optimizer ops and df_minimize: one step of each against hand-computed values; training with
   several threads is reproducible (every update waits for every gradient). */
#include "harness.h"

/* loss = sum((w - t)^2) over a vector w, one step of the optimizer; returns w after `steps`. */
static void run_steps(const df_optimizer *opt, int steps, int threads, double *w_out, int n) {
    df_graph *g = df_graph_new();
    int64_t d = n;
    df_output w = df_variable(g, "w", DF_DOUBLE, 1, &d);
    df_tensor *w0 = df_tensor_new(DF_DOUBLE, 1, &d, NULL), *t0 = df_tensor_new(DF_DOUBLE, 1, &d, NULL);
    for (int i = 0; i < n; i++) { ((double *)df_tensor_data(w0))[i] = 0.5 + i; ((double *)df_tensor_data(t0))[i] = 2.0 - 0.25 * i; }
    df_node *init_w = df_assign(g, w, df_const(g, w0));
    df_output loss = df_reduce_sum(g, df_square(g, df_sub(g, w, df_const(g, t0))), 0, NULL, 0);
    df_node *init = NULL, *step = df_minimize(g, loss, 1, &w, opt, &init);
    CHECK_OK(df_graph_status(g));
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &so, &st);
    if (s && step && init) {
        df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init_w, 1, &st);
        df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st);
        for (int k = 0; k < steps && !st.code; k++) df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &step, 1, &st);
        CHECK_OK(&st);
        df_tensor *wv = NULL;
        df_session_run(s, NULL, NULL, 0, &w, &wv, 1, NULL, 0, &st);
        for (int i = 0; i < n; i++) w_out[i] = wv ? ((double *)df_tensor_data(wv))[i] : NAN;
        df_tensor_release(wv);
    }
    df_session_free(s);
    df_tensor_release(w0); df_tensor_release(t0);
    df_graph_free(g);
}

DF_TEST(optim_sgd_momentum_adam_by_hand) {
    double w[3];
    df_optimizer o;
    memset(&o, 0, sizeof o);
    /* SGD: w -= lr * 2 (w - t) */
    o.kind = DF_OPT_SGD; o.learning_rate = 0.1;
    run_steps(&o, 1, 1, w, 3);
    for (int i = 0; i < 3; i++) {
        double w0 = 0.5 + i, t = 2.0 - 0.25 * i;
        CHECK_NEAR(w[i], w0 - 0.1 * 2 * (w0 - t), 1e-15);
    }
    /* Momentum, two steps: a = m a + g; w -= lr a */
    o.kind = DF_OPT_MOMENTUM; o.learning_rate = 0.1; o.momentum = 0.5;
    run_steps(&o, 2, 1, w, 3);
    for (int i = 0; i < 3; i++) {
        double x = 0.5 + i, t = 2.0 - 0.25 * i, a = 0;
        for (int k = 0; k < 2; k++) { a = 0.5 * a + 2 * (x - t); x -= 0.1 * a; }
        CHECK_NEAR(w[i], x, 1e-14);
    }
    /* Adam, three steps, TF's formula with bias correction folded into the rate */
    o.kind = DF_OPT_ADAM; o.learning_rate = 0.01; o.beta1 = 0.9; o.beta2 = 0.999; o.epsilon = 1e-8;
    run_steps(&o, 3, 1, w, 3);
    for (int i = 0; i < 3; i++) {
        double x = 0.5 + i, t = 2.0 - 0.25 * i, m = 0, v = 0, b1 = 0.9, b2 = 0.999;
        for (int k = 0; k < 3; k++) {
            double gr = 2 * (x - t);
            m = 0.9 * m + 0.1 * gr; v = 0.999 * v + 0.001 * gr * gr;
            x -= 0.01 * sqrt(1 - b2) / (1 - b1) * m / (sqrt(v) + 1e-8);
            b1 *= 0.9; b2 *= 0.999;
        }
        CHECK_NEAR(w[i], x, 1e-12);
    }
}

/* A two-variable chain where one variable's gradient reads the other: the update of w2 must
   not race with the gradient of w1. Many threads, many steps, same result as one thread. */
DF_TEST(optim_minimize_is_reproducible_with_threads) {
    double a[8], b[8];
    for (int trial = 0; trial < 2; trial++) {
        df_graph *g = df_graph_new();
        int64_t d2[2] = {4, 4};
        df_output w1 = df_variable(g, "w1", DF_DOUBLE, 2, d2), w2 = df_variable(g, "w2", DF_DOUBLE, 2, d2);
        df_tensor *i1 = df_tensor_new(DF_DOUBLE, 2, d2, NULL), *i2 = df_tensor_new(DF_DOUBLE, 2, d2, NULL), *xt = df_tensor_new(DF_DOUBLE, 2, d2, NULL);
        for (int i = 0; i < 16; i++) {
            ((double *)df_tensor_data(i1))[i] = 0.1 * (i % 5) - 0.2;
            ((double *)df_tensor_data(i2))[i] = 0.05 * (i % 7) - 0.1;
            ((double *)df_tensor_data(xt))[i] = 0.3 * (i % 3) - 0.25;
        }
        df_node *inits[2] = {df_assign(g, w1, df_const(g, i1)), df_assign(g, w2, df_const(g, i2))};
        df_output h = df_tanh(g, df_matmul(g, df_const(g, xt), w1, 0, 0));
        df_output loss = df_reduce_sum(g, df_square(g, df_matmul(g, h, w2, 0, 0)), 0, NULL, 0);
        df_output vars[2] = {w1, w2};
        df_optimizer o;
        memset(&o, 0, sizeof o);
        o.kind = DF_OPT_SGD; o.learning_rate = 0.05;
        df_node *oi = NULL, *step = df_minimize(g, loss, 2, vars, &o, &oi);
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.inter_op_threads = trial ? 4 : 1;
        df_status st;
        df_session *s = df_session_new(g, &so, &st);
        df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, inits, 2, &st);
        for (int k = 0; k < 50 && !st.code; k++) df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &step, 1, &st);
        CHECK_OK(&st);
        df_tensor *v[2] = {0};
        df_session_run(s, NULL, NULL, 0, vars, v, 2, NULL, 0, &st);
        for (int i = 0; i < 4; i++) {
            (trial ? b : a)[i] = v[0] ? ((double *)df_tensor_data(v[0]))[i] : NAN;
            (trial ? b : a)[4 + i] = v[1] ? ((double *)df_tensor_data(v[1]))[i] : NAN;
        }
        df_tensor_release(v[0]); df_tensor_release(v[1]);
        df_tensor_release(i1); df_tensor_release(i2); df_tensor_release(xt);
        df_session_free(s);
        df_graph_free(g);
    }
    for (int i = 0; i < 8; i++) CHECK_MSG(a[i] == b[i], "w[%d]: 1 thread %.17g, 4 threads %.17g", i, a[i], b[i]);
}

DF_TEST(optim_bad_arguments) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL);
    df_output loss = df_square(g, x);
    CHECK(df_minimize(g, loss, 1, &x, NULL, NULL) == NULL);     /* x is no variable */
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "not a float variable");
    df_graph_free(g);
    g = df_graph_new();
    df_output v = df_variable(g, "v", DF_DOUBLE, 0, NULL);
    df_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = (df_optimizer_kind)7;
    CHECK(df_minimize(g, df_square(g, v), 1, &v, &o, NULL) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "unknown optimizer");
    df_graph_free(g);
    /* an update on an uninitialised variable is a clear error */
    g = df_graph_new();
    v = df_variable(g, "v", DF_DOUBLE, 0, NULL);
    df_node *step = df_minimize(g, df_square(g, v), 1, &v, NULL, NULL);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &step, 1, &st), DF_FAILED_PRECONDITION);
    CHECK(strstr(st.message, "uninitialized") != NULL);
    df_session_free(s);
    df_graph_free(g);
}

/* The same variable twice in one update (through a shared_name) is refused, never a hang. */
DF_TEST(optim_apply_same_variable_twice_is_refused) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "VariableV2", "v1");
    df_op_set_attr_shape(b, "shape", 0, NULL);
    df_op_set_attr_type(b, "dtype", DF_DOUBLE);
    df_op_set_attr_string(b, "shared_name", "same");
    df_output v1 = {df_op_finish(b), 0};
    b = df_op_new(g, "VariableV2", "v2");
    df_op_set_attr_shape(b, "shape", 0, NULL);
    df_op_set_attr_type(b, "dtype", DF_DOUBLE);
    df_op_set_attr_string(b, "shared_name", "same");
    df_output v2 = {df_op_finish(b), 0};
    df_node *init = df_assign(g, v1, df_scalar_f64(g, 1.0));
    b = df_op_new(g, "ApplyMomentum", "m");
    df_output ins[5] = {v1, v2, df_scalar_f64(g, 0.1), df_scalar_f64(g, 1.0), df_scalar_f64(g, 0.9)};
    for (int i = 0; i < 5; i++) df_op_add_input(b, ins[i]);
    df_node *m = df_op_finish(b);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &m, 1, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "distinct variables") && strstr(st.message, "{{node m}}"));
    df_session_free(s);
    df_graph_free(g);
}

/* UnsortedSegmentSum over integers, and its gradient with ids it drops (negative, too big). */
DF_TEST(optim_segment_sum_integers_and_dropped_ids) {
    df_graph *g = df_graph_new();
    int32_t dv[3] = {5, 7, 11}, iv[3] = {0, 0, 1};
    int64_t d3 = 3;
    df_tensor *tk[3] = {df_tensor_from_data(DF_INT32, 1, &d3, dv, sizeof dv, NULL),
                        df_tensor_from_data(DF_INT32, 1, &d3, iv, sizeof iv, NULL), NULL};
    df_output data = df_const(g, tk[0]), ids = df_const(g, tk[1]);
    df_op_builder *b = df_op_new(g, "UnsortedSegmentSum", NULL);
    df_op_add_input(b, data); df_op_add_input(b, ids); df_op_add_input(b, df_scalar_i32(g, 2));
    df_output s1 = {df_op_finish(b), 0};
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 1, &d3);
    int32_t bad[3] = {0, -1, 5};
    tk[2] = df_tensor_from_data(DF_INT32, 1, &d3, bad, sizeof bad, NULL);
    df_output bids = df_const(g, tk[2]);
    for (int i = 0; i < 3; i++) df_tensor_release(tk[i]);
    b = df_op_new(g, "UnsortedSegmentSum", NULL);
    df_op_add_input(b, df_mul(g, x, x)); df_op_add_input(b, bids); df_op_add_input(b, df_scalar_i32(g, 2));
    df_output s2 = {df_op_finish(b), 0}, dx;
    df_output loss = df_reduce_sum(g, s2, 0, NULL, 0);
    df_gradients(g, 1, &loss, NULL, 1, &x, &dx);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    double xv[3] = {1.5, 2.5, 3.5};
    df_tensor *xt = df_tensor_from_data(DF_DOUBLE, 1, &d3, xv, sizeof xv, &st), *o[2] = {0};
    df_output f[2] = {s1, dx};
    df_session_run(s, &x, &xt, 1, f, o, 2, NULL, 0, &st);
    CHECK_OK(&st);
    if (!st.code) {
        CHECK_EQ_INT(((int32_t *)df_tensor_data(o[0]))[0], 12);
        CHECK_EQ_INT(((int32_t *)df_tensor_data(o[0]))[1], 11);
        CHECK_NEAR(((double *)df_tensor_data(o[1]))[0], 3.0, 0);
        CHECK_NEAR(((double *)df_tensor_data(o[1]))[1], 0.0, 0);
        CHECK_NEAR(((double *)df_tensor_data(o[1]))[2], 0.0, 0);
    }
    df_tensor_release(o[0]); df_tensor_release(o[1]); df_tensor_release(xt);
    df_session_free(s);
    df_graph_free(g);
}

/* Stack and accumulator handles are not interchangeable, and pops from an empty stack fail. */
DF_TEST(optim_state_handles_checked) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "SumAccumulator", "acc");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_output acc = {df_op_finish(b), 0};
    b = df_op_new(g, "StackPopV2", "pop_acc");
    df_op_add_input(b, acc);
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    df_output p1 = {df_op_finish(b), 0};
    b = df_op_new(g, "StackV2", "st");
    df_op_add_input(b, df_scalar_i32(g, -1));
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    df_output st_h = {df_op_finish(b), 0};
    b = df_op_new(g, "StackPopV2", "pop_empty");
    df_op_add_input(b, st_h);
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    df_output p2 = {df_op_finish(b), 0};
    b = df_op_new(g, "SumAccumulatorRead", "read_stack");
    df_op_add_input(b, st_h);
    df_op_add_input(b, df_scalar_f32(g, 0));
    df_output p3 = {df_op_finish(b), 0};
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *o = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &p1, &o, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "Not a stack handle") && strstr(st.message, "{{node pop_acc}}"));
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &p2, &o, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "Stack is empty") != NULL);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &p3, &o, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "Not an accumulator handle") != NULL);
    df_session_free(s);
    df_graph_free(g);
}
