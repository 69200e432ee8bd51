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
   A cluster with a key (df_worker_options.key_file, df_session_options.cluster_key_file) starts
   every connection with a mutual challenge: AUTH (the client's role and nonce), AUTH_CHALLENGE
   (the server's nonce and its proof, HMAC-SHA256 under the key of a label and both nonces),
   AUTH_PROOF (the client's proof, under another label), AUTH_OK. Each side derives a key per
   direction from the two nonces; every later frame has flag 1 set and a 32-byte MAC after its
   payload, HMAC-SHA256 under its direction's key of the frame's sequence number, header and
   payload: a frame altered, replayed, dropped or reordered fails it and closes the connection.
   ========================================================================================== */
uint32_t df_crc32c(uint32_t crc, const void *data, size_t n) { return data || !n ? df__crc32c(crc, data, n) : crc; }

#if !defined(DF_NO_THREADS) && ((defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L) || defined(_GNU_SOURCE) || defined(_DEFAULT_SOURCE))
#endif

#ifdef DF__NET
static const char *const df__w_type_names[DF__W_TYPES] = {"?", "HELLO", "HELLO_OK", "PING", "PONG", "REGISTER", "REGISTERED",
                                                          "ERROR", "CLOSE", "SHUTDOWN", "RUN_STEP", "STEP_DONE", "TENSOR",
                                                          "ABORT", "HEARTBEAT", "AUTH", "AUTH_CHALLENGE", "AUTH_PROOF", "AUTH_OK"};

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

DF_PRIVATE void df__w_header(unsigned char *h, int type, uint64_t len, uint32_t flags) {
    df__put32(h, DF__W_MAGIC);
    h[4] = DF__W_VERSION & 0xff; h[5] = DF__W_VERSION >> 8;
    h[6] = (unsigned char)(type & 0xff); h[7] = (unsigned char)(type >> 8);
    df__put64(h + 8, len);
    df__put32(h + 16, flags);
    df__put32(h + 20, df__crc_mask(df__crc32c(0, h, 20)));
}
/* Checks a header; returns the message type, or 0 with *why set. */
DF_PRIVATE int df__w_check_header(const unsigned char *h, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn, int keyed) {
    if (df__get32(h) != DF__W_MAGIC) { *why = "not a dataflow frame (bad magic)"; return 0; }
    if (df__get32(h + 20) != df__crc_mask(df__crc32c(0, h, 20))) { *why = "the frame header fails its checksum"; return 0; }
    unsigned version = (unsigned)h[4] | (unsigned)h[5] << 8, type = (unsigned)h[6] | (unsigned)h[7] << 8;
    if (version != DF__W_VERSION) { snprintf(buf, bn, "protocol version %u (this side speaks %d)", version, DF__W_VERSION); *why = buf; return 0; }
    if (!type || type >= DF__W_TYPES) { snprintf(buf, bn, "unknown message type %u", type); *why = buf; return 0; }
    uint32_t flags = df__get32(h + 16);
    if (flags & ~(uint32_t)DF__W_FLAG_MAC) { *why = "unknown flags in the frame header"; return 0; }
    if (keyed && !flags) { *why = "an unsigned frame on a connection of a keyed cluster"; return 0; }
    if (!keyed && flags) { *why = "a signed frame, but this side has no cluster key"; return 0; }
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
/* ---- signed frames ---- */
struct df__wkeys {                   /* a keyed connection's signing state */
    df__hmac_key tx, rx;             /* one key per direction, derived from both nonces */
    uint64_t tx_seq, rx_seq;         /* frames sent and read: in every MAC, so a frame replayed,
                                        dropped or reordered fails */
    df__hmac rx_mac;                 /* the frame being read */
};
DF_PRIVATE void df__chan_close(df__wchan *ch) {
#ifdef DATAFLOW_MPI
    struct df__mpi_ep *ep = df__mpi_ep_of(ch->fd);
    if (ep) { df__mpi_close(ep); ch->fd = -1; }   /* (the peer told; its fd closed) */
#endif
    if (ch->fd >= 0) close(ch->fd);
    ch->fd = -1;
    DF_FREE(ch->k);
    ch->k = NULL;
}
enum { DF__W_MAC_CHUNK = 256 << 10 };
static int df__w_send_signed_big(df__wchan *ch, int type, const void *a, size_t an, const void *b, size_t bn);
#ifdef DATAFLOW_MPI
/* A frame on an MPI channel (src/net/mpi.c): the header, a small payload and its MAC in one
   message; a payload over DF__W_MPI_INLINE as body messages sent from a and b themselves (on a
   keyed channel in chunks of DF__W_MPI_MAC_CHUNK, each signed as it goes and checked as it
   comes, then the MAC). */
enum { DF__W_MPI_PREFIX = 24, DF__W_MPI_INLINE = 64 << 10, DF__W_MPI_MAC_CHUNK = 1 << 20 };
static int df__w_send_mpi(df__wchan *ch, struct df__mpi_ep *ep, int type, const void *a, size_t an, const void *b, size_t bn) {
    struct df__wkeys *k = ch->k;
    size_t n = an + bn, chunk = k ? (size_t)DF__W_MPI_MAC_CHUNK : (size_t)1 << 30;
    int ina = an <= DF__W_MPI_INLINE, inb = ina && n <= DF__W_MPI_INLINE;
    const unsigned char *part[2] = {ina ? NULL : (const unsigned char *)a, inb ? NULL : (const unsigned char *)b};
    size_t len[2] = {ina ? 0 : an, inb ? 0 : bn};
    int nmsg = 0;
    for (int i = 0; i < 2; i++) nmsg += (int)((len[i] + chunk - 1) / chunk);
    if (k && nmsg) nmsg++;                       /* (the MAC: the frame's last message) */
    size_t inl = DF__W_MPI_PREFIX + DF__W_HEADER + (ina ? an : 0) + (inb ? bn : 0) + (k && !nmsg ? DF__W_MAC : 0);
    unsigned char small[DF__W_MPI_PREFIX + DF__W_HEADER + 1024 + DF__W_MAC], mac[DF__W_MAC];
    unsigned char *head = inl <= sizeof small ? small : (unsigned char *)DF_MALLOC(inl), *q;
    if (!head) return -1;
    df__w_header(head + DF__W_MPI_PREFIX, type, n, k ? DF__W_FLAG_MAC : 0);
    q = head + DF__W_MPI_PREFIX + DF__W_HEADER;
    if (ina && an) { memcpy(q, a, an); q += an; }
    if (inb && bn) { memcpy(q, b, bn); q += bn; }
    df__hmac m;
    if (k) {
        unsigned char seq[8];
        df__put64(seq, k->tx_seq++);
        df__hmac_begin(&m, &k->tx);
        df__hmac_update(&m, seq, 8);
        df__hmac_update(&m, head + DF__W_MPI_PREFIX, (size_t)(q - head) - DF__W_MPI_PREFIX);
        if (!nmsg) { df__hmac_final(&m, mac); memcpy(q, mac, DF__W_MAC); }
    }
    struct df__mpi_tx *tx = df__mpi_tx_begin(ep, head, inl, nmsg);
    for (int i = 0; tx && i < 2; i++)
        for (size_t at = 0; at < len[i]; at += chunk) {
            size_t c = len[i] - at < chunk ? len[i] - at : chunk;
            if (k) df__hmac_update(&m, part[i] + at, c);   /* (signed while the chunk before travels) */
            if (df__mpi_tx_part(tx, part[i] + at, c)) break;
        }
    if (tx && k && nmsg) { df__hmac_final(&m, mac); df__mpi_tx_part(tx, mac, DF__W_MAC); }
    int r = df__mpi_tx_end(tx);
    if (head != small) DF_FREE(head);
    return r;
}
#endif
/* A frame from parts: header, a, b (and the MAC). 0, or -1 when it cannot be sent. The
   caller serializes the writers of a connection (the sequence number is theirs). */
DF_PRIVATE int df__w_send_parts(df__wchan *ch, int type, const void *a, size_t an, const void *b, size_t bn) {
#ifdef DATAFLOW_MPI
    struct df__mpi_ep *ep = df__mpi_ep_of(ch->fd);
    if (ep) return df__w_send_mpi(ch, ep, type, a, an, b, bn);
#endif
    unsigned char h[DF__W_HEADER + 4096 + DF__W_MAC];
    struct df__wkeys *k = ch->k;
    size_t n = an + bn, tail = k ? DF__W_MAC : 0;
    if (k && n > 2 * (size_t)DF__W_MAC_CHUNK) return df__w_send_signed_big(ch, type, a, an, b, bn);
    df__w_header(h, type, n, k ? DF__W_FLAG_MAC : 0);
    unsigned char mac[DF__W_MAC];
    if (k) {
        unsigned char seq[8];
        df__put64(seq, k->tx_seq++);
        df__hmac m;
        df__hmac_begin(&m, &k->tx);
        df__hmac_update(&m, seq, 8);
        df__hmac_update(&m, h, DF__W_HEADER);
        if (an) df__hmac_update(&m, a, an);
        if (bn) df__hmac_update(&m, b, bn);
        df__hmac_final(&m, mac);
    }
    if (n <= 4096) {                              /* small: one write, one segment */
        if (an) memcpy(h + DF__W_HEADER, a, an);
        if (bn) memcpy(h + DF__W_HEADER + an, b, bn);
        if (tail) memcpy(h + DF__W_HEADER + n, mac, tail);
        return df__sock_write(ch->fd, h, DF__W_HEADER + n + tail);
    }
    if (df__sock_write(ch->fd, h, DF__W_HEADER) || (an && df__sock_write(ch->fd, a, an)) || (bn && df__sock_write(ch->fd, b, bn))) return -1;
    return tail ? df__sock_write(ch->fd, mac, tail) : 0;
}
/* Large keyed payloads go out as they are signed, a chunk at a time, so the receiver checks
   one chunk while the next is signed here (the two hashes overlap instead of adding up). */
static int df__w_send_signed_big(df__wchan *ch, int type, const void *a, size_t an, const void *b, size_t bn) {
    struct df__wkeys *k = ch->k;
    unsigned char h[DF__W_HEADER], seq[8], mac[DF__W_MAC];
    df__w_header(h, type, an + bn, DF__W_FLAG_MAC);
    df__put64(seq, k->tx_seq++);
    df__hmac m;
    df__hmac_begin(&m, &k->tx);
    df__hmac_update(&m, seq, 8);
    df__hmac_update(&m, h, DF__W_HEADER);
    if (df__sock_write(ch->fd, h, DF__W_HEADER)) return -1;
    const unsigned char *part[2] = {(const unsigned char *)a, (const unsigned char *)b};
    size_t len[2] = {an, bn};
    for (int i = 0; i < 2; i++)
        for (size_t at = 0; at < len[i]; at += DF__W_MAC_CHUNK) {
            size_t n = len[i] - at < DF__W_MAC_CHUNK ? len[i] - at : DF__W_MAC_CHUNK;
            df__hmac_update(&m, part[i] + at, n);
            if (df__sock_write(ch->fd, part[i] + at, n)) return -1;
        }
    df__hmac_final(&m, mac);
    return df__sock_write(ch->fd, mac, sizeof mac);
}
DF_PRIVATE int df__w_send(df__wchan *ch, int type, const df__wbuf *payload) {
    return df__w_send_parts(ch, type, payload ? payload->p : NULL, payload ? payload->n : 0, NULL, 0);
}
/* Reads one frame header: its type, or 0 (the peer closed cleanly before it), or -1 (a broken
   frame: *why says what). A keyed connection's MAC begins with it; the payload is read with
   df__chan_read and the frame ends with df__w_recv_end. */
DF_PRIVATE int df__w_recv_head(df__wchan *ch, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn) {
    unsigned char h[DF__W_HEADER];
    *len = 0;
#ifdef DATAFLOW_MPI
    struct df__mpi_ep *ep = df__mpi_ep_of(ch->fd);
    if (ep) {
        int got = df__mpi_next(ep, h, 0);
        if (got <= 0) { *why = got ? "the MPI channel broke" : "closed"; return got; }
        return df__w_take_head(ch, h, max, len, why, buf, bn);
    }
#endif
    ssize_t r;
    /* between frames a peer may be idle for ever: with frame_ms the socket's receive timeout
       (set once) ends only a frame that stops halfway, not the wait for the next one */
    do r = recv(ch->fd, h, sizeof h, 0); while (r < 0 && (errno == EINTR || (ch->frame_ms > 0 && (errno == EAGAIN || errno == EWOULDBLOCK))));
    if (r == 0) { *why = "closed"; return 0; }
    if (r < 0 || (r < (ssize_t)sizeof h && df__sock_read(ch->fd, h + r, sizeof h - (size_t)r))) { *why = "the connection broke inside a frame header"; return -1; }
    return df__w_take_head(ch, h, max, len, why, buf, bn);
}
/* A header already read (the handshake poller reads a keyless connection's first one). */
DF_PRIVATE int df__w_take_head(df__wchan *ch, const unsigned char *h, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn) {
    *len = 0;
    int type = df__w_check_header(h, max, len, why, buf, bn, ch->k != NULL);
    if (type && ch->k) {
        unsigned char seq[8];
        df__put64(seq, ch->k->rx_seq++);
        df__hmac_begin(&ch->k->rx_mac, &ch->k->rx);
        df__hmac_update(&ch->k->rx_mac, seq, 8);
        df__hmac_update(&ch->k->rx_mac, h, DF__W_HEADER);
    }
    return type ? type : -1;
}
DF_PRIVATE int df__chan_read(df__wchan *ch, void *buf, size_t n) {
#ifdef DATAFLOW_MPI
    struct df__mpi_ep *ep = df__mpi_ep_of(ch->fd);
    if (ep) return df__mpi_read(ep, buf, n, ch->k ? &ch->k->rx_mac : NULL);   /* (hashed message by message) */
#endif
    if (!ch->k) return df__sock_read(ch->fd, buf, n);
    for (size_t at = 0; at < n; at += DF__W_MAC_CHUNK) {   /* (checked as it comes: see df__w_send_signed_big) */
        size_t part = n - at < DF__W_MAC_CHUNK ? n - at : DF__W_MAC_CHUNK;
        if (df__sock_read(ch->fd, (unsigned char *)buf + at, part)) return -1;
        df__hmac_update(&ch->k->rx_mac, (unsigned char *)buf + at, part);
    }
    return 0;
}
/* The end of a frame: on a keyed connection its MAC, read and checked. 0, or -1 with *why. */
DF_PRIVATE int df__w_recv_end(df__wchan *ch, const char **why) {
    unsigned char got[DF__W_MAC], want[DF__W_MAC];
#ifdef DATAFLOW_MPI
    struct df__mpi_ep *ep = df__mpi_ep_of(ch->fd);
    if (ep) {                                    /* (the MAC is the frame's last bytes; then nothing may be left) */
        int bad = ch->k && df__mpi_read(ep, got, sizeof got, NULL);
        if (df__mpi_frame_end(ep) || bad) { *why = bad ? "the MPI channel broke inside a frame's MAC" : "a frame longer than its header says"; return -1; }
        if (!ch->k) return 0;
    } else
#endif
    if (!ch->k) return 0;
    else if (df__sock_read(ch->fd, got, sizeof got)) { *why = "the connection broke inside a frame's MAC"; return -1; }
    df__hmac_final(&ch->k->rx_mac, want);
    if (!df__ct_equal(got, want, sizeof want)) { *why = "a frame failed its MAC (altered, replayed, reordered or not signed with the cluster key)"; return -1; }
    return 0;
}
DF_PRIVATE int df__w_recv_body(df__wchan *ch, int type, unsigned char **data, uint64_t len, const char **why) {
    *data = NULL;
    if (len) {
        if (!(*data = (unsigned char *)DF_MALLOC((size_t)len))) { *why = "out of memory for a message"; return -1; }
        if (df__chan_read(ch, *data, (size_t)len)) { DF_FREE(*data); *data = NULL; *why = "the connection broke inside a message"; return -1; }
    }
    if (df__w_recv_end(ch, why)) { DF_FREE(*data); *data = NULL; return -1; }
    return type;
}
DF_PRIVATE int df__w_recv(df__wchan *ch, uint64_t max, unsigned char **data, uint64_t *len, const char **why, char *buf, size_t bn) {
    *data = NULL;
    int type = df__w_recv_head(ch, max, len, why, buf, bn);
    if (type <= 0) return type;
    return df__w_recv_body(ch, type, data, *len, why);
}

/* A status code a peer sent: one of ours (1 to 16), else the message is malformed (DF_DATA_LOSS);
   never taken as our own DF_OK. */
DF_PRIVATE df_code df__peer_code(uint32_t code) { return code >= 1 && code <= 16 ? (df_code)code : DF_DATA_LOSS; }

/* ---- the cluster key and the handshake ---- */
/* The key file named, else DF_CLUSTER_KEY_FILE's, else NULL (no key). */
DF_PRIVATE const char *df__key_path(const char *given) {
    if (given && *given) return given;
    const char *env = getenv("DF_CLUSTER_KEY_FILE");
    return env && *env ? env : NULL;
}
/* The cluster key from a file: a regular file its owner alone may read, of 16 to 4096 bytes
   (trailing white space dropped, so `openssl rand -hex 32 > key` works). */
DF_PRIVATE df__hmac_key *df__key_load(const char *path, const char *who, df_status *st) {
    int flags = O_RDONLY | O_NONBLOCK;
#ifdef O_CLOEXEC
    flags |= O_CLOEXEC;
#endif
    int fd = open(path, flags);
    if (fd < 0) {
        df_status_set(st, errno == ENOENT ? DF_NOT_FOUND : DF_PERMISSION_DENIED, "%s: cannot open the cluster key file '%s': %s", who, path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    unsigned char buf[4097];
    ssize_t n = 0;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) df_status_set(st, DF_FAILED_PRECONDITION, "%s: the cluster key '%s' is not a regular file", who, path);
    else if (sb.st_mode & 077)
        df_status_set(st, DF_PERMISSION_DENIED, "%s: the cluster key '%s' may be read by others than its owner (mode %03o): chmod 600 it", who, path, (unsigned)(sb.st_mode & 0777));
    else {
        size_t got = 0;
        while (got < sizeof buf && (n = read(fd, buf + got, sizeof buf - got)) > 0) got += (size_t)n;
        if (n < 0) df_status_set(st, DF_DATA_LOSS, "%s: cannot read the cluster key '%s': %s", who, path, strerror(errno));
        n = (ssize_t)got;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t')) n--;
        if (!st->code && (got > 4096 || n < 16))
            df_status_set(st, DF_INVALID_ARGUMENT, "%s: the cluster key '%s' holds %s bytes; a key is 16 to 4096 bytes (e.g. openssl rand -hex 32)", who, path,
                          got > 4096 ? "more than 4096" : n ? "too few" : "no");
    }
    close(fd);
    df__hmac_key *k = st->code ? NULL : (df__hmac_key *)DF_MALLOC(sizeof *k);
    if (k) df__hmac_key_init(k, buf, (size_t)n);
    else if (!st->code) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    memset(buf, 0, sizeof buf);
    return k;
}
/* HMAC under the cluster key of a label, a zero byte and the handshake's transcript (role, both
   ids, both nonces). */
static void df__w_auth_mac(const df__hmac_key *key, const char *label, const df__wauth *a, unsigned char out[32]) {
    unsigned char role[4];
    df__put32(role, a->role);
    df__hmac m;
    df__hmac_begin(&m, key);
    df__hmac_update(&m, label, strlen(label) + 1);
    df__hmac_update(&m, role, 4);
    df__hmac_update(&m, a->idc, DF__W_ID);
    df__hmac_update(&m, a->ids, DF__W_ID);
    df__hmac_update(&m, a->nc, DF__W_NONCE);
    df__hmac_update(&m, a->ns, DF__W_NONCE);
    df__hmac_final(&m, out);
}
DF_PRIVATE void df__w_auth_proof(const df__hmac_key *key, int server, const df__wauth *a, unsigned char out[32]) {
    df__w_auth_mac(key, server ? "dataflow-1 server proof" : "dataflow-1 client proof", a, out);
}
/* The connection's keys, from the side of the server or of the client. */
DF_PRIVATE struct df__wkeys *df__w_auth_keys(const df__hmac_key *key, int server, const df__wauth *a) {
    struct df__wkeys *k = (struct df__wkeys *)DF_MALLOC(sizeof *k);
    if (!k) return NULL;
    memset(k, 0, sizeof *k);
    unsigned char c2s[32], s2c[32];
    df__w_auth_mac(key, "dataflow-1 client to server", a, c2s);
    df__w_auth_mac(key, "dataflow-1 server to client", a, s2c);
    df__hmac_key_init(&k->tx, server ? s2c : c2s, 32);
    df__hmac_key_init(&k->rx, server ? c2s : s2c, 32);
    memset(c2s, 0, sizeof c2s); memset(s2c, 0, sizeof s2c);
    return k;
}
/* One unsigned frame of the handshake within timeout_ms: its type (ERROR: *st set from it). */
/* n bytes by the deadline (monotonic ms): 0; 1 when the peer closed before the first byte;
   -1 when it broke or the deadline passed (a peer that trickles holds us no longer). */
static int df__read_by(int fd, unsigned char *buf, size_t n, double deadline) {
    size_t got = 0;
    while (got < n) {
        int left = (int)(deadline - df__now_ms());
        struct pollfd p = {fd, POLLIN, 0};
        int r;
        if (left <= 0) return -1;
        do r = poll(&p, 1, left); while (r < 0 && errno == EINTR);
        if (r <= 0) return -1;
        ssize_t k = recv(fd, buf + got, n - got, MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (k <= 0) return k == 0 && !got ? 1 : -1;
        got += (size_t)k;
    }
    return 0;
}
/* One unsigned frame of the handshake, whole within timeout_ms: its type (ERROR: *st set from
   it; -1: none, *st says why, *closed set when the peer closed without a word). */
static int df__w_auth_await(df__wchan *ch, int timeout_ms, unsigned char **data, uint64_t *len, const char *who, int *closed, df_status *st) {
    double deadline = df__now_ms() + timeout_ms;
    unsigned char h[DF__W_HEADER];
    const char *why = NULL;
    char buf[160];
    *data = NULL;
    *len = 0;
#ifdef DATAFLOW_MPI
    struct df__mpi_ep *ep = df__mpi_ep_of(ch->fd);
    int r = ep ? df__mpi_next(ep, h, deadline) : df__read_by(ch->fd, h, sizeof h, deadline), type = 0;
    if (ep) r = r == 1 ? 0 : r == 0 ? 1 : -1;
#else
    int r = df__read_by(ch->fd, h, sizeof h, deadline), type = 0;
#endif
    if (r == 1) {
        if (closed) *closed = 1;
        df_status_set(st, DF_UNAVAILABLE, "%s closed the connection in the handshake (refused, or it may have died)", who);
        return -1;
    }
    if (r < 0) { df_status_set(st, DF_UNAVAILABLE, "%s did not answer the handshake within %d ms", who, timeout_ms); return -1; }
    if (!(type = df__w_check_header(h, 4096, len, &why, buf, sizeof buf, 0))) {
        df_status_set(st, DF_UNAUTHENTICATED, "%s answered the handshake with a broken frame (%s)", who, why);
        return -1;
    }
#ifdef DATAFLOW_MPI
    if (ep && ((*len && (!(*data = (unsigned char *)DF_MALLOC((size_t)*len)) || df__mpi_read(ep, *data, (size_t)*len, NULL))) || df__mpi_frame_end(ep))) {
        df_status_set(st, DF_UNAVAILABLE, "%s sent a broken handshake answer", who);
        return -1;
    }
    if (!ep)
#endif
    if (*len && (!(*data = (unsigned char *)DF_MALLOC((size_t)*len)) || df__read_by(ch->fd, *data, (size_t)*len, deadline))) {
        df_status_set(st, DF_UNAVAILABLE, "%s did not finish its handshake answer within %d ms", who, timeout_ms);
        return -1;
    }
    if (type == DF__W_ERROR) {
        df__wread rd = {*data, (size_t)*len, NULL};
        uint32_t code = df__wr_u32(&rd, "code");
        char *msg = df__wr_str(&rd, 4000, "message");
        df_status_set(st, code == DF_PERMISSION_DENIED || code == DF_RESOURCE_EXHAUSTED ? (df_code)code : DF_UNAUTHENTICATED, "%s refused the connection: %s", who, msg ? msg : "?");
        DF_FREE(msg);
        return -1;
    }
    return type;
}
/* The client's side of the handshake on a fresh connection; on success ch is keyed. *closed
   (when given) is set when the worker closed the connection in it without a word: a worker
   under a flood of connections closes the oldest to make room, so the caller may dial again. */
DF_PRIVATE df_code df__w_auth_client(df__wchan *ch, const df__hmac_key *key, uint32_t role, const unsigned char *id, int timeout_ms, const char *who, int *closed, df_status *st) {
    df__wauth a;
    unsigned char proof[32];
    memset(&a, 0, sizeof a);
    a.role = role;
    memcpy(a.idc, id, DF__W_ID);
    if (df__random_bytes(a.nc, sizeof a.nc)) return df_status_set(st, DF_UNAVAILABLE, "%s: no random numbers from the system for the handshake", who);
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u32(&b, DF__W_VERSION);
    df__wb_u32(&b, role);
    df__wb_bytes(&b, a.nc, sizeof a.nc);
    df__wb_bytes(&b, a.idc, sizeof a.idc);
    int sent = !b.oom && !df__w_send(ch, DF__W_AUTH, &b);
    DF_FREE(b.p);
    if (!sent) return df_status_set(st, DF_UNAVAILABLE, "%s: cannot send the handshake: %s", who, strerror(errno));
    unsigned char *data = NULL;
    uint64_t len = 0;
    int type = df__w_auth_await(ch, timeout_ms, &data, &len, who, closed, st);
    if (type < 0) { DF_FREE(data); return st->code; }
    df__wread r = {data, (size_t)len, NULL};
    size_t nl = 0, pl = 0, il = 0;
    const unsigned char *np = df__wr_bytes(&r, &nl, "nonce"), *pp = df__wr_bytes(&r, &pl, "proof"), *ip = df__wr_bytes(&r, &il, "id");
    if (type != DF__W_AUTH_CHALLENGE || r.bad || r.n || nl != DF__W_NONCE || pl != 32 || il != DF__W_ID) {
        DF_FREE(data);
        return df_status_set(st, DF_UNAUTHENTICATED, "%s answered the handshake with %s%s", who, df__w_type_names[type],
                             type == DF__W_AUTH_CHALLENGE ? " (malformed)" : " (is it a worker with --key-file?)");
    }
    memcpy(a.ns, np, sizeof a.ns);
    memcpy(a.ids, ip, sizeof a.ids);
    df__w_auth_proof(key, 1, &a, proof);
    int good = df__ct_equal(proof, pp, 32), self = !memcmp(a.ids, a.idc, DF__W_ID);
    DF_FREE(data);
    data = NULL;
    if (self) return df_status_set(st, DF_UNAUTHENTICATED, "%s is this process itself (a reflected handshake)", who);
    if (!good) return df_status_set(st, DF_UNAUTHENTICATED, "%s does not hold this cluster's key (its proof is wrong)", who);
    df__w_auth_proof(key, 0, &a, proof);
    memset(&b, 0, sizeof b);
    df__wb_bytes(&b, proof, sizeof proof);
    sent = !b.oom && !df__w_send(ch, DF__W_AUTH_PROOF, &b);
    DF_FREE(b.p);
    if (!sent) return df_status_set(st, DF_UNAVAILABLE, "%s: the connection broke in the handshake", who);
    type = df__w_auth_await(ch, timeout_ms, &data, &len, who, closed, st);
    DF_FREE(data);
    if (type < 0) return st->code;
    if (type != DF__W_AUTH_OK || len) return df_status_set(st, DF_UNAUTHENTICATED, "%s ended the handshake with %s", who, df__w_type_names[type]);
    if (!(ch->k = df__w_auth_keys(key, 0, &a))) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    return DF_OK;
}

#ifdef DATAFLOW_MPI
/* The server's side of the handshake on a channel that blocks (src/net/mpi.c's channels; a TCP
   worker polls its handshakes instead), as the worker's poller does it: AUTH, AUTH_CHALLENGE,
   AUTH_PROOF, AUTH_OK; on success ch is keyed and *role says who dialled. */
DF_PRIVATE df_code df__w_auth_server(df__wchan *ch, const df__hmac_key *key, const unsigned char *id, int timeout_ms, const char *who, uint32_t *role, df_status *st) {
    df__wauth a;
    unsigned char *data = NULL, proof[32];
    uint64_t len = 0;
    memset(&a, 0, sizeof a);
    int type = df__w_auth_await(ch, timeout_ms, &data, &len, who, NULL, st);
    if (type < 0) { DF_FREE(data); return st->code; }
    df__wread rd = {data, (size_t)len, NULL};
    uint32_t version = df__wr_u32(&rd, "version");
    a.role = df__wr_u32(&rd, "role");
    size_t nl = 0, il = 0;
    const unsigned char *nc = df__wr_bytes(&rd, &nl, "nonce"), *idc = df__wr_bytes(&rd, &il, "id");
    df__wbuf b = {NULL, 0, 0, 0};
    if (type != DF__W_AUTH) {
        df__wb_u32(&b, DF_UNAUTHENTICATED);
        df__wb_str(&b, "This worker serves only masters and workers that hold its cluster key (df_session_options.cluster_key_file or DF_CLUSTER_KEY_FILE)");
        if (!b.oom) (void)df__w_send(ch, DF__W_ERROR, &b);
        DF_FREE(b.p); DF_FREE(data);
        return df_status_set(st, DF_UNAUTHENTICATED, "%s did not prove the cluster key (it sent %s)", who, df__w_type_names[type]);
    }
    if (rd.bad || rd.n || nl != DF__W_NONCE || il != DF__W_ID || version != DF__W_VERSION || (a.role != DF__W_ROLE_MASTER && a.role != DF__W_ROLE_WORKER)) {
        DF_FREE(data);
        return df_status_set(st, DF_UNAUTHENTICATED, "%s sent a malformed AUTH", who);
    }
    if (!memcmp(idc, id, DF__W_ID)) { DF_FREE(data); return df_status_set(st, DF_UNAUTHENTICATED, "%s: a handshake of this worker's own (reflected)", who); }
    memcpy(a.nc, nc, DF__W_NONCE);
    memcpy(a.idc, idc, DF__W_ID);
    memcpy(a.ids, id, DF__W_ID);
    DF_FREE(data);
    data = NULL;
    if (df__random_bytes(a.ns, DF__W_NONCE)) return df_status_set(st, DF_UNAVAILABLE, "%s: no random numbers from the system for the handshake", who);
    df__w_auth_proof(key, 1, &a, proof);
    df__wb_bytes(&b, a.ns, DF__W_NONCE);
    df__wb_bytes(&b, proof, sizeof proof);
    df__wb_bytes(&b, id, DF__W_ID);
    int sent = !b.oom && !df__w_send(ch, DF__W_AUTH_CHALLENGE, &b);
    DF_FREE(b.p);
    if (!sent) return df_status_set(st, DF_UNAVAILABLE, "%s: the connection broke in the handshake", who);
    type = df__w_auth_await(ch, timeout_ms, &data, &len, who, NULL, st);
    if (type < 0) { DF_FREE(data); return st->code; }
    df__wread rp = {data, (size_t)len, NULL};
    size_t pl = 0;
    const unsigned char *pc = df__wr_bytes(&rp, &pl, "proof");
    unsigned char expect[32];
    df__w_auth_proof(key, 0, &a, expect);
    int good = type == DF__W_AUTH_PROOF && !rp.bad && !rp.n && pl == 32 && df__ct_equal(pc, expect, 32);
    DF_FREE(data);
    if (!good) {
        memset(&b, 0, sizeof b);
        df__wb_u32(&b, DF_UNAUTHENTICATED);
        df__wb_str(&b, "Wrong cluster key");
        if (!b.oom) (void)df__w_send(ch, DF__W_ERROR, &b);
        DF_FREE(b.p);
        return df_status_set(st, DF_UNAUTHENTICATED, "%s: wrong cluster key", who);
    }
    struct df__wkeys *k = df__w_auth_keys(key, 1, &a);
    if (!k) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    if (df__w_send(ch, DF__W_AUTH_OK, NULL)) { DF_FREE(k); return df_status_set(st, DF_UNAVAILABLE, "%s: the connection broke in the handshake", who); }
    ch->k = k;
    *role = a.role;
    return DF_OK;
}
#endif

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
DF_PRIVATE double df__now_ms(void) {         /* monotonic milliseconds */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
/* 1 when addr ("host:port") is a loopback address (127.0.0.0/8, localhost) */
DF_PRIVATE int df__addr_is_loopback(const char *addr) {
    struct sockaddr_in a;
    char err[64];
    return df__parse_hostport(addr, &a, err, sizeof err) && (ntohl(a.sin_addr.s_addr) >> 24) == 127;
}
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
