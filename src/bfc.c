/* ==========================================================================================
   src/bfc.c: The BFC allocator                                                         >>bfc
   Best fit with coalescing, as TensorFlow's: memory in 256-byte units carved from regions;
   every free chunk sits in one of 21 size bins (a treap ordered by size, then address), or
   in a cache: the small front cache under the lock, or a thread's own cache. Invariant: no two
   physically adjacent chunks are both in bins; caches are flushed (coalesced) before a region
   is added or given back, when a bin search fails and when nothing is in use (a thread's cache
   by its owner only: others ask it to at its next call). Chunk handles are 32-bit indices.
   ========================================================================================== */

#define DF__BFC_MIN_BITS    8
#define DF__BFC_MIN         ((size_t)1 << DF__BFC_MIN_BITS)       /* granularity and minimum */
#define DF__BFC_NUM_BINS    21
#define DF__BFC_NIL         0xFFFFFFFFu
#define DF__BFC_MAX_WASTE   ((size_t)128 << 20)    /* TF's max_internal_fragmentation_bytes */
#define DF__BFC_FIRST_GROW  ((size_t)2 << 20)      /* allow_growth: first region 2 MiB */
#define DF__BFC_NO_LIMIT    ((size_t)1 << 60)      /* "no limit": far beyond any real memory */
/* Caches: recently freed chunks of up to DF__BFC_CACHE_MAX bytes, per exact rounded size,
   reused LIFO without touching the bins. */
#define DF__BFC_CACHE_MAX     ((size_t)16 << 10)
#define DF__BFC_CACHE_CLASSES ((int)(DF__BFC_CACHE_MAX >> DF__BFC_MIN_BITS))   /* 64 */
#define DF__BFC_CACHE_DEPTH   32
#define DF__BFC_MIRROR        64         /* regions the lock-free paths can see */

/* Per-thread caches (not under DF_NO_THREADS). A thread that uses an allocator gets a cache of
   its own, found through a small thread-local table keyed by the allocator's unique id. Its
   owner pushes and pops without locks or atomic read-modify-writes: a free reads only the
   region (through a one-region hint, checked against a sequence number, or a mirror of the
   region list read as a seqlock) and the slot of the chunk's first 256 bytes, whose word says
   USED or CACHED (relaxed atomics: an aligned store). Others never touch a cache's chunks: a
   thread that needs them (a failed bin search, nothing in use) sets the owner's flush_req; a
   thread's exit (a pthread key destructor) and df_bfc_free_all give caches back.
   Accounting: each cache counts its owner's allocations and frees (delta, its maximum hi,
   nallocs), others read them (relaxed); the allocator's own counts take the rest and a
   finished thread's. bytes_in_use and num_allocs are exact whenever the threads are quiet;
   peak_bytes_in_use is exact while one thread allocates, otherwise an upper bound (the sum of
   the counts' maxima, and never more than the most bytes ever out of the bins). */
#ifndef DF_NO_THREADS
#define DF__BFC_TC 1
#define DF__BFC_TC_SLOTS  64
#define DF__BFC_TC_CLASS  ((size_t)32 << 10)       /* most bytes per class a thread's cache parks */
#define DF__BFC_TLS_WAYS  8
#define DF__BFC_TC_ARRAY  DF__BFC_TC_SLOTS
#else
#define DF__BFC_TC_ARRAY  1
#endif

#define DF__BFC_LOAD(x)      __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define DF__BFC_STORE(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Chunk states (chunk array, under the lock): in a bin, out of the bins (in use or cached), or
   a recycled handle. */
enum { DF__BFC_FREE = 0, DF__BFC_USED = 1, DF__BFC_DEAD = 3 };

/* A slot's word: what starts there. Bits 0-1 the state (0: no in-use or cached chunk starts
   here), 2-8 the cache class + 1 (0: too big to cache), 9-16 rounded - requested and bit 17
   set when that holds the request (a cache hit) rather than the chunk's `requested`. */
#define DF__BFC_W_USED    1u
#define DF__BFC_W_CACHED  2u
#define DF__BFC_W_REQ     (1u << 17)
#define DF__BFC_W_STATE(w) ((w) & 3u)
#define DF__BFC_W_CLS1(w)  (((w) >> 2) & 127u)

typedef struct df__bfc_slot { uint32_t h, word; } df__bfc_slot;

typedef struct df__bfc_chunk {          /* 48 bytes; what a tree walk reads comes first */
    char    *ptr;
    size_t   size;            /* rounded; a multiple of 256 */
    uint32_t kid[2];          /* treap children while in a bin (0 left, 1 right); kid[0]
                                 links the recycled list */
    uint32_t prio;            /* treap priority, fixed per handle */
    int8_t   bin;             /* -1 unless in a bin */
    uint8_t  state;           /* DF__BFC_FREE / USED / DEAD */
    uint32_t prev, next;      /* physical neighbours in the same region, DF__BFC_NIL at the ends */
    size_t   requested;       /* what the caller asked for, when handed out from the bins */
} df__bfc_chunk;

typedef struct df__bfc_region {
    char     *base;           /* 256-aligned start of managed memory */
    size_t    size;           /* managed bytes, a multiple of 256 */
    void     *raw;            /* as sys_alloc returned it, for sys_free */
    size_t    raw_size;       /* bytes asked of sys_alloc (counts towards the limit) */
    df__bfc_slot *slots;      /* per 256 bytes: .word exact for every chunk start; .h right for
                                 every in-use or cached chunk and for the chunk at base */
} df__bfc_region;

typedef struct df__bfc_mirrored { char *base; size_t size; df__bfc_slot *slots; } df__bfc_mirrored;

