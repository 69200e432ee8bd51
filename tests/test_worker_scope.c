/* Resource scopes on a worker: each master (connection) of a worker has its own variables
   (VariableV2 and VarHandleOp) and queues, unless a node names a container, which every master
   shares, as TensorFlow's resource containers are shared by the sessions of one server. A
   master's resources go when it leaves: a later master does not see them, and their memory goes
   back (RSS stays flat over 200 masters that each fill a 4 MiB variable). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static void quiet(void *user, const char *line) { (void)user; (void)line; }
static df_worker *start_worker(char *target, size_t n) {
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.log = quiet;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "df_worker_start: %s", st.message);
    if (w) snprintf(target, n, "127.0.0.1:%d", df_worker_port(w));
    return w;
}
static df_session *master(df_graph *g, const char *target) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "df_session_new: %s", st.message);
    return s;
}
static df_code run_target(df_session *s, df_node *t, df_status *st) { return df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &t, 1, st); }
/* The float scalar fetched by s (NAN with the status set when the run fails). */
static float fetch_f32(df_session *s, df_output o, df_status *st) {
    df_tensor *v = NULL;
    float x = NAN;
    if (df_session_run(s, NULL, NULL, 0, &o, &v, 1, NULL, 0, st) == DF_OK && v) x = *(const float *)df_tensor_data(v);
    df_tensor_release(v);
    return x;
}
static int32_t fetch_i32(df_session *s, df_output o, df_status *st) {
    df_tensor *v = NULL;
    int32_t x = -1;
    if (df_session_run(s, NULL, NULL, 0, &o, &v, 1, NULL, 0, st) == DF_OK && v) x = *(const int32_t *)df_tensor_data(v);
    df_tensor_release(v);
    return x;
}

/* ---- VariableV2 ---- */
typedef struct refvar { df_graph *g; df_output read; df_node *set5, *set7; } refvar;
static refvar refvar_graph(const char *container) {
    refvar r;
    r.g = df_graph_new();
    df_graph_push_device(r.g, "/job:worker/task:0");
    df_op_builder *b = df_op_new(r.g, "VariableV2", "v");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 0, NULL);
    if (container) df_op_set_attr_string(b, "container", container);
    df_output v = {df_op_finish(b), 0};
    r.set5 = df_assign(r.g, v, df_scalar_f32(r.g, 5));
    r.set7 = df_assign(r.g, v, df_scalar_f32(r.g, 7));
    r.read = df_identity(r.g, v);
    df_graph_pop_device(r.g);
    CHECK_OK(df_graph_status(r.g));
    return r;
}

DF_TEST(scope_variable_of_one_master_is_not_another_masters) {
    char target[64];
    df_worker *w = start_worker(target, sizeof target);
    if (!w) return;
    refvar r = refvar_graph(NULL);
    df_session *a = master(r.g, target), *b = master(r.g, target);
    df_status st;
    if (a && b) {
        CHECK_EQ_INT(run_target(a, r.set5, &st), DF_OK);
        CHECK_NEAR(fetch_f32(a, r.read, &st), 5, 0);
        fetch_f32(b, r.read, &st);          /* B's v has no value: A's is not B's */
        CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "uninitialized value v");
        CHECK_EQ_INT(run_target(b, r.set7, &st), DF_OK);
        CHECK_NEAR(fetch_f32(b, r.read, &st), 7, 0);
        CHECK_NEAR(fetch_f32(a, r.read, &st), 5, 0);
        CHECK_OK(&st);
    }
    df_session_free(a);
    /* a later master has a v of its own, without a value */
    df_session *c = master(r.g, target);
    if (c) {
        fetch_f32(c, r.read, &st);
        CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "uninitialized value v");
    }
    if (b) CHECK_NEAR(fetch_f32(b, r.read, &st), 7, 0);   /* (B's own is still there) */
    df_session_free(b);
    df_session_free(c);
    df_graph_free(r.g);
    df_worker_stop(w);
}

