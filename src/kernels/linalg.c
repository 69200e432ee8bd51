/* ==========================================================================================
   src/kernels/linalg.c: CPU kernels: Einsum, TopK, cumulative ops, matrices  >>linalg
   Einsum (one or two operands, ellipsis broadcasting, repeated labels as diagonals in inputs
   and as inflated diagonals in the output) as strided views handed to the GEMM: an operand
   whose free and contracted labels each collapse to one strided dimension is read in place,
   others are gathered once; batches run on the intra-op threads. TopKV2 by a bounded heap per
   row. Cumsum; MatrixBandPart and the V3 diagonal ops; EuclideanNorm; DivNoNan, Xdivy, Xlogy,
   Xlog1py; Lgamma, Digamma, Polygamma; PadV2, MirrorPad, MirrorPadGrad. Gradient functions
   (listed in src/autodiff/grad_ops.c's table) follow TensorFlow's linalg_grad.py,
   math_grad.py, nn_grad.py and array_grad.py; Cumprod's gradient lives here too.
   ========================================================================================== */

/* ---- Einsum: the equation ---- */
#define DF__EIN_LETTERS 52                 /* a-z, A-Z; ellipsis dimensions follow */
#define DF__EIN_LABELS (DF__EIN_LETTERS + DF_MAX_RANK)
typedef struct df__ein {
    int n_in, rank[2], n_out, ell_rank;
    int lab[2][DF_MAX_RANK];               /* each input axis's label */
    int out[DF_MAX_RANK];                  /* each output axis's label */
} df__ein;
static int df__ein_letter(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}
static char df__ein_char(int l) { return (char)(l < 26 ? 'a' + l : 'A' + l - 26); }
/* Scans one operand's subscripts: letters into lab (ellipsis as -1), returns the count or -1. */
static int df__ein_scan(const char *s, const char *end, int *lab, int *has_ell) {
    int n = 0;
    *has_ell = 0;
    while (s < end) {
        if (*s == ' ') { s++; continue; }
        if (*s == '.') {
            if (end - s < 3 || s[1] != '.' || s[2] != '.' || *has_ell) return -1;
            *has_ell = 1; s += 3;
            if (n >= 2 * DF_MAX_RANK) return -1;
            lab[n++] = -1;
            continue;
        }
        int l = df__ein_letter(*s++);
        if (l < 0 || n >= 2 * DF_MAX_RANK) return -1;
        lab[n++] = l;
    }
    return n;
}
static df_code df__ein_parse(const df_node *node, const char *eq, int n_in, const int *ranks, df__ein *e, df_status *st) {
    memset(e, 0, sizeof *e);
    if (!eq) return df__fail(st, node, DF_INVALID_ARGUMENT, "Einsum needs an equation");
    if (n_in < 1 || n_in > 2) return df__fail(st, node, DF_INVALID_ARGUMENT, "Expecting 1 or 2 input tensors but got: %d", n_in);
    e->n_in = n_in;
    const char *arrow = strstr(eq, "->");
    if (!arrow || strstr(arrow + 2, "->"))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Expecting exactly one '->' in einsum equation: %s", eq);
    const char *lhs_end = arrow;
    const char *p = eq;
    int raw[2][2 * DF_MAX_RANK], nraw[2], ell[2], count[DF__EIN_LETTERS] = {0};
    for (int i = 0; i < n_in; i++) {
        const char *q = p;
        while (q < lhs_end && *q != ',') q++;
        if ((i < n_in - 1) != (q < lhs_end))
            return df__fail(st, node, DF_INVALID_ARGUMENT, "Expecting %d operands in the equation \"%s\" but got a different count", n_in, eq);
        nraw[i] = df__ein_scan(p, q, raw[i], &ell[i]);
        if (nraw[i] < 0) return df__fail(st, node, DF_INVALID_ARGUMENT, "Invalid Einsum subscripts in \"%s\" (letters and one ... per operand)", eq);
        int letters = nraw[i] - ell[i];
        if (ranks[i] >= 0 && (ell[i] ? ranks[i] < letters : ranks[i] != letters))
            return df__fail(st, node, DF_INVALID_ARGUMENT, "Input %d to Einsum has rank %d but its subscripts name %d axes%s", i,
                            ranks[i], letters, ell[i] ? " (plus an ellipsis)" : "");
        e->rank[i] = ranks[i];
        int er = ell[i] ? ranks[i] - letters : 0;
        if (er > e->ell_rank) e->ell_rank = er;
        for (int j = 0; j < nraw[i]; j++) if (raw[i][j] >= 0) count[raw[i][j]]++;
        p = q + 1;
    }
    for (int i = 0; i < n_in; i++) {
        int letters = nraw[i] - ell[i], er = ell[i] ? ranks[i] - letters : 0, a = 0;
        for (int j = 0; j < nraw[i]; j++) {
            if (raw[i][j] >= 0) e->lab[i][a++] = raw[i][j];
            else for (int t = 0; t < er; t++) e->lab[i][a++] = DF__EIN_LETTERS + e->ell_rank - er + t;
        }
    }
    int ol[2 * DF_MAX_RANK], oell;
    int no = df__ein_scan(arrow + 2, arrow + strlen(arrow), ol, &oell);
    if (no < 0) return df__fail(st, node, DF_INVALID_ARGUMENT, "Invalid Einsum output subscripts in \"%s\"", eq);
    if (!oell && e->ell_rank > 0)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Output contains %d broadcasting dimension(s) but no ellipsis (...) "
                        "was found in the output subscripts.", e->ell_rank);
    for (int j = 0; j < no; j++) {
        if (ol[j] < 0) {
            if (e->n_out + e->ell_rank > DF_MAX_RANK) goto too_big;
            for (int t = 0; t < e->ell_rank; t++) e->out[e->n_out++] = DF__EIN_LETTERS + t;
            continue;
        }
        if (!count[ol[j]])
            return df__fail(st, node, DF_INVALID_ARGUMENT, "Output subscript %c of \"%s\" appears in no input", df__ein_char(ol[j]), eq);
        if (e->n_out >= DF_MAX_RANK) goto too_big;
        e->out[e->n_out++] = ol[j];
    }
    return DF_OK;
too_big:
    return df__fail(st, node, DF_INVALID_ARGUMENT, "Einsum output of \"%s\" has more than %d axes", eq, DF_MAX_RANK);
}
/* Each label's size over the operands (-1 unknown; 0 when the label is absent). Named labels
   must agree; ellipsis dimensions broadcast (1 against n). */
