/* ==========================================================================================
   src/executor.c: The executor                                                    >>executor
   Runs one compiled graph. A value is a tensor pointer in an input slot of (frame instance,
   iteration); NULL is "no value", which is what dead means. Per node and iteration a pending
   count and a dead count decide readiness (Merge: 1 + 2 * control inputs, bit 0 waiting for a
   live input). Iterations of a frame live in a ring of parallel_iterations + 1 and retire in
   order; loop invariants are replayed into every new iteration; a NextIteration past the
   window is deferred. A LoopCount item is never scheduled: when its frame is deleted (every
   iteration done) it fires in the parent iteration with the iteration count, or dead when the
   loop's last LoopCond was dead; kernels see their iteration's number (LoopStackPush/Pop,
   LoopIterationLess, accumulators). The step ends when `outstanding` (ready + running nodes)
   reaches zero.
   When threads are in play, every bookkeeping change happens under the step's spinlock.

   The five primitives and dead values, as TensorFlow's executor has them. A node with a dead
   input is dead: its kernel does not run and every output is dead. The exceptions:
     node            every input live                          a dead input
     Switch(d, p)    d goes out on output p (1: true), the     both outputs dead
                     other output is dead
     Merge(x...)     ready at its first live input: outputs    waits for a live input; dead once
                     it and its index; later ones are dropped  every input is dead, or at once when
                                                               the dead value comes from an Enter
     Enter(x)        x into iteration 0 of the child frame     the dead value enters (what reads it
                     (constant: into every iteration)          in the frame dies there)
     Exit(x)         x to the parent frame, once (a second     noted; when the frame ends, an Exit
                     live value is dropped)                    that sent nothing out goes out dead
     NextIteration   x into iteration i+1 (held back past      nothing goes on: that loop variable
                     parallel_iterations)                      ends there
     _Send, _Recv    run either way, so the dead bit crosses devices (src/transfer.c)
     ControlTrigger  runs live even when its inputs are dead
     LoopCount       never scheduled: fires in the parent when its frame ends (dead when the
                     loop's last LoopCond was)
     fetch           a dead fetched value is an INVALID_ARGUMENT naming it
   ========================================================================================== */

/* The ready queue of a batch; it starts in the batch's own small buffer (`local`), so a short
   batch (a Recv resumed for one iteration of a loop) allocates nothing. */
typedef struct df__readyq { df__tagged *v; int head, len, cap; df__tagged *local; } df__readyq;


DF_PRIVATE df__stack *df__step_stack_new(df__step *s, int64_t *id, df_status *st) {
    s = s->home;
    df__stack *k = (df__stack *)DF_MALLOC(sizeof *k);
    if (k) memset(k, 0, sizeof *k);
    df__spin_lock(&s->stack_lock);
    int ok = k && s->n_stacks < (1 << 30) && df__grow(&s->stacks, &s->cap_stacks, s->n_stacks + 1, sizeof(df__stack *));
    if (ok) { *id = s->n_stacks; s->stacks[s->n_stacks++] = k; }
    df__spin_unlock(&s->stack_lock);
    if (!ok) { DF_FREE(k); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a stack"); return NULL; }
    return k;
}
DF_PRIVATE df__stack *df__step_stack_get(df__step *s, const df_tensor *h) {
    s = s->home;
    uint64_t w;
    memcpy(&w, h->data, 8);
    if ((w >> 32) != DF__STACK_MAGIC) return NULL;
    int64_t id = (int64_t)(w & 0xffffffffu);
    df__spin_lock(&s->stack_lock);
    df__stack *k = id < s->n_stacks ? s->stacks[id] : NULL;
    df__spin_unlock(&s->stack_lock);
    return k;
}

/* TensorArrays: like stacks, kept by the run's home step; the id is the index (-1: no memory). */
DF_PRIVATE int64_t df__step_ta_add(df__step *s, df__tarray *a) {
    s = s->home;
    df__spin_lock(&s->stack_lock);
    int ok = s->n_tarrays < (1 << 30) && df__grow(&s->tarrays, &s->cap_tarrays, s->n_tarrays + 1, sizeof(df__tarray *));
    int64_t id = ok ? s->n_tarrays : -1;
    if (ok) s->tarrays[s->n_tarrays++] = a;
    df__spin_unlock(&s->stack_lock);
    return id;
}
DF_PRIVATE df__tarray *df__step_ta_get(df__step *s, const df_tensor *h) {
    s = s->home;
    uint64_t w;
    memcpy(&w, h->data, 8);
    if ((w >> 32) != DF__TA_MAGIC) return NULL;
    int64_t id = (int64_t)(w & 0xffffffffu);
    df__spin_lock(&s->stack_lock);
    df__tarray *a = id < s->n_tarrays ? s->tarrays[id] : NULL;
    df__spin_unlock(&s->stack_lock);
    return a;
}

DF_PRIVATE void df__step_task_done(df__step *s) { __atomic_sub_fetch(&s->active, 1, __ATOMIC_ACQ_REL); }

static void df__step_error_local(df__step *s, const df_status *st) {
    if (s->threaded) df__spin_lock(&s->lock);
    if (!s->aborted) { s->status = *st; __atomic_store_n(&s->aborted, 1, __ATOMIC_RELEASE); }
    if (s->threaded) df__spin_unlock(&s->lock);
}
/* The first error of any partition ends the run on every partition. */
DF_PRIVATE void df__step_error(df__step *s, const df_status *st) {
    df__step_error_local(s, st);
    if (s->group) df__group_abort(s->group, st);
}
/* Run deadlines (df_session_options.run_timeout_ms): a wall clock in ms, read as each loop
   iteration starts (only a loop can run without end: a graph without one has finitely many
   nodes) and while a run waits (on Recvs, on a queue). */
DF_PRIVATE double df__clock_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
DF_PRIVATE df_code df__deadline_exceeded(df_status *st, int timeout_ms) {
    return df_status_set(st, DF_DEADLINE_EXCEEDED, "The run did not end within %d ms (df_session_options.run_timeout_ms)",
                         timeout_ms);
}
DF_PRIVATE void df__step_set_deadline(df__step *s, int timeout_ms) {
    s->timeout_ms = timeout_ms;
    s->deadline_ms = timeout_ms > 0 ? df__clock_ms() + timeout_ms : 0;
}
#ifndef DF_NO_THREADS
/* Ends the run with DF_DEADLINE_EXCEEDED once the step's deadline has passed (a waiting thread). */
static void df__step_check_deadline(df__step *s) {
    if (s->deadline_ms <= 0 || __atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE) || df__clock_ms() < s->deadline_ms) return;
    df_status st;
    df__deadline_exceeded(&st, s->timeout_ms);
    df__step_error(s, &st);
}
#endif
/* `exclusive`: the caller holds the step lock or is the only thread in the step. */
static void df__step_oom(df__step *s, const char *what, int exclusive) {
    df_status st;
    df_status_set(&st, DF_RESOURCE_EXHAUSTED, "Out of memory in the executor (%s)", what);
    if (!exclusive) { df__step_error(s, &st); return; }
    if (!s->aborted) { s->status = st; __atomic_store_n(&s->aborted, 1, __ATOMIC_RELEASE); }
}

/* ---- wakes: Recvs resumed by the thread that sent their value ----
   A thread inside a batch queues wakes on itself and resumes them when its outermost batch is
   over, one after another: two partitions that ping-pong through a loop then run on one
   thread, with no hand-off and no recursion. */
#ifndef DF_NO_THREADS
#define DF__TLS _Thread_local
#else
#define DF__TLS
#endif
typedef struct df__wakeq { df__wake *v; int head, n, cap, depth, draining; df__wake local[16]; } df__wakeq;
static DF__TLS df__wakeq df__tls_wakes;
static void df__resume(df__wake *w);
static void df__wakes_drain(void) {
    df__wakeq *q = &df__tls_wakes;
    q->draining = 1;
    while (q->n) {
        df__wake w = q->v[q->head++];
        if (--q->n == 0) q->head = 0;
        df__resume(&w);
    }
    q->draining = 0;
    if (q->v != q->local) DF_FREE(q->v);   /* (a thread may end: nothing stays allocated) */
    q->v = q->local;
    q->cap = 16;
    q->head = 0;
}
DF_PRIVATE void df__wake_dispatch(df__wake *w) {
    df__wakeq *q = &df__tls_wakes;
    if (w->step->group) __atomic_add_fetch(&w->step->group->pending_wakes, 1, __ATOMIC_ACQ_REL);
    if (q->depth > 0 || q->draining) {
        if (!q->v) { q->v = q->local; q->cap = 16; }
        if (q->head + q->n == q->cap) {
            if (q->head > 0) { memmove(q->v, q->v + q->head, (size_t)q->n * sizeof *q->v); q->head = 0; }
            else if (q->v == q->local) {
                df__wake *v = (df__wake *)DF_MALLOC((size_t)q->cap * 2 * sizeof *v);
                if (!v) { df__resume(w); return; }
                memcpy(v, q->v, (size_t)q->n * sizeof *v);
                q->v = v;
                q->cap *= 2;
            } else if (!df__grow(&q->v, &q->cap, q->cap + 1, sizeof *q->v)) { df__resume(w); return; }
        }
        q->v[q->head + q->n++] = *w;
        return;
    }
    df__resume(w);
    df__wakes_drain();
}

/* Ends the run on every partition: each step stops running kernels, and each waiting Recv is
   resumed as failed. The first error is the run's error. */
DF_PRIVATE void df__group_abort(df__pgroup *g, const df_status *why) {
    df__spin_lock(&g->lock);
    int first = !g->aborted;
    if (first) { g->status = *why; __atomic_store_n(&g->aborted, 1, __ATOMIC_RELEASE); }
    df__spin_unlock(&g->lock);
    if (!first) return;
    for (int i = 0; i < g->n_steps; i++) df__step_error_local(&g->steps[i], why);
    df__rv_msg *m = df__rv_abort(&g->rv, why);
    while (m) {
        df__rv_msg *next = m->next;
        df__wake w = {m->step, m->tag, NULL, 1, 1, NULL};
        DF_FREE(m);
        df__wake_dispatch(&w);
        m = next;
    }
}

