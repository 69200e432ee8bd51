/* ==========================================================================================
   src/queue.c: Queues                                                                >>queue
   TensorFlow's FIFOQueueV2 and the ops on its handle. A queue belongs to its session, keyed
   like a variable (container/shared_name, else the FIFOQueueV2 node's name, in the step's scope
   unless a container is named: df__resource_key), so every run and every thread of the session
   (of one master, on a worker) shares it. It holds tuples of tensor references (copied only to
   split EnqueueMany's batches and to stack DequeueMany's). Enqueue and dequeue attempts are
   served in arrival order, each kind in a line of its own; one that cannot finish waits in its
   line: a threaded step parks the node (kctx.pending, as a _Recv) and whoever finishes the
   attempt resumes it through the pool, so no thread is held; a step without threads blocks its
   own thread on the queue's condition variable; a DF_NO_THREADS build refuses at once.
   Invariant: an attempt is in at most one line, and whoever takes it out finishes it, once.
   ========================================================================================== */
#define DF__QUEUE_MAGIC 0x51554555u      /* "QUEU": the check word of a queue handle */

enum { DF__QA_OWNER, DF__QA_PARKED };
typedef struct df__qattempt {
    struct df__qattempt *next;
    int enqueue, many;
    int mode;                    /* OWNER: the kernel's thread takes the result (it may be waiting
                                    on the condition variable); PARKED: the finisher resumes the node */
    int finished;                /* (OWNER) set under the queue's lock */
    int64_t n, done;             /* tuples offered or wanted, and how many moved so far */
    df_tensor **items;           /* tuples of n_comp references: to enqueue, or dequeued so far */
    int64_t cap_items;           /* dequeue: room in items, in tuples */
    df_status st;                /* a failure, naming the node */
    const df_node *node;
    df__allocator *alloc;        /* where DequeueMany's stacked outputs go */
    df__step *step;              /* PARKED: what to resume, with the values in outs (a dequeue's) */
    df__tagged tag;
    df_tensor **outs;
} df__qattempt;

typedef struct df__queue {
    char *name;                  /* shared_name, else the FIFOQueueV2 node's name (messages) */
    uint64_t scope;              /* the step scope that made it (0: none, or a named container) */
    struct df__queue_set *set;
    int n_comp;
    df_dtype *types;
    df__shape *shapes;           /* n_comp shapes (-1 dims match any), or NULL: not constrained */
    int64_t capacity;            /* < 0: no limit */
    df_tensor **ring;            /* tuple k of the queue at ring[((head + k) % cap) * n_comp] */
    int64_t head, count, cap;
    int closed, cancel_enqueues;
    int shut;                    /* its session is being freed: every attempt is cancelled */
    df__qattempt *enq, *deq;     /* the two lines, oldest first */
#ifndef DF_NO_THREADS
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* OWNER attempts of steps without threads wait here */
#else
    df__spin mu;
#endif
} df__queue;

typedef struct df__queue_set {
    df__spin lock;               /* names, v, n, free, shut */
    df__strmap names;            /* df__resource_key 'q' -> index in v */
    df__queue **v;               /* (NULL: a slot a dropped scope freed) */
    int n, cap;
    int *free, n_free, cap_free; /* those slots, taken again first */
    int shut;                    /* no new queue: the session is being freed */
    int parked;                  /* PARKED attempts not yet finished (atomic): an abort looks only then */
} df__queue_set;

#ifndef DF_NO_THREADS
static void df__queue_lock(df__queue *q) { pthread_mutex_lock(&q->mu); }
static void df__queue_unlock(df__queue *q) { pthread_mutex_unlock(&q->mu); }
#else
static void df__queue_lock(df__queue *q) { df__spin_lock(&q->mu); }
static void df__queue_unlock(df__queue *q) { df__spin_unlock(&q->mu); }
#endif

/* ---- list(shape) attrs: kept flattened in u.ints (see df__attr_kind) ---- */
/* The number of shapes, or -1 if the list is malformed (a rank outside [-1, DF_MAX_RANK], a
   dim below -1, dims missing). Shape i into *out when out is given and i is in range. */
DF_PRIVATE int df__shape_list(const df__attr *a, int i, df__shape *out) {
    if (!a->u.ints.n) return 0;
    const int64_t *p = a->u.ints.v, *end = p + a->u.ints.n;
    int k = 0;
    for (; p < end; k++) {
        int64_t rank = p[0];
        if (rank < -1 || rank > DF_MAX_RANK || end - p - 1 < DF__MAX(rank, 0)) return -1;
        for (int j = 0; j < rank; j++) if (p[1 + j] < -1) return -1;
        if (out && k == i) {
            out->rank = (int)rank;
            for (int j = 0; j < DF_MAX_RANK; j++) out->dims[j] = j < rank ? p[1 + j] : 0;
        }
        p += DF__MAX(rank, 0) + 1;
    }
    return k;
}
DF_PRIVATE void df__op_set_attr_shapes_flat(df_op_builder *b, const char *attr, const int64_t *flat, int n) {
    df__attr *a = df__builder_attr(b, attr, DF__A_SHAPE_LIST);
    if (!a) return;
    a->u.ints.n = 0;
    a->u.ints.v = NULL;
    if (n < 0 || (n > 0 && !flat)) { b->oom = 5; return; }
    if (n && !(a->u.ints.v = (int64_t *)DF_MALLOC((size_t)n * sizeof(int64_t)))) { b->oom = 1; return; }
    if (n) memcpy(a->u.ints.v, flat, (size_t)n * sizeof(int64_t));
    a->u.ints.n = n;
}
void df_op_set_attr_shape_list(df_op_builder *b, const char *attr, int n, const int *ranks, const int64_t *const *dims) {
    if (!b) return;
    int64_t total = 0;
    int bad = n < 0 || (n > 0 && !ranks);
    for (int i = 0; !bad && i < n; i++) {
        bad = ranks[i] < -1 || ranks[i] > DF_MAX_RANK || (ranks[i] > 0 && (!dims || !dims[i]));
        total += 1 + DF__MAX(ranks[i], 0);
    }
    if (bad || total > INT32_MAX) { df__op_set_attr_shapes_flat(b, attr, NULL, -1); return; }
    int64_t *flat = (int64_t *)DF_MALLOC((size_t)DF__MAX(total, 1) * sizeof(int64_t));
    if (!flat) { b->oom = 1; return; }
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        flat[at++] = ranks[i];
        for (int j = 0; j < ranks[i]; j++) flat[at++] = dims[i][j];
    }
    df__op_set_attr_shapes_flat(b, attr, flat, (int)total);
    DF_FREE(flat);
}
int df_node_attr_shape_list(const df_node *n, const char *attr, int i, int *rank, int64_t dims[DF_MAX_RANK]) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_SHAPE_LIST);
    if (!a) return -1;
    df__shape s;
    s.rank = -2;
    int count = df__shape_list(a, i, &s);
    if (count >= 0 && i >= 0 && i < count) {
        if (rank) *rank = s.rank;
        for (int j = 0; dims && j < s.rank; j++) dims[j] = s.dims[j];
    }
    return count;
}

