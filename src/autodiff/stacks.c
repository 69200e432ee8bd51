/* ==========================================================================================
   src/autodiff/stacks.c: Gradient stacks and accumulators                           >>stacks
   Stacks: per-step LIFO state for while-loop gradients. A handle is a resource scalar.
   holding the stack's index in its step and a check word; a forged handle is refused.
   ========================================================================================== */
/* New per-run state (a stack, or a sum when is_sum) and its handle as output 0. */
static df__stack *df__k_new_state(df__kctx *c, int is_sum, df_dtype type) {
    int64_t id;
    df__stack *k = df__step_stack_new(c->step, &id, c->st);
    if (!k) { char msg[sizeof c->st->message]; memcpy(msg, c->st->message, sizeof msg); df__fail(c->st, c->node, c->st->code, "%.400s", msg); return NULL; }
    k->is_sum = is_sum;
    k->type = type;
    df_tensor *o = df__k_alloc(c, 0, DF_RESOURCE, 0, NULL);
    if (o) { uint64_t w = ((uint64_t)DF__STACK_MAGIC << 32) | (uint64_t)id; memcpy(o->data, &w, 8); }
    return o ? k : NULL;
}
/* The state behind input 0, which must be a handle of the right kind made in this run. */
static df__stack *df__k_state_of(df__kctx *c, int is_sum) {
    df__stack *k = c->in[0]->dtype == DF_RESOURCE && c->in[0]->n == 1 ? df__step_stack_get(c->step, c->in[0]) : NULL;
    if (!k || k->is_sum != is_sum) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, is_sum ? "Not an accumulator handle made by SumAccumulator in this run"
                                                 : "Not a stack handle made by StackV2 in this run");
        return NULL;
    }
    return k;
}
DF_PRIVATE void df__k_stack(df__kctx *c) {
    const df_tensor *m = c->in[0];
    if (!df__is_int_tensor(m) || m->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "max_size must be a scalar"); return; }
    df__stack *k = df__k_new_state(c, 0, df__attr_type(c->node, "elem_type"));
    if (k) k->max = df__int_at(m, 0);
}
static df__stack *df__k_stack_of(df__kctx *c) { return df__k_state_of(c, 0); }
/* What a push keeps (a new reference): the value, or with swap_memory on a GPU a copy in host
   memory (TensorFlow's swap_memory: long loops keep their gradient stacks off the device).
   What a pop gives: the kept value, moved back to the device when it was swapped out. */
static df_tensor *df__stack_keep(df__kctx *c, df_tensor *x) {
    if (c->gpu && df__attr_b(c->node, "swap_memory", 0)) return df__to_host(c->dev, x, c->st);
    return df_tensor_retain(x);
}
static df_tensor *df__stack_give(df__kctx *c, df_tensor *x) {
    const df_tensor *b = x->base ? x->base : x;
    if (!c->gpu || b->alloc == c->alloc || !x->nbytes) return x;       /* already in the GPU's memory */
    df_tensor *d = df__to_device(c->dev, x, c->st);
    df_tensor_release(x);
    return d;
}
DF_PRIVATE void df__k_stack_push(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df_tensor *x = c->in[1], *kept = df__stack_keep(c, x);
    if (!kept) return;
    df__spin_lock(&k->lock);
    if (k->closed || (k->max >= 0 && k->n >= k->max) || x->dtype != k->type ||
        k->n >= INT32_MAX - 1 || !df__grow(&k->v, &k->cap, k->n + 1, sizeof(df_tensor *))) {
        int full = k->max >= 0 && k->n >= k->max, closed = k->closed, bad = x->dtype != k->type;
        df__spin_unlock(&k->lock);
        if (closed) DF__KFAIL(c, DF_ABORTED, "Stack was closed");
        else if (bad) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds %s, got %s", df_dtype_name(k->type), df_dtype_name(x->dtype));
        else if (full) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Stack is full (max_size %lld)", (long long)k->max);
        else DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory pushing on a stack");
        df_tensor_release(kept);
        return;
    }
    k->v[k->n++] = kept;
    df__spin_unlock(&k->lock);
    c->out[0] = df_tensor_retain(x);
}
DF_PRIVATE void df__k_stack_pop(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df__spin_lock(&k->lock);
    df_tensor *x = k->n > 0 && !k->closed ? k->v[--k->n] : NULL;
    df__spin_unlock(&k->lock);
    if (!x) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack is empty"); return; }
    c->out[0] = df__stack_give(c, x);
}
DF_PRIVATE void df__k_stack_close(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df__spin_lock(&k->lock);
    k->closed = 1;
    df__spin_unlock(&k->lock);
}

