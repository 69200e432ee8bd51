/* ==========================================================================================
   src/crypto.c: SHA-256, HMAC-SHA256, constant-time compare, OS randomness          >>crypto
   What the cluster's authentication is built from (issue 28): SHA-256 (FIPS 180-4), HMAC
   (RFC 2104) with a key's two pad blocks hashed once, so a message costs only its own blocks,
   and random bytes from the operating system only, never a weaker fallback. Compression runs
   on the x86 SHA extensions where the CPU has them (chosen once, at run time), else in
   portable C; DF_NO_SHA_NI=1 in the environment, or DF_NO_SIMD at build time, keeps to the
   portable path. Self-contained (standard C and POSIX only; it precedes src/internal.h), so
   tests/test_crypto.c and bench/bench_mac.c compile this file on its own.
   ========================================================================================== */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(DF_NO_SIMD)
#define DF__SHA_NI 1
#include <cpuid.h>
#include <immintrin.h>
#endif
/* getrandom(2) where the C library has it (glibc 2.25 on; the header is not hidden by strict C
   modes there); getentropy(2) on Apple systems; else /dev/urandom. */
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
#define DF__GETRANDOM 1
#include <sys/random.h>
#elif defined(__APPLE__) && defined(__has_include)
#if __has_include(<sys/random.h>)
#define DF__GETENTROPY 1
#include <sys/random.h>
#endif
#endif
/* Its callers (the wire's handshake and frame MACs) are compiled only where networking is, and
   the switches for tests only into tests: what a build does not call must not warn there. */
#if defined(__GNUC__) || defined(__clang__)
#define DF__MAYBE_UNUSED __attribute__((unused))
#else
#define DF__MAYBE_UNUSED
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0            /* (hidden by strict C modes in the one-translation-unit use; set below) */
#endif

typedef struct df__sha256 {
    uint32_t h[8];             /* the chaining state */
    uint64_t len;              /* bytes hashed so far, the buffered ones included */
    unsigned char buf[64];     /* a partial block */
    size_t nbuf;
} df__sha256;
/* A key's HMAC states after its inner (ipad) and outer (opad) blocks: made once per key. */
typedef struct df__hmac_key { df__sha256 inner, outer; } df__hmac_key;
/* One message's MAC in progress; k must outlive it. */
typedef struct df__hmac { df__sha256 inner; const df__hmac_key *k; } df__hmac;

static const uint32_t df__sha256_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};

/* Zeroes n bytes in a way the compiler may not drop as a dead store (key material). */
DF_PRIVATE DF__MAYBE_UNUSED void df__secure_zero(void *p, size_t n) {
    volatile unsigned char *v = (volatile unsigned char *)p;
    while (n--) *v++ = 0;
}

/* ---- compression: all of n_blocks 64-byte blocks in one call ---- */
#define DF__ROR32(x, n) ((x) >> (n) | (x) << (32 - (n)))
static uint32_t df__sha_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
/* One round on the eight working variables named in rotation, so a round moves no data:
   d += T1 and h = T1 + T2 is the shift of the standard's a..h by one. */
#define DF__SHA_ROUND(a, b, c, d, e, f, g, h, kw)                                               \
    do {                                                                                        \
        uint32_t t1_ = h + (DF__ROR32(e, 6) ^ DF__ROR32(e, 11) ^ DF__ROR32(e, 25)) +            \
                       (g ^ (e & (f ^ g))) + (kw);                                              \
        d += t1_;                                                                               \
        h = t1_ + (DF__ROR32(a, 2) ^ DF__ROR32(a, 13) ^ DF__ROR32(a, 22)) + ((a & b) | (c & (a | b))); \
    } while (0)
/* W[t] for t >= 16 in a ring of 16: W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16]. */
#define DF__SHA_SCHEDULE(w, t)                                                                  \
    (w[(t) & 15] += (DF__ROR32(w[((t) - 2) & 15], 17) ^ DF__ROR32(w[((t) - 2) & 15], 19) ^ (w[((t) - 2) & 15] >> 10)) + \
                    w[((t) - 7) & 15] +                                                         \
                    (DF__ROR32(w[((t) - 15) & 15], 7) ^ DF__ROR32(w[((t) - 15) & 15], 18) ^ (w[((t) - 15) & 15] >> 3)))