static df_code df__ein_dims(const df_node *node, const df__ein *e, const int64_t *const *dims, int64_t *ld, df_status *st) {
    int seen[DF__EIN_LABELS] = {0};
    for (int l = 0; l < DF__EIN_LABELS; l++) ld[l] = 0;
    for (int i = 0; i < e->n_in; i++)
        for (int a = 0; a < e->rank[i]; a++) {
            int l = e->lab[i][a];
            int64_t d = dims[i][a];
            if (!seen[l]) { seen[l] = 1; ld[l] = d; continue; }
            if (d < 0 || d == ld[l]) continue;
            if (ld[l] < 0) { if (l < DF__EIN_LETTERS || d != 1) ld[l] = d; continue; }
            if (l >= DF__EIN_LETTERS && (d == 1 || ld[l] == 1)) { if (ld[l] == 1) ld[l] = d; continue; }
            return df__fail(st, node, DF_INVALID_ARGUMENT, "Expected dimension %lld at axis %d of input %d for label %c%s, got %lld",
                            (long long)ld[l], a, i, l < DF__EIN_LETTERS ? df__ein_char(l) : '.',
                            l < DF__EIN_LETTERS ? "" : " (an ellipsis dimension; they broadcast)", (long long)d);
        }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_einsum(df__shape_ctx *c) {
    int n = c->node->n_inputs, ranks[2] = {-1, -1};
    df__shape *o = df__sc_out(c, 0);
    if (n < 1 || n > 2) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Expecting 1 or 2 input tensors but got: %d", n);
    for (int i = 0; i < n; i++) {
        ranks[i] = c->in_shapes[i].rank;
        if (ranks[i] < 0) { *o = df__shape_unknown(); return DF_OK; }
    }
    df__ein e;
    if (df__ein_parse(c->node, df__attr_s(c->node, "equation"), n, ranks, &e, c->st)) return c->st->code;
    int64_t ld[DF__EIN_LABELS];
    const int64_t *dims[2] = {c->in_shapes[0].dims, n > 1 ? c->in_shapes[1].dims : NULL};
    if (df__ein_dims(c->node, &e, dims, ld, c->st)) return c->st->code;
    o->rank = e.n_out;
    for (int a = 0; a < e.n_out; a++) o->dims[a] = ld[e.out[a]];
    return DF_OK;
}

/* ---- Einsum: strided views and the kernel ---- */
typedef struct df__ein_view {             /* an operand as distinct labels over its memory */
    int n, lab[DF_MAX_RANK];
    int64_t dim[DF_MAX_RANK], str[DF_MAX_RANK];
    const char *data;
} df__ein_view;
static int df__ein_find(const df__ein_view *v, int l) {
    for (int i = 0; i < v->n; i++) if (v->lab[i] == l) return i;
    return -1;
}
static void df__ein_drop(df__ein_view *v, int i) {
    for (int j = i; j + 1 < v->n; j++) { v->lab[j] = v->lab[j + 1]; v->dim[j] = v->dim[j + 1]; v->str[j] = v->str[j + 1]; }
    v->n--;
}
/* A repeated label is one axis whose stride is the sum of its axes' strides: the diagonal. */
static df_code df__ein_view_of(const df__kctx *c, const df_tensor *x, const int *lab, df__ein_view *v) {
    int64_t s = 1, str[DF_MAX_RANK];
    for (int a = x->rank - 1; a >= 0; a--) { str[a] = s; s *= x->dims[a]; }
    v->n = 0; v->data = (const char *)x->data;
    for (int a = 0; a < x->rank; a++) {
        int i = df__ein_find(v, lab[a]);
        if (i < 0) { i = v->n++; v->lab[i] = lab[a]; v->dim[i] = x->dims[a]; v->str[i] = 0; }
        else if (v->dim[i] != x->dims[a])
            return DF__KFAIL(c, DF_INVALID_ARGUMENT, "Einsum: repeated label %c spans axes of sizes %lld and %lld",
                             lab[a] < DF__EIN_LETTERS ? df__ein_char(lab[a]) : '.', (long long)v->dim[i], (long long)x->dims[a]);
        v->str[i] += str[a];
    }
    return DF_OK;
}
/* dst (contiguous over kd) = src summed over the s dims; strides in elements. */
#define DF__EIN_GATHER(SUF, T, A)                                                                         \
    static void df__ein_gather_##SUF(const T *src, int nk, const int64_t *kd, const int64_t *ks, int ns,   \
                                     const int64_t *sd, const int64_t *ss, T *dst) {                     \
        int64_t ki[DF_MAX_RANK] = {0}, inner = nk ? kd[nk - 1] : 1, istr = nk ? ks[nk - 1] : 0, total = 1; \
        for (int d = 0; d < nk; d++) total *= kd[d];                                                     \
        if (total == 0) return;                                                                           \
        int64_t sn = 1;                                                                                   \
        for (int d = 0; d < ns; d++) sn *= sd[d];                                                        \
        int64_t off = 0;                                                                                  \
        for (int64_t done = 0; done < total; done += inner) {                                             \
            if (!ns) for (int64_t i = 0; i < inner; i++) *dst++ = src[off + i * istr];                    \
            else for (int64_t i = 0; i < inner; i++) {                                                    \
                A acc = 0;                                                                                 \
                int64_t si[DF_MAX_RANK] = {0}, so = 0, base = off + i * istr;                             \
                for (int64_t q = 0; q < sn; q++) {                                                        \
                    acc += (A)src[base + so];                                                             \
                    for (int d = ns - 1; d >= 0; d--) {                                                   \
                        si[d]++; so += ss[d];                                                             \
                        if (si[d] < sd[d]) break;                                                         \
                        so -= ss[d] * si[d]; si[d] = 0;                                                   \
                    }                                                                                     \
                }                                                                                         \
                *dst++ = (T)acc;                                                                          \
            }                                                                                             \
            for (int d = nk - 2; d >= 0; d--) {                                                           \
                ki[d]++; off += ks[d];                                                                    \
                if (ki[d] < kd[d]) break;                                                                 \
                off -= ks[d] * ki[d]; ki[d] = 0;                                                          \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
    /* dst (strided over dd) = src, contiguous over dd */                                                 \
    static void df__ein_scatter_##SUF(const T *src, int n, const int64_t *dd, const int64_t *ds, T *dst) { \
        int64_t di[DF_MAX_RANK] = {0}, inner = n ? dd[n - 1] : 1, istr = n ? ds[n - 1] : 0, total = 1, off = 0; \
        for (int d = 0; d < n; d++) total *= dd[d];                                                      \
        for (int64_t done = 0; done < total; done += inner) {                                             \
            for (int64_t i = 0; i < inner; i++) dst[off + i * istr] = *src++;                             \
            for (int d = n - 2; d >= 0; d--) {                                                            \
                di[d]++; off += ds[d];                                                                    \
                if (di[d] < dd[d]) break;                                                                 \
                off -= ds[d] * di[d]; di[d] = 0;                                                          \
            }                                                                                             \
        }                                                                                                 \
    }
DF__EIN_GATHER(f32, float, double)
DF__EIN_GATHER(f64, double, double)
DF__EIN_GATHER(i32, int32_t, uint32_t)
DF__EIN_GATHER(i64, int64_t, uint64_t)
static void df__ein_gather(df_dtype t, const void *src, int nk, const int64_t *kd, const int64_t *ks, int ns, const int64_t *sd,
                           const int64_t *ss, void *dst) {
    if (t == DF_FLOAT) df__ein_gather_f32((const float *)src, nk, kd, ks, ns, sd, ss, (float *)dst);
    else if (t == DF_DOUBLE) df__ein_gather_f64((const double *)src, nk, kd, ks, ns, sd, ss, (double *)dst);
    else if (t == DF_INT32) df__ein_gather_i32((const int32_t *)src, nk, kd, ks, ns, sd, ss, (int32_t *)dst);
    else df__ein_gather_i64((const int64_t *)src, nk, kd, ks, ns, sd, ss, (int64_t *)dst);
}
static void df__ein_scatter(df_dtype t, const void *src, int n, const int64_t *dd, const int64_t *ds, void *dst) {
    if (t == DF_FLOAT) df__ein_scatter_f32((const float *)src, n, dd, ds, (float *)dst);
    else if (t == DF_DOUBLE) df__ein_scatter_f64((const double *)src, n, dd, ds, (double *)dst);
    else if (t == DF_INT32) df__ein_scatter_i32((const int32_t *)src, n, dd, ds, (int32_t *)dst);
    else df__ein_scatter_i64((const int64_t *)src, n, dd, ds, (int64_t *)dst);
}
/* Gathers view v into a new contiguous buffer over the labels keep (in that order), summing the
   view's other labels; v then describes the buffer. Returns the buffer (caller frees) or NULL. */
static char *df__ein_materialize(df_dtype t, df__ein_view *v, const int *keep, int nk) {
    int64_t kd[DF_MAX_RANK], ks[DF_MAX_RANK], sd[DF_MAX_RANK], ss[DF_MAX_RANK], total = 1;
    int ns = 0;
    for (int j = 0; j < nk; j++) { int i = df__ein_find(v, keep[j]); kd[j] = v->dim[i]; ks[j] = v->str[i]; total *= kd[j]; }
    for (int i = 0; i < v->n; i++) {
        int kept = 0;
        for (int j = 0; j < nk; j++) kept |= keep[j] == v->lab[i];
        if (!kept) { sd[ns] = v->dim[i]; ss[ns++] = v->str[i]; }
    }
    size_t es = df_dtype_size(t);
    char *buf = (char *)DF_MALLOC((size_t)(total ? total : 1) * es);
    if (!buf) return NULL;
    df__ein_gather(t, v->data, nk, kd, ks, ns, sd, ss, buf);
    int64_t s = 1;
    v->n = nk; v->data = buf;
    for (int j = nk - 1; j >= 0; j--) { v->lab[j] = keep[j]; v->dim[j] = kd[j]; v->str[j] = s; s *= kd[j]; }
    return buf;
}
/* Whether the labels g of v fold into one dimension (size *size, stride *str; size-1 labels
   do not matter). */
static int df__ein_group(const df__ein_view *v, const int *g, int n, int64_t *size, int64_t *str) {
    int64_t sz = 1, last_str = 0, last_dim = 1;
    int any = 0;
    for (int j = n - 1; j >= 0; j--) {
        int i = df__ein_find(v, g[j]);
        if (v->dim[i] == 1) continue;
        if (any && v->str[i] != last_str * last_dim) return 0;
        if (!any) *str = v->str[i];
        any = 1; last_str = v->str[i]; last_dim = v->dim[i]; sz *= v->dim[i];
    }
    if (!any) *str = 0;
    *size = sz;
    return 1;
}
typedef struct df__ein_job {
    int dbl, nb, itype;                   /* itype: 4 int32, 8 int64, 0 float */
    size_t es;
    int64_t bd[DF_MAX_RANK], bsa[DF_MAX_RANK], bsb[DF_MAX_RANK], bsc[DF_MAX_RANK];
    int64_t m, n, k, lda, ldb, ldc;
    int ta, tb, failed;
    const char *a, *b;
    char *c;
    struct df__ipool *pool;
    int threads;                          /* 1: each product on one thread (the batches are split) */
} df__ein_job;
/* Integer products (TensorFlow registers int32 and int64 Einsum): plain loops, wrapping. */
#define DF__EIN_INT_GEMM(SUF, T, U)                                                                     \
    static void df__ein_gemm_##SUF(const df__ein_job *j, const T *a, const T *b, T *c) {                 \
        for (int64_t i = 0; i < j->m; i++)                                                                \
            for (int64_t q = 0; q < j->n; q++) {                                                          \
                U acc = 0;                                                                                \
                for (int64_t p = 0; p < j->k; p++)                                                        \
                    acc += (U)a[j->ta ? p * j->lda + i : i * j->lda + p] * (U)b[j->tb ? q * j->ldb + p : p * j->ldb + q]; \
                c[i * j->ldc + q] = (T)acc;                                                               \
            }                                                                                             \
    }
DF__EIN_INT_GEMM(i32, int32_t, uint32_t)
DF__EIN_INT_GEMM(i64, int64_t, uint64_t)
static void df__ein_batches(void *arg, int64_t lo, int64_t hi) {
    df__ein_job *j = (df__ein_job *)arg;
    size_t es = j->es;
    for (int64_t bi = lo; bi < hi; bi++) {
        int64_t r = bi, oa = 0, ob = 0, oc = 0;
        for (int d = j->nb - 1; d >= 0; d--) {
            int64_t q = r % j->bd[d];
            r /= j->bd[d];
            oa += q * j->bsa[d]; ob += q * j->bsb[d]; oc += q * j->bsc[d];
        }
        if (j->itype == 4) df__ein_gemm_i32(j, (const int32_t *)(j->a + (size_t)oa * es), (const int32_t *)(j->b + (size_t)ob * es), (int32_t *)(j->c + (size_t)oc * es));
        else if (j->itype == 8) df__ein_gemm_i64(j, (const int64_t *)(j->a + (size_t)oa * es), (const int64_t *)(j->b + (size_t)ob * es), (int64_t *)(j->c + (size_t)oc * es));
        else if (!df__gemm_fp(j->dbl, j->m, j->n, j->k, j->a + (size_t)oa * es, j->lda, j->ta, j->b + (size_t)ob * es, j->ldb,
                              j->tb, j->c + (size_t)oc * es, j->ldc, j->threads == 1 ? NULL : j->pool, j->threads == 1 ? 1 : 0))
            __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    }
}
/* A matrix operand: rows labels r, columns labels k; *t set when stored column-major. */
static int df__ein_matrix(const df__ein_view *v, const int *r, int nr, const int *k, int nk, int *t, int64_t *ld) {
    int64_t rs, rstr, ks, kstr;
    if (!df__ein_group(v, r, nr, &rs, &rstr) || !df__ein_group(v, k, nk, &ks, &kstr)) return 0;
    if (ks <= 1 || kstr == 1) { *t = 0; *ld = rs <= 1 ? (ks > 0 ? ks : 1) : rstr; return 1; }
    if (rs <= 1 || rstr == 1) { *t = 1; *ld = kstr; return 1; }
    return 0;
}
DF_PRIVATE void df__k_einsum(df__kctx *c) {
    int n_in = c->n_in, ranks[2] = {c->in[0]->rank, n_in > 1 ? c->in[1]->rank : 0};
    df_dtype t = c->in[0]->dtype;
    df__ein e;
    if (df__ein_parse(c->node, df__attr_s(c->node, "equation"), n_in, ranks, &e, c->st)) return;
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_INT32 && t != DF_INT64) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "Einsum has no kernel for %s", df_dtype_name(t));
        return;
    }
    if (n_in > 1 && c->in[1]->dtype != t) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Einsum operands of %s and %s", df_dtype_name(t), df_dtype_name(c->in[1]->dtype)); return; }
    int64_t ld[DF__EIN_LABELS];
    const int64_t *dims[2] = {c->in[0]->dims, n_in > 1 ? c->in[1]->dims : NULL};
    if (df__ein_dims(c->node, &e, dims, ld, c->st)) return;
    int64_t od[DF_MAX_RANK];
    for (int a = 0; a < e.n_out; a++) od[a] = ld[e.out[a]];
    df_tensor *o = df__k_alloc(c, 0, t, e.n_out, od);
    if (!o) return;
    if (!o->n) return;
    size_t es = df_dtype_size(t);
    /* the output's distinct labels (first occurrence), and their strides in the output */
    df__ein_view ov = {0};
    {
        int64_t s = 1, str[DF_MAX_RANK];
        for (int a = e.n_out - 1; a >= 0; a--) { str[a] = s; s *= od[a]; }
        for (int a = 0; a < e.n_out; a++) {
            int i = df__ein_find(&ov, e.out[a]);
            if (i < 0) { i = ov.n++; ov.lab[i] = e.out[a]; ov.dim[i] = od[a]; ov.str[i] = 0; }
            ov.str[i] += str[a];
        }
    }
    int inflate = ov.n < e.n_out;             /* repeated output labels: write a diagonal, zeros elsewhere */
    char *tmp[4] = {NULL, NULL, NULL, NULL}, *res = (char *)o->data;
    int64_t u_total = 1;
    for (int i = 0; i < ov.n; i++) u_total *= ov.dim[i];
    df__ein_view rv = ov;                      /* where the distinct-label result goes */
    if (inflate) {
        if (!(tmp[0] = res = (char *)DF_MALLOC((size_t)u_total * es))) goto oom;
        int64_t s = 1;
        for (int i = ov.n - 1; i >= 0; i--) { rv.str[i] = s; s *= ov.dim[i]; }
    }
    df__ein_view v[2];
    for (int i = 0; i < n_in; i++) if (df__ein_view_of(c, c->in[i], e.lab[i], &v[i])) goto done;
    if (n_in == 1) {
        df__ein_view w = v[0];
        if (!(tmp[1] = df__ein_materialize(t, &w, ov.lab, ov.n))) goto oom;
        memcpy(res, tmp[1], (size_t)u_total * es);
    } else {
        /* broadcast ellipsis dimensions: the size-1 side reads index 0 only */
        for (int i = 0; i < v[0].n; i++) {
            int j = df__ein_find(&v[1], v[0].lab[i]);
            if (j < 0 || v[0].dim[i] == v[1].dim[j]) continue;
            if (v[0].dim[i] == 1) { df__ein_drop(&v[0], i); i--; }
            else df__ein_drop(&v[1], j);
        }
        /* labels of one operand only, not in the output: summed out first */
        for (int s = 0; s < 2; s++) {
            int keep[DF_MAX_RANK], nk = 0;
            for (int i = 0; i < v[s].n; i++)
                if (df__ein_find(&v[1 - s], v[s].lab[i]) >= 0 || df__ein_find(&ov, v[s].lab[i]) >= 0) keep[nk++] = v[s].lab[i];
            if (nk < v[s].n && !(tmp[1 + s] = df__ein_materialize(t, &v[s], keep, nk))) goto oom;
        }
        int bl[DF_MAX_RANK], ml[DF_MAX_RANK], nl[DF_MAX_RANK], kl[DF_MAX_RANK], nb = 0, nm = 0, nn = 0, nkl = 0;
        for (int i = 0; i < ov.n; i++) {
            int l = ov.lab[i], ia = df__ein_find(&v[0], l), ib = df__ein_find(&v[1], l);
            if (ia >= 0 && ib >= 0) bl[nb++] = l;
            else if (ia >= 0) ml[nm++] = l;
            else nl[nn++] = l;
        }
        for (int i = 0; i < v[0].n; i++)
            if (df__ein_find(&ov, v[0].lab[i]) < 0) kl[nkl++] = v[0].lab[i];
        int64_t M = 1, N = 1, K = 1, nbatch = 1;
        for (int j = 0; j < nm; j++) M *= ld[ml[j]];
        for (int j = 0; j < nn; j++) N *= ld[nl[j]];
        for (int j = 0; j < nkl; j++) K *= ld[kl[j]];
        for (int j = 0; j < nb; j++) nbatch *= ld[bl[j]];
        df__ein_job j;
        memset(&j, 0, sizeof j);
        j.dbl = t == DF_DOUBLE;
        j.es = es;
        j.itype = t == DF_INT32 ? 4 : t == DF_INT64 ? 8 : 0;
        if (!df__ein_matrix(&v[0], ml, nm, kl, nkl, &j.ta, &j.lda)) {
            int ord[DF_MAX_RANK], no = 0;
            for (int q = 0; q < nb; q++) ord[no++] = bl[q];
            for (int q = 0; q < nm; q++) ord[no++] = ml[q];
            for (int q = 0; q < nkl; q++) ord[no++] = kl[q];
            char *old = tmp[1];                /* v[0] may read it: freed once gathered */
            tmp[1] = df__ein_materialize(t, &v[0], ord, no);
            DF_FREE(old);
            if (!tmp[1]) goto oom;
            df__ein_matrix(&v[0], ml, nm, kl, nkl, &j.ta, &j.lda);
        }
        if (!df__ein_matrix(&v[1], kl, nkl, nl, nn, &j.tb, &j.ldb)) {
            int ord[DF_MAX_RANK], no = 0;
            for (int q = 0; q < nb; q++) ord[no++] = bl[q];
            for (int q = 0; q < nkl; q++) ord[no++] = kl[q];
            for (int q = 0; q < nn; q++) ord[no++] = nl[q];
            char *old = tmp[2];                /* v[1] may read it: freed once gathered */
            tmp[2] = df__ein_materialize(t, &v[1], ord, no);
            DF_FREE(old);
            if (!tmp[2]) goto oom;
            df__ein_matrix(&v[1], kl, nkl, nl, nn, &j.tb, &j.ldb);
        }
        /* gemm's B is [K, N] row-major when tb is 0: df__ein_matrix gave [K rows, N cols] */
        df__ein_view cv = rv;
        char *cbase = res;
        int tc = 0;
        int64_t ldc = 0;
        if (!df__ein_matrix(&cv, ml, nm, nl, nn, &tc, &ldc)) {   /* a scratch [batch, M, N], copied after */
            if (!(tmp[3] = cbase = (char *)DF_MALLOC((size_t)(u_total ? u_total : 1) * es))) goto oom;
            int64_t s = 1;
            int ord[DF_MAX_RANK], no = 0;
            for (int q = 0; q < nb; q++) ord[no++] = bl[q];
            for (int q = 0; q < nm; q++) ord[no++] = ml[q];
            for (int q = 0; q < nn; q++) ord[no++] = nl[q];
            for (int q = no - 1; q >= 0; q--) { int i = df__ein_find(&rv, ord[q]); cv.lab[q] = ord[q]; cv.dim[q] = rv.dim[i]; cv.str[q] = s; s *= rv.dim[i]; }
            df__ein_matrix(&cv, ml, nm, nl, nn, &tc, &ldc);
        }
        j.nb = nb;
        for (int q = 0; q < nb; q++) {
            j.bd[q] = ld[bl[q]];
            j.bsa[q] = v[0].str[df__ein_find(&v[0], bl[q])];
            j.bsb[q] = v[1].str[df__ein_find(&v[1], bl[q])];
            j.bsc[q] = cv.str[df__ein_find(&cv, bl[q])];
        }
        if (!tc) {
            j.m = M; j.n = N; j.k = K; j.a = v[0].data; j.b = v[1].data; j.ldc = ldc;
        } else {                               /* C^T = B^T A^T: C's rows are contiguous by M */
            for (int q = 0; q < nb; q++) { int64_t s = j.bsa[q]; j.bsa[q] = j.bsb[q]; j.bsb[q] = s; }
            int ta = j.ta, tb = j.tb;
            int64_t lda = j.lda, ldb = j.ldb;
            j.m = N; j.n = M; j.k = K; j.a = v[1].data; j.b = v[0].data;
            j.ta = !tb; j.lda = ldb; j.tb = !ta; j.ldb = lda; j.ldc = ldc;
        }
        j.c = cbase;
        j.pool = c->ipool;
        double macs = (double)M * (double)N * (double)K;
        int threads = df__ipool_threads(c->ipool);
        if (nbatch > 1 && threads > 1 && macs < 4.0e6) {
            j.threads = 1;
            df__parallel_for(c->ipool, nbatch, 1, threads, df__ein_batches, &j);
        } else df__ein_batches(&j, 0, nbatch);
        if (j.failed) goto oom;
        if (tmp[3]) {                          /* scratch [batch, M, N] to the result's order */
            int64_t dd[DF_MAX_RANK], ds[DF_MAX_RANK];
            for (int q = 0; q < cv.n; q++) { int i = df__ein_find(&rv, cv.lab[q]); dd[q] = rv.dim[i]; ds[q] = rv.str[i]; }
            df__ein_scatter(t, tmp[3], cv.n, dd, ds, res);
        }
    }
    if (inflate) {
        memset(o->data, 0, (size_t)o->n * es);
        df__ein_scatter(t, res, ov.n, ov.dim, ov.str, o->data);
    }
    goto done;
