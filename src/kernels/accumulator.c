/* ==========================================================================================
   src/kernels/accumulator.c: Gradient accumulators (synchronous replicas)      >>accumulator
   TensorFlow's ConditionalAccumulator (and ResourceConditionalAccumulator) and the ops on its
   handle: AccumulatorApplyGradient adds a gradient when its local_step is not below the
   accumulator's global step (a stale one is dropped without error), AccumulatorTakeGradient
   waits until num_required gradients are in, outputs their mean (or sum: reduction_type),
   empties the accumulator and advances its global step; AccumulatorNumAccumulated and
   AccumulatorSetGlobalStep. An accumulator belongs to its session, keyed like a queue
   (df__resource_key 'a': container/shared_name, else the node's name, in the step's scope
   unless a container is named), so the masters of a parameter server share one in a named
   container. A TakeGradient that cannot finish waits in the accumulator's line of takes as a
   queue's dequeue does (src/queue.c): a threaded step parks the node and whoever completes the
   take resumes it; a step without threads waits on the condition variable (run deadline
   honoured); an aborted step's takes and every take at df_session_free end CANCELLED.
   df_sync_replicas_sgd (at the end) builds TF's SyncReplicasOptimizer pattern for SGD.
   ========================================================================================== */
#define DF__ACCUM_MAGIC 0x41434355u      /* "ACCU": the check word of an accumulator handle */

enum { DF__AT_OWNER, DF__AT_PARKED };
typedef struct df__atake {
    struct df__atake *next;
    int64_t need;                /* num_required */
    int mode, finished;          /* as a queue attempt's (src/queue.c) */
    df_status st;
    const df_node *node;
    df__allocator *alloc;
    df__step *step;
    df__tagged tag;
    df_tensor *out;              /* the average, once finished */
} df__atake;

typedef struct df__accum {
    char *name;                  /* shared_name, else the node's name (messages) */
    uint64_t scope;
    struct df__accum_set *set;
    df_dtype dtype;
    df__shape shape;             /* rank -1: any; dims -1: any size */
    int mean;                    /* reduction_type MEAN (else SUM) */
    df_tensor *sum;              /* what was accumulated (NULL: nothing yet) */
    int64_t counter, global_step;
    int shut;
    df__atake *takes;            /* waiting takes, oldest first */
#ifndef DF_NO_THREADS
    pthread_mutex_t mu;
    pthread_cond_t cv;
#else
    df__spin mu;
#endif
} df__accum;

typedef struct df__accum_set {
    df__spin lock;
    df__strmap names;            /* df__resource_key 'a' -> index in v */
    df__accum **v;               /* (NULL: a slot a dropped scope freed) */
    int n, cap;
    int *free, n_free, cap_free;
    int shut;
    int parked;                  /* PARKED takes not yet finished (atomic) */
} df__accum_set;

#ifndef DF_NO_THREADS
static void df__accum_lock(df__accum *a) { pthread_mutex_lock(&a->mu); }
static void df__accum_unlock(df__accum *a) { pthread_mutex_unlock(&a->mu); }
#else
static void df__accum_lock(df__accum *a) { df__spin_lock(&a->mu); }
static void df__accum_unlock(df__accum *a) { df__spin_unlock(&a->mu); }
#endif

static int df__accum_type_ok(df_dtype t) { return t == DF_FLOAT || t == DF_DOUBLE; }

/* ---- what the graph says: the accumulator node behind a handle ---- */
static int df__accum_is_def(const df_node *n) {
    return !strcmp(n->op->name, "ConditionalAccumulator") || !strcmp(n->op->name, "ResourceConditionalAccumulator");
}
static const df_node *df__accum_def(df_output o) {
    for (int depth = 0; o.node && depth < 32; depth++) {
        if (df__accum_is_def(o.node)) return o.node;
        if (strcmp(o.node->op->name, "Identity") || o.node->n_inputs < 1) return NULL;
        o = o.node->inputs[0];
    }
    return NULL;
}
static const char *df__accum_def_name(const df_node *def) {
    const char *shared = df__attr_s(def, "shared_name");
    return *shared ? shared : def->name;
}
static df__shape df__accum_def_shape(const df_node *def) {
    const df__attr *s = df__attr_find_kind(def, "shape", DF__A_SHAPE);
    df__shape sh = df__shape_unknown();
    if (s && s->u.shape.rank >= 0 && s->u.shape.rank <= DF_MAX_RANK) {
        sh.rank = s->u.shape.rank;
        for (int i = 0; i < sh.rank; i++) sh.dims[i] = s->u.shape.dims[i];
    }
    return sh;
}
static int df__accum_shape_ok(const df__shape *want, int rank, const int64_t *dims) {
    if (want->rank < 0 || rank < 0) return 1;
    if (want->rank != rank) return 0;
    for (int i = 0; i < rank; i++) if (want->dims[i] >= 0 && dims[i] >= 0 && want->dims[i] != dims[i]) return 0;
    return 1;
}

