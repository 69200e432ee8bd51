/* Conv2D, its gradients and pooling against direct float64 references written here from
   TensorFlow's definitions (NHWC; VALID: out = ceil((in - (k-1)d) / s); SAME: out = ceil(in / s),
   padding split with the extra one after), on random shapes, strides, dilations and paddings,
   float32 and float64, with each kernel set the CPU has; gradients through df_gradients too. */
#include "harness.h"

typedef struct { int n, h, w, c, kh, kw, oc, sh, sw, dh, dw, same; } geo;
static int out_dim(int in, int k, int s, int d, int same, int *pad) {
    int ek = (k - 1) * d + 1, out;
    if (same) { out = (in + s - 1) / s; int t = (out - 1) * s + ek - in; *pad = t > 0 ? t / 2 : 0; }
    else { out = in >= ek ? (in - ek) / s + 1 : 0; *pad = 0; }
    return out;
}
static unsigned rs = 12345;
static double rnd(void) { rs = rs * 1664525u + 1013904223u; return (double)(rs >> 8) / 16777216.0 - 0.5; }
static int rint_(int lo, int hi) { rs = rs * 1664525u + 1013904223u; return lo + (int)((rs >> 8) % (unsigned)(hi - lo + 1)); }

static df_tensor *tensor(df_dtype t, int rank, const int64_t *d, const double *v) {
    df_tensor *x = df_tensor_new(t, rank, d, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = (float)v[i]; else ((double *)df_tensor_data(x))[i] = v[i];
    }
    return x;
}
static double at(const df_tensor *x, int64_t i) {
    return df_tensor_dtype(x) == DF_FLOAT ? ((const float *)df_tensor_data(x))[i] : ((const double *)df_tensor_data(x))[i];
}
static void set_window(df_op_builder *b, const geo *g, int pool) {
    int64_t s[4] = {1, g->sh, g->sw, 1}, d[4] = {1, g->dh, g->dw, 1}, k[4] = {1, g->kh, g->kw, 1};
    df_op_set_attr_int_list(b, "strides", s, 4);
    if (pool) df_op_set_attr_int_list(b, "ksize", k, 4);
    else df_op_set_attr_int_list(b, "dilations", d, 4);
    df_op_set_attr_string(b, "padding", g->same ? "SAME" : "VALID");
}

