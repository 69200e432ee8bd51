/* Gradients through cond and while loops: against central differences and closed forms, with
   several parallel_iterations settings; second order; what is refused. */
#include "harness.h"

typedef struct model { int par; int kind; df_output x, w; } model;

/* ---- loop bodies ---- */
static df_output cond_lt_n(df_graph *g, void *u, const df_output *v) {
    (void)u;
    return df_less(g, v[0], v[1]);
}
/* kind 0: h = h * h              (x^(2^n))
   kind 1: h = h * w + x          (w, x loop invariants captured from outside)
   kind 2: h = i even ? h * x : h + x   (a cond inside the loop)
   kind 3: h = x * 3 + i          (next value ignores the previous one)
   kind 4: h = tanh(h * w) + sin-free mix: h = tanh(h * w + x) */
static void cond_even(df_graph *g, void *u, df_output *o) { model *m = (model *)u; o[0] = df_mul(g, m->w, m->x); }
static void cond_odd(df_graph *g, void *u, df_output *o) { model *m = (model *)u; o[0] = df_add(g, m->w, m->x); }
static void body(df_graph *g, void *u, const df_output *v, df_output *n) {
    model *m = (model *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    df_output h = v[2];
    switch (m->kind) {
    case 0: n[2] = df_mul(g, h, h); break;
    case 1: n[2] = df_add(g, df_mul(g, h, m->w), m->x); break;
    case 2: {
        df_output even = df_equal(g, df_floor_mod_i(g, v[0], df_scalar_i32(g, 2)), df_scalar_i32(g, 0));
        model inner = *m;
        inner.w = h;             /* the branches read h and x */
        df_cond(g, even, 1, cond_even, cond_odd, &inner, &n[2]);
        break;
    }
    case 3: n[2] = df_add(g, df_mul(g, m->x, df_scalar_f64(g, 3)), df_cast(g, v[0], DF_DOUBLE)); break;
    default: n[2] = df_tanh(g, df_add(g, df_mul(g, h, m->w), m->x)); break;
    }
}

typedef struct built { df_graph *g; df_output x, w, n, y, dx, dw, ddx; } built;

static built build_ck(int kind, int par, int second, int64_t ckpt) {
    built b;
    memset(&b, 0, sizeof b);
    df_graph *g = b.g = df_graph_new();
    b.x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL);
    b.w = df_placeholder(g, "w", DF_DOUBLE, 0, NULL);
    b.n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    model m = {par, kind, b.x, b.w};
    df_output init[3] = {df_scalar_i32(g, 0), b.n, kind == 0 ? b.x : df_mul(g, b.x, df_scalar_f64(g, 0.5))}, out[3];
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = par;
    o.checkpoint_every = ckpt;
    df_while_loop(g, 3, init, cond_lt_n, body, &m, &o, out);
    b.y = df_mul(g, out[2], out[2]);          /* something after the loop too */
    df_output xs[2] = {b.x, b.w}, d[2];
    df_gradients(g, 1, &b.y, NULL, 2, xs, d);
    b.dx = d[0]; b.dw = d[1];
    if (second && b.dx.node) df_gradients(g, 1, &b.dx, NULL, 1, &b.x, &b.ddx);
    return b;
}

static built build(int kind, int par, int second) { return build_ck(kind, par, second, 0); }

static int run(built *b, df_session *s, double x, double w, int n, df_output *f, int nf, double *out) {
    df_tensor *fv[3] = {df_tensor_scalar_f64(x), df_tensor_scalar_f64(w), df_tensor_scalar_i32(n)};
    df_output feeds[3] = {b->x, b->w, b->n};
    df_tensor *o[4] = {0};
    df_status st;
    df_session_run(s, feeds, fv, 3, f, o, nf, NULL, 0, &st);
    for (int i = 0; i < 3; i++) df_tensor_release(fv[i]);
    CHECK_OK(&st);
    for (int i = 0; i < nf; i++) { out[i] = st.code ? NAN : *(double *)df_tensor_data(o[i]); df_tensor_release(o[i]); }
    return st.code == DF_OK;
}

