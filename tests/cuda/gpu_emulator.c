/* gpu_emulator.c - a host emulation of the GPU side of dataflow, for tests on machines without one.

   Every function that dataflow.h declares under DATAFLOW_CUDA, in plain C11 on the host: link
   this file instead of dataflow_cuda.o (and compile dataflow.c with -DDATAFLOW_CUDA), and the
   runtime's GPU device (placement on /gpu:0, device memory, host<->device copies, kernels) runs
   on a CPU-only machine. tests/cuda/gpu_emulator.h declares what it adds for tests.

   Table of contents (search for the marker)
     1. CONFIGURATION AND COUNTERS ................................... >>emu-config
     2. DEVICE MEMORY: TAGGED REGIONS ................................ >>emu-memory
     3. ONE GPU: OPEN, ALLOCATE, COPY ................................ >>emu-gpu
     4. CHECKING A CALL'S ARGUMENTS .................................. >>emu-check
     5. COPIES AND FILL .............................................. >>emu-copy
     6. ELEMENTWISE: UNARY, BINARY, SELECT, ADDN, CAST ............... >>emu-elementwise
     7. REDUCTIONS AND ARGMAX ........................................ >>emu-reduce
     8. STRIDED COPY, GATHER, SEGMENT SUM ............................ >>emu-index
     9. MATRIX PRODUCTS .............................................. >>emu-gemm
    10. SOFTMAX AND CROSS-ENTROPY .................................... >>emu-softmax
    11. RANDOM NUMBERS ............................................... >>emu-random
    12. OPTIMIZER UPDATES ............................................ >>emu-apply
    13. CONVOLUTION AND POOLING ...................................... >>emu-conv
    14. DEPTHWISE CONVOLUTION AND BATCH NORM ......................... >>emu-nn

   Invariants, for the whole file:
   - Device memory is host memory whose address has EMU_TAG (bit 62) flipped: a device pointer
     that dataflow.c dereferences by mistake is a non-canonical address and faults at once. Only
     this file removes the tag, and only after checking that the whole span an argument covers
     lies inside one live region of the calling GPU's device, and inside the df_cuda_alloc
     block the argument points into, where it points into one.
   - Work runs at call time, synchronously, under the GPU's stream lock: the call order is the
     order of one CUDA stream, and two threads never run one GPU's kernels at the same time.
   - Results follow the portable CPU kernels of dataflow.c: the same formulas in the same
     precision and order wherever the order changes the bits, the same NaN rules. The dtypes
     accepted are exactly those dataflow.h names for each launcher (float and double unless a
     launcher names more), so dataflow.c cannot come to rely on more than the real GPU gives. */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef DATAFLOW_CUDA
#define DATAFLOW_CUDA 1
#endif
#include "../../dataflow.h"
#include "gpu_emulator.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ==========================================================================================
   1. CONFIGURATION AND COUNTERS                                                 >>emu-config
   The device count is read from DF_EMULATED_GPUS at every df_cuda_device_count (tests may
   setenv between sessions); the memory per GPU once, at the first region, unless
   df_emu_set_memory_limit set it. Counters are relaxed atomics: they count, they order nothing.
   ========================================================================================== */
#define EMU_TAG          ((uintptr_t)1 << 62)
#define EMU_MAX_GPUS     64
#define EMU_REGION_ALIGN 256          /* what cudaMalloc guarantees */
#define EMU_POISON       0xFF         /* fresh regions: NaN as float and double, -1 as integers */

static _Atomic int64_t emu__n_launches, emu__n_h2d, emu__n_d2h, emu__n_captures_refused;

int64_t df_emu_launches(void) { return atomic_load_explicit(&emu__n_launches, memory_order_relaxed); }
int64_t df_emu_h2d_copies(void) { return atomic_load_explicit(&emu__n_h2d, memory_order_relaxed); }
int64_t df_emu_d2h_copies(void) { return atomic_load_explicit(&emu__n_d2h, memory_order_relaxed); }
int64_t df_emu_captures_refused(void) { return atomic_load_explicit(&emu__n_captures_refused, memory_order_relaxed); }
static void emu__count(_Atomic int64_t *counter) { atomic_fetch_add_explicit(counter, 1, memory_order_relaxed); }

/* "123", "64K", "256M", "2G", "1T" (powers of 1024); -1 if it is not such a number. */
static int64_t emu__parse_bytes(const char *s) {
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || s[0] == '-') return -1;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end || v > (unsigned long long)(INT64_MAX >> shift)) return -1;
    return (int64_t)(v << shift);
}

int df_cuda_device_count(df_status *st) {
    const char *e = getenv("DF_EMULATED_GPUS");
    df_status_clear(st);
    if (!e || !*e) return 1;
    char *end = NULL;
    long n = strtol(e, &end, 10);
    if (end == e || *end || n < 0 || n > EMU_MAX_GPUS) {
        df_status_set(st, DF_INVALID_ARGUMENT, "DF_EMULATED_GPUS='%s' is not a GPU count (0 to %d)", e, EMU_MAX_GPUS);
        return 0;
    }
    return (int)n;
}

/* ==========================================================================================
   2. DEVICE MEMORY: TAGGED REGIONS                                              >>emu-memory
   A region is what cudaMalloc would give: host memory from posix_memalign, 256-aligned,
   filled with EMU_POISON (device memory is not zeroed), handed out tagged. The table of live
   regions is sorted by (untagged) base and guarded by emu__lock; bytes in use are counted per
   device against the limit before the host memory is asked for, so two threads cannot both
   pass it.
   ========================================================================================== */
typedef struct emu__region { uintptr_t base; size_t bytes; int device; } emu__region;

static pthread_mutex_t emu__lock = PTHREAD_MUTEX_INITIALIZER;
static emu__region *emu__regions;          /* sorted by base */
static int emu__n_regions, emu__cap_regions;
static int64_t emu__used[EMU_MAX_GPUS], emu__used_total;
static int64_t emu__limit = -1;            /* bytes per GPU; 0: none; -1: environment not read yet */
/* Blocks handed out by df_cuda_alloc (inside regions), so a span can be held to its own block
   rather than its region. Memory a caller carves from regions itself is checked per region. */
typedef struct emu__block { uintptr_t base; size_t bytes; const void *owner; } emu__block;
static emu__block *emu__blocks;            /* sorted by base; never overlapping */
static int emu__n_blocks, emu__cap_blocks;

static void *emu__tag(void *host) { return host ? (void *)((uintptr_t)host ^ EMU_TAG) : NULL; }

/* An "unlimited" GPU still has at most half the host's memory: a request past what the host
   can give must fail as a status, not abort the sanitizers' allocator. */
static int64_t emu__host_cap(void) {
#ifdef _SC_PHYS_PAGES
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (int64_t)pages <= INT64_MAX / 2 / page) return (int64_t)pages * page / 2;
#endif
    return (int64_t)1 << 36;
}

static void emu__read_limit_locked(void) {
    if (emu__limit >= 0) return;
    const char *e = getenv("DF_EMULATED_GPU_MEMORY");
    emu__limit = 0;
    if (e && *e) {
        int64_t v = emu__parse_bytes(e);
        if (v < 0) fprintf(stderr, "gpu_emulator: DF_EMULATED_GPU_MEMORY='%s' is not a byte count; no limit\n", e);
        else emu__limit = v;
    }
}

void df_emu_set_memory_limit(size_t bytes) {
    pthread_mutex_lock(&emu__lock);
    emu__limit = bytes > (size_t)INT64_MAX ? 0 : (int64_t)bytes;
    pthread_mutex_unlock(&emu__lock);
}

int64_t df_emu_bytes_in_use(void) {
    pthread_mutex_lock(&emu__lock);
    int64_t n = emu__used_total;
    pthread_mutex_unlock(&emu__lock);
    return n;
}

/* The live region holding host address addr, or -1. Call with emu__lock held. */
static int emu__find_locked(uintptr_t addr) {
    int lo = 0, hi = emu__n_regions;           /* first region whose base is above addr */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (emu__regions[mid].base <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const emu__region *r = &emu__regions[lo - 1];
    return addr - r->base < r->bytes ? lo - 1 : -1;
}

/* The last block whose base is at or below host address addr, or -1. Call with emu__lock held. */
static int emu__block_below_locked(uintptr_t addr) {
    int lo = 0, hi = emu__n_blocks;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (emu__blocks[mid].base <= addr) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}
/* The block holding host address addr (its start, for a block of 0 bytes), or -1. Call with
   emu__lock held. */
static int emu__find_block_locked(uintptr_t addr) {
    int b = emu__block_below_locked(addr);
    return b >= 0 && (addr == emu__blocks[b].base || addr - emu__blocks[b].base < emu__blocks[b].bytes) ? b : -1;
}
/* Records a block of df_cuda_alloc (untracked if the table cannot grow: checked per region). */
static void emu__block_add(const void *owner, void *p, size_t bytes) {
    uintptr_t base = (uintptr_t)p ^ EMU_TAG;
    pthread_mutex_lock(&emu__lock);
    int same = emu__block_below_locked(base);
    if (same >= 0 && emu__blocks[same].base == base) {      /* a stale entry (a block of 0 bytes) */
        emu__blocks[same].bytes = bytes;
        emu__blocks[same].owner = owner;
        pthread_mutex_unlock(&emu__lock);
        return;
    }
    if (emu__n_blocks == emu__cap_blocks) {
        int cap = emu__cap_blocks ? emu__cap_blocks * 2 : 256;
        emu__block *grown = (emu__block *)realloc(emu__blocks, (size_t)cap * sizeof *grown);
        if (!grown) { pthread_mutex_unlock(&emu__lock); return; }
        emu__blocks = grown;
        emu__cap_blocks = cap;
    }
    int at = emu__n_blocks;
    while (at > 0 && emu__blocks[at - 1].base > base) at--;
    memmove(&emu__blocks[at + 1], &emu__blocks[at], (size_t)(emu__n_blocks - at) * sizeof *emu__blocks);
    emu__blocks[at].base = base;
    emu__blocks[at].bytes = bytes;
    emu__blocks[at].owner = owner;
    emu__n_blocks++;
    pthread_mutex_unlock(&emu__lock);
}
/* Forgets the block starting at p, or (p NULL) every block of owner. */
static void emu__block_remove(const void *owner, const void *p) {
    pthread_mutex_lock(&emu__lock);
    if (p) {
        uintptr_t base = (uintptr_t)p ^ EMU_TAG;
        int b = emu__block_below_locked(base);
        if (b >= 0 && emu__blocks[b].base == base) {
            memmove(&emu__blocks[b], &emu__blocks[b + 1], (size_t)(emu__n_blocks - b - 1) * sizeof *emu__blocks);
            emu__n_blocks--;
        }
    } else {
        int kept = 0;
        for (int i = 0; i < emu__n_blocks; i++)
            if (emu__blocks[i].owner != owner) emu__blocks[kept++] = emu__blocks[i];
        emu__n_blocks = kept;
    }
    pthread_mutex_unlock(&emu__lock);
}

int df_emu_is_device_pointer(const void *p) {
    uintptr_t addr = (uintptr_t)p;
    if (!p || !(addr & EMU_TAG)) return 0;
    pthread_mutex_lock(&emu__lock);
    int r = emu__find_locked(addr ^ EMU_TAG);
    pthread_mutex_unlock(&emu__lock);
    return r >= 0;
}

struct df_cuda {
    int device;
    df_bfc *bfc;                   /* device memory: the BFC allocator over emulated regions */
    pthread_mutex_t stream;        /* held while work runs: the one stream's order */
};

void *df_cuda_region_alloc(size_t bytes, void *gpu) {
    df_cuda *g = (df_cuda *)gpu;
    if (!g || bytes == 0 || bytes > (size_t)INT64_MAX - EMU_REGION_ALIGN) return NULL;
    int dev = g->device;
    int64_t need = (int64_t)bytes;
    pthread_mutex_lock(&emu__lock);
    emu__read_limit_locked();
    int fits = need <= emu__host_cap() - emu__used_total && (emu__limit == 0 || need <= emu__limit - emu__used[dev]);
    if (fits) { emu__used[dev] += need; emu__used_total += need; }   /* reserved */
    pthread_mutex_unlock(&emu__lock);
    if (!fits) return NULL;            /* cudaErrorMemoryAllocation: the allocator reports NULL */
    void *host = NULL;
    if (posix_memalign(&host, EMU_REGION_ALIGN, bytes) != 0) host = NULL;
    if (host) memset(host, EMU_POISON, bytes);
    pthread_mutex_lock(&emu__lock);
    if (host && emu__n_regions == emu__cap_regions) {
        int cap = emu__cap_regions ? emu__cap_regions * 2 : 64;
        emu__region *grown = (emu__region *)realloc(emu__regions, (size_t)cap * sizeof *grown);
        if (grown) { emu__regions = grown; emu__cap_regions = cap; }
        else { free(host); host = NULL; }
    }
    if (!host) {
        emu__used[dev] -= need;
        emu__used_total -= need;
        pthread_mutex_unlock(&emu__lock);
        return NULL;
    }
    int at = emu__n_regions;
    while (at > 0 && emu__regions[at - 1].base > (uintptr_t)host) at--;
    memmove(&emu__regions[at + 1], &emu__regions[at], (size_t)(emu__n_regions - at) * sizeof *emu__regions);
    emu__regions[at].base = (uintptr_t)host;
    emu__regions[at].bytes = bytes;
    emu__regions[at].device = dev;
    emu__n_regions++;
    pthread_mutex_unlock(&emu__lock);
    return emu__tag(host);
}

/* Pinned host memory: plain host memory here (untagged: the host may read it), counted. */
static _Atomic int64_t emu__n_pinned;
int64_t df_emu_pinned_regions(void) { return atomic_load_explicit(&emu__n_pinned, memory_order_relaxed); }
void *df_cuda_pinned_alloc(size_t bytes, void *user) {
    (void)user;
    void *p = NULL;
    if (bytes == 0 || posix_memalign(&p, 4096, bytes) != 0) return NULL;
    emu__count(&emu__n_pinned);
    return p;
}
void df_cuda_pinned_free(void *p, size_t bytes, void *user) { (void)bytes; (void)user; free(p); }

/* A region given back that is not one (or with another size) is a bug of the caller: no status
   can carry it, so it is said on stderr and the memory is left alone. */
void df_cuda_region_free(void *p, size_t bytes, void *gpu) {
    if (!p) return;
    df_cuda *g = (df_cuda *)gpu;
    uintptr_t addr = (uintptr_t)p ^ EMU_TAG;
    pthread_mutex_lock(&emu__lock);
    int r = ((uintptr_t)p & EMU_TAG) ? emu__find_locked(addr) : -1;
    if (r < 0 || emu__regions[r].base != addr) {
        pthread_mutex_unlock(&emu__lock);
        fprintf(stderr, "gpu_emulator: df_cuda_region_free(%p): not the start of a live device region\n", p);
        return;
    }
    emu__region reg = emu__regions[r];
    if (reg.bytes != bytes || (g && g->device != reg.device))
        fprintf(stderr, "gpu_emulator: df_cuda_region_free(%p, %zu bytes, GPU %d): the region has %zu bytes on GPU %d\n",
                p, bytes, g ? g->device : -1, reg.bytes, reg.device);
    emu__used[reg.device] -= (int64_t)reg.bytes;
    emu__used_total -= (int64_t)reg.bytes;
    memmove(&emu__regions[r], &emu__regions[r + 1], (size_t)(emu__n_regions - r - 1) * sizeof *emu__regions);
    emu__n_regions--;
    pthread_mutex_unlock(&emu__lock);
    free((void *)addr);
}

/* ==========================================================================================
   3. ONE GPU: OPEN, ALLOCATE, COPY                                                 >>emu-gpu
   The same structure as dataflow_cuda.cu: a BFC allocator over regions (allow_growth, garbage
   collection, memory_limit as given), the same messages for the same errors.
   ========================================================================================== */
df_cuda *df_cuda_open(int device, size_t memory_limit, df_status *st) {
    df_status local;
    if (!st) st = &local;
    int n = df_cuda_device_count(st);
    if (st->code) return NULL;
    if (device < 0 || device >= n) {
        df_status_set(st, DF_INVALID_ARGUMENT, "GPU %d does not exist (%d visible)", device, n);
        return NULL;
    }
    df_cuda *g = (df_cuda *)calloc(1, sizeof *g);
    if (!g) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory"); return NULL; }
    g->device = device;
    if (pthread_mutex_init(&g->stream, NULL) != 0) {
        free(g);
        df_status_set(st, DF_UNAVAILABLE, "Cannot start the GPU's stream");
        return NULL;
    }
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = memory_limit;
    o.allow_growth = 1;
    o.garbage_collection = 1;
    o.sys_alloc = df_cuda_region_alloc;
    o.sys_free = df_cuda_region_free;
    o.user = g;
    if (!(g->bfc = df_bfc_new(&o))) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory for the GPU allocator");
        df_cuda_close(g);
        return NULL;
    }
    df_status_clear(st);
    return g;
}

