/* ==========================================================================================
   src/checkpoint.c: String tensors, checkpoints and the saver                   >>checkpoint
   String tensors: enough of them for the checkpoint ops' names and paths.
   Data: n+1 uint64 offsets into the bytes after them, then the strings, each ended by a NUL
   (offsets[i + 1] - offsets[i] - 1 is string i's length). Strings are values: nothing writes
   into a string tensor once made.
   ========================================================================================== */
df_tensor *df_tensor_new_strings(int rank, const int64_t *dims, const char *const *strings, df_status *st) {
    df_status local;
    if (!st) st = &local;
    int64_t n;
    size_t bytes;
    if (df__shape_check(DF_UINT8, rank, dims, &n, &bytes, 0, st) != DF_OK) return NULL;
    if (n && !strings) { df_status_set(st, DF_INVALID_ARGUMENT, "df_tensor_new_strings: strings is NULL"); return NULL; }
    if ((uint64_t)n > (uint64_t)(SIZE_MAX / 16)) { df_status_set(st, DF_INVALID_ARGUMENT, "df_tensor_new_strings: too many strings"); return NULL; }
    size_t total = ((size_t)n + 1) * 8;
    for (int64_t i = 0; i < n; i++) {
        if (!strings[i]) { df_status_set(st, DF_INVALID_ARGUMENT, "df_tensor_new_strings: string %lld is NULL", (long long)i); return NULL; }
        size_t len = strlen(strings[i]);
        if (len > SIZE_MAX / 4 - total) { df_status_set(st, DF_INVALID_ARGUMENT, "df_tensor_new_strings: too many bytes"); return NULL; }
        total += len + 1;
    }
    int64_t flat = (int64_t)total;
    df_tensor *t = df__tensor_alloc(NULL, DF_UINT8, 1, &flat, st);
    if (!t) return NULL;
    t->dtype = DF_STRING;
    t->rank = rank;
    memset(t->dims, 0, sizeof t->dims);
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    t->n = n;
    unsigned char *base = (unsigned char *)t->data, *text = base + ((size_t)n + 1) * 8;
    uint64_t at = 0;
    for (int64_t i = 0; i <= n; i++) {
        memcpy(base + (size_t)i * 8, &at, 8);
        if (i == n) break;
        size_t len = strlen(strings[i]);
        memcpy(text + at, strings[i], len + 1);
        at += len + 1;
    }
    df_status_clear(st);
    return t;
}
const char *df_tensor_string(const df_tensor *t, int64_t i, size_t *len) {
    if (len) *len = 0;
    if (!t || t->dtype != DF_STRING || i < 0 || i >= t->n || (uint64_t)t->n > (uint64_t)(SIZE_MAX / 16)) return NULL;
    size_t head = ((size_t)t->n + 1) * 8;
    if (t->nbytes < head) return NULL;
    uint64_t a, b;
    memcpy(&a, (const char *)t->data + (size_t)i * 8, 8);
    memcpy(&b, (const char *)t->data + (size_t)i * 8 + 8, 8);
    if (a >= b || b > t->nbytes - head) return NULL;
    const char *s = (const char *)t->data + head + a;
    if (s[b - a - 1] != '\0') return NULL;
    if (len) *len = (size_t)(b - a - 1);
    return s;
}

/* ---- Checkpoints ----
   One file per checkpoint, at the path given (TensorFlow's "prefix"); little-endian:
     header, 40 bytes: magic "DFCKPT\r\n", u32 format version (1), u32 oldest version that can
       read it (1), u32 0x01020304 (the byte order), u32 entries, u64 index bytes, u64 data bytes
     index: per tensor, by name in byte order: u32 name length, the name, u32 dtype, u32 rank,
       i64 dims[rank], u64 offset in the data, u64 size, u32 masked crc32c of its bytes
     u32 masked crc32c of the header and the index
     data: the tensors' bytes one after another
   Writing goes to "<path>.tmp-<16 hex digits>", a new file (O_EXCL: never one that is there,
   nor a symlink planted there) under a name nobody can guess, which is fsynced, renamed over
   path, and the directory fsynced: a crash at any moment leaves the old checkpoint or the new one, whole.
   Reading checks every size and offset against the file's size before allocating anything, and
   every crc: a damaged or truncated file is DF_DATA_LOSS. */
#ifndef O_CLOEXEC
#define O_CLOEXEC 0            /* (hidden by strict C modes in the one-translation-unit use) */
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0           /* (likewise; O_CREAT | O_EXCL already refuses a symlink) */
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif
enum { DF__CK_HEADER = 40, DF__CK_VERSION = 1, DF__CK_MAX_NAME = 65536, DF__CK_MIN_ENTRY = 32 };
static const char df__ck_magic[8] = {'D', 'F', 'C', 'K', 'P', 'T', '\r', '\n'};

