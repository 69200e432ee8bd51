/* ==========================================================================================
   src/kernels/resource.c: CPU kernels: resource variables (VarHandleOp and its ops)   >>resvar
   TF2's resource variables: VarHandleOp outputs a DF_RESOURCE scalar naming a variable of the
   session's store (the df__var a VariableV2 of the same shared_name, or node name when that is
   empty, also uses: both kinds see one storage). The handle holds a check word, this session's
   salt and the variable's index; a forged or foreign handle is refused, and so is one of
   another step scope's variable (another master of a worker: src/session.c). Readers take a
   reference to the current value under the variable's lock; updates replace it, or change it
   in place when no reader holds it (as src/kernels/training.c). The optimizer updates follow
   TF's training_ops.cc element for element, in the variable's type (float math for floats).
   ========================================================================================== */
#define DF__VAR_MAGIC 0x5652u        /* "VR": the top 16 bits of a variable handle */

/* ---- handles ---- */
static uint64_t df__res_salt(const df_session *ss) { return (uint64_t)(df__hash_mix((uint64_t)(uintptr_t)ss, 0x5652) & 0xffffu); }

/* The variable behind handle h (input i of the running node), or NULL with the status set. */
static df__var *df__res_var(df__kctx *c, int i) {
    const df_tensor *h = c->in[i];
    df_session *ss = c->step->session;
    uint64_t w = 0;
    if (h && h->dtype == DF_RESOURCE && h->n == 1 && h->nbytes >= 8) memcpy(&w, h->data, 8);
    df__var *v = NULL;
    if ((w >> 48) == DF__VAR_MAGIC && ((w >> 32) & 0xffffu) == df__res_salt(ss)) {
        int64_t idx = (int64_t)(w & 0xffffffffu);
        df__spin_lock(&ss->lock);
        if (idx < ss->n_vars) v = ss->vars[idx];
        if (v && v->scope && v->scope != c->step->scope) v = NULL;   /* another master's (a worker) */
        df__spin_unlock(&ss->lock);
    }
    if (!v) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input %d of %s is not a variable handle made by VarHandleOp in this session",
                      i, c->node->op->name);
    return v;
}

/* TF's error for a variable that has no value (never assigned, or destroyed). */
static void df__res_uninit(df__kctx *c, const df__var *v) {
    DF__KFAIL(c, DF_FAILED_PRECONDITION, "Could not find variable %s. This could mean that the variable has been deleted. "
              "In TF1, it can also mean the variable is uninitialized. Debug info: container=localhost, status error "
              "message=Resource localhost/%s/N10tensorflow3VarE does not exist.", v->name, v->name);
}

DF_PRIVATE void df__k_var_handle(df__kctx *c) {
    df__var *v = df__step_var(c->step, c->node, c->st);
    if (!v) return;
    df_session *ss = c->step->session;
    int idx = v->index;                 /* (fixed while the variable lives, and it lives while its scope runs) */
    df_tensor *o = df__k_alloc(c, 0, DF_RESOURCE, 0, NULL);
    if (!o) return;
    uint64_t w = ((uint64_t)DF__VAR_MAGIC << 48) | (df__res_salt(ss) << 32) | (uint64_t)(uint32_t)idx;
    memcpy(o->data, &w, 8);
}

/* ---- build-time checks: the VarHandleOp behind a resource input, through the ops that pass a
   handle on (Identity, Enter, Switch, Merge, ...); NULL when it cannot be seen (a feed, an _Arg) */
static const df_node *df__res_source_of(df_output o) {
    for (int depth = 0; depth < 64 && o.node; depth++) {
        const df_node *s = o.node;
        if (!strcmp(s->op->name, "VarHandleOp")) return s;
        if (s->n_inputs < 1 || df_output_dtype(s->inputs[0]) != DF_RESOURCE) return NULL;
        if (!(s->op->flags & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT | DF__OP_NEXT_ITERATION)) &&
            strcmp(s->op->name, "Identity")) return NULL;
        o = s->inputs[0];
    }
    return NULL;
}
static const df_node *df__res_source(const df_node *n, int input) {
    return input < n->n_inputs ? df__res_source_of(n->inputs[input]) : NULL;
}
/* The variable's static shape (rank -1: unknown) and dtype (0: unknown) seen from input i. */
static df__shape df__res_static(const df_node *n, int input, df_dtype *dtype) {
    const df_node *s = df__res_source(n, input);
    df__shape out = df__shape_unknown();
    *dtype = (df_dtype)0;
    if (!s) return out;
    const df__attr *a = df__node_attr(s, "shape");
    if (a && a->kind == DF__A_SHAPE && a->u.shape.rank >= 0) {
        out.rank = a->u.shape.rank;
        memcpy(out.dims, a->u.shape.dims, sizeof out.dims);
    }
    *dtype = df__attr_type(s, "dtype");
    return out;
}
static df_code df__res_check_dtype(df__shape_ctx *c, df_dtype var_t, df_dtype t) {
    if (!var_t || !t || var_t == t) return DF_OK;
    return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected %s got %s",
                    df_dtype_name(var_t), df_dtype_name(t));
}
/* Merges two shapes as TF's shape inference does; 0 when they cannot describe one tensor. */
static int df__res_merge(const df__shape *a, const df__shape *b, df__shape *out) {
    if (a->rank < 0) { *out = *b; return 1; }
    if (b->rank < 0) { *out = *a; return 1; }
    if (a->rank != b->rank) return 0;
    *out = *a;
    for (int d = 0; d < a->rank; d++) {
        if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d]) return 0;
        if (a->dims[d] < 0) out->dims[d] = b->dims[d];
    }
    return 1;
}
DF_PRIVATE df_code df__sf_var_handle(df__shape_ctx *c) { *df__sc_out(c, 0) = df__shape_scalar(); return DF_OK; }
DF_PRIVATE df_code df__sf_read_variable(df__shape_ctx *c) {
    df_dtype vt;
    df__shape s = df__res_static(c->node, 0, &vt);
    if (df__res_check_dtype(c, vt, df__attr_type(c->node, "dtype"))) return c->st->code;
    *df__sc_out(c, 0) = s;
    return DF_OK;
}
/* AssignVariableOp and AssignAdd/SubVariableOp: the value must fit the handle's shape (TF merges
   them whatever validate_shape says; validate_shape is checked when the op runs). */