void df_cuda_close(df_cuda *g) {
    if (!g) return;
    emu__block_remove(g, NULL);
    if (g->bfc) df_bfc_free_all(g->bfc);
    pthread_mutex_destroy(&g->stream);
    free(g);
}

void *df_cuda_alloc(df_cuda *g, size_t bytes, df_status *st) {
    df_status local;
    if (!st) st = &local;
    if (!g) { df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_alloc: NULL GPU"); return NULL; }
    void *p = df_bfc_alloc(g->bfc, bytes ? bytes : 1);
    if (!p) {
        char summary[384];
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes on GPU %d: %s", bytes, g->device,
                      df_bfc_summary(g->bfc, summary, sizeof summary));
        return NULL;
    }
    emu__block_add(g, p, bytes);
    df_status_clear(st);
    return p;
}
void df_cuda_free(df_cuda *g, void *p) {
    if (!g || !p) return;
    emu__block_remove(g, p);
    df_bfc_free(g->bfc, p);
}
void df_cuda_get_stats(df_cuda *g, df_alloc_stats *out) { if (g && out) df_bfc_get_stats(g->bfc, out); }

/* ==========================================================================================
   4. CHECKING A CALL'S ARGUMENTS                                                 >>emu-check
   A launcher checks everything a real one could (the GPU, counts, op codes, dtypes) and more
   than it could: every device argument must be a tagged pointer whose whole span (from the
   strides, for strided operands) lies in one live region of the calling GPU's device and, if
   the pointer is inside a block from df_cuda_alloc, inside that block (as requested, without
   the allocator's rounding); host arguments must not be device memory. The first problem is
   reported as "df_cuda_<launcher>: <what was wrong>", DF_INVALID_ARGUMENT. Checks come first;
   the work then runs under the stream lock (emu__start ... emu__finish).
   ========================================================================================== */
typedef struct emu__call {
    df_status *st;
    const char *fn;
    df_cuda *g;
    df_code code;                  /* DF_OK until the first problem */
} emu__call;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static df_code emu__fail(emu__call *c, df_code code, const char *fmt, ...) {
    if (c->code) return c->code;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->code = code;
    df_status_set(c->st, code, "%s: %s", c->fn, msg);
    return code;
}
#define EMU_BAD(c, ...) emu__fail((c), DF_INVALID_ARGUMENT, __VA_ARGS__)

static int emu__begin(emu__call *c, df_cuda *g, df_status *st, const char *fn) {
    c->st = st; c->fn = fn; c->g = g; c->code = DF_OK;
    df_status_clear(st);
    if (!g) { EMU_BAD(c, "NULL GPU"); return 0; }
    return 1;
}
static void emu__start(emu__call *c) { pthread_mutex_lock(&c->g->stream); }
static df_code emu__finish(emu__call *c) {
    pthread_mutex_unlock(&c->g->stream);
    emu__count(&emu__n_launches);
    return DF_OK;
}

static int emu__nonneg(emu__call *c, const char *what, int64_t v) {
    if (v < 0) { EMU_BAD(c, "%s is negative (%lld)", what, (long long)v); return 0; }
    return 1;
}
/* a * b, or -1 (and the call failed) when it overflows. a, b >= 0. */
static int64_t emu__mul(emu__call *c, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) { EMU_BAD(c, "sizes overflow 64 bits"); return -1; }
    return r;
}
/* Elements of a [rank, dims] index space, or -1 (the call failed). */
static int64_t emu__shape(emu__call *c, int rank, const int64_t *dims) {
    if (rank < 0 || rank > DF_MAX_RANK) { EMU_BAD(c, "rank %d is not in [0, %d]", rank, DF_MAX_RANK); return -1; }
    if (rank > 0 && !dims) { EMU_BAD(c, "dims is NULL for rank %d", rank); return -1; }
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) { EMU_BAD(c, "dims[%d] is negative (%lld)", d, (long long)dims[d]); return -1; }
        n = emu__mul(c, n, dims[d]);
        if (n < 0) return -1;
    }
    return n;
}
static int emu__float_type(emu__call *c, df_dtype t) {
    if (t == DF_FLOAT || t == DF_DOUBLE) return 1;
    EMU_BAD(c, "dtype %s is not supported (float or double)", df_dtype_name(t));
    return 0;
}
static int emu__index_type(emu__call *c, const char *what, df_dtype t) {
    if (t == DF_INT32 || t == DF_INT64) return 1;
    EMU_BAD(c, "%s must be int32 or int64, got %s", what, df_dtype_name(t));
    return 0;
}
static int emu__elem_size(emu__call *c, size_t es) {
    if (es == 1 || es == 2 || es == 4 || es == 8 || es == 16) return 1;
    EMU_BAD(c, "element size %zu is not 1, 2, 4, 8 or 16", es);
    return 0;
}

/* The host address of device argument `what`, after checking that bytes [lo, hi) from p
   (lo < hi; lo < 0 for negative strides) lie in one live region of the calling GPU's device.
   NULL, with the call failed, otherwise. */
static void *emu__span(emu__call *c, const char *what, const void *p, int64_t lo, int64_t hi) {
    if (c->code) return NULL;
    if (!p) { EMU_BAD(c, "%s is NULL", what); return NULL; }
    if (!((uintptr_t)p & EMU_TAG)) { EMU_BAD(c, "%s (%p) is not device memory (a host pointer?)", what, p); return NULL; }
    uintptr_t addr = (uintptr_t)p ^ EMU_TAG, first = addr + (uintptr_t)lo, last = addr + (uintptr_t)(hi - 1);
    pthread_mutex_lock(&emu__lock);
    int r = emu__find_locked(first);
    int inside = r >= 0 && last >= first && last - emu__regions[r].base < emu__regions[r].bytes;
    int dev = r >= 0 ? emu__regions[r].device : -1;
    int b = emu__find_block_locked(addr);
    emu__block block = b >= 0 ? emu__blocks[b] : (emu__block){0, 0, NULL};
    pthread_mutex_unlock(&emu__lock);
    if (b >= 0 && (first < block.base || last < first || last - block.base >= block.bytes)) {
        EMU_BAD(c, "%s (%p, bytes %lld to %lld) runs outside its block of %zu bytes from df_cuda_alloc", what, p, (long long)lo,
                (long long)hi, block.bytes);
        return NULL;
    }
    if (r < 0) {
        EMU_BAD(c, "%s (%p, bytes %lld to %lld) is not in live device memory", what, p, (long long)lo, (long long)hi);
        return NULL;
    }
    if (!inside) {
        EMU_BAD(c, "%s (%p, bytes %lld to %lld) runs past the end of its device region", what, p, (long long)lo, (long long)hi);
        return NULL;
    }
    if (dev != c->g->device) { EMU_BAD(c, "%s is memory of GPU %d, not of GPU %d", what, dev, c->g->device); return NULL; }
    return (void *)addr;
}
/* Elements of es bytes must sit at multiples of es (of 8 for 16-byte elements, read as two
   words), as the CUDA kernels load them. */
static int emu__aligned(emu__call *c, const char *what, const void *p, size_t es) {
    size_t align = es > 8 ? 8 : es;
    if (c->code || !align || !((uintptr_t)p & (align - 1))) return !c->code;
    EMU_BAD(c, "%s (%p) is not aligned to its %zu-byte elements", what, p, es);
    return 0;
}
/* A dense device operand of n > 0 elements of es bytes. */
static void *emu__dense(emu__call *c, const char *what, const void *p, int64_t n, size_t es) {
    int64_t bytes = emu__mul(c, n, (int64_t)es);
    if (bytes < 0 || !emu__aligned(c, what, p, es)) return NULL;
    return emu__span(c, what, p, 0, bytes);
}
/* A strided device operand over a non-empty index space: p is element (0, ..., 0). */
static void *emu__strided(emu__call *c, const char *what, const void *p, int rank, const int64_t *dims,
                          const int64_t *strides, size_t es) {
    if (!emu__aligned(c, what, p, es)) return NULL;
    if (rank > 0 && !strides) { EMU_BAD(c, "the strides of %s are NULL", what); return NULL; }
    int64_t lo = 0, hi = 0, ext;
    for (int d = 0; d < rank; d++) {
        if (__builtin_mul_overflow(dims[d] - 1, strides[d], &ext) ||
            __builtin_add_overflow(ext < 0 ? lo : hi, ext, ext < 0 ? &lo : &hi)) {
            EMU_BAD(c, "the strides of %s overflow 64 bits", what);
            return NULL;
        }
    }
    int64_t blo, bhi;
    if (__builtin_mul_overflow(lo, (int64_t)es, &blo) || __builtin_add_overflow(hi, 1, &bhi) ||
        __builtin_mul_overflow(bhi, (int64_t)es, &bhi)) {
        EMU_BAD(c, "the strides of %s overflow 64 bits", what);
        return NULL;
    }
    return emu__span(c, what, p, blo, bhi);
}
/* A host argument: not NULL and not device memory. */
static const void *emu__host(emu__call *c, const char *what, const void *p) {
    if (c->code) return NULL;
    if (!p) { EMU_BAD(c, "%s is NULL", what); return NULL; }
    if ((uintptr_t)p & EMU_TAG) { EMU_BAD(c, "%s (%p) is device memory, not host memory", what, p); return NULL; }
    return p;
}

/* Steps through an index space in row-major order, keeping each operand's element offset. */
typedef struct emu__walk {
    int rank, n_ops;
    int64_t dims[DF_MAX_RANK], idx[DF_MAX_RANK], stride[3][DF_MAX_RANK], off[3];
} emu__walk;
static void emu__walk_init(emu__walk *w, int rank, const int64_t *dims, int n_ops, const int64_t *const *strides) {
    memset(w, 0, sizeof *w);
    w->rank = rank;
    w->n_ops = n_ops;
    for (int d = 0; d < rank; d++) {
        w->dims[d] = dims[d];
        for (int k = 0; k < n_ops; k++) w->stride[k][d] = strides[k][d];
    }
}
static void emu__walk_next(emu__walk *w) {
    for (int d = w->rank - 1; d >= 0; d--) {
        w->idx[d]++;
        for (int k = 0; k < w->n_ops; k++) w->off[k] += w->stride[k][d];
        if (w->idx[d] < w->dims[d]) return;
        for (int k = 0; k < w->n_ops; k++) w->off[k] -= w->stride[k][d] * w->dims[d];
        w->idx[d] = 0;
    }
}

/* Element access as dataflow.c's df__get_f64 / df__set_from_f64 for the types on the GPU. */
static double emu__get(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}
static void emu__set(df_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case DF_FLOAT: ((float *)p)[i] = (float)v; break;
    case DF_DOUBLE: ((double *)p)[i] = v; break;
    case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)v); break;
    case DF_BFLOAT16: ((uint16_t *)p)[i] = df_float_to_bfloat16((float)v); break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}
