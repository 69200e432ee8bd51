/* ==========================================================================================
   src/bfc.c: The BFC allocator                                                         >>bfc
   Best fit with coalescing, as TensorFlow's: memory in 256-byte units carved from regions;
   every free chunk sits in one of 21 size bins (a treap ordered by size, then address), or
   in the small front cache. Invariant: no two physically adjacent chunks are both in bins;
   the cache is flushed (coalesced) before any region is added or given back, whenever a bin
   search fails, and when bytes_in_use reaches zero. Chunk handles are 32-bit indices.
   ========================================================================================== */

#define DF__BFC_MIN_BITS    8
#define DF__BFC_MIN         ((size_t)1 << DF__BFC_MIN_BITS)       /* granularity and minimum */
#define DF__BFC_NUM_BINS    21
#define DF__BFC_NIL         0xFFFFFFFFu
#define DF__BFC_MAX_WASTE   ((size_t)128 << 20)    /* TF's max_internal_fragmentation_bytes */
#define DF__BFC_FIRST_GROW  ((size_t)2 << 20)      /* allow_growth: first region 2 MiB */
#define DF__BFC_NO_LIMIT    ((size_t)1 << 60)      /* "no limit": far beyond any real memory */
/* Front cache: recently freed chunks of up to DF__BFC_CACHE_MAX bytes, per exact rounded
   size, reused LIFO without touching the bins. */
#define DF__BFC_CACHE_MAX     ((size_t)16 << 10)
#define DF__BFC_CACHE_CLASSES ((int)(DF__BFC_CACHE_MAX >> DF__BFC_MIN_BITS))   /* 64 */
#define DF__BFC_CACHE_DEPTH   32

enum { DF__BFC_FREE = 0, DF__BFC_USED = 1, DF__BFC_CACHED = 2, DF__BFC_DEAD = 3 };

typedef struct df__bfc_chunk {          /* 48 bytes; what a tree walk reads comes first */
    char    *ptr;
    size_t   size;            /* rounded; a multiple of 256 */
    uint32_t kid[2];          /* treap children while in a bin (0 left, 1 right); kid[0]
                                 links the recycled list */
    uint32_t prio;            /* treap priority, fixed per handle */
    int8_t   bin;             /* -1 unless in a bin */
    uint8_t  state;           /* DF__BFC_FREE / USED / CACHED / DEAD */
    uint32_t prev, next;      /* physical neighbours in the same region, DF__BFC_NIL at the ends */
    size_t   requested;       /* what the caller asked for, while in use */
} df__bfc_chunk;

typedef struct df__bfc_region {
    char     *base;           /* 256-aligned start of managed memory */
    size_t    size;           /* managed bytes, a multiple of 256 */
    void     *raw;            /* as sys_alloc returned it, for sys_free */
    size_t    raw_size;       /* bytes asked of sys_alloc (counts towards the limit) */
    uint32_t *handles;        /* (p - base) >> 8 -> chunk handle: right for every in-use or
                                 cached chunk and for the chunk at base; may be stale elsewhere */
} df__bfc_region;

/* ---- lock: the shared spinlock of src/platform.c; critical sections are tens of nanoseconds ---- */
typedef df__spin df__bfc_lock;
static void df__bfc_lock_init(df__bfc_lock *l) { __atomic_store_n(&l->locked, 0, __ATOMIC_RELAXED); }
static void df__bfc_lock_destroy(df__bfc_lock *l) { (void)l; }
#define df__bfc_lock_acquire(l) df__spin_lock(l)
#define df__bfc_lock_release(l) df__spin_unlock(l)

struct df_bfc {
    /* hot: what the cached fast path touches, together */
    df__bfc_lock lock;
    df__bfc_region *hint;        /* the region of the last free, or `none` (never NULL) */
    df__bfc_chunk *chunks;
    df__bfc_region *regions;
    int64_t  num_allocs, bytes_in_use, peak_bytes_in_use, largest_alloc_size;
    uint8_t  cache_n[DF__BFC_CACHE_CLASSES];   /* front cache: counts per class (one line) */
    uint32_t cache[DF__BFC_CACHE_CLASSES][DF__BFC_CACHE_DEPTH];
    /* chunks */
    uint32_t n_chunks, cap_chunks, recycled;             /* recycled: list through kid[0] */
    /* bins */
    uint32_t bin_root[DF__BFC_NUM_BINS];
    uint32_t bin_mask;                                   /* bit b: bin b is non-empty */
    /* regions, sorted by base address */
    int      n_regions, cap_regions;
    size_t   total_region_bytes;
    size_t   curr_region_bytes;                          /* the next region's size (TF) */
    int      started_backpedal;
    /* options */
    size_t   limit;
    int      garbage_collection;
    int64_t  bytes_limit;                                /* as reported: 0 means no limit */
    void  *(*sys_alloc)(size_t bytes, void *user);
    void   (*sys_free)(void *p, size_t bytes, void *user);
    void    *user;
    int64_t  peak_bytes_reserved;
    df__bfc_region none;         /* empty: what hint points to when it knows nothing */
};

