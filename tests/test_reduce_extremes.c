/* test_reduce_extremes.c - Max and Min over leading or trailing axes (the fast paths of
   src/kernels/reduce.c: rows, one long row in blocks, column ranges, row blocks; AVX2 and the
   portable loops, both run here), float32, float64, int32 and int64, with 1 and 2 intra-op threads, against a
   plain loop here; a NaN in a reduced slice gives NaN, as TensorFlow's CPU kernels do. */
#include "harness.h"
#include <stdint.h>

static double value_at(uint64_t i, int ints) {
    uint64_t x = i * 0x9E3779B97F4A7C15ull + 12345;
    x ^= x >> 29; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 32;
    return ints ? (double)((int64_t)(x % 2000001) - 1000000) : (double)(x >> 11) / 9007199254740992.0 * 200.0 - 100.0;
}
static void fill(df_tensor *t) {
    int ints = df_tensor_dtype(t) == DF_INT32 || df_tensor_dtype(t) == DF_INT64;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) {
        double v = value_at((uint64_t)i, ints);
        switch (df_tensor_dtype(t)) {
        case DF_FLOAT: ((float *)df_tensor_data(t))[i] = (float)v; break;
        case DF_DOUBLE: ((double *)df_tensor_data(t))[i] = v; break;
        case DF_INT32: ((int32_t *)df_tensor_data(t))[i] = (int32_t)v; break;
        default: ((int64_t *)df_tensor_data(t))[i] = (int64_t)v; break;
        }
    }
}
static double get(const df_tensor *t, int64_t i) {
    switch (df_tensor_dtype(t)) {
    case DF_FLOAT: return ((const float *)df_tensor_data(t))[i];
    case DF_DOUBLE: return ((const double *)df_tensor_data(t))[i];
    case DF_INT32: return ((const int32_t *)df_tensor_data(t))[i];
    default: return (double)((const int64_t *)df_tensor_data(t))[i];
    }
}
static void set(df_tensor *t, int64_t i, double v) {
    switch (df_tensor_dtype(t)) {
    case DF_FLOAT: ((float *)df_tensor_data(t))[i] = (float)v; break;
    case DF_DOUBLE: ((double *)df_tensor_data(t))[i] = v; break;
    default: break;
    }
}

/* x (rank 2 or 3) reduced over the axes in mask by Max (is_max) or Min, in a session of `threads`
   intra-op threads, against the plain loop. */
