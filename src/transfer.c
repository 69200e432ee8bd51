/* ==========================================================================================
   src/transfer.c: Transfers: the rendezvous, _Send and _Recv                      >>transfer
   A value crosses devices as a _Send in the producer's partition and a _Recv in the consumer's
   (the partitioner, src/partition.c, inserts the pairs; df__pb_recv). Both run even when their
   input is dead, so the dead bit crosses too. They meet in the run's rendezvous, keyed by (key
   number, frame id, iteration): the key number stands for TensorFlow's textual prefix
   "send_device;incarnation;recv_device;tensor_name" (df__plan interns those), so a transfer
   hashes three integers instead of formatting a string. Each key holds a FIFO of sent values or
   of waiting Recvs, never both. A waiting Recv is handed back to the sender as a wake, resumed
   outside the lock (src/executor.c). An abort fails every waiting Recv and every later call.
   A Send whose Recv is in another process goes over the wire instead (df__remote_send and
   df__w_deliver, src/net/worker.c), into the rendezvous of that process's step.
   ========================================================================================== */
/* ---- the rendezvous ---- */
static df__rv_entry **df__rv_slot(df__rendezvous *rv, int32_t key, uint64_t fid, int64_t iter) {
    uint64_t h = df__hash_mix(df__hash_mix((uint64_t)(uint32_t)key, fid), (uint64_t)iter);
    df__rv_entry **p = &rv->buckets[h & (uint64_t)(rv->n_buckets - 1)];
    while (*p && !((*p)->key == key && (*p)->frame_id == fid && (*p)->iter == iter)) p = &(*p)->next;
    return p;
}
DF_PRIVATE int df__rv_init(df__rendezvous *rv) {
    memset(rv, 0, sizeof *rv);
    rv->n_buckets = 64;
    rv->buckets = (df__rv_entry **)DF_MALLOC((size_t)rv->n_buckets * sizeof(df__rv_entry *));
    if (!rv->buckets) return 0;
    memset(rv->buckets, 0, (size_t)rv->n_buckets * sizeof(df__rv_entry *));
    return 1;
}
/* Doubles the bucket array when entries outnumber buckets twice (a sender far ahead). */
static void df__rv_rehash(df__rendezvous *rv) {
    int nb = rv->n_buckets * 2;
    df__rv_entry **b = (df__rv_entry **)DF_MALLOC((size_t)nb * sizeof(df__rv_entry *));
    if (!b) return;                          /* longer chains, still correct */
    memset(b, 0, (size_t)nb * sizeof(df__rv_entry *));
    for (int i = 0; i < rv->n_buckets; i++)
        for (df__rv_entry *e = rv->buckets[i], *next; e; e = next) {
            next = e->next;
            uint64_t h = df__hash_mix(df__hash_mix((uint64_t)(uint32_t)e->key, e->frame_id), (uint64_t)e->iter);
            e->next = b[h & (uint64_t)(nb - 1)];
            b[h & (uint64_t)(nb - 1)] = e;
        }
    DF_FREE(rv->buckets);
    rv->buckets = b;
    rv->n_buckets = nb;
}
static df__rv_msg *df__rv_msg_new(df__rendezvous *rv) {
    df__rv_msg *m = rv->free_msgs;
    if (m) rv->free_msgs = m->next;
    else m = (df__rv_msg *)DF_MALLOC(sizeof *m);
    if (m) memset(m, 0, sizeof *m);
    return m;
}
/* Pops the head of the entry at *p (the caller holds the lock); drops the entry when empty. */
static df__rv_msg *df__rv_pop(df__rendezvous *rv, df__rv_entry **p) {
    df__rv_entry *e = *p;
    df__rv_msg *m = e->head;
    if (!(e->head = m->next)) {
        *p = e->next;
        e->next = rv->free_entries;
        rv->free_entries = e;
        rv->n_entries--;
    }
    return m;
}
/* Appends m under (key, frame, iteration) (the caller holds the lock). 0 on OOM. */
static int df__rv_push(df__rendezvous *rv, df__rv_entry **p, int32_t key, uint64_t fid, int64_t iter,
                       int recvs, df__rv_msg *m) {
    df__rv_entry *e = *p;
    if (!e) {
        if ((e = rv->free_entries) != NULL) rv->free_entries = e->next;
        else if (!(e = (df__rv_entry *)DF_MALLOC(sizeof *e))) return 0;
        e->key = key; e->frame_id = fid; e->iter = iter; e->recvs = recvs;
        e->head = e->tail = NULL;
        e->next = NULL;
        *p = e;
        if (++rv->n_entries > 2 * rv->n_buckets) df__rv_rehash(rv);
    }
    m->next = NULL;
    if (e->tail && e->head) e->tail->next = m;
    else e->head = m;
    e->tail = m;
    return 1;
}
/* Sends a value (t's reference is taken; NULL and dead for a dead value). A Recv already
   waiting comes back in *wake for the caller to resume. */