/* A cache of chunks: per class a LIFO stack of (pointer, slot). n[] is read by others. */
typedef struct df__bfc_entry { char *p; df__bfc_slot *slot; } df__bfc_entry;
typedef struct df__bfc_cache {
    uint8_t n[DF__BFC_CACHE_CLASSES];
    df__bfc_entry e[DF__BFC_CACHE_CLASSES][DF__BFC_CACHE_DEPTH];
} df__bfc_cache;

/* ---- lock: the shared spinlock of src/platform.c; critical sections are tens of nanoseconds ---- */
typedef df__spin df__bfc_lock;
static void df__bfc_lock_init(df__bfc_lock *l) { __atomic_store_n(&l->locked, 0, __ATOMIC_RELAXED); }
static void df__bfc_lock_destroy(df__bfc_lock *l) { (void)l; }
#define df__bfc_lock_acquire(l) df__spin_lock(l)
#define df__bfc_lock_release(l) df__spin_unlock(l)

typedef struct df__bfc_tc df__bfc_tc;    /* NULL everywhere under DF_NO_THREADS */
#ifdef DF__BFC_TC
struct df__bfc_tc {
    /* the owner's line: written by the owner (relaxed), read by others */
    int64_t  delta, hi, nallocs;        /* bytes counted in use here, its maximum, allocations */
    int      flush_req;                 /* set by others: give the chunks back at the next call */
    int      index;                     /* in a->tcs */
    /* the owner's only */
    uint32_t hint_seq;                  /* a->view_seq when the hint was taken (odd: none) */
    char    *hint_base;
    size_t   hint_size;
    df__bfc_slot *hint_slots;
    df__bfc_cache cache;
};
typedef struct df__bfc_tls { uint64_t id; df_bfc *a; df__bfc_tc *tc; } df__bfc_tls;
static _Thread_local df__bfc_tls df__bfc_tls_table[DF__BFC_TLS_WAYS];
static uint64_t df__bfc_next_id;
static df__spin df__bfc_registry_lock;   /* the live allocators that have thread caches */
static df_bfc *df__bfc_registry;
static pthread_once_t df__bfc_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t df__bfc_key;
static int df__bfc_key_ok;
/* The cache of a thread that could not have one: always empty and asking to be flushed, so
   the fast paths, which need not test for NULL, send every call to the locked paths. */
static df__bfc_tc df__bfc_no_tc = {.flush_req = 1};
#define DF__BFC_REAL_TC(tc) ((tc) == &df__bfc_no_tc ? NULL : (tc))
#endif

