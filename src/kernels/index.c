/* ==========================================================================================
   src/kernels/index.c: CPU kernels: indexing, scatter, segment and set ops            >>index
   GatherNd (batch_dims 0) and its inverse ScatterNd; TensorScatterUpdate/Add/Sub/Max/Min
   (a copy of the tensor with the index rows updated); Where (int64 coordinates of the nonzero
   elements, row-major); Unique and ListDiff (first-occurrence order, by value: -0 equals 0, a
   NaN equals nothing); the sorted segment reductions SegmentSum/Mean/Max/Min/Prod (ids must
   not decrease; rows no id names get 0, or 1 for Prod) and UnsortedSegmentMax/Min/Prod (rows
   no id names get the type's lowest, highest or 1; negative ids are dropped); ReverseV2, Roll,
   ShapeN, InTopKV2, Bincount and DenseBincount. Indices out of range are TensorFlow's
   InvalidArgument errors naming the node (with bad_indices_policy IGNORE a gather gives zeros
   for a bad row and a scatter skips it). Rows are added, maxed and multiplied in blocks that
   -O2 vectorises; big gathers and sorted segment reductions are split between the intra-op
   threads. Their gradient functions (here, listed in
   src/autodiff/grad_ops.c's table) follow TensorFlow's array_grad.py, math_grad.py and
   manip_grad.py; Where, ShapeN and InTopKV2 have none (flagged), and Unique, ListDiff, Bincount
   and DenseBincount none either (asking for one is an error naming the node, as in TF).
   ========================================================================================== */

/* ---- helpers ---- */
static inline int64_t df__ix_at(const void *p, int is64, int64_t i) {
    return is64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}
/* The multi-index of flat position k within dims, as "[1,0]" (TensorFlow's SliceDebugString). */
static void df__ix_slice_str(int rank, const int64_t *dims, int64_t k, char *buf, size_t n) {
    int64_t idx[DF_MAX_RANK];
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = dims[d] > 0 ? k % dims[d] : 0;
        k = dims[d] > 0 ? k / dims[d] : 0;
    }
    df__shape_str(rank, idx, buf, n);
}
/* An index row as "[5, 0]". */
static void df__ix_row_str(const df_tensor *ix, int64_t row, int64_t k, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int64_t j = 0; j < k && len < n; j++)
        len += (size_t)snprintf(buf + len, n - len, j ? ", %lld" : "%lld", (long long)df__int_at(ix, row * k + j));
    if (len < n) snprintf(buf + len, n - len, "]");
}
static df_output df__ix_op(df_graph *g, const char *op, int n, const df_output *ins) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    return df__out(df_op_finish(b), 0);
}
static df_output df__ix_op3(df_graph *g, const char *op, df_output a, df_output b, df_output c) {
    df_output in[3] = {a, b, c};
    return df__ix_op(g, op, 3, in);
}
/* op on n inputs with n's bad_indices_policy (the gradients of GatherNd and TensorScatterMax/Min
   pass it on, as TensorFlow's). */
static df_output df__ix_op_pol(df_graph *g, const df_node *n, const char *op, int k, const df_output *ins) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < k; i++) df_op_add_input(b, ins[i]);
    const char *pol = df__attr_s(n, "bad_indices_policy");
    if (pol && *pol) df_op_set_attr_string(b, "bad_indices_policy", pol);
    return df__out(df_op_finish(b), 0);
}
static int df__ix_is_float(df_dtype t) { return t == DF_FLOAT || t == DF_DOUBLE; }
/* The bad_indices_policy attr: 0 an index out of range is an error ("", DEFAULT, ERROR), 1 its
   row is skipped (IGNORE: a gather gives zeros there); -1 and a status for another value. */
static int df__ix_policy(df__kctx *c) {
    const char *p = df__attr_s(c->node, "bad_indices_policy");
    if (!p || !*p || !strcmp(p, "DEFAULT") || !strcmp(p, "ERROR")) return 0;
    if (!strcmp(p, "IGNORE")) return 1;
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "bad_indices_policy must be '', 'DEFAULT', 'ERROR' or 'IGNORE', got '%s'", p);
    return -1;
}

/* ---- GatherNd ---- */
DF_PRIVATE df_code df__sf_gather_nd(df__shape_ctx *c) {
    const df__shape *p = &c->in_shapes[0], *ix = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    *o = df__shape_unknown();
    if (ix->rank == 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "indices must be at least a vector");
    if (p->rank < 0 || ix->rank < 0 || ix->dims[ix->rank - 1] < 0) return DF_OK;
    int64_t k = ix->dims[ix->rank - 1];
    if (k > p->rank)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "index innermost dimension length must be <= params rank; saw: %lld vs. %d",
                        (long long)k, p->rank);
    if (ix->rank - 1 + p->rank - k > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "GatherNd: result rank too large");
    o->rank = 0;
    for (int d = 0; d < ix->rank - 1; d++) o->dims[o->rank++] = ix->dims[d];
    for (int d = (int)k; d < p->rank; d++) o->dims[o->rank++] = p->dims[d];
    return DF_OK;
}
/* The offset (in slices) of index row r of ix (k indices) into the first k dims of dims; -1 when
   one is out of range. */
static inline int64_t df__nd_row(const void *ixd, int is64, int64_t r, int64_t k, const int64_t *dims) {
    int64_t o = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t v = df__ix_at(ixd, is64, r * k + j);
        if (v < 0 || v >= dims[j]) return -1;
        o = o * dims[j] + v;
    }
    return o;
}
/* The status for bad index row r of ix (TensorFlow's wording). what: "param shape" (GatherNd) or
   "shape" (the scatters). */
static void df__nd_bad(df__kctx *c, const df_tensor *ix, int64_t r, int64_t k, int rank, const int64_t *dims, const char *what) {
    char a[96], b[160], s[96];
    df__ix_slice_str(ix->rank - 1, ix->dims, r, a, sizeof a);
    df__ix_row_str(ix, r, k, b, sizeof b);
    df__shape_str(rank, dims, s, sizeof s);
    if (!strcmp(what, "param shape"))
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices%s = %s does not index into param shape %s, node name: %s", a, b, s, c->node->name);
    else DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices%s = %s does not index into %s %s", a, b, what, s);
}
/* The row offsets of every index row: NULL and a status naming the first bad row, or with
   bad_indices_policy IGNORE -1 for a bad row. */
static int64_t *df__nd_offsets(df__kctx *c, const df_tensor *ix, int rank, const int64_t *dims, int64_t k, int64_t rows,
                               const char *what) {
    int ignore = df__ix_policy(c);
    if (ignore < 0) return NULL;
    int64_t *off = (int64_t *)DF_MALLOC((size_t)DF__MAX(rows, 1) * sizeof(int64_t));
    if (!off) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    int is64 = ix->dtype == DF_INT64;
    for (int64_t r = 0; r < rows; r++) {
        off[r] = df__nd_row(ix->data, is64, r, k, dims);
        if (off[r] < 0 && !ignore) { df__nd_bad(c, ix, r, k, rank, dims, what); DF_FREE(off); return NULL; }
    }
    return off;
}
/* GatherNd's copy, by the rows' offsets (-1: zeros). Computing the offsets in a pass of their
   own is faster than computing them where the rows are copied (3x for single elements). */