DF_PRIVATE df_code df__sf_assign_variable(df__shape_ctx *c) {
    df_dtype vt;
    df__shape s = df__res_static(c->node, 0, &vt), merged;
    if (df__res_check_dtype(c, vt, df__attr_type(c->node, "dtype"))) return c->st->code;
    if (df__res_merge(&s, &c->in_shapes[1], &merged)) return DF_OK;
    const df__shape *v = &c->in_shapes[1];          /* (both ranks known: a merge fails only then) */
    char s1[96], s2[96];
    df__dims_str(s.rank, s.dims, s1, 96);
    df__dims_str(v->rank, v->dims, s2, 96);
    if (s.rank != v->rank)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shapes must be equal rank, but are %d and %d (the variable's "
                        "%s, the value's %s)", s.rank, v->rank, s1, s2);
    int d = 0;
    while (d < s.rank && (s.dims[d] < 0 || v->dims[d] < 0 || s.dims[d] == v->dims[d])) d++;
    return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Dimension %d in both shapes must be equal, but are %lld and %lld. "
                    "Shapes are %s and %s.", d, (long long)s.dims[d], (long long)v->dims[d], s1, s2);
}
DF_PRIVATE df_code df__sf_variable_shape(df__shape_ctx *c) {
    df_dtype vt;
    df__shape s = df__res_static(c->node, 0, &vt);
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1;
    o->dims[0] = s.rank;               /* (-1 when unknown) */
    return DF_OK;
}
DF_PRIVATE df_code df__sf_resource_gather(df__shape_ctx *c) {
    df_dtype vt;
    df__shape p = df__res_static(c->node, 0, &vt);
    const df__shape *ix = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (df__res_check_dtype(c, vt, df__attr_type(c->node, "dtype"))) return c->st->code;
    int64_t b = df__attr_i(c->node, "batch_dims", 0);
    if (p.rank < 0 || ix->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (b < 0 || b > ix->rank || b >= p.rank)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "batch_dims %lld must be in [0, %d] and less than the "
                        "variable's rank %d", (long long)b, ix->rank, p.rank);
    if (p.rank - 1 + ix->rank - b > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ResourceGather: result rank too large");
    o->rank = 0;
    for (int d = 0; d < ix->rank; d++) o->dims[o->rank++] = d < b && ix->dims[d] < 0 ? p.dims[d] : ix->dims[d];
    for (int d = (int)b + 1; d < p.rank; d++) o->dims[o->rank++] = p.dims[d];
    return DF_OK;
}
/* Scatter: updates must be indices.shape + var.shape[1:], or a scalar (ResourceScatterUpdate). */
DF_PRIVATE df_code df__sf_resource_scatter(df__shape_ctx *c) {
    df_dtype vt;
    df__shape p = df__res_static(c->node, 0, &vt);
    const df__shape *ix = &c->in_shapes[1], *u = &c->in_shapes[2];
    if (df__res_check_dtype(c, vt, df__attr_type(c->node, "dtype"))) return c->st->code;
    if (p.rank < 0 || ix->rank < 0 || u->rank <= 0) return DF_OK;
    int bad = u->rank != ix->rank + p.rank - 1;
    for (int d = 0; !bad && d < ix->rank; d++) bad = ix->dims[d] >= 0 && u->dims[d] >= 0 && ix->dims[d] != u->dims[d];
    for (int d = 1; !bad && d < p.rank; d++) {
        int64_t a = p.dims[d], e = u->dims[ix->rank + d - 1];
        bad = a >= 0 && e >= 0 && a != e;
    }
    if (!bad) return DF_OK;
    char s1[96], s2[96], s3[96];
    return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shapes of updates %s must be indices %s + variable %s[1:]",
                    df__dims_str(u->rank, u->dims, s1, 96), df__dims_str(ix->rank, ix->dims, s2, 96),
                    df__dims_str(p.rank, p.dims, s3, 96));
}
/* The ref twins output their variable's reference; the resource ops have no output. */
DF_PRIVATE df_code df__sf_resource_apply(df__shape_ctx *c) {
    if (c->node->n_outputs) *df__sc_out(c, 0) = c->in_shapes[0];
    return DF_OK;
}

