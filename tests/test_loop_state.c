/* The executor pieces loop gradients stand on, used directly: LoopCount (an Exit that fires once
   its loop is done, with the number of iterations), stacks indexed by iteration (LoopStackPush
   and LoopStackPop), LoopIterationLess, and accumulators that sum in iteration order. */
#include "harness.h"

static df_output op1(df_graph *g, const char *op, const char *name, df_output a) {
    df_op_builder *b = df_op_new(g, op, name);
    df_op_add_input(b, a);
    df_output o = {df_op_finish(b), 0};
    return o;
}
/* The most recent node of an op type (the LoopCond of the loop just built). */
static df_node *last_of(df_graph *g, const char *op) {
    for (int i = df_graph_num_nodes(g) - 1; i >= 0; i--)
        if (!strcmp(df_node_op(df_graph_node_at(g, i)), op)) return df_graph_node_at(g, i);
    return NULL;
}

/* ---- a loop x = x + 1 while x < limit, and its LoopCount ---- */
static df_output count_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], df_scalar_f32(g, *(const float *)user));
}
static void count_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
}
static int run_count(float start, float limit, int par, int threads, int32_t *count) {
    df_graph *g = df_graph_new();
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = par;
    df_output init = df_scalar_f32(g, start), out;
    df_while_loop(g, 1, &init, count_cond, count_body, &limit, &o, &out);
    df_output lc = {last_of(g, "LoopCond"), 0};
    df_output n = op1(g, "LoopCount", "count", lc);
    CHECK_OK(df_graph_status(g));
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &so, &st);
    df_tensor *v = NULL;
    if (s) df_session_run(s, NULL, NULL, 0, &n, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    *count = v ? *(int32_t *)df_tensor_data(v) : -1;
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
    return st.code;
}

DF_TEST(loop_count_gives_the_number_of_iterations) {
    int32_t c;
    for (int par = 1; par <= 16; par *= 4)
        for (int threads = 1; threads <= 2; threads++) {
            run_count(0, 7, par, threads, &c);
            CHECK_EQ_INT(c, 7);
            run_count(0, 1000, par, threads, &c);
            CHECK_EQ_INT(c, 1000);
            run_count(9, 7, par, threads, &c);           /* the body never runs */
            CHECK_EQ_INT(c, 0);
        }
}