typedef struct { const char *src; char *dst; const int64_t *off; size_t bytes; } df__gnd_job;
static void df__gnd_share(void *arg, int64_t lo, int64_t hi) {
    const df__gnd_job *j = (const df__gnd_job *)arg;
    const int64_t *off = j->off;
    if (j->bytes == 4) {         /* single 4- or 8-byte elements: no call per element */
        const uint32_t *s = (const uint32_t *)(const void *)j->src;
        uint32_t *d = (uint32_t *)(void *)j->dst;
        for (int64_t r = lo; r < hi; r++) d[r] = off[r] < 0 ? 0 : s[off[r]];
    } else if (j->bytes == 8) {
        const uint64_t *s = (const uint64_t *)(const void *)j->src;
        uint64_t *d = (uint64_t *)(void *)j->dst;
        for (int64_t r = lo; r < hi; r++) d[r] = off[r] < 0 ? 0 : s[off[r]];
    } else
        for (int64_t r = lo; r < hi; r++) {
            if (off[r] < 0) memset(j->dst + (size_t)r * j->bytes, 0, j->bytes);   /* IGNORE: zeros */
            else memcpy(j->dst + (size_t)r * j->bytes, j->src + (size_t)off[r] * j->bytes, j->bytes);
        }
}
DF_PRIVATE void df__k_gather_nd(df__kctx *c) {
    const df_tensor *p = c->in[0], *ix = c->in[1];
    if (ix->rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices must be at least a vector"); return; }
    int64_t k = ix->dims[ix->rank - 1];
    if (k > p->rank) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "index innermost dimension length must be <= params rank; saw: %lld vs. %d", (long long)k, p->rank);
        return;
    }
    int rank = ix->rank - 1 + p->rank - (int)k;
    if (rank > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "GatherNd: result rank too large"); return; }
    int64_t dims[DF_MAX_RANK], rows = 1, slice = 1;
    int r = 0;
    for (int d = 0; d < ix->rank - 1; d++) { dims[r++] = ix->dims[d]; rows *= ix->dims[d]; }
    for (int d = (int)k; d < p->rank; d++) { dims[r++] = p->dims[d]; slice *= p->dims[d]; }
    if (rows > 0 && slice > 0 && p->n == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Requested more than 0 entries, but params is empty.  Params shape: %s",
                                                        df__dims_str(p->rank, p->dims, (char[96]){0}, 96)); return; }
    int64_t *off = df__nd_offsets(c, ix, p->rank, p->dims, k, rows, "param shape");
    if (!off) return;
    df_tensor *o = df__k_alloc(c, 0, p->dtype, rank, dims);
    if (o && o->n) {
        df__gnd_job j = {(const char *)p->data, (char *)o->data, off, (size_t)slice * df_dtype_size(p->dtype)};
        int64_t unit = DF__MAX(1, 65536 / (int64_t)DF__MAX(j.bytes, 1));
        if (o->nbytes < (1u << 20)) df__gnd_share(&j, 0, rows);
        else df__parallel_for(c->ipool, rows, unit, df__ipool_threads(c->ipool), df__gnd_share, &j);
    }
    DF_FREE(off);
}

/* ---- ScatterNd, TensorScatterUpdate/Add/Sub/Max/Min ---- */
DF_PRIVATE df_code df__sf_scatter_nd(df__shape_ctx *c) {
    const df_tensor *shp = df__sc_const(c, 2);
    const df__shape *ss = &c->in_shapes[2];
    df__shape *o = df__sc_out(c, 0);
    if (shp) return df__dims_from(c->node, shp, o, "shape", c->st);
    *o = df__shape_unknown();
    if (ss->rank == 1 && ss->dims[0] >= 0 && ss->dims[0] <= DF_MAX_RANK) {
        o->rank = (int)ss->dims[0];
        for (int d = 0; d < o->rank; d++) o->dims[d] = -1;
    }
    return DF_OK;
}
/* Checks ix and upd against the output shape (rank, dims): updates.shape must be
   indices.shape[:-1] + shape[k:]. Returns k, or -1 with a status. */
static int64_t df__scatter_check(df__kctx *c, const df_tensor *ix, const df_tensor *upd, int rank, const int64_t *dims) {
    char a[96], b[96];
    if (ix->rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Indices shape must have rank at least one. Found:%s", df__dims_str(ix->rank, ix->dims, a, sizeof a)); return -1; }
    int64_t k = ix->dims[ix->rank - 1];
    if (k > rank) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Inner dimension of indices (%lld) must be <= the rank of the output (%d)", (long long)k, rank);
        return -1;
    }
    int lead = ix->rank - 1;
    int ok = upd->rank == lead + rank - (int)k;
    for (int d = 0; ok && d < lead; d++) ok = upd->dims[d] == ix->dims[d];
    if (!ok) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Dimensions [0,%d) of indices[shape=%s] must match dimensions [0,%d) of updates[shape=%s]",
                  lead, df__dims_str(ix->rank, ix->dims, a, sizeof a), lead, df__dims_str(upd->rank, upd->dims, b, sizeof b));
        return -1;
    }
    for (int d = (int)k; d < rank; d++)
        if (upd->dims[lead + d - k] != dims[d]) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Dimensions [%lld,%d) of input[shape=%s] must match dimensions [%d,%d) of updates[shape=%s]",
                      (long long)k, rank, df__dims_str(rank, dims, a, sizeof a), lead, upd->rank, df__dims_str(upd->rank, upd->dims, b, sizeof b));
            return -1;
        }
    return k;
}
/* One row of a scatter: dst op= src over n elements, by blocks of 8 (restrict and the fixed
   block let -O2 vectorise it). */
#define DF__SC_BLOCKS(EXPR)                                                                         \
    do {                                                                                            \
        int64_t e = 0;                                                                              \
        for (; e + 8 <= n; e += 8)                                                                  \
            for (int q = 0; q < 8; q++) { int64_t i = e + q; d[i] = (EXPR); }                      \
        for (int64_t i = e; i < n; i++) d[i] = (EXPR);                                              \
    } while (0)
#define DF__SC_ROW_FNS(SUF, T)                                                                      \
    static void df__sc_row_##SUF(int mode, T *restrict d, const T *restrict s, int64_t n) {        \
        switch (mode) {                                                                             \
        case DF__SC_ADD: DF__SC_BLOCKS(d[i] + s[i]); break;                                         \
        case DF__SC_SUB: DF__SC_BLOCKS(d[i] - s[i]); break;                                         \
        case DF__SC_MAX: DF__SC_BLOCKS(s[i] > d[i] ? s[i] : d[i]); break;                           \
        case DF__SC_MIN: DF__SC_BLOCKS(s[i] < d[i] ? s[i] : d[i]); break;                           \
        case DF__SC_MUL: DF__SC_BLOCKS(d[i] * s[i]); break;                                         \
        default: break;                                                                             \
        }                                                                                           \
    }
