/* test_queue.c - FIFOQueueV2 and the queue ops: order, EnqueueMany/DequeueMany, capacity,
   close, bad input, shared queues, GraphDef round trips; several threads each calling
   df_session_run on one session (producers and consumers); a waiting op released by a close,
   by an abort of its run and by df_session_free; waits inside a while loop and across
   partitions. Each threaded test runs with a pool (the waiting node is parked), with
   inter_op_threads 1 and deterministic (the caller's thread waits). Built with DF_NO_THREADS
   (library and this file), the tests check that nothing waits: what would wait fails. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <signal.h>
#include <time.h>
#include <unistd.h>
#ifndef DF_NO_THREADS
#include <pthread.h>
#endif

/* ---- Watchdog: a hang fails loudly instead of stalling the test binary ---- */
static const char *volatile qt_watch_name = "";
static void qt_watch_fire(int sig) {
    static const char m[] = "\n*** timed out (queue hang?) in test ";
    const char *n = qt_watch_name;
    size_t len = 0;
    (void)sig;
    while (n[len]) len++;
    if (write(2, m, sizeof m - 1) < 0 || write(2, n, len) < 0 || write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}
static void qt_watch(const char *name, unsigned seconds) {
    qt_watch_name = name;
    signal(SIGALRM, qt_watch_fire);
    alarm(seconds);
}
static void qt_unwatch(void) { alarm(0); }

static double qt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Session configurations: a pool (waiting nodes park), one inter-op thread and deterministic
   (the calling thread waits). */
typedef struct { int threads, deterministic; const char *name; } qt_cfg;
static const qt_cfg qt_configs[] = {{2, 0, "pool"}, {1, 0, "one thread"}, {2, 1, "deterministic"}};
#define QT_N_CONFIGS ((int)(sizeof qt_configs / sizeof *qt_configs))

static df_session *qt_session(df_graph *g, qt_cfg c) {
    df_session_options o = {0};
    o.inter_op_threads = c.threads;
    o.deterministic = c.deterministic;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}

/* A float-and-int32 queue with placeholders to enqueue one tuple, and its ops. */
typedef struct qt_graph {
    df_graph *g;
    df_output q, xf, xi, size, deq[2], deq_many[2], n, closed;
    df_node *enq, *enq_many, *close, *close_cancel;
    df_output bf, bi;            /* EnqueueMany placeholders: float [-1], int32 [-1] */
} qt_graph;

static void qt_build(qt_graph *t, int capacity, const char *shared) {
    memset(t, 0, sizeof *t);
    t->g = df_graph_new();
    df_dtype types[2] = {DF_FLOAT, DF_INT32};
    int ranks[2] = {0, 0};
    t->q = df_fifo_queue_with_shapes(t->g, 2, types, ranks, NULL, capacity, shared);
    t->xf = df_placeholder(t->g, "xf", DF_FLOAT, 0, NULL);
    t->xi = df_placeholder(t->g, "xi", DF_INT32, 0, NULL);
    df_output comps[2] = {t->xf, t->xi};
    t->enq = df_queue_enqueue(t->g, t->q, 2, comps);
    int64_t any = -1;
    t->bf = df_placeholder(t->g, "bf", DF_FLOAT, 1, &any);
    t->bi = df_placeholder(t->g, "bi", DF_INT32, 1, &any);
    df_output batch[2] = {t->bf, t->bi};
    t->enq_many = df_queue_enqueue_many(t->g, t->q, 2, batch);
    CHECK_EQ_INT(df_queue_dequeue(t->g, t->q, 2, t->deq), DF_OK);
    t->n = df_placeholder(t->g, "n", DF_INT32, 0, NULL);
    CHECK_EQ_INT(df_queue_dequeue_many(t->g, t->q, t->n, 2, t->deq_many), DF_OK);
    t->size = df_queue_size(t->g, t->q);
    t->closed = df_queue_is_closed(t->g, t->q);
    t->close = df_queue_close(t->g, t->q, 0);
    t->close_cancel = df_queue_close(t->g, t->q, 1);
    CHECK_OK(df_graph_status(t->g));
}

static df_code qt_enqueue(df_session *s, const qt_graph *t, float f, int32_t i, df_status *st) {
    df_tensor *v[2] = {df_tensor_scalar_f32(f), df_tensor_scalar_i32(i)};
    df_output feeds[2] = {t->xf, t->xi};
    df_code c = df_session_run(s, feeds, v, 2, NULL, NULL, 0, (df_node *const *)&t->enq, 1, st);
    df_tensor_release(v[0]);
    df_tensor_release(v[1]);
    return c;
}
static df_code qt_dequeue(df_session *s, const qt_graph *t, float *f, int32_t *i, df_status *st) {
    df_tensor *out[2] = {NULL, NULL};
    df_code c = df_session_run(s, NULL, NULL, 0, t->deq, out, 2, NULL, 0, st);
    /* A failed dequeue gives (-1, -1): the tests go on after a failed CHECK_OK and compare the
       values, which must then fail with a number rather than read what the stack held. */
    *f = -1.0f;
    *i = -1;
    if (c == DF_OK) {
        *f = *(const float *)df_tensor_data(out[0]);
        *i = *(const int32_t *)df_tensor_data(out[1]);
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    return c;
}
static df_code qt_target(df_session *s, df_node *n, df_status *st) {
    return df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &n, 1, st);
}
static int32_t qt_size(df_session *s, const qt_graph *t) {
    df_tensor *out = NULL;
    df_status st;
    df_session_run(s, NULL, NULL, 0, &t->size, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    int32_t n = out ? *(const int32_t *)df_tensor_data(out) : -1;
    df_tensor_release(out);
    return n;
}
/* DequeueMany of n into the caller's arrays (NULL: not read). */
static df_code qt_dequeue_many(df_session *s, const qt_graph *t, int32_t n, float *f, int32_t *i, df_status *st) {
    df_tensor *nv = df_tensor_scalar_i32(n), *out[2] = {NULL, NULL};
    df_code c = df_session_run(s, &t->n, &nv, 1, t->deq_many, out, 2, NULL, 0, st);
    if (c == DF_OK) {
        CHECK_EQ_INT(df_tensor_rank(out[0]), 1);
        CHECK_EQ_INT(df_tensor_dim(out[0], 0), n);
        CHECK_EQ_INT(df_tensor_dim(out[1], 0), n);
        if (f) memcpy(f, df_tensor_data(out[0]), (size_t)n * sizeof(float));
        if (i) memcpy(i, df_tensor_data(out[1]), (size_t)n * sizeof(int32_t));
    }
    df_tensor_release(nv);
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    return c;
}
static df_code qt_enqueue_many(df_session *s, const qt_graph *t, int n, const float *f, const int32_t *i, df_status *st) {
    int64_t dim = n;
    df_tensor *v[2] = {df_tensor_from_data(DF_FLOAT, 1, &dim, f, (size_t)n * sizeof(float), NULL),
                       df_tensor_from_data(DF_INT32, 1, &dim, i, (size_t)n * sizeof(int32_t), NULL)};
    df_output feeds[2] = {t->bf, t->bi};
    df_code c = df_session_run(s, feeds, v, 2, NULL, NULL, 0, (df_node *const *)&t->enq_many, 1, st);
    df_tensor_release(v[0]);
    df_tensor_release(v[1]);
    return c;
}

/* ---- one thread ---- */

DF_TEST(queue_fifo_order_one_thread) {
    qt_graph t;
    qt_build(&t, -1, NULL);
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        df_session *s = qt_session(t.g, qt_configs[k]);
        df_status st;
        for (int i = 0; i < 20; i++) { qt_enqueue(s, &t, 0.5f * (float)i, 100 + i, &st); CHECK_OK(&st); }
        CHECK_EQ_INT(qt_size(s, &t), 20);
        for (int i = 0; i < 20; i++) {
            float f = -1;
            int32_t v = -1;
            qt_dequeue(s, &t, &f, &v, &st);
            CHECK_OK(&st);
            CHECK_NEAR(f, 0.5 * i, 0);
            CHECK_EQ_INT(v, 100 + i);
        }
        CHECK_EQ_INT(qt_size(s, &t), 0);
        df_session_free(s);
    }
    df_graph_free(t.g);
}

/* Enqueue and dequeue in one run: the dequeue's input waits on the enqueue (a control edge). */
DF_TEST(queue_enqueue_then_dequeue_in_one_run) {
    df_graph *g = df_graph_new();
    df_dtype f32 = DF_FLOAT;
    df_output q = df_fifo_queue(g, 1, &f32, 4, NULL);
    df_output x = df_scalar_f32(g, 7.5f);
    df_node *enq = df_queue_enqueue(g, q, 1, &x);
    df_graph_push_control_deps(g, &enq, 1);
    df_output y;
    CHECK_EQ_INT(df_queue_dequeue(g, df_identity(g, q), 1, &y), DF_OK);
    df_graph_pop_control_deps(g);
    CHECK_OK(df_graph_status(g));
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        df_session *s = qt_session(g, qt_configs[k]);
        df_status st;
        for (int rep = 0; rep < 3; rep++) {
            df_tensor *out = NULL;
            df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
            CHECK_OK(&st);
            if (out) CHECK_NEAR(*(const float *)df_tensor_data(out), 7.5, 0);
            df_tensor_release(out);
        }
        df_session_free(s);
    }
    df_graph_free(g);
}

