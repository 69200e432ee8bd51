/* Tests of the BFC allocator (section >>bfc), through the public API only. */
#include "harness.h"
#include <stdint.h>
#include <pthread.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static df_bfc *new_bfc(size_t limit, int growth, int gc) {
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = limit;
    o.allow_growth = growth;
    o.garbage_collection = gc;
    return df_bfc_new(&o);
}

static df_alloc_stats stats_of(df_bfc *a) {
    df_alloc_stats s;
    df_bfc_get_stats(a, &s);
    return s;
}

static size_t round256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Counts the occurrences of needle in text. */
static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* ---- a sys_alloc that records regions, so tests can see them ---- */
#define MAX_TRACKED 64
typedef struct tracker {
    void  *ptr[MAX_TRACKED];
    size_t bytes[MAX_TRACKED];
    int    n, n_allocs, n_frees, misalign;   /* misalign: hand out base + misalign */
    size_t total, peak;
} tracker;

static void *tracked_alloc(size_t bytes, void *user) {
    tracker *t = (tracker *)user;
    if (t->n == MAX_TRACKED) return NULL;
    char *raw = (char *)aligned_alloc(4096, ((bytes + (size_t)t->misalign) + 4095) & ~(size_t)4095);
    if (!raw) return NULL;
    t->ptr[t->n] = raw + t->misalign;
    t->bytes[t->n] = bytes;
    t->n++;
    t->n_allocs++;
    t->total += bytes;
    if (t->total > t->peak) t->peak = t->total;
    return raw + t->misalign;
}

static void tracked_free(void *p, size_t bytes, void *user) {
    tracker *t = (tracker *)user;
    for (int i = 0; i < t->n; i++) {
        if (t->ptr[i] == p) {
            if (t->bytes[i] != bytes) df_test_fail(__FILE__, __LINE__, "sys_free size mismatch");
            free((char *)p - t->misalign);
            t->total -= bytes;
            t->ptr[i] = t->ptr[t->n - 1];
            t->bytes[i] = t->bytes[t->n - 1];
            t->n--;
            t->n_frees++;
            return;
        }
    }
    df_test_fail(__FILE__, __LINE__, "sys_free of a pointer never handed out: %p", p);
}

static df_bfc *new_tracked(tracker *t, size_t limit, int growth, int gc) {
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    memset(t, 0, sizeof *t);
    o.memory_limit = limit;
    o.allow_growth = growth;
    o.garbage_collection = gc;
    o.sys_alloc = tracked_alloc;
    o.sys_free = tracked_free;
    o.user = t;
    return df_bfc_new(&o);
}

static int inside_a_region(const tracker *t, const void *p, size_t n) {
    for (int i = 0; i < t->n; i++) {
        uintptr_t b = (uintptr_t)t->ptr[i], x = (uintptr_t)p;
        if (x >= b && x + n <= b + t->bytes[i]) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */

DF_TEST(bfc_rounding_and_zero) {
    df_bfc *a = df_bfc_new(NULL);
    CHECK(a != NULL);
    void *p = df_bfc_alloc(a, 4);                 /* TF AllocatedVsRequested */
    CHECK(p != NULL);
    CHECK_EQ_INT(df_bfc_allocated_size(a, p), 256);
    void *q = df_bfc_alloc(a, 256), *r = df_bfc_alloc(a, 257), *s = df_bfc_alloc(a, 100000);
    CHECK_EQ_INT(df_bfc_allocated_size(a, q), 256);
    CHECK_EQ_INT(df_bfc_allocated_size(a, r), 512);
    CHECK_EQ_INT(df_bfc_allocated_size(a, s), round256(100000));
    CHECK(df_bfc_alloc(a, 0) == NULL);            /* TF AllocateZeroBufSize */
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.num_allocs, 4);
    CHECK_EQ_INT(st.bytes_in_use, 256 + 256 + 512 + round256(100000));
    CHECK_EQ_INT(st.largest_alloc_size, round256(100000));
    CHECK_EQ_INT(st.bytes_limit, 0);              /* no limit */
    CHECK_EQ_INT(st.bytes_reserved, 2 * MiB);     /* no limit grows from 2 MiB */
    df_bfc_free(a, p); df_bfc_free(a, q); df_bfc_free(a, r); df_bfc_free(a, s);
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.peak_bytes_in_use, 256 + 256 + 512 + round256(100000));
    CHECK_EQ_INT(st.largest_free_block, 2 * MiB);
    df_bfc_free_all(a);
}

DF_TEST(bfc_null_and_huge_arguments) {
    df_alloc_stats st;
    char buf[64];
    CHECK(df_bfc_alloc(NULL, 16) == NULL);
    df_bfc_free(NULL, buf);
    CHECK_EQ_INT(df_bfc_allocated_size(NULL, buf), 0);
    memset(&st, 0x5A, sizeof st);
    df_bfc_get_stats(NULL, &st);
    CHECK_EQ_INT(st.num_allocs, 0);
    CHECK_EQ_INT(st.bytes_reserved, 0);
    df_bfc_get_stats(NULL, NULL);
    df_bfc_free_all(NULL);
    CHECK(df_bfc_summary(NULL, buf, sizeof buf) == buf);
    CHECK(df_bfc_summary(NULL, NULL, 10) == NULL);

    df_bfc *a = new_bfc(4 * MiB, 0, 0);
    df_bfc_free(a, NULL);
    CHECK_EQ_INT(df_bfc_allocated_size(a, NULL), 0);
    CHECK(df_bfc_alloc(a, SIZE_MAX) == NULL);       /* rounding would overflow */
    CHECK(df_bfc_alloc(a, SIZE_MAX - 255) == NULL);
    CHECK(df_bfc_alloc(a, SIZE_MAX / 2) == NULL);
    CHECK(df_bfc_alloc(a, 4 * MiB + 1) == NULL);    /* over the limit */
    void *p = df_bfc_alloc(a, 4 * MiB);             /* exactly the limit */
    CHECK(p != NULL);
    CHECK_EQ_INT(df_bfc_allocated_size(a, p), 4 * MiB);
    df_bfc_free(a, p);
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_limit, 4 * MiB);
    CHECK_EQ_INT(st.bytes_reserved, 4 * MiB);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    df_bfc_free_all(a);

    df_bfc *b = df_bfc_new(NULL);                   /* no limit: still refuses absurd sizes */
    CHECK(df_bfc_alloc(b, SIZE_MAX) == NULL);
    CHECK(df_bfc_alloc(b, ((size_t)1 << 62)) == NULL);
    df_bfc_free_all(b);

    df_bfc *c = new_bfc(100, 0, 0);                 /* a limit below one unit */
    CHECK(df_bfc_alloc(c, 1) == NULL);
    df_bfc_free_all(c);
}

