/* ==========================================================================================
   src/partition.c: The partitioner                                               >>partition
   When more than one device is used, one new graph per device (the caller's graph is never
   touched): each cross-device data edge becomes _Send/_Recv (one Recv per tensor and
   destination), each cross-device control edge an empty Const sent, received and read by an
   Identity. A Recv inside a loop frame fires once per iteration from a control loop (Enter,
   Merge, Switch on the loop's predicate, NextIteration) built on its device.
   ========================================================================================== */
typedef struct df__cloop { df_node *merge; } df__cloop;
typedef struct df__pbuild {
    df_session *ss;
    const df__exec *x;
    const int32_t *dev;          /* per item */
    int32_t *part_of_dev;        /* device index -> partition, -1 unused */
    int n_parts;
    df__part *parts;
    df_node **clone;             /* per item */
    const df_output *feeds;
    int n_feeds;
    df_node **feed_ph;           /* [(feed * n_parts + part) * 2 + in host memory] */
    df__strmap recvs;            /* "src_item:out:part" -> recv node index in its partition */
    df__cloop *cloops;           /* [frame * n_parts + part] */
    int32_t *native;             /* [frame * n_parts + part]: a loop variable's Merge there, or -1 */
    int32_t *native_enter;       /* [frame * n_parts + part]: that Merge's Enter (same allocation) */
    df_node **dummy;             /* per partition: the control loops' root input */
    int32_t *loop_cond;          /* per frame: its LoopCond item */
    int n_keys;
    int compress;
    df_node *last_read;          /* what reads the value df__pb_recv sent last: its Send, or the
                                    Cast to bfloat16 before it (a reference's read waits there) */
    df_status *st;
    /* the whole cut, shared by df__partition's phases */
    df__plan *plan;
    const df_output *fetches;
    int n_fetches;
    int32_t *feed_of;            /* per item: feed index of a feed item */
    int32_t *item_of_node;       /* per node of x's graph: its item, -1 when not in this run */
    df_output **pfeeds, **pfetches;  /* per partition: what its executor is fed, what it fetches */
} df__pbuild;