static int df__readyq_push(df__readyq *q, df__tagged t) {
    if (q->head + q->len == q->cap) {
        if (q->head > 0 && q->head >= q->len) {        /* compact */
            memmove(q->v, q->v + q->head, (size_t)q->len * sizeof *q->v);
            q->head = 0;
        } else if (q->v == q->local) {
            df__tagged *v = (df__tagged *)DF_MALLOC((size_t)q->cap * 2 * sizeof *v);
            if (!v) return 0;
            memcpy(v, q->v, (size_t)(q->head + q->len) * sizeof *v);
            q->v = v;
            q->cap *= 2;
        } else if (!df__grow(&q->v, &q->cap, q->cap + 1, sizeof *q->v)) {
            return 0;
        }
    }
    q->v[q->head + q->len++] = t;
    return 1;
}

/* ---- iterations and frames (caller holds the step lock when threaded) ---- */
static df__iter *df__iter_new(df__step *s, int sf, int64_t num) {
    const df__sframe *f = &s->x->frames[sf];
    df__iter *it = s->free_iters[sf];
    if (it) s->free_iters[sf] = it->next_free;
    else {
        size_t counts = (size_t)(f->n_nodes + 1) * sizeof(df__counts);
        size_t entries = (size_t)(f->total_inputs + 1) * sizeof(df_tensor *);
        it = (df__iter *)DF_MALLOC(sizeof *it + counts + entries);
        if (!it) return NULL;
        it->counts = (df__counts *)(it + 1);
        it->entries = (df_tensor **)((char *)it->counts + counts);
        memset(it->entries, 0, entries);
    }
    it->num = num;
    it->frame = NULL;                /* set by the caller */
    it->outstanding_ops = it->outstanding_frames = 0;
    it->children = NULL;
    it->next_free = NULL;
    memcpy(it->counts, f->init, (size_t)f->n_nodes * sizeof(df__counts));
    return it;
}

static void df__iter_retire(df__step *s, int sf, df__iter *it) {
    const df__sframe *f = &s->x->frames[sf];
    for (int i = 0; i < f->total_inputs; i++)
        if (it->entries[i]) { df_tensor_release(it->entries[i]); it->entries[i] = NULL; }
    it->next_free = s->free_iters[sf];
    s->free_iters[sf] = it;
}

static df__frame *df__frame_new(df__step *s, int sf, df__frame *parent, df__iter *parent_iter) {
    const df__sframe *f = &s->x->frames[sf];
    int ring = f->parallel_iterations + 1;
    df__frame *fr = (df__frame *)DF_MALLOC(sizeof *fr + (size_t)ring * sizeof(df__iter *) + (size_t)f->n_exits);
    if (!fr) return NULL;
    memset(fr, 0, sizeof *fr);
    fr->ring = (df__iter **)(fr + 1);
    memset(fr->ring, 0, (size_t)ring * sizeof(df__iter *));
    fr->exited = (uint8_t *)(fr->ring + ring);
    memset(fr->exited, 0, (size_t)f->n_exits);
    fr->sf = sf;
    fr->parent = parent;
    fr->parent_iter = parent_iter;
    fr->max_par = f->parallel_iterations;
    fr->num_pending_inputs = f->n_enters;
    fr->num_outstanding_iterations = 1;
    fr->id = parent ? df__hash_mix(df__hash_mix(parent->id, (uint64_t)parent_iter->num), df__hash_str(f->name)) : 0;
    if (!(fr->ring[0] = df__iter_new(s, sf, 0))) { DF_FREE(fr); return NULL; }
    fr->ring[0]->frame = fr;
    fr->live_next = s->live;
    if (s->live) s->live->live_prev = fr;
    s->live = fr;
    return fr;
}

static void df__frame_destroy(df__step *s, df__frame *fr) {
    int ring = fr->max_par + 1;
    for (int i = 0; i < ring; i++) if (fr->ring[i]) df__iter_retire(s, fr->sf, fr->ring[i]);
    for (int i = 0; i < fr->n_next_roots; i++) df_tensor_release(fr->next_roots[i].t);
    for (int i = 0; i < fr->n_invs; i++) df_tensor_release(fr->invs[i].t);
    DF_FREE(fr->next_roots); DF_FREE(fr->invs); DF_FREE(fr->dead_exits);
    if (fr->live_prev) fr->live_prev->live_next = fr->live_next;
    else s->live = fr->live_next;
    if (fr->live_next) fr->live_next->live_prev = fr->live_prev;
    DF_FREE(fr);
}

static df__iter *df__frame_iter(const df__frame *fr, int64_t num) { return fr->ring[num % (fr->max_par + 1)]; }

DF__HOT_INLINE int df__ready(df__step *s, df__iter *it, int32_t dst, int dead, df__readyq *q) {
    if (q->head + q->len == q->cap) {
        df__tagged t = {dst, dead, it};
        if (!df__readyq_push(q, t)) return 0;
    } else {
        df__tagged *slot = &q->v[q->head + q->len++];
        slot->item = dst; slot->dead = dead; slot->iter = it;
    }
    it->outstanding_ops++;
    s->outstanding++;
    return 1;
}

/* Activates the out-edges of `item` in iteration `it`; ready nodes go to q. With `move`, the
   last edge reading an output takes outs[k]'s reference and clears it. Returns 0 on OOM. */
static int df__activate(df__step *s, df__iter *it, int32_t item_id, df_tensor **outs,
                        int is_dead, int move, df__readyq *q) {
    const df__exec *x = s->x;
    const df__xitem *item = &x->items[item_id];
    const df__xedge *e = x->edges + item->edge_start, *end = e + item->n_edges;
    df__counts *counts = it->counts;
    df_tensor **entries = it->entries;
    if (!is_dead && move) {
        /* the common case: live outputs, handed on; Merge and ControlTrigger go the long way */
        for (; e < end; e++) {
            if (e->flags & (DF__XE_MERGE | DF__XE_TRIGGER | DF__XE_COUNT)) break;
            df__counts *c = &counts[e->dst_local];
            if (e->slot >= 0) {
                df_tensor *t = outs[e->src_out];
                if (!t) c->dead++;
                else if (e->flags & DF__XE_LAST) { entries[e->slot] = t; outs[e->src_out] = NULL; }
                else entries[e->slot] = df_tensor_retain(t);
            }
            if (--c->pending == 0 && !df__ready(s, it, e->dst, c->dead > 0, q)) return 0;
        }
    }
    int from_enter = item->kind == DF__X_ENTER;
    for (; e < end; e++) {
        if (e->flags & DF__XE_COUNT) {        /* a LoopCount notes whether the loop is dead (its control
                                                 inputs only bring nodes into the run); see frame_finish */
            if (e->slot >= 0) it->frame->count_dead = is_dead;  /* (the value itself may have moved on) */
            continue;
        }
        df__counts *c = &counts[e->dst_local];
        int ready, dst_dead;
        if (e->slot >= 0) {
            df_tensor *t = is_dead ? NULL : outs[e->src_out];
            if (e->flags & DF__XE_MERGE) {
                if (t) {
                    if (!(c->pending & 1)) continue;            /* already had a live input */
                    if (move && (e->flags & DF__XE_LAST)) { entries[e->slot] = t; outs[e->src_out] = NULL; }
                    else entries[e->slot] = df_tensor_retain(t);
                    c->pending -= 1;
                    ready = c->pending == 0;
                    dst_dead = 0;
                } else {
                    c->dead++;
                    dst_dead = c->dead == x->items[e->dst].n_inputs || from_enter;
                    ready = c->pending == 1 && dst_dead;
                    if (ready) c->pending = 0;
                }
            } else {
                if (t) {
                    if (move && (e->flags & DF__XE_LAST)) { entries[e->slot] = t; outs[e->src_out] = NULL; }
                    else entries[e->slot] = df_tensor_retain(t);
                } else {
                    c->dead++;
                }
                ready = --c->pending == 0;
                dst_dead = c->dead > 0;
            }
        } else if (e->flags & DF__XE_MERGE) {
            c->pending -= 2;
            dst_dead = c->dead == x->items[e->dst].n_inputs;
            ready = c->pending == 0 || (c->pending == 1 && dst_dead);
            if (ready) c->pending = 0;
        } else {
            if (is_dead) c->dead++;
            ready = --c->pending == 0;
            dst_dead = c->dead > 0;
        }
        if (!ready) continue;
        if (e->flags & DF__XE_TRIGGER) dst_dead = 0;
        if (!df__ready(s, it, e->dst, dst_dead, q)) return 0;
    }
    return 1;
}

static int df__cleanup_iterations(df__step *s, df__frame *fr, df__readyq *q);

/* Starts iteration iteration_count + 1: deferred NextIteration values and invariants go in.
   (Under the step lock, or alone in the step: past the run's deadline, the step is marked
   aborted here, as df__step_oom does; df__node_done tells the other partitions.) */
static int df__increment_iteration(df__step *s, df__frame *fr, df__readyq *q) {
    if (DF__UNLIKELY(s->deadline_ms > 0) && !s->aborted && df__clock_ms() >= s->deadline_ms) {
        df__deadline_exceeded(&s->status, s->timeout_ms);
        __atomic_store_n(&s->aborted, 1, __ATOMIC_RELEASE);
    }
    int64_t num = ++fr->iteration_count;
    df__iter *it = df__iter_new(s, fr->sf, num);
    if (!it) return 0;
    it->frame = fr;
    fr->ring[num % (fr->max_par + 1)] = it;
    fr->num_outstanding_iterations++;
    fr->n_dead_exits = 0;
    int n_roots = fr->n_next_roots;
    fr->n_next_roots = 0;
    for (int i = 0; i < n_roots; i++) {
        df__deferred d = fr->next_roots[i];
        int ok = df__activate(s, it, d.item, &d.t, 0, 1, q);
        df_tensor_release(d.t);
        if (!ok) {                   /* (the others were taken off the frame: released here) */
            for (int k = i + 1; k < n_roots; k++) df_tensor_release(fr->next_roots[k].t);
            return 0;
        }
    }
    for (int i = 0; i < fr->n_invs; i++)
        if (!df__activate(s, it, fr->invs[i].item, &fr->invs[i].t, fr->invs[i].dead, 0, q)) return 0;
    return 1;
}

static int df__iteration_done(const df__frame *fr, int64_t num) {
    const df__iter *it = df__frame_iter(fr, num);
    return it && it->num == num && it->outstanding_ops == 0 && it->outstanding_frames == 0 &&
           num == fr->first_alive && (num > 0 || fr->num_pending_inputs == 0);
}