struct df_bfc {
    /* read-mostly: what the lock-free paths read of the allocator */
    uint64_t id;                 /* unique per allocator: the thread-local tables' key */
    uint32_t view_seq;           /* the mirror's seqlock: odd while it changes */
    int      n_mirrored;         /* regions in the mirror; -1: more than fit */
    int64_t  bytes_in_use;       /* counted outside the thread caches */
    uint8_t  tc_depth1[DF__BFC_CACHE_CLASSES + 1];   /* per class + 1: most chunks a thread's
                                    cache parks (0 for class + 1 = 0, chunks too big) */
    df__bfc_mirrored mirror[DF__BFC_MIRROR];
    char     pad0[64];
    /* the lock and what the locked fast path touches, together */
    df__bfc_lock lock;
    df__bfc_region *hint;        /* the region of the last locked free, or `none` (never NULL) */
    df__bfc_chunk *chunks;
    df__bfc_region *regions;
    int64_t  num_allocs, peak_bytes_in_use, largest_alloc_size;   /* outside the thread caches */
    int64_t  held, held_hi;      /* bytes out of the bins (in use or cached), its maximum */
    int64_t  peak_folded;        /* the peak's bound when a thread's cache was given back */
    df__bfc_cache front;
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
    /* thread caches */
    int      n_tc;               /* tcs[0 .. n_tc) may be non-NULL */
    df__bfc_tc *tcs[DF__BFC_TC_ARRAY];
    df_bfc  *registry_next;      /* in df__bfc_registry while linked */
    int      registered;
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

static inline uint32_t df__bfc_cls1(size_t size) {     /* cache class + 1; 0: not cached */
    return size <= DF__BFC_CACHE_MAX ? (uint32_t)(size >> DF__BFC_MIN_BITS) : 0u;
}

/* The in-use chunk that starts exactly at p, or NIL: safe on any pointer. A slot's word is
   exact for every chunk start (and zero elsewhere); its handle is written when a chunk is
   handed out from the bins (not on split or merge: that saves random accesses to a big table). */
static uint32_t df__bfc_lookup_used(df_bfc *a, const void *p, df__bfc_slot **slot_out) {
    df__bfc_region *r = df__bfc_region_find(a, p);
    if (!r) return DF__BFC_NIL;
    uintptr_t off = (uintptr_t)p - (uintptr_t)r->base;
    if (off & (DF__BFC_MIN - 1)) return DF__BFC_NIL;
    df__bfc_slot *s = &r->slots[off >> DF__BFC_MIN_BITS];
    if (DF__BFC_W_STATE(DF__BFC_LOAD(s->word)) != DF__BFC_W_USED) return DF__BFC_NIL;
    DF_ASSERT(s->h < a->n_chunks && a->chunks[s->h].ptr == (const char *)p);
    if (slot_out) *slot_out = s;
    return s->h;
}

/* What the caller asked for: from the slot after a cache hit, else from the chunk. */
static size_t df__bfc_requested(const df__bfc_chunk *c, uint32_t word) {
    return (word & DF__BFC_W_REQ) ? c->size - ((word >> 9) & 255u) : c->requested;
}

/* Copies the region list to the mirror the lock-free paths read: a seqlock whose data are
   written with release stores and read with acquire loads (no fences; plain moves on x86), so
   a reader that sees any new datum sees the odd sequence number after it. */
#define DF__BFC_PUT(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define DF__BFC_GET(x)    __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
static void df__bfc_mirror_sync(df_bfc *a) {
    uint32_t seq = a->view_seq;
    __atomic_store_n(&a->view_seq, seq + 1, __ATOMIC_RELAXED);
    int n = a->n_regions <= DF__BFC_MIRROR ? a->n_regions : DF__BFC_MIRROR;
    for (int i = 0; i < n; i++) {
        DF__BFC_PUT(a->mirror[i].base, a->regions[i].base);
        DF__BFC_PUT(a->mirror[i].size, a->regions[i].size);
        DF__BFC_PUT(a->mirror[i].slots, a->regions[i].slots);
    }
    DF__BFC_PUT(a->n_mirrored, a->n_regions <= DF__BFC_MIRROR ? a->n_regions : -1);
    __atomic_store_n(&a->view_seq, seq + 2, __ATOMIC_RELEASE);
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

/* The chunk starting at slot s (in use or cached) goes back to the bins. */
static void df__bfc_to_bins(df_bfc *a, df__bfc_slot *s) {
    uint32_t h = s->h;
    DF_ASSERT(h < a->n_chunks && a->chunks[h].state == DF__BFC_USED);
    DF__BFC_STORE(s->word, 0u);
    a->held -= (int64_t)a->chunks[h].size;
    df__bfc_coalesce_insert(a, h);
}

/* With the lock held: every chunk of cache k back to the bins, coalescing. Only the lock's
   holder may do this to the front cache, and only the owner to a thread's cache. */
static size_t df__bfc_cache_drain(df_bfc *a, df__bfc_cache *k) {
    size_t bytes = 0;
    for (int cls = 0; cls < DF__BFC_CACHE_CLASSES; cls++) {
        uint32_t n = k->n[cls];
        while (n) {
            df__bfc_entry e = k->e[cls][--n];
            DF_ASSERT(DF__BFC_W_STATE(e.slot->word) == DF__BFC_W_CACHED);
            bytes += (size_t)(cls + 1) << DF__BFC_MIN_BITS;
            df__bfc_to_bins(a, e.slot);
        }
        DF__BFC_STORE(k->n[cls], (uint8_t)0);
    }
    return bytes;
}

static int df__bfc_cache_empty(const df__bfc_cache *k) {
    for (int cls = 0; cls < DF__BFC_CACHE_CLASSES; cls++)
        if (DF__BFC_LOAD(k->n[cls])) return 0;
    return 1;
}

/* The largest chunk cache k holds, 0 if none. */
static size_t df__bfc_cache_largest(const df__bfc_cache *k) {
    for (int cls = DF__BFC_CACHE_CLASSES - 1; cls >= 0; cls--)
        if (DF__BFC_LOAD(k->n[cls])) return (size_t)(cls + 1) << DF__BFC_MIN_BITS;
    return 0;
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
    if (n_slots > SIZE_MAX / sizeof(df__bfc_slot)) return 0;
    df__bfc_slot *slots = (df__bfc_slot *)DF_MALLOC(n_slots * sizeof(df__bfc_slot));
    if (!slots) return 0;
    memset(slots, 0, n_slots * sizeof(df__bfc_slot));
    uint32_t h = df__bfc_handle_new(a);
    if (h == DF__BFC_NIL) { DF_FREE(slots); return 0; }
    int at = a->n_regions;
    while (at > 0 && (uintptr_t)a->regions[at - 1].base > base) at--;
    memmove(&a->regions[at + 1], &a->regions[at], (size_t)(a->n_regions - at) * sizeof *a->regions);
    df__bfc_region *r = &a->regions[at];
    r->base = (char *)mem + lost;
    r->size = size;
    r->raw = mem;
    r->raw_size = bytes;
    r->slots = slots;
    a->n_regions++;
    a->hint = &a->none;           /* regions moved */
    df__bfc_chunk *c = &a->chunks[h];
    c->ptr = r->base;
    c->size = size;
    c->requested = 0;
    c->prev = c->next = DF__BFC_NIL;
    slots[0].h = h;
    df__bfc_bin_insert(a, h);
    a->total_region_bytes += bytes;
    if ((int64_t)a->total_region_bytes > a->peak_bytes_reserved)
        a->peak_bytes_reserved = (int64_t)a->total_region_bytes;
    df__bfc_mirror_sync(a);
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
    DF_FREE(r->slots);
    memmove(r, r + 1, (size_t)(a->n_regions - i - 1) * sizeof *r);
    a->n_regions--;
    a->hint = &a->none;           /* regions moved */
    df__bfc_mirror_sync(a);
}

/* TF's DeallocateFreeRegions: with garbage_collection, give back every region that holds no
   in-use chunk if that makes room for the request. Call with the caches flushed (a wholly
   free region is then exactly one free chunk); a chunk parked in another thread's cache keeps
   its region. */
static int df__bfc_free_regions(df_bfc *a, size_t rounded) {
    if (!a->garbage_collection || !a->sys_free) return 0;
    size_t free_bytes = 0;
    for (int i = 0; i < a->n_regions; i++) {
        const df__bfc_chunk *c = &a->chunks[a->regions[i].slots[0].h];
        if (c->state == DF__BFC_FREE && c->size == a->regions[i].size) free_bytes += a->regions[i].raw_size;
    }
    if (free_bytes == 0 || rounded > a->limit - a->total_region_bytes + free_bytes) return 0;
    for (int i = a->n_regions - 1; i >= 0; i--) {
        uint32_t h = a->regions[i].slots[0].h;
        df__bfc_chunk *c = &a->chunks[h];
        if (c->state != DF__BFC_FREE || c->size != a->regions[i].size) continue;
        df__bfc_bin_remove(a, h);
        df__bfc_handle_recycle(a, h);
        df__bfc_release_region(a, i);
    }
    return 1;
}

/* ---- counting ---- */
/* An allocation (d > 0) or a free (d < 0) of |d| bytes, counted in the thread's cache tc, or
   (tc NULL, the lock held) in the allocator's own counts. */
static inline void df__bfc_count(df_bfc *a, df__bfc_tc *tc, int64_t d) {
#ifdef DF__BFC_TC
    if (tc) {
        int64_t v = tc->delta + d;
        DF__BFC_STORE(tc->delta, v);
        if (d > 0) {
            DF__BFC_STORE(tc->nallocs, tc->nallocs + 1);
            if (v > tc->hi) DF__BFC_STORE(tc->hi, v);
        }
        return;
    }
#else
    (void)tc;
#endif
    int64_t v = a->bytes_in_use + d;
    DF__BFC_STORE(a->bytes_in_use, v);
    if (d > 0) {
        a->num_allocs++;
        if (v > a->peak_bytes_in_use) a->peak_bytes_in_use = v;
    }
}

/* A chunk of `size` bytes leaves the bins. */
static inline void df__bfc_held(df_bfc *a, size_t size) {
    a->held += (int64_t)size;
    if (a->held > a->held_hi) a->held_hi = a->held;
}

/* With the lock held: bytes in use, every cache's count included (exact when the threads
   with caches are quiet). */
static int64_t df__bfc_in_use(const df_bfc *a) {
    int64_t v = a->bytes_in_use;
#ifdef DF__BFC_TC
    for (int i = 0; i < a->n_tc; i++)
        if (a->tcs[i]) v += DF__BFC_LOAD(a->tcs[i]->delta);
#endif
    return v;
}

static int64_t df__bfc_num_allocs(const df_bfc *a) {
    int64_t v = a->num_allocs;
#ifdef DF__BFC_TC
    for (int i = 0; i < a->n_tc; i++)
        if (a->tcs[i]) v += DF__BFC_LOAD(a->tcs[i]->nallocs);
#endif
    return v;
}

/* With the lock held: peak_bytes_in_use. The allocator's own maximum plus each cache's is
   exact when one thread counts; the bytes ever out of the bins bound it too. */
static int64_t df__bfc_peak(const df_bfc *a) {
    int64_t v = a->peak_bytes_in_use;
#ifdef DF__BFC_TC
    for (int i = 0; i < a->n_tc; i++)
        if (a->tcs[i]) v += DF__BFC_LOAD(a->tcs[i]->hi);
#endif
    if (v > a->held_hi) v = a->held_hi;
    return v > a->peak_folded ? v : a->peak_folded;
}

/* ---- thread caches ---- */
#ifdef DF__BFC_TC
/* With the lock held, by the owner only: its cache back to the bins. */
static void df__bfc_tc_drain(df_bfc *a, df__bfc_tc *tc) {
    df__bfc_cache_drain(a, &tc->cache);
    DF__BFC_STORE(tc->flush_req, 0);
}
#endif

/* With the lock held (a failed bin search, nothing in use): the front cache and the caller's
   own cache (tc, or NULL) back to the bins; the other threads are asked to give theirs back at
   their next call. Returns whether any chunk came back. */
static int df__bfc_flush(df_bfc *a, df__bfc_tc *tc) {
    int any = !df__bfc_cache_empty(&a->front);
    if (any) df__bfc_cache_drain(a, &a->front);
#ifdef DF__BFC_TC
    if (tc && !df__bfc_cache_empty(&tc->cache)) {
        df__bfc_tc_drain(a, tc);
        any = 1;
    }
    for (int i = 0; i < a->n_tc; i++) {
        df__bfc_tc *other = a->tcs[i];
        if (other && other != tc && !df__bfc_cache_empty(&other->cache))
            DF__BFC_STORE(other->flush_req, 1);
    }
#else
    (void)tc;
#endif
    return any;
}

#ifdef DF__BFC_TC
/* Gives back the cache of table entry t (its thread exits, or the entry is reused): chunks to
   the bins, counts to the allocator's own. Nothing to do if the allocator is gone. */
static void df__bfc_tc_release(df__bfc_tls *t) {
    df__bfc_tc *tc = DF__BFC_REAL_TC(t->tc);
    if (tc) {
        df__spin_lock(&df__bfc_registry_lock);
        df_bfc *a = df__bfc_registry;
        while (a && !(a == t->a && a->id == t->id)) a = a->registry_next;
        if (a) {
            df__bfc_lock_acquire(&a->lock);
            df__bfc_tc_drain(a, tc);
            int64_t bound = df__bfc_peak(a);
            if (bound > a->peak_folded) a->peak_folded = bound;
            a->num_allocs += tc->nallocs;
            int64_t v = a->bytes_in_use + tc->delta;
            DF__BFC_STORE(a->bytes_in_use, v);
            if (v > a->peak_bytes_in_use) a->peak_bytes_in_use = v;
            a->tcs[tc->index] = NULL;
            df__bfc_lock_release(&a->lock);
            DF_FREE(tc);
        }
        df__spin_unlock(&df__bfc_registry_lock);
    }
    t->id = 0;
    t->a = NULL;
    t->tc = NULL;
}

static void df__bfc_thread_exit(void *table) {
    df__bfc_tls *t = (df__bfc_tls *)table;
    for (int i = 0; i < DF__BFC_TLS_WAYS; i++)
        if (t[i].id) df__bfc_tc_release(&t[i]);
}

static void df__bfc_key_make(void) {
    df__bfc_key_ok = pthread_key_create(&df__bfc_key, df__bfc_thread_exit) == 0;
}

/* A new cache of a for the calling thread, or NULL (no slot left, out of memory, no
   thread-exit hook): the thread then takes the lock for everything. */
static df__bfc_tc *df__bfc_tc_make(df_bfc *a) {
    pthread_once(&df__bfc_key_once, df__bfc_key_make);
    if (!df__bfc_key_ok) return NULL;
    df__bfc_tc *tc = (df__bfc_tc *)DF_MALLOC(sizeof *tc);
    if (!tc) return NULL;
    memset(tc, 0, sizeof *tc);
    tc->hint_seq = 1;                             /* odd: no hint yet */
    tc->index = -1;
    if (pthread_setspecific(df__bfc_key, df__bfc_tls_table) == 0) {   /* the exit hook */
        df__spin_lock(&df__bfc_registry_lock);
        df__bfc_lock_acquire(&a->lock);
        for (int i = 0; i < DF__BFC_TC_SLOTS && tc->index < 0; i++) {
            if (a->tcs[i]) continue;
            tc->index = i;
            a->tcs[i] = tc;
            if (i >= a->n_tc) a->n_tc = i + 1;
        }
        if (tc->index >= 0 && !a->registered) {
            a->registry_next = df__bfc_registry;
            df__bfc_registry = a;
            a->registered = 1;
        }
        df__bfc_lock_release(&a->lock);
        df__spin_unlock(&df__bfc_registry_lock);
    }
    if (tc->index < 0) {
        DF_FREE(tc);
        return NULL;
    }
    return tc;
}

/* The calling thread's cache of a: the table's other ways, or a new one (the least recently
   used way is given back). Moves it to the front. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static df__bfc_tc *df__bfc_tc_find(df_bfc *a) {
    df__bfc_tls *t = df__bfc_tls_table, found;
    uint64_t id = a->id;
    int i = 1;
    while (i < DF__BFC_TLS_WAYS && t[i].id != id) i++;
    if (i < DF__BFC_TLS_WAYS) {
        found = t[i];
    } else {
        i = DF__BFC_TLS_WAYS - 1;
        if (t[i].id) df__bfc_tc_release(&t[i]);
        found.id = id;
        found.a = a;
        found.tc = df__bfc_tc_make(a);
        if (!found.tc) found.tc = &df__bfc_no_tc;
    }
    memmove(&t[1], &t[0], (size_t)i * sizeof *t);
    t[0] = found;
    return found.tc;
}

#endif

/* The calling thread's cache of a if it has one; makes none. */
static df__bfc_tc *df__bfc_tc_peek(df_bfc *a) {
#ifdef DF__BFC_TC
    for (int i = 0; i < DF__BFC_TLS_WAYS; i++)
        if (df__bfc_tls_table[i].id == a->id) return DF__BFC_REAL_TC(df__bfc_tls_table[i].tc);
#else
    (void)a;
#endif
    return NULL;
}

#ifdef DF__BFC_TC
/* Points the hint of tc at the region holding p, read from the mirror. 1: found; 0: no region
   holds p; -1: the mirror cannot tell (more regions than it holds). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int df__bfc_tc_rehint(df_bfc *a, df__bfc_tc *tc, const void *p) {
    for (;;) {
        uint32_t seq = __atomic_load_n(&a->view_seq, __ATOMIC_ACQUIRE);
        if (seq & 1) continue;                    /* being written, under the lock: brief */
        int n = DF__BFC_GET(a->n_mirrored), found = -1;
        for (int i = 0; i < (n < 0 ? DF__BFC_MIRROR : n); i++) {
            char *base = DF__BFC_GET(a->mirror[i].base);
            if ((uintptr_t)p - (uintptr_t)base < DF__BFC_GET(a->mirror[i].size)) { found = i; break; }
        }
        char *base = NULL;
        size_t size = 0;
        df__bfc_slot *slots = NULL;
        if (found >= 0) {
            base = DF__BFC_GET(a->mirror[found].base);
            size = DF__BFC_GET(a->mirror[found].size);
            slots = DF__BFC_GET(a->mirror[found].slots);
        }
        if (__atomic_load_n(&a->view_seq, __ATOMIC_RELAXED) != seq) continue;
        if (found < 0) return n < 0 ? -1 : 0;
        tc->hint_seq = seq;
        tc->hint_base = base;
        tc->hint_size = size;
        tc->hint_slots = slots;
        return 1;
    }
}