static int df__pb_oom(df__pbuild *b) {
    if (!b->st->code) df_status_set(b->st, DF_RESOURCE_EXHAUSTED, "Out of memory partitioning the graph");
    return 0;
}
/* Registers a node in a partition graph (the name must be new there). */
DF_PRIVATE int df__pgraph_add(df_graph *g, df_node *n) {
    if (!df__grow(&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(df_node *))) return 0;
    if (!df__strmap_put(&g->names, n->name, g->n_nodes)) return 0;
    n->id = g->n_nodes;
    n->graph = g;
    g->nodes[g->n_nodes++] = n;
    return 1;
}
/* A copy of src in partition graph g on `device`, inputs unset (NULL) and no control inputs. */
DF_PRIVATE df_node *df__node_clone(df_graph *g, const df_node *src, const char *device) {
    df_node *n = (df_node *)DF_MALLOC(sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->op = src->op;
    n->name = df__strdup(src->name);
    n->device = df__strdup(device);
    n->n_inputs = src->n_inputs;
    n->n_outputs = src->n_outputs;
    int ok = n->name && n->device;
    if (ok && src->n_inputs) {
        ok = (n->inputs = (df_output *)DF_MALLOC((size_t)src->n_inputs * sizeof(df_output))) != NULL;
        if (ok) memset(n->inputs, 0, (size_t)src->n_inputs * sizeof(df_output));
    }
    if (ok && src->n_outputs) {
        n->out_types = (df_dtype *)DF_MALLOC((size_t)src->n_outputs * sizeof(df_dtype));
        n->out_shapes = (df__shape *)DF_MALLOC((size_t)src->n_outputs * sizeof(df__shape));
        n->out_is_ref = (unsigned char *)DF_MALLOC((size_t)src->n_outputs);
        ok = n->out_types && n->out_shapes && n->out_is_ref;
        if (ok) {
            memcpy(n->out_types, src->out_types, (size_t)src->n_outputs * sizeof(df_dtype));
            memcpy(n->out_shapes, src->out_shapes, (size_t)src->n_outputs * sizeof(df__shape));
            memcpy(n->out_is_ref, src->out_is_ref, (size_t)src->n_outputs);
        }
    }
    if (ok && (n->attrs = (df__attr *)DF_MALLOC((size_t)(src->n_attrs + 1) * sizeof(df__attr))) != NULL) {
        for (int i = 0; i < src->n_attrs && ok; i++) {
            if (!(ok = df__attr_copy(&n->attrs[i], &src->attrs[i]))) df__attr_clear(&n->attrs[i]);
            else n->n_attrs++;
        }
    } else ok = 0;
    if (!ok || !df__pgraph_add(g, n)) { df__node_free(n); return NULL; }
    return n;
}
/* A fresh name in g from a base ("a/b" -> "a/b", then "a/b_1", ...). */
DF_PRIVATE char *df__pgraph_name(df_graph *g, const char *base) {
    char buf[320];
    snprintf(buf, sizeof buf, "%.300s", base);
    for (int k = 1; df__strmap_get(&g->names, buf, NULL); k++) snprintf(buf, sizeof buf, "%.300s_%d", base, k);
    return df__strdup(buf);
}
/* A new node in partition p through the builder (typechecked, shapes inferred); attrs are set
   by the caller through the returned builder before df__pb_finish. */
static df_op_builder *df__pb_op(df__pbuild *b, int p, const char *op, const char *base) {
    df_graph *g = b->parts[p].g;
    char *name = df__pgraph_name(g, base);
    if (!name) return NULL;
    df_op_builder *ob = df_op_new(g, op, "n");    /* (internal names may start with '_') */
    if (!ob) {
        if (g->status.code && !b->st->code)        /* (out of memory in df_op_new stays what it is) */
            df_status_set(b->st, g->status.code == DF_RESOURCE_EXHAUSTED ? DF_RESOURCE_EXHAUSTED : DF_INTERNAL,
                          "Partitioning: %s", g->status.message);
        DF_FREE(name);
        return NULL;
    }
    DF_FREE(ob->name);
    ob->name = name;
    ob->raw = 1;
    df_op_set_device(ob, b->parts[p].dev->name);
    return ob;
}
static df_node *df__pb_finish(df__pbuild *b, df_op_builder *ob) {
    df_graph *g = ob ? ob->g : NULL;
    df_node *n = df_op_finish(ob);
    if (!n && !b->st->code) {
        if (g && g->status.code) df_status_set(b->st, g->status.code, "Partitioning: %s", g->status.message);
        else df__pb_oom(b);
    }
    return n;
}
static df_node *df__pb_control_loop_merge(df__pbuild *b, int frame, int p);

/* A _Send (input `in`) or _Recv (output of type t) made directly, without the builder: a big
   graph cut at random makes one of each per crossing edge, and checking them is not needed. */
static int df__attr_set(df__attr *a, const char *name, df__attr_kind kind) {
    memset(a, 0, sizeof *a);
    a->kind = kind;
    return (a->name = df__strdup(name)) != NULL;
}
static df_node *df__pb_xfer_node(df__pbuild *b, int p, int recv, int host, const char *base, df_output in,
                                 df_dtype t, int src_part, int dst_part, const char *tname, int key, int dst_devmem) {
    df_graph *g = b->parts[p].g;
    df_node *n = (df_node *)DF_MALLOC(sizeof *n);
    if (!n) { df__pb_oom(b); return NULL; }
    memset(n, 0, sizeof *n);
    n->op = df__op_lookup(recv ? (host ? "_HostRecv" : "_Recv") : (host ? "_HostSend" : "_Send"));
    n->name = df__pgraph_name(g, base);
    n->device = df__strdup(b->parts[p].dev->name);
    n->attrs = (df__attr *)DF_MALLOC(8 * sizeof(df__attr));
    int ok = n->op && n->name && n->device && n->attrs;
    if (ok && !recv) {
        ok = (n->inputs = (df_output *)DF_MALLOC(sizeof(df_output))) != NULL;
        if (ok) { n->inputs[0] = in; n->n_inputs = 1; }
    } else if (ok) {
        n->out_types = (df_dtype *)DF_MALLOC(sizeof(df_dtype));
        n->out_shapes = (df__shape *)DF_MALLOC(sizeof(df__shape));
        n->out_is_ref = (unsigned char *)DF_MALLOC(1);
        ok = n->out_types && n->out_shapes && n->out_is_ref;
        if (ok) { n->n_outputs = 1; n->out_types[0] = t; n->out_shapes[0].rank = -1; n->out_is_ref[0] = 0; }
    }
    const df__device *sd = b->parts[src_part].dev, *rd = b->parts[dst_part].dev;
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], recv ? "tensor_type" : "T", DF__A_TYPE); n->attrs[n->n_attrs++].u.type = t; }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "tensor_name", DF__A_STRING); n->n_attrs++; ok = ok && (n->attrs[n->n_attrs - 1].u.s = df__strdup(tname)); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "send_device", DF__A_STRING); n->n_attrs++; ok = ok && (n->attrs[n->n_attrs - 1].u.s = df__strdup(sd->name)); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "send_device_incarnation", DF__A_INT); n->attrs[n->n_attrs++].u.i = (int64_t)(sd->incarnation >> 1); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "recv_device", DF__A_STRING); n->n_attrs++; ok = ok && (n->attrs[n->n_attrs - 1].u.s = df__strdup(rd->name)); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "client_terminated", DF__A_BOOL); n->attrs[n->n_attrs++].u.b = 0; }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "_key", DF__A_INT); n->attrs[n->n_attrs++].u.i = key; }
    /* a Send delivers its value in the memory its Recv gives out: partition * 2 + device memory */
    if (ok && !recv) { ok = df__attr_set(&n->attrs[n->n_attrs], "_recv_memory", DF__A_INT); n->attrs[n->n_attrs++].u.i = dst_part * 2 + dst_devmem; }
    if (!ok || !df__pgraph_add(g, n)) { df__node_free(n); df__pb_oom(b); return NULL; }
    return n;
}