DF_TEST(bfc_alignment) {
    df_bfc *a = df_bfc_new(NULL);
    void *ps[200];
    for (int i = 0; i < 200; i++) {
        ps[i] = df_bfc_alloc(a, (size_t)(1 + i * 997 % 50000));
        CHECK(ps[i] != NULL);
        CHECK_MSG(((uintptr_t)ps[i] & 255) == 0, "pointer %p not 256-aligned", ps[i]);
    }
    for (int i = 0; i < 200; i++) df_bfc_free(a, ps[i]);
    df_bfc_free_all(a);

    tracker t;                                      /* a sys_alloc that returns odd addresses */
    df_bfc *b = new_tracked(&t, 8 * MiB, 1, 0);
    t.misalign = 72;
    for (int i = 0; i < 200; i++) {
        ps[i] = df_bfc_alloc(b, (size_t)(1 + i * 997 % 50000));
        CHECK(ps[i] != NULL);
        CHECK(((uintptr_t)ps[i] & 255) == 0);
        CHECK(inside_a_region(&t, ps[i], df_bfc_allocated_size(b, ps[i])));
    }
    for (int i = 0; i < 200; i++) df_bfc_free(b, ps[i]);
    CHECK_EQ_INT(stats_of(b).bytes_in_use, 0);
    df_bfc_free_all(b);
    CHECK_EQ_INT(t.n, 0);
    CHECK_EQ_INT(t.n_frees, t.n_allocs);
}

/* One region of 1 MiB; sizes above the front cache's reach so frees go straight to the bins. */
DF_TEST(bfc_split_rule) {
    df_bfc *a = new_bfc(1 * MiB, 0, 0);
    char *x = (char *)df_bfc_alloc(a, 128 * KiB);   /* 1 MiB >= 2 * 128 KiB: split */
    char *guard = (char *)df_bfc_alloc(a, 32 * KiB);
    CHECK_EQ_INT(df_bfc_allocated_size(a, x), 128 * KiB);
    CHECK(guard == x + 128 * KiB);                  /* the remainder follows the front */
    df_bfc_free(a, x);                              /* a free 128 KiB hole before the guard */
    char *y = (char *)df_bfc_alloc(a, 80 * KiB);    /* 128 < 2 * 80: no split, whole hole */
    CHECK(y == x);
    CHECK_EQ_INT(df_bfc_allocated_size(a, y), 128 * KiB);
    CHECK_EQ_INT(stats_of(a).bytes_in_use, 160 * KiB);
    df_bfc_free(a, y);
    char *z = (char *)df_bfc_alloc(a, 64 * KiB);    /* 128 >= 2 * 64: split */
    CHECK(z == x);
    CHECK_EQ_INT(df_bfc_allocated_size(a, z), 64 * KiB);
    char *w = (char *)df_bfc_alloc(a, 64 * KiB);    /* best fit is the 64 KiB remainder */
    CHECK(w == x + 64 * KiB);
    df_bfc_free(a, z); df_bfc_free(a, w); df_bfc_free(a, guard);
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.largest_free_block, 1 * MiB);
    df_bfc_free_all(a);
}

/* Splits for waste >= 128 MiB even below twice the request. */
DF_TEST(bfc_split_rule_large_waste) {
    df_bfc *a = new_bfc(512 * MiB, 0, 0);
    char *p = (char *)df_bfc_alloc(a, 300 * MiB);   /* 512 < 600 but 212 MiB would be wasted */
    CHECK(p != NULL);
    CHECK_EQ_INT(df_bfc_allocated_size(a, p), 300 * MiB);
    CHECK_EQ_INT(stats_of(a).largest_free_block, 212 * MiB);
    char *q = (char *)df_bfc_alloc(a, 200 * MiB);   /* 212 < 400 and waste 12 MiB: no split */
    CHECK(q == p + 300 * MiB);
    CHECK_EQ_INT(df_bfc_allocated_size(a, q), 212 * MiB);
    df_bfc_free(a, p);
    df_bfc_free(a, q);
    CHECK_EQ_INT(stats_of(a).largest_free_block, 512 * MiB);
    df_bfc_free_all(a);
}

DF_TEST(bfc_best_fit) {
    df_bfc *a = new_bfc(2 * MiB, 0, 0);
    size_t sizes[] = {64 * KiB, 48 * KiB, 96 * KiB, 64 * KiB, 64 * KiB};
    char *hole[5], *guard[5];
    for (int i = 0; i < 5; i++) {
        hole[i] = (char *)df_bfc_alloc(a, sizes[i]);
        guard[i] = (char *)df_bfc_alloc(a, 32 * KiB);
        CHECK(hole[i] && guard[i]);
    }
    /* free in an order unrelated to address or size */
    df_bfc_free(a, hole[4]); df_bfc_free(a, hole[2]); df_bfc_free(a, hole[0]);
    df_bfc_free(a, hole[1]); df_bfc_free(a, hole[3]);
    CHECK(df_bfc_alloc(a, 40 * KiB) == hole[1]);              /* smallest that fits */
    CHECK(df_bfc_alloc(a, 60 * KiB) == hole[0]);              /* 64 KiB: lowest address */
    CHECK(df_bfc_alloc(a, 64 * KiB) == hole[3]);              /* then the next one */
    CHECK(df_bfc_alloc(a, 65 * KiB) == hole[2]);              /* only 96 KiB is big enough */
    CHECK(df_bfc_alloc(a, 33 * KiB) == hole[4]);              /* 64 < 2 * 33: no split */
    CHECK_EQ_INT(df_bfc_allocated_size(a, hole[4]), 64 * KiB);
    df_bfc_free(a, hole[4]);
    CHECK(df_bfc_alloc(a, 30 * KiB) == hole[4]);              /* 64 >= 2 * 30: split */
    CHECK_EQ_INT(df_bfc_allocated_size(a, hole[4]), 30 * KiB);
    CHECK(df_bfc_alloc(a, 34 * KiB) == hole[4] + 30 * KiB);   /* the exact-fit remainder */
    /* the tail of the region is bigger than all of them: untouched so far */
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.largest_free_block, 2 * MiB - 5 * 32 * KiB - (64 + 48 + 96 + 64 + 64) * KiB);
    df_bfc_free_all(a);
}