#define DF__SHA_EIGHT(W)                                                                        \
    do {                                                                                        \
        DF__SHA_ROUND(a, b, c, d, e, f, g, h, df__sha256_k[t + 0] + W(t + 0));                  \
        DF__SHA_ROUND(h, a, b, c, d, e, f, g, df__sha256_k[t + 1] + W(t + 1));                  \
        DF__SHA_ROUND(g, h, a, b, c, d, e, f, df__sha256_k[t + 2] + W(t + 2));                  \
        DF__SHA_ROUND(f, g, h, a, b, c, d, e, df__sha256_k[t + 3] + W(t + 3));                  \
        DF__SHA_ROUND(e, f, g, h, a, b, c, d, df__sha256_k[t + 4] + W(t + 4));                  \
        DF__SHA_ROUND(d, e, f, g, h, a, b, c, df__sha256_k[t + 5] + W(t + 5));                  \
        DF__SHA_ROUND(c, d, e, f, g, h, a, b, df__sha256_k[t + 6] + W(t + 6));                  \
        DF__SHA_ROUND(b, c, d, e, f, g, h, a, df__sha256_k[t + 7] + W(t + 7));                  \
    } while (0)
static void df__sha256_blocks_portable(uint32_t st[8], const unsigned char *p, size_t n_blocks) {
    for (; n_blocks; n_blocks--, p += 64) {
        uint32_t w[16];
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
        for (int i = 0; i < 16; i++) w[i] = df__sha_be32(p + 4 * i);
        int t;
#define DF__W_LOADED(i) w[(i)]
#define DF__W_NEXT(i) DF__SHA_SCHEDULE(w, (i))
        for (t = 0; t < 16; t += 8) DF__SHA_EIGHT(DF__W_LOADED);
        for (; t < 64; t += 8) DF__SHA_EIGHT(DF__W_NEXT);
#undef DF__W_LOADED
#undef DF__W_NEXT
        st[0] += a; st[1] += b; st[2] += c; st[3] += d; st[4] += e; st[5] += f; st[6] += g; st[7] += h;
    }
}

#ifdef DF__SHA_NI
/* The SHA extensions keep the state as two vectors, ABEF and CDGH (A in the top lane);
   sha256rnds2 runs two rounds with W+K from the low two lanes of its third operand and
   returns the new ABEF, the old ABEF being the new CDGH. msg1 and msg2 compute the schedule
   four words at a time: msg1 adds s0 of the words after W[t-16..t-13], the W[t-7..t-4] are
   added in between, msg2 adds s1, two of its four from the words it makes itself. */
__attribute__((target("sha,sse4.1,ssse3")))
static void df__sha256_blocks_shani(uint32_t st[8], const unsigned char *p, size_t n_blocks) {
    const __m128i bswap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    __m128i abef = _mm_set_epi32((int)st[0], (int)st[1], (int)st[4], (int)st[5]);
    __m128i cdgh = _mm_set_epi32((int)st[2], (int)st[3], (int)st[6], (int)st[7]);
#define DF__NI_ROUNDS4(m, i)                                                                    \
    do {                                                                                        \
        __m128i wk_ = _mm_add_epi32((m), _mm_loadu_si128((const __m128i *)(const void *)&df__sha256_k[4 * (i)])); \
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk_);                                          \
        abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk_, 0x0e));                 \
    } while (0)
#define DF__NI_NEXT(m0, m1, m2, m3)                                                             \
    (m0 = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(m0, m1), _mm_alignr_epi8(m3, m2, 4)), m3))
    for (; n_blocks; n_blocks--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 0)), bswap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)), bswap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 32)), bswap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 48)), bswap);
        DF__NI_ROUNDS4(m0, 0);
        DF__NI_ROUNDS4(m1, 1);
        DF__NI_ROUNDS4(m2, 2);
        DF__NI_ROUNDS4(m3, 3);
        for (int i = 4; i < 16; i += 4) {    /* m0..m3 hold W[4i-16 .. 4i-1] in turn */
            DF__NI_NEXT(m0, m1, m2, m3); DF__NI_ROUNDS4(m0, i);
            DF__NI_NEXT(m1, m2, m3, m0); DF__NI_ROUNDS4(m1, i + 1);
            DF__NI_NEXT(m2, m3, m0, m1); DF__NI_ROUNDS4(m2, i + 2);
            DF__NI_NEXT(m3, m0, m1, m2); DF__NI_ROUNDS4(m3, i + 3);
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
#undef DF__NI_ROUNDS4
#undef DF__NI_NEXT
    uint32_t x[4], y[4];           /* lanes low to high: x = F E B A, y = H G D C */
    _mm_storeu_si128((__m128i *)(void *)x, abef);
    _mm_storeu_si128((__m128i *)(void *)y, cdgh);
    st[0] = x[3]; st[1] = x[2]; st[4] = x[1]; st[5] = x[0];
    st[2] = y[3]; st[3] = y[2]; st[6] = y[1]; st[7] = y[0];
}
/* SHA (CPUID leaf 7, EBX bit 29) and the SSSE3 and SSE4.1 its path also uses (leaf 1, ECX
   bits 9 and 19). */