DF__SC_ROW_FNS(f32, float)
DF__SC_ROW_FNS(f64, double)
DF__SC_ROW_FNS(i32, int32_t)
DF__SC_ROW_FNS(i64, int64_t)
#undef DF__SC_ROW_FNS
#undef DF__SC_BLOCKS
#if defined(__GNUC__) || defined(__clang__)
#define DF__PREFETCH_W(p) __builtin_prefetch((p), 1)
#else
#define DF__PREFETCH_W(p) ((void)(p))
#endif
/* The rows in index order, the next row's destination fetched ahead (random rows otherwise
   wait on memory one at a time). */
#define DF__SC_LOOP(SUF, T)                                                                         \
    do {                                                                                            \
        T *o_ = (T *)out->data;                                                                     \
        const T *u_ = (const T *)upd->data;                                                         \
        for (int64_t r = 0; r < rows; r++) {                                                        \
            if (r + 2 < rows && off[r + 2] >= 0) DF__PREFETCH_W(o_ + off[r + 2] * slice);           \
            if (off[r] >= 0) df__sc_row_##SUF(mode, o_ + off[r] * slice, u_ + r * slice, slice);    \
        }                                                                                           \
    } while (0)
/* Applies upd's rows to out at the rows ix names. */
static void df__scatter_apply(df__kctx *c, df_tensor *out, const df_tensor *ix, const df_tensor *upd, int mode) {
    int64_t k = df__scatter_check(c, ix, upd, out->rank, out->dims);
    if (k < 0) return;
    int64_t rows = 1, slice = 1;
    for (int d = 0; d < ix->rank - 1; d++) rows *= ix->dims[d];
    for (int d = (int)k; d < out->rank; d++) slice *= out->dims[d];
    int64_t *off = df__nd_offsets(c, ix, out->rank, out->dims, k, rows, "shape");
    if (!off) return;
    df_dtype t = out->dtype;
    if (mode == DF__SC_UPDATE) {
        size_t bytes = (size_t)slice * df_dtype_size(t);
        for (int64_t r = 0; r < rows && bytes; r++)
            if (off[r] >= 0) memcpy((char *)out->data + (size_t)off[r] * bytes, (const char *)upd->data + (size_t)r * bytes, bytes);
    } else if (t == DF_FLOAT) DF__SC_LOOP(f32, float);
    else if (t == DF_DOUBLE) DF__SC_LOOP(f64, double);
    else if (t == DF_INT32) DF__SC_LOOP(i32, int32_t);
    else if (t == DF_INT64) DF__SC_LOOP(i64, int64_t);
    else if (df__is_integer_type(t)) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t e = 0; e < slice && off[r] >= 0; e++) {
                int64_t di = off[r] * slice + e, a = df__get_i64(t, out->data, di), b = df__get_i64(t, upd->data, r * slice + e);
                int64_t v = mode == DF__SC_ADD ? (int64_t)((uint64_t)a + (uint64_t)b) : mode == DF__SC_SUB ? (int64_t)((uint64_t)a - (uint64_t)b)
                          : mode == DF__SC_MAX ? (b > a ? b : a) : (b < a ? b : a);
                df__set_from_i64(t, out->data, di, v);
            }
    } else DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t));
    DF_FREE(off);
}
#undef DF__SC_LOOP
DF_PRIVATE void df__k_scatter_nd(df__kctx *c) {
    const df_tensor *ix = c->in[0], *upd = c->in[1], *shp = c->in[2];
    df__shape s;
    if (shp->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape must be a vector"); return; }
    if (df__dims_from(c->node, shp, &s, "shape", c->st)) return;
    df_tensor *o = df__k_alloc(c, 0, upd->dtype, s.rank, s.dims);
    if (!o || df__zero_data(o, c->st)) return;
    df__scatter_apply(c, o, ix, upd, DF__SC_ADD);
}
DF_PRIVATE void df__k_tensor_scatter(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (!o) return;
    if (o != x && df__copy_data(o, x, c->st)) return;
    df__scatter_apply(c, o, c->in[1], c->in[2], c->node->op->code);
}

/* ---- Where ---- */
static int df__nonzero(df_dtype t, const void *p, int64_t i, size_t es) {
    switch (t) {
    case DF_FLOAT: return ((const float *)p)[i] != 0;
    case DF_DOUBLE: return ((const double *)p)[i] != 0;
    case DF_HALF: case DF_BFLOAT16: return df__get_f64(t, p, i) != 0;
    default: {
        const unsigned char *b = (const unsigned char *)p + (size_t)i * es;
        for (size_t k = 0; k < es; k++) if (b[k]) return 1;
        return 0;
    }
    }
}
DF_PRIVATE df_code df__sf_where(df__shape_ctx *c) {
    df__shape *o = df__sc_out(c, 0);
    o->rank = 2; o->dims[0] = -1; o->dims[1] = c->in_shapes[0].rank;
    return DF_OK;
}
DF_PRIVATE void df__k_where(df__kctx *c) {
    const df_tensor *x = c->in[0];
    size_t es = df_dtype_size(x->dtype);
    if (!es || x->dtype == DF_STRING || x->dtype == DF_COMPLEX64 || x->dtype == DF_COMPLEX128) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "Where has no kernel for %s", df_dtype_name(x->dtype));
        return;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < x->n; i++) n += df__nonzero(x->dtype, x->data, i, es);
    int64_t dims[2] = {n, x->rank};
    df_tensor *o = df__k_alloc(c, 0, DF_INT64, 2, dims);
    if (!o || !n) return;
    int64_t *v = (int64_t *)o->data, at = 0;
    for (int64_t i = 0; i < x->n; i++) {
        if (!df__nonzero(x->dtype, x->data, i, es)) continue;
        int64_t k = i;
        for (int d = x->rank - 1; d >= 0; d--) { v[at * x->rank + d] = k % x->dims[d]; k /= x->dims[d]; }
        at++;
    }
}

