/* ==========================================================================================
   src/net/worker.c: The worker                                                      >>worker
   The worker.
   A worker holds a session of its own (its devices; each master connection's variables, queues
   and random state in a scope of its own, shared only through a named container), the
   partitions masters registered, and the steps running now. Connections wait in the accept
   thread's poll until they prove the cluster key (src/net/wire.c), then get a thread each (and
   a follower: the threads of a connection take turns reading it). A RUN_STEP runs the named
   partitions as one group on the thread that read it, a follower reading the connection
   meanwhile; a Send whose Recv lives in another worker
   goes to that worker as a TENSOR message (on a connection the sender opens), where it meets
   its Recv through the step's rendezvous, keyed as in one process (key, frame, iteration). A
   step ends with a STEP_DONE to the master; an ABORT from the master ends it early. A value a
   waiting Recv takes resumes its partition on the thread that read the value.
   ========================================================================================== */
#ifdef DF__NET
typedef struct df__wreg {            /* a registered partition */
    df_graph *g;
    df__exec *x;
    df__device *dev;
    int n_feeds, n_fetches;
    df_output *feeds;                /* what a feed must be (dtype, static shape) */
    int32_t *remote_keys, *remote_tasks;   /* its Sends to other workers: key -> task */
    int n_remote;
    int32_t *recv_keys;              /* its Recvs: key -> the dtype a value must have */
    df_dtype *recv_types;
    int n_recv;
    const void *owner;               /* the connection that registered it: it goes with it */
    int refs;                        /* the registry's, plus each step running it (worker lock) */
} df__wreg;
static void df__wreg_free(df__wreg *r) {
    if (!r) return;
    df__exec_free(r->x);
    df_graph_free(r->g);
    DF_FREE(r->feeds); DF_FREE(r->remote_keys); DF_FREE(r->remote_tasks); DF_FREE(r->recv_keys); DF_FREE(r->recv_types);
    DF_FREE(r);
}
typedef struct df__wpeer { df__wchan ch; pthread_mutex_t mu; char addr[64]; } df__wpeer;
typedef struct df__wpending {       /* a TENSOR whose step has not started here yet */
    uint64_t step, fid, iter;
    int32_t key;
    int dead;
    df_tensor *t;
    time_t when;
    struct df__wpending *next;
} df__wpending;
typedef struct df__wstep {           /* a step running on this worker */
    uint64_t id;
    struct df_worker *w;
    df__pgroup g;
    int refs;                        /* deliveries in progress (under the worker's lock) */
    int32_t *keys, *tasks;           /* remote Sends of its partitions */
    int n_keys;
    int32_t *rkeys;                  /* its Recvs and the dtypes they take */
    df_dtype *rtypes;
    int n_rkeys;
    char (*cluster)[64];             /* the workers' addresses for this step, by task */
    int n_cluster;
    struct df__wconn *conn;          /* the master's connection, which it answers on */
    struct df__wstep *next;
} df__wstep;
#endif

struct df_worker {
    df_worker_options opts;
    uint64_t incarnation;
    int port;
#ifdef DF__NET
    int listen_fd, wake[2];          /* wake: df_worker_stop's byte ends the accept thread's poll */
    int stopping;
    pthread_t accept_thread, beat_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_conns;                     /* connection threads alive, plus step threads */
    int n_waiting;                   /* threads inside df_worker_wait (df_worker_stop waits for them) */
    int *conn_fds;                   /* open connections (-1: free slot), closed on stop */
    int cap_conns;
    df_graph *empty;                 /* the worker session's own (empty) graph */
    df_session *sess;
    df__wreg **regs;                 /* (pointers: a step copies the ones it runs) */
    int n_regs, cap_regs;
    df__wstep *steps;                /* running */
    df__wpending *pending;           /* TENSORs that came before their step */
    int n_pending;                   /* (at most DF__W_PENDING_MAX of them, DF__W_PENDING_BYTES in all) */
    uint64_t pending_bytes;
    df__wpeer **peers;               /* outgoing connections to other workers, by address */
    int n_peers, cap_peers;
    struct df__hmac_key *key;        /* the cluster key (NULL: none) */
    unsigned char id[DF__W_ID];      /* random: this worker in handshakes, both ways */
    struct df__wshake *shakes;       /* connections in their handshake (the accept thread's) */
    int n_shakes, cap_shakes, evicted;
    double evict_logged;
    uint64_t next_conn;
    pthread_cond_t beat_cv;          /* the heartbeat thread's (broadcast on stop only) */
#endif
};

#ifdef DF__NET
static void df__w_log(const df_worker *w, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (w->opts.log) w->opts.log(w->opts.log_user, line);
    else fprintf(stderr, "dataflow worker :%d: %s\n", w->port, line);
}
typedef struct df__wconn {
    df_worker *w;
    df__wchan ch;
    int slot, refs, has_first;
    uint32_t role;
    uint64_t id;
    char peer[64];
    unsigned char first[DF__W_HEADER];  /* (has_first: its first header, read by the handshake poller) */
    pthread_mutex_t wmu;
    /* Leader and followers: the threads of a connection take turns reading it. The reader that
       reads a RUN_STEP (or a value a waiting Recv takes) hands the reading to a follower and runs
       the step (or the Recv's partition) itself, on the thread that read it: no hop to another
       thread on the step's path, and the connection is still read (an ABORT) meanwhile. */
    pthread_mutex_t lmu;
    pthread_cond_t lcv;
    int reading, idle, threads, closing;   /* (under lmu) reading: a thread reads; idle: followers waiting */
} df__wconn;
/* An answer on c (its writers take turns); -1 when it cannot be sent (or b ran out of memory). */
static int df__w_answer(df__wconn *c, int type, const df__wbuf *b) {
    if (b && b->oom) return -1;
    pthread_mutex_lock(&c->wmu);
    int r = df__w_send(&c->ch, type, b);
    pthread_mutex_unlock(&c->wmu);
    return r;
}
static int df__w_reply_error(df__wconn *c, df_code code, const char *msg) {
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u32(&b, (uint32_t)code);
    df__wb_str(&b, msg);
    int r = df__w_answer(c, DF__W_ERROR, &b);
    DF_FREE(b.p);
    return r;
}
/* The connection thread and each step it started hold a reference; the last closes the socket. */
static void df__w_conn_release(df__wconn *c) {
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL)) return;
    df__session_drop_scope(c->w->sess, c->id);   /* its variables and queues: no step of c runs now */
    df__chan_close(&c->ch);
    pthread_mutex_destroy(&c->wmu);
    pthread_mutex_destroy(&c->lmu);
    pthread_cond_destroy(&c->lcv);
    DF_FREE(c);
}

/* "/job:worker/replica:0/task:N/device:CPU:i": N, or -1 */
DF_PRIVATE int df__task_of(const char *dev) {
    df__devspec ds;
    return dev && df__parse_device(dev, &ds) ? ds.task : -1;
}

/* The cluster index of device dev: the address whose job and task it names (a device that
   names no job is the worker job's); -1 when none. */
DF_PRIVATE int df__cluster_index(int n, const char (*job)[32], const int *jtask, const char *dev) {
    df__devspec ds;
    if (!dev || !df__parse_device(dev, &ds)) return -1;
    const char *j = ds.job[0] ? ds.job : "worker";
    int task = ds.task < 0 ? 0 : ds.task;
    for (int t = 0; t < n; t++) if (jtask[t] == task && !strcmp(job[t], j)) return t;
    return -1;
}

/* REGISTER: GraphDef, device index, this worker's index in the cluster, feed names, fetch
   names, then (optional) the cluster's jobs by index: u32 n, n x (job, task) -> handle */
static df_code df__w_register(df_worker *w, const void *owner, df__wread *r, int *handle, df_status *st) {
    size_t gl = 0;
    const unsigned char *gd = df__wr_bytes(r, &gl, "REGISTER: graph");
    uint32_t dev_i = df__wr_u32(r, "REGISTER: device"), task = df__wr_u32(r, "REGISTER: task"), nf = df__wr_u32(r, "REGISTER: feeds");
    if (r->bad) return DF_OK;
    if (nf > 1u << 16) { r->bad = "REGISTER: feeds"; return DF_OK; }
    char **names = (char **)DF_MALLOC(((size_t)nf + (1u << 16) + 1) * sizeof(char *));
    if (!names) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    uint32_t n = 0, no = 0;
    for (; n < nf && !r->bad; n++) names[n] = df__wr_str(r, 4096, "REGISTER: feed name");
    if (!r->bad) no = df__wr_u32(r, "REGISTER: fetches");
    if (no > 1u << 16) r->bad = "REGISTER: fetches";
    for (uint32_t k = 0; k < no && !r->bad; k++, n++) names[n] = df__wr_str(r, 4096, "REGISTER: fetch name");
    uint32_t nj = 0;
    char (*jobs)[32] = NULL;
    int *jtasks = NULL;
    if (!r->bad && r->n) {                       /* the jobs (a master of jobs by name sends them) */
        nj = df__wr_u32(r, "REGISTER: jobs");
        if (!r->bad && (nj == 0 || nj > 4096)) r->bad = "REGISTER: jobs";
        if (!r->bad && (!(jobs = (char (*)[32])DF_MALLOC((size_t)nj * 32)) || !(jtasks = (int *)DF_MALLOC((size_t)nj * sizeof(int))))) r->bad = "out of memory";
        for (uint32_t k = 0; k < nj && !r->bad; k++) {
            char *j = df__wr_str(r, 31, "REGISTER: job name");
            uint32_t jt = df__wr_u32(r, "REGISTER: job task");
            if (j) { snprintf(jobs[k], 32, "%s", j); DF_FREE(j); }
            if (!r->bad && jt > 1u << 20) r->bad = "REGISTER: job task";
            jtasks[k] = (int)jt;
        }
    }
    if (!r->bad && r->n) r->bad = "REGISTER: bytes after the jobs";
    df__wreg *reg = NULL;
    df_node **all = NULL;
    if (r->bad) goto done;
    if (dev_i >= (uint32_t)w->sess->n_devices) { df_status_set(st, DF_INVALID_ARGUMENT, "REGISTER: device %u, this worker has %d", dev_i, w->sess->n_devices); goto done; }
    if (!(reg = (df__wreg *)DF_MALLOC(sizeof *reg))) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); goto done; }
    memset(reg, 0, sizeof *reg);
    reg->owner = owner;
    reg->refs = 1;
    if (!(reg->g = df_graph_new()) || !(reg->feeds = (df_output *)DF_MALLOC(((size_t)n + 1) * sizeof(df_output)))) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); goto done; }
    df_graph *g = reg->g;
    g->internal_names = 1;                      /* (partitions: _Send, _Recv, _cloop/...) */
    if (df__gd_import(g, gd, gl, NULL, st)) goto done;
    for (uint32_t k = 0; k < n; k++) {          /* "node:index" */
        char *colon = strrchr(names[k], ':');
        int idx = colon ? atoi(colon + 1) : 0;
        if (colon) *colon = '\0';
        df_node *nd = df_graph_find(g, names[k]);
        if (!nd || idx < 0 || idx >= nd->n_outputs) { df_status_set(st, DF_INVALID_ARGUMENT, "REGISTER: no output '%s:%d' in the partition", names[k], idx); goto done; }
        reg->feeds[k] = (df_output){nd, idx};
    }
    if (!(all = (df_node **)DF_MALLOC(((size_t)g->n_nodes + 1) * sizeof(df_node *)))) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); goto done; }
    int n_all = 0, n_send = 0, n_recv = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        int fed = 0;
        for (uint32_t f = 0; f < nf && !fed; f++) fed = reg->feeds[f].node == g->nodes[i];
        if (!fed) all[n_all++] = g->nodes[i];
        const df_node *x = g->nodes[i];
        if (x->op->flags & DF__OP_TRANSFER) { if (x->n_inputs) n_send++; else n_recv++; }
    }
    reg->dev = w->sess->devices[dev_i]; reg->n_feeds = (int)nf; reg->n_fetches = (int)no;
    if (!(reg->x = df__compile(w->sess, g, reg->feeds, (int)nf, reg->feeds + nf, (int)no, all, n_all, reg->dev, st))) goto done;
    reg->remote_keys = (int32_t *)DF_MALLOC(((size_t)n_send + 1) * sizeof(int32_t));
    reg->remote_tasks = (int32_t *)DF_MALLOC(((size_t)n_send + 1) * sizeof(int32_t));
    reg->recv_keys = (int32_t *)DF_MALLOC(((size_t)n_recv + 1) * sizeof(int32_t));
    reg->recv_types = (df_dtype *)DF_MALLOC(((size_t)n_recv + 1) * sizeof(df_dtype));
    if (!reg->remote_keys || !reg->remote_tasks || !reg->recv_keys || !reg->recv_types) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); goto done; }
    for (int i = 0; i < g->n_nodes; i++) {      /* Sends to other workers; what each Recv takes */
        const df_node *x = g->nodes[i];
        if (!(x->op->flags & DF__OP_TRANSFER)) continue;
        if (!x->n_inputs) {
            reg->recv_keys[reg->n_recv] = (int32_t)df__attr_i(x, "_key", -1);
            reg->recv_types[reg->n_recv++] = x->out_types[0];
            continue;
        }
        int t = jobs ? df__cluster_index((int)nj, (const char (*)[32])jobs, jtasks, df__attr_s(x, "recv_device")) : df__task_of(df__attr_s(x, "recv_device"));
        if (t >= 0 && t != (int)task) {
            reg->remote_keys[reg->n_remote] = (int32_t)df__attr_i(x, "_key", -1);
            reg->remote_tasks[reg->n_remote++] = t;
        }
    }
    pthread_mutex_lock(&w->mu);
    if (w->n_regs < (1 << 20) && df__grow(&w->regs, &w->cap_regs, w->n_regs + 1, sizeof(df__wreg *))) { *handle = w->n_regs; w->regs[w->n_regs++] = reg; reg = NULL; }
    pthread_mutex_unlock(&w->mu);
    if (*handle < 0) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory (or too many registered partitions)");