/* ---- Stacks indexed by iteration, for while-loop gradients: LoopStackPush keeps its value
   under the iteration of the loop it runs in, so pushes need no order among themselves;
   LoopStackPop, in the gradient loop's iteration k, takes the value of iteration count-1-k
   (count: the forward loop's LoopCount), each value once. ---- */
DF_PRIVATE void df__k_loop_push(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df_tensor *x = c->in[1], *kept = df__stack_keep(c, x);
    if (!kept) return;
    int64_t i = c->iter;
    df__spin_lock(&k->lock);
    int bad = x->dtype != k->type, closed = k->closed, full = i >= INT32_MAX - 1 || (k->max >= 0 && i >= k->max);
    int twice = !bad && !closed && !full && i < k->n && k->v[i];
    int ok = !bad && !closed && !full && !twice && df__grow(&k->v, &k->cap, (int)i + 1, sizeof(df_tensor *));
    if (ok) {
        while (k->n <= i) k->v[k->n++] = NULL;
        k->v[i] = kept;
    }
    df__spin_unlock(&k->lock);
    if (ok) { if (c->need & 1) c->out[0] = df_tensor_retain(x); return; }
    df_tensor_release(kept);
    if (closed) DF__KFAIL(c, DF_ABORTED, "Stack was closed");
    else if (bad) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds %s, got %s", df_dtype_name(k->type), df_dtype_name(x->dtype));
    else if (full) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Stack is full at iteration %lld (max_size %lld)", (long long)i, (long long)k->max);
    else if (twice) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack already holds a value of iteration %lld", (long long)i);
    else DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory pushing on a stack");
}
DF_PRIVATE void df__k_loop_pop(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    const df_tensor *n = c->in[1];
    if (!df__is_int_tensor(n) || n->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "count must be an integer scalar"); return; }
    int64_t i = df__int_at(n, 0) - 1 - c->iter;
    df__spin_lock(&k->lock);
    df_tensor *x = NULL;
    if (i >= 0 && i < k->n && !k->closed) { x = k->v[i]; k->v[i] = NULL; }
    df__spin_unlock(&k->lock);
    if (!x) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds no value of iteration %lld (count %lld, popped in iteration %lld)", (long long)i, (long long)df__int_at(n, 0), (long long)c->iter); return; }
    c->out[0] = df__stack_give(c, x);
}
/* ---- Row stacks: LoopStackPushN keeps the K values of the iteration i it runs in as row i
   (v[i*K + s]); LoopStackPopN, in the gradient loop's iteration k, takes row count-1-k, each row
   once. One push and one pop per iteration for all the values a gradient loop reads from its
   loop's body, where a stack each took a push and a pop per value. ---- */
