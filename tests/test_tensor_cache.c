/* Recycled small tensors (src/tensor.c): each thread keeps stacks of small tensors per
   allocator over the allocator's shared stack. Tensors made on one thread and released on
   another, threads that exit holding tensors, allocators that go (a session freed) while
   other threads still hold their tensors, more allocators than a thread has ways, small
   tensors of every rank reused with the right shape, and a steady loop that stops asking the
   BFC allocator for memory. Leaks show under ASan's leak checker, races under ThreadSanitizer. */
#include "harness.h"
#include <pthread.h>

#define N_SCALARS 16

/* x (a float scalar fed) plus constants: 16 scalars, a [3] vector, a [2,3] matrix, an int32
   [2,2,2] and an int64 scalar: small tensors of several ranks and sizes from one run. */
typedef struct small_graph {
    df_graph *g;
    df_output x, outs[N_SCALARS + 4];
    int n_outs;
} small_graph;

static void small_graph_make(small_graph *sg) {
    sg->g = df_graph_new();
    sg->x = df_placeholder(sg->g, "x", DF_FLOAT, 0, NULL);
    int k = 0;
    for (int i = 0; i < N_SCALARS; i++) sg->outs[k++] = df_add(sg->g, sg->x, df_scalar_f32(sg->g, (float)i));
    int64_t d3 = 3, d23[2] = {2, 3}, d222[3] = {2, 2, 2};
    float v3[3] = {10, 20, 30}, m23[6] = {1, 2, 3, 4, 5, 6};
    int32_t i222[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    sg->outs[k++] = df_add(sg->g, sg->x, df_const_from_data(sg->g, "v3", DF_FLOAT, 1, &d3, v3));
    sg->outs[k++] = df_mul(sg->g, df_const_from_data(sg->g, "m23", DF_FLOAT, 2, d23, m23), sg->x);
    df_output c222 = df_const_from_data(sg->g, "i222", DF_INT32, 3, d222, i222);
    sg->outs[k++] = df_add(sg->g, c222, c222);
    sg->outs[k++] = df_add(sg->g, df_scalar_i64(sg->g, 5), df_scalar_i64(sg->g, 7));
    sg->n_outs = k;
    CHECK_OK(df_graph_status(sg->g));
}

static df_session *session_of(df_graph *g, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}

/* Runs sg once with x = xv into outs; 0 on failure. */
static int small_run(df_session *s, const small_graph *sg, float xv, df_tensor **outs) {
    df_tensor *x = df_tensor_scalar_f32(xv);
    df_status st;
    df_code c = df_session_run(s, &sg->x, &x, 1, sg->outs, outs, sg->n_outs, NULL, 0, &st);
    df_tensor_release(x);
    if (c != DF_OK) df_test_fail(__FILE__, __LINE__, "run: %s", st.message);
    return c == DF_OK;
}

/* Whether outs hold what small_run(xv) computes, shapes included; counts failures in *bad. */
static int small_check(const df_tensor *const *outs, float xv) {
    int bad = 0;
    for (int i = 0; i < N_SCALARS; i++) {
        const df_tensor *t = outs[i];
        bad += !t || df_tensor_dtype(t) != DF_FLOAT || df_tensor_rank(t) != 0 || df_tensor_num_elements(t) != 1 ||
               df_tensor_nbytes(t) != 4 || *(const float *)df_tensor_data(t) != xv + (float)i;
    }
    const df_tensor *v = outs[N_SCALARS], *m = outs[N_SCALARS + 1], *c = outs[N_SCALARS + 2], *l = outs[N_SCALARS + 3];
    bad += !v || df_tensor_rank(v) != 1 || df_tensor_dim(v, 0) != 3 || df_tensor_num_elements(v) != 3 ||
           df_tensor_nbytes(v) != 12 || df_tensor_dim(v, 1) != -1;
    for (int i = 0; !bad && i < 3; i++) bad += ((const float *)df_tensor_data(v))[i] != xv + 10.0f * (float)(i + 1);
    bad += !m || df_tensor_rank(m) != 2 || df_tensor_dim(m, 0) != 2 || df_tensor_dim(m, 1) != 3 ||
           df_tensor_num_elements(m) != 6 || df_tensor_nbytes(m) != 24;
    for (int i = 0; !bad && i < 6; i++) bad += ((const float *)df_tensor_data(m))[i] != (float)(i + 1) * xv;
    bad += !c || df_tensor_dtype(c) != DF_INT32 || df_tensor_rank(c) != 3 || df_tensor_num_elements(c) != 8 ||
           df_tensor_dim(c, 2) != 2 || df_tensor_nbytes(c) != 32;
    for (int i = 0; !bad && i < 8; i++) bad += ((const int32_t *)df_tensor_data(c))[i] != 2 * (i + 1);
    bad += !l || df_tensor_dtype(l) != DF_INT64 || df_tensor_rank(l) != 0 || *(const int64_t *)df_tensor_data(l) != 12;
    for (int i = 0; i < N_SCALARS + 4; i++)       /* the promised alignment, recycled or not */
        bad += outs[i] && ((uintptr_t)df_tensor_data(outs[i]) % 64) != 0;
    return bad;
}

/* Shapes stay right when a header comes back for another rank: scalars, then vectors, then
   scalars again from the same thread's stack. */
DF_TEST(tensor_cache_recycled_shapes) {
    small_graph sg;
    small_graph_make(&sg);
    df_session *s = session_of(sg.g, 1);
    df_tensor *outs[N_SCALARS + 4];
    int bad = 0;
    for (int r = 0; r < 50; r++) {
        if (!small_run(s, &sg, (float)r, outs)) break;
        bad += small_check((const df_tensor *const *)outs, (float)r);
        /* release in a changing order so that headers change rank from run to run */
        for (int i = 0; i < sg.n_outs; i++) df_tensor_release(outs[(i + r) % sg.n_outs]);
    }
    CHECK_EQ_INT(bad, 0);
    df_session_free(s);
    df_graph_free(sg.g);
}

/* ---- a queue of tensors handed from producer threads to consumer threads ---- */
#define Q_CAP 4
typedef struct handoff {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    df_tensor *q[Q_CAP][N_SCALARS + 4];
    float xv[Q_CAP];
    int head, tail, producers_left, bad, failed;
    df_session *s;
    const small_graph *sg;
    int runs;
} handoff;

static void *producer(void *p) {
    handoff *h = (handoff *)p;
    for (int r = 0; r < h->runs; r++) {
        df_tensor *outs[N_SCALARS + 4];
        float xv = (float)(r % 100);
        if (!small_run(h->s, h->sg, xv, outs)) {
            pthread_mutex_lock(&h->mu);
            h->failed++;
            pthread_mutex_unlock(&h->mu);
            break;
        }
        pthread_mutex_lock(&h->mu);
        while (h->tail - h->head == Q_CAP) pthread_cond_wait(&h->cv, &h->mu);
        memcpy(h->q[h->tail % Q_CAP], outs, sizeof outs);
        h->xv[h->tail % Q_CAP] = xv;
        h->tail++;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    pthread_mutex_lock(&h->mu);
    h->producers_left--;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void *consumer(void *p) {
    handoff *h = (handoff *)p;
    for (;;) {
        df_tensor *outs[N_SCALARS + 4];
        float xv;
        pthread_mutex_lock(&h->mu);
        while (h->head == h->tail && h->producers_left) pthread_cond_wait(&h->cv, &h->mu);
        if (h->head == h->tail) { pthread_mutex_unlock(&h->mu); return NULL; }
        memcpy(outs, h->q[h->head % Q_CAP], sizeof outs);
        xv = h->xv[h->head % Q_CAP];
        h->head++;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
        int bad = small_check((const df_tensor *const *)outs, xv);
        for (int i = 0; i < h->sg->n_outs; i++) df_tensor_release(outs[i]);   /* made on another thread */
        if (bad) {
            pthread_mutex_lock(&h->mu);
            h->bad += bad;
            pthread_mutex_unlock(&h->mu);
        }
    }
}

/* Two threads run the session (itself with two inter-op threads) and two others release what
   they fetched: the consumers' stacks fill with tensors the producers' stacks lack, so tensors
   flow back through the shared stack. The consumers exit holding tensors; the session is freed
   after. */
static void handoff_case(int session_threads, int runs) {
    small_graph sg;
    small_graph_make(&sg);
    handoff *h = (handoff *)calloc(1, sizeof *h);
    CHECK(h != NULL);
    if (!h) return;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->s = session_of(sg.g, session_threads);
    h->sg = &sg;
    h->runs = runs;
    h->producers_left = 2;
    pthread_t pt[2], ct[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&pt[i], NULL, producer, h) == 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&ct[i], NULL, consumer, h) == 0);
    for (int i = 0; i < 2; i++) pthread_join(pt[i], NULL);
    for (int i = 0; i < 2; i++) pthread_join(ct[i], NULL);
    CHECK_EQ_INT(h->failed, 0);
    CHECK_EQ_INT(h->bad, 0);
    CHECK_EQ_INT(h->head, 2 * runs);
    df_alloc_stats as;
    CHECK(df_session_device_alloc_stats(h->s, 0, &as) == 1);
    /* 2 * runs * 20 tensors were made; past those in flight (the queue's 4 runs, the producers'
       own, the stacks' few hundred at most) they came back recycled, not from the BFC */
    CHECK_MSG(as.num_allocs < 500, "%lld BFC allocations for %d tensors", (long long)as.num_allocs, 2 * runs * 20);
    df_session_free(h->s);
    df_graph_free(sg.g);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}
DF_TEST(tensor_cache_cross_thread_release) { handoff_case(2, 200); }
DF_TEST(tensor_cache_cross_thread_release_one_inter_op_thread) { handoff_case(1, 200); }

/* ---- a scalar loop, `while i < n: i += 1` ---- */
static df_output loop_cond(df_graph *g, void *user, const df_output *v) { return df_less(g, v[0], *(const df_output *)user); }
static void loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}
typedef struct loop_graph { df_graph *g; df_output n, result; } loop_graph;
static void loop_graph_make(loop_graph *lg) {
    lg->g = df_graph_new();
    lg->n = df_placeholder(lg->g, "n", DF_INT32, 0, NULL);
    df_output i0 = df_scalar_i32(lg->g, 0);
    df_while_loop(lg->g, 1, &i0, loop_cond, loop_body, &lg->n, NULL, &lg->result);
    CHECK_OK(df_graph_status(lg->g));
}
static int loop_run(df_session *s, const loop_graph *lg, int n, df_tensor **out) {
    df_tensor *nv = df_tensor_scalar_i32(n), *o = NULL;
    df_status st;
    df_code c = df_session_run(s, &lg->n, &nv, 1, &lg->result, &o, 1, NULL, 0, &st);
    df_tensor_release(nv);
    if (c != DF_OK) { df_test_fail(__FILE__, __LINE__, "loop: %s", st.message); return 0; }
    int ok = o && *(const int32_t *)df_tensor_data(o) == n;
    if (out) *out = o;
    else df_tensor_release(o);
    return ok;
}