/* ---- messages ---- */
static const char *df__types_str(const df_dtype *t, int n, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at + 1 < size; i++) {
        int w = snprintf(buf + at, size - at, "%s%s", i ? ", " : "", df_dtype_name(t[i]));
        if (w < 0) break;
        at += (size_t)w;
    }
    return buf;
}
/* A tensor's shape is one a queue's shape allows (-1 dims match any size). */
static int df__queue_shape_ok(const df__shape *want, int rank, const int64_t *dims) {
    if (want->rank < 0) return 1;
    if (want->rank != rank) return 0;
    for (int i = 0; i < rank; i++) if (want->dims[i] >= 0 && want->dims[i] != dims[i]) return 0;
    return 1;
}
static int df__queue_shape_defined(const df__shape *s) {
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] < 0) return 0;
    return 1;
}

/* ---- what the graph says: the FIFOQueueV2 node behind a handle ---- */
/* The FIFOQueueV2 node whose handle o is (through Identity, Enter, Exit, Switch, Merge and
   NextIteration), or NULL: graph building checks and infers with it when it can. */
static const df_node *df__queue_def(df_output o) {
    for (int depth = 0; o.node && depth < 32; depth++) {
        const df__opdef *op = o.node->op;
        if (!strcmp(op->name, "FIFOQueueV2")) return o.node;
        if (!((op->flags & (DF__OP_ENTER | DF__OP_EXIT | DF__OP_SWITCH | DF__OP_MERGE | DF__OP_NEXT_ITERATION)) ||
              !strcmp(op->name, "Identity")) || o.node->n_inputs < 1) return NULL;
        o = o.node->inputs[0];
    }
    return NULL;
}
static const char *df__queue_def_name(const df_node *def) {
    const char *shared = df__attr_s(def, "shared_name");
    return *shared ? shared : def->name;
}

DF_PRIVATE df_code df__sf_fifo_queue(df__shape_ctx *c) {
    const df__attr *t = df__attr_find_kind(c->node, "component_types", DF__A_TYPE_LIST);
    const df__attr *s = df__attr_find_kind(c->node, "shapes", DF__A_SHAPE_LIST);
    if (!t || t->u.types.n < 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "FIFOQueueV2 needs at least one component type (attr 'component_types')");
    for (int i = 0; i < t->u.types.n; i++)
        if (!df__dtype_valid(t->u.types.v[i]) && t->u.types.v[i] != DF_STRING)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Component %d of a FIFOQueueV2 has type %s, which a queue cannot hold",
                            i, df_dtype_name(t->u.types.v[i]));
    int n_shapes = s ? df__shape_list(s, -1, NULL) : 0;
    if (n_shapes < 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Attr 'shapes' of FIFOQueueV2 is malformed (a rank outside [-1, %d] or a dim below -1)", DF_MAX_RANK);
    if (n_shapes && n_shapes != t->u.types.n)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Attr 'shapes' of FIFOQueueV2 has %d shapes for %d component types: "
                        "give one per component, or none", n_shapes, t->u.types.n);
    *df__sc_out(c, 0) = df__shape_scalar();
    return DF_OK;
}
/* Enqueue: when the queue's node is known, its components' count, types and shapes. */
DF_PRIVATE df_code df__sf_queue_enqueue(df__shape_ctx *c) {
    const df_node *def = df__queue_def(c->node->inputs[0]);
    if (!def) return DF_OK;
    const df__attr *t = df__attr_find_kind(def, "component_types", DF__A_TYPE_LIST);
    const df__attr *s = df__attr_find_kind(def, "shapes", DF__A_SHAPE_LIST);
    int many = c->node->op->code, n = c->node->n_inputs - 1;
    if (!t) return DF_OK;
    if (n != t->u.types.n)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "FIFOQueue '%s' holds tuples of %d components; %s was given %d",
                        df__queue_def_name(def), t->u.types.n, c->node->op->name, n);
    for (int i = 0; i < n; i++) {
        if (c->in_types[1 + i] != t->u.types.v[i])
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Type mismatch in component %d of FIFOQueue '%s': expected %s, got %s",
                            i, df__queue_def_name(def), df_dtype_name(t->u.types.v[i]), df_dtype_name(c->in_types[1 + i]));
        df__shape want, got = c->in_shapes[1 + i];
        if (many && got.rank == 0)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "EnqueueMany needs a batch dimension: component %d is a scalar", i);
        if (!s || df__shape_list(s, i, &want) <= i || got.rank < 0) continue;
        int off = many ? 1 : 0, rank = got.rank - off, ok = want.rank < 0 || want.rank == rank;
        for (int d = 0; ok && want.rank >= 0 && d < rank; d++)
            ok = want.dims[d] < 0 || got.dims[off + d] < 0 || want.dims[d] == got.dims[off + d];
        if (!ok) {
            char s1[96], s2[96];
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shape mismatch in tuple component %d%s. Expected %s, got %s",
                            i, many ? " (without the batch dimension)" : "", df__dims_str(want.rank, want.dims, s1, 96),
                            df__dims_str(rank, got.dims + off, s2, 96));
        }
    }
    return DF_OK;
}
/* Dequeue: the queue's shapes, with DequeueMany's n in front (known when n is a constant). */
DF_PRIVATE df_code df__sf_queue_dequeue(df__shape_ctx *c) {
    int many = c->node->op->code;
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = df__shape_unknown();
    const df_node *def = df__queue_def(c->node->inputs[0]);
    const df__attr *t = def ? df__attr_find_kind(def, "component_types", DF__A_TYPE_LIST) : NULL;
    if (!t) return DF_OK;
    if (c->node->n_outputs != t->u.types.n)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "FIFOQueue '%s' holds tuples of %d components; %s asks for %d",
                        df__queue_def_name(def), t->u.types.n, c->node->op->name, c->node->n_outputs);
    for (int i = 0; i < t->u.types.n; i++)
        if (c->node->out_types[i] != t->u.types.v[i])
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Type mismatch in component %d of FIFOQueue '%s': it holds %s, "
                            "component_types says %s", i, df__queue_def_name(def), df_dtype_name(t->u.types.v[i]),
                            df_dtype_name(c->node->out_types[i]));
    int64_t n = -1;
    const df_tensor *nv = many ? df__sc_const(c, 1) : NULL;
    if (nv && df__is_int_tensor(nv) && nv->n == 1) n = df__int_at(nv, 0);
    if (n < -1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "DequeueMany requested %lld < 0 elements", (long long)n);
    const df__attr *s = df__attr_find_kind(def, "shapes", DF__A_SHAPE_LIST);
    for (int i = 0; i < t->u.types.n; i++) {
        df__shape want, *o = df__sc_out(c, i);
        if (!s || df__shape_list(s, i, &want) <= i || want.rank < 0 || (many && want.rank >= DF_MAX_RANK)) continue;
        o->rank = want.rank + (many ? 1 : 0);
        if (many) o->dims[0] = n;
        for (int d = 0; d < want.rank; d++) o->dims[d + (many ? 1 : 0)] = want.dims[d];
    }
    return DF_OK;
}

