/* test_schedule.c - static schedules (src/schedule.c): graphs without control flow run as a flat
   list, while loops in TensorFlow's shape run iteration after iteration from a fixed order.
   Each case runs with them on and off (df_session_options.dynamic_only) and must give the same
   values bit for bit, the same errors, and use the schedule it should (df_session_schedule_stats). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <pthread.h>

static df_session *sched_session(df_graph *g, int threads, int dynamic) {
    df_session_options o;
    df_status st;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = threads;
    o.dynamic_only = dynamic;
    o.disable_passes = DF_PASS_ALL;          /* the graph as built: the passes could fold it */
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "df_session_new: %s", st.message);
    return s;
}

/* Runs fetches with static schedules on and off (1 and 2 threads); every result must be equal
   bit for bit. Returns the stats of the 1-thread static session in *ss. */
static void sched_compare(df_graph *g, const df_output *feeds, df_tensor *const *vals, int n_feeds,
                          const df_output *fetches, int n_fetches, df_schedule_stats *ss) {
    df_tensor *ref[8] = {0};
    for (int cfg = 0; cfg < 4; cfg++) {
        int dynamic = cfg & 1, threads = cfg < 2 ? 1 : 2;
        df_session *s = sched_session(g, threads, dynamic);
        if (!s) return;
        df_tensor *out[8] = {0};
        df_status st;
        df_session_run(s, feeds, vals, n_feeds, fetches, out, n_fetches, NULL, 0, &st);
        CHECK_MSG(st.code == DF_OK, "run (dynamic_only=%d threads=%d): %s", dynamic, threads, st.message);
        for (int i = 0; st.code == DF_OK && i < n_fetches; i++) {
            if (cfg == 0) { ref[i] = out[i]; continue; }
            CHECK(df_tensor_dtype(out[i]) == df_tensor_dtype(ref[i]));
            CHECK(df_tensor_nbytes(out[i]) == df_tensor_nbytes(ref[i]));
            if (df_tensor_nbytes(out[i]) == df_tensor_nbytes(ref[i]))
                CHECK_MSG(!memcmp(df_tensor_data(out[i]), df_tensor_data(ref[i]), df_tensor_nbytes(ref[i])),
                          "fetch %d differs (dynamic_only=%d threads=%d)", i, dynamic, threads);
            df_tensor_release(out[i]);
        }
        if (cfg == 0 && ss) df_session_schedule_stats(s, ss);
        if (dynamic) {
            df_schedule_stats d;
            df_session_schedule_stats(s, &d);
            CHECK(d.flat_runs == 0 && d.static_loops == 0 && d.dynamic_loops == 0 && d.flat_parallel_runs == 0);
        }
        df_session_free(s);
    }
    for (int i = 0; i < n_fetches; i++) df_tensor_release(ref[i]);
}

static df_tensor *new_f32(int rank, const int64_t *dims, const float *v) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    return df_tensor_from_data(DF_FLOAT, rank, dims, v, n * sizeof(float), NULL);
}

static int32_t fetch_i32(df_session *s, df_output o, df_status *st) {
    df_tensor *t = NULL;
    if (df_session_run(s, NULL, NULL, 0, &o, &t, 1, NULL, 0, st) != DF_OK) return INT32_MIN;
    int32_t v = *(const int32_t *)df_tensor_data(t);
    df_tensor_release(t);
    return v;
}

/* ---- flat graphs ---- */
DF_TEST(sched_flat_graph_runs_flat_with_equal_results) {
    df_graph *g = df_graph_new();
    int64_t d[2] = {3, 4};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, d);
    df_output y = df_tanh(g, df_add(g, df_mul(g, x, x), df_scalar_f32(g, 0.5f)));
    df_output z = df_reduce_sum(g, y, 0, NULL, 0);
    df_output fetches[2] = {y, z};
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = 0.25f * (float)i - 1.0f;
    df_tensor *xv = new_f32(2, d, v);
    df_schedule_stats ss;
    sched_compare(g, &x, &xv, 1, fetches, 2, &ss);
    CHECK_EQ_INT(ss.flat_runs, 1);
    CHECK_EQ_INT(ss.static_loops, 0);
    df_tensor_release(xv);
    df_graph_free(g);
}

DF_TEST(sched_flat_error_stops_the_run_and_names_the_node) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL);
    int64_t three = 3;
    df_output r = df_reshape(g, x, 1, &three);
    df_output y = df_add(g, r, r);
    float v[2] = {1, 2};
    int64_t two = 2;
    df_tensor *xv = new_f32(1, &two, v);
    char msg[2][512];
    for (int dyn = 0; dyn < 2; dyn++) {
        df_session *s = sched_session(g, 1, dyn);
        df_tensor *out = NULL;
        df_status st;
        df_session_run(s, &x, &xv, 1, &y, &out, 1, NULL, 0, &st);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Reshape");
        CHECK(out == NULL);
        snprintf(msg[dyn], sizeof msg[dyn], "%s", st.message);
        df_schedule_stats ss;
        df_session_schedule_stats(s, &ss);
        CHECK_EQ_INT(ss.flat_runs, dyn ? 0 : 1);
        df_session_free(s);
    }
    CHECK_MSG(!strcmp(msg[0], msg[1]), "static '%s' vs tagged '%s'", msg[0], msg[1]);
    df_tensor_release(xv);
    df_graph_free(g);
}