static int64_t emu__index_at(df_dtype t, const void *p, int64_t i) {
    return t == DF_INT64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

/* TF32 keeps 10 of float's 23 fraction bits: rounded to nearest, ties away from zero. */
static float emu__tf32(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return v;           /* Inf and NaN stay */
    u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* ==========================================================================================
   5. COPIES AND FILL                                                              >>emu-copy
   Host to device and back are plain memcpy between host memory and a region's untagged
   address. Device-to-device copies must not partly overlap (cudaMemcpy leaves that undefined).
   ========================================================================================== */
static df_code emu__h2d(df_cuda *g, void *dst, const void *host_src, size_t bytes, df_status *st, const char *fn) {
    emu__call c;
    if (!emu__begin(&c, g, st, fn)) return c.code;
    if (!bytes) return DF_OK;
    if (bytes > (size_t)INT64_MAX) return EMU_BAD(&c, "%zu bytes is too many", bytes);
    const void *src = emu__host(&c, "host_src", host_src);
    void *d = emu__span(&c, "dst", dst, 0, (int64_t)bytes);
    if (c.code) return c.code;
    pthread_mutex_lock(&g->stream);
    memcpy(d, src, bytes);
    pthread_mutex_unlock(&g->stream);
    emu__count(&emu__n_h2d);
    return DF_OK;
}
static df_code emu__d2h(df_cuda *g, void *host_dst, const void *src, size_t bytes, df_status *st, const char *fn) {
    emu__call c;
    if (!emu__begin(&c, g, st, fn)) return c.code;
    if (!bytes) return DF_OK;
    if (bytes > (size_t)INT64_MAX) return EMU_BAD(&c, "%zu bytes is too many", bytes);
    void *dst = (void *)emu__host(&c, "host_dst", host_dst);
    const void *s = emu__span(&c, "src", src, 0, (int64_t)bytes);
    if (c.code) return c.code;
    pthread_mutex_lock(&g->stream);
    memcpy(dst, s, bytes);
    pthread_mutex_unlock(&g->stream);
    emu__count(&emu__n_d2h);
    return DF_OK;
}
df_code df_cuda_copy_to_device(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st) {
    return emu__h2d(g, dst, src, bytes, st, "df_cuda_copy_to_device");
}
df_code df_cuda_copy_to_host(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st) {
    return emu__d2h(g, dst, src, bytes, st, "df_cuda_copy_to_host");
}
df_code df_cuda_memcpy_h2d(df_cuda *g, void *dst, const void *host_src, size_t bytes, df_status *st) {
    return emu__h2d(g, dst, host_src, bytes, st, "df_cuda_memcpy_h2d");
}
df_code df_cuda_memcpy_d2h(df_cuda *g, void *host_dst, const void *src, size_t bytes, df_status *st) {
    return emu__d2h(g, host_dst, src, bytes, st, "df_cuda_memcpy_d2h");
}
df_code df_cuda_synchronize(df_cuda *g, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_synchronize")) return c.code;
    return DF_OK;                  /* the work ran when it was queued */
}

df_code df_cuda_memcpy_d2d(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_memcpy_d2d")) return c.code;
    if (!bytes) return DF_OK;
    if (bytes > (size_t)INT64_MAX) return EMU_BAD(&c, "%zu bytes is too many", bytes);
    char *d = (char *)emu__span(&c, "dst", dst, 0, (int64_t)bytes);
    const char *s = (const char *)emu__span(&c, "src", src, 0, (int64_t)bytes);
    if (c.code) return c.code;
    if (d != s && d < s + bytes && s < d + bytes) return EMU_BAD(&c, "dst and src overlap (%zu bytes, %p and %p)", bytes, dst, src);
    emu__start(&c);
    if (d != s) memcpy(d, s, bytes);
    return emu__finish(&c);
}

df_code df_cuda_fill(df_cuda *g, void *dst, int64_t n, size_t elem_size, const void *host_value, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_fill")) return c.code;
    if (!emu__nonneg(&c, "n", n) || !emu__elem_size(&c, elem_size) || n == 0) return c.code;
    const void *v = emu__host(&c, "host_value", host_value);
    char *d = (char *)emu__dense(&c, "dst", dst, n, elem_size);
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t i = 0; i < n; i++) memcpy(d + (size_t)i * elem_size, v, elem_size);
    return emu__finish(&c);
}

/* ==========================================================================================
   6. ELEMENTWISE: UNARY, BINARY, SELECT, ADDN, CAST                       >>emu-elementwise
   Formulas of dataflow.c's DF__UNARY_FLOAT, DF__ARITH_ROWS and DF__GRAD_ROWS (the plain rows):
   computed in the operand type, Maximum and Minimum return a NaN a, Relu keeps NaN, Sigmoid
   never overflows. Binary ops walk the output shape with each input's own strides; bool takes
   AND, OR, EQUAL and NOT_EQUAL (as the CPU's and dataflow_cuda.cu's).
   ========================================================================================== */
/* The existing float kernels of dataflow_cuda.cu (c = op(a, b), n floats). */
df_code df_cuda_elementwise_f32(df_cuda *g, int op, const float *a, const float *b, float *c_, int64_t n, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_elementwise_f32")) return c.code;
    if (op < DF_CUDA_ADD || op > DF_CUDA_TANH) return EMU_BAD(&c, "op %d is not an elementwise op", op);
    if (!emu__nonneg(&c, "n", n) || n == 0) return c.code;
    const float *x = (const float *)emu__dense(&c, "a", a, n, sizeof(float));
    const float *y = op < DF_CUDA_RELU ? (const float *)emu__dense(&c, "b", b, n, sizeof(float)) : NULL;
    float *z = (float *)emu__dense(&c, "c", c_, n, sizeof(float));
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t i = 0; i < n; i++) {
        float u = x[i], v = y ? y[i] : u;
        switch (op) {
        case DF_CUDA_ADD: z[i] = u + v; break;
        case DF_CUDA_SUB: z[i] = u - v; break;
        case DF_CUDA_MUL: z[i] = u * v; break;
        case DF_CUDA_MAX: z[i] = u != u || u > v ? u : v; break;
        case DF_CUDA_RELU: z[i] = u > 0.0f || u != u ? u : 0.0f; break;
        default: z[i] = tanhf(u); break;
        }
    }
    return emu__finish(&c);
}

#define EMU__UNARY(T, SQRT, EXP, LOG, TANH, FLOOR)                                                \
    static void emu__unary_##T(int op, const T *x, T *y, int64_t n) {                             \
        for (int64_t i = 0; i < n; i++) {                                                         \
            T v = x[i], r;                                                                        \
            switch (op) {                                                                         \
            case DF_CUDA_U_NEG: r = -v; break;                                                    \
            case DF_CUDA_U_SQUARE: r = v * v; break;                                              \
            case DF_CUDA_U_SQRT: r = SQRT(v); break;                                              \
            case DF_CUDA_U_RSQRT: r = (T)1 / SQRT(v); break;                                      \
            case DF_CUDA_U_EXP: r = EXP(v); break;                                                \
            case DF_CUDA_U_LOG: r = LOG(v); break;                                                \
            case DF_CUDA_U_TANH: r = TANH(v); break;                                              \
            case DF_CUDA_U_SIGMOID: r = v >= 0 ? (T)1 / ((T)1 + EXP(-v)) : EXP(v) / ((T)1 + EXP(v)); break; \
            case DF_CUDA_U_RELU: r = v > 0 ? v : (v != v ? v : (T)0); break;                      \
            case DF_CUDA_U_ABS: r = v < 0 ? -v : v; break;                                        \
            case DF_CUDA_U_SIGN: r = v > 0 ? (T)1 : v < 0 ? (T)-1 : v == 0 ? (T)0 : v; break;                   \
            case DF_CUDA_U_RECIPROCAL: r = (T)1 / v; break;                                       \
            default: r = FLOOR(v); break;                                                         \
            }                                                                                     \
            y[i] = r;                                                                             \
        }                                                                                         \
    }
EMU__UNARY(float, sqrtf, expf, logf, tanhf, floorf)
EMU__UNARY(double, sqrt, exp, log, tanh, floor)