/* ---- helpers ---- */
static int df__bfc_log2(size_t x) {          /* floor(log2(x)), x > 0 */
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll((unsigned long long)x);
#else
    int r = 0;
    while (x >>= 1) r++;
    return r;
#endif
}
static int df__bfc_ctz32(uint32_t x) {       /* x > 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(x);
#else
    int r = 0;
    while (!(x & 1u)) { x >>= 1; r++; }
    return r;
#endif
}

/* TF's BinNumForSize: bin b holds [256 << b, 256 << (b + 1)); bin 20 everything larger. */
static int df__bfc_bin_for(size_t bytes) {
    size_t units = bytes >> DF__BFC_MIN_BITS;
    int b = units ? df__bfc_log2(units) : 0;
    return b < DF__BFC_NUM_BINS - 1 ? b : DF__BFC_NUM_BINS - 1;
}

/* Distinct per handle (a bijection of 32-bit values), so treap priorities never tie. */
static inline uint32_t df__bfc_prio(uint32_t h) {
    h *= 0x9E3779B1u; h ^= h >> 15; h *= 0x85EBCA77u; h ^= h >> 13;
    return h;
}

/* Order within a bin: by size, then by address. Branch-free: the tree walks below select a
   child by index instead of branching, since these comparisons are unpredictable. */
static inline int df__bfc_less(const df__bfc_chunk *c, uint32_t x, uint32_t y) {
    size_t sx = c[x].size, sy = c[y].size;
    uintptr_t px = (uintptr_t)c[x].ptr, py = (uintptr_t)c[y].ptr;
    return (sx < sy) | ((sx == sy) & (px < py));
}

/* ---- bins: one treap per bin on chunk handles ---- */
static void df__bfc_bin_insert(df_bfc *a, uint32_t h) {
    df__bfc_chunk *c = a->chunks;
    int b = df__bfc_bin_for(c[h].size);
    uint32_t *link = &a->bin_root[b], ph = c[h].prio;
    while (*link != DF__BFC_NIL && c[*link].prio > ph)
        link = &c[*link].kid[!df__bfc_less(c, h, *link)];
    /* split the subtree at *link around h: nodes before h hang on side[0], after on side[1] */
    uint32_t t = *link, *side[2] = {&c[h].kid[0], &c[h].kid[1]};
    while (t != DF__BFC_NIL) {
        int after = !df__bfc_less(c, t, h);
        *side[after] = t;
        side[after] = &c[t].kid[!after];
        t = c[t].kid[!after];
    }
    *side[0] = DF__BFC_NIL;
    *side[1] = DF__BFC_NIL;
    *link = h;
    c[h].bin = (int8_t)b;
    c[h].state = DF__BFC_FREE;
    a->bin_mask |= 1u << b;
}

static void df__bfc_bin_remove(df_bfc *a, uint32_t h) {
    df__bfc_chunk *c = a->chunks;
    int b = c[h].bin;
    DF_ASSERT(b >= 0 && b < DF__BFC_NUM_BINS);
    uint32_t *link = &a->bin_root[b];
    while (*link != h) {
        DF_ASSERT(*link != DF__BFC_NIL);
        link = &c[*link].kid[!df__bfc_less(c, h, *link)];
    }
    uint32_t l = c[h].kid[0], r = c[h].kid[1];  /* merge the two subtrees into *link */
    while (l != DF__BFC_NIL && r != DF__BFC_NIL) {
        int left_wins = c[l].prio > c[r].prio;
        uint32_t top = left_wins ? l : r;
        *link = top;
        link = &c[top].kid[left_wins];           /* l continues right, r continues left */
        uint32_t next = *link;
        l = left_wins ? next : l;
        r = left_wins ? r : next;
    }
    *link = l != DF__BFC_NIL ? l : r;
    c[h].bin = -1;
    if (a->bin_root[b] == DF__BFC_NIL) a->bin_mask &= ~(1u << b);
}

/* Smallest free chunk with size >= rounded, lowest address on ties (TF's FindChunkPtr order):
   lower bound in the request's own bin, else the minimum of the next non-empty bin. */
static uint32_t df__bfc_bin_best_fit(df_bfc *a, size_t rounded) {
    const df__bfc_chunk *c = a->chunks;
    int b = df__bfc_bin_for(rounded);
    uint32_t t = a->bin_root[b], best = DF__BFC_NIL;
    while (t != DF__BFC_NIL) {
        int fits = c[t].size >= rounded;
        best = fits ? t : best;
        t = c[t].kid[!fits];
    }
    if (best != DF__BFC_NIL) return best;
    uint32_t higher = b + 1 < 32 ? a->bin_mask & ~((2u << b) - 1u) : 0;
    if (!higher) return DF__BFC_NIL;
    t = a->bin_root[df__bfc_ctz32(higher)];
    while (c[t].kid[0] != DF__BFC_NIL) t = c[t].kid[0];
    return t;
}

/* ---- chunk handles ---- */
/* A fresh handle; may move a->chunks, so take chunk pointers only after it. NIL on OOM. */
static uint32_t df__bfc_handle_new(df_bfc *a) {
    uint32_t h = a->recycled;
    if (h != DF__BFC_NIL) {
        a->recycled = a->chunks[h].kid[0];
        return h;                                /* its prio is still set */
    }
    if (a->n_chunks == a->cap_chunks) {
        uint32_t cap = a->cap_chunks ? a->cap_chunks * 2 : 256;
        if (cap <= a->cap_chunks || cap >= DF__BFC_NIL) return DF__BFC_NIL;
        df__bfc_chunk *grown = (df__bfc_chunk *)DF_REALLOC(a->chunks, (size_t)cap * sizeof *grown);
        if (!grown) return DF__BFC_NIL;
        a->chunks = grown;
        a->cap_chunks = cap;
    }
    a->chunks[a->n_chunks].prio = df__bfc_prio(a->n_chunks);
    return a->n_chunks++;
}

static void df__bfc_handle_recycle(df_bfc *a, uint32_t h) {
    df__bfc_chunk *c = &a->chunks[h];
    c->state = DF__BFC_DEAD;
    c->ptr = NULL;
    c->bin = -1;
    c->kid[0] = a->recycled;
    a->recycled = h;
}

/* ---- regions ---- */
static df__bfc_region *df__bfc_region_find(df_bfc *a, const void *p) {
    uintptr_t x = (uintptr_t)p;
    int n = a->n_regions;
    if (n == 0) return NULL;
    df__bfc_region *r = a->regions;               /* the last region with base <= p */
    while (n > 1) {
        int half = n >> 1;
        r = (uintptr_t)r[half].base <= x ? r + half : r;
        n -= half;
    }
    return x - (uintptr_t)r->base < r->size ? r : NULL;
}

/* The in-use chunk that starts exactly at p, or NIL: safe on any pointer. The handle table is
   written only when a chunk is handed out from the bins (not on split or merge: that saves
   random accesses to a big table); stale entries are harmless because a chunk is accepted
   only if it starts at p and is in use. */
static uint32_t df__bfc_lookup_used(df_bfc *a, const void *p) {
    df__bfc_region *r = df__bfc_region_find(a, p);
    if (!r) return DF__BFC_NIL;
    uintptr_t off = (uintptr_t)p - (uintptr_t)r->base;
    if (off & (DF__BFC_MIN - 1)) return DF__BFC_NIL;
    uint32_t h = r->handles[off >> DF__BFC_MIN_BITS];
    if (h >= a->n_chunks) return DF__BFC_NIL;
    const df__bfc_chunk *c = &a->chunks[h];
    if (c->ptr != (const char *)p || c->state != DF__BFC_USED) return DF__BFC_NIL;
    return h;
}

/* ---- coalescing (TF's TryToCoalesce + InsertFreeChunkIntoBin) ---- */
/* h absorbs its physical successor next (free, not in a bin). */
static void df__bfc_merge(df_bfc *a, uint32_t h, uint32_t next) {
    df__bfc_chunk *c = a->chunks;
    c[h].size += c[next].size;
    c[h].next = c[next].next;
    if (c[next].next != DF__BFC_NIL) c[c[next].next].prev = h;
    df__bfc_handle_recycle(a, next);
}

/* h is free and in no bin: merge it with free neighbours and put the result in its bin. */
static void df__bfc_coalesce_insert(df_bfc *a, uint32_t h) {
    df__bfc_chunk *c = a->chunks;
    uint32_t n = c[h].next, p = c[h].prev;
    if (n != DF__BFC_NIL && c[n].state == DF__BFC_FREE) {
        df__bfc_bin_remove(a, n);
        df__bfc_merge(a, h, n);
    }
    if (p != DF__BFC_NIL && c[p].state == DF__BFC_FREE) {
        df__bfc_bin_remove(a, p);
        df__bfc_merge(a, p, h);
        h = p;
    }
    df__bfc_bin_insert(a, h);
}

/* Returns every cached chunk to the bins, coalescing: afterwards the BFC invariant holds
   everywhere. Each chunk is flushed at most once per trip through the cache. */
static void df__bfc_cache_flush(df_bfc *a) {
    for (int cls = 0; cls < DF__BFC_CACHE_CLASSES; cls++) {
        while (a->cache_n[cls]) {
            uint32_t h = a->cache[cls][--a->cache_n[cls]];
            DF_ASSERT(a->chunks[h].state == DF__BFC_CACHED);
            a->chunks[h].state = DF__BFC_FREE;
            df__bfc_coalesce_insert(a, h);
        }
    }
}

static int df__bfc_cache_empty(const df_bfc *a) {
    for (int cls = 0; cls < DF__BFC_CACHE_CLASSES; cls++)
        if (a->cache_n[cls]) return 0;
    return 1;
}

/* ---- allocation from the bins (TF's FindChunkPtr) ---- */
static uint32_t df__bfc_take(df_bfc *a, size_t rounded) {
    uint32_t h = df__bfc_bin_best_fit(a, rounded);
    if (h == DF__BFC_NIL) return DF__BFC_NIL;
    df__bfc_bin_remove(a, h);
    size_t size = a->chunks[h].size;
    if (size - rounded >= rounded || size - rounded >= DF__BFC_MAX_WASTE) {
        uint32_t rest = df__bfc_handle_new(a);           /* before taking pointers */
        if (rest != DF__BFC_NIL) {                       /* no handle: hand out all of it */
            df__bfc_chunk *c = a->chunks;
            c[rest].ptr = c[h].ptr + rounded;
            c[rest].size = size - rounded;
            c[rest].requested = 0;
            c[rest].prev = h;
            c[rest].next = c[h].next;
            if (c[h].next != DF__BFC_NIL) c[c[h].next].prev = rest;
            c[h].next = rest;
            c[h].size = rounded;
            df__bfc_bin_insert(a, rest);   /* its successor is in use: nothing to merge */
        }
    }
    return h;
}

/* ---- growing (TF's Extend) ---- */
/* Page-aligned host memory (regions must be at least 256-aligned to keep every chunk so). */
static void *df__bfc_default_sys_alloc(size_t bytes, void *user) {
    (void)user;
    if (bytes > SIZE_MAX - 4095) return NULL;
#if defined(DF_BFC_SYS_ALLOC)
    return DF_BFC_SYS_ALLOC(bytes);
#elif defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L
    void *p = NULL;
    return posix_memalign(&p, 4096, bytes) == 0 ? p : NULL;
#else
    return aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);   /* C11: a multiple of 4096 */
#endif
}
static void df__bfc_default_sys_free(void *p, size_t bytes, void *user) {
    (void)bytes; (void)user;
#ifdef DF_BFC_SYS_FREE
    DF_BFC_SYS_FREE(p);
#else
    free(p);
#endif
}