DF_TEST(bfc_coalescing) {
    df_bfc *a = new_bfc(1 * MiB, 0, 0);
    char *x = (char *)df_bfc_alloc(a, 32 * KiB), *y = (char *)df_bfc_alloc(a, 32 * KiB),
         *z = (char *)df_bfc_alloc(a, 32 * KiB), *g = (char *)df_bfc_alloc(a, 32 * KiB);
    CHECK(y == x + 32 * KiB && z == y + 32 * KiB && g == z + 32 * KiB);
    df_bfc_free(a, x);
    df_bfc_free(a, z);
    CHECK(df_bfc_alloc(a, 64 * KiB) == g + 32 * KiB);        /* x and z are apart */
    df_bfc_free(a, g + 32 * KiB);
    df_bfc_free(a, y);                                        /* x + y + z merge */
    CHECK(df_bfc_alloc(a, 96 * KiB) == x);
    CHECK_EQ_INT(df_bfc_allocated_size(a, x), 96 * KiB);
    df_bfc_free(a, x);
    df_bfc_free(a, g);                                        /* everything merges */
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.largest_free_block, 1 * MiB);
    CHECK(df_bfc_alloc(a, 1 * MiB) == x);
    df_bfc_free_all(a);
}

/* Small chunks go through the front cache; everything must still coalesce back. */
DF_TEST(bfc_small_chunks_coalesce_back) {
    df_bfc *a = new_bfc(1 * MiB, 0, 0);
    void *ps[1000];
    int n = 0;
    for (; n < 1000; n++) {
        ps[n] = df_bfc_alloc(a, (size_t)(1 + (n * 37) % 2000));
        if (!ps[n]) break;
    }
    CHECK(n > 500);
    for (int i = 0; i < n; i += 2) df_bfc_free(a, ps[i]);
    df_alloc_stats st = stats_of(a);
    int64_t in_use = 0;
    for (int i = 1; i < n; i += 2) in_use += (int64_t)df_bfc_allocated_size(a, ps[i]);
    CHECK_EQ_INT(st.bytes_in_use, in_use);
    void *big = df_bfc_alloc(a, 600 * KiB);        /* fails: too fragmented */
    CHECK(big == NULL);
    st = stats_of(a);
    CHECK(st.largest_free_block < (int64_t)(600 * KiB));
    for (int i = 1; i < n; i += 2) df_bfc_free(a, ps[i]);
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.largest_free_block, 1 * MiB);
    CHECK(df_bfc_alloc(a, 1 * MiB) != NULL);
    df_bfc_free_all(a);
}

/* Cached chunks count as free: largest_free_block sees them, and bins are searched after a
   flush when nothing else fits. */
DF_TEST(bfc_cached_chunks_are_free) {
    df_bfc *a = new_bfc(64 * KiB, 0, 0);            /* 64 KiB: 4 chunks of 16 KiB */
    void *p[4];
    for (int i = 0; i < 4; i++) p[i] = df_bfc_alloc(a, 16 * KiB);
    CHECK(p[0] && p[1] && p[2] && p[3]);
    CHECK(df_bfc_alloc(a, 256) == NULL);
    df_bfc_free(a, p[1]);                           /* cached (others still in use) */
    df_bfc_free(a, p[2]);
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 32 * KiB);
    CHECK_EQ_INT(st.largest_free_block, 16 * KiB);  /* two cached, not yet merged */
    void *big = df_bfc_alloc(a, 32 * KiB);          /* needs p[1] and p[2] merged */
    CHECK(big == p[1]);
    void *none = df_bfc_alloc(a, 1);
    CHECK(none == NULL);
    df_bfc_free(a, big);
    void *small = df_bfc_alloc(a, 100);             /* splits the merged 32 KiB */
    CHECK(small == p[1]);
    CHECK_EQ_INT(df_bfc_allocated_size(a, small), 256);
    df_bfc_free(a, small);
    df_bfc_free(a, p[0]);
    df_bfc_free(a, p[3]);
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.largest_free_block, 64 * KiB);
    df_bfc_free_all(a);
}

DF_TEST(bfc_memory_limit_and_recovery) {
    df_bfc *a = new_bfc(1 * MiB, 0, 0);             /* TF AllocationsAndDeallocations */
    void *p = df_bfc_alloc(a, 600 * KiB);
    CHECK(p != NULL);
    CHECK(df_bfc_alloc(a, 600 * KiB) == NULL);      /* out of memory */
    df_bfc_free(a, p);
    void *q = df_bfc_alloc(a, 600 * KiB);           /* recovers */
    CHECK(q != NULL);
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.bytes_reserved, 1 * MiB);
    CHECK_EQ_INT(st.num_allocs, 2);
    df_bfc_free_all(a);

    tracker t;                                      /* with growth the sum stays under the limit */
    df_bfc *b = new_tracked(&t, 5 * MiB, 1, 0);
    void *ps[64];
    int n = 0;
    while (n < 64 && (ps[n] = df_bfc_alloc(b, 200 * KiB)) != NULL) n++;
    st = stats_of(b);
    CHECK(st.bytes_reserved <= (int64_t)(5 * MiB));
    CHECK_EQ_INT(st.bytes_reserved, (int64_t)t.total);
    CHECK(n >= 20 && n < 26);                       /* 25 fit in 5 MiB at most */
    for (int i = 0; i < n; i++) df_bfc_free(b, ps[i]);
    CHECK(df_bfc_alloc(b, 200 * KiB) != NULL);
    df_bfc_free_all(b);
    CHECK_EQ_INT(t.n, 0);
}