df_code df_cuda_unary(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t n, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_unary")) return c.code;
    if (op < 0 || op >= DF_CUDA_U_COUNT) return EMU_BAD(&c, "op %d is not a unary op (0 to %d)", op, DF_CUDA_U_COUNT - 1);
    if (op == DF_CUDA_U_NOT ? t != DF_BOOL : t != DF_FLOAT && t != DF_DOUBLE)
        return EMU_BAD(&c, "op %d does not take %s (%s)", op, df_dtype_name(t), op == DF_CUDA_U_NOT ? "NOT takes bool" : "float or double");
    if (!emu__nonneg(&c, "n", n) || n == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = emu__dense(&c, "x", x, n, es);
    void *ys = emu__dense(&c, "y", y, n, es);
    if (c.code) return c.code;
    emu__start(&c);
    if (t == DF_BOOL) for (int64_t i = 0; i < n; i++) ((uint8_t *)ys)[i] = !((const uint8_t *)xs)[i];
    else if (t == DF_FLOAT) emu__unary_float(op, (const float *)xs, (float *)ys, n);
    else emu__unary_double(op, (const double *)xs, (double *)ys, n);
    return emu__finish(&c);
}

/* dataflow.c's FloorMod on floats: fmod in double, moved to the divisor's sign. */
static double emu__ffmod(double x, double y) {
    double r = fmod(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}
#define EMU__BINARY(T, POW, FLOOR)                                                                \
    static void emu__binary_##T(int op, emu__walk *w, int64_t n, const T *a, const T *b, void *out) { \
        T *o = (T *)out;                                                                          \
        uint8_t *ob = (uint8_t *)out;                                                             \
        for (int64_t i = 0; i < n; i++, emu__walk_next(w)) {                                      \
            T x = a[w->off[0]], y = b[w->off[1]];                                                 \
            switch (op) {                                                                         \
            case DF_CUDA_B_ADD: o[i] = x + y; break;                                              \
            case DF_CUDA_B_SUB: o[i] = x - y; break;                                              \
            case DF_CUDA_B_MUL: o[i] = x * y; break;                                              \
            case DF_CUDA_B_DIV: o[i] = x / y; break;                                              \
            case DF_CUDA_B_MAX: o[i] = (x > y || x != x) ? x : y; break;                          \
            case DF_CUDA_B_MIN: o[i] = (x < y || x != x) ? x : y; break;                          \
            case DF_CUDA_B_POW: o[i] = POW(x, y); break;                                          \
            case DF_CUDA_B_FLOORMOD: o[i] = (T)emu__ffmod(x, y); break;                           \
            case DF_CUDA_B_FLOORDIV: o[i] = FLOOR(x / y); break;                                  \
            case DF_CUDA_B_SQDIFF: o[i] = (x - y) * (x - y); break;                               \
            case DF_CUDA_B_LESS: ob[i] = x < y; break;                                            \
            case DF_CUDA_B_LESS_EQ: ob[i] = x <= y; break;                                        \
            case DF_CUDA_B_GREATER: ob[i] = x > y; break;                                         \
            case DF_CUDA_B_GREATER_EQ: ob[i] = x >= y; break;                                     \
            case DF_CUDA_B_EQUAL: ob[i] = x == y; break;                                          \
            case DF_CUDA_B_NOT_EQUAL: ob[i] = x != y; break;                                      \
            case DF_CUDA_B_RELU_GRAD: o[i] = y > 0 ? x : 0; break;                                \
            case DF_CUDA_B_TANH_GRAD: o[i] = y * (1 - x * x); break;                              \
            case DF_CUDA_B_SIGMOID_GRAD: o[i] = y * x * (1 - x); break;                           \
            case DF_CUDA_B_SQRT_GRAD: o[i] = y * (T)0.5 / x; break;                               \
            case DF_CUDA_B_RSQRT_GRAD: o[i] = y * (T)-0.5 * x * x * x; break;                     \
            default: o[i] = -y * x * x; break;                                                    \
            }                                                                                     \
        }                                                                                         \
    }
EMU__BINARY(float, powf, floorf)
EMU__BINARY(double, pow, floor)

df_code df_cuda_binary(df_cuda *g, int op, df_dtype t, int rank, const int64_t *dims, const void *a, const int64_t *sa,
                       const void *b, const int64_t *sb, void *c_, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_binary")) return c.code;
    if (op < 0 || op >= DF_CUDA_B_COUNT) return EMU_BAD(&c, "op %d is not a binary op (0 to %d)", op, DF_CUDA_B_COUNT - 1);
    int logical = op == DF_CUDA_B_AND || op == DF_CUDA_B_OR, eq = op == DF_CUDA_B_EQUAL || op == DF_CUDA_B_NOT_EQUAL;
    if (logical ? t != DF_BOOL : !(t == DF_FLOAT || t == DF_DOUBLE || (eq && t == DF_BOOL)))
        return EMU_BAD(&c, "op %d does not take %s (%s)", op, df_dtype_name(t),
                       logical ? "AND and OR take bool" : eq ? "float, double or bool" : "float or double");
    int64_t n = emu__shape(&c, rank, dims);
    if (n <= 0) return c.code;
    size_t es = df_dtype_size(t), eo = op >= DF_CUDA_B_LESS && op <= DF_CUDA_B_OR ? 1 : es;
    const void *ah = emu__strided(&c, "a", a, rank, dims, sa, es);
    const void *bh = emu__strided(&c, "b", b, rank, dims, sb, es);
    void *ch = emu__dense(&c, "c", c_, n, eo);
    if (c.code) return c.code;
    emu__walk w;
    const int64_t *strides[2] = {sa, sb};
    emu__walk_init(&w, rank, dims, 2, strides);
    emu__start(&c);
    if (t == DF_BOOL) {                /* as dataflow.c's bool rows: any nonzero byte is true */
        const uint8_t *x = (const uint8_t *)ah, *y = (const uint8_t *)bh;
        for (int64_t i = 0; i < n; i++, emu__walk_next(&w)) {
            int u = x[w.off[0]] != 0, v = y[w.off[1]] != 0;
            ((uint8_t *)ch)[i] = op == DF_CUDA_B_AND ? u && v : op == DF_CUDA_B_OR ? u || v : op == DF_CUDA_B_EQUAL ? u == v : u != v;
        }
    } else if (t == DF_FLOAT) {
        emu__binary_float(op, &w, n, (const float *)ah, (const float *)bh, ch);
    } else {
        emu__binary_double(op, &w, n, (const double *)ah, (const double *)bh, ch);
    }
    return emu__finish(&c);
}

/* The further math ops (dataflow.c's src/kernels/math.c and extra.c): each element in double,
   rounded once to the type (Sin and Cos in the type), the CPU kernels' formulas. */
#define EMU_SELU_SCALE 1.0507009873554804934193349852946
#define EMU_SELU_ALPHA 1.6732632423543772848170429916717
static double emu__math(int op, double a, double b, double th, double alpha) {
    double v = a;
    switch (op) {
    case DF_CUDA_M_IS_FINITE: return isfinite(v) != 0;
    case DF_CUDA_M_IS_NAN: return v != v;
    case DF_CUDA_M_IS_INF: return isinf(v) != 0;
    case DF_CUDA_M_SOFTPLUS: return v > -th ? v : v < th ? exp(v) : log1p(exp(v));
    case DF_CUDA_M_SOFTSIGN: return v / (1.0 + fabs(v));
    case DF_CUDA_M_ELU: return v < 0 ? expm1(v) : v;
    case DF_CUDA_M_SELU: return v < 0 ? EMU_SELU_SCALE * EMU_SELU_ALPHA * expm1(v) : EMU_SELU_SCALE * v;
    case DF_CUDA_M_LEAKY_RELU: return v < 0 ? v * alpha : v;
    case DF_CUDA_M_RELU6: return v != v ? v : v < 0 ? 0.0 : v > 6 ? 6.0 : v;
    case DF_CUDA_M_LOG1P: return log1p(v);
    case DF_CUDA_M_EXPM1: return expm1(v);
    case DF_CUDA_M_ERF: return erf(v);
    case DF_CUDA_M_ERFC: return erfc(v);
    case DF_CUDA_M_TAN: return tan(v);
    case DF_CUDA_M_ASIN: return asin(v);
    case DF_CUDA_M_ACOS: return acos(v);
    case DF_CUDA_M_ATAN: return atan(v);
    case DF_CUDA_M_SINH: return sinh(v);
    case DF_CUDA_M_COSH: return cosh(v);
    case DF_CUDA_M_ROUND: case DF_CUDA_M_RINT: return nearbyint(v);
    case DF_CUDA_M_CEIL: return ceil(v);
    case DF_CUDA_M_ATAN2: return atan2(a, b);
    case DF_CUDA_M_TRUNCATE_DIV: return trunc(a / b);
    case DF_CUDA_M_TRUNCATE_MOD: return fmod(a, b);
    case DF_CUDA_M_ELU_GRAD: return b < 0 ? a * (b + 1) : a;
    case DF_CUDA_M_SELU_GRAD: return b < 0 ? a * (b + EMU_SELU_SCALE * EMU_SELU_ALPHA) : a * EMU_SELU_SCALE;
    case DF_CUDA_M_SOFTPLUS_GRAD: return a / (1 + exp(-b));
    case DF_CUDA_M_SOFTSIGN_GRAD: return a / ((1 + fabs(b)) * (1 + fabs(b)));
    case DF_CUDA_M_LEAKY_RELU_GRAD: return b > 0 ? a : a * alpha;
    case DF_CUDA_M_RELU6_GRAD: return a * (double)(b > 0 && b < 6);
    case DF_CUDA_M_SIN: return sin(v);
    default: return cos(v);
    }
}
static void emu__math_put(int op, df_dtype t, void *out, int64_t i, double a, double b, double alpha) {
    if (op <= DF_CUDA_M_IS_INF) { ((uint8_t *)out)[i] = (uint8_t)emu__math(op, a, b, 0, alpha); return; }
    if (t == DF_FLOAT) {
        float r = op == DF_CUDA_M_SIN ? sinf((float)a) : op == DF_CUDA_M_COS ? cosf((float)a)
                                      : (float)emu__math(op, a, b, log((double)FLT_EPSILON) + 2.0, alpha);
        ((float *)out)[i] = r;
    } else {
        ((double *)out)[i] = emu__math(op, a, b, log(DBL_EPSILON) + 2.0, alpha);
    }
}
static int emu__math_binary_op(int op) { return op >= DF_CUDA_M_ATAN2 && op <= DF_CUDA_M_RELU6_GRAD; }

df_code df_cuda_math_unary(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t n, double alpha, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_math_unary")) return c.code;
    if (op < 0 || op >= DF_CUDA_M_COUNT || emu__math_binary_op(op)) return EMU_BAD(&c, "op %d is not a unary math op", op);
    if (t != DF_FLOAT && t != DF_DOUBLE) return EMU_BAD(&c, "op %d does not take %s (float or double)", op, df_dtype_name(t));
    if (!emu__nonneg(&c, "n", n) || n == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = emu__dense(&c, "x", x, n, es);
    void *ys = emu__dense(&c, "y", y, n, op <= DF_CUDA_M_IS_INF ? 1 : es);
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t i = 0; i < n; i++) {
        double v = t == DF_FLOAT ? (double)((const float *)xs)[i] : ((const double *)xs)[i];
        emu__math_put(op, t, ys, i, v, v, alpha);
    }
    return emu__finish(&c);
}

df_code df_cuda_math_binary(df_cuda *g, int op, df_dtype t, int rank, const int64_t *dims, const void *a, const int64_t *sa,
                            const void *b, const int64_t *sb, void *c_, double alpha, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_math_binary")) return c.code;
    if (!emu__math_binary_op(op)) return EMU_BAD(&c, "op %d is not a binary math op", op);
    if (t != DF_FLOAT && t != DF_DOUBLE) return EMU_BAD(&c, "op %d does not take %s (float or double)", op, df_dtype_name(t));
    int64_t n = emu__shape(&c, rank, dims);
    if (n <= 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *ah = emu__strided(&c, "a", a, rank, dims, sa, es);
    const void *bh = emu__strided(&c, "b", b, rank, dims, sb, es);
    void *ch = emu__dense(&c, "c", c_, n, es);
    if (c.code) return c.code;
    emu__walk w;
    const int64_t *strides[2] = {sa, sb};
    emu__walk_init(&w, rank, dims, 2, strides);
    emu__start(&c);
    for (int64_t i = 0; i < n; i++, emu__walk_next(&w)) {
        double x = t == DF_FLOAT ? (double)((const float *)ah)[w.off[0]] : ((const double *)ah)[w.off[0]];
        double y = t == DF_FLOAT ? (double)((const float *)bh)[w.off[1]] : ((const double *)bh)[w.off[1]];
        emu__math_put(op, t, ch, i, x, y, alpha);
    }
    return emu__finish(&c);
}

df_code df_cuda_select(df_cuda *g, size_t elem_size, int rank, const int64_t *dims, const void *cond, const int64_t *sc,
                       const void *x, const int64_t *sx, const void *y, const int64_t *sy, void *out, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_select")) return c.code;
    if (!emu__elem_size(&c, elem_size)) return c.code;
    int64_t n = emu__shape(&c, rank, dims);
    if (n <= 0) return c.code;
    const uint8_t *ch = (const uint8_t *)emu__strided(&c, "cond", cond, rank, dims, sc, 1);
    const char *xh = (const char *)emu__strided(&c, "x", x, rank, dims, sx, elem_size);
    const char *yh = (const char *)emu__strided(&c, "y", y, rank, dims, sy, elem_size);
    char *oh = (char *)emu__dense(&c, "out", out, n, elem_size);
    if (c.code) return c.code;
    emu__walk w;
    const int64_t *strides[3] = {sc, sx, sy};
    emu__walk_init(&w, rank, dims, 3, strides);
    emu__start(&c);
    for (int64_t i = 0; i < n; i++, emu__walk_next(&w)) {
        const char *src = ch[w.off[0]] ? xh + w.off[1] * (int64_t)elem_size : yh + w.off[2] * (int64_t)elem_size;
        memmove(oh + i * (int64_t)elem_size, src, elem_size);
    }
    return emu__finish(&c);
}

/* dataflow.c's AddN: the first input, then each further one added in order, in type t. */
enum { EMU_ADDN_PER_PASS = 8 };
df_code df_cuda_add_n(df_cuda *g, df_dtype t, int n_inputs, const void *const *host_inputs, void *out, int64_t n,
                      df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_add_n")) return c.code;
    if (!emu__float_type(&c, t)) return c.code;
    if (n_inputs < 1) return EMU_BAD(&c, "n_inputs is %d; AddN needs at least one", n_inputs);
    if (!emu__nonneg(&c, "n", n) || n == 0) return c.code;
    if (!emu__host(&c, "host_inputs", host_inputs)) return c.code;
    size_t es = df_dtype_size(t);
    const char **in = (const char **)malloc((size_t)n_inputs * sizeof *in);
    if (!in) return emu__fail(&c, DF_RESOURCE_EXHAUSTED, "out of host memory for %d inputs", n_inputs);
    for (int i = 0; i < n_inputs && !c.code; i++) {
        char what[32];
        snprintf(what, sizeof what, "input %d", i);
        in[i] = (const char *)emu__dense(&c, what, host_inputs[i], n, es);
    }
    char *o = (char *)emu__dense(&c, "out", out, n, es);
    /* dataflow_cuda.cu sums eight inputs per pass into out: out may be exactly one of the first
       eight (each element is read before it is written), and overlap nothing else */
    for (int i = 0; i < n_inputs && !c.code; i++) {
        size_t bytes = (size_t)n * es;
        if ((i >= EMU_ADDN_PER_PASS || in[i] != o) && in[i] < o + bytes && o < in[i] + bytes)
            EMU_BAD(&c, "out overlaps input %d (it may only be one of the first %d, exactly)", i, EMU_ADDN_PER_PASS);
    }
    if (c.code) { free(in); return c.code; }
    emu__start(&c);
    for (int64_t e = 0; e < n; e++) {
        if (t == DF_FLOAT) {
            float s = ((const float *)in[0])[e];
            for (int i = 1; i < n_inputs; i++) s += ((const float *)in[i])[e];
            ((float *)o)[e] = s;
        } else {
            double s = ((const double *)in[0])[e];
            for (int i = 1; i < n_inputs; i++) s += ((const double *)in[i])[e];
            ((double *)o)[e] = s;
        }
    }
    free(in);
    return emu__finish(&c);
}

/* Cast, as dataflow.c's df__k_cast: integers (and bool) convert through int64, floats through
   double; float to integer truncates toward zero, NaN gives 0 and the range saturates at
   [INT32_MIN, INT32_MAX] or [INT64_MIN, INT64_MAX] for int32/int64 and at [0, INT64_MAX] for
   uint8/int8 before wrapping to their width. */
static int emu__cast_type(df_dtype t) {
    return t == DF_FLOAT || t == DF_DOUBLE || t == DF_HALF || t == DF_BFLOAT16 || t == DF_INT32 || t == DF_INT64 ||
           t == DF_UINT8 || t == DF_INT8 || t == DF_BOOL;
}
static int emu__is_int(df_dtype t) { return t == DF_INT32 || t == DF_INT64 || t == DF_UINT8 || t == DF_INT8; }
static int64_t emu__f2i(double v, int64_t lo, int64_t hi) {
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    return (int64_t)v;
}
static int64_t emu__get_int(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return ((const int64_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i] != 0;        /* bool */
    }
}
/* From half or bfloat16 to an integer, as src/kernels/half.c's Cast (TensorFlow's CPU): through
   float, truncating; what does not fit (inf, NaN) x86's INT_MIN (INT64_MIN to int64); narrow
   types wrap from half and saturate from bfloat16 (0 for what does not fit int32). */
static int64_t emu__16_to_int(df_dtype from, df_dtype to, float v) {
    int fits32 = v == v && v > -2147483904.0f && v < 2147483648.0f;
    int64_t t32 = fits32 ? (int64_t)v : INT32_MIN;
    if (to == DF_INT64) return v == v && v > -9.3e18f && v < 9.2e18f ? (int64_t)v : INT64_MIN;
    if (from == DF_BFLOAT16 && (to == DF_UINT8 || to == DF_INT8)) {
        int64_t lo = to == DF_INT8 ? -128 : 0, hi = to == DF_INT8 ? 127 : 255;
        return !fits32 ? 0 : t32 < lo ? lo : t32 > hi ? hi : t32;
    }
    return t32;
}
static void emu__set_int(df_dtype t, void *p, int64_t i, int64_t v) {
    switch (t) {
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case DF_INT64: ((int64_t *)p)[i] = v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;   /* int8 */
    }
}
df_code df_cuda_cast(df_cuda *g, df_dtype from, const void *x, df_dtype to, void *y, int64_t n, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_cast")) return c.code;
    if (!emu__cast_type(from) || !emu__cast_type(to))
        return EMU_BAD(&c, "cannot cast %s to %s (float, double, half, bfloat16, int32, int64, uint8, int8, bool)",
                       df_dtype_name(from), df_dtype_name(to));
    if (!emu__nonneg(&c, "n", n) || n == 0) return c.code;
    const void *xs = emu__dense(&c, "x", x, n, df_dtype_size(from));
    void *ys = emu__dense(&c, "y", y, n, df_dtype_size(to));
    if (c.code) return c.code;
    emu__start(&c);
    int from_int = emu__is_int(from) || from == DF_BOOL;
    if (from == to) {
        memmove(ys, xs, (size_t)n * df_dtype_size(to));
        return emu__finish(&c);
    }
    for (int64_t i = 0; i < n; i++) {
        if (emu__is_int(to)) {
            int64_t lo = to == DF_INT32 ? INT32_MIN : to == DF_INT64 ? INT64_MIN : 0;
            int64_t hi = to == DF_INT32 ? INT32_MAX : INT64_MAX;
            emu__set_int(to, ys, i, from_int ? emu__get_int(from, xs, i)
                                    : from == DF_HALF || from == DF_BFLOAT16 ? emu__16_to_int(from, to, (float)emu__get(from, xs, i))
                                    : emu__f2i(emu__get(from, xs, i), lo, hi));
        } else if (from_int && to != DF_BOOL) {
            emu__set(to, ys, i, (double)emu__get_int(from, xs, i));
        } else {
            emu__set(to, ys, i, emu__get(from, xs, i));
        }
    }
    return emu__finish(&c);
}

/* ==========================================================================================
   7. REDUCTIONS AND ARGMAX                                                      >>emu-reduce
   As dataflow.c's Sum/Mean/Max/Min/Prod: floats in a float64 accumulator per output, the
   reduced elements taken in order, Max and Min keeping the first NaN they meet, over nothing
   0, NaN, -inf, +inf, 1; int32 and int64 (which dataflow_cuda.cu takes too) in an int64 that
   wraps, Mean the truncated quotient (0 over nothing), Max and Min starting from the type's
   extremes. ArgMax keeps the first extreme (a NaN first element stays); integers compare
   exactly (the CPU goes through double, the same below 2^53).
   ========================================================================================== */
static int emu__reduce_type(emu__call *c, df_dtype t) {
    if (t == DF_FLOAT || t == DF_DOUBLE || t == DF_INT32 || t == DF_INT64) return 1;
    EMU_BAD(c, "dtype %s is not supported (float, double, int32 or int64)", df_dtype_name(t));
    return 0;
}
static int64_t emu__int_at(df_dtype t, const void *p, int64_t i) {
    return t == DF_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}
df_code df_cuda_reduce(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t outer, int64_t red,
                       int64_t inner, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_reduce")) return c.code;
    if (op < 0 || op >= DF_CUDA_R_COUNT) return EMU_BAD(&c, "op %d is not a reduction (0 to %d)", op, DF_CUDA_R_COUNT - 1);
    if (!emu__reduce_type(&c, t) || !emu__nonneg(&c, "outer", outer) || !emu__nonneg(&c, "red", red) ||
        !emu__nonneg(&c, "inner", inner))
        return c.code;
    int64_t n_out = emu__mul(&c, outer, inner), n_in = n_out < 0 ? -1 : emu__mul(&c, n_out, red);
    if (c.code || n_out == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = n_in > 0 ? emu__dense(&c, "x", x, n_in, es) : NULL;
    void *ys = emu__dense(&c, "y", y, n_out, es);
    if (c.code) return c.code;
    double init = op == DF_CUDA_R_PROD ? 1 : op == DF_CUDA_R_MAX ? -INFINITY : op == DF_CUDA_R_MIN ? INFINITY : 0;
    int64_t iinit = op == DF_CUDA_R_PROD ? 1 : op == DF_CUDA_R_MAX ? (t == DF_INT32 ? INT32_MIN : INT64_MIN)
                  : op == DF_CUDA_R_MIN ? (t == DF_INT32 ? INT32_MAX : INT64_MAX) : 0;
    emu__start(&c);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            if (t == DF_INT32 || t == DF_INT64) {
                int64_t acc = iinit;
                for (int64_t r = 0; r < red; r++) {
                    int64_t v = emu__int_at(t, xs, (o * red + r) * inner + i);
                    switch (op) {
                    case DF_CUDA_R_SUM: case DF_CUDA_R_MEAN: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
                    case DF_CUDA_R_PROD: acc = (int64_t)((uint64_t)acc * (uint64_t)v); break;
                    case DF_CUDA_R_MAX: if (v > acc) acc = v; break;
                    default: if (v < acc) acc = v; break;
                    }
                }
                if (op == DF_CUDA_R_MEAN) acc = red ? acc / red : 0;
                if (t == DF_INT32) ((int32_t *)ys)[o * inner + i] = (int32_t)(uint32_t)acc;
                else ((int64_t *)ys)[o * inner + i] = acc;
                continue;
            }
            double acc = init;
            for (int64_t r = 0; r < red; r++) {
                double v = emu__get(t, xs, (o * red + r) * inner + i);
                switch (op) {
                case DF_CUDA_R_SUM: case DF_CUDA_R_MEAN: acc += v; break;
                case DF_CUDA_R_PROD: acc *= v; break;
                case DF_CUDA_R_MAX: if (v > acc || v != v) acc = v; break;
                default: if (v < acc || v != v) acc = v; break;
                }
            }
            if (op == DF_CUDA_R_MEAN) acc = red ? acc / (double)red : NAN;
            emu__set(t, ys, o * inner + i, acc);
        }
    return emu__finish(&c);
}

df_code df_cuda_argmax(df_cuda *g, df_dtype t, const void *x, df_dtype out_t, void *y, int64_t outer, int64_t red,
                       int64_t inner, int is_min, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_argmax")) return c.code;
    if (!emu__reduce_type(&c, t) || !emu__index_type(&c, "out_t", out_t) || !emu__nonneg(&c, "outer", outer) ||
        !emu__nonneg(&c, "inner", inner))
        return c.code;
    int64_t n_out = emu__mul(&c, outer, inner);
    if (c.code || n_out == 0) return c.code;
    if (red < 1) return EMU_BAD(&c, "red is %lld; ArgMax needs at least one element", (long long)red);
    int64_t n_in = emu__mul(&c, n_out, red);
    if (c.code) return c.code;
    const void *xs = emu__dense(&c, "x", x, n_in, df_dtype_size(t));
    void *ys = emu__dense(&c, "y", y, n_out, df_dtype_size(out_t));
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * red * inner + i, best = 0;
            if (t == DF_INT32 || t == DF_INT64) {
                int64_t bi = emu__int_at(t, xs, base);
                for (int64_t r = 1; r < red; r++) {
                    int64_t v = emu__int_at(t, xs, base + r * inner);
                    if (is_min ? v < bi : v > bi) { bi = v; best = r; }
                }
            } else {
                double bv = emu__get(t, xs, base);
                for (int64_t r = 1; r < red; r++) {
                    double v = emu__get(t, xs, base + r * inner);
                    if ((is_min ? v < bv : v > bv) && bv == bv) { bv = v; best = r; }
                }
            }
            if (out_t == DF_INT32) ((int32_t *)ys)[o * inner + i] = (int32_t)best;
            else ((int64_t *)ys)[o * inner + i] = best;
        }
    return emu__finish(&c);
}

/* ==========================================================================================
   8. STRIDED COPY, GATHER, SEGMENT SUM                                           >>emu-index
   Index checks that the CPU kernels make up front (a status) become data rules on the GPU:
   a gathered index outside [0, axis_dim) gives zeros; a segment id outside [0, num_segments)
   is skipped. Segment sums add in id order, in type t, as dataflow.c's.
   ========================================================================================== */
df_code df_cuda_strided_copy(df_cuda *g, size_t elem_size, int rank, const int64_t *dims, const void *src,
                             const int64_t *src_strides, void *dst, const int64_t *dst_strides, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_strided_copy")) return c.code;
    if (!emu__elem_size(&c, elem_size)) return c.code;
    int64_t n = emu__shape(&c, rank, dims);
    if (n <= 0) return c.code;
    const char *s = (const char *)emu__strided(&c, "src", src, rank, dims, src_strides, elem_size);
    char *d = (char *)emu__strided(&c, "dst", dst, rank, dims, dst_strides, elem_size);
    if (c.code) return c.code;
    emu__walk w;
    const int64_t *strides[2] = {src_strides, dst_strides};
    emu__walk_init(&w, rank, dims, 2, strides);
    emu__start(&c);
    for (int64_t i = 0; i < n; i++, emu__walk_next(&w))
        memmove(d + w.off[1] * (int64_t)elem_size, s + w.off[0] * (int64_t)elem_size, elem_size);
    return emu__finish(&c);
}

df_code df_cuda_gather(df_cuda *g, size_t elem_size, const void *params, const void *indices, df_dtype index_t,
                       void *out, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_gather")) return c.code;
    if (!emu__elem_size(&c, elem_size) || !emu__index_type(&c, "index_t", index_t) || !emu__nonneg(&c, "outer", outer) ||
        !emu__nonneg(&c, "axis_dim", axis_dim) || !emu__nonneg(&c, "inner", inner) || !emu__nonneg(&c, "n_idx", n_idx))
        return c.code;
    int64_t row = emu__mul(&c, inner, (int64_t)elem_size);       /* bytes of one gathered slice */
    int64_t n_out = row < 0 ? -1 : emu__mul(&c, emu__mul(&c, outer, n_idx), row);
    int64_t n_params = n_out < 0 ? -1 : emu__mul(&c, emu__mul(&c, outer, axis_dim), row);
    if (c.code || n_out == 0) return c.code;
    const char *p = n_params > 0 && emu__aligned(&c, "params", params, elem_size)
                  ? (const char *)emu__span(&c, "params", params, 0, n_params) : NULL;
    const void *ix = emu__dense(&c, "indices", indices, n_idx, df_dtype_size(index_t));
    char *o = emu__aligned(&c, "out", out, elem_size) ? (char *)emu__span(&c, "out", out, 0, n_out) : NULL;
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t q = 0; q < outer; q++)
        for (int64_t j = 0; j < n_idx; j++) {
            int64_t v = emu__index_at(index_t, ix, j);
            char *dst = o + (q * n_idx + j) * row;
            if (v < 0 || v >= axis_dim) memset(dst, 0, (size_t)row);
            else memmove(dst, p + (q * axis_dim + v) * row, (size_t)row);
        }
    return emu__finish(&c);
}

