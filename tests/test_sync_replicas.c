/* test_sync_replicas.c - gradient accumulators (ConditionalAccumulator and its ops: exact mean,
   stale gradients dropped, NumAccumulated, SetGlobalStep, TakeGradient waiting then released,
   ended by df_session_free and by a run's deadline, bad shapes and types naming the node) and
   df_sync_replicas_sgd over in-process workers on loopback with the cluster key on (1 ps + 2
   workers, two client threads and the chief's update thread): the variables after K
   synchronous steps equal a single-process SGD on the mean gradient of both shards. A forked
   worker killed with SIGKILL fails the next step fast with a status; training restored from the
   last checkpoint (on a fresh cluster) goes on to the same variables. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef DF_NO_THREADS
#include <pthread.h>
#endif

#ifndef DF_NO_THREADS
static double sr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void sr_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
#endif
static df_tensor *sr_vec(int n, const float *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    if (t) memcpy(df_tensor_data(t), v, (size_t)n * sizeof(float));
    return t;
}

/* ---- one process: the kernels ---- */
typedef struct acc_graph {
    df_graph *g;
    df_output acc, grad, step, need, num, take, new_step;
    df_node *apply, *set_step;
} acc_graph;
static acc_graph acc_build(int rank, int64_t n, const char *reduction) {
    acc_graph a;
    a.g = df_graph_new();
    int64_t dims[1] = {n};
    df_op_builder *b = df_op_new(a.g, "ConditionalAccumulator", "acc");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    if (rank >= 0) df_op_set_attr_shape(b, "shape", rank, dims);
    if (reduction) df_op_set_attr_string(b, "reduction_type", reduction);
    a.acc.node = df_op_finish(b);
    a.acc.index = 0;
    a.grad = df_placeholder(a.g, "grad", DF_FLOAT, -1, NULL);
    a.step = df_placeholder(a.g, "local_step", DF_INT64, 0, NULL);
    a.need = df_placeholder(a.g, "need", DF_INT32, 0, NULL);
    a.new_step = df_placeholder(a.g, "new_step", DF_INT64, 0, NULL);
    a.apply = df_accumulator_apply_gradient(a.g, a.acc, a.step, a.grad);
    a.num = df_accumulator_num_accumulated(a.g, a.acc);
    a.take = df_accumulator_take_gradient(a.g, a.acc, a.need);
    a.set_step = df_accumulator_set_global_step(a.g, a.acc, a.new_step);
    CHECK_OK(df_graph_status(a.g));
    return a;
}
static df_session *acc_session(df_graph *g, int threads, int deterministic, int timeout_ms) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = threads;
    o.deterministic = deterministic;
    o.run_timeout_ms = timeout_ms;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "df_session_new: %s", st.message);
    return s;
}
static df_code acc_apply(df_session *s, const acc_graph *a, int64_t step, int n, const float *v, df_status *st) {
    df_tensor *vals[2] = {sr_vec(n, v), df_tensor_scalar_i64(step)};
    df_output feeds[2] = {a->grad, a->step};
    df_node *t = a->apply;
    df_code c = df_session_run(s, feeds, vals, 2, NULL, NULL, 0, &t, 1, st);
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    return c;
}
static int acc_num(df_session *s, const acc_graph *a) {
    df_status st;
    df_tensor *v = NULL;
    int n = -1;
    if (df_session_run(s, NULL, NULL, 0, &a->num, &v, 1, NULL, 0, &st) == DF_OK) n = *(int32_t *)df_tensor_data(v);
    CHECK_OK(&st);
    df_tensor_release(v);
    return n;
}
static df_tensor *acc_take(df_session *s, const acc_graph *a, int need, df_status *st) {
    df_tensor *nv = df_tensor_scalar_i32(need), *out = NULL;
    df_session_run(s, &a->need, &nv, 1, &a->take, &out, 1, NULL, 0, st);
    df_tensor_release(nv);
    return out;
}
static void acc_set_step(df_session *s, const acc_graph *a, int64_t step) {
    df_status st;
    df_tensor *v = df_tensor_scalar_i64(step);
    df_node *t = a->set_step;
    df_session_run(s, &a->new_step, &v, 1, NULL, NULL, 0, &t, 1, &st);
    CHECK_OK(&st);
    df_tensor_release(v);
}