/* Checks dy/dx and dy/dw against central differences (and d2y/dx2 against differences of dy/dx). */
static void check_kind(int kind, int n, double x, double w, int second) {
    static const int pars[] = {1, 16};
    double first[2] = {0, 0};
    for (int pi = 0; pi < 2; pi++) {
        built b = build(kind, pars[pi], second);
        CHECK_OK(df_graph_status(b.g));
        if (df_graph_status(b.g)->code) { df_graph_free(b.g); return; }
        df_status st;
        df_session *s = df_session_new(b.g, NULL, &st);
        double v[3], yp, ym, h = 1e-6;
        df_output f[3] = {b.y, b.dx, b.dw};
        int has_dw = b.dw.node != NULL;
        if (!run(&b, s, x, w, n, f, has_dw ? 3 : 2, v)) { df_session_free(s); df_graph_free(b.g); return; }
        run(&b, s, x + h, w, n, &b.y, 1, &yp);
        run(&b, s, x - h, w, n, &b.y, 1, &ym);
        double fd = (yp - ym) / (2 * h);
        CHECK_MSG(fabs(v[1] - fd) <= 1e-5 * fmax(1, fabs(fd)), "kind %d n %d par %d: dy/dx %.12g, differences %.12g", kind, n, pars[pi], v[1], fd);
        if (has_dw) {
            run(&b, s, x, w + h, n, &b.y, 1, &yp);
            run(&b, s, x, w - h, n, &b.y, 1, &ym);
            fd = (yp - ym) / (2 * h);
            CHECK_MSG(fabs(v[2] - fd) <= 1e-5 * fmax(1, fabs(fd)), "kind %d n %d par %d: dy/dw %.12g, differences %.12g", kind, n, pars[pi], v[2], fd);
        }
        if (second) {
            double dd, gp, gm;
            run(&b, s, x, w, n, &b.ddx, 1, &dd);
            run(&b, s, x + h, w, n, &b.dx, 1, &gp);
            run(&b, s, x - h, w, n, &b.dx, 1, &gm);
            fd = (gp - gm) / (2 * h);
            CHECK_MSG(fabs(dd - fd) <= 1e-4 * fmax(1, fabs(fd)), "kind %d n %d par %d: d2y/dx2 %.12g, differences %.12g", kind, n, pars[pi], dd, fd);
        }
        if (pi == 0) { first[0] = v[1]; first[1] = has_dw ? v[2] : 0; }
        else {
            CHECK_MSG(v[1] == first[0], "parallel_iterations changed dy/dx: %.17g vs %.17g", v[1], first[0]);
            if (has_dw) CHECK_MSG(v[2] == first[1], "parallel_iterations changed dy/dw");
        }
        df_session_free(s);
        df_graph_free(b.g);
    }
}

DF_TEST(grad_while_square_n_times_exact) {
    /* y = (x^(2^n))^2 = x^(2^(n+1)); dy/dx = 2^(n+1) x^(2^(n+1)-1) */
    built b = build(0, 10, 0);
    df_status st;
    df_session *s = df_session_new(b.g, NULL, &st);
    for (int n = 0; n <= 4; n++) {
        double v[2];
        df_output f[2] = {b.y, b.dx};
        if (!run(&b, s, 1.1, 0, n, f, 2, v)) break;
        double p = pow(2, n + 1);
        CHECK_NEAR(v[0], pow(1.1, p), 1e-12 * pow(1.1, p));
        CHECK_NEAR(v[1], p * pow(1.1, p - 1), 1e-11 * p * pow(1.1, p - 1));
    }
    df_session_free(s);
    df_graph_free(b.g);
}
DF_TEST(grad_while_square_against_differences) { check_kind(0, 3, 0.9, 0, 0); }
DF_TEST(grad_while_invariants) { check_kind(1, 5, 0.7, 1.3, 0); }
DF_TEST(grad_while_zero_iterations) {
    check_kind(1, 0, 0.7, 1.3, 0);
    built b = build(1, 10, 0);
    df_status st;
    df_session *s = df_session_new(b.g, NULL, &st);
    double v[3];
    df_output f[3] = {b.y, b.dx, b.dw};
    if (run(&b, s, 0.7, 1.3, 0, f, 3, v)) {
        CHECK_NEAR(v[1], 2 * 0.35 * 0.5, 1e-15);   /* y = (x/2)^2 */
        CHECK_NEAR(v[2], 0, 0);
    }
    df_session_free(s);
    df_graph_free(b.g);
}
DF_TEST(grad_while_with_cond_in_body) { check_kind(2, 6, 1.2, 0, 0); check_kind(2, 5, 0.8, 0, 0); }
DF_TEST(grad_while_next_ignores_previous) { check_kind(3, 4, 0.6, 0, 0); }
DF_TEST(grad_while_tanh_rnn_like) { check_kind(4, 7, 0.3, 0.9, 0); }
DF_TEST(grad_second_order_through_while) { check_kind(0, 2, 0.9, 0, 1); check_kind(4, 4, 0.3, 0.9, 1); }
/* Beyond TensorFlow 1 (which refuses it): the gradient loop holds the cond's gradient, whose
   values are live only in the iterations that took their branch; differentiating it pops them
   behind Switches on the same predicates. */
