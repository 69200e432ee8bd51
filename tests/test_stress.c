/* test_stress.c - one session run from 8 and 16 threads at once (dataflow.h's promise): an int64
   counter under AssignAdd and AssignSub, the optimizers' Apply ops and df_minimize, a while loop,
   a cond and a session with two CPU devices, each with variables updated by every run; and the
   first runs of a graph with a While and an If, which one of them lowers while the others plan.
   Every run's results are checked exactly, and so is the history the runs make together: the
   values after the updates of one variable, in order, step by each run's increment from the
   initial value to the final one (no update lost or seen twice). A tensor a run fetched must not
   change afterwards (the optimizer case re-checks each one after the thread's next run).
   Threads start together, so their first runs also race to build the plans.

   Built into the unit tests (ASan+UBSan), and in build.sh under ThreadSanitizer and with ASan
   and DF_NO_TENSOR_RECYCLE (tensors freed at their last release, so a use after it is seen).
   Iterations are few so the file takes seconds there on two cores; DF_STRESS_SCALE=k runs k
   times as many, for a soak. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

static int st_scale(void) {
    const char *e = getenv("DF_STRESS_SCALE");
    long k = e ? strtol(e, NULL, 10) : 1;
    return k < 1 ? 1 : k > 100000 ? 100000 : (int)k;
}

/* A hang (a lost wake-up, a deadlock) ends the binary with the test's name, not a stuck build. */
static const char *st_watch_name = "";
static void st_watch_fire(int sig) {
    static const char m[] = "\n*** timed out (a hang under concurrent runs?) in test ";
    size_t len = 0;
    (void)sig;
    while (st_watch_name[len]) len++;
    if (write(2, m, sizeof m - 1) < 0 || write(2, st_watch_name, len) < 0 || write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}
static void st_watch(const char *name) {
    st_watch_name = name;
    signal(SIGALRM, st_watch_fire);
    alarm((unsigned)(300 * st_scale()));
}
static void st_unwatch(void) { alarm(0); }

/* ---- The driver: n_threads threads, each `iters` runs of `once` on one shared session ---- */
typedef struct st_job st_job;
typedef void (*st_once_fn)(st_job *job, int iter);
typedef struct st_group {
    df_session *s;
    const void *ctx;             /* the scenario's graph handles */
    st_once_fn once;
    int n_threads, iters, n_rec;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiting;                 /* the start line: every thread's first run starts together */
} st_group;
struct st_job {
    st_group *grp;
    int id, errors;
    char first_error[600];
    double *rec;                 /* n_rec values per run, for the checks after the threads end */
    df_tensor *kept;             /* a tensor fetched by the run before, re-checked after this one */
    double kept_k;
};

static void st_fail(st_job *job, const char *fmt, ...) {
    if (job->errors++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->first_error, sizeof job->first_error, fmt, ap);
    va_end(ap);
}
static int st_run(st_job *job, const df_output *feeds, df_tensor *const *vals, int n_feeds,
                  const df_output *fetches, df_tensor **out, int n_fetches, df_node *const *targets, int n_targets) {
    df_status st;
    df_session_run(job->grp->s, feeds, vals, n_feeds, fetches, out, n_fetches, targets, n_targets, &st);
    if (st.code) { st_fail(job, "run: %s: %s", df_code_name(st.code), st.message); return 0; }
    return 1;
}
static int st_scalar_ok(st_job *job, const df_tensor *t, df_dtype dtype, const char *what) {
    if (t && df_tensor_dtype(t) == dtype && df_tensor_rank(t) == 0) return 1;
    st_fail(job, "%s: expected a %s scalar, got %s of rank %d", what, df_dtype_name(dtype),
            t ? df_dtype_name(df_tensor_dtype(t)) : "nothing", t ? df_tensor_rank(t) : -1);
    return 0;
}
static int64_t st_i64(const df_tensor *t) { return *(const int64_t *)df_tensor_data(t); }

static void *st_thread(void *arg) {
    st_job *job = (st_job *)arg;
    st_group *grp = job->grp;
    pthread_mutex_lock(&grp->mu);
    if (++grp->waiting == grp->n_threads) pthread_cond_broadcast(&grp->cv);
    while (grp->waiting < grp->n_threads) pthread_cond_wait(&grp->cv, &grp->mu);
    pthread_mutex_unlock(&grp->mu);
    for (int i = 0; i < grp->iters; i++) grp->once(job, i);
    return NULL;
}

/* Runs the threads; returns their records (n_threads * iters * n_rec values, run by run), to
   free; NULL if a thread failed (already reported). */
static double *st_go(df_session *s, const void *ctx, st_once_fn once, int n_threads, int iters, int n_rec) {
    st_group grp;
    memset(&grp, 0, sizeof grp);
    grp.s = s; grp.ctx = ctx; grp.once = once;
    grp.n_threads = n_threads; grp.iters = iters; grp.n_rec = n_rec;
    pthread_mutex_init(&grp.mu, NULL);
    pthread_cond_init(&grp.cv, NULL);
    double *rec = (double *)calloc((size_t)n_threads * (size_t)iters * (size_t)n_rec + 1, sizeof(double));
    st_job *jobs = (st_job *)calloc((size_t)n_threads, sizeof *jobs);
    pthread_t *th = (pthread_t *)calloc((size_t)n_threads, sizeof *th);
    int ok = rec && jobs && th, started = 0;
    for (int t = 0; ok && t < n_threads; t++) {
        jobs[t].grp = &grp; jobs[t].id = t;
        jobs[t].rec = rec + (size_t)t * (size_t)iters * (size_t)n_rec;
        if (pthread_create(&th[t], NULL, st_thread, &jobs[t])) ok = 0;
        else started++;
    }
    if (started < n_threads) {            /* release the ones waiting at the start line */
        pthread_mutex_lock(&grp.mu);
        grp.waiting = n_threads;
        pthread_cond_broadcast(&grp.cv);
        pthread_mutex_unlock(&grp.mu);
    }
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    CHECK_MSG(ok, "could not start %d threads", n_threads);
    for (int t = 0; jobs && t < started; t++) {
        df_tensor_release(jobs[t].kept);
        CHECK_MSG(jobs[t].errors == 0, "thread %d of %d: %d bad runs of %d; first: %s", t, n_threads,
                  jobs[t].errors, iters, jobs[t].first_error);
        if (jobs[t].errors) ok = 0;
    }
    pthread_mutex_destroy(&grp.mu);
    pthread_cond_destroy(&grp.cv);
    free(jobs); free(th);
    if (!ok) { free(rec); return NULL; }
    return rec;
}

/* How a case's session is made: the 8-thread cases give it a pool of 3 threads, the 16-thread
   ones run it on the callers' threads with every graph pass off (the executors then read the
   caller's graph). */
typedef struct { int n_threads, inter_op_threads, disable_passes, iters; } st_cfg;
static df_session *st_session(df_graph *g, int n_cpu, const st_cfg *cfg) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = n_cpu;
    o.inter_op_threads = cfg->inter_op_threads;
    o.disable_passes = cfg->disable_passes;
    df_status st;
    CHECK_OK(df_graph_status(g));
    df_session *s = df_graph_status(g)->code ? NULL : df_session_new(g, &o, &st);
    if (s) CHECK_OK(&st);
    return s;
}
static int st_init(df_session *s, df_node *const *targets, int n) {
    df_status st;
    df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, n, &st);
    CHECK_OK(&st);
    return st.code == DF_OK;
}
static df_tensor *st_read(df_session *s, df_output var) {
    df_status st;
    df_tensor *t = NULL;
    df_session_run(s, NULL, NULL, 0, &var, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    return t;
}
static int64_t st_read_i64(df_session *s, df_output var) {
    df_tensor *t = st_read(s, var);
    int64_t v = t && df_tensor_dtype(t) == DF_INT64 ? st_i64(t) : INT64_MIN;
    df_tensor_release(t);
    return v;
}

/* The history of one variable's updates: pairs (value after the update, increment), one per
   run, in any order. Sorted by the value after (increments are positive), each must be the one
   before plus its increment, from `start`; the last is returned (the variable's final value). */
static int st_by_after(const void *a, const void *b) {
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? -1 : x > y;
}
static double st_check_history(double *pairs, int n, double start, const char *what) {
    qsort(pairs, (size_t)n, 2 * sizeof(double), st_by_after);
    double prev = start;
    int bad = 0;
    for (int i = 0; i < n && bad < 3; i++) {
        double after = pairs[2 * i], inc = pairs[2 * i + 1];
        if (after - inc != prev) {
            bad++;
            CHECK_MSG(0, "%s: update %d of %d went from %.17g to %.17g adding %.17g (lost or doubled "
                      "updates)", what, i + 1, n, after - inc, after, inc);
        }
        prev = after;
    }
    return prev;
}

/* =============================================================================================
   An int64 counter: AssignAdd(counter, 1) fetched and AssignSub(down, 1), one run each. Half
   the threads fetch both (another signature, so two plans are built concurrently).
   ============================================================================================= */
typedef struct { df_output counter, down; df_node *inc, *dec; } st_counter;
static void st_counter_once(st_job *job, int iter) {
    const st_counter *c = (const st_counter *)job->grp->ctx;
    double *rec = job->rec + (size_t)iter * 2;
    df_output fetch[2] = {{c->inc, 0}, {c->dec, 0}};
    df_tensor *out[2] = {NULL, NULL};
    int both = job->id & 1;
    if (!st_run(job, NULL, NULL, 0, fetch, out, both ? 2 : 1, both ? NULL : &c->dec, both ? 0 : 1)) return;
    if (st_scalar_ok(job, out[0], DF_INT64, "AssignAdd's output")) {
        rec[0] = (double)st_i64(out[0]);
        rec[1] = 1;
    }
    if (both && st_scalar_ok(job, out[1], DF_INT64, "AssignSub's output") && st_i64(out[1]) >= 0)
        st_fail(job, "AssignSub's output %lld is not negative", (long long)st_i64(out[1]));
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
}
static void st_counter_case(const st_cfg *cfg) {
    int n_threads = cfg->n_threads, iters = cfg->iters * st_scale();
    df_graph *g = df_graph_new();
    st_counter c;
    c.counter = df_variable(g, "counter", DF_INT64, 0, NULL);
    c.down = df_variable(g, "down", DF_INT64, 0, NULL);
    df_node *init[2] = {df_assign(g, c.counter, df_scalar_i64(g, 0)), df_assign(g, c.down, df_scalar_i64(g, 0))};
    c.inc = df_assign_add(g, c.counter, df_scalar_i64(g, 1));
    c.dec = df_assign_sub(g, c.down, df_scalar_i64(g, 1));
    df_session *s = st_session(g, 1, cfg);
    if (s && st_init(s, init, 2)) {
        double *rec = st_go(s, &c, st_counter_once, n_threads, iters, 2);
        int64_t n = (int64_t)n_threads * iters;
        if (rec) CHECK_EQ_INT((int64_t)st_check_history(rec, (int)n, 0, "counter"), n);
        free(rec);
        CHECK_EQ_INT(st_read_i64(s, c.counter), n);
        CHECK_EQ_INT(st_read_i64(s, c.down), -n);
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(stress_int64_counter_assign_add_8_threads) {
    st_watch("stress_int64_counter_assign_add_8_threads");
    st_counter_case(&(st_cfg){8, 4, 0, 2000});
    st_unwatch();
}
DF_TEST(stress_int64_counter_assign_add_16_threads) {
    st_watch("stress_int64_counter_assign_add_16_threads");
    st_counter_case(&(st_cfg){16, 1, DF_PASS_ALL, 1000});
    st_unwatch();
}

/* =============================================================================================
   Optimizers: ApplyGradientDescent (float), ApplyMomentum and ApplyAdam (double) with constant
   gradients and hyperparameters, so every update is the same function of the state and the
   values after k updates are known exactly; and df_minimize's momentum step (its gradient is a
   constant too: loss = sum(w * c)). Each run fetches the three Apply outputs (the variables'
   values after its updates) and runs the df_minimize step.
   ============================================================================================= */
#define ST_SGD_N 4
static const float st_sgd_w0[ST_SGD_N] = {1.0f, 2.0f, -3.0f, 40.0f};
static const float st_sgd_delta = 0.25f, st_sgd_lr = 0.5f;        /* (every value exact) */
#define ST_MOM_N 3
static const double st_mom_w0[ST_MOM_N] = {0.5, -1.5, 2.25}, st_mom_g[ST_MOM_N] = {1.0, 0.5, -1.0};
static const double st_mom_lr = 0.25, st_mom_m = 0.5;
#define ST_ADAM_N 2
static const double st_adam_w0[ST_ADAM_N] = {1.0, -1.0}, st_adam_g[ST_ADAM_N] = {1.0, -2.0};
static const double st_adam_b1p = 0.9, st_adam_b2p = 0.999, st_adam_lr = 0.01, st_adam_b1 = 0.9,
                    st_adam_b2 = 0.999, st_adam_eps = 1e-8;
#define ST_MIN_N 2
static const double st_min_w0[ST_MIN_N] = {3.0, -3.0}, st_min_c[ST_MIN_N] = {0.5, -0.25};

/* The kernels' arithmetic, one update at a time. */
static void st_momentum_step(double *w, double *a, const double *g, int n, double lr, double mom) {
    for (int i = 0; i < n; i++) { a[i] = a[i] * mom + g[i]; w[i] -= a[i] * lr; }
}
static void st_adam_step(double *w, double *m, double *v, int n) {
    double alpha = st_adam_lr * sqrt(1 - st_adam_b2p) / (1 - st_adam_b1p);
    for (int i = 0; i < n; i++) {
        double gi = st_adam_g[i];
        m[i] += (gi - m[i]) * (1 - st_adam_b1);
        v[i] += (gi * gi - v[i]) * (1 - st_adam_b2);
        w[i] -= alpha * m[i] / (sqrt(v[i]) + st_adam_eps);
    }
}
static int st_close(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(b)); }

typedef struct {
    df_output ws, wm, am, wa, ma, va, wz;
    df_node *sgd, *mom, *adam, *step;
} st_optim;
static df_tensor *st_vec_f32(const float *v, int n) {
    int64_t d = n;
    return df_tensor_from_data(DF_FLOAT, 1, &d, v, (size_t)n * sizeof(float), NULL);
}
static df_tensor *st_vec_f64(const double *v, int n) {
    int64_t d = n;
    return df_tensor_from_data(DF_DOUBLE, 1, &d, v, (size_t)n * sizeof(double), NULL);
}
static df_output st_const_f64(df_graph *g, const double *v, int n) {
    df_tensor *t = st_vec_f64(v, n);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_node *st_apply(df_graph *g, const char *op, const df_output *ins, int n) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    return df_op_finish(b);
}
/* The k of a fetched SGD value: w0 - k * lr * delta in every element alike, or -1. */
static double st_sgd_k(const df_tensor *t) {
    if (!t || df_tensor_dtype(t) != DF_FLOAT || df_tensor_num_elements(t) != ST_SGD_N) return -1;
    const float *w = (const float *)df_tensor_data(t);
    double k = (st_sgd_w0[0] - w[0]) / (st_sgd_lr * st_sgd_delta);
    for (int i = 0; i < ST_SGD_N; i++)
        if (w[i] != (float)(st_sgd_w0[i] - k * st_sgd_lr * st_sgd_delta)) return -1;
    return k;
}
static void st_optim_once(st_job *job, int iter) {
    const st_optim *o = (const st_optim *)job->grp->ctx;
    double *rec = job->rec + (size_t)iter * 3;
    df_output fetch[3] = {{o->sgd, 0}, {o->mom, 0}, {o->adam, 0}};
    df_tensor *out[3] = {NULL, NULL, NULL};
    if (!st_run(job, NULL, NULL, 0, fetch, out, 3, &o->step, 1)) return;
    double k = st_sgd_k(out[0]);
    if (k < 1) st_fail(job, "ApplyGradientDescent's output is not w0 - k * lr * delta for a k >= 1");
    if (!out[1] || df_tensor_dtype(out[1]) != DF_DOUBLE || df_tensor_num_elements(out[1]) != ST_MOM_N ||
        !out[2] || df_tensor_dtype(out[2]) != DF_DOUBLE || df_tensor_num_elements(out[2]) != ST_ADAM_N)
        st_fail(job, "ApplyMomentum's or ApplyAdam's output has the wrong type or size");
    else {
        rec[0] = k;
        rec[1] = ((const double *)df_tensor_data(out[1]))[0];
        rec[2] = ((const double *)df_tensor_data(out[2]))[0];
    }
    /* what the run before fetched is the caller's: later updates must leave it alone */
    if (job->kept && st_sgd_k(job->kept) != job->kept_k)
        st_fail(job, "a fetched ApplyGradientDescent value changed after its run (k %g)", job->kept_k);
    df_tensor_release(job->kept);
    job->kept = out[0];
    job->kept_k = k;
    df_tensor_release(out[1]);
    df_tensor_release(out[2]);
}
static int st_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}
static void st_optim_case(const st_cfg *cfg) {
    int n_threads = cfg->n_threads, iters = cfg->iters * st_scale();
    df_graph *g = df_graph_new();
    st_optim o;
    int64_t ds = ST_SGD_N, dm = ST_MOM_N, da = ST_ADAM_N, dz = ST_MIN_N;
    df_tensor *ws0 = st_vec_f32(st_sgd_w0, ST_SGD_N);
    float deltas[ST_SGD_N];
    for (int i = 0; i < ST_SGD_N; i++) deltas[i] = st_sgd_delta;
    df_tensor *dt = st_vec_f32(deltas, ST_SGD_N);
    o.ws = df_variable(g, "sgd/w", DF_FLOAT, 1, &ds);
    o.wm = df_variable(g, "mom/w", DF_DOUBLE, 1, &dm);
    o.am = df_variable(g, "mom/accum", DF_DOUBLE, 1, &dm);
    o.wa = df_variable(g, "adam/w", DF_DOUBLE, 1, &da);
    o.ma = df_variable(g, "adam/m", DF_DOUBLE, 1, &da);
    o.va = df_variable(g, "adam/v", DF_DOUBLE, 1, &da);
    o.wz = df_variable(g, "min/w", DF_DOUBLE, 1, &dz);
    double zeros[3] = {0, 0, 0};
    df_node *init[8] = {
        df_assign(g, o.ws, df_const(g, ws0)), df_assign(g, o.wm, st_const_f64(g, st_mom_w0, ST_MOM_N)),
        df_assign(g, o.am, st_const_f64(g, zeros, ST_MOM_N)), df_assign(g, o.wa, st_const_f64(g, st_adam_w0, ST_ADAM_N)),
        df_assign(g, o.ma, st_const_f64(g, zeros, ST_ADAM_N)), df_assign(g, o.va, st_const_f64(g, zeros, ST_ADAM_N)),
        df_assign(g, o.wz, st_const_f64(g, st_min_w0, ST_MIN_N)), NULL};
    df_output sgd_in[3] = {o.ws, df_scalar_f32(g, st_sgd_lr), df_const(g, dt)};
    o.sgd = st_apply(g, "ApplyGradientDescent", sgd_in, 3);
    df_output mom_in[5] = {o.wm, o.am, df_scalar_f64(g, st_mom_lr), st_const_f64(g, st_mom_g, ST_MOM_N), df_scalar_f64(g, st_mom_m)};
    o.mom = st_apply(g, "ApplyMomentum", mom_in, 5);
    df_output adam_in[10] = {o.wa, o.ma, o.va, df_scalar_f64(g, st_adam_b1p), df_scalar_f64(g, st_adam_b2p),
                             df_scalar_f64(g, st_adam_lr), df_scalar_f64(g, st_adam_b1), df_scalar_f64(g, st_adam_b2),
                             df_scalar_f64(g, st_adam_eps), st_const_f64(g, st_adam_g, ST_ADAM_N)};
    o.adam = st_apply(g, "ApplyAdam", adam_in, 10);
    df_output loss = df_reduce_sum(g, df_mul(g, o.wz, st_const_f64(g, st_min_c, ST_MIN_N)), 0, NULL, 0);
    df_optimizer opt;
    memset(&opt, 0, sizeof opt);
    opt.kind = DF_OPT_MOMENTUM; opt.learning_rate = st_mom_lr; opt.momentum = st_mom_m;
    o.step = df_minimize(g, loss, 1, &o.wz, &opt, &init[7]);
    df_tensor_release(ws0);
    df_tensor_release(dt);
    df_session *s = st_session(g, 1, cfg);
    if (s && st_init(s, init, 7) && st_init(s, &init[7], 1)) {
        double *rec = st_go(s, &o, st_optim_once, n_threads, iters, 3);
        int n = n_threads * iters;
        /* the expected values after k = 1..n updates, element 0, and the final variables */
        double wm[ST_MOM_N], am[ST_MOM_N] = {0}, wa[ST_ADAM_N], ma[ST_ADAM_N] = {0}, va[ST_ADAM_N] = {0};
        double wz[ST_MIN_N], az[ST_MIN_N] = {0};
        memcpy(wm, st_mom_w0, sizeof wm); memcpy(wa, st_adam_w0, sizeof wa); memcpy(wz, st_min_w0, sizeof wz);
        double *mom_k = (double *)malloc((size_t)n * sizeof(double)), *adam_k = (double *)malloc((size_t)n * sizeof(double));
        double *col = (double *)malloc((size_t)n * sizeof(double));
        for (int k = 0; mom_k && adam_k && k < n; k++) {
            st_momentum_step(wm, am, st_mom_g, ST_MOM_N, st_mom_lr, st_mom_m);
            st_adam_step(wa, ma, va, ST_ADAM_N);
            st_momentum_step(wz, az, st_min_c, ST_MIN_N, st_mom_lr, st_mom_m);
            mom_k[k] = wm[0];
            adam_k[k] = wa[0];
        }
        for (int j = 0; rec && col && mom_k && adam_k && j < 3; j++) {   /* each k seen once */
            for (int r = 0; r < n; r++) col[r] = rec[(size_t)r * 3 + (size_t)j];
            qsort(col, (size_t)n, sizeof(double), j == 0 ? st_by_after : st_desc);
            static const char *const names[3] = {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdam"};
            int bad = 0;
            for (int r = 0; r < n && bad < 3; r++) {
                double want = j == 0 ? r + 1 : j == 1 ? mom_k[r] : adam_k[r];
                if (j == 0 ? col[r] != want : !st_close(col[r], want)) {
                    bad++;
                    CHECK_MSG(0, "%s: the %d-th update's value is %.17g, expected %.17g (lost or doubled "
                              "updates)", names[j], r + 1, col[r], want);
                }
            }
        }
        df_tensor *t[4] = {st_read(s, o.ws), st_read(s, o.wm), st_read(s, o.wa), st_read(s, o.wz)};
        for (int i = 0; t[0] && i < ST_SGD_N; i++) {
            float got = ((const float *)df_tensor_data(t[0]))[i], want = st_sgd_w0[i] - (float)n * st_sgd_lr * st_sgd_delta;
            CHECK_MSG(got == want, "gradient descent w[%d] %.9g, expected %.9g", i, got, want);
        }
        for (int i = 0; t[1] && i < ST_MOM_N; i++) CHECK_MSG(st_close(((const double *)df_tensor_data(t[1]))[i], wm[i]),
                                                             "momentum w[%d] %.17g, expected %.17g", i, ((const double *)df_tensor_data(t[1]))[i], wm[i]);
        for (int i = 0; t[2] && i < ST_ADAM_N; i++) CHECK_MSG(st_close(((const double *)df_tensor_data(t[2]))[i], wa[i]),
                                                              "adam w[%d] %.17g, expected %.17g", i, ((const double *)df_tensor_data(t[2]))[i], wa[i]);
        for (int i = 0; t[3] && i < ST_MIN_N; i++) CHECK_MSG(st_close(((const double *)df_tensor_data(t[3]))[i], wz[i]),
                                                             "df_minimize's w[%d] %.17g, expected %.17g", i, ((const double *)df_tensor_data(t[3]))[i], wz[i]);
        for (int i = 0; i < 4; i++) df_tensor_release(t[i]);
        free(rec); free(col); free(mom_k); free(adam_k);
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(stress_optimizers_8_threads) {
    st_watch("stress_optimizers_8_threads");
    st_optim_case(&(st_cfg){8, 4, 0, 300});
    st_unwatch();
}
DF_TEST(stress_optimizers_16_threads) {
    st_watch("stress_optimizers_16_threads");
    st_optim_case(&(st_cfg){16, 1, DF_PASS_ALL, 150});
    st_unwatch();
}

/* =============================================================================================
   A while loop: acc += i * k for i < n (n fed per run; k a variable, read in the body); after
   it AssignAdd(total, acc) is fetched and AssignAdd(iterations, i) runs. (Assign ops inside a
   loop or a cond are refused: their variable would enter as a value.)
   ============================================================================================= */
typedef struct {
    df_output n, k, iterations, total, acc;
    df_node *add_total, *add_iterations;
} st_loop;
static df_output st_loop_cond(df_graph *g, void *user, const df_output *v) {
    const st_loop *L = (const st_loop *)user;
    return df_less(g, v[0], L->n);
}
static void st_loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const st_loop *L = (const st_loop *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_mul(g, df_cast(g, v[0], DF_INT64), L->k));
}
enum { ST_LOOP_K = 3 };
static int32_t st_loop_n(int thread, int iter) { return (thread * 5 + iter * 3) % 7; }
static int64_t st_loop_want(int32_t n) { return (int64_t)ST_LOOP_K * n * (n - 1) / 2; }
static void st_loop_once(st_job *job, int iter) {
    const st_loop *L = (const st_loop *)job->grp->ctx;
    double *rec = job->rec + (size_t)iter * 2;
    int32_t n = st_loop_n(job->id, iter);
    df_tensor *nv = df_tensor_scalar_i32(n);
    df_output fetch[2] = {L->acc, {L->add_total, 0}};
    df_tensor *out[2] = {NULL, NULL};
    if (st_run(job, &L->n, &nv, 1, fetch, out, 2, &L->add_iterations, 1) &&
        st_scalar_ok(job, out[0], DF_INT64, "the loop's result") && st_scalar_ok(job, out[1], DF_INT64, "AssignAdd's output")) {
        if (st_i64(out[0]) != st_loop_want(n))
            st_fail(job, "n %d: the loop gave %lld, expected %lld", n, (long long)st_i64(out[0]), (long long)st_loop_want(n));
        rec[0] = (double)st_i64(out[1]);
        rec[1] = (double)st_i64(out[0]);
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_tensor_release(nv);
}
/* Records with a zero increment say nothing about the order; the history keeps the others. */
static int st_nonzero_pairs(double *rec, int n) {
    int m = 0;
    for (int r = 0; r < n; r++)
        if (rec[2 * r + 1] != 0) { rec[2 * m] = rec[2 * r]; rec[2 * m + 1] = rec[2 * r + 1]; m++; }
    return m;
}
static void st_loop_case(const st_cfg *cfg) {
    int n_threads = cfg->n_threads, iters = cfg->iters * st_scale();
    df_graph *g = df_graph_new();
    st_loop L;
    L.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output kv = df_variable(g, "k", DF_INT64, 0, NULL);
    L.k = kv;
    L.iterations = df_variable(g, "iterations", DF_INT64, 0, NULL);
    L.total = df_variable(g, "total", DF_INT64, 0, NULL);
    df_node *init[3] = {df_assign(g, kv, df_scalar_i64(g, ST_LOOP_K)), df_assign(g, L.iterations, df_scalar_i64(g, 0)),
                        df_assign(g, L.total, df_scalar_i64(g, 0))};
    df_output start[2] = {df_scalar_i32(g, 0), df_scalar_i64(g, 0)}, r[2];
    CHECK_EQ_INT(df_while_loop(g, 2, start, st_loop_cond, st_loop_body, &L, NULL, r), DF_OK);
    L.acc = r[1];
    L.add_total = df_assign_add(g, L.total, L.acc);
    L.add_iterations = df_assign_add(g, L.iterations, df_cast(g, r[0], DF_INT64));
    df_session *s = st_session(g, 1, cfg);
    if (s && st_init(s, init, 3)) {
        double *rec = st_go(s, &L, st_loop_once, n_threads, iters, 2);
        int64_t want_total = 0, want_iterations = 0;
        for (int t = 0; t < n_threads; t++)
            for (int i = 0; i < iters; i++) { want_total += st_loop_want(st_loop_n(t, i)); want_iterations += st_loop_n(t, i); }
        if (rec) {
            int m = st_nonzero_pairs(rec, n_threads * iters);
            CHECK_EQ_INT((int64_t)st_check_history(rec, m, 0, "total"), want_total);
        }
        free(rec);
        CHECK_EQ_INT(st_read_i64(s, L.total), want_total);
        CHECK_EQ_INT(st_read_i64(s, L.iterations), want_iterations);
        CHECK_EQ_INT(st_read_i64(s, kv), ST_LOOP_K);
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(stress_while_loop_8_threads) {
    st_watch("stress_while_loop_8_threads");
    st_loop_case(&(st_cfg){8, 4, 0, 160});
    st_unwatch();
}
DF_TEST(stress_while_loop_16_threads) {
    st_watch("stress_while_loop_16_threads");
    st_loop_case(&(st_cfg){16, 1, DF_PASS_ALL, 80});
    st_unwatch();
}

/* =============================================================================================
   A cond: x fed per run; x % 3 == 0 ? x * k (k a variable, read in the branch) : x + 100;
   AssignAdd(total, result) fetched, AssignAdd(taken, the predicate) and AssignSub(untaken, its
   negation) run.
   ============================================================================================= */
typedef struct { df_output x, k, taken, untaken, total, result; df_node *add_total, *counts[2]; } st_cond;
static void st_then(df_graph *g, void *user, df_output *outs) {
    const st_cond *C = (const st_cond *)user;
    outs[0] = df_mul(g, C->x, C->k);
}
static void st_else(df_graph *g, void *user, df_output *outs) {
    const st_cond *C = (const st_cond *)user;
    outs[0] = df_add(g, C->x, df_scalar_i64(g, 100));
}
static int64_t st_cond_x(int thread, int iter) { return 1 + (thread * 7 + iter) % 11; }
static int64_t st_cond_want(int64_t x) { return x % 3 == 0 ? x * ST_LOOP_K : x + 100; }
static void st_cond_once(st_job *job, int iter) {
    const st_cond *C = (const st_cond *)job->grp->ctx;
    double *rec = job->rec + (size_t)iter * 2;
    int64_t x = st_cond_x(job->id, iter);
    df_tensor *xv = df_tensor_scalar_i64(x);
    df_output fetch[2] = {C->result, {C->add_total, 0}};
    df_tensor *out[2] = {NULL, NULL};
    if (st_run(job, &C->x, &xv, 1, fetch, out, 2, C->counts, 2) &&
        st_scalar_ok(job, out[0], DF_INT64, "the cond's result") && st_scalar_ok(job, out[1], DF_INT64, "AssignAdd's output")) {
        if (st_i64(out[0]) != st_cond_want(x))
            st_fail(job, "x %lld: the cond gave %lld, expected %lld", (long long)x, (long long)st_i64(out[0]), (long long)st_cond_want(x));
        rec[0] = (double)st_i64(out[1]);
        rec[1] = (double)st_i64(out[0]);
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_tensor_release(xv);
}
static void st_cond_case(const st_cfg *cfg) {
    int n_threads = cfg->n_threads, iters = cfg->iters * st_scale();
    df_graph *g = df_graph_new();
    st_cond C;
    C.x = df_placeholder(g, "x", DF_INT64, 0, NULL);
    C.k = df_variable(g, "k", DF_INT64, 0, NULL);
    C.taken = df_variable(g, "taken", DF_INT64, 0, NULL);
    C.untaken = df_variable(g, "untaken", DF_INT64, 0, NULL);
    C.total = df_variable(g, "total", DF_INT64, 0, NULL);
    df_node *init[4] = {df_assign(g, C.k, df_scalar_i64(g, ST_LOOP_K)), df_assign(g, C.taken, df_scalar_i64(g, 0)),
                        df_assign(g, C.untaken, df_scalar_i64(g, 0)), df_assign(g, C.total, df_scalar_i64(g, 0))};
    df_output pred = df_equal(g, df_floor_mod_i(g, C.x, df_scalar_i64(g, 3)), df_scalar_i64(g, 0));
    CHECK_EQ_INT(df_cond(g, pred, 1, st_then, st_else, &C, &C.result), DF_OK);
    C.add_total = df_assign_add(g, C.total, C.result);
    df_output taken = df_cast(g, pred, DF_INT64);
    C.counts[0] = df_assign_add(g, C.taken, taken);
    C.counts[1] = df_assign_sub(g, C.untaken, df_sub(g, df_scalar_i64(g, 1), taken));
    df_session *s = st_session(g, 1, cfg);
    if (s && st_init(s, init, 4)) {
        double *rec = st_go(s, &C, st_cond_once, n_threads, iters, 2);
        int64_t want_total = 0, want_taken = 0;
        for (int t = 0; t < n_threads; t++)
            for (int i = 0; i < iters; i++) {
                int64_t x = st_cond_x(t, i);
                want_total += st_cond_want(x);
                want_taken += x % 3 == 0;
            }
        if (rec) CHECK_EQ_INT((int64_t)st_check_history(rec, n_threads * iters, 0, "total"), want_total);
        free(rec);
        CHECK_EQ_INT(st_read_i64(s, C.total), want_total);
        CHECK_EQ_INT(st_read_i64(s, C.taken), want_taken);
        CHECK_EQ_INT(st_read_i64(s, C.untaken), -((int64_t)n_threads * iters - want_taken));
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(stress_cond_8_threads) {
    st_watch("stress_cond_8_threads");
    st_cond_case(&(st_cfg){8, 4, 0, 300});
    st_unwatch();
}
DF_TEST(stress_cond_16_threads) {
    st_watch("stress_cond_16_threads");
    st_cond_case(&(st_cfg){16, 1, DF_PASS_ALL, 150});
    st_unwatch();
}

/* =============================================================================================
   Two CPU devices: x fed on CPU:0; on CPU:1 a while loop makes tri = x (x - 1) / 2; back on
   CPU:0 y = tri + x * x; on CPU:1 the variable and AssignAdd(v, y); on CPU:0 its negation. Each
   run crosses the devices four times, through a partitioned loop.
   ============================================================================================= */
typedef struct { df_output x, v, y, neg; df_node *add; } st_two;
static df_output st_tri_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], *(const df_output *)user);
}
static void st_tri_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i64(g, 1));
    next[1] = df_add(g, v[1], v[0]);
}
static int64_t st_two_x(int thread, int iter) { return 1 + (thread * 3 + iter * 5) % 6; }
static int64_t st_two_want(int64_t x) { return x * (x - 1) / 2 + x * x; }
static void st_two_once(st_job *job, int iter) {
    const st_two *T = (const st_two *)job->grp->ctx;
    double *rec = job->rec + (size_t)iter * 2;
    int64_t x = st_two_x(job->id, iter);
    df_tensor *xv = df_tensor_scalar_i64(x);
    df_output fetch[3] = {T->y, {T->add, 0}, T->neg};
    df_tensor *out[3] = {NULL, NULL, NULL};
    if (st_run(job, &T->x, &xv, 1, fetch, out, 3, NULL, 0) && st_scalar_ok(job, out[0], DF_INT64, "y") &&
        st_scalar_ok(job, out[1], DF_INT64, "AssignAdd's output") && st_scalar_ok(job, out[2], DF_INT64, "its negation")) {
        if (st_i64(out[0]) != st_two_want(x))
            st_fail(job, "x %lld: y is %lld, expected %lld", (long long)x, (long long)st_i64(out[0]), (long long)st_two_want(x));
        if (st_i64(out[2]) != -st_i64(out[1]))
            st_fail(job, "the negation %lld of AssignAdd's output %lld", (long long)st_i64(out[2]), (long long)st_i64(out[1]));
        rec[0] = (double)st_i64(out[1]);
        rec[1] = (double)st_i64(out[0]);
    }
    for (int i = 0; i < 3; i++) df_tensor_release(out[i]);
    df_tensor_release(xv);
}
static void st_two_case(const st_cfg *cfg) {
    int n_threads = cfg->n_threads, iters = cfg->iters * st_scale();
    df_graph *g = df_graph_new();
    st_two T;
    df_graph_push_device(g, "/cpu:0");
    T.x = df_placeholder(g, "x", DF_INT64, 0, NULL);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/cpu:1");
    df_output start[2] = {df_scalar_i64(g, 0), df_scalar_i64(g, 0)}, r[2];
    CHECK_EQ_INT(df_while_loop(g, 2, start, st_tri_cond, st_tri_body, &T.x, NULL, r), DF_OK);
    T.v = df_variable(g, "v", DF_INT64, 0, NULL);
    df_node *init = df_assign(g, T.v, df_scalar_i64(g, 0));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/cpu:0");
    T.y = df_add(g, r[1], df_mul(g, T.x, T.x));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/cpu:1");
    T.add = df_assign_add(g, T.v, T.y);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/cpu:0");
    T.neg = df_neg(g, (df_output){T.add, 0});
    df_graph_pop_device(g);
    df_session *s = st_session(g, 2, cfg);
    if (s && st_init(s, &init, 1)) {
        double *rec = st_go(s, &T, st_two_once, n_threads, iters, 2);
        int64_t want = 0;
        for (int t = 0; t < n_threads; t++)
            for (int i = 0; i < iters; i++) want += st_two_want(st_two_x(t, i));
        CHECK_MSG(df_session_num_partitions(s) == 2, "%d partitions", df_session_num_partitions(s));
        if (rec) CHECK_EQ_INT((int64_t)st_check_history(rec, n_threads * iters, 0, "v"), want);
        free(rec);
        CHECK_EQ_INT(st_read_i64(s, T.v), want);
    }
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(stress_two_devices_8_threads) {
    st_watch("stress_two_devices_8_threads");
    st_two_case(&(st_cfg){8, 4, 0, 120});
    st_unwatch();
}
DF_TEST(stress_two_devices_16_threads) {
    st_watch("stress_two_devices_16_threads");
    st_two_case(&(st_cfg){16, 1, DF_PASS_ALL, 60});
    st_unwatch();
}

/* =============================================================================================
   Functional control flow met first by concurrent runs: a fresh session over a graph with a
   While (df_while) and an If (df_if) whose first runs are the threads' own, so one of them
   lowers the graph in place while the others build their plans from it. Several rounds, a
   fresh graph each.
   ============================================================================================= */
typedef struct { df_output n, tri, signed_tri; } st_func;
static df_output st_func_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], v[2]);
}
static void st_func_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], v[0]);
    next[2] = df_identity(g, v[2]);
}
static void st_func_then(df_graph *g, void *user, df_output *outs) {
    outs[0] = df_mul(g, *(const df_output *)user, df_scalar_i32(g, 2));
}
static void st_func_else(df_graph *g, void *user, df_output *outs) { outs[0] = df_neg(g, *(const df_output *)user); }
static int32_t st_func_n(int thread, int iter) { return (thread * 3 + iter) % 6; }
static void st_func_once(st_job *job, int iter) {
    const st_func *F = (const st_func *)job->grp->ctx;
    int32_t n = st_func_n(job->id, iter), tri = n * (n - 1) / 2, want = tri < 5 ? 2 * tri : -tri;
    df_tensor *nv = df_tensor_scalar_i32(n);
    df_output fetch[2] = {F->tri, F->signed_tri};
    df_tensor *out[2] = {NULL, NULL};
    int both = job->id & 1;
    if (st_run(job, &F->n, &nv, 1, fetch, out, both ? 2 : 1, NULL, 0) && st_scalar_ok(job, out[0], DF_INT32, "the While's result") &&
        (!both || st_scalar_ok(job, out[1], DF_INT32, "the If's result"))) {
        if (*(const int32_t *)df_tensor_data(out[0]) != tri)
            st_fail(job, "n %d: the While gave %d, expected %d", n, *(const int32_t *)df_tensor_data(out[0]), tri);
        if (both && *(const int32_t *)df_tensor_data(out[1]) != want)
            st_fail(job, "n %d: the If gave %d, expected %d", n, *(const int32_t *)df_tensor_data(out[1]), want);
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_tensor_release(nv);
}
static void st_func_case(const st_cfg *cfg) {
    for (int round = 0; round < 3; round++) {
        df_graph *g = df_graph_new();
        st_func F;
        F.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output start[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 0), F.n}, r[3];
        CHECK_EQ_INT(df_while(g, 3, start, st_func_cond, st_func_body, NULL, NULL, r), DF_OK);
        F.tri = r[1];
        CHECK_EQ_INT(df_if(g, df_less(g, F.tri, df_scalar_i32(g, 5)), 1, st_func_then, st_func_else, &F.tri, &F.signed_tri), DF_OK);
        df_session *s = st_session(g, 1, cfg);
        if (s) free(st_go(s, &F, st_func_once, cfg->n_threads, cfg->iters * st_scale(), 0));
        df_session_free(s);
        df_graph_free(g);
    }
}
DF_TEST(stress_functional_first_runs_8_threads) {
    st_watch("stress_functional_first_runs_8_threads");
    st_func_case(&(st_cfg){8, 4, 0, 10});
    st_unwatch();
}
DF_TEST(stress_functional_first_runs_16_threads) {
    st_watch("stress_functional_first_runs_16_threads");
    st_func_case(&(st_cfg){16, 1, DF_PASS_ALL & ~DF_PASS_INLINE, 5});
    st_unwatch();
}