/* ---- the session's queues ---- */
static df__queue_set *df__queue_set_of(df_session *ss, int create) {
    df__queue_set *set = __atomic_load_n(&ss->queues, __ATOMIC_ACQUIRE);
    if (set || !create) return set;
    df__queue_set *fresh = (df__queue_set *)DF_MALLOC(sizeof *fresh);
    if (!fresh) return NULL;
    memset(fresh, 0, sizeof *fresh);
    df__spin_lock(&ss->lock);
    if (!(set = ss->queues)) { set = fresh; fresh = NULL; __atomic_store_n(&ss->queues, set, __ATOMIC_RELEASE); }
    df__spin_unlock(&ss->lock);
    DF_FREE(fresh);
    return set;
}

static void df__queue_free(df__queue *q) {
    if (!q) return;
    for (int64_t k = 0; k < q->count; k++)
        for (int i = 0; i < q->n_comp; i++) df_tensor_release(q->ring[((q->head + k) % q->cap) * q->n_comp + i]);
#ifndef DF_NO_THREADS
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
#endif
    DF_FREE(q->ring); DF_FREE(q->types); DF_FREE(q->shapes); DF_FREE(q->name);
    DF_FREE(q);
}

/* A queue made as node def says; NULL (st set) on OOM or a bad spec. */
static df__queue *df__queue_new(const df_node *def, const char *name, df_status *st) {
    const df__attr *t = df__attr_find_kind(def, "component_types", DF__A_TYPE_LIST);
    const df__attr *s = df__attr_find_kind(def, "shapes", DF__A_SHAPE_LIST);
    int n_shapes = s ? df__shape_list(s, -1, NULL) : 0;
    if (!t || t->u.types.n < 1 || n_shapes < 0 || (n_shapes && n_shapes != t->u.types.n)) {
        df__fail(st, def, DF_INVALID_ARGUMENT, "FIFOQueueV2 has a bad component_types or shapes attr");
        return NULL;
    }
    df__queue *q = (df__queue *)DF_MALLOC(sizeof *q);
    if (!q) { df__fail(st, def, DF_RESOURCE_EXHAUSTED, "Out of memory making FIFOQueue '%s'", name); return NULL; }
    memset(q, 0, sizeof *q);
    q->n_comp = t->u.types.n;
    q->capacity = df__attr_i(def, "capacity", -1);
    q->name = df__strdup(name);
    q->types = (df_dtype *)DF_MALLOC((size_t)q->n_comp * sizeof(df_dtype));
    if (n_shapes) q->shapes = (df__shape *)DF_MALLOC((size_t)q->n_comp * sizeof(df__shape));
    if (!q->name || !q->types || (n_shapes && !q->shapes)) {
        DF_FREE(q->name); DF_FREE(q->types); DF_FREE(q->shapes); DF_FREE(q);
        df__fail(st, def, DF_RESOURCE_EXHAUSTED, "Out of memory making FIFOQueue '%s'", name);
        return NULL;
    }
    memcpy(q->types, t->u.types.v, (size_t)q->n_comp * sizeof(df_dtype));
    for (int i = 0; i < n_shapes; i++) df__shape_list(s, i, &q->shapes[i]);
#ifndef DF_NO_THREADS
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
#endif
    return q;
}

/* TF: a shared queue must be asked for as it was made. */
static df_code df__queue_matches(const df__queue *q, const df_node *def, df_status *st) {
    const df__attr *t = df__attr_find_kind(def, "component_types", DF__A_TYPE_LIST);
    const df__attr *s = df__attr_find_kind(def, "shapes", DF__A_SHAPE_LIST);
    char have[160], want[160];
    if (!t || t->u.types.n != q->n_comp || memcmp(t->u.types.v, q->types, (size_t)q->n_comp * sizeof(df_dtype)))
        return df__fail(st, def, DF_INVALID_ARGUMENT, "Shared queue '%s' has component types [%s] but requested component types were [%s]",
                        q->name, df__types_str(q->types, q->n_comp, have, sizeof have),
                        t ? df__types_str(t->u.types.v, t->u.types.n, want, sizeof want) : "");
    int64_t capacity = df__attr_i(def, "capacity", -1);
    if (capacity != q->capacity)
        return df__fail(st, def, DF_INVALID_ARGUMENT, "Shared queue '%s' has capacity %lld but requested capacity was %lld",
                        q->name, (long long)q->capacity, (long long)capacity);
    int n_shapes = s ? df__shape_list(s, -1, NULL) : 0, same = (n_shapes > 0) == (q->shapes != NULL);
    for (int i = 0; same && q->shapes && i < q->n_comp; i++) {
        df__shape x;
        same = df__shape_list(s, i, &x) > i && x.rank == q->shapes[i].rank &&
               (x.rank <= 0 || !memcmp(x.dims, q->shapes[i].dims, (size_t)x.rank * sizeof(int64_t)));
    }
    if (!same) return df__fail(st, def, DF_INVALID_ARGUMENT, "Shared queue '%s' has other component shapes than requested", q->name);
    return DF_OK;
}

/* FIFOQueueV2: finds or makes the session's queue; its handle is a resource scalar holding the
   queue's index in the session and a check word. */