/* ---- reads, assignments ---- */
static int df__res_dtype_ok(df__kctx *c, const df__var *v, df_dtype have, df_dtype want, const char *what) {
    if (have == want) return 1;
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to %s variable %s with wrong dtype. Expected %s got %s", what, v->name,
              df_dtype_name(have), df_dtype_name(want));
    return 0;
}
/* The current value (a new reference), or NULL with the status set. */
static df_tensor *df__res_value(df__kctx *c, df__var *v) {
    df__spin_lock(&v->lock);
    df_tensor *t = df_tensor_retain(v->value);
    df__spin_unlock(&v->lock);
    if (!t) df__res_uninit(c, v);
    return t;
}
DF_PRIVATE void df__k_read_variable(df__kctx *c) {
    df__var *v = df__res_var(c, 0);
    df_tensor *t = v ? df__res_value(c, v) : NULL;
    if (!t) return;
    if (!df__res_dtype_ok(c, v, t->dtype, df__attr_type(c->node, "dtype"), "read")) { df_tensor_release(t); return; }
    c->out[0] = t;
}
DF_PRIVATE void df__k_var_is_initialized(df__kctx *c) {
    df__var *v = df__res_var(c, 0);
    if (!v) return;
    df_tensor *o = df__k_alloc(c, 0, DF_BOOL, 0, NULL);
    if (!o) return;
    df__spin_lock(&v->lock);
    *(unsigned char *)o->data = v->value != NULL;
    df__spin_unlock(&v->lock);
}
DF_PRIVATE void df__k_variable_shape(df__kctx *c) {
    df__var *v = df__res_var(c, 0);
    if (!v) return;
    df__spin_lock(&v->lock);
    df__shape s = v->value ? df__shape_of(v->value) : df__shape_unknown();
    df__spin_unlock(&v->lock);
    if (s.rank < 0) { DF__KFAIL(c, DF_NOT_FOUND, "Resource localhost/%s/N10tensorflow3VarE does not exist.", v->name); return; }
    int64_t d = s.rank;
    df_tensor *o = df__k_alloc(c, 0, df__attr_type(c->node, "out_type"), 1, &d);
    if (!o) return;
    for (int i = 0; i < s.rank; i++) df__set_from_i64(o->dtype, o->data, i, s.dims[i]);
}
DF_PRIVATE void df__k_destroy_resource(df__kctx *c) {
    df__var *v = df__res_var(c, 0);
    if (!v) return;
    df__spin_lock(&v->lock);
    df_tensor *old = v->value;
    v->value = NULL;
    df__spin_unlock(&v->lock);
    if (!old && !df__attr_b(c->node, "ignore_lookup_error", 1))
        DF__KFAIL(c, DF_NOT_FOUND, "Resource localhost/%s/N10tensorflow3VarE does not exist.", v->name);
    df_tensor_release(old);
}
/* AssignVariableOp (code 0), AssignAddVariableOp (1), AssignSubVariableOp (2). */
DF_PRIVATE void df__k_assign_variable(df__kctx *c) {
    df__var *v = df__res_var(c, 0);
    if (!v) return;
    df_tensor *value = c->in[1];
    int code = c->node->op->code;
    if (code == 0) {
        int validate = df__attr_b(c->node, "validate_shape", 0);
        df__spin_lock(&v->lock);
        df_tensor *old = v->value;
        if (old && old->dtype != value->dtype) {
            df__spin_unlock(&v->lock);
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to assign variable with wrong dtype. Expected %s got %s",
                      df_dtype_name(old->dtype), df_dtype_name(value->dtype));
            return;
        }
        if (old && validate) {
            df__shape so = df__shape_of(old), sv = df__shape_of(value);
            if (!df__shapes_equal(&so, &sv)) {
                df__spin_unlock(&v->lock);
                char s1[96], s2[96];
                DF__KFAIL(c, DF_INVALID_ARGUMENT, "Trying to assign to variable with tensor with wrong shape. Expected %s got %s",
                          df__dims_str(so.rank, so.dims, s1, 96), df__dims_str(sv.rank, sv.dims, s2, 96));
                return;
            }
        }
        v->value = df_tensor_retain(value);
        df__spin_unlock(&v->lock);
        df_tensor_release(old);
        return;
    }
    df__spin_lock(&v->lock);
    df_tensor *old = v->value;
    if (!old) { df__spin_unlock(&v->lock); df__res_uninit(c, v); return; }
    if (old->dtype != value->dtype) {
        df__spin_unlock(&v->lock);
        df__res_dtype_ok(c, v, old->dtype, value->dtype, "update");
        return;
    }
    df__shape so = df__shape_of(old), sv = df__shape_of(value);
    if (!df__shapes_equal(&so, &sv)) {
        df__spin_unlock(&v->lock);
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Cannot update variable with shape %s using a Tensor with shape %s, shapes must be equal.",
                  df__dims_str(so.rank, so.dims, s1, 96), df__dims_str(sv.rank, sv.dims, s2, 96));
        return;
    }
    /* a fresh tensor: readers keep the value they read */
    df_tensor *fresh = df__tensor_alloc(c->alloc, old->dtype, old->rank, old->dims, c->st);
    if (!fresh || df__add_data(code == 1 ? DF__B_ADD : DF__B_SUB, fresh, old, value, c->st)) {
        df__spin_unlock(&v->lock);
        df_tensor_release(fresh);
        if (c->st->code) { char msg[sizeof c->st->message]; memcpy(msg, c->st->message, sizeof msg); df__fail(c->st, c->node, c->st->code, "%.400s", msg); }
        return;
    }
    v->value = fresh;
    df__spin_unlock(&v->lock);
    df_tensor_release(old);
}