DF_TEST(queue_many_shapes) {
    df_graph *g = df_graph_new();
    df_dtype types[2] = {DF_FLOAT, DF_INT32};
    int ranks[2] = {1, 0};
    int64_t d0[1] = {2};
    const int64_t *dims[2] = {d0, NULL};
    df_output q = df_fifo_queue_with_shapes(g, 2, types, ranks, dims, -1, NULL);
    int64_t bd[2] = {-1, 2}, bn = -1;
    df_output xb = df_placeholder(g, "xb", DF_FLOAT, 2, bd), yb = df_placeholder(g, "yb", DF_INT32, 1, &bn);
    df_output comps[2] = {xb, yb};
    df_node *enq = df_queue_enqueue_many(g, q, 2, comps);
    df_output three = df_scalar_i32(g, 3), many[2], one[2], zero[2];
    CHECK_EQ_INT(df_queue_dequeue_many(g, q, three, 2, many), DF_OK);
    CHECK_EQ_INT(df_queue_dequeue(g, q, 2, one), DF_OK);
    CHECK_EQ_INT(df_queue_dequeue_many(g, q, df_scalar_i32(g, 0), 2, zero), DF_OK);
    CHECK_OK(df_graph_status(g));
    /* static shapes: [3, 2] and [3]; [2] and [] */
    int64_t sd[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(many[0], sd), 2);
    CHECK_EQ_INT(sd[0], 3);
    CHECK_EQ_INT(sd[1], 2);
    CHECK_EQ_INT(df_output_shape(many[1], sd), 1);
    CHECK_EQ_INT(sd[0], 3);
    CHECK_EQ_INT(df_output_shape(one[0], sd), 1);
    CHECK_EQ_INT(sd[0], 2);
    CHECK_EQ_INT(df_output_shape(one[1], sd), 0);
    CHECK_EQ_INT(df_output_dtype(one[1]), DF_INT32);

    df_session *s = qt_session(g, qt_configs[0]);
    df_status st;
    float xs[8] = {0, 1, 10, 11, 20, 21, 30, 31};
    int32_t ys[4] = {0, 1, 2, 3};
    int64_t xd[2] = {4, 2}, yd = 4;
    df_tensor *v[2] = {df_tensor_from_data(DF_FLOAT, 2, xd, xs, sizeof xs, NULL), df_tensor_from_data(DF_INT32, 1, &yd, ys, sizeof ys, NULL)};
    df_session_run(s, comps, v, 2, NULL, NULL, 0, &enq, 1, &st);
    CHECK_OK(&st);
    df_tensor *out[2] = {NULL, NULL};
    df_session_run(s, NULL, NULL, 0, many, out, 2, NULL, 0, &st);
    CHECK_OK(&st);
    if (out[0] && out[1]) {
        CHECK_EQ_INT(df_tensor_dim(out[0], 0), 3);
        CHECK_EQ_INT(df_tensor_dim(out[0], 1), 2);
        const float *f = (const float *)df_tensor_data(out[0]);
        for (int i = 0; i < 6; i++) CHECK_NEAR(f[i], xs[i], 0);
        for (int i = 0; i < 3; i++) CHECK_EQ_INT(((const int32_t *)df_tensor_data(out[1]))[i], i);
    }
    df_tensor_release(out[0]); df_tensor_release(out[1]);
    out[0] = out[1] = NULL;
    df_session_run(s, NULL, NULL, 0, one, out, 2, NULL, 0, &st);
    CHECK_OK(&st);
    if (out[0] && out[1]) {
        CHECK_EQ_INT(df_tensor_rank(out[0]), 1);
        CHECK_NEAR(((const float *)df_tensor_data(out[0]))[1], 31, 0);
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(out[1]), 3);
    }
    df_tensor_release(out[0]); df_tensor_release(out[1]);
    out[0] = out[1] = NULL;
    df_session_run(s, NULL, NULL, 0, zero, out, 2, NULL, 0, &st);     /* n = 0 of an empty queue: empty, at once */
    CHECK_OK(&st);
    if (out[0]) { CHECK_EQ_INT(df_tensor_dim(out[0], 0), 0); CHECK_EQ_INT(df_tensor_dim(out[0], 1), 2); }
    df_tensor_release(out[0]); df_tensor_release(out[1]);
    df_tensor_release(v[0]); df_tensor_release(v[1]);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(queue_strings) {
    df_graph *g = df_graph_new();
    df_dtype t = DF_STRING;
    df_output q = df_fifo_queue(g, 1, &t, -1, NULL);
    int64_t any = -1;
    df_output names = df_placeholder(g, "names", DF_STRING, 1, &any);
    df_node *enq = df_queue_enqueue_many(g, q, 1, &names);
    df_output two = df_scalar_i32(g, 2), pair, single;
    CHECK_EQ_INT(df_queue_dequeue_many(g, q, two, 1, &pair), DF_OK);
    CHECK_EQ_INT(df_queue_dequeue(g, q, 1, &single), DF_OK);
    CHECK_OK(df_graph_status(g));
    df_session *s = qt_session(g, qt_configs[0]);
    const char *files[3] = {"a.csv", "bb.csv", "ccc.csv"};
    int64_t three = 3;
    df_tensor *v = df_tensor_new_strings(1, &three, files, NULL);
    df_status st;
    df_session_run(s, &names, &v, 1, NULL, NULL, 0, &enq, 1, &st);
    CHECK_OK(&st);
    df_tensor *out = NULL;
    df_session_run(s, NULL, NULL, 0, &pair, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (out) {
        CHECK_EQ_INT(df_tensor_dim(out, 0), 2);
        CHECK(!strcmp(df_tensor_string(out, 0, NULL), "a.csv"));
        CHECK(!strcmp(df_tensor_string(out, 1, NULL), "bb.csv"));
    }
    df_tensor_release(out);
    out = NULL;
    df_session_run(s, NULL, NULL, 0, &single, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (out) { CHECK_EQ_INT(df_tensor_rank(out), 0); CHECK(!strcmp(df_tensor_string(out, 0, NULL), "ccc.csv")); }
    df_tensor_release(out);
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(queue_shared_names) {
    df_graph *g = df_graph_new();
    df_dtype f32 = DF_FLOAT, i32 = DF_INT32;
    df_output a = df_fifo_queue(g, 1, &f32, -1, "shared"), b = df_fifo_queue(g, 1, &f32, -1, "shared");
    df_output c = df_fifo_queue(g, 1, &f32, -1, NULL);
    df_output bad_type = df_fifo_queue(g, 1, &i32, -1, "shared"), bad_cap = df_fifo_queue(g, 1, &f32, 5, "shared");
    df_output one = df_scalar_f32(g, 1.0f);
    df_node *enq_a = df_queue_enqueue(g, a, 1, &one);
    df_output sizes[3] = {df_queue_size(g, a), df_queue_size(g, b), df_queue_size(g, c)};
    df_output bad_size = df_queue_size(g, bad_type), bad_size2 = df_queue_size(g, bad_cap);
    CHECK_OK(df_graph_status(g));
    df_session *s = qt_session(g, qt_configs[0]);
    df_status st;
    qt_target(s, enq_a, &st);
    CHECK_OK(&st);
    df_tensor *out[3] = {NULL, NULL, NULL};
    df_session_run(s, NULL, NULL, 0, sizes, out, 3, NULL, 0, &st);
    CHECK_OK(&st);
    if (out[2]) {
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(out[0]), 1);
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(out[1]), 1);   /* the same queue */
        CHECK_EQ_INT(*(const int32_t *)df_tensor_data(out[2]), 0);   /* its own */
    }
    for (int i = 0; i < 3; i++) df_tensor_release(out[i]);
    df_tensor *o = NULL;
    df_session_run(s, NULL, NULL, 0, &bad_size, &o, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Shared queue 'shared' has component types [float]");
    CHECK(o == NULL);
    df_session_run(s, NULL, NULL, 0, &bad_size2, &o, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "capacity");
    /* another session has queues of its own */
    df_session *s2 = qt_session(g, qt_configs[0]);
    df_session_run(s2, NULL, NULL, 0, &sizes[0], &o, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (o) CHECK_EQ_INT(*(const int32_t *)df_tensor_data(o), 0);
    df_tensor_release(o);
    df_session_free(s2);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(queue_close_semantics) {
    qt_graph t;
    qt_build(&t, -1, "closing");
    df_session *s = qt_session(t.g, qt_configs[0]);
    df_status st;
    qt_enqueue(s, &t, 1, 1, &st);
    qt_enqueue(s, &t, 2, 2, &st);
    qt_enqueue(s, &t, 3, 3, &st);
    CHECK_OK(&st);
    qt_target(s, t.close, &st);
    CHECK_OK(&st);
    qt_enqueue(s, &t, 4, 4, &st);
    CHECK_STATUS(&st, DF_CANCELLED, "FIFOQueue 'closing' is closed.");
    CHECK_STATUS(&st, DF_CANCELLED, "{{node QueueEnqueueV2}}");
    qt_target(s, t.close, &st);
    CHECK_STATUS(&st, DF_CANCELLED, "is already closed");
    df_tensor *c = NULL;
    df_session_run(s, NULL, NULL, 0, &t.closed, &c, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (c) CHECK_EQ_INT(*(const uint8_t *)df_tensor_data(c), 1);
    df_tensor_release(c);
    /* DequeueMany of more than there is: OUT_OF_RANGE, and the elements stay */
    qt_dequeue_many(s, &t, 5, NULL, NULL, &st);
    CHECK_STATUS(&st, DF_OUT_OF_RANGE, "FIFOQueue 'closing' is closed and has insufficient elements (requested 5, current size 3)");
    CHECK_STATUS(&st, DF_OUT_OF_RANGE, "{{node QueueDequeueManyV2}}");
    CHECK_EQ_INT(qt_size(s, &t), 3);
    float f[2];
    int32_t i[2];
    qt_dequeue_many(s, &t, 2, f, i, &st);
    CHECK_OK(&st);
    CHECK_EQ_INT(i[0], 1);
    CHECK_EQ_INT(i[1], 2);
    float one_f;
    int32_t one_i;
    qt_dequeue(s, &t, &one_f, &one_i, &st);
    CHECK_OK(&st);
    CHECK_EQ_INT(one_i, 3);
    qt_dequeue(s, &t, &one_f, &one_i, &st);
    CHECK_STATUS(&st, DF_OUT_OF_RANGE, "FIFOQueue 'closing' is closed and has insufficient elements (requested 1, current size 0)");
    CHECK_STATUS(&st, DF_OUT_OF_RANGE, "{{node QueueDequeueV2}}");
    df_session_free(s);
    df_graph_free(t.g);
}

DF_TEST(queue_bad_input) {
    /* at graph building, when the queue's node is known */
    df_graph *g = df_graph_new();
    df_dtype f32 = DF_FLOAT;
    int rank1 = 1;
    int64_t two = 2;
    const int64_t *dims = &two;
    df_output q = df_fifo_queue_with_shapes(g, 1, &f32, &rank1, &dims, -1, NULL);
    df_output i = df_scalar_i32(g, 1);
    CHECK(df_queue_enqueue(g, q, 1, &i) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Type mismatch in component 0 of FIFOQueue");
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "{{node QueueEnqueueV2}}");
    df_graph_free(g);

    g = df_graph_new();
    q = df_fifo_queue_with_shapes(g, 1, &f32, &rank1, &dims, -1, NULL);
    df_tensor *three = df_tensor_new(DF_FLOAT, 1, (int64_t[]){3}, NULL);
    df_output x3 = df_const(g, three);
    df_tensor_release(three);
    CHECK(df_queue_enqueue(g, q, 1, &x3) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Shape mismatch in tuple component 0. Expected [2], got [3]");
    df_graph_free(g);

    g = df_graph_new();
    q = df_fifo_queue(g, 1, &f32, -1, NULL);
    df_output two_outs[2];
    CHECK_EQ_INT(df_queue_dequeue(g, q, 2, two_outs), DF_INVALID_ARGUMENT);
    CHECK(two_outs[0].node == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "holds tuples of 1 components");
    df_graph_free(g);

    g = df_graph_new();
    df_dtype none[1] = {DF_FLOAT};
    q = df_fifo_queue(g, 0, none, -1, NULL);
    CHECK(q.node == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "at least one component type");
    df_graph_free(g);

    /* at run time: shapes only known then, a negative n, a 0-element DequeueMany without shapes */
    g = df_graph_new();
    q = df_fifo_queue_with_shapes(g, 1, &f32, &rank1, &dims, -1, NULL);
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL), n = df_placeholder(g, "n", DF_INT32, 0, NULL), out;
    df_node *enq = df_queue_enqueue(g, q, 1, &x), *enq_many = df_queue_enqueue_many(g, q, 1, &x);
    CHECK_EQ_INT(df_queue_dequeue_many(g, q, n, 1, &out), DF_OK);
    df_output q2 = df_fifo_queue(g, 1, &f32, -1, NULL), out2;
    CHECK_EQ_INT(df_queue_dequeue_many(g, q2, n, 1, &out2), DF_OK);
    CHECK_OK(df_graph_status(g));
    df_session *s = qt_session(g, qt_configs[0]);
    df_status st;
    df_tensor *v3 = df_tensor_new(DF_FLOAT, 1, (int64_t[]){3}, NULL), *sc = df_tensor_scalar_f32(1.0f);
    df_session_run(s, &x, &v3, 1, NULL, NULL, 0, &enq, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Shape mismatch in tuple component 0. Expected [2], got [3]");
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "{{node QueueEnqueueV2}}");
    df_session_run(s, &x, &sc, 1, NULL, NULL, 0, &enq_many, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "EnqueueMany needs a batch dimension");
    df_session_run(s, &x, &v3, 1, NULL, NULL, 0, &enq_many, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Shape mismatch in tuple component 0 (without the batch dimension). Expected [2], got []");
    df_tensor *neg = df_tensor_scalar_i32(-1), *zero = df_tensor_scalar_i32(0), *o = NULL;
    df_session_run(s, &n, &neg, 1, &out, &o, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "DequeueMany requested -1 < 0 elements");
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "{{node QueueDequeueManyV2}}");
    df_session_run(s, &n, &zero, 1, &out2, &o, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "needs its component shapes");
    CHECK_EQ_INT(qt_size(s, &(qt_graph){.size = df_queue_size(g, q)}), 0);   /* nothing went in */
    df_tensor_release(v3); df_tensor_release(sc); df_tensor_release(neg); df_tensor_release(zero);
    df_session_free(s);
    df_graph_free(g);

    /* EnqueueMany's components disagree on the rows; DequeueMany cannot stack what differs */
    qt_graph t;
    qt_build(&t, -1, NULL);
    s = qt_session(t.g, qt_configs[0]);
    float f[3] = {1, 2, 3};
    int32_t iv[3] = {1, 2, 3};
    int64_t d3 = 3, d2 = 2;
    df_tensor *bv[2] = {df_tensor_from_data(DF_FLOAT, 1, &d3, f, sizeof f, NULL), df_tensor_from_data(DF_INT32, 1, &d2, iv, 2 * sizeof(int32_t), NULL)};
    df_output bfeeds[2] = {t.bf, t.bi};
    df_session_run(s, bfeeds, bv, 2, NULL, NULL, 0, &t.enq_many, 1, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "EnqueueMany: component 1 has 2 rows, component 0 has 3");
    df_tensor_release(bv[0]); df_tensor_release(bv[1]);
    df_session_free(s);
    df_graph_free(t.g);

    g = df_graph_new();
    q = df_fifo_queue(g, 1, &f32, -1, NULL);
    x = df_placeholder(g, "x", DF_FLOAT, -1, NULL);
    enq = df_queue_enqueue(g, q, 1, &x);
    CHECK_EQ_INT(df_queue_dequeue_many(g, q, df_scalar_i32(g, 2), 1, &out), DF_OK);
    CHECK_OK(df_graph_status(g));
    s = qt_session(g, qt_configs[0]);
    df_tensor *e1 = df_tensor_new(DF_FLOAT, 1, (int64_t[]){2}, NULL), *e2 = df_tensor_new(DF_FLOAT, 1, (int64_t[]){3}, NULL);
    df_session_run(s, &x, &e1, 1, NULL, NULL, 0, &enq, 1, &st);
    df_session_run(s, &x, &e2, 1, NULL, NULL, 0, &enq, 1, &st);
    CHECK_OK(&st);
    o = NULL;
    df_session_run(s, NULL, NULL, 0, &out, &o, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "DequeueMany cannot stack component 0: element 1 has shape [3], element 0 has [2]");
    CHECK(o == NULL);
    CHECK_EQ_INT(qt_size(s, &(qt_graph){.size = df_queue_size(g, q)}), 2);      /* both stay */
    df_tensor_release(e1); df_tensor_release(e2);
    df_session_free(s);
    /* a dequeue helper needs the FIFOQueueV2 behind its handle */
    df_output none_out = {NULL, 0};
    CHECK_EQ_INT(df_queue_dequeue(g, (df_output){NULL, 0}, 1, &none_out), DF_INVALID_ARGUMENT);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "does not come from a FIFOQueueV2 node");
    df_graph_free(g);
}

DF_TEST(queue_graphdef_round_trip) {
    df_graph *g = df_graph_new();
    df_dtype types[2] = {DF_FLOAT, DF_INT32};
    int ranks[2] = {2, -1};
    int64_t d0[2] = {3, -1};
    const int64_t *dims[2] = {d0, NULL};
    df_output q = df_fifo_queue_with_shapes(g, 2, types, ranks, dims, 7, "gd");
    df_output outs[2];
    CHECK_EQ_INT(df_queue_dequeue(g, q, 2, outs), DF_OK);
    df_queue_close(g, q, 1);
    CHECK_OK(df_graph_status(g));
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ_INT(df_graph_export_graphdef(g, &data, &len), DF_OK);
    df_status st;
    df_graph *h = df_graph_import_graphdef(data, len, &st);
    CHECK_OK(&st);
    if (h) {
        df_node *n = df_graph_find(h, df_node_name(q.node));
        CHECK(n != NULL);
        int r = -2;
        int64_t dd[DF_MAX_RANK] = {0};
        CHECK_EQ_INT(df_node_attr_shape_list(n, "shapes", 0, &r, dd), 2);
        CHECK_EQ_INT(r, 2);
        CHECK_EQ_INT(dd[0], 3);
        CHECK_EQ_INT(dd[1], -1);
        CHECK_EQ_INT(df_node_attr_shape_list(n, "shapes", 1, &r, dd), 2);
        CHECK_EQ_INT(r, -1);
        CHECK_EQ_INT(df_node_attr_shape_list(n, "component_types", 0, &r, dd), -1);
        int64_t cap = 0;
        CHECK(df_node_attr_int(n, "capacity", &cap));
        CHECK_EQ_INT(cap, 7);
        df_node *d = df_graph_find(h, df_node_name(outs[0].node));
        CHECK(d != NULL && df_node_num_outputs(d) == 2);
        int64_t sd[DF_MAX_RANK];
        if (d) CHECK_EQ_INT(df_output_shape((df_output){d, 0}, sd), 2);
        df_graph_free(h);
    }
    free(data);
    df_graph_free(g);
}

#ifndef DF_NO_THREADS
/* ---- several threads ---- */

static void qt_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct qt_run {
    df_session *s;
    const qt_graph *t;
    int id, count;
    long long sum;
    int seen_count;
    int32_t *seen;               /* the values this consumer dequeued */
    df_code code;
    df_status st;
    volatile int started, done;
    double ended;
} qt_run;

enum { QT_PER_PRODUCER = 200, QT_PRODUCERS = 3, QT_CONSUMERS = 2 };

static void *qt_producer(void *arg) {
    qt_run *r = (qt_run *)arg;
    for (int k = 0; k < r->count; k++) {
        int32_t v = r->id * 100000 + k;
        if (qt_enqueue(r->s, r->t, (float)v, v, &r->st) != DF_OK) { r->code = r->st.code; break; }
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void *qt_consumer(void *arg) {
    qt_run *r = (qt_run *)arg;
    for (;;) {
        float f;
        int32_t v;
        df_status st;
        if (qt_dequeue(r->s, r->t, &f, &v, &st) != DF_OK) { r->code = st.code; r->st = st; break; }
        if ((float)v != f) r->code = DF_INTERNAL;
        r->seen[r->seen_count++] = v;
        r->sum += v;
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* 3 producers and 2 consumers, each a thread calling df_session_run; a small capacity makes
   both sides wait. Every element is seen once; each producer's elements in its order. */
DF_TEST(queue_producers_and_consumers) {
    qt_watch("queue_producers_and_consumers", 120);
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        qt_graph t;
        qt_build(&t, 3, NULL);
        df_session *s = qt_session(t.g, qt_configs[k]);
        qt_run prod[QT_PRODUCERS], cons[QT_CONSUMERS];
        pthread_t pt[QT_PRODUCERS], ct[QT_CONSUMERS];
        long long want = 0;
        for (int c = 0; c < QT_CONSUMERS; c++) {
            memset(&cons[c], 0, sizeof cons[c]);
            cons[c].s = s; cons[c].t = &t;
            cons[c].seen = (int32_t *)malloc(QT_PRODUCERS * QT_PER_PRODUCER * sizeof(int32_t));
            pthread_create(&ct[c], NULL, qt_consumer, &cons[c]);
        }
        for (int p = 0; p < QT_PRODUCERS; p++) {
            memset(&prod[p], 0, sizeof prod[p]);
            prod[p].s = s; prod[p].t = &t; prod[p].id = p + 1; prod[p].count = QT_PER_PRODUCER;
            for (int i = 0; i < QT_PER_PRODUCER; i++) want += (long long)(p + 1) * 100000 + i;
            pthread_create(&pt[p], NULL, qt_producer, &prod[p]);
        }
        for (int p = 0; p < QT_PRODUCERS; p++) { pthread_join(pt[p], NULL); CHECK_EQ_INT(prod[p].code, DF_OK); }
        df_status st;
        qt_target(s, t.close, &st);
        CHECK_OK(&st);
        long long got = 0;
        int total = 0;
        static unsigned char hits[QT_PRODUCERS + 1][QT_PER_PRODUCER];
        memset(hits, 0, sizeof hits);
        for (int c = 0; c < QT_CONSUMERS; c++) {
            pthread_join(ct[c], NULL);
            CHECK_STATUS(&cons[c].st, DF_OUT_OF_RANGE, "is closed and has insufficient elements");
            got += cons[c].sum;
            total += cons[c].seen_count;
            int last[QT_PRODUCERS + 1] = {-1, -1, -1, -1};
            for (int i = 0; i < cons[c].seen_count; i++) {
                int32_t v = cons[c].seen[i];
                int p = v / 100000, n = v % 100000;
                if (p < 1 || p > QT_PRODUCERS || n >= QT_PER_PRODUCER) { CHECK_MSG(0, "bad value %d", v); continue; }
                hits[p][n]++;
                CHECK_MSG(n > last[p], "consumer %d saw producer %d's %d after %d", c, p, n, last[p]);
                last[p] = n;
            }
            free(cons[c].seen);
        }
        CHECK_EQ_INT(total, QT_PRODUCERS * QT_PER_PRODUCER);
        CHECK_EQ_INT(got, want);
        for (int p = 1; p <= QT_PRODUCERS; p++)
            for (int n = 0; n < QT_PER_PRODUCER; n++) CHECK_MSG(hits[p][n] == 1, "%s: element %d of producer %d seen %d times", qt_configs[k].name, n, p, hits[p][n]);
        df_session_free(s);
        df_graph_free(t.g);
    }
    qt_unwatch();
}

/* Waits until *flag is set (or seconds pass); returns whether it was. */
static int qt_wait_flag(volatile int *flag, double seconds) {
    double until = qt_now() + seconds;
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE) && qt_now() < until) qt_sleep_ms(1);
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static void *qt_one_enqueue(void *arg) {
    qt_run *r = (qt_run *)arg;
    __atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
    r->code = qt_enqueue(r->s, r->t, (float)r->id, r->id, &r->st);
    r->ended = qt_now();
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void *qt_one_dequeue(void *arg) {
    qt_run *r = (qt_run *)arg;
    float f = 0;
    int32_t v = -1;
    __atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
    r->code = qt_dequeue(r->s, r->t, &f, &v, &r->st);
    r->sum = v;
    r->ended = qt_now();
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void *qt_one_dequeue_many(void *arg) {
    qt_run *r = (qt_run *)arg;
    __atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
    r->seen = (int32_t *)calloc((size_t)r->count, sizeof(int32_t));
    r->code = qt_dequeue_many(r->s, r->t, r->count, NULL, r->seen, &r->st);
    r->ended = qt_now();
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Capacity 2: a third enqueue waits until a dequeue makes room. */
DF_TEST(queue_capacity_blocks_enqueue) {
    qt_watch("queue_capacity_blocks_enqueue", 60);
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        qt_graph t;
        qt_build(&t, 2, NULL);
        df_session *s = qt_session(t.g, qt_configs[k]);
        df_status st;
        qt_enqueue(s, &t, 1, 1, &st);
        qt_enqueue(s, &t, 2, 2, &st);
        CHECK_OK(&st);
        qt_run r;
        memset(&r, 0, sizeof r);
        r.s = s; r.t = &t; r.id = 3;
        pthread_t th;
        pthread_create(&th, NULL, qt_one_enqueue, &r);
        qt_wait_flag(&r.started, 10);
        qt_sleep_ms(50);
        CHECK_MSG(!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE), "%s: an enqueue into a full queue finished", qt_configs[k].name);
        CHECK_EQ_INT(qt_size(s, &t), 2);
        float f;
        int32_t v;
        qt_dequeue(s, &t, &f, &v, &st);
        CHECK_OK(&st);
        CHECK_EQ_INT(v, 1);
        CHECK(qt_wait_flag(&r.done, 30));
        pthread_join(th, NULL);
        CHECK_EQ_INT(r.code, DF_OK);
        CHECK_EQ_INT(qt_size(s, &t), 2);
        qt_dequeue(s, &t, &f, &v, &st);
        CHECK_EQ_INT(v, 2);
        qt_dequeue(s, &t, &f, &v, &st);
        CHECK_EQ_INT(v, 3);
        CHECK_OK(&st);
        df_session_free(s);
        df_graph_free(t.g);
    }
    qt_unwatch();
}

/* DequeueMany of more than the capacity takes elements as they come; EnqueueMany of more
   than the capacity puts them in as room appears. */
DF_TEST(queue_many_beyond_capacity) {
    qt_watch("queue_many_beyond_capacity", 60);
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        qt_graph t;
        qt_build(&t, 2, NULL);
        df_session *s = qt_session(t.g, qt_configs[k]);
        qt_run r;
        memset(&r, 0, sizeof r);
        r.s = s; r.t = &t; r.count = 7;
        pthread_t th;
        pthread_create(&th, NULL, qt_one_dequeue_many, &r);
        float f[7];
        int32_t v[7];
        for (int i = 0; i < 7; i++) { f[i] = (float)i; v[i] = 10 + i; }
        df_status st;
        qt_enqueue_many(s, &t, 7, f, v, &st);      /* waits for room, 2 at a time */
        CHECK_OK(&st);
        CHECK(qt_wait_flag(&r.done, 30));
        pthread_join(th, NULL);
        CHECK_EQ_INT(r.code, DF_OK);
        for (int i = 0; i < 7 && r.seen; i++) CHECK_EQ_INT(r.seen[i], 10 + i);
        free(r.seen);
        CHECK_EQ_INT(qt_size(s, &t), 0);
        df_session_free(s);
        df_graph_free(t.g);
    }
    qt_unwatch();
}

/* A dequeue waiting on an empty queue returns OUT_OF_RANGE promptly when the queue closes;
   an enqueue waiting on a full one returns CANCELLED when it closes with cancel_pending_enqueues
   (and goes on waiting after a plain close, then finishes when a dequeue makes room). */
DF_TEST(queue_close_releases_waiters) {
    qt_watch("queue_close_releases_waiters", 60);
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        qt_graph t;
        qt_build(&t, 1, "closes");
        df_session *s = qt_session(t.g, qt_configs[k]);
        qt_run r;
        memset(&r, 0, sizeof r);
        r.s = s; r.t = &t;
        pthread_t th;
        pthread_create(&th, NULL, qt_one_dequeue, &r);
        qt_wait_flag(&r.started, 10);
        qt_sleep_ms(20);
        CHECK(!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE));
        df_status st;
        double t0 = qt_now();
        qt_target(s, t.close, &st);
        CHECK_OK(&st);
        CHECK(qt_wait_flag(&r.done, 30));
        pthread_join(th, NULL);
        CHECK_STATUS(&r.st, DF_OUT_OF_RANGE, "FIFOQueue 'closes' is closed and has insufficient elements (requested 1, current size 0)");
        CHECK_MSG(r.ended - t0 < 5.0, "%s: the waiting dequeue took %.3f s to end after the close", qt_configs[k].name, r.ended - t0);
        df_session_free(s);
        df_graph_free(t.g);

        /* a full queue: a plain close lets the waiting enqueue finish later; cancel ends it */
        qt_build(&t, 1, "full");
        s = qt_session(t.g, qt_configs[k]);
        qt_enqueue(s, &t, 1, 1, &st);
        CHECK_OK(&st);
        memset(&r, 0, sizeof r);
        r.s = s; r.t = &t; r.id = 2;
        pthread_create(&th, NULL, qt_one_enqueue, &r);
        qt_wait_flag(&r.started, 10);
        qt_sleep_ms(20);
        qt_target(s, t.close, &st);
        CHECK_OK(&st);
        qt_sleep_ms(20);
        CHECK(!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE));
        float f;
        int32_t v;
        qt_dequeue(s, &t, &f, &v, &st);
        CHECK_OK(&st);
        CHECK(qt_wait_flag(&r.done, 30));
        pthread_join(th, NULL);
        CHECK_EQ_INT(r.code, DF_OK);                  /* it went in after the close */
        memset(&r, 0, sizeof r);
        r.s = s; r.t = &t; r.id = 3;
        qt_enqueue(s, &t, 9, 9, &st);
        CHECK_STATUS(&st, DF_CANCELLED, "is closed");
        df_session_free(s);
        df_graph_free(t.g);

        qt_build(&t, 1, "cancel");
        s = qt_session(t.g, qt_configs[k]);
        qt_enqueue(s, &t, 1, 1, &st);
        memset(&r, 0, sizeof r);
        r.s = s; r.t = &t; r.id = 2;
        pthread_create(&th, NULL, qt_one_enqueue, &r);
        qt_wait_flag(&r.started, 10);
        qt_sleep_ms(20);
        t0 = qt_now();
        qt_target(s, t.close_cancel, &st);
        CHECK_OK(&st);
        CHECK(qt_wait_flag(&r.done, 30));
        pthread_join(th, NULL);
        /* (had the enqueue not begun before the close, it finds the queue closed: CANCELLED too) */
        CHECK_EQ_INT(r.code, DF_CANCELLED);
        CHECK(r.ended - t0 < 5.0);
        CHECK_EQ_INT(qt_size(s, &t), 1);
        df_session_free(s);
        df_graph_free(t.g);
    }
    qt_unwatch();
}

/* A run whose other branch fails ends with that error while its dequeue waits; the queue
   stays usable and loses nothing. */
DF_TEST(queue_abort_ends_waiting_dequeue) {
    qt_watch("queue_abort_ends_waiting_dequeue", 60);
    df_graph *g = df_graph_new();
    df_dtype f32 = DF_FLOAT;
    df_output q = df_fifo_queue(g, 1, &f32, -1, NULL), y, z = df_scalar_f32(g, 5.0f);
    CHECK_EQ_INT(df_queue_dequeue(g, q, 1, &y), DF_OK);
    df_node *enq = df_queue_enqueue(g, q, 1, &z);
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL);
    df_output bad = df_reshape(g, x, 1, (const int64_t[]){3});
    df_output size = df_queue_size(g, q);
    CHECK_OK(df_graph_status(g));
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        /* Without a pool the dequeue waits on the run's own thread, so a node of the run after
           it in order (the Reshape) would wait for it: only the pool's parked wait can be aborted. */
        if (qt_configs[k].deterministic || qt_configs[k].threads == 1) continue;
        df_session *s = qt_session(g, qt_configs[k]);
        df_tensor *xv = df_tensor_new(DF_FLOAT, 1, (int64_t[]){4}, NULL), *out[2] = {NULL, NULL};
        df_output fetch[2] = {y, bad};
        df_status st;
        double t0 = qt_now();
        df_session_run(s, &x, &xv, 1, fetch, out, 2, NULL, 0, &st);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Reshape");
        CHECK(qt_now() - t0 < 10.0);
        CHECK(out[0] == NULL && out[1] == NULL);
        qt_target(s, enq, &st);
        CHECK_OK(&st);
        df_tensor *o = NULL;
        df_session_run(s, NULL, NULL, 0, &size, &o, 1, NULL, 0, &st);
        if (o) CHECK_EQ_INT(*(const int32_t *)df_tensor_data(o), 1);
        df_tensor_release(o);
        o = NULL;
        df_session_run(s, NULL, NULL, 0, &y, &o, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (o) CHECK_NEAR(*(const float *)df_tensor_data(o), 5.0, 0);
        df_tensor_release(o);
        df_tensor_release(xv);
        df_session_free(s);
    }
    df_graph_free(g);
    qt_unwatch();
}

/* df_session_options.run_timeout_ms: a dequeue that waits for ever ends the run with
   DEADLINE_EXCEEDED, in every configuration (parked in the pool, or waiting on the run's own
   thread), and a DequeueMany that took some elements gives them back, in order. */
DF_TEST(queue_run_timeout_ends_waiting_dequeue_and_keeps_elements) {
    qt_watch("queue_run_timeout_ends_waiting_dequeue_and_keeps_elements", 120);
    qt_graph t;
    qt_build(&t, -1, NULL);
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        df_session_options o = {0};
        o.inter_op_threads = qt_configs[k].threads;
        o.deterministic = qt_configs[k].deterministic;
        o.run_timeout_ms = 200;
        df_status st;
        df_session *s = df_session_new(t.g, &o, &st);
        CHECK_OK(&st);
        if (!s) continue;
        float f;
        int32_t i;
        double t0 = qt_now();
        CHECK_EQ_INT(qt_dequeue(s, &t, &f, &i, &st), DF_DEADLINE_EXCEEDED);
        CHECK_STATUS(&st, DF_DEADLINE_EXCEEDED, "run_timeout_ms");
        CHECK_MSG(qt_now() - t0 < 10.0, "%s: the dequeue took %.1f s", qt_configs[k].name, qt_now() - t0);
        CHECK_EQ_INT(qt_enqueue(s, &t, 1.5f, 1, &st), DF_OK);
        CHECK_EQ_INT(qt_enqueue(s, &t, 2.5f, 2, &st), DF_OK);
        t0 = qt_now();
        CHECK_EQ_INT(qt_dequeue_many(s, &t, 3, NULL, NULL, &st), DF_DEADLINE_EXCEEDED);
        CHECK_MSG(qt_now() - t0 < 10.0, "%s: the dequeue took %.1f s", qt_configs[k].name, qt_now() - t0);
        CHECK_EQ_INT(qt_size(s, &t), 2);
        CHECK_EQ_INT(qt_dequeue(s, &t, &f, &i, &st), DF_OK);
        CHECK_MSG(f == 1.5f && i == 1, "%s: got (%g, %d), want (1.5, 1)", qt_configs[k].name, f, i);
        CHECK_EQ_INT(qt_dequeue(s, &t, &f, &i, &st), DF_OK);
        CHECK_MSG(f == 2.5f && i == 2, "%s: got (%g, %d), want (2.5, 2)", qt_configs[k].name, f, i);
        df_session_free(s);
    }
    df_graph_free(t.g);
    qt_unwatch();
}

/* df_session_free while a run waits in a dequeue (or an enqueue): the run ends with
   CANCELLED and the free returns. The waiting run first bumps a counter (AssignAdd), so the
   test knows the run is under way before it frees the session. */
typedef struct qt_free_run { df_session *s; df_output fetch; df_node *target; df_code code; df_status st; volatile int done; } qt_free_run;
static void *qt_free_runner(void *arg) {
    qt_free_run *r = (qt_free_run *)arg;
    df_tensor *o = NULL;
    r->code = df_session_run(r->s, NULL, NULL, 0, r->fetch.node ? &r->fetch : NULL, r->fetch.node ? &o : NULL,
                             r->fetch.node ? 1 : 0, r->target ? &r->target : NULL, r->target ? 1 : 0, &r->st);
    df_tensor_release(o);
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
DF_TEST(queue_session_free_with_waiting_runs) {
    qt_watch("queue_session_free_with_waiting_runs", 60);
    df_graph *g = df_graph_new();
    df_dtype f32 = DF_FLOAT;
    df_output empty = df_fifo_queue(g, 1, &f32, -1, NULL), full = df_fifo_queue(g, 1, &f32, 1, NULL);
    df_output counter = df_variable(g, "counter", DF_INT32, 0, NULL);
    df_node *init = df_assign(g, counter, df_scalar_i32(g, 0));
    df_node *bump = df_assign_add(g, counter, df_scalar_i32(g, 1));
    df_output one = df_scalar_f32(g, 1.0f), y;
    df_node *fill = df_queue_enqueue(g, full, 1, &one);
    df_graph_push_control_deps(g, &bump, 1);
    CHECK_EQ_INT(df_queue_dequeue(g, empty, 1, &y), DF_OK);
    df_node *push = df_queue_enqueue(g, full, 1, &one);
    df_graph_pop_control_deps(g);
    df_output read = df_identity(g, counter);
    CHECK_OK(df_graph_status(g));
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        df_session *s = qt_session(g, qt_configs[k]);
        df_status st;
        qt_target(s, init, &st);
        qt_target(s, fill, &st);
        CHECK_OK(&st);
        qt_free_run r[2];
        memset(r, 0, sizeof r);
        r[0].s = r[1].s = s;
        r[0].fetch = y;               /* waits: nothing to dequeue */
        r[1].target = push;           /* waits: no room */
        pthread_t th[2];
        for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, qt_free_runner, &r[i]);
        int32_t bumped = 0;
        for (double until = qt_now() + 30; bumped < 2 && qt_now() < until;) {
            df_tensor *o = NULL;
            df_session_run(s, NULL, NULL, 0, &read, &o, 1, NULL, 0, &st);
            bumped = o ? *(const int32_t *)df_tensor_data(o) : 0;
            df_tensor_release(o);
            if (bumped < 2) qt_sleep_ms(1);
        }
        CHECK_EQ_INT(bumped, 2);
        qt_sleep_ms(20);
        CHECK(!__atomic_load_n(&r[0].done, __ATOMIC_ACQUIRE) && !__atomic_load_n(&r[1].done, __ATOMIC_ACQUIRE));
        double t0 = qt_now();
        df_session_free(s);
        CHECK_MSG(qt_now() - t0 < 10.0, "%s: df_session_free took %.3f s", qt_configs[k].name, qt_now() - t0);
        for (int i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
            CHECK_STATUS(&r[i].st, DF_CANCELLED, "cancelled");
        }
    }
    df_graph_free(g);
    qt_unwatch();
}