DF_TEST(conv2d_forward_and_gradients_match_reference) {
    int cases = 0;
    static const char *isas[3] = {"portable", "avx2", "avx512"};   /* each the CPU has */
    for (int isa = 0; isa < 3; isa++) {
        if (df_set_kernel_isa(isas[isa]) != DF_OK) continue;
        for (int trial = 0; trial < 46; trial++) {
            geo g = {rint_(1, 2), rint_(1, 9), rint_(1, 9), rint_(1, 4), rint_(1, 3), rint_(1, 3), rint_(1, 5),
                     rint_(1, 3), rint_(1, 3), rint_(1, 2), rint_(1, 2), rint_(0, 1)};
            if (trial == 0) { g.kh = g.kw = 1; g.sh = g.sw = 1; g.same = 0; }   /* the 1x1 path */
            if (trial >= 40) {      /* whole register tiles, several filter blocks and threads */
                geo big = {2, rint_(12, 18), rint_(12, 18), rint_(17, 36), rint_(1, 3), rint_(1, 3), rint_(17, 36),
                           rint_(1, 2), rint_(1, 2), rint_(1, 2), rint_(1, 2), rint_(0, 1)};
                g = big;
                if (trial == 40) { g.kh = g.kw = 1; g.sh = g.sw = 2; }                        /* phases with no taps */
                if (trial == 41) { g.h = g.w = 23; g.c = 3; g.kh = g.kw = 7; g.sh = g.sw = 2; g.same = 1; } /* a stem */
            }
            df_dtype t = trial % 2 ? DF_DOUBLE : DF_FLOAT;
            int ph, pw, oh = out_dim(g.h, g.kh, g.sh, g.dh, g.same, &ph), ow = out_dim(g.w, g.kw, g.sw, g.dw, g.same, &pw);
            int64_t xd[4] = {g.n, g.h, g.w, g.c}, wd[4] = {g.kh, g.kw, g.c, g.oc}, yd[4] = {g.n, oh, ow, g.oc};
            int64_t nx = g.n * g.h * g.w * g.c, nw = g.kh * g.kw * g.c * g.oc, ny = (int64_t)g.n * oh * ow * g.oc;
            double *xv = malloc(sizeof(double) * (size_t)(nx + 1)), *wv = malloc(sizeof(double) * (size_t)(nw + 1));
            double *rv = malloc(sizeof(double) * (size_t)(ny + 1)), *y = calloc((size_t)ny + 1, sizeof(double));
            double *dx = calloc((size_t)nx + 1, sizeof(double)), *dw = calloc((size_t)nw + 1, sizeof(double));
            for (int64_t i = 0; i < nx; i++) xv[i] = rnd();
            for (int64_t i = 0; i < nw; i++) wv[i] = rnd();
            for (int64_t i = 0; i < ny; i++) rv[i] = rnd();
            /* reference: y, and for loss = sum(y * r): dx, dw */
            for (int b = 0; b < g.n; b++) for (int oy = 0; oy < oh; oy++) for (int ox = 0; ox < ow; ox++)
                for (int o = 0; o < g.oc; o++) {
                    int64_t yi = (((int64_t)b * oh + oy) * ow + ox) * g.oc + o;
                    for (int ky = 0; ky < g.kh; ky++) for (int kx = 0; kx < g.kw; kx++) {
                        int iy = oy * g.sh - ph + ky * g.dh, ix = ox * g.sw - pw + kx * g.dw;
                        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                        for (int ci = 0; ci < g.c; ci++) {
                            int64_t xi = (((int64_t)b * g.h + iy) * g.w + ix) * g.c + ci, wi = (((int64_t)ky * g.kw + kx) * g.c + ci) * g.oc + o;
                            y[yi] += xv[xi] * wv[wi];
                            dx[xi] += rv[yi] * wv[wi];
                            dw[wi] += rv[yi] * xv[xi];
                        }
                    }
                }
            df_graph *gr = df_graph_new();
            df_output x = df_placeholder(gr, "x", t, 4, xd), w = df_placeholder(gr, "w", t, 4, wd), r = df_placeholder(gr, "r", t, 4, yd);
            df_op_builder *b = df_op_new(gr, "Conv2D", "conv");
            df_op_add_input(b, x);
            df_op_add_input(b, w);
            set_window(b, &g, 0);
            df_output yo = {df_op_finish(b), 0};
            df_output loss = df_reduce_sum(gr, df_mul(gr, yo, r), 0, NULL, 0);
            df_output xs[2] = {x, w}, dxs[2];
            CHECK_EQ_INT(df_gradients(gr, 1, &loss, NULL, 2, xs, dxs), DF_OK);
            CHECK_OK(df_graph_status(gr));
            df_tensor *tv[3] = {tensor(t, 4, xd, xv), tensor(t, 4, wd, wv), tensor(t, 4, yd, rv)}, *out[3] = {NULL, NULL, NULL};
            df_output feeds[3] = {x, w, r}, fetches[3] = {yo, dxs[0], dxs[1]};
            df_session_options so;
            memset(&so, 0, sizeof so);
            so.intra_op_threads = 1 + trial % 2;
            df_status st;
            df_session *s = df_session_new(gr, &so, &st);
            df_session_run(s, feeds, tv, 3, fetches, out, 3, NULL, 0, &st);
            CHECK_OK(&st);
            double tol = t == DF_FLOAT ? 1e-4 : 1e-10;
            if (out[0] && out[1] && out[2]) {
                CHECK_EQ_INT(df_tensor_num_elements(out[0]), ny);
                int bad = 0;
                for (int64_t i = 0; i < ny && !bad; i++) bad = fabs(at(out[0], i) - y[i]) > tol * (1 + fabs(y[i]));
                for (int64_t i = 0; i < nx && !bad; i++) bad = 2 * (fabs(at(out[1], i) - dx[i]) > tol * (1 + fabs(dx[i])));
                for (int64_t i = 0; i < nw && !bad; i++) bad = 3 * (fabs(at(out[2], i) - dw[i]) > tol * (1 + fabs(dw[i])));
                CHECK_MSG(!bad, "%s %s: n%d h%d w%d c%d k%dx%d oc%d s%d,%d d%d,%d %s: %s differs", df_kernel_isa(),
                          df_dtype_name(t), g.n, g.h, g.w, g.c, g.kh, g.kw, g.oc, g.sh, g.sw, g.dh, g.dw,
                          g.same ? "SAME" : "VALID", bad == 1 ? "output" : bad == 2 ? "input gradient" : "filter gradient");
                cases++;
            }
            for (int i = 0; i < 3; i++) { df_tensor_release(tv[i]); df_tensor_release(out[i]); }
            df_session_free(s);
            df_graph_free(gr);
            free(xv); free(wv); free(rv); free(y); free(dx); free(dw);
        }
        df_set_kernel_isa("auto");
    }
    CHECK(cases >= 40);
}

