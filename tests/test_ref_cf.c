/* Variables inside control flow, as TensorFlow 1 runs them: a variable used in a while body or
   a cond branch enters as its reference (RefEnter, RefSwitch), so AssignAdd, Assign, AssignSub
   and ApplyGradientDescent there update it, once per iteration (once when the branch is taken),
   and readers read it when they run. Expected numbers marked "TF" come from running the same
   graphs with tf.compat.v1 (TensorFlow 2.21, reference variables). Also: the Ref ops built by
   hand (RefIdentity, a reference as a loop variable), their errors, two CPU devices (the
   reference never crosses a Send/Recv), and gradients through RefEnter and RefSwitch. */
#include "harness.h"

static df_session *ref_session(df_graph *g, int devices, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = devices;
    o.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}
/* Runs the targets; returns 1 when the run succeeded. */
static int run_targets(df_session *s, df_node *const *targets, int n) {
    df_status st;
    df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, n, &st);
    CHECK_OK(&st);
    return st.code == DF_OK;
}
/* The first element of fetch f as a double (NAN when the run fails). */
static double fetch1(df_session *s, df_output f, const df_output *feed, df_tensor *feed_value) {
    df_status st;
    df_tensor *v = NULL;
    double r = NAN;
    df_session_run(s, feed, feed ? &feed_value : NULL, feed ? 1 : 0, &f, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (st.code == DF_OK && v) {
        switch (df_tensor_dtype(v)) {
        case DF_FLOAT: r = ((const float *)df_tensor_data(v))[0]; break;
        case DF_DOUBLE: r = ((const double *)df_tensor_data(v))[0]; break;
        case DF_INT32: r = ((const int32_t *)df_tensor_data(v))[0]; break;
        default: break;
        }
    }
    df_tensor_release(v);
    return r;
}
/* Fetches a and b (float scalars) in one run and checks them exactly. */
static void check_pair(df_session *s, df_output a, df_output b, double want_a, double want_b) {
    df_tensor *vals[2] = {NULL, NULL};
    df_output f[2] = {a, b};
    df_status st;
    df_session_run(s, NULL, NULL, 0, f, vals, 2, NULL, 0, &st);
    CHECK_OK(&st);
    if (st.code == DF_OK) {
        CHECK_NEAR(((float *)df_tensor_data(vals[0]))[0], want_a, 0);
        CHECK_NEAR(((float *)df_tensor_data(vals[1]))[0], want_b, 0);
    }
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
}
static int count_op(const df_graph *g, const char *op) {
    int n = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) n += !strcmp(df_node_op(df_graph_node_at(g, i)), op);
    return n;
}
static df_output lt_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], df_scalar_i32(g, *(const int32_t *)user));
}

/* ---- AssignAdd in a while body, N times: the counter is N after, for parallel_iterations 1 and
   10. Its value is a constant made outside the loop, so AssignAdd reads loop invariants only:
   TF #26371 ran such an op once more, in the dead last iteration (TF's fix, and ours: a control
   edge from the pivot). ---- */
typedef struct { int32_t n; df_output var, delta; int op; } count_user;   /* (n first: lt_cond reads it) */
static void count_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    count_user *u = (count_user *)user;
    df_node *a = u->op == 0 ? df_assign_add(g, u->var, u->delta) : df_assign_sub(g, u->var, u->delta);
    df_graph_push_control_deps(g, &a, 1);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    df_graph_pop_control_deps(g);
}
DF_TEST(ref_cf_assign_add_in_while_runs_n_times) {
    static const int32_t ns[] = {0, 1, 5, 17};
    for (int par = 1; par <= 10; par += 9)
        for (int op = 0; op < 2; op++)
            for (int threads = 1; threads <= 4; threads += 3)
                for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {   /* (n is a constant of the graph) */
                    df_graph *g = df_graph_new();
                    count_user u;
                    u.var = df_variable(g, "counter", DF_FLOAT, 0, NULL);
                    u.delta = df_scalar_f32(g, 1.0f);
                    u.op = op;
                    u.n = ns[k];
                    df_node *init = df_assign(g, u.var, df_scalar_f32(g, 100.0f));
                    df_output i0 = df_scalar_i32(g, 0), out;
                    df_while_options o;
                    memset(&o, 0, sizeof o);
                    o.parallel_iterations = par;
                    CHECK_EQ_INT(df_while_loop(g, 1, &i0, lt_cond, count_body, &u.n, &o, &out), DF_OK);
                    df_output read = df_identity(g, u.var);
                    CHECK_OK(df_graph_status(g));
                    CHECK_EQ_INT(count_op(g, "RefEnter"), 1);      /* the variable enters as its reference */
                    df_node *re = df_graph_find(g, "while/RefEnter");
                    int is_const = 0;
                    int64_t pi = 0;
                    CHECK(re && df_node_attr_bool(re, "is_constant", &is_const) && is_const);
                    CHECK(re && df_node_attr_int(re, "parallel_iterations", &pi) && pi == par);
                    df_session *s = ref_session(g, 1, threads);
                    if (s && run_targets(s, &init, 1))
                        for (int rep = 1; rep <= 2; rep++) {     /* each run adds n again */
                            CHECK_NEAR(fetch1(s, out, NULL, NULL), ns[k], 0);
                            double want = 100.0 + (op == 0 ? 1 : -1) * rep * ns[k];
                            double got = fetch1(s, read, NULL, NULL);
                            CHECK_MSG(got == want, "par %d op %d threads %d n %d run %d: counter %g, want %g",
                                      par, op, threads, ns[k], rep, got, want);
                        }
                    df_session_free(s);
                    df_graph_free(g);
                }
}