oom:
    DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in Einsum");
done:
    for (int i = 0; i < 4; i++) DF_FREE(tmp[i]);
}

/* ---- Einsum's gradient (TensorFlow's linalg_grad.py _EinsumGrad) ---- */
#define DF__X_IN(n, i) ((n)->inputs[i])
static df_output df__la_einsum(df_graph *g, const df_output *ins, int n, const char *eq) {
    df_op_builder *b = df_op_new(g, "Einsum", NULL);
    df_op_add_input_list(b, ins, n);
    df_op_set_attr_string(b, "equation", eq);
    return df__out(df_op_finish(b), 0);
}
static df_output df__la_i32_vec(df_graph *g, const int64_t *v, int n) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_INT32, 1, &d, NULL);
    if (!t) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return df__out(NULL, 0); }
    for (int i = 0; i < n; i++) ((int32_t *)t->data)[i] = (int32_t)v[i];
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output df__la_expand(df_graph *g, df_output x, int64_t axis) {
    return df__op2(g, "ExpandDims", x, df_scalar_i32(g, (int32_t)axis));
}
static int df__la_in(const char *s, char ch) { return ch && strchr(s, ch) != NULL; }
/* The axis of label ch in subs (leftmost; counted from the end after an ellipsis), made
   non-negative for a rank-`rank` operand. */
static int df__la_axis(const char *subs, char ch, int rank) {
    const char *ell = strstr(subs, "...");
    const char *p = strchr(subs, ch);
    if (!ell || p < ell) return (int)(p - subs);
    return rank - (int)strlen(p);
}
/* TF's _GetGradReduced: the gradient of the unary einsum in_subs -> out_subs whose labels
   `reduced` (in_subs's labels missing from out_subs) are summed. */
static df_output df__la_grad_reduced(df_graph *g, const df_node *n, df_output grad, const char *out_subs, const char *in_subs,
                                     df_output x, const char *reduced) {
    int rank = x.node->out_shapes[x.index].rank;
    if (rank < 0) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Einsum gradient needs the input's rank {{node %s}}", n->name);
        return df__out(NULL, 0);
    }
    int nr = (int)strlen(reduced);
    int64_t axes[DF_MAX_RANK * 2];
    for (int i = 0; i < nr; i++) axes[i] = df__la_axis(in_subs, reduced[i], rank);
    char without[64] = {0};
    int nw = 0, repeated = 0;
    for (const char *p = in_subs; *p; p++) if (!df__la_in(reduced, *p)) without[nw++] = *p;
    for (const char *p = in_subs; *p; p++) if (strchr(p + 1, *p)) repeated = 1;
    for (const char *p = out_subs; *p; p++) if (strchr(p + 1, *p)) repeated = 1;
    df_output shape_x = df_shape(g, x);
    if (!repeated && !strcmp(without, out_subs)) {
        int64_t sorted[DF_MAX_RANK * 2];
        memcpy(sorted, axes, sizeof(int64_t) * (size_t)nr);
        for (int i = 1; i < nr; i++)
            for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) { int64_t s = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = s; }
        df_output r = grad;
        for (int i = 0; i < nr; i++) r = df__la_expand(g, r, sorted[i]);
        return df__op2(g, "BroadcastTo", r, shape_x);
    }
    df_output r = grad;
    for (int i = 0; i < nr; i++) r = df__la_expand(g, r, 0);
    df_op_builder *b = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(b, shape_x);
    df_op_add_input(b, df__la_i32_vec(g, axes, nr));
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_output parts[2] = {df__out(df_op_finish(b), 0), df_shape(g, grad)};
    b = df_op_new(g, "ConcatV2", NULL);
    df_op_add_input_list(b, parts, 2);
    df_op_add_input(b, df_scalar_i32(g, 0));
    r = df__op2(g, "BroadcastTo", r, df__out(df_op_finish(b), 0));
    char eq[160];
    snprintf(eq, sizeof eq, "%s%s->%s", reduced, out_subs, in_subs);
    return df__la_einsum(g, &r, 1, eq);
}
/* TF's _GetGradWrt: the gradient of one operand of a binary einsum, before unbroadcasting. */
static df_output df__la_grad_wrt(df_graph *g, const df_node *n, df_output grad, df_output other, df_output x,
                                 const char *in_subs, const char *other_subs, const char *out_subs) {
    char reduced[64] = {0}, left[64] = {0}, eq[200];
    int nr = 0, nl = 0;
    for (const char *p = in_subs; *p; p++) {
        if (*p != '.' && !df__la_in(out_subs, *p) && !df__la_in(other_subs, *p)) {
            if (!df__la_in(reduced, *p)) reduced[nr++] = *p;
        } else left[nl++] = *p;
    }
    snprintf(eq, sizeof eq, "%s,%s->%s", out_subs, other_subs, left);
    df_output ins[2] = {grad, other};
    df_output r = df__la_einsum(g, ins, 2, eq);
    if (!nr) return r;
    return df__la_grad_reduced(g, n, r, left, in_subs, x, reduced);
}
/* Sums the broadcast ellipsis dimensions of gx back to x's shape (static shapes). */
static df_output df__la_unbroadcast(df_graph *g, const df_node *n, df_output gx, df_output x, const char *xs, df_output y,
                                    const char *ys) {
    df__shape sx = x.node->out_shapes[x.index], sy = y.node->out_shapes[y.index];
    int bx = (int)(strstr(xs, "...") - xs), by = (int)(strstr(ys, "...") - ys);
    int ex = sx.rank - ((int)strlen(xs) - 3), ey = sy.rank - ((int)strlen(ys) - 3);
    int known = sx.rank >= 0 && sy.rank >= 0;
    for (int i = 0; known && i < sx.rank; i++) known = sx.dims[i] >= 0;
    for (int i = 0; known && i < sy.rank; i++) known = sy.dims[i] >= 0;
    if (!known) {                            /* TF's dynamic path: BroadcastGradientArgs of the batch shapes */
        if (sx.rank < 0 || sy.rank < 0) {
            df__graph_error(g, DF_UNIMPLEMENTED, "Einsum gradient with ellipsis broadcasting needs the operands' ranks {{node %s}}", n->name);
            return df__out(NULL, 0);
        }
        df_output shape_x = df_shape(g, x), bs[2];
        for (int i = 0; i < 2; i++) {
            int64_t begin = i ? by : bx, size = i ? ey : ex;
            df_op_builder *b = df_op_new(g, "Slice", NULL);
            df_op_add_input(b, i ? df_shape(g, y) : shape_x);
            df_op_add_input(b, df__la_i32_vec(g, &begin, 1));
            df_op_add_input(b, df__la_i32_vec(g, &size, 1));
            bs[i] = df__out(df_op_finish(b), 0);
        }
        df_op_builder *b = df_op_new(g, "BroadcastGradientArgs", NULL);
        df_op_add_input(b, bs[0]);
        df_op_add_input(b, bs[1]);
        df_output rx = df__out(df_op_finish(b), 0);
        df_output axes = df_add(g, rx, df_scalar_i32(g, bx));
        b = df_op_new(g, "Sum", NULL);
        df_op_add_input(b, gx);
        df_op_add_input(b, axes);
        return df__op2(g, "Reshape", df__out(df_op_finish(b), 0), shape_x);
    }
    int same = ex == ey;
    for (int i = 0; same && i < ex; i++) same = sx.dims[bx + i] == sy.dims[by + i];
    if (same) return gx;
    int R = ex > ey ? ex : ey;
    int32_t axes[DF_MAX_RANK];
    int na = 0;
    for (int j = 0; j < R; j++) {
        int jx = j - (R - ex), jy = j - (R - ey);
        int64_t dx = jx >= 0 ? sx.dims[bx + jx] : 1, dy = jy >= 0 ? sy.dims[by + jy] : 1;
        if (jx < 0 || (dx == 1 && dy != 1)) axes[na++] = bx + j;
    }
    df_output r = na ? df_reduce_sum(g, gx, na, axes, 0) : gx;
    return df__op2(g, "Reshape", r, df_shape(g, x));
}
DF_PRIVATE void df__g_einsum(df__gfn *c) {
    df_graph *g = c->g;
    const df_node *n = c->n;
    const char *eq = df__attr_s(n, "equation");
    if (!eq || !c->dy[0].node) return;
    char subs[3][64] = {{0}}, out[64] = {0};
    int ns = 0, len = 0;
    const char *arrow = strstr(eq, "->");
    for (const char *p = eq; *p && p != arrow; p++) {
        if (*p == ' ') continue;
        if (*p == ',') { if (++ns > 2) break; len = 0; continue; }
        if (len >= 60) { df__graph_error(g, DF_INVALID_ARGUMENT, "Einsum equation too long {{node %s}}", n->name); return; }
        subs[ns][len++] = *p;
    }
    ns++;
    if (ns != n->n_inputs || ns > 2) return;    /* the forward op reports this */
    if (!arrow) return;                         /* the forward op reports this */
    len = 0;
    for (const char *p = arrow + 2; *p && len < 60; p++) if (*p != ' ') out[len++] = *p;
    df_output grad = c->dy[0];
    if (ns == 1) {
        char reduced[64] = {0};
        int nr = 0;
        for (const char *p = subs[0]; *p; p++)
            if (*p != '.' && !df__la_in(out, *p) && !df__la_in(reduced, *p)) reduced[nr++] = *p;
        if (!nr) {
            char e2[160];
            snprintf(e2, sizeof e2, "%s->%s", out, subs[0]);
            c->dx[0] = df__la_einsum(g, &grad, 1, e2);
        } else c->dx[0] = df__la_grad_reduced(g, n, grad, out, subs[0], DF__X_IN(n, 0), reduced);
        return;
    }
    int out_ell = strstr(out, "...") != NULL;
    if (out_ell) {
        for (int i = 0; i < 2; i++) if (!strstr(subs[i], "...")) strcat(subs[i], "...");
    }
    df_output x = DF__X_IN(n, 0), y = DF__X_IN(n, 1);
    df_output gx = df__la_grad_wrt(g, n, grad, y, x, subs[0], subs[1], out);
    df_output gy = df__la_grad_wrt(g, n, grad, x, y, subs[1], subs[0], out);
    if (out_ell) {
        gx = df__la_unbroadcast(g, n, gx, x, subs[0], y, subs[1]);
        gy = df__la_unbroadcast(g, n, gy, y, subs[1], x, subs[0]);
    }
    c->dx[0] = gx;
    c->dx[1] = gy;
}