done:
    df__wreg_free(reg);
    DF_FREE(jobs); DF_FREE(jtasks);
    for (uint32_t k = 0; k < n; k++) DF_FREE(names[k]);
    DF_FREE(names); DF_FREE(all);
    return st->code;
}

/* May this worker send tensors to addr? The addresses of --cluster when given; else those an
   authenticated master names; with no key, loopback addresses only (unless --insecure). */
static int df__w_peer_allowed(const df_worker *w, const char *addr) {
    if (!strncmp(addr, "mpi:", 4)) return 1;     /* (ranks of this MPI job) */
    if (w->opts.cluster) {
        size_t al = strlen(addr);
        for (const char *p = w->opts.cluster; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (len == al && !memcmp(p, addr, al)) return 1;
            p = e ? e + 1 : p + len;
        }
        return 0;
    }
    return w->key || w->opts.insecure || df__addr_is_loopback(addr);
}
/* Is a connection we opened still there? The other side never writes on it, so anything to
   read means it closed (the worker restarted: its new process does not know this one). */
static int df__w_peer_stale(int fd) {
    struct pollfd q = {fd, POLLIN, 0};
    int r;
    do r = poll(&q, 1, 0); while (r < 0 && errno == EINTR);
    return r != 0;
}
/* the peer connection to the worker at addr (opened on first use), locked; NULL with st set */
static df__wpeer *df__w_peer(df_worker *w, const char *addr, df_status *st) {
    if (!df__w_peer_allowed(w, addr)) {
        df_status_set(st, DF_PERMISSION_DENIED, "This worker sends tensors only to the workers of its cluster (%s), not to %s",
                      w->opts.cluster ? "--cluster" : "no key: loopback only", addr);
        return NULL;
    }
    pthread_mutex_lock(&w->mu);
    df__wpeer *p = NULL;
    for (int i = 0; i < w->n_peers && !p; i++) if (!strcmp(w->peers[i]->addr, addr)) p = w->peers[i];
    if (!p && w->n_peers < 4096 && df__grow(&w->peers, &w->cap_peers, w->n_peers + 1, sizeof(df__wpeer *)) &&
        (p = (df__wpeer *)DF_MALLOC(sizeof *p))) {
        p->ch.fd = -1;
        p->ch.k = NULL;
        p->ch.frame_ms = 0;
        snprintf(p->addr, sizeof p->addr, "%s", addr);
        pthread_mutex_init(&p->mu, NULL);
        w->peers[w->n_peers++] = p;
    }
    pthread_mutex_unlock(&w->mu);
    if (!p) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory (or too many peers) reaching %s", addr); return NULL; }
    pthread_mutex_lock(&p->mu);
    if (p->ch.fd >= 0 && df__w_peer_stale(p->ch.fd)) {   /* (closed by a restart: a new connection) */
        int fd = p->ch.fd;
        __atomic_store_n(&p->ch.fd, -1, __ATOMIC_RELEASE);
        close(fd);
        DF_FREE(p->ch.k);
        p->ch.k = NULL;
    }
    if (p->ch.fd < 0) {
        char err[256];
        df__wchan ch = {-1, NULL, 0};
        for (int attempt = 0; ch.fd < 0; attempt++) {   /* (dialled again when closed in the handshake) */
            if ((ch.fd = df__connect(addr, 1000, err, sizeof err)) < 0) {
                pthread_mutex_unlock(&p->mu);
                df_status_set(st, DF_UNAVAILABLE, "Worker %s cannot be reached: %s", addr, err);
                return NULL;
            }
            if (!w->key) break;
            char who[96];
            snprintf(who, sizeof who, "Worker %s", addr);
            struct timeval tv = {5, 0};
            setsockopt(ch.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            int closed = 0;
            df_status_clear(st);
            if (df__w_auth_client(&ch, w->key, DF__W_ROLE_WORKER, w->id, 5000, who, &closed, st) == DF_OK) break;
            df__chan_close(&ch);
            if (!closed || attempt == 3) { pthread_mutex_unlock(&p->mu); return NULL; }
            struct timespec ts = {0, 10000000L * (attempt + 1)};
            nanosleep(&ts, NULL);
        }
        p->ch.k = ch.k;
        __atomic_store_n(&p->ch.fd, ch.fd, __ATOMIC_RELEASE);   /* (df__w_stop_locked reads it unlocked) */
    }
    return p;
}
#endif /* DF__NET */

DF_PRIVATE int df__remote_send(df__pgroup *g, int32_t key, uint64_t fid, int64_t iter, df_tensor *v, int dead, df_status *st) {
#ifdef DF__NET
    df__wstep *ws = g->remote;
    int task = -1;
    for (int i = 0; i < ws->n_keys && task < 0; i++) if (ws->keys[i] == key) task = ws->tasks[i];
    if (task < 0) return 0;
    /* the frame header and the fixed fields in one buffer, the value's bytes from the tensor */
    int live = !dead && v;
    if (live && (v->dtype == DF_VARIANT || v->dtype == DF_RESOURCE)) {   /* its payloads (its state) live in this process */
        int res = v->dtype == DF_RESOURCE;
        df_tensor_release(v);
        df_status_set(st, DF_UNIMPLEMENTED, "A %s cannot be sent to another process (worker task %d)",
                      res ? "resource handle (state of this process: a variable, queue or array)" : "variant tensor (a TensorList or Optional)", task);
        return 1;
    }
    unsigned char head[DF__W_HEADER + DF__W_TENSOR_FIXED + 16 + 8 * DF_MAX_RANK];
    unsigned char *q = head + DF__W_HEADER;
    df__put64(q, ws->id); df__put32(q + 8, (uint32_t)key); df__put64(q + 12, fid); df__put64(q + 20, (uint64_t)iter);
    df__put32(q + 28, (uint32_t)!live);
    q += DF__W_TENSOR_FIXED;
    if (live) {
        df__put32(q, (uint32_t)v->dtype); df__put32(q + 4, (uint32_t)v->rank); q += 8;
        for (int d = 0; d < v->rank; d++, q += 8) df__put64(q, (uint64_t)v->dims[d]);
        df__put64(q, v->nbytes); q += 8;
    }
    size_t fixed = (size_t)(q - head);
    if (task >= ws->n_cluster) { df_tensor_release(v); df_status_set(st, DF_INVALID_ARGUMENT, "The master's RUN_STEP gave no address for worker task %d", task); return 1; }
    df__wpeer *p = df__w_peer(ws->w, ws->cluster[task], st);
    if (p) {
        if (df__w_send_parts(&p->ch, DF__W_TENSOR, head + DF__W_HEADER, fixed - DF__W_HEADER, live ? v->data : NULL, live ? v->nbytes : 0)) {
            int e = errno, fd = p->ch.fd;
            __atomic_store_n(&p->ch.fd, -1, __ATOMIC_RELEASE);
            close(fd);
            DF_FREE(p->ch.k);
            p->ch.k = NULL;
            df_status_set(st, DF_UNAVAILABLE, "Sending a tensor to worker task %d (%s) failed: %s", task, p->addr, strerror(e));
        }
        pthread_mutex_unlock(&p->mu);
    }
    df_tensor_release(v);
    return 1;
#else
    (void)g; (void)key; (void)fid; (void)iter; (void)v; (void)dead; (void)st;
    return 0;
#endif
}

#ifdef DF__NET
/* Resumes a Recv whose value came on the inter-op pool (the reader of its connection goes on
   reading), or here when the pool cannot take it. */
static void df__w_wake_on_pool(df__wake *wk) {
    df__wake *heap = (df__wake *)DF_MALLOC(sizeof *heap);
    df__task task;
    memset(&task, 0, sizeof task);
    task.step = wk->step;
    task.wake = heap;
    if (heap) *heap = *wk;
    if (!heap || !wk->step->pool || !df__pool_push(wk->step->pool, &task)) { DF_FREE(heap); df__wake_dispatch(wk); }
}
/* TENSOR: into its step's rendezvous (or kept until the step starts). Takes t. 1 when a Recv
   waited for it: *wk resumes it (df__wake_dispatch), after the caller dropped its hold on the
   step (the Recv holds the step open until it has run). */
static int df__w_deliver(df__wstep *ws, int32_t key, uint64_t fid, uint64_t iter, int dead, df_tensor *t, df__wake *wk) {
    int at = -1;
    for (int i = 0; i < ws->n_rkeys && at < 0; i++) if (ws->rkeys[i] == key) at = i;
    if (at < 0 || (t && t->dtype != ws->rtypes[at])) {     /* a value no Recv of the step takes */
        df_status why;
        if (at < 0) df_status_set(&why, DF_INVALID_ARGUMENT, "A value came for transfer key %d, which no Recv of this step on this worker has", (int)key);
        else df_status_set(&why, DF_INVALID_ARGUMENT, "A %s value came for transfer key %d, whose Recv takes %s", df_dtype_name(t->dtype), (int)key,
                           df_dtype_name(ws->rtypes[at]));
        df_tensor_release(t);
        df__group_abort(&ws->g, &why);
        return 0;
    }
    df_status st;
    return df__rv_send(&ws->g.rv, key, fid, (int64_t)iter, t, dead, wk, &st) == DF_OK && wk->step;
}
/* Drops values kept for steps that never came (after a minute; all of them when `all`).
   Called with the worker's lock held. */
enum { DF__W_PENDING_MAX = 65536 };
#define DF__W_PENDING_BYTES ((uint64_t)1 << 30)
static void df__w_pending_purge(df_worker *w, int all) {
    time_t now = time(NULL);
    for (df__wpending **q = &w->pending; *q;) {
        if (all || now - (*q)->when > 60) {
            df__wpending *o = *q;
            *q = o->next;
            w->n_pending--;
            w->pending_bytes -= o->t ? o->t->nbytes : 0;
            df_tensor_release(o->t);
            DF_FREE(o);
        } else q = &(*q)->next;
    }
}
/* The running step `id` (or, with `conn`, a step of that connection not aborted yet), held
   against its end until df__w_step_drop; NULL when there is none. */
static df__wstep *df__w_step_hold(df_worker *w, uint64_t id, const struct df__wconn *conn) {
    pthread_mutex_lock(&w->mu);
    df__wstep *ws = w->steps;
    while (ws && !(conn ? ws->conn == conn && !__atomic_load_n(&ws->g.aborted, __ATOMIC_ACQUIRE) : ws->id == id)) ws = ws->next;
    if (ws) ws->refs++;
    pthread_mutex_unlock(&w->mu);
    return ws;
}
static void df__w_step_drop(df_worker *w, df__wstep *ws) {
    pthread_mutex_lock(&w->mu);
    if (--ws->refs == 0) pthread_cond_broadcast(&w->cv);   /* (the step's end waits for none) */
    pthread_mutex_unlock(&w->mu);
}
static int df__w_let_go(df__wconn *c);
/* A value read on c for step id. A Recv that waits for it resumes on this thread, once a
   follower reads c in its place (then 1: this thread reads c no more); else on the pool. */
static int df__w_tensor_in(df__wconn *c, uint64_t id, int32_t key, uint64_t fid, uint64_t iter, int dead, df_tensor *t) {
    df_worker *w = c->w;
    pthread_mutex_lock(&w->mu);
    df__wstep *ws = w->steps;
    while (ws && ws->id != id) ws = ws->next;
    if (ws) ws->refs++;
    else {
        uint64_t bytes = t ? t->nbytes : 0;
        df__wpending *pd = w->n_pending < DF__W_PENDING_MAX && w->pending_bytes + bytes <= DF__W_PENDING_BYTES ?
                           (df__wpending *)DF_MALLOC(sizeof *pd) : NULL;
        if (pd) {
            pd->step = id; pd->key = key; pd->fid = fid; pd->iter = iter; pd->dead = dead; pd->t = t; pd->when = time(NULL);
            pd->next = w->pending;
            w->pending = pd;
            w->n_pending++;
            w->pending_bytes += bytes;
            t = NULL;
        } else df__w_log(w, "dropping a value for step %llu, which has not started here: %d values (%llu bytes) wait already",
                         (unsigned long long)id, w->n_pending, (unsigned long long)w->pending_bytes);
        df__w_pending_purge(w, 0);
    }
    pthread_mutex_unlock(&w->mu);
    if (!ws) { df_tensor_release(t); return 0; }
    df__wake wk;
    int woke = df__w_deliver(ws, key, fid, iter, dead, t, &wk);
    df__w_step_drop(w, ws);
    if (!woke) return 0;
    if (df__w_let_go(c)) { df__wake_dispatch(&wk); return 1; }
    df__w_wake_on_pool(&wk);
    return 0;
}
/* A TENSOR frame's payload read from the socket: the fixed fields, then the value's bytes
   straight into the tensor's own memory (no copy of a large value). 0, or -1 with *why; *gone
   set when this thread handed the reading of c on (df__w_tensor_in). */
static int df__w_tensor_stream(df__wconn *c, uint64_t len, const char **why, int *gone) {
    unsigned char fx[DF__W_TENSOR_FIXED + 16 + 8 * DF_MAX_RANK];
    if (len < DF__W_TENSOR_FIXED) { *why = "TENSOR: step"; return -1; }
    if (len <= 512) {                            /* small: the whole payload in one read, then decoded */
        unsigned char all[512];
        if (df__chan_read(&c->ch, all, (size_t)len)) { *why = "the connection broke inside a message"; return -1; }
        if (df__w_recv_end(&c->ch, why)) return -1;
        uint64_t id = df__get64(all), fid = df__get64(all + 12), iter = df__get64(all + 20);
        int32_t key = (int32_t)df__get32(all + 8);
        uint32_t dead = df__get32(all + 28);
        df_tensor *t = NULL;
        if (dead && len > DF__W_TENSOR_FIXED) { *why = "TENSOR: bytes after a dead value"; return -1; }
        if (!dead) {
            df__wread r = {all + DF__W_TENSOR_FIXED, (size_t)len - DF__W_TENSOR_FIXED, NULL};
            if (!(t = df__wr_tensor(&r, "TENSOR: value")) || r.n) { df_tensor_release(t); *why = r.bad ? r.bad : "TENSOR: the value's size and the frame's disagree"; return -1; }
        }
        *gone = df__w_tensor_in(c, id, key, fid, iter, (int)dead, t);
        return 0;
    }
    if (df__chan_read(&c->ch, fx, DF__W_TENSOR_FIXED)) { *why = "the connection broke inside a message"; return -1; }
    uint64_t id = df__get64(fx), fid = df__get64(fx + 12), iter = df__get64(fx + 20);
    int32_t key = (int32_t)df__get32(fx + 8);
    uint32_t dead = df__get32(fx + 28);
    uint64_t left = len - DF__W_TENSOR_FIXED;
    df_tensor *t = NULL;
    if (dead) { if (left) { *why = "TENSOR: bytes after a dead value"; return -1; } }
    else {
        if (left < 8 || df__chan_read(&c->ch, fx, 8)) { *why = "TENSOR: value"; return -1; }
        uint32_t dt = df__get32(fx), rank = df__get32(fx + 4);
        left -= 8;
        if (rank > DF_MAX_RANK || left < 8ull * rank + 8 || df__chan_read(&c->ch, fx + 8, 8ull * rank + 8)) { *why = "TENSOR: value"; return -1; }
        left -= 8ull * rank + 8;
        int64_t dims[DF_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++) {
            uint64_t v = df__get64(fx + 8 + 8 * d);
            if (v > (uint64_t)INT64_MAX) { *why = "TENSOR: value"; return -1; }
            dims[d] = (int64_t)v;
        }
        uint64_t nbytes = df__get64(fx + 8 + 8 * rank);
        if (nbytes != left) { *why = "TENSOR: the value's size and the frame's disagree"; return -1; }
        df_status st;
        if (dt == DF_STRING) {                   /* small as a rule: through the checked decoder */
            unsigned char *buf = (unsigned char *)DF_MALLOC((size_t)(16 + 8 * rank + nbytes) + 1);
            if (!buf) { *why = "out of memory for a message"; return -1; }
            memcpy(buf, fx, 16 + 8 * rank);
            if (df__chan_read(&c->ch, buf + 8 + 8 * rank + 8, (size_t)nbytes)) { DF_FREE(buf); *why = "the connection broke inside a message"; return -1; }
            df__wread r = {buf, (size_t)(16 + 8 * rank + nbytes), NULL};
            t = df__wr_tensor(&r, "TENSOR: value");
            DF_FREE(buf);
            if (!t) { *why = r.bad; return -1; }
        } else {
            int64_t n;
            size_t bytes;
            if (dt > 1000 || df__shape_check((df_dtype)dt, (int)rank, dims, &n, &bytes, 0, &st) != DF_OK || bytes != nbytes) { *why = "TENSOR: value"; return -1; }
            if (!(t = df__tensor_alloc(NULL, (df_dtype)dt, (int)rank, dims, &st))) { *why = "out of memory for a tensor"; return -1; }
            if (bytes && df__chan_read(&c->ch, t->data, bytes)) { df_tensor_release(t); *why = "the connection broke inside a message"; return -1; }
        }
    }
    if (df__w_recv_end(&c->ch, why)) { df_tensor_release(t); return -1; }   /* (delivered only once its MAC holds) */
    *gone = df__w_tensor_in(c, id, key, fid, iter, (int)dead, t);
    return 0;
}

/* RUN_STEP: step id, incarnation, this worker's task, the cluster, then per partition its
   handle and feeds. The step runs on a thread of its own and answers STEP_DONE. */
typedef struct df__wrun {
    df__wstep ws;
    df__wconn *c;
    int n_parts, n_feeds, n_fetch, n_held;
    df__wreg **regs;                 /* the partitions it runs, each held (n_held of them) */
    df_tensor **feeds, **fetches;
    df__trace *trace;                /* the master asked for the step's trace (DF__W_RUN_TRACE); else NULL */
} df__wrun;
static void df__wrun_free(df__wrun *run) {
    if (!run) return;
    df_worker *w = run->ws.w;
    pthread_mutex_lock(&w->mu);                  /* the partitions it held */
    for (int p = 0; run->regs && p < run->n_held; p++)
        if (run->regs[p] && --run->regs[p]->refs == 0) df__wreg_free(run->regs[p]);
    pthread_mutex_unlock(&w->mu);
    for (int k = 0; k < run->n_feeds; k++) df_tensor_release(run->feeds[k]);
    for (int k = 0; run->fetches && k < run->n_fetch; k++) df_tensor_release(run->fetches[k]);
    df__rv_free(&run->ws.g.rv);
    DF_FREE(run->ws.g.steps); DF_FREE(run->ws.keys); DF_FREE(run->ws.tasks); DF_FREE(run->ws.rkeys); DF_FREE(run->ws.rtypes); DF_FREE(run->ws.cluster);
    DF_FREE(run->regs); DF_FREE(run->feeds); DF_FREE(run->fetches);
    DF_FREE(run->trace);                         /* (a step that never ran: no records) */
    DF_FREE(run);
}
/* A traced step's records after its STEP_DONE's fetches: u64 the step's unix start (us), u32 n,
   then n records: u32 partition (its place in the RUN_STEP), node, op, frame (strings), u32
   thread (0: the thread that ran the step; others as they first appear), u64 start and end
   (ns since the step began), u64 iteration, u64 bytes, u32 kind, u64 flow. Past 256 MiB of
   records the rest are left out (the answer must stay under the master's message limit). */
static void df__w_trace_put(df__wbuf *b, df__wrun *run) {
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    df_status st;
    df_status_clear(&st);
    df_code code = df__trace_finish(run->trace, &md, &st);
    df__wb_u64(b, (uint64_t)md.start_unix_us);
    size_t at = b->n;
    df__wb_u32(b, 0);
    uint32_t n = 0;
    for (int i = 0; !code && !b->oom && i < md.n_nodes && b->n - at < ((size_t)1 << 28); i++) {
        const df_node_trace *e = &md.nodes[i];
        int p = 0;
        while (p < run->n_parts && strcmp(run->regs[p]->dev->name, e->device)) p++;
        if (p == run->n_parts) continue;
        df__wb_u32(b, (uint32_t)p);
        df__wb_str(b, e->node); df__wb_str(b, e->op); df__wb_str(b, e->frame);
        df__wb_u32(b, (uint32_t)e->thread);
        df__wb_u64(b, (uint64_t)e->start_ns); df__wb_u64(b, (uint64_t)e->end_ns);
        df__wb_u64(b, (uint64_t)e->iter); df__wb_u64(b, (uint64_t)e->bytes);
        df__wb_u32(b, (uint32_t)e->kind); df__wb_u64(b, e->flow);
        n++;
    }
    if (!b->oom) df__put32(b->p + at, n);
    df_run_metadata_clear(&md);
    DF_FREE(run->trace);
    run->trace = NULL;
}
/* Runs a step that RUN_STEP set up and answers STEP_DONE (on the thread that read the RUN_STEP,
   or one of its own); frees run. */
static void df__w_step_run(df__wrun *run) {
    df__wstep *ws = &run->ws;
    df_worker *w = ws->w;
    df_status st;
    df_status_clear(&st);
    if (run->trace) df__trace_begin(run->trace);   /* (on the thread that runs the step: its thread 0) */
    df__group_execute(&ws->g, &st);
    for (int p = 0, k = 0; !st.code && run->regs && p < ws->g.n_steps; p++)   /* payload pointers mean nothing in another process */
        for (int q = 0; !st.code && q < run->regs[p]->n_fetches; q++, k++)
            if (k < run->n_fetch && run->fetches[k] && (run->fetches[k]->dtype == DF_VARIANT || run->fetches[k]->dtype == DF_RESOURCE)) {
                df_output o = run->regs[p]->feeds[run->regs[p]->n_feeds + q];
                df_status_set(&st, DF_UNIMPLEMENTED, "Fetch '%s:%d' is a %s, which cannot be sent to another process {{node %s}}",
                              o.node->name, o.index, run->fetches[k]->dtype == DF_RESOURCE ? "resource handle (state of the "
                              "worker's process: a variable, queue or array)" : "variant tensor (a TensorList or Optional)", o.node->name);
            }
    /* off the list first (no delivery in progress), then the answer */
    pthread_mutex_lock(&w->mu);
    for (df__wstep **q = &w->steps; *q; q = &(*q)->next) if (*q == ws) { *q = ws->next; break; }
    while (ws->refs) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u64(&b, ws->id);
    df__wb_u32(&b, (uint32_t)st.code);
    df__wb_str(&b, st.code ? st.message : "");
    df__wb_u32(&b, (uint32_t)(st.code ? 0 : run->n_fetch));
    for (int k = 0; !st.code && k < run->n_fetch; k++) {
        df__wb_u32(&b, run->fetches[k] != NULL);
        if (run->fetches[k]) df__wb_tensor(&b, run->fetches[k]);
    }
    if (run->trace) df__w_trace_put(&b, run);
    if (b.oom) {                                 /* (the answer itself does not fit) */
        DF_FREE(b.p);
        memset(&b, 0, sizeof b);
        df__wb_u64(&b, ws->id); df__wb_u32(&b, DF_RESOURCE_EXHAUSTED); df__wb_str(&b, "Out of memory sending a step's results"); df__wb_u32(&b, 0);
    }
    if (df__w_answer(run->c, DF__W_STEP_DONE, &b)) shutdown(run->c->ch.fd, SHUT_RDWR);
    DF_FREE(b.p);
    df__wrun_free(run);
}
static void *df__w_step_main(void *arg) {
    df__wrun *run = (df__wrun *)arg;
    df__wconn *c = run->c;
    df_worker *w = c->w;
    df__w_step_run(run);
    df__w_conn_release(c);
    pthread_mutex_lock(&w->mu);
    w->n_conns--;                                /* (step threads count as connections for stop) */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
static int df__w_run_step(df__wconn *c, df__wread *r, const char **why, df__wrun **go) {
    df_worker *w = c->w;
    uint64_t id = df__wr_u64(r, "RUN_STEP: step"), inc = df__wr_u64(r, "RUN_STEP: incarnation");
    int traced = (df__wr_u32(r, "RUN_STEP: task") & DF__W_RUN_TRACE) != 0;   /* (the task itself: unused) */
    uint32_t nc = df__wr_u32(r, "RUN_STEP: cluster");
    if (r->bad) return 1;
    if (nc > 4096) { *why = "RUN_STEP: cluster"; return 1; }
    df__wrun *run = (df__wrun *)DF_MALLOC(sizeof *run);
    if (!run) { *why = "out of memory"; return 1; }
    memset(run, 0, sizeof *run);
    df__wstep *ws = &run->ws;
    ws->id = id; ws->w = w; ws->conn = c;
    ws->g.remote = ws;
    df_code err = DF_OK;
    char errmsg[256] = "";
    if (!(ws->cluster = (char (*)[64])DF_MALLOC(((size_t)nc + 1) * 64))) { DF_FREE(run); *why = "out of memory"; return 1; }
    for (uint32_t i = 0; i < nc && !r->bad; i++) {
        char *a = df__wr_str(r, 63, "RUN_STEP: address");
        if (a) { memcpy(ws->cluster[i], a, strlen(a) + 1); DF_FREE(a); }
    }
    ws->n_cluster = (int)nc;
    uint32_t np = df__wr_u32(r, "RUN_STEP: partitions");
    if (!r->bad && (np == 0 || np > 4096)) r->bad = "RUN_STEP: partitions";
    if (!r->bad && !(run->regs = (df__wreg **)DF_MALLOC(((size_t)np + 1) * sizeof(df__wreg *)))) r->bad = "out of memory";
    int *feed_at = r->bad ? NULL : (int *)DF_MALLOC(((size_t)np + 1) * sizeof(int)), cap = 0;
    if (!r->bad && !feed_at) r->bad = "out of memory";
    for (uint32_t p = 0; !r->bad && p < np; p++) {
        uint32_t h = df__wr_u32(r, "RUN_STEP: handle"), nf = df__wr_u32(r, "RUN_STEP: feeds");
        if (r->bad) break;
        pthread_mutex_lock(&w->mu);
        df__wreg *rg = h < (uint32_t)w->n_regs ? w->regs[h] : NULL;
        if (rg && rg->owner != c) rg = NULL;    /* a connection runs only what it registered */
        if (rg) rg->refs++;                     /* (held until the step ends: df__wrun_free) */
        pthread_mutex_unlock(&w->mu);
        for (uint32_t q = 0; rg && q < p; q++) if (run->regs[q] == rg && !err) { err = DF_INVALID_ARGUMENT; snprintf(errmsg, sizeof errmsg, "Partition handle %u is listed twice", h); }
        if (!rg && !err) { err = DF_FAILED_PRECONDITION; snprintf(errmsg, sizeof errmsg, "Partition handle %u is not registered on this worker by this connection (restarted?)", h); }
        else if (rg && (int)nf != rg->n_feeds && !err) { err = DF_INVALID_ARGUMENT; snprintf(errmsg, sizeof errmsg, "Partition %u takes %d feeds, got %u", h, rg->n_feeds, nf); }
        run->regs[p] = rg;
        run->n_held = (int)p + 1;
        feed_at[p] = run->n_feeds;
        for (uint32_t k = 0; k < nf && !r->bad; k++) {
            df_tensor *t = df__wr_tensor(r, "RUN_STEP: feed");
            if (!t) break;
            if (!df__grow(&run->feeds, &cap, run->n_feeds + 1, sizeof(df_tensor *))) { df_tensor_release(t); r->bad = "out of memory"; break; }
            run->feeds[run->n_feeds++] = t;
            if (!err && rg && (int)k < rg->n_feeds) {     /* a feed as df_session_run checks it */
                df_output o = rg->feeds[k];
                if (t->dtype != o.node->out_types[o.index] || !df__shape_compatible(&o.node->out_shapes[o.index], t)) {
                    err = DF_INVALID_ARGUMENT;
                    snprintf(errmsg, sizeof errmsg, "Feed %u of partition %u is %s of rank %d, which '%.80s:%d' does not take", k, h,
                             df_dtype_name(t->dtype), t->rank, o.node->name, o.index);
                }
            }
        }
    }
    if (feed_at) feed_at[np] = run->n_feeds;
    if (!r->bad && r->n) r->bad = "RUN_STEP: bytes after the feeds";
    if (r->bad) { DF_FREE(feed_at); df__wrun_free(run); return 1; }
    if (!err && inc != w->incarnation) { err = DF_ABORTED; snprintf(errmsg, sizeof errmsg, "Worker incarnation changed (it restarted): the session must be made again"); }
    /* the group, set up before the step is listed (an ABORT or a value may come at once) */
    run->n_parts = (int)np;
    int ok = !err && df__rv_init(&ws->g.rv);
    for (uint32_t p = 0; ok && p < np; p++) {
        run->n_fetch += run->regs[p]->n_fetches;
        ws->n_keys += run->regs[p]->n_remote;
        ws->n_rkeys += run->regs[p]->n_recv;
    }
    if (ok) {
        run->fetches = (df_tensor **)DF_MALLOC(((size_t)run->n_fetch + 1) * sizeof(df_tensor *));
        ws->g.steps = (df__step *)DF_MALLOC(((size_t)np + 1) * sizeof(df__step));
        ws->keys = (int32_t *)DF_MALLOC(((size_t)ws->n_keys + 1) * sizeof(int32_t));
        ws->tasks = (int32_t *)DF_MALLOC(((size_t)ws->n_keys + 1) * sizeof(int32_t));
        ws->rkeys = (int32_t *)DF_MALLOC(((size_t)ws->n_rkeys + 1) * sizeof(int32_t));
        ws->rtypes = (df_dtype *)DF_MALLOC(((size_t)ws->n_rkeys + 1) * sizeof(df_dtype));
        ok = run->fetches && ws->g.steps && ws->keys && ws->tasks && ws->rkeys && ws->rtypes;
        if (ok && traced) {
            ok = (run->trace = (df__trace *)DF_MALLOC(sizeof *run->trace)) != NULL;
            if (ok) memset(run->trace, 0, sizeof *run->trace);   /* (df__trace_begin when the step starts) */
        }
    }
    if (ok) {
        memset(run->fetches, 0, ((size_t)run->n_fetch + 1) * sizeof(df_tensor *));
        memset(ws->g.steps, 0, ((size_t)np + 1) * sizeof(df__step));
        ws->g.n_steps = (int)np;
        int fo = 0, nk = 0, nr = 0;
        for (uint32_t p = 0; p < np; p++) {
            const df__wreg *rg = run->regs[p];
            df__step *step = &ws->g.steps[p];
            step->x = rg->x; step->session = w->sess; step->device = rg->dev; step->scope = c->id;
            step->feeds = run->feeds ? run->feeds + feed_at[p] : NULL;   /* (none fed: no array) */
            step->fetches = run->fetches + fo;
            step->group = &ws->g; step->home = &ws->g.steps[0]; step->ipool = w->sess->ipool;
            step->pool = w->sess->pool; step->threaded = w->sess->pool != NULL; step->shared = step->threaded;
            step->trace = run->trace;
            fo += rg->n_fetches;
            for (int k = 0; k < rg->n_remote; k++, nk++) { ws->keys[nk] = rg->remote_keys[k]; ws->tasks[nk] = rg->remote_tasks[k]; }
            for (int k = 0; k < rg->n_recv; k++, nr++) { ws->rkeys[nr] = rg->recv_keys[k]; ws->rtypes[nr] = rg->recv_types[k]; }
        }
    } else if (!err) { err = DF_RESOURCE_EXHAUSTED; snprintf(errmsg, sizeof errmsg, "Out of memory starting a step"); }
    DF_FREE(feed_at);
    if (err) {
        df__wrun_free(run);
        df__wbuf b = {NULL, 0, 0, 0};
        df__wb_u64(&b, id); df__wb_u32(&b, (uint32_t)err); df__wb_str(&b, errmsg); df__wb_u32(&b, 0);
        int bad = df__w_answer(c, DF__W_STEP_DONE, &b);
        DF_FREE(b.p);
        if (bad) { *why = "cannot answer RUN_STEP"; return 1; }
        return 0;
    }
    run->c = c;
    df__wpending *mine = NULL;
    pthread_mutex_lock(&w->mu);
    ws->next = w->steps;
    w->steps = ws;
    ws->refs++;
    for (df__wpending **q = &w->pending; *q;) {
        if ((*q)->step == id) {
            df__wpending *o = *q;
            *q = o->next; o->next = mine; mine = o;
            w->n_pending--;
            w->pending_bytes -= o->t ? o->t->nbytes : 0;
        } else q = &(*q)->next;
    }
    pthread_mutex_unlock(&w->mu);
    for (df__wpending *o = mine, *next; o; o = next) {   /* values that came first */
        next = o->next;
        df__wake wk;
        if (df__w_deliver(ws, o->key, o->fid, o->iter, o->dead, o->t, &wk)) df__w_wake_on_pool(&wk);   /* (none: no Recv ran yet) */
        DF_FREE(o);
    }
    df__w_step_drop(w, ws);
    *go = run;                                   /* (run by the reader, or df__w_step_thread) */
    return 0;
}
/* A step on a thread of its own (when the reader cannot hand the reading on). 0, or 1 to close. */
static int df__w_step_thread(df__wconn *c, df__wrun *run, const char **why) {
    df_worker *w = c->w;
    df__wstep *ws = &run->ws;
    pthread_mutex_lock(&w->mu);
    w->n_conns++;
    pthread_mutex_unlock(&w->mu);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
    int started = pthread_create(&t, &at, df__w_step_main, run) == 0;
    pthread_attr_destroy(&at);
    if (!started) {
        __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_lock(&w->mu);
        for (df__wstep **q = &w->steps; *q; q = &(*q)->next) if (*q == ws) { *q = ws->next; break; }
        while (ws->refs) pthread_cond_wait(&w->cv, &w->mu);
        w->n_conns--;
        pthread_mutex_unlock(&w->mu);
        df__wrun_free(run);
        if (df__w_reply_error(c, DF_RESOURCE_EXHAUSTED, "Cannot start a step (out of threads)")) { *why = "cannot answer RUN_STEP"; return 1; }
    }
    return 0;
}
/* ABORT: the step's group fails with the master's status */
static void df__w_abort(df_worker *w, df__wread *r) {
    uint64_t id = df__wr_u64(r, "ABORT: step");
    uint32_t code = df__wr_u32(r, "ABORT: code");
    char *msg = df__wr_str(r, 4000, "ABORT: message");
    if (r->bad) { DF_FREE(msg); return; }
    df_status why;
    df_status_set(&why, code >= 1 && code <= 16 ? (df_code)code : DF_ABORTED, "%s", msg ? msg : "aborted by the master");
    DF_FREE(msg);
    df__wstep *ws = df__w_step_hold(w, id, NULL);
    if (!ws) return;
    df__group_abort(&ws->g, &why);
    df__w_step_drop(w, ws);
}

/* Handles one message; returns 0 to go on, 1 to close (why: the reason), 2 to stop the worker. */
static int df__w_handle(df__wconn *c, int type, const unsigned char *data, uint64_t len, const char **why, df__wrun **go) {
    df_worker *w = c->w;
    df__wread r = {data, (size_t)len, NULL};
    df__wbuf out = {NULL, 0, 0, 0};
    int ret = 0;
    switch (type) {
    case DF__W_HELLO: {
        uint32_t version = df__wr_u32(&r, "HELLO: version");
        if (r.bad) break;
        if (version != DF__W_VERSION) { *why = "HELLO from another protocol version"; ret = 1; break; }
        df__wb_u64(&out, w->incarnation);
        df__wb_u32(&out, (uint32_t)w->opts.task);
        int nd = w->sess->n_devices;
        df__wb_u32(&out, (uint32_t)nd);
        for (int i = 0; i < nd; i++) {       /* its CPUs, then its GPUs (their index in REGISTER is i) */
            char name[96];
            const df__device *d = w->sess->devices[i];
            snprintf(name, sizeof name, "/job:worker/replica:0/task:%d/device:%s:%d", w->opts.task, d->type, d->index);
            df__wb_str(&out, name);
        }
        if (df__w_answer(c, DF__W_HELLO_OK, &out)) { *why = "cannot answer HELLO"; ret = 1; }
        break;
    }
    case DF__W_PING: {
        uint64_t v = df__wr_u64(&r, "PING: value");
        if (r.bad) break;
        df__wb_u64(&out, v);
        if (df__w_answer(c, DF__W_PONG, &out)) { *why = "cannot answer PING"; ret = 1; }
        break;
    }
    case DF__W_REGISTER: {
        df_status st;
        df_status_clear(&st);
        int handle = -1;
        df__w_register(w, c, &r, &handle, &st);
        if (r.bad) break;
        if (handle < 0) { if (df__w_reply_error(c, st.code ? st.code : DF_INTERNAL, st.message)) { *why = "cannot answer REGISTER"; ret = 1; } break; }
        df__wb_u32(&out, (uint32_t)handle);
        if (df__w_answer(c, DF__W_REGISTERED, &out)) { *why = "cannot answer REGISTER"; ret = 1; }
        break;
    }
    case DF__W_RUN_STEP: ret = df__w_run_step(c, &r, why, go); if (!ret) r.n = 0; break;
    case DF__W_TENSOR: r.bad = "TENSOR: read as a stream"; break;   /* (df__w_conn_main streams TENSORs) */
    case DF__W_ABORT: df__w_abort(w, &r); break;
    case DF__W_HEARTBEAT: r.n = 0; break;
    case DF__W_CLOSE: *why = "closed by the peer"; ret = 1; break;
    case DF__W_SHUTDOWN: {
        int policy = w->opts.shutdown;
        if (policy == DF_WORKER_SHUTDOWN_ANY || (policy == DF_WORKER_SHUTDOWN_AUTHENTICATED && c->ch.k && c->role == DF__W_ROLE_MASTER)) {
            *why = "shut down by the peer";
            ret = 2;
            break;
        }
        df__w_log(w, "refused a SHUTDOWN from %s (%s)", c->peer, policy == DF_WORKER_SHUTDOWN_NEVER ? "this worker takes none" : "only a master holding the cluster key may");
        if (df__w_reply_error(c, policy == DF_WORKER_SHUTDOWN_NEVER ? DF_PERMISSION_DENIED : DF_UNAUTHENTICATED,
                              policy == DF_WORKER_SHUTDOWN_NEVER ? "This worker takes no SHUTDOWN message (stop it with a signal)"
                              : "SHUTDOWN needs a master that holds the cluster key (this worker has none: stop it with a signal)")) { *why = "cannot answer SHUTDOWN"; ret = 1; }
        break;
    }
    case DF__W_AUTH:                             /* (a keyed master; this worker has no key) */
        if (c->ch.k) { *why = "AUTH on a connection past its handshake"; ret = 1; r.n = 0; break; }
        df__w_reply_error(c, DF_UNAUTHENTICATED, "This worker has no cluster key (started without --key-file), and the master has one");
        *why = "a master with a cluster key; this worker has none";
        ret = 1;
        r.n = 0;
        break;
    default: *why = "a message a worker does not take"; ret = 1;
    }
    if (r.bad) { *why = r.bad; ret = 1; }
    else if (!ret && r.n) { *why = "bytes after the end of a message"; ret = 1; }
    DF_FREE(out.p);
    return ret;
}
static void df__w_stop_locked(df_worker *w) {
    if (w->stopping) return;
    __atomic_store_n(&w->stopping, 1, __ATOMIC_RELEASE);   /* (read without the lock by the accept thread) */
    shutdown(w->listen_fd, SHUT_RDWR);
    char one = 1;
    if (w->wake[1] >= 0 && write(w->wake[1], &one, 1) < 0) { /* (the accept thread looks again within a second) */ }
    for (int i = 0; i < w->cap_conns; i++) if (w->conn_fds[i] >= 0) shutdown(w->conn_fds[i], SHUT_RDWR);
    for (int i = 0; i < w->n_peers; i++) {       /* (a send blocked on a peer ends too) */
        int fd = __atomic_load_n(&w->peers[i]->ch.fd, __ATOMIC_ACQUIRE);
        if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    pthread_cond_broadcast(&w->cv);
    pthread_cond_broadcast(&w->beat_cv);
}
enum { DF__W_CONN_THREADS = 16 };     /* threads of one connection at most (a step or a Recv's work each) */
static void *df__w_conn_main(void *arg);
/* The reader of c hands the reading on to a follower (one waiting, else a new thread) before it
   runs work of its own; 0 when there is no follower to be had (the reader goes on reading). */
static int df__w_let_go(df__wconn *c) {
    df_worker *w = c->w;
    pthread_mutex_lock(&c->lmu);
    int ok = c->idle > 0;
    if (!ok && c->threads < DF__W_CONN_THREADS) {
        pthread_mutex_lock(&w->mu);
        if (!w->stopping) {
            w->n_conns++;
            __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
            pthread_t t;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            ok = pthread_create(&t, &at, df__w_conn_main, c) == 0;
            pthread_attr_destroy(&at);
            if (ok) c->threads++;
            else { w->n_conns--; __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL); }
        }
        pthread_mutex_unlock(&w->mu);
    }
    if (ok) {
        c->reading = 0;
        pthread_cond_signal(&c->lcv);
    }
    pthread_mutex_unlock(&c->lmu);
    return ok;
}
/* Reads frames while this thread is c's reader: 0 when it handed the reading on (and did its
   work), 1 when the connection ends, 2 when the worker is to stop. */
static int df__w_read_frames(df__wconn *c) {
    df_worker *w = c->w;
    uint64_t max = w->opts.max_message_bytes ? w->opts.max_message_bytes : DF_MAX_MESSAGE_BYTES;
    for (;;) {
        unsigned char *data = NULL;
        uint64_t len = 0;
        const char *why = NULL;
        char buf[160];
        int type = c->has_first ? df__w_take_head(&c->ch, c->first, max, &len, &why, buf, sizeof buf)
                                : df__w_recv_head(&c->ch, max, &len, &why, buf, sizeof buf);
        c->has_first = 0;
        if (type == DF__W_TENSOR) {               /* its value straight into a tensor */
            int gone = 0;
            if (df__w_tensor_stream(c, len, &why, &gone) == 0) { if (gone) return 0; continue; }
            if (!__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) df__w_log(w, "closing the connection from %s: malformed TENSOR message: %s", c->peer, why);
            return 1;
        }
        if (type > 0) type = df__w_recv_body(&c->ch, type, &data, len, &why);
        if (type <= 0) {
            if (type < 0 && !__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) df__w_log(w, "closing the connection from %s: %s", c->peer, why);
            DF_FREE(data);
            return 1;
        }
        df__wrun *go = NULL;
        int r = df__w_handle(c, type, data, len, &why, &go);
        DF_FREE(data);
        if (r == 1) {
            if (strcmp(why, "closed by the peer")) df__w_log(w, "closing the connection from %s: malformed %s message: %s", c->peer, df__w_type_names[type], why);
            return 1;
        }
        if (r == 2) {
            df__w_log(w, "shutting down at the request of %s", c->peer);
            pthread_mutex_lock(&w->mu);
            df__w_stop_locked(w);
            pthread_mutex_unlock(&w->mu);
            return 2;
        }
        if (go) {                                /* a step: run here while a follower reads */
            if (df__w_let_go(c)) { df__w_step_run(go); return 0; }
            if (df__w_step_thread(c, go, &why)) { df__w_log(w, "closing the connection from %s: %s", c->peer, why); return 1; }
        }
    }
}
static void *df__w_conn_main(void *arg) {
    df__wconn *c = (df__wconn *)arg;
    df_worker *w = c->w;
    int ended = 0;
    for (;;) {
        pthread_mutex_lock(&c->lmu);
        /* (back from work: two followers wait already, so this thread is one too many; one more
           than the one needed, as a step's thread may come back just after the next RUN_STEP) */
        int spare = c->reading && c->idle > 1;
        while (!spare && c->reading && !c->closing) { c->idle++; pthread_cond_wait(&c->lcv, &c->lmu); c->idle--; }
        if (spare || c->closing) { pthread_mutex_unlock(&c->lmu); break; }
        c->reading = 1;
        pthread_mutex_unlock(&c->lmu);
        if (df__w_read_frames(c)) { ended = 1; break; }
    }
    if (ended) {
        pthread_mutex_lock(&c->lmu);
        c->closing = 1;                          /* (its followers leave) */
        pthread_cond_broadcast(&c->lcv);
        pthread_mutex_unlock(&c->lmu);
        /* the master is gone: the steps it started end (they hold c until then) */
        df_status gone;
        df_status_set(&gone, DF_ABORTED, "The master's connection (%s) closed during the step", c->peer);
        for (df__wstep *ws; (ws = df__w_step_hold(w, 0, c));) {
            df__group_abort(&ws->g, &gone);
            df__w_step_drop(w, ws);
        }
        pthread_mutex_lock(&w->mu);
        for (int i = 0; i < w->n_regs; i++)      /* its registrations go (once no step runs them) */
            if (w->regs[i] && w->regs[i]->owner == c) {
                if (--w->regs[i]->refs == 0) df__wreg_free(w->regs[i]);
                w->regs[i] = NULL;
            }
        w->conn_fds[c->slot] = -1;
        shutdown(c->ch.fd, SHUT_RDWR);
        pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_lock(&c->lmu);
    c->threads--;
    pthread_mutex_unlock(&c->lmu);
    df__w_conn_release(c);                       /* (before n_conns drops: df_worker_stop frees w->sess) */
    pthread_mutex_lock(&w->mu);
    w->n_conns--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
/* Every 250 ms, a HEARTBEAT to the master of each running step: a step may take long, and
   the master tells a slow step from a stopped worker by them. */
static void *df__w_beat_main(void *arg) {
    df_worker *w = (df_worker *)arg;
    pthread_mutex_lock(&w->mu);
    double next = df__now_ms() + 250;
    while (!w->stopping) {
        /* (beat_cv is broadcast when the worker stops; the beats keep their own time) */
        double left = next - df__now_ms();
        if (left > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long ns = ts.tv_nsec + (long)(left * 1e6);
            ts.tv_sec += ns / 1000000000L;
            ts.tv_nsec = ns % 1000000000L;
            pthread_cond_timedwait(&w->beat_cv, &w->mu, &ts);
            continue;
        }
        next += 250;
        if (next < df__now_ms()) next = df__now_ms() + 250;   /* (this thread was held up) */
        /* the running steps' connections (each held), then the sends without the lock: a
           master that stops reading blocks only this thread, until its send timeout */
        enum { BEATS = 64 };
        df__wconn *to[BEATS];
        uint64_t ids[BEATS];
        int n = 0;
        for (df__wstep *ws = w->steps; ws && n < BEATS && !w->stopping; ws = ws->next) {
            __atomic_add_fetch(&ws->conn->refs, 1, __ATOMIC_ACQ_REL);
            to[n] = ws->conn; ids[n++] = ws->id;
        }
        df__w_pending_purge(w, 0);
        pthread_mutex_unlock(&w->mu);
        for (int i = 0; i < n; i++) {
            unsigned char f[8];
            df__put64(f, ids[i]);
            pthread_mutex_lock(&to[i]->wmu);
            if (df__w_send_parts(&to[i]->ch, DF__W_HEARTBEAT, f, 8, NULL, 0)) shutdown(to[i]->ch.fd, SHUT_RDWR);
            pthread_mutex_unlock(&to[i]->wmu);
            df__w_conn_release(to[i]);
        }
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
/* ---- connections in their handshake: the accept thread polls them all ----
   No thread is spent on a connection before it proves the key (or, with no key, before its
   first frame header is there); each has handshake_timeout_ms; at most max_handshakes wait
   at once and a quarter of that from one address, the oldest closed first to make room. */
typedef struct df__wshake {
    int fd, stage;                   /* 0: waiting for AUTH (no key: a first header); 1: for AUTH_PROOF */
    uint32_t ip;
    double since;
    char peer[64];
    df__wauth a;                     /* the transcript so far */
    unsigned char in[DF__W_HEADER + 128];
    size_t have;
} df__wshake;
/* A connection past its handshake gets a thread (k: its keys, NULL with no key); fd is closed
   when it cannot. */
static void df__w_adopt(df_worker *w, int fd, const char *peer, struct df__wkeys *k, uint32_t role, const unsigned char *first) {
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {10, 0};                 /* a peer that stops reading fails our writes */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    df__wconn *c = (df__wconn *)DF_MALLOC(sizeof *c);
    pthread_mutex_lock(&w->mu);
    int slot = -1, started = 0;
    for (int i = 0; i < w->cap_conns && slot < 0; i++) if (w->conn_fds[i] < 0) slot = i;
    if (slot < 0 && c) {
        int old = w->cap_conns;
        if (df__grow(&w->conn_fds, &w->cap_conns, old + 1, sizeof(int))) {
            for (int i = old; i < w->cap_conns; i++) w->conn_fds[i] = -1;
            slot = old;
        }
    }
    if (c && slot >= 0 && !w->stopping) {
        memset(c, 0, sizeof *c);
        c->w = w; c->ch.fd = fd; c->ch.k = k; c->slot = slot; c->refs = 1; c->role = role; c->id = ++w->next_conn;
        c->ch.frame_ms = 10000;                  /* (a frame that stops halfway for 10 s closes its connection) */
        struct timeval rt = {c->ch.frame_ms / 1000, (c->ch.frame_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof rt);
        if (first) { memcpy(c->first, first, DF__W_HEADER); c->has_first = 1; }
        snprintf(c->peer, sizeof c->peer, "%s", peer);
        pthread_mutex_init(&c->wmu, NULL);
        pthread_mutex_init(&c->lmu, NULL);
        pthread_cond_init(&c->lcv, NULL);
        c->threads = 1;
        w->conn_fds[slot] = fd;
        w->n_conns++;
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &at, df__w_conn_main, c) == 0;
        pthread_attr_destroy(&at);
        if (!started) { w->conn_fds[slot] = -1; w->n_conns--; pthread_mutex_destroy(&c->wmu); pthread_mutex_destroy(&c->lmu); pthread_cond_destroy(&c->lcv); }
    }
    int stopping = w->stopping;
    pthread_mutex_unlock(&w->mu);
    if (!started) {
        if (!stopping) df__w_log(w, "cannot serve the connection from %s (out of memory or threads)", peer);
        close(fd); DF_FREE(k); DF_FREE(c);
    }
}
#ifdef DATAFLOW_MPI
/* An MPI channel (src/net/mpi.c), past the handshake mpi.c ran with this worker's key and id,
   served as a connection like an accepted one. */
DF_PRIVATE const struct df__hmac_key *df__worker_key(const df_worker *w, const unsigned char **id) { *id = w->id; return w->key; }
DF_PRIVATE void df__worker_adopt(df_worker *w, int fd, const char *peer, struct df__wkeys *k, uint32_t role) { df__w_adopt(w, fd, peer, k, role, NULL); }
#endif
/* An ERROR to a connection being refused (unsigned; it may not get there). */
static void df__w_shake_refuse(int fd, df_code code, const char *msg) {
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u32(&b, (uint32_t)code);
    df__wb_str(&b, msg);
    df__wchan ch = {fd, NULL, 0};
    if (!b.oom) (void)df__w_send(&ch, DF__W_ERROR, &b);
    DF_FREE(b.p);
}
/* Reads what came on s: 0 to wait for more, 1 when s is done with (adopted, or closed). */
static int df__w_shake_step(df_worker *w, df__wshake *s) {
    size_t want = s->have < DF__W_HEADER ? DF__W_HEADER : DF__W_HEADER + (size_t)df__get64(s->in + 8);
    ssize_t r = recv(s->fd, s->in + s->have, want - s->have, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        if (s->have) df__w_log(w, "closing the connection from %s: the connection broke inside a frame header", s->peer);
        close(s->fd);
        return 1;
    }
    if (r < 0) return 0;
    s->have += (size_t)r;
    if (!w->key && s->have == DF__W_HEADER) {     /* no key: its first header, then a thread */
        df__w_adopt(w, s->fd, s->peer, NULL, DF__W_ROLE_MASTER, s->in);
        return 1;
    }
    if (s->have == DF__W_HEADER) {
        uint64_t len = 0;
        const char *why = NULL;
        char buf[160];
        int type = df__w_check_header(s->in, sizeof s->in - DF__W_HEADER, &len, &why, buf, sizeof buf, 0);
        if (type && type != (s->stage ? DF__W_AUTH_PROOF : DF__W_AUTH)) {
            df__w_shake_refuse(s->fd, DF_UNAUTHENTICATED, "This worker serves only masters and workers that hold its cluster key "
                               "(df_session_options.cluster_key_file or DF_CLUSTER_KEY_FILE)");
            df__w_log(w, "closing the connection from %s: it did not prove the cluster key (it sent %s)", s->peer, df__w_type_names[type]);
            close(s->fd);
            return 1;
        }
        if (!type) { df__w_log(w, "closing the connection from %s in its handshake: %s", s->peer, why); close(s->fd); return 1; }
        want = DF__W_HEADER + (size_t)len;
    }
    if (s->have < want) return 0;
    df__wread rd = {s->in + DF__W_HEADER, s->have - DF__W_HEADER, NULL};
    df__wchan ch = {s->fd, NULL, 0};
    if (s->stage == 0) {                         /* AUTH: version, role, the client's nonce and id */
        uint32_t version = df__wr_u32(&rd, "version"), role = df__wr_u32(&rd, "role");
        size_t nl = 0, il = 0;
        const unsigned char *nc = df__wr_bytes(&rd, &nl, "nonce"), *idc = df__wr_bytes(&rd, &il, "id");
        if (rd.bad || rd.n || nl != DF__W_NONCE || il != DF__W_ID || version != DF__W_VERSION || (role != DF__W_ROLE_MASTER && role != DF__W_ROLE_WORKER)) {
            df__w_log(w, "closing the connection from %s: a malformed AUTH", s->peer);
            close(s->fd);
            return 1;
        }
        if (!memcmp(idc, w->id, DF__W_ID)) {     /* our own dial, turned back to us */
            df__w_log(w, "closing the connection from %s: a handshake of this worker's own (reflected)", s->peer);
            close(s->fd);
            return 1;
        }
        s->a.role = role;
        memcpy(s->a.nc, nc, DF__W_NONCE);
        memcpy(s->a.idc, idc, DF__W_ID);
        memcpy(s->a.ids, w->id, DF__W_ID);
        unsigned char proof[32];
        df__wbuf b = {NULL, 0, 0, 0};
        int ok = !df__random_bytes(s->a.ns, DF__W_NONCE);
        if (ok) {
            df__w_auth_proof(w->key, 1, &s->a, proof);
            df__wb_bytes(&b, s->a.ns, DF__W_NONCE);
            df__wb_bytes(&b, proof, sizeof proof);
            df__wb_bytes(&b, w->id, DF__W_ID);
            ok = !b.oom && !df__w_send(&ch, DF__W_AUTH_CHALLENGE, &b);
        }
        DF_FREE(b.p);
        if (!ok) { close(s->fd); return 1; }
        s->stage = 1;
        s->have = 0;
        return 0;
    }
    size_t pl = 0;                               /* AUTH_PROOF: the client's proof */
    const unsigned char *pc = df__wr_bytes(&rd, &pl, "proof");
    unsigned char expect[32];
    df__w_auth_proof(w->key, 0, &s->a, expect);
    if (rd.bad || rd.n || pl != 32 || !df__ct_equal(pc, expect, 32)) {
        df__w_shake_refuse(s->fd, DF_UNAUTHENTICATED, "Wrong cluster key");
        df__w_log(w, "closing the connection from %s: wrong cluster key", s->peer);
        close(s->fd);
        return 1;
    }
    struct df__wkeys *k = df__w_auth_keys(w->key, 1, &s->a);
    if (!k || df__w_send(&ch, DF__W_AUTH_OK, NULL)) { DF_FREE(k); close(s->fd); return 1; }
    df__w_adopt(w, s->fd, s->peer, k, s->a.role, NULL);
    return 1;
}
/* Closes the handshake at i (the oldest make room for new ones). */
static void df__w_shake_evict(df_worker *w, int i, double now, const char *why) {
    close(w->shakes[i].fd);
    w->shakes[i] = w->shakes[--w->n_shakes];
    w->evicted++;
    if (now - w->evict_logged > 1000) {          /* (a flood is one line a second) */
        df__w_log(w, "closed %d connection%s that did not finish the handshake (%s)", w->evicted, w->evicted == 1 ? "" : "s", why);
        w->evicted = 0;
        w->evict_logged = now;
    }
}
/* The handshake to close for room (from address ip when by_ip): the oldest that has sent
   nothing yet, else the oldest (a master that is answering gets through a flood). */
static int df__w_shake_victim(const df_worker *w, int by_ip, uint32_t ip) {
    int idle = -1, any = -1;
    for (int i = 0; i < w->n_shakes; i++) {
        const df__wshake *s = &w->shakes[i];
        if (by_ip && s->ip != ip) continue;
        if (any < 0 || s->since < w->shakes[any].since) any = i;
        if (!s->stage && !s->have && (idle < 0 || s->since < w->shakes[idle].since)) idle = i;
    }
    return idle >= 0 ? idle : any;
}
static void *df__w_accept_main(void *arg) {
    df_worker *w = (df_worker *)arg;
    int limit_ms = w->opts.handshake_timeout_ms > 0 ? w->opts.handshake_timeout_ms : 5000;
    int cap = w->opts.max_handshakes > 0 ? w->opts.max_handshakes : 64, per_addr = cap >= 4 ? cap / 4 : 1;
    struct pollfd *pf = NULL;
    int cap_pf = 0, fl = fcntl(w->listen_fd, F_GETFL, 0);
    if (fl >= 0) fcntl(w->listen_fd, F_SETFL, fl | O_NONBLOCK);
    while (!__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) {
        if (!df__grow(&pf, &cap_pf, w->n_shakes + 2, sizeof *pf)) { struct timespec ts = {0, 50000000}; nanosleep(&ts, NULL); continue; }
        pf[0].fd = w->listen_fd; pf[0].events = POLLIN; pf[0].revents = 0;
        pf[1].fd = w->wake[0]; pf[1].events = POLLIN; pf[1].revents = 0;
        double now = df__now_ms();
        int wait = 1000;
        for (int i = 0; i < w->n_shakes; i++) {
            pf[i + 2].fd = w->shakes[i].fd; pf[i + 2].events = POLLIN; pf[i + 2].revents = 0;
            double left = w->shakes[i].since + limit_ms - now;
            if (left < wait) wait = left > 0 ? (int)left + 1 : 0;
        }
        int r = poll(pf, (nfds_t)w->n_shakes + 2, wait);
        if (__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) break;
        now = df__now_ms();
        for (int i = w->n_shakes - 1; i >= 0; i--) {   /* (a swap brings in one already seen) */
            df__wshake *s = &w->shakes[i];
            int done = r > 0 && pf[i + 2].revents ? df__w_shake_step(w, s) : 0;
            if (done) w->shakes[i] = w->shakes[--w->n_shakes];
            else if (now - s->since > limit_ms) df__w_shake_evict(w, i, now, "the handshake deadline passed");
        }
        if (r <= 0 || !pf[0].revents) continue;
        for (int batch = 0; batch < 16; batch++) {
            struct sockaddr_in a;
            socklen_t al = sizeof a;
            int fd = accept(w->listen_fd, (struct sockaddr *)&a, &al);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                    int victim = df__w_shake_victim(w, 0, 0);   /* (a descriptor back from a handshake) */
                    if (victim >= 0) df__w_shake_evict(w, victim, now, "out of file descriptors");
                    else { struct timespec ts = {0, 20000000}; nanosleep(&ts, NULL); }
                    break;
                }
                if (!__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) df__w_log(w, "accept failed: %s; the worker takes no new connections", strerror(errno));
                goto out;
            }
            int ffl = fcntl(fd, F_GETFL, 0);
            if (ffl >= 0) fcntl(fd, F_SETFL, ffl | O_NONBLOCK);
            uint32_t ip = ntohl(a.sin_addr.s_addr);
            int same = 0;
            for (int i = 0; i < w->n_shakes; i++) same += w->shakes[i].ip == ip;
            if (same >= per_addr) df__w_shake_evict(w, df__w_shake_victim(w, 1, ip), now, "too many from one address");
            else if (w->n_shakes >= cap) df__w_shake_evict(w, df__w_shake_victim(w, 0, 0), now, "too many at once");
            if (!df__grow(&w->shakes, &w->cap_shakes, w->n_shakes + 1, sizeof *w->shakes)) { close(fd); continue; }
            df__wshake *s = &w->shakes[w->n_shakes++];
            memset(s, 0, sizeof *s);
            s->fd = fd; s->ip = ip; s->since = now;
            char ipbuf[INET_ADDRSTRLEN] = "?";
            inet_ntop(AF_INET, &a.sin_addr, ipbuf, sizeof ipbuf);
            snprintf(s->peer, sizeof s->peer, "%s:%d", ipbuf, (int)ntohs(a.sin_port));
        }
    }
out:
    for (int i = 0; i < w->n_shakes; i++) close(w->shakes[i].fd);
    w->n_shakes = 0;
    DF_FREE(pf);
    return NULL;
}
#endif /* DF__NET */

#ifdef DF__NET
static void df__w_free_early(df_worker *w) {         /* (a start that failed) */
    if (w->wake[0] >= 0) { close(w->wake[0]); close(w->wake[1]); }
    DF_FREE(w->key);
    DF_FREE(w);
}
#endif
df_worker *df_worker_start(const df_worker_options *opts, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
#ifndef DF__NET
    (void)opts;
    df_status_set(st, DF_UNIMPLEMENTED, "Workers need POSIX sockets and threads: build dataflow.c on its own (two translation units) without DF_NO_THREADS");
    return NULL;
#else
    df_worker_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.port < 0 || o.port > 65535 || o.task < 0) { df_status_set(st, DF_INVALID_ARGUMENT, "df_worker_start: port %d, task %d", o.port, o.task); return NULL; }
    if (o.shutdown < DF_WORKER_SHUTDOWN_AUTHENTICATED || o.shutdown > DF_WORKER_SHUTDOWN_ANY) { df_status_set(st, DF_INVALID_ARGUMENT, "df_worker_start: shutdown policy %d", o.shutdown); return NULL; }
    const char *host = o.host ? o.host : "127.0.0.1";
    if (!strcmp(host, "localhost")) host = "127.0.0.1";
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)o.port);
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) { df_status_set(st, DF_INVALID_ARGUMENT, "df_worker_start: '%s' is not an IPv4 address", host); return NULL; }
    if (!o.key_file && !o.insecure && (ntohl(a.sin_addr.s_addr) >> 24) != 127) {
        df_status_set(st, DF_PERMISSION_DENIED, "df_worker_start: listening on %s without a cluster key lets anyone who reaches it run graphs as this "
                      "process's user; give a key file (--key-file), or insecure (--insecure) on a network you trust", host);
        return NULL;
    }
    df_worker *w = (df_worker *)DF_MALLOC(sizeof *w);
    if (!w) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    memset(w, 0, sizeof *w);
    w->opts = o;
    w->listen_fd = -1;
    w->wake[0] = w->wake[1] = -1;
    if (o.key_file && !(w->key = df__key_load(o.key_file, "df_worker_start", st))) { DF_FREE(w); return NULL; }
    if (w->key && df__random_bytes(w->id, sizeof w->id)) {
        df_status_set(st, DF_UNAVAILABLE, "df_worker_start: no random numbers from the system");
        DF_FREE(w->key); DF_FREE(w);
        return NULL;
    }
    if (pipe(w->wake)) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "df_worker_start: pipe: %s", strerror(errno));
        DF_FREE(w->key); DF_FREE(w);
        return NULL;
    }
    {   /* a fresh incarnation per worker: time, process and address mixed */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t h = df__hash_mix((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, (uint64_t)getpid());
        w->incarnation = df__hash_mix(h, (uint64_t)(uintptr_t)w) | 1;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64)) {
        df_status_set(st, errno == EADDRINUSE ? DF_ALREADY_EXISTS : errno == EACCES ? DF_PERMISSION_DENIED : DF_UNAVAILABLE,
                      "df_worker_start: cannot listen on %s:%d: %s", host, o.port, strerror(errno));
        if (fd >= 0) close(fd);
        df__w_free_early(w);
        return NULL;
    }
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    w->port = ntohs(a.sin_port);
    w->listen_fd = fd;
    if (!w->key)
        df__w_log(w, "no cluster key: anyone who can reach port %d of %s runs graphs as this process's user (see SECURITY.md: --key-file)", w->port, host);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.num_cpu_devices = o.num_cpu_devices > 0 ? o.num_cpu_devices : 1;
    so.num_gpu_devices = o.num_gpu_devices;              /* (df_session_new checks it: -1 every visible GPU) */
    so.inter_op_threads = DF__MAX(2, df__num_cores());   /* (a step waits for other workers on its pool) */
    so.memory_limit = o.memory_limit;
    so.data_dir = o.data_dir ? o.data_dir : "";          /* ("": no file access) */
    if (!(w->empty = df_graph_new()) || !(w->sess = df_session_new(w->empty, &so, st))) {
        if (!st->code) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
        df_graph_free(w->empty);
        close(fd);
        df__w_free_early(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->beat_cv, NULL);
    if (pthread_create(&w->beat_thread, NULL, df__w_beat_main, w) != 0) {
        close(fd);
        pthread_mutex_destroy(&w->mu); pthread_cond_destroy(&w->cv); pthread_cond_destroy(&w->beat_cv);
        df_session_free(w->sess); df_graph_free(w->empty);
        df__w_free_early(w);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "df_worker_start: cannot start a thread");
        return NULL;
    }
    if (pthread_create(&w->accept_thread, NULL, df__w_accept_main, w) != 0) {
        pthread_mutex_lock(&w->mu);
        __atomic_store_n(&w->stopping, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&w->beat_cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->beat_thread, NULL);
        close(fd);
        pthread_mutex_destroy(&w->mu); pthread_cond_destroy(&w->cv); pthread_cond_destroy(&w->beat_cv);
        df_session_free(w->sess); df_graph_free(w->empty);
        df__w_free_early(w);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "df_worker_start: cannot start a thread");
        return NULL;
    }
    return w;
