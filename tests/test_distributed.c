/* Sessions with workers: graphs split over worker processes on loopback (in this process, or
   forked), against the same graph run in one process; a while loop whose body spans three
   workers, forward and gradient; a worker killed mid-step ends the step everywhere. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void quiet(void *user, const char *line) { (void)user; (void)line; }
/* n workers in this process; their addresses into target ("a,b,c") */
static int start_workers(int n, df_worker **w, char *target, size_t tn) {
    target[0] = '\0';
    for (int i = 0; i < n; i++) {
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = i;
        o.key_file = getenv("DF_CLUSTER_KEY_FILE");   /* (set: a keyed cluster) */
        o.log = quiet;
        df_status st;
        if (!(w[i] = df_worker_start(&o, &st))) { CHECK_MSG(0, "worker %d: %s", i, st.message); return 0; }
        size_t k = strlen(target);
        snprintf(target + k, tn - k, "%s127.0.0.1:%d", i ? "," : "", df_worker_port(w[i]));
    }
    return 1;
}
__attribute__((unused)) static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- worker processes: this test program run again, serving until killed ----
   A worker is started by fork and then exec of /proc/self/exe, with DF_TEST_WORKER=TASK,FD in
   its environment: a fresh process, so it inherits no lock that some other thread of this one
   held at the fork (a plain forked child that then serves a worker can deadlock on one). The
   constructor below runs the worker before main and writes its port to FD. */