/* ---- TopKV2: a bounded heap per row (the k best seen so far, worst at the root); for larger
   k, a radix select finds the k-th largest key in a few branch-free counting passes, keeps the
   k best (ties: the lower index) and orders them by a stable radix sort ---- */
/* a before b: larger value, or equal value and lower index (TensorFlow's order) */
#define DF__TOPK_FN(SUF, T, U, KEY)                                                                      \
    /* xi: the elements' indices (NULL: 0..n-1), increasing */                                          \
    static void df__topk_heap_##SUF(const T *x, const int32_t *xi, int64_t n, int64_t k, T *hv, int32_t *hi) { \
        int64_t h = 0;                                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            T v = x[i];                                                                                   \
            int32_t vi = xi ? xi[i] : (int32_t)i;                                                         \
            if (h < k) {                                                                                  \
                int64_t p = h++;                                                                          \
                while (p > 0) {                                                                           \
                    int64_t q = (p - 1) / 2;                                                              \
                    if (!(v < hv[q] || (v == hv[q] && vi > hi[q]))) break;                                \
                    hv[p] = hv[q]; hi[p] = hi[q]; p = q;                                                  \
                }                                                                                         \
                hv[p] = v; hi[p] = vi;                                                                    \
                continue;                                                                                 \
            }                                                                                             \
            if (!(v > hv[0])) continue;            /* vi is later than all kept: ties lose */           \
            int64_t p = 0;                                                                                \
            for (;;) {                                                                                    \
                int64_t l = 2 * p + 1, r = l + 1, w = p;                                                  \
                T wv = v; int32_t wi = vi;                                                                \
                if (l < h && (hv[l] < wv || (hv[l] == wv && hi[l] > wi))) { w = l; wv = hv[l]; wi = hi[l]; } \
                if (r < h && (hv[r] < wv || (hv[r] == wv && hi[r] > wi))) { w = r; }                      \
                if (w == p) break;                                                                        \
                hv[p] = hv[w]; hi[p] = hi[w]; p = w;                                                      \
            }                                                                                             \
            hv[p] = v; hi[p] = vi;                                                                        \
        }                                                                                                 \
        /* heap sort in place: pop the worst to the end */                                                \
        for (int64_t e = h - 1; e > 0; e--) {                                                             \
            T v = hv[e]; int32_t vi = hi[e];                                                              \
            hv[e] = hv[0]; hi[e] = hi[0];                                                                 \
            int64_t p = 0;                                                                                \
            for (;;) {                                                                                    \
                int64_t l = 2 * p + 1, r = l + 1, w = p;                                                  \
                T wv = v; int32_t wi = vi;                                                                \
                if (l < e && (hv[l] < wv || (hv[l] == wv && hi[l] > wi))) { w = l; wv = hv[l]; wi = hi[l]; } \
                if (r < e && (hv[r] < wv || (hv[r] == wv && hi[r] > wi))) { w = r; }                      \
                if (w == p) break;                                                                        \
                hv[p] = hv[w]; hi[p] = hi[w]; p = w;                                                      \
            }                                                                                             \
            hv[p] = v; hi[p] = vi;                                                                        \
        }                                                                                                 \
    }                                                                                                     \
    /* keys ordered as the values (-0 as +0), 8 bits a pass from the top */                              \
    /* returns 0, having written nothing, for a row with NaNs (their keys do not order as values) */     \
    static int df__topk_select_##SUF(const T *x, int64_t n, int64_t k, U *key, T *tv, int32_t *ti, int32_t *pa, int32_t *pb, \
                                     T *hv, int32_t *hi) {                                                    \
        int nan = 0;                                                                                      \
        for (int64_t i = 0; i < n; i++) { key[i] = KEY(x[i]); nan |= x[i] != x[i]; }                     \
        if (nan) return 0;                                                                                \
        U prefix = 0, mask = 0;                                                                           \
        int64_t need = k, nc = n;                                                                         \
        for (int shift = (int)(8 * sizeof(U)) - 8; shift >= 0; shift -= 8) {                              \
            int64_t cnt[256] = {0};                                                                       \
            if (nc == n) {                         /* four counters a digit: no chain through one */     \
                int32_t c4[4][256] = {{0}};                                                               \
                int64_t i = 0;                                                                            \
                for (; i + 4 <= n; i += 4) {                                                              \
                    c4[0][(key[i] >> shift) & 255]++; c4[1][(key[i + 1] >> shift) & 255]++;               \
                    c4[2][(key[i + 2] >> shift) & 255]++; c4[3][(key[i + 3] >> shift) & 255]++;           \
                }                                                                                         \
                for (; i < n; i++) c4[0][(key[i] >> shift) & 255]++;                                      \
                for (int b = 0; b < 256; b++) cnt[b] = (int64_t)c4[0][b] + c4[1][b] + c4[2][b] + c4[3][b]; \
            }                                                                                             \
            else for (int64_t c = 0; c < nc; c++) cnt[(key[pa[c]] >> shift) & 255]++;                    \
            for (int b = 255; b >= 0; b--) {                                                              \
                if (cnt[b] >= need) { prefix |= (U)b << shift; mask |= (U)255 << shift; break; }          \
                need -= cnt[b];                                                                           \
            }                                                                                             \
            /* the candidates left: the elements under the prefix (branch-free compaction) */            \
            int64_t m2 = 0;                                                                               \
            if (nc == n) for (int64_t i = 0; i < n; i++) { pa[m2] = (int32_t)i; m2 += (key[i] & mask) == prefix; } \
            else for (int64_t c = 0; c < nc; c++) { pa[m2] = pa[c]; m2 += (key[pa[c]] & mask) == prefix; } \
            nc = m2;                                                                                      \
        }                                                                                                 \
        int64_t m = 0;              /* prefix: the k-th largest key; take `need` of its equals, first ones */ \
        for (int64_t i = 0; i < n; i++) {          /* branch-free: written always, kept when taken */   \
            U kk = key[i];                                                                                \
            int eq = kk == prefix, take = (kk > prefix) | (eq & (need > 0));                              \
            need -= eq & take;                                                                            \
            key[m] = kk; tv[m] = x[i]; ti[m] = (int32_t)i;                                                \
            m += take;                                                                                    \
        }                                                                                                 \
        /* the k kept, in index order: a stable LSD radix sort by key, descending */                     \
        for (int64_t i = 0; i < m; i++) pa[i] = (int32_t)i;                                               \
        for (int shift = 0; shift < (int)(8 * sizeof(U)); shift += 8) {                                  \
            int64_t cnt[256] = {0}, pos = 0;                                                              \
            for (int64_t i = 0; i < m; i++) cnt[255 - ((key[i] >> shift) & 255)]++;                       \
            if (cnt[255 - ((key[0] >> shift) & 255)] == m) continue;    /* one digit: nothing moves */  \
            for (int b = 0; b < 256; b++) { int64_t c = cnt[b]; cnt[b] = pos; pos += c; }                 \
            for (int64_t i = 0; i < m; i++) pb[cnt[255 - ((key[pa[i]] >> shift) & 255)]++] = pa[i];       \
            int32_t *sw = pa; pa = pb; pb = sw;                                                           \
        }                                                                                                 \
        for (int64_t i = 0; i < m; i++) { hv[i] = tv[pa[i]]; hi[i] = ti[pa[i]]; }                         \
        return 1;                                                                                         \
    }
static uint32_t df__key_f32(float v) {
    uint32_t u;
    if (v == 0) v = 0;
    memcpy(&u, &v, 4);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}