/* crc32c (Castagnoli), eight bytes a step; masked as TensorFlow masks stored crcs (a crc of
   data that holds crcs is then not trivially related to them) */
static uint32_t df__crc_table[8][256];
static int df__crc_ready;
static void df__crc_init(void) {
    if (__atomic_load_n(&df__crc_ready, __ATOMIC_ACQUIRE)) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        df__crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) df__crc_table[t][i] = (df__crc_table[t - 1][i] >> 8) ^ df__crc_table[0][df__crc_table[t - 1][i] & 0xff];
    __atomic_store_n(&df__crc_ready, 1, __ATOMIC_RELEASE);   /* (racing initialisers write the same) */
}
DF_PRIVATE uint32_t df__crc32c(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    df__crc_init();
    crc = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = df__crc_table[7][lo & 0xff] ^ df__crc_table[6][(lo >> 8) & 0xff] ^ df__crc_table[5][(lo >> 16) & 0xff] ^
              df__crc_table[4][lo >> 24] ^ df__crc_table[3][p[4]] ^ df__crc_table[2][p[5]] ^ df__crc_table[1][p[6]] ^ df__crc_table[0][p[7]];
    }
    while (n--) crc = (crc >> 8) ^ df__crc_table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}
DF_PRIVATE uint32_t df__crc_mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

/* Fault injection for tests: the n-th file operation of a checkpoint write from now on (a write,
   an fsync, a close, a rename) fails with EIO (mode 0) or ends the process there (mode 1). */
static int64_t df__io_fault_at, df__io_ops;
static int df__io_fault_mode;
void df_testing_io_faults(int64_t n, int mode) {
    __atomic_store_n(&df__io_ops, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&df__io_fault_mode, mode, __ATOMIC_RELAXED);
    __atomic_store_n(&df__io_fault_at, n, __ATOMIC_RELEASE);
}
static int df__io_fault(void) {
    int64_t at = __atomic_load_n(&df__io_fault_at, __ATOMIC_ACQUIRE);
    if (at <= 0 || __atomic_add_fetch(&df__io_ops, 1, __ATOMIC_RELAXED) != at) return 0;
    if (__atomic_load_n(&df__io_fault_mode, __ATOMIC_RELAXED) == 1) _exit(86);
    errno = EIO;
    return 1;
}
static df_code df__io_error(df_status *st, int err, const char *what, const char *path) {
    df_code code = err == ENOENT || err == ENOTDIR ? DF_NOT_FOUND
                 : err == EACCES || err == EPERM || err == EROFS ? DF_PERMISSION_DENIED
                 : err == ENOSPC || err == EDQUOT || err == EFBIG ? DF_RESOURCE_EXHAUSTED : DF_INTERNAL;
    return df_status_set(st, code, "%s '%s': %s", what, path, strerror(err));
}
static int df__write_all(int fd, const void *data, size_t n) {
    const char *p = (const char *)data;
    while (n) {
        size_t chunk = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        if (df__io_fault()) return -1;
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { if (w == 0) errno = EIO; return -1; }
        p += w; n -= (size_t)w;
    }
    return 0;
}
/* n bytes at offset `at` (fewer at the end of the file); -1 on an error (lseek and read: pread
   is hidden by strict C modes) */
static long long df__read_at(int fd, void *buf, size_t n, uint64_t at) {
    if (at > (uint64_t)INT64_MAX || lseek(fd, (off_t)at, SEEK_SET) == (off_t)-1) return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (long long)got;
}
DF_PRIVATE void df__put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
DF_PRIVATE void df__put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
DF_PRIVATE uint32_t df__get32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
DF_PRIVATE uint64_t df__get64(const unsigned char *p) { return (uint64_t)df__get32(p) | (uint64_t)df__get32(p + 4) << 32; }

/* Each name sorts with its index beside it: qsort has no context argument in C11, and a shared
   key let two threads writing at once sort by each other's names. */
typedef struct df__ck_named { const char *name; int index; } df__ck_named;
/* splitmix64's finaliser: the bits of a temporary file's name */
static uint64_t df__ck_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int df__ck_cmp(const void *a, const void *b) {
    return strcmp(((const df__ck_named *)a)->name, ((const df__ck_named *)b)->name);
}