/* One thread, a steady loop: after the first run the thread's stack holds what the loop needs,
   so another run asks the BFC allocator for nothing and ends with the same bytes in use. */
DF_TEST(tensor_cache_steady_loop_stats_exact) {
    loop_graph lg;
    loop_graph_make(&lg);
    df_session *s = session_of(lg.g, 1);
    df_alloc_stats a0, a1, a2;
    CHECK(loop_run(s, &lg, 2000, NULL));
    CHECK(df_session_device_alloc_stats(s, 0, &a0) == 1);
    CHECK(loop_run(s, &lg, 5000, NULL));
    CHECK(df_session_device_alloc_stats(s, 0, &a1) == 1);
    CHECK(loop_run(s, &lg, 5000, NULL));
    CHECK(df_session_device_alloc_stats(s, 0, &a2) == 1);
    CHECK(a0.num_allocs >= 1);
    CHECK_EQ_INT(a1.num_allocs, a0.num_allocs);          /* 10,000 scalars, none from the BFC */
    CHECK_EQ_INT(a2.num_allocs, a0.num_allocs);
    CHECK_EQ_INT(a1.bytes_in_use, a0.bytes_in_use);
    CHECK_EQ_INT(a2.bytes_in_use, a0.bytes_in_use);
    CHECK(a0.bytes_in_use <= 64 * 256);                  /* what the stacks keep is bounded */
    df_tensor *kept = NULL;                              /* a result outliving its session */
    CHECK(loop_run(s, &lg, 7, &kept));
    df_session_free(s);
    CHECK(kept && *(const int32_t *)df_tensor_data(kept) == 7);
    df_tensor_release(kept);                             /* frees the allocator (ASan: no leak) */
    df_graph_free(lg.g);
}