/* Deletes a finished frame: dead Exits of its last iteration go to the parent, then the parent
   iteration may itself finish. An Exit that sent nothing out at all goes out dead too: a loop
   variable that died in an earlier iteration (its NextIteration dead) never reaches the last
   one, and TensorFlow leaves its consumers waiting for ever (a hang where they are on another
   device); dead, they end like the consumers of any dead value. */
static int df__frame_finish(df__step *s, df__frame *fr, df__readyq *q) {
    df__frame *parent = fr->parent;
    df__iter *piter = fr->parent_iter;
    const df__sframe *sf = &s->x->frames[fr->sf];
    for (int i = 0; i < fr->n_dead_exits; i++) {
        fr->exited[s->x->items[fr->dead_exits[i]].aux] = 1;
        if (!df__activate(s, piter, fr->dead_exits[i], NULL, 1, 0, q)) return 0;
    }
    for (int i = 0; i < sf->n_exits; i++)
        if (!fr->exited[i] && !df__activate(s, piter, sf->exits[i], NULL, 1, 0, q)) return 0;
    /* LoopCounts: how many iterations ran, once every node of every iteration has (so the
       stacks a loop filled are complete when a gradient loop starts on its count) */
    for (int i = 0; i < sf->n_counts; i++) {
        df_tensor *t = NULL;
        if (!fr->count_dead) {
            if (!(t = df_tensor_new(DF_INT32, 0, NULL, NULL))) return 0;
            *(int32_t *)t->data = (int32_t)DF__MIN(fr->iteration_count, INT32_MAX);
        }
        int ok = df__activate(s, piter, sf->counts[i], &t, fr->count_dead, 1, q);
        if (t) df_tensor_release(t);
        if (!ok) return 0;
    }
    df__frame **link = &piter->children;
    while (*link && *link != fr) link = &(*link)->sibling;
    if (*link) *link = fr->sibling;
    df__frame_destroy(s, fr);
    piter->outstanding_frames--;
    if (piter->outstanding_ops == 0 && piter->outstanding_frames == 0)
        return df__cleanup_iterations(s, parent, q);
    return 1;
}

/* Retires finished iterations of fr in order; starts deferred ones; deletes fr when done. */
static int df__cleanup_iterations(df__step *s, df__frame *fr, df__readyq *q) {
    while (fr->first_alive <= fr->iteration_count && df__iteration_done(fr, fr->first_alive)) {
        int64_t num = fr->first_alive;
        df__iter *it = df__frame_iter(fr, num);
        fr->ring[num % (fr->max_par + 1)] = NULL;
        df__iter_retire(s, fr->sf, it);
        fr->num_outstanding_iterations--;
        fr->first_alive++;
        if (fr->n_next_roots && !df__increment_iteration(s, fr, q)) return 0;
    }
    if (fr->parent && fr->num_pending_inputs == 0 && fr->num_outstanding_iterations == 0)
        return df__frame_finish(s, fr, q);
    return 1;
}

static df__frame *df__child_frame(df__step *s, df__frame *fr, df__iter *it, int sf) {
    for (df__frame *c = it->children; c; c = c->sibling) if (c->sf == sf) return c;
    df__frame *c = df__frame_new(s, sf, fr, it);
    if (!c) return NULL;
    c->sibling = it->children;
    it->children = c;
    it->outstanding_frames++;
    return c;
}

static int df__push_deferred(df__deferred **v, int *n, int *cap, int32_t item, df_tensor *t, int dead) {
    if (!df__grow(v, cap, *n + 1, sizeof(df__deferred))) return 0;
    (*v)[*n].item = item;
    (*v)[*n].t = df_tensor_retain(t);
    (*v)[*n].dead = dead;
    (*n)++;
    return 1;
}

/* ---- static loops (src/schedule.c): the loop's end, seen from its parent iteration ---- */
static df__frame *df__child_of(const df__iter *it, int sf) {
    for (df__frame *c = it->children; c; c = c->sibling) if (c->sf == sf) return c;
    return NULL;
}
/* A static loop ran (df__loop_run): its Exits' values (outs, by Exit index; NULL: dead) go to
   the parent iteration, its LoopCounts fire, its frame is deleted. Dead: a dead value entered
   it, and the tagged executor runs it instead, from what the Enters brought. 0: out of memory. */
static int df__loop_done(df__step *s, df__iter *it, const df__xitem *item, df_tensor **outs, int dead, df__readyq *q) {
    const df__sframe *sf = &s->x->frames[item->child_frame];
    df__frame *fr = df__child_of(it, item->child_frame);
    if (!fr) return 1;                    /* (not reached: the Enters made it) */
    if (dead) {
        df__iter *first = fr->ring[0];
        for (int i = 0; i < fr->n_invs; i++)
            if (!df__activate(s, first, fr->invs[i].item, &fr->invs[i].t, fr->invs[i].dead, 0, q)) return 0;
        int n = fr->n_next_roots;
        fr->n_next_roots = 0;
        for (int i = 0; i < n; i++) {
            df__deferred d = fr->next_roots[i];
            int ok = df__activate(s, first, d.item, &d.t, d.dead, 1, q);
            df_tensor_release(d.t);
            if (!ok) {
                for (int k = i + 1; k < n; k++) df_tensor_release(fr->next_roots[k].t);
                return 0;
            }
        }
        if (first->outstanding_ops == 0 && first->outstanding_frames == 0) return df__cleanup_iterations(s, fr, q);
        return 1;
    }
    for (int k = 0; k < sf->n_exits; k++) {
        if (!outs[k]) continue;
        fr->exited[k] = 1;
        if (!df__activate(s, it, sf->exits[k], outs + k, 0, 1, q)) return 0;
    }
    fr->n_dead_exits = 0;
    fr->count_dead = 0;
    return df__frame_finish(s, fr, q);
}

/* After a node ran in (fr, it): route its outputs by node kind, then account for it. Returns 0
   on OOM, the node uncounted all the same (s->outstanding), so that the aborted step still ends. */
static int df__propagate(df__step *s, const df__tagged *t, df_tensor **outs, df__readyq *q) {
    const df__xitem *item = &s->x->items[t->item];
    df__iter *it = t->iter;
    df__frame *fr = it->frame;
    int dead = t->dead, ok = 1;
    switch (item->kind) {
    case DF__X_ENTER: {
        df__frame *child = df__child_frame(s, fr, it, item->child_frame);
        if (!child) { s->outstanding--; return 0; }
        df_tensor *v = dead ? NULL : outs[0];
        const df__sframe *csf = &s->x->frames[item->child_frame];
        if (csf->loop_item >= 0 && s->statics && !(s->threaded && csf->sloop->expensive)) {
            /* a static loop: the values wait on the frame until every Enter has run, then
               the loop runs as one item of this iteration (df__loop_run) */
            if (item->flags & DF__XF_CONST_ENTER)
                ok = df__push_deferred(&child->invs, &child->n_invs, &child->cap_invs, t->item, v, dead || !v);
            else
                ok = df__push_deferred(&child->next_roots, &child->n_next_roots, &child->cap_next_roots, t->item, v, dead || !v);
            if (ok && --child->num_pending_inputs == 0) ok = df__ready(s, it, csf->loop_item, 0, q);
            break;
        }
        if (item->flags & DF__XF_CONST_ENTER) {
            ok = df__push_deferred(&child->invs, &child->n_invs, &child->cap_invs, t->item, v, dead || !v);
            for (int64_t k = child->first_alive; ok && k <= child->iteration_count; k++)
                ok = df__activate(s, df__frame_iter(child, k), t->item, outs, dead || !v, 0, q);
        } else {
            ok = df__activate(s, df__frame_iter(child, 0), t->item, outs, dead || !v, 1, q);
        }
        child->num_pending_inputs--;
        if (ok && child->num_pending_inputs == 0) {
            df__iter *first = df__frame_iter(child, child->first_alive);
            if (first && first->outstanding_ops == 0 && first->outstanding_frames == 0)
                ok = df__cleanup_iterations(s, child, q);
        }
        break;
    }
    case DF__X_EXIT:
        if (dead || !outs[0]) {
            if (it->num == fr->iteration_count) {
                if (!df__grow(&fr->dead_exits, &fr->cap_dead_exits, fr->n_dead_exits + 1, sizeof(int32_t))) {
                    s->outstanding--;
                    return 0;
                }
                fr->dead_exits[fr->n_dead_exits++] = t->item;
            }
        } else if (!fr->exited[item->aux]) {
            fr->exited[item->aux] = 1;
            ok = df__activate(s, fr->parent_iter, t->item, outs, 0, 1, q);
        }   /* (a second live value, from a loop made by hand whose Exit fires in several
               iterations, is dropped: its consumers took the first, and would not run again) */
        break;
    case DF__X_NEXT:
        if (dead || !outs[0]) break;                      /* a dead NextIteration ends the loop */
        if (it->num < fr->iteration_count) {
            ok = df__activate(s, df__frame_iter(fr, it->num + 1), t->item, outs, 0, 1, q);
        } else if (fr->num_outstanding_iterations == fr->max_par) {
            ok = df__push_deferred(&fr->next_roots, &fr->n_next_roots, &fr->cap_next_roots, t->item, outs[0], 0);
        } else {
            ok = df__increment_iteration(s, fr, q) &&
                 df__activate(s, df__frame_iter(fr, fr->iteration_count), t->item, outs, 0, 1, q);
        }
        break;
    case DF__X_LOOP:
        ok = df__loop_done(s, it, item, outs, dead, q);
        break;
    default:
        if (DF__LIKELY(!dead && (item->flags & DF__XF_PLAIN_EDGES))) {
            /* the common case inline: live outputs handed on along plain edges */
            const df__xedge *e = s->x->edges + item->edge_start, *end = e + item->n_edges;
            df__counts *counts = it->counts;
            df_tensor **entries = it->entries;
            for (; e < end; e++) {
                df__counts *c = &counts[e->dst_local];
                if (e->slot >= 0) {
                    df_tensor *v = outs[e->src_out];
                    if (!v) c->dead++;
                    else if (e->flags & DF__XE_LAST) { entries[e->slot] = v; outs[e->src_out] = NULL; }
                    else entries[e->slot] = df_tensor_retain(v);
                }
                if (--c->pending == 0 && !df__ready(s, it, e->dst, c->dead > 0, q)) { ok = 0; break; }
            }
        } else {
            ok = df__activate(s, it, t->item, outs, dead, 1, q);
        }
    }
    if (!ok) { s->outstanding--; return 0; }
    int ops = --it->outstanding_ops;     /* (kept in a register: no wide reload after the store) */
    s->outstanding--;
    if (ops == 0 && fr->parent && it->outstanding_frames == 0)
        return df__cleanup_iterations(s, fr, q);
    return 1;
}

