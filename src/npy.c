/* ==========================================================================================
   src/npy.c: NumPy .npy files                                                          >>npy
   Versions 1.0 to 3.0, little- and big-endian, C order. The header is parsed with bounds on
   every read; a shape whose size overflows or does not match the file is refused.
   ========================================================================================== */
static const struct { df_dtype t; const char *code; } df__npy_types[] = {
    {DF_FLOAT, "f4"}, {DF_DOUBLE, "f8"}, {DF_HALF, "f2"}, {DF_INT32, "i4"}, {DF_INT64, "i8"},
    {DF_INT16, "i2"}, {DF_INT8, "i1"}, {DF_UINT8, "u1"}, {DF_UINT16, "u2"}, {DF_UINT32, "u4"},
    {DF_UINT64, "u8"}, {DF_BOOL, "b1"}, {DF_COMPLEX64, "c8"}, {DF_COMPLEX128, "c16"},
};

/* Finds 'key': in the header dict and returns a pointer just after the colon. */
static const char *df__npy_key(const char *h, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

#ifndef O_NONBLOCK
#define O_NONBLOCK 0           /* (hidden by strict C modes in the one-translation-unit use) */
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
/* A .npy file opened for reading or (write) writing, a regular file only: the path is first
   opened without blocking (O_NONBLOCK) and checked, so a FIFO or a device given as the path is
   refused at once with DF_FAILED_PRECONDITION instead of stopping the thread for good (a writer
   meets a FIFO nobody reads as ENXIO); NULL after a status. */
static FILE *df__npy_open(const char *path, int write, df_status *st) {
    int fd = write ? open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644) : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        df_status_set(st, errno == ENOENT ? DF_NOT_FOUND : errno == EACCES ? DF_PERMISSION_DENIED : DF_FAILED_PRECONDITION,
                      "Cannot open '%s' for %s: %s", path, write ? "writing" : "reading", strerror(errno));
        return NULL;
    }
    struct stat sb;
    int regular = !fstat(fd, &sb) && S_ISREG(sb.st_mode);
    close(fd);
    if (!regular) { df_status_set(st, DF_FAILED_PRECONDITION, "'%s' is not a regular file", path); return NULL; }
    FILE *f = fopen(path, write ? "wb" : "rb");
    if (!f) df_status_set(st, DF_NOT_FOUND, "Cannot open '%s' for %s", path, write ? "writing" : "reading");
    return f;
}