DF_PRIVATE df_code df__sf_accumulator(df__shape_ctx *c) {
    df_dtype t = (df_dtype)df__attr_i(c->node, "dtype", 0);
    const df__attr *ta = df__attr_find_kind(c->node, "dtype", DF__A_TYPE);
    if (ta) t = ta->u.type;
    if (!df__accum_type_ok(t))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "%s accumulates float or double gradients, not %s",
                        c->node->op->name, df_dtype_name(t));
    const char *red = df__attr_s(c->node, "reduction_type");
    if (*red && strcmp(red, "MEAN") && strcmp(red, "SUM"))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "reduction_type of %s must be MEAN or SUM, not '%s'",
                        c->node->op->name, red);
    *df__sc_out(c, 0) = df__shape_scalar();
    return DF_OK;
}
/* ApplyGradient: the gradient's type and shape against the accumulator's, when it is seen. */
DF_PRIVATE df_code df__sf_accum_apply(df__shape_ctx *c) {
    const df_node *def = df__accum_def(c->node->inputs[0]);
    if (c->in_shapes[1].rank > 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "local_step of %s must be a scalar, got rank %d",
                        c->node->op->name, c->in_shapes[1].rank);
    if (!def) return DF_OK;
    const df__attr *ta = df__attr_find_kind(def, "dtype", DF__A_TYPE);
    if (ta && ta->u.type != c->in_types[2])
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Accumulator '%s' holds %s gradients; %s was given %s",
                        df__accum_def_name(def), df_dtype_name(ta->u.type), c->node->op->name, df_dtype_name(c->in_types[2]));
    df__shape want = df__accum_def_shape(def), got = c->in_shapes[2];
    if (!df__accum_shape_ok(&want, got.rank, got.dims)) {
        char s1[96], s2[96];
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shape mismatch: accumulator '%s' has shape %s, the gradient has %s",
                        df__accum_def_name(def), df__dims_str(want.rank, want.dims, s1, 96), df__dims_str(got.rank, got.dims, s2, 96));
    }
    return DF_OK;
}
DF_PRIVATE df_code df__sf_accum_take(df__shape_ctx *c) {
    const df_node *def = df__accum_def(c->node->inputs[0]);
    *df__sc_out(c, 0) = def ? df__accum_def_shape(def) : df__shape_unknown();
    if (c->in_shapes[1].rank > 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "num_required of %s must be a scalar, got rank %d",
                        c->node->op->name, c->in_shapes[1].rank);
    const df__attr *ta = def ? df__attr_find_kind(def, "dtype", DF__A_TYPE) : NULL;
    if (ta && ta->u.type != c->node->out_types[0])
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Accumulator '%s' holds %s gradients; %s asks for %s",
                        df__accum_def_name(def), df_dtype_name(ta->u.type), c->node->op->name, df_dtype_name(c->node->out_types[0]));
    return DF_OK;
}

/* ---- the session's accumulators ---- */
static df__accum_set *df__accum_set_of(df_session *ss, int create) {
    df__accum_set *set = __atomic_load_n(&ss->accums, __ATOMIC_ACQUIRE);
    if (set || !create) return set;
    df__accum_set *fresh = (df__accum_set *)DF_MALLOC(sizeof *fresh);
    if (!fresh) return NULL;
    memset(fresh, 0, sizeof *fresh);
    df__spin_lock(&ss->lock);
    if (!(set = ss->accums)) { set = fresh; fresh = NULL; __atomic_store_n(&ss->accums, set, __ATOMIC_RELEASE); }
    df__spin_unlock(&ss->lock);
    DF_FREE(fresh);
    return set;
}
static void df__accum_free(df__accum *a) {
    if (!a) return;
    df_tensor_release(a->sum);
#ifndef DF_NO_THREADS
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
#endif
    DF_FREE(a->name);
    DF_FREE(a);
}

/* ConditionalAccumulator / ResourceConditionalAccumulator: finds or makes the session's
   accumulator; its handle is a resource scalar (check word, index). A shared one must be asked
   for with the dtype and shape it was made with. */
