/* test_control_flow.c - nested control flow built with df_cond and df_while_loop, with answers
   computed in plain C. Every case runs under each executor configuration (parallel_iterations
   1, 2 and 32; inter_op_threads 1 and 2; the deterministic executor) and must give the same
   results under all of them. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <signal.h>
#include <unistd.h>

/* ---- Watchdog: a hung executor fails loudly instead of stalling the whole test binary ---- */
static const char *volatile cf_watch_name = "";
static void cf_watch_fire(int sig) {
    static const char m[] = "\n*** timed out (executor hang?) in test ";
    const char *n = cf_watch_name;
    size_t len = 0;
    (void)sig;
    while (n[len]) len++;
    if (write(2, m, sizeof m - 1) < 0 || write(2, n, len) < 0 || write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}
static void cf_watch(const char *name, unsigned seconds) {
    cf_watch_name = name;
    signal(SIGALRM, cf_watch_fire);
    alarm(seconds);
}
static void cf_unwatch(void) { alarm(0); }

/* ---- Configurations ---- */
typedef struct cf_cfg {
    int  parallel_iterations, inter_op_threads, deterministic;
    char desc[80];
} cf_cfg;
static const cf_cfg *cf_now;   /* the configuration being run, named in failure messages */
static const char *cf_desc(void) { return cf_now ? cf_now->desc : "default"; }

/* Runs one case under every configuration. */
static void cf_for_each_config(void (*run_case)(const cf_cfg *c)) {
    static const int pis[] = {1, 2, 32};
    static const int sessions[][2] = {{1, 0}, {2, 0}, {2, 1}};  /* inter_op_threads, deterministic */
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            cf_cfg c;
            c.parallel_iterations = pis[i];
            c.inter_op_threads = sessions[j][0];
            c.deterministic = sessions[j][1];
            snprintf(c.desc, sizeof c.desc, "parallel_iterations=%d inter_op_threads=%d deterministic=%d",
                     c.parallel_iterations, c.inter_op_threads, c.deterministic);
            cf_now = &c;
            run_case(&c);
            cf_now = NULL;
        }
    }
}

static df_session *cf_session(df_graph *g, const cf_cfg *c) {
    df_session_options o;
    df_status st;
    df_session *s;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = c ? c->inter_op_threads : 0;
    o.deterministic = c ? c->deterministic : 0;
    s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "[%s] df_session_new failed: %s: %s", cf_desc(), df_code_name(st.code),
              st.message);
    return s;
}

static df_while_options cf_wopts(const cf_cfg *c, int64_t maximum_iterations) {
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = c ? c->parallel_iterations : 0;
    o.maximum_iterations = maximum_iterations;
    return o;
}

/* The graph built without error; reports the sticky status if not. */
#define CF_BUILT(g) cf_built(__FILE__, __LINE__, (g))
static int cf_built(const char *file, int line, df_graph *g) {
    const df_status *st = df_graph_status(g);
    if (st->code == DF_OK) return 1;
    df_test_fail(file, line, "[%s] graph building failed: %s: %s", cf_desc(), df_code_name(st->code),
                 st->message);
    return 0;
}

/* ---- Feeds, runs and expected values ---- */
typedef struct cf_feeds { int n; df_output at[8]; df_tensor *val[8]; } cf_feeds;
static void cf_feed(cf_feeds *f, df_output at, df_tensor *v) { f->at[f->n] = at; f->val[f->n++] = v; }
static void cf_feed_i32(cf_feeds *f, df_output at, int32_t v) { cf_feed(f, at, df_tensor_scalar_i32(v)); }
static void cf_feed_f32(cf_feeds *f, df_output at, float v) { cf_feed(f, at, df_tensor_scalar_f32(v)); }
static void cf_feed_bool(cf_feeds *f, df_output at, int v) { cf_feed(f, at, df_tensor_scalar_bool(v)); }
static void cf_feeds_clear(cf_feeds *f) {
    for (int i = 0; i < f->n; i++) df_tensor_release(f->val[i]);
    f->n = 0;
}
static void cf_release(df_tensor **t, int n) {
    for (int i = 0; i < n; i++) { df_tensor_release(t[i]); t[i] = NULL; }
}

/* Runs with the feeds (then clears them); 1 if OK, else a failure naming the configuration. */
#define CF_RUN(s, f, n, fetches, outs) cf_run(__FILE__, __LINE__, (s), (f), (n), (fetches), (outs), NULL, 0)
#define CF_RUN_TARGETS(s, f, targets, nt) cf_run(__FILE__, __LINE__, (s), (f), 0, NULL, NULL, (targets), (nt))
static int cf_run(const char *file, int line, df_session *s, cf_feeds *f, int n,
                  const df_output *fetches, df_tensor **outs, df_node *const *targets, int nt) {
    df_status st;
    for (int i = 0; i < n; i++) outs[i] = NULL;
    if (!s) { if (f) cf_feeds_clear(f); return 0; }
    df_session_run(s, f ? f->at : NULL, f ? f->val : NULL, f ? f->n : 0, fetches, outs, n, targets,
                   nt, &st);
    if (f) cf_feeds_clear(f);
    if (st.code != DF_OK) {
        df_test_fail(file, line, "[%s] df_session_run: %s: %s", cf_desc(), df_code_name(st.code),
                     st.message);
        cf_release(outs, n);
        return 0;
    }
    return 1;
}