DF_TEST(bfc_growth_doubles) {
    tracker t;
    df_bfc *a = new_tracked(&t, 64 * MiB, 1, 0);
    void *p = df_bfc_alloc(a, 1 * KiB);
    CHECK_EQ_INT(stats_of(a).bytes_reserved, 2 * MiB);        /* first region 2 MiB */
    void *q = df_bfc_alloc(a, 2 * MiB);
    CHECK_EQ_INT(stats_of(a).bytes_reserved, 2 * MiB + 4 * MiB);
    void *r = df_bfc_alloc(a, 4 * MiB);
    CHECK_EQ_INT(stats_of(a).bytes_reserved, 2 * MiB + 4 * MiB + 8 * MiB);
    void *s = df_bfc_alloc(a, 20 * MiB);            /* request > next region: doubles to 32 */
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.bytes_reserved, 2 * MiB + 4 * MiB + 8 * MiB + 32 * MiB);
    CHECK_EQ_INT(t.n, 4);
    void *u = df_bfc_alloc(a, 17 * MiB);            /* 18 MiB left under the limit: capped */
    CHECK(u != NULL);
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_reserved, 64 * MiB);
    CHECK_EQ_INT(st.peak_bytes_reserved, 64 * MiB);
    CHECK(p && q && r && s);
    df_bfc_free(a, p); df_bfc_free(a, q); df_bfc_free(a, r); df_bfc_free(a, s); df_bfc_free(a, u);
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.largest_free_block, 32 * MiB);
    df_bfc_free_all(a);
    CHECK_EQ_INT(t.n, 0);
    CHECK_EQ_INT(t.n_frees, 5);
}

/* sys_alloc failing for big regions: Extend backs off to 90%, 81%, ... once. */
static void *stingy_alloc(size_t bytes, void *user) {
    if (bytes > 3 * MiB) return NULL;
    return tracked_alloc(bytes, user);
}

DF_TEST(bfc_backpedal) {
    tracker t;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    memset(&t, 0, sizeof t);
    o.memory_limit = 8 * MiB;                       /* one 8 MiB region wanted */
    o.sys_alloc = stingy_alloc;
    o.sys_free = tracked_free;
    o.user = &t;
    df_bfc *a = df_bfc_new(&o);
    void *p = df_bfc_alloc(a, 1 * MiB);
    CHECK(p != NULL);
    df_alloc_stats st = stats_of(a);
    CHECK(st.bytes_reserved <= (int64_t)(3 * MiB) && st.bytes_reserved > (int64_t)(2 * MiB));
    CHECK_EQ_INT(st.bytes_reserved % 256, 0);
    df_bfc_free(a, p);
    df_bfc_free_all(a);
    CHECK_EQ_INT(t.n, 0);
}

/* A request the system refuses (no limit set; a GPU asked for 16 TiB) must not make the next
   regions that big: a small request afterwards still gets memory. */
DF_TEST(bfc_refused_huge_request_leaves_growth_alone) {
    tracker t;
    df_bfc_options o;
    memset(&o, 0, sizeof o);
    memset(&t, 0, sizeof t);
    o.allow_growth = 1;
    o.sys_alloc = stingy_alloc;                     /* refuses regions over 3 MiB */
    o.sys_free = tracked_free;
    o.user = &t;
    df_bfc *a = df_bfc_new(&o);
    CHECK(df_bfc_alloc(a, 64 * MiB) == NULL);
    CHECK(df_bfc_alloc(a, 64 * MiB) == NULL);
    void *p = df_bfc_alloc(a, 1 * MiB);
    CHECK(p != NULL);
    void *q = df_bfc_alloc(a, 1 * MiB);
    CHECK(q != NULL);
    df_bfc_free(a, p);
    df_bfc_free(a, q);
    df_bfc_free_all(a);
    CHECK_EQ_INT(t.n, 0);
}

static int gc_scenario(int gc) {
    tracker t;
    df_bfc *a = new_tracked(&t, 8 * MiB, 1, gc);
    void *p = df_bfc_alloc(a, 1 * MiB);             /* region of 2 MiB */
    void *q = df_bfc_alloc(a, 3 * MiB);             /* region of 4 MiB */
    int ok = p && q && stats_of(a).bytes_reserved == (int64_t)(6 * MiB);
    df_bfc_free(a, p);
    df_bfc_free(a, q);
    void *big = df_bfc_alloc(a, 7 * MiB);           /* needs the 6 MiB of regions back */
    int got = big != NULL;
    if (got) {
        df_alloc_stats st = stats_of(a);
        ok = ok && st.bytes_reserved == (int64_t)(8 * MiB) && t.n == 1 && t.n_frees == 2;
        ok = ok && st.peak_bytes_reserved == (int64_t)(8 * MiB);
    }
    df_bfc_free(a, big);
    df_bfc_free_all(a);
    ok = ok && t.n == 0;
    return ok ? got : -1;
}

DF_TEST(bfc_garbage_collection) {
    CHECK_EQ_INT(gc_scenario(0), 0);                /* fails without it */
    CHECK_EQ_INT(gc_scenario(1), 1);                /* succeeds with it */
}