DF_PRIVATE void df__k_accumulator(df__kctx *c) {
    df_session *ss = c->step->session;
    if (!ss) { DF__KFAIL(c, DF_FAILED_PRECONDITION, "%s runs only in a session", c->node->op->name); return; }
    const df__attr *ta = df__attr_find_kind(c->node, "dtype", DF__A_TYPE);
    df_dtype t = ta ? ta->u.type : DF_FLOAT;
    df__shape shape = df__accum_def_shape(c->node);
    int mean = strcmp(df__attr_s(c->node, "reduction_type"), "SUM") != 0;
    const char *name = df__accum_def_name(c->node);
    df__buf key = {NULL, 0, 0, 0};
    uint64_t scope = df__resource_key(&key, 'a', c->step->scope, df__attr_s(c->node, "container"), name);
    df__accum_set *set = key.oom ? NULL : df__accum_set_of(ss, 1);
    if (!set) { DF_FREE(key.s); DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making the session's accumulators"); return; }
    int idx = -1;
    df__accum *a = NULL;
    df_status made;
    df_status_clear(&made);
    df__spin_lock(&set->lock);
    if (set->shut) df__fail(&made, c->node, DF_CANCELLED, "The session is being freed: accumulator '%s' is not made", name);
    else if (df__strmap_get(&set->names, key.s, &idx)) a = set->v[idx];
    else if ((a = (df__accum *)DF_MALLOC(sizeof *a)) != NULL) {
        memset(a, 0, sizeof *a);
        a->name = df__strdup(name);
        a->dtype = t;
        a->shape = shape;
        a->mean = mean;
        a->set = set;
        a->scope = scope;
#ifndef DF_NO_THREADS
        pthread_mutex_init(&a->mu, NULL);
        pthread_cond_init(&a->cv, NULL);
#endif
        if (set->n_free) idx = set->free[--set->n_free];
        else if (set->n < INT32_MAX && df__grow(&set->v, &set->cap, set->n + 1, sizeof(df__accum *))) idx = set->n++;
        if (a->name && idx >= 0 && df__strmap_put(&set->names, key.s, idx)) set->v[idx] = a;
        else {
            if (idx >= 0) {
                if (idx == set->n - 1) set->n--;
                else if (df__grow(&set->free, &set->cap_free, set->n_free + 1, sizeof(int))) set->free[set->n_free++] = idx;
            }
            df__accum_free(a);
            a = NULL;
        }
    }
    if (!a && !made.code) df__fail(&made, c->node, DF_RESOURCE_EXHAUSTED, "Out of memory making accumulator '%s'", name);
    df__spin_unlock(&set->lock);
    DF_FREE(key.s);
    if (!a) { *c->st = made; return; }
    if (a->dtype != t || a->shape.rank != shape.rank ||
        (shape.rank > 0 && memcmp(a->shape.dims, shape.dims, (size_t)shape.rank * sizeof(int64_t)))) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shared accumulator '%s' holds %s of shape %s; %s asks for %s of shape %s", a->name,
                  df_dtype_name(a->dtype), df__dims_str(a->shape.rank, a->shape.dims, s1, 96), c->node->op->name,
                  df_dtype_name(t), df__dims_str(shape.rank, shape.dims, s2, 96));
        return;
    }
    if (a->mean != mean) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shared accumulator '%s' was made with reduction_type %s; %s asks for %s", a->name,
                  a->mean ? "MEAN" : "SUM", c->node->op->name, mean ? "MEAN" : "SUM");
        return;
    }
    df_tensor *o = df__k_alloc(c, 0, DF_RESOURCE, 0, NULL);
    if (o) { uint64_t w = ((uint64_t)DF__ACCUM_MAGIC << 32) | (uint64_t)(uint32_t)idx; memcpy(o->data, &w, 8); }
}

/* The accumulator behind input 0, which must be a handle made in this session (and scope). */
static df__accum *df__accum_of(df__kctx *c) {
    const df_tensor *h = c->in[0];
    df__accum_set *set = c->step->session ? df__accum_set_of(c->step->session, 0) : NULL;
    df__accum *a = NULL;
    uint64_t w = 0;
    if (h && h->dtype == DF_RESOURCE && h->n == 1) memcpy(&w, h->data, 8);
    if (set && (w >> 32) == DF__ACCUM_MAGIC) {
        int64_t idx = (int64_t)(w & 0xffffffffu);
        df__spin_lock(&set->lock);
        if (idx < set->n) a = set->v[idx];
        if (a && a->scope && a->scope != c->step->scope) a = NULL;
        df__spin_unlock(&set->lock);
    }
    if (!a) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input 0 of %s is not an accumulator handle made in this session", c->node->op->name);
    return a;
}

/* ---- takes (callers hold the accumulator's lock) ---- */
/* The mean (or sum) of what was accumulated into a new tensor; the accumulator empties and its
   global step advances (TF: TakeGradLockedHelper). */
