/* Tensor arrays from C and the loops over sequences (df_map_fn, df_scan, df_foldl, df_foldr):
   values against closed forms, gradients against central differences, misuse. */
#include "harness.h"

static df_tensor *vec_f64(int rank, const int64_t *dims, const double *v) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return df_tensor_from_data(DF_DOUBLE, rank, dims, v, (size_t)n * sizeof(double), NULL);
}

/* Runs g fetching f (one output) with x fed; copies the values into out (n of them). */
static int run1(df_session *s, df_output x, df_tensor *xv, df_output f, double *out, int64_t n) {
    df_status st;
    df_tensor *r = NULL;
    if (df_session_run(s, &x, &xv, x.node ? 1 : 0, &f, &r, 1, NULL, 0, &st) != DF_OK) {
        printf("    run: %s\n", st.message);
        return 0;
    }
    int ok = df_tensor_num_elements(r) == n;
    if (ok) memcpy(out, df_tensor_data(r), (size_t)n * sizeof(double));
    df_tensor_release(r);
    return ok;
}

DF_TEST(seq_tensor_array_write_read_stack_unstack) {
    df_graph *g = df_graph_new();
    df_tensor_array ta = df_tensor_array_new(g, DF_DOUBLE, df_scalar_i32(g, 3), 0, 1, (const int64_t[]){2});
    for (int i = 0; i < 3; i++) {
        double v[2] = {i + 0.5, -i};
        df_tensor *t = vec_f64(1, (const int64_t[]){2}, v);
        ta = df_tensor_array_write(g, ta, df_scalar_i32(g, 2 - i), df_const(g, t));
        df_tensor_release(t);
    }
    df_output stacked = df_tensor_array_stack(g, ta), one = df_tensor_array_read(g, ta, df_scalar_i32(g, 0));
    df_output size = df_tensor_array_size(g, ta);
    /* unstack a [3,2] constant into a second array and read element 1 back */
    double m[6] = {1, 2, 3, 4, 5, 6};
    df_tensor *mt = vec_f64(2, (const int64_t[]){3, 2}, m);
    df_tensor_array tb = df_tensor_array_new(g, DF_DOUBLE, df_scalar_i32(g, 3), 0, -1, NULL);
    tb = df_tensor_array_unstack(g, tb, df_const(g, mt));
    df_tensor_release(mt);
    df_output row1 = df_tensor_array_read(g, tb, df_scalar_i32(g, 1));
    CHECK_EQ_INT(df_graph_status(g)->code, DF_OK);
    df_session *s = df_session_new(g, NULL, NULL);
    CHECK(s != NULL);
    double got[6];
    df_output none = {NULL, 0};
    CHECK(run1(s, none, NULL, stacked, got, 6));
    const double want[6] = {2.5, -2, 1.5, -1, 0.5, 0};
    for (int i = 0; i < 6; i++) CHECK_MSG(got[i] == want[i], "stack[%d] = %g, want %g", i, got[i], want[i]);
    CHECK(run1(s, none, NULL, one, got, 2));
    CHECK(got[0] == 2.5 && got[1] == -2);
    CHECK(run1(s, none, NULL, row1, got, 2));
    CHECK(got[0] == 3 && got[1] == 4);
    df_tensor *sz = NULL;
    df_status st;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &size, &sz, 1, NULL, 0, &st), DF_OK);
    CHECK(sz && df_tensor_dtype(sz) == DF_INT32 && *(int32_t *)df_tensor_data(sz) == 3);
    df_tensor_release(sz);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- map, scan, foldl, foldr ---- */
static df_output square_plus_one(df_graph *g, void *u, df_output e) {
    (void)u;
    return df_add(g, df_mul(g, e, e), df_scalar_f64(g, 1));
}
static void running_sum(df_graph *g, void *u, const df_output *acc, df_output e, df_output *next) {
    (void)u;
    next[0] = df_add(g, acc[0], e);
}
/* acc = acc * w + e (w captured from outside the loop): order matters */
static void decay(df_graph *g, void *u, const df_output *acc, df_output e, df_output *next) {
    df_output w = *(df_output *)u;
    next[0] = df_add(g, df_mul(g, acc[0], w), e);
}
/* two accumulators: (sum, sum of squares) */
static void two_acc(df_graph *g, void *u, const df_output *acc, df_output e, df_output *next) {
    (void)u;
    next[0] = df_add(g, acc[0], e);
    next[1] = df_add(g, acc[1], df_mul(g, e, e));
}