/* ---- updates in place: the variables an op changes, locked ---- */
/* Resolves the first n inputs (handles, or references for the Apply* ref twins) to distinct
   variables, locks them in address order (two updates of the same variables cannot deadlock)
   and makes each value private to the update (a copy when a reader holds it). Returns 0 with
   nothing locked on error. */
static int df__res_lock(df__kctx *c, int n, df__var **v, df_tensor **val) {
    df__var *order[4];
    for (int i = 0; i < n; i++) {
        if (c->node->op->in[i].is_ref) {
            v[i] = c->in[i] ? c->in[i]->ref : NULL;
            if (!v[i]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input %d of %s must be a variable", i, c->node->op->name); return 0; }
        } else if (!(v[i] = df__res_var(c, i))) return 0;
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
        if (!cur) {
            if (c->node->op->in[i].is_ref) DF__KFAIL(c, DF_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v[i]->name);
            else df__res_uninit(c, v[i]);
        } else if (__atomic_load_n(&cur->refs, __ATOMIC_ACQUIRE) != 1 || cur->base) {
            /* (acquire: a reader's last use of the data comes before our writes in place) */
            df_tensor *fresh = df__tensor_alloc(c->alloc, cur->dtype, cur->rank, cur->dims, c->st);
            if (fresh && df__copy_data(fresh, cur, c->st)) { df_tensor_release(fresh); fresh = NULL; }
            if (fresh) { v[i]->value = fresh; df_tensor_release(cur); cur = fresh; }
        }
        val[i] = cur;
        if (c->st->code) { for (int k = 0; k < n; k++) df__spin_unlock(&order[k]->lock); return 0; }
    }
    return 1;
}
static void df__res_unlock(df__var **v, int n) { for (int i = 0; i < n; i++) df__spin_unlock(&v[i]->lock); }

/* ---- gather and scatter ---- */
DF_PRIVATE void df__k_resource_gather(df__kctx *c) {
    df__var *v = df__res_var(c, 0);
    df_tensor *p = v ? df__res_value(c, v) : NULL;
    if (!p) return;
    if (!df__res_dtype_ok(c, v, p->dtype, df__attr_type(c->node, "dtype"), "read")) { df_tensor_release(p); return; }
    /* GatherV2's kernel with axis = batch_dims (TF gathers a resource along its first
       non-batch dimension); its batch_dims attr is ours */
    int64_t b = df__attr_i(c->node, "batch_dims", 0);
    if (b < 0) b += c->in[1]->rank;
    if (b < 0 || b >= p->rank || b > c->in[1]->rank) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "batch_dims %lld must be in [0, %d] and less than the variable's rank %d",
                  (long long)df__attr_i(c->node, "batch_dims", 0), c->in[1]->rank, p->rank);
        df_tensor_release(p);
        return;
    }
    int32_t axis = (int32_t)b;
    df_tensor axis_t;
    memset(&axis_t, 0, sizeof axis_t);
    axis_t.refs = 1; axis_t.dtype = DF_INT32; axis_t.n = 1; axis_t.nbytes = 4; axis_t.data = &axis;
    df_tensor *ins[3] = {p, c->in[1], &axis_t};
    df__kctx k = *c;
    k.in = ins;
    k.n_in = 3;
    df__k_gather(&k);
    df_tensor_release(p);
}
/* ResourceScatterAdd (code 0), Sub (1), Update (2): var[indices[i], ...] op= updates[i, ...]. */
DF_PRIVATE void df__k_resource_scatter(df__kctx *c) {
    const df_tensor *ix = c->in[1], *u = c->in[2];
    int code = c->node->op->code;
    df__var *v[1];
    df_tensor *val[1];
    if (!df__res_lock(c, 1, v, val)) return;
    df_tensor *var = val[0];
    if (var->dtype != u->dtype) { df__res_unlock(v, 1); df__res_dtype_ok(c, v[0], var->dtype, u->dtype, "update"); return; }
    if (var->rank < 1) { df__res_unlock(v, 1); DF__KFAIL(c, DF_INVALID_ARGUMENT, "Cannot scatter into a scalar variable %s", v[0]->name); return; }
    int scalar = u->rank == 0;
    int ok = scalar || u->rank == ix->rank + var->rank - 1;
    for (int d = 0; ok && !scalar && d < ix->rank; d++) ok = u->dims[d] == ix->dims[d];
    for (int d = 1; ok && !scalar && d < var->rank; d++) ok = u->dims[ix->rank + d - 1] == var->dims[d];
    if (!ok) {
        df__res_unlock(v, 1);
        char s1[96], s2[96], s3[96];
        if (u->rank < ix->rank || memcmp(u->dims, ix->dims, (size_t)ix->rank * sizeof(int64_t)))
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "The shape of indices (%s) must be a prefix of the shape of updates (%s)",
                      df__dims_str(ix->rank, ix->dims, s1, 96), df__dims_str(u->rank, u->dims, s2, 96));
        else
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], "
                      "got updates.shape %s, indices.shape %s, params.shape %s", df__dims_str(u->rank, u->dims, s1, 96),
                      df__dims_str(ix->rank, ix->dims, s2, 96), df__dims_str(var->rank, var->dims, s3, 96));
        return;
    }
    int64_t rows = var->dims[0], inner = rows ? var->n / rows : 0;
    for (int64_t i = 0; i < ix->n; i++) {
        int64_t r = df__int_at(ix, i);
        if (r < 0 || r >= rows) {
            df__res_unlock(v, 1);
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices[%lld] = %lld is not in [0, %lld)", (long long)i, (long long)r, (long long)rows);
            return;
        }
    }
    size_t es = df_dtype_size(var->dtype);
    for (int64_t i = 0; i < ix->n; i++) {
        int64_t r = df__int_at(ix, i);
        char *dst = (char *)var->data + (size_t)(r * inner) * es;
        if (code == 2 && !scalar) { memcpy(dst, (const char *)u->data + (size_t)(i * inner) * es, (size_t)inner * es); continue; }
        for (int64_t j = 0; j < inner; j++) {
            int64_t ui = scalar ? 0 : i * inner + j, vi = r * inner + j;
            if (code == 2) memcpy((char *)var->data + (size_t)vi * es, (const char *)u->data + (size_t)ui * es, es);
            else if (var->dtype == DF_FLOAT) ((float *)var->data)[vi] += code == 0 ? ((const float *)u->data)[ui] : -((const float *)u->data)[ui];
            else if (var->dtype == DF_DOUBLE) ((double *)var->data)[vi] += code == 0 ? ((const double *)u->data)[ui] : -((const double *)u->data)[ui];
            else {
                int64_t a = df__get_i64(var->dtype, var->data, vi), b = df__get_i64(u->dtype, u->data, ui);
                df__set_from_i64(var->dtype, var->data, vi, (int64_t)(code == 0 ? (uint64_t)a + (uint64_t)b : (uint64_t)a - (uint64_t)b));
            }
        }
    }
    df__res_unlock(v, 1);
}