DF_TEST(sched_flat_unfed_placeholder_and_fed_fetch) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_INT32, 0, NULL);
    df_output y = df_add(g, x, df_scalar_i32(g, 1));
    df_session *s = sched_session(g, 1, 0);
    df_status st;
    fetch_i32(s, y, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "You must feed a value for placeholder tensor 'x'");
    df_tensor *v = df_tensor_scalar_i32(41), *out = NULL;
    CHECK(df_session_run(s, &y, &v, 1, &y, &out, 1, NULL, 0, &st) == DF_OK);   /* a fed fetch */
    CHECK(out && *(const int32_t *)df_tensor_data(out) == 41);
    df_tensor_release(out);
    out = NULL;
    CHECK(df_session_run(s, &x, &v, 1, &y, &out, 1, NULL, 0, &st) == DF_OK);
    CHECK(out && *(const int32_t *)df_tensor_data(out) == 42);
    df_tensor_release(out);
    df_schedule_stats ss;
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.flat_runs, 3);
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

/* Two MatMuls that may run at once: with two threads the tagged executor keeps them (each is
   worth a thread); with one thread the graph runs flat. Results equal either way. */
DF_TEST(sched_flat_splits_parallel_expensive_work_between_threads) {
    df_graph *g = df_graph_new();
    int64_t d[2] = {160, 160};
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, d);
    df_output m1 = df_matmul(g, a, a, 0, 0), m2 = df_matmul(g, a, a, 1, 0);
    df_output y = df_add(g, m1, m2);
    float *v = (float *)malloc(160 * 160 * sizeof(float));
    for (int i = 0; i < 160 * 160; i++) v[i] = (float)((i * 37) % 101) / 1010.0f;
    df_tensor *av = new_f32(2, d, v);
    df_schedule_stats ss;
    sched_compare(g, &a, &av, 1, &y, 1, &ss);
    CHECK_EQ_INT(ss.flat_runs, 1);              /* one thread: flat */
    df_session *s = sched_session(g, 2, 0);
    df_tensor *out = NULL;
    df_status st;
    CHECK(df_session_run(s, &a, &av, 1, &y, &out, 1, NULL, 0, &st) == DF_OK);
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.flat_runs, 0);              /* two threads: the two MatMuls may run at once */
    CHECK_EQ_INT(ss.flat_parallel_runs, 1);     /* ... split between the threads by the plan */
    df_tensor_release(out);
    df_session_free(s);
    /* a chain of MatMuls (each needs the last) runs flat with threads too */
    df_graph *g2 = df_graph_new();
    df_output b = df_placeholder(g2, "b", DF_FLOAT, 2, d);
    df_output c = df_matmul(g2, df_matmul(g2, b, b, 0, 0), b, 0, 1);
    s = sched_session(g2, 2, 0);
    CHECK(df_session_run(s, &b, &av, 1, &c, &out, 1, NULL, 0, &st) == DF_OK);
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.flat_runs, 1);
    df_tensor_release(out);
    df_session_free(s);
    df_graph_free(g2);
    df_tensor_release(av);
    free(v);
    df_graph_free(g);
}

/* A wide graph: `width` branches of `depth` levels, each level a MatMul of the branch's last
   value by the next branch's (so every level reads two lists), a Tanh, and every third level
   a control edge on the neighbour's level before. */
static df_output wide_graph(df_graph *g, df_output a, int width, int depth) {
    df_output cur[8], prev[8];
    for (int j = 0; j < width; j++) cur[j] = df_mul(g, a, df_scalar_f32(g, 1.0f + 0.125f * (float)j));
    for (int l = 0; l < depth; l++) {
        for (int j = 0; j < width; j++) prev[j] = cur[j];
        for (int j = 0; j < width; j++) {
            if (l % 3 == 2) {
                df_node *dep = prev[(j + width - 1) % width].node;
                df_graph_push_control_deps(g, &dep, 1);
            }
            df_output m = df_matmul(g, prev[j], prev[(j + 1) % width], 0, l & 1);
            cur[j] = df_tanh(g, df_mul(g, m, df_scalar_f32(g, 0.0625f)));
            if (l % 3 == 2) df_graph_pop_control_deps(g);
        }
    }
    df_output s = cur[0];
    for (int j = 1; j < width; j++) s = df_add(g, s, cur[j]);
    return s;
}

static df_tensor *wide_input(int64_t n) {
    int64_t d[2] = {n, n};
    float *v = (float *)malloc((size_t)(n * n) * sizeof(float));
    for (int64_t i = 0; i < n * n; i++) v[i] = (float)((i * 53) % 97) / 97.0f - 0.5f;
    df_tensor *t = new_f32(2, d, v);
    free(v);
    return t;
}