DF_TEST(scope_variable_in_a_named_container_is_shared_by_masters) {
    char target[64];
    df_worker *w = start_worker(target, sizeof target);
    if (!w) return;
    refvar r = refvar_graph("shared");
    df_session *a = master(r.g, target), *b = master(r.g, target);
    df_status st;
    if (a && b) {
        CHECK_EQ_INT(run_target(a, r.set5, &st), DF_OK);
        CHECK_NEAR(fetch_f32(b, r.read, &st), 5, 0);
        CHECK_OK(&st);
        CHECK_EQ_INT(run_target(b, r.set7, &st), DF_OK);
        CHECK_NEAR(fetch_f32(a, r.read, &st), 7, 0);
        CHECK_OK(&st);
    }
    df_session_free(a);
    df_session_free(b);
    /* the container outlives the masters that used it */
    df_session *c = master(r.g, target);
    if (c) { CHECK_NEAR(fetch_f32(c, r.read, &st), 7, 0); CHECK_OK(&st); }
    df_session_free(c);
    /* the same name outside the container is another variable, private to its master */
    refvar plain = refvar_graph(NULL);
    df_session *d = master(plain.g, target);
    if (d) { fetch_f32(d, plain.read, &st); CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "uninitialized value v"); }
    df_session_free(d);
    df_graph_free(plain.g);
    df_graph_free(r.g);
    df_worker_stop(w);
}

/* ---- VarHandleOp ---- */
typedef struct resvar { df_graph *g; df_output read; df_node *set5, *set7; } resvar;
static df_node *assign_variable(df_graph *g, df_output h, df_output v) {
    df_op_builder *b = df_op_new(g, "AssignVariableOp", NULL);
    df_op_add_input(b, h);
    df_op_add_input(b, v);
    return df_op_finish(b);
}
static resvar resvar_graph(const char *container) {
    resvar r;
    r.g = df_graph_new();
    df_graph_push_device(r.g, "/job:worker/task:0");
    df_op_builder *b = df_op_new(r.g, "VarHandleOp", "rv");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 0, NULL);
    df_op_set_attr_string(b, "shared_name", "rv");
    if (container) df_op_set_attr_string(b, "container", container);
    df_output h = {df_op_finish(b), 0};
    r.set5 = assign_variable(r.g, h, df_scalar_f32(r.g, 5));
    r.set7 = assign_variable(r.g, h, df_scalar_f32(r.g, 7));
    b = df_op_new(r.g, "ReadVariableOp", NULL);
    df_op_add_input(b, h);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    r.read = (df_output){df_op_finish(b), 0};
    df_graph_pop_device(r.g);
    CHECK_OK(df_graph_status(r.g));
    return r;
}
DF_TEST(scope_resource_variable_is_per_master_unless_in_a_container) {
    char target[64];
    df_worker *w = start_worker(target, sizeof target);
    if (!w) return;
    df_status st;
    for (int shared = 0; shared < 2; shared++) {
        resvar r = resvar_graph(shared ? "shared" : NULL);
        df_session *a = master(r.g, target), *b = master(r.g, target);
        if (a && b) {
            CHECK_EQ_INT(run_target(a, r.set5, &st), DF_OK);
            float seen = fetch_f32(b, r.read, &st);
            if (shared) { CHECK_OK(&st); CHECK_NEAR(seen, 5, 0); }
            else CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "Could not find variable rv");
            CHECK_EQ_INT(run_target(b, r.set7, &st), DF_OK);
            CHECK_NEAR(fetch_f32(a, r.read, &st), shared ? 7 : 5, 0);
            CHECK_NEAR(fetch_f32(b, r.read, &st), 7, 0);
            CHECK_OK(&st);
        }
        df_session_free(a);
        df_session_free(b);
        df_session *c = master(r.g, target);
        if (c) {
            float seen = fetch_f32(c, r.read, &st);
            if (shared) { CHECK_OK(&st); CHECK_NEAR(seen, 7, 0); }
            else CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "Could not find variable rv");
        }
        df_session_free(c);
        df_graph_free(r.g);
    }
    df_worker_stop(w);
}

