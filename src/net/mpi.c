/* ==========================================================================================
   src/net/mpi.c: The MPI transport                                                     >>mpi
   MPI (-DDATAFLOW_MPI, linked with MPI)
   `mpirun -np N app`: rank 0 is the master, ranks 1..N-1 serve as workers (task rank-1). The
   workers' addresses are "mpi:R". A connection to one is a local socket pair whose bytes a
   bridge carries as MPI messages: a pump thread reads every local end and sends what it
   reads
   to the peer rank (tag DATA, the channel's id first); a receiver thread takes every message
   and writes it to its channel's local end. An OPEN message makes the peer connect its own
   worker's loopback port for the channel; CLOSE ends a channel; STOP ends the bridge. So the
   frames, the tensors among them, travel through MPI (and whatever fabric it drives), and
   the
   protocol above is unchanged. MPI errors return codes (MPI_ERRORS_RETURN): a channel whose
   sends fail is closed, which the protocol sees as a closed connection.
   ========================================================================================== */
#ifdef DATAFLOW_MPI
enum { DF__MPI_OPEN = 101, DF__MPI_DATA = 102, DF__MPI_CLOSE = 103, DF__MPI_STOP = 104, DF__MPI_CHUNK = 1 << 20 };
typedef struct df__mpi_chan { uint64_t id; int peer, fd; } df__mpi_chan;
static struct {
    int rank, size, worker_port, wake[2], running;
    pthread_mutex_t mu;
    df__mpi_chan *ch;
    int n, cap;
    uint64_t next_id;
    pthread_t pump, recv;
    df_worker *worker;
} df__mpi = {0, 0, 0, {-1, -1}, 0, PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, 0, NULL};