DF_TEST(grad_second_order_through_cond_in_while) {
    check_kind(2, 6, 1.2, 0, 1);
    check_kind(2, 5, 0.8, 0, 1);
    check_kind(2, 1, 0.7, 0, 1);
    /* and TensorFlow 2's answer (tests/graphdef/fixtures_cf/tf2_second_order_if_in_while: nested
       GradientTapes over the same loop, x = 1.2, n = 6, float64) */
    built b = build(2, 10, 1);
    df_session *s = df_session_new(b.g, NULL, NULL);
    double v[3];
    df_output f[3] = {b.y, b.dx, b.ddx};
    CHECK(run(&b, s, 1.2, 0, 6, f, 3, v));
    CHECK_MSG(fabs(v[0] - 29.211863039999997) <= 1e-12 * 29.2, "y %.17g", v[0]);
    CHECK_MSG(fabs(v[1] - 120.80808960000002) <= 1e-12 * 120.8, "dy/dx %.17g", v[1]);
    CHECK_MSG(fabs(v[2] - 442.64921599999997) <= 1e-12 * 442.6, "d2y/dx2 %.17g", v[2]);
    df_session_free(s);
    df_graph_free(b.g);
}

/* Nested loops with data-dependent trip counts: outer i < n, inner j < i: h = h * x + w. */
typedef struct nest { df_output x, w; } nest;
static df_output inner_c(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], v[1]); }
static void inner_b(df_graph *g, void *u, const df_output *v, df_output *n) {
    nest *m = (nest *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    n[2] = df_add(g, df_mul(g, v[2], m->x), m->w);
}
static void outer_b(df_graph *g, void *u, const df_output *v, df_output *n) {
    df_output init[3] = {df_scalar_i32(g, 0), v[0], v[2]}, out[3];
    df_while_loop(g, 3, init, inner_c, inner_b, u, NULL, out);
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    n[2] = df_tanh(g, out[2]);
}

DF_TEST(grad_nested_loops_data_dependent_counts) {
    for (int par = 1; par <= 16; par += 15) {
        df_graph *g = df_graph_new();
        nest m;
        m.x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL);
        m.w = df_placeholder(g, "w", DF_DOUBLE, 0, NULL);
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output init[3] = {df_scalar_i32(g, 0), n, m.x}, out[3];
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = par;
        df_while_loop(g, 3, init, inner_c, outer_b, &m, &o, out);
        df_output xs[2] = {m.x, m.w}, d[2];
        df_gradients(g, 1, &out[2], NULL, 2, xs, d);
        CHECK_OK(df_graph_status(g));
        df_status st;
        df_session *s = df_session_new(g, NULL, &st);
        double h = 1e-6, x0 = 0.8, w0 = 0.3;
        for (int nv = 0; nv <= 4 && s; nv++) {
            double vals[3][3];
            double pts[3][2] = {{x0, w0}, {x0 + h, w0}, {x0 - h, w0}};
            for (int k = 0; k < 3; k++) {
                df_tensor *fv[3] = {df_tensor_scalar_f64(pts[k][0]), df_tensor_scalar_f64(pts[k][1]), df_tensor_scalar_i32(nv)};
                df_output feeds[3] = {m.x, m.w, n}, f[3] = {out[2], d[0], d[1]};
                df_tensor *ov[3] = {0};
                df_session_run(s, feeds, fv, 3, f, ov, 3, NULL, 0, &st);
                CHECK_OK(&st);
                for (int i = 0; i < 3; i++) { vals[k][i] = st.code ? NAN : *(double *)df_tensor_data(ov[i]); df_tensor_release(ov[i]); df_tensor_release(fv[i]); }
            }
            double fd = (vals[1][0] - vals[2][0]) / (2 * h);
            CHECK_MSG(fabs(vals[0][1] - fd) <= 1e-6 * fmax(1, fabs(fd)), "nested n=%d par %d: %.12g vs %.12g", nv, par, vals[0][1], fd);
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* A cond at the top level: both branches, and x used by one branch only. */
static void br_then(df_graph *g, void *u, df_output *o) { df_output *x = (df_output *)u; o[0] = df_mul(g, x[0], x[1]); }
static void br_else(df_graph *g, void *u, df_output *o) { df_output *x = (df_output *)u; o[0] = df_exp(g, x[1]); }
DF_TEST(grad_cond_both_branches) {
    df_graph *g = df_graph_new();
    df_output v[2] = {df_placeholder(g, "a", DF_DOUBLE, 0, NULL), df_placeholder(g, "b", DF_DOUBLE, 0, NULL)};
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), c, d[2];
    df_cond(g, p, 1, br_then, br_else, v, &c);
    df_gradients(g, 1, &c, NULL, 2, v, d);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    for (int pv = 0; pv < 2; pv++) {
        df_tensor *pt = df_tensor_new(DF_BOOL, 0, NULL, &st);
        *(unsigned char *)df_tensor_data(pt) = (unsigned char)pv;
        df_tensor *fv[3] = {df_tensor_scalar_f64(2.0), df_tensor_scalar_f64(0.5), pt}, *ov[2] = {0};
        df_output feeds[3] = {v[0], v[1], p};
        df_session_run(s, feeds, fv, 3, d, ov, 2, NULL, 0, &st);
        CHECK_OK(&st);
        if (!st.code) {
            CHECK_NEAR(*(double *)df_tensor_data(ov[0]), pv ? 0.5 : 0.0, 1e-15);
            CHECK_NEAR(*(double *)df_tensor_data(ov[1]), pv ? 2.0 : exp(0.5), 1e-15);
        }
        for (int i = 0; i < 3; i++) df_tensor_release(fv[i]);
        for (int i = 0; i < 2; i++) df_tensor_release(ov[i]);
    }
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(grad_refusals) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 1, (int64_t[]){3});
    df_op_builder *b = df_op_new(g, "TruncateMod", "cp");    /* no gradient, as in TensorFlow */
    df_op_add_input(b, x);
    df_op_add_input(b, df_scalar_f64(g, 2.0));
    df_output y = {df_op_finish(b), 0}, d;
    df_output s = df_reduce_sum(g, y, 0, NULL, 0);
    CHECK_EQ_INT(df_gradients(g, 1, &s, NULL, 1, &x, &d), DF_UNIMPLEMENTED);
    CHECK_STATUS(df_graph_status(g), DF_UNIMPLEMENTED, "{{node cp}}");
    CHECK(d.node == NULL);
    df_graph_free(g);
    /* an x no y depends on gives {NULL,0}; StopGradient cuts the path */
    g = df_graph_new();
    x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL);
    df_output z = df_placeholder(g, "z", DF_DOUBLE, 0, NULL);
    y = df_mul(g, df_stop_gradient(g, x), x);
    df_output xs[2] = {x, z}, ds[2];
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 2, xs, ds), DF_OK);
    CHECK(ds[0].node != NULL);
    CHECK(ds[1].node == NULL);
    df_status st;
    df_session *ss = df_session_new(g, NULL, &st);
    df_tensor *xv = df_tensor_scalar_f64(3.0), *out = NULL;
    df_session_run(ss, &x, &xv, 1, &ds[0], &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (out) CHECK_NEAR(*(double *)df_tensor_data(out), 3.0, 0);
    df_tensor_release(out); df_tensor_release(xv);
    df_session_free(ss);
    df_graph_free(g);
}