DF_PRIVATE void df__k_fifo_queue(df__kctx *c) {
    df_session *ss = c->step->session;
    if (!ss) { DF__KFAIL(c, DF_FAILED_PRECONDITION, "FIFOQueueV2 runs only in a session"); return; }
    const char *container = df__attr_s(c->node, "container"), *name = df__queue_def_name(c->node);
    df__buf key = {NULL, 0, 0, 0};
    uint64_t scope = df__resource_key(&key, 'q', c->step->scope, container, name);
    df__queue_set *set = key.oom ? NULL : df__queue_set_of(ss, 1);
    if (!set) { DF_FREE(key.s); DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory making the session's queues"); return; }
    int idx = -1;
    df__queue *q = NULL;
    df_status made;
    df_status_clear(&made);
    df__spin_lock(&set->lock);
    if (set->shut) df__fail(&made, c->node, DF_CANCELLED, "The session is being freed: FIFOQueue '%s' is not made", name);
    else if (df__strmap_get(&set->names, key.s, &idx)) q = set->v[idx];
    else if ((q = df__queue_new(c->node, name, &made)) != NULL) {
        q->set = set;
        q->scope = scope;
        if (set->n_free) idx = set->free[--set->n_free];
        else if (set->n < INT32_MAX && df__grow(&set->v, &set->cap, set->n + 1, sizeof(df__queue *))) idx = set->n++;
        if (idx >= 0 && df__strmap_put(&set->names, key.s, idx)) set->v[idx] = q;
        else {
            if (idx >= 0) { if (idx == set->n - 1) set->n--; else set->free[set->n_free++] = idx; }   /* (the slot goes back) */
            idx = -1;
            df__queue_free(q);
            q = NULL;
            df__fail(&made, c->node, DF_RESOURCE_EXHAUSTED, "Out of memory making FIFOQueue '%s'", name);
        }
    }
    df__spin_unlock(&set->lock);
    DF_FREE(key.s);
    if (!q) { *c->st = made; return; }
    if (df__queue_matches(q, c->node, c->st) != DF_OK) return;
    df_tensor *o = df__k_alloc(c, 0, DF_RESOURCE, 0, NULL);
    if (o) { uint64_t w = ((uint64_t)DF__QUEUE_MAGIC << 32) | (uint64_t)(uint32_t)idx; memcpy(o->data, &w, 8); }
}

/* The queue behind input 0, which must be a handle FIFOQueueV2 made in this session. */
static df__queue *df__queue_of(df__kctx *c) {
    const df_tensor *h = c->in[0];
    df__queue_set *set = c->step->session ? df__queue_set_of(c->step->session, 0) : NULL;
    df__queue *q = NULL;
    uint64_t w = 0;
    if (h && h->dtype == DF_RESOURCE && h->n == 1) memcpy(&w, h->data, 8);
    if (set && (w >> 32) == DF__QUEUE_MAGIC) {
        int64_t idx = (int64_t)(w & 0xffffffffu);
        df__spin_lock(&set->lock);
        if (idx < set->n) q = set->v[idx];
        if (q && q->scope && q->scope != c->step->scope) q = NULL;   /* another master's (a worker) */
        df__spin_unlock(&set->lock);
    }
    if (!q) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Not a queue handle made by FIFOQueueV2 in this session");
    return q;
}

/* ---- the ring of tuples (callers hold the queue's lock) ---- */
static int df__queue_reserve(df__queue *q, int64_t need) {
    if (need <= q->cap) return 1;
    int64_t cap = q->cap ? q->cap * 2 : 16;
    if (q->capacity >= 0 && need <= q->capacity && cap > q->capacity) cap = q->capacity;
    if (cap < need) cap = need;
    if ((uint64_t)cap > (SIZE_MAX / 4) / sizeof(df_tensor *) / (uint64_t)q->n_comp) return 0;
    df_tensor **ring = (df_tensor **)DF_MALLOC((size_t)cap * (size_t)q->n_comp * sizeof(df_tensor *));
    if (!ring) return 0;
    for (int64_t k = 0; k < q->count; k++)
        memcpy(ring + k * q->n_comp, q->ring + ((q->head + k) % q->cap) * q->n_comp, (size_t)q->n_comp * sizeof(df_tensor *));
    DF_FREE(q->ring);
    q->ring = ring;
    q->cap = cap;
    q->head = 0;
    return 1;
}
/* Moves a tuple's references in (back or front) or out (front). */
static int df__queue_push(df__queue *q, df_tensor **tuple, int front) {
    if (!df__queue_reserve(q, q->count + 1)) return 0;
    int64_t at = front ? (q->head + q->cap - 1) % q->cap : (q->head + q->count) % q->cap;
    memcpy(q->ring + at * q->n_comp, tuple, (size_t)q->n_comp * sizeof(df_tensor *));
    memset(tuple, 0, (size_t)q->n_comp * sizeof(df_tensor *));
    if (front) q->head = at;
    q->count++;
    return 1;
}
static void df__queue_pop(df__queue *q, df_tensor **tuple) {
    memcpy(tuple, q->ring + q->head * q->n_comp, (size_t)q->n_comp * sizeof(df_tensor *));
    q->head = (q->head + 1) % q->cap;
    q->count--;
}

static void df__qattempt_free(df__qattempt *a, int n_comp) {
    if (!a) return;
    int64_t n = a->enqueue ? a->n : a->done;
    for (int64_t k = 0; a->items && k < n * n_comp; k++) df_tensor_release(a->items[k]);
    DF_FREE(a->items);
    DF_FREE(a->outs);
    DF_FREE(a);
}

/* A dequeue that fails gives back what it took, in order, at the front. */
static void df__queue_put_back(df__queue *q, df__qattempt *a) {
    for (int64_t k = a->done - 1; k >= 0; k--) {
        df_tensor **tuple = a->items + k * q->n_comp;
        if (!df__queue_push(q, tuple, 1))         /* out of memory: those elements are lost */
            for (int i = 0; i < q->n_comp; i++) { df_tensor_release(tuple[i]); tuple[i] = NULL; }
    }
    a->done = 0;
}

/* An attempt left its line finished (a->st says how): an OWNER's thread is told (under the
   lock), a PARKED one goes on *parked for the caller to complete after unlocking. */
static void df__queue_finished(df__queue *q, df__qattempt *a, df__qattempt **parked, int *woke) {
    if (a->st.code && !a->enqueue && a->done) df__queue_put_back(q, a);
    if (a->mode == DF__QA_PARKED) { a->next = *parked; *parked = a; }
    else { a->next = NULL; a->finished = 1; *woke = 1; }
}

/* DequeueMany stacks each component's values: tuple k (just taken) must have tuple 0's shapes,
   of rank below DF_MAX_RANK; else a fails (INVALID_ARGUMENT) and gives back what it took. */
static int df__queue_stackable(const df__queue *q, df__qattempt *a, int64_t k) {
    int nc = q->n_comp;
    for (int i = 0; i < nc; i++) {
        const df_tensor *x = a->items[k * nc + i], *first = a->items[i];
        if (x->rank >= DF_MAX_RANK) {
            df__fail(&a->st, a->node, DF_INVALID_ARGUMENT, "DequeueMany cannot stack component %d of rank %d (at most %d)", i,
                     x->rank, DF_MAX_RANK - 1);
            return 0;
        }
        if (x->rank != first->rank || (x->rank && memcmp(x->dims, first->dims, (size_t)x->rank * sizeof(int64_t)))) {
            char s1[96], s2[96];
            df__fail(&a->st, a->node, DF_INVALID_ARGUMENT, "DequeueMany cannot stack component %d: element %lld has shape %s, "
                     "element 0 has %s (the elements stay in FIFOQueue '%s')", i, (long long)k, df__dims_str(x->rank, x->dims, s1, 96),
                     df__dims_str(first->rank, first->dims, s2, 96), q->name);
            return 0;
        }
    }
    return 1;
}

/* Moves tuples between the queue and the heads of its lines until nothing more can move.
   A dequeue fails (OUT_OF_RANGE) once the queue is closed and no enqueue can still add to it.
   Called with the queue locked. */
static void df__queue_flush(df__queue *q, df__qattempt **parked, int *woke) {
    int nc = q->n_comp;
    for (int progress = 1; progress;) {
        progress = 0;
        while (q->enq) {
            df__qattempt *a = q->enq;
            if (q->cancel_enqueues && !a->st.code) df__fail(&a->st, a->node, DF_CANCELLED, "Enqueue operation was cancelled");
            while (!a->st.code && a->done < a->n && (q->capacity < 0 || q->count < q->capacity)) {
                if (!df__queue_push(q, a->items + a->done * nc, 0)) {
                    df__fail(&a->st, a->node, DF_RESOURCE_EXHAUSTED, "Out of memory growing FIFOQueue '%s'", q->name);
                    break;
                }
                a->done++;
                progress = 1;
            }
            if (!a->st.code && a->done < a->n) break;
            q->enq = a->next;
            df__queue_finished(q, a, parked, woke);
            progress = 1;
        }
        while (q->deq) {
            df__qattempt *a = q->deq;
            while (!a->st.code && a->done < a->n && q->count > 0) {
                if (a->done == a->cap_items) {
                    int64_t cap = DF__MIN(a->n, a->cap_items ? a->cap_items * 2 : 16);
                    df_tensor **items = (df_tensor **)DF_REALLOC(a->items, (size_t)cap * (size_t)nc * sizeof(df_tensor *));
                    if (!items) { df__fail(&a->st, a->node, DF_RESOURCE_EXHAUSTED, "Out of memory dequeuing from FIFOQueue '%s'", q->name); break; }
                    a->items = items;
                    a->cap_items = cap;
                }
                df__queue_pop(q, a->items + a->done * nc);
                a->done++;
                progress = 1;
                if (a->many && !df__queue_stackable(q, a, a->done - 1)) break;
            }
            if (!a->st.code && a->done < a->n) {
                if (!q->closed || (q->enq && q->capacity != 0)) break;     /* (an enqueue may still add) */
                df__queue_put_back(q, a);
                df__fail(&a->st, a->node, DF_OUT_OF_RANGE, "FIFOQueue '%s' is closed and has insufficient elements (requested %lld, "
                         "current size %lld)", q->name, (long long)a->n, (long long)q->count);
            }
            q->deq = a->next;
            df__queue_finished(q, a, parked, woke);
            progress = 1;
        }
    }
}

/* Every attempt of both lines fails with `code` (the session ends, or the step aborted when
   only_step is given: then only that step's PARKED attempts). Called with the queue locked. */
static void df__queue_cancel(df__queue *q, const df__step *only_step, df__qattempt **parked, int *woke) {
    for (int line = 0; line < 2; line++) {
        df__qattempt **link = line ? &q->deq : &q->enq;
        while (*link) {
            df__qattempt *a = *link;
            if (only_step && (a->mode != DF__QA_PARKED || a->step != only_step)) { link = &a->next; continue; }
            *link = a->next;
            if (!a->st.code)
                df__fail(&a->st, a->node, DF_CANCELLED, "%s operation was cancelled: %s", line ? "Dequeue" : "Enqueue",
                         only_step ? "its run was aborted" : "the session is being freed");
            df__queue_finished(q, a, parked, woke);
        }
    }
}

/* The outputs of a finished dequeue into outs[n_comp]: its tuple as it is (Dequeue), or each
   component's n values stacked into [n, ...] (DequeueMany). Takes the attempt's references. */
static df_tensor *df__queue_stack(const df__queue *q, df__qattempt *a, int comp, df_status *st) {
    int nc = q->n_comp;
    df_dtype type = q->types[comp];
    df__shape el;
    if (a->done > 0) el = df__shape_of(a->items[comp]);
    else if (q->shapes && df__queue_shape_defined(&q->shapes[comp])) el = q->shapes[comp];
    else {
        df__fail(st, a->node, DF_INVALID_ARGUMENT, "DequeueMany of 0 elements from FIFOQueue '%s' needs its component shapes "
                 "(attr 'shapes' of FIFOQueueV2, fully defined)", q->name);
        return NULL;
    }
    int64_t dims[DF_MAX_RANK];                   /* (the flush saw that the elements stack) */
    dims[0] = a->n;
    for (int d = 0; d < el.rank; d++) dims[d + 1] = el.dims[d];
    df_tensor *out;
    if (type == DF_STRING) {
        int64_t per = 1;
        for (int d = 0; d < el.rank; d++) per *= el.dims[d];
        const char **s = (const char **)DF_MALLOC((size_t)DF__MAX(per * a->n, 1) * sizeof(char *));
        if (!s) { df__fail(st, a->node, DF_RESOURCE_EXHAUSTED, "Out of memory stacking strings"); return NULL; }
        for (int64_t j = 0; j < a->n; j++)
            for (int64_t k = 0; k < per; k++) {
                const char *v = df_tensor_string(a->items[j * nc + comp], k, NULL);
                s[j * per + k] = v ? v : "";
            }
        out = df_tensor_new_strings(el.rank + 1, dims, s, st);
        DF_FREE(s);
    } else {
        out = df__tensor_alloc(a->alloc, type, el.rank + 1, dims, st);
        size_t bytes = out && a->n ? out->nbytes / (size_t)a->n : 0;
        for (int64_t j = 0; out && j < a->n; j++) memcpy((char *)out->data + (size_t)j * bytes, a->items[j * nc + comp]->data, bytes);
    }
    if (!out) {
        char msg[sizeof st->message];
        memcpy(msg, st->message, sizeof msg);
        df__fail(st, a->node, st->code ? st->code : DF_RESOURCE_EXHAUSTED, "%.380s", msg);
    }
    return out;
}
static df_code df__queue_outputs(const df__queue *q, df__qattempt *a, df_tensor **outs, df_status *st) {
    int nc = q->n_comp;
    if (!a->many) {
        for (int i = 0; i < nc; i++) { outs[i] = a->items[i]; a->items[i] = NULL; }
        return DF_OK;
    }
    for (int i = 0; i < nc; i++)
        if (!(outs[i] = df__queue_stack(q, a, i, st))) {
            for (int k = 0; k < i; k++) { df_tensor_release(outs[k]); outs[k] = NULL; }
            return st->code;
        }
    return DF_OK;
}

/* A PARKED attempt taken out of its line: its outputs (or its error) go to its node, which is
   resumed on the pool (a step of one partition: its waiting thread is woken to help) or, in a
   partitioned run, as its _Recvs are. Called without the queue's lock. */
static void df__queue_complete(df__queue *q, df__qattempt *a) {
    df__step *s = a->step;
    df__queue_set *set = q->set;
    if (!a->st.code && !a->enqueue) df__queue_outputs(q, a, a->outs, &a->st);
    if (a->st.code) df__step_error(s, &a->st);
    df__wake w;
    memset(&w, 0, sizeof w);
    w.step = s;
    w.tag = a->tag;
    w.outs = a->outs;            /* (the wake owns them now) */
    a->outs = NULL;
    df__qattempt_free(a, q->n_comp);
    /* Held until the end: s stays unfinished (and its run, group and session alive) meanwhile. */
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
            pthread_mutex_lock(&s->done_mu);          /* its run's thread helps with the pool's tasks */
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
static void df__queue_complete_all(df__queue *q, df__qattempt *parked) {
    while (parked) {
        df__qattempt *next = parked->next;
        df__queue_complete(q, parked);
        parked = next;
    }
}

#ifdef DF_NO_THREADS
/* Without threads nothing can wait: can a finishes at once? (A closed queue's dequeue fails
   in the flush, as with threads.) */
static int df__queue_can_finish(const df__queue *q, const df__qattempt *a) {
    if (a->enqueue) return q->capacity < 0 || q->capacity - q->count >= a->n;
    return q->closed || q->count >= a->n;
}
#endif

/* Runs the attempt a kernel made: it finishes now, or waits as its step allows. Takes a. On
   return the kernel's outputs or status are set, or c->pending (the node resumes later). */
static void df__queue_run(df__kctx *c, df__queue *q, df__qattempt *a) {
    df__qattempt *parked = NULL;
    int woke = 0;
    for (int i = 0; i < c->n_in; i++) { df_tensor_release(c->in[i]); c->in[i] = NULL; }   /* (a has what it needs) */
    df__queue_lock(q);
    if (q->shut) {
        df__fail(&a->st, a->node, DF_CANCELLED, "%s operation was cancelled: the session is being freed", a->enqueue ? "Enqueue" : "Dequeue");
    } else if (a->enqueue && q->closed) {
        df__fail(&a->st, a->node, DF_CANCELLED, "FIFOQueue '%s' is closed.", q->name);
#ifdef DF_NO_THREADS
    } else if (!df__queue_can_finish(q, a)) {
        if (a->enqueue)
            df__fail(&a->st, a->node, DF_FAILED_PRECONDITION, "FIFOQueue '%s' has no room (capacity %lld, size %lld, %lld to enqueue) "
                     "and this build has no threads to wait with (DF_NO_THREADS)", q->name, (long long)q->capacity,
                     (long long)q->count, (long long)a->n);
        else
            df__fail(&a->st, a->node, DF_FAILED_PRECONDITION, "FIFOQueue '%s' has insufficient elements (requested %lld, current "
                     "size %lld) and this build has no threads to wait with (DF_NO_THREADS)", q->name, (long long)a->n,
                     (long long)q->count);
#endif
    } else {
        df__qattempt **tail = a->enqueue ? &q->enq : &q->deq;
        while (*tail) tail = &(*tail)->next;
        *tail = a;
        df__queue_flush(q, &parked, &woke);
#ifndef DF_NO_THREADS
        if (!a->finished && c->step->threaded) {
            /* Park: the node stays outstanding; whoever finishes a resumes it (df__queue_complete).
               Nothing of a or of the node is touched here after the unlock. */
            a->mode = DF__QA_PARKED;
            a->step = c->step;
            a->tag = *c->tag;
            __atomic_add_fetch(&q->set->parked, 1, __ATOMIC_ACQ_REL);
            if (c->step->group) __atomic_add_fetch(&c->step->group->pending_wakes, 1, __ATOMIC_ACQ_REL);  /* no hang: a wake will come */
            c->pending = 1;
            if (woke) pthread_cond_broadcast(&q->cv);
            df__queue_unlock(q);
            df__queue_complete_all(q, parked);
            return;
        }
        if (woke) pthread_cond_broadcast(&q->cv);
        while (!a->finished) {                   /* a step without threads: this thread waits */
            if (c->step->deadline_ms <= 0) { pthread_cond_wait(&q->cv, &q->mu); continue; }
            double left = c->step->deadline_ms - df__clock_ms();
            if (left <= 0) {                     /* the run's deadline: a leaves the waiters */
                df__qattempt **at = a->enqueue ? &q->enq : &q->deq;
                while (*at && *at != a) at = &(*at)->next;
                if (*at) *at = a->next;
                df__fail(&a->st, a->node, DF_DEADLINE_EXCEEDED, "The run did not end within %d ms "
                         "(df_session_options.run_timeout_ms): FIFOQueue '%s' still waits to %s", c->step->timeout_ms,
                         q->name, a->enqueue ? "enqueue" : "dequeue");
                woke = 0;
                df__queue_finished(q, a, &parked, &woke);   /* (a dequeue gives back what it took) */
                df__queue_flush(q, &parked, &woke);
                if (woke) pthread_cond_broadcast(&q->cv);
                break;
            }
            struct timespec ts;
            timespec_get(&ts, TIME_UTC);
            long ns = (long)(DF__MIN(left, 100.0) * 1e6);
            ts.tv_nsec += ns;
            while (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            pthread_cond_timedwait(&q->cv, &q->mu, &ts);
        }
#endif
    }
    df__queue_unlock(q);
    df__queue_complete_all(q, parked);
    if (a->st.code) *c->st = a->st;
    else if (!a->enqueue) df__queue_outputs(q, a, c->out, c->st);
    df__qattempt_free(a, q->n_comp);
}

static df__qattempt *df__qattempt_new(df__kctx *c, int enqueue, int many, int64_t n) {
    df__qattempt *a = (df__qattempt *)DF_MALLOC(sizeof *a);
    if (!a) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in a queue operation"); return NULL; }
    memset(a, 0, sizeof *a);
    a->enqueue = enqueue; a->many = many; a->n = n;
    a->node = c->node;
    a->alloc = c->alloc;
    return a;
}

/* Row r of x ([rows, ...]) as a tensor of its own (EnqueueMany's elements). */
static df_tensor *df__queue_row(df__kctx *c, const df_tensor *x, int64_t r) {
    int64_t per = x->dims[0] ? x->n / x->dims[0] : 0;
    df_tensor *y;
    if (x->dtype == DF_STRING) {
        const char **s = (const char **)DF_MALLOC((size_t)DF__MAX(per, 1) * sizeof(char *));
        if (!s) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory splitting a batch"); return NULL; }
        for (int64_t k = 0; k < per; k++) { const char *v = df_tensor_string(x, r * per + k, NULL); s[k] = v ? v : ""; }
        y = df_tensor_new_strings(x->rank - 1, x->dims + 1, s, c->st);
        DF_FREE(s);
    } else {
        y = df__tensor_alloc(c->alloc, x->dtype, x->rank - 1, x->dims + 1, c->st);
        if (y && y->nbytes) memcpy(y->data, (const char *)x->data + (size_t)r * y->nbytes, y->nbytes);
    }
    if (!y) {
        char msg[sizeof c->st->message];
        memcpy(msg, c->st->message, sizeof msg);
        DF__KFAIL(c, c->st->code ? c->st->code : DF_RESOURCE_EXHAUSTED, "%.380s", msg);
    }
    return y;
}

/* QueueEnqueueV2 (code 0) and QueueEnqueueManyV2 (code 1: each component's first dimension
   counts the tuples). Components are checked against the queue's types and shapes first. */
DF_PRIVATE void df__k_queue_enqueue(df__kctx *c) {
    int many = c->node->op->code;
    df__queue *q = df__queue_of(c);
    if (!q) return;
    int nc = c->n_in - 1;
    if (nc != q->n_comp) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "FIFOQueue '%s' holds tuples of %d components; %s was given %d", q->name, q->n_comp,
                  c->node->op->name, nc);
        return;
    }
    int64_t n = 1;
    for (int i = 0; i < nc; i++) {
        const df_tensor *x = c->in[1 + i];
        if (x->dtype != q->types[i]) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Type mismatch in component %d of FIFOQueue '%s': expected %s, got %s", i, q->name,
                      df_dtype_name(q->types[i]), df_dtype_name(x->dtype));
            return;
        }
        if (many && x->rank == 0) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "EnqueueMany needs a batch dimension: component %d is a scalar", i);
            return;
        }
        if (many && i > 0 && x->dims[0] != n) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "EnqueueMany: component %d has %lld rows, component 0 has %lld", i,
                      (long long)x->dims[0], (long long)n);
            return;
        }
        if (many) n = x->dims[0];
        int off = many ? 1 : 0;
        if (q->shapes && !df__queue_shape_ok(&q->shapes[i], x->rank - off, x->dims + off)) {
            char s1[96], s2[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shape mismatch in tuple component %d%s. Expected %s, got %s", i,
                      many ? " (without the batch dimension)" : "", df__dims_str(q->shapes[i].rank, q->shapes[i].dims, s1, 96),
                      df__dims_str(x->rank - off, x->dims + off, s2, 96));
            return;
        }
    }
    df__qattempt *a = df__qattempt_new(c, 1, many, n);
    if (!a) return;
    if ((uint64_t)n > (SIZE_MAX / 4) / sizeof(df_tensor *) / (uint64_t)nc ||
        !(a->items = (df_tensor **)DF_MALLOC((size_t)DF__MAX(n * nc, 1) * sizeof(df_tensor *)))) {
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory enqueuing %lld elements", (long long)n);
        DF_FREE(a);
        return;
    }
    memset(a->items, 0, (size_t)DF__MAX(n * nc, 1) * sizeof(df_tensor *));
    for (int i = 0; i < nc; i++) {
        if (!many) { a->items[i] = c->in[1 + i]; c->in[1 + i] = NULL; continue; }    /* the node's reference moves in */
        for (int64_t r = 0; r < n; r++)
            if (!(a->items[r * nc + i] = df__queue_row(c, c->in[1 + i], r))) { df__qattempt_free(a, nc); return; }
    }
    df__queue_run(c, q, a);
}

