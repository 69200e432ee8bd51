/* ==========================================================================================
   src/kernels/resize.c: CPU kernels: image resizing (bilinear, nearest neighbor)      >>resize
   ResizeBilinear, ResizeBilinearGrad, ResizeNearestNeighbor and ResizeNearestNeighborGrad on
   NHWC images, with TensorFlow's coordinate mapping for every combination of align_corners
   and half_pixel_centers: the scale in float (in / out, or (in - 1) / (out - 1) when the
   corners align), a source coordinate of (x + 0.5) * scale - 0.5 (half pixel centers; the
   nearest-neighbor ops leave out the - 0.5 and floor) or x * scale, clamped into the image.
   ResizeBilinear reads every type as float and computes in float (its output is float), as
   TensorFlow does; its gradient accumulates float products in the image's type (float for
   half and bfloat16). Each output row is one unit of work, shared between the intra-op
   threads for large images; the gradients accumulate each output row from the rows that
   feed it in TensorFlow's order, so they share rows too. Channels go in blocks of 8 that
   the compiler vectorizes (restrict pointers; each rounding its own statement, so nothing
   is fused and the results match TensorFlow's scalar code). The gradient functions follow
   TensorFlow's image_grad.py.
   ========================================================================================== */

/* ---- coordinates ---- */
static float df__rs_scale(int64_t in, int64_t out, int align) {
    return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}
/* One statement per rounding, so that no compiler fuses them into a multiply-add. */
static float df__rs_coord(int64_t i, float scale, int hpc, int nn) {
    float v = (float)i;
    if (!hpc) { v = v * scale; return v; }
    v = v + 0.5f;
    v = v * scale;
    if (!nn) v = v - 0.5f;
    return v;
}
typedef struct { int64_t lo, hi; float lerp; } df__rs_w;
static void df__rs_weights(int64_t out, int64_t in, float scale, int hpc, df__rs_w *w) {
    for (int64_t i = 0; i < out; i++) {
        float v = df__rs_coord(i, scale, hpc, 0), f = floorf(v);
        int64_t lo = (int64_t)f, hi = (int64_t)ceilf(v);
        w[i].lo = lo < 0 ? 0 : lo;
        w[i].hi = hi > in - 1 ? in - 1 : hi;
        w[i].lerp = v - f;
    }
}
static void df__rs_nn_index(int64_t out, int64_t in, float scale, int hpc, int align, int64_t *idx) {
    for (int64_t i = 0; i < out; i++) {
        float v = df__rs_coord(i, scale, hpc, 1);
        int64_t k = align ? (int64_t)roundf(v) : (int64_t)floorf(v);
        if (k > in - 1) k = in - 1;
        if (hpc && k < 0) k = 0;
        idx[i] = k;
    }
}

/* ---- validation (TensorFlow's ImageResizerState wording) ---- */
static void df__rs_dims_str(const df_tensor *t, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->rank && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ",%lld" : "%lld", (long long)t->dims[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
}
static int df__rs_hpc_align(df__kctx *c, int *align, int *hpc) {
    *align = df__attr_b(c->node, "align_corners", 0);
    *hpc = df__attr_b(c->node, "half_pixel_centers", 0);
    if (*align && *hpc) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "If half_pixel_centers is True, align_corners must be False.");
        return 0;
    }
    return 1;
}
/* The size input: a 1-D int32 pair; positive (what: the message for a non-positive one). */
static int df__rs_size(df__kctx *c, const df_tensor *s, int64_t *oh, int64_t *ow, const char *what) {
    char buf[96];
    if (s->rank != 1) {
        df__rs_dims_str(s, buf, sizeof buf);
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "shape_t must be 1-dimensional%s", buf);
        return 0;
    }
    if (s->n != 2) {
        df__rs_dims_str(s, buf, sizeof buf);
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "shape_t must have two elements%s", buf);
        return 0;
    }
    *oh = df__int_at(s, 0);
    *ow = df__int_at(s, 1);
    if (*oh <= 0 || *ow <= 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s", what); return 0; }
    return 1;
}
static int df__rs_rank4(df__kctx *c, const df_tensor *t, const char *what) {
    if (t->rank == 4) return 1;
    char buf[96];
    df__rs_dims_str(t, buf, sizeof buf);
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s must be 4-dimensional%s", what, buf);
    return 0;
}
typedef struct {
    int64_t b, ih, iw, ch, oh, ow;
    float hs, ws;
    int align, hpc;
} df__rs_geo;
/* The forward ops' checks, in TensorFlow's order. */
static int df__rs_setup(df__kctx *c, df__rs_geo *g) {
    const df_tensor *x = c->in[0];
    if (!df__rs_hpc_align(c, &g->align, &g->hpc) || !df__rs_rank4(c, x, "input")) return 0;
    g->b = x->dims[0]; g->ih = x->dims[1]; g->iw = x->dims[2]; g->ch = x->dims[3];
    if (g->ch <= 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "image must have at least one channel"); return 0; }
    if (g->ih <= 0 || g->iw <= 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input image must be of non-zero size"); return 0; }
    if (g->ih >= INT32_MAX || g->iw >= INT32_MAX) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input sizes must be between 0 and max int32");
        return 0;
    }
    if (!df__rs_size(c, c->in[1], &g->oh, &g->ow, "output dimensions must be positive")) return 0;
    g->hs = df__rs_scale(g->ih, g->oh, g->align);
    g->ws = df__rs_scale(g->iw, g->ow, g->align);
    if (ceilf((float)(g->oh - 1) * g->hs) > (float)INT64_MAX) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input image height scale would cause an overflow");
        return 0;
    }
    if (ceilf((float)(g->ow - 1) * g->ws) > (float)INT32_MAX) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input image width scale would cause an overflow");
        return 0;
    }
    return 1;
}
/* Rows of work split between the intra-op threads when the whole is large. */
static void df__rs_share(df__kctx *c, int64_t rows, int64_t work, df__par_fn fn, void *arg) {
    if (work < 16384 || rows < 2) fn(arg, 0, rows);
    else df__parallel_for(c->ipool, rows, 1, df__ipool_threads(c->ipool), fn, arg);
}