/* The value of (src item, out) seen from partition p (control: out -1, the Identity whose
   control edge stands for src), made of a Send in src's partition and a Recv in p, one per
   (tensor, partition, memory type); inside a loop frame the Recv fires from p's control loop.
   A pair on one device (memory types differ) has a control edge Send -> Recv. Host-memory
   sides are _HostSend / _HostRecv. */
static df_node *df__pb_recv(df__pbuild *b, int src, int out, int p, int dst_host) {
    const df__exec *x = b->x;
    int q = b->part_of_dev[b->dev[src]];
    const df_node *sn = x->items[src].node;
    int is_ref = out >= 0 && sn->out_is_ref[out];
    int src_host = df__out_on_host(sn, out, b->parts[q].dev);
    int host_send = src_host && !b->parts[q].dev->host_memory, host_recv = dst_host && !b->parts[p].dev->host_memory;
    char key[64];
    snprintf(key, sizeof key, "%d:%d:%d:%d", src, out, p, dst_host);
    int found;
    if (!is_ref && df__strmap_get(&b->recvs, key, &found)) return b->parts[p].g->nodes[found];
    int frame = df__item_out_frame(x, src);
    char base[340], tname[320];
    int k = b->n_keys++;
    snprintf(tname, sizeof tname, "edge_%d_%.280s", k, sn->name);
    df_node *sent = b->clone[src];
    int sent_out = out;
    df_dtype t = out >= 0 ? sn->out_types[out] : DF_FLOAT;
    int cast = out >= 0 && b->compress && t == DF_FLOAT;
    if (out < 0) {                                  /* control: an empty Const after ^src */
        snprintf(base, sizeof base, "%.280s/_ctrl", sn->name);
        df_op_builder *ob = df__pb_op(b, q, "Const", base);
        df_tensor *empty = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){0}, NULL);
        if (!ob || !empty) { df_tensor_release(empty); df__builder_free(ob); df__pb_oom(b); return NULL; }
        df_op_set_attr_tensor(ob, "value", empty);
        df_op_set_attr_type(ob, "dtype", DF_FLOAT);
        df_op_add_control_input(ob, sent);
        df_tensor_release(empty);
        if (!(sent = df__pb_finish(b, ob))) return NULL;
        sent_out = 0;
    } else if (cast) {                              /* float32 crosses as bfloat16 */
        snprintf(base, sizeof base, "%.280s/_to_bf16", sn->name);
        df_op_builder *ob = df__pb_op(b, q, "Cast", base);
        if (!ob) { df__pb_oom(b); return NULL; }
        df_op_add_input(ob, (df_output){sent, out});
        df_op_set_attr_type(ob, "SrcT", DF_FLOAT);
        df_op_set_attr_type(ob, "DstT", DF_BFLOAT16);
        df_op_set_attr_bool(ob, "Truncate", 1);
        if (!(sent = df__pb_finish(b, ob))) return NULL;
        sent_out = 0;
        t = DF_BFLOAT16;
    }
    snprintf(base, sizeof base, "%.280s/_send_%d", sn->name, k);
    int dst_devmem = !dst_host && !b->parts[p].dev->host_memory;
    df_node *send = df__pb_xfer_node(b, q, 0, host_send, base, (df_output){sent, sent_out}, t, q, p, tname, k, dst_devmem);
    if (!send) return NULL;
    df_node *m = NULL;
    if (frame != 0 && !(m = df__pb_control_loop_merge(b, frame, p))) return NULL;
    /* The Recv fires in every iteration, so the Send must too: a source partition whose only
       nodes in the frame are loop invariants (constant Enters and what reads them alone) makes
       no iteration past the first unless it has the frame's control loop, whose iterations the
       invariants are given to. */
    if (frame != 0 && q != p && !df__pb_control_loop_merge(b, frame, q)) return NULL;
    snprintf(base, sizeof base, "%.280s/_recv_%d", sn->name, k);
    df_node *recv = df__pb_xfer_node(b, p, 1, host_recv, base, (df_output){NULL, 0}, out < 0 ? DF_FLOAT : t, q, p, tname, k, dst_devmem);
    if (!recv) return NULL;
    /* A loop variable's Enter gives its value in the frame's first iteration only: its Recv
       waits on an Enter of the frame on p (that iteration alone), not on the Merge (every
       one): the control loop's, or the Enter of the loop variable whose Merge serves as p's
       control loop (a clone, whose inputs come later: the Enter's clone is found by item). */
    if (m && (sn->op->flags & DF__OP_ENTER) && !df__attr_b(sn, "is_constant", 0)) {
        size_t slot = (size_t)frame * (size_t)b->n_parts + (size_t)p;
        if (b->native[slot] >= 0 && m == b->clone[b->native[slot]]) {
            if (b->clone[b->native_enter[slot]]) m = b->clone[b->native_enter[slot]];
        } else if (m->n_inputs > 0 && m->inputs[0].node && (m->inputs[0].node->op->flags & DF__OP_ENTER)) {
            m = m->inputs[0].node;
        }
    }
    if ((p == q && !df__node_add_control(recv, send)) ||     /* same device: never before its Send */
        (m && !df__node_add_control(recv, m))) { df__pb_oom(b); return NULL; }
    if (out >= 0) recv->out_shapes[0] = sn->out_shapes[out];
    df_node *result = recv;
    if (out < 0 || cast) {
        snprintf(base, sizeof base, "%.280s/%s_%d", sn->name, out < 0 ? "_ctrl_read" : "_from_bf16", k);
        df_op_builder *ob = df__pb_op(b, p, out < 0 ? "Identity" : "Cast", base);
        if (!ob) { df__pb_oom(b); return NULL; }
        df_op_add_input(ob, (df_output){recv, 0});
        if (cast) {
            df_op_set_attr_type(ob, "SrcT", DF_BFLOAT16);
            df_op_set_attr_type(ob, "DstT", DF_FLOAT);
        }
        if (!(result = df__pb_finish(b, ob))) return NULL;
    }
    if (!is_ref && !df__strmap_put(&b->recvs, key, result->id)) { df__pb_oom(b); return NULL; }
    b->last_read = cast ? sent : send;   /* (after the control loop's own transfers, made above) */
    return result;
}