DF_TEST(pooling_and_gradients_match_reference) {
    int cases = 0;
    for (int trial = 0; trial < 80; trial++) {
        /* the plain kernels, then the AVX2 ones (whole vectors from 8 channels on) */
        if (trial % 40 == 0 && df_set_kernel_isa(trial ? "avx2" : "portable") != DF_OK) { cases += 40; trial += 39; continue; }
        geo g = {rint_(1, 2), rint_(1, 8), rint_(1, 8), rint_(1, 20), rint_(1, 3), rint_(1, 3), 0,
                 rint_(1, 3), rint_(1, 3), 1, 1, rint_(0, 1)};
        int max = trial % 2;
        df_dtype t = trial % 4 < 2 ? DF_FLOAT : DF_DOUBLE;
        int ph, pw, oh = out_dim(g.h, g.kh, g.sh, 1, g.same, &ph), ow = out_dim(g.w, g.kw, g.sw, 1, g.same, &pw);
        int64_t xd[4] = {g.n, g.h, g.w, g.c}, yd[4] = {g.n, oh, ow, g.c};
        int64_t nx = g.n * g.h * g.w * g.c, ny = (int64_t)g.n * oh * ow * g.c;
        double *xv = malloc(sizeof(double) * (size_t)(nx + 1)), *rv = malloc(sizeof(double) * (size_t)(ny + 1));
        double *y = malloc(sizeof(double) * (size_t)(ny + 1)), *dx = calloc((size_t)nx + 1, sizeof(double));
        for (int64_t i = 0; i < nx; i++) xv[i] = rnd() + 1e-3 * (double)i;       /* distinct values: one max */
        if (trial % 3 == 0) for (int64_t i = 0; i < nx; i++) xv[i] = floor(xv[i] * 4) / 4; /* ties: the first max takes it */
        if (max && trial % 5 == 1) xv[rint_(0, (int)nx - 1)] = NAN;             /* NaN wins the max */
        for (int64_t i = 0; i < ny; i++) rv[i] = rnd();
        for (int b = 0; b < g.n; b++) for (int oy = 0; oy < oh; oy++) for (int ox = 0; ox < ow; ox++) for (int ci = 0; ci < g.c; ci++) {
            int64_t yi = (((int64_t)b * oh + oy) * ow + ox) * g.c + ci, arg = -1;
            double acc = max ? -INFINITY : 0;
            int cnt = 0;
            for (int ky = 0; ky < g.kh; ky++) for (int kx = 0; kx < g.kw; kx++) {
                int iy = oy * g.sh - ph + ky, ix = ox * g.sw - pw + kx;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                int64_t xi = (((int64_t)b * g.h + iy) * g.w + ix) * g.c + ci;
                cnt++;
                if (max) { if (!isnan(acc) && (xv[xi] > acc || isnan(xv[xi]))) { acc = xv[xi]; arg = xi; } } else acc += xv[xi];
            }
            y[yi] = max ? acc : acc / cnt;
            if (max) dx[arg] += rv[yi];
            else for (int ky = 0; ky < g.kh; ky++) for (int kx = 0; kx < g.kw; kx++) {
                int iy = oy * g.sh - ph + ky, ix = ox * g.sw - pw + kx;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                dx[(((int64_t)b * g.h + iy) * g.w + ix) * g.c + ci] += rv[yi] / cnt;
            }
        }
        df_graph *gr = df_graph_new();
        df_output x = df_placeholder(gr, "x", t, 4, xd), r = df_placeholder(gr, "r", t, 4, yd);
        df_op_builder *b = df_op_new(gr, max ? "MaxPool" : "AvgPool", "pool");
        df_op_add_input(b, x);
        df_op_set_attr_type(b, "T", t);
        set_window(b, &g, 1);
        df_output yo = {df_op_finish(b), 0};
        df_output loss = df_reduce_sum(gr, df_mul(gr, yo, r), 0, NULL, 0), dxo;
        CHECK_EQ_INT(df_gradients(gr, 1, &loss, NULL, 1, &x, &dxo), DF_OK);
        CHECK_OK(df_graph_status(gr));
        df_tensor *tv[2] = {tensor(t, 4, xd, xv), tensor(t, 4, yd, rv)}, *out[2] = {NULL, NULL};
        df_output feeds[2] = {x, r}, fetches[2] = {yo, dxo};
        df_status st;
        df_session *s = df_session_new(gr, NULL, &st);
        df_session_run(s, feeds, tv, 2, fetches, out, 2, NULL, 0, &st);
        CHECK_OK(&st);
        double tol = t == DF_FLOAT ? 1e-5 : 1e-12;
        if (out[0] && out[1]) {
            int bad = 0;
            for (int64_t i = 0; i < ny && !bad; i++)
                bad = isnan(y[i]) ? !isnan(at(out[0], i)) : !(fabs(at(out[0], i) - y[i]) <= tol * (1 + fabs(y[i])));
            for (int64_t i = 0; i < nx && !bad; i++) bad = 2 * !(fabs(at(out[1], i) - dx[i]) <= tol * (1 + fabs(dx[i])));
            CHECK_MSG(!bad, "%s %s %s: n%d h%d w%d c%d k%dx%d s%d,%d %s: %s differs", df_kernel_isa(), max ? "MaxPool" : "AvgPool",
                      df_dtype_name(t), g.n, g.h, g.w, g.c, g.kh, g.kw, g.sh, g.sw, g.same ? "SAME" : "VALID",
                      bad == 1 ? "output" : "gradient");
            cases++;
        }
        for (int i = 0; i < 2; i++) { df_tensor_release(tv[i]); df_tensor_release(out[i]); }
        df_session_free(s);
        df_graph_free(gr);
        free(xv); free(rv); free(y); free(dx);
    }
    df_set_kernel_isa("auto");
    CHECK_EQ_INT(cases, 80);
}

