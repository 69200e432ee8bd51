/* ==========================================================================================
   src/net/mpi.c: The MPI transport                                                     >>mpi
   MPI (-DDATAFLOW_MPI, linked with MPI)
   Two ways to run under `mpirun -np N app` (or `srun --mpi=pmix -n N app`): df_mpi_init makes
   rank 0 the master and ranks 1..N-1 workers (task rank-1); df_mpi_init_cluster makes every
   rank a worker of its job that also runs a client of its own (between-graph replication).
   A worker's address is "mpi:R". A connection to one is an MPI channel: frames travel as MPI
   messages on a communicator of our own. A frame's header and a small payload (and its MAC)
   are one message, tag HEAD; a larger payload follows as body messages, sent straight from
   their memory (a tensor's own buffer) with a tag of the channel's (its id and direction),
   and the reader receives them (MPI_Improbe, MPI_Mrecv) straight into the memory it reads
   into: a TENSOR's value into its freshly allocated tensor. On a keyed cluster the body goes
   in chunks of DF__W_MPI_MAC_CHUNK, each signed before it is sent and checked as it comes, and
   the MAC is the frame's last message. One progress thread per process takes every HEAD
   message and queues the frame on its channel; each channel has a socket pair that carries no
   data, only a byte while frames wait (or the channel ended), so the poll loops of the master
   and of the worker wait on it as on a TCP connection, and shutdown() wakes a reader as on a
   socket. An OPEN makes a rank's worker take the channel as a connection (the cluster key's
   handshake first); CLOSE ends a channel; df_mpi_finalize ends the progress threads with a
   FIN from every rank (after each rank's last CLOSE), then MPI_Finalize.
   MPI errors return codes (MPI_ERRORS_RETURN): a failed send fails its frame, which the
   protocol sees as a broken connection.
   ========================================================================================== */
#ifdef DATAFLOW_MPI
enum { DF__MPI_TAG_HEAD = 1, DF__MPI_TAG_BODY = 64, DF__MPI_PREFIX = 24 };
#define DF__MPI_SPIN_MS 0.3
enum { DF__MPI_OPEN = 1, DF__MPI_FRAME, DF__MPI_CLOSE, DF__MPI_STOP, DF__MPI_FIN };
typedef struct df__mpi_msg {         /* a frame that came: its HEAD message, prefix first */
    struct df__mpi_msg *next;
    size_t n;                        /* bytes after the prefix */
    int nmsg;                        /* body messages that follow it */
    unsigned char d[];
} df__mpi_msg;
struct df__mpi_ep {                  /* one end of a channel */
    uint64_t cid;                    /* the connecting rank << 40 | its count of channels */
    int rx_dir, peer;                /* it takes messages of direction rx_dir (0: to the acceptor) */
    int fd, wfd;                     /* the socket pair: fd is the channel's, wfd the progress thread's */
    ino_t ino;                       /* fd's inode (a closed fd whose number came back is not ours) */
    df__mpi_msg *q, *q_tail;         /* frames waiting (under df__mpi.mu) */
    int eof;                         /* the peer closed (under df__mpi.mu) */
    df__mpi_msg *cur;                /* the frame being read (its reader's alone) */
    size_t at;
    int left;                        /* its body messages not yet received */
    unsigned char *scratch;          /* a body message larger than a read */
    size_t s_n, s_at, s_cap;
    struct df__mpi_ep *next;
};
struct df__mpi_tx {
    MPI_Request *req;
    int n, cap, failed, tag;
    struct df__mpi_ep *ep;
};
static struct {
    int rank, size, tag_ub, running, fins, cluster, busy, stop_asked;
    unsigned char *fin_from;         /* the ranks whose FIN came */
    MPI_Comm comm;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct df__mpi_ep *eps;
    struct df__mpi_ep **by_fd;
    int cap_fd;
    uint64_t next_id;
    pthread_t progress;
    df_worker *worker;
} df__mpi = {0, 0, 0, 0, 0, 0, 0, 0, NULL, MPI_COMM_NULL, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0, NULL};

static int df__mpi_tag(uint64_t cid, int dir) {
    uint64_t span = (uint64_t)(df__mpi.tag_ub - DF__MPI_TAG_BODY);
    return DF__MPI_TAG_BODY + (int)((((cid & 0xffffffffffull) << 1) | (uint64_t)dir) % span);
}
/* A wait's pause, by how long the wait has lasted (ms): yields for DF__MPI_SPIN_MS, then sleeps
   of a sixteenth of the time waited past that, from 20 us to 0.2 ms (a 2-core host runs a progress
   thread, a sender and a reader per rank: spinning, or waking often, starves the one working). */
