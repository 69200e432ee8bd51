/* Checkpointed while-loop gradients against plain stacks: h = tanh(h * w + x) on a vector of
   WIDTH floats for N = 10,000 iterations, gradient w.r.t. x and w. Prints the peak memory of
   the run (the device allocator's peak bytes in use, which the stacks dominate) and the median
   time of forward+backward, for plain stacks and for checkpoint_every = k. */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 10000, WIDTH = 256, REPS = 5 };
typedef struct m { df_output x, w; } m;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static df_output cond_fn(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_i32(g, N)); }
static void body_fn(df_graph *g, void *u, const df_output *v, df_output *n) {
    m *p = (m *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = df_tanh(g, df_add(g, df_mul(g, v[1], p->w), p->x));
}

static void measure(int64_t k, double *peak_mib, double *ms, double *check) {
    df_graph *g = df_graph_new();
    int64_t d = WIDTH;
    m p;
    p.x = df_placeholder(g, "x", DF_FLOAT, 1, &d);
    p.w = df_placeholder(g, "w", DF_FLOAT, 1, &d);
    df_output init[2] = {df_scalar_i32(g, 0), df_mul(g, p.x, df_scalar_f32(g, 0.5f))}, out[2];
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.checkpoint_every = k;
    df_while_loop(g, 2, init, cond_fn, body_fn, &p, &o, out);
    df_output loss = df_reduce_sum(g, out[1], 0, NULL, 0), xs[2] = {p.x, p.w}, dx[2];
    df_gradients(g, 1, &loss, NULL, 2, xs, dx);
    if (df_graph_status(g)->code) { fprintf(stderr, "%s\n", df_graph_status(g)->message); exit(1); }
    df_status st;
    df_session_options so;
    memset(&so, 0, sizeof so);
    df_session *s = df_session_new(g, &so, &st);
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, &d, &st), *wv = df_tensor_new(DF_FLOAT, 1, &d, &st);
    for (int i = 0; i < WIDTH; i++) { ((float *)df_tensor_data(xv))[i] = 0.01f * (float)(i % 17); ((float *)df_tensor_data(wv))[i] = 0.9f - 0.001f * (float)i; }
    df_output feeds[2] = {p.x, p.w};
    df_tensor *fv[2] = {xv, wv}, *o2[2];
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        if (df_session_run(s, feeds, fv, 2, dx, o2, 2, NULL, 0, &st)) { fprintf(stderr, "%s\n", st.message); exit(1); }
        t[r] = now() - t0;
        if (r == 0) *check = ((float *)df_tensor_data(o2[0]))[3] + ((float *)df_tensor_data(o2[1]))[5];
        df_tensor_release(o2[0]); df_tensor_release(o2[1]);
    }
    qsort(t, REPS, sizeof *t, cmpd);
    *ms = t[REPS / 2] * 1e3;
    df_alloc_stats as;
    df_session_device_alloc_stats(s, 0, &as);
    *peak_mib = (double)as.peak_bytes_in_use / (1 << 20);
    df_tensor_release(xv); df_tensor_release(wv);
    df_session_free(s);
    df_graph_free(g);
}

int main(void) {
    double pm, pt, pc;
    measure(0, &pm, &pt, &pc);
    printf("checkpointed loop gradients: h = tanh(h*w + x), %d floats, N = %d iterations\n", WIDTH, N);
    printf("%-22s %14s %12s %12s %14s\n", "stacks", "peak MiB", "vs plain", "fwd+bwd ms", "time vs plain");
    printf("%-22s %14.2f %12s %12.1f %14s\n", "plain (every value)", pm, "1.00x", pt, "1.00x");
    static const int64_t ks[] = {10, 100, 1000};
    for (int i = 0; i < 3; i++) {
        double cm, ct, cc;
        measure(ks[i], &cm, &ct, &cc);
        char name[32];
        snprintf(name, sizeof name, "checkpoint_every %lld", (long long)ks[i]);
        printf("%-22s %14.2f %11.3fx %12.1f %13.2fx%s\n", name, cm, cm / pm, ct, ct / pt,
               fabs(cc - pc) <= 1e-5 * fmax(1, fabs(pc)) ? "" : "  (GRADIENTS DIFFER)");
    }
    return 0;
}