/* ---- ResizeBilinear ---- */
typedef struct {
    const df__rs_geo *g;
    const df__rs_w *ys, *xs;
    df_dtype t;
    const void *in;
    float *out;
} df__rs_bl_job;
/* One output row per (batch, y): the four neighbours of each pixel read as float, mixed
   along x (tl + (tr - tl) * xl, each input row once and kept for the next output row that
   needs it), then along y (top + (bottom - top) * yl), in float: TensorFlow's operations in
   its order, so the same results. Channels and the vertical pass go in blocks of 8 that the
   compiler vectorizes. Downsampling in y (no input row serves two output rows), or without
   memory for the two mixed rows: pixel by pixel. */
#define DF__RS_LERP(LOAD, k)                                                                            \
    do {                                                                                                \
        float tl = LOAD(top[l + (k)]), tr = LOAD(top[rr + (k)]);                                        \
        float bl = LOAD(bot[l + (k)]), br = LOAD(bot[rr + (k)]);                                        \
        float d = tr - tl, tv, bv;                                                                      \
        d = d * xl;                                                                                     \
        tv = tl + d;                                                                                    \
        d = br - bl;                                                                                    \
        d = d * xl;                                                                                     \
        bv = bl + d;                                                                                    \
        d = bv - tv;                                                                                    \
        d = d * yl;                                                                                     \
        o[(k)] = tv + d;                                                                                \
    } while (0)
#define DF__RS_HLERP(LOAD, k)                                                                           \
    do {                                                                                                \
        float tl = LOAD(row[l + (k)]), tr = LOAD(row[rr + (k)]);                                        \
        float d = tr - tl;                                                                              \
        d = d * xl;                                                                                     \
        hx[(k)] = tl + d;                                                                               \
    } while (0)