static const void *cf_scalar(const char *file, int line, df_tensor *t, df_dtype dt, const char *what) {
    if (!t) { df_test_fail(file, line, "[%s] %s: no tensor", cf_desc(), what); return NULL; }
    if (df_tensor_dtype(t) != dt || df_tensor_num_elements(t) != 1) {
        df_test_fail(file, line, "[%s] %s: expected one %s, got %s with %lld elements", cf_desc(),
                     what, df_dtype_name(dt), df_dtype_name(df_tensor_dtype(t)),
                     (long long)df_tensor_num_elements(t));
        return NULL;
    }
    return df_tensor_data(t);
}
#define EXPECT_I32(t, want, what) cf_expect_i32(__FILE__, __LINE__, (t), (want), (what))
#define EXPECT_I64(t, want, what) cf_expect_i64(__FILE__, __LINE__, (t), (want), (what))
#define EXPECT_F32(t, want, what) cf_expect_f64(__FILE__, __LINE__, (t), DF_FLOAT, (want), (what))
#define EXPECT_F64(t, want, what) cf_expect_f64(__FILE__, __LINE__, (t), DF_DOUBLE, (want), (what))
static void cf_expect_i32(const char *file, int line, df_tensor *t, int32_t want, const char *what) {
    const int32_t *p = (const int32_t *)cf_scalar(file, line, t, DF_INT32, what);
    if (p && *p != want)
        df_test_fail(file, line, "[%s] %s: got %d, want %d", cf_desc(), what, (int)*p, (int)want);
}
static void cf_expect_i64(const char *file, int line, df_tensor *t, int64_t want, const char *what) {
    const int64_t *p = (const int64_t *)cf_scalar(file, line, t, DF_INT64, what);
    if (p && *p != want)
        df_test_fail(file, line, "[%s] %s: got %lld, want %lld", cf_desc(), what, (long long)*p,
                     (long long)want);
}
static void cf_expect_f64(const char *file, int line, df_tensor *t, df_dtype dt, double want,
                          const char *what) {
    const void *p = cf_scalar(file, line, t, dt, what);
    double got, tol = 1e-5 * (fabs(want) > 1 ? fabs(want) : 1);
    if (!p) return;
    got = dt == DF_FLOAT ? (double)*(const float *)p : *(const double *)p;
    if (!(fabs(got - want) <= tol))
        df_test_fail(file, line, "[%s] %s: got %.9g, want %.9g", cf_desc(), what, got, want);
}

/* =============================================================================================
   Collatz step counts: a cond (even/odd) inside a while loop, fed through placeholders.
   ============================================================================================= */
static int32_t collatz_ref(int32_t n) {
    int32_t steps = 0;
    while (n > 1) { n = (n % 2 == 0) ? n / 2 : 3 * n + 1; steps++; }
    return steps;
}
static void collatz_halve(df_graph *g, void *user, df_output *outs) {
    df_output n = *(const df_output *)user;   /* exact: n is even and far below 2^24 */
    outs[0] = df_cast(g, df_mul(g, df_cast(g, n, DF_FLOAT), df_scalar_f32(g, 0.5f)), DF_INT32);
}
static void collatz_triple(df_graph *g, void *user, df_output *outs) {
    df_output n = *(const df_output *)user;
    outs[0] = df_add(g, df_mul(g, n, df_scalar_i32(g, 3)), df_scalar_i32(g, 1));
}
static df_output collatz_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_greater(g, v[0], df_scalar_i32(g, 1));
}
static void collatz_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    df_output n = v[0];
    df_output even = df_equal(g, df_floor_mod_i(g, n, df_scalar_i32(g, 2)), df_scalar_i32(g, 0));
    (void)user;
    CHECK_EQ_INT(df_cond(g, even, 1, collatz_halve, collatz_triple, &n, &next[0]), DF_OK);
    next[1] = df_add(g, v[1], df_scalar_i32(g, 1));
}
/* outs[0] = final n (1), outs[1] = steps */
static void collatz_loop(df_graph *g, const cf_cfg *c, df_output start, df_output *outs) {
    df_output init[2];
    df_while_options o = cf_wopts(c, 0);
    init[0] = start;
    init[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init, collatz_cond, collatz_body, NULL, &o, outs), DF_OK);
}
static void case_collatz(const cf_cfg *c) {
    static const int32_t starts[][2] = {{27, 97}, {1, 871}, {6, 7}, {97, 27}, {2, 3}};
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "start_a", DF_INT32, 0, NULL);
    df_output b = df_placeholder(g, "start_b", DF_INT32, 0, NULL);
    df_output ra[2], rb[2];
    df_session *s;
    collatz_loop(g, c, a, ra);
    collatz_loop(g, c, b, rb);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        /* two loops, two start values per run */
        cf_feeds f = {0};
        df_output fetch[4];
        df_tensor *out[4];
        fetch[0] = ra[1]; fetch[1] = rb[1]; fetch[2] = ra[0]; fetch[3] = rb[0];
        cf_feed_i32(&f, a, starts[k][0]);
        cf_feed_i32(&f, b, starts[k][1]);
        if (CF_RUN(s, &f, 4, fetch, out)) {
            EXPECT_I32(out[0], collatz_ref(starts[k][0]), "collatz steps (a)");
            EXPECT_I32(out[1], collatz_ref(starts[k][1]), "collatz steps (b)");
            EXPECT_I32(out[2], 1, "collatz final value (a)");
            EXPECT_I32(out[3], 1, "collatz final value (b)");
            cf_release(out, 4);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_collatz_cond_inside_while) {
    /* the known answers the reference must reproduce */
    CHECK_EQ_INT(collatz_ref(27), 111);
    CHECK_EQ_INT(collatz_ref(97), 118);
    CHECK_EQ_INT(collatz_ref(1), 0);
    cf_watch("cf_collatz_cond_inside_while", 300);
    cf_for_each_config(case_collatz);
    cf_unwatch();
}