/* QueueDequeueV2 (code 0) and QueueDequeueManyV2 (code 1: n tuples, each component stacked). */
DF_PRIVATE void df__k_queue_dequeue(df__kctx *c) {
    int many = c->node->op->code;
    df__queue *q = df__queue_of(c);
    if (!q) return;
    if (c->n_out != q->n_comp) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "FIFOQueue '%s' holds tuples of %d components; %s asks for %d", q->name, q->n_comp,
                  c->node->op->name, c->n_out);
        return;
    }
    for (int i = 0; i < q->n_comp; i++)
        if (c->node->out_types[i] != q->types[i]) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Type mismatch in component %d of FIFOQueue '%s': it holds %s, component_types says %s",
                      i, q->name, df_dtype_name(q->types[i]), df_dtype_name(c->node->out_types[i]));
            return;
        }
    int64_t n = 1;
    if (many) {
        const df_tensor *nv = c->in[1];
        if (!nv || nv->dtype != DF_INT32 || nv->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "n must be an int32 scalar"); return; }
        n = ((const int32_t *)nv->data)[0];
        if (n < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "DequeueMany requested %lld < 0 elements", (long long)n); return; }
        for (int i = 0; n == 0 && i < q->n_comp; i++)
            if (!q->shapes || !df__queue_shape_defined(&q->shapes[i])) {
                DF__KFAIL(c, DF_INVALID_ARGUMENT, "DequeueMany of 0 elements from FIFOQueue '%s' needs its component shapes "
                          "(attr 'shapes' of FIFOQueueV2, fully defined)", q->name);
                return;
            }
    }
    df__qattempt *a = df__qattempt_new(c, 0, many, n);
    if (!a) return;
    if (c->step->threaded && !(a->outs = (df_tensor **)DF_MALLOC((size_t)q->n_comp * sizeof(df_tensor *)))) {
        DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in a queue operation");
        DF_FREE(a);
        return;
    }
    if (a->outs) memset(a->outs, 0, (size_t)q->n_comp * sizeof(df_tensor *));
    df__queue_run(c, q, a);
}