/* ---- Unique, ListDiff: a hash set of element positions, by value ---- */
typedef struct { const df_tensor *t; size_t es; int64_t *slot; uint64_t mask; } df__vset;
static uint64_t df__vhash(const df__vset *s, int64_t i) {
    const unsigned char *b = (const unsigned char *)s->t->data + (size_t)i * s->es;
    unsigned char z[16];
    if ((s->t->dtype == DF_FLOAT && ((const float *)s->t->data)[i] == 0) ||
        (s->t->dtype == DF_DOUBLE && ((const double *)s->t->data)[i] == 0)) { memset(z, 0, sizeof z); b = z; }   /* -0 as 0 */
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < s->es; k++) h = (h ^ b[k]) * 1099511628211ull;
    return h ^ (h >> 29);
}
/* Elements i of s->t and j of u equal by value (a NaN equals nothing). */
static int df__veq(const df_tensor *a, int64_t i, const df_tensor *b, int64_t j, size_t es) {
    if (a->dtype == DF_FLOAT) return ((const float *)a->data)[i] == ((const float *)b->data)[j];
    if (a->dtype == DF_DOUBLE) return ((const double *)a->data)[i] == ((const double *)b->data)[j];
    return !memcmp((const char *)a->data + (size_t)i * es, (const char *)b->data + (size_t)j * es, es);
}
static int df__vset_init(df__vset *s, const df_tensor *t, int64_t n) {
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2) cap <<= 1;
    s->t = t; s->es = df_dtype_size(t->dtype); s->mask = cap - 1;
    s->slot = (int64_t *)DF_MALLOC(cap * sizeof(int64_t));
    if (!s->slot) return 0;
    for (uint64_t i = 0; i < cap; i++) s->slot[i] = -1;
    return 1;
}
/* Finds element j of u in the set; with add, inserts it (as position `pos` of s->t) if absent.
   Returns the stored position or -1. */
static int64_t df__vset_find(df__vset *s, const df_tensor *u, int64_t j, int add, int64_t pos) {
    df__vset probe = *s;
    probe.t = u;
    uint64_t h = df__vhash(&probe, j) & s->mask;
    for (;;) {
        int64_t v = s->slot[h];
        if (v < 0) { if (add) s->slot[h] = pos; return -1; }
        if (df__veq(s->t, v, u, j, s->es)) return v;
        h = (h + 1) & s->mask;
    }
}
static int df__set_type_ok(df__kctx *c, const df_tensor *x) {
    if (!df_dtype_size(x->dtype) || x->dtype == DF_STRING || x->dtype == DF_RESOURCE || x->dtype == DF_VARIANT) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(x->dtype));
        return 0;
    }
    return 1;
}
DF_PRIVATE df_code df__sf_unique(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    if (x->rank >= 0 && x->rank != 1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "unique expects a 1D vector.");
    df__shape *y = df__sc_out(c, 0), *ix = df__sc_out(c, 1);
    y->rank = 1; y->dims[0] = -1;
    ix->rank = 1; ix->dims[0] = x->rank == 1 ? x->dims[0] : -1;
    return DF_OK;
}
DF_PRIVATE void df__k_unique(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (x->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "unique expects a 1D vector."); return; }
    if (!df__set_type_ok(c, x)) return;
    df_dtype it = c->node->out_types[1];
    df_tensor *idx = df__k_alloc(c, 1, it, 1, x->dims);
    if (!idx) return;
    df__vset s;
    int64_t *first = (int64_t *)DF_MALLOC((size_t)DF__MAX(x->n, 1) * sizeof(int64_t));
    if (!first || !df__vset_init(&s, x, x->n)) { DF_FREE(first); DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    int64_t *pos_of = (int64_t *)DF_MALLOC((size_t)DF__MAX(x->n, 1) * sizeof(int64_t));   /* element -> its unique number */
    if (!pos_of) { DF_FREE(first); DF_FREE(s.slot); DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    int64_t nu = 0;
    for (int64_t i = 0; i < x->n; i++) {
        int64_t f = df__vset_find(&s, x, i, 1, i);
        if (f < 0) { pos_of[i] = nu; first[nu++] = i; }
        else pos_of[i] = pos_of[f];
        df__set_from_i64(it, idx->data, i, pos_of[i]);
    }
    if (it == DF_INT32 && nu > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "too many unique values for int32 out_idx"); }
    else {
        df_tensor *y = df__k_alloc(c, 0, x->dtype, 1, &nu);
        if (y) for (int64_t u = 0; u < nu; u++) memcpy((char *)y->data + (size_t)u * s.es, (const char *)x->data + (size_t)first[u] * s.es, s.es);
    }
    DF_FREE(first); DF_FREE(pos_of); DF_FREE(s.slot);
}
DF_PRIVATE df_code df__sf_list_diff(df__shape_ctx *c) {
    for (int i = 0; i < 2; i++)
        if (c->in_shapes[i].rank >= 0 && c->in_shapes[i].rank != 1)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "%s should be a 1D vector.", i ? "y" : "x");
    for (int i = 0; i < 2; i++) { df__shape *o = df__sc_out(c, i); o->rank = 1; o->dims[0] = -1; }
    return DF_OK;
}
DF_PRIVATE void df__k_list_diff(df__kctx *c) {
    const df_tensor *x = c->in[0], *y = c->in[1];
    if (x->rank != 1 || y->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s should be a 1D vector.", x->rank != 1 ? "x" : "y"); return; }
    if (!df__set_type_ok(c, x)) return;
    df__vset s;
    unsigned char *keep = (unsigned char *)DF_MALLOC((size_t)DF__MAX(x->n, 1));
    if (!keep || !df__vset_init(&s, y, y->n)) { DF_FREE(keep); DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int64_t j = 0; j < y->n; j++) df__vset_find(&s, y, j, 1, j);
    int64_t n = 0;
    for (int64_t i = 0; i < x->n; i++) { keep[i] = df__vset_find(&s, x, i, 0, 0) < 0; n += keep[i]; }
    df_dtype it = c->node->out_types[1];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 1, &n), *ix = o ? df__k_alloc(c, 1, it, 1, &n) : NULL;
    if (ix) {
        int64_t at = 0;
        for (int64_t i = 0; i < x->n; i++) {
            if (!keep[i]) continue;
            memcpy((char *)o->data + (size_t)at * s.es, (const char *)x->data + (size_t)i * s.es, s.es);
            df__set_from_i64(it, ix->data, at++, i);
        }
    }
    DF_FREE(keep); DF_FREE(s.slot);
}

/* ---- SegmentSum/Mean/Max/Min/Prod (sorted ids) ---- */
DF_PRIVATE df_code df__sf_segment(df__shape_ctx *c) {
    const df__shape *d = &c->in_shapes[0], *ix = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    *o = df__shape_unknown();
    if (ix->rank >= 0 && ix->rank != 1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "segment_ids should be a vector.");
    if (d->rank == 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shape must be at least rank 1 but is rank 0");
    if (d->rank < 0) return DF_OK;
    if (ix->rank == 1 && ix->dims[0] >= 0 && d->dims[0] >= 0 && ix->dims[0] != d->dims[0])
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "segment_ids should be the same size as dimension 0 of input.");
    *o = *d;
    o->dims[0] = -1;
    return DF_OK;
}
typedef struct { int code; df_dtype t; const void *x; void *o; const int64_t *start; int64_t inner; } df__seg_job;
/* A segment reduction's row operation (as a scatter's). */
static int df__seg_mode(int code) {
    return code == DF__SEG_MAX ? DF__SC_MAX : code == DF__SEG_MIN ? DF__SC_MIN : code == DF__SEG_PROD ? DF__SC_MUL : DF__SC_ADD;
}
#define DF__SEG_ROWS(SUF, T)                                                                        \
    do {                                                                                            \
        const T *x_ = (const T *)j->x;                                                              \
        T *o_ = (T *)j->o;                                                                          \
        int mode = df__seg_mode(j->code);                                                           \
        for (int64_t r = lo; r < hi; r++) {                                                         \
            int64_t a = j->start[r], b = j->start[r + 1];                                           \
            T *dst = o_ + r * inner;                                                                \
            if (a == b) { for (int64_t e = 0; e < inner; e++) dst[e] = (T)(j->code == DF__SEG_PROD); continue; } \
            memcpy(dst, x_ + a * inner, (size_t)inner * sizeof(T));                                 \
            for (int64_t i = a + 1; i < b; i++) df__sc_row_##SUF(mode, dst, x_ + i * inner, inner); \
            if (j->code == DF__SEG_MEAN) for (int64_t e = 0; e < inner; e++) dst[e] = (T)(dst[e] / (T)(b - a)); \
        }                                                                                           \
    } while (0)