static df_tensor *df__accum_result(df__accum *a, df__atake *t) {
    df_tensor *out = df__tensor_alloc(t->alloc, a->dtype, a->sum->rank, a->sum->dims, &t->st);
    if (!out) {
        if (!t->st.code) df__fail(&t->st, t->node, DF_RESOURCE_EXHAUSTED, "Out of memory taking the gradient of '%s'", a->name);
        return NULL;
    }
    double k = a->mean ? (double)a->counter : 1.0;
    if (a->dtype == DF_FLOAT) {
        const float *s = (const float *)a->sum->data;
        float *o = (float *)out->data, kf = (float)k;
        for (int64_t i = 0; i < out->n; i++) o[i] = s[i] / kf;
    } else {
        const double *s = (const double *)a->sum->data;
        double *o = (double *)out->data;
        for (int64_t i = 0; i < out->n; i++) o[i] = s[i] / k;
    }
    a->global_step++;
    a->counter = 0;
    df_tensor_release(a->sum);
    a->sum = NULL;
    return out;
}
static void df__accum_finished(df__atake *t, df__atake **parked, int *woke) {
    if (t->mode == DF__AT_PARKED) { t->next = *parked; *parked = t; }
    else { t->next = NULL; t->finished = 1; *woke = 1; }
}
/* Serves the takes in order while enough gradients are in. */
static void df__accum_flush(df__accum *a, df__atake **parked, int *woke) {
    while (a->takes && a->counter >= a->takes->need && a->sum) {
        df__atake *t = a->takes;
        a->takes = t->next;
        t->out = df__accum_result(a, t);
        df__accum_finished(t, parked, woke);
    }
}
/* Every take fails CANCELLED (the session ends), or only that step's PARKED ones (it aborted). */
static void df__accum_cancel(df__accum *a, const df__step *only_step, df__atake **parked, int *woke) {
    df__atake **link = &a->takes;
    while (*link) {
        df__atake *t = *link;
        if (only_step && (t->mode != DF__AT_PARKED || t->step != only_step)) { link = &t->next; continue; }
        *link = t->next;
        df__fail(&t->st, t->node, DF_CANCELLED, "TakeGradient operation was cancelled: %s",
                 only_step ? "its run was aborted" : "the session is being freed");
        df__accum_finished(t, parked, woke);
    }
}

/* A PARKED take taken out of the line: its node resumes with the average (or its error), as a
   queue's dequeue does (df__queue_complete). Called without the accumulator's lock. */
static void df__accum_complete(df__accum *a, df__atake *t) {
    df__step *s = t->step;
    df__accum_set *set = a->set;
    if (t->st.code) { df__step_error(s, &t->st); df_tensor_release(t->out); t->out = NULL; }
    df__wake w;
    memset(&w, 0, sizeof w);
    w.step = s;
    w.tag = t->tag;
    w.outs = (df_tensor **)DF_MALLOC(sizeof(df_tensor *));
    if (w.outs) w.outs[0] = t->out;
    else {
        df_status oom;
        df__fail(&oom, t->node, DF_RESOURCE_EXHAUSTED, "Out of memory resuming a TakeGradient");
        df__step_error(s, &oom);
        df_tensor_release(t->out);
    }
    DF_FREE(t);
    __atomic_add_fetch(&s->active, 1, __ATOMIC_ACQ_REL);
    int resumed = 0;
#ifndef DF_NO_THREADS
    if (!s->group && s->pool) {
        df__wake *heap = (df__wake *)DF_MALLOC(sizeof *heap);
        df__task task;
        memset(&task, 0, sizeof task);
        task.step = s;
        task.wake = heap;
        if (heap) *heap = w;
        if (heap && df__pool_push(s->pool, &task)) {
            resumed = 1;
            pthread_mutex_lock(&s->done_mu);
            pthread_cond_broadcast(&s->done_cv);
            pthread_mutex_unlock(&s->done_mu);
        } else DF_FREE(heap);
    }
#endif
    if (!resumed) df__wake_dispatch(&w);
    if (s->group) __atomic_sub_fetch(&s->group->pending_wakes, 1, __ATOMIC_ACQ_REL);
    __atomic_sub_fetch(&set->parked, 1, __ATOMIC_ACQ_REL);
    df__step_task_done(s);
}
static void df__accum_complete_all(df__accum *a, df__atake *parked) {
    while (parked) {
        df__atake *next = parked->next;
        df__accum_complete(a, parked);
        parked = next;
    }
}

/* ---- kernels ---- */
/* AccumulatorApplyGradient: a gradient of an older step than the accumulator's is dropped
   (TF does not even check it); else its type and shape must be the accumulator's (and those of
   what is in it already), and it is added. Waiting takes are served after. */
