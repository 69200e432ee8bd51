/* ==========================================================================================
   src/frames.c: Static frame analysis                                               >>frames
   Over the items an executor will run: every item gets one static frame (Enter opens the
   frame named by its attr, Exit returns to the parent, everything else inherits), found by a
   breadth-first walk from the roots. Malformed graphs are rejected here: inputs from different
   frames, Exit/NextIteration outside a loop, cycles not through NextIteration, two LoopConds
   in a frame, mismatched parent frames. Linear in items and edges.
   ========================================================================================== */

DF_PRIVATE void df__exec_free(df__exec *x) {
    if (!x) return;
    df__schedule_free(x);
    for (int i = 0; i < x->n_frames; i++) { DF_FREE(x->frames[i].name); DF_FREE(x->frames[i].init); DF_FREE(x->frames[i].counts); DF_FREE(x->frames[i].exits); }
    DF_FREE(x->frames); DF_FREE(x->items); DF_FREE(x->edges); DF_FREE(x->roots); DF_FREE(x->host_out);
    df__strmap_free(&x->frame_index);
    DF_FREE(x);
}

DF_PRIVATE const char *df__item_name(const df__exec *x, int i) {
    const df__xitem *it = &x->items[i];
    return it->node ? it->node->name : "_feed";
}

static int df__frame_find_or_add(df__exec *x, const char *name, int parent, df_status *st, const char *by) {
    int f;
    if (x->n_frames && df__strmap_get(&x->frame_index, name, &f) && f > 0) {
        if (x->frames[f].parent != parent) {
            df_status_set(st, DF_INVALID_ARGUMENT, "Mismatched parent frames for frame '%s': '%s' and '%s' "
                          "{{node %s}}", name, x->frames[x->frames[f].parent].name, x->frames[parent].name, by);
            return -1;
        }
        return f;
    }
    if (x->n_frames && x->frames[parent].depth >= DF_MAX_CONTROL_FLOW_DEPTH) {
        df_status_set(st, DF_INVALID_ARGUMENT, "While loops nest more than %d deep (DF_MAX_CONTROL_FLOW_DEPTH): frame '%.200s' "
                      "{{node %s}}", DF_MAX_CONTROL_FLOW_DEPTH, name, by);
        return -1;
    }
    if (!df__grow(&x->frames, &x->cap_frames, x->n_frames + 1, sizeof(df__sframe)) ||
        (x->n_frames && !df__strmap_put(&x->frame_index, name, x->n_frames))) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
        return -1;
    }
    df__sframe *sf = &x->frames[x->n_frames];
    memset(sf, 0, sizeof *sf);
    sf->name = df__strdup(name);
    sf->parent = parent;
    sf->depth = x->n_frames ? x->frames[parent].depth + 1 : 0;
    sf->parallel_iterations = 1;
    if (!sf->name) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis"); return -1; }
    return x->n_frames++;
}

/* 1. cycles not through NextIteration (Kahn's algorithm ignoring NextIteration's out-edges):
   queue receives the items in that topological order (indeg is scratch). */
static df_code df__frames_topo_order(const df__exec *x, int32_t *indeg, int32_t *queue, df_status *st) {
    int n = x->n_items;
    for (int i = 0; i < n; i++) indeg[i] = 0;
    for (int i = 0; i < n; i++)
        if (x->items[i].kind != DF__X_NEXT)
            for (int e = 0; e < x->items[i].n_edges; e++) indeg[x->edges[x->items[i].edge_start + e].dst]++;
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) if (!indeg[i]) queue[tail++] = i;
    while (head < tail) {
        int i = queue[head++];
        if (x->items[i].kind == DF__X_NEXT) continue;
        for (int e = 0; e < x->items[i].n_edges; e++) {
            int d = x->edges[x->items[i].edge_start + e].dst;
            if (--indeg[d] == 0) queue[tail++] = d;
        }
    }
    if (tail < n) {
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++) if (indeg[i] > 0) bad = i;
        return df_status_set(st, DF_INVALID_ARGUMENT, "The graph has a cycle that does not go through a "
                             "NextIteration node; it includes {{node %s}}", df__item_name(x, bad));
    }
    return DF_OK;
}

/* Renumber items in that order: the executor runs nodes roughly breadth first, so items,
   edges and counts are then read nearly sequentially (it matters for big graphs). renum is
   scratch; queue becomes the identity. */