#define DF__RS_BL_FN(SUF, T, LOAD)                                                                      \
    static void df__rs_bl_h_##SUF(const T *restrict row, float *restrict h, const df__rs_w *xs, int64_t ow, \
                                  int64_t C) {                                                          \
        for (int64_t x = 0; x < ow; x++) {                                                              \
            int64_t l = xs[x].lo * C, rr = xs[x].hi * C, k = 0;                                         \
            float xl = xs[x].lerp, *hx = h + x * C;                                                     \
            for (; k + 8 <= C; k += 8)                                                                  \
                for (int u = 0; u < 8; u++) DF__RS_HLERP(LOAD, k + u);                                  \
            for (; k < C; k++) DF__RS_HLERP(LOAD, k);                                                   \
        }                                                                                               \
    }                                                                                                   \
    static void df__rs_bl_px_##SUF(const T *restrict top, const T *restrict bot, float *restrict o,      \
                                   int64_t l, int64_t rr, float xl, float yl, int64_t C) {              \
        int64_t k = 0;                                                                                  \
        for (; k + 8 <= C; k += 8)                                                                      \
            for (int u = 0; u < 8; u++) DF__RS_LERP(LOAD, k + u);                                       \
        for (; k < C; k++) DF__RS_LERP(LOAD, k);                                                        \
    }                                                                                                   \
    static void df__rs_bl_rows_##SUF(const df__rs_bl_job *j, int64_t lo, int64_t hi) {                  \
        const df__rs_geo *g = j->g;                                                                     \
        int64_t C = g->ch, irow = g->iw * C, n = g->ow * C;                                            \
        /* rows kept only pay when output rows share input rows (upsampling in y) */                   \
        float *buf = g->oh >= g->ih ? (float *)malloc(sizeof(float) * 2 * (size_t)n) : NULL;           \
        int64_t key[2] = {-1, -1};                                                                      \
        for (int64_t r = lo; r < hi; r++) {                                                             \
            int64_t b = r / g->oh, y = r % g->oh;                                                       \
            const T *base = (const T *)j->in + b * g->ih * irow;                                        \
            float yl = j->ys[y].lerp, *o = j->out + r * n;                                              \
            if (buf) {                                                                                  \
                int64_t want[2] = {b * g->ih + j->ys[y].lo, b * g->ih + j->ys[y].hi};                   \
                int slot[2];                                                                            \
                for (int w = 0; w < 2; w++) {                                                           \
                    slot[w] = key[0] == want[w] ? 0 : key[1] == want[w] ? 1 : -1;                       \
                    if (slot[w] >= 0) continue;                                                         \
                    slot[w] = w == 1 ? 1 - slot[0] : key[0] == want[1] ? 1 : 0;                         \
                    key[slot[w]] = want[w];                                                             \
                    df__rs_bl_h_##SUF(base + (w ? j->ys[y].hi : j->ys[y].lo) * irow, buf + slot[w] * n, \
                                      j->xs, g->ow, C);                                                 \
                }                                                                                       \
                df__rs_bl_v(buf + slot[0] * n, buf + slot[1] * n, o, yl, n);                            \
                continue;                                                                               \
            }                                                                                           \
            const T *top = base + j->ys[y].lo * irow, *bot = base + j->ys[y].hi * irow;                 \
            for (int64_t x = 0; x < g->ow; x++, o += C) {                                               \
                int64_t l = j->xs[x].lo * C, rr = j->xs[x].hi * C;                                      \
                float xl = j->xs[x].lerp;                                                               \
                if (C >= 8) df__rs_bl_px_##SUF(top, bot, o, l, rr, xl, yl, C);                          \
                else for (int64_t k = 0; k < C; k++) DF__RS_LERP(LOAD, k);   /* few channels: inline */ \
            }                                                                                           \
        }                                                                                               \
        free(buf);                                                                                      \
    }
