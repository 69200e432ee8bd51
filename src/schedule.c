/* ==========================================================================================
   src/schedule.c: Static schedules                                                  >>schedule
   The tagged executor (src/executor.c) pays, for every node of every iteration, a pending
   count, a ready queue and a tagged lookup. Much of what it runs needs none of that: the
   order is fixed when the graph is compiled. This file finds two such shapes; the executor
   runs them from the order found here (the items are numbered in a topological order, so
   "index order" is one).

   A flat graph: one frame, no Switch, Merge, Send, Recv or op that may wait. No value can be
   dead in it, so every item runs once, in index order, reading its inputs from one array and
   writing its outputs into its consumers' slots (df__execute_flat). Where two items worth a
   thread of their own (DF__XF_EXPENSIVE) may run at the same time, a run with threads follows
   a plan made here (df__sched_plan): the items split into one list per thread, each run in
   index order (df__execute_flat_par); a plan not worth its hand-offs leaves the graph on one
   thread.

   A static loop: a while loop frame in TensorFlow's shape, with nothing in its body that
   needs the tagged executor:
     - no loop nested in it, no Send, Recv or op that may wait, no ControlTrigger;
     - each Merge reads one non-constant Enter and one NextIteration, and no control input;
     - each Switch reads the frame's one LoopCond as its predicate;
     - non-constant Enters feed only those Merges.
   Then what is dead in an iteration follows from the predicate alone: an item that reads the
   true side of a Switch (directly or not) runs when the predicate is true (the body), one
   that reads the false side when it is false (the Exits), one that reads neither in every
   iteration (the predicate's own computation), one that reads both never. The executor runs
   such a loop as one item of its parent frame (DF__X_LOOP, kept after the n_items items)
   once every Enter has its value: iteration after iteration of the items in index order,
   the loop's invariants placed anew in each, until the predicate is false. A dead Enter value
   (a loop inside an untaken cond branch) sends the frame back to the tagged executor. A run
   with threads keeps the tagged executor for a loop whose iteration holds items that could
   overlap on threads by an estimated 5 us or more: there it overlaps them. The Merges run
   first in each iteration, forwards that pass one value on are elided, and invariants and
   Consts read by kernels are lent without a reference of their own (see the functions).

   Waiting for every Enter could deadlock where a value entering the loop depends on what the
   loop does: an Exit that reaches an Enter of its own frame (a graph made by hand), an Enter
   fed through a Recv (another partition may wait on this loop) or by an op that may wait (a
   dequeue or an accumulator's take that an enqueue, close or apply in the body would end).
   Such loops keep the tagged executor, as does a frame without a NextIteration (the tagged
   executor ends it after one iteration) and one whose LoopCount reads anything but its
   LoopCond.

   df_session_options.dynamic_only, or DF_STATIC_SCHEDULES=0 in the environment, turns both
   off: every test runs both ways.
   ========================================================================================== */

/* DF_STATIC_SCHEDULES=0 in the environment: every run uses the tagged executor. */
DF_PRIVATE int df__static_schedules_env(void) {
    static int v = -1;
    int r = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (r < 0) {
        const char *e = getenv("DF_STATIC_SCHEDULES");
        r = !(e && (!strcmp(e, "0") || !strcmp(e, "off") || !strcmp(e, "no")));
        __atomic_store_n(&v, r, __ATOMIC_RELAXED);
    }
    return r;
}

DF_PRIVATE void df__schedule_free(df__exec *x) {
    if (x->fplan) {
        df__fplan *p = x->fplan;
        DF_FREE(p->lstart); DF_FREE(p->order); DF_FREE(p->owner); DF_FREE(p->wstart); DF_FREE(p->waits); DF_FREE(p);
        x->fplan = NULL;
    }
    for (int f = 0; f < x->n_frames; f++) {
        df__sloop *p = x->frames[f].sloop;
        if (!p) continue;
        DF_FREE(p->steps); DF_FREE(p->routes); DF_FREE(p->iroutes); DF_FREE(p);
        x->frames[f].sloop = NULL;
    }
}

/* Whether item b can be reached from item a (a < b) along out-edges, visiting only items
   numbered at most b (the numbering is topological). `stamp`/`mark` avoid clearing `seen`;
   `stack` holds n_items; *budget counts the items visited and stops the search at 0 (-1). */