df_code df_cuda_gather_batch(df_cuda *g, size_t elem_size, const void *params, const void *indices, df_dtype index_t,
                             void *out, int64_t n_batch, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx,
                             df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_gather_batch")) return c.code;
    if (!emu__elem_size(&c, elem_size) || !emu__index_type(&c, "index_t", index_t) || !emu__nonneg(&c, "outer", outer) ||
        !emu__nonneg(&c, "axis_dim", axis_dim) || !emu__nonneg(&c, "inner", inner) || !emu__nonneg(&c, "n_idx", n_idx))
        return c.code;
    if (n_batch < 1) return EMU_BAD(&c, "n_batch must be at least 1, got %lld", (long long)n_batch);
    int64_t row = emu__mul(&c, inner, (int64_t)elem_size);
    int64_t lead = emu__mul(&c, n_batch, outer);
    int64_t n_out = row < 0 || lead < 0 ? -1 : emu__mul(&c, emu__mul(&c, lead, n_idx), row);
    int64_t n_params = n_out < 0 ? -1 : emu__mul(&c, emu__mul(&c, lead, axis_dim), row);
    int64_t n_ix = emu__mul(&c, n_batch, n_idx);
    if (c.code || n_out == 0) return c.code;
    const char *p = n_params > 0 && emu__aligned(&c, "params", params, elem_size)
                  ? (const char *)emu__span(&c, "params", params, 0, n_params) : NULL;
    const void *ix = emu__dense(&c, "indices", indices, n_ix, df_dtype_size(index_t));
    char *o = emu__aligned(&c, "out", out, elem_size) ? (char *)emu__span(&c, "out", out, 0, n_out) : NULL;
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t b = 0; b < n_batch; b++)
        for (int64_t q = 0; q < outer; q++)
            for (int64_t j = 0; j < n_idx; j++) {
                int64_t v = emu__index_at(index_t, ix, b * n_idx + j);
                char *dst = o + ((b * outer + q) * n_idx + j) * row;
                if (v < 0 || v >= axis_dim) memset(dst, 0, (size_t)row);
                else memmove(dst, p + ((b * outer + q) * axis_dim + v) * row, (size_t)row);
            }
    return emu__finish(&c);
}

df_code df_cuda_segment_sum(df_cuda *g, df_dtype t, const void *data, const void *ids, df_dtype index_t, void *out,
                            int64_t n_ids, int64_t inner, int64_t num_segments, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_segment_sum")) return c.code;
    if (!emu__float_type(&c, t) || !emu__index_type(&c, "index_t", index_t) || !emu__nonneg(&c, "n_ids", n_ids) ||
        !emu__nonneg(&c, "inner", inner) || !emu__nonneg(&c, "num_segments", num_segments))
        return c.code;
    int64_t n_out = emu__mul(&c, num_segments, inner), n_data = n_out < 0 ? -1 : emu__mul(&c, n_ids, inner);
    if (c.code || n_out == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *d = n_data > 0 ? emu__dense(&c, "data", data, n_data, es) : NULL;
    const void *ix = n_ids > 0 ? emu__dense(&c, "ids", ids, n_ids, df_dtype_size(index_t)) : NULL;
    void *o = emu__dense(&c, "out", out, n_out, es);
    if (c.code) return c.code;
    emu__start(&c);
    memset(o, 0, (size_t)n_out * es);
    for (int64_t j = 0; j < n_ids && n_data > 0; j++) {
        int64_t s = emu__index_at(index_t, ix, j);
        if (s < 0 || s >= num_segments) continue;
        if (t == DF_FLOAT) {
            float *dst = (float *)o + s * inner;
            const float *src = (const float *)d + j * inner;
            for (int64_t i = 0; i < inner; i++) dst[i] += src[i];
        } else {
            double *dst = (double *)o + s * inner;
            const double *src = (const double *)d + j * inner;
            for (int64_t i = 0; i < inner; i++) dst[i] += src[i];
        }
    }
    return emu__finish(&c);
}

/* ==========================================================================================
   9. MATRIX PRODUCTS                                                              >>emu-gemm
   Row-major C = op(A) op(B) as plain triple loops: float accumulation for float, half and
   bfloat16 (cuBLAS's compute type for them), double for double; with tf32 the float inputs
   are rounded to TF32 first, as the tensor cores would, so a test whose tolerance only FP32
   meets fails here too. Sizes must fit cuBLAS's int; leading dimensions cover their rows.
   ========================================================================================== */
static int emu__gemm_sizes(emu__call *c, int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                           int64_t ldc, int64_t batch) {
    if (m < 0 || n < 0 || k < 0 || batch < 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX ||
        ldb > INT32_MAX || ldc > INT32_MAX || batch > INT32_MAX) {
        EMU_BAD(c, "sizes out of cuBLAS's int range (m %lld, n %lld, k %lld, batch %lld)", (long long)m, (long long)n,
                (long long)k, (long long)batch);
        return 0;
    }
    if ((m && k && lda < (ta ? m : k)) || (k && n && ldb < (tb ? k : n)) || (m && n && ldc < n)) {
        EMU_BAD(c, "leading dimensions too small (lda %lld, ldb %lld, ldc %lld for m %lld, n %lld, k %lld, ta %d, tb %d)",
                (long long)lda, (long long)ldb, (long long)ldc, (long long)m, (long long)n, (long long)k, ta, tb);
        return 0;
    }
    return 1;
}
/* The span of `batch` matrices of rows x cols at row stride ld, stride apart: element offsets
   [*lo, *hi). */
static void emu__batch_span(int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch, int64_t *lo, int64_t *hi) {
    int64_t last = (batch - 1) * stride, ext = (rows - 1) * ld + cols;
    *lo = last < 0 ? last : 0;
    *hi = (last > 0 ? last : 0) + ext;
}
static void *emu__matrices(emu__call *c, const char *what, const void *p, int64_t rows, int64_t cols, int64_t ld,
                           int64_t stride, int64_t batch, size_t es) {
    if (c->code) return NULL;
    int64_t lo, hi;
    /* rows, cols, ld and batch are within cuBLAS's int range, so only the stride can overflow */
    if (stride > INT64_MAX / 64 / batch || stride < -(INT64_MAX / 64 / batch)) {
        EMU_BAD(c, "the batch stride of %s (%lld) is out of range", what, (long long)stride);
        return NULL;
    }
    emu__batch_span(rows, cols, ld, stride, batch, &lo, &hi);
    if (!emu__aligned(c, what, p, es)) return NULL;
    if (__builtin_mul_overflow(lo, (int64_t)es, &lo) || __builtin_mul_overflow(hi, (int64_t)es, &hi)) {
        EMU_BAD(c, "the matrices of %s span more than 64 bits of bytes", what);
        return NULL;
    }
    return emu__span(c, what, p, lo, hi);
}
static float emu__load_f(df_dtype t, const void *p, int64_t i, int tf32) {
    switch (t) {
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    default: return tf32 ? emu__tf32(((const float *)p)[i]) : ((const float *)p)[i];
    }
}
static void emu__gemm_run(df_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                          int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, void *c, int64_t ldc,
                          int64_t stride_c, int64_t batch, int tf32) {
    int use_tf32 = tf32 && t == DF_FLOAT;
    for (int64_t q = 0; q < batch; q++) {
        int64_t oa = q * stride_a, ob = q * stride_b, oc = q * stride_c;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t at = oc + i * ldc + j;
                if (t == DF_DOUBLE) {
                    const double *A = (const double *)a, *B = (const double *)b;
                    double s = 0;
                    for (int64_t p = 0; p < k; p++)
                        s += A[oa + (ta ? p * lda + i : i * lda + p)] * B[ob + (tb ? j * ldb + p : p * ldb + j)];
                    ((double *)c)[at] = s;
                    continue;
                }
                float s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += emu__load_f(t, a, oa + (ta ? p * lda + i : i * lda + p), use_tf32) *
                         emu__load_f(t, b, ob + (tb ? j * ldb + p : p * ldb + j), use_tf32);
                if (t == DF_FLOAT) ((float *)c)[at] = s;
                else if (t == DF_HALF) ((uint16_t *)c)[at] = df_float_to_half(s);
                else ((uint16_t *)c)[at] = df_float_to_bfloat16(s);
            }
    }
}

df_code df_cuda_gemm_f32(df_cuda *g, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float *c_, int64_t ldc, int tf32, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_gemm_f32")) return c.code;
    if (!emu__gemm_sizes(&c, ta, tb, m, n, k, lda, ldb, ldc, 1) || m == 0 || n == 0) return c.code;
    const void *ah = k ? emu__matrices(&c, "a", a, ta ? k : m, ta ? m : k, lda, 0, 1, 4) : NULL;
    const void *bh = k ? emu__matrices(&c, "b", b, tb ? n : k, tb ? k : n, ldb, 0, 1, 4) : NULL;
    void *ch = emu__matrices(&c, "c", c_, m, n, ldc, 0, 1, 4);
    if (c.code) return c.code;
    emu__start(&c);
    emu__gemm_run(DF_FLOAT, ta, tb, m, n, k, ah, lda, 0, bh, ldb, 0, ch, ldc, 0, 1, tf32);
    return emu__finish(&c);
}

df_code df_cuda_gemm(df_cuda *g, df_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                     int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, void *c_, int64_t ldc,
                     int64_t stride_c, int64_t batch, int tf32, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_gemm")) return c.code;
    if (t != DF_FLOAT && t != DF_DOUBLE && t != DF_HALF && t != DF_BFLOAT16)
        return EMU_BAD(&c, "dtype %s is not supported (float, double, half or bfloat16)", df_dtype_name(t));
    if (!emu__gemm_sizes(&c, ta, tb, m, n, k, lda, ldb, ldc, batch) || m == 0 || n == 0 || batch == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *ah = k ? emu__matrices(&c, "a", a, ta ? k : m, ta ? m : k, lda, stride_a, batch, es) : NULL;
    const void *bh = k ? emu__matrices(&c, "b", b, tb ? n : k, tb ? k : n, ldb, stride_b, batch, es) : NULL;
    void *ch = emu__matrices(&c, "c", c_, m, n, ldc, stride_c, batch, es);
    if (c.code) return c.code;
    emu__start(&c);
    emu__gemm_run(t, ta, tb, m, n, k, ah, lda, stride_a, bh, ldb, stride_b, ch, ldc, stride_c, batch, tf32);
    return emu__finish(&c);
}

/* ==========================================================================================
   10. SOFTMAX AND CROSS-ENTROPY                                               >>emu-softmax
   dataflow.c's portable rows, in float64: the row's max subtracted, the log of the sum of
   exponentials, then exp(z - lse) or z - lse. Cross-entropy: loss = -sum of y log p over the
   labels that are not 0, backprop = p - y. A sparse label outside [0, cols) makes its row's
   loss and backprop NaN (the CPU reports a status instead; the GPU cannot).
   ========================================================================================== */
df_code df_cuda_softmax(df_cuda *g, df_dtype t, const void *x, void *y, int64_t rows, int64_t cols, int log_, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_softmax")) return c.code;
    if (!emu__float_type(&c, t) || !emu__nonneg(&c, "rows", rows) || !emu__nonneg(&c, "cols", cols)) return c.code;
    int64_t n = emu__mul(&c, rows, cols);
    if (n <= 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = emu__dense(&c, "x", x, n, es);
    void *ys = emu__dense(&c, "y", y, n, es);
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++) { double v = emu__get(t, xs, r * cols + j); if (v > mx) mx = v; }
        for (int64_t j = 0; j < cols; j++) sum += exp(emu__get(t, xs, r * cols + j) - mx);
        double lse = log(sum);
        for (int64_t j = 0; j < cols; j++) {
            double z = emu__get(t, xs, r * cols + j) - mx;
            emu__set(t, ys, r * cols + j, log_ ? z - lse : exp(z - lse));
        }
    }
    return emu__finish(&c);
}