#endif
}
int df_worker_port(const df_worker *w) { return w ? w->port : -1; }
uint64_t df_worker_incarnation(const df_worker *w) { return w ? w->incarnation : 0; }
/* Waits until the worker is asked to stop (a SHUTDOWN message or df_worker_stop elsewhere). */
void df_worker_wait(df_worker *w) {
#ifdef DF__NET
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->n_waiting++;
    while (!w->stopping) pthread_cond_wait(&w->cv, &w->mu);
    w->n_waiting--;
    pthread_cond_broadcast(&w->cv);          /* (a df_worker_stop may wait for this thread to leave) */
    pthread_mutex_unlock(&w->mu);
#else
    (void)w;
#endif
}
void df_worker_stop(df_worker *w) {
    if (!w) return;
#ifdef DF__NET
    pthread_mutex_lock(&w->mu);
    df__w_stop_locked(w);
    while (w->n_conns > 0 || w->n_waiting > 0) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->accept_thread, NULL);
    pthread_join(w->beat_thread, NULL);
    close(w->listen_fd);
    close(w->wake[0]); close(w->wake[1]);
    DF_FREE(w->shakes);
    if (w->key) { memset(w->key, 0, sizeof *w->key); DF_FREE(w->key); }
    for (int i = 0; i < w->n_regs; i++) if (w->regs[i] && --w->regs[i]->refs == 0) df__wreg_free(w->regs[i]);
    for (int i = 0; i < w->n_peers; i++) { df__chan_close(&w->peers[i]->ch); pthread_mutex_destroy(&w->peers[i]->mu); DF_FREE(w->peers[i]); }
    df__w_pending_purge(w, 1);
    DF_FREE(w->regs); DF_FREE(w->conn_fds); DF_FREE(w->peers);
    df_session_free(w->sess);
    df_graph_free(w->empty);
    pthread_mutex_destroy(&w->mu); pthread_cond_destroy(&w->cv); pthread_cond_destroy(&w->beat_cv);