static int df__sched_reaches(const df__exec *x, int a, int b, int32_t *seen, int32_t mark, int32_t *stack, int64_t *budget) {
    int sp = 0;
    stack[sp++] = a;
    seen[a] = mark;
    while (sp) {
        int i = stack[--sp];
        if (--*budget < 0) return -1;
        const df__xitem *it = &x->items[i];
        if (it->kind == DF__X_NEXT) continue;                /* (back edges: not in the order) */
        for (int e = 0; e < it->n_edges; e++) {
            int d = x->edges[it->edge_start + e].dst;
            if (d == b) return 1;
            if (d > b || seen[d] == mark) continue;
            seen[d] = mark;
            stack[sp++] = d;
        }
    }
    return 0;
}

/* A flat graph: one frame, nothing that can make a value dead or make an item wait. Then
   whether its expensive items are totally ordered (each reaches the next). */
static void df__sched_flat(df__exec *x, int32_t *seen, int32_t *stack) {
    if (x->n_frames != 1 || x->n_items == 0) return;
    for (int i = 0; i < x->n_items; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_NORMAL && it->kind != DF__X_FEED && it->kind != DF__X_FETCH) return;
        if (it->flags & (DF__XF_SWITCH | DF__XF_TRANSFER | DF__XF_ASYNC | DF__XF_LOOP_COND)) return;
    }
    x->flat = 1;
    int64_t budget = 8 * ((int64_t)x->n_items + x->n_edges) + 1024;
    int prev = -1;
    for (int i = 0; i < x->n_items; i++) {
        if (!(x->items[i].flags & DF__XF_EXPENSIVE)) continue;
        if (prev >= 0 && df__sched_reaches(x, prev, i, seen, prev + 1, stack, &budget) != 1) { x->flat_parallel = 1; return; }
        prev = i;
    }
}

/* ---- plans for threads ----
   An item's expected time, in nanoseconds, from what the graph knows of its inputs' shapes: a
   plumbing item a few, a cheap kernel a call, an expensive one (DF__XF_EXPENSIVE) its work
   (a MatMul at about 64 multiply-adds per ns, an elementwise op at 32 elements per ns times its
   cost); an unknown shape counts as a big one (the tagged executor would give it a thread). */
static double df__sched_cost(const df__xitem *it) {
    if (it->kind != DF__X_NORMAL) return 5;
    if (it->flags & DF__XF_NO_KERNEL) return 2;
    if (!(it->flags & DF__XF_EXPENSIVE)) return 40;
    const df_node *n = it->node;
    double work = 0;
    if ((it->flags & DF__XF_MATMUL) && n->n_inputs >= 2 && n->n_outputs >= 1) {
        /* (m*k)(k*n)(m*n) = (mkn)^2, whichever inputs are transposed */
        int64_t a = df__shape_count(&n->inputs[0].node->out_shapes[n->inputs[0].index]);
        int64_t b = df__shape_count(&n->inputs[1].node->out_shapes[n->inputs[1].index]);
        int64_t c = df__shape_count(&n->out_shapes[0]);
        if (a < 0 || b < 0 || c < 0) return 1e6;
        work = sqrt((double)a * (double)b * (double)c) / 64.0;
    } else {
        for (int k = 0; k < n->n_inputs; k++) {
            int64_t c = df__shape_count(&n->inputs[k].node->out_shapes[n->inputs[k].index]);
            if (c < 0) return 1e6;
            work += (double)c;
        }
        work *= DF__MAX(it->cost, 1) / 32.0;
    }
    return 40 + work;
}

/* List scheduling of frame f's items (in index order, the back edges of NextIterations left
   out) onto W threads: each item to the thread where it would end first given its inputs' ends,
   a value from another thread costing DF__SCHED_WAKE_NS and every thread but the first starting
   start_ns late. Returns the expected length (*serial: the sum of the items), and each item's
   thread in owner[] (per item; others untouched); -1 out of memory. */