/* The control loop of `frame` on partition p, made on first use (with its parents'): its
   Merge fires once per iteration of the frame, in step with the device holding the LoopCond. */
static df_node *df__pb_control_loop_merge(df__pbuild *b, int frame, int p) {
    const df__exec *x = b->x;
    df__cloop *cl = &b->cloops[(size_t)frame * (size_t)b->n_parts + (size_t)p];
    if (cl->merge) return cl->merge;
    const df__sframe *sf = &x->frames[frame];
    if (b->loop_cond[frame] < 0) {
        df_status_set(b->st, DF_INVALID_ARGUMENT, "A cross-device loop must have a pivot predicate (a LoopCond): "
                      "frame '%s'", sf->name);
        return NULL;
    }
    /* The device of the LoopCond needs no control loop when one of its loop variables' Merges
       (Enter and NextIteration both local) is there: it fires once in every iteration. */
    int native = b->native[(size_t)frame * (size_t)b->n_parts + (size_t)p];
    if (native >= 0 && b->part_of_dev[b->dev[b->loop_cond[frame]]] == p) return cl->merge = b->clone[native];
    df_output parent_in;
    if (sf->parent == 0) {
        if (!b->dummy[p]) {
            df_op_builder *ob = df__pb_op(b, p, "Const", "_cloop/dummy");
            df_tensor *empty = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){0}, NULL);
            if (!ob || !empty) { df_tensor_release(empty); df__builder_free(ob); df__pb_oom(b); return NULL; }
            df_op_set_attr_tensor(ob, "value", empty);
            df_op_set_attr_type(ob, "dtype", DF_FLOAT);
            df_tensor_release(empty);
            if (!(b->dummy[p] = df__pb_finish(b, ob))) return NULL;
        }
        parent_in = (df_output){b->dummy[p], 0};
    } else {
        df_node *pm = df__pb_control_loop_merge(b, sf->parent, p);
        if (!pm) return NULL;
        parent_in = (df_output){pm, 0};
    }
    char base[340];
    snprintf(base, sizeof base, "_cloop%.280s/Enter", sf->name);
    df_op_builder *ob = df__pb_op(b, p, "Enter", base);
    if (!ob) { df__pb_oom(b); return NULL; }
    df_op_add_input(ob, parent_in);
    df_op_set_attr_string(ob, "frame_name", sf->name);
    df_op_set_attr_int(ob, "parallel_iterations", sf->parallel_iterations);
    df_node *enter = df__pb_finish(b, ob);
    if (!enter) return NULL;
    snprintf(base, sizeof base, "_cloop%.280s/Merge", sf->name);
    if (!(ob = df__pb_op(b, p, "Merge", base))) { df__pb_oom(b); return NULL; }
    df_output two[2] = {{enter, 0}, {enter, 0}};
    df_op_add_input_list(ob, two, 2);
    df_node *merge = df__pb_finish(b, ob);
    if (!merge) return NULL;
    cl->merge = merge;                               /* (the predicate's Recv below uses it) */
    int lc = b->loop_cond[frame];
    df_output pred = b->part_of_dev[b->dev[lc]] == p ? (df_output){b->clone[lc], 0}
                                                      : (df_output){df__pb_recv(b, lc, 0, p, 1), 0};
    if (!pred.node) return NULL;
    snprintf(base, sizeof base, "_cloop%.280s/Switch", sf->name);
    if (!(ob = df__pb_op(b, p, "Switch", base))) { df__pb_oom(b); return NULL; }
    df_op_add_input(ob, (df_output){merge, 0});
    df_op_add_input(ob, pred);
    df_node *sw = df__pb_finish(b, ob);
    if (!sw) return NULL;
    snprintf(base, sizeof base, "_cloop%.280s/NextIteration", sf->name);
    if (!(ob = df__pb_op(b, p, "NextIteration", base))) { df__pb_oom(b); return NULL; }
    df_op_add_input(ob, (df_output){sw, 1});
    df_node *next = df__pb_finish(b, ob);
    if (!next) return NULL;
    merge->inputs[1] = (df_output){next, 0};
    return merge;
}

