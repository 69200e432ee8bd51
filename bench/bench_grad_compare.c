#define _POSIX_C_SOURCE 200809L
/* Gradients side by side with TensorFlow: the graphs of bench/peers/tf_grads.py (cond, while
   loops with invariants, a cond in a loop, nested loops, zero iterations) built here with the
   same inputs; prints each case's y, dy/dx and dy/dw from both and the largest relative
   difference. Needs .venv with tensorflow (bench/peers/setup.sh); not part of the tests. */
#include "../dataflow.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double X = 0.7, W = 1.3;
typedef struct ctx { df_output x, w; int kind; } ctx;

static df_output lt(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], v[1]); }
static void even_b(df_graph *g, void *u, df_output *o) { ctx *c = (ctx *)u; o[0] = df_mul(g, c->w, c->x); }
static void odd_b(df_graph *g, void *u, df_output *o) { ctx *c = (ctx *)u; o[0] = df_add(g, c->w, c->x); }
static void body(df_graph *g, void *u, const df_output *v, df_output *n) {
    ctx *c = (ctx *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    df_output h = v[2];
    if (c->kind == 0) n[2] = df_mul(g, h, h);
    else if (c->kind == 1) n[2] = df_add(g, df_mul(g, h, c->w), c->x);
    else if (c->kind == 2) {
        ctx in = *c;
        in.w = h;
        df_output even = df_equal(g, df_floor_mod_i(g, v[0], df_scalar_i32(g, 2)), df_scalar_i32(g, 0));
        df_cond(g, even, 1, even_b, odd_b, &in, &n[2]);
    } else n[2] = df_tanh(g, df_add(g, df_mul(g, h, c->w), c->x));
}
static void inner_b(df_graph *g, void *u, const df_output *v, df_output *n) {
    ctx *c = (ctx *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    n[2] = df_add(g, df_mul(g, v[2], c->x), c->w);
}
static void outer_b(df_graph *g, void *u, const df_output *v, df_output *n) {
    df_output init[3] = {df_scalar_i32(g, 0), v[0], v[2]}, out[3];
    df_while_loop(g, 3, init, lt, inner_b, u, NULL, out);
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    n[2] = df_tanh(g, out[2]);
}
static void c_then(df_graph *g, void *u, df_output *o) { ctx *c = (ctx *)u; o[0] = df_mul(g, c->x, c->w); }
static void c_else(df_graph *g, void *u, df_output *o) { ctx *c = (ctx *)u; o[0] = df_exp(g, c->w); }

/* case: 0 cond, 1.. loops (kind = case-1 with h0 as TF's), 9 nested */
static int ours(int which, int n, int p, double out[3]) {
    df_graph *g = df_graph_new();
    ctx c;
    c.x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL);
    c.w = df_placeholder(g, "w", DF_DOUBLE, 0, NULL);
    df_output nn = df_placeholder(g, "n", DF_INT32, 0, NULL), pp = df_placeholder(g, "p", DF_BOOL, 0, NULL), y;
    if (which == 0) {
        df_cond(g, pp, 1, c_then, c_else, &c, &y);
    } else if (which == 9) {
        df_output init[3] = {df_scalar_i32(g, 0), nn, c.x}, o[3];
        df_while_loop(g, 3, init, lt, outer_b, &c, NULL, o);
        y = o[2];
    } else {
        c.kind = which - 1;
        df_output h0 = c.kind == 0 ? c.x : df_mul(g, c.x, df_scalar_f64(g, 0.5));
        df_output init[3] = {df_scalar_i32(g, 0), nn, h0}, o[3];
        df_while_loop(g, 3, init, lt, body, &c, NULL, o);
        y = df_mul(g, o[2], o[2]);
    }
    df_output xs[2] = {c.x, c.w}, d[2];
    df_gradients(g, 1, &y, NULL, 2, xs, d);
    df_status st;
    df_session *s = df_graph_status(g)->code ? NULL : df_session_new(g, NULL, &st);
    int ok = 0;
    if (s) {
        df_tensor *pt = df_tensor_new(DF_BOOL, 0, NULL, &st);
        *(unsigned char *)df_tensor_data(pt) = (unsigned char)p;
        df_tensor *fv[4] = {df_tensor_scalar_f64(X), df_tensor_scalar_f64(W), df_tensor_scalar_i32(n), pt}, *o[3] = {0};
        df_output feeds[4] = {c.x, c.w, nn, pp}, f[3] = {y, d[0], d[1]};
        int nf = d[1].node ? 3 : 2;
        if (!d[0].node) { f[1] = f[0]; }
        if (df_session_run(s, feeds, fv, 4, f, o, nf, NULL, 0, &st) == DF_OK) {
            ok = 1;
            for (int i = 0; i < 3; i++) out[i] = i < nf ? *(double *)df_tensor_data(o[i]) : 0;
            if (!d[0].node) out[1] = 0;
        } else fprintf(stderr, "run: %s\n", st.message);
        for (int i = 0; i < 4; i++) df_tensor_release(fv[i]);
        for (int i = 0; i < 3; i++) df_tensor_release(o[i]);
        df_session_free(s);
    } else fprintf(stderr, "build: %s\n", df_graph_status(g)->message);
    df_graph_free(g);
    return ok;
}

int main(void) {
    static const struct { const char *name; int which, n, p; } cases[] = {
        {"cond_true", 0, 0, 1}, {"cond_false", 0, 0, 0}, {"while_square_n3", 1, 3, 0},
        {"while_invariants_n5", 2, 5, 0}, {"while_zero_iterations", 2, 0, 0},
        {"while_cond_in_body_n6", 3, 6, 0}, {"while_tanh_n7", 4, 7, 0}, {"nested_n4", 9, 4, 0}};
    FILE *pf = popen(".venv/bin/python bench/peers/tf_grads.py 2>/dev/null", "r");
    char line[512], names[16][64];
    double tfv[16][3];
    int ntf = 0;
    while (pf && ntf < 16 && fgets(line, sizeof line, pf))
        if (sscanf(line, "%63s %lf %lf %lf", names[ntf], &tfv[ntf][0], &tfv[ntf][1], &tfv[ntf][2]) == 4) ntf++;
    if (pf) pclose(pf);
    if (!ntf) printf("(TensorFlow unavailable: run bench/peers/setup.sh; showing ours only)\n");
    printf("%-24s %-22s %-22s %-22s %s\n", "case", "y", "dy/dx", "dy/dw", "max rel. diff vs TF");
    double worst = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double v[3] = {0, 0, 0};
        if (!ours(cases[i].which, cases[i].n, cases[i].p, v)) { printf("%-24s failed\n", cases[i].name); continue; }
        double rel = -1;
        for (int k = 0; k < ntf; k++)
            if (!strcmp(names[k], cases[i].name)) {
                rel = 0;
                for (int j = 0; j < 3; j++) {
                    double r = fabs(v[j] - tfv[k][j]) / fmax(1e-300, fmax(fabs(tfv[k][j]), 1e-12));
                    if (tfv[k][j] == v[j]) r = 0;
                    if (r > rel) rel = r;
                }
            }
        if (rel > worst) worst = rel;
        printf("%-24s %-22.15g %-22.15g %-22.15g %s%.2e\n", cases[i].name, v[0], v[1], v[2], rel < 0 ? "n/a " : "", rel < 0 ? 0 : rel);
    }
    if (ntf) printf("largest relative difference against TensorFlow: %.2e (target 1e-5)\n", worst);
    return 0;
}