/* Noticed by a free on the fast path: perhaps nothing is in use; if so, coalesce all. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int df__bfc_tc_maybe_all_free(df_bfc *a, df__bfc_tc *tc) {
    df__bfc_lock_acquire(&a->lock);
    if (df__bfc_in_use(a) == 0) df__bfc_flush(a, tc);
    df__bfc_lock_release(&a->lock);
    return 1;
}

static int df__bfc_tc_put_locked(df_bfc *a, df__bfc_tc *tc, void *p, df__bfc_slot *s);

/* The owner's free into its cache, no lock, once the hint holds p (at off): 1 when done
   (cached, or ignored as no live chunk), 0 when the locked path must do it. */
DF__HOT_INLINE int df__bfc_tc_put(df_bfc *a, df__bfc_tc *tc, void *p, uintptr_t off) {
    if (off & (DF__BFC_MIN - 1)) return 1;
    df__bfc_slot *s = &tc->hint_slots[off >> DF__BFC_MIN_BITS];
    uint32_t w = DF__BFC_LOAD(s->word);
    if (DF__BFC_W_STATE(w) != DF__BFC_W_USED) return 1;        /* stale, double free */
    uint32_t cls1 = DF__BFC_W_CLS1(w), cls = (cls1 - 1) & (DF__BFC_CACHE_CLASSES - 1);
    uint32_t n = tc->cache.n[cls];
    if (n >= a->tc_depth1[cls1]) return df__bfc_tc_put_locked(a, tc, p, s);   /* full, too big */
    DF__BFC_STORE(s->word, DF__BFC_W_CACHED | cls1 << 2);
    tc->cache.e[cls][n].p = (char *)p;
    tc->cache.e[cls][n].slot = s;
    DF__BFC_STORE(tc->cache.n[cls], (uint8_t)(n + 1));
    int64_t v = tc->delta - (int64_t)((size_t)cls1 << DF__BFC_MIN_BITS);
    DF__BFC_STORE(tc->delta, v);
    if (DF__UNLIKELY(v == -DF__BFC_LOAD(a->bytes_in_use))) return df__bfc_tc_maybe_all_free(a, tc);
    return 1;
}