DF_PRIVATE df_code df__rv_send(df__rendezvous *rv, int32_t key, uint64_t fid, int64_t iter, df_tensor *t, int dead,
                           df__wake *wake, df_status *st) {
    memset(wake, 0, sizeof *wake);
    df__spin_lock(&rv->lock);
    if (rv->aborted) {
        df__spin_unlock(&rv->lock);
        df_tensor_release(t);
        return df_status_set(st, DF_ABORTED, "The run was aborted: %s", rv->status.message);
    }
    df__rv_entry **p = df__rv_slot(rv, key, fid, iter);
    if (*p && (*p)->recvs) {
        df__rv_msg *m = df__rv_pop(rv, p);
        wake->step = m->step; wake->tag = m->tag; wake->t = t; wake->dead = dead || !t; wake->failed = 0;
        m->next = rv->free_msgs;
        rv->free_msgs = m;
        df__spin_unlock(&rv->lock);
        return DF_OK;
    }
    df__rv_msg *m = df__rv_msg_new(rv);
    if (!m || !df__rv_push(rv, p, key, fid, iter, 0, m)) {
        if (m) { m->next = rv->free_msgs; rv->free_msgs = m; }
        df__spin_unlock(&rv->lock);
        df_tensor_release(t);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in the rendezvous");
    }
    m->t = t;
    m->dead = dead || !t;
    df__spin_unlock(&rv->lock);
    return DF_OK;
}
/* A Recv: 1 with the value in *t (NULL and *dead when dead), 0 when it now waits (it is
   resumed through a wake), -1 with st set when the run was aborted or memory ran out. */
static int df__rv_recv(df__rendezvous *rv, int32_t key, uint64_t fid, int64_t iter, df__step *s,
                       const df__tagged *tag, df_tensor **t, int *dead, df_status *st) {
    df__spin_lock(&rv->lock);
    if (rv->aborted) {
        df__spin_unlock(&rv->lock);
        df_status_set(st, DF_ABORTED, "The run was aborted: %s", rv->status.message);
        return -1;
    }
    df__rv_entry **p = df__rv_slot(rv, key, fid, iter);
    if (*p && !(*p)->recvs) {
        df__rv_msg *m = df__rv_pop(rv, p);
        *t = m->t;
        *dead = m->dead;
        m->next = rv->free_msgs;
        rv->free_msgs = m;
        df__spin_unlock(&rv->lock);
        return 1;
    }
    df__rv_msg *m = df__rv_msg_new(rv);
    if (!m || !df__rv_push(rv, p, key, fid, iter, 1, m)) {
        if (m) { m->next = rv->free_msgs; rv->free_msgs = m; }
        df__spin_unlock(&rv->lock);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in the rendezvous");
        return -1;
    }
    m->step = s;
    m->tag = *tag;
    df__spin_unlock(&rv->lock);
    return 0;
}
/* Marks the rendezvous aborted and returns every waiting Recv as a list (the caller fails
   them); values still queued are released. */
DF_PRIVATE df__rv_msg *df__rv_abort(df__rendezvous *rv, const df_status *why) {
    df__rv_msg *waiting = NULL;
    df__spin_lock(&rv->lock);
    if (!rv->aborted) { rv->status = *why; rv->aborted = 1; }
    for (int i = 0; i < rv->n_buckets; i++)
        while (rv->buckets[i]) {
            df__rv_msg *m = df__rv_pop(rv, &rv->buckets[i]);
            if (m->step) { m->next = waiting; waiting = m; }
            else { df_tensor_release(m->t); m->next = rv->free_msgs; rv->free_msgs = m; }
        }
    df__spin_unlock(&rv->lock);
    return waiting;
}
DF_PRIVATE void df__rv_free(df__rendezvous *rv) {
    for (int i = 0; i < rv->n_buckets; i++)
        while (rv->buckets[i]) {
            df__rv_msg *m = df__rv_pop(rv, &rv->buckets[i]);
            df_tensor_release(m->t);
            DF_FREE(m);
        }
    for (df__rv_entry *e = rv->free_entries, *n; e; e = n) { n = e->next; DF_FREE(e); }
    for (df__rv_msg *m = rv->free_msgs, *n; m; m = n) { n = m->next; DF_FREE(m); }
    DF_FREE(rv->buckets);
    memset(rv, 0, sizeof *rv);
}