static df_code df__frames_renumber(df__exec *x, int32_t *renum, int32_t *queue, df_status *st) {
    int n = x->n_items;
    df__xitem *items = (df__xitem *)DF_MALLOC((size_t)(n + 1) * sizeof(df__xitem));
    df__xedge *edges = (df__xedge *)DF_MALLOC((size_t)(x->n_edges + 1) * sizeof(df__xedge));
    if (!items || !edges) {
        DF_FREE(items); DF_FREE(edges);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
    }
    for (int k = 0; k < n; k++) renum[queue[k]] = k;
    if (x->host_out) {                             /* (queue holds old indices until below) */
        uint32_t *ho = (uint32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(uint32_t));
        if (!ho) {
            DF_FREE(items); DF_FREE(edges);
            return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
        }
        for (int k = 0; k < n; k++) ho[k] = x->host_out[queue[k]];
        ho[n] = ~0u;
        DF_FREE(x->host_out);
        x->host_out = ho;
    }
    int at = 0;
    for (int k = 0; k < n; k++) {
        const df__xitem *old = &x->items[queue[k]];
        items[k] = *old;
        items[k].edge_start = at;
        for (int e = 0; e < old->n_edges; e++) {
            edges[at] = x->edges[old->edge_start + e];
            edges[at].dst = renum[edges[at].dst];
            at++;
        }
        queue[k] = k;
    }
    DF_FREE(x->items); DF_FREE(x->edges);
    x->items = items;
    x->edges = edges;
    return DF_OK;
}

/* 2. frames, in that topological order: an item's frame comes from its inputs (an Enter's
   consumers are in the Enter's frame, an Exit's in the parent), so a node whose inputs
   disagree is found at the node itself. Back edges from NextIteration are checked after. */
static df_code df__frames_assign(df__exec *x, const int32_t *queue, df_status *st) {
    int n = x->n_items;
    if (df__frame_find_or_add(x, "", 0, st, "") != 0) return st->code;
    for (int i = 0; i < n; i++) x->items[i].frame = x->items[i].kind == DF__X_FETCH ? 0 : -1;   /* (fetches: the root frame) */
    df_code code = DF_OK;
    for (int q = 0; q < n && !code; q++) {
        int i = queue[q];
        df__xitem *it = &x->items[i];
        if (it->frame < 0) {
            if (it->n_inputs + it->n_control_in > 0) continue;   /* fed only by back edges: reported below */
            it->frame = 0;
        }
        int out_frame = it->frame;
        if (it->frame == 0 && (it->kind == DF__X_EXIT || it->kind == DF__X_COUNT || it->kind == DF__X_NEXT ||
                               (it->flags & DF__XF_LOOP_COND))) {
            code = df_status_set(st, DF_INVALID_ARGUMENT, "%s node is not inside a while loop%s {{node %s}}",
                                 it->node->op->name, it->kind == DF__X_EXIT ? " (it has no matching Enter)" : "",
                                 df__item_name(x, i));
            break;
        }
        if (it->kind == DF__X_ENTER) {
            int f = df__frame_find_or_add(x, df__attr_s(it->node, "frame_name"), it->frame, st, it->node->name);
            if (f < 0) { code = st->code; break; }
            it->child_frame = out_frame = f;
        } else if (it->kind == DF__X_EXIT || it->kind == DF__X_COUNT) {
            out_frame = x->frames[it->frame].parent;     /* root's parent is root: reported below */
        }
        if (it->kind == DF__X_NEXT) continue;
        for (int e = 0; e < it->n_edges && !code; e++) {
            int d = x->edges[it->edge_start + e].dst;
            df__xitem *dst = &x->items[d];
            if (dst->frame < 0) { dst->frame = out_frame; continue; }
            if (dst->frame == out_frame) continue;
            if (it->kind == DF__X_FEED)
                code = df_status_set(st, DF_INVALID_ARGUMENT, "A fed tensor is used inside a while loop; feeding "
                                     "tensors inside loops is not supported {{node %s}}", df__item_name(x, d));
            else if (dst->kind == DF__X_FETCH)
                code = df_status_set(st, DF_INVALID_ARGUMENT, "Cannot fetch a tensor from inside a while loop: "
                                     "'%s' is in frame '%s' {{node %s}}", df__item_name(x, i),
                                     x->frames[out_frame].name, df__item_name(x, i));
            else
                code = df_status_set(st, DF_INVALID_ARGUMENT, "Node has inputs from different frames. The input "
                    "'%s' is in frame '%s'. Another input is in frame '%s'. {{node %s}}", df__item_name(x, i),
                    x->frames[out_frame].name, x->frames[dst->frame].name, df__item_name(x, d));
        }
    }
    return code;
}