/* ---- running one node ---- */
#ifndef DF_NO_THREADS
static int df__item_expensive(const df__step *s, const df__tagged *t) {
    const df__xitem *item = &s->x->items[t->item];
    if (!(item->flags & DF__XF_EXPENSIVE) || t->dead) return 0;
    df_tensor *const *in = t->iter->entries + item->input_start;
    int64_t work = 0;
    for (int i = 0; i < item->n_inputs; i++) if (in[i]) work += in[i]->n;
    if ((item->flags & DF__XF_MATMUL) && in[0] && in[1] && in[0]->rank == 2 && in[1]->rank == 2)
        work = in[0]->n * in[1]->dims[1];
    /* TF hands a node to another thread above ~5000 cycles of expected work (op_kernel.h); a
       hand-off costs a few microseconds on small machines, so we ask for ~30000. */
    return work * item->cost >= 32768;
}
#endif

static void df__loop_run(df__step *s, df__tagged *t, df_tensor **outs);

/* Static schedules: an item's live outputs into its consumers' input slots along its data
   edges. With `move`, the last edge reading an output takes its reference. */
DF__HOT_INLINE void df__route(const df__exec *x, const df__xitem *item, df_tensor **outs, df_tensor **entries, int move) {
    const df__xedge *e = x->edges + item->edge_start, *end = e + item->n_edges;
    for (; e < end; e++) {
        if (e->slot < 0 || (e->flags & DF__XE_COUNT)) continue;
        df_tensor *v = outs[e->src_out];
        if (!v) continue;
        if (move && (e->flags & DF__XE_LAST)) { entries[e->slot] = v; outs[e->src_out] = NULL; }
        else entries[e->slot] = df_tensor_retain(v);
    }
}

/* TF's ProcessOutputs checks on what a kernel made: every needed output (bit i of need) present,
   every output of its declared dtype. */
DF__HOT_INLINE df_code df__check_outputs(const df_node *n, df_tensor *const *outs, int n_out, uint32_t need, df_status *st) {
    for (int i = 0; i < n_out; i++) {
        const df_tensor *o = outs[i];
        if (o ? o->dtype == n->out_types[i] : !(need >> DF__MIN(i, 31) & 1)) continue;
        if (o) return df__fail(st, n, DF_INTERNAL, "Output %d of type %s does not match declared output type %s", i,
                               df_dtype_name(o->dtype), df_dtype_name(n->out_types[i]));
        return df__fail(st, n, DF_INTERNAL, "Kernel of %s produced no output %d", n->op->name, i);
    }
    return DF_OK;
}

/* Runs the kernel of t (unless dead) into outs[], which arrives all NULL; a failure aborts the
   step. Feed and fetch items move values in and out; a fetch runs even when dead, to report it,
   and so do Send and Recv, to carry the dead bit. Returns 0 when a Recv waits for its value
   (the node stays outstanding until its wake), else 1. A Recv whose value is dead marks t dead. */
