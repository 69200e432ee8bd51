/* ==========================================================================================
   src/kernels/nn.c: CPU kernels: softmax, cross-entropies, AddN, Select                 >>nn
   Softmax, LogSoftmax and the two cross-entropies (stable: max subtracted first)
   ========================================================================================== */
#ifdef DF__X86
/* One float32 row: o[j] = e^(x[j] - max); returns the sum of o (float64) and the max in *mx. */
DF__TARGET_AVX2 static double df__v8_exp_row(const float *x, float *o, int64_t n, float *mx) {
    __m256 m = _mm256_set1_ps(-INFINITY);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
    float lanes[8], best = -INFINITY;
    _mm256_storeu_ps(lanes, m);
    for (int i = 0; i < 8; i++) if (lanes[i] > best) best = lanes[i];
    for (; j < n; j++) if (x[j] > best) best = x[j];
    *mx = best;
    __m256 acc = _mm256_setzero_ps(), b = _mm256_set1_ps(best);
    for (j = 0; j + 8 <= n; j += 8) {
        __m256 e = df__v8_exp(_mm256_sub_ps(_mm256_loadu_ps(x + j), b));
        _mm256_storeu_ps(o + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    _mm256_storeu_ps(lanes, acc);
    double sum = 0;
    for (int i = 0; i < 8; i++) sum += lanes[i];
    if (j < n) {
        float in[8] = {0}, out[8];
        memcpy(in, x + j, (size_t)(n - j) * sizeof(float));
        _mm256_storeu_ps(out, df__v8_exp(_mm256_sub_ps(_mm256_loadu_ps(in), b)));
        for (int64_t i = 0; i < n - j; i++) { o[j + i] = out[i]; sum += out[i]; }
    }
    return sum;
}
/* The same on AVX-512: 16 lanes, the tail under a mask (its dead lanes count as -inf in the
   max and 0 in the sum). */
DF__TARGET_AVX512 static double df__v16_exp_row(const float *x, float *o, int64_t n, float *mx) {
    DF__ZT() m = DF__Z(set1_ps)(-INFINITY);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) m = DF__Z(max_ps)(m, DF__Z(loadu_ps)(x + j));
    uint32_t k = DF__ZTAIL(n - j);
    if (j < n) m = DF__Z(mask_mov_ps)(m, k, DF__Z(max_ps)(m, DF__ZX(maskz_loadu_ps)(k, x + j)));
    float lanes[16], best = -INFINITY;
    DF__Z(storeu_ps)(lanes, m);
    for (int i = 0; i < 16; i++) if (lanes[i] > best) best = lanes[i];
    *mx = best;
    DF__ZT() acc = DF__Z(setzero_ps)(), acc2 = acc, b = DF__Z(set1_ps)(best);
    for (j = 0; j + 32 <= n; j += 32) {
        DF__ZT() e = df__v16_exp(DF__Z(sub_ps)(DF__Z(loadu_ps)(x + j), b));
        DF__ZT() e2 = df__v16_exp(DF__Z(sub_ps)(DF__Z(loadu_ps)(x + j + 16), b));
        DF__Z(storeu_ps)(o + j, e);
        DF__Z(storeu_ps)(o + j + 16, e2);
        acc = DF__Z(add_ps)(acc, e);
        acc2 = DF__Z(add_ps)(acc2, e2);
    }
    for (; j + 16 <= n; j += 16) {
        DF__ZT() e = df__v16_exp(DF__Z(sub_ps)(DF__Z(loadu_ps)(x + j), b));
        DF__Z(storeu_ps)(o + j, e);
        acc = DF__Z(add_ps)(acc, e);
    }
    if (j < n) {
        DF__ZT() e = DF__Z(maskz_mov_ps)(k, df__v16_exp(DF__Z(sub_ps)(DF__ZX(maskz_loadu_ps)(k, x + j), b)));
        DF__ZX(mask_storeu_ps)(o + j, k, e);
        acc = DF__Z(add_ps)(acc, e);
    }
    float l1[16], l2[16];
    DF__Z(storeu_ps)(l1, acc);
    DF__Z(storeu_ps)(l2, acc2);
    double sum = 0;
    /* a row of at most 16 has no second vector and zeros past its n lanes: adding those leaves
       the sum as it is, so they are skipped (a short dependent chain: a 10-class row) */
    if (n <= 16) for (int64_t i = 0; i < n; i++) sum += (double)l1[i];
    else for (int i = 0; i < 16; i++) sum += (double)l1[i] + (double)l2[i];
    return sum;
}
/* o = o * inv (Softmax) or o = (x - mx) - lse (LogSoftmax), one row on AVX-512. */
DF__TARGET_AVX512 static void df__v16_softmax_finish(const float *x, float *o, int64_t n, float mx, float v, int logsm) {
    DF__ZT() vv = DF__Z(set1_ps)(v), mv = DF__Z(set1_ps)(mx);
    int64_t j = 0;
    if (logsm) {
        for (; j + 16 <= n; j += 16) DF__Z(storeu_ps)(o + j, DF__Z(sub_ps)(DF__Z(sub_ps)(DF__Z(loadu_ps)(x + j), mv), vv));
        if (j < n) { uint32_t k = DF__ZTAIL(n - j); DF__ZX(mask_storeu_ps)(o + j, k, DF__Z(sub_ps)(DF__Z(sub_ps)(DF__ZX(maskz_loadu_ps)(k, x + j), mv), vv)); }
    } else {
        for (; j + 16 <= n; j += 16) DF__Z(storeu_ps)(o + j, DF__Z(mul_ps)(DF__Z(loadu_ps)(o + j), vv));
        if (j < n) { uint32_t k = DF__ZTAIL(n - j); DF__ZX(mask_storeu_ps)(o + j, k, DF__Z(mul_ps)(DF__ZX(maskz_loadu_ps)(k, o + j), vv)); }
    }
}
#endif
static void df__softmax_rows(const df_tensor *x, df_tensor *o, int logsm) {
    int64_t cols = x->rank ? x->dims[x->rank - 1] : 1, rows = cols ? x->n / cols : 0;
#ifdef DF__X86
    if (x->dtype == DF_FLOAT && df__isa() == DF__ISA_AVX512) {
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = (const float *)x->data + r * cols;
            float *orow = (float *)o->data + r * cols, mx;
            double sum = df__v16_exp_row(xr, orow, cols, &mx);
            df__v16_softmax_finish(xr, orow, cols, mx, logsm ? (float)log(sum) : (float)(1.0 / sum), logsm);
        }
        return;
    }
    if (x->dtype == DF_FLOAT && df__vec_isa() == DF__ISA_AVX2) {
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = (const float *)x->data + r * cols;
            float *orow = (float *)o->data + r * cols, mx;
            double sum = df__v8_exp_row(xr, orow, cols, &mx);
            if (logsm) { float lse = (float)log(sum); for (int64_t j = 0; j < cols; j++) orow[j] = (xr[j] - mx) - lse; }
            else { float inv = (float)(1.0 / sum); for (int64_t j = 0; j < cols; j++) orow[j] *= inv; }
        }
        return;
    }