static int df__cpu_has_sha_ni(void) {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid(1, a, b, c, d);
    if (!(c >> 9 & 1) || !(c >> 19 & 1)) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (int)(b >> 29 & 1);
}
#endif

static int df__sha_path = -1;          /* -1: not chosen yet; 0: portable; 1: SHA extensions */
static int df__sha_choose(void) {
    int v = __atomic_load_n(&df__sha_path, __ATOMIC_RELAXED);
    if (v >= 0) return v;
    v = 0;
#ifdef DF__SHA_NI
    const char *off = getenv("DF_NO_SHA_NI");
    if (!(off && *off && strcmp(off, "0"))) v = df__cpu_has_sha_ni();
#endif
    __atomic_store_n(&df__sha_path, v, __ATOMIC_RELAXED);   /* (racing choosers store the same) */
    return v;
}
/* For tests and benchmarks: nonzero keeps to the portable compression, 0 chooses again
   (the SHA extensions where the CPU has them and DF_NO_SHA_NI is unset). Process-wide. */
DF_PRIVATE DF__MAYBE_UNUSED void df__sha256_force_portable(int on) { __atomic_store_n(&df__sha_path, on ? 0 : -1, __ATOMIC_RELAXED); }
/* The compression in use: "sha-ni" or "portable". */
DF_PRIVATE DF__MAYBE_UNUSED const char *df__sha256_impl(void) { return df__sha_choose() ? "sha-ni" : "portable"; }
static void df__sha256_blocks(uint32_t st[8], const unsigned char *p, size_t n_blocks) {
#ifdef DF__SHA_NI
    if (df__sha_choose()) { df__sha256_blocks_shani(st, p, n_blocks); return; }
#endif
    df__sha256_blocks_portable(st, p, n_blocks);
}

/* ---- SHA-256 ---- */
DF_PRIVATE DF__MAYBE_UNUSED void df__sha256_init(df__sha256 *c) {
    static const uint32_t iv[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(c->h, iv, sizeof iv);
    c->len = 0;
    c->nbuf = 0;
}
DF_PRIVATE DF__MAYBE_UNUSED void df__sha256_update(df__sha256 *c, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    if (!n) return;
    c->len += n;
    if (c->nbuf) {                     /* top up the partial block first */
        size_t take = n < 64 - c->nbuf ? n : 64 - c->nbuf;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take; p += take; n -= take;
        if (c->nbuf < 64) return;
        df__sha256_blocks(c->h, c->buf, 1);
        c->nbuf = 0;
    }
    if (n >= 64) {                     /* whole blocks straight from the caller's memory */
        df__sha256_blocks(c->h, p, n / 64);
        p += n & ~(size_t)63;
        n &= 63;
    }
    if (n) { memcpy(c->buf, p, n); c->nbuf = n; }
}
/* Pads (0x80, zeros, the length in bits, big-endian), writes the digest and wipes c. */
DF_PRIVATE DF__MAYBE_UNUSED void df__sha256_final(df__sha256 *c, unsigned char out[32]) {
    uint64_t bits = c->len * 8;
    c->buf[c->nbuf++] = 0x80;
    if (c->nbuf > 56) {
        memset(c->buf + c->nbuf, 0, 64 - c->nbuf);
        df__sha256_blocks(c->h, c->buf, 1);
        c->nbuf = 0;
    }
    memset(c->buf + c->nbuf, 0, 56 - c->nbuf);
    for (int i = 0; i < 8; i++) c->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    df__sha256_blocks(c->h, c->buf, 1);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(c->h[i] >> 24); out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(c->h[i] >> 8); out[4 * i + 3] = (unsigned char)c->h[i];
    }
    df__secure_zero(c, sizeof *c);
}
DF_PRIVATE DF__MAYBE_UNUSED void df__sha256_hash(const void *data, size_t n, unsigned char out[32]) {
    df__sha256 c;
    df__sha256_init(&c);
    df__sha256_update(&c, data, n);
    df__sha256_final(&c, out);
}

/* ---- HMAC-SHA256 (RFC 2104): H((K ^ opad) || H((K ^ ipad) || message)), a key longer than a
   block replaced by its hash ---- */
