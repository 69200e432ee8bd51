/* Loop gradients' row stacks: the values a gradient loop reads from its loop's body share one
   stack, one LoopStackPushN in the loop and one LoopStackPopN in the gradient loop; the
   gradients they give (central differences, any parallel_iterations, two threads, second
   order); what the two ops refuse. */
#include "harness.h"

static int count_op(df_graph *g, const char *op) {
    int n = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) n += !strcmp(df_node_op(df_graph_node_at(g, i)), op);
    return n;
}
static df_node *first_op(df_graph *g, const char *op) {
    for (int i = 0; i < df_graph_num_nodes(g); i++)
        if (!strcmp(df_node_op(df_graph_node_at(g, i)), op)) return df_graph_node_at(g, i);
    return NULL;
}

/* h = tanh(h * w + x) * sigmoid(h) + exp(-h * h) * w, n times: the gradient reads several
   values of each iteration (tanh's and sigmoid's outputs, h, products) */
typedef struct lg { df_output x, w; } lg;
static df_output lt(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], v[1]); }
static void body(df_graph *g, void *u, const df_output *v, df_output *next) {
    lg *m = (lg *)u;
    df_output h = v[2];
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    df_output a = df_mul(g, df_tanh(g, df_add(g, df_mul(g, h, m->w), m->x)), df_sigmoid(g, h));
    next[2] = df_add(g, a, df_mul(g, df_exp(g, df_neg(g, df_mul(g, h, h))), m->w));
}
typedef struct built { df_graph *g; df_output x, w, n, y, dx, dw, ddx; } built;
static built build(int par, int second) {
    built b;
    memset(&b, 0, sizeof b);
    df_graph *g = b.g = df_graph_new();
    b.x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL);
    b.w = df_placeholder(g, "w", DF_DOUBLE, 0, NULL);
    b.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    lg m = {b.x, b.w};
    df_output init[3] = {df_scalar_i32(g, 0), b.n, df_mul(g, b.x, df_scalar_f64(g, 0.5))}, out[3];
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = par;
    df_while_loop(g, 3, init, lt, body, &m, &o, out);
    b.y = df_mul(g, out[2], out[2]);
    df_output xs[2] = {b.x, b.w}, d[2];
    df_gradients(g, 1, &b.y, NULL, 2, xs, d);
    b.dx = d[0]; b.dw = d[1];
    if (second && b.dx.node) df_gradients(g, 1, &b.dx, NULL, 1, &b.x, &b.ddx);
    return b;
}
/* Runs b at (x, w, n) with `threads` threads, fetching y, dy/dx, dy/dw (and d2y/dx2). */
static int run(const built *b, int threads, double x, double w, int n, double *out, int nf) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(b->g, &o, &st);
    if (!s) return 0;
    df_tensor *fv[3] = {df_tensor_scalar_f64(x), df_tensor_scalar_f64(w), df_tensor_scalar_i32(n)}, *v[4] = {0};
    df_output feeds[3] = {b->x, b->w, b->n}, f[4] = {b->y, b->dx, b->dw, b->ddx};
    int ok = df_session_run(s, feeds, fv, 3, f, v, nf, NULL, 0, &st) == DF_OK;
    if (!ok) fprintf(stderr, "run: %s\n", st.message);
    for (int i = 0; i < nf; i++) { out[i] = ok ? *(double *)df_tensor_data(v[i]) : 0; df_tensor_release(v[i]); }
    for (int i = 0; i < 3; i++) df_tensor_release(fv[i]);
    df_session_free(s);
    return ok;
}

DF_TEST(loopgrad_values_share_one_row_stack) {
    const double x = 0.4, w = 0.9, eps = 1e-6;
    for (int par = 1; par <= 16; par *= 4) {
        built b = build(par, 0);
        CHECK_OK(df_graph_status(b.g));
        /* one push in the loop and one pop in the gradient loop, for all the values read */
        CHECK_EQ_INT(count_op(b.g, "LoopStackPushN"), 1);
        CHECK_EQ_INT(count_op(b.g, "LoopStackPopN"), 1);
        CHECK_EQ_INT(count_op(b.g, "LoopStackPush") + count_op(b.g, "LoopStackPop"), 0);
        df_node *pop = first_op(b.g, "LoopStackPopN"), *push = first_op(b.g, "LoopStackPushN");
        CHECK(pop && push && df_node_num_outputs(pop) >= 4);
        CHECK(pop && push && df_node_num_inputs(push) == 1 + df_node_num_outputs(pop));
        for (int n = 0; n <= 7; n += 7) {
            double v[3], p[3], q[3];
            CHECK(run(&b, 1, x, w, n, v, 3));
            CHECK(run(&b, 1, x + eps, w, n, p, 1) && run(&b, 1, x - eps, w, n, q, 1));
            CHECK_NEAR(v[1], (p[0] - q[0]) / (2 * eps), 1e-6);
            CHECK(run(&b, 1, x, w + eps, n, p, 1) && run(&b, 1, x, w - eps, n, q, 1));
            CHECK_NEAR(v[2], (p[0] - q[0]) / (2 * eps), 1e-6);
            if (n == 0) CHECK(v[2] == 0);
        }
        df_graph_free(b.g);
    }
}