/* The same when the hint does not hold p: the hint is moved first. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int df__bfc_tc_put_rehint(df_bfc *a, df__bfc_tc *tc, void *p) {
    int found = df__bfc_tc_rehint(a, tc, p);
    if (found <= 0) return found == 0;            /* not ours: ignored */
    return df__bfc_tc_put(a, tc, p, (uintptr_t)p - (uintptr_t)tc->hint_base);
}
#endif

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
#ifdef DF__BFC_TC
    a->id = __atomic_add_fetch(&df__bfc_next_id, 1, __ATOMIC_RELAXED);
    /* what a thread's cache may strand when memory runs short: per class up to 32 KiB or
       1/4096 of the limit, so at most about 2 MiB or 1/64 of the limit in all */
    size_t per_class = a->limit / 4096 < DF__BFC_TC_CLASS ? a->limit / 4096 : DF__BFC_TC_CLASS;
    for (int k = 1; k <= DF__BFC_CACHE_CLASSES; k++) {
        size_t depth = per_class / ((size_t)k << DF__BFC_MIN_BITS);
        a->tc_depth1[k] = (uint8_t)(depth < DF__BFC_CACHE_DEPTH ? depth : DF__BFC_CACHE_DEPTH);
    }
#endif
    return a;
}

void df_bfc_free_all(df_bfc *a) {
    if (!a) return;
#ifdef DF__BFC_TC
    if (a->registered) {                 /* threads' tables keep only a->id: never found again */
        df__spin_lock(&df__bfc_registry_lock);
        df_bfc **link = &df__bfc_registry;
        while (*link && *link != a) link = &(*link)->registry_next;
        if (*link) *link = a->registry_next;
        df__spin_unlock(&df__bfc_registry_lock);
    }
    for (int i = 0; i < a->n_tc; i++) DF_FREE(a->tcs[i]);
#endif
    while (a->n_regions > 0) df__bfc_release_region(a, a->n_regions - 1);
    DF_FREE(a->regions);
    DF_FREE(a->chunks);
    df__bfc_lock_destroy(&a->lock);
    DF_FREE(a);
}