/* ---- optimizer updates ---- */
/* Per update: how many variables come first, and which input is the gradient; the other inputs
   are scalars, in order (Momentum: lr, momentum; Adam: beta1_power, beta2_power, lr, beta1,
   beta2, epsilon; RMSProp: lr, rho, momentum, epsilon; Adagrad: lr[, epsilon]). */
static const struct { int n_vars, grad; const char *slots[4]; } df__ra_form[] = {
    {1, 2, {"var"}}, {2, 3, {"var", "accum"}}, {2, 3, {"var", "accum"}}, {3, 9, {"var", "m", "v"}},
    {2, 3, {"var", "accum"}}, {2, 4, {"var", "accum"}}, {3, 7, {"var", "ms", "mom"}}, {4, 8, {"var", "mg", "ms", "mom"}}};
typedef struct df__ra {
    int op, nesterov, update_slots;
    void *w, *s1, *s2, *s3;
    const void *g;
    double k[6];
} df__ra;

/* One loop per update and float type; T arithmetic as TF's Eigen expressions (same order). */
#define DF__RA_LOOPS(T, SQRT)                                                                              \
static void df__ra_loop_##T(const df__ra *a, int64_t lo, int64_t hi) {                                     \
    T *restrict w = (T *)a->w, *restrict s1 = (T *)a->s1, *restrict s2 = (T *)a->s2;                      \
    T *restrict s3 = (T *)a->s3;                                                                           \
    const T *restrict g = (const T *)a->g;      /* (distinct variables: df__res_lock; the gradient another tensor) */ \
    T k0 = (T)a->k[0], k1 = (T)a->k[1], k2 = (T)a->k[2], k3 = (T)a->k[3], k4 = (T)a->k[4], k5 = (T)a->k[5]; \
    T one = (T)1;                                                                                          \
    switch (a->op) {                                                                                       \
    case DF__RA_GD:                                                                                        \
        for (int64_t i = lo; i < hi; i++) w[i] -= g[i] * k0;                                               \
        break;                                                                                             \
    case DF__RA_MOMENTUM:              /* k0 lr, k1 momentum */                                            \
        for (int64_t i = lo; i < hi; i++) {                                                                \
            s1[i] = s1[i] * k1 + g[i];                                                                     \
            if (a->nesterov) w[i] -= g[i] * k0 + s1[i] * k1 * k0;                                          \
            else w[i] -= s1[i] * k0;                                                                       \
        }                                                                                                  \
        break;                                                                                             \
    case DF__RA_KERAS_MOMENTUM:                                                                            \
        for (int64_t i = lo; i < hi; i++) {                                                                \
            s1[i] = s1[i] * k1 - g[i] * k0;                                                                \
            if (a->nesterov) w[i] += s1[i] * k1 - g[i] * k0;                                               \
            else w[i] += s1[i];                                                                            \
        }                                                                                                  \
        break;                                                                                             \
    case DF__RA_ADAM: {                /* k0 beta1_power, k1 beta2_power, k2 lr, k3 beta1, k4 beta2, k5 eps */ \
        T alpha = k2 * SQRT(one - k1) / (one - k0);                                                        \
        for (int64_t i = lo; i < hi; i++) {                                                                \
            s1[i] += (g[i] - s1[i]) * (one - k3);                                                          \
            s2[i] += (g[i] * g[i] - s2[i]) * (one - k4);                                                   \
            if (a->nesterov) w[i] -= ((g[i] * (one - k3) + k3 * s1[i]) * alpha) / (SQRT(s2[i]) + k5);      \
            else w[i] -= (s1[i] * alpha) / (SQRT(s2[i]) + k5);                                             \
        }                                                                                                  \
        break;                                                                                             \
    }                                                                                                      \
    case DF__RA_ADAGRAD:                                                                                   \
        for (int64_t i = lo; i < hi; i++) {                                                                \
            if (a->update_slots) s1[i] += g[i] * g[i];                                                     \
            w[i] -= g[i] * k0 * (one / SQRT(s1[i]));                                                       \
        }                                                                                                  \
        break;                                                                                             \
    case DF__RA_ADAGRAD_V2:            /* k0 lr, k1 epsilon */                                             \
        for (int64_t i = lo; i < hi; i++) {                                                                \
            if (a->update_slots) s1[i] += g[i] * g[i];                                                     \
            w[i] -= g[i] * k0 / (SQRT(s1[i]) + k1);                                                        \
        }                                                                                                  \
        break;                                                                                             \
    case DF__RA_RMSPROP:               /* ms, mom; k0 lr, k1 rho, k2 momentum, k3 epsilon */               \
        for (int64_t i = lo; i < hi; i++) {                                                                \
            s1[i] += (g[i] * g[i] - s1[i]) * (one - k1);                                                   \
            s2[i] = s2[i] * k2 + (g[i] * k0) / SQRT(s1[i] + k3);                                           \
            w[i] -= s2[i];                                                                                 \
        }                                                                                                  \
        break;                                                                                             \
    default:                           /* centered: mg, ms, mom; k0 lr, k1 rho, k2 momentum, k3 epsilon */ \
        for (int64_t i = lo; i < hi; i++) {                                                                \
            s2[i] += (g[i] * g[i] - s2[i]) * (one - k1);                                                   \
            s1[i] += (g[i] - s1[i]) * (one - k1);                                                          \
            T denom = (s2[i] - s1[i] * s1[i]) + k3;                                                        \
            s3[i] = s3[i] * k2 + (g[i] * k0) / SQRT(denom);                                                \
            w[i] -= s3[i];                                                                                 \
        }                                                                                                  \
        break;                                                                                             \
    }                                                                                                      \
}
DF__RA_LOOPS(float, sqrtf)
DF__RA_LOOPS(double, sqrt)
#undef DF__RA_LOOPS

