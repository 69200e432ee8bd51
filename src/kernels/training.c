/* ==========================================================================================
   src/kernels/training.c: CPU kernels: optimizer updates on variables             >>training
   Optimizer updates on variables: in place when no reader holds the value, else a fresh.
   tensor replaces it (readers keep what they read).
   ========================================================================================== */
#ifdef DATAFLOW_CUDA   /* (the GPU's Apply kernels; the CPU's lock in src/kernels/resource.c) */
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
#endif
DF_PRIVATE int df__k_apply_check(df__kctx *c, const df_tensor *var, const df_tensor *t, const char *what) {
    int same = t->rank == var->rank;
    for (int d = 0; same && d < t->rank; d++) same = t->dims[d] == var->dims[d];
    if (same) return 1;
    char s1[96], s2[96];
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "var and %s do not have the same shape: %s vs %s", what,
              df__dims_str(var->rank, var->dims, s1, 96), df__dims_str(t->rank, t->dims, s2, 96));
    return 0;
}
/* ApplyGradientDescent, ApplyMomentum, ApplyAdam (code 0, 1, 2; the GPU's kernel reads the same
   codes): the shared update loops of src/kernels/resource.c, vectorised and split between the
   intra-op threads, with TensorFlow's arithmetic. */
DF_PRIVATE void df__k_apply(df__kctx *c) {
    static const int as_resource[3] = {DF__RA_GD, DF__RA_MOMENTUM, DF__RA_ADAM};
    df__resource_apply_run(c, as_resource[c->node->op->code]);
}
DF_PRIVATE df_code df__sf_apply(df__shape_ctx *c) { *df__sc_out(c, 0) = c->in_shapes[0]; return DF_OK; }