/* TF's AllocateRawInternal after the caches missed: bins, then (caches flushed) bins again,
   then a new region, then garbage collection and a new region. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void *df__bfc_alloc_slow(df_bfc *a, df__bfc_tc *tc, size_t nbytes, size_t rounded) {
    uint32_t h = df__bfc_take(a, rounded);
    if (h == DF__BFC_NIL && df__bfc_flush(a, tc)) h = df__bfc_take(a, rounded);
    if (h == DF__BFC_NIL && df__bfc_extend(a, rounded)) h = df__bfc_take(a, rounded);
    if (h == DF__BFC_NIL && df__bfc_free_regions(a, rounded) && df__bfc_extend(a, rounded))
        h = df__bfc_take(a, rounded);
    if (h == DF__BFC_NIL) return NULL;
    df__bfc_chunk *c = &a->chunks[h];
    df__bfc_region *r = df__bfc_region_find(a, c->ptr);
    DF_ASSERT(r != NULL);
    df__bfc_slot *s = &r->slots[((uintptr_t)c->ptr - (uintptr_t)r->base) >> DF__BFC_MIN_BITS];
    s->h = h;
    DF__BFC_STORE(s->word, DF__BFC_W_USED | df__bfc_cls1(c->size) << 2);
    c->state = DF__BFC_USED;
    c->requested = nbytes;
    df__bfc_held(a, c->size);
    df__bfc_count(a, tc, (int64_t)c->size);
    if ((int64_t)c->size > a->largest_alloc_size) a->largest_alloc_size = (int64_t)c->size;
    return c->ptr;
}

/* Pops an exact-size chunk of cache k (its class non-empty) for a request of nbytes. */
DF__HOT_INLINE char *df__bfc_cache_pop(df__bfc_cache *k, size_t cls, size_t nbytes) {
    uint32_t n = k->n[cls] - 1u;
    df__bfc_entry e = k->e[cls][n];
    DF__BFC_STORE(k->n[cls], (uint8_t)n);
    size_t rounded = (cls + 1) << DF__BFC_MIN_BITS;
    DF__BFC_STORE(e.slot->word, DF__BFC_W_USED | (uint32_t)(cls + 1) << 2 |
                                (uint32_t)(rounded - nbytes) << 9 | DF__BFC_W_REQ);
    return e.p;
}