DF_TEST(conv2d_bad_input_gives_clear_errors) {
    df_graph *g = df_graph_new();
    int64_t xd[4] = {1, 5, 5, 3}, wd[4] = {3, 3, 2, 4};                  /* depth 3 vs 2 */
    df_output x = df_placeholder(g, "x", DF_FLOAT, 4, xd), w = df_placeholder(g, "w", DF_FLOAT, 4, wd);
    df_op_builder *b = df_op_new(g, "Conv2D", "badconv");
    df_op_add_input(b, x);
    df_op_add_input(b, w);
    int64_t s[4] = {1, 1, 1, 1};
    df_op_set_attr_int_list(b, "strides", s, 4);
    df_op_set_attr_string(b, "padding", "SAME");
    CHECK(df_op_finish(b) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "badconv");
    df_graph_free(g);
    /* strides in the batch dimension, unknown padding, a zero window */
    const char *pads[3] = {"SAME", "FULL", "VALID"};
    int64_t bad_s[3][4] = {{2, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}};
    for (int k = 0; k < 3; k++) {
        g = df_graph_new();
        int64_t xd2[4] = {1, 4, 4, 1};
        df_output p = df_placeholder(g, "p", DF_FLOAT, 4, xd2);
        b = df_op_new(g, "MaxPool", "badpool");
        df_op_add_input(b, p);
        int64_t ks[4] = {1, k == 2 ? 0 : 2, 2, 1};
        df_op_set_attr_int_list(b, "ksize", ks, 4);
        df_op_set_attr_int_list(b, "strides", bad_s[k], 4);
        df_op_set_attr_string(b, "padding", pads[k]);
        CHECK(df_op_finish(b) == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "badpool");
        df_graph_free(g);
    }
}