df_tensor *df_tensor_read_npy(const char *path, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!path) { df_status_set(st, DF_INVALID_ARGUMENT, "df_tensor_read_npy: path is NULL"); return NULL; }
    FILE *f = df__npy_open(path, 0, st);
    if (!f) return NULL;
    unsigned char pre[12];
    char *header = NULL;
    df_tensor *t = NULL;
    size_t got = fread(pre, 1, 10, f);
    if (got < 10 || memcmp(pre, "\x93NUMPY", 6)) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s' is not a .npy file (bad magic)", path); goto done; }
    int major = pre[6];
    uint32_t hlen;
    if (major == 1) hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    else if (major == 2 || major == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) { df_status_set(st, DF_DATA_LOSS, "'%s': truncated header", path); goto done; }
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    } else { df_status_set(st, DF_UNIMPLEMENTED, "'%s': .npy version %d.%d is not supported", path, major, pre[7]); goto done; }
    if (hlen > (1u << 20)) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': header length %u is too large", path, hlen); goto done; }
    if (!(header = (char *)DF_MALLOC(hlen + 1))) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); goto done; }
    if (fread(header, 1, hlen, f) != hlen) { df_status_set(st, DF_DATA_LOSS, "'%s': the header is truncated", path); goto done; }
    header[hlen] = 0;
    if (strlen(header) != hlen && !memchr(header, '}', strlen(header))) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': NUL in header", path); goto done; }
    if (!strchr(header, '{') || !strchr(header, '}')) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': the header is not a dict", path); goto done; }
    const char *d = df__npy_key(header, "descr"), *fo = df__npy_key(header, "fortran_order"), *sh = df__npy_key(header, "shape");
    if (!d || !fo || !sh) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': the header is missing descr, fortran_order or shape", path); goto done; }
    if (!strncmp(fo, "True", 4)) { df_status_set(st, DF_UNIMPLEMENTED, "'%s': Fortran-order arrays are not supported; save with C order", path); goto done; }
    if (strncmp(fo, "False", 5)) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': bad fortran_order", path); goto done; }
    if (*d != '\'' || (d[1] != '<' && d[1] != '>' && d[1] != '|' && d[1] != '=')) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': bad descr", path); goto done; }
    char endian = d[1];
    const char *code = d + 2;
    df_dtype dt = (df_dtype)0;
    for (size_t i = 0; i < sizeof df__npy_types / sizeof *df__npy_types; i++) {
        size_t n = strlen(df__npy_types[i].code);
        if (!strncmp(code, df__npy_types[i].code, n) && code[n] == '\'') dt = df__npy_types[i].t;
    }
    if (!dt) { df_status_set(st, DF_UNIMPLEMENTED, "'%s': unsupported dtype descr %.16s", path, d); goto done; }
    if (*sh != '(') { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': bad shape", path); goto done; }
    int64_t dims[DF_MAX_RANK];
    int rank = 0;
    const char *p = sh + 1;
    for (;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        if (*p < '0' || *p > '9') { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': bad shape", path); goto done; }
        if (rank == DF_MAX_RANK) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': rank above %d", path, DF_MAX_RANK); goto done; }
        int64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            if (v > (INT64_MAX - 9) / 10) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': a dimension overflows int64", path); goto done; }
            v = v * 10 + (*p++ - '0');
        }
        dims[rank++] = v;
    }
    {   /* the data's size against what the file holds, before anything is allocated */
        uint64_t want = df_dtype_size(dt);
        for (int i = 0; i < rank; i++) {
            if (dims[i] && want > UINT64_MAX / (uint64_t)dims[i]) { df_status_set(st, DF_INVALID_ARGUMENT, "'%s': the shape's size overflows", path); goto done; }
            want *= (uint64_t)dims[i];
        }
        long here = ftell(f);
        if (here >= 0 && fseek(f, 0, SEEK_END) == 0) {
            long end = ftell(f);
            if (end >= here && (uint64_t)(end - here) < want) {
                df_status_set(st, DF_DATA_LOSS, "'%s': the data is truncated (the shape needs %llu bytes, the file has %ld)", path,
                              (unsigned long long)want, end - here);
                goto done;
            }
            if (fseek(f, here, SEEK_SET) != 0) { df_status_set(st, DF_DATA_LOSS, "'%s': cannot seek", path); goto done; }
        }
    }
    if (!(t = df__tensor_alloc(NULL, dt, rank, dims, st))) goto done;
    if (fread(t->data, 1, t->nbytes, f) != t->nbytes) {
        df_status_set(st, DF_DATA_LOSS, "'%s': the data is truncated (want %zu bytes)", path, t->nbytes);
        df_tensor_release(t); t = NULL; goto done;
    }
    if (fgetc(f) != EOF) {
        df_status_set(st, DF_INVALID_ARGUMENT, "'%s': bytes after the data (the shape does not match the file)", path);
        df_tensor_release(t); t = NULL; goto done;
    }
    size_t es = df_dtype_size(dt), lane = dt == DF_COMPLEX64 ? 4 : dt == DF_COMPLEX128 ? 8 : es;
    if (endian == '>' && lane > 1)
        for (size_t i = 0; i < t->nbytes; i += lane)
            for (size_t a = 0, b = lane - 1; a < b; a++, b--) {
                unsigned char *q = (unsigned char *)t->data + i, tmp = q[a];
                q[a] = q[b]; q[b] = tmp;
            }
done:
    DF_FREE(header);
    fclose(f);
    return t;
}

df_code df_tensor_write_npy(const df_tensor *t, const char *path) {
    if (!t || !path) return DF_INVALID_ARGUMENT;
    const char *code = NULL;
    for (size_t i = 0; i < sizeof df__npy_types / sizeof *df__npy_types; i++)
        if (df__npy_types[i].t == t->dtype) code = df__npy_types[i].code;
    if (!code) return DF_UNIMPLEMENTED;        /* bfloat16 has no NumPy dtype */
    char dict[400];
    int n = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     df_dtype_size(t->dtype) == 1 ? '|' : '<', code);
    for (int i = 0; i < t->rank; i++) n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)t->dims[i], i + 1 < t->rank ? " " : "");
    if (t->rank > 1) n--;                         /* "(2, 3)" rather than "(2, 3,)" */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1, padded = (total + 63) / 64 * 64;
    unsigned char head[512];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (unsigned char)((padded - 10) & 0xff);
    head[9] = (unsigned char)((padded - 10) >> 8);
    memcpy(head + 10, dict, (size_t)n);
    memset(head + 10 + n, ' ', padded - 10 - (size_t)n);
    head[padded - 1] = '\n';
    df_status ost;
    FILE *f = df__npy_open(path, 1, &ost);
    if (!f) return ost.code;
    int ok = fwrite(head, 1, padded, f) == padded && fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
    ok = (fclose(f) == 0) && ok;
    return ok ? DF_OK : DF_DATA_LOSS;
}
