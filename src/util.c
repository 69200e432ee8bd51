/* ==========================================================================================
   src/util.c: Utilities and containers                                                >>util
   Growable arrays (df__grow), string duplication, FNV-1a hashing and an open-addressing map
   from strings to ints. Allocation failures are reported to the caller, never fatal.
   ========================================================================================== */
/* Makes room for `need` elements in *p (capacity *cap). Returns 0 on OOM, leaving *p intact. */
DF_PRIVATE int df__grow(void *pp, int *cap, int need, size_t elem) {
    void **p = (void **)pp;
    if (need <= *cap) return 1;
    int nc = *cap ? *cap : 4;
    while (nc < need) {
        if (nc > INT_MAX / 2) return 0;
        nc *= 2;
    }
    void *np = DF_REALLOC(*p, (size_t)nc * elem);
    if (!np) return 0;
    *p = np;
    *cap = nc;
    return 1;
}

/* Bounded copy that always terminates (snprintf would warn about truncation at -Wall). */
DF_PRIVATE void df__copy(char *dst, size_t n, const char *src) {
    if (!n) return;
    size_t len = src ? strlen(src) : 0;
    if (len >= n) len = n - 1;
    if (len) memcpy(dst, src, len);
    dst[len] = 0;
}

DF_PRIVATE char *df__strdup(const char *s) {
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = (char *)DF_MALLOC(n);
    if (d) memcpy(d, s, n);
    return d;
}

static uint64_t df__hash_bytes(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; }
    return h;
}
DF_PRIVATE uint64_t df__hash_str(const char *s) { return df__hash_bytes(s, strlen(s), 14695981039346656037ull); }
DF_PRIVATE uint64_t df__hash_mix(uint64_t a, uint64_t b) {
    uint64_t h = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
    return h;
}

/* String -> int map; keys are owned copies. Open addressing, power-of-two capacity. */
typedef struct df__strmap { char **keys; int *vals; int cap, count; } df__strmap;
DF_PRIVATE void df__strmap_free(df__strmap *m) {
    for (int i = 0; i < m->cap; i++) DF_FREE(m->keys[i]);
    DF_FREE(m->keys); DF_FREE(m->vals);
    memset(m, 0, sizeof *m);
}
DF_PRIVATE int df__strmap_get(const df__strmap *m, const char *k, int *out) {
    if (!m->cap) return 0;
    for (uint64_t i = df__hash_str(k) & (uint64_t)(m->cap - 1);; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        if (!m->keys[i]) return 0;
        if (!strcmp(m->keys[i], k)) { if (out) *out = m->vals[i]; return 1; }
    }
}
DF_PRIVATE int df__strmap_put(df__strmap *m, const char *k, int v) {
    if ((m->count + 1) * 2 > m->cap) {
        int nc = m->cap ? m->cap * 2 : 64;
        char **nk = (char **)DF_MALLOC((size_t)nc * sizeof *nk);
        int *nv = (int *)DF_MALLOC((size_t)nc * sizeof *nv);
        if (!nk || !nv) { DF_FREE(nk); DF_FREE(nv); return 0; }
        memset(nk, 0, (size_t)nc * sizeof *nk);
        for (int i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            uint64_t j = df__hash_str(m->keys[i]) & (uint64_t)(nc - 1);
            while (nk[j]) j = (j + 1) & (uint64_t)(nc - 1);
            nk[j] = m->keys[i]; nv[j] = m->vals[i];
        }
        DF_FREE(m->keys); DF_FREE(m->vals);
        m->keys = nk;
        m->vals = nv; m->cap = nc;
    }
    uint64_t i = df__hash_str(k) & (uint64_t)(m->cap - 1);
    while (m->keys[i]) {
        if (!strcmp(m->keys[i], k)) { m->vals[i] = v; return 1; }
        i = (i + 1) & (uint64_t)(m->cap - 1);
    }
    if (!(m->keys[i] = df__strdup(k))) return 0;
    m->vals[i] = v;
    m->count++;
    return 1;
}

/* A growable character buffer for messages and keys. */
typedef struct df__buf { char *s; int len, cap; int oom; } df__buf;
DF_PRIVATE void df__buf_printf(df__buf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        int room = b->cap - b->len;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, (size_t)(room > 0 ? room : 0), fmt, ap);
        va_end(ap);
        if (n < 0) { b->oom = 1; return; }
        if (n < room) { b->len += n; return; }
        if (!df__grow(&b->s, &b->cap, b->len + n + 1, 1)) { b->oom = 1; return; }
    }
}

/* The length (1 to 4) of the valid UTF-8 sequence at p, of the n bytes there; 0 if none is
   (a stray or missing continuation byte, an overlong form, a surrogate, past U+10FFFF). */
DF_PRIVATE int df__utf8_seq(const uint8_t *p, size_t n) {
    if (!n) return 0;
    if (*p < 0x80) return 1;
    int k = *p < 0xc2 ? 0 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : *p < 0xf5 ? 4 : 0;
    if (!k || (size_t)k > n) return 0;
    for (int i = 1; i < k; i++) if ((p[i] & 0xc0) != 0x80) return 0;
    if (k == 3 && ((*p == 0xe0 && p[1] < 0xa0) || (*p == 0xed && p[1] >= 0xa0))) return 0;
    if (k == 4 && ((*p == 0xf0 && p[1] < 0x90) || (*p == 0xf4 && p[1] >= 0x90))) return 0;
    return k;
}