static int df__bfc_add_region(df_bfc *a, void *mem, size_t bytes) {
    uintptr_t raw = (uintptr_t)mem, base = (raw + DF__BFC_MIN - 1) & ~(uintptr_t)(DF__BFC_MIN - 1);
    size_t lost = (size_t)(base - raw);
    size_t size = bytes > lost ? (bytes - lost) & ~(DF__BFC_MIN - 1) : 0;
    if (size == 0 || base + size < base) return 0;
    if (a->n_regions == a->cap_regions) {
        int cap = a->cap_regions ? a->cap_regions * 2 : 8;
        df__bfc_region *grown = (df__bfc_region *)DF_REALLOC(a->regions, (size_t)cap * sizeof *grown);
        if (!grown) return 0;
        a->regions = grown;
        a->cap_regions = cap;
    }
    size_t n_slots = size >> DF__BFC_MIN_BITS;
    if (n_slots > SIZE_MAX / sizeof(uint32_t)) return 0;
    uint32_t *handles = (uint32_t *)DF_MALLOC(n_slots * sizeof(uint32_t));
    if (!handles) return 0;
    memset(handles, 0xFF, n_slots * sizeof(uint32_t));
    uint32_t h = df__bfc_handle_new(a);
    if (h == DF__BFC_NIL) { DF_FREE(handles); return 0; }
    int at = a->n_regions;
    while (at > 0 && (uintptr_t)a->regions[at - 1].base > base) at--;
    memmove(&a->regions[at + 1], &a->regions[at], (size_t)(a->n_regions - at) * sizeof *a->regions);
    df__bfc_region *r = &a->regions[at];
    r->base = (char *)mem + lost;
    r->size = size;
    r->raw = mem;
    r->raw_size = bytes;
    r->handles = handles;
    a->n_regions++;
    a->hint = &a->none;           /* regions moved */
    df__bfc_chunk *c = &a->chunks[h];
    c->ptr = r->base;
    c->size = size;
    c->requested = 0;
    c->prev = c->next = DF__BFC_NIL;
    handles[0] = h;
    df__bfc_bin_insert(a, h);
    a->total_region_bytes += bytes;
    if ((int64_t)a->total_region_bytes > a->peak_bytes_reserved)
        a->peak_bytes_reserved = (int64_t)a->total_region_bytes;
    return 1;
}

