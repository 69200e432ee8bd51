/* ==========================================================================================
   src/kernels/state.c: CPU kernels: variables and random numbers                     >>state
   Variables: the session keeps each variable's current tensor; updates swap it. VariableV2
   outputs the variable's handle (a ref), and so do Assign, AssignAdd and AssignSub (TF forwards
   the reference); consumers read the value when they run, so a control dependency on an
   Assign orders the read after it, as in TensorFlow.
   ========================================================================================== */

/* The value behind a ref (a new reference), or t itself (taken over) when it is no ref. */
/* Whether input i of op is a Ref(T) argument: its kernel gets the ref itself, not the value. */
DF_PRIVATE int df__ref_arg(const df__opdef *op, int i) {
    if (op->n_in == 1) return op->in[0].is_ref;     /* (RefMerge: every tensor of its one list) */
    for (int k = 0; k < op->n_in; k++) if (op->in[k].is_list) return 0;
    return i < op->n_in && op->in[i].is_ref;
}
DF_PRIVATE df_tensor *df__deref(df_tensor *t, const df_node *consumer, df_status *st) {
    if (!t->ref) return t;
    if (t->base) {                       /* an update's output: the value it made (df__ref_made) */
        df_tensor *made = df_tensor_retain(t->base);
        df_tensor_release(t);
        return made;
    }
    df__var *v = t->ref;
    df__spin_lock(&v->lock);
    df_tensor *value = df_tensor_retain(v->value);
    df__spin_unlock(&v->lock);
    if (!value) df__fail(st, consumer, DF_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v->name);
    df_tensor_release(t);
    return value;
}

/* What Assign, AssignAdd, AssignSub and the Apply ops output: the variable's reference, holding
   the value this update made. An op that takes a reference (RefSwitch, RefMerge, another
   Assign) acts on the variable through it, as in TensorFlow; a reader of a value gets the value
   this update made (df__deref), so that an update's output is its own result even while other
   runs update the variable at once (TensorFlow reads the variable when the reader runs, by
   then perhaps holding another run's update too). h: a header from DF_MALLOC, or NULL when
   nothing reads the output; fill it with v's lock held. Returns h. */
DF_PRIVATE df_tensor *df__ref_made(df_tensor *h, df__var *v, df_tensor *value) {
    if (!h) return NULL;
    memset(h, 0, sizeof *h);
    h->refs = 1;
    h->dtype = value->dtype;
    h->rank = value->rank;
    memcpy(h->dims, value->dims, sizeof h->dims);
    h->n = value->n;
    h->nbytes = value->nbytes;
    h->data = value->data;
    h->base = df_tensor_retain(value);
    h->ref = v;
    return h;
}