static void df__mpi_pause(double waited) {
    if (waited < DF__MPI_SPIN_MS) { sched_yield(); return; }
    double ms = (waited - DF__MPI_SPIN_MS) * 0.0625;
    long ns = ms < 0.02 ? 20000L : ms > 0.2 ? 200000L : (long)(ms * 1e6);
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}
/* Waits (spinning a while, then sleeping a little) until every request is done; 0 or -1. */
static int df__mpi_wait(int n, MPI_Request *req) {
    double t0 = df__now_ms();
    for (;;) {
        int done = 0;
        if (MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
        if (done) return 0;
        df__mpi_pause(df__now_ms() - t0);
    }
}
static int df__mpi_post(int kind, int dir, uint64_t cid, int nmsg, int to) {
    unsigned char p[DF__MPI_PREFIX];
    memset(p, 0, sizeof p);
    df__put32(p, (uint32_t)kind); df__put32(p + 4, (uint32_t)dir); df__put64(p + 8, cid); df__put32(p + 16, (uint32_t)nmsg);
    MPI_Request r;
    if (MPI_Isend(p, DF__MPI_PREFIX, MPI_BYTE, to, DF__MPI_TAG_HEAD, df__mpi.comm, &r) != MPI_SUCCESS) return -1;
    return df__mpi_wait(1, &r);
}
/* a readable byte on ep's fd while frames wait or the channel ended (df__mpi.mu held) */
static void df__mpi_signal(struct df__mpi_ep *ep) {
    char c = 1;
    if (send(ep->wfd, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) { /* (a byte is there already) */ }
}
static void df__mpi_unsignal(struct df__mpi_ep *ep) {
    char c[16];
    while (recv(ep->fd, c, sizeof c, MSG_DONTWAIT) > 0) {}
}
/* Receives and drops n body messages of (src, tag) that no one will read; gives up at the
   deadline (a sender that died never sends them). */
static void df__mpi_drain(int src, int tag, int n, double deadline) {
    for (int i = 0; i < n; i++) {
        double t0 = df__now_ms();
        for (;;) {
            int flag = 0, count = 0;
            MPI_Message m;
            MPI_Status s;
            if (MPI_Improbe(src, tag, df__mpi.comm, &flag, &m, &s) != MPI_SUCCESS) return;
            if (flag) {
                MPI_Get_count(&s, MPI_BYTE, &count);
                void *buf = DF_MALLOC(count > 0 ? (size_t)count : 1);
                if (!buf || MPI_Mrecv(buf, count, MPI_BYTE, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS) { DF_FREE(buf); return; }
                DF_FREE(buf);
                break;
            }
            double t = df__now_ms();
            if (t > deadline) return;
            df__mpi_pause(t - t0);
        }
    }
}
static void df__mpi_free_msg(df__mpi_msg *m) { DF_FREE(m); }
/* ---- the registry: channels by fd and by (cid, direction) ---- */
static void df__mpi_unlink(struct df__mpi_ep *ep) {    /* (df__mpi.mu held) */
    for (struct df__mpi_ep **p = &df__mpi.eps; *p; p = &(*p)->next) if (*p == ep) { *p = ep->next; break; }
    if (ep->fd >= 0 && ep->fd < df__mpi.cap_fd && df__mpi.by_fd[ep->fd] == ep) df__mpi.by_fd[ep->fd] = NULL;
}
static void df__mpi_ep_free(struct df__mpi_ep *ep, int fds) {
    for (df__mpi_msg *m = ep->q, *n; m; m = n) { n = m->next; df__mpi_free_msg(m); }
    df__mpi_free_msg(ep->cur);
    DF_FREE(ep->scratch);
    if (fds && ep->fd >= 0) close(ep->fd);
    if (ep->wfd >= 0) close(ep->wfd);
    DF_FREE(ep);
}
static struct df__mpi_ep *df__mpi_find(uint64_t cid, int rx_dir) {   /* (df__mpi.mu held) */
    for (struct df__mpi_ep *e = df__mpi.eps; e; e = e->next) if (e->cid == cid && e->rx_dir == rx_dir) return e;
    return NULL;
}
/* A stale entry (its fd was closed without df__chan_close, and the number came back): gone. */
static void df__mpi_drop_stale(struct df__mpi_ep *ep) {   /* (df__mpi.mu held) */
    df__mpi_unlink(ep);
    ep->fd = -1;
    if (df__mpi.running) df__mpi_post(DF__MPI_CLOSE, 1 - ep->rx_dir, ep->cid, 0, ep->peer);
    df__mpi_ep_free(ep, 0);
}
static struct df__mpi_ep *df__mpi_ep_new(uint64_t cid, int rx_dir, int peer) {   /* (df__mpi.mu held) */
    struct df__mpi_ep *ep = (struct df__mpi_ep *)DF_MALLOC(sizeof *ep);
    int sv[2];
    if (!ep) return NULL;
    memset(ep, 0, sizeof *ep);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) { DF_FREE(ep); return NULL; }
    struct stat sb;
    int old = df__mpi.cap_fd;
    if (fstat(sv[0], &sb) || !df__grow(&df__mpi.by_fd, &df__mpi.cap_fd, sv[0] + 1, sizeof *df__mpi.by_fd)) { close(sv[0]); close(sv[1]); DF_FREE(ep); return NULL; }
    for (int i = old; i < df__mpi.cap_fd; i++) df__mpi.by_fd[i] = NULL;
    ep->cid = cid; ep->rx_dir = rx_dir; ep->peer = peer; ep->fd = sv[0]; ep->wfd = sv[1]; ep->ino = sb.st_ino;
    if (df__mpi.by_fd[sv[0]]) df__mpi_drop_stale(df__mpi.by_fd[sv[0]]);
    df__mpi.by_fd[sv[0]] = ep;
    ep->next = df__mpi.eps;
    df__mpi.eps = ep;
    return ep;
}
/* The MPI channel whose fd this is, or NULL (a socket; cheap when MPI is not running). */
DF_PRIVATE struct df__mpi_ep *df__mpi_ep_of(int fd) {
    if (fd < 0 || !__atomic_load_n(&df__mpi.running, __ATOMIC_ACQUIRE)) return NULL;
    pthread_mutex_lock(&df__mpi.mu);
    struct df__mpi_ep *ep = fd < df__mpi.cap_fd ? df__mpi.by_fd[fd] : NULL;
    struct stat sb;
    if (ep && (fstat(fd, &sb) || sb.st_ino != ep->ino)) { df__mpi_drop_stale(ep); ep = NULL; }
    pthread_mutex_unlock(&df__mpi.mu);
    return ep;
}

/* ---- reading a frame ---- */
static int df__mpi_frame_drop(struct df__mpi_ep *ep) {   /* the current frame, read or not: 0 when read whole */
    int whole = ep->cur && ep->at == ep->cur->n && ep->s_at == ep->s_n && !ep->left;
    if (ep->left > 0) df__mpi_drain(ep->peer, df__mpi_tag(ep->cid, ep->rx_dir), ep->left, df__now_ms() + 2000);
    df__mpi_free_msg(ep->cur);
    ep->cur = NULL;
    ep->at = ep->s_n = ep->s_at = 0;
    ep->left = 0;
    return whole ? 0 : -1;
}
static int df__mpi_shut(int fd) {               /* shutdown() here: the reader is to stop */
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}
/* The next frame's header into h: 1; 0 when the channel ended (the peer closed, or shutdown()
   here); -1 when the deadline (monotonic ms; 0: none) passed first. */
DF_PRIVATE int df__mpi_next(struct df__mpi_ep *ep, unsigned char *h, double deadline) {
    if (ep->cur) df__mpi_frame_drop(ep);
    for (;;) {
        pthread_mutex_lock(&df__mpi.mu);
        df__mpi_msg *m = ep->q;
        int eof = ep->eof;
        if (m) {
            if (!(ep->q = m->next)) { ep->q_tail = NULL; if (!ep->eof) df__mpi_unsignal(ep); }
        }
        pthread_mutex_unlock(&df__mpi.mu);
        if (m) {
            ep->cur = m; ep->left = m->nmsg; ep->at = DF__W_HEADER;
            if (m->n < DF__W_HEADER) { df__mpi_frame_drop(ep); return -1; }
            memcpy(h, m->d + DF__MPI_PREFIX, DF__W_HEADER);
            return 1;
        }
        if (eof) return 0;
        int wait = 1000;
        if (deadline > 0) {
            double left = deadline - df__now_ms();
            if (left <= 0) return -1;
            if (left < wait) wait = (int)left + 1;
        }
        struct pollfd p = {ep->fd, POLLIN, 0};
        int r = poll(&p, 1, wait);
        if (r > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL))) return 0;
    }
}
/* n bytes of the current frame into buf: a body message that fits is received into buf itself;
   with m, each piece is hashed as it comes (while the sender signs the next). 0, or -1 (the
   frame is shorter, or its body did not come). */