/* QueueCloseV2: later enqueues fail; dequeues fail once no element is left for them; with
   cancel_pending_enqueues, waiting enqueues fail too (TF: closing twice is an error). */
DF_PRIVATE void df__k_queue_close(df__kctx *c) {
    df__queue *q = df__queue_of(c);
    if (!q) return;
    df__qattempt *parked = NULL;
    int woke = 0;
    df__queue_lock(q);
    int was_closed = q->closed;
    q->closed = 1;
    if (df__attr_b(c->node, "cancel_pending_enqueues", 0)) q->cancel_enqueues = 1;
    df__queue_flush(q, &parked, &woke);
#ifndef DF_NO_THREADS
    if (woke) pthread_cond_broadcast(&q->cv);
#endif
    df__queue_unlock(q);
    df__queue_complete_all(q, parked);
    if (was_closed) DF__KFAIL(c, DF_CANCELLED, "FIFOQueue '%s' is already closed.", q->name);
}
DF_PRIVATE void df__k_queue_size(df__kctx *c) {
    df__queue *q = df__queue_of(c);
    if (!q) return;
    df__queue_lock(q);
    int64_t n = q->count;
    df__queue_unlock(q);
    df_tensor *o = df__k_alloc(c, 0, DF_INT32, 0, NULL);
    if (o) *(int32_t *)o->data = (int32_t)DF__MIN(n, INT32_MAX);
}
DF_PRIVATE void df__k_queue_is_closed(df__kctx *c) {
    df__queue *q = df__queue_of(c);
    if (!q) return;
    df__queue_lock(q);
    int closed = q->closed;
    df__queue_unlock(q);
    df_tensor *o = df__k_alloc(c, 0, DF_BOOL, 0, NULL);
    if (o) *(uint8_t *)o->data = (uint8_t)(closed != 0);
}