static uint64_t df__key_f64(double v) {
    uint64_t u;
    if (v == 0) v = 0;
    memcpy(&u, &v, 8);
    return (u >> 63) ? ~u : u | (1ull << 63);
}
#define DF__KEY_I32(v) ((uint32_t)(v) ^ 0x80000000u)
#define DF__KEY_I64(v) ((uint64_t)(v) ^ (1ull << 63))
DF__TOPK_FN(f32, float, uint32_t, df__key_f32)
DF__TOPK_FN(f64, double, uint64_t, df__key_f64)
DF__TOPK_FN(i32, int32_t, uint32_t, DF__KEY_I32)
DF__TOPK_FN(i64, int64_t, uint64_t, DF__KEY_I64)
typedef struct df__topk_job {
    df_dtype t;
    const char *x;
    char *v;
    void *idx;
    df_dtype it;
    int64_t n, k;
    int failed;
} df__topk_job;
/* The heap alone while few elements displace the kept ones (k small beside n). */
static int df__topk_use_select(const df__topk_job *j) { return j->k > 16 && j->k * 64 > j->n; }
static void df__topk_rows(void *arg, int64_t lo, int64_t hi) {
    df__topk_job *j = (df__topk_job *)arg;
    size_t es = df_dtype_size(j->t);
    int sel = df__topk_use_select(j);
    size_t scratch = (size_t)(j->k ? j->k : 1) * sizeof(int32_t);
    if (sel) scratch += (size_t)j->n * (8 + es + 3 * sizeof(int32_t));
    char *buf = (char *)DF_MALLOC(scratch);
    if (!buf) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); return; }
    int32_t *ib = (int32_t *)buf;
    char *key = buf + (size_t)(j->k ? j->k : 1) * sizeof(int32_t);
    char *tv = key + (size_t)j->n * 8;
    int32_t *ti = (int32_t *)(tv + (size_t)j->n * es), *pa = ti + j->n, *pb = pa + j->n;
    for (int64_t r = lo; r < hi; r++) {
        const char *x = j->x + (size_t)(r * j->n) * es;
        char *v = j->v + (size_t)(r * j->k) * es;
        int32_t *ix = j->it == DF_INT32 ? (int32_t *)j->idx + r * j->k : ib;
        switch (j->t) {       /* rows with NaNs take the heap, whose comparisons are TensorFlow's */
        case DF_FLOAT:
            if (!sel || !df__topk_select_f32((const float *)x, j->n, j->k, (uint32_t *)key, (float *)tv, ti, pa, pb, (float *)v, ix))
                df__topk_heap_f32((const float *)x, NULL, j->n, j->k, (float *)v, ix);
            break;
        case DF_DOUBLE:
            if (!sel || !df__topk_select_f64((const double *)x, j->n, j->k, (uint64_t *)key, (double *)tv, ti, pa, pb, (double *)v, ix))
                df__topk_heap_f64((const double *)x, NULL, j->n, j->k, (double *)v, ix);
            break;
        case DF_INT32:
            if (!sel || !df__topk_select_i32((const int32_t *)x, j->n, j->k, (uint32_t *)key, (int32_t *)tv, ti, pa, pb, (int32_t *)v, ix))
                df__topk_heap_i32((const int32_t *)x, NULL, j->n, j->k, (int32_t *)v, ix);
            break;
        default:
            if (!sel || !df__topk_select_i64((const int64_t *)x, j->n, j->k, (uint64_t *)key, (int64_t *)tv, ti, pa, pb, (int64_t *)v, ix))
                df__topk_heap_i64((const int64_t *)x, NULL, j->n, j->k, (int64_t *)v, ix);
            break;
        }
        if (j->it != DF_INT32) for (int64_t q = 0; q < j->k; q++) df__set_from_i64(j->it, j->idx, r * j->k + q, ib[q]);
    }
    DF_FREE(buf);
}
static df_code df__topk_k(const df_node *node, const df_tensor *kt, int64_t *k, df_status *st) {
    if (!df__is_int_tensor(kt) || kt->rank != 0) return df__fail(st, node, DF_INVALID_ARGUMENT, "k must be 0-D, got shape %s",
                                                                  kt->rank ? "of rank > 0" : "of a non-integer type");
    *k = df__int_at(kt, 0);
    if (*k < 0) return df__fail(st, node, DF_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)*k);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_topk(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    const df_tensor *kt = df__sc_const(c, 1);
    df__shape *v = df__sc_out(c, 0), *i = df__sc_out(c, 1);
    if (x->rank < 0) { *v = *i = df__shape_unknown(); return DF_OK; }
    if (x->rank < 1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input must be at least 1-D, got rank %d", x->rank);
    int64_t k = -1;
    if (kt && df__topk_k(c->node, kt, &k, c->st)) return c->st->code;
    int64_t n = x->dims[x->rank - 1];
    if (k >= 0 && n >= 0 && n < k)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input must have at least k columns. Had %lld, needed %lld", (long long)n, (long long)k);
    *v = *x;
    v->dims[x->rank - 1] = k;
    *i = *v;
    return DF_OK;
}
DF_PRIVATE void df__k_topk(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t k = 0;
    if (df__topk_k(c->node, c->in[1], &k, c->st)) return;
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be at least 1-D, got shape %s", "[]"); return; }
    df_dtype t = x->dtype, it = df__attr_type(c->node, "index_type");
    if (!it) it = DF_INT32;
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_INT32 && t != DF_INT64) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "TopKV2 has no kernel for %s", df_dtype_name(t));
        return;
    }
    int64_t n = x->dims[x->rank - 1];
    if (n < k) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must have at least k columns. Had %lld, needed %lld", (long long)n, (long long)k); return; }
    if (n > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "TopKV2: rows of %lld elements do not fit int32 indices", (long long)n); return; }
    int64_t od[DF_MAX_RANK];
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)x->rank);
    od[x->rank - 1] = k;
    df_tensor *v = df__k_alloc(c, 0, t, x->rank, od), *ix = df__k_alloc(c, 1, it, x->rank, od);
    if (!v || !ix || !v->n) return;
    int64_t rows = x->n / (n ? n : 1);
    if (!x->n) rows = v->n / k;
    /* rows come out sorted whatever `sorted` says (false leaves the order to the kernel) */
    df__topk_job j = {t, (const char *)x->data, (char *)v->data, ix->data, it, n, k, 0};
    double work = (double)x->n * (1.0 + log2((double)k + 1) * 0.1);
    if (rows > 1 && work > 65536) df__parallel_for(c->ipool, rows, 1, df__ipool_threads(c->ipool), df__topk_rows, &j);
    else df__topk_rows(&j, 0, rows);
    if (j.failed) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in TopKV2");
}
/* TF's _TopKGrad: the values' gradient scattered to the indices in a zero tensor of the
   input's shape, by rows flattened. */
DF_PRIVATE void df__g_topk(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output x = DF__X_IN(c->n, 0), idx = df__out(c->n, 1);
    int rank = x.node->out_shapes[x.index].rank;
    if (rank < 1) { df__graph_error(g, DF_UNIMPLEMENTED, "TopKV2 gradient needs the input's rank {{node %s}}", c->n->name); return; }
    df_output shape_x = df_shape(g, x);
    df_op_builder *b = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(b, shape_x);
    df_op_add_input(b, df_scalar_i32(g, rank - 1));
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_output n_last = df__out(df_op_finish(b), 0);
    df_output idx32 = df_cast(g, idx, DF_INT32);
    b = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(b, df_shape(g, idx32));
    df_op_add_input(b, df_scalar_i32(g, rank - 1));
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_output k_last = df__out(df_op_finish(b), 0);
    df_output total = df__op1(g, "Size", x);
    b = df_op_new(g, "Range", NULL);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_op_add_input(b, total);
    df_op_add_input(b, n_last);
    df_output offsets = df__la_expand(g, df__out(df_op_finish(b), 0), 1);
    df_output pk[2] = {df_scalar_i32(g, -1), k_last};
    b = df_op_new(g, "Pack", NULL);
    df_op_add_input_list(b, pk, 2);
    df_output rows = df__op2(g, "Reshape", idx32, df__out(df_op_finish(b), 0));
    int64_t m1 = -1;
    df_output flat = df_reshape(g, df_add(g, rows, offsets), 1, &m1);
    df_output vals = df_reshape(g, c->dy[0], 1, &m1);
    b = df_op_new(g, "UnsortedSegmentSum", NULL);
    df_op_add_input(b, vals);
    df_op_add_input(b, flat);
    df_op_add_input(b, total);
    c->dx[0] = df__op2(g, "Reshape", df__out(df_op_finish(b), 0), shape_x);
}

/* ---- Cumsum: rows of `inner` elements added one after another along the axis ---- */
/* Scans columns [0, width) of rows `stride` apart, len rows a block, blocks len * stride apart. */
#define DF__CUMSUM_FN(SUF, T, ACC)                                                                        \
    static void df__cumsum_##SUF(const T *x, T *o, int64_t outer_lo, int64_t outer_hi, int64_t len, int64_t stride, \
                                 int64_t width, int excl, int rev) {                                        \
        for (int64_t q = outer_lo; q < outer_hi; q++) {                                                  \
            const T *xb = x + q * len * stride;                                                           \
            T *ob = o + q * len * stride;                                                                 \
            if (stride == 1) {                     /* the last axis: a running sum in a register */      \
                T acc = 0;                                                                                \
                for (int64_t s = 0; s < len; s++) {                                                       \
                    int64_t k = rev ? len - 1 - s : s;                                                    \
                    if (excl) { ob[k] = acc; acc = (T)ACC(acc, xb[k]); }                                  \
                    else { acc = (T)ACC(acc, xb[k]); ob[k] = acc; }                                       \
                }                                                                                         \
                continue;                                                                                 \
            }                                                                                             \
            for (int64_t s = 0; s < len; s++) {                                                           \
                int64_t k = rev ? len - 1 - s : s, kp = rev ? k + 1 : k - 1;                              \
                T *row = ob + k * stride;                                                                 \
                if (s == 0) {                                                                             \
                    for (int64_t j = 0; j < width; j++) row[j] = excl ? (T)0 : xb[k * stride + j];       \
                    continue;                                                                             \
                }                                                                                         \
                const T *prev = ob + kp * stride, *add = xb + (excl ? kp : k) * stride;                  \
                for (int64_t j = 0; j < width; j++) row[j] = (T)ACC(prev[j], add[j]);                     \
            }                                                                                             \
        }                                                                                                 \
    }
#define DF__ADD_F(a, b) ((a) + (b))
#define DF__ADD_I32(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define DF__ADD_I64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
DF__CUMSUM_FN(f32, float, DF__ADD_F)
DF__CUMSUM_FN(f64, double, DF__ADD_F)
DF__CUMSUM_FN(i32, int32_t, DF__ADD_I32)
DF__CUMSUM_FN(i64, int64_t, DF__ADD_I64)
typedef struct df__cumsum_job { df_dtype t; const void *x; void *o; int64_t len, inner; int excl, rev; } df__cumsum_job;
static void df__cumsum_run(const df__cumsum_job *j, int64_t off, int64_t lo, int64_t hi, int64_t width) {
    switch (j->t) {
    case DF_FLOAT: df__cumsum_f32((const float *)j->x + off, (float *)j->o + off, lo, hi, j->len, j->inner, width, j->excl, j->rev); break;
    case DF_DOUBLE: df__cumsum_f64((const double *)j->x + off, (double *)j->o + off, lo, hi, j->len, j->inner, width, j->excl, j->rev); break;
    case DF_INT32: df__cumsum_i32((const int32_t *)j->x + off, (int32_t *)j->o + off, lo, hi, j->len, j->inner, width, j->excl, j->rev); break;
    default: df__cumsum_i64((const int64_t *)j->x + off, (int64_t *)j->o + off, lo, hi, j->len, j->inner, width, j->excl, j->rev); break;
    }
}
/* outer rows [lo, hi) */
static void df__cumsum_share(void *arg, int64_t lo, int64_t hi) {
    const df__cumsum_job *j = (const df__cumsum_job *)arg;
    df__cumsum_run(j, 0, lo, hi, j->inner);
}
/* one outer row, columns [lo, hi): the threads share one long scan of wide rows */
static void df__cumsum_cols(void *arg, int64_t lo, int64_t hi) {
    const df__cumsum_job *j = (const df__cumsum_job *)arg;
    df__cumsum_run(j, lo, 0, 1, hi - lo);
}
static df_code df__cum_axis(const df__kctx *c, const df_tensor *x, const df_tensor *ax, int *axis) {
    if (!df__is_int_tensor(ax) || ax->rank != 0)
        return DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis must be a scalar, got a tensor of rank %d", ax->rank);
    int64_t a = df__int_at(ax, 0);
    if (a < -x->rank || a >= x->rank)
        return DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis must be in the range [%d, %d), got %lld", -x->rank, x->rank, (long long)a);
    *axis = (int)(a < 0 ? a + x->rank : a);
    return DF_OK;
}
DF_PRIVATE void df__k_cumsum(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_dtype t = x->dtype;
    int axis = 0;
    if (df__cum_axis(c, x, c->in[1], &axis)) return;
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_INT32 && t != DF_INT64) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "Cumsum has no kernel for %s", df_dtype_name(t));
        return;
    }
    df_tensor *o = df__k_alloc_like(c, 0, t, x);
    if (!o || !o->n) return;
    df__cumsum_job j = {t, x->data, o->data, x->dims[axis], 1, df__attr_b(c->node, "exclusive", 0), df__attr_b(c->node, "reverse", 0)};
    int64_t outer = 1;
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) j.inner *= x->dims[d];
    int threads = df__ipool_threads(c->ipool);
    if (x->n < 65536 || threads <= 1) df__cumsum_share(&j, 0, outer);
    else if (outer >= threads) df__parallel_for(c->ipool, outer, 1, threads, df__cumsum_share, &j);
    else if (outer == 1 && j.inner >= 4096) df__parallel_for(c->ipool, j.inner, 1024, threads, df__cumsum_cols, &j);
    else df__cumsum_share(&j, 0, outer);
}
static df_output df__la_cum(df_graph *g, const char *op, df_output x, df_output axis, int excl, int rev) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, axis);
    df_op_set_attr_bool(b, "exclusive", excl);
    df_op_set_attr_bool(b, "reverse", rev);
    return df__out(df_op_finish(b), 0);
}
/* TF's _CumsumGrad and _CumprodGrad (math_grad.py) */
DF_PRIVATE void df__g_cumsum(df__gfn *c) {
    if (!c->dy[0].node) return;
    int excl = df__attr_b(c->n, "exclusive", 0), rev = df__attr_b(c->n, "reverse", 0);
    c->dx[0] = df__la_cum(c->g, "Cumsum", c->dy[0], DF__X_IN(c->n, 1), excl, !rev);
}
DF_PRIVATE void df__g_cumprod(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    int excl = df__attr_b(c->n, "exclusive", 0), rev = df__attr_b(c->n, "reverse", 0);
    df_output x = DF__X_IN(c->n, 0), axis = DF__X_IN(c->n, 1);
    df_output prod = df__la_cum(g, "Cumprod", x, axis, excl, rev);
    df_output out = df__la_cum(g, "Cumsum", df_mul(g, prod, c->dy[0]), axis, excl, !rev);
    c->dx[0] = df__op2(g, "DivNoNan", out, x);
}