/* ---- FIFOQueueV2 ---- */
DF_TEST(scope_queue_is_per_master_unless_in_a_container) {
    char target[64];
    df_worker *w = start_worker(target, sizeof target);
    if (!w) return;
    df_status st;
    for (int shared = 0; shared < 2; shared++) {
        df_graph *g = df_graph_new();
        df_graph_push_device(g, "/job:worker/task:0");
        df_dtype f = DF_FLOAT;
        df_op_builder *b = df_op_new(g, "FIFOQueueV2", "q");
        df_op_set_attr_type_list(b, "component_types", &f, 1);
        df_op_set_attr_int(b, "capacity", 8);
        df_op_set_attr_string(b, "shared_name", "q");
        if (shared) df_op_set_attr_string(b, "container", "shared");
        df_output q = {df_op_finish(b), 0};
        df_output one = df_scalar_f32(g, 1.5f), item;
        df_node *put = df_queue_enqueue(g, q, 1, &one);
        df_output size = df_queue_size(g, q);
        df_queue_dequeue(g, q, 1, &item);
        df_graph_pop_device(g);
        CHECK_OK(df_graph_status(g));
        df_session *a = master(g, target), *bm = master(g, target);
        if (a && bm) {
            CHECK_EQ_INT(run_target(a, put, &st), DF_OK);
            CHECK_EQ_INT(run_target(a, put, &st), DF_OK);
            CHECK_EQ_INT(fetch_i32(a, size, &st), 2);
            CHECK_EQ_INT(fetch_i32(bm, size, &st), shared ? 2 : 0);
            CHECK_OK(&st);
            if (shared) CHECK_NEAR(fetch_f32(bm, item, &st), 1.5f, 0);   /* B takes what A put */
            CHECK_EQ_INT(fetch_i32(a, size, &st), shared ? 1 : 2);
            CHECK_OK(&st);
        }
        df_session_free(a);                  /* (its private queue goes, elements and all) */
        df_session_free(bm);
        df_session *c = master(g, target);
        if (c) { CHECK_EQ_INT(fetch_i32(c, size, &st), shared ? 1 : 0); CHECK_OK(&st); }
        df_session_free(c);
        df_graph_free(g);
    }
    df_worker_stop(w);
}

/* ---- a master's memory goes back when it leaves ---- */
static double rss_mib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}
/* A master whose graph fills a 4 MiB variable of a name of its own (as a peer filling new
   variables until the worker dies would). */
static df_graph *big_graph(int k, df_node **init, df_output *sum) {
    df_graph *g = df_graph_new();
    char name[32];
    snprintf(name, sizeof name, "big_%d", k);
    df_graph_push_device(g, "/job:worker/task:0");
    df_output big = df_variable(g, name, DF_FLOAT, 1, (const int64_t[]){1 << 20});
    df_op_builder *b = df_op_new(g, "Fill", NULL);
    df_op_add_input(b, df_reshape(g, df_scalar_i32(g, 1 << 20), 1, (const int64_t[]){1}));
    df_op_add_input(b, df_scalar_f32(g, 3));
    *init = df_assign(g, big, (df_output){df_op_finish(b), 0});
    *sum = df_reduce_sum(g, big, 0, NULL, 0);
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    return g;
}
DF_TEST(scope_variables_of_a_master_that_left_are_freed) {
    char target[64];
    df_worker *w = start_worker(target, sizeof target);
    if (!w) return;
    df_status st;
    double before = 0;
    int ok = 1;
    for (int k = 0; k < 200 && ok; k++) {
        if (k == 20) before = rss_mib();     /* (after the first ones: allocators warmed up) */
        df_node *init;
        df_output sum;
        df_graph *g = big_graph(k, &init, &sum);
        df_session *s = master(g, target);
        ok = s && run_target(s, init, &st) == DF_OK;
        CHECK_MSG(ok, "master %d: %s", k, st.message);
        if (ok && k % 50 == 0) {
            df_tensor *v = NULL;
            CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &sum, &v, 1, NULL, 0, &st), DF_OK);
            CHECK(v && *(const float *)df_tensor_data(v) == 3.0f * (1 << 20));
            df_tensor_release(v);
        }
        df_session_free(s);
        df_graph_free(g);
    }
    /* the last masters' connections close on the worker's threads: a moment for them */
    struct timespec pause = {0, 200 * 1000000L};
    nanosleep(&pause, NULL);
    double after = rss_mib();
    printf("    RSS over 180 masters that each filled a 4 MiB variable: %.0f MiB -> %.0f MiB\n", before, after);
    /* kept, they would be 720 MiB; the allowance covers a sanitizer's quarantine of freed memory */
    if (before > 0 && after > 0) CHECK_MSG(after - before < 360, "RSS grew by %.0f MiB", after - before);
    df_worker_stop(w);
}