DF__HOT_INLINE int df__run_item(df__step *s, df__tagged *t, df_tensor **outs) {
    const df__xitem *item = &s->x->items[t->item];
    df_tensor **in = t->iter->entries + item->input_start;
    if (__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) {   /* read without the step lock */
    } else if (item->kind == DF__X_FEED) {
        if (DF__UNLIKELY(item->flags & DF__XF_DEVICE_VALUE)) {
            df_status st;
            if (!(outs[0] = df__to_device(s->device, s->feeds[item->aux], &st))) df__step_error(s, &st);
        } else {
            outs[0] = df_tensor_retain(s->feeds[item->aux]);
        }
    } else if (item->kind == DF__X_FETCH) {
        if (!in[0]) {
            df_status st;
            df__fail(&st, item->node, DF_INVALID_ARGUMENT, "Fetched tensor '%s:%d' is dead: it was not computed "
                     "in this run (it lies on an untaken branch of a cond, or depends on one, or on a loop "
                     "variable that died before the loop's last iteration)",
                     item->node->name, item->child_frame);
            df__step_error(s, &st);
        } else {
            df_status st;
            df_tensor *v = df__deref(in[0], item->node, &st);
            in[0] = NULL;
            if (v && (item->flags & DF__XF_DEVICE_VALUE)) {
                df_tensor *h = df__to_host(s->device, v, &st);
                df_tensor_release(v);
                v = h;
            }
            if (v) s->fetches[item->aux] = v;
            else df__step_error(s, &st);
        }
    } else if ((!t->dead || (item->flags & DF__XF_TRANSFER)) && !(item->flags & DF__XF_NO_KERNEL)) {
        df_status st;
        df_status_clear(&st);
        if (item->flags & DF__XF_DEREF)
            for (int i = 0; i < item->n_inputs; i++)
                if (in[i] && in[i]->ref && !df__ref_arg(item->node->op, i) &&
                    !(in[i] = df__deref(in[i], item->node, &st))) break;
        if (!st.code) {
            df__kctx k;
            k.in = in; k.out = outs; k.node = item->node; k.n_in = item->n_inputs; k.n_out = item->n_outputs;
            k.need = item->need; k.alloc = s->device->alloc; k.step = s; k.st = &st; k.iter = t->iter->num;
            k.ipool = s->ipool;
            k.host_out = s->x->host_out ? s->x->host_out[t->item] : 0;
            k.gpu = k.host_out == ~0u ? NULL : s->device->gpu;
            k.dev = s->device;
            if (DF__UNLIKELY(k.host_out == ~0u) && !(k.alloc = df__host_allocator())) {
                df__step_error(s, &(df_status){DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator"});
                return 1;
            }
            if (DF__UNLIKELY(item->flags & (DF__XF_TRANSFER | DF__XF_ASYNC))) {
                k.tag = t; k.aux = item->aux; k.dead = t->dead; k.out_dead = 0; k.pending = 0; k.xfer = item->child_frame;
                item->kernel(&k);
                if (k.pending) return 0;
                if (k.out_dead) t->dead = 1;
            } else if (DF__LIKELY(s->device->kernel_type == DF__DEV_CPU)) {
                item->kernel(&k);
            } else {
                s->device->ops->run_kernel(s->device, item->kernel, &k);
            }
            /* (Switch and Merge may leave some outputs dead, a Recv may receive a dead value) */
            if (!st.code)
                df__check_outputs(item->node, outs, item->n_outputs,
                                  (item->flags & (DF__XF_SWITCH | DF__XF_TRANSFER)) || item->kind == DF__X_MERGE ? 0 : item->need, &st);
        }
        if (st.code) df__step_error(s, &st);
    } else if (DF__UNLIKELY(item->kind == DF__X_LOOP)) {
        df__loop_run(s, t, outs);
    }
    for (int i = 0, n = item->n_inputs; i < n; i++) {
        df_tensor *x = in[i];
        if (x) { in[i] = NULL; df_tensor_release(x); }
    }
    return 1;
}

/* ---- static loops: one whole loop on this thread (see src/schedule.c) ----
   t is the loop's DF__X_LOOP item in its parent iteration; every Enter has run, their values
   wait on the frame (invs: the invariants; next_roots: the loop variables' first values).
   Iteration after iteration, the invariants go into their consumers' slots and the items of
   the schedule run in order, each skipped (its inputs released) when it lies on the side of
   the Switches the predicate did not take. The Exits' values go to outs. A dead value among
   the Enters' marks t dead: df__loop_done then hands the frame to the tagged executor. */
static __attribute__((noinline)) void df__loop_run(df__step *s, df__tagged *t, df_tensor **outs) {
    const df__exec *x = s->x;
    const df__xitem *li = &x->items[t->item];
    const df__sframe *sf = &x->frames[li->child_frame];
    const df__sloop *P = sf->sloop;
    /* (another thread may unlink and free a sibling frame of this iteration meanwhile) */
    if (s->threaded) df__spin_lock(&s->lock);
    df__frame *fr = df__child_of(t->iter, li->child_frame);
    if (s->threaded) df__spin_unlock(&s->lock);
    if (!fr) {
        df__step_error(s, &(df_status){DF_INTERNAL, "A static loop ran without its frame"});
        return;
    }
    int dead = 0;
    for (int i = 0; i < fr->n_invs; i++) dead |= fr->invs[i].dead;
    for (int i = 0; i < fr->n_next_roots; i++) dead |= fr->next_roots[i].dead;
    if (s->session) __atomic_add_fetch(&s->session->sched_stats[dead ? 2 : 1], 1, __ATOMIC_RELAXED);
    if (dead) { t->dead = 1; return; }
    df__iter *it = fr->ring[0];
    df_tensor **E = it->entries;
    df_tensor *small[16], **io = small;
    if (x->max_outputs > 16 && !(io = (df_tensor **)DF_MALLOC((size_t)x->max_outputs * sizeof(df_tensor *)))) {
        df__step_oom(s, "a static loop", 0);
        return;
    }
    memset(io, 0, (size_t)(io == small ? 16 : x->max_outputs) * sizeof *io);
    for (int i = 0; i < fr->n_next_roots; i++) {         /* the first values, into their Merges */
        df__deferred *d = &fr->next_roots[i];
        df__route(x, &x->items[d->item], &d->t, E, 1);
        if (d->t) { df_tensor_release(d->t); d->t = NULL; }
    }
    fr->n_next_roots = 0;
    /* the invariants' readers, with their values (see df__sched_borrow): the loop's own reference
       to each invariant and borrowed Const for its whole run */
    df_tensor *small_iv[16], **iv = small_iv;
    const df__siroute *ir = P->iroutes;
    if (P->n_iroutes > 16) {
        iv = (df_tensor **)DF_MALLOC((size_t)P->n_iroutes * sizeof(df_tensor *));
        if (!iv) {
            if (io != small) DF_FREE(io);
            df__step_oom(s, "a static loop", 0);
            return;
        }
    }
    for (int r = 0; r < P->n_iroutes; r++) {
        iv[r] = NULL;
        for (int i = 0; i < fr->n_invs; i++) if (fr->invs[i].item == ir[r].item) { iv[r] = fr->invs[i].t; break; }
    }
    for (int i = 0; i < fr->n_invs; i++) df_tensor_retain(fr->invs[i].t);
    for (int k = 0; k < P->n; k++) if (P->steps[k].borrowc) df_tensor_retain(P->steps[k].cval);
    df__tagged ti = {0, 0, it};
    df_status st;                        /* the kernels' context, the same in every call */
    df_status_clear(&st);
    df__kctx k_ctx;
    memset(&k_ctx, 0, sizeof k_ctx);
    k_ctx.out = io; k_ctx.alloc = s->device->alloc; k_ctx.step = s; k_ctx.st = &st; k_ctx.ipool = s->ipool;
    k_ctx.host_out = 0; k_ctx.gpu = s->device->gpu; k_ctx.dev = s->device;
    int64_t n = 0;
    for (;; n++) {
        if (__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) break;
        if (DF__UNLIKELY(s->deadline_ms > 0) && n > 0 && df__clock_ms() >= s->deadline_ms) {
            df__deadline_exceeded(&st, s->timeout_ms);
            df__step_error(s, &st);
            break;
        }
        it->num = n;
        for (int r = 0; r < P->n_iroutes; r++)
            if (iv[r]) E[ir[r].slot] = ir[r].borrow ? iv[r] : df_tensor_retain(iv[r]);
        int pred = -1;
        unsigned side = 1;                     /* (sstep.runs: before the predicate, then its side) */
        for (const df__sstep *sp = P->steps, *send = sp + P->n; sp < send; sp++) {
            df_tensor **in = E + sp->in_start;
            if (!(sp->runs & side)) {
                for (int j = 0; j < sp->n_in; j++)                 /* dead this iteration */
                    if (in[j]) {
                        if (!(j < 32 && (sp->borrow >> j & 1))) df_tensor_release(in[j]);
                        in[j] = NULL;
                    }
                continue;
            }
            switch (sp->op) {                  /* the plumbing without a kernel call */
            case DF__SO_MOVE:                  /* an Identity or NextIteration read once */
                E[sp->fwd_slot] = in[0];
                in[0] = NULL;
                continue;
            case DF__SO_FORWARD: io[0] = in[0]; in[0] = NULL; break;
            case DF__SO_COND:
                if (in[0]->rank != 0 || in[0]->dtype != DF_BOOL) goto general;
                io[0] = in[0]; in[0] = NULL;
                break;
            case DF__SO_SWITCH:
                if (in[1]->rank != 0 || in[1]->dtype != DF_BOOL) goto general;
                io[*(const uint8_t *)in[1]->data ? 1 : 0] = in[0];
                in[0] = NULL;
                df_tensor_release(in[1]);
                in[1] = NULL;
                break;
            case DF__SO_MERGE: {
                int live = in[0] ? 0 : 1;
                io[0] = in[live];
                in[live] = NULL;
                if (!io[0]) goto general;          /* (not reached: the kernel reports it) */
                if (in[1 - live]) { df_tensor_release(in[1 - live]); in[1 - live] = NULL; }
                break;
            }
            case DF__SO_CONST:
                if (sp->borrowc) {             /* its readers borrow it */
                    for (const df__sroute *r = P->routes + sp->route, *end = r + sp->n_route; r < end; r++)
                        E[r->slot] = sp->cval;
                    continue;
                }
                io[0] = df_tensor_retain(sp->cval);
                break;
            default:
                if (sp->general) goto general;
                {   /* a kernel: df__run_item's path for a live CPU node without reference inputs */
                    const df__xitem *item = &x->items[sp->item];
                    st.code = DF_OK;
                    st.message[0] = 0;
                    k_ctx.in = in; k_ctx.node = item->node; k_ctx.n_in = sp->n_in; k_ctx.n_out = sp->n_out;
                    k_ctx.need = item->need; k_ctx.iter = n;
                    if (sp->borrow) {
                        df_tensor *lent[32];
                        for (uint32_t m = sp->borrow; m; m &= m - 1) lent[__builtin_ctz(m)] = in[__builtin_ctz(m)];
                        item->kernel(&k_ctx);
                        for (uint32_t m = sp->borrow; m; m &= m - 1) {
                            int j = __builtin_ctz(m);
                            if (in[j]) in[j] = NULL;                     /* (lent: not ours to release) */
                            else if (lent[j]) df_tensor_retain(lent[j]); /* passed on: its own now */
                        }
                    } else {
                        item->kernel(&k_ctx);
                    }
                    for (int j = 0; j < sp->n_in; j++) if (in[j]) { df_tensor_release(in[j]); in[j] = NULL; }
                    if (!st.code) df__check_outputs(item->node, io, sp->n_out, item->need, &st);
                    if (st.code) df__step_error(s, &st);
                }
                break;
            general:
                ti.item = sp->item;
                ti.dead = 0;
                df__run_item(s, &ti, io);
            }
            if (DF__UNLIKELY(sp->post)) {
                if ((sp->post & DF__SP_KERNEL) && __atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) {
                    for (int j = 0; j < sp->n_out; j++) if (io[j]) { df_tensor_release(io[j]); io[j] = NULL; }
                    goto out;
                }
                if (sp->post & DF__SP_COND) {
                    pred = io[0] && *(const uint8_t *)io[0]->data ? 1 : 0;
                    side = pred ? 2 : 4;
                }
            }
            if (sp->slot1 >= 0) {              /* one output, one reader */
                E[sp->slot1] = io[0];
                io[0] = NULL;
                continue;
            }
            if (DF__UNLIKELY(sp->post & DF__SP_EXIT)) {
                if (io[0] && !outs[sp->exit]) { outs[sp->exit] = io[0]; io[0] = NULL; }
            } else {
                for (const df__sroute *r = P->routes + sp->route, *end = r + sp->n_route; r < end; r++) {
                    df_tensor *v = io[r->src_out];
                    if (!v) continue;
                    if (r->last) { E[r->slot] = v; io[r->src_out] = NULL; }
                    else E[r->slot] = df_tensor_retain(v);
                }
                if (sp->clean) continue;
            }
            for (int j = 0; j < sp->n_out; j++) if (io[j]) { df_tensor_release(io[j]); io[j] = NULL; }
        }
        if (pred != 1) break;
    }
out:
    fr->iteration_count = n;
    for (int r = 0; r < P->n_iroutes; r++) if (ir[r].borrow) E[ir[r].slot] = NULL;   /* (lent) */
    for (int k = 0; k < P->n; k++)
        if (P->steps[k].borrowc)
            for (int r = P->steps[k].route; r < P->steps[k].route + P->steps[k].n_route; r++) E[P->routes[r].slot] = NULL;
    for (int k = 0; k < sf->total_inputs; k++) if (E[k]) { df_tensor_release(E[k]); E[k] = NULL; }
    for (int i = 0; i < fr->n_invs; i++) df_tensor_release(fr->invs[i].t);
    for (int k = 0; k < P->n; k++) if (P->steps[k].borrowc) df_tensor_release(P->steps[k].cval);
    if (iv != small_iv) DF_FREE(iv);
    if (io != small) DF_FREE(io);
}

/* ---- run traces (src/trace.c keeps them): only a traced run (s->trace set) comes here ----
   What one item's record needs from before its kernel ran: the time, and its inputs' buffers
   (an output on one of them was forwarded, not allocated). Feeds, fetches, items of an aborted
   step and dead nodes (whose kernels do not run; Send and Recv run either way) are not recorded. */
typedef struct df__trace_pre { int64_t start; int on, n_in; void *small[8]; void **in; } df__trace_pre;
#if defined(__GNUC__) || defined(__clang__)
#define DF__TRACE_COLD __attribute__((noinline, cold))
#else
#define DF__TRACE_COLD
#endif
static DF__TRACE_COLD void df__trace_before(const df__step *s, const df__tagged *t, df__trace_pre *p) {
    const df__xitem *item = &s->x->items[t->item];
    p->on = !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE) && item->kind != DF__X_FEED && item->kind != DF__X_FETCH &&
            (!t->dead || (item->flags & DF__XF_TRANSFER));
    p->n_in = 0;
    p->in = p->small;
    if (!p->on) return;
    df_tensor *const *in = t->iter->entries + item->input_start;
    if (item->n_inputs > 8 && !(p->in = (void **)DF_MALLOC((size_t)item->n_inputs * sizeof(void *)))) p->in = p->small;
    else p->n_in = item->n_inputs;
    for (int i = 0; i < p->n_in; i++) p->in[i] = in[i] ? in[i]->data : NULL;
    p->start = df__trace_now();
}
/* One record: the item t of step s ran from start to end on this thread. */
static void df__trace_item(df__step *s, const df__tagged *t, int64_t start, int64_t end, int64_t bytes) {
    const df__xitem *item = &s->x->items[t->item];
    const df__iter *it = t->iter;
    df__trace_rec r;
    r.node = item->node;
    r.dev = s->device;
    r.frame = it->frame->sf ? s->x->frames[it->frame->sf].name : NULL;
    r.iter = it->num;
    r.start = start;
    r.end = end;
    r.bytes = bytes;
    r.tid = df__trace_tid();
    r.kind = DF_TRACE_OP;
    r.flow = 0;
    if (item->flags & DF__XF_TRANSFER) {   /* a Send and its Recv meet under (key, frame, iteration) */
        r.kind = item->kernel == df__k_send ? DF_TRACE_SEND : DF_TRACE_RECV;
        r.flow = df__hash_mix(df__hash_mix((uint64_t)(uint32_t)item->aux, it->frame->id), (uint64_t)it->num);
        if (!r.flow) r.flow = 1;
    }
    df__trace_add(s->trace, &r);
}
/* After df__run_item: a record unless the item waits (a Recv, a queue op: recorded when resumed). */
static DF__TRACE_COLD void df__trace_after(df__step *s, const df__tagged *t, df_tensor **outs, int ran, df__trace_pre *p) {
    if (p->on && ran) {
        int64_t end = df__trace_now();
        const df__xitem *item = &s->x->items[t->item];
        df__trace_item(s, t, p->start, end, df__trace_bytes(outs, item->n_outputs, (void *const *)p->in, p->n_in));
    }
    if (p->in != p->small) DF_FREE(p->in);
}
/* df__run_item of a traced step (df__run_item is inlined here and in the batch loop, so an
   untraced run pays one test of a register per node). */
static DF__TRACE_COLD int df__run_item_traced(df__step *s, df__tagged *t, df_tensor **outs) {
    df__trace_pre pre;
    df__trace_before(s, t, &pre);
    int ran = df__run_item(s, t, outs);
    df__trace_after(s, t, outs, ran, &pre);
    return ran;
}

static void df__step_finish(df__step *s) {
#ifndef DF_NO_THREADS
    if (s->threaded) {
        pthread_mutex_lock(&s->done_mu);
        __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);      /* also read without the mutex */
        pthread_cond_broadcast(&s->done_cv);
        pthread_mutex_unlock(&s->done_mu);
        return;
    }
#endif
    s->done = 1;
}