#define DF__SCHED_WAKE_NS 1000.0
static double df__sched_lists(const df__exec *x, int f, int W, double start_ns, uint8_t *owner, double *serial) {
    int n = x->n_items;
    size_t un = (size_t)(unsigned)n;
    double *fin = (double *)DF_MALLOC((un + 1) * sizeof(double)), avail[16];
    int32_t *pstart = (int32_t *)DF_MALLOC((un + 2) * sizeof(int32_t));
    int32_t *preds = (int32_t *)DF_MALLOC(((size_t)x->n_edges + 1) * sizeof(int32_t));
    if (!fin || !pstart || !preds) { DF_FREE(fin); DF_FREE(pstart); DF_FREE(preds); return -1; }
#define DF__SCHED_IN(i) (x->items[i].frame == f && x->items[i].kind != DF__X_COUNT && x->items[i].kind != DF__X_NEXT)
    for (int i = 0; i <= n; i++) pstart[i] = 0;
    for (int i = 0; i < n; i++)
        for (int e = 0; DF__SCHED_IN(i) && e < x->items[i].n_edges; e++) {
            int d = x->edges[x->items[i].edge_start + e].dst;
            if (d < n && DF__SCHED_IN(d)) pstart[d + 1]++;
        }
    for (int i = 0; i < n; i++) pstart[i + 1] += pstart[i];
    for (int i = 0; i < n; i++)
        for (int e = 0; DF__SCHED_IN(i) && e < x->items[i].n_edges; e++) {
            int d = x->edges[x->items[i].edge_start + e].dst;
            if (d < n && DF__SCHED_IN(d)) preds[pstart[d]++] = i;
        }
    for (int i = n; i > 0; i--) pstart[i] = pstart[i - 1];
    pstart[0] = 0;
    double span = 0;
    *serial = 0;
    for (int v = 0; v < W; v++) avail[v] = v ? start_ns : 0;
    for (int i = 0; i < n; i++) {
        if (!DF__SCHED_IN(i)) continue;
        double c = df__sched_cost(&x->items[i]), best_end = 0, near_end = -1;
        int best = 0, near = -1;
        for (int k = pstart[i]; k < pstart[i + 1]; k++)
            if (fin[preds[k]] > near_end) { near_end = fin[preds[k]]; near = owner[preds[k]]; }
        for (int v = 0; v < W; v++) {
            double ready = avail[v];
            for (int k = pstart[i]; k < pstart[i + 1]; k++) {
                double r = fin[preds[k]] + (owner[preds[k]] == v ? 0 : DF__SCHED_WAKE_NS);
                if (r > ready) ready = r;
            }
            double end = ready + c;
            if (v == 0 || end < best_end || (end == best_end && v == near)) { best_end = end; best = v; }
        }
        owner[i] = (uint8_t)best;
        fin[i] = avail[best] = best_end;
        *serial += c;
        if (best_end > span) span = best_end;
    }
#undef DF__SCHED_IN
    DF_FREE(fin); DF_FREE(pstart); DF_FREE(preds);
    return span;
}

/* Splits a flat graph whose expensive items may overlap into lists for n threads (above; a
   queued task takes tens of microseconds to start on a sleeping thread). Worth it when the
   plan's expected length is well under the sum of its items; else the graph runs on one thread
   (flat_parallel cleared). Out of memory leaves fplan NULL: the tagged executor runs it. */
static void df__sched_plan(df__exec *x, int n_threads) {
    int n = x->n_items, W = DF__MIN(n_threads, 16);
    if (W < 2 || n < 2) { x->flat_parallel = 0; return; }
    size_t un = (size_t)(unsigned)n;
    int32_t last[16];
    double serial = 0;
    df__fplan *p = (df__fplan *)DF_MALLOC(sizeof *p);
    if (p) memset(p, 0, sizeof *p);
    if (!p) return;
    p->n_lists = W;
    p->lstart = (int32_t *)DF_MALLOC((size_t)(W + 1) * sizeof(int32_t));
    p->order = (int32_t *)DF_MALLOC(un * sizeof(int32_t));
    p->owner = (uint8_t *)DF_MALLOC(un);
    p->wstart = (int32_t *)DF_MALLOC((un + 1) * sizeof(int32_t));
    if (!p->lstart || !p->order || !p->owner || !p->wstart) goto out;
    double span = df__sched_lists(x, 0, W, 20000.0, p->owner, &serial);
    if (span < 0) goto out;
    if (span * 1.25 > serial) {                       /* not worth a thread: one runs it */
        x->flat_parallel = 0;
        goto out;
    }
    /* the waits: per item and other list, the last item of that list it reads */
    int32_t *lastw = (int32_t *)DF_MALLOC(un * (size_t)W * sizeof(int32_t));
    if (!lastw) goto out;
    for (size_t k = 0; k < un * (size_t)W; k++) lastw[k] = -1;
    int64_t n_waits = 0;
    for (int i = 0; i < n; i++)
        for (int e = 0; e < x->items[i].n_edges; e++) {
            int d = x->edges[x->items[i].edge_start + e].dst, v = p->owner[i];
            if (d >= n || v == p->owner[d]) continue;
            int32_t *l = &lastw[(size_t)d * (size_t)W + (size_t)v];
            if (*l < 0) n_waits++;
            if (i > *l) *l = i;
        }
    p->waits = (int32_t *)DF_MALLOC((size_t)(n_waits + 1) * sizeof(int32_t));
    if (!p->waits) { DF_FREE(lastw); goto out; }
    int64_t w = 0;
    for (int i = 0; i < n; i++) {
        p->wstart[i] = (int32_t)w;
        for (int v = 0; v < W; v++) if (lastw[(size_t)i * (size_t)W + (size_t)v] >= 0) p->waits[w++] = lastw[(size_t)i * (size_t)W + (size_t)v];
    }
    p->wstart[n] = (int32_t)w;
    DF_FREE(lastw);
    for (int v = 0; v <= W; v++) p->lstart[v] = 0;
    for (int i = 0; i < n; i++) p->lstart[p->owner[i] + 1]++;
    for (int v = 0; v < W; v++) p->lstart[v + 1] += p->lstart[v];
    for (int v = 0; v < W; v++) last[v] = p->lstart[v];
    for (int i = 0; i < n; i++) p->order[last[p->owner[i]]++] = i;
    x->fplan = p;
    p = NULL;
out:
    if (p) { DF_FREE(p->lstart); DF_FREE(p->order); DF_FREE(p->owner); DF_FREE(p->wstart); DF_FREE(p->waits); DF_FREE(p); }
}