/* ---- MatrixBandPart ---- */
DF_PRIVATE void df__k_band_part(df__kctx *c) {
    const df_tensor *x = c->in[0], *lt = c->in[1], *ut = c->in[2];
    if (x->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be at least 2-dim, received shape of rank %d", x->rank); return; }
    if (!df__is_int_tensor(lt) || lt->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_lower must be scalar"); return; }
    if (!df__is_int_tensor(ut) || ut->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_upper must be scalar"); return; }
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1], lo = df__int_at(lt, 0), hi = df__int_at(ut, 0);
    if (lo > rows) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_lower must be negative or less or equal to number of rows (%lld) got: %lld", (long long)rows, (long long)lo); return; }
    if (hi > cols) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_upper must be negative or less or equal to number of columns (%lld) got: %lld", (long long)cols, (long long)hi); return; }
    df_tensor *o = df__k_alloc_like(c, 0, x->dtype, x);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    int64_t mats = x->n / (rows * cols);
    for (int64_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < rows; i++) {
            size_t at = (size_t)((b * rows + i) * cols) * es;
            int64_t j0 = lo < 0 ? 0 : DF__MAX(0, i - lo), j1 = hi < 0 ? cols : DF__MIN(cols, i + hi + 1);
            if (j1 < j0) j1 = j0;
            memset((char *)o->data + at, 0, (size_t)j0 * es);
            memcpy((char *)o->data + at + (size_t)j0 * es, (const char *)x->data + at + (size_t)j0 * es, (size_t)(j1 - j0) * es);
            memset((char *)o->data + at + (size_t)j1 * es, 0, (size_t)(cols - j1) * es);
        }
}
DF_PRIVATE void df__g_band_part(df__gfn *c) {
    if (!c->dy[0].node) return;
    df_op_builder *b = df_op_new(c->g, "MatrixBandPart", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, DF__X_IN(c->n, 1));
    df_op_add_input(b, DF__X_IN(c->n, 2));
    c->dx[0] = df__out(df_op_finish(b), 0);
}

/* ---- MatrixDiagPartV3, MatrixDiagV3, MatrixSetDiagV3: diagonals lo..hi (k), stored from hi
   down, each aligned LEFT or RIGHT in rows of max_len (align: superdiagonals' rule first) ---- */
typedef struct df__diags { int64_t lo, hi, rows, cols, max_len; int left_super, left_sub; } df__diags;
static df_code df__diag_k(const df_node *node, const df_tensor *k, df__diags *d, df_status *st) {
    if (!df__is_int_tensor(k) || k->rank > 1 || k->n < 1 || k->n > 2)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "diag_index must be a scalar or a vector of one or two integers");
    d->lo = df__int_at(k, 0);
    d->hi = df__int_at(k, k->n - 1);
    if (d->lo > d->hi) return df__fail(st, node, DF_INVALID_ARGUMENT, "lower_diag_index must not be larger than upper_diag_index: %lld > %lld",
                                       (long long)d->lo, (long long)d->hi);
    const char *al = df__attr_s(node, "align");
    if (!al) al = "RIGHT_LEFT";
    if (strcmp(al, "RIGHT_LEFT") && strcmp(al, "LEFT_RIGHT") && strcmp(al, "LEFT_LEFT") && strcmp(al, "RIGHT_RIGHT"))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Unknown align '%s' (LEFT_RIGHT, RIGHT_LEFT, LEFT_LEFT or RIGHT_RIGHT)", al);
    d->left_super = al[0] == 'L';
    d->left_sub = strchr(al, '_')[1] == 'L';
    return DF_OK;
}
static int64_t df__diag_len(const df__diags *d, int64_t k) { return DF__MIN(d->rows + DF__MIN(0, k), d->cols - DF__MAX(0, k)); }
static int64_t df__diag_offset(const df__diags *d, int64_t k) {
    int left = k >= 0 ? d->left_super : d->left_sub;
    return left ? 0 : d->max_len - df__diag_len(d, k);
}
static df_code df__diag_bounds(const df_node *node, df__diags *d, df_status *st) {
    if (d->rows > 0 && d->cols > 0 && ((d->lo <= -d->rows && d->lo != 0) || (d->hi >= d->cols && d->hi != 0) || d->lo >= d->cols || d->hi <= -d->rows))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "diag_index [%lld, %lld] out of bounds for a %lld x %lld matrix",
                        (long long)d->lo, (long long)d->hi, (long long)d->rows, (long long)d->cols);
    d->max_len = DF__MIN(d->rows + DF__MIN(d->hi, 0), d->cols - DF__MAX(d->lo, 0));
    if (d->max_len < 0) d->max_len = 0;
    return DF_OK;
}
/* part (1): input -> diagonals; part (0): diagonals -> output (set: over a copy of input) */
static void df__diag_move(const df__diags *d, size_t es, int64_t mats, const char *mat, char *dg, int to_diag, const void *pad) {
    int64_t nd = d->hi - d->lo + 1;
    for (int64_t b = 0; b < mats; b++)
        for (int64_t r = 0; r < nd; r++) {
            int64_t k = d->hi - r, len = df__diag_len(d, k), off = df__diag_offset(d, k), i0 = DF__MAX(0, -k);
            char *row = dg + (size_t)((b * nd + r) * d->max_len) * es;
            if (to_diag && pad)
                for (int64_t p = 0; p < d->max_len; p++) if (p < off || p >= off + len) memcpy(row + (size_t)p * es, pad, es);
            for (int64_t t = 0; t < len; t++) {
                char *m = (char *)mat + (size_t)((b * d->rows + i0 + t) * d->cols + i0 + t + k) * es;
                if (to_diag) memcpy(row + (size_t)(off + t) * es, m, es);
                else memcpy(m, row + (size_t)(off + t) * es, es);
            }
        }
}
DF_PRIVATE void df__k_diag_part_v3(df__kctx *c) {
    const df_tensor *x = c->in[0], *pad = c->in[2];
    df__diags d;
    if (df__diag_k(c->node, c->in[1], &d, c->st)) return;
    if (x->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be at least 2-dim, received shape of rank %d", x->rank); return; }
    if (pad->n != 1 || pad->dtype != x->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "padding_value must be a scalar of the input's type"); return; }
    d.rows = x->dims[x->rank - 2]; d.cols = x->dims[x->rank - 1];
    if (df__diag_bounds(c->node, &d, c->st)) return;
    int64_t od[DF_MAX_RANK];
    int r = x->rank - 2;
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)r);
    if (d.lo != d.hi) od[r++] = d.hi - d.lo + 1;
    od[r++] = d.max_len;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, r, od);
    if (!o || !o->n) return;
    int64_t mats = (d.rows * d.cols != 0) ? x->n / (d.rows * d.cols) : 0;
    df__diag_move(&d, df_dtype_size(x->dtype), mats, (const char *)x->data, (char *)o->data, 1, pad->data);
}
DF_PRIVATE df_code df__sf_diag_part_v3(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    const df_tensor *k = df__sc_const(c, 1);
    df__shape *o = df__sc_out(c, 0);
    if (x->rank < 0 || !k) { *o = df__shape_unknown(); return DF_OK; }
    if (x->rank < 2) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input must be at least 2-dim, received shape of rank %d", x->rank);
    df__diags d;
    if (df__diag_k(c->node, k, &d, c->st)) return c->st->code;
    d.rows = x->dims[x->rank - 2]; d.cols = x->dims[x->rank - 1];
    o->rank = x->rank - 2;
    memcpy(o->dims, x->dims, sizeof(int64_t) * (size_t)o->rank);
    if (d.lo != d.hi) o->dims[o->rank++] = d.hi - d.lo + 1;
    if (d.rows < 0 || d.cols < 0) { o->dims[o->rank++] = -1; return DF_OK; }
    if (df__diag_bounds(c->node, &d, c->st)) return c->st->code;
    o->dims[o->rank++] = d.max_len;
    return DF_OK;
}
/* MatrixDiagV3's output size from the diagonal's shape and num_rows / num_cols (-1: inferred) */
static df_code df__diag_v3_dims(const df_node *node, int rank, const int64_t *dims, df__diags *d, int64_t nr, int64_t nc,
                                df_status *st) {
    if (rank < 1) return df__fail(st, node, DF_INVALID_ARGUMENT, "diagonal must be at least 1-dim");
    if (d->lo != d->hi) {
        if (rank < 2) return df__fail(st, node, DF_INVALID_ARGUMENT, "diagonal must be at least 2-dim when k is a range");
        if (dims[rank - 2] >= 0 && dims[rank - 2] != d->hi - d->lo + 1)
            return df__fail(st, node, DF_INVALID_ARGUMENT, "The number of diagonals provided in the input does not match the "
                            "lower_diag_index and upper_diag_index range: %lld vs %lld", (long long)dims[rank - 2], (long long)(d->hi - d->lo + 1));
    }
    int64_t len = dims[rank - 1];
    int64_t min_rows = len - DF__MIN(d->hi, 0), min_cols = len + DF__MAX(d->lo, 0);
    if (nr == -1 && nc == -1) nr = nc = DF__MAX(min_rows, min_cols);
    else if (nr == -1) nr = min_rows;
    else if (nc == -1) nc = min_cols;
    if (nr < min_rows || nc < min_cols || (nr != min_rows && nc != min_cols))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "The number of rows or columns is not consistent with the specified d_lower, "
                        "d_upper, and diagonal: num_rows %lld, num_cols %lld, diagonal length %lld", (long long)nr, (long long)nc, (long long)len);
    d->rows = nr; d->cols = nc;
    d->max_len = len;
    return DF_OK;
}
DF_PRIVATE void df__k_diag_v3(df__kctx *c) {
    const df_tensor *x = c->in[0], *pad = c->in[4];
    df__diags d;
    if (df__diag_k(c->node, c->in[1], &d, c->st)) return;
    for (int i = 2; i < 4; i++)
        if (!df__is_int_tensor(c->in[i]) || c->in[i]->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be a scalar", i == 2 ? "num_rows" : "num_cols"); return; }
    if (pad->n != 1 || pad->dtype != x->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "padding_value must be a scalar of the diagonal's type"); return; }
    if (df__diag_v3_dims(c->node, x->rank, x->dims, &d, df__int_at(c->in[2], 0), df__int_at(c->in[3], 0), c->st)) return;
    int64_t od[DF_MAX_RANK];
    int r = x->rank - (d.lo != d.hi ? 2 : 1);
    if (r + 2 > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "MatrixDiagV3 output would exceed rank %d", DF_MAX_RANK); return; }
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)r);
    od[r++] = d.rows; od[r++] = d.cols;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, r, od);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    for (int64_t i = 0; i < o->n; i++) memcpy((char *)o->data + (size_t)i * es, pad->data, es);
    int64_t mats = o->n / (d.rows * d.cols);
    d.max_len = x->dims[x->rank - 1];
    df__diag_move(&d, es, mats, (char *)o->data, (char *)x->data, 0, NULL);
}
DF_PRIVATE df_code df__sf_diag_v3(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    const df_tensor *k = df__sc_const(c, 1), *nr = df__sc_const(c, 2), *nc = df__sc_const(c, 3);
    df__shape *o = df__sc_out(c, 0);
    *o = df__shape_unknown();
    if (x->rank < 0 || !k || !nr || !nc || !df__is_int_tensor(nr) || !df__is_int_tensor(nc) || nr->n != 1 || nc->n != 1) return DF_OK;
    df__diags d;
    if (df__diag_k(c->node, k, &d, c->st)) return c->st->code;
    for (int i = 0; i < x->rank; i++) if (x->dims[i] < 0) return DF_OK;
    if (df__diag_v3_dims(c->node, x->rank, x->dims, &d, df__int_at(nr, 0), df__int_at(nc, 0), c->st)) return c->st->code;
    int r = x->rank - (d.lo != d.hi ? 2 : 1);
    o->rank = r + 2;
    memcpy(o->dims, x->dims, sizeof(int64_t) * (size_t)r);
    o->dims[r] = d.rows; o->dims[r + 1] = d.cols;
    return DF_OK;
}
DF_PRIVATE void df__k_set_diag_v3(df__kctx *c) {
    const df_tensor *x = c->in[0], *dg = c->in[1];
    df__diags d;
    if (df__diag_k(c->node, c->in[2], &d, c->st)) return;
    if (x->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be at least 2-dim, received shape of rank %d", x->rank); return; }
    d.rows = x->dims[x->rank - 2]; d.cols = x->dims[x->rank - 1];
    if (df__diag_bounds(c->node, &d, c->st)) return;
    int r = x->rank - 2, want = r + (d.lo != d.hi ? 2 : 1), ok = dg->rank == want;
    for (int i = 0; ok && i < r; i++) ok = dg->dims[i] == x->dims[i];
    if (ok && d.lo != d.hi) ok = dg->dims[r] == d.hi - d.lo + 1;
    if (ok) ok = dg->dims[want - 1] == d.max_len;
    if (!ok) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "diagonal of shape %s does not fit input of shape %s with k [%lld, %lld] (diagonals of length %lld)",
                  df__dims_str(dg->rank, dg->dims, s1, 96), df__dims_str(x->rank, x->dims, s2, 96), (long long)d.lo, (long long)d.hi, (long long)d.max_len);
        return;
    }
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (!o || !o->n) return;
    if (o->data != x->data) memcpy(o->data, x->data, (size_t)x->n * df_dtype_size(x->dtype));
    df__diag_move(&d, df_dtype_size(x->dtype), x->n / (d.rows * d.cols), (char *)o->data, (char *)dg->data, 0, NULL);
}
static df_output df__la_diag_op(df_graph *g, const char *op, const df_output *ins, int n, const df_node *from) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    const char *al = df__attr_s(from, "align");
    df_op_set_attr_string(b, "align", al ? al : "RIGHT_LEFT");
    return df__out(df_op_finish(b), 0);
}
/* array_grad.py's _MatrixDiagV3Grad, _MatrixDiagPartV3Grad, _MatrixSetDiagGradV3 */
DF_PRIVATE void df__g_diag_v3(df__gfn *c) {
    if (!c->dy[0].node) return;
    df_output in[3] = {c->dy[0], DF__X_IN(c->n, 1), df__scalar_of(c->g, df_output_dtype(c->dy[0]), 0)};
    c->dx[0] = df__la_diag_op(c->g, "MatrixDiagPartV3", in, 3, c->n);
}
DF_PRIVATE void df__g_diag_part_v3(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output x = DF__X_IN(c->n, 0);
    df__shape s = x.node->out_shapes[x.index];
    if (s.rank >= 2 && s.dims[s.rank - 2] >= 0 && s.dims[s.rank - 1] >= 0) {
        df_output in[5] = {c->dy[0], DF__X_IN(c->n, 1), df_scalar_i32(g, (int32_t)s.dims[s.rank - 2]),
                           df_scalar_i32(g, (int32_t)s.dims[s.rank - 1]), df__scalar_of(g, df_output_dtype(c->dy[0]), 0)};
        c->dx[0] = df__la_diag_op(g, "MatrixDiagV3", in, 5, c->n);
    } else {
        df_output in[3] = {df__zeros_like(g, x), c->dy[0], DF__X_IN(c->n, 1)};
        c->dx[0] = df__la_diag_op(g, "MatrixSetDiagV3", in, 3, c->n);
    }
}
DF_PRIVATE void df__g_set_diag_v3(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output in[3] = {c->dy[0], df__zeros_like(g, DF__X_IN(c->n, 1)), DF__X_IN(c->n, 2)};
    c->dx[0] = df__la_diag_op(g, "MatrixSetDiagV3", in, 3, c->n);
    df_output pin[3] = {c->dy[0], DF__X_IN(c->n, 2), df__scalar_of(g, df_output_dtype(c->dy[0]), 0)};
    c->dx[1] = df__la_diag_op(g, "MatrixDiagPartV3", pin, 3, c->n);
}