/* =============================================================================================
   A while loop inside a cond branch, taken or not: the result comes from the taken branch.
   ============================================================================================= */
typedef struct tri_ctx { df_output x; const cf_cfg *c; } tri_ctx;
static df_output tri_cond(df_graph *g, void *user, const df_output *v) {
    const tri_ctx *t = (const tri_ctx *)user;   /* x is captured from outside the cond and loop */
    return df_less(g, v[0], t->x);
}
static void tri_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], next[0]);
}
static void branch_triangle(df_graph *g, void *user, df_output *outs) {   /* 1 + 2 + ... + x */
    tri_ctx *t = (tri_ctx *)user;
    df_output init[2], r[2];
    df_while_options o = cf_wopts(t->c, 0);
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init, tri_cond, tri_body, t, &o, r), DF_OK);
    outs[0] = r[1];
}
static void branch_times_minus2(df_graph *g, void *user, df_output *outs) {
    const tri_ctx *t = (const tri_ctx *)user;
    outs[0] = df_mul(g, t->x, df_scalar_i32(g, -2));
}
static void case_loop_in_branch(const cf_cfg *c) {
    static const int32_t cases[][2] = {{1, 10}, {0, 10}, {1, 0}, {0, 0}, {1, 4}, {0, 4}};  /* p, x */
    for (int loop_in_then = 0; loop_in_then <= 1; loop_in_then++) {
        df_graph *g = df_graph_new();
        df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
        tri_ctx t;
        df_output r;
        df_session *s;
        t.x = df_placeholder(g, "x", DF_INT32, 0, NULL);
        t.c = c;
        CHECK_EQ_INT(df_cond(g, p, 1, loop_in_then ? branch_triangle : branch_times_minus2,
                             loop_in_then ? branch_times_minus2 : branch_triangle, &t, &r), DF_OK);
        if (!CF_BUILT(g)) { df_graph_free(g); return; }
        s = cf_session(g, c);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            int32_t pv = cases[k][0], x = cases[k][1];
            int loop_taken = (pv != 0) == (loop_in_then != 0);
            int32_t want = loop_taken ? x * (x + 1) / 2 : -2 * x;
            cf_feeds f = {0};
            df_tensor *out;
            cf_feed_bool(&f, p, pv);
            cf_feed_i32(&f, t.x, x);
            if (CF_RUN(s, &f, 1, &r, &out)) {
                EXPECT_I32(out, want, loop_in_then ? "cond(p, loop, -2x)" : "cond(p, -2x, loop)");
                df_tensor_release(out);
            }
        }
        df_session_free(s);
        df_graph_free(g);
    }
}
DF_TEST(cf_while_inside_taken_and_untaken_branch) {
    cf_watch("cf_while_inside_taken_and_untaken_branch", 300);
    cf_for_each_config(case_loop_in_branch);
    cf_unwatch();
}

/* =============================================================================================
   Zero-iteration loops: the condition is false at once and the outputs equal the inputs.
   ============================================================================================= */
