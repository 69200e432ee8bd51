/* ==========================================================================================
   src/kernels/gpu.c: GPU kernels                                                >>gpukernels
   The ops a GPU runs in its own memory, through dataflow_cuda.cu's launchers. Validation
   follows the CPU kernels; the work is queued on the GPU's compute stream, so a kernel
   returns before its result exists, and everything after it on the stream sees it. Inputs
   read on the host (shapes, axes, permutations) are host-memory arguments (see
   df__gpu_kernels below), so no kernel waits for the device.
   ========================================================================================== */
#ifdef DATAFLOW_CUDA
#define DF__GPU(c) ((df_cuda *)(c)->gpu)
static df_code df__gk_strides(const df_tensor *t, int64_t *st) {       /* dense element strides */
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) { st[d] = s; s *= t->dims[d]; }
    return DF_OK;
}
/* A device tensor of shape like x for scratch (released by the caller once its last use is
   queued: later work on the stream is ordered after it). */
static df_tensor *df__gk_scratch(df__kctx *c, df_dtype t, int rank, const int64_t *dims) {
    return df__tensor_alloc(c->alloc, t, rank, dims, c->st);
}

/* Const: the value is copied to the device once per device and cached (keyed by the host value,
   which the cache holds alive). */
static void df__gk_const(df__kctx *c) {
    const df__attr *a = df__node_attr(c->node, "value");
    if (!a || a->kind != DF__A_TENSOR || !a->u.tensor) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Const has no value"); return; }
    df_tensor *host = a->u.tensor;
    df__device *d = c->dev;
    df_tensor *dev = NULL;
    df__spin_lock(&d->cache_lock);
    for (int i = 0; i < d->n_cache && !dev; i++) if (d->cache[i].host == host) dev = df_tensor_retain(d->cache[i].dev);
    df__spin_unlock(&d->cache_lock);
    if (!dev) {
        if (!(dev = df__to_device(d, host, c->st))) return;
        df__spin_lock(&d->cache_lock);
        if (df__grow(&d->cache, &d->cap_cache, d->n_cache + 1, sizeof *d->cache)) {
            d->cache[d->n_cache].host = df_tensor_retain(host);
            d->cache[d->n_cache++].dev = df_tensor_retain(dev);
        }
        df__spin_unlock(&d->cache_lock);
    }
    c->out[0] = dev;
}

static void df__gk_unary(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (o && o->n) df_cuda_unary(DF__GPU(c), c->node->op->code, x->dtype, x->data, o->data, o->n, c->st);
}

/* c = op(a, b) with a and b read at broadcast strides over dims (rank 0 made rank 1). */
static df_code df__gk_binary_launch(df__kctx *c, int code, df_dtype t, const df__bcast *bc, const void *a, const void *b, void *o) {
    int64_t one = 1, zero = 0;
    if (bc->rank == 0) return df_cuda_binary(DF__GPU(c), code, t, 1, &one, a, &zero, b, &zero, o, c->st);
    return df_cuda_binary(DF__GPU(c), code, t, bc->rank, bc->dims, a, bc->sa, b, bc->sb, o, c->st);
}
static void df__gk_binary(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int code = c->node->op->code;
    df__bcast bc;
    if (a->dtype != b->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: operands of %s and %s", c->node->op->name, df_dtype_name(a->dtype), df_dtype_name(b->dtype)); return; }
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                  df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
        return;
    }
    df_dtype ot = code >= DF__B_LESS && code <= DF__B_NOT_EQUAL ? DF_BOOL : a->dtype;
    df_tensor *o = df__k_reuse_or_alloc(c, 0, a->n == b->n || b->n == 1 ? 0 : 1, ot, bc.rank, bc.dims);
    if (o && o->n) df__gk_binary_launch(c, code, a->dtype, &bc, a->data, b->data, o->data);
}
static void df__gk_bias_add(df__kctx *c) {
    const df_tensor *x = c->in[0], *b = c->in[1];
    int nchw = !strcmp(df__attr_s(c->node, "data_format"), "NCHW");
    if (x->rank < 2 || b->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAdd: value must be at least 2-D and bias 1-D"); return; }
    int axis = nchw && x->rank > 2 ? 1 : x->rank - 1;
    if (b->dims[0] != x->dims[axis]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Must provide as many biases as the channel dimension of the input tensor: %lld vs. %lld",
                  (long long)b->dims[0], (long long)x->dims[axis]);
        return;
    }
    df__bcast bc;
    bc.rank = x->rank;
    df__gk_strides(x, bc.sa);
    for (int d = 0; d < x->rank; d++) { bc.dims[d] = x->dims[d]; bc.sb[d] = d == axis ? 1 : 0; }
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (o && o->n) df__gk_binary_launch(c, DF__B_ADD, x->dtype, &bc, x->data, b->data, o->data);
}
static void df__gk_bias_add_grad(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int nchw = !strcmp(df__attr_s(c->node, "data_format"), "NCHW");
    if (x->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAddGrad: input must be at least 2-D"); return; }
    int axis = nchw && x->rank > 2 ? 1 : x->rank - 1;
    int64_t ch = x->dims[axis], before = 1, after = 1;
    for (int d = 0; d < axis; d++) before *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) after *= x->dims[d];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 1, &ch);
    if (!o || !o->n) return;
    if (after == 1) { df_cuda_reduce(DF__GPU(c), DF__R_SUM, x->dtype, x->data, o->data, 1, before, ch, c->st); return; }
    int64_t mid[2] = {before, ch};
    df_tensor *tmp = df__gk_scratch(c, x->dtype, 2, mid);
    if (!tmp) return;
    if (!df_cuda_reduce(DF__GPU(c), DF__R_SUM, x->dtype, x->data, tmp->data, before * ch, after, 1, c->st))
        df_cuda_reduce(DF__GPU(c), DF__R_SUM, x->dtype, tmp->data, o->data, 1, before, ch, c->st);
    df_tensor_release(tmp);
}