static void df__seg_share(void *arg, int64_t lo, int64_t hi) {
    const df__seg_job *j = (const df__seg_job *)arg;
    int64_t inner = j->inner;
    if (j->t == DF_FLOAT) DF__SEG_ROWS(f32, float);
    else if (j->t == DF_DOUBLE) DF__SEG_ROWS(f64, double);
    else if (j->t == DF_INT32) DF__SEG_ROWS(i32, int32_t);
    else if (j->t == DF_INT64) DF__SEG_ROWS(i64, int64_t);
    else {                       /* the other integer types: wrapping arithmetic in 64 bits */
        for (int64_t r = lo; r < hi; r++)
            for (int64_t e = 0; e < inner; e++) {
                int64_t a = j->start[r], b = j->start[r + 1], v = j->code == DF__SEG_PROD;
                for (int64_t i = a; i < b; i++) {
                    int64_t s = df__get_i64(j->t, j->x, i * inner + e);
                    if (i == a) { v = s; continue; }
                    switch (j->code) {
                    case DF__SEG_SUM: case DF__SEG_MEAN: v = (int64_t)((uint64_t)v + (uint64_t)s); break;
                    case DF__SEG_MAX: v = s > v ? s : v; break;
                    case DF__SEG_MIN: v = s < v ? s : v; break;
                    default: v = (int64_t)((uint64_t)v * (uint64_t)s); break;
                    }
                }
                if (j->code == DF__SEG_MEAN && b > a) v /= (b - a);
                df__set_from_i64(j->t, j->o, r * inner + e, v);
            }
    }
}
#undef DF__SEG_ROWS
DF_PRIVATE void df__k_segment(df__kctx *c) {
    const df_tensor *x = c->in[0], *ix = c->in[1];
    int code = c->node->op->code;
    if (ix->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment_ids should be a vector."); return; }
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape must be at least rank 1 but is rank 0"); return; }
    if (ix->n != x->dims[0]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment_ids should be the same size as dimension 0 of input."); return; }
    if (!df__ix_is_float(x->dtype) && !df__is_integer_type(x->dtype)) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(x->dtype));
        return;
    }
    int is64 = ix->dtype == DF_INT64;
    int64_t n = ix->n, last_id = n ? df__ix_at(ix->data, is64, n - 1) : -1;
    if (last_id == INT64_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment id %lld is too large", (long long)last_id); return; }
    int64_t rows = last_id + 1;
    if (rows < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment ids must be >= 0"); return; }
    /* TensorFlow's walk and order of checks: a decrease, then the finished segment's id */
    if (n) {
        int64_t cur = df__ix_at(ix->data, is64, 0);
        for (int64_t end = 1; end <= n; end++) {
            int64_t next = cur;
            if (end < n) {
                next = df__ix_at(ix->data, is64, end);
                if (next == cur) continue;
                if (next < cur) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment ids are not increasing"); return; }
            }
            if (cur < 0 || cur >= rows) {
                DF__KFAIL(c, DF_INVALID_ARGUMENT, "Segment id %lld out of range [0, %lld), possibly because 'segment_ids' input is not sorted.",
                          (long long)cur, (long long)rows);
                return;
            }
            cur = next;
        }
    }
    int64_t dims[DF_MAX_RANK], inner = 1;
    memcpy(dims, x->dims, sizeof dims);
    dims[0] = rows;
    for (int d = 1; d < x->rank; d++) inner *= x->dims[d];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, dims);
    if (!o || !o->n) return;
    int64_t *start = (int64_t *)DF_MALLOC((size_t)(rows + 1) * sizeof(int64_t));
    if (!start) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int64_t r = 0, i = 0; r <= rows; r++) {
        while (i < n && df__ix_at(ix->data, is64, i) < r) i++;
        start[r] = i;
    }
    df__seg_job j = {code, x->dtype, x->data, o->data, start, inner};
    if (x->n < 65536) df__seg_share(&j, 0, rows);
    else df__parallel_for(c->ipool, rows, DF__MAX(1, 16384 / DF__MAX(inner, 1) / DF__MAX(n / DF__MAX(rows, 1), 1)),
                          df__ipool_threads(c->ipool), df__seg_share, &j);
    DF_FREE(start);
}

/* ---- UnsortedSegmentMax/Min/Prod (shape: src/kernels/grad_helpers.c's df__sf_segment_sum) ---- */
#define DF__USEG(SUF, T, LOWEST, HIGHEST)                                                           \
    do {                                                                                            \
        T *o_ = (T *)o->data;                                                                       \
        const T *x_ = (const T *)x->data;                                                           \
        T init = code == DF__SEG_MAX ? (LOWEST) : code == DF__SEG_MIN ? (HIGHEST) : (T)1;          \
        int mode = df__seg_mode(code);                                                              \
        for (int64_t e = 0; e < o->n; e++) o_[e] = init;                                            \
        for (int64_t i = 0; i < ix->n; i++) {                                                       \
            int64_t s = df__ix_at(ix->data, is64, i);                                               \
            if (s >= 0) df__sc_row_##SUF(mode, o_ + s * inner, x_ + i * inner, inner);              \
        }                                                                                           \
    } while (0)
