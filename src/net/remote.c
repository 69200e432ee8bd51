/* ==========================================================================================
   src/net/remote.c: Sessions with workers                                           >>remote
   A session with workers (df_session_options.target)
   The session's devices are the workers' (/job:worker/replica:0/task:N/device:CPU:i, task N
   the N-th address of the target). Every plan is partitioned by device, so by worker too,
   and
   each partition is registered with its worker (its GraphDef, its device, the names of its
   feeds and fetches). A run sends each worker a RUN_STEP with its partitions' feeds and
   waits
   for every STEP_DONE. The first failure (an error, a connection that closes, a worker
   silent
   longer than worker_timeout_ms) is sent to the other workers as an ABORT and ends the run;
   a worker that does not answer the ABORT within a second is given up. One run at a time per
   session: the connections carry one step each.
   ========================================================================================== */
struct df__cluster {
    int n;
    char (*addr)[64];
    char (*job)[32];                 /* each address's job ("worker" unless the target names one) */
    int *jtask;                      /* and its task in that job */
    df__wchan *ch;                   /* fd -1 once broken: runs then fail with DF_UNAVAILABLE */
    struct df__hmac_key *key;        /* the cluster key (NULL: none) */
    uint64_t *incarnation;
#ifdef DF__NET
    unsigned char id[DF__W_ID];      /* random: this master in handshakes */
    pthread_mutex_t mu;
#endif
    uint64_t next_step, salt;
    int timeout_ms;
    int cancelled;                   /* df_session_free began: runs in flight are aborted, new ones refused */
};

/* The session is being freed while runs may wait on workers (a TakeGradient, a dequeue on a
   ps): every run in flight sends its workers an ABORT (CANCELLED) within 50 ms and ends. */
DF_PRIVATE void df__cluster_cancel(struct df__cluster *c) {
    if (c) __atomic_store_n(&c->cancelled, 1, __ATOMIC_RELEASE);
}
DF_PRIVATE void df__cluster_close(struct df__cluster *c) {
    if (!c) return;
#ifdef DF__NET
    for (int t = 0; c->ch && t < c->n; t++)
        if (c->ch[t].fd >= 0) { df__w_send(&c->ch[t], DF__W_CLOSE, NULL); df__chan_close(&c->ch[t]); }
    pthread_mutex_destroy(&c->mu);
#endif
    DF_FREE(c->addr); DF_FREE(c->job); DF_FREE(c->jtask); DF_FREE(c->ch); DF_FREE(c->incarnation); DF_FREE(c->key);
    DF_FREE(c);
}

#ifdef DF__NET
/* One answer on fd within timeout_ms: its type and payload (or -1 with st set). */
static int df__cluster_await(df__wchan *ch, int timeout_ms, unsigned char **data, uint64_t *len, const char *who, df_status *st) {
    struct pollfd p = {ch->fd, POLLIN, 0};
    int r;
    do r = poll(&p, 1, timeout_ms); while (r < 0 && errno == EINTR);
    if (r == 0) { df_status_set(st, DF_UNAVAILABLE, "%s did not answer within %d ms", who, timeout_ms); return -1; }
    const char *why = NULL;
    char buf[160];
    int type = df__w_recv(ch, DF_MAX_MESSAGE_BYTES, data, len, &why, buf, sizeof buf);
    if (type <= 0) { df_status_set(st, DF_UNAVAILABLE, "%s closed the connection (%s)", who, type == 0 ? "it may have died" : why); return -1; }
    return type;
}
#endif