DF_TEST(bfc_exercise_coalescing) {                 /* TF ExerciseCoalescing */
    df_bfc *a = new_bfc(64 * MiB, 0, 0);
    void *first = df_bfc_alloc(a, 4);
    df_bfc_free(a, first);
    int64_t reserved = stats_of(a).bytes_reserved;
    int ok = 1;
    for (int i = 0; i < 1024 && ok; i++) {
        float *t1 = (float *)df_bfc_alloc(a, 1 * sizeof(float));
        float *t2 = (float *)df_bfc_alloc(a, 1024 * sizeof(float));
        double *t3 = (double *)df_bfc_alloc(a, 2048 * sizeof(double));
        float *t4 = (float *)df_bfc_alloc(a, 10485760 * sizeof(float));   /* 40 MiB */
        ok = t1 && t2 && t3 && t4 && (void *)t1 == first;
        if (!ok) break;
        t1[0] = 1.0f; t2[1023] = 2.0f; t3[2047] = 3.0; t4[10485759] = 4.0f;
        df_bfc_free(a, t1); df_bfc_free(a, t2); df_bfc_free(a, t3); df_bfc_free(a, t4);
        df_alloc_stats st = stats_of(a);
        ok = st.bytes_in_use == 0 && st.bytes_reserved == reserved &&
             st.largest_free_block == reserved;
    }
    CHECK(ok);
    void *again = df_bfc_alloc(a, 4);               /* coalesced back to the first pointer */
    CHECK(again == first);
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.num_allocs, 1 + 4 * 1024 + 1);
    CHECK_EQ_INT(st.bytes_reserved, 64 * MiB);
    /* 40 MiB from the 64 MiB tail: 64 < 2 * 40, so the whole tail is handed out */
    CHECK_EQ_INT(st.largest_alloc_size, 64 * MiB - 256 - 4 * KiB - 16 * KiB);
    df_bfc_free_all(a);
}

DF_TEST(bfc_summary) {
    df_bfc *a = new_bfc(4 * MiB, 1, 0);
    void *p = df_bfc_alloc(a, 4), *q = df_bfc_alloc(a, 3000), *r = df_bfc_alloc(a, 100 * KiB);
    df_bfc_free(a, q);
    static char buf[64 * 1024];
    CHECK(df_bfc_summary(a, buf, sizeof buf) == buf);
    CHECK(strstr(buf, "Bin (256B): in use 1 chunks, 256B (4B requested)") != NULL);
    CHECK(strstr(buf, "Bin (1.00KiB)") != NULL);
    CHECK(strstr(buf, "Bin (256.00MiB)") != NULL);   /* all 21 bins */
    CHECK_EQ_INT(count_of(buf, "Bin ("), 21);
    CHECK(strstr(buf, "bytes_in_use 102656") != NULL); /* 256 + 100 KiB */
    CHECK(strstr(buf, "Region 0") != NULL);
    CHECK_EQ_INT(count_of(buf, "InUse"), 2);
    CHECK_EQ_INT(count_of(buf, "Cached"), 1);
    CHECK(strstr(buf, "largest_free_block") != NULL);
    char small[40];                                    /* bounded */
    memset(small, 'x', sizeof small);
    df_bfc_summary(a, small, 30);
    CHECK(strlen(small) < 30);
    CHECK(small[30] == 'x');
    char one[1] = {'x'};
    df_bfc_summary(a, one, 1);
    CHECK(one[0] == '\0');
    df_bfc_free(a, p); df_bfc_free(a, r);
    df_bfc_summary(a, buf, sizeof buf);
    CHECK_EQ_INT(count_of(buf, "InUse"), 0);
    CHECK_EQ_INT(count_of(buf, "Free   at"), 1);       /* one free chunk: all coalesced */
    df_bfc_free_all(a);
}

DF_TEST(bfc_foreign_pointers_are_ignored) {
    df_bfc *a = new_bfc(4 * MiB, 0, 0);
    char *p = (char *)df_bfc_alloc(a, 1000), *q = (char *)df_bfc_alloc(a, 64 * KiB);
    int local = 0;
    char *heap = (char *)malloc(64);
    df_alloc_stats before = stats_of(a);
    df_bfc_free(a, &local);                         /* not ours at all */
    df_bfc_free(a, heap);
    df_bfc_free(a, p + 1);                          /* inside a block, unaligned */
    df_bfc_free(a, p + 256);                        /* inside a block, aligned */
    df_bfc_free(a, q + 1024);
    df_bfc_free(a, q + 64 * KiB);                   /* start of the free remainder */
    df_bfc_free(a, q + 3 * MiB);                    /* deep in free space */
    df_bfc_free(a, (void *)(uintptr_t)1);
    df_bfc_free(a, (void *)UINTPTR_MAX);
    CHECK_EQ_INT(df_bfc_allocated_size(a, &local), 0);
    CHECK_EQ_INT(df_bfc_allocated_size(a, p + 256), 0);
    CHECK_EQ_INT(df_bfc_allocated_size(a, q + 64 * KiB), 0);
    df_alloc_stats after = stats_of(a);
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    df_bfc_free(a, p);
    df_bfc_free(a, p);                              /* double free: ignored */
    df_bfc_free(a, q);
    df_bfc_free(a, q);
    after = stats_of(a);
    CHECK_EQ_INT(after.bytes_in_use, 0);
    CHECK_EQ_INT(after.largest_free_block, 4 * MiB);
    CHECK_EQ_INT(df_bfc_allocated_size(a, p), 0);
    void *again = df_bfc_alloc(a, 1000);            /* still works afterwards */
    CHECK(again == p);
    df_bfc_free(a, again);
    free(heap);
    df_bfc_free_all(a);
}

/* ---- randomized: against a shadow model ---- */
typedef struct { char *p; size_t n, rounded; uint32_t tag; } live_block;

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

static size_t random_size(uint64_t *s) {              /* 1 B .. 4 MiB, roughly log-uniform */
    int bits = (int)(rng_next(s) % 22);
    size_t base = (size_t)1 << bits;
    return base + (size_t)(rng_next(s) % base);
}

/* Marks the first and last k <= 16 bytes of a block (k <= n / 2: the two never overlap). */
static void stamp(const live_block *b) {
    size_t k = b->n / 2 < 16 ? b->n / 2 : 16;
    for (size_t i = 0; i < k; i++) {
        b->p[i] = (char)(b->tag + i);
        b->p[b->n - 1 - i] = (char)(b->tag ^ i);
    }
}
static int stamped(const live_block *b) {
    size_t k = b->n / 2 < 16 ? b->n / 2 : 16;
    for (size_t i = 0; i < k; i++)
        if (b->p[i] != (char)(b->tag + i) || b->p[b->n - 1 - i] != (char)(b->tag ^ i)) return 0;
    return 1;
}