extern char **environ;
__attribute__((constructor)) static void worker_process_main(void) {
    const char *spec = getenv("DF_TEST_WORKER");
    int task = -1, fd = -1;
    if (!spec) return;
    if (sscanf(spec, "%d,%d", &task, &fd) != 2 || fd < 0) _exit(4);
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.task = task;
    o.log = quiet;
    o.data_dir = ".";                  /* (the checkpoint test saves under our build directory) */
    o.key_file = getenv("DF_CLUSTER_KEY_FILE");   /* (set: the whole suite on a keyed cluster) */
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    int port = w ? df_worker_port(w) : -1;
    if (write(fd, &port, sizeof port) != (ssize_t)sizeof port) _exit(3);
    close(fd);
    if (!w) _exit(2);
    df_worker_wait(w);
    df_worker_stop(w);
    _exit(0);
}
typedef struct proc { pid_t pid; int port; } proc;
static proc spawn_worker(int task) {
    proc p = {-1, 0};
    int fds[2];
    if (pipe(fds)) return p;
    /* the child's environment, made here: between fork and exec only async-signal-safe calls */
    int n_env = 0;
    while (environ[n_env]) n_env++;
    char **env = (char **)calloc((size_t)n_env + 2, sizeof *env), spec[64];
    if (!env) { close(fds[0]); close(fds[1]); return p; }
    snprintf(spec, sizeof spec, "DF_TEST_WORKER=%d,%d", task, fds[1]);
    int k = 0;
    env[k++] = spec;
    for (int i = 0; i < n_env; i++) if (strncmp(environ[i], "DF_TEST_WORKER=", 15)) env[k++] = environ[i];
    env[k] = NULL;
    char *argv[] = {(char *)"dataflow-test-worker", NULL};
    fflush(stdout);
    fflush(stderr);
    p.pid = fork();
    if (p.pid == 0) {
        close(fds[0]);
        execve("/proc/self/exe", argv, env);
        _exit(5);
    }
    free(env);
    close(fds[1]);
    if (p.pid > 0 && read(fds[0], &p.port, sizeof p.port) != (ssize_t)sizeof p.port) p.port = -1;
    close(fds[0]);
    return p;
}
/* SIGTERM, then SIGKILL after 2 s; 1 when it ended */
static int end_worker(proc *p) {
    if (p->pid <= 0) return 1;
    kill(p->pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
        if (waitpid(p->pid, NULL, WNOHANG) == p->pid) { p->pid = -1; return 1; }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    p->pid = -1;
    return 0;
}

/* x (rank 1 [3] or a scalar), a = 2x on task 0 and b = a + 1 on task 1: a straight line over
   two workers. */
static df_graph *line_over_two_workers(int rank, df_output *x, df_output *a, df_output *b) {
    df_graph *g = df_graph_new();
    *x = df_placeholder(g, "x", DF_FLOAT, rank, (const int64_t[]){3});
    df_graph_push_device(g, "/job:worker/task:0");
    *a = df_mul(g, *x, df_scalar_f32(g, 2));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:1");
    *b = df_add(g, *a, df_scalar_f32(g, 1));
    df_graph_pop_device(g);
    return g;
}

DF_TEST(distributed_straight_line_over_two_workers) {
    df_worker *w[2] = {NULL, NULL};
    char target[256];
    if (!start_workers(2, w, target, sizeof target)) return;
    df_output x, a, b;
    df_graph *g = line_over_two_workers(1, &x, &a, &b);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    for (int step = 0; s && step < 3; step++) {
        df_tensor *xv = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){3}, NULL), *out[2] = {NULL, NULL};
        for (int i = 0; i < 3; i++) ((float *)df_tensor_data(xv))[i] = (float)(i + step);
        df_output f[2] = {b, a};
        CHECK_EQ_INT(df_session_run(s, &x, &xv, 1, f, out, 2, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        for (int i = 0; out[0] && out[1] && i < 3; i++) {
            CHECK_NEAR(((float *)df_tensor_data(out[0]))[i], 2.0 * (i + step) + 1, 0);
            CHECK_NEAR(((float *)df_tensor_data(out[1]))[i], 2.0 * (i + step), 0);
        }
        df_tensor_release(out[0]); df_tensor_release(out[1]); df_tensor_release(xv);
    }
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    df_session_free(s);
    df_graph_free(g);
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}

/* Jobs by name, as TensorFlow's cluster spec: "ps=h:p;worker=h:p,h:p". A variable on the
   parameter server (/job:ps/task:0), read and updated from both tasks of the worker job: the
   values cross ps -> worker 0 -> worker 1 -> ps each step. Malformed targets are refused. */
DF_TEST(distributed_ps_and_worker_jobs_by_name) {
    df_worker *w[3] = {NULL, NULL, NULL};
    char plain[256], target[300];
    if (!start_workers(3, w, plain, sizeof plain)) return;
    char *a1 = strchr(plain, ','), *a2 = a1 ? strchr(a1 + 1, ',') : NULL;
    CHECK(a1 && a2);
    if (!a1 || !a2) { for (int i = 0; i < 3; i++) df_worker_stop(w[i]); return; }
    *a1 = *a2 = '\0';
    snprintf(target, sizeof target, "ps=%s;worker=%s,%s", plain, a1 + 1, a2 + 1);
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/job:ps/task:0");
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, v, df_scalar_f32(g, 1));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:0");
    df_output a = df_mul(g, v, df_scalar_f32(g, 3));             /* 3v on worker 0 */
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:1");
    df_output b = df_add(g, a, df_scalar_f32(g, 1));             /* 3v + 1 on worker 1 */
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:ps/task:0");
    df_node *upd = df_assign(g, v, b);                           /* v = 3v + 1, back on the ps */
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session on '%s': %s", target, st.message);
    if (s) {
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st), DF_OK);
        float want = 1;
        for (int step = 0; step < 3; step++) {
            CHECK_MSG(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &upd, 1, &st) == DF_OK, "step %d: %s", step, st.message);
            want = 3 * want + 1;
        }
        CHECK_EQ_INT(df_session_num_partitions(s), 3);           /* (the last run's: ps, worker 0, worker 1) */
        df_tensor *vv = NULL;
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &v, &vv, 1, NULL, 0, &st), DF_OK);
        CHECK_MSG(vv && *(float *)df_tensor_data(vv) == want, "v after 3 steps: %g, want %g", vv ? *(float *)df_tensor_data(vv) : -1.0, want);
        df_tensor_release(vv);
    }
    df_session_free(s);
    const char *bad[] = {"ps=;worker=127.0.0.1:1", "=127.0.0.1:1", "ps=127.0.0.1:1;ps=127.0.0.1:2", "p s=127.0.0.1:1",
                         "127.0.0.1:1;worker=127.0.0.1:2", "ps=127.0.0.1:1,,127.0.0.1:2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        o.target = bad[i];
        df_session *t = df_session_new(g, &o, &st);
        CHECK_MSG(!t && st.code == DF_INVALID_ARGUMENT, "target '%s': %s", bad[i], t ? "accepted" : st.message);
        df_session_free(t);
    }
    df_graph_free(g);
    for (int i = 0; i < 3; i++) df_worker_stop(w[i]);
}