/* The vertical pass: top + (bottom - top) * yl over a row. */
static void df__rs_bl_v(const float *restrict t, const float *restrict b, float *restrict o, float yl, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++) { float d = b[i + u] - t[i + u]; d = d * yl; o[i + u] = t[i + u] + d; }
    for (; i < n; i++) { float d = b[i] - t[i]; d = d * yl; o[i] = t[i] + d; }
}
#define DF__RS_CAST(v) ((float)(v))
#define DF__RS_HALF(v) df_half_to_float(v)
#define DF__RS_BF16(v) df_bfloat16_to_float(v)
DF__RS_BL_FN(f32, float, DF__RS_CAST)
DF__RS_BL_FN(f64, double, DF__RS_CAST)
DF__RS_BL_FN(i8, int8_t, DF__RS_CAST)
DF__RS_BL_FN(u8, uint8_t, DF__RS_CAST)
DF__RS_BL_FN(i16, int16_t, DF__RS_CAST)
DF__RS_BL_FN(u16, uint16_t, DF__RS_CAST)
DF__RS_BL_FN(i32, int32_t, DF__RS_CAST)
DF__RS_BL_FN(i64, int64_t, DF__RS_CAST)
DF__RS_BL_FN(f16, uint16_t, DF__RS_HALF)
DF__RS_BL_FN(bf16, uint16_t, DF__RS_BF16)
static void df__rs_bl_share(void *arg, int64_t lo, int64_t hi) {
    const df__rs_bl_job *j = (const df__rs_bl_job *)arg;
    switch (j->t) {
    case DF_FLOAT: df__rs_bl_rows_f32(j, lo, hi); break;
    case DF_DOUBLE: df__rs_bl_rows_f64(j, lo, hi); break;
    case DF_INT8: df__rs_bl_rows_i8(j, lo, hi); break;
    case DF_UINT8: df__rs_bl_rows_u8(j, lo, hi); break;
    case DF_INT16: df__rs_bl_rows_i16(j, lo, hi); break;
    case DF_UINT16: df__rs_bl_rows_u16(j, lo, hi); break;
    case DF_INT32: df__rs_bl_rows_i32(j, lo, hi); break;
    case DF_INT64: df__rs_bl_rows_i64(j, lo, hi); break;
    case DF_HALF: df__rs_bl_rows_f16(j, lo, hi); break;
    case DF_BFLOAT16: df__rs_bl_rows_bf16(j, lo, hi); break;
    default: break;
    }
}
static int df__rs_bl_type(df_dtype t) {
    return t == DF_FLOAT || t == DF_DOUBLE || t == DF_INT8 || t == DF_UINT8 || t == DF_INT16 || t == DF_UINT16 ||
           t == DF_INT32 || t == DF_INT64 || t == DF_HALF || t == DF_BFLOAT16;
}
DF_PRIVATE void df__k_resize_bilinear(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__rs_geo g;
    if (!df__rs_bl_type(x->dtype)) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "ResizeBilinear has no kernel for %s", df_dtype_name(x->dtype));
        return;
    }
    if (!df__rs_setup(c, &g)) return;
    int64_t od[4] = {g.b, g.oh, g.ow, g.ch};
    df_tensor *o = df__k_alloc(c, 0, DF_FLOAT, 4, od);
    if (!o || !o->n) return;
    float *out = (float *)o->data;
    if (g.oh == g.ih && g.ow == g.iw) {                 /* the same size: the image as float */
        for (int64_t i = 0; i < o->n; i++)       /* (int64 straight to float: no double rounding) */
            out[i] = x->dtype == DF_INT64 ? (float)((const int64_t *)x->data)[i] : (float)df__get_f64(x->dtype, x->data, i);
        return;
    }
    df__rs_w *ys = (df__rs_w *)malloc(sizeof *ys * (size_t)(g.oh + g.ow));
    if (!ys) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    df__rs_w *xs = ys + g.oh;
    df__rs_weights(g.oh, g.ih, g.hs, g.hpc, ys);
    df__rs_weights(g.ow, g.iw, g.ws, g.hpc, xs);
    df__rs_bl_job j = {&g, ys, xs, x->dtype, x->data, out};
    df__rs_share(c, g.b * g.oh, o->n, df__rs_bl_share, &j);
    free(ys);
}

/* ---- ResizeBilinearGrad ---- */
typedef struct {
    const df__rs_geo *g;                 /* ih, iw: the original image; oh, ow: the gradient's */
    const df__rs_w *ys, *xs;
    const float *dy;
    void *acc;                           /* float or double, [b, ih, iw, ch] */
    int dbl;
} df__rs_blg_job;
/* Output row r = (batch, original row): every gradient row whose top or bottom neighbour it
   is, in TensorFlow's order (rows, then columns, then top-left, top-right, bottom-left,
   bottom-right), so each element sums its terms in the same order. The four corners go in
   four passes over the channels (left and right may be the same pixel), each in blocks of 8
   the compiler can vectorize. */
#define DF__RS_ACC(SUF, dst, wy, wx) df__rs_acc_##SUF(dst, dx, wy, wx, C)
#define DF__RS_ACC_FN(SUF, A)                                                                           \
    static void df__rs_acc_##SUF(A *restrict od, const float *restrict dx, float wy, float wx, int64_t C) { \
        int64_t k = 0;                                                                                  \
        for (; k + 8 <= C; k += 8)                                                                      \
            for (int u = 0; u < 8; u++) { float p = dx[k + u] * wy; p = p * wx; od[k + u] += (A)p; }   \
        for (; k < C; k++) { float p = dx[k] * wy; p = p * wx; od[k] += (A)p; }                        \
    }