static void df__mpi_add(uint64_t id, int peer, int fd) {
    pthread_mutex_lock(&df__mpi.mu);
    if (df__grow(&df__mpi.ch, &df__mpi.cap, df__mpi.n + 1, sizeof *df__mpi.ch)) df__mpi.ch[df__mpi.n++] = (df__mpi_chan){id, peer, fd};
    else close(fd);
    pthread_mutex_unlock(&df__mpi.mu);
    char c = 1;
    if (write(df__mpi.wake[1], &c, 1) < 0) { /* (the pump polls again soon) */ }
}
static int df__mpi_find(uint64_t id, int *peer) {       /* its local fd, or -1 */
    int fd = -1;
    pthread_mutex_lock(&df__mpi.mu);
    for (int i = 0; i < df__mpi.n && fd < 0; i++) if (df__mpi.ch[i].id == id) { fd = df__mpi.ch[i].fd; if (peer) *peer = df__mpi.ch[i].peer; }
    pthread_mutex_unlock(&df__mpi.mu);
    return fd;
}
static void df__mpi_drop(uint64_t id) {
    pthread_mutex_lock(&df__mpi.mu);
    for (int i = 0; i < df__mpi.n; i++)
        if (df__mpi.ch[i].id == id) { shutdown(df__mpi.ch[i].fd, SHUT_RDWR); close(df__mpi.ch[i].fd); df__mpi.ch[i] = df__mpi.ch[--df__mpi.n]; break; }
    pthread_mutex_unlock(&df__mpi.mu);
}
DF_PRIVATE int df__mpi_connect(const char *addr, char *err, size_t en) {
    char *end = NULL;
    long r = strtol(addr + 4, &end, 10);
    if (!df__mpi.running || !end || *end || r < 0 || r >= df__mpi.size) { snprintf(err, en, "'%s' is not a rank of this MPI job", addr); return -1; }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) { snprintf(err, en, "socketpair: %s", strerror(errno)); return -1; }
    pthread_mutex_lock(&df__mpi.mu);
    uint64_t id = ((uint64_t)df__mpi.rank << 40) | ++df__mpi.next_id;
    pthread_mutex_unlock(&df__mpi.mu);
    if (MPI_Send(&id, 8, MPI_BYTE, (int)r, DF__MPI_OPEN, MPI_COMM_WORLD) != MPI_SUCCESS) {
        close(sv[0]); close(sv[1]);
        snprintf(err, en, "MPI could not reach rank %ld", r);
        return -1;
    }
    df__mpi_add(id, (int)r, sv[1]);
    return sv[0];
}
/* local bytes to MPI: every channel's local end, polled */
static void *df__mpi_pump_main(void *arg) {
    (void)arg;
    char *buf = (char *)DF_MALLOC(8 + DF__MPI_CHUNK);
    struct pollfd *pf = NULL;
    uint64_t *ids = NULL;
    int *peers = NULL, cap = 0;
    while (buf && __atomic_load_n(&df__mpi.running, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&df__mpi.mu);
        int n = df__mpi.n;
        if (n + 1 > cap) {
            cap = 2 * (n + 1);
            pf = (struct pollfd *)DF_REALLOC(pf, (size_t)cap * sizeof *pf);
            ids = (uint64_t *)DF_REALLOC(ids, (size_t)cap * sizeof *ids);
            peers = (int *)DF_REALLOC(peers, (size_t)cap * sizeof *peers);
        }
        if (!pf || !ids || !peers) { pthread_mutex_unlock(&df__mpi.mu); break; }
        pf[0] = (struct pollfd){df__mpi.wake[0], POLLIN, 0};
        for (int i = 0; i < n; i++) { pf[i + 1] = (struct pollfd){df__mpi.ch[i].fd, POLLIN, 0}; ids[i] = df__mpi.ch[i].id; peers[i] = df__mpi.ch[i].peer; }
        pthread_mutex_unlock(&df__mpi.mu);
        if (poll(pf, (nfds_t)n + 1, 100) <= 0) continue;
        if (pf[0].revents) { char c[64]; if (read(df__mpi.wake[0], c, sizeof c) < 0) { /* nothing */ } }
        for (int i = 0; i < n; i++) {
            if (!pf[i + 1].revents) continue;
            ssize_t got = read(pf[i + 1].fd, buf + 8, DF__MPI_CHUNK);
            if (got > 0) {
                memcpy(buf, &ids[i], 8);
                if (MPI_Send(buf, (int)got + 8, MPI_BYTE, peers[i], DF__MPI_DATA, MPI_COMM_WORLD) != MPI_SUCCESS) df__mpi_drop(ids[i]);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                MPI_Send(&ids[i], 8, MPI_BYTE, peers[i], DF__MPI_CLOSE, MPI_COMM_WORLD);
                df__mpi_drop(ids[i]);
            }
        }
    }
    DF_FREE(buf); DF_FREE(pf); DF_FREE(ids); DF_FREE(peers);
    return NULL;
}
/* MPI to local bytes */
static void *df__mpi_recv_main(void *arg) {
    (void)arg;
    char *buf = (char *)DF_MALLOC(8 + DF__MPI_CHUNK);
    while (buf) {
        MPI_Status ms;
        int count = 0;
        if (MPI_Recv(buf, 8 + DF__MPI_CHUNK, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ms) != MPI_SUCCESS) break;
        MPI_Get_count(&ms, MPI_BYTE, &count);
        if (ms.MPI_TAG == DF__MPI_STOP) break;
        if (count < 8) continue;
        uint64_t id;
        memcpy(&id, buf, 8);
        if (ms.MPI_TAG == DF__MPI_OPEN) {              /* a peer's connection to our worker */
            char err[256], addr[64];
            snprintf(addr, sizeof addr, "127.0.0.1:%d", df__mpi.worker_port);
            int fd = df__mpi.worker_port ? df__connect(addr, 1000, err, sizeof err) : -1;
            if (fd >= 0) df__mpi_add(id, ms.MPI_SOURCE, fd);
            else MPI_Send(&id, 8, MPI_BYTE, ms.MPI_SOURCE, DF__MPI_CLOSE, MPI_COMM_WORLD);
        } else if (ms.MPI_TAG == DF__MPI_DATA) {
            int fd = df__mpi_find(id, NULL);
            if (fd >= 0 && df__sock_write(fd, buf + 8, (size_t)count - 8)) df__mpi_drop(id);
        } else if (ms.MPI_TAG == DF__MPI_CLOSE) {
            int fd = df__mpi_find(id, NULL);
            if (fd >= 0) shutdown(fd, SHUT_WR);    /* (the pump sees EOF once the other side ends) */
        }
    }
    DF_FREE(buf);
    return NULL;
}
static void df__mpi_stop_bridge(void) {
    __atomic_store_n(&df__mpi.running, 0, __ATOMIC_RELEASE);
    char c = 1;
    if (write(df__mpi.wake[1], &c, 1) < 0) { /* the pump times out anyway */ }
    MPI_Send(&c, 1, MPI_BYTE, df__mpi.rank, DF__MPI_STOP, MPI_COMM_WORLD);   /* our own receiver */
    pthread_join(df__mpi.pump, NULL);
    pthread_join(df__mpi.recv, NULL);
    for (int i = 0; i < df__mpi.n; i++) close(df__mpi.ch[i].fd);
    df__mpi.n = 0;
    DF_FREE(df__mpi.ch);
    close(df__mpi.wake[0]); close(df__mpi.wake[1]);
}
df_code df_mpi_init(int *argc, char ***argv, const char **target, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (target) *target = NULL;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return df_status_set(st, DF_UNAVAILABLE, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_MULTIPLE) { MPI_Finalize(); return df_status_set(st, DF_UNIMPLEMENTED, "this MPI does not support MPI_THREAD_MULTIPLE"); }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &df__mpi.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &df__mpi.size);
    if (df__mpi.size < 2) { MPI_Finalize(); return df_status_set(st, DF_INVALID_ARGUMENT, "df_mpi_init: %d rank; the master needs at least one worker rank", df__mpi.size); }
    if (pipe(df__mpi.wake)) { MPI_Finalize(); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "pipe: %s", strerror(errno)); }
    if (df__mpi.rank > 0) {                     /* a worker on loopback, reached through the bridge */
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = df__mpi.rank - 1;
        o.key_file = df__key_path(NULL);        /* (DF_CLUSTER_KEY_FILE: the bridge's local port is keyed too) */
        o.data_dir = getenv("DF_DATA_DIR");     /* (no file access unless named) */
        if (!(df__mpi.worker = df_worker_start(&o, st))) { MPI_Finalize(); return st->code; }
        df__mpi.worker_port = df_worker_port(df__mpi.worker);
    }
    __atomic_store_n(&df__mpi.running, 1, __ATOMIC_RELEASE);
    if (pthread_create(&df__mpi.pump, NULL, df__mpi_pump_main, NULL) || pthread_create(&df__mpi.recv, NULL, df__mpi_recv_main, NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 1);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "df_mpi_init: cannot start the bridge's threads");
    }
    if (df__mpi.rank == 0) {
        static char t[16384];
        size_t k = 0;
        for (int r = 1; r < df__mpi.size && k + 16 < sizeof t; r++) k += (size_t)snprintf(t + k, sizeof t - k, "%smpi:%d", r > 1 ? "," : "", r);
        if (target) *target = t;
        return DF_OK;
    }
    /* a worker rank: serve until the master's df_mpi_finalize, then end the process */
    pthread_join(df__mpi.recv, NULL);            /* (its STOP comes from rank 0) */
    __atomic_store_n(&df__mpi.running, 0, __ATOMIC_RELEASE);
    char c = 1;
    if (write(df__mpi.wake[1], &c, 1) < 0) { /* the pump times out anyway */ }
    pthread_join(df__mpi.pump, NULL);
    df_worker_stop(df__mpi.worker);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    exit(0);
}
void df_mpi_finalize(void) {
    if (df__mpi.rank != 0 || !df__mpi.size) return;
    char c = 1;
    for (int r = 1; r < df__mpi.size; r++) MPI_Send(&c, 1, MPI_BYTE, r, DF__MPI_STOP, MPI_COMM_WORLD);
    df__mpi_stop_bridge();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
}
#endif /* DATAFLOW_MPI */
