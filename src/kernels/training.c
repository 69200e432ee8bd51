/* ==========================================================================================
   src/kernels/training.c: CPU kernels: optimizer updates on variables             >>training
   Optimizer updates on variables: in place when no reader holds the value, else a fresh.
   tensor replaces it (readers keep what they read).
   ========================================================================================== */
/* The variables an Apply op updates (its first n inputs, refs): distinct, locked in address
   order (two ops over the same variables cannot deadlock), each value made private to the
   update (copied when a reader still holds it). Returns 0, with nothing locked, on error. */
DF_PRIVATE int df__k_apply_lock(df__kctx *c, int n, df__var **v, df_tensor **val) {
    df__var *order[3];
    for (int i = 0; i < n; i++) {
        v[i] = c->in[i] ? c->in[i]->ref : NULL;
        if (!v[i]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input %d of %s must be a variable", i, c->node->op->name); return 0; }
        for (int j = 0; j < i; j++)
            if (v[j] == v[i]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s needs distinct variables, got %s twice", c->node->op->name, v[i]->name); return 0; }
        order[i] = v[i];
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (uintptr_t)order[j] < (uintptr_t)order[j - 1]; j--) {
            df__var *t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    for (int i = 0; i < n; i++) df__spin_lock(&order[i]->lock);
    for (int i = 0; i < n; i++) {
        df_tensor *cur = v[i]->value;
        if (!cur) DF__KFAIL(c, DF_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v[i]->name);
        /* (acquire: a reader's last use of the data comes before our writes in place) */
        else if (__atomic_load_n(&cur->refs, __ATOMIC_ACQUIRE) != 1 || cur->base) {
            df_tensor *fresh = df__tensor_alloc(c->alloc, cur->dtype, cur->rank, cur->dims, c->st);
            if (fresh && df__copy_data(fresh, cur, c->st)) { df_tensor_release(fresh); fresh = NULL; }
            if (fresh) {
                v[i]->value = fresh;
                df_tensor_release(cur);
                cur = fresh;
            }
        }
        val[i] = cur;
        if (c->st->code) { for (int k = 0; k < n; k++) df__spin_unlock(&order[k]->lock); return 0; }
    }
    return 1;
}
DF_PRIVATE int df__k_apply_check(df__kctx *c, const df_tensor *var, const df_tensor *t, const char *what) {
    int same = t->rank == var->rank;
    for (int d = 0; same && d < t->rank; d++) same = t->dims[d] == var->dims[d];
    if (same) return 1;
    char s1[96], s2[96];
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "var and %s do not have the same shape: %s vs %s", what,
              df__dims_str(var->rank, var->dims, s1, 96), df__dims_str(t->rank, t->dims, s2, 96));
    return 0;
}
static double df__k_scalar_arg(df__kctx *c, int i, int *ok) {
    if (c->in[i]->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input %d of %s must be a scalar", i, c->node->op->name); *ok = 0; return 0; }
    return df__get_f64(c->in[i]->dtype, c->in[i]->data, 0);
}
DF_PRIVATE void df__k_apply(df__kctx *c) {
    int code = c->node->op->code, ok = 1;     /* 0 GradientDescent, 1 Momentum, 2 Adam */
    df__var *vars[3] = {NULL, NULL, NULL};
    df_tensor *vals[3] = {NULL, NULL, NULL};
    int nv = code + 1;
    df_tensor *out = c->need & 1 ? (df_tensor *)DF_MALLOC(sizeof *out) : NULL;
    if ((c->need & 1) && !out) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for a tensor header"); return; }
    if (!df__k_apply_lock(c, nv, vars, vals)) { DF_FREE(out); return; }
    df_tensor *var = vals[0], *acc = vals[1], *acc2 = vals[2];
    if (code == 0) {
        const df_tensor *d = c->in[2];
        double lr = df__k_scalar_arg(c, 1, &ok);
        if (ok && df__k_apply_check(c, var, d, "delta")) {
            if (var->dtype == DF_FLOAT) {
                float *w = (float *)var->data, a = (float)lr;
                const float *g = (const float *)d->data;
                for (int64_t i = 0; i < var->n; i++) w[i] -= a * g[i];
            } else {
                for (int64_t i = 0; i < var->n; i++)
                    df__set_from_f64(var->dtype, var->data, i, df__get_f64(var->dtype, var->data, i) - lr * df__get_f64(d->dtype, d->data, i));
            }
        }
    }
    else if (code == 1) {
        const df_tensor *g = c->in[3];
        double lr = df__k_scalar_arg(c, 2, &ok), mom = ok ? df__k_scalar_arg(c, 4, &ok) : 0;
        int nesterov = df__attr_b(c->node, "use_nesterov", 0);
        if (ok && df__k_apply_check(c, var, g, "grad") && df__k_apply_check(c, var, acc, "accum")) {
            for (int64_t i = 0; i < var->n; i++) {
                double gi = df__get_f64(g->dtype, g->data, i);
                double a = df__get_f64(acc->dtype, acc->data, i) * mom + gi;
                df__set_from_f64(acc->dtype, acc->data, i, a);
                double w = df__get_f64(var->dtype, var->data, i);
                w -= nesterov ? (gi * lr + a * mom * lr) : a * lr;
                df__set_from_f64(var->dtype, var->data, i, w);
            }
        }
    } else {
        const df_tensor *g = c->in[9];
        double b1p = df__k_scalar_arg(c, 3, &ok), b2p = ok ? df__k_scalar_arg(c, 4, &ok) : 0;
        double lr = ok ? df__k_scalar_arg(c, 5, &ok) : 0, b1 = ok ? df__k_scalar_arg(c, 6, &ok) : 0;
        double b2 = ok ? df__k_scalar_arg(c, 7, &ok) : 0, eps = ok ? df__k_scalar_arg(c, 8, &ok) : 0;
        int nesterov = df__attr_b(c->node, "use_nesterov", 0);
        if (ok && df__k_apply_check(c, var, g, "grad") && df__k_apply_check(c, var, acc, "m") &&
            df__k_apply_check(c, var, acc2, "v")) {
            double alpha = lr * sqrt(1 - b2p) / (1 - b1p);
            if (var->dtype == DF_FLOAT && !nesterov) {
                float *w = (float *)var->data, *m = (float *)acc->data, *v = (float *)acc2->data;
                const float *gg = (const float *)g->data;
                float fb1 = (float)b1, fb2 = (float)b2, fa = (float)alpha, fe = (float)eps;
                for (int64_t i = 0; i < var->n; i++) {
                    m[i] += (gg[i] - m[i]) * (1 - fb1);
                    v[i] += (gg[i] * gg[i] - v[i]) * (1 - fb2);
                    w[i] -= fa * m[i] / (sqrtf(v[i]) + fe);
                }
            } else {
                for (int64_t i = 0; i < var->n; i++) {
                    double gi = df__get_f64(g->dtype, g->data, i);
                    double m = df__get_f64(acc->dtype, acc->data, i), v = df__get_f64(acc2->dtype, acc2->data, i);
                    m += (gi - m) * (1 - b1);
                    v += (gi * gi - v) * (1 - b2);
                    df__set_from_f64(acc->dtype, acc->data, i, m);
                    df__set_from_f64(acc2->dtype, acc2->data, i, v);
                    double step = nesterov ? (m * b1 + (1 - b1) * gi) : m;
                    df__set_from_f64(var->dtype, var->data, i, df__get_f64(var->dtype, var->data, i) - alpha * step / (sqrt(v) + eps));
                }
            }
        }
    }
    if (c->st->code) { DF_FREE(out); out = NULL; }
    c->out[0] = df__ref_made(out, vars[0], vars[0]->value);   /* (under the lock: see df__ref_made) */
    for (int i = 0; i < nv; i++) df__spin_unlock(&vars[i]->lock);
}
DF_PRIVATE df_code df__sf_apply(df__shape_ctx *c) { *df__sc_out(c, 0) = c->in_shapes[0]; return DF_OK; }