/* The walk above skips NextIteration's out-edges: they must go into Merges of the same frame,
   and every item must have been reached. */
static df_code df__frames_check_back_edges(const df__exec *x, df_status *st) {
    int n = x->n_items;
    df_code code = DF_OK;
    for (int i = 0; i < n && !code; i++) {      /* a NextIteration in a loop is its back edge: into Merges */
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_NEXT || it->frame <= 0) continue;
        for (int e = 0; e < it->n_edges && !code; e++) {
            int d = x->edges[it->edge_start + e].dst;
            if (x->items[d].kind != DF__X_MERGE && x->items[d].kind != DF__X_FETCH && !(x->items[d].flags & DF__XF_TRANSFER))
                code = df_status_set(st, DF_INVALID_ARGUMENT, "A NextIteration must feed a Merge (it is a while loop's back "
                                     "edge), not '%s' {{node %s}}", df__item_name(x, d), df__item_name(x, i));
        }
    }
    for (int i = 0; i < n && !code; i++)
        if (x->items[i].frame < 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Node is not reachable from any input: it sits in a "
                                 "loop with no Enter {{node %s}}", df__item_name(x, i));
    for (int i = 0; i < n && !code; i++) {          /* NextIteration's back edges */
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_NEXT) continue;
        for (int e = 0; e < it->n_edges; e++) {
            int d = x->edges[it->edge_start + e].dst;
            if (x->items[d].frame != it->frame && it->frame != 0) {
                code = df_status_set(st, DF_INVALID_ARGUMENT, "Node has inputs from different frames. The input "
                    "'%s' is in frame '%s'. Another input is in frame '%s'. {{node %s}}", df__item_name(x, i),
                    x->frames[it->frame].name, x->frames[x->items[d].frame].name, df__item_name(x, d));
                break;
            }
        }
    }
    return code;
}

/* Each frame learns its loop's parts (counters, Exits, the one LoopCond, Enters and their
   parallel_iterations); the loop-only nodes that ended up in the root frame are rejected. */
static df_code df__frames_collect_loop_parts(df__exec *x, df_status *st) {
    int n = x->n_items;
    df_code code = DF_OK;
    for (int i = 0; i < n && !code; i++) {
        df__xitem *it = &x->items[i];
        if ((it->kind == DF__X_EXIT || it->kind == DF__X_COUNT) && it->frame == 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "%s node is not inside a while loop (it has no "
                                 "matching Enter) {{node %s}}", it->node->op->name, df__item_name(x, i));
        else if (it->kind == DF__X_COUNT) {
            df__sframe *f = &x->frames[it->frame];
            if (!df__grow(&f->counts, &f->cap_counts, f->n_counts + 1, sizeof(int32_t)))
                code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
            else f->counts[f->n_counts++] = i;
        }
        else if (it->kind == DF__X_EXIT) {
            df__sframe *f = &x->frames[it->frame];
            if (!df__grow(&f->exits, &f->cap_exits, f->n_exits + 1, sizeof(int32_t)))
                code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
            else { it->aux = f->n_exits; f->exits[f->n_exits++] = i; }
        }
        else if (it->kind == DF__X_NEXT && it->frame == 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "NextIteration node is not inside a while loop "
                                 "{{node %s}}", df__item_name(x, i));
        else if ((it->flags & DF__XF_LOOP_COND) && it->frame == 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "LoopCond is not inside a while loop {{node %s}}",
                                 df__item_name(x, i));
        else if ((it->flags & DF__XF_LOOP_COND) && ++x->frames[it->frame].n_loop_conds > 1)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Frame '%s' has more than one LoopCond {{node %s}}",
                                 x->frames[it->frame].name, df__item_name(x, i));
        else if (it->kind == DF__X_ENTER) {
            df__sframe *f = &x->frames[it->child_frame];
            int64_t par = df__attr_i(it->node, "parallel_iterations", 10);
            f->n_enters++;
            if (par > f->parallel_iterations) f->parallel_iterations = (int)DF__MIN(par, 1 << 20);
        }
    }
    return code;
}