/* Iterations in parallel on two threads push and pop rows in any order: the same numbers, to
   the bit, as one thread (invariants' gradients are summed in iteration order). */
DF_TEST(loopgrad_row_stack_two_threads_same_bits) {
    built b = build(10, 0);
    CHECK_OK(df_graph_status(b.g));
    double one[3], two[3];
    CHECK(run(&b, 1, 0.3, 1.1, 50, one, 3));
    for (int rep = 0; rep < 5; rep++) {
        CHECK(run(&b, 2, 0.3, 1.1, 50, two, 3));
        for (int i = 0; i < 3; i++) CHECK(memcmp(&one[i], &two[i], sizeof(double)) == 0);
    }
    df_graph_free(b.g);
}

/* The gradient loop differentiated again: the row pop's outputs get gradients, which go on
   stacks of their own, popped where the row was pushed. */
DF_TEST(loopgrad_second_order_through_row_stack) {
    const double x = 0.4, w = 0.9, eps = 1e-5;
    built b = build(4, 1);
    CHECK_OK(df_graph_status(b.g));
    CHECK(b.ddx.node != NULL);
    double v[4], p[2], q[2];
    CHECK(run(&b, 2, x, w, 5, v, 4));
    CHECK(run(&b, 1, x + eps, w, 5, p, 2) && run(&b, 1, x - eps, w, 5, q, 2));
    CHECK_NEAR(v[3], (p[1] - q[1]) / (2 * eps), 1e-5);
    df_graph_free(b.g);
}

static df_node *push_n(df_graph *g, const char *name, df_output h, const df_output *vals, int n, df_node *after) {
    df_op_builder *b = df_op_new(g, "LoopStackPushN", name);
    df_op_add_input(b, h);
    df_op_add_input_list(b, vals, n);
    df_dtype t[4];
    for (int i = 0; i < n; i++) t[i] = df_output_dtype(vals[i]);
    df_op_set_attr_type_list(b, "T", t, n);
    if (after) df_op_add_control_input(b, after);
    return df_op_finish(b);
}
static df_node *pop_n(df_graph *g, const char *name, df_output h, const df_dtype *t, int n, df_node *after) {
    df_op_builder *b = df_op_new(g, "LoopStackPopN", name);
    df_op_add_input(b, h);
    df_op_add_input(b, df_scalar_i32(g, 1));
    df_op_set_attr_type_list(b, "T", t, n);
    if (after) df_op_add_control_input(b, after);
    return df_op_finish(b);
}
DF_TEST(loopgrad_row_stack_misuse_is_reported) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "StackV2", "stack");
    df_op_add_input(b, df_scalar_i32(g, -1));
    df_op_set_attr_type(b, "elem_type", DF_FLOAT);
    df_output h = {df_op_finish(b), 0};
    df_output two[2] = {df_scalar_f32(g, 1), df_scalar_f32(g, 2)};
    df_node *push2 = push_n(g, "push2", h, two, 2, NULL);
    df_node *again = push_n(g, "push2_again", h, two, 2, push2);
    df_node *push1 = push_n(g, "push1", h, two, 1, push2);
    df_dtype ff[2] = {DF_FLOAT, DF_FLOAT}, fi[2] = {DF_FLOAT, DF_INT32};
    df_node *pop2 = pop_n(g, "pop2", h, ff, 2, push2), *pop1 = pop_n(g, "pop1", h, ff, 1, push2);
    df_node *pop_types = pop_n(g, "pop_types", h, fi, 2, push2), *pop_empty = pop_n(g, "pop_empty", h, ff, 2, NULL);
    df_op_builder *a = df_op_new(g, "SumAccumulator", "acc");
    df_op_set_attr_type(a, "dtype", DF_FLOAT);
    df_output acc = {df_op_finish(a), 0};
    df_node *on_acc = push_n(g, "push_on_acc", acc, two, 2, NULL);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    df_tensor *v[2] = {NULL, NULL};
    df_output f2[2] = {{pop2, 0}, {pop2, 1}};
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, f2, v, 2, NULL, 0, &st), DF_OK);
    if (v[0] && v[1]) {
        CHECK_NEAR(*(float *)df_tensor_data(v[0]), 1, 0);
        CHECK_NEAR(*(float *)df_tensor_data(v[1]), 2, 0);
    }
    df_tensor_release(v[0]);
    df_tensor_release(v[1]);
    v[0] = v[1] = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &again, 1, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "already holds the values of iteration 0") && strstr(st.message, "{{node push2_again}}"));
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &push1, 1, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "rows of 2 values, got 1") && strstr(st.message, "{{node push1}}"));
    df_output f1 = {pop1, 0};
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &f1, v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "rows of 2 values, pop gives 1") && strstr(st.message, "{{node pop1}}"));
    f1.node = pop_types;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &f1, v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "of the types popped") && strstr(st.message, "{{node pop_types}}"));
    f1.node = pop_empty;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &f1, v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "no values of iteration 0") && strstr(st.message, "{{node pop_empty}}"));
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &on_acc, 1, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "Not a stack handle") != NULL);
    CHECK(v[0] == NULL);
    df_session_free(s);
    df_graph_free(g);
}