/* Sum, Mean, Max, Min, Prod: one [outer, red, inner] pass per run of reduced axes, last first. */
static void df__gk_reduce(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int code = c->node->op->code, keep = df__attr_b(c->node, "keep_dims", 0);
    unsigned mask;
    if (df__norm_axes(c->node, c->in[1], x->rank, &mask, c->st)) return;
    df__shape os;
    df__reduced_shape(x->rank, x->dims, mask, keep, &os);
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o || !o->n) return;
    /* runs of dims: sizes and whether reduced, size-1 dims dropped */
    int64_t sz[DF_MAX_RANK];
    int red[DF_MAX_RANK], r = 0;
    for (int d = 0; d < x->rank; d++) {
        int rd = mask >> d & 1u;
        if (x->dims[d] == 1) continue;
        if (r && red[r - 1] == rd) sz[r - 1] *= x->dims[d];
        else { sz[r] = x->dims[d]; red[r++] = rd; }
    }
    int runs = 0;
    for (int k = 0; k < r; k++) runs += red[k];
    if (runs == 0) {     /* nothing really reduced: a copy (or, for an empty tensor, the identities) */
        int64_t total = 1;
        for (int k = 0; k < r; k++) total *= sz[k];
        df_cuda_reduce(DF__GPU(c), code, x->dtype, x->data, o->data, total, 1, 1, c->st);
        return;
    }
    const void *src = x->data;
    df_tensor *cur = NULL;
    for (int k = r - 1; k >= 0 && !c->st->code; k--) {
        if (!red[k]) continue;
        int64_t outer = 1, inner = 1;
        for (int j = 0; j < k; j++) outer *= sz[j];
        for (int j = k + 1; j < r; j++) inner *= sz[j];
        runs--;
        void *dst;
        df_tensor *next = NULL;
        if (runs == 0) dst = o->data;
        else {
            int64_t n = outer * inner;
            if (!(next = df__gk_scratch(c, x->dtype, 1, &n))) break;
            dst = next->data;
        }
        df_cuda_reduce(DF__GPU(c), code, x->dtype, src, dst, outer, sz[k], inner, c->st);
        df_tensor_release(cur);
        cur = next;
        src = dst;
        sz[k] = 1;
    }
    df_tensor_release(cur);
}
static void df__gk_argmax(df__kctx *c) {
    const df_tensor *x = c->in[0], *dim = c->in[1];
    if (!df__is_int_tensor(dim) || dim->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "dimension must be a scalar"); return; }
    int64_t a = df__int_at(dim, 0);
    if (a < -x->rank || a >= x->rank || x->rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected dimension in the range [%d, %d), but got %lld", -x->rank, x->rank, (long long)a); return; }
    if (a < 0) a += x->rank;
    if (x->dims[a] == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Reduction axis %lld is empty in shape with %lld elements", (long long)a, (long long)x->n); return; }
    int64_t dims[DF_MAX_RANK], outer = 1, inner = 1;
    int r = 0;
    for (int d = 0; d < x->rank; d++) if (d != a) dims[r++] = x->dims[d];
    for (int d = 0; d < a; d++) outer *= x->dims[d];
    for (int d = (int)a + 1; d < x->rank; d++) inner *= x->dims[d];
    df_dtype ot = df__attr_type(c->node, "output_type");
    df_tensor *o = df__k_alloc(c, 0, ot, r, dims);
    if (o && o->n) df_cuda_argmax(DF__GPU(c), x->dtype, x->data, ot, o->data, outer, x->dims[a], inner, c->node->op->code, c->st);
}

static int df__gk_tf32(df__kctx *c) { return df__step_tf32(c->step); }
static void df__gk_matmul(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ta = df__attr_b(c->node, "transpose_a", 0), tb = df__attr_b(c->node, "transpose_b", 0);
    if (a->rank != 2 || b->rank != 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "In[0] and In[1] must be matrices"); return; }
    int64_t m = a->dims[ta], k = a->dims[1 - ta], k2 = b->dims[tb], n = b->dims[1 - tb];
    if (k != k2) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: [%lld,%lld], In[1]: [%lld,%lld]",
                  (long long)a->dims[0], (long long)a->dims[1], (long long)b->dims[0], (long long)b->dims[1]);
        return;
    }
    int64_t dims[2] = {m, n};
    df_tensor *o = df__k_alloc(c, 0, a->dtype, 2, dims);
    if (o && o->n) df_cuda_gemm(DF__GPU(c), a->dtype, ta, tb, m, n, k, a->data, a->dims[1], 0, b->data, b->dims[1], 0,
                                o->data, n, 0, 1, df__gk_tf32(c), c->st);
}
static void df__gk_bmm(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ta = df__attr_b(c->node, "adj_x", 0), tb = df__attr_b(c->node, "adj_y", 0);
    if (a->rank < 2 || b->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BatchMatMul: inputs must be at least 2-D"); return; }
    int ra = a->rank, rb = b->rank;
    int64_t m = a->dims[ra - 2 + ta], k = a->dims[ra - 1 - ta], k2 = b->dims[rb - 2 + tb], n = b->dims[rb - 1 - tb];
    df__bcast bc;
    if (k != k2 || !df__broadcast(ra - 2, a->dims, rb - 2, b->dims, &bc)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "BatchMatMul: shapes do not match (inner %lld vs %lld, or batch dims)", (long long)k, (long long)k2);
        return;
    }
    int64_t dims[DF_MAX_RANK], batch = 1;
    for (int d = 0; d < bc.rank; d++) { dims[d] = bc.dims[d]; batch *= bc.dims[d]; }
    dims[bc.rank] = m; dims[bc.rank + 1] = n;
    df_tensor *o = df__k_alloc(c, 0, a->dtype, bc.rank + 2, dims);
    if (!o || !o->n) return;
    int64_t na = 1, nb = 1, ma = a->dims[ra - 2] * a->dims[ra - 1], mb = b->dims[rb - 2] * b->dims[rb - 1];
    for (int d = 0; d < ra - 2; d++) na *= a->dims[d];
    for (int d = 0; d < rb - 2; d++) nb *= b->dims[d];
    size_t es = df_dtype_size(a->dtype);
    if ((na == batch || na == 1) && (nb == batch || nb == 1)) {   /* one strided-batched call */
        df_cuda_gemm(DF__GPU(c), a->dtype, ta, tb, m, n, k, a->data, a->dims[ra - 1], na == 1 ? 0 : ma, b->data, b->dims[rb - 1],
                     nb == 1 ? 0 : mb, o->data, n, m * n, batch, df__gk_tf32(c), c->st);
        return;
    }
    int64_t idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;     /* general broadcasting: one product per batch */
    for (int64_t i = 0; i < batch && !c->st->code; i++) {
        df_cuda_gemm(DF__GPU(c), a->dtype, ta, tb, m, n, k, (const char *)a->data + (size_t)(oa * ma) * es, a->dims[ra - 1], 0,
                     (const char *)b->data + (size_t)(ob * mb) * es, b->dims[rb - 1], 0, (char *)o->data + (size_t)(i * m * n) * es,
                     n, 0, 1, df__gk_tf32(c), c->st);
        for (int d = bc.rank - 1; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}

static void df__gk_softmax(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must have >= 1 dimension, got rank 0"); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, x->dims);
    int64_t cols = x->dims[x->rank - 1];
    if (o && o->n) df_cuda_softmax(DF__GPU(c), x->dtype, x->data, o->data, o->n / cols, cols, c->node->op->code, c->st);
}
static void df__gk_xent(df__kctx *c) {
    const df_tensor *f = c->in[0], *l = c->in[1];
    int sparse = c->node->op->code;
    if (f->rank != 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must be 2-D, but got shape of rank %d", f->rank); return; }
    int64_t b = f->dims[0], k = f->dims[1];
    if (sparse ? (l->rank != 1 || l->dims[0] != b) : (l->rank != 2 || l->dims[0] != b || l->dims[1] != k)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits and labels must have matching shapes (batch %lld)", (long long)b);
        return;
    }
    df_tensor *loss = df__k_alloc(c, 0, f->dtype, 1, &b);
    df_tensor *bp = loss ? df__k_alloc_like(c, 1, f->dtype, f) : NULL;
    if (bp && b) df_cuda_xent(DF__GPU(c), f->dtype, f->data, l->data, l->dtype, loss->data, bp->data, b, k, c->st);
}
static void df__gk_cast(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_dtype to = df__attr_type(c->node, "DstT");
    if (to == x->dtype) { df__k_forward(c, 0, 0); return; }
    df_tensor *o = df__k_alloc(c, 0, to, x->rank, x->dims);
    if (o && o->n) df_cuda_cast(DF__GPU(c), x->dtype, x->data, to, o->data, o->n, c->st);
}
/* Select: cond broadcasts NumPy-style (SelectV2), or (Select) a vector picks rows. */
static void df__gk_select(df__kctx *c) {
    const df_tensor *p = c->in[0], *x = c->in[1], *y = c->in[2];
    df__bcast xy, all;
    int rows = c->node->op->name[6] == 0 && p->rank == 1 && x->rank > 1;
    if (x->dtype != y->dtype || !df__broadcast(x->rank, x->dims, y->rank, y->dims, &xy) ||
        (!rows && !df__broadcast(p->rank, p->dims, xy.rank, xy.dims, &all)) || (rows && p->dims[0] != x->dims[0])) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: condition, t and e have incompatible shapes", c->node->op->name);
        return;
    }
    if (rows) {
        all.rank = xy.rank;
        memcpy(all.dims, xy.dims, sizeof all.dims);
        for (int d = 0; d < xy.rank; d++) all.sa[d] = d == 0 ? 1 : 0;
        memcpy(all.sb, xy.sa, sizeof all.sb);  /* unused */
    }
    /* strides of x and y over the final shape: xy's, shifted right by the extra leading dims */
    int64_t sx[DF_MAX_RANK], sy[DF_MAX_RANK];
    int shift = all.rank - xy.rank;
    for (int d = 0; d < all.rank; d++) {
        int e = d - shift;
        sx[d] = e < 0 || (xy.dims[e] == 1 && all.dims[d] != 1) ? 0 : xy.sa[e];
        sy[d] = e < 0 || (xy.dims[e] == 1 && all.dims[d] != 1) ? 0 : xy.sb[e];
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, all.rank, all.dims);
    if (!o || !o->n) return;
    int64_t one = 1, zero = 0;
    if (all.rank == 0) df_cuda_select(DF__GPU(c), df_dtype_size(x->dtype), 1, &one, p->data, &zero, x->data, &zero, y->data, &zero, o->data, c->st);
    else df_cuda_select(DF__GPU(c), df_dtype_size(x->dtype), all.rank, all.dims, p->data, all.sa, x->data, sx, y->data, sy, o->data, c->st);
}
static void df__gk_add_n(df__kctx *c) {
    const df_tensor *a = c->in[0];
    const void *ptrs[64];
    if (c->n_in > 64) { DF__KFAIL(c, DF_UNIMPLEMENTED, "AddN on a GPU takes at most 64 inputs, got %d", c->n_in); return; }
    for (int i = 0; i < c->n_in; i++) {
        const df_tensor *t = c->in[i];
        int same = t->rank == a->rank && t->dtype == a->dtype;
        for (int d = 0; same && d < a->rank; d++) same = t->dims[d] == a->dims[d];
        if (!same) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "AddN: all inputs must have the same shape and type (input %d differs)", i); return; }
        ptrs[i] = t->data;
    }
    df_tensor *o = df__k_alloc(c, 0, a->dtype, a->rank, a->dims);
    if (o && o->n) df_cuda_add_n(DF__GPU(c), a->dtype, c->n_in, ptrs, o->data, o->n, c->st);
}
/* A value of type t holding v, as bytes for df_cuda_fill. */
static int df__gk_scalar_bytes(df_dtype t, double v, unsigned char out[16]) {
    memset(out, 0, 16);
    switch (t) {
    case DF_FLOAT: { float f = (float)v; memcpy(out, &f, 4); return 1; }
    case DF_DOUBLE: memcpy(out, &v, 8); return 1;
    case DF_HALF: { uint16_t h = df_float_to_half((float)v); memcpy(out, &h, 2); return 1; }
    case DF_BFLOAT16: { uint16_t h = df_float_to_bfloat16((float)v); memcpy(out, &h, 2); return 1; }
    case DF_INT32: { int32_t i = (int32_t)v; memcpy(out, &i, 4); return 1; }
    case DF_INT64: { int64_t i = (int64_t)v; memcpy(out, &i, 8); return 1; }
    case DF_BOOL: case DF_UINT8: out[0] = (unsigned char)v; return 1;
    default: return 0;
    }
}
static void df__gk_zeros_like(df__kctx *c) {
    const df_tensor *x = c->in[0];
    unsigned char v[16];
    if (!df__gk_scalar_bytes(x->dtype, c->node->op->code ? 1 : 0, v)) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s on a GPU: no %s", c->node->op->name, df_dtype_name(x->dtype)); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, x->dims);
    if (o && o->n) df_cuda_fill(DF__GPU(c), o->data, o->n, df_dtype_size(x->dtype), v, c->st);
}
static void df__gk_fill(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "dims", c->st)) return;
    const df_tensor *v = c->in[1];
    if (v->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "value must be a scalar"); return; }
    df_tensor *o = df__k_alloc(c, 0, v->dtype, s.rank, s.dims);
    int64_t zero = 0, one = 1;
    if (o && o->n) df_cuda_strided_copy(DF__GPU(c), df_dtype_size(v->dtype), 1, &o->n, v->data, &zero, o->data, &one, c->st);
}
static void df__gk_transpose(df__kctx *c) {
    const df_tensor *x = c->in[0], *p = c->in[1];
    if (!df__is_int_tensor(p) || p->rank != 1 || p->n != x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "transpose expects a vector of size %d", x->rank); return; }
    int64_t dims[DF_MAX_RANK], is[DF_MAX_RANK], ss[DF_MAX_RANK], os[DF_MAX_RANK];
    unsigned seen = 0;
    df__gk_strides(x, is);
    for (int d = 0; d < x->rank; d++) {
        int64_t v = df__int_at(p, d);
        if (v < 0 || v >= x->rank || (seen >> v & 1u)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%lld is out of range or repeated in the permutation", (long long)v); return; }
        seen |= 1u << v;
        dims[d] = x->dims[v];
        ss[d] = is[v];
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, dims);
    if (!o || !o->n) return;
    df__gk_strides(o, os);
    if (x->rank == 0) df_cuda_memcpy_d2d(DF__GPU(c), o->data, x->data, o->nbytes, c->st);
    else df_cuda_strided_copy(DF__GPU(c), df_dtype_size(x->dtype), x->rank, dims, x->data, ss, o->data, os, c->st);
}
/* ConcatV2 and Pack: each input copied into its place in the output. */
static void df__gk_concat(df__kctx *c) {
    int pack = !strcmp(c->node->op->name, "Pack");
    int n = pack ? c->n_in : c->n_in - 1;
    const df_tensor *x0 = c->in[0];
    int64_t axis = pack ? df__attr_i(c->node, "axis", 0) : 0;
    int orank = pack ? x0->rank + 1 : x0->rank;
    if (!pack) {
        const df_tensor *ax = c->in[n];
        if (!df__is_int_tensor(ax) || ax->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat axis must be a scalar"); return; }
        axis = df__int_at(ax, 0);
    }
    if (axis < -orank || axis >= orank || orank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld", -orank, orank, (long long)axis); return; }
    if (axis < 0) axis += orank;
    int64_t dims[DF_MAX_RANK];
    for (int d = 0, e = 0; d < orank; d++) dims[d] = pack && d == axis ? n : x0->dims[e++];
    if (!pack) dims[axis] = 0;
    for (int i = 0; i < n; i++) {
        const df_tensor *t = c->in[i];
        int ok = t->rank == x0->rank && t->dtype == x0->dtype;
        for (int d = 0; ok && d < t->rank; d++) ok = pack ? t->dims[d] == x0->dims[d] : (d == axis || t->dims[d] == x0->dims[d]);
        if (!ok) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: input %d has an incompatible shape", c->node->op->name, i); return; }
        if (!pack) dims[axis] += t->dims[axis];
    }
    df_tensor *o = df__k_alloc(c, 0, x0->dtype, orank, dims);
    if (!o || !o->n) return;
    int64_t os[DF_MAX_RANK], off = 0;
    df__gk_strides(o, os);
    size_t es = df_dtype_size(x0->dtype);
    for (int i = 0; i < n && !c->st->code; i++) {
        const df_tensor *t = c->in[i];
        int64_t ts[DF_MAX_RANK], ds[DF_MAX_RANK], td[DF_MAX_RANK];
        int r = 0;
        df__gk_strides(t, ts);
        for (int d = 0, e = 0; d < orank; d++) {
            if (pack && d == axis) continue;
            td[r] = t->dims[e]; ds[r] = os[d]; ts[r] = ts[e]; r++; e++;
        }
        if (t->n) {
            int64_t one = 1, zero = 0;
            char *dst = (char *)o->data + (size_t)off * es;
            if (r == 0) df_cuda_strided_copy(DF__GPU(c), es, 1, &one, t->data, &zero, dst, &zero, c->st);
            else df_cuda_strided_copy(DF__GPU(c), es, r, td, t->data, ts, dst, ds, c->st);
        }
        off += pack ? os[axis] : t->dims[axis] * os[axis];
    }
}
/* Tile and BroadcastTo: reads at stride 0 along repeated dims. */
static void df__gk_tile(df__kctx *c) {
    const df_tensor *x = c->in[0], *m = c->in[1];
    int bcast = !strcmp(c->node->op->name, "BroadcastTo");
    int64_t dims[DF_MAX_RANK], idims[2 * DF_MAX_RANK], ss[2 * DF_MAX_RANK], ds[2 * DF_MAX_RANK], is[DF_MAX_RANK], os[DF_MAX_RANK];
    int orank = x->rank;
    if (!df__is_int_tensor(m) || m->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: the multiples or shape must be a vector", c->node->op->name); return; }
    if (bcast) {
        orank = (int)m->n;
        if (orank < x->rank || orank > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BroadcastTo: cannot broadcast rank %d to rank %d", x->rank, orank); return; }
        for (int d = 0; d < orank; d++) {
            dims[d] = df__int_at(m, d);
            int e = d - (orank - x->rank);
            if (dims[d] < 0 || (e >= 0 && x->dims[e] != dims[d] && x->dims[e] != 1)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BroadcastTo: incompatible shapes"); return; }
        }
    } else {
        if (m->n != x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected multiples argument to be a vector of length %d but got length %lld", x->rank, (long long)m->n); return; }
        for (int d = 0; d < x->rank; d++) {
            int64_t k = df__int_at(m, d);
            if (k < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", d, (long long)k); return; }
            dims[d] = x->dims[d] * k;
        }
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, orank, dims);
    if (!o || !o->n) return;
    df__gk_strides(x, is);
    df__gk_strides(o, os);
    int r = 0;
    for (int d = 0; d < orank; d++) {
        if (bcast) {
            int e = d - (orank - x->rank);
            idims[r] = dims[d]; ds[r] = os[d]; ss[r] = e < 0 || x->dims[e] != dims[d] ? 0 : is[e]; r++;
        } else {
            int64_t k = x->dims[d] ? dims[d] / x->dims[d] : 0;
            if (k != 1) { idims[r] = k; ds[r] = x->dims[d] * os[d]; ss[r] = 0; r++; }
            idims[r] = x->dims[d]; ds[r] = os[d]; ss[r] = is[d]; r++;
        }
    }
    if (r > DF_MAX_RANK) { DF__KFAIL(c, DF_UNIMPLEMENTED, "Tile on a GPU: at most %d tiled dimensions", DF_MAX_RANK / 2); return; }
    if (r == 0) { df_cuda_memcpy_d2d(DF__GPU(c), o->data, x->data, o->nbytes, c->st); return; }
    df_cuda_strided_copy(DF__GPU(c), df_dtype_size(x->dtype), r, idims, x->data, ss, o->data, ds, c->st);
}
static void df__gk_one_hot(df__kctx *c) {          /* depth, on and off in host memory */
    int64_t outer, d, inner;
    df_tensor *o = df__one_hot_prep(c, &outer, &d, &inner);
    if (o) df_cuda_one_hot(DF__GPU(c), df_dtype_size(o->dtype), c->in[0]->data, c->in[0]->dtype, o->data, outer, d, inner,
                           c->in[2]->data, c->in[3]->data, c->st);
}
static void df__gk_cumprod(df__kctx *c) {          /* axis in host memory */
    int64_t outer, len, inner;
    df_tensor *o = df__cumprod_prep(c, &outer, &len, &inner);
    if (o) df_cuda_cumprod(DF__GPU(c), o->dtype, c->in[0]->data, o->data, outer, len, inner, df__attr_b(c->node, "exclusive", 0),
                           df__attr_b(c->node, "reverse", 0), c->st);
}
/* With batch_dims b: params [batch dims, outer, axis, inner] and indices [batch dims, n_idx]
   (the dims after the batch ones flattened) go to df_cuda_gather_batch; an index out of range
   gives zeros (TensorFlow's GPU rule). */
static void df__gk_gather(df__kctx *c) {
    const df_tensor *p = c->in[0], *ix = c->in[1];
    int axis, batch;
    if (df__gather_axis(c->node, c->in[2], p->rank, &axis, c->st)) return;
    if (df__gather_batch_dims(c->node, p->dims, ix->rank, ix->dims, axis, &batch, c->st)) return;
    if (p->rank - 1 + ix->rank - batch > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Gather: result rank too large"); return; }
    int64_t dims[DF_MAX_RANK], n_batch = 1, outer = 1, inner = 1, n_idx = 1;
    int r = 0;
    for (int d = 0; d < axis; d++) dims[r++] = p->dims[d];
    for (int d = batch; d < ix->rank; d++) { dims[r++] = ix->dims[d]; n_idx *= ix->dims[d]; }
    for (int d = axis + 1; d < p->rank; d++) dims[r++] = p->dims[d];
    for (int d = 0; d < batch; d++) n_batch *= p->dims[d];
    for (int d = batch; d < axis; d++) outer *= p->dims[d];
    for (int d = axis + 1; d < p->rank; d++) inner *= p->dims[d];
    df_tensor *o = df__k_alloc(c, 0, p->dtype, r, dims);
    if (!o || !o->n) return;
    if (batch == 0)              /* batch_dims -rank(indices) is 0 too */
        df_cuda_gather(DF__GPU(c), df_dtype_size(p->dtype), p->data, ix->data, ix->dtype, o->data, outer, p->dims[axis], inner, n_idx, c->st);
    else
        df_cuda_gather_batch(DF__GPU(c), df_dtype_size(p->dtype), p->data, ix->data, ix->dtype, o->data, n_batch, outer, p->dims[axis],
                             inner, n_idx, c->st);
}
static void df__gk_segment_sum(df__kctx *c) {
    const df_tensor *x = c->in[0], *ids = c->in[1], *ns = c->in[2];
    if (!df__is_int_tensor(ns) || ns->n != 1 || df__int_at(ns, 0) < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_segments must be a non-negative scalar"); return; }
    int ok = ids->rank <= x->rank;
    for (int d = 0; ok && d < ids->rank; d++) ok = ids->dims[d] == x->dims[d];
    if (!ok) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "data.shape must start with segment_ids.shape"); return; }
    int64_t dims[DF_MAX_RANK], inner = 1;
    int r = 0;
    dims[r++] = df__int_at(ns, 0);
    for (int d = ids->rank; d < x->rank; d++) { dims[r++] = x->dims[d]; inner *= x->dims[d]; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, r, dims);
    if (o && o->n) df_cuda_segment_sum(DF__GPU(c), x->dtype, x->data, ids->data, ids->dtype, o->data, ids->n, inner, dims[0], c->st);
}
/* Made on the host by the CPU kernel's generator (TensorFlow's numbers) and copied up, so a node
   gives the same numbers on either device. */
static void df__gk_random(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "shape", c->st)) return;
    df_dtype t = df__attr_type(c->node, "dtype");
    df_tensor *o = df__k_alloc(c, 0, t, s.rank, s.dims);
    if (!o || !o->n) return;
    uint64_t seed = (uint64_t)df__attr_i(c->node, "seed", 0), seed2 = (uint64_t)df__attr_i(c->node, "seed2", 0);
    uint64_t skip = df__step_rng_next(c->step, c->node, (uint64_t)o->n * 256);   /* as the CPU kernel */
    size_t bytes = (size_t)o->n * df_dtype_size(t);
    void *host = malloc(bytes);
    if (!host) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "out of host memory for %lld random numbers", (long long)o->n); return; }
    df__random_fill(c->node->op->code, t, seed, seed2, skip, host, o->n);
    df_cuda_memcpy_h2d(DF__GPU(c), o->data, host, bytes, c->st);
    free(host);
}
/* The further random ops (src/kernels/random.c: RandomUniformInt, the stateless ops V1 and V2,
   Multinomial): the CPU kernel runs on the host with every argument in host memory (seeds,
   keys, counters, shapes: host-memory inputs), its outputs made in host memory, and each output
   the GPU keeps in device memory is copied up, so a node gives TensorFlow's numbers on either
   device. */
static void df__gk_on_host(df__kctx *c) {
    uint32_t keep = c->host_out;
    c->host_out = ~0u;
    c->node->op->kernels[DF__DEV_CPU].fn(c);
    c->host_out = keep;
    for (int i = 0; i < c->n_out && !c->st->code; i++) {
        df_tensor *h = c->out[i];
        if (!h || (keep >> DF__MIN(i, 31) & 1)) continue;
        df_tensor *d = df__to_device(c->dev, h, c->st);
        if (!d) return;
        c->out[i] = d;
        df_tensor_release(h);
    }
}

/* The further math ops of src/kernels/math.c (and Sin, Cos of extra.c): the op's code is
   dataflow.h's DF_CUDA_M_ code (the two enums share an order); computed in double and rounded
   once, as the CPU kernels. */
_Static_assert((int)DF__M_IS_FINITE == (int)DF_CUDA_M_IS_FINITE && (int)DF__M_CEIL == (int)DF_CUDA_M_CEIL &&
               (int)DF__M_ATAN2 == (int)DF_CUDA_M_ATAN2 &&
               (int)DF__M_RELU6_GRAD == (int)DF_CUDA_M_RELU6_GRAD, "math.c's op codes and dataflow.h's DF_CUDA_M_ codes differ");
static double df__gk_alpha(df__kctx *c) {
    const df__attr *a = df__node_attr(c->node, "alpha");
    return a && a->kind == DF__A_FLOAT ? a->u.f : 0.2f;
}
static void df__gk_math_unary(df__kctx *c) {
    const df_tensor *x = c->in[0];
    /* (by name: the CPU kernel pointer may be src/kernels/half.c's wrapper) */
    const char *name = c->node->op->name;
    int code = !strcmp(name, "Sin") ? DF_CUDA_M_SIN : !strcmp(name, "Cos") ? DF_CUDA_M_COS : c->node->op->code;
    int pred = code == DF_CUDA_M_IS_FINITE || code == DF_CUDA_M_IS_NAN || code == DF_CUDA_M_IS_INF;
    if (x->dtype != DF_FLOAT && x->dtype != DF_DOUBLE) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no GPU kernel for %s", c->node->op->name, df_dtype_name(x->dtype));
        return;
    }
    df_tensor *o = pred ? df__k_alloc(c, 0, DF_BOOL, x->rank, x->dims) : df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (o && o->n)
        df_cuda_math_unary(DF__GPU(c), code, x->dtype, x->data, o->data, o->n, code == DF_CUDA_M_LEAKY_RELU ? df__gk_alpha(c) : 0, c->st);
}
static void df__gk_math_binary(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int code = c->node->op->code;
    df__bcast bc;
    if (a->dtype != b->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: inputs of %s and %s", c->node->op->name, df_dtype_name(a->dtype), df_dtype_name(b->dtype)); return; }
    if (a->dtype != DF_FLOAT && a->dtype != DF_DOUBLE) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no GPU kernel for %s", c->node->op->name, df_dtype_name(a->dtype));
        return;
    }
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                  df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
        return;
    }
    df_tensor *o = df__k_alloc(c, 0, a->dtype, bc.rank, bc.dims);
    if (!o || !o->n) return;
    double alpha = code == DF_CUDA_M_LEAKY_RELU_GRAD ? df__gk_alpha(c) : 0;
    int64_t one = 1, zero = 0;
    if (bc.rank == 0) df_cuda_math_binary(DF__GPU(c), code, a->dtype, 1, &one, a->data, &zero, b->data, &zero, o->data, alpha, c->st);
    else df_cuda_math_binary(DF__GPU(c), code, a->dtype, bc.rank, bc.dims, a->data, bc.sa, b->data, bc.sb, o->data, alpha, c->st);
}

/* DepthwiseConv2dNative and its two backprops (NHWC), as the CPU kernels check them (the sizes
   in host memory); direct kernels, one thread per result element. code 0 forward, 1 input
   gradient, 2 filter gradient. */
static int df__gk_dw_geo(df__kctx *c, const int64_t *in, const int64_t *fd, df_cuda_conv *p) {
    const char *fmt = df__attr_s(c->node, "data_format");
    if (*fmt && strcmp(fmt, "NHWC")) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "Depthwise convolution on GPU is only supported for NHWC format here, got %s", fmt);
        return 0;
    }
    if (in[3] != fd[2]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld", (long long)in[3], (long long)fd[2]);
        return 0;
    }
    if (fd[0] == 0 || fd[1] == 0 || fd[3] == 0) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "filter must not have zero elements (i.e. all dimensions must be non-zero)");
        return 0;
    }
    df__conv_geo g;
    if (df__conv_setup(c->node, in, fd[0], fd[1], 0, &g, c->st)) return 0;
    df_cuda_conv q = {g.n, g.h, g.w, g.c, g.kh, g.kw, in[3] * fd[3], g.oh, g.ow, g.sh, g.sw, g.dh, g.dw, g.ph, g.pw};
    *p = q;
    return 1;
}
static int df__gk_dw_sizes(df__kctx *c, const df_tensor *t, const char *what, int64_t *v) {
    if (!df__is_int_tensor(t) || t->rank != 1 || t->n != 4) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be a 4-vector", what); return 0; }
    for (int i = 0; i < 4; i++) {
        v[i] = df__int_at(t, i);
        if (v[i] < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s has a negative entry", what); return 0; }
    }
    return 1;
}
static void df__gk_depthwise(df__kctx *c) {
    int which = !strcmp(c->node->op->name, "DepthwiseConv2dNative") ? 0 : !strcmp(c->node->op->name, "DepthwiseConv2dNativeBackpropInput") ? 1 : 2;
    int64_t xd[4], fd[4], od[4];
    const df_tensor *a = c->in[which == 1 ? 1 : 0], *b = c->in[which == 0 ? 1 : 2];
    if (which == 0) {
        if (a->rank != 4 || b->rank != 4) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "input and filter must be 4-dimensional, got ranks %d and %d", a->rank, b->rank);
            return;
        }
        memcpy(xd, a->dims, sizeof xd);
        memcpy(fd, b->dims, sizeof fd);
    } else if (which == 1) {
        if (!df__gk_dw_sizes(c, c->in[0], "input_sizes", xd)) return;
        if (a->rank != 4) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "filter must be 4-dimensional, got rank %d", a->rank); return; }
        memcpy(fd, a->dims, sizeof fd);
    } else {
        if (!df__gk_dw_sizes(c, c->in[1], "filter_sizes", fd)) return;
        if (a->rank != 4) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be 4-dimensional, got rank %d", a->rank); return; }
        memcpy(xd, a->dims, sizeof xd);
    }
    df_cuda_conv p;
    if (!df__gk_dw_geo(c, xd, fd, &p)) return;
    if (which && !(b->rank == 4 && b->dims[0] == p.n && b->dims[1] == p.oh && b->dims[2] == p.ow && b->dims[3] == p.oc)) {
        char s[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "out_backprop has shape %s; the depthwise convolution gives [%lld,%lld,%lld,%lld]",
                  df__dims_str(b->rank, b->dims, s, 96), (long long)p.n, (long long)p.oh, (long long)p.ow, (long long)p.oc);
        return;
    }
    od[0] = p.n; od[1] = p.oh; od[2] = p.ow; od[3] = p.oc;
    df_tensor *o = df__k_alloc(c, 0, b->dtype, 4, which == 0 ? od : which == 1 ? xd : fd);
    if (o && o->n) df_cuda_depthwise_conv2d(DF__GPU(c), which, b->dtype, &p, fd[3], a->data, b->data, o->data, c->st);
}