#endif
    DF_FREE(w);
}
df_code df_worker_serve(const df_worker_options *opts, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_worker *w = df_worker_start(opts, st);
    if (!w) return st->code;
    if (opts && opts->on_listening) opts->on_listening(w->port, opts->log_user);
    df_worker_wait(w);
    df_worker_stop(w);
    return DF_OK;
}

/* What a worker says of itself: its incarnation, task and devices. */
df_code df_worker_hello(const char *address, int timeout_ms, df_worker_info *info, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (info) memset(info, 0, sizeof *info);
#ifndef DF__NET
    (void)address; (void)timeout_ms;
    return df_status_set(st, DF_UNIMPLEMENTED, "Workers need POSIX sockets and threads");
#else
    char err[256];
    int ms = timeout_ms > 0 ? timeout_ms : 5000;
    const char *key_path = df__key_path(NULL);
    df__hmac_key *key = key_path ? df__key_load(key_path, "df_worker_hello", st) : NULL;
    if (key_path && !key) return st->code;
    df__wchan ch = {df__connect(address, ms, err, sizeof err), NULL, 0};
    if (ch.fd < 0) { DF_FREE(key); return df_status_set(st, DF_UNAVAILABLE, "%s", err); }
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    setsockopt(ch.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char who[96];
    snprintf(who, sizeof who, "Worker %s", address);
    unsigned char id[DF__W_ID];
    if (key && df__random_bytes(id, sizeof id)) { DF_FREE(key); df__chan_close(&ch); return df_status_set(st, DF_UNAVAILABLE, "df_worker_hello: no random numbers from the system"); }
    if (key && df__w_auth_client(&ch, key, DF__W_ROLE_MASTER, id, ms, who, NULL, st)) { DF_FREE(key); df__chan_close(&ch); return st->code; }
    DF_FREE(key);
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u32(&b, DF__W_VERSION);
    unsigned char *data = NULL;
    uint64_t len = 0;
    const char *why = NULL;
    char buf[160];
    int type = b.oom || df__w_send(&ch, DF__W_HELLO, &b) ? -1 : df__w_recv(&ch, (uint64_t)1 << 20, &data, &len, &why, buf, sizeof buf);
    DF_FREE(b.p);
    if (type == DF__W_ERROR) {                   /* (a keyed worker, and no key here) */
        df__wread r = {data, (size_t)len, NULL};
        uint32_t code = df__wr_u32(&r, "code");
        char *msg = df__wr_str(&r, 4000, "message");
        df_status_set(st, df__peer_code(code), "Worker %s refused: %s", address, msg ? msg : "?");
        DF_FREE(msg); DF_FREE(data);
        df__chan_close(&ch);
        return st->code;
    }
    if (type != DF__W_HELLO_OK) {
        DF_FREE(data);
        df__chan_close(&ch);
        return df_status_set(st, DF_UNAVAILABLE, "Worker %s did not answer HELLO: %s", address, type < 0 ? (why ? why : "it could not be sent") : type == 0 ? "it closed the connection" : "a wrong answer");
    }
    df__wread r = {data, (size_t)len, NULL};
    uint64_t inc = df__wr_u64(&r, "incarnation");
    uint32_t task = df__wr_u32(&r, "task"), nd = df__wr_u32(&r, "devices");
    if (info) { info->incarnation = inc; info->task = (int)task; info->num_devices = (int)nd; }
    for (uint32_t i = 0; i < nd && !r.bad; i++) {
        char *name = df__wr_str(&r, 95, "device name");
        if (name && info && i < DF_WORKER_MAX_DEVICES) snprintf(info->devices[i], sizeof info->devices[i], "%s", name);
        DF_FREE(name);
    }
    DF_FREE(data);
    df__w_send(&ch, DF__W_CLOSE, NULL);
    df__chan_close(&ch);
    if (r.bad) return df_status_set(st, DF_DATA_LOSS, "Worker %s sent a malformed HELLO answer (%s)", address, r.bad);
    return DF_OK;
#endif
}