/* Checkpointed loop gradients (keep every k-th iteration's variables, recompute the rest) equal
   the plain ones. The body functions must stay callable until df_gradients, as here. */
DF_TEST(grad_checkpointed_equals_plain) {
    static const int kinds[] = {0, 1, 2, 3, 4};
    static const int64_t ks[] = {1, 3, 4, 100};
    static const int ns[] = {0, 1, 5, 12};
    for (int ki = 0; ki < 5; ki++) {
        built p = build(kinds[ki], 10, 0);
        df_status st;
        df_session *sp = df_session_new(p.g, NULL, &st);
        for (int kk = 0; kk < 4; kk++) {
            built b = build_ck(kinds[ki], kk % 2 ? 1 : 16, 0, ks[kk]);
            CHECK_OK(df_graph_status(b.g));
            df_session *s = df_session_new(b.g, NULL, &st);
            for (int ni = 0; ni < 4 && s; ni++) {
                int n = kinds[ki] == 0 ? (ns[ni] > 4 ? 4 : ns[ni]) : ns[ni];
                double a[3], c[3];
                df_output fa[3] = {p.y, p.dx, p.dw}, fc[3] = {b.y, b.dx, b.dw};
                int nf = p.dw.node ? 3 : 2;
                if (!run(&p, sp, 0.9, 0.7, n, fa, nf, a) || !run(&b, s, 0.9, 0.7, n, fc, nf, c)) break;
                for (int i = 0; i < nf; i++)
                    CHECK_MSG(fabs(a[i] - c[i]) <= 1e-12 * fmax(1, fabs(a[i])), "kind %d k %lld n %d output %d: plain %.15g checkpointed %.15g",
                              kinds[ki], (long long)ks[kk], n, i, a[i], c[i]);
            }
            df_session_free(s);
            df_graph_free(b.g);
        }
        df_session_free(sp);
        df_graph_free(p.g);
    }
}