DF_PRIVATE int df__mpi_read(struct df__mpi_ep *ep, void *buf, size_t n, df__hmac *m) {
    unsigned char *p = (unsigned char *)buf;
    if (!ep->cur) return -1;
    while (n) {
        size_t k;
        if (ep->at < ep->cur->n) {
            k = DF__MIN(n, ep->cur->n - ep->at);
            memcpy(p, ep->cur->d + DF__MPI_PREFIX + ep->at, k);
            ep->at += k;
        } else if (ep->s_at < ep->s_n) {
            k = DF__MIN(n, ep->s_n - ep->s_at);
            memcpy(p, ep->scratch + ep->s_at, k);
            ep->s_at += k;
        } else {
            if (ep->left <= 0) return -1;
            int tag = df__mpi_tag(ep->cid, ep->rx_dir), flag = 0, count = 0;
            MPI_Message mm;
            MPI_Status s;
            double t0 = df__now_ms(), deadline = t0 + 60000;
            for (int spins = 0; !flag; spins++) {
                if (MPI_Improbe(ep->peer, tag, df__mpi.comm, &flag, &mm, &s) != MPI_SUCCESS) return -1;
                if (flag) break;
                if ((spins & 255) == 255 && (df__mpi_shut(ep->fd) || df__now_ms() > deadline)) return -1;
                df__mpi_pause(df__now_ms() - t0);
            }
            MPI_Get_count(&s, MPI_BYTE, &count);
            ep->left--;
            if (count < 0) return -1;
            if ((size_t)count <= n) {             /* straight into the reader's memory */
                if (MPI_Mrecv(p, count, MPI_BYTE, &mm, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
                k = (size_t)count;
            } else {
                if ((size_t)count > ep->s_cap) {
                    unsigned char *q = (unsigned char *)DF_REALLOC(ep->scratch, (size_t)count);
                    if (!q) { MPI_Mrecv(NULL, 0, MPI_BYTE, &mm, MPI_STATUS_IGNORE); return -1; }
                    ep->scratch = q; ep->s_cap = (size_t)count;
                }
                if (MPI_Mrecv(ep->scratch, count, MPI_BYTE, &mm, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
                ep->s_n = (size_t)count; ep->s_at = 0;
                continue;
            }
        }
        if (m) df__hmac_update(m, p, k);
        p += k; n -= k;
    }
    return 0;
}
/* The end of the current frame: 0 when it was read whole, else -1 (what is left is dropped). */
DF_PRIVATE int df__mpi_frame_end(struct df__mpi_ep *ep) { return df__mpi_frame_drop(ep); }

/* ---- sending a frame: its HEAD message (prefix and inline bytes), then body messages ---- */
DF_PRIVATE struct df__mpi_tx *df__mpi_tx_begin(struct df__mpi_ep *ep, unsigned char *head, size_t n, int nmsg) {
    struct df__mpi_tx *tx = (struct df__mpi_tx *)DF_MALLOC(sizeof *tx);
    if (!tx) return NULL;
    memset(tx, 0, sizeof *tx);
    tx->cap = nmsg + 1;
    if (n > INT_MAX || !(tx->req = (MPI_Request *)DF_MALLOC((size_t)tx->cap * sizeof *tx->req))) { DF_FREE(tx); return NULL; }
    tx->ep = ep;
    tx->tag = df__mpi_tag(ep->cid, 1 - ep->rx_dir);
    memset(head, 0, DF__MPI_PREFIX);
    df__put32(head, DF__MPI_FRAME); df__put32(head + 4, (uint32_t)(1 - ep->rx_dir)); df__put64(head + 8, ep->cid); df__put32(head + 16, (uint32_t)nmsg);
    if (MPI_Isend(head, (int)n, MPI_BYTE, ep->peer, DF__MPI_TAG_HEAD, df__mpi.comm, &tx->req[0]) != MPI_SUCCESS) tx->failed = 1;
    else tx->n = 1;
    return tx;
}
DF_PRIVATE int df__mpi_tx_part(struct df__mpi_tx *tx, const void *p, size_t n) {
    if (tx->failed || tx->n >= tx->cap || n > INT_MAX) { tx->failed = 1; return -1; }
    if (MPI_Isend(p, (int)n, MPI_BYTE, tx->ep->peer, tx->tag, df__mpi.comm, &tx->req[tx->n]) != MPI_SUCCESS) { tx->failed = 1; return -1; }
    tx->n++;
    return 0;
}
/* Waits for every message of the frame (a body is sent from the caller's memory): 0 or -1. */
DF_PRIVATE int df__mpi_tx_end(struct df__mpi_tx *tx) {
    if (!tx) return -1;
    int bad = tx->failed || tx->n != tx->cap;
    if (tx->n && df__mpi_wait(tx->n, tx->req)) bad = 1;
    DF_FREE(tx->req);
    DF_FREE(tx);
    return bad ? -1 : 0;
}
/* The end of a channel (df__chan_close): the peer is told; frames not read are dropped. */
DF_PRIVATE void df__mpi_close(struct df__mpi_ep *ep) {
    pthread_mutex_lock(&df__mpi.mu);
    df__mpi_unlink(ep);
    int running = df__mpi.running;
    pthread_mutex_unlock(&df__mpi.mu);
    if (running) df__mpi_post(DF__MPI_CLOSE, 1 - ep->rx_dir, ep->cid, 0, ep->peer);
    int tag = df__mpi_tag(ep->cid, ep->rx_dir);
    if (ep->cur) df__mpi_frame_drop(ep);
    for (df__mpi_msg *m = ep->q; m && running; m = m->next) df__mpi_drain(ep->peer, tag, m->nmsg, df__now_ms() + 2000);
    df__mpi_ep_free(ep, 1);
}

/* A client's channel to rank R ("mpi:R"): its fd, or -1 (err says why). */
DF_PRIVATE int df__mpi_connect(const char *addr, char *err, size_t en) {
    char *end = NULL;
    long r = strtol(addr + 4, &end, 10);
    if (!__atomic_load_n(&df__mpi.running, __ATOMIC_ACQUIRE) || !end || *end || end == addr + 4 || r < 0 || r >= df__mpi.size) {
        snprintf(err, en, "'%s' is not a rank of this MPI job", addr);
        return -1;
    }
    pthread_mutex_lock(&df__mpi.mu);
    uint64_t cid = ((uint64_t)df__mpi.rank << 40) | (++df__mpi.next_id & 0xffffffffffull);
    struct df__mpi_ep *ep = df__mpi_ep_new(cid, 1, (int)r);
    int fd = ep ? ep->fd : -1;
    pthread_mutex_unlock(&df__mpi.mu);
    if (!ep) { snprintf(err, en, "no channel to %s (out of memory or descriptors)", addr); return -1; }
    if (df__mpi_post(DF__MPI_OPEN, 0, cid, 0, (int)r)) {
        df__mpi_close(ep);
        snprintf(err, en, "MPI could not reach rank %ld", r);
        return -1;
    }
    return fd;
}

/* ---- the worker's side: a channel that opened, handed to the rank's worker ---- */
typedef struct df__mpi_shake { df_worker *w; int fd, peer; } df__mpi_shake;
static void *df__mpi_shake_main(void *arg) {
    df__mpi_shake *s = (df__mpi_shake *)arg;
    const unsigned char *id = NULL;
    const df__hmac_key *key = df__worker_key(s->w, &id);
    char who[64];
    snprintf(who, sizeof who, "mpi:%d", s->peer);
    df__wchan ch = {s->fd, NULL, 0};
    uint32_t role = DF__W_ROLE_MASTER;
    df_status st;
    df_status_clear(&st);
    if (!key || df__w_auth_server(&ch, key, id, 5000, who, &role, &st) == DF_OK) df__worker_adopt(s->w, ch.fd, who, ch.k, role);
    else {
        fprintf(stderr, "dataflow worker mpi:%d: closing the connection from %s in its handshake: %s\n", df__mpi.rank, who, st.message);
        df__chan_close(&ch);
    }
    pthread_mutex_lock(&df__mpi.mu);
    df__mpi.busy--;
    pthread_cond_broadcast(&df__mpi.cv);
    pthread_mutex_unlock(&df__mpi.mu);
    DF_FREE(s);
    return NULL;
}
static void df__mpi_opened(uint64_t cid, int src) {
    pthread_mutex_lock(&df__mpi.mu);
    struct df__mpi_ep *ep = df__mpi.worker ? df__mpi_ep_new(cid, 0, src) : NULL;
    df__mpi_shake *s = ep ? (df__mpi_shake *)DF_MALLOC(sizeof *s) : NULL;
    if (s) { s->w = df__mpi.worker; s->fd = ep->fd; s->peer = src; df__mpi.busy++; }
    pthread_mutex_unlock(&df__mpi.mu);
    if (!ep) { df__mpi_post(DF__MPI_CLOSE, 1, cid, 0, src); return; }
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int ok = s && pthread_create(&t, &at, df__mpi_shake_main, s) == 0;
    pthread_attr_destroy(&at);
    if (!ok) {
        df__wchan ch = {ep->fd, NULL, 0};
        df__chan_close(&ch);
        if (s) { pthread_mutex_lock(&df__mpi.mu); df__mpi.busy--; pthread_mutex_unlock(&df__mpi.mu); DF_FREE(s); }
    }
}
/* The progress thread: every HEAD message, until a FIN came from every rank. */
static void *df__mpi_progress_main(void *arg) {
    (void)arg;
#if defined(__linux__) && defined(PR_SET_TIMERSLACK)
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);   /* (its short sleeps end on time) */
#endif
    for (double last = df__now_ms();;) {
        int flag = 0, count = 0;
        MPI_Message mm;
        MPI_Status s;
        if (MPI_Improbe(MPI_ANY_SOURCE, DF__MPI_TAG_HEAD, df__mpi.comm, &flag, &mm, &s) != MPI_SUCCESS) break;
        if (!flag) {
            df__mpi_pause(df__now_ms() - last);
            continue;
        }
        MPI_Get_count(&s, MPI_BYTE, &count);
        df__mpi_msg *m = (df__mpi_msg *)DF_MALLOC(sizeof *m + (count > 0 ? (size_t)count : 1));
        if (!m) { MPI_Mrecv(NULL, 0, MPI_BYTE, &mm, MPI_STATUS_IGNORE); continue; }   /* (truncated: an error, dropped) */
        if (MPI_Mrecv(m->d, count, MPI_BYTE, &mm, MPI_STATUS_IGNORE) != MPI_SUCCESS || count < DF__MPI_PREFIX) { DF_FREE(m); continue; }
        int kind = (int)df__get32(m->d), dir = (int)df__get32(m->d + 4) & 1, src = s.MPI_SOURCE;
        uint64_t cid = df__get64(m->d + 8);
        m->nmsg = (int)df__get32(m->d + 16);
        m->n = (size_t)count - DF__MPI_PREFIX;
        m->next = NULL;
        last = df__now_ms();
        if (kind == DF__MPI_FRAME) {
            pthread_mutex_lock(&df__mpi.mu);
            struct df__mpi_ep *ep = df__mpi_find(cid, dir);
            if (ep && ep->peer == src && !ep->eof) {
                if (ep->q_tail) ep->q_tail->next = m;
                else { ep->q = m; df__mpi_signal(ep); }
                ep->q_tail = m;
                m = NULL;
            }
            pthread_mutex_unlock(&df__mpi.mu);
            if (m) { df__mpi_drain(src, df__mpi_tag(cid, dir), m->nmsg, df__now_ms() + 2000); DF_FREE(m); }   /* (a channel closed here) */
            continue;
        }
        DF_FREE(m);
        if (kind == DF__MPI_OPEN) df__mpi_opened(cid, src);
        else if (kind == DF__MPI_CLOSE) {
            pthread_mutex_lock(&df__mpi.mu);
            struct df__mpi_ep *ep = df__mpi_find(cid, dir);
            if (ep && ep->peer == src && !ep->eof) { ep->eof = 1; df__mpi_signal(ep); }
            pthread_mutex_unlock(&df__mpi.mu);
        } else if (kind == DF__MPI_STOP) {
            pthread_mutex_lock(&df__mpi.mu);
            df__mpi.stop_asked = 1;
            pthread_cond_broadcast(&df__mpi.cv);
            pthread_mutex_unlock(&df__mpi.mu);
        } else if (kind == DF__MPI_FIN) {
            pthread_mutex_lock(&df__mpi.mu);
            if (df__mpi.fin_from && !df__mpi.fin_from[src]) { df__mpi.fin_from[src] = 1; df__mpi.fins++; }
            int all = df__mpi.fins == df__mpi.size;
            pthread_mutex_unlock(&df__mpi.mu);
            if (all) break;
        }
    }
    pthread_mutex_lock(&df__mpi.mu);                /* every channel left ends for its reader */
    __atomic_store_n(&df__mpi.running, 0, __ATOMIC_RELEASE);
    for (struct df__mpi_ep *e = df__mpi.eps; e; e = e->next) if (!e->eof) { e->eof = 1; df__mpi_signal(e); }
    df__mpi.stop_asked = 1;
    pthread_cond_broadcast(&df__mpi.cv);
    pthread_mutex_unlock(&df__mpi.mu);
    return NULL;
}

/* ---- starting and ending ---- */
static df_code df__mpi_start(int *argc, char ***argv, int min_size, df_status *st) {
    int provided = 0, inited = 0;
    MPI_Initialized(&inited);
    if (df__mpi.size) return df_status_set(st, DF_FAILED_PRECONDITION, "df_mpi_init: called twice");
    if (!inited && MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return df_status_set(st, DF_UNAVAILABLE, "MPI_Init_thread failed");
    if (inited) MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) { MPI_Finalize(); return df_status_set(st, DF_UNIMPLEMENTED, "this MPI does not support MPI_THREAD_MULTIPLE"); }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &df__mpi.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &df__mpi.size);
    if (df__mpi.size < min_size) {
        int n = df__mpi.size;
        df__mpi.size = 0;
        MPI_Finalize();
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_mpi_init: %d rank; the master needs at least one worker rank", n);
    }
    void *ub = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    df__mpi.tag_ub = flag && ub ? *(int *)ub : 32767;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &df__mpi.comm) != MPI_SUCCESS) { MPI_Finalize(); return df_status_set(st, DF_UNAVAILABLE, "MPI_Comm_dup failed"); }
    MPI_Comm_set_errhandler(df__mpi.comm, MPI_ERRORS_RETURN);
    return DF_OK;
}
static df_code df__mpi_serve(int task, df_status *st) {   /* this rank's worker, then the progress thread */
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.task = task;
    o.key_file = df__key_path(NULL);             /* (DF_CLUSTER_KEY_FILE: the handshake and every frame signed) */
    o.data_dir = getenv("DF_DATA_DIR");          /* (no file access unless named) */
    if (task >= 0 && !(df__mpi.worker = df_worker_start(&o, st))) { MPI_Abort(MPI_COMM_WORLD, 1); return st->code; }
    if (!(df__mpi.fin_from = (unsigned char *)DF_MALLOC((size_t)df__mpi.size))) { MPI_Abort(MPI_COMM_WORLD, 1); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    memset(df__mpi.fin_from, 0, (size_t)df__mpi.size);
    df__mpi.fins = 0;
    __atomic_store_n(&df__mpi.running, 1, __ATOMIC_RELEASE);
    if (pthread_create(&df__mpi.progress, NULL, df__mpi_progress_main, NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 1);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "df_mpi_init: cannot start the progress thread");
    }
    return DF_OK;
}
/* How long df_mpi_finalize waits for the other ranks (DF_MPI_FINALIZE_TIMEOUT seconds, 60
   unless set; 0: for ever) before it takes a rank for dead and ends the job with MPI_Abort:
   MPI cannot finalize without every rank, and a rank that died never comes. */