DF_PRIVATE df_code df__cluster_open(struct df_session *s, df_status *st) {
#ifndef DF__NET
    (void)s;
    return df_status_set(st, DF_UNIMPLEMENTED, "Sessions with workers need POSIX sockets and threads: build dataflow.c on its own without DF_NO_THREADS");
#else
    const char *target = s->opts.target;
    struct df__cluster *c = (struct df__cluster *)DF_MALLOC(sizeof *c);
    if (!c) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    s->cluster = c;
    c->timeout_ms = s->opts.worker_timeout_ms > 0 ? s->opts.worker_timeout_ms : 2000;
    c->salt = s->seed_salt << 20;
    {   /* step ids unique among masters: a worker shared by masters in other processes (between-graph
           replication) meets their TENSORs by step id, and their seed_salts may agree (no ASLR) */
        uint64_t r = 0;
        if (!df__random_bytes(&r, sizeof r)) c->salt ^= r << 20;
    }
    const char *key_path = df__key_path(s->opts.cluster_key_file);
    if (key_path && !(c->key = df__key_load(key_path, "df_session_new", st))) return st->code;
    if (c->key && df__random_bytes(c->id, sizeof c->id)) return df_status_set(st, DF_UNAVAILABLE, "df_session_new: no random numbers from the system");
    /* "h:p,h:p" (the worker job) or jobs by name, as TensorFlow's cluster spec: "ps=h:p;worker=h:p,h:p" */
    int n = 1;
    for (const char *p = target; *p; p++) n += *p == ',' || *p == ';';
    if (n > 1024) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: %d workers in the target, at most 1024", n);
    c->addr = (char (*)[64])DF_MALLOC((size_t)n * 64);
    c->job = (char (*)[32])DF_MALLOC((size_t)n * 32);
    c->jtask = (int *)DF_MALLOC((size_t)n * sizeof(int));
    c->ch = (df__wchan *)DF_MALLOC((size_t)n * sizeof(df__wchan));
    c->incarnation = (uint64_t *)DF_MALLOC((size_t)n * sizeof(uint64_t));
    if (!c->addr || !c->job || !c->jtask || !c->ch || !c->incarnation) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    for (int t = 0; t < n; t++) { c->ch[t].fd = -1; c->ch[t].k = NULL; c->ch[t].frame_ms = 0; }
    c->n = 0;
    for (const char *p = target;;) {
        const char *end = strchr(p, ';'), *eq = strchr(p, '=');
        const char *stop = end ? end : p + strlen(p), *list = p;
        char job[32] = "worker";
        if (eq && eq < stop) {                    /* "name=..." */
            size_t nl = (size_t)(eq - p);
            if (!nl || nl >= sizeof job) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: a job name in '%s' is empty or too long", target);
            memcpy(job, p, nl);
            job[nl] = '\0';
            for (size_t i = 0; i < nl; i++)
                if (!((job[i] >= 'a' && job[i] <= 'z') || (job[i] >= 'A' && job[i] <= 'Z') || (job[i] >= '0' && job[i] <= '9') || job[i] == '_' || job[i] == '-'))
                    return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: '%s' is not a job name (letters, digits, '_' and '-')", job);
            for (int t = 0; t < c->n; t++)
                if (!strcmp(c->job[t], job)) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: job '%s' named twice in '%s'", job, target);
            list = eq + 1;
        } else if (end || p != target) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: '%s' mixes jobs by name and a plain list", target);
        for (int k = 0;; k++) {
            const char *e = (const char *)memchr(list, ',', (size_t)(stop - list));
            size_t len = e ? (size_t)(e - list) : (size_t)(stop - list);
            if (!len || len >= 64) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: address %d of job '%s' in '%s' is empty or too long", k, job, target);
            memcpy(c->addr[c->n], list, len);
            c->addr[c->n][len] = '\0';
            snprintf(c->job[c->n], 32, "%s", job);
            c->jtask[c->n++] = k;
            if (!e) break;
            list = e + 1;
        }
        if (!end) break;
        p = end + 1;
    }
    n = c->n;
    int total = 0;
    for (int t = 0; t < n; t++) {              /* connect, HELLO: incarnation and devices */
        char err[256], who[96];
        snprintf(who, sizeof who, "Worker task %d (%s)", t, c->addr[t]);
        for (int attempt = 0;; attempt++) {   /* (dialled again when closed in the handshake: a worker under a
                                                  flood of connections closes the oldest; a silent one is not) */
            if ((c->ch[t].fd = df__connect(c->addr[t], c->timeout_ms, err, sizeof err)) < 0)
                return df_status_set(st, DF_UNAVAILABLE, "df_session_new: worker task %d: %s", t, err);
            /* a frame that stops halfway fails its read instead of blocking the master */
            int rcv_ms = c->timeout_ms > 1000 ? c->timeout_ms : 1000;
            struct timeval tv = {rcv_ms / 1000, (rcv_ms % 1000) * 1000};
            setsockopt(c->ch[t].fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            int closed = 0;
            if (!c->key || df__w_auth_client(&c->ch[t], c->key, DF__W_ROLE_MASTER, c->id, c->timeout_ms > 5000 ? c->timeout_ms : 5000, who, &closed, st) == DF_OK) break;
            df__chan_close(&c->ch[t]);
            if (!closed || attempt == 3) return st->code;
            df_status_clear(st);
            struct timespec ts = {0, 10000000L * (attempt + 1)};
            nanosleep(&ts, NULL);
        }
        df__wbuf b = {NULL, 0, 0, 0};
        df__wb_u32(&b, DF__W_VERSION);
        int sent = !b.oom && !df__w_send(&c->ch[t], DF__W_HELLO, &b);
        DF_FREE(b.p);
        unsigned char *data = NULL;
        uint64_t len = 0;
        int type = sent ? df__cluster_await(&c->ch[t], c->timeout_ms, &data, &len, who, st) : -1;
        if (type == DF__W_ERROR) {                /* (a keyed worker refuses a master without the key) */
            df__wread r = {data, (size_t)len, NULL};
            uint32_t code = df__wr_u32(&r, "code");
            char *msg = df__wr_str(&r, 4000, "message");
            df_status_set(st, df__peer_code(code), "%s refused the session: %s", who, msg ? msg : "?");
            DF_FREE(msg);
        }
        if (type != DF__W_HELLO_OK) {
            DF_FREE(data);
            if (!st->code) df_status_set(st, DF_UNAVAILABLE, "%s did not answer HELLO", who);
            return st->code;
        }
        df__wread r = {data, (size_t)len, NULL};
        c->incarnation[t] = df__wr_u64(&r, "incarnation");
        (void)df__wr_u32(&r, "task");
        uint32_t nd = df__wr_u32(&r, "devices");
        if (r.bad || nd == 0 || nd > 80) { DF_FREE(data); return df_status_set(st, DF_DATA_LOSS, "%s sent a malformed HELLO answer", who); }
        df__device **dv = (df__device **)DF_REALLOC(s->devices, (size_t)(total + (int)nd) * sizeof(df__device *));
        if (!dv) { DF_FREE(data); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
        s->devices = dv;
        for (uint32_t i = 0; i < nd; i++) {
            /* its devices by name: "CPU:k" or "GPU:k" (a worker that names none: CPU:i); index i
               is the device's number in REGISTER */
            char *name = r.n ? df__wr_str(&r, 95, "device name") : NULL;
            df__devspec ds;
            int gpu = name && df__parse_device(name, &ds) && !strcmp(ds.type, "GPU") && ds.index >= 0;
            int k = gpu ? ds.index : (int)i;
            DF_FREE(name);
            df__device *d = df__device_new_cpu((int)i, 1, st);   /* (never allocates: a name for the placer) */
            if (!d) { DF_FREE(data); return st->code; }
            snprintf(d->name, sizeof d->name, "/job:%s/replica:0/task:%d/device:%s:%d", c->job[t], c->jtask[t], gpu ? "GPU" : "CPU", k);
            if (gpu) {                        /* placed and partitioned as a GPU: its kernels, its memory types */
                memcpy(d->type, "GPU", 4);
                d->kernel_type = DF__DEV_GPU;
                d->host_memory = 0;
            }
            s->devices[total++] = d;
            s->n_devices = total;
        }
        DF_FREE(data);
        if (r.bad) return df_status_set(st, DF_DATA_LOSS, "%s sent a malformed HELLO answer (%s)", who, r.bad);
    }
    s->opts.cuda_graphs = 0;                  /* (the workers' business; not sent to them) */
    return DF_OK;
#endif
}

DF_PRIVATE df_code df__cluster_register(struct df_session *s, df__plan *plan, df_status *st) {
#ifndef DF__NET
    (void)s; (void)plan;
    return df_status_set(st, DF_UNIMPLEMENTED, "Sessions with workers need POSIX sockets");
#else
    struct df__cluster *c = s->cluster;
    pthread_mutex_lock(&c->mu);
    for (int p = 0; p < plan->n_parts && !st->code; p++) {
        df__part *pt = &plan->parts[p];
        int t = df__cluster_index(c->n, c->job, c->jtask, pt->dev->name);
        char who[96];
        snprintf(who, sizeof who, "Worker task %d (%s)", t, t >= 0 && t < c->n ? c->addr[t] : "?");
        if (t < 0 || t >= c->n) { df_status_set(st, DF_INTERNAL, "Partition %d is on %s, not on a worker", p, pt->dev->name); break; }
        if (c->ch[t].fd < 0) { df_status_set(st, DF_UNAVAILABLE, "%s: its connection broke earlier; make a new session", who); break; }
        pt->task = t;
        void *gd = NULL;
        size_t gl = 0;
        if (df_graph_export_graphdef(pt->g, &gd, &gl) != DF_OK) { df_status_set(st, DF_INTERNAL, "Partition %d does not export as a GraphDef", p); break; }
        df__wbuf b = {NULL, 0, 0, 0};
        df__wb_bytes(&b, gd, gl);
        free(gd);
        df__wb_u32(&b, (uint32_t)pt->dev->index);
        df__wb_u32(&b, (uint32_t)t);
        df__wb_u32(&b, (uint32_t)pt->n_feeds);
        for (int k = 0; k < pt->n_feeds; k++) df__wb_str(&b, pt->io_names[k]);
        df__wb_u32(&b, (uint32_t)pt->n_fetches);
        for (int k = 0; k < pt->n_fetches; k++) df__wb_str(&b, pt->io_names[pt->n_feeds + k]);
        df__wb_u32(&b, (uint32_t)c->n);           /* the cluster's jobs, by index: where its Sends go */
        for (int k = 0; k < c->n; k++) { df__wb_str(&b, c->job[k]); df__wb_u32(&b, (uint32_t)c->jtask[k]); }
        int sent = !b.oom && !df__w_send(&c->ch[t], DF__W_REGISTER, &b);
        DF_FREE(b.p);
        unsigned char *data = NULL;
        uint64_t len = 0;
        int type = sent ? df__cluster_await(&c->ch[t], 60000, &data, &len, who, st) : -1;
        /* a HEARTBEAT (the worker's to another master's step) may come first: skipped, a bounded
           number of times (a peer that only beats gets no answer from us forever) */
        for (int beats = 0; type == DF__W_HEARTBEAT && beats < 1000; beats++) {
            DF_FREE(data);
            data = NULL;
            type = df__cluster_await(&c->ch[t], 60000, &data, &len, who, st);
        }
        df__wread r = {data, (size_t)len, NULL};
        if (type == DF__W_REGISTERED) pt->handle = (int)df__wr_u32(&r, "handle");
        else if (type == DF__W_ERROR) {
            uint32_t code = df__wr_u32(&r, "code");
            char *msg = df__wr_str(&r, 4000, "message");
            df_status_set(st, df__peer_code(code), "%s cannot take partition %d: %s", who, p, msg ? msg : "?");
            DF_FREE(msg);
        } else if (!st->code) df_status_set(st, DF_UNAVAILABLE, "%s answered REGISTER with %s", who, type > 0 ? df__w_type_names[type] : "nothing");
        if (type < 0 || (type != DF__W_REGISTERED && type != DF__W_ERROR)) { df__chan_close(&c->ch[t]); }
        DF_FREE(data);
    }
    plan->registered = !st->code;
    pthread_mutex_unlock(&c->mu);
    return st->code;
#endif
}

#ifdef DF__NET
static void df__cluster_abort(struct df__cluster *c, uint64_t id, const unsigned char *pending, const df_status *why) {
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u64(&b, id);
    df__wb_u32(&b, (uint32_t)why->code);
    df__wb_str(&b, why->message);
    for (int t = 0; !b.oom && t < c->n; t++)
        if (pending[t] && c->ch[t].fd >= 0) df__w_send(&c->ch[t], DF__W_ABORT, &b);
    DF_FREE(b.p);
}
#endif

#ifdef DF__NET
/* A traced step's records after the fetches of worker t's STEP_DONE (src/net/worker.c,
   df__w_trace_put, has the layout) into the run's trace. Every count, length and number is
   checked before it is used: a broken worker's trace fails the run with DF_DATA_LOSS. */
static void df__cluster_trace_in(df__wread *rd, const df__plan *plan, int t, df__trace *tr, const char *who, df_status *fail) {
    const df__part **mine = (const df__part **)DF_MALLOC(((size_t)plan->n_parts + 1) * sizeof(df__part *));
    int np = 0;
    for (int p = 0; mine && p < plan->n_parts; p++) if (plan->parts[p].task == t) mine[np++] = &plan->parts[p];
    int64_t w_us = (int64_t)df__wr_u64(rd, "trace: start");
    uint32_t n = df__wr_u32(rd, "trace: records");
    const char *bad = mine ? rd->bad : "out of memory";
    if (!bad && (n > (1u << 24) || (uint64_t)n * 64 > rd->n)) bad = "trace: records";
    /* its clock onto the run's: the two unix start times (as aligned as the hosts' clocks are) */
    int64_t d_us = w_us - tr->start_unix_us;
    if (!bad && (w_us < 0 || d_us > ((int64_t)1 << 40) || d_us < -((int64_t)1 << 40))) bad = "trace: start time";
    for (uint32_t i = 0; !bad && i < n; i++) {
        uint32_t p = df__wr_u32(rd, "trace: partition");
        char *node = df__wr_str(rd, 4096, "trace: node");
        char *op = node ? df__wr_str(rd, 256, "trace: op") : NULL;
        char *frame = op ? df__wr_str(rd, 4096, "trace: frame") : NULL;
        df_node_trace e;
        memset(&e, 0, sizeof e);
        uint32_t th = df__wr_u32(rd, "trace: thread");
        e.start_ns = (int64_t)df__wr_u64(rd, "trace: start");
        e.end_ns = (int64_t)df__wr_u64(rd, "trace: end");
        e.iter = (int64_t)df__wr_u64(rd, "trace: iteration");
        e.bytes = (int64_t)df__wr_u64(rd, "trace: bytes");
        uint32_t kind = df__wr_u32(rd, "trace: kind");
        e.flow = df__wr_u64(rd, "trace: flow");
        bad = rd->bad;
        if (!bad && p >= (uint32_t)np) bad = "trace: partition";
        if (!bad && th >= 1024) bad = "trace: thread";
        if (!bad && (e.start_ns < 0 || e.end_ns < e.start_ns || e.end_ns > ((int64_t)1 << 50))) bad = "trace: times";
        if (!bad && (e.iter < 0 || e.bytes < 0)) bad = "trace: iteration or bytes";
        if (!bad && (kind > DF_TRACE_RECV || (kind == DF_TRACE_OP) != (e.flow == 0))) bad = "trace: kind";
        if (!bad) {
            e.node = node; e.op = op; e.frame = frame;
            e.device = mine[p]->dev->name;   /* the master's full name for that device of the worker */
            e.thread = (int)th;
            e.kind = (int)kind;
            e.start_ns += d_us * 1000;
            e.end_ns += d_us * 1000;
            if (!df__trace_add_remote(tr, t, &e)) bad = "out of memory";
        }
        DF_FREE(node); DF_FREE(op); DF_FREE(frame);
    }
    DF_FREE(mine);
    if (bad && !fail->code && !strcmp(bad, "out of memory")) df_status_set(fail, DF_RESOURCE_EXHAUSTED, "Out of memory taking %s's trace", who);
    else if (bad && !fail->code) df_status_set(fail, DF_DATA_LOSS, "%s sent a malformed trace (%s)", who, bad);
}
#endif

DF_PRIVATE df_code df__cluster_run(struct df_session *s, df__plan *plan, df_tensor *const *feed_values, df_tensor **fetch_values,
                               int n_fetches, int timeout_ms, df__trace *trace, df_status *st) {
#ifndef DF__NET
    (void)s; (void)plan; (void)feed_values; (void)fetch_values; (void)n_fetches; (void)timeout_ms; (void)trace;
    return df_status_set(st, DF_UNIMPLEMENTED, "Sessions with workers need POSIX sockets");
#else
    struct df__cluster *c = s->cluster;
    if (!plan->registered) return df_status_set(st, DF_FAILED_PRECONDITION, "The run's partitions are not registered with the workers");
    double deadline = timeout_ms > 0 ? df__now_ms() + timeout_ms : 0;
    if (__atomic_load_n(&c->cancelled, __ATOMIC_ACQUIRE)) return df_status_set(st, DF_CANCELLED, "The session is being freed");
    pthread_mutex_lock(&c->mu);
    uint64_t id = c->salt + ++c->next_step;
    int n = c->n;
    unsigned char *pending = (unsigned char *)DF_MALLOC((size_t)n + 1);
    double *seen = (double *)DF_MALLOC(((size_t)n + 1) * sizeof(double));
    if (!pending || !seen) { pthread_mutex_unlock(&c->mu); DF_FREE(pending); DF_FREE(seen); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    memset(pending, 0, (size_t)n + 1);
    df_status first;
    df_status_clear(&first);
    for (int p = 0; p < plan->n_parts && !first.code; p++)     /* payload pointers stay in this process */
        for (int k = 0; k < plan->parts[p].n_feeds; k++)
            if (feed_values[plan->parts[p].feed_map[k]]->dtype == DF_VARIANT || feed_values[plan->parts[p].feed_map[k]]->dtype == DF_RESOURCE) {
                df_status_set(&first, DF_UNIMPLEMENTED, "Feed %d is a %s, which cannot be sent to a worker", plan->parts[p].feed_map[k],
                              feed_values[plan->parts[p].feed_map[k]]->dtype == DF_RESOURCE ? "resource handle (state of this process)"
                              : "variant tensor (a TensorList or Optional)");
                break;
            }
    /* RUN_STEP to every worker with partitions */
    for (int t = 0; t < n && !first.code; t++) {
        int np = 0;
        for (int p = 0; p < plan->n_parts; p++) np += plan->parts[p].task == t;
        if (!np) continue;
        if (c->ch[t].fd < 0) { df_status_set(&first, DF_UNAVAILABLE, "Worker task %d (%s): its connection broke earlier; make a new session", t, c->addr[t]); break; }
        df__wbuf b = {NULL, 0, 0, 0};
        df__wb_u64(&b, id);
        df__wb_u64(&b, c->incarnation[t]);
        df__wb_u32(&b, (uint32_t)t | (trace ? DF__W_RUN_TRACE : 0u));   /* (a traced run asks for the records) */
        df__wb_u32(&b, (uint32_t)n);
        for (int k = 0; k < n; k++) df__wb_str(&b, c->addr[k]);
        df__wb_u32(&b, (uint32_t)np);
        for (int p = 0; p < plan->n_parts; p++) {
            const df__part *pt = &plan->parts[p];
            if (pt->task != t) continue;
            df__wb_u32(&b, (uint32_t)pt->handle);
            df__wb_u32(&b, (uint32_t)pt->n_feeds);
            for (int k = 0; k < pt->n_feeds; k++) df__wb_tensor(&b, feed_values[pt->feed_map[k]]);
        }
        if (b.oom) df_status_set(&first, DF_RESOURCE_EXHAUSTED, "Out of memory sending the feeds");
        else if (df__w_send(&c->ch[t], DF__W_RUN_STEP, &b)) {
            df_status_set(&first, DF_UNAVAILABLE, "Worker task %d (%s) cannot be reached: %s", t, c->addr[t], strerror(errno));
            df__chan_close(&c->ch[t]);
        } else { pending[t] = 1; seen[t] = df__now_ms(); }
        DF_FREE(b.p);
    }
    if (first.code) df__cluster_abort(c, id, pending, &first);
    /* the answers: fetches by partition, in plan order per worker */
    double aborted_at = first.code ? df__now_ms() : 0;
    struct pollfd *pf = (struct pollfd *)DF_MALLOC(((size_t)n + 1) * sizeof(struct pollfd));
    int *pt_of = (int *)DF_MALLOC(((size_t)n + 1) * sizeof(int));
    if (!pf || !pt_of) {                         /* (no way to wait: the workers are told to stop) */
        if (!first.code) { df_status_set(&first, DF_RESOURCE_EXHAUSTED, "Out of memory waiting for the workers"); df__cluster_abort(c, id, pending, &first); }
        for (int t = 0; t < n; t++) if (pending[t] && c->ch[t].fd >= 0) { df__chan_close(&c->ch[t]); pending[t] = 0; }
    }
    for (;;) {
        int np = 0;
        for (int t = 0; pf && pt_of && t < n; t++) if (pending[t]) { pf[np].fd = c->ch[t].fd; pf[np].events = POLLIN; pf[np].revents = 0; pt_of[np++] = t; }
        if (!np) break;
        int r = poll(pf, (nfds_t)np, 50);
        double now = df__now_ms();
        if (!first.code && __atomic_load_n(&c->cancelled, __ATOMIC_ACQUIRE)) {   /* df_session_free */
            df_status_set(&first, DF_CANCELLED, "The session was freed while this run waited on its workers");
            aborted_at = now;
            df__cluster_abort(c, id, pending, &first);
        }
        if (deadline > 0 && now > deadline && !first.code) {   /* the workers are told to stop */
            df__deadline_exceeded(&first, timeout_ms);
            aborted_at = now;
            df__cluster_abort(c, id, pending, &first);
        }
        for (int k = 0; r > 0 && k < np; k++) {
            if (!pf[k].revents) continue;
            int t = pt_of[k];
            char who[96];
            snprintf(who, sizeof who, "Worker task %d (%s)", t, c->addr[t]);
            unsigned char *data = NULL;
            uint64_t len = 0;
            const char *why = NULL;
            char buf[160];
            int type = df__w_recv(&c->ch[t], DF_MAX_MESSAGE_BYTES, &data, &len, &why, buf, sizeof buf);
            seen[t] = now;
            df_status fail;
            df_status_clear(&fail);
            if (type <= 0) {
                df_status_set(&fail, DF_UNAVAILABLE, "%s closed its connection during the step (%s)", who, type == 0 ? "it may have died" : why);
                df__chan_close(&c->ch[t]); pending[t] = 0;
            } else if (type == DF__W_STEP_DONE) {
                df__wread rd = {data, (size_t)len, NULL};
                uint64_t sid = df__wr_u64(&rd, "step");
                uint32_t code = df__wr_u32(&rd, "code");
                char *msg = df__wr_str(&rd, 4000, "message");
                uint32_t nf = df__wr_u32(&rd, "fetches");
                if (sid == id) {
                    pending[t] = 0;
                    if (code) df_status_set(&fail, df__peer_code(code), "%s", msg ? msg : "?");
                    int want = 0;
                    for (int p = 0; p < plan->n_parts; p++) if (plan->parts[p].task == t) want += plan->parts[p].n_fetches;
                    if (!code && !rd.bad && nf != (uint32_t)want) df_status_set(&fail, DF_DATA_LOSS, "%s sent %u fetches, %d expected", who, nf, want);
                    for (int p = 0; !fail.code && !rd.bad && p < plan->n_parts; p++) {
                        const df__part *pt = &plan->parts[p];
                        if (pt->task != t) continue;
                        for (int q = 0; q < pt->n_fetches && !rd.bad; q++) {
                            df_tensor *v = df__wr_u32(&rd, "fetch") ? df__wr_tensor(&rd, "fetch") : NULL;
                            int to = pt->fetch_map[q];
                            if (v && to < n_fetches && !fetch_values[to]) fetch_values[to] = v;
                            else df_tensor_release(v);
                        }
                    }
                    if (rd.bad && !fail.code) df_status_set(&fail, DF_DATA_LOSS, "%s sent a malformed STEP_DONE (%s)", who, rd.bad);
                    /* a traced run: the worker's records follow its fetches (none from a worker
                       that does not know the flag, or that failed before its step began) */
                    if (trace && !rd.bad && rd.n && (code || !fail.code)) df__cluster_trace_in(&rd, plan, t, trace, who, &fail);
                }
                DF_FREE(msg);
            } else if (type != DF__W_HEARTBEAT && type != DF__W_ERROR) {
                df_status_set(&fail, DF_DATA_LOSS, "%s sent %s during a step", who, df__w_type_names[type]);
            } else if (type == DF__W_ERROR) {
                df__wread rd = {data, (size_t)len, NULL};
                uint32_t code = df__wr_u32(&rd, "code");
                char *msg = df__wr_str(&rd, 4000, "message");
                df_status_set(&fail, df__peer_code(code), "%s: %s", who, msg ? msg : "?");
                DF_FREE(msg);
                pending[t] = 0;
            }
            DF_FREE(data);
            if (fail.code && !first.code) { first = fail; aborted_at = now; df__cluster_abort(c, id, pending, &first); }
        }
        for (int t = 0; t < n; t++) {              /* silence: a stopped or hung worker */
            if (!pending[t]) continue;
            double limit = first.code ? 1000.0 : (double)c->timeout_ms;
            double since = first.code ? now - aborted_at : now - seen[t];   /* (after an ABORT, heartbeats do not count) */
            if (since <= limit) continue;
            df_status fail;
            df_status_set(&fail, DF_UNAVAILABLE, "Worker task %d (%s) was silent for %.0f ms during the step (stopped, hung or unreachable)", t, c->addr[t], since);
            df__chan_close(&c->ch[t]); pending[t] = 0;
            if (!first.code) { first = fail; aborted_at = now; df__cluster_abort(c, id, pending, &first); }
        }
    }
    DF_FREE(pf); DF_FREE(pt_of); DF_FREE(pending); DF_FREE(seen);
    pthread_mutex_unlock(&c->mu);
    if (first.code) {
        *st = first;
        for (int i = 0; i < n_fetches; i++) { df_tensor_release(fetch_values[i]); fetch_values[i] = NULL; }
    }
    return st->code;
#endif
}