/* A Placeholder standing for feed f in partition p (every partition reading a fed tensor gets
   the value directly, without a transfer). */
static df_node *df__pb_feed(df__pbuild *b, int f, int p, int host) {
    host = host || b->parts[p].dev->host_memory;
    df_node **slot = &b->feed_ph[((size_t)f * (size_t)b->n_parts + (size_t)p) * 2 + (size_t)host];
    if (*slot) return *slot;
    df_output o = b->feeds[f];
    char base[340];
    snprintf(base, sizeof base, "_feed/%.280s_%d%s", o.node->name, o.index, host ? "" : "_dev");
    df_op_builder *ob = df__pb_op(b, p, "Placeholder", base);
    if (!ob) { df__pb_oom(b); return NULL; }
    df_op_set_attr_type(ob, "dtype", o.node->out_types[o.index]);
    if (!host) df_op_set_attr_bool(ob, "_device_memory", 1);     /* the step copies the value in */
    *slot = df__pb_finish(b, ob);
    if (*slot) (*slot)->out_shapes[0] = o.node->out_shapes[o.index];
    return *slot;
}

/* The plan and the tables of the cut, with the partitions numbered: one per device some item
   is placed on, in the session's device order. */
static int df__pb_alloc(df__pbuild *b) {
    const df__exec *x = b->x;
    const int32_t *dev = b->dev;
    int n = x->n_items, nd = b->ss->n_devices;
    df__plan *plan = b->plan = (df__plan *)DF_MALLOC(sizeof *plan);
    b->part_of_dev = (int32_t *)DF_MALLOC((size_t)(nd + 1) * sizeof(int32_t));
    b->clone = (df_node **)DF_MALLOC((size_t)(n + 1) * sizeof(df_node *));
    b->loop_cond = (int32_t *)DF_MALLOC((size_t)(x->n_frames + 1) * sizeof(int32_t));
    b->feed_of = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    b->item_of_node = (int32_t *)DF_MALLOC((size_t)(x->graph->n_nodes + 1) * sizeof(int32_t));
    if (plan) memset(plan, 0, sizeof *plan);  /* df__plan_free reads it */
    if (!plan || !b->part_of_dev || !b->clone || !b->loop_cond || !b->feed_of || !b->item_of_node) return df__pb_oom(b);
    for (int i = 0; i < x->graph->n_nodes; i++) b->item_of_node[i] = -1;
    for (int i = 0; i < n; i++)
        if (df__node_item(x, i)) b->item_of_node[x->items[i].node->id] = i;
    plan->owns_graphs = 1;
    for (int d = 0; d < nd; d++) b->part_of_dev[d] = -1;
    for (int i = 0; i < n; i++) if (dev[i] >= 0) b->part_of_dev[dev[i]] = 0;
    for (int d = 0; d < nd; d++) if (b->part_of_dev[d] == 0) b->part_of_dev[d] = b->n_parts++;
    plan->parts = (df__part *)DF_MALLOC((size_t)b->n_parts * sizeof(df__part));
    b->parts = plan->parts;
    b->feed_ph = (df_node **)DF_MALLOC((size_t)(b->n_feeds + 1) * (size_t)b->n_parts * 2 * sizeof(df_node *));
    b->cloops = (df__cloop *)DF_MALLOC((size_t)x->n_frames * (size_t)b->n_parts * sizeof(df__cloop));
    b->native = (int32_t *)DF_MALLOC(2 * (size_t)x->n_frames * (size_t)b->n_parts * sizeof(int32_t));
    b->native_enter = b->native ? b->native + (size_t)x->n_frames * (size_t)b->n_parts : NULL;
    b->dummy = (df_node **)DF_MALLOC((size_t)b->n_parts * sizeof(df_node *));
    b->pfeeds = (df_output **)DF_MALLOC((size_t)b->n_parts * sizeof(df_output *));
    b->pfetches = (df_output **)DF_MALLOC((size_t)b->n_parts * sizeof(df_output *));
    if (b->pfeeds) memset(b->pfeeds, 0, (size_t)b->n_parts * sizeof(df_output *));   /* (df__partition frees their entries) */
    if (b->pfetches) memset(b->pfetches, 0, (size_t)b->n_parts * sizeof(df_output *));
    if (!plan->parts || !b->feed_ph || !b->cloops || !b->native || !b->dummy || !b->pfeeds || !b->pfetches) return df__pb_oom(b);
    return 1;
}