static int df__bfc_extend(df_bfc *a, size_t rounded) {
    size_t avail = (a->limit - a->total_region_bytes) & ~(DF__BFC_MIN - 1);
    if (rounded > avail) return 0;
    int increased = 0;
    size_t region = a->curr_region_bytes;         /* kept only if the region is made: a failed huge */
    while (rounded > region) {                    /* request must not make later ones huge too */
        region *= 2;
        increased = 1;
    }
    size_t bytes = region < avail ? region : avail;
    void *mem = a->sys_alloc(bytes, a->user);
    if (!mem && !a->started_backpedal) {          /* TF: once per lifetime, try 90%, 81%, ... */
        a->started_backpedal = 1;
        while (!mem) {
            size_t less = bytes - bytes / 10;
            less = (less + DF__BFC_MIN - 1) & ~(DF__BFC_MIN - 1);
            if (less < rounded || less >= bytes) break;
            bytes = less;
            mem = a->sys_alloc(bytes, a->user);
        }
    }
    if (!mem) return 0;
    a->curr_region_bytes = region;
    if (!increased && a->curr_region_bytes <= DF__BFC_NO_LIMIT)
        a->curr_region_bytes *= 2;                /* the next region is twice as big */
    if (!df__bfc_add_region(a, mem, bytes)) {
        if (a->sys_free) a->sys_free(mem, bytes, a->user);
        return 0;
    }
    return 1;
}