DF_TEST(sched_flat_plan_on_threads_equal_bits) {
    int64_t d[2] = {128, 128};
    int widths[3] = {2, 3, 8};
    for (int w = 0; w < 3; w++) {
        df_graph *g = df_graph_new();
        df_output a = df_placeholder(g, "a", DF_FLOAT, 2, d);
        df_output y = wide_graph(g, a, widths[w], w == 2 ? 3 : 4);
        df_tensor *av = wide_input(128);
        df_schedule_stats ss;
        sched_compare(g, &a, &av, 1, &y, 1, &ss);
        CHECK_EQ_INT(ss.flat_runs, 1);
        /* 2 and 4 threads, 10 runs each: the plan's split, equal bits every time */
        df_tensor *ref = NULL;
        df_session *s1 = sched_session(g, 1, 0);
        df_status st;
        CHECK(df_session_run(s1, &a, &av, 1, &y, &ref, 1, NULL, 0, &st) == DF_OK);
        df_session_free(s1);
        for (int th = 2; th <= 4 && ref; th += 2) {
            df_session *s = sched_session(g, th, 0);
            for (int r = 0; r < 10; r++) {
                df_tensor *out = NULL;
                CHECK_MSG(df_session_run(s, &a, &av, 1, &y, &out, 1, NULL, 0, &st) == DF_OK, "%s", st.message);
                if (out) CHECK(!memcmp(df_tensor_data(out), df_tensor_data(ref), df_tensor_nbytes(ref)));
                df_tensor_release(out);
            }
            df_session_schedule_stats(s, &ss);
            CHECK_EQ_INT(ss.flat_parallel_runs, 10);
            CHECK_EQ_INT(ss.flat_runs, 0);
            df_session_free(s);
        }
        df_tensor_release(ref);
        df_tensor_release(av);
        df_graph_free(g);
    }
}

/* Small known shapes are not worth a thread: the plan leaves the graph on one (flat). */
DF_TEST(sched_flat_small_parallel_work_stays_on_one_thread) {
    int64_t d[2] = {4, 4};
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, d);
    df_output y = wide_graph(g, a, 3, 2);
    df_tensor *av = wide_input(4);
    df_session *s = sched_session(g, 2, 0);
    df_tensor *out = NULL;
    df_status st;
    CHECK(df_session_run(s, &a, &av, 1, &y, &out, 1, NULL, 0, &st) == DF_OK);
    df_schedule_stats ss;
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.flat_runs, 1);
    CHECK_EQ_INT(ss.flat_parallel_runs, 0);
    df_tensor_release(out);
    df_session_free(s);
    df_tensor_release(av);
    df_graph_free(g);
}

/* An error on one list ends the run on every thread, with the tagged executor's message; the
   session runs again after it. Shapes unknown until run time: the plan assumes big work. */
DF_TEST(sched_flat_plan_error_ends_every_list) {
    df_graph *g = df_graph_new();
    int64_t u[2] = {-1, -1};
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, u);
    df_output b = df_placeholder(g, "b", DF_FLOAT, 2, u);
    df_output m1 = df_tanh(g, df_matmul(g, a, a, 0, 0));
    df_output m2 = df_tanh(g, df_matmul(g, b, a, 0, 0));   /* fails when b's columns differ from a's rows */
    df_output m3 = df_tanh(g, df_matmul(g, a, a, 1, 0));
    df_output y = df_add(g, df_add(g, m1, m2), m3);
    df_tensor *av = wide_input(16), *bv = wide_input(8), *ok = wide_input(16);
    df_output feeds[2] = {a, b};
    char msg[2][512];
    for (int dyn = 0; dyn < 2; dyn++) {
        df_session *s = sched_session(g, 2, dyn);
        for (int r = 0; r < 10; r++) {
            df_tensor *vals[2] = {av, bv}, *out = NULL;
            df_status st;
            CHECK(df_session_run(s, feeds, vals, 2, &y, &out, 1, NULL, 0, &st) == DF_INVALID_ARGUMENT);
            CHECK(out == NULL);
            CHECK_MSG(strstr(st.message, "MatMul") != NULL, "%s", st.message);
            snprintf(msg[dyn], sizeof msg[dyn], "%s", st.message);
            vals[1] = ok;
            CHECK_MSG(df_session_run(s, feeds, vals, 2, &y, &out, 1, NULL, 0, &st) == DF_OK, "%s", st.message);
            df_tensor_release(out);
        }
        df_schedule_stats ss;
        df_session_schedule_stats(s, &ss);
        CHECK_EQ_INT(ss.flat_parallel_runs, dyn ? 0 : 20);
        df_session_free(s);
    }
    CHECK_MSG(!strcmp(msg[0], msg[1]), "static: %s / tagged: %s", msg[0], msg[1]);
    df_tensor_release(av); df_tensor_release(bv); df_tensor_release(ok);
    df_graph_free(g);
}

typedef struct { df_session *s; df_output a, y; const df_tensor *av, *ref; int bad; } wide_arg;
static void *wide_main(void *p) {
    wide_arg *w = (wide_arg *)p;
    for (int r = 0; r < 20; r++) {
        df_tensor *out = NULL, *in = (df_tensor *)w->av;
        df_status st;
        if (df_session_run(w->s, &w->a, &in, 1, &w->y, &out, 1, NULL, 0, &st) != DF_OK ||
            memcmp(df_tensor_data(out), df_tensor_data(w->ref), df_tensor_nbytes(w->ref)))
            w->bad++;
        df_tensor_release(out);
    }
    return NULL;
}