/* The per-item scratch of the loop analysis. */
typedef struct df__sched_scratch {
    int32_t *in_src;             /* per item input slot (ioff[i] + k): the producing item, -1 none */
    int64_t *ioff;
    uint8_t *cls;                /* per item: DF__SC_* within its frame */
    uint8_t *anc;                /* a Recv (or an op that may wait) before it */
    int32_t *seen, *stack;
    int32_t mark;                /* the latest search's mark in seen */
} df__sched_scratch;

/* Whether frame f can run from a static schedule (see the banner). */
static int df__sched_loop_ok(const df__exec *x, int f, df__sched_scratch *S) {
    const df__sframe *sf = &x->frames[f];
    if (sf->n_loop_conds != 1) return 0;
    for (int g = 1; g < x->n_frames; g++) if (x->frames[g].parent == f) return 0;   /* a nested loop */
    int n = x->n_items, enters_anc = 0, min_exit = n, max_enter = -1, n_next = 0;
    for (int i = 0; i < n; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind == DF__X_ENTER && it->child_frame == f) {
            enters_anc |= S->anc[i];
            max_enter = DF__MAX(max_enter, i);
            if (it->flags & DF__XF_CONST_ENTER) continue;
            for (int e = 0; e < it->n_edges; e++) {             /* non-constant: into Merges only */
                const df__xedge *ed = &x->edges[it->edge_start + e];
                if (ed->slot < 0 || x->items[ed->dst].kind != DF__X_MERGE) return 0;
            }
            continue;
        }
        if (it->frame != f) continue;
        if (it->flags & (DF__XF_ASYNC | DF__XF_TRANSFER | DF__XF_CTRL_TRIGGER)) return 0;
        if (it->kind == DF__X_FEED || it->kind == DF__X_FETCH) return 0;
        uint8_t c = S->cls[i];
        const int32_t *src = S->in_src + S->ioff[i];
        if (it->kind == DF__X_EXIT || it->kind == DF__X_COUNT) {
            if (it->kind == DF__X_EXIT && c != DF__SC_EXIT && c != DF__SC_NEVER) return 0;
            /* a LoopCount counts the iterations the LoopCond saw: it must read that LoopCond */
            if (it->kind == DF__X_COUNT && (it->n_inputs != 1 || src[0] < 0 || !(x->items[src[0]].flags & DF__XF_LOOP_COND)))
                return 0;
            min_exit = DF__MIN(min_exit, i);
        }
        if (it->kind == DF__X_NEXT && c != DF__SC_BODY) return 0;
        if (it->kind == DF__X_NEXT) n_next++;
        if ((it->flags & DF__XF_LOOP_COND) && c != DF__SC_ALWAYS) return 0;
        if (it->kind == DF__X_MERGE) {
            if (it->n_inputs != 2 || it->n_control_in != 0 || src[0] < 0 || src[1] < 0) return 0;
            const df__xitem *a = &x->items[src[0]], *b = &x->items[src[1]];
            if (a->kind == DF__X_NEXT) { const df__xitem *t = a; a = b; b = t; }
            if (a->kind != DF__X_ENTER || a->child_frame != f || (a->flags & DF__XF_CONST_ENTER)) return 0;
            if (b->kind != DF__X_NEXT || b->frame != f) return 0;
        }
        if (it->flags & DF__XF_SWITCH) {
            if (it->n_inputs != 2 || it->n_outputs != 2 || src[1] < 0) return 0;
            const df__xitem *p = &x->items[src[1]];
            if (!(p->flags & DF__XF_LOOP_COND) || p->frame != f) return 0;
        }
    }
    /* Without a NextIteration nothing carries a value into the next iteration: the tagged
       executor ends the frame after one, a loop of iterations would not end. */
    if (n_next == 0) return 0;
    /* A value entering through a Recv or from an op that may wait (a dequeue, an accumulator's
       take) may wait on what the loop itself does (its Exits, or an apply or close in its body,
       here or in another partition): the tagged executor starts iterating before that Enter. */
    if (enters_anc) return 0;
    if (max_enter > min_exit) {                    /* may an Exit (or LoopCount) reach an Enter? */
        int64_t budget = 8 * ((int64_t)n + x->n_edges) + 1024;
        for (int i = min_exit; i < n; i++) {
            const df__xitem *it = &x->items[i];
            if (it->frame != f || (it->kind != DF__X_EXIT && it->kind != DF__X_COUNT)) continue;
            for (int j = i + 1; j <= max_enter; j++) {
                const df__xitem *e = &x->items[j];
                if (e->kind != DF__X_ENTER || e->child_frame != f) continue;
                if (df__sched_reaches(x, i, j, S->seen, ++S->mark, S->stack, &budget) != 0) return 0;
            }
        }
    }
    return 1;
}