/* The replica device setter: variables round robin over the ps tasks, the rest on the worker
   device; a step over 2 ps and 1 worker tasks gives the values of one process. */
DF_TEST(distributed_replica_device_setter_puts_variables_on_the_ps_tasks) {
    df_graph *g = df_graph_new();
    df_graph_push_replica_device_setter(g, 2, "/job:worker/task:0");
    df_output v[3];
    df_node *init[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        v[i] = df_variable(g, name, DF_FLOAT, 0, NULL);
        init[i] = df_assign(g, v[i], df_scalar_f32(g, (float)(i + 1)));
    }
    df_output sum = df_add(g, df_add(g, v[0], v[1]), v[2]);
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    CHECK_MSG(!strcmp(df_node_device(v[0].node), "/job:ps/task:0"), "device %s, want %s", df_node_device(v[0].node), "/job:ps/task:0");
    CHECK_MSG(!strcmp(df_node_device(v[1].node), "/job:ps/task:1"), "device %s, want %s", df_node_device(v[1].node), "/job:ps/task:1");
    CHECK_MSG(!strcmp(df_node_device(v[2].node), "/job:ps/task:0"), "device %s, want %s", df_node_device(v[2].node), "/job:ps/task:0");
    CHECK_MSG(!strcmp(df_node_device(sum.node), "/job:worker/task:0"), "device %s, want %s", df_node_device(sum.node), "/job:worker/task:0");
    df_worker *w[3] = {NULL, NULL, NULL};
    char plain[256], target[300];
    if (start_workers(3, w, plain, sizeof plain)) {
        char *a1 = strchr(plain, ','), *a2 = a1 ? strchr(a1 + 1, ',') : NULL;
        if (a1 && a2) {
            *a1 = *a2 = '\0';
            snprintf(target, sizeof target, "ps=%s,%s;worker=%s", plain, a1 + 1, a2 + 1);
            df_session_options o;
            memset(&o, 0, sizeof o);
            o.target = target;
            df_status st;
            df_session *s = df_session_new(g, &o, &st);
            CHECK_MSG(s != NULL, "session: %s", st.message);
            df_tensor *out = NULL;
            if (s) {
                CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 3, &st), DF_OK);
                CHECK_MSG(df_session_run(s, NULL, NULL, 0, &sum, &out, 1, NULL, 0, &st) == DF_OK, "run: %s", st.message);
                CHECK_MSG(out && *(float *)df_tensor_data(out) == 6.0f, "sum %g", out ? *(float *)df_tensor_data(out) : -1.0);
            }
            df_tensor_release(out);
            df_session_free(s);
        }
        for (int i = 0; i < 3; i++) df_worker_stop(w[i]);
    }
    df_graph_push_replica_device_setter(g, 0, NULL);
    CHECK_EQ_INT(df_graph_status(g)->code, DF_INVALID_ARGUMENT);
    df_graph_free(g);
}

/* A session over workers keeps its graph when the user frees it first (TF_DeleteGraph): it
   goes on running it, a new set of fetches (a new plan from the graph) included, and frees it. */