static void random_against_shadow(uint64_t seed, int gc, int steps) {
    enum { MAX_LIVE = 400 };
    static live_block live[MAX_LIVE];
    const size_t limit = 48 * MiB;
    tracker t;
    df_bfc *a = new_tracked(&t, limit, 1, gc);
    int n_live = 0, failures = 0, n_null = 0;
    int64_t in_use = 0, peak_in_use = 0, num_allocs = 0, largest = 0;
    uint64_t s = seed;
    for (int step = 0; step < steps && failures < 5; step++) {
        if (gc && step % 2000 == 1999) {
            /* free everything, then ask for more than any region: garbage collection must give
               the regions back and make one big enough */
            while (n_live > 0) {
                if (!stamped(&live[n_live - 1])) failures++;
                df_bfc_free(a, live[--n_live].p);
            }
            in_use = 0;
            void *big = df_bfc_alloc(a, 30 * MiB);
            CHECK(big != NULL);
            if (big) {
                size_t got = df_bfc_allocated_size(a, big);
                num_allocs++;
                if ((int64_t)got > peak_in_use) peak_in_use = (int64_t)got;
                if ((int64_t)got > largest) largest = (int64_t)got;
                CHECK(inside_a_region(&t, big, got));
                df_bfc_free(a, big);
            }
        }
        int do_alloc = n_live == 0 || (n_live < MAX_LIVE && rng_next(&s) % 100 < 55);
        if (do_alloc) {
            live_block b;
            b.n = random_size(&s);
            b.rounded = round256(b.n);
            b.tag = (uint32_t)rng_next(&s);
            b.p = (char *)df_bfc_alloc(a, b.n);
            df_alloc_stats st = stats_of(a);
            if (!b.p) {
                n_null++;
                /* a failure is only allowed when nothing can hold it and no region can be added */
                size_t room = (limit - (size_t)st.bytes_reserved) & ~(size_t)255;
                if (st.largest_free_block >= (int64_t)b.rounded || room >= b.rounded) {
                    failures++;
                    df_test_fail(__FILE__, __LINE__, "alloc of %zu failed with largest free %lld, "
                                 "room %zu", b.n, (long long)st.largest_free_block, room);
                }
                continue;
            }
            /* the chunk may be bigger than asked when a split was not worth it: < 2x */
            size_t got = df_bfc_allocated_size(a, b.p);
            if (got < b.rounded || got >= 2 * b.rounded || got % 256) {
                failures++;
                df_test_fail(__FILE__, __LINE__, "allocated_size %zu for %zu bytes", got, b.n);
            }
            b.rounded = got;
            if (((uintptr_t)b.p & 255) || !inside_a_region(&t, b.p, b.rounded)) {
                failures++;
                df_test_fail(__FILE__, __LINE__, "block %p+%zu misaligned or outside regions",
                             (void *)b.p, b.rounded);
            }
            for (int i = 0; i < n_live; i++) {
                uintptr_t x0 = (uintptr_t)b.p, x1 = x0 + b.rounded;
                uintptr_t y0 = (uintptr_t)live[i].p, y1 = y0 + live[i].rounded;
                if (x0 < y1 && y0 < x1) {
                    failures++;
                    df_test_fail(__FILE__, __LINE__, "block %p overlaps live %p", (void *)b.p,
                                 (void *)live[i].p);
                }
            }
            stamp(&b);
            live[n_live++] = b;
            in_use += (int64_t)b.rounded;
            num_allocs++;
            if (in_use > peak_in_use) peak_in_use = in_use;
            if ((int64_t)b.rounded > largest) largest = (int64_t)b.rounded;
        } else {
            int i = (int)(rng_next(&s) % (uint64_t)n_live);
            if (!stamped(&live[i])) {
                failures++;
                df_test_fail(__FILE__, __LINE__, "block %p was overwritten", (void *)live[i].p);
            }
            df_bfc_free(a, live[i].p);
            in_use -= (int64_t)live[i].rounded;
            live[i] = live[--n_live];
        }
        df_alloc_stats st = stats_of(a);
        if (st.bytes_in_use != in_use || st.peak_bytes_in_use != peak_in_use ||
            st.num_allocs != num_allocs || st.largest_alloc_size != largest ||
            st.bytes_reserved != (int64_t)t.total || st.peak_bytes_reserved != (int64_t)t.peak ||
            st.bytes_limit != (int64_t)limit || st.bytes_reserved > (int64_t)limit ||
            st.largest_free_block > st.bytes_reserved - st.bytes_in_use) {
            failures++;
            df_test_fail(__FILE__, __LINE__, "step %d: stats differ from the shadow: in_use %lld/%lld "
                         "peak %lld/%lld allocs %lld/%lld largest %lld/%lld reserved %lld/%zu "
                         "peak_reserved %lld/%zu", step, (long long)st.bytes_in_use,
                         (long long)in_use, (long long)st.peak_bytes_in_use, (long long)peak_in_use,
                         (long long)st.num_allocs, (long long)num_allocs,
                         (long long)st.largest_alloc_size, (long long)largest,
                         (long long)st.bytes_reserved, t.total, (long long)st.peak_bytes_reserved,
                         t.peak);
        }
    }
    CHECK(n_null < steps / 4);
    if (getenv("BFC_TEST_VERBOSE"))
        printf("    seed %llx: %lld allocs, %d failed, %d regions, %d sys_allocs, %d sys_frees, "
               "peak %lld\n", (unsigned long long)seed, (long long)num_allocs, n_null, t.n,
               t.n_allocs, t.n_frees, (long long)peak_in_use);
    while (n_live > 0) {
        CHECK(stamped(&live[n_live - 1]));
        df_bfc_free(a, live[--n_live].p);
    }
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    size_t biggest_region = 0;
    for (int i = 0; i < t.n; i++) if (t.bytes[i] > biggest_region) biggest_region = t.bytes[i];
    CHECK_EQ_INT(st.largest_free_block, biggest_region);
    static char buf[256 * 1024];
    df_bfc_summary(a, buf, sizeof buf);                 /* each region is one free chunk */
    CHECK_EQ_INT(count_of(buf, "InUse"), 0);
    CHECK_EQ_INT(count_of(buf, "Cached"), 0);
    CHECK_EQ_INT(count_of(buf, "Free   at"), t.n);
    CHECK_EQ_INT(count_of(buf, "Region "), t.n);
    df_bfc_free_all(a);
    CHECK_EQ_INT(t.n, 0);
    CHECK_EQ_INT(t.n_frees, t.n_allocs);
}