DF_PRIVATE void df__k_unsorted_segment(df__kctx *c) {
    const df_tensor *x = c->in[0], *ix = c->in[1], *num = c->in[2];
    int code = c->node->op->code;
    char a[96], b[96];
    if (!df__is_int_tensor(num) || num->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_segments should be a scalar, not shape %s", df__dims_str(num->rank, num->dims, a, sizeof a)); return; }
    int64_t nseg = df__int_at(num, 0);
    if (nseg < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input num_segments == %lld must not be negative.", (long long)nseg); return; }
    int ok = ix->rank <= x->rank;
    for (int d = 0; ok && d < ix->rank; d++) ok = ix->dims[d] == x->dims[d];
    if (!ok) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "data.shape = %s does not start with segment_ids.shape = %s",
                  df__dims_str(x->rank, x->dims, a, sizeof a), df__dims_str(ix->rank, ix->dims, b, sizeof b));
        return;
    }
    int is64 = ix->dtype == DF_INT64;
    for (int64_t i = 0; i < ix->n; i++) {
        int64_t s = df__ix_at(ix->data, is64, i);
        if (s >= nseg) {
            df__ix_slice_str(ix->rank, ix->dims, i, a, sizeof a);
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment_ids%s = %lld is out of range [0, %lld)", a, (long long)s, (long long)nseg);
            return;
        }
    }
    int64_t dims[DF_MAX_RANK], inner = 1;
    int r = x->rank - ix->rank + 1;
    if (r > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "the output would have rank %d (at most %d)", r, DF_MAX_RANK); return; }
    dims[0] = nseg;
    for (int d = ix->rank; d < x->rank; d++) { dims[d - ix->rank + 1] = x->dims[d]; inner *= x->dims[d]; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, r, dims);
    if (!o || !o->n) return;
    df_dtype t = x->dtype;
    if (t == DF_FLOAT) DF__USEG(f32, float, -FLT_MAX, FLT_MAX);
    else if (t == DF_DOUBLE) DF__USEG(f64, double, -DBL_MAX, DBL_MAX);
    else if (t == DF_INT32) DF__USEG(i32, int32_t, INT32_MIN, INT32_MAX);
    else if (t == DF_INT64) DF__USEG(i64, int64_t, INT64_MIN, INT64_MAX);
    else DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t));
}
#undef DF__USEG

/* ---- ReverseV2, Roll ---- */
/* The axes of a 1-D axis tensor as a bit mask; -1 and a status when bad. */
static int64_t df__reverse_mask(df__kctx *c, const df_tensor *ax, int rank) {
    if (!df__is_int_tensor(ax) || ax->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "'axis' must be 1-D, not %s", df__dims_str(ax->rank, ax->dims, (char[96]){0}, 96)); return -1; }
    int64_t mask = 0;
    for (int64_t i = 0; i < ax->n; i++) {
        int64_t a = df__int_at(ax, i), v = a < 0 ? a + rank : a;
        if (v < 0 || v >= rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "'axis'[%lld] = %lld is out of valid range [0, %d", (long long)i, (long long)a, rank - 1); return -1; }
        if (mask & (1ll << v)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis %lld specified more than once.", (long long)v); return -1; }
        mask |= 1ll << v;
    }
    return mask;
}
/* out[idx] = x[src(idx)] by blocks of the trailing dims no axis moves: for each dim, the source
   coordinate of output coordinate i is map(d, i). mode 0: reverse (flip where mask), 1: roll by shift[d]. */
static void df__permute_copy(const df_tensor *x, df_tensor *o, int mode, int64_t mask, const int64_t *shift) {
    int rank = x->rank, last = -1;
    for (int d = 0; d < rank; d++) if (mode ? shift[d] != 0 : ((mask >> d) & 1)) last = d;
    if (last < 0 || !x->n) { if (x->nbytes) memcpy(o->data, x->data, x->nbytes); return; }
    int64_t inner = 1, outer = 1;
    for (int d = last + 1; d < rank; d++) inner *= x->dims[d];
    for (int d = 0; d < last; d++) outer *= x->dims[d];
    size_t es = df_dtype_size(x->dtype), blk = (size_t)inner * es;
    int64_t n_last = x->dims[last], idx[DF_MAX_RANK] = {0};
    const char *src = (const char *)x->data;
    char *dst = (char *)o->data;
    for (int64_t q = 0; q < outer; q++) {
        int64_t base = 0;    /* the source row of the dims before `last`, in units of dims[last] rows */
        for (int d = 0; d < last; d++) {
            int64_t s = mode ? (idx[d] - shift[d] + x->dims[d]) % x->dims[d] : ((mask >> d) & 1) ? x->dims[d] - 1 - idx[d] : idx[d];
            base = base * x->dims[d] + s;
        }
        char *drow = dst + (size_t)(q * n_last) * blk;
        const char *srow = src + (size_t)(base * n_last) * blk;
        if (mode) {          /* out[i] = in[(i - s) mod n]: two copies */
            int64_t s = shift[last];
            memcpy(drow + (size_t)s * blk, srow, (size_t)(n_last - s) * blk);
            memcpy(drow, srow + (size_t)(n_last - s) * blk, (size_t)s * blk);
        } else
            for (int64_t i = 0; i < n_last; i++) memcpy(drow + (size_t)i * blk, srow + (size_t)(n_last - 1 - i) * blk, blk);
        for (int d = last - 1; d >= 0; d--) { if (++idx[d] < x->dims[d]) break; idx[d] = 0; }
    }
}
DF_PRIVATE void df__k_reverse(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t mask = df__reverse_mask(c, c->in[1], x->rank);
    if (mask < 0) return;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, x->dims);
    if (o) df__permute_copy(x, o, 0, mask, NULL);
}
DF_PRIVATE void df__k_roll(df__kctx *c) {
    const df_tensor *x = c->in[0], *sh = c->in[1], *ax = c->in[2];
    if (!df__is_int_tensor(sh) || sh->rank > 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "shift must be a scalar or a 1-D vector. Found: %s", df__dims_str(sh->rank, sh->dims, (char[96]){0}, 96)); return; }
    if (!df__is_int_tensor(ax) || ax->rank > 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis must be a scalar or a 1-D vector. Found: %s", df__dims_str(ax->rank, ax->dims, (char[96]){0}, 96)); return; }
    if (sh->n != ax->n) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "shift and axis must have the same size"); return; }
    if (x->rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be 1-D or higher"); return; }
    int64_t shift[DF_MAX_RANK] = {0};
    for (int64_t i = 0; i < ax->n; i++) {
        int64_t a = df__int_at(ax, i), v = a < 0 ? a + x->rank : a;
        if (v < 0 || v >= x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis %lld is out of range", (long long)a); return; }
        int64_t n = x->dims[v];
        if (n > 0) shift[v] = ((shift[v] + df__int_at(sh, i) % n) % n + n) % n;
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, x->dims);
    if (o) df__permute_copy(x, o, 1, 0, shift);
}

/* ---- ShapeN ---- */
DF_PRIVATE df_code df__sf_shape_n(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) {
        df__shape *o = df__sc_out(c, i);
        o->rank = 1;
        o->dims[0] = i < c->node->n_inputs ? c->in_shapes[i].rank : -1;
    }
    return DF_OK;
}
DF_PRIVATE void df__k_shape_n(df__kctx *c) {
    for (int i = 0; i < c->n_out && i < c->n_in; i++) {
        const df_tensor *x = c->in[i];
        int64_t r = x->rank;
        df_dtype t = c->node->out_types[i];
        df_tensor *o = df__k_alloc(c, i, t, 1, &r);
        if (!o) return;
        for (int d = 0; d < x->rank; d++) {
            if (t == DF_INT32 && x->dims[d] > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape output type is 32-bit but dim %d is %lld", d, (long long)x->dims[d]); return; }
            df__set_from_i64(t, o->data, d, x->dims[d]);
        }
    }
}

/* ---- InTopKV2 ---- */
DF_PRIVATE df_code df__sf_in_top_k(df__shape_ctx *c) {
    const df__shape *p = &c->in_shapes[0], *t = &c->in_shapes[1];
    if (p->rank >= 0 && p->rank != 2) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "predictions must be 2-dimensional");
    if (t->rank >= 0 && t->rank != 1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "targets must be 1-dimensional");
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1;
    o->dims[0] = p->rank == 2 ? p->dims[0] : t->rank == 1 ? t->dims[0] : -1;
    return DF_OK;
}
DF_PRIVATE void df__k_in_top_k(df__kctx *c) {
    const df_tensor *p = c->in[0], *t = c->in[1], *kt = c->in[2];
    char a[96];
    if (p->rank != 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "predictions must be 2-dimensional"); return; }
    if (t->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "targets must be 1-dimensional"); return; }
    if (t->dims[0] != p->dims[0]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "First dimension of predictions %lld must match length of targets %lld", (long long)p->dims[0], (long long)t->dims[0]);
        return;
    }
    if (kt->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "k must be 0 D, got shape %s", df__dims_str(kt->rank, kt->dims, a, sizeof a)); return; }
    int64_t k = df__int_at(kt, 0), batch = p->dims[0], cls = p->dims[1];
    df_tensor *o = df__k_alloc(c, 0, DF_BOOL, 1, &batch);
    if (!o) return;
    const float *pr = (const float *)p->data;
    uint8_t *ov = (uint8_t *)o->data;
    for (int64_t b = 0; b < batch; b++) {
        int64_t tg = df__int_at(t, b);
        ov[b] = 0;
        if (tg < 0 || tg >= cls) continue;
        float v = pr[b * cls + tg];
        if (!isfinite(v)) continue;
        int64_t more = 0;
        for (int64_t j = 0; j < cls; j++) more += pr[b * cls + j] > v;
        ov[b] = more < k;
    }
}