DF_TEST(distributed_graph_freed_before_its_session) {
    df_worker *w[2] = {NULL, NULL};
    char target[256];
    if (!start_workers(2, w, target, sizeof target)) return;
    df_output x, a, b;
    df_graph *g = line_over_two_workers(0, &x, &a, &b);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    for (int step = 0; s && step < 4; step++) {
        if (step == 1) df_graph_free(g);
        df_tensor *xv = df_tensor_new(DF_FLOAT, 0, NULL, NULL), *out = NULL;
        *(float *)df_tensor_data(xv) = (float)step;
        df_output f = step < 3 ? b : a;              /* the last: a plan made after the free */
        CHECK_EQ_INT(df_session_run(s, &x, &xv, 1, &f, &out, 1, NULL, 0, &st), DF_OK);
        CHECK_MSG(out && *(float *)df_tensor_data(out) == (step < 3 ? 2.0f * step + 1 : 2.0f * step), "step %d: %s", step, st.message);
        df_tensor_release(out); df_tensor_release(xv);
    }
    if (!s) df_graph_free(g);
    df_session_free(s);                              /* and the graph with it */
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}

/* while (x < limit) x = (x * w on task 1 + 0.5 on task 2), the predicate on task 0; the output
   and d(sum(out))/dw, d(sum(out))/dx0 against one process. */
typedef struct span3 { df_output w; } span3;
static df_output span_cond(df_graph *g, void *u, const df_output *v) {
    (void)u;
    return df_less(g, df_reduce_sum(g, v[0], 0, NULL, 0), df_scalar_f32(g, 50));
}
static void span_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    span3 *sp = (span3 *)u;
    df_graph_push_device(g, "/job:worker/task:1");
    df_output y = df_mul(g, v[0], sp->w);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:2");
    next[0] = df_add(g, y, df_scalar_f32(g, 0.5f));
    df_graph_pop_device(g);
}
static df_graph *span_graph(df_output *x0, df_output *out, df_output *dw, df_output *dx, df_node **init) {
    df_graph *g = df_graph_new();
    *x0 = df_placeholder(g, "x0", DF_FLOAT, 1, (const int64_t[]){2});
    df_graph_push_device(g, "/job:worker/task:0");
    span3 sp;
    sp.w = df_variable(g, "w", DF_FLOAT, 1, (const int64_t[]){2});
    df_tensor *w0 = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){2}, NULL);
    ((float *)df_tensor_data(w0))[0] = 1.5f;
    ((float *)df_tensor_data(w0))[1] = 1.25f;
    *init = df_assign(g, sp.w, df_const(g, w0));
    df_tensor_release(w0);
    df_while_loop(g, 1, x0, span_cond, span_body, &sp, NULL, out);
    df_output loss = df_reduce_sum(g, *out, 0, NULL, 0);
    df_output xs[2] = {sp.w, *x0}, d[2];
    df_gradients(g, 1, &loss, NULL, 2, xs, d);
    df_graph_pop_device(g);
    *dw = d[0];
    *dx = d[1];
    return g;
}
DF_TEST(distributed_while_loop_across_three_worker_processes_and_its_gradient) {
    proc w[3] = {spawn_worker(0), spawn_worker(1), spawn_worker(2)};
    char target[256];
    int up = 1;
    for (int i = 0; i < 3; i++) up &= w[i].pid > 0 && w[i].port > 0;
    CHECK_MSG(up, "worker processes did not start");
    if (!up) { for (int i = 0; i < 3; i++) end_worker(&w[i]); return; }
    snprintf(target, sizeof target, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", w[0].port, w[1].port, w[2].port);
    df_output x0[2], out[2], dw[2], dx[2];
    df_node *init[2];
    df_graph *g[2] = {span_graph(&x0[0], &out[0], &dw[0], &dx[0], &init[0]), span_graph(&x0[1], &out[1], &dw[1], &dx[1], &init[1])};
    CHECK_OK(df_graph_status(g[0]));
    df_session_options o[2];
    memset(o, 0, sizeof o);
    o[0].target = target;
    o[1].soft_placement = 1;                       /* the reference: one process, one device */
    df_status st;
    df_session *s[2];
    for (int k = 0; k < 2; k++) {
        s[k] = df_session_new(g[k], &o[k], &st);
        CHECK_MSG(s[k] != NULL, "session %d: %s", k, st.message);
        if (s[k]) CHECK_EQ_INT(df_session_run(s[k], NULL, NULL, 0, NULL, NULL, 0, &init[k], 1, &st), DF_OK);
    }
    for (int step = 0; s[0] && s[1] && step < 3; step++) {
        df_tensor *xv = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){2}, NULL);
        ((float *)df_tensor_data(xv))[0] = 0.5f + (float)step;
        ((float *)df_tensor_data(xv))[1] = 1.0f;
        df_tensor *v[2][3] = {{NULL, NULL, NULL}, {NULL, NULL, NULL}};
        for (int k = 0; k < 2; k++) {
            df_output f[3] = {out[k], dw[k], dx[k]};
            CHECK_MSG(df_session_run(s[k], &x0[k], &xv, 1, f, v[k], 3, NULL, 0, &st) == DF_OK, "step %d, session %d: %s", step, k, st.message);
        }
        for (int j = 0; j < 3; j++)
            for (int i = 0; v[0][j] && v[1][j] && i < 2; i++)
                CHECK_NEAR(((float *)df_tensor_data(v[0][j]))[i], ((float *)df_tensor_data(v[1][j]))[i], 1e-4 * fabs(((float *)df_tensor_data(v[1][j]))[i]));
        for (int k = 0; k < 2; k++) for (int j = 0; j < 3; j++) df_tensor_release(v[k][j]);
        df_tensor_release(xv);
    }
    if (s[0]) CHECK_MSG(df_session_num_partitions(s[0]) >= 3, "%d partitions", df_session_num_partitions(s[0]));
    for (int k = 0; k < 2; k++) { df_session_free(s[k]); df_graph_free(g[k]); }
    for (int i = 0; i < 3; i++) CHECK_MSG(end_worker(&w[i]), "worker %d did not end on SIGTERM", i);
}