/* One session run from 4 threads at once, its graph split between 3 threads each time. */
DF_TEST(sched_flat_plan_shared_session_from_threads) {
    int64_t d[2] = {96, 96};
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, d);
    df_output y = wide_graph(g, a, 4, 3);
    df_tensor *av = wide_input(96), *ref = NULL;
    df_session *s = sched_session(g, 3, 0);
    df_status st;
    CHECK(df_session_run(s, &a, &av, 1, &y, &ref, 1, NULL, 0, &st) == DF_OK);
    pthread_t th[4];
    wide_arg w[4];
    for (int i = 0; ref && i < 4; i++) {
        w[i].s = s; w[i].a = a; w[i].y = y; w[i].av = av; w[i].ref = ref; w[i].bad = 0;
        pthread_create(&th[i], NULL, wide_main, &w[i]);
    }
    for (int i = 0; ref && i < 4; i++) { pthread_join(th[i], NULL); CHECK_EQ_INT(w[i].bad, 0); }
    df_schedule_stats ss;
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.flat_parallel_runs, 81);
    df_tensor_release(ref);
    df_session_free(s);
    df_tensor_release(av);
    df_graph_free(g);
}

/* ---- static loops ---- */
static df_output lt_cond(df_graph *g, void *user, const df_output *v) { return df_less(g, v[0], *(const df_output *)user); }
static void inc_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, df_mul(g, v[1], df_scalar_f32(g, 1.0009765625f)), df_cast(g, v[0], DF_FLOAT));
}

DF_TEST(sched_while_loop_runs_static_with_equal_results) {
    static const int pis[3] = {1, 10, 32};
    for (int p = 0; p < 3; p++) {
        df_graph *g = df_graph_new();
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output init[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 1.0f)}, out[2];
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = pis[p];
        CHECK(df_while_loop(g, 2, init, lt_cond, inc_body, &n, &o, out) == DF_OK);
        static const int ns[4] = {0, 1, 7, 1000};
        for (int k = 0; k < 4; k++) {
            df_tensor *nv = df_tensor_scalar_i32(ns[k]);
            df_schedule_stats ss;
            sched_compare(g, &n, &nv, 1, out, 2, &ss);
            CHECK_EQ_INT(ss.static_loops, 1);
            CHECK_EQ_INT(ss.dynamic_loops, 0);
            df_session *s = sched_session(g, 1, 0);
            df_tensor *r[2] = {0};
            df_status st;
            CHECK(df_session_run(s, &n, &nv, 1, out, r, 2, NULL, 0, &st) == DF_OK);
            if (r[0]) CHECK_EQ_INT(*(const int32_t *)df_tensor_data(r[0]), ns[k]);
            df_tensor_release(r[0]);
            df_tensor_release(r[1]);
            df_session_free(s);
            df_tensor_release(nv);
        }
        df_graph_free(g);
    }
}

/* A loop on a cond's untaken branch: its Enters bring dead values, and the tagged executor runs
   it (dynamic_loops); on the taken branch it runs static. */
typedef struct { df_output n; } loop_user;
static df_output one_cond(df_graph *g, void *user, const df_output *v) { return df_less(g, v[0], ((loop_user *)user)->n); }
static void one_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 2));
}
static void branch_loop(df_graph *g, void *user, df_output *outs) {
    df_output i0 = df_scalar_i32(g, 0);
    df_while_loop(g, 1, &i0, one_cond, one_body, user, NULL, outs);
}
static void branch_const(df_graph *g, void *user, df_output *outs) { (void)user; outs[0] = df_scalar_i32(g, -5); }

DF_TEST(sched_loop_on_an_untaken_branch_goes_back_to_the_tagged_executor) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), out;
    loop_user u = {df_placeholder(g, "n", DF_INT32, 0, NULL)};
    CHECK(df_cond(g, p, 1, branch_loop, branch_const, &u, &out) == DF_OK);
    for (int taken = 0; taken < 2; taken++) {
        df_output feeds[2] = {p, u.n};
        df_tensor *vals[2] = {df_tensor_scalar_bool(taken), df_tensor_scalar_i32(9)};
        df_schedule_stats ss;
        sched_compare(g, feeds, vals, 2, &out, 1, &ss);
        CHECK_EQ_INT(ss.static_loops, taken ? 1 : 0);
        CHECK_EQ_INT(ss.dynamic_loops, taken ? 0 : 1);
        df_session *s = sched_session(g, 1, 0);
        df_tensor *r = NULL;
        df_status st;
        CHECK(df_session_run(s, feeds, vals, 2, &out, &r, 1, NULL, 0, &st) == DF_OK);
        if (r) CHECK_EQ_INT(*(const int32_t *)df_tensor_data(r), taken ? 10 : -5);
        df_tensor_release(r);
        df_session_free(s);
        df_tensor_release(vals[0]);
        df_tensor_release(vals[1]);
    }
    df_graph_free(g);
}

/* A cond inside the body keeps the tagged executor for that loop; a nested loop runs its inner
   loop static and the outer one tagged. */
static void half_then(df_graph *g, void *user, df_output *outs) { outs[0] = df_add(g, *(df_output *)user, df_scalar_i32(g, 3)); }
static void half_else(df_graph *g, void *user, df_output *outs) { outs[0] = df_add(g, *(df_output *)user, df_scalar_i32(g, 1)); }
static void cond_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    df_output x = v[0];
    df_output even = df_equal(g, df_cast(g, df_cast(g, df_div(g, df_cast(g, x, DF_FLOAT), df_scalar_f32(g, 2.0f)), DF_INT32), DF_FLOAT),
                              df_div(g, df_cast(g, x, DF_FLOAT), df_scalar_f32(g, 2.0f)));
    df_cond(g, even, 1, half_then, half_else, &x, next);
}
static df_output inner_cond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_i32(g, 5)); }
static void inner_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], v[0]);
}
static df_output outer_cond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_i32(g, 4)); }
static void outer_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    df_output init[2] = {df_scalar_i32(g, 0), v[1]}, r[2];
    df_while_loop(g, 2, init, inner_cond, inner_body, NULL, NULL, r);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = r[1];
}