/* Everything but a thread cache's hit: the front cache, then the bins. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void *df__bfc_alloc_locked(df_bfc *a, df__bfc_tc *tc, size_t nbytes, size_t rounded) {
    size_t cls = (rounded >> DF__BFC_MIN_BITS) - 1;
    void *p;
#ifdef DF__BFC_TC
    tc = DF__BFC_REAL_TC(tc);
#endif
    df__bfc_lock_acquire(&a->lock);
#ifdef DF__BFC_TC
    if (tc && DF__BFC_LOAD(tc->flush_req)) df__bfc_tc_drain(a, tc);
#endif
    if (rounded <= DF__BFC_CACHE_MAX && a->front.n[cls]) {   /* an exact-size cached chunk */
        p = df__bfc_cache_pop(&a->front, cls, nbytes);
        df__bfc_count(a, tc, (int64_t)rounded);
        /* largest_alloc_size already counts this chunk: it was handed out before */
    } else {
        p = df__bfc_alloc_slow(a, tc, nbytes, rounded);
    }
    df__bfc_lock_release(&a->lock);
    return p;
}

void *df_bfc_alloc(df_bfc *a, size_t nbytes) {
    if (!a || nbytes - 1 >= DF__BFC_NO_LIMIT) return NULL;      /* 0 wraps around: NULL */
#ifdef DF_BFC_ALLOC_FAULT
    if (DF_BFC_ALLOC_FAULT(nbytes)) return NULL;
#endif
    size_t rounded = (nbytes + DF__BFC_MIN - 1) & ~(DF__BFC_MIN - 1);
#ifdef DF__BFC_TC
    df__bfc_tls *t = df__bfc_tls_table;
    if (DF__UNLIKELY(t[0].id != a->id)) return df__bfc_alloc_locked(a, df__bfc_tc_find(a), nbytes, rounded);
    df__bfc_tc *tc = t[0].tc;
    size_t cls = (rounded >> DF__BFC_MIN_BITS) - 1;
    if (rounded <= DF__BFC_CACHE_MAX && tc->cache.n[cls] && !DF__BFC_LOAD(tc->flush_req)) {
        void *p = df__bfc_cache_pop(&tc->cache, cls, nbytes);   /* fastest: this thread's cache */
        df__bfc_count(a, tc, (int64_t)rounded);
        return p;
    }
    return df__bfc_alloc_locked(a, tc, nbytes, rounded);
#else
    return df__bfc_alloc_locked(a, NULL, nbytes, rounded);
#endif
}

static void df__bfc_free_chunk(df_bfc *a, df__bfc_tc *tc, void *p, df__bfc_slot *s);

/* The locked free: the same checks as df__bfc_lookup_used, with a one-region hint before the
   search; the front cache, or the bins (everything coalesced when nothing is left in use). */
static void df__bfc_free_locked(df_bfc *a, df__bfc_tc *tc, void *p) {
#ifdef DF__BFC_TC
    if (tc && DF__BFC_LOAD(tc->flush_req)) df__bfc_tc_drain(a, tc);
#endif
    df__bfc_region *r = a->hint;
    uintptr_t off = (uintptr_t)p - (uintptr_t)r->base;
    if (off >= r->size) {
        r = df__bfc_region_find(a, p);
        if (!r) return;                           /* not ours: ignored */
        a->hint = r;
        off = (uintptr_t)p - (uintptr_t)r->base;
    }
    if (off & (DF__BFC_MIN - 1)) return;
    df__bfc_free_chunk(a, tc, p, &r->slots[off >> DF__BFC_MIN_BITS]);
}

/* The locked free of the chunk that may start at p, whose slot is s. */
static void df__bfc_free_chunk(df_bfc *a, df__bfc_tc *tc, void *p, df__bfc_slot *s) {
    if (DF__BFC_W_STATE(DF__BFC_LOAD(s->word)) != DF__BFC_W_USED) return;   /* stale, double free */
    df__bfc_chunk *c = &a->chunks[s->h];
    DF_ASSERT(s->h < a->n_chunks && c->ptr == (char *)p && c->state == DF__BFC_USED);
    size_t size = c->size;
    df__bfc_count(a, tc, -(int64_t)size);
    int none_in_use;
#ifdef DF__BFC_TC
    if (tc) none_in_use = a->bytes_in_use + tc->delta == 0 && df__bfc_in_use(a) == 0;
    else
#endif
    none_in_use = df__bfc_in_use(a) == 0;
    uint32_t cls1 = df__bfc_cls1(size);
    if (cls1 && !none_in_use && a->front.n[cls1 - 1] < DF__BFC_CACHE_DEPTH) {
        uint32_t n = a->front.n[cls1 - 1];
        DF__BFC_STORE(s->word, DF__BFC_W_CACHED | cls1 << 2);
        a->front.e[cls1 - 1][n].p = (char *)p;
        a->front.e[cls1 - 1][n].slot = s;
        DF__BFC_STORE(a->front.n[cls1 - 1], (uint8_t)(n + 1));
        return;
    }
    df__bfc_to_bins(a, s);
    if (none_in_use) df__bfc_flush(a, tc);        /* all free: all coalesced */
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void df__bfc_free_lock(df_bfc *a, df__bfc_tc *tc, void *p) {
#ifdef DF__BFC_TC
    tc = DF__BFC_REAL_TC(tc);
#endif
    df__bfc_lock_acquire(&a->lock);
    df__bfc_free_locked(a, tc, p);
    df__bfc_lock_release(&a->lock);
}

#ifdef DF__BFC_TC
/* The owner's free of the chunk at p (slot s) that its cache does not take: under the lock. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int df__bfc_tc_put_locked(df_bfc *a, df__bfc_tc *tc, void *p, df__bfc_slot *s) {
    df__bfc_lock_acquire(&a->lock);
    df__bfc_free_chunk(a, tc, p, s);
    df__bfc_lock_release(&a->lock);
    return 1;
}
#endif

void df_bfc_free(df_bfc *a, void *p) {
    if (!a || !p) return;
#ifdef DF__BFC_TC
    df__bfc_tls *t = df__bfc_tls_table;
    if (DF__UNLIKELY(t[0].id != a->id)) {
        df__bfc_free_lock(a, df__bfc_tc_find(a), p);
        return;
    }
    df__bfc_tc *tc = t[0].tc;
    if (!DF__BFC_LOAD(tc->flush_req)) {                /* fastest: into this thread's cache */
        uintptr_t off = (uintptr_t)p - (uintptr_t)tc->hint_base;
        int done = DF__LIKELY(tc->hint_seq == DF__BFC_LOAD(a->view_seq) && off < tc->hint_size)
                       ? df__bfc_tc_put(a, tc, p, off) : df__bfc_tc_put_rehint(a, tc, p);
        if (done) return;
    }
    df__bfc_free_lock(a, tc, p);