DF__RS_ACC_FN(f32, float)
DF__RS_ACC_FN(f64, double)
#define DF__RS_BLG_FN(SUF, A)                                                                           \
    static void df__rs_blg_rows_##SUF(const df__rs_blg_job *j, int64_t lo, int64_t hi) {                \
        const df__rs_geo *g = j->g;                                                                     \
        int64_t C = g->ch;                                                                              \
        for (int64_t r = lo; r < hi; r++) {                                                             \
            int64_t b = r / g->ih, oy = r % g->ih;                                                      \
            A *o = (A *)j->acc + r * g->iw * C;                                                         \
            for (int64_t i = 0; i < g->iw * C; i++) o[i] = 0;                                           \
            for (int64_t y = 0; y < g->oh; y++) {                                                       \
                int t = j->ys[y].lo == oy, bt = j->ys[y].hi == oy;                                      \
                if (!t && !bt) continue;                                                                \
                float yl = j->ys[y].lerp, iyl = 1.0f - yl;                                              \
                const float *d = j->dy + ((b * g->oh + y) * g->ow) * C;                                 \
                for (int64_t x = 0; x < g->ow; x++) {                                                   \
                    A *ol = o + j->xs[x].lo * C, *orr = o + j->xs[x].hi * C;                            \
                    float xl = j->xs[x].lerp, ixl = 1.0f - xl;                                          \
                    const float *dx = d + x * C;                                               \
                    if (C < 8) {                 /* few channels: one pass, the same order */          \
                        for (int64_t k = 0; k < C; k++) {                                               \
                            float v = dx[k], p;                                                         \
                            if (t) {                                                                    \
                                p = v * iyl; p = p * ixl; ol[k] += (A)p;                                \
                                p = v * iyl; p = p * xl; orr[k] += (A)p;                                \
                            }                                                                           \
                            if (bt) {                                                                   \
                                p = v * yl; p = p * ixl; ol[k] += (A)p;                                 \
                                p = v * yl; p = p * xl; orr[k] += (A)p;                                 \
                            }                                                                           \
                        }                                                                               \
                        continue;                                                                       \
                    }                                                                                   \
                    if (t) { DF__RS_ACC(SUF, ol, iyl, ixl); DF__RS_ACC(SUF, orr, iyl, xl); }            \
                    if (bt) { DF__RS_ACC(SUF, ol, yl, ixl); DF__RS_ACC(SUF, orr, yl, xl); }             \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }
DF__RS_BLG_FN(f32, float)
DF__RS_BLG_FN(f64, double)
static void df__rs_blg_share(void *arg, int64_t lo, int64_t hi) {
    const df__rs_blg_job *j = (const df__rs_blg_job *)arg;
    if (j->dbl) df__rs_blg_rows_f64(j, lo, hi);
    else df__rs_blg_rows_f32(j, lo, hi);
}
DF_PRIVATE void df__k_resize_bilinear_grad(df__kctx *c) {
    const df_tensor *dy = c->in[0], *x = c->in[1];
    df__rs_geo g;
    df_dtype t = x->dtype;
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_HALF && t != DF_BFLOAT16) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "ResizeBilinearGrad has no kernel for %s", df_dtype_name(t));
        return;
    }
    if (!df__rs_hpc_align(c, &g.align, &g.hpc) || !df__rs_rank4(c, dy, "input_grad")) return;
    if (dy->dtype != DF_FLOAT) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input_grad must be of type float%s", df_dtype_name(dy->dtype));
        return;
    }
    g.b = dy->dims[0]; g.ch = dy->dims[3]; g.oh = dy->dims[1]; g.ow = dy->dims[2];
    if (g.oh <= 0 || g.ow <= 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "resized dimensions must be positive"); return; }
    if (!df__rs_rank4(c, x, "original_image")) return;
    g.ih = x->dims[1]; g.iw = x->dims[2];
    if (g.ih <= 0 || g.iw <= 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "original dimensions must be positive"); return; }
    if (g.ih >= INT32_MAX || g.iw >= INT32_MAX) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "original sizes must be between 0 and max int32");
        return;
    }
    g.hs = df__rs_scale(g.ih, g.oh, g.align);
    g.ws = df__rs_scale(g.iw, g.ow, g.align);
    int64_t od[4] = {g.b, g.ih, g.iw, g.ch};
    df_tensor *o = df__k_alloc(c, 0, t, 4, od);
    if (!o || !o->n) return;
    df__rs_w *ys = (df__rs_w *)malloc(sizeof *ys * (size_t)(g.oh + g.ow));
    float *tmp = t == DF_HALF || t == DF_BFLOAT16 ? (float *)malloc(sizeof(float) * (size_t)o->n) : NULL;
    if (!ys || ((t == DF_HALF || t == DF_BFLOAT16) && !tmp)) {
        free(ys); free(tmp);
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory");
        return;
    }
    df__rs_w *xs = ys + g.oh;
    df__rs_weights(g.oh, g.ih, g.hs, g.hpc, ys);
    df__rs_weights(g.ow, g.iw, g.ws, g.hpc, xs);
    df__rs_blg_job j = {&g, ys, xs, (const float *)dy->data, tmp ? (void *)tmp : o->data, t == DF_DOUBLE};
    df__rs_share(c, g.b * g.ih, dy->n * 2, df__rs_blg_share, &j);
    if (tmp) for (int64_t i = 0; i < o->n; i++) df__set_from_f64(t, o->data, i, tmp[i]);
    free(ys);
    free(tmp);
}