DF_TEST(sched_cond_in_body_stays_tagged_and_nested_loops_run_inner_static) {
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL), i0 = df_scalar_i32(g, 0), out;
    CHECK(df_while_loop(g, 1, &i0, lt_cond, cond_body, &n, NULL, &out) == DF_OK);
    df_tensor *nv = df_tensor_scalar_i32(20);
    df_schedule_stats ss;
    sched_compare(g, &n, &nv, 1, &out, 1, &ss);
    CHECK_EQ_INT(ss.static_loops, 0);
    CHECK_EQ_INT(ss.flat_runs, 0);
    df_tensor_release(nv);
    df_graph_free(g);

    g = df_graph_new();
    df_output init[2] = {df_scalar_i32(g, 0), df_scalar_i32(g, 0)}, r[2];
    CHECK(df_while_loop(g, 2, init, outer_cond, outer_body, NULL, NULL, r) == DF_OK);
    sched_compare(g, NULL, NULL, 0, r, 2, &ss);
    CHECK_EQ_INT(ss.static_loops, 4);         /* the inner loop, once per outer iteration */
    df_session *s = sched_session(g, 2, 0);
    df_status st;
    CHECK_EQ_INT(fetch_i32(s, r[1], &st), 40);    /* 4 x (0+1+2+3+4) */
    CHECK_OK(&st);
    df_session_free(s);
    df_graph_free(g);
}

/* An error in the body at iteration 0: the same error, nothing leaked (ASan). A loop that never
   ends stops at the run's deadline. */
static void bad_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    int64_t three = 3;
    df_output r = df_reshape(g, *(const df_output *)user, 1, &three);
    next[0] = df_add(g, v[0], df_cast(g, df_reduce_sum(g, r, 0, NULL, 0), DF_INT32));
}
static df_output true_cond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_add(g, v[0], df_scalar_i32(g, 1))); }
static void zero_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_mul(g, v[0], df_scalar_i32(g, 1));
}

DF_TEST(sched_loop_errors_and_deadline) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL), i0 = df_scalar_i32(g, 0), out;
    CHECK(df_while_loop(g, 1, &i0, true_cond, bad_body, &x, NULL, &out) == DF_OK);
    int64_t two = 2;
    float v[2] = {1, 2};
    df_tensor *xv = new_f32(1, &two, v);
    char msg[2][512];
    for (int dyn = 0; dyn < 2; dyn++) {
        df_session *s = sched_session(g, 1, dyn);
        df_tensor *r = NULL;
        df_status st;
        df_session_run(s, &x, &xv, 1, &out, &r, 1, NULL, 0, &st);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Reshape");
        snprintf(msg[dyn], sizeof msg[dyn], "%s", st.message);
        df_schedule_stats ss;
        df_session_schedule_stats(s, &ss);
        CHECK_EQ_INT(ss.static_loops, dyn ? 0 : 1);
        df_session_free(s);
    }
    CHECK_MSG(!strcmp(msg[0], msg[1]), "static '%s' vs tagged '%s'", msg[0], msg[1]);
    df_tensor_release(xv);
    df_graph_free(g);

    g = df_graph_new();
    i0 = df_scalar_i32(g, 0);
    CHECK(df_while_loop(g, 1, &i0, true_cond, zero_body, NULL, NULL, &out) == DF_OK);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = 1;
    o.run_timeout_ms = 200;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    df_tensor *r = NULL;
    df_session_run(s, NULL, NULL, 0, &out, &r, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_DEADLINE_EXCEEDED, "200 ms");
    df_schedule_stats ss;
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.static_loops, 1);
    df_session_free(s);
    df_graph_free(g);
}

/* The gradient of a loop (stacks pushed by the forward loop, popped by the backward one): both
   loops run static, the values equal the tagged executor's bit for bit. */
static df_output grad_cond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_i32(g, 6)); }
static void grad_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    df_output w = *(const df_output *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_tanh(g, df_matmul(g, v[1], w, 0, 0));
}

DF_TEST(sched_loop_gradient_static_equal_to_tagged) {
    df_graph *g = df_graph_new();
    int64_t d[2] = {2, 3}, dw[2] = {3, 3};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, d), w = df_placeholder(g, "w", DF_FLOAT, 2, dw);
    df_output init[2] = {df_scalar_i32(g, 0), x}, out[2];
    CHECK(df_while_loop(g, 2, init, grad_cond, grad_body, &w, NULL, out) == DF_OK);
    df_output loss = df_reduce_sum(g, df_mul(g, out[1], out[1]), 0, NULL, 0), dx[2];
    df_output xs[2] = {x, w};
    CHECK(df_gradients(g, 1, &loss, NULL, 2, xs, dx) == DF_OK);
    float xv[6], wv[9];
    for (int i = 0; i < 6; i++) xv[i] = 0.1f * (float)(i + 1);
    for (int i = 0; i < 9; i++) wv[i] = 0.3f - 0.07f * (float)i;
    df_tensor *vals[2] = {new_f32(2, d, xv), new_f32(2, dw, wv)};
    df_output fetches[3] = {loss, dx[0], dx[1]};
    df_schedule_stats ss;
    sched_compare(g, xs, vals, 2, fetches, 3, &ss);
    CHECK_EQ_INT(ss.static_loops, 2);          /* the forward loop and its gradient loop */
    /* with threads too: its MatMuls are small and in a chain, nothing to overlap */
    df_session *s = sched_session(g, 2, 0);
    df_tensor *o[3] = {0};
    df_status st;
    CHECK(df_session_run(s, xs, vals, 2, fetches, o, 3, NULL, 0, &st) == DF_OK);
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.static_loops, 2);
    for (int i = 0; i < 3; i++) df_tensor_release(o[i]);
    df_session_free(s);
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    df_graph_free(g);
}