DF_TEST(sync_accumulator_mean_is_exact_and_resets) {
    acc_graph a = acc_build(1, 3, NULL);
    df_session *s = acc_session(a.g, 2, 0, 0);
    df_status st;
    const float g1[3] = {0.1f, -2.5f, 3.0f}, g2[3] = {0.7f, 1.25f, -1.0f}, g3[3] = {1.0f, 1.0f, 1.0f};
    CHECK_EQ_INT(acc_num(s, &a), 0);
    CHECK_EQ_INT(acc_apply(s, &a, 0, 3, g1, &st), DF_OK);
    CHECK_EQ_INT(acc_num(s, &a), 1);
    CHECK_EQ_INT(acc_apply(s, &a, 0, 3, g2, &st), DF_OK);
    CHECK_EQ_INT(acc_apply(s, &a, 0, 3, g3, &st), DF_OK);
    CHECK_EQ_INT(acc_num(s, &a), 3);
    df_tensor *m = acc_take(s, &a, 2, &st);
    CHECK_OK(&st);
    CHECK(m && df_tensor_num_elements(m) == 3);
    for (int i = 0; m && i < 3; i++) {
        float want = ((g1[i] + g2[i]) + g3[i]) / 3.0f;           /* the mean of all three, not of two */
        CHECK_MSG(((float *)df_tensor_data(m))[i] == want, "mean[%d] = %.9g, want %.9g", i, ((float *)df_tensor_data(m))[i], want);
    }
    df_tensor_release(m);
    CHECK_EQ_INT(acc_num(s, &a), 0);
    df_session_free(s);
    df_graph_free(a.g);
    /* reduction_type SUM */
    a = acc_build(1, 3, "SUM");
    s = acc_session(a.g, 2, 0, 0);
    CHECK_EQ_INT(acc_apply(s, &a, 0, 3, g1, &st), DF_OK);
    CHECK_EQ_INT(acc_apply(s, &a, 0, 3, g2, &st), DF_OK);
    m = acc_take(s, &a, 2, &st);
    CHECK_OK(&st);
    for (int i = 0; m && i < 3; i++) CHECK(((float *)df_tensor_data(m))[i] == g1[i] + g2[i]);
    df_tensor_release(m);
    df_session_free(s);
    df_graph_free(a.g);
}

DF_TEST(sync_accumulator_stale_gradients_dropped_and_global_step) {
    acc_graph a = acc_build(1, 2, NULL);
    df_session *s = acc_session(a.g, 2, 0, 0);
    df_status st;
    const float one[2] = {1, 1}, two[2] = {2, 4}, big[2] = {100, 100};
    CHECK_EQ_INT(acc_apply(s, &a, 0, 2, one, &st), DF_OK);
    df_tensor *m = acc_take(s, &a, 1, &st);                    /* global step 0 -> 1 */
    CHECK(m && ((float *)df_tensor_data(m))[0] == 1.0f);
    df_tensor_release(m);
    CHECK_EQ_INT(acc_apply(s, &a, 0, 2, big, &st), DF_OK);      /* stale: dropped, not an error */
    CHECK_EQ_INT(acc_num(s, &a), 0);
    CHECK_EQ_INT(acc_apply(s, &a, 1, 2, two, &st), DF_OK);
    CHECK_EQ_INT(acc_apply(s, &a, 7, 2, one, &st), DF_OK);      /* ahead of the step: counted */
    CHECK_EQ_INT(acc_num(s, &a), 2);
    m = acc_take(s, &a, 2, &st);
    CHECK(m && ((float *)df_tensor_data(m))[0] == 1.5f && ((float *)df_tensor_data(m))[1] == 2.5f);
    df_tensor_release(m);
    acc_set_step(s, &a, 5);
    CHECK_EQ_INT(acc_apply(s, &a, 4, 2, big, &st), DF_OK);
    CHECK_EQ_INT(acc_num(s, &a), 0);
    CHECK_EQ_INT(acc_apply(s, &a, 5, 2, two, &st), DF_OK);
    CHECK_EQ_INT(acc_num(s, &a), 1);
    acc_set_step(s, &a, 3);                                      /* back: allowed, as in TF */
    CHECK_EQ_INT(acc_apply(s, &a, 3, 2, two, &st), DF_OK);
    CHECK_EQ_INT(acc_num(s, &a), 2);
    m = acc_take(s, &a, 2, &st);
    CHECK(m && ((float *)df_tensor_data(m))[1] == 4.0f);
    df_tensor_release(m);
    CHECK_EQ_INT(acc_apply(s, &a, 3, 2, big, &st), DF_OK);      /* the take advanced it to 4 */
    CHECK_EQ_INT(acc_num(s, &a), 0);
    df_session_free(s);
    df_graph_free(a.g);
}

DF_TEST(sync_accumulator_bad_input_names_the_node) {
    acc_graph a = acc_build(1, 3, NULL);
    df_session *s = acc_session(a.g, 2, 0, 0);
    df_status st;
    const float v4[4] = {1, 2, 3, 4}, v3[3] = {1, 2, 3};
    acc_apply(s, &a, 0, 4, v4, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Shape mismatch");
    CHECK_MSG(strstr(st.message, df_node_name(a.apply)) != NULL, "no node name in '%s'", st.message);
    CHECK_EQ_INT(acc_num(s, &a), 0);
    df_tensor *m = acc_take(s, &a, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "num_required must be positive");
    CHECK(m == NULL);
    acc_apply(s, &a, 0, 3, v3, &st);
    CHECK_OK(&st);
    df_session_free(s);
    df_graph_free(a.g);
    /* an accumulator of any shape: later gradients must match the first */
    a = acc_build(-1, 0, NULL);
    s = acc_session(a.g, 2, 0, 0);
    CHECK_EQ_INT(acc_apply(s, &a, 0, 3, v3, &st), DF_OK);
    acc_apply(s, &a, 0, 4, v4, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "already holds gradients of shape [3]");
    df_session_free(s);
    df_graph_free(a.g);
    /* at graph building: a gradient of the wrong type or shape, an accumulator of ints */
    df_graph *g = df_graph_new();
    int64_t d3 = 3;
    df_output acc = df_conditional_accumulator(g, DF_FLOAT, 1, &d3, NULL, NULL);
    int64_t d2[2] = {2, 2};
    df_tensor *t = df_tensor_new(DF_FLOAT, 2, d2, NULL);
    memset(df_tensor_data(t), 0, 16);
    df_accumulator_apply_gradient(g, acc, df_scalar_i64(g, 0), df_const(g, t));
    df_tensor_release(t);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Shape mismatch");
    df_graph_free(g);
    g = df_graph_new();
    acc = df_conditional_accumulator(g, DF_FLOAT, 1, &d3, NULL, NULL);
    df_accumulator_apply_gradient(g, acc, df_scalar_i64(g, 0), df_scalar_f64(g, 1));
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "holds float gradients");
    df_graph_free(g);
    g = df_graph_new();
    df_conditional_accumulator(g, DF_INT32, 1, &d3, NULL, NULL);
    CHECK(df_graph_status(g)->code == DF_INVALID_ARGUMENT);
    df_graph_free(g);
}