/* FusedBatchNorm, V2 and V3 forward on float x (is_training true or false), checked as the CPU
   kernel checks them; reserve_space_3 (V3) is a scalar 0, as TensorFlow's CPU kernel gives. */
static float df__gk_attr_f(const df_node *n, const char *name, float def) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_FLOAT ? a->u.f : def;
}
static int df__gk_bn_vec(df__kctx *c, const df_tensor *t, const char *what, const char *prefix, int64_t ch) {
    if (t->rank != 1) {
        char s[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be 1-dimensional%s", what, df__dims_str(t->rank, t->dims, s, 96));
        return 0;
    }
    if (t->dtype != DF_FLOAT) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no GPU kernel for %s %s", c->node->op->name, what, df_dtype_name(t->dtype)); return 0; }
    if (ch >= 0 && t->dims[0] != ch) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s%s must have the same number of elements as the channels of x, got %lld and %lld",
                  prefix, what, (long long)t->dims[0], (long long)ch);
        return 0;
    }
    return 1;
}
/* x (float, 4-D or 5-D) as [outer, c, inner] by data_format; 0 after a status. */
static int df__gk_bn_layout(df__kctx *c, const df_tensor *x, const char *what, int64_t *outer, int64_t *ch, int64_t *inner) {
    const char *fmt = df__attr_s(c->node, "data_format");
    int first = !strcmp(fmt, "NCHW") || !strcmp(fmt, "NCDHW");
    if (*fmt && !first && strcmp(fmt, "NHWC") && strcmp(fmt, "NDHWC")) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Invalid data format '%s'", fmt); return 0; }
    if (x->dtype != DF_FLOAT) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no GPU kernel for %s", c->node->op->name, df_dtype_name(x->dtype)); return 0; }
    if (x->rank != 4 && x->rank != 5) {
        char s[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be 4 or 5-dimensional%s", what, df__dims_str(x->rank, x->dims, s, 96));
        return 0;
    }
    int cax = first ? 1 : x->rank - 1;
    *ch = x->dims[cax]; *outer = 1; *inner = 1;
    for (int d = 0; d < x->rank; d++) if (d < cax) *outer *= x->dims[d]; else if (d > cax) *inner *= x->dims[d];
    return 1;
}
static void df__gk_batch_norm(df__kctx *c) {
    const df_tensor *x = c->in[0], *scale = c->in[1], *offset = c->in[2], *mean = c->in[3], *var = c->in[4];
    const df_node *n = c->node;
    int train = df__attr_b(n, "is_training", 1), v3 = c->n_out > 5;
    float eps = df__gk_attr_f(n, "epsilon", 1e-4f), factor = df__gk_attr_f(n, "exponential_avg_factor", 1.0f);
    int64_t outer, ch, inner;
    if (!df__gk_bn_layout(c, x, "input", &outer, &ch, &inner)) return;
    if (!df__gk_bn_vec(c, scale, "scale", "", ch) || !df__gk_bn_vec(c, offset, "offset", "", ch)) return;
    int use_running = !train || factor != 1.0f;
    const char *pre = train ? "When exponential_avg_factor != 1, " : "When is_training=false, ";
    if (!df__gk_bn_vec(c, mean, "mean", pre, use_running ? ch : -1) || !df__gk_bn_vec(c, var, "variance", pre, use_running ? ch : -1)) return;
    int64_t zero = 0;
    df_tensor *y = df__k_alloc(c, 0, DF_FLOAT, x->rank, x->dims), *bm = df__k_alloc(c, 1, DF_FLOAT, 1, &ch);
    df_tensor *bv = df__k_alloc(c, 2, DF_FLOAT, 1, &ch), *r1 = df__k_alloc(c, 3, DF_FLOAT, 1, &ch);
    df_tensor *r2 = df__k_alloc(c, 4, DF_FLOAT, 1, &ch), *r3 = v3 ? df__k_alloc(c, 5, DF_FLOAT, 0, &zero) : NULL;
    if (!y || !bm || !bv || !r1 || !r2 || (v3 && !r3)) return;
    if (r3 && df_cuda_fill(DF__GPU(c), r3->data, 1, sizeof(float), &(float){0}, c->st)) return;
    df_cuda_batch_norm(DF__GPU(c), train, (const float *)x->data, (const float *)scale->data, (const float *)offset->data,
                       use_running ? (const float *)mean->data : NULL, use_running ? (const float *)var->data : NULL,
                       (float *)y->data, (float *)bm->data, (float *)bv->data, (float *)r1->data, (float *)r2->data,
                       outer, ch, inner, eps, factor, c->st);
}

/* FusedBatchNormGrad, V2 and V3 on float x: from the saved mean and variance (reserve_space_1
   and 2), checked as the CPU kernel checks them; reserve_space_4 and 5 are empty. */
static void df__gk_batch_norm_grad(df__kctx *c) {
    const df_tensor *dy = c->in[0], *x = c->in[1], *scale = c->in[2], *mean = c->in[3], *var = c->in[4];
    const df_node *n = c->node;
    int train = df__attr_b(n, "is_training", 1);
    float eps = df__gk_attr_f(n, "epsilon", 1e-4f);
    int64_t outer, ch, inner;
    if (!df__gk_bn_layout(c, x, "x", &outer, &ch, &inner)) return;
    int same = dy->rank == x->rank && dy->dtype == x->dtype;
    for (int d = 0; same && d < x->rank; d++) same = dy->dims[d] == x->dims[d];
    if (!same) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "x and y_backprop must have same shape, but x has shape %s and y_backprop has shape %s",
                  df__dims_str(x->rank, x->dims, s1, 96), df__dims_str(dy->rank, dy->dims, s2, 96));
        return;
    }
    if (!df__gk_bn_vec(c, scale, "scale", "", ch) || !df__gk_bn_vec(c, mean, "reserve_space_1", "", ch) ||
        !df__gk_bn_vec(c, var, "reserve_space_2", "", ch)) return;
    int64_t zero = 0;
    df_tensor *dx = df__k_alloc(c, 0, DF_FLOAT, x->rank, x->dims), *ds = df__k_alloc(c, 1, DF_FLOAT, 1, &ch);
    df_tensor *db = df__k_alloc(c, 2, DF_FLOAT, 1, &ch), *r4 = df__k_alloc(c, 3, DF_FLOAT, 1, &zero);
    df_tensor *r5 = df__k_alloc(c, 4, DF_FLOAT, 1, &zero);
    if (!dx || !ds || !db || !r4 || !r5) return;
    df_cuda_batch_norm_grad(DF__GPU(c), train, (const float *)dy->data, (const float *)x->data, (const float *)scale->data,
                            (const float *)mean->data, (const float *)var->data, (float *)dx->data, (float *)ds->data,
                            (float *)db->data, outer, ch, inner, eps, c->st);
}

