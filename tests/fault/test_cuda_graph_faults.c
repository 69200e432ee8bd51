/* CUDA graphs (df_session_options.cuda_graphs) on the emulated GPU with every heap allocation
   failing in turn: a plain graph with a variable, two loops compiled on their own (int and
   float predicates) and a loop whose predicate is a GPU reduction. Each point runs in a child
   process: it must end with statuses (RESOURCE_EXHAUSTED or the clean run's values), no crash,
   and nothing left allocated. Built by ./build.sh test with -DDATAFLOW_CUDA and
   tests/cuda/gpu_emulator.c; prints "N passed, N failed" last (a point is a test).
   ./test_cuda_graph_faults [scenario 0-3]: one scenario, else all four. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static long fi_calls, fi_fail_at, fi_live;
static void *fi_malloc(size_t n) {
    long c = __atomic_add_fetch(&fi_calls, 1, __ATOMIC_SEQ_CST);
    if (fi_fail_at && c == fi_fail_at) return NULL;
    void *p = malloc(n ? n : 1);
    if (p) __atomic_add_fetch(&fi_live, 1, __ATOMIC_SEQ_CST);
    return p;
}
static void *fi_realloc(void *p, size_t n) {
    long c = __atomic_add_fetch(&fi_calls, 1, __ATOMIC_SEQ_CST);
    if (fi_fail_at && c == fi_fail_at) return NULL;
    void *q = realloc(p, n ? n : 1);
    if (q && !p) __atomic_add_fetch(&fi_live, 1, __ATOMIC_SEQ_CST);
    return q;
}
static void fi_free(void *p) { if (p) { __atomic_sub_fetch(&fi_live, 1, __ATOMIC_SEQ_CST); free(p); } }
#define DF_MALLOC(n) fi_malloc(n)
#define DF_REALLOC(p, n) fi_realloc((p), (n))
#define DF_FREE(p) fi_free(p)
#include "dataflow.c"

static df_output cond_int(df_graph *g, void *user, const df_output *v) {
    return *(int *)user ? df_less(g, v[0], df_scalar_i32(g, 5)) : df_less(g, v[1], df_scalar_f32(g, 5));
}
static void body2(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_scalar_f32(g, 1));
}
static df_output cond_sum(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, df_reduce_sum(g, v[0], 0, NULL, 0), v[2]);
}
static void body3(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = v[1];
    next[1] = df_add(g, v[0], v[1]);
    next[2] = v[2];
}

static char out_buf[1 << 16];
static int out_len;
static void note(const char *what, const df_status *st, const df_tensor *v) {
    out_len += snprintf(out_buf + out_len, sizeof out_buf - (size_t)out_len, " %s:%d", what, st->code);
    if (st->code) out_len += snprintf(out_buf + out_len, sizeof out_buf - (size_t)out_len, "(%s)", st->message);
    if (v && df_tensor_dtype(v) == DF_FLOAT) {
        const float *d = (const float *)df_tensor_data(v);
        out_len += snprintf(out_buf + out_len, sizeof out_buf - (size_t)out_len, "=%g", (double)d[0]);
    }
}

static void scenario(int sc) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output x, y;
    df_output feeds[2];
    int n_feeds = 1, kind = sc == 1;
    df_node *init = NULL;
    if (sc == 0) {
        x = df_placeholder(g, "x", DF_FLOAT, 2, (int64_t[]){-1, 3});
        df_graph_push_device(g, "/gpu:0");
        df_output w = df_variable(g, "w", DF_FLOAT, 2, (int64_t[]){3, 2});
        df_tensor *w0 = df_tensor_new(DF_FLOAT, 2, (int64_t[]){3, 2}, &st);
        for (int i = 0; w0 && i < 6; i++) ((float *)df_tensor_data(w0))[i] = 0.1f * (float)(i + 1);
        init = df_assign(g, w, df_const(g, w0));
        df_tensor_release(w0);
        df_output h = df_relu(g, df_add(g, df_matmul(g, x, w, 0, 0), df_scalar_f32(g, 0.5f)));
        y = df_reduce_sum(g, df_square(g, h), 0, NULL, 0);
        df_graph_pop_device(g);
        feeds[0] = x;
    } else if (sc == 1 || sc == 2) {
        x = df_placeholder(g, "x0", DF_FLOAT, 0, NULL);
        df_graph_push_device(g, "/gpu:0");
        df_output in[2] = {df_scalar_i32(g, 0), x}, out[2];
        df_while_loop(g, 2, in, cond_int, body2, &kind, NULL, out);
        y = df_mul(g, out[1], df_scalar_f32(g, 2));
        df_graph_pop_device(g);
        feeds[0] = x;
    } else {
        x = df_placeholder(g, "x0", DF_FLOAT, 1, (int64_t[]){3});
        df_output lim = df_placeholder(g, "limit", DF_FLOAT, 0, NULL);
        df_graph_push_device(g, "/gpu:0");
        df_output in[3] = {x, df_add(g, x, df_scalar_f32(g, 1)), lim}, out[3];
        df_while_loop(g, 3, in, cond_sum, body3, NULL, NULL, out);
        y = df_add(g, df_mul(g, out[1], df_scalar_f32(g, 2)), out[0]);
        df_graph_pop_device(g);
        feeds[0] = x; feeds[1] = lim; n_feeds = 2;
    }
    note("build", df_graph_status(g), NULL);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    o.cuda_graphs = 1;
    o.deterministic = 1;
    df_session *s = df_session_new(g, &o, &st);
    note("session", &st, NULL);
    if (s && init) { df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st); note("init", &st, NULL); }
    for (int i = 0; s && i < 3; i++) {
        df_tensor *xv = sc == 0 ? df_tensor_new(DF_FLOAT, 2, (int64_t[]){2, 3}, &st)
                      : sc == 3 ? df_tensor_new(DF_FLOAT, 1, (int64_t[]){3}, &st) : df_tensor_scalar_f32((float)i);
        if (xv && sc != 1 && sc != 2) for (int k = 0; k < (sc == 0 ? 6 : 3); k++) ((float *)df_tensor_data(xv))[k] = 0.25f * (float)(k + i);
        df_tensor *vals[2] = {xv, df_tensor_scalar_f32(10.0f * (float)(i + 1))}, *v = NULL;
        if (!xv || !vals[1]) { out_len += snprintf(out_buf + out_len, sizeof out_buf - (size_t)out_len, " feed-oom"); }
        else { df_session_run(s, feeds, vals, n_feeds, &y, &v, 1, NULL, 0, &st); note("run", &st, v); }
        df_tensor_release(v); df_tensor_release(vals[0]); df_tensor_release(vals[1]);
    }
    df_session_free(s);
    df_graph_free(g);
}

static int run_points(int sc, int *passed, int *failed) {
    fi_fail_at = 0; fi_calls = 0;
    out_len = 0;
    scenario(sc);                       /* warm the registry and any lazily built state */
    out_len = 0;
    long live0 = fi_live;
    fi_calls = 0;
    scenario(sc);
    long total = fi_calls;
    if (fi_live != live0) { printf("FAIL scenario %d: the clean run left %ld blocks\n", sc, fi_live - live0); (*failed)++; }
    for (long n = 1; n <= total; n++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) { printf("FAIL scenario %d: fork\n", sc); (*failed)++; return 0; }
        if (pid == 0) {
            out_len = 0; out_buf[0] = 0;
            fi_calls = 0; fi_fail_at = n;
            scenario(sc);
            fi_fail_at = 0;
            if (fi_live != live0) { printf("FAIL scenario %d, allocation %ld failing: %ld blocks left:%s\n", sc, n, fi_live - live0, out_buf); _exit(1); }
            _exit(0);
        }
        int wst = 0;
        waitpid(pid, &wst, 0);
        if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0) (*passed)++;
        else {
            (*failed)++;
            if (WIFSIGNALED(wst)) printf("FAIL scenario %d, allocation %ld failing: CRASH (signal %d)\n", sc, n, WTERMSIG(wst));
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    int first = argc > 1 ? atoi(argv[1]) : 0, last = argc > 1 ? first : 3;
    for (int sc = first; sc <= last; sc++) run_points(sc, &passed, &failed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