/* ---- ResizeNearestNeighbor ---- */
typedef struct {
    const df__rs_geo *g;
    const int64_t *ys, *xs;
    const char *in;
    char *out;
    size_t es;
} df__rs_nn_job;
static void df__rs_nn_share(void *arg, int64_t lo, int64_t hi) {
    const df__rs_nn_job *j = (const df__rs_nn_job *)arg;
    const df__rs_geo *g = j->g;
    size_t px = (size_t)g->ch * j->es;
    for (int64_t r = lo; r < hi; r++) {
        int64_t b = r / g->oh, y = r % g->oh;
        const char *src = j->in + (size_t)((b * g->ih + j->ys[y]) * g->iw) * px;
        char *dst = j->out + (size_t)(r * g->ow) * px;
        for (int64_t x = 0; x < g->ow; x++) memcpy(dst + (size_t)x * px, src + (size_t)j->xs[x] * px, px);
    }
}
static int df__rs_nn_type(df_dtype t) {
    return t == DF_FLOAT || t == DF_DOUBLE || t == DF_INT8 || t == DF_UINT8 || t == DF_INT16 || t == DF_UINT16 ||
           t == DF_INT32 || t == DF_INT64 || t == DF_HALF || t == DF_BFLOAT16;
}
DF_PRIVATE void df__k_resize_nearest(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__rs_geo g;
    if (!df__rs_nn_type(x->dtype)) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "ResizeNearestNeighbor has no kernel for %s", df_dtype_name(x->dtype));
        return;
    }
    if (!df__rs_setup(c, &g)) return;
    if (g.ih >= (1 << 24) || g.iw >= (1 << 24)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "nearest neighbor requires max height & width of 2^24");
        return;
    }
    int64_t od[4] = {g.b, g.oh, g.ow, g.ch};
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, od);
    if (!o || !o->n) return;
    int64_t *ys = (int64_t *)malloc(sizeof *ys * (size_t)(g.oh + g.ow));
    if (!ys) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    int64_t *xs = ys + g.oh;
    df__rs_nn_index(g.oh, g.ih, g.hs, g.hpc, g.align, ys);
    df__rs_nn_index(g.ow, g.iw, g.ws, g.hpc, g.align, xs);
    df__rs_nn_job j = {&g, ys, xs, (const char *)x->data, (char *)o->data, df_dtype_size(x->dtype)};
    df__rs_share(c, g.b * g.oh, o->n, df__rs_nn_share, &j);
    free(ys);
}

/* ---- ResizeNearestNeighborGrad ---- */
typedef struct {
    const df__rs_geo *g;                 /* ih, iw: the gradient's; oh, ow: the output's (size) */
    const int64_t *ys, *xs;              /* per gradient row / column: its output row / column */
    df_dtype t;
    const void *dy;
    void *out;
} df__rs_nng_job;
/* Output row r = (batch, row): the gradient rows that map to it, in order (the mapping is
   monotone), each column added where it maps. */
#define DF__RS_NNG_FN(SUF, T, ADD)                                                                      \
    static void df__rs_nng_px_##SUF(T *restrict op, const T *restrict dp, int64_t C) {                  \
        int64_t k = 0;                                                                                  \
        for (; k + 8 <= C; k += 8)                                                                      \
            for (int u = 0; u < 8; u++) ADD(op[k + u], dp[k + u]);                                      \
        for (; k < C; k++) ADD(op[k], dp[k]);                                                           \
    }                                                                                                   \
    static void df__rs_nng_rows_##SUF(const df__rs_nng_job *j, int64_t lo, int64_t hi) {                \
        const df__rs_geo *g = j->g;                                                                     \
        int64_t C = g->ch;                                                                              \
        for (int64_t r = lo; r < hi; r++) {                                                             \
            int64_t b = r / g->oh, oy = r % g->oh;                                                      \
            T *o = (T *)j->out + r * g->ow * C;                                                         \
            memset(o, 0, sizeof(T) * (size_t)(g->ow * C));                                              \
            for (int64_t y = 0; y < g->ih; y++) {                                                       \
                if (j->ys[y] != oy) continue;                                                           \
                const T *d = (const T *)j->dy + ((b * g->ih + y) * g->iw) * C;                          \
                for (int64_t x = 0; x < g->iw; x++) df__rs_nng_px_##SUF(o + j->xs[x] * C, d + x * C, C); \
            }                                                                                           \
        }                                                                                               \
    }