/* Per (frame, partition), a loop variable's Merge whose Enter and NextIteration are both
   there: it fires once per iteration, so it can serve as that partition's control loop. */
static void df__pb_find_native_merges(df__pbuild *b) {
    const df__exec *x = b->x;
    const int32_t *dev = b->dev;
    for (size_t k = 0; k < (size_t)x->n_frames * (size_t)b->n_parts; k++) b->native[k] = -1;
    for (int i = 0; i < x->n_items; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_MERGE || it->n_inputs != 2 || it->n_control_in || dev[i] < 0) continue;
        int enter = 0, next = 0, enter_item = -1;
        for (int k = 0; k < 2; k++) {
            const df_node *src = it->node->inputs[k].node;
            int j = b->item_of_node[src->id];
            if (j < 0 || dev[j] != dev[i]) break;
            if (x->items[j].kind == DF__X_ENTER && !(x->items[j].flags & DF__XF_CONST_ENTER)) { enter++; enter_item = j; }
            next += x->items[j].kind == DF__X_NEXT;
        }
        size_t slot = (size_t)it->frame * (size_t)b->n_parts + (size_t)b->part_of_dev[dev[i]];
        if (enter == 1 && next == 1 && b->native[slot] < 0) { b->native[slot] = i; b->native_enter[slot] = enter_item; }
    }
}

/* An empty graph per partition (its functions looked up in the caller's graph), and the
   per-frame LoopCond and per-item feed tables the edges are cut with. */
static int df__pb_new_graphs(df__pbuild *b) {
    const df__exec *x = b->x;
    df__plan *plan = b->plan;
    int n = x->n_items, nd = b->ss->n_devices;
    memset(plan->parts, 0, (size_t)b->n_parts * sizeof(df__part));
    plan->n_parts = b->n_parts;
    memset(b->feed_ph, 0, (size_t)(b->n_feeds + 1) * (size_t)b->n_parts * 2 * sizeof(df_node *));
    memset(b->cloops, 0, (size_t)x->n_frames * (size_t)b->n_parts * sizeof(df__cloop));
    memset(b->dummy, 0, (size_t)b->n_parts * sizeof(df_node *));
    for (int d = 0; d < nd; d++) {
        int p = b->part_of_dev[d];
        if (p < 0) continue;
        plan->parts[p].dev = b->ss->devices[d];
        if (!(plan->parts[p].g = df_graph_new())) return df__pb_oom(b);
        plan->parts[p].g->lib_from = x->graph;
    }
    for (int f = 0; f < x->n_frames; f++) b->loop_cond[f] = -1;
    for (int i = 0; i < n; i++) {
        b->feed_of[i] = -1;
        if (x->items[i].flags & DF__XF_LOOP_COND) b->loop_cond[x->items[i].frame] = i;
        if (x->items[i].kind == DF__X_FEED) b->feed_of[i] = x->items[i].aux;
    }
    return 1;
}

/* Every placed item cloned into its partition's graph, inputs still unset. */
static int df__pb_clone_items(df__pbuild *b) {
    const df__exec *x = b->x;
    for (int i = 0; i < x->n_items; i++) {
        b->clone[i] = NULL;
        if (b->dev[i] < 0) continue;
        df__part *pt = &b->parts[b->part_of_dev[b->dev[i]]];
        if (!(b->clone[i] = df__node_clone(pt->g, x->items[i].node, pt->dev->name))) return df__pb_oom(b);
    }
    return 1;
}

/* A reference read on another device (item d reads item s's ref output through a Send): the
   value is read when `reader` (the Send, or the Cast before it) runs, so it waits for d's other
   inputs, as a read by d itself would (TF's AddReadControl; TF's Send passes the variable's
   buffer, which later in-place updates reach, and defers the Recv instead: our values are
   immutable, so the read itself waits). A Merge is left alone: its inputs are alternatives,
   one a back edge. */
static int df__pb_ref_read_waits(df__pbuild *b, int s, int d, df_node *reader) {
    const df__exec *x = b->x;
    const df_node *dn = x->items[d].node;
    if (x->items[d].kind == DF__X_MERGE) return 1;
    int q = b->part_of_dev[b->dev[s]];
    for (int k = 0; k < dn->n_inputs + dn->n_controls; k++) {
        const df_node *src = k < dn->n_inputs ? dn->inputs[k].node : dn->controls[k - dn->n_inputs];
        int j = b->item_of_node[src->id];
        if (j < 0 || j == s || b->dev[j] < 0) continue;            /* fed, or the reference itself */
        df_node *c = b->part_of_dev[b->dev[j]] == q ? b->clone[j] : df__pb_recv(b, j, -1, q, 1);
        if (!c) return 0;
        if (!df__node_add_control(reader, c)) return df__pb_oom(b);
    }
    return 1;
}

/* Every edge, by destination: a fed value from its Placeholder, one on the same device (and
   memory) directly, any other through a Send/Recv pair. In-edges come from the out-edge lists. */