DF_TEST(seq_map_scan_fold_values) {
    const double x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int par = 1; par <= 10; par += 9) {
        df_graph *g = df_graph_new();
        df_output e = df_placeholder(g, "e", DF_DOUBLE, 2, (const int64_t[]){-1, 2});
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = par;
        df_output mapped, scanned, folded, rfold, two[2];
        double z[2] = {0, 0}, half = 0.5;
        df_tensor *zt = vec_f64(1, (const int64_t[]){2}, z), *ht = vec_f64(0, NULL, &half);
        df_output zero = df_const(g, zt), w = df_const(g, ht);
        df_tensor_release(zt);
        df_tensor_release(ht);
        CHECK_EQ_INT(df_map_fn(g, e, DF_DOUBLE, square_plus_one, NULL, &o, &mapped), DF_OK);
        CHECK_EQ_INT(df_scan(g, 1, &zero, e, running_sum, NULL, &o, &scanned), DF_OK);
        CHECK_EQ_INT(df_foldl(g, 1, &zero, e, decay, &w, &o, &folded), DF_OK);
        CHECK_EQ_INT(df_foldr(g, 1, &zero, e, decay, &w, &o, &rfold), DF_OK);
        df_output init2[2] = {zero, zero};
        CHECK_EQ_INT(df_foldl(g, 2, init2, e, two_acc, NULL, &o, two), DF_OK);
        df_session *s = df_session_new(g, NULL, NULL);
        CHECK(s != NULL);
        df_tensor *xt = vec_f64(2, (const int64_t[]){4, 2}, x);
        double got[8];
        CHECK(run1(s, e, xt, mapped, got, 8));
        for (int i = 0; i < 8; i++) CHECK(got[i] == x[i] * x[i] + 1);
        CHECK(run1(s, e, xt, scanned, got, 8));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 2; j++) {
                double want = 0;
                for (int k = 0; k <= i; k++) want += x[2 * k + j];
                CHECK_MSG(got[2 * i + j] == want, "scan[%d][%d] = %g, want %g", i, j, got[2 * i + j], want);
            }
        CHECK(run1(s, e, xt, folded, got, 2));
        for (int j = 0; j < 2; j++) {
            double a = 0;
            for (int k = 0; k < 4; k++) a = a * 0.5 + x[2 * k + j];
            CHECK_MSG(got[j] == a, "foldl[%d] = %g, want %g", j, got[j], a);
        }
        CHECK(run1(s, e, xt, rfold, got, 2));
        for (int j = 0; j < 2; j++) {
            double a = 0;
            for (int k = 3; k >= 0; k--) a = a * 0.5 + x[2 * k + j];
            CHECK_MSG(got[j] == a, "foldr[%d] = %g, want %g", j, got[j], a);
        }
        CHECK(run1(s, e, xt, two[1], got, 2));
        CHECK(got[0] == 1 + 9 + 25 + 49 && got[1] == 4 + 16 + 36 + 64);
        df_tensor_release(xt);
        /* the length is the run's: 1 row now */
        xt = vec_f64(2, (const int64_t[]){1, 2}, x);
        CHECK(run1(s, e, xt, scanned, got, 2));
        CHECK(got[0] == 1 && got[1] == 2);
        df_tensor_release(xt);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* loss = sum(scan(decay by w)(e)) + sum(map(e^2+1)); d loss / d e and d loss / d w against
   central differences. */