#ifdef DF_NO_THREADS
/* Without threads nothing can wait: a take short of gradients fails at once. */
DF_TEST(sync_accumulator_no_threads_take_fails_instead_of_waiting) {
    acc_graph a = acc_build(1, 2, NULL);
    df_session *s = acc_session(a.g, 1, 1, 0);
    df_status st;
    const float g1[2] = {1, 2};
    CHECK_EQ_INT(acc_apply(s, &a, 0, 2, g1, &st), DF_OK);
    df_tensor *m = acc_take(s, &a, 2, &st);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "no threads to wait with");
    CHECK(m == NULL);
    m = acc_take(s, &a, 1, &st);
    CHECK_OK(&st);
    CHECK(m && ((float *)df_tensor_data(m))[1] == 2.0f);
    df_tensor_release(m);
    df_session_free(s);
    df_graph_free(a.g);
}
#endif

#ifndef DF_NO_THREADS
typedef struct taker { df_session *s; const acc_graph *a; int need; df_tensor *out; df_status st; int done; double took; } taker;
static void *taker_main(void *arg) {
    taker *t = (taker *)arg;
    double t0 = sr_now();
    t->out = acc_take(t->s, t->a, t->need, &t->st);
    t->took = sr_now() - t0;
    __atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

DF_TEST(sync_accumulator_take_waits_then_released) {
    const int cfg[3][2] = {{2, 0}, {1, 0}, {2, 1}};          /* pool (parked), one thread, deterministic */
    for (int c = 0; c < 3; c++) {
        acc_graph a = acc_build(1, 2, NULL);
        df_session *s = acc_session(a.g, cfg[c][0], cfg[c][1], 10000);
        df_status st;
        taker t;
        memset(&t, 0, sizeof t);
        t.s = s; t.a = &a; t.need = 2;
        pthread_t th;
        pthread_create(&th, NULL, taker_main, &t);
        const float g1[2] = {1, 3}, g2[2] = {3, 5};
        sr_sleep_ms(30);
        CHECK_EQ_INT(acc_apply(s, &a, 0, 2, g1, &st), DF_OK);
        sr_sleep_ms(50);
        CHECK_MSG(!__atomic_load_n(&t.done, __ATOMIC_ACQUIRE), "config %d: the take did not wait for the second gradient", c);
        CHECK_EQ_INT(acc_apply(s, &a, 0, 2, g2, &st), DF_OK);
        pthread_join(th, NULL);
        CHECK_OK(&t.st);
        CHECK_MSG(t.out && ((float *)df_tensor_data(t.out))[0] == 2.0f && ((float *)df_tensor_data(t.out))[1] == 4.0f,
                  "config %d: wrong mean", c);
        df_tensor_release(t.out);
        CHECK_EQ_INT(acc_num(s, &a), 0);
        df_session_free(s);
        df_graph_free(a.g);
    }
}

DF_TEST(sync_accumulator_take_ends_on_session_free_and_deadline) {
    const int cfg[3][2] = {{2, 0}, {1, 0}, {2, 1}};
    for (int c = 0; c < 3; c++) {
        acc_graph a = acc_build(1, 2, NULL);
        df_session *s = acc_session(a.g, cfg[c][0], cfg[c][1], 0);
        taker t;
        memset(&t, 0, sizeof t);
        t.s = s; t.a = &a; t.need = 1;
        pthread_t th;
        pthread_create(&th, NULL, taker_main, &t);
        sr_sleep_ms(50);
        CHECK(!__atomic_load_n(&t.done, __ATOMIC_ACQUIRE));
        df_session_free(s);                                     /* the waiting take ends, with a status */
        pthread_join(th, NULL);
        CHECK_STATUS(&t.st, DF_CANCELLED, "TakeGradient operation was cancelled");
        CHECK(t.out == NULL);
        df_graph_free(a.g);
        /* a run's deadline ends it too (an aborted run), and the accumulator serves later takes */
        a = acc_build(1, 2, NULL);
        s = acc_session(a.g, cfg[c][0], cfg[c][1], 150);
        df_status st;
        double t0 = sr_now();
        df_tensor *m = acc_take(s, &a, 1, &st);
        CHECK_STATUS(&st, DF_DEADLINE_EXCEEDED, "ms");
        CHECK(m == NULL && sr_now() - t0 < 5.0);
        const float g1[2] = {1, 2};
        CHECK_EQ_INT(acc_apply(s, &a, 0, 2, g1, &st), DF_OK);
        m = acc_take(s, &a, 1, &st);
        CHECK_OK(&st);
        CHECK(m && ((float *)df_tensor_data(m))[1] == 2.0f);
        df_tensor_release(m);
        df_session_free(s);
        df_graph_free(a.g);
    }
}

/* ---- between-graph replication over loopback workers ---- */
#define SR_ROWS 8
#define SR_FEAT 4
#define SR_LR 0.05
static float sr_x[2][SR_ROWS * SR_FEAT], sr_y[2][SR_ROWS];
static void sr_data(void) {
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < SR_ROWS; r++) {
            float acc = 0.5f;
            for (int f = 0; f < SR_FEAT; f++) {
                float v = (float)(((s * 31 + r * 7 + f * 13) % 17) - 8) / 8.0f;
                sr_x[s][r * SR_FEAT + f] = v;
                acc += v * (float)(f + 1) * (s ? -0.5f : 0.75f);
            }
            sr_y[s][r] = acc;
        }
}
static df_output sr_var(df_graph *g, const char *name, int rank, const int64_t *dims, const char *container) {
    df_op_builder *b = df_op_new(g, "VariableV2", name);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", rank, dims);
    if (container) df_op_set_attr_string(b, "container", container);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output sr_const(df_graph *g, int rank, const int64_t *dims, const float *v) {
    df_tensor *t = df_tensor_new(DF_FLOAT, rank, dims, NULL);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    memcpy(df_tensor_data(t), v, (size_t)n * sizeof(float));
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
/* loss of linear regression on shard `shard`: mean((x W + b - y)^2) */
static df_output sr_loss(df_graph *g, df_output w, df_output b, int shard) {
    int64_t dx[2] = {SR_ROWS, SR_FEAT}, dy[2] = {SR_ROWS, 1};
    df_output p = df_add(g, df_matmul(g, sr_const(g, 2, dx, sr_x[shard]), w, 0, 0), b);
    df_output d = df_sub(g, p, sr_const(g, 2, dy, sr_y[shard]));
    const int32_t axes[2] = {0, 1};
    return df_reduce_mean(g, df_mul(g, d, d), 2, axes, 0);
}
static const float sr_w0[SR_FEAT] = {0.1f, -0.2f, 0.05f, 0.3f}, sr_b0[1] = {0.01f};

typedef struct sr_model {
    df_graph *g;
    df_output w, b;
    df_sync_replicas sr;
    df_node *init;                   /* w, b := initial values */
    df_output pw, pb, pstep;         /* restore: placeholders */
    df_node *restore;
} sr_model;
static sr_model sr_build(int task) {
    sr_model m;
    memset(&m, 0, sizeof m);
    m.g = df_graph_new();
    char wdev[64];
    snprintf(wdev, sizeof wdev, "/job:worker/task:%d", task);
    df_graph_push_replica_device_setter(m.g, 1, wdev);
    int64_t dw[2] = {SR_FEAT, 1}, db[1] = {1};
    m.w = sr_var(m.g, "w", 2, dw, "model");
    m.b = sr_var(m.g, "b", 1, db, "model");
    df_output loss = sr_loss(m.g, m.w, m.b, task);
    df_output vars[2] = {m.w, m.b};
    CHECK_EQ_INT(df_sync_replicas_sgd(m.g, loss, 2, vars, SR_LR, 2, 2, task, "model", wdev, &m.sr), DF_OK);
    df_node *inits[2] = {df_assign(m.g, m.w, sr_const(m.g, 2, dw, sr_w0)), df_assign(m.g, m.b, sr_const(m.g, 1, db, sr_b0))};
    m.init = df_no_op(m.g, inits, 2);
    m.pw = df_placeholder(m.g, "restore_w", DF_FLOAT, 2, dw);
    m.pb = df_placeholder(m.g, "restore_b", DF_FLOAT, 1, db);
    m.pstep = df_placeholder(m.g, "restore_step", DF_INT64, 0, NULL);
    df_node *rs[3] = {df_assign(m.g, m.w, m.pw), df_assign(m.g, m.b, m.pb), df_assign(m.g, m.sr.global_step, m.pstep)};
    m.restore = df_no_op(m.g, rs, 3);
    df_graph_pop_device(m.g);
    CHECK_OK(df_graph_status(m.g));
    return m;
}
/* The reference: one process, SGD on the mean of both shards' losses (so of their gradients). */
static void sr_reference(int steps, float *w, float *b) {
    df_graph *g = df_graph_new();
    int64_t dw[2] = {SR_FEAT, 1}, db[1] = {1};
    df_output vw = df_variable(g, "w", DF_FLOAT, 2, dw), vb = df_variable(g, "b", DF_FLOAT, 1, db);
    df_node *inits[2] = {df_assign(g, vw, sr_const(g, 2, dw, sr_w0)), df_assign(g, vb, sr_const(g, 1, db, sr_b0))};
    df_node *init = df_no_op(g, inits, 2);
    df_output loss = df_mul(g, df_add(g, sr_loss(g, vw, vb, 0), sr_loss(g, vw, vb, 1)), df_scalar_f32(g, 0.5f));
    df_optimizer opt;
    memset(&opt, 0, sizeof opt);
    opt.kind = DF_OPT_SGD;
    opt.learning_rate = SR_LR;
    df_output vars[2] = {vw, vb};
    df_node *train = df_minimize(g, loss, 2, vars, &opt, NULL);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st);
    for (int i = 0; i < steps; i++) df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &train, 1, &st);
    CHECK_OK(&st);
    df_tensor *v[2] = {NULL, NULL};
    df_session_run(s, NULL, NULL, 0, vars, v, 2, NULL, 0, &st);
    CHECK_OK(&st);
    if (v[0]) memcpy(w, df_tensor_data(v[0]), SR_FEAT * sizeof(float));
    if (v[1]) memcpy(b, df_tensor_data(v[1]), sizeof(float));
    df_tensor_release(v[0]);
    df_tensor_release(v[1]);
    df_session_free(s);
    df_graph_free(g);
}