/* ---- the executor's and the session's hooks ---- */
#ifndef DF_NO_THREADS
/* An aborted step's nodes leave the lines they wait in (their run ends with its first error). */
DF_PRIVATE void df__queue_abort_step(df__step *s) {
    df__queue_set *set = s->session ? df__queue_set_of(s->session, 0) : NULL;
    if (!set || !__atomic_load_n(&set->parked, __ATOMIC_ACQUIRE)) return;
    for (int i = 0;; i++) {
        df__spin_lock(&set->lock);
        int end = i >= set->n;
        df__queue *q = end ? NULL : set->v[i];
        if (q && q->scope && q->scope != s->scope) q = NULL;   /* (not its: another scope may free it now) */
        df__spin_unlock(&set->lock);
        if (end) break;
        if (!q) continue;
        df__qattempt *parked = NULL;
        int woke = 0;
        df__queue_lock(q);
        df__queue_cancel(q, s, &parked, &woke);
        if (parked) df__queue_flush(q, &parked, &woke);     /* (what they give back may serve others) */
        if (woke) pthread_cond_broadcast(&q->cv);
        df__queue_unlock(q);
        df__queue_complete_all(q, parked);
    }
}
#endif

/* df_session_free: every waiting attempt is cancelled and later ones refused; then the runs in
   flight are waited for (they end: nothing of theirs waits any more); then the queues go. */