#define DF__RS_ADD(a, v) ((a) += (v))
#define DF__RS_ADD_I32(a, v) ((a) = (int32_t)((uint32_t)(a) + (uint32_t)(v)))
#define DF__RS_ADD_HALF(a, v) ((a) = df_float_to_half(df_half_to_float(a) + df_half_to_float(v)))
#define DF__RS_ADD_BF16(a, v) ((a) = df_float_to_bfloat16(df_bfloat16_to_float(a) + df_bfloat16_to_float(v)))
DF__RS_NNG_FN(f32, float, DF__RS_ADD)
DF__RS_NNG_FN(f64, double, DF__RS_ADD)
DF__RS_NNG_FN(u8, uint8_t, DF__RS_ADD)
DF__RS_NNG_FN(i8, int8_t, DF__RS_ADD)
DF__RS_NNG_FN(i32, int32_t, DF__RS_ADD_I32)
DF__RS_NNG_FN(f16, uint16_t, DF__RS_ADD_HALF)
DF__RS_NNG_FN(bf16, uint16_t, DF__RS_ADD_BF16)
static void df__rs_nng_share(void *arg, int64_t lo, int64_t hi) {
    const df__rs_nng_job *j = (const df__rs_nng_job *)arg;
    switch (j->t) {
    case DF_FLOAT: df__rs_nng_rows_f32(j, lo, hi); break;
    case DF_DOUBLE: df__rs_nng_rows_f64(j, lo, hi); break;
    case DF_UINT8: df__rs_nng_rows_u8(j, lo, hi); break;
    case DF_INT8: df__rs_nng_rows_i8(j, lo, hi); break;
    case DF_INT32: df__rs_nng_rows_i32(j, lo, hi); break;
    case DF_HALF: df__rs_nng_rows_f16(j, lo, hi); break;
    case DF_BFLOAT16: df__rs_nng_rows_bf16(j, lo, hi); break;
    default: break;
    }
}
DF_PRIVATE void df__k_resize_nearest_grad(df__kctx *c) {
    const df_tensor *dy = c->in[0];
    df_dtype t = dy->dtype;
    df__rs_geo g;
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_UINT8 && t != DF_INT8 && t != DF_INT32 && t != DF_HALF && t != DF_BFLOAT16) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "ResizeNearestNeighborGrad has no kernel for %s", df_dtype_name(t));
        return;
    }
    g.align = df__attr_b(c->node, "align_corners", 0);
    g.hpc = df__attr_b(c->node, "half_pixel_centers", 0);   /* (with align_corners too, as TensorFlow) */
    if (!df__rs_rank4(c, dy, "input") ||
        !df__rs_size(c, c->in[1], &g.oh, &g.ow, "shape_t's elements must be positive")) return;
    g.b = dy->dims[0]; g.ih = dy->dims[1]; g.iw = dy->dims[2]; g.ch = dy->dims[3];
    int64_t od[4] = {g.b, g.oh, g.ow, g.ch};
    df_tensor *o = df__k_alloc(c, 0, t, 4, od);
    if (!o || !o->n) return;
    if (!dy->n) { df__zero_data(o, c->st); return; }
    g.hs = df__rs_scale(g.oh, g.ih, g.align);
    g.ws = df__rs_scale(g.ow, g.iw, g.align);
    int64_t *ys = (int64_t *)malloc(sizeof *ys * (size_t)(g.ih + g.iw));
    if (!ys) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    int64_t *xs = ys + g.ih;
    df__rs_nn_index(g.ih, g.oh, g.hs, g.hpc, g.align, ys);
    df__rs_nn_index(g.iw, g.ow, g.ws, g.hpc, g.align, xs);
    df__rs_nng_job j = {&g, ys, xs, t, dy->data, o->data};
    df__rs_share(c, g.b * g.oh, dy->n + o->n, df__rs_nng_share, &j);
    free(ys);
}