DF_PRIVATE void df__k_loop_push_n(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    int K = c->n_in - 1;
    if (K < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "LoopStackPushN needs at least one value"); return; }
    if (!c->gpu) {           /* host memory, a row that fits and is free: its values kept in place */
        int64_t i = c->iter, at = i * K;
        int done = 0;
        df__spin_lock(&k->lock);
        if ((k->row == K || !k->row) && !k->closed && i < (INT32_MAX - 1) / K && (k->max < 0 || i < k->max) &&
            at + K <= k->cap && (at >= k->n || !k->v[at])) {
            k->row = K;
            while (k->n < at) k->v[k->n++] = NULL;
            for (int s = 0; s < K; s++) k->v[at + s] = df_tensor_retain(c->in[1 + s]);
            if (k->n < at + K) k->n = (int)(at + K);
            done = 1;
        }
        df__spin_unlock(&k->lock);
        if (done) return;
    }
    df_tensor *small[8], **kept = K <= 8 ? small : (df_tensor **)DF_MALLOC((size_t)K * sizeof(df_tensor *));
    if (!kept) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory pushing on a stack"); return; }
    int n_kept = 0;
    if (!c->gpu) for (; n_kept < K; n_kept++) kept[n_kept] = df_tensor_retain(c->in[1 + n_kept]);
    while (n_kept < K && (kept[n_kept] = df__stack_keep(c, c->in[1 + n_kept])) != NULL) n_kept++;
    int64_t i = c->iter, at = i * K;
    int ok = 0, other = 0, closed = 0, full = 0, twice = 0;
    if (n_kept == K) {
        df__spin_lock(&k->lock);
        other = k->row && k->row != K;
        closed = k->closed;
        full = i >= (INT32_MAX - 1) / K || (k->max >= 0 && i >= k->max);
        twice = !other && !closed && !full && at < k->n && k->v[at];
        ok = !other && !closed && !full && !twice && (at + K <= k->cap || df__grow(&k->v, &k->cap, (int)(at + K), sizeof(df_tensor *)));
        if (ok) {
            k->row = K;
            while (k->n < at + K) k->v[k->n++] = NULL;
            for (int s = 0; s < K; s++) k->v[at + s] = kept[s];
        }
        df__spin_unlock(&k->lock);
    }
    if (!ok) for (int s = 0; s < n_kept; s++) df_tensor_release(kept[s]);
    if (kept != small) DF_FREE(kept);
    if (ok || n_kept < K) return;          /* (a value that could not be kept: st is set) */
    if (closed) DF__KFAIL(c, DF_ABORTED, "Stack was closed");
    else if (other) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds rows of %d values, got %d", k->row, K);
    else if (full) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Stack is full at iteration %lld (max_size %lld)", (long long)i, (long long)k->max);
    else if (twice) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack already holds the values of iteration %lld", (long long)i);
    else DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory pushing on a stack");
}
DF_PRIVATE void df__k_loop_pop_n(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    const df_tensor *n = c->in[1];
    if (!df__is_int_tensor(n) || n->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "count must be an integer scalar"); return; }
    int K = c->n_out;
    int64_t r = df__int_at(n, 0) - 1 - c->iter;
    df__spin_lock(&k->lock);
    int row = k->row, ok = K >= 1 && row == K && r >= 0 && r < k->n / K && !k->closed && k->v[r * K];
    for (int s = 0; ok && s < K; s++) {
        df_tensor *x = k->v[r * K + s];
        ok = x && x->dtype == c->node->out_types[s];
    }
    if (ok) for (int s = 0; s < K; s++) { c->out[s] = k->v[r * K + s]; k->v[r * K + s] = NULL; }
    df__spin_unlock(&k->lock);
    if (!ok) {
        if (row && row != K) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds rows of %d values, pop gives %d", row, K);
        else DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds no values of iteration %lld of the types popped (count %lld, popped in iteration %lld)",
                       (long long)r, (long long)df__int_at(n, 0), (long long)c->iter);
        return;
    }
    if (!c->gpu) return;                   /* host memory: the kept values as they are */
    for (int s = 0; s < K; s++) {
        if (!c->out[s]) continue;
        if (!(c->out[s] = df__stack_give(c, c->out[s]))) {        /* (st set; the rest go back) */
            for (int t = s + 1; t < K; t++) { df_tensor_release(c->out[t]); c->out[t] = NULL; }
            return;
        }
    }
}
/* Whether the number of the iteration it runs in is below `limit`: a gradient loop's predicate
   in one node. In host memory its value is one of two boolean scalars that live as long as the
   program (their first reference is never dropped, and with no allocator no kernel writes into
   them in place), so an iteration allocates nothing for it. */