/* A graph with row stacks exports as a GraphDef and imports back to the same numbers. */
DF_TEST(loopgrad_row_stack_graphdef_round_trip) {
    built b = build(4, 0);
    CHECK_OK(df_graph_status(b.g));
    double v[3], u[3];
    CHECK(run(&b, 1, 0.4, 0.9, 6, v, 3));
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ_INT(df_graph_export_graphdef(b.g, &data, &len), DF_OK);
    df_status st;
    df_graph *g2 = data ? df_graph_import_graphdef(data, len, &st) : NULL;
    free(data);
    CHECK(g2 != NULL);
    if (g2) {
        CHECK_EQ_INT(count_op(g2, "LoopStackPushN"), 1);
        built c = b;
        c.g = g2;
        df_output *outs[6] = {&c.x, &c.w, &c.n, &c.y, &c.dx, &c.dw};
        const df_output *orig[6] = {&b.x, &b.w, &b.n, &b.y, &b.dx, &b.dw};
        for (int i = 0; i < 6; i++) {
            outs[i]->node = df_graph_find(g2, df_node_name(orig[i]->node));
            outs[i]->index = orig[i]->index;
            CHECK(outs[i]->node != NULL);
        }
        if (c.x.node && c.w.node && c.n.node && c.y.node && c.dx.node && c.dw.node) {
            CHECK(run(&c, 2, 0.4, 0.9, 6, u, 3));
            for (int i = 0; i < 3; i++) CHECK(memcmp(&u[i], &v[i], sizeof(double)) == 0);
        }
        df_graph_free(g2);
    }
    df_graph_free(b.g);
}

/* ---- A loop invariant's gradient that a Mul gives is summed by one op per iteration,
   SumAccumulatorMulAdd (the product goes straight into the sum), with the bits of a Mul and an
   add. ---- */