static df_output zero_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], *(const df_output *)user);
}
static void zero_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_mul(g, v[1], df_scalar_f32(g, 2.0f));
    next[2] = df_add(g, v[2], df_scalar_i64(g, 1));
}
static df_output false_cond(df_graph *g, void *user, const df_output *v) {
    (void)user; (void)v;
    return df_scalar_bool(g, 0);   /* a constant inside the loop: gated by the loop's pivot */
}
static void plus100_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 100));
    next[1] = df_add(g, v[1], df_scalar_f32(g, 100.0f));
}
static void case_zero_iterations(const cf_cfg *c) {
    static const int32_t limits[] = {0, 5, -3, 8};
    const int64_t big0 = (int64_t)1 << 40;
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[3], r[3], init2[2], r2[2];
    df_while_options o = cf_wopts(c, 0);
    df_session *s;
    init[0] = df_scalar_i32(g, 5);
    init[1] = df_scalar_f32(g, 2.5f);
    init[2] = df_scalar_i64(g, big0);
    CHECK_EQ_INT(df_while_loop(g, 3, init, zero_cond, zero_body, &n, &o, r), DF_OK);
    init2[0] = df_scalar_i32(g, 7);
    init2[1] = df_scalar_f32(g, -1.25f);
    CHECK_EQ_INT(df_while_loop(g, 2, init2, false_cond, plus100_body, NULL, &o, r2), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
        int32_t i = 5, trips = 0;
        float f = 2.5f;
        int64_t big = big0;
        cf_feeds fd = {0};
        df_tensor *out[3];
        while (i < limits[k]) { i++; f *= 2.0f; big++; trips++; }
        cf_feed_i32(&fd, n, limits[k]);
        if (CF_RUN(s, &fd, 3, r, out)) {
            EXPECT_I32(out[0], i, "int32 loop var");
            EXPECT_F32(out[1], f, "float loop var");
            EXPECT_I64(out[2], big, "int64 loop var");
            cf_release(out, 3);
        }
        (void)trips;
    }
    {
        df_tensor *out[2];
        if (CF_RUN(s, NULL, 2, r2, out)) {
            EXPECT_I32(out[0], 7, "constant-false loop, int32 var");
            EXPECT_F32(out[1], -1.25, "constant-false loop, float var");
            cf_release(out, 2);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_zero_iteration_loops) {
    cf_watch("cf_zero_iteration_loops", 300);
    cf_for_each_config(case_zero_iterations);
    cf_unwatch();
}

/* =============================================================================================
   Nested loops whose inner trip count depends on the outer counter:
   sum over i < n of sum over j < i of 1 = n(n-1)/2.
   ============================================================================================= */
typedef struct nest_ctx { df_output n, i; const cf_cfg *c; } nest_ctx;
static df_output nest_outer_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], ((const nest_ctx *)user)->n);
}
static df_output nest_inner_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], ((const nest_ctx *)user)->i);   /* the outer counter, captured */
}
static void nest_inner_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_scalar_i32(g, 1));
}
static void nest_outer_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    nest_ctx *ctx = (nest_ctx *)user;
    df_output init[2], r[2];
    df_while_options o = cf_wopts(ctx->c, 0);
    ctx->i = v[0];
    init[0] = df_scalar_i32(g, 0);
    init[1] = v[1];
    CHECK_EQ_INT(df_while_loop(g, 2, init, nest_inner_cond, nest_inner_body, ctx, &o, r), DF_OK);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = r[1];
}
static void case_nested_loops(const cf_cfg *c) {
    static const int32_t ns[] = {0, 1, 2, 5, 13, 30};
    df_graph *g = df_graph_new();
    nest_ctx ctx;
    df_output init[2], r[2];
    df_while_options o = cf_wopts(c, 0);
    df_session *s;
    memset(&ctx, 0, sizeof ctx);
    ctx.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    ctx.c = c;
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init, nest_outer_cond, nest_outer_body, &ctx, &o, r), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int32_t want = 0;
        cf_feeds f = {0};
        df_tensor *out[2];
        for (int32_t i = 0; i < ns[k]; i++)
            for (int32_t j = 0; j < i; j++) want++;
        CHECK_EQ_INT(want, ns[k] * (ns[k] - 1) / 2);
        cf_feed_i32(&f, ctx.n, ns[k]);
        if (CF_RUN(s, &f, 2, r, out)) {
            EXPECT_I32(out[0], ns[k], "outer counter");
            EXPECT_I32(out[1], want, "n(n-1)/2 from nested loops");
            cf_release(out, 2);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_nested_loops_inner_count_depends_on_outer) {
    cf_watch("cf_nested_loops_inner_count_depends_on_outer", 300);
    cf_for_each_config(case_nested_loops);
    cf_unwatch();
}

/* =============================================================================================
   cond(p) { while k < K { acc += cond(k even) { while j < k { s += cond(j % 3 == 0) {2j} {1} } }
   { k } } } { -K }: cond in while in cond in while in cond.
   ============================================================================================= */