/* x += w (task 0) through tasks 1 and 2, a million times: long enough to kill a worker in */
static df_output long_cond(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_f32(g, 1e9f)); }
static void long_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    (void)u;
    df_graph_push_device(g, "/job:worker/task:1");
    df_output y = df_add(g, v[0], df_scalar_f32(g, 1));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:2");
    next[0] = df_add(g, y, df_scalar_f32(g, 1));
    df_graph_pop_device(g);
}
/* A loop started on worker 0 whose body runs on workers 1 and 2, for about 1e9/2 iterations. */
static df_graph *long_loop_over_workers(df_output *out) {
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/job:worker/task:0");
    df_output x0 = df_scalar_f32(g, 0);
    df_while_loop(g, 1, &x0, long_cond, long_body, NULL, NULL, out);
    df_graph_pop_device(g);
    return g;
}
typedef struct killer { pid_t pid; int after_ms; double at; int sig; } killer;
static void *kill_later(void *arg) {
    killer *k = (killer *)arg;
    struct timespec ts = {k->after_ms / 1000, (long)(k->after_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    k->at = now_s();
    kill(k->pid, k->sig ? k->sig : SIGKILL);
    return NULL;
}
DF_TEST(distributed_worker_killed_mid_step_ends_the_step_and_a_restarted_cluster_restores) {
    proc p[3];
    for (int i = 0; i < 3; i++) {
        p[i] = spawn_worker(i);
        CHECK_MSG(p[i].pid > 0 && p[i].port > 0, "worker %d did not start", i);
        if (p[i].pid <= 0 || p[i].port <= 0) { for (int k = 0; k <= i; k++) end_worker(&p[k]); return; }
    }
    char target[256], ckpt[512];
    snprintf(target, sizeof target, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", p[0].port, p[1].port, p[2].port);
    snprintf(ckpt, sizeof ckpt, "%.400s/distributed.ckpt", df_test_tmpdir());   /* (the workers share our directory) */
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/job:worker/task:0");
    df_output w = df_variable(g, "w", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, w, df_scalar_f32(g, 42));
    df_node *bump = df_assign_add(g, w, df_scalar_f32(g, 1));
    df_output x0 = df_identity(g, w), out;
    df_while_loop(g, 1, &x0, long_cond, long_body, NULL, NULL, &out);
    df_graph_pop_device(g);
    df_status st;
    df_saver *sv = df_saver_new(g, 1, &w, &st);
    CHECK_MSG(sv != NULL, "saver: %s", st.message);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    if (s && sv) {
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st), DF_OK);
        CHECK_MSG(df_saver_save(sv, s, ckpt, &st) == DF_OK, "save on the cluster: %s", st.message);
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &bump, 1, &st), DF_OK);
        /* the long loop; worker 2 killed 300 ms in */
        killer k = {p[2].pid, 300, 0, SIGKILL};
        pthread_t t;
        pthread_create(&t, NULL, kill_later, &k);
        df_tensor *v = NULL;
        df_code code = df_session_run(s, NULL, NULL, 0, &out, &v, 1, NULL, 0, &st);
        double ended = now_s();
        pthread_join(t, NULL);
        waitpid(p[2].pid, NULL, 0);
        p[2].pid = -1;
        CHECK_MSG(code == DF_UNAVAILABLE || code == DF_ABORTED, "the step after a kill: %s: %s", df_code_name(code), st.message);
        CHECK_MSG(v == NULL, "a value came back from a failed step");
        CHECK_MSG(ended - k.at < 5.0, "the step ended %.2f s after the kill", ended - k.at);
        printf("    the step ended %.0f ms after worker 2 was killed: %s\n", 1e3 * (ended - k.at), st.message);
        df_tensor_release(v);
        /* the other workers are alive and idle: they answer */
        for (int i = 0; i < 2; i++) {
            char addr[64];
            snprintf(addr, sizeof addr, "127.0.0.1:%d", p[i].port);
            df_worker_info info;
            CHECK_MSG(df_worker_hello(addr, 2000, &info, &st) == DF_OK, "worker %d after the kill: %s", i, st.message);
        }
        /* the same session: the broken worker is reported, no hang */
        code = df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &bump, 1, &st);
        CHECK_EQ_INT(code, DF_OK);   /* (w lives on task 0, which still works) */
    }
    df_session_free(s);
    /* a restarted worker 2, a new session: restore the checkpoint, run */
    p[2] = spawn_worker(2);
    snprintf(target, sizeof target, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", p[0].port, p[1].port, p[2].port);
    s = p[2].pid > 0 ? df_session_new(g, &o, &st) : NULL;
    CHECK_MSG(s != NULL, "session on the restarted cluster: %s", st.message);
    if (s && sv) {
        CHECK_MSG(df_saver_restore(sv, s, ckpt, &st) == DF_OK, "restore: %s", st.message);
        df_tensor *v = NULL;
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &w, &v, 1, NULL, 0, &st), DF_OK);
        CHECK_MSG(v && *(float *)df_tensor_data(v) == 42.0f, "w after the restore: %g", v ? *(float *)df_tensor_data(v) : -1.0);
        df_tensor_release(v);
    }
    df_session_free(s);
    df_saver_free(sv);
    df_graph_free(g);
    for (int i = 0; i < 3; i++) CHECK_MSG(end_worker(&p[i]), "worker %d did not end on SIGTERM", i);
}