static void df__bfc_release_region(df_bfc *a, int i) {
    df__bfc_region *r = &a->regions[i];
    if (a->sys_free) a->sys_free(r->raw, r->raw_size, a->user);
    a->total_region_bytes -= r->raw_size;
    DF_FREE(r->handles);
    memmove(r, r + 1, (size_t)(a->n_regions - i - 1) * sizeof *r);
    a->n_regions--;
    a->hint = &a->none;           /* regions moved */
}

/* TF's DeallocateFreeRegions: with garbage_collection, give back every region that holds no
   in-use chunk if that makes room for the request. Call with the cache flushed, so a wholly
   free region is exactly one free chunk. */
static int df__bfc_free_regions(df_bfc *a, size_t rounded) {
    if (!a->garbage_collection || !a->sys_free) return 0;
    size_t free_bytes = 0;
    for (int i = 0; i < a->n_regions; i++) {
        const df__bfc_chunk *c = &a->chunks[a->regions[i].handles[0]];
        if (c->state == DF__BFC_FREE && c->size == a->regions[i].size) free_bytes += a->regions[i].raw_size;
    }
    if (free_bytes == 0 || rounded > a->limit - a->total_region_bytes + free_bytes) return 0;
    for (int i = a->n_regions - 1; i >= 0; i--) {
        uint32_t h = a->regions[i].handles[0];
        df__bfc_chunk *c = &a->chunks[h];
        if (c->state != DF__BFC_FREE || c->size != a->regions[i].size) continue;
        df__bfc_bin_remove(a, h);
        df__bfc_handle_recycle(a, h);
        df__bfc_release_region(a, i);
    }
    return 1;
}