/* ---- Bincount, DenseBincount ---- */
DF_PRIVATE df_code df__sf_bincount(df__shape_ctx *c) {
    int dense = c->node->op->code;
    const df_tensor *sz = df__sc_const(c, 1);
    const df__shape *in = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    int64_t size = sz && df__is_int_tensor(sz) && sz->n == 1 ? df__int_at(sz, 0) : -1;
    if (sz && size < 0 && df__is_int_tensor(sz) && sz->n == 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "size (%lld) must be non-negative", (long long)size);
    if (dense && in->rank > 2) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shape must be at most rank 2 but is rank %d", in->rank);
    if (dense && in->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (dense && in->rank == 2) { o->rank = 2; o->dims[0] = in->dims[0]; o->dims[1] = size; }
    else { o->rank = 1; o->dims[0] = size; }
    return DF_OK;
}
DF_PRIVATE void df__k_bincount(df__kctx *c) {
    int dense = c->node->op->code, binary = dense && df__attr_b(c->node, "binary_output", 0);
    const df_tensor *arr = c->in[0], *sz = c->in[1], *w = c->in[2];
    char a[96];
    if (!df__is_int_tensor(sz) || sz->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d", sz->rank); return; }
    int64_t size = df__int_at(sz, 0);
    if (size < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "size (%lld) must be non-negative", (long long)size); return; }
    if (dense && arr->rank > 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape must be at most rank 2 but is rank %d", arr->rank); return; }
    int weighted = w->n > 0;
    if (weighted) {
        int same = w->rank == arr->rank;
        for (int d = 0; same && d < arr->rank; d++) same = w->dims[d] == arr->dims[d];
        if (!dense) same = w->n == arr->n;
        if (!same) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "`weights` must be the same shape as `arr` or a length-0 `Tensor`, in which case it acts as all "
                      "weights equal to 1. Received %s", df__dims_str(w->rank, w->dims, a, sizeof a));
            return;
        }
    }
    for (int64_t i = 0; i < arr->n; i++)
        if (df__int_at(arr, i) < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input arr must be non-negative!"); return; }
    int two = dense && arr->rank == 2;
    int64_t dims[2] = {two ? arr->dims[0] : size, size}, rows = two ? arr->dims[0] : 1, per = two ? arr->dims[1] : arr->n;
    df_dtype t = w->dtype;
    df_tensor *o = df__k_alloc(c, 0, t, two ? 2 : 1, dims);
    if (!o || df__zero_data(o, c->st)) return;
    int is_f = df__ix_is_float(t);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < per; i++) {
            int64_t v = df__int_at(arr, r * per + i), at = r * size + v;
            if (v >= size) continue;
            if (binary) { if (is_f) df__set_from_f64(t, o->data, at, 1); else df__set_from_i64(t, o->data, at, 1); }
            else if (is_f) df__set_from_f64(t, o->data, at, df__get_f64(t, o->data, at) + (weighted ? df__get_f64(t, w->data, r * per + i) : 1.0));
            else df__set_from_i64(t, o->data, at, df__get_i64(t, o->data, at) + (weighted ? df__get_i64(t, w->data, r * per + i) : 1));
        }
}