DF_PRIVATE void df__queues_end(df_session *s) {
    df__queue_set *set = df__queue_set_of(s, 0);
    int n = 0;
    if (set) {
        df__spin_lock(&set->lock);
        set->shut = 1;
        n = set->n;
        df__spin_unlock(&set->lock);
    }
    for (int i = 0; i < n; i++) {                 /* (set->v no longer changes) */
        df__queue *q = set->v[i];
        if (!q) continue;
        df__qattempt *parked = NULL;
        int woke = 0;
        df__queue_lock(q);
        q->shut = q->closed = q->cancel_enqueues = 1;
        df__queue_cancel(q, NULL, &parked, &woke);
#ifndef DF_NO_THREADS
        if (woke) pthread_cond_broadcast(&q->cv);
#endif
        df__queue_unlock(q);
        df__queue_complete_all(q, parked);
    }
#ifndef DF_NO_THREADS
    if (__atomic_load_n(&s->runs_in_flight, __ATOMIC_ACQUIRE) > 0) {
        pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;     /* (a pause of 100 us per look) */
        pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
        pthread_mutex_lock(&mu);
        while (__atomic_load_n(&s->runs_in_flight, __ATOMIC_ACQUIRE) > 0) {
            struct timespec ts;
            timespec_get(&ts, TIME_UTC);
            ts.tv_nsec += 100000;
            if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
            pthread_cond_timedwait(&cv, &mu, &ts);
        }
        pthread_mutex_unlock(&mu);
        pthread_mutex_destroy(&mu);
        pthread_cond_destroy(&cv);
    }
#endif
    if (!set) return;
    for (int i = 0; i < set->n; i++) df__queue_free(set->v[i]);
    DF_FREE(set->v);
    DF_FREE(set->free);
    df__strmap_free(&set->names);
    DF_FREE(set);
    s->queues = NULL;
}

#ifdef DF__NET
/* df__session_drop_scope: the scope's queues leave the set and are freed. No step of that scope
   runs any more (the caller's guarantee), so no attempt waits in them: a parked one keeps its
   step running, and steps of other scopes never reach them (df__queue_of, df__queue_abort_step). */
DF_PRIVATE void df__queues_drop_scope(df_session *s, uint64_t scope) {
    df__queue_set *set = df__queue_set_of(s, 0);
    if (!set) return;
    df__spin_lock(&set->lock);
    int room = set->n;
    df__spin_unlock(&set->lock);
    df__queue **gone = room ? (df__queue **)DF_MALLOC((size_t)room * sizeof(df__queue *)) : NULL;
    int n_gone = 0;
    if (room && !gone) return;                   /* (out of memory: they stay until the session ends) */
    df__spin_lock(&set->lock);
    df__strmap *m = &set->names;
    for (int i = 0; i < m->cap; i++)
        while (m->keys[i] && df__resource_key_in_scope(m->keys[i], scope)) {
            int idx = m->vals[i];
            if (idx >= 0 && idx < set->n && set->v[idx] && n_gone < room) {
                gone[n_gone++] = set->v[idx];
                set->v[idx] = NULL;
                if (df__grow(&set->free, &set->cap_free, set->n_free + 1, sizeof(int))) set->free[set->n_free++] = idx;
            }
            df__strmap_del(m, m->keys[i]);
        }
    df__spin_unlock(&set->lock);
    for (int k = 0; k < n_gone; k++) df__queue_free(gone[k]);   /* (its elements' references go) */
    DF_FREE(gone);
}
#endif

/* ---- public helpers ---- */
static df_output df__queue_out(df_node *n, int i) { df_output o = {n, n ? i : 0}; return o; }

df_output df_fifo_queue(df_graph *g, int n_components, const df_dtype *types, int capacity, const char *shared_name) {
    return df_fifo_queue_with_shapes(g, n_components, types, NULL, NULL, capacity, shared_name);
}
df_output df_fifo_queue_with_shapes(df_graph *g, int n_components, const df_dtype *types, const int *ranks,
                                    const int64_t *const *dims, int capacity, const char *shared_name) {
    df_op_builder *b = df_op_new(g, "FIFOQueueV2", NULL);
    df_op_set_attr_type_list(b, "component_types", types, n_components);
    if (ranks) df_op_set_attr_shape_list(b, "shapes", n_components, ranks, dims);
    df_op_set_attr_int(b, "capacity", capacity);
    if (shared_name) df_op_set_attr_string(b, "shared_name", shared_name);
    return df__queue_out(df_op_finish(b), 0);
}
static df_node *df__queue_op(df_graph *g, const char *op, df_output q, int n, const df_output *components) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, q);
    df_op_add_input_list(b, components, n);
    return df_op_finish(b);
}
df_node *df_queue_enqueue(df_graph *g, df_output q, int n, const df_output *components) {
    return df__queue_op(g, "QueueEnqueueV2", q, n, components);
}
df_node *df_queue_enqueue_many(df_graph *g, df_output q, int n, const df_output *components) {
    return df__queue_op(g, "QueueEnqueueManyV2", q, n, components);
}
/* Dequeue and DequeueMany take their component_types from the FIFOQueueV2 node behind q. */
static df_code df__queue_dequeue(df_graph *g, const char *op, df_output q, const df_output *n_scalar, int n, df_output *outs) {
    for (int i = 0; outs && i < n; i++) outs[i] = df__queue_out(NULL, 0);
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    const df_node *def = df__queue_def(q);
    const df__attr *t = def ? df__attr_find_kind(def, "component_types", DF__A_TYPE_LIST) : NULL;
    if (!q.node || !t)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: the handle does not come from a FIFOQueueV2 node (through Identity, "
                               "Enter, Exit, Switch, Merge or NextIteration); build %s with df_op_new and its component_types", 
                               !strcmp(op, "QueueDequeueV2") ? "df_queue_dequeue" : "df_queue_dequeue_many", op);
    if (n != t->u.types.n || (n > 0 && !outs))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: FIFOQueue '%s' holds tuples of %d components; %d output%s asked for%s",
                               !strcmp(op, "QueueDequeueV2") ? "df_queue_dequeue" : "df_queue_dequeue_many", df__queue_def_name(def),
                               t->u.types.n, n, n == 1 ? "" : "s", n > 0 && !outs ? " (into NULL)" : "");
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, q);
    if (n_scalar) df_op_add_input(b, *n_scalar);
    df_op_set_attr_type_list(b, "component_types", t->u.types.v, t->u.types.n);
    df_node *node = df_op_finish(b);
    for (int i = 0; node && i < n; i++) outs[i] = df__queue_out(node, i);
    return g->status.code;
}
df_code df_queue_dequeue(df_graph *g, df_output q, int n, df_output *outs) {
    return df__queue_dequeue(g, "QueueDequeueV2", q, NULL, n, outs);
}
df_code df_queue_dequeue_many(df_graph *g, df_output q, df_output n_scalar, int n, df_output *outs) {
    return df__queue_dequeue(g, "QueueDequeueManyV2", q, &n_scalar, n, outs);
}
df_node *df_queue_close(df_graph *g, df_output q, int cancel_pending_enqueues) {
    df_op_builder *b = df_op_new(g, "QueueCloseV2", NULL);
    df_op_add_input(b, q);
    df_op_set_attr_bool(b, "cancel_pending_enqueues", cancel_pending_enqueues);
    return df_op_finish(b);
}
df_output df_queue_size(df_graph *g, df_output q) {
    df_op_builder *b = df_op_new(g, "QueueSizeV2", NULL);
    df_op_add_input(b, q);
    return df__queue_out(df_op_finish(b), 0);
}
df_output df_queue_is_closed(df_graph *g, df_output q) {
    df_op_builder *b = df_op_new(g, "QueueIsClosedV2", NULL);
    df_op_add_input(b, q);
    return df__queue_out(df_op_finish(b), 0);
}