/* Fills the scratch: input sources, frame-local classes, and the Recv reach bits. */
static void df__sched_fill(const df__exec *x, df__sched_scratch *S) {
    int n = x->n_items;
    for (int i = 0; i < n; i++) {
        const df__xitem *it = &x->items[i];
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot < 0) continue;
            const df__xitem *d = &x->items[ed->dst];
            int k = (ed->flags & DF__XE_COUNT) ? ed->slot : ed->slot - d->input_start;   /* (a LoopCount's
                                                                            slots stay local) */
            if (k < 0 || k >= d->n_inputs) continue;
            S->in_src[S->ioff[ed->dst] + k] = i;
        }
    }
    for (int i = 0; i < n; i++) S->anc[i] |= (x->items[i].flags & (DF__XF_TRANSFER | DF__XF_ASYNC)) ? 1 : 0;
    for (int i = 0; i < n; i++) {                   /* forward: classes within a frame; Recvs before */
        const df__xitem *it = &x->items[i];
        if (it->kind == DF__X_NEXT) continue;
        int loop_switch = (it->flags & DF__XF_SWITCH) && it->n_inputs == 2;
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->dst <= i) continue;
            S->anc[ed->dst] |= S->anc[i];
            if (x->items[ed->dst].frame != it->frame || it->kind == DF__X_EXIT || (ed->flags & DF__XE_COUNT)) continue;
            uint8_t c = S->cls[i];
            if (loop_switch && ed->slot >= 0) c |= ed->src_out == 0 ? DF__SC_EXIT : DF__SC_BODY;
            S->cls[ed->dst] |= c;
        }
    }
}

/* What a loop does itself for its plumbing (the kernel's work without its call): forwarding a
   value (Identity, Exit, NextIteration), the predicate (LoopCond, whose input must be a scalar
   bool: else the kernel runs, for its message), Switch and Merge (without value_index), Const.
   Never for a reference input (DF__XF_DEREF: the kernel path reads the variable). */
static uint8_t df__sched_inline_op(const df__xitem *it, df_tensor **cval) {
    if (!it->node || (it->flags & DF__XF_DEREF)) return DF__SO_KERNEL;
    const char *op = it->node->op->name;
    if (it->kernel == df__k_identity && it->n_inputs == 1 && it->n_outputs == 1 &&
        (!strcmp(op, "Identity") || !strcmp(op, "Exit") || !strcmp(op, "NextIteration"))) return DF__SO_FORWARD;
    if (it->kernel == df__k_loop_cond && it->n_inputs == 1 && !strcmp(op, "LoopCond")) return DF__SO_COND;
    if (it->kernel == df__k_switch && it->n_inputs == 2 && it->n_outputs == 2 && !strcmp(op, "Switch")) return DF__SO_SWITCH;
    if (it->kernel == df__k_merge && it->n_inputs == 2 && !(it->need & 2) && !strcmp(op, "Merge")) return DF__SO_MERGE;
    if (it->kernel == df__k_const && it->n_inputs == 0 && !strcmp(op, "Const")) {
        const df__attr *a = df__node_attr(it->node, "value");
        if (a && a->u.tensor && a->u.tensor->dtype == it->node->out_types[0]) { *cval = a->u.tensor; return DF__SO_CONST; }
    }
    return DF__SO_KERNEL;
}