/* ---- shape functions ---- */
static df_code df__rs_sf_rank(df__shape_ctx *c, int i, int rank) {
    int r = c->in_shapes[i].rank;
    if (r >= 0 && r != rank)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shape must be rank %d but is rank %d", rank, r);
    return DF_OK;
}
/* images [b, h, w, c] and size int32[2]: [b, size[0], size[1], c] (-1 where unknown). */
DF_PRIVATE df_code df__sf_resize(df__shape_ctx *c) {
    if (df__rs_sf_rank(c, 0, 4) || df__rs_sf_rank(c, 1, 1)) return c->st->code;
    const df__shape *x = &c->in_shapes[0], *s = &c->in_shapes[1];
    if (s->rank == 1 && s->dims[0] >= 0 && s->dims[0] != 2)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Dimension must be 2 but is %lld", (long long)s->dims[0]);
    df__shape *o = df__sc_out(c, 0);
    const df_tensor *sz = df__sc_const(c, 1);
    o->rank = 4;
    o->dims[0] = x->rank == 4 ? x->dims[0] : -1;
    o->dims[3] = x->rank == 4 ? x->dims[3] : -1;
    for (int i = 0; i < 2; i++) {
        int64_t v = sz && sz->n == 2 ? df__int_at(sz, i) : -1;
        o->dims[1 + i] = v > 0 ? v : -1;
    }
    return DF_OK;
}
/* ResizeBilinearGrad: the gradient's batch and channels, the original image's height and width. */
DF_PRIVATE df_code df__sf_resize_bilinear_grad(df__shape_ctx *c) {
    if (df__rs_sf_rank(c, 0, 4) || df__rs_sf_rank(c, 1, 4)) return c->st->code;
    const df__shape *d = &c->in_shapes[0], *x = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    o->rank = 4;
    for (int i = 0; i < 4; i++) {        /* (TensorFlow's: the original image's shape) */
        int64_t a = i == 0 || i == 3 ? (d->rank == 4 ? d->dims[i] : -1) : -1, b = x->rank == 4 ? x->dims[i] : -1;
        o->dims[i] = a >= 0 ? a : b;
    }
    return DF_OK;
}

/* ---- gradients (TensorFlow's image_grad.py) ---- */
static void df__rs_copy_attrs(df_op_builder *b, const df_node *n) {
    df_op_set_attr_bool(b, "align_corners", df__attr_b(n, "align_corners", 0));
    df_op_set_attr_bool(b, "half_pixel_centers", df__attr_b(n, "half_pixel_centers", 0));
}
/* ResizeBilinear: ResizeBilinearGrad(dy, images) for the image; none for size (nor for
   integer images, which TensorFlow's gradient op has no kernel for). */
DF_PRIVATE void df__g_resize_bilinear(df__gfn *c) {
    df_output x = c->n->inputs[0];
    df_dtype t = df_output_dtype(x);
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_HALF && t != DF_BFLOAT16) return;
    df_op_builder *b = df_op_new(c->g, "ResizeBilinearGrad", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, x);
    df__rs_copy_attrs(b, c->n);
    c->dx[0] = df__out(df_op_finish(b), 0);
}
/* ResizeNearestNeighbor: ResizeNearestNeighborGrad(dy, the image's height and width), a
   constant where they are known statically. */
DF_PRIVATE void df__g_resize_nearest(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = c->n->inputs[0], hw;
    const df__shape *s = &x.node->out_shapes[x.index];
    if (s->rank == 4 && s->dims[1] >= 0 && s->dims[2] >= 0) {
        int64_t two = 2;
        df_tensor *t = df_tensor_new(DF_INT32, 1, &two, NULL);
        if (!t) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
        ((int32_t *)t->data)[0] = (int32_t)s->dims[1];
        ((int32_t *)t->data)[1] = (int32_t)s->dims[2];
        hw = df_const(g, t);
        df_tensor_release(t);
    } else {
        df_op_builder *b = df_op_new(g, "Slice", NULL);
        df_op_add_input(b, df_shape(g, x));
        df_op_add_input(b, df_reshape(g, df_scalar_i32(g, 1), 1, (const int64_t[]){1}));
        df_op_add_input(b, df_reshape(g, df_scalar_i32(g, 2), 1, (const int64_t[]){1}));
        hw = df__out(df_op_finish(b), 0);
    }
    df_op_builder *b = df_op_new(g, "ResizeNearestNeighborGrad", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, hw);
    df__rs_copy_attrs(b, c->n);
    c->dx[0] = df__out(df_op_finish(b), 0);
}