DF_TEST(seq_gradients_match_differences) {
    df_graph *g = df_graph_new();
    df_output e = df_placeholder(g, "e", DF_DOUBLE, 2, (const int64_t[]){5, 2});
    df_output w = df_placeholder(g, "w", DF_DOUBLE, 0, NULL);
    double z[2] = {0.25, -0.5};
    df_tensor *zt = vec_f64(1, (const int64_t[]){2}, z);
    df_output zero = df_const(g, zt);
    df_tensor_release(zt);
    df_output scanned, mapped, folded;
    CHECK_EQ_INT(df_scan(g, 1, &zero, e, decay, &w, NULL, &scanned), DF_OK);
    CHECK_EQ_INT(df_map_fn(g, e, DF_DOUBLE, square_plus_one, NULL, NULL, &mapped), DF_OK);
    CHECK_EQ_INT(df_foldr(g, 1, &zero, e, decay, &w, NULL, &folded), DF_OK);
    df_output parts[3] = {df_reduce_sum(g, df_tanh(g, scanned), 0, NULL, 0), df_reduce_sum(g, mapped, 0, NULL, 0),
                          df_reduce_sum(g, df_mul(g, folded, folded), 0, NULL, 0)};
    df_output loss = df_add_n(g, parts, 3);
    df_output xs[2] = {e, w}, d[2];
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 2, xs, d), DF_OK);
    CHECK(d[0].node && d[1].node);
    if (!d[0].node || !d[1].node) { df_graph_free(g); return; }
    df_session *s = df_session_new(g, NULL, NULL);
    double ev[10] = {0.3, -0.2, 0.5, 0.1, -0.4, 0.7, 0.2, 0.2, -0.1, 0.6}, wv = 0.8;
    df_status st;
    df_output feeds[2] = {e, w}, fetch[3] = {loss, d[0], d[1]};
    df_tensor *fv[2], *out[3];
    fv[0] = vec_f64(2, (const int64_t[]){5, 2}, ev);
    fv[1] = vec_f64(0, NULL, &wv);
    CHECK_EQ_INT(df_session_run(s, feeds, fv, 2, fetch, out, 3, NULL, 0, &st), DF_OK);
    double de[10], dw = 0;
    memcpy(de, df_tensor_data(out[1]), sizeof de);
    dw = *(double *)df_tensor_data(out[2]);
    for (int i = 0; i < 3; i++) df_tensor_release(out[i]);
    df_tensor_release(fv[0]);
    df_tensor_release(fv[1]);
    const double h = 1e-6;
    for (int k = 0; k <= 10; k++) {          /* k < 10: e[k]; k == 10: w */
        double lo = 0, hi = 0;
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            double ep[10], wp = wv;
            memcpy(ep, ev, sizeof ep);
            if (k < 10) ep[k] += sgn * h;
            else wp += sgn * h;
            fv[0] = vec_f64(2, (const int64_t[]){5, 2}, ep);
            fv[1] = vec_f64(0, NULL, &wp);
            df_tensor *l = NULL;
            CHECK_EQ_INT(df_session_run(s, feeds, fv, 2, &loss, &l, 1, NULL, 0, &st), DF_OK);
            double v = l ? *(double *)df_tensor_data(l) : 0;
            if (sgn < 0) lo = v;
            else hi = v;
            df_tensor_release(l);
            df_tensor_release(fv[0]);
            df_tensor_release(fv[1]);
        }
        double num = (hi - lo) / (2 * h), ana = k < 10 ? de[k] : dw;
        CHECK_MSG(fabs(num - ana) <= 1e-6 * (1 + fabs(num)), "d loss / d %s%d: %.9g analytic, %.9g numeric",
                  k < 10 ? "e" : "w", k < 10 ? k : 0, ana, num);
    }
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(seq_misuse_is_a_status) {
    df_graph *g = df_graph_new();
    df_output scalar = df_scalar_f64(g, 1), out;
    CHECK_EQ_INT(df_map_fn(g, scalar, DF_DOUBLE, square_plus_one, NULL, NULL, &out), DF_INVALID_ARGUMENT);
    CHECK(out.node == NULL);
    CHECK(strstr(df_graph_status(g)->message, "scalar") != NULL);
    df_graph_free(g);
    g = df_graph_new();
    df_output e = df_placeholder(g, "e", DF_DOUBLE, 1, (const int64_t[]){3});
    CHECK_EQ_INT(df_map_fn(g, e, DF_DOUBLE, NULL, NULL, NULL, &out), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    g = df_graph_new();
    e = df_placeholder(g, "e", DF_DOUBLE, 1, (const int64_t[]){3});
    df_output init = df_scalar_f64(g, 0);
    CHECK_EQ_INT(df_scan(g, 0, &init, e, running_sum, NULL, NULL, &out), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    /* reading an element never written: a run-time status naming the read */
    g = df_graph_new();
    df_tensor_array ta = df_tensor_array_new(g, DF_DOUBLE, df_scalar_i32(g, 2), 0, -1, NULL);
    ta = df_tensor_array_write(g, ta, df_scalar_i32(g, 0), df_scalar_f64(g, 1));
    df_output r = df_tensor_array_read(g, ta, df_scalar_i32(g, 1));
    df_session *s = df_session_new(g, NULL, NULL);
    df_status st;
    df_tensor *v = NULL;
    CHECK(df_session_run(s, NULL, NULL, 0, &r, &v, 1, NULL, 0, &st) != DF_OK);
    CHECK_MSG(strstr(st.message, df_node_name(r.node)) != NULL, "message names the read: %s", st.message);
    CHECK(v == NULL);
    df_session_free(s);
    df_graph_free(g);
}
