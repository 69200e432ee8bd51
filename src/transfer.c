/* ==========================================================================================
   src/transfer.c: Transfers: _Send and _Recv                                      >>transfer
   _Send and _Recv run even when their input is dead, so the dead bit crosses devices too. A
   Send hands its value to the run's rendezvous (or to a worker in another process), keyed by
   (edge, frame, iteration); its Recv takes it, in the memory of the Recv's device.
   ========================================================================================== */
static void df__k_send(df__kctx *c) {
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
    if (v && c->xfer >= 0 && c->xfer / 2 < s->group->n_steps) {
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
static void df__k_recv(df__kctx *c) {
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
    else if (r > 0) { c->out[0] = t; c->out_dead = dead; }
}

int df_rendezvous_key(const df_node *n, uint64_t frame_id, int64_t iter, char *buf, size_t size) {
    if (!n || !(n->op->flags & DF__OP_TRANSFER)) return -1;
    return snprintf(buf, buf ? size : 0, "%s;%016llx;%s;%s;%llu:%lld", df__attr_s(n, "send_device"),
                    (unsigned long long)df__attr_i(n, "send_device_incarnation", 0), df__attr_s(n, "recv_device"),
                    df__attr_s(n, "tensor_name"), (unsigned long long)frame_id, (long long)iter);
}