/* ---- public ---- */
df_bfc *df_bfc_new(const df_bfc_options *opts) {
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    df_bfc *a = (df_bfc *)DF_MALLOC(sizeof *a);
    if (!a) return NULL;
    memset(a, 0, sizeof *a);
    df__bfc_lock_init(&a->lock);
    a->recycled = DF__BFC_NIL;
    a->hint = &a->none;
    for (int b = 0; b < DF__BFC_NUM_BINS; b++) a->bin_root[b] = DF__BFC_NIL;
    int growth = o.allow_growth || o.memory_limit == 0;   /* no limit: grow from 2 MiB */
    a->limit = o.memory_limit && o.memory_limit < DF__BFC_NO_LIMIT ? o.memory_limit : DF__BFC_NO_LIMIT;
    a->bytes_limit = (int64_t)(o.memory_limit ? a->limit : 0);
    size_t first = growth && a->limit > DF__BFC_FIRST_GROW ? DF__BFC_FIRST_GROW : a->limit;
    a->curr_region_bytes = (first + DF__BFC_MIN - 1) & ~(DF__BFC_MIN - 1);
    if (a->curr_region_bytes == 0) a->curr_region_bytes = DF__BFC_MIN;
    a->garbage_collection = o.garbage_collection;
    if (o.sys_alloc) {
        a->sys_alloc = o.sys_alloc;
        a->sys_free = o.sys_free;          /* may be NULL: regions then stay the caller's */
    } else {
        a->sys_alloc = df__bfc_default_sys_alloc;
        a->sys_free = df__bfc_default_sys_free;
    }
    a->user = o.user;
    return a;
}

void df_bfc_free_all(df_bfc *a) {
    if (!a) return;
    while (a->n_regions > 0) df__bfc_release_region(a, a->n_regions - 1);
    DF_FREE(a->regions);
    DF_FREE(a->chunks);
    df__bfc_lock_destroy(&a->lock);
    DF_FREE(a);
}

static inline void df__bfc_count_alloc(df_bfc *a, df__bfc_chunk *c, size_t nbytes) {
    int64_t size = (int64_t)c->size;
    c->state = DF__BFC_USED;
    c->requested = nbytes;
    a->num_allocs++;
    a->bytes_in_use += size;
    if (a->bytes_in_use > a->peak_bytes_in_use) a->peak_bytes_in_use = a->bytes_in_use;
    if (size > a->largest_alloc_size) a->largest_alloc_size = size;
}

/* TF's AllocateRawInternal after the cache missed: bins, then (cache flushed) bins again,
   then a new region, then garbage collection and a new region. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void *df__bfc_alloc_slow(df_bfc *a, size_t nbytes, size_t rounded) {
    uint32_t h = df__bfc_take(a, rounded);
    if (h == DF__BFC_NIL && !df__bfc_cache_empty(a)) {
        df__bfc_cache_flush(a);
        h = df__bfc_take(a, rounded);
    }
    if (h == DF__BFC_NIL && df__bfc_extend(a, rounded)) h = df__bfc_take(a, rounded);
    if (h == DF__BFC_NIL && df__bfc_free_regions(a, rounded) && df__bfc_extend(a, rounded))
        h = df__bfc_take(a, rounded);
    if (h == DF__BFC_NIL) return NULL;
    df__bfc_chunk *c = &a->chunks[h];
    df__bfc_region *r = df__bfc_region_find(a, c->ptr);
    DF_ASSERT(r != NULL);
    r->handles[((uintptr_t)c->ptr - (uintptr_t)r->base) >> DF__BFC_MIN_BITS] = h;
    df__bfc_count_alloc(a, c, nbytes);
    return c->ptr;
}

void *df_bfc_alloc(df_bfc *a, size_t nbytes) {
    if (!a || nbytes - 1 >= DF__BFC_NO_LIMIT) return NULL;      /* 0 wraps around: NULL */
#ifdef DF_BFC_ALLOC_FAULT
    if (DF_BFC_ALLOC_FAULT(nbytes)) return NULL;
#endif
    size_t rounded = (nbytes + DF__BFC_MIN - 1) & ~(DF__BFC_MIN - 1);
    void *p;
    df__bfc_lock_acquire(&a->lock);
    if (rounded <= DF__BFC_CACHE_MAX) {
        size_t cls = (rounded >> DF__BFC_MIN_BITS) - 1;
        uint32_t n = a->cache_n[cls];
        if (n) {                                  /* fast path: an exact-size cached chunk */
            a->cache_n[cls] = (uint8_t)--n;
            df__bfc_chunk *c = &a->chunks[a->cache[cls][n]];
            c->state = DF__BFC_USED;
            c->requested = nbytes;
            a->num_allocs++;
            a->bytes_in_use += (int64_t)rounded;
            if (a->bytes_in_use > a->peak_bytes_in_use) a->peak_bytes_in_use = a->bytes_in_use;
            /* largest_alloc_size already counts this chunk: it was handed out before */
            p = c->ptr;
            df__bfc_lock_release(&a->lock);
            return p;
        }
    }
    p = df__bfc_alloc_slow(a, nbytes, rounded);
    df__bfc_lock_release(&a->lock);
    return p;
}