/* A running product p = prod_{i<n} (x + i): dp/dx = p * sum 1/(x + i), against the closed form. */
static void prod_body(df_graph *g, void *u, const df_output *v, df_output *n) {
    df_output x = *(df_output *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    n[2] = df_mul(g, v[2], df_add(g, x, df_cast(g, v[0], DF_DOUBLE)));
}
DF_TEST(grad_while_running_product_exact) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL), n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output init[3] = {df_scalar_i32(g, 0), n, df_scalar_f64(g, 1.0)}, out[3], dx;
    df_while_loop(g, 3, init, cond_lt_n, prod_body, &x, NULL, out);
    df_gradients(g, 1, &out[2], NULL, 1, &x, &dx);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    for (int nv = 0; nv <= 6 && s; nv++) {
        double xv = 0.3, p = 1, sum = 0;
        for (int i = 0; i < nv; i++) { p *= xv + i; sum += 1 / (xv + i); }
        df_tensor *fv[2] = {df_tensor_scalar_f64(xv), df_tensor_scalar_i32(nv)}, *o[2] = {0};
        df_output feeds[2] = {x, n}, f[2] = {out[2], dx};
        df_session_run(s, feeds, fv, 2, f, o, 2, NULL, 0, &st);
        CHECK_OK(&st);
        if (!st.code) {
            CHECK_NEAR(*(double *)df_tensor_data(o[0]), p, 1e-13 * p);
            CHECK_NEAR(*(double *)df_tensor_data(o[1]), p * sum, 1e-12 * fmax(1, p * sum));
        }
        for (int i = 0; i < 2; i++) { df_tensor_release(fv[i]); df_tensor_release(o[i]); }
    }
    df_session_free(s);
    df_graph_free(g);
}

/* The Hessian-vector product of a loss computed by a while loop: h = tanh(h * w + x) on a
   vector, loss = sum(h^2); hvp = d(grad(loss, w) . v)/dw, against differences of the gradient
   along v. */