/* After t ran: routes its outputs (or, when the step aborted, just uncounts it), releases what
   is left of outs, hands newly ready expensive nodes to the pool, and ends the step when
   nothing is outstanding. `before`: the ready queue's length before. */
DF__HOT_INLINE void df__node_done(df__step *s, df__tagged *t, df_tensor **outs, df__readyq *q) {
    const df__xitem *item = &s->x->items[t->item];
    /* Alone in the step (no other thread running it, no task of it queued), this thread
       needs no lock: only a running thread can queue work, and it counts it first. Steps of a
       partitioned run always lock: another partition's thread may resume their Recvs. */
    int locked = s->threaded && (s->shared || __atomic_load_n(&s->active, __ATOMIC_ACQUIRE) > 1);
    if (locked) df__spin_lock(&s->lock);
    int before = q->len;
    DF__UNUSED(before);
    if (s->aborted) s->outstanding--;
    else if (!df__propagate(s, t, outs, q)) df__step_oom(s, "propagating outputs", 1);
    int completed = s->outstanding == 0;
    if (locked) df__spin_unlock(&s->lock);
    for (int i = 0, n = item->n_outputs; i < n; i++) {
        df_tensor *o = outs[i];
        if (o) { outs[i] = NULL; df_tensor_release(o); }
    }
    if (DF__UNLIKELY(s->group != NULL) && __atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE) && !__atomic_load_n(&s->group->aborted, __ATOMIC_ACQUIRE))
        df__group_abort(s->group, &s->status);       /* (an out-of-memory found under the lock) */
#ifndef DF_NO_THREADS
    /* Newly ready expensive nodes go to the pool, except one that can run here next. */
    if (s->pool && q->len > before && (item->flags & DF__XF_EXPENSIVE_NEXT)) {
        int keep = q->head + before;
        for (int i = q->head + before; i < q->head + q->len; i++) {
            df__tagged r = q->v[i];
            int last = i == q->head + q->len - 1;
            if (df__item_expensive(s, &r) && !(last && keep == q->head)) {
                df__task task = {s, r, NULL, NULL};
                __atomic_add_fetch(&s->active, 1, __ATOMIC_ACQ_REL);
                if (df__pool_push(s->pool, &task)) continue;
                __atomic_sub_fetch(&s->active, 1, __ATOMIC_ACQ_REL);
            }
            q->v[keep++] = r;
        }
        q->len = keep - q->head;
    }
#endif
    if (completed) df__step_finish(s);
}

/* Processes the given ready nodes and everything that becomes ready inline after them, first in
   first out (so a graph runs breadth first, in the order its items are laid out). `resumed`,
   when given, is a Recv whose value arrived (in resumed_outs): it is routed first. Wakes this
   batch queues for other partitions run when the thread's outermost batch is over. */
static void df__process_batch(df__step *s, const df__tagged *first, int n_first, df__tagged *resumed,
                              df_tensor **resumed_outs) {
    df__tagged local[32];
    df__readyq q = {local, 0, 0, 32, local};
    df_tensor *small[16] = {NULL}, **outs = small;
    int outs_cap = 16;
    df__trace *const traced = s->trace;                 /* (NULL but for a traced run) */
    df__tls_wakes.depth++;
    for (int i = 0; i < n_first; i++)
        if (!df__readyq_push(&q, first[i])) {        /* drop the rest; the step ends with the error */
            df__step_oom(s, "ready queue", 0);
            if (s->threaded) df__spin_lock(&s->lock);
            s->outstanding -= n_first - i;
            int completed = s->outstanding == 0;
            if (s->threaded) df__spin_unlock(&s->lock);
            if (completed) df__step_finish(s);
            break;
        }
    if (resumed) df__node_done(s, resumed, resumed_outs, &q);
    while (q.len) {
        df__tagged t = q.v[q.head++];
        if (--q.len == 0) q.head = 0;
        const df__xitem *item = &s->x->items[t.item];
        if (item->n_outputs > outs_cap) {
            df_tensor **bigger = (df_tensor **)DF_MALLOC((size_t)item->n_outputs * sizeof(df_tensor *));
            if (bigger) {
                memset(bigger, 0, (size_t)item->n_outputs * sizeof(df_tensor *));
                if (outs != small) DF_FREE(outs);
                outs = bigger;
                outs_cap = item->n_outputs;
            }
        }
        if (item->n_outputs > outs_cap) df__step_oom(s, "output array", 0);
        else if (DF__LIKELY(traced == NULL) ? !df__run_item(s, &t, outs) : !df__run_item_traced(s, &t, outs))
            continue;                                       /* a Recv waits for its value */
        df__node_done(s, &t, outs, &q);
    }
    if (outs != small) DF_FREE(outs);
    if (q.v != local) DF_FREE(q.v);
    if (--df__tls_wakes.depth == 0 && !df__tls_wakes.draining && df__tls_wakes.n) df__wakes_drain();
}

/* A Recv's value arrived (or the run aborted), or a waiting queue op finished: route it in its
   step, on this thread. (Only a step of a partitioned run has a group.) */
static void df__resume(df__wake *w) {
    df__step *s = w->step;
    int64_t trace_start = DF__UNLIKELY(s->trace != NULL) ? df__trace_now() : 0;
    __atomic_add_fetch(&s->active, 1, __ATOMIC_ACQ_REL);
    if (s->group) {
        __atomic_sub_fetch(&s->group->pending_wakes, 1, __ATOMIC_ACQ_REL);
        __atomic_add_fetch(&s->group->progress, 1, __ATOMIC_RELAXED);
    }
    df__tagged t = w->tag;
    if (w->dead) t.dead = 1;
    df_tensor *outs[1] = {w->t};
    if (w->failed) df__step_error_local(s, &s->group->status);
    else if (w->t && !w->outs && !s->device->host_memory && (s->x->items[t.item].flags & DF__XF_TRANSFER)) {
        df_status st;                         /* a Recv's value for device memory, from the host */
        df_status_clear(&st);
        int devmem = s->x->host_out && !(s->x->host_out[t.item] & 1);
        if (!(outs[0] = df__recv_to_device(s, devmem, w->t, &st))) { df__step_error_local(s, &st); t.dead = 1; }
    }
    if (DF__UNLIKELY(s->trace != NULL) && !w->failed && !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE))
        /* a waiting Recv (or queue op) is recorded once, when its value arrives: from then to
           here (a copy into device memory), on this thread; its wait is the gap since its Send */
        df__trace_item(s, &t, trace_start, df__trace_now(), outs[0] && outs[0] != w->t ? (int64_t)outs[0]->nbytes : 0);
    df__process_batch(s, NULL, 0, &t, w->outs ? w->outs : outs);
    DF_FREE(w->outs);
    df__step_task_done(s);
}

#ifndef DF_NO_THREADS
DF_PRIVATE void df__process(df__step *s, df__tagged t) { df__process_batch(s, &t, 1, NULL, NULL); }
#endif

/* Static schedules run unless turned off (df_session_options.dynamic_only, DF_STATIC_SCHEDULES=0),
   for a run that is not traced (a trace records the tagged executor's nodes), on a device whose
   memory is the host's (a loop's predicate is read there). */
static int df__statics_on(const df__step *s) {
    return !s->trace && s->device->host_memory && s->device->kernel_type == DF__DEV_CPU &&
           !(s->session && s->session->opts.dynamic_only) && df__static_schedules_env();
}

/* Frees what the stacks' home step made: its stacks and TensorArrays. */
static void df__step_free_stacks(df__step *s) {
    if (s->home != s) return;
    for (int i = 0; i < s->n_stacks; i++) {
        for (int k = 0; k < s->stacks[i]->n; k++) df_tensor_release(s->stacks[i]->v[k]);
        for (int k = 0; k < s->stacks[i]->n_pend; k++) df_tensor_release(s->stacks[i]->pend[k].t);
        DF_FREE(s->stacks[i]->v);
        DF_FREE(s->stacks[i]->pend);
        DF_FREE(s->stacks[i]);
    }
    DF_FREE(s->stacks);
    s->stacks = NULL; s->n_stacks = 0;
    for (int i = 0; i < s->n_tarrays; i++) df__ta_free(s->tarrays[i]);
    DF_FREE(s->tarrays);
    s->tarrays = NULL; s->n_tarrays = 0;
}

/* One item of a flat graph: a NoOp drops its inputs (nothing comes out); any other runs and
   hands its outputs to its consumers' slots in E. 0: the run is aborted. */
DF__HOT_INLINE int df__flat_item(df__step *s, df__tagged *t, df_tensor **io, df_tensor **E) {
    const df__exec *x = s->x;
    const df__xitem *item = &x->items[t->item];
    if ((item->flags & DF__XF_NO_KERNEL) && item->kind == DF__X_NORMAL && item->n_outputs == 0) {
        df_tensor **in = E + item->input_start;
        for (int j = 0, m = item->n_inputs; j < m; j++) if (in[j]) { df_tensor_release(in[j]); in[j] = NULL; }
        return 1;
    }
    df__run_item(s, t, io);
    int live = !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE);
    if (DF__LIKELY(live)) df__route(x, item, io, E, 1);
    for (int j = 0, m = item->n_outputs; j < m; j++) if (io[j]) { df_tensor_release(io[j]); io[j] = NULL; }
    return live;
}

/* A flat graph (src/schedule.c) on the calling thread: every item once, in index order; its
   inputs in one array of slots, its outputs handed to its consumers' slots as it ends. The
   first error ends the run. */