DF_PRIVATE void df__k_accum_apply(df__kctx *c) {
    df__accum *a = df__accum_of(c);
    if (!a) return;
    const df_tensor *ls = c->in[1], *g = c->in[2];
    if (!ls || ls->dtype != DF_INT64 || ls->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "local_step must be an int64 scalar"); return; }
    int64_t local_step = ((const int64_t *)ls->data)[0];
    df__atake *parked = NULL;
    int woke = 0;
    df__accum_lock(a);
    if (local_step >= a->global_step) {
        char s1[96], s2[96];
        if (g->dtype != a->dtype)
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Accumulator '%s' holds %s gradients; %s was given %s", a->name,
                      df_dtype_name(a->dtype), c->node->op->name, df_dtype_name(g->dtype));
        else if (!df__accum_shape_ok(&a->shape, g->rank, g->dims))
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape mismatch: accumulator '%s' has shape %s, the gradient has %s", a->name,
                      df__dims_str(a->shape.rank, a->shape.dims, s1, 96), df__dims_str(g->rank, g->dims, s2, 96));
        else if (a->sum && (a->sum->rank != g->rank || (g->rank && memcmp(a->sum->dims, g->dims, (size_t)g->rank * sizeof(int64_t)))))
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape mismatch: accumulator '%s' already holds gradients of shape %s, the "
                      "gradient has %s", a->name, df__dims_str(a->sum->rank, a->sum->dims, s1, 96), df__dims_str(g->rank, g->dims, s2, 96));
        else if (!a->sum) {
            df_tensor *sum = df_tensor_new(a->dtype, g->rank, g->dims, c->st);
            if (sum) {
                if (g->nbytes) memcpy(sum->data, g->data, g->nbytes);
                a->sum = sum;
                a->counter = 1;
            } else DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory accumulating into '%s'", a->name);
        } else {
            if (a->dtype == DF_FLOAT) {
                float *s = (float *)a->sum->data;
                const float *x = (const float *)g->data;
                for (int64_t i = 0; i < g->n; i++) s[i] += x[i];
            } else {
                double *s = (double *)a->sum->data;
                const double *x = (const double *)g->data;
                for (int64_t i = 0; i < g->n; i++) s[i] += x[i];
            }
            a->counter++;
        }
        if (!c->st->code) df__accum_flush(a, &parked, &woke);
    }
#ifndef DF_NO_THREADS
    if (woke) pthread_cond_broadcast(&a->cv);
#endif
    df__accum_unlock(a);
    df__accum_complete_all(a, parked);
}

/* AccumulatorTakeGradient: the average once num_required gradients are in (it waits till then). */
DF_PRIVATE void df__k_accum_take(df__kctx *c) {
    df__accum *a = df__accum_of(c);
    if (!a) return;
    const df_tensor *nr = c->in[1];
    if (!nr || nr->dtype != DF_INT32 || nr->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_required must be an int32 scalar"); return; }
    int32_t need = ((const int32_t *)nr->data)[0];
    if (need <= 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Argument num_required must be positive, but was %d", (int)need); return; }
    if (c->node->out_types[0] != a->dtype) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Accumulator '%s' holds %s gradients; %s asks for %s", a->name, df_dtype_name(a->dtype),
                  c->node->op->name, df_dtype_name(c->node->out_types[0]));
        return;
    }
    df__atake *t = (df__atake *)DF_MALLOC(sizeof *t);
    if (!t) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in a TakeGradient"); return; }
    for (int i = 0; i < c->n_in; i++) { df_tensor_release(c->in[i]); c->in[i] = NULL; }   /* (a parked node keeps none) */
    memset(t, 0, sizeof *t);
    t->need = need;
    t->node = c->node;
    t->alloc = c->alloc;
    df__atake *parked = NULL;
    int woke = 0;
    df__accum_lock(a);
    if (a->shut) {
        df__fail(&t->st, t->node, DF_CANCELLED, "TakeGradient operation was cancelled: the session is being freed");
#ifdef DF_NO_THREADS
    } else if (a->counter < need) {
        df__fail(&t->st, t->node, DF_FAILED_PRECONDITION, "Accumulator '%s' holds %lld gradients, %d required, and this build "
                 "has no threads to wait with (DF_NO_THREADS)", a->name, (long long)a->counter, (int)need);
#endif
    } else {
        df__atake **tail = &a->takes;
        while (*tail) tail = &(*tail)->next;
        *tail = t;
        df__accum_flush(a, &parked, &woke);
#ifndef DF_NO_THREADS
        if (!t->finished && c->step->threaded) {   /* park: whoever completes the take resumes the node */
            t->mode = DF__AT_PARKED;
            t->step = c->step;
            t->tag = *c->tag;
            __atomic_add_fetch(&a->set->parked, 1, __ATOMIC_ACQ_REL);
            if (c->step->group) __atomic_add_fetch(&c->step->group->pending_wakes, 1, __ATOMIC_ACQ_REL);
            c->pending = 1;
            if (woke) pthread_cond_broadcast(&a->cv);
            df__accum_unlock(a);
            df__accum_complete_all(a, parked);
            return;
        }
        if (woke) pthread_cond_broadcast(&a->cv);
        while (!t->finished) {                   /* a step without threads waits: 10 ms at a time (an abort) */
            double left = c->step->deadline_ms > 0 ? c->step->deadline_ms - df__clock_ms() : 10.0;
            int aborted = __atomic_load_n(&c->step->aborted, __ATOMIC_ACQUIRE) ||
                          (c->step->group && __atomic_load_n(&c->step->group->aborted, __ATOMIC_ACQUIRE));
            if (left <= 0 || aborted) {
                df__atake **at = &a->takes;
                while (*at && *at != t) at = &(*at)->next;
                if (*at) *at = t->next;
                if (aborted)
                    df__fail(&t->st, t->node, DF_CANCELLED, "TakeGradient operation was cancelled: its run was aborted");
                else
                    df__fail(&t->st, t->node, DF_DEADLINE_EXCEEDED, "The run did not end within %d ms (df_session_options."
                             "run_timeout_ms): accumulator '%s' still waits for %d gradients (%lld in)", c->step->timeout_ms,
                             a->name, (int)need, (long long)a->counter);
                break;
            }
            struct timespec ts;
            timespec_get(&ts, TIME_UTC);
            ts.tv_nsec += (long)(DF__MIN(left, 10.0) * 1e6);
            while (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            pthread_cond_timedwait(&a->cv, &a->mu, &ts);
        }
#endif
    }
    df__accum_unlock(a);
    df__accum_complete_all(a, parked);
    if (t->st.code) { *c->st = t->st; df_tensor_release(t->out); }
    else c->out[0] = t->out;
    DF_FREE(t);
}

DF_PRIVATE void df__k_accum_num(df__kctx *c) {
    df__accum *a = df__accum_of(c);
    if (!a) return;
    df__accum_lock(a);
    int64_t n = a->counter;
    df__accum_unlock(a);
    df_tensor *o = df__k_alloc(c, 0, DF_INT32, 0, NULL);
    if (o) *(int32_t *)o->data = (int32_t)DF__MIN(n, INT32_MAX);
}
/* AccumulatorSetGlobalStep: set as given (TF only warns when it goes back). */
DF_PRIVATE void df__k_accum_set_step(df__kctx *c) {
    df__accum *a = df__accum_of(c);
    if (!a) return;
    const df_tensor *v = c->in[1];
    if (!v || v->dtype != DF_INT64 || v->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "new_global_step must be an int64 scalar"); return; }
    df__accum_lock(a);
    a->global_step = ((const int64_t *)v->data)[0];
    df__accum_unlock(a);
}