static int df__pb_connect_edges(df__pbuild *b) {
    const df__exec *x = b->x;
    const int32_t *dev = b->dev;
    df_status *st = b->st;
    for (int s = 0; s < x->n_items && !st->code; s++) {
        const df__xitem *it = &x->items[s];
        for (int e = 0; e < it->n_edges && !st->code; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            int d = ed->dst;
            if (x->items[d].kind == DF__X_FETCH) continue;
            int p = b->part_of_dev[dev[d]];
            df_node *dn = b->clone[d];
            if (ed->slot >= 0) {
                df_output src;
                /* (analysis made data slots absolute in the frame, except a LoopCount's) */
                int slot = x->items[d].kind == DF__X_COUNT ? ed->slot : ed->slot - x->items[d].input_start;
                const df__device *dd = b->parts[p].dev;
                int dst_host = df__in_on_host(x->items[d].node, slot, dd);
                if (it->kind == DF__X_FEED) src = (df_output){df__pb_feed(b, b->feed_of[s], p, dst_host), 0};
                else if (dev[s] == dev[d] && df__out_on_host(it->node, ed->src_out, dd) == dst_host)
                    src = (df_output){b->clone[s], ed->src_out};
                else {
                    src = (df_output){df__pb_recv(b, s, ed->src_out, p, dst_host), 0};
                    if (src.node && it->node->out_is_ref[ed->src_out] && !df__pb_ref_read_waits(b, s, d, b->last_read)) break;
                }
                if (!src.node) break;
                dn->inputs[slot] = src;
            } else {
                df_node *c = it->kind == DF__X_FEED ? df__pb_feed(b, b->feed_of[s], p, 1)
                           : dev[s] == dev[d] ? b->clone[s] : df__pb_recv(b, s, -1, p, 1);
                if (!c) break;
                if (!df__node_add_control(dn, c)) return df__pb_oom(b);
            }
        }
    }
    return !st->code;
}

/* Each partition's feeds: the Placeholders cutting the edges made for it (with room for the
   fetched feeds partition 0 may add next), and room for its fetches. */
static int df__pb_list_part_feeds(df__pbuild *b) {
    int n_feeds = b->n_feeds;
    for (int p = 0; p < b->n_parts; p++) {
        df__part *pt = &b->parts[p];
        int nf = 0;
        if (!(b->pfeeds[p] = (df_output *)DF_MALLOC((size_t)(2 * n_feeds + 2) * sizeof(df_output)))) return df__pb_oom(b);
        if (!(pt->feed_map = (int *)DF_MALLOC((size_t)(2 * n_feeds + 2) * sizeof(int)))) return df__pb_oom(b);
        if (!(b->pfetches[p] = (df_output *)DF_MALLOC((size_t)(b->n_fetches + 1) * sizeof(df_output)))) return df__pb_oom(b);
        if (!(pt->fetch_map = (int *)DF_MALLOC((size_t)(b->n_fetches + 1) * sizeof(int)))) return df__pb_oom(b);
        for (int f = 0; f < n_feeds; f++) {
            for (int h = 0; h < 2; h++) {
                df_node *ph = b->feed_ph[((size_t)f * (size_t)b->n_parts + (size_t)p) * 2 + (size_t)h];
                if (ph) { b->pfeeds[p][nf] = (df_output){ph, 0}; pt->feed_map[nf++] = f; }
            }
        }
        pt->n_feeds = nf;
    }
    return 1;
}

/* Each fetch given to the partition that computes it; a fetched feed is read back from a
   Placeholder of partition 0. */
static int df__pb_list_part_fetches(df__pbuild *b) {
    const df__exec *x = b->x;
    for (int i = 0; i < x->n_items; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_FETCH) continue;
        /* the fetch's source: the single in-edge of this item */
        int fetch = it->aux;
        df_output o = b->fetches[fetch];
        int p = 0, fed = -1;
        df_output src = {NULL, 0};
        for (int f = 0; f < b->n_feeds; f++) if (b->feeds[f].node == o.node && b->feeds[f].index == o.index) fed = f;
        if (fed >= 0) {
            if (!(src.node = df__pb_feed(b, fed, 0, 1))) return 0;
            df__part *pt = &b->parts[0];
            int known = 0;
            for (int k = 0; k < pt->n_feeds; k++) if (b->pfeeds[0][k].node == src.node) known = 1;
            if (!known) { b->pfeeds[0][pt->n_feeds] = src; pt->feed_map[pt->n_feeds++] = fed; }
        } else {
            int s = b->item_of_node[o.node->id];
            if (s < 0) { df_status_set(b->st, DF_INTERNAL, "Partitioning lost fetch %d", fetch); return 0; }
            p = b->part_of_dev[b->dev[s]];
            src = (df_output){b->clone[s], o.index};
        }
        df__part *pt = &b->parts[p];
        b->pfetches[p][pt->n_fetches] = src;
        pt->fetch_map[pt->n_fetches++] = fetch;
    }
    return 1;
}