/* A loop on the untaken side of a cond is dead, and so is its count. */
static void dead_then(df_graph *g, void *user, df_output *outs) {
    df_output init = df_scalar_f32(g, 0), out;
    df_while_loop(g, 1, &init, count_cond, count_body, user, NULL, &out);
    df_output lc = {last_of(g, "LoopCond"), 0};
    outs[0] = op1(g, "LoopCount", "count_in_branch", lc);
}
static void dead_else(df_graph *g, void *user, df_output *outs) { (void)user; outs[0] = df_scalar_i32(g, -5); }
DF_TEST(loop_count_of_a_dead_loop_is_dead) {
    df_graph *g = df_graph_new();
    float limit = 3;
    df_output pred = df_placeholder(g, "p", DF_BOOL, 0, NULL), out;
    df_cond(g, pred, 1, dead_then, dead_else, &limit, &out);
    df_output inner = {last_of(g, "LoopCount"), 0};
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    for (int taken = 0; taken < 2 && s; taken++) {
        df_tensor *p = df_tensor_new(DF_BOOL, 0, NULL, &st), *v[2] = {NULL, NULL};
        *(unsigned char *)df_tensor_data(p) = (unsigned char)taken;
        df_output f[2] = {out, inner};
        df_session_run(s, &pred, &p, 1, f, v, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (v[0]) CHECK_EQ_INT(*(int32_t *)df_tensor_data(v[0]), taken ? 3 : -5);
        df_tensor_release(v[0]);
        df_session_run(s, &pred, &p, 1, &f[1], &v[1], 1, NULL, 0, &st);
        if (taken) {
            CHECK_OK(&st);
            if (v[1]) CHECK_EQ_INT(*(int32_t *)df_tensor_data(v[1]), 3);
        } else {
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "is dead");
        }
        df_tensor_release(v[1]);
        df_tensor_release(p);
    }
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(loop_count_outside_a_loop_is_refused) {
    df_graph *g = df_graph_new();
    df_output n = op1(g, "LoopCount", "stray", df_scalar_bool(g, 1));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *v = NULL;
    if (s) df_session_run(s, NULL, NULL, 0, &n, &v, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not inside a while loop");
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- values pushed under their iteration in one loop, popped in reverse in another ---- */
typedef struct { df_output h, n; } stk;
static df_output push_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_f32(g, 4));
}
static void push_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    stk *k = (stk *)user;
    df_op_builder *b = df_op_new(g, "LoopStackPush", "push");
    df_op_add_input(b, k->h);
    df_op_add_input(b, v[0]);
    df_output p = {df_op_finish(b), 0};                /* on the chain, so it runs */
    next[0] = df_add(g, p, df_scalar_f32(g, 1));
}
static df_output pop_cond(df_graph *g, void *user, const df_output *v) {
    stk *k = (stk *)user;
    df_op_builder *b = df_op_new(g, "LoopIterationLess", "below");
    df_op_add_input(b, k->n);
    df_op_add_control_input(b, v[0].node);
    df_output c = {df_op_finish(b), 0};
    return c;
}
static void pop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    stk *k = (stk *)user;
    df_op_builder *b = df_op_new(g, "LoopStackPop", "pop");
    df_op_add_input(b, k->h);
    df_op_add_input(b, k->n);
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    df_op_add_control_input(b, v[0].node);             /* not in the last (dead) iteration */
    df_output p = {df_op_finish(b), 0};
    next[0] = df_add(g, df_mul(g, v[0], df_scalar_f32(g, 10)), p);
}
DF_TEST(loop_stack_pops_in_reverse_iteration_order) {
    for (int par = 1; par <= 16; par *= 16) {
        df_graph *g = df_graph_new();
        df_op_builder *b = df_op_new(g, "StackV2", "stack");
        df_op_add_input(b, df_scalar_i32(g, -1));
        df_op_set_attr_type(b, "elem_type", DF_FLOAT);
        stk k;
        k.h.node = df_op_finish(b);
        k.h.index = 0;
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = par;
        df_output init = df_scalar_f32(g, 0), fwd, acc;
        df_while_loop(g, 1, &init, push_cond, push_body, &k, &o, &fwd);
        df_output lc = {last_of(g, "LoopCond"), 0};
        k.n = op1(g, "LoopCount", "count", lc);
        df_output zero = df_scalar_f32(g, 0);
        df_while_loop(g, 1, &zero, pop_cond, pop_body, &k, &o, &acc);
        CHECK_OK(df_graph_status(g));
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        df_tensor *v = NULL;
        for (int run = 0; run < 2 && s; run++) {     /* stacks are per run */
            df_session_run(s, NULL, NULL, 0, &acc, &v, 1, NULL, 0, &st);
            CHECK_OK(&st);
            if (v) CHECK_NEAR(*(float *)df_tensor_data(v), 3210.0, 0);   /* popped 3, 2, 1, 0 */
            df_tensor_release(v);
            v = NULL;
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

DF_TEST(loop_stack_misuse_is_reported) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "StackV2", "stack");
    df_op_add_input(b, df_scalar_i32(g, -1));
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    df_output h = {df_op_finish(b), 0};
    df_output none;
    b = df_op_new(g, "LoopStackPop", "pop_nothing");
    df_op_add_input(b, h);
    df_op_add_input(b, df_scalar_i32(g, 1));
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    none.node = df_op_finish(b);
    none.index = 0;
    df_output p1, p2, badn;
    b = df_op_new(g, "LoopStackPush", "push_a");
    df_op_add_input(b, h);
    df_op_add_input(b, df_scalar_f32(g, 1));
    p1.node = df_op_finish(b);
    p1.index = 0;
    b = df_op_new(g, "LoopStackPush", "push_b");
    df_op_add_input(b, h);
    df_op_add_input(b, df_scalar_f32(g, 2));
    df_op_add_control_input(b, p1.node);
    p2.node = df_op_finish(b);
    p2.index = 0;
    int64_t two = 2;
    b = df_op_new(g, "LoopStackPop", "pop_vector_count");
    df_op_add_input(b, h);
    df_tensor *twot = df_tensor_new(DF_INT32, 1, &two, NULL);
    memset(df_tensor_data(twot), 0, 8);
    df_op_add_input(b, df_const(g, twot));
    df_tensor_release(twot);
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    badn.node = df_op_finish(b);
    badn.index = 0;
    df_op_builder *a = df_op_new(g, "SumAccumulator", "acc");
    df_op_set_attr_type(a, "dtype", DF_FLOAT);
    df_output acc = {df_op_finish(a), 0}, wrong;
    b = df_op_new(g, "LoopStackPush", "push_on_acc");
    df_op_add_input(b, acc);
    df_op_add_input(b, df_scalar_f32(g, 1));
    wrong.node = df_op_finish(b);
    wrong.index = 0;
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *v = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &none, &v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "holds no value of iteration 0") && strstr(st.message, "{{node pop_nothing}}"));
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &p2, &v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "already holds a value of iteration 0") != NULL);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &badn, &v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "count must be an integer scalar") != NULL);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &wrong, &v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "Not a stack handle") != NULL);
    CHECK(v == NULL);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- an accumulator fed by every iteration of a parallel loop sums in iteration order ---- */