/* ---- the executor's and the session's hooks ---- */
#ifndef DF_NO_THREADS
DF_PRIVATE void df__accums_abort_step(df__step *s) {
    df__accum_set *set = s->session ? df__accum_set_of(s->session, 0) : NULL;
    if (!set || !__atomic_load_n(&set->parked, __ATOMIC_ACQUIRE)) return;
    for (int i = 0;; i++) {
        df__spin_lock(&set->lock);
        int end = i >= set->n;
        df__accum *a = end ? NULL : set->v[i];
        if (a && a->scope && a->scope != s->scope) a = NULL;
        df__spin_unlock(&set->lock);
        if (end) break;
        if (!a) continue;
        df__atake *parked = NULL;
        int woke = 0;
        df__accum_lock(a);
        df__accum_cancel(a, s, &parked, &woke);
        df__accum_unlock(a);
        df__accum_complete_all(a, parked);
    }
}
#endif

/* df_session_free, before the runs in flight are waited for: every waiting take ends CANCELLED
   and later ones are refused. */
DF_PRIVATE void df__accums_cancel(df_session *s) {
    /* (made here if no run made it yet: a run in flight that makes its first accumulator after
       this point finds the set shut, instead of parking a take no one will cancel) */
    df__accum_set *set = df__accum_set_of(s, 1);
    if (!set) return;
    df__spin_lock(&set->lock);
    set->shut = 1;
    int n = set->n;
    df__spin_unlock(&set->lock);
    for (int i = 0; i < n; i++) {
        df__accum *a = set->v[i];
        if (!a) continue;
        df__atake *parked = NULL;
        int woke = 0;
        df__accum_lock(a);
        a->shut = 1;
        df__accum_cancel(a, NULL, &parked, &woke);
#ifndef DF_NO_THREADS
        if (woke) pthread_cond_broadcast(&a->cv);
#endif
        df__accum_unlock(a);
        df__accum_complete_all(a, parked);
    }
}
/* df_session_free, after the runs in flight ended: the accumulators go. */
DF_PRIVATE void df__accums_free(df_session *s) {
    df__accum_set *set = df__accum_set_of(s, 0);
    if (!set) return;
    for (int i = 0; i < set->n; i++) df__accum_free(set->v[i]);
    DF_FREE(set->v);
    DF_FREE(set->free);
    df__strmap_free(&set->names);
    DF_FREE(set);
    s->accums = NULL;
}

#ifdef DF__NET
/* df__session_drop_scope: the scope's accumulators go (no step of that scope runs any more). */
DF_PRIVATE void df__accums_drop_scope(df_session *s, uint64_t scope) {
    df__accum_set *set = df__accum_set_of(s, 0);
    if (!set) return;
    df__spin_lock(&set->lock);
    df__strmap *m = &set->names;
    for (int i = 0; i < m->cap; i++)
        while (m->keys[i] && df__resource_key_in_scope(m->keys[i], scope)) {
            int idx = m->vals[i];
            if (idx >= 0 && idx < set->n && set->v[idx]) {
                df__accum_free(set->v[idx]);      /* (no take waits in it; nothing holds its lock) */
                set->v[idx] = NULL;
                if (df__grow(&set->free, &set->cap_free, set->n_free + 1, sizeof(int))) set->free[set->n_free++] = idx;
            }
            df__strmap_del(m, m->keys[i]);
        }
    df__spin_unlock(&set->lock);
}
#endif