static double df__mpi_deadline(void) {
    const char *e = getenv("DF_MPI_FINALIZE_TIMEOUT");
    double sec = e && *e ? atof(e) : 60;
    return sec > 0 ? df__now_ms() + sec * 1e3 : 0;
}
static void df__mpi_give_up(const char *what) {
    char missing[256] = "";
    size_t k = 0;
    for (int r = 0; df__mpi.fin_from && r < df__mpi.size && k + 16 < sizeof missing; r++)
        if (!df__mpi.fin_from[r]) k += (size_t)snprintf(missing + k, sizeof missing - k, "%s%d", k ? "," : " (ranks ", r);
    if (k) snprintf(missing + k, sizeof missing - k, ")");
    fprintf(stderr, "dataflow rank %d: df_mpi_finalize: %s%s did not come in time (a rank died?); ending the job with MPI_Abort\n", df__mpi.rank, what, missing);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}
static void df__mpi_barrier(double deadline, const char *what) {   /* a barrier that sleeps, and gives up at the deadline */
    MPI_Request r;
    int done = 0;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &r) != MPI_SUCCESS) return;
    while (!done) {
        if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
        if (done) break;
        if (deadline > 0 && df__now_ms() > deadline) df__mpi_give_up(what);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}
/* every rank, at its end: the worker stopped, a FIN to every rank (after this rank's last
   CLOSE), the progress thread joined once all came, a barrier, MPI_Finalize */
