/* ==========================================================================================
   src/net/wire.c: Workers and the wire: frames and payloads                            >>net
   Worker processes serve a TCP port. Every message is a frame: a 24-byte header (magic
   "DFW1", protocol version, message type, payload length, flags, and a masked crc32c of the
   header's first 20 bytes) and a payload of little-endian fields: u32, u64, strings (u32
   length and bytes) and tensors (dtype, rank, dims, byte count, bytes). A frame with a bad
   magic, version, type, checksum or flags, a payload over the worker's limit, or a payload
   that does not decode closes its connection, with the reason logged; the worker goes on
   serving the others. Application errors (a graph that does not import) are answered with an
   ERROR message and keep the connection.
   ========================================================================================== */
uint32_t df_crc32c(uint32_t crc, const void *data, size_t n) { return data || !n ? df__crc32c(crc, data, n) : crc; }

#if !defined(DF_NO_THREADS) && ((defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L) || defined(_GNU_SOURCE) || defined(_DEFAULT_SOURCE))
#endif

#ifdef DF__NET
static const char *const df__w_type_names[DF__W_TYPES] = {"?", "HELLO", "HELLO_OK", "PING", "PONG", "REGISTER", "REGISTERED",
                                                          "ERROR", "CLOSE", "SHUTDOWN", "RUN_STEP", "STEP_DONE", "TENSOR",
                                                          "ABORT", "HEARTBEAT"};

/* ---- payloads: a growing buffer to write, a bounded cursor to read ---- */
static unsigned char *df__wb_room(df__wbuf *b, size_t n) {
    if (b->oom) return NULL;
    if (n > SIZE_MAX / 2 - b->n) { b->oom = 1; return NULL; }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        unsigned char *q = (unsigned char *)DF_REALLOC(b->p, cap);
        if (!q) { b->oom = 1; return NULL; }
        b->p = q; b->cap = cap;
    }
    unsigned char *at = b->p + b->n;
    b->n += n;
    return at;
}
DF_PRIVATE void df__wb_u32(df__wbuf *b, uint32_t v) { unsigned char *p = df__wb_room(b, 4); if (p) df__put32(p, v); }
DF_PRIVATE void df__wb_u64(df__wbuf *b, uint64_t v) { unsigned char *p = df__wb_room(b, 8); if (p) df__put64(p, v); }
DF_PRIVATE void df__wb_bytes(df__wbuf *b, const void *d, size_t n) {
    if (n > UINT32_MAX) { b->oom = 1; return; }
    df__wb_u32(b, (uint32_t)n);
    unsigned char *p = df__wb_room(b, n);
    if (p && n) memcpy(p, d, n);
}
DF_PRIVATE void df__wb_str(df__wbuf *b, const char *s) { df__wb_bytes(b, s ? s : "", s ? strlen(s) : 0); }

static int df__wr_need(df__wread *r, size_t n, const char *what) {
    if (r->bad) return 0;
    if (r->n < n) { r->bad = what; return 0; }
    return 1;
}
DF_PRIVATE uint32_t df__wr_u32(df__wread *r, const char *what) {
    if (!df__wr_need(r, 4, what)) return 0;
    uint32_t v = df__get32(r->p); r->p += 4; r->n -= 4;
    return v;
}
DF_PRIVATE uint64_t df__wr_u64(df__wread *r, const char *what) {
    if (!df__wr_need(r, 8, what)) return 0;
    uint64_t v = df__get64(r->p); r->p += 8; r->n -= 8;
    return v;
}
/* bytes into the payload itself (not NUL-ended) */
DF_PRIVATE const unsigned char *df__wr_bytes(df__wread *r, size_t *len, const char *what) {
    uint32_t n = df__wr_u32(r, what);
    if (!df__wr_need(r, n, what)) { *len = 0; return NULL; }
    const unsigned char *p = r->p;
    r->p += n; r->n -= n; *len = n;
    return p;
}
/* a string copied out and NUL-ended (freed by the caller); NULL when malformed */
DF_PRIVATE char *df__wr_str(df__wread *r, size_t max, const char *what) {
    size_t n;
    const unsigned char *p = df__wr_bytes(r, &n, what);
    if (!p && r->bad) return NULL;
    if (n > max) { r->bad = what; return NULL; }
    char *s = (char *)DF_MALLOC(n + 1);
    if (!s) { r->bad = "out of memory"; return NULL; }
    if (n) memcpy(s, p, n);
    s[n] = '\0';
    if (strlen(s) != n) { DF_FREE(s); r->bad = what; return NULL; }   /* (a NUL inside) */
    return s;
}

/* tensors: u32 dtype, u32 rank, u64 dims[rank], u64 byte count, the bytes; strings as their
   packed form (offsets, then the strings), checked string by string when read */