static void sr_quiet(void *user, const char *line) { (void)user; (void)line; }
static char sr_key[512];
static const char *sr_key_file(void) {
    if (sr_key[0]) return sr_key;
    snprintf(sr_key, sizeof sr_key, "%s/sync_replicas.key", df_test_tmpdir());
    int fd = open(sr_key, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const char line[] = "sync replicas test key, 32 bytes+\n";
    CHECK(fd >= 0 && write(fd, line, sizeof line - 1) == (ssize_t)(sizeof line - 1));
    if (fd >= 0) close(fd);
    chmod(sr_key, 0600);
    return sr_key;
}
static df_worker *sr_worker(int task) {
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.task = task;
    o.log = sr_quiet;
    o.key_file = sr_key_file();
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "df_worker_start: %s", st.message);
    return w;
}
static df_session *sr_session(df_graph *g, const char *target, int run_timeout_ms) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.cluster_key_file = sr_key_file();
    o.worker_timeout_ms = 1000;
    o.run_timeout_ms = run_timeout_ms;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "df_session_new(%s): %s", target, st.message);
    return s;
}
static df_code sr_run(df_session *s, df_node *t, df_status *st) { return df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &t, 1, st); }

typedef struct sr_loop { df_session *s; df_node *op; int steps, done_steps; df_status st; double fail_at; } sr_loop;
static void *sr_loop_main(void *arg) {
    sr_loop *l = (sr_loop *)arg;
    df_status_clear(&l->st);
    for (int i = 0; i < l->steps; i++) {
        if (sr_run(l->s, l->op, &l->st) != DF_OK) { l->fail_at = sr_now(); break; }
        l->done_steps++;
    }
    return NULL;
}
/* The cluster of this test: the chief (worker 0) has a training session and an update session. */
typedef struct sr_cluster { sr_model m[2]; df_session *train[2], *chief; } sr_cluster;
static int sr_connect(sr_cluster *c, const char *target, int restore_from_file, const char *ckpt, int timeout_ms) {
    df_status st;
    for (int t = 0; t < 2; t++) {
        c->m[t] = sr_build(t);
        c->train[t] = sr_session(c->m[t].g, target, timeout_ms);
    }
    c->chief = sr_session(c->m[0].g, target, timeout_ms);
    if (!c->train[0] || !c->train[1] || !c->chief) return 0;
    if (!restore_from_file) {
        CHECK_EQ_INT(sr_run(c->train[0], c->m[0].init, &st), DF_OK);
        CHECK_EQ_INT(sr_run(c->train[0], c->m[0].sr.init_op, &st), DF_OK);
    } else {
        df_tensor *v[3] = {df_checkpoint_read(ckpt, "w", &st), df_checkpoint_read(ckpt, "b", &st),
                           df_checkpoint_read(ckpt, "global_step", &st)};
        CHECK_OK(&st);
        df_output feeds[3] = {c->m[0].pw, c->m[0].pb, c->m[0].pstep};
        df_node *t = c->m[0].restore;
        CHECK_EQ_INT(df_session_run(c->train[0], feeds, v, 3, NULL, NULL, 0, &t, 1, &st), DF_OK);
        for (int i = 0; i < 3; i++) df_tensor_release(v[i]);
    }
    CHECK_EQ_INT(sr_run(c->chief, c->m[0].sr.chief_init_op, &st), DF_OK);
    for (int t = 0; t < 2; t++) CHECK_EQ_INT(sr_run(c->train[t], c->m[t].sr.local_init_op, &st), DF_OK);
    CHECK_OK(&st);
    return !st.code;
}
/* K synchronous steps: a thread per worker and one for the chief's update. */
static int sr_steps(sr_cluster *c, int k, sr_loop loops[3]) {
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        memset(&loops[i], 0, sizeof loops[i]);
        loops[i].s = i < 2 ? c->train[i] : c->chief;
        loops[i].op = i < 2 ? c->m[i].sr.train_op : c->m[0].sr.chief_update_op;
        loops[i].steps = k;
        pthread_create(&th[i], NULL, sr_loop_main, &loops[i]);
    }
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    return loops[0].done_steps == k && loops[1].done_steps == k && loops[2].done_steps == k;
}
static void sr_fetch(df_session *s, const sr_model *m, float *w, float *b, int64_t *step) {
    df_status st;
    df_output o[3] = {m->w, m->b, m->sr.global_step};
    df_tensor *v[3] = {NULL, NULL, NULL};
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, o, v, 3, NULL, 0, &st), DF_OK);
    if (v[0] && w) memcpy(w, df_tensor_data(v[0]), SR_FEAT * sizeof(float));
    if (v[1] && b) memcpy(b, df_tensor_data(v[1]), sizeof(float));
    if (v[2] && step) *step = *(int64_t *)df_tensor_data(v[2]);
    for (int i = 0; i < 3; i++) df_tensor_release(v[i]);
}
static void sr_close(sr_cluster *c) {
    df_session_free(c->chief);
    for (int t = 0; t < 2; t++) { df_session_free(c->train[t]); df_graph_free(c->m[t].g); }
    memset(c, 0, sizeof *c);
}
static void sr_check_against_reference(const float *w, const float *b, int steps) {
    float rw[SR_FEAT], rb[1];
    sr_reference(steps, rw, rb);
    for (int i = 0; i < SR_FEAT; i++) CHECK_NEAR(w[i], rw[i], 1e-5);
    CHECK_NEAR(b[0], rb[0], 1e-5);
    CHECK_MSG(fabs(rw[0] - sr_w0[0]) > 1e-3, "the reference did not move (%g)", rw[0]);
}