static void df__mpi_end(double deadline) {
    pthread_mutex_lock(&df__mpi.mu);             /* (no new channel goes to the worker; those in their handshake end first) */
    df_worker *w = df__mpi.worker;
    df__mpi.worker = NULL;
    while (df__mpi.busy) pthread_cond_wait(&df__mpi.cv, &df__mpi.mu);
    pthread_mutex_unlock(&df__mpi.mu);
    df_worker_stop(w);
    for (int r = 0; r < df__mpi.size; r++) df__mpi_post(DF__MPI_FIN, 0, 0, 0, r);
    pthread_mutex_lock(&df__mpi.mu);
    while (df__mpi.running) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&df__mpi.cv, &df__mpi.mu, &ts);
        if (df__mpi.running && deadline > 0 && df__now_ms() > deadline) { pthread_mutex_unlock(&df__mpi.mu); df__mpi_give_up("the end of every rank"); }
    }
    pthread_mutex_unlock(&df__mpi.mu);
    pthread_join(df__mpi.progress, NULL);
    pthread_mutex_lock(&df__mpi.mu);
    while (df__mpi.eps) {                        /* (channels no one closed) */
        struct df__mpi_ep *e = df__mpi.eps;
        df__mpi_unlink(e);
        df__mpi_ep_free(e, 0);                   /* (their fds belong to whoever holds them) */
    }
    DF_FREE(df__mpi.by_fd);
    df__mpi.by_fd = NULL;
    df__mpi.cap_fd = 0;
    pthread_mutex_unlock(&df__mpi.mu);
    df__mpi_barrier(deadline, "a barrier of every rank");
    DF_FREE(df__mpi.fin_from);
    df__mpi.fin_from = NULL;
    MPI_Comm_free(&df__mpi.comm);
    df__mpi.size = 0;
    MPI_Finalize();
}
df_code df_mpi_init(int *argc, char ***argv, const char **target, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (target) *target = NULL;
    if (df__mpi_start(argc, argv, 2, st)) return st->code;
    if (df__mpi_serve(df__mpi.rank > 0 ? df__mpi.rank - 1 : -1, st)) return st->code;
    if (df__mpi.rank == 0) {
        static char t[16384];
        size_t k = 0;
        for (int r = 1; r < df__mpi.size && k + 16 < sizeof t; r++) k += (size_t)snprintf(t + k, sizeof t - k, "%smpi:%d", r > 1 ? "," : "", r);
        if (target) *target = t;
        return DF_OK;
    }
    /* a worker rank: serve until the master's df_mpi_finalize, then end the process */
    pthread_mutex_lock(&df__mpi.mu);
    while (!df__mpi.stop_asked) pthread_cond_wait(&df__mpi.cv, &df__mpi.mu);
    pthread_mutex_unlock(&df__mpi.mu);
    df__mpi_end(df__mpi_deadline());
    exit(0);
}
df_code df_mpi_init_cluster(int *argc, char ***argv, const char *jobs, df_mpi_cluster *out, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (out) memset(out, 0, sizeof *out);
    if (df__mpi_start(argc, argv, 1, st)) return st->code;
    static char t[16384], job[32];
    int at = 0, task = -1;
    size_t k = 0;
    for (const char *p = jobs && *jobs ? jobs : NULL;; ) {   /* "name:count,name:count" */
        char name[32] = "worker";
        long count = df__mpi.size;
        if (p) {
            const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
            char *end = NULL;
            if (!colon || (comma && comma < colon) || colon == p || (size_t)(colon - p) >= sizeof name) {
                df_status_set(st, DF_INVALID_ARGUMENT, "df_mpi_init_cluster: '%s' is not a list of name:count", jobs);
                break;
            }
            memcpy(name, p, (size_t)(colon - p));
            name[colon - p] = '\0';
            count = strtol(colon + 1, &end, 10);
            if (end == colon + 1 || (*end && *end != ',') || count <= 0 || count > df__mpi.size - at) {
                df_status_set(st, DF_INVALID_ARGUMENT, "df_mpi_init_cluster: job '%s' in '%s': a count of 1 to the %d ranks left", name, jobs, df__mpi.size - at);
                break;
            }
            p = *end ? end + 1 : NULL;
        }
        for (size_t i = 0; name[i]; i++)
            if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_' || name[i] == '-')) { df_status_set(st, DF_INVALID_ARGUMENT, "df_mpi_init_cluster: '%s' is not a job name", name); break; }
        if (st->code) break;
        for (const char *q = t; *q; ) {          /* (a job named twice) */
            size_t nl = strlen(name);
            if (!strncmp(q, name, nl) && q[nl] == '=') { df_status_set(st, DF_INVALID_ARGUMENT, "df_mpi_init_cluster: job '%s' named twice in '%s'", name, jobs); break; }
            const char *semi = strchr(q, ';');
            q = semi ? semi + 1 : q + strlen(q);
        }
        if (st->code) break;
        k += (size_t)snprintf(t + k, sizeof t - k, "%s%s=", k ? ";" : "", name);
        for (long i = 0; i < count && k + 24 < sizeof t; i++, at++) {
            k += (size_t)snprintf(t + k, sizeof t - k, "%smpi:%d", i ? "," : "", at);
            if (at == df__mpi.rank) { snprintf(job, sizeof job, "%s", name); task = (int)i; }
        }
        if (!p) break;
    }
    if (!st->code && at != df__mpi.size) df_status_set(st, DF_INVALID_ARGUMENT, "df_mpi_init_cluster: the jobs '%s' count %d ranks; the job has %d", jobs, at, df__mpi.size);
    if (st->code) { MPI_Comm_free(&df__mpi.comm); df__mpi.size = 0; MPI_Finalize(); return st->code; }
    if (df__mpi_serve(task, st)) return st->code;
    df__mpi.cluster = 1;
    MPI_Barrier(MPI_COMM_WORLD);                 /* (every rank's worker serves before any client dials) */
    if (out) { out->rank = df__mpi.rank; out->size = df__mpi.size; out->target = t; out->job = job; out->task = task; }
    return DF_OK;
}
void df_mpi_finalize(void) {
    if (!df__mpi.size) return;
    double deadline = df__mpi_deadline();
    if (df__mpi.cluster) {
        /* Every rank's client done first: this rank's worker serves the others until then (a ps
           reaches here at once and serves for the whole training), so no deadline unless
           DF_MPI_FINALIZE_TIMEOUT is set; the shutdown after it has one. */
        const char *e = getenv("DF_MPI_FINALIZE_TIMEOUT");
        df__mpi_barrier(e && *e ? deadline : 0, "a barrier of every rank's client");
        deadline = df__mpi_deadline();
    } else if (df__mpi.rank == 0)
        for (int r = 1; r < df__mpi.size; r++) df__mpi_post(DF__MPI_STOP, 0, 0, 0, r);
    df__mpi_end(deadline);
}
#endif /* DATAFLOW_MPI */