/* With threads, a loop whose body holds MatMuls that could overlap (of sizes the graph does not
   know: assumed big) keeps the tagged executor, which overlaps them; the same values. */
static void two_mm_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    df_output w = *(const df_output *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, df_tanh(g, df_matmul(g, v[1], w, 0, 0)), df_tanh(g, df_matmul(g, v[1], w, 0, 1)));
}

DF_TEST(sched_loop_with_overlapping_matmuls_on_threads_stays_tagged) {
    df_graph *g = df_graph_new();
    int64_t u[2] = {-1, -1}, d[2] = {4, 4};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, u), w = df_placeholder(g, "w", DF_FLOAT, 2, u);
    df_output init[2] = {df_scalar_i32(g, 0), x}, out[2];
    CHECK(df_while_loop(g, 2, init, grad_cond, two_mm_body, &w, NULL, out) == DF_OK);
    float xv[16], wv[16];
    for (int i = 0; i < 16; i++) { xv[i] = 0.05f * (float)(i + 1); wv[i] = 0.2f - 0.03f * (float)i; }
    df_tensor *vals[2] = {new_f32(2, d, xv), new_f32(2, d, wv)};
    df_output xs[2] = {x, w};
    df_schedule_stats ss;
    sched_compare(g, xs, vals, 2, &out[1], 1, &ss);
    CHECK_EQ_INT(ss.static_loops, 1);                   /* one thread: static */
    df_session *s = sched_session(g, 2, 0);
    df_tensor *o = NULL;
    df_status st;
    CHECK(df_session_run(s, xs, vals, 2, &out[1], &o, 1, NULL, 0, &st) == DF_OK);
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.static_loops, 0);
    df_tensor_release(o);
    df_session_free(s);
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    df_graph_free(g);
}

/* One session run from 4 threads at once: static loops and flat runs share the executor. */
typedef struct { df_session *s; df_output out, n; int bad; } race_arg;
static void *race_main(void *p) {
    race_arg *a = (race_arg *)p;
    for (int r = 0; r < 30; r++) {
        df_tensor *nv = df_tensor_scalar_i32(50 + r), *o[2] = {0};
        df_status st;
        if (df_session_run(a->s, &a->n, &nv, 1, &a->out, o, 1, NULL, 0, &st) != DF_OK ||
            *(const int32_t *)df_tensor_data(o[0]) != 50 + r) a->bad++;
        df_tensor_release(o[0]);
        df_tensor_release(nv);
    }
    return NULL;
}
DF_TEST(sched_shared_session_from_threads) {
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 1.0f)}, out[2];
    CHECK(df_while_loop(g, 2, init, lt_cond, inc_body, &n, NULL, out) == DF_OK);
    df_session *s = sched_session(g, 2, 0);
    pthread_t th[4];
    race_arg a[4];
    for (int i = 0; i < 4; i++) { a[i].s = s; a[i].out = out[0]; a[i].n = n; a[i].bad = 0; pthread_create(&th[i], NULL, race_main, &a[i]); }
    for (int i = 0; i < 4; i++) { pthread_join(th[i], NULL); CHECK_EQ_INT(a[i].bad, 0); }
    df_schedule_stats ss;
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.static_loops, 120);
    df_session_free(s);
    df_graph_free(g);
}

/* Identities the schedule elides (their producer writes the reader's slot): chains of them, one
   read twice (so not elided), one feeding the next iteration and an output after the loop. */
static void ident_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    df_output a = df_identity(g, df_identity(g, v[0]));          /* a chain: both elided */
    df_output b = df_identity(g, v[1]);                           /* read twice below */
    next[0] = df_add(g, a, df_scalar_i32(g, 1));
    next[1] = df_add(g, df_mul(g, b, df_scalar_f32(g, 0.5f)), df_identity(g, df_cast(g, a, DF_FLOAT)));
    next[2] = df_identity(g, df_add(g, v[2], b));
}

DF_TEST(sched_loop_elided_identities_equal_to_tagged) {
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[3] = {df_scalar_i32(g, 0), df_scalar_f32(g, 3.0f), df_scalar_f32(g, 0.25f)}, out[3];
    CHECK(df_while_loop(g, 3, init, lt_cond, ident_body, &n, NULL, out) == DF_OK);
    df_output fetches[4] = {out[0], out[1], out[2], df_identity(g, out[2])};
    int ns[4] = {0, 1, 2, 37};
    for (int k = 0; k < 4; k++) {
        df_tensor *nv = df_tensor_scalar_i32(ns[k]);
        df_schedule_stats ss;
        sched_compare(g, &n, &nv, 1, fetches, 4, &ss);
        CHECK_EQ_INT(ss.static_loops, 1);
        df_tensor_release(nv);
    }
    df_graph_free(g);
}