/* An Identity or NextIteration that passes its one input on to one slot (fwd_slot) leaves the
   schedule: the route that fed it writes that slot itself. Only where the step would run
   whenever the route carries a value (the same side of the Switches as its producer, every
   iteration, or the side of the Switch output it reads), so no value reaches a slot on a side
   not taken. The producer runs first, and the slot's reader after the step (or, for a
   NextIteration's Merge, in the next iteration: the Merges run first in each iteration, see
   df__sched_make_loop), so the value arrives no later than it did and no earlier than its
   reader has taken the last one. */
static void df__sched_elide_forwards(const df__exec *x, df__sloop *p) {
    int kept = 0;
    for (int k = 0; k < p->n; k++) {
        df__sstep *F = &p->steps[k];
        int r = -1, owner = -1, found = 0;
        if (F->fwd_slot >= 0 && F->n_in == 1 && F->cls != DF__SC_NEVER && F->exit < 0)
            for (int j = 0; j < kept; j++)        /* (steps before it, elided ones gone) */
                for (int q = p->steps[j].route; q < p->steps[j].route + p->steps[j].n_route; q++)
                    if (p->routes[q].slot == F->in_start) { r = q; owner = j; found++; }
        if (found == 1) {
            const df__sstep *P = &p->steps[owner];
            int side = x->items[P->item].flags & DF__XF_SWITCH ?
                       (p->routes[r].src_out == 1 ? DF__SC_BODY : DF__SC_EXIT) : -1;
            if (F->cls == DF__SC_ALWAYS || F->cls == P->cls || F->cls == side) {
                p->routes[r].slot = F->fwd_slot;
                continue;
            }
        }
        p->steps[kept++] = *F;
    }
    p->n = kept;
    for (int k = 0; k < p->n; k++) {           /* what the runner reads */
        df__sstep *F = &p->steps[k];
        static const uint8_t runs[4] = {7, 2, 4, 0};
        F->runs = runs[F->cls & 3];
        /* (from its routes as they are now: a kept forward's route may lead past one elided) */
        F->fwd_slot = F->op == DF__SO_FORWARD && F->n_route == 1 && p->routes[F->route].last &&
                      p->routes[F->route].src_out == 0 ? p->routes[F->route].slot : -1;
        if (F->fwd_slot >= 0) F->op = DF__SO_MOVE;
        int made = F->op == DF__SO_SWITCH ? 2 : F->op == DF__SO_KERNEL ? F->n_out : 1;
        F->slot1 = F->n_route == 1 && made == 1 && F->exit < 0 && p->routes[F->route].last &&
                   p->routes[F->route].src_out == 0 ? p->routes[F->route].slot : -1;
    }
}

/* Borrowed values: an invariant, or a Const's value, read by a plain kernel step goes into its
   slot without a reference of its own in every iteration; the loop holds one reference for its
   whole run, so the count stays above one and no kernel reuses the buffer in place, and the
   step never releases the slot (a kernel that passes the input on gets a reference then). Saves
   two atomic operations per read per iteration. Returns 0 out of memory. */
static int df__sched_borrow(const df__exec *x, int f, df__sloop *p) {
    int n_slots = x->frames[f].total_inputs;
    uint8_t *ok = (uint8_t *)DF_MALLOC((size_t)n_slots + 1);
    if (!ok) return 0;
    memset(ok, 0, (size_t)n_slots + 1);
    for (int k = 0; k < p->n; k++) {          /* slots a plain kernel reads */
        const df__sstep *sp = &p->steps[k];
        if (sp->op != DF__SO_KERNEL || sp->general) continue;
        for (int j = 0; j < sp->n_in && j < 32; j++) if (sp->in_start + j < n_slots) ok[sp->in_start + j] = 1;
    }
    int n_ir = 0;
    for (int i = 0; i < x->n_items; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_ENTER || it->child_frame != f || !(it->flags & DF__XF_CONST_ENTER)) continue;
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot >= 0 && !(ed->flags & DF__XE_COUNT)) n_ir++;
        }
    }
    p->iroutes = (df__siroute *)DF_MALLOC((size_t)(n_ir + 1) * sizeof(df__siroute));
    if (!p->iroutes) { DF_FREE(ok); return 0; }
    for (int i = 0; i < x->n_items; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_ENTER || it->child_frame != f || !(it->flags & DF__XF_CONST_ENTER)) continue;
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot < 0 || (ed->flags & DF__XE_COUNT)) continue;
            df__siroute *r = &p->iroutes[p->n_iroutes++];
            r->item = i;
            r->slot = ed->slot;
            r->borrow = ed->slot < n_slots && ok[ed->slot];
            if (r->borrow) ok[ed->slot] = 2;      /* (2: borrowed) */
        }
    }
    for (int k = 0; k < p->n; k++) {
        df__sstep *sp = &p->steps[k];
        if (sp->op != DF__SO_CONST || !sp->n_route) continue;
        int all = 1;
        for (int r = sp->route; r < sp->route + sp->n_route; r++)
            all &= p->routes[r].src_out == 0 && p->routes[r].slot < n_slots && ok[p->routes[r].slot] == 1;
        if (!all) continue;
        sp->borrowc = 1;
        for (int r = sp->route; r < sp->route + sp->n_route; r++) ok[p->routes[r].slot] = 2;
    }
    for (int k = 0; k < p->n; k++) {
        df__sstep *sp = &p->steps[k];
        if (sp->op != DF__SO_KERNEL || sp->general) continue;
        for (int j = 0; j < sp->n_in && j < 32; j++)
            if (sp->in_start + j < n_slots && ok[sp->in_start + j] == 2) sp->borrow |= 1u << j;
    }
    DF_FREE(ok);
    return 1;
}