DF_TEST(bfc_random_vs_shadow) {
    random_against_shadow(0x9E3779B97F4A7C15ull, 0, 6000);
    random_against_shadow(12345, 0, 6000);
}

DF_TEST(bfc_random_vs_shadow_gc) {
    random_against_shadow(0xDEADBEEFull, 1, 6000);
    random_against_shadow(777, 1, 6000);
}

/* ---- threads ---- */
typedef struct { df_bfc *a; int id, bad, allocs; } worker;

static void *hammer(void *arg) {
    worker *w = (worker *)arg;
    enum { SLOTS = 32 };
    live_block slot[SLOTS];
    memset(slot, 0, sizeof slot);
    uint64_t s = 0x1234567ull * (uint64_t)(w->id + 1);
    for (int it = 0; it < 20000; it++) {
        int i = (int)(rng_next(&s) % SLOTS);
        if (slot[i].p) {
            if (!stamped(&slot[i])) w->bad++;
            df_bfc_free(w->a, slot[i].p);
            slot[i].p = NULL;
        }
        size_t n = (rng_next(&s) % 8 == 0) ? 1 + (size_t)(rng_next(&s) % (256 * KiB))
                                           : 1 + (size_t)(rng_next(&s) % 4096);
        live_block b = {(char *)df_bfc_alloc(w->a, n), n, round256(n),
                        (uint32_t)(w->id * 1000003 + it)};
        if (!b.p) { w->bad++; continue; }
        size_t got = df_bfc_allocated_size(w->a, b.p);
        if (got < b.rounded || got >= 2 * b.rounded) w->bad++;
        w->allocs++;
        stamp(&b);
        slot[i] = b;
    }
    for (int i = 0; i < SLOTS; i++) {
        if (slot[i].p && !stamped(&slot[i])) w->bad++;
        df_bfc_free(w->a, slot[i].p);
    }
    return NULL;
}

DF_TEST(bfc_threads) {
    tracker t;                                      /* sys_alloc runs under the allocator's lock */
    df_bfc *a = new_tracked(&t, 256 * MiB, 1, 0);
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i].a = a; w[i].id = i; w[i].bad = 0; w[i].allocs = 0;
        CHECK(pthread_create(&th[i], NULL, hammer, &w[i]) == 0);
    }
    int64_t allocs = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(w[i].bad, 0);
        allocs += w[i].allocs;
    }
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.num_allocs, allocs);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.bytes_reserved, (int64_t)t.total);
    CHECK(st.bytes_reserved <= (int64_t)(256 * MiB));
    size_t biggest_region = 0;
    for (int i = 0; i < t.n; i++) if (t.bytes[i] > biggest_region) biggest_region = t.bytes[i];
    CHECK_EQ_INT(st.largest_free_block, biggest_region);
    static char buf[64 * 1024];
    df_bfc_summary(a, buf, sizeof buf);
    CHECK_EQ_INT(count_of(buf, "InUse"), 0);
    CHECK_EQ_INT(count_of(buf, "Free   at"), t.n);
    df_bfc_free_all(a);
    CHECK_EQ_INT(t.n, 0);
}

#ifndef DF_NO_THREADS   /* (without threads there are no thread caches) */
/* ---- thread caches ---- */
/* Two threads taking turns: step k waits until the other has called gate_pass k times. */
typedef struct { pthread_mutex_t mu; pthread_cond_t cv; int passed[2]; } gate;
static void gate_pass(gate *g, int me) {
    pthread_mutex_lock(&g->mu);
    g->passed[me]++;
    pthread_cond_broadcast(&g->cv);
    while (g->passed[!me] < g->passed[me]) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

typedef struct {
    df_bfc *a;
    void *keep;                  /* left in use by the thread */
    void *ptrs[8];
    gate *bar;                   /* NULL: none; the thread is side 1 */
    int ok;
} cache_user;

/* Keeps one block in use, allocates and frees small ones (they go to the thread's own cache). */
static void *cache_user_main(void *arg) {
    cache_user *u = (cache_user *)arg;
    u->keep = df_bfc_alloc(u->a, 1000);
    u->ok = u->keep != NULL;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 8; i++) u->ptrs[i] = df_bfc_alloc(u->a, (size_t)(100 + 300 * i));
        for (int i = 0; i < 8; i++) {
            if (!u->ptrs[i]) u->ok = 0;
            df_bfc_free(u->a, u->ptrs[i]);
        }
    }
    if (u->bar) {
        gate_pass(u->bar, 1);              /* the main thread looks at the caches */
        gate_pass(u->bar, 1);
        df_bfc_free(u->a, df_bfc_alloc(u->a, 100));   /* a call: a flush request is served */
    }
    return NULL;
}

/* A thread's cache goes back to the bins when the thread exits: nothing stays cached, the
   counts stay exact, and the block it left in use can be freed by another thread. */
DF_TEST(bfc_thread_cache_given_back_at_exit) {
    df_bfc *a = new_bfc(64 * MiB, 1, 0);
    cache_user u;
    memset(&u, 0, sizeof u);
    u.a = a;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, cache_user_main, &u) == 0);
    pthread_join(th, NULL);
    CHECK(u.ok);
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.num_allocs, 3 * 8 + 1);
    CHECK_EQ_INT(st.bytes_in_use, 1024);
    CHECK_EQ_INT(st.peak_bytes_in_use, 1024 + 256 + 512 + 768 + 1024 + 1536 + 1792 + 2048 + 2304);
    static char buf[16 * 1024];
    df_bfc_summary(a, buf, sizeof buf);
    CHECK_EQ_INT(count_of(buf, "Cached"), 0);
    CHECK_EQ_INT(count_of(buf, "InUse"), 1);
    df_bfc_free(a, u.keep);                          /* freed by another thread */
    df_bfc_free(a, u.keep);                          /* twice: ignored */
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.num_allocs, 3 * 8 + 1);
    CHECK_EQ_INT(st.largest_free_block, 2 * MiB);    /* all coalesced */
    df_bfc_summary(a, buf, sizeof buf);
    CHECK_EQ_INT(count_of(buf, "Free   at"), 1);
    df_bfc_free_all(a);
}