#endif
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++) { double v = df__get_f64(x->dtype, x->data, r * cols + j); if (v > mx) mx = v; }
        for (int64_t j = 0; j < cols; j++) sum += exp(df__get_f64(x->dtype, x->data, r * cols + j) - mx);
        double lse = log(sum);
        for (int64_t j = 0; j < cols; j++) {
            double z = df__get_f64(x->dtype, x->data, r * cols + j) - mx;
            df__set_from_f64(x->dtype, o->data, r * cols + j, logsm ? z - lse : exp(z - lse));
        }
    }
}
DF_PRIVATE void df__k_softmax(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must have >= 1 dimension, got rank 0"); return; }
    df_tensor *o = df__k_alloc_like(c, 0, x->dtype, x);
    if (o) df__softmax_rows(x, o, c->node->op->code);
}
DF_PRIVATE df_code df__sf_softmax(df__shape_ctx *c) {
    if (c->in_shapes[0].rank == 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits must have >= 1 dimension, got rank 0");
    return df__sf_same(c);
}
DF_PRIVATE df_code df__sf_xent(df__shape_ctx *c) {
    const df__shape *f = &c->in_shapes[0], *l = &c->in_shapes[1];
    int sparse = c->node->op->code;
    if (f->rank >= 0 && f->rank != 2) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits must be 2-D, but got shape of rank %d", f->rank);
    if (sparse && l->rank >= 0 && l->rank != 1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "labels must be 1-D, but got shape of rank %d", l->rank);
    if (!sparse && f->rank == 2 && l->rank >= 0 && (l->rank != 2 || (l->dims[0] >= 0 && f->dims[0] >= 0 && l->dims[0] != f->dims[0]) ||
                                                     (l->dims[1] >= 0 && f->dims[1] >= 0 && l->dims[1] != f->dims[1])))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits and labels must be the same size");
    if (sparse && f->rank == 2 && l->rank == 1 && f->dims[0] >= 0 && l->dims[0] >= 0 && f->dims[0] != l->dims[0])
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits and labels must have the same first dimension, got logits shape [%lld,%lld] and labels shape [%lld]",
                        (long long)f->dims[0], (long long)f->dims[1], (long long)l->dims[0]);
    df__shape *loss = df__sc_out(c, 0), *bp = df__sc_out(c, 1);
    loss->rank = 1; loss->dims[0] = f->rank == 2 ? f->dims[0] : -1;
    if (f->rank == 2) *bp = *f; else { bp->rank = 2; bp->dims[0] = bp->dims[1] = -1; }
    return DF_OK;
}
DF_PRIVATE void df__k_xent(df__kctx *c) {
    const df_tensor *f = c->in[0], *l = c->in[1];
    int sparse = c->node->op->code;
    if (f->rank != 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must be 2-D, but got shape of rank %d", f->rank); return; }
    int64_t b = f->dims[0], k = f->dims[1];
    if (sparse ? (l->rank != 1 || l->dims[0] != b) : (l->rank != 2 || l->dims[0] != b || l->dims[1] != k)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits and labels must have matching shapes (batch %lld)", (long long)b);
        return;
    }
    if (sparse)
        for (int64_t i = 0; i < b; i++) {
            int64_t y = df__int_at(l, i);
            if (y < 0 || y >= k) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Received a label value of %lld which is outside the valid range of [0, %lld).", (long long)y, (long long)k); return; }
        }
    df_tensor *loss = df__k_alloc(c, 0, f->dtype, 1, &b);
    df_tensor *bp = loss ? df__k_alloc_like(c, 1, f->dtype, f) : NULL;
    if (!bp) return;
#ifdef DF__X86
    if (f->dtype == DF_FLOAT && df__vec_isa() == DF__ISA_AVX2 && (sparse || l->dtype == DF_FLOAT)) {
        for (int64_t i = 0; i < b; i++) {
            const float *xr = (const float *)f->data + i * k;
            float *br = (float *)bp->data + i * k, mx;
            double sum = df__isa() == DF__ISA_AVX512 ? df__v16_exp_row(xr, br, k, &mx) : df__v8_exp_row(xr, br, k, &mx);
            double lse = log(sum), total = 0;
            float inv = (float)(1.0 / sum);
            if (sparse) {
                int64_t y = df__int_at(l, i);
                for (int64_t j = 0; j < k; j++) br[j] *= inv;
                br[y] -= 1;
                total = -((double)xr[y] - mx - lse);
            } else {
                const float *yr = (const float *)l->data + i * k;
                for (int64_t j = 0; j < k; j++) {
                    br[j] = br[j] * inv - yr[j];
                    if (yr[j] != 0) total -= (double)yr[j] * ((double)xr[j] - mx - lse);
                }
            }
            ((float *)loss->data)[i] = (float)total;
        }
        return;
    }
#endif
    for (int64_t i = 0; i < b; i++) {
        double mx = -INFINITY, sum = 0, total = 0;
        for (int64_t j = 0; j < k; j++) { double v = df__get_f64(f->dtype, f->data, i * k + j); if (v > mx) mx = v; }
        for (int64_t j = 0; j < k; j++) sum += exp(df__get_f64(f->dtype, f->data, i * k + j) - mx);
        double lse = log(sum);
        for (int64_t j = 0; j < k; j++) {
            double logp = df__get_f64(f->dtype, f->data, i * k + j) - mx - lse;
            double y = sparse ? (double)(df__int_at(l, i) == j) : df__get_f64(l->dtype, l->data, i * k + j);
            if (y != 0) total -= y * logp;
            df__set_from_f64(f->dtype, bp->data, i * k + j, exp(logp) - y);
        }
        df__set_from_f64(f->dtype, loss->data, i, total);
    }
}

/* ---- AddN, Select ---- */
DF_PRIVATE df_code df__sf_add_n(df__shape_ctx *c) {
    df__shape s = c->in_shapes[0];
    for (int i = 1; i < c->node->n_inputs; i++) {
        const df__shape *t = &c->in_shapes[i];
        if (s.rank >= 0 && t->rank >= 0 && !df__shapes_equal(&s, t)) {
            df__shape r = df__shape_relax(&s, t);
            for (int d = 0; d < r.rank; d++)
                if (r.dims[d] < 0 && s.dims[d] >= 0 && t->dims[d] >= 0)
                    return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "AddN: inputs must have the same shape (input %d differs)", i);
            if (s.rank != t->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "AddN: inputs must have the same rank (input %d differs)", i);
            s = r;
        }
    }
    *df__sc_out(c, 0) = s;
    return DF_OK;
}
DF_PRIVATE void df__k_add_n(df__kctx *c) {
    if (c->in[0]->dtype == DF_VARIANT) { df__k_variant_add_n(c); return; }   /* lists add element by element */
    const df_tensor *x0 = c->in[0];
    for (int i = 1; i < c->n_in; i++) {
        df__shape a = df__shape_of(x0), b = df__shape_of(c->in[i]);
        if (!df__shapes_equal(&a, &b)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "AddN: inputs must have the same shape (input %d differs)", i); return; }
    }
    df_tensor *o = df__k_alloc_like(c, 0, x0->dtype, x0);
    if (!o) return;
    df__row_fn add = df__binary_row(DF__B_ADD, x0->dtype);
    if (!add) { DF__KFAIL(c, DF_UNIMPLEMENTED, "AddN has no kernel for %s", df_dtype_name(x0->dtype)); return; }
    memcpy(o->data, x0->data, o->nbytes);
    for (int i = 1; i < c->n_in; i++) add(o->data, o->data, c->in[i]->data, o->n, 1, 1);
}
DF_PRIVATE df_code df__sf_select(df__shape_ctx *c) {
    const df__shape *p = &c->in_shapes[0], *a = &c->in_shapes[1], *b = &c->in_shapes[2];
    df__shape *o = df__sc_out(c, 0);
    if (p->rank < 0 || a->rank < 0 || b->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (!strcmp(c->node->op->name, "Select") && p->rank == 1 && a->rank > 1) {   /* row selection */
        if (!df__shapes_equal(a, b) || (p->dims[0] >= 0 && a->dims[0] >= 0 && p->dims[0] != a->dims[0]))
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Select: a vector condition must match the first "
                            "dimension of t and e, which must have the same shape");
        *o = *a;
        return DF_OK;
    }
    df__bcast bc1, bc2;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc1) || !df__broadcast(p->rank, p->dims, bc1.rank, bc1.dims, &bc2))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Incompatible shapes for %s: condition, t and e do not broadcast", c->node->op->name);
    o->rank = bc2.rank;
    memcpy(o->dims, bc2.dims, sizeof bc2.dims);
    return DF_OK;
}
DF_PRIVATE void df__k_select(df__kctx *c) {
    const df_tensor *p = c->in[0], *a = c->in[1], *b = c->in[2];
    df__bcast ab, pab, pa, pb;
    int v1 = !strcmp(c->node->op->name, "Select");
    /* Select (v1) with a vector condition picks whole rows of a matrix t/e. */
    if (v1 && p->rank == 1 && a->rank > 1 && p->dims[0] == a->dims[0]) {
        df__shape sa = df__shape_of(a), sb = df__shape_of(b);
        if (!df__shapes_equal(&sa, &sb)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "'t' and 'e' must have the same shape"); return; }
        df_tensor *o = df__k_alloc_like(c, 0, a->dtype, a);
        if (!o || !o->n) return;
        size_t row = o->nbytes / (size_t)a->dims[0];
        for (int64_t i = 0; i < a->dims[0]; i++)
            memcpy((char *)o->data + (size_t)i * row, (const char *)(((const uint8_t *)p->data)[i] ? a : b)->data + (size_t)i * row, row);
        return;
    }
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &ab) || !df__broadcast(p->rank, p->dims, ab.rank, ab.dims, &pab)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes for %s: condition, t and e do not broadcast", c->node->op->name);
        return;
    }
    df__broadcast(p->rank, p->dims, a->rank, a->dims, &pa);
    df__broadcast(p->rank, p->dims, b->rank, b->dims, &pb);
    df_tensor *o = df__k_alloc(c, 0, a->dtype, pab.rank, pab.dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(a->dtype);
    int r = pab.rank;
    /* strides of each operand against the output shape */
    int64_t sp[DF_MAX_RANK], sa2[DF_MAX_RANK], sb2[DF_MAX_RANK], idx[DF_MAX_RANK] = {0};
    const df_tensor *ops[3] = {p, a, b};
    int64_t *strides[3] = {sp, sa2, sb2};
    for (int k = 0; k < 3; k++) {
        int64_t s = 1;
        for (int d = r - 1; d >= 0; d--) {
            int id = d - (r - ops[k]->rank);
            int64_t dim = id >= 0 ? ops[k]->dims[id] : 1;
            strides[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    int64_t op_ = 0, oa = 0, ob = 0;
    for (int64_t i = 0; i < o->n; i++) {
        const void *src = ((const uint8_t *)p->data)[op_] ? (const char *)a->data + (size_t)oa * es : (const char *)b->data + (size_t)ob * es;
        memcpy((char *)o->data + (size_t)i * es, src, es);
        for (int d = r - 1; d >= 0; d--) {
            idx[d]++; op_ += sp[d]; oa += sa2[d]; ob += sb2[d];
            if (idx[d] < pab.dims[d]) break;
            op_ -= sp[d] * idx[d]; oa -= sa2[d] * idx[d]; ob -= sb2[d] * idx[d]; idx[d] = 0;
        }
    }
}