DF_PRIVATE void df__wb_tensor(df__wbuf *b, const df_tensor *t) {
    df__wb_u32(b, (uint32_t)t->dtype);
    df__wb_u32(b, (uint32_t)t->rank);
    for (int d = 0; d < t->rank; d++) df__wb_u64(b, (uint64_t)t->dims[d]);
    df__wb_u64(b, t->nbytes);
    unsigned char *p = df__wb_room(b, t->nbytes);
    if (p && t->nbytes) memcpy(p, t->data, t->nbytes);
}
DF_PRIVATE df_tensor *df__wr_tensor(df__wread *r, const char *what) {
    uint32_t dt = df__wr_u32(r, what), rank = df__wr_u32(r, what);
    if (r->bad) return NULL;
    if (rank > DF_MAX_RANK || dt > 1000 || (!df__dtype_valid((df_dtype)dt) && dt != DF_STRING)) { r->bad = what; return NULL; }
    int64_t dims[DF_MAX_RANK];
    for (uint32_t d = 0; d < rank; d++) {
        uint64_t v = df__wr_u64(r, what);
        if (v > (uint64_t)INT64_MAX) { r->bad = what; return NULL; }
        dims[d] = (int64_t)v;
    }
    uint64_t nbytes = df__wr_u64(r, what);
    if (r->bad || !df__wr_need(r, (size_t)(nbytes > r->n ? r->n + 1 : nbytes), what)) { r->bad = what; return NULL; }
    df_status st;
    df_tensor *t = NULL;
    if (dt == DF_STRING) {
        int64_t n = 1;
        for (uint32_t d = 0; d < rank; d++) { if (dims[d] && n > INT64_MAX / 16 / dims[d]) { r->bad = what; return NULL; } n *= dims[d]; }
        int64_t flat = (int64_t)nbytes;
        if ((uint64_t)(n + 1) * 8 > nbytes || !(t = df__tensor_alloc(NULL, DF_UINT8, 1, &flat, &st))) { r->bad = what; return NULL; }
        memcpy(t->data, r->p, (size_t)nbytes);
        t->dtype = DF_STRING; t->rank = (int)rank; t->n = n;
        memset(t->dims, 0, sizeof t->dims);
        if (rank) memcpy(t->dims, dims, rank * sizeof *dims);
        for (int64_t i = 0; i < n; i++) if (!df_tensor_string(t, i, NULL)) { df_tensor_release(t); r->bad = what; return NULL; }
    } else {
        int64_t n;
        size_t bytes;
        if (df__shape_check((df_dtype)dt, (int)rank, dims, &n, &bytes, 0, &st) != DF_OK || bytes != nbytes) { r->bad = what; return NULL; }
        if (!(t = df__tensor_alloc(NULL, (df_dtype)dt, (int)rank, dims, &st))) { r->bad = "out of memory for a tensor"; return NULL; }
        if (bytes) memcpy(t->data, r->p, bytes);
    }
    r->p += nbytes; r->n -= (size_t)nbytes;
    return t;
}

DF_PRIVATE void df__w_header(unsigned char *h, int type, uint64_t len) {
    df__put32(h, DF__W_MAGIC);
    h[4] = DF__W_VERSION & 0xff; h[5] = DF__W_VERSION >> 8;
    h[6] = (unsigned char)(type & 0xff); h[7] = (unsigned char)(type >> 8);
    df__put64(h + 8, len);
    df__put32(h + 16, 0);
    df__put32(h + 20, df__crc_mask(df__crc32c(0, h, 20)));
}
/* Checks a header; returns the message type, or 0 with *why set. */
static int df__w_check_header(const unsigned char *h, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn) {
    if (df__get32(h) != DF__W_MAGIC) { *why = "not a dataflow frame (bad magic)"; return 0; }
    if (df__get32(h + 20) != df__crc_mask(df__crc32c(0, h, 20))) { *why = "the frame header fails its checksum"; return 0; }
    unsigned version = (unsigned)h[4] | (unsigned)h[5] << 8, type = (unsigned)h[6] | (unsigned)h[7] << 8;
    if (version != DF__W_VERSION) { snprintf(buf, bn, "protocol version %u (this side speaks %d)", version, DF__W_VERSION); *why = buf; return 0; }
    if (!type || type >= DF__W_TYPES) { snprintf(buf, bn, "unknown message type %u", type); *why = buf; return 0; }
    if (df__get32(h + 16)) { *why = "unknown flags in the frame header"; return 0; }
    *len = df__get64(h + 8);
    if (type != DF__W_REGISTER && type != DF__W_RUN_STEP && type != DF__W_TENSOR && type != DF__W_STEP_DONE && *len > 65536 && *len <= max) {
        snprintf(buf, bn, "a %s message of %llu bytes (at most 65536)", df__w_type_names[type], (unsigned long long)*len);
        *why = buf;
        return 0;
    }
    if (*len > max) { snprintf(buf, bn, "a %s message of %llu bytes is over the limit of %llu", df__w_type_names[type], (unsigned long long)*len, (unsigned long long)max); *why = buf; return 0; }
    return (int)type;
}