/* A thread that needs memory asks the others to give their cached chunks back; a thread that
   is waiting does so at its next call. */
DF_TEST(bfc_thread_cache_flush_request) {
    df_bfc *a = new_bfc(64 * MiB, 1, 0);
    gate bar = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0, 0}};
    cache_user u;
    memset(&u, 0, sizeof u);
    u.a = a;
    u.bar = &bar;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, cache_user_main, &u) == 0);
    gate_pass(&bar, 0);
    static char buf[16 * 1024];
    df_bfc_summary(a, buf, sizeof buf);
    CHECK_EQ_INT(count_of(buf, "Cached"), 8);          /* in the other thread's cache */
    CHECK_EQ_INT(stats_of(a).largest_free_block, 2 * MiB - 11 * KiB);   /* the rest of the region */
    void *big = df_bfc_alloc(a, 2 * MiB - 9 * KiB);  /* no bin fits: the caches are asked back */
    CHECK(big != NULL);                              /* (from a new region meanwhile) */
    CHECK_EQ_INT(stats_of(a).bytes_reserved, 6 * MiB);
    gate_pass(&bar, 0);
    pthread_join(th, NULL);                          /* its call flushed, then it exited */
    df_bfc_free(a, big);
    df_bfc_summary(a, buf, sizeof buf);
    CHECK_EQ_INT(count_of(buf, "Cached"), 0);
    CHECK_EQ_INT(count_of(buf, "InUse"), 1);         /* the block the thread kept */
    df_bfc_free(a, u.keep);
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.largest_free_block, 4 * MiB);
    df_bfc_free_all(a);
}

#endif

typedef struct { df_bfc *a; void *p; int freed_twice_ok; } freer;
static void *free_twice_main(void *arg) {
    freer *f = (freer *)arg;
    df_bfc_free(f->a, f->p);
    df_alloc_stats st;
    df_bfc_get_stats(f->a, &st);
    df_bfc_free(f->a, f->p);                         /* a double free on this thread: ignored */
    df_bfc_free(f->a, (char *)f->p + 256);           /* not a chunk's start: ignored */
    int x;
    df_bfc_free(f->a, &x);                           /* not the allocator's: ignored */
    df_alloc_stats st2;
    df_bfc_get_stats(f->a, &st2);
    f->freed_twice_ok = st.bytes_in_use == st2.bytes_in_use;
    return NULL;
}

/* Blocks freed on another thread than the one that allocated them; double frees and foreign
   pointers are ignored whichever thread frees (one after the other, not at the same moment). */
DF_TEST(bfc_cross_thread_frees) {
    df_bfc *a = new_bfc(64 * MiB, 1, 0);
    void *keep = df_bfc_alloc(a, 5000);
    void *p = df_bfc_alloc(a, 300);                  /* small: cached by whoever frees it */
    void *q = df_bfc_alloc(a, 64 * KiB);             /* big: to the bins */
    CHECK(keep && p && q);
    for (int k = 0; k < 2; k++) {
        freer f = {a, k ? q : p, 0};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, free_twice_main, &f) == 0);
        pthread_join(th, NULL);
        CHECK(f.freed_twice_ok);
    }
    df_bfc_free(a, p);                               /* and again here: ignored */
    df_bfc_free(a, q);
    CHECK_EQ_INT(df_bfc_allocated_size(a, p), 0);
    df_alloc_stats st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, (int64_t)round256(5000));
    CHECK_EQ_INT(st.num_allocs, 3);
    CHECK_EQ_INT(st.peak_bytes_in_use, (int64_t)(round256(5000) + 512 + 64 * KiB));
    void *r = df_bfc_alloc(a, 300);
    CHECK(r != NULL);
    df_bfc_free(a, r);
    df_bfc_free(a, keep);
    st = stats_of(a);
    CHECK_EQ_INT(st.bytes_in_use, 0);
    CHECK_EQ_INT(st.largest_free_block, 2 * MiB);
    df_bfc_free_all(a);
}

static void *use_many_main(void *arg) {
    df_bfc **as = (df_bfc **)arg;                    /* more allocators than the table's ways */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 12; i++) {
            void *p = df_bfc_alloc(as[i], (size_t)(200 + i));
            void *q = df_bfc_alloc(as[i], 5000);
            df_bfc_free(as[i], p);
            df_bfc_free(as[i], q);
        }
    }
    df_bfc_free(as[0], df_bfc_alloc(as[0], 100));
    return NULL;
}

/* Threads come and go (more than an allocator has cache slots, in turn), use more allocators
   than a thread's table holds, and outlive allocators that are destroyed under them: caches
   are given back and freed each time (LeakSanitizer) and nothing is counted twice. */
DF_TEST(bfc_thread_caches_come_and_go) {
    df_bfc *as[12];
    for (int i = 0; i < 12; i++) CHECK((as[i] = new_bfc(0, 1, 0)) != NULL);
    for (int t = 0; t < 80; t++) {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, use_many_main, as) == 0);
        pthread_join(th, NULL);
    }
    use_many_main(as);                               /* this thread too */
    for (int i = 0; i < 12; i++) {
        df_alloc_stats st = stats_of(as[i]);
        CHECK_EQ_INT(st.bytes_in_use, 0);
        CHECK_EQ_INT(st.num_allocs, 81 * 6 + (i == 0 ? 81 : 0));
        CHECK_EQ_INT(st.largest_free_block, 2 * MiB);
    }
    /* a thread whose allocator is destroyed while it lives, and then uses a new one */
    for (int i = 1; i < 12; i++) df_bfc_free_all(as[i]);
    for (int i = 1; i < 12; i++) CHECK((as[i] = new_bfc(0, 1, 0)) != NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, use_many_main, as) == 0);
    pthread_join(th, NULL);
    CHECK_EQ_INT(stats_of(as[5]).num_allocs, 6);
    for (int i = 0; i < 12; i++) df_bfc_free_all(as[i]);
}