#ifdef DF__X86
/* The float updates eight at a time with AVX (the same operations in the same order as the
   loops above, so the same results: no FMA is written, and -std=c11 contracts none). Returns
   the first element left for the scalar loop. */
DF__TARGET_AVX2 static int64_t df__ra_avx2(const df__ra *a, int64_t lo, int64_t hi) {
    float *w = (float *)a->w, *s1 = (float *)a->s1, *s2 = (float *)a->s2, *s3 = (float *)a->s3;
    const float *g = (const float *)a->g;
    float f[6];
    for (int k = 0; k < 6; k++) f[k] = (float)a->k[k];
    __m256 k0 = _mm256_set1_ps(f[0]), k1 = _mm256_set1_ps(f[1]), k2 = _mm256_set1_ps(f[2]), k3 = _mm256_set1_ps(f[3]);
    __m256 k5 = _mm256_set1_ps(f[5]), one = _mm256_set1_ps(1.0f);
    int64_t i = lo;
#define DF__L(p) _mm256_loadu_ps((p) + i)
#define DF__S(p, v) _mm256_storeu_ps((p) + i, (v))
    switch (a->op) {
    case DF__RA_GD:
        for (; i + 8 <= hi; i += 8) DF__S(w, _mm256_sub_ps(DF__L(w), _mm256_mul_ps(DF__L(g), k0)));
        break;
    case DF__RA_MOMENTUM:
        for (; i + 8 <= hi; i += 8) {
            __m256 gv = DF__L(g), acc = _mm256_add_ps(_mm256_mul_ps(DF__L(s1), k1), gv);
            DF__S(s1, acc);
            __m256 step = a->nesterov ? _mm256_add_ps(_mm256_mul_ps(gv, k0), _mm256_mul_ps(_mm256_mul_ps(acc, k1), k0))
                                      : _mm256_mul_ps(acc, k0);
            DF__S(w, _mm256_sub_ps(DF__L(w), step));
        }
        break;
    case DF__RA_KERAS_MOMENTUM:
        for (; i + 8 <= hi; i += 8) {
            __m256 gl = _mm256_mul_ps(DF__L(g), k0), acc = _mm256_sub_ps(_mm256_mul_ps(DF__L(s1), k1), gl);
            DF__S(s1, acc);
            DF__S(w, _mm256_add_ps(DF__L(w), a->nesterov ? _mm256_sub_ps(_mm256_mul_ps(acc, k1), gl) : acc));
        }
        break;
    case DF__RA_ADAM: {
        __m256 alpha = _mm256_set1_ps(f[2] * sqrtf(1.0f - f[1]) / (1.0f - f[0]));
        __m256 c1 = _mm256_set1_ps(1.0f - f[3]), c2 = _mm256_set1_ps(1.0f - f[4]);
        for (; i + 8 <= hi; i += 8) {
            __m256 gv = DF__L(g);
            __m256 m = _mm256_add_ps(DF__L(s1), _mm256_mul_ps(_mm256_sub_ps(gv, DF__L(s1)), c1));
            __m256 v = _mm256_add_ps(DF__L(s2), _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(gv, gv), DF__L(s2)), c2));
            DF__S(s1, m);
            DF__S(s2, v);
            __m256 num = a->nesterov ? _mm256_add_ps(_mm256_mul_ps(gv, c1), _mm256_mul_ps(k3, m)) : m;
            __m256 den = _mm256_add_ps(_mm256_sqrt_ps(v), k5);
            DF__S(w, _mm256_sub_ps(DF__L(w), _mm256_div_ps(_mm256_mul_ps(num, alpha), den)));
        }
        break;
    }
    case DF__RA_ADAGRAD:
    case DF__RA_ADAGRAD_V2:
        for (; i + 8 <= hi; i += 8) {
            __m256 gv = DF__L(g), acc = DF__L(s1);
            if (a->update_slots) { acc = _mm256_add_ps(acc, _mm256_mul_ps(gv, gv)); DF__S(s1, acc); }
            __m256 gl = _mm256_mul_ps(gv, k0);
            __m256 step = a->op == DF__RA_ADAGRAD ? _mm256_mul_ps(gl, _mm256_div_ps(one, _mm256_sqrt_ps(acc)))
                                                  : _mm256_div_ps(gl, _mm256_add_ps(_mm256_sqrt_ps(acc), k1));
            DF__S(w, _mm256_sub_ps(DF__L(w), step));
        }
        break;
    case DF__RA_RMSPROP: {
        __m256 c1 = _mm256_set1_ps(1.0f - f[1]), k3v = _mm256_set1_ps(f[3]);
        for (; i + 8 <= hi; i += 8) {
            __m256 gv = DF__L(g);
            __m256 ms = _mm256_add_ps(DF__L(s1), _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(gv, gv), DF__L(s1)), c1));
            __m256 mom = _mm256_add_ps(_mm256_mul_ps(DF__L(s2), k2),
                                       _mm256_div_ps(_mm256_mul_ps(gv, k0), _mm256_sqrt_ps(_mm256_add_ps(ms, k3v))));
            DF__S(s1, ms);
            DF__S(s2, mom);
            DF__S(w, _mm256_sub_ps(DF__L(w), mom));
        }
        break;
    }
    default: {
        __m256 c1 = _mm256_set1_ps(1.0f - f[1]), k3v = _mm256_set1_ps(f[3]);
        for (; i + 8 <= hi; i += 8) {
            __m256 gv = DF__L(g);
            __m256 ms = _mm256_add_ps(DF__L(s2), _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(gv, gv), DF__L(s2)), c1));
            __m256 mg = _mm256_add_ps(DF__L(s1), _mm256_mul_ps(_mm256_sub_ps(gv, DF__L(s1)), c1));
            __m256 den = _mm256_add_ps(_mm256_sub_ps(ms, _mm256_mul_ps(mg, mg)), k3v);
            __m256 mom = _mm256_add_ps(_mm256_mul_ps(DF__L(s3), k2), _mm256_div_ps(_mm256_mul_ps(gv, k0), _mm256_sqrt_ps(den)));
            DF__S(s2, ms);
            DF__S(s1, mg);
            DF__S(s3, mom);
            DF__S(w, _mm256_sub_ps(DF__L(w), mom));
        }
        break;
    }
    }