static unsigned char df__loop_pred_bytes[2] = {0, 1};
static df_tensor df__loop_pred[2] = {
    {.refs = 1, .dtype = DF_BOOL, .rank = 0, .n = 1, .nbytes = 1, .data = &df__loop_pred_bytes[0]},
    {.refs = 1, .dtype = DF_BOOL, .rank = 0, .n = 1, .nbytes = 1, .data = &df__loop_pred_bytes[1]},
};
DF_PRIVATE void df__k_loop_iteration_less(df__kctx *c) {
    const df_tensor *n = c->in[0];
    if (!df__is_int_tensor(n) || n->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "limit must be an integer scalar"); return; }
    int less = c->iter < df__int_at(n, 0);
    if (!c->gpu) { c->out[0] = df_tensor_retain(&df__loop_pred[less]); return; }
    df_tensor *o = df__k_alloc(c, 0, DF_BOOL, 0, NULL);
    if (o) *(uint8_t *)o->data = (uint8_t)less;
}
DF_PRIVATE void df__k_loop_count(df__kctx *c) {         /* never scheduled: the executor fires it */
    DF__KFAIL(c, DF_INTERNAL, "LoopCount ran as a node");
}

/* ---- SumAccumulator: per-run state summing the values added to it (the gradients of loop
   invariants, one add per iteration of a gradient loop, in iteration order). ---- */
DF_PRIVATE void df__k_accum(df__kctx *c) { df__k_new_state(c, 1, df__attr_type(c->node, "dtype")); }
static df__stack *df__k_accum_of(df__kctx *c) { return df__k_state_of(c, 1); }
/* *acc += x (a fresh tensor; *acc NULL: x itself). The caller holds the lock. Returns 0 with
   st set on a shape mismatch or no memory. */
static int df__accum_into(df__kctx *c, df_tensor **acc, df_tensor *x) {
    df_tensor *old = *acc;
    if (!old) { *acc = df_tensor_retain(x); return 1; }
    int same = old->rank == x->rank;
    for (int d = 0; same && d < x->rank; d++) same = old->dims[d] == x->dims[d];
    if (!same) {
        df__shape so = df__shape_of(old), sx = df__shape_of(x);
        char s1[96], s2[96];
        df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Accumulator holds shape %s, got %s", df__dims_str(so.rank, so.dims, s1, 96), df__dims_str(sx.rank, sx.dims, s2, 96));
        return 0;
    }
    if (__atomic_load_n(&old->refs, __ATOMIC_ACQUIRE) == 1 && !old->base && !old->ref && old->alloc) {
        return df__add_data(DF__B_ADD, old, old, x, c->st) == DF_OK;   /* ours alone */
    }
    df_tensor *sum = df__tensor_alloc(c->alloc, x->dtype, x->rank, x->dims, c->st);
    if (!sum) return 0;
    if (df__add_data(DF__B_ADD, sum, old, x, c->st)) { df_tensor_release(sum); return 0; }
    *acc = sum;
    df_tensor_release(old);
    return 1;
}
/* Adds the first waiting value into the sum and drops it from the waiting list. */
static int df__accum_take_front(df__kctx *c, df__stack *k) {
    df_tensor *t = k->pend[0].t;
    int ok = df__accum_into(c, &k->v[0], t);
    df_tensor_release(t);
    memmove(k->pend, k->pend + 1, (size_t)--k->n_pend * sizeof(df__pend));
    return ok;
}
/* Values are summed in the order of the iterations they come from, whatever order they arrive
   in (parallel iterations), so the sum is the same for any parallel_iterations: a value of a
   later iteration waits in pend until the ones before it are in. Values of one iteration, or
   of an earlier one than the next expected, are added as they come. */