#else
    df__bfc_free_lock(a, NULL, p);
#endif
}

size_t df_bfc_allocated_size(df_bfc *a, const void *p) {
    if (!a || !p) return 0;
    size_t size = 0;
    df__bfc_lock_acquire(&a->lock);
    uint32_t h = df__bfc_lookup_used(a, p, NULL);
    if (h != DF__BFC_NIL) size = a->chunks[h].size;
    df__bfc_lock_release(&a->lock);
    return size;
}

/* The largest free chunk, cached ones included: the top bin's maximum or a cache's top class. */
static size_t df__bfc_largest_free(const df_bfc *a) {
    size_t best = 0;
    if (a->bin_mask) {
        uint32_t t = a->bin_root[df__bfc_log2(a->bin_mask)];
        while (a->chunks[t].kid[1] != DF__BFC_NIL) t = a->chunks[t].kid[1];
        best = a->chunks[t].size;
    }
    size_t cached = df__bfc_cache_largest(&a->front);
    if (cached > best) best = cached;
#ifdef DF__BFC_TC
    for (int i = 0; i < a->n_tc; i++) {
        cached = a->tcs[i] ? df__bfc_cache_largest(&a->tcs[i]->cache) : 0;
        if (cached > best) best = cached;
    }
#endif
    return best;
}

/* With the lock held, by a thread with cache tc (or NULL). Nothing in use: all coalesced first. */
static void df__bfc_stats_locked(df_bfc *a, df__bfc_tc *tc, df_alloc_stats *out) {
    int64_t in_use = df__bfc_in_use(a);
    if (in_use == 0) df__bfc_flush(a, tc);
    out->num_allocs = df__bfc_num_allocs(a);
    out->bytes_in_use = in_use;
    out->peak_bytes_in_use = df__bfc_peak(a);
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
    df__bfc_tc *tc = df__bfc_tc_peek(a);
    df__bfc_lock_acquire(&a->lock);
    df__bfc_stats_locked(a, tc, out);
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
    df__bfc_tc *tc = df__bfc_tc_peek(a);
    df__bfc_lock_acquire(&a->lock);
    df_alloc_stats s;
    df__bfc_stats_locked(a, tc, &s);
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
        const df__bfc_region *r = &a->regions[i];
        for (uint32_t h = r->slots[0].h; h != DF__BFC_NIL; h = a->chunks[h].next) {
            const df__bfc_chunk *c = &a->chunks[h];
            int b = df__bfc_bin_for(c->size);
            uint32_t word = DF__BFC_LOAD(r->slots[(c->ptr - r->base) >> DF__BFC_MIN_BITS].word);
            if (DF__BFC_W_STATE(word) == DF__BFC_W_USED) {
                used_n[b]++; used_b[b] += c->size; req_b[b] += df__bfc_requested(c, word);
            } else {
                free_n[b]++; free_b[b] += c->size;
            }
            if (DF__BFC_W_STATE(word) == DF__BFC_W_CACHED) { cached_n++; cached_b += c->size; }
        }
    }
    for (int b = 0; b < DF__BFC_NUM_BINS; b++) {
        df__bfc_put(&w, "Bin (%s): in use %zu chunks, %s (%s requested); free %zu chunks, %s\n",
                    df__bfc_human(DF__BFC_MIN << b, t1, sizeof t1), used_n[b],
                    df__bfc_human(used_b[b], t2, sizeof t2), df__bfc_human(req_b[b], t3, sizeof t3),
                    free_n[b], df__bfc_human(free_b[b], t4, sizeof t4));
    }
    df__bfc_put(&w, "Caches (front and threads'): %zu free chunks, %s (counted as free above)\n", cached_n,
                df__bfc_human(cached_b, t1, sizeof t1));
    for (int i = 0; i < a->n_regions && !w.full; i++) {
        const df__bfc_region *r = &a->regions[i];
        df__bfc_put(&w, "Region %d at %p: %s\n", i, (void *)r->base,
                    df__bfc_human(r->size, t1, sizeof t1));
        for (uint32_t h = r->slots[0].h; h != DF__BFC_NIL && !w.full; h = a->chunks[h].next) {
            const df__bfc_chunk *c = &a->chunks[h];
            uint32_t word = DF__BFC_LOAD(r->slots[(c->ptr - r->base) >> DF__BFC_MIN_BITS].word);
            if (DF__BFC_W_STATE(word) == DF__BFC_W_USED)
                df__bfc_put(&w, "  InUse  at %p of size %zu, requested %zu\n", (void *)c->ptr,
                            c->size, df__bfc_requested(c, word));
            else
                df__bfc_put(&w, "  %s at %p of size %zu\n",
                            DF__BFC_W_STATE(word) == DF__BFC_W_CACHED ? "Cached" : "Free  ",
                            (void *)c->ptr, c->size);
        }
    }
    df__bfc_lock_release(&a->lock);
    return buf;
}