df_code df_cuda_xent(df_cuda *g, df_dtype t, const void *logits, const void *labels, df_dtype label_t, void *loss,
                     void *backprop, int64_t rows, int64_t cols, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_xent")) return c.code;
    if (!emu__float_type(&c, t) || !emu__nonneg(&c, "rows", rows) || !emu__nonneg(&c, "cols", cols)) return c.code;
    int sparse = label_t == DF_INT32 || label_t == DF_INT64;
    if (!sparse && label_t != t)
        return EMU_BAD(&c, "label_t %s must be the logits' type (%s) or int32/int64", df_dtype_name(label_t), df_dtype_name(t));
    int64_t n = emu__mul(&c, rows, cols);
    if (c.code || rows == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *f = n ? emu__dense(&c, "logits", logits, n, es) : NULL;
    const void *l = sparse ? emu__dense(&c, "labels", labels, rows, df_dtype_size(label_t))
                           : n ? emu__dense(&c, "labels", labels, n, es) : NULL;
    void *lo = emu__dense(&c, "loss", loss, rows, es);
    void *bp = n ? emu__dense(&c, "backprop", backprop, n, es) : NULL;
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t i = 0; i < rows; i++) {
        int64_t label = sparse ? emu__index_at(label_t, l, i) : 0;
        if (sparse && (label < 0 || label >= cols)) {            /* TensorFlow's GPU rule */
            emu__set(t, lo, i, NAN);
            for (int64_t j = 0; j < cols; j++) emu__set(t, bp, i * cols + j, NAN);
            continue;
        }
        double mx = -INFINITY, sum = 0, total = 0;
        for (int64_t j = 0; j < cols; j++) { double v = emu__get(t, f, i * cols + j); if (v > mx) mx = v; }
        for (int64_t j = 0; j < cols; j++) sum += exp(emu__get(t, f, i * cols + j) - mx);
        double lse = log(sum);
        for (int64_t j = 0; j < cols; j++) {
            double logp = emu__get(t, f, i * cols + j) - mx - lse;
            double yv = sparse ? (double)(label == j) : emu__get(t, l, i * cols + j);
            if (yv != 0) total -= yv * logp;
            emu__set(t, bp, i * cols + j, exp(logp) - yv);
        }
        emu__set(t, lo, i, total);
    }
    return emu__finish(&c);
}

/* ==========================================================================================
   11. RANDOM NUMBERS                                                            >>emu-random
   Philox4x32-10 (Salmon et al., SC'11). Block j is philox(counter + j, key); the CPU's stream
   takes a block's four words last first, two words per 53-bit uniform, so uniform i is the
   (i % 2)-th pair of block i / 2 and normal i is Box-Muller on the two uniforms of block i:
   the values the CPU's sequential stream gives from the same key and counter. A float uniform
   that rounds to 1 becomes the largest float below 1, as on the CPU. Truncated normal i tries
   blocks counter + i + k n (k < 4) and keeps the first within 2; past those (about 4e-6 of
   elements) the sines of the same pairs, and past those the last value folded by fmod into
   (-2, 2): dataflow_cuda.cu's rule, which the header's k < 4 leaves open.
   ========================================================================================== */
static void emu__philox(uint64_t counter, uint32_t k0, uint32_t k1, uint32_t words[4]) {
    uint32_t x0 = (uint32_t)counter, x1 = (uint32_t)(counter >> 32), x2 = 0, x3 = 0;
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * x0, p2 = (uint64_t)0xCD9E8D57u * x2;
        uint32_t y0 = (uint32_t)(p2 >> 32) ^ x1 ^ k0, y2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
        x1 = (uint32_t)p2;
        x3 = (uint32_t)p0;
        x0 = y0;
        x2 = y2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    words[0] = x3; words[1] = x2; words[2] = x1; words[3] = x0;    /* last first */
}
static double emu__uniform53(uint32_t hi, uint32_t lo) {
    return ((double)(hi >> 5) * 67108864.0 + (double)(lo >> 6)) * (1.0 / 9007199254740992.0);
}
/* Box-Muller on the block's two uniforms: the cosine (the CPU's), or the sine. */
static double emu__box_muller(const uint32_t w[4], int sine) {
    double u1 = emu__uniform53(w[0], w[1]), u2 = emu__uniform53(w[2], w[3]);
    if (u1 < 1e-300) u1 = 1e-300;
    double a = 6.283185307179586 * u2;
    return sqrt(-2.0 * log(u1)) * (sine ? sin(a) : cos(a));
}

df_code df_cuda_random(df_cuda *g, int kind, df_dtype t, void *out, int64_t n, uint32_t key0, uint32_t key1,
                       uint64_t counter, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_random")) return c.code;
    if (kind < 0 || kind > 2) return EMU_BAD(&c, "kind %d is not 0 (uniform), 1 (normal) or 2 (truncated normal)", kind);
    if (!emu__float_type(&c, t) || !emu__nonneg(&c, "n", n) || n == 0) return c.code;
    void *o = emu__dense(&c, "out", out, n, df_dtype_size(t));
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        double v;
        if (kind == 0) {
            emu__philox(counter + (uint64_t)(i / 2), key0, key1, w);
            v = emu__uniform53(w[(i % 2) * 2], w[(i % 2) * 2 + 1]);
            if (t == DF_FLOAT && (float)v >= 1.0f) v = 0.99999994;
        } else if (kind == 1) {
            emu__philox(counter + (uint64_t)i, key0, key1, w);
            v = emu__box_muller(w, 0);
        } else {
            int found = 0;
            v = 0;
            for (int k = 0; k < 8 && !found; k++) {
                emu__philox(counter + (uint64_t)i + (uint64_t)(k & 3) * (uint64_t)n, key0, key1, w);
                v = emu__box_muller(w, k >= 4);
                found = fabs(v) <= 2.0;
            }
            if (!found) v = fmod(v, 2.0);
        }
        emu__set(t, o, i, v);
    }
    return emu__finish(&c);
}

/* ==========================================================================================
   12. OPTIMIZER UPDATES                                                          >>emu-apply
   dataflow.c's df__k_apply, formula for formula: gradient descent in type t; momentum in
   float64 with the unrounded accumulator in the step; Adam with alpha = lr sqrt(1 - beta2^t)
   / (1 - beta1^t) in float64, then float arithmetic for float without Nesterov, float64
   otherwise. Hyperparameters are read from device memory, one element of type t each.
   ========================================================================================== */