enum { VW = 16 };
typedef struct vloop { df_graph *g; df_output w, n, h, dw; } vloop;
static df_output vlt(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], v[1]); }
static void vbody(df_graph *g, void *u, const df_output *v, df_output *next) {
    const df_output *wx = (const df_output *)u;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    next[2] = df_tanh(g, df_add(g, df_mul(g, v[2], wx[0]), wx[1]));
}
static df_tensor *vec(const float *v) {
    int64_t n = VW;
    df_status st;
    df_tensor *t = df_tensor_new(DF_FLOAT, 1, &n, &st);
    if (t) memcpy(df_tensor_data(t), v, sizeof(float) * VW);
    return t;
}
static float vx[VW], vh0[VW];
/* h = tanh(h * w + x) on 16 floats, n times; dw = d sum(h) / dw */
static vloop vbuild(int par) {
    vloop L;
    int64_t n = VW;
    df_graph *g = L.g = df_graph_new();
    for (int i = 0; i < VW; i++) vx[i] = 0.05f * (float)(i - 7), vh0[i] = 0.3f - 0.02f * (float)i;
    L.w = df_placeholder(g, "w", DF_FLOAT, 1, &n);
    L.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_tensor *xt = vec(vx), *ht = vec(vh0);
    df_output wx[2] = {L.w, df_const(g, xt)}, init[3] = {df_scalar_i32(g, 0), L.n, df_const(g, ht)}, out[3];
    df_tensor_release(xt);
    df_tensor_release(ht);
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = par;
    df_while_loop(g, 3, init, vlt, vbody, wx, &o, out);
    L.h = out[2];
    df_output total = df_reduce_sum(g, L.h, 0, NULL, 0);
    df_gradients(g, 1, &total, NULL, 1, &L.w, &L.dw);
    return L;
}
/* Fetches f of L at w and n with `threads` threads into out (VW floats). */
static int vrun(const vloop *L, df_output f, const float *w, int n, int threads, float *out) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(L->g, &o, &st);
    if (!s) return 0;
    df_tensor *fv[2] = {vec(w), df_tensor_scalar_i32(n)}, *v = NULL;
    df_output feeds[2] = {L->w, L->n};
    int ok = df_session_run(s, feeds, fv, 2, &f, &v, 1, NULL, 0, &st) == DF_OK;
    if (!ok) fprintf(stderr, "vrun: %s\n", st.message);
    if (ok) memcpy(out, df_tensor_data(v), sizeof(float) * VW);
    df_tensor_release(v);
    df_tensor_release(fv[0]);
    df_tensor_release(fv[1]);
    df_session_free(s);
    return ok;
}
static df_output op2(df_graph *g, const char *op, df_output a, df_output b) {
    df_op_builder *o = df_op_new(g, op, NULL);
    df_op_add_input(o, a);
    df_op_add_input(o, b);
    return (df_output){df_op_finish(o), 0};
}
DF_TEST(loopgrad_invariant_product_summed_in_one_op_same_bits) {
    float w[VW];
    for (int i = 0; i < VW; i++) w[i] = 0.9f - 0.07f * (float)i;
    enum { N = 9 };
    for (int par = 1; par <= 8; par *= 8) {
        vloop L = vbuild(par);
        CHECK_OK(df_graph_status(L.g));
        CHECK_EQ_INT(count_op(L.g, "SumAccumulatorMulAdd"), 1);
        CHECK_EQ_INT(count_op(L.g, "SumAccumulatorAdd"), 0);
        /* the forward values h_0 .. h_N, each from a loop of that many iterations */
        static float h[N + 1][VW];
        int ok = 1;
        for (int t = 0; t <= N && ok; t++) ok = vrun(&L, L.h, w, t, 1, h[t]);
        CHECK(ok);
        float dw1[VW], dw2[VW];
        CHECK(vrun(&L, L.dw, w, N, 1, dw1));
        for (int rep = 0; rep < 3; rep++) {
            CHECK(vrun(&L, L.dw, w, N, 2, dw2));
            CHECK(memcmp(dw1, dw2, sizeof dw1) == 0);
        }
        /* the same sum by separate ops: g = TanhGrad(h_t+1, dh), dw = dw + h_t * g (iteration
           N-1 first), dh = g * w */
        df_graph *r = df_graph_new();
        float ones[VW];
        for (int i = 0; i < VW; i++) ones[i] = 1;
        df_tensor *tw = vec(w), *to = vec(ones);
        df_output wc = df_const(r, tw), dh = df_const(r, to), acc = {NULL, 0};
        df_tensor_release(tw);
        df_tensor_release(to);
        for (int t = N - 1; t >= 0; t--) {
            df_tensor *a = vec(h[t + 1]), *b = vec(h[t]);
            df_output ha = df_const(r, a), hb = df_const(r, b);
            df_tensor_release(a);
            df_tensor_release(b);
            df_output gt = op2(r, "TanhGrad", ha, dh), p = df_mul(r, hb, gt);
            acc = acc.node ? df_add(r, acc, p) : p;
            dh = df_mul(r, gt, wc);
        }
        CHECK_OK(df_graph_status(r));
        df_status st;
        df_session *s = df_session_new(r, NULL, &st);
        df_tensor *v = NULL;
        CHECK(s && df_session_run(s, NULL, NULL, 0, &acc, &v, 1, NULL, 0, &st) == DF_OK);
        if (v) CHECK(memcmp(df_tensor_data(v), dw1, sizeof dw1) == 0);
        df_tensor_release(v);
        df_session_free(s);
        df_graph_free(r);
        /* and central differences of sum(h) */
        const float eps = 1e-2f;
        for (int i = 0; i < VW; i += 5) {
            float wp[VW], wm[VW], hp[VW], hm[VW];
            memcpy(wp, w, sizeof w);
            memcpy(wm, w, sizeof w);
            wp[i] += eps;
            wm[i] -= eps;
            CHECK(vrun(&L, L.h, wp, N, 1, hp) && vrun(&L, L.h, wm, N, 1, hm));
            double sp = 0, sm = 0;
            for (int j = 0; j < VW; j++) sp += hp[j], sm += hm[j];
            CHECK_NEAR(dw1[i], (sp - sm) / (2 * eps), 2e-3);
        }
        df_graph_free(L.g);
    }
}