/* Gives frame f its schedule and its DF__X_LOOP item (at x->items[n_items + x->n_loops]). */
static int df__sched_make_loop(df__exec *x, int f, const df__sched_scratch *S, int n_threads) {
    df__sframe *sf = &x->frames[f];
    df__sloop *p = (df__sloop *)DF_MALLOC(sizeof *p);
    if (!p) return 0;
    memset(p, 0, sizeof *p);
    int cnt = 0, nr = 0;
    for (int i = 0; i < x->n_items; i++) {
        const df__xitem *it = &x->items[i];
        if (it->frame != f || it->kind == DF__X_COUNT) continue;
        cnt++;
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot >= 0 && !(ed->flags & DF__XE_COUNT)) nr++;
        }
    }
    p->steps = (df__sstep *)DF_MALLOC((size_t)(cnt + 1) * sizeof(df__sstep));
    p->routes = (df__sroute *)DF_MALLOC((size_t)(nr + 1) * sizeof(df__sroute));
    if (!p->steps || !p->routes) { DF_FREE(p->steps); DF_FREE(p->routes); DF_FREE(p); return 0; }
    const df_node *cond = NULL;
    int at = 0;
    for (int i = 0; i < x->n_items; i++) {
        const df__xitem *it = &x->items[i];
        if (it->frame != f || it->kind == DF__X_COUNT) continue;
        if (it->flags & DF__XF_LOOP_COND) cond = it->node;
        df__sstep *k = &p->steps[p->n++];
        memset(k, 0, sizeof *k);
        k->item = i;
        k->in_start = it->input_start;
        k->n_in = it->n_inputs;
        k->n_out = it->n_outputs;
        k->cls = S->cls[i];
        k->op = df__sched_inline_op(it, &k->cval);
        /* (a Switch or Merge kernel leaves outputs dead: df__run_item checks them so) */
        k->general = (it->flags & (DF__XF_DEREF | DF__XF_SWITCH)) || it->kind == DF__X_MERGE ? 1 : 0;
        k->exit = it->kind == DF__X_EXIT ? it->aux : -1;
        k->route = at;
        k->fwd_slot = -1;
        k->post = (uint8_t)(((it->flags & DF__XF_LOOP_COND) ? DF__SP_COND : 0) | (k->exit >= 0 ? DF__SP_EXIT : 0) |
                            (k->op == DF__SO_FORWARD || k->op == DF__SO_CONST ? 0 : DF__SP_KERNEL));
        if (it->kind == DF__X_EXIT) continue;        /* (its edges lead out of the loop) */
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot < 0 || (ed->flags & DF__XE_COUNT)) continue;
            p->routes[at].slot = ed->slot;
            p->routes[at].src_out = ed->src_out;
            p->routes[at++].last = (ed->flags & DF__XE_LAST) ? 1 : 0;
        }
        k->n_route = at - k->route;
        k->fwd_slot = k->op == DF__SO_FORWARD && k->n_route == 1 && p->routes[k->route].last &&
                      p->routes[k->route].src_out == 0 ? p->routes[k->route].slot : -1;
        /* outputs it makes: the inline ops one (a Switch two), a kernel any of them */
        int made = k->op == DF__SO_KERNEL ? k->n_out : k->op == DF__SO_SWITCH ? 2 : 1;
        k->clean = made <= 64;
        for (int o = 0; o < made && k->clean; o++) {
            int taken = 0;
            for (int r = k->route; r < at; r++) taken |= p->routes[r].src_out == o && p->routes[r].last;
            k->clean = (uint8_t)taken;
        }
    }
    /* The Merges first: they read only their Enter (before the loop) and their NextIteration (the
       iteration before), so each takes its value before anything of this iteration writes the
       slot (an item numbered before its Merge may feed the NextIteration). */
    for (int k = 0, m = 0; k < p->n; k++)
        if (x->items[p->steps[k].item].kind == DF__X_MERGE) {
            df__sstep t = p->steps[k];
            memmove(&p->steps[m + 1], &p->steps[m], (size_t)(k - m) * sizeof t);
            p->steps[m++] = t;
        }
    df__sched_elide_forwards(x, p);
    /* on a session with threads: whether the tagged executor's overlap of an iteration's items
       would pay (an estimated 5 us or more per iteration) */
    int any = 0;
    for (int i = 0; i < x->n_items; i++) any |= x->items[i].frame == f && (x->items[i].flags & DF__XF_EXPENSIVE);
    if (any && n_threads > 1) {
        uint8_t *own = (uint8_t *)DF_MALLOC((size_t)x->n_items + 1);
        double serial = 0, span = own ? df__sched_lists(x, f, DF__MIN(n_threads, 16), 0, own, &serial) : -1;
        p->expensive = span < 0 || serial - span >= 5000.0;
        DF_FREE(own);
    }
    if (!df__sched_borrow(x, f, p)) { DF_FREE(p->steps); DF_FREE(p->routes); DF_FREE(p->iroutes); DF_FREE(p); return 0; }
    df__xitem *li = &x->items[x->n_items + x->n_loops];
    memset(li, 0, sizeof *li);
    li->kind = DF__X_LOOP;
    li->node = cond;                 /* (names the loop in messages) */
    li->flags = DF__XF_NO_KERNEL;
    li->n_outputs = sf->n_exits;
    li->frame = sf->parent;
    li->local = -1;
    li->child_frame = f;
    sf->sloop = p;
    sf->loop_item = x->n_items + x->n_loops++;
    return 1;
}