static void df__accum_add_value(df__kctx *c, df__stack *k, df_tensor *x);
DF_PRIVATE void df__k_accum_add(df__kctx *c) {
    df__stack *k = df__k_accum_of(c);
    if (!k) return;
    df_tensor *x = c->in[1];
    if (x->dtype != k->type || (x->dtype != DF_FLOAT && x->dtype != DF_DOUBLE)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Accumulator holds %s, got %s", df_dtype_name(k->type), df_dtype_name(x->dtype)); return; }
    df__accum_add_value(c, k, x);
}
/* Adds x (which the caller keeps) to accumulator k in iteration c->iter's turn. */
static void df__accum_add_value(df__kctx *c, df__stack *k, df_tensor *x) {
    int64_t i = c->iter;
    int ok = 1;
    df__spin_lock(&k->lock);
    if (!k->cap && !df__grow(&k->v, &k->cap, 1, sizeof(df_tensor *))) ok = 0;
    else if (!k->n) { k->v[0] = NULL; k->n = 1; }
    if (!ok) {
        df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    } else if (i <= k->next) {
        ok = df__accum_into(c, &k->v[0], x);
        if (ok && i == k->next) {
            k->next++;
            while (ok && k->n_pend && k->pend[0].iter == k->next) {
                ok = df__accum_take_front(c, k);
                k->next++;
            }
        }
    } else {
        int at = 0;
        while (at < k->n_pend && k->pend[at].iter < i) at++;
        if (at < k->n_pend && k->pend[at].iter == i) ok = df__accum_into(c, &k->pend[at].t, x);
        else if (!df__grow(&k->pend, &k->cap_pend, k->n_pend + 1, sizeof(df__pend))) {
            ok = 0;
            df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory");
        } else {
            memmove(k->pend + at + 1, k->pend + at, (size_t)(k->n_pend - at) * sizeof(df__pend));
            k->pend[at].iter = i;
            k->pend[at].t = df_tensor_retain(x);
            k->n_pend++;
        }
    }
    df__spin_unlock(&k->lock);
    if (!ok && !c->st->code) df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    if (!ok && !strstr(c->st->message, "{{node")) {
        char msg[sizeof c->st->message];
        memcpy(msg, c->st->message, sizeof msg);
        df__fail(c->st, c->node, c->st->code, "%.400s", msg);
    }
}
/* SumAccumulatorMulAdd(handle, x, y): adds x * y (Mul's broadcasting) to the sum, as a Mul
   feeding a SumAccumulatorAdd does (the gradient of a loop invariant that a Mul reads), in one
   kernel; its output is x * y, made only when something reads it (a second-order gradient).
   In host memory, with its iteration next in turn, nothing waiting and the sum its own of the
   operands' shape, the products go through a small buffer straight into the sum: the same
   rounding of the same operations as the two ops (a product, then a sum), no tensor made. */
static int df__same_dims(const df_tensor *a, const df_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++) if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}
DF_PRIVATE void df__k_accum_mul_add(df__kctx *c) {
    df__stack *k = df__k_accum_of(c);
    if (!k) return;
    df_tensor *x = c->in[1], *y = c->in[2];
    if (x->dtype != k->type || y->dtype != x->dtype || (x->dtype != DF_FLOAT && x->dtype != DF_DOUBLE)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Accumulator holds %s, got %s and %s", df_dtype_name(k->type), df_dtype_name(x->dtype), df_dtype_name(y->dtype));
        return;
    }
    if (!c->gpu && !(c->need & 1) && df__same_dims(x, y)) {
        int done = 0;
        df__spin_lock(&k->lock);
        df_tensor *acc = k->n ? k->v[0] : NULL;
        if (c->iter == k->next && !k->n_pend && acc && acc->dtype == x->dtype && df__same_dims(acc, x) &&
            __atomic_load_n(&acc->refs, __ATOMIC_ACQUIRE) == 1 && !acc->base && !acc->ref && acc->alloc) {
            if (!k->mul_row) k->mul_row = df__binary_row(DF__B_MUL, x->dtype), k->add_row = df__binary_row(DF__B_ADD, x->dtype);
            df__row_fn mul = k->mul_row, add = k->add_row;
            _Alignas(64) unsigned char tmp[1024];
            size_t es = df_dtype_size(x->dtype);
            int64_t step = (int64_t)(sizeof tmp / es);
            char *pa = (char *)acc->data;
            const char *px = (const char *)x->data, *py = (const char *)y->data;
            for (int64_t at = 0; at < x->n; at += step) {
                int64_t m = x->n - at < step ? x->n - at : step;
                size_t off = (size_t)at * es;
                mul(tmp, px + off, py + off, m, 1, 1);
                add(pa + off, pa + off, tmp, m, 1, 1);
            }
            k->next++;
            done = 1;
        }
        df__spin_unlock(&k->lock);
        if (done) return;
    }
    /* the product as Mul makes it (on a GPU, in host memory and back), then added as by
       SumAccumulatorAdd */
    df_tensor *hx = x, *hy = y;
    if (c->gpu) {
        hx = df__to_host(c->dev, x, c->st);
        hy = hx ? df__to_host(c->dev, y, c->st) : NULL;
        if (!hy) { df_tensor_release(hx); return; }
    }
    df_tensor *ins[2] = {hx, hy}, *outs[1] = {NULL};
    df__kctx m = *c;
    m.in = ins; m.out = outs; m.n_in = 2; m.n_out = 1; m.need = 1; m.gpu = NULL; m.host_out = 0;
    if (c->gpu && !(m.alloc = df__host_allocator())) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
    else df__k_binary(&m);                 /* (its failures name this node) */
    if (c->gpu) { df_tensor_release(ins[0]); df_tensor_release(ins[1]); }   /* (the copies Mul did not take) */
    else {
        if (!ins[0]) c->in[1] = NULL;      /* an operand Mul took as its output: handed on */
        if (!ins[1]) c->in[2] = NULL;
    }
    df_tensor *p = outs[0];
    if (p && c->gpu) {
        df_tensor *d = df__to_device(c->dev, p, c->st);
        df_tensor_release(p);
        p = d;
    }
    if (!p) {
        if (!c->st->code) DF__KFAIL(c, DF_INTERNAL, "No product to accumulate");
        return;
    }
    df__accum_add_value(c, k, p);
    if (!c->st->code && (c->need & 1)) c->out[0] = p;
    else df_tensor_release(p);
}
DF_PRIVATE df_code df__sf_accum_mul_add(df__shape_ctx *c) {
    df__shape_ctx b = *c;                  /* Mul's shape of inputs 1 and 2 */
    b.in_shapes = c->in_shapes + 1;
    b.in_types = c->in_types ? c->in_types + 1 : NULL;
    return df__sf_binary(&b);
}
/* The sum (values still waiting, of iterations after one that added nothing, go in in order);
   `default` when nothing was added. */
DF_PRIVATE void df__k_accum_read(df__kctx *c) {
    df__stack *k = df__k_accum_of(c);
    if (!k) return;
    int ok = 1;
    df__spin_lock(&k->lock);
    while (ok && k->n_pend) ok = df__accum_take_front(c, k);
    df_tensor *s = ok && k->n && k->v[0] ? df_tensor_retain(k->v[0]) : NULL;
    df__spin_unlock(&k->lock);
    if (ok) c->out[0] = s ? s : df_tensor_retain(c->in[1]);
}
DF_PRIVATE df_code df__sf_accum_read(df__shape_ctx *c) { *df__sc_out(c, 0) = c->in_shapes[1]; return DF_OK; }
DF_PRIVATE df_code df__sf_push(df__shape_ctx *c) { *df__sc_out(c, 0) = c->in_shapes[1]; return DF_OK; }
DF_PRIVATE df_code df__sf_unknown(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = df__shape_unknown();
    return DF_OK;
}