/* ---- Reads of the variable in the body see the updates in order (TF: out 12, v 7). The
   AssignAdd waits for the previous iteration's sum, the read for the AssignAdd. ---- */
typedef struct { int32_t n; df_output var; } var_user;
static void ordered_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    var_user *u = (var_user *)user;
    df_node *dep = v[1].node;
    df_graph_push_control_deps(g, &dep, 1);
    df_node *a = df_assign_add(g, u->var, df_scalar_f32(g, 1.0f));
    df_graph_pop_control_deps(g);
    df_graph_push_control_deps(g, &a, 1);
    next[1] = df_add(g, df_mul(g, v[1], df_scalar_f32(g, 0.5f)), u->var);   /* reads v when it runs */
    df_graph_pop_control_deps(g);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}
static void ordered_graph(df_graph *g, int par, var_user *u, df_node **init, df_output *out, df_output *read) {
    u->n = 6;
    u->var = df_variable(g, "v", DF_FLOAT, 0, NULL);
    *init = df_assign(g, u->var, df_scalar_f32(g, 1.0f));
    df_output in[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 0.0f)}, r[2];
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = par;
    df_graph_push_name_scope(g, "loop");
    CHECK_EQ_INT(df_while_loop(g, 2, in, lt_cond, ordered_body, u, &o, r), DF_OK);
    df_graph_pop_name_scope(g);
    *out = r[1];
    df_node *after = r[1].node;
    df_graph_push_control_deps(g, &after, 1);
    *read = df_identity(g, u->var);
    df_graph_pop_control_deps(g);
}
DF_TEST(ref_cf_reads_in_body_see_updates_in_order) {
    for (int par = 1; par <= 10; par += 9)
        for (int threads = 1; threads <= 4; threads += 3) {
            df_graph *g = df_graph_new();
            var_user u;
            df_node *init;
            df_output out, read;
            ordered_graph(g, par, &u, &init, &out, &read);
            CHECK_OK(df_graph_status(g));
            df_session *s = ref_session(g, 1, threads);
            if (s && run_targets(s, &init, 1)) {
                check_pair(s, out, read, 12.0, 7.0);          /* TF: 12, 7 */
                check_pair(s, out, read, 23.8125, 13.0);      /* a second run from v = 7 */
            }
            df_session_free(s);
            df_graph_free(g);
        }
}