/* The VariableV2 behind a ref input (through Assign-family outputs, which are refs too). */
static const df_node *df__var_node(const df_node *n) {
    const df_node *v = n->inputs[0].node;
    for (int depth = 0; depth < 64 && strcmp(v->op->name, "VariableV2") && v->n_inputs > 0; depth++)
        v = v->inputs[0].node;
    return v;
}
DF_PRIVATE void df__k_variable(df__kctx *c) {
    df__var *v = df__step_var(c->step, c->node, c->st);
    if (!v) return;
    c->out[0] = df_tensor_retain(&v->handle);
}
DF_PRIVATE void df__k_assign(df__kctx *c) {
    const df_node *vn = df__var_node(c->node);
    /* The reference that arrived names the variable (through RefSwitch, RefMerge, ... it may be
       one of several); the graph walk is for a kernel run without one. */
    df__var *v = c->in[0] && c->in[0]->ref ? c->in[0]->ref : df__step_var(c->step, vn, c->st);
    if (!v) return;
    df_tensor *value = c->in[1];
    int code = c->node->op->code;   /* 0 Assign, 1 AssignAdd, 2 AssignSub */
    const df__attr *shape = df__node_attr(vn, "shape");
    if (code == 0 && df__attr_b(c->node, "validate_shape", 1) && shape && shape->u.shape.rank >= 0) {
        df__shape want, got = df__shape_of(value);
        want.rank = shape->u.shape.rank;
        memcpy(want.dims, shape->u.shape.dims, sizeof want.dims);
        df__shape relaxed = df__shape_relax(&want, &got);
        int ok = want.rank == got.rank;
        for (int d = 0; ok && d < want.rank; d++) if (want.dims[d] >= 0 && relaxed.dims[d] < 0) ok = 0;
        if (!ok) {
            char s1[96], s2[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Assign requires shapes of both tensors to match. lhs shape= %s rhs shape= %s",
                      df__dims_str(want.rank, want.dims, s1, 96), df__dims_str(got.rank, got.dims, s2, 96));
            return;
        }
    }
    df_tensor *out = c->need & 1 ? (df_tensor *)DF_MALLOC(sizeof *out) : NULL;
    if ((c->need & 1) && !out) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for a tensor header"); return; }
    df__spin_lock(&v->lock);
    if (code == 0) {
        df_tensor *old = v->value;
        v->value = df_tensor_retain(value);
        c->out[0] = df__ref_made(out, v, value);
        df__spin_unlock(&v->lock);
        df_tensor_release(old);
        return;
    }
    df_tensor *old = v->value;
    if (!old) {
        df__spin_unlock(&v->lock);
        DF_FREE(out);
        DF__KFAIL(c, DF_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v->name);
        return;
    }
    df__shape so = df__shape_of(old), sv = df__shape_of(value);
    if (!df__shapes_equal(&so, &sv)) {
        df__spin_unlock(&v->lock);
        DF_FREE(out);
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Must have the same shape: %s vs %s", df__dims_str(so.rank, so.dims, s1, 96), df__dims_str(sv.rank, sv.dims, s2, 96));
        return;
    }
    df_tensor *fresh = df__tensor_alloc(c->alloc, old->dtype, old->rank, old->dims, c->st);
    if (!fresh) { df__spin_unlock(&v->lock); DF_FREE(out); return; }
    if (df__add_data(code == 1 ? DF__B_ADD : DF__B_SUB, fresh, old, value, c->st)) {
        df__spin_unlock(&v->lock);
        df_tensor_release(fresh);
        DF_FREE(out);
        return;
    }
    v->value = fresh;
    c->out[0] = df__ref_made(out, v, fresh);     /* before unlocking: another update could free fresh */
    df__spin_unlock(&v->lock);
    df_tensor_release(old);
}
DF_PRIVATE df_code df__sf_variable(df__shape_ctx *c) {
    const df__attr *s = df__node_attr(c->node, "shape");
    df__shape *o = df__sc_out(c, 0);
    o->rank = s->u.shape.rank;
    memcpy(o->dims, s->u.shape.dims, sizeof o->dims);
    return DF_OK;
}
DF_PRIVATE df_code df__sf_assign(df__shape_ctx *c) {
    const df__shape *var = &c->in_shapes[0], *val = &c->in_shapes[1];
    int validate = c->node->op->code != 0 || df__attr_b(c->node, "validate_shape", 1);
    if (validate && var->rank >= 0 && val->rank >= 0) {
        df__shape r = df__shape_relax(var, val);
        int bad = var->rank != val->rank;
        for (int d = 0; !bad && d < r.rank; d++) if (r.dims[d] < 0 && var->dims[d] >= 0 && val->dims[d] >= 0) bad = 1;
        if (bad) {
            char s1[96], s2[96];
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shapes must be equal: %s vs. %s",
                            df__dims_str(var->rank, var->dims, s1, 96), df__dims_str(val->rank, val->dims, s2, 96));
        }
    }
    *df__sc_out(c, 0) = *val;
    return DF_OK;
}

/* ---- random numbers: the generator is in src/kernels/random.c ---- */
DF_PRIVATE df_code df__sf_random(df__shape_ctx *c) {
    const df_tensor *s = df__sc_const(c, 0);
    df__shape *o = df__sc_out(c, 0);
    if (!s) { *o = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, s, o, "shape", c->st);
}
DF_PRIVATE void df__k_random(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "shape", c->st)) return;
    df_dtype t = df__attr_type(c->node, "dtype");
    df_tensor *o = df__k_alloc(c, 0, t, s.rank, s.dims);
    if (!o) return;
    uint64_t seed = (uint64_t)df__attr_i(c->node, "seed", 0), seed2 = (uint64_t)df__attr_i(c->node, "seed2", 0);
    /* Each run reserves 256 Philox blocks per element, as TF does, so successive runs give new numbers. */
    uint64_t skip = df__step_rng_next(c->step, c->node, (uint64_t)o->n * 256);
    df__random_fill(c->node->op->code, t, seed, seed2, skip, o->data, o->n);
}