/* ---- EuclideanNorm: sqrt of the sum of squares over reduction_indices ---- */
DF_PRIVATE void df__k_euclidean_norm(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_dtype t = x->dtype;
    if (t != DF_FLOAT && t != DF_DOUBLE) { DF__KFAIL(c, DF_UNIMPLEMENTED, "EuclideanNorm has no kernel for %s", df_dtype_name(t)); return; }
    unsigned mask;
    if (df__norm_axes(c->node, c->in[1], x->rank, &mask, c->st)) return;
    df__shape os;
    df__reduced_shape(x->rank, x->dims, mask, df__attr_b(c->node, "keep_dims", 0), &os);
    df_tensor *o = df__k_alloc(c, 0, t, os.rank, os.dims);
    if (!o || !o->n) return;
    double *acc = (double *)DF_MALLOC((size_t)o->n * sizeof(double));
    if (!acc) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in EuclideanNorm"); return; }
    memset(acc, 0, (size_t)o->n * sizeof(double));
    int64_t ostride[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, oi = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        if (mask & (1u << d)) ostride[d] = 0;
        else { ostride[d] = s; s *= x->dims[d]; }
    }
    int64_t inner = x->rank ? x->dims[x->rank - 1] : 1, istr = x->rank ? ostride[x->rank - 1] : 0;
    for (int64_t i = 0; i < x->n; i += inner) {
        if (t == DF_FLOAT) { const float *p = (const float *)x->data + i; for (int64_t q = 0; q < inner; q++) acc[oi + q * istr] += (double)p[q] * p[q]; }
        else { const double *p = (const double *)x->data + i; for (int64_t q = 0; q < inner; q++) acc[oi + q * istr] += p[q] * p[q]; }
        for (int d = x->rank - 2; d >= 0; d--) {
            idx[d]++; oi += ostride[d];
            if (idx[d] < x->dims[d]) break;
            oi -= ostride[d] * idx[d]; idx[d] = 0;
        }
    }
    for (int64_t i = 0; i < o->n; i++) df__set_from_f64(t, o->data, i, sqrt(acc[i]));
    DF_FREE(acc);
}
/* math_grad.py's _EuclideanNormGrad: x / (norm / grad), both shaped as with keep_dims */
DF_PRIVATE void df__g_euclidean_norm(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output x = DF__X_IN(c->n, 0), axes = DF__X_IN(c->n, 1), y = df__out(c->n, 0), d = c->dy[0];
    if (!df__attr_b(c->n, "keep_dims", 0)) {
        df_op_builder *b = df_op_new(g, "Sum", NULL);
        df_op_add_input(b, x);
        df_op_add_input(b, axes);
        df_op_set_attr_bool(b, "keep_dims", 1);
        df_output kept = df_shape(g, df__out(df_op_finish(b), 0));
        y = df__op2(g, "Reshape", y, kept);
        d = df__op2(g, "Reshape", d, kept);
    }
    c->dx[0] = df_div(g, x, df_div(g, y, d));
}

/* ---- DivNoNan, Xdivy, Xlogy, Xlog1py, Polygamma (binary, broadcasting); Lgamma, Digamma ---- */
static double df__digamma(double x) {
    if (isnan(x) || x == INFINITY) return x;
    if (x == -INFINITY) return NAN;
    double refl = 0;
    if (x <= 0) {
        if (x == floor(x)) return NAN;
        refl = -3.14159265358979323846 / tan(3.14159265358979323846 * x);   /* psi(x) = psi(1-x) - pi cot(pi x) */
        x = 1 - x;
    }
    double r = 0;
    while (x < 10) { r -= 1 / x; x += 1; }
    double z = 1 / (x * x);
    /* log x - 1/(2x) - sum B_2k / (2k x^2k) */
    double s = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
    return r + log(x) - 0.5 / x - s + refl;
}
/* Hurwitz zeta(s, q) = sum_k (q + k)^-s by Euler-Maclaurin: a few terms summed, the rest as
   an integral plus Bernoulli corrections ((2j)! / B_2j in den). */
static double df__zeta(double s, double q) {
    static const double den[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                                   -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                                   1.8152105401943546773e17, -7.1661652561756670113e18};
    if (s == 1) return INFINITY;
    if (s < 1 || isnan(s) || isnan(q)) return NAN;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (s != floor(s)) return NAN;
    }
    double sum = pow(q, -s), a = q, b = 0;
    int i = 0;
    while (i < 9 || a <= 9.0) {
        i++; a += 1; b = pow(a, -s); sum += b;
        if (fabs(b / sum) < 1e-17) return sum;
    }
    double w = a, f = 1, k = 0;
    sum += b * w / (s - 1) - 0.5 * b;
    for (int j = 0; j < 12; j++) {
        f *= s + k; b /= w;
        double term = f * b / den[j];
        sum += term;
        if (fabs(term / sum) < 1e-17) break;
        k += 1; f *= s + k; b /= w; k += 1;
    }
    return sum;
}
static double df__polygamma(double n, double x) {
    if (n != floor(n) || n < 0 || isnan(n)) return NAN;
    if (n == 0) return df__digamma(x);
    double f = exp(lgamma(n + 1));
    return (fmod(n, 2) == 1 ? 1.0 : -1.0) * f * df__zeta(n + 1, x);
}
static double df__la_bin(int code, double x, double y) {
    switch (code) {
    case DF__LA_DIV_NO_NAN: return y == 0 ? 0 : x / y;
    case DF__LA_XDIVY: return x == 0 ? 0 : x / y;
    case DF__LA_XLOGY: return x == 0 ? 0 : x * log(y);
    case DF__LA_XLOG1PY: return x == 0 ? 0 : x * log1p(y);
    case DF__LA_POLYGAMMA: return df__polygamma(x, y);
    default: return 0;
    }
}
DF_PRIVATE void df__k_la_binary(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int code = c->node->op->code;
    df_dtype t = a->dtype;
    if (b->dtype != t) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: inputs of %s and %s", c->node->op->name, df_dtype_name(t), df_dtype_name(b->dtype)); return; }
    if (t != DF_FLOAT && t != DF_DOUBLE) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t)); return; }
    df__bcast bc;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s", df__dims_str(a->rank, a->dims, s1, 96),
                  df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
        return;
    }
    df_tensor *o = df__k_alloc(c, 0, t, bc.rank, bc.dims);
    if (!o || !o->n) return;
    int64_t idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;
    for (int64_t i = 0; i < o->n; i++) {
        double v = df__la_bin(code, df__get_f64(t, a->data, oa), df__get_f64(t, b->data, ob));
        if (t == DF_FLOAT) ((float *)o->data)[i] = (float)v; else ((double *)o->data)[i] = v;
        for (int d = bc.rank - 1; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}
DF_PRIVATE void df__k_la_unary(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_dtype t = x->dtype;
    if (t != DF_FLOAT && t != DF_DOUBLE) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t)); return; }
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, t, x->rank, x->dims);
    if (!o) return;
    int lg = c->node->op->code == DF__LA_LGAMMA;
    /* one thread: lgamma sets the global signgam */
    for (int64_t i = 0; i < x->n; i++) {
        double v = df__get_f64(t, x->data, i);
        df__set_from_f64(t, o->data, i, lg ? lgamma(v) : df__digamma(v));
    }
}
static df_output df__la_op2(df_graph *g, const char *op, df_output a, df_output b) { return df__op2(g, op, a, b); }
/* math_grad.py's _DivNoNanGrad, _XdivyGrad, _XlogyGrad, _Xlog1pyGrad, _PolygammaGrad */
DF_PRIVATE void df__g_la_binary(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    const char *op = c->n->op->name;
    df_output x = DF__X_IN(c->n, 0), y = DF__X_IN(c->n, 1), d = c->dy[0];
    df_dtype t = df_output_dtype(x);
    if (!strcmp(op, "DivNoNan")) {
        c->dx[0] = df__sum_to(g, df__la_op2(g, "DivNoNan", d, y), x);
        c->dx[1] = df__sum_to(g, df_mul(g, d, df__la_op2(g, "DivNoNan", df__la_op2(g, "DivNoNan", df_neg(g, x), y), y)), y);
        return;
    }
    if (!strcmp(op, "Polygamma")) {
        df_output p = df__la_op2(g, "Polygamma", df_add(g, x, df__scalar_of(g, t, 1)), y);
        c->dx[1] = df__sum_to(g, df_mul(g, p, d), y);
        return;
    }
    df_output nz = df_cast(g, df_not_equal(g, x, df__scalar_of(g, t, 0)), t), px, py;
    if (!strcmp(op, "Xlogy")) { px = df__la_op2(g, "Xlogy", nz, y); py = df__la_op2(g, "Xdivy", x, y); }
    else if (!strcmp(op, "Xlog1py")) { px = df__la_op2(g, "Xlog1py", nz, y); py = df__la_op2(g, "Xdivy", x, df_add(g, y, df__scalar_of(g, t, 1))); }
    else { px = df__la_op2(g, "Xdivy", nz, y); py = df__la_op2(g, "Xdivy", df_neg(g, x), df_square(g, y)); }
    c->dx[0] = df__sum_to(g, df_mul(g, px, d), x);
    c->dx[1] = df__sum_to(g, df_mul(g, py, d), y);
}
DF_PRIVATE void df__g_la_unary(df__gfn *c) {
    df_graph *g = c->g;
    if (!c->dy[0].node) return;
    df_output x = DF__X_IN(c->n, 0);
    if (!strcmp(c->n->op->name, "Lgamma")) c->dx[0] = df_mul(g, c->dy[0], df__op1(g, "Digamma", x));
    else c->dx[0] = df_mul(g, c->dy[0], df__la_op2(g, "Polygamma", df__scalar_of(g, df_output_dtype(x), 1), x));
}