df_code df_cuda_apply(df_cuda *g, int kind, df_dtype t, int64_t n, void *var, void *acc, void *acc2, const void *grad,
                      const void *const *host_scalars, int nesterov, df_status *st) {
    static const char *const scalar_names[6] = {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"};
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_apply")) return c.code;
    if (kind < 0 || kind > 2) return EMU_BAD(&c, "kind %d is not 0 (gradient descent), 1 (momentum) or 2 (Adam)", kind);
    if (!emu__float_type(&c, t) || !emu__nonneg(&c, "n", n) || n == 0) return c.code;
    size_t es = df_dtype_size(t);
    int n_scalars = kind == 0 ? 1 : kind == 1 ? 2 : 6;
    if (!emu__host(&c, "host_scalars", host_scalars)) return c.code;
    double h[6] = {0};
    const void *hp[6] = {NULL};
    for (int i = 0; i < n_scalars && !c.code; i++)
        hp[i] = emu__dense(&c, kind == 2 ? scalar_names[i] : i == 0 ? "lr" : "momentum", host_scalars[i], 1, es);
    void *w = emu__dense(&c, "var", var, n, es);
    void *m = kind >= 1 ? emu__dense(&c, "acc", acc, n, es) : NULL;
    void *v = kind == 2 ? emu__dense(&c, "acc2", acc2, n, es) : NULL;
    const void *gr = emu__dense(&c, "grad", grad, n, es);
    if (c.code) return c.code;
    emu__start(&c);
    for (int i = 0; i < n_scalars; i++) h[i] = emu__get(t, hp[i], 0);
    if (kind == 0) {
        double lr = h[0];
        if (t == DF_FLOAT) {
            float a = (float)lr, *wf = (float *)w;
            const float *gf = (const float *)gr;
            for (int64_t i = 0; i < n; i++) wf[i] -= a * gf[i];
        } else {
            for (int64_t i = 0; i < n; i++) emu__set(t, w, i, emu__get(t, w, i) - lr * emu__get(t, gr, i));
        }
    } else if (kind == 1) {
        double lr = h[0], mom = h[1];
        for (int64_t i = 0; i < n; i++) {
            double gi = emu__get(t, gr, i), a = emu__get(t, m, i) * mom + gi;
            emu__set(t, m, i, a);
            double wi = emu__get(t, w, i);
            wi -= nesterov ? (gi * lr + a * mom * lr) : a * lr;
            emu__set(t, w, i, wi);
        }
    } else {
        double b1p = h[0], b2p = h[1], lr = h[2], b1 = h[3], b2 = h[4], eps = h[5];
        double alpha = lr * sqrt(1 - b2p) / (1 - b1p);
        if (t == DF_FLOAT && !nesterov) {
            float *wf = (float *)w, *mf = (float *)m, *vf = (float *)v;
            const float *gf = (const float *)gr;
            float fb1 = (float)b1, fb2 = (float)b2, fa = (float)alpha, fe = (float)eps;
            for (int64_t i = 0; i < n; i++) {
                mf[i] += (gf[i] - mf[i]) * (1 - fb1);
                vf[i] += (gf[i] * gf[i] - vf[i]) * (1 - fb2);
                wf[i] -= fa * mf[i] / (sqrtf(vf[i]) + fe);
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                double gi = emu__get(t, gr, i), mi = emu__get(t, m, i), vi = emu__get(t, v, i);
                mi += (gi - mi) * (1 - b1);
                vi += (gi * gi - vi) * (1 - b2);
                emu__set(t, m, i, mi);
                emu__set(t, v, i, vi);
                double step = nesterov ? (mi * b1 + (1 - b1) * gi) : mi;
                emu__set(t, w, i, emu__get(t, w, i) - alpha * step / (sqrt(vi) + eps));
            }
        }
    }
    return emu__finish(&c);
}

/* ==========================================================================================
   13. CONVOLUTION AND POOLING                                                     >>emu-conv
   NHWC, filters HWIO. Output pixel (oy, ox) reads input row oy*stride_h - pad_top + ky*dil_h
   (and the same across); taps outside the image are zeros. Each output element is summed in
   float64 over its taps, then rounded once. The launchers ask for a workspace whatever the
   geometry (so dataflow.c's workspace path is always exercised), check it as dataflow_cuda.cu
   checks its own (present, aligned to the type) and leave garbage in it. Pooling follows
   dataflow.c's loops in type t: a window clipped to the image, max with NaN winning (-inf
   for an empty window), average = sum * (1 / count) (0 for an empty window); MaxPoolGrad
   sends each gradient to the window's first input equal to the pooled max (NaN matching NaN).
   ========================================================================================== */
static int64_t emu__conv_scratch(const df_cuda_conv *p) {
    int64_t most = p->c > p->oc ? p->c : p->oc;
    return most > 1 ? most : 1;
}
size_t df_cuda_conv2d_workspace(const df_cuda_conv *p) {
    if (!p) return 0;
    int64_t n = emu__conv_scratch(p);
    return n > (int64_t)(SIZE_MAX / 16) ? SIZE_MAX : (size_t)n * sizeof(double);
}

/* Checks the geometry (pool: windows; oc and dilations unused). Element counts of x [n,h,w,c],
   filter [kh,kw,c,oc], y [n,oh,ow,oc or c] in *nx, *nf, *ny. */
static int emu__conv_geometry(emu__call *c, const df_cuda_conv *p, int pool, int64_t *nx, int64_t *nf, int64_t *ny) {
    if (!p) { EMU_BAD(c, "the geometry p is NULL"); return 0; }
    const char *names[] = {"n", "h", "w", "c", "oh", "ow", "pad_top", "pad_left"};
    int64_t vals[] = {p->n, p->h, p->w, p->c, p->oh, p->ow, p->pad_top, p->pad_left};
    for (int i = 0; i < 8; i++) if (!emu__nonneg(c, names[i], vals[i])) return 0;
    if (p->kh < 1 || p->kw < 1 || p->stride_h < 1 || p->stride_w < 1 || (!pool && (p->dil_h < 1 || p->dil_w < 1 || p->oc < 0))) {
        EMU_BAD(c, "window %lldx%lld, strides %lldx%lld%s must be at least 1", (long long)p->kh, (long long)p->kw,
                (long long)p->stride_h, (long long)p->stride_w, pool ? "" : " and dilations (and oc at least 0)");
        return 0;
    }
    if (pool && (p->dil_h > 1 || p->dil_w > 1)) {
        EMU_BAD(c, "pooling has no dilations (got %lldx%lld)", (long long)p->dil_h, (long long)p->dil_w);
        return 0;
    }
    int64_t out_c = pool ? p->c : p->oc;
    *nx = emu__mul(c, emu__mul(c, emu__mul(c, p->n, p->h), p->w), p->c);
    *nf = pool ? 0 : emu__mul(c, emu__mul(c, emu__mul(c, p->kh, p->kw), p->c), p->oc);
    *ny = emu__mul(c, emu__mul(c, emu__mul(c, p->n, p->oh), p->ow), out_c);
    /* every index below is a sum of products of these: keep them far from overflow */
    int64_t bound = (int64_t)1 << 40;
    if (!c->code && (*nx > bound || *nf > bound || *ny > bound || p->kh > bound || p->kw > bound || p->stride_h > bound ||
                     p->stride_w > bound || p->dil_h > bound || p->dil_w > bound || p->pad_top > bound || p->pad_left > bound))
        EMU_BAD(c, "the geometry is too large to emulate");
    return !c->code;
}
/* The workspace's host address, checked; *acc gets host scratch for one pixel's sums. */
static void *emu__conv_workspace(emu__call *c, df_dtype t, const df_cuda_conv *p, void *workspace, double **acc) {
    int64_t bytes = (int64_t)df_cuda_conv2d_workspace(p);
    *acc = NULL;
    if (c->code) return NULL;
    if (!workspace) { EMU_BAD(c, "workspace is NULL; df_cuda_conv2d_workspace asks for %lld bytes", (long long)bytes); return NULL; }
    void *ws = emu__aligned(c, "workspace", workspace, df_dtype_size(t)) ? emu__span(c, "workspace", workspace, 0, bytes) : NULL;
    if (!ws) return NULL;
    if (!(*acc = (double *)malloc((size_t)emu__conv_scratch(p) * sizeof(double)))) {
        emu__fail(c, DF_RESOURCE_EXHAUSTED, "out of host memory for the emulation's sums");
        return NULL;
    }
    return ws;
}
static df_code emu__conv_finish(emu__call *c, const df_cuda_conv *p, void *ws, double *acc) {
    memset(ws, EMU_POISON, df_cuda_conv2d_workspace(p));
    free(acc);
    return emu__finish(c);
}
static double emu__load_conv(df_dtype t, const void *p, int64_t i, int tf32) {
    return t == DF_DOUBLE ? ((const double *)p)[i] : (double)(tf32 ? emu__tf32(((const float *)p)[i]) : ((const float *)p)[i]);
}

df_code df_cuda_conv2d(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *filter, void *y,
                       void *workspace, int tf32, df_status *st) {
    emu__call c;
    int64_t nx, nf, ny;
    if (!emu__begin(&c, g, st, "df_cuda_conv2d")) return c.code;
    if (!emu__float_type(&c, t) || !emu__conv_geometry(&c, p, 0, &nx, &nf, &ny) || ny == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = nx ? emu__dense(&c, "x", x, nx, es) : NULL;
    const void *fs = nf ? emu__dense(&c, "filter", filter, nf, es) : NULL;
    void *ys = emu__dense(&c, "y", y, ny, es);
    double *acc;
    void *ws = emu__conv_workspace(&c, t, p, workspace, &acc);
    if (c.code) return c.code;
    int use_tf32 = tf32 && t == DF_FLOAT;
    emu__start(&c);
    for (int64_t b = 0; b < p->n; b++)
        for (int64_t oy = 0; oy < p->oh; oy++)
            for (int64_t ox = 0; ox < p->ow; ox++) {
                for (int64_t o = 0; o < p->oc; o++) acc[o] = 0;
                for (int64_t ky = 0; ky < p->kh && nx && nf; ky++) {
                    int64_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
                    if (iy < 0 || iy >= p->h) continue;
                    for (int64_t kx = 0; kx < p->kw; kx++) {
                        int64_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
                        if (ix < 0 || ix >= p->w) continue;
                        for (int64_t ci = 0; ci < p->c; ci++) {
                            double xv = emu__load_conv(t, xs, ((b * p->h + iy) * p->w + ix) * p->c + ci, use_tf32);
                            int64_t frow = ((ky * p->kw + kx) * p->c + ci) * p->oc;
                            for (int64_t o = 0; o < p->oc; o++) acc[o] += xv * emu__load_conv(t, fs, frow + o, use_tf32);
                        }
                    }
                }
                int64_t at = ((b * p->oh + oy) * p->ow + ox) * p->oc;
                for (int64_t o = 0; o < p->oc; o++) emu__set(t, ys, at + o, acc[o]);
            }
    return emu__conv_finish(&c, p, ws, acc);
}

df_code df_cuda_conv2d_bp_input(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *filter, const void *dy,
                                void *dx, void *workspace, int tf32, df_status *st) {
    emu__call c;
    int64_t nx, nf, ny;
    if (!emu__begin(&c, g, st, "df_cuda_conv2d_bp_input")) return c.code;
    if (!emu__float_type(&c, t) || !emu__conv_geometry(&c, p, 0, &nx, &nf, &ny) || nx == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *fs = nf ? emu__dense(&c, "filter", filter, nf, es) : NULL;
    const void *dys = ny ? emu__dense(&c, "dy", dy, ny, es) : NULL;
    void *dxs = emu__dense(&c, "dx", dx, nx, es);
    double *acc;
    void *ws = emu__conv_workspace(&c, t, p, workspace, &acc);
    if (c.code) return c.code;
    int use_tf32 = tf32 && t == DF_FLOAT;
    emu__start(&c);
    /* dx[b, iy, ix, ci] gathers the taps whose output pixel (oy, ox) reads it */
    for (int64_t b = 0; b < p->n; b++)
        for (int64_t iy = 0; iy < p->h; iy++)
            for (int64_t ix = 0; ix < p->w; ix++) {
                for (int64_t ci = 0; ci < p->c; ci++) acc[ci] = 0;
                for (int64_t ky = 0; ky < p->kh && nf && ny; ky++) {
                    int64_t ny_ = iy + p->pad_top - ky * p->dil_h;
                    if (ny_ < 0 || ny_ % p->stride_h || ny_ / p->stride_h >= p->oh) continue;
                    int64_t oy = ny_ / p->stride_h;
                    for (int64_t kx = 0; kx < p->kw; kx++) {
                        int64_t nx_ = ix + p->pad_left - kx * p->dil_w;
                        if (nx_ < 0 || nx_ % p->stride_w || nx_ / p->stride_w >= p->ow) continue;
                        int64_t ox = nx_ / p->stride_w, drow = ((b * p->oh + oy) * p->ow + ox) * p->oc;
                        for (int64_t ci = 0; ci < p->c; ci++) {
                            int64_t frow = ((ky * p->kw + kx) * p->c + ci) * p->oc;
                            double s = 0;
                            for (int64_t o = 0; o < p->oc; o++)
                                s += emu__load_conv(t, fs, frow + o, use_tf32) * emu__load_conv(t, dys, drow + o, use_tf32);
                            acc[ci] += s;
                        }
                    }
                }
                int64_t at = ((b * p->h + iy) * p->w + ix) * p->c;
                for (int64_t ci = 0; ci < p->c; ci++) emu__set(t, dxs, at + ci, acc[ci]);
            }
    return emu__conv_finish(&c, p, ws, acc);
}

df_code df_cuda_conv2d_bp_filter(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *dy,
                                 void *dfilter, void *workspace, int tf32, df_status *st) {
    emu__call c;
    int64_t nx, nf, ny;
    if (!emu__begin(&c, g, st, "df_cuda_conv2d_bp_filter")) return c.code;
    if (!emu__float_type(&c, t) || !emu__conv_geometry(&c, p, 0, &nx, &nf, &ny) || nf == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = nx ? emu__dense(&c, "x", x, nx, es) : NULL;
    const void *dys = ny ? emu__dense(&c, "dy", dy, ny, es) : NULL;
    void *dfs = emu__dense(&c, "dfilter", dfilter, nf, es);
    double *acc;
    void *ws = emu__conv_workspace(&c, t, p, workspace, &acc);
    if (c.code) return c.code;
    int use_tf32 = tf32 && t == DF_FLOAT;
    emu__start(&c);
    for (int64_t ky = 0; ky < p->kh; ky++)
        for (int64_t kx = 0; kx < p->kw; kx++)
            for (int64_t ci = 0; ci < p->c; ci++) {
                for (int64_t o = 0; o < p->oc; o++) acc[o] = 0;
                for (int64_t b = 0; b < p->n && nx && ny; b++)
                    for (int64_t oy = 0; oy < p->oh; oy++) {
                        int64_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
                        if (iy < 0 || iy >= p->h) continue;
                        for (int64_t ox = 0; ox < p->ow; ox++) {
                            int64_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
                            if (ix < 0 || ix >= p->w) continue;
                            double xv = emu__load_conv(t, xs, ((b * p->h + iy) * p->w + ix) * p->c + ci, use_tf32);
                            int64_t drow = ((b * p->oh + oy) * p->ow + ox) * p->oc;
                            for (int64_t o = 0; o < p->oc; o++) acc[o] += xv * emu__load_conv(t, dys, drow + o, use_tf32);
                        }
                    }
                int64_t at = ((ky * p->kw + kx) * p->c + ci) * p->oc;
                for (int64_t o = 0; o < p->oc; o++) emu__set(t, dfs, at + o, acc[o]);
            }
    return emu__conv_finish(&c, p, ws, acc);
}

/* The part [*y0, *y1) x [*x0, *x1) of window (oy, ox) inside the image. */
static void emu__window(const df_cuda_conv *p, int64_t oy, int64_t ox, int64_t *y0, int64_t *y1, int64_t *x0, int64_t *x1) {
    int64_t ty = oy * p->stride_h - p->pad_top, tx = ox * p->stride_w - p->pad_left;
    *y0 = ty > 0 ? ty : 0;
    *y1 = ty + p->kh < p->h ? ty + p->kh : p->h;
    *x0 = tx > 0 ? tx : 0;
    *x1 = tx + p->kw < p->w ? tx + p->kw : p->w;
}
#define EMU__POOL(T)                                                                              \
    static void emu__pool_##T(const df_cuda_conv *p, int max, const T *x, T *y) {                 \
        for (int64_t b = 0; b < p->n; b++)                                                        \
            for (int64_t oy = 0; oy < p->oh; oy++)                                                \
                for (int64_t ox = 0; ox < p->ow; ox++) {                                          \
                    int64_t y0, y1, x0, x1;                                                       \
                    emu__window(p, oy, ox, &y0, &y1, &x0, &x1);                                   \
                    T *o = y + ((b * p->oh + oy) * p->ow + ox) * p->c;                            \
                    for (int64_t ci = 0; ci < p->c; ci++) {                                       \
                        if (y0 >= y1 || x0 >= x1) { o[ci] = max ? -(T)INFINITY : 0; continue; }   \
                        T s = x[((b * p->h + y0) * p->w + x0) * p->c + ci];                       \
                        for (int64_t yy = y0; yy < y1; yy++)                                      \
                            for (int64_t xx = x0; xx < x1; xx++) {                                \
                                if (yy == y0 && xx == x0) continue;                               \
                                T v = x[((b * p->h + yy) * p->w + xx) * p->c + ci];               \
                                if (!max) s += v;                                                 \
                                else if (v > s || v != v) s = v;                                  \
                            }                                                                     \
                        if (!max) s *= (T)1 / (T)((y1 - y0) * (x1 - x0));                         \
                        o[ci] = s;                                                                \
                    }                                                                             \
                }                                                                                 \
    }                                                                                             \
    static void emu__max_pool_grad_##T(const df_cuda_conv *p, const T *x, const T *y, const T *dy, T *dx) { \
        memset(dx, 0, (size_t)(p->n * p->h * p->w * p->c) * sizeof(T));                            \
        for (int64_t b = 0; b < p->n; b++)                                                        \
            for (int64_t oy = 0; oy < p->oh; oy++)                                                \
                for (int64_t ox = 0; ox < p->ow; ox++) {                                          \
                    int64_t y0, y1, x0, x1, at = ((b * p->oh + oy) * p->ow + ox) * p->c;          \
                    emu__window(p, oy, ox, &y0, &y1, &x0, &x1);                                   \
                    for (int64_t ci = 0; ci < p->c; ci++) {                                       \
                        T m = y[at + ci];                                                         \
                        int found = 0;                                                            \
                        for (int64_t yy = y0; yy < y1 && !found; yy++)                            \
                            for (int64_t xx = x0; xx < x1 && !found; xx++) {                      \
                                int64_t i = ((b * p->h + yy) * p->w + xx) * p->c + ci;            \
                                if (x[i] == m || (x[i] != x[i] && m != m)) { dx[i] += dy[at + ci]; found = 1; } \
                            }                                                                     \
                    }                                                                             \
                }                                                                                 \
    }                                                                                             \
    static void emu__avg_pool_grad_##T(const df_cuda_conv *p, const T *dy, T *dx) {              \
        memset(dx, 0, (size_t)(p->n * p->h * p->w * p->c) * sizeof(T));                            \
        for (int64_t b = 0; b < p->n; b++)                                                        \
            for (int64_t oy = 0; oy < p->oh; oy++)                                                \
                for (int64_t ox = 0; ox < p->ow; ox++) {                                          \
                    int64_t y0, y1, x0, x1, at = ((b * p->oh + oy) * p->ow + ox) * p->c;          \
                    emu__window(p, oy, ox, &y0, &y1, &x0, &x1);                                   \
                    if (y0 >= y1 || x0 >= x1) continue;                                           \
                    T inv = (T)1 / (T)((y1 - y0) * (x1 - x0));                                    \
                    for (int64_t yy = y0; yy < y1; yy++)                                          \
                        for (int64_t xx = x0; xx < x1; xx++)                                      \
                            for (int64_t ci = 0; ci < p->c; ci++)                                 \
                                dx[((b * p->h + yy) * p->w + xx) * p->c + ci] += dy[at + ci] * inv; \
                }                                                                                 \
    }
EMU__POOL(float)
EMU__POOL(double)

df_code df_cuda_pool(df_cuda *g, df_dtype t, const df_cuda_conv *p, int max, const void *x, void *y, df_status *st) {
    emu__call c;
    int64_t nx, nf, ny;
    if (!emu__begin(&c, g, st, "df_cuda_pool")) return c.code;
    if (!emu__float_type(&c, t) || !emu__conv_geometry(&c, p, 1, &nx, &nf, &ny) || ny == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = nx ? emu__dense(&c, "x", x, nx, es) : NULL;
    void *ys = emu__dense(&c, "y", y, ny, es);
    if (c.code) return c.code;
    emu__start(&c);                /* (an empty image, xs NULL: every window is empty, x is not read) */
    if (t == DF_FLOAT) emu__pool_float(p, max, (const float *)xs, (float *)ys);
    else emu__pool_double(p, max, (const double *)xs, (double *)ys);
    return emu__finish(&c);
}

df_code df_cuda_max_pool_grad(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *y,
                              const void *dy, void *dx, df_status *st) {
    emu__call c;
    int64_t nx, nf, ny;
    if (!emu__begin(&c, g, st, "df_cuda_max_pool_grad")) return c.code;
    if (!emu__float_type(&c, t) || !emu__conv_geometry(&c, p, 1, &nx, &nf, &ny) || nx == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = emu__dense(&c, "x", x, nx, es);
    const void *ys = ny ? emu__dense(&c, "y", y, ny, es) : NULL;
    const void *dys = ny ? emu__dense(&c, "dy", dy, ny, es) : NULL;
    void *dxs = emu__dense(&c, "dx", dx, nx, es);
    if (c.code) return c.code;
    emu__start(&c);
    if (t == DF_FLOAT) emu__max_pool_grad_float(p, (const float *)xs, (const float *)ys, (const float *)dys, (float *)dxs);
    else emu__max_pool_grad_double(p, (const double *)xs, (const double *)ys, (const double *)dys, (double *)dxs);
    return emu__finish(&c);
}

df_code df_cuda_avg_pool_grad(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *dy, void *dx, df_status *st) {
    emu__call c;
    int64_t nx, nf, ny;
    if (!emu__begin(&c, g, st, "df_cuda_avg_pool_grad")) return c.code;
    if (!emu__float_type(&c, t) || !emu__conv_geometry(&c, p, 1, &nx, &nf, &ny) || nx == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *dys = ny ? emu__dense(&c, "dy", dy, ny, es) : NULL;
    void *dxs = emu__dense(&c, "dx", dx, nx, es);
    if (c.code) return c.code;
    emu__start(&c);
    if (t == DF_FLOAT) emu__avg_pool_grad_float(p, (const float *)dys, (float *)dxs);
    else emu__avg_pool_grad_double(p, (const double *)dys, (double *)dxs);
    return emu__finish(&c);
}

/* CUDA graphs are not emulated: a capture is refused, and dataflow.c runs the work as usual. */
df_code df_cuda_capture_begin(df_cuda *g, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_capture_begin")) return c.code;
    emu__count(&emu__n_captures_refused);
    return df_status_set(st, DF_UNIMPLEMENTED, "df_cuda_capture_begin: the host emulation of the GPU has no CUDA graphs");
}
df_code df_cuda_capture_end(df_cuda *g, void **graph, df_status *st) {
    emu__call c;
    if (graph) *graph = NULL;
    if (!emu__begin(&c, g, st, "df_cuda_capture_end")) return c.code;
    return df_status_set(st, DF_FAILED_PRECONDITION, "df_cuda_capture_end: no capture was begun");
}
df_code df_cuda_graph_launch(df_cuda *g, void *graph, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_graph_launch")) return c.code;
    (void)graph;
    return df_status_set(st, DF_INVALID_ARGUMENT, "df_cuda_graph_launch: the host emulation makes no graphs");
}
void df_cuda_graph_free(df_cuda *g, void *graph) { (void)g; (void)graph; }
df_code df_cuda_capture_loop_begin(df_cuda *g, const void *pred, df_status *st) {
    (void)pred;
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_capture_loop_begin")) return c.code;
    return df_status_set(st, DF_FAILED_PRECONDITION, "df_cuda_capture_loop_begin: no capture was begun");
}
df_code df_cuda_capture_loop_end(df_cuda *g, const void *pred, df_status *st) {
    (void)pred;
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_capture_loop_end")) return c.code;
    return df_status_set(st, DF_FAILED_PRECONDITION, "df_cuda_capture_loop_end: no loop is being captured");
}

df_code df_cuda_cumprod(df_cuda *g, df_dtype t, const void *x, void *y, int64_t outer, int64_t len, int64_t inner,
                        int exclusive, int reverse, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_cumprod")) return c.code;
    if (!emu__float_type(&c, t) || !emu__nonneg(&c, "outer", outer) || !emu__nonneg(&c, "len", len) || !emu__nonneg(&c, "inner", inner))
        return c.code;
    int64_t n = emu__mul(&c, emu__mul(&c, outer, len), inner);
    if (c.code || n == 0) return c.code;
    size_t es = df_dtype_size(t);
    const void *xs = emu__dense(&c, "x", x, n, es);
    void *ys = emu__dense(&c, "y", y, n, es);
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t q = 0; q < outer; q++)
        for (int64_t j = 0; j < inner; j++) {
            double p = 1;
            for (int64_t k0 = 0; k0 < len; k0++) {
                int64_t k = reverse ? len - 1 - k0 : k0, at = (q * len + k) * inner + j;
                double v = t == DF_FLOAT ? ((const float *)xs)[at] : ((const double *)xs)[at];
                if (!exclusive) p *= v;
                if (t == DF_FLOAT) ((float *)ys)[at] = (float)p; else ((double *)ys)[at] = p;
                if (exclusive) p *= v;
            }
        }
    return emu__finish(&c);
}

df_code df_cuda_one_hot(df_cuda *g, size_t elem_size, const void *indices, df_dtype index_t, void *y, int64_t outer,
                        int64_t depth, int64_t inner, const void *host_on, const void *host_off, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_one_hot")) return c.code;
    if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) { EMU_BAD(&c, "element size %zu is not 1, 2, 4 or 8", elem_size); return c.code; }
    if (!emu__index_type(&c, "index_t", index_t) || !emu__nonneg(&c, "outer", outer) || !emu__nonneg(&c, "depth", depth) ||
        !emu__nonneg(&c, "inner", inner)) return c.code;
    int64_t n = emu__mul(&c, emu__mul(&c, outer, depth), inner), n_ix = emu__mul(&c, outer, inner);
    if (c.code || n == 0) return c.code;
    if (!host_on || !host_off) { EMU_BAD(&c, "NULL on or off value"); return c.code; }
    const void *ix = emu__dense(&c, "indices", indices, n_ix, df_dtype_size(index_t));
    char *ys = (char *)emu__dense(&c, "y", y, n, elem_size);
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t t = 0; t < n; t++) {
        int64_t j = t % inner, k = (t / inner) % depth, q = t / (inner * depth);
        memcpy(ys + t * (int64_t)elem_size, emu__index_at(index_t, ix, q * inner + j) == k ? host_on : host_off, elem_size);
    }
    return emu__finish(&c);
}

/* ==========================================================================================
   14. DEPTHWISE CONVOLUTION AND BATCH NORM                                          >>emu-nn
   Depthwise convolution (NHWC, filter [kh,kw,c,m]) as dataflow_cuda.cu's direct kernel: one
   result element at a time, its sum in the type in the order of the window. The batch norm
   forward and gradient: per-channel sums in double, the elements in float, as the CPU's.
   ========================================================================================== */
#define EMU__DEPTHWISE(T)                                                                           \
    static void emu__depthwise_##T(int which, const df_cuda_conv *p, int64_t m, const T *a, const T *b, T *out, \
                                   int64_t total) {                                                 \
        for (int64_t e = 0; e < total; e++) {                                                       \
            T acc = 0;                                                                              \
            if (which == 0) {                                                                       \
                int64_t oc = e % p->oc, r = e / p->oc, ox = r % p->ow, oy = r / p->ow % p->oh, n = r / p->ow / p->oh; \
                int64_t ci = oc / m, k = oc % m;                                                    \
                for (int64_t ky = 0; ky < p->kh; ky++) {                                            \
                    int64_t iy = oy * p->stride_h + ky * p->dil_h - p->pad_top;                     \
                    if (iy < 0 || iy >= p->h) continue;                                             \
                    for (int64_t kx = 0; kx < p->kw; kx++) {                                        \
                        int64_t ix = ox * p->stride_w + kx * p->dil_w - p->pad_left;                \
                        if (ix < 0 || ix >= p->w) continue;                                         \
                        acc += a[((n * p->h + iy) * p->w + ix) * p->c + ci] * b[((ky * p->kw + kx) * p->c + ci) * m + k]; \
                    }                                                                               \
                }                                                                                   \
            } else if (which == 1) {                                                                \
                int64_t ci = e % p->c, r = e / p->c, x = r % p->w, y = r / p->w % p->h, n = r / p->w / p->h; \
                for (int64_t ky = 0; ky < p->kh; ky++) {                                            \
                    int64_t ty = y + p->pad_top - ky * p->dil_h;                                    \
                    if (ty < 0 || ty % p->stride_h || ty / p->stride_h >= p->oh) continue;          \
                    int64_t oy = ty / p->stride_h;                                                  \
                    for (int64_t kx = 0; kx < p->kw; kx++) {                                        \
                        int64_t tx = x + p->pad_left - kx * p->dil_w;                               \
                        if (tx < 0 || tx % p->stride_w || tx / p->stride_w >= p->ow) continue;      \
                        int64_t ox = tx / p->stride_w;                                              \
                        for (int64_t k = 0; k < m; k++)                                             \
                            acc += b[((n * p->oh + oy) * p->ow + ox) * p->oc + ci * m + k] *        \
                                   a[((ky * p->kw + kx) * p->c + ci) * m + k];                       \
                    }                                                                               \
                }                                                                                   \
            } else {                                                                                \
                int64_t k = e % m, ci = e / m % p->c, kx = e / m / p->c % p->kw, ky = e / m / p->c / p->kw; \
                for (int64_t n = 0; n < p->n; n++)                                                  \
                    for (int64_t oy = 0; oy < p->oh; oy++) {                                        \
                        int64_t iy = oy * p->stride_h + ky * p->dil_h - p->pad_top;                 \
                        if (iy < 0 || iy >= p->h) continue;                                         \
                        for (int64_t ox = 0; ox < p->ow; ox++) {                                    \
                            int64_t ix = ox * p->stride_w + kx * p->dil_w - p->pad_left;            \
                            if (ix < 0 || ix >= p->w) continue;                                     \
                            acc += a[((n * p->h + iy) * p->w + ix) * p->c + ci] *                   \
                                   b[((n * p->oh + oy) * p->ow + ox) * p->oc + ci * m + k];          \
                        }                                                                           \
                    }                                                                               \
            }                                                                                       \
            out[e] = acc;                                                                           \
        }                                                                                           \
    }