/* A worker that stops answering (SIGSTOP) mid-step: the step fails with DF_UNAVAILABLE once it
   has been silent for worker_timeout_ms; the other worker, told to abort, answers again. */
DF_TEST(distributed_silent_worker_ends_the_step_after_the_timeout) {
    proc p[3] = {spawn_worker(0), spawn_worker(1), spawn_worker(2)};
    int up = 1;
    for (int i = 0; i < 3; i++) up &= p[i].pid > 0 && p[i].port > 0;
    CHECK_MSG(up, "workers did not start");
    char target[256];
    snprintf(target, sizeof target, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", p[0].port, p[1].port, p[2].port);
    df_output out;
    df_graph *g = long_loop_over_workers(&out);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.worker_timeout_ms = 500;
    df_status st;
    df_session *s = up ? df_session_new(g, &o, &st) : NULL;
    CHECK_MSG(!up || s != NULL, "session: %s", st.message);
    if (s) {
        killer k = {p[1].pid, 300, 0, SIGSTOP};
        pthread_t t;
        pthread_create(&t, NULL, kill_later, &k);
        df_tensor *v = NULL;
        df_code code = df_session_run(s, NULL, NULL, 0, &out, &v, 1, NULL, 0, &st);
        double ended = now_s();
        pthread_join(t, NULL);
        CHECK_MSG(code == DF_UNAVAILABLE && strstr(st.message, "silent"), "the step with a stopped worker: %s: %s", df_code_name(code), st.message);
        /* silence counts from the last message heard, and heartbeats come every 250 ms: the
           step may end as early as 0.25 s after the stop (the message says how long it was) */
        CHECK_MSG(ended - k.at < 5.0 && ended - k.at > 0.2, "the step ended %.2f s after the stop (timeout 0.5 s)", ended - k.at);
        printf("    the step ended %.0f ms after worker 1 stopped (timeout 500 ms): %s\n", 1e3 * (ended - k.at), st.message);
        df_tensor_release(v);
        kill(p[1].pid, SIGCONT);
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", p[2].port);
        df_worker_info info;
        CHECK_MSG(df_worker_hello(addr, 2000, &info, &st) == DF_OK, "worker 2 after the abort: %s", st.message);
    }
    df_session_free(s);
    df_graph_free(g);
    for (int i = 0; i < 3; i++) { if (p[i].pid > 0) kill(p[i].pid, SIGCONT); CHECK_MSG(end_worker(&p[i]), "worker %d did not end", i); }
}

/* df_session_options.run_timeout_ms with workers: a loop over three workers that would run for
   a long time ends with DEADLINE_EXCEEDED; the master sends the workers an ABORT, and the
   session's next run works. */
DF_TEST(distributed_run_timeout_aborts_the_step_on_every_worker) {
    df_worker *w[3];
    char target[256];
    if (!start_workers(3, w, target, sizeof target)) return;
    df_output out;
    df_graph *g = long_loop_over_workers(&out);
    df_output seven = df_scalar_f32(g, 7);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.run_timeout_ms = 300;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    for (int run = 0; s && run < 2; run++) {
        df_tensor *v = NULL;
        double t0 = now_s();
        df_code code = df_session_run(s, NULL, NULL, 0, &out, &v, 1, NULL, 0, &st);
        double took = now_s() - t0;
        CHECK_MSG(code == DF_DEADLINE_EXCEEDED && strstr(st.message, "run_timeout_ms"), "run %d: %s: %s", run,
                  df_code_name(code), st.message);
        CHECK_MSG(took < 5.0, "run %d took %.2f s (timeout 0.3 s)", run, took);
        CHECK(v == NULL);
        df_tensor_release(v);
        code = df_session_run(s, NULL, NULL, 0, &seven, &v, 1, NULL, 0, &st);
        CHECK_MSG(code == DF_OK, "the next run: %s: %s", df_code_name(code), st.message);
        if (v) CHECK_NEAR(*(float *)df_tensor_data(v), 7, 0);
        df_tensor_release(v);
    }
    df_session_free(s);
    df_graph_free(g);
    for (int i = 0; i < 3; i++) df_worker_stop(w[i]);
}

/* A peer that accepts the connection but never answers HELLO: df_session_new gives up after
   worker_timeout_ms with a status, and with a NULL status it returns NULL (it read the status
   it was not given). */
#include <netinet/in.h>
#include <sys/socket.h>
DF_TEST(distributed_session_to_a_peer_that_never_answers) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int ready = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0 &&
                getsockname(fd, (struct sockaddr *)&a, &len) == 0;  /* the kernel accepts; no one answers */
    CHECK(ready);
    if (!ready) { if (fd >= 0) close(fd); return; }
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", ntohs(a.sin_port));
    df_graph *g = df_graph_new();
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.worker_timeout_ms = 200;
    df_status st;
    CHECK(df_session_new(g, &o, &st) == NULL);
    CHECK_MSG(st.code == DF_UNAVAILABLE, "%s: %s", df_code_name(st.code), st.message);
    CHECK(df_session_new(g, &o, NULL) == NULL);
    df_graph_free(g);
    close(fd);
}