/* ---- An assign in each branch of a cond: only the taken branch's runs. ---- */
typedef struct { df_output v, w; } two_vars;
static void assign_then(df_graph *g, void *user, df_output *outs) {
    two_vars *u = (two_vars *)user;
    outs[0] = (df_output){df_assign(g, u->v, df_scalar_f32(g, 1.0f)), 0};
}
static void assign_else(df_graph *g, void *user, df_output *outs) {
    two_vars *u = (two_vars *)user;
    df_node *a = df_assign_add(g, u->w, df_scalar_f32(g, 100.0f));
    df_graph_push_control_deps(g, &a, 1);
    outs[0] = (df_output){df_assign_sub(g, u->v, df_scalar_f32(g, 2.0f)), 0};
    df_graph_pop_control_deps(g);
}
DF_TEST(ref_cf_assign_in_each_cond_branch) {
    df_graph *g = df_graph_new();
    two_vars u;
    u.v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    u.w = df_variable(g, "w", DF_FLOAT, 0, NULL);
    df_node *inits[2] = {df_assign(g, u.v, df_scalar_f32(g, 5.0f)), df_assign(g, u.w, df_scalar_f32(g, 0.0f))};
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), out;
    CHECK_EQ_INT(df_cond(g, p, 1, assign_then, assign_else, &u, &out), DF_OK);
    CHECK_EQ_INT(count_op(g, "RefSwitch"), 3);       /* v in each branch, w in the else branch */
    df_output rv = df_identity(g, u.v), rw = df_identity(g, u.w);     /* read in runs of their own */
    CHECK_OK(df_graph_status(g));
    df_session *s = ref_session(g, 1, 2);
    if (s && run_targets(s, inits, 2)) {
        /* else: v 5 -> 3, w += 100; then: v = 1; else: v -1, w 200; else: v -3, w 300 */
        static const int preds[] = {0, 1, 0, 0};
        static const double want_out[] = {3, 1, -1, -3}, want_w[] = {100, 100, 200, 300};
        for (int k = 0; k < 4; k++) {
            df_tensor *pv = df_tensor_scalar_bool(preds[k]);
            CHECK_NEAR(fetch1(s, out, &p, pv), want_out[k], 0);
            CHECK_NEAR(fetch1(s, rv, NULL, NULL), want_out[k], 0);
            CHECK_NEAR(fetch1(s, rw, NULL, NULL), want_w[k], 0);
            df_tensor_release(pv);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- Nested loops (TF: tot 28.75, v 12): the inner body adds 1 to v and its value to acc. ---- */
static void inner_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    var_user *u = (var_user *)user;
    df_node *dep = v[1].node;
    df_graph_push_control_deps(g, &dep, 1);
    df_node *a = df_assign_add(g, u->var, df_scalar_f32(g, 1.0f));
    df_graph_pop_control_deps(g);
    df_graph_push_control_deps(g, &a, 1);
    next[1] = df_add(g, v[1], u->var);
    df_graph_pop_control_deps(g);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}
static df_output inner_lt4(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 4));
}
static void inner_body_lt4(df_graph *g, void *user, const df_output *v, df_output *next) { inner_body(g, user, v, next); }
static void outer_body_lt4(df_graph *g, void *user, const df_output *v, df_output *next) {
    df_output in[2] = {df_scalar_i32(g, 0), v[1]}, r[2];
    df_while_loop(g, 2, in, inner_lt4, inner_body_lt4, user, NULL, r);
    next[1] = df_mul(g, r[1], df_scalar_f32(g, 0.5f));
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}
static df_output outer_lt3(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 3));
}
DF_TEST(ref_cf_nested_loops) {
    for (int threads = 1; threads <= 4; threads += 3) {
        df_graph *g = df_graph_new();
        var_user u;
        u.var = df_variable(g, "v", DF_FLOAT, 0, NULL);
        df_node *init = df_assign(g, u.var, df_scalar_f32(g, 0.0f));
        df_output in[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 0.0f)}, r[2];
        CHECK_EQ_INT(df_while_loop(g, 2, in, outer_lt3, outer_body_lt4, &u, NULL, r), DF_OK);
        df_node *after = r[1].node;
        df_graph_push_control_deps(g, &after, 1);
        df_output read = df_identity(g, u.var);
        df_graph_pop_control_deps(g);
        CHECK_OK(df_graph_status(g));
        CHECK_EQ_INT(count_op(g, "RefEnter"), 2);        /* into the outer frame, then the inner */
        df_session *s = ref_session(g, 1, threads);
        if (s && run_targets(s, &init, 1)) {
            check_pair(s, r[1], read, 28.75, 12.0);     /* TF: 28.75, 12 */
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- A cond inside a loop (TF: out 52.21875, v 33): even iterations add 1, odd ones 10. ---- */
static void add1_branch(df_graph *g, void *user, df_output *outs) {
    outs[0] = (df_output){df_assign_add(g, ((var_user *)user)->var, df_scalar_f32(g, 1.0f)), 0};
}
static void add10_branch(df_graph *g, void *user, df_output *outs) {
    outs[0] = (df_output){df_assign_add(g, ((var_user *)user)->var, df_scalar_f32(g, 10.0f)), 0};
}
static void cond_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    df_node *dep = v[1].node;
    df_output r;
    df_graph_push_control_deps(g, &dep, 1);
    df_output even = df_equal(g, df_floor_mod_i(g, v[0], df_scalar_i32(g, 2)), df_scalar_i32(g, 0));
    df_cond(g, even, 1, add1_branch, add10_branch, user, &r);
    df_graph_pop_control_deps(g);
    next[1] = df_add(g, df_mul(g, v[1], df_scalar_f32(g, 0.5f)), r);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}
DF_TEST(ref_cf_cond_inside_loop) {
    for (int threads = 1; threads <= 4; threads += 3) {
        df_graph *g = df_graph_new();
        var_user u;
        u.n = 6;
        u.var = df_variable(g, "v", DF_FLOAT, 0, NULL);
        df_node *init = df_assign(g, u.var, df_scalar_f32(g, 0.0f));
        df_output in[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 0.0f)}, r[2];
        CHECK_EQ_INT(df_while_loop(g, 2, in, lt_cond, cond_body, &u, NULL, r), DF_OK);
        df_node *after = r[1].node;
        df_graph_push_control_deps(g, &after, 1);
        df_output read = df_identity(g, u.var);
        df_graph_pop_control_deps(g);
        CHECK_OK(df_graph_status(g));
        CHECK_EQ_INT(count_op(g, "RefSwitch"), 2);       /* the loop's RefEnter switched into each branch */
        df_session *s = ref_session(g, 1, threads);
        if (s && run_targets(s, &init, 1)) {
            check_pair(s, r[1], read, 52.21875, 33.0);  /* TF: 52.21875, 33 */
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- ApplyGradientDescent in a loop body with a constant delta: v -= 0.5 * 2 per iteration. ---- */
static void apply_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    var_user *u = (var_user *)user;
    df_op_builder *b = df_op_new(g, "ApplyGradientDescent", NULL);
    df_op_add_input(b, u->var);
    df_op_add_input(b, df_scalar_f64(g, 0.5));
    df_op_add_input(b, df_scalar_f64(g, 2.0));
    df_node *a = df_op_finish(b);
    df_graph_push_control_deps(g, &a, 1);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    df_graph_pop_control_deps(g);
}
DF_TEST(ref_cf_apply_gradient_descent_in_loop) {
    for (int par = 1; par <= 10; par += 9) {
        df_graph *g = df_graph_new();
        var_user u;
        u.n = 4;
        u.var = df_variable(g, "v", DF_DOUBLE, 0, NULL);
        df_node *init = df_assign(g, u.var, df_scalar_f64(g, 10.0));
        df_output i0 = df_scalar_i32(g, 0), r;
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = par;
        CHECK_EQ_INT(df_while_loop(g, 1, &i0, lt_cond, apply_body, &u, &o, &r), DF_OK);
        df_node *after = r.node;
        df_graph_push_control_deps(g, &after, 1);
        df_output read = df_identity(g, u.var);
        df_graph_pop_control_deps(g);
        CHECK_OK(df_graph_status(g));
        df_session *s = ref_session(g, 1, 2);
        if (s && run_targets(s, &init, 1)) {
            CHECK_NEAR(fetch1(s, read, NULL, NULL), 6.0, 0);
            CHECK_NEAR(fetch1(s, read, NULL, NULL), 2.0, 0);         /* a second run: 4 more */
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- Two CPU devices: the variable on CPU:0, the loop on CPU:1. The RefEnter and AssignAdd
   stay with the variable; the body's read on CPU:1 receives the value; no Ref input anywhere
   comes from a Recv. ---- */
static int ref_input_from_recv(const df_graph *p) {
    static const char *const ref_ops[] = {"Assign", "AssignAdd", "AssignSub", "ApplyGradientDescent", "RefEnter",
                                          "RefSwitch", "RefMerge", "RefExit", "RefNextIteration", "RefIdentity"};
    for (int i = 0; i < df_graph_num_nodes(p); i++) {
        df_node *n = df_graph_node_at(p, i);
        for (size_t k = 0; k < sizeof ref_ops / sizeof *ref_ops; k++) {
            if (strcmp(df_node_op(n), ref_ops[k]) || df_node_num_inputs(n) < 1) continue;
            const char *src = df_node_op(df_node_input(n, 0).node);
            if (strstr(src, "Recv")) return 1;
        }
    }
    return 0;
}
DF_TEST(ref_cf_two_devices_variable_on_cpu0_loop_on_cpu1) {
    for (int mode = 0; mode < 4; mode++) {      /* bit 0: two threads; bit 1: float32 crosses as bfloat16 */
        int threads = 1 + (mode & 1);
        df_graph *g = df_graph_new();
        var_user u;
        df_node *init;
        df_output out, read;
        df_graph_push_device(g, "/cpu:0");
        u.var = df_variable(g, "v", DF_FLOAT, 0, NULL);
        init = df_assign(g, u.var, df_scalar_f32(g, 1.0f));
        df_graph_pop_device(g);
        {
            df_output in[2], r[2];
            u.n = 6;
            df_graph_push_device(g, "/cpu:1");
            in[0] = df_scalar_i32(g, 0);
            in[1] = df_scalar_f32(g, 0.0f);
            df_graph_push_name_scope(g, "loop");
            CHECK_EQ_INT(df_while_loop(g, 2, in, lt_cond, ordered_body, &u, NULL, r), DF_OK);
            df_graph_pop_name_scope(g);
            out = r[1];
            df_node *after = r[1].node;
            df_graph_push_control_deps(g, &after, 1);
            read = df_identity(g, u.var);
            df_graph_pop_control_deps(g);
            df_graph_pop_device(g);
        }
        CHECK_OK(df_graph_status(g));
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.num_cpu_devices = 2;
        so.inter_op_threads = threads;
        so.compress_transfers = mode >> 1;       /* (the values here are exact in bfloat16) */
        df_status sst;
        df_session *s = df_session_new(g, &so, &sst);
        CHECK_OK(&sst);
        if (s && run_targets(s, &init, 1)) {
            check_pair(s, out, read, 12.0, 7.0);              /* TF: 12, 7 */
            CHECK_EQ_INT(df_session_num_partitions(s), 2);
            int p_var = -1, p_enter = -1, p_assign = -1, p_add = -1;
            for (int i = 0; i < df_session_num_partitions(s); i++) {
                const char *dev = "";
                const df_graph *p = df_session_partition(s, i, &dev);
                CHECK_MSG(!ref_input_from_recv(p), "a reference arrives through a Recv on %s", dev);
                if (df_graph_find(p, "v")) p_var = i;
                if (df_graph_find(p, "loop/while/RefEnter")) p_enter = i;
                if (df_graph_find(p, "loop/while/AssignAdd")) p_assign = i;
                if (df_graph_find(p, "loop/while/AddV2")) p_add = i;
                if (strstr(dev, "CPU:1")) CHECK_EQ_INT(count_op(p, "RefEnter"), 0);
            }
            CHECK(p_var >= 0);
            CHECK_EQ_INT(p_enter, p_var);
            CHECK_EQ_INT(p_assign, p_var);
            CHECK_MSG(p_add >= 0 && p_add != p_var, "the body's read should run on CPU:1 (partition %d, v's %d)", p_add, p_var);
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- RefIdentity passes the reference: an AssignAdd through it updates the variable; a read
   through it reads the variable when the read runs. ---- */
DF_TEST(ref_cf_ref_identity) {
    df_graph *g = df_graph_new();
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, v, df_scalar_f32(g, 2.0f));
    df_op_builder *b = df_op_new(g, "RefIdentity", "rid");
    df_op_add_input(b, v);
    df_node *rid = df_op_finish(b);
    df_node *add = df_assign_add(g, (df_output){rid, 0}, df_scalar_f32(g, 3.0f));
    df_graph_push_control_deps(g, &add, 1);
    df_output read = df_identity(g, (df_output){rid, 0});
    df_graph_pop_control_deps(g);
    CHECK_OK(df_graph_status(g));
    df_session *s = ref_session(g, 1, 1);
    if (s && run_targets(s, &init, 1)) {
        CHECK_NEAR(fetch1(s, read, NULL, NULL), 5.0, 0);
        CHECK_NEAR(fetch1(s, read, NULL, NULL), 8.0, 0);
        CHECK_NEAR(fetch1(s, v, NULL, NULL), 8.0, 0);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- A reference as a loop variable, built by hand as a TF1 graph holds it: RefEnter,
   RefMerge, RefSwitch, RefIdentity, RefNextIteration, RefExit; AssignAdd in the body. ---- */
static df_node *op2(df_graph *g, const char *op, const char *name, const df_output *in, int n) {
    df_op_builder *b = df_op_new(g, op, name);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    return df_op_finish(b);
}
DF_TEST(ref_cf_reference_loop_variable_by_hand) {
    for (int threads = 1; threads <= 4; threads += 3) {
        df_graph *g = df_graph_new();
        df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
        df_node *init = df_assign(g, v, df_scalar_f32(g, 0.0f));
        df_op_builder *b = df_op_new(g, "RefEnter", "L/v_enter");
        df_op_add_input(b, v);
        df_op_set_attr_string(b, "frame_name", "L");
        df_node *venter = df_op_finish(b);
        b = df_op_new(g, "Enter", "L/i_enter");
        df_op_add_input(b, df_scalar_i32(g, 0));
        df_op_set_attr_string(b, "frame_name", "L");
        df_node *ienter = df_op_finish(b);
        b = df_op_new(g, "Enter", "L/limit");
        df_op_add_input(b, df_scalar_i32(g, 4));
        df_op_set_attr_string(b, "frame_name", "L");
        df_op_set_attr_bool(b, "is_constant", 1);
        df_node *limit = df_op_finish(b);
        df_output vtwo[2] = {{venter, 0}, {venter, 0}}, itwo[2] = {{ienter, 0}, {ienter, 0}};
        b = df_op_new(g, "RefMerge", "L/v_merge");
        df_op_add_input_list(b, vtwo, 2);
        df_node *vmerge = df_op_finish(b);
        b = df_op_new(g, "Merge", "L/i_merge");
        df_op_add_input_list(b, itwo, 2);
        df_node *imerge = df_op_finish(b);
        df_node *less = op2(g, "Less", "L/less", (df_output[]){{imerge, 0}, {limit, 0}}, 2);
        df_node *lc = op2(g, "LoopCond", "L/cond", (df_output[]){{less, 0}}, 1);
        df_node *vsw = op2(g, "RefSwitch", "L/v_switch", (df_output[]){{vmerge, 0}, {lc, 0}}, 2);
        df_node *isw = op2(g, "Switch", "L/i_switch", (df_output[]){{imerge, 0}, {lc, 0}}, 2);
        df_node *vbody = op2(g, "RefIdentity", "L/v_body", (df_output[]){{vsw, 1}}, 1);
        df_node *ibody = op2(g, "Identity", "L/i_body", (df_output[]){{isw, 1}}, 1);
        b = df_op_new(g, "Const", "L/one");
        df_tensor *one = df_tensor_scalar_f32(1.0f);
        df_op_set_attr_tensor(b, "value", one);
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        df_op_add_control_input(b, ibody);
        df_tensor_release(one);
        df_node *c1 = df_op_finish(b);
        b = df_op_new(g, "Const", "L/ione");
        df_tensor *ione = df_tensor_scalar_i32(1);
        df_op_set_attr_tensor(b, "value", ione);
        df_op_set_attr_type(b, "dtype", DF_INT32);
        df_op_add_control_input(b, ibody);
        df_tensor_release(ione);
        df_node *i1 = df_op_finish(b);
        df_node *add = op2(g, "AssignAdd", "L/assign_add", (df_output[]){{vbody, 0}, {c1, 0}}, 2);
        df_node *vnext = op2(g, "RefNextIteration", "L/v_next", (df_output[]){{vbody, 0}}, 1);
        df_node *iadd = op2(g, "AddV2", "L/i_add", (df_output[]){{ibody, 0}, {i1, 0}}, 2);
        b = df_op_new(g, "NextIteration", "L/i_next");
        df_op_add_input(b, (df_output){iadd, 0});
        df_op_add_control_input(b, add);
        df_node *inext = df_op_finish(b);
        df_node *vexit = op2(g, "RefExit", "L/v_exit", (df_output[]){{vsw, 0}}, 1);
        df_node *iexit = op2(g, "Exit", "L/i_exit", (df_output[]){{isw, 0}}, 1);
        CHECK_EQ_INT(df_node_update_input(g, vmerge, 1, (df_output){vnext, 0}), DF_OK);
        CHECK_EQ_INT(df_node_update_input(g, imerge, 1, (df_output){inext, 0}), DF_OK);
        df_node *after = iexit;
        df_graph_push_control_deps(g, &after, 1);
        df_output read = df_identity(g, (df_output){vexit, 0});   /* reads v through the RefExit */
        df_graph_pop_control_deps(g);
        CHECK_OK(df_graph_status(g));
        df_session *s = ref_session(g, 1, threads);
        if (s && run_targets(s, &init, 1)) {
            CHECK_NEAR(fetch1(s, read, NULL, NULL), 4.0, 0);
            CHECK_NEAR(fetch1(s, v, NULL, NULL), 4.0, 0);
            CHECK_NEAR(fetch1(s, read, NULL, NULL), 8.0, 0);
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- Errors: a Ref op given a value (not a reference) is refused when built, naming the node. ---- */
DF_TEST(ref_cf_errors) {
    static const char *const ops[] = {"RefEnter", "RefExit", "RefNextIteration", "RefIdentity", "RefSwitch"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        df_graph *g = df_graph_new();
        df_op_builder *b = df_op_new(g, ops[k], "bad_node");
        df_op_add_input(b, df_scalar_f32(g, 1.0f));
        if (!strcmp(ops[k], "RefSwitch")) df_op_add_input(b, df_scalar_bool(g, 1));
        if (!strcmp(ops[k], "RefEnter")) df_op_set_attr_string(b, "frame_name", "F");
        CHECK(df_op_finish(b) == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "must be a variable");
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "{{node bad_node}}");
        df_graph_free(g);
    }
    {   /* RefMerge of a reference and a value */
        df_graph *g = df_graph_new();
        df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
        df_output two[2] = {v, df_scalar_f32(g, 1.0f)};
        df_op_builder *b = df_op_new(g, "RefMerge", "bad_merge");
        df_op_add_input_list(b, two, 2);
        CHECK(df_op_finish(b) == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "{{node bad_merge}}");
        df_graph_free(g);
    }
    {   /* a RefMerge's back edge re-pointed at a value */
        df_graph *g = df_graph_new();
        df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
        df_output two[2] = {v, v};
        df_op_builder *b = df_op_new(g, "RefMerge", "m");
        df_op_add_input_list(b, two, 2);
        df_node *m = df_op_finish(b);
        CHECK(m != NULL);
        CHECK_EQ_INT(df_node_update_input(g, m, 1, df_scalar_f32(g, 0.0f)), DF_INVALID_ARGUMENT);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "{{node m}}");
        df_graph_free(g);
    }
    {   /* RefEnter with an empty frame name */
        df_graph *g = df_graph_new();
        df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
        df_op_builder *b = df_op_new(g, "RefEnter", "no_frame");
        df_op_add_input(b, v);
        df_op_set_attr_string(b, "frame_name", "");
        CHECK(df_op_finish(b) == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "{{node no_frame}}");
        df_graph_free(g);
    }
}

/* ---- Gradients through a loop reading a variable through its RefEnter (y = x * w^3 after three
   iterations of x *= w), and through a cond reading it through RefSwitch; checked against
   central differences, w set by an Assign for each evaluation. ---- */
typedef struct { int32_t n; df_output w; } grad_user;
static void mul_w_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    grad_user *u = (grad_user *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_mul(g, v[1], u->w);
}
static void then_sq(df_graph *g, void *user, df_output *outs) {
    grad_user *u = (grad_user *)user;
    outs[0] = df_mul(g, df_mul(g, u->w, u->w), df_scalar_f64(g, 1.5));
}
static void else_lin(df_graph *g, void *user, df_output *outs) {
    grad_user *u = (grad_user *)user;
    outs[0] = df_add(g, u->w, df_scalar_f64(g, 4.0));
}
static double eval_at(df_session *s, df_node *set, df_output wval, double w, df_output y, const df_output *feed, df_tensor *fv) {
    df_tensor *t = df_tensor_scalar_f64(w);
    df_status st;
    df_session_run(s, &wval, &t, 1, NULL, NULL, 0, &set, 1, &st);
    CHECK_OK(&st);
    df_tensor_release(t);
    return fetch1(s, y, feed, fv);
}
DF_TEST(ref_cf_gradient_through_ref_enter_and_ref_switch) {
    df_graph *g = df_graph_new();
    grad_user u;
    u.n = 3;
    u.w = df_variable(g, "w", DF_DOUBLE, 0, NULL);
    df_output wval = df_placeholder(g, "wval", DF_DOUBLE, 0, NULL);
    df_node *set = df_assign(g, u.w, wval);
    df_output x0 = df_placeholder(g, "x0", DF_DOUBLE, 0, NULL);
    df_output in[2] = {df_scalar_i32(g, 0), x0}, r[2];
    CHECK_EQ_INT(df_while_loop(g, 2, in, lt_cond, mul_w_body, &u, NULL, r), DF_OK);
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), c;
    CHECK_EQ_INT(df_cond(g, p, 1, then_sq, else_lin, &u, &c), DF_OK);
    CHECK_EQ_INT(count_op(g, "RefEnter"), 1);
    CHECK_EQ_INT(count_op(g, "RefSwitch"), 2);
    df_output xs[2] = {u.w, x0}, d_loop[2], d_cond;
    CHECK_EQ_INT(df_gradients(g, 1, &r[1], NULL, 2, xs, d_loop), DF_OK);
    CHECK_EQ_INT(df_gradients(g, 1, &c, NULL, 1, &u.w, &d_cond), DF_OK);
    CHECK_OK(df_graph_status(g));
    CHECK(d_loop[0].node != NULL && d_cond.node != NULL);
    df_session *s = ref_session(g, 1, 2);
    if (s && d_loop[0].node && d_cond.node) {
        const double w = 1.3, x = 0.7, h = 1e-5;
        df_tensor *xt = df_tensor_scalar_f64(x);
        double lo, hi;
        /* loop: y = x w^3, dy/dw = 3 x w^2 */
        lo = eval_at(s, set, wval, w - h, r[1], &x0, xt);
        hi = eval_at(s, set, wval, w + h, r[1], &x0, xt);
        eval_at(s, set, wval, w, r[1], &x0, xt);
        double dw = fetch1(s, d_loop[0], &x0, xt), dx = fetch1(s, d_loop[1], &x0, xt);
        CHECK_NEAR(dw, (hi - lo) / (2 * h), 1e-6);
        CHECK_NEAR(dw, 3 * x * w * w, 1e-9);
        CHECK_NEAR(dx, w * w * w, 1e-9);
        df_tensor_release(xt);
        /* cond: then 1.5 w^2 (3 w), else w + 4 (1) */
        for (int taken = 0; taken < 2; taken++) {
            df_tensor *pt = df_tensor_scalar_bool(taken);
            lo = eval_at(s, set, wval, w - h, c, &p, pt);
            hi = eval_at(s, set, wval, w + h, c, &p, pt);
            eval_at(s, set, wval, w, c, &p, pt);
            double d = fetch1(s, d_cond, &p, pt);
            CHECK_NEAR(d, (hi - lo) / (2 * h), 1e-6);
            CHECK_NEAR(d, taken ? 3 * w : 1.0, 1e-9);
            df_tensor_release(pt);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- TensorFlow's own graphs (tests/graphdef/fixtures_cf): RefEnter with AssignAdd in a while
   body, RefSwitch with Assign in a cond branch. ref_while_assign_add's sum reads AssignAdd's
   reference when its Add runs, which races with the later iterations' AssignAdds (TF's
   scheduler ran all three first: acc = 3 v0 + 9 x): any order gives acc = 3 v0 + m x with m in
   6..9, which is what is checked; the loop count and v after the loop are exact. ---- */
static void *read_file_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) { free(p); p = NULL; }
    fclose(f);
    *len = (size_t)n;
    return p;
}
static df_tensor *fixture_npy(const char *fixture, const char *file) {
    char path[256];
    df_status st;
    snprintf(path, sizeof path, "tests/graphdef/fixtures_cf/%s/%s", fixture, file);
    df_tensor *t = df_tensor_read_npy(path, &st);
    CHECK_MSG(t != NULL, "%s: %s", path, st.message);
    return t;
}
static df_graph *fixture_graph(const char *fixture) {
    char path[256];
    size_t len = 0;
    df_status st;
    snprintf(path, sizeof path, "tests/graphdef/fixtures_cf/%s/graph.pb", fixture);
    void *data = read_file_all(path, &len);
    CHECK_MSG(data != NULL, "cannot read %s", path);
    if (!data) return NULL;
    df_graph *g = df_graph_import_graphdef(data, len, &st);
    free(data);
    CHECK_MSG(g != NULL, "%s: %s", path, st.message);
    return g;
}
DF_TEST(ref_cf_tensorflow_graph_while_assign_add) {
    for (int threads = 1; threads <= 4; threads += 3) {
        df_graph *g = fixture_graph("ref_while_assign_add");
        if (!g) return;
        CHECK(count_op(g, "RefEnter") >= 1);
        df_node *init = df_graph_find(g, "v/Assign");
        df_output feeds[2] = {{df_graph_find(g, "x"), 0}, {df_graph_find(g, "n"), 0}};
        df_output fetches[3] = {{df_graph_find(g, "out_i"), 0}, {df_graph_find(g, "out_acc"), 0}, {df_graph_find(g, "out_v"), 0}};
        df_tensor *fv[2] = {fixture_npy("ref_while_assign_add", "x.npy"), fixture_npy("ref_while_assign_add", "n.npy")};
        df_tensor *want_v = fixture_npy("ref_while_assign_add", "out_v.npy"), *got[3] = {NULL, NULL, NULL};
        CHECK(init && feeds[0].node && feeds[1].node && fetches[0].node && fetches[1].node && fetches[2].node);
        df_session *s = init && fetches[2].node && fv[0] && fv[1] && want_v ? ref_session(g, 1, threads) : NULL;
        df_status st;
        if (s && run_targets(s, &init, 1)) {
            df_session_run(s, feeds, fv, 2, fetches, got, 3, NULL, 0, &st);
            CHECK_OK(&st);
        }
        if (got[0] && got[1] && got[2]) {
            const float *x = (const float *)df_tensor_data(fv[0]), *acc = (const float *)df_tensor_data(got[1]);
            const float *v = (const float *)df_tensor_data(got[2]), *tv = (const float *)df_tensor_data(want_v);
            CHECK_EQ_INT(((const int32_t *)df_tensor_data(got[0]))[0], 3);
            int some = 0;             /* (one schedule: the same m for every element) */
            for (int m = 6; m <= 9; m++) {
                int all = 1;
                for (int e = 0; e < 3; e++) all &= fabs(acc[e] - (3 * (tv[e] - 3.0 * x[e]) + m * x[e])) < 1e-4;
                some |= all;
            }
            CHECK_MSG(some, "threads %d: acc [%g %g %g] is no sum a schedule gives", threads, acc[0], acc[1], acc[2]);
            for (int e = 0; e < 3; e++) CHECK_NEAR(v[e], tv[e], 1e-5);
        }
        for (int k = 0; k < 3; k++) df_tensor_release(got[k]);
        df_tensor_release(fv[0]);
        df_tensor_release(fv[1]);
        df_tensor_release(want_v);
        df_session_free(s);
        df_graph_free(g);
    }
}
DF_TEST(ref_cf_tensorflow_graph_cond_assign) {
    df_graph *g = fixture_graph("ref_cond_assign");
    if (!g) return;
    CHECK(count_op(g, "RefSwitch") >= 1);
    df_node *init = df_graph_find(g, "v/Assign");
    df_output feeds[2] = {{df_graph_find(g, "x"), 0}, {df_graph_find(g, "p"), 0}};
    df_output fetches[2] = {{df_graph_find(g, "out_y"), 0}, {df_graph_find(g, "out_v"), 0}};
    df_tensor *fv[2] = {fixture_npy("ref_cond_assign", "x.npy"), fixture_npy("ref_cond_assign", "p.npy")};
    df_tensor *want[2] = {fixture_npy("ref_cond_assign", "out_y.npy"), fixture_npy("ref_cond_assign", "out_v.npy")};
    df_tensor *got[2] = {NULL, NULL};
    df_session *s = init && fetches[0].node && fetches[1].node && fv[0] && fv[1] && want[0] && want[1] ? ref_session(g, 1, 2) : NULL;
    df_status st;
    if (s && run_targets(s, &init, 1)) {
        df_session_run(s, feeds, fv, 2, fetches, got, 2, NULL, 0, &st);
        CHECK_OK(&st);
    }
    for (int k = 0; k < 2; k++)
        if (got[k] && want[k] && df_tensor_num_elements(got[k]) == df_tensor_num_elements(want[k]))
            for (int64_t e = 0; e < df_tensor_num_elements(got[k]); e++)
                CHECK_NEAR(((const float *)df_tensor_data(got[k]))[e], ((const float *)df_tensor_data(want[k]))[e], 1e-5);
        else CHECK_MSG(0, "fetch %d missing or of the wrong size", k);
    for (int k = 0; k < 2; k++) { df_tensor_release(got[k]); df_tensor_release(fv[k]); df_tensor_release(want[k]); }
    df_session_free(s);
    df_graph_free(g);
}