static int32_t cwcw_ref(int32_t K, int p) {
    int32_t acc = 0;
    if (!p) return -K;
    for (int32_t k = 0; k < K; k++) {
        if (k % 2 == 0) {
            int32_t s = 0;
            for (int32_t j = 0; j < k; j++) s += (j % 3 == 0) ? 2 * j : 1;
            acc += s;
        } else {
            acc += k;
        }
    }
    return acc;
}
typedef struct cwcw_ctx { df_output K, k, j; const cf_cfg *c; } cwcw_ctx;
static df_output divisible(df_graph *g, df_output x, int32_t d) {
    return df_equal(g, df_floor_mod_i(g, x, df_scalar_i32(g, d)), df_scalar_i32(g, 0));
}
static void c2_then(df_graph *g, void *user, df_output *outs) {
    outs[0] = df_mul(g, ((const cwcw_ctx *)user)->j, df_scalar_i32(g, 2));
}
static void c2_else(df_graph *g, void *user, df_output *outs) {
    (void)user;
    outs[0] = df_scalar_i32(g, 1);   /* a constant in a branch in a loop in a branch in a loop */
}
static df_output w2_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], ((const cwcw_ctx *)user)->k);
}
static void w2_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    cwcw_ctx *ctx = (cwcw_ctx *)user;
    df_output d;
    ctx->j = v[0];
    CHECK_EQ_INT(df_cond(g, divisible(g, v[0], 3), 1, c2_then, c2_else, ctx, &d), DF_OK);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], d);
}
static void c1_then(df_graph *g, void *user, df_output *outs) {
    cwcw_ctx *ctx = (cwcw_ctx *)user;
    df_output init[2], r[2];
    df_while_options o = cf_wopts(ctx->c, 0);
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init, w2_cond, w2_body, ctx, &o, r), DF_OK);
    outs[0] = r[1];
}
static void c1_else(df_graph *g, void *user, df_output *outs) {
    (void)g;
    outs[0] = ((const cwcw_ctx *)user)->k;   /* an outside tensor returned directly */
}
static df_output w1_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], ((const cwcw_ctx *)user)->K);
}
static void w1_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    cwcw_ctx *ctx = (cwcw_ctx *)user;
    df_output inc;
    ctx->k = v[0];
    CHECK_EQ_INT(df_cond(g, divisible(g, v[0], 2), 1, c1_then, c1_else, ctx, &inc), DF_OK);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], inc);
}
static void c0_then(df_graph *g, void *user, df_output *outs) {
    cwcw_ctx *ctx = (cwcw_ctx *)user;
    df_output init[2], r[2];
    df_while_options o = cf_wopts(ctx->c, 0);
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init, w1_cond, w1_body, ctx, &o, r), DF_OK);
    outs[0] = r[1];
}
static void c0_else(df_graph *g, void *user, df_output *outs) {
    outs[0] = df_neg(g, ((const cwcw_ctx *)user)->K);
}
static void case_cond_while_cond_while(const cf_cfg *c) {
    static const int32_t cases[][2] = {{0, 1}, {1, 1}, {2, 1}, {7, 1}, {12, 1}, {12, 0}, {5, 0}};
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), r;
    cwcw_ctx ctx;
    df_session *s;
    memset(&ctx, 0, sizeof ctx);
    ctx.K = df_placeholder(g, "K", DF_INT32, 0, NULL);
    ctx.c = c;
    CHECK_EQ_INT(df_cond(g, p, 1, c0_then, c0_else, &ctx, &r), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cf_feeds f = {0};
        df_tensor *out;
        cf_feed_i32(&f, ctx.K, cases[k][0]);
        cf_feed_bool(&f, p, cases[k][1]);
        if (CF_RUN(s, &f, 1, &r, &out)) {
            EXPECT_I32(out, cwcw_ref(cases[k][0], cases[k][1]), "cond/while/cond/while/cond");
            df_tensor_release(out);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_cond_in_while_in_cond_in_while) {
    CHECK_EQ_INT(cwcw_ref(7, 1), 28);   /* worked by hand: 0 + 1 + 1 + 3 + 8 + 5 + 10 */
    cf_watch("cf_cond_in_while_in_cond_in_while", 300);
    cf_for_each_config(case_cond_while_cond_while);
    cf_unwatch();
}

/* =============================================================================================
   Captures: a loop using outside tensors (invariants), a cond using outside tensors, branches
   that return outside tensors directly.
   ============================================================================================= */
typedef struct inv_ctx { df_output x, y, z, n; } inv_ctx;
static df_output inv_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], ((const inv_ctx *)user)->n);
}
static void inv_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const inv_ctx *t = (const inv_ctx *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_add(g, df_mul(g, t->x, t->y), t->z));
}
static void case_loop_invariants(const cf_cfg *c) {
    static const struct { float x, y; int32_t n; } cases[] = {
        {1.5f, 2.0f, 0}, {1.5f, 2.0f, 1}, {1.5f, 2.0f, 9}, {-0.25f, 4.0f, 9}, {0.5f, 0.5f, 40}};
    df_graph *g = df_graph_new();
    inv_ctx t;
    df_output init[2], r[2];
    df_while_options o = cf_wopts(c, 0);
    df_session *s;
    t.x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    t.y = df_placeholder(g, "y", DF_FLOAT, 0, NULL);
    t.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    t.z = df_add(g, t.x, t.y);   /* computed outside the loop, used inside */
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_f32(g, 0.0f);
    CHECK_EQ_INT(df_while_loop(g, 2, init, inv_cond, inv_body, &t, &o, r), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        float acc = 0.0f, per = cases[k].x * cases[k].y + (cases[k].x + cases[k].y);
        cf_feeds f = {0};
        df_tensor *out[2];
        for (int32_t i = 0; i < cases[k].n; i++) acc += per;   /* exact: multiples of 1/4 */
        cf_feed_f32(&f, t.x, cases[k].x);
        cf_feed_f32(&f, t.y, cases[k].y);
        cf_feed_i32(&f, t.n, cases[k].n);
        if (CF_RUN(s, &f, 2, r, out)) {
            EXPECT_I32(out[0], cases[k].n, "trip count");
            EXPECT_F32(out[1], acc, "n * (x*y + (x+y)) from invariants");
            cf_release(out, 2);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_loop_captures_outside_tensors) {
    cf_watch("cf_loop_captures_outside_tensors", 300);
    cf_for_each_config(case_loop_invariants);
    cf_unwatch();
}

typedef struct ab_ctx { df_output a, b; } ab_ctx;
static void ab_then2(df_graph *g, void *user, df_output *outs) {
    const ab_ctx *t = (const ab_ctx *)user;
    outs[0] = df_add(g, df_mul(g, t->a, t->b), t->a);
    outs[1] = df_add(g, t->a, t->b);
}
static void ab_else2(df_graph *g, void *user, df_output *outs) {
    const ab_ctx *t = (const ab_ctx *)user;
    outs[0] = df_sub(g, t->b, t->a);
    outs[1] = t->a;   /* an outside tensor directly */
}
static void ab_return_a(df_graph *g, void *user, df_output *outs) { (void)g; outs[0] = ((const ab_ctx *)user)->a; }
static void ab_return_b(df_graph *g, void *user, df_output *outs) { (void)g; outs[0] = ((const ab_ctx *)user)->b; }
static void case_cond_captures(const cf_cfg *c) {
    static const float cases[][3] = {{1, 3, 4}, {0, 3, 4}, {1, -2.5f, 0.5f}, {0, -2.5f, 0.5f}};
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_output r2[2], direct;
    ab_ctx t;
    df_session *s;
    t.a = df_placeholder(g, "a", DF_FLOAT, 0, NULL);
    t.b = df_placeholder(g, "b", DF_FLOAT, 0, NULL);
    CHECK_EQ_INT(df_cond(g, p, 2, ab_then2, ab_else2, &t, r2), DF_OK);
    CHECK_EQ_INT(df_cond(g, p, 1, ab_return_a, ab_return_b, &t, &direct), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int pv = cases[k][0] != 0;
        float a = cases[k][1], b = cases[k][2];
        cf_feeds f = {0};
        df_output fetch[3];
        df_tensor *out[3];
        fetch[0] = r2[0]; fetch[1] = r2[1]; fetch[2] = direct;
        cf_feed_bool(&f, p, pv);
        cf_feed_f32(&f, t.a, a);
        cf_feed_f32(&f, t.b, b);
        if (CF_RUN(s, &f, 3, fetch, out)) {
            EXPECT_F32(out[0], pv ? a * b + a : b - a, "cond output 0 (captures a, b)");
            EXPECT_F32(out[1], pv ? a + b : a, "cond output 1 (else returns a directly)");
            EXPECT_F32(out[2], pv ? a : b, "cond(p, a, b) returning outside tensors");
            cf_release(out, 3);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_cond_captures_and_returns_outside_tensors) {
    cf_watch("cf_cond_captures_and_returns_outside_tensors", 300);
    cf_for_each_config(case_cond_captures);
    cf_unwatch();
}

/* =============================================================================================
   A loop variable whose next value ignores its previous value.
   ============================================================================================= */
static df_output lim_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], *(const df_output *)user);
}
static void ignore_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_mul(g, v[0], df_scalar_i32(g, 10));   /* from i, not from v[1] */
    next[2] = df_scalar_f32(g, 2.25f);                /* a constant, not from v[2] */
}
static void case_next_ignores_previous(const cf_cfg *c) {
    static const int32_t ns[] = {5, 0, 1, 12};
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[3], r[3];
    df_while_options o = cf_wopts(c, 0);
    df_session *s;
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_i32(g, -1);
    init[2] = df_scalar_f32(g, 0.5f);
    CHECK_EQ_INT(df_while_loop(g, 3, init, lim_cond, ignore_body, &n, &o, r), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int32_t i = 0, v = -1;
        float w = 0.5f;
        cf_feeds f = {0};
        df_tensor *out[3];
        while (i < ns[k]) { v = i * 10; w = 2.25f; i++; }
        cf_feed_i32(&f, n, ns[k]);
        if (CF_RUN(s, &f, 3, r, out)) {
            EXPECT_I32(out[0], i, "counter");
            EXPECT_I32(out[1], v, "var whose next value is 10*i");
            EXPECT_F32(out[2], w, "var whose next value is a constant");
            cf_release(out, 3);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_loop_var_next_ignores_previous) {
    cf_watch("cf_loop_var_next_ignores_previous", 300);
    cf_for_each_config(case_next_ignores_previous);
    cf_unwatch();
}

/* =============================================================================================
   maximum_iterations cuts a loop short (and does not lengthen a shorter one).
   ============================================================================================= */
static void plus3_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_scalar_i32(g, 3));
}
static df_output forever_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_greater_equal(g, v[0], df_scalar_i32(g, 0));
}
static void case_maximum_iterations(const cf_cfg *c) {
    static const int32_t ns[] = {0, 3, 7, 50};
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[2], r[2], forever[2];
    df_while_options o7 = cf_wopts(c, 7), o5 = cf_wopts(c, 5);
    df_session *s;
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init, lim_cond, plus3_body, &n, &o7, r), DF_OK);
    CHECK_EQ_INT(df_while_loop(g, 2, init, forever_cond, plus3_body, NULL, &o5, forever), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int32_t want = ns[k] < 7 ? ns[k] : 7;
        cf_feeds f = {0};
        df_tensor *out[2];
        cf_feed_i32(&f, n, ns[k]);
        if (CF_RUN(s, &f, 2, r, out)) {
            EXPECT_I32(out[0], want, "min(n, maximum_iterations=7)");
            EXPECT_I32(out[1], 3 * want, "accumulator after min(n, 7) trips");
            cf_release(out, 2);
        }
    }
    {
        df_tensor *out[2];
        if (CF_RUN(s, NULL, 2, forever, out)) {
            EXPECT_I32(out[0], 5, "always-true loop cut at maximum_iterations=5");
            EXPECT_I32(out[1], 15, "accumulator of the cut loop");
            cf_release(out, 2);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_maximum_iterations) {
    cf_watch("cf_maximum_iterations", 300);
    cf_for_each_config(case_maximum_iterations);
    cf_unwatch();
}

/* =============================================================================================
   Several loop variables of different dtypes: int32, float, int64, double.
   ============================================================================================= */
static void dtypes_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, df_mul(g, v[1], df_scalar_f32(g, 1.5f)), df_scalar_f32(g, 0.25f));
    next[2] = df_add(g, df_mul(g, v[2], df_scalar_i64(g, 2)), df_scalar_i64(g, 1));
    next[3] = df_add(g, df_mul(g, v[3], df_scalar_f64(g, 0.5)), df_scalar_f64(g, 1.0));
}
static void case_mixed_dtypes(const cf_cfg *c) {
    static const int32_t ns[] = {0, 1, 10, 20};
    const int64_t big0 = 5000000000LL;   /* does not fit in int32 */
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[4], r[4];
    df_while_options o = cf_wopts(c, 0);
    df_session *s;
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_f32(g, 1.0f);
    init[2] = df_scalar_i64(g, big0);
    init[3] = df_scalar_f64(g, 3.0);
    CHECK_EQ_INT(df_while_loop(g, 4, init, lim_cond, dtypes_body, &n, &o, r), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    CHECK_EQ_INT(df_output_dtype(r[0]), DF_INT32);
    CHECK_EQ_INT(df_output_dtype(r[1]), DF_FLOAT);
    CHECK_EQ_INT(df_output_dtype(r[2]), DF_INT64);
    CHECK_EQ_INT(df_output_dtype(r[3]), DF_DOUBLE);
    s = cf_session(g, c);
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int32_t i = 0;
        float f = 1.0f;
        int64_t big = big0;
        double d = 3.0;
        cf_feeds fd = {0};
        df_tensor *out[4];
        while (i < ns[k]) { i++; f = f * 1.5f; f = f + 0.25f; big = big * 2 + 1; d = d * 0.5 + 1.0; }
        cf_feed_i32(&fd, n, ns[k]);
        if (CF_RUN(s, &fd, 4, r, out)) {
            EXPECT_I32(out[0], i, "int32 var");
            EXPECT_F32(out[1], f, "float var");
            EXPECT_I64(out[2], big, "int64 var");
            EXPECT_F64(out[3], d, "double var");
            cf_release(out, 4);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_loop_vars_of_mixed_dtypes) {
    cf_watch("cf_loop_vars_of_mixed_dtypes", 300);
    cf_for_each_config(case_mixed_dtypes);
    cf_unwatch();
}

/* =============================================================================================
   Fetching a loop output many times across runs of one session (and twice in one run).
   ============================================================================================= */
static void squares_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_mul(g, v[0], v[0]));
}
static void case_fetch_many_times(const cf_cfg *c) {
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[2], r[2];
    df_while_options o = cf_wopts(c, 0);
    df_session *s;
    init[0] = df_scalar_i32(g, 0);
    init[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init, lim_cond, squares_body, &n, &o, r), DF_OK);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    for (int run = 0; run < 40; run++) {
        int32_t nv = (run * 7) % 23, want = 0;
        cf_feeds f = {0};
        df_tensor *out;
        for (int32_t i = 0; i < nv; i++) want += i * i;
        cf_feed_i32(&f, n, nv);
        if (CF_RUN(s, &f, 1, &r[1], &out)) {
            EXPECT_I32(out, want, "sum of squares below n");
            df_tensor_release(out);
        }
    }
    {   /* the same output fetched twice in one run */
        cf_feeds f = {0};
        df_output twice[2];
        df_tensor *out[2];
        twice[0] = r[1]; twice[1] = r[1];
        cf_feed_i32(&f, n, 11);
        if (CF_RUN(s, &f, 2, twice, out)) {
            EXPECT_I32(out[0], 385, "first fetch of the same output");
            EXPECT_I32(out[1], 385, "second fetch of the same output");
            cf_release(out, 2);
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_fetch_loop_output_many_times) {
    cf_watch("cf_fetch_loop_output_many_times", 300);
    cf_for_each_config(case_fetch_many_times);
    cf_unwatch();
}

/* =============================================================================================
   Variables outside loops: initialised in one run, increased by a loop's result in later runs,
   values persisting across runs.
   ============================================================================================= */
static void tri_acc_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], v[0]);
}
static void case_variables(const cf_cfg *c) {
    static const int32_t ns[] = {5, 4, 0, 10};
    const int64_t dims3[1] = {3};
    const float w0[3] = {1.0f, 2.0f, 3.0f}, dw[3] = {0.5f, -0.25f, 2.0f};
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output v = df_variable(g, "counter", DF_INT32, 0, NULL);
    df_output w = df_variable(g, "weights", DF_FLOAT, 1, dims3);
    df_tensor *w0_t = df_tensor_from_data(DF_FLOAT, 1, dims3, w0, sizeof w0, NULL);
    df_tensor *dw_t = df_tensor_from_data(DF_FLOAT, 1, dims3, dw, sizeof dw, NULL);
    df_output init_vals[2], r[2], reads[2];
    df_while_options o = cf_wopts(c, 0);
    df_node *init_ops[2], *add_v, *add_w;
    df_session *s;
    df_status st;
    init_vals[0] = df_scalar_i32(g, 0);
    init_vals[1] = df_scalar_i32(g, 0);
    CHECK_EQ_INT(df_while_loop(g, 2, init_vals, lim_cond, tri_acc_body, &n, &o, r), DF_OK);
    init_ops[0] = df_assign(g, v, df_scalar_i32(g, 100));
    init_ops[1] = df_assign(g, w, df_const(g, w0_t));
    add_v = df_assign_add(g, v, r[1]);        /* outside the loop, fed by its result */
    add_w = df_assign_add(g, w, df_const(g, dw_t));
    reads[0] = df_identity(g, v);
    reads[1] = df_identity(g, w);
    df_tensor_release(w0_t);
    df_tensor_release(dw_t);
    if (!CF_BUILT(g)) { df_graph_free(g); return; }
    s = cf_session(g, c);
    if (!s) { df_graph_free(g); return; }
    {   /* reading before initialisation is an error, as in TensorFlow */
        df_tensor *out = NULL;
        df_session_run(s, NULL, NULL, 0, &reads[0], &out, 1, NULL, 0, &st);
        CHECK_MSG(st.code == DF_FAILED_PRECONDITION,
                  "[%s] reading an uninitialised variable: expected FAILED_PRECONDITION, got %s: %s",
                  cf_desc(), df_code_name(st.code), st.message);
        df_tensor_release(out);
    }
    if (CF_RUN_TARGETS(s, NULL, init_ops, 2)) {
        int32_t want = 100;
        float wv[3] = {1.0f, 2.0f, 3.0f};
        df_tensor *out[2];
        if (CF_RUN(s, NULL, 2, reads, out)) {
            EXPECT_I32(out[0], 100, "counter after init");
            cf_release(out, 2);
        }
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            cf_feeds f = {0};
            df_node *targets[2];
            targets[0] = add_v; targets[1] = add_w;
            want += ns[k] * (ns[k] - 1) / 2;
            for (int e = 0; e < 3; e++) wv[e] += dw[e];
            cf_feed_i32(&f, n, ns[k]);
            CF_RUN_TARGETS(s, &f, targets, 2);
            if (CF_RUN(s, NULL, 2, reads, out)) {   /* a separate run: values persisted */
                EXPECT_I32(out[0], want, "counter += loop result");
                if (out[1] && df_tensor_num_elements(out[1]) == 3 &&
                    df_tensor_dtype(out[1]) == DF_FLOAT) {
                    const float *p = (const float *)df_tensor_data(out[1]);
                    for (int e = 0; e < 3; e++) CHECK_NEAR(p[e], wv[e], 1e-6);
                } else {
                    CHECK_MSG(0, "[%s] weights: expected float[3]", cf_desc());
                }
                cf_release(out, 2);
            }
        }
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(cf_variables_persist_across_runs) {
    cf_watch("cf_variables_persist_across_runs", 300);
    cf_for_each_config(case_variables);
    cf_unwatch();
}

/* =============================================================================================
   A loop of 100,000 iterations.
   ============================================================================================= */
static void sum64_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_cast(g, v[0], DF_INT64));
}
DF_TEST(cf_loop_of_100000_iterations) {
    static const int pis[] = {1, 32};
    static const int inter[] = {1, 2};
    cf_watch("cf_loop_of_100000_iterations", 600);
    for (int k = 0; k < 2; k++) {
        cf_cfg c;
        df_graph *g = df_graph_new();
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output init[2], r[2];
        df_while_options o;
        df_session *s;
        cf_feeds f = {0};
        df_tensor *out[2];
        int64_t want = 0;
        memset(&c, 0, sizeof c);
        c.parallel_iterations = pis[k];
        c.inter_op_threads = inter[k];
        snprintf(c.desc, sizeof c.desc, "parallel_iterations=%d inter_op_threads=%d", pis[k], inter[k]);
        cf_now = &c;
        o = cf_wopts(&c, 0);
        init[0] = df_scalar_i32(g, 0);
        init[1] = df_scalar_i64(g, 0);
        CHECK_EQ_INT(df_while_loop(g, 2, init, lim_cond, sum64_body, &n, &o, r), DF_OK);
        if (!CF_BUILT(g)) { df_graph_free(g); cf_now = NULL; continue; }
        for (int64_t i = 0; i < 100000; i++) want += i;
        CHECK_EQ_INT(want, 4999950000LL);
        s = cf_session(g, &c);
        cf_feed_i32(&f, n, 100000);
        if (CF_RUN(s, &f, 2, r, out)) {
            EXPECT_I32(out[0], 100000, "trip count");
            EXPECT_I64(out[1], want, "sum of i below 100000");
            cf_release(out, 2);
        }
        df_session_free(s);
        df_graph_free(g);
        cf_now = NULL;
    }
    cf_unwatch();
}
