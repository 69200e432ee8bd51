/* dataflow.c - implementation of dataflow.h. One hand-edited file, read like a book: primitives
   first, the public surface last. Each section opens with a banner, a search marker (>>name) and
   its invariants, and keeps its own df__module_ prefix.

   Table of contents (search for the marker)
     1. CONFIG AND PLATFORM ......................................... >>config
     2. UTILITIES AND CONTAINERS ..................................... >>util
     3. STATUS ....................................................... >>status
     4. DTYPES ....................................................... >>dtype
     5. BFC ALLOCATOR ................................................ >>bfc
     6. TENSORS ...................................................... >>tensor
     7. DEVICES ...................................................... >>device
     8. OP REGISTRY .................................................. >>registry
     9. GRAPH CONSTRUCTION ........................................... >>graph
    10. SHAPE INFERENCE .............................................. >>shape
    11. CONTROL-FLOW CONSTRUCTION .................................... >>cflow
    12. CPU KERNELS .................................................. >>kernels
    13. AUTODIFF ..................................................... >>autodiff
    14. STATIC FRAME ANALYSIS ........................................ >>frames
    15. THREAD POOL .................................................. >>pool
    16. EXECUTOR ..................................................... >>executor
    17. PLACER AND PARTITIONER ....................................... >>partition
    18. SESSION ...................................................... >>session
    19. SERIALIZATION AND PICTURES ................................... >>serial
    20. OP TABLE AND PUBLIC WRAPPERS ................................. >>api
*/

/* ==========================================================================================
   1. CONFIG AND PLATFORM                                                             >>config
   Everything configurable by macro lives here. DF_MALLOC/DF_REALLOC/DF_FREE are all or none.
   Atomics use the GCC/Clang __atomic builtins; threads are POSIX threads unless DF_NO_THREADS.
   ========================================================================================== */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(DATAFLOW_H)
#define _POSIX_C_SOURCE 200809L
#endif
#define DATAFLOW_C_INCLUDED
#include "dataflow.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef DF_NO_THREADS
#include <pthread.h>
#include <sched.h>
#endif

#if defined(DF_MALLOC) && defined(DF_REALLOC) && defined(DF_FREE)
#elif !defined(DF_MALLOC) && !defined(DF_REALLOC) && !defined(DF_FREE)
#define DF_MALLOC(n) malloc(n)
#define DF_REALLOC(p, n) realloc((p), (n))
#define DF_FREE(p) free(p)
#else
#error "define all of DF_MALLOC, DF_REALLOC and DF_FREE, or none"
#endif
#ifndef DF_ASSERT
#include <assert.h>
#define DF_ASSERT(x) assert(x)
#endif

#define DF__ATOMIC_INC(p) __atomic_add_fetch((p), 1, __ATOMIC_RELAXED)
#define DF__ATOMIC_DEC(p) __atomic_sub_fetch((p), 1, __ATOMIC_ACQ_REL)
#define DF__UNUSED(x) ((void)(x))
#if defined(__GNUC__) || defined(__clang__)
#define DF__HOT_INLINE static inline __attribute__((always_inline))
#else
#define DF__HOT_INLINE static inline
#endif
#if defined(__GNUC__) || defined(__clang__)
#define DF__LIKELY(x) __builtin_expect(!!(x), 1)
#define DF__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define DF__LIKELY(x) (x)
#define DF__UNLIKELY(x) (x)
#endif
#define DF__MIN(a, b) ((a) < (b) ? (a) : (b))
#define DF__MAX(a, b) ((a) > (b) ? (a) : (b))

/* A spinlock that yields after a short spin: critical sections here are tens of nanoseconds,
   and on a machine with few cores a sleeping lock's wake-up costs microseconds. It tests before
   it swaps (no cache-line ping-pong while waiting) and yields so a preempted holder can run. */
typedef struct df__spin { int locked; } df__spin;
static void df__spin_lock_slow(df__spin *s) {
    for (;;) {
        for (int i = 0; i < 100; i++) {
            if (!__atomic_load_n(&s->locked, __ATOMIC_RELAXED) &&
                !__atomic_exchange_n(&s->locked, 1, __ATOMIC_ACQUIRE)) return;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#elif defined(__aarch64__)
            __asm__ __volatile__("yield");
#endif
        }
#ifndef DF_NO_THREADS
        sched_yield();
#endif
    }
}
static inline void df__spin_lock(df__spin *s) {
    if (__atomic_exchange_n(&s->locked, 1, __ATOMIC_ACQUIRE)) df__spin_lock_slow(s);
}
static void df__spin_unlock(df__spin *s) { __atomic_store_n(&s->locked, 0, __ATOMIC_RELEASE); }

static int df__num_cores(void) {
#ifndef DF_NO_THREADS
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)DF__MIN(n, 256) : 1;
#else
    return 1;
#endif
}

/* ==========================================================================================
   2. UTILITIES AND CONTAINERS                                                          >>util
   Growable arrays (df__grow), string duplication, FNV-1a hashing and an open-addressing map
   from strings to ints. Allocation failures are reported to the caller, never fatal.
   ========================================================================================== */
/* Makes room for `need` elements in *p (capacity *cap). Returns 0 on OOM, leaving *p intact. */
static int df__grow(void *pp, int *cap, int need, size_t elem) {
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
static void df__copy(char *dst, size_t n, const char *src) {
    if (!n) return;
    size_t len = src ? strlen(src) : 0;
    if (len >= n) len = n - 1;
    if (len) memcpy(dst, src, len);
    dst[len] = 0;
}

static char *df__strdup(const char *s) {
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
static uint64_t df__hash_str(const char *s) { return df__hash_bytes(s, strlen(s), 14695981039346656037ull); }
static uint64_t df__hash_mix(uint64_t a, uint64_t b) {
    uint64_t h = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
    return h;
}

/* String -> int map; keys are owned copies. Open addressing, power-of-two capacity. */
typedef struct df__strmap { char **keys; int *vals; int cap, count; } df__strmap;
static void df__strmap_free(df__strmap *m) {
    for (int i = 0; i < m->cap; i++) DF_FREE(m->keys[i]);
    DF_FREE(m->keys); DF_FREE(m->vals);
    memset(m, 0, sizeof *m);
}
static int df__strmap_get(const df__strmap *m, const char *k, int *out) {
    if (!m->cap) return 0;
    for (uint64_t i = df__hash_str(k) & (uint64_t)(m->cap - 1);; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        if (!m->keys[i]) return 0;
        if (!strcmp(m->keys[i], k)) { if (out) *out = m->vals[i]; return 1; }
    }
}
static int df__strmap_put(df__strmap *m, const char *k, int v) {
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
static void df__buf_printf(df__buf *b, const char *fmt, ...) {
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


/* ==========================================================================================
   3. STATUS                                                                          >>status
   df_status carries TensorFlow's codes and a bounded message. Functions that fail write the
   first error and return its code; messages name the node involved: "... {{node name}}".
   ========================================================================================== */
const char *df_code_name(df_code code) {
    static const char *names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
        "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"};
    return (unsigned)code < sizeof names / sizeof *names ? names[code] : "UNKNOWN_CODE";
}

df_code df_status_set(df_status *st, df_code code, const char *fmt, ...) {
    if (!st) return code;
    st->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof st->message, fmt, ap);
    va_end(ap);
    return code;
}

void df_status_clear(df_status *st) {
    if (!st) return;
    st->code = DF_OK;
    st->message[0] = 0;
}


/* ==========================================================================================
   4. DTYPES                                                                           >>dtype
   TensorFlow's DataType numbers. float16 and bfloat16 convert with round-to-nearest-even;
   the truncating bfloat16 conversion is the one TensorFlow uses to compress transfers.
   ========================================================================================== */
size_t df_dtype_size(df_dtype t) {
    switch (t) {
    case DF_FLOAT: case DF_INT32: case DF_UINT32: return 4;
    case DF_DOUBLE: case DF_INT64: case DF_UINT64: case DF_COMPLEX64: case DF_RESOURCE: return 8;
    case DF_UINT8: case DF_INT8: case DF_BOOL: return 1;
    case DF_INT16: case DF_UINT16: case DF_BFLOAT16: case DF_HALF: return 2;
    case DF_COMPLEX128: return 16;
    default: return 0;
    }
}

const char *df_dtype_name(df_dtype t) {
    switch (t) {
    case DF_FLOAT: return "float"; case DF_DOUBLE: return "double"; case DF_INT32: return "int32";
    case DF_UINT8: return "uint8"; case DF_INT16: return "int16"; case DF_INT8: return "int8";
    case DF_STRING: return "string"; case DF_COMPLEX64: return "complex64";
    case DF_INT64: return "int64"; case DF_BOOL: return "bool"; case DF_BFLOAT16: return "bfloat16";
    case DF_UINT16: return "uint16"; case DF_COMPLEX128: return "complex128";
    case DF_HALF: return "half"; case DF_UINT32: return "uint32"; case DF_UINT64: return "uint64";
    case DF_RESOURCE: return "resource";
    default: return "invalid";
    }
}

static df_dtype df__dtype_from_name(const char *s) {
    static const df_dtype all[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_UINT8, DF_INT16, DF_INT8,
        DF_STRING, DF_COMPLEX64, DF_INT64, DF_BOOL, DF_BFLOAT16, DF_UINT16, DF_COMPLEX128,
        DF_HALF, DF_UINT32, DF_UINT64, DF_RESOURCE};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(df_dtype_name(all[i]), s)) return all[i];
    if (!strcmp(s, "float16")) return DF_HALF;
    return (df_dtype)0;
}

/* A dtype a tensor can hold here (strings are not tensors in this runtime yet). Resource
   handles are made only by kernels (StackV2), never by users, feeds or attrs. */
static int df__dtype_valid(df_dtype t) { return df_dtype_size(t) != 0 && t != DF_RESOURCE; }

static uint32_t df__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float df__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t df_float_to_half(float f) {
    uint32_t x = df__f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);        /* rounds to >= 65520: inf */
    if (absx < 0x38800000u) {                                          /* subnormal half or zero */
        if (absx < 0x33000000u) return (uint16_t)sign;                 /* below half the min subnormal */
        /* value = mant * 2^(e-150) and a half subnormal unit is 2^-24: q = mant >> (126 - e) */
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int s = 126 - (int)(absx >> 23);                               /* 14 .. 24 */
        uint32_t q = mant >> s, rem = mant & ((1u << s) - 1), halfway = 1u << (s - 1);
        if (rem > halfway || (rem == halfway && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t e = (absx >> 23) - 112;                                   /* rebias 127 -> 15 */
    uint32_t m = absx & 0x7fffffu;
    uint32_t h = (e << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;              /* carry may bump exponent */
    return (uint16_t)(sign | h);
}

float df_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return df__bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (!m) return df__bits_f32(sign);
        float v = (float)m * (1.0f / 16777216.0f);                     /* m * 2^-24 */
        return sign ? -v : v;
    }
    return df__bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t df_float_to_bfloat16(float f) {
    uint32_t x = df__f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);   /* quiet NaN */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

uint16_t df_float_to_bfloat16_trunc(float f) {
    uint32_t x = df__f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)(x >> 16);
}

float df_bfloat16_to_float(uint16_t b) { return df__bits_f32((uint32_t)b << 16); }

/* ==========================================================================================
   5. BFC ALLOCATOR                                                                      >>bfc
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

/* ---- lock: the shared spinlock of section 1; critical sections are tens of nanoseconds ---- */
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
#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L
    void *p = NULL;
    return posix_memalign(&p, 4096, bytes) == 0 ? p : NULL;
#else
    return aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);   /* C11: a multiple of 4096 */
#endif
}
static void df__bfc_default_sys_free(void *p, size_t bytes, void *user) {
    (void)bytes; (void)user;
    free(p);
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


/* ==========================================================================================
   6. TENSORS                                                                         >>tensor
   A tensor is a header (dtype, shape, refcount) over a 64-byte aligned buffer from a BFC
   allocator. A view (Reshape, Identity) shares the buffer by holding a reference to its base.
   Element counts and byte sizes are checked for int64/size_t overflow before anything is made.
   ========================================================================================== */
struct df_tensor {
    int refs;                    /* atomic */
    df_dtype dtype;
    int rank;
    int64_t dims[DF_MAX_RANK];
    int64_t n;                   /* number of elements */
    size_t nbytes;
    void *data;
    df_tensor *base;             /* a view holds its base alive; data points into base's buffer */
    struct df__allocator *alloc; /* owner of data when base == NULL; NULL for the empty buffer */
    struct df__var *ref;         /* non-NULL: a reference to a variable (VariableV2's output),
                                    read by its consumers when they run, as TF's ref tensors */
};

/* A device's allocator, reference counted: tensors fetched from a session keep their buffers
   (and so the allocator) alive after the session is freed. Small tensors are recycled whole
   (header and one 256-byte chunk) through a short stack: loops make and drop scalars at a high
   rate. Recycled tensors hold no reference; the last release drains them. */
#define DF__RECYCLE_BYTES 256
#define DF__RECYCLE_SLOTS 1024
typedef struct df__allocator {
    df_bfc *bfc;
    int refs;
    void (*on_release)(void *);  /* after the last release (a GPU closes itself) */
    void *gpu;                   /* a GPU's df_cuda when its memory is the GPU's; NULL: host memory */
    void *on_release_arg;
    df__spin recycle_lock;
    int n_recycled;
    df_tensor *recycled[DF__RECYCLE_SLOTS];
} df__allocator;
static void df__allocator_release(df__allocator *a) {
    if (!a || DF__ATOMIC_DEC(&a->refs) != 0) return;
    for (int i = 0; i < a->n_recycled; i++) { df_bfc_free(a->bfc, a->recycled[i]->data); DF_FREE(a->recycled[i]); }
    df_bfc_free_all(a->bfc);
    if (a->on_release) a->on_release(a->on_release_arg);
    DF_FREE(a);
}
static df__allocator *df__allocator_new(const df_bfc_options *o) {
    df__allocator *a = (df__allocator *)DF_MALLOC(sizeof *a);
    if (!a) return NULL;
    memset(a, 0, sizeof *a);
    a->refs = 1;
    if (!(a->bfc = df_bfc_new(o))) { DF_FREE(a); return NULL; }
    return a;
}

/* The buffer of every zero-byte tensor: data is never NULL for a valid tensor. */
static _Alignas(64) unsigned char df__empty_buffer[64];

/* The host allocator behind df_tensor_new (devices have their own). Made once, thread safe. */
static df__allocator *df__host_alloc;
static df__allocator *df__host_allocator(void) {
    df__allocator *a = __atomic_load_n(&df__host_alloc, __ATOMIC_ACQUIRE);
    if (a) return a;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.allow_growth = 1;
    o.garbage_collection = 1;
    df__allocator *fresh = df__allocator_new(&o);
    if (!fresh) return NULL;
    df__allocator *expected = NULL;
    if (!__atomic_compare_exchange_n(&df__host_alloc, &expected, fresh, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        df__allocator_release(fresh);
        return expected;
    }
    return fresh;                /* lives as long as the process */
}

/* Validates a shape; writes the element count. The message names what was wrong. */
static df_code df__shape_check(df_dtype t, int rank, const int64_t *dims, int64_t *n_out,
                               size_t *bytes_out, int internal, df_status *st) {
    if (!df__dtype_valid(t) && !(t == DF_RESOURCE && rank == 0 && internal))
        return df_status_set(st, DF_INVALID_ARGUMENT, "Invalid or unsupported dtype %d", (int)t);
    if (rank < 0 || rank > DF_MAX_RANK)
        return df_status_set(st, DF_INVALID_ARGUMENT, "Rank %d is outside [0, %d]", rank, DF_MAX_RANK);
    if (rank > 0 && !dims)
        return df_status_set(st, DF_INVALID_ARGUMENT, "dims is NULL for rank %d", rank);
    int64_t n = 1;
    int overflow = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return df_status_set(st, DF_INVALID_ARGUMENT, "Dimension %d is negative (%lld)", i,
                                 (long long)dims[i]);
        if (dims[i] && n > INT64_MAX / dims[i]) overflow = 1;
        else n *= dims[i];
    }
    if (overflow && n != 0) {
        for (int i = 0; i < rank; i++) if (!dims[i]) { overflow = 0; n = 0; }
    }
    if (overflow)
        return df_status_set(st, DF_INVALID_ARGUMENT, "Shape has too many elements (int64 overflow)");
    size_t es = df_dtype_size(t);
    if ((uint64_t)n > (uint64_t)(SIZE_MAX / 2) / es)
        return df_status_set(st, DF_INVALID_ARGUMENT, "Tensor byte size overflows size_t");
    *n_out = n;
    *bytes_out = (size_t)n * es;
    return DF_OK;
}

/* A new uninitialised tensor with data from `alloc` (the host allocator if NULL). */
static df_tensor *df__tensor_alloc(df__allocator *alloc, df_dtype t, int rank, const int64_t *dims,
                                   df_status *st) {
    int64_t n;
    size_t bytes;
    if (df__shape_check(t, rank, dims, &n, &bytes, alloc != NULL, st) != DF_OK) return NULL;
    if (!alloc && !(alloc = df__host_allocator())) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
        return NULL;
    }
    if (bytes && bytes <= DF__RECYCLE_BYTES && __atomic_load_n(&alloc->n_recycled, __ATOMIC_RELAXED)) {
        df_tensor *x = NULL;
        df__spin_lock(&alloc->recycle_lock);
        int k = alloc->n_recycled;
        if (k) { x = alloc->recycled[k - 1]; __atomic_store_n(&alloc->n_recycled, k - 1, __ATOMIC_RELAXED); }
        df__spin_unlock(&alloc->recycle_lock);
        if (x) {
            DF__ATOMIC_INC(&alloc->refs);
            x->refs = 1; x->dtype = t; x->rank = rank; x->n = n; x->nbytes = bytes;
            memset(x->dims, 0, sizeof x->dims);
            if (rank) memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
            return x;
        }
    }
    df_tensor *x = (df_tensor *)DF_MALLOC(sizeof *x);
    if (!x) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory for a tensor header"); return NULL; }
    x->refs = 1; x->dtype = t; x->rank = rank; x->n = n; x->nbytes = bytes; x->base = NULL; x->ref = NULL;
    memset(x->dims, 0, sizeof x->dims);
    if (rank) memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
    if (bytes == 0) { x->data = df__empty_buffer; x->alloc = NULL; return x; }
    x->data = df_bfc_alloc(alloc->bfc, bytes);
    x->alloc = alloc;
    if (x->data) DF__ATOMIC_INC(&alloc->refs);
    if (!x->data) {
        char summary[256];
        df_bfc_summary(alloc->bfc, summary, sizeof summary);
        df_status_set(st, DF_RESOURCE_EXHAUSTED,
                      "Out of memory allocating tensor of type %s with %lld elements (%zu bytes). %s",
                      df_dtype_name(t), (long long)n, bytes, summary);
        DF_FREE(x);
        return NULL;
    }
    return x;
}

/* A view of src with another shape of the same element count; shares src's buffer. */
static df_tensor *df__tensor_view(df_tensor *src, int rank, const int64_t *dims, df_status *st) {
    df_tensor *x = (df_tensor *)DF_MALLOC(sizeof *x);
    if (!x) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory for a tensor header"); return NULL; }
    *x = *src;
    x->refs = 1;
    x->rank = rank;
    for (int i = 0; i < DF_MAX_RANK; i++) x->dims[i] = i < rank ? dims[i] : 0;
    x->base = src->base ? src->base : src;
    df_tensor_retain(x->base);
    x->alloc = NULL;
    return x;
}

df_tensor *df_tensor_new(df_dtype t, int rank, const int64_t *dims, df_status *st) {
    df_tensor *x = df__tensor_alloc(NULL, t, rank, dims, st);
    if (x) { memset(x->data, 0, x->nbytes); df_status_clear(st); }
    return x;
}

df_tensor *df_tensor_from_data(df_dtype t, int rank, const int64_t *dims, const void *data,
                               size_t nbytes, df_status *st) {
    int64_t n;
    size_t bytes;
    if (df__shape_check(t, rank, dims, &n, &bytes, 0, st) != DF_OK) return NULL;
    if (nbytes != bytes) {
        df_status_set(st, DF_INVALID_ARGUMENT, "nbytes is %zu but a %s tensor of %lld elements "
                      "needs %zu bytes", nbytes, df_dtype_name(t), (long long)n, bytes);
        return NULL;
    }
    if (bytes && !data) { df_status_set(st, DF_INVALID_ARGUMENT, "data is NULL"); return NULL; }
    df_tensor *x = df__tensor_alloc(NULL, t, rank, dims, st);
    if (x) { if (bytes) memcpy(x->data, data, bytes); df_status_clear(st); }
    return x;
}

static df_tensor *df__scalar(df_dtype t, const void *v) {
    df_tensor *x = df__tensor_alloc(NULL, t, 0, NULL, NULL);
    if (x) memcpy(x->data, v, df_dtype_size(t));
    return x;
}
df_tensor *df_tensor_scalar_f32(float v) { return df__scalar(DF_FLOAT, &v); }
df_tensor *df_tensor_scalar_f64(double v) { return df__scalar(DF_DOUBLE, &v); }
df_tensor *df_tensor_scalar_i32(int32_t v) { return df__scalar(DF_INT32, &v); }
df_tensor *df_tensor_scalar_i64(int64_t v) { return df__scalar(DF_INT64, &v); }
df_tensor *df_tensor_scalar_bool(int v) { unsigned char b = v != 0; return df__scalar(DF_BOOL, &b); }

df_tensor *df_tensor_retain(df_tensor *t) {
    if (t) DF__ATOMIC_INC(&t->refs);
    return t;
}

#ifdef DATAFLOW_CUDA
/* While a thread captures a CUDA graph, the device memory it frees stays reserved for the graph
   (whose replays write the same addresses): the tensors are kept here, released with the graph. */
typedef struct df__hold { df__allocator *alloc; df_tensor **v; int n, cap, failed; } df__hold;
#ifndef DF_NO_THREADS
static _Thread_local df__hold *df__tls_hold;
#else
static df__hold *df__tls_hold;
#endif
static int df__hold_keep(df_tensor *t) {
    df__hold *h = df__tls_hold;
    if (!df__grow(&h->v, &h->cap, h->n + 1, sizeof(df_tensor *))) { h->failed = 1; return 0; }
    t->refs = 1;
    h->v[h->n++] = t;
    return 1;
}
#endif
void df_tensor_release(df_tensor *t) {
    if (!t || DF__ATOMIC_DEC(&t->refs) != 0) return;
    if (t->base) df_tensor_release(t->base);
    else if (t->alloc) {
        df__allocator *a = t->alloc;
#ifdef DATAFLOW_CUDA
        if (DF__UNLIKELY(df__tls_hold != NULL) && df__tls_hold->alloc == a && df__hold_keep(t)) return;
#endif
        int kept = 0;
        if (t->nbytes <= DF__RECYCLE_BYTES && __atomic_load_n(&a->n_recycled, __ATOMIC_RELAXED) < DF__RECYCLE_SLOTS) {
            df__spin_lock(&a->recycle_lock);
            int k = a->n_recycled;
            if (k < DF__RECYCLE_SLOTS) { a->recycled[k] = t; __atomic_store_n(&a->n_recycled, k + 1, __ATOMIC_RELAXED); kept = 1; }
            df__spin_unlock(&a->recycle_lock);
        }
        if (!kept) df_bfc_free(a->bfc, t->data);
        df__allocator_release(a);
        if (kept) return;
    }
    DF_FREE(t);
}

df_dtype df_tensor_dtype(const df_tensor *t) { return t ? t->dtype : (df_dtype)0; }
int df_tensor_rank(const df_tensor *t) { return t ? t->rank : 0; }
int64_t df_tensor_dim(const df_tensor *t, int i) { return t && i >= 0 && i < t->rank ? t->dims[i] : -1; }
int64_t df_tensor_num_elements(const df_tensor *t) { return t ? t->n : 0; }
size_t df_tensor_nbytes(const df_tensor *t) { return t ? t->nbytes : 0; }
void *df_tensor_data(const df_tensor *t) { return t ? t->data : NULL; }

static double df__get_f64(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    case DF_INT16: return ((const int16_t *)p)[i];
    case DF_UINT16: return ((const uint16_t *)p)[i];
    case DF_UINT32: return ((const uint32_t *)p)[i];
    case DF_UINT64: return (double)((const uint64_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i] != 0;
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    case DF_COMPLEX64: return ((const float *)p)[2 * i];
    case DF_COMPLEX128: return ((const double *)p)[2 * i];
    default: return 0;
    }
}

static void df__shape_str(int rank, const int64_t *dims, char *buf, size_t n) {
    size_t len = 0;
    if (rank < 0) { snprintf(buf, n, "<unknown>"); return; }
    len += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

char *df_tensor_describe(const df_tensor *t, char *buf, size_t n) {
    if (!buf || !n) return buf;
    if (!t) { snprintf(buf, n, "(null)"); return buf; }
    char shp[128];
    df__shape_str(t->rank, t->dims, shp, sizeof shp);
    size_t len = (size_t)snprintf(buf, n, "%s %s {", df_dtype_name(t->dtype), shp);
    for (int64_t i = 0; i < t->n && i < 8 && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ", %g" : "%g", df__get_f64(t->dtype, t->data, i));
    if (len < n) snprintf(buf + len, n - len, t->n > 8 ? ", ...}" : "}");
    return buf;
}

/* ==========================================================================================
   7. DEVICES                                                                         >>device
   A device owns an allocator, names itself the TensorFlow way and implements a small interface
   (allocate, free, copy to and from host memory, run a kernel, synchronise). CPU devices
   implement it here; the GPU (dataflow_cuda.cu) and remote devices implement it later. Several
   CPU devices in one process are real devices: each has its own allocator and incarnation, and
   values cross between them only through Send/Recv.
   ========================================================================================== */
enum { DF__DEV_CPU, DF__DEV_GPU, DF__DEV_TYPES };   /* kernel families by device type */
struct df__device;
struct df__kctx;
typedef struct df__device_ops {
    void *(*allocate)(struct df__device *d, size_t bytes);
    void (*deallocate)(struct df__device *d, void *p);
    df_code (*copy_to_host)(struct df__device *d, void *host_dst, const void *dev_src, size_t bytes);
    df_code (*copy_from_host)(struct df__device *d, void *dev_dst, const void *host_src, size_t bytes);
    void (*run_kernel)(struct df__device *d, void (*kernel)(struct df__kctx *), struct df__kctx *k);
    df_code (*synchronize)(struct df__device *d);
} df__device_ops;

typedef struct df__device {
    char name[96];               /* "/job:localhost/replica:0/task:0/device:CPU:0" */
    char type[8];                /* "CPU", "GPU" */
    int kernel_type;             /* DF__DEV_CPU or DF__DEV_GPU: which kernels run here */
    int index;                   /* the device's number within its type */
    int host_memory;             /* its memory is the host's (no copies to reach the host) */
    uint64_t incarnation;        /* random per device instance: keys tell restarted devices apart */
    df__allocator *alloc;
    const df__device_ops *ops;
    void *gpu;                   /* a GPU device's df_cuda (dataflow_cuda.cu) */
    df__spin cache_lock;         /* constants copied to this device, by host value */
    struct { df_tensor *host, *dev; } *cache;
    int n_cache, cap_cache;
} df__device;

/* A parsed device specification; -1 / "" means unspecified. Accepts TensorFlow's full names and
   short forms: "/job:localhost/replica:0/task:0/device:CPU:0", "/device:GPU:1", "/cpu:0",
   "/gpu:1", with any leading components left out and "*" for any index. */
typedef struct df__devspec { char job[32], type[8]; int replica, task, index; } df__devspec;

static int df__parse_uint(const char **p, int *out) {
    if (**p == '*') { (*p)++; *out = -1; return 1; }
    if (**p < '0' || **p > '9') return 0;
    long v = 0;
    while (**p >= '0' && **p <= '9') { v = v * 10 + (**p - '0'); if (v > 1 << 20) return 0; (*p)++; }
    *out = (int)v;
    return 1;
}
static int df__parse_device(const char *s, df__devspec *d) {
    memset(d, 0, sizeof *d);
    d->replica = d->task = d->index = -1;
    if (!s || !*s) return 1;
    if (*s != '/') return 0;
    const char *p = s;
    while (*p == '/') {
        p++;
        if (!strncmp(p, "job:", 4)) {
            p += 4;
            size_t n = 0;
            while (p[n] && p[n] != '/') n++;
            if (!n || n >= sizeof d->job) return 0;
            memcpy(d->job, p, n); d->job[n] = 0; p += n;
        } else if (!strncmp(p, "replica:", 8)) { p += 8; if (!df__parse_uint(&p, &d->replica)) return 0; }
        else if (!strncmp(p, "task:", 5)) { p += 5; if (!df__parse_uint(&p, &d->task)) return 0; }
        else {
            if (!strncmp(p, "device:", 7)) p += 7;
            size_t n = 0;
            while (p[n] && p[n] != ':' && p[n] != '/') n++;
            if (!n || n >= sizeof d->type || p[n] != ':') return 0;
            for (size_t i = 0; i < n; i++) d->type[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 32 : p[i]);
            d->type[n] = 0;
            p += n + 1;
            if (!df__parse_uint(&p, &d->index)) return 0;
        }
        if (*p && *p != '/') return 0;
    }
    return *p == 0;
}

/* A full spec matches a device when every component it names agrees. */
static int df__devspec_matches(const df__devspec *sp, const df__device *d) {
    df__devspec dd;
    if (!df__parse_device(d->name, &dd)) return 0;
    return (!sp->job[0] || !strcmp(sp->job, dd.job)) && (sp->replica < 0 || sp->replica == dd.replica) &&
           (sp->task < 0 || sp->task == dd.task) && (!sp->type[0] || !strcmp(sp->type, dd.type)) &&
           (sp->index < 0 || sp->index == dd.index);
}
/* Two specs can name one device: no component set in both disagrees. Merges b into a. */
static int df__devspec_merge(df__devspec *a, const df__devspec *b) {
    if (a->job[0] && b->job[0] && strcmp(a->job, b->job)) return 0;
    if (a->type[0] && b->type[0] && strcmp(a->type, b->type)) return 0;
    if (a->replica >= 0 && b->replica >= 0 && a->replica != b->replica) return 0;
    if (a->task >= 0 && b->task >= 0 && a->task != b->task) return 0;
    if (a->index >= 0 && b->index >= 0 && a->index != b->index) return 0;
    if (!a->job[0]) memcpy(a->job, b->job, sizeof a->job);
    if (!a->type[0]) memcpy(a->type, b->type, sizeof a->type);
    if (a->replica < 0) a->replica = b->replica;
    if (a->task < 0) a->task = b->task;
    if (a->index < 0) a->index = b->index;
    return 1;
}
static void df__devspec_str(const df__devspec *sp, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    if (sp->job[0]) len += (size_t)snprintf(buf + len, n - len, "/job:%s", sp->job);
    if (len < n && sp->replica >= 0) len += (size_t)snprintf(buf + len, n - len, "/replica:%d", sp->replica);
    if (len < n && sp->task >= 0) len += (size_t)snprintf(buf + len, n - len, "/task:%d", sp->task);
    if (len < n && sp->type[0]) {
        if (sp->index >= 0) snprintf(buf + len, n - len, "/device:%s:%d", sp->type, sp->index);
        else snprintf(buf + len, n - len, "/device:%s:*", sp->type);
    }
}

/* ---- the CPU device: host memory from its own BFC allocator; kernels run inline ---- */
static void *df__cpu_allocate(df__device *d, size_t bytes) { return df_bfc_alloc(d->alloc->bfc, bytes); }
static void df__cpu_deallocate(df__device *d, void *p) { df_bfc_free(d->alloc->bfc, p); }
static df_code df__cpu_copy(df__device *d, void *dst, const void *src, size_t bytes) {
    DF__UNUSED(d);
    if (bytes) memcpy(dst, src, bytes);
    return DF_OK;
}
static void df__cpu_run_kernel(df__device *d, void (*kernel)(struct df__kctx *), struct df__kctx *k) {
    DF__UNUSED(d);
    kernel(k);
}
static df_code df__cpu_synchronize(df__device *d) { DF__UNUSED(d); return DF_OK; }
static const df__device_ops df__cpu_ops = {
    df__cpu_allocate, df__cpu_deallocate, df__cpu_copy, df__cpu_copy, df__cpu_run_kernel, df__cpu_synchronize
};

static uint64_t df__incarnation_counter;
static df__device *df__device_new_cpu(int index, size_t memory_limit, df_status *st) {
    df__device *d = (df__device *)DF_MALLOC(sizeof *d);
    if (!d) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a device"); return NULL; }
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:CPU:%d", index);
    memcpy(d->type, "CPU", 4);
    d->kernel_type = DF__DEV_CPU;
    d->index = index;
    d->host_memory = 1;
    d->ops = &df__cpu_ops;
    /* nonzero and different for every device instance of this process (a restarted worker's
       devices get new ones, which is what incarnations are for) */
    uint64_t c = __atomic_add_fetch(&df__incarnation_counter, 1, __ATOMIC_RELAXED);
    d->incarnation = df__hash_mix(df__hash_mix((uint64_t)time(NULL), (uint64_t)(uintptr_t)d), c) | 1;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = memory_limit;
    o.allow_growth = 1;
    o.garbage_collection = 1;
    if (!(d->alloc = df__allocator_new(&o))) {
        DF_FREE(d);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a device allocator");
        return NULL;
    }
    return d;
}

#ifdef DATAFLOW_CUDA
/* ---- the GPU device: memory from a BFC allocator over cudaMalloc'd regions, kernels queued on
   the GPU's compute stream by the kernels themselves (they call dataflow_cuda.cu's launchers), so
   running one is calling it. The df_cuda closes when the allocator's last tensor is gone. ---- */
static void *df__gpu_allocate(df__device *d, size_t bytes) { return df_bfc_alloc(d->alloc->bfc, bytes); }
static void df__gpu_deallocate(df__device *d, void *p) { df_bfc_free(d->alloc->bfc, p); }
static df_code df__gpu_to_host(df__device *d, void *dst, const void *src, size_t bytes) {
    df_status st;
    return bytes ? df_cuda_memcpy_d2h((df_cuda *)d->gpu, dst, src, bytes, &st) : DF_OK;
}
static df_code df__gpu_from_host(df__device *d, void *dst, const void *src, size_t bytes) {
    df_status st;
    return bytes ? df_cuda_memcpy_h2d((df_cuda *)d->gpu, dst, src, bytes, &st) : DF_OK;
}
static df_code df__gpu_synchronize(df__device *d) { df_status st; return df_cuda_synchronize((df_cuda *)d->gpu, &st); }
static const df__device_ops df__gpu_ops = {
    df__gpu_allocate, df__gpu_deallocate, df__gpu_to_host, df__gpu_from_host, df__cpu_run_kernel, df__gpu_synchronize
};
static void df__gpu_close(void *g) { df_cuda_close((df_cuda *)g); }
static df__device *df__device_new_gpu(int index, size_t memory_limit, df_status *st) {
    df__device *d = (df__device *)DF_MALLOC(sizeof *d);
    if (!d) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a device"); return NULL; }
    memset(d, 0, sizeof *d);
    df_cuda *g = df_cuda_open(index, 0, st);
    if (!g) { DF_FREE(d); return NULL; }
    snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:GPU:%d", index);
    memcpy(d->type, "GPU", 4);
    d->kernel_type = DF__DEV_GPU;
    d->index = index;
    d->ops = &df__gpu_ops;
    d->gpu = g;
    uint64_t c = __atomic_add_fetch(&df__incarnation_counter, 1, __ATOMIC_RELAXED);
    d->incarnation = df__hash_mix(df__hash_mix((uint64_t)time(NULL), (uint64_t)(uintptr_t)d), c) | 1;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = memory_limit;
    o.allow_growth = 1;
    o.garbage_collection = 1;
    o.sys_alloc = df_cuda_region_alloc;
    o.sys_free = df_cuda_region_free;
    o.user = g;
    if (!(d->alloc = df__allocator_new(&o))) {
        df_cuda_close(g);
        DF_FREE(d);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a GPU allocator");
        return NULL;
    }
    d->alloc->on_release = df__gpu_close;
    d->alloc->gpu = g;
    d->alloc->on_release_arg = g;
    return d;
}
#endif

/* A copy of v moved between host memory and device d's (a new reference; NULL with st set). */
static df_tensor *df__move(df__device *d, const df_tensor *v, int to_device, df_status *st) {
    df__allocator *a = to_device ? d->alloc : df__host_allocator();
    df_tensor *x = a ? df__tensor_alloc(a, v->dtype, v->rank, v->dims, st) : NULL;
    if (!a) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
    if (!x) return NULL;
    df_code code = !x->nbytes ? DF_OK : to_device ? d->ops->copy_from_host(d, x->data, v->data, v->nbytes)
                 : d->ops->copy_to_host(d, x->data, v->data, v->nbytes);
    if (code) {
        df_status_set(st, code, "Copying %zu bytes %s %s failed", v->nbytes, to_device ? "to" : "from", d->name);
        df_tensor_release(x);
        return NULL;
    }
    return x;
}
static df_tensor *df__to_device(df__device *d, const df_tensor *v, df_status *st) { return df__move(d, v, 1, st); }
static df_tensor *df__to_host(df__device *d, const df_tensor *v, df_status *st) { return df__move(d, v, 0, st); }
#ifdef DATAFLOW_CUDA
/* The GPU whose memory holds t's data; NULL: host memory. */
static df_cuda *df__tensor_gpu(const df_tensor *t) {
    const df_tensor *b = t->base ? t->base : t;
    return b->alloc ? (df_cuda *)b->alloc->gpu : NULL;
}
#endif

/* dst's bytes = src's (same size), in whichever memory they live: a GPU copy is queued. */
static df_code df__copy_data(df_tensor *dst, const df_tensor *src, df_status *st) {
    if (!src->nbytes) return DF_OK;
#ifdef DATAFLOW_CUDA
    if (df__tensor_gpu(src)) return df_cuda_memcpy_d2d(df__tensor_gpu(src), dst->data, src->data, src->nbytes, st);
#else
    DF__UNUSED(st);
#endif
    memcpy(dst->data, src->data, src->nbytes);
    return DF_OK;
}
/* All of t's bytes set to zero, in its memory. */
static df_code df__zero_data(df_tensor *t, df_status *st) {
    if (!t->nbytes) return DF_OK;
#ifdef DATAFLOW_CUDA
    if (df__tensor_gpu(t)) {
        unsigned char zero = 0;
        return df_cuda_fill(df__tensor_gpu(t), t->data, (int64_t)t->nbytes, 1, &zero, st);
    }
#else
    DF__UNUSED(st);
#endif
    memset(t->data, 0, t->nbytes);
    return DF_OK;
}
/* dst = a + b (code DF__B_ADD) or a - b over n elements of a float type, in their memory. */
typedef void (*df__row_fn)(void *o, const void *a, const void *b, int64_t n, int sa, int sb);
static df__row_fn df__binary_row(int code, df_dtype t);
static df_code df__add_data(int code, df_tensor *dst, const df_tensor *a, const df_tensor *b, df_status *st) {
#ifdef DATAFLOW_CUDA
    if (df__tensor_gpu(a)) {
        int64_t one = 1;
        return a->n ? df_cuda_binary(df__tensor_gpu(a), code, a->dtype, 1, &a->n, a->data, &one, b->data, &one, dst->data, st) : DF_OK;
    }
#else
    DF__UNUSED(st);
#endif
    df__binary_row(code, a->dtype)(dst->data, a->data, b->data, a->n, 1, 1);
    return DF_OK;
}

static void df__device_free(df__device *d) {
    if (!d) return;
    for (int i = 0; i < d->n_cache; i++) { df_tensor_release(d->cache[i].host); df_tensor_release(d->cache[i].dev); }
    DF_FREE(d->cache);
    df__allocator_release(d->alloc);
    DF_FREE(d);
}

/* ==========================================================================================
   8. OP REGISTRY                                                                   >>registry
   An op definition: typed input/output arguments (fixed dtype, attr-typed, lists of N or of a
   type list), attrs with kinds, allowed types and defaults, a shape function, a CPU kernel,
   flags (stateful, control flow kinds, ref outputs), a gradient slot and an expected cost.
   Definitions are written as short spec strings (see df__op_table) parsed once.
   ========================================================================================== */
typedef enum df__attr_kind {
    DF__A_NONE, DF__A_INT, DF__A_FLOAT, DF__A_BOOL, DF__A_TYPE, DF__A_STRING, DF__A_SHAPE,
    DF__A_TENSOR, DF__A_INT_LIST, DF__A_TYPE_LIST
} df__attr_kind;

typedef struct df__attr {
    const char *name;            /* owned copy */
    df__attr_kind kind;
    union {
        int64_t i;
        float f;
        int b;
        df_dtype type;
        char *s;
        struct { int rank; int64_t dims[DF_MAX_RANK]; } shape;
        df_tensor *tensor;
        struct { int n; int64_t *v; } ints;
        struct { int n; df_dtype *v; } types;
    } u;
} df__attr;

typedef struct df__argdef {
    char name[32];
    df_dtype fixed;              /* nonzero: the argument always has this dtype */
    char type_attr[24];          /* a `type` attr (T) or a `list(type)` attr (type list) */
    char number_attr[24];        /* "N" when the argument is a list of N values of one type */
    int is_list;                 /* N*T or a type list */
    int is_ref;                  /* a ref to a variable (VariableV2's output, Assign's input) */
} df__argdef;

typedef struct df__attrdef {
    char name[32];
    df__attr_kind kind;
    uint32_t allowed;            /* bit per dtype number for `type` attrs; 0 means any */
    int has_default;
    df__attr def;                /* the default (name points at this definition's name) */
    int64_t min;                 /* for ints: minimum value; INT64_MIN if none */
} df__attrdef;

struct df__kctx;
struct df__shape_ctx;
typedef void (*df__kernel_fn)(struct df__kctx *c);
typedef df_code (*df__shape_fn)(struct df__shape_ctx *c);

enum {                           /* op flags */
    DF__OP_STATEFUL = 1 << 0,
    DF__OP_EXPENSIVE = 1 << 1,   /* may be worth a thread when its inputs are big */
    DF__OP_SWITCH = 1 << 2, DF__OP_MERGE = 1 << 3, DF__OP_ENTER = 1 << 4, DF__OP_EXIT = 1 << 5,
    DF__OP_NEXT_ITERATION = 1 << 6, DF__OP_LOOP_COND = 1 << 7, DF__OP_CONTROL_TRIGGER = 1 << 8,
    DF__OP_ALLOWS_UNINIT = 1 << 9, /* may read an uninitialised variable (Assign) */
    DF__OP_NO_GRADIENT = 1 << 10,
    DF__OP_LOOP_COUNT = 1 << 11,   /* LoopCount: an Exit the executor fires once its frame is done */
    DF__OP_TRANSFER = 1 << 12,     /* _Send/_Recv: run even when dead, to carry the dead bit across */
    DF__OP_RECV = 1 << 13          /* _Recv: asynchronous; its value arrives when the Send runs */
};

/* A kernel for one device type. Host-memory arguments stay in host memory on a device whose
   memory is not the host's (TF keeps int32 shapes, predicates and LoopCond there on GPUs). */
typedef struct df__kernel_def {
    df__kernel_fn fn;            /* NULL: no kernel for this device type */
    uint32_t host_inputs, host_outputs;   /* bit i: argument i lives in host memory */
    uint32_t types;              /* GPU: bit t: device-memory arguments may have dtype t (0: any) */
} df__kernel_def;

typedef struct df__opdef {
    const char *name;
    int n_in, n_out, n_attrs;
    df__argdef in[12], out[4];
    df__attrdef attrs[12];
    df__shape_fn shape_fn;
    df__kernel_def kernels[DF__DEV_TYPES];
    unsigned flags;
    int code;                    /* sub-operation selector shared by a kernel family */
    void *grad;                  /* gradient function (the autodiff issue fills these) */
    float cost;                  /* expected cycles per element (0: cost does not grow with size) */
} df__opdef;

typedef struct df__opspec {      /* the textual form, in df__op_table */
    const char *name, *inputs, *outputs, *attrs;
    df__shape_fn shape_fn;
    df__kernel_fn kernel;
    unsigned flags;
    int code;
} df__opspec;

static struct {
    df__opdef *ops;
    int n_ops;
    df__strmap index;
    int initialised;             /* 0 no, 1 yes, -1 failed */
    char error[256];
} df__registry;

static uint32_t df__type_bit(df_dtype t) { return (unsigned)t < 32 ? 1u << (unsigned)t : 0; }

static void df__trim(char *s) {
    size_t n = strlen(s), i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    memmove(s, s + i, n - i + 1);
    n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
}

/* Splits a comma-separated list at top level (commas inside {} or [] do not split). */
static int df__split(const char *spec, char items[][96], int max) {
    int n = 0, depth = 0;
    size_t len = 0;
    if (!spec || !*spec) return 0;
    for (const char *p = spec;; p++) {
        if (*p == '{' || *p == '[') depth++;
        if (*p == '}' || *p == ']') depth--;
        if ((*p == ',' && depth == 0) || !*p) {
            if (n < max) { items[n][len < 95 ? len : 95] = 0; df__trim(items[n]); n++; }
            len = 0;
            if (!*p) break;
            continue;
        }
        if (n < max && len < 95) items[n][len] = *p;
        len++;
    }
    return n;
}

/* "name:T", "name:float", "name:N*T", "name:Ref(T)", "name:Tlist" (Tlist a list(type) attr). */
static int df__parse_arg(const char *s, df__argdef *a, const df__opdef *op) {
    memset(a, 0, sizeof *a);
    const char *colon = strchr(s, ':');
    if (!colon || colon - s >= (int)sizeof a->name) return 0;
    memcpy(a->name, s, (size_t)(colon - s));
    char ty[64];
    df__copy(ty, sizeof ty, colon + 1);
    if (!strncmp(ty, "Ref(", 4)) {
        a->is_ref = 1;
        memmove(ty, ty + 4, strlen(ty + 4) + 1);
        char *close = strchr(ty, ')');
        if (close) *close = 0;
    }
    char *star = strchr(ty, '*');
    if (star) {
        *star = 0;
        df__copy(a->number_attr, sizeof a->number_attr, ty);
        a->is_list = 1;
        memmove(ty, star + 1, strlen(star + 1) + 1);
    }
    df_dtype fixed = df__dtype_from_name(ty);
    if (fixed) { a->fixed = fixed; return 1; }
    df__copy(a->type_attr, sizeof a->type_attr, ty);
    for (int i = 0; i < op->n_attrs; i++)
        if (!strcmp(op->attrs[i].name, ty)) {
            if (op->attrs[i].kind == DF__A_TYPE_LIST) a->is_list = 1;
            return op->attrs[i].kind == DF__A_TYPE || op->attrs[i].kind == DF__A_TYPE_LIST;
        }
    return 0;
}

/* "T:type", "T:type{float,double}=float", "N:int>=1", "x:bool=false", "s:string=''",
   "shape:shape=?", "value:tensor", "l:list(int)=[]", "Tl:list(type)", "f:float=0.5". */
static int df__parse_attr(const char *s, df__attrdef *a) {
    memset(a, 0, sizeof *a);
    a->min = INT64_MIN;
    const char *colon = strchr(s, ':');
    if (!colon || colon - s >= (int)sizeof a->name) return 0;
    memcpy(a->name, s, (size_t)(colon - s));
    a->def.name = a->name;
    char rest[96];
    df__copy(rest, sizeof rest, colon + 1);
    char *eq = strchr(rest, '=');
    char *ge = strstr(rest, ">=");
    if (ge && (!eq || ge < eq)) { a->min = strtoll(ge + 2, NULL, 10); *ge = 0; eq = NULL;
        char *eq2 = strchr(ge + 2, '='); if (eq2) eq = eq2; }
    char defval[64] = "";
    if (eq) { a->has_default = 1; df__copy(defval, sizeof defval, eq + 1); *eq = 0; }
    char *brace = strchr(rest, '{');
    if (brace) {
        char *close = strchr(brace, '}');
        if (close) *close = 0;
        char types[16][96];
        int nt = df__split(brace + 1, types, 16);
        for (int i = 0; i < nt; i++) a->allowed |= df__type_bit(df__dtype_from_name(types[i]));
        *brace = 0;
    }
    df__trim(rest);
    if (!strcmp(rest, "int")) { a->kind = DF__A_INT; a->def.u.i = strtoll(defval, NULL, 10); }
    else if (!strcmp(rest, "float")) { a->kind = DF__A_FLOAT; a->def.u.f = strtof(defval, NULL); }
    else if (!strcmp(rest, "bool")) { a->kind = DF__A_BOOL; a->def.u.b = !strcmp(defval, "true"); }
    else if (!strcmp(rest, "type")) {
        a->kind = DF__A_TYPE;
        if (a->has_default) a->def.u.type = df__dtype_from_name(defval);
    } else if (!strcmp(rest, "string")) {
        a->kind = DF__A_STRING;
        a->def.u.s = a->has_default ? df__strdup(defval) : NULL;   /* registry lifetime */
    }
    else if (!strcmp(rest, "shape")) { a->kind = DF__A_SHAPE; a->def.u.shape.rank = -1; }
    else if (!strcmp(rest, "tensor")) a->kind = DF__A_TENSOR;
    else if (!strcmp(rest, "list(int)")) a->kind = DF__A_INT_LIST;
    else if (!strcmp(rest, "list(type)")) a->kind = DF__A_TYPE_LIST;
    else return 0;
    a->def.kind = a->kind;
    return 1;
}

static const df__opspec df__op_table[];
static const int df__op_table_size;

#ifndef DF_NO_THREADS
static pthread_once_t df__registry_once = PTHREAD_ONCE_INIT;
#endif

#ifdef DATAFLOW_CUDA
static void df__gpu_register(df__opdef *ops, int n_ops);
#endif
static void df__registry_build(void) {
    df__opdef *ops = (df__opdef *)DF_MALLOC((size_t)df__op_table_size * sizeof *ops);
    if (!ops) { df__registry.initialised = -1; snprintf(df__registry.error, 256, "out of memory"); return; }
    memset(ops, 0, (size_t)df__op_table_size * sizeof *ops);
    for (int k = 0; k < df__op_table_size; k++) {
        const df__opspec *sp = &df__op_table[k];
        df__opdef *op = &ops[k];
        char items[16][96];
        op->name = sp->name; op->shape_fn = sp->shape_fn;
        op->kernels[DF__DEV_CPU].fn = sp->kernel;       /* CPU memory is host memory (GPU kernels: below) */
        /* Expected cost per element: transcendental math costs more than a add. */
        if (sp->flags & DF__OP_EXPENSIVE) {
            static const char *const costly[] = {"Exp", "Log", "Tanh", "Sigmoid", "Pow", "Sqrt", "Rsqrt",
                "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
                "RandomUniform", "RandomStandardNormal", "TruncatedNormal"};
            op->cost = 1.0f;
            for (size_t c = 0; c < sizeof costly / sizeof *costly; c++) if (!strcmp(sp->name, costly[c])) op->cost = 10.0f;
        }
        op->flags = sp->flags; op->code = sp->code;
        int n = df__split(sp->attrs, items, 16);
        for (int i = 0; i < n && op->n_attrs < 12; i++)
            if (!df__parse_attr(items[i], &op->attrs[op->n_attrs++])) goto bad;
        n = df__split(sp->inputs, items, 16);
        for (int i = 0; i < n && op->n_in < 12; i++)
            if (!df__parse_arg(items[i], &op->in[op->n_in++], op)) goto bad;
        n = df__split(sp->outputs, items, 16);
        for (int i = 0; i < n && op->n_out < 4; i++)
            if (!df__parse_arg(items[i], &op->out[op->n_out++], op)) goto bad;
        if (!df__strmap_put(&df__registry.index, op->name, k)) goto bad;
        continue;
    bad:
        snprintf(df__registry.error, sizeof df__registry.error, "bad op spec for %s", sp->name);
        df__registry.initialised = -1;
        DF_FREE(ops);
        return;
    }
#ifdef DATAFLOW_CUDA
    df__gpu_register(ops, df__op_table_size);
#endif
    df__registry.ops = ops;
    df__registry.n_ops = df__op_table_size;
    __atomic_store_n(&df__registry.initialised, 1, __ATOMIC_RELEASE);
}

static const df__opdef *df__op_lookup(const char *name) {
#ifndef DF_NO_THREADS
    pthread_once(&df__registry_once, df__registry_build);
#else
    if (!df__registry.initialised) df__registry_build();
#endif
    int k;
    if (df__registry.initialised != 1 || !name || !df__strmap_get(&df__registry.index, name, &k))
        return NULL;
    return &df__registry.ops[k];
}

int df_op_is_registered(const char *op_type) { return df__op_lookup(op_type) != NULL; }

static const df__attrdef *df__op_attrdef(const df__opdef *op, const char *name) {
    for (int i = 0; i < op->n_attrs; i++)
        if (!strcmp(op->attrs[i].name, name)) return &op->attrs[i];
    return NULL;
}

/* ==========================================================================================
   9. GRAPH CONSTRUCTION                                                               >>graph
   A graph owns its nodes (insertion order = id order), a name index, the scope stacks and the
   control-flow contexts. The first error is sticky: later building calls return NULL/{NULL,0}
   and do nothing. df_op_finish checks a node against its op definition, captures inputs that
   cross into a cond or while context, adds pivot control edges, infers types and shapes.
   ========================================================================================== */
typedef struct df__shape { int rank; int64_t dims[DF_MAX_RANK]; } df__shape;

typedef enum { DF__CTX_COND = 1, DF__CTX_WHILE = 2 } df__ctx_kind;
typedef struct df__capture { df_node *src; int index; df_output value; } df__capture;
typedef struct df__ctx df__ctx;
struct df__ctx {
    df__ctx_kind kind;
    df__ctx *outer;
    df_output pred;              /* cond: the predicate (pred_id) */
    int branch;                  /* cond: 1 then, 0 else */
    df_node *pivot;              /* cond: switch_t / switch_f identity */
    char *frame_name;            /* while */
    int parallel_iterations;     /* while */
    df_node *pivot_for_pred;     /* while: first loop var's Merge */
    df_node *pivot_for_body;     /* while: first loop var's body Identity */
    df__capture *captures;
    int n_captures, cap_captures;
    /* while: the loop's parts, one per loop variable (the maximum_iterations counter first) */
    int n_vars, has_counter, swap_memory;
    int64_t checkpoint_every;
    df_node **enters, **merges, **switches, **bodies, **nexts, **exits;
    df_node *loop_cond;
    /* autodiff */
    df__ctx *grad_of;            /* a gradient loop: the forward loop whose values it reads */
    df_node *fc_add, *fc_next, *fc_exit;   /* the forward counter, made when first needed */
    df_node *f_sync;             /* ControlTrigger ordering the pushes made inside conds */
    df_node *b_index;            /* checkpointed gradient loop: the decremented count; pops wait for it */
    df_node **pops;              /* checkpointed gradient loop: its pops, which the next count waits for */
    df_node *lcount;             /* LoopCount: how many iterations ran, once all of them are done */
    int n_pops, cap_pops;
    /* checkpointed loops: the body builder, called again to recompute iterations */
    df_loop_body_fn body_fn;
    void *user;
};

struct df_node {
    df_graph *graph;
    int id;
    char *name;
    const df__opdef *op;
    char *device;
    df_output *inputs;
    int n_inputs;
    df_node **controls;
    int n_controls, cap_controls;
    int n_outputs;
    df_dtype *out_types;
    df__shape *out_shapes;
    unsigned char *out_is_ref;
    df__attr *attrs;
    int n_attrs;
    df__ctx *ctx;                /* the control-flow context the node was made in */
    df__ctx *cond;               /* a cond's Merge: the then-branch context (its predicate) */
    int gstack;                  /* gradient stack ops: 1 + index in graph->gstacks */
    unsigned char cf_part;       /* part of a while loop's machinery (Enter, Merge, Switch, ...) */
    struct df__gg *gg;           /* a partition's _GpuGraph: the nodes it runs (cuda_graphs) */
};

typedef struct df__ctl_scope { df_node **deps; int n; } df__ctl_scope;

struct df_graph {
    df_status status;
    int internal_names;          /* a partition shipped to a worker: runtime names (_Send, _cloop/...) */
    df_node **nodes;
    int n_nodes, cap_nodes;
    df__strmap names;            /* name -> id */
    df__strmap name_counts;      /* base name -> next suffix for unique names */
    char **scopes;               /* full prefixes, "a/b/" */
    int n_scopes, cap_scopes;
    char **devices;
    int n_devices, cap_devices;
    df__ctl_scope *ctl;
    int n_ctl, cap_ctl;
    df__ctx *ctx;                /* current control-flow context */
    df__ctx **ctxs;
    int n_ctxs, cap_ctxs;
    uint64_t edit_version;       /* bumps when an existing node's inputs change */
    int n_sessions;
    struct df__gstack **gstacks; /* stacks made by df_gradients for while-loop gradients */
    int n_gstacks, cap_gstacks;
    df__ctx *next_grad_of;       /* the next df_while_loop is the gradient of this loop */
};

struct df_op_builder {
    df_graph *g;
    const df__opdef *op;
    char *name;
    char *device;
    df_output *inputs;
    int n_inputs, cap_inputs;
    struct df__group { int start, count, is_list; } *groups;
    int n_groups, cap_groups;
    df_node **controls;
    int n_controls, cap_controls;
    df__attr *attrs;
    int n_attrs, cap_attrs;
    int oom;
    int raw;                     /* internal: no capture, no pivot edges (control-flow plumbing) */
};

static void df__attr_clear(df__attr *a) {
    switch (a->kind) {
    case DF__A_STRING: DF_FREE(a->u.s); break;
    case DF__A_TENSOR: df_tensor_release(a->u.tensor); break;
    case DF__A_INT_LIST: DF_FREE(a->u.ints.v); break;
    case DF__A_TYPE_LIST: DF_FREE(a->u.types.v); break;
    default: break;
    }
    DF_FREE((char *)a->name);
    a->kind = DF__A_NONE;
}

/* Deep copy; returns 0 on OOM. */
static int df__attr_copy(df__attr *dst, const df__attr *src) {
    *dst = *src;
    dst->name = df__strdup(src->name);
    if (!dst->name) return 0;
    switch (src->kind) {
    case DF__A_STRING:
        if (src->u.s && !(dst->u.s = df__strdup(src->u.s))) return 0;
        break;
    case DF__A_TENSOR: df_tensor_retain(src->u.tensor); break;
    case DF__A_INT_LIST:
        dst->u.ints.v = NULL;
        if (src->u.ints.n) {
            if (!(dst->u.ints.v = (int64_t *)DF_MALLOC((size_t)src->u.ints.n * 8))) return 0;
            memcpy(dst->u.ints.v, src->u.ints.v, (size_t)src->u.ints.n * 8);
        }
        break;
    case DF__A_TYPE_LIST:
        dst->u.types.v = NULL;
        if (src->u.types.n) {
            size_t bytes = (size_t)src->u.types.n * sizeof(df_dtype);
            if (!(dst->u.types.v = (df_dtype *)DF_MALLOC(bytes))) return 0;
            memcpy(dst->u.types.v, src->u.types.v, bytes);
        }
        break;
    default: break;
    }
    return 1;
}

/* A status naming the node, TensorFlow style: "message {{node name}}". */
static df_code df__fail(df_status *st, const df_node *n, df_code code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static df_code df__fail(df_status *st, const df_node *n, df_code code, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return df_status_set(st, code, "%s {{node %s}}", msg, n && n->name ? n->name : "?");
}

static const df__attr *df__node_attr(const df_node *n, const char *name) {
    for (int i = 0; n && i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}
static int64_t df__attr_i(const df_node *n, const char *name, int64_t def) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_INT ? a->u.i : def;
}
static int df__attr_b(const df_node *n, const char *name, int def) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_BOOL ? a->u.b : def;
}
static df_dtype df__attr_type(const df_node *n, const char *name) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_TYPE ? a->u.type : (df_dtype)0;
}
static const char *df__attr_s(const df_node *n, const char *name) {
    const df__attr *a = df__node_attr(n, name);
    return a && a->kind == DF__A_STRING && a->u.s ? a->u.s : "";
}

static const df__attr *df__attr_find_kind(const df_node *n, const char *attr, df__attr_kind kind) {
    const df__attr *a = df__node_attr(n, attr ? attr : "");
    return a && a->kind == kind ? a : NULL;
}
int df_node_attr_int(const df_node *n, const char *attr, int64_t *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_INT);
    if (a && v) *v = a->u.i;
    return a != NULL;
}
int df_node_attr_float(const df_node *n, const char *attr, float *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_FLOAT);
    if (a && v) *v = a->u.f;
    return a != NULL;
}
int df_node_attr_bool(const df_node *n, const char *attr, int *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_BOOL);
    if (a && v) *v = a->u.b;
    return a != NULL;
}
int df_node_attr_type(const df_node *n, const char *attr, df_dtype *v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_TYPE);
    if (a && v) *v = a->u.type;
    return a != NULL;
}
int df_node_attr_string(const df_node *n, const char *attr, const char **v) {
    const df__attr *a = df__attr_find_kind(n, attr, DF__A_STRING);
    if (a && v) *v = a->u.s ? a->u.s : "";
    return a != NULL;
}

/* Sets the graph's sticky error (first one wins) and returns its code. */
static df_code df__graph_error(df_graph *g, df_code code, const char *fmt, ...) {
    if (!g || g->status.code != DF_OK) return g ? g->status.code : code;
    va_list ap;
    g->status.code = code;
    va_start(ap, fmt);
    vsnprintf(g->status.message, sizeof g->status.message, fmt, ap);
    va_end(ap);
    return code;
}

df_graph *df_graph_new(void) {
    df_graph *g = (df_graph *)DF_MALLOC(sizeof *g);
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    return g;
}

#ifdef DATAFLOW_CUDA
static void df__gg_free(struct df__gg *gg);
#endif
static void df__node_free(df_node *n) {
    if (!n) return;
#ifdef DATAFLOW_CUDA
    df__gg_free(n->gg);
#endif
    DF_FREE(n->name); DF_FREE(n->device); DF_FREE(n->inputs); DF_FREE(n->controls);
    DF_FREE(n->out_types); DF_FREE(n->out_shapes); DF_FREE(n->out_is_ref);
    for (int i = 0; i < n->n_attrs; i++) df__attr_clear(&n->attrs[i]);
    DF_FREE(n->attrs);
    DF_FREE(n);
}

static void df__gstacks_free(df_graph *g);
void df_graph_free(df_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_nodes; i++) df__node_free(g->nodes[i]);
    DF_FREE(g->nodes);
    df__strmap_free(&g->names);
    df__strmap_free(&g->name_counts);
    for (int i = 0; i < g->n_scopes; i++) DF_FREE(g->scopes[i]);
    DF_FREE(g->scopes);
    for (int i = 0; i < g->n_devices; i++) DF_FREE(g->devices[i]);
    DF_FREE(g->devices);
    for (int i = 0; i < g->n_ctl; i++) DF_FREE(g->ctl[i].deps);
    DF_FREE(g->ctl);
    for (int i = 0; i < g->n_ctxs; i++) {
        DF_FREE(g->ctxs[i]->frame_name);
        DF_FREE(g->ctxs[i]->captures);
        DF_FREE(g->ctxs[i]->enters);
        DF_FREE(g->ctxs[i]->pops);
        DF_FREE(g->ctxs[i]);
    }
    DF_FREE(g->ctxs);
    df__gstacks_free(g);
    DF_FREE(g);
}

const df_status *df_graph_status(const df_graph *g) {
    static const df_status null_graph = {DF_INVALID_ARGUMENT, "graph is NULL"};
    return g ? &g->status : &null_graph;
}
df_node *df_graph_find(const df_graph *g, const char *name) {
    int id;
    if (!g || !name || !df__strmap_get(&g->names, name, &id)) return NULL;
    return g->nodes[id];
}
int df_graph_num_nodes(const df_graph *g) { return g ? g->n_nodes : 0; }
df_node *df_graph_node_at(const df_graph *g, int i) {
    return g && i >= 0 && i < g->n_nodes ? g->nodes[i] : NULL;
}
const char *df_node_name(const df_node *n) { return n ? n->name : ""; }
const char *df_node_op(const df_node *n) { return n ? n->op->name : ""; }
const char *df_node_device(const df_node *n) { return n && n->device ? n->device : ""; }
int df_node_num_outputs(const df_node *n) { return n ? n->n_outputs : 0; }
int df_node_num_inputs(const df_node *n) { return n ? n->n_inputs : 0; }
df_output df_node_input(const df_node *n, int i) {
    df_output none = {NULL, 0};
    return n && i >= 0 && i < n->n_inputs ? n->inputs[i] : none;
}
int df_node_num_control_inputs(const df_node *n) { return n ? n->n_controls : 0; }
df_node *df_node_control_input(const df_node *n, int i) {
    return n && i >= 0 && i < n->n_controls ? n->controls[i] : NULL;
}
static int df__output_valid(df_output o) { return o.node && o.index >= 0 && o.index < o.node->n_outputs; }
df_dtype df_output_dtype(df_output o) { return df__output_valid(o) ? o.node->out_types[o.index] : (df_dtype)0; }
int df_output_shape(df_output o, int64_t dims[DF_MAX_RANK]) {
    if (!df__output_valid(o)) return -1;
    const df__shape *s = &o.node->out_shapes[o.index];
    for (int i = 0; dims && i < s->rank; i++) dims[i] = s->dims[i];
    return s->rank;
}

/* ---- scopes ---- */
static const char *df__scope(const df_graph *g) { return g->n_scopes ? g->scopes[g->n_scopes - 1] : ""; }

void df_graph_push_name_scope(df_graph *g, const char *scope) {
    if (!g || g->status.code) return;
    if (!df__grow(&g->scopes, &g->cap_scopes, g->n_scopes + 1, sizeof(char *))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing a name scope");
        return;
    }
    const char *prefix = df__scope(g);
    size_t n = strlen(prefix) + (scope ? strlen(scope) : 0) + 2;
    char *full = (char *)DF_MALLOC(n);
    if (!full) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing a name scope"); return; }
    if (scope && *scope) snprintf(full, n, "%s%s/", prefix, scope);
    else snprintf(full, n, "%s", prefix);
    g->scopes[g->n_scopes++] = full;
}
void df_graph_pop_name_scope(df_graph *g) {
    if (g && g->n_scopes) DF_FREE(g->scopes[--g->n_scopes]);
}
void df_graph_push_device(df_graph *g, const char *device) {
    if (!g || g->status.code) return;
    char *d = df__strdup(device ? device : "");
    if (!d || !df__grow(&g->devices, &g->cap_devices, g->n_devices + 1, sizeof(char *))) {
        DF_FREE(d);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing a device scope");
        return;
    }
    g->devices[g->n_devices++] = d;
}
void df_graph_pop_device(df_graph *g) {
    if (g && g->n_devices) DF_FREE(g->devices[--g->n_devices]);
}
void df_graph_push_control_deps(df_graph *g, df_node *const *deps, int n) {
    if (!g || g->status.code) return;
    if (n < 0 || (n > 0 && !deps)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "push_control_deps: bad dependency list (n=%d)", n);
        return;
    }
    for (int i = 0; i < n; i++)
        if (!deps[i] || deps[i]->graph != g) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "push_control_deps: dependency %d is NULL or "
                            "from another graph", i);
            return;
        }
    if (!df__grow(&g->ctl, &g->cap_ctl, g->n_ctl + 1, sizeof *g->ctl)) goto oom;
    df__ctl_scope *c = &g->ctl[g->n_ctl];
    c->n = n;
    c->deps = NULL;
    if (n && !(c->deps = (df_node **)DF_MALLOC((size_t)n * sizeof(df_node *)))) goto oom;
    if (n) memcpy(c->deps, deps, (size_t)n * sizeof(df_node *));
    g->n_ctl++;
    return;
oom:
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory pushing control dependencies");
}
void df_graph_pop_control_deps(df_graph *g) {
    if (g && g->n_ctl) DF_FREE(g->ctl[--g->n_ctl].deps);
}

/* ---- the builder ---- */
static int df__valid_node_name(const char *s) {
    if (!s || !*s) return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || (p != s && (c == '_' || c == '-' || c == '/' || c == '>'));
        if (!ok) return 0;
    }
    return 1;
}

/* A unique name "scope/base", "scope/base_1", ... */
static char *df__unique_name(df_graph *g, const char *base) {
    const char *scope = df__scope(g);
    size_t n = strlen(scope) + strlen(base) + 24;
    char *name = (char *)DF_MALLOC(n);
    if (!name) return NULL;
    snprintf(name, n, "%s%s", scope, base);
    int next = 0;
    df__strmap_get(&g->name_counts, name, &next);
    char *candidate = (char *)DF_MALLOC(n);
    if (!candidate) { DF_FREE(name); return NULL; }
    for (;;) {
        if (next == 0) snprintf(candidate, n, "%s", name);
        else snprintf(candidate, n, "%s_%d", name, next);
        next++;
        if (!df__strmap_get(&g->names, candidate, NULL)) break;
    }
    if (!df__strmap_put(&g->name_counts, name, next)) { DF_FREE(name); DF_FREE(candidate); return NULL; }
    DF_FREE(name);
    return candidate;
}

df_op_builder *df_op_new(df_graph *g, const char *op_type, const char *name) {
    if (!g || g->status.code != DF_OK) return NULL;
    const df__opdef *op = df__op_lookup(op_type);
    if (!op) {
        if (df__registry.initialised == -1)
            df__graph_error(g, DF_INTERNAL, "Op registry failed to load: %s", df__registry.error);
        else
            df__graph_error(g, DF_NOT_FOUND, "Op type not registered '%s'%s%s", op_type ? op_type : "",
                            name ? " for node " : "", name ? name : "");
        return NULL;
    }
    df_op_builder *b = (df_op_builder *)DF_MALLOC(sizeof *b);
    if (!b) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory in df_op_new"); return NULL; }
    memset(b, 0, sizeof *b);
    b->g = g;
    b->op = op;
    if (name) {
        const char *scope = df__scope(g);
        size_t n = strlen(scope) + strlen(name) + 1;
        if ((b->name = (char *)DF_MALLOC(n))) snprintf(b->name, n, "%s%s", scope, name);
        if (!g->internal_names && !df__valid_node_name(name)) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "Invalid node name '%s' for op %s: names use "
                            "letters, digits and . _ - / and do not start with _ - /", name, op->name);
            DF_FREE(b->name); DF_FREE(b);
            return NULL;
        }
    } else {
        b->name = df__unique_name(g, op->name);
    }
    if (!b->name) { b->oom = 1; }
    if (g->n_devices && !(b->device = df__strdup(g->devices[g->n_devices - 1]))) b->oom = 1;
    return b;
}

static void df__builder_free(df_op_builder *b) {
    if (!b) return;
    DF_FREE(b->name); DF_FREE(b->device); DF_FREE(b->inputs); DF_FREE(b->groups);
    DF_FREE(b->controls);
    for (int i = 0; i < b->n_attrs; i++) df__attr_clear(&b->attrs[i]);
    DF_FREE(b->attrs);
    DF_FREE(b);
}

static void df__builder_inputs(df_op_builder *b, const df_output *ins, int n, int is_list) {
    if (!b) return;
    if (n < 0 || (n > 0 && !ins)) { b->oom = 2; return; }
    if (!df__grow(&b->inputs, &b->cap_inputs, b->n_inputs + n, sizeof(df_output)) ||
        !df__grow(&b->groups, &b->cap_groups, b->n_groups + 1, sizeof *b->groups)) { b->oom = 1; return; }
    b->groups[b->n_groups].start = b->n_inputs;
    b->groups[b->n_groups].count = n;
    b->groups[b->n_groups].is_list = is_list;
    b->n_groups++;
    if (n) memcpy(b->inputs + b->n_inputs, ins, (size_t)n * sizeof(df_output));
    b->n_inputs += n;
}
void df_op_add_input(df_op_builder *b, df_output in) { df__builder_inputs(b, &in, 1, 0); }
void df_op_add_input_list(df_op_builder *b, const df_output *ins, int n) { df__builder_inputs(b, ins, n, 1); }

void df_op_add_control_input(df_op_builder *b, df_node *n) {
    if (!b) return;
    if (!df__grow(&b->controls, &b->cap_controls, b->n_controls + 1, sizeof(df_node *))) { b->oom = 1; return; }
    b->controls[b->n_controls++] = n;     /* NULL is reported at finish */
}

void df_op_set_device(df_op_builder *b, const char *device) {
    if (!b) return;
    DF_FREE(b->device);
    if (!(b->device = df__strdup(device ? device : ""))) b->oom = 1;
}

void df_op_colocate_with(df_op_builder *b, const df_node *n) {
    if (!b || b->oom) return;
    if (!n || !n->name) { b->oom = 2; return; }
    const char *prev = "";
    for (int i = 0; i < b->n_attrs; i++)
        if (!strcmp(b->attrs[i].name, "_class") && b->attrs[i].kind == DF__A_STRING && b->attrs[i].u.s) prev = b->attrs[i].u.s;
    size_t len = strlen(prev) + strlen(n->name) + 8;
    char *v = (char *)DF_MALLOC(len);
    if (!v) { b->oom = 1; return; }
    snprintf(v, len, "%s%sloc:@%s", prev, *prev ? "," : "", n->name);
    df_op_set_attr_string(b, "_class", v);
    DF_FREE(v);
}

/* Returns the slot for attr `name`, clearing any earlier value. */
static df__attr *df__builder_attr(df_op_builder *b, const char *name, df__attr_kind kind) {
    if (!b) return NULL;
    if (!name) { b->oom = 3; return NULL; }
    for (int i = 0; i < b->n_attrs; i++)
        if (!strcmp(b->attrs[i].name, name)) {
            df__attr_clear(&b->attrs[i]);
            b->attrs[i].name = df__strdup(name);
            b->attrs[i].kind = kind;
            if (!b->attrs[i].name) { b->oom = 1; return NULL; }
            return &b->attrs[i];
        }
    if (!df__grow(&b->attrs, &b->cap_attrs, b->n_attrs + 1, sizeof(df__attr))) { b->oom = 1; return NULL; }
    df__attr *a = &b->attrs[b->n_attrs];
    memset(a, 0, sizeof *a);
    if (!(a->name = df__strdup(name))) { b->oom = 1; return NULL; }
    a->kind = kind;
    b->n_attrs++;
    return a;
}
void df_op_set_attr_int(df_op_builder *b, const char *attr, int64_t v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_INT); if (a) a->u.i = v;
}
void df_op_set_attr_float(df_op_builder *b, const char *attr, float v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_FLOAT); if (a) a->u.f = v;
}
void df_op_set_attr_bool(df_op_builder *b, const char *attr, int v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_BOOL); if (a) a->u.b = v != 0;
}
void df_op_set_attr_type(df_op_builder *b, const char *attr, df_dtype v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_TYPE); if (a) a->u.type = v;
}
void df_op_set_attr_string(df_op_builder *b, const char *attr, const char *v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_STRING);
    if (a && !(a->u.s = df__strdup(v ? v : ""))) b->oom = 1;
}
void df_op_set_attr_shape(df_op_builder *b, const char *attr, int rank, const int64_t *dims) {
    df__attr *a = df__builder_attr(b, attr, DF__A_SHAPE);
    if (!a) return;
    if (rank > 0 && !dims) { b->oom = 4; a->u.shape.rank = -1; return; }
    a->u.shape.rank = rank;     /* a bad rank is reported by df_op_finish, naming the node */
    for (int i = 0; i < DF_MAX_RANK; i++) a->u.shape.dims[i] = i < rank ? dims[i] : 0;
}
void df_op_set_attr_tensor(df_op_builder *b, const char *attr, df_tensor *v) {
    df__attr *a = df__builder_attr(b, attr, DF__A_TENSOR);
    if (a) a->u.tensor = df_tensor_retain(v);
}
void df_op_set_attr_int_list(df_op_builder *b, const char *attr, const int64_t *v, int n) {
    df__attr *a = df__builder_attr(b, attr, DF__A_INT_LIST);
    if (!a) return;
    if (n < 0 || (n > 0 && !v)) { b->oom = 5; return; }
    a->u.ints.n = n;
    if (n && !(a->u.ints.v = (int64_t *)DF_MALLOC((size_t)n * 8))) { b->oom = 1; a->u.ints.n = 0; return; }
    if (n) memcpy(a->u.ints.v, v, (size_t)n * 8);
}
void df_op_set_attr_type_list(df_op_builder *b, const char *attr, const df_dtype *v, int n) {
    df__attr *a = df__builder_attr(b, attr, DF__A_TYPE_LIST);
    if (!a) return;
    if (n < 0 || (n > 0 && !v)) { b->oom = 5; return; }
    a->u.types.n = n;
    if (n && !(a->u.types.v = (df_dtype *)DF_MALLOC((size_t)n * sizeof(df_dtype)))) { b->oom = 1; a->u.types.n = 0; return; }
    if (n) memcpy(a->u.types.v, v, (size_t)n * sizeof(df_dtype));
}

/* The shape-function context: the node being made, with inputs, types and attrs in place. */
typedef struct df__shape_ctx {
    df_graph *g;
    df_node *node;
    df__shape *in_shapes;
    df_dtype *in_types;
    df_status *st;
} df__shape_ctx;

static const char *df__kind_name(df__attr_kind k) {
    static const char *names[] = {"none", "int", "float", "bool", "type", "string", "shape",
                                  "tensor", "list(int)", "list(type)"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}



/* Sets or checks a `type` attr on the node from an input; returns DF_OK or an error. */
static df_code df__bind_type(df_node *n, const df__attrdef *ad, df_dtype t, const char *arg,
                             df_status *st) {
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, ad->name)) {
            if (n->attrs[i].u.type != t)
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of '%s' Op has type %s "
                    "that does not match type %s of attr '%s'", arg, n->op->name, df_dtype_name(t),
                    df_dtype_name(n->attrs[i].u.type), ad->name);
            return DF_OK;
        }
    df__attr a;
    memset(&a, 0, sizeof a);
    a.kind = DF__A_TYPE;
    a.u.type = t;
    if (!(a.name = df__strdup(ad->name))) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    n->attrs[n->n_attrs++] = a;    /* capacity reserved for every attr of the op */
    return DF_OK;
}

static df__attr *df__node_attr_mut(df_node *n, const char *name) {
    return (df__attr *)df__node_attr(n, name);
}

/* Type-checks inputs against the op definition, binds inferred attrs, fills in defaults and
   computes output dtypes. */
static df_code df__typecheck(df_node *n, const struct df__group *groups, int n_groups, df_status *st) {
    const df__opdef *op = n->op;
    if (n_groups != op->n_in)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "%s expects %d input%s, got %d",
                              op->name, op->n_in, op->n_in == 1 ? "" : "s", n_groups);
    for (int k = 0; k < op->n_in; k++) {
        const df__argdef *arg = &op->in[k];
        const struct df__group *grp = &groups[k];
        if (!arg->is_list && grp->count != 1)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of %s takes one tensor, "
                                  "got a list of %d", arg->name, op->name, grp->count);
        if (arg->number_attr[0]) {
            const df__attrdef *ad = df__op_attrdef(op, arg->number_attr);
            df__attr *have = df__node_attr_mut(n, arg->number_attr);
            if (have && have->u.i != grp->count)
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' is %lld but input '%s' "
                    "has %d tensors", arg->number_attr, (long long)have->u.i, arg->name, grp->count);
            if (ad && ad->min != INT64_MIN && grp->count < ad->min)
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of %s needs at least %lld "
                    "tensors, got %d", arg->name, op->name, (long long)ad->min, grp->count);
            if (!have) {
                df__attr a;
                memset(&a, 0, sizeof a);
                a.kind = DF__A_INT; a.u.i = grp->count;
                if (!(a.name = df__strdup(arg->number_attr))) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
                n->attrs[n->n_attrs++] = a;
            }
        }
        const df__attrdef *tad = arg->type_attr[0] ? df__op_attrdef(op, arg->type_attr) : NULL;
        if (tad && tad->kind == DF__A_TYPE_LIST) {
            df__attr *have = df__node_attr_mut(n, tad->name);
            if (have) {
                if (have->u.types.n != grp->count)
                    return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' lists %d types but input "
                        "'%s' has %d tensors", tad->name, have->u.types.n, arg->name, grp->count);
            } else {
                df__attr a;
                memset(&a, 0, sizeof a);
                a.kind = DF__A_TYPE_LIST;
                a.u.types.n = grp->count;
                if (!(a.name = df__strdup(tad->name))) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
                if (grp->count && !(a.u.types.v = (df_dtype *)DF_MALLOC((size_t)grp->count * sizeof(df_dtype)))) {
                    DF_FREE((char *)a.name);
                    return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
                }
                for (int j = 0; j < grp->count; j++) a.u.types.v[j] = df_output_dtype(n->inputs[grp->start + j]);
                n->attrs[n->n_attrs++] = a;
                have = &n->attrs[n->n_attrs - 1];
            }
            for (int j = 0; j < grp->count; j++)
                if (have->u.types.v[j] != df_output_dtype(n->inputs[grp->start + j]))
                    return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' %d of %s has type %s "
                        "but attr '%s' says %s", arg->name, j, op->name,
                        df_dtype_name(df_output_dtype(n->inputs[grp->start + j])), tad->name,
                        df_dtype_name(have->u.types.v[j]));
            continue;
        }
        for (int j = 0; j < grp->count; j++) {
            df_output in = n->inputs[grp->start + j];
            df_dtype t = df_output_dtype(in);
            if (arg->is_ref && !in.node->out_is_ref[in.index])
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of %s must be a variable "
                    "(a ref output such as VariableV2's), got %s:%d of op %s", arg->name, op->name,
                    in.node->name, in.index, in.node->op->name);
            if (arg->fixed && t != arg->fixed)
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Input '%s' of '%s' Op has type %s "
                    "that does not match expected type of %s", arg->name, op->name, df_dtype_name(t),
                    df_dtype_name(arg->fixed));
            if (tad) {
                if (tad->allowed && !(tad->allowed & df__type_bit(t)))
                    return df__fail(st, n, DF_INVALID_ARGUMENT, "Value for attr '%s' of %s is not "
                        "in the list of allowed values for input '%s' of %s", tad->name, df_dtype_name(t),
                        arg->name, op->name);
                df_code c = df__bind_type(n, tad, t, arg->name, st);
                if (c) return c;
            }
        }
    }
    /* attrs: kinds, allowed types, minimums, defaults, required */
    for (int i = 0; i < n->n_attrs; i++) {
        const df__attrdef *ad = df__op_attrdef(op, n->attrs[i].name);
        if (!ad && n->attrs[i].name[0] == '_') continue;  /* internal attrs (_class, ...) as TF allows */
        if (!ad)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Op %s has no attr named '%s'", op->name,
                                  n->attrs[i].name);
        if (ad->kind != n->attrs[i].kind)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' of %s has kind %s, got %s",
                                  ad->name, op->name, df__kind_name(ad->kind), df__kind_name(n->attrs[i].kind));
        if (ad->kind == DF__A_TYPE && ad->allowed && !(ad->allowed & df__type_bit(n->attrs[i].u.type)))
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Value for attr '%s' of %s is not in the "
                "list of allowed values for %s", ad->name, df_dtype_name(n->attrs[i].u.type), op->name);
        if (ad->kind == DF__A_TYPE && !df__dtype_valid(n->attrs[i].u.type) &&
            !(n->attrs[i].u.type == DF_RESOURCE && ((op->flags & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER |
              DF__OP_EXIT | DF__OP_NEXT_ITERATION | DF__OP_TRANSFER)) || !strcmp(op->name, "Identity") ||
              !strcmp(op->name, "StackV2") || !strcmp(op->name, "LoopStackPush") ||
              !strcmp(op->name, "LoopStackPop"))) &&  /* handles flow, and are stacked (nested loop gradients) */
            !(n->attrs[i].u.type == DF_STRING && ((op->flags & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT |
              DF__OP_NEXT_ITERATION | DF__OP_TRANSFER)) || !strcmp(op->name, "Identity") || !strcmp(op->name, "Const") ||
              !strcmp(op->name, "Placeholder") || !strcmp(op->name, "PlaceholderWithDefault"))))   /* strings: paths and names */
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s' of %s is an invalid dtype (%d)",
                                  ad->name, op->name, (int)n->attrs[i].u.type);
        if (ad->kind == DF__A_SHAPE) {
            const df__attr *a = &n->attrs[i];
            int64_t count = 1;
            if (a->u.shape.rank < -1 || a->u.shape.rank > DF_MAX_RANK)
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s': rank %d is outside [-1, %d]", ad->name, a->u.shape.rank, DF_MAX_RANK);
            for (int d = 0; d < a->u.shape.rank; d++) {
                int64_t v = a->u.shape.dims[d];
                if (v < -1)
                    return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s': dimension %d is %lld; dims must be >= 0 "
                                          "or -1 (unknown)", ad->name, d, (long long)v);
                if (v > 0 && count > INT64_MAX / v)
                    return df__fail(st, n, DF_INVALID_ARGUMENT, "Attr '%s': the shape has too many elements "
                                          "(int64 overflow)", ad->name);
                if (v >= 0) count *= v;
            }
        }
        if (ad->kind == DF__A_INT && ad->min != INT64_MIN && n->attrs[i].u.i < ad->min)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Value for attr '%s' of %lld must be at "
                "least minimum %lld", ad->name, (long long)n->attrs[i].u.i, (long long)ad->min);
        for (int j = 0; j < i; j++)
            if (!strcmp(n->attrs[j].name, n->attrs[i].name))
                return df__fail(st, n, DF_INVALID_ARGUMENT, "Duplicate attr '%s'", ad->name);
    }
    for (int i = 0; i < op->n_attrs; i++) {
        const df__attrdef *ad = &op->attrs[i];
        if (df__node_attr(n, ad->name)) continue;
        if (!ad->has_default)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "NodeDef missing attr '%s' (%s) from Op %s",
                                  ad->name, df__kind_name(ad->kind), op->name);
        if (!df__attr_copy(&n->attrs[n->n_attrs], &ad->def))
            return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
        n->n_attrs++;
    }
    /* outputs */
    int n_out = 0;
    for (int k = 0; k < op->n_out; k++) {
        const df__argdef *arg = &op->out[k];
        if (arg->number_attr[0]) n_out += (int)df__attr_i(n, arg->number_attr, 0);
        else if (arg->type_attr[0] && df__node_attr(n, arg->type_attr)->kind == DF__A_TYPE_LIST)
            n_out += df__node_attr(n, arg->type_attr)->u.types.n;
        else n_out++;
    }
    if (n_out > 0) {
        n->out_types = (df_dtype *)DF_MALLOC((size_t)n_out * sizeof(df_dtype));
        n->out_shapes = (df__shape *)DF_MALLOC((size_t)n_out * sizeof(df__shape));
        n->out_is_ref = (unsigned char *)DF_MALLOC((size_t)n_out);
        if (!n->out_types || !n->out_shapes || !n->out_is_ref)
            return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    }
    if (n_out > 65535)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "%s would have %d outputs; at most 65535 are supported", op->name, n_out);
    n->n_outputs = n_out;
    int o = 0;
    for (int k = 0; k < op->n_out; k++) {
        const df__argdef *arg = &op->out[k];
        const df__attr *ta = arg->type_attr[0] ? df__node_attr(n, arg->type_attr) : NULL;
        int count = arg->number_attr[0] ? (int)df__attr_i(n, arg->number_attr, 0)
                    : (ta && ta->kind == DF__A_TYPE_LIST) ? ta->u.types.n : 1;
        for (int j = 0; j < count; j++, o++) {
            n->out_types[o] = arg->fixed ? arg->fixed
                              : ta->kind == DF__A_TYPE_LIST ? ta->u.types.v[j] : ta->u.type;
            n->out_is_ref[o] = (unsigned char)arg->is_ref;
            n->out_shapes[o].rank = -1;
        }
    }
    return DF_OK;
}

static df_output df__ctx_capture(df_graph *g, df__ctx *ctx, df_output x);
static df_node *df__ctx_capture_control(df_graph *g, df__ctx *ctx, df_node *c);
static df_node *df__ctx_control_pivot(df__ctx *ctx);
static int df__ctx_contains(const df__ctx *outer, const df__ctx *inner);

static int df__node_has_control(const df_node *n, const df_node *c) {
    for (int i = 0; i < n->n_controls; i++) if (n->controls[i] == c) return 1;
    return 0;
}
static int df__node_add_control(df_node *n, df_node *c) {
    if (df__node_has_control(n, c)) return 1;
    if (!df__grow(&n->controls, &n->cap_controls, n->n_controls + 1, sizeof(df_node *))) return 0;
    n->controls[n->n_controls++] = c;
    return 1;
}

df_node *df_op_finish(df_op_builder *b) {
    if (!b) return NULL;
    df_graph *g = b->g;
    df_node *n = NULL;
    df_status st;
    df_status_clear(&st);
    if (g->status.code != DF_OK) goto fail;
    if (b->oom) {
        if (b->oom == 1) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory building node '%s'", b->name ? b->name : "?");
        else df__graph_error(g, DF_INVALID_ARGUMENT, "Bad argument (NULL list, negative count, bad rank "
                             "or NULL attr name) while building node '%s' {{node %s}}", b->name ? b->name : "?", b->name ? b->name : "?");
        goto fail;
    }
    if (df__strmap_get(&g->names, b->name, NULL)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "Duplicate node name in graph: '%s'", b->name);
        goto fail;
    }
    {
        df__devspec ds;
        if (b->device && !df__parse_device(b->device, &ds)) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "Malformed device specification '%s' {{node %s}}", b->device, b->name);
            goto fail;
        }
    }
    for (int i = 0; i < b->n_inputs; i++) {
        df_output in = b->inputs[i];
        if (!in.node)
            { df__graph_error(g, DF_INVALID_ARGUMENT, "Input %d of %s is NULL (did an earlier call fail?) "
                              "{{node %s}}", i, b->op->name, b->name); goto fail; }
        if (in.node->graph != g)
            { df__graph_error(g, DF_INVALID_ARGUMENT, "Input %d of %s comes from another graph {{node %s}}",
                              i, b->op->name, b->name); goto fail; }
        if (in.index < 0 || in.index >= in.node->n_outputs)
            { df__graph_error(g, DF_INVALID_ARGUMENT, "Input %d of %s refers to output %d of '%s', which has "
                              "%d outputs {{node %s}}", i, b->op->name, in.index, in.node->name,
                              in.node->n_outputs, b->name); goto fail; }
    }
    for (int i = 0; i < b->n_controls; i++)
        if (!b->controls[i] || b->controls[i]->graph != g)
            { df__graph_error(g, DF_INVALID_ARGUMENT, "Control input %d of %s is NULL or from another graph "
                              "{{node %s}}", i, b->op->name, b->name); goto fail; }
    /* Capture tensors that cross into the current cond/while context. */
    if (g->ctx && !b->raw) {
        for (int i = 0; i < b->n_inputs; i++) {
            df_output x = df__ctx_capture(g, g->ctx, b->inputs[i]);
            if (!x.node) goto fail;
            b->inputs[i] = x;
        }
        for (int i = 0; i < b->n_controls; i++) {
            df_node *c = df__ctx_capture_control(g, g->ctx, b->controls[i]);
            if (!c) goto fail;
            b->controls[i] = c;
        }
    }
    /* Control-dependency scopes apply to every node made inside them. */
    if (!b->raw)
        for (int s = 0; s < g->n_ctl; s++)
            for (int i = 0; i < g->ctl[s].n; i++) {
                df_node *c = g->ctl[s].deps[i];
                if (g->ctx && !(c = df__ctx_capture_control(g, g->ctx, c))) goto fail;
                if (!df__grow(&b->controls, &b->cap_controls, b->n_controls + 1, sizeof(df_node *))) goto oom;
                b->controls[b->n_controls++] = c;
            }

    if (!(n = (df_node *)DF_MALLOC(sizeof *n))) goto oom;
    memset(n, 0, sizeof *n);
    n->graph = g;
    n->op = b->op;
    n->ctx = g->ctx;
    n->name = b->name; b->name = NULL;
    n->device = b->device; b->device = NULL;
    n->n_inputs = b->n_inputs;
    if (b->n_inputs) {
        if (!(n->inputs = (df_output *)DF_MALLOC((size_t)b->n_inputs * sizeof(df_output)))) goto oom;
        memcpy(n->inputs, b->inputs, (size_t)b->n_inputs * sizeof(df_output));
    }
    /* Duplicate control inputs are harmless (each edge counts once each way), and checking for
       them here would be quadratic in a group of many nodes. */
    if (b->n_controls) {
        if (!(n->controls = (df_node **)DF_MALLOC((size_t)b->n_controls * sizeof(df_node *)))) goto oom;
        memcpy(n->controls, b->controls, (size_t)b->n_controls * sizeof(df_node *));
        n->n_controls = n->cap_controls = b->n_controls;
    }
    /* Room for every attr the op knows plus the ones given (unknown ones are reported). */
    if (!(n->attrs = (df__attr *)DF_MALLOC((size_t)(b->n_attrs + b->op->n_attrs + 1) * sizeof(df__attr)))) goto oom;
    for (int i = 0; i < b->n_attrs; i++) { n->attrs[i] = b->attrs[i]; }
    n->n_attrs = b->n_attrs;
    b->n_attrs = 0;
    if (df__typecheck(n, b->groups, b->n_groups, &st) != DF_OK) goto fail_status;

    /* Pivot control edges: inside a context, a node with no inputs, or (in a loop) with only
       loop-invariant inputs, would run in the wrong frame or once too often (TF #26371). */
    if (g->ctx && !b->raw) {
        df_node *pivot = df__ctx_control_pivot(g->ctx);
        int gate = n->n_inputs == 0 && n->n_controls == 0;
        if (!gate && g->ctx->kind == DF__CTX_WHILE && n->n_controls == 0 && n->n_inputs > 0) {
            gate = 1;
            for (int i = 0; i < n->n_inputs; i++) {
                const df_node *src = n->inputs[i].node;
                if (!((src->op->flags & DF__OP_ENTER) && df__attr_b(src, "is_constant", 0) &&
                      src->ctx == g->ctx)) { gate = 0; break; }
            }
        }
        if (gate && pivot && !df__node_add_control(n, pivot)) goto oom;
    }
    /* Shapes. */
    if (n->op->shape_fn) {
        df__shape_ctx sc;
        df__shape in_shapes_small[8];
        df_dtype in_types_small[8];
        df__shape *in_shapes = in_shapes_small;
        df_dtype *in_types = in_types_small;
        if (n->n_inputs > 8) {
            in_shapes = (df__shape *)DF_MALLOC((size_t)n->n_inputs * sizeof(df__shape));
            in_types = (df_dtype *)DF_MALLOC((size_t)n->n_inputs * sizeof(df_dtype));
            if (!in_shapes || !in_types) {
                if (in_shapes != in_shapes_small) DF_FREE(in_shapes);
                if (in_types != in_types_small) DF_FREE(in_types);
                goto oom;
            }
        }
        for (int i = 0; i < n->n_inputs; i++) {
            in_shapes[i] = n->inputs[i].node->out_shapes[n->inputs[i].index];
            in_types[i] = n->inputs[i].node->out_types[n->inputs[i].index];
        }
        sc.g = g; sc.node = n; sc.in_shapes = in_shapes; sc.in_types = in_types; sc.st = &st;
        df_code c = n->op->shape_fn(&sc);
        if (in_shapes != in_shapes_small) DF_FREE(in_shapes);
        if (in_types != in_types_small) DF_FREE(in_types);
        if (c != DF_OK) goto fail_status;
    }
    if (!df__grow(&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(df_node *))) goto oom;
    if (!df__strmap_put(&g->names, n->name, g->n_nodes)) goto oom;
    n->id = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    df__builder_free(b);
    return n;
fail_status:
    df__graph_error(g, st.code, "%s", st.message);
    goto fail;
oom:
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory building a node");
fail:
    df__node_free(n);
    df__builder_free(b);
    return NULL;
}

df_code df_node_update_input(df_graph *g, df_node *dst, int index, df_output src) {
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (!dst || dst->graph != g || !src.node || src.node->graph != g)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_node_update_input: node is NULL or from "
                               "another graph");
    if (index < 0 || index >= dst->n_inputs)
        return df__graph_error(g, DF_OUT_OF_RANGE, "df_node_update_input: input %d out of range "
                               "(node has %d) {{node %s}}", index, dst->n_inputs, dst->name);
    if (!df__output_valid(src))
        return df__graph_error(g, DF_OUT_OF_RANGE, "df_node_update_input: '%s' has no output %d "
                               "{{node %s}}", src.node->name, src.index, dst->name);
    if (df_output_dtype(src) != df_output_dtype(dst->inputs[index]))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_node_update_input: input %d of %s is %s "
            "but '%s:%d' is %s {{node %s}}", index, dst->op->name,
            df_dtype_name(df_output_dtype(dst->inputs[index])), src.node->name, src.index,
            df_dtype_name(df_output_dtype(src)), dst->name);
    dst->inputs[index] = src;
    g->edit_version++;
    return DF_OK;
}

/* ==========================================================================================
   11. CONTROL-FLOW CONSTRUCTION                                                       >>cflow
   df_cond and df_while_loop emit Switch, Merge, Enter, Exit, NextIteration and LoopCond as the
   seed documents describe. A context stack records where a node is made; a tensor used inside
   a context it was not made in is captured: a Switch per (tensor, branch) for cond, a constant
   Enter per (tensor, loop) for while, recursively through every enclosing context. Ops with no
   inputs, or only loop-invariant inputs, get a control edge from the context's pivot.
   ========================================================================================== */
static int df__ctx_contains(const df__ctx *outer, const df__ctx *inner) {
    if (!outer) return 1;
    for (const df__ctx *c = inner; c; c = c->outer) if (c == outer) return 1;
    return 0;
}

static df_node *df__ctx_control_pivot(df__ctx *ctx) {
    if (!ctx) return NULL;
    if (ctx->kind == DF__CTX_COND) return ctx->pivot;
    return ctx->pivot_for_body ? ctx->pivot_for_body : ctx->pivot_for_pred;
}

static df__ctx *df__ctx_new(df_graph *g, df__ctx_kind kind) {
    df__ctx *c = (df__ctx *)DF_MALLOC(sizeof *c);
    if (!c || !df__grow(&g->ctxs, &g->cap_ctxs, g->n_ctxs + 1, sizeof(df__ctx *))) {
        DF_FREE(c);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory making a control-flow context");
        return NULL;
    }
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->outer = g->ctx;
    g->ctxs[g->n_ctxs++] = c;
    return c;
}

/* Makes an op with the given inputs in context `ctx`, without capture or pivot edges. */
static df_node *df__raw_op(df_graph *g, df__ctx *ctx, const char *op, const df_output *ins, int n_ins,
                           int ins_as_list) {
    df__ctx *saved = g->ctx;
    g->ctx = ctx;
    df_op_builder *b = df_op_new(g, op, NULL);
    if (b) {
        b->raw = 1;
        if (ins_as_list) df_op_add_input_list(b, ins, n_ins);
        else for (int i = 0; i < n_ins; i++) df_op_add_input(b, ins[i]);
    }
    df_node *n = df_op_finish(b);
    g->ctx = saved;
    return n;
}

static df_node *df__make_enter(df_graph *g, df__ctx *loop, df_output x, int is_constant) {
    df__ctx *saved = g->ctx;
    g->ctx = loop;
    df_op_builder *b = df_op_new(g, "Enter", NULL);
    if (b) {
        b->raw = 1;
        df_op_add_input(b, x);
        df_op_set_attr_string(b, "frame_name", loop->frame_name);
        df_op_set_attr_bool(b, "is_constant", is_constant);
        df_op_set_attr_int(b, "parallel_iterations", loop->parallel_iterations);
        /* An Enter of a loop nested in another loop fires once per outer iteration, gated by the
           outer pivot, so that the dead final outer iteration does not run the inner loop. */
        df_node *outer_pivot = loop->outer && loop->outer->kind == DF__CTX_WHILE
                               ? df__ctx_control_pivot(loop->outer) : NULL;
        if (outer_pivot) df_op_add_control_input(b, outer_pivot);
    }
    df_node *n = df_op_finish(b);
    g->ctx = saved;
    if (n) n->cf_part = 1;
    return n;
}

static df_output df__grad_real_value(df_graph *g, df__ctx *G, df_output x);
static df_output df__ctx_capture(df_graph *g, df__ctx *ctx, df_output x) {
    df_output none = {NULL, 0};
    if (!ctx || df__ctx_contains(ctx, x.node->ctx)) return x;
    for (int i = 0; i < ctx->n_captures; i++)
        if (ctx->captures[i].src == x.node && ctx->captures[i].index == x.index) return ctx->captures[i].value;
    df_output v;
    if (ctx->kind == DF__CTX_WHILE && ctx->grad_of && df__ctx_contains(ctx->grad_of, x.node->ctx)) {
        /* a gradient loop reading a value of the loop it differentiates */
        v = df__grad_real_value(g, ctx, x);
        if (!v.node) return none;
        goto record;
    }
    df_output outer_x = df__ctx_capture(g, ctx->outer, x);
    if (!outer_x.node) return none;
    if (ctx->kind == DF__CTX_COND) {
        df_output ins[2] = {outer_x, ctx->pred};
        df_node *sw = df__raw_op(g, ctx->outer, "Switch", ins, 2, 0);
        if (!sw) return none;
        sw->ctx = ctx;          /* its live output belongs to this branch */
        v.node = sw;
        v.index = ctx->branch;
    } else {
        df_node *e = df__make_enter(g, ctx, outer_x, 1);
        if (!e) return none;
        v.node = e;
        v.index = 0;
    }
record:
    if (!df__grow(&ctx->captures, &ctx->cap_captures, ctx->n_captures + 1, sizeof(df__capture))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory capturing a tensor");
        return none;
    }
    ctx->captures[ctx->n_captures].src = x.node;
    ctx->captures[ctx->n_captures].index = x.index;
    ctx->captures[ctx->n_captures].value = v;
    ctx->n_captures++;
    return v;
}

/* A control input from outside a while loop cannot cross into the loop's frame directly: it
   becomes a small constant made after the outside node, captured like any tensor. */
static df_node *df__ctx_capture_control(df_graph *g, df__ctx *ctx, df_node *c) {
    if (df__ctx_contains(ctx, c->ctx)) return c;
    int crosses_loop = 0;
    for (df__ctx *k = ctx; k && !df__ctx_contains(k, c->ctx); k = k->outer)
        if (k->kind == DF__CTX_WHILE) crosses_loop = 1;
    if (!crosses_loop) return c;
    df__ctx *saved = g->ctx;
    g->ctx = c->ctx;
    df_tensor *zero = df_tensor_scalar_i32(0);
    df_op_builder *b = zero ? df_op_new(g, "Const", NULL) : NULL;
    if (b) {
        b->raw = 1;
        df_op_set_attr_tensor(b, "value", zero);
        df_op_set_attr_type(b, "dtype", DF_INT32);
        df_op_add_control_input(b, c);
    } else if (!zero) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    }
    df_tensor_release(zero);
    df_node *k = df_op_finish(b);
    g->ctx = saved;
    if (!k) return NULL;
    df_output kv = {k, 0};
    df_output v = df__ctx_capture(g, ctx, kv);
    return v.node;
}

/* A unique relative scope name: "cond", "cond_1", ... within the current scope. */
static int df__unique_scope(df_graph *g, const char *base, char *out, size_t n) {
    char key[256];
    snprintf(key, sizeof key, "%s%s/", df__scope(g), base);
    int next = 0;
    df__strmap_get(&g->name_counts, key, &next);
    if (!df__strmap_put(&g->name_counts, key, next + 1)) return 0;
    if (next == 0) snprintf(out, n, "%s", base);
    else snprintf(out, n, "%s_%d", base, next);
    return 1;
}

static df_code df__check_pred(df_graph *g, df_output pred, const char *what) {
    if (!df__output_valid(pred) || pred.node->graph != g)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: the predicate is NULL or invalid", what);
    if (df_output_dtype(pred) != DF_BOOL)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: the predicate must be a bool scalar, got %s "
                               "{{node %s}}", what, df_dtype_name(df_output_dtype(pred)), pred.node->name);
    int rank = pred.node->out_shapes[pred.index].rank;
    if (rank > 0)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "%s: the predicate must be a scalar, got rank %d "
                               "{{node %s}}", what, rank, pred.node->name);
    return DF_OK;
}

df_code df_cond(df_graph *g, df_output pred, int n_out, df_branch_fn then_fn, df_branch_fn else_fn,
                void *user, df_output *outs) {
    for (int i = 0; outs && i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (n_out < 0 || (n_out > 0 && !outs) || !then_fn || !else_fn)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_cond: bad arguments (n_out %d, outs %s, "
                               "then_fn %s, else_fn %s)", n_out, outs ? "set" : "NULL",
                               then_fn ? "set" : "NULL", else_fn ? "set" : "NULL");
    for (int i = 0; i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    if (df__check_pred(g, pred, "df_cond")) return g->status.code;
    char scope[64];
    if (!df__unique_scope(g, "cond", scope, sizeof scope))
        return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    df_graph_push_name_scope(g, scope);
    df__ctx *outer = g->ctx;
    df_output *res = (df_output *)DF_MALLOC((size_t)(2 * n_out + 1) * sizeof(df_output));
    if (!res) { df_graph_pop_name_scope(g); return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    memset(res, 0, (size_t)(2 * n_out + 1) * sizeof(df_output));
    df_output *res_t = res, *res_f = res + n_out;

    df_op_builder *b = df_op_new(g, "Switch", "switch");
    df_op_add_input(b, pred);
    df_op_add_input(b, pred);
    df_node *sw = df_op_finish(b);
    b = df_op_new(g, "Identity", "pred_id");
    df_op_add_input(b, pred);
    df_node *pred_id = df_op_finish(b);
    df_output sw_t = {sw, 1}, sw_f = {sw, 0};
    b = df_op_new(g, "Identity", "switch_t");
    df_op_add_input(b, sw_t);
    df_node *pivot_t = df_op_finish(b);
    b = df_op_new(g, "Identity", "switch_f");
    df_op_add_input(b, sw_f);
    df_node *pivot_f = df_op_finish(b);
    df__ctx *ctx_t = g->status.code ? NULL : df__ctx_new(g, DF__CTX_COND);
    df__ctx *ctx_f = g->status.code ? NULL : df__ctx_new(g, DF__CTX_COND);
    if (ctx_t && ctx_f) {
        df_output pid = {pred_id, 0};
        ctx_t->pred = pid; ctx_t->branch = 1; ctx_t->pivot = pivot_t; pivot_t->ctx = ctx_t;
        ctx_f->pred = pid; ctx_f->branch = 0; ctx_f->pivot = pivot_f; pivot_f->ctx = ctx_f;
        for (int br = 0; br < 2 && !g->status.code; br++) {
            df__ctx *ctx = br == 0 ? ctx_t : ctx_f;
            df_output *r = br == 0 ? res_t : res_f;
            g->ctx = ctx;
            (br == 0 ? then_fn : else_fn)(g, user, r);
            for (int i = 0; i < n_out && !g->status.code; i++) {
                if (!df__output_valid(r[i]) || r[i].node->graph != g) {
                    df__graph_error(g, DF_INVALID_ARGUMENT, "df_cond: the %s branch left output %d "
                                    "NULL or invalid", br == 0 ? "then" : "else", i);
                    break;
                }
                r[i] = df__ctx_capture(g, ctx, r[i]);   /* a branch may return an outside tensor */
            }
            g->ctx = outer;
        }
    }
    g->ctx = outer;
    for (int i = 0; i < n_out && !g->status.code; i++) {
        if (df_output_dtype(res_t[i]) != df_output_dtype(res_f[i])) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_cond: output %d of the then branch is %s but "
                            "the else branch gives %s", i, df_dtype_name(df_output_dtype(res_t[i])),
                            df_dtype_name(df_output_dtype(res_f[i])));
            break;
        }
        df_output pair[2] = {res_f[i], res_t[i]};     /* value_index equals the branch taken */
        b = df_op_new(g, "Merge", NULL);
        if (b) b->raw = 1;
        df_op_add_input_list(b, pair, 2);
        df_node *m = df_op_finish(b);
        if (m) { m->cond = ctx_t; outs[i].node = m; outs[i].index = 0; }
    }
    DF_FREE(res);
    df_graph_pop_name_scope(g);
    if (g->status.code) for (int i = 0; i < n_out; i++) outs[i].node = NULL, outs[i].index = 0;
    return g->status.code;
}

static int df__shapes_equal(const df__shape *a, const df__shape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++) if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* The most specific shape both a and b satisfy. */
static df__shape df__shape_relax(const df__shape *a, const df__shape *b) {
    df__shape r;
    if (a->rank != b->rank || a->rank < 0) { r.rank = -1; return r; }
    r.rank = a->rank;
    for (int i = 0; i < a->rank; i++) r.dims[i] = a->dims[i] == b->dims[i] ? a->dims[i] : -1;
    return r;
}

df_code df_while_loop(df_graph *g, int n_vars, const df_output *init, df_loop_cond_fn cond,
                      df_loop_body_fn body, void *user, const df_while_options *opts,
                      df_output *outs) {
    for (int i = 0; outs && i < n_vars; i++) outs[i].node = NULL, outs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (n_vars < 1 || !init || !cond || !body || !outs)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: bad arguments (n_vars %d must be "
                               ">= 1; init, cond, body and outs must be set)", n_vars);
    for (int i = 0; i < n_vars; i++) outs[i].node = NULL, outs[i].index = 0;
    for (int i = 0; i < n_vars; i++)
        if (!df__output_valid(init[i]) || init[i].node->graph != g)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: loop variable %d is NULL or "
                                   "invalid", i);
    int par = opts ? opts->parallel_iterations : 0;
    int64_t max_iter = opts ? opts->maximum_iterations : 0;
    if (par < 0) return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: parallel_iterations must "
                                        "be positive, got %d", par);
    if (max_iter < 0) return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: maximum_iterations "
                                             "must be >= 0 (0 means no limit), got %lld", (long long)max_iter);
    if (par == 0) par = 10;
    const char *base = opts && opts->name && *opts->name ? opts->name : "while";
    if (!df__valid_node_name(base))
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: invalid name '%s'", base);
    char scope[96];
    if (!df__unique_scope(g, base, scope, sizeof scope))
        return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    df_graph_push_name_scope(g, scope);
    df__ctx *outer = g->ctx;
    int has_counter = max_iter > 0;
    int n = n_vars + has_counter;
    df_output *mem = (df_output *)DF_MALLOC((size_t)(5 * n + 2) * sizeof(df_output));
    df__ctx *C = mem ? df__ctx_new(g, DF__CTX_WHILE) : NULL;
    if (!mem || !C) {
        DF_FREE(mem);
        df_graph_pop_name_scope(g);
        return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    }
    memset(mem, 0, (size_t)(5 * n + 2) * sizeof(df_output));
    df_output *vals = mem, *merges = mem + n, *switches = mem + 2 * n, *body_in = mem + 3 * n,
              *next = mem + 4 * n;
    const char *full = df__scope(g);
    size_t len = strlen(full);
    C->frame_name = (char *)DF_MALLOC(len + 1);
    if (C->frame_name) { memcpy(C->frame_name, full, len); C->frame_name[len ? len - 1 : 0] = 0; }
    else df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    C->parallel_iterations = par;
    C->grad_of = g->next_grad_of;
    g->next_grad_of = NULL;
    C->swap_memory = opts ? opts->swap_memory : 0;
    C->checkpoint_every = opts && opts->checkpoint_every > 0 ? opts->checkpoint_every : 0;
    C->body_fn = body; C->user = user;
    C->n_vars = n;
    C->has_counter = has_counter;
    C->enters = (df_node **)DF_MALLOC((size_t)(6 * n) * sizeof(df_node *));
    if (C->enters) {
        memset(C->enters, 0, (size_t)(6 * n) * sizeof(df_node *));
        C->merges = C->enters + n; C->switches = C->enters + 2 * n; C->bodies = C->enters + 3 * n;
        C->nexts = C->enters + 4 * n; C->exits = C->enters + 5 * n;
    } else {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    }

    /* Initial values, valid in the outer context. */
    if (has_counter) {
        df_output zero = df_scalar_i64(g, 0);
        vals[0] = zero;
    }
    for (int i = 0; i < n_vars && !g->status.code; i++)
        vals[has_counter + i] = outer ? df__ctx_capture(g, outer, init[i]) : init[i];
    /* Enter and Merge per variable. */
    for (int i = 0; i < n && !g->status.code; i++) {
        df_node *e = df__make_enter(g, C, vals[i], 0);
        if (!e) break;
        df_output ev = {e, 0}, pair[2] = {ev, ev};
        df_node *m = df__raw_op(g, C, "Merge", pair, 2, 1);
        if (!m) break;
        m->cf_part = 1;
        C->enters[i] = e; C->merges[i] = m;
        merges[i].node = m;
        merges[i].index = 0;
    }
    if (!g->status.code) {
        C->pivot_for_pred = merges[0].node;
        g->ctx = C;
        df_output c = cond(g, user, merges + has_counter);
        g->ctx = outer;
        if (!g->status.code && (!df__output_valid(c) || c.node->graph != g))
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: cond returned a NULL or invalid tensor");
        if (!g->status.code) {
            g->ctx = C;
            c = df__ctx_capture(g, C, c);
            if (!g->status.code && df__check_pred(g, c, "df_while_loop cond") == DF_OK && has_counter) {
                df_output limit = df_scalar_i64(g, max_iter);
                df_output lt = df_less(g, merges[0], limit);
                c = df_logical_and(g, lt, c);
            }
            g->ctx = outer;
        }
        df_node *lc = g->status.code ? NULL : df__raw_op(g, C, "LoopCond", &c, 1, 0);
        if (lc) { lc->cf_part = 1; C->loop_cond = lc; }
        for (int i = 0; i < n && lc; i++) {
            df_output lcv = {lc, 0}, ins[2] = {merges[i], lcv};
            df_node *sw = df__raw_op(g, C, "Switch", ins, 2, 0);
            if (!sw) break;
            switches[i].node = sw;
            df_output t = {sw, 1};
            sw->cf_part = 1;
            C->switches[i] = sw;
            if (C->grad_of && i > 0) {          /* gradient loops: only the pivot needs an Identity */
                C->bodies[i] = sw;
                body_in[i] = t;
                continue;
            }
            df_node *id = df__raw_op(g, C, "Identity", &t, 1, 0);
            if (!id) break;
            id->cf_part = 1;
            C->bodies[i] = id;
            body_in[i].node = id;
            if (i == 0) C->pivot_for_body = id;
        }
    }
    if (!g->status.code) {
        g->ctx = C;
        body(g, user, body_in + has_counter, next + has_counter);
        if (has_counter && !g->status.code) next[0] = df_add(g, body_in[0], df_scalar_i64(g, 1));
        for (int i = 0; i < n && !g->status.code; i++) {
            if (!df__output_valid(next[i]) || next[i].node->graph != g) {
                df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: the body left output %d NULL or "
                                "invalid", i - has_counter);
                break;
            }
            next[i] = df__ctx_capture(g, C, next[i]);
            if (!next[i].node) break;
            if (df_output_dtype(next[i]) != df_output_dtype(merges[i])) {
                df__graph_error(g, DF_INVALID_ARGUMENT, "df_while_loop: loop variable %d enters the loop "
                    "as %s but the body returns %s {{node %s}}", i - has_counter,
                    df_dtype_name(df_output_dtype(merges[i])), df_dtype_name(df_output_dtype(next[i])),
                    next[i].node->name);
                break;
            }
        }
        g->ctx = outer;
        for (int i = 0; i < n && !g->status.code; i++) {
            df_node *ni = df__raw_op(g, C, "NextIteration", &next[i], 1, 0);
            if (!ni) break;
            ni->cf_part = 1;
            C->nexts[i] = ni;
            df_output niv = {ni, 0};
            df__shape *ms = &merges[i].node->out_shapes[0];
            if (!df__shapes_equal(ms, &ni->out_shapes[0])) *ms = df__shape_relax(ms, &ni->out_shapes[0]);
            df_node_update_input(g, merges[i].node, 1, niv);
        }
        for (int i = 0; i < n && !g->status.code; i++) {
            df_output f = {switches[i].node, 0};
            switches[i].node->out_shapes[0] = switches[i].node->out_shapes[1] = merges[i].node->out_shapes[0];
            df_node *ex = df__raw_op(g, outer, "Exit", &f, 1, 0);
            if (!ex) break;
            ex->cf_part = 1;
            C->exits[i] = ex;
            ex->out_shapes[0] = merges[i].node->out_shapes[0];
            if (i >= has_counter) { outs[i - has_counter].node = ex; outs[i - has_counter].index = 0; }
        }
    }
    g->ctx = outer;
    DF_FREE(mem);
    df_graph_pop_name_scope(g);
    if (g->status.code) for (int i = 0; i < n_vars; i++) outs[i].node = NULL, outs[i].index = 0;
    return g->status.code;
}

/* ==========================================================================================
   10. SHAPE INFERENCE                                                                 >>shape
   Shape functions run when a node is made. They use constant inputs (Const, or an Identity or
   Enter of one) where an op takes a shape or axis as a tensor, and leave dims unknown (-1)
   otherwise. The checks here are repeated by the kernels: static shapes are a hint, not a promise.
   ========================================================================================== */
struct df__step;
typedef struct df__kctx {
    df_tensor **in;              /* input values (NULL: dead; only Merge sees those) */
    df_tensor **out;             /* outputs the kernel sets; NULL leaves one dead (Switch) */
    const df_node *node;
    int n_in, n_out;
    uint32_t need;               /* bit i: output i has a consumer */
    df__allocator *alloc;        /* the device's allocator */
    struct df__step *step;
    df_status *st;
    int64_t iter;                /* the iteration of the running node's frame (0 outside loops) */
    const struct df__tagged *tag; /* the running node, its iteration and frame (Send/Recv keys) */
    int32_t aux;                 /* _Send/_Recv: the rendezvous key's number in the run's plan */
    int dead;                    /* the node is dead (only transfer nodes run then) */
    int out_dead;                /* set by a Recv whose value arrived dead */
    int pending;                 /* set by a Recv that waits: the executor resumes it later */
    struct df__ipool *ipool;     /* the session's intra-op threads (NULL: this thread only) */
    uint32_t host_out;           /* bit i: output i goes to host memory (a GPU's shapes, predicates) */
    void *gpu;                   /* the df_cuda whose memory the kernel works in; NULL: host memory */
    df__device *dev;             /* the device the kernel runs on */
    int32_t xfer;                /* _Send: the receiving partition * 2 + 1 if it wants device memory */
} df__kctx;

static const df_tensor *df__const_value(df_output o) {
    for (int depth = 0; o.node && depth < 8; depth++) {
        unsigned f = o.node->op->flags;
        if (!strcmp(o.node->op->name, "Const")) {
            const df__attr *a = df__node_attr(o.node, "value");
            return a && a->kind == DF__A_TENSOR ? a->u.tensor : NULL;
        }
        if ((f & DF__OP_ENTER) || !strcmp(o.node->op->name, "Identity")) o = o.node->inputs[0];
        else return NULL;
    }
    return NULL;
}
static const df_tensor *df__sc_const(df__shape_ctx *c, int i) {
    return i < c->node->n_inputs ? df__const_value(c->node->inputs[i]) : NULL;
}
static df__shape *df__sc_out(df__shape_ctx *c, int i) { return &c->node->out_shapes[i]; }
static df__shape df__shape_of(const df_tensor *t) {
    df__shape s;
    s.rank = t->rank;
    for (int i = 0; i < t->rank; i++) s.dims[i] = t->dims[i];
    return s;
}
static df__shape df__shape_unknown(void) { df__shape s; s.rank = -1; return s; }
static df__shape df__shape_scalar(void) { df__shape s; s.rank = 0; return s; }

/* Integer element i of an int32/int64 tensor. */
static int64_t df__int_at(const df_tensor *t, int64_t i) {
    return t->dtype == DF_INT64 ? ((const int64_t *)t->data)[i] : (int64_t)((const int32_t *)t->data)[i];
}
static int df__is_int_tensor(const df_tensor *t) { return t && (t->dtype == DF_INT32 || t->dtype == DF_INT64); }


/* NumPy broadcasting of two shapes. Strides are element strides into each operand (0 where
   the operand is broadcast). Unknown dims (-1) broadcast to unknown. */
typedef struct df__bcast {
    int rank;
    int64_t dims[DF_MAX_RANK], sa[DF_MAX_RANK], sb[DF_MAX_RANK];
} df__bcast;

static int df__broadcast(int ra, const int64_t *da, int rb, const int64_t *db, df__bcast *bc) {
    int r = DF__MAX(ra, rb);
    int64_t stride_a = 1, stride_b = 1;
    bc->rank = r;
    for (int i = r - 1; i >= 0; i--) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
        if (x == y) bc->dims[i] = x;
        else if (x == 1) bc->dims[i] = y;
        else if (y == 1) bc->dims[i] = x;
        else if (x == -1 || y == -1) bc->dims[i] = x == -1 ? (y == 1 ? -1 : y) : x;
        else return 0;
        bc->sa[i] = (x == 1 && bc->dims[i] != 1) ? 0 : stride_a;
        bc->sb[i] = (y == 1 && bc->dims[i] != 1) ? 0 : stride_b;
        stride_a *= x < 0 ? 1 : x;
        stride_b *= y < 0 ? 1 : y;
    }
    return 1;
}

static const char *df__dims_str(int rank, const int64_t *dims, char *buf, size_t n) {
    df__shape_str(rank, dims, buf, n);
    return buf;
}

static df_code df__sf_same(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++)
        *df__sc_out(c, i) = c->node->n_inputs ? c->in_shapes[0] : df__shape_unknown();
    return DF_OK;
}
static df_code df__sf_scalar(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = df__shape_scalar();
    return DF_OK;
}
static df_code df__sf_binary(df__shape_ctx *c) {
    const df__shape *a = &c->in_shapes[0], *b = &c->in_shapes[1];
    if (a->rank < 0 || b->rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    df__bcast bc;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                        df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96),
                        c->node->op->name);
    }
    df__shape *o = df__sc_out(c, 0);
    o->rank = bc.rank;
    memcpy(o->dims, bc.dims, sizeof bc.dims);
    return DF_OK;
}

/* ==========================================================================================
   12. CPU KERNELS                                                                   >>kernels
   A kernel reads c->in, writes c->out (new references) and reports errors through c->st with
   the node's name. Kernels never trust static shapes: every size, axis and index is checked
   again here. Elementwise ops broadcast NumPy-style over a row-wise odometer; sizes are
   int64 throughout. Vector speed comes later; nothing here is quadratic where TF is linear.
   ========================================================================================== */
#define DF__KFAIL(c, code, ...) df__fail((c)->st, (c)->node, (code), __VA_ARGS__)

static df_tensor *df__k_alloc(df__kctx *c, int i, df_dtype t, int rank, const int64_t *dims) {
    df__allocator *a = (c->host_out >> DF__MIN(i, 31) & 1) ? df__host_allocator() : c->alloc;
    df_tensor *x = a ? df__tensor_alloc(a, t, rank, dims, c->st) : NULL;
    if (!a) df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
    if (!x) {
        char msg[sizeof c->st->message];
        memcpy(msg, c->st->message, sizeof msg);
        if (c->dev && !c->dev->host_memory && !(c->host_out >> DF__MIN(i, 31) & 1))
            df_status_set(c->st, c->st->code ? c->st->code : DF_RESOURCE_EXHAUSTED, "%.*s (on %s) {{node %s}}",
                          360, msg, c->dev->name, c->node->name);
        else df_status_set(c->st, c->st->code ? c->st->code : DF_RESOURCE_EXHAUSTED, "%.*s {{node %s}}",
                           400, msg, c->node->name);
        return NULL;
    }
    c->out[i] = x;
    return x;
}
/* TensorFlow's buffer forwarding: output i takes input `in`'s buffer when this node holds the
   only reference to it (not a constant's value, a variable, a feed or a view of a shared
   buffer) and it has the output's type and shape. The kernel must then compute in place, each
   element read before it is written. Else a new tensor. */
static df_tensor *df__k_reuse_or_alloc(df__kctx *c, int i, int in, df_dtype t, int rank, const int64_t *dims) {
    df_tensor *x = in < c->n_in ? c->in[in] : NULL;
    if (x && x->dtype == t && x->rank == rank && !x->base && !x->ref && x->alloc &&
        __atomic_load_n(&x->refs, __ATOMIC_ACQUIRE) == 1 &&
        (rank == 0 || !memcmp(x->dims, dims, (size_t)rank * sizeof *dims))) {
        c->out[i] = x;
        c->in[in] = NULL;
        return x;
    }
    return df__k_alloc(c, i, t, rank, dims);
}
static df_tensor *df__k_alloc_like(df__kctx *c, int i, df_dtype t, const df_tensor *like) {
    return df__k_alloc(c, i, t, like->rank, like->dims);
}
/* Passes an input through: the node owns its input references, so it hands this one on. */
static void df__k_forward(df__kctx *c, int out, int in) { c->out[out] = c->in[in]; c->in[in] = NULL; }

/* ---- CPU features: which vector kernels run (AVX-512 for the GEMM and convolutions, AVX2+FMA
   for the rest, where the CPU has them; else portable) ----
   DF_EMULATE_AVX512 (tests only) compiles the AVX-512 kernel against SIMDe's portable
   definitions of the same intrinsics and reports the CPU as having it, so that kernel's logic
   runs on machines without AVX-512. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(DF_NO_SIMD)
#define DF__X86 1
#include <immintrin.h>
#define DF__TARGET_AVX2 __attribute__((target("avx2,fma")))
#ifdef DF_EMULATE_AVX512
#include <simde/x86/avx512.h>
#define DF__Z(f) simde_mm512_##f
#define DF__ZT(t) simde__m512##t
#define DF__TARGET_AVX512
#else
#define DF__Z(f) _mm512_##f
#define DF__ZT(t) __m512##t
#define DF__TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#endif
#endif

enum { DF__ISA_PORTABLE = 0, DF__ISA_AVX2 = 1, DF__ISA_AVX512 = 2 };
static int df__isa_forced = -1;                 /* -1: the best the CPU has */
static int df__cpu_has_avx512(void) {
#if defined(DF__X86) && defined(DF_EMULATE_AVX512)
    return 1;
#elif defined(DF__X86)
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();           /* also checks that the OS saves the zmm registers */
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}
static int df__cpu_has_avx2(void) {
#ifdef DF__X86
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}
static int df__isa(void) {
    int f = __atomic_load_n(&df__isa_forced, __ATOMIC_RELAXED);
    if (f >= 0) return f;
    return df__cpu_has_avx512() ? DF__ISA_AVX512 : df__cpu_has_avx2() ? DF__ISA_AVX2 : DF__ISA_PORTABLE;
}
/* The set for kernels that have no AVX-512 version: AVX2 on an AVX-512 machine. */
static int df__vec_isa(void) { int i = df__isa(); return i > DF__ISA_AVX2 ? DF__ISA_AVX2 : i; }
df_code df_set_kernel_isa(const char *isa) {
    int v;
    if (!isa || !strcmp(isa, "auto")) v = -1;
    else if (!strcmp(isa, "portable")) v = DF__ISA_PORTABLE;
    else if (!strcmp(isa, "avx2")) { if (!df__cpu_has_avx2()) return DF_UNAVAILABLE; v = DF__ISA_AVX2; }
    else if (!strcmp(isa, "avx512")) { if (!df__cpu_has_avx512()) return DF_UNAVAILABLE; v = DF__ISA_AVX512; }
    else return DF_INVALID_ARGUMENT;
    __atomic_store_n(&df__isa_forced, v, __ATOMIC_RELAXED);
    return DF_OK;
}
const char *df_kernel_isa(void) {
    int i = df__isa();
    return i == DF__ISA_AVX512 ? "avx512" : i == DF__ISA_AVX2 ? "avx2" : "portable";
}

/* ---- elementwise binary ---- */
enum { DF__B_ADD, DF__B_SUB, DF__B_MUL, DF__B_DIV, DF__B_MAX, DF__B_MIN, DF__B_POW, DF__B_FLOORMOD,
       DF__B_FLOORDIV, DF__B_SQDIFF, DF__B_LESS, DF__B_LESS_EQ, DF__B_GREATER, DF__B_GREATER_EQ,
       DF__B_EQUAL, DF__B_NOT_EQUAL, DF__B_AND, DF__B_OR,
       /* gradient ops: ReluGrad(dy, x) and the y-based ones (y, dy) */
       DF__B_RELU_GRAD, DF__B_TANH_GRAD, DF__B_SIGMOID_GRAD, DF__B_SQRT_GRAD, DF__B_RSQRT_GRAD, DF__B_RECIP_GRAD,
       DF__B_COUNT };

#define DF__ROW(NAME, TI, TO, EXPR)                                                            \
    static void NAME(void *o_, const void *a_, const void *b_, int64_t n, int sa, int sb) {    \
        TO *o = (TO *)o_;                                                                      \
        const TI *a = (const TI *)a_, *b = (const TI *)b_;                                     \
        if (sa && sb) for (int64_t i = 0; i < n; i++) { TI x = a[i], y = b[i]; o[i] = (TO)(EXPR); } \
        else if (sa) { TI y = b[0]; for (int64_t i = 0; i < n; i++) { TI x = a[i]; o[i] = (TO)(EXPR); } } \
        else if (sb) { TI x = a[0]; for (int64_t i = 0; i < n; i++) { TI y = b[i]; o[i] = (TO)(EXPR); } } \
        else { TI x = a[0], y = b[0]; TO v = (TO)(EXPR); for (int64_t i = 0; i < n; i++) o[i] = v; } \
    }

static int32_t df__ipow32(int32_t x, int32_t y) { int32_t r = 1; while (y > 0) { if (y & 1) r = (int32_t)((uint32_t)r * (uint32_t)x); x = (int32_t)((uint32_t)x * (uint32_t)x); y >>= 1; } return r; }
static int64_t df__ipow64(int64_t x, int64_t y) { int64_t r = 1; while (y > 0) { if (y & 1) r = (int64_t)((uint64_t)r * (uint64_t)x); x = (int64_t)((uint64_t)x * (uint64_t)x); y >>= 1; } return r; }
/* y == -1 is handled apart: INT_MIN / -1 and INT_MIN % -1 trap on x86. */
#define DF__IFMOD(x, y) ((y) == -1 ? 0 : (x) % (y) != 0 && (((x) % (y) < 0) != ((y) < 0)) ? (x) % (y) + (y) : (x) % (y))
#define DF__IFDIV(T, U, x, y) ((y) == -1 ? (T)((U)0 - (U)(x)) : (x) / (y) - (((x) % (y) != 0) && (((x) < 0) != ((y) < 0))))
#define DF__FFMOD(x, y) (fmod((x), (y)) != 0 && ((fmod((x), (y)) < 0) != ((y) < 0)) ? fmod((x), (y)) + (y) : fmod((x), (y)))
/* Integer add/sub/mul wrap as two's complement (TensorFlow's behaviour), without UB. */
#define DF__WRAP(T, U, OP, x, y) ((T)((U)(x) OP (U)(y)))

#define DF__ARITH_ROWS(SUF, T, ISFLOAT, POWF, FMODF, FDIVF, ADDX, SUBX, MULX, DIVX)           \
    DF__ROW(df__row_add_##SUF, T, T, ADDX) DF__ROW(df__row_sub_##SUF, T, T, SUBX)              \
    DF__ROW(df__row_mul_##SUF, T, T, MULX) DF__ROW(df__row_div_##SUF, T, T, DIVX)              \
    DF__ROW(df__row_max_##SUF, T, T, (x > y || (ISFLOAT && x != x)) ? x : y)                   \
    DF__ROW(df__row_min_##SUF, T, T, (x < y || (ISFLOAT && x != x)) ? x : y)                   \
    DF__ROW(df__row_pow_##SUF, T, T, POWF) DF__ROW(df__row_fmod_##SUF, T, T, FMODF)            \
    DF__ROW(df__row_fdiv_##SUF, T, T, FDIVF) DF__ROW(df__row_sqd_##SUF, T, T, (x - y) * (x - y)) \
    DF__ROW(df__row_lt_##SUF, T, uint8_t, x < y) DF__ROW(df__row_le_##SUF, T, uint8_t, x <= y) \
    DF__ROW(df__row_gt_##SUF, T, uint8_t, x > y) DF__ROW(df__row_ge_##SUF, T, uint8_t, x >= y) \
    DF__ROW(df__row_eq_##SUF, T, uint8_t, x == y) DF__ROW(df__row_ne_##SUF, T, uint8_t, x != y)

DF__ARITH_ROWS(f32, float, 1, powf(x, y), (float)DF__FFMOD(x, y), floorf(x / y), x + y, x - y, x * y, x / y)
DF__ARITH_ROWS(f64, double, 1, pow(x, y), DF__FFMOD(x, y), floor(x / y), x + y, x - y, x * y, x / y)
DF__ARITH_ROWS(i32, int32_t, 0, df__ipow32(x, y), DF__IFMOD(x, y), DF__IFDIV(int32_t, uint32_t, x, y),
               DF__WRAP(int32_t, uint32_t, +, x, y), DF__WRAP(int32_t, uint32_t, -, x, y),
               DF__WRAP(int32_t, uint32_t, *, x, y), (y == -1 ? DF__WRAP(int32_t, uint32_t, -, 0, x) : x / y))
DF__ARITH_ROWS(i64, int64_t, 0, df__ipow64(x, y), DF__IFMOD(x, y), DF__IFDIV(int64_t, uint64_t, x, y),
               DF__WRAP(int64_t, uint64_t, +, x, y), DF__WRAP(int64_t, uint64_t, -, x, y),
               DF__WRAP(int64_t, uint64_t, *, x, y), (y == -1 ? DF__WRAP(int64_t, uint64_t, -, 0, x) : x / y))
DF__ROW(df__row_and_b, uint8_t, uint8_t, x && y)
DF__ROW(df__row_or_b, uint8_t, uint8_t, x || y)
DF__ROW(df__row_eq_b, uint8_t, uint8_t, (x != 0) == (y != 0))
DF__ROW(df__row_ne_b, uint8_t, uint8_t, (x != 0) != (y != 0))

#define DF__GRAD_ROWS(SUF, T, SQRTF)                                                           \
    DF__ROW(df__row_relug_##SUF, T, T, y > 0 ? x : 0) DF__ROW(df__row_tanhg_##SUF, T, T, y * (1 - x * x)) \
    DF__ROW(df__row_sigg_##SUF, T, T, y * x * (1 - x)) DF__ROW(df__row_sqrtg_##SUF, T, T, y * (T)0.5 / x) \
    DF__ROW(df__row_rsqrtg_##SUF, T, T, y * (T)-0.5 * x * x * x) DF__ROW(df__row_recipg_##SUF, T, T, -y * x * x)
DF__GRAD_ROWS(f32, float, sqrtf)
DF__GRAD_ROWS(f64, double, sqrt)
#define DF__ROWSET(SUF, GRADS) { df__row_add_##SUF, df__row_sub_##SUF, df__row_mul_##SUF, df__row_div_##SUF, \
    df__row_max_##SUF, df__row_min_##SUF, df__row_pow_##SUF, df__row_fmod_##SUF, df__row_fdiv_##SUF, \
    df__row_sqd_##SUF, df__row_lt_##SUF, df__row_le_##SUF, df__row_gt_##SUF, df__row_ge_##SUF, \
    df__row_eq_##SUF, df__row_ne_##SUF, NULL, NULL, GRADS }
#define DF__GRADSET(SUF) df__row_relug_##SUF, df__row_tanhg_##SUF, df__row_sigg_##SUF, df__row_sqrtg_##SUF, \
    df__row_rsqrtg_##SUF, df__row_recipg_##SUF
static const df__row_fn df__rows_f32[DF__B_COUNT] = DF__ROWSET(f32, DF__GRADSET(f32));
static const df__row_fn df__rows_f64[DF__B_COUNT] = DF__ROWSET(f64, DF__GRADSET(f64));
static const df__row_fn df__rows_i32[DF__B_COUNT] = DF__ROWSET(i32, NULL);
static const df__row_fn df__rows_i64[DF__B_COUNT] = DF__ROWSET(i64, NULL);


/* AVX2 rows for float32 and float64: the same results as the plain rows (IEEE operations lane
   by lane; Maximum/Minimum keep TensorFlow's NaN rule), eight or four elements at a time. */
#ifdef DF__X86
#define DF__VROW(NAME, T, V, W, L, SET1, VEXPR, SEXPR)                                          \
    DF__TARGET_AVX2 static void NAME(void *o_, const void *a_, const void *b_, int64_t n, int sa, int sb) { \
        T *o = (T *)o_;                                                                         \
        const T *a = (const T *)a_, *b = (const T *)b_;                                         \
        int64_t i = 0;                                                                          \
        if (sa && sb) {                                                                         \
            for (; i + L <= n; i += L) { V x = _mm256_loadu_##W(a + i), y = _mm256_loadu_##W(b + i); _mm256_storeu_##W(o + i, VEXPR); } \
            for (; i < n; i++) { T xs = a[i], ys = b[i]; o[i] = SEXPR; }                        \
        } else if (sa) {                                                                        \
            T ys = b[0]; V y = SET1(ys);                                                        \
            for (; i + L <= n; i += L) { V x = _mm256_loadu_##W(a + i); _mm256_storeu_##W(o + i, VEXPR); } \
            for (; i < n; i++) { T xs = a[i]; o[i] = SEXPR; }                                   \
        } else if (sb) {                                                                        \
            T xs = a[0]; V x = SET1(xs);                                                        \
            for (; i + L <= n; i += L) { V y = _mm256_loadu_##W(b + i); _mm256_storeu_##W(o + i, VEXPR); } \
            for (; i < n; i++) { T ys = b[i]; o[i] = SEXPR; }                                   \
        } else {                                                                                \
            T xs = a[0], ys = b[0], v = SEXPR;                                                  \
            for (; i < n; i++) o[i] = v;                                                        \
        }                                                                                       \
    }
#define DF__VROWS(SUF, T, V, W, L, SET1, CMP, BLEND, ONE)                                       \
    DF__VROW(df__vrow_add_##SUF, T, V, W, L, SET1, _mm256_add_##W(x, y), xs + ys)               \
    DF__VROW(df__vrow_sub_##SUF, T, V, W, L, SET1, _mm256_sub_##W(x, y), xs - ys)               \
    DF__VROW(df__vrow_mul_##SUF, T, V, W, L, SET1, _mm256_mul_##W(x, y), xs * ys)               \
    DF__VROW(df__vrow_div_##SUF, T, V, W, L, SET1, _mm256_div_##W(x, y), xs / ys)               \
    DF__VROW(df__vrow_max_##SUF, T, V, W, L, SET1,                                              \
             BLEND(y, x, _mm256_or_##W(CMP(x, y, _CMP_GT_OQ), CMP(x, x, _CMP_UNORD_Q))),         \
             (xs > ys || xs != xs) ? xs : ys)                                                   \
    DF__VROW(df__vrow_min_##SUF, T, V, W, L, SET1,                                              \
             BLEND(y, x, _mm256_or_##W(CMP(x, y, _CMP_LT_OQ), CMP(x, x, _CMP_UNORD_Q))),         \
             (xs < ys || xs != xs) ? xs : ys)                                                   \
    DF__VROW(df__vrow_sqd_##SUF, T, V, W, L, SET1, _mm256_mul_##W(_mm256_sub_##W(x, y), _mm256_sub_##W(x, y)), (xs - ys) * (xs - ys)) \
    DF__VROW(df__vrow_relug_##SUF, T, V, W, L, SET1,                                            \
             _mm256_and_##W(x, CMP(y, _mm256_setzero_##W(), _CMP_GT_OQ)), ys > 0 ? xs : 0)      \
    DF__VROW(df__vrow_tanhg_##SUF, T, V, W, L, SET1,                                            \
             _mm256_mul_##W(y, _mm256_sub_##W(ONE, _mm256_mul_##W(x, x))), ys * (1 - xs * xs))  \
    DF__VROW(df__vrow_sigg_##SUF, T, V, W, L, SET1,                                             \
             _mm256_mul_##W(_mm256_mul_##W(y, x), _mm256_sub_##W(ONE, x)), ys * xs * (1 - xs))
DF__VROWS(f32, float, __m256, ps, 8, _mm256_set1_ps, _mm256_cmp_ps, _mm256_blendv_ps, _mm256_set1_ps(1.0f))
DF__VROWS(f64, double, __m256d, pd, 4, _mm256_set1_pd, _mm256_cmp_pd, _mm256_blendv_pd, _mm256_set1_pd(1.0))
#define DF__VROWSET(SUF) { df__vrow_add_##SUF, df__vrow_sub_##SUF, df__vrow_mul_##SUF, df__vrow_div_##SUF, \
    df__vrow_max_##SUF, df__vrow_min_##SUF, NULL, NULL, NULL, df__vrow_sqd_##SUF, NULL, NULL, NULL, NULL, \
    NULL, NULL, NULL, NULL, df__vrow_relug_##SUF, df__vrow_tanhg_##SUF, df__vrow_sigg_##SUF, NULL, NULL, NULL }
static const df__row_fn df__vrows_f32[DF__B_COUNT] = DF__VROWSET(f32);
static const df__row_fn df__vrows_f64[DF__B_COUNT] = DF__VROWSET(f64);
#endif

static df__row_fn df__binary_row(int code, df_dtype t) {
#ifdef DF__X86
    if ((t == DF_FLOAT || t == DF_DOUBLE) && df__vec_isa() == DF__ISA_AVX2) {
        df__row_fn v = (t == DF_FLOAT ? df__vrows_f32 : df__vrows_f64)[code];
        if (v) return v;
    }
#endif
    switch (t) {
    case DF_FLOAT: return df__rows_f32[code];
    case DF_DOUBLE: return df__rows_f64[code];
    case DF_INT32: return df__rows_i32[code];
    case DF_INT64: return df__rows_i64[code];
    case DF_BOOL:
        return code == DF__B_AND ? df__row_and_b : code == DF__B_OR ? df__row_or_b
             : code == DF__B_EQUAL ? df__row_eq_b : code == DF__B_NOT_EQUAL ? df__row_ne_b : NULL;
    default: return NULL;
    }
}

static int df__any_zero_int(const df_tensor *t) {
    for (int64_t i = 0; i < t->n; i++) if (df__int_at(t, i) == 0) return 1;
    return 0;
}

/* The intra-op pool (below): elementwise kernels split big tensors over it. */
struct df__ipool;
static int df__ipool_threads(struct df__ipool *p);
static void df__parallel_for(struct df__ipool *p, int64_t len, int64_t unit, int parts,
                             void (*fn)(void *arg, int64_t lo, int64_t hi), void *arg);
/* A row function over n elements, in pieces on the intra-op threads when the tensors are big
   enough (past about 1 MB) for the hand-off to pay. sa, sb: 1 to step through a, b; 0 to
   repeat their first element. Elementwise, so the pieces give the same bits as one call. */
typedef struct df__row_job {
    df__row_fn row;
    char *o;
    const char *a, *b;
    size_t es, eo;
    int sa, sb;
} df__row_job;
static void df__row_share(void *arg, int64_t lo, int64_t hi) {
    const df__row_job *j = (const df__row_job *)arg;
    j->row(j->o + (size_t)lo * j->eo, j->a + (size_t)lo * j->es * (size_t)j->sa, j->b + (size_t)lo * j->es * (size_t)j->sb,
           hi - lo, j->sa, j->sb);
}
static void df__row_run(df__kctx *c, df__row_fn row, char *o, const char *a, const char *b, int64_t n, int sa, int sb,
                        size_t es, size_t eo) {
    if ((size_t)n * es < ((size_t)1 << 20)) { row(o, a, b, n, sa, sb); return; }
    df__row_job j = {row, o, a, b, es, eo, sa, sb};
    df__parallel_for(c->ipool, n, 1024, df__ipool_threads(c->ipool), df__row_share, &j);
}
static void df__k_binary(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int code = c->node->op->code;
    df__row_fn row = df__binary_row(code, a->dtype);
    if (!row) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(a->dtype)); return; }
    if (a->rank == 0 && b->rank == 0 && code != DF__B_DIV && code != DF__B_FLOORMOD && code != DF__B_FLOORDIV &&
        code != DF__B_POW) {                          /* scalars: the common case in loops */
        df_tensor *o = df__k_alloc(c, 0, code >= DF__B_LESS && code <= DF__B_NOT_EQUAL ? DF_BOOL : a->dtype, 0, NULL);
        if (o) row(o->data, a->data, b->data, 1, 1, 1);
        return;
    }
    df__bcast bc;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                  df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
        return;
    }
    int is_int = a->dtype == DF_INT32 || a->dtype == DF_INT64;
    if (is_int && (code == DF__B_DIV || code == DF__B_FLOORMOD || code == DF__B_FLOORDIV) && df__any_zero_int(b)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Integer division by zero in %s", c->node->op->name);
        return;
    }
    if (is_int && code == DF__B_POW)
        for (int64_t i = 0; i < b->n; i++)
            if (df__int_at(b, i) < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Integers to negative integer powers are not allowed"); return; }
    df_dtype ot = code >= DF__B_LESS && code <= DF__B_NOT_EQUAL ? DF_BOOL : a->dtype;
    /* (a and b stay readable: a forwarded input is the output, the other one is untouched) */
    df_tensor *o = df__k_reuse_or_alloc(c, 0, a->n == b->n || b->n == 1 ? 0 : 1, ot, bc.rank, bc.dims);
    if (!o || o->n == 0) return;
    size_t es = df_dtype_size(a->dtype), eo = df_dtype_size(ot);
    const char *pa = (const char *)a->data, *pb = (const char *)b->data;
    char *po = (char *)o->data;
    if (a->n == o->n && b->n == o->n) { df__row_run(c, row, po, pa, pb, o->n, 1, 1, es, eo); return; }
    if (b->n == 1 && a->n == o->n) { df__row_run(c, row, po, pa, pb, o->n, 1, 0, es, eo); return; }
    if (a->n == 1 && b->n == o->n) { df__row_run(c, row, po, pa, pb, o->n, 0, 1, es, eo); return; }
    /* general: odometer over all dims but the last */
    int r = bc.rank;
    int64_t inner = bc.dims[r - 1], idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;
    int sa = bc.sa[r - 1] != 0, sb = bc.sb[r - 1] != 0;
    for (int64_t done = 0; done < o->n; done += inner) {
        row(po + (size_t)done * eo, pa + (size_t)oa * es, pb + (size_t)ob * es, inner, sa, sb);
        for (int d = r - 2; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* ---- elementwise unary ---- */
enum { DF__U_NEG, DF__U_SQUARE, DF__U_SQRT, DF__U_RSQRT, DF__U_EXP, DF__U_LOG, DF__U_TANH,
       DF__U_SIGMOID, DF__U_RELU, DF__U_ABS, DF__U_SIGN, DF__U_NOT, DF__U_RECIPROCAL, DF__U_FLOOR };

#define DF__UNARY_LOOP(T, EXPR) { const T *a = (const T *)x->data; T *o = (T *)y->data; \
    for (int64_t i = 0; i < n; i++) { T v = a[i]; o[i] = (T)(EXPR); } }
#define DF__UNARY_FLOAT(T, SQRT, EXP, LOG, TANH, FLOOR)                                      \
    switch (code) {                                                                        \
    case DF__U_NEG: DF__UNARY_LOOP(T, -v) break;                                           \
    case DF__U_SQUARE: DF__UNARY_LOOP(T, v * v) break;                                     \
    case DF__U_SQRT: DF__UNARY_LOOP(T, SQRT(v)) break;                                     \
    case DF__U_RSQRT: DF__UNARY_LOOP(T, (T)1 / SQRT(v)) break;                             \
    case DF__U_EXP: DF__UNARY_LOOP(T, EXP(v)) break;                                       \
    case DF__U_LOG: DF__UNARY_LOOP(T, LOG(v)) break;                                       \
    case DF__U_TANH: DF__UNARY_LOOP(T, TANH(v)) break;                                     \
    case DF__U_SIGMOID: DF__UNARY_LOOP(T, v >= 0 ? (T)1 / ((T)1 + EXP(-v)) : EXP(v) / ((T)1 + EXP(v))) break; \
    case DF__U_RELU: DF__UNARY_LOOP(T, v > 0 ? v : (v != v ? v : (T)0)) break;             \
    case DF__U_ABS: DF__UNARY_LOOP(T, v < 0 ? -v : v) break;                               \
    case DF__U_SIGN: DF__UNARY_LOOP(T, v > 0 ? (T)1 : v < 0 ? (T)-1 : v) break;            \
    case DF__U_RECIPROCAL: DF__UNARY_LOOP(T, (T)1 / v) break;                              \
    case DF__U_FLOOR: DF__UNARY_LOOP(T, FLOOR(v)) break;                                   \
    default: ok = 0;                                                                       \
    }
#define DF__UNARY_INT(T, U)                                                                \
    switch (code) {                                                                        \
    case DF__U_NEG: DF__UNARY_LOOP(T, (T)(0 - (U)v)) break;                                \
    case DF__U_SQUARE: DF__UNARY_LOOP(T, (T)((U)v * (U)v)) break;                          \
    case DF__U_RELU: DF__UNARY_LOOP(T, v > 0 ? v : 0) break;                               \
    case DF__U_ABS: DF__UNARY_LOOP(T, v < 0 ? (T)(0 - (U)v) : v) break;                    \
    case DF__U_SIGN: DF__UNARY_LOOP(T, v > 0 ? 1 : v < 0 ? -1 : 0) break;                  \
    default: ok = 0;                                                                       \
    }

#ifdef DF__X86
/* AVX2 unary ops for float32/float64 with the plain loops' exact results; 0 if not handled
   (exp, log, tanh, sigmoid: the plain loops). */
#define DF__VUNARY(SUF, T, V, W, L, SET1, CMP, BLEND, SQRT, FLOOR)                                              \
    DF__TARGET_AVX2 static int df__vunary_##SUF(int code, const T *a, T *o, int64_t n) {          \
        const V zero = _mm256_setzero_##W(), one = SET1((T)1);                                    \
        int64_t i = 0;                                                                            \
        switch (code) {                                                                           \
        case DF__U_NEG: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_xor_##W(SET1((T)-0.0), _mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = -a[i]; } \
            return 1;                                            \
        case DF__U_SQUARE: for (; i + L <= n; i += L) { V v = _mm256_loadu_##W(a + i); _mm256_storeu_##W(o + i, _mm256_mul_##W(v, v)); } \
            for (; i < n; i++) { o[i] = a[i] * a[i]; } \
            return 1;                                      \
        case DF__U_SQRT: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_sqrt_##W(_mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = SQRT(a[i]); } \
            return 1;                                                                                \
        case DF__U_RSQRT: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_div_##W(one, _mm256_sqrt_##W(_mm256_loadu_##W(a + i)))); \
            for (; i < n; i++) { o[i] = (T)1 / SQRT(a[i]); } \
            return 1;                                                                                \
        case DF__U_RECIPROCAL: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_div_##W(one, _mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = (T)1 / a[i]; } \
            return 1;                                      \
        case DF__U_FLOOR: for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_floor_##W(_mm256_loadu_##W(a + i))); \
            for (; i < n; i++) { o[i] = FLOOR(a[i]); } \
            return 1;                                                                                \
        case DF__U_RELU: for (; i + L <= n; i += L) { V v = _mm256_loadu_##W(a + i);             \
                _mm256_storeu_##W(o + i, BLEND(zero, v, _mm256_or_##W(CMP(v, zero, _CMP_GT_OQ), CMP(v, v, _CMP_UNORD_Q)))); } \
            for (; i < n; i++) { T v = a[i]; o[i] = v > 0 ? v : (v != v ? v : (T)0); } \
            return 1;  \
        case DF__U_ABS: for (; i + L <= n; i += L) { V v = _mm256_loadu_##W(a + i);              \
                _mm256_storeu_##W(o + i, BLEND(v, _mm256_sub_##W(zero, v), CMP(v, zero, _CMP_LT_OQ))); } \
            for (; i < n; i++) { T v = a[i]; o[i] = v < 0 ? -v : v; } \
            return 1;                   \
        default: return 0; \
        } \
    }
DF__VUNARY(f32, float, __m256, ps, 8, _mm256_set1_ps, _mm256_cmp_ps, _mm256_blendv_ps, sqrtf, floorf)
DF__VUNARY(f64, double, __m256d, pd, 4, _mm256_set1_pd, _mm256_cmp_pd, _mm256_blendv_pd, sqrt, floor)
#endif

#ifdef DF__X86
/* ---- float32 exp, log, tanh and sigmoid on 8 lanes (AVX2+FMA) ----
   Written here, within a few units in the last place of the correctly rounded result:
   exp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so n ln2 is exact), e^r from its
   Taylor series to r^7 (the next term is below 2^-28 there), times 2^n built in two halves so
   results near overflow and subnormal ones come out right. log: x = m 2^e with m in
   [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m-1)/(m+1), |s| <= 0.172, series to s^9.
   tanh: the odd Taylor series to x^15 below |x| = 0.55 (relative error < 1e-7 there), else
   sign(x) (1 - 2 / (e^(2|x|) + 1)). sigmoid: 1 / (1 + e^-x), or e^x / (1 + e^x) for x < 0 (so
   e^-x cannot overflow while the result is still above zero). NaN in gives NaN out. */
DF__TARGET_AVX2 static inline __m256 df__v8_exp(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-110.0f), hi = _mm256_set1_ps(90.0f);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606820309417232e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
DF__TARGET_AVX2 static inline __m256 df__v8_log(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    /* subnormals: scaled by 2^23 first */
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), tiny);
    __m256i bits = _mm256_castps_si256(xs);
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127));
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
    __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
    __m256 ef = _mm256_add_ps(_mm256_cvtepi32_ps(e), _mm256_and_ps(big, one));
    ef = _mm256_sub_ps(ef, _mm256_and_ps(tiny, _mm256_set1_ps(23.0f)));
    /* with f = m - 1 (exact) and R = 2 atanh(s)/s - 2: log m = f - (f^2/2 - s (f^2/2 + R)) */
    __m256 f = _mm256_sub_ps(m, one), s = _mm256_div_ps(f, _mm256_add_ps(f, _mm256_set1_ps(2.0f))), s2 = _mm256_mul_ps(s, s);
    __m256 R = _mm256_set1_ps(2.0f / 9);
    R = _mm256_fmadd_ps(R, s2, _mm256_set1_ps(2.0f / 7));
    R = _mm256_fmadd_ps(R, s2, _mm256_set1_ps(2.0f / 5));
    R = _mm256_fmadd_ps(R, s2, _mm256_set1_ps(2.0f / 3));
    R = _mm256_mul_ps(R, s2);
    __m256 hf = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_mul_ps(f, f));
    __m256 lm = _mm256_sub_ps(f, _mm256_fnmadd_ps(s, _mm256_add_ps(hf, R), hf));
    __m256 y = _mm256_fmadd_ps(ef, _mm256_set1_ps(0.693145751953125f), _mm256_fmadd_ps(ef, _mm256_set1_ps(1.428606820309417232e-6f), lm));
    const __m256 zero = _mm256_setzero_ps(), inf = _mm256_set1_ps(INFINITY);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(-INFINITY), _mm256_cmp_ps(x, zero, _CMP_EQ_OQ));
    y = _mm256_blendv_ps(y, inf, _mm256_cmp_ps(x, inf, _CMP_EQ_OQ));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(NAN), _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
DF__TARGET_AVX2 static inline __m256 df__v8_tanh(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    __m256 ax = _mm256_andnot_ps(sign, x), x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-0.00145583438705131827f);          /* -929569/638512875 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.00359212803657248102f));   /* 21844/6081075 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.00886323552990219656f));  /* -1382/155925 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.0218694885361552028f));    /* 62/2835 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.0539682539682539683f));   /* -17/315 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.133333333333333333f));     /* 2/15 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.333333333333333333f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x);
    __m256 e = df__v8_exp(_mm256_add_ps(ax, ax));
    __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    large = _mm256_or_ps(large, _mm256_and_ps(x, sign));
    __m256 y = _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.55f), _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
DF__TARGET_AVX2 static inline __m256 df__v8_sigmoid(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);        /* e^-|x| never overflows */
    __m256 e = df__v8_exp(_mm256_or_ps(x, _mm256_set1_ps(-0.0f)));
    __m256 y = _mm256_div_ps(_mm256_blendv_ps(one, e, neg), _mm256_add_ps(one, e));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
/* o[i] = f(a[i]) for Exp, Log, Tanh, Sigmoid (float32); 0 for other ops. The tail goes
   through the same vector code on a padded copy, so every element gets the same function. */
DF__TARGET_AVX2 static int df__vtrans_f32(int code, const float *a, float *o, int64_t n) {
    if (code != DF__U_EXP && code != DF__U_LOG && code != DF__U_TANH && code != DF__U_SIGMOID) return 0;
    for (int64_t i = 0; i < n; i += 8) {
        float in[8], out[8];
        int full = i + 8 <= n;
        __m256 v;
        if (full) v = _mm256_loadu_ps(a + i);
        else { memset(in, 0, sizeof in); memcpy(in, a + i, (size_t)(n - i) * sizeof(float)); v = _mm256_loadu_ps(in); }
        __m256 y = code == DF__U_EXP ? df__v8_exp(v) : code == DF__U_LOG ? df__v8_log(v)
                 : code == DF__U_TANH ? df__v8_tanh(v) : df__v8_sigmoid(v);
        if (full) _mm256_storeu_ps(o + i, y);
        else { _mm256_storeu_ps(out, y); memcpy(o + i, out, (size_t)(n - i) * sizeof(float)); }
    }
    return 1;
}
#endif

#ifdef DF__X86
typedef struct df__vtrans_job { int code; const float *a; float *o; } df__vtrans_job;
static void df__vtrans_share(void *arg, int64_t lo, int64_t hi) {
    const df__vtrans_job *j = (const df__vtrans_job *)arg;
    df__vtrans_f32(j->code, j->a + lo, j->o + lo, hi - lo);
}
/* The memory-bound vector ops (Neg, Relu, Abs...) on a piece, float32 or float64. */
typedef struct df__vunary_job { int code, dbl; const char *a; char *o; } df__vunary_job;
static void df__vunary_share(void *arg, int64_t lo, int64_t hi) {
    const df__vunary_job *j = (const df__vunary_job *)arg;
    if (j->dbl) df__vunary_f64(j->code, (const double *)j->a + lo, (double *)j->o + lo, hi - lo);
    else df__vunary_f32(j->code, (const float *)j->a + lo, (float *)j->o + lo, hi - lo);
}
#endif
static void df__k_unary(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int code = c->node->op->code, ok = 1;
    df_tensor *y = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (!y) return;
    int64_t n = x->n;
#ifdef DF__X86
    if (x->dtype == DF_FLOAT && df__vec_isa() == DF__ISA_AVX2 && n >= (1 << 16) &&
        (code == DF__U_EXP || code == DF__U_LOG || code == DF__U_TANH || code == DF__U_SIGMOID)) {
        /* compute-bound: shared between the intra-op threads (pieces of whole vectors) */
        df__vtrans_job j = {code, (const float *)x->data, (float *)y->data};
        df__parallel_for(c->ipool, n, 4096, df__ipool_threads(c->ipool), df__vtrans_share, &j);
        return;
    }
    if ((x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE) && df__vec_isa() == DF__ISA_AVX2 &&
        (size_t)n * df_dtype_size(x->dtype) >= ((size_t)1 << 20) &&
        (x->dtype == DF_FLOAT ? df__vunary_f32(code, NULL, NULL, 0) : df__vunary_f64(code, NULL, NULL, 0))) {
        /* memory-bound, past 1 MB: pieces on the intra-op threads (same bits as one call) */
        df__vunary_job j = {code, x->dtype == DF_DOUBLE, (const char *)x->data, (char *)y->data};
        df__parallel_for(c->ipool, n, 1024, df__ipool_threads(c->ipool), df__vunary_share, &j);
        return;
    }
    if ((x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE) && df__vec_isa() == DF__ISA_AVX2 &&
        (x->dtype == DF_FLOAT ? df__vunary_f32(code, (const float *)x->data, (float *)y->data, n) ||
                                df__vtrans_f32(code, (const float *)x->data, (float *)y->data, n)
                              : df__vunary_f64(code, (const double *)x->data, (double *)y->data, n)))
        return;
#endif
    switch (x->dtype) {
    case DF_FLOAT: DF__UNARY_FLOAT(float, sqrtf, expf, logf, tanhf, floorf) break;
    case DF_DOUBLE: DF__UNARY_FLOAT(double, sqrt, exp, log, tanh, floor) break;
    case DF_INT32: DF__UNARY_INT(int32_t, uint32_t) break;
    case DF_INT64: DF__UNARY_INT(int64_t, uint64_t) break;
    case DF_BOOL:
        if (code == DF__U_NOT) DF__UNARY_LOOP(uint8_t, !v)
        else ok = 0;
        break;
    default: ok = 0;
    }
    if (!ok) DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(x->dtype));
}

/* ---- Cast ---- */
static void df__set_from_f64(df_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case DF_FLOAT: ((float *)p)[i] = (float)v; break;
    case DF_DOUBLE: ((double *)p)[i] = v; break;
    case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)v); break;
    case DF_BFLOAT16: ((uint16_t *)p)[i] = df_float_to_bfloat16((float)v); break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}
/* Float to integer conversion that saturates and maps NaN to 0 instead of undefined behaviour. */
static int64_t df__f2i(double v, int64_t lo, int64_t hi) {
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    return (int64_t)v;
}
static void df__set_from_i64(df_dtype t, void *p, int64_t i, int64_t v) {
    switch (t) {
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case DF_INT64: ((int64_t *)p)[i] = v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case DF_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case DF_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case DF_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case DF_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case DF_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: df__set_from_f64(t, p, i, (double)v);
    }
}
static int df__is_integer_type(df_dtype t) {
    return t == DF_INT32 || t == DF_INT64 || t == DF_UINT8 || t == DF_INT8 || t == DF_INT16 ||
           t == DF_UINT16 || t == DF_UINT32 || t == DF_UINT64;
}
static int64_t df__get_i64(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return ((const int64_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    case DF_INT16: return ((const int16_t *)p)[i];
    case DF_UINT16: return ((const uint16_t *)p)[i];
    case DF_UINT32: return ((const uint32_t *)p)[i];
    case DF_UINT64: return (int64_t)((const uint64_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return df__f2i(df__get_f64(t, p, i), INT64_MIN, INT64_MAX);
    }
}
static void df__k_cast(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_dtype to = df__attr_type(c->node, "DstT");
    if (to == x->dtype) { df__k_forward(c, 0, 0); return; }
    df_tensor *y = df__k_alloc_like(c, 0, to, x);
    if (!y) return;
    int from_int = df__is_integer_type(x->dtype) || x->dtype == DF_BOOL;
    for (int64_t i = 0; i < x->n; i++) {
        if (df__is_integer_type(to)) {
            int64_t lo = to == DF_INT32 ? INT32_MIN : to == DF_INT64 ? INT64_MIN : 0;
            int64_t hi = to == DF_INT32 ? INT32_MAX : INT64_MAX;
            int64_t v = from_int ? df__get_i64(x->dtype, x->data, i) : df__f2i(df__get_f64(x->dtype, x->data, i), lo, hi);
            df__set_from_i64(to, y->data, i, v);
        } else if (from_int && to != DF_BOOL) {
            df__set_from_f64(to, y->data, i, (double)df__get_i64(x->dtype, x->data, i));
        } else {
            df__set_from_f64(to, y->data, i, df__get_f64(x->dtype, x->data, i));
        }
    }
}

/* ---- pass-through, constants, control flow ---- */
static void df__k_identity(df__kctx *c) { for (int i = 0; i < c->n_out; i++) df__k_forward(c, i, i); }
static void df__k_noop(df__kctx *c) { DF__UNUSED(c); }
static void df__k_const(df__kctx *c) {
    const df__attr *a = df__node_attr(c->node, "value");
    c->out[0] = df_tensor_retain(a->u.tensor);
}
static void df__k_placeholder(df__kctx *c) {
    const df__attr *s = df__node_attr(c->node, "shape");
    char shp[128];
    df__shape_str(s ? s->u.shape.rank : -1, s ? s->u.shape.dims : NULL, shp, sizeof shp);
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "You must feed a value for placeholder tensor '%s' with dtype %s "
              "and shape %s", c->node->name, df_dtype_name(df__attr_type(c->node, "dtype")), shp);
}
static void df__k_switch(df__kctx *c) {
    const df_tensor *p = c->in[1];
    if (p->rank != 0 || p->dtype != DF_BOOL) {
        char shp[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "The second input must be a scalar bool, but it has type %s "
                  "and shape %s", df_dtype_name(p->dtype), df__dims_str(p->rank, p->dims, shp, 96));
        return;
    }
    df__k_forward(c, *(const uint8_t *)p->data ? 1 : 0, 0);
}
static void df__k_merge(df__kctx *c) {
    for (int i = 0; i < c->n_in; i++) {
        if (!c->in[i]) continue;
        df__k_forward(c, 0, i);
        if (c->need & 2) {
            df_tensor *vi = df__k_alloc(c, 1, DF_INT32, 0, NULL);
            if (vi) *(int32_t *)vi->data = i;
        }
        return;
    }
    DF__KFAIL(c, DF_INTERNAL, "Merge ran with no live input");
}
static void df__k_loop_cond(df__kctx *c) {
    const df_tensor *p = c->in[0];
    if (p->rank != 0 || p->dtype != DF_BOOL) {
        char shp[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "LoopCond's input must be a scalar bool, got %s %s",
                  df_dtype_name(p->dtype), df__dims_str(p->rank, p->dims, shp, 96));
        return;
    }
    df__k_forward(c, 0, 0);
}

/* ---- the intra-op pool: kernels split big work over it (df__parallel_for) ----
   One job at a time: workers wait for a new generation, take parts until none is left; the
   caller takes parts too and waits for the last. A kernel that finds the pool busy (another
   kernel's job) runs its work itself, so nothing waits on anything but its own parts. */
typedef void (*df__par_fn)(void *arg, int64_t lo, int64_t hi);
#ifndef DF_NO_THREADS
typedef struct df__ipool {
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    pthread_t *threads;
    int n_threads, shutdown, busy;
    uint64_t gen;
    df__par_fn fn;
    void *arg;
    int64_t len, chunk;
    int parts, next, finished;
} df__ipool;
/* Takes and runs parts of the current job; returns with the lock held. */
static void df__ipool_work(df__ipool *p) {
    while (p->next < p->parts) {
        int i = p->next++;
        int64_t lo = (int64_t)i * p->chunk, hi = DF__MIN(p->len, lo + p->chunk);
        df__par_fn fn = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        if (lo < hi) fn(arg, lo, hi);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->parts) pthread_cond_broadcast(&p->done_cv);
    }
}
static void *df__ipool_main(void *arg) {
    df__ipool *p = (df__ipool *)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->shutdown && p->gen == seen) pthread_cond_wait(&p->cv, &p->mu);
        if (p->shutdown) break;
        seen = p->gen;
        df__ipool_work(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}
static df__ipool *df__ipool_new(int n_threads) {
    df__ipool *p = (df__ipool *)DF_MALLOC(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    if (!(p->threads = (pthread_t *)DF_MALLOC((size_t)DF__MAX(n_threads, 1) * sizeof(pthread_t)))) { DF_FREE(p); return NULL; }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (int i = 0; i < n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, df__ipool_main, p) != 0) break;
        p->n_threads++;
    }
    return p;
}
static void df__ipool_free(df__ipool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->done_cv);
    DF_FREE(p->threads);
    DF_FREE(p);
}
static int df__ipool_threads(df__ipool *p) { return p ? p->n_threads + 1 : 1; }
/* fn over [0, len) in at most `parts` pieces whose bounds are multiples of `unit`. */
static void df__parallel_for(df__ipool *p, int64_t len, int64_t unit, int parts, df__par_fn fn, void *arg) {
    if (unit < 1) unit = 1;
    int64_t units = (len + unit - 1) / unit;
    if (parts > units) parts = (int)units;
    if (!p || parts <= 1) { if (len > 0) fn(arg, 0, len); return; }
    pthread_mutex_lock(&p->mu);
    if (p->busy) { pthread_mutex_unlock(&p->mu); fn(arg, 0, len); return; }
    p->busy = 1;
    p->fn = fn; p->arg = arg; p->len = len;
    p->chunk = (units + parts - 1) / parts * unit;
    p->parts = parts; p->next = 0; p->finished = 0;
    p->gen++;
    pthread_cond_broadcast(&p->cv);
    df__ipool_work(p);
    while (p->finished < p->parts) pthread_cond_wait(&p->done_cv, &p->mu);
    p->busy = 0;
    pthread_mutex_unlock(&p->mu);
}
#else
typedef struct df__ipool { int unused; } df__ipool;
static int df__ipool_threads(df__ipool *p) { DF__UNUSED(p); return 1; }
static void df__parallel_for(df__ipool *p, int64_t len, int64_t unit, int parts, df__par_fn fn, void *arg) {
    DF__UNUSED(p); DF__UNUSED(unit); DF__UNUSED(parts);
    if (len > 0) fn(arg, 0, len);
}
#endif

/* ---- GEMM: C[m,n] = op(A)[m,k] op(B)[k,n], float32 and float64 ----
   BLIS's five loops: B panels of KC x NC packed into NR-wide slivers (L3/L1), A blocks of
   MC x KC packed into MR-tall slivers (L2), and a micro-kernel that keeps an MR x NR block of C
   in registers. Transposes are read by the packing, never copied first. Micro-kernels: AVX-512,
   AVX2+FMA and a portable one, chosen at run time from the CPU's features (df_set_kernel_isa forces one).
   Small products skip packing: the direct kernel reads A and B where they are. Big products are
   split over the session's intra-op threads by rows or columns of C. */
/* Blocking per (precision, isa): MR x NR registers, KC x NR of B in L1, MC x KC of A in L2. */
/* Block sizes (rows of A, depth, columns of B per packed block) may be set when compiling, for
   tuning on a new machine: -DDF_GEMM_F32_AVX512_BLOCKS="240,256,4064" and likewise for F64 and
   AVX2. The micro-tile sizes (mr, nr) belong to the kernels and are fixed. */
#ifndef DF_GEMM_F32_AVX2_BLOCKS
#define DF_GEMM_F32_AVX2_BLOCKS 240, 256, 4080
#endif
#ifndef DF_GEMM_F32_AVX512_BLOCKS
#define DF_GEMM_F32_AVX512_BLOCKS 240, 256, 4064
#endif
#ifndef DF_GEMM_F64_AVX2_BLOCKS
#define DF_GEMM_F64_AVX2_BLOCKS 72, 256, 2040
#endif
#ifndef DF_GEMM_F64_AVX512_BLOCKS
#define DF_GEMM_F64_AVX512_BLOCKS 120, 256, 2032
#endif
typedef struct df__gemm_cfg { int mr, nr, mc, kc, nc; } df__gemm_cfg;
static const df__gemm_cfg df__gemm_cfgs[2][3] = {
    /* float:  portable, avx2, avx512 */
    {{4, 8, 128, 256, 2048}, {6, 16, DF_GEMM_F32_AVX2_BLOCKS}, {6, 32, DF_GEMM_F32_AVX512_BLOCKS}},
    /* double: portable, avx2, avx512 */
    {{4, 4, 96, 256, 1024}, {6, 8, DF_GEMM_F64_AVX2_BLOCKS}, {6, 16, DF_GEMM_F64_AVX512_BLOCKS}},
};

/* ---- packing (zero-padded to full slivers) ---- */
#define DF__PACK(T)                                                                               \
    /* A block rows [i0, i0+mc), cols [p0, p0+kc) of op(A) into MR-tall k-major slivers */        \
    static void df__pack_a_##T(const T *a, int64_t lda, int ta, int64_t i0, int64_t mc, int64_t p0, \
                               int64_t kc, int mr, T *dst) {                                      \
        for (int64_t i = 0; i < mc; i += mr) {                                                    \
            int64_t rows = DF__MIN(mr, mc - i);                                                   \
            for (int64_t r = 0; r < mr; r++) {                                                    \
                T *d = dst + r;                                                                   \
                if (r >= rows) { for (int64_t p = 0; p < kc; p++, d += mr) *d = 0; continue; }    \
                if (!ta) { const T *s = a + (i0 + i + r) * lda + p0;                              \
                           for (int64_t p = 0; p < kc; p++, d += mr) *d = s[p]; }                 \
                else { const T *s = a + p0 * lda + i0 + i + r;                                    \
                       for (int64_t p = 0; p < kc; p++, d += mr, s += lda) *d = *s; }             \
            }                                                                                     \
            dst += (size_t)mr * (size_t)kc;                                                       \
        }                                                                                         \
    }                                                                                             \
    /* B panel rows [p0, p0+kc), cols [j0, j0+nc) of op(B) into NR-wide k-major slivers */        \
    static void df__pack_b_##T(const T *b, int64_t ldb, int tb, int64_t p0, int64_t kc, int64_t j0, \
                               int64_t nc, int nr, T *dst) {                                      \
        for (int64_t j = 0; j < nc; j += nr) {                                                    \
            int64_t cols = DF__MIN(nr, nc - j);                                                   \
            if (!tb) {                                                                            \
                for (int64_t p = 0; p < kc; p++) {                                                \
                    const T *s = b + (p0 + p) * ldb + j0 + j;                                     \
                    T *d = dst + p * nr;                                                          \
                    int64_t c = 0;                                                                \
                    for (; c < cols; c++) d[c] = s[c];                                            \
                    for (; c < nr; c++) d[c] = 0;                                                 \
                }                                                                                 \
            } else {                                                                              \
                for (int64_t c = 0; c < nr; c++) {                                                \
                    T *d = dst + c;                                                               \
                    if (c >= cols) { for (int64_t p = 0; p < kc; p++, d += nr) *d = 0; continue; } \
                    const T *s = b + (j0 + j + c) * ldb + p0;                                     \
                    for (int64_t p = 0; p < kc; p++, d += nr) *d = s[p];                          \
                }                                                                                 \
            }                                                                                     \
            dst += (size_t)nr * (size_t)kc;                                                       \
        }                                                                                         \
    }
DF__PACK(float)
DF__PACK(double)

/* ---- micro-kernels: C[mr x nr] (= or +=) Ap(mr x kc) Bp(kc x nr), row stride ldc ---- */
#define DF__UKR_PORTABLE(T, MR, NR)                                                               \
    static void df__ukr_##T##_portable(int64_t kc, const T *a, int64_t rsa, int64_t csa, const T *b, \
                                       int64_t ldb, T *c, int64_t ldc, int acc) {                 \
        T t[MR][NR];                                                                              \
        for (int r = 0; r < MR; r++) for (int j = 0; j < NR; j++) t[r][j] = 0;                     \
        for (int64_t p = 0; p < kc; p++, a += csa, b += ldb)                                      \
            for (int r = 0; r < MR; r++) { T av = a[r * rsa]; for (int j = 0; j < NR; j++) t[r][j] += av * b[j]; } \
        for (int r = 0; r < MR; r++)                                                              \
            for (int j = 0; j < NR; j++) c[r * ldc + j] = acc ? c[r * ldc + j] + t[r][j] : t[r][j]; \
    }
DF__UKR_PORTABLE(float, 4, 8)
DF__UKR_PORTABLE(double, 4, 4)

#ifdef DF__X86
/* Writes (or adds into) one row of the tile: two vectors. */
#define DF__UKR_STORE(T, V, W, L)                                                                 \
    DF__TARGET_AVX2 static inline void df__ukr_store_##T(T *cr, V lo, V hi, int acc) {            \
        if (acc) { lo = _mm256_add_##W(lo, _mm256_loadu_##W(cr)); hi = _mm256_add_##W(hi, _mm256_loadu_##W(cr + L)); } \
        _mm256_storeu_##W(cr, lo);                                                                \
        _mm256_storeu_##W(cr + L, hi);                                                            \
    }
DF__UKR_STORE(float, __m256, ps, 8)
DF__UKR_STORE(double, __m256d, pd, 4)
/* The 6 x 2-vector register tile shared by the AVX2 kernels: accumulators c00..c51, one k step
   (row r gets broadcast(*Pr) times the two vectors b0, b1 of B), and the stores of the rows. */
#define DF__TILE_ZERO(V, W)                                                                       \
    V c00 = _mm256_setzero_##W(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;          \
    V c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#define DF__TILE_STEP(V, W, BC, P0, P1, P2, P3, P4, P5)                                           \
    {                                                                                             \
        V av;                                                                                     \
        av = BC(P0); c00 = _mm256_fmadd_##W(av, b0, c00); c01 = _mm256_fmadd_##W(av, b1, c01);    \
        av = BC(P1); c10 = _mm256_fmadd_##W(av, b0, c10); c11 = _mm256_fmadd_##W(av, b1, c11);    \
        av = BC(P2); c20 = _mm256_fmadd_##W(av, b0, c20); c21 = _mm256_fmadd_##W(av, b1, c21);    \
        av = BC(P3); c30 = _mm256_fmadd_##W(av, b0, c30); c31 = _mm256_fmadd_##W(av, b1, c31);    \
        av = BC(P4); c40 = _mm256_fmadd_##W(av, b0, c40); c41 = _mm256_fmadd_##W(av, b1, c41);    \
        av = BC(P5); c50 = _mm256_fmadd_##W(av, b0, c50); c51 = _mm256_fmadd_##W(av, b1, c51);    \
    }
#define DF__TILE_STORE(T, R0, R1, R2, R3, R4, R5)                                                 \
    df__ukr_store_##T(R0, c00, c01, acc); df__ukr_store_##T(R1, c10, c11, acc);                   \
    df__ukr_store_##T(R2, c20, c21, acc); df__ukr_store_##T(R3, c30, c31, acc);                   \
    df__ukr_store_##T(R4, c40, c41, acc); df__ukr_store_##T(R5, c50, c51, acc);
/* AVX2+FMA: 6 rows x 2 vectors of C in 12 registers; each k step loads 2 vectors of B and
   broadcasts 6 elements of A. (float: 6x16, double: 6x8) */
#define DF__UKR_AVX2(T, V, W, L, BC)                                                              \
    DF__TARGET_AVX2 static void df__ukr_##T##_avx2(int64_t kc, const T *a, int64_t rsa, int64_t csa, const T *b, \
                                                   int64_t ldb, T *c, int64_t ldc, int acc) {     \
        const int64_t r2 = 2 * rsa, r3 = 3 * rsa, r4 = 4 * rsa, r5 = 5 * rsa;                     \
        for (int r = 0; r < 6; r++) _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);       \
        DF__TILE_ZERO(V, W)                                                                       \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, a += csa, b += ldb) {                                    \
            V b0 = _mm256_loadu_##W(b), b1 = _mm256_loadu_##W(b + L);                             \
            DF__TILE_STEP(V, W, BC, a, a + rsa, a + r2, a + r3, a + r4, a + r5)                   \
        }                                                                                         \
        DF__TILE_STORE(T, c, c + ldc, c + 2 * ldc, c + 3 * ldc, c + 4 * ldc, c + 5 * ldc)         \
    }
DF__UKR_AVX2(float, __m256, ps, 8, _mm256_broadcast_ss)
DF__UKR_AVX2(double, __m256d, pd, 4, _mm256_broadcast_sd)
/* AVX-512: the same 6 rows x 2 vectors, each vector twice as wide (float: 6x32, double: 6x16). */
#define DF__UKR_AVX512(T, V, W, L)                                                                \
    DF__TARGET_AVX512 static inline void df__ukr512_store_##T(T *cr, V lo, V hi, int acc) {       \
        if (acc) { lo = DF__Z(add_##W)(lo, DF__Z(loadu_##W)(cr)); hi = DF__Z(add_##W)(hi, DF__Z(loadu_##W)(cr + L)); } \
        DF__Z(storeu_##W)(cr, lo);                                                                \
        DF__Z(storeu_##W)(cr + L, hi);                                                            \
    }                                                                                             \
    DF__TARGET_AVX512 static void df__ukr_##T##_avx512(int64_t kc, const T *a, int64_t rsa, int64_t csa, const T *b, \
                                                       int64_t ldb, T *c, int64_t ldc, int acc) { \
        const int64_t r2 = 2 * rsa, r3 = 3 * rsa, r4 = 4 * rsa, r5 = 5 * rsa;                     \
        V c00 = DF__Z(setzero_##W)(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;      \
        V c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;                       \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, a += csa, b += ldb) {                                    \
            V b0 = DF__Z(loadu_##W)(b), b1 = DF__Z(loadu_##W)(b + L), av;                          \
            av = DF__Z(set1_##W)(a[0]); c00 = DF__Z(fmadd_##W)(av, b0, c00); c01 = DF__Z(fmadd_##W)(av, b1, c01); \
            av = DF__Z(set1_##W)(a[rsa]); c10 = DF__Z(fmadd_##W)(av, b0, c10); c11 = DF__Z(fmadd_##W)(av, b1, c11); \
            av = DF__Z(set1_##W)(a[r2]); c20 = DF__Z(fmadd_##W)(av, b0, c20); c21 = DF__Z(fmadd_##W)(av, b1, c21); \
            av = DF__Z(set1_##W)(a[r3]); c30 = DF__Z(fmadd_##W)(av, b0, c30); c31 = DF__Z(fmadd_##W)(av, b1, c31); \
            av = DF__Z(set1_##W)(a[r4]); c40 = DF__Z(fmadd_##W)(av, b0, c40); c41 = DF__Z(fmadd_##W)(av, b1, c41); \
            av = DF__Z(set1_##W)(a[r5]); c50 = DF__Z(fmadd_##W)(av, b0, c50); c51 = DF__Z(fmadd_##W)(av, b1, c51); \
        }                                                                                         \
        df__ukr512_store_##T(c, c00, c01, acc); df__ukr512_store_##T(c + ldc, c10, c11, acc);     \
        df__ukr512_store_##T(c + 2 * ldc, c20, c21, acc); df__ukr512_store_##T(c + 3 * ldc, c30, c31, acc); \
        df__ukr512_store_##T(c + 4 * ldc, c40, c41, acc); df__ukr512_store_##T(c + 5 * ldc, c50, c51, acc); \
    }
DF__UKR_AVX512(float, DF__ZT(), ps, 16)
DF__UKR_AVX512(double, DF__ZT(d), pd, 8)
#endif

/* One thread's share: C rows [m0, m1) x cols [n0, n1). abuf/bbuf: aligned packing buffers. */
#define DF__GEMM_BLOCKED(T)                                                                       \
    static void df__gemm_blocked_##T(const df__gemm_cfg *g, int isa, int64_t m0, int64_t m1, int64_t n0, \
                                     int64_t n1, int64_t k, const T *a, int64_t lda, int ta, const T *b, \
                                     int64_t ldb, int tb, T *c, int64_t ldc, T *abuf, T *bbuf) {  \
        const int mr = g->mr, nr = g->nr;                                                         \
        T tile[16 * 16];                                                                          \
        void (*ukr)(int64_t, const T *, int64_t, int64_t, const T *, int64_t, T *, int64_t, int) = df__ukr_##T##_portable; \
        DF__GEMM_PICK_##T                                                                         \
        for (int64_t jc = n0; jc < n1; jc += g->nc) {                                             \
            int64_t nc = DF__MIN(g->nc, n1 - jc);                                                 \
            for (int64_t pc = 0; pc < k; pc += g->kc) {                                           \
                int64_t kc = DF__MIN(g->kc, k - pc);                                              \
                df__pack_b_##T(b, ldb, tb, pc, kc, jc, nc, nr, bbuf);                            \
                for (int64_t ic = m0; ic < m1; ic += g->mc) {                                     \
                    int64_t mc = DF__MIN(g->mc, m1 - ic);                                         \
                    df__pack_a_##T(a, lda, ta, ic, mc, pc, kc, mr, abuf);                         \
                    for (int64_t jr = 0; jr < nc; jr += nr) {                                     \
                        int64_t cols = DF__MIN(nr, nc - jr);                                      \
                        const T *bp = bbuf + (size_t)(jr / nr) * (size_t)nr * (size_t)kc;         \
                        for (int64_t ir = 0; ir < mc; ir += mr) {                                 \
                            int64_t rows = DF__MIN(mr, mc - ir);                                  \
                            const T *ap = abuf + (size_t)(ir / mr) * (size_t)mr * (size_t)kc;     \
                            T *cp = c + (ic + ir) * ldc + jc + jr;                                \
                            if (rows == mr && cols == nr) { ukr(kc, ap, 1, mr, bp, nr, cp, ldc, pc > 0); continue; } \
                            ukr(kc, ap, 1, mr, bp, nr, tile, nr, 0);                              \
                            for (int64_t r = 0; r < rows; r++)                                    \
                                for (int64_t j = 0; j < cols; j++)                                \
                                    cp[r * ldc + j] = pc > 0 ? cp[r * ldc + j] + tile[r * nr + j] : tile[r * nr + j]; \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
#ifdef DF__X86
#define DF__GEMM_PICK_float if (isa == DF__ISA_AVX2) ukr = df__ukr_float_avx2; if (isa == DF__ISA_AVX512) ukr = df__ukr_float_avx512;
#define DF__GEMM_PICK_double if (isa == DF__ISA_AVX2) ukr = df__ukr_double_avx2; if (isa == DF__ISA_AVX512) ukr = df__ukr_double_avx512;
#else
#define DF__GEMM_PICK_float DF__UNUSED(isa);
#define DF__GEMM_PICK_double DF__UNUSED(isa);
#endif
DF__GEMM_BLOCKED(float)
DF__GEMM_BLOCKED(double)

/* Direct (no packing) for small products with B not transposed: full tiles read A through its
   strides and B's rows where they are; edge tiles first copy their few rows or columns into a
   zero-padded block. Returns 0 on OOM. */
#define DF__GEMM_DIRECT(T)                                                                        \
    static int df__gemm_direct_##T(const df__gemm_cfg *g, int isa, int64_t m, int64_t n, int64_t k, \
                                   const T *a, int64_t lda, int ta, const T *b, int64_t ldb, T *c, int64_t ldc) { \
        const int mr = g->mr, nr = g->nr;                                                         \
        const int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;                                     \
        T tile[16 * 16];                                                                          \
        void (*ukr)(int64_t, const T *, int64_t, int64_t, const T *, int64_t, T *, int64_t, int) = df__ukr_##T##_portable; \
        DF__GEMM_PICK_##T                                                                         \
        int64_t n_full = n / nr * nr, m_full = m / mr * mr;                                       \
        T *edge = NULL, *aedge = NULL, *bedge = NULL;                                             \
        if (n_full < n || m_full < m) {                                                           \
            edge = (T *)DF_MALLOC((size_t)(mr + nr) * (size_t)k * sizeof(T) + 64);                \
            if (!edge) return 0;                                                                  \
            aedge = edge; bedge = edge + (size_t)mr * (size_t)k;                                  \
            if (n_full < n)                                                                       \
                for (int64_t p = 0; p < k; p++)                                                   \
                    for (int64_t j = 0; j < nr; j++) bedge[p * nr + j] = n_full + j < n ? b[p * ldb + n_full + j] : 0; \
        }                                                                                         \
        for (int64_t i = 0; i < m; i += mr) {                                                     \
            int64_t rows = DF__MIN(mr, m - i);                                                    \
            const T *ap = a + i * rsa;                                                            \
            int64_t ars = rsa, acs = csa;                                                         \
            if (rows < mr) {                                                                      \
                for (int64_t p = 0; p < k; p++)                                                   \
                    for (int64_t r = 0; r < mr; r++) aedge[p * mr + r] = r < rows ? a[(i + r) * rsa + p * csa] : 0; \
                ap = aedge; ars = 1; acs = mr;                                                    \
            }                                                                                     \
            for (int64_t j = 0; j < n; j += nr) {                                                 \
                T *cp = c + i * ldc + j;                                                          \
                if (j < n_full && rows == mr) { ukr(k, ap, ars, acs, b + j, ldb, cp, ldc, 0); continue; } \
                int64_t cols = DF__MIN(nr, n - j);                                                \
                if (j < n_full) ukr(k, ap, ars, acs, b + j, ldb, tile, nr, 0);                    \
                else ukr(k, ap, ars, acs, bedge, nr, tile, nr, 0);                                \
                for (int64_t r = 0; r < rows; r++)                                                \
                    for (int64_t jj = 0; jj < cols; jj++) cp[r * ldc + jj] = tile[r * nr + jj];   \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(edge);                                                                            \
        return 1;                                                                                 \
    }
DF__GEMM_DIRECT(float)
DF__GEMM_DIRECT(double)

/* One share of a blocked product: rows or columns [lo, hi) of C, with buffers of its own. */
typedef struct df__gemm_job {
    int dbl, isa;
    const df__gemm_cfg *g;
    int64_t m, n, k, lda, ldb, ldc;
    const void *a, *b;
    void *c;
    int ta, tb, split_rows, failed;
} df__gemm_job;
static void df__gemm_share(void *arg, int64_t lo, int64_t hi) {
    df__gemm_job *j = (df__gemm_job *)arg;
    const df__gemm_cfg *g = j->g;
    int64_t m0 = j->split_rows ? lo : 0, m1 = j->split_rows ? hi : j->m;
    int64_t n0 = j->split_rows ? 0 : lo, n1 = j->split_rows ? j->n : hi;
    if (m1 <= m0 || n1 <= n0) return;
    size_t es = j->dbl ? 8 : 4;
    int64_t kc = DF__MIN(g->kc, j->k);
    int64_t mc = (DF__MIN(g->mc, m1 - m0) + g->mr - 1) / g->mr * g->mr;
    int64_t nc = (DF__MIN(g->nc, n1 - n0) + g->nr - 1) / g->nr * g->nr;
    size_t abytes = (size_t)mc * (size_t)kc * es, bbytes = (size_t)nc * (size_t)kc * es;
    char *raw = (char *)DF_MALLOC(abytes + bbytes + 128);
    if (!raw) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); return; }
    char *abuf = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    char *bbuf = (char *)(((uintptr_t)abuf + abytes + 63) & ~(uintptr_t)63);
    if (j->dbl) df__gemm_blocked_double(g, j->isa, m0, m1, n0, n1, j->k, (const double *)j->a, j->lda, j->ta,
                                        (const double *)j->b, j->ldb, j->tb, (double *)j->c, j->ldc, (double *)abuf, (double *)bbuf);
    else df__gemm_blocked_float(g, j->isa, m0, m1, n0, n1, j->k, (const float *)j->a, j->lda, j->ta,
                                (const float *)j->b, j->ldb, j->tb, (float *)j->c, j->ldc, (float *)abuf, (float *)bbuf);
    DF_FREE(raw);
}

/* C = op(A) op(B) for float (dbl 0) or double (dbl 1); row-major with leading dimensions; at
   most max_threads threads (0: as many as the pool has). Returns 0 when memory ran out. */
#define DF__GEMM_DIRECT_MAX (128 * 128 * 128)
static int df__gemm_fp(int dbl, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda, int ta,
                       const void *b, int64_t ldb, int tb, void *c, int64_t ldc, struct df__ipool *pool,
                       int max_threads) {
    size_t es = dbl ? 8 : 4;
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0) { for (int64_t i = 0; i < m; i++) memset((char *)c + (size_t)(i * ldc) * es, 0, (size_t)n * es); return 1; }
    int isa = df__isa();
    const df__gemm_cfg *g = &df__gemm_cfgs[dbl][isa];
    if (!tb && m * n * k <= DF__GEMM_DIRECT_MAX)
        return dbl ? df__gemm_direct_double(g, isa, m, n, k, (const double *)a, lda, ta, (const double *)b, ldb, (double *)c, ldc)
                   : df__gemm_direct_float(g, isa, m, n, k, (const float *)a, lda, ta, (const float *)b, ldb, (float *)c, ldc);
    df__gemm_job j;
    memset(&j, 0, sizeof j);
    j.dbl = dbl; j.isa = isa; j.g = g; j.m = m; j.n = n; j.k = k; j.lda = lda; j.ldb = ldb; j.ldc = ldc;
    j.a = a; j.b = b; j.c = c; j.ta = ta; j.tb = tb;
    j.split_rows = m > n;
    int64_t len = j.split_rows ? m : n, unit = j.split_rows ? g->mr : g->nr;
    /* below ~4M multiply-adds a hand-off to another thread costs more than it saves */
    int threads = (double)m * (double)n * (double)k < 4.0e6 ? 1 : df__ipool_threads(pool);
    if (max_threads > 0 && threads > max_threads) threads = max_threads;
    df__parallel_for(pool, len, unit, threads, df__gemm_share, &j);
    return !j.failed;
}

/* The public entry: the same GEMM on caller-owned row-major matrices. Threads come from one
   process-wide intra-op pool made on first use (it lives as long as the process). */
#ifndef DF_NO_THREADS
static df__ipool *df__global_ipool;
#endif
static df_code df__gemm_public(int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                               const void *b, int64_t ldb, void *c, int64_t ldc, int n_threads) {
    if (m < 0 || n < 0 || k < 0 || (m && n && !c) || (m && k && !a) || (k && n && !b)) return DF_INVALID_ARGUMENT;
    if ((m && k && lda < (ta ? m : k)) || (k && n && ldb < (tb ? k : n)) || (m && n && ldc < n)) return DF_INVALID_ARGUMENT;
    df__ipool *pool = NULL;
#ifndef DF_NO_THREADS
    if (n_threads > 1) {
        pool = __atomic_load_n(&df__global_ipool, __ATOMIC_ACQUIRE);
        if (!pool) {
            df__ipool *fresh = df__ipool_new(df__num_cores() - 1), *expected = NULL;
            if (fresh && !__atomic_compare_exchange_n(&df__global_ipool, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                df__ipool_free(fresh);
                fresh = expected;
            }
            pool = fresh;
        }
    }
#else
    DF__UNUSED(n_threads);
#endif
    return df__gemm_fp(dbl, m, n, k, a, lda, ta, b, ldb, tb, c, ldc, pool, n_threads) ? DF_OK : DF_RESOURCE_EXHAUSTED;
}
df_code df_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float *c, int64_t ldc, int n_threads) {
    return df__gemm_public(0, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, n_threads);
}
df_code df_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                    const double *b, int64_t ldb, double *c, int64_t ldc, int n_threads) {
    return df__gemm_public(1, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, n_threads);
}

/* int32 products: a plain loop with wrapping arithmetic, as TensorFlow's. */
static void df__gemm_int32(int64_t m, int64_t n, int64_t k, const int32_t *a, int ta, const int32_t *b, int tb, int32_t *o) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint32_t s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (uint32_t)(ta ? a[p * m + i] : a[i * k + p]) * (uint32_t)(tb ? b[j * k + p] : b[p * n + j]);
            o[i * n + j] = (int32_t)s;
        }
}
/* MatMul's product: float and double through the GEMM above. 0, with the kernel's status set,
   when memory ran out. */
static int df__gemm(df__kctx *c, df_dtype t, int64_t m, int64_t n, int64_t k, const void *a, int ta, const void *b,
                    int tb, void *o) {
    if (t == DF_INT32) { df__gemm_int32(m, n, k, (const int32_t *)a, ta, (const int32_t *)b, tb, (int32_t *)o); return 1; }
    if (df__gemm_fp(t == DF_DOUBLE, m, n, k, a, ta ? m : k, ta, b, tb ? k : n, tb, o, n, c->ipool, 0)) return 1;
    DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the matrix product's packing buffers");
    return 0;
}

static df_code df__matmul_dims(const df_node *node, int ra, const int64_t *da, int rb, const int64_t *db,
                               int ta, int tb, int64_t *m, int64_t *n, int64_t *k, df_status *st) {
    if (ra != 2 || rb != 2)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "In[0] and In[1] must be matrices, got ranks %d and %d", ra, rb);
    *m = ta ? da[1] : da[0];
    *k = ta ? da[0] : da[1];
    int64_t k2 = tb ? db[1] : db[0];
    *n = tb ? db[0] : db[1];
    if (*k >= 0 && k2 >= 0 && *k != k2) {
        char s1[96], s2[96];
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s "
                        "(transpose_a=%d, transpose_b=%d)", df__dims_str(ra, da, s1, 96), df__dims_str(rb, db, s2, 96), ta, tb);
    }
    return DF_OK;
}
static void df__k_matmul(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ta = df__attr_b(c->node, "transpose_a", 0), tb = df__attr_b(c->node, "transpose_b", 0);
    int64_t m, n, k;
    if (df__matmul_dims(c->node, a->rank, a->dims, b->rank, b->dims, ta, tb, &m, &n, &k, c->st)) return;
    int64_t dims[2] = {m, n};
    df_tensor *o = df__k_alloc(c, 0, a->dtype, 2, dims);
    if (o && o->n) {
        if (k == 0) memset(o->data, 0, o->nbytes);
        else df__gemm(c, a->dtype, m, n, k, a->data, ta, b->data, tb, o->data);
    }
}
static df_code df__sf_matmul(df__shape_ctx *c) {
    const df__shape *a = &c->in_shapes[0], *b = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (a->rank < 0 || b->rank < 0) { o->rank = 2; o->dims[0] = o->dims[1] = -1; return DF_OK; }
    int64_t m, n, k;
    if (df__matmul_dims(c->node, a->rank, a->dims, b->rank, b->dims, df__attr_b(c->node, "transpose_a", 0),
                        df__attr_b(c->node, "transpose_b", 0), &m, &n, &k, c->st)) return c->st->code;
    o->rank = 2; o->dims[0] = m; o->dims[1] = n;
    return DF_OK;
}

/* Batch dims broadcast; the last two are the matrices. */
static df_code df__bmm_shape(const df_node *node, int ra, const int64_t *da, int rb, const int64_t *db,
                             int adj_x, int adj_y, df__shape *out, df__bcast *bc, df_status *st) {
    if (ra < 2 || rb < 2)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "BatchMatMul inputs must have rank >= 2, got %d and %d", ra, rb);
    if (!df__broadcast(ra - 2, da, rb - 2, db, bc)) {
        char s1[96], s2[96];
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Batch dimensions do not broadcast: %s vs. %s",
                        df__dims_str(ra, da, s1, 96), df__dims_str(rb, db, s2, 96));
    }
    int64_t m = adj_x ? da[ra - 1] : da[ra - 2], k = adj_x ? da[ra - 2] : da[ra - 1];
    int64_t k2 = adj_y ? db[rb - 1] : db[rb - 2], n = adj_y ? db[rb - 2] : db[rb - 1];
    if (k >= 0 && k2 >= 0 && k != k2) {
        char s1[96], s2[96];
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s",
                        df__dims_str(ra, da, s1, 96), df__dims_str(rb, db, s2, 96));
    }
    if (bc->rank + 2 > DF_MAX_RANK) return df__fail(st, node, DF_INVALID_ARGUMENT, "Rank too large");
    out->rank = bc->rank + 2;
    memcpy(out->dims, bc->dims, (size_t)bc->rank * 8);
    out->dims[bc->rank] = m;
    out->dims[bc->rank + 1] = n;
    return DF_OK;
}
static df_code df__sf_bmm(df__shape_ctx *c) {
    const df__shape *a = &c->in_shapes[0], *b = &c->in_shapes[1];
    if (a->rank < 0 || b->rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    df__bcast bc;
    return df__bmm_shape(c->node, a->rank, a->dims, b->rank, b->dims, df__attr_b(c->node, "adj_x", 0),
                         df__attr_b(c->node, "adj_y", 0), df__sc_out(c, 0), &bc, c->st);
}
static void df__k_bmm(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ax = df__attr_b(c->node, "adj_x", 0), ay = df__attr_b(c->node, "adj_y", 0);
    df__shape os;
    df__bcast bc;
    if (df__bmm_shape(c->node, a->rank, a->dims, b->rank, b->dims, ax, ay, &os, &bc, c->st)) return;
    df_tensor *o = df__k_alloc(c, 0, a->dtype, os.rank, os.dims);
    if (!o || !o->n) return;
    int64_t m = os.dims[os.rank - 2], n = os.dims[os.rank - 1];
    int64_t k = ax ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    int64_t batches = 1, idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;
    for (int i = 0; i < bc.rank; i++) batches *= bc.dims[i];
    size_t es = df_dtype_size(a->dtype);
    int64_t sz_a = a->dims[a->rank - 2] * a->dims[a->rank - 1], sz_b = b->dims[b->rank - 2] * b->dims[b->rank - 1];
    for (int64_t bi = 0; bi < batches; bi++) {
        char *op = (char *)o->data + (size_t)(bi * m * n) * es;
        if (k == 0) memset(op, 0, (size_t)(m * n) * es);
        else if (!df__gemm(c, a->dtype, m, n, k, (const char *)a->data + (size_t)(oa * sz_a) * es, ax,
                           (const char *)b->data + (size_t)(ob * sz_b) * es, ay, op)) return;
        for (int d = bc.rank - 1; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* ---- Conv2D (NHWC) and its two gradients, MaxPool/AvgPool and theirs ----
   Geometry as TensorFlow: VALID gives ceil((in - (k-1)*d) / s) outputs, SAME ceil(in / s) with
   the padding split before/after (the extra one after).
   Convolutions are direct: no patch matrix. A micro-kernel keeps MR output pixels x NR output
   channels in registers and reads each pixel's taps where they lie in a zero-padded copy of the
   input (pixel r starts at arow[r]; a tap is a run of tk contiguous values at arow[r] + toff[t];
   with no dilation along x a whole filter row is one run). The filter is packed once into
   NR-wide slivers in the same order. The input gradient is the same computation on the padded
   dY, once per stride phase (the output pixels y = ry + sh*j, x = rx + sw*i) with the taps that
   phase reaches and the filter transposed. The filter gradient reduces over runs of pixels (the
   output rows) instead, with the filter's rows as the tile's rows. A 1x1 stride-1 forward
   convolution is one GEMM over the batch. */
typedef struct df__conv_geo {
    int64_t n, h, w, c, kh, kw, oc, oh, ow, sh, sw, dh, dw, ph, pw;
} df__conv_geo;
static int df__list4(const df_node *n, const char *attr, int64_t def, int64_t *v) {
    const df__attr *a = df__node_attr(n, attr);
    v[0] = v[1] = v[2] = v[3] = def;
    if (!a || a->kind != DF__A_INT_LIST || a->u.ints.n == 0) return 1;
    if (a->u.ints.n != 4) return 0;
    for (int i = 0; i < 4; i++) v[i] = a->u.ints.v[i];
    return 1;
}
/* Output size and leading padding of one spatial dimension; 0 if impossible. */
static int df__conv_dim(int64_t in, int64_t k, int64_t s, int64_t d, int same, int64_t *out, int64_t *pad) {
    int64_t ek = (k - 1) * d + 1;
    if (k < 1 || s < 1 || d < 1 || in < 0) return 0;
    if (same) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + ek - in;
        *pad = total > 0 ? total / 2 : 0;
    } else {
        if (in < ek) { *out = 0; *pad = 0; return in >= 0; }
        *out = (in - ek) / s + 1;
        *pad = 0;
    }
    return 1;
}
/* Reads strides, dilations, padding and data_format; with the window (kh, kw) fills g's
   output size and padding. in: [n,h,w,c] (entries may be -1 for shape inference). */
static df_code df__conv_setup(const df_node *node, const int64_t *in, int64_t kh, int64_t kw, int pool,
                              df__conv_geo *g, df_status *st) {
    int64_t s[4], d[4];
    if (!df__list4(node, "strides", 1, s) || !df__list4(node, "dilations", 1, d))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "strides and dilations must have 4 entries");
    const char *fmt = df__attr_s(node, "data_format"), *pad = df__attr_s(node, "padding");
    if (*fmt && strcmp(fmt, "NHWC"))
        return df__fail(st, node, DF_UNIMPLEMENTED, "data_format %s is not supported on the CPU (use NHWC)", fmt);
    if (s[0] != 1 || s[3] != 1 || d[0] != 1 || d[3] != 1)
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Strides and dilations in the batch and depth dimensions must be 1");
    if (s[1] < 1 || s[2] < 1 || d[1] < 1 || d[2] < 1 || s[1] > (1 << 20) || s[2] > (1 << 20) || d[1] > (1 << 20) || d[2] > (1 << 20))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Strides and dilations must be positive");
    if (pool && (d[1] != 1 || d[2] != 1)) return df__fail(st, node, DF_INVALID_ARGUMENT, "Pooling has no dilations");
    int same = !strcmp(pad, "SAME");
    if (!same && strcmp(pad, "VALID"))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "padding must be SAME or VALID, got '%s'", pad);
    memset(g, 0, sizeof *g);
    g->n = in[0]; g->h = in[1]; g->w = in[2]; g->c = in[3]; g->kh = kh; g->kw = kw;
    g->sh = s[1]; g->sw = s[2]; g->dh = d[1]; g->dw = d[2];
    g->oh = g->ow = -1;
    if (kh < 1 || kw < 1 || kh > (1 << 20) || kw > (1 << 20))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "The window must be at least 1x1, got %lldx%lld", (long long)kh, (long long)kw);
    if (g->h >= 0 && !df__conv_dim(g->h, kh, g->sh, g->dh, same, &g->oh, &g->ph))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Bad convolution geometry (height)");
    if (g->w >= 0 && !df__conv_dim(g->w, kw, g->sw, g->dw, same, &g->ow, &g->pw))
        return df__fail(st, node, DF_INVALID_ARGUMENT, "Bad convolution geometry (width)");
    return DF_OK;
}
static int df__rank4(const df_tensor *t) { return t->rank == 4; }

/* ---- direct convolution micro-kernels ----
   cukr: rows[r] (= or +=) sum over taps t, p < tk of ar[r][toff[t] + p] * b[k][0..NR), with b the
   packed filter sliver advancing NR per k (the filter gradient uses the GEMM's kernel). */
#define DF__CONV_UKR_PORTABLE(T, MR, NR)                                                          \
    static void df__cukr_##T##_portable(int ntap, const int64_t *toff, int64_t tk, const T *const *ar, \
                                        const T *b, T *const *cr, int acc) {                      \
        T t[MR][NR];                                                                              \
        memset(t, 0, sizeof t);                                                                   \
        for (int tp = 0; tp < ntap; tp++)                                                         \
            for (int64_t p = 0; p < tk; p++, b += NR)                                             \
                for (int r = 0; r < MR; r++) {                                                    \
                    T av = ar[r][toff[tp] + p];                                                   \
                    for (int j = 0; j < NR; j++) t[r][j] += av * b[j];                            \
                }                                                                                 \
        for (int r = 0; r < MR; r++)                                                              \
            for (int j = 0; j < NR; j++) cr[r][j] = acc ? cr[r][j] + t[r][j] : t[r][j];           \
    }                                                                                             \
    static void df__wukr_##T##_portable(int64_t kc, const T *const *pix, int64_t off, const T *b, T *c, \
                                        int64_t ldc, int acc) {                                   \
        T t[MR][NR];                                                                              \
        memset(t, 0, sizeof t);                                                                   \
        for (int64_t p = 0; p < kc; p++, b += NR)                                                 \
            for (int r = 0; r < MR; r++) {                                                        \
                T av = pix[p][off + r];                                                           \
                for (int j = 0; j < NR; j++) t[r][j] += av * b[j];                                \
            }                                                                                     \
        for (int r = 0; r < MR; r++)                                                              \
            for (int j = 0; j < NR; j++) c[r * ldc + j] = acc ? c[r * ldc + j] + t[r][j] : t[r][j]; \
    }
DF__CONV_UKR_PORTABLE(float, 4, 8)
DF__CONV_UKR_PORTABLE(double, 4, 4)

#ifdef DF__X86
/* AVX2+FMA, 6 pixels (or filter rows) x 2 vectors as in the GEMM's kernel. */
#define DF__CONV_UKR_AVX2(T, V, W, L, BC)                                                         \
    DF__TARGET_AVX2 static void df__cukr_##T##_avx2(int ntap, const int64_t *toff, int64_t tk, const T *const *ar, \
                                                    const T *b, T *const *cr, int acc) {          \
        DF__TILE_ZERO(V, W)                                                                       \
        for (int tp = 0; tp < ntap; tp++) {                                                       \
            const int64_t o = toff[tp];                                                           \
            const T *a0 = ar[0] + o, *a1 = ar[1] + o, *a2 = ar[2] + o, *a3 = ar[3] + o, *a4 = ar[4] + o, *a5 = ar[5] + o; \
            _Pragma("GCC unroll 4")                                                               \
            for (int64_t p = 0; p < tk; p++, b += 2 * L) {                                        \
                V b0 = _mm256_loadu_##W(b), b1 = _mm256_loadu_##W(b + L);                             \
                DF__TILE_STEP(V, W, BC, a0 + p, a1 + p, a2 + p, a3 + p, a4 + p, a5 + p)           \
            }                                                                                     \
        }                                                                                         \
        DF__TILE_STORE(T, cr[0], cr[1], cr[2], cr[3], cr[4], cr[5])                               \
    }                                                                                             \
    DF__TARGET_AVX2 static void df__wukr_##T##_avx2(int64_t kc, const T *const *pix, int64_t off, const T *b, T *c, \
                                                    int64_t ldc, int acc) {                       \
        DF__TILE_ZERO(V, W)                                                                       \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, b += 2 * L) {                                            \
            const T *a = pix[p] + off;                                                            \
            V b0 = _mm256_loadu_##W(b), b1 = _mm256_loadu_##W(b + L);                             \
            DF__TILE_STEP(V, W, BC, a, a + 1, a + 2, a + 3, a + 4, a + 5)                         \
        }                                                                                         \
        DF__TILE_STORE(T, c, c + ldc, c + 2 * ldc, c + 3 * ldc, c + 4 * ldc, c + 5 * ldc)         \
    }
DF__CONV_UKR_AVX2(float, __m256, ps, 8, _mm256_broadcast_ss)
DF__CONV_UKR_AVX2(double, __m256d, pd, 4, _mm256_broadcast_sd)
/* AVX-512: the same 6 x 2-vector tile with vectors twice as wide (float 6x32, double 6x16), the
   filter packed in slivers of that width (the GEMM's AVX-512 tile sizes). */
#define DF__Z_TILE_ZERO(V, W)                                                                     \
    V c00 = DF__Z(setzero_##W)(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;          \
    V c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#define DF__Z_TILE_STEP(V, W, P0, P1, P2, P3, P4, P5)                                             \
    {                                                                                             \
        V av;                                                                                     \
        av = DF__Z(set1_##W)(*(P0)); c00 = DF__Z(fmadd_##W)(av, b0, c00); c01 = DF__Z(fmadd_##W)(av, b1, c01); \
        av = DF__Z(set1_##W)(*(P1)); c10 = DF__Z(fmadd_##W)(av, b0, c10); c11 = DF__Z(fmadd_##W)(av, b1, c11); \
        av = DF__Z(set1_##W)(*(P2)); c20 = DF__Z(fmadd_##W)(av, b0, c20); c21 = DF__Z(fmadd_##W)(av, b1, c21); \
        av = DF__Z(set1_##W)(*(P3)); c30 = DF__Z(fmadd_##W)(av, b0, c30); c31 = DF__Z(fmadd_##W)(av, b1, c31); \
        av = DF__Z(set1_##W)(*(P4)); c40 = DF__Z(fmadd_##W)(av, b0, c40); c41 = DF__Z(fmadd_##W)(av, b1, c41); \
        av = DF__Z(set1_##W)(*(P5)); c50 = DF__Z(fmadd_##W)(av, b0, c50); c51 = DF__Z(fmadd_##W)(av, b1, c51); \
    }
#define DF__Z_TILE_STORE(T, R0, R1, R2, R3, R4, R5)                                               \
    df__ukr512_store_##T(R0, c00, c01, acc); df__ukr512_store_##T(R1, c10, c11, acc);             \
    df__ukr512_store_##T(R2, c20, c21, acc); df__ukr512_store_##T(R3, c30, c31, acc);             \
    df__ukr512_store_##T(R4, c40, c41, acc); df__ukr512_store_##T(R5, c50, c51, acc);
#define DF__CONV_UKR_AVX512(T, V, W, L)                                                           \
    DF__TARGET_AVX512 static void df__cukr_##T##_avx512(int ntap, const int64_t *toff, int64_t tk, const T *const *ar, \
                                                        const T *b, T *const *cr, int acc) {      \
        DF__Z_TILE_ZERO(V, W)                                                                     \
        for (int tp = 0; tp < ntap; tp++) {                                                       \
            const int64_t o = toff[tp];                                                           \
            const T *a0 = ar[0] + o, *a1 = ar[1] + o, *a2 = ar[2] + o, *a3 = ar[3] + o, *a4 = ar[4] + o, *a5 = ar[5] + o; \
            _Pragma("GCC unroll 4")                                                               \
            for (int64_t p = 0; p < tk; p++, b += 2 * L) {                                        \
                V b0 = DF__Z(loadu_##W)(b), b1 = DF__Z(loadu_##W)(b + L);                         \
                DF__Z_TILE_STEP(V, W, a0 + p, a1 + p, a2 + p, a3 + p, a4 + p, a5 + p)             \
            }                                                                                     \
        }                                                                                         \
        DF__Z_TILE_STORE(T, cr[0], cr[1], cr[2], cr[3], cr[4], cr[5])                             \
    }                                                                                             \
    DF__TARGET_AVX512 static void df__wukr_##T##_avx512(int64_t kc, const T *const *pix, int64_t off, const T *b, T *c, \
                                                        int64_t ldc, int acc) {                   \
        DF__Z_TILE_ZERO(V, W)                                                                     \
        _Pragma("GCC unroll 4")                                                                   \
        for (int64_t p = 0; p < kc; p++, b += 2 * L) {                                            \
            const T *a = pix[p] + off;                                                            \
            V b0 = DF__Z(loadu_##W)(b), b1 = DF__Z(loadu_##W)(b + L);                             \
            DF__Z_TILE_STEP(V, W, a, a + 1, a + 2, a + 3, a + 4, a + 5)                           \
        }                                                                                         \
        DF__Z_TILE_STORE(T, c, c + ldc, c + 2 * ldc, c + 3 * ldc, c + 4 * ldc, c + 5 * ldc)       \
    }
DF__CONV_UKR_AVX512(float, DF__ZT(), ps, 16)
DF__CONV_UKR_AVX512(double, DF__ZT(d), pd, 8)
#define DF__CONV_PICK_float                                                                       \
    if (isa == DF__ISA_AVX2) { cukr = df__cukr_float_avx2; ukr = df__ukr_float_avx2; wukr = df__wukr_float_avx2; } \
    if (isa == DF__ISA_AVX512) { cukr = df__cukr_float_avx512; ukr = df__ukr_float_avx512; wukr = df__wukr_float_avx512; }
#define DF__CONV_PICK_double                                                                      \
    if (isa == DF__ISA_AVX2) { cukr = df__cukr_double_avx2; ukr = df__ukr_double_avx2; wukr = df__wukr_double_avx2; } \
    if (isa == DF__ISA_AVX512) { cukr = df__cukr_double_avx512; ukr = df__ukr_double_avx512; wukr = df__wukr_double_avx512; }
#else
#define DF__CONV_PICK_float
#define DF__CONV_PICK_double
#endif

/* One gather pass: out pixel q (b, j, i) = a + b*a_img + j*a_row + i*a_col (bytes), written at
   c + b*c_img + j*c_row + i*c_col; nout channels from the packed filter bp ([block][K][NR]).
   Taps are split into k-blocks [kb[i], kb[i+1]) so one sliver of the filter stays in L1 while
   a chunk of pixels passes under it. A pass with no taps writes zeros. */
typedef struct df__conv_pass {
    int isa, ntap, nkb, failed;
    int64_t npix, per_img, cols, chunk, tk, nout;
    const char *a;
    char *c;
    int64_t a_img, a_row, a_col, c_img, c_row, c_col;
    const int64_t *toff;
    const int *kb;
    const void *bp;
} df__conv_pass;
/* The filter gradient: dW rows (tap t, r < tk) x nout summed over the npix output pixels, a
   GEMM whose k runs over pixels: per chunk of pixels, dY is packed into NR-wide slivers and each
   m-tile's input values (MR filter rows: MR consecutive values at pixel base + toff[t] + m0)
   into an MR-tall one. Pixel q (b, oy, ox) has its input at a + b*a_img + oy*a_row + ox*a_col
   (elements) and its dY row at dy + q*nout. Threads take ranges of pixels; each sums into a
   slot of its own ([tiles*MR][whole slivers]), and the slots are added up afterwards. */
typedef struct df__wgrad_pass {
    int isa, failed, next_slot;
    int64_t npix, per_img, cols, a_img, a_row, a_col, tk, per_tap, tiles, nout, kc;
    const void *a, *dy;
    const int64_t *toff;
    void *slots, *dw;
} df__wgrad_pass;
/* The input gradient for few input channels (an RGB stem), where a phase's tile would be mostly
   empty columns: each dY pixel times the filter transposed gives its whole patch of dX (kh*kw*c
   values, the tile's columns), added where the patch lies in a padded dX; each share of pixels
   adds into its own copy (slot), summed afterwards. */
typedef struct df__conv_scatter {
    int isa, failed, next_slot;
    int64_t npix, per_img, cols, oc, kh, kw, c, Hb, Wb, sh, sw, dh, dw, chunk;
    const void *dy, *bp;
    void *acc;                      /* slots of [n][Hb][Wb][c] */
} df__conv_scatter;
/* The kernels a pass may call: the plain ones, replaced by AVX2 or AVX-512 ones where the isa
   says so. */
#define DF__CONV_KERNELS(T, ISA)                                                                  \
    void (*cukr)(int, const int64_t *, int64_t, const T *const *, const T *, T *const *, int) = df__cukr_##T##_portable; \
    void (*ukr)(int64_t, const T *, int64_t, int64_t, const T *, int64_t, T *, int64_t, int) = df__ukr_##T##_portable; \
    void (*wukr)(int64_t, const T *const *, int64_t, const T *, T *, int64_t, int) = df__wukr_##T##_portable; \
    { const int isa = (ISA); DF__CONV_PICK_##T DF__UNUSED(isa); }                                  \
    DF__UNUSED(cukr); DF__UNUSED(ukr); DF__UNUSED(wukr);
#define DF__CONV_PASSES(T)                                                                        \
    static void df__conv_pass_##T(void *arg, int64_t lo, int64_t hi) {                           \
        df__conv_pass *P = (df__conv_pass *)arg;                                                  \
        const df__gemm_cfg *g = &df__gemm_cfgs[sizeof(T) == 8][P->isa];                          \
        const int mr = g->mr, nr = g->nr;                                                         \
        DF__CONV_KERNELS(T, P->isa)                                                               \
        const int64_t chunk = P->chunk, nblk = (P->nout + nr - 1) / nr, K = (int64_t)P->ntap * P->tk; \
        char *mem = (char *)DF_MALLOC((size_t)chunk * 2 * sizeof(void *) + (size_t)(chunk * nr) * sizeof(T) + 64); \
        if (!mem) { __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED); return; }                  \
        const T **arow = (const T **)(void *)mem;                                                 \
        T **crow = (T **)(void *)(mem + (size_t)chunk * sizeof(void *));                          \
        T *tmp = (T *)(void *)(((uintptr_t)(mem + (size_t)chunk * 2 * sizeof(void *)) + 63) & ~(uintptr_t)63); \
        for (int64_t q0 = lo; q0 < hi; q0 += chunk) {                                             \
            int64_t cnt = DF__MIN(chunk, hi - q0), cntp = (cnt + mr - 1) / mr * mr;               \
            for (int64_t i = 0; i < cnt; i++) {                                                   \
                int64_t q = q0 + i, b = q / P->per_img, rem = q - b * P->per_img, j = rem / P->cols, x = rem - j * P->cols; \
                arow[i] = (const T *)(const void *)(P->a + b * P->a_img + j * P->a_row + x * P->a_col); \
                crow[i] = (T *)(void *)(P->c + b * P->c_img + j * P->c_row + x * P->c_col);       \
            }                                                                                     \
            if (P->ntap == 0) {                                                                   \
                for (int64_t i = 0; i < cnt; i++) memset(crow[i], 0, (size_t)P->nout * sizeof(T)); \
                continue;                                                                         \
            }                                                                                     \
            for (int64_t i = cnt; i < cntp; i++) arow[i] = arow[0];                               \
            for (int64_t jb = 0; jb < nblk; jb++) {                                               \
                int64_t j0 = jb * nr, cols = DF__MIN(nr, P->nout - j0);                           \
                const T *sliver = (const T *)P->bp + (size_t)(jb * K * nr);                       \
                for (int kb = 0; kb < P->nkb; kb++) {                                             \
                    int t0 = P->kb[kb], t1 = P->kb[kb + 1];                                       \
                    const T *bk = sliver + (size_t)((int64_t)t0 * P->tk * nr);                    \
                    for (int64_t i = 0; i < cntp; i += mr) {                                      \
                        T *cr[8];                                                                 \
                        for (int r = 0; r < mr; r++) {                                            \
                            int64_t q = i + r;                                                    \
                            cr[r] = cols == nr && q < cnt ? crow[q] + j0 : tmp + q * nr;          \
                        }                                                                         \
                        cukr(t1 - t0, P->toff + t0, P->tk, arow + i, bk, cr, kb > 0);             \
                    }                                                                             \
                }                                                                                 \
                if (cols < nr)                                                                    \
                    for (int64_t i = 0; i < cnt; i++) memcpy(crow[i] + j0, tmp + i * nr, (size_t)cols * sizeof(T)); \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(mem);                                                                             \
    }                                                                                             \
    static void df__wgrad_pass_##T(void *arg, int64_t lo, int64_t hi) {                          \
        df__wgrad_pass *P = (df__wgrad_pass *)arg;                                                \
        const df__gemm_cfg *g = &df__gemm_cfgs[sizeof(T) == 8][P->isa];                          \
        const int mr = g->mr, nr = g->nr;                                                         \
        DF__CONV_KERNELS(T, P->isa)                                                               \
        const int64_t nblk = (P->nout + nr - 1) / nr, ldt = nblk * nr, kc = P->kc;               \
        size_t b_n = (size_t)(ldt * kc), a_n = (size_t)(mr * kc);                                 \
        char *mem = (char *)DF_MALLOC((b_n + a_n) * sizeof(T) + (size_t)kc * sizeof(void *) + 128); \
        if (!mem) { __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED); return; }                  \
        int slot = __atomic_fetch_add(&P->next_slot, 1, __ATOMIC_RELAXED);                        \
        T *tmp = (T *)P->slots + (size_t)slot * (size_t)(P->tiles * mr * ldt);                    \
        T *bpk = (T *)(void *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);                           \
        T *apk = (T *)(void *)(((uintptr_t)(bpk + b_n) + 63) & ~(uintptr_t)63);                   \
        const T **pix = (const T **)(void *)(apk + a_n);                                          \
        const T *a = (const T *)P->a, *dy = (const T *)P->dy;                                     \
        for (int64_t q0 = lo; q0 < hi; q0 += kc) {                                                \
            int64_t cnt = DF__MIN(kc, hi - q0);                                                   \
            for (int64_t p = 0; p < cnt; p++) {                                                   \
                int64_t q = q0 + p, b = q / P->per_img, rem = q - b * P->per_img, oy = rem / P->cols; \
                pix[p] = a + b * P->a_img + oy * P->a_row + (rem - oy * P->cols) * P->a_col;      \
                const T *d = dy + q * P->nout;                                                    \
                for (int64_t jb = 0; jb < nblk; jb++) {                                           \
                    T *o = bpk + (size_t)((jb * kc + p) * nr);                                    \
                    int64_t j0 = jb * nr, cols = DF__MIN(nr, P->nout - j0);                       \
                    memcpy(o, d + j0, (size_t)cols * sizeof(T));                                  \
                    for (int64_t j = cols; j < nr; j++) o[j] = 0;                                 \
                }                                                                                 \
            }                                                                                     \
            for (int64_t mt = 0; mt < P->tiles; mt++) {                                           \
                int64_t tap = mt / P->per_tap, m0 = (mt - tap * P->per_tap) * mr, rows = DF__MIN(mr, P->tk - m0); \
                int64_t off = P->toff[tap] + m0;                                                  \
                T *trow = tmp + (size_t)(mt * mr * ldt);                                          \
                if (rows == mr) {   /* a whole tile reads the input where it lies */              \
                    for (int64_t jb = 0; jb < nblk; jb++)                                         \
                        wukr(cnt, pix, off, bpk + (size_t)(jb * kc * nr), trow + jb * nr, ldt, q0 > lo); \
                    continue;                                                                     \
                }                                                                                 \
                for (int64_t p = 0; p < cnt; p++) { /* a tap's last rows: packed, zero-padded */  \
                    const T *src = pix[p] + off;                                                  \
                    T *o = apk + p * mr;                                                          \
                    int64_t r = 0;                                                                \
                    for (; r < rows; r++) o[r] = src[r];                                          \
                    for (; r < mr; r++) o[r] = 0;                                                 \
                }                                                                                 \
                for (int64_t jb = 0; jb < nblk; jb++)                                             \
                    ukr(cnt, apk, 1, mr, bpk + (size_t)(jb * kc * nr), nr, trow + jb * nr, ldt, q0 > lo); \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(mem);                                                                             \
    }                                                                                             \
    /* The slots' sum, the filter rows of each tile (not its padding), into dW. */                \
    static void df__wgrad_finish_##T(const df__wgrad_pass *P, int mr, int nr) {                   \
        const int64_t ldt = (P->nout + nr - 1) / nr * nr, per_slot = P->tiles * mr * ldt;         \
        T *s0 = (T *)P->slots;                                                                    \
        for (int k = 1; k < P->next_slot; k++) {                                                  \
            const T *sk = s0 + (size_t)(k * per_slot);                                            \
            for (int64_t i = 0; i < per_slot; i++) s0[i] += sk[i];                                \
        }                                                                                         \
        for (int64_t mt = 0; mt < P->tiles; mt++) {                                               \
            int64_t tap = mt / P->per_tap, m0 = (mt - tap * P->per_tap) * mr, rows = DF__MIN(mr, P->tk - m0); \
            for (int64_t r = 0; r < rows; r++)                                                    \
                memcpy((T *)P->dw + (size_t)((tap * P->tk + m0 + r) * P->nout), s0 + (size_t)((mt * mr + r) * ldt), \
                       (size_t)P->nout * sizeof(T));                                              \
        }                                                                                         \
    }                                                                                             \
    static void df__conv_scatter_##T(void *arg, int64_t lo, int64_t hi) {                        \
        df__conv_scatter *P = (df__conv_scatter *)arg;                                            \
        const df__gemm_cfg *g = &df__gemm_cfgs[sizeof(T) == 8][P->isa];                          \
        const int mr = g->mr, nr = g->nr;                                                         \
        DF__CONV_KERNELS(T, P->isa)                                                               \
        const int64_t K = P->kh * P->kw * P->c, nblk = (K + nr - 1) / nr, ldt = nblk * nr, chunk = P->chunk; \
        const int64_t zero = 0;                                                                   \
        char *mem = (char *)DF_MALLOC((size_t)chunk * sizeof(void *) + (size_t)(chunk * ldt) * sizeof(T) + 64); \
        if (!mem) { __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED); return; }                  \
        const T **arow = (const T **)(void *)mem;                                                 \
        T *tmp = (T *)(void *)(((uintptr_t)(mem + (size_t)chunk * sizeof(void *)) + 63) & ~(uintptr_t)63); \
        int slot = __atomic_fetch_add(&P->next_slot, 1, __ATOMIC_RELAXED);                        \
        T *acc = (T *)P->acc + (size_t)slot * (size_t)(P->npix / P->per_img * P->Hb * P->Wb * P->c); \
        const int64_t run = P->dw == 1 ? P->kw * P->c : P->c;                                     \
        for (int64_t q0 = lo; q0 < hi; q0 += chunk) {                                            \
            int64_t cnt = DF__MIN(chunk, hi - q0), cntp = (cnt + mr - 1) / mr * mr;               \
            for (int64_t i = 0; i < cntp; i++) arow[i] = (const T *)P->dy + (q0 + DF__MIN(i, cnt - 1)) * P->oc; \
            for (int64_t jb = 0; jb < nblk; jb++) {                                               \
                const T *sliver = (const T *)P->bp + (size_t)(jb * P->oc * nr);                   \
                for (int64_t i = 0; i < cntp; i += mr) {                                          \
                    T *cr[8];                                                                     \
                    for (int r = 0; r < mr; r++) cr[r] = tmp + (i + r) * ldt + jb * nr;           \
                    cukr(1, &zero, P->oc, arow + i, sliver, cr, 0);                               \
                }                                                                                 \
            }                                                                                     \
            for (int64_t i = 0; i < cnt; i++) {                                                   \
                int64_t q = q0 + i, b = q / P->per_img, rem = q - b * P->per_img, oy = rem / P->cols, ox = rem - oy * P->cols; \
                const T *src = tmp + i * ldt;                                                     \
                for (int64_t ky = 0; ky < P->kh; ky++)                                            \
                    for (int64_t kx = 0; kx < P->kw; kx += run / P->c) {                          \
                        T *d = acc + ((b * P->Hb + oy * P->sh + ky * P->dh) * P->Wb + ox * P->sw + kx * P->dw) * P->c; \
                        for (int64_t e = 0; e < run; e++) d[e] += src[e];                         \
                        src += run;                                                               \
                    }                                                                             \
            }                                                                                     \
        }                                                                                         \
        DF_FREE(mem);                                                                             \
    }
DF__CONV_PASSES(float)
DF__CONV_PASSES(double)

static int df__conv_direct(const df__conv_geo *g) {       /* 1x1, stride 1, no padding */
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}
/* Filter slivers: dst[block][k][0..nr) = w[koff[k] + (block*nr + j)*js], zero past nout. */
#define DF__CONV_PACK(T)                                                                          \
    static void df__conv_pack_##T(const T *w, const int64_t *koff, int64_t K, int64_t js, int64_t nout, int nr, T *dst) { \
        for (int64_t j0 = 0; j0 < nout; j0 += nr)                                                 \
            for (int64_t k = 0; k < K; k++, dst += nr) {                                          \
                const T *s = w + koff[k];                                                         \
                for (int j = 0; j < nr; j++) dst[j] = j0 + j < nout ? s[(j0 + j) * js] : 0;      \
            }                                                                                     \
    }
DF__CONV_PACK(float)
DF__CONV_PACK(double)

static int64_t df__floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
/* [n][H][W][c] zeros with images [n][h][w][c] placed at row top, column left (clipped to the
   buffer). */
static void df__conv_pad(const char *src, char *dst, int64_t n, int64_t h, int64_t w, int64_t c, int64_t H,
                         int64_t W, int64_t top, int64_t left, size_t es) {
    memset(dst, 0, (size_t)(n * H * W * c) * es);
    int64_t cols = DF__MIN(w, W - left);
    if (cols <= 0) return;
    for (int64_t b = 0; b < n; b++)
        for (int64_t y = 0; y < h && y + top < H; y++)
            memcpy(dst + (size_t)(((b * H + y + top) * W + left) * c) * es, src + (size_t)(((b * h + y) * w) * c) * es,
                   (size_t)(cols * c) * es);
}
/* Splits taps into k-blocks of about 16 KB of filter sliver each; returns how many. */
static int df__conv_kblocks(int ntap, int64_t tk, int nr, size_t es, int *kb) {
    int64_t per = DF__MAX((int64_t)1, (int64_t)(16384 / ((size_t)nr * es)) / DF__MAX(tk, (int64_t)1));
    int n = 0;
    kb[0] = 0;
    for (int t = 0; t < ntap; t = kb[n]) { n++; kb[n] = (int)DF__MIN((int64_t)ntap, t + per); }
    return n;
}

/* What the passes of one convolution share: the geometry, kernel set, the (padded) source and
   its buffer dimensions (Hb x Wb, with dY's leading padding Ty, Tx for the input gradient), the
   packed filter buffer, tap and filter-row offsets, k-blocks, threads. */
typedef struct df__conv_ws {
    df__kctx *c;
    const df__conv_geo *g;
    int dbl, isa, mr, nr, threads;
    size_t es;
    int64_t Hb, Wb, Ty, Tx, chunk;
    const char *a;
    char *bp;
    int64_t *toff, *koff;
    int *kb;
} df__conv_ws;
/* Taps of the forward filter over a buffer Wb wide: a filter row is one run when dw == 1. */
static int df__conv_taps(const df__conv_ws *W, int64_t *tk) {
    const df__conv_geo *g = W->g;
    int merged = g->dw == 1, ntap = (int)(merged ? g->kh : g->kh * g->kw);
    *tk = merged ? g->kw * g->c : g->c;
    for (int t = 0; t < ntap; t++) {
        int64_t ky = merged ? t : t / g->kw, kx = merged ? 0 : t % g->kw;
        W->toff[t] = (ky * g->dh * W->Wb + kx * g->dw) * g->c;
    }
    return ntap;
}
static void df__conv_pack(const df__conv_ws *W, const void *w, int64_t K, int64_t js, int64_t nout) {
    if (W->dbl) df__conv_pack_double((const double *)w, W->koff, K, js, nout, W->nr, (double *)(void *)W->bp);
    else df__conv_pack_float((const float *)w, W->koff, K, js, nout, W->nr, (float *)(void *)W->bp);
}
static int df__conv_forward(const df__conv_ws *W, const void *w, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t es = (int64_t)W->es, C = g->c, OC = g->oc, P = g->oh * g->ow, K = g->kh * g->kw * C;
    int64_t tk;
    int ntap = df__conv_taps(W, &tk);
    for (int64_t k = 0; k < K; k++) W->koff[k] = k * OC;
    df__conv_pack(W, w, K, 1, OC);
    df__conv_pass p;
    memset(&p, 0, sizeof p);
    p.isa = W->isa; p.ntap = ntap; p.tk = tk; p.toff = W->toff; p.kb = W->kb;
    p.nkb = df__conv_kblocks(ntap, tk, W->nr, W->es, W->kb);
    p.npix = g->n * P; p.per_img = P; p.cols = g->ow; p.chunk = W->chunk; p.nout = OC; p.bp = W->bp;
    p.a = W->a; p.a_img = W->Hb * W->Wb * C * es; p.a_row = g->sh * W->Wb * C * es; p.a_col = g->sw * C * es;
    p.c = (char *)out; p.c_img = P * OC * es; p.c_row = g->ow * OC * es; p.c_col = OC * es;
    df__parallel_for(W->c->ipool, p.npix, W->chunk, W->threads, W->dbl ? df__conv_pass_double : df__conv_pass_float, &p);
    return !p.failed;
}
static int df__conv_filter_grad(const df__conv_ws *W, const void *dy, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t C = g->c, OC = g->oc, P = g->oh * g->ow;
    const int mr = W->mr, nr = W->nr, threads = W->threads;
    df__wgrad_pass p;
    memset(&p, 0, sizeof p);
    int64_t tk;
    int ntap = df__conv_taps(W, &tk);
    p.isa = W->isa; p.tk = tk; p.toff = W->toff; p.per_tap = (tk + mr - 1) / mr; p.nout = OC; p.dw = out;
    p.npix = g->n * P; p.per_img = P; p.cols = g->ow; p.a = W->a; p.dy = dy;
    p.kc = DF__MIN((int64_t)256, DF__MAX((int64_t)64, (p.npix + 4 * threads - 1) / (4 * threads)));  /* even shares */
    p.a_img = W->Hb * W->Wb * C; p.a_row = g->sh * W->Wb * C; p.a_col = g->sw * C;
    p.tiles = ntap * p.per_tap;
    int64_t per_slot = p.tiles * mr * ((OC + nr - 1) / nr * nr);
    p.slots = (double)per_slot * threads * (double)W->es < 1e15 ? DF_MALLOC((size_t)(per_slot * threads) * W->es) : NULL;
    if (!p.slots) return 0;
    df__parallel_for(W->c->ipool, p.npix, p.kc, threads, W->dbl ? df__wgrad_pass_double : df__wgrad_pass_float, &p);
    if (!p.failed) { if (W->dbl) df__wgrad_finish_double(&p, mr, nr); else df__wgrad_finish_float(&p, mr, nr); }
    DF_FREE(p.slots);
    return !p.failed;
}
/* The input gradient for few input channels: patches scattered into per-share padded sums. */
static int df__conv_input_grad_scatter(const df__conv_ws *W, const void *w, const void *dy, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t C = g->c, OC = g->oc, P = g->oh * g->ow, K = g->kh * g->kw * C;
    const int64_t Hb = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1, Wb = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    const size_t es = W->es;
    for (int64_t o = 0; o < OC; o++) W->koff[o] = o;
    df__conv_pack(W, w, OC, OC, K);
    df__conv_scatter p;
    memset(&p, 0, sizeof p);
    p.isa = W->isa; p.npix = g->n * P; p.per_img = P; p.cols = g->ow; p.oc = OC; p.kh = g->kh; p.kw = g->kw; p.c = C;
    p.Hb = Hb; p.Wb = Wb; p.sh = g->sh; p.sw = g->sw; p.dh = g->dh; p.dw = g->dw; p.chunk = W->chunk; p.dy = dy; p.bp = W->bp;
    int64_t slot_n = g->n * Hb * Wb * C, n_acc = slot_n * W->threads;
    df_status st;
    df_tensor *acct = (double)slot_n * W->threads * (double)es < 1e15
                    ? df__tensor_alloc(W->c->alloc, W->dbl ? DF_DOUBLE : DF_FLOAT, 1, &n_acc, &st) : NULL;
    if (!acct) return 0;
    memset(acct->data, 0, (size_t)n_acc * es);
    p.acc = acct->data;
    df__parallel_for(W->c->ipool, p.npix, W->chunk, W->threads, W->dbl ? df__conv_scatter_double : df__conv_scatter_float, &p);
    for (int s = 1; s < p.next_slot && !p.failed; s++) {      /* the shares' sums into slot 0 */
        if (W->dbl) { double *d = (double *)acct->data; const double *e = d + s * slot_n; for (int64_t i = 0; i < slot_n; i++) d[i] += e[i]; }
        else { float *d = (float *)acct->data; const float *e = d + s * slot_n; for (int64_t i = 0; i < slot_n; i++) d[i] += e[i]; }
    }
    for (int64_t b = 0; b < g->n && !p.failed; b++)          /* the inside of the padded sum is dX */
        for (int64_t y = 0; y < g->h; y++) {
            char *dst = (char *)out + (size_t)((b * g->h + y) * g->w * C) * es;
            memset(dst, 0, (size_t)(g->w * C) * es);
            int64_t cols = DF__MIN(g->w, Wb - g->pw);
            if (y + g->ph < Hb && cols > 0)
                memcpy(dst, (char *)acct->data + (size_t)(((b * Hb + y + g->ph) * Wb + g->pw) * C) * es, (size_t)(cols * C) * es);
        }
    df_tensor_release(acct);
    return !p.failed;
}
/* The input gradient, one stride phase (ry, rx) at a time, from the padded dY in W->a. */
static int df__conv_input_grad_phases(const df__conv_ws *W, const void *w, void *out) {
    const df__conv_geo *g = W->g;
    const int64_t es = (int64_t)W->es, C = g->c, OC = g->oc;
    int merged = g->sw == 1 && g->dw == 1;
    for (int64_t ry = 0; ry < DF__MIN(g->sh, g->h); ry++)
        for (int64_t rx = 0; rx < DF__MIN(g->sw, g->w); rx++) {
            int ntap = 0;
            int64_t tk = merged ? g->kw * OC : OC, nk = 0;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t ny = ry + g->ph - ky * g->dh;
                if (((ny % g->sh) + g->sh) % g->sh) continue;
                int64_t rowoff = (ny / g->sh + W->Ty) * W->Wb;
                for (int64_t kx = g->kw - 1; kx >= 0; kx--) {
                    int64_t nx = rx + g->pw - kx * g->dw;
                    if (((nx % g->sw) + g->sw) % g->sw) continue;
                    if (!merged || kx == g->kw - 1) W->toff[ntap++] = (rowoff + nx / g->sw + W->Tx) * OC;
                    for (int64_t o = 0; o < OC; o++) W->koff[nk++] = ((ky * g->kw + kx) * C) * OC + o;
                }
            }
            df__conv_pack(W, w, nk, OC, C);
            df__conv_pass p;
            memset(&p, 0, sizeof p);
            int64_t nj = (g->h - ry + g->sh - 1) / g->sh, ni = (g->w - rx + g->sw - 1) / g->sw;
            p.isa = W->isa; p.ntap = ntap; p.tk = tk; p.toff = W->toff; p.kb = W->kb;
            p.nkb = df__conv_kblocks(ntap, tk, W->nr, W->es, W->kb);
            p.npix = g->n * nj * ni; p.per_img = nj * ni; p.cols = ni; p.chunk = W->chunk; p.nout = C; p.bp = W->bp;
            p.a = W->a; p.a_img = W->Hb * W->Wb * OC * es; p.a_row = W->Wb * OC * es; p.a_col = OC * es;
            p.c = (char *)out + (size_t)((ry * g->w + rx) * C) * W->es;
            p.c_img = g->h * g->w * C * es; p.c_row = g->sh * g->w * C * es; p.c_col = g->sw * C * es;
            int th = (double)p.npix * (double)nk * (double)C < 4.0e6 ? 1 : W->threads;
            df__parallel_for(W->c->ipool, p.npix, W->chunk, th, W->dbl ? df__conv_pass_double : df__conv_pass_float, &p);
            if (p.failed) return 0;
        }
    return 1;
}

/* mode 0: Y = conv(X, W); 1: dX from (W, dY); 2: dW from (X, dY). Tensors NHWC, W [kh,kw,c,oc]. */
#ifdef DATAFLOW_CUDA
static int df__step_tf32(const struct df__step *s);
#endif
static int df__conv_run(df__kctx *c, int mode, const df__conv_geo *g, int dbl, const void *x, const void *w,
                        const void *dy, void *out) {
#ifdef DATAFLOW_CUDA
    if (c->gpu) {              /* on a GPU: dataflow_cuda.cu's convolutions, scratch from the device */
        df_cuda_conv p = {g->n, g->h, g->w, g->c, g->kh, g->kw, g->oc, g->oh, g->ow, g->sh, g->sw, g->dh, g->dw, g->ph, g->pw};
        size_t bytes = df_cuda_conv2d_workspace(&p);
        int64_t words = (int64_t)((bytes + 7) / 8);
        df_tensor *scratch = bytes ? df__tensor_alloc(c->alloc, DF_DOUBLE, 1, &words, c->st) : NULL;
        if (bytes && !scratch) return 0;
        df_dtype t = dbl ? DF_DOUBLE : DF_FLOAT;
        void *ws = scratch ? scratch->data : NULL;
        int tf32 = df__step_tf32(c->step);
        df_code code = mode == 0 ? df_cuda_conv2d((df_cuda *)c->gpu, t, &p, x, w, out, ws, tf32, c->st)
                     : mode == 1 ? df_cuda_conv2d_bp_input((df_cuda *)c->gpu, t, &p, w, dy, out, ws, tf32, c->st)
                     : df_cuda_conv2d_bp_filter((df_cuda *)c->gpu, t, &p, x, dy, out, ws, tf32, c->st);
        df_tensor_release(scratch);
        return code == DF_OK;
    }
#endif
    df__conv_ws W;
    memset(&W, 0, sizeof W);
    W.c = c; W.g = g; W.dbl = dbl; W.es = dbl ? 8 : 4;
    W.isa = df__isa();                     /* AVX-512 tiles where the CPU has them */
    W.mr = df__gemm_cfgs[dbl][W.isa].mr; W.nr = df__gemm_cfgs[dbl][W.isa].nr; W.chunk = (int64_t)W.mr * 16;
    const size_t es = W.es;
    const int nr = W.nr;
    const int64_t C = g->c, OC = g->oc, P = g->oh * g->ow, K = g->kh * g->kw * C;
    if (df__conv_direct(g) && mode != 2) {  /* 1x1, stride 1, no padding: the batch is one [n*h*w, c] matrix
                                               (the filter gradient is faster below) */
        int64_t rows = g->n * P;
        int ok = mode == 0 ? df__gemm_fp(dbl, rows, OC, K, x, K, 0, w, OC, 0, out, OC, c->ipool, 0)
                           : df__gemm_fp(dbl, rows, K, OC, dy, OC, 0, w, OC, 1, out, K, c->ipool, 0);
        if (!ok) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the matrix product's packing buffers");
        return ok;
    }
    if (C == 0 || OC == 0 || P == 0) {          /* nothing to sum: zeros */
        int64_t n_out = mode == 0 ? g->n * P * OC : mode == 1 ? g->n * g->h * g->w * C : K * OC;
        memset(out, 0, (size_t)n_out * es);
        return 1;
    }
    /* the padded source: the input (modes 0, 2) or dY (mode 1) */
    int64_t top, left, src_h, src_w, src_c;
    if (mode != 1) {
        W.Hb = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1; W.Wb = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
        top = g->ph; left = g->pw; src_h = g->h; src_w = g->w; src_c = C;
    } else {
        W.Ty = DF__MAX((int64_t)0, -df__floor_div(g->ph - (g->kh - 1) * g->dh, g->sh));
        W.Tx = DF__MAX((int64_t)0, -df__floor_div(g->pw - (g->kw - 1) * g->dw, g->sw));
        W.Hb = W.Ty + DF__MAX(g->oh, df__floor_div(g->h - 1 + g->ph, g->sh) + 1);
        W.Wb = W.Tx + DF__MAX(g->ow, df__floor_div(g->w - 1 + g->pw, g->sw) + 1);
        top = W.Ty; left = W.Tx; src_h = g->oh; src_w = g->ow; src_c = OC;
    }
    const void *src = mode == 1 ? dy : x;
    const int scatter = mode == 1 && C * 2 < nr;
    int copy = !scatter && (top || left || W.Hb > src_h || W.Wb > src_w), ok = 0;
    if (!copy) { W.Hb = src_h; W.Wb = src_w; }
    int64_t max_taps = g->kh * g->kw, max_k = max_taps * DF__MAX(C, OC);
    int64_t nblk = ((mode == 1 ? C : OC) + nr - 1) / nr;
    double pad_elems = copy ? (double)g->n * (double)W.Hb * (double)W.Wb * (double)src_c : 0;
    double want = (pad_elems + (double)nblk * nr * (double)max_k) * (double)es + (double)max_taps * 12 + (double)max_k * 8;
    df_status scratch_st;
    int64_t n_pad = copy ? (int64_t)pad_elems : 0, n_pack = mode == 2 ? 0 : nblk * nr * max_k, n_scr = n_pad + n_pack + 8;
    df_tensor *scr = want < 1e15 ? df__tensor_alloc(c->alloc, dbl ? DF_DOUBLE : DF_FLOAT, 1, &n_scr, &scratch_st) : NULL;
    W.toff = want < 1e15 ? (int64_t *)DF_MALLOC((size_t)max_taps * sizeof(int64_t) + (size_t)(mode == 2 ? 1 : max_k) * sizeof(int64_t)) : NULL;
    W.kb = want < 1e15 ? (int *)DF_MALLOC((size_t)(max_taps + 1) * sizeof(int)) : NULL;
    if (scr && W.toff && W.kb) {
        char *pad = (char *)scr->data;
        W.bp = pad + (size_t)n_pad * es;
        W.koff = W.toff + max_taps;
        W.a = (const char *)src;
        if (copy) { df__conv_pad((const char *)src, pad, g->n, src_h, src_w, src_c, W.Hb, W.Wb, top, left, es); W.a = pad; }
        double macs = (double)g->n * (double)P * (double)K * (double)OC;
        W.threads = macs < 4.0e6 ? 1 : df__ipool_threads(c->ipool);
        ok = mode == 0 ? df__conv_forward(&W, w, out)
           : mode == 2 ? df__conv_filter_grad(&W, dy, out)
           : scatter ? df__conv_input_grad_scatter(&W, w, dy, out)
           : df__conv_input_grad_phases(&W, w, out);
    }
    df_tensor_release(scr); DF_FREE(W.toff); DF_FREE(W.kb);
    if (!ok) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory for the convolution's buffers");
    return ok;
}
static int df__conv_float_type(df__kctx *c, const df_tensor *t) {
    if (t->dtype == DF_FLOAT || t->dtype == DF_DOUBLE) return 1;
    DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t->dtype));
    return 0;
}
/* The 4-vector of an int32 sizes input (input_sizes, filter_sizes, orig_input_shape). */
static int df__sizes4(df__kctx *c, const df_tensor *t, int64_t *v) {
    if (t->n != 4 || t->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "The sizes input must be a 4-vector"); return 0; }
    for (int i = 0; i < 4; i++) {
        v[i] = df__int_at(t, i);
        if (v[i] < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "The sizes input has a negative entry"); return 0; }
    }
    return 1;
}
static int df__conv_check(df__kctx *c, const df__conv_geo *g, const int64_t *wd, const df_tensor *dy) {
    if (wd[2] != g->c) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "input depth %lld must equal the filter's in_depth %lld", (long long)g->c, (long long)wd[2]);
        return 0;
    }
    if (dy && (dy->rank != 4 || dy->dims[0] != g->n || dy->dims[1] != g->oh || dy->dims[2] != g->ow || dy->dims[3] != wd[3])) {
        char s1[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "out_backprop has shape %s; the convolution gives [%lld,%lld,%lld,%lld]",
                  df__dims_str(dy->rank, dy->dims, s1, 96), (long long)g->n, (long long)g->oh, (long long)g->ow, (long long)wd[3]);
        return 0;
    }
    return 1;
}
static void df__k_conv2d(df__kctx *c) {
    const df_tensor *x = c->in[0], *w = c->in[1];
    if (!df__conv_float_type(c, x)) return;
    if (!df__rank4(x) || !df__rank4(w)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input and filter must be 4-D, got ranks %d and %d", x->rank, w->rank); return; }
    df__conv_geo g;
    if (df__conv_setup(c->node, x->dims, w->dims[0], w->dims[1], 0, &g, c->st) || !df__conv_check(c, &g, w->dims, NULL)) return;
    g.oc = w->dims[3];
    int64_t od[4] = {g.n, g.oh, g.ow, g.oc};
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, od);
    if (o && o->n) df__conv_run(c, 0, &g, x->dtype == DF_DOUBLE, x->data, w->data, NULL, o->data);
}
static void df__k_conv2d_bp_input(df__kctx *c) {
    const df_tensor *w = c->in[1], *dy = c->in[2];
    int64_t xd[4];
    if (!df__conv_float_type(c, w) || !df__sizes4(c, c->in[0], xd)) return;
    if (!df__rank4(w)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "filter must be 4-D"); return; }
    df__conv_geo g;
    if (df__conv_setup(c->node, xd, w->dims[0], w->dims[1], 0, &g, c->st) || !df__conv_check(c, &g, w->dims, dy)) return;
    g.oc = w->dims[3];
    df_tensor *o = df__k_alloc(c, 0, w->dtype, 4, xd);
    if (!o || !o->n) return;
    if (!dy->n || !g.oc) { df__zero_data(o, c->st); return; }
    df__conv_run(c, 1, &g, w->dtype == DF_DOUBLE, NULL, w->data, dy->data, o->data);
}
static void df__k_conv2d_bp_filter(df__kctx *c) {
    const df_tensor *x = c->in[0], *dy = c->in[2];
    int64_t wd[4];
    if (!df__conv_float_type(c, x) || !df__sizes4(c, c->in[1], wd)) return;
    if (!df__rank4(x)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be 4-D"); return; }
    df__conv_geo g;
    if (df__conv_setup(c->node, x->dims, wd[0], wd[1], 0, &g, c->st) || !df__conv_check(c, &g, wd, dy)) return;
    g.oc = wd[3];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, wd);
    if (!o || !o->n) return;
    if (!dy->n) { df__zero_data(o, c->st); return; }
    df__conv_run(c, 2, &g, x->dtype == DF_DOUBLE, x->data, NULL, dy->data, o->data);
}
static df_code df__sf_conv2d(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0], *w = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (x->rank < 0 || w->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (x->rank != 4 || w->rank != 4) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input and filter must be 4-D");
    if (x->dims[3] >= 0 && w->dims[2] >= 0 && x->dims[3] != w->dims[2])
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input depth %lld must equal the filter's in_depth %lld",
                        (long long)x->dims[3], (long long)w->dims[2]);
    df__conv_geo g;
    if (w->dims[0] < 0 || w->dims[1] < 0) {
        o->rank = 4; o->dims[0] = x->dims[0]; o->dims[1] = o->dims[2] = -1; o->dims[3] = w->dims[3];
        return DF_OK;
    }
    if (df__conv_setup(c->node, x->dims, w->dims[0], w->dims[1], 0, &g, c->st)) return c->st->code;
    o->rank = 4; o->dims[0] = x->dims[0]; o->dims[1] = g.oh; o->dims[2] = g.ow; o->dims[3] = w->dims[3];
    return DF_OK;
}
/* A shape from a constant sizes input (input_sizes, filter_sizes, orig_input_shape). */
static df_code df__sf_sizes_input(df__shape_ctx *c, int which) {
    df__shape *o = df__sc_out(c, 0);
    const df_tensor *t = df__sc_const(c, which);
    if (!t || t->n != 4) { o->rank = 4; for (int i = 0; i < 4; i++) o->dims[i] = -1; return DF_OK; }
    o->rank = 4;
    for (int i = 0; i < 4; i++) o->dims[i] = df__int_at(t, i);
    return DF_OK;
}
static df_code df__sf_conv_bp_input(df__shape_ctx *c) { return df__sf_sizes_input(c, 0); }
static df_code df__sf_conv_bp_filter(df__shape_ctx *c) { return df__sf_sizes_input(c, 1); }
static df_code df__sf_pool_grad_avg(df__shape_ctx *c) { return df__sf_sizes_input(c, 0); }

/* ---- pooling ---- */
static int df__pool_setup(df__kctx *c, const int64_t *in, df__conv_geo *g) {
    int64_t k[4];
    if (!df__list4(c->node, "ksize", 1, k) || k[0] != 1 || k[3] != 1) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "ksize must have 4 entries, 1 in the batch and depth dimensions");
        return 0;
    }
    if (df__conv_setup(c->node, in, k[1], k[2], 1, g, c->st)) return 0;
    g->oc = g->c;
    return 1;
}
/* Pooling works on whole channel vectors of a pixel (NHWC): a window's inputs are combined
   with helpers that take n channels at once (AVX2 where present). pmax: o = p where p > o or p
   is NaN (NaN wins, as TensorFlow's); padd: o += p; pgrad (MaxPool's gradient, one window
   position): where x equals the max m (NaN matching NaN) and no earlier position of the
   window did (flag f), dx += d. */
#define DF__POOL_HELPERS(T)                                                                       \
    static void df__pmax_##T(T *o, const T *p, int64_t n) {                                       \
        for (int64_t i = 0; i < n; i++) if (p[i] > o[i] || p[i] != p[i]) o[i] = p[i];            \
    }                                                                                             \
    static void df__padd_##T(T *o, const T *p, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] += p[i]; } \
    static void df__pgrad_##T(T *dx, const T *x, const T *m, const T *d, T *f, int64_t n) {       \
        for (int64_t i = 0; i < n; i++)                                                           \
            if (f[i] == 0 && (x[i] == m[i] || (x[i] != x[i] && m[i] != m[i]))) { dx[i] += d[i]; f[i] = 1; } \
    }
DF__POOL_HELPERS(float)
DF__POOL_HELPERS(double)
#ifdef DF__X86
#define DF__POOL_HELPERS_AVX2(T, V, W, L)                                                         \
    DF__TARGET_AVX2 static void df__pmax_##T##_avx2(T *o, const T *p, int64_t n) {                \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) {                                                              \
            V ov = _mm256_loadu_##W(o + i), pv = _mm256_loadu_##W(p + i);                         \
            V take = _mm256_or_##W(_mm256_cmp_##W(pv, ov, _CMP_GT_OQ), _mm256_cmp_##W(pv, pv, _CMP_UNORD_Q)); \
            _mm256_storeu_##W(o + i, _mm256_blendv_##W(ov, pv, take));                           \
        }                                                                                         \
        df__pmax_##T(o + i, p + i, n - i);                                                        \
    }                                                                                             \
    DF__TARGET_AVX2 static void df__padd_##T##_avx2(T *o, const T *p, int64_t n) {                \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) _mm256_storeu_##W(o + i, _mm256_add_##W(_mm256_loadu_##W(o + i), _mm256_loadu_##W(p + i))); \
        df__padd_##T(o + i, p + i, n - i);                                                        \
    }                                                                                             \
    DF__TARGET_AVX2 static void df__pgrad_##T##_avx2(T *dx, const T *x, const T *m, const T *d, T *f, int64_t n) { \
        int64_t i = 0;                                                                            \
        for (; i + L <= n; i += L) {  /* f holds all-ones lanes where a position took it */       \
            V xv = _mm256_loadu_##W(x + i), mv = _mm256_loadu_##W(m + i), fv = _mm256_loadu_##W(f + i); \
            V eq = _mm256_or_##W(_mm256_cmp_##W(xv, mv, _CMP_EQ_OQ),                              \
                                 _mm256_and_##W(_mm256_cmp_##W(xv, xv, _CMP_UNORD_Q), _mm256_cmp_##W(mv, mv, _CMP_UNORD_Q))); \
            V take = _mm256_andnot_##W(fv, eq);                                                   \
            _mm256_storeu_##W(dx + i, _mm256_add_##W(_mm256_loadu_##W(dx + i), _mm256_and_##W(take, _mm256_loadu_##W(d + i)))); \
            _mm256_storeu_##W(f + i, _mm256_or_##W(fv, eq));                                      \
        }                                                                                         \
        df__pgrad_##T(dx + i, x + i, m + i, d + i, f + i, n - i);                                 \
    }
DF__POOL_HELPERS_AVX2(float, __m256, ps, 8)
DF__POOL_HELPERS_AVX2(double, __m256d, pd, 4)
#define DF__POOL_PICK(T) if (df__vec_isa() == DF__ISA_AVX2) { pmax = df__pmax_##T##_avx2; padd = df__padd_##T##_avx2; pgrad = df__pgrad_##T##_avx2; }
#else
#define DF__POOL_PICK(T)
#endif

typedef struct df__pool_job {
    const df__conv_geo *g;
    int max, failed;
    const void *x, *y, *dy;
    void *out;
} df__pool_job;
/* Forward: output rows [lo, hi) of (image, oy). Gradient: images [lo, hi) (windows of one image
   may overlap; images never do). */
#define DF__POOL(T)                                                                               \
    static void df__pool_rows_##T(void *arg, int64_t lo, int64_t hi) {                           \
        const df__pool_job *J = (const df__pool_job *)arg;                                        \
        const df__conv_geo *g = J->g;                                                             \
        const T *x = (const T *)J->x;                                                             \
        void (*pmax)(T *, const T *, int64_t) = df__pmax_##T, (*padd)(T *, const T *, int64_t) = df__padd_##T; \
        void (*pgrad)(T *, const T *, const T *, const T *, T *, int64_t) = df__pgrad_##T;         \
        DF__POOL_PICK(T)                                                                          \
        DF__UNUSED(pgrad);                                                                        \
        for (int64_t r = lo; r < hi; r++) {                                                       \
            int64_t b = r / g->oh, oy = r - b * g->oh;                                            \
            int64_t y0 = DF__MAX(oy * g->sh - g->ph, 0), y1 = DF__MIN(oy * g->sh - g->ph + g->kh, g->h); \
            for (int64_t ox = 0; ox < g->ow; ox++) {                                              \
                T *o = (T *)J->out + (r * g->ow + ox) * g->c;                                     \
                int64_t x0 = DF__MAX(ox * g->sw - g->pw, 0), x1 = DF__MIN(ox * g->sw - g->pw + g->kw, g->w); \
                if (y0 >= y1 || x0 >= x1) { for (int64_t ci = 0; ci < g->c; ci++) o[ci] = J->max ? -(T)INFINITY : 0; continue; } \
                int first = 1;                                                                    \
                for (int64_t yy = y0; yy < y1; yy++)                                              \
                    for (int64_t xx = x0; xx < x1; xx++) {                                        \
                        const T *p = x + ((b * g->h + yy) * g->w + xx) * g->c;                    \
                        if (first) { memcpy(o, p, (size_t)g->c * sizeof(T)); first = 0; }        \
                        else if (J->max) pmax(o, p, g->c);                                        \
                        else padd(o, p, g->c);                                                    \
                    }                                                                             \
                if (!J->max) { T inv = (T)1 / (T)((y1 - y0) * (x1 - x0)); for (int64_t ci = 0; ci < g->c; ci++) o[ci] *= inv; } \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* dX: MaxPool sends each gradient to the first input equal to the window's max (TF's     \
       choice); AvgPool spreads it evenly over the window's part inside the image. */         \
    static void df__pool_grad_imgs_##T(void *arg, int64_t lo, int64_t hi) {                      \
        df__pool_job *J = (df__pool_job *)arg;                                                    \
        const df__conv_geo *g = J->g;                                                             \
        const T *x = (const T *)J->x, *y = (const T *)J->y, *dy = (const T *)J->dy;               \
        void (*pmax)(T *, const T *, int64_t) = df__pmax_##T, (*padd)(T *, const T *, int64_t) = df__padd_##T; \
        void (*pgrad)(T *, const T *, const T *, const T *, T *, int64_t) = df__pgrad_##T;         \
        DF__POOL_PICK(T)                                                                          \
        DF__UNUSED(pmax);                                                                         \
        T *f = (T *)DF_MALLOC((size_t)g->c * sizeof(T) + 1);                                      \
        if (!f) { __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED); return; }                    \
        for (int64_t b = lo; b < hi; b++) {                                                       \
            T *dx = (T *)J->out + b * g->h * g->w * g->c;                                         \
            memset(dx, 0, (size_t)(g->h * g->w * g->c) * sizeof(T));                               \
            for (int64_t oy = 0; oy < g->oh; oy++)                                                \
                for (int64_t ox = 0; ox < g->ow; ox++) {                                          \
                    int64_t at = ((b * g->oh + oy) * g->ow + ox) * g->c;                          \
                    int64_t y0 = DF__MAX(oy * g->sh - g->ph, 0), y1 = DF__MIN(oy * g->sh - g->ph + g->kh, g->h); \
                    int64_t x0 = DF__MAX(ox * g->sw - g->pw, 0), x1 = DF__MIN(ox * g->sw - g->pw + g->kw, g->w); \
                    if (y0 >= y1 || x0 >= x1) continue;                                           \
                    if (!J->max) {                                                                \
                        T inv = (T)1 / (T)((y1 - y0) * (x1 - x0));                                \
                        for (int64_t ci = 0; ci < g->c; ci++) f[ci] = dy[at + ci] * inv;          \
                        for (int64_t yy = y0; yy < y1; yy++)                                      \
                            for (int64_t xx = x0; xx < x1; xx++) padd(dx + (yy * g->w + xx) * g->c, f, g->c); \
                        continue;                                                                 \
                    }                                                                             \
                    memset(f, 0, (size_t)g->c * sizeof(T));                                       \
                    for (int64_t yy = y0; yy < y1; yy++)                                          \
                        for (int64_t xx = x0; xx < x1; xx++) {                                    \
                            int64_t i = ((b * g->h + yy) * g->w + xx) * g->c;                     \
                            pgrad(dx + (yy * g->w + xx) * g->c, x + i, y + at, dy + at, f, g->c);  \
                        }                                                                         \
                }                                                                                 \
        }                                                                                         \
        DF_FREE(f);                                                                               \
    }
DF__POOL(float)
DF__POOL(double)
/* Runs pooling (grad 0) or its gradient over the session's intra-op threads when it is big. */
static int df__pool_run(df__kctx *c, int grad, int dbl, df__pool_job *J) {
    const df__conv_geo *g = J->g;
#ifdef DATAFLOW_CUDA
    if (c->gpu) {
        df_cuda_conv p = {g->n, g->h, g->w, g->c, g->kh, g->kw, g->oc, g->oh, g->ow, g->sh, g->sw, g->dh, g->dw, g->ph, g->pw};
        df_dtype t = dbl ? DF_DOUBLE : DF_FLOAT;
        df_cuda *gpu = (df_cuda *)c->gpu;
        df_code code = !grad ? df_cuda_pool(gpu, t, &p, J->max, J->x, J->out, c->st)
                     : J->max ? df_cuda_max_pool_grad(gpu, t, &p, J->x, J->y, J->dy, J->out, c->st)
                     : df_cuda_avg_pool_grad(gpu, t, &p, J->dy, J->out, c->st);
        return code == DF_OK;
    }
#endif
    double work = (double)g->n * (double)g->oh * (double)g->ow * (double)g->c * (double)(g->kh * g->kw);
    int threads = work < 1.0e6 ? 1 : df__ipool_threads(c->ipool);
    if (!grad) df__parallel_for(c->ipool, g->n * g->oh, 1, threads, dbl ? df__pool_rows_double : df__pool_rows_float, J);
    else df__parallel_for(c->ipool, g->n, 1, threads, dbl ? df__pool_grad_imgs_double : df__pool_grad_imgs_float, J);
    if (J->failed) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in pooling");
    return !J->failed;
}

static void df__k_pool(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (!df__conv_float_type(c, x)) return;
    if (!df__rank4(x)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input must be 4-D, got rank %d", x->rank); return; }
    df__conv_geo g;
    if (!df__pool_setup(c, x->dims, &g)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.c};
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, od);
    if (!o || !o->n) return;
    df__pool_job J = {&g, c->node->op->code, 0, x->data, NULL, NULL, o->data};
    df__pool_run(c, 0, x->dtype == DF_DOUBLE, &J);
}
static void df__k_max_pool_grad(df__kctx *c) {
    const df_tensor *x = c->in[0], *y = c->in[1], *dy = c->in[2];
    if (!df__conv_float_type(c, x)) return;
    if (!df__rank4(x)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "orig_input must be 4-D"); return; }
    df__conv_geo g;
    if (!df__pool_setup(c, x->dims, &g)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.c};
    for (int i = 0; i < 4; i++)
        if (y->rank != 4 || dy->rank != 4 || y->dims[i] != od[i] || dy->dims[i] != od[i] || y->dtype != x->dtype || dy->dtype != x->dtype) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "orig_output and grad must have the pooled shape [%lld,%lld,%lld,%lld]",
                      (long long)od[0], (long long)od[1], (long long)od[2], (long long)od[3]);
            return;
        }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 4, x->dims);
    if (!o || !o->n) return;
    df__pool_job J = {&g, 1, 0, x->data, y->data, dy->data, o->data};
    df__pool_run(c, 1, x->dtype == DF_DOUBLE, &J);
}
static void df__k_avg_pool_grad(df__kctx *c) {
    const df_tensor *dy = c->in[1];
    int64_t xd[4];
    if (!df__conv_float_type(c, dy) || !df__sizes4(c, c->in[0], xd)) return;
    df__conv_geo g;
    if (!df__pool_setup(c, xd, &g)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.c};
    for (int i = 0; i < 4; i++)
        if (dy->rank != 4 || dy->dims[i] != od[i]) {
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "grad must have the pooled shape [%lld,%lld,%lld,%lld]",
                      (long long)od[0], (long long)od[1], (long long)od[2], (long long)od[3]);
            return;
        }
    df_tensor *o = df__k_alloc(c, 0, dy->dtype, 4, xd);
    if (!o || !o->n) return;
    df__pool_job J = {&g, 0, 0, NULL, NULL, dy->data, o->data};
    df__pool_run(c, 1, dy->dtype == DF_DOUBLE, &J);
}
static df_code df__sf_pool(df__shape_ctx *c) {
    const df__shape *x = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    if (x->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (x->rank != 4) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "input must be 4-D, got rank %d", x->rank);
    int64_t k[4];
    if (!df__list4(c->node, "ksize", 1, k) || k[0] != 1 || k[3] != 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ksize must have 4 entries, 1 in the batch and depth dimensions");
    df__conv_geo g;
    if (df__conv_setup(c->node, x->dims, k[1], k[2], 1, &g, c->st)) return c->st->code;
    o->rank = 4; o->dims[0] = x->dims[0]; o->dims[1] = g.oh; o->dims[2] = g.ow; o->dims[3] = x->dims[3];
    return DF_OK;
}

/* ---- BiasAdd ---- */
static int df__bias_axis(const df_node *n, int rank) {
    return !strcmp(df__attr_s(n, "data_format"), "NCHW") && rank >= 3 ? 1 : rank - 1;
}
static df_code df__sf_bias_add(df__shape_ctx *c) {
    const df__shape *v = &c->in_shapes[0], *b = &c->in_shapes[1];
    *df__sc_out(c, 0) = *v;
    if (v->rank >= 0 && v->rank < 2)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Input to BiasAdd must be at least 2-D, got rank %d", v->rank);
    if (b->rank >= 0 && b->rank != 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Biases must be 1-D, got rank %d", b->rank);
    if (v->rank >= 2 && b->rank == 1) {
        int ax = df__bias_axis(c->node, v->rank);
        if (v->dims[ax] >= 0 && b->dims[0] >= 0 && v->dims[ax] != b->dims[0])
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Must provide as many biases as the channel "
                            "dimension of the input: %lld vs. %lld", (long long)b->dims[0], (long long)v->dims[ax]);
    }
    return DF_OK;
}
/* Rows [lo, hi) of a channels-last BiasAdd: each row of ch values plus the bias vector. */
typedef struct df__bias_job { df__row_fn add; char *o; const char *v, *b; int64_t ch; size_t es; } df__bias_job;
static void df__bias_rows(void *arg, int64_t lo, int64_t hi) {
    const df__bias_job *j = (const df__bias_job *)arg;
    for (int64_t r = lo; r < hi; r++)
        j->add(j->o + (size_t)(r * j->ch) * j->es, j->v + (size_t)(r * j->ch) * j->es, j->b, j->ch, 1, 1);
}
static void df__k_bias_add(df__kctx *c) {
    const df_tensor *v = c->in[0], *b = c->in[1];
    if (v->rank < 2 || b->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAdd needs a value of rank >= 2 and 1-D biases"); return; }
    int ax = df__bias_axis(c->node, v->rank);
    if (v->dims[ax] != b->dims[0]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Must provide as many biases as the channel dimension of the input: %lld vs. %lld", (long long)b->dims[0], (long long)v->dims[ax]); return; }
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, v->dtype, v->rank, v->dims);
    if (!o || !o->n) return;
    int64_t inner = 1, ch = v->dims[ax];
    for (int i = ax + 1; i < v->rank; i++) inner *= v->dims[i];
    /* blocks of `inner` elements share one bias; with the channels last (NHWC, a dense layer)
       inner is 1 and each row adds the bias vector, which the row kernels vectorise */
    df__row_fn add = df__binary_row(DF__B_ADD, v->dtype);
    size_t es = df_dtype_size(v->dtype);
    if (inner == 1) {          /* over 1 MB: rows shared between the intra-op threads */
        df__bias_job j = {add, (char *)o->data, (const char *)v->data, (const char *)b->data, ch, es};
        int threads = (size_t)v->n * es < ((size_t)1 << 20) ? 1 : df__ipool_threads(c->ipool);
        df__parallel_for(c->ipool, v->n / ch, DF__MAX((int64_t)1, 1024 / ch), threads, df__bias_rows, &j);
        return;
    }
    for (int64_t blk = 0; blk < v->n / inner; blk++)
        add((char *)o->data + (size_t)(blk * inner) * es, (const char *)v->data + (size_t)(blk * inner) * es,
            (const char *)b->data + (size_t)(blk % ch) * es, inner, 1, 0);
}

/* BiasAddGrad: the bias's gradient, out_backprop summed over every axis but the channels. */
static df_code df__sf_bias_add_grad(df__shape_ctx *c) {
    const df__shape *v = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1;
    o->dims[0] = -1;
    if (v->rank >= 0 && v->rank < 2)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Input to BiasAddGrad must be at least 2-D, got rank %d", v->rank);
    if (v->rank >= 2) o->dims[0] = v->dims[df__bias_axis(c->node, v->rank)];
    return DF_OK;
}
static void df__k_bias_add_grad(df__kctx *c) {
    const df_tensor *v = c->in[0];
    if (v->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAddGrad needs out_backprop of rank >= 2, got %d", v->rank); return; }
    int ax = df__bias_axis(c->node, v->rank);
    int64_t ch = v->dims[ax], inner = 1;
    for (int i = ax + 1; i < v->rank; i++) inner *= v->dims[i];
    df_tensor *o = df__k_alloc(c, 0, v->dtype, 1, &ch);
    if (!o || !ch) return;
    double *acc = (double *)DF_MALLOC((size_t)ch * sizeof(double));
    if (!acc) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in BiasAddGrad"); return; }
    for (int64_t j = 0; j < ch; j++) acc[j] = 0;
    int f32 = v->dtype == DF_FLOAT;
    for (int64_t i = 0; i < v->n; i++) acc[(i / inner) % ch] += f32 ? ((const float *)v->data)[i] : ((const double *)v->data)[i];
    for (int64_t j = 0; j < ch; j++) {
        if (f32) ((float *)o->data)[j] = (float)acc[j]; else ((double *)o->data)[j] = acc[j];
    }
    DF_FREE(acc);
}

/* ---- reductions: Sum, Mean, Max, Min, Prod over any axes ---- */
enum { DF__R_SUM, DF__R_MEAN, DF__R_MAX, DF__R_MIN, DF__R_PROD };

static df_code df__norm_axes(const df_node *n, const df_tensor *axes, int rank, unsigned *mask, df_status *st) {
    *mask = 0;
    if (!df__is_int_tensor(axes) || axes->rank > 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "reduction_indices must be a scalar or 1-D int32/int64 tensor");
    for (int64_t i = 0; i < axes->n; i++) {
        int64_t a = df__int_at(axes, i);
        if (a < -rank || a >= rank)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Invalid reduction dimension %lld for input with %d dimensions",
                            (long long)a, rank);
        unsigned bit = 1u << (a < 0 ? a + rank : a);
        if (*mask & bit)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Axes contains duplicate dimension: %lld", (long long)(a < 0 ? a + rank : a));
        *mask |= bit;
    }
    return DF_OK;
}
static void df__reduced_shape(int rank, const int64_t *dims, unsigned mask, int keep, df__shape *out) {
    out->rank = 0;
    for (int i = 0; i < rank; i++) {
        if (mask & (1u << i)) { if (keep) out->dims[out->rank++] = 1; }
        else out->dims[out->rank++] = dims[i];
    }
}
static df_code df__sf_reduce(df__shape_ctx *c) {
    const df_tensor *axes = df__sc_const(c, 1);
    const df__shape *in = &c->in_shapes[0];
    int keep = df__attr_b(c->node, "keep_dims", 0);
    df__shape *o = df__sc_out(c, 0);
    if (in->rank < 0 || !axes) {
        *o = df__shape_unknown();
        if (keep && in->rank >= 0) { o->rank = in->rank; for (int i = 0; i < in->rank; i++) o->dims[i] = -1; }
        return DF_OK;
    }
    unsigned mask;
    if (df__norm_axes(c->node, axes, in->rank, &mask, c->st)) return c->st->code;
    df__reduced_shape(in->rank, in->dims, mask, keep, o);
    return DF_OK;
}
#ifdef DF__X86
/* Sums of a float32/float64 row in float64, four vector accumulators (the plain loop's order
   differs only in the last bits of a float64 sum). */
DF__TARGET_AVX2 static double df__vsum_f32(const float *x, int64_t n) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(b)));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)));
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
    double r = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < n; i++) r += x[i];
    return r;
}
DF__TARGET_AVX2 static double df__vsum_f64(const double *x, int64_t n) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_pd(s0, _mm256_loadu_pd(x + i));
        s1 = _mm256_add_pd(s1, _mm256_loadu_pd(x + i + 4));
        s2 = _mm256_add_pd(s2, _mm256_loadu_pd(x + i + 8));
        s3 = _mm256_add_pd(s3, _mm256_loadu_pd(x + i + 12));
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
    double r = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < n; i++) r += x[i];
    return r;
}
/* acc[j] += row[j] for a float32 or float64 row (column sums), float64 accumulators. */
DF__TARGET_AVX2 static void df__vacc_f32(double *acc, const float *row, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 a = _mm256_loadu_ps(row + j);
        _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), _mm256_cvtps_pd(_mm256_castps256_ps128(a))));
        _mm256_storeu_pd(acc + j + 4, _mm256_add_pd(_mm256_loadu_pd(acc + j + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))));
    }
    for (; j < n; j++) acc[j] += row[j];
}
DF__TARGET_AVX2 static void df__vacc_f64(double *acc, const double *row, int64_t n) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), _mm256_loadu_pd(row + j)));
    for (; j < n; j++) acc[j] += row[j];
}
#endif
/* Sum and Mean of float32/float64 in float64 where x is [on, count] summed within rows
   (cols = 0) or [count, on] summed over rows (cols = 1). Past 1 MB the work is split over the
   intra-op threads: by output where outputs are many; otherwise by blocks of a fixed size whose
   partial sums are added in order, so the bits never depend on the number of threads. Returns 0
   after setting the status when memory ran out. */
enum { DF__SUM_BLOCK = 1 << 15 };
typedef struct df__sum_job {
    int f32, vec, mode;         /* 0 row sums, 1 one long row in blocks, 2 column ranges, 3 row blocks */
    const void *x;
    int64_t on, count, rows_per_block;
    double *acc, *part;
} df__sum_job;
static double df__row_sum(const df__sum_job *j, int64_t off, int64_t n) {
#ifdef DF__X86
    if (j->vec) return j->f32 ? df__vsum_f32((const float *)j->x + off, n) : df__vsum_f64((const double *)j->x + off, n);
#endif
    double s = 0;
    if (j->f32) { const float *r = (const float *)j->x + off; for (int64_t i = 0; i < n; i++) s += r[i]; }
    else { const double *r = (const double *)j->x + off; for (int64_t i = 0; i < n; i++) s += r[i]; }
    return s;
}
static void df__col_acc(const df__sum_job *j, double *acc, int64_t off, int64_t n) {
#ifdef DF__X86
    if (j->vec) {
        if (j->f32) df__vacc_f32(acc, (const float *)j->x + off, n); else df__vacc_f64(acc, (const double *)j->x + off, n);
        return;
    }
#endif
    if (j->f32) { const float *r = (const float *)j->x + off; for (int64_t i = 0; i < n; i++) acc[i] += r[i]; }
    else { const double *r = (const double *)j->x + off; for (int64_t i = 0; i < n; i++) acc[i] += r[i]; }
}
static void df__sum_share(void *arg, int64_t lo, int64_t hi) {
    const df__sum_job *j = (const df__sum_job *)arg;
    switch (j->mode) {
    case 0: for (int64_t i = lo; i < hi; i++) j->acc[i] = df__row_sum(j, i * j->count, j->count); break;
    case 1:
        for (int64_t b = lo; b < hi; b++)
            j->part[b] = df__row_sum(j, b * DF__SUM_BLOCK, DF__MIN((int64_t)DF__SUM_BLOCK, j->count - b * DF__SUM_BLOCK));
        break;
    case 2:
        for (int64_t i = lo; i < hi; i++) j->acc[i] = 0;
        for (int64_t r = 0; r < j->count; r++) df__col_acc(j, j->acc + lo, r * j->on + lo, hi - lo);
        break;
    default:
        for (int64_t b = lo; b < hi; b++) {
            double *p = j->part + b * j->on;
            for (int64_t i = 0; i < j->on; i++) p[i] = 0;
            int64_t r1 = DF__MIN(j->count, (b + 1) * j->rows_per_block);
            for (int64_t r = b * j->rows_per_block; r < r1; r++) df__col_acc(j, p, r * j->on, j->on);
        }
    }
}
static int df__float_sums(df__kctx *c, const df_tensor *x, int cols, int64_t on, int64_t count, int mean, df_tensor *o) {
    df__sum_job j;
    memset(&j, 0, sizeof j);
    j.f32 = x->dtype == DF_FLOAT; j.x = x->data; j.on = on; j.count = count;
#ifdef DF__X86
    j.vec = df__vec_isa() == DF__ISA_AVX2;
#endif
    int64_t len, unit = 1, blocks = 0;
    if (!cols && on > 1) { j.mode = 0; len = on; }
    else if (!cols) { j.mode = 1; blocks = len = (count + DF__SUM_BLOCK - 1) / DF__SUM_BLOCK; }
    else if (on >= 256 || count * on <= DF__SUM_BLOCK) { j.mode = 2; len = on; unit = 64; }
    else {
        j.mode = 3;
        j.rows_per_block = DF__MAX((int64_t)1, DF__SUM_BLOCK / on);
        blocks = len = (count + j.rows_per_block - 1) / j.rows_per_block;
    }
    size_t accn = (size_t)DF__MAX(on, 1), partn = (size_t)blocks * (j.mode == 3 ? (size_t)on : 1);
    j.acc = (double *)DF_MALLOC((accn + partn) * sizeof(double));
    if (!j.acc) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in reduction"); return 0; }
    j.part = j.acc + accn;
    int threads = (size_t)x->n * df_dtype_size(x->dtype) >= ((size_t)1 << 20) ? df__ipool_threads(c->ipool) : 1;
    df__parallel_for(c->ipool, len, unit, threads, df__sum_share, &j);
    if (j.mode == 1) { double s = 0; for (int64_t b = 0; b < blocks; b++) s += j.part[b]; j.acc[0] = s; }
    if (j.mode == 3)
        for (int64_t i = 0; i < on; i++) {
            double s = 0;
            for (int64_t b = 0; b < blocks; b++) s += j.part[b * on + i];
            j.acc[i] = s;
        }
    if (count == 0) for (int64_t i = 0; i < on; i++) j.acc[i] = 0;
    for (int64_t i = 0; i < on; i++) {
        double v = mean ? (count ? j.acc[i] / (double)count : NAN) : j.acc[i];
        if (j.f32) ((float *)o->data)[i] = (float)v; else ((double *)o->data)[i] = v;
    }
    DF_FREE(j.acc);
    return 1;
}
static void df__k_reduce(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int code = c->node->op->code, keep = df__attr_b(c->node, "keep_dims", 0);
    unsigned mask;
    if (df__norm_axes(c->node, c->in[1], x->rank, &mask, c->st)) return;
    df__shape os;
    df__reduced_shape(x->rank, x->dims, mask, keep, &os);
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o) return;
    int64_t on = o->n, count = on ? x->n / on : 0;
    if (x->n == 0) count = 0;
    else if (on == 0) return;
    if ((x->dtype == DF_FLOAT || x->dtype == DF_DOUBLE) && (code == DF__R_SUM || code == DF__R_MEAN) && mask) {
        /* fast paths: the reduced axes lead (sum rows together) or trail (sum within rows) */
        int lo = 0, hi = x->rank;
        while (lo < x->rank && (mask >> lo & 1u)) lo++;
        while (hi > 0 && (mask >> (hi - 1) & 1u)) hi--;
        int prefix = (mask >> lo) == 0, suffix = hi == 0 || (mask & ((1u << hi) - 1)) == 0;
        if (prefix || suffix) {
            df__float_sums(c, x, prefix && !(suffix && on == 1), on, count, code == DF__R_MEAN, o);
            return;
        }
    }
    double *acc = (double *)DF_MALLOC((size_t)DF__MAX(on, 1) * sizeof(double));
    int64_t *iacc = (int64_t *)DF_MALLOC((size_t)DF__MAX(on, 1) * sizeof(int64_t));
    if (!acc || !iacc) { DF_FREE(acc); DF_FREE(iacc); DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory in reduction"); return; }
    int is_int = df__is_integer_type(x->dtype);
    double init = code == DF__R_PROD ? 1 : code == DF__R_MAX ? -INFINITY : code == DF__R_MIN ? INFINITY : 0;
    int64_t iinit = code == DF__R_PROD ? 1 : code == DF__R_MAX ? (x->dtype == DF_INT32 ? INT32_MIN : INT64_MIN)
                  : code == DF__R_MIN ? (x->dtype == DF_INT32 ? INT32_MAX : INT64_MAX) : 0;
    for (int64_t i = 0; i < on; i++) { acc[i] = init; iacc[i] = iinit; }
    /* output stride of each input dim (0 where reduced) */
    int64_t ostride[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, oi = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        if (mask & (1u << d)) ostride[d] = 0;
        else { ostride[d] = s; s *= x->dims[d]; }
    }
    for (int64_t i = 0; i < x->n; i++) {
        if (is_int) {
            int64_t v = df__get_i64(x->dtype, x->data, i), *a = &iacc[oi];
            switch (code) {
            case DF__R_SUM: case DF__R_MEAN: *a = (int64_t)((uint64_t)*a + (uint64_t)v); break;
            case DF__R_PROD: *a = (int64_t)((uint64_t)*a * (uint64_t)v); break;
            case DF__R_MAX: if (v > *a) *a = v; break;
            default: if (v < *a) *a = v; break;
            }
        } else {
            double v = df__get_f64(x->dtype, x->data, i), *a = &acc[oi];
            switch (code) {
            case DF__R_SUM: case DF__R_MEAN: *a += v; break;
            case DF__R_PROD: *a *= v; break;
            case DF__R_MAX: if (v > *a || v != v) *a = v; break;
            default: if (v < *a || v != v) *a = v; break;
            }
        }
        for (int d = x->rank - 1; d >= 0; d--) {
            idx[d]++; oi += ostride[d];
            if (idx[d] < x->dims[d]) break;
            oi -= ostride[d] * idx[d]; idx[d] = 0;
        }
    }
    for (int64_t i = 0; i < on; i++) {
        if (is_int) {
            int64_t v = iacc[i];
            if (code == DF__R_MEAN) v = count ? v / count : 0;
            df__set_from_i64(x->dtype, o->data, i, v);
        } else {
            double v = acc[i];
            if (code == DF__R_MEAN) v = count ? v / (double)count : NAN;
            df__set_from_f64(x->dtype, o->data, i, v);
        }
    }
    DF_FREE(acc);
    DF_FREE(iacc);
}

/* ---- ArgMax ---- */
static df_code df__argmax_axis(const df_node *n, const df_tensor *dim, int rank, int *axis, df_status *st) {
    if (!df__is_int_tensor(dim) || dim->n != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "dimension must be a scalar int32/int64");
    int64_t a = df__int_at(dim, 0);
    if (a < -rank || a >= rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected dimension in the range [%d, %d), but got %lld", -rank, rank, (long long)a);
    *axis = (int)(a < 0 ? a + rank : a);
    return DF_OK;
}
static df_code df__sf_argmax(df__shape_ctx *c) {
    const df_tensor *dim = df__sc_const(c, 1);
    const df__shape *in = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    if (in->rank < 0 || !dim) { *o = df__shape_unknown(); return DF_OK; }
    int axis;
    if (df__argmax_axis(c->node, dim, in->rank, &axis, c->st)) return c->st->code;
    df__reduced_shape(in->rank, in->dims, 1u << axis, 0, o);
    return DF_OK;
}
static void df__k_argmax(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int axis;
    if (df__argmax_axis(c->node, c->in[1], x->rank, &axis, c->st)) return;
    if (x->dims[axis] == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Reduction axis %d is empty in shape of rank %d", axis, x->rank); return; }
    df__shape os;
    df__reduced_shape(x->rank, x->dims, 1u << axis, 0, &os);
    df_dtype ot = df__attr_type(c->node, "output_type");
    df_tensor *o = df__k_alloc(c, 0, ot, os.rank, os.dims);
    if (!o || !o->n) return;
    int64_t inner = 1, len = x->dims[axis];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    int is_max = c->node->op->code == 0;
    for (int64_t oi = 0; oi < o->n; oi++) {
        int64_t outer = oi / inner, in_i = oi % inner, best = 0;
        int64_t base = outer * len * inner + in_i;
        double bv = df__get_f64(x->dtype, x->data, base);
        for (int64_t j = 1; j < len; j++) {
            double v = df__get_f64(x->dtype, x->data, base + j * inner);
            if ((is_max ? v > bv : v < bv) && bv == bv) { bv = v; best = j; }
        }
        df__set_from_i64(ot, o->data, oi, best);
    }
}

/* ---- shape manipulation ---- */
static df_code df__reshape_dims(const df_node *n, int64_t in_count, const df_tensor *shape, df__shape *out,
                                int in_known, df_status *st) {
    if (!df__is_int_tensor(shape) || shape->rank > 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "shape must be a 1-D int32/int64 tensor");
    if (shape->n > DF_MAX_RANK)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Reshape to rank %lld exceeds the maximum %d", (long long)shape->n, DF_MAX_RANK);
    int unknown = -1;
    int64_t product = 1;
    out->rank = (int)shape->n;
    for (int i = 0; i < out->rank; i++) {
        int64_t d = df__int_at(shape, i);
        out->dims[i] = d;
        if (d == -1) {
            if (unknown >= 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Only one input size may be -1, not both %d and %d", unknown, i);
            unknown = i;
        } else if (d < 0) {
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Size %d must be non-negative, not %lld", i, (long long)d);
        } else {
            if (d && product > INT64_MAX / d) return df__fail(st, n, DF_INVALID_ARGUMENT, "Reshape: shape has too many elements");
            product *= d;
        }
    }
    if (!in_known) return DF_OK;
    if (unknown >= 0) {
        if (product == 0 || in_count % product != 0)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, but the "
                            "requested shape cannot hold them (product of known dims %lld)", (long long)in_count, (long long)product);
        out->dims[unknown] = in_count / product;
    } else if (product != in_count) {
        char s[128];
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, but the "
                        "requested shape has %lld (shape %s)", (long long)in_count, (long long)product,
                        df__dims_str(out->rank, out->dims, s, sizeof s));
    }
    return DF_OK;
}
static int64_t df__shape_count(const df__shape *s) {
    if (s->rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) { if (s->dims[i] < 0) return -1; n *= s->dims[i]; }
    return n;
}
static df_code df__sf_reshape(df__shape_ctx *c) {
    const df_tensor *shape = df__sc_const(c, 1);
    if (!shape) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    int64_t count = df__shape_count(&c->in_shapes[0]);
    return df__reshape_dims(c->node, count, shape, df__sc_out(c, 0), count >= 0, c->st);
}
static void df__k_reshape(df__kctx *c) {
    df__shape s;
    if (df__reshape_dims(c->node, c->in[0]->n, c->in[1], &s, 1, c->st)) return;
    c->out[0] = df__tensor_view(c->in[0], s.rank, s.dims, c->st);
}

static df_code df__perm(const df_node *n, const df_tensor *perm, int rank, int *p, df_status *st) {
    if (!df__is_int_tensor(perm) || perm->rank != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "perm must be a 1-D int32/int64 tensor");
    if (perm->n != rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "transpose expects a vector of size %d. But input(1) is a vector of size %lld", rank, (long long)perm->n);
    unsigned seen = 0;
    for (int i = 0; i < rank; i++) {
        int64_t v = df__int_at(perm, i);
        if (v < 0 || v >= rank) return df__fail(st, n, DF_INVALID_ARGUMENT, "%lld is out of range [0 .. %d)", (long long)v, rank);
        if (seen & (1u << v)) return df__fail(st, n, DF_INVALID_ARGUMENT, "%lld is duplicated in perm: not a permutation", (long long)v);
        seen |= 1u << v;
        p[i] = (int)v;
    }
    return DF_OK;
}
static df_code df__sf_transpose(df__shape_ctx *c) {
    const df_tensor *perm = df__sc_const(c, 1);
    const df__shape *in = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    if (in->rank < 0 || !perm) { *o = df__shape_unknown(); if (perm && perm->rank == 1 && perm->n <= DF_MAX_RANK) { o->rank = (int)perm->n; for (int i = 0; i < o->rank; i++) o->dims[i] = -1; } return DF_OK; }
    int p[DF_MAX_RANK];
    if (df__perm(c->node, perm, in->rank, p, c->st)) return c->st->code;
    o->rank = in->rank;
    for (int i = 0; i < in->rank; i++) o->dims[i] = in->dims[p[i]];
    return DF_OK;
}
static void df__k_transpose(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int p[DF_MAX_RANK];
    if (df__perm(c->node, c->in[1], x->rank, p, c->st)) return;
    int64_t dims[DF_MAX_RANK], istride[DF_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) { istride[d] = s; s *= x->dims[d]; }
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[p[i]];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    int64_t idx[DF_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < o->n; i++) {
        memcpy((char *)o->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
        for (int d = x->rank - 1; d >= 0; d--) {
            idx[d]++; off += istride[p[d]];
            if (idx[d] < dims[d]) break;
            off -= istride[p[d]] * idx[d]; idx[d] = 0;
        }
    }
}

static df_code df__expand_dims(const df_node *n, const df__shape *in, const df_tensor *dim, df__shape *o, df_status *st) {
    if (!df__is_int_tensor(dim) || dim->n != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "dim must be a scalar (or single-element) int32/int64 tensor");
    if (in->rank + 1 > DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "ExpandDims: rank would exceed %d", DF_MAX_RANK);
    int64_t d = df__int_at(dim, 0);
    if (d < -in->rank - 1 || d > in->rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Tried to expand dim index %lld for tensor with %d dimensions", (long long)d, in->rank);
    if (d < 0) d += in->rank + 1;
    o->rank = in->rank + 1;
    for (int i = 0, j = 0; i < o->rank; i++) o->dims[i] = i == d ? 1 : in->dims[j++];
    return DF_OK;
}
static df_code df__sf_expand_dims(df__shape_ctx *c) {
    const df_tensor *dim = df__sc_const(c, 1);
    if (!dim || c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__expand_dims(c->node, &c->in_shapes[0], dim, df__sc_out(c, 0), c->st);
}
static void df__k_expand_dims(df__kctx *c) {
    df__shape in = df__shape_of(c->in[0]), o;
    if (df__expand_dims(c->node, &in, c->in[1], &o, c->st)) return;
    c->out[0] = df__tensor_view(c->in[0], o.rank, o.dims, c->st);
}

static df_code df__squeeze(const df_node *n, const df__shape *in, df__shape *o, df_status *st) {
    const df__attr *a = df__node_attr(n, "squeeze_dims");
    unsigned mask = 0;
    for (int i = 0; a && i < a->u.ints.n; i++) {
        int64_t d = a->u.ints.v[i];
        if (d < -in->rank || d >= in->rank)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Tried to squeeze dim index %lld for tensor with %d dimensions", (long long)d, in->rank);
        if (d < 0) d += in->rank;
        if (in->dims[d] != 1 && in->dims[d] != -1)
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Can not squeeze dim[%lld], expected a dimension of 1, got %lld", (long long)d, (long long)in->dims[d]);
        mask |= 1u << d;
    }
    o->rank = 0;
    for (int i = 0; i < in->rank; i++) {
        int drop = mask ? (mask >> i) & 1 : in->dims[i] == 1;
        if (!drop) o->dims[o->rank++] = in->dims[i];
    }
    return DF_OK;
}
static df_code df__sf_squeeze(df__shape_ctx *c) {
    if (c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__squeeze(c->node, &c->in_shapes[0], df__sc_out(c, 0), c->st);
}
static void df__k_squeeze(df__kctx *c) {
    df__shape in = df__shape_of(c->in[0]), o;
    if (df__squeeze(c->node, &in, &o, c->st)) return;
    c->out[0] = df__tensor_view(c->in[0], o.rank, o.dims, c->st);
}

static df_code df__sf_shape_op(df__shape_ctx *c) {
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1;
    o->dims[0] = c->in_shapes[0].rank;
    return DF_OK;
}
static void df__k_shape(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t n = x->rank;
    df_dtype t = df__attr_type(c->node, "out_type");
    df_tensor *o = df__k_alloc(c, 0, t, 1, &n);
    if (!o) return;
    for (int i = 0; i < x->rank; i++) {
        if (t == DF_INT32 && x->dims[i] > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Dimension %d does not fit int32; use out_type int64", i); return; }
        df__set_from_i64(t, o->data, i, x->dims[i]);
    }
}
static void df__k_size(df__kctx *c) {
    df_dtype t = df__attr_type(c->node, "out_type");
    if (t == DF_INT32 && c->in[0]->n > INT32_MAX) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Number of elements does not fit int32; use out_type int64"); return; }
    df_tensor *o = df__k_alloc(c, 0, t, 0, NULL);
    if (o) df__set_from_i64(t, o->data, 0, c->in[0]->n);
}
static void df__k_rank(df__kctx *c) {
    df_tensor *o = df__k_alloc(c, 0, DF_INT32, 0, NULL);
    if (o) *(int32_t *)o->data = c->in[0]->rank;
}

static df_code df__dims_from(const df_node *n, const df_tensor *t, df__shape *o, const char *what, df_status *st) {
    if (!df__is_int_tensor(t) || t->rank != 1)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "%s must be a 1-D int32/int64 tensor", what);
    if (t->n > DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "%s has rank %lld, above the maximum %d", what, (long long)t->n, DF_MAX_RANK);
    o->rank = (int)t->n;
    int64_t count = 1;
    for (int i = 0; i < o->rank; i++) {
        o->dims[i] = df__int_at(t, i);
        if (o->dims[i] < 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "%s[%d] = %lld must be non-negative", what, i, (long long)o->dims[i]);
        if (o->dims[i] && count > INT64_MAX / o->dims[i]) return df__fail(st, n, DF_INVALID_ARGUMENT, "%s has too many elements", what);
        count *= o->dims[i];
    }
    return DF_OK;
}
static df_code df__sf_fill(df__shape_ctx *c) {
    const df_tensor *d = df__sc_const(c, 0);
    if (c->in_shapes[1].rank > 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "value must be a scalar");
    if (!d) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, d, df__sc_out(c, 0), "dims", c->st);
}
static void df__fill_value(df_tensor *o, const void *v) {
    size_t es = df_dtype_size(o->dtype);
    for (int64_t i = 0; i < o->n; i++) memcpy((char *)o->data + (size_t)i * es, v, es);
}
static void df__k_fill(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "dims", c->st)) return;
    if (c->in[1]->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "value must be a scalar"); return; }
    df_tensor *o = df__k_alloc(c, 0, c->in[1]->dtype, s.rank, s.dims);
    if (o) df__fill_value(o, c->in[1]->data);
}
static void df__k_zeros_like(df__kctx *c) {
    df_tensor *o = df__k_alloc_like(c, 0, c->in[0]->dtype, c->in[0]);
    if (!o) return;
    if (c->node->op->code == 0) memset(o->data, 0, o->nbytes);
    else for (int64_t i = 0; i < o->n; i++) {
        if (df__is_integer_type(o->dtype)) df__set_from_i64(o->dtype, o->data, i, 1);
        else df__set_from_f64(o->dtype, o->data, i, 1.0);
    }
}

static df_code df__range_count(const df_node *n, double start, double limit, double delta, int is_int,
                               int64_t *count, df_status *st) {
    if (delta == 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires delta != 0: %g", delta);
    if (delta > 0 && start > limit) return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: %g/%g", start, limit);
    if (delta < 0 && start < limit) return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires start >= limit when delta < 0: %g/%g", start, limit);
    double size = is_int ? ceil(fabs(limit - start) / fabs(delta)) : ceil(fabs((limit - start) / delta));
    if (!(size >= 0) || size > (double)(INT64_MAX / 16))
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Requires a size that fits int64: %g", size);
    *count = (int64_t)size;
    return DF_OK;
}
static df_code df__sf_range(df__shape_ctx *c) {
    const df_tensor *s = df__sc_const(c, 0), *l = df__sc_const(c, 1), *d = df__sc_const(c, 2);
    df__shape *o = df__sc_out(c, 0);
    o->rank = 1; o->dims[0] = -1;
    if (s && l && d && s->n == 1 && l->n == 1 && d->n == 1)
        return df__range_count(c->node, df__get_f64(s->dtype, s->data, 0), df__get_f64(l->dtype, l->data, 0),
                               df__get_f64(d->dtype, d->data, 0), df__is_integer_type(s->dtype), &o->dims[0], c->st);
    return DF_OK;
}
static void df__k_range(df__kctx *c) {
    const df_tensor *s = c->in[0], *l = c->in[1], *d = c->in[2];
    if (s->rank || l->rank || d->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "start, limit and delta must be scalars"); return; }
    int is_int = df__is_integer_type(s->dtype);
    int64_t n;
    if (is_int) {
        int64_t a = df__int_at(s, 0), b = df__int_at(l, 0), e = df__int_at(d, 0);
        if (df__range_count(c->node, (double)a, (double)b, (double)e, 1, &n, c->st)) return;
        df_tensor *o = df__k_alloc(c, 0, s->dtype, 1, &n);
        if (o) for (int64_t i = 0; i < n; i++) df__set_from_i64(s->dtype, o->data, i, a + i * e);
    } else {
        double a = df__get_f64(s->dtype, s->data, 0), b = df__get_f64(l->dtype, l->data, 0), e = df__get_f64(d->dtype, d->data, 0);
        if (df__range_count(c->node, a, b, e, 0, &n, c->st)) return;
        df_tensor *o = df__k_alloc(c, 0, s->dtype, 1, &n);
        if (o) for (int64_t i = 0; i < n; i++) df__set_from_f64(s->dtype, o->data, i, a + (double)i * e);
    }
}

/* ---- ConcatV2, Pack, Unpack ---- */
static df_code df__sf_concat(df__shape_ctx *c) {
    int n = c->node->n_inputs - 1;
    const df_tensor *axis_t = df__sc_const(c, n);
    df__shape *o = df__sc_out(c, 0);
    int rank = -1;
    for (int i = 0; i < n; i++) {
        if (c->in_shapes[i].rank < 0) continue;
        if (rank >= 0 && c->in_shapes[i].rank != rank)
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ConcatOp: Ranks of all input tensors should match: "
                            "shape[0] has rank %d, shape[%d] has rank %d", rank, i, c->in_shapes[i].rank);
        rank = c->in_shapes[i].rank;
    }
    if (rank < 0 || !axis_t) { *o = df__shape_unknown(); if (rank >= 0) { o->rank = rank; for (int d = 0; d < rank; d++) o->dims[d] = -1; } return DF_OK; }
    if (axis_t->n != 1 || !df__is_int_tensor(axis_t)) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "axis must be a scalar int32/int64");
    int64_t ax = df__int_at(axis_t, 0);
    if (ax < -rank || ax >= rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %lld", -rank, rank, (long long)ax);
    if (ax < 0) ax += rank;
    o->rank = rank;
    for (int d = 0; d < rank; d++) o->dims[d] = d == ax ? 0 : -1;
    for (int i = 0; i < n; i++) {
        const df__shape *s = &c->in_shapes[i];
        if (s->rank < 0) { o->dims[ax] = -1; continue; }
        for (int d = 0; d < rank; d++) {
            if (d == ax) { o->dims[d] = (o->dims[d] < 0 || s->dims[d] < 0) ? -1 : o->dims[d] + s->dims[d]; continue; }
            if (o->dims[d] < 0) o->dims[d] = s->dims[d];
            else if (s->dims[d] >= 0 && s->dims[d] != o->dims[d])
                return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "ConcatOp : Dimension %d in both shapes must be equal: %lld vs %lld", d, (long long)o->dims[d], (long long)s->dims[d]);
        }
    }
    return DF_OK;
}
static void df__k_concat(df__kctx *c) {
    int n = c->n_in - 1;
    const df_tensor *axis_t = c->in[n], *x0 = c->in[0];
    int rank = x0->rank;
    if (!df__is_int_tensor(axis_t) || axis_t->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis must be a scalar int32/int64"); return; }
    int64_t ax = df__int_at(axis_t, 0);
    if (rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Can't concatenate scalars (use tf.stack instead)"); return; }
    if (ax < -rank || ax >= rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %lld", -rank, rank, (long long)ax); return; }
    if (ax < 0) ax += rank;
    int64_t dims[DF_MAX_RANK];
    memcpy(dims, x0->dims, sizeof dims);
    dims[ax] = 0;
    for (int i = 0; i < n; i++) {
        const df_tensor *x = c->in[i];
        if (x->rank != rank || x->dtype != x0->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "ConcatOp : Ranks of all input tensors should match: shape[0] has rank %d, shape[%d] has rank %d", rank, i, x->rank); return; }
        for (int d = 0; d < rank; d++)
            if (d != ax && x->dims[d] != x0->dims[d]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "ConcatOp : Dimension %d in both shapes must be equal: shape[0] = %lld vs. shape[%d] = %lld", d, (long long)x0->dims[d], i, (long long)x->dims[d]); return; }
        dims[ax] += x->dims[ax];
    }
    df_tensor *o = df__k_alloc(c, 0, x0->dtype, rank, dims);
    if (!o || !o->n) return;
    int64_t outer = 1, inner_el = 1;
    for (int d = 0; d < ax; d++) outer *= dims[d];
    for (int d = (int)ax + 1; d < rank; d++) inner_el *= dims[d];
    size_t es = df_dtype_size(x0->dtype);
    char *dst = (char *)o->data;
    for (int64_t r = 0; r < outer; r++)
        for (int i = 0; i < n; i++) {
            size_t chunk = (size_t)(c->in[i]->dims[ax] * inner_el) * es;
            memcpy(dst, (const char *)c->in[i]->data + (size_t)r * chunk, chunk);
            dst += chunk;
        }
}
static df_code df__sf_pack(df__shape_ctx *c) {
    int n = c->node->n_inputs;
    const df__shape *s0 = &c->in_shapes[0];
    df__shape *o = df__sc_out(c, 0);
    for (int i = 1; i < n; i++)
        if (s0->rank >= 0 && c->in_shapes[i].rank >= 0 && !df__shapes_equal(s0, &c->in_shapes[i]))
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shapes of all inputs must match: values[0] and values[%d] differ", i);
    if (s0->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    int64_t ax = df__attr_i(c->node, "axis", 0);
    int r = s0->rank + 1;
    if (r > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Pack: rank would exceed %d", DF_MAX_RANK);
    if (ax < -r || ax >= r) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -r, r);
    if (ax < 0) ax += r;
    o->rank = r;
    for (int d = 0, j = 0; d < r; d++) o->dims[d] = d == ax ? n : s0->dims[j++];
    return DF_OK;
}
static void df__k_pack(df__kctx *c) {
    const df_tensor *x0 = c->in[0];
    int n = c->n_in, r = x0->rank + 1;
    int64_t ax = df__attr_i(c->node, "axis", 0);
    if (r > DF_MAX_RANK || ax < -r || ax >= r) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -r, r); return; }
    if (ax < 0) ax += r;
    for (int i = 1; i < n; i++) {
        df__shape a = df__shape_of(x0), b = df__shape_of(c->in[i]);
        if (!df__shapes_equal(&a, &b)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Shapes of all inputs must match: values[0] and values[%d] differ", i); return; }
    }
    int64_t dims[DF_MAX_RANK];
    for (int d = 0, j = 0; d < r; d++) dims[d] = d == ax ? n : x0->dims[j++];
    df_tensor *o = df__k_alloc(c, 0, x0->dtype, r, dims);
    if (!o || !o->n) return;
    int64_t outer = 1;
    for (int d = 0; d < ax; d++) outer *= dims[d];
    size_t chunk = (size_t)(x0->n / DF__MAX(outer, 1)) * df_dtype_size(x0->dtype);
    char *dst = (char *)o->data;
    for (int64_t q = 0; q < outer; q++)
        for (int i = 0; i < n; i++) { memcpy(dst, (const char *)c->in[i]->data + (size_t)q * chunk, chunk); dst += chunk; }
}
static df_code df__sf_unpack(df__shape_ctx *c) {
    const df__shape *s = &c->in_shapes[0];
    int64_t num = df__attr_i(c->node, "num", 0), ax = df__attr_i(c->node, "axis", 0);
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = df__shape_unknown();
    if (s->rank < 0) return DF_OK;
    if (ax < -s->rank || ax >= s->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -s->rank, s->rank);
    if (ax < 0) ax += s->rank;
    if (s->dims[ax] >= 0 && s->dims[ax] != num) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Dimension must be %lld but is %lld", (long long)num, (long long)s->dims[ax]);
    for (int i = 0; i < c->node->n_outputs; i++) df__reduced_shape(s->rank, s->dims, 1u << ax, 0, df__sc_out(c, i));
    return DF_OK;
}
static void df__k_unpack(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t ax = df__attr_i(c->node, "axis", 0), num = c->n_out;
    if (ax < -x->rank || ax >= x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)ax, -x->rank, x->rank); return; }
    if (ax < 0) ax += x->rank;
    if (x->dims[ax] != num) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input shape axis %lld must equal %lld, got %lld", (long long)ax, (long long)num, (long long)x->dims[ax]); return; }
    df__shape os;
    df__reduced_shape(x->rank, x->dims, 1u << ax, 0, &os);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) outer *= x->dims[d];
    for (int d = (int)ax + 1; d < x->rank; d++) inner *= x->dims[d];
    size_t es = df_dtype_size(x->dtype);
    for (int64_t i = 0; i < num; i++) {
        df_tensor *o = df__k_alloc(c, (int)i, x->dtype, os.rank, os.dims);
        if (!o) return;
#ifdef DATAFLOW_CUDA
        if (c->gpu) {                /* one strided copy per output, queued */
            int64_t dims[2] = {outer, inner}, ss[2] = {num * inner, 1}, ds[2] = {inner, 1};
            if (o->n && df_cuda_strided_copy((df_cuda *)c->gpu, es, 2, dims, (const char *)x->data + (size_t)(i * inner) * es, ss,
                                             o->data, ds, c->st)) return;
            continue;
        }
#endif
        for (int64_t q = 0; q < outer && inner; q++)
            memcpy((char *)o->data + (size_t)(q * inner) * es, (const char *)x->data + (size_t)((q * num + i) * inner) * es, (size_t)inner * es);
    }
}

/* ---- Slice, StridedSlice, Tile: all reduce to a strided copy ---- */
/* Copies the strided region of x (begin, step, odims per dim) to the dense o, or, when
   `scatter`, the dense o into that region of x. */
static void df__strided_move(df_tensor *x, df_tensor *o, const int64_t *begin, const int64_t *step,
                             const int64_t *odims, int rank, int scatter) {
    size_t es = df_dtype_size(x->dtype);
    int64_t istride[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, off = 0;
    for (int d = x->rank - 1; d >= 0; d--) { istride[d] = s; s *= x->dims[d]; }
    for (int d = 0; d < rank; d++) off += begin[d] * istride[d];
#ifdef DATAFLOW_CUDA
    df_cuda *gpu = df__tensor_gpu(x);
    if (gpu) {                                   /* on a GPU: one strided copy, queued */
        int64_t xs[DF_MAX_RANK], os[DF_MAX_RANK], one = 1, zero = 0, so = 1;
        for (int d = rank - 1; d >= 0; d--) { xs[d] = step[d] * istride[d]; os[d] = so; so *= odims[d]; }
        char *full = (char *)x->data + off * (int64_t)es;
        df_status st;
        if (rank == 0) df_cuda_strided_copy(gpu, es, 1, &one, scatter ? o->data : full, &zero,
                                            scatter ? full : o->data, &zero, &st);
        else df_cuda_strided_copy(gpu, es, rank, odims, scatter ? o->data : full, scatter ? os : xs,
                                  scatter ? full : o->data, scatter ? xs : os, &st);
        return;
    }
#endif
    for (int64_t i = 0; i < o->n; i++) {
        char *full = (char *)x->data + (size_t)off * es, *flat = (char *)o->data + (size_t)i * es;
        if (scatter) memcpy(full, flat, es); else memcpy(flat, full, es);
        for (int d = rank - 1; d >= 0; d--) {
            idx[d]++; off += step[d] * istride[d];
            if (idx[d] < odims[d]) break;
            off -= step[d] * istride[d] * idx[d]; idx[d] = 0;
        }
    }
}
static void df__strided_copy(const df_tensor *x, df_tensor *o, const int64_t *begin, const int64_t *step,
                             const int64_t *odims, int rank) {
    df__strided_move((df_tensor *)x, o, begin, step, odims, rank, 0);
}
static df_code df__slice_args(const df_node *n, const df_tensor *x, const df_tensor *b, const df_tensor *sz,
                              int64_t *begin, int64_t *size, df_status *st) {
    if (!df__is_int_tensor(b) || !df__is_int_tensor(sz) || b->rank != 1 || sz->rank != 1 || b->n != x->rank || sz->n != x->rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected begin and size arguments to be 1-D tensors of size %d", x->rank);
    for (int d = 0; d < x->rank; d++) {
        begin[d] = df__int_at(b, d);
        size[d] = df__int_at(sz, d);
        if (size[d] == -1) size[d] = x->dims[d] - begin[d];
        if (begin[d] < 0 || size[d] < 0 || begin[d] > x->dims[d] || size[d] > x->dims[d] - begin[d])
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected begin[%d] in [0, %lld] and size[%d] in [0, %lld], "
                            "but got %lld and %lld", d, (long long)x->dims[d], d, (long long)(x->dims[d] - begin[d]),
                            (long long)begin[d], (long long)size[d]);
    }
    return DF_OK;
}
/* A stand-in tensor carrying only a static shape, for sharing shape logic with kernels. */
static int df__static_tensor(const df__shape *s, df_tensor *t) {
    if (s->rank < 0) return 0;
    memset(t, 0, sizeof *t);
    t->rank = s->rank;
    for (int i = 0; i < s->rank; i++) { if (s->dims[i] < 0) return 0; t->dims[i] = s->dims[i]; }
    return 1;
}
static df_code df__sf_slice(df__shape_ctx *c) {
    const df_tensor *b = df__sc_const(c, 1), *sz = df__sc_const(c, 2);
    df__shape *o = df__sc_out(c, 0);
    df_tensor x;
    *o = df__shape_unknown();
    if (b && sz && df__static_tensor(&c->in_shapes[0], &x)) {
        int64_t begin[DF_MAX_RANK], size[DF_MAX_RANK];
        if (df__slice_args(c->node, &x, b, sz, begin, size, c->st)) return c->st->code;
        o->rank = x.rank;
        memcpy(o->dims, size, (size_t)x.rank * 8);
        return DF_OK;
    }
    if (sz && df__is_int_tensor(sz) && sz->rank == 1 && sz->n <= DF_MAX_RANK) {
        o->rank = (int)sz->n;
        for (int d = 0; d < o->rank; d++) {
            int64_t v = df__int_at(sz, d);
            if (v < -1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "size[%d] = %lld must be >= -1", d, (long long)v);
            o->dims[d] = v;
        }
    }
    return DF_OK;
}
static void df__k_slice(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t begin[DF_MAX_RANK], size[DF_MAX_RANK], step[DF_MAX_RANK];
    if (df__slice_args(c->node, x, c->in[1], c->in[2], begin, size, c->st)) return;
    for (int d = 0; d < x->rank; d++) step[d] = 1;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, size);
    if (o && o->n) df__strided_copy(x, o, begin, step, size, x->rank);
}
/* StridedSlice: begin/end masks, shrink_axis_mask, ellipsis_mask and new_axis_mask, negative
   indices and strides. The sparse spec is expanded to one entry per input dimension; the final
   shape then adds the new axes and drops the shrunk ones. */
static df_code df__strided_args(const df_node *n, const df_tensor *x, const df_tensor *bt, const df_tensor *et,
                                const df_tensor *stt, int64_t *begin, int64_t *step, int64_t *odims,
                                df__shape *final, df_status *st) {
    if (!df__is_int_tensor(bt) || !df__is_int_tensor(et) || !df__is_int_tensor(stt) || bt->rank != 1 ||
        bt->n != et->n || bt->n != stt->n || bt->n > 32)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "begin, end and strides must be 1-D of equal length (at most 32)");
    int64_t bm = df__attr_i(n, "begin_mask", 0), em = df__attr_i(n, "end_mask", 0), sm = df__attr_i(n, "shrink_axis_mask", 0);
    int64_t ell = df__attr_i(n, "ellipsis_mask", 0), nam = df__attr_i(n, "new_axis_mask", 0);
    int sparse = (int)bt->n, full = 0, saw_ellipsis = 0;
    if (ell & (ell - 1)) return df__fail(st, n, DF_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");
    final->rank = 0;
    for (int k = 0; k <= sparse; k++) {
        int implicit_tail = k == sparse;
        if (implicit_tail || (ell >> k & 1)) {
            if (implicit_tail && saw_ellipsis) break;
            int later = 0;                     /* input dims the entries after the ellipsis consume */
            for (int j = k + 1; !implicit_tail && j < sparse; j++) if (!(nam >> j & 1)) later++;
            int upto = implicit_tail ? x->rank : x->rank - later;
            if (upto < full) return df__fail(st, n, DF_INVALID_ARGUMENT, "Index out of range using input dim %d; input has only %d dims", full, x->rank);
            for (; full < upto; full++) {
                if (final->rank >= DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "StridedSlice: result rank too large");
                begin[full] = 0; step[full] = 1; odims[full] = x->dims[full];
                final->dims[final->rank++] = x->dims[full];
            }
            saw_ellipsis = !implicit_tail;
            continue;
        }
        if (nam >> k & 1) {
            if (final->rank >= DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "StridedSlice: result rank too large");
            final->dims[final->rank++] = 1;
            continue;
        }
        if (full >= x->rank) return df__fail(st, n, DF_INVALID_ARGUMENT, "Index out of range using input dim %d; input has only %d dims", full, x->rank);
        int64_t dim = x->dims[full], s = df__int_at(stt, k), b = df__int_at(bt, k), e = df__int_at(et, k);
        if (s == 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "strides[%d] must be non-zero", k);
        if (sm >> k & 1) {
            if (b < 0) b += dim;
            if (b < 0 || b >= dim) return df__fail(st, n, DF_INVALID_ARGUMENT, "slice index %lld of dimension %d out of bounds.", (long long)df__int_at(bt, k), full);
            begin[full] = b; step[full] = 1; odims[full] = 1;
            full++;
            continue;
        }
        int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
        if (bm >> k & 1) b = s > 0 ? lo : hi;
        else { if (b < 0) b += dim; b = b < lo ? lo : b > hi ? hi : b; }
        if (em >> k & 1) e = s > 0 ? hi : lo;
        else { if (e < 0) e += dim; e = e < lo ? lo : e > hi ? hi : e; }
        int64_t len = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e + (-s) - 1) / (-s) : 0);
        begin[full] = len ? b : 0; step[full] = s; odims[full] = len;
        if (final->rank >= DF_MAX_RANK) return df__fail(st, n, DF_INVALID_ARGUMENT, "StridedSlice: result rank too large");
        final->dims[final->rank++] = len;
        full++;
    }
    return DF_OK;
}
static void df__k_strided_slice(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK], odims[DF_MAX_RANK];
    df__shape fin;
    if (df__strided_args(c->node, x, c->in[1], c->in[2], c->in[3], begin, step, odims, &fin, c->st)) return;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, fin.rank, fin.dims);
    if (o && o->n) df__strided_copy(x, o, begin, step, odims, x->rank);
}
static df_code df__sf_strided_slice(df__shape_ctx *c) {
    const df_tensor *b = df__sc_const(c, 1), *e = df__sc_const(c, 2), *stt = df__sc_const(c, 3);
    df_tensor x;
    *df__sc_out(c, 0) = df__shape_unknown();
    if (stt && df__is_int_tensor(stt))
        for (int64_t i = 0; i < stt->n; i++)
            if (df__int_at(stt, i) == 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "strides[%lld] must be non-zero", (long long)i);
    if (b && e && stt && df__static_tensor(&c->in_shapes[0], &x)) {
        int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK], odims[DF_MAX_RANK];
        return df__strided_args(c->node, &x, b, e, stt, begin, step, odims, df__sc_out(c, 0), c->st);
    }
    return DF_OK;
}
static df_code df__tile_dims(const df_node *n, const df__shape *in, const df_tensor *m, df__shape *o, df_status *st) {
    if (!df__is_int_tensor(m) || m->rank != 1 || m->n != in->rank)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected multiples argument to be a vector of length %d", in->rank);
    o->rank = in->rank;
    for (int d = 0; d < in->rank; d++) {
        int64_t k = df__int_at(m, d);
        if (k < 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", d, (long long)k);
        if (in->dims[d] < 0) { o->dims[d] = -1; continue; }
        if (k && in->dims[d] > INT64_MAX / k) return df__fail(st, n, DF_INVALID_ARGUMENT, "Tile: output too large");
        o->dims[d] = in->dims[d] * k;
    }
    return DF_OK;
}
static df_code df__sf_tile(df__shape_ctx *c) {
    const df_tensor *m = df__sc_const(c, 1);
    if (!m || c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__tile_dims(c->node, &c->in_shapes[0], m, df__sc_out(c, 0), c->st);
}
static void df__k_tile(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__shape in = df__shape_of(x), os;
    if (df__tile_dims(c->node, &in, c->in[1], &os, c->st)) return;
    int64_t n = 1;
    for (int d = 0; d < os.rank; d++) {
        if (os.dims[d] && n > INT64_MAX / os.dims[d]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Tile: output too large"); return; }
        n *= os.dims[d];
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    int64_t idx[DF_MAX_RANK] = {0}, istride[DF_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) { istride[d] = s; s *= x->dims[d]; }
    for (int64_t i = 0; i < o->n; i++) {
        int64_t off = 0;
        for (int d = 0; d < x->rank; d++) off += (idx[d] % x->dims[d]) * istride[d];
        memcpy((char *)o->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
        for (int d = os.rank - 1; d >= 0; d--) { if (++idx[d] < os.dims[d]) break; idx[d] = 0; }
    }
}

/* ---- GatherV2, OneHot ---- */
static df_code df__gather_axis(const df_node *n, const df_tensor *axis_t, int rank, int *axis, df_status *st) {
    if (!df__is_int_tensor(axis_t) || axis_t->n != 1) return df__fail(st, n, DF_INVALID_ARGUMENT, "axis must be a scalar int32/int64");
    int64_t a = df__int_at(axis_t, 0);
    if (a < -rank || a >= rank) return df__fail(st, n, DF_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld", -rank, rank, (long long)a);
    *axis = (int)(a < 0 ? a + rank : a);
    return DF_OK;
}
static df_code df__sf_gather(df__shape_ctx *c) {
    const df_tensor *ax = df__sc_const(c, 2);
    const df__shape *p = &c->in_shapes[0], *ix = &c->in_shapes[1];
    df__shape *o = df__sc_out(c, 0);
    if (!ax || p->rank < 0 || ix->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    int axis;
    if (df__gather_axis(c->node, ax, p->rank, &axis, c->st)) return c->st->code;
    if (p->rank - 1 + ix->rank > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Gather: result rank too large");
    o->rank = 0;
    for (int d = 0; d < axis; d++) o->dims[o->rank++] = p->dims[d];
    for (int d = 0; d < ix->rank; d++) o->dims[o->rank++] = ix->dims[d];
    for (int d = axis + 1; d < p->rank; d++) o->dims[o->rank++] = p->dims[d];
    return DF_OK;
}
static void df__k_gather(df__kctx *c) {
    const df_tensor *p = c->in[0], *ix = c->in[1];
    int axis;
    if (df__gather_axis(c->node, c->in[2], p->rank, &axis, c->st)) return;
    if (p->rank - 1 + ix->rank > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Gather: result rank too large"); return; }
    int64_t dims[DF_MAX_RANK];
    int r = 0;
    for (int d = 0; d < axis; d++) dims[r++] = p->dims[d];
    for (int d = 0; d < ix->rank; d++) dims[r++] = ix->dims[d];
    for (int d = axis + 1; d < p->rank; d++) dims[r++] = p->dims[d];
    int64_t limit = p->dims[axis];
    for (int64_t i = 0; i < ix->n; i++) {
        int64_t v = df__int_at(ix, i);
        if (v < 0 || v >= limit) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "indices[%lld] = %lld is not in [0, %lld)", (long long)i, (long long)v, (long long)limit); return; }
    }
    df_tensor *o = df__k_alloc(c, 0, p->dtype, r, dims);
    if (!o || !o->n) return;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= p->dims[d];
    for (int d = axis + 1; d < p->rank; d++) inner *= p->dims[d];
    size_t chunk = (size_t)inner * df_dtype_size(p->dtype);
    char *dst = (char *)o->data;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < ix->n; i++) {
            memcpy(dst, (const char *)p->data + (size_t)(q * limit + df__int_at(ix, i)) * chunk, chunk);
            dst += chunk;
        }
}
static df_code df__sf_one_hot(df__shape_ctx *c) {
    const df_tensor *depth = df__sc_const(c, 1);
    const df__shape *ix = &c->in_shapes[0];
    int64_t axis = df__attr_i(c->node, "axis", -1), d = -1;
    df__shape *o = df__sc_out(c, 0);
    if (depth) {
        if (depth->n != 1 || !df__is_int_tensor(depth)) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "depth must be a scalar int32");
        d = df__int_at(depth, 0);
        if (d < 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "depth must be non-negative, got: %lld", (long long)d);
    }
    if (ix->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (axis < -1 || axis > ix->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d).  But received: %lld", ix->rank + 1, (long long)axis);
    if (ix->rank + 1 > DF_MAX_RANK) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "OneHot: rank too large");
    if (axis == -1) axis = ix->rank;
    o->rank = ix->rank + 1;
    for (int i = 0, j = 0; i < o->rank; i++) o->dims[i] = i == axis ? d : ix->dims[j++];
    return DF_OK;
}
/* OneHot's checks and output (NULL: failed, or nothing to write): [outer, depth, inner]. */
static df_tensor *df__one_hot_prep(df__kctx *c, int64_t *outer, int64_t *depth, int64_t *inner) {
    const df_tensor *ix = c->in[0], *dt = c->in[1], *on = c->in[2], *off = c->in[3];
    if (dt->n != 1 || on->n != 1 || off->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "depth, on_value and off_value must be scalars"); return NULL; }
    int64_t d = df__int_at(dt, 0), axis = df__attr_i(c->node, "axis", -1);
    if (d < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "depth must be non-negative, got: %lld", (long long)d); return NULL; }
    if (axis < -1 || axis > ix->rank || ix->rank + 1 > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d)", ix->rank + 1); return NULL; }
    if (axis == -1) axis = ix->rank;
    int64_t dims[DF_MAX_RANK];
    for (int i = 0, j = 0; i < ix->rank + 1; i++) dims[i] = i == axis ? d : ix->dims[j++];
    df_tensor *o = df__k_alloc(c, 0, on->dtype, ix->rank + 1, dims);
    if (!o || !o->n) return NULL;
    *outer = 1; *inner = 1; *depth = d;
    for (int i = 0; i < axis; i++) *outer *= ix->dims[i];
    for (int i = (int)axis; i < ix->rank; i++) *inner *= ix->dims[i];
    return o;
}
static void df__k_one_hot(df__kctx *c) {
    const df_tensor *ix = c->in[0], *on = c->in[2], *off = c->in[3];
    int64_t outer, d, inner;
    df_tensor *o = df__one_hot_prep(c, &outer, &d, &inner);
    if (!o) return;
    size_t es = df_dtype_size(on->dtype);
    for (int64_t q = 0; q < outer; q++)
        for (int64_t k = 0; k < d; k++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t v = df__int_at(ix, q * inner + j);
                memcpy((char *)o->data + (size_t)((q * d + k) * inner + j) * es, v == k ? on->data : off->data, es);
            }
}

/* ---- Softmax, LogSoftmax and the two cross-entropies (stable: max subtracted first) ---- */
#ifdef DF__X86
/* One float32 row: o[j] = e^(x[j] - max); returns the sum of o (float64) and the max in *mx. */
DF__TARGET_AVX2 static double df__v8_exp_row(const float *x, float *o, int64_t n, float *mx) {
    __m256 m = _mm256_set1_ps(-INFINITY);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
    float lanes[8], best = -INFINITY;
    _mm256_storeu_ps(lanes, m);
    for (int i = 0; i < 8; i++) if (lanes[i] > best) best = lanes[i];
    for (; j < n; j++) if (x[j] > best) best = x[j];
    *mx = best;
    __m256 acc = _mm256_setzero_ps(), b = _mm256_set1_ps(best);
    for (j = 0; j + 8 <= n; j += 8) {
        __m256 e = df__v8_exp(_mm256_sub_ps(_mm256_loadu_ps(x + j), b));
        _mm256_storeu_ps(o + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    _mm256_storeu_ps(lanes, acc);
    double sum = 0;
    for (int i = 0; i < 8; i++) sum += lanes[i];
    if (j < n) {
        float in[8] = {0}, out[8];
        memcpy(in, x + j, (size_t)(n - j) * sizeof(float));
        _mm256_storeu_ps(out, df__v8_exp(_mm256_sub_ps(_mm256_loadu_ps(in), b)));
        for (int64_t i = 0; i < n - j; i++) { o[j + i] = out[i]; sum += out[i]; }
    }
    return sum;
}
#endif
static void df__softmax_rows(const df_tensor *x, df_tensor *o, int logsm) {
    int64_t cols = x->rank ? x->dims[x->rank - 1] : 1, rows = cols ? x->n / cols : 0;
#ifdef DF__X86
    if (x->dtype == DF_FLOAT && df__vec_isa() == DF__ISA_AVX2) {
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = (const float *)x->data + r * cols;
            float *orow = (float *)o->data + r * cols, mx;
            double sum = df__v8_exp_row(xr, orow, cols, &mx);
            if (logsm) { float lse = (float)log(sum); for (int64_t j = 0; j < cols; j++) orow[j] = (xr[j] - mx) - lse; }
            else { float inv = (float)(1.0 / sum); for (int64_t j = 0; j < cols; j++) orow[j] *= inv; }
        }
        return;
    }
#endif
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++) { double v = df__get_f64(x->dtype, x->data, r * cols + j); if (v > mx) mx = v; }
        for (int64_t j = 0; j < cols; j++) sum += exp(df__get_f64(x->dtype, x->data, r * cols + j) - mx);
        double lse = log(sum);
        for (int64_t j = 0; j < cols; j++) {
            double z = df__get_f64(x->dtype, x->data, r * cols + j) - mx;
            df__set_from_f64(x->dtype, o->data, r * cols + j, logsm ? z - lse : exp(z - lse));
        }
    }
}
static void df__k_softmax(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must have >= 1 dimension, got rank 0"); return; }
    df_tensor *o = df__k_alloc_like(c, 0, x->dtype, x);
    if (o) df__softmax_rows(x, o, c->node->op->code);
}
static df_code df__sf_softmax(df__shape_ctx *c) {
    if (c->in_shapes[0].rank == 0) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits must have >= 1 dimension, got rank 0");
    return df__sf_same(c);
}
static df_code df__sf_xent(df__shape_ctx *c) {
    const df__shape *f = &c->in_shapes[0], *l = &c->in_shapes[1];
    int sparse = c->node->op->code;
    if (f->rank >= 0 && f->rank != 2) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits must be 2-D, but got shape of rank %d", f->rank);
    if (sparse && l->rank >= 0 && l->rank != 1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "labels must be 1-D, but got shape of rank %d", l->rank);
    if (!sparse && f->rank == 2 && l->rank >= 0 && (l->rank != 2 || (l->dims[0] >= 0 && f->dims[0] >= 0 && l->dims[0] != f->dims[0]) ||
                                                     (l->dims[1] >= 0 && f->dims[1] >= 0 && l->dims[1] != f->dims[1])))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits and labels must be the same size");
    if (sparse && f->rank == 2 && l->rank == 1 && f->dims[0] >= 0 && l->dims[0] >= 0 && f->dims[0] != l->dims[0])
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "logits and labels must have the same first dimension, got logits shape [%lld,%lld] and labels shape [%lld]",
                        (long long)f->dims[0], (long long)f->dims[1], (long long)l->dims[0]);
    df__shape *loss = df__sc_out(c, 0), *bp = df__sc_out(c, 1);
    loss->rank = 1; loss->dims[0] = f->rank == 2 ? f->dims[0] : -1;
    if (f->rank == 2) *bp = *f; else { bp->rank = 2; bp->dims[0] = bp->dims[1] = -1; }
    return DF_OK;
}
static void df__k_xent(df__kctx *c) {
    const df_tensor *f = c->in[0], *l = c->in[1];
    int sparse = c->node->op->code;
    if (f->rank != 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must be 2-D, but got shape of rank %d", f->rank); return; }
    int64_t b = f->dims[0], k = f->dims[1];
    if (sparse ? (l->rank != 1 || l->dims[0] != b) : (l->rank != 2 || l->dims[0] != b || l->dims[1] != k)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits and labels must have matching shapes (batch %lld)", (long long)b);
        return;
    }
    if (sparse)
        for (int64_t i = 0; i < b; i++) {
            int64_t y = df__int_at(l, i);
            if (y < 0 || y >= k) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Received a label value of %lld which is outside the valid range of [0, %lld).", (long long)y, (long long)k); return; }
        }
    df_tensor *loss = df__k_alloc(c, 0, f->dtype, 1, &b);
    df_tensor *bp = loss ? df__k_alloc_like(c, 1, f->dtype, f) : NULL;
    if (!bp) return;
#ifdef DF__X86
    if (f->dtype == DF_FLOAT && df__vec_isa() == DF__ISA_AVX2 && (sparse || l->dtype == DF_FLOAT)) {
        for (int64_t i = 0; i < b; i++) {
            const float *xr = (const float *)f->data + i * k;
            float *br = (float *)bp->data + i * k, mx;
            double sum = df__v8_exp_row(xr, br, k, &mx), lse = log(sum), total = 0;
            float inv = (float)(1.0 / sum);
            if (sparse) {
                int64_t y = df__int_at(l, i);
                for (int64_t j = 0; j < k; j++) br[j] *= inv;
                br[y] -= 1;
                total = -((double)xr[y] - mx - lse);
            } else {
                const float *yr = (const float *)l->data + i * k;
                for (int64_t j = 0; j < k; j++) {
                    br[j] = br[j] * inv - yr[j];
                    if (yr[j] != 0) total -= (double)yr[j] * ((double)xr[j] - mx - lse);
                }
            }
            ((float *)loss->data)[i] = (float)total;
        }
        return;
    }
#endif
    for (int64_t i = 0; i < b; i++) {
        double mx = -INFINITY, sum = 0, total = 0;
        for (int64_t j = 0; j < k; j++) { double v = df__get_f64(f->dtype, f->data, i * k + j); if (v > mx) mx = v; }
        for (int64_t j = 0; j < k; j++) sum += exp(df__get_f64(f->dtype, f->data, i * k + j) - mx);
        double lse = log(sum);
        for (int64_t j = 0; j < k; j++) {
            double logp = df__get_f64(f->dtype, f->data, i * k + j) - mx - lse;
            double y = sparse ? (double)(df__int_at(l, i) == j) : df__get_f64(l->dtype, l->data, i * k + j);
            if (y != 0) total -= y * logp;
            df__set_from_f64(f->dtype, bp->data, i * k + j, exp(logp) - y);
        }
        df__set_from_f64(f->dtype, loss->data, i, total);
    }
}

/* ---- AddN, Select ---- */
static df_code df__sf_add_n(df__shape_ctx *c) {
    df__shape s = c->in_shapes[0];
    for (int i = 1; i < c->node->n_inputs; i++) {
        const df__shape *t = &c->in_shapes[i];
        if (s.rank >= 0 && t->rank >= 0 && !df__shapes_equal(&s, t)) {
            df__shape r = df__shape_relax(&s, t);
            for (int d = 0; d < r.rank; d++)
                if (r.dims[d] < 0 && s.dims[d] >= 0 && t->dims[d] >= 0)
                    return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "AddN: inputs must have the same shape (input %d differs)", i);
            if (s.rank != t->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "AddN: inputs must have the same rank (input %d differs)", i);
            s = r;
        }
    }
    *df__sc_out(c, 0) = s;
    return DF_OK;
}
static void df__k_add_n(df__kctx *c) {
    const df_tensor *x0 = c->in[0];
    for (int i = 1; i < c->n_in; i++) {
        df__shape a = df__shape_of(x0), b = df__shape_of(c->in[i]);
        if (!df__shapes_equal(&a, &b)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "AddN: inputs must have the same shape (input %d differs)", i); return; }
    }
    df_tensor *o = df__k_alloc_like(c, 0, x0->dtype, x0);
    if (!o) return;
    df__row_fn add = df__binary_row(DF__B_ADD, x0->dtype);
    if (!add) { DF__KFAIL(c, DF_UNIMPLEMENTED, "AddN has no kernel for %s", df_dtype_name(x0->dtype)); return; }
    memcpy(o->data, x0->data, o->nbytes);
    for (int i = 1; i < c->n_in; i++) add(o->data, o->data, c->in[i]->data, o->n, 1, 1);
}
static df_code df__sf_select(df__shape_ctx *c) {
    const df__shape *p = &c->in_shapes[0], *a = &c->in_shapes[1], *b = &c->in_shapes[2];
    df__shape *o = df__sc_out(c, 0);
    if (p->rank < 0 || a->rank < 0 || b->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (!strcmp(c->node->op->name, "Select") && p->rank == 1 && a->rank > 1) {   /* row selection */
        if (!df__shapes_equal(a, b) || (p->dims[0] >= 0 && a->dims[0] >= 0 && p->dims[0] != a->dims[0]))
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Select: a vector condition must match the first "
                            "dimension of t and e, which must have the same shape");
        *o = *a;
        return DF_OK;
    }
    df__bcast bc1, bc2;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc1) || !df__broadcast(p->rank, p->dims, bc1.rank, bc1.dims, &bc2))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Incompatible shapes for %s: condition, t and e do not broadcast", c->node->op->name);
    o->rank = bc2.rank;
    memcpy(o->dims, bc2.dims, sizeof bc2.dims);
    return DF_OK;
}
static void df__k_select(df__kctx *c) {
    const df_tensor *p = c->in[0], *a = c->in[1], *b = c->in[2];
    df__bcast ab, pab, pa, pb;
    int v1 = !strcmp(c->node->op->name, "Select");
    /* Select (v1) with a vector condition picks whole rows of a matrix t/e. */
    if (v1 && p->rank == 1 && a->rank > 1 && p->dims[0] == a->dims[0]) {
        df__shape sa = df__shape_of(a), sb = df__shape_of(b);
        if (!df__shapes_equal(&sa, &sb)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "'t' and 'e' must have the same shape"); return; }
        df_tensor *o = df__k_alloc_like(c, 0, a->dtype, a);
        if (!o || !o->n) return;
        size_t row = o->nbytes / (size_t)a->dims[0];
        for (int64_t i = 0; i < a->dims[0]; i++)
            memcpy((char *)o->data + (size_t)i * row, (const char *)(((const uint8_t *)p->data)[i] ? a : b)->data + (size_t)i * row, row);
        return;
    }
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &ab) || !df__broadcast(p->rank, p->dims, ab.rank, ab.dims, &pab)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes for %s: condition, t and e do not broadcast", c->node->op->name);
        return;
    }
    df__broadcast(p->rank, p->dims, a->rank, a->dims, &pa);
    df__broadcast(p->rank, p->dims, b->rank, b->dims, &pb);
    df_tensor *o = df__k_alloc(c, 0, a->dtype, pab.rank, pab.dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(a->dtype);
    int r = pab.rank;
    /* strides of each operand against the output shape */
    int64_t sp[DF_MAX_RANK], sa2[DF_MAX_RANK], sb2[DF_MAX_RANK], idx[DF_MAX_RANK] = {0};
    const df_tensor *ops[3] = {p, a, b};
    int64_t *strides[3] = {sp, sa2, sb2};
    for (int k = 0; k < 3; k++) {
        int64_t s = 1;
        for (int d = r - 1; d >= 0; d--) {
            int id = d - (r - ops[k]->rank);
            int64_t dim = id >= 0 ? ops[k]->dims[id] : 1;
            strides[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    int64_t op_ = 0, oa = 0, ob = 0;
    for (int64_t i = 0; i < o->n; i++) {
        const void *src = ((const uint8_t *)p->data)[op_] ? (const char *)a->data + (size_t)oa * es : (const char *)b->data + (size_t)ob * es;
        memcpy((char *)o->data + (size_t)i * es, src, es);
        for (int d = r - 1; d >= 0; d--) {
            idx[d]++; op_ += sp[d]; oa += sa2[d]; ob += sb2[d];
            if (idx[d] < pab.dims[d]) break;
            op_ -= sp[d] * idx[d]; oa -= sa2[d] * idx[d]; ob -= sb2[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* ---- variables: the session keeps each variable's current tensor; updates swap it. VariableV2
   outputs the variable's handle (a ref); consumers read the value when they run, so a control
   dependency on an Assign orders the read after it, as in TensorFlow. ---- */
typedef struct df__var {
    df__spin lock;
    df_tensor *value;            /* NULL until initialised */
    const char *name;            /* the variable node's name, for messages */
    df_tensor handle;            /* never freed by refcount: its count starts very high */
} df__var;
static df__var *df__step_var(struct df__step *s, const df_node *var_node, df_status *st);
static uint64_t df__step_rng_next(struct df__step *s, const df_node *n, uint64_t count);

/* The value behind a ref (a new reference), or t itself (taken over) when it is no ref. */
/* Whether input i of op is a Ref(T) argument: its kernel gets the ref itself, not the value. */
static int df__ref_arg(const df__opdef *op, int i) {
    for (int k = 0; k < op->n_in; k++) if (op->in[k].is_list) return 0;
    return i < op->n_in && op->in[i].is_ref;
}
static df_tensor *df__deref(df_tensor *t, const df_node *consumer, df_status *st) {
    if (!t->ref) return t;
    df__var *v = t->ref;
    df__spin_lock(&v->lock);
    df_tensor *value = df_tensor_retain(v->value);
    df__spin_unlock(&v->lock);
    if (!value) df__fail(st, consumer, DF_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v->name);
    df_tensor_release(t);
    return value;
}

/* The VariableV2 behind a ref input (through Assign-family outputs, which are refs too). */
static const df_node *df__var_node(const df_node *n) {
    const df_node *v = n->inputs[0].node;
    for (int depth = 0; depth < 64 && strcmp(v->op->name, "VariableV2") && v->n_inputs > 0; depth++)
        v = v->inputs[0].node;
    return v;
}
static void df__k_variable(df__kctx *c) {
    df__var *v = df__step_var(c->step, c->node, c->st);
    if (!v) return;
    c->out[0] = df_tensor_retain(&v->handle);
}
static void df__k_assign(df__kctx *c) {
    const df_node *vn = df__var_node(c->node);
    df__var *v = df__step_var(c->step, vn, c->st);
    if (!v) return;
    df_tensor *value = c->in[1];
    int code = c->node->op->code;   /* 0 Assign, 1 AssignAdd, 2 AssignSub */
    const df__attr *shape = df__node_attr(vn, "shape");
    if (code == 0 && df__attr_b(c->node, "validate_shape", 1) && shape && shape->u.shape.rank >= 0) {
        df__shape want, got = df__shape_of(value);
        want.rank = shape->u.shape.rank;
        memcpy(want.dims, shape->u.shape.dims, sizeof want.dims);
        df__shape relaxed = df__shape_relax(&want, &got);
        int ok = want.rank == got.rank;
        for (int d = 0; ok && d < want.rank; d++) if (want.dims[d] >= 0 && relaxed.dims[d] < 0) ok = 0;
        if (!ok) {
            char s1[96], s2[96];
            DF__KFAIL(c, DF_INVALID_ARGUMENT, "Assign requires shapes of both tensors to match. lhs shape= %s rhs shape= %s",
                      df__dims_str(want.rank, want.dims, s1, 96), df__dims_str(got.rank, got.dims, s2, 96));
            return;
        }
    }
    df__spin_lock(&v->lock);
    if (code == 0) {
        df_tensor *old = v->value;
        v->value = df_tensor_retain(value);
        df__spin_unlock(&v->lock);
        df_tensor_release(old);
        c->out[0] = df_tensor_retain(value);
        return;
    }
    df_tensor *old = v->value;
    if (!old) {
        df__spin_unlock(&v->lock);
        DF__KFAIL(c, DF_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", vn->name);
        return;
    }
    df__shape so = df__shape_of(old), sv = df__shape_of(value);
    if (!df__shapes_equal(&so, &sv)) {
        df__spin_unlock(&v->lock);
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Must have the same shape: %s vs %s", df__dims_str(so.rank, so.dims, s1, 96), df__dims_str(sv.rank, sv.dims, s2, 96));
        return;
    }
    df_tensor *fresh = df__tensor_alloc(c->alloc, old->dtype, old->rank, old->dims, c->st);
    if (!fresh) { df__spin_unlock(&v->lock); return; }
    if (df__add_data(code == 1 ? DF__B_ADD : DF__B_SUB, fresh, old, value, c->st)) { df__spin_unlock(&v->lock); df_tensor_release(fresh); return; }
    v->value = fresh;
    df__spin_unlock(&v->lock);
    df_tensor_release(old);
    c->out[0] = df_tensor_retain(fresh);
}
static df_code df__sf_variable(df__shape_ctx *c) {
    const df__attr *s = df__node_attr(c->node, "shape");
    df__shape *o = df__sc_out(c, 0);
    o->rank = s->u.shape.rank;
    memcpy(o->dims, s->u.shape.dims, sizeof o->dims);
    return DF_OK;
}
static df_code df__sf_assign(df__shape_ctx *c) {
    const df__shape *var = &c->in_shapes[0], *val = &c->in_shapes[1];
    int validate = c->node->op->code != 0 || df__attr_b(c->node, "validate_shape", 1);
    if (validate && var->rank >= 0 && val->rank >= 0) {
        df__shape r = df__shape_relax(var, val);
        int bad = var->rank != val->rank;
        for (int d = 0; !bad && d < r.rank; d++) if (r.dims[d] < 0 && var->dims[d] >= 0 && val->dims[d] >= 0) bad = 1;
        if (bad) {
            char s1[96], s2[96];
            return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Shapes must be equal: %s vs. %s",
                            df__dims_str(var->rank, var->dims, s1, 96), df__dims_str(val->rank, val->dims, s2, 96));
        }
    }
    *df__sc_out(c, 0) = *val;
    return DF_OK;
}

/* ---- random numbers: Philox4x32-10, counter per (session, node), seeded by (seed, seed2) ---- */
static void df__philox(uint32_t ctr[4], uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1; c3 = (uint32_t)p0; c0 = n0; c2 = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}
typedef struct df__rng { uint32_t key[2]; uint64_t counter; uint32_t buf[4]; int left; } df__rng;
static uint32_t df__rng_u32(df__rng *r) {
    if (!r->left) {
        uint32_t ctr[4] = {(uint32_t)r->counter, (uint32_t)(r->counter >> 32), 0, 0};
        df__philox(ctr, r->key, r->buf);
        r->counter++;
        r->left = 4;
    }
    return r->buf[--r->left];
}
static double df__rng_uniform(df__rng *r) {     /* [0, 1) with 53 random bits */
    uint64_t hi = df__rng_u32(r) >> 5, lo = df__rng_u32(r) >> 6;
    return ((double)hi * 67108864.0 + (double)lo) * (1.0 / 9007199254740992.0);
}
static double df__rng_normal(df__rng *r) {
    double u1 = df__rng_uniform(r), u2 = df__rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static df_code df__sf_random(df__shape_ctx *c) {
    const df_tensor *s = df__sc_const(c, 0);
    df__shape *o = df__sc_out(c, 0);
    if (!s) { *o = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, s, o, "shape", c->st);
}
static void df__k_random(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "shape", c->st)) return;
    df_dtype t = df__attr_type(c->node, "dtype");
    df_tensor *o = df__k_alloc(c, 0, t, s.rank, s.dims);
    if (!o) return;
    df__rng r;
    uint64_t seed = (uint64_t)df__attr_i(c->node, "seed", 0), seed2 = (uint64_t)df__attr_i(c->node, "seed2", 0);
    r.key[0] = (uint32_t)(seed ^ (seed2 << 32 >> 32) * 0x9E3779B9u);
    r.key[1] = (uint32_t)((seed >> 32) ^ seed2 ^ (seed2 >> 32));
    /* Each run draws a fresh block of counters, so successive runs give new numbers. */
    r.counter = df__step_rng_next(c->step, c->node, (uint64_t)o->n * 4 + 16);
    r.left = 0;
    int code = c->node->op->code;
    for (int64_t i = 0; i < o->n; i++) {
        double v;
        if (code == 0) {
            v = df__rng_uniform(&r);
            if (t == DF_FLOAT && (float)v >= 1.0f) v = 0.99999994;   /* float rounding must stay < 1 */
        } else if (code == 1) {
            v = df__rng_normal(&r);
        } else {
            do v = df__rng_normal(&r); while (fabs(v) > 2.0);
        }
        df__set_from_f64(t, o->data, i, v);
    }
}

/* ---- shape functions of the plumbing ops ---- */
static df_code df__sf_const(df__shape_ctx *c) {
    const df__attr *v = df__node_attr(c->node, "value");
    if (!v->u.tensor) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Const needs a value tensor");
    if (v->u.tensor->dtype != df__attr_type(c->node, "dtype"))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Const: the value's dtype %s does not match attr dtype %s",
                        df_dtype_name(v->u.tensor->dtype), df_dtype_name(df__attr_type(c->node, "dtype")));
    c->node->out_types[0] = v->u.tensor->dtype;
    *df__sc_out(c, 0) = df__shape_of(v->u.tensor);
    return DF_OK;
}
static df_code df__sf_placeholder(df__shape_ctx *c) {
    const df__attr *s = df__node_attr(c->node, "shape");
    df__shape *o = df__sc_out(c, 0);
    o->rank = s->u.shape.rank;
    for (int i = 0; i < o->rank; i++) {
        if (s->u.shape.dims[i] < -1) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Dimension %d of the shape is %lld; "
                                                   "dims must be >= 0 or -1 (unknown)", i, (long long)s->u.shape.dims[i]);
        o->dims[i] = s->u.shape.dims[i];
    }
    if (c->node->n_inputs) {   /* PlaceholderWithDefault: the default must fit the shape */
        const df__shape *in = &c->in_shapes[0];
        if (o->rank >= 0 && in->rank >= 0) {
            int ok = in->rank == o->rank;
            for (int i = 0; ok && i < o->rank; i++) if (o->dims[i] >= 0 && in->dims[i] >= 0 && o->dims[i] != in->dims[i]) ok = 0;
            if (!ok) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "PlaceholderWithDefault: the default's shape does not match attr shape");
        }
        if (o->rank < 0) *o = *in;
    }
    return DF_OK;
}
static df_code df__sf_switch(df__shape_ctx *c) {
    const df__shape *p = &c->in_shapes[1];
    if (p->rank > 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "The predicate of Switch must be a scalar, got rank %d", p->rank);
    *df__sc_out(c, 0) = *df__sc_out(c, 1) = c->in_shapes[0];
    return DF_OK;
}
static df_code df__sf_merge(df__shape_ctx *c) {
    df__shape s = c->in_shapes[0];
    for (int i = 1; i < c->node->n_inputs; i++)
        if (!df__shapes_equal(&s, &c->in_shapes[i])) s = df__shape_relax(&s, &c->in_shapes[i]);
    *df__sc_out(c, 0) = s;
    *df__sc_out(c, 1) = df__shape_scalar();
    return DF_OK;
}
static df_code df__sf_loop_cond(df__shape_ctx *c) {
    if (c->in_shapes[0].rank > 0)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "LoopCond's input must be a scalar bool, got rank %d", c->in_shapes[0].rank);
    *df__sc_out(c, 0) = df__shape_scalar();
    return DF_OK;
}
static df_code df__sf_enter(df__shape_ctx *c) {
    if (!*df__attr_s(c->node, "frame_name"))
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Enter needs a non-empty frame_name");
    if (df__attr_i(c->node, "parallel_iterations", 10) < 1)
        return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "parallel_iterations must be positive");
    return df__sf_same(c);
}
static df_code df__sf_identity_n(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = c->in_shapes[i];
    return DF_OK;
}

/* ---- Gradient helper ops (TensorFlow's names) ---- */
/* StridedSliceGrad and Pad: the strided copy the other way, into a zeroed full tensor. */
static void df__strided_scatter(df_tensor *x, const df_tensor *o, const int64_t *begin, const int64_t *step,
                                const int64_t *odims, int rank) {
    df__strided_move(x, (df_tensor *)o, begin, step, odims, rank, 1);
}
static df_code df__sf_shape_input(df__shape_ctx *c) {      /* output shaped by the const input 0 */
    const df_tensor *s = df__sc_const(c, 0);
    if (!s) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, s, df__sc_out(c, 0), "shape", c->st);
}
static void df__k_strided_slice_grad(df__kctx *c) {
    df__shape xs;
    if (df__dims_from(c->node, c->in[0], &xs, "shape", c->st)) return;
    const df_tensor *dy = c->in[4];
    df_tensor x;
    memset(&x, 0, sizeof x);
    x.rank = xs.rank;
    memcpy(x.dims, xs.dims, sizeof xs.dims);
    int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK], odims[DF_MAX_RANK], n = 1;
    df__shape fin;
    if (df__strided_args(c->node, &x, c->in[1], c->in[2], c->in[3], begin, step, odims, &fin, c->st)) return;
    for (int d = 0; d < fin.rank; d++) n *= fin.dims[d];
    if (n != dy->n) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "StridedSliceGrad: dy has %lld elements, the slice %lld", (long long)dy->n, (long long)n); return; }
    df_tensor *o = df__k_alloc(c, 0, dy->dtype, xs.rank, xs.dims);
    if (!o || df__zero_data(o, c->st)) return;
    if (o->n && dy->n) df__strided_scatter(o, dy, begin, step, odims, xs.rank);
}

/* BroadcastGradientArgs: the axes each input was broadcast along. */
static void df__k_bcast_grad_args(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    if (a->rank != 1 || b->rank != 1 || a->n > DF_MAX_RANK || b->n > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BroadcastGradientArgs: shapes must be vectors of at most %d", DF_MAX_RANK); return; }
    int r = (int)DF__MAX(a->n, b->n);
    int64_t ra[DF_MAX_RANK], rb[DF_MAX_RANK];
    int na = 0, nb = 0;
    for (int d = 0; d < r; d++) {
        int64_t da = d - (r - (int)a->n) >= 0 ? df__int_at(a, d - (r - (int)a->n)) : 1;
        int64_t db = d - (r - (int)b->n) >= 0 ? df__int_at(b, d - (r - (int)b->n)) : 1;
        if (da != db && da != 1 && db != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes in BroadcastGradientArgs at axis %d: %lld vs %lld", d, (long long)da, (long long)db); return; }
        /* an axis is reduced for an input that lacks it, or has 1 where the other does not */
        int ha = d >= r - (int)a->n, hb = d >= r - (int)b->n;
        if (!ha || (da == 1 && db != 1)) ra[na++] = d;
        if (!hb || (db == 1 && da != 1)) rb[nb++] = d;
    }
    int64_t da_ = na, db_ = nb;
    df_tensor *oa = df__k_alloc(c, 0, a->dtype, 1, &da_), *ob = oa ? df__k_alloc(c, 1, a->dtype, 1, &db_) : NULL;
    if (!ob) return;
    for (int i = 0; i < na; i++) df__set_from_i64(a->dtype, oa->data, i, ra[i]);
    for (int i = 0; i < nb; i++) df__set_from_i64(a->dtype, ob->data, i, rb[i]);
}
static df_code df__sf_bcast_grad_args(df__shape_ctx *c) {
    df__sc_out(c, 0)->rank = 1; df__sc_out(c, 0)->dims[0] = -1;
    df__sc_out(c, 1)->rank = 1; df__sc_out(c, 1)->dims[0] = -1;
    return DF_OK;
}

/* UnsortedSegmentSum: out[ids[i], ...] += data[i, ...]; ids outside [0, n) are dropped, as in TF. */
static df_code df__sf_segment_sum(df__shape_ctx *c) {
    const df__shape *d = &c->in_shapes[0], *ix = &c->in_shapes[1];
    const df_tensor *num = df__sc_const(c, 2);
    df__shape *o = df__sc_out(c, 0);
    if (d->rank < 0 || ix->rank < 0) { *o = df__shape_unknown(); return DF_OK; }
    if (ix->rank > d->rank) return df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "segment_ids rank %d exceeds data rank %d", ix->rank, d->rank);
    o->rank = d->rank - ix->rank + 1;
    o->dims[0] = num && df__is_int_tensor(num) && num->n == 1 ? df__int_at(num, 0) : -1;
    for (int i = ix->rank; i < d->rank; i++) o->dims[i - ix->rank + 1] = d->dims[i];
    return DF_OK;
}
static void df__k_segment_sum(df__kctx *c) {
    const df_tensor *d = c->in[0], *ix = c->in[1], *num = c->in[2];
    if (!df__is_int_tensor(num) || num->n != 1 || df__int_at(num, 0) < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_segments must be a non-negative scalar"); return; }
    if (ix->rank > d->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "segment_ids rank %d exceeds data rank %d", ix->rank, d->rank); return; }
    for (int i = 0; i < ix->rank; i++)
        if (ix->dims[i] != d->dims[i]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "data.shape must start with segment_ids.shape"); return; }
    int64_t n = df__int_at(num, 0), dims[DF_MAX_RANK], inner = 1;
    int r = d->rank - ix->rank + 1;
    dims[0] = n;
    for (int i = ix->rank; i < d->rank; i++) { dims[i - ix->rank + 1] = d->dims[i]; inner *= d->dims[i]; }
    df_tensor *o = df__k_alloc(c, 0, d->dtype, r, dims);
    if (!o) return;
    memset(o->data, 0, o->nbytes);
    for (int64_t i = 0; i < ix->n; i++) {
        int64_t s = df__int_at(ix, i);
        if (s < 0 || s >= n) continue;
        if (d->dtype == DF_FLOAT) {
            float *dst = (float *)o->data + s * inner;
            const float *src = (const float *)d->data + i * inner;
            for (int64_t j = 0; j < inner; j++) dst[j] += src[j];
        } else if (df__is_integer_type(d->dtype)) {   /* two's complement wrap, as TF */
            for (int64_t j = 0; j < inner; j++)
                df__set_from_i64(d->dtype, o->data, s * inner + j, (int64_t)((uint64_t)df__get_i64(d->dtype, o->data, s * inner + j) +
                                 (uint64_t)df__get_i64(d->dtype, d->data, i * inner + j)));
        } else {
            for (int64_t j = 0; j < inner; j++)
                df__set_from_f64(d->dtype, o->data, s * inner + j, df__get_f64(d->dtype, o->data, s * inner + j) +
                                 df__get_f64(d->dtype, d->data, i * inner + j));
        }
    }
}

/* Pad with zeros: paddings [rank, 2]. */
static df_code df__pad_dims(const df_node *n, const df__shape *in, const df_tensor *p, df__shape *o, df_status *st) {
    if (!df__is_int_tensor(p) || p->rank != 2 || p->dims[0] != in->rank || p->dims[1] != 2)
        return df__fail(st, n, DF_INVALID_ARGUMENT, "paddings must be a matrix with 2 columns and %d rows", in->rank);
    o->rank = in->rank;
    for (int d = 0; d < in->rank; d++) {
        int64_t lo = df__int_at(p, 2 * d), hi = df__int_at(p, 2 * d + 1);
        if (lo < 0 || hi < 0) return df__fail(st, n, DF_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld", (long long)lo, (long long)hi);
        if (lo > INT64_MAX / 4 || hi > INT64_MAX / 4 || (in->dims[d] > 0 && in->dims[d] > INT64_MAX / 4))
            return df__fail(st, n, DF_INVALID_ARGUMENT, "Pad: dimension %d would be too large", d);
        o->dims[d] = in->dims[d] < 0 ? -1 : in->dims[d] + lo + hi;
    }
    return DF_OK;
}
static df_code df__sf_pad(df__shape_ctx *c) {
    const df_tensor *p = df__sc_const(c, 1);
    if (!p || c->in_shapes[0].rank < 0) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__pad_dims(c->node, &c->in_shapes[0], p, df__sc_out(c, 0), c->st);
}
static void df__k_pad(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__shape in = df__shape_of(x), os;
    if (df__pad_dims(c->node, &in, c->in[1], &os, c->st)) return;
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o || df__zero_data(o, c->st)) return;
    if (!x->n) return;
    int64_t begin[DF_MAX_RANK], step[DF_MAX_RANK];
    for (int d = 0; d < x->rank; d++) { begin[d] = df__int_at(c->in[1], 2 * d); step[d] = 1; }
    if (x->rank == 0) { df__copy_data(o, x, c->st); return; }
    df__strided_scatter(o, x, begin, step, x->dims, x->rank);
}

static void df__k_invert_permutation(df__kctx *c) {
    const df_tensor *p = c->in[0];
    if (p->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "permutation must be a vector"); return; }
    df_tensor *o = df__k_alloc_like(c, 0, p->dtype, p);
    if (!o) return;
    for (int64_t i = 0; i < p->n; i++) df__set_from_i64(p->dtype, o->data, i, -1);
    for (int64_t i = 0; i < p->n; i++) {
        int64_t v = df__int_at(p, i);
        if (v < 0 || v >= p->n || df__int_at(o, v) != -1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%lld is not a permutation index or appears twice", (long long)v); return; }
        df__set_from_i64(p->dtype, o->data, v, i);
    }
}

/* BroadcastTo: NumPy broadcasting of the input to a given shape. */
static df_code df__sf_broadcast_to(df__shape_ctx *c) {
    const df_tensor *s = df__sc_const(c, 1);
    if (!s) { *df__sc_out(c, 0) = df__shape_unknown(); return DF_OK; }
    return df__dims_from(c->node, s, df__sc_out(c, 0), "shape", c->st);
}
static void df__k_broadcast_to(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df__shape s;
    if (df__dims_from(c->node, c->in[1], &s, "shape", c->st)) return;
    df__bcast bc;
    if (!df__broadcast(x->rank, x->dims, s.rank, s.dims, &bc) || bc.rank != s.rank) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Unable to broadcast tensor of shape %s to tensor of shape %s",
                  df__dims_str(x->rank, x->dims, s1, 96), df__dims_str(s.rank, s.dims, s2, 96));
        return;
    }
    for (int d = 0; d < s.rank; d++)
        if (bc.dims[d] != s.dims[d]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Unable to broadcast to the requested shape"); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, s.rank, s.dims);
    if (!o || !o->n) return;
    size_t es = df_dtype_size(x->dtype);
    int64_t idx[DF_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < o->n; i++) {
        memcpy((char *)o->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
        for (int d = s.rank - 1; d >= 0; d--) {
            idx[d]++; off += bc.sa[d];
            if (idx[d] < s.dims[d]) break;
            off -= bc.sa[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* Cumprod along an axis (exclusive / reverse as TF's attrs). */
/* Cumprod's checks and output (NULL: failed, or nothing to write): [outer, len, inner]. */
static df_tensor *df__cumprod_prep(df__kctx *c, int64_t *outer, int64_t *len, int64_t *inner) {
    const df_tensor *x = c->in[0], *ax = c->in[1];
    if (!df__is_int_tensor(ax) || ax->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis must be a scalar"); return NULL; }
    int64_t a = df__int_at(ax, 0);
    if (a < -x->rank || a >= x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "axis %lld out of range for rank %d", (long long)a, x->rank); return NULL; }
    if (a < 0) a += x->rank;
    df_tensor *o = df__k_alloc_like(c, 0, x->dtype, x);
    if (!o || !o->n) return NULL;
    *outer = 1; *len = x->dims[a]; *inner = 1;
    for (int d = 0; d < a; d++) *outer *= x->dims[d];
    for (int d = (int)a + 1; d < x->rank; d++) *inner *= x->dims[d];
    return o;
}
static void df__k_cumprod(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int excl = df__attr_b(c->node, "exclusive", 0), rev = df__attr_b(c->node, "reverse", 0);
    int64_t outer, len, inner;
    df_tensor *o = df__cumprod_prep(c, &outer, &len, &inner);
    if (!o) return;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t j = 0; j < inner; j++) {
            double p = 1;
            for (int64_t k0 = 0; k0 < len; k0++) {
                int64_t k = rev ? len - 1 - k0 : k0, at = (q * len + k) * inner + j;
                double v = df__get_f64(x->dtype, x->data, at);
                if (!excl) p *= v;
                df__set_from_f64(x->dtype, o->data, at, p);
                if (excl) p *= v;
            }
        }
}

/* ConcatOffset: where each input starts along the concat axis. */
static void df__k_concat_offset(df__kctx *c) {
    const df_tensor *ax = c->in[0];
    int n = c->n_in - 1;
    if (!df__is_int_tensor(ax) || ax->n != 1 || n < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "concat_dim must be a scalar"); return; }
    int64_t r = c->in[1]->n, a = df__int_at(ax, 0), off = 0;
    if (a < -r || a >= r) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat dim %lld out of range for rank %lld", (long long)a, (long long)r); return; }
    if (a < 0) a += r;
    for (int i = 0; i < n; i++) {
        const df_tensor *s = c->in[1 + i];
        if (s->n != r) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input %d should contain %lld elements, but got %lld", i, (long long)r, (long long)s->n); return; }
        df_tensor *o = df__k_alloc_like(c, i, DF_INT32, s);
        if (!o) return;
        for (int64_t d = 0; d < r; d++) ((int32_t *)o->data)[d] = d == a ? (int32_t)off : 0;
        off += df__int_at(s, a);
    }
}
static df_code df__sf_concat_offset(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = c->in_shapes[i + 1];
    return DF_OK;
}

/* ---- Stacks: per-step LIFO state for while-loop gradients. A handle is a resource scalar
   holding the stack's index in its step and a check word; a forged handle is refused. ---- */
typedef struct df__pend { int64_t iter; df_tensor *t; } df__pend;
typedef struct df__stack {
    df__spin lock;
    df_tensor **v;               /* LoopStackPush/Pop: v[i] is iteration i's value (NULL: none) */
    int n, cap;
    int64_t max;
    df_dtype type;
    int closed;
    int is_sum;                  /* a SumAccumulator: v[0] holds the running sum */
    int64_t next;                /* accumulator: the iteration whose value is added next */
    df__pend *pend;              /*   values of later iterations, waiting, by iteration */
    int n_pend, cap_pend;
} df__stack;
#define DF__STACK_MAGIC 0x5354414bu
static df__stack *df__step_stack_new(struct df__step *s, int64_t *id, df_status *st);
static df__stack *df__step_stack_get(struct df__step *s, const df_tensor *h);
/* New per-run state (a stack, or a sum when is_sum) and its handle as output 0. */
static df__stack *df__k_new_state(df__kctx *c, int is_sum, df_dtype type) {
    int64_t id;
    df__stack *k = df__step_stack_new(c->step, &id, c->st);
    if (!k) { char msg[sizeof c->st->message]; memcpy(msg, c->st->message, sizeof msg); df__fail(c->st, c->node, c->st->code, "%.400s", msg); return NULL; }
    k->is_sum = is_sum;
    k->type = type;
    df_tensor *o = df__k_alloc(c, 0, DF_RESOURCE, 0, NULL);
    if (o) { uint64_t w = ((uint64_t)DF__STACK_MAGIC << 32) | (uint64_t)id; memcpy(o->data, &w, 8); }
    return o ? k : NULL;
}
/* The state behind input 0, which must be a handle of the right kind made in this run. */
static df__stack *df__k_state_of(df__kctx *c, int is_sum) {
    df__stack *k = c->in[0]->dtype == DF_RESOURCE && c->in[0]->n == 1 ? df__step_stack_get(c->step, c->in[0]) : NULL;
    if (!k || k->is_sum != is_sum) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, is_sum ? "Not an accumulator handle made by SumAccumulator in this run"
                                                 : "Not a stack handle made by StackV2 in this run");
        return NULL;
    }
    return k;
}
static void df__k_stack(df__kctx *c) {
    const df_tensor *m = c->in[0];
    if (!df__is_int_tensor(m) || m->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "max_size must be a scalar"); return; }
    df__stack *k = df__k_new_state(c, 0, df__attr_type(c->node, "elem_type"));
    if (k) k->max = df__int_at(m, 0);
}
static df__stack *df__k_stack_of(df__kctx *c) { return df__k_state_of(c, 0); }
/* What a push keeps (a new reference): the value, or with swap_memory on a GPU a copy in host
   memory (TensorFlow's swap_memory: long loops keep their gradient stacks off the device).
   What a pop gives: the kept value, moved back to the device when it was swapped out. */
static df_tensor *df__stack_keep(df__kctx *c, df_tensor *x) {
    if (c->gpu && df__attr_b(c->node, "swap_memory", 0)) return df__to_host(c->dev, x, c->st);
    return df_tensor_retain(x);
}
static df_tensor *df__stack_give(df__kctx *c, df_tensor *x) {
    const df_tensor *b = x->base ? x->base : x;
    if (!c->gpu || b->alloc == c->alloc || !x->nbytes) return x;       /* already in the GPU's memory */
    df_tensor *d = df__to_device(c->dev, x, c->st);
    df_tensor_release(x);
    return d;
}
static void df__k_stack_push(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df_tensor *x = c->in[1], *kept = df__stack_keep(c, x);
    if (!kept) return;
    df__spin_lock(&k->lock);
    if (k->closed || (k->max >= 0 && k->n >= k->max) || x->dtype != k->type ||
        k->n >= INT32_MAX - 1 || !df__grow(&k->v, &k->cap, k->n + 1, sizeof(df_tensor *))) {
        int full = k->max >= 0 && k->n >= k->max, closed = k->closed, bad = x->dtype != k->type;
        df__spin_unlock(&k->lock);
        if (closed) DF__KFAIL(c, DF_ABORTED, "Stack was closed");
        else if (bad) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds %s, got %s", df_dtype_name(k->type), df_dtype_name(x->dtype));
        else if (full) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Stack is full (max_size %lld)", (long long)k->max);
        else DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory pushing on a stack");
        df_tensor_release(kept);
        return;
    }
    k->v[k->n++] = kept;
    df__spin_unlock(&k->lock);
    c->out[0] = df_tensor_retain(x);
}
static void df__k_stack_pop(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df__spin_lock(&k->lock);
    df_tensor *x = k->n > 0 && !k->closed ? k->v[--k->n] : NULL;
    df__spin_unlock(&k->lock);
    if (!x) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack is empty"); return; }
    c->out[0] = df__stack_give(c, x);
}
static void df__k_stack_close(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df__spin_lock(&k->lock);
    k->closed = 1;
    df__spin_unlock(&k->lock);
}

/* ---- Stacks indexed by iteration, for while-loop gradients: LoopStackPush keeps its value
   under the iteration of the loop it runs in, so pushes need no order among themselves;
   LoopStackPop, in the gradient loop's iteration k, takes the value of iteration count-1-k
   (count: the forward loop's LoopCount), each value once. ---- */
static void df__k_loop_push(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    df_tensor *x = c->in[1], *kept = df__stack_keep(c, x);
    if (!kept) return;
    int64_t i = c->iter;
    df__spin_lock(&k->lock);
    int bad = x->dtype != k->type, closed = k->closed, full = i >= INT32_MAX - 1 || (k->max >= 0 && i >= k->max);
    int twice = !bad && !closed && !full && i < k->n && k->v[i];
    int ok = !bad && !closed && !full && !twice && df__grow(&k->v, &k->cap, (int)i + 1, sizeof(df_tensor *));
    if (ok) {
        while (k->n <= i) k->v[k->n++] = NULL;
        k->v[i] = kept;
    }
    df__spin_unlock(&k->lock);
    if (ok) { if (c->need & 1) c->out[0] = df_tensor_retain(x); return; }
    df_tensor_release(kept);
    if (closed) DF__KFAIL(c, DF_ABORTED, "Stack was closed");
    else if (bad) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds %s, got %s", df_dtype_name(k->type), df_dtype_name(x->dtype));
    else if (full) DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Stack is full at iteration %lld (max_size %lld)", (long long)i, (long long)k->max);
    else if (twice) DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack already holds a value of iteration %lld", (long long)i);
    else DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory pushing on a stack");
}
static void df__k_loop_pop(df__kctx *c) {
    df__stack *k = df__k_stack_of(c);
    if (!k) return;
    const df_tensor *n = c->in[1];
    if (!df__is_int_tensor(n) || n->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "count must be an integer scalar"); return; }
    int64_t i = df__int_at(n, 0) - 1 - c->iter;
    df__spin_lock(&k->lock);
    df_tensor *x = NULL;
    if (i >= 0 && i < k->n && !k->closed) { x = k->v[i]; k->v[i] = NULL; }
    df__spin_unlock(&k->lock);
    if (!x) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Stack holds no value of iteration %lld (count %lld, popped in iteration %lld)", (long long)i, (long long)df__int_at(n, 0), (long long)c->iter); return; }
    c->out[0] = df__stack_give(c, x);
}
/* Whether the number of the iteration it runs in is below `limit`: a gradient loop's predicate
   in one node. */
static void df__k_loop_iteration_less(df__kctx *c) {
    const df_tensor *n = c->in[0];
    if (!df__is_int_tensor(n) || n->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "limit must be an integer scalar"); return; }
    df_tensor *o = df__k_alloc(c, 0, DF_BOOL, 0, NULL);
    if (o) *(uint8_t *)o->data = c->iter < df__int_at(n, 0);
}
static void df__k_loop_count(df__kctx *c) {         /* never scheduled: the executor fires it */
    DF__KFAIL(c, DF_INTERNAL, "LoopCount ran as a node");
}

/* ---- SumAccumulator: per-run state summing the values added to it (the gradients of loop
   invariants, one add per iteration of a gradient loop, in iteration order). ---- */
static void df__k_accum(df__kctx *c) { df__k_new_state(c, 1, df__attr_type(c->node, "dtype")); }
static df__stack *df__k_accum_of(df__kctx *c) { return df__k_state_of(c, 1); }
/* *acc += x (a fresh tensor; *acc NULL: x itself). The caller holds the lock. Returns 0 with
   st set on a shape mismatch or no memory. */
static int df__accum_into(df__kctx *c, df_tensor **acc, df_tensor *x) {
    df_tensor *old = *acc;
    if (!old) { *acc = df_tensor_retain(x); return 1; }
    df__shape so = df__shape_of(old), sx = df__shape_of(x);
    if (!df__shapes_equal(&so, &sx)) {
        char s1[96], s2[96];
        df__fail(c->st, c->node, DF_INVALID_ARGUMENT, "Accumulator holds shape %s, got %s", df__dims_str(so.rank, so.dims, s1, 96), df__dims_str(sx.rank, sx.dims, s2, 96));
        return 0;
    }
    if (__atomic_load_n(&old->refs, __ATOMIC_ACQUIRE) == 1 && !old->base && !old->ref && old->alloc) {
        return df__add_data(DF__B_ADD, old, old, x, c->st) == DF_OK;   /* ours alone */
    }
    df_tensor *sum = df__tensor_alloc(c->alloc, x->dtype, x->rank, x->dims, c->st);
    if (!sum) return 0;
    if (df__add_data(DF__B_ADD, sum, old, x, c->st)) { df_tensor_release(sum); return 0; }
    *acc = sum;
    df_tensor_release(old);
    return 1;
}
/* Adds the first waiting value into the sum and drops it from the waiting list. */
static int df__accum_take_front(df__kctx *c, df__stack *k) {
    df_tensor *t = k->pend[0].t;
    int ok = df__accum_into(c, &k->v[0], t);
    df_tensor_release(t);
    memmove(k->pend, k->pend + 1, (size_t)--k->n_pend * sizeof(df__pend));
    return ok;
}
/* Values are summed in the order of the iterations they come from, whatever order they arrive
   in (parallel iterations), so the sum is the same for any parallel_iterations: a value of a
   later iteration waits in pend until the ones before it are in. Values of one iteration, or
   of an earlier one than the next expected, are added as they come. */
static void df__k_accum_add(df__kctx *c) {
    df__stack *k = df__k_accum_of(c);
    if (!k) return;
    df_tensor *x = c->in[1];
    if (x->dtype != k->type || (x->dtype != DF_FLOAT && x->dtype != DF_DOUBLE)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Accumulator holds %s, got %s", df_dtype_name(k->type), df_dtype_name(x->dtype)); return; }
    int64_t i = c->iter;
    int ok = 1;
    df__spin_lock(&k->lock);
    if (!k->cap && !df__grow(&k->v, &k->cap, 1, sizeof(df_tensor *))) ok = 0;
    else if (!k->n) { k->v[0] = NULL; k->n = 1; }
    if (!ok) {
        df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    } else if (i <= k->next) {
        ok = df__accum_into(c, &k->v[0], x);
        if (ok && i == k->next) {
            k->next++;
            while (ok && k->n_pend && k->pend[0].iter == k->next) {
                ok = df__accum_take_front(c, k);
                k->next++;
            }
        }
    } else {
        int at = 0;
        while (at < k->n_pend && k->pend[at].iter < i) at++;
        if (at < k->n_pend && k->pend[at].iter == i) ok = df__accum_into(c, &k->pend[at].t, x);
        else if (!df__grow(&k->pend, &k->cap_pend, k->n_pend + 1, sizeof(df__pend))) {
            ok = 0;
            df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory");
        } else {
            memmove(k->pend + at + 1, k->pend + at, (size_t)(k->n_pend - at) * sizeof(df__pend));
            k->pend[at].iter = i;
            k->pend[at].t = df_tensor_retain(x);
            k->n_pend++;
        }
    }
    df__spin_unlock(&k->lock);
    if (!ok && !c->st->code) df_status_set(c->st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    if (!ok && !strstr(c->st->message, "{{node")) {
        char msg[sizeof c->st->message];
        memcpy(msg, c->st->message, sizeof msg);
        df__fail(c->st, c->node, c->st->code, "%.400s", msg);
    }
}
/* The sum (values still waiting, of iterations after one that added nothing, go in in order);
   `default` when nothing was added. */
static void df__k_accum_read(df__kctx *c) {
    df__stack *k = df__k_accum_of(c);
    if (!k) return;
    int ok = 1;
    df__spin_lock(&k->lock);
    while (ok && k->n_pend) ok = df__accum_take_front(c, k);
    df_tensor *s = ok && k->n && k->v[0] ? df_tensor_retain(k->v[0]) : NULL;
    df__spin_unlock(&k->lock);
    if (ok) c->out[0] = s ? s : df_tensor_retain(c->in[1]);
}
static df_code df__sf_accum_read(df__shape_ctx *c) { *df__sc_out(c, 0) = c->in_shapes[1]; return DF_OK; }
static df_code df__sf_push(df__shape_ctx *c) { *df__sc_out(c, 0) = c->in_shapes[1]; return DF_OK; }
static df_code df__sf_unknown(df__shape_ctx *c) {
    for (int i = 0; i < c->node->n_outputs; i++) *df__sc_out(c, i) = df__shape_unknown();
    return DF_OK;
}

/* ---- Optimizer updates on variables: in place when no reader holds the value, else a fresh
   tensor replaces it (readers keep what they read). ---- */
/* The variables an Apply op updates (its first n inputs, refs): distinct, locked in address
   order (two ops over the same variables cannot deadlock), each value made private to the
   update (copied when a reader still holds it). Returns 0, with nothing locked, on error. */
static int df__k_apply_lock(df__kctx *c, int n, df__var **v, df_tensor **val) {
    df__var *order[3];
    for (int i = 0; i < n; i++) {
        v[i] = c->in[i] ? c->in[i]->ref : NULL;
        if (!v[i]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Input %d of %s must be a variable", i, c->node->op->name); return 0; }
        for (int j = 0; j < i; j++)
            if (v[j] == v[i]) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s needs distinct variables, got %s twice", c->node->op->name, v[i]->name); return 0; }
        order[i] = v[i];
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (uintptr_t)order[j] < (uintptr_t)order[j - 1]; j--) {
            df__var *t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    for (int i = 0; i < n; i++) df__spin_lock(&order[i]->lock);
    for (int i = 0; i < n; i++) {
        df_tensor *cur = v[i]->value;
        if (!cur) DF__KFAIL(c, DF_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v[i]->name);
        else if (cur->refs != 1 || cur->base) {
            df_tensor *fresh = df__tensor_alloc(c->alloc, cur->dtype, cur->rank, cur->dims, c->st);
            if (fresh && df__copy_data(fresh, cur, c->st)) { df_tensor_release(fresh); fresh = NULL; }
            if (fresh) {
                v[i]->value = fresh;
                df_tensor_release(cur);
                cur = fresh;
            }
        }
        val[i] = cur;
        if (c->st->code) { for (int k = 0; k < n; k++) df__spin_unlock(&order[k]->lock); return 0; }
    }
    return 1;
}
static int df__k_apply_check(df__kctx *c, const df_tensor *var, const df_tensor *t, const char *what) {
    int same = t->rank == var->rank;
    for (int d = 0; same && d < t->rank; d++) same = t->dims[d] == var->dims[d];
    if (same) return 1;
    char s1[96], s2[96];
    DF__KFAIL(c, DF_INVALID_ARGUMENT, "var and %s do not have the same shape: %s vs %s", what,
              df__dims_str(var->rank, var->dims, s1, 96), df__dims_str(t->rank, t->dims, s2, 96));
    return 0;
}
static double df__k_scalar_arg(df__kctx *c, int i, int *ok) {
    if (c->in[i]->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input %d of %s must be a scalar", i, c->node->op->name); *ok = 0; return 0; }
    return df__get_f64(c->in[i]->dtype, c->in[i]->data, 0);
}
static void df__k_apply(df__kctx *c) {
    int code = c->node->op->code, ok = 1;     /* 0 GradientDescent, 1 Momentum, 2 Adam */
    df__var *vars[3] = {NULL, NULL, NULL};
    df_tensor *vals[3] = {NULL, NULL, NULL};
    int nv = code + 1;
    if (!df__k_apply_lock(c, nv, vars, vals)) return;
    df_tensor *var = vals[0], *acc = vals[1], *acc2 = vals[2];
    if (code == 0) {
        const df_tensor *d = c->in[2];
        double lr = df__k_scalar_arg(c, 1, &ok);
        if (ok && df__k_apply_check(c, var, d, "delta")) {
            if (var->dtype == DF_FLOAT) {
                float *w = (float *)var->data, a = (float)lr;
                const float *g = (const float *)d->data;
                for (int64_t i = 0; i < var->n; i++) w[i] -= a * g[i];
            } else {
                for (int64_t i = 0; i < var->n; i++)
                    df__set_from_f64(var->dtype, var->data, i, df__get_f64(var->dtype, var->data, i) - lr * df__get_f64(d->dtype, d->data, i));
            }
        }
    }
    else if (code == 1) {
        const df_tensor *g = c->in[3];
        double lr = df__k_scalar_arg(c, 2, &ok), mom = ok ? df__k_scalar_arg(c, 4, &ok) : 0;
        int nesterov = df__attr_b(c->node, "use_nesterov", 0);
        if (ok && df__k_apply_check(c, var, g, "grad") && df__k_apply_check(c, var, acc, "accum")) {
            for (int64_t i = 0; i < var->n; i++) {
                double gi = df__get_f64(g->dtype, g->data, i);
                double a = df__get_f64(acc->dtype, acc->data, i) * mom + gi;
                df__set_from_f64(acc->dtype, acc->data, i, a);
                double w = df__get_f64(var->dtype, var->data, i);
                w -= nesterov ? (gi * lr + a * mom * lr) : a * lr;
                df__set_from_f64(var->dtype, var->data, i, w);
            }
        }
    } else {
        const df_tensor *g = c->in[9];
        double b1p = df__k_scalar_arg(c, 3, &ok), b2p = ok ? df__k_scalar_arg(c, 4, &ok) : 0;
        double lr = ok ? df__k_scalar_arg(c, 5, &ok) : 0, b1 = ok ? df__k_scalar_arg(c, 6, &ok) : 0;
        double b2 = ok ? df__k_scalar_arg(c, 7, &ok) : 0, eps = ok ? df__k_scalar_arg(c, 8, &ok) : 0;
        int nesterov = df__attr_b(c->node, "use_nesterov", 0);
        if (ok && df__k_apply_check(c, var, g, "grad") && df__k_apply_check(c, var, acc, "m") &&
            df__k_apply_check(c, var, acc2, "v")) {
            double alpha = lr * sqrt(1 - b2p) / (1 - b1p);
            if (var->dtype == DF_FLOAT && !nesterov) {
                float *w = (float *)var->data, *m = (float *)acc->data, *v = (float *)acc2->data;
                const float *gg = (const float *)g->data;
                float fb1 = (float)b1, fb2 = (float)b2, fa = (float)alpha, fe = (float)eps;
                for (int64_t i = 0; i < var->n; i++) {
                    m[i] += (gg[i] - m[i]) * (1 - fb1);
                    v[i] += (gg[i] * gg[i] - v[i]) * (1 - fb2);
                    w[i] -= fa * m[i] / (sqrtf(v[i]) + fe);
                }
            } else {
                for (int64_t i = 0; i < var->n; i++) {
                    double gi = df__get_f64(g->dtype, g->data, i);
                    double m = df__get_f64(acc->dtype, acc->data, i), v = df__get_f64(acc2->dtype, acc2->data, i);
                    m += (gi - m) * (1 - b1);
                    v += (gi * gi - v) * (1 - b2);
                    df__set_from_f64(acc->dtype, acc->data, i, m);
                    df__set_from_f64(acc2->dtype, acc2->data, i, v);
                    double step = nesterov ? (m * b1 + (1 - b1) * gi) : m;
                    df__set_from_f64(var->dtype, var->data, i, df__get_f64(var->dtype, var->data, i) - alpha * step / (sqrt(v) + eps));
                }
            }
        }
    }
    df_tensor *keep = df_tensor_retain(var);
    for (int i = 0; i < nv; i++) df__spin_unlock(&vars[i]->lock);
    if (c->st->code) { df_tensor_release(keep); return; }
    c->out[0] = keep;
}
static df_code df__sf_apply(df__shape_ctx *c) { *df__sc_out(c, 0) = c->in_shapes[0]; return DF_OK; }

/* ==========================================================================================
   13. AUTODIFF                                                                     >>autodiff
   df_gradients walks back from ys over the nodes that lie between xs and ys (reachable from an
   x and reaching a y), in reverse topological order, summing the gradients that reach each
   output (AddN) and calling each op's gradient function. A cond is differentiated op by op
   (Merge <-> Switch duality, with zeros gated so exactly one side is live). A while loop is one
   unit: its gradient is another while loop, built with df_while_loop, that runs N times and
   differentiates the loop body once per iteration. N is the forward loop's LoopCount, which
   the executor gives once every node of every iteration has run. Forward values go on stacks
   indexed by iteration (LoopStackPush keeps iteration i's value at i; no order among pushes is
   needed), and the gradient loop, whose predicate is LoopIterationLess(N) (no counting loop
   variable), pops in its iteration k the value of iteration N-1-k. Gradients of loop invariants
   are summed by a SumAccumulator, one add per iteration, summed in iteration order whatever the
   arrival order, read once the gradient loop's own LoopCount fires (by accumulator loop
   variables when checkpointing, whose sequential stacks still use a forward counter). A loop
   nested in another gets its stacks made in the outer loop's body, one per outer iteration,
   and their handles reach its gradient loop through the outer loop's stacks. The gradient loop
   is an ordinary loop whose pops are its per-iteration inputs, so differentiating it again
   (second order) works the same way: the gradients of its pops are pushed on a stack that the
   next gradient of the forward loop pops where the values were pushed.
   ========================================================================================== */
typedef struct df__gstack {
    df_node *stack;              /* StackV2: in the loop around the pushing loop, else outside every loop */
    df_node *push;               /* the one LoopStackPush (checkpoints: StackPushV2) */
    df_node *count;              /* the LoopCount of the loop the push runs in */
    df__ctx *push_ctx;           /* where the push runs: a loop or a cond inside it */
    df__ctx *push_loop;
    df_node **pops;
    int n_pops, cap_pops;
    struct df__gstack *grad;     /* second order: the stack of its pops' gradients */
} df__gstack;

static df_output df__out(df_node *n, int i);
static df_output df__op1(df_graph *g, const char *op, df_output a);
static df_output df__op2(df_graph *g, const char *op, df_output a, df_output c);
static int df__is_float(df_dtype t) { return t == DF_FLOAT || t == DF_DOUBLE || t == DF_HALF || t == DF_BFLOAT16; }
static df__ctx *df__loop_of(df__ctx *c) { while (c && c->kind != DF__CTX_WHILE) c = c->outer; return c; }
/* The loop a node belongs to: an Exit belongs to the loop it leaves. */
static df__ctx *df__node_loop(const df_node *n) {
    if ((n->op->flags & DF__OP_EXIT) && n->n_inputs) return df__loop_of(n->inputs[0].node->ctx);
    return df__loop_of(n->ctx);
}
static int df__ok(df_graph *g) { return g->status.code == DF_OK; }

/* Starts an op in context ctx with the given inputs and control inputs; finish with df__finish_in. */
static df_op_builder *df__begin(df_graph *g, df__ctx *ctx, const char *op, const df_output *ins, int n_ins,
                                df_node *const *ctl, int n_ctl, int raw) {
    df__ctx *saved = g->ctx;
    g->ctx = ctx;
    df_op_builder *b = df_op_new(g, op, NULL);
    if (b) {
        b->raw = raw;
        for (int i = 0; i < n_ins; i++) df_op_add_input(b, ins[i]);
        for (int i = 0; i < n_ctl; i++) df_op_add_control_input(b, ctl[i]);
    }
    g->ctx = saved;
    return b;
}
static df_node *df__finish_in(df_graph *g, df__ctx *ctx, df_op_builder *b) {
    df__ctx *saved = g->ctx;
    g->ctx = ctx;
    df_node *n = df_op_finish(b);
    g->ctx = saved;
    return n;
}
static int df__add_control_edge(df_graph *g, df_node *n, df_node *c) {
    if (!n || !c) return 0;
    if (!df__node_add_control(n, c)) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return 0; }
    g->edit_version++;
    return 1;
}

/* The LoopCount of loop W (made once): the number of iterations W ran, given once every node
   of every iteration has run, so every push of W has happened when something reads it. */
static int df__loop_count(df_graph *g, df__ctx *W) {
    if (W->lcount) return 1;
    if (!df__ok(g)) return 0;
    df_output lc = {W->loop_cond, 0};
    df_node *n = df__raw_op(g, W->outer, "LoopCount", &lc, 1, 0);
    if (!n) return 0;
    n->cf_part = 1;
    W->lcount = n;
    return 1;
}

/* The forward counter of loop W, for checkpointed loop gradients, whose stacks are sequential:
   counts iterations (made once). Its Add runs once per iteration before that iteration's
   pushes; its NextIteration waits for them, so pushes happen in iteration order whatever
   parallel_iterations allows. */
static int df__loop_counter(df_graph *g, df__ctx *W) {
    if (W->fc_exit) return 1;
    if (!df__ok(g)) return 0;
    df__ctx *saved = g->ctx, *outer_loop = df__loop_of(W->outer);
    if (outer_loop && !df__loop_counter(g, outer_loop)) return 0;
    /* A separate counter, not a loop variable that already counts: pushes order themselves on
       it, and a run of the forward loop alone (inference) must not run them. */
    g->ctx = W->outer;
    df_output zero = df_scalar_i32(g, 0);
    g->ctx = saved;
    if (!zero.node) return 0;
    if (outer_loop && !df__add_control_edge(g, zero.node, outer_loop->fc_add)) return 0;
    df_node *e = df__make_enter(g, W, zero, 0);
    if (!e) return 0;
    df_output ev = {e, 0}, pair[2] = {ev, ev};
    df_node *m = df__raw_op(g, W, "Merge", pair, 2, 1);
    if (!m) return 0;
    df_output mv = {m, 0}, lc = {W->loop_cond, 0}, swin[2] = {mv, lc};
    df_node *sw = df__raw_op(g, W, "Switch", swin, 2, 0);
    if (!sw) return 0;
    g->ctx = W->outer;           /* made outside and entered once, not run every iteration */
    df_output one = df_scalar_i32(g, 1);
    g->ctx = saved;
    if (one.node) one = df__ctx_capture(g, W, one);
    df_output t = {sw, 1}, addin[2] = {t, one};
    df_node *add = one.node ? df__raw_op(g, W, "AddV2", addin, 2, 0) : NULL;
    if (!add) return 0;
    df_output av = {add, 0}, f = {sw, 0};
    df_node *nx = df__raw_op(g, W, "NextIteration", &av, 1, 0);
    if (!nx) return 0;
    df_output nv = {nx, 0};
    if (df_node_update_input(g, m, 1, nv)) return 0;
    df_node *ex = df__raw_op(g, W->outer, "Exit", &f, 1, 0);
    if (!ex) return 0;
    e->cf_part = m->cf_part = sw->cf_part = nx->cf_part = ex->cf_part = 1;
    W->fc_add = add; W->fc_next = nx; W->fc_exit = ex;
    return 1;
}

static df__gstack *df__gstack_new_op(df_graph *g, df_dtype t, int sum, df__ctx *at);
static df__gstack *df__gstack_new(df_graph *g, df_dtype t) { return df__gstack_new_op(g, t, 0, NULL); }
/* A stack for values pushed in loop W: made in the loop around W (one stack per frame of W,
   whose iterations index it), or outside every loop. */
static df__gstack *df__gstack_for(df_graph *g, df_dtype t, df__ctx *W) { return df__gstack_new_op(g, t, 0, df__loop_of(W->outer)); }
/* A stack made in context `at`, or (sum) a SumAccumulator made where the graph's context is. */
static df__gstack *df__gstack_new_op(df_graph *g, df_dtype t, int sum, df__ctx *at) {
    df__gstack *s = (df__gstack *)DF_MALLOC(sizeof *s);
    if (!s || !df__grow(&g->gstacks, &g->cap_gstacks, g->n_gstacks + 1, sizeof(df__gstack *))) {
        DF_FREE(s);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory making a gradient stack");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    g->gstacks[g->n_gstacks++] = s;
    df__ctx *saved = g->ctx;
    df_op_builder *b;
    if (sum) {                   /* one per run of the gradient loop: made where that loop is made */
        b = df_op_new(g, "SumAccumulator", NULL);
        if (b) df_op_set_attr_type(b, "dtype", t);
    } else {
        g->ctx = at;
        df_output m = df_scalar_i32(g, -1);
        b = df_op_new(g, "StackV2", NULL);
        if (b) { b->raw = 1; df_op_add_input(b, m); df_op_set_attr_type(b, "elem_type", t); }
    }
    s->stack = df_op_finish(b);
    g->ctx = saved;
    if (s->stack) s->stack->gstack = g->n_gstacks;
    return s->stack ? s : NULL;
}

/* Pushes x (made in context cx, inside loop W) on s under W's iteration: LoopStackPush, which
   needs no order among pushes. */
static int df__gstack_push(df_graph *g, df__gstack *s, df_output x, df__ctx *cx, df__ctx *W, int swap) {
    if (!df__loop_count(g, W)) return 0;
    df__ctx *saved = g->ctx;
    g->ctx = cx;
    df_output h = df__ctx_capture(g, cx, df__out(s->stack, 0));
    g->ctx = saved;
    if (!h.node) return 0;
    df_output ins[2] = {h, x};
    df_op_builder *b = df__begin(g, cx, "LoopStackPush", ins, 2, NULL, 0, 1);
    if (b) df_op_set_attr_bool(b, "swap_memory", swap);
    df_node *p = df__finish_in(g, cx, b);
    if (!p) return 0;
    p->gstack = s->stack->gstack;
    s->push = p; s->push_ctx = cx; s->push_loop = W; s->count = W->lcount;
    return df__add_control_edge(g, W->lcount, p);       /* a run that reads the count runs the push */
}

/* Checkpoints: pushes x (made in context cx, inside loop W) on s, once per iteration of W, in
   order (StackPushV2 after the forward counter's Add). */
static int df__gstack_push_seq(df_graph *g, df__gstack *s, df_output x, df__ctx *cx, df__ctx *W, int swap) {
    if (!df__loop_counter(g, W)) return 0;
    df__ctx *saved = g->ctx;
    g->ctx = cx;
    df_output h = {s->stack, 0};
    h = df__ctx_capture(g, cx, h);
    g->ctx = saved;
    if (!h.node) return 0;
    df_output ins[2] = {h, x};
    df_node *ctl = W->fc_add;
    df_op_builder *b = df__begin(g, cx, "StackPushV2", ins, 2, &ctl, 1, 1);
    if (b) df_op_set_attr_bool(b, "swap_memory", swap);
    df_node *p = df__finish_in(g, cx, b);
    if (!p) return 0;
    p->gstack = s->stack->gstack;
    s->push = p; s->push_ctx = cx; s->push_loop = W;
    if (cx == W) return df__add_control_edge(g, W->fc_next, p);
    if (!W->f_sync) {
        df_node *t = df__raw_op(g, W, "ControlTrigger", NULL, 0, 0);
        if (!t || !df__add_control_edge(g, W->fc_next, t)) return 0;
        W->f_sync = t;
    }
    return df__add_control_edge(g, W->f_sync, p);
}

/* Pops, in gradient loop G, the value pushed by s in context cx of loop W (in G's iteration k,
   that of W's iteration count-1-k); dead when the iteration it belongs to did not take the
   branch cx lies on. The count, given once the pushing loop is done, orders every pop after
   every push. */
static df_output df__gstack_pop(df_graph *g, df__ctx *G, df__gstack *s, df__ctx *cx, df__ctx *W, df_dtype t,
                                const df__shape *shape) {
    df_output none = {NULL, 0};
    df__ctx *saved = g->ctx;
    df_output h = {s->stack, 0};
    if (!s->count) { df__graph_error(g, DF_INTERNAL, "Popping a gradient stack that has no push"); return none; }
    g->ctx = G;
    df_output cnt = df__ctx_capture(g, G, df__out(s->count, 0));
    h = cnt.node ? df__ctx_capture(g, G, h) : none;
    if (h.node && cx != W && cx->kind == DF__CTX_COND) {
        df_output p = df__ctx_capture(g, G, cx->pred);
        df_output ins[2] = {h, p};
        df_node *sw = p.node ? df__raw_op(g, G, "Switch", ins, 2, 0) : NULL;
        h.node = sw;
        h.index = cx->branch;
    }
    g->ctx = saved;
    if (!h.node) return none;
    df_node *ctl = df__ctx_control_pivot(G);     /* not in the loop's last, dead, iteration */
    df_output ins[2] = {h, cnt};
    df_op_builder *b = df__begin(g, G, "LoopStackPop", ins, 2, &ctl, ctl ? 1 : 0, 1);
    if (b) df_op_set_attr_type(b, "elem_type", t);
    df_node *pop = df__finish_in(g, G, b);
    if (!pop) return none;
    if (shape) pop->out_shapes[0] = *shape;
    pop->gstack = s->stack->gstack;
    if (!df__grow(&s->pops, &s->cap_pops, s->n_pops + 1, sizeof(df_node *))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
        return none;
    }
    s->pops[s->n_pops++] = pop;
    df_output r = {pop, 0};
    return r;
}

static int df__maybe_dead_rec(const df_node *n, const df__ctx *W, unsigned char *seen, int limit) {
    if (n->id >= limit || seen[n->id] || n->ctx != W || n->cf_part || (n->op->flags & DF__OP_MERGE)) return 0;
    seen[n->id] = 1;
    if (n->op->flags & DF__OP_SWITCH) return 1;
    for (int i = 0; i < n->n_inputs; i++) if (df__maybe_dead_rec(n->inputs[i].node, W, seen, limit)) return 1;
    return 0;
}
/* Whether a value of gradient loop W may be dead in some iteration: it depends, not through a
   Merge, on a Switch made by a cond's gradient inside W. */
static int df__maybe_dead_in_loop(const df_node *n, const df__ctx *W) {
    df_graph *g = n->graph;
    unsigned char *seen = (unsigned char *)DF_MALLOC((size_t)g->n_nodes + 1);
    if (!seen) return 1;         /* cannot tell: assume it may */
    memset(seen, 0, (size_t)g->n_nodes + 1);
    int r = df__maybe_dead_rec(n, W, seen, g->n_nodes);
    DF_FREE(seen);
    return r;
}

/* What gradient loop G reads when its ops use x, a value of the forward loop G->grad_of:
   constants are cloned, loop invariants read from outside, anything else comes off a stack. */
static df_output df__grad_real_value(df_graph *g, df__ctx *G, df_output x) {
    df_output none = {NULL, 0};
    df__ctx *W = G->grad_of;
    df_node *n = x.node;
    if (!strcmp(n->op->name, "Const")) {
        const df__attr *a = df__node_attr(n, "value");
        df__ctx *saved = g->ctx;
        g->ctx = G;
        df_output c = a && a->kind == DF__A_TENSOR ? df_const(g, a->u.tensor) : none;
        g->ctx = saved;
        return c;
    }
    if ((n->op->flags & DF__OP_ENTER) && df__attr_b(n, "is_constant", 0) && n->ctx == W)
        return df__ctx_capture(g, G, n->inputs[0]);
    if (df__loop_of(n->ctx) != W) {
        df__graph_error(g, DF_INTERNAL, "Gradient loop reads '%s' from a loop nested in the one it "
                        "differentiates", n->name);
        return none;
    }
    if (W->grad_of && df__maybe_dead_in_loop(n, W)) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Differentiating a gradient loop through the gradient of a cond "
                        "inside a while loop is not supported yet (a second-order gradient through a cond in a "
                        "loop) {{node %s}}", n->name);
        return none;
    }
    df__gstack *s = df__gstack_for(g, df_output_dtype(x), W);
    if (!s || !df__gstack_push(g, s, x, n->ctx, W, G->swap_memory)) return none;
    return df__gstack_pop(g, G, s, n->ctx, W, df_output_dtype(x), &n->out_shapes[x.index]);
}

/* ---- gradient functions ---- */
typedef struct df__gfn {
    df_graph *g;
    df_node *n;
    const df_output *dy;         /* per output: the summed gradient or {NULL,0} */
    df_output *dx;               /* per input: filled in ({NULL,0}: none) */
} df__gfn;
typedef void (*df__grad_fn)(df__gfn *c);

#define DF__X(c, i) ((c)->n->inputs[i])
static df_output df__Y(df__gfn *c, int i) { df_output o = {c->n, i}; return o; }
static df_output df__g_i32s(df_graph *g, const int64_t *v, int n) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_INT32, 1, &d, NULL);
    if (!t) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return df__out(NULL, 0); }
    for (int i = 0; i < n; i++) ((int32_t *)t->data)[i] = (int32_t)v[i];
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static int df__static_full(df_output x, df__shape *s) {
    *s = x.node->out_shapes[x.index];
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] < 0) return 0;
    return 1;
}
static df_output df__shape_of_out(df_graph *g, df_output x) {      /* int32 shape, const if static */
    df__shape s;
    if (df__static_full(x, &s)) return df__g_i32s(g, s.dims, s.rank);
    return df_shape(g, x);
}
static df_output df__op_attr_int(df_graph *g, const char *op, const df_output *ins, int n, const char *attr, int64_t v) {
    df_op_builder *b = df_op_new(g, op, NULL);
    if (!strcmp(op, "Pack")) df_op_add_input_list(b, ins, n);
    else for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    if (attr) df_op_set_attr_int(b, attr, v);
    return df__out(df_op_finish(b), 0);
}
static df_output df__reduce_op(df_graph *g, const char *op, df_output x, df_output axes, int keep) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, axes);
    df_op_set_attr_bool(b, "keep_dims", keep);
    return df__out(df_op_finish(b), 0);
}
/* Sums grad down to x's shape (undoing broadcasting). */
static df_output df__sum_to(df_graph *g, df_output grad, df_output x) {
    if (!grad.node || !df__ok(g)) return df__out(NULL, 0);
    df__shape sx, sg;
    int fx = df__static_full(x, &sx), fg = df__static_full(grad, &sg);
    if (fx && fg) {
        if (df__shapes_equal(&sx, &sg)) return grad;
        int64_t axes[DF_MAX_RANK];
        int n = 0, lead = sg.rank - sx.rank;
        if (lead < 0) return df_reshape(g, grad, sx.rank, sx.dims);
        for (int d = 0; d < sg.rank; d++)
            if (d < lead || (sx.dims[d - lead] == 1 && sg.dims[d] != 1)) axes[n++] = d;
        df_output r = n ? df__reduce_op(g, "Sum", grad, df__g_i32s(g, axes, n), 0) : grad;
        return df_reshape(g, r, sx.rank, sx.dims);
    }
    df_output shx = df_shape(g, x), shg = df_shape(g, grad);
    df_op_builder *b = df_op_new(g, "BroadcastGradientArgs", NULL);
    df_op_add_input(b, shx);
    df_op_add_input(b, shg);
    df_node *bga = df_op_finish(b);
    if (!bga) return df__out(NULL, 0);
    df_output r = df__reduce_op(g, "Sum", grad, df__out(bga, 0), 0);
    b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, r);
    df_op_add_input(b, shx);
    return df__out(df_op_finish(b), 0);
}
static df_output df__zeros_like(df_graph *g, df_output x) { return df__op1(g, "ZerosLike", x); }
/* A scalar constant of dtype t (integers take v's integer part). */
static df_output df__scalar_of(df_graph *g, df_dtype t, double v) {
    df_tensor *k = df_tensor_new(t, 0, NULL, NULL);
    if (!k) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return df__out(NULL, 0); }
    if (df__is_integer_type(t)) df__set_from_i64(t, k->data, 0, (int64_t)v);
    else df__set_from_f64(t, k->data, 0, v);
    df_output o = df_const(g, k);
    df_tensor_release(k);
    return o;
}
static df_output df__scalar_like(df_graph *g, df_output x, double v) { return df__scalar_of(g, df_output_dtype(x), v); }

static void df__g_identity(df__gfn *c) { for (int i = 0; i < c->n->n_inputs && i < c->n->n_outputs; i++) c->dx[i] = c->dy[i]; }
static void df__g_first(df__gfn *c) { c->dx[0] = c->dy[0]; }
static void df__g_add_n(df__gfn *c) { for (int i = 0; i < c->n->n_inputs; i++) c->dx[i] = c->dy[0]; }
static void df__g_add(df__gfn *c) {
    c->dx[0] = df__sum_to(c->g, c->dy[0], DF__X(c, 0));
    c->dx[1] = df__sum_to(c->g, c->dy[0], DF__X(c, 1));
}
static void df__g_sub(df__gfn *c) {
    c->dx[0] = df__sum_to(c->g, c->dy[0], DF__X(c, 0));
    c->dx[1] = df__sum_to(c->g, df_neg(c->g, c->dy[0]), DF__X(c, 1));
}
static void df__g_mul(df__gfn *c) {
    df_graph *g = c->g;
    c->dx[0] = df__sum_to(g, df_mul(g, c->dy[0], DF__X(c, 1)), DF__X(c, 0));
    c->dx[1] = df__sum_to(g, df_mul(g, DF__X(c, 0), c->dy[0]), DF__X(c, 1));
}
static void df__g_div(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1), d = c->dy[0];
    if (!df__is_float(df_output_dtype(x))) return;
    c->dx[0] = df__sum_to(g, df_div(g, d, y), x);
    c->dx[1] = df__sum_to(g, df_mul(g, d, df_div(g, df_div(g, df_neg(g, x), y), y)), y);
}
static void df__g_maxmin(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1), d = c->dy[0];
    df_output mask = strcmp(c->n->op->name, "Maximum") ? df_less_equal(g, x, y) : df_greater_equal(g, x, y);
    df_output z = df__zeros_like(g, d);
    c->dx[0] = df__sum_to(g, df_select(g, mask, d, z), x);
    c->dx[1] = df__sum_to(g, df_select(g, mask, z, d), y);
}
static void df__g_pow(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1), d = c->dy[0], z = df__Y(c, 0);
    if (!df__is_float(df_output_dtype(x))) return;
    df_output ym1 = df_sub(g, y, df__scalar_like(g, y, 1));
    c->dx[0] = df__sum_to(g, df_mul(g, d, df_mul(g, y, df__op2(g, "Pow", x, ym1))), x);
    df_output mask = df_greater(g, x, df__scalar_like(g, x, 0));
    df_output safe = df_select(g, mask, x, df__op1(g, "OnesLike", x));
    df_output logx = df_select(g, mask, df_log(g, safe), df__zeros_like(g, x));
    c->dx[1] = df__sum_to(g, df_mul(g, d, df_mul(g, z, logx)), y);
}
static void df__g_sqdiff(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1);
    df_output t = df_mul(g, df_mul(g, c->dy[0], df__scalar_like(g, c->dy[0], 2)), df_sub(g, x, y));
    c->dx[0] = df__sum_to(g, t, x);
    c->dx[1] = df__sum_to(g, df_neg(g, t), y);
}
static void df__g_floormod(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), y = DF__X(c, 1);
    if (!df__is_float(df_output_dtype(x))) return;
    c->dx[0] = df__sum_to(g, c->dy[0], x);
    c->dx[1] = df__sum_to(g, df_mul(g, c->dy[0], df_neg(g, df__op2(g, "FloorDiv", x, y))), y);
}
static void df__g_neg(df__gfn *c) { c->dx[0] = df_neg(c->g, c->dy[0]); }
static void df__g_square(df__gfn *c) {
    c->dx[0] = df_mul(c->g, c->dy[0], df_mul(c->g, DF__X(c, 0), df__scalar_like(c->g, DF__X(c, 0), 2)));
}
static void df__g_abs(df__gfn *c) { c->dx[0] = df_mul(c->g, c->dy[0], df__op1(c->g, "Sign", DF__X(c, 0))); }
static void df__g_zero(df__gfn *c) { c->dx[0] = df__zeros_like(c->g, DF__X(c, 0)); }
static void df__g_exp(df__gfn *c) { c->dx[0] = df_mul(c->g, c->dy[0], df__Y(c, 0)); }
static void df__g_log(df__gfn *c) { c->dx[0] = df_mul(c->g, c->dy[0], df__op1(c->g, "Reciprocal", DF__X(c, 0))); }
/* y-based unary gradients through their fused TF ops: (y, dy) or, for Relu, (dy, y). */
static void df__g_fused_y(df__gfn *c) {
    const char *op = c->n->op->name;
    const char *gop = !strcmp(op, "Tanh") ? "TanhGrad" : !strcmp(op, "Sigmoid") ? "SigmoidGrad"
                    : !strcmp(op, "Sqrt") ? "SqrtGrad" : !strcmp(op, "Rsqrt") ? "RsqrtGrad" : "ReciprocalGrad";
    if (!df__is_float(df_output_dtype(DF__X(c, 0)))) return;
    c->dx[0] = df__op2(c->g, gop, df__Y(c, 0), c->dy[0]);
}
static void df__g_relu(df__gfn *c) {
    if (!df__is_float(df_output_dtype(DF__X(c, 0)))) return;
    c->dx[0] = df__op2(c->g, "ReluGrad", c->dy[0], df__Y(c, 0));
}
/* Second order of the fused ops. */
static void df__g_relu_grad(df__gfn *c) {
    c->dx[0] = df__op2(c->g, "ReluGrad", c->dy[0], DF__X(c, 1));
    c->dx[1] = df__zeros_like(c->g, DF__X(c, 1));
}
static void df__g_unary_grad(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    df_output y = DF__X(c, 0), d = DF__X(c, 1), dz = c->dy[0];
    c->dx[1] = df__op2(g, op, y, dz);                       /* each is linear in dy */
    df_output k;
    if (!strcmp(op, "TanhGrad")) k = df_mul(g, df_mul(g, d, y), df__scalar_like(g, y, -2));
    else if (!strcmp(op, "SigmoidGrad")) k = df_mul(g, d, df_sub(g, df__scalar_like(g, y, 1), df_mul(g, y, df__scalar_like(g, y, 2))));
    else if (!strcmp(op, "SqrtGrad")) k = df_neg(g, df_div(g, df__Y(c, 0), y));
    else if (!strcmp(op, "RsqrtGrad")) k = df_mul(g, df_mul(g, d, df_square(g, y)), df__scalar_like(g, y, -1.5));
    else k = df_mul(g, df_mul(g, d, y), df__scalar_like(g, y, -2));      /* ReciprocalGrad */
    c->dx[0] = df_mul(g, dz, k);
}
static void df__g_select(df__gfn *c) {
    df_graph *g = c->g;
    df_output cnd = DF__X(c, 0), d = c->dy[0], z = df__zeros_like(g, d);
    const char *op = c->n->op->name;
    df_output a, b;
    df_output ia[3] = {cnd, d, z}, ib[3] = {cnd, z, d};
    df_op_builder *bb = df_op_new(g, op, NULL);
    for (int i = 0; i < 3; i++) df_op_add_input(bb, ia[i]);
    a = df__out(df_op_finish(bb), 0);
    bb = df_op_new(g, op, NULL);
    for (int i = 0; i < 3; i++) df_op_add_input(bb, ib[i]);
    b = df__out(df_op_finish(bb), 0);
    c->dx[1] = df__sum_to(g, a, DF__X(c, 1));
    c->dx[2] = df__sum_to(g, b, DF__X(c, 2));
}
static void df__g_cast(df__gfn *c) {
    df_dtype src = df_output_dtype(DF__X(c, 0)), dst = df_output_dtype(df__Y(c, 0));
    if (df__is_float(src) && df__is_float(dst)) c->dx[0] = df_cast(c->g, c->dy[0], src);
}
static df_output df__mm(df_graph *g, const char *op, df_output a, df_output b, int ta, int tb) {
    df_op_builder *k = df_op_new(g, op, NULL);
    df_op_add_input(k, a);
    df_op_add_input(k, b);
    int bmm = !strcmp(op, "BatchMatMulV2");
    df_op_set_attr_bool(k, bmm ? "adj_x" : "transpose_a", ta);
    df_op_set_attr_bool(k, bmm ? "adj_y" : "transpose_b", tb);
    return df__out(df_op_finish(k), 0);
}
static void df__g_matmul(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    int bmm = !strcmp(op, "BatchMatMulV2");
    int ta = df__attr_b(c->n, bmm ? "adj_x" : "transpose_a", 0), tb = df__attr_b(c->n, bmm ? "adj_y" : "transpose_b", 0);
    df_output a = DF__X(c, 0), b = DF__X(c, 1), d = c->dy[0], da, db;
    if (!df__is_float(df_output_dtype(a))) return;
    if (!ta && !tb) { da = df__mm(g, op, d, b, 0, 1); db = df__mm(g, op, a, d, 1, 0); }
    else if (ta && !tb) { da = df__mm(g, op, b, d, 0, 1); db = df__mm(g, op, a, d, 0, 0); }
    else if (!ta && tb) { da = df__mm(g, op, d, b, 0, 0); db = df__mm(g, op, d, a, 1, 0); }
    else { da = df__mm(g, op, b, d, 1, 1); db = df__mm(g, op, d, a, 1, 1); }
    c->dx[0] = bmm ? df__sum_to(g, da, a) : da;
    c->dx[1] = bmm ? df__sum_to(g, db, b) : db;
}
static void df__g_bias_add(df__gfn *c) {
    df_graph *g = c->g;
    c->dx[0] = c->dy[0];
    const char *fmt = df__attr_s(c->n, "data_format");
    int rank = DF__X(c, 0).node->out_shapes[DF__X(c, 0).index].rank;
    if (fmt && !strcmp(fmt, "NCHW")) {
        if (rank < 0) { df__graph_error(g, DF_UNIMPLEMENTED, "BiasAdd (NCHW) gradient needs a known rank {{node %s}}", c->n->name); return; }
        int64_t axes[DF_MAX_RANK];
        int n = 0;
        for (int d = 0; d < rank; d++) if (d != 1) axes[n++] = d;
        c->dx[1] = df__reduce_op(g, "Sum", c->dy[0], df__g_i32s(g, axes, n), 0);
    } else {
        c->dx[1] = df__sum_to(g, c->dy[0], DF__X(c, 1));
    }
}
/* The constant reduction axes of a reduction node, normalised and sorted; -1 if unknown. */
static int df__red_axes(df__gfn *c, int rank, int64_t *axes) {
    const df_tensor *t = df__const_value(DF__X(c, 1));
    if (!t || !df__is_int_tensor(t) || rank < 0) return -1;
    int n = 0;
    unsigned char seen[DF_MAX_RANK] = {0};
    for (int64_t i = 0; i < t->n; i++) {
        int64_t a = df__int_at(t, i);
        if (a < 0) a += rank;
        if (a < 0 || a >= rank) return -1;
        seen[a] = 1;
    }
    for (int d = 0; d < rank; d++) if (seen[d]) axes[n++] = d;
    return n;
}
/* grad of a reduction brought back to the kept-dims shape (rank of x, reduced axes 1). */
static df_output df__keep(df__gfn *c, df_output v, int rank, const int64_t *axes, int n) {
    df_graph *g = c->g;
    if (df__attr_b(c->n, "keep_dims", 0)) return v;
    for (int i = 0; i < n; i++) v = df__op2(g, "ExpandDims", v, df_scalar_i32(g, (int32_t)axes[i]));
    DF__UNUSED(rank);
    return v;
}
static void df__g_reduce(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    df_output x = DF__X(c, 0), d = c->dy[0];
    int rank = x.node->out_shapes[x.index].rank;
    int64_t axes[DF_MAX_RANK];
    int n = df__red_axes(c, rank, axes);
    if (n < 0) { df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of %s needs constant reduction axes and a known rank {{node %s}}", op, c->n->name); return; }
    if (!df__is_float(df_output_dtype(x))) return;
    df_output dk = df__keep(c, d, rank, axes, n);
    df_output shx = df__shape_of_out(g, x);
    if (!strcmp(op, "Sum") || !strcmp(op, "Mean")) {
        df_output r = df__op2(g, "BroadcastTo", dk, shx);
        if (!strcmp(op, "Mean")) {
            df_output cnt = df_div(g, df_cast(g, df__op1(g, "Size", x), df_output_dtype(x)),
                                   df_cast(g, df__op1(g, "Size", df__Y(c, 0)), df_output_dtype(x)));
            r = df_div(g, r, cnt);
        }
        c->dx[0] = r;
    } else if (!strcmp(op, "Max") || !strcmp(op, "Min")) {
        df_output yk = df__keep(c, df__Y(c, 0), rank, axes, n);
        df_output ind = df_cast(g, df_equal(g, x, yk), df_output_dtype(x));
        df_output num = df__reduce_op(g, "Sum", ind, df__g_i32s(g, axes, n), 1);
        c->dx[0] = df_mul(g, df_div(g, ind, num), dk);
    } else {                     /* Prod: products of everything else, by exclusive cumprods */
        int64_t perm[DF_MAX_RANK], inv[DF_MAX_RANK], other[DF_MAX_RANK];
        int k = 0, no = 0;
        unsigned char red[DF_MAX_RANK] = {0};
        for (int i = 0; i < n; i++) { red[axes[i]] = 1; perm[k++] = axes[i]; }
        for (int i = 0; i < rank; i++) if (!red[i]) { perm[k++] = i; other[no++] = i; }
        for (int i = 0; i < rank; i++) inv[perm[i]] = i;
        df_output xt = df__op2(g, "Transpose", x, df__g_i32s(g, perm, rank));
        df_output sh = df_shape(g, x), zero = df_scalar_i32(g, 0);
        df_output gi[3] = {sh, df__g_i32s(g, axes, n), zero}, go[3] = {sh, df__g_i32s(g, other, no), zero};
        df_output rsz = df__reduce_op(g, "Prod", df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0), zero, 0);
        df_output osz = df__reduce_op(g, "Prod", df__op_attr_int(g, "GatherV2", go, 3, "batch_dims", 0), zero, 0);
        df_output both[2] = {rsz, osz};
        df_output two = df__op_attr_int(g, "Pack", both, 2, "axis", 0);
        df_op_builder *b = df_op_new(g, "Reshape", NULL);
        df_op_add_input(b, xt);
        df_op_add_input(b, two);
        df_output flat = df__out(df_op_finish(b), 0);
        df_output cp[2];
        for (int rev = 0; rev < 2; rev++) {
            b = df_op_new(g, "Cumprod", NULL);
            df_op_add_input(b, flat);
            df_op_add_input(b, zero);
            df_op_set_attr_bool(b, "exclusive", 1);
            df_op_set_attr_bool(b, "reverse", rev);
            cp[rev] = df__out(df_op_finish(b), 0);
        }
        df_output y = df_mul(g, cp[0], cp[1]);
        b = df_op_new(g, "Reshape", NULL);
        df_op_add_input(b, y);
        df_op_add_input(b, df_shape(g, xt));
        y = df__out(df_op_finish(b), 0);
        y = df__op2(g, "Transpose", y, df__g_i32s(g, inv, rank));
        c->dx[0] = df_mul(g, y, df__op2(g, "BroadcastTo", dk, shx));
    }
}
static void df__g_reshape(df__gfn *c) {
    df_graph *g = c->g;
    df_op_builder *b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, df__shape_of_out(g, DF__X(c, 0)));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_transpose(df__gfn *c) {
    df_graph *g = c->g;
    const df_tensor *p = df__const_value(DF__X(c, 1));
    df_output inv;
    if (p && df__is_int_tensor(p) && p->n <= DF_MAX_RANK) {
        int64_t v[DF_MAX_RANK];
        for (int64_t i = 0; i < p->n; i++) {
            int64_t k = df__int_at(p, i);
            if (k < 0 || k >= p->n) { df__graph_error(g, DF_INVALID_ARGUMENT, "Bad permutation {{node %s}}", c->n->name); return; }
            v[k] = i;
        }
        inv = df__g_i32s(g, v, (int)p->n);
    } else {
        inv = df__op1(g, "InvertPermutation", DF__X(c, 1));
    }
    c->dx[0] = df__op2(g, "Transpose", c->dy[0], inv);
}
static void df__g_fill(df__gfn *c) {
    df_graph *g = c->g;
    int64_t m1 = -1;
    df_output flat = df_reshape(g, c->dy[0], 1, &m1);
    c->dx[1] = df__reduce_op(g, "Sum", flat, df_scalar_i32(g, 0), 0);
}
static void df__g_concat(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_inputs - 1;
    df_output axis = df_cast(g, DF__X(c, n), DF_INT32);
    df_output *sh = (df_output *)DF_MALLOC((size_t)(n + 1) * sizeof(df_output));
    if (!sh) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int i = 0; i < n; i++) sh[i] = df_shape(g, DF__X(c, i));
    df_op_builder *b = df_op_new(g, "ConcatOffset", NULL);
    df_op_add_input(b, axis);
    df_op_add_input_list(b, sh, n);
    df_node *off = df_op_finish(b);
    for (int i = 0; off && i < n; i++) {
        b = df_op_new(g, "Slice", NULL);
        df_op_add_input(b, c->dy[0]);
        df_op_add_input(b, df__out(off, i));
        df_op_add_input(b, sh[i]);
        c->dx[i] = df__out(df_op_finish(b), 0);
    }
    DF_FREE(sh);
}
static void df__g_pack(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_inputs;
    df_op_builder *b = df_op_new(g, "Unpack", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_set_attr_int(b, "num", n);
    df_op_set_attr_int(b, "axis", df__attr_i(c->n, "axis", 0));
    df_node *u = df_op_finish(b);
    for (int i = 0; u && i < n; i++) c->dx[i] = df__out(u, i);
}
static void df__g_unpack(df__gfn *c) {
    df_graph *g = c->g;
    int n = c->n->n_outputs;
    df_output *v = (df_output *)DF_MALLOC((size_t)DF__MAX(n, 1) * sizeof(df_output));
    if (!v) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int i = 0; i < n; i++) v[i] = c->dy[i].node ? c->dy[i] : df__zeros_like(g, df__Y(c, i));
    df_op_builder *b = df_op_new(g, "Pack", NULL);
    df_op_add_input_list(b, v, n);
    df_op_set_attr_int(b, "axis", df__attr_i(c->n, "axis", 0));
    c->dx[0] = df__out(df_op_finish(b), 0);
    DF_FREE(v);
}
static void df__g_slice(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), begin = df_cast(g, DF__X(c, 1), DF_INT32);
    df_output after = df_sub(g, df_sub(g, df__shape_of_out(g, x), begin), df_shape(g, c->dy[0]));
    df_output pp[2] = {begin, after};
    df_output pads = df__op_attr_int(g, "Pack", pp, 2, "axis", 1);
    c->dx[0] = df__op2(g, "Pad", c->dy[0], pads);
}
static void df__g_strided_slice(df__gfn *c) {
    df_graph *g = c->g;
    static const char *masks[] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
    df_output x = DF__X(c, 0);
    df_dtype it = df_output_dtype(DF__X(c, 1));
    df_op_builder *b = df_op_new(g, "Shape", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "out_type", it);
    df_output sh = df__out(df_op_finish(b), 0);
    b = df_op_new(g, "StridedSliceGrad", NULL);
    df_op_add_input(b, sh);
    for (int i = 1; i < 4; i++) df_op_add_input(b, DF__X(c, i));
    df_op_add_input(b, c->dy[0]);
    for (int i = 0; i < 5; i++) df_op_set_attr_int(b, masks[i], df__attr_i(c->n, masks[i], 0));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_strided_slice_grad(df__gfn *c) {
    df_graph *g = c->g;
    static const char *masks[] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
    df_op_builder *b = df_op_new(g, "StridedSlice", NULL);
    df_op_add_input(b, c->dy[0]);
    for (int i = 1; i < 4; i++) df_op_add_input(b, DF__X(c, i));
    for (int i = 0; i < 5; i++) df_op_set_attr_int(b, masks[i], df__attr_i(c->n, masks[i], 0));
    c->dx[4] = df__out(df_op_finish(b), 0);
}
static void df__g_pad(df__gfn *c) {
    df_graph *g = c->g;
    df_output p = df_cast(g, DF__X(c, 1), DF_INT32);
    int64_t z2[2] = {0, 0}, s2[2] = {-1, 1}, m1 = -1;
    df_op_builder *b = df_op_new(g, "Slice", NULL);
    df_op_add_input(b, p);
    df_op_add_input(b, df__g_i32s(g, z2, 2));
    df_op_add_input(b, df__g_i32s(g, s2, 2));
    df_output begin = df_reshape(g, df__out(df_op_finish(b), 0), 1, &m1);
    b = df_op_new(g, "Slice", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, begin);
    df_op_add_input(b, df__shape_of_out(g, DF__X(c, 0)));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_tile(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), m = df_cast(g, DF__X(c, 1), DF_INT32);
    df_output pk[2] = {m, df_shape(g, x)};
    df_output st = df__op_attr_int(g, "Pack", pk, 2, "axis", 1);       /* [rank, 2]: (m_i, d_i) */
    int64_t m1 = -1;
    df_output split = df_reshape(g, st, 1, &m1);
    df_op_builder *b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, c->dy[0]);
    df_op_add_input(b, split);
    df_output r = df__out(df_op_finish(b), 0);
    df_output rin[3] = {df_scalar_i32(g, 0), df__op1(g, "Size", split), df_scalar_i32(g, 2)};
    b = df_op_new(g, "Range", NULL);
    for (int i = 0; i < 3; i++) df_op_add_input(b, rin[i]);
    df_output axes = df__out(df_op_finish(b), 0);
    df_output s = df__reduce_op(g, "Sum", r, axes, 0);
    b = df_op_new(g, "Reshape", NULL);
    df_op_add_input(b, s);
    df_op_add_input(b, df__shape_of_out(g, x));
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_gather(df__gfn *c) {
    df_graph *g = c->g;
    const df_tensor *ax = df__const_value(DF__X(c, 2));
    df_output p = DF__X(c, 0), ix = DF__X(c, 1);
    int pr = p.node->out_shapes[p.index].rank, q = ix.node->out_shapes[ix.index].rank;
    int64_t a = ax && df__is_int_tensor(ax) && ax->n == 1 ? df__int_at(ax, 0) : INT64_MIN;
    if (a != INT64_MIN && a < 0 && pr >= 0) a += pr;
    if (a == INT64_MIN || df__attr_i(c->n, "batch_dims", 0) != 0 || (a != 0 && (pr < 0 || q < 0)) || a < 0) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of GatherV2 needs a constant axis (and known ranks for an axis "
                        "other than 0) and batch_dims 0 {{node %s}}", c->n->name);
        return;
    }
    df_output gi[3] = {df_shape(g, p), df_scalar_i32(g, (int32_t)a), df_scalar_i32(g, 0)};
    df_output num = df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0);
    df_output d = c->dy[0];
    int64_t perm[DF_MAX_RANK], back[DF_MAX_RANK];
    if (a != 0) {                /* bring the index dims to the front, sum, and put the axis back */
        int k = 0;
        for (int i = 0; i < q; i++) perm[k++] = a + i;
        for (int i = 0; i < a; i++) perm[k++] = i;
        for (int i = (int)a + q; i < pr - 1 + q; i++) perm[k++] = i;
        d = df__op2(g, "Transpose", d, df__g_i32s(g, perm, k));
        for (int i = 0; i < pr; i++) back[i] = i < a ? i + 1 : i == a ? 0 : i;
    }
    df_op_builder *b = df_op_new(g, "UnsortedSegmentSum", NULL);
    df_op_add_input(b, d);
    df_op_add_input(b, ix);
    df_op_add_input(b, num);
    df_output r = df__out(df_op_finish(b), 0);
    c->dx[0] = a != 0 ? df__op2(g, "Transpose", r, df__g_i32s(g, back, pr)) : r;
}
static void df__g_segment_sum(df__gfn *c) {
    /* ids outside [0, num_segments) were dropped: their rows get zero gradient */
    df_graph *g = c->g;
    df_output ids = DF__X(c, 1), num = df_cast(g, DF__X(c, 2), df_output_dtype(ids));
    int ri = ids.node->out_shapes[ids.index].rank, rd = DF__X(c, 0).node->out_shapes[DF__X(c, 0).index].rank;
    if (ri < 0 || rd < 0) {
        df__graph_error(g, DF_UNIMPLEMENTED, "Gradient of UnsortedSegmentSum needs known ranks {{node %s}}", c->n->name);
        return;
    }
    df_output zero = df__scalar_like(g, ids, 0);
    df_output valid = df_logical_and(g, df_greater_equal(g, ids, zero), df_less(g, ids, num));
    df_output safe = df_select(g, valid, ids, df__zeros_like(g, ids));
    df_output gi[3] = {c->dy[0], safe, df_scalar_i32(g, 0)};
    df_output rows = df__op_attr_int(g, "GatherV2", gi, 3, "batch_dims", 0);
    for (int k = ri; k < rd; k++) valid = df__op2(g, "ExpandDims", valid, df_scalar_i32(g, -1));
    c->dx[0] = df_select(g, valid, rows, df__zeros_like(g, rows));
}
static void df__g_broadcast_to(df__gfn *c) { c->dx[0] = df__sum_to(c->g, c->dy[0], DF__X(c, 0)); }
static df_output df__last_axis_sum(df_graph *g, df_output v) { return df__reduce_op(g, "Sum", v, df_scalar_i32(g, -1), 1); }
static void df__g_softmax(df__gfn *c) {
    df_graph *g = c->g;
    df_output y = df__Y(c, 0), d = c->dy[0];
    if (!strcmp(c->n->op->name, "Softmax"))
        c->dx[0] = df_mul(g, df_sub(g, d, df__last_axis_sum(g, df_mul(g, d, y))), y);
    else
        c->dx[0] = df_sub(g, d, df_mul(g, df__last_axis_sum(g, d), df_exp(g, y)));
}
static void df__g_xent(df__gfn *c) {
    df_graph *g = c->g;
    int sparse = c->n->op->code == 1;
    df_output f = DF__X(c, 0), gl = c->dy[0], gb = c->dy[1], df = {NULL, 0}, dl = {NULL, 0};
    if (gl.node) {
        df_output e = df__op2(g, "ExpandDims", gl, df_scalar_i32(g, -1));
        df = df_mul(g, e, df__Y(c, 1));
        if (!sparse) dl = df_mul(g, e, df_neg(g, df__op1(g, "LogSoftmax", f)));
    }
    if (gb.node) {
        df_output sm = df_softmax(g, f);
        df_output t = df_mul(g, df_sub(g, gb, df__last_axis_sum(g, df_mul(g, gb, sm))), sm);
        df = df.node ? df_add(g, df, t) : t;
        if (!sparse) { df_output ng = df_neg(g, gb); dl = dl.node ? df_add(g, dl, ng) : ng; }
    }
    c->dx[0] = df;
    if (!sparse) c->dx[1] = dl;
}
/* Switch: whichever output was live carries the gradient; the other side gets zeros that are
   live exactly when that side was, and a Merge passes on the one live value. */
static void df__g_switch(df__gfn *c) {
    df_graph *g = c->g;
    df_output data = DF__X(c, 0), pred = DF__X(c, 1);
    if (!c->dy[0].node && !c->dy[1].node) return;
    df_output side[2];
    for (int k = 0; k < 2; k++) {
        if (c->dy[k].node) { side[k] = c->dy[k]; continue; }
        df__shape s;
        df_output src = data;
        if (df__static_full(data, &s)) {
            df_output fin[2] = {df__g_i32s(g, s.dims, s.rank), df__scalar_like(g, data, 0)};
            df_op_builder *b = df_op_new(g, "Fill", NULL);
            df_op_add_input(b, fin[0]);
            df_op_add_input(b, fin[1]);
            src = df__out(df_op_finish(b), 0);
        }
        df_op_builder *b = df_op_new(g, "Switch", NULL);
        df_op_add_input(b, src);
        df_op_add_input(b, pred);
        df_output gate = df__out(df_op_finish(b), k);
        side[k] = src.node == data.node && src.index == data.index ? df__zeros_like(g, gate) : df_identity(g, gate);
    }
    df_op_builder *b = df_op_new(g, "Merge", NULL);
    df_op_add_input_list(b, side, 2);
    c->dx[0] = df__out(df_op_finish(b), 0);
}
static void df__g_merge(df__gfn *c) {
    df_graph *g = c->g;
    df_output d = c->dy[0];
    if (!d.node) return;
    if (c->n->cond && c->n->n_inputs == 2) {               /* a cond's Merge: Switch on its predicate */
        df_op_builder *b = df_op_new(g, "Switch", NULL);
        df_op_add_input(b, d);
        df_op_add_input(b, c->n->cond->pred);
        df_node *sw = df_op_finish(b);
        c->dx[0] = df__out(sw, 0);
        c->dx[1] = df__out(sw, 1);
        return;
    }
    for (int i = 0; i < c->n->n_inputs; i++) {
        df_op_builder *b = df_op_new(g, "Switch", NULL);
        df_op_add_input(b, d);
        df_op_add_input(b, df_equal(g, df__Y(c, 1), df_scalar_i32(g, i)));
        c->dx[i] = df__out(df_op_finish(b), 1);
    }
}

/* Conv2D: the two backprop ops; pools: their grad ops. The window attrs are copied over. */
static void df__copy_window_attrs(df_op_builder *b, const df_node *n) {
    static const char *const names[] = {"strides", "dilations", "ksize", "explicit_paddings"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const df__attr *a = df__node_attr(n, names[i]);
        if (a && a->kind == DF__A_INT_LIST) df_op_set_attr_int_list(b, names[i], a->u.ints.v, a->u.ints.n);
    }
    df_op_set_attr_string(b, "padding", df__attr_s(n, "padding"));
    df_op_set_attr_string(b, "data_format", *df__attr_s(n, "data_format") ? df__attr_s(n, "data_format") : "NHWC");
}
static df_output df__window_op(df_graph *g, const char *op, const df_node *like, const df_output *ins, int n) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    df__copy_window_attrs(b, like);
    return df__out(df_op_finish(b), 0);
}
static void df__g_conv2d(df__gfn *c) {
    df_graph *g = c->g;
    df_output x = DF__X(c, 0), w = DF__X(c, 1);
    df_output bi[3] = {df__shape_of_out(g, x), w, c->dy[0]}, bf[3] = {x, df__shape_of_out(g, w), c->dy[0]};
    c->dx[0] = df__window_op(g, "Conv2DBackpropInput", c->n, bi, 3);
    c->dx[1] = df__window_op(g, "Conv2DBackpropFilter", c->n, bf, 3);
}
static void df__g_max_pool(df__gfn *c) {
    df_output in[3] = {DF__X(c, 0), df__Y(c, 0), c->dy[0]};
    c->dx[0] = df__window_op(c->g, "MaxPoolGrad", c->n, in, 3);
}
static void df__g_avg_pool(df__gfn *c) {
    df_output in[2] = {df__shape_of_out(c->g, DF__X(c, 0)), c->dy[0]};
    c->dx[0] = df__window_op(c->g, "AvgPoolGrad", c->n, in, 2);
}

static const struct { const char *op; df__grad_fn fn; } df__grad_table[] = {
    {"Identity", df__g_identity}, {"IdentityN", df__g_identity}, {"PlaceholderWithDefault", df__g_first},
    {"AddN", df__g_add_n}, {"AddV2", df__g_add}, {"Add", df__g_add}, {"Sub", df__g_sub}, {"Mul", df__g_mul},
    {"RealDiv", df__g_div}, {"Div", df__g_div}, {"Maximum", df__g_maxmin}, {"Minimum", df__g_maxmin},
    {"Pow", df__g_pow}, {"SquaredDifference", df__g_sqdiff}, {"FloorMod", df__g_floormod},
    {"Neg", df__g_neg}, {"Square", df__g_square}, {"Abs", df__g_abs}, {"Sign", df__g_zero},
    {"Relu", df__g_relu}, {"Sqrt", df__g_fused_y}, {"Rsqrt", df__g_fused_y}, {"Exp", df__g_exp},
    {"Log", df__g_log}, {"Tanh", df__g_fused_y}, {"Sigmoid", df__g_fused_y}, {"Reciprocal", df__g_fused_y},
    {"ReluGrad", df__g_relu_grad}, {"TanhGrad", df__g_unary_grad}, {"SigmoidGrad", df__g_unary_grad},
    {"SqrtGrad", df__g_unary_grad}, {"RsqrtGrad", df__g_unary_grad}, {"ReciprocalGrad", df__g_unary_grad},
    {"Select", df__g_select}, {"SelectV2", df__g_select}, {"Cast", df__g_cast},
    {"MatMul", df__g_matmul}, {"BatchMatMulV2", df__g_matmul}, {"BiasAdd", df__g_bias_add},
    {"Conv2D", df__g_conv2d}, {"MaxPool", df__g_max_pool}, {"AvgPool", df__g_avg_pool},
    {"Sum", df__g_reduce}, {"Mean", df__g_reduce}, {"Max", df__g_reduce}, {"Min", df__g_reduce}, {"Prod", df__g_reduce},
    {"Reshape", df__g_reshape}, {"ExpandDims", df__g_reshape}, {"Squeeze", df__g_reshape},
    {"Transpose", df__g_transpose}, {"Fill", df__g_fill}, {"ConcatV2", df__g_concat}, {"Pack", df__g_pack},
    {"Unpack", df__g_unpack}, {"Slice", df__g_slice}, {"StridedSlice", df__g_strided_slice},
    {"StridedSliceGrad", df__g_strided_slice_grad}, {"Pad", df__g_pad}, {"Tile", df__g_tile},
    {"GatherV2", df__g_gather}, {"UnsortedSegmentSum", df__g_segment_sum}, {"BroadcastTo", df__g_broadcast_to},
    {"Softmax", df__g_softmax}, {"LogSoftmax", df__g_softmax}, {"SoftmaxCrossEntropyWithLogits", df__g_xent},
    {"SparseSoftmaxCrossEntropyWithLogits", df__g_xent}, {"Switch", df__g_switch}, {"Merge", df__g_merge},
};
static df__grad_fn df__grad_fn_for(const df__opdef *op) {
    if (op->grad) return (df__grad_fn)op->grad;
    for (size_t i = 0; i < sizeof df__grad_table / sizeof *df__grad_table; i++)
        if (!strcmp(df__grad_table[i].op, op->name)) return df__grad_table[i].fn;
    return NULL;
}

/* ---- the driver ---- */
typedef struct df__gacc { df_output *v; int n, cap; } df__gacc;
typedef struct df__greg {
    df_graph *g;
    df__ctx *R;                  /* the region: NULL (top level) or the loop whose body this is */
    int n0;                      /* nodes made before the region began */
    int *obase;                  /* per node: index of its output 0 in acc */
    df__gacc *acc;
    unsigned char *fwd, *bwd;
    int *unit;                   /* per node: its unit (node id, or n0 + child loop index), -1 outside */
    df__ctx **loops;
    int n_loops, cap_loops;
    int *cstart, *cons;          /* consumers, CSR over data edges */
} df__greg;

static int df__greg_add(df__greg *r, df_output at, df_output v) {
    if (!at.node || !v.node || at.node->id >= r->n0) return 1;
    df__gacc *a = &r->acc[r->obase[at.node->id] + at.index];
    if (!df__grow(&a->v, &a->cap, a->n + 1, sizeof(df_output))) {
        df__graph_error(r->g, DF_RESOURCE_EXHAUSTED, "Out of memory accumulating gradients");
        return 0;
    }
    a->v[a->n++] = v;
    return 1;
}
static df_output df__greg_sum(df__greg *r, df_output at) {
    df_output none = {NULL, 0};
    if (!at.node || at.node->id >= r->n0) return none;
    df__gacc *a = &r->acc[r->obase[at.node->id] + at.index];
    if (a->n == 0) return none;
    if (a->n == 1) return a->v[0];
    df_output s = df_add_n(r->g, a->v, a->n);
    a->n = 1;
    a->v[0] = s;
    return s;
}
static int df__greg_between(const df__greg *r, const df_node *n) { return n->id < r->n0 && r->fwd[n->id] && r->bwd[n->id]; }

static int df__greg_unit(df__greg *r, df_node *n) {
    df__ctx *L = df__node_loop(n);
    if (L == r->R) return n->cf_part ? -1 : n->id;
    df__ctx *child = L;
    while (child && df__loop_of(child->outer) != r->R) child = df__loop_of(child->outer);
    if (!child) return -1;
    for (int i = 0; i < r->n_loops; i++) if (r->loops[i] == child) return r->n0 + i;
    if (!df__grow(&r->loops, &r->cap_loops, r->n_loops + 1, sizeof(df__ctx *))) return -2;
    r->loops[r->n_loops++] = child;
    return r->n0 + r->n_loops - 1;
}

static void df__greg_free(df__greg *r) {
    if (r->acc) for (int i = 0; i < r->obase[r->n0]; i++) DF_FREE(r->acc[i].v);
    DF_FREE(r->obase); DF_FREE(r->acc); DF_FREE(r->fwd); DF_FREE(r->bwd); DF_FREE(r->unit);
    DF_FREE(r->loops); DF_FREE(r->cstart); DF_FREE(r->cons);
}

static df_code df__grad_loop(df__greg *r, df__ctx *W);
static df_code df__grad_region(df_graph *g, df__ctx *R, int n_y, const df_output *ys, const df_output *gys,
                               int n_x, const df_output *xs, df_output *dxs);

/* Visits the pushes of the stack a pop reads (the edges second-order gradients follow). */
static df__gstack *df__node_gstack(df_graph *g, const df_node *n) {
    return n->gstack > 0 && n->gstack <= g->n_gstacks ? g->gstacks[n->gstack - 1] : NULL;
}
/* Pops (and accumulator reads) depend on the pushes (adds) of their stack: the edges that
   second-order gradients follow. */
static int df__is_pop(const df_node *n) {
    return n->gstack && (!strcmp(n->op->name, "LoopStackPop") || !strcmp(n->op->name, "StackPopV2") ||
                         !strcmp(n->op->name, "SumAccumulatorRead"));
}
static int df__is_push(const df_node *n) {
    return n->gstack && (!strcmp(n->op->name, "LoopStackPush") || !strcmp(n->op->name, "StackPushV2") ||
                         !strcmp(n->op->name, "SumAccumulatorAdd"));
}

/* The units feeding node d (of unit u) through data edges, and a pop through its stack's push:
   counts each between producer in another unit (delta +1), or releases it (delta -1), queueing
   a unit whose count reaches zero. */
static void df__greg_edges(const df__greg *r, const df_node *d, int u, int *pending, int delta, int *queue, int *qt) {
    for (int k = 0; k <= d->n_inputs; k++) {
        const df_node *s = NULL;
        if (k < d->n_inputs) s = d->inputs[k].node;
        else if (df__is_pop(d)) { df__gstack *gs = df__node_gstack(r->g, d); s = gs ? gs->push : NULL; }
        if (!s || s->id >= r->n0 || r->unit[s->id] < 0 || r->unit[s->id] == u || !df__greg_between(r, s)) continue;
        pending[r->unit[s->id]] += delta;
        if (delta < 0 && pending[r->unit[s->id]] == 0) queue[(*qt)++] = r->unit[s->id];
    }
}

static df_code df__grad_region(df_graph *g, df__ctx *R, int n_y, const df_output *ys, const df_output *gys,
                               int n_x, const df_output *xs, df_output *dxs) {
    df__greg r;
    memset(&r, 0, sizeof r);
    r.g = g; r.R = R; r.n0 = g->n_nodes;
    int n0 = r.n0;
    int *stack = NULL, *pending = NULL, *queue = NULL;
    r.obase = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
    r.fwd = (unsigned char *)DF_MALLOC((size_t)n0 + 1);
    r.bwd = (unsigned char *)DF_MALLOC((size_t)n0 + 1);
    r.unit = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
    r.cstart = (int *)DF_MALLOC((size_t)(n0 + 2) * sizeof(int));
    stack = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
    if (!r.obase || !r.fwd || !r.bwd || !r.unit || !r.cstart || !stack) goto oom;
    memset(r.fwd, 0, (size_t)n0 + 1);
    memset(r.bwd, 0, (size_t)n0 + 1);
    int total = 0, n_edges = 0;
    for (int i = 0; i < n0; i++) {
        r.obase[i] = total;
        total += g->nodes[i]->n_outputs;
        n_edges += g->nodes[i]->n_inputs;
        int u = df__greg_unit(&r, g->nodes[i]);
        if (u == -2) goto oom;
        r.unit[i] = u;
    }
    r.obase[n0] = total;
    r.acc = (df__gacc *)DF_MALLOC((size_t)(total + 1) * sizeof(df__gacc));
    r.cons = (int *)DF_MALLOC((size_t)(n_edges + 1) * sizeof(int));
    if (!r.acc || !r.cons) goto oom;
    memset(r.acc, 0, (size_t)(total + 1) * sizeof(df__gacc));
    memset(r.cstart, 0, (size_t)(n0 + 2) * sizeof(int));
    for (int i = 0; i < n0; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++) r.cstart[g->nodes[i]->inputs[k].node->id + 1]++;
    for (int i = 0; i < n0; i++) r.cstart[i + 1] += r.cstart[i];
    {
        int *fill = (int *)DF_MALLOC((size_t)(n0 + 1) * sizeof(int));
        if (!fill) goto oom;
        memcpy(fill, r.cstart, (size_t)(n0 + 1) * sizeof(int));
        for (int i = 0; i < n0; i++)
            for (int k = 0; k < g->nodes[i]->n_inputs; k++) r.cons[fill[g->nodes[i]->inputs[k].node->id]++] = i;
        DF_FREE(fill);
    }
    /* backward from ys, forward from xs; a pop leads back to its stack's push */
    int sp = 0;
    for (int i = 0; i < n_y; i++)
        if (ys[i].node->id < n0 && !r.bwd[ys[i].node->id]) { r.bwd[ys[i].node->id] = 1; stack[sp++] = ys[i].node->id; }
    while (sp) {
        df_node *n = g->nodes[stack[--sp]];
        if (r.unit[n->id] < 0) continue;       /* loop machinery: nothing behind it in this region */
        for (int k = 0; k < n->n_inputs; k++) {
            df_node *s = n->inputs[k].node;
            if (s->id < n0 && !r.bwd[s->id]) { r.bwd[s->id] = 1; if (r.unit[s->id] >= 0) stack[sp++] = s->id; }
        }
        df__gstack *gs = df__is_pop(n) ? df__node_gstack(g, n) : NULL;
        if (gs && gs->push && gs->push->id < n0 && !r.bwd[gs->push->id] && r.unit[gs->push->id] >= 0) {
            r.bwd[gs->push->id] = 1; stack[sp++] = gs->push->id;
        }
    }
    for (int i = 0; i < n_x; i++)
        if (xs[i].node->id < n0 && !r.fwd[xs[i].node->id]) { r.fwd[xs[i].node->id] = 1; stack[sp++] = xs[i].node->id; }
    while (sp) {
        df_node *n = g->nodes[stack[--sp]];
        for (int e = r.cstart[n->id]; e < r.cstart[n->id + 1]; e++) {
            int d = r.cons[e];
            if (!r.fwd[d] && r.unit[d] >= 0) { r.fwd[d] = 1; stack[sp++] = d; }
        }
        df__gstack *gs = df__is_push(n) ? df__node_gstack(g, n) : NULL;
        for (int k = 0; gs && k < gs->n_pops; k++) {
            int d = gs->pops[k]->id;
            if (d < n0 && !r.fwd[d] && r.unit[d] >= 0) { r.fwd[d] = 1; stack[sp++] = d; }
        }
    }
    /* pending counts per unit: edges from between nodes to between consumers in other units */
    int n_units = n0 + r.n_loops;
    pending = (int *)DF_MALLOC((size_t)(n_units + 1) * sizeof(int));
    queue = (int *)DF_MALLOC((size_t)(n_units + 1) * sizeof(int));
    unsigned char *ubetween = (unsigned char *)DF_MALLOC((size_t)n_units + 1), *done = NULL;
    if (!pending || !queue || !ubetween) { DF_FREE(ubetween); goto oom; }
    memset(pending, 0, (size_t)(n_units + 1) * sizeof(int));
    memset(ubetween, 0, (size_t)n_units + 1);
    for (int i = 0; i < n0; i++) {
        df_node *d = g->nodes[i];
        if (r.unit[i] < 0 || !df__greg_between(&r, d)) continue;
        ubetween[r.unit[i]] = 1;
        df__greg_edges(&r, d, r.unit[i], pending, 1, NULL, NULL);
    }
    /* seeds */
    for (int i = 0; i < n_y; i++) if (!df__greg_add(&r, ys[i], gys[i])) goto fail;
    int qh = 0, qt = 0;
    done = (unsigned char *)DF_MALLOC((size_t)n_units + 1);
    if (!done) { DF_FREE(ubetween); goto oom; }
    memset(done, 0, (size_t)n_units + 1);
    for (int u = 0; u < n_units; u++) if (ubetween[u] && pending[u] == 0) queue[qt++] = u;
    while (qh < qt && df__ok(g)) {
        int u = queue[qh++];
        if (done[u]) continue;
        done[u] = 1;
        if (u < n0) {
            df_node *n = g->nodes[u];
            df_output dy_small[4], dx_small[8];
            df_output *dy = n->n_outputs <= 4 ? dy_small : (df_output *)DF_MALLOC((size_t)n->n_outputs * sizeof(df_output));
            df_output *dx = n->n_inputs <= 8 ? dx_small : (df_output *)DF_MALLOC((size_t)n->n_inputs * sizeof(df_output));
            if (!dy || !dx) { if (dy != dy_small) DF_FREE(dy); if (dx != dx_small) DF_FREE(dx); DF_FREE(ubetween); DF_FREE(done); goto oom; }
            int any = 0;
            for (int i = 0; i < n->n_outputs; i++) { dy[i] = df__greg_sum(&r, df__out(n, i)); if (dy[i].node) any = 1; }
            for (int i = 0; i < n->n_inputs; i++) dx[i].node = NULL, dx[i].index = 0;
            if (any && !(n->op->flags & DF__OP_NO_GRADIENT)) {
                df__grad_fn fn = df__grad_fn_for(n->op);
                int needed = 0;
                for (int i = 0; i < n->n_inputs; i++)
                    if (df__greg_between(&r, n->inputs[i].node) && df__is_float(df_output_dtype(n->inputs[i]))) needed = 1;
                if (!fn && needed) {
                    df__graph_error(g, DF_UNIMPLEMENTED, "No gradient defined for operation '%s' (op type: %s) "
                                    "{{node %s}}", n->name, n->op->name, n->name);
                } else if (fn && needed) {
                    df__gfn c;
                    c.g = g; c.n = n; c.dy = dy; c.dx = dx;
                    df_graph_push_name_scope(g, "gradients");
                    fn(&c);
                    df_graph_pop_name_scope(g);
                    for (int i = 0; i < n->n_inputs && df__ok(g); i++)
                        if (dx[i].node && df__greg_between(&r, n->inputs[i].node)) df__greg_add(&r, n->inputs[i], dx[i]);
                }
            }
            if (dy != dy_small) DF_FREE(dy);
            if (dx != dx_small) DF_FREE(dx);
            df__greg_edges(&r, n, u, pending, -1, queue, &qt);
        } else {
            if (df__grad_loop(&r, r.loops[u - n0])) break;
            for (int i = 0; i < n0; i++)          /* release the units feeding this loop */
                if (r.unit[i] == u && df__greg_between(&r, g->nodes[i]))
                    df__greg_edges(&r, g->nodes[i], u, pending, -1, queue, &qt);
        }
    }
    DF_FREE(ubetween);
    DF_FREE(done);
    for (int i = 0; i < n_x && df__ok(g); i++) dxs[i] = df__greg_sum(&r, xs[i]);
    goto out;
oom:
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory computing gradients");
fail:
out:
    DF_FREE(stack); DF_FREE(pending); DF_FREE(queue);
    df__greg_free(&r);
    if (!df__ok(g)) for (int i = 0; i < n_x; i++) dxs[i].node = NULL, dxs[i].index = 0;
    return g->status.code;
}

/* ---- while-loop gradients ---- */
typedef struct df__gloop {
    df__ctx *W;
    int nv;                      /* float loop variables with a gradient variable */
    int *var;                    /* their indices in W */
    int ninv;
    df_node **inv;               /* loop-invariant Enters whose gradient is summed */
    int nseq_out;
    df_node **seq_out;           /* pushes in W whose pops got gradients (second order) */
    int nseq_in;
    df_node **seq_in;            /* pops in W (W is itself a gradient loop) */
    int base;                    /* index of the first gradient variable: 1 when a placeholder
                                    variable (or, checkpointing, the count) comes first */
    df_output zero, one;         /* checkpoints: int32 constants made outside the loop (entered once) */
    df__gstack **acc;            /* per invariant: the accumulator summing its gradient */
    int nacc_out;
    df_node **acc_out;           /* second order: accumulator adds in W whose reads got gradients */
    df_output *acc_gy;           /*   and those gradients */
} df__gloop;

/* The gradient loop runs while its iteration number is below W's count: no counting variable
   (LoopIterationLess reads the number the executor keeps). */
static df_output df__gloop_cond(df_graph *g, void *user, const df_output *vars) {
    df__gloop *L = (df__gloop *)user;
    df__ctx *G = g->ctx;
    df_node *ctl = vars[0].node;
    df_output n = df__ctx_capture(g, G, df__out(L->W->lcount, 0));
    if (!n.node) return n;
    return df__out(df__finish_in(g, G, df__begin(g, G, "LoopIterationLess", &n, 1, &ctl, 1, 1)), 0);
}

static void df__gloop_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    df__gloop *L = (df__gloop *)user;
    df__ctx *G = g->ctx, *W = L->W;
    int vb = L->base;
    if (vb) next[0] = vars[0];
    int ny = L->nv + L->nseq_out + L->nacc_out, nx = L->nv + L->ninv + L->nseq_in;
    df_output *buf = (df_output *)DF_MALLOC((size_t)(2 * ny + 2 * nx + 2) * sizeof(df_output));
    if (!buf) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    df_output *ys = buf, *gys = buf + ny, *xs = buf + 2 * ny, *dxs = buf + 2 * ny + nx;
    for (int k = 0; k < L->nv; k++) {
        ys[k] = W->nexts[L->var[k]]->inputs[0];
        gys[k] = vars[vb + k];
        xs[k].node = W->bodies[L->var[k]];     /* an Identity, or in gradient loops the Switch */
        xs[k].index = (W->bodies[L->var[k]]->op->flags & DF__OP_SWITCH) ? 1 : 0;
    }
    for (int k = 0; k < L->nseq_out; k++) {
        df_node *p = L->seq_out[k];
        df__gstack *s = df__node_gstack(g, p);
        ys[L->nv + k] = p->inputs[1];
        gys[L->nv + k] = df__gstack_pop(g, G, s->grad, s->push_ctx, W, df_output_dtype(p->inputs[1]),
                                        &p->inputs[1].node->out_shapes[p->inputs[1].index]);
    }
    for (int k = 0; k < L->nacc_out; k++) {     /* each add's value gets its reads' gradient */
        ys[L->nv + L->nseq_out + k] = L->acc_out[k]->inputs[1];
        gys[L->nv + L->nseq_out + k] = L->acc_gy[k];
    }
    for (int k = 0; k < L->ninv; k++) { xs[L->nv + k].node = L->inv[k]; xs[L->nv + k].index = 0; }
    for (int k = 0; k < L->nseq_in; k++) { xs[L->nv + L->ninv + k].node = L->seq_in[k]; xs[L->nv + L->ninv + k].index = 0; }
    if (df__ok(g)) df__grad_region(g, W, ny, ys, gys, nx, xs, dxs);
    if (!df__ok(g)) { DF_FREE(buf); return; }
    for (int k = 0; k < L->nv; k++) next[vb + k] = dxs[k].node ? dxs[k] : df__zeros_like(g, vars[vb + k]);
    /* loop invariants: this iteration's part of their gradient goes into an accumulator, which
       sums in iteration order */
    for (int k = 0; k < L->ninv && df__ok(g); k++) {
        df_output d = dxs[L->nv + k];
        if (!d.node) continue;
        df__gstack *A = L->acc[k];
        df_output h = df__ctx_capture(g, G, df__out(A->stack, 0)), ins[2] = {h, d};
        df_node *ctl = df__ctx_control_pivot(G);
        df_op_builder *b = df__begin(g, G, "SumAccumulatorAdd", ins, 2, &ctl, ctl ? 1 : 0, 1);
        df_node *add = df__finish_in(g, G, b);
        if (!add) break;
        add->gstack = A->stack->gstack;
        A->push = add; A->push_ctx = G; A->push_loop = G;
    }
    /* second order: the gradients of W's pops go on the stacks' gradient stacks */
    for (int k = 0; k < L->nseq_in && df__ok(g); k++) {
        df_output d = dxs[L->nv + L->ninv + k];
        if (!d.node) continue;
        df__gstack *s = df__node_gstack(g, L->seq_in[k]);
        if (!s->grad && !(s->grad = df__gstack_for(g, df_output_dtype(d), G))) break;
        if (!df__gstack_push(g, s->grad, d, G, G, W->swap_memory)) break;
    }
    DF_FREE(buf);
}


/* ---- checkpointed loop gradients: the forward loop keeps its variables every k-th iteration;
   the gradient loop, at the last iteration of each segment (going backwards), recomputes the
   segment from its checkpoint in a small loop that stacks each iteration's variables, and then
   recomputes each iteration's body from them and differentiates it in place. Stack memory:
   N/k checkpoints plus k segment entries. ---- */
typedef struct df__ckpt {
    df__gloop *L;
    df__gstack **ck, **seg;      /* per user variable: checkpoints and segment stacks */
    int nu;                      /* user variables (the maximum_iterations counter excluded) */
    df_output index;
} df__ckpt;

static void df__ck_push_then(df_graph *g, void *user, df_output *outs) {
    df__ckpt *K = (df__ckpt *)user;
    df__ctx *W = K->L->W;
    for (int u = 0; u < K->nu && df__ok(g); u++) {
        df_output v = df__ctx_capture(g, g->ctx, df__out(W->bodies[W->has_counter + u], 0));
        if (v.node) df__gstack_push_seq(g, K->ck[u], v, g->ctx, W, W->swap_memory);
    }
    outs[0] = df_scalar_i32(g, 0);
}
static df_output df__ck_gloop_cond(df_graph *g, void *user, const df_output *vars) {
    return df_greater(g, vars[0], ((df__ckpt *)user)->L->zero);
}
static void df__ck_zero(df_graph *g, void *user, df_output *outs) { DF__UNUSED(user); outs[0] = df_scalar_i32(g, 0); }

static df_output df__ck_seg_cond(df_graph *g, void *user, const df_output *v) {
    DF__UNUSED(user);
    return df_less_equal(g, v[0], v[1]);
}
static void df__ck_seg_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    df__ckpt *K = (df__ckpt *)user;
    df__ctx *W = K->L->W, *R = g->ctx;
    for (int u = 0; u < K->nu && df__ok(g); u++) df__gstack_push_seq(g, K->seg[u], v[2 + u], R, R, W->swap_memory);
    if (!df__ok(g)) return;
    W->body_fn(g, W->user, v + 2, next + 2);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
}
static void df__ck_recompute(df_graph *g, void *user, df_output *outs) {
    df__ckpt *K = (df__ckpt *)user;
    df__ctx *G = g->ctx->outer;      /* the gradient loop around this branch */
    int nu = K->nu;
    df_output *init = (df_output *)DF_MALLOC((size_t)(2 * (nu + 2)) * sizeof(df_output));
    if (!init) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    df_output *out = init + nu + 2;
    df_output kk = df_scalar_i32(g, (int32_t)K->L->W->checkpoint_every);
    init[0] = df_sub(g, K->index, df_floor_mod_i(g, K->index, kk));      /* the segment's checkpoint */
    init[1] = K->index;
    for (int u = 0; u < nu && df__ok(g); u++) {
        df_output h = df__ctx_capture(g, g->ctx, df__out(K->ck[u]->stack, 0));
        df_op_builder *b = df_op_new(g, "StackPopV2", NULL);
        df_op_add_input(b, h);
        df_op_set_attr_type(b, "elem_type", df_output_dtype(df__out(K->L->W->bodies[K->L->W->has_counter + u], 0)));
        df_node *pop = df_op_finish(b);
        if (!pop) break;
        pop->out_shapes[0] = K->L->W->bodies[K->L->W->has_counter + u]->out_shapes[0];
        if (!df__grow(&G->pops, &G->cap_pops, G->n_pops + 1, sizeof(df_node *))) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); break; }
        G->pops[G->n_pops++] = pop;
        init[2 + u] = df__out(pop, 0);
    }
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = K->L->W->parallel_iterations;
    o.name = "recompute";
    df__ctx *before = g->n_ctxs ? g->ctxs[g->n_ctxs - 1] : NULL;
    if (df__ok(g)) df_while_loop(g, nu + 2, init, df__ck_seg_cond, df__ck_seg_body, K, &o, out);
    /* the recompute loop's own counter ends after its last push */
    df__ctx *R = NULL;
    for (int i = g->n_ctxs - 1; i >= 0 && g->ctxs[i] != before; i--)
        if (g->ctxs[i]->kind == DF__CTX_WHILE && g->ctxs[i]->outer == g->ctx) R = g->ctxs[i];
    outs[0] = R && R->fc_exit ? df__out(R->fc_exit, 0) : out[0];
    DF_FREE(init);
}

static void df__gloop_body_ckpt(df_graph *g, void *user, const df_output *vars, df_output *next) {
    df__ckpt *K = (df__ckpt *)user;
    df__gloop *L = K->L;
    df__ctx *G = g->ctx, *W = L->W;
    int nu = K->nu, hc = W->has_counter;
    df_output index = df_sub(g, vars[0], L->one);
    if (!index.node) return;
    G->b_index = index.node;
    K->index = index;
    df_output n = df__ctx_capture(g, G, df__out(W->fc_exit, 0));
    df_output kk = df_scalar_i32(g, (int32_t)W->checkpoint_every);
    df_output last = df_logical_or(g, df_equal(g, df_floor_mod_i(g, index, kk), df_scalar_i32(g, (int32_t)W->checkpoint_every - 1)),
                                   df_equal(g, index, df_sub(g, n, df_scalar_i32(g, 1))));
    df_output done;
    if (df__ok(g)) df_cond(g, last, 1, df__ck_recompute, df__ck_zero, K, &done);
    if (!df__ok(g)) return;
    int ny = L->nv, nx = L->nv + L->ninv;
    df_output *buf = (df_output *)DF_MALLOC((size_t)(2 * nu + 2 * ny + 2 * nx + 2) * sizeof(df_output));
    if (!buf) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    df_output *v = buf, *nv = buf + nu, *ys = buf + 2 * nu, *gys = ys + ny, *xs = gys + ny, *dxs = xs + nx;
    for (int u = 0; u < nu && df__ok(g); u++) {
        df_output h = df__ctx_capture(g, G, df__out(K->seg[u]->stack, 0));
        df_node *ctl = done.node;
        df_op_builder *b = df__begin(g, G, "StackPopV2", &h, 1, &ctl, 1, 1);
        if (b) df_op_set_attr_type(b, "elem_type", df_output_dtype(df__out(W->bodies[hc + u], 0)));
        df_node *pop = df__finish_in(g, G, b);
        if (!pop) break;
        pop->out_shapes[0] = W->bodies[hc + u]->out_shapes[0];
        if (!df__grow(&G->pops, &G->cap_pops, G->n_pops + 1, sizeof(df_node *))) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); break; }
        G->pops[G->n_pops++] = pop;
        v[u] = df__out(pop, 0);
    }
    if (df__ok(g)) W->body_fn(g, W->user, v, nv);          /* this iteration, recomputed */
    for (int k = 0; k < L->nv && df__ok(g); k++) {
        int u = L->var[k] - hc;
        ys[k] = df__ctx_capture(g, G, nv[u]);
        gys[k] = vars[1 + k];
        xs[k] = v[u];
    }
    for (int k = 0; k < L->ninv && df__ok(g); k++) xs[L->nv + k] = df__ctx_capture(g, G, L->inv[k]->inputs[0]);
    if (df__ok(g)) df__grad_region(g, G, ny, ys, gys, nx, xs, dxs);
    if (df__ok(g)) {
        for (int k = 0; k < L->nv; k++) next[1 + k] = dxs[k].node ? dxs[k] : df__zeros_like(g, vars[1 + k]);
        for (int k = 0; k < L->ninv; k++) {
            df_output a = vars[1 + L->nv + k], d = dxs[L->nv + k];
            next[1 + L->nv + k] = d.node ? df_add(g, a, d) : a;
        }
        df_node *t = df__raw_op(g, G, "ControlTrigger", NULL, 0, 0);
        for (int i = 0; t && i < G->n_pops; i++) if (!df__add_control_edge(g, t, G->pops[i])) break;
        df_op_builder *b = df_op_new(g, "Identity", NULL);
        if (b) { b->raw = 1; df_op_add_input(b, index); if (t) df_op_add_control_input(b, t); }
        next[0] = df__out(df_op_finish(b), 0);
    }
    DF_FREE(buf);
}

/* Sets up the checkpoint pushes in W and the stacks; returns 0 on error. */
static int df__ckpt_prepare(df_graph *g, df__ckpt *K) {
    df__ctx *W = K->L->W;
    K->nu = W->n_vars - W->has_counter;
    K->ck = (df__gstack **)DF_MALLOC((size_t)(2 * K->nu + 1) * sizeof(df__gstack *));
    if (!K->ck) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); return 0; }
    K->seg = K->ck + K->nu;
    for (int u = 0; u < K->nu; u++) {
        df_dtype t = W->bodies[W->has_counter + u]->out_types[0];
        if (!(K->ck[u] = df__gstack_new(g, t)) || !(K->seg[u] = df__gstack_new(g, t))) return 0;
    }
    if (!df__loop_counter(g, W)) return 0;
    df__ctx *saved = g->ctx;
    g->ctx = W;
    df_output t = W->fc_add->inputs[0];          /* this iteration's index */
    df_output pred = df_equal(g, df_floor_mod_i(g, t, df_scalar_i32(g, (int32_t)W->checkpoint_every)), df_scalar_i32(g, 0));
    df_output dummy;
    if (df__ok(g)) df_cond(g, pred, 1, df__ck_push_then, df__ck_zero, K, &dummy);
    g->ctx = saved;
    return df__ok(g);
}

static df_code df__grad_loop(df__greg *r, df__ctx *W) {
    df_graph *g = r->g;
    df__gloop L;
    memset(&L, 0, sizeof L);
    L.W = W;
    int n = W->n_vars;
    L.var = (int *)DF_MALLOC((size_t)(n + 1) * sizeof(int));
    L.inv = (df_node **)DF_MALLOC((size_t)(W->n_captures + 1) * sizeof(df_node *));
    df_output *dy = (df_output *)DF_MALLOC((size_t)(n + 1) * sizeof(df_output));
    int any = 0;
    if (!L.var || !L.inv || !dy) goto oom;
    for (int i = 0; i < n; i++) {
        dy[i] = df__greg_sum(r, df__out(W->exits[i], 0));
        if (df__is_float(W->exits[i]->out_types[0])) L.var[L.nv++] = i;
        if (dy[i].node) any = 1;
    }
    for (int i = 0; i < W->n_captures; i++) {
        df_node *e = W->captures[i].value.node;
        if (!(e->op->flags & DF__OP_ENTER) || e->ctx != W || !df__is_float(e->out_types[0])) continue;
        df_node *src = e->inputs[0].node;
        int seen = 0;            /* one Enter may be recorded under two sources (a gradient loop's reads) */
        for (int k = 0; k < L.ninv; k++) if (L.inv[k] == e) seen = 1;
        if (!seen && src->id < r->n0 && df__greg_between(r, src)) L.inv[L.ninv++] = e;
    }
    /* second order: pushes in W whose pops received gradients; pops in W */
    for (int i = 0; i < g->n_gstacks; i++) {
        df__gstack *s = g->gstacks[i];
        if (s->push && s->push_loop == W && s->grad && s->push->id < r->n0) {
            df_node **nv = (df_node **)DF_REALLOC(L.seq_out, (size_t)(L.nseq_out + 1) * sizeof(df_node *));
            if (!nv) goto oom;
            L.seq_out = nv;
            L.seq_out[L.nseq_out++] = s->push;
            any = 1;
        }
        if (s->push && s->push_loop == W && s->push->id < r->n0 && !strcmp(s->push->op->name, "SumAccumulatorAdd")) {
            df_output gy = {NULL, 0};          /* second order: what reached the accumulator's reads */
            for (int k = 0; k < s->n_pops; k++)
                if (s->pops[k]->id < r->n0) {
                    df_output gk = df__greg_sum(r, df__out(s->pops[k], 0));
                    if (gk.node) gy = gy.node ? df_add(g, gy, gk) : gk;
                }
            if (gy.node) {
                df_node **nv = (df_node **)DF_REALLOC(L.acc_out, (size_t)(L.nacc_out + 1) * sizeof(df_node *));
                df_output *ng = (df_output *)DF_REALLOC(L.acc_gy, (size_t)(L.nacc_out + 1) * sizeof(df_output));
                if (nv) L.acc_out = nv;
                if (ng) L.acc_gy = ng;
                if (!nv || !ng) goto oom;
                L.acc_out[L.nacc_out] = s->push;
                L.acc_gy[L.nacc_out++] = gy;
                any = 1;
            }
        }
        for (int k = 0; k < s->n_pops; k++) {
            df_node *p = s->pops[k];
            if (p->id >= r->n0 || strcmp(p->op->name, "LoopStackPop") || df__loop_of(p->ctx) != W ||
                !df__is_float(p->out_types[0]) || !df__greg_between(r, p)) continue;
            df_node **nv = (df_node **)DF_REALLOC(L.seq_in, (size_t)(L.nseq_in + 1) * sizeof(df_node *));
            if (!nv) goto oom;
            L.seq_in = nv;
            L.seq_in[L.nseq_in++] = p;
        }
    }
    if (!any) goto done;
    {
        int ckpt = W->checkpoint_every > 0 && W->body_fn && !L.nseq_out && !L.nseq_in && !L.nacc_out;
        if (ckpt ? !df__loop_counter(g, W) : !df__loop_count(g, W)) goto done;
        /* variables: [the count (checkpoints) or a placeholder when no gradient variable],
           gradient variables, [invariants' gradients when checkpointing; else accumulators] */
        L.base = ckpt || L.nv == 0;
        int vb = L.base, nv = vb + L.nv + (ckpt ? L.ninv : 0);
        df_output *init = (df_output *)DF_MALLOC((size_t)(2 * (1 + L.nv + L.ninv)) * sizeof(df_output));
        if (!init) goto oom;
        df_output *outs = init + nv;
        if (vb) init[0] = ckpt ? df__out(W->fc_exit, 0) : df_scalar_i32(g, 0);
        for (int k = 0; k < L.nv; k++) {
            int i = L.var[k];
            init[vb + k] = dy[i].node ? dy[i] : df__zeros_like(g, df__out(W->exits[i], 0));
        }
        if (ckpt) for (int k = 0; k < L.ninv; k++) init[vb + L.nv + k] = df__zeros_like(g, L.inv[k]->inputs[0]);
        else if (L.ninv) {
            if (!(L.acc = (df__gstack **)DF_MALLOC((size_t)L.ninv * sizeof(df__gstack *)))) { DF_FREE(init); goto oom; }
            for (int k = 0; k < L.ninv; k++)
                if (!(L.acc[k] = df__gstack_new_op(g, L.inv[k]->out_types[0], 1, NULL))) { DF_FREE(init); goto done; }
        }
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.parallel_iterations = W->parallel_iterations;
        o.name = "while_grad";
        o.swap_memory = W->swap_memory;
        df__ckpt K;
        memset(&K, 0, sizeof K);
        K.L = &L;
        if (ckpt) {              /* the checkpointed loop's count and index */
            L.zero = df_scalar_i32(g, 0);
            L.one = df_scalar_i32(g, 1);
        }
        if (ckpt && !df__ckpt_prepare(g, &K)) { DF_FREE(K.ck); DF_FREE(init); goto done; }
        g->next_grad_of = W;
        if (ckpt) df_while_loop(g, nv, init, df__ck_gloop_cond, df__gloop_body_ckpt, &K, &o, outs);
        else df_while_loop(g, nv, init, df__gloop_cond, df__gloop_body, &L, &o, outs);
        g->next_grad_of = NULL;
        DF_FREE(K.ck);
        for (int k = 0; k < L.nv && df__ok(g); k++) {
            df_node *e = W->enters[L.var[k]];
            if (df__greg_between(r, e->inputs[0].node)) df__greg_add(r, e->inputs[0], outs[vb + k]);
        }
        for (int k = 0; k < L.ninv && df__ok(g) && ckpt; k++) df__greg_add(r, L.inv[k]->inputs[0], outs[vb + L.nv + k]);
        df__ctx *G = df__ok(g) && outs[0].node ? df__node_loop(outs[0].node) : NULL;
        for (int k = 0; k < L.ninv && df__ok(g) && !ckpt && G; k++) {
            /* the sum, read once every iteration of the gradient loop is done (zeros if nothing
               was added) */
            if (!df__loop_count(g, G)) break;
            df__gstack *A = L.acc[k];
            if (A->push && !df__add_control_edge(g, G->lcount, A->push)) break;
            df_output src = L.inv[k]->inputs[0];
            df_output ins[2] = {df__ctx_capture(g, g->ctx, df__out(A->stack, 0)), df__zeros_like(g, src)};
            df_node *ctl = G->lcount;
            df_op_builder *b = df__begin(g, g->ctx, "SumAccumulatorRead", ins, 2, &ctl, 1, 0);
            df_node *rd = df__finish_in(g, g->ctx, b);
            if (!rd) break;
            rd->gstack = A->stack->gstack;
            if (!df__grow(&A->pops, &A->cap_pops, A->n_pops + 1, sizeof(df_node *))) { df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory"); break; }
            A->pops[A->n_pops++] = rd;
            df__greg_add(r, src, df__out(rd, 0));
        }
        DF_FREE(init);
    }
    goto done;
oom:
    df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory differentiating a while loop");
done:
    DF_FREE(L.var); DF_FREE(L.inv); DF_FREE(L.seq_out); DF_FREE(L.seq_in); DF_FREE(dy);
    DF_FREE(L.acc); DF_FREE(L.acc_out); DF_FREE(L.acc_gy);
    return g->status.code;
}

df_code df_gradients(df_graph *g, int n_y, const df_output *ys, const df_output *grad_ys, int n_x,
                     const df_output *xs, df_output *dxs) {
    for (int i = 0; dxs && i < n_x; i++) dxs[i].node = NULL, dxs[i].index = 0;
    if (!g) return DF_INVALID_ARGUMENT;
    if (g->status.code) return g->status.code;
    if (n_y < 1 || n_x < 1 || !ys || !xs || !dxs)
        return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: bad arguments (n_y %d, n_x %d, ys, xs and dxs "
                               "must be set)", n_y, n_x);
    for (int i = 0; i < n_y; i++)
        if (!df__output_valid(ys[i]) || ys[i].node->graph != g)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: ys[%d] is NULL or invalid", i);
    for (int i = 0; i < n_x; i++)
        if (!df__output_valid(xs[i]) || xs[i].node->graph != g)
            return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: xs[%d] is NULL or invalid", i);
    for (int i = 0; i < n_y + n_x; i++) {
        const df_node *n = i < n_y ? ys[i].node : xs[i - n_y].node;
        if (df__loop_of(n->ctx))
                return df__graph_error(g, DF_UNIMPLEMENTED, "df_gradients: %s[%d] ('%s') lies inside a while loop; "
                                       "differentiate the loop's outputs instead", i < n_y ? "ys" : "xs",
                                       i < n_y ? i : i - n_y, n->name);
    }
    df_output *gys = (df_output *)DF_MALLOC((size_t)n_y * sizeof(df_output));
    if (!gys) return df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    for (int i = 0; i < n_y && df__ok(g); i++) {
        if (grad_ys && grad_ys[i].node) {
            if (!df__output_valid(grad_ys[i]) || grad_ys[i].node->graph != g ||
                df_output_dtype(grad_ys[i]) != df_output_dtype(ys[i])) {
                DF_FREE(gys);
                return df__graph_error(g, DF_INVALID_ARGUMENT, "df_gradients: grad_ys[%d] is invalid or its dtype "
                                       "differs from ys[%d]'s (%s)", i, i, df_dtype_name(df_output_dtype(ys[i])));
            }
            gys[i] = grad_ys[i];
        } else {
            gys[i] = df__op1(g, "OnesLike", ys[i]);
        }
    }
    if (df__ok(g)) df__grad_region(g, NULL, n_y, ys, gys, n_x, xs, dxs);
    DF_FREE(gys);
    if (!df__ok(g)) for (int i = 0; i < n_x; i++) dxs[i].node = NULL, dxs[i].index = 0;
    return g->status.code;
}

/* ---- optimizers ---- */
static df_output df__var_like(df_graph *g, df_output v, const char *suffix) {
    char name[300];
    snprintf(name, sizeof name, "%.200s/%s", v.node->name, suffix);
    int64_t dims[DF_MAX_RANK];
    int rank = df_output_shape(v, dims);
    return df_variable(g, name, df_output_dtype(v), rank, dims);
}

df_node *df_minimize(df_graph *g, df_output loss, int n_vars, const df_output *vars,
                     const df_optimizer *opt, df_node **init) {
    if (init) *init = NULL;
    if (!g || g->status.code) return NULL;
    if (n_vars < 1 || !vars || !df__output_valid(loss) || loss.node->graph != g) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: bad arguments (loss, n_vars %d, vars)", n_vars);
        return NULL;
    }
    df_optimizer o;
    if (opt) o = *opt; else { memset(&o, 0, sizeof o); o.kind = DF_OPT_SGD; }
    if (o.kind != DF_OPT_SGD && o.kind != DF_OPT_MOMENTUM && o.kind != DF_OPT_ADAM) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: unknown optimizer kind %d", (int)o.kind);
        return NULL;
    }
    if (o.learning_rate == 0) o.learning_rate = o.kind == DF_OPT_ADAM ? 0.001 : 0.01;
    if (o.momentum == 0) o.momentum = 0.9;
    if (o.beta1 == 0) o.beta1 = 0.9;
    if (o.beta2 == 0) o.beta2 = 0.999;
    if (o.epsilon == 0) o.epsilon = 1e-8;
    for (int i = 0; i < n_vars; i++)
        if (!df__output_valid(vars[i]) || vars[i].node->graph != g || !vars[i].node->out_is_ref[vars[i].index] ||
            !df__is_float(df_output_dtype(vars[i]))) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: vars[%d] is not a float variable (a df_variable output)", i);
            return NULL;
        }
    df_output *grads = (df_output *)DF_MALLOC((size_t)n_vars * sizeof(df_output));
    df_node **ups = (df_node **)DF_MALLOC((size_t)(n_vars + 2) * sizeof(df_node *));
    df_node **inits = (df_node **)DF_MALLOC((size_t)(3 * n_vars + 2) * sizeof(df_node *));
    if (!grads || !ups || !inits) {
        DF_FREE(grads); DF_FREE(ups); DF_FREE(inits);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
        return NULL;
    }
    int nu = 0, ni = 0, pushed = 0;
    char scope[64];
    if (!df__unique_scope(g, "train", scope, sizeof scope)) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    df_graph_push_name_scope(g, scope);
    for (int i = 1; i < n_vars && df__ok(g) && o.kind == DF_OPT_ADAM; i++)
        if (df_output_dtype(vars[i]) != df_output_dtype(vars[0]))
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: Adam needs variables of one dtype (vars[0] is %s, "
                            "vars[%d] is %s)", df_dtype_name(df_output_dtype(vars[0])), i, df_dtype_name(df_output_dtype(vars[i])));
    df_gradients(g, 1, &loss, NULL, n_vars, vars, grads);
    df_output b1p = {NULL, 0}, b2p = {NULL, 0};
    df_dtype t0 = df_output_dtype(vars[0]);
    df_output *slot = (df_output *)DF_MALLOC((size_t)(2 * n_vars + 1) * sizeof(df_output));
    if (!slot) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    /* the optimizer's state and its initialisers, outside any dependency on the gradients */
    if (df__ok(g) && o.kind == DF_OPT_ADAM) {
        b1p = df_variable(g, "beta1_power", t0, 0, NULL);
        b2p = df_variable(g, "beta2_power", t0, 0, NULL);
        inits[ni++] = df_assign(g, b1p, df__scalar_of(g, t0, o.beta1));
        inits[ni++] = df_assign(g, b2p, df__scalar_of(g, t0, o.beta2));
    }
    for (int i = 0; i < n_vars && df__ok(g); i++) {
        if (!grads[i].node || o.kind == DF_OPT_SGD) continue;
        slot[2 * i] = df__var_like(g, vars[i], o.kind == DF_OPT_MOMENTUM ? "Momentum" : "Adam");
        inits[ni++] = df_assign(g, slot[2 * i], df__zeros_like(g, vars[i]));
        if (o.kind == DF_OPT_ADAM) {
            slot[2 * i + 1] = df__var_like(g, vars[i], "Adam_1");
            inits[ni++] = df_assign(g, slot[2 * i + 1], df__zeros_like(g, vars[i]));
        }
    }
    /* every update waits for every gradient: an update in place must not change a variable that
       another gradient still reads */
    int ng = 0;
    for (int i = 0; i < n_vars; i++) if (grads[i].node) ups[ng++] = grads[i].node;
    if (df__ok(g) && ng) { df_graph_push_control_deps(g, ups, ng); pushed = df__ok(g); }
    for (int i = 0; i < n_vars && df__ok(g); i++) {
        if (!grads[i].node) continue;
        df_output v = vars[i];
        df_dtype t = df_output_dtype(v);
        df_op_builder *b = NULL;
        if (o.kind == DF_OPT_SGD) {
            b = df_op_new(g, "ApplyGradientDescent", NULL);
            df_op_add_input(b, v);
            df_op_add_input(b, df__scalar_of(g, t, o.learning_rate));
            df_op_add_input(b, grads[i]);
        } else if (o.kind == DF_OPT_MOMENTUM) {
            b = df_op_new(g, "ApplyMomentum", NULL);
            df_op_add_input(b, v);
            df_op_add_input(b, slot[2 * i]);
            df_op_add_input(b, df__scalar_of(g, t, o.learning_rate));
            df_op_add_input(b, grads[i]);
            df_op_add_input(b, df__scalar_of(g, t, o.momentum));
            df_op_set_attr_bool(b, "use_nesterov", o.use_nesterov);
        } else {
            b = df_op_new(g, "ApplyAdam", NULL);
            df_output ins[10] = {v, slot[2 * i], slot[2 * i + 1], b1p, b2p, df__scalar_of(g, t, o.learning_rate),
                                 df__scalar_of(g, t, o.beta1), df__scalar_of(g, t, o.beta2),
                                 df__scalar_of(g, t, o.epsilon), grads[i]};
            for (int k = 0; k < 10; k++) df_op_add_input(b, ins[k]);
        }
        df_node *u = df_op_finish(b);
        if (u) ups[nu++] = u;
    }
    DF_FREE(slot);
    if (pushed) df_graph_pop_control_deps(g);
    df_node *step = NULL;
    if (df__ok(g) && o.kind == DF_OPT_ADAM && nu > 0) {
        /* the beta powers advance after every variable's update */
        df_graph_push_control_deps(g, ups, nu);
        df_node *a1 = df_assign(g, b1p, df_mul(g, b1p, df__scalar_of(g, t0, o.beta1)));
        df_node *a2 = df_assign(g, b2p, df_mul(g, b2p, df__scalar_of(g, t0, o.beta2)));
        df_graph_pop_control_deps(g);
        ups[nu++] = a1;
        ups[nu++] = a2;
    }
    if (df__ok(g)) step = df_no_op(g, ups, nu);
    if (df__ok(g) && init) *init = ni ? df_no_op(g, inits, ni) : df_no_op(g, NULL, 0);
    df_graph_pop_name_scope(g);
    DF_FREE(grads); DF_FREE(ups); DF_FREE(inits);
    if (!df__ok(g)) { if (init) *init = NULL; return NULL; }
    return step;
}

static void df__gstacks_free(df_graph *g) {
    for (int i = 0; i < g->n_gstacks; i++) { DF_FREE(g->gstacks[i]->pops); DF_FREE(g->gstacks[i]); }
    DF_FREE(g->gstacks);
}

/* ==========================================================================================
   14. STATIC FRAME ANALYSIS                                                          >>frames
   Over the items an executor will run: every item gets one static frame (Enter opens the
   frame named by its attr, Exit returns to the parent, everything else inherits), found by a
   breadth-first walk from the roots. Malformed graphs are rejected here: inputs from different
   frames, Exit/NextIteration outside a loop, cycles not through NextIteration, two LoopConds
   in a frame, mismatched parent frames. Linear in items and edges.
   ========================================================================================== */
enum { DF__X_NORMAL, DF__X_MERGE, DF__X_ENTER, DF__X_EXIT, DF__X_NEXT, DF__X_FEED, DF__X_FETCH, DF__X_COUNT };
enum { DF__XF_CONST_ENTER = 1, DF__XF_CTRL_TRIGGER = 2, DF__XF_EXPENSIVE = 8,
       DF__XF_DEREF = 16, DF__XF_SWITCH = 32, DF__XF_LOOP_COND = 64, DF__XF_MATMUL = 128,
       DF__XF_NO_KERNEL = 256, DF__XF_EXPENSIVE_NEXT = 512, DF__XF_TRANSFER = 1024,
       DF__XF_PLAIN_EDGES = 2048, /* no out-edge to a Merge, ControlTrigger or LoopCount */
       DF__XF_DEVICE_VALUE = 4096 /* a feed copied to device memory; a fetch copied from it */ };

typedef struct df__counts { int32_t pending, dead; } df__counts;
/* An out-edge carries what activation needs, so the destination item is not touched: its
   local index, its data-input count (Merge's dead rule), and flags. slot -1: control edge. */
enum { DF__XE_MERGE = 1, DF__XE_TRIGGER = 2, DF__XE_LAST = 4, DF__XE_COUNT = 8 };
typedef struct df__xedge { int32_t dst, slot, dst_local; uint16_t src_out, flags; } df__xedge;
typedef struct df__xitem {      /* 64 bytes: what running a node touches comes first */
    df__kernel_fn kernel;
    const df_node *node;         /* the fetched node for a fetch item; NULL for a feed */
    int32_t edge_start, n_edges;
    int32_t input_start, n_inputs, n_outputs;
    uint8_t kind, cost;          /* cost: the op's expected cycles per element, at most 255 */
    uint16_t flags;
    uint32_t need;               /* bit i: output i is consumed */
    int32_t frame, local, n_control_in;
    int32_t child_frame;         /* Enter: the frame it opens; fetch: the output index */
    int32_t aux;                 /* feed or fetch index */
} df__xitem;
typedef struct df__sframe {
    char *name;
    int parent;
    int parallel_iterations;
    int n_nodes, total_inputs, n_enters, n_loop_conds;
    df__counts *init;
    int32_t *counts;             /* LoopCount items, fired when a frame of this kind is done */
    int n_counts, cap_counts;
} df__sframe;
typedef struct df__exec {
    df__xitem *items;
    int n_items;
    df__xedge *edges;
    int n_edges;
    df__sframe *frames;
    int n_frames, cap_frames;
    int32_t *roots;
    int n_roots;
    int n_feeds, n_fetches;
    uint32_t *host_out;          /* on a device without host memory: per item, the outputs its kernel
                                    makes in host memory (NULL elsewhere: all host) */
} df__exec;

static void df__exec_free(df__exec *x) {
    if (!x) return;
    for (int i = 0; i < x->n_frames; i++) { DF_FREE(x->frames[i].name); DF_FREE(x->frames[i].init); DF_FREE(x->frames[i].counts); }
    DF_FREE(x->frames); DF_FREE(x->items); DF_FREE(x->edges); DF_FREE(x->roots); DF_FREE(x->host_out);
    DF_FREE(x);
}

static const char *df__item_name(const df__exec *x, int i) {
    const df__xitem *it = &x->items[i];
    return it->node ? it->node->name : "_feed";
}

static int df__frame_find_or_add(df__exec *x, const char *name, int parent, df_status *st, const char *by) {
    for (int f = 1; f < x->n_frames; f++)
        if (!strcmp(x->frames[f].name, name)) {
            if (x->frames[f].parent != parent) {
                df_status_set(st, DF_INVALID_ARGUMENT, "Mismatched parent frames for frame '%s': '%s' and '%s' "
                              "{{node %s}}", name, x->frames[x->frames[f].parent].name, x->frames[parent].name, by);
                return -1;
            }
            return f;
        }
    if (!df__grow(&x->frames, &x->cap_frames, x->n_frames + 1, sizeof(df__sframe))) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
        return -1;
    }
    df__sframe *sf = &x->frames[x->n_frames];
    memset(sf, 0, sizeof *sf);
    sf->name = df__strdup(name);
    sf->parent = parent;
    sf->parallel_iterations = 1;
    if (!sf->name) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis"); return -1; }
    return x->n_frames++;
}

/* Items, in-edges and out-edges are in place (x->edges holds out-edges by source; in-degree is
   n_inputs + n_control_in). Assigns frames, validates, lays out counts. */
static df_code df__analyze_frames(df__exec *x, df_status *st) {
    int n = x->n_items;
    int32_t *indeg = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    int32_t *queue = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    if (!indeg || !queue) { DF_FREE(indeg); DF_FREE(queue); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis"); }
    /* 1. cycles not through NextIteration (Kahn's algorithm ignoring NextIteration's out-edges) */
    for (int i = 0; i < n; i++) indeg[i] = 0;
    for (int i = 0; i < n; i++)
        if (x->items[i].kind != DF__X_NEXT)
            for (int e = 0; e < x->items[i].n_edges; e++) indeg[x->edges[x->items[i].edge_start + e].dst]++;
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) if (!indeg[i]) queue[tail++] = i;
    while (head < tail) {
        int i = queue[head++];
        if (x->items[i].kind == DF__X_NEXT) continue;
        for (int e = 0; e < x->items[i].n_edges; e++) {
            int d = x->edges[x->items[i].edge_start + e].dst;
            if (--indeg[d] == 0) queue[tail++] = d;
        }
    }
    if (tail < n) {
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++) if (indeg[i] > 0) bad = i;
        DF_FREE(indeg); DF_FREE(queue);
        return df_status_set(st, DF_INVALID_ARGUMENT, "The graph has a cycle that does not go through a "
                             "NextIteration node; it includes {{node %s}}", df__item_name(x, bad));
    }
    /* Renumber items in that order: the executor runs nodes roughly breadth first, so items,
       edges and counts are then read nearly sequentially (it matters for big graphs). */
    {
        df__xitem *items = (df__xitem *)DF_MALLOC((size_t)(n + 1) * sizeof(df__xitem));
        df__xedge *edges = (df__xedge *)DF_MALLOC((size_t)(x->n_edges + 1) * sizeof(df__xedge));
        int32_t *renum = indeg;                        /* reused: old index -> new index */
        if (!items || !edges) {
            DF_FREE(items); DF_FREE(edges); DF_FREE(indeg); DF_FREE(queue);
            return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
        }
        for (int k = 0; k < n; k++) renum[queue[k]] = k;
        if (x->host_out) {                             /* (queue holds old indices until below) */
            uint32_t *ho = (uint32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(uint32_t));
            if (!ho) {
                DF_FREE(items); DF_FREE(edges); DF_FREE(indeg); DF_FREE(queue);
                return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
            }
            for (int k = 0; k < n; k++) ho[k] = x->host_out[queue[k]];
            ho[n] = ~0u;
            DF_FREE(x->host_out);
            x->host_out = ho;
        }
        int at = 0;
        for (int k = 0; k < n; k++) {
            const df__xitem *old = &x->items[queue[k]];
            items[k] = *old;
            items[k].edge_start = at;
            for (int e = 0; e < old->n_edges; e++) {
                edges[at] = x->edges[old->edge_start + e];
                edges[at].dst = renum[edges[at].dst];
                at++;
            }
            queue[k] = k;
        }
        DF_FREE(x->items); DF_FREE(x->edges);
        x->items = items;
        x->edges = edges;
    }
    /* 2. frames, in that topological order: an item's frame comes from its inputs (an Enter's
       consumers are in the Enter's frame, an Exit's in the parent), so a node whose inputs
       disagree is found at the node itself. Back edges from NextIteration are checked after. */
    if (df__frame_find_or_add(x, "", 0, st, "") != 0) { DF_FREE(indeg); DF_FREE(queue); return st->code; }
    for (int i = 0; i < n; i++) x->items[i].frame = -1;
    df_code code = DF_OK;
    for (int q = 0; q < n && !code; q++) {
        int i = queue[q];
        df__xitem *it = &x->items[i];
        if (it->frame < 0) {
            if (it->n_inputs + it->n_control_in > 0) continue;   /* fed only by back edges: reported below */
            it->frame = 0;
        }
        int out_frame = it->frame;
        if (it->frame == 0 && (it->kind == DF__X_EXIT || it->kind == DF__X_COUNT || it->kind == DF__X_NEXT ||
                               (it->flags & DF__XF_LOOP_COND))) {
            code = df_status_set(st, DF_INVALID_ARGUMENT, "%s node is not inside a while loop%s {{node %s}}",
                                 it->node->op->name, it->kind == DF__X_EXIT ? " (it has no matching Enter)" : "",
                                 df__item_name(x, i));
            break;
        }
        if (it->kind == DF__X_ENTER) {
            int f = df__frame_find_or_add(x, df__attr_s(it->node, "frame_name"), it->frame, st, it->node->name);
            if (f < 0) { code = st->code; break; }
            it->child_frame = out_frame = f;
        } else if (it->kind == DF__X_EXIT || it->kind == DF__X_COUNT) {
            out_frame = x->frames[it->frame].parent;     /* root's parent is root: reported below */
        }
        if (it->kind == DF__X_NEXT) continue;
        for (int e = 0; e < it->n_edges && !code; e++) {
            int d = x->edges[it->edge_start + e].dst;
            df__xitem *dst = &x->items[d];
            if (dst->frame < 0) { dst->frame = out_frame; continue; }
            if (dst->frame == out_frame) continue;
            if (it->kind == DF__X_FEED)
                code = df_status_set(st, DF_INVALID_ARGUMENT, "A fed tensor is used inside a while loop; feeding "
                                     "tensors inside loops is not supported {{node %s}}", df__item_name(x, d));
            else if (dst->kind == DF__X_FETCH)
                code = df_status_set(st, DF_INVALID_ARGUMENT, "Cannot fetch a tensor from inside a while loop: "
                                     "'%s' is in frame '%s' {{node %s}}", df__item_name(x, i),
                                     x->frames[out_frame].name, df__item_name(x, i));
            else
                code = df_status_set(st, DF_INVALID_ARGUMENT, "Node has inputs from different frames. The input "
                    "'%s' is in frame '%s'. Another input is in frame '%s'. {{node %s}}", df__item_name(x, i),
                    x->frames[out_frame].name, x->frames[dst->frame].name, df__item_name(x, d));
        }
    }
    for (int i = 0; i < n && !code; i++)
        if (x->items[i].frame < 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Node is not reachable from any input: it sits in a "
                                 "loop with no Enter {{node %s}}", df__item_name(x, i));
    for (int i = 0; i < n && !code; i++) {          /* NextIteration's back edges */
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_NEXT) continue;
        for (int e = 0; e < it->n_edges; e++) {
            int d = x->edges[it->edge_start + e].dst;
            if (x->items[d].frame != it->frame && it->frame != 0) {
                code = df_status_set(st, DF_INVALID_ARGUMENT, "Node has inputs from different frames. The input "
                    "'%s' is in frame '%s'. Another input is in frame '%s'. {{node %s}}", df__item_name(x, i),
                    x->frames[it->frame].name, x->frames[x->items[d].frame].name, df__item_name(x, d));
                break;
            }
        }
    }
    for (int i = 0; i < n && !code; i++) {
        df__xitem *it = &x->items[i];
        if ((it->kind == DF__X_EXIT || it->kind == DF__X_COUNT) && it->frame == 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "%s node is not inside a while loop (it has no "
                                 "matching Enter) {{node %s}}", it->node->op->name, df__item_name(x, i));
        else if (it->kind == DF__X_COUNT) {
            df__sframe *f = &x->frames[it->frame];
            if (!df__grow(&f->counts, &f->cap_counts, f->n_counts + 1, sizeof(int32_t)))
                code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
            else f->counts[f->n_counts++] = i;
        }
        else if (it->kind == DF__X_NEXT && it->frame == 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "NextIteration node is not inside a while loop "
                                 "{{node %s}}", df__item_name(x, i));
        else if ((it->flags & DF__XF_LOOP_COND) && it->frame == 0)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "LoopCond is not inside a while loop {{node %s}}",
                                 df__item_name(x, i));
        else if ((it->flags & DF__XF_LOOP_COND) && ++x->frames[it->frame].n_loop_conds > 1)
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Frame '%s' has more than one LoopCond {{node %s}}",
                                 x->frames[it->frame].name, df__item_name(x, i));
        else if (it->kind == DF__X_ENTER) {
            df__sframe *f = &x->frames[it->child_frame];
            int64_t par = df__attr_i(it->node, "parallel_iterations", 10);
            f->n_enters++;
            if (par > f->parallel_iterations) f->parallel_iterations = (int)DF__MIN(par, 1 << 20);
        }
    }
    DF_FREE(indeg);
    DF_FREE(queue);
    if (code) return code;
    /* 3. layout: local ids, input slots and initial counts per frame */
    for (int i = 0; i < n; i++) {
        df__xitem *it = &x->items[i];
        df__sframe *sf = &x->frames[it->frame];
        it->local = sf->n_nodes++;
        it->input_start = sf->total_inputs;
        sf->total_inputs += it->n_inputs;
    }
    for (int f = 0; f < x->n_frames; f++) {
        x->frames[f].init = (df__counts *)DF_MALLOC((size_t)(x->frames[f].n_nodes + 1) * sizeof(df__counts));
        if (!x->frames[f].init) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
    }
    for (int i = 0; i < n; i++) {
        df__xitem *it = &x->items[i];
        df__counts *c = &x->frames[it->frame].init[it->local];
        c->dead = 0;
        c->pending = it->kind == DF__X_MERGE ? 1 + 2 * it->n_control_in : it->n_inputs + it->n_control_in;
    }
    /* data edges: absolute input slot in the destination's frame; the last data edge reading
       each output may take the producer's reference instead of adding one */
    int max_out = 1;
    for (int i = 0; i < n; i++) max_out = DF__MAX(max_out, x->items[i].n_outputs);
    int32_t *seen = (int32_t *)DF_MALLOC((size_t)max_out * sizeof(int32_t));  /* item that last saw output k */
    if (!seen) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in frame analysis");
    for (int k = 0; k < max_out; k++) seen[k] = -1;
    for (int i = 0; i < n; i++) {
        const df__xitem *it = &x->items[i];
        for (int e = it->n_edges - 1; e >= 0; e--) {            /* backwards: the first seen is the last */
            df__xedge *ed = &x->edges[it->edge_start + e];
            const df__xitem *dst = &x->items[ed->dst];
            ed->dst_local = dst->local;
            ed->flags = (dst->kind == DF__X_MERGE ? DF__XE_MERGE : 0) | (dst->flags & DF__XF_CTRL_TRIGGER ? DF__XE_TRIGGER : 0);
            if (dst->kind == DF__X_COUNT) { ed->flags = DF__XE_COUNT; continue; }    /* only notes deadness */
            if (ed->slot < 0) continue;
            ed->slot += dst->input_start;
            if (ed->src_out < max_out && seen[ed->src_out] != i) { seen[ed->src_out] = i; ed->flags |= DF__XE_LAST; }
        }
    }
    DF_FREE(seen);
    for (int i = 0; i < n; i++) {
        df__xitem *it = &x->items[i];
        it->flags |= DF__XF_PLAIN_EDGES;
        for (int e = 0; e < it->n_edges; e++)
            if (x->edges[it->edge_start + e].flags & (DF__XE_MERGE | DF__XE_TRIGGER | DF__XE_COUNT)) it->flags &= (uint16_t)~DF__XF_PLAIN_EDGES;
    }
    for (int i = 0; i < n; i++)          /* may a successor be worth a thread? */
        for (int e = 0; e < x->items[i].n_edges; e++)
            if (x->items[x->edges[x->items[i].edge_start + e].dst].flags & DF__XF_EXPENSIVE) {
                x->items[i].flags |= DF__XF_EXPENSIVE_NEXT;
                break;
            }
    return DF_OK;
}

/* ==========================================================================================
   15. THREAD POOL                                                                      >>pool
   The inter-op pool: one queue of (step, tagged node) tasks under a mutex. Workers spin briefly
   before sleeping (a wake-up costs microseconds on small machines). The caller of a run helps
   with tasks while it waits, so a pool of n-1 workers gives n threads.
   ========================================================================================== */
struct df__frame;
struct df__iter;
/* A ready node: item, whether it is dead, and the iteration (which knows its frame). */
typedef struct df__tagged { int32_t item, dead; struct df__iter *iter; } df__tagged;
struct df__wake;
typedef struct df__task { struct df__step *step; df__tagged t; struct df__wake *wake; } df__task;   /* wake: a Recv to resume */

#ifndef DF_NO_THREADS
typedef struct df__pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    df__task *q;
    int cap, head, count, waiting, shutdown, n_threads;
    pthread_t *threads;
} df__pool;

static void df__process(struct df__step *s, df__tagged t);
static void df__step_task_done(struct df__step *s);

static int df__pool_pop(df__pool *p, df__task *out, int block) {
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->count) {
            *out = p->q[p->head];
            p->head = (p->head + 1) % p->cap;
            __atomic_store_n(&p->count, p->count - 1, __ATOMIC_RELAXED);   /* also read by spinners */
            pthread_mutex_unlock(&p->mu);
            return 1;
        }
        if (p->shutdown || !block) { pthread_mutex_unlock(&p->mu); return 0; }
        /* spin briefly outside the lock before sleeping */
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < 2000 && !__atomic_load_n(&p->count, __ATOMIC_RELAXED) &&
                        !__atomic_load_n(&p->shutdown, __ATOMIC_RELAXED); i++) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        pthread_mutex_lock(&p->mu);
        if (p->count || p->shutdown) continue;
        p->waiting++;
        pthread_cond_wait(&p->cv, &p->mu);
        p->waiting--;
    }
}

/* A task was counted in its step's `active` when it was pushed; it is uncounted when done, and
   the step is not touched after that. */
static void df__wake_dispatch(struct df__wake *w);
static void df__run_task(df__task *t) {
    struct df__step *s = t->step;
    if (t->wake) {                      /* a value from another process: its Recv resumes here */
        struct df__wake *w = t->wake;
        df__wake_dispatch(w);
        DF_FREE(w);
        return;
    }
    df__process(s, t->t);
    df__step_task_done(s);
}

static void *df__pool_worker(void *arg) {
    df__pool *p = (df__pool *)arg;
    df__task t;
    while (df__pool_pop(p, &t, 1)) df__run_task(&t);
    return NULL;
}

static int df__pool_push(df__pool *p, const df__task *t) {
    pthread_mutex_lock(&p->mu);
    if (p->count == p->cap) {
        int nc = p->cap ? p->cap * 2 : 256;
        df__task *nq = (df__task *)DF_MALLOC((size_t)nc * sizeof *nq);
        if (!nq) { pthread_mutex_unlock(&p->mu); return 0; }
        for (int i = 0; i < p->count; i++) nq[i] = p->q[(p->head + i) % p->cap];
        DF_FREE(p->q);
        p->q = nq; p->cap = nc; p->head = 0;
    }
    p->q[(p->head + p->count) % p->cap] = *t;
    __atomic_store_n(&p->count, p->count + 1, __ATOMIC_RELEASE);
    if (p->waiting) pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 1;
}

static df__pool *df__pool_new(int n_threads) {
    df__pool *p = (df__pool *)DF_MALLOC(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = (pthread_t *)DF_MALLOC((size_t)DF__MAX(n_threads, 1) * sizeof(pthread_t));
    if (!p->threads) { DF_FREE(p); return NULL; }
    for (int i = 0; i < n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, df__pool_worker, p) != 0) break;
        p->n_threads++;
    }
    return p;
}

static void df__pool_free(df__pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->shutdown, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    DF_FREE(p->threads);
    DF_FREE(p->q);
    DF_FREE(p);
}
#else
typedef struct df__pool { int n_threads; } df__pool;
#endif

/* ==========================================================================================
   16. EXECUTOR                                                                     >>executor
   Runs one compiled graph. A value is a tensor pointer in an input slot of (frame instance,
   iteration); NULL is "no value", which is what dead means. Per node and iteration a pending
   count and a dead count decide readiness (Merge: 1 + 2 * control inputs, bit 0 waiting for a
   live input). Iterations of a frame live in a ring of parallel_iterations + 1 and retire in
   order; loop invariants are replayed into every new iteration; a NextIteration past the
   window is deferred. A LoopCount item is never scheduled: when its frame is deleted (every
   iteration done) it fires in the parent iteration with the iteration count, or dead when the
   loop's last LoopCond was dead; kernels see their iteration's number (LoopStackPush/Pop,
   LoopIterationLess, accumulators). The step ends when `outstanding` (ready + running nodes)
   reaches zero.
   When threads are in play, every bookkeeping change happens under the step's spinlock.
   ========================================================================================== */
typedef struct df__iter {
    struct df__frame *frame;
    int64_t num;
    int outstanding_ops, outstanding_frames;
    df__counts *counts;
    df_tensor **entries;
    struct df__frame *children;      /* frames made by Enters that ran in this iteration */
    struct df__iter *next_free;
} df__iter;

typedef struct df__deferred { int32_t item; int32_t dead; df_tensor *t; } df__deferred;

typedef struct df__frame {
    int sf;
    uint64_t id;
    struct df__frame *parent;
    df__iter *parent_iter;
    int num_pending_inputs, num_outstanding_iterations, max_par;
    int64_t iteration_count, first_alive;
    df__iter **ring;
    df__deferred *next_roots, *invs;
    int n_next_roots, cap_next_roots, n_invs, cap_invs;
    int32_t *dead_exits;
    int n_dead_exits, cap_dead_exits;
    int count_dead;                  /* the last LoopCond seen was dead (the whole loop is) */
    struct df__frame *sibling;       /* next child of parent_iter */
    struct df__frame *live_next, *live_prev;
} df__frame;

/* The ready queue of a batch; it starts in the batch's own small buffer (`local`), so a short
   batch (a Recv resumed for one iteration of a loop) allocates nothing. */
typedef struct df__readyq { df__tagged *v; int head, len, cap; df__tagged *local; } df__readyq;

/* ---- rendezvous: where a Send's value meets its Recv ----
   Keyed by (key number, frame id, iteration): the key number stands for TensorFlow's textual
   prefix "send_device;incarnation;recv_device;tensor_name" (df__plan interns those), so a
   transfer hashes three integers instead of formatting a string. Each key holds a FIFO of sent
   values or of waiting Recvs, never both. A waiting Recv is handed back to the sender as a
   wake, resumed outside the lock. An abort fails every waiting Recv and every later call. */
struct df__step;
typedef struct df__rv_msg {
    struct df__rv_msg *next;
    df_tensor *t;                /* a sent value; NULL when it is dead */
    int dead;
    struct df__step *step;       /* a waiting Recv: its step and node */
    df__tagged tag;
} df__rv_msg;
typedef struct df__rv_entry {
    struct df__rv_entry *next;
    int32_t key, recvs;          /* recvs: the queue holds waiting Recvs, else sent values */
    uint64_t frame_id;
    int64_t iter;
    df__rv_msg *head, *tail;
} df__rv_entry;
typedef struct df__rendezvous {
    df__spin lock;
    df__rv_entry **buckets;
    int n_buckets, n_entries;
    df__rv_entry *free_entries;
    df__rv_msg *free_msgs;
    int aborted;
    df_status status;
} df__rendezvous;
/* A Recv to resume: its step and node, the value (or dead), or failed when the run aborted. */
typedef struct df__wake { struct df__step *step; df__tagged tag; df_tensor *t; int dead, failed; } df__wake;

/* The partitions of one run: their steps, the rendezvous, the first error. */
typedef struct df__pgroup {
    df__rendezvous rv;
    struct df__step *steps;
    int n_steps;
    df__spin lock;
    int aborted;
    df_status status;
    uint64_t progress;               /* bumps whenever a Recv is resumed (the hang check) */
    int pending_wakes;               /* wakes queued on some thread, not yet resumed */
    struct df__wstep *remote;        /* a worker's step: Sends to other processes go over the wire */
} df__pgroup;
/* A Send whose Recv is in another process: 1 when sent (or failed, with st set), 0 when local. */
static int df__remote_send(df__pgroup *g, int32_t key, uint64_t fid, int64_t iter, df_tensor *v, int dead, df_status *st);

struct df_session;
typedef struct df__step {
    const df__exec *x;
    struct df_session *session;
    df__device *device;
    df_tensor *const *feeds;
    df_tensor **fetches;
    df__spin lock;
    int threaded;                    /* other threads may touch this step */
    int active;                      /* threads running this step's nodes, plus queued tasks */
    int64_t outstanding;
    int aborted;
    df_status status;
    df__frame *live;                 /* every frame not yet deleted */
    df__frame *root;
    df__iter **free_iters;           /* recycled iteration states, per static frame */
    df__spin stack_lock;
    df__stack **stacks;              /* StackV2 state of this run */
    int n_stacks, cap_stacks;
    df__pgroup *group;               /* the partitions of this run; NULL for a single executor */
    struct df__ipool *ipool;         /* the session's intra-op threads */
    struct df__step *home;           /* whose stacks this step uses: a handle may cross devices */
    int shared;                      /* threads of other partitions resume its Recvs: always lock */
#ifndef DF_NO_THREADS
    df__pool *pool;
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
#endif
    int done;
} df__step;

static df__stack *df__step_stack_new(df__step *s, int64_t *id, df_status *st) {
    s = s->home;
    df__stack *k = (df__stack *)DF_MALLOC(sizeof *k);
    if (k) memset(k, 0, sizeof *k);
    df__spin_lock(&s->stack_lock);
    int ok = k && s->n_stacks < (1 << 30) && df__grow(&s->stacks, &s->cap_stacks, s->n_stacks + 1, sizeof(df__stack *));
    if (ok) { *id = s->n_stacks; s->stacks[s->n_stacks++] = k; }
    df__spin_unlock(&s->stack_lock);
    if (!ok) { DF_FREE(k); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a stack"); return NULL; }
    return k;
}
static df__stack *df__step_stack_get(df__step *s, const df_tensor *h) {
    s = s->home;
    uint64_t w;
    memcpy(&w, h->data, 8);
    if ((w >> 32) != DF__STACK_MAGIC) return NULL;
    int64_t id = (int64_t)(w & 0xffffffffu);
    df__spin_lock(&s->stack_lock);
    df__stack *k = id < s->n_stacks ? s->stacks[id] : NULL;
    df__spin_unlock(&s->stack_lock);
    return k;
}

static void df__step_task_done(df__step *s) { __atomic_sub_fetch(&s->active, 1, __ATOMIC_ACQ_REL); }

static void df__group_abort(df__pgroup *g, const df_status *why);
static void df__step_error_local(df__step *s, const df_status *st) {
    if (s->threaded) df__spin_lock(&s->lock);
    if (!s->aborted) { s->status = *st; __atomic_store_n(&s->aborted, 1, __ATOMIC_RELEASE); }
    if (s->threaded) df__spin_unlock(&s->lock);
}
/* The first error of any partition ends the run on every partition. */
static void df__step_error(df__step *s, const df_status *st) {
    df__step_error_local(s, st);
    if (s->group) df__group_abort(s->group, st);
}
/* `exclusive`: the caller holds the step lock or is the only thread in the step. */
static void df__step_oom(df__step *s, const char *what, int exclusive) {
    df_status st;
    df_status_set(&st, DF_RESOURCE_EXHAUSTED, "Out of memory in the executor (%s)", what);
    if (!exclusive) { df__step_error(s, &st); return; }
    if (!s->aborted) { s->status = st; __atomic_store_n(&s->aborted, 1, __ATOMIC_RELEASE); }
}

/* ---- the rendezvous ---- */
static df__rv_entry **df__rv_slot(df__rendezvous *rv, int32_t key, uint64_t fid, int64_t iter) {
    uint64_t h = df__hash_mix(df__hash_mix((uint64_t)(uint32_t)key, fid), (uint64_t)iter);
    df__rv_entry **p = &rv->buckets[h & (uint64_t)(rv->n_buckets - 1)];
    while (*p && !((*p)->key == key && (*p)->frame_id == fid && (*p)->iter == iter)) p = &(*p)->next;
    return p;
}
static int df__rv_init(df__rendezvous *rv) {
    memset(rv, 0, sizeof *rv);
    rv->n_buckets = 64;
    rv->buckets = (df__rv_entry **)DF_MALLOC((size_t)rv->n_buckets * sizeof(df__rv_entry *));
    if (!rv->buckets) return 0;
    memset(rv->buckets, 0, (size_t)rv->n_buckets * sizeof(df__rv_entry *));
    return 1;
}
/* Doubles the bucket array when entries outnumber buckets twice (a sender far ahead). */
static void df__rv_rehash(df__rendezvous *rv) {
    int nb = rv->n_buckets * 2;
    df__rv_entry **b = (df__rv_entry **)DF_MALLOC((size_t)nb * sizeof(df__rv_entry *));
    if (!b) return;                          /* longer chains, still correct */
    memset(b, 0, (size_t)nb * sizeof(df__rv_entry *));
    for (int i = 0; i < rv->n_buckets; i++)
        for (df__rv_entry *e = rv->buckets[i], *next; e; e = next) {
            next = e->next;
            uint64_t h = df__hash_mix(df__hash_mix((uint64_t)(uint32_t)e->key, e->frame_id), (uint64_t)e->iter);
            e->next = b[h & (uint64_t)(nb - 1)];
            b[h & (uint64_t)(nb - 1)] = e;
        }
    DF_FREE(rv->buckets);
    rv->buckets = b;
    rv->n_buckets = nb;
}
static df__rv_msg *df__rv_msg_new(df__rendezvous *rv) {
    df__rv_msg *m = rv->free_msgs;
    if (m) rv->free_msgs = m->next;
    else m = (df__rv_msg *)DF_MALLOC(sizeof *m);
    if (m) memset(m, 0, sizeof *m);
    return m;
}
/* Pops the head of the entry at *p (the caller holds the lock); drops the entry when empty. */
static df__rv_msg *df__rv_pop(df__rendezvous *rv, df__rv_entry **p) {
    df__rv_entry *e = *p;
    df__rv_msg *m = e->head;
    if (!(e->head = m->next)) {
        *p = e->next;
        e->next = rv->free_entries;
        rv->free_entries = e;
        rv->n_entries--;
    }
    return m;
}
/* Appends m under (key, frame, iteration) (the caller holds the lock). 0 on OOM. */
static int df__rv_push(df__rendezvous *rv, df__rv_entry **p, int32_t key, uint64_t fid, int64_t iter,
                       int recvs, df__rv_msg *m) {
    df__rv_entry *e = *p;
    if (!e) {
        if ((e = rv->free_entries) != NULL) rv->free_entries = e->next;
        else if (!(e = (df__rv_entry *)DF_MALLOC(sizeof *e))) return 0;
        e->key = key; e->frame_id = fid; e->iter = iter; e->recvs = recvs;
        e->head = e->tail = NULL;
        e->next = NULL;
        *p = e;
        if (++rv->n_entries > 2 * rv->n_buckets) df__rv_rehash(rv);
    }
    m->next = NULL;
    if (e->tail && e->head) e->tail->next = m;
    else e->head = m;
    e->tail = m;
    return 1;
}
/* Sends a value (t's reference is taken; NULL and dead for a dead value). A Recv already
   waiting comes back in *wake for the caller to resume. */
static df_code df__rv_send(df__rendezvous *rv, int32_t key, uint64_t fid, int64_t iter, df_tensor *t, int dead,
                           df__wake *wake, df_status *st) {
    wake->step = NULL;
    df__spin_lock(&rv->lock);
    if (rv->aborted) {
        df__spin_unlock(&rv->lock);
        df_tensor_release(t);
        return df_status_set(st, DF_ABORTED, "The run was aborted: %s", rv->status.message);
    }
    df__rv_entry **p = df__rv_slot(rv, key, fid, iter);
    if (*p && (*p)->recvs) {
        df__rv_msg *m = df__rv_pop(rv, p);
        wake->step = m->step; wake->tag = m->tag; wake->t = t; wake->dead = dead || !t; wake->failed = 0;
        m->next = rv->free_msgs;
        rv->free_msgs = m;
        df__spin_unlock(&rv->lock);
        return DF_OK;
    }
    df__rv_msg *m = df__rv_msg_new(rv);
    if (!m || !df__rv_push(rv, p, key, fid, iter, 0, m)) {
        if (m) { m->next = rv->free_msgs; rv->free_msgs = m; }
        df__spin_unlock(&rv->lock);
        df_tensor_release(t);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in the rendezvous");
    }
    m->t = t;
    m->dead = dead || !t;
    df__spin_unlock(&rv->lock);
    return DF_OK;
}
/* A Recv: 1 with the value in *t (NULL and *dead when dead), 0 when it now waits (it is
   resumed through a wake), -1 with st set when the run was aborted or memory ran out. */
static int df__rv_recv(df__rendezvous *rv, int32_t key, uint64_t fid, int64_t iter, df__step *s,
                       const df__tagged *tag, df_tensor **t, int *dead, df_status *st) {
    df__spin_lock(&rv->lock);
    if (rv->aborted) {
        df__spin_unlock(&rv->lock);
        df_status_set(st, DF_ABORTED, "The run was aborted: %s", rv->status.message);
        return -1;
    }
    df__rv_entry **p = df__rv_slot(rv, key, fid, iter);
    if (*p && !(*p)->recvs) {
        df__rv_msg *m = df__rv_pop(rv, p);
        *t = m->t;
        *dead = m->dead;
        m->next = rv->free_msgs;
        rv->free_msgs = m;
        df__spin_unlock(&rv->lock);
        return 1;
    }
    df__rv_msg *m = df__rv_msg_new(rv);
    if (!m || !df__rv_push(rv, p, key, fid, iter, 1, m)) {
        if (m) { m->next = rv->free_msgs; rv->free_msgs = m; }
        df__spin_unlock(&rv->lock);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory in the rendezvous");
        return -1;
    }
    m->step = s;
    m->tag = *tag;
    df__spin_unlock(&rv->lock);
    return 0;
}
/* Marks the rendezvous aborted and returns every waiting Recv as a list (the caller fails
   them); values still queued are released. */
static df__rv_msg *df__rv_abort(df__rendezvous *rv, const df_status *why) {
    df__rv_msg *waiting = NULL;
    df__spin_lock(&rv->lock);
    if (!rv->aborted) { rv->status = *why; rv->aborted = 1; }
    for (int i = 0; i < rv->n_buckets; i++)
        while (rv->buckets[i]) {
            df__rv_msg *m = df__rv_pop(rv, &rv->buckets[i]);
            if (m->step) { m->next = waiting; waiting = m; }
            else { df_tensor_release(m->t); m->next = rv->free_msgs; rv->free_msgs = m; }
        }
    df__spin_unlock(&rv->lock);
    return waiting;
}
static void df__rv_free(df__rendezvous *rv) {
    for (int i = 0; i < rv->n_buckets; i++)
        while (rv->buckets[i]) {
            df__rv_msg *m = df__rv_pop(rv, &rv->buckets[i]);
            df_tensor_release(m->t);
            DF_FREE(m);
        }
    for (df__rv_entry *e = rv->free_entries, *n; e; e = n) { n = e->next; DF_FREE(e); }
    for (df__rv_msg *m = rv->free_msgs, *n; m; m = n) { n = m->next; DF_FREE(m); }
    DF_FREE(rv->buckets);
    memset(rv, 0, sizeof *rv);
}

/* ---- wakes: Recvs resumed by the thread that sent their value ----
   A thread inside a batch queues wakes on itself and resumes them when its outermost batch is
   over, one after another: two partitions that ping-pong through a loop then run on one
   thread, with no hand-off and no recursion. */
#ifndef DF_NO_THREADS
#define DF__TLS _Thread_local
#else
#define DF__TLS
#endif
typedef struct df__wakeq { df__wake *v; int head, n, cap, depth, draining; df__wake local[16]; } df__wakeq;
static DF__TLS df__wakeq df__tls_wakes;
static void df__resume(df__wake *w);
static void df__wakes_drain(void) {
    df__wakeq *q = &df__tls_wakes;
    q->draining = 1;
    while (q->n) {
        df__wake w = q->v[q->head++];
        if (--q->n == 0) q->head = 0;
        df__resume(&w);
    }
    q->draining = 0;
    if (q->v != q->local) DF_FREE(q->v);   /* (a thread may end: nothing stays allocated) */
    q->v = q->local;
    q->cap = 16;
    q->head = 0;
}
static void df__wake_dispatch(df__wake *w) {
    df__wakeq *q = &df__tls_wakes;
    __atomic_add_fetch(&w->step->group->pending_wakes, 1, __ATOMIC_ACQ_REL);
    if (q->depth > 0 || q->draining) {
        if (!q->v) { q->v = q->local; q->cap = 16; }
        if (q->head + q->n == q->cap) {
            if (q->head > 0) { memmove(q->v, q->v + q->head, (size_t)q->n * sizeof *q->v); q->head = 0; }
            else if (q->v == q->local) {
                df__wake *v = (df__wake *)DF_MALLOC((size_t)q->cap * 2 * sizeof *v);
                if (!v) { df__resume(w); return; }
                memcpy(v, q->v, (size_t)q->n * sizeof *v);
                q->v = v;
                q->cap *= 2;
            } else if (!df__grow(&q->v, &q->cap, q->cap + 1, sizeof *q->v)) { df__resume(w); return; }
        }
        q->v[q->head + q->n++] = *w;
        return;
    }
    df__resume(w);
    df__wakes_drain();
}

/* Ends the run on every partition: each step stops running kernels, and each waiting Recv is
   resumed as failed. The first error is the run's error. */
static void df__group_abort(df__pgroup *g, const df_status *why) {
    df__spin_lock(&g->lock);
    int first = !g->aborted;
    if (first) { g->status = *why; __atomic_store_n(&g->aborted, 1, __ATOMIC_RELEASE); }
    df__spin_unlock(&g->lock);
    if (!first) return;
    for (int i = 0; i < g->n_steps; i++) df__step_error_local(&g->steps[i], why);
    df__rv_msg *m = df__rv_abort(&g->rv, why);
    while (m) {
        df__rv_msg *next = m->next;
        df__wake w = {m->step, m->tag, NULL, 1, 1};
        DF_FREE(m);
        df__wake_dispatch(&w);
        m = next;
    }
}

static int df__readyq_push(df__readyq *q, df__tagged t) {
    if (q->head + q->len == q->cap) {
        if (q->head > 0 && q->head >= q->len) {        /* compact */
            memmove(q->v, q->v + q->head, (size_t)q->len * sizeof *q->v);
            q->head = 0;
        } else if (q->v == q->local) {
            df__tagged *v = (df__tagged *)DF_MALLOC((size_t)q->cap * 2 * sizeof *v);
            if (!v) return 0;
            memcpy(v, q->v, (size_t)(q->head + q->len) * sizeof *v);
            q->v = v;
            q->cap *= 2;
        } else if (!df__grow(&q->v, &q->cap, q->cap + 1, sizeof *q->v)) {
            return 0;
        }
    }
    q->v[q->head + q->len++] = t;
    return 1;
}

/* ---- iterations and frames (caller holds the step lock when threaded) ---- */
static df__iter *df__iter_new(df__step *s, int sf, int64_t num) {
    const df__sframe *f = &s->x->frames[sf];
    df__iter *it = s->free_iters[sf];
    if (it) s->free_iters[sf] = it->next_free;
    else {
        size_t counts = (size_t)(f->n_nodes + 1) * sizeof(df__counts);
        size_t entries = (size_t)(f->total_inputs + 1) * sizeof(df_tensor *);
        it = (df__iter *)DF_MALLOC(sizeof *it + counts + entries);
        if (!it) return NULL;
        it->counts = (df__counts *)(it + 1);
        it->entries = (df_tensor **)((char *)it->counts + counts);
        memset(it->entries, 0, entries);
    }
    it->num = num;
    it->frame = NULL;                /* set by the caller */
    it->outstanding_ops = it->outstanding_frames = 0;
    it->children = NULL;
    it->next_free = NULL;
    memcpy(it->counts, f->init, (size_t)f->n_nodes * sizeof(df__counts));
    return it;
}

static void df__iter_retire(df__step *s, int sf, df__iter *it) {
    const df__sframe *f = &s->x->frames[sf];
    for (int i = 0; i < f->total_inputs; i++)
        if (it->entries[i]) { df_tensor_release(it->entries[i]); it->entries[i] = NULL; }
    it->next_free = s->free_iters[sf];
    s->free_iters[sf] = it;
}

static df__frame *df__frame_new(df__step *s, int sf, df__frame *parent, df__iter *parent_iter) {
    const df__sframe *f = &s->x->frames[sf];
    int ring = f->parallel_iterations + 1;
    df__frame *fr = (df__frame *)DF_MALLOC(sizeof *fr + (size_t)ring * sizeof(df__iter *));
    if (!fr) return NULL;
    memset(fr, 0, sizeof *fr);
    fr->ring = (df__iter **)(fr + 1);
    memset(fr->ring, 0, (size_t)ring * sizeof(df__iter *));
    fr->sf = sf;
    fr->parent = parent;
    fr->parent_iter = parent_iter;
    fr->max_par = f->parallel_iterations;
    fr->num_pending_inputs = f->n_enters;
    fr->num_outstanding_iterations = 1;
    fr->id = parent ? df__hash_mix(df__hash_mix(parent->id, (uint64_t)parent_iter->num), df__hash_str(f->name)) : 0;
    if (!(fr->ring[0] = df__iter_new(s, sf, 0))) { DF_FREE(fr); return NULL; }
    fr->ring[0]->frame = fr;
    fr->live_next = s->live;
    if (s->live) s->live->live_prev = fr;
    s->live = fr;
    return fr;
}

static void df__frame_destroy(df__step *s, df__frame *fr) {
    int ring = fr->max_par + 1;
    for (int i = 0; i < ring; i++) if (fr->ring[i]) df__iter_retire(s, fr->sf, fr->ring[i]);
    for (int i = 0; i < fr->n_next_roots; i++) df_tensor_release(fr->next_roots[i].t);
    for (int i = 0; i < fr->n_invs; i++) df_tensor_release(fr->invs[i].t);
    DF_FREE(fr->next_roots); DF_FREE(fr->invs); DF_FREE(fr->dead_exits);
    if (fr->live_prev) fr->live_prev->live_next = fr->live_next;
    else s->live = fr->live_next;
    if (fr->live_next) fr->live_next->live_prev = fr->live_prev;
    DF_FREE(fr);
}

static df__iter *df__frame_iter(const df__frame *fr, int64_t num) { return fr->ring[num % (fr->max_par + 1)]; }

DF__HOT_INLINE int df__ready(df__step *s, df__iter *it, int32_t dst, int dead, df__readyq *q) {
    if (q->head + q->len == q->cap) {
        df__tagged t = {dst, dead, it};
        if (!df__readyq_push(q, t)) return 0;
    } else {
        df__tagged *slot = &q->v[q->head + q->len++];
        slot->item = dst; slot->dead = dead; slot->iter = it;
    }
    it->outstanding_ops++;
    s->outstanding++;
    return 1;
}

/* Activates the out-edges of `item` in iteration `it`; ready nodes go to q. With `move`, the
   last edge reading an output takes outs[k]'s reference and clears it. Returns 0 on OOM. */
static int df__activate(df__step *s, df__iter *it, int32_t item_id, df_tensor **outs,
                        int is_dead, int move, df__readyq *q) {
    const df__exec *x = s->x;
    const df__xitem *item = &x->items[item_id];
    const df__xedge *e = x->edges + item->edge_start, *end = e + item->n_edges;
    df__counts *counts = it->counts;
    df_tensor **entries = it->entries;
    if (!is_dead && move) {
        /* the common case: live outputs, handed on; Merge and ControlTrigger go the long way */
        for (; e < end; e++) {
            if (e->flags & (DF__XE_MERGE | DF__XE_TRIGGER | DF__XE_COUNT)) break;
            df__counts *c = &counts[e->dst_local];
            if (e->slot >= 0) {
                df_tensor *t = outs[e->src_out];
                if (!t) c->dead++;
                else if (e->flags & DF__XE_LAST) { entries[e->slot] = t; outs[e->src_out] = NULL; }
                else entries[e->slot] = df_tensor_retain(t);
            }
            if (--c->pending == 0 && !df__ready(s, it, e->dst, c->dead > 0, q)) return 0;
        }
    }
    int from_enter = item->kind == DF__X_ENTER;
    for (; e < end; e++) {
        if (e->flags & DF__XE_COUNT) {        /* a LoopCount notes whether the loop is dead (its control
                                                 inputs only bring nodes into the run); see frame_finish */
            if (e->slot >= 0) it->frame->count_dead = is_dead;  /* (the value itself may have moved on) */
            continue;
        }
        df__counts *c = &counts[e->dst_local];
        int ready, dst_dead;
        if (e->slot >= 0) {
            df_tensor *t = is_dead ? NULL : outs[e->src_out];
            if (e->flags & DF__XE_MERGE) {
                if (t) {
                    if (!(c->pending & 1)) continue;            /* already had a live input */
                    if (move && (e->flags & DF__XE_LAST)) { entries[e->slot] = t; outs[e->src_out] = NULL; }
                    else entries[e->slot] = df_tensor_retain(t);
                    c->pending -= 1;
                    ready = c->pending == 0;
                    dst_dead = 0;
                } else {
                    c->dead++;
                    dst_dead = c->dead == x->items[e->dst].n_inputs || from_enter;
                    ready = c->pending == 1 && dst_dead;
                    if (ready) c->pending = 0;
                }
            } else {
                if (t) {
                    if (move && (e->flags & DF__XE_LAST)) { entries[e->slot] = t; outs[e->src_out] = NULL; }
                    else entries[e->slot] = df_tensor_retain(t);
                } else {
                    c->dead++;
                }
                ready = --c->pending == 0;
                dst_dead = c->dead > 0;
            }
        } else if (e->flags & DF__XE_MERGE) {
            c->pending -= 2;
            dst_dead = c->dead == x->items[e->dst].n_inputs;
            ready = c->pending == 0 || (c->pending == 1 && dst_dead);
            if (ready) c->pending = 0;
        } else {
            if (is_dead) c->dead++;
            ready = --c->pending == 0;
            dst_dead = c->dead > 0;
        }
        if (!ready) continue;
        if (e->flags & DF__XE_TRIGGER) dst_dead = 0;
        if (!df__ready(s, it, e->dst, dst_dead, q)) return 0;
    }
    return 1;
}

static int df__cleanup_iterations(df__step *s, df__frame *fr, df__readyq *q);

/* Starts iteration iteration_count + 1: deferred NextIteration values and invariants go in. */
static int df__increment_iteration(df__step *s, df__frame *fr, df__readyq *q) {
    int64_t num = ++fr->iteration_count;
    df__iter *it = df__iter_new(s, fr->sf, num);
    if (!it) return 0;
    it->frame = fr;
    fr->ring[num % (fr->max_par + 1)] = it;
    fr->num_outstanding_iterations++;
    fr->n_dead_exits = 0;
    int n_roots = fr->n_next_roots;
    fr->n_next_roots = 0;
    for (int i = 0; i < n_roots; i++) {
        df__deferred d = fr->next_roots[i];
        int ok = df__activate(s, it, d.item, &d.t, 0, 1, q);
        df_tensor_release(d.t);
        if (!ok) return 0;
    }
    for (int i = 0; i < fr->n_invs; i++)
        if (!df__activate(s, it, fr->invs[i].item, &fr->invs[i].t, fr->invs[i].dead, 0, q)) return 0;
    return 1;
}

static int df__iteration_done(const df__frame *fr, int64_t num) {
    const df__iter *it = df__frame_iter(fr, num);
    return it && it->num == num && it->outstanding_ops == 0 && it->outstanding_frames == 0 &&
           num == fr->first_alive && (num > 0 || fr->num_pending_inputs == 0);
}

/* Deletes a finished frame: dead Exits of its last iteration go to the parent, then the parent
   iteration may itself finish. */
static int df__frame_finish(df__step *s, df__frame *fr, df__readyq *q) {
    df__frame *parent = fr->parent;
    df__iter *piter = fr->parent_iter;
    for (int i = 0; i < fr->n_dead_exits; i++)
        if (!df__activate(s, piter, fr->dead_exits[i], NULL, 1, 0, q)) return 0;
    /* LoopCounts: how many iterations ran, once every node of every iteration has (so the
       stacks a loop filled are complete when a gradient loop starts on its count) */
    const df__sframe *sf = &s->x->frames[fr->sf];
    for (int i = 0; i < sf->n_counts; i++) {
        df_tensor *t = NULL;
        if (!fr->count_dead) {
            if (!(t = df_tensor_new(DF_INT32, 0, NULL, NULL))) return 0;
            *(int32_t *)t->data = (int32_t)DF__MIN(fr->iteration_count, INT32_MAX);
        }
        int ok = df__activate(s, piter, sf->counts[i], &t, fr->count_dead, 1, q);
        if (t) df_tensor_release(t);
        if (!ok) return 0;
    }
    df__frame **link = &piter->children;
    while (*link && *link != fr) link = &(*link)->sibling;
    if (*link) *link = fr->sibling;
    df__frame_destroy(s, fr);
    piter->outstanding_frames--;
    if (piter->outstanding_ops == 0 && piter->outstanding_frames == 0)
        return df__cleanup_iterations(s, parent, q);
    return 1;
}

/* Retires finished iterations of fr in order; starts deferred ones; deletes fr when done. */
static int df__cleanup_iterations(df__step *s, df__frame *fr, df__readyq *q) {
    while (fr->first_alive <= fr->iteration_count && df__iteration_done(fr, fr->first_alive)) {
        int64_t num = fr->first_alive;
        df__iter *it = df__frame_iter(fr, num);
        fr->ring[num % (fr->max_par + 1)] = NULL;
        df__iter_retire(s, fr->sf, it);
        fr->num_outstanding_iterations--;
        fr->first_alive++;
        if (fr->n_next_roots && !df__increment_iteration(s, fr, q)) return 0;
    }
    if (fr->parent && fr->num_pending_inputs == 0 && fr->num_outstanding_iterations == 0)
        return df__frame_finish(s, fr, q);
    return 1;
}

static df__frame *df__child_frame(df__step *s, df__frame *fr, df__iter *it, int sf) {
    for (df__frame *c = it->children; c; c = c->sibling) if (c->sf == sf) return c;
    df__frame *c = df__frame_new(s, sf, fr, it);
    if (!c) return NULL;
    c->sibling = it->children;
    it->children = c;
    it->outstanding_frames++;
    return c;
}

static int df__push_deferred(df__deferred **v, int *n, int *cap, int32_t item, df_tensor *t, int dead) {
    if (!df__grow(v, cap, *n + 1, sizeof(df__deferred))) return 0;
    (*v)[*n].item = item;
    (*v)[*n].t = df_tensor_retain(t);
    (*v)[*n].dead = dead;
    (*n)++;
    return 1;
}

/* After a node ran in (fr, it): route its outputs by node kind, then account for it. */
static int df__propagate(df__step *s, const df__tagged *t, df_tensor **outs, df__readyq *q) {
    const df__xitem *item = &s->x->items[t->item];
    df__iter *it = t->iter;
    df__frame *fr = it->frame;
    int dead = t->dead, ok = 1;
    switch (item->kind) {
    case DF__X_ENTER: {
        df__frame *child = df__child_frame(s, fr, it, item->child_frame);
        if (!child) return 0;
        df_tensor *v = dead ? NULL : outs[0];
        if (item->flags & DF__XF_CONST_ENTER) {
            ok = df__push_deferred(&child->invs, &child->n_invs, &child->cap_invs, t->item, v, dead || !v);
            for (int64_t k = child->first_alive; ok && k <= child->iteration_count; k++)
                ok = df__activate(s, df__frame_iter(child, k), t->item, outs, dead || !v, 0, q);
        } else {
            ok = df__activate(s, df__frame_iter(child, 0), t->item, outs, dead || !v, 1, q);
        }
        child->num_pending_inputs--;
        if (ok && child->num_pending_inputs == 0) {
            df__iter *first = df__frame_iter(child, child->first_alive);
            if (first && first->outstanding_ops == 0 && first->outstanding_frames == 0)
                ok = df__cleanup_iterations(s, child, q);
        }
        break;
    }
    case DF__X_EXIT:
        if (dead || !outs[0]) {
            if (it->num == fr->iteration_count) {
                if (!df__grow(&fr->dead_exits, &fr->cap_dead_exits, fr->n_dead_exits + 1, sizeof(int32_t))) return 0;
                fr->dead_exits[fr->n_dead_exits++] = t->item;
            }
        } else {
            ok = df__activate(s, fr->parent_iter, t->item, outs, 0, 1, q);
        }
        break;
    case DF__X_NEXT:
        if (dead || !outs[0]) break;                      /* a dead NextIteration ends the loop */
        if (it->num < fr->iteration_count) {
            ok = df__activate(s, df__frame_iter(fr, it->num + 1), t->item, outs, 0, 1, q);
        } else if (fr->num_outstanding_iterations == fr->max_par) {
            ok = df__push_deferred(&fr->next_roots, &fr->n_next_roots, &fr->cap_next_roots, t->item, outs[0], 0);
        } else {
            ok = df__increment_iteration(s, fr, q) &&
                 df__activate(s, df__frame_iter(fr, fr->iteration_count), t->item, outs, 0, 1, q);
        }
        break;
    default:
        if (DF__LIKELY(!dead && (item->flags & DF__XF_PLAIN_EDGES))) {
            /* the common case inline: live outputs handed on along plain edges */
            const df__xedge *e = s->x->edges + item->edge_start, *end = e + item->n_edges;
            df__counts *counts = it->counts;
            df_tensor **entries = it->entries;
            for (; e < end; e++) {
                df__counts *c = &counts[e->dst_local];
                if (e->slot >= 0) {
                    df_tensor *v = outs[e->src_out];
                    if (!v) c->dead++;
                    else if (e->flags & DF__XE_LAST) { entries[e->slot] = v; outs[e->src_out] = NULL; }
                    else entries[e->slot] = df_tensor_retain(v);
                }
                if (--c->pending == 0 && !df__ready(s, it, e->dst, c->dead > 0, q)) return 0;
            }
        } else {
            ok = df__activate(s, it, t->item, outs, dead, 1, q);
        }
    }
    if (!ok) return 0;
    int ops = --it->outstanding_ops;     /* (kept in a register: no wide reload after the store) */
    s->outstanding--;
    if (ops == 0 && fr->parent && it->outstanding_frames == 0)
        return df__cleanup_iterations(s, fr, q);
    return 1;
}

/* ---- running one node ---- */
#ifndef DF_NO_THREADS
static int df__item_expensive(const df__step *s, const df__tagged *t) {
    const df__xitem *item = &s->x->items[t->item];
    if (!(item->flags & DF__XF_EXPENSIVE) || t->dead) return 0;
    df_tensor *const *in = t->iter->entries + item->input_start;
    int64_t work = 0;
    for (int i = 0; i < item->n_inputs; i++) if (in[i]) work += in[i]->n;
    if ((item->flags & DF__XF_MATMUL) && in[0] && in[1] && in[0]->rank == 2 && in[1]->rank == 2)
        work = in[0]->n * in[1]->dims[1];
    /* TF hands a node to another thread above ~5000 cycles of expected work (op_kernel.h); a
       hand-off costs a few microseconds on small machines, so we ask for ~30000. */
    return work * item->cost >= 32768;
}
#endif

/* TF's ProcessOutputs checks on what a kernel made: every needed output (bit i of need) present,
   every output of its declared dtype. */
static df_code df__check_outputs(const df_node *n, df_tensor *const *outs, int n_out, uint32_t need, df_status *st) {
    for (int i = 0; i < n_out; i++) {
        const df_tensor *o = outs[i];
        if (o ? o->dtype == n->out_types[i] : !(need >> DF__MIN(i, 31) & 1)) continue;
        if (o) return df__fail(st, n, DF_INTERNAL, "Output %d of type %s does not match declared output type %s", i,
                               df_dtype_name(o->dtype), df_dtype_name(n->out_types[i]));
        return df__fail(st, n, DF_INTERNAL, "Kernel of %s produced no output %d", n->op->name, i);
    }
    return DF_OK;
}

/* Runs the kernel of t (unless dead) into outs[], which arrives all NULL; a failure aborts the
   step. Feed and fetch items move values in and out; a fetch runs even when dead, to report it,
   and so do Send and Recv, to carry the dead bit. Returns 0 when a Recv waits for its value
   (the node stays outstanding until its wake), else 1. A Recv whose value is dead marks t dead. */
static int df__run_item(df__step *s, df__tagged *t, df_tensor **outs) {
    const df__xitem *item = &s->x->items[t->item];
    df_tensor **in = t->iter->entries + item->input_start;
    if (__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) {   /* read without the step lock */
    } else if (item->kind == DF__X_FEED) {
        if (DF__UNLIKELY(item->flags & DF__XF_DEVICE_VALUE)) {
            df_status st;
            if (!(outs[0] = df__to_device(s->device, s->feeds[item->aux], &st))) df__step_error(s, &st);
        } else {
            outs[0] = df_tensor_retain(s->feeds[item->aux]);
        }
    } else if (item->kind == DF__X_FETCH) {
        if (!in[0]) {
            df_status st;
            df__fail(&st, item->node, DF_INVALID_ARGUMENT, "Fetched tensor '%s:%d' is dead: it was not computed "
                     "in this run (it lies on an untaken branch of a cond, or depends on one)",
                     item->node->name, item->child_frame);
            df__step_error(s, &st);
        } else {
            df_status st;
            df_tensor *v = df__deref(in[0], item->node, &st);
            in[0] = NULL;
            if (v && (item->flags & DF__XF_DEVICE_VALUE)) {
                df_tensor *h = df__to_host(s->device, v, &st);
                df_tensor_release(v);
                v = h;
            }
            if (v) s->fetches[item->aux] = v;
            else df__step_error(s, &st);
        }
    } else if ((!t->dead || (item->flags & DF__XF_TRANSFER)) && !(item->flags & DF__XF_NO_KERNEL)) {
        df_status st;
        df_status_clear(&st);
        if (item->flags & DF__XF_DEREF)
            for (int i = 0; i < item->n_inputs; i++)
                if (in[i] && in[i]->ref && !df__ref_arg(item->node->op, i) &&
                    !(in[i] = df__deref(in[i], item->node, &st))) break;
        if (!st.code) {
            df__kctx k;
            k.in = in; k.out = outs; k.node = item->node; k.n_in = item->n_inputs; k.n_out = item->n_outputs;
            k.need = item->need; k.alloc = s->device->alloc; k.step = s; k.st = &st; k.iter = t->iter->num;
            k.ipool = s->ipool;
            k.host_out = s->x->host_out ? s->x->host_out[t->item] : 0;
            k.gpu = k.host_out == ~0u ? NULL : s->device->gpu;
            k.dev = s->device;
            if (DF__UNLIKELY(k.host_out == ~0u) && !(k.alloc = df__host_allocator())) {
                df__step_error(s, &(df_status){DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator"});
                return 1;
            }
            if (DF__UNLIKELY(item->flags & DF__XF_TRANSFER)) {
                k.tag = t; k.aux = item->aux; k.dead = t->dead; k.out_dead = 0; k.pending = 0; k.xfer = item->child_frame;
                item->kernel(&k);
                if (k.pending) return 0;
                if (k.out_dead) t->dead = 1;
            } else if (DF__LIKELY(s->device->kernel_type == DF__DEV_CPU)) {
                item->kernel(&k);
            } else {
                s->device->ops->run_kernel(s->device, item->kernel, &k);
            }
            /* (Switch and Merge may leave some outputs dead, a Recv may receive a dead value) */
            if (!st.code)
                df__check_outputs(item->node, outs, item->n_outputs,
                                  (item->flags & (DF__XF_SWITCH | DF__XF_TRANSFER)) || item->kind == DF__X_MERGE ? 0 : item->need, &st);
        }
        if (st.code) df__step_error(s, &st);
    }
    for (int i = 0, n = item->n_inputs; i < n; i++) {
        df_tensor *x = in[i];
        if (x) { in[i] = NULL; df_tensor_release(x); }
    }
    return 1;
}

static void df__step_finish(df__step *s) {
#ifndef DF_NO_THREADS
    if (s->threaded) {
        pthread_mutex_lock(&s->done_mu);
        __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);      /* also read without the mutex */
        pthread_cond_broadcast(&s->done_cv);
        pthread_mutex_unlock(&s->done_mu);
        return;
    }
#endif
    s->done = 1;
}

/* After t ran: routes its outputs (or, when the step aborted, just uncounts it), releases what
   is left of outs, hands newly ready expensive nodes to the pool, and ends the step when
   nothing is outstanding. `before`: the ready queue's length before. */
DF__HOT_INLINE void df__node_done(df__step *s, df__tagged *t, df_tensor **outs, df__readyq *q) {
    const df__xitem *item = &s->x->items[t->item];
    /* Alone in the step (no other thread running it, no task of it queued), this thread
       needs no lock: only a running thread can queue work, and it counts it first. Steps of a
       partitioned run always lock: another partition's thread may resume their Recvs. */
    int locked = s->threaded && (s->shared || __atomic_load_n(&s->active, __ATOMIC_ACQUIRE) > 1);
    if (locked) df__spin_lock(&s->lock);
    int before = q->len;
    DF__UNUSED(before);
    if (s->aborted) s->outstanding--;
    else if (!df__propagate(s, t, outs, q)) df__step_oom(s, "propagating outputs", 1);
    int completed = s->outstanding == 0;
    if (locked) df__spin_unlock(&s->lock);
    for (int i = 0, n = item->n_outputs; i < n; i++) {
        df_tensor *o = outs[i];
        if (o) { outs[i] = NULL; df_tensor_release(o); }
    }
    if (DF__UNLIKELY(s->group != NULL) && __atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE) && !__atomic_load_n(&s->group->aborted, __ATOMIC_ACQUIRE))
        df__group_abort(s->group, &s->status);       /* (an out-of-memory found under the lock) */
#ifndef DF_NO_THREADS
    /* Newly ready expensive nodes go to the pool, except one that can run here next. */
    if (s->pool && q->len > before && (item->flags & DF__XF_EXPENSIVE_NEXT)) {
        int keep = q->head + before;
        for (int i = q->head + before; i < q->head + q->len; i++) {
            df__tagged r = q->v[i];
            int last = i == q->head + q->len - 1;
            if (df__item_expensive(s, &r) && !(last && keep == q->head)) {
                df__task task = {s, r, NULL};
                __atomic_add_fetch(&s->active, 1, __ATOMIC_ACQ_REL);
                if (df__pool_push(s->pool, &task)) continue;
                __atomic_sub_fetch(&s->active, 1, __ATOMIC_ACQ_REL);
            }
            q->v[keep++] = r;
        }
        q->len = keep - q->head;
    }
#endif
    if (completed) df__step_finish(s);
}

/* Processes the given ready nodes and everything that becomes ready inline after them, first in
   first out (so a graph runs breadth first, in the order its items are laid out). `resumed`,
   when given, is a Recv whose value arrived (in resumed_outs): it is routed first. Wakes this
   batch queues for other partitions run when the thread's outermost batch is over. */
static void df__process_batch(df__step *s, const df__tagged *first, int n_first, df__tagged *resumed,
                              df_tensor **resumed_outs) {
    df__tagged local[32];
    df__readyq q = {local, 0, 0, 32, local};
    df_tensor *small[16] = {NULL}, **outs = small;
    int outs_cap = 16;
    df__tls_wakes.depth++;
    for (int i = 0; i < n_first; i++)
        if (!df__readyq_push(&q, first[i])) {        /* drop the rest; the step ends with the error */
            df__step_oom(s, "ready queue", 0);
            if (s->threaded) df__spin_lock(&s->lock);
            s->outstanding -= n_first - i;
            int completed = s->outstanding == 0;
            if (s->threaded) df__spin_unlock(&s->lock);
            if (completed) df__step_finish(s);
            break;
        }
    if (resumed) df__node_done(s, resumed, resumed_outs, &q);
    while (q.len) {
        df__tagged t = q.v[q.head++];
        if (--q.len == 0) q.head = 0;
        const df__xitem *item = &s->x->items[t.item];
        if (item->n_outputs > outs_cap) {
            df_tensor **bigger = (df_tensor **)DF_MALLOC((size_t)item->n_outputs * sizeof(df_tensor *));
            if (bigger) {
                memset(bigger, 0, (size_t)item->n_outputs * sizeof(df_tensor *));
                if (outs != small) DF_FREE(outs);
                outs = bigger;
                outs_cap = item->n_outputs;
            }
        }
        if (item->n_outputs > outs_cap) df__step_oom(s, "output array", 0);
        else if (!df__run_item(s, &t, outs)) continue;      /* a Recv waits for its value */
        df__node_done(s, &t, outs, &q);
    }
    if (outs != small) DF_FREE(outs);
    if (q.v != local) DF_FREE(q.v);
    if (--df__tls_wakes.depth == 0 && !df__tls_wakes.draining && df__tls_wakes.n) df__wakes_drain();
}

/* A Recv's value arrived (or the run aborted): route it in its step, on this thread. */
static void df__resume(df__wake *w) {
    df__step *s = w->step;
    __atomic_add_fetch(&s->active, 1, __ATOMIC_ACQ_REL);
    __atomic_sub_fetch(&s->group->pending_wakes, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&s->group->progress, 1, __ATOMIC_RELAXED);
    df__tagged t = w->tag;
    if (w->dead) t.dead = 1;
    df_tensor *outs[1] = {w->t};
    if (w->failed) df__step_error_local(s, &s->group->status);
    df__process_batch(s, NULL, 0, &t, outs);
    df__step_task_done(s);
}

#ifndef DF_NO_THREADS
static void df__process(df__step *s, df__tagged t) { df__process_batch(s, &t, 1, NULL, NULL); }
#endif

/* Sets up a step's root frame and counts; the step is then `active` (its starter counts as a
   thread in it) until df__step_roots has run its roots. */
static df_code df__step_begin(df__step *s, df_status *st) {
    const df__exec *x = s->x;
    if (!s->home) s->home = s;
    s->free_iters = (df__iter **)DF_MALLOC((size_t)x->n_frames * sizeof(df__iter *));
    if (!s->free_iters) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a run");
    memset(s->free_iters, 0, (size_t)x->n_frames * sizeof(df__iter *));
    df__frame *root = s->root = df__frame_new(s, 0, NULL, NULL);
    if (!root) { DF_FREE(s->free_iters); s->free_iters = NULL; return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a run"); }
    s->outstanding = x->n_roots;
    root->ring[0]->outstanding_ops = x->n_roots;
#ifndef DF_NO_THREADS
    if (s->threaded) { pthread_mutex_init(&s->done_mu, NULL); pthread_cond_init(&s->done_cv, NULL); }
#endif
    if (x->n_roots == 0) s->done = 1;
    s->active = 1;
    return DF_OK;
}

/* Runs the roots inline in order; the first one's inline chain may already do most of the work. */
static void df__step_roots(df__step *s) {
    const df__exec *x = s->x;
    df__iter *it0 = s->root->ring[0];
    df__tagged *roots = (df__tagged *)DF_MALLOC((size_t)(x->n_roots + 1) * sizeof(df__tagged));
    if (!roots) {
        df__step_oom(s, "roots", 0);
        if (s->threaded) df__spin_lock(&s->lock);
        s->outstanding -= x->n_roots;
        int completed = s->outstanding == 0 && x->n_roots;
        if (s->threaded) df__spin_unlock(&s->lock);
        if (completed) df__step_finish(s);
    } else {
        for (int i = 0; i < x->n_roots; i++) { roots[i].item = x->roots[i]; roots[i].dead = 0; roots[i].iter = it0; }
        if (x->n_roots) df__process_batch(s, roots, x->n_roots, NULL, NULL);
        DF_FREE(roots);
    }
    df__step_task_done(s);
}

#ifndef DF_NO_THREADS
/* One round of waiting for a step: helps with the pool's tasks, else sleeps up to 200 us. */
static void df__step_wait_once(df__step *s) {
    df__task task;
    if (s->pool && df__pool_pop(s->pool, &task, 0)) { df__run_task(&task); return; }
    if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) { sched_yield(); return; }
    pthread_mutex_lock(&s->done_mu);
    if (!s->done) {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        ts.tv_nsec += 200000;
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        pthread_cond_timedwait(&s->done_cv, &s->done_mu, &ts);
    }
    pthread_mutex_unlock(&s->done_mu);
}
#endif
#ifndef DF_NO_THREADS
static int df__step_over(df__step *s) {
    return __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) && !__atomic_load_n(&s->active, __ATOMIC_ACQUIRE);
}
#endif

/* Frees the step's frames and (for the stacks' home) its stacks; returns its status. */
static df_code df__step_end(df__step *s, df_status *st) {
    const df__exec *x = s->x;
#ifndef DF_NO_THREADS
    if (s->threaded) { pthread_mutex_destroy(&s->done_mu); pthread_cond_destroy(&s->done_cv); }
#endif
    while (s->live) df__frame_destroy(s, s->live);
    for (int f = 0; s->free_iters && f < x->n_frames; f++)
        while (s->free_iters[f]) { df__iter *it = s->free_iters[f]; s->free_iters[f] = it->next_free; DF_FREE(it); }
    DF_FREE(s->free_iters);
    s->free_iters = NULL;
    if (s->home == s) {
        for (int i = 0; i < s->n_stacks; i++) {
            for (int k = 0; k < s->stacks[i]->n; k++) df_tensor_release(s->stacks[i]->v[k]);
            for (int k = 0; k < s->stacks[i]->n_pend; k++) df_tensor_release(s->stacks[i]->pend[k].t);
            DF_FREE(s->stacks[i]->v);
            DF_FREE(s->stacks[i]->pend);
            DF_FREE(s->stacks[i]);
        }
        DF_FREE(s->stacks);
        s->stacks = NULL; s->n_stacks = 0;
    }
    if (s->aborted) { *st = s->status; return st->code; }
    if (!s->done) return df_status_set(st, DF_INTERNAL, "The run ended with work outstanding");
    return DF_OK;
}

/* Runs a compiled executor to completion on the calling thread (helped by the pool). */
static df_code df__execute(df__step *s, df_status *st) {
    if (df__step_begin(s, st) != DF_OK) return st->code;
    df__step_roots(s);
#ifndef DF_NO_THREADS
    if (s->threaded)
        while (!df__step_over(s)) df__step_wait_once(s);   /* the end, and every thread out of it */
#endif
    return df__step_end(s, st);
}

/* Runs the partitions of one run together: every step's roots on this thread, then waits for
   all of them, helping the pool. A run where no thread holds work for any partition while some
   partition still waits (a Recv no Send will ever match) is a bug; it ends with an error rather
   than hanging. */
#ifndef DF_NO_THREADS
static int df__group_idle(df__pgroup *g) {
    if (__atomic_load_n(&g->pending_wakes, __ATOMIC_ACQUIRE)) return 0;
    for (int i = 0; i < g->n_steps; i++)
        if (__atomic_load_n(&g->steps[i].active, __ATOMIC_ACQUIRE)) return 0;
    for (int i = 0; i < g->n_steps; i++)
        if (!__atomic_load_n(&g->steps[i].done, __ATOMIC_ACQUIRE)) return 1;
    return 0;
}
#endif
static void df__group_hang(df__pgroup *g) {
    df_status why;
    const char *waiting = "?";
    for (int i = 0; i < g->n_steps; i++)
        if (!__atomic_load_n(&g->steps[i].done, __ATOMIC_ACQUIRE)) { waiting = g->steps[i].device->name; break; }
    df_status_set(&why, DF_INTERNAL, "The partitions of this run stopped making progress: the partition on %s "
                  "waits for a value that no other partition will send", waiting);
    df__group_abort(g, &why);
}
static df_code df__group_execute(df__pgroup *g, df_status *st) {
    df_code code = DF_OK;
    int begun = 0;
    for (; begun < g->n_steps; begun++) {
        df_status local;
        if (df__step_begin(&g->steps[begun], &local) != DF_OK) { df__group_abort(g, &local); break; }
    }
    if (begun == g->n_steps)
        for (int i = 0; i < g->n_steps; i++) df__step_roots(&g->steps[i]);
    else
        for (int i = 0; i < begun; i++) {        /* nothing ran: take the roots back */
            g->steps[i].outstanding = 0; g->steps[i].done = 1; df__step_task_done(&g->steps[i]);
        }
#ifndef DF_NO_THREADS
    if (begun == g->n_steps && g->steps[0].threaded) {
        uint64_t seen = 0;
        struct timespec idle_since = {0, 0};
        for (int i = 0; i < g->n_steps; i++)
            while (!df__step_over(&g->steps[i])) {
                df__step_wait_once(&g->steps[i]);
                uint64_t now_progress = __atomic_load_n(&g->progress, __ATOMIC_ACQUIRE);
                if (!df__group_idle(g) || now_progress != seen) { seen = now_progress; idle_since.tv_sec = 0; continue; }
                struct timespec now;
                timespec_get(&now, TIME_UTC);
                if (!idle_since.tv_sec) { idle_since = now; continue; }
                double waited = (double)(now.tv_sec - idle_since.tv_sec) + 1e-9 * (double)(now.tv_nsec - idle_since.tv_nsec);
                if (waited > 0.25 && !g->remote && df__group_idle(g) && __atomic_load_n(&g->progress, __ATOMIC_ACQUIRE) == seen)
                    df__group_hang(g);      /* (a worker's step waits for other processes: no hang check) */
            }
    }
#endif
    if (begun == g->n_steps && !g->steps[0].threaded && !g->remote)
        for (int i = 0; i < g->n_steps; i++)       /* one thread did everything it could */
            if (!g->steps[i].done) { df__group_hang(g); break; }
    for (int i = 0; i < begun; i++) {
        df_status local;
        df_status_clear(&local);
        if (&g->steps[i] != g->steps[i].home) df__step_end(&g->steps[i], &local);
        if (local.code && !code) { *st = local; code = local.code; }
    }
    for (int i = 0; i < begun; i++) {
        df_status local;
        df_status_clear(&local);
        if (&g->steps[i] == g->steps[i].home) df__step_end(&g->steps[i], &local);
        if (local.code && !code) { *st = local; code = local.code; }
    }
    if (g->aborted) { *st = g->status; code = st->code; }
    return code;
}

/* ---- _Send and _Recv: run even when dead, so the dead bit crosses too ---- */
static void df__k_send(df__kctx *c) {
    df__step *s = c->step;
    if (!s->group || c->aux < 0) {
        df__fail(c->st, c->node, DF_FAILED_PRECONDITION, "_Send runs only in a partition the session made");
        return;
    }
    const df__iter *it = c->tag->iter;
    df_tensor *v = NULL;
    if (!c->dead) { v = c->in[0]; c->in[0] = NULL; }        /* the rendezvous takes the reference */
    /* The value goes in the memory its Recv gives out: from a GPU's memory through the host,
       into a GPU's memory from the host (the copy is queued before anything can read it). */
    if (v && c->xfer >= 0 && c->xfer / 2 < s->group->n_steps) {
        df__device *dst = s->group->steps[c->xfer / 2].device;
        int dst_dev = (c->xfer & 1) && !dst->host_memory;
        if (c->gpu && !(dst_dev && dst == s->device)) {
            df_tensor *h = df__to_host(s->device, v, c->st);
            df_tensor_release(v);
            if (!(v = h)) return;
        }
        if (dst_dev && !(c->gpu && dst == s->device)) {
            df_tensor *d = df__to_device(dst, v, c->st);
            df_tensor_release(v);
            if (!(v = d)) return;
        }
    }
    if (s->group->remote) {
        df_status rs;
        df_status_clear(&rs);
        if (df__remote_send(s->group, c->aux, it->frame->id, it->num, v, c->dead || !v, &rs)) {
            if (rs.code) df__fail(c->st, c->node, rs.code, "%s", rs.message);
            return;
        }
    }
    df__wake w;
    if (df__rv_send(&s->group->rv, c->aux, it->frame->id, it->num, v, c->dead || !v, &w, c->st) != DF_OK) return;
    if (w.step) df__wake_dispatch(&w);
}
static void df__k_recv(df__kctx *c) {
    df__step *s = c->step;
    if (!s->group || c->aux < 0) {
        df__fail(c->st, c->node, DF_FAILED_PRECONDITION, "_Recv runs only in a partition the session made");
        return;
    }
    const df__iter *it = c->tag->iter;
    df_tensor *t = NULL;
    int dead = 0;
    int r = df__rv_recv(&s->group->rv, c->aux, it->frame->id, it->num, s, c->tag, &t, &dead, c->st);
    if (r == 0) c->pending = 1;
    else if (r > 0) { c->out[0] = t; c->out_dead = dead; }
}

int df_rendezvous_key(const df_node *n, uint64_t frame_id, int64_t iter, char *buf, size_t size) {
    if (!n || !(n->op->flags & DF__OP_TRANSFER)) return -1;
    return snprintf(buf, buf ? size : 0, "%s;%016llx;%s;%s;%llu:%lld", df__attr_s(n, "send_device"),
                    (unsigned long long)df__attr_i(n, "send_device_incarnation", 0), df__attr_s(n, "recv_device"),
                    df__attr_s(n, "tensor_name"), (unsigned long long)frame_id, (long long)iter);
}

/* ==========================================================================================
   17. PLACER AND PARTITIONER                                                        >>partition
   Runs once per run signature, after the whole pruned graph compiled and validated as one
   executor (its items and static frames are what both passes read).
   Placer: union-find colocation groups (`_class` "loc:@name" entries, ref and resource
   edges), merged device requests, kernels per device type, soft placement; generators go to
   their consumers' device, Shape/Size/Rank to their input's; everything else to the first
   device (or, in the cost-model mode, where a simulation says it would finish first).
   Switch and Exit then follow their data input, Enter and NextIteration their first consumer.
   Partitioner: when more than one device is used, one new graph per device (the caller's graph
   is never touched): each cross-device data edge becomes _Send/_Recv (one Recv per tensor and
   destination), each cross-device control edge an empty Const sent, received and read by an
   Identity. A Recv inside a loop frame fires once per iteration from a control loop (Enter,
   Merge, Switch on the loop's predicate, NextIteration) built on its device, nested loops
   inside their parents' control loops; devices without a cross-device edge in a frame get none.
   ========================================================================================== */
typedef struct df__part {
    df_graph *g;                 /* the partition (owned), or the caller's graph for one device */
    df__exec *x;
    df__device *dev;
    int *feed_map, n_feeds;      /* partition feed k is the run's feed feed_map[k] */
    int *fetch_map, n_fetches;   /* partition fetch k is the run's fetch fetch_map[k] */
    int task, handle;            /* a session with workers: the partition's worker and its handle there */
    char **io_names;             /* and its feeds' and fetches' names there ("node:index") */
} df__part;
typedef struct df__plan {
    df__part *parts;
    int n_parts;
    int owns_graphs;
    int registered;              /* a session with workers: its partitions are registered there */
} df__plan;
struct df__cluster;

/* (the session, whose devices and options placing and partitioning read) */
struct df_session {
    df_graph *g;
    df_session_options opts;
    struct df__cluster *cluster; /* opts.target: the workers */
    df__device **devices;
    int n_devices;
    df__pool *pool;
    df__ipool *ipool;            /* intra-op threads for big kernels (GEMM) */
    df__spin lock;               /* cache and resources */
    df__strmap cache;            /* signature -> index in plans */
    df__plan **plans;
    int n_plans, cap_plans;
    df__plan *last_plan;         /* the plan of the latest run (df_session_partition) */
    df__strmap resources;        /* "v:name" -> var index, "r:name" -> rng index */
    df__var **vars;
    int n_vars, cap_vars;
    uint64_t *rng_counters;
    int n_rng, cap_rng;
    uint64_t seed_salt;
    int ran;
    int64_t gg_stats[4];         /* cuda_graphs: captures, replays, node-by-node runs, failed captures */
};

static void df__plan_free(df__plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_parts; i++) {
        df__exec_free(p->parts[i].x);
        if (p->owns_graphs) df_graph_free(p->parts[i].g);
        DF_FREE(p->parts[i].feed_map);
        DF_FREE(p->parts[i].fetch_map);
        for (int k = 0; p->parts[i].io_names && k < p->parts[i].n_feeds + p->parts[i].n_fetches; k++) DF_FREE(p->parts[i].io_names[k]);
        DF_FREE(p->parts[i].io_names);
    }
    DF_FREE(p->parts);
    DF_FREE(p);
}
/* Sessions with workers (section 21) */
static df_code df__cluster_open(struct df_session *s, df_status *st);
static void df__cluster_close(struct df__cluster *c);
static df_code df__cluster_register(struct df_session *s, df__plan *plan, df_status *st);
static df_code df__cluster_run(struct df_session *s, df__plan *plan, df_tensor *const *feed_values, df_tensor **fetch_values,
                               int n_fetches, df_status *st);

/* ---- placer ---- */
static int df__uf_find(int32_t *parent, int i) {
    while (parent[i] != i) { parent[i] = parent[parent[i]]; i = parent[i]; }
    return i;
}
static void df__uf_union(int32_t *parent, int32_t *rank, int a, int b) {
    a = df__uf_find(parent, a); b = df__uf_find(parent, b);
    if (a == b) return;
    if (rank[a] < rank[b]) { int t = a; a = b; b = t; }
    parent[b] = a;
    if (rank[a] == rank[b]) rank[a]++;
}
/* Item -> output frame: Enter opens its child frame, Exit (and LoopCount) return to the parent. */
static int df__item_out_frame(const df__exec *x, int i) {
    const df__xitem *it = &x->items[i];
    if (it->kind == DF__X_ENTER) return it->child_frame;
    if (it->kind == DF__X_EXIT || it->kind == DF__X_COUNT) return x->frames[it->frame].parent;
    return it->frame;
}
static int df__is_metadata_op(const df__opdef *op) {
    return !strcmp(op->name, "Shape") || !strcmp(op->name, "Size") || !strcmp(op->name, "Rank");
}
/* The kernel a node runs on a device type, with its memory types. On a GPU, a node whose
   inputs and outputs are all integers, booleans, strings or handles runs its CPU kernel with
   every argument in host memory (TensorFlow's int32 rule: shapes, counters and predicates
   stay on the host, so loop control never waits for the device); otherwise the GPU kernel
   runs, and it must support the dtypes of its device-memory arguments. host_only (may be
   NULL) says which of the two. NULL: no kernel. */
static int df__host_dtype(df_dtype t) {
    return t == DF_INT32 || t == DF_INT64 || t == DF_BOOL || t == DF_STRING || t == DF_RESOURCE;
}
#ifdef DATAFLOW_CUDA
static uint32_t df__gg_mask(const struct df__gg *gg, int out);
#endif
static df__kernel_fn df__node_kernel(const df_node *n, int kernel_type, uint32_t *host_in, uint32_t *host_out,
                                     int *host_only) {
    const df__kernel_def *k = &n->op->kernels[kernel_type];
    if (host_only) *host_only = 0;
    if (!k->fn) return NULL;
#ifdef DATAFLOW_CUDA
    if (n->gg) {                                  /* the memory types its members take and make */
        if (host_in) *host_in = df__gg_mask(n->gg, 0);
        if (host_out) *host_out = df__gg_mask(n->gg, 1);
        return k->fn;
    }
#endif
    if (kernel_type == DF__DEV_CPU || (n->op->flags & DF__OP_TRANSFER)) {   /* _Send/_Recv: by name */
        if (kernel_type != DF__DEV_CPU) {
            if (host_in) *host_in = k->host_inputs;
            if (host_out) *host_out = k->host_outputs;
            return k->fn;
        }
        if (host_in) *host_in = ~0u;
        if (host_out) *host_out = ~0u;
        return k->fn;
    }
    int all_host = 1, ok = 1;
    for (int i = 0; i < n->n_inputs; i++) {
        df_dtype t = n->inputs[i].node->out_types[n->inputs[i].index];
        if (!df__host_dtype(t)) all_host = 0;
        uint32_t hin = (k->host_inputs & 0x80000000u) ? (i == n->n_inputs - 1) : k->host_inputs >> DF__MIN(i, 31) & 1;
        if (!hin && k->types && !df__host_dtype(t) && !(k->types >> ((unsigned)t & 31) & 1)) ok = 0;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        df_dtype t = n->out_types[i];
        if (!df__host_dtype(t)) all_host = 0;
        if (!(k->host_outputs >> DF__MIN(i, 31) & 1) && k->types && !df__host_dtype(t) && !(k->types >> ((unsigned)t & 31) & 1)) ok = 0;
    }
    if (all_host) {
        if (host_in) *host_in = ~0u;
        if (host_out) *host_out = ~0u;
        if (host_only) *host_only = 1;
        return n->op->kernels[DF__DEV_CPU].fn;
    }
    if (!ok) return NULL;
    if (host_in) *host_in = (k->host_inputs & 0x80000000u) && n->n_inputs > 0 && n->n_inputs <= 31
                          ? (k->host_inputs & 0x7fffffffu) | 1u << (n->n_inputs - 1) : k->host_inputs;
    if (host_out) *host_out = k->host_outputs;
    return k->fn;
}
static int df__node_has_kernel(const df_node *n, const df__device *d) { return df__node_kernel(n, d->kernel_type, NULL, NULL, NULL) != NULL; }

/* Where colocation groups of `_class` are written: "loc:@a" entries separated by commas or
   spaces (a GraphDef's list(string) arrives joined). Calls fn for each name. */
static int df__class_names(const df_node *n, int (*fn)(void *, const char *, size_t), void *user) {
    const char *c = df__attr_s(n, "_class");
    while (*c) {
        while (*c == ',' || *c == ' ') c++;
        size_t len = 0;
        while (c[len] && c[len] != ',' && c[len] != ' ') len++;
        if (len > 5 && !strncmp(c, "loc:@", 5) && !fn(user, c + 5, len - 5)) return 0;
        c += len;
    }
    return 1;
}
typedef struct df__place_ctx {
    const df__exec *x;
    const df_graph *g;
    const int32_t *item_of_node;
    int32_t *parent, *rank;
    df__devspec *spec;           /* per item: its request, then per group root: the merged one */
    int self;
} df__place_ctx;
static int df__place_colocate(void *user, const char *name, size_t len) {
    df__place_ctx *c = (df__place_ctx *)user;
    char buf[256];
    if (len >= sizeof buf) return 1;
    memcpy(buf, name, len);
    buf[len] = 0;
    const df_node *other = df_graph_find(c->g, buf);
    if (!other) return 1;                      /* TF ignores names it cannot find here too */
    int j = c->item_of_node[other->id];
    if (j >= 0) df__uf_union(c->parent, c->rank, c->self, j);
    else {                                     /* not in this run: its request still binds */
        df__devspec ds;
        if (other->device && df__parse_device(other->device, &ds)) df__devspec_merge(&c->spec[c->self], &ds);
    }
    return 1;
}

/* An item that runs a node of the caller's graph (not a feed or fetch). */
static int df__node_item(const df__exec *x, int i) {
    return x->items[i].node && x->items[i].kind != DF__X_FETCH && x->items[i].kind != DF__X_FEED;
}
static int df__spec_constrained(const df__devspec *s) {
    return s->type[0] || s->index >= 0 || s->job[0] || s->task >= 0 || s->replica >= 0;
}
/* The cost model's time to move a value of this shape to another device: ~2 us, ~8 GB/s. */
static double df__transfer_ns(const df__shape *sh, df_dtype t) {
    int64_t cnt = df__shape_count(sh);
    return 2000.0 + (double)(cnt < 0 ? 4096 : cnt) * (double)df_dtype_size(t) / 8.0;
}
/* A rough cost in nanoseconds of running item i (the cost-model placement). */
static double df__item_cost_ns(const df__exec *x, int i) {
    const df_node *n = x->items[i].node;
    double elems = 1;
    for (int k = 0; k < n->n_outputs; k++) {
        int64_t c = df__shape_count(&n->out_shapes[k]);
        elems += c < 0 ? 1000 : (double)c;
    }
    if (!strcmp(n->op->name, "MatMul") && n->n_inputs == 2) {
        const df__shape *a = &n->inputs[0].node->out_shapes[n->inputs[0].index];
        if (a->rank == 2 && a->dims[1] > 0) elems *= (double)a->dims[1];
    }
    return 100.0 + (double)n->op->cost * elems / 3.0;
}

/* Places every node item of x on one of the session's devices: dev[i] (-1 for feed and fetch
   items). Returns st->code. */
static df_code df__place(df_session *ss, const df__exec *x, int32_t *dev, df_status *st) {
    const df_graph *g = ss->g;
    int n = x->n_items, nd = ss->n_devices;
    int32_t *item_of_node = (int32_t *)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(int32_t));
    int32_t *parent = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    int32_t *rank = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    df__devspec *spec = (df__devspec *)DF_MALLOC((size_t)(n + 1) * sizeof(df__devspec));
    uint32_t *kinds = (uint32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(uint32_t));  /* per root: device kinds all members can run on */
    int32_t *group_dev = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    int32_t *gsize = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));      /* per root: members */
    unsigned char *decided = (unsigned char *)DF_MALLOC((size_t)(n + 1));       /* per root: device fixed */
    double *finish = NULL, *dev_free = NULL;
    df_code code = DF_OK;
    if (!item_of_node || !parent || !rank || !spec || !kinds || !group_dev || !gsize || !decided) goto oom;
    for (int i = 0; i < g->n_nodes; i++) item_of_node[i] = -1;
    for (int i = 0; i < n; i++) {
        parent[i] = i; rank[i] = 0; group_dev[i] = -1; dev[i] = -1;
        const df_node *nd_ = x->items[i].node;
        df__parse_device(NULL, &spec[i]);
        if (!df__node_item(x, i)) continue;
        item_of_node[nd_->id] = i;
        if (nd_->device && *nd_->device && !df__parse_device(nd_->device, &spec[i]))
            { code = df_status_set(st, DF_INVALID_ARGUMENT, "Malformed device specification '%s' {{node %s}}", nd_->device, nd_->name); goto done; }
    }
    /* 1. colocation groups: _class entries, then ref and resource edges */
    df__place_ctx pc = {x, g, item_of_node, parent, rank, spec, 0};
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        pc.self = i;
        df__class_names(a, df__place_colocate, &pc);
        for (int k = 0; k < a->n_inputs; k++) {
            df_output in = a->inputs[k];
            int j = item_of_node[in.node->id];
            if (j < 0) continue;                       /* fed */
            if (df__ref_arg(a->op, k) || in.node->out_types[in.index] == DF_RESOURCE) {
                /* TF: a reference (or resource) connection wins over the consumer's own request */
                df__devspec merged = spec[i];
                if (!df__devspec_merge(&merged, &spec[j])) spec[i] = spec[j];
                df__uf_union(parent, rank, i, j);
            }
        }
    }
    /* 2. merged requests and kernel kinds per group */
    for (int i = 0; i < n; i++) kinds[i] = ~0u;
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        int r = df__uf_find(parent, i);
        uint32_t k = 0;
        for (int t = 0; t < DF__DEV_TYPES; t++) if (df__node_kernel(a, t, NULL, NULL, NULL)) k |= 1u << t;
        kinds[r] &= k;
        if (r == i) continue;
        df__devspec merged = spec[r];
        if (!df__devspec_merge(&merged, &spec[i])) {
            if (ss->opts.soft_placement) continue;           /* the group keeps its first request */
            char s1[96], s2[96];
            df__devspec_str(&spec[r], s1, sizeof s1);
            df__devspec_str(&spec[i], s2, sizeof s2);
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Cannot colocate nodes '%s' and '%s': their device "
                                 "requests '%s' and '%s' are incompatible {{node %s}}", a->name,
                                 x->items[r].node->name, s2, s1, a->name);
            goto done;
        }
        spec[r] = merged;
    }
    /* 3. a device per group: the first (GPUs before CPUs, then by number) that matches the
       request and runs every member's kernel */
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        int r = df__uf_find(parent, i);
        if (group_dev[r] >= 0) continue;
        if (!kinds[r]) {
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Cannot place '%s' and the nodes colocated with it: no "
                                 "device type has a kernel for all of their ops {{node %s}}", a->name, a->name);
            goto done;
        }
        int best = -1, any = -1;
        for (int pass = 0; pass < 2 && best < 0; pass++)
            for (int d = 0; d < nd && best < 0; d++) {
                const df__device *dv = ss->devices[d];
                if ((pass == 0) != (dv->kernel_type == DF__DEV_GPU)) continue;
                if (!(kinds[r] >> dv->kernel_type & 1)) continue;
                if (any < 0) any = d;
                if (df__devspec_matches(&spec[r], dv)) best = d;
            }
        if (best < 0) {
            char req[96];
            df__devspec_str(&spec[r], req, sizeof req);
            if (!ss->opts.soft_placement || any < 0) {
                int exists = 0, ngpu = 0;
                for (int d = 0; d < nd; d++) if (df__devspec_matches(&spec[r], ss->devices[d])) exists = 1;
                for (int d = 0; d < nd; d++) ngpu += ss->devices[d]->kernel_type == DF__DEV_GPU;
                code = df_status_set(st, DF_INVALID_ARGUMENT, "Cannot assign a device for operation %s: could not "
                    "satisfy explicit device specification '%s' because %s (this session has %d CPU device%s and "
                    "%d GPU device%s; set soft_placement to fall back) {{node %s}}", a->name, req, exists ?
                    "no kernel for that device type supports the op (or an op colocated with it)" :
                    "no such device exists here", nd - ngpu, nd - ngpu == 1 ? "" : "s", ngpu, ngpu == 1 ? "" : "s", a->name);
                goto done;
            }
            /* soft placement: the same type with any number, else any device that can run it */
            df__devspec loose = spec[r];
            loose.index = -1;
            for (int d = 0; d < nd && best < 0; d++)
                if ((kinds[r] >> ss->devices[d]->kernel_type & 1) && df__devspec_matches(&loose, ss->devices[d])) best = d;
            if (best < 0) best = any;
        }
        group_dev[r] = best;
        decided[r] = (unsigned char)df__spec_constrained(&spec[r]);
    }
    /* 4. unconstrained nodes refined: metadata follows its input and (cost model) others go
       where they would finish first; a group follows its first member. Then generators alone in
       their group join their consumers when those all share one device. */
    for (int i = 0; i < n; i++) gsize[i] = 0;
    for (int i = 0; i < n; i++) if (df__node_item(x, i)) gsize[df__uf_find(parent, i)]++;
    if (ss->opts.placement == DF_PLACEMENT_COST_MODEL) {
        finish = (double *)DF_MALLOC((size_t)(n + 1) * sizeof(double));
        dev_free = (double *)DF_MALLOC((size_t)(nd + 1) * sizeof(double));
        if (!finish || !dev_free) goto oom;
        for (int d = 0; d < nd; d++) dev_free[d] = 0;
    }
    for (int i = 0; i < n; i++) {               /* (items are in topological order) */
        const df_node *a = x->items[i].node;
        if (!df__node_item(x, i)) continue;
        int r = df__uf_find(parent, i);
        int d = group_dev[r];
        if (!decided[r]) {
            if (gsize[r] == 1 && df__is_metadata_op(a->op) && a->n_inputs) {
                int src = item_of_node[a->inputs[0].node->id];
                if (src >= 0 && dev[src] >= 0 && df__node_has_kernel(a, ss->devices[dev[src]])) d = dev[src];
            } else if (finish) {
                double best_t = 0;
                int best_d = -1;
                for (int c = 0; c < nd; c++) {
                    if (!df__node_has_kernel(a, ss->devices[c])) continue;
                    double start = dev_free[c];
                    for (int k = 0; k < a->n_inputs; k++) {
                        int src = item_of_node[a->inputs[k].node->id];
                        int from = src >= 0 ? dev[src] : 0;          /* feeds arrive on the first device */
                        if (from < 0) continue;
                        double ready = src >= 0 ? finish[src] : 0;
                        if (from != c)
                            ready += df__transfer_ns(&a->inputs[k].node->out_shapes[a->inputs[k].index], df_output_dtype(a->inputs[k]));
                        if (ready > start) start = ready;
                    }
                    double t = start + df__item_cost_ns(x, i);
                    if (c != group_dev[r])                        /* and its results go back, likely */
                        for (int k = 0; k < a->n_outputs; k++) t += df__transfer_ns(&a->out_shapes[k], a->out_types[k]);
                    if (best_d < 0 || t < best_t) { best_t = t; best_d = c; }
                }
                if (best_d >= 0) d = best_d;
            }
            group_dev[r] = d;
            decided[r] = 1;                                /* later members follow */
        }
        dev[i] = d;
        if (finish) {
            double start = dev_free[d];
            for (int k = 0; k < a->n_inputs; k++) {
                int src = item_of_node[a->inputs[k].node->id];
                if (src >= 0 && dev[src] >= 0 && finish[src] > start) start = finish[src];
            }
            finish[i] = start + df__item_cost_ns(x, i);
            dev_free[d] = finish[i];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        const df_node *a = x->items[i].node;
        const df__xitem *it = &x->items[i];
        if (!df__node_item(x, i) || a->n_inputs || a->n_outputs != 1 || a->out_is_ref[0]) continue;
        int r = df__uf_find(parent, i);
        if (gsize[r] != 1 || df__spec_constrained(&spec[r])) continue;
        int d = -1, same = 1;
        for (int e = 0; e < it->n_edges && same; e++) {       /* (control consumers count too) */
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (x->items[ed->dst].kind == DF__X_FETCH) continue;
            int c = dev[ed->dst];
            if (c < 0) continue;
            if (d < 0) d = c; else if (d != c) same = 0;
        }
        if (same && d >= 0 && df__node_has_kernel(a, ss->devices[d])) dev[i] = d;
    }
    /* 5. control flow: Switch and Exit with their data input (forward), non-ref Enter and
       NextIteration with their first data consumer (backward); resource values stay put */
    for (int i = 0; i < n; i++) {
        const df_node *a = x->items[i].node;
        const df__xitem *it = &x->items[i];
        if (!a || it->kind == DF__X_FETCH || it->kind == DF__X_FEED || !a->n_inputs) continue;
        if (!((it->flags & DF__XF_SWITCH) || it->kind == DF__X_EXIT || it->kind == DF__X_COUNT)) continue;
        if (df_output_dtype(a->inputs[0]) == DF_RESOURCE || a->inputs[0].node->out_is_ref[a->inputs[0].index]) continue;
        int src = item_of_node[a->inputs[0].node->id];
        if (src >= 0 && dev[src] >= 0 && df__node_has_kernel(a, ss->devices[dev[src]])) dev[i] = dev[src];
    }
    for (int i = n - 1; i >= 0; i--) {
        const df_node *a = x->items[i].node;
        const df__xitem *it = &x->items[i];
        if (!a || !(it->kind == DF__X_ENTER || it->kind == DF__X_NEXT) || !a->n_inputs) continue;
        if (df_output_dtype(a->inputs[0]) == DF_RESOURCE || a->inputs[0].node->out_is_ref[a->inputs[0].index]) continue;
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot < 0 || x->items[ed->dst].kind == DF__X_FETCH || dev[ed->dst] < 0) continue;
            if (df__node_has_kernel(a, ss->devices[dev[ed->dst]])) dev[i] = dev[ed->dst];
            break;
        }
    }
    goto done;
oom:
    code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory placing the graph");
done:
    DF_FREE(item_of_node); DF_FREE(parent); DF_FREE(rank); DF_FREE(spec); DF_FREE(kinds); DF_FREE(group_dev);
    DF_FREE(gsize); DF_FREE(decided);
    DF_FREE(finish); DF_FREE(dev_free);
    return code;
}

/* ---- partitioner ---- */
typedef struct df__cloop { df_node *merge; } df__cloop;
typedef struct df__pbuild {
    df_session *ss;
    const df__exec *x;
    const int32_t *dev;          /* per item */
    int32_t *part_of_dev;        /* device index -> partition, -1 unused */
    int n_parts;
    df__part *parts;
    df_node **clone;             /* per item */
    const df_output *feeds;
    int n_feeds;
    df_node **feed_ph;           /* [(feed * n_parts + part) * 2 + in host memory] */
    df__strmap recvs;            /* "src_item:out:part" -> recv node index in its partition */
    df__cloop *cloops;           /* [frame * n_parts + part] */
    int32_t *native;             /* [frame * n_parts + part]: a loop variable's Merge there, or -1 */
    df_node **dummy;             /* per partition: the control loops' root input */
    int32_t *loop_cond;          /* per frame: its LoopCond item */
    int n_keys;
    int compress;
    df_status *st;
} df__pbuild;

static int df__pb_oom(df__pbuild *b) {
    if (!b->st->code) df_status_set(b->st, DF_RESOURCE_EXHAUSTED, "Out of memory partitioning the graph");
    return 0;
}
/* Registers a node in a partition graph (the name must be new there). */
static int df__pgraph_add(df_graph *g, df_node *n) {
    if (!df__grow(&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(df_node *))) return 0;
    if (!df__strmap_put(&g->names, n->name, g->n_nodes)) return 0;
    n->id = g->n_nodes;
    n->graph = g;
    g->nodes[g->n_nodes++] = n;
    return 1;
}
/* A copy of src in partition graph g on `device`, inputs unset (NULL) and no control inputs. */
static df_node *df__node_clone(df_graph *g, const df_node *src, const char *device) {
    df_node *n = (df_node *)DF_MALLOC(sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->op = src->op;
    n->name = df__strdup(src->name);
    n->device = df__strdup(device);
    n->n_inputs = src->n_inputs;
    n->n_outputs = src->n_outputs;
    int ok = n->name && n->device;
    if (ok && src->n_inputs) {
        ok = (n->inputs = (df_output *)DF_MALLOC((size_t)src->n_inputs * sizeof(df_output))) != NULL;
        if (ok) memset(n->inputs, 0, (size_t)src->n_inputs * sizeof(df_output));
    }
    if (ok && src->n_outputs) {
        n->out_types = (df_dtype *)DF_MALLOC((size_t)src->n_outputs * sizeof(df_dtype));
        n->out_shapes = (df__shape *)DF_MALLOC((size_t)src->n_outputs * sizeof(df__shape));
        n->out_is_ref = (unsigned char *)DF_MALLOC((size_t)src->n_outputs);
        ok = n->out_types && n->out_shapes && n->out_is_ref;
        if (ok) {
            memcpy(n->out_types, src->out_types, (size_t)src->n_outputs * sizeof(df_dtype));
            memcpy(n->out_shapes, src->out_shapes, (size_t)src->n_outputs * sizeof(df__shape));
            memcpy(n->out_is_ref, src->out_is_ref, (size_t)src->n_outputs);
        }
    }
    if (ok && (n->attrs = (df__attr *)DF_MALLOC((size_t)(src->n_attrs + 1) * sizeof(df__attr))) != NULL) {
        for (int i = 0; i < src->n_attrs && ok; i++) {
            if (!(ok = df__attr_copy(&n->attrs[i], &src->attrs[i]))) df__attr_clear(&n->attrs[i]);
            else n->n_attrs++;
        }
    } else ok = 0;
    if (!ok || !df__pgraph_add(g, n)) { df__node_free(n); return NULL; }
    return n;
}
/* A fresh name in g from a base ("a/b" -> "a/b", then "a/b_1", ...). */
static char *df__pgraph_name(df_graph *g, const char *base) {
    char buf[320];
    snprintf(buf, sizeof buf, "%.300s", base);
    for (int k = 1; df__strmap_get(&g->names, buf, NULL); k++) snprintf(buf, sizeof buf, "%.300s_%d", base, k);
    return df__strdup(buf);
}
/* A new node in partition p through the builder (typechecked, shapes inferred); attrs are set
   by the caller through the returned builder before df__pb_finish. */
static df_op_builder *df__pb_op(df__pbuild *b, int p, const char *op, const char *base) {
    df_graph *g = b->parts[p].g;
    char *name = df__pgraph_name(g, base);
    if (!name) return NULL;
    df_op_builder *ob = df_op_new(g, op, "n");    /* (internal names may start with '_') */
    if (!ob) {
        if (g->status.code && !b->st->code) df_status_set(b->st, DF_INTERNAL, "Partitioning: %s", g->status.message);
        DF_FREE(name);
        return NULL;
    }
    DF_FREE(ob->name);
    ob->name = name;
    ob->raw = 1;
    df_op_set_device(ob, b->parts[p].dev->name);
    return ob;
}
static df_node *df__pb_finish(df__pbuild *b, df_op_builder *ob) {
    df_graph *g = ob ? ob->g : NULL;
    df_node *n = df_op_finish(ob);
    if (!n && !b->st->code) {
        if (g && g->status.code) df_status_set(b->st, g->status.code, "Partitioning: %s", g->status.message);
        else df__pb_oom(b);
    }
    return n;
}
static df_node *df__pb_control_loop_merge(df__pbuild *b, int frame, int p);

/* A _Send (input `in`) or _Recv (output of type t) made directly, without the builder: a big
   graph cut at random makes one of each per crossing edge, and checking them is not needed. */
static int df__attr_set(df__attr *a, const char *name, df__attr_kind kind) {
    memset(a, 0, sizeof *a);
    a->kind = kind;
    return (a->name = df__strdup(name)) != NULL;
}
static df_node *df__pb_xfer_node(df__pbuild *b, int p, int recv, int host, const char *base, df_output in,
                                 df_dtype t, int src_part, int dst_part, const char *tname, int key, int dst_devmem) {
    df_graph *g = b->parts[p].g;
    df_node *n = (df_node *)DF_MALLOC(sizeof *n);
    if (!n) { df__pb_oom(b); return NULL; }
    memset(n, 0, sizeof *n);
    n->op = df__op_lookup(recv ? (host ? "_HostRecv" : "_Recv") : (host ? "_HostSend" : "_Send"));
    n->name = df__pgraph_name(g, base);
    n->device = df__strdup(b->parts[p].dev->name);
    n->attrs = (df__attr *)DF_MALLOC(8 * sizeof(df__attr));
    int ok = n->op && n->name && n->device && n->attrs;
    if (ok && !recv) {
        ok = (n->inputs = (df_output *)DF_MALLOC(sizeof(df_output))) != NULL;
        if (ok) { n->inputs[0] = in; n->n_inputs = 1; }
    } else if (ok) {
        n->out_types = (df_dtype *)DF_MALLOC(sizeof(df_dtype));
        n->out_shapes = (df__shape *)DF_MALLOC(sizeof(df__shape));
        n->out_is_ref = (unsigned char *)DF_MALLOC(1);
        ok = n->out_types && n->out_shapes && n->out_is_ref;
        if (ok) { n->n_outputs = 1; n->out_types[0] = t; n->out_shapes[0].rank = -1; n->out_is_ref[0] = 0; }
    }
    const df__device *sd = b->parts[src_part].dev, *rd = b->parts[dst_part].dev;
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], recv ? "tensor_type" : "T", DF__A_TYPE); n->attrs[n->n_attrs++].u.type = t; }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "tensor_name", DF__A_STRING); n->n_attrs++; ok = ok && (n->attrs[n->n_attrs - 1].u.s = df__strdup(tname)); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "send_device", DF__A_STRING); n->n_attrs++; ok = ok && (n->attrs[n->n_attrs - 1].u.s = df__strdup(sd->name)); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "send_device_incarnation", DF__A_INT); n->attrs[n->n_attrs++].u.i = (int64_t)(sd->incarnation >> 1); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "recv_device", DF__A_STRING); n->n_attrs++; ok = ok && (n->attrs[n->n_attrs - 1].u.s = df__strdup(rd->name)); }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "client_terminated", DF__A_BOOL); n->attrs[n->n_attrs++].u.b = 0; }
    if (ok) { ok = df__attr_set(&n->attrs[n->n_attrs], "_key", DF__A_INT); n->attrs[n->n_attrs++].u.i = key; }
    /* a Send delivers its value in the memory its Recv gives out: partition * 2 + device memory */
    if (ok && !recv) { ok = df__attr_set(&n->attrs[n->n_attrs], "_recv_memory", DF__A_INT); n->attrs[n->n_attrs++].u.i = dst_part * 2 + dst_devmem; }
    if (!ok || !df__pgraph_add(g, n)) { df__node_free(n); df__pb_oom(b); return NULL; }
    return n;
}

/* Memory types: on a device whose memory is not the host's, host-memory arguments of a kernel
   (shapes, predicates) live in host memory; an edge between the two kinds needs a transfer even
   on one device. CPU devices have host memory only. */
static int df__out_on_host(const df_node *n, int out, const df__device *d) {
    uint32_t host_out = ~0u;
    if (d->host_memory || out < 0) return 1;
    df__node_kernel(n, d->kernel_type, NULL, &host_out, NULL);
    return host_out >> DF__MIN(out, 31) & 1;
}
static int df__in_on_host(const df_node *n, int in, const df__device *d) {
    uint32_t host_in = ~0u;
    if (d->host_memory || in < 0) return 1;
    df__node_kernel(n, d->kernel_type, &host_in, NULL, NULL);
    return host_in >> DF__MIN(in, 31) & 1;
}

/* The value of (src item, out) seen from partition p (control: out -1, the Identity whose
   control edge stands for src), made of a Send in src's partition and a Recv in p, one per
   (tensor, partition, memory type); inside a loop frame the Recv fires from p's control loop.
   A pair on one device (memory types differ) has a control edge Send -> Recv. Host-memory
   sides are _HostSend / _HostRecv. */
static df_node *df__pb_recv(df__pbuild *b, int src, int out, int p, int dst_host) {
    const df__exec *x = b->x;
    int q = b->part_of_dev[b->dev[src]];
    const df_node *sn = x->items[src].node;
    int is_ref = out >= 0 && sn->out_is_ref[out];
    int src_host = df__out_on_host(sn, out, b->parts[q].dev);
    int host_send = src_host && !b->parts[q].dev->host_memory, host_recv = dst_host && !b->parts[p].dev->host_memory;
    char key[64];
    snprintf(key, sizeof key, "%d:%d:%d:%d", src, out, p, dst_host);
    int found;
    if (!is_ref && df__strmap_get(&b->recvs, key, &found)) return b->parts[p].g->nodes[found];
    int frame = df__item_out_frame(x, src);
    char base[340], tname[320];
    int k = b->n_keys++;
    snprintf(tname, sizeof tname, "edge_%d_%.280s", k, sn->name);
    df_node *sent = b->clone[src];
    int sent_out = out;
    df_dtype t = out >= 0 ? sn->out_types[out] : DF_FLOAT;
    int cast = out >= 0 && b->compress && t == DF_FLOAT;
    if (out < 0) {                                  /* control: an empty Const after ^src */
        snprintf(base, sizeof base, "%.280s/_ctrl", sn->name);
        df_op_builder *ob = df__pb_op(b, q, "Const", base);
        df_tensor *empty = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){0}, NULL);
        if (!ob || !empty) { df_tensor_release(empty); df__builder_free(ob); df__pb_oom(b); return NULL; }
        df_op_set_attr_tensor(ob, "value", empty);
        df_op_set_attr_type(ob, "dtype", DF_FLOAT);
        df_op_add_control_input(ob, sent);
        df_tensor_release(empty);
        if (!(sent = df__pb_finish(b, ob))) return NULL;
        sent_out = 0;
    } else if (cast) {                              /* float32 crosses as bfloat16 */
        snprintf(base, sizeof base, "%.280s/_to_bf16", sn->name);
        df_op_builder *ob = df__pb_op(b, q, "Cast", base);
        if (!ob) { df__pb_oom(b); return NULL; }
        df_op_add_input(ob, (df_output){sent, out});
        df_op_set_attr_type(ob, "SrcT", DF_FLOAT);
        df_op_set_attr_type(ob, "DstT", DF_BFLOAT16);
        df_op_set_attr_bool(ob, "Truncate", 1);
        if (!(sent = df__pb_finish(b, ob))) return NULL;
        sent_out = 0;
        t = DF_BFLOAT16;
    }
    snprintf(base, sizeof base, "%.280s/_send_%d", sn->name, k);
    int dst_devmem = !dst_host && !b->parts[p].dev->host_memory;
    df_node *send = df__pb_xfer_node(b, q, 0, host_send, base, (df_output){sent, sent_out}, t, q, p, tname, k, dst_devmem);
    if (!send) return NULL;
    df_node *m = NULL;
    if (frame != 0 && !(m = df__pb_control_loop_merge(b, frame, p))) return NULL;
    snprintf(base, sizeof base, "%.280s/_recv_%d", sn->name, k);
    df_node *recv = df__pb_xfer_node(b, p, 1, host_recv, base, (df_output){NULL, 0}, out < 0 ? DF_FLOAT : t, q, p, tname, k, dst_devmem);
    if (!recv) return NULL;
    if ((p == q && !df__node_add_control(recv, send)) ||     /* same device: never before its Send */
        (m && !df__node_add_control(recv, m))) { df__pb_oom(b); return NULL; }
    if (out >= 0) recv->out_shapes[0] = sn->out_shapes[out];
    df_node *result = recv;
    if (out < 0 || cast) {
        snprintf(base, sizeof base, "%.280s/%s_%d", sn->name, out < 0 ? "_ctrl_read" : "_from_bf16", k);
        df_op_builder *ob = df__pb_op(b, p, out < 0 ? "Identity" : "Cast", base);
        if (!ob) { df__pb_oom(b); return NULL; }
        df_op_add_input(ob, (df_output){recv, 0});
        if (cast) {
            df_op_set_attr_type(ob, "SrcT", DF_BFLOAT16);
            df_op_set_attr_type(ob, "DstT", DF_FLOAT);
        }
        if (!(result = df__pb_finish(b, ob))) return NULL;
    }
    if (!is_ref && !df__strmap_put(&b->recvs, key, result->id)) { df__pb_oom(b); return NULL; }
    return result;
}

/* The control loop of `frame` on partition p, made on first use (with its parents'): its
   Merge fires once per iteration of the frame, in step with the device holding the LoopCond. */
static df_node *df__pb_control_loop_merge(df__pbuild *b, int frame, int p) {
    const df__exec *x = b->x;
    df__cloop *cl = &b->cloops[(size_t)frame * (size_t)b->n_parts + (size_t)p];
    if (cl->merge) return cl->merge;
    const df__sframe *sf = &x->frames[frame];
    if (b->loop_cond[frame] < 0) {
        df_status_set(b->st, DF_INVALID_ARGUMENT, "A cross-device loop must have a pivot predicate (a LoopCond): "
                      "frame '%s'", sf->name);
        return NULL;
    }
    /* The device of the LoopCond needs no control loop when one of its loop variables' Merges
       (Enter and NextIteration both local) is there: it fires once in every iteration. */
    int native = b->native[(size_t)frame * (size_t)b->n_parts + (size_t)p];
    if (native >= 0 && b->part_of_dev[b->dev[b->loop_cond[frame]]] == p) return cl->merge = b->clone[native];
    df_output parent_in;
    if (sf->parent == 0) {
        if (!b->dummy[p]) {
            df_op_builder *ob = df__pb_op(b, p, "Const", "_cloop/dummy");
            df_tensor *empty = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){0}, NULL);
            if (!ob || !empty) { df_tensor_release(empty); df__builder_free(ob); df__pb_oom(b); return NULL; }
            df_op_set_attr_tensor(ob, "value", empty);
            df_op_set_attr_type(ob, "dtype", DF_FLOAT);
            df_tensor_release(empty);
            if (!(b->dummy[p] = df__pb_finish(b, ob))) return NULL;
        }
        parent_in = (df_output){b->dummy[p], 0};
    } else {
        df_node *pm = df__pb_control_loop_merge(b, sf->parent, p);
        if (!pm) return NULL;
        parent_in = (df_output){pm, 0};
    }
    char base[340];
    snprintf(base, sizeof base, "_cloop%.280s/Enter", sf->name);
    df_op_builder *ob = df__pb_op(b, p, "Enter", base);
    if (!ob) { df__pb_oom(b); return NULL; }
    df_op_add_input(ob, parent_in);
    df_op_set_attr_string(ob, "frame_name", sf->name);
    df_op_set_attr_int(ob, "parallel_iterations", sf->parallel_iterations);
    df_node *enter = df__pb_finish(b, ob);
    if (!enter) return NULL;
    snprintf(base, sizeof base, "_cloop%.280s/Merge", sf->name);
    if (!(ob = df__pb_op(b, p, "Merge", base))) { df__pb_oom(b); return NULL; }
    df_output two[2] = {{enter, 0}, {enter, 0}};
    df_op_add_input_list(ob, two, 2);
    df_node *merge = df__pb_finish(b, ob);
    if (!merge) return NULL;
    cl->merge = merge;                               /* (the predicate's Recv below uses it) */
    int lc = b->loop_cond[frame];
    df_output pred = b->part_of_dev[b->dev[lc]] == p ? (df_output){b->clone[lc], 0}
                                                      : (df_output){df__pb_recv(b, lc, 0, p, 1), 0};
    if (!pred.node) return NULL;
    snprintf(base, sizeof base, "_cloop%.280s/Switch", sf->name);
    if (!(ob = df__pb_op(b, p, "Switch", base))) { df__pb_oom(b); return NULL; }
    df_op_add_input(ob, (df_output){merge, 0});
    df_op_add_input(ob, pred);
    df_node *sw = df__pb_finish(b, ob);
    if (!sw) return NULL;
    snprintf(base, sizeof base, "_cloop%.280s/NextIteration", sf->name);
    if (!(ob = df__pb_op(b, p, "NextIteration", base))) { df__pb_oom(b); return NULL; }
    df_op_add_input(ob, (df_output){sw, 1});
    df_node *next = df__pb_finish(b, ob);
    if (!next) return NULL;
    merge->inputs[1] = (df_output){next, 0};
    return merge;
}

/* A Placeholder standing for feed f in partition p (every partition reading a fed tensor gets
   the value directly, without a transfer). */
static df_node *df__pb_feed(df__pbuild *b, int f, int p, int host) {
    host = host || b->parts[p].dev->host_memory;
    df_node **slot = &b->feed_ph[((size_t)f * (size_t)b->n_parts + (size_t)p) * 2 + (size_t)host];
    if (*slot) return *slot;
    df_output o = b->feeds[f];
    char base[340];
    snprintf(base, sizeof base, "_feed/%.280s_%d%s", o.node->name, o.index, host ? "" : "_dev");
    df_op_builder *ob = df__pb_op(b, p, "Placeholder", base);
    if (!ob) { df__pb_oom(b); return NULL; }
    df_op_set_attr_type(ob, "dtype", o.node->out_types[o.index]);
    if (!host) df_op_set_attr_bool(ob, "_device_memory", 1);     /* the step copies the value in */
    *slot = df__pb_finish(b, ob);
    if (*slot) (*slot)->out_shapes[0] = o.node->out_shapes[o.index];
    return *slot;
}

static df_code df__pb_compile(df_session *ss, df__part *pt, const df_output *feeds, int n_feeds,
                              df_output *fetches, int n_fetches, int no_switch, df_status *st);
static int df__gg_returns(const df__plan *plan, int p, df_status *st);

/* Cuts x (placed by dev) into one graph and executor per device used. */
static df__plan *df__partition(df_session *ss, const df__exec *x, const int32_t *dev, const df_output *feeds,
                               int n_feeds, const df_output *fetches, int n_fetches, df_status *st) {
    int n = x->n_items, nd = ss->n_devices;
    df__pbuild b;
    memset(&b, 0, sizeof b);
    b.ss = ss; b.x = x; b.dev = dev; b.feeds = feeds; b.n_feeds = n_feeds; b.st = st;
    b.compress = ss->opts.compress_transfers;
    df__plan *plan = (df__plan *)DF_MALLOC(sizeof *plan);
    int32_t *feed_of = NULL;                 /* per item: feed index of a feed item */
    int32_t *item_of_node = NULL;
    df_output **pfeeds = NULL, **pfetches = NULL;
    b.part_of_dev = (int32_t *)DF_MALLOC((size_t)(nd + 1) * sizeof(int32_t));
    b.clone = (df_node **)DF_MALLOC((size_t)(n + 1) * sizeof(df_node *));
    b.loop_cond = (int32_t *)DF_MALLOC((size_t)(x->n_frames + 1) * sizeof(int32_t));
    feed_of = (int32_t *)DF_MALLOC((size_t)(n + 1) * sizeof(int32_t));
    item_of_node = (int32_t *)DF_MALLOC((size_t)(ss->g->n_nodes + 1) * sizeof(int32_t));
    if (!plan || !b.part_of_dev || !b.clone || !b.loop_cond || !feed_of || !item_of_node) goto oom;
    for (int i = 0; i < ss->g->n_nodes; i++) item_of_node[i] = -1;
    for (int i = 0; i < n; i++)
        if (df__node_item(x, i)) item_of_node[x->items[i].node->id] = i;
    memset(plan, 0, sizeof *plan);
    plan->owns_graphs = 1;
    for (int d = 0; d < nd; d++) b.part_of_dev[d] = -1;
    for (int i = 0; i < n; i++) if (dev[i] >= 0) b.part_of_dev[dev[i]] = 0;
    for (int d = 0; d < nd; d++) if (b.part_of_dev[d] == 0) b.part_of_dev[d] = b.n_parts++;
    plan->parts = (df__part *)DF_MALLOC((size_t)b.n_parts * sizeof(df__part));
    b.parts = plan->parts;
    b.feed_ph = (df_node **)DF_MALLOC((size_t)(n_feeds + 1) * (size_t)b.n_parts * 2 * sizeof(df_node *));
    b.cloops = (df__cloop *)DF_MALLOC((size_t)x->n_frames * (size_t)b.n_parts * sizeof(df__cloop));
    b.native = (int32_t *)DF_MALLOC((size_t)x->n_frames * (size_t)b.n_parts * sizeof(int32_t));
    b.dummy = (df_node **)DF_MALLOC((size_t)b.n_parts * sizeof(df_node *));
    pfeeds = (df_output **)DF_MALLOC((size_t)b.n_parts * sizeof(df_output *));
    pfetches = (df_output **)DF_MALLOC((size_t)b.n_parts * sizeof(df_output *));
    if (!plan->parts || !b.feed_ph || !b.cloops || !b.native || !b.dummy || !pfeeds || !pfetches) goto oom;
    for (size_t k = 0; k < (size_t)x->n_frames * (size_t)b.n_parts; k++) b.native[k] = -1;
    for (int i = 0; i < n; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_MERGE || it->n_inputs != 2 || it->n_control_in || dev[i] < 0) continue;
        int enter = 0, next = 0;
        for (int k = 0; k < 2; k++) {
            const df_node *src = it->node->inputs[k].node;
            int j = item_of_node[src->id];
            if (j < 0 || dev[j] != dev[i]) break;
            enter += x->items[j].kind == DF__X_ENTER && !(x->items[j].flags & DF__XF_CONST_ENTER);
            next += x->items[j].kind == DF__X_NEXT;
        }
        size_t slot = (size_t)it->frame * (size_t)b.n_parts + (size_t)b.part_of_dev[dev[i]];
        if (enter == 1 && next == 1 && b.native[slot] < 0) b.native[slot] = i;
    }
    memset(plan->parts, 0, (size_t)b.n_parts * sizeof(df__part));
    plan->n_parts = b.n_parts;
    memset(b.feed_ph, 0, (size_t)(n_feeds + 1) * (size_t)b.n_parts * 2 * sizeof(df_node *));
    memset(b.cloops, 0, (size_t)x->n_frames * (size_t)b.n_parts * sizeof(df__cloop));
    memset(b.dummy, 0, (size_t)b.n_parts * sizeof(df_node *));
    memset(pfeeds, 0, (size_t)b.n_parts * sizeof(df_output *));
    memset(pfetches, 0, (size_t)b.n_parts * sizeof(df_output *));
    for (int d = 0; d < nd; d++) {
        int p = b.part_of_dev[d];
        if (p < 0) continue;
        plan->parts[p].dev = ss->devices[d];
        if (!(plan->parts[p].g = df_graph_new())) goto oom;
    }
    for (int f = 0; f < x->n_frames; f++) b.loop_cond[f] = -1;
    for (int i = 0; i < n; i++) {
        feed_of[i] = -1;
        if (x->items[i].flags & DF__XF_LOOP_COND) b.loop_cond[x->items[i].frame] = i;
        if (x->items[i].kind == DF__X_FEED) feed_of[i] = x->items[i].aux;
    }
    /* 1. every node, on its device */
    for (int i = 0; i < n; i++) {
        b.clone[i] = NULL;
        if (dev[i] < 0) continue;
        df__part *pt = &plan->parts[b.part_of_dev[dev[i]]];
        if (!(b.clone[i] = df__node_clone(pt->g, x->items[i].node, pt->dev->name))) goto oom;
    }
    /* 2. edges, by destination: data inputs in order, then control inputs */
    {
        /* in-edges per destination come from the out-edge lists */
        for (int s = 0; s < n && !st->code; s++) {
            const df__xitem *it = &x->items[s];
            for (int e = 0; e < it->n_edges && !st->code; e++) {
                const df__xedge *ed = &x->edges[it->edge_start + e];
                int d = ed->dst;
                if (x->items[d].kind == DF__X_FETCH) continue;
                int p = b.part_of_dev[dev[d]];
                df_node *dn = b.clone[d];
                if (ed->slot >= 0) {
                    df_output src;
                    /* (analysis made data slots absolute in the frame, except a LoopCount's) */
                    int slot = x->items[d].kind == DF__X_COUNT ? ed->slot : ed->slot - x->items[d].input_start;
                    const df__device *dd = b.parts[p].dev;
                    int dst_host = df__in_on_host(x->items[d].node, slot, dd);
                    if (it->kind == DF__X_FEED) src = (df_output){df__pb_feed(&b, feed_of[s], p, dst_host), 0};
                    else if (dev[s] == dev[d] && df__out_on_host(it->node, ed->src_out, dd) == dst_host)
                        src = (df_output){b.clone[s], ed->src_out};
                    else src = (df_output){df__pb_recv(&b, s, ed->src_out, p, dst_host), 0};
                    if (!src.node) break;
                    dn->inputs[slot] = src;
                } else {
                    df_node *c = it->kind == DF__X_FEED ? df__pb_feed(&b, feed_of[s], p, 1)
                               : dev[s] == dev[d] ? b.clone[s] : df__pb_recv(&b, s, -1, p, 1);
                    if (!c) break;
                    if (!df__node_add_control(dn, c)) goto oom;
                }
            }
        }
    }
    if (st->code) goto fail;
    /* 3. feeds and fetches of each partition, then its executor */
    for (int p = 0; p < b.n_parts; p++) {
        df__part *pt = &plan->parts[p];
        int nf = 0;
        if (!(pfeeds[p] = (df_output *)DF_MALLOC((size_t)(2 * n_feeds + 2) * sizeof(df_output)))) goto oom;
        if (!(pt->feed_map = (int *)DF_MALLOC((size_t)(2 * n_feeds + 2) * sizeof(int)))) goto oom;
        if (!(pfetches[p] = (df_output *)DF_MALLOC((size_t)(n_fetches + 1) * sizeof(df_output)))) goto oom;
        if (!(pt->fetch_map = (int *)DF_MALLOC((size_t)(n_fetches + 1) * sizeof(int)))) goto oom;
        for (int f = 0; f < n_feeds; f++) {
            for (int h = 0; h < 2; h++) {
                df_node *ph = b.feed_ph[((size_t)f * (size_t)b.n_parts + (size_t)p) * 2 + (size_t)h];
                if (ph) { pfeeds[p][nf] = (df_output){ph, 0}; pt->feed_map[nf++] = f; }
            }
        }
        pt->n_feeds = nf;
    }
    for (int i = 0; i < n; i++) {
        const df__xitem *it = &x->items[i];
        if (it->kind != DF__X_FETCH) continue;
        /* the fetch's source: the single in-edge of this item */
        int fetch = it->aux;
        df_output o = fetches[fetch];
        int p = 0, fed = -1;
        df_output src = {NULL, 0};
        for (int f = 0; f < n_feeds; f++) if (feeds[f].node == o.node && feeds[f].index == o.index) fed = f;
        if (fed >= 0) {
            if (!(src.node = df__pb_feed(&b, fed, 0, 1))) goto fail;
            df__part *pt = &plan->parts[0];
            int known = 0;
            for (int k = 0; k < pt->n_feeds; k++) if (pfeeds[0][k].node == src.node) known = 1;
            if (!known) { pfeeds[0][pt->n_feeds] = src; pt->feed_map[pt->n_feeds++] = fed; }
        } else {
            int s = item_of_node[o.node->id];
            if (s < 0) { df_status_set(st, DF_INTERNAL, "Partitioning lost fetch %d", fetch); goto fail; }
            p = b.part_of_dev[dev[s]];
            src = (df_output){b.clone[s], o.index};
        }
        df__part *pt = &plan->parts[p];
        pfetches[p][pt->n_fetches] = src;
        pt->fetch_map[pt->n_fetches++] = fetch;
    }
    int switches = 0, *part_switches = (int *)DF_MALLOC(((size_t)b.n_parts + 1) * sizeof(int));
    if (!part_switches) goto oom;
    for (int p = 0; p < b.n_parts; p++) {      /* (no value may arrive dead: Switches stay inside) */
        part_switches[p] = 0;
        for (int i = 0; i < plan->parts[p].g->n_nodes; i++)
            if (plan->parts[p].g->nodes[i]->op->flags & DF__OP_SWITCH) part_switches[p]++;
        switches += part_switches[p];
    }
    for (int p = 0; p < b.n_parts; p++) {
        df__part *pt = &plan->parts[p];
        if (pt->g->status.code) { df_status_set(st, DF_INTERNAL, "Partitioning: %s", pt->g->status.message); goto fail; }
        int alone = switches == part_switches[p];
        int fuse = alone && ss->opts.cuda_graphs && !pt->dev->host_memory && !df__gg_returns(plan, p, st);
        if (ss->opts.cuda_graphs && !pt->dev->host_memory && !fuse && getenv("DF_CUDA_GRAPHS_DEBUG"))
            fprintf(stderr, "dataflow: no CUDA graph on %s: %s\n", pt->dev->name, alone ? "a value it sends comes back" : "another partition has a Switch");
        if (st->code) { DF_FREE(part_switches); goto fail; }
        if (df__pb_compile(ss, pt, pfeeds[p], pt->n_feeds, pfetches[p], pt->n_fetches, fuse, st) != DF_OK) { DF_FREE(part_switches); goto fail; }
        if (ss->cluster) {                     /* the names a worker finds them by */
            int nio = pt->n_feeds + pt->n_fetches;
            if (!(pt->io_names = (char **)DF_MALLOC(((size_t)nio + 1) * sizeof(char *)))) { DF_FREE(part_switches); goto oom; }
            memset(pt->io_names, 0, ((size_t)nio + 1) * sizeof(char *));
            for (int k = 0; k < nio; k++) {
                df_output o = k < pt->n_feeds ? pfeeds[p][k] : pfetches[p][k - pt->n_feeds];
                size_t len = strlen(o.node->name) + 16;
                if (!(pt->io_names[k] = (char *)DF_MALLOC(len))) { DF_FREE(part_switches); goto oom; }
                snprintf(pt->io_names[k], len, "%s:%d", o.node->name, o.index);
            }
        }
    }
    DF_FREE(part_switches);
    goto done;
oom:
    df__pb_oom(&b);
fail:
    df__plan_free(plan);
    plan = NULL;
done:
    for (int p = 0; pfeeds && p < b.n_parts; p++) DF_FREE(pfeeds[p]);
    for (int p = 0; pfetches && p < b.n_parts; p++) DF_FREE(pfetches[p]);
    DF_FREE(pfeeds); DF_FREE(pfetches);
    DF_FREE(b.part_of_dev); DF_FREE(b.clone); DF_FREE(b.loop_cond); DF_FREE(feed_of); DF_FREE(item_of_node);
    DF_FREE(b.feed_ph); DF_FREE(b.cloops); DF_FREE(b.native); DF_FREE(b.dummy);
    df__strmap_free(&b.recvs);
    return plan;
}

/* ==========================================================================================
   18. SESSION                                                                       >>session
   A session owns its devices, the inter-op pool, the variables and random-number state, and a
   cache of compiled executors keyed by the (feeds, fetches, targets) signature and the graph's
   edit version. Compiling prunes the graph to what the fetches and targets need, replaces fed
   outputs by feed items and runs the static frame analysis. Feeds are never modified.
   ========================================================================================== */

static df__var *df__step_var(df__step *s, const df_node *var_node, df_status *st) {
    struct df_session *ss = s->session;
    const char *shared = df__attr_s(var_node, "shared_name");
    char key[300];
    snprintf(key, sizeof key, "v:%.280s", *shared ? shared : var_node->name);
    df__spin_lock(&ss->lock);
    int idx;
    df__var *v = NULL;
    if (df__strmap_get(&ss->resources, key, &idx)) v = ss->vars[idx];
    else if (df__grow(&ss->vars, &ss->cap_vars, ss->n_vars + 1, sizeof(df__var *)) &&
             (v = (df__var *)DF_MALLOC(sizeof *v)) != NULL) {
        memset(v, 0, sizeof *v);
        v->name = var_node->name;
        v->handle.refs = 1 << 30;
        v->handle.dtype = df__attr_type(var_node, "dtype");
        v->handle.data = df__empty_buffer;
        v->handle.ref = v;
        if (df__strmap_put(&ss->resources, key, ss->n_vars)) ss->vars[ss->n_vars++] = v;
        else { DF_FREE(v); v = NULL; }
    }
    df__spin_unlock(&ss->lock);
    if (!v) df__fail(st, var_node, DF_RESOURCE_EXHAUSTED, "Out of memory creating variable state");
    return v;
}

static uint64_t df__step_rng_next(df__step *s, const df_node *n, uint64_t count) {
    struct df_session *ss = s->session;
    char key[300];
    snprintf(key, sizeof key, "r:%.280s", n->name);
    uint64_t base = 0;
    df__spin_lock(&ss->lock);
    int idx;
    if (!df__strmap_get(&ss->resources, key, &idx)) {
        idx = -1;
        if (df__grow(&ss->rng_counters, &ss->cap_rng, ss->n_rng + 1, sizeof(uint64_t)) &&
            df__strmap_put(&ss->resources, key, ss->n_rng)) {
            idx = ss->n_rng++;
            /* unseeded ops start somewhere different per session; seeded ones at zero */
            int seeded = df__attr_i(n, "seed", 0) || df__attr_i(n, "seed2", 0);
            ss->rng_counters[idx] = seeded ? 0 : df__hash_mix(ss->seed_salt, df__hash_str(n->name)) >> 8;
        }
    }
    if (idx >= 0) { base = ss->rng_counters[idx]; ss->rng_counters[idx] += count; }
    df__spin_unlock(&ss->lock);
    return base;
}

#ifdef DATAFLOW_CUDA
static int df__step_tf32(const df__step *s) { return s && s->session && s->session->opts.allow_tf32; }
#endif

df_session *df_session_new(df_graph *g, const df_session_options *opts, df_status *st) {
    df_status_clear(st);
    if (!g) { df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: graph is NULL"); return NULL; }
    df_session_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.num_cpu_devices < 0 || o.inter_op_threads < 0 || o.intra_op_threads < 0 || o.num_gpu_devices < -1) {
        df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: negative device or thread count");
        return NULL;
    }
#ifdef DATAFLOW_CUDA
    if (o.num_gpu_devices != 0) {
        df_status found;
        int visible = df_cuda_device_count(&found);
        if (found.code) { if (st) *st = found; return NULL; }
        if (o.num_gpu_devices < 0) o.num_gpu_devices = visible;
        else if (o.num_gpu_devices > visible) {
            df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: %d GPU device%s asked for, %d visible",
                          o.num_gpu_devices, o.num_gpu_devices == 1 ? "" : "s", visible);
            return NULL;
        }
    }
#else
    if (o.num_gpu_devices > 0) {
        df_status_set(st, DF_UNIMPLEMENTED, "df_session_new: GPU devices are not available in this build "
                      "(compile dataflow.c with -DDATAFLOW_CUDA and link dataflow_cuda.cu)");
        return NULL;
    }
    o.num_gpu_devices = 0;
#endif
    if (o.num_gpu_devices > 16) { df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: at most 16 GPU devices"); return NULL; }
    if (o.target && *o.target && (o.num_gpu_devices > 0 || opts->num_cpu_devices > 0)) {
        df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: with a target, the devices are the workers'; num_cpu_devices and num_gpu_devices must be 0");
        return NULL;
    }
    if (o.num_cpu_devices == 0) o.num_cpu_devices = 1;
    if (o.num_cpu_devices > 64) { df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: at most 64 CPU devices"); return NULL; }
    if (o.inter_op_threads == 0) o.inter_op_threads = df__num_cores();
    if (o.intra_op_threads == 0) o.intra_op_threads = df__num_cores();
    if (o.inter_op_threads > 256) o.inter_op_threads = 256;
    df_session *s = (df_session *)DF_MALLOC(sizeof *s);
    if (!s) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a session"); return NULL; }
    memset(s, 0, sizeof *s);
    s->g = g;
    s->opts = o;
    s->seed_salt = df__hash_mix((uint64_t)time(NULL), (uint64_t)(uintptr_t)s);
    if (o.target && *o.target) {              /* the workers' devices, and no local one */
        if (df__cluster_open(s, st) != DF_OK) { df_session_free(s); return NULL; }
        o.num_cpu_devices = 0;
    } else if (!(s->devices = (df__device **)DF_MALLOC((size_t)(o.num_cpu_devices + o.num_gpu_devices) * sizeof(df__device *)))) {
        DF_FREE(s); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a session"); return NULL;
    }
    for (int i = 0; i < o.num_cpu_devices; i++) {
        if (!(s->devices[i] = df__device_new_cpu(i, o.memory_limit, st))) { df_session_free(s); return NULL; }
        s->n_devices++;
    }
#ifdef DATAFLOW_CUDA
    for (int i = 0; i < o.num_gpu_devices; i++) {
        if (!(s->devices[s->n_devices] = df__device_new_gpu(i, o.memory_limit, st))) { df_session_free(s); return NULL; }
        s->n_devices++;
    }
#endif
#ifndef DF_NO_THREADS
    if (o.inter_op_threads > 1 && !o.deterministic) {
        s->pool = df__pool_new(o.inter_op_threads - 1);
        if (!s->pool) { df_session_free(s); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the thread pool"); return NULL; }
    }
    if (o.intra_op_threads > 1 && !o.deterministic) {
        s->ipool = df__ipool_new(DF__MIN(o.intra_op_threads, 256) - 1);
        if (!s->ipool) { df_session_free(s); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the intra-op threads"); return NULL; }
    }
#endif
    g->n_sessions++;
    return s;
}

void df_session_free(df_session *s) {
    if (!s) return;
    df__cluster_close(s->cluster);
#ifndef DF_NO_THREADS
    df__pool_free(s->pool);
    df__ipool_free(s->ipool);
#endif
    for (int i = 0; i < s->n_plans; i++) df__plan_free(s->plans[i]);
    DF_FREE(s->plans);
    df__strmap_free(&s->cache);
    for (int i = 0; i < s->n_vars; i++) { df_tensor_release(s->vars[i]->value); DF_FREE(s->vars[i]); }
    DF_FREE(s->vars);
    DF_FREE(s->rng_counters);
    df__strmap_free(&s->resources);
    for (int i = 0; i < s->n_devices; i++) df__device_free(s->devices[i]);
    DF_FREE(s->devices);
    if (s->g && s->g->n_sessions > 0) s->g->n_sessions--;
    DF_FREE(s);
}

void df_session_cuda_graph_stats(df_session *s, df_cuda_graph_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!s) return;
    out->captures = __atomic_load_n(&s->gg_stats[0], __ATOMIC_RELAXED);
    out->replays = __atomic_load_n(&s->gg_stats[1], __ATOMIC_RELAXED);
    out->eager_runs = __atomic_load_n(&s->gg_stats[2], __ATOMIC_RELAXED);
    out->failed_captures = __atomic_load_n(&s->gg_stats[3], __ATOMIC_RELAXED);
}

int df_session_num_partitions(df_session *s) {
    df__plan *p = s ? __atomic_load_n(&s->last_plan, __ATOMIC_ACQUIRE) : NULL;
    return p ? p->n_parts : 0;
}
const df_graph *df_session_partition(df_session *s, int i, const char **device) {
    df__plan *p = s ? __atomic_load_n(&s->last_plan, __ATOMIC_ACQUIRE) : NULL;
    if (!p || i < 0 || i >= p->n_parts) { if (device) *device = NULL; return NULL; }
    if (device) *device = p->parts[i].dev->name;
    return p->parts[i].g;
}
int df_session_device_alloc_stats(df_session *s, int device, df_alloc_stats *out) {
    if (!s || device < 0 || device >= s->n_devices || !out) return 0;
    df_bfc_get_stats(s->devices[device]->alloc->bfc, out);
    return 1;
}

/* Feed lookup: feed index of (node id, output) or -1. first_feed[id] chains feeds of a node. */
static int df__feed_index(const int *first_feed, const int *next_feed, const df_output *feeds, df_output o) {
    for (int f = first_feed[o.node->id]; f >= 0; f = next_feed[f])
        if (feeds[f].index == o.index) return f;
    return -1;
}

static df__exec *df__compile(df_session *ss, df_graph *g, const df_output *feeds, int n_feeds, const df_output *fetches,
                             int n_fetches, df_node *const *targets, int n_targets, const df__device *dev, df_status *st) {
    DF__UNUSED(ss);
    int devmem = dev && !dev->host_memory;       /* kernels of dev's type, memory types apply */
    int nn = g->n_nodes;
    df__exec *x = (df__exec *)DF_MALLOC(sizeof *x);
    int *item_of = (int *)DF_MALLOC((size_t)(nn + 1) * sizeof(int));
    int *first_feed = (int *)DF_MALLOC((size_t)(nn + 1) * sizeof(int));
    int *next_feed = (int *)DF_MALLOC((size_t)(n_feeds + 1) * sizeof(int));
    int *feed_item = (int *)DF_MALLOC((size_t)(n_feeds + 1) * sizeof(int));
    int32_t *stack = (int32_t *)DF_MALLOC((size_t)(nn + 1) * sizeof(int32_t));
    int32_t *deg = NULL;
    if (!x || !item_of || !first_feed || !next_feed || !feed_item || !stack) goto oom;
    memset(x, 0, sizeof *x);
    for (int i = 0; i < nn; i++) { item_of[i] = -1; first_feed[i] = -1; }
    for (int f = 0; f < n_feeds; f++) { next_feed[f] = first_feed[feeds[f].node->id]; first_feed[feeds[f].node->id] = f; feed_item[f] = -1; }
    /* 1. prune: walk back from fetches and targets, stopping at fed outputs */
    int sp = 0, n_items = 0;
    for (int i = 0; i < n_fetches; i++)
        if (df__feed_index(first_feed, next_feed, feeds, fetches[i]) < 0 && item_of[fetches[i].node->id] == -1) {
            item_of[fetches[i].node->id] = -2;
            stack[sp++] = fetches[i].node->id;
        }
    for (int i = 0; i < n_targets; i++)
        if (item_of[targets[i]->id] == -1) { item_of[targets[i]->id] = -2; stack[sp++] = targets[i]->id; }
    while (sp) {
        const df_node *n = g->nodes[stack[--sp]];
        item_of[n->id] = n_items++;
        for (int i = 0; i < n->n_inputs; i++) {
            df_output in = n->inputs[i];
            if (df__feed_index(first_feed, next_feed, feeds, in) >= 0) continue;
            if (item_of[in.node->id] == -1) { item_of[in.node->id] = -2; stack[sp++] = in.node->id; }
        }
        for (int i = 0; i < n->n_controls; i++) {
            /* a control edge from a node whose first output is fed comes from the feed (TF) */
            if (df__feed_index(first_feed, next_feed, feeds, (df_output){n->controls[i], 0}) >= 0) continue;
            if (item_of[n->controls[i]->id] == -1) { item_of[n->controls[i]->id] = -2; stack[sp++] = n->controls[i]->id; }
        }
    }
    /* feed items for fed outputs that something reads */
    for (int i = 0; i < nn; i++) {
        if (item_of[i] < 0) continue;
        const df_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int f = df__feed_index(first_feed, next_feed, feeds, n->inputs[k]);
            if (f >= 0 && feed_item[f] < 0) feed_item[f] = n_items++;
        }
        for (int k = 0; k < n->n_controls; k++) {
            int f = df__feed_index(first_feed, next_feed, feeds, (df_output){n->controls[k], 0});
            if (f >= 0 && feed_item[f] < 0) feed_item[f] = n_items++;
        }
    }
    for (int i = 0; i < n_fetches; i++) {
        int f = df__feed_index(first_feed, next_feed, feeds, fetches[i]);
        if (f >= 0 && feed_item[f] < 0) feed_item[f] = n_items++;
    }
    int fetch_base = n_items;
    n_items += n_fetches;
    x->n_items = n_items;
    x->items = (df__xitem *)DF_MALLOC((size_t)(n_items + 1) * sizeof(df__xitem));
    deg = (int32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(int32_t));
    if (!x->items || !deg) goto oom;
    memset(x->items, 0, (size_t)(n_items + 1) * sizeof(df__xitem));
    if (devmem) {
        if (!(x->host_out = (uint32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(uint32_t)))) goto oom;
        for (int i = 0; i <= n_items; i++) x->host_out[i] = ~0u;
    }
    for (int i = 0; i < nn; i++) {
        if (item_of[i] < 0) continue;
        const df_node *n = g->nodes[i];
        df__xitem *it = &x->items[item_of[i]];
        unsigned f = n->op->flags;
        it->node = n;
        it->kernel = n->op->kernels[DF__DEV_CPU].fn;
        if (devmem) {
            uint32_t host_out = ~0u;
            int host_only = 0;
            if (!(it->kernel = df__node_kernel(n, dev->kernel_type, NULL, &host_out, &host_only))) {
                df_status_set(st, DF_INTERNAL, "No %s kernel for op %s (placed on %s) {{node %s}}", dev->type, n->op->name,
                              dev->name, n->name);
                goto fail;
            }
            x->host_out[item_of[i]] = host_only ? ~0u : host_out;
        }
        it->cost = (uint8_t)DF__MIN(n->op->cost, 255.0f);
        it->n_inputs = n->n_inputs;
        it->n_outputs = n->n_outputs;
        it->n_control_in = n->n_controls;
        it->kind = (f & DF__OP_MERGE) ? DF__X_MERGE : (f & DF__OP_ENTER) ? DF__X_ENTER
                 : (f & DF__OP_LOOP_COUNT) ? DF__X_COUNT : (f & DF__OP_EXIT) ? DF__X_EXIT
                 : (f & DF__OP_NEXT_ITERATION) ? DF__X_NEXT : DF__X_NORMAL;
        if ((f & DF__OP_ENTER) && df__attr_b(n, "is_constant", 0)) it->flags |= DF__XF_CONST_ENTER;
        if (f & DF__OP_CONTROL_TRIGGER) it->flags |= DF__XF_CTRL_TRIGGER;
        if (f & DF__OP_EXPENSIVE) {
            /* Known-small static inputs (scalars in loops, say) never make a node worth a thread. */
            int64_t work = 0;
            for (int k = 0; k < n->n_inputs && work >= 0; k++) {
                int64_t c = df__shape_count(&n->inputs[k].node->out_shapes[n->inputs[k].index]);
                work = c < 0 ? -1 : work + c;
            }
            if (work < 0 || work >= 4096 || strstr(n->op->name, "MatMul")) it->flags |= DF__XF_EXPENSIVE;
        }
        if (f & DF__OP_SWITCH) it->flags |= DF__XF_SWITCH;
        if (f & DF__OP_TRANSFER) {
            it->flags |= DF__XF_TRANSFER;
            it->aux = (int32_t)df__attr_i(n, "_key", -1);
            it->child_frame = (int32_t)df__attr_i(n, "_recv_memory", -1);
        }
        if (f & DF__OP_LOOP_COND) it->flags |= DF__XF_LOOP_COND;
        if (!strcmp(n->op->name, "MatMul")) it->flags |= DF__XF_MATMUL;
        if (it->kernel == df__k_noop) it->flags |= DF__XF_NO_KERNEL;
        if (!(f & DF__OP_ALLOWS_UNINIT))
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k].node->out_is_ref[n->inputs[k].index]) it->flags |= DF__XF_DEREF;
    }
    for (int f = 0; f < n_feeds; f++) {
        if (feed_item[f] < 0) continue;
        df__xitem *it = &x->items[feed_item[f]];
        it->kind = DF__X_FEED; it->n_outputs = 1; it->aux = f;
        if (devmem && df__attr_b(feeds[f].node, "_device_memory", 0)) it->flags |= DF__XF_DEVICE_VALUE;
    }
    for (int i = 0; i < n_fetches; i++) {
        df__xitem *it = &x->items[fetch_base + i];
        it->kind = DF__X_FETCH; it->n_inputs = 1; it->aux = i;
        it->node = fetches[i].node; it->child_frame = fetches[i].index;
        if (devmem && !df__out_on_host(fetches[i].node, fetches[i].index, dev)) it->flags |= DF__XF_DEVICE_VALUE;
    }
    /* 2. out-edges (CSR): count per source, then fill; data edges carry the local input slot */
    x->n_feeds = n_feeds;
    x->n_fetches = n_fetches;
    int n_edges = 0;
    for (int i = 0; i < n_items; i++) deg[i] = 0;
#define DF__SRC_ITEM(o, fidx) ((fidx) >= 0 ? feed_item[fidx] : item_of[(o).node->id])
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nn; i++) {
            if (item_of[i] < 0) continue;
            const df_node *n = g->nodes[i];
            for (int k = 0; k < n->n_inputs; k++) {
                int fi = df__feed_index(first_feed, next_feed, feeds, n->inputs[k]);
                int src = DF__SRC_ITEM(n->inputs[k], fi);
                if (pass == 0) { deg[src]++; n_edges++; continue; }
                df__xedge *e = &x->edges[x->items[src].edge_start + x->items[src].n_edges++];
                e->dst = item_of[i]; e->slot = k; e->src_out = (uint16_t)(fi >= 0 ? 0 : n->inputs[k].index);
            }
            for (int k = 0; k < n->n_controls; k++) {
                int fc = df__feed_index(first_feed, next_feed, feeds, (df_output){n->controls[k], 0});
                int src = fc >= 0 ? feed_item[fc] : item_of[n->controls[k]->id];
                if (pass == 0) { deg[src]++; n_edges++; continue; }
                df__xedge *e = &x->edges[x->items[src].edge_start + x->items[src].n_edges++];
                e->dst = item_of[i]; e->slot = -1; e->src_out = 0;
            }
        }
        for (int i = 0; i < n_fetches; i++) {
            int fi = df__feed_index(first_feed, next_feed, feeds, fetches[i]);
            int src = DF__SRC_ITEM(fetches[i], fi);
            if (pass == 0) { deg[src]++; n_edges++; continue; }
            df__xedge *e = &x->edges[x->items[src].edge_start + x->items[src].n_edges++];
            e->dst = fetch_base + i; e->slot = 0; e->src_out = (uint16_t)(fi >= 0 ? 0 : fetches[i].index);
        }
        if (pass == 0) {
            x->edges = (df__xedge *)DF_MALLOC((size_t)(n_edges + 1) * sizeof(df__xedge));
            if (!x->edges) goto oom;
            x->n_edges = n_edges;
            int at = 0;
            for (int i = 0; i < n_items; i++) { x->items[i].edge_start = at; x->items[i].n_edges = 0; at += deg[i]; }
        }
    }
#undef DF__SRC_ITEM
    /* Data edges before control edges within each source: TF's order, and what `need` uses. */
    for (int i = 0; i < n_items; i++) {
        df__xitem *it = &x->items[i];
        for (int e = 0; e < it->n_edges; e++) {
            const df__xedge *ed = &x->edges[it->edge_start + e];
            if (ed->slot >= 0) it->need |= ed->src_out >= 31 ? 0x80000000u : 1u << ed->src_out;
        }
        if (it->n_outputs > 31 && (it->need & 0x80000000u)) it->need = 0xffffffffu;
    }
    /* 3. frames, validation, layout */
    if (df__analyze_frames(x, st) != DF_OK) goto fail;
    /* 4. roots */
    x->roots = (int32_t *)DF_MALLOC((size_t)(n_items + 1) * sizeof(int32_t));
    if (!x->roots) goto oom;
    for (int i = 0; i < n_items; i++)
        if (x->items[i].n_inputs + x->items[i].n_control_in == 0) x->roots[x->n_roots++] = i;
    DF_FREE(item_of); DF_FREE(first_feed); DF_FREE(next_feed); DF_FREE(feed_item); DF_FREE(stack); DF_FREE(deg);
    return x;
oom:
    df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory compiling the graph for a run");
fail:
    DF_FREE(item_of); DF_FREE(first_feed); DF_FREE(next_feed); DF_FREE(feed_item); DF_FREE(stack); DF_FREE(deg);
    df__exec_free(x);
    return NULL;
}

#ifdef DATAFLOW_CUDA
/* ==========================================================================================
   CUDA GRAPHS (df_session_options.cuda_graphs)                                      >>cugraph
   A GPU partition of a run without control flow (no Switch anywhere in the plan, so no value
   can arrive dead) becomes one _GpuGraph node: its inputs are the values the partition
   receives (Recvs, feeds), its outputs the values it sends or fetches, and it holds the
   partition's other nodes in a topological order. Its kernel runs them one after another (the
   executor's work without the executor), and on the second step whose inputs are alike (dtypes,
   shapes, memory; bytes for host-memory inputs such as shapes) captures their launches as a
   CUDA graph, which later steps replay: the inputs are copied into the buffers the graph reads,
   one launch does the rest. Every buffer the capture touched stays the graph's (memory freed
   while capturing is held, not given back), so replays never write memory others use. A step
   whose inputs differ, or whose variables were replaced (Assign makes a new tensor), captures
   again (at most DF__GG_RECAPTURES times; then, and after a failed capture, the partition runs
   node by node for good). A capture fails where a kernel copies to the host or waits: what
   cannot be captured is run.
   ========================================================================================== */
enum { DF__GG_RECAPTURES = 8, DF__GG_SMALL = 16 };
typedef struct df__gg_src { int32_t node, out; } df__gg_src;   /* node -1: the graph node's input `out` */
typedef struct df__gg_sig { df_dtype dtype; int rank, host; int64_t dims[DF_MAX_RANK]; df_tensor *bytes; const void *ref; } df__gg_sig;
typedef struct df__gg {
    df__device *dev;
    int n_nodes, n_in, n_out, n_values;
    const df_node **nodes;           /* the partition's nodes it runs, in a topological order */
    df__kernel_fn *kernels;
    uint32_t *host_out, *need;       /* per node: outputs in host memory (~0u: a host kernel); consumed */
    int32_t *in_start, *val_start;   /* per node: its first source in srcs, its first value */
    int32_t *pair;                   /* per node: a Recv's Send (a pair within the device) */
    df__exec *sub;                   /* with loops: the nodes' own executor */
    struct df__gg_loop *loop;        /* or a while loop with a GPU predicate: its plan */
    int max_io;                      /* the most inputs or outputs of a node */
    df__gg_src *srcs, *outs;
    int32_t *uses;                   /* per value: reads by nodes and graph outputs */
    uint32_t host_in, host_out_mask; /* the graph node's inputs and outputs in host memory */
    int busy;                        /* taken by compare-and-swap: the capture state below */
    int alike, recaptures, off;
    df__gg_sig *sig;                 /* the last step's inputs */
    void *exec;                      /* the captured graph */
    df_tensor **static_in;           /* device-memory inputs: the buffers the graph reads */
    df_tensor **static_out;
    unsigned char *out_owned;        /* in the graph's memory: replayed only when nobody else holds it */
    int32_t *out_idle;               /* its references when only the graph holds it */
    df__hold held;                   /* device memory freed while capturing */
    struct df__gg_var { df__var *v; const df_tensor *value; const void *data; } *vars;
    int n_vars, cap_vars;
} df__gg;

static uint32_t df__gg_mask(const df__gg *gg, int out) { return out ? gg->host_out_mask : gg->host_in; }
static void df__gg_loop_free(struct df__gg_loop *L);
static void df__gg_drop(df__gg *gg) {      /* forgets the captured graph and what it holds */
    if (gg->exec) df_cuda_graph_free((df_cuda *)gg->dev->gpu, gg->exec);
    gg->exec = NULL;
    for (int j = 0; j < gg->n_in; j++) { df_tensor_release(gg->static_in[j]); gg->static_in[j] = NULL; }
    for (int j = 0; j < gg->n_out; j++) { df_tensor_release(gg->static_out[j]); gg->static_out[j] = NULL; }
    for (int i = 0; i < gg->held.n; i++) df_tensor_release(gg->held.v[i]);
    gg->held.n = 0; gg->held.failed = 0;
    gg->n_vars = 0;
}
static void df__gg_free(df__gg *gg) {
    if (!gg) return;
    if (gg->static_in) df__gg_drop(gg);
    for (int j = 0; gg->sig && j < gg->n_in; j++) df_tensor_release(gg->sig[j].bytes);
    DF_FREE(gg->nodes); DF_FREE(gg->kernels); DF_FREE(gg->host_out); DF_FREE(gg->need); DF_FREE(gg->in_start);
    df__exec_free(gg->sub);
    df__gg_loop_free(gg->loop);
    DF_FREE(gg->val_start); DF_FREE(gg->pair); DF_FREE(gg->srcs); DF_FREE(gg->outs); DF_FREE(gg->uses); DF_FREE(gg->sig);
    DF_FREE(gg->static_in); DF_FREE(gg->static_out); DF_FREE(gg->out_owned); DF_FREE(gg->out_idle); DF_FREE(gg->held.v); DF_FREE(gg->vars);
    DF_FREE(gg);
}

/* Whether the inputs are like the last step's; records them as the last step's when `keep`. */
static int df__gg_alike(df__gg *gg, df_tensor *const *in, int keep, df_status *st) {
    int same = 1;
    for (int j = 0; j < gg->n_in; j++) {
        const df_tensor *t = in[j];
        df__gg_sig *s = &gg->sig[j];
        int host = df__tensor_gpu(t) == NULL;
        if (t->ref || s->ref) { if (s->ref != (const void *)t->ref) same = 0; continue; }   /* a variable: the same one */
        if (s->dtype != t->dtype || s->rank != t->rank || s->host != host ||
            memcmp(s->dims, t->dims, (size_t)t->rank * sizeof(int64_t)) ||
            (host && (!s->bytes || s->bytes->nbytes != t->nbytes || memcmp(s->bytes->data, t->data, t->nbytes))))
            same = 0;
    }
    if (same || !keep) return same;
    for (int j = 0; j < gg->n_in; j++) {
        const df_tensor *t = in[j];
        df__gg_sig *s = &gg->sig[j];
        s->ref = t->ref;
        if (t->ref) continue;
        s->dtype = t->dtype; s->rank = t->rank; s->host = df__tensor_gpu(t) == NULL;
        memcpy(s->dims, t->dims, (size_t)t->rank * sizeof(int64_t));
        df_tensor_release(s->bytes);
        s->bytes = NULL;
        if (s->host && t->dtype != DF_STRING) {
            if (!(s->bytes = df__tensor_alloc(NULL, t->dtype, t->rank, t->dims, st))) { s->rank = -1; return 0; }
            memcpy(s->bytes->data, t->data, t->nbytes);
        } else if (s->host) s->rank = -1;                     /* strings: never alike */
    }
    return 0;
}

/* A variable the capture reads: its tensor and buffer as the capture found them, before any
   node ran (not retained: a reference would make the Apply ops copy the value aside). */
static int df__gg_note_var(df__gg *gg, df__var *v) {
    for (int i = 0; i < gg->n_vars; i++) if (gg->vars[i].v == v) return 1;
    if (!df__grow(&gg->vars, &gg->cap_vars, gg->n_vars + 1, sizeof *gg->vars)) return 0;
    df__spin_lock(&v->lock);
    gg->vars[gg->n_vars].v = v;
    gg->vars[gg->n_vars].value = v->value;
    gg->vars[gg->n_vars].data = v->value ? v->value->data : NULL;
    df__spin_unlock(&v->lock);
    gg->n_vars++;
    return 1;
}

/* Runs the nodes in order on `in` into outs (new references): the executor's work for a node
   (dereferenced variables, the kernel, the output checks) without its bookkeeping. While
   capturing (`record`), the variables read are noted. */
static int df__gg_run_sub(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record) {
    df_status *st = c->st;
    for (int j = 0; record && j < gg->n_in; j++)
        if (in[j]->ref && !df__gg_note_var(gg, in[j]->ref)) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"), 0;
    for (int p = 0; record && p < gg->n_nodes; p++)
        if (!strcmp(gg->nodes[p]->op->name, "VariableV2")) {
            df__var *v = df__step_var(c->step, gg->nodes[p], st);
            if (!v || !df__gg_note_var(gg, v)) { if (!st->code) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return 0; }
        }
    df__step step;
    memset(&step, 0, sizeof step);
    step.x = gg->sub;
    step.session = c->step->session;
    step.device = gg->dev;
    step.feeds = in;
    step.fetches = outs;
    step.ipool = c->ipool;
    for (int j = 0; j < gg->n_out; j++) outs[j] = NULL;
    if (df__execute(&step, st) == DF_OK) return 1;
    for (int j = 0; j < gg->n_out; j++) { df_tensor_release(outs[j]); outs[j] = NULL; }
    return 0;
}
/* Runs node i of the graph's order: its inputs from `in` (the graph node's) and `vals` (the
   members' values so far), its outputs into vals (new references). kin and kout: room for the
   node's arguments. While capturing (`record`), the variables read are noted. */
static int df__gg_node(df__kctx *c, df__gg *gg, int i, df_tensor *const *in, df_tensor **vals, df_tensor **kin, df_tensor **kout, int record) {
    df_status *st = c->st;
    const df_node *n = gg->nodes[i];
    const df__gg_src *src = gg->srcs + gg->in_start[i];
    int ni = n->n_inputs, no = n->n_outputs, ok = 1;
    for (int k = 0; k < ni; k++) kin[k] = NULL;
    for (int k = 0; k < no; k++) kout[k] = NULL;
    for (int k = 0; ok && k < ni; k++) {
        df_tensor *t = src[k].node < 0 ? in[src[k].out] : vals[gg->val_start[src[k].node] + src[k].out];
        if (!t) { ok = 0; df__fail(st, n, DF_INTERNAL, "Input %d of %s has no value in its GPU graph", k, n->name); break; }
        kin[k] = df_tensor_retain(t);
        if (t->ref && record && !df__gg_note_var(gg, t->ref)) { ok = 0; df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
        if (ok && t->ref && !df__ref_arg(n->op, k) && !(kin[k] = df__deref(kin[k], n, st))) ok = 0;
    }
    if (ok && (n->op->flags & DF__OP_TRANSFER)) {
        /* a pair within the device: the Send keeps nothing, its Recv fills device memory
           with the Send's value element by element (the bytes travel in the launches) */
        if (n->op->flags & DF__OP_RECV) {
            int sp = gg->pair[i];
            const df__gg_src *ss = gg->srcs + gg->in_start[sp];
            const df_tensor *h = ss->node < 0 ? in[ss->out] : vals[gg->val_start[ss->node] + ss->out];
            size_t es = df_dtype_size(h ? h->dtype : DF_FLOAT);
            if (!h || !(kout[0] = df__tensor_alloc(gg->dev->alloc, h->dtype, h->rank, h->dims, st))) ok = 0;
            for (int64_t e = 0; ok && e < h->n; e++)
                if (df_cuda_fill((df_cuda *)gg->dev->gpu, (char *)kout[0]->data + e * es, 1, es, (const char *)h->data + e * es, st)) ok = 0;
        }
    } else if (ok) {
        df__kctx k;
        memset(&k, 0, sizeof k);
        k.in = kin; k.out = kout; k.node = n; k.n_in = ni; k.n_out = no; k.need = gg->need[i];
        k.alloc = gg->dev->alloc; k.step = c->step; k.st = st; k.ipool = c->ipool; k.dev = gg->dev;
        k.host_out = gg->host_out[i];
        k.gpu = k.host_out == ~0u ? NULL : gg->dev->gpu;
        if (k.host_out == ~0u && !(k.alloc = df__host_allocator())) {
            ok = 0;
            df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making the host allocator");
        } else {
            gg->dev->ops->run_kernel(gg->dev, gg->kernels[i], &k);
            ok = !st->code && df__check_outputs(n, kout, no, gg->need[i], st) == DF_OK;
        }
    }
    for (int k = 0; k < ni; k++) df_tensor_release(kin[k]);
    for (int o = 0; o < no; o++) {
        if (ok) { df_tensor_release(vals[gg->val_start[i] + o]); vals[gg->val_start[i] + o] = kout[o]; }
        else df_tensor_release(kout[o]);
    }
    return ok;
}
static int df__gg_run_loop(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record);
static int df__gg_run(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record) {
    df_status *st = c->st;
    if (gg->sub) return df__gg_run_sub(c, gg, in, outs, record);
    if (gg->loop) return df__gg_run_loop(c, gg, in, outs, record);
    df_tensor **vals = (df_tensor **)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(df_tensor *));
    int32_t *left = (int32_t *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(int32_t));
    df_tensor **kin = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    df_tensor **kout = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    int ok = vals && left && kin && kout;
    if (!ok) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory running a GPU graph's nodes");
    else {
        memset(vals, 0, (size_t)gg->n_values * sizeof(df_tensor *));
        memcpy(left, gg->uses, (size_t)gg->n_values * sizeof(int32_t));
    }
    for (int i = 0; ok && i < gg->n_nodes; i++) {
        const df_node *n = gg->nodes[i];
        const df__gg_src *src = gg->srcs + gg->in_start[i];
        ok = df__gg_node(c, gg, i, in, vals, kin, kout, record);
        int keep = (n->op->flags & DF__OP_TRANSFER) != 0;   /* (a Send's value: its Recv reads it) */
        for (int k = 0; ok && !keep && k < n->n_inputs; k++)  /* values nothing reads any more go back */
            if (src[k].node >= 0) {
                int v = gg->val_start[src[k].node] + src[k].out;
                if (--left[v] == 0) { df_tensor_release(vals[v]); vals[v] = NULL; }
            }
    }
    for (int j = 0; ok && j < gg->n_out; j++) {
        const df__gg_src *o = &gg->outs[j];
        outs[j] = df_tensor_retain(o->node < 0 ? in[o->out] : vals[gg->val_start[o->node] + o->out]);
    }
    for (int v = 0; vals && v < gg->n_values; v++) df_tensor_release(vals[v]);
    DF_FREE(vals); DF_FREE(left); DF_FREE(kin); DF_FREE(kout);
    return ok;
}

/* A while loop whose predicate is a GPU value. The partition holds the loop and nothing else of
   control flow: one frame, one LoopCond fed through a pair within the device (the predicate's
   copy to host memory), each loop variable an Enter -> Merge -> Switch -> (Exit, body ...
   NextIteration) chain. Its nodes fall in phases: before the loop, the predicate's (from the
   Merges), the body's (from the Switches), after it (from the Exits). Run node by node, the
   predicate is copied to the host each iteration. Captured, the loop becomes a conditional
   WHILE node whose body is one iteration: the body's launches, copies of the next values into
   the loop's own buffers, the predicate's launches again and a kernel that sets the node's
   condition from the predicate on the device; no copy to the host at all. A capture needs the
   loop's variables in device memory, their shapes fixed: then what the loop computes in host
   memory (shapes, axes, constants) is the same in every iteration, and a capture may keep it. */
enum { DF__GL_PRE, DF__GL_PRED, DF__GL_BODY, DF__GL_POST, DF__GL_CTRL };
typedef struct df__gg_loop {
    int n_vars;
    int32_t *var;                    /* per variable: Enter, Merge, Switch, NextIteration, Exit (-1: none) */
    unsigned char *phase;            /* per node of the order */
    int32_t pred;                    /* the value the loop tests (a bool in device memory) */
} df__gg_loop;
static void df__gg_loop_free(df__gg_loop *L) {
    if (!L) return;
    DF_FREE(L->var); DF_FREE(L->phase); DF_FREE(L);
}

/* The plan of gg's loop, or NULL with *why saying what does not fit. */
static df__gg_loop *df__gg_loop_plan(const df__gg *gg, const char **why) {
    int n = gg->n_nodes, lc = -1, n_merge = 0, max_id = 0;
    const char *frame = NULL;
    *why = "out of memory";
    for (int p = 0; p < n; p++) max_id = DF__MAX(max_id, gg->nodes[p]->id);
    df__gg_loop *L = (df__gg_loop *)DF_MALLOC(sizeof *L);
    int32_t *pos = (int32_t *)DF_MALLOC(((size_t)max_id + 1) * sizeof(int32_t));
    unsigned char *inf = (unsigned char *)DF_MALLOC((size_t)n + 1), *after = (unsigned char *)DF_MALLOC((size_t)n + 1);
    int32_t *stack = (int32_t *)DF_MALLOC(((size_t)n + 1) * sizeof(int32_t));
    if (L) memset(L, 0, sizeof *L);
    if (n <= 0) { *why = "no nodes"; goto fail; }
    if (!L || !pos || !inf || !after || !stack || !(L->phase = (unsigned char *)DF_MALLOC((size_t)n + 1))) goto fail;
    for (int i = 0; i <= max_id; i++) pos[i] = -1;
    for (int p = 0; p < n; p++) pos[gg->nodes[p]->id] = p;
    memset(inf, 0, (size_t)n); memset(after, 0, (size_t)n); memset(L->phase, 0xff, (size_t)n);
#define DF__GL_SRC(p, k) (gg->srcs[gg->in_start[p] + (k)])
#define DF__GL_IS(p, flag) ((gg->nodes[p]->op->flags & (flag)) != 0)
    for (int p = 0; p < n; p++) {
        const df_node *x = gg->nodes[p];
        if (DF__GL_IS(p, DF__OP_LOOP_COND)) { if (lc >= 0) { *why = "two loops"; goto fail; } lc = p; }
        if (DF__GL_IS(p, DF__OP_MERGE)) n_merge++;
        if (DF__GL_IS(p, DF__OP_ENTER)) {
            if (frame && strcmp(frame, df__attr_s(x, "frame_name"))) { *why = "two loop frames"; goto fail; }
            frame = df__attr_s(x, "frame_name");
            if (x->out_is_ref[0]) { *why = "a reference enters the loop"; goto fail; }
        }
    }
    if (lc < 0 || !n_merge) { *why = "no loop"; goto fail; }
    /* the predicate: LoopCond <- its pair's Recv <- Send <- a device-memory bool */
    {
        df__gg_src r = DF__GL_SRC(lc, 0);
        int sp = r.node >= 0 && DF__GL_IS(r.node, DF__OP_RECV) ? gg->pair[r.node] : -1;
        df__gg_src v = sp >= 0 ? DF__GL_SRC(sp, 0) : (df__gg_src){-1, 0};
        if (v.node < 0 || gg->host_out[v.node] == ~0u || (gg->host_out[v.node] >> DF__MIN(v.out, 31) & 1) ||
            gg->nodes[v.node]->out_types[v.out] != DF_BOOL) { *why = "the predicate is not a bool the GPU makes"; goto fail; }
        L->pred = gg->val_start[v.node] + v.out;
        L->phase[lc] = L->phase[r.node] = L->phase[sp] = DF__GL_CTRL;
        inf[lc] = inf[r.node] = inf[sp] = 1;
    }
    if (!(L->var = (int32_t *)DF_MALLOC((size_t)n_merge * 5 * sizeof(int32_t)))) goto fail;
    for (int p = 0; p < n; p++) {
        if (!DF__GL_IS(p, DF__OP_MERGE)) continue;
        int32_t *v = L->var + 5 * L->n_vars++;
        v[0] = v[1] = v[2] = v[3] = v[4] = -1;
        v[1] = p;
        for (int k = 0; k < gg->nodes[p]->n_inputs && k < 3; k++) {
            df__gg_src a = DF__GL_SRC(p, k);
            if (a.node < 0 || gg->nodes[p]->n_inputs != 2) break;
            if (DF__GL_IS(a.node, DF__OP_ENTER) && !df__attr_b(gg->nodes[a.node], "is_constant", 0)) v[0] = a.node;
            if (DF__GL_IS(a.node, DF__OP_NEXT_ITERATION)) v[3] = a.node;
        }
        for (int q = 0; q < n; q++) {
            if (DF__GL_IS(q, DF__OP_SWITCH) && gg->nodes[q]->n_inputs == 2 && DF__GL_SRC(q, 0).node == p && DF__GL_SRC(q, 0).out == 0 &&
                DF__GL_SRC(q, 1).node == lc) { if (v[2] >= 0) v[2] = -2; else v[2] = q; }
        }
        for (int q = 0; v[2] >= 0 && q < n; q++)
            if (DF__GL_IS(q, DF__OP_EXIT) && DF__GL_SRC(q, 0).node == v[2] && DF__GL_SRC(q, 0).out == 0) { if (v[4] >= 0) v[2] = -2; else v[4] = q; }
        if (v[0] < 0 || v[2] < 0 || v[3] < 0) { *why = "a loop variable is not Enter, Merge, Switch, NextIteration"; goto fail; }
        for (int k = 0; k < 5; k++) if (v[k] >= 0) { L->phase[v[k]] = DF__GL_CTRL; inf[v[k]] = 1; }
    }
    /* every other control-flow node: a constant Enter, or not this kind of loop */
    for (int p = 0; p < n; p++) {
        if (L->phase[p] == DF__GL_CTRL) continue;
        if (DF__GL_IS(p, DF__OP_ENTER) && df__attr_b(gg->nodes[p], "is_constant", 0)) { L->phase[p] = DF__GL_CTRL; inf[p] = 1; continue; }
        if (DF__GL_IS(p, DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT | DF__OP_NEXT_ITERATION | DF__OP_LOOP_COND | DF__OP_TRANSFER)) {
            *why = "other control flow or transfers beside the loop";
            goto fail;
        }
    }
    /* in the frame: what the loop's nodes feed, up to the Exits; after it: what the Exits feed.
       (The order is topological but for NextIteration's edges, which lead to Merges.) */
    for (int p = 0; p < n; p++) {
        const df_node *x = gg->nodes[p];
        if (L->phase[p] == DF__GL_CTRL) { after[p] = DF__GL_IS(p, DF__OP_EXIT); continue; }
        for (int k = 0; k < x->n_inputs + x->n_controls; k++) {
            int u = k < x->n_inputs ? DF__GL_SRC(p, k).node : pos[x->controls[k - x->n_inputs]->id];
            if (u < 0) continue;
            if (after[u]) after[p] = 1;
            else if (inf[u] && !DF__GL_IS(u, DF__OP_EXIT)) inf[p] = 1;
        }
        if (inf[p] && after[p]) { *why = "a node reads values of the loop and after it"; goto fail; }
    }
    /* the predicate's nodes: what the tested value waits for, back to the Merges */
    {
        int top = 0;
        int sp = gg->pair[DF__GL_SRC(lc, 0).node];
        stack[top++] = DF__GL_SRC(sp, 0).node;
        while (top) {
            int u = stack[--top];
            if (L->phase[u] == DF__GL_CTRL || L->phase[u] == DF__GL_PRED) continue;
            if (!inf[u]) { *why = "the predicate reads a value from outside the loop without an Enter"; goto fail; }
            L->phase[u] = DF__GL_PRED;
            const df_node *x = gg->nodes[u];
            for (int k = 0; k < x->n_inputs + x->n_controls; k++) {
                int w = k < x->n_inputs ? DF__GL_SRC(u, k).node : pos[x->controls[k - x->n_inputs]->id];
                if (w >= 0) stack[top++] = w;
            }
        }
    }
    for (int p = 0; p < n; p++)
        if (L->phase[p] == 0xff) L->phase[p] = (unsigned char)(inf[p] ? DF__GL_BODY : after[p] ? DF__GL_POST : DF__GL_PRE);
    /* what each phase may read: the loop's values flow only through its control nodes */
    for (int p = 0; p < n; p++) {
        const df_node *x = gg->nodes[p];
        int ph = L->phase[p];
        for (int k = 0; k < x->n_inputs; k++) {
            df__gg_src a = DF__GL_SRC(p, k);
            int up = a.node < 0 ? -1 : L->phase[a.node];
            const df_node *u = a.node < 0 ? NULL : gg->nodes[a.node];
            int const_enter = u && (u->op->flags & DF__OP_ENTER) && df__attr_b(u, "is_constant", 0);
            int fine = 1;
            if (ph == DF__GL_PRE) fine = up < 0 || up == DF__GL_PRE;
            else if (ph == DF__GL_POST) fine = up < 0 || up == DF__GL_PRE || up == DF__GL_POST || (u->op->flags & DF__OP_EXIT);
            else if (ph == DF__GL_PRED) fine = up == DF__GL_PRED || const_enter || (u && (u->op->flags & DF__OP_MERGE) && a.out == 0);
            else if (ph == DF__GL_BODY) fine = up == DF__GL_BODY || const_enter || (u && (u->op->flags & DF__OP_SWITCH) && a.out == 1);
            else if (x->op->flags & DF__OP_NEXT_ITERATION)
                fine = up == DF__GL_BODY || const_enter || (u && (u->op->flags & DF__OP_SWITCH) && a.out == 1);
            if (!fine) { *why = "a value crosses the loop's boundary outside its control nodes"; goto fail; }
        }
        for (int k = 0; k < x->n_controls; k++) {
            int u = pos[x->controls[k]->id];
            if (u < 0) continue;
            int up = L->phase[u];
            int fine = ph == DF__GL_POST || up == DF__GL_PRE ||
                       ((ph == DF__GL_PRED || ph == DF__GL_BODY || ph == DF__GL_CTRL) && inf[u] && !(gg->nodes[u]->op->flags & DF__OP_EXIT) &&
                        (ph != DF__GL_PRED || up != DF__GL_BODY));
            if (!fine) { *why = "a control edge crosses the loop's boundary"; goto fail; }
        }
    }
    for (int j = 0; j < gg->n_out; j++) {
        int u = gg->outs[j].node;
        if (u >= 0 && inf[u] && !DF__GL_IS(u, DF__OP_EXIT)) { *why = "a value leaves from inside the loop"; goto fail; }
    }
#undef DF__GL_SRC
#undef DF__GL_IS
    DF_FREE(pos); DF_FREE(inf); DF_FREE(after); DF_FREE(stack);
    return L;
fail:
    df__gg_loop_free(L);
    DF_FREE(pos); DF_FREE(inf); DF_FREE(after); DF_FREE(stack);
    return NULL;
}

static int df__gg_same_shape(const df_tensor *a, const df_tensor *b) {
    return a->dtype == b->dtype && a->rank == b->rank && !memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int64_t));
}
static int df__gg_overlap(const df_tensor *a, const df_tensor *b) {
    const char *pa = (const char *)a->data, *pb = (const char *)b->data;
    return a->nbytes && b->nbytes && pa < pb + b->nbytes && pb < pa + a->nbytes;
}

/* Runs gg's loop plan (see above). Node by node, the loop's variables are the values the body
   makes; captured (`record`), they live in buffers of the loop's own, the body is recorded once
   as the conditional node's body, and the predicate's nodes twice (before the node, and at the
   end of its body). */
static int df__gg_run_loop(df__kctx *c, df__gg *gg, df_tensor *const *in, df_tensor **outs, int record) {
    df_status *st = c->st;
    const df__gg_loop *L = gg->loop;
    df_cuda *gpu = (df_cuda *)gg->dev->gpu;
    int n = gg->n_nodes, nv = L->n_vars;
    df_tensor **vals = (df_tensor **)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(df_tensor *));
    df_tensor **kin = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    df_tensor **kout = (df_tensor **)DF_MALLOC((size_t)gg->max_io * sizeof(df_tensor *));
    df_tensor **cur = (df_tensor **)DF_MALLOC((size_t)(2 * nv + 1) * sizeof(df_tensor *)), **stage = cur ? cur + nv : NULL;
    int ok = vals && kin && kout && cur;
    if (!ok) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory running a GPU graph's loop");
    else {
        memset(vals, 0, (size_t)gg->n_values * sizeof(df_tensor *));
        memset(cur, 0, (size_t)(2 * nv) * sizeof(df_tensor *));
    }
#define DF__GL_VAL(a) ((a).node < 0 ? in[(a).out] : vals[gg->val_start[(a).node] + (a).out])
#define DF__GL_SET(p, t) do { int v_ = gg->val_start[p]; df_tensor_release(vals[v_]); vals[v_] = df_tensor_retain(t); } while (0)
    for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_PRE) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
    for (int p = 0; ok && p < n; p++)                          /* the Enters */
        if ((gg->nodes[p]->op->flags & DF__OP_ENTER)) {
            df_tensor *t = DF__GL_VAL(gg->srcs[gg->in_start[p]]);
            if (!t) { ok = df__fail(st, gg->nodes[p], DF_INTERNAL, "Enter %s has no value in its GPU graph", gg->nodes[p]->name) == DF_OK; break; }
            if (t->ref && record && !df__gg_note_var(gg, t->ref)) { ok = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory") == DF_OK; break; }
            if (!(t = df__deref(df_tensor_retain(t), gg->nodes[p], st))) { ok = 0; break; }
            DF__GL_SET(p, t);
            df_tensor_release(t);
        }
    for (int i = 0; ok && i < nv; i++) {
        df_tensor *t = vals[gg->val_start[L->var[5 * i]]];
        if (!record) { cur[i] = df_tensor_retain(t); continue; }
        if (!df__tensor_gpu(t)) { df_status_set(st, DF_UNIMPLEMENTED, "Loop variable %d is in host memory", i); ok = 0; break; }
        if (!(cur[i] = df__tensor_alloc(gg->dev->alloc, t->dtype, t->rank, t->dims, st)) ||
            (t->nbytes && df_cuda_memcpy_d2d(gpu, cur[i]->data, t->data, t->nbytes, st))) ok = 0;
    }
    for (int64_t it = 0; ok; it++) {
        for (int i = 0; i < nv; i++) DF__GL_SET(L->var[5 * i + 1], cur[i]);
        for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_PRED) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
        const df_tensor *pt = ok ? vals[L->pred] : NULL;
        if (ok && (!pt || pt->dtype != DF_BOOL || pt->n != 1 || !df__tensor_gpu(pt))) {
            df_status_set(st, DF_INVALID_ARGUMENT, "A loop's predicate must be one bool, made on the GPU");
            ok = 0;
        }
        if (!ok) break;
        if (record) {
            if (it == 1) { ok = df_cuda_capture_loop_end(gpu, pt->data, st) == DF_OK; break; }
            if (df_cuda_capture_loop_begin(gpu, pt->data, st)) { ok = 0; break; }
        } else {
            unsigned char go = 0;
            if (df_cuda_memcpy_d2h(gpu, &go, pt->data, 1, st)) { ok = 0; break; }
            if (!go) break;
            if (__atomic_load_n(&c->step->aborted, __ATOMIC_ACQUIRE)) {
                if (!st->code) df_status_set(st, DF_CANCELLED, "The step was cancelled inside a GPU loop");
                ok = 0;
                break;
            }
        }
        for (int i = 0; i < nv; i++) {                          /* the Switches' true sides */ int v_ = gg->val_start[L->var[5 * i + 2]] + 1; df_tensor_release(vals[v_]); vals[v_] = df_tensor_retain(cur[i]); }
        for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_BODY) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
        int staged = 0;
        for (int i = 0; ok && i < nv; i++) {
            df_tensor *nx = DF__GL_VAL(gg->srcs[gg->in_start[L->var[5 * i + 3]]]);
            if (!nx) { ok = df__fail(st, gg->nodes[L->var[5 * i + 3]], DF_INTERNAL, "NextIteration has no value in its GPU graph") == DF_OK; break; }
            if (!record) { stage[i] = df_tensor_retain(nx); continue; }
            if (nx->ref || !df__tensor_gpu(nx) || !df__gg_same_shape(nx, cur[i])) {
                df_status_set(st, DF_UNIMPLEMENTED, "Loop variable %d changes shape or memory", i);
                ok = 0;
                break;
            }
            for (int j = 0; j < nv; j++)
                if (df__gg_overlap(nx, cur[j]) && !(i == j && nx->data == cur[j]->data)) staged = 1;
        }
        if (ok && !record) {
            for (int i = 0; i < nv; i++) { df_tensor_release(cur[i]); cur[i] = stage[i]; stage[i] = NULL; }
        } else if (ok) {
            /* the next values into the loop's buffers; through copies of their own when one is a
               loop buffer itself (variables swapped, say) */
            for (int i = 0; ok && i < nv; i++) {
                df_tensor *nx = DF__GL_VAL(gg->srcs[gg->in_start[L->var[5 * i + 3]]]);
                if (staged) {
                    if (!(stage[i] = df__tensor_alloc(gg->dev->alloc, nx->dtype, nx->rank, nx->dims, st)) ||
                        (nx->nbytes && df_cuda_memcpy_d2d(gpu, stage[i]->data, nx->data, nx->nbytes, st))) ok = 0;
                } else if (nx->data != cur[i]->data && nx->nbytes && df_cuda_memcpy_d2d(gpu, cur[i]->data, nx->data, nx->nbytes, st)) ok = 0;
            }
            for (int i = 0; ok && staged && i < nv; i++)
                if (cur[i]->nbytes && df_cuda_memcpy_d2d(gpu, cur[i]->data, stage[i]->data, cur[i]->nbytes, st)) ok = 0;
            for (int i = 0; i < nv; i++) { df_tensor_release(stage[i]); stage[i] = NULL; }
        }
        for (int p = 0; p < n; p++)                             /* the iteration's values go back */
            if (L->phase[p] == DF__GL_PRED || L->phase[p] == DF__GL_BODY ||
                (L->phase[p] == DF__GL_CTRL && !(gg->nodes[p]->op->flags & DF__OP_ENTER)))
                for (int o = 0; o < gg->nodes[p]->n_outputs; o++) { df_tensor_release(vals[gg->val_start[p] + o]); vals[gg->val_start[p] + o] = NULL; }
    }
    for (int i = 0; ok && i < nv; i++) if (L->var[5 * i + 4] >= 0) DF__GL_SET(L->var[5 * i + 4], cur[i]);
    for (int p = 0; ok && p < n; p++) if (L->phase[p] == DF__GL_POST) ok = df__gg_node(c, gg, p, in, vals, kin, kout, record);
    for (int j = 0; ok && j < gg->n_out; j++)
        if (!DF__GL_VAL(gg->outs[j])) ok = df__fail(st, gg->nodes[gg->outs[j].node], DF_INTERNAL, "An output of a GPU graph's loop has no value") == DF_OK;
    for (int j = 0; ok && j < gg->n_out; j++) outs[j] = df_tensor_retain(DF__GL_VAL(gg->outs[j]));
#undef DF__GL_VAL
#undef DF__GL_SET
    for (int v = 0; vals && v < gg->n_values; v++) df_tensor_release(vals[v]);
    for (int i = 0; cur && i < 2 * nv; i++) df_tensor_release(cur[i]);
    DF_FREE(vals); DF_FREE(kin); DF_FREE(kout); DF_FREE(cur);
    if (!ok && !st->code) df_status_set(st, DF_INTERNAL, "A GPU graph's loop failed");
    return ok;
}

static void df__gg_count(df__kctx *c, int which) {
    __atomic_add_fetch(&c->step->session->gg_stats[which], 1, __ATOMIC_RELAXED);
}

/* Captures the nodes' launches on the inputs and, when that works, keeps the graph. */
static int df__gg_capture(df__kctx *c, df__gg *gg) {
    df_cuda *gpu = (df_cuda *)gg->dev->gpu;
    df_status st;
    df_status_clear(&st);
    df_tensor **in = (df_tensor **)DF_MALLOC((size_t)(gg->n_in + 1) * sizeof(df_tensor *));
    df_tensor **outs = (df_tensor **)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    int ok = in && outs;
    if (outs) memset(outs, 0, (size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    for (int j = 0; ok && j < gg->n_in; j++) {     /* the buffers the graph will read */
        df_tensor *t = c->in[j];
        in[j] = t;
        if (df__tensor_gpu(t) && !(gg->static_in[j] = df__tensor_alloc(gg->dev->alloc, t->dtype, t->rank, t->dims, &st))) ok = 0;
        if (gg->static_in[j]) in[j] = gg->static_in[j];
    }
    if (ok) {
        gg->held.alloc = gg->dev->alloc;
        df__tls_hold = &gg->held;
        ok = df_cuda_capture_begin(gpu, &st) == DF_OK;
        if (ok) {
            df__kctx k = *c;
            k.st = &st;
            int ran = df__gg_run(&k, gg, in, outs, 1);
            df_status end;
            df_cuda_capture_end(gpu, &gg->exec, &end);
            ok = ran && gg->exec && !gg->held.failed;
        }
        df__tls_hold = NULL;
    }
    if (ok) {
        /* device outputs (made by the graph, or its input buffers) but variables' values are
           the graph's memory, which the next replay rewrites */
        for (int j = 0; j < gg->n_out; j++) {
            const df_tensor *t = outs[j], *b = t->base ? t->base : t;
            int owned = df__tensor_gpu(t) != NULL;
            for (int i = 0; owned && i < gg->n_vars; i++) if (gg->vars[i].value == b || gg->vars[i].value == t) owned = 0;
            gg->static_out[j] = outs[j];
            gg->out_owned[j] = (unsigned char)owned;
        }
        for (int j = 0; j < gg->n_out; j++) gg->out_idle[j] = __atomic_load_n(&gg->static_out[j]->refs, __ATOMIC_ACQUIRE);
    } else {
        if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph for %d nodes on %s: %s\n", gg->n_nodes, gg->dev->name, st.code ? st.message : "(capture failed)");
        for (int j = 0; outs && j < gg->n_out; j++) if (outs[j]) df_tensor_release(outs[j]);
        df__gg_drop(gg);
        gg->off = 1;
        df__gg_count(c, 3);
    }
    DF_FREE(in); DF_FREE(outs);
    return ok;
}

/* Whether the captured graph may run now: the variables it read hold the same tensors, and no
   output it made is still held from an earlier step. */
static int df__gg_replayable(df__gg *gg, int *stale) {
    *stale = 0;
    for (int i = 0; i < gg->n_vars; i++) {
        df__var *v = gg->vars[i].v;
        df__spin_lock(&v->lock);
        int same = v->value == gg->vars[i].value && v->value && v->value->data == gg->vars[i].data;
        df__spin_unlock(&v->lock);
        if (!same) { *stale = 1; return 0; }
    }
    for (int j = 0; j < gg->n_out; j++)
        if (gg->out_owned[j] && __atomic_load_n(&gg->static_out[j]->refs, __ATOMIC_ACQUIRE) != gg->out_idle[j]) return 0;
    return 1;
}
static int df__gg_replay(df__kctx *c, df__gg *gg) {
    df_cuda *gpu = (df_cuda *)gg->dev->gpu;
    for (int j = 0; j < gg->n_in; j++)
        if (gg->static_in[j] && gg->static_in[j]->data != c->in[j]->data &&
            df_cuda_memcpy_d2d(gpu, gg->static_in[j]->data, c->in[j]->data, c->in[j]->nbytes, c->st)) return 0;
    if (df_cuda_graph_launch(gpu, gg->exec, c->st)) return 0;
    for (int j = 0; j < gg->n_out; j++) c->out[j] = df_tensor_retain(gg->static_out[j]);
    return 1;
}

static void df__gk_gpu_graph(df__kctx *c) {
    df__gg *gg = c->node->gg;
    if (!gg) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "_GpuGraph nodes are made by the runtime, not by graphs"); return; }
    int expected = 0;
    if (!__atomic_compare_exchange_n(&gg->busy, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        df__gg_count(c, 2);                       /* another thread has the graph: run the nodes */
        df__gg_run(c, gg, c->in, c->out, 0);
        return;
    }
    int done = 0;
    if (!gg->off) {
        int alike = df__gg_alike(gg, c->in, !gg->exec, c->st), stale = 0;
        if (gg->exec && alike && df__gg_replayable(gg, &stale)) {
            done = df__gg_replay(c, gg);
            if (done) df__gg_count(c, 1);
            else gg->off = 1;                      /* (c->st says why; the step fails) */
        } else if (gg->exec && (!alike || stale)) {
            df__gg_drop(gg);                       /* new shapes or new variables: capture again */
            gg->alike = 0;
            if (++gg->recaptures > DF__GG_RECAPTURES) gg->off = 1;
            else df__gg_alike(gg, c->in, 1, c->st);
            gg->alike = 1;
        } else if (!gg->exec && alike && gg->alike >= 1) {
            if (df__gg_capture(c, gg)) {
                df__gg_count(c, 0);
                done = df__gg_replay(c, gg);
                if (!done) gg->off = 1;
            }
        } else if (!gg->exec) {
            gg->alike = alike ? gg->alike + 1 : 1;
        }
    }
    __atomic_store_n(&gg->busy, 0, __ATOMIC_RELEASE);
    if (!done && !c->st->code) {
        df__gg_count(c, 2);
        df__gg_run(c, gg, c->in, c->out, 0);
    }
}

/* The partition's nodes that a GPU graph may hold: no control flow, no state but variables read
   and updated in place (the Apply ops), a kernel for the GPU; fed placeholders and Send/Recv
   stay outside. Returns 0 (no graph) when any other node is there. */
static int df__gg_member(const df_node *n, const df__device *d, int *member, int *loops) {
    static const char *const stateful_ok[] = {"VariableV2", "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam"};
    unsigned f = n->op->flags;
    *member = 0;
    if (f & DF__OP_TRANSFER) return 1;         /* (a pair within the device may join: below) */
    if (f & (DF__OP_CONTROL_TRIGGER | DF__OP_LOOP_COUNT)) return 0;
    if (f & (DF__OP_SWITCH | DF__OP_MERGE | DF__OP_ENTER | DF__OP_EXIT | DF__OP_NEXT_ITERATION | DF__OP_LOOP_COND)) *loops = 1;
    if (f & DF__OP_STATEFUL) {
        int ok = 0;
        for (size_t i = 0; i < sizeof stateful_ok / sizeof *stateful_ok; i++) ok |= !strcmp(n->op->name, stateful_ok[i]);
        if (!ok) return 0;
    }
    if (!df__node_kernel(n, d->kernel_type, NULL, NULL, NULL)) return 0;
    *member = 1;
    return 1;
}

/* Makes partition pt's GPU graph node when its nodes allow one (see above); `fetches` (the
   partition's) are redirected to the node's outputs. *all receives the nodes to compile. */
static df_code df__gg_rewrite(df_session *ss, df__part *pt, const df_output *feeds, int n_feeds, df_output *fetches, int n_fetches,
                              df_node ***all_out, int *n_all_out, df_status *st) {
    df_graph *g = pt->g;
    int n = g->n_nodes, n_s = 0, loops = 0, pairs = 0, pred_pairs = 0;
    df__device *d = pt->dev;
    *all_out = NULL; *n_all_out = 0;
    unsigned char *in_s = (unsigned char *)DF_MALLOC((size_t)n + 1);
    int32_t *order = (int32_t *)DF_MALLOC(((size_t)n + 1) * sizeof(int32_t));   /* node id -> position, then back */
    int32_t *deg = (int32_t *)DF_MALLOC(((size_t)n + 1) * sizeof(int32_t));
    df__gg *gg = NULL;
    df_node *node = NULL, **all = NULL;
    if (!in_s || !order || !deg) goto oom;
    memset(in_s, 0, (size_t)n);
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        int fed = 0, member = 0;
        for (int f = 0; f < n_feeds && !fed; f++) fed = feeds[f].node == x;
        if (fed) continue;
        if (!df__gg_member(x, d, &member, &loops)) {
            if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: node %s (%s)\n", d->name, x->name, x->op->name);
            n_s = 0;
            goto none;
        }
        in_s[i] = (unsigned char)member;
        n_s += member;
    }
    /* A Send to this device's other memory (a host value a kernel reads in device memory, say)
       comes back through its Recv: it and everything it waits for stay outside. */
    {
        int top = 0;
        for (int i = 0; i < n; i++) {
            const df_node *x = g->nodes[i];
            if ((x->op->flags & DF__OP_TRANSFER) && x->n_inputs > 0 &&
                !strcmp(df__attr_s(x, "send_device"), df__attr_s(x, "recv_device"))) {
                /* a small host value (a size, a shape) a kernel reads in device memory: the pair
                   joins the graph, its copy made by fills that carry the bytes */
                const df__shape *sh = &x->inputs[0].node->out_shapes[x->inputs[0].index];
                int64_t count = df__shape_count(sh);
                int r_at = -1, to_loop_cond = 0;
                for (int r = 0; r < n && r_at < 0; r++)
                    if (g->nodes[r]->op->flags & DF__OP_RECV && df__attr_i(g->nodes[r], "_key", -2) == df__attr_i(x, "_key", -1)) r_at = r;
                for (int r = 0; r_at >= 0 && r < n; r++)        /* read by LoopConds alone */
                    for (int k = 0; k < g->nodes[r]->n_inputs; k++)
                        if (g->nodes[r]->inputs[k].node == g->nodes[r_at]) to_loop_cond = (g->nodes[r]->op->flags & DF__OP_LOOP_COND) && to_loop_cond >= 0 ? 1 : -1;
                if (!strcmp(x->op->name, "_Send") && to_loop_cond == 1 && x->inputs[0].node->out_types[x->inputs[0].index] == DF_BOOL) {
                    /* a loop's predicate made on the GPU: the loop's plan below reads it */
                    pred_pairs++;
                    if (!in_s[i]) { in_s[i] = 1; n_s++; }
                    if (!in_s[r_at]) { in_s[r_at] = 1; n_s++; }
                    continue;
                }
                pairs = 1;
                if (!strcmp(x->op->name, "_HostSend") && count >= 0 && count <= DF__GG_SMALL) {
                    in_s[i] = 1;
                    n_s++;
                    for (int r = 0; r < n; r++)
                        if (g->nodes[r]->op->flags & DF__OP_RECV && df__attr_i(g->nodes[r], "_key", -2) == df__attr_i(x, "_key", -1) &&
                            !in_s[r]) { in_s[r] = 1; n_s++; }
                } else order[top++] = i;
            }
        }
        memset(deg, 0, (size_t)n * sizeof(int32_t));               /* (deg: seen) */
        for (int i = 0; i < top; i++) deg[order[i]] = 1;
        while (top) {
            const df_node *x = g->nodes[order[--top]];
            if (in_s[x->id]) { in_s[x->id] = 0; n_s--; }
            for (int k = 0; k < x->n_inputs + x->n_controls; k++) {
                int u = k < x->n_inputs ? x->inputs[k].node->id : x->controls[k - x->n_inputs]->id;
                if (!deg[u]) { deg[u] = 1; order[top++] = u; }
            }
        }
    }
    if (loops && pairs) {          /* (the loop's executor below has no rendezvous for the pair) */
        if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: loops and a Send/Recv pair within the device\n", d->name);
        goto none;
    }
    if (getenv("DF_CUDA_GRAPHS_DEBUG")) {
        fprintf(stderr, "dataflow: GPU graph of %d of %d nodes on %s; outside:", n_s, n, d->name);
        for (int i = 0; i < n && i < 4000; i++) if (!in_s[i]) fprintf(stderr, " %s(%s)", g->nodes[i]->name, g->nodes[i]->op->name);
        fprintf(stderr, "\n");
    }
    if (n_s < 2) goto none;
    /* a topological order of the members (data and control edges among them) */
    memset(deg, 0, (size_t)n * sizeof(int32_t));
#define DF__GG_EDGE(u) (in_s[(u)->id] && !((u)->op->flags & DF__OP_NEXT_ITERATION))   /* (loops: back edges aside) */
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (!in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (DF__GG_EDGE(x->inputs[k].node)) deg[i]++;
        for (int k = 0; k < x->n_controls; k++) if (DF__GG_EDGE(x->controls[k])) deg[i]++;
    }
    /* consumers among the members (CSR over node ids), then Kahn's walk */
    int32_t *cstart = (int32_t *)DF_MALLOC(((size_t)n + 2) * sizeof(int32_t)), *cons = NULL;
    if (!cstart) goto oom;
    memset(cstart, 0, ((size_t)n + 2) * sizeof(int32_t));
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (!in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (DF__GG_EDGE(x->inputs[k].node)) cstart[x->inputs[k].node->id + 2]++;
        for (int k = 0; k < x->n_controls; k++) if (DF__GG_EDGE(x->controls[k])) cstart[x->controls[k]->id + 2]++;
    }
    for (int i = 0; i < n; i++) cstart[i + 2] += cstart[i + 1];
    if (!(cons = (int32_t *)DF_MALLOC(((size_t)cstart[n + 1] + 1) * sizeof(int32_t)))) { DF_FREE(cstart); goto oom; }
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (!in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (DF__GG_EDGE(x->inputs[k].node)) cons[cstart[x->inputs[k].node->id + 1]++] = i;
        for (int k = 0; k < x->n_controls; k++) if (DF__GG_EDGE(x->controls[k])) cons[cstart[x->controls[k]->id + 1]++] = i;
#undef DF__GG_EDGE
    }
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) if (in_s[i] && !deg[i]) order[tail++] = i;
    while (head < tail) {
        int u = order[head++];
        for (int e = cstart[u]; e < cstart[u + 1]; e++) if (--deg[cons[e]] == 0) order[tail++] = cons[e];
    }
    DF_FREE(cstart); DF_FREE(cons);
    if (tail != n_s) goto none;                                  /* (a cycle: leave it to the executor) */
    gg = (df__gg *)DF_MALLOC(sizeof *gg);
    if (!gg) goto oom;
    memset(gg, 0, sizeof *gg);
    gg->dev = d;
    gg->n_nodes = n_s;
    int n_srcs = 0;
    gg->max_io = 1;
    for (int p = 0; p < n_s; p++) {
        const df_node *x = g->nodes[order[p]];
        n_srcs += x->n_inputs;
        gg->max_io = DF__MAX(gg->max_io, DF__MAX(x->n_inputs, x->n_outputs));
    }
    gg->nodes = (const df_node **)DF_MALLOC((size_t)n_s * sizeof(df_node *));
    gg->kernels = (df__kernel_fn *)DF_MALLOC((size_t)n_s * sizeof(df__kernel_fn));
    gg->host_out = (uint32_t *)DF_MALLOC((size_t)n_s * sizeof(uint32_t));
    gg->need = (uint32_t *)DF_MALLOC((size_t)n_s * sizeof(uint32_t));
    gg->in_start = (int32_t *)DF_MALLOC((size_t)n_s * sizeof(int32_t));
    gg->val_start = (int32_t *)DF_MALLOC((size_t)n_s * sizeof(int32_t));
    gg->pair = (int32_t *)DF_MALLOC((size_t)n_s * sizeof(int32_t));
    gg->srcs = (df__gg_src *)DF_MALLOC((size_t)(n_srcs + 1) * sizeof(df__gg_src));
    if (!gg->nodes || !gg->kernels || !gg->host_out || !gg->need || !gg->in_start || !gg->val_start || !gg->pair || !gg->srcs) goto oom;
    int32_t *pos = deg;                                          /* node id -> position in order */
    for (int i = 0; i < n; i++) pos[i] = -1;
    for (int p = 0; p < n_s; p++) pos[order[p]] = p;
    /* external inputs: distinct (node, output) outside the members, in order of first use */
    df_output *ext = (df_output *)DF_MALLOC((size_t)(n_srcs + 1) * sizeof(df_output));
    if (!ext) goto oom;
    int n_ext = 0, s_i = 0;
    for (int p = 0; p < n_s; p++) {
        const df_node *x = g->nodes[order[p]];
        int host_only = 0;
        gg->nodes[p] = x;
        gg->kernels[p] = df__node_kernel(x, d->kernel_type, NULL, &gg->host_out[p], &host_only);
        if (host_only) gg->host_out[p] = ~0u;
        gg->need[p] = 0;
        gg->pair[p] = -1;
        if (x->op->flags & DF__OP_RECV)
            for (int q = 0; q < n_s; q++)
                if ((g->nodes[order[q]]->op->flags & DF__OP_TRANSFER) && g->nodes[order[q]]->n_inputs > 0 &&
                    df__attr_i(g->nodes[order[q]], "_key", -1) == df__attr_i(x, "_key", -2)) gg->pair[p] = q;
        gg->in_start[p] = s_i;
        gg->val_start[p] = gg->n_values;
        gg->n_values += x->n_outputs;
        for (int k = 0; k < x->n_inputs; k++, s_i++) {
            df_output o = x->inputs[k];
            if (pos[o.node->id] >= 0) { gg->srcs[s_i] = (df__gg_src){pos[o.node->id], o.index}; continue; }
            int e = 0;
            while (e < n_ext && !(ext[e].node == o.node && ext[e].index == o.index)) e++;
            if (e == n_ext) ext[n_ext++] = o;
            gg->srcs[s_i] = (df__gg_src){-1, e};
        }
    }
    /* outputs: member values read outside (by other nodes or fetches); per value, its reads */
    gg->uses = (int32_t *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(int32_t));
    int32_t *out_of = (int32_t *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(int32_t));
    gg->outs = (df__gg_src *)DF_MALLOC((size_t)(gg->n_values + 1) * sizeof(df__gg_src));
    if (!gg->uses || !out_of || !gg->outs) { DF_FREE(ext); DF_FREE(out_of); goto oom; }
    memset(gg->uses, 0, (size_t)gg->n_values * sizeof(int32_t));
    for (int v = 0; v < gg->n_values; v++) out_of[v] = -1;
    for (int s = 0; s < s_i; s++)
        if (gg->srcs[s].node >= 0) {
            int p = gg->srcs[s].node;
            gg->uses[gg->val_start[p] + gg->srcs[s].out]++;
            gg->need[p] |= 1u << DF__MIN(gg->srcs[s].out, 31);
        }
#define DF__GG_OUT(nd, idx) do {                                                                  \
        int p_ = pos[(nd)->id], v_ = gg->val_start[p_] + (idx);                                 \
        if (out_of[v_] < 0) { out_of[v_] = gg->n_out; gg->outs[gg->n_out++] = (df__gg_src){p_, (idx)}; \
                              gg->uses[v_]++; gg->need[p_] |= 1u << DF__MIN((idx), 31); }        \
    } while (0)
    for (int i = 0; i < n; i++) {
        const df_node *x = g->nodes[i];
        if (in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) if (pos[x->inputs[k].node->id] >= 0) DF__GG_OUT(x->inputs[k].node, x->inputs[k].index);
    }
    for (int f = 0; f < n_fetches; f++) if (pos[fetches[f].node->id] >= 0) DF__GG_OUT(fetches[f].node, fetches[f].index);
#undef DF__GG_OUT
    /* memory types of the node's arguments: as its members take and make them (one bit for
       arguments 31 and above, as everywhere: they must agree) */
    int h31[2] = {-1, -1}, mixed = 0;
    for (int p = 0; p < n_s; p++)
        for (int k = 0; k < gg->nodes[p]->n_inputs; k++) {
            const df__gg_src *sr = &gg->srcs[gg->in_start[p] + k];
            if (sr->node >= 0) continue;
            int h = df__in_on_host(gg->nodes[p], k, d);
            if (h) gg->host_in |= 1u << DF__MIN(sr->out, 31);
            if (sr->out >= 31) { if (h31[0] < 0) h31[0] = h; else if (h31[0] != h) mixed = 1; }
        }
    for (int j = 0; j < gg->n_out; j++) {
        int h = gg->host_out[gg->outs[j].node] >> DF__MIN(gg->outs[j].out, 31) & 1;
        if (h) gg->host_out_mask |= 1u << DF__MIN(j, 31);
        if (j >= 31) { if (h31[1] < 0) h31[1] = h; else if (h31[1] != h) mixed = 1; }
    }
    if (mixed) { DF_FREE(ext); DF_FREE(out_of); df__gg_free(gg); goto none; }
    if (pred_pairs) {
        /* a loop whose predicate the GPU makes: run by its plan */
        const char *why = NULL;
        if (!(gg->loop = df__gg_loop_plan(gg, &why))) {
            if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: a loop with a GPU predicate: %s\n", d->name, why);
            DF_FREE(ext); DF_FREE(out_of); df__gg_free(gg);
            goto none;
        }
        if (getenv("DF_CUDA_GRAPHS_DEBUG")) {
            int count[5] = {0, 0, 0, 0, 0};
            for (int p = 0; p < n_s; p++) count[gg->loop->phase[p]]++;
            fprintf(stderr, "dataflow: GPU graph on %s: a loop with a GPU predicate, %d variables; %d nodes before it, %d of its predicate, %d of its body, %d after it\n",
                    d->name, gg->loop->n_vars, count[DF__GL_PRE], count[DF__GL_PRED], count[DF__GL_BODY], count[DF__GL_POST]);
        }
    } else if (loops) {
        /* a loop inside: the nodes run under an executor of their own (one thread, no
           rendezvous), fed the node's inputs, fetching its outputs in the memory they are made */
        df_output *gouts = (df_output *)DF_MALLOC(((size_t)gg->n_out + 1) * sizeof(df_output));
        df_node **targets = (df_node **)DF_MALLOC(((size_t)n_s + 1) * sizeof(df_node *));
        df_status cst;
        df_status_clear(&cst);
        if (gouts && targets) {
            for (int j = 0; j < gg->n_out; j++) gouts[j] = (df_output){(df_node *)gg->nodes[gg->outs[j].node], gg->outs[j].out};
            for (int p = 0; p < n_s; p++) targets[p] = (df_node *)gg->nodes[p];
            gg->sub = df__compile(ss, g, ext, n_ext, gouts, gg->n_out, targets, n_s, d, &cst);
        }
        DF_FREE(gouts); DF_FREE(targets);
        int fine = gg->sub != NULL;
        for (int i = 0; fine && i < gg->sub->n_items; i++) {
            df__xitem *it = &gg->sub->items[i];
            if (it->kind == DF__X_FETCH) fine = it->frame == 0;
            if (it->kind == DF__X_FETCH || it->kind == DF__X_FEED) it->flags &= (uint16_t)~DF__XF_DEVICE_VALUE;   /* (no copies) */
        }
        if (!fine) {
            if (getenv("DF_CUDA_GRAPHS_DEBUG")) fprintf(stderr, "dataflow: no CUDA graph on %s: its loops do not compile alone: %s\n", d->name, cst.code ? cst.message : "a value leaves from inside a loop");
            DF_FREE(ext); DF_FREE(out_of); df__gg_free(gg);
            goto none;
        }
    }
    /* the node: inputs ext, outputs gg->outs, control inputs the members' from outside */
    node = (df_node *)DF_MALLOC(sizeof *node);
    if (!node) { DF_FREE(ext); DF_FREE(out_of); goto oom; }
    memset(node, 0, sizeof *node);
    node->op = df__op_lookup("_GpuGraph");
    node->name = df__pgraph_name(g, "_gpu_graph");
    node->device = df__strdup(d->name);
    node->inputs = (df_output *)DF_MALLOC((size_t)(n_ext + 1) * sizeof(df_output));
    node->out_types = (df_dtype *)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df_dtype));
    node->out_shapes = (df__shape *)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df__shape));
    node->out_is_ref = (unsigned char *)DF_MALLOC((size_t)gg->n_out + 1);
    gg->n_in = n_ext;
    gg->sig = (df__gg_sig *)DF_MALLOC((size_t)(n_ext + 1) * sizeof(df__gg_sig));
    gg->static_in = (df_tensor **)DF_MALLOC((size_t)(n_ext + 1) * sizeof(df_tensor *));
    gg->static_out = (df_tensor **)DF_MALLOC((size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    gg->out_owned = (unsigned char *)DF_MALLOC((size_t)gg->n_out + 1);
    gg->out_idle = (int32_t *)DF_MALLOC(((size_t)gg->n_out + 1) * sizeof(int32_t));
    all = (df_node **)DF_MALLOC((size_t)(n + 2) * sizeof(df_node *));
    if (!node->op || !node->name || !node->device || !node->inputs || !node->out_types || !node->out_shapes ||
        !node->out_is_ref || !gg->sig || !gg->static_in || !gg->static_out || !gg->out_owned || !gg->out_idle || !all) {
        DF_FREE(ext); DF_FREE(out_of); goto oom;
    }
    memset(gg->sig, 0, (size_t)(n_ext + 1) * sizeof(df__gg_sig));
    for (int j = 0; j < n_ext; j++) gg->sig[j].rank = -1;
    memset(gg->static_in, 0, (size_t)(n_ext + 1) * sizeof(df_tensor *));
    memset(gg->static_out, 0, (size_t)(gg->n_out + 1) * sizeof(df_tensor *));
    memcpy(node->inputs, ext, (size_t)n_ext * sizeof(df_output));
    node->n_inputs = n_ext;
    node->n_outputs = gg->n_out;
    for (int j = 0; j < gg->n_out; j++) {
        const df_node *x = gg->nodes[gg->outs[j].node];
        int o = gg->outs[j].out;
        node->out_types[j] = x->out_types[o];
        node->out_shapes[j] = x->out_shapes[o];
        node->out_is_ref[j] = x->out_is_ref[o];
    }
    DF_FREE(ext);
    for (int p = 0; p < n_s; p++) {
        const df_node *x = gg->nodes[p];
        for (int k = 0; k < x->n_controls; k++)
            if (pos[x->controls[k]->id] < 0 && !df__node_add_control(node, x->controls[k])) { DF_FREE(out_of); goto oom; }
    }
    if (!df__pgraph_add(g, node)) { DF_FREE(out_of); goto oom; }
    node->gg = gg;
    /* outside nodes read the node's outputs and wait for it instead of the members */
    for (int i = 0; i < n; i++) {
        df_node *x = g->nodes[i];
        if (in_s[i]) continue;
        for (int k = 0; k < x->n_inputs; k++) {
            df_output *o = &x->inputs[k];
            if (pos[o->node->id] >= 0) { int v = gg->val_start[pos[o->node->id]] + o->index; *o = (df_output){node, out_of[v]}; }
        }
        int had = 0, w = 0;
        for (int k = 0; k < x->n_controls; k++) {
            if (pos[x->controls[k]->id] >= 0) { if (!had++) x->controls[w++] = node; }
            else x->controls[w++] = x->controls[k];
        }
        x->n_controls = w;
    }
    for (int f = 0; f < n_fetches; f++)
        if (fetches[f].node != node && pos[fetches[f].node->id] >= 0) {
            int v = gg->val_start[pos[fetches[f].node->id]] + fetches[f].index;
            fetches[f] = (df_output){node, out_of[v]};
        }
    DF_FREE(out_of);
    int n_all = 0;
    for (int i = 0; i < n; i++) {
        int fed = 0;
        for (int f = 0; f < n_feeds && !fed; f++) fed = feeds[f].node == g->nodes[i];
        if (!fed && !in_s[i]) all[n_all++] = g->nodes[i];
    }
    all[n_all++] = node;
    *all_out = all; *n_all_out = n_all;
    DF_FREE(in_s); DF_FREE(order); DF_FREE(deg);
    return DF_OK;
none:
    DF_FREE(in_s); DF_FREE(order); DF_FREE(deg);
    return DF_OK;
oom:
    if (node && !node->gg) { df__node_free(node); node = NULL; }
    df__gg_free(gg);
    DF_FREE(all); DF_FREE(in_s); DF_FREE(order); DF_FREE(deg);
    return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a GPU graph");
}
#endif /* DATAFLOW_CUDA */

/* Whether a value partition p sends can come back to p through other partitions (p's nodes
   then cannot wait for each other as one node). A walk from p's Sends: to the Recv of the same
   key, forward through that partition's consumers, through its Sends, and so on. */
static int df__gg_returns(const df__plan *plan, int p, df_status *st) {
    int np = plan->n_parts, total = 0, found = 0;
    for (int q = 0; q < np; q++) total += plan->parts[q].g->n_nodes;
    int32_t *base = (int32_t *)DF_MALLOC(((size_t)np + 1) * sizeof(int32_t));
    int32_t *start = (int32_t *)DF_MALLOC(((size_t)total + 2) * sizeof(int32_t));
    unsigned char *seen = (unsigned char *)DF_MALLOC((size_t)total + 1);
    int32_t *stack = (int32_t *)DF_MALLOC(((size_t)total + 1) * sizeof(int32_t)), *cons = NULL;
    df__strmap recvs;                                /* "_key" -> global index of its Recv */
    memset(&recvs, 0, sizeof recvs);
    int ok = base && start && seen && stack;
    if (ok) {
        memset(seen, 0, (size_t)total);
        memset(start, 0, ((size_t)total + 2) * sizeof(int32_t));
        for (int q = 0, b = 0; q < np; q++) { base[q] = b; b += plan->parts[q].g->n_nodes; }
        /* consumers (CSR over global indices): data and control edges within each partition */
        for (int q = 0; q < np; q++) {
            const df_graph *g = plan->parts[q].g;
            for (int i = 0; i < g->n_nodes; i++) {
                const df_node *x = g->nodes[i];
                for (int k = 0; k < x->n_inputs; k++) start[base[q] + x->inputs[k].node->id + 2]++;
                for (int k = 0; k < x->n_controls; k++) start[base[q] + x->controls[k]->id + 2]++;
            }
        }
        for (int i = 0; i < total; i++) start[i + 2] += start[i + 1];
        ok = (cons = (int32_t *)DF_MALLOC(((size_t)start[total + 1] + 1) * sizeof(int32_t))) != NULL;
        for (int q = 0; ok && q < np; q++) {
            const df_graph *g = plan->parts[q].g;
            for (int i = 0; i < g->n_nodes; i++) {
                const df_node *x = g->nodes[i];
                for (int k = 0; k < x->n_inputs; k++) cons[start[base[q] + x->inputs[k].node->id + 1]++] = base[q] + i;
                for (int k = 0; k < x->n_controls; k++) cons[start[base[q] + x->controls[k]->id + 1]++] = base[q] + i;
                if ((x->op->flags & DF__OP_RECV) || ((x->op->flags & DF__OP_TRANSFER) && x->n_inputs == 0)) {
                    char key[32];
                    snprintf(key, sizeof key, "%lld", (long long)df__attr_i(x, "_key", -1));
                    if (!df__strmap_put(&recvs, key, base[q] + i)) ok = 0;
                }
            }
        }
    }
    int top = 0;
    const df_graph *pg = ok ? plan->parts[p].g : NULL;
    for (int i = 0; ok && i < pg->n_nodes; i++) stack[top++] = base[p] + i;   /* p's nodes; only Sends leave */
    while (ok && top && !found) {
        int u = stack[--top], q = 0;
        while (q + 1 < np && base[q + 1] <= u) q++;
        const df_node *x = plan->parts[q].g->nodes[u - base[q]];
        if (q != p) for (int e = start[u]; e < start[u + 1]; e++) if (!seen[cons[e]]) { seen[cons[e]] = 1; stack[top++] = cons[e]; }
        if ((x->op->flags & DF__OP_TRANSFER) && x->n_inputs > 0) {             /* a Send: to its Recv */
            char key[32];
            int r;
            snprintf(key, sizeof key, "%lld", (long long)df__attr_i(x, "_key", -1));
            if (df__strmap_get(&recvs, key, &r)) {
                if (r >= base[p] && r < base[p] + pg->n_nodes) { if (q != p) found = 1; }
                else if (!seen[r]) { seen[r] = 1; stack[top++] = r; }
            }
        }
    }
    if (!ok) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory looking for paths between partitions");
    df__strmap_free(&recvs);
    DF_FREE(base); DF_FREE(start); DF_FREE(seen); DF_FREE(stack); DF_FREE(cons);
    return found;
}

/* A partition's executor: everything in its graph runs (the whole graph was pruned already).
   A GPU partition of a run without Switch becomes a GPU graph node with cuda_graphs. */
static df_code df__pb_compile(df_session *ss, df__part *pt, const df_output *feeds, int n_feeds,
                              df_output *fetches, int n_fetches, int no_switch, df_status *st) {
    df_graph *g = pt->g;
    df_node **all = NULL;
    int n_all = 0;
#ifdef DATAFLOW_CUDA
    if (ss->opts.cuda_graphs && pt->dev->gpu && no_switch &&
        df__gg_rewrite(ss, pt, feeds, n_feeds, fetches, n_fetches, &all, &n_all, st) != DF_OK) return st->code;
#else
    DF__UNUSED(no_switch);
#endif
    if (!all) {
        all = (df_node **)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(df_node *));
        if (!all) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory compiling a partition");
        for (int i = 0; i < g->n_nodes; i++) {
            int fed = 0;                     /* a fed placeholder only stands for its value */
            for (int f = 0; f < n_feeds && !fed; f++) fed = feeds[f].node == g->nodes[i];
            if (!fed) all[n_all++] = g->nodes[i];
        }
    }
    pt->x = df__compile(ss, g, feeds, n_feeds, fetches, n_fetches, all, n_all, pt->dev, st);
    DF_FREE(all);
    if (!pt->x && st->code != DF_RESOURCE_EXHAUSTED) {
        char why[sizeof st->message];
        memcpy(why, st->message, sizeof why);
        return df_status_set(st, DF_INTERNAL, "The partition for %s does not compile: %.400s", pt->dev->name, why);
    }
    return pt->x ? DF_OK : st->code;
}

/* Prune and validate (one executor over the caller's graph), place, and when several devices
   are used, partition. */
static df__plan *df__plan_build(df_session *ss, const df_output *feeds, int n_feeds, const df_output *fetches,
                                int n_fetches, df_node *const *targets, int n_targets, df_status *st) {
    df__exec *x = df__compile(ss, ss->g, feeds, n_feeds, fetches, n_fetches, targets, n_targets, NULL, st);
    if (!x) return NULL;
    int32_t *dev = (int32_t *)DF_MALLOC((size_t)(x->n_items + 1) * sizeof(int32_t));
    if (!dev) { df__exec_free(x); df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory placing the graph"); return NULL; }
    if (df__place(ss, x, dev, st) != DF_OK) { DF_FREE(dev); df__exec_free(x); return NULL; }
    int first = -1, many = 0;
    for (int i = 0; i < x->n_items; i++)
        if (dev[i] >= 0) { if (first < 0) first = dev[i]; else if (dev[i] != first) many = 1; }
    df__plan *plan = NULL;
    /* A device without host memory always gets a partition of its own: its graph runs its own
       kernels, and values cross between memory types through Send/Recv pairs. */
    if (many || ss->cluster || (first >= 0 && !ss->devices[first]->host_memory)) {
        plan = df__partition(ss, x, dev, feeds, n_feeds, fetches, n_fetches, st);
        df__exec_free(x);
        if (plan && ss->cluster && df__cluster_register(ss, plan, st) != DF_OK) { df__plan_free(plan); plan = NULL; }
    } else {
        plan = (df__plan *)DF_MALLOC(sizeof *plan);
        df__part *pt = (df__part *)DF_MALLOC(sizeof *pt);
        if (!plan || !pt) {
            DF_FREE(plan); DF_FREE(pt); df__exec_free(x);
            df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory making a plan");
            plan = NULL;
        } else {
            memset(plan, 0, sizeof *plan);
            memset(pt, 0, sizeof *pt);
            pt->g = ss->g; pt->x = x; pt->dev = ss->devices[first < 0 ? 0 : first];
            plan->parts = pt; plan->n_parts = 1;
        }
    }
    DF_FREE(dev);
    return plan;
}

/* Runs a plan: one executor on the calling thread, or every partition together. */
static df_code df__run_plan(df_session *s, df__plan *plan, df_tensor *const *feed_values, df_tensor **fetch_values,
                            int n_fetches, df_status *st) {
    if (s->cluster) return df__cluster_run(s, plan, feed_values, fetch_values, n_fetches, st);
    if (!plan->owns_graphs) {
        df__step step;
        memset(&step, 0, sizeof step);
        step.x = plan->parts[0].x;
        step.session = s;
        step.device = plan->parts[0].dev;
        step.feeds = feed_values;
        step.fetches = fetch_values;
        step.ipool = s->ipool;
#ifndef DF_NO_THREADS
        step.pool = s->pool;
        step.threaded = s->pool != NULL;
#endif
        return df__execute(&step, st);
    }
    int np = plan->n_parts;
    df__pgroup g;
    memset(&g, 0, sizeof g);
    size_t nfeeds = 0, nfetch = 0;
    for (int p = 0; p < np; p++) { nfeeds += (size_t)plan->parts[p].n_feeds; nfetch += (size_t)plan->parts[p].n_fetches; }
    g.steps = (df__step *)DF_MALLOC((size_t)np * sizeof(df__step));
    df_tensor **feeds = (df_tensor **)DF_MALLOC((nfeeds + 1) * sizeof(df_tensor *));
    df_tensor **fetches = (df_tensor **)DF_MALLOC((nfetch + 1) * sizeof(df_tensor *));
    if (!g.steps || !feeds || !fetches || !df__rv_init(&g.rv)) {
        DF_FREE(g.steps); DF_FREE(feeds); DF_FREE(fetches); DF_FREE(g.rv.buckets);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory starting a partitioned run");
    }
    memset(g.steps, 0, (size_t)np * sizeof(df__step));
    memset(fetches, 0, (nfetch + 1) * sizeof(df_tensor *));
    g.n_steps = np;
    size_t fa = 0, fo = 0;
    for (int p = 0; p < np; p++) {
        df__part *pt = &plan->parts[p];
        df__step *step = &g.steps[p];
        for (int k = 0; k < pt->n_feeds; k++) feeds[fa + (size_t)k] = feed_values[pt->feed_map[k]];
        step->x = pt->x;
        step->session = s;
        step->device = pt->dev;
        step->feeds = feeds + fa;
        step->fetches = fetches + fo;
        step->group = &g;
        step->home = &g.steps[0];
        step->ipool = s->ipool;
#ifndef DF_NO_THREADS
        step->pool = s->pool;
        step->threaded = s->pool != NULL;
        step->shared = step->threaded;
#endif
        fa += (size_t)pt->n_feeds;
        fo += (size_t)pt->n_fetches;
    }
    df_code code = df__group_execute(&g, st);
    fo = 0;
    for (int p = 0; p < np; p++) {
        const df__part *pt = &plan->parts[p];
        for (int k = 0; k < pt->n_fetches; k++) {
            df_tensor *v = fetches[fo + (size_t)k];
            if (code == DF_OK && n_fetches > pt->fetch_map[k]) fetch_values[pt->fetch_map[k]] = v;
            else df_tensor_release(v);
        }
        fo += (size_t)pt->n_fetches;
    }
    df__rv_free(&g.rv);
    DF_FREE(g.steps); DF_FREE(feeds); DF_FREE(fetches);
    return code;
}

df_code df_graph_validate(const df_graph *g, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "df_graph_validate: graph is NULL");
    if (g->status.code) { *st = g->status; return st->code; }
    struct df_session fake;
    memset(&fake, 0, sizeof fake);
    fake.g = (df_graph *)g;
    df_node **all = (df_node **)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(df_node *));
    if (!all) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    for (int i = 0; i < g->n_nodes; i++) all[i] = g->nodes[i];
    df__exec *x = df__compile(&fake, (df_graph *)g, NULL, 0, NULL, 0, all, g->n_nodes, NULL, st);
    DF_FREE(all);
    df__exec_free(x);
    return st->code;
}

static int df__shape_compatible(const df__shape *s, const df_tensor *t) {
    if (s->rank < 0) return 1;
    if (s->rank != t->rank) return 0;
    for (int i = 0; i < s->rank; i++) if (s->dims[i] >= 0 && s->dims[i] != t->dims[i]) return 0;
    return 1;
}

df_code df_session_run(df_session *s, const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                       const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                       df_node *const *targets, int n_targets, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!s) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run: session is NULL");
    if (n_feeds < 0 || n_fetches < 0 || n_targets < 0)
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run: negative count");
    if ((n_feeds && (!feeds || !feed_values)) || (n_fetches && (!fetches || !fetch_values)) || (n_targets && !targets))
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_run: an array is NULL but its count is not zero");
    for (int i = 0; i < n_fetches; i++) fetch_values[i] = NULL;
    df_graph *g = s->g;
    if (g->status.code)
        return df_status_set(st, g->status.code, "The graph has an error and cannot run: %s", g->status.message);
    for (int i = 0; i < n_feeds; i++) {
        df_output o = feeds[i];
        if (!o.node || o.node->graph != g) return df_status_set(st, DF_INVALID_ARGUMENT, "Feed %d is NULL or from another graph", i);
        if (!df__output_valid(o)) return df_status_set(st, DF_INVALID_ARGUMENT, "Feed %d: '%s' has no output %d {{node %s}}", i, o.node->name, o.index, o.node->name);
        const df_tensor *v = feed_values[i];
        if (!v) return df_status_set(st, DF_INVALID_ARGUMENT, "Feed %d ('%s:%d') has a NULL value", i, o.node->name, o.index);
        if (v->dtype != o.node->out_types[o.index])
            return df_status_set(st, DF_INVALID_ARGUMENT, "Cannot feed a %s tensor to '%s:%d', which has type %s {{node %s}}",
                                 df_dtype_name(v->dtype), o.node->name, o.index, df_dtype_name(o.node->out_types[o.index]), o.node->name);
        if (!df__shape_compatible(&o.node->out_shapes[o.index], v)) {
            char s1[128], s2[128];
            const df__shape *sh = &o.node->out_shapes[o.index];
            return df_status_set(st, DF_INVALID_ARGUMENT, "Cannot feed value of shape %s for tensor '%s:%d', which has shape %s {{node %s}}",
                                 df__dims_str(v->rank, v->dims, s1, 128), o.node->name, o.index,
                                 df__dims_str(sh->rank, sh->dims, s2, 128), o.node->name);
        }
        for (int j = 0; j < i; j++)
            if (feeds[j].node == o.node && feeds[j].index == o.index)
                return df_status_set(st, DF_INVALID_ARGUMENT, "'%s:%d' is fed more than once {{node %s}}", o.node->name, o.index, o.node->name);
    }
    for (int i = 0; i < n_fetches; i++) {
        df_output o = fetches[i];
        if (!o.node || o.node->graph != g) return df_status_set(st, DF_INVALID_ARGUMENT, "Fetch %d is NULL or from another graph", i);
        if (!df__output_valid(o)) return df_status_set(st, DF_INVALID_ARGUMENT, "Fetch %d: '%s' has no output %d {{node %s}}", i, o.node->name, o.index, o.node->name);
    }
    for (int i = 0; i < n_targets; i++)
        if (!targets[i] || targets[i]->graph != g) return df_status_set(st, DF_INVALID_ARGUMENT, "Target %d is NULL or from another graph", i);
    /* the signature */
    df__buf key = {NULL, 0, 0, 0};
    df__buf_printf(&key, "e%llu;", (unsigned long long)g->edit_version);
    for (int i = 0; i < n_feeds; i++) df__buf_printf(&key, "f%d:%d,", feeds[i].node->id, feeds[i].index);
    for (int i = 0; i < n_fetches; i++) df__buf_printf(&key, "o%d:%d,", fetches[i].node->id, fetches[i].index);
    for (int i = 0; i < n_targets; i++) df__buf_printf(&key, "t%d,", targets[i]->id);
    if (key.oom) { DF_FREE(key.s); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    df__plan *plan = NULL;
    int idx;
    df__spin_lock(&s->lock);
    if (df__strmap_get(&s->cache, key.s, &idx)) plan = s->plans[idx];
    df__spin_unlock(&s->lock);
    if (!plan) {
        plan = df__plan_build(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, st);
        if (!plan) { DF_FREE(key.s); return st->code; }
        df__spin_lock(&s->lock);
        if (df__strmap_get(&s->cache, key.s, &idx)) {          /* another thread won the race */
            df__plan_free(plan);
            plan = s->plans[idx];
        } else if (df__grow(&s->plans, &s->cap_plans, s->n_plans + 1, sizeof(df__plan *)) &&
                   df__strmap_put(&s->cache, key.s, s->n_plans)) {
            s->plans[s->n_plans++] = plan;
        } else {
            df__spin_unlock(&s->lock);
            df__plan_free(plan);
            DF_FREE(key.s);
            return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory caching an executor");
        }
        df__spin_unlock(&s->lock);
    }
    DF_FREE(key.s);
    __atomic_store_n(&s->last_plan, plan, __ATOMIC_RELEASE);
    df_code code = df__run_plan(s, plan, feed_values, fetch_values, n_fetches, st);
    __atomic_store_n(&s->ran, 1, __ATOMIC_RELAXED);
    for (int i = 0; code == DF_OK && i < n_fetches; i++)
        if (!fetch_values[i])
            code = df_status_set(st, DF_INVALID_ARGUMENT, "Fetch %d ('%s:%d') was never computed: a node it "
                                 "depends on waits for an input or control edge that this run never produces",
                                 i, fetches[i].node->name, fetches[i].index);
    if (code != DF_OK)
        for (int i = 0; i < n_fetches; i++) { df_tensor_release(fetch_values[i]); fetch_values[i] = NULL; }
    return code;
}

/* ==========================================================================================
   19. SERIALIZATION AND PICTURES                                                     >>serial
   Graphviz pictures: data edges solid, control edges dashed, while-loop frames as nested
   clusters (from the static frame analysis), devices under the op names, _Send/_Recv in
   orange and partitions' control loops in blue. GraphDef and .npy come with the file-format work.
   ========================================================================================== */
static void df__dot_escape(FILE *f, const char *s) {
    for (; *s; s++) { if (*s == '"' || *s == '\\') fputc('\\', f); fputc(*s, f); }
}

df_code df_graph_write_dot(const df_graph *g, FILE *f) {
    if (!g || !f) return DF_INVALID_ARGUMENT;
    df_status st;
    df_status_clear(&st);
    struct df_session fake;
    memset(&fake, 0, sizeof fake);
    fake.g = (df_graph *)g;
    df__exec *x = NULL;
    df_node **all = (df_node **)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(df_node *));
    if (all && !g->status.code) {
        for (int i = 0; i < g->n_nodes; i++) all[i] = g->nodes[i];
        x = df__compile(&fake, (df_graph *)g, NULL, 0, NULL, 0, all, g->n_nodes, NULL, &st);
    }
    DF_FREE(all);
    /* With a valid analysis, item i of x is... found through a node -> item map. */
    int *frame_of = (int *)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(int));
    if (frame_of) for (int i = 0; i < g->n_nodes; i++) frame_of[i] = 0;
    if (x && frame_of)
        for (int i = 0; i < x->n_items; i++) if (x->items[i].node) frame_of[x->items[i].node->id] = x->items[i].frame;
    fprintf(f, "digraph dataflow {\n  node [shape=box, fontsize=10];\n");
    int n_frames = x ? x->n_frames : 1;
    /* clusters, outermost first: emit each frame's nodes inside nested subgraphs */
    for (int fr = 0; fr < n_frames; fr++) {
        int depth = 0;
        if (fr > 0) {
            int chain[64], nc = 0;
            for (int k = fr; k > 0 && nc < 64; k = x->frames[k].parent) chain[nc++] = k;
            for (int k = nc - 1; k >= 0; k--) {
                fprintf(f, "  subgraph cluster_f%d_%d {\n    label=\"", fr, k);
                df__dot_escape(f, x->frames[chain[k]].name);
                fprintf(f, "\"; style=rounded;\n");
                depth++;
            }
        }
        for (int i = 0; i < g->n_nodes; i++) {
            if ((frame_of ? frame_of[i] : 0) != fr) continue;
            const df_node *n = g->nodes[i];
            fprintf(f, "    n%d [label=\"", i);
            df__dot_escape(f, n->name);
            fprintf(f, "\\n%s", n->op->name);
            df__devspec ds;                      /* placed or requested device, short form */
            if (n->device && *n->device && df__parse_device(n->device, &ds) && ds.type[0]) {
                if (ds.task > 0 || (ds.job[0] && strcmp(ds.job, "localhost"))) fprintf(f, "\\n/job:%s/task:%d", ds.job, ds.task);
                fprintf(f, "\\n%s:%d", ds.type, ds.index);
            }
            fprintf(f, "\"%s];\n", (n->op->flags & DF__OP_TRANSFER) ? ", style=filled, fillcolor=\"#ffe0a0\"" :
                    !strncmp(n->name, "_cloop", 6) ? ", style=filled, fillcolor=\"#e0e0ff\"" : "");
        }
        for (int k = 0; k < depth; k++) fprintf(f, "  }\n");
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const df_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            fprintf(f, "  n%d -> n%d%s;\n", n->inputs[k].node->id, i, n->inputs[k].index ? " [taillabel=\"1\"]" : "");
        for (int k = 0; k < n->n_controls; k++)
            fprintf(f, "  n%d -> n%d [style=dashed];\n", n->controls[k]->id, i);
    }
    fprintf(f, "}\n");
    DF_FREE(frame_of);
    df__exec_free(x);
    return ferror(f) ? DF_DATA_LOSS : DF_OK;
}

/* ---- protocol buffers: a bounded reader and writer of the wire format ----
   Enough for GraphDef and what it holds. The reader works on a byte range: every varint, tag,
   length and nesting depth is checked against what is left, so no read goes past the buffer.
   Unknown fields are skipped by their wire type (groups are refused). */
enum { DF__PB_VARINT = 0, DF__PB_I64 = 1, DF__PB_LEN = 2, DF__PB_I32 = 5, DF__PB_MAX_DEPTH = 32 };
typedef struct df__pb { const uint8_t *p, *end; } df__pb;
static int df__pb_varint(df__pb *r, uint64_t *v) {
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return 0;
        uint8_t c = *r->p++;
        if (i == 9 && c > 1) return 0;                  /* more than 64 bits */
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) { *v = x; return 1; }
    }
    return 0;
}
static int df__pb_fixed(df__pb *r, int bytes, uint64_t *v) {
    if (r->end - r->p < bytes) return 0;
    uint64_t x = 0;
    for (int i = 0; i < bytes; i++) x |= (uint64_t)r->p[i] << (8 * i);
    r->p += bytes;
    *v = x;
    return 1;
}
/* The next field: its number (1 .. 2^29-1) and wire type; 0 at the end or when malformed
   (*bad set then). */
static int df__pb_next(df__pb *r, uint32_t *field, int *wt, int *bad) {
    *bad = 0;
    if (r->p >= r->end) return 0;
    uint64_t key;
    if (!df__pb_varint(r, &key) || key >> 32) { *bad = 1; return 0; }
    *field = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    if (*field == 0 || (*wt != DF__PB_VARINT && *wt != DF__PB_I64 && *wt != DF__PB_LEN && *wt != DF__PB_I32)) {
        *bad = 1;
        return 0;
    }
    return 1;
}
/* A length-delimited field's bytes as a sub-reader. */
static int df__pb_sub(df__pb *r, df__pb *sub) {
    uint64_t n;
    if (!df__pb_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return 0;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 1;
}
static int df__pb_skip(df__pb *r, int wt) {
    uint64_t v;
    df__pb s;
    switch (wt) {
    case DF__PB_VARINT: return df__pb_varint(r, &v);
    case DF__PB_I64: return df__pb_fixed(r, 8, &v);
    case DF__PB_I32: return df__pb_fixed(r, 4, &v);
    case DF__PB_LEN: return df__pb_sub(r, &s);
    default: return 0;
    }
}
/* Calls fn for each value of a repeated scalar field, packed (one LEN field) or not. */
static int df__pb_each(df__pb *r, int wt, int scalar_wt, int (*fn)(void *, uint64_t), void *user) {
    uint64_t v;
    if (wt == scalar_wt) {
        if (!(scalar_wt == DF__PB_VARINT ? df__pb_varint(r, &v) : df__pb_fixed(r, scalar_wt == DF__PB_I64 ? 8 : 4, &v))) return 0;
        return fn(user, v);
    }
    if (wt != DF__PB_LEN) return 0;
    df__pb s;
    if (!df__pb_sub(r, &s)) return 0;
    while (s.p < s.end) {
        if (!(scalar_wt == DF__PB_VARINT ? df__pb_varint(&s, &v) : df__pb_fixed(&s, scalar_wt == DF__PB_I64 ? 8 : 4, &v))) return 0;
        if (!fn(user, v)) return 0;
    }
    return 1;
}

/* The writer: a growing buffer; a message inside another is written to its own writer first,
   then appended with its length. */
typedef struct df__pbw { uint8_t *buf; size_t len, cap; int oom; } df__pbw;
static void df__pbw_raw(df__pbw *w, const void *data, size_t n) {
    if (w->oom || !n) return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n) cap *= 2;
        uint8_t *nb = (uint8_t *)DF_REALLOC(w->buf, cap);
        if (!nb) { w->oom = 1; return; }
        w->buf = nb;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
}
static void df__pbw_varint(df__pbw *w, uint64_t v) {
    uint8_t b[10];
    int n = 0;
    do { b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
    df__pbw_raw(w, b, (size_t)n);
}
static void df__pbw_tag(df__pbw *w, uint32_t field, int wt) { df__pbw_varint(w, (uint64_t)field << 3 | (uint64_t)wt); }
static void df__pbw_uint(df__pbw *w, uint32_t field, uint64_t v) { df__pbw_tag(w, field, DF__PB_VARINT); df__pbw_varint(w, v); }
static void df__pbw_bytes(df__pbw *w, uint32_t field, const void *data, size_t n) {
    df__pbw_tag(w, field, DF__PB_LEN);
    df__pbw_varint(w, n);
    df__pbw_raw(w, data, n);
}
static void df__pbw_str(df__pbw *w, uint32_t field, const char *s) { df__pbw_bytes(w, field, s, strlen(s)); }
static void df__pbw_msg(df__pbw *w, uint32_t field, df__pbw *sub) {   /* appends sub, frees it */
    if (sub->oom) w->oom = 1;
    else df__pbw_bytes(w, field, sub->buf, sub->len);
    DF_FREE(sub->buf);
    memset(sub, 0, sizeof *sub);
}

/* ---- TensorFlow GraphDef import and export ----
   GraphDef: node = 1 (NodeDef), versions = 4; NodeDef: name 1, op 2, input 3, device 4, attr 5
   (map entries: key 1, value 2); AttrValue: list 1, s 2, i 3, f 4, b 5, type 6, shape 7,
   tensor 8; ListValue: s 2, i 3, f 4, b 5, type 6; TensorShapeProto: dim 2 (size 1),
   unknown_rank 3; TensorProto: dtype 1, tensor_shape 2, tensor_content 4, then the typed
   value fields. Import maps each NodeDef onto the op of the same name, in an order where every
   input exists first (NextIteration -> Merge edges, the loops' back edges, are patched in
   afterwards), so a graph TensorFlow wrote with v1 control flow comes back as it was. */
enum { DF__GD_MAX_TENSOR_FILL = 1 << 28 };   /* bytes a short TensorProto may be expanded to */
typedef struct df__gd_str { const uint8_t *p; size_t n; } df__gd_str;
typedef struct df__gd_attr { df__gd_str key; df__pb value; } df__gd_attr;
typedef struct df__gd_node {
    df__gd_str name, op, device;
    df__gd_str *inputs;
    df__gd_attr *attrs;
    int n_inputs, cap_inputs, n_attrs, cap_attrs;
    char *full;                    /* the node's name in the graph (prefix included), owned */
    int *src;                      /* per input: the index of its node */
    int n_data;                    /* data inputs (the control inputs follow them) */
    int indeg, done;
    df_node *made;
} df__gd_node;
typedef struct df__gd {
    df__gd_node *nodes;
    int n, cap;
    df__strmap index;              /* GraphDef name -> node index */
    df_status *st;
} df__gd;

static df_code df__gd_bad(df__gd *d, const char *what, const df__gd_node *n) {
    if (n && n->name.n)
        return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s (node '%.*s')", what, (int)DF__MIN(n->name.n, (size_t)200),
                             (const char *)n->name.p);
    return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s", what);
}
/* A string field: no NUL bytes inside (names, ops, devices become C strings). */
static int df__gd_string(df__pb *r, df__gd_str *s) {
    df__pb sub;
    if (!df__pb_sub(r, &sub)) return 0;
    s->p = sub.p;
    s->n = (size_t)(sub.end - sub.p);
    return memchr(s->p, 0, s->n) == NULL;
}
static char *df__gd_cstr(df__gd_str s, const char *prefix) {
    size_t pl = prefix && *prefix ? strlen(prefix) + 1 : 0;
    char *c = (char *)DF_MALLOC(pl + s.n + 1);
    if (!c) return NULL;
    if (pl) { memcpy(c, prefix, pl - 1); c[pl - 1] = '/'; }
    if (s.n) memcpy(c + pl, s.p, s.n);
    c[pl + s.n] = 0;
    return c;
}
static int df__gd_eq(df__gd_str s, const char *c) { return strlen(c) == s.n && !memcmp(s.p, c, s.n); }

static df_code df__gd_parse_node(df__gd *d, df__pb *r, df__gd_node *n) {
    uint32_t f;
    int wt, bad;
    while (df__pb_next(r, &f, &wt, &bad)) {
        int ok = 1;
        if ((f == 1 || f == 2 || f == 3 || f == 4) && wt != DF__PB_LEN)
            return df__gd_bad(d, "a NodeDef string field has the wrong wire type", n);
        if (f == 1) ok = df__gd_string(r, &n->name);
        else if (f == 2) ok = df__gd_string(r, &n->op);
        else if (f == 4) ok = df__gd_string(r, &n->device);
        else if (f == 3) {
            if (!df__grow(&n->inputs, &n->cap_inputs, n->n_inputs + 1, sizeof *n->inputs))
                return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            ok = df__gd_string(r, &n->inputs[n->n_inputs++]);
        } else if (f == 5) {
            if (wt != DF__PB_LEN) return df__gd_bad(d, "an attr entry has the wrong wire type", n);
            df__pb e;
            if (!df__pb_sub(r, &e)) return df__gd_bad(d, "truncated attr entry", n);
            df__gd_attr a;
            memset(&a, 0, sizeof a);
            a.value.p = a.value.end = e.p;
            uint32_t ef;
            int ewt, ebad;
            while (df__pb_next(&e, &ef, &ewt, &ebad)) {
                if (ef == 1 && ewt == DF__PB_LEN) { if (!df__gd_string(&e, &a.key)) return df__gd_bad(d, "bad attr name", n); }
                else if (ef == 2 && ewt == DF__PB_LEN) { if (!df__pb_sub(&e, &a.value)) return df__gd_bad(d, "truncated attr value", n); }
                else if (ef == 1 || ef == 2) return df__gd_bad(d, "an attr entry field has the wrong wire type", n);
                else if (!df__pb_skip(&e, ewt)) return df__gd_bad(d, "truncated attr entry", n);
            }
            if (ebad) return df__gd_bad(d, "malformed attr entry", n);
            if (!a.key.n) return df__gd_bad(d, "an attr has an empty name", n);
            int i = 0;              /* a repeated key: the last one wins, as in a protobuf map */
            while (i < n->n_attrs && !(n->attrs[i].key.n == a.key.n && !memcmp(n->attrs[i].key.p, a.key.p, a.key.n))) i++;
            if (i == n->n_attrs) {
                if (!df__grow(&n->attrs, &n->cap_attrs, n->n_attrs + 1, sizeof *n->attrs))
                    return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
                n->n_attrs++;
            }
            n->attrs[i] = a;
        } else ok = df__pb_skip(r, wt);
        if (!ok) return df__gd_bad(d, "truncated or malformed NodeDef field (or a NUL byte in a name)", n);
    }
    if (bad) return df__gd_bad(d, "malformed NodeDef (bad tag or wire type)", n);
    if (!n->name.n) return df__gd_bad(d, "a NodeDef has no name", NULL);
    if (!n->op.n) return df__gd_bad(d, "a NodeDef has no op", n);
    return DF_OK;
}
static df_code df__gd_parse(df__gd *d, const void *data, size_t len) {
    df__pb r = {(const uint8_t *)data, (const uint8_t *)data + len};
    uint32_t f;
    int wt, bad;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (f == 1) {
            if (wt != DF__PB_LEN) return df__gd_bad(d, "GraphDef.node has the wrong wire type", NULL);
            df__pb sub;
            if (!df__pb_sub(&r, &sub)) return df__gd_bad(d, "truncated NodeDef (a length runs past the end of the data)", NULL);
            if (d->n >= (1 << 24)) return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: more than %d nodes", 1 << 24);
            if (!df__grow(&d->nodes, &d->cap, d->n + 1, sizeof *d->nodes))
                return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
            df__gd_node *n = &d->nodes[d->n++];
            memset(n, 0, sizeof *n);
            if (df__gd_parse_node(d, &sub, n)) return d->st->code;
        } else if (f == 2 && wt == DF__PB_LEN) {
            df__pb sub;                /* the function library: functions are not supported yet */
            if (!df__pb_sub(&r, &sub)) return df__gd_bad(d, "truncated function library", NULL);
        } else if (!df__pb_skip(&r, wt)) return df__gd_bad(d, "truncated or malformed GraphDef field", NULL);
    }
    if (bad) return df__gd_bad(d, "malformed GraphDef (bad tag or wire type): not a binary GraphDef?", NULL);
    return DF_OK;
}
static void df__gd_free(df__gd *d) {
    for (int i = 0; i < d->n; i++) {
        DF_FREE(d->nodes[i].inputs); DF_FREE(d->nodes[i].attrs); DF_FREE(d->nodes[i].full); DF_FREE(d->nodes[i].src);
    }
    DF_FREE(d->nodes);
    df__strmap_free(&d->index);
}

/* An input string: "^name" (control), "name:k" or "name". */
static int df__gd_input(df__gd_str s, df__gd_str *name, int *index, int *control) {
    *control = s.n > 0 && s.p[0] == '^';
    name->p = s.p + *control;
    name->n = s.n - (size_t)*control;
    *index = 0;
    const uint8_t *colon = NULL;
    for (size_t i = 0; i < name->n; i++) if (name->p[i] == ':') colon = name->p + i;
    if (colon && !*control) {
        size_t digits = (size_t)(name->p + name->n - colon - 1);
        if (digits == 0 || digits > 9) return 0;
        int64_t v = 0;
        for (size_t i = 1; i <= digits; i++) {
            if (colon[i] < '0' || colon[i] > '9') return 0;
            v = v * 10 + (colon[i] - '0');
        }
        *index = (int)v;
        name->n = (size_t)(colon - name->p);
    }
    return name->n > 0;
}

/* ---- AttrValue and TensorProto decoding ---- */
typedef struct df__gd_val { uint32_t field; int wt; df__pb sub; uint64_t v; } df__gd_val;
/* The AttrValue's one set field (the last one written wins, as for a protobuf oneof). */
static int df__gd_attr_value(df__pb r, df__gd_val *out) {
    uint32_t f;
    int wt, bad;
    memset(out, 0, sizeof *out);
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (f < 1 || f > 10) { if (!df__pb_skip(&r, wt)) return 0; continue; }
        df__gd_val v;
        memset(&v, 0, sizeof v);
        v.field = f;
        v.wt = wt;
        if (wt == DF__PB_LEN) { if (!df__pb_sub(&r, &v.sub)) return 0; }
        else if (wt == DF__PB_VARINT) { if (!df__pb_varint(&r, &v.v)) return 0; }
        else if (!df__pb_fixed(&r, wt == DF__PB_I64 ? 8 : 4, &v.v)) return 0;
        *out = v;
    }
    return !bad;
}
static const char *df__gd_field_kind(uint32_t f) {
    static const char *k[] = {"nothing", "list", "string", "int", "float", "bool", "type", "shape", "tensor",
                               "placeholder", "func"};
    return f <= 10 ? k[f] : "unknown";
}
static int df__gd_shape(df__pb r, int *rank, int64_t *dims, int depth) {
    uint32_t f;
    int wt, bad, unknown = 0;
    *rank = 0;
    if (depth > DF__PB_MAX_DEPTH) return 0;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        if (f == 2 && wt == DF__PB_LEN) {
            df__pb dr;
            if (!df__pb_sub(&r, &dr) || *rank >= DF_MAX_RANK) return 0;
            int64_t size = 0;
            uint32_t df_;
            int dwt, dbad;
            while (df__pb_next(&dr, &df_, &dwt, &dbad)) {
                uint64_t v;
                if (df_ == 1 && dwt == DF__PB_VARINT) { if (!df__pb_varint(&dr, &v)) return 0; size = (int64_t)v; }
                else if (df_ == 1) return 0;
                else if (!df__pb_skip(&dr, dwt)) return 0;
            }
            if (dbad || size < -1) return 0;
            dims[(*rank)++] = size;
        } else if (f == 3 && wt == DF__PB_VARINT) {
            uint64_t v;
            if (!df__pb_varint(&r, &v)) return 0;
            unknown = v != 0;
        } else if (f == 2 || f == 3) return 0;
        else if (!df__pb_skip(&r, wt)) return 0;
    }
    if (bad) return 0;
    if (unknown) *rank = -1;
    return 1;
}
typedef struct df__gd_fill { df_tensor *t; int64_t i, cap; int wide; } df__gd_fill;
/* Stores value v (raw bits from the wire) as element i of the tensor, converting by dtype. */
static int df__gd_put(void *user, uint64_t v) {
    df__gd_fill *f = (df__gd_fill *)user;
    df_tensor *t = f->t;
    if (f->i >= f->cap) { f->i++; return 1; }          /* counted: too many is an error later */
    int64_t i = f->i++;
    void *p = t->data;
    switch (t->dtype) {
    case DF_FLOAT: { uint32_t b = (uint32_t)v; memcpy((float *)p + i, &b, 4); break; }
    case DF_DOUBLE: memcpy((double *)p + i, &v, 8); break;
    case DF_COMPLEX64: { uint32_t b = (uint32_t)v; memcpy((float *)p + i, &b, 4); break; }
    case DF_COMPLEX128: memcpy((double *)p + i, &v, 8); break;
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case DF_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case DF_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case DF_UINT16: case DF_HALF: case DF_BFLOAT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case DF_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case DF_INT64: case DF_UINT64: ((uint64_t *)p)[i] = v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: return 0;
    }
    return 1;
}
/* The typed value field of each dtype, and the wire type of its elements. */
static int df__gd_value_field(df_dtype t, int *wt) {
    *wt = DF__PB_VARINT;
    switch (t) {
    case DF_FLOAT: *wt = DF__PB_I32; return 5;
    case DF_DOUBLE: *wt = DF__PB_I64; return 6;
    case DF_COMPLEX64: *wt = DF__PB_I32; return 9;
    case DF_COMPLEX128: *wt = DF__PB_I64; return 12;
    case DF_INT32: case DF_INT16: case DF_INT8: case DF_UINT8: case DF_UINT16: return 7;
    case DF_INT64: return 10;
    case DF_BOOL: return 11;
    case DF_HALF: case DF_BFLOAT16: return 13;
    case DF_UINT32: return 16;
    case DF_UINT64: return 17;
    default: return 0;
    }
}
static df_tensor *df__gd_tensor(df__pb r, const char *where, df_status *st) {
    uint32_t f;
    int wt, bad, rank = -2;
    int64_t dims[DF_MAX_RANK];
    uint64_t dtype = 0;
    df__pb content = {NULL, NULL};
    int has_content = 0;
    df__pb scan = r;
    while (df__pb_next(&scan, &f, &wt, &bad)) {
        if (f == 1 && wt == DF__PB_VARINT) { if (!df__pb_varint(&scan, &dtype)) goto malformed; }
        else if (f == 2 && wt == DF__PB_LEN) {
            df__pb s;
            if (!df__pb_sub(&scan, &s) || !df__gd_shape(s, &rank, dims, 1)) goto malformed;
        } else if (f == 4 && wt == DF__PB_LEN) { if (!df__pb_sub(&scan, &content)) goto malformed; has_content = 1; }
        else if (f == 1 || f == 2 || f == 4) goto malformed;
        else if (!df__pb_skip(&scan, wt)) goto malformed;
    }
    if (bad) goto malformed;
    if (rank == -2) rank = 0;                       /* no shape: a scalar */
    if (rank < 0) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a tensor value has an unknown rank", where); return NULL; }
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a tensor value has an unknown dimension", where); return NULL; }
    df_dtype t = (df_dtype)dtype;
    if (t == DF_STRING) {                        /* string_val (8): one per element, or one for all */
        int64_t n = 1, count = 0, total = 0;
        for (int i = 0; i < rank; i++) {
            if (dims[i] && n > (int64_t)(1 << 24) / dims[i]) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: too many strings", where); return NULL; }
            n *= dims[i];
        }
        scan = r;
        while (df__pb_next(&scan, &f, &wt, &bad)) {
            df__pb sv;
            if (f == 8 && wt == DF__PB_LEN) { if (!df__pb_sub(&scan, &sv)) goto malformed; count++; total += sv.end - sv.p; }
            else if (!df__pb_skip(&scan, wt)) goto malformed;
        }
        if (bad || (count != n && !(count == 1 && n > 0)) || (count == 0 && n > 0) || total > ((int64_t)64 << 20)) {
            df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: %lld strings for a tensor of %lld, or over 64 MiB", where, (long long)count, (long long)n);
            return NULL;
        }
        char **v = (char **)DF_MALLOC(((size_t)n + 1) * sizeof(char *));
        if (!v) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); return NULL; }
        memset(v, 0, ((size_t)n + 1) * sizeof(char *));
        int64_t k = 0, ok = 1;
        scan = r;
        while (ok && df__pb_next(&scan, &f, &wt, &bad)) {
            df__pb sv;
            if (f == 8 && wt == DF__PB_LEN) {
                if (!df__pb_sub(&scan, &sv)) { ok = 0; break; }
                size_t len = (size_t)(sv.end - sv.p);
                if (memchr(sv.p, 0, len) || !(v[k] = (char *)DF_MALLOC(len + 1))) { ok = 0; break; }
                memcpy(v[k], sv.p, len);
                v[k++][len] = '\0';
            } else if (!df__pb_skip(&scan, wt)) ok = 0;
        }
        for (; ok && k < n; k++) v[k] = v[0];       /* (one value for all: shared, freed once) */
        df_tensor *out = ok ? df_tensor_new_strings(rank, dims, (const char *const *)v, st) : NULL;
        for (int64_t i = 0; i < n && i < (count == n ? n : 1); i++) DF_FREE(v[i]);
        DF_FREE(v);
        if (!ok) df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a malformed string, or one with a NUL byte", where);
        return out;
    }
    int vwt, vfield = dtype < 64 ? df__gd_value_field(t, &vwt) : 0;
    if (!vfield) {
        df_status_set(st, DF_UNIMPLEMENTED, "GraphDef: %s: tensor values of dtype %llu (%s) are not supported", where,
                      (unsigned long long)dtype, df_dtype_name(t));
        return NULL;
    }
    /* the size, checked before anything is allocated */
    size_t es = df_dtype_size(t);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] && n > INT64_MAX / dims[i]) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: tensor size overflows", where); return NULL; }
        n *= dims[i];
    }
    if (n > (int64_t)(SIZE_MAX / 2 / es)) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: tensor size overflows", where); return NULL; }
    size_t nbytes = (size_t)n * es;
    if (has_content && (size_t)(content.end - content.p) != nbytes) {
        df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: tensor_content has %zu bytes; a %s tensor of %lld elements needs %zu",
                      where, (size_t)(content.end - content.p), df_dtype_name(t), (long long)n, nbytes);
        return NULL;
    }
    if (!has_content && nbytes > DF__GD_MAX_TENSOR_FILL) {
        df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: a tensor of %zu bytes given by repeated values is over the "
                      "limit of %d bytes", where, nbytes, DF__GD_MAX_TENSOR_FILL);
        return NULL;
    }
    df_tensor *out = df__tensor_alloc(NULL, t, rank, dims, st);
    if (!out) return NULL;
    if (has_content) {
        if (nbytes) memcpy(out->data, content.p, nbytes);
        if (t == DF_BOOL) for (size_t i = 0; i < nbytes; i++) ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
        return out;
    }
    memset(out->data, 0, nbytes);
    int lanes = t == DF_COMPLEX64 || t == DF_COMPLEX128 ? 2 : 1;
    df__gd_fill fill = {out, 0, n * lanes, 0};
    scan = r;
    while (df__pb_next(&scan, &f, &wt, &bad)) {
        if (f == (uint32_t)vfield) { if (!df__pb_each(&scan, wt, vwt, df__gd_put, &fill)) { df_tensor_release(out); goto malformed; } }
        else if (f == 8 && t != DF_STRING) { if (!df__pb_skip(&scan, wt)) { df_tensor_release(out); goto malformed; } }
        else if (!df__pb_skip(&scan, wt)) { df_tensor_release(out); goto malformed; }
    }
    if (fill.i > fill.cap) {
        df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: %lld values for a tensor of %lld elements", where,
                      (long long)(fill.i / lanes), (long long)n);
        df_tensor_release(out);
        return NULL;
    }
    if (fill.i > 0 && fill.i < fill.cap) {          /* fewer values: the last one repeats */
        size_t unit = es, have = (size_t)(fill.i / lanes);
        for (size_t i = have; i < (size_t)n; i++) memcpy((char *)out->data + i * unit, (char *)out->data + (have - 1) * unit, unit);
    }
    return out;
malformed:
    df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed TensorProto", where);
    return NULL;
}

/* Sets attr `ad` of the node being built from its AttrValue; reports kind confusion. */
typedef struct df__gd_list { int64_t *v; int n, cap, oom; } df__gd_list;
static int df__gd_list_add(void *user, uint64_t v) {
    df__gd_list *l = (df__gd_list *)user;
    if (l->n >= (1 << 20)) return 0;
    if (!df__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) { l->oom = 1; return 0; }
    l->v[l->n++] = (int64_t)v;
    return 1;
}
static df_code df__gd_set_attr(df__gd *d, const df__gd_node *n, df_op_builder *b, const df__attrdef *ad, df__pb value) {
    df__gd_val v;
    char where[320];
    snprintf(where, sizeof where, "node '%s' attr '%s'", n->full, ad->name);
    if (!df__gd_attr_value(value, &v)) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed AttrValue", where);
    static const uint32_t want_field[] = {
        [DF__A_INT] = 3, [DF__A_FLOAT] = 4, [DF__A_BOOL] = 5, [DF__A_TYPE] = 6, [DF__A_STRING] = 2,
        [DF__A_SHAPE] = 7, [DF__A_TENSOR] = 8, [DF__A_INT_LIST] = 1, [DF__A_TYPE_LIST] = 1};
    uint32_t want = want_field[ad->kind];
    int want_wt = want == 4 ? DF__PB_I32 : (want == 1 || want == 2 || want == 7 || want == 8) ? DF__PB_LEN : DF__PB_VARINT;
    if (v.field == 0 && want == 1) { v.field = 1; v.wt = DF__PB_LEN; v.sub.p = v.sub.end = value.p; }  /* an empty list */
    if (v.field != want || v.wt != want_wt)
        return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: Op %s expects a %s, the AttrValue holds a %s",
                             where, b->op->name, df__kind_name(ad->kind), df__gd_field_kind(v.field));
    switch (ad->kind) {
    case DF__A_INT: df_op_set_attr_int(b, ad->name, (int64_t)v.v); break;
    case DF__A_FLOAT: { uint32_t bits = (uint32_t)v.v; float x; memcpy(&x, &bits, 4); df_op_set_attr_float(b, ad->name, x); break; }
    case DF__A_BOOL: df_op_set_attr_bool(b, ad->name, v.v != 0); break;
    case DF__A_TYPE:
        if (v.v > 1000) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: bad dtype %llu", where, (unsigned long long)v.v);
        if (v.v > 100) v.v -= 100;              /* a reference type: the attr names the value type */
        df_op_set_attr_type(b, ad->name, (df_dtype)v.v);
        break;
    case DF__A_STRING: {
        char *s = df__gd_cstr((df__gd_str){v.sub.p, (size_t)(v.sub.end - v.sub.p)}, NULL);
        if (!s) return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory");
        if (strlen(s) != (size_t)(v.sub.end - v.sub.p)) { DF_FREE(s); return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: a NUL byte in a string attr", where); }
        df_op_set_attr_string(b, ad->name, s);
        DF_FREE(s);
        break;
    }
    case DF__A_SHAPE: {
        int rank;
        int64_t dims[DF_MAX_RANK];
        if (!df__gd_shape(v.sub, &rank, dims, 1)) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed TensorShapeProto (or rank above %d)", where, DF_MAX_RANK);
        df_op_set_attr_shape(b, ad->name, rank, dims);
        break;
    }
    case DF__A_TENSOR: {
        df_tensor *t = df__gd_tensor(v.sub, where, d->st);
        if (!t) return d->st->code;
        df_op_set_attr_tensor(b, ad->name, t);
        df_tensor_release(t);
        break;
    }
    default: {                                  /* list(int), list(type) */
        int field = ad->kind == DF__A_INT_LIST ? 3 : 6;
        df__gd_list l = {NULL, 0, 0, 0};
        uint32_t f;
        int wt, bad;
        df__pb r = v.sub;
        while (df__pb_next(&r, &f, &wt, &bad)) {
            int ok = f == (uint32_t)field ? df__pb_each(&r, wt, DF__PB_VARINT, df__gd_list_add, &l) : df__pb_skip(&r, wt);
            if (!ok) { DF_FREE(l.v); return l.oom ? df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory")
                                              : df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed list", where); }
        }
        if (bad) { DF_FREE(l.v); return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: %s: malformed list", where); }
        if (ad->kind == DF__A_INT_LIST) df_op_set_attr_int_list(b, ad->name, l.v, l.n);
        else {
            df_dtype *types = (df_dtype *)DF_MALLOC((size_t)DF__MAX(l.n, 1) * sizeof(df_dtype));
            if (!types) { DF_FREE(l.v); return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); }
            for (int i = 0; i < l.n; i++) types[i] = (df_dtype)(l.v[i] > 100 && l.v[i] <= 1000 ? l.v[i] - 100 : l.v[i]);
            df_op_set_attr_type_list(b, ad->name, types, l.n);
            DF_FREE(types);
        }
        DF_FREE(l.v);
    }
    }
    return DF_OK;
}
/* `_class`: a list of "loc:@name" strings, kept joined by commas (the placer's form). */
static df_code df__gd_class(df__gd *d, const df__gd_node *n, df_op_builder *b, df__pb value, const char *prefix) {
    df__gd_val v;
    if (!df__gd_attr_value(value, &v)) return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': malformed _class", n->full);
    if (v.field != 1) return DF_OK;             /* not a list: ignored, as TF ignores what it cannot use */
    char *joined = NULL;
    size_t len = 0;
    uint32_t f;
    int wt, bad;
    df__pb r = v.sub;
    while (df__pb_next(&r, &f, &wt, &bad)) {
        df__gd_str s;
        if (f != 2 || wt != DF__PB_LEN) { if (!df__pb_skip(&r, wt)) break; continue; }
        if (!df__gd_string(&r, &s)) { bad = 1; break; }
        if (s.n < 6 || memcmp(s.p, "loc:@", 5)) continue;
        size_t pl = prefix && *prefix ? strlen(prefix) + 1 : 0, add = 5 + pl + (s.n - 5) + 1;
        char *nj = (char *)DF_REALLOC(joined, len + add + 1);
        if (!nj) { DF_FREE(joined); return df_status_set(d->st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); }
        joined = nj;
        if (len) joined[len++] = ',';
        memcpy(joined + len, "loc:@", 5); len += 5;
        if (pl) { memcpy(joined + len, prefix, pl - 1); joined[len + pl - 1] = '/'; len += pl; }
        memcpy(joined + len, s.p + 5, s.n - 5); len += s.n - 5;
        joined[len] = 0;
    }
    if (bad) { DF_FREE(joined); return df_status_set(d->st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': malformed _class", n->full); }
    if (joined) df_op_set_attr_string(b, "_class", joined);
    DF_FREE(joined);
    return DF_OK;
}

/* The int (or list length) of attr `name` in a NodeDef, for list arguments' sizes. */
static int df__gd_attr_count(const df__gd_node *n, const char *name, int list, int64_t *out) {
    for (int i = 0; i < n->n_attrs; i++) {
        if (!df__gd_eq(n->attrs[i].key, name)) continue;
        df__gd_val v;
        if (!df__gd_attr_value(n->attrs[i].value, &v)) return 0;
        if (!list) { if (v.field != 3 || v.wt != DF__PB_VARINT) return 0; *out = (int64_t)v.v; return 1; }
        if (v.field == 0) { *out = 0; return 1; }
        if (v.field != 1 || v.wt != DF__PB_LEN) return 0;
        df__gd_list l = {NULL, 0, 0, 0};
        uint32_t f;
        int wt, bad, ok = 1;
        df__pb r = v.sub;
        while (ok && df__pb_next(&r, &f, &wt, &bad)) ok = f == 6 ? df__pb_each(&r, wt, DF__PB_VARINT, df__gd_list_add, &l) : df__pb_skip(&r, wt);
        DF_FREE(l.v);
        if (!ok || bad) return 0;
        *out = l.n;
        return 1;
    }
    return 0;
}
/* Data input k of node dst is a loop's back edge (NextIteration -> Merge): made after dst. */
static int df__gd_back_edge(const df__gd *d, int dst, int k) {
    const df__gd_node *n = &d->nodes[dst];
    return k < n->n_data && df__gd_eq(d->nodes[n->src[k]].op, "NextIteration") && df__gd_eq(n->op, "Merge");
}
/* An input's value: the mapped output when the import options map that tensor, else the output
   of the node made for it. */
static df_output df__gd_value(const df__gd *d, const df_import_options *o, df__gd_str name, int index, int src) {
    if (o)
        for (int m = 0; m < o->n_input_map; m++) {
            const char *k = o->input_map_names ? o->input_map_names[m] : NULL;
            if (!k) continue;
            const char *colon = strrchr(k, ':');
            size_t kn = colon ? (size_t)(colon - k) : strlen(k);
            int ki = colon ? atoi(colon + 1) : 0;
            if (kn == name.n && !memcmp(k, name.p, kn) && ki == index) return o->input_map_values[m];
        }
    df_output out = {d->nodes[src].made, index};
    return out;
}
static df_code df__gd_import(df_graph *g, const void *data, size_t len, const df_import_options *o, df_status *st) {
    df__gd d;
    memset(&d, 0, sizeof d);
    d.st = st;
    const char *prefix = o && o->prefix && *o->prefix ? o->prefix : NULL;
    int *order = NULL, *first_out = NULL, *outs = NULL;
    df_output *ins = NULL;
    int cap_ins = 0;
    if (!data && len) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: NULL data"); goto done; }
    if (df__gd_parse(&d, data, len)) goto done;
    /* names: unique, then every input resolved */
    for (int i = 0; i < d.n; i++) {
        df__gd_node *n = &d.nodes[i];
        char *plain = df__gd_cstr(n->name, NULL);
        if (!plain || !(n->full = df__gd_cstr(n->name, prefix))) { DF_FREE(plain); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        int dup = df__strmap_get(&d.index, plain, NULL);
        int ok = dup || df__strmap_put(&d.index, plain, i);
        DF_FREE(plain);
        if (dup) { df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: duplicate node name '%s'", n->full); goto done; }
        if (!ok) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        if (n->n_inputs && !(n->src = (int *)DF_MALLOC((size_t)n->n_inputs * sizeof(int)))) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
    }
    int64_t n_edges = 0;
    for (int i = 0; i < d.n; i++) {
        df__gd_node *n = &d.nodes[i];
        int seen_control = 0;
        for (int k = 0; k < n->n_inputs; k++) {
            df__gd_str name;
            int index, control, src;
            if (!df__gd_input(n->inputs[k], &name, &index, &control)) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': malformed input '%.*s'", n->full,
                              (int)DF__MIN(n->inputs[k].n, (size_t)200), (const char *)n->inputs[k].p);
                goto done;
            }
            if (!control && seen_control) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': data input '%.*s' after a control input", n->full,
                              (int)DF__MIN(name.n, (size_t)200), (const char *)name.p);
                goto done;
            }
            seen_control |= control;
            if (!control) n->n_data = k + 1;
            char *key = df__gd_cstr(name, NULL);
            if (!key) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
            int found = df__strmap_get(&d.index, key, &src);
            DF_FREE(key);
            if (!found) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': unknown input node '%.*s'", n->full,
                              (int)DF__MIN(name.n, (size_t)200), (const char *)name.p);
                goto done;
            }
            n->src[k] = src;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (!df__gd_back_edge(&d, i, k)) { n->indeg++; n_edges++; }
    }
    /* an order in which every input is made first (Kahn; loops' back edges left out) */
    order = (int *)DF_MALLOC((size_t)DF__MAX(d.n, 1) * sizeof(int));
    first_out = (int *)DF_MALLOC((size_t)(d.n + 1) * sizeof(int));
    outs = (int *)DF_MALLOC((size_t)DF__MAX(n_edges, (int64_t)1) * sizeof(int));
    if (!order || !first_out || !outs) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
    memset(first_out, 0, (size_t)(d.n + 1) * sizeof(int));
    for (int i = 0; i < d.n; i++)
        for (int k = 0; k < d.nodes[i].n_inputs; k++)
            if (!df__gd_back_edge(&d, i, k)) first_out[d.nodes[i].src[k] + 1]++;
    for (int i = 0; i < d.n; i++) first_out[i + 1] += first_out[i];
    {
        int *fill = (int *)DF_MALLOC((size_t)DF__MAX(d.n, 1) * sizeof(int));
        if (!fill) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        memcpy(fill, first_out, (size_t)d.n * sizeof(int));
        for (int i = 0; i < d.n; i++)
            for (int k = 0; k < d.nodes[i].n_inputs; k++)
                if (!df__gd_back_edge(&d, i, k)) outs[fill[d.nodes[i].src[k]]++] = i;
        DF_FREE(fill);
    }
    int n_order = 0;
    for (int i = 0; i < d.n; i++) if (!d.nodes[i].indeg) order[n_order++] = i;
    for (int q = 0; q < n_order; q++)
        for (int e = first_out[order[q]]; e < first_out[order[q] + 1]; e++)
            if (--d.nodes[outs[e]].indeg == 0) order[n_order++] = outs[e];
    if (n_order < d.n) {
        for (int i = 0; i < d.n; i++)
            if (d.nodes[i].indeg) {
                df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: the graph has a cycle that is not a while loop's back edge "
                              "(through node '%s')", d.nodes[i].full);
                break;
            }
        goto done;
    }
    /* the nodes, in that order */
    for (int q = 0; q < n_order; q++) {
        df__gd_node *n = &d.nodes[order[q]];
        char *opname = df__gd_cstr(n->op, NULL);
        if (!opname) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        const df__opdef *op = df__op_lookup(opname);
        if (!op) {
            df_status_set(st, DF_UNIMPLEMENTED, "GraphDef: node '%s' uses op '%s', which is not registered here", n->full, opname);
            DF_FREE(opname);
            goto done;
        }
        DF_FREE(opname);
        df_op_builder *b = df_op_new(g, op->name, n->full);
        if (!b) { df_status_set(st, g->status.code ? g->status.code : DF_RESOURCE_EXHAUSTED, "GraphDef: node '%s': %s", n->full, g->status.code ? g->status.message : "out of memory"); goto done; }
        b->raw = 1;
        /* data inputs, grouped by the op's arguments */
        int n_data = n->n_data, pos = 0, placeholder = -1;
        for (int k = 0; k < n_data && placeholder < 0; k++)
            if (!df__gd_back_edge(&d, order[q], k)) placeholder = k;
        if (!df__grow(&ins, &cap_ins, DF__MAX(n_data, 1), sizeof *ins)) { df__builder_free(b); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
        for (int k = 0; k < n_data; k++) {
            df__gd_str name;
            int index, control, src = n->src[k];
            df__gd_input(n->inputs[k], &name, &index, &control);
            if (df__gd_back_edge(&d, order[q], k)) {     /* patched below, once the NextIteration exists */
                if (placeholder < 0) { df__builder_free(b); df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: Merge '%s' has only back edges as inputs", n->full); goto done; }
                df__gd_input(n->inputs[placeholder], &name, &index, &control);
                src = n->src[placeholder];
            }
            ins[k] = df__gd_value(&d, o, name, index, src);
        }
        for (int a = 0; a < op->n_in; a++) {
            const df__argdef *arg = &op->in[a];
            int64_t count = 1;
            if (arg->number_attr[0] || arg->is_list) {
                int ok = arg->number_attr[0] ? df__gd_attr_count(n, arg->number_attr, 0, &count)
                                             : df__gd_attr_count(n, arg->type_attr, 1, &count);
                if (!ok) count = op->n_in == 1 ? n_data : -1;
                if (count < 0 || count > n_data - pos) {
                    df__builder_free(b);
                    df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': the size of list input '%s' of %s does not match "
                                  "its inputs", n->full, arg->name, op->name);
                    goto done;
                }
                df_op_add_input_list(b, ins + pos, (int)count);
            } else if (pos < n_data) df_op_add_input(b, ins[pos]);
            else { count = 0; }
            pos += (int)count;
            if (count == 0 && !(arg->number_attr[0] || arg->is_list)) break;
        }
        if (pos != n_data) {
            df__builder_free(b);
            df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': op %s takes %d input%s, the NodeDef has %d", n->full, op->name,
                          pos, pos == 1 ? "" : "s", n_data);
            goto done;
        }
        for (int k = n_data; k < n->n_inputs; k++) df_op_add_control_input(b, d.nodes[n->src[k]].made);
        if (n->device.n) {
            char *dev = df__gd_cstr(n->device, NULL);
            if (!dev) { df__builder_free(b); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
            df_op_set_device(b, dev);
            DF_FREE(dev);
        }
        for (int k = 0; k < n->n_attrs; k++) {
            char *key = df__gd_cstr(n->attrs[k].key, NULL);
            if (!key) { df__builder_free(b); df_status_set(st, DF_RESOURCE_EXHAUSTED, "GraphDef: out of memory"); goto done; }
            const df__attrdef *ad = df__op_attrdef(op, key);
            df_code c = !strcmp(key, "_class") ? df__gd_class(&d, n, b, n->attrs[k].value, prefix)
                      : ad ? df__gd_set_attr(&d, n, b, ad, n->attrs[k].value) : DF_OK;   /* attrs the op lacks: ignored */
            if (!ad && g->internal_names && (!strcmp(key, "_key") || !strcmp(key, "_recv_memory"))) {
                df__gd_val v;               /* (a partition shipped to a worker: its transfer keys) */
                if (df__gd_attr_value(n->attrs[k].value, &v) && v.field == 3 && v.wt == DF__PB_VARINT) df_op_set_attr_int(b, key, (int64_t)v.v);
                else c = df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s': malformed %s", n->full, key);
            }
            DF_FREE(key);
            if (c) { df__builder_free(b); goto done; }
        }
        if (!(n->made = df_op_finish(b))) {
            df_status_set(st, g->status.code ? g->status.code : DF_INTERNAL, "GraphDef: %s", g->status.message);
            goto done;
        }
    }
    /* the loops' back edges */
    for (int i = 0; i < d.n; i++) {
        df__gd_node *n = &d.nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (!df__gd_back_edge(&d, i, k)) continue;
            df__gd_str name;
            int index, control;
            df__gd_input(n->inputs[k], &name, &index, &control);
            if (df_node_update_input(g, n->made, k, df__gd_value(&d, o, name, index, n->src[k]))) {
                df_status_set(st, g->status.code, "GraphDef: %s", g->status.message);
                goto done;
            }
        }
    }
    df_status_clear(st);
done:
    DF_FREE(order); DF_FREE(first_out); DF_FREE(outs); DF_FREE(ins);
    df__gd_free(&d);
    return st->code;
}

df_graph *df_graph_import_graphdef(const void *data, size_t len, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_graph *g = df_graph_new();
    if (!g) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    if (df__gd_import(g, data, len, NULL, st)) { df_graph_free(g); return NULL; }
    return g;
}
df_code df_graph_import_graphdef_into(df_graph *g, const void *data, size_t len, const df_import_options *o, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "df_graph_import_graphdef_into: NULL graph");
    if (g->status.code) return df_status_set(st, g->status.code, "The graph already has an error: %s", g->status.message);
    if (o && o->n_input_map < 0) return df_status_set(st, DF_INVALID_ARGUMENT, "df_import_options: negative n_input_map");
    if (o && o->n_input_map > 0 && (!o->input_map_names || !o->input_map_values))
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_import_options: input_map_names and input_map_values must both be set");
    for (int m = 0; o && m < o->n_input_map; m++) {
        if (!o->input_map_names[m] || !df__output_valid(o->input_map_values[m]) || o->input_map_values[m].node->graph != g)
            return df_status_set(st, DF_INVALID_ARGUMENT, "df_import_options: input_map entry %d is not a name and an "
                                 "output of this graph", m);
    }
    /* A trial import into a scratch graph first (mapped inputs become placeholders of their
       types), so that a GraphDef that fails leaves g as it was. */
    df_graph *t = df_graph_new();
    df_output *mapped = o && o->n_input_map ? (df_output *)DF_MALLOC((size_t)o->n_input_map * sizeof(df_output)) : NULL;
    if (!t || (o && o->n_input_map && !mapped)) { df_graph_free(t); DF_FREE(mapped); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    df_import_options to;
    memset(&to, 0, sizeof to);
    if (o) {
        to = *o;
        for (int m = 0; m < o->n_input_map; m++) {
            char nm[32];
            snprintf(nm, sizeof nm, "import.input_map.%d", m);
            mapped[m] = df_placeholder(t, nm, df_output_dtype(o->input_map_values[m]), -1, NULL);
        }
        to.input_map_values = mapped;
    }
    df_code c = df__gd_import(t, data, len, o ? &to : NULL, st);
    for (int i = 0; !c && i < t->n_nodes; i++)
        if (strncmp(t->nodes[i]->name, "import.input_map.", 17) && df_graph_find(g, t->nodes[i]->name))
            c = df_status_set(st, DF_INVALID_ARGUMENT, "GraphDef: node '%s' already exists in the graph (use a prefix)", t->nodes[i]->name);
    df_graph_free(t);
    DF_FREE(mapped);
    if (c) return c;
    return df__gd_import(g, data, len, o, st);
}

/* ---- export ---- */
static void df__gdw_shape(df__pbw *w, uint32_t field, int rank, const int64_t *dims) {
    df__pbw s;
    memset(&s, 0, sizeof s);
    if (rank < 0) df__pbw_uint(&s, 3, 1);
    for (int i = 0; i < rank; i++) {
        df__pbw dim;
        memset(&dim, 0, sizeof dim);
        df__pbw_uint(&dim, 1, (uint64_t)dims[i]);
        df__pbw_msg(&s, 2, &dim);
    }
    df__pbw_msg(w, field, &s);
}
static df_code df__gdw_tensor(df__pbw *w, uint32_t field, const df_tensor *t) {
    int vwt;
    df__pbw s;
    memset(&s, 0, sizeof s);
    if (t->dtype == DF_STRING) {                  /* string_val, one per element */
        df__pbw_uint(&s, 1, (uint64_t)t->dtype);
        df__gdw_shape(&s, 2, t->rank, t->dims);
        for (int64_t i = 0; i < t->n; i++) {
            size_t len = 0;
            const char *v = df_tensor_string(t, i, &len);
            if (!v) { DF_FREE(s.buf); return DF_INVALID_ARGUMENT; }
            df__pbw_bytes(&s, 8, v, len);
        }
        df__pbw_msg(w, field, &s);
        return DF_OK;
    }
    if (!df__gd_value_field(t->dtype, &vwt)) return DF_UNIMPLEMENTED;   /* resources */
    df__pbw_uint(&s, 1, (uint64_t)t->dtype);
    df__gdw_shape(&s, 2, t->rank, t->dims);
    if (t->nbytes) df__pbw_bytes(&s, 4, t->data, t->nbytes);   /* little-endian, as tensor_content is */
    df__pbw_msg(w, field, &s);
    return DF_OK;
}
static df_code df__gdw_attr(df__pbw *w, const df__attr *a) {
    df__pbw v;
    memset(&v, 0, sizeof v);
    df_code c = DF_OK;
    switch (a->kind) {
    case DF__A_INT: df__pbw_uint(&v, 3, (uint64_t)a->u.i); break;
    case DF__A_FLOAT: { uint32_t bits; memcpy(&bits, &a->u.f, 4); df__pbw_tag(&v, 4, DF__PB_I32); uint8_t b[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16), (uint8_t)(bits >> 24)}; df__pbw_raw(&v, b, 4); break; }
    case DF__A_BOOL: df__pbw_uint(&v, 5, a->u.b ? 1 : 0); break;
    case DF__A_TYPE: df__pbw_uint(&v, 6, (uint64_t)a->u.type); break;
    case DF__A_STRING:
        if (!strcmp(a->name, "_class")) {     /* back to a list of strings */
            df__pbw l;
            memset(&l, 0, sizeof l);
            const char *s = a->u.s ? a->u.s : "";
            while (*s) {
                while (*s == ',' || *s == ' ') s++;
                size_t n = 0;
                while (s[n] && s[n] != ',' && s[n] != ' ') n++;
                if (n) df__pbw_bytes(&l, 2, s, n);
                s += n;
            }
            df__pbw_msg(&v, 1, &l);
        } else df__pbw_str(&v, 2, a->u.s ? a->u.s : "");
        break;
    case DF__A_SHAPE: df__gdw_shape(&v, 7, a->u.shape.rank, a->u.shape.dims); break;
    case DF__A_TENSOR: c = a->u.tensor ? df__gdw_tensor(&v, 8, a->u.tensor) : DF_INVALID_ARGUMENT; break;
    case DF__A_INT_LIST: case DF__A_TYPE_LIST: {
        df__pbw l, p;
        memset(&l, 0, sizeof l);
        memset(&p, 0, sizeof p);
        int n = a->kind == DF__A_INT_LIST ? a->u.ints.n : a->u.types.n;
        for (int i = 0; i < n; i++) df__pbw_varint(&p, a->kind == DF__A_INT_LIST ? (uint64_t)a->u.ints.v[i] : (uint64_t)a->u.types.v[i]);
        if (n) df__pbw_msg(&l, a->kind == DF__A_INT_LIST ? 3 : 6, &p);
        df__pbw_msg(&v, 1, &l);
        break;
    }
    default: c = DF_UNIMPLEMENTED;
    }
    if (c) { DF_FREE(v.buf); return c; }
    df__pbw e;
    memset(&e, 0, sizeof e);
    df__pbw_str(&e, 1, a->name);
    df__pbw_msg(&e, 2, &v);
    df__pbw_msg(w, 5, &e);
    return DF_OK;
}
static int df__gdw_attr_cmp(const void *x, const void *y) {
    return strcmp((*(const df__attr *const *)x)->name, (*(const df__attr *const *)y)->name);
}
df_code df_graph_export_graphdef(const df_graph *g, void **data, size_t *len) {
    if (data) *data = NULL;
    if (len) *len = 0;
    if (!g || !data || !len) return DF_INVALID_ARGUMENT;
    df__pbw w;
    memset(&w, 0, sizeof w);
    df_code c = DF_OK;
    const df__attr **sorted = NULL;
    int cap_sorted = 0;
    for (int i = 0; i < g->n_nodes && !c; i++) {
        const df_node *n = g->nodes[i];
        df__pbw nd;
        memset(&nd, 0, sizeof nd);
        df__pbw_str(&nd, 1, n->name);
        df__pbw_str(&nd, 2, n->op->name);
        for (int k = 0; k < n->n_inputs; k++) {
            const df_output in = n->inputs[k];
            if (in.index) {
                size_t nl = strlen(in.node->name);
                char *s = (char *)DF_MALLOC(nl + 16);
                if (!s) { w.oom = 1; break; }
                snprintf(s, nl + 16, "%s:%d", in.node->name, in.index);
                df__pbw_str(&nd, 3, s);
                DF_FREE(s);
            } else df__pbw_str(&nd, 3, in.node->name);
        }
        for (int k = 0; k < n->n_controls; k++) {
            size_t nl = strlen(n->controls[k]->name);
            char *s = (char *)DF_MALLOC(nl + 2);
            if (!s) { w.oom = 1; break; }
            s[0] = '^';
            memcpy(s + 1, n->controls[k]->name, nl + 1);
            df__pbw_str(&nd, 3, s);
            DF_FREE(s);
        }
        if (n->device && *n->device) df__pbw_str(&nd, 4, n->device);
        if (!df__grow((void *)&sorted, &cap_sorted, DF__MAX(n->n_attrs, 1), sizeof *sorted)) { w.oom = 1; DF_FREE(nd.buf); break; }
        for (int k = 0; k < n->n_attrs; k++) sorted[k] = &n->attrs[k];
        qsort((void *)sorted, (size_t)n->n_attrs, sizeof *sorted, df__gdw_attr_cmp);
        for (int k = 0; k < n->n_attrs && !c; k++) c = df__gdw_attr(&nd, sorted[k]);
        if (c) { DF_FREE(nd.buf); break; }
        df__pbw_msg(&w, 1, &nd);
    }
    DF_FREE((void *)sorted);
    if (!c) {                                   /* versions: producer 134, min_consumer 0 */
        df__pbw v;
        memset(&v, 0, sizeof v);
        df__pbw_uint(&v, 1, 134);
        df__pbw_msg(&w, 4, &v);
    }
    if (c || w.oom) { DF_FREE(w.buf); return c ? c : DF_RESOURCE_EXHAUSTED; }
    /* the caller frees the buffer with free(): copy out of DF_MALLOC's memory when it differs */
    void *out = malloc(w.len ? w.len : 1);
    if (!out) { DF_FREE(w.buf); return DF_RESOURCE_EXHAUSTED; }
    if (w.len) memcpy(out, w.buf, w.len);
    DF_FREE(w.buf);
    *data = out;
    *len = w.len;
    return DF_OK;
}

/* ---- NumPy .npy: versions 1.0 to 3.0, little- and big-endian, C order ---- */
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

df_tensor *df_tensor_read_npy(const char *path, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!path) { df_status_set(st, DF_INVALID_ARGUMENT, "df_tensor_read_npy: path is NULL"); return NULL; }
    FILE *f = fopen(path, "rb");
    if (!f) { df_status_set(st, DF_NOT_FOUND, "Cannot open '%s' for reading", path); return NULL; }
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
    FILE *f = fopen(path, "wb");
    if (!f) return DF_NOT_FOUND;
    int ok = fwrite(head, 1, padded, f) == padded && fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
    ok = (fclose(f) == 0) && ok;
    return ok ? DF_OK : DF_DATA_LOSS;
}

/* ---- String tensors: enough of them for the checkpoint ops' names and paths ----
   Data: n+1 uint64 offsets into the bytes after them, then the strings, each ended by a NUL
   (offsets[i + 1] - offsets[i] - 1 is string i's length). Strings are values: nothing writes
   into a string tensor once made. */
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
   Writing goes to "<path>.tmp-<pid>-<n>", which is fsynced, renamed over path, and the
   directory fsynced: a crash at any moment leaves the old checkpoint or the new one, whole.
   Reading checks every size and offset against the file's size before allocating anything, and
   every crc: a damaged or truncated file is DF_DATA_LOSS. */
#ifndef O_CLOEXEC
#define O_CLOEXEC 0            /* (hidden by strict C modes in the one-translation-unit use) */
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
static uint32_t df__crc32c(uint32_t crc, const void *data, size_t n) {
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
static uint32_t df__crc_mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

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
static void df__put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void df__put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t df__get32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t df__get64(const unsigned char *p) { return (uint64_t)df__get32(p) | (uint64_t)df__get32(p + 4) << 32; }

static const char *const *df__ck_sort_names;
static int df__ck_cmp(const void *a, const void *b) {
    return strcmp(df__ck_sort_names[*(const int *)a], df__ck_sort_names[*(const int *)b]);
}

df_code df_checkpoint_write(const char *path, int n, const char *const *names, df_tensor *const *tensors, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
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
    int *order = (int *)DF_MALLOC(((size_t)n + 1) * sizeof(int));
    size_t index_bytes = 0;
    uint64_t data_bytes = 0;
    unsigned char *head = NULL;
    char *tmp = NULL;
    int fd = -1;
    df_code code = DF_OK;
    if (!order) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory writing a checkpoint");
    for (int i = 0; i < n; i++) order[i] = i;
    df__ck_sort_names = names;                 /* (qsort has no context argument in C11) */
    static df__spin sort_lock;
    df__spin_lock(&sort_lock);
    qsort(order, (size_t)n, sizeof *order, df__ck_cmp);
    df__spin_unlock(&sort_lock);
    for (int i = 0; i < n; i++) {
        if (i && !strcmp(names[order[i]], names[order[i - 1]])) {
            code = df_status_set(st, DF_INVALID_ARGUMENT, "df_checkpoint_write: the name '%s' is given twice", names[order[i]]);
            goto done;
        }
        index_bytes += 4 + strlen(names[order[i]]) + 8 + 8 * (size_t)tensors[order[i]]->rank + 20;
        data_bytes += tensors[order[i]]->nbytes;
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
            const df_tensor *t = tensors[order[k]];
            size_t len = strlen(names[order[k]]);
            df__put32(p, (uint32_t)len); memcpy(p + 4, names[order[k]], len); p += 4 + len;
            df__put32(p, (uint32_t)t->dtype); df__put32(p + 4, (uint32_t)t->rank); p += 8;
            for (int d = 0; d < t->rank; d++, p += 8) df__put64(p, (uint64_t)t->dims[d]);
            df__put64(p, off); df__put64(p + 8, t->nbytes); df__put32(p + 16, df__crc_mask(df__crc32c(0, t->data, t->nbytes)));
            p += 20;
            off += t->nbytes;
        }
        df__put32(p, df__crc_mask(df__crc32c(0, head, DF__CK_HEADER + index_bytes)));
    }
    {
        static int counter;
        size_t plen = strlen(path) + 64;
        if (!(tmp = (char *)DF_MALLOC(plen))) { code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory writing a checkpoint"); goto done; }
        snprintf(tmp, plen, "%s.tmp-%ld-%d", path, (long)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    }
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) { code = df__io_error(st, errno, "Cannot create the checkpoint file", tmp); goto done; }
    if (df__write_all(fd, head, DF__CK_HEADER + index_bytes + 4)) { code = df__io_error(st, errno, "Cannot write the checkpoint", tmp); goto done; }
    for (int k = 0; k < n; k++)
        if (df__write_all(fd, tensors[order[k]]->data, tensors[order[k]]->nbytes)) { code = df__io_error(st, errno, "Cannot write the checkpoint", tmp); goto done; }
    if (df__io_fault() || fsync(fd)) { code = df__io_error(st, errno, "Cannot flush the checkpoint to disk", tmp); goto done; }
    {
        int c = df__io_fault() ? -1 : close(fd);
        fd = -1;
        if (c) { code = df__io_error(st, errno, "Cannot close the checkpoint", tmp); goto done; }
    }
    if (df__io_fault() || rename(tmp, path)) { code = df__io_error(st, errno, "Cannot move the checkpoint into place at", path); goto done; }
    DF_FREE(tmp); tmp = NULL;
    {   /* the rename itself to disk: the directory fsynced */
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
    if (tmp) { unlink(tmp); DF_FREE(tmp); }
    DF_FREE(order); DF_FREE(head);
    return code;
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
static df_code df__ck_open(df__ck *ck, const char *path, df_status *st) {
    memset(ck, 0, sizeof *ck);
    ck->fd = -1;
    ck->path = path;
    if (!path) return df_status_set(st, DF_INVALID_ARGUMENT, "No checkpoint path");
    if ((ck->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return df__io_error(st, errno, "Cannot open the checkpoint", path);
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
    df_tensor *t = df__ck_open(&ck, path, st) == DF_OK ? df__ck_load(&ck, name, st) : NULL;
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
    if (df__ck_open(&ck, path, st) == DF_OK) {
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
   only: every shape_and_slice must be empty). */
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
static void df__k_save_v2(df__kctx *c) {
    int n = c->n_in - 3;
    const char *prefix = NULL;
    if (!df__k_ck_args(c, n, &prefix)) return;
    const char **names = (const char **)DF_MALLOC(((size_t)n + 1) * sizeof(char *));
    if (!names) { DF__KFAIL(c, DF_RESOURCE_EXHAUSTED, "Out of memory"); return; }
    for (int i = 0; i < n; i++) names[i] = df_tensor_string(c->in[1], i, NULL);
    df_status st;
    if (df_checkpoint_write(prefix, n, names, c->in + 3, &st) != DF_OK) DF__KFAIL(c, st.code, "%s: %s", c->node->name, st.message);
    DF_FREE(names);
}
static void df__k_restore_v2(df__kctx *c) {
    int n = c->n_out;
    const char *prefix = NULL;
    if (!df__k_ck_args(c, n, &prefix)) return;
    df_status st;
    df__ck ck;
    if (df__ck_open(&ck, prefix, &st) != DF_OK) { DF__KFAIL(c, st.code, "%s: %s", c->node->name, st.message); df__ck_close(&ck); return; }
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
static df_code df__saver_run(df_saver *sv, df_session *s, const char *path, df_node *target, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!sv || !s || !path || !*path) return df_status_set(st, DF_INVALID_ARGUMENT, "df_saver: saver, session and path are needed");
    df_tensor *p = df_tensor_new_strings(0, NULL, &path, st);
    if (!p) return st->code;
    df_session_run(s, &sv->prefix, &p, 1, NULL, NULL, 0, &target, 1, st);
    df_tensor_release(p);
    return st->code;
}
df_code df_saver_save(df_saver *sv, df_session *s, const char *path, df_status *st) {
    return df__saver_run(sv, s, path, sv ? sv->save : NULL, st);
}
df_code df_saver_restore(df_saver *sv, df_session *s, const char *path, df_status *st) {
    return df__saver_run(sv, s, path, sv ? sv->restore : NULL, st);
}
void df_saver_free(df_saver *sv) { DF_FREE(sv); }

/* ==========================================================================================
   20. OP TABLE AND PUBLIC WRAPPERS                                                      >>api
   Every op under TensorFlow's name and attrs. Spec strings: inputs and outputs "name:T",
   "name:float", "name:N*T", "name:Ref(T)"; attrs "name:kind{allowed}=default" or ">=min".
   ========================================================================================== */
#define DF__NUM "{float,double,int32,int64}"
#define DF__FLT "{float,double}"
#define DF__BIN(name, code) {name, "x:T,y:T", "z:T", "T:type" DF__NUM, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, code}
#define DF__CMP(name, code, types) {name, "x:T,y:T", "z:bool", "T:type" types, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, code}
#define DF__UN(name, code, types) {name, "x:T", "y:T", "T:type" types, df__sf_same, df__k_unary, DF__OP_EXPENSIVE, code}
#define DF__RED(name, code) {name, "input:T,reduction_indices:Tidx", "output:T", \
    "keep_dims:bool=false,T:type" DF__NUM ",Tidx:type{int32,int64}=int32", df__sf_reduce, df__k_reduce, DF__OP_EXPENSIVE, code}
#define DF__RAND(name, code) {name, "shape:T", "output:dtype", "seed:int=0,seed2:int=0,dtype:type" DF__FLT \
    ",T:type{int32,int64}", df__sf_random, df__k_random, DF__OP_STATEFUL | DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, code}

#ifdef DATAFLOW_CUDA
/* ---- GPU kernels: the ops a GPU runs in its own memory, through dataflow_cuda.cu's launchers.
   Validation follows the CPU kernels; the work is queued on the GPU's compute stream, so a
   kernel returns before its result exists, and everything after it on the stream sees it.
   Inputs read on the host (shapes, axes, permutations) are host-memory arguments (see
   df__gpu_kernels below), so no kernel waits for the device. ---- */
#define DF__GPU(c) ((df_cuda *)(c)->gpu)
static df_code df__gk_strides(const df_tensor *t, int64_t *st) {       /* dense element strides */
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) { st[d] = s; s *= t->dims[d]; }
    return DF_OK;
}
/* A device tensor of shape like x for scratch (released by the caller once its last use is
   queued: later work on the stream is ordered after it). */
static df_tensor *df__gk_scratch(df__kctx *c, df_dtype t, int rank, const int64_t *dims) {
    return df__tensor_alloc(c->alloc, t, rank, dims, c->st);
}

/* Const: the value is copied to the device once per device and cached (keyed by the host value,
   which the cache holds alive). */
static void df__gk_const(df__kctx *c) {
    const df__attr *a = df__node_attr(c->node, "value");
    if (!a || a->kind != DF__A_TENSOR || !a->u.tensor) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Const has no value"); return; }
    df_tensor *host = a->u.tensor;
    df__device *d = c->dev;
    df_tensor *dev = NULL;
    df__spin_lock(&d->cache_lock);
    for (int i = 0; i < d->n_cache && !dev; i++) if (d->cache[i].host == host) dev = df_tensor_retain(d->cache[i].dev);
    df__spin_unlock(&d->cache_lock);
    if (!dev) {
        if (!(dev = df__to_device(d, host, c->st))) return;
        df__spin_lock(&d->cache_lock);
        if (df__grow(&d->cache, &d->cap_cache, d->n_cache + 1, sizeof *d->cache)) {
            d->cache[d->n_cache].host = df_tensor_retain(host);
            d->cache[d->n_cache++].dev = df_tensor_retain(dev);
        }
        df__spin_unlock(&d->cache_lock);
    }
    c->out[0] = dev;
}

static void df__gk_unary(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (o && o->n) df_cuda_unary(DF__GPU(c), c->node->op->code, x->dtype, x->data, o->data, o->n, c->st);
}

/* c = op(a, b) with a and b read at broadcast strides over dims (rank 0 made rank 1). */
static df_code df__gk_binary_launch(df__kctx *c, int code, df_dtype t, const df__bcast *bc, const void *a, const void *b, void *o) {
    int64_t one = 1, zero = 0;
    if (bc->rank == 0) return df_cuda_binary(DF__GPU(c), code, t, 1, &one, a, &zero, b, &zero, o, c->st);
    return df_cuda_binary(DF__GPU(c), code, t, bc->rank, bc->dims, a, bc->sa, b, bc->sb, o, c->st);
}
static void df__gk_binary(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int code = c->node->op->code;
    df__bcast bc;
    if (a->dtype != b->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: operands of %s and %s", c->node->op->name, df_dtype_name(a->dtype), df_dtype_name(b->dtype)); return; }
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                  df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
        return;
    }
    df_dtype ot = code >= DF__B_LESS && code <= DF__B_NOT_EQUAL ? DF_BOOL : a->dtype;
    df_tensor *o = df__k_reuse_or_alloc(c, 0, a->n == b->n || b->n == 1 ? 0 : 1, ot, bc.rank, bc.dims);
    if (o && o->n) df__gk_binary_launch(c, code, a->dtype, &bc, a->data, b->data, o->data);
}
static void df__gk_bias_add(df__kctx *c) {
    const df_tensor *x = c->in[0], *b = c->in[1];
    int nchw = !strcmp(df__attr_s(c->node, "data_format"), "NCHW");
    if (x->rank < 2 || b->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAdd: value must be at least 2-D and bias 1-D"); return; }
    int axis = nchw && x->rank > 2 ? 1 : x->rank - 1;
    if (b->dims[0] != x->dims[axis]) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Must provide as many biases as the channel dimension of the input tensor: %lld vs. %lld",
                  (long long)b->dims[0], (long long)x->dims[axis]);
        return;
    }
    df__bcast bc;
    bc.rank = x->rank;
    df__gk_strides(x, bc.sa);
    for (int d = 0; d < x->rank; d++) { bc.dims[d] = x->dims[d]; bc.sb[d] = d == axis ? 1 : 0; }
    df_tensor *o = df__k_reuse_or_alloc(c, 0, 0, x->dtype, x->rank, x->dims);
    if (o && o->n) df__gk_binary_launch(c, DF__B_ADD, x->dtype, &bc, x->data, b->data, o->data);
}
static void df__gk_bias_add_grad(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int nchw = !strcmp(df__attr_s(c->node, "data_format"), "NCHW");
    if (x->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BiasAddGrad: input must be at least 2-D"); return; }
    int axis = nchw && x->rank > 2 ? 1 : x->rank - 1;
    int64_t ch = x->dims[axis], before = 1, after = 1;
    for (int d = 0; d < axis; d++) before *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) after *= x->dims[d];
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 1, &ch);
    if (!o || !o->n) return;
    if (after == 1) { df_cuda_reduce(DF__GPU(c), DF__R_SUM, x->dtype, x->data, o->data, 1, before, ch, c->st); return; }
    int64_t mid[2] = {before, ch};
    df_tensor *tmp = df__gk_scratch(c, x->dtype, 2, mid);
    if (!tmp) return;
    if (!df_cuda_reduce(DF__GPU(c), DF__R_SUM, x->dtype, x->data, tmp->data, before * ch, after, 1, c->st))
        df_cuda_reduce(DF__GPU(c), DF__R_SUM, x->dtype, tmp->data, o->data, 1, before, ch, c->st);
    df_tensor_release(tmp);
}

/* Sum, Mean, Max, Min, Prod: one [outer, red, inner] pass per run of reduced axes, last first. */
static void df__gk_reduce(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int code = c->node->op->code, keep = df__attr_b(c->node, "keep_dims", 0);
    unsigned mask;
    if (df__norm_axes(c->node, c->in[1], x->rank, &mask, c->st)) return;
    df__shape os;
    df__reduced_shape(x->rank, x->dims, mask, keep, &os);
    df_tensor *o = df__k_alloc(c, 0, x->dtype, os.rank, os.dims);
    if (!o || !o->n) return;
    /* runs of dims: sizes and whether reduced, size-1 dims dropped */
    int64_t sz[DF_MAX_RANK];
    int red[DF_MAX_RANK], r = 0;
    for (int d = 0; d < x->rank; d++) {
        int rd = mask >> d & 1u;
        if (x->dims[d] == 1) continue;
        if (r && red[r - 1] == rd) sz[r - 1] *= x->dims[d];
        else { sz[r] = x->dims[d]; red[r++] = rd; }
    }
    int runs = 0;
    for (int k = 0; k < r; k++) runs += red[k];
    if (runs == 0) {     /* nothing really reduced: a copy (or, for an empty tensor, the identities) */
        int64_t total = 1;
        for (int k = 0; k < r; k++) total *= sz[k];
        df_cuda_reduce(DF__GPU(c), code, x->dtype, x->data, o->data, total, 1, 1, c->st);
        return;
    }
    const void *src = x->data;
    df_tensor *cur = NULL;
    for (int k = r - 1; k >= 0 && !c->st->code; k--) {
        if (!red[k]) continue;
        int64_t outer = 1, inner = 1;
        for (int j = 0; j < k; j++) outer *= sz[j];
        for (int j = k + 1; j < r; j++) inner *= sz[j];
        runs--;
        void *dst;
        df_tensor *next = NULL;
        if (runs == 0) dst = o->data;
        else {
            int64_t n = outer * inner;
            if (!(next = df__gk_scratch(c, x->dtype, 1, &n))) break;
            dst = next->data;
        }
        df_cuda_reduce(DF__GPU(c), code, x->dtype, src, dst, outer, sz[k], inner, c->st);
        df_tensor_release(cur);
        cur = next;
        src = dst;
        sz[k] = 1;
    }
    df_tensor_release(cur);
}
static void df__gk_argmax(df__kctx *c) {
    const df_tensor *x = c->in[0], *dim = c->in[1];
    if (!df__is_int_tensor(dim) || dim->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "dimension must be a scalar"); return; }
    int64_t a = df__int_at(dim, 0);
    if (a < -x->rank || a >= x->rank || x->rank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected dimension in the range [%d, %d), but got %lld", -x->rank, x->rank, (long long)a); return; }
    if (a < 0) a += x->rank;
    if (x->dims[a] == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Reduction axis %lld is empty in shape with %lld elements", (long long)a, (long long)x->n); return; }
    int64_t dims[DF_MAX_RANK], outer = 1, inner = 1;
    int r = 0;
    for (int d = 0; d < x->rank; d++) if (d != a) dims[r++] = x->dims[d];
    for (int d = 0; d < a; d++) outer *= x->dims[d];
    for (int d = (int)a + 1; d < x->rank; d++) inner *= x->dims[d];
    df_dtype ot = df__attr_type(c->node, "output_type");
    df_tensor *o = df__k_alloc(c, 0, ot, r, dims);
    if (o && o->n) df_cuda_argmax(DF__GPU(c), x->dtype, x->data, ot, o->data, outer, x->dims[a], inner, c->node->op->code, c->st);
}

static int df__gk_tf32(df__kctx *c) { return df__step_tf32(c->step); }
static void df__gk_matmul(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ta = df__attr_b(c->node, "transpose_a", 0), tb = df__attr_b(c->node, "transpose_b", 0);
    if (a->rank != 2 || b->rank != 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "In[0] and In[1] must be matrices"); return; }
    int64_t m = a->dims[ta], k = a->dims[1 - ta], k2 = b->dims[tb], n = b->dims[1 - tb];
    if (k != k2) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: [%lld,%lld], In[1]: [%lld,%lld]",
                  (long long)a->dims[0], (long long)a->dims[1], (long long)b->dims[0], (long long)b->dims[1]);
        return;
    }
    int64_t dims[2] = {m, n};
    df_tensor *o = df__k_alloc(c, 0, a->dtype, 2, dims);
    if (o && o->n) df_cuda_gemm(DF__GPU(c), a->dtype, ta, tb, m, n, k, a->data, a->dims[1], 0, b->data, b->dims[1], 0,
                                o->data, n, 0, 1, df__gk_tf32(c), c->st);
}
static void df__gk_bmm(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int ta = df__attr_b(c->node, "adj_x", 0), tb = df__attr_b(c->node, "adj_y", 0);
    if (a->rank < 2 || b->rank < 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BatchMatMul: inputs must be at least 2-D"); return; }
    int ra = a->rank, rb = b->rank;
    int64_t m = a->dims[ra - 2 + ta], k = a->dims[ra - 1 - ta], k2 = b->dims[rb - 2 + tb], n = b->dims[rb - 1 - tb];
    df__bcast bc;
    if (k != k2 || !df__broadcast(ra - 2, a->dims, rb - 2, b->dims, &bc)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "BatchMatMul: shapes do not match (inner %lld vs %lld, or batch dims)", (long long)k, (long long)k2);
        return;
    }
    int64_t dims[DF_MAX_RANK], batch = 1;
    for (int d = 0; d < bc.rank; d++) { dims[d] = bc.dims[d]; batch *= bc.dims[d]; }
    dims[bc.rank] = m; dims[bc.rank + 1] = n;
    df_tensor *o = df__k_alloc(c, 0, a->dtype, bc.rank + 2, dims);
    if (!o || !o->n) return;
    int64_t na = 1, nb = 1, ma = a->dims[ra - 2] * a->dims[ra - 1], mb = b->dims[rb - 2] * b->dims[rb - 1];
    for (int d = 0; d < ra - 2; d++) na *= a->dims[d];
    for (int d = 0; d < rb - 2; d++) nb *= b->dims[d];
    size_t es = df_dtype_size(a->dtype);
    if ((na == batch || na == 1) && (nb == batch || nb == 1)) {   /* one strided-batched call */
        df_cuda_gemm(DF__GPU(c), a->dtype, ta, tb, m, n, k, a->data, a->dims[ra - 1], na == 1 ? 0 : ma, b->data, b->dims[rb - 1],
                     nb == 1 ? 0 : mb, o->data, n, m * n, batch, df__gk_tf32(c), c->st);
        return;
    }
    int64_t idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;     /* general broadcasting: one product per batch */
    for (int64_t i = 0; i < batch && !c->st->code; i++) {
        df_cuda_gemm(DF__GPU(c), a->dtype, ta, tb, m, n, k, (const char *)a->data + (size_t)(oa * ma) * es, a->dims[ra - 1], 0,
                     (const char *)b->data + (size_t)(ob * mb) * es, b->dims[rb - 1], 0, (char *)o->data + (size_t)(i * m * n) * es,
                     n, 0, 1, df__gk_tf32(c), c->st);
        for (int d = bc.rank - 1; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}

static void df__gk_softmax(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (x->rank < 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must have >= 1 dimension, got rank 0"); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, x->dims);
    int64_t cols = x->dims[x->rank - 1];
    if (o && o->n) df_cuda_softmax(DF__GPU(c), x->dtype, x->data, o->data, o->n / cols, cols, c->node->op->code, c->st);
}
static void df__gk_xent(df__kctx *c) {
    const df_tensor *f = c->in[0], *l = c->in[1];
    int sparse = c->node->op->code;
    if (f->rank != 2) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits must be 2-D, but got shape of rank %d", f->rank); return; }
    int64_t b = f->dims[0], k = f->dims[1];
    if (sparse ? (l->rank != 1 || l->dims[0] != b) : (l->rank != 2 || l->dims[0] != b || l->dims[1] != k)) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "logits and labels must have matching shapes (batch %lld)", (long long)b);
        return;
    }
    df_tensor *loss = df__k_alloc(c, 0, f->dtype, 1, &b);
    df_tensor *bp = loss ? df__k_alloc_like(c, 1, f->dtype, f) : NULL;
    if (bp && b) df_cuda_xent(DF__GPU(c), f->dtype, f->data, l->data, l->dtype, loss->data, bp->data, b, k, c->st);
}
static void df__gk_cast(df__kctx *c) {
    const df_tensor *x = c->in[0];
    df_dtype to = df__attr_type(c->node, "DstT");
    if (to == x->dtype) { df__k_forward(c, 0, 0); return; }
    df_tensor *o = df__k_alloc(c, 0, to, x->rank, x->dims);
    if (o && o->n) df_cuda_cast(DF__GPU(c), x->dtype, x->data, to, o->data, o->n, c->st);
}
/* Select: cond broadcasts NumPy-style (SelectV2), or (Select) a vector picks rows. */
static void df__gk_select(df__kctx *c) {
    const df_tensor *p = c->in[0], *x = c->in[1], *y = c->in[2];
    df__bcast xy, all;
    int rows = c->node->op->name[6] == 0 && p->rank == 1 && x->rank > 1;
    if (x->dtype != y->dtype || !df__broadcast(x->rank, x->dims, y->rank, y->dims, &xy) ||
        (!rows && !df__broadcast(p->rank, p->dims, xy.rank, xy.dims, &all)) || (rows && p->dims[0] != x->dims[0])) {
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: condition, t and e have incompatible shapes", c->node->op->name);
        return;
    }
    if (rows) {
        all.rank = xy.rank;
        memcpy(all.dims, xy.dims, sizeof all.dims);
        for (int d = 0; d < xy.rank; d++) all.sa[d] = d == 0 ? 1 : 0;
        memcpy(all.sb, xy.sa, sizeof all.sb);  /* unused */
    }
    /* strides of x and y over the final shape: xy's, shifted right by the extra leading dims */
    int64_t sx[DF_MAX_RANK], sy[DF_MAX_RANK];
    int shift = all.rank - xy.rank;
    for (int d = 0; d < all.rank; d++) {
        int e = d - shift;
        sx[d] = e < 0 || (xy.dims[e] == 1 && all.dims[d] != 1) ? 0 : xy.sa[e];
        sy[d] = e < 0 || (xy.dims[e] == 1 && all.dims[d] != 1) ? 0 : xy.sb[e];
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, all.rank, all.dims);
    if (!o || !o->n) return;
    int64_t one = 1, zero = 0;
    if (all.rank == 0) df_cuda_select(DF__GPU(c), df_dtype_size(x->dtype), 1, &one, p->data, &zero, x->data, &zero, y->data, &zero, o->data, c->st);
    else df_cuda_select(DF__GPU(c), df_dtype_size(x->dtype), all.rank, all.dims, p->data, all.sa, x->data, sx, y->data, sy, o->data, c->st);
}
static void df__gk_add_n(df__kctx *c) {
    const df_tensor *a = c->in[0];
    const void *ptrs[64];
    if (c->n_in > 64) { DF__KFAIL(c, DF_UNIMPLEMENTED, "AddN on a GPU takes at most 64 inputs, got %d", c->n_in); return; }
    for (int i = 0; i < c->n_in; i++) {
        const df_tensor *t = c->in[i];
        int same = t->rank == a->rank && t->dtype == a->dtype;
        for (int d = 0; same && d < a->rank; d++) same = t->dims[d] == a->dims[d];
        if (!same) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "AddN: all inputs must have the same shape and type (input %d differs)", i); return; }
        ptrs[i] = t->data;
    }
    df_tensor *o = df__k_alloc(c, 0, a->dtype, a->rank, a->dims);
    if (o && o->n) df_cuda_add_n(DF__GPU(c), a->dtype, c->n_in, ptrs, o->data, o->n, c->st);
}
/* A value of type t holding v, as bytes for df_cuda_fill. */
static int df__gk_scalar_bytes(df_dtype t, double v, unsigned char out[16]) {
    memset(out, 0, 16);
    switch (t) {
    case DF_FLOAT: { float f = (float)v; memcpy(out, &f, 4); return 1; }
    case DF_DOUBLE: memcpy(out, &v, 8); return 1;
    case DF_HALF: { uint16_t h = df_float_to_half((float)v); memcpy(out, &h, 2); return 1; }
    case DF_BFLOAT16: { uint16_t h = df_float_to_bfloat16((float)v); memcpy(out, &h, 2); return 1; }
    case DF_INT32: { int32_t i = (int32_t)v; memcpy(out, &i, 4); return 1; }
    case DF_INT64: { int64_t i = (int64_t)v; memcpy(out, &i, 8); return 1; }
    case DF_BOOL: case DF_UINT8: out[0] = (unsigned char)v; return 1;
    default: return 0;
    }
}
static void df__gk_zeros_like(df__kctx *c) {
    const df_tensor *x = c->in[0];
    unsigned char v[16];
    if (!df__gk_scalar_bytes(x->dtype, c->node->op->code ? 1 : 0, v)) { DF__KFAIL(c, DF_UNIMPLEMENTED, "%s on a GPU: no %s", c->node->op->name, df_dtype_name(x->dtype)); return; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, x->dims);
    if (o && o->n) df_cuda_fill(DF__GPU(c), o->data, o->n, df_dtype_size(x->dtype), v, c->st);
}
static void df__gk_fill(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "dims", c->st)) return;
    const df_tensor *v = c->in[1];
    if (v->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "value must be a scalar"); return; }
    df_tensor *o = df__k_alloc(c, 0, v->dtype, s.rank, s.dims);
    int64_t zero = 0, one = 1;
    if (o && o->n) df_cuda_strided_copy(DF__GPU(c), df_dtype_size(v->dtype), 1, &o->n, v->data, &zero, o->data, &one, c->st);
}
static void df__gk_transpose(df__kctx *c) {
    const df_tensor *x = c->in[0], *p = c->in[1];
    if (!df__is_int_tensor(p) || p->rank != 1 || p->n != x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "transpose expects a vector of size %d", x->rank); return; }
    int64_t dims[DF_MAX_RANK], is[DF_MAX_RANK], ss[DF_MAX_RANK], os[DF_MAX_RANK];
    unsigned seen = 0;
    df__gk_strides(x, is);
    for (int d = 0; d < x->rank; d++) {
        int64_t v = df__int_at(p, d);
        if (v < 0 || v >= x->rank || (seen >> v & 1u)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%lld is out of range or repeated in the permutation", (long long)v); return; }
        seen |= 1u << v;
        dims[d] = x->dims[v];
        ss[d] = is[v];
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, x->rank, dims);
    if (!o || !o->n) return;
    df__gk_strides(o, os);
    if (x->rank == 0) df_cuda_memcpy_d2d(DF__GPU(c), o->data, x->data, o->nbytes, c->st);
    else df_cuda_strided_copy(DF__GPU(c), df_dtype_size(x->dtype), x->rank, dims, x->data, ss, o->data, os, c->st);
}
/* ConcatV2 and Pack: each input copied into its place in the output. */
static void df__gk_concat(df__kctx *c) {
    int pack = !strcmp(c->node->op->name, "Pack");
    int n = pack ? c->n_in : c->n_in - 1;
    const df_tensor *x0 = c->in[0];
    int64_t axis = pack ? df__attr_i(c->node, "axis", 0) : 0;
    int orank = pack ? x0->rank + 1 : x0->rank;
    if (!pack) {
        const df_tensor *ax = c->in[n];
        if (!df__is_int_tensor(ax) || ax->n != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Concat axis must be a scalar"); return; }
        axis = df__int_at(ax, 0);
    }
    if (axis < -orank || axis >= orank || orank == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld", -orank, orank, (long long)axis); return; }
    if (axis < 0) axis += orank;
    int64_t dims[DF_MAX_RANK];
    for (int d = 0, e = 0; d < orank; d++) dims[d] = pack && d == axis ? n : x0->dims[e++];
    if (!pack) dims[axis] = 0;
    for (int i = 0; i < n; i++) {
        const df_tensor *t = c->in[i];
        int ok = t->rank == x0->rank && t->dtype == x0->dtype;
        for (int d = 0; ok && d < t->rank; d++) ok = pack ? t->dims[d] == x0->dims[d] : (d == axis || t->dims[d] == x0->dims[d]);
        if (!ok) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: input %d has an incompatible shape", c->node->op->name, i); return; }
        if (!pack) dims[axis] += t->dims[axis];
    }
    df_tensor *o = df__k_alloc(c, 0, x0->dtype, orank, dims);
    if (!o || !o->n) return;
    int64_t os[DF_MAX_RANK], off = 0;
    df__gk_strides(o, os);
    size_t es = df_dtype_size(x0->dtype);
    for (int i = 0; i < n && !c->st->code; i++) {
        const df_tensor *t = c->in[i];
        int64_t ts[DF_MAX_RANK], ds[DF_MAX_RANK], td[DF_MAX_RANK];
        int r = 0;
        df__gk_strides(t, ts);
        for (int d = 0, e = 0; d < orank; d++) {
            if (pack && d == axis) continue;
            td[r] = t->dims[e]; ds[r] = os[d]; ts[r] = ts[e]; r++; e++;
        }
        if (t->n) {
            int64_t one = 1, zero = 0;
            char *dst = (char *)o->data + (size_t)off * es;
            if (r == 0) df_cuda_strided_copy(DF__GPU(c), es, 1, &one, t->data, &zero, dst, &zero, c->st);
            else df_cuda_strided_copy(DF__GPU(c), es, r, td, t->data, ts, dst, ds, c->st);
        }
        off += pack ? os[axis] : t->dims[axis] * os[axis];
    }
}
/* Tile and BroadcastTo: reads at stride 0 along repeated dims. */
static void df__gk_tile(df__kctx *c) {
    const df_tensor *x = c->in[0], *m = c->in[1];
    int bcast = !strcmp(c->node->op->name, "BroadcastTo");
    int64_t dims[DF_MAX_RANK], idims[2 * DF_MAX_RANK], ss[2 * DF_MAX_RANK], ds[2 * DF_MAX_RANK], is[DF_MAX_RANK], os[DF_MAX_RANK];
    int orank = x->rank;
    if (!df__is_int_tensor(m) || m->rank != 1) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: the multiples or shape must be a vector", c->node->op->name); return; }
    if (bcast) {
        orank = (int)m->n;
        if (orank < x->rank || orank > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BroadcastTo: cannot broadcast rank %d to rank %d", x->rank, orank); return; }
        for (int d = 0; d < orank; d++) {
            dims[d] = df__int_at(m, d);
            int e = d - (orank - x->rank);
            if (dims[d] < 0 || (e >= 0 && x->dims[e] != dims[d] && x->dims[e] != 1)) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "BroadcastTo: incompatible shapes"); return; }
        }
    } else {
        if (m->n != x->rank) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected multiples argument to be a vector of length %d but got length %lld", x->rank, (long long)m->n); return; }
        for (int d = 0; d < x->rank; d++) {
            int64_t k = df__int_at(m, d);
            if (k < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", d, (long long)k); return; }
            dims[d] = x->dims[d] * k;
        }
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, orank, dims);
    if (!o || !o->n) return;
    df__gk_strides(x, is);
    df__gk_strides(o, os);
    int r = 0;
    for (int d = 0; d < orank; d++) {
        if (bcast) {
            int e = d - (orank - x->rank);
            idims[r] = dims[d]; ds[r] = os[d]; ss[r] = e < 0 || x->dims[e] != dims[d] ? 0 : is[e]; r++;
        } else {
            int64_t k = x->dims[d] ? dims[d] / x->dims[d] : 0;
            if (k != 1) { idims[r] = k; ds[r] = x->dims[d] * os[d]; ss[r] = 0; r++; }
            idims[r] = x->dims[d]; ds[r] = os[d]; ss[r] = is[d]; r++;
        }
    }
    if (r > DF_MAX_RANK) { DF__KFAIL(c, DF_UNIMPLEMENTED, "Tile on a GPU: at most %d tiled dimensions", DF_MAX_RANK / 2); return; }
    if (r == 0) { df_cuda_memcpy_d2d(DF__GPU(c), o->data, x->data, o->nbytes, c->st); return; }
    df_cuda_strided_copy(DF__GPU(c), df_dtype_size(x->dtype), r, idims, x->data, ss, o->data, ds, c->st);
}
static void df__gk_one_hot(df__kctx *c) {          /* depth, on and off in host memory */
    int64_t outer, d, inner;
    df_tensor *o = df__one_hot_prep(c, &outer, &d, &inner);
    if (o) df_cuda_one_hot(DF__GPU(c), df_dtype_size(o->dtype), c->in[0]->data, c->in[0]->dtype, o->data, outer, d, inner,
                           c->in[2]->data, c->in[3]->data, c->st);
}
static void df__gk_cumprod(df__kctx *c) {          /* axis in host memory */
    int64_t outer, len, inner;
    df_tensor *o = df__cumprod_prep(c, &outer, &len, &inner);
    if (o) df_cuda_cumprod(DF__GPU(c), o->dtype, c->in[0]->data, o->data, outer, len, inner, df__attr_b(c->node, "exclusive", 0),
                           df__attr_b(c->node, "reverse", 0), c->st);
}
static void df__gk_gather(df__kctx *c) {
    const df_tensor *p = c->in[0], *ix = c->in[1];
    int axis;
    if (df__attr_i(c->node, "batch_dims", 0) != 0) { DF__KFAIL(c, DF_UNIMPLEMENTED, "GatherV2 on a GPU: batch_dims must be 0"); return; }
    if (df__gather_axis(c->node, c->in[2], p->rank, &axis, c->st)) return;
    if (p->rank - 1 + ix->rank > DF_MAX_RANK) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Gather: result rank too large"); return; }
    int64_t dims[DF_MAX_RANK], outer = 1, inner = 1;
    int r = 0;
    for (int d = 0; d < axis; d++) dims[r++] = p->dims[d];
    for (int d = 0; d < ix->rank; d++) dims[r++] = ix->dims[d];
    for (int d = axis + 1; d < p->rank; d++) dims[r++] = p->dims[d];
    for (int d = 0; d < axis; d++) outer *= p->dims[d];
    for (int d = axis + 1; d < p->rank; d++) inner *= p->dims[d];
    df_tensor *o = df__k_alloc(c, 0, p->dtype, r, dims);
    if (o && o->n) df_cuda_gather(DF__GPU(c), df_dtype_size(p->dtype), p->data, ix->data, ix->dtype, o->data, outer, p->dims[axis], inner, ix->n, c->st);
}
static void df__gk_segment_sum(df__kctx *c) {
    const df_tensor *x = c->in[0], *ids = c->in[1], *ns = c->in[2];
    if (!df__is_int_tensor(ns) || ns->n != 1 || df__int_at(ns, 0) < 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "num_segments must be a non-negative scalar"); return; }
    int ok = ids->rank <= x->rank;
    for (int d = 0; ok && d < ids->rank; d++) ok = ids->dims[d] == x->dims[d];
    if (!ok) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "data.shape must start with segment_ids.shape"); return; }
    int64_t dims[DF_MAX_RANK], inner = 1;
    int r = 0;
    dims[r++] = df__int_at(ns, 0);
    for (int d = ids->rank; d < x->rank; d++) { dims[r++] = x->dims[d]; inner *= x->dims[d]; }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, r, dims);
    if (o && o->n) df_cuda_segment_sum(DF__GPU(c), x->dtype, x->data, ids->data, ids->dtype, o->data, ids->n, inner, dims[0], c->st);
}
static void df__gk_random(df__kctx *c) {
    df__shape s;
    if (df__dims_from(c->node, c->in[0], &s, "shape", c->st)) return;
    df_dtype t = df__attr_type(c->node, "dtype");
    df_tensor *o = df__k_alloc(c, 0, t, s.rank, s.dims);
    if (!o) return;
    uint64_t seed = (uint64_t)df__attr_i(c->node, "seed", 0), seed2 = (uint64_t)df__attr_i(c->node, "seed2", 0);
    uint32_t k0 = (uint32_t)(seed ^ (seed2 << 32 >> 32) * 0x9E3779B9u), k1 = (uint32_t)((seed >> 32) ^ seed2 ^ (seed2 >> 32));
    uint64_t counter = df__step_rng_next(c->step, c->node, (uint64_t)o->n * 4 + 16);   /* as the CPU kernel */
    if (o->n) df_cuda_random(DF__GPU(c), c->node->op->code, t, o->data, o->n, k0, k1, counter, c->st);
}
/* ApplyGradientDescent, ApplyMomentum, ApplyAdam: hyperparameters stay on the device. */
static void df__gk_apply(df__kctx *c) {
    int code = c->node->op->code;
    df__var *vars[3] = {NULL, NULL, NULL};
    df_tensor *vals[3] = {NULL, NULL, NULL};
    int nv = code + 1;
    static const int grad_of[3] = {2, 3, 9}, n_scalars[3] = {1, 2, 6};
    static const int scalar_at[3][6] = {{1}, {2, 4}, {3, 4, 5, 6, 7, 8}};   /* Momentum: lr, grad, momentum */
    const df_tensor *g = c->in[grad_of[code]];
    const void *scalars[6];
    for (int i = 0; i < n_scalars[code]; i++) {
        const df_tensor *t = c->in[scalar_at[code][i]];
        if (t->rank != 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "input %d of %s must be a scalar", scalar_at[code][i], c->node->op->name); return; }
        if (t->dtype != g->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: hyperparameters must have the gradient's type", c->node->op->name); return; }
        scalars[i] = t->data;
    }
    if (!df__k_apply_lock(c, nv, vars, vals)) return;
    df_tensor *var = vals[0];
    int ok = df__k_apply_check(c, var, g, code == 0 ? "delta" : "grad");
    for (int i = 1; ok && i < nv; i++) ok = df__k_apply_check(c, var, vals[i], code == 1 ? "accum" : i == 1 ? "m" : "v");
    for (int i = 0; ok && i < nv; i++)
        if (vals[i]->dtype != g->dtype) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: variables and gradient differ in type", c->node->op->name); ok = 0; }
    if (ok && var->n)
        df_cuda_apply(DF__GPU(c), code, var->dtype, var->n, var->data, vals[1] ? vals[1]->data : NULL, vals[2] ? vals[2]->data : NULL,
                      g->data, scalars, df__attr_b(c->node, "use_nesterov", 0), c->st);
    df_tensor *keep = df_tensor_retain(var);
    for (int i = 0; i < nv; i++) df__spin_unlock(&vars[i]->lock);
    if (c->st->code) { df_tensor_release(keep); return; }
    c->out[0] = keep;
}

/* The GPU's kernels: host-memory arguments (bit i; HOST_LAST: the last input, ConcatV2's axis),
   the dtypes its device-memory arguments may have (0: any; integers and booleans always may),
   and the kernel (NULL: the CPU kernel, which reads no device memory: pass-through, views,
   shapes and control flow). Ops whose inputs and outputs are all integers or booleans also run
   on a GPU device, on the host (df__node_kernel); DF__GK_HOSTONLY marks ops that only do that. */
#define DF__GK_F ((1u << DF_FLOAT) | (1u << DF_DOUBLE))
#define DF__GK_FH (DF__GK_F | (1u << DF_HALF) | (1u << DF_BFLOAT16))
#define DF__GK_CAST (DF__GK_FH | (1u << DF_UINT8) | (1u << DF_INT8))
#define DF__GK_HOSTONLY (1u << DF_INT32)
#define DF__GK_HOST_LAST 0x80000000u
static const struct { const char *name; uint32_t host_in, host_out, types; df__kernel_fn fn; } df__gpu_kernels[] = {
    {"Const", 0, 0, 0, df__gk_const}, {"_GpuGraph", 0, 0, 0, df__gk_gpu_graph},
    {"Identity", 0, 0, 0, NULL}, {"IdentityN", 0, 0, 0, NULL}, {"StopGradient", 0, 0, 0, NULL},
    {"PlaceholderWithDefault", 0, 0, 0, NULL}, {"NoOp", 0, 0, 0, NULL}, {"ControlTrigger", 0, 0, 0, NULL},
    {"Enter", 0, 0, 0, NULL}, {"Exit", 0, 0, 0, NULL}, {"NextIteration", 0, 0, 0, NULL},
    {"Switch", 2, 0, 0, NULL}, {"Merge", 0, 2, 0, NULL}, {"LoopCond", 1, 1, 0, NULL},
    {"Reshape", 2, 0, 0, NULL}, {"ExpandDims", 2, 0, 0, NULL}, {"Squeeze", 0, 0, 0, NULL},
    {"Shape", 0, 1, 0, NULL}, {"Size", 0, 1, 0, NULL}, {"Rank", 0, 1, 0, NULL},
    {"VariableV2", 0, 0, 0, NULL}, {"Assign", 0, 0, 0, NULL}, {"AssignAdd", 0, 0, DF__GK_F, NULL}, {"AssignSub", 0, 0, DF__GK_F, NULL},
    {"_Send", 0, 0, 0, NULL}, {"_Recv", 0, 0, 0, NULL}, {"_HostSend", ~0u, ~0u, 0, NULL}, {"_HostRecv", ~0u, ~0u, 0, NULL},
    {"StackV2", ~0u, ~0u, 0, NULL}, {"StackPushV2", 1, 0, 0, NULL}, {"StackPopV2", 1, 0, 0, NULL}, {"StackCloseV2", ~0u, ~0u, 0, NULL},
    {"LoopStackPush", 1, 0, 0, NULL}, {"LoopStackPop", 3, 0, 0, NULL},
    {"SumAccumulator", ~0u, ~0u, 0, NULL}, {"SumAccumulatorAdd", 1, 0, DF__GK_F, NULL}, {"SumAccumulatorRead", 1, 0, DF__GK_F, NULL},
    {"LoopIterationLess", ~0u, ~0u, DF__GK_HOSTONLY, NULL}, {"LoopCount", ~0u, ~0u, DF__GK_HOSTONLY, NULL},
    {"Range", 0, 0, DF__GK_HOSTONLY, NULL}, {"InvertPermutation", 0, 0, DF__GK_HOSTONLY, NULL},
    {"BroadcastGradientArgs", 0, 0, DF__GK_HOSTONLY, NULL}, {"ConcatOffset", 0, 0, DF__GK_HOSTONLY, NULL},
    {"LogicalAnd", 0, 0, DF__GK_HOSTONLY, NULL}, {"LogicalOr", 0, 0, DF__GK_HOSTONLY, NULL}, {"LogicalNot", 0, 0, DF__GK_HOSTONLY, NULL},
    {"AddV2", 0, 0, DF__GK_F, df__gk_binary}, {"Add", 0, 0, DF__GK_F, df__gk_binary}, {"Sub", 0, 0, DF__GK_F, df__gk_binary},
    {"Mul", 0, 0, DF__GK_F, df__gk_binary}, {"RealDiv", 0, 0, DF__GK_F, df__gk_binary}, {"Div", 0, 0, DF__GK_F, df__gk_binary},
    {"Maximum", 0, 0, DF__GK_F, df__gk_binary}, {"Minimum", 0, 0, DF__GK_F, df__gk_binary}, {"Pow", 0, 0, DF__GK_F, df__gk_binary},
    {"FloorMod", 0, 0, DF__GK_F, df__gk_binary}, {"FloorDiv", 0, 0, DF__GK_F, df__gk_binary},
    {"SquaredDifference", 0, 0, DF__GK_F, df__gk_binary}, {"Less", 0, 0, DF__GK_F, df__gk_binary},
    {"LessEqual", 0, 0, DF__GK_F, df__gk_binary}, {"Greater", 0, 0, DF__GK_F, df__gk_binary},
    {"GreaterEqual", 0, 0, DF__GK_F, df__gk_binary}, {"Equal", 0, 0, DF__GK_F, df__gk_binary},
    {"NotEqual", 0, 0, DF__GK_F, df__gk_binary}, {"ReluGrad", 0, 0, DF__GK_F, df__gk_binary},
    {"TanhGrad", 0, 0, DF__GK_F, df__gk_binary}, {"SigmoidGrad", 0, 0, DF__GK_F, df__gk_binary},
    {"SqrtGrad", 0, 0, DF__GK_F, df__gk_binary}, {"RsqrtGrad", 0, 0, DF__GK_F, df__gk_binary},
    {"ReciprocalGrad", 0, 0, DF__GK_F, df__gk_binary},
    {"Neg", 0, 0, DF__GK_F, df__gk_unary}, {"Square", 0, 0, DF__GK_F, df__gk_unary}, {"Abs", 0, 0, DF__GK_F, df__gk_unary},
    {"Sign", 0, 0, DF__GK_F, df__gk_unary}, {"Relu", 0, 0, DF__GK_F, df__gk_unary}, {"Sqrt", 0, 0, DF__GK_F, df__gk_unary},
    {"Rsqrt", 0, 0, DF__GK_F, df__gk_unary}, {"Exp", 0, 0, DF__GK_F, df__gk_unary}, {"Log", 0, 0, DF__GK_F, df__gk_unary},
    {"Tanh", 0, 0, DF__GK_F, df__gk_unary}, {"Sigmoid", 0, 0, DF__GK_F, df__gk_unary},
    {"Reciprocal", 0, 0, DF__GK_F, df__gk_unary}, {"Floor", 0, 0, DF__GK_F, df__gk_unary},
    {"BiasAdd", 0, 0, DF__GK_F, df__gk_bias_add}, {"BiasAddGrad", 0, 0, DF__GK_F, df__gk_bias_add_grad},
    {"Sum", 2, 0, DF__GK_F, df__gk_reduce}, {"Mean", 2, 0, DF__GK_F, df__gk_reduce}, {"Max", 2, 0, DF__GK_F, df__gk_reduce},
    {"Min", 2, 0, DF__GK_F, df__gk_reduce}, {"Prod", 2, 0, DF__GK_F, df__gk_reduce},
    {"ArgMax", 2, 0, DF__GK_F, df__gk_argmax}, {"ArgMin", 2, 0, DF__GK_F, df__gk_argmax},
    {"MatMul", 0, 0, DF__GK_FH, df__gk_matmul}, {"BatchMatMulV2", 0, 0, DF__GK_FH, df__gk_bmm},
    {"Softmax", 0, 0, DF__GK_F, df__gk_softmax}, {"LogSoftmax", 0, 0, DF__GK_F, df__gk_softmax},
    {"SoftmaxCrossEntropyWithLogits", 0, 0, DF__GK_F, df__gk_xent},
    {"SparseSoftmaxCrossEntropyWithLogits", 0, 0, DF__GK_F, df__gk_xent},
    {"Cast", 0, 0, DF__GK_CAST, df__gk_cast}, {"Select", 0, 0, 0, df__gk_select}, {"SelectV2", 0, 0, 0, df__gk_select},
    {"AddN", 0, 0, DF__GK_F, df__gk_add_n}, {"ZerosLike", 0, 0, DF__GK_FH, df__gk_zeros_like},
    {"OnesLike", 0, 0, DF__GK_FH, df__gk_zeros_like}, {"Fill", 1, 0, 0, df__gk_fill},
    {"Transpose", 2, 0, 0, df__gk_transpose}, {"ConcatV2", DF__GK_HOST_LAST, 0, 0, df__gk_concat},
    {"Pack", 0, 0, 0, df__gk_concat}, {"Tile", 2, 0, 0, df__gk_tile}, {"BroadcastTo", 2, 0, 0, df__gk_tile},
    {"Slice", 6, 0, 0, NULL}, {"StridedSlice", 14, 0, 0, NULL}, {"StridedSliceGrad", 15, 0, 0, NULL},
    {"Pad", 2, 0, 0, NULL}, {"Unpack", 0, 0, 0, NULL},
    {"GatherV2", 4, 0, 0, df__gk_gather}, {"OneHot", 14, 0, 0, df__gk_one_hot}, {"Cumprod", 2, 0, DF__GK_F, df__gk_cumprod}, {"UnsortedSegmentSum", 4, 0, DF__GK_F, df__gk_segment_sum},
    {"RandomUniform", 1, 0, DF__GK_F, df__gk_random}, {"RandomStandardNormal", 1, 0, DF__GK_F, df__gk_random},
    {"TruncatedNormal", 1, 0, DF__GK_F, df__gk_random},
    {"ApplyGradientDescent", 0, 0, DF__GK_F, df__gk_apply}, {"ApplyMomentum", 0, 0, DF__GK_F, df__gk_apply},
    {"ApplyAdam", 0, 0, DF__GK_F, df__gk_apply},
    {"Conv2D", 0, 0, DF__GK_F, NULL}, {"Conv2DBackpropInput", 1, 0, DF__GK_F, NULL},
    {"Conv2DBackpropFilter", 2, 0, DF__GK_F, NULL}, {"MaxPool", 0, 0, DF__GK_F, NULL}, {"AvgPool", 0, 0, DF__GK_F, NULL},
    {"MaxPoolGrad", 0, 0, DF__GK_F, NULL}, {"AvgPoolGrad", 1, 0, DF__GK_F, NULL},
};
static void df__gpu_register(df__opdef *ops, int n_ops) {
    for (size_t i = 0; i < sizeof df__gpu_kernels / sizeof *df__gpu_kernels; i++)
        for (int k = 0; k < n_ops; k++) {
            if (strcmp(ops[k].name, df__gpu_kernels[i].name)) continue;
            df__kernel_def *d = &ops[k].kernels[DF__DEV_GPU];
            d->fn = df__gpu_kernels[i].fn ? df__gpu_kernels[i].fn : ops[k].kernels[DF__DEV_CPU].fn;
            d->host_inputs = df__gpu_kernels[i].host_in;
            d->host_outputs = df__gpu_kernels[i].host_out;
            d->types = df__gpu_kernels[i].types;
            break;
        }
}
#endif /* DATAFLOW_CUDA */

static const df__opspec df__op_table[] = {
    {"Const", "", "output:dtype", "value:tensor,dtype:type", df__sf_const, df__k_const, DF__OP_NO_GRADIENT, 0},
    {"Placeholder", "", "output:dtype", "dtype:type,shape:shape=?", df__sf_placeholder, df__k_placeholder, DF__OP_NO_GRADIENT, 0},
    {"PlaceholderWithDefault", "input:dtype", "output:dtype", "dtype:type,shape:shape=?", df__sf_placeholder, df__k_identity, 0, 0},
    {"Identity", "input:T", "output:T", "T:type", df__sf_same, df__k_identity, 0, 0},
    {"IdentityN", "input:T", "output:T", "T:list(type)", df__sf_identity_n, df__k_identity, 0, 0},
    {"StopGradient", "input:T", "output:T", "T:type", df__sf_same, df__k_identity, DF__OP_NO_GRADIENT, 0},
    {"NoOp", "", "", "", NULL, df__k_noop, 0, 0},
    DF__BIN("AddV2", DF__B_ADD), DF__BIN("Add", DF__B_ADD), DF__BIN("Sub", DF__B_SUB), DF__BIN("Mul", DF__B_MUL),
    DF__BIN("RealDiv", DF__B_DIV), DF__BIN("Div", DF__B_DIV), DF__BIN("Maximum", DF__B_MAX),
    DF__BIN("Minimum", DF__B_MIN), DF__BIN("Pow", DF__B_POW), DF__BIN("FloorMod", DF__B_FLOORMOD),
    DF__BIN("FloorDiv", DF__B_FLOORDIV), DF__BIN("SquaredDifference", DF__B_SQDIFF),
    DF__CMP("Less", DF__B_LESS, DF__NUM), DF__CMP("LessEqual", DF__B_LESS_EQ, DF__NUM),
    DF__CMP("Greater", DF__B_GREATER, DF__NUM), DF__CMP("GreaterEqual", DF__B_GREATER_EQ, DF__NUM),
    {"Equal", "x:T,y:T", "z:bool", "T:type{float,double,int32,int64,bool},incompatible_shape_error:bool=true",
     df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_EQUAL},
    {"NotEqual", "x:T,y:T", "z:bool", "T:type{float,double,int32,int64,bool},incompatible_shape_error:bool=true",
     df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_NOT_EQUAL},
    {"LogicalAnd", "x:bool,y:bool", "z:bool", "", df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_AND},
    {"LogicalOr", "x:bool,y:bool", "z:bool", "", df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_OR},
    {"LogicalNot", "x:bool", "y:bool", "", df__sf_same, df__k_unary, DF__OP_EXPENSIVE, DF__U_NOT},
    DF__UN("Neg", DF__U_NEG, DF__NUM), DF__UN("Square", DF__U_SQUARE, DF__NUM), DF__UN("Abs", DF__U_ABS, DF__NUM),
    DF__UN("Sign", DF__U_SIGN, DF__NUM), DF__UN("Relu", DF__U_RELU, DF__NUM),
    DF__UN("Sqrt", DF__U_SQRT, DF__FLT), DF__UN("Rsqrt", DF__U_RSQRT, DF__FLT), DF__UN("Exp", DF__U_EXP, DF__FLT),
    DF__UN("Log", DF__U_LOG, DF__FLT), DF__UN("Tanh", DF__U_TANH, DF__FLT), DF__UN("Sigmoid", DF__U_SIGMOID, DF__FLT),
    DF__UN("Reciprocal", DF__U_RECIPROCAL, DF__FLT), DF__UN("Floor", DF__U_FLOOR, DF__FLT),
    {"Select", "condition:bool,t:T,e:T", "output:T", "T:type", df__sf_select, df__k_select, DF__OP_EXPENSIVE, 0},
    {"SelectV2", "condition:bool,t:T,e:T", "output:T", "T:type", df__sf_select, df__k_select, DF__OP_EXPENSIVE, 0},
    {"Cast", "x:SrcT", "y:DstT", "SrcT:type,DstT:type,Truncate:bool=false", df__sf_same, df__k_cast, DF__OP_EXPENSIVE, 0},
    {"MatMul", "a:T,b:T", "product:T", "transpose_a:bool=false,transpose_b:bool=false,T:type{float,double,int32}",
     df__sf_matmul, df__k_matmul, DF__OP_EXPENSIVE, 0},
    {"BatchMatMulV2", "x:T,y:T", "output:T", "T:type{float,double,int32},adj_x:bool=false,adj_y:bool=false",
     df__sf_bmm, df__k_bmm, DF__OP_EXPENSIVE, 0},
#define DF__CONV_ATTRS "T:type{float,double},strides:list(int),use_cudnn_on_gpu:bool=true,padding:string," \
    "explicit_paddings:list(int)=[],data_format:string=NHWC,dilations:list(int)=[]"
    {"Conv2D", "input:T,filter:T", "output:T", DF__CONV_ATTRS, df__sf_conv2d, df__k_conv2d, DF__OP_EXPENSIVE, 0},
    {"Conv2DBackpropInput", "input_sizes:int32,filter:T,out_backprop:T", "output:T", DF__CONV_ATTRS,
     df__sf_conv_bp_input, df__k_conv2d_bp_input, DF__OP_EXPENSIVE, 0},
    {"Conv2DBackpropFilter", "input:T,filter_sizes:int32,out_backprop:T", "output:T", DF__CONV_ATTRS,
     df__sf_conv_bp_filter, df__k_conv2d_bp_filter, DF__OP_EXPENSIVE, 0},
#undef DF__CONV_ATTRS
#define DF__POOL_ATTRS "T:type{float,double}=float,ksize:list(int),strides:list(int),padding:string,data_format:string=NHWC"
    {"MaxPool", "input:T", "output:T", DF__POOL_ATTRS, df__sf_pool, df__k_pool, DF__OP_EXPENSIVE, 1},
    {"AvgPool", "value:T", "output:T", DF__POOL_ATTRS, df__sf_pool, df__k_pool, DF__OP_EXPENSIVE, 0},
    {"MaxPoolGrad", "orig_input:T,orig_output:T,grad:T", "output:T", DF__POOL_ATTRS, df__sf_same, df__k_max_pool_grad, DF__OP_EXPENSIVE, 0},
    {"AvgPoolGrad", "orig_input_shape:int32,grad:T", "output:T", DF__POOL_ATTRS, df__sf_pool_grad_avg, df__k_avg_pool_grad, DF__OP_EXPENSIVE, 0},
#undef DF__POOL_ATTRS
    {"BiasAdd", "value:T,bias:T", "output:T", "T:type" DF__NUM ",data_format:string=NHWC", df__sf_bias_add, df__k_bias_add, DF__OP_EXPENSIVE, 0},
    {"BiasAddGrad", "out_backprop:T", "output:T", "T:type" DF__FLT ",data_format:string=NHWC", df__sf_bias_add_grad,
     df__k_bias_add_grad, DF__OP_EXPENSIVE, 0},
    DF__RED("Sum", DF__R_SUM), DF__RED("Mean", DF__R_MEAN), DF__RED("Max", DF__R_MAX), DF__RED("Min", DF__R_MIN),
    DF__RED("Prod", DF__R_PROD),
    {"ArgMax", "input:T,dimension:Tidx", "output:output_type", "T:type" DF__NUM ",Tidx:type{int32,int64}=int32,"
     "output_type:type{int32,int64}=int64", df__sf_argmax, df__k_argmax, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    {"ArgMin", "input:T,dimension:Tidx", "output:output_type", "T:type" DF__NUM ",Tidx:type{int32,int64}=int32,"
     "output_type:type{int32,int64}=int64", df__sf_argmax, df__k_argmax, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 1},
    {"Reshape", "tensor:T,shape:Tshape", "output:T", "T:type,Tshape:type{int32,int64}=int32", df__sf_reshape, df__k_reshape, 0, 0},
    {"Transpose", "x:T,perm:Tperm", "y:T", "T:type,Tperm:type{int32,int64}=int32", df__sf_transpose, df__k_transpose, DF__OP_EXPENSIVE, 0},
    {"ExpandDims", "input:T,dim:Tdim", "output:T", "T:type,Tdim:type{int32,int64}=int32", df__sf_expand_dims, df__k_expand_dims, 0, 0},
    {"Squeeze", "input:T", "output:T", "T:type,squeeze_dims:list(int)=[]", df__sf_squeeze, df__k_squeeze, 0, 0},
    {"Shape", "input:T", "output:out_type", "T:type,out_type:type{int32,int64}=int32", df__sf_shape_op, df__k_shape, DF__OP_NO_GRADIENT, 0},
    {"Size", "input:T", "output:out_type", "T:type,out_type:type{int32,int64}=int32", df__sf_scalar, df__k_size, DF__OP_NO_GRADIENT, 0},
    {"Rank", "input:T", "output:int32", "T:type", df__sf_scalar, df__k_rank, DF__OP_NO_GRADIENT, 0},
    {"Fill", "dims:index_type,value:T", "output:T", "T:type,index_type:type{int32,int64}=int32", df__sf_fill, df__k_fill, DF__OP_EXPENSIVE, 0},
    {"ZerosLike", "x:T", "y:T", "T:type", df__sf_same, df__k_zeros_like, DF__OP_NO_GRADIENT, 0},
    {"OnesLike", "x:T", "y:T", "T:type", df__sf_same, df__k_zeros_like, DF__OP_NO_GRADIENT, 1},
    {"Range", "start:Tidx,limit:Tidx,delta:Tidx", "output:Tidx", "Tidx:type" DF__NUM "=int32", df__sf_range, df__k_range, DF__OP_NO_GRADIENT, 0},
    {"ConcatV2", "values:N*T,axis:Tidx", "output:T", "N:int>=2,T:type,Tidx:type{int32,int64}=int32", df__sf_concat, df__k_concat, DF__OP_EXPENSIVE, 0},
    {"Pack", "values:N*T", "output:T", "N:int>=1,T:type,axis:int=0", df__sf_pack, df__k_pack, DF__OP_EXPENSIVE, 0},
    {"Unpack", "value:T", "output:num*T", "num:int>=0,T:type,axis:int=0", df__sf_unpack, df__k_unpack, DF__OP_EXPENSIVE, 0},
    {"Slice", "input:T,begin:Index,size:Index", "output:T", "T:type,Index:type{int32,int64}", df__sf_slice, df__k_slice, DF__OP_EXPENSIVE, 0},
    {"StridedSlice", "input:T,begin:Index,end:Index,strides:Index", "output:T", "T:type,Index:type{int32,int64},"
     "begin_mask:int=0,end_mask:int=0,ellipsis_mask:int=0,new_axis_mask:int=0,shrink_axis_mask:int=0",
     df__sf_strided_slice, df__k_strided_slice, DF__OP_EXPENSIVE, 0},
    {"Tile", "input:T,multiples:Tmultiples", "output:T", "T:type,Tmultiples:type{int32,int64}=int32", df__sf_tile, df__k_tile, DF__OP_EXPENSIVE, 0},
    {"GatherV2", "params:Tparams,indices:Tindices,axis:Taxis", "output:Tparams",
     "Tparams:type,Tindices:type{int32,int64},Taxis:type{int32,int64},batch_dims:int=0", df__sf_gather, df__k_gather, DF__OP_EXPENSIVE, 0},
    {"OneHot", "indices:TI,depth:int32,on_value:T,off_value:T", "output:T", "axis:int=-1,T:type,TI:type{int32,int64}=int64",
     df__sf_one_hot, df__k_one_hot, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    {"Softmax", "logits:T", "softmax:T", "T:type" DF__FLT, df__sf_softmax, df__k_softmax, DF__OP_EXPENSIVE, 0},
    {"LogSoftmax", "logits:T", "logsoftmax:T", "T:type" DF__FLT, df__sf_softmax, df__k_softmax, DF__OP_EXPENSIVE, 1},
    {"SoftmaxCrossEntropyWithLogits", "features:T,labels:T", "loss:T,backprop:T", "T:type" DF__FLT, df__sf_xent, df__k_xent, DF__OP_EXPENSIVE, 0},
    {"SparseSoftmaxCrossEntropyWithLogits", "features:T,labels:Tlabels", "loss:T,backprop:T",
     "T:type" DF__FLT ",Tlabels:type{int32,int64}=int64", df__sf_xent, df__k_xent, DF__OP_EXPENSIVE, 1},
    {"AddN", "inputs:N*T", "sum:T", "N:int>=1,T:type" DF__NUM, df__sf_add_n, df__k_add_n, DF__OP_EXPENSIVE, 0},
    {"VariableV2", "", "ref:Ref(dtype)", "shape:shape,dtype:type,container:string=,shared_name:string=",
     df__sf_variable, df__k_variable, DF__OP_STATEFUL, 0},
    {"SaveV2", "prefix:string,tensor_names:string,shape_and_slices:string,tensors:dtypes", "", "dtypes:list(type)",
     NULL, df__k_save_v2, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_EXPENSIVE, 0},
    {"RestoreV2", "prefix:string,tensor_names:string,shape_and_slices:string", "tensors:dtypes", "dtypes:list(type)",
     df__sf_unknown, df__k_restore_v2, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_EXPENSIVE, 0},
    {"Assign", "ref:Ref(T),value:T", "output_ref:Ref(T)", "T:type,validate_shape:bool=true,use_locking:bool=true",
     df__sf_assign, df__k_assign, DF__OP_STATEFUL | DF__OP_ALLOWS_UNINIT, 0},
    {"AssignAdd", "ref:Ref(T),value:T", "output_ref:Ref(T)", "T:type" DF__NUM ",use_locking:bool=false",
     df__sf_assign, df__k_assign, DF__OP_STATEFUL, 1},
    {"AssignSub", "ref:Ref(T),value:T", "output_ref:Ref(T)", "T:type" DF__NUM ",use_locking:bool=false",
     df__sf_assign, df__k_assign, DF__OP_STATEFUL, 2},
    DF__RAND("RandomUniform", 0), DF__RAND("RandomStandardNormal", 1), DF__RAND("TruncatedNormal", 2),
    {"Switch", "data:T,pred:bool", "output_false:T,output_true:T", "T:type", df__sf_switch, df__k_switch, DF__OP_SWITCH, 0},
    {"Merge", "inputs:N*T", "output:T,value_index:int32", "T:type,N:int>=1", df__sf_merge, df__k_merge, DF__OP_MERGE, 0},
    {"Enter", "data:T", "output:T", "T:type,frame_name:string,is_constant:bool=false,parallel_iterations:int=10",
     df__sf_enter, df__k_identity, DF__OP_ENTER, 0},
    {"Exit", "data:T", "output:T", "T:type", df__sf_same, df__k_identity, DF__OP_EXIT, 0},
    {"NextIteration", "data:T", "output:T", "T:type", df__sf_same, df__k_identity, DF__OP_NEXT_ITERATION, 0},
    {"LoopCond", "input:bool", "output:bool", "", df__sf_loop_cond, df__k_loop_cond, DF__OP_LOOP_COND, 0},
    {"ControlTrigger", "", "", "", NULL, df__k_noop, DF__OP_CONTROL_TRIGGER, 0},
    {"ReluGrad", "gradients:T,features:T", "backprops:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_RELU_GRAD},
    {"TanhGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_TANH_GRAD},
    {"SigmoidGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_SIGMOID_GRAD},
    {"SqrtGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_SQRT_GRAD},
    {"RsqrtGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_RSQRT_GRAD},
    {"ReciprocalGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_RECIP_GRAD},
    {"BroadcastGradientArgs", "s0:T,s1:T", "r0:T,r1:T", "T:type{int32,int64}=int32", df__sf_bcast_grad_args, df__k_bcast_grad_args, DF__OP_NO_GRADIENT, 0},
    {"UnsortedSegmentSum", "data:T,segment_ids:Tindices,num_segments:Tnumsegments", "output:T",
     "T:type" DF__NUM ",Tindices:type{int32,int64},Tnumsegments:type{int32,int64}=int32", df__sf_segment_sum, df__k_segment_sum, DF__OP_EXPENSIVE, 0},
    {"Pad", "input:T,paddings:Tpaddings", "output:T", "T:type,Tpaddings:type{int32,int64}=int32", df__sf_pad, df__k_pad, DF__OP_EXPENSIVE, 0},
    {"InvertPermutation", "x:T", "y:T", "T:type{int32,int64}=int32", df__sf_same, df__k_invert_permutation, DF__OP_NO_GRADIENT, 0},
    {"BroadcastTo", "input:T,shape:Tidx", "output:T", "T:type,Tidx:type{int32,int64}=int32", df__sf_broadcast_to, df__k_broadcast_to, DF__OP_EXPENSIVE, 0},
    {"Cumprod", "x:T,axis:Tidx", "out:T", "exclusive:bool=false,reverse:bool=false,T:type" DF__FLT ",Tidx:type{int32,int64}=int32",
     df__sf_same, df__k_cumprod, DF__OP_EXPENSIVE, 0},
    {"ConcatOffset", "concat_dim:int32,shape:N*int32", "offset:N*int32", "N:int>=2", df__sf_concat_offset, df__k_concat_offset, DF__OP_NO_GRADIENT, 0},
    {"StridedSliceGrad", "shape:Index,begin:Index,end:Index,strides:Index,dy:T", "output:T", "T:type,Index:type{int32,int64},"
     "begin_mask:int=0,end_mask:int=0,ellipsis_mask:int=0,new_axis_mask:int=0,shrink_axis_mask:int=0",
     df__sf_shape_input, df__k_strided_slice_grad, DF__OP_EXPENSIVE, 0},
    {"StackV2", "max_size:int32", "handle:resource", "elem_type:type,stack_name:string=", df__sf_scalar, df__k_stack, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"StackPushV2", "handle:resource,elem:T", "output:T", "T:type,swap_memory:bool=false", df__sf_push, df__k_stack_push, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"StackPopV2", "handle:resource", "elem:elem_type", "elem_type:type", df__sf_unknown, df__k_stack_pop, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopStackPush", "handle:resource,elem:T", "output:T", "T:type,swap_memory:bool=false", df__sf_push, df__k_loop_push, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopStackPop", "handle:resource,count:int32", "elem:elem_type", "elem_type:type", df__sf_unknown, df__k_loop_pop, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopIterationLess", "limit:int32", "output:bool", "", df__sf_scalar, df__k_loop_iteration_less, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopCount", "pred:bool", "count:int32", "", df__sf_scalar, df__k_loop_count, DF__OP_EXIT | DF__OP_LOOP_COUNT | DF__OP_NO_GRADIENT, 0},
    {"StackCloseV2", "handle:resource", "", "", NULL, df__k_stack_close, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
#define DF__XFER_ATTRS "tensor_name:string,send_device:string,send_device_incarnation:int,recv_device:string,client_terminated:bool=false"
    {"_Send", "tensor:T", "", "T:type," DF__XFER_ATTRS, NULL, df__k_send, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER, 0},
    /* a GPU partition's nodes as one CUDA graph (cuda_graphs; made by the partitioner only) */
    {"_GpuGraph", "inputs:Tin", "outputs:Tout", "Tin:list(type),Tout:list(type)", NULL, NULL,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_ALLOWS_UNINIT, 0},   /* (its nodes read variables themselves) */
    {"_Recv", "", "tensor:tensor_type", "tensor_type:type," DF__XFER_ATTRS, df__sf_unknown, df__k_recv,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER | DF__OP_RECV, 0},
    {"_HostSend", "tensor:T", "", "T:type," DF__XFER_ATTRS, NULL, df__k_send, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER, 0},
    {"_HostRecv", "", "tensor:tensor_type", "tensor_type:type," DF__XFER_ATTRS, df__sf_unknown, df__k_recv,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER | DF__OP_RECV, 0},
#undef DF__XFER_ATTRS
    {"SumAccumulator", "", "handle:resource", "dtype:type" DF__FLT, df__sf_scalar, df__k_accum, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"SumAccumulatorAdd", "handle:resource,value:T", "", "T:type" DF__FLT, NULL, df__k_accum_add, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"SumAccumulatorRead", "handle:resource,default:T", "sum:T", "T:type" DF__FLT, df__sf_accum_read, df__k_accum_read, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"ApplyGradientDescent", "var:Ref(T),alpha:T,delta:T", "out:Ref(T)", "T:type" DF__FLT ",use_locking:bool=false",
     df__sf_apply, df__k_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"ApplyMomentum", "var:Ref(T),accum:Ref(T),lr:T,grad:T,momentum:T", "out:Ref(T)", "T:type" DF__FLT ",use_locking:bool=false,use_nesterov:bool=false",
     df__sf_apply, df__k_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 1},
    {"ApplyAdam", "var:Ref(T),m:Ref(T),v:Ref(T),beta1_power:T,beta2_power:T,lr:T,beta1:T,beta2:T,epsilon:T,grad:T", "out:Ref(T)",
     "T:type" DF__FLT ",use_locking:bool=false,use_nesterov:bool=false", df__sf_apply, df__k_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 2},
};
static const int df__op_table_size = (int)(sizeof df__op_table / sizeof *df__op_table);

const char *df_version(void) { return DF_VERSION_STRING; }

/* ---- typed helpers ---- */
static df_output df__out(df_node *n, int i) { df_output o = {n, n ? i : 0}; return o; }
static df_output df__op1(df_graph *g, const char *op, df_output a) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, a);
    return df__out(df_op_finish(b), 0);
}
static df_output df__op2(df_graph *g, const char *op, df_output a, df_output c) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, a);
    df_op_add_input(b, c);
    return df__out(df_op_finish(b), 0);
}
df_output df_const(df_graph *g, df_tensor *value) {
    if (g && !g->status.code && !value) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_const: value is NULL");
        return df__out(NULL, 0);
    }
    df_op_builder *b = df_op_new(g, "Const", NULL);
    if (b) { df_op_set_attr_tensor(b, "value", value); df_op_set_attr_type(b, "dtype", value->dtype); }
    return df__out(df_op_finish(b), 0);
}
static df_output df__scalar_const(df_graph *g, df_tensor *t) {
    if (!t) { if (g) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory making a constant"); return df__out(NULL, 0); }
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
df_output df_scalar_f32(df_graph *g, float v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_f32(v)) : df__out(NULL, 0); }
df_output df_scalar_f64(df_graph *g, double v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_f64(v)) : df__out(NULL, 0); }
df_output df_scalar_i32(df_graph *g, int32_t v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_i32(v)) : df__out(NULL, 0); }
df_output df_scalar_i64(df_graph *g, int64_t v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_i64(v)) : df__out(NULL, 0); }
df_output df_scalar_bool(df_graph *g, int v) { return g && !g->status.code ? df__scalar_const(g, df_tensor_scalar_bool(v)) : df__out(NULL, 0); }
static df_output df__vector_i64(df_graph *g, int n, const int64_t *v) {
    if (!g || g->status.code) return df__out(NULL, 0);
    int64_t dim = n;
    df_status st;
    df_tensor *t = df_tensor_from_data(DF_INT64, 1, &dim, v, (size_t)n * 8, &st);
    if (!t) { df__graph_error(g, st.code, "%s", st.message); return df__out(NULL, 0); }
    return df__scalar_const(g, t);
}
static df_output df__vector_i32(df_graph *g, int n, const int32_t *v) {
    if (!g || g->status.code) return df__out(NULL, 0);
    int64_t dim = n;
    df_status st;
    df_tensor *t = df_tensor_from_data(DF_INT32, 1, &dim, v, (size_t)n * 4, &st);
    if (!t) { df__graph_error(g, st.code, "%s", st.message); return df__out(NULL, 0); }
    return df__scalar_const(g, t);
}
df_output df_placeholder(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "Placeholder", name);
    df_op_set_attr_type(b, "dtype", t);
    if (rank != -1) df_op_set_attr_shape(b, "shape", rank, dims);   /* -1: unknown rank */
    return df__out(df_op_finish(b), 0);
}
df_output df_identity(df_graph *g, df_output x) { return df__op1(g, "Identity", x); }
df_output df_add(df_graph *g, df_output a, df_output b) { return df__op2(g, "AddV2", a, b); }
df_output df_sub(df_graph *g, df_output a, df_output b) { return df__op2(g, "Sub", a, b); }
df_output df_mul(df_graph *g, df_output a, df_output b) { return df__op2(g, "Mul", a, b); }
df_output df_div(df_graph *g, df_output a, df_output b) { return df__op2(g, "RealDiv", a, b); }
df_output df_maximum(df_graph *g, df_output a, df_output b) { return df__op2(g, "Maximum", a, b); }
df_output df_minimum(df_graph *g, df_output a, df_output b) { return df__op2(g, "Minimum", a, b); }
df_output df_floor_mod_i(df_graph *g, df_output a, df_output b) { return df__op2(g, "FloorMod", a, b); }
df_output df_neg(df_graph *g, df_output x) { return df__op1(g, "Neg", x); }
df_output df_square(df_graph *g, df_output x) { return df__op1(g, "Square", x); }
df_output df_exp(df_graph *g, df_output x) { return df__op1(g, "Exp", x); }
df_output df_log(df_graph *g, df_output x) { return df__op1(g, "Log", x); }
df_output df_tanh(df_graph *g, df_output x) { return df__op1(g, "Tanh", x); }
df_output df_sigmoid(df_graph *g, df_output x) { return df__op1(g, "Sigmoid", x); }
df_output df_relu(df_graph *g, df_output x) { return df__op1(g, "Relu", x); }
df_output df_less(df_graph *g, df_output a, df_output b) { return df__op2(g, "Less", a, b); }
df_output df_less_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "LessEqual", a, b); }
df_output df_greater(df_graph *g, df_output a, df_output b) { return df__op2(g, "Greater", a, b); }
df_output df_greater_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "GreaterEqual", a, b); }
df_output df_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "Equal", a, b); }
df_output df_not_equal(df_graph *g, df_output a, df_output b) { return df__op2(g, "NotEqual", a, b); }
df_output df_logical_and(df_graph *g, df_output a, df_output b) { return df__op2(g, "LogicalAnd", a, b); }
df_output df_logical_or(df_graph *g, df_output a, df_output b) { return df__op2(g, "LogicalOr", a, b); }
df_output df_logical_not(df_graph *g, df_output x) { return df__op1(g, "LogicalNot", x); }
df_output df_shape(df_graph *g, df_output x) { return df__op1(g, "Shape", x); }
df_output df_stop_gradient(df_graph *g, df_output x) { return df__op1(g, "StopGradient", x); }
df_output df_select(df_graph *g, df_output cond, df_output a, df_output b) {
    df_op_builder *bl = df_op_new(g, "SelectV2", NULL);
    df_op_add_input(bl, cond);
    df_op_add_input(bl, a);
    df_op_add_input(bl, b);
    return df__out(df_op_finish(bl), 0);
}
df_output df_cast(df_graph *g, df_output x, df_dtype to) {
    df_op_builder *b = df_op_new(g, "Cast", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "DstT", to);
    return df__out(df_op_finish(b), 0);
}
df_output df_matmul(df_graph *g, df_output a, df_output b, int transpose_a, int transpose_b) {
    df_op_builder *bl = df_op_new(g, "MatMul", NULL);
    df_op_add_input(bl, a);
    df_op_add_input(bl, b);
    df_op_set_attr_bool(bl, "transpose_a", transpose_a);
    df_op_set_attr_bool(bl, "transpose_b", transpose_b);
    return df__out(df_op_finish(bl), 0);
}
df_output df_reshape(df_graph *g, df_output x, int rank, const int64_t *dims) {
    if (g && !g->status.code && (rank < 0 || rank > DF_MAX_RANK || (rank > 0 && !dims))) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_reshape: bad rank %d or NULL dims", rank);
        return df__out(NULL, 0);
    }
    return df__op2(g, "Reshape", x, df__vector_i64(g, rank, dims));
}
df_output df_add_n(df_graph *g, const df_output *xs, int n) {
    df_op_builder *b = df_op_new(g, "AddN", NULL);
    df_op_add_input_list(b, xs, n);
    return df__out(df_op_finish(b), 0);
}
/* The axes tensor of a reduction: the given axes, or every axis (Range(0, Rank(x)) if unknown). */
static df_output df__axes(df_graph *g, df_output x, int n_axes, const int32_t *axes) {
    if (!g || g->status.code) return df__out(NULL, 0);
    if (n_axes < 0 || (n_axes > 0 && !axes)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "reduction: bad axes (n_axes %d)", n_axes);
        return df__out(NULL, 0);
    }
    if (n_axes > 0) return df__vector_i32(g, n_axes, axes);
    int rank = df__output_valid(x) ? x.node->out_shapes[x.index].rank : -1;
    if (rank >= 0) {
        int32_t all[DF_MAX_RANK];
        for (int i = 0; i < rank; i++) all[i] = i;
        return df__vector_i32(g, rank, all);
    }
    df_op_builder *b = df_op_new(g, "Range", NULL);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_op_add_input(b, df__op1(g, "Rank", x));
    df_op_add_input(b, df_scalar_i32(g, 1));
    return df__out(df_op_finish(b), 0);
}
static df_output df__reduce(df_graph *g, const char *op, df_output x, int n_axes, const int32_t *axes, int keep) {
    df_output ax = df__axes(g, x, n_axes, axes);
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, ax);
    df_op_set_attr_bool(b, "keep_dims", keep);
    return df__out(df_op_finish(b), 0);
}
df_output df_reduce_sum(df_graph *g, df_output x, int n_axes, const int32_t *axes, int keep_dims) {
    return df__reduce(g, "Sum", x, n_axes, axes, keep_dims);
}
df_output df_reduce_mean(df_graph *g, df_output x, int n_axes, const int32_t *axes, int keep_dims) {
    return df__reduce(g, "Mean", x, n_axes, axes, keep_dims);
}
df_output df_softmax(df_graph *g, df_output logits) { return df__op1(g, "Softmax", logits); }
df_output df_sparse_softmax_cross_entropy(df_graph *g, df_output logits, df_output labels) {
    df_op_builder *b = df_op_new(g, "SparseSoftmaxCrossEntropyWithLogits", NULL);
    df_op_add_input(b, logits);
    df_op_add_input(b, labels);
    df_output loss = df__out(df_op_finish(b), 0);
    int32_t axis0 = 0;
    return df_reduce_mean(g, loss, 1, &axis0, 0);
}
df_output df_variable(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "VariableV2", name);
    df_op_set_attr_type(b, "dtype", t);
    df_op_set_attr_shape(b, "shape", rank, dims);
    return df__out(df_op_finish(b), 0);
}
static df_node *df__assign_op(df_graph *g, const char *op, df_output var, df_output value) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, var);
    df_op_add_input(b, value);
    return df_op_finish(b);
}
df_node *df_assign(df_graph *g, df_output var, df_output value) { return df__assign_op(g, "Assign", var, value); }
df_node *df_assign_add(df_graph *g, df_output var, df_output value) { return df__assign_op(g, "AssignAdd", var, value); }
df_node *df_assign_sub(df_graph *g, df_output var, df_output value) { return df__assign_op(g, "AssignSub", var, value); }
df_node *df_no_op(df_graph *g, df_node *const *deps, int n) {
    if (g && !g->status.code && (n < 0 || (n > 0 && !deps))) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_no_op: bad dependency list (n=%d)", n);
        return NULL;
    }
    df_op_builder *b = df_op_new(g, "NoOp", NULL);
    for (int i = 0; b && i < n; i++) df_op_add_control_input(b, deps[i]);
    return df_op_finish(b);
}

/* ==========================================================================================
   21. WORKERS AND THE WIRE                                                             >>net
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
#define DF__NET 1
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#endif

#ifdef DF__NET
enum { DF__W_MAGIC = 0x31574644u, DF__W_VERSION = 1, DF__W_HEADER = 24, DF__W_TENSOR_FIXED = 32 };
enum { DF__W_HELLO = 1, DF__W_HELLO_OK, DF__W_PING, DF__W_PONG, DF__W_REGISTER, DF__W_REGISTERED, DF__W_ERROR,
       DF__W_CLOSE, DF__W_SHUTDOWN, DF__W_RUN_STEP, DF__W_STEP_DONE, DF__W_TENSOR, DF__W_ABORT, DF__W_HEARTBEAT, DF__W_TYPES };
static const char *const df__w_type_names[DF__W_TYPES] = {"?", "HELLO", "HELLO_OK", "PING", "PONG", "REGISTER", "REGISTERED",
                                                          "ERROR", "CLOSE", "SHUTDOWN", "RUN_STEP", "STEP_DONE", "TENSOR",
                                                          "ABORT", "HEARTBEAT"};

/* ---- payloads: a growing buffer to write, a bounded cursor to read ---- */
typedef struct df__wbuf { unsigned char *p; size_t n, cap; int oom; } df__wbuf;
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
static void df__wb_u32(df__wbuf *b, uint32_t v) { unsigned char *p = df__wb_room(b, 4); if (p) df__put32(p, v); }
static void df__wb_u64(df__wbuf *b, uint64_t v) { unsigned char *p = df__wb_room(b, 8); if (p) df__put64(p, v); }
static void df__wb_bytes(df__wbuf *b, const void *d, size_t n) {
    if (n > UINT32_MAX) { b->oom = 1; return; }
    df__wb_u32(b, (uint32_t)n);
    unsigned char *p = df__wb_room(b, n);
    if (p && n) memcpy(p, d, n);
}
static void df__wb_str(df__wbuf *b, const char *s) { df__wb_bytes(b, s ? s : "", s ? strlen(s) : 0); }

typedef struct df__wread { const unsigned char *p; size_t n; const char *bad; } df__wread;
static int df__wr_need(df__wread *r, size_t n, const char *what) {
    if (r->bad) return 0;
    if (r->n < n) { r->bad = what; return 0; }
    return 1;
}
static uint32_t df__wr_u32(df__wread *r, const char *what) {
    if (!df__wr_need(r, 4, what)) return 0;
    uint32_t v = df__get32(r->p); r->p += 4; r->n -= 4;
    return v;
}
static uint64_t df__wr_u64(df__wread *r, const char *what) {
    if (!df__wr_need(r, 8, what)) return 0;
    uint64_t v = df__get64(r->p); r->p += 8; r->n -= 8;
    return v;
}
/* bytes into the payload itself (not NUL-ended) */
static const unsigned char *df__wr_bytes(df__wread *r, size_t *len, const char *what) {
    uint32_t n = df__wr_u32(r, what);
    if (!df__wr_need(r, n, what)) { *len = 0; return NULL; }
    const unsigned char *p = r->p;
    r->p += n; r->n -= n; *len = n;
    return p;
}
/* a string copied out and NUL-ended (freed by the caller); NULL when malformed */
static char *df__wr_str(df__wread *r, size_t max, const char *what) {
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
static void df__wb_tensor(df__wbuf *b, const df_tensor *t) {
    df__wb_u32(b, (uint32_t)t->dtype);
    df__wb_u32(b, (uint32_t)t->rank);
    for (int d = 0; d < t->rank; d++) df__wb_u64(b, (uint64_t)t->dims[d]);
    df__wb_u64(b, t->nbytes);
    unsigned char *p = df__wb_room(b, t->nbytes);
    if (p && t->nbytes) memcpy(p, t->data, t->nbytes);
}
static df_tensor *df__wr_tensor(df__wread *r, const char *what) {
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

static void df__w_header(unsigned char *h, int type, uint64_t len) {
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
static int df__sock_read(int fd, void *buf, size_t n) {
    char *p = (char *)buf;
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r; n -= (size_t)r;
    }
    return 0;
}
static int df__sock_write(int fd, const void *buf, size_t n) {
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
static int df__w_send(int fd, int type, const df__wbuf *payload) {
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
static int df__w_recv_head(int fd, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn) {
    unsigned char h[DF__W_HEADER];
    *len = 0;
    ssize_t r;
    do r = recv(fd, h, 1, 0); while (r < 0 && errno == EINTR);
    if (r == 0) { *why = "closed"; return 0; }
    if (r < 0 || df__sock_read(fd, h + 1, sizeof h - 1)) { *why = "the connection broke inside a frame header"; return -1; }
    int type = df__w_check_header(h, max, len, why, buf, bn);
    return type ? type : -1;
}
static int df__w_recv_body(int fd, int type, unsigned char **data, uint64_t len, const char **why) {
    *data = NULL;
    if (len) {
        if (!(*data = (unsigned char *)DF_MALLOC((size_t)len))) { *why = "out of memory for a message"; return -1; }
        if (df__sock_read(fd, *data, (size_t)len)) { DF_FREE(*data); *data = NULL; *why = "the connection broke inside a message"; return -1; }
    }
    return type;
}
static int df__w_recv(int fd, uint64_t max, unsigned char **data, uint64_t *len, const char **why, char *buf, size_t bn) {
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
static int df__mpi_connect(const char *addr, char *err, size_t en);
#endif
/* A connection to addr within timeout_ms, or -1 (err says why). */
static int df__connect(const char *addr, int timeout_ms, char *err, size_t en) {
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
        r = poll(&p, 1, timeout_ms);
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

/* ---- the worker ----
   A worker holds a session of its own (its devices, its variables, shared by every master),
   the partitions masters registered, and the steps running now. A RUN_STEP runs the named
   partitions as one group on a thread of its own; a Send whose Recv lives in another worker
   goes to that worker as a TENSOR message (on a connection the sender opens), where it meets
   its Recv through the step's rendezvous, keyed as in one process (key, frame, iteration). A
   step ends with a STEP_DONE to the master; an ABORT from the master ends it early. */
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
typedef struct df__wpeer { int fd; pthread_mutex_t mu; char addr[64]; } df__wpeer;
typedef struct df__wpending {       /* a TENSOR whose step has not started here yet */
    uint64_t step, fid, iter;
    int32_t key;
    int dead;
    df_tensor *t;
    time_t when;
    struct df__wpending *next;
} df__wpending;
struct df__wconn;
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
    int listen_fd;
    int stopping;
    pthread_t accept_thread, beat_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_conns;                     /* connection threads alive, plus step threads */
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
typedef struct df__wconn { df_worker *w; int fd, slot, refs; char peer[64]; pthread_mutex_t wmu; } df__wconn;
/* An answer on c (its writers take turns); -1 when it cannot be sent (or b ran out of memory). */
static int df__w_answer(df__wconn *c, int type, const df__wbuf *b) {
    if (b && b->oom) return -1;
    pthread_mutex_lock(&c->wmu);
    int r = df__w_send(c->fd, type, b);
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
    close(c->fd);
    pthread_mutex_destroy(&c->wmu);
    DF_FREE(c);
}

/* "/job:worker/replica:0/task:N/device:CPU:i": N, or -1 */
static int df__task_of(const char *dev) {
    df__devspec ds;
    return dev && df__parse_device(dev, &ds) ? ds.task : -1;
}

/* REGISTER: GraphDef, device index, this worker's task, feed names, fetch names -> handle */
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
    if (!r->bad && r->n) r->bad = "REGISTER: bytes after the fetches";
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
        int t = df__task_of(df__attr_s(x, "recv_device"));
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
    for (uint32_t k = 0; k < n; k++) DF_FREE(names[k]);
    DF_FREE(names); DF_FREE(all);
    return st->code;
}

/* the peer connection to the worker at addr (opened on first use), locked; NULL with st set */
static df__wpeer *df__w_peer(df_worker *w, const char *addr, df_status *st) {
    pthread_mutex_lock(&w->mu);
    df__wpeer *p = NULL;
    for (int i = 0; i < w->n_peers && !p; i++) if (!strcmp(w->peers[i]->addr, addr)) p = w->peers[i];
    if (!p && w->n_peers < 4096 && df__grow(&w->peers, &w->cap_peers, w->n_peers + 1, sizeof(df__wpeer *)) &&
        (p = (df__wpeer *)DF_MALLOC(sizeof *p))) {
        p->fd = -1;
        snprintf(p->addr, sizeof p->addr, "%s", addr);
        pthread_mutex_init(&p->mu, NULL);
        w->peers[w->n_peers++] = p;
    }
    pthread_mutex_unlock(&w->mu);
    if (!p) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory (or too many peers) reaching %s", addr); return NULL; }
    pthread_mutex_lock(&p->mu);
    if (p->fd < 0) {
        char err[256];
        int fd = df__connect(addr, 1000, err, sizeof err);
        __atomic_store_n(&p->fd, fd, __ATOMIC_RELEASE);   /* (df__w_stop_locked reads it unlocked) */
        if (fd < 0) {
            pthread_mutex_unlock(&p->mu);
            df_status_set(st, DF_UNAVAILABLE, "Worker %s cannot be reached: %s", addr, err);
            return NULL;
        }
    }
    return p;
}
#endif /* DF__NET */

static int df__remote_send(df__pgroup *g, int32_t key, uint64_t fid, int64_t iter, df_tensor *v, int dead, df_status *st) {
#ifdef DF__NET
    df__wstep *ws = g->remote;
    int task = -1;
    for (int i = 0; i < ws->n_keys && task < 0; i++) if (ws->keys[i] == key) task = ws->tasks[i];
    if (task < 0) return 0;
    /* the frame header and the fixed fields in one buffer, the value's bytes from the tensor */
    int live = !dead && v;
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
    df__w_header(head, DF__W_TENSOR, fixed - DF__W_HEADER + (live ? v->nbytes : 0));
    if (task >= ws->n_cluster) { df_tensor_release(v); df_status_set(st, DF_INTERNAL, "No address for worker task %d", task); return 1; }
    df__wpeer *p = df__w_peer(ws->w, ws->cluster[task], st);
    if (p) {
        if (df__sock_write(p->fd, head, fixed) || (live && v->nbytes && df__sock_write(p->fd, v->data, v->nbytes))) {
            int e = errno;
            close(p->fd);
            __atomic_store_n(&p->fd, -1, __ATOMIC_RELEASE);
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
/* TENSOR: into its step's rendezvous (or kept until the step starts). Takes t. */
static void df__w_deliver(df__wstep *ws, int32_t key, uint64_t fid, uint64_t iter, int dead, df_tensor *t) {
    int at = -1;
    for (int i = 0; i < ws->n_rkeys && at < 0; i++) if (ws->rkeys[i] == key) at = i;
    if (at < 0 || (t && t->dtype != ws->rtypes[at])) {     /* a value no Recv of the step takes */
        df_status why;
        if (at < 0) df_status_set(&why, DF_INVALID_ARGUMENT, "A value came for transfer key %d, which no Recv of this step on this worker has", (int)key);
        else df_status_set(&why, DF_INVALID_ARGUMENT, "A %s value came for transfer key %d, whose Recv takes %s", df_dtype_name(t->dtype), (int)key,
                           df_dtype_name(ws->rtypes[at]));
        df_tensor_release(t);
        df__group_abort(&ws->g, &why);
        return;
    }
    df__wake wk;
    df_status st;
    if (df__rv_send(&ws->g.rv, key, fid, (int64_t)iter, t, dead, &wk, &st) != DF_OK || !wk.step) return;
    /* the Recv resumes on the pool, not on this socket's thread (which must go on reading) */
    df__wake *heap = (df__wake *)DF_MALLOC(sizeof *heap);
    df__task task;
    memset(&task, 0, sizeof task);
    task.step = wk.step;
    task.wake = heap;
    if (heap) *heap = wk;
    if (!heap || !wk.step->pool || !df__pool_push(wk.step->pool, &task)) { DF_FREE(heap); df__wake_dispatch(&wk); }
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
    ws->refs--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}
static void df__w_tensor_in(df_worker *w, uint64_t id, int32_t key, uint64_t fid, uint64_t iter, int dead, df_tensor *t) {
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
    if (!ws) { df_tensor_release(t); return; }
    df__w_deliver(ws, key, fid, iter, dead, t);
    df__w_step_drop(w, ws);
}
/* A TENSOR frame's payload read from the socket: the fixed fields, then the value's bytes
   straight into the tensor's own memory (no copy of a large value). 0, or -1 with *why. */
static int df__w_tensor_stream(df__wconn *c, uint64_t len, const char **why) {
    unsigned char fx[DF__W_TENSOR_FIXED + 16 + 8 * DF_MAX_RANK];
    if (len < DF__W_TENSOR_FIXED) { *why = "TENSOR: step"; return -1; }
    if (df__sock_read(c->fd, fx, DF__W_TENSOR_FIXED)) { *why = "the connection broke inside a message"; return -1; }
    uint64_t id = df__get64(fx), fid = df__get64(fx + 12), iter = df__get64(fx + 20);
    int32_t key = (int32_t)df__get32(fx + 8);
    uint32_t dead = df__get32(fx + 28);
    uint64_t left = len - DF__W_TENSOR_FIXED;
    df_tensor *t = NULL;
    if (dead) { if (left) { *why = "TENSOR: bytes after a dead value"; return -1; } }
    else {
        if (left < 8 || df__sock_read(c->fd, fx, 8)) { *why = "TENSOR: value"; return -1; }
        uint32_t dt = df__get32(fx), rank = df__get32(fx + 4);
        left -= 8;
        if (rank > DF_MAX_RANK || left < 8ull * rank + 8 || df__sock_read(c->fd, fx + 8, 8ull * rank + 8)) { *why = "TENSOR: value"; return -1; }
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
            if (df__sock_read(c->fd, buf + 8 + 8 * rank + 8, (size_t)nbytes)) { DF_FREE(buf); *why = "the connection broke inside a message"; return -1; }
            df__wread r = {buf, (size_t)(16 + 8 * rank + nbytes), NULL};
            t = df__wr_tensor(&r, "TENSOR: value");
            DF_FREE(buf);
            if (!t) { *why = r.bad; return -1; }
        } else {
            int64_t n;
            size_t bytes;
            if (dt > 1000 || df__shape_check((df_dtype)dt, (int)rank, dims, &n, &bytes, 0, &st) != DF_OK || bytes != nbytes) { *why = "TENSOR: value"; return -1; }
            if (!(t = df__tensor_alloc(NULL, (df_dtype)dt, (int)rank, dims, &st))) { *why = "out of memory for a tensor"; return -1; }
            if (bytes && df__sock_read(c->fd, t->data, bytes)) { df_tensor_release(t); *why = "the connection broke inside a message"; return -1; }
        }
    }
    df__w_tensor_in(c->w, id, key, fid, iter, (int)dead, t);
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
    DF_FREE(run);
}
static void *df__w_step_main(void *arg) {
    df__wrun *run = (df__wrun *)arg;
    df__wstep *ws = &run->ws;
    df_worker *w = ws->w;
    df_status st;
    df_status_clear(&st);
    df__group_execute(&ws->g, &st);
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
    if (b.oom) {                                 /* (the answer itself does not fit) */
        DF_FREE(b.p);
        memset(&b, 0, sizeof b);
        df__wb_u64(&b, ws->id); df__wb_u32(&b, DF_RESOURCE_EXHAUSTED); df__wb_str(&b, "Out of memory sending a step's results"); df__wb_u32(&b, 0);
    }
    if (df__w_answer(run->c, DF__W_STEP_DONE, &b)) shutdown(run->c->fd, SHUT_RDWR);
    DF_FREE(b.p);
    df__wconn *c = run->c;
    df__wrun_free(run);
    df__w_conn_release(c);
    pthread_mutex_lock(&w->mu);
    w->n_conns--;                                /* (step threads count as connections for stop) */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
static int df__w_run_step(df__wconn *c, df__wread *r, const char **why) {
    df_worker *w = c->w;
    uint64_t id = df__wr_u64(r, "RUN_STEP: step"), inc = df__wr_u64(r, "RUN_STEP: incarnation");
    (void)df__wr_u32(r, "RUN_STEP: task");
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
        if (rg) rg->refs++;                     /* (held until the step ends: df__wrun_free) */
        pthread_mutex_unlock(&w->mu);
        for (uint32_t q = 0; rg && q < p; q++) if (run->regs[q] == rg && !err) { err = DF_INVALID_ARGUMENT; snprintf(errmsg, sizeof errmsg, "Partition handle %u is listed twice", h); }
        if (!rg && !err) { err = DF_FAILED_PRECONDITION; snprintf(errmsg, sizeof errmsg, "Partition handle %u is not registered on this worker (restarted?)", h); }
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
    }
    if (ok) {
        memset(run->fetches, 0, ((size_t)run->n_fetch + 1) * sizeof(df_tensor *));
        memset(ws->g.steps, 0, ((size_t)np + 1) * sizeof(df__step));
        ws->g.n_steps = (int)np;
        int fo = 0, nk = 0, nr = 0;
        for (uint32_t p = 0; p < np; p++) {
            const df__wreg *rg = run->regs[p];
            df__step *step = &ws->g.steps[p];
            step->x = rg->x; step->session = w->sess; step->device = rg->dev;
            step->feeds = run->feeds + feed_at[p]; step->fetches = run->fetches + fo;
            step->group = &ws->g; step->home = &ws->g.steps[0]; step->ipool = w->sess->ipool;
            step->pool = w->sess->pool; step->threaded = w->sess->pool != NULL; step->shared = step->threaded;
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
    w->n_conns++;
    pthread_mutex_unlock(&w->mu);
    for (df__wpending *o = mine, *next; o; o = next) {   /* values that came first */
        next = o->next;
        df__w_deliver(ws, o->key, o->fid, o->iter, o->dead, o->t);
        DF_FREE(o);
    }
    df__w_step_drop(w, ws);
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
    df_status_set(&why, code ? (df_code)code : DF_ABORTED, "%s", msg ? msg : "aborted by the master");
    DF_FREE(msg);
    df__wstep *ws = df__w_step_hold(w, id, NULL);
    if (!ws) return;
    df__group_abort(&ws->g, &why);
    df__w_step_drop(w, ws);
}

/* Handles one message; returns 0 to go on, 1 to close (why: the reason), 2 to stop the worker. */
static int df__w_handle(df__wconn *c, int type, const unsigned char *data, uint64_t len, const char **why) {
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
        for (int i = 0; i < nd; i++) {
            char name[96];
            snprintf(name, sizeof name, "/job:worker/replica:0/task:%d/device:CPU:%d", w->opts.task, i);
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
    case DF__W_RUN_STEP: ret = df__w_run_step(c, &r, why); if (!ret) r.n = 0; break;
    case DF__W_TENSOR: r.bad = "TENSOR: read as a stream"; break;   /* (df__w_conn_main streams TENSORs) */
    case DF__W_ABORT: df__w_abort(w, &r); break;
    case DF__W_HEARTBEAT: r.n = 0; break;
    case DF__W_CLOSE: *why = "closed by the peer"; ret = 1; break;
    case DF__W_SHUTDOWN: *why = "shut down by the peer"; ret = 2; break;
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
    for (int i = 0; i < w->cap_conns; i++) if (w->conn_fds[i] >= 0) shutdown(w->conn_fds[i], SHUT_RDWR);
    for (int i = 0; i < w->n_peers; i++) {       /* (a send blocked on a peer ends too) */
        int fd = __atomic_load_n(&w->peers[i]->fd, __ATOMIC_ACQUIRE);
        if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    pthread_cond_broadcast(&w->cv);
}
static void *df__w_conn_main(void *arg) {
    df__wconn *c = (df__wconn *)arg;
    df_worker *w = c->w;
    uint64_t max = w->opts.max_message_bytes ? w->opts.max_message_bytes : ((uint64_t)1 << 30);
    for (;;) {
        unsigned char *data = NULL;
        uint64_t len = 0;
        const char *why = NULL;
        char buf[160];
        int type = df__w_recv_head(c->fd, max, &len, &why, buf, sizeof buf);
        if (type == DF__W_TENSOR) {               /* its value straight into a tensor */
            if (df__w_tensor_stream(c, len, &why) == 0) continue;
            if (!__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) df__w_log(w, "closing the connection from %s: malformed TENSOR message: %s", c->peer, why);
            break;
        }
        if (type > 0) type = df__w_recv_body(c->fd, type, &data, len, &why);
        if (type <= 0) {
            if (type < 0 && !__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) df__w_log(w, "closing the connection from %s: %s", c->peer, why);
            DF_FREE(data);
            break;
        }
        int r = df__w_handle(c, type, data, len, &why);
        DF_FREE(data);
        if (r == 1) {
            if (strcmp(why, "closed by the peer")) df__w_log(w, "closing the connection from %s: malformed %s message: %s", c->peer, df__w_type_names[type], why);
            break;
        }
        if (r == 2) {
            df__w_log(w, "shutting down at the request of %s", c->peer);
            pthread_mutex_lock(&w->mu);
            df__w_stop_locked(w);
            pthread_mutex_unlock(&w->mu);
            break;
        }
    }
    /* the master is gone: the steps it started end (they hold c until then) */
    df_status gone;
    df_status_set(&gone, DF_ABORTED, "The master's connection (%s) closed during the step", c->peer);
    for (df__wstep *ws; (ws = df__w_step_hold(w, 0, c));) {
        df__group_abort(&ws->g, &gone);
        df__w_step_drop(w, ws);
    }
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->n_regs; i++)          /* its registrations go (once no step runs them) */
        if (w->regs[i] && w->regs[i]->owner == c) {
            if (--w->regs[i]->refs == 0) df__wreg_free(w->regs[i]);
            w->regs[i] = NULL;
        }
    w->conn_fds[c->slot] = -1;
    shutdown(c->fd, SHUT_RDWR);
    w->n_conns--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    df__w_conn_release(c);
    return NULL;
}
/* Every 250 ms, a HEARTBEAT to the master of each running step: a step may take long, and
   the master tells a slow step from a stopped worker by them. */
static void *df__w_beat_main(void *arg) {
    df_worker *w = (df_worker *)arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
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
            unsigned char f[DF__W_HEADER + 8];
            df__w_header(f, DF__W_HEARTBEAT, 8);
            df__put64(f + DF__W_HEADER, ids[i]);
            pthread_mutex_lock(&to[i]->wmu);
            if (df__sock_write(to[i]->fd, f, sizeof f)) shutdown(to[i]->fd, SHUT_RDWR);
            pthread_mutex_unlock(&to[i]->wmu);
            df__w_conn_release(to[i]);
        }
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
static void *df__w_accept_main(void *arg) {
    df_worker *w = (df_worker *)arg;
    for (;;) {
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        int fd = accept(w->listen_fd, (struct sockaddr *)&a, &al);
        if (__atomic_load_n(&w->stopping, __ATOMIC_ACQUIRE)) { if (fd >= 0) close(fd); break; }
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) { struct timespec ts = {0, 50000000}; nanosleep(&ts, NULL); continue; }
            df__w_log(w, "accept failed: %s; the worker stops", strerror(errno));
            break;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct timeval tv = {10, 0};             /* a peer that stops reading fails our writes */
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        df__wconn *c = (df__wconn *)DF_MALLOC(sizeof *c);
        pthread_mutex_lock(&w->mu);
        if (w->stopping) { pthread_mutex_unlock(&w->mu); close(fd); DF_FREE(c); break; }
        int slot = -1;
        for (int i = 0; i < w->cap_conns && slot < 0; i++) if (w->conn_fds[i] < 0) slot = i;
        if (slot < 0 && c) {
            int old = w->cap_conns;
            if (df__grow(&w->conn_fds, &w->cap_conns, old + 1, sizeof(int))) {
                for (int i = old; i < w->cap_conns; i++) w->conn_fds[i] = -1;
                slot = old;
            }
        }
        pthread_t t;
        int started = 0;
        if (c && slot >= 0) {
            c->w = w; c->fd = fd; c->slot = slot; c->refs = 1;
            pthread_mutex_init(&c->wmu, NULL);
            char ip[INET_ADDRSTRLEN] = "?";
            inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
            snprintf(c->peer, sizeof c->peer, "%s:%d", ip, (int)ntohs(a.sin_port));
            w->conn_fds[slot] = fd;
            w->n_conns++;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            started = pthread_create(&t, &at, df__w_conn_main, c) == 0;
            pthread_attr_destroy(&at);
            if (!started) { w->conn_fds[slot] = -1; w->n_conns--; pthread_mutex_destroy(&c->wmu); }
        }
        pthread_mutex_unlock(&w->mu);
        if (!started) { df__w_log(w, "cannot serve a new connection (out of memory or threads)"); close(fd); DF_FREE(c); }
        (void)t;
    }
    return NULL;
}
#endif /* DF__NET */

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
    df_worker *w = (df_worker *)DF_MALLOC(sizeof *w);
    if (!w) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    memset(w, 0, sizeof *w);
    w->opts = o;
    w->listen_fd = -1;
    {   /* a fresh incarnation per worker: time, process and address mixed */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t h = df__hash_mix((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, (uint64_t)getpid());
        w->incarnation = df__hash_mix(h, (uint64_t)(uintptr_t)w) | 1;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)o.port);
    const char *host = o.host ? o.host : "127.0.0.1";
    if (!strcmp(host, "localhost")) host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) { df_status_set(st, DF_INVALID_ARGUMENT, "df_worker_start: '%s' is not an IPv4 address", host); DF_FREE(w); return NULL; }
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64)) {
        df_status_set(st, errno == EADDRINUSE ? DF_ALREADY_EXISTS : errno == EACCES ? DF_PERMISSION_DENIED : DF_UNAVAILABLE,
                      "df_worker_start: cannot listen on %s:%d: %s", host, o.port, strerror(errno));
        if (fd >= 0) close(fd);
        DF_FREE(w);
        return NULL;
    }
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    w->port = ntohs(a.sin_port);
    w->listen_fd = fd;
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.num_cpu_devices = o.num_cpu_devices > 0 ? o.num_cpu_devices : 1;
    so.inter_op_threads = DF__MAX(2, df__num_cores());   /* (a step waits for other workers on its pool) */
    if (!(w->empty = df_graph_new()) || !(w->sess = df_session_new(w->empty, &so, st))) {
        if (!st->code) df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
        df_graph_free(w->empty);
        close(fd);
        DF_FREE(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->beat_thread, NULL, df__w_beat_main, w) != 0) {
        close(fd);
        pthread_mutex_destroy(&w->mu); pthread_cond_destroy(&w->cv);
        df_session_free(w->sess); df_graph_free(w->empty);
        DF_FREE(w);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "df_worker_start: cannot start a thread");
        return NULL;
    }
    if (pthread_create(&w->accept_thread, NULL, df__w_accept_main, w) != 0) {
        pthread_mutex_lock(&w->mu);
        __atomic_store_n(&w->stopping, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->beat_thread, NULL);
        close(fd);
        pthread_mutex_destroy(&w->mu); pthread_cond_destroy(&w->cv);
        df_session_free(w->sess); df_graph_free(w->empty);
        DF_FREE(w);
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
    while (!w->stopping) pthread_cond_wait(&w->cv, &w->mu);
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
    while (w->n_conns > 0) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->accept_thread, NULL);
    pthread_join(w->beat_thread, NULL);
    close(w->listen_fd);
    for (int i = 0; i < w->n_regs; i++) if (w->regs[i] && --w->regs[i]->refs == 0) df__wreg_free(w->regs[i]);
    for (int i = 0; i < w->n_peers; i++) { if (w->peers[i]->fd >= 0) close(w->peers[i]->fd); pthread_mutex_destroy(&w->peers[i]->mu); DF_FREE(w->peers[i]); }
    df__w_pending_purge(w, 1);
    DF_FREE(w->regs); DF_FREE(w->conn_fds); DF_FREE(w->peers);
    df_session_free(w->sess);
    df_graph_free(w->empty);
    pthread_mutex_destroy(&w->mu); pthread_cond_destroy(&w->cv);
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
    int fd = df__connect(address, timeout_ms > 0 ? timeout_ms : 5000, err, sizeof err);
    if (fd < 0) return df_status_set(st, DF_UNAVAILABLE, "%s", err);
    struct timeval tv = {(timeout_ms > 0 ? timeout_ms : 5000) / 1000, ((timeout_ms > 0 ? timeout_ms : 5000) % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u32(&b, DF__W_VERSION);
    unsigned char *data = NULL;
    uint64_t len = 0;
    const char *why = NULL;
    char buf[160];
    int type = b.oom || df__w_send(fd, DF__W_HELLO, &b) ? -1 : df__w_recv(fd, (uint64_t)1 << 20, &data, &len, &why, buf, sizeof buf);
    DF_FREE(b.p);
    if (type != DF__W_HELLO_OK) {
        DF_FREE(data);
        close(fd);
        return df_status_set(st, DF_UNAVAILABLE, "Worker %s did not answer HELLO: %s", address, type < 0 ? why : type == 0 ? "it closed the connection" : "a wrong answer");
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
    df__w_send(fd, DF__W_CLOSE, NULL);
    close(fd);
    if (r.bad) return df_status_set(st, DF_DATA_LOSS, "Worker %s sent a malformed HELLO answer (%s)", address, r.bad);
    return DF_OK;
#endif
}

/* ---- a session with workers (df_session_options.target) ----
   The session's devices are the workers' (/job:worker/replica:0/task:N/device:CPU:i, task N
   the N-th address of the target). Every plan is partitioned by device, so by worker too, and
   each partition is registered with its worker (its GraphDef, its device, the names of its
   feeds and fetches). A run sends each worker a RUN_STEP with its partitions' feeds and waits
   for every STEP_DONE. The first failure (an error, a connection that closes, a worker silent
   longer than worker_timeout_ms) is sent to the other workers as an ABORT and ends the run;
   a worker that does not answer the ABORT within a second is given up. One run at a time per
   session: the connections carry one step each. */
struct df__cluster {
    int n;
    char (*addr)[64];
    int *fd;                         /* -1 once broken: runs then fail with DF_UNAVAILABLE */
    uint64_t *incarnation;
#ifdef DF__NET
    pthread_mutex_t mu;
#endif
    uint64_t next_step, salt;
    int timeout_ms;
};

static void df__cluster_close(struct df__cluster *c) {
    if (!c) return;
#ifdef DF__NET
    for (int t = 0; t < c->n; t++)
        if (c->fd[t] >= 0) { df__w_send(c->fd[t], DF__W_CLOSE, NULL); close(c->fd[t]); }
    pthread_mutex_destroy(&c->mu);
#endif
    DF_FREE(c->addr); DF_FREE(c->fd); DF_FREE(c->incarnation);
    DF_FREE(c);
}

#ifdef DF__NET
/* One answer on fd within timeout_ms: its type and payload (or -1 with st set). */
static int df__cluster_await(int fd, int timeout_ms, unsigned char **data, uint64_t *len, const char *who, df_status *st) {
    struct pollfd p = {fd, POLLIN, 0};
    int r;
    do r = poll(&p, 1, timeout_ms); while (r < 0 && errno == EINTR);
    if (r == 0) { df_status_set(st, DF_UNAVAILABLE, "%s did not answer within %d ms", who, timeout_ms); return -1; }
    const char *why = NULL;
    char buf[160];
    int type = df__w_recv(fd, (uint64_t)1 << 40, data, len, &why, buf, sizeof buf);
    if (type <= 0) { df_status_set(st, DF_UNAVAILABLE, "%s closed the connection (%s)", who, type == 0 ? "it may have died" : why); return -1; }
    return type;
}
#endif

static df_code df__cluster_open(struct df_session *s, df_status *st) {
#ifndef DF__NET
    (void)s;
    return df_status_set(st, DF_UNIMPLEMENTED, "Sessions with workers need POSIX sockets and threads: build dataflow.c on its own without DF_NO_THREADS");
#else
    const char *target = s->opts.target;
    struct df__cluster *c = (struct df__cluster *)DF_MALLOC(sizeof *c);
    if (!c) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    s->cluster = c;
    c->timeout_ms = s->opts.worker_timeout_ms > 0 ? s->opts.worker_timeout_ms : 2000;
    c->salt = s->seed_salt << 20;
    int n = 1;
    for (const char *p = target; *p; p++) n += *p == ',';
    if (n > 1024) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: %d workers in the target, at most 1024", n);
    c->addr = (char (*)[64])DF_MALLOC((size_t)n * 64);
    c->fd = (int *)DF_MALLOC((size_t)n * sizeof(int));
    c->incarnation = (uint64_t *)DF_MALLOC((size_t)n * sizeof(uint64_t));
    if (!c->addr || !c->fd || !c->incarnation) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
    for (int t = 0; t < n; t++) c->fd[t] = -1;
    c->n = n;
    const char *p = target;
    for (int t = 0; t < n; t++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (!len || len >= 64) return df_status_set(st, DF_INVALID_ARGUMENT, "df_session_new: target address %d of '%s' is empty or too long", t, target);
        memcpy(c->addr[t], p, len);
        c->addr[t][len] = '\0';
        p = e ? e + 1 : p + len;
    }
    int total = 0;
    for (int t = 0; t < n; t++) {              /* connect, HELLO: incarnation and devices */
        char err[256], who[96];
        snprintf(who, sizeof who, "Worker task %d (%s)", t, c->addr[t]);
        if ((c->fd[t] = df__connect(c->addr[t], c->timeout_ms, err, sizeof err)) < 0)
            return df_status_set(st, DF_UNAVAILABLE, "df_session_new: worker task %d: %s", t, err);
        /* a frame that stops halfway fails its read instead of blocking the master */
        int rcv_ms = c->timeout_ms > 1000 ? c->timeout_ms : 1000;
        struct timeval tv = {rcv_ms / 1000, (rcv_ms % 1000) * 1000};
        setsockopt(c->fd[t], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        df__wbuf b = {NULL, 0, 0, 0};
        df__wb_u32(&b, DF__W_VERSION);
        int sent = !b.oom && !df__w_send(c->fd[t], DF__W_HELLO, &b);
        DF_FREE(b.p);
        unsigned char *data = NULL;
        uint64_t len = 0;
        int type = sent ? df__cluster_await(c->fd[t], c->timeout_ms, &data, &len, who, st) : -1;
        if (type != DF__W_HELLO_OK) {
            DF_FREE(data);
            if (!st->code) df_status_set(st, DF_UNAVAILABLE, "%s did not answer HELLO", who);
            return st->code;
        }
        df__wread r = {data, (size_t)len, NULL};
        c->incarnation[t] = df__wr_u64(&r, "incarnation");
        (void)df__wr_u32(&r, "task");
        uint32_t nd = df__wr_u32(&r, "devices");
        DF_FREE(data);
        if (r.bad || nd == 0 || nd > 64) return df_status_set(st, DF_DATA_LOSS, "%s sent a malformed HELLO answer", who);
        df__device **dv = (df__device **)DF_REALLOC(s->devices, (size_t)(total + (int)nd) * sizeof(df__device *));
        if (!dv) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory");
        s->devices = dv;
        for (uint32_t i = 0; i < nd; i++) {
            df__device *d = df__device_new_cpu((int)i, 1, st);   /* (never allocates: a name for the placer) */
            if (!d) return st->code;
            snprintf(d->name, sizeof d->name, "/job:worker/replica:0/task:%d/device:CPU:%u", t, i);
            s->devices[total++] = d;
            s->n_devices = total;
        }
    }
    return DF_OK;
#endif
}

static df_code df__cluster_register(struct df_session *s, df__plan *plan, df_status *st) {
#ifndef DF__NET
    (void)s; (void)plan;
    return df_status_set(st, DF_UNIMPLEMENTED, "Sessions with workers need POSIX sockets");
#else
    struct df__cluster *c = s->cluster;
    pthread_mutex_lock(&c->mu);
    for (int p = 0; p < plan->n_parts && !st->code; p++) {
        df__part *pt = &plan->parts[p];
        int t = df__task_of(pt->dev->name);
        char who[96];
        snprintf(who, sizeof who, "Worker task %d (%s)", t, t >= 0 && t < c->n ? c->addr[t] : "?");
        if (t < 0 || t >= c->n) { df_status_set(st, DF_INTERNAL, "Partition %d is on %s, not on a worker", p, pt->dev->name); break; }
        if (c->fd[t] < 0) { df_status_set(st, DF_UNAVAILABLE, "%s: its connection broke earlier; make a new session", who); break; }
        pt->task = t;
        void *gd = NULL;
        size_t gl = 0;
        if (df_graph_export_graphdef(pt->g, &gd, &gl) != DF_OK) { df_status_set(st, DF_INTERNAL, "Partition %d does not export as a GraphDef", p); break; }
        df__wbuf b = {NULL, 0, 0, 0};
        df__wb_bytes(&b, gd, gl);
        free(gd);
        df__wb_u32(&b, (uint32_t)pt->dev->index);
        df__wb_u32(&b, (uint32_t)t);
        df__wb_u32(&b, (uint32_t)pt->n_feeds);
        for (int k = 0; k < pt->n_feeds; k++) df__wb_str(&b, pt->io_names[k]);
        df__wb_u32(&b, (uint32_t)pt->n_fetches);
        for (int k = 0; k < pt->n_fetches; k++) df__wb_str(&b, pt->io_names[pt->n_feeds + k]);
        int sent = !b.oom && !df__w_send(c->fd[t], DF__W_REGISTER, &b);
        DF_FREE(b.p);
        unsigned char *data = NULL;
        uint64_t len = 0;
        int type = sent ? df__cluster_await(c->fd[t], 60000, &data, &len, who, st) : -1;
        df__wread r = {data, (size_t)len, NULL};
        if (type == DF__W_REGISTERED) pt->handle = (int)df__wr_u32(&r, "handle");
        else if (type == DF__W_ERROR) {
            uint32_t code = df__wr_u32(&r, "code");
            char *msg = df__wr_str(&r, 4000, "message");
            df_status_set(st, code ? (df_code)code : DF_INTERNAL, "%s cannot take partition %d: %s", who, p, msg ? msg : "?");
            DF_FREE(msg);
        } else if (!st->code) df_status_set(st, DF_UNAVAILABLE, "%s answered REGISTER with %s", who, type > 0 ? df__w_type_names[type] : "nothing");
        if (type < 0 || (type != DF__W_REGISTERED && type != DF__W_ERROR)) { close(c->fd[t]); c->fd[t] = -1; }
        DF_FREE(data);
    }
    plan->registered = !st->code;
    pthread_mutex_unlock(&c->mu);
    return st->code;
#endif
}

#ifdef DF__NET
static void df__cluster_abort(struct df__cluster *c, uint64_t id, const unsigned char *pending, const df_status *why) {
    df__wbuf b = {NULL, 0, 0, 0};
    df__wb_u64(&b, id);
    df__wb_u32(&b, (uint32_t)why->code);
    df__wb_str(&b, why->message);
    for (int t = 0; !b.oom && t < c->n; t++)
        if (pending[t] && c->fd[t] >= 0) df__w_send(c->fd[t], DF__W_ABORT, &b);
    DF_FREE(b.p);
}
static double df__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
#endif

static df_code df__cluster_run(struct df_session *s, df__plan *plan, df_tensor *const *feed_values, df_tensor **fetch_values,
                               int n_fetches, df_status *st) {
#ifndef DF__NET
    (void)s; (void)plan; (void)feed_values; (void)fetch_values; (void)n_fetches;
    return df_status_set(st, DF_UNIMPLEMENTED, "Sessions with workers need POSIX sockets");
#else
    struct df__cluster *c = s->cluster;
    if (!plan->registered) return df_status_set(st, DF_FAILED_PRECONDITION, "The run's partitions are not registered with the workers");
    pthread_mutex_lock(&c->mu);
    uint64_t id = c->salt + ++c->next_step;
    int n = c->n;
    unsigned char *pending = (unsigned char *)DF_MALLOC((size_t)n + 1);
    double *seen = (double *)DF_MALLOC(((size_t)n + 1) * sizeof(double));
    if (!pending || !seen) { pthread_mutex_unlock(&c->mu); DF_FREE(pending); DF_FREE(seen); return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); }
    memset(pending, 0, (size_t)n + 1);
    df_status first;
    df_status_clear(&first);
    /* RUN_STEP to every worker with partitions */
    for (int t = 0; t < n && !first.code; t++) {
        int np = 0;
        for (int p = 0; p < plan->n_parts; p++) np += plan->parts[p].task == t;
        if (!np) continue;
        if (c->fd[t] < 0) { df_status_set(&first, DF_UNAVAILABLE, "Worker task %d (%s): its connection broke earlier; make a new session", t, c->addr[t]); break; }
        df__wbuf b = {NULL, 0, 0, 0};
        df__wb_u64(&b, id);
        df__wb_u64(&b, c->incarnation[t]);
        df__wb_u32(&b, (uint32_t)t);
        df__wb_u32(&b, (uint32_t)n);
        for (int k = 0; k < n; k++) df__wb_str(&b, c->addr[k]);
        df__wb_u32(&b, (uint32_t)np);
        for (int p = 0; p < plan->n_parts; p++) {
            const df__part *pt = &plan->parts[p];
            if (pt->task != t) continue;
            df__wb_u32(&b, (uint32_t)pt->handle);
            df__wb_u32(&b, (uint32_t)pt->n_feeds);
            for (int k = 0; k < pt->n_feeds; k++) df__wb_tensor(&b, feed_values[pt->feed_map[k]]);
        }
        if (b.oom) df_status_set(&first, DF_RESOURCE_EXHAUSTED, "Out of memory sending the feeds");
        else if (df__w_send(c->fd[t], DF__W_RUN_STEP, &b)) {
            df_status_set(&first, DF_UNAVAILABLE, "Worker task %d (%s) cannot be reached: %s", t, c->addr[t], strerror(errno));
            close(c->fd[t]); c->fd[t] = -1;
        } else { pending[t] = 1; seen[t] = df__now_ms(); }
        DF_FREE(b.p);
    }
    if (first.code) df__cluster_abort(c, id, pending, &first);
    /* the answers: fetches by partition, in plan order per worker */
    double aborted_at = first.code ? df__now_ms() : 0;
    struct pollfd *pf = (struct pollfd *)DF_MALLOC(((size_t)n + 1) * sizeof(struct pollfd));
    int *pt_of = (int *)DF_MALLOC(((size_t)n + 1) * sizeof(int));
    if (!pf || !pt_of) {                         /* (no way to wait: the workers are told to stop) */
        if (!first.code) { df_status_set(&first, DF_RESOURCE_EXHAUSTED, "Out of memory waiting for the workers"); df__cluster_abort(c, id, pending, &first); }
        for (int t = 0; t < n; t++) if (pending[t] && c->fd[t] >= 0) { close(c->fd[t]); c->fd[t] = -1; pending[t] = 0; }
    }
    for (;;) {
        int np = 0;
        for (int t = 0; pf && pt_of && t < n; t++) if (pending[t]) { pf[np].fd = c->fd[t]; pf[np].events = POLLIN; pf[np].revents = 0; pt_of[np++] = t; }
        if (!np) break;
        int r = poll(pf, (nfds_t)np, 50);
        double now = df__now_ms();
        for (int k = 0; r > 0 && k < np; k++) {
            if (!pf[k].revents) continue;
            int t = pt_of[k];
            char who[96];
            snprintf(who, sizeof who, "Worker task %d (%s)", t, c->addr[t]);
            unsigned char *data = NULL;
            uint64_t len = 0;
            const char *why = NULL;
            char buf[160];
            int type = df__w_recv(c->fd[t], (uint64_t)1 << 40, &data, &len, &why, buf, sizeof buf);
            seen[t] = now;
            df_status fail;
            df_status_clear(&fail);
            if (type <= 0) {
                df_status_set(&fail, DF_UNAVAILABLE, "%s closed its connection during the step (%s)", who, type == 0 ? "it may have died" : why);
                close(c->fd[t]); c->fd[t] = -1; pending[t] = 0;
            } else if (type == DF__W_STEP_DONE) {
                df__wread rd = {data, (size_t)len, NULL};
                uint64_t sid = df__wr_u64(&rd, "step");
                uint32_t code = df__wr_u32(&rd, "code");
                char *msg = df__wr_str(&rd, 4000, "message");
                uint32_t nf = df__wr_u32(&rd, "fetches");
                if (sid == id) {
                    pending[t] = 0;
                    if (code) df_status_set(&fail, (df_code)code, "%s", msg ? msg : "?");
                    int want = 0;
                    for (int p = 0; p < plan->n_parts; p++) if (plan->parts[p].task == t) want += plan->parts[p].n_fetches;
                    if (!code && !rd.bad && nf != (uint32_t)want) df_status_set(&fail, DF_INTERNAL, "%s sent %u fetches, %d expected", who, nf, want);
                    for (int p = 0; !fail.code && !rd.bad && p < plan->n_parts; p++) {
                        const df__part *pt = &plan->parts[p];
                        if (pt->task != t) continue;
                        for (int q = 0; q < pt->n_fetches && !rd.bad; q++) {
                            df_tensor *v = df__wr_u32(&rd, "fetch") ? df__wr_tensor(&rd, "fetch") : NULL;
                            int to = pt->fetch_map[q];
                            if (v && to < n_fetches && !fetch_values[to]) fetch_values[to] = v;
                            else df_tensor_release(v);
                        }
                    }
                    if (rd.bad && !fail.code) df_status_set(&fail, DF_DATA_LOSS, "%s sent a malformed STEP_DONE (%s)", who, rd.bad);
                }
                DF_FREE(msg);
            } else if (type != DF__W_HEARTBEAT && type != DF__W_ERROR) {
                df_status_set(&fail, DF_INTERNAL, "%s sent %s during a step", who, df__w_type_names[type]);
            } else if (type == DF__W_ERROR) {
                df__wread rd = {data, (size_t)len, NULL};
                uint32_t code = df__wr_u32(&rd, "code");
                char *msg = df__wr_str(&rd, 4000, "message");
                df_status_set(&fail, code ? (df_code)code : DF_INTERNAL, "%s: %s", who, msg ? msg : "?");
                DF_FREE(msg);
                pending[t] = 0;
            }
            DF_FREE(data);
            if (fail.code && !first.code) { first = fail; aborted_at = now; df__cluster_abort(c, id, pending, &first); }
        }
        for (int t = 0; t < n; t++) {              /* silence: a stopped or hung worker */
            if (!pending[t]) continue;
            double limit = first.code ? 1000.0 : (double)c->timeout_ms;
            double since = first.code ? now - aborted_at : now - seen[t];   /* (after an ABORT, heartbeats do not count) */
            if (since <= limit) continue;
            df_status fail;
            df_status_set(&fail, DF_UNAVAILABLE, "Worker task %d (%s) was silent for %.0f ms during the step (stopped, hung or unreachable)", t, c->addr[t], since);
            close(c->fd[t]); c->fd[t] = -1; pending[t] = 0;
            if (!first.code) { first = fail; aborted_at = now; df__cluster_abort(c, id, pending, &first); }
        }
    }
    DF_FREE(pf); DF_FREE(pt_of); DF_FREE(pending); DF_FREE(seen);
    pthread_mutex_unlock(&c->mu);
    if (first.code) {
        *st = first;
        for (int i = 0; i < n_fetches; i++) { df_tensor_release(fetch_values[i]); fetch_values[i] = NULL; }
    }
    return st->code;
#endif
}

/* ---- MPI (-DDATAFLOW_MPI, linked with MPI) ----
   `mpirun -np N app`: rank 0 is the master, ranks 1..N-1 serve as workers (task rank-1). The
   workers' addresses are "mpi:R". A connection to one is a local socket pair whose bytes a
   bridge carries as MPI messages: a pump thread reads every local end and sends what it reads
   to the peer rank (tag DATA, the channel's id first); a receiver thread takes every message
   and writes it to its channel's local end. An OPEN message makes the peer connect its own
   worker's loopback port for the channel; CLOSE ends a channel; STOP ends the bridge. So the
   frames, the tensors among them, travel through MPI (and whatever fabric it drives), and the
   protocol above is unchanged. MPI errors return codes (MPI_ERRORS_RETURN): a channel whose
   sends fail is closed, which the protocol sees as a closed connection. */
#ifdef DATAFLOW_MPI
#include <mpi.h>
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
static int df__mpi_connect(const char *addr, char *err, size_t en) {
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