/* Puts chunk h (just freed) into the bins; flushes the cache if nothing is in use. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void df__bfc_free_slow(df_bfc *a, uint32_t h) {
    a->chunks[h].state = DF__BFC_FREE;
    df__bfc_coalesce_insert(a, h);
    if (a->bytes_in_use == 0) df__bfc_cache_flush(a);   /* all free: all coalesced */
}

/* The same checks as df__bfc_lookup_used, inline, with a one-region hint before the search. */
void df_bfc_free(df_bfc *a, void *p) {
    if (!a || !p) return;
    df__bfc_lock_acquire(&a->lock);
    df__bfc_region *r = a->hint;
    uintptr_t off = (uintptr_t)p - (uintptr_t)r->base;
    if (off >= r->size) {
        r = df__bfc_region_find(a, p);
        if (!r) goto done;                        /* not ours: ignored */
        a->hint = r;
        off = (uintptr_t)p - (uintptr_t)r->base;
    }
    if (off & (DF__BFC_MIN - 1)) goto done;
    uint32_t h = r->handles[off >> DF__BFC_MIN_BITS];
    if (h >= a->n_chunks) goto done;
    df__bfc_chunk *c = &a->chunks[h];
    if (c->ptr != (char *)p || c->state != DF__BFC_USED) goto done;   /* stale, double free */
    size_t size = c->size;
    a->bytes_in_use -= (int64_t)size;
    if (size <= DF__BFC_CACHE_MAX && a->bytes_in_use != 0) {
        size_t cls = (size >> DF__BFC_MIN_BITS) - 1;
        uint32_t n = a->cache_n[cls];
        if (n < DF__BFC_CACHE_DEPTH) {
            c->state = DF__BFC_CACHED;
            a->cache[cls][n] = h;
            a->cache_n[cls] = (uint8_t)(n + 1);
            goto done;
        }
    }
    df__bfc_free_slow(a, h);
done:
    df__bfc_lock_release(&a->lock);
}

size_t df_bfc_allocated_size(df_bfc *a, const void *p) {
    if (!a || !p) return 0;
    size_t size = 0;
    df__bfc_lock_acquire(&a->lock);
    uint32_t h = df__bfc_lookup_used(a, p);
    if (h != DF__BFC_NIL) size = a->chunks[h].size;
    df__bfc_lock_release(&a->lock);
    return size;
}

/* The largest free chunk, cached ones included: the top bin's maximum or the top cache class. */
static size_t df__bfc_largest_free(const df_bfc *a) {
    size_t best = 0;
    if (a->bin_mask) {
        uint32_t t = a->bin_root[df__bfc_log2(a->bin_mask)];
        while (a->chunks[t].kid[1] != DF__BFC_NIL) t = a->chunks[t].kid[1];
        best = a->chunks[t].size;
    }
    for (int cls = DF__BFC_CACHE_CLASSES - 1; cls >= 0; cls--) {
        if (a->cache_n[cls]) {
            size_t cached = (size_t)(cls + 1) << DF__BFC_MIN_BITS;
            if (cached > best) best = cached;
            break;
        }
    }
    return best;
}

static void df__bfc_stats_locked(const df_bfc *a, df_alloc_stats *out) {
    out->num_allocs = a->num_allocs;
    out->bytes_in_use = a->bytes_in_use;
    out->peak_bytes_in_use = a->peak_bytes_in_use;
    out->largest_alloc_size = a->largest_alloc_size;
    out->bytes_limit = a->bytes_limit;
    out->bytes_reserved = (int64_t)a->total_region_bytes;
    out->peak_bytes_reserved = a->peak_bytes_reserved;
    out->largest_free_block = (int64_t)df__bfc_largest_free(a);
}

void df_bfc_get_stats(df_bfc *a, df_alloc_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!a) return;
    df__bfc_lock_acquire(&a->lock);
    df__bfc_stats_locked(a, out);
    df__bfc_lock_release(&a->lock);
}

/* ---- summary (TF's DumpMemoryLog, in a bounded buffer) ---- */
typedef struct df__bfc_writer { char *buf; size_t n, len; int full; } df__bfc_writer;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void df__bfc_put(df__bfc_writer *w, const char *fmt, ...) {
    if (w->full) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->buf + w->len, w->n - w->len, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= w->n - w->len) {
        w->full = 1;
        w->len = w->n - 1;
        if (w->n >= 5) memcpy(w->buf + w->n - 5, "...\n", 5);   /* mark the cut */
    } else {
        w->len += (size_t)k;
    }
}