DF_TEST(sync_replicas_between_graph_equals_single_process_sgd) {
    sr_data();
    df_worker *w[3] = {sr_worker(0), sr_worker(0), sr_worker(1)};
    if (!w[0] || !w[1] || !w[2]) { for (int i = 0; i < 3; i++) df_worker_stop(w[i]); return; }
    char target[256];
    snprintf(target, sizeof target, "ps=127.0.0.1:%d;worker=127.0.0.1:%d,127.0.0.1:%d", df_worker_port(w[0]),
             df_worker_port(w[1]), df_worker_port(w[2]));
    sr_cluster c;
    memset(&c, 0, sizeof c);
    const int K = 12;
    if (sr_connect(&c, target, 0, NULL, 20000)) {
        sr_loop loops[3];
        double t0 = sr_now();
        CHECK_MSG(sr_steps(&c, K, loops), "steps: %d %d %d (%s / %s / %s)", loops[0].done_steps, loops[1].done_steps,
                  loops[2].done_steps, loops[0].st.message, loops[1].st.message, loops[2].st.message);
        double per = (sr_now() - t0) / K;
        float fw[SR_FEAT], fb[1];
        int64_t gs = -1;
        sr_fetch(c.train[1], &c.m[1], fw, fb, &gs);             /* (worker 1 sees the ps's variables too) */
        CHECK_EQ_INT(gs, K);
        sr_check_against_reference(fw, fb, K);
        fprintf(stderr, "  [sync step over 1 ps + 2 workers: %.2f ms]\n", per * 1e3);
    }
    sr_close(&c);
    for (int i = 0; i < 3; i++) df_worker_stop(w[i]);
}

