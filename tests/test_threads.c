/* The inter-op pool at work: tensors big enough (64K elements) that nodes are handed to other
   threads, in wide graphs, in while loops with several iterations in flight and in conds.
   Every result is compared with a plain C computation, and with 1 thread, 2 threads and the
   deterministic mode. Run under ASan+UBSan and, in build.sh, under ThreadSanitizer. */
#include "harness.h"

#define BIG 65536
#define WIDE 8

typedef struct { int threads, deterministic; } cfg;
static const cfg configs[] = {{1, 0}, {2, 0}, {2, 1}, {4, 0}};

static df_session *make_session(df_graph *g, cfg c) {
    df_session_options o = {0};
    o.inter_op_threads = c.threads;
    o.deterministic = c.deterministic;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}

static df_tensor *ramp(int64_t n, float scale) {
    df_tensor *t = df_tensor_new(DF_FLOAT, 1, &n, NULL);
    float *p = (float *)df_tensor_data(t);
    for (int64_t i = 0; i < n; i++) p[i] = scale * (float)(i % 97) / 97.0f;
    return t;
}

/* WIDE independent branches of big elementwise work, joined by AddN, then reduced. */
DF_TEST(threads_wide_graph_of_big_tensors) {
    df_graph *g = df_graph_new();
    int64_t n = BIG;
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, &n), branches[WIDE];
    for (int b = 0; b < WIDE; b++) {
        df_output y = df_mul(g, x, df_scalar_f32(g, (float)(b + 1)));
        y = df_add(g, df_square(g, y), df_scalar_f32(g, 1.0f));
        branches[b] = df_sub(g, df_tanh(g, y), df_scalar_f32(g, 0.5f));
    }
    df_output sum = df_add_n(g, branches, WIDE);
    df_output total = df_reduce_sum(g, sum, 0, NULL, 0);
    CHECK_OK(df_graph_status(g));
    df_tensor *xv = ramp(n, 1.0f);
    const float *xp = (const float *)df_tensor_data(xv);
    double want_total = 0;
    float *want = (float *)malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        float acc = 0;
        for (int b = 0; b < WIDE; b++) {
            float y = xp[i] * (float)(b + 1);
            y = y * y + 1.0f;
            acc += tanhf(y) - 0.5f;
        }
        want[i] = acc;
        want_total += acc;
    }
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
        df_session *s = make_session(g, configs[k]);
        for (int rep = 0; rep < 3; rep++) {
            df_output fetch[2] = {sum, total};
            df_tensor *out[2] = {NULL, NULL};
            df_status st;
            df_session_run(s, &x, &xv, 1, fetch, out, 2, NULL, 0, &st);
            CHECK_OK(&st);
            if (!out[0]) continue;
            const float *got = (const float *)df_tensor_data(out[0]);
            int bad = 0;
            for (int64_t i = 0; i < n && bad < 3; i++)
                if (fabsf(got[i] - want[i]) > 1e-4f) { bad++; CHECK_NEAR(got[i], want[i], 1e-4); }
            CHECK_NEAR(*(const float *)df_tensor_data(out[1]), want_total, 1e-3 * fabs(want_total) + 1);
            df_tensor_release(out[0]);
            df_tensor_release(out[1]);
        }
        df_session_free(s);
    }
    free(want);
    df_tensor_release(xv);
    df_graph_free(g);
}

/* A while loop carrying a big vector: v = v * 0.5 + c, i += 1, for i < 12, with a cond in the
   body choosing between two big computations on i's parity. Several iterations in flight. */
typedef struct { df_output c; } loop_ctx;
static df_output big_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 12));
}
typedef struct { df_output v, c; } branch_ctx;
static void even_branch(df_graph *g, void *user, df_output *outs) {
    const branch_ctx *b = (const branch_ctx *)user;
    outs[0] = df_add(g, df_mul(g, b->v, df_scalar_f32(g, 0.5f)), b->c);
}
static void odd_branch(df_graph *g, void *user, df_output *outs) {
    const branch_ctx *b = (const branch_ctx *)user;
    outs[0] = df_sub(g, df_mul(g, b->v, df_scalar_f32(g, 0.25f)), b->c);
}
static void big_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const loop_ctx *lc = (const loop_ctx *)user;
    df_output even = df_equal(g, df_floor_mod_i(g, v[0], df_scalar_i32(g, 2)), df_scalar_i32(g, 0));
    branch_ctx b = {v[1], lc->c};
    df_cond(g, even, 1, even_branch, odd_branch, &b, &next[1]);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[2] = df_add(g, v[2], df_reduce_sum(g, next[1], 0, NULL, 0));   /* a running total */
}