static df_code df__execute_flat(df__step *s, df_status *st) {
    const df__exec *x = s->x;
    if (!s->home) s->home = s;
    size_t n_slots = (size_t)x->frames[0].total_inputs;
    df_tensor *small_in[64], *small_out[16];
    df_tensor **E = n_slots <= 64 ? small_in : (df_tensor **)DF_MALLOC(n_slots * sizeof(df_tensor *));
    df_tensor **io = x->max_outputs <= 16 ? small_out : (df_tensor **)DF_MALLOC((size_t)x->max_outputs * sizeof(df_tensor *));
    if (!E || !io) {
        if (E != small_in) DF_FREE(E);
        if (io != small_out) DF_FREE(io);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a run");
    }
    memset(E, 0, DF__MAX(n_slots, 1) * sizeof *E);
    memset(io, 0, (size_t)(io == small_out ? 16 : x->max_outputs) * sizeof *io);
    df__iter it;
    memset(&it, 0, sizeof it);
    it.entries = E;
    df__tagged t = {0, 0, &it};
    for (int i = 0, n = x->n_items; i < n; i++) {
        t.item = i;
        if (DF__UNLIKELY(!df__flat_item(s, &t, io, E))) break;
    }
    for (size_t k = 0; k < n_slots; k++) if (E[k]) df_tensor_release(E[k]);
    if (E != small_in) DF_FREE(E);
    if (io != small_out) DF_FREE(io);
    df__step_free_stacks(s);
    s->done = 1;
    if (s->aborted) { *st = s->status; return st->code; }
    return DF_OK;
}

#ifndef DF_NO_THREADS
/* ---- a flat graph on threads (x->fplan, src/schedule.c) ----
   The run's caller takes list 0 and queues one task per other list. A thread claims lists
   (once each, for the whole run) and runs the items of those it holds in index order, each
   after the items of other lists it reads. One whose input comes from a list no thread holds
   yet waits up to 200 us for a task to take it, then claims it, so no item waits long for a
   task still queued; and as every thread runs what it holds in index order, no two can wait
   for each other. A thread out of items
   claims what is left; the caller then claims every list (a task run later finds nothing)
   and waits for the threads inside. The run's state is shared with the queued tasks, so the
   last of them frees it. */
typedef struct df__fpar {
    int refs;                    /* the caller and each queued task */
    int running;                 /* threads inside df__fpar_run */
    int waiters;                 /* threads asleep on cv */
    int n_lists;                 /* (a task run after its run ended reads only the fields above
                                    and claimed: what the run pointed to is not its to keep) */
    df__step *s;
    const df__fplan *p;
    df_tensor **E;               /* the input slots */
    uint8_t *done;               /* per item: it ran */
    int32_t *pos;                /* per list: its next item (read and written by its holder) */
    int *claimed;                /* per list: a thread holds it */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} df__fpar;

static void df__fpar_unref(df__fpar *R) {
    if (__atomic_sub_fetch(&R->refs, 1, __ATOMIC_ACQ_REL)) return;
    pthread_mutex_destroy(&R->mu);
    pthread_cond_destroy(&R->cv);
    DF_FREE(R);
}

static void df__fpar_wake(df__fpar *R) {
    pthread_mutex_lock(&R->mu);
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
}

/* Sleeps on the run's condition (its mutex held) until woken, or 1 ms at most. */
static void df__fpar_sleep(df__fpar *R) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    ts.tv_nsec += 1000000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&R->cv, &R->mu, &ts);
}

/* Waits for item q (run by another thread); 0 when the run aborts first. */
static int df__fpar_wait(df__fpar *R, int q) {
    df__step *s = R->s;
    for (int spin = 0; spin < 2000; spin++) {
        if (__atomic_load_n(&R->done[q], __ATOMIC_ACQUIRE)) return 1;
        if (__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) return 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    pthread_mutex_lock(&R->mu);
    __atomic_add_fetch(&R->waiters, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&R->done[q], __ATOMIC_SEQ_CST) && !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) {
        df__fpar_sleep(R);
        df__step_check_deadline(s);
    }
    __atomic_sub_fetch(&R->waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&R->mu);
    return __atomic_load_n(&R->done[q], __ATOMIC_ACQUIRE) && !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE);
}