/* Borrowed values (an invariant, a Const) read by kernels in every iteration: never changed in
   place (a kernel may reuse an input it holds alone), and passed on by a kernel (Reshape,
   StopGradient) with a reference of their own. The fed tensor and the Const stay as they were. */
typedef struct { df_output c, c2, k; } borrow_user;
static df_output bcond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_i32(g, 9)); }
static void bbody(df_graph *g, void *user, const df_output *v, df_output *next) {
    const borrow_user *u = (const borrow_user *)user;
    int64_t d4[1] = {4};
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], u->c2);                                  /* c2: an invariant */
    next[2] = df_add(g, df_mul(g, v[2], u->k), df_reshape(g, df_stop_gradient(g, u->c), 1, d4));
    next[3] = df_neg(g, u->c2);                /* would reuse its input were it held alone */
}

DF_TEST(sched_loop_borrowed_values_stay_unchanged) {
    df_graph *g = df_graph_new();
    int64_t d4[1] = {4};
    float cv[4] = {1.0f, 2.0f, 3.0f, 4.0f}, kv[4] = {0.5f, 0.25f, 2.0f, 1.0f}, zv[4] = {0};
    df_tensor *kt = new_f32(1, d4, kv);
    borrow_user u;
    df_output c = df_placeholder(g, "c", DF_FLOAT, 1, d4);
    u.c = df_mul(g, c, df_scalar_f32(g, 1.0f));   /* values only the loop holds */
    u.c2 = df_mul(g, c, df_scalar_f32(g, 2.0f));
    u.k = df_const(g, kt);
    df_tensor *zt = new_f32(1, d4, zv);
    df_output init[4] = {df_scalar_i32(g, 0), df_const(g, zt), df_const(g, zt), df_const(g, zt)}, out[4];
    df_tensor_release(zt);
    CHECK(df_while_loop(g, 4, init, bcond, bbody, &u, NULL, out) == DF_OK);
    df_tensor *ct = new_f32(1, d4, cv);
    df_schedule_stats ss;
    sched_compare(g, &c, &ct, 1, out, 4, &ss);
    CHECK_EQ_INT(ss.static_loops, 1);
    df_session *s = sched_session(g, 1, 0);
    df_tensor *r[4] = {0};
    df_status st;
    for (int rep = 0; rep < 3; rep++) {
        CHECK_MSG(df_session_run(s, &c, &ct, 1, out, r, 4, NULL, 0, &st) == DF_OK, "%s", st.message);
        if (st.code) break;
        const float *v1 = (const float *)df_tensor_data(r[1]), *v3 = (const float *)df_tensor_data(r[3]);
        for (int i = 0; i < 4; i++) {
            CHECK(v1[i] == 18.0f * cv[i]);                            /* c2 added 9 times, unchanged */
            CHECK(v3[i] == -2.0f * cv[i]);
        }
        for (int i = 0; i < 4; i++) df_tensor_release(r[i]);
    }
    CHECK(!memcmp(df_tensor_data(ct), cv, sizeof cv));               /* the caller's feed */
    CHECK(!memcmp(df_tensor_data(kt), kv, sizeof kv));               /* the graph's Const */
    df_session_free(s);
    df_tensor_release(ct);
    df_tensor_release(kt);
    df_graph_free(g);
}

/* Regressions: a kept forward (an Identity of an invariant) whose reader was elided passes its
   value to where the elided one passed it; a loop variable set from an invariant's Identity;
   and a Merge numbered after its NextIteration's producer (a long chain before the loop, a body
   that does not read the variable) still takes the last iteration's value, not this one's. */
typedef struct { df_output n, c; } fwd_user;
static df_output fwd_cond(df_graph *g, void *user, const df_output *v) { return df_less(g, v[0], ((const fwd_user *)user)->n); }
static void fwd_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const fwd_user *u = (const fwd_user *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_identity(g, df_identity(g, u->c)));
    next[2] = df_identity(g, u->c);
    next[3] = df_mul(g, df_cast(g, v[0], DF_FLOAT), df_scalar_f32(g, 2.0f));   /* does not read v[3] */
}

DF_TEST(sched_loop_forward_chains_and_merge_order) {
    df_graph *g = df_graph_new();
    fwd_user u;
    u.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    u.c = df_placeholder(g, "c", DF_FLOAT, 0, NULL);
    df_output x3 = df_scalar_f32(g, 0.5f);
    for (int k = 0; k < 12; k++) x3 = df_tanh(g, x3);           /* numbered well before the loop */
    df_output init[4] = {df_scalar_i32(g, 0), df_scalar_f32(g, 1.0f), df_scalar_f32(g, -1.0f), x3}, out[4];
    CHECK(df_while_loop(g, 4, init, fwd_cond, fwd_body, &u, NULL, out) == DF_OK);
    df_output feeds[2] = {u.n, u.c};
    int ns[3] = {0, 1, 3};
    for (int k = 0; k < 3; k++) {
        df_tensor *vals[2] = {df_tensor_scalar_i32(ns[k]), df_tensor_scalar_f32(0.5f)};
        df_schedule_stats ss;
        sched_compare(g, feeds, vals, 2, out, 4, &ss);
        CHECK_EQ_INT(ss.static_loops, 1);
        df_session *s = sched_session(g, 1, 0);
        df_tensor *r[4] = {0};
        df_status st;
        CHECK_MSG(df_session_run(s, feeds, vals, 2, out, r, 4, NULL, 0, &st) == DF_OK, "%s", st.message);
        if (!st.code) {
            CHECK(*(const float *)df_tensor_data(r[1]) == 1.0f + 0.5f * (float)ns[k]);
            CHECK(*(const float *)df_tensor_data(r[2]) == (ns[k] ? 0.5f : -1.0f));
            if (ns[k]) CHECK(*(const float *)df_tensor_data(r[3]) == 2.0f * (float)(ns[k] - 1));
        }
        for (int i = 0; i < 4; i++) df_tensor_release(r[i]);
        df_session_free(s);
        df_tensor_release(vals[0]);
        df_tensor_release(vals[1]);
    }
    df_graph_free(g);
}