/* A forked worker serving task 1; its port comes back through a pipe. */
static int sr_pipe_fd = -1;
static void sr_on_listening(int port, void *user) {
    (void)user;
    if (write(sr_pipe_fd, &port, sizeof port) != (ssize_t)sizeof port) _exit(4);
}
static pid_t sr_fork_worker(int *port) {
    int fds[2];
    if (pipe(fds)) return -1;
    const char *key = sr_key_file();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        sr_pipe_fd = fds[1];
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = 1;
        o.log = sr_quiet;
        o.on_listening = sr_on_listening;
        o.key_file = key;
        df_status st;
        df_worker_serve(&o, &st);
        _exit(0);
    }
    close(fds[1]);
    *port = -1;
    if (pid > 0 && read(fds[0], port, sizeof *port) != (ssize_t)sizeof *port) *port = -1;
    close(fds[0]);
    return pid;
}

DF_TEST(sync_replicas_killed_worker_fails_fast_and_resumes_from_checkpoint) {
    sr_data();
    int port1 = -1;
    pid_t child = sr_fork_worker(&port1);                       /* (before this process has threads) */
    CHECK(child > 0 && port1 > 0);
    if (child <= 0 || port1 <= 0) return;
    df_worker *w[2] = {sr_worker(0), sr_worker(0)};
    char target[256], ckpt[512];
    snprintf(target, sizeof target, "ps=127.0.0.1:%d;worker=127.0.0.1:%d,127.0.0.1:%d", df_worker_port(w[0]),
             df_worker_port(w[1]), port1);
    snprintf(ckpt, sizeof ckpt, "%s/sync_replicas.ckpt", df_test_tmpdir());
    sr_cluster c;
    memset(&c, 0, sizeof c);
    const int K1 = 5, K2 = 4;
    if (w[0] && w[1] && sr_connect(&c, target, 0, NULL, 1000)) {
        sr_loop loops[3];
        CHECK(sr_steps(&c, K1, loops));
        /* the chief's checkpoint */
        float fw[SR_FEAT], fb[1];
        int64_t gs = -1;
        sr_fetch(c.train[0], &c.m[0], fw, fb, &gs);
        CHECK_EQ_INT(gs, K1);
        int64_t dw[2] = {SR_FEAT, 1}, db[1] = {1};
        df_tensor *v[3] = {df_tensor_new(DF_FLOAT, 2, dw, NULL), df_tensor_new(DF_FLOAT, 1, db, NULL), df_tensor_scalar_i64(gs)};
        memcpy(df_tensor_data(v[0]), fw, sizeof fw);
        memcpy(df_tensor_data(v[1]), fb, sizeof fb);
        const char *names[3] = {"w", "b", "global_step"};
        df_status st;
        CHECK_EQ_INT(df_checkpoint_write(ckpt, 3, names, v, &st), DF_OK);
        for (int i = 0; i < 3; i++) df_tensor_release(v[i]);
        /* kill -9 worker 1, then the next step */
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        child = -1;
        double t0 = sr_now();
        sr_steps(&c, 1, loops);
        CHECK_MSG(loops[1].st.code != DF_OK, "the killed worker's step did not fail");
        CHECK_MSG(loops[1].fail_at - t0 < 1.5, "the killed worker's step failed after %.2f s", loops[1].fail_at - t0);
        CHECK_MSG(loops[0].st.code != DF_OK && loops[2].st.code != DF_OK, "the other steps did not fail: %s / %s",
                  df_code_name(loops[0].st.code), df_code_name(loops[2].st.code));
        fprintf(stderr, "  [killed worker: its step failed in %.0f ms (%s); the chief's in %.0f and %.0f ms]\n",
                (loops[1].fail_at - t0) * 1e3, df_code_name(loops[1].st.code), (loops[0].fail_at - t0) * 1e3,
                (loops[2].fail_at - t0) * 1e3);
    }
    sr_close(&c);
    if (child > 0) { kill(child, SIGKILL); waitpid(child, NULL, 0); }
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
    /* the job comes back (a fresh ps and workers) and resumes from the checkpoint */
    df_worker *n[3] = {sr_worker(0), sr_worker(0), sr_worker(1)};
    if (!n[0] || !n[1] || !n[2]) { for (int i = 0; i < 3; i++) df_worker_stop(n[i]); return; }
    snprintf(target, sizeof target, "ps=127.0.0.1:%d;worker=127.0.0.1:%d,127.0.0.1:%d", df_worker_port(n[0]),
             df_worker_port(n[1]), df_worker_port(n[2]));
    if (sr_connect(&c, target, 1, ckpt, 20000)) {
        sr_loop loops[3];
        CHECK(sr_steps(&c, K2, loops));
        float fw[SR_FEAT], fb[1];
        int64_t gs = -1;
        sr_fetch(c.train[0], &c.m[0], fw, fb, &gs);
        CHECK_EQ_INT(gs, K1 + K2);
        sr_check_against_reference(fw, fb, K1 + K2);
    }
    sr_close(&c);
    for (int i = 0; i < 3; i++) df_worker_stop(n[i]);
}
#endif