/* ---- PadV2, MirrorPad, MirrorPadGrad ---- */
/* paddings [rank, 2] (before, after); grad: the output is the input less the paddings */
static df_code df__la_pad_dims(const df_node *node, int rank, const int64_t *dims, const df_tensor *p, int mirror, int grad,
                               int64_t *lo, int64_t *od, df_status *st) {
    if (!df__is_int_tensor(p) || p->rank != 2 || p->dims[0] != rank || p->dims[1] != 2) {
        char s[96];
        return df__fail(st, node, DF_INVALID_ARGUMENT, "paddings must be a matrix with 2 columns and %d rows: %s", rank,
                        df__dims_str(p->rank, p->dims, s, 96));
    }
    for (int d = 0; d < rank; d++) {
        int64_t a = df__int_at(p, 2 * d), b = df__int_at(p, 2 * d + 1);
        if (a < 0 || b < 0) return df__fail(st, node, DF_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld", (long long)a, (long long)b);
        if (mirror && !grad && dims[d] >= 0) {
            int64_t lim = mirror == 1 ? dims[d] - 1 : dims[d];    /* 1: REFLECT, 2: SYMMETRIC */
            if (a > lim || b > lim)
                return df__fail(st, node, DF_INVALID_ARGUMENT, "paddings must be %s the dimension size: %lld, %lld %s %lld",
                                mirror == 1 ? "less than" : "no greater than", (long long)a, (long long)b,
                                mirror == 1 ? "not less than" : "greater than", (long long)(mirror == 1 ? dims[d] : dims[d]));
        }
        lo[d] = a;
        if (dims[d] >= 0 && (a > INT64_MAX / 4 || b > INT64_MAX / 4))    /* (no sum below can overflow) */
            return df__fail(st, node, DF_INVALID_ARGUMENT, "Paddings %lld, %lld are too large", (long long)a, (long long)b);
        od[d] = dims[d] < 0 ? -1 : grad ? dims[d] - a - b : dims[d] + a + b;
        if (grad && od[d] < 0 && dims[d] >= 0)
            return df__fail(st, node, DF_INVALID_ARGUMENT, "MirrorPadGrad: paddings %lld, %lld exceed the dimension %lld", (long long)a, (long long)b, (long long)dims[d]);
        if (grad && dims[d] >= 0 && (mirror == 1 ? a >= od[d] || b >= od[d] : a > od[d] || b > od[d]))
            return df__fail(st, node, DF_INVALID_ARGUMENT, "paddings must be %s the output dimension size: %lld, %lld against %lld",
                            mirror == 1 ? "less than" : "no greater than", (long long)a, (long long)b, (long long)od[d]);
    }
    return DF_OK;
}
static int df__la_mirror_mode(const df_node *node, df_status *st) {
    const char *m = df__attr_s(node, "mode");
    if (m && !strcmp(m, "REFLECT")) return 1;
    if (m && !strcmp(m, "SYMMETRIC")) return 2;
    df__fail(st, node, DF_INVALID_ARGUMENT, "mode must be either REFLECT or SYMMETRIC, got '%s'", m ? m : "");
    return 0;
}
DF_PRIVATE df_code df__sf_la_pad(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    const df_tensor *p = df__sc_const(c, 1);
    df__shape *o = df__sc_out(c, 0);
    const char *op = c->node->op->name;
    int mirror = 0, grad = !strcmp(op, "MirrorPadGrad");
    if (strcmp(op, "PadV2") && !(mirror = df__la_mirror_mode(c->node, c->st))) return c->st->code;
    if (x->rank < 0 || !p) { *o = df__shape_unknown(); if (x->rank >= 0) { o->rank = x->rank; for (int d = 0; d < x->rank; d++) o->dims[d] = -1; } return DF_OK; }
    int64_t lo[DF_MAX_RANK];
    o->rank = x->rank;
    return df__la_pad_dims(c->node, x->rank, x->dims, p, mirror, grad, lo, o->dims, c->st);
}
DF_PRIVATE void df__k_pad_v2(df__kctx *c) {
    const df_tensor *x = c->in[0], *cv = c->in[2];
    int64_t lo[DF_MAX_RANK], od[DF_MAX_RANK];
    if (df__la_pad_dims(c->node, x->rank, x->dims, c->in[1], 0, 0, lo, od, c->st)) return;
    if (cv->n != 1 || cv->dtype != x->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "constant_values must be a scalar of the input's type"); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, od);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    char *out = (char *)o->data;
    const char *in = (const char *)x->data;
    int zero = 1;
    for (size_t b = 0; b < es; b++) zero &= ((const unsigned char *)cv->data)[b] == 0;
    if (zero) memset(out, 0, (size_t)o->n * es);
    else for (int64_t i = 0; i < o->n; i++) memcpy(out + (size_t)i * es, cv->data, es);
    if (!x->n) return;
    if (!x->rank) { memcpy(out, in, es); return; }
    int r = x->rank;
    int64_t ostr[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, base = 0, row = x->dims[r - 1];
    for (int d = r - 1; d >= 0; d--) { ostr[d] = s; s *= od[d]; base += lo[d] * ostr[d]; }
    int64_t off = base;
    for (int64_t i = 0; i < x->n; i += row) {
        memcpy(out + (size_t)off * es, in + (size_t)i * es, (size_t)row * es);
        for (int d = r - 2; d >= 0; d--) {
            idx[d]++; off += ostr[d];
            if (idx[d] < x->dims[d]) break;
            off -= ostr[d] * idx[d]; idx[d] = 0;
        }
    }
}
/* The input index each output index of one dimension reads (mode 1 REFLECT, 2 SYMMETRIC). */
static int64_t df__la_mirror(int64_t o, int64_t lo, int64_t n, int mode) {
    int64_t i = o - lo;
    if (i < 0) return mode == 1 ? -i : -i - 1;
    if (i >= n) return mode == 1 ? 2 * n - 2 - i : 2 * n - 1 - i;
    return i;
}
/* MirrorPad (grad 0): out[o] = in[map(o)]; MirrorPadGrad (grad 1): out[map(o)] += in[o]. */
DF_PRIVATE void df__k_mirror_pad(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int grad = !strcmp(c->node->op->name, "MirrorPadGrad"), mode = df__la_mirror_mode(c->node, c->st);
    if (!mode) return;
    int64_t lo[DF_MAX_RANK], od[DF_MAX_RANK];
    if (df__la_pad_dims(c->node, x->rank, x->dims, c->in[1], mode, grad, lo, od, c->st)) return;
    df_dtype t = x->dtype;
    if (grad && t != DF_FLOAT && t != DF_DOUBLE && t != DF_INT32 && t != DF_INT64) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "MirrorPadGrad has no kernel for %s", df_dtype_name(t));
        return;
    }
    df_tensor *o = df__k_alloc(c, 0, t, x->rank, od);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(t);
    int r = x->rank;
    if (!r) { memcpy(o->data, x->data, es); return; }
    /* the padded side's dims (big) and the plain side's (small), per dimension a map big -> small */
    const int64_t *big = grad ? x->dims : od, *small = grad ? od : x->dims;
    int64_t total = 0, sstr[DF_MAX_RANK], s = 1;
    for (int d = 0; d < r; d++) total += big[d];
    for (int d = r - 1; d >= 0; d--) { sstr[d] = s; s *= small[d]; }
    int64_t *map = (int64_t *)DF_MALLOC((size_t)(total ? total : 1) * sizeof(int64_t)), *m[DF_MAX_RANK];
    if (!map) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in %s", c->node->op->name); return; }
    int64_t at = 0;
    for (int d = 0; d < r; d++) {
        m[d] = map + at;
        for (int64_t q = 0; q < big[d]; q++) m[d][q] = df__la_mirror(q, lo[d], small[d], mode) * sstr[d];
        at += big[d];
    }
    if (grad && df__zero_data(o, c->st)) { DF_FREE(map); return; }
    int64_t idx[DF_MAX_RANK] = {0}, row = big[r - 1], nbig = grad ? x->n : o->n, rowoff = 0;
    for (int d = 0; d < r - 1; d++) rowoff += m[d][0];
    for (int64_t i = 0; i < nbig; i += row) {
        const int64_t *ml = m[r - 1];
        if (!grad) {
            if (es == 4) for (int64_t q = 0; q < row; q++) ((uint32_t *)o->data)[i + q] = ((const uint32_t *)x->data)[rowoff + ml[q]];
            else if (es == 8) for (int64_t q = 0; q < row; q++) ((uint64_t *)o->data)[i + q] = ((const uint64_t *)x->data)[rowoff + ml[q]];
            else for (int64_t q = 0; q < row; q++) memcpy((char *)o->data + (size_t)(i + q) * es, (const char *)x->data + (size_t)(rowoff + ml[q]) * es, es);
        } else if (t == DF_FLOAT) for (int64_t q = 0; q < row; q++) ((float *)o->data)[rowoff + ml[q]] += ((const float *)x->data)[i + q];
        else if (t == DF_DOUBLE) for (int64_t q = 0; q < row; q++) ((double *)o->data)[rowoff + ml[q]] += ((const double *)x->data)[i + q];
        else for (int64_t q = 0; q < row; q++)
            df__set_from_i64(t, o->data, rowoff + ml[q], df__get_i64(t, o->data, rowoff + ml[q]) + df__get_i64(t, x->data, i + q));
        for (int d = r - 2; d >= 0; d--) {
            rowoff -= m[d][idx[d]];
            idx[d]++;
            if (idx[d] < big[d]) { rowoff += m[d][idx[d]]; break; }
            idx[d] = 0; rowoff += m[d][0];
        }
    }
    DF_FREE(map);
}
/* nn_grad.py / array_grad.py: MirrorPad and MirrorPadGrad are each other's gradients */
DF_PRIVATE void df__g_mirror_pad(df__gfn *c) {
    if (!c->dy[0].node) return;
    df_op_builder *b = df_op_new(c->g, strcmp(c->n->op->name, "MirrorPad") ? "MirrorPad" : "MirrorPadGrad", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, DF__X_IN(c->n, 1));
    const char *m = df__attr_s(c->n, "mode");
    df_op_set_attr_string(b, "mode", m ? m : "REFLECT");
    c->dx[0] = df__out(df_op_finish(b), 0);
}