DF_PRIVATE void df__k_send(df__kctx *c) {
    df__step *s = c->step;
    if (!s->group || c->aux < 0) {
        df__fail(c->st, c->node, DF_FAILED_PRECONDITION, "_Send runs only in a partition the session made");
        return;
    }
    const df__iter *it = c->tag->iter;
    df_tensor *v = NULL;
    if (!c->dead) { v = c->in[0]; c->in[0] = NULL; }        /* the rendezvous takes the reference */
    /* The value goes in the memory its Recv gives out: from a GPU's memory through the host,
       into a GPU's memory from the host (the copy is queued before anything can read it). */
    if (v && s->group->remote) {
#ifdef DATAFLOW_CUDA
        /* A worker's step: its Recv may be in another process (the bytes go from host memory to
           the wire), and _recv_memory numbers the master's partitions, not this group's; the
           value goes out in pinned host memory and a Recv that gives device memory copies it
           there (df__recv_to_device). */
        if (df__tensor_gpu(v)) {
            df_tensor *h = df__to_host_pinned(s->device, v, c->st);
            df_tensor_release(v);
            if (!(v = h)) return;
        }
#endif
    } else if (v && c->xfer >= 0 && c->xfer / 2 < s->group->n_steps) {
        df__device *dst = s->group->steps[c->xfer / 2].device;
        int dst_dev = (c->xfer & 1) && !dst->host_memory;
        if (c->gpu && !(dst_dev && dst == s->device)) {
            df_tensor *h = df__to_host(s->device, v, c->st);
            df_tensor_release(v);
            if (!(v = h)) return;
        }
        if (dst_dev && !(c->gpu && dst == s->device)) {
            df_tensor *d = df__to_device(dst, v, c->st);
            df_tensor_release(v);
            if (!(v = d)) return;
        }
    }
    if (s->group->remote) {
        df_status rs;
        df_status_clear(&rs);
        if (df__remote_send(s->group, c->aux, it->frame->id, it->num, v, c->dead || !v, &rs)) {
            if (rs.code) df__fail(c->st, c->node, rs.code, "%s", rs.message);
            return;
        }
    }
    df__wake w;
    if (df__rv_send(&s->group->rv, c->aux, it->frame->id, it->num, v, c->dead || !v, &w, c->st) != DF_OK) return;
    if (w.step) df__wake_dispatch(&w);
}
DF_PRIVATE void df__k_recv(df__kctx *c) {
    df__step *s = c->step;
    if (!s->group || c->aux < 0) {
        df__fail(c->st, c->node, DF_FAILED_PRECONDITION, "_Recv runs only in a partition the session made");
        return;
    }
    const df__iter *it = c->tag->iter;
    df_tensor *t = NULL;
    int dead = 0;
    int r = df__rv_recv(&s->group->rv, c->aux, it->frame->id, it->num, s, c->tag, &t, &dead, c->st);
    if (r == 0) c->pending = 1;
    else if (r > 0) { c->out[0] = df__recv_to_device(s, c->gpu != NULL, t, c->st); c->out_dead = dead; }
}

/* A value a Recv gives out in device memory (`devmem`: a _Recv on a GPU) that arrived in host
   memory (from another process, or from a Send of a worker's step, which leaves values on the
   host) is copied to the Recv's device: host -> device, never a device pointer read on the
   host. Takes t; NULL with st set when the copy fails. */
DF_PRIVATE df_tensor *df__recv_to_device(df__step *s, int devmem, df_tensor *t, df_status *st) {
#ifdef DATAFLOW_CUDA
    if (t && devmem && !s->device->host_memory && !df__tensor_gpu(t) && t->dtype != DF_RESOURCE && t->dtype != DF_VARIANT) {
        df_tensor *d = df__to_device(s->device, t, st);
        df_tensor_release(t);
        return d;
    }
#else
    DF__UNUSED(s); DF__UNUSED(devmem); DF__UNUSED(st);
#endif
    return t;
}

int df_rendezvous_key(const df_node *n, uint64_t frame_id, int64_t iter, char *buf, size_t size) {
    if (!n || !(n->op->flags & DF__OP_TRANSFER)) return -1;
    return snprintf(buf, buf ? size : 0, "%s;%016llx;%s;%s;%llu:%lld", df__attr_s(n, "send_device"),
                    (unsigned long long)df__attr_i(n, "send_device_incarnation", 0), df__attr_s(n, "recv_device"),
                    df__attr_s(n, "tensor_name"), (unsigned long long)frame_id, (long long)iter);
}