#define ACC_N 64
static float acc_values[ACC_N];
typedef struct { df_output h, vals, big; df_node *add; } accl;
/* even iterations' values take a slow path (a matmul, which goes to another thread), so later
   iterations' values reach the accumulator first */
static void slow_then(df_graph *g, void *user, df_output *outs) {
    const df_output *xb = (const df_output *)user;
    df_output m = df_matmul(g, xb[1], xb[1], 0, 0);
    outs[0] = df_add(g, xb[0], df_mul(g, df_reduce_sum(g, m, 0, NULL, 0), df_scalar_f32(g, 0)));
}
static void fast_else(df_graph *g, void *user, df_output *outs) { outs[0] = ((const df_output *)user)[0]; (void)g; }
static df_output acc_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, ACC_N));
}
static void acc_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    accl *k = (accl *)user;
    df_op_builder *gb = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(gb, k->vals);
    df_op_add_input(gb, v[0]);
    df_op_add_input(gb, df_scalar_i32(g, 0));
    df_output xb[2] = {{df_op_finish(gb), 0}, k->big}, x;
    df_cond(g, df_equal(g, df_floor_mod_i(g, v[0], df_scalar_i32(g, 2)), df_scalar_i32(g, 0)), 1, slow_then, fast_else, xb, &x);
    df_op_builder *b = df_op_new(g, "SumAccumulatorAdd", "add");
    df_op_add_input(b, k->h);
    df_op_add_input(b, x);
    k->add = df_op_finish(b);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}
DF_TEST(accumulator_sums_in_iteration_order) {
    /* big and small values alternate, so float sums in other orders differ */
    for (int i = 0; i < ACC_N; i++) acc_values[i] = (i % 4 == 0) ? 1e8f : (i % 4 == 2) ? -1e8f : 1.0f + (float)i / 8;
    float want = 0;
    for (int i = 0; i < ACC_N; i++) want += acc_values[i];
    df_graph *g = df_graph_new();
    int64_t n = ACC_N;
    df_tensor *vt = df_tensor_new(DF_FLOAT, 1, &n, NULL);
    memcpy(df_tensor_data(vt), acc_values, sizeof acc_values);
    accl k;
    k.vals = df_const(g, vt);
    df_tensor_release(vt);
    int64_t md[2] = {160, 160};
    df_tensor *mt = df_tensor_new(DF_FLOAT, 2, md, NULL);
    for (int i = 0; i < 160 * 160; i++) ((float *)df_tensor_data(mt))[i] = (float)(i % 7) / 7;
    k.big = df_const(g, mt);
    df_tensor_release(mt);
    df_op_builder *a = df_op_new(g, "SumAccumulator", "acc");
    df_op_set_attr_type(a, "dtype", DF_FLOAT);
    k.h.node = df_op_finish(a);
    k.h.index = 0;
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = 32;
    df_output init = df_scalar_i32(g, 0), out;
    df_while_loop(g, 1, &init, acc_cond, acc_body, &k, &o, &out);
    /* the read waits for the loop's LoopCount, which waits for every iteration's add */
    df_op_builder *c = df_op_new(g, "LoopCount", "done");
    df_output lc = {last_of(g, "LoopCond"), 0};
    df_op_add_input(c, lc);
    df_op_add_control_input(c, k.add);
    df_node *done = df_op_finish(c);
    df_op_builder *r = df_op_new(g, "SumAccumulatorRead", "read");
    df_op_add_input(r, k.h);
    df_op_add_input(r, df_scalar_f32(g, 0));
    df_op_add_control_input(r, done);
    df_output sum = {df_op_finish(r), 0};
    CHECK_OK(df_graph_status(g));
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.inter_op_threads = 4;
    df_status st;
    df_session *s = df_session_new(g, &so, &st);
    for (int run = 0; run < 5 && s; run++) {
        df_tensor *v = NULL;
        df_session_run(s, NULL, NULL, 0, &sum, &v, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (v) CHECK_MSG(*(float *)df_tensor_data(v) == want, "run %d: sum %.9g, in order %.9g", run,
                         (double)*(float *)df_tensor_data(v), (double)want);
        df_tensor_release(v);
    }
    df_session_free(s);
    df_graph_free(g);
}