/* Reads or writes exactly n bytes; 0 on success, -1 on an error or a closed peer. */
DF_PRIVATE int df__sock_read(int fd, void *buf, size_t n) {
    char *p = (char *)buf;
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r; n -= (size_t)r;
    }
    return 0;
}
DF_PRIVATE int df__sock_write(int fd, const void *buf, size_t n) {
    const char *p = (const char *)buf;
    while (n) {
#ifdef MSG_NOSIGNAL
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
#else
        ssize_t w = send(fd, p, n, 0);
#endif
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w; n -= (size_t)w;
    }
    return 0;
}
DF_PRIVATE int df__w_send(int fd, int type, const df__wbuf *payload) {
    unsigned char h[DF__W_HEADER + 4096];
    size_t n = payload ? payload->n : 0;
    df__w_header(h, type, n);
    if (n <= 4096) {                              /* small: one write, one segment */
        if (n) memcpy(h + DF__W_HEADER, payload->p, n);
        return df__sock_write(fd, h, DF__W_HEADER + n);
    }
    if (df__sock_write(fd, h, DF__W_HEADER)) return -1;
    return df__sock_write(fd, payload->p, n);
}
/* Reads one frame: its type, the payload in *data (freed by the caller). 0: the peer closed
   cleanly before a header; -1: a broken frame (*why says what). */
DF_PRIVATE int df__w_recv_head(int fd, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn) {
    unsigned char h[DF__W_HEADER];
    *len = 0;
    ssize_t r;
    do r = recv(fd, h, 1, 0); while (r < 0 && errno == EINTR);
    if (r == 0) { *why = "closed"; return 0; }
    if (r < 0 || df__sock_read(fd, h + 1, sizeof h - 1)) { *why = "the connection broke inside a frame header"; return -1; }
    int type = df__w_check_header(h, max, len, why, buf, bn);
    return type ? type : -1;
}
DF_PRIVATE int df__w_recv_body(int fd, int type, unsigned char **data, uint64_t len, const char **why) {
    *data = NULL;
    if (len) {
        if (!(*data = (unsigned char *)DF_MALLOC((size_t)len))) { *why = "out of memory for a message"; return -1; }
        if (df__sock_read(fd, *data, (size_t)len)) { DF_FREE(*data); *data = NULL; *why = "the connection broke inside a message"; return -1; }
    }
    return type;
}
DF_PRIVATE int df__w_recv(int fd, uint64_t max, unsigned char **data, uint64_t *len, const char **why, char *buf, size_t bn) {
    *data = NULL;
    int type = df__w_recv_head(fd, max, len, why, buf, bn);
    if (type <= 0) return type;
    if (*len) {
        if (!(*data = (unsigned char *)DF_MALLOC((size_t)*len))) { *why = "out of memory for a message"; return -1; }
        if (df__sock_read(fd, *data, (size_t)*len)) { DF_FREE(*data); *data = NULL; *why = "the connection broke inside a message"; return -1; }
    }
    return type;
}

/* "host:port" (an IPv4 address or "localhost") to a socket address */
static int df__parse_hostport(const char *s, struct sockaddr_in *a, char *err, size_t en) {
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    const char *colon = s ? strrchr(s, ':') : NULL;
    if (!colon || colon == s) { snprintf(err, en, "'%s' is not host:port", s ? s : "(null)"); return 0; }
    char host[256];
    size_t hl = (size_t)(colon - s);
    if (hl >= sizeof host) { snprintf(err, en, "host name too long in '%s'", s); return 0; }
    memcpy(host, s, hl); host[hl] = '\0';
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (!end || *end || port <= 0 || port > 65535) { snprintf(err, en, "bad port in '%s'", s); return 0; }
    a->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost")) strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) { snprintf(err, en, "'%.200s' is not an IPv4 address or localhost", host); return 0; }
    return 1;
}
#ifdef DATAFLOW_MPI
#endif
/* A connection to addr within timeout_ms, or -1 (err says why). */
DF_PRIVATE int df__connect(const char *addr, int timeout_ms, char *err, size_t en) {
#ifdef DATAFLOW_MPI
    if (addr && !strncmp(addr, "mpi:", 4)) return df__mpi_connect(addr, err, en);
#endif
    struct sockaddr_in a;
    if (!df__parse_hostport(addr, &a, err, en)) return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { snprintf(err, en, "socket: %s", strerror(errno)); return -1; }
    int fl = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int r = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (r < 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        do r = poll(&p, 1, timeout_ms); while (r < 0 && errno == EINTR);   /* (a signal is no failure) */
        int e = 0;
        socklen_t el = sizeof e;
        if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0) r = 0;
        else { errno = r == 0 ? ETIMEDOUT : e ? e : errno; r = -1; }
    }
    if (r < 0) { snprintf(err, en, "cannot connect to %s: %s", addr, strerror(errno)); close(fd); return -1; }
    fcntl(fd, F_SETFL, fl);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {10, 0};                 /* a peer that stops reading fails our writes */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}
#endif /* DF__NET */