/* Writes the checkpoint at pl (NULL: at path as given); path is what messages show. */
static df_code df__ck_write(const df__fileloc *pl, const char *path, int n, const char *const *names, df_tensor *const *tensors, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    df__fileloc here = {DF__CWD, path, NULL};
    if (!pl) pl = &here;
    if (!path || !*path) return df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: no path");
    if (n < 0 || (n > 0 && (!names || !tensors))) return df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: %d tensors, names %p, tensors %p", n, (const void *)names, (const void *)tensors);
    if (n > (1 << 24)) return df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: %d tensors is more than %d", n, 1 << 24);
    for (int i = 0; i < n; i++) {
        const df_tensor *t = tensors[i];
        if (!names[i] || !*names[i] || strlen(names[i]) > DF__CK_MAX_NAME)
            return df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: tensor %d has no name, or one longer than %d bytes", i, DF__CK_MAX_NAME);
        if (!t) return df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: tensor '%s' is NULL", names[i]);
        if (t->ref || !df__dtype_valid(t->dtype))
            return df_status_set(st, DF_UNIMPLEMENTED, "df_checkpoint_write: tensor '%s' is of type %s, which checkpoints do not hold", names[i],
                                 t->ref ? "reference" : df_dtype_name(t->dtype));
#ifdef DATAFLOW_CUDA
        if (df__tensor_gpu(t)) return df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: tensor '%s' is in GPU memory", names[i]);
#endif
    }
    df__ck_named *order = (df__ck_named *)DF_MALLOC(((size_t)n + 1) * sizeof *order);
    size_t index_bytes = 0;
    uint64_t data_bytes = 0;
    unsigned char *head = NULL;
    char *tmp = NULL;
    int fd = -1;
    df_code code = DF_OK;
    if (!order) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory writing a checkpoint");
    for (int i = 0; i < n; i++) { order[i].name = names[i]; order[i].index = i; }
    qsort(order, (size_t)n, sizeof *order, df__ck_cmp);
    for (int i = 0; i < n; i++) {
        if (i && !strcmp(order[i].name, order[i - 1].name)) {
            code = df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: the name '%s' is given twice", order[i].name);
            goto done;
        }
        index_bytes += 4 + strlen(order[i].name) + 8 + 8 * (size_t)tensors[order[i].index]->rank + 20;
        data_bytes += tensors[order[i].index]->nbytes;
    }
    if (!(head = (unsigned char *)DF_MALLOC(DF__CK_HEADER + index_bytes + 4))) { code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory writing a checkpoint"); goto done; }
    memcpy(head, df__ck_magic, 8);
    df__put32(head + 8, DF__CK_VERSION);
    df__put32(head + 12, DF__CK_VERSION);
    df__put32(head + 16, 0x01020304u);
    df__put32(head + 20, (uint32_t)n);
    df__put64(head + 24, index_bytes);
    df__put64(head + 32, data_bytes);
    {
        unsigned char *p = head + DF__CK_HEADER;
        uint64_t off = 0;
        for (int k = 0; k < n; k++) {
            const df_tensor *t = tensors[order[k].index];
            size_t len = strlen(order[k].name);
            df__put32(p, (uint32_t)len); memcpy(p + 4, order[k].name, len); p += 4 + len;
            df__put32(p, (uint32_t)t->dtype); df__put32(p + 4, (uint32_t)t->rank); p += 8;
            for (int d = 0; d < t->rank; d++, p += 8) df__put64(p, (uint64_t)t->dims[d]);
            df__put64(p, off); df__put64(p + 8, t->nbytes); df__put32(p + 16, df__crc_mask(df__crc32c(0, t->data, t->nbytes)));
            p += 20;
            off += t->nbytes;
        }
        df__put32(p, df__crc_mask(df__crc32c(0, head, DF__CK_HEADER + index_bytes)));
    }
    if ((code = df__fileloc_check_target(pl, path, st)) != DF_OK) goto done;
    {   /* a new file under a name nobody can guess: O_EXCL never opens what is there already (a
           file, or a symlink planted to redirect the write), and a name taken is tried again; in
           the file's directory (pl's), so inside the data dir when there is one */
        static int counter;
        size_t plen = strlen(pl->name) + 64;
        if (!(tmp = (char *)DF_MALLOC(plen))) { code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory writing a checkpoint"); goto done; }
        for (int attempt = 0; fd < 0 && attempt < 16; attempt++) {
            uint64_t r = df__ck_mix((uint64_t)time(NULL) << 32 ^ (uint64_t)clock() ^ (uint64_t)(uintptr_t)tmp ^
                                    (uint64_t)getpid() << 40 ^ (uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 20);
            snprintf(tmp, plen, "%s.tmp-%016llx", pl->name, (unsigned long long)r);
            fd = df__fileloc_open(pl, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0 && errno != EEXIST) break;
        }
    }
    if (fd < 0) { code = df__io_error(st, errno, "Cannot create the checkpoint file", tmp); goto done; }
    if (df__write_all(fd, head, DF__CK_HEADER + index_bytes + 4)) { code = df__io_error(st, errno, "Cannot write the checkpoint", tmp); goto done; }
    for (int k = 0; k < n; k++)
        if (df__write_all(fd, tensors[order[k].index]->data, tensors[order[k].index]->nbytes)) { code = df__io_error(st, errno, "Cannot write the checkpoint", tmp); goto done; }
    if (df__io_fault() || fsync(fd)) { code = df__io_error(st, errno, "Cannot flush the checkpoint to disk", tmp); goto done; }
    {
        int c = df__io_fault() ? -1 : close(fd);
        fd = -1;
        if (c) { code = df__io_error(st, errno, "Cannot close the checkpoint", tmp); goto done; }
    }
    if (df__io_fault() || df__fileloc_rename(pl, tmp, pl->name)) { code = df__io_error(st, errno, "Cannot move the checkpoint into place at", path); goto done; }
    DF_FREE(tmp); tmp = NULL;
    if (pl->dir != DF__CWD) {   /* the rename itself to disk: the directory fsynced */
        if ((df__io_fault() || fsync(pl->dir)) && errno != EINVAL) code = df__io_error(st, errno, "Cannot flush the checkpoint's directory of", path);
    } else {
        size_t plen = strlen(path);
        char *dir = (char *)DF_MALLOC(plen + 2);
        if (!dir) { code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory writing a checkpoint"); goto done; }
        memcpy(dir, path, plen + 1);
        char *slash = strrchr(dir, '/');
        if (!slash) strcpy(dir, ".");
        else if (slash == dir) dir[1] = '\0';
        else *slash = '\0';
        int dfd = open(dir, O_RDONLY | O_CLOEXEC);
        if (dfd >= 0) {
            if (df__io_fault() || fsync(dfd)) {
                if (errno != EINVAL) code = df__io_error(st, errno, "Cannot flush the checkpoint's directory", dir);   /* (EINVAL: not supported there) */
            }
            close(dfd);
        }
        DF_FREE(dir);
    }
done:
    if (fd >= 0) close(fd);
    if (tmp) { df__fileloc_unlink(pl, tmp); DF_FREE(tmp); }
    DF_FREE(order); DF_FREE(head);
    return code;
}
df_code df_checkpoint_write(const char *path, int n, const char *const *names, df_tensor *const *tensors, df_status *st) {
    return df__ck_write(NULL, path, n, names, tensors, st);
}

/* A checkpoint's index, parsed and checked; the data read from fd or from `mem`. */
typedef struct df__ck_entry { const char *name; size_t name_len; df_dtype dtype; int rank; int64_t dims[DF_MAX_RANK]; uint64_t off, size; uint32_t crc; } df__ck_entry;
typedef struct df__ck { unsigned char *index; int n; df__ck_entry *e; uint64_t data_at; const unsigned char *mem; int fd; const char *path; } df__ck;
static void df__ck_close(df__ck *ck) {
    if (ck->fd >= 0) close(ck->fd);
    DF_FREE(ck->index); DF_FREE(ck->e);
    ck->index = NULL; ck->e = NULL; ck->fd = -1;
}
/* Parses the first DF__CK_HEADER + index + 4 bytes (`head`, owned by ck afterwards) of a file of
   `size` bytes. */
static df_code df__ck_parse(df__ck *ck, unsigned char *head, size_t have, uint64_t size, df_status *st) {
    const char *p = ck->path;
    ck->index = head;
    if (have < DF__CK_HEADER || size < DF__CK_HEADER) return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': truncated (%llu bytes, no whole header)", p, (unsigned long long)size);
    if (memcmp(head, df__ck_magic, 8)) return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': not a checkpoint of this library (bad magic)", p);
    uint64_t index_bytes = df__get64(head + 24), data_bytes = df__get64(head + 32);
    if (index_bytes > size || data_bytes > size || DF__CK_HEADER + index_bytes + 4 + data_bytes != size)
        return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': its header gives %llu index and %llu data bytes, the file has %llu in all (truncated or damaged)", p,
                             (unsigned long long)index_bytes, (unsigned long long)data_bytes, (unsigned long long)size);
    if (have < DF__CK_HEADER + index_bytes + 4) return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': truncated index", p);
    if (df__crc_mask(df__crc32c(0, head, DF__CK_HEADER + (size_t)index_bytes)) != df__get32(head + DF__CK_HEADER + index_bytes))
        return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': the header and index fail their checksum (damaged)", p);
    if (df__get32(head + 16) != 0x01020304u) return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': unknown byte order", p);
    if (df__get32(head + 12) > DF__CK_VERSION)
        return df_status_set(st, DF_UNIMPLEMENTED, "Checkpoint '%s': format version %u needs a newer reader (this one reads version %d)", p, df__get32(head + 8), DF__CK_VERSION);
    uint32_t n = df__get32(head + 20);
    if (n > index_bytes / DF__CK_MIN_ENTRY) return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': %u entries cannot fit %llu index bytes", p, n, (unsigned long long)index_bytes);
    if (!(ck->e = (df__ck_entry *)DF_MALLOC(((size_t)n + 1) * sizeof *ck->e))) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory reading a checkpoint");
    ck->n = (int)n;
    ck->data_at = DF__CK_HEADER + index_bytes + 4;
    const unsigned char *q = head + DF__CK_HEADER, *end = q + index_bytes;
    for (uint32_t i = 0; i < n; i++) {
        df__ck_entry *e = &ck->e[i];
        if (end - q < 4) goto bad;
        uint32_t len = df__get32(q);
        q += 4;
        if (len == 0 || len > DF__CK_MAX_NAME || (uint64_t)(end - q) < (uint64_t)len + 8) goto bad;
        e->name = (const char *)q; e->name_len = len;
        q += len;
        uint32_t dt = df__get32(q), rank = df__get32(q + 4);
        q += 8;
        e->dtype = (df_dtype)dt;
        if (dt > 1000 || !df__dtype_valid(e->dtype) || rank > DF_MAX_RANK || (uint64_t)(end - q) < 8ull * rank + 20) goto bad;
        e->rank = (int)rank;
        uint64_t count = 1;
        int zero = 0;
        for (uint32_t d = 0; d < rank; d++, q += 8) {
            uint64_t v = df__get64(q);
            if (v > (uint64_t)INT64_MAX) goto bad;
            e->dims[d] = (int64_t)v;
            if (!v) zero = 1;
            else if (count > UINT64_MAX / v) count = UINT64_MAX;
            else count *= v;
        }
        if (zero) count = 0;
        e->off = df__get64(q); e->size = df__get64(q + 8); e->crc = df__get32(q + 16);
        q += 20;
        uint64_t es = df_dtype_size(e->dtype);
        if (count > UINT64_MAX / es || count * es != e->size || e->off > data_bytes || e->size > data_bytes - e->off) goto bad;
        if (i) {                                  /* names in order, none twice */
            const df__ck_entry *f = &ck->e[i - 1];
            int c = memcmp(f->name, e->name, f->name_len < e->name_len ? f->name_len : e->name_len);
            if (c > 0 || (c == 0 && f->name_len >= e->name_len)) goto bad;
        }
        continue;
    bad:
        return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': entry %u of the index is malformed (a size, shape, type or offset out of bounds)", p, i);
    }
    if (q != end) return df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': %lld bytes after the last index entry", p, (long long)(end - q));
    return DF_OK;
}
/* The checkpoint at pl (NULL: at path as given; confined: a link is refused, not followed). */
static df_code df__ck_open(df__ck *ck, const df__fileloc *pl, const char *path, df_status *st) {
    memset(ck, 0, sizeof *ck);
    ck->fd = -1;
    ck->path = path;
    if (!path) return df_status_set(st, DF_INVALID_ARGUMENT, "No checkpoint path");
    /* (O_NONBLOCK: a FIFO or device named as a checkpoint must not block the open; it is refused
       below as not a regular file, and reads of a regular file ignore the flag) */
    ck->fd = pl ? df__fileloc_open(pl, pl->name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0) : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (ck->fd < 0) {
        int err = errno;
        if (pl && df__fileloc_link_refused(pl, err, path, st)) return st->code;
        return df__io_error(st, err, "Cannot open the checkpoint", path);
    }
    struct stat sb;
    if (fstat(ck->fd, &sb) || !S_ISREG(sb.st_mode)) return df_status_set(st, DF_FAILED_PRECONDITION, "Checkpoint '%s' is not a regular file", path);
    uint64_t size = (uint64_t)sb.st_size;
    unsigned char first[DF__CK_HEADER];
    long long r = size >= DF__CK_HEADER ? df__read_at(ck->fd, first, DF__CK_HEADER, 0) : 0;
    if (r != DF__CK_HEADER) return df__ck_parse(ck, NULL, 0, size, st);
    uint64_t index_bytes = df__get64(first + 24);
    size_t have = DF__CK_HEADER;
    if (!memcmp(first, df__ck_magic, 8) && index_bytes <= size - DF__CK_HEADER) have += (size_t)index_bytes + 4;
    /* (else the header alone, which df__ck_parse reports) */
    unsigned char *head = (unsigned char *)DF_MALLOC(have);
    if (!head) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory reading a checkpoint's index (%llu bytes)", (unsigned long long)index_bytes);
    r = df__read_at(ck->fd, head, have, 0);
    return df__ck_parse(ck, head, r < 0 ? 0 : (size_t)r, size, st);
}
/* Entry `name` as a new tensor, its bytes checked; DF_NOT_FOUND when the checkpoint has none. */
static df_tensor *df__ck_load(df__ck *ck, const char *name, df_status *st) {
    size_t len = strlen(name);
    int lo = 0, hi = ck->n - 1, at = -1;
    while (lo <= hi && at < 0) {                 /* (the index is in order) */
        int mid = lo + (hi - lo) / 2;
        const df__ck_entry *e = &ck->e[mid];
        int c = memcmp(e->name, name, e->name_len < len ? e->name_len : len);
        if (!c) c = e->name_len < len ? -1 : e->name_len > len;
        if (!c) at = mid; else if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    if (at < 0) { df_status_set(st, DF_NOT_FOUND, "Key %s not found in checkpoint '%s'", name, ck->path); return NULL; }
    const df__ck_entry *e = &ck->e[at];
    df_tensor *t = df__tensor_alloc(NULL, e->dtype, e->rank, e->dims, st);
    if (!t) return NULL;
    if (ck->mem) memcpy(t->data, ck->mem + ck->data_at + e->off, (size_t)e->size);
    else if (df__read_at(ck->fd, t->data, (size_t)e->size, ck->data_at + e->off) != (long long)e->size) {
        df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': cannot read tensor '%s' (the file changed or is damaged)", ck->path, name);
        df_tensor_release(t);
        return NULL;
    }
    if (df__crc_mask(df__crc32c(0, t->data, t->nbytes)) != e->crc) {
        df_status_set(st, DF_DATA_LOSS, "Checkpoint '%s': tensor '%s' fails its checksum (damaged)", ck->path, name);
        df_tensor_release(t);
        return NULL;
    }
    return t;
}
df_tensor *df_checkpoint_read(const char *path, const char *name, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!name) { df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_read: no name"); return NULL; }
    df__ck ck;
    df_tensor *t = df__ck_open(&ck, NULL, path, st) == DF_OK ? df__ck_load(&ck, name, st) : NULL;
    df__ck_close(&ck);
    return t;
}
df_tensor *df_checkpoint_read_buffer(const void *data, size_t len, const char *name, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!name || (len && !data)) { df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_read_buffer: no name or no data"); return NULL; }
    df__ck ck;
    memset(&ck, 0, sizeof ck);
    ck.fd = -1;
    ck.path = "(buffer)";
    ck.mem = (const unsigned char *)data;
    unsigned char *head = (unsigned char *)DF_MALLOC(len + 1);
    if (!head) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    if (len) memcpy(head, data, len);
    df_tensor *t = df__ck_parse(&ck, head, len, len, st) == DF_OK ? df__ck_load(&ck, name, st) : NULL;
    df__ck_close(&ck);
    return t;
}
int df_checkpoint_names(const char *path, char ***names, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (names) *names = NULL;
    df__ck ck;
    int n = -1;
    if (df__ck_open(&ck, NULL, path, st) == DF_OK) {
        char **v = names ? (char **)calloc((size_t)ck.n + 1, sizeof(char *)) : NULL;
        int ok = !names || v;
        for (int i = 0; ok && names && i < ck.n; i++) {
            if (!(v[i] = (char *)malloc(ck.e[i].name_len + 1))) ok = 0;
            else { memcpy(v[i], ck.e[i].name, ck.e[i].name_len); v[i][ck.e[i].name_len] = '\0'; }
        }
        if (!ok) {
            for (int i = 0; v && v[i]; i++) free(v[i]);
            free(v);
            df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory listing a checkpoint");
        } else { n = ck.n; if (names) *names = v; }
    }
    df__ck_close(&ck);
    return n;
}

/* SaveV2 / RestoreV2: TensorFlow's ops (prefix, tensor_names, shape_and_slices; whole tensors
   only: every shape_and_slice must be empty). The prefix is a path of the session's data dir
   when it has one (src/fileguard.c), except for a df_saver call's own node. */
static df_code df__k_ck_place(df__kctx *c, const char *prefix, df__fileloc *pl) {
    const df__step *s = c->step;
    const char *data_dir = s && s->session ? s->session->opts.data_dir : NULL;
    if (s && s->files_node && !strcmp(s->files_node, c->node->name)) data_dir = NULL;
    df_status st;
    if (df__fileloc_resolve(data_dir, prefix, pl, &st) == DF_OK) return DF_OK;
    return DF__KFAIL(c, st.code, "%s: %s", c->node->name, st.message);
}
static int df__k_ck_args(df__kctx *c, int n, const char **prefix) {
    const df_tensor *p = c->in[0], *names = c->in[1], *slices = c->in[2];
    if (p->dtype != DF_STRING || p->rank != 0 || !(*prefix = df_tensor_string(p, 0, NULL)) || !**prefix) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: prefix must be one non-empty string", c->node->name);
        return 0;
    }
    if (names->dtype != DF_STRING || names->rank != 1 || names->n != n || slices->dtype != DF_STRING || slices->rank != 1 || slices->n != n) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: tensor_names and shape_and_slices must be string vectors of %d entries (one per tensor); got %lld and %lld",
                  c->node->name, n, (long long)names->n, (long long)slices->n);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        size_t len = 1;
        const char *sl = df_tensor_string(slices, i, &len), *nm = df_tensor_string(names, i, NULL);
        if (!nm || !*nm) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: tensor name %d is empty", c->node->name, i); return 0; }
        if (!sl || len) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s: slices of tensors ('%s' for '%s') are not supported; save whole tensors", c->node->name, sl ? sl : "?", nm); return 0; }
    }
    return 1;
}
DF_PRIVATE void df__k_save_v2(df__kctx *c) {
    int n = c->n_in - 3;
    const char *prefix = NULL;
    if (!df__k_ck_args(c, n, &prefix)) return;
    const char **names = (const char **)DF_MALLOC(((size_t)n + 1) * sizeof(char *));
    if (!names) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int i = 0; i < n; i++) names[i] = df_tensor_string(c->in[1], i, NULL);
    df_status st;
    df__fileloc pl;
    if (df__k_ck_place(c, prefix, &pl) == DF_OK) {
        if (df__ck_write(&pl, prefix, n, names, c->in + 3, &st) != DF_OK) DF__KFAIL(c, st.code, "%s: %s", c->node->name, st.message);
        df__fileloc_close(&pl);
    }
    DF_FREE(names);
}
DF_PRIVATE void df__k_restore_v2(df__kctx *c) {
    int n = c->n_out;
    const char *prefix = NULL;
    if (!df__k_ck_args(c, n, &prefix)) return;
    df_status st;
    df__ck ck;
    df__fileloc pl;
    if (df__k_ck_place(c, prefix, &pl) != DF_OK) return;
    df_code opened = df__ck_open(&ck, &pl, prefix, &st);
    df__fileloc_close(&pl);            /* (the file stays open) */
    if (opened != DF_OK) { DF__KFAIL(c, st.code, "%s: %s", c->node->name, st.message); df__ck_close(&ck); return; }
    for (int i = 0; i < n; i++) {
        const char *nm = df_tensor_string(c->in[1], i, NULL);
        df_tensor *t = df__ck_load(&ck, nm, &st);
        if (!t) { DF__KFAIL(c, st.code, "%s: %s", c->node->name, st.message); break; }
        if (t->dtype != c->node->out_types[i]) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: tensor '%s' is %s in checkpoint '%s', but dtypes[%d] is %s", c->node->name, nm, df_dtype_name(t->dtype),
                      prefix, i, df_dtype_name(c->node->out_types[i]));
            df_tensor_release(t);
            break;
        }
        c->out[i] = t;
    }
    df__ck_close(&ck);
}