/* ---- public builders ---- */
static df_output df__accum_out(df_node *n) { df_output o = {n, 0}; return o; }

df_output df_conditional_accumulator(df_graph *g, df_dtype dtype, int rank, const int64_t *dims, const char *container,
                                     const char *shared_name) {
    df_op_builder *b = df_op_new(g, "ConditionalAccumulator", NULL);
    df_op_set_attr_type(b, "dtype", dtype);
    if (rank >= 0) df_op_set_attr_shape(b, "shape", rank, dims);
    if (container && *container) df_op_set_attr_string(b, "container", container);
    if (shared_name && *shared_name) df_op_set_attr_string(b, "shared_name", shared_name);
    return df__accum_out(df_op_finish(b));
}
df_node *df_accumulator_apply_gradient(df_graph *g, df_output acc, df_output local_step, df_output gradient) {
    df_op_builder *b = df_op_new(g, "AccumulatorApplyGradient", NULL);
    df_op_add_input(b, acc);
    df_op_add_input(b, local_step);
    df_op_add_input(b, gradient);
    return df_op_finish(b);
}
df_output df_accumulator_take_gradient(df_graph *g, df_output acc, df_output num_required) {
    const df_node *def = df__accum_def(acc);
    const df__attr *ta = def ? df__attr_find_kind(def, "dtype", DF__A_TYPE) : NULL;
    df_op_builder *b = df_op_new(g, "AccumulatorTakeGradient", NULL);
    df_op_add_input(b, acc);
    df_op_add_input(b, num_required);
    df_op_set_attr_type(b, "dtype", ta ? ta->u.type : DF_FLOAT);
    return df__accum_out(df_op_finish(b));
}
df_output df_accumulator_num_accumulated(df_graph *g, df_output acc) {
    df_op_builder *b = df_op_new(g, "AccumulatorNumAccumulated", NULL);
    df_op_add_input(b, acc);
    return df__accum_out(df_op_finish(b));
}
df_node *df_accumulator_set_global_step(df_graph *g, df_output acc, df_output new_global_step) {
    df_op_builder *b = df_op_new(g, "AccumulatorSetGlobalStep", NULL);
    df_op_add_input(b, acc);
    df_op_add_input(b, new_global_step);
    return df_op_finish(b);
}

/* ---- df_sync_replicas_sgd: TensorFlow's SyncReplicasOptimizer for plain SGD ---- */
static df_output df__sync_var(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims, const char *container) {
    df_op_builder *b = df_op_new(g, "VariableV2", name);
    df_op_set_attr_type(b, "dtype", t);
    df_op_set_attr_shape(b, "shape", rank, dims);
    if (container && *container) df_op_set_attr_string(b, "container", container);
    return df__accum_out(df_op_finish(b));
}