EMU__DEPTHWISE(float)
EMU__DEPTHWISE(double)

df_code df_cuda_depthwise_conv2d(df_cuda *g, int which, df_dtype t, const df_cuda_conv *p, int64_t m, const void *a,
                                 const void *b, void *out, df_status *st) {
    emu__call c;
    int64_t nx, nf, ny;
    if (!emu__begin(&c, g, st, "df_cuda_depthwise_conv2d")) return c.code;
    if (!emu__float_type(&c, t) || !emu__conv_geometry(&c, p, 0, &nx, &nf, &ny)) return c.code;
    if (which < 0 || which > 2) return EMU_BAD(&c, "which is %d (0, 1 or 2)", which);
    if (m < 1 || p->oc != emu__mul(&c, p->c, m)) return EMU_BAD(&c, "oc %lld is not c %lld times m %lld", (long long)p->oc, (long long)p->c, (long long)m);
    nf = p->kh * p->kw * p->c * m;
    int64_t total = which == 0 ? ny : which == 1 ? nx : nf;
    if (total == 0) return c.code;
    size_t es = df_dtype_size(t);
    int64_t na = which == 1 ? nf : nx, nb = which == 0 ? nf : ny;
    const void *as = na ? emu__dense(&c, "a", a, na, es) : NULL;
    const void *bs = nb ? emu__dense(&c, "b", b, nb, es) : NULL;
    void *os = emu__dense(&c, "out", out, total, es);
    if (c.code) return c.code;
    emu__start(&c);
    if (t == DF_FLOAT) emu__depthwise_float(which, p, m, (const float *)as, (const float *)bs, (float *)os, total);
    else emu__depthwise_double(which, p, m, (const double *)as, (const double *)bs, (double *)os, total);
    return emu__finish(&c);
}

df_code df_cuda_batch_norm(df_cuda *g, int train, const float *x, const float *scale, const float *offset,
                           const float *mean, const float *variance, float *y, float *batch_mean, float *batch_variance,
                           float *reserve_1, float *reserve_2, int64_t outer, int64_t ch, int64_t inner, float epsilon,
                           float factor, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_batch_norm")) return c.code;
    if (!emu__nonneg(&c, "outer", outer) || !emu__nonneg(&c, "c", ch) || !emu__nonneg(&c, "inner", inner) || ch == 0) return c.code;
    int64_t total = emu__mul(&c, emu__mul(&c, outer, ch), inner);
    int running = !train || factor != 1.0f;
    const float *xs = total ? (const float *)emu__dense(&c, "x", x, total, 4) : NULL;
    float *ys = total ? (float *)emu__dense(&c, "y", y, total, 4) : NULL;
    const float *sc = (const float *)emu__dense(&c, "scale", scale, ch, 4);
    const float *of = (const float *)emu__dense(&c, "offset", offset, ch, 4);
    const float *me = running ? (const float *)emu__dense(&c, "mean", mean, ch, 4) : NULL;
    const float *va = running ? (const float *)emu__dense(&c, "variance", variance, ch, 4) : NULL;
    float *bm = (float *)emu__dense(&c, "batch_mean", batch_mean, ch, 4);
    float *bv = (float *)emu__dense(&c, "batch_variance", batch_variance, ch, 4);
    float *r1 = (float *)emu__dense(&c, "reserve_1", reserve_1, ch, 4);
    float *r2 = (float *)emu__dense(&c, "reserve_2", reserve_2, ch, 4);
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t k = 0; k < ch; k++) {
        if (!train) { bm[k] = r1[k] = me[k]; bv[k] = r2[k] = va[k]; continue; }
        int64_t rest = outer * inner;
        double s = 0, q = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) s += xs[(o * ch + k) * inner + i];
        float inv = 1.0f / (float)rest, mu = (float)s * inv;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) { float d = xs[(o * ch + k) * inner + i] - mu; q += d * d; }
        float bvar = (float)q * inv, adjust = (float)rest / (float)(rest > 1 ? rest - 1 : 1);
        r1[k] = mu; r2[k] = bvar;
        if (factor == 1.0f) { bm[k] = mu; bv[k] = bvar * adjust; }
        else { bm[k] = (1.0f - factor) * me[k] + factor * mu; bv[k] = (1.0f - factor) * va[k] + factor * adjust * bvar; }
    }
    for (int64_t e = 0; e < total; e++) {
        int64_t k = e / inner % ch;
        float k1 = 1.0f / sqrtf(r2[k] + epsilon) * sc[k];
        ys[e] = (xs[e] - r1[k]) * k1 + of[k];
    }
    return emu__finish(&c);
}

df_code df_cuda_batch_norm_grad(df_cuda *g, int train, const float *dy, const float *x, const float *scale, const float *mean,
                                const float *variance, float *dx, float *scale_backprop, float *offset_backprop,
                                int64_t outer, int64_t ch, int64_t inner, float epsilon, df_status *st) {
    emu__call c;
    if (!emu__begin(&c, g, st, "df_cuda_batch_norm_grad")) return c.code;
    if (!emu__nonneg(&c, "outer", outer) || !emu__nonneg(&c, "c", ch) || !emu__nonneg(&c, "inner", inner) || ch == 0) return c.code;
    int64_t total = emu__mul(&c, emu__mul(&c, outer, ch), inner), rest = outer * inner;
    const float *dys = total ? (const float *)emu__dense(&c, "dy", dy, total, 4) : NULL;
    const float *xs = total ? (const float *)emu__dense(&c, "x", x, total, 4) : NULL;
    float *dxs = total ? (float *)emu__dense(&c, "dx", dx, total, 4) : NULL;
    const float *sc = (const float *)emu__dense(&c, "scale", scale, ch, 4);
    const float *mu = (const float *)emu__dense(&c, "mean", mean, ch, 4);
    const float *va = (const float *)emu__dense(&c, "variance", variance, ch, 4);
    float *ds = (float *)emu__dense(&c, "scale_backprop", scale_backprop, ch, 4);
    float *db = (float *)emu__dense(&c, "offset_backprop", offset_backprop, ch, 4);
    if (c.code) return c.code;
    emu__start(&c);
    for (int64_t k = 0; k < ch; k++) {
        float coef0 = 1.0f / sqrtf(va[k] + epsilon);
        double s = 0, q = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t e = (o * ch + k) * inner + i;
                s += dys[e];
                q += dys[e] * ((xs[e] - mu[k]) * coef0);
            }
        db[k] = (float)s;
        ds[k] = (float)q;
    }
    for (int64_t e = 0; e < total; e++) {
        int64_t k = e / inner % ch;
        float coef0 = 1.0f / sqrtf(va[k] + epsilon), coef1 = sc[k] * coef0;
        if (!train) { dxs[e] = dys[e] * coef1; continue; }
        float inv = 1.0f / (float)(rest ? rest : 1), mdy = db[k] * inv, q = coef0 * (ds[k] * inv);
        dxs[e] = coef1 * ((dys[e] - mdy) - (xs[e] - mu[k]) * q);
    }
    return emu__finish(&c);
}