/* Finds the flat graph and the static loops of a compiled executor. Out of memory leaves the
   executor as it is (the tagged executor runs everything): this never fails. */
DF_PRIVATE void df__schedule_build(df__exec *x, int n_threads) {
    int n = x->n_items;
    for (int f = 0; f < x->n_frames; f++) x->frames[f].loop_item = -1;
    x->max_outputs = 1;
    for (int i = 0; i < n; i++) x->max_outputs = DF__MAX(x->max_outputs, x->items[i].n_outputs);
    if (n <= 0) return;
    size_t un = (size_t)(unsigned)n;
    df__sched_scratch S;
    memset(&S, 0, sizeof S);
    uint8_t *ok = NULL;
    S.seen = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    S.stack = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    if (!S.seen || !S.stack) goto done;
    for (int i = 0; i < n; i++) S.seen[i] = 0;
    df__sched_flat(x, S.seen, S.stack);
    if (x->flat_parallel) df__sched_plan(x, n_threads);
    if (x->n_frames < 2) goto done;
    S.ioff = (int64_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int64_t));
    S.cls = (uint8_t *)DF_MALLOC((size_t)n + 1);
    S.anc = (uint8_t *)DF_MALLOC((size_t)n + 1);
    if (!S.ioff || !S.cls || !S.anc) goto done;
    int64_t total = 0;
    for (int i = 0; i < n; i++) { S.ioff[i] = total; total += x->items[i].n_inputs; }
    S.in_src = (int32_t *)DF_MALLOC((size_t)(total + 1) * sizeof(int32_t));
    if (!S.in_src) goto done;
    for (int64_t k = 0; k < total; k++) S.in_src[k] = -1;
    memset(S.cls, 0, un);
    memset(S.anc, 0, un);
    for (int i = 0; i < n; i++) S.seen[i] = 0;
    S.mark = 0;
    df__sched_fill(x, &S);
    if (!(ok = (uint8_t *)DF_MALLOC((size_t)x->n_frames))) goto done;
    int ok_loops = 0;
    for (int f = 1; f < x->n_frames; f++) ok_loops += (ok[f] = (uint8_t)df__sched_loop_ok(x, f, &S));
    if (ok_loops) {
        df__xitem *items = (df__xitem *)DF_REALLOC(x->items, (size_t)(n + ok_loops + 1) * sizeof(df__xitem));
        if (!items) goto done;
        x->items = items;
        for (int f = 1; f < x->n_frames; f++)
            if (ok[f] && !df__sched_make_loop(x, f, &S, n_threads)) break;
        for (int k = 0; k < x->n_loops; k++) x->max_outputs = DF__MAX(x->max_outputs, x->items[n + k].n_outputs);
    }
done:
    DF_FREE(S.seen); DF_FREE(S.stack); DF_FREE(S.ioff); DF_FREE(S.cls); DF_FREE(S.anc);
    DF_FREE(S.in_src); DF_FREE(ok);
}