static const char *df__bfc_human(size_t bytes, char *tmp, size_t n) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) { snprintf(tmp, n, "%zuB", bytes); return tmp; }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) { v /= 1024.0; u++; }
    snprintf(tmp, n, "%.2f%s", v, units[u]);
    return tmp;
}

char *df_bfc_summary(df_bfc *a, char *buf, size_t n) {
    if (!buf || n == 0) return buf;
    buf[0] = '\0';
    df__bfc_writer w = {buf, n, 0, 0};
    if (!a) { df__bfc_put(&w, "BFC allocator: (null)\n"); return buf; }
    char t1[32], t2[32], t3[32], t4[32];
    df__bfc_lock_acquire(&a->lock);
    df_alloc_stats s;
    df__bfc_stats_locked(a, &s);
    int64_t avail = s.bytes_reserved - s.bytes_in_use;
    double frag = avail > 0 ? (double)(avail - s.largest_free_block) / (double)avail : 0.0;
    df__bfc_put(&w, "BFC allocator: %d region(s), %s reserved, limit %s\n", a->n_regions,
                df__bfc_human((size_t)s.bytes_reserved, t1, sizeof t1),
                s.bytes_limit ? df__bfc_human((size_t)s.bytes_limit, t2, sizeof t2) : "none");
    df__bfc_put(&w, "Stats: num_allocs %lld, bytes_in_use %lld, peak_bytes_in_use %lld, "
                "largest_alloc_size %lld, bytes_limit %lld, bytes_reserved %lld, "
                "peak_bytes_reserved %lld, largest_free_block %lld, fragmentation %.4f\n",
                (long long)s.num_allocs, (long long)s.bytes_in_use, (long long)s.peak_bytes_in_use,
                (long long)s.largest_alloc_size, (long long)s.bytes_limit,
                (long long)s.bytes_reserved, (long long)s.peak_bytes_reserved,
                (long long)s.largest_free_block, frag);
    /* per-bin totals over all chunks (in-use chunks counted in the bin of their size) */
    size_t used_n[DF__BFC_NUM_BINS] = {0}, used_b[DF__BFC_NUM_BINS] = {0},
           req_b[DF__BFC_NUM_BINS] = {0}, free_n[DF__BFC_NUM_BINS] = {0},
           free_b[DF__BFC_NUM_BINS] = {0}, cached_n = 0, cached_b = 0;
    for (int i = 0; i < a->n_regions; i++) {
        for (uint32_t h = a->regions[i].handles[0]; h != DF__BFC_NIL; h = a->chunks[h].next) {
            const df__bfc_chunk *c = &a->chunks[h];
            int b = df__bfc_bin_for(c->size);
            if (c->state == DF__BFC_USED) { used_n[b]++; used_b[b] += c->size; req_b[b] += c->requested; }
            else { free_n[b]++; free_b[b] += c->size; }
            if (c->state == DF__BFC_CACHED) { cached_n++; cached_b += c->size; }
        }
    }
    for (int b = 0; b < DF__BFC_NUM_BINS; b++) {
        df__bfc_put(&w, "Bin (%s): in use %zu chunks, %s (%s requested); free %zu chunks, %s\n",
                    df__bfc_human(DF__BFC_MIN << b, t1, sizeof t1), used_n[b],
                    df__bfc_human(used_b[b], t2, sizeof t2), df__bfc_human(req_b[b], t3, sizeof t3),
                    free_n[b], df__bfc_human(free_b[b], t4, sizeof t4));
    }
    df__bfc_put(&w, "Front cache: %zu free chunks, %s (counted as free above)\n", cached_n,
                df__bfc_human(cached_b, t1, sizeof t1));
    for (int i = 0; i < a->n_regions && !w.full; i++) {
        const df__bfc_region *r = &a->regions[i];
        df__bfc_put(&w, "Region %d at %p: %s\n", i, (void *)r->base,
                    df__bfc_human(r->size, t1, sizeof t1));
        for (uint32_t h = r->handles[0]; h != DF__BFC_NIL && !w.full; h = a->chunks[h].next) {
            const df__bfc_chunk *c = &a->chunks[h];
            if (c->state == DF__BFC_USED)
                df__bfc_put(&w, "  InUse  at %p of size %zu, requested %zu\n", (void *)c->ptr,
                            c->size, c->requested);
            else
                df__bfc_put(&w, "  %s at %p of size %zu\n",
                            c->state == DF__BFC_CACHED ? "Cached" : "Free  ", (void *)c->ptr, c->size);
        }
    }
    df__bfc_lock_release(&a->lock);
    return buf;
}