/* The names a worker finds partition p's feeds and fetches by ("node:index"). */
static int df__pb_io_names(df__pbuild *b, int p) {
    df__part *pt = &b->parts[p];
    int nio = pt->n_feeds + pt->n_fetches;
    if (!(pt->io_names = (char **)DF_MALLOC(((size_t)nio + 1) * sizeof(char *)))) return df__pb_oom(b);
    memset(pt->io_names, 0, ((size_t)nio + 1) * sizeof(char *));
    for (int k = 0; k < nio; k++) {
        df_output o = k < pt->n_feeds ? b->pfeeds[p][k] : b->pfetches[p][k - pt->n_feeds];
        size_t len = strlen(o.node->name) + 16;
        if (!(pt->io_names[k] = (char *)DF_MALLOC(len))) return df__pb_oom(b);
        snprintf(pt->io_names[k], len, "%s:%d", o.node->name, o.index);
    }
    return 1;
}

/* Partition p's executor, fused into a CUDA graph only where no value may arrive dead (no
   other partition has a Switch) and no value it sends comes back to it. `alone`: the first. */
static int df__pb_compile_part(df__pbuild *b, int p, int alone) {
    df_session *ss = b->ss;
    df_status *st = b->st;
    df__part *pt = &b->parts[p];
    if (pt->g->status.code) { df_status_set(st, DF_INTERNAL, "Partitioning: %s", pt->g->status.message); return 0; }
    int fuse = alone && ss->opts.cuda_graphs && !pt->dev->host_memory && !df__gg_returns(b->plan, p, st);
    if (ss->opts.cuda_graphs && !pt->dev->host_memory && !fuse && getenv("DF_CUDA_GRAPHS_DEBUG"))
        fprintf(stderr, "dataflow: no CUDA graph on %s: %s\n", pt->dev->name, alone ? "a value it sends comes back" : "another partition has a Switch");
    if (st->code) return 0;
    if (df__pb_compile(ss, pt, b->pfeeds[p], pt->n_feeds, b->pfetches[p], pt->n_fetches, fuse, st) != DF_OK) return 0;
    if (ss->cluster && !df__pb_io_names(b, p)) return 0;
    return 1;
}

/* Every partition's executor, after counting the Switches each partition holds. */
static int df__pb_compile_parts(df__pbuild *b) {
    int switches = 0, *part_switches = (int *)DF_MALLOC(((size_t)b->n_parts + 1) * sizeof(int));
    if (!part_switches) return df__pb_oom(b);
    for (int p = 0; p < b->n_parts; p++) {      /* (no value may arrive dead: Switches stay inside) */
        part_switches[p] = 0;
        for (int i = 0; i < b->parts[p].g->n_nodes; i++)
            if (b->parts[p].g->nodes[i]->op->flags & DF__OP_SWITCH) part_switches[p]++;
        switches += part_switches[p];
    }
    int ok = 1;
    for (int p = 0; p < b->n_parts && ok; p++) ok = df__pb_compile_part(b, p, switches == part_switches[p]);
    DF_FREE(part_switches);
    return ok;
}

/* Cuts x (placed by dev) into one graph and executor per device used. */
DF_PRIVATE df__plan *df__partition(df_session *ss, const df__exec *x, const int32_t *dev, const df_output *feeds,
                               int n_feeds, const df_output *fetches, int n_fetches, df_status *st) {
    df__pbuild b;
    memset(&b, 0, sizeof b);
    b.ss = ss; b.x = x; b.dev = dev; b.feeds = feeds; b.n_feeds = n_feeds; b.st = st;
    b.fetches = fetches; b.n_fetches = n_fetches;
    b.compress = ss->opts.compress_transfers;
    int ok = df__pb_alloc(&b);
    if (ok) df__pb_find_native_merges(&b);
    ok = ok && df__pb_new_graphs(&b)
            && df__pb_clone_items(&b)           /* 1. every node, on its device */
            && df__pb_connect_edges(&b)         /* 2. edges, by destination: data inputs in order, then control inputs */
            && df__pb_list_part_feeds(&b)       /* 3. feeds and fetches of each partition, then its executor */
            && df__pb_list_part_fetches(&b)
            && df__pb_compile_parts(&b);
    if (!ok) {
        df__plan_free(b.plan);
        b.plan = NULL;
    }
    for (int p = 0; b.pfeeds && p < b.n_parts; p++) DF_FREE(b.pfeeds[p]);
    for (int p = 0; b.pfetches && p < b.n_parts; p++) DF_FREE(b.pfetches[p]);
    DF_FREE(b.pfeeds); DF_FREE(b.pfetches);
    DF_FREE(b.part_of_dev); DF_FREE(b.clone); DF_FREE(b.loop_cond); DF_FREE(b.feed_of); DF_FREE(b.item_of_node);
    DF_FREE(b.feed_ph); DF_FREE(b.cloops); DF_FREE(b.native); DF_FREE(b.dummy);
    df__strmap_free(&b.recvs);
    return b.plan;
}