/* 3. layout: local ids, input slots and initial counts per frame */
static df_code df__frames_layout(df__exec *x, df_status *st) {
    int n = x->n_items;
    for (int i = 0; i < n; i++) {
        df__xitem *it = &x->items[i];
        df__sframe *sf = &x->frames[it->frame];
        it->local = sf->n_nodes++;
        it->input_start = sf->total_inputs;
        sf->total_inputs += it->n_inputs;
    }
    for (int f = 0; f < x->n_frames; f++) {
        x->frames[f].init = (df__counts *)DF_MALLOC((size_t)(x->frames[f].n_nodes + 1) * sizeof(df__counts));
        if (!x->frames[f].init) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
    }
    for (int i = 0; i < n; i++) {
        df__xitem *it = &x->items[i];
        df__counts *c = &x->frames[it->frame].init[it->local];
        c->dead = 0;
        c->pending = it->kind == DF__X_MERGE ? 1 + 2 * it->n_control_in : it->n_inputs + it->n_control_in;
    }
    return DF_OK;
}

/* data edges: absolute input slot in the destination's frame; the last data edge reading
   each output may take the producer's reference instead of adding one. Then the items'
   flags the executor's fast paths test. */
static df_code df__frames_mark_edges(df__exec *x, df_status *st) {
    int n = x->n_items;
    int max_out = 1;
    for (int i = 0; i < n; i++) max_out = DF__MAX(max_out, x->items[i].n_outputs);
    int32_t *seen = (int32_t *)DF_MALLOC((size_t)max_out * sizeof(int32_t));  /* item that last saw output k */
    if (!seen) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
    for (int k = 0; k < max_out; k++) seen[k] = -1;
    for (int i = 0; i < n; i++) {
        const df__xitem *it = &x->items[i];
        for (int e = it->n_edges - 1; e >= 0; e--) {            /* backwards: the first seen is the last */
            df__xedge *ed = &x->edges[it->edge_start + e];
            const df__xitem *dst = &x->items[ed->dst];
            ed->dst_local = dst->local;
            ed->flags = (dst->kind == DF__X_MERGE ? DF__XE_MERGE : 0) | (dst->flags & DF__XF_CTRL_TRIGGER ? DF__XE_TRIGGER : 0);
            if (dst->kind == DF__X_COUNT) { ed->flags = DF__XE_COUNT; continue; }    /* only notes deadness */
            if (ed->slot < 0) continue;
            ed->slot += dst->input_start;
            if (ed->src_out < max_out && seen[ed->src_out] != i) { seen[ed->src_out] = i; ed->flags |= DF__XE_LAST; }
        }
    }
    DF_FREE(seen);
    for (int i = 0; i < n; i++) {
        df__xitem *it = &x->items[i];
        it->flags |= DF__XF_PLAIN_EDGES;
        for (int e = 0; e < it->n_edges; e++)
            if (x->edges[it->edge_start + e].flags & (DF__XE_MERGE | DF__XE_TRIGGER | DF__XE_COUNT)) it->flags &= (uint16_t)~DF__XF_PLAIN_EDGES;
    }
    for (int i = 0; i < n; i++)          /* may a successor be worth a thread? */
        for (int e = 0; e < x->items[i].n_edges; e++)
            if (x->items[x->edges[x->items[i].edge_start + e].dst].flags & DF__XF_EXPENSIVE) {
                x->items[i].flags |= DF__XF_EXPENSIVE_NEXT;
                break;
            }
    return DF_OK;
}

/* Items, in-edges and out-edges are in place (x->edges holds out-edges by source; in-degree is
   n_inputs + n_control_in). Assigns frames, validates, lays out counts. */
DF_PRIVATE df_code df__analyze_frames(df__exec *x, df_status *st) {
    int n = x->n_items;
    int32_t *indeg = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    int32_t *queue = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    if (!indeg || !queue) { DF_FREE(indeg); DF_FREE(queue); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis"); }
    df_code code = df__frames_topo_order(x, indeg, queue, st);
    if (!code) code = df__frames_renumber(x, indeg, queue, st);      /* (indeg reused: old index -> new) */
    if (!code) code = df__frames_assign(x, queue, st);
    if (!code) code = df__frames_check_back_edges(x, st);
    if (!code) code = df__frames_collect_loop_parts(x, st);
    DF_FREE(indeg);
    DF_FREE(queue);
    if (code) return code;
    if ((code = df__frames_layout(x, st)) != DF_OK) return code;
    return df__frames_mark_edges(x, st);
}