DF_PRIVATE DF__MAYBE_UNUSED void df__hmac_key_init(df__hmac_key *k, const void *key, size_t klen) {
    unsigned char block[64], pad[64];
    memset(block, 0, sizeof block);
    if (klen > 64) df__sha256_hash(key, klen, block);
    else if (klen) memcpy(block, key, klen);
    for (int i = 0; i < 64; i++) pad[i] = (unsigned char)(block[i] ^ 0x36);
    df__sha256_init(&k->inner);
    df__sha256_update(&k->inner, pad, 64);
    for (int i = 0; i < 64; i++) pad[i] = (unsigned char)(block[i] ^ 0x5c);
    df__sha256_init(&k->outer);
    df__sha256_update(&k->outer, pad, 64);
    df__secure_zero(block, sizeof block);
    df__secure_zero(pad, sizeof pad);
}
DF_PRIVATE DF__MAYBE_UNUSED void df__hmac_begin(df__hmac *m, const df__hmac_key *k) { m->inner = k->inner; m->k = k; }
DF_PRIVATE DF__MAYBE_UNUSED void df__hmac_update(df__hmac *m, const void *data, size_t n) { df__sha256_update(&m->inner, data, n); }
/* Writes the MAC and wipes m (a new message starts with df__hmac_begin). */
DF_PRIVATE DF__MAYBE_UNUSED void df__hmac_final(df__hmac *m, unsigned char out[32]) {
    unsigned char inner[32];
    df__sha256 outer = m->k->outer;
    df__sha256_final(&m->inner, inner);
    df__sha256_update(&outer, inner, 32);
    df__sha256_final(&outer, out);
    df__secure_zero(inner, sizeof inner);
    df__secure_zero(m, sizeof *m);
}
DF_PRIVATE DF__MAYBE_UNUSED void df__hmac_sha256(const void *key, size_t klen, const void *data, size_t n, unsigned char out[32]) {
    df__hmac_key k;
    df__hmac m;
    df__hmac_key_init(&k, key, klen);
    df__hmac_begin(&m, &k);
    df__hmac_update(&m, data, n);
    df__hmac_final(&m, out);
    df__secure_zero(&k, sizeof k);
}

/* 1 when the n bytes at a and b are equal, 0 if not; the time taken depends on n only, not on
   where they differ (MACs and challenge answers are compared with this). */
DF_PRIVATE DF__MAYBE_UNUSED int df__ct_equal(const void *a, const void *b, size_t n) {
    const volatile unsigned char *x = (const volatile unsigned char *)a, *y = (const volatile unsigned char *)b;
    unsigned diff = 0;
    for (size_t i = 0; i < n; i++) diff |= (unsigned)(x[i] ^ y[i]);
    return (int)(((diff - 1u) >> 8) & 1u);   /* diff is 0..255: only 0 borrows into bit 8 */
}

/* ---- randomness from the operating system ---- */
static int df__urandom(unsigned char *p, size_t n) {
    int fd;
    do fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return -1;
#ifdef FD_CLOEXEC
    if (!O_CLOEXEC) (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
#endif
    struct stat sb;                    /* a regular file planted there (a chroot) is no source */
    if (fstat(fd, &sb) || !S_ISCHR(sb.st_mode)) { close(fd); return -1; }
    while (n) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) { close(fd); return -1; }
        p += got; n -= (size_t)got;
    }
    close(fd);
    return 0;
}
/* Fills out with n random bytes from the operating system: 0, or -1 (out then holds no
   secret: it is zeroed). getrandom blocks until the kernel's pool has been seeded once, then
   never; where the system call does not exist (Linux before 3.17) or is refused, /dev/urandom. */
DF_PRIVATE DF__MAYBE_UNUSED int df__random_bytes(void *out, size_t n) {
    unsigned char *p = (unsigned char *)out;
    size_t left = n;
#if defined(DF__GETRANDOM)
    while (left) {
        ssize_t got = getrandom(p, left, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == ENOSYS || errno == EPERM)) break;
        if (got <= 0) { df__secure_zero(out, n); return -1; }
        p += got; left -= (size_t)got;
    }
#elif defined(DF__GETENTROPY)
    while (left) {                     /* at most 256 bytes a call */
        size_t take = left < 256 ? left : 256;
        if (getentropy(p, take)) { df__secure_zero(out, n); return -1; }
        p += take; left -= take;
    }
#endif
    if (left && df__urandom(p, left)) { df__secure_zero(out, n); return -1; }
    return 0;
}