/* Short-lived threads that each run a loop on a shared session and exit with tensors in their
   stacks: their exits give them back, so later threads reuse them instead of the BFC's. */
typedef struct loop_job { df_session *s; const loop_graph *lg; int n, ok; df_tensor *out; } loop_job;
static void *loop_thread(void *p) {
    loop_job *j = (loop_job *)p;
    j->ok = loop_run(j->s, j->lg, j->n, &j->out);
    return NULL;
}
DF_TEST(tensor_cache_thread_exit) {
    loop_graph lg;
    loop_graph_make(&lg);
    df_session *s = session_of(lg.g, 2);
    CHECK(loop_run(s, &lg, 500, NULL));
    df_alloc_stats a0, a1;
    CHECK(df_session_device_alloc_stats(s, 0, &a0) == 1);
    int ok = 0;
    df_tensor *outs[8] = {0};
    for (int round = 0; round < 4; round++) {
        pthread_t t[2];
        loop_job j[2] = {{s, &lg, 1000 + round, 0, NULL}, {s, &lg, 2000 + round, 0, NULL}};
        for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, loop_thread, &j[i]) == 0);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        for (int i = 0; i < 2; i++) { ok += j[i].ok; outs[2 * round + i] = j[i].out; }
    }
    CHECK_EQ_INT(ok, 8);
    CHECK(df_session_device_alloc_stats(s, 0, &a1) == 1);
    /* 8 loops of over 1,000 iterations (two scalars each): the BFC saw a few dozen at most */
    CHECK_MSG(a1.num_allocs - a0.num_allocs < 200, "%lld BFC allocations for 8 loops",
              (long long)(a1.num_allocs - a0.num_allocs));
    df_session_free(s);
    /* the results, made on threads now gone, released after their session */
    for (int i = 0; i < 8; i++) {
        CHECK(outs[i] && *(const int32_t *)df_tensor_data(outs[i]) == (i & 1 ? 2000 : 1000) + i / 2);
        df_tensor_release(outs[i]);
    }
    df_graph_free(lg.g);
}