#undef DF__L
#undef DF__S
    return i;
}
#endif
static void df__ra_run_float(void *arg, int64_t lo, int64_t hi) {
    const df__ra *a = (const df__ra *)arg;
#ifdef DF__X86
    if (df__vec_isa() == DF__ISA_AVX2) lo = df__ra_avx2(a, lo, hi);
#endif
    df__ra_loop_float(a, lo, hi);
}
static void df__ra_run_double(void *arg, int64_t lo, int64_t hi) { df__ra_loop_double((const df__ra *)arg, lo, hi); }

/* Every ResourceApply* op and the Apply* ref ops; op: DF__RA_*. */
DF_PRIVATE void df__resource_apply_run(df__kctx *c, int op) {
    int nv = df__ra_form[op].n_vars, gi = df__ra_form[op].grad;
    int is_ref = c->node->op->in[0].is_ref;
    df__ra a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.nesterov = df__attr_b(c->node, "use_nesterov", 0);
    a.update_slots = df__attr_b(c->node, "update_slots", 1);
    int nk = 0;
    for (int i = nv; i < c->n_in; i++) {
        if (i == gi) continue;
        const df_tensor *s = c->in[i];
        if (s->rank != 0) {
            char s1[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s is not a scalar: %s", c->node->op->in[i].name, df__dims_str(s->rank, s->dims, s1, 96));
            return;
        }
        a.k[nk++] = df__get_f64(s->dtype, s->data, 0);
    }
    df_tensor *out = is_ref && (c->need & 1) ? (df_tensor *)DF_MALLOC(sizeof *out) : NULL;
    if (is_ref && (c->need & 1) && !out) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for a tensor header"); return; }
    df__var *v[4];
    df_tensor *val[4];
    if (!df__res_lock(c, nv, v, val)) { DF_FREE(out); return; }
    const df_tensor *g = c->in[gi];
    df_dtype t = df__attr_type(c->node, "T");
    int ok = 1;
    for (int i = 0; ok && i < nv; i++) {
        if (val[i]->dtype != t) {
            ok = 0;
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s (%s) holds %s, the update is for %s", df__ra_form[op].slots[i], v[i]->name,
                      df_dtype_name(val[i]->dtype), df_dtype_name(t));
        } else if (i > 0) ok = df__k_apply_check(c, val[0], val[i], df__ra_form[op].slots[i]);
    }
    if (ok) ok = df__k_apply_check(c, val[0], g, op == DF__RA_GD ? "delta" : "grad");
    if (ok) {
        a.w = val[0]->data;
        a.s1 = nv > 1 ? val[1]->data : NULL;
        a.s2 = nv > 2 ? val[2]->data : NULL;
        a.s3 = nv > 3 ? val[3]->data : NULL;
        a.g = g->data;
        df__par_fn fn = t == DF_FLOAT ? df__ra_run_float : df__ra_run_double;
        int64_t n = val[0]->n;
        if (n < 32768) fn(&a, 0, n);
        else df__parallel_for(c->ipool, n, 4096, df__ipool_threads(c->ipool), fn, &a);
    }
    if (is_ref) {
        if (c->st->code) { DF_FREE(out); out = NULL; }
        c->out[0] = df__ref_made(out, v[0], v[0]->value);   /* (under the lock: see df__ref_made) */
    }
    for (int i = 0; i < nv; i++) df__spin_unlock(&v[i]->lock);
}