/* A traced run records every node with the tagged executor; the untraced runs stay static. */
DF_TEST(sched_traced_runs_use_the_tagged_executor) {
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 1.0f)}, out[2];
    CHECK(df_while_loop(g, 2, init, lt_cond, inc_body, &n, NULL, out) == DF_OK);
    df_session *s = sched_session(g, 1, 0);
    df_tensor *nv = df_tensor_scalar_i32(3), *o = NULL;
    df_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.trace_level = DF_TRACE_FULL;
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    df_status st;
    CHECK(df_session_run_with_options(s, &ro, &n, &nv, 1, out, &o, 1, NULL, 0, &md, &st) == DF_OK);
    CHECK(md.n_nodes > 10);
    df_schedule_stats ss;
    df_session_schedule_stats(s, &ss);
    CHECK_EQ_INT(ss.static_loops, 0);
    df_tensor_release(o);
    df_run_metadata_clear(&md);
    df_tensor_release(nv);
    df_session_free(s);
    df_graph_free(g);
}

/* Loops the static schedule must leave to the tagged executor, which starts iterating before
   every Enter has its value: an invariant that an accumulator's take makes, while the loop's
   body applies the gradients it waits for (waiting for every Enter would hang). */
static df_output acc_handle, acc_taken;
static df_output acc_cond(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_i32(g, 3)); }
static void acc_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    (void)u;
    df_node *ap = df_accumulator_apply_gradient(g, acc_handle, df_scalar_i64(g, 0), df_scalar_f32(g, 1.0f));
    df_graph_push_control_deps(g, &ap, 1);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    df_graph_pop_control_deps(g);
    next[1] = df_add(g, v[1], acc_taken);
}
DF_TEST(sched_loop_whose_enter_waits_on_its_body_stays_tagged) {
    for (int dyn = 0; dyn < 2; dyn++) {
        df_graph *g = df_graph_new();
        df_op_builder *b = df_op_new(g, "ConditionalAccumulator", "acc");
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        df_op_set_attr_shape(b, "shape", 0, NULL);
        acc_handle.node = df_op_finish(b);
        acc_handle.index = 0;
        acc_taken = df_accumulator_take_gradient(g, acc_handle, df_scalar_i32(g, 1));
        df_output init[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 0.0f)}, outs[2];
        CHECK(df_while_loop(g, 2, init, acc_cond, acc_body, NULL, NULL, outs) == DF_OK);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.run_timeout_ms = 5000;
        o.dynamic_only = dyn;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        df_tensor *r = NULL;
        df_session_run(s, NULL, NULL, 0, &outs[1], &r, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (r) CHECK_NEAR(*(const float *)df_tensor_data(r), 3.0, 0);
        df_schedule_stats ss;
        df_session_schedule_stats(s, &ss);
        CHECK_EQ_INT(ss.static_loops, 0);
        df_tensor_release(r);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* A frame made by hand without a NextIteration: the tagged executor ends it after one iteration
   (nothing carries a value on), however the predicate reads. */
static df_node *hand_op1(df_graph *g, const char *t, const char *nm, df_output a) {
    df_op_builder *b = df_op_new(g, t, nm);
    df_op_add_input(b, a);
    return df_op_finish(b);
}
static df_node *hand_enter(df_graph *g, const char *nm, df_output d) {
    df_op_builder *b = df_op_new(g, "Enter", nm);
    df_op_add_input(b, d);
    df_op_set_attr_string(b, "frame_name", "f");
    df_op_set_attr_bool(b, "is_constant", 1);
    return df_op_finish(b);
}
DF_TEST(sched_frame_without_next_iteration_ends_after_one) {
    for (int dyn = 0; dyn < 2; dyn++) {
        df_graph *g = df_graph_new();
        df_node *p = hand_enter(g, "p", df_scalar_bool(g, 1));
        df_node *v = hand_enter(g, "v", df_scalar_f32(g, 5.0f));
        df_node *lc = hand_op1(g, "LoopCond", "lc", (df_output){p, 0});
        df_op_builder *b = df_op_new(g, "Switch", "sw");
        df_op_add_input(b, (df_output){v, 0});
        df_op_add_input(b, (df_output){lc, 0});
        df_node *sw = df_op_finish(b);
        df_node *targets[2] = {hand_op1(g, "Exit", "exit", (df_output){sw, 0}), hand_op1(g, "Identity", "body", (df_output){sw, 1})};
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.run_timeout_ms = 5000;
        o.dynamic_only = dyn;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 2, &st);
        CHECK_OK(&st);
        df_schedule_stats ss;
        df_session_schedule_stats(s, &ss);
        CHECK_EQ_INT(ss.static_loops, 0);
        df_session_free(s);
        df_graph_free(g);
    }
}