static void check_case(const char *what, df_tensor *x, unsigned mask, int is_max, int threads) {
    int rank = df_tensor_rank(x);
    int64_t dims[3] = {1, 1, 1};
    for (int d = 0; d < rank; d++) dims[d] = df_tensor_dim(x, d);
    int32_t axes[3];
    int n_axes = 0;
    for (int d = 0; d < rank; d++) if (mask >> d & 1u) axes[n_axes++] = d;
    df_graph *g = df_graph_new();
    df_output px = df_placeholder(g, "x", df_tensor_dtype(x), rank, dims);
    int64_t an = n_axes;
    df_tensor *at = df_tensor_from_data(DF_INT32, 1, &an, axes, (size_t)n_axes * 4, NULL);
    df_op_builder *b = df_op_new(g, is_max ? "Max" : "Min", NULL);
    df_op_add_input(b, px);
    df_op_add_input(b, df_const(g, at));
    df_tensor_release(at);
    df_output y = {df_op_finish(b), 0};
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = o.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    df_tensor *r = NULL;
    if (s) df_session_run(s, &px, &x, 1, &y, &r, 1, NULL, 0, &st);
    CHECK_MSG(st.code == DF_OK, "%s: %s", what, st.message);
    if (r) {
        /* the reference: output index from the kept dims */
        int64_t on = df_tensor_num_elements(r), bad = 0;
        double *want = (double *)malloc((size_t)on * sizeof(double));
        char *seen = (char *)calloc((size_t)on, 1);
        for (int64_t i = 0; i < dims[0]; i++)
            for (int64_t j = 0; j < dims[1]; j++)
                for (int64_t k = 0; k < dims[2]; k++) {
                    int64_t idx[3] = {i, j, k}, oi = 0;
                    for (int d = 0; d < rank; d++) if (!(mask >> d & 1u)) oi = oi * dims[d] + idx[d];
                    double v = get(x, (i * dims[1] + j) * dims[2] + k);
                    if (!seen[oi] || v != v || (want[oi] == want[oi] && (is_max ? v > want[oi] : v < want[oi]))) want[oi] = v;
                    seen[oi] = 1;
                }
        for (int64_t i = 0; i < on; i++) {
            double got = get(r, i);
            int same = (got != got && want[i] != want[i]) || got == want[i];
            if (!same && bad++ < 3) CHECK_MSG(0, "%s [%lld]: %.9g, want %.9g", what, (long long)i, got, want[i]);
        }
        CHECK_MSG(bad == 0, "%s: %lld of %lld outputs differ", what, (long long)bad, (long long)on);
        free(want); free(seen);
    }
    df_tensor_release(r);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(reduce_max_min_fast_paths_match_a_plain_loop) {
    static const df_dtype types[4] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_INT64};
    struct { const char *what; int rank; int64_t dims[3]; unsigned mask; } shapes[] = {
        {"rows", 2, {5, 70001, 1}, 2u},             /* past 1 MB: split by row */
        {"one long row", 1, {300007, 1, 1}, 1u},    /* blocks */
        {"all of a matrix", 2, {37, 9001, 1}, 3u},
        {"columns", 2, {2003, 301, 1}, 1u},         /* column ranges */
        {"few columns", 2, {70001, 5, 1}, 1u},      /* row blocks */
        {"leading pair", 3, {7, 9, 13}, 3u},
        {"trailing pair", 3, {7, 9, 13}, 6u},
        {"middle (general loop)", 3, {7, 9, 13}, 2u},
        {"short rows", 2, {3, 5, 1}, 2u},
    };
    const char *isas[2] = {"portable", df_kernel_isa()};
    for (int ii = 0; ii < 2; ii++)
    for (int ti = 0; ti < 4; ti++)
        for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
            df_tensor *x = df_tensor_new(types[ti], shapes[si].rank, shapes[si].dims, NULL);
            CHECK(x != NULL);
            if (!x) continue;
            fill(x);
            int64_t n = df_tensor_num_elements(x);
            if (types[ti] == DF_FLOAT || types[ti] == DF_DOUBLE) {   /* NaNs and infinities in places */
                set(x, n / 3, NAN);
                set(x, n - 1, INFINITY);
                set(x, 1, -INFINITY);
                if (n > 100) set(x, n / 2 + 17, NAN);
            }
            CHECK_EQ_INT(df_set_kernel_isa(isas[ii]), DF_OK);
            for (int threads = 1; threads <= 2; threads++)
                for (int is_max = 0; is_max < 2; is_max++) {
                    char what[160];
                    snprintf(what, sizeof what, "%s %s %s, %d thread%s, %s kernels", is_max ? "Max" : "Min",
                             df_dtype_name(types[ti]), shapes[si].what, threads, threads > 1 ? "s" : "", isas[ii]);
                    check_case(what, x, shapes[si].mask, is_max, threads);
                }
            df_tensor_release(x);
        }
    df_set_kernel_isa(isas[1]);
}

/* A NaN only in the first element of a row, and rows shorter than the vector loop. */
DF_TEST(reduce_max_min_nan_first_and_short_rows) {
    float v[2][3] = {{NAN, 1, 2}, {3, -1, 5}};
    df_tensor *x = df_tensor_from_data(DF_FLOAT, 2, (const int64_t[]){2, 3}, v, sizeof v, NULL);
    for (int is_max = 0; is_max < 2; is_max++) {
        check_case(is_max ? "Max NaN first" : "Min NaN first", x, 2u, is_max, 1);
        check_case(is_max ? "Max NaN first cols" : "Min NaN first cols", x, 1u, is_max, 1);
    }
    df_tensor_release(x);
}