/* Masters forked from one parent in the same second drew the same step numbers (and the same
   unseeded random numbers): their session salt came from the time, the heap address and a
   counter, all alike after fork. On a worker both masters use, their steps' tensors were mixed
   up. Two forked sessions must now draw different unseeded numbers. */
DF_TEST(sync_forked_sessions_are_salted_apart) {
    int fds[2][2];
    pid_t pid[2] = {-1, -1};
    fflush(stdout);
    fflush(stderr);
    for (int k = 0; k < 2; k++) {
        if (pipe(fds[k])) { CHECK(0); return; }
        pid[k] = fork();
        if (pid[k] == 0) {
            close(fds[k][0]);
            df_graph *g = df_graph_new();
            int64_t d = 4;
            df_output r = df_random_uniform(g, 1, &d, DF_FLOAT, 0, 1, 0, 0);
            df_session_options o;
            memset(&o, 0, sizeof o);
            o.deterministic = 1;
            o.inter_op_threads = 1;
            o.intra_op_threads = 1;
            df_status st;
            df_session *s = df_session_new(g, &o, &st);
            df_tensor *v = NULL;
            float out[4] = {-1, -1, -1, -1};
            if (s && df_session_run(s, NULL, NULL, 0, &r, &v, 1, NULL, 0, &st) == DF_OK) memcpy(out, df_tensor_data(v), sizeof out);
            if (write(fds[k][1], out, sizeof out) != (ssize_t)sizeof out) _exit(2);
            _exit(0);
        }
        close(fds[k][1]);
    }
    float got[2][4];
    for (int k = 0; k < 2; k++) {
        CHECK(pid[k] > 0 && read(fds[k][0], got[k], sizeof got[k]) == (ssize_t)sizeof got[k]);
        close(fds[k][0]);
        if (pid[k] > 0) waitpid(pid[k], NULL, 0);
    }
    CHECK(got[0][0] >= 0 && got[1][0] >= 0);
    CHECK_MSG(memcmp(got[0], got[1], sizeof got[0]) != 0, "two forked sessions drew the same numbers (%g %g)", got[0][0], got[1][0]);
}

