/* helpers_util.h - what tests/test_helpers.c and tests/test_helpers_newops.c share: constants
   from C arrays, one run of a graph, and comparisons of a fetched tensor with expected values. */
#ifndef DF_TEST_HELPERS_UTIL_H
#define DF_TEST_HELPERS_UTIL_H
#include "harness.h"
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})

/* A Const of dtype t (float, double, int32, int64 or bool) holding v, made with df_const_from_data. */
static inline df_output hu_const(df_graph *g, df_dtype t, int rank, const int64_t *dims, const double *v) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    unsigned char *buf = (unsigned char *)calloc((size_t)(n ? n : 1), 8);
    for (int64_t i = 0; buf && i < n; i++) {
        if (t == DF_FLOAT) ((float *)buf)[i] = (float)v[i];
        else if (t == DF_DOUBLE) ((double *)buf)[i] = v[i];
        else if (t == DF_INT32) ((int32_t *)buf)[i] = (int32_t)v[i];
        else if (t == DF_INT64) ((int64_t *)buf)[i] = (int64_t)v[i];
        else if (t == DF_BOOL) buf[i] = v[i] != 0;
    }
    df_output o = df_const_from_data(g, NULL, t, rank, dims, buf);
    free(buf);
    return o;
}
static inline df_output hu_f(df_graph *g, int rank, const int64_t *dims, const double *v) { return hu_const(g, DF_FLOAT, rank, dims, v); }

/* One session run of g's fetches (at most 16), with the targets; values into out[]. */
static inline df_code hu_run(df_graph *g, const df_output *fetches, int n, df_tensor **out, df_status *st) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    df_session *s = df_session_new(g, NULL, st);
    if (!s) return st->code;
    df_session_run(s, NULL, NULL, 0, fetches, out, n, NULL, 0, st);
    df_session_free(s);
    return st->code;
}
static inline void hu_release(df_tensor **t, int n) { for (int i = 0; i < n; i++) df_tensor_release(t[i]); }

static inline double hu_at(const df_tensor *t, int64_t i) {
    const void *p = df_tensor_data(t);
    switch (df_tensor_dtype(t)) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_BOOL: return ((const unsigned char *)p)[i];
    default: return NAN;
    }
}
/* t has dtype type, shape dims and the values want, to tol relative (integers: exactly). */
static inline void hu_check(const char *what, const df_tensor *t, df_dtype type, int rank, const int64_t *dims,
                            const double *want, double tol) {
    CHECK_MSG(t != NULL, "%s: no value", what);
    if (!t) return;
    CHECK_MSG(df_tensor_dtype(t) == type, "%s: dtype %s, want %s", what, df_dtype_name(df_tensor_dtype(t)), df_dtype_name(type));
    int same = df_tensor_rank(t) == rank;
    for (int d = 0; same && d < rank; d++) same = df_tensor_dim(t, d) == dims[d];
    CHECK_MSG(same, "%s: shape differs (rank %d, dim0 %lld)", what, df_tensor_rank(t), (long long)df_tensor_dim(t, 0));
    if (!same || df_tensor_dtype(t) != type) return;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) {
        double got = hu_at(t, i);
        CHECK_MSG(fabs(got - want[i]) <= tol * (1 + fabs(want[i])), "%s[%lld]: %.9g, want %.9g", what, (long long)i, got, want[i]);
    }
}
/* The graph's status is `code` and its message names node `node` ("{{node NAME}}"). */
static inline void hu_check_graph_error(df_graph *g, df_code code, const char *node, const char *needle) {
    const df_status *st = df_graph_status(g);
    char want[256];
    snprintf(want, sizeof want, "{{node %s}}", node);
    CHECK_STATUS(st, code, needle);
    CHECK_MSG(strstr(st->message, want) != NULL, "message '%s' does not name %s", st->message, node);
}
#endif