/* The product broadcast (a scalar loop variable times an invariant vector): Mul's product is
   made and added; parallel iterations on two threads add in iteration order (values that come
   early wait), the same bits as one thread. */
static void sbody(df_graph *g, void *u, const df_output *v, df_output *next) {
    const df_output *wx = (const df_output *)u;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    df_output t = df_tanh(g, df_add(g, df_mul(g, wx[0], v[2]), wx[1]));
    next[2] = df_mul(g, df_reduce_sum(g, t, 0, NULL, 0), df_scalar_f64(g, 0.25));
}
DF_TEST(loopgrad_invariant_broadcast_product_summed) {
    int64_t four = 4;
    const double w0[4] = {0.7, -0.4, 1.1, 0.2}, eps = 1e-6;
    double ref[4] = {0};
    for (int par = 1; par <= 16; par *= 16) {
        df_graph *g = df_graph_new();
        df_output w = df_placeholder(g, "w", DF_DOUBLE, 1, &four), n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_status st;
        df_tensor *xt = df_tensor_new(DF_DOUBLE, 1, &four, &st);
        for (int i = 0; i < 4; i++) ((double *)df_tensor_data(xt))[i] = 0.1 * i - 0.15;
        df_output wx[2] = {w, df_const(g, xt)}, init[3] = {df_scalar_i32(g, 0), n, df_scalar_f64(g, 0.5)}, out[3], dw;
        df_tensor_release(xt);
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = par;
        df_while_loop(g, 3, init, vlt, sbody, wx, &o, out);
        df_gradients(g, 1, &out[2], NULL, 1, &w, &dw);
        CHECK_OK(df_graph_status(g));
        CHECK_EQ_INT(count_op(g, "SumAccumulatorMulAdd"), 1);
        for (int threads = 1; threads <= 2; threads++) {
            df_session_options so;
            memset(&so, 0, sizeof so);
            so.inter_op_threads = so.intra_op_threads = threads;
            df_session *s = df_session_new(g, &so, &st);
            CHECK(s != NULL);
            if (!s) continue;
            double d[4], y[2];
            int ok = 1;
            for (int k = -1; k <= 4 && ok; k++) {        /* k = -1: dw; else y at w +- eps e_k */
                for (int sgn = 0; sgn < (k < 0 ? 1 : 2) && ok; sgn++) {
                    df_tensor *wt = df_tensor_new(DF_DOUBLE, 1, &four, &st), *nt = df_tensor_scalar_i32(6), *v = NULL;
                    memcpy(df_tensor_data(wt), w0, sizeof w0);
                    if (k >= 0 && k < 4) ((double *)df_tensor_data(wt))[k] += sgn ? -eps : eps;
                    df_output feeds[2] = {w, n}, f = k < 0 ? dw : out[2];
                    df_tensor *fv[2] = {wt, nt};
                    ok = k == 4 || df_session_run(s, feeds, fv, 2, &f, &v, 1, NULL, 0, &st) == DF_OK;
                    if (ok && k < 0) memcpy(d, df_tensor_data(v), sizeof d);
                    else if (ok && k < 4) y[sgn] = *(double *)df_tensor_data(v);
                    df_tensor_release(v);
                    df_tensor_release(wt);
                    df_tensor_release(nt);
                }
                if (ok && k >= 0 && k < 4) CHECK_NEAR(d[k], (y[0] - y[1]) / (2 * eps), 1e-7);
            }
            CHECK(ok);
            if (par == 1 && threads == 1) memcpy(ref, d, sizeof d);
            else CHECK(memcmp(ref, d, sizeof d) == 0);
            df_session_free(s);
        }
        df_graph_free(g);
    }
}