static int df__fpar_claim(df__fpar *R, int v) {
    int zero = 0;
    return __atomic_compare_exchange_n(&R->claimed[v], &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Before claiming list u (whose item q this thread needs): a queued task takes some tens of
   microseconds to start on a sleeping thread, and taking its list would run the two lists one
   after the other, so wait up to 200 us for a thread to take it. 0: q ran meanwhile. */
static int df__fpar_patience(df__fpar *R, int u, int q) {
    double until = 0;
    for (int spin = 0;; spin++) {
        if (__atomic_load_n(&R->done[q], __ATOMIC_ACQUIRE)) return 0;
        if (__atomic_load_n(&R->claimed[u], __ATOMIC_ACQUIRE) || __atomic_load_n(&R->s->aborted, __ATOMIC_ACQUIRE)) return 1;
        if ((spin & 255) == 0) {
            double t = df__clock_ms();
            if (until == 0) until = t + 0.2;
            else if (t >= until) return 1;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* One thread's part of the run: list `first` if no thread holds it, then whatever it must or
   can claim (see above). */
static void df__fpar_run(df__fpar *R, int first) {
    int W = R->n_lists;
    uint64_t held = 0;
    __atomic_add_fetch(&R->running, 1, __ATOMIC_SEQ_CST);
    if (df__fpar_claim(R, first)) held = 1ull << first;
    else for (int v = 0; v < W && !held; v++) if (df__fpar_claim(R, v)) held = 1ull << v;
    if (held) {
        const df__fplan *p = R->p;
        df__step *s = R->s;
        const df__exec *x = s->x;
        df_tensor *small_out[16];
        df_tensor **io = x->max_outputs <= 16 ? small_out : (df_tensor **)DF_MALLOC((size_t)x->max_outputs * sizeof(df_tensor *));
        if (!io) df__step_error(s, &(df_status){DF_RESOURCE_EXHAUSTED, "Out of memory starting a run"});
        else memset(io, 0, (size_t)(io == small_out ? 16 : x->max_outputs) * sizeof *io);
        df__iter it;
        memset(&it, 0, sizeof it);
        it.entries = R->E;
        df__tagged t = {0, 0, &it};
        while (io && !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) {
            int v = -1, i = INT32_MAX;                /* the held list whose next item comes first */
            for (uint64_t m = held; m; m &= m - 1) {
                int u = __builtin_ctzll(m);
                if (R->pos[u] < p->lstart[u + 1] - p->lstart[u] && p->order[p->lstart[u] + R->pos[u]] < i) {
                    i = p->order[p->lstart[u] + R->pos[u]];
                    v = u;
                }
            }
            if (v < 0) {                              /* out of items: claim a list no thread holds */
                int got = 0;
                for (int u = 0; u < W && !got; u++) if (!(held >> u & 1) && df__fpar_claim(R, u)) { held |= 1ull << u; got = 1; }
                if (!got) break;
                continue;
            }
            int again = 0, ok = 1;
            for (int k = p->wstart[i]; k < p->wstart[i + 1] && ok && !again; k++) {
                int q = p->waits[k];
                if (__atomic_load_n(&R->done[q], __ATOMIC_ACQUIRE)) continue;
                int u = p->owner[q];
                if (held >> u & 1) {                  /* (cannot be: held lists run in index order) */
                    df__step_error(s, &(df_status){DF_INTERNAL, "A threaded flat schedule waits on itself"});
                    ok = 0;
                } else if (!df__fpar_patience(R, u, q)) {
                    continue;                         /* a thread took it and ran q meanwhile */
                } else if (df__fpar_claim(R, u)) {
                    held |= 1ull << u;                /* no thread had started it: ours now */
                    again = 1;
                } else ok = df__fpar_wait(R, q);
            }
            if (!ok) break;
            if (again) continue;
            R->pos[v]++;
            t.item = i;
            df__flat_item(s, &t, io, R->E);           /* (an abort ends the loop above) */
            __atomic_store_n(&R->done[i], 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&R->waiters, __ATOMIC_SEQ_CST)) df__fpar_wake(R);
        }
        if (io && io != small_out) DF_FREE(io);
        if (__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) df__fpar_wake(R);
    }
    if (__atomic_sub_fetch(&R->running, 1, __ATOMIC_SEQ_CST) == 0) df__fpar_wake(R);
}

/* A queued task of a flat run on threads (src/pool.c). */
DF_PRIVATE void df__fpar_task(df__fpar *R, int list) {
    df__fpar_run(R, list);
    df__fpar_unref(R);
}

static df_code df__execute_flat(df__step *s, df_status *st);

static df_code df__execute_flat_par(df__step *s, df_status *st) {
    const df__exec *x = s->x;
    const df__fplan *p = x->fplan;
    int W = p->n_lists, n = x->n_items;
    size_t n_slots = (size_t)x->frames[0].total_inputs;
    size_t bytes = sizeof(df__fpar) + n_slots * sizeof(df_tensor *) + (size_t)W * (sizeof(int32_t) + sizeof(int)) + (size_t)n + 16;
    df__fpar *R = (df__fpar *)DF_MALLOC(bytes);
    if (!R) return df__execute_flat(s, st);            /* on this thread alone */
    memset(R, 0, bytes);
    if (!s->home) s->home = s;
    R->s = s; R->p = p; R->n_lists = W;
    R->E = (df_tensor **)(R + 1);
    R->pos = (int32_t *)(R->E + n_slots);
    R->claimed = (int *)(R->pos + W);
    R->done = (uint8_t *)(R->claimed + W);
    pthread_mutex_init(&R->mu, NULL);
    pthread_cond_init(&R->cv, NULL);
    R->refs = 1;
    for (int v = 1; v < W; v++) {
        df__task task;
        memset(&task, 0, sizeof task);
        task.fpar = R;
        task.t.item = v;
        __atomic_add_fetch(&R->refs, 1, __ATOMIC_ACQ_REL);
        if (!df__pool_push(s->pool, &task)) __atomic_sub_fetch(&R->refs, 1, __ATOMIC_ACQ_REL);
    }
    df__fpar_run(R, 0);
    for (int v = 0; v < W; v++) df__fpar_claim(R, v);  /* (a task that starts now finds nothing) */
    if (__atomic_load_n(&R->running, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&R->mu);
        __atomic_add_fetch(&R->waiters, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&R->running, __ATOMIC_SEQ_CST)) df__fpar_sleep(R);
        __atomic_sub_fetch(&R->waiters, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&R->mu);
    }
    for (size_t k = 0; k < n_slots; k++) if (R->E[k]) df_tensor_release(R->E[k]);
    df__fpar_unref(R);
    df__step_free_stacks(s);
    s->done = 1;
    if (__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) { *st = s->status; return st->code; }
    return DF_OK;
}
#endif

/* Sets up a step's root frame and counts; the step is then `active` (its starter counts as a
   thread in it) until df__step_roots has run its roots. */
static df_code df__step_begin(df__step *s, df_status *st) {
    const df__exec *x = s->x;
    if (!s->home) s->home = s;
    s->free_iters = (df__iter **)DF_MALLOC((size_t)x->n_frames * sizeof(df__iter *));
    if (!s->free_iters) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a run");
    memset(s->free_iters, 0, (size_t)x->n_frames * sizeof(df__iter *));
    df__frame *root = s->root = df__frame_new(s, 0, NULL, NULL);
    if (!root) { DF_FREE(s->free_iters); s->free_iters = NULL; return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a run"); }
    s->outstanding = x->n_roots;
    root->ring[0]->outstanding_ops = x->n_roots;
#ifndef DF_NO_THREADS
    if (s->threaded) { pthread_mutex_init(&s->done_mu, NULL); pthread_cond_init(&s->done_cv, NULL); }
#endif
    if (x->n_roots == 0) s->done = 1;
    s->active = 1;
    s->statics = df__statics_on(s);
    if (x->has_async && s->threaded) s->shared = 1;   /* a queue's waker may resume a node at any time */
    return DF_OK;
}

/* Runs the roots inline in order; the first one's inline chain may already do most of the work. */
static void df__step_roots(df__step *s) {
    const df__exec *x = s->x;
    df__iter *it0 = s->root->ring[0];
    df__tagged *roots = (df__tagged *)DF_MALLOC((size_t)(x->n_roots + 1) * sizeof(df__tagged));
    if (!roots) {
        df__step_oom(s, "roots", 0);
        if (s->threaded) df__spin_lock(&s->lock);
        s->outstanding -= x->n_roots;
        int completed = s->outstanding == 0 && x->n_roots;
        if (s->threaded) df__spin_unlock(&s->lock);
        if (completed) df__step_finish(s);
    } else {
        for (int i = 0; i < x->n_roots; i++) { roots[i].item = x->roots[i]; roots[i].dead = 0; roots[i].iter = it0; }
        if (x->n_roots) df__process_batch(s, roots, x->n_roots, NULL, NULL);
        DF_FREE(roots);
    }
    df__step_task_done(s);
}

#ifndef DF_NO_THREADS
/* One round of waiting for a step: helps with the pool's tasks, else sleeps up to 200 us. An
   aborted step first takes its nodes off the queues they wait on. */
static void df__step_wait_once(df__step *s) {
    if (__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) { df__queue_abort_step(s); df__accums_abort_step(s); }
    df__task task;
    if (s->pool && df__pool_pop(s->pool, &task, 0)) { df__run_task(&task); return; }
    if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) { sched_yield(); return; }
    pthread_mutex_lock(&s->done_mu);
    if (!s->done) {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        ts.tv_nsec += 200000;
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        pthread_cond_timedwait(&s->done_cv, &s->done_mu, &ts);
    }
    pthread_mutex_unlock(&s->done_mu);
}
#endif
#ifndef DF_NO_THREADS
static int df__step_over(df__step *s) {
    return __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) && !__atomic_load_n(&s->active, __ATOMIC_ACQUIRE);
}
#endif

/* Frees the step's frames and (for the stacks' home) its stacks; returns its status. */
static df_code df__step_end(df__step *s, df_status *st) {
    const df__exec *x = s->x;
#ifndef DF_NO_THREADS
    if (s->threaded) { pthread_mutex_destroy(&s->done_mu); pthread_cond_destroy(&s->done_cv); }
#endif
    while (s->live) df__frame_destroy(s, s->live);
    for (int f = 0; s->free_iters && f < x->n_frames; f++)
        while (s->free_iters[f]) { df__iter *it = s->free_iters[f]; s->free_iters[f] = it->next_free; DF_FREE(it); }
    DF_FREE(s->free_iters);
    s->free_iters = NULL;
    df__step_free_stacks(s);
    if (s->aborted) { *st = s->status; return st->code; }
    if (!s->done) return df_status_set(st, DF_INTERNAL, "The run ended with work outstanding");
    return DF_OK;
}

/* Runs a compiled executor to completion on the calling thread (helped by the pool). */
DF_PRIVATE df_code df__execute(df__step *s, df_status *st) {
    if (s->x->flat && (!s->threaded || !s->x->flat_parallel) && df__statics_on(s)) {
        if (s->session) __atomic_add_fetch(&s->session->sched_stats[0], 1, __ATOMIC_RELAXED);
        return df__execute_flat(s, st);
    }
#ifndef DF_NO_THREADS
    if (s->x->flat && s->x->fplan && s->pool && df__statics_on(s)) {
        if (s->session) __atomic_add_fetch(&s->session->sched_stats[3], 1, __ATOMIC_RELAXED);
        return df__execute_flat_par(s, st);
    }
#endif
    if (df__step_begin(s, st) != DF_OK) return st->code;
    df__step_roots(s);
#ifndef DF_NO_THREADS
    if (s->threaded)
        while (!df__step_over(s)) {                         /* the end, and every thread out of it */
            df__step_wait_once(s);
            df__step_check_deadline(s);
        }
#endif
    return df__step_end(s, st);
}

/* Runs the partitions of one run together: every step's roots on this thread, then waits for
   all of them, helping the pool. A run where no thread holds work for any partition while some
   partition still waits (a Recv no Send will ever match) is a bug; it ends with an error rather
   than hanging. */
#ifndef DF_NO_THREADS
static int df__group_idle(df__pgroup *g) {
    if (__atomic_load_n(&g->pending_wakes, __ATOMIC_ACQUIRE)) return 0;
    for (int i = 0; i < g->n_steps; i++)
        if (__atomic_load_n(&g->steps[i].active, __ATOMIC_ACQUIRE)) return 0;
    for (int i = 0; i < g->n_steps; i++)
        if (!__atomic_load_n(&g->steps[i].done, __ATOMIC_ACQUIRE)) return 1;
    return 0;
}
#endif
static void df__group_hang(df__pgroup *g) {
    df_status why;
    const char *waiting = "?";
    for (int i = 0; i < g->n_steps; i++)
        if (!__atomic_load_n(&g->steps[i].done, __ATOMIC_ACQUIRE)) { waiting = g->steps[i].device->name; break; }
    /* what the rendezvous holds: a Recv that waits, a value sent that no Recv took */
    char recv[300] = "", sent[300] = "";
    df__spin_lock(&g->rv.lock);
    for (int b = 0; b < g->rv.n_buckets; b++)
        for (const df__rv_entry *e = g->rv.buckets[b]; e; e = e->next) {
            const df__rv_msg *m = e->head;
            if (!m) continue;
            if (e->recvs && !recv[0] && m->step)
                snprintf(recv, sizeof recv, ": its Recv '%s' waits (iteration %lld)", df__item_name(m->step->x, m->tag.item),
                         (long long)e->iter);
            else if (!e->recvs && !sent[0])
                snprintf(sent, sizeof sent, "; a value sent in iteration %lld (key %d) was never received", (long long)e->iter,
                         (int)e->key);
        }
    df__spin_unlock(&g->rv.lock);
    df_status_set(&why, DF_INTERNAL, "The partitions of this run stopped making progress: the partition on %s "
                  "waits for a value that no other partition will send%s%s", waiting, recv, sent);
    df__group_abort(g, &why);
}
DF_PRIVATE df_code df__group_execute(df__pgroup *g, df_status *st) {
    df_code code = DF_OK;
    int begun = 0;
    for (; begun < g->n_steps; begun++) {
        df_status local;
        if (df__step_begin(&g->steps[begun], &local) != DF_OK) { df__group_abort(g, &local); break; }
    }
    if (begun == g->n_steps)
        for (int i = 0; i < g->n_steps; i++) df__step_roots(&g->steps[i]);
    else
        for (int i = 0; i < begun; i++) {        /* nothing ran: take the roots back */
            g->steps[i].outstanding = 0; g->steps[i].done = 1; df__step_task_done(&g->steps[i]);
        }
#ifndef DF_NO_THREADS
    if (begun == g->n_steps && g->steps[0].threaded) {
        uint64_t seen = 0;
        struct timespec idle_since = {0, 0};
        for (int i = 0; i < g->n_steps; i++)
            while (!df__step_over(&g->steps[i])) {
                df__step_wait_once(&g->steps[i]);
                df__step_check_deadline(&g->steps[i]);
                uint64_t now_progress = __atomic_load_n(&g->progress, __ATOMIC_ACQUIRE);
                if (!df__group_idle(g) || now_progress != seen) { seen = now_progress; idle_since.tv_sec = 0; continue; }
                struct timespec now;
                timespec_get(&now, TIME_UTC);
                if (!idle_since.tv_sec) { idle_since = now; continue; }
                double waited = (double)(now.tv_sec - idle_since.tv_sec) + 1e-9 * (double)(now.tv_nsec - idle_since.tv_nsec);
                if (waited > 0.25 && !g->remote && df__group_idle(g) && __atomic_load_n(&g->progress, __ATOMIC_ACQUIRE) == seen) {
                    if (!__atomic_load_n(&g->aborted, __ATOMIC_ACQUIRE)) df__group_hang(g);   /* (a worker's step waits for other processes: no hang check) */
                    else if (waited > 1.25)
                        /* Aborted, and still nothing runs, nothing is queued and nothing will
                           wake: a step whose count of outstanding work went wrong. No thread
                           holds it, so it is ended here rather than waited for forever. */
                        for (int k = 0; k < g->n_steps; k++) __atomic_store_n(&g->steps[k].done, 1, __ATOMIC_RELEASE);
                }
            }
    }
#endif
    if (begun == g->n_steps && !g->steps[0].threaded && !g->remote)
        for (int i = 0; i < g->n_steps; i++)       /* one thread did everything it could */
            if (!g->steps[i].done) { df__group_hang(g); break; }
    for (int i = 0; i < begun; i++) {
        df_status local;
        df_status_clear(&local);
        if (&g->steps[i] != g->steps[i].home) df__step_end(&g->steps[i], &local);
        if (local.code && !code) { *st = local; code = local.code; }
    }
    for (int i = 0; i < begun; i++) {
        df_status local;
        df_status_clear(&local);
        if (&g->steps[i] == g->steps[i].home) df__step_end(&g->steps[i], &local);
        if (local.code && !code) { *st = local; code = local.code; }
    }
    if (g->aborted) { *st = g->status; code = st->code; }
    return code;
}