/* More sessions (allocators) than a thread has ways, used in turn from one thread, freed in
   another order than made, with results released after their session on another thread. */
static void *release_all(void *p) {
    df_tensor **v = (df_tensor **)p;
    for (int i = 0; v[i]; i++) df_tensor_release(v[i]);
    return NULL;
}
DF_TEST(tensor_cache_many_allocators) {
    enum { SESSIONS = 7 };
    small_graph sg;
    small_graph_make(&sg);
    df_session *s[SESSIONS];
    for (int i = 0; i < SESSIONS; i++) s[i] = session_of(sg.g, 1);
    static df_tensor *left[SESSIONS * (N_SCALARS + 4) + 1];
    int n_left = 0, bad = 0;
    for (int r = 0; r < 6; r++)
        for (int i = 0; i < SESSIONS; i++) {
            df_tensor *outs[N_SCALARS + 4];
            if (!small_run(s[(i * 3 + r) % SESSIONS], &sg, (float)(r + i), outs)) { bad++; continue; }
            bad += small_check((const df_tensor *const *)outs, (float)(r + i));
            if (r == 5) for (int k = 0; k < sg.n_outs; k++) left[n_left++] = outs[k];
            else for (int k = 0; k < sg.n_outs; k++) df_tensor_release(outs[k]);
        }
    CHECK_EQ_INT(bad, 0);
    left[n_left] = NULL;
    for (int i = SESSIONS - 1; i >= 0; i -= 2) df_session_free(s[i]);
    for (int i = SESSIONS - 2; i >= 0; i -= 2) df_session_free(s[i]);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, release_all, left) == 0);
    pthread_join(t, NULL);
    df_graph_free(sg.g);
}

/* Stress (short enough for ThreadSanitizer): four threads each run loops and small graphs on two
   shared sessions and release each other's results through the hand-off queue. */
typedef struct stress_arg { df_session *loop_s; const loop_graph *lg; int ok; } stress_arg;
static void *stress_loops(void *p) {
    stress_arg *a = (stress_arg *)p;
    for (int r = 0; r < 6; r++) a->ok += loop_run(a->loop_s, a->lg, 200 + r, NULL);
    return NULL;
}
DF_TEST(tensor_cache_stress_threads) {
    loop_graph lg;
    loop_graph_make(&lg);
    df_session *ls = session_of(lg.g, 2);
    stress_arg a[2] = {{ls, &lg, 0}, {ls, &lg, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, stress_loops, &a[i]) == 0);
    handoff_case(2, 40);                                 /* four more threads meanwhile */
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK_EQ_INT(a[0].ok + a[1].ok, 12);
    df_session_free(ls);
    df_graph_free(lg.g);
}