/* A dequeue in a while loop's body, fed by another thread: the loop's iterations wait. */
typedef struct { df_output q; } qt_loop_ctx;
static df_output qt_loop_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 10));
}
static void qt_loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    qt_loop_ctx *c = (qt_loop_ctx *)user;
    df_output x;
    df_queue_dequeue(g, c->q, 1, &x);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], x);
}
static void *qt_slow_producer(void *arg) {
    qt_run *r = (qt_run *)arg;
    for (int i = 0; i < r->count; i++) {
        if (i % 3 == 0) qt_sleep_ms(2);
        df_tensor *v = df_tensor_scalar_i32(i + 1);
        df_node *enq = r->t->enq;
        df_session_run(r->s, &r->t->xi, &v, 1, NULL, NULL, 0, &enq, 1, &r->st);
        df_tensor_release(v);
        if (r->st.code) break;
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
DF_TEST(queue_dequeue_in_while_loop) {
    qt_watch("queue_dequeue_in_while_loop", 60);
    df_graph *g = df_graph_new();
    df_dtype i32 = DF_INT32;
    qt_loop_ctx c;
    c.q = df_fifo_queue(g, 1, &i32, 4, NULL);
    qt_graph t;
    memset(&t, 0, sizeof t);
    t.xi = df_placeholder(g, "v", DF_INT32, 0, NULL);
    t.enq = df_queue_enqueue(g, c.q, 1, &t.xi);
    df_output init[2] = {df_scalar_i32(g, 0), df_scalar_i32(g, 0)}, outs[2];
    CHECK_EQ_INT(df_while_loop(g, 2, init, qt_loop_cond, qt_loop_body, &c, NULL, outs), DF_OK);
    CHECK_OK(df_graph_status(g));
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        df_session *s = qt_session(g, qt_configs[k]);
        qt_run r;
        memset(&r, 0, sizeof r);
        r.s = s; r.t = &t; r.count = 10;
        pthread_t th;
        pthread_create(&th, NULL, qt_slow_producer, &r);
        df_tensor *o = NULL;
        df_status st;
        df_session_run(s, NULL, NULL, 0, &outs[1], &o, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (o) CHECK_EQ_INT(*(const int32_t *)df_tensor_data(o), 55);
        df_tensor_release(o);
        pthread_join(th, NULL);
        CHECK_OK(&r.st);
        df_session_free(s);
    }
    df_graph_free(g);
    qt_unwatch();
}

/* Two devices: the dequeue's value crosses to CPU:1. The consumer waits longer than the
   partitioned run's hang check (0.25 s) without being taken for a hang. */
typedef struct qt_zrun { df_session *s; df_output z; df_tensor *out; df_status st; volatile int done; } qt_zrun;
static void *qt_zrunner(void *arg) {
    qt_zrun *r = (qt_zrun *)arg;
    df_session_run(r->s, NULL, NULL, 0, &r->z, &r->out, 1, NULL, 0, &r->st);
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
DF_TEST(queue_across_partitions) {
    qt_watch("queue_across_partitions", 60);
    df_graph *g = df_graph_new();
    df_dtype f32 = DF_FLOAT;
    df_graph_push_device(g, "/cpu:0");
    df_output q = df_fifo_queue(g, 1, &f32, -1, NULL), x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), y;
    df_node *enq = df_queue_enqueue(g, q, 1, &x);
    CHECK_EQ_INT(df_queue_dequeue(g, q, 1, &y), DF_OK);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/cpu:1");
    df_output z = df_mul(g, y, df_scalar_f32(g, 2.0f));
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    for (int k = 0; k < QT_N_CONFIGS; k++) {
        df_session_options o = {0};
        o.num_cpu_devices = 2;
        o.inter_op_threads = qt_configs[k].threads;
        o.deterministic = qt_configs[k].deterministic;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        CHECK_OK(&st);
        qt_zrun r;
        memset(&r, 0, sizeof r);
        r.s = s; r.z = z;
        pthread_t th;
        pthread_create(&th, NULL, qt_zrunner, &r);
        qt_sleep_ms(400);
        CHECK(!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE));
        df_tensor *v = df_tensor_scalar_f32(21.0f);
        df_session_run(s, &x, &v, 1, NULL, NULL, 0, &enq, 1, &st);
        CHECK_OK(&st);
        df_tensor_release(v);
        CHECK(qt_wait_flag(&r.done, 30));
        pthread_join(th, NULL);
        CHECK_OK(&r.st);
        if (r.out) CHECK_NEAR(*(const float *)df_tensor_data(r.out), 42.0, 0);
        df_tensor_release(r.out);
        v = df_tensor_scalar_f32(1.0f);                /* once more, to see the run's partitions */
        df_session_run(s, &x, &v, 1, NULL, NULL, 0, &enq, 1, &st);
        df_tensor_release(v);
        r.out = NULL;
        df_session_run(s, NULL, NULL, 0, &z, &r.out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        df_tensor_release(r.out);
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        df_session_free(s);
    }
    df_graph_free(g);
    qt_unwatch();
}
#else  /* DF_NO_THREADS */

/* Without threads nothing waits: what would wait fails at once. */
DF_TEST(queue_no_threads_fails_instead_of_waiting) {
    qt_watch("queue_no_threads_fails_instead_of_waiting", 60);
    double t0 = qt_now();
    qt_graph t;
    qt_build(&t, 1, "single");
    df_session *s = qt_session(t.g, qt_configs[0]);
    df_status st;
    float f;
    int32_t v;
    qt_dequeue(s, &t, &f, &v, &st);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "has insufficient elements (requested 1, current size 0)");
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "DF_NO_THREADS");
    float fs[3] = {1, 2, 3};
    int32_t is[3] = {1, 2, 3};
    qt_enqueue_many(s, &t, 3, fs, is, &st);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "has no room (capacity 1, size 0, 3 to enqueue)");
    CHECK_EQ_INT(qt_size(s, &t), 0);
    qt_enqueue(s, &t, 1, 1, &st);
    CHECK_OK(&st);
    qt_enqueue(s, &t, 2, 2, &st);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "has no room (capacity 1, size 1");
    qt_target(s, t.close, &st);
    qt_dequeue(s, &t, &f, &v, &st);
    CHECK_OK(&st);
    CHECK_EQ_INT(v, 1);
    qt_dequeue(s, &t, &f, &v, &st);
    CHECK_STATUS(&st, DF_OUT_OF_RANGE, "is closed and has insufficient elements");
    df_session_free(s);
    df_graph_free(t.g);
    CHECK(qt_now() - t0 < 30);
    qt_unwatch();
}
#endif