df_code df_sync_replicas_sgd(df_graph *g, df_output loss, int n_vars, const df_output *vars, double learning_rate,
                             int replicas_to_aggregate, int total_replicas, int worker_index, const char *container,
                             const char *worker_device, df_sync_replicas *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (!out || n_vars < 1 || n_vars > 64 || !vars || !df__output_valid(loss) || loss.node->graph != g ||
        replicas_to_aggregate < 1 || total_replicas < 1 || total_replicas > 1024 || worker_index < 0 ||
        worker_index >= total_replicas || !(learning_rate > 0) || replicas_to_aggregate > total_replicas || !container || !*container)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_sync_replicas_sgd: bad arguments (loss, n_vars %d (1..64), vars, "
                               "learning_rate %g > 0, replicas_to_aggregate %d in [1, total_replicas] (each worker sends one gradient a round), "
                               "total_replicas %d (1..1024), worker_index %d in [0, total_replicas), a container (the masters share "
                               "the accumulators through it; '%s'), out)", n_vars, learning_rate, replicas_to_aggregate, total_replicas,
                               worker_index, container ? container : "(null)");
    for (int i = 0; i < n_vars; i++)
        if (!df__output_valid(vars[i]) || vars[i].node->graph != g || !vars[i].node->out_is_ref[vars[i].index] ||
            !df__accum_type_ok(df_output_dtype(vars[i])))
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_sync_replicas_sgd: vars[%d] is not a float or double variable "
                                   "(a df_variable output)", i);
    df_output grads[64];
    df_node *applies[64], *updates[64];
    if (df_gradients(g, 1, &loss, NULL, n_vars, vars, grads) != DF_OK) return g->status.code;
    for (int i = 0; i < n_vars; i++)
        if (!grads[i].node)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_sync_replicas_sgd: the loss does not depend on vars[%d] ('%s')",
                                   i, vars[i].node->name);
    const char *ps_dev = df_node_device(vars[0].node);
    char name[300];
    /* the shared state beside vars[0]: global step and token queue */
    df_graph_push_device(g, ps_dev);
    out->global_step = df__sync_var(g, "sync_global_step", DF_INT64, 0, NULL, container);
    out->init_op = df_assign(g, out->global_step, df_scalar_i64(g, 0));
    df_output *queues = (df_output *)DF_MALLOC((size_t)total_replicas * sizeof(df_output));
    if (!queues) { df_graph_pop_device(g); return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    for (int r = 0; r < total_replicas; r++) {     /* a token queue per worker: no worker takes another's token */
        df_dtype t = DF_INT64;
        int rank0 = 0;
        const int64_t *no_dims = NULL;
        snprintf(name, sizeof name, "sync_token_q_%d", r);
        df_op_builder *b = df_op_new(g, "FIFOQueueV2", name);
        df_op_set_attr_type_list(b, "component_types", &t, 1);
        df_op_set_attr_shape_list(b, "shapes", 1, &rank0, &no_dims);
        if (container && *container) df_op_set_attr_string(b, "container", container);
        queues[r] = df__accum_out(df_op_finish(b));
    }
    out->token_queue = queues[worker_index];
    df_graph_pop_device(g);
    /* the worker's local step */
    if (worker_device) df_graph_push_device(g, worker_device);
    out->local_step = df__sync_var(g, "sync_local_step", DF_INT64, 0, NULL, NULL);
    if (worker_device) df_graph_pop_device(g);
    out->local_init_op = df_assign(g, out->local_step, df_identity(g, out->global_step));
    /* one accumulator per variable, on its device */
    df_node *set_steps[64];
    df_output step_now = df_identity(g, out->global_step);
    for (int i = 0; i < n_vars && df__ok(g); i++) {
        int64_t dims[DF_MAX_RANK];
        int rank = df_output_shape(vars[i], dims);
        snprintf(name, sizeof name, "%.200s/sync_grad_accum", vars[i].node->name);
        df_graph_push_device(g, df_node_device(vars[i].node));
        out->accumulators[i] = df_conditional_accumulator(g, df_output_dtype(vars[i]), rank, dims, container, name);
        set_steps[i] = df_accumulator_set_global_step(g, out->accumulators[i], step_now);
        df_graph_pop_device(g);
    }
    if (df__ok(g)) out->chief_init_op = df_no_op(g, set_steps, n_vars);
    /* the worker's step: its gradients at its local step, then a token */
    df_output local_now = df_identity(g, out->local_step);
    for (int i = 0; i < n_vars && df__ok(g); i++) applies[i] = df_accumulator_apply_gradient(g, out->accumulators[i], local_now, grads[i]);
    if (df__ok(g)) {
        df_graph_push_control_deps(g, applies, n_vars);
        df_output token;
        if (df_queue_dequeue(g, out->token_queue, 1, &token) == DF_OK) out->train_op = df_assign(g, out->local_step, token);
        df_graph_pop_control_deps(g);
    }
    /* the chief's update: mean gradients applied, global step advanced, tokens for everyone */
    df_graph_push_device(g, ps_dev);           /* (the chief's update runs on the ps alone: no transfers) */
    df_output need = df_scalar_i32(g, replicas_to_aggregate);
    df_graph_pop_device(g);
    for (int i = 0; i < n_vars && df__ok(g); i++) {
        df_graph_push_device(g, df_node_device(vars[i].node));
        df_output mean = df_accumulator_take_gradient(g, out->accumulators[i], need);
        df_op_builder *b = df_op_new(g, "ApplyGradientDescent", NULL);
        df_op_add_input(b, vars[i]);
        df_op_add_input(b, df_output_dtype(vars[i]) == DF_FLOAT ? df_scalar_f32(g, (float)learning_rate)
                                                                : df_scalar_f64(g, learning_rate));
        df_op_add_input(b, mean);
        updates[i] = df_op_finish(b);
        df_graph_pop_device(g);
    }
    if (df__ok(g)) {
        df_graph_push_device(g, ps_dev);
        df_graph_push_control_deps(g, updates, n_vars);
        df_node *bump = df_assign_add(g, out->global_step, df_scalar_i64(g, 1));
        df_graph_pop_control_deps(g);
        df_graph_push_control_deps(g, &bump, 1);
        df_output token = df_identity(g, out->global_step);
        df_node **enq = (df_node **)DF_MALLOC((size_t)total_replicas * sizeof(df_node *));
        if (!enq) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
        for (int r = 0; enq && r < total_replicas && df__ok(g); r++) enq[r] = df_queue_enqueue(g, queues[r], 1, &token);
        if (enq && df__ok(g)) out->chief_update_op = df_no_op(g, enq, total_replicas);
        DF_FREE(enq);
        df_graph_pop_control_deps(g);
        df_graph_pop_device(g);
    }
    DF_FREE(queues);
    if (!df__ok(g)) {
        df_code code = g->status.code;
        memset(out, 0, sizeof *out);
        return code;
    }
    return DF_OK;
}