#ifndef DF_NO_THREADS
/* A master freed while its run waits in a worker's TakeGradient (the chief's update thread at
   the end of training): the run ends CANCELLED within about a second, the free returns, and the
   worker serves the next master. */
DF_TEST(sync_master_freed_while_its_run_waits_on_a_worker) {
    df_worker *w = sr_worker(0);
    if (!w) return;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", df_worker_port(w));
    for (int round = 0; round < 2; round++) {
        df_graph *g = df_graph_new();
        df_graph_push_device(g, "/job:worker/task:0");
        int64_t dims[1] = {2};
        df_op_builder *b = df_op_new(g, "ConditionalAccumulator", "acc");
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        df_op_set_attr_shape(b, "shape", 1, dims);
        df_op_set_attr_string(b, "container", "freed");
        acc_graph a;
        memset(&a, 0, sizeof a);
        a.g = g;
        a.acc.node = df_op_finish(b);
        a.need = df_placeholder(g, "need", DF_INT32, 0, NULL);
        a.take = df_accumulator_take_gradient(g, a.acc, a.need);
        df_graph_pop_device(g);
        df_session *s = sr_session(g, target, 0);              /* (no run deadline) */
        if (!s) { df_graph_free(g); break; }
        taker t;
        memset(&t, 0, sizeof t);
        t.s = s; t.a = &a; t.need = 1;
        pthread_t th;
        pthread_create(&th, NULL, taker_main, &t);
        sr_sleep_ms(100);
        CHECK_MSG(!__atomic_load_n(&t.done, __ATOMIC_ACQUIRE), "round %d: the take did not wait", round);
        double t0 = sr_now();
        df_session_free(s);
        double took = sr_now() - t0;
        pthread_join(th, NULL);
        CHECK_STATUS(&t.st, DF_CANCELLED, "freed");
        CHECK(t.out == NULL);
        CHECK_MSG(took < 3.0, "round %d: df_session_free took %.2f s", round, took);
        df_graph_free(g);
    }
    df_worker_stop(w);
}
#endif

#ifndef DF_NO_THREADS
DF_TEST(sync_replicas_sgd_refuses_what_would_hang) {
    df_graph *g = df_graph_new();
    df_output w = sr_var(g, "w", 2, (const int64_t[]){SR_FEAT, 1}, "model");
    df_output bb = sr_var(g, "b", 1, (const int64_t[]){1}, "model");
    sr_data();
    df_output loss = sr_loss(g, w, bb, 0);
    df_output vars[2] = {w, bb};
    df_sync_replicas sr;
    /* more gradients a round than workers: TakeGradient would wait for ever */
    CHECK_EQ_INT(df_sync_replicas_sgd(g, loss, 2, vars, SR_LR, 3, 2, 0, "model", NULL, &sr), DF_INVALID_ARGUMENT);
    CHECK_MSG(strstr(df_graph_status(g)->message, "replicas_to_aggregate 3") != NULL, "%s", df_graph_status(g)->message);
    df_graph_free(g);
    g = df_graph_new();
    w = sr_var(g, "w", 2, (const int64_t[]){SR_FEAT, 1}, "model");
    bb = sr_var(g, "b", 1, (const int64_t[]){1}, "model");
    loss = sr_loss(g, w, bb, 0);
    vars[0] = w; vars[1] = bb;
    /* no container: every master would get accumulators of its own */
    CHECK_EQ_INT(df_sync_replicas_sgd(g, loss, 2, vars, SR_LR, 2, 2, 0, NULL, NULL, &sr), DF_INVALID_ARGUMENT);
    CHECK_MSG(strstr(df_graph_status(g)->message, "container") != NULL, "%s", df_graph_status(g)->message);
    df_graph_free(g);
}
#endif

/* One shared accumulator asked for with another reduction_type fails naming both (TensorFlow's
   resource manager would hand back the first). */
DF_TEST(sync_accumulator_shared_with_another_reduction_is_refused) {
    df_graph *g = df_graph_new();
    int64_t d2 = 2;
    df_output mean = df_conditional_accumulator(g, DF_FLOAT, 1, &d2, NULL, "shared");
    df_op_builder *b = df_op_new(g, "ConditionalAccumulator", "sum_acc");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 1, &d2);
    df_op_set_attr_string(b, "shared_name", "shared");
    df_op_set_attr_string(b, "reduction_type", "SUM");
    df_output sum = {df_op_finish(b), 0};
    df_output n1 = df_accumulator_num_accumulated(g, mean), n2 = df_accumulator_num_accumulated(g, sum);
    CHECK_OK(df_graph_status(g));
    df_session *s = df_session_new(g, NULL, NULL);
    df_status st;
    df_tensor *out = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &n1, &out, 1, NULL, 0, &st), DF_OK);
    df_tensor_release(out);
    out = NULL;
    df_session_run(s, NULL, NULL, 0, &n2, &out, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "reduction_type MEAN");
    CHECK_MSG(strstr(st.message, "sum_acc") != NULL, "no node name in '%s'", st.message);
    CHECK(out == NULL);
    df_session_free(s);
    df_graph_free(g);
}