DF_TEST(threads_while_loop_with_big_tensors_and_a_cond) {
    int64_t n = BIG;
    for (int par = 1; par <= 16; par *= 4) {
        df_graph *g = df_graph_new();
        df_output x = df_placeholder(g, "x", DF_FLOAT, 1, &n);
        df_tensor *cv = ramp(n, 2.0f);
        loop_ctx lc = {df_const(g, cv)};
        df_output init[3] = {df_scalar_i32(g, 0), x, df_scalar_f32(g, 0)}, outs[3];
        df_while_options o = {0};
        o.parallel_iterations = par;
        CHECK_EQ_INT(df_while_loop(g, 3, init, big_cond, big_body, &lc, &o, outs), DF_OK);
        df_tensor *xv = ramp(n, 1.0f);
        /* reference */
        const float *xp = (const float *)df_tensor_data(xv), *cp = (const float *)df_tensor_data(cv);
        float *v = (float *)malloc((size_t)n * sizeof(float));
        memcpy(v, xp, (size_t)n * sizeof(float));
        double running = 0;
        for (int i = 0; i < 12; i++) {
            double s = 0;
            for (int64_t k = 0; k < n; k++) {
                v[k] = (i % 2 == 0) ? v[k] * 0.5f + cp[k] : v[k] * 0.25f - cp[k];
                s += v[k];
            }
            running = (float)(running + (float)s);
        }
        for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
            df_session *s = make_session(g, configs[k]);
            df_tensor *out[3] = {NULL, NULL, NULL};
            df_status st;
            df_session_run(s, &x, &xv, 1, outs, out, 3, NULL, 0, &st);
            CHECK_OK(&st);
            if (out[0]) {
                CHECK_EQ_INT(*(const int32_t *)df_tensor_data(out[0]), 12);
                const float *got = (const float *)df_tensor_data(out[1]);
                int bad = 0;
                for (int64_t i = 0; i < n && bad < 3; i++)
                    if (fabsf(got[i] - v[i]) > 1e-4f) { bad++; CHECK_NEAR(got[i], v[i], 1e-4); }
                CHECK_NEAR(*(const float *)df_tensor_data(out[2]), running, 1e-3 * fabs(running) + 1);
            }
            for (int i = 0; i < 3; i++) df_tensor_release(out[i]);
            df_session_free(s);
        }
        free(v);
        df_tensor_release(xv);
        df_tensor_release(cv);
        df_graph_free(g);
    }
}

/* An error in a node running on another thread aborts the step cleanly, and the session runs
   again afterwards. */
DF_TEST(threads_error_on_a_pool_thread_aborts_the_step) {
    df_graph *g = df_graph_new();
    int64_t n = BIG, bad_shape = BIG / 2;
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL), y = df_placeholder(g, "y", DF_FLOAT, -1, NULL);
    df_output branches[WIDE];
    for (int b = 0; b < WIDE; b++) branches[b] = df_exp(g, df_mul(g, x, df_scalar_f32(g, 0.001f * (float)b)));
    df_output sum = df_add_n(g, branches, WIDE);
    df_output broken = df_add(g, sum, y);       /* fails when y's length differs */
    df_tensor *xv = ramp(n, 1.0f), *good = ramp(n, 1.0f), *bad = ramp(bad_shape, 1.0f);
    df_output feeds[2] = {x, y};
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
        df_session *s = make_session(g, configs[k]);
        for (int rep = 0; rep < 3; rep++) {
            df_tensor *vals[2] = {xv, bad}, *out = NULL;
            df_status st;
            df_session_run(s, feeds, vals, 2, &broken, &out, 1, NULL, 0, &st);
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Incompatible shapes");
            CHECK(out == NULL);
            vals[1] = good;
            df_session_run(s, feeds, vals, 2, &broken, &out, 1, NULL, 0, &st);
            CHECK_OK(&st);
            df_tensor_release(out);
        }
        df_session_free(s);
    }
    df_tensor_release(xv);
    df_tensor_release(good);
    df_tensor_release(bad);
    df_graph_free(g);
}