/* Masters on threads of their own, each with its private variable and a shared counter: no
   master sees another's value while they all run, and the shared one counts every update. */
#ifndef DF_NO_THREADS
#include <pthread.h>
typedef struct racer { const char *target; df_graph *g; df_output mine, counter; df_node *bump, *set_mine; int id, bad; } racer;
static void *race_main(void *arg) {
    racer *r = (racer *)arg;
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = r->target;
    df_status st;
    df_session *s = df_session_new(r->g, &o, &st);
    if (!s) { r->bad = 1; return NULL; }
    df_tensor *idv = df_tensor_scalar_f32((float)r->id);
    df_output feed = df_graph_find(r->g, "value") ? (df_output){df_graph_find(r->g, "value"), 0} : (df_output){NULL, 0};
    for (int k = 0; k < 20 && !r->bad; k++) {
        df_tensor *got = NULL;
        if (df_session_run(s, &feed, &idv, 1, NULL, NULL, 0, &r->set_mine, 1, &st) != DF_OK) r->bad = 2;
        else if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &r->bump, 1, &st) != DF_OK) r->bad = 3;
        else if (df_session_run(s, NULL, NULL, 0, &r->mine, &got, 1, NULL, 0, &st) != DF_OK) r->bad = 4;
        else if (*(const float *)df_tensor_data(got) != (float)r->id) r->bad = 5;
        df_tensor_release(got);
    }
    df_tensor_release(idv);
    df_session_free(s);
    return NULL;
}
DF_TEST(scope_masters_at_once_keep_their_own_variables) {
    char target[64];
    df_worker *w = start_worker(target, sizeof target);
    if (!w) return;
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/job:worker/task:0");
    df_output value = df_placeholder(g, "value", DF_FLOAT, 0, NULL);
    df_output mine = df_variable(g, "mine", DF_FLOAT, 0, NULL);
    df_node *set_mine = df_assign(g, mine, value);
    df_op_builder *b = df_op_new(g, "VariableV2", "counter");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 0, NULL);
    df_op_set_attr_string(b, "container", "shared");
    df_output counter = {df_op_finish(b), 0};
    df_node *zero = df_assign(g, counter, df_scalar_f32(g, 0));
    df_node *bump = df_assign_add(g, counter, df_scalar_f32(g, 1));
    df_output read_mine = df_identity(g, mine), read_counter = df_identity(g, counter);
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s0 = master(g, target);
    if (s0) CHECK_EQ_INT(run_target(s0, zero, &st), DF_OK);
    enum { N = 4 };
    racer r[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        r[i] = (racer){target, g, read_mine, read_counter, bump, set_mine, i + 1, 0};
        pthread_create(&t[i], NULL, race_main, &r[i]);
    }
    for (int i = 0; i < N; i++) { pthread_join(t[i], NULL); CHECK_MSG(!r[i].bad, "master %d: failure %d", i + 1, r[i].bad); }
    if (s0) {
        CHECK_NEAR(fetch_f32(s0, read_counter, &st), N * 20, 0);
        fetch_f32(s0, read_mine, &st);       /* s0 never set its own */
        CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "uninitialized value mine");
    }
    df_session_free(s0);
    df_graph_free(g);
    df_worker_stop(w);
}
#endif