/* ApplyGradientDescent, ApplyMomentum, ApplyAdam: hyperparameters stay on the device. */
static void df__gk_apply(df__kctx *c) {
    int code = c->node->op->code;
    df__var *vars[3] = {NULL, NULL, NULL};
    df_tensor *vals[3] = {NULL, NULL, NULL};
    int nv = code + 1;
    static const int grad_of[3] = {2, 3, 9}, n_scalars[3] = {1, 2, 6};
    static const int scalar_at[3][6] = {{1}, {2, 4}, {3, 4, 5, 6, 7, 8}};   /* Momentum: lr, grad, momentum */
    const df_tensor *g = c->in[grad_of[code]];
    const void *scalars[6];
    for (int i = 0; i < n_scalars[code]; i++) {
        const df_tensor *t = c->in[scalar_at[code][i]];
        if (t->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input %d of %s must be a scalar", scalar_at[code][i], c->node->op->name); return; }
        if (t->dtype != g->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: hyperparameters must have the gradient's type", c->node->op->name); return; }
        scalars[i] = t->data;
    }
    if (!df__k_apply_lock(c, nv, vars, vals)) return;
    df_tensor *var = vals[0];
    int ok = df__k_apply_check(c, var, g, code == 0 ? "delta" : "grad");
    for (int i = 1; ok && i < nv; i++) ok = df__k_apply_check(c, var, vals[i], code == 1 ? "accum" : i == 1 ? "m" : "v");
    for (int i = 0; ok && i < nv; i++)
        if (vals[i]->dtype != g->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: variables and gradient differ in type", c->node->op->name); ok = 0; }
    if (ok && var->n)
        df_cuda_apply(DF__GPU(c), code, var->dtype, var->n, var->data, vals[1] ? vals[1]->data : NULL, vals[2] ? vals[2]->data : NULL,
                      g->data, scalars, df__attr_b(c->node, "use_nesterov", 0), c->st);
    df_tensor *keep = df_tensor_retain(var);
    for (int i = 0; i < nv; i++) df__spin_unlock(&vars[i]->lock);
    if (c->st->code) { df_tensor_release(keep); return; }
    c->out[0] = keep;
}

#endif /* DATAFLOW_CUDA */

/* In a build without DATAFLOW_CUDA the table is registered all the same, with the CPU kernels
   in place of the GPU ones (no GPU device exists there to run them): a master that places on
   its workers' GPUs (/job:worker/task:N/device:GPU:j) finds which ops a GPU runs and in which
   memory their arguments live, as a master built with CUDA does. */
#ifdef DATAFLOW_CUDA
#define DF__GKF(f) f
#else
#define DF__GKF(f) NULL
#endif
/* The GPU's kernels: host-memory arguments (bit i; HOST_LAST: the last input, ConcatV2's axis),
   the dtypes its device-memory arguments may have (0: any; integers and booleans always may),
   and the kernel (NULL: the CPU kernel, which reads no device memory: pass-through, views,
   shapes and control flow). Ops whose inputs and outputs are all integers or booleans also run
   on a GPU device, on the host (df__node_kernel); DF__GK_HOSTONLY marks ops that only do that. */
#define DF__GK_F ((1u << DF_FLOAT) | (1u << DF_DOUBLE))
#define DF__GK_FH (DF__GK_F | (1u << DF_HALF) | (1u << DF_BFLOAT16))
#define DF__GK_CAST (DF__GK_FH | (1u << DF_UINT8) | (1u << DF_INT8))
#define DF__GK_HOSTONLY (1u << DF_INT32)
#define DF__GK_HOST_LAST 0x80000000u
#define DF__GK_ALL_IN 0x7fffffffu        /* every input in host memory */
static const struct { const char *name; uint32_t host_in, host_out, types; df__kernel_fn fn; } df__gpu_kernels[] = {
    {"Const", 0, 0, 0, DF__GKF(df__gk_const)}, {"_GpuGraph", 0, 0, 0, DF__GKF(df__gk_gpu_graph)},
    {"Identity", 0, 0, 0, NULL}, {"IdentityN", 0, 0, 0, NULL}, {"StopGradient", 0, 0, 0, NULL},
    {"PlaceholderWithDefault", 0, 0, 0, NULL}, {"NoOp", 0, 0, 0, NULL}, {"ControlTrigger", 0, 0, 0, NULL},
    {"Enter", 0, 0, 0, NULL}, {"Exit", 0, 0, 0, NULL}, {"NextIteration", 0, 0, 0, NULL},
    {"Switch", 2, 0, 0, NULL}, {"Merge", 0, 2, 0, NULL}, {"LoopCond", 1, 1, 0, NULL},
    {"RefEnter", 0, 0, 0, NULL}, {"RefExit", 0, 0, 0, NULL}, {"RefNextIteration", 0, 0, 0, NULL},
    {"RefSwitch", 2, 0, 0, NULL}, {"RefMerge", 0, 2, 0, NULL}, {"RefIdentity", 0, 0, 0, NULL},
    {"Reshape", 2, 0, 0, NULL}, {"ExpandDims", 2, 0, 0, NULL}, {"Squeeze", 0, 0, 0, NULL},
    {"Shape", 0, 1, 0, NULL}, {"Size", 0, 1, 0, NULL}, {"Rank", 0, 1, 0, NULL},
    {"VariableV2", 0, 0, 0, NULL}, {"Assign", 0, 0, 0, NULL}, {"AssignAdd", 0, 0, DF__GK_F, NULL}, {"AssignSub", 0, 0, DF__GK_F, NULL},
    {"_Send", 0, 0, 0, NULL}, {"_Recv", 0, 0, 0, NULL}, {"_HostSend", ~0u, ~0u, 0, NULL}, {"_HostRecv", ~0u, ~0u, 0, NULL},
    {"StackV2", ~0u, ~0u, 0, NULL}, {"StackPushV2", 1, 0, 0, NULL}, {"StackPopV2", 1, 0, 0, NULL}, {"StackCloseV2", ~0u, ~0u, 0, NULL},
    {"LoopStackPush", 1, 0, 0, NULL}, {"LoopStackPop", 3, 0, 0, NULL},
    {"LoopStackPushN", 1, 0, 0, NULL}, {"LoopStackPopN", 3, 0, 0, NULL},
    {"SumAccumulator", ~0u, ~0u, 0, NULL}, {"SumAccumulatorAdd", 1, 0, DF__GK_F, NULL}, {"SumAccumulatorMulAdd", 1, 0, DF__GK_F, NULL}, {"SumAccumulatorRead", 1, 0, DF__GK_F, NULL},
    {"LoopIterationLess", ~0u, ~0u, DF__GK_HOSTONLY, NULL}, {"LoopCount", ~0u, ~0u, DF__GK_HOSTONLY, NULL},
    {"Range", 0, 0, DF__GK_HOSTONLY, NULL}, {"InvertPermutation", 0, 0, DF__GK_HOSTONLY, NULL},
    {"BroadcastGradientArgs", 0, 0, DF__GK_HOSTONLY, NULL}, {"ConcatOffset", 0, 0, DF__GK_HOSTONLY, NULL},
    {"LogicalAnd", 0, 0, DF__GK_HOSTONLY, NULL}, {"LogicalOr", 0, 0, DF__GK_HOSTONLY, NULL}, {"LogicalNot", 0, 0, DF__GK_HOSTONLY, NULL},
    {"AddV2", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Add", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Sub", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"Mul", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"RealDiv", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Div", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"Maximum", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Minimum", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Pow", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"FloorMod", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"FloorDiv", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"SquaredDifference", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Less", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"LessEqual", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Greater", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"GreaterEqual", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"Equal", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"NotEqual", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"ReluGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"TanhGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"SigmoidGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"SqrtGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)}, {"RsqrtGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"ReciprocalGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_binary)},
    {"Neg", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Square", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Abs", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)},
    {"Sign", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Relu", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Sqrt", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)},
    {"Rsqrt", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Exp", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Log", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)},
    {"Tanh", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Sigmoid", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)},
    {"Reciprocal", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)}, {"Floor", 0, 0, DF__GK_F, DF__GKF(df__gk_unary)},
    {"BiasAdd", 0, 0, DF__GK_F, DF__GKF(df__gk_bias_add)}, {"BiasAddGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_bias_add_grad)},
    {"Sum", 2, 0, DF__GK_F, DF__GKF(df__gk_reduce)}, {"Mean", 2, 0, DF__GK_F, DF__GKF(df__gk_reduce)}, {"Max", 2, 0, DF__GK_F, DF__GKF(df__gk_reduce)},
    {"Min", 2, 0, DF__GK_F, DF__GKF(df__gk_reduce)}, {"Prod", 2, 0, DF__GK_F, DF__GKF(df__gk_reduce)},
    {"ArgMax", 2, 0, DF__GK_F, DF__GKF(df__gk_argmax)}, {"ArgMin", 2, 0, DF__GK_F, DF__GKF(df__gk_argmax)},
    {"MatMul", 0, 0, DF__GK_FH, DF__GKF(df__gk_matmul)}, {"BatchMatMulV2", 0, 0, DF__GK_FH, DF__GKF(df__gk_bmm)},
    {"Softmax", 0, 0, DF__GK_F, DF__GKF(df__gk_softmax)}, {"LogSoftmax", 0, 0, DF__GK_F, DF__GKF(df__gk_softmax)},
    {"SoftmaxCrossEntropyWithLogits", 0, 0, DF__GK_F, DF__GKF(df__gk_xent)},
    {"SparseSoftmaxCrossEntropyWithLogits", 0, 0, DF__GK_F, DF__GKF(df__gk_xent)},
    {"Cast", 0, 0, DF__GK_CAST, DF__GKF(df__gk_cast)}, {"Select", 0, 0, 0, DF__GKF(df__gk_select)}, {"SelectV2", 0, 0, 0, DF__GKF(df__gk_select)},
    {"AddN", 0, 0, DF__GK_F, DF__GKF(df__gk_add_n)}, {"ZerosLike", 0, 0, DF__GK_FH, DF__GKF(df__gk_zeros_like)},
    {"OnesLike", 0, 0, DF__GK_FH, DF__GKF(df__gk_zeros_like)}, {"Fill", 1, 0, 0, DF__GKF(df__gk_fill)},
    {"Transpose", 2, 0, 0, DF__GKF(df__gk_transpose)}, {"ConcatV2", DF__GK_HOST_LAST, 0, 0, DF__GKF(df__gk_concat)},
    {"Pack", 0, 0, 0, DF__GKF(df__gk_concat)}, {"Tile", 2, 0, 0, DF__GKF(df__gk_tile)}, {"BroadcastTo", 2, 0, 0, DF__GKF(df__gk_tile)},
    {"Slice", 6, 0, 0, NULL}, {"StridedSlice", 14, 0, 0, NULL}, {"StridedSliceGrad", 15, 0, 0, NULL},
    {"Pad", 2, 0, 0, NULL}, {"Unpack", 0, 0, 0, NULL},
    {"GatherV2", 4, 0, 0, DF__GKF(df__gk_gather)}, {"OneHot", 14, 0, 0, DF__GKF(df__gk_one_hot)}, {"Cumprod", 2, 0, DF__GK_F, DF__GKF(df__gk_cumprod)}, {"UnsortedSegmentSum", 4, 0, DF__GK_F, DF__GKF(df__gk_segment_sum)},
    {"RandomUniform", 1, 0, DF__GK_F, DF__GKF(df__gk_random)}, {"RandomStandardNormal", 1, 0, DF__GK_F, DF__GKF(df__gk_random)},
    {"TruncatedNormal", 1, 0, DF__GK_F, DF__GKF(df__gk_random)},
    {"ApplyGradientDescent", 0, 0, DF__GK_F, DF__GKF(df__gk_apply)}, {"ApplyMomentum", 0, 0, DF__GK_F, DF__GKF(df__gk_apply)},
    {"ApplyAdam", 0, 0, DF__GK_F, DF__GKF(df__gk_apply)},
    /* src/kernels/math.c and extra.c */
    {"IsFinite", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"IsNan", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"IsInf", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Softplus", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Softsign", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Elu", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Selu", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"LeakyRelu", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Relu6", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Log1p", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Expm1", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Erf", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Erfc", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Tan", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Asin", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Acos", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Atan", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Sinh", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Cosh", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Round", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Rint", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Ceil", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Sin", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)}, {"Cos", 0, 0, DF__GK_F, DF__GKF(df__gk_math_unary)},
    {"Atan2", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)}, {"TruncateDiv", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)},
    {"TruncateMod", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)}, {"EluGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)},
    {"SeluGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)}, {"SoftplusGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)},
    {"SoftsignGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)}, {"LeakyReluGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)},
    {"Relu6Grad", 0, 0, DF__GK_F, DF__GKF(df__gk_math_binary)},
    /* src/kernels/random.c: on the host, every input in host memory; float results copied up,
       integer ones (and the keys, counters, algorithms) left in host memory */
    {"RandomUniformInt", DF__GK_ALL_IN, ~0u, DF__GK_HOSTONLY, NULL},
    {"Multinomial", DF__GK_ALL_IN, ~0u, 0, NULL}, {"StatelessMultinomial", DF__GK_ALL_IN, ~0u, 0, NULL},
    {"StatelessRandomGetKeyCounter", DF__GK_ALL_IN, ~0u, 0, NULL},
    {"StatelessRandomGetKeyCounterAlg", DF__GK_ALL_IN, ~0u, 0, NULL}, {"StatelessRandomGetAlg", DF__GK_ALL_IN, ~0u, 0, NULL},
    {"StatelessRandomUniform", DF__GK_ALL_IN, 0, DF__GK_F, DF__GKF(df__gk_on_host)},
    {"StatelessRandomNormal", DF__GK_ALL_IN, 0, DF__GK_F, DF__GKF(df__gk_on_host)},
    {"StatelessTruncatedNormal", DF__GK_ALL_IN, 0, DF__GK_F, DF__GKF(df__gk_on_host)},
    {"StatelessRandomUniformFullInt", DF__GK_ALL_IN, ~0u, 0, NULL},
    {"StatelessRandomUniformInt", DF__GK_ALL_IN, ~0u, DF__GK_HOSTONLY, NULL},
    {"StatelessRandomUniformV2", DF__GK_ALL_IN, 0, DF__GK_F, DF__GKF(df__gk_on_host)},
    {"StatelessRandomNormalV2", DF__GK_ALL_IN, 0, DF__GK_F, DF__GKF(df__gk_on_host)},
    {"StatelessTruncatedNormalV2", DF__GK_ALL_IN, 0, DF__GK_F, DF__GKF(df__gk_on_host)},
    {"StatelessRandomUniformIntV2", DF__GK_ALL_IN, ~0u, 0, NULL},
    {"StatelessRandomUniformFullIntV2", DF__GK_ALL_IN, ~0u, 0, NULL},
    /* src/kernels/nn_extra.c (float x for the batch norms) */
    {"DepthwiseConv2dNative", 0, 0, DF__GK_F, DF__GKF(df__gk_depthwise)},
    {"DepthwiseConv2dNativeBackpropInput", 1, 0, DF__GK_F, DF__GKF(df__gk_depthwise)},
    {"DepthwiseConv2dNativeBackpropFilter", 2, 0, DF__GK_F, DF__GKF(df__gk_depthwise)},
    {"FusedBatchNorm", 0, 0, DF__GK_F, DF__GKF(df__gk_batch_norm)}, {"FusedBatchNormV2", 0, 0, DF__GK_F, DF__GKF(df__gk_batch_norm)},
    {"FusedBatchNormV3", 0, 0, DF__GK_F, DF__GKF(df__gk_batch_norm)}, {"FusedBatchNormGrad", 0, 0, DF__GK_F, DF__GKF(df__gk_batch_norm_grad)},
    {"FusedBatchNormGradV2", 0, 0, DF__GK_F, DF__GKF(df__gk_batch_norm_grad)}, {"FusedBatchNormGradV3", 0, 0, DF__GK_F, DF__GKF(df__gk_batch_norm_grad)},
    {"Conv2D", 0, 0, DF__GK_F, NULL}, {"Conv2DBackpropInput", 1, 0, DF__GK_F, NULL},
    {"Conv2DBackpropFilter", 2, 0, DF__GK_F, NULL}, {"MaxPool", 0, 0, DF__GK_F, NULL}, {"AvgPool", 0, 0, DF__GK_F, NULL},
    {"MaxPoolGrad", 0, 0, DF__GK_F, NULL}, {"AvgPoolGrad", 1, 0, DF__GK_F, NULL},
};
DF_PRIVATE void df__gpu_register(df__opdef *ops, int n_ops) {
    for (size_t i = 0; i < sizeof df__gpu_kernels / sizeof *df__gpu_kernels; i++)
        for (int k = 0; k < n_ops; k++) {
            if (strcmp(ops[k].name, df__gpu_kernels[i].name)) continue;
            df__kernel_def *d = &ops[k].kernels[DF__DEV_GPU];
            d->fn = df__gpu_kernels[i].fn ? df__gpu_kernels[i].fn : ops[k].kernels[DF__DEV_CPU].fn;
            d->host_inputs = df__gpu_kernels[i].host_in;
            d->host_outputs = df__gpu_kernels[i].host_out;
            d->types = df__gpu_kernels[i].types;
            break;
        }
}