/* Second order through the sum: d(dw)/dx of h = tanh(h * w + x) reaches the products that
   SumAccumulatorMulAdd added (its output, which it then makes). */
static void s2body(df_graph *g, void *u, const df_output *v, df_output *next) {
    const df_output *wx = (const df_output *)u;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    next[2] = df_tanh(g, df_add(g, df_mul(g, v[2], wx[0]), wx[1]));
}
DF_TEST(loopgrad_second_order_through_invariant_product_sum) {
    df_graph *g = df_graph_new();
    df_output w = df_placeholder(g, "w", DF_DOUBLE, 0, NULL), x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL);
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output wx[2] = {w, x}, init[3] = {df_scalar_i32(g, 0), n, df_scalar_f64(g, 0.3)}, out[3], dw, ddx;
    df_while_loop(g, 3, init, vlt, s2body, wx, NULL, out);
    df_gradients(g, 1, &out[2], NULL, 1, &w, &dw);
    CHECK_EQ_INT(count_op(g, "SumAccumulatorMulAdd"), 1);
    df_gradients(g, 1, &dw, NULL, 1, &x, &ddx);
    CHECK_OK(df_graph_status(g));
    CHECK(ddx.node != NULL);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (!s || !ddx.node) { df_session_free(s); df_graph_free(g); return; }
    const double eps = 1e-6;
    double v[3];
    for (int k = 0; k < 3; k++) {          /* dw at x+eps, x-eps; d(dw)/dx at x */
        df_tensor *fv[3] = {df_tensor_scalar_f64(0.8), df_tensor_scalar_f64(0.2 + (k == 0 ? eps : k == 1 ? -eps : 0)),
                            df_tensor_scalar_i32(5)}, *r = NULL;
        df_output feeds[3] = {w, x, n}, f = k < 2 ? dw : ddx;
        CHECK(df_session_run(s, feeds, fv, 3, &f, &r, 1, NULL, 0, &st) == DF_OK);
        v[k] = r ? *(double *)df_tensor_data(r) : 0;
        df_tensor_release(r);
        for (int i = 0; i < 3; i++) df_tensor_release(fv[i]);
    }
    CHECK_NEAR(v[2], (v[0] - v[1]) / (2 * eps), 1e-6);
    CHECK(v[2] != 0);
    df_session_free(s);
    df_graph_free(g);
}

/* Misuse: mismatched types and shapes are reported and name the node. */
DF_TEST(loopgrad_mul_add_misuse_is_reported) {
    df_graph *g = df_graph_new();
    df_op_builder *a = df_op_new(g, "SumAccumulator", "acc");
    df_op_set_attr_type(a, "dtype", DF_FLOAT);
    df_output acc = {df_op_finish(a), 0};
    int64_t two = 2, three = 3;
    df_output p2 = df_placeholder(g, "p2", DF_FLOAT, 1, &two), p3 = df_placeholder(g, "p3", DF_FLOAT, -1, NULL);
    df_op_builder *b = df_op_new(g, "SumAccumulatorMulAdd", "muladd");
    df_op_add_input(b, acc);
    df_op_add_input(b, p2);
    df_op_add_input(b, p3);
    df_node *ma = df_op_finish(b);
    df_op_builder *c = df_op_new(g, "SumAccumulatorMulAdd", "muladd_d");
    df_op_add_input(c, acc);
    df_op_add_input(c, df_scalar_f64(g, 1));
    df_op_add_input(c, df_scalar_f64(g, 2));
    df_node *md = df_op_finish(c);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s) {
        df_status fst;
        df_tensor *t2 = df_tensor_new(DF_FLOAT, 1, &two, &fst), *t3 = df_tensor_new(DF_FLOAT, 1, &three, &fst);
        memset(df_tensor_data(t2), 0, 8);
        memset(df_tensor_data(t3), 0, 12);
        df_output feeds[2] = {p2, p3};
        df_tensor *fv[2] = {t2, t3};
        CHECK_EQ_INT(df_session_run(s, feeds, fv, 2, NULL, NULL, 0, &ma, 1, &st), DF_INVALID_ARGUMENT);
        CHECK(strstr(st.message, "Incompatible shapes") && strstr(st.message, "{{node muladd}}"));
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &md, 1, &st), DF_INVALID_ARGUMENT);
        CHECK(strstr(st.message, "Accumulator holds float") && strstr(st.message, "{{node muladd_d}}"));
        df_tensor_release(t2);
        df_tensor_release(t3);
        df_session_free(s);
    }
    df_graph_free(g);
}