/* ---- df_saver: SaveV2 and RestoreV2 nodes for a list of variables ---- */
struct df_saver {
    df_graph *g;
    df_output prefix;                /* the path, a string placeholder fed at each call */
    df_node *save, *restore;
    df_node *restore_op;             /* the RestoreV2 node (restore is the NoOp after the Assigns) */
};
df_saver *df_saver_new(df_graph *g, int n_vars, const df_output *vars, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) { df_status_set(st, DF_INVALID_ARGUMENT, "df_saver_new: no graph"); return NULL; }
    if (g->status.code) { df_status_set(st, g->status.code, "df_saver_new: the graph has an error: %s", g->status.message); return NULL; }
    if (n_vars < 0 || (n_vars > 0 && !vars)) { df_status_set(st, DF_INVALID_ARGUMENT, "df_saver_new: %d variables, vars %p", n_vars, (const void *)vars); return NULL; }
    int n = n_vars;
    if (!n) for (int i = 0; i < g->n_nodes; i++) n += !strcmp(g->nodes[i]->op->name, "VariableV2");
    if (!n) { df_status_set(st, DF_INVALID_ARGUMENT, "df_saver_new: no variables to save"); return NULL; }
    df_output *v = (df_output *)DF_MALLOC((size_t)n * sizeof(df_output));
    const char **names = (const char **)DF_MALLOC((size_t)n * sizeof(char *)), **empty = (const char **)DF_MALLOC((size_t)n * sizeof(char *));
    df_dtype *types = (df_dtype *)DF_MALLOC((size_t)n * sizeof(df_dtype));
    df_node **assigns = (df_node **)DF_MALLOC((size_t)n * sizeof(df_node *));
    df_saver *sv = (df_saver *)DF_MALLOC(sizeof *sv);
    df_tensor *tn = NULL, *ts = NULL;
    if (!v || !names || !empty || !types || !assigns || !sv) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a saver"); goto fail; }
    memset(sv, 0, sizeof *sv);
    for (int i = 0, k = 0; i < (n_vars ? n_vars : g->n_nodes); i++) {
        if (n_vars) v[k] = vars[i];
        else if (!strcmp(g->nodes[i]->op->name, "VariableV2")) v[k] = (df_output){g->nodes[i], 0};
        else continue;
        if (!v[k].node || v[k].node->graph != g || v[k].index < 0 || v[k].index >= v[k].node->n_outputs || !v[k].node->out_is_ref[v[k].index]) {
            df_status_set(st, DF_INVALID_ARGUMENT, "df_saver_new: variable %d is not a variable of this graph", i);
            goto fail;
        }
        names[k] = v[k].node->name;
        empty[k] = "";
        types[k] = v[k].node->out_types[v[k].index];
        for (int j = 0; j < k; j++)
            if (!strcmp(names[j], names[k])) { df_status_set(st, DF_INVALID_ARGUMENT, "df_saver_new: variable %s is given twice", names[k]); goto fail; }
        k++;
    }
    int64_t dn = n;
    if (!(tn = df_tensor_new_strings(1, &dn, names, st)) || !(ts = df_tensor_new_strings(1, &dn, empty, st))) goto fail;
    df_graph_push_name_scope(g, "save");
    df_graph_push_device(g, "/cpu:0");
    sv->g = g;
    sv->prefix = df_placeholder(g, "filename", DF_STRING, 0, NULL);
    df_output cn = df_const(g, tn), cs = df_const(g, ts);
    df_op_builder *b = df_op_new(g, "SaveV2", NULL);
    df_op_add_input(b, sv->prefix); df_op_add_input(b, cn); df_op_add_input(b, cs);
    df_op_add_input_list(b, v, n);
    df_op_set_attr_type_list(b, "dtypes", types, n);
    sv->save = df_op_finish(b);
    b = df_op_new(g, "RestoreV2", NULL);
    df_op_add_input(b, sv->prefix); df_op_add_input(b, cn); df_op_add_input(b, cs);
    df_op_set_attr_type_list(b, "dtypes", types, n);
    df_node *r = df_op_finish(b);
    df_graph_pop_device(g);
    for (int i = 0; i < n && r; i++) {
        const char *dev = v[i].node->device ? v[i].node->device : "";
        if (*dev) df_graph_push_device(g, dev);         /* (each Assign beside its variable) */
        assigns[i] = df_assign(g, v[i], (df_output){r, i});
        if (*dev) df_graph_pop_device(g);
    }
    sv->restore = r ? df_no_op(g, assigns, n) : NULL;
    sv->restore_op = r;
    df_graph_pop_name_scope(g);
    if (g->status.code || !sv->save || !sv->restore) {
        df_status_set(st, g->status.code ? g->status.code : DF_INTERNAL, "df_saver_new: %s", g->status.code ? g->status.message : "building failed");
        goto fail;
    }
    df_tensor_release(tn); df_tensor_release(ts);
    DF_FREE(v); DF_FREE(names); DF_FREE(empty); DF_FREE(types); DF_FREE(assigns);
    return sv;