DF_PRIVATE void df__k_resource_apply(df__kctx *c) { df__resource_apply_run(c, c->node->op->code); }

/* ---- gradients (TF: resource_variable_ops.py) ---- */
/* ReadVariableOp passes its gradient to the handle, so differentiating with respect to a
   handle gives the variable's gradient (tf.gradients of a resource variable). */
DF_PRIVATE void df__g_read_variable(df__gfn *c) { c->dx[0] = c->dy[0]; }
/* TF gives IndexedSlices(grad, indices, variable_shape); here the dense equivalent:
   UnsortedSegmentSum(grad, indices, variable_shape[0]). */
DF_PRIVATE void df__g_resource_gather(df__gfn *c) {
    df_graph *g = c->g;
    if (df__attr_i(c->n, "batch_dims", 0) != 0) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of ResourceGather with batch_dims != 0 is not implemented {{node %s}}", c->n->name);
        return;
    }
    df_output h = c->n->inputs[0], ix = c->n->inputs[1];
    df_op_builder *b = df_op_new(g, "VariableShape", NULL);
    df_op_add_input(b, h);
    df_output shape = df__out(df_op_finish(b), 0);
    b = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(b, shape);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_output rows = df__out(df_op_finish(b), 0);
    b = df_op_new(g, "UnsortedSegmentSum", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, ix);
    df_op_add_input(b, rows);
    c->dx[0] = df__out(df_op_finish(b), 0);
}

/* The dtype of the variable behind handle h, as far as the graph shows (0: unknown). */
DF_PRIVATE df_dtype df__res_value_dtype(df_output h) {
    const df_node *s = df_output_dtype(h) == DF_RESOURCE ? df__res_source_of(h) : NULL;
    return s ? df__attr_type(s, "dtype") : (df_dtype)0;
}
/* TF's zeros_like of a handle (a gradient's zero): zeros of the variable's shape and dtype. */
DF_PRIVATE df_output df__res_zeros(df_graph *g, df_output h) {
    df_dtype t = df__res_value_dtype(h);
    if (!t) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Gradient with respect to a resource handle whose variable is not known "
                        "from the graph {{node %s}}", h.node ? h.node->name : "?");
        return df__out(NULL, 0);
    }
    df_op_builder *b = df_op_new(g, "VariableShape", NULL);
    df_op_add_input(b, h);
    df_output shape = df__out(df_op_finish(b), 0);
    b = df_op_new(g, "Fill", NULL);
    df_op_add_input(b, shape);
    df_op_add_input(b, df__scalar_of(g, t, 0));
    return df__out(df_op_finish(b), 0);
}