typedef struct hv { df_output x, w; } hv;
static void hv_body(df_graph *g, void *u, const df_output *v, df_output *n) {
    hv *p = (hv *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    n[2] = df_tanh(g, df_add(g, df_mul(g, v[2], p->w), p->x));
}
DF_TEST(grad_hessian_vector_product_through_while) {
    enum { K = 5 };
    int64_t d = K;
    df_graph *g = df_graph_new();
    hv p;
    p.x = df_placeholder(g, "x", DF_DOUBLE, 1, &d);
    p.w = df_placeholder(g, "w", DF_DOUBLE, 1, &d);
    df_output v = df_placeholder(g, "v", DF_DOUBLE, 1, &d);
    df_output init[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 6), p.x}, out[3], gw, hvp;
    df_while_loop(g, 3, init, cond_lt_n, hv_body, &p, NULL, out);
    df_output loss = df_reduce_sum(g, df_square(g, out[2]), 0, NULL, 0);
    df_gradients(g, 1, &loss, NULL, 1, &p.w, &gw);
    df_output gv = df_reduce_sum(g, df_mul(g, gw, v), 0, NULL, 0);
    df_gradients(g, 1, &gv, NULL, 1, &p.w, &hvp);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    double xs[K], ws[K], vs[K], h = 1e-6, res[3][K];
    for (int i = 0; i < K; i++) { xs[i] = 0.1 * i - 0.2; ws[i] = 0.8 - 0.05 * i; vs[i] = (i % 2 ? 1.0 : -0.5); }
    for (int k = 0; k < 3 && s; k++) {         /* hvp at w, gradient at w + h v and w - h v */
        df_tensor *tx = df_tensor_from_data(DF_DOUBLE, 1, &d, xs, sizeof xs, &st);
        double wk[K];
        for (int i = 0; i < K; i++) wk[i] = ws[i] + (k == 1 ? h : k == 2 ? -h : 0) * vs[i];
        df_tensor *tw = df_tensor_from_data(DF_DOUBLE, 1, &d, wk, sizeof wk, &st);
        df_tensor *tv = df_tensor_from_data(DF_DOUBLE, 1, &d, vs, sizeof vs, &st), *o = NULL;
        df_output feeds[3] = {p.x, p.w, v};
        df_tensor *fv[3] = {tx, tw, tv};
        df_output f = k == 0 ? hvp : gw;
        df_session_run(s, feeds, fv, 3, &f, &o, 1, NULL, 0, &st);
        CHECK_OK(&st);
        for (int i = 0; i < K; i++) res[k][i] = o ? ((double *)df_tensor_data(o))[i] : NAN;
        df_tensor_release(o); df_tensor_release(tx); df_tensor_release(tw); df_tensor_release(tv);
    }
    for (int i = 0; i < K; i++) {
        double fd = (res[1][i] - res[2][i]) / (2 * h);
        CHECK_MSG(fabs(res[0][i] - fd) <= 1e-5 * fmax(1, fabs(fd)), "hvp[%d] %.12g, differences %.12g", i, res[0][i], fd);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* Second order through a cond: then x^3, else exp(x^2). */
static void cube_b(df_graph *g, void *u, df_output *o) { df_output x = *(df_output *)u; o[0] = df_mul(g, x, df_mul(g, x, x)); }
static void expsq_b(df_graph *g, void *u, df_output *o) { df_output x = *(df_output *)u; o[0] = df_exp(g, df_mul(g, x, x)); }
DF_TEST(grad_second_order_through_cond) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 0, NULL), p = df_placeholder(g, "p", DF_BOOL, 0, NULL), c, d1, d2;
    df_cond(g, p, 1, cube_b, expsq_b, &x, &c);
    df_gradients(g, 1, &c, NULL, 1, &x, &d1);
    df_gradients(g, 1, &d1, NULL, 1, &x, &d2);
    CHECK_OK(df_graph_status(g));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    for (int pv = 0; pv < 2 && s; pv++) {
        double xv = 0.7;
        df_tensor *pt = df_tensor_new(DF_BOOL, 0, NULL, &st);
        *(unsigned char *)df_tensor_data(pt) = (unsigned char)pv;
        df_tensor *fv[2] = {df_tensor_scalar_f64(xv), pt}, *o[2] = {0};
        df_output feeds[2] = {x, p}, f[2] = {d1, d2};
        df_session_run(s, feeds, fv, 2, f, o, 2, NULL, 0, &st);
        CHECK_OK(&st);
        if (!st.code) {
            double e = exp(xv * xv);
            CHECK_NEAR(*(double *)df_tensor_data(o[0]), pv ? 3 * xv * xv : 2 * xv * e, 1e-12);
            CHECK_NEAR(*(double *)df_tensor_data(o[1]), pv ? 6 * xv : (2 + 4 * xv * xv) * e, 1e-12);
        }
        for (int i = 0; i < 2; i++) { df_tensor_release(fv[i]); df_tensor_release(o[i]); }
    }
    df_session_free(s);
    df_graph_free(g);
}