fail:
    df_tensor_release(tn); df_tensor_release(ts);
    DF_FREE(v); DF_FREE(names); DF_FREE(empty); DF_FREE(types); DF_FREE(assigns); DF_FREE(sv);
    return NULL;
}
static df_code df__saver_run(df_saver *sv, df_session *s, const char *path, df_node *target, const df_node *file_op, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!sv || !s || !path || !*path) return df_status_set(st, DF_INVALID_ARGUMENT, "df_saver: saver, session and path are needed");
    df_tensor *p = df_tensor_new_strings(0, NULL, &path, st);
    if (!p) return st->code;
    /* (the program's own call: its path is not confined to the session's data_dir) */
    df__session_run_files(s, &sv->prefix, &p, 1, NULL, NULL, 0, &target, 1, file_op ? file_op->name : NULL, st);
    df_tensor_release(p);
    return st->code;
}
df_code df_saver_save(df_saver *sv, df_session *s, const char *path, df_status *st) {
    return df__saver_run(sv, s, path, sv ? sv->save : NULL, sv ? sv->save : NULL, st);
}
df_code df_saver_restore(df_saver *sv, df_session *s, const char *path, df_status *st) {
    return df__saver_run(sv, s, path, sv ? sv->restore : NULL, sv ? sv->restore_op : NULL, st);
}
void df_saver_free(df_saver *sv) { DF_FREE(sv); }