/* ---- gradients (TensorFlow's array_grad.py, math_grad.py, manip_grad.py) ---- */
static df_output df__ix_shape_as(df_graph *g, df_output x, df_dtype t) {
    df_op_builder *b = df_op_new(g, "Shape", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "out_type", t);
    return df__out(df_op_finish(b), 0);
}
static df_output df__ix_gather0(df_graph *g, df_output x, df_output ids) { return df__ix_op3(g, "GatherV2", x, ids, df_scalar_i32(g, 0)); }
static df_output df__ix_gather_nd(df_graph *g, df_output x, df_output ix) { return df__op2(g, "GatherNd", x, ix); }
/* GatherNd: ScatterNd(indices, dy, shape(params)). */
DF_PRIVATE void df__g_gather_nd(df__gfn *c) {
    df_graph *g = c->g;
    df_output ix = c->n->inputs[1];
    df_output in[3] = {ix, c->dy[0], df__ix_shape_as(g, c->n->inputs[0], df_output_dtype(ix))};
    c->dx[0] = df__ix_op_pol(g, c->n, "ScatterNd", 3, in);
}
/* ScatterNd: the updates' gradient is GatherNd(dy, indices). */
DF_PRIVATE void df__g_scatter_nd(df__gfn *c) { c->dx[1] = df__ix_gather_nd(c->g, c->dy[0], c->n->inputs[0]); }
DF_PRIVATE void df__g_tensor_scatter(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = c->n->inputs[0], ix = c->n->inputs[1], y = c->n->inputs[2], d = c->dy[0];
    int code = c->n->op->code;
    if (code == DF__SC_MAX || code == DF__SC_MIN) {
        df_dtype t = df_output_dtype(d);
        df_output out = df__out(c->n, 0);
        df_output x_ind = df_cast(g, df_equal(g, x, out), t);
        df_output gin[2] = {out, ix};
        df_output y_ind = df_cast(g, df_equal(g, y, df__ix_op_pol(g, c->n, "GatherNd", 2, gin)), t);
        df_output sin[3] = {ix, y_ind, df__ix_shape_as(g, x, df_output_dtype(ix))};
        df_output ys_ind = df__ix_op_pol(g, c->n, "ScatterNd", 3, sin);
        df_output ind = df_add(g, x_ind, ys_ind);
        c->dx[0] = df_div(g, df_mul(g, d, x_ind), ind);
        gin[0] = df_div(g, d, ind);
        c->dx[2] = df_mul(g, df__ix_op_pol(g, c->n, "GatherNd", 2, gin), y_ind);
        return;
    }
    df_output ug = df__ix_gather_nd(g, d, ix);
    c->dx[2] = code == DF__SC_SUB ? df_neg(g, ug) : ug;
    c->dx[0] = code == DF__SC_UPDATE ? df__ix_op3(g, "TensorScatterUpdate", df_identity(g, d), ix, df__op1(g, "ZerosLike", y))
                                     : df_identity(g, d);
}
/* The sorted segment reductions. */
DF_PRIVATE void df__g_segment(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = c->n->inputs[0], ids = c->n->inputs[1], d = c->dy[0], out = df__out(c->n, 0);
    df_dtype t = df_output_dtype(x);
    switch (c->n->op->code) {
    case DF__SEG_SUM: c->dx[0] = df__ix_gather0(g, d, ids); return;
    case DF__SEG_MEAN: {
        df_output rank = df__op1(g, "Rank", x);
        df_output rem_shape = df__op2(g, "ExpandDims", df_sub(g, rank, df_scalar_i32(g, 1)), df_scalar_i32(g, 0));
        df_output rem = df__op2(g, "Fill", rem_shape, df_scalar_i32(g, 1));
        df_output parts[2] = {df_shape(g, ids), rem};
        df_op_builder *b = df_op_new(g, "ConcatV2", NULL);
        df_op_add_input_list(b, parts, 2);
        df_op_add_input(b, df_scalar_i32(g, 0));
        df_output ones = df__op2(g, "Fill", df__out(df_op_finish(b), 0), df__scalar_of(g, t, 1));
        df_output cnt = df__op2(g, "SegmentSum", ones, ids);
        c->dx[0] = df__ix_gather0(g, df_div(g, d, cnt), ids);
        return;
    }
    case DF__SEG_MAX: case DF__SEG_MIN: {
        df_output zeros = df__op1(g, "ZerosLike", x);
        df_output sel = df_equal(g, x, df__ix_gather0(g, out, ids));
        df_output nsel = df__op2(g, "SegmentSum", df_cast(g, sel, df_output_dtype(d)), ids);
        c->dx[0] = df_select(g, sel, df__ix_gather0(g, df_div(g, d, nsel), ids), zeros);
        return;
    }
    default: {                   /* Prod: zeros handled as TensorFlow does */
        df_output is_zero = df_equal(g, x, df__scalar_of(g, t, 0));
        df_output nz = df__op2(g, "SegmentSum", df_cast(g, is_zero, DF_INT32), ids);
        df_output dd = df_select(g, df_greater(g, nz, df_scalar_i32(g, 1)), df__op1(g, "ZerosLike", d), d);
        df_output nzd = df_select(g, is_zero, df__op1(g, "OnesLike", x), x);
        df_output nzp = df__op2(g, "SegmentProd", nzd, ids);
        df_output by_el = df_div(g, df__ix_gather0(g, out, ids), nzd);
        df_output part = df_select(g, is_zero, df__ix_gather0(g, nzp, ids), by_el);
        c->dx[0] = df_mul(g, df__ix_gather0(g, dd, ids), part);
        return;
    }
    }
}
/* UnsortedSegmentMax/Min/Prod (negative ids dropped: TensorFlow's _GatherDropNegatives). */
DF_PRIVATE void df__g_unsorted_segment(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = c->n->inputs[0], ids = c->n->inputs[1], num = c->n->inputs[2], d = c->dy[0], out = df__out(c->n, 0);
    int ri = ids.node->out_shapes[ids.index].rank, rx = x.node->out_shapes[x.index].rank;
    if (ri < 0 || rx < 0) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of %s needs known ranks {{node %s}}", c->n->op->name, c->n->name);
        return;
    }
    df_dtype t = df_output_dtype(x);
    df_output zci = df_maximum(g, ids, df__op1(g, "ZerosLike", ids));
    df_output pos = df_greater_equal(g, ids, df__scalar_of(g, df_output_dtype(ids), 0));
    for (int k = ri; k < rx; k++) pos = df__op2(g, "ExpandDims", pos, df_scalar_i32(g, -1));
    if (c->n->op->code != DF__SEG_PROD) {
        df_output gathered = df__ix_gather0(g, out, zci);
        df_output zeros = df__op1(g, "ZerosLike", gathered);
        gathered = df_select(g, pos, gathered, zeros);
        df_output sel = df_logical_and(g, df_equal(g, x, gathered), pos);
        df_output nsel = df__ix_op3(g, "UnsortedSegmentSum", df_cast(g, sel, df_output_dtype(d)), ids, num);
        df_output gg = df__ix_gather0(g, df_div(g, d, nsel), zci);
        gg = df_select(g, pos, gg, df__op1(g, "ZerosLike", gg));
        c->dx[0] = df_select(g, sel, gg, df__op1(g, "ZerosLike", gg));
        return;
    }
    df_output is_zero = df_equal(g, x, df__scalar_of(g, t, 0));
    df_output nz = df__ix_op3(g, "UnsortedSegmentSum", df_cast(g, is_zero, DF_INT32), ids, num);
    df_output dd = df_select(g, df_greater(g, nz, df_scalar_i32(g, 1)), df__op1(g, "ZerosLike", d), d);
    df_output nzd = df_select(g, is_zero, df__op1(g, "OnesLike", x), x);
    df_output nzp = df__ix_op3(g, "UnsortedSegmentProd", nzd, ids, num);
    df_output by_el = df_div(g, df__ix_gather0(g, out, zci), x);
    df_output part = df_select(g, is_zero, df__ix_gather0(g, nzp, zci), by_el);
    df_output gd = df__ix_gather0(g, dd, zci);
    gd = df_select(g, pos, gd, df__op1(g, "ZerosLike", gd));
    c->dx[0] = df_mul(g, gd, part);
}
DF_PRIVATE void df__g_reverse(df__gfn *c) { c->dx[0] = df__op2(c->g, "ReverseV2", c->dy[0], c->n->inputs[1]); }
DF_PRIVATE void df__g_roll(df__gfn *c) {
    df_graph *g = c->g;
    c->dx[0] = df__ix_op3(g, "Roll", c->dy[0], df_neg(g, c->n->inputs[1]), c->n->inputs[2]);
}
