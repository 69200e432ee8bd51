/* SHA-256, HMAC-SHA256, the constant-time compare and OS randomness of src/crypto.c (issue 28:
   the cluster's authentication). Those functions are internal (static in dataflow.c), so this
   file compiles src/crypto.c itself, which is self-contained for that reason: the code tested
   is the code dataflow.c holds. Known answers: FIPS 180-2's SHA-256 examples, RFC 4231's
   HMAC-SHA-256 cases 1 to 7, and digests of every length 0..1000 and of HMACs with keys of 0
   to 199 bytes taken from Python's hashlib and hmac. Each runs on both compressions (the x86
   SHA extensions where the CPU has them, and the portable C), which must also agree with each
   other on random lengths, on misaligned data and on updates split at random points. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#define DF_PRIVATE static
#include "../src/crypto.c"

static void to_hex(const unsigned char *d, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}
#define CHECK_HEX(digest, n, expected)                                                 \
    do { char hex_[2 * 64 + 1]; to_hex((digest), (n), hex_);                           \
         CHECK_MSG(!strcmp(hex_, (expected)), "%s: got %s, expected %s (%s path)", #digest, hex_, \
                   (expected), df__sha256_impl()); } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {   /* xorshift64*: reproducible lengths, split points and data */
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static void fill(unsigned char *p, size_t n) { for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(rng() >> 56); }

/* Whether /proc/cpuinfo lists the SHA extensions (-1: cannot tell). */
static int cpuinfo_has_sha_ni(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    char line[8192];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5)) continue;
        found = strstr(line, " sha_ni") != NULL;
        break;
    }
    fclose(f);
    return found;
}
/* Pass 0 runs the path chosen for this CPU, pass 1 the portable one (the same one twice where
   the CPU has no SHA extensions). */
enum { N_PATHS = 2 };
static void use_path(int i) { df__sha256_force_portable(i == 1); }

DF_TEST(sha256_fips_180_2_vectors) {
    static const struct { const char *msg, *digest; } v[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}};
    static const size_t chunks[] = {1, 63, 64, 65, 127, 3, 1000, 129, 7, 4096};
    unsigned char d[32];
    for (int path = 0; path < N_PATHS; path++) {
        use_path(path);
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            df__sha256_hash(v[i].msg, strlen(v[i].msg), d);
            CHECK_HEX(d, 32, v[i].digest);
            df__sha256 c;   /* byte by byte */
            df__sha256_init(&c);
            for (const char *p = v[i].msg; *p; p++) df__sha256_update(&c, p, 1);
            df__sha256_final(&c, d);
            CHECK_HEX(d, 32, v[i].digest);
        }
        /* one million 'a', in odd-sized chunks that cross block boundaries every way */
        static unsigned char a[4096];
        memset(a, 'a', sizeof a);
        df__sha256 c;
        df__sha256_init(&c);
        size_t left = 1000000;
        for (int k = 0; left; k++) {
            size_t take = chunks[k % 10] < left ? chunks[k % 10] : left;
            df__sha256_update(&c, a, take);
            left -= take;
        }
        df__sha256_final(&c, d);
        CHECK_HEX(d, 32, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
    df__sha256_force_portable(0);
}

/* Every padding case (lengths 0..1000: the 0x80 and the length in the last block or in one
   more) against hashlib: the SHA-256 of the 1001 digests of data[0..n). */
DF_TEST(sha256_every_length_against_hashlib) {
    unsigned char data[1001], d[32];
    for (int i = 0; i < 1001; i++) data[i] = (unsigned char)((i * 167 + (i >> 8) * 13) & 0xff);
    for (int path = 0; path < N_PATHS; path++) {
        use_path(path);
        df__sha256 all;
        df__sha256_init(&all);
        for (size_t n = 0; n <= 1000; n++) {
            df__sha256_hash(data, n, d);
            df__sha256_update(&all, d, 32);
        }
        df__sha256_final(&all, d);
        CHECK_HEX(d, 32, "d71efab5d9cbdfce24a052fcad5e4f0134943c21db1b94b66a3052e5a8c37aa6");
    }
    df__sha256_force_portable(0);
}

DF_TEST(hmac_sha256_rfc4231) {
    unsigned char key20_0b[20], key20_aa[20], key25[25], key20_0c[20], key131[131], dd[50], cd[50], mac[32];
    memset(key20_0b, 0x0b, 20); memset(key20_aa, 0xaa, 20); memset(key20_0c, 0x0c, 20); memset(key131, 0xaa, 131);
    for (int i = 0; i < 25; i++) key25[i] = (unsigned char)(i + 1);
    memset(dd, 0xdd, 50); memset(cd, 0xcd, 50);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    const char *t7 = "This is a test using a larger than block-size key and a larger than block-size data. The key needs "
                     "to be hashed before being used by the HMAC algorithm.";
    const struct { const void *key; size_t klen; const void *data; size_t n; size_t out; const char *mac; } v[] = {
        {key20_0b, 20, "Hi There", 8, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"Jefe", 4, "what do ya want for nothing?", 28, 32, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {key20_aa, 20, dd, 50, 32, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {key25, 25, cd, 50, 32, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {key20_0c, 20, "Test With Truncation", 20, 16, "a3b6167473100ee06e0c796c2955552b"},   /* truncated to 128 bits */
        {key131, 131, t6, strlen(t6), 32, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {key131, 131, t7, strlen(t7), 32, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"}};
    for (int path = 0; path < N_PATHS; path++) {
        use_path(path);
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            df__hmac_sha256(v[i].key, v[i].klen, v[i].data, v[i].n, mac);
            CHECK_HEX(mac, v[i].out, v[i].mac);
            /* the same through a key made once, used for two messages, fed in pieces */
            df__hmac_key k;
            df__hmac m;
            df__hmac_key_init(&k, v[i].key, v[i].klen);
            for (int rep = 0; rep < 2; rep++) {
                df__hmac_begin(&m, &k);
                const unsigned char *p = (const unsigned char *)v[i].data;
                size_t half = v[i].n / 2 + (size_t)rep;
                df__hmac_update(&m, p, half);
                df__hmac_update(&m, p + half, v[i].n - half);
                memset(mac, 0, sizeof mac);
                df__hmac_final(&m, mac);
                CHECK_HEX(mac, v[i].out, v[i].mac);
            }
        }
    }
    df__sha256_force_portable(0);
}

/* Keys of every length 0..199 (shorter than, as long as and longer than a block) against
   Python's hmac: the SHA-256 of the MACs of data[0..300-k) under data[0..k). */
DF_TEST(hmac_sha256_key_lengths_against_python) {
    unsigned char data[1001], mac[32];
    for (int i = 0; i < 1001; i++) data[i] = (unsigned char)((i * 167 + (i >> 8) * 13) & 0xff);
    for (int path = 0; path < N_PATHS; path++) {
        use_path(path);
        df__sha256 all;
        df__sha256_init(&all);
        for (size_t k = 0; k < 200; k++) {
            df__hmac_sha256(data, k, data, 300 - k, mac);
            df__sha256_update(&all, mac, 32);
        }
        df__sha256_final(&all, mac);
        CHECK_HEX(mac, 32, "790568fa35f0a6b153534f5dda342784a8e6298e393784cafa7af9c6a4c2ec6f");
    }
    df__sha256_force_portable(0);
}

/* The SHA extensions are used where the CPU has them, and DF_NO_SHA_NI=1 turns them off. */
DF_TEST(sha256_path_choice) {
    int listed = cpuinfo_has_sha_ni();
    df__sha256_force_portable(0);
    unsetenv("DF_NO_SHA_NI");
#ifdef DF__SHA_NI
    /* valgrind's CPU hides the SHA extensions from CPUID (not from /proc/cpuinfo) */
    const char *preload = getenv("LD_PRELOAD");
    int emulated = preload && strstr(preload, "vgpreload");
    if (listed >= 0 && !emulated) CHECK_EQ_INT(df__cpu_has_sha_ni(), listed);
    if (listed == 0) CHECK_EQ_INT(df__cpu_has_sha_ni(), 0);
    CHECK(!strcmp(df__sha256_impl(), df__cpu_has_sha_ni() ? "sha-ni" : "portable"));
#else
    (void)listed;
    CHECK(!strcmp(df__sha256_impl(), "portable"));
#endif
    setenv("DF_NO_SHA_NI", "1", 1);
    df__sha256_force_portable(0);
    CHECK(!strcmp(df__sha256_impl(), "portable"));
    setenv("DF_NO_SHA_NI", "0", 1);
    df__sha256_force_portable(0);
#ifdef DF__SHA_NI
    CHECK(!strcmp(df__sha256_impl(), df__cpu_has_sha_ni() ? "sha-ni" : "portable"));
#endif
    unsetenv("DF_NO_SHA_NI");
    df__sha256_force_portable(1);
    CHECK(!strcmp(df__sha256_impl(), "portable"));
    df__sha256_force_portable(0);
    if (strcmp(df__sha256_impl(), "sha-ni")) printf("(test_crypto: no SHA extensions here; both passes ran the portable path)\n");
}

/* Both compressions give the same digests and MACs: every length 0..1000 at random offsets
   (misaligned), and a few MiB. */
DF_TEST(sha256_paths_agree) {
    size_t big = (size_t)3 << 20;
    unsigned char *buf = (unsigned char *)malloc(big + 64);
    CHECK(buf != NULL);
    if (!buf) return;
    fill(buf, big + 64);
    unsigned char d1[32], d2[32], m1[32], m2[32];
    int differ = 0;
    for (size_t n = 0; n <= 1000; n++) {
        size_t off = (size_t)(rng() % 17);
        df__sha256_force_portable(0);
        df__sha256_hash(buf + off, n, d1);
        df__hmac_sha256(buf + 2000, n % 150, buf + off, n, m1);
        df__sha256_force_portable(1);
        df__sha256_hash(buf + off, n, d2);
        df__hmac_sha256(buf + 2000, n % 150, buf + off, n, m2);
        differ += memcmp(d1, d2, 32) != 0 || memcmp(m1, m2, 32) != 0;
    }
    CHECK_EQ_INT(differ, 0);
    size_t sizes[] = {big, big - 1, big - 63, (size_t)1 << 20};
    for (int i = 0; i < 4; i++) {
        df__sha256_force_portable(0);
        df__sha256_hash(buf + (i & 1), sizes[i], d1);
        df__sha256_force_portable(1);
        df__sha256_hash(buf + (i & 1), sizes[i], d2);
        CHECK_MSG(!memcmp(d1, d2, 32), "the two paths differ on %zu bytes", sizes[i]);
    }
    df__sha256_force_portable(0);
    free(buf);
}

/* Updates split at random points (0-byte pieces included) equal the one-shot digest, on both
   paths. */
DF_TEST(sha256_split_updates_equal_one_shot) {
    size_t n = 200000;
    unsigned char *buf = (unsigned char *)malloc(n);
    CHECK(buf != NULL);
    if (!buf) return;
    fill(buf, n);
    for (int path = 0; path < N_PATHS; path++) {
        use_path(path);
        int bad = 0;
        for (int trial = 0; trial < 40; trial++) {
            size_t len = trial < 20 ? (size_t)(rng() % 700) : (size_t)(rng() % n);
            unsigned char one[32], split[32], mac_one[32], mac_split[32];
            df__sha256_hash(buf, len, one);
            df__hmac_sha256("key", 3, buf, len, mac_one);
            df__sha256 c;
            df__hmac_key k;
            df__hmac m;
            df__hmac_key_init(&k, "key", 3);
            df__sha256_init(&c);
            df__hmac_begin(&m, &k);
            for (size_t at = 0; at < len;) {
                size_t piece = (size_t)(rng() % (rng() & 1 ? 130 : 5000));
                if (piece > len - at) piece = len - at;
                df__sha256_update(&c, buf + at, piece);
                df__hmac_update(&m, buf + at, piece);
                at += piece;
            }
            df__sha256_final(&c, split);
            df__hmac_final(&m, mac_split);
            bad += memcmp(one, split, 32) != 0 || memcmp(mac_one, mac_split, 32) != 0;
        }
        CHECK_MSG(bad == 0, "%d of 40 split hashes differ from the one-shot ones (%s path)", bad, df__sha256_impl());
    }
    df__sha256_force_portable(0);
    free(buf);
}

DF_TEST(ct_equal) {
    unsigned char a[64], b[64];
    fill(a, sizeof a);
    memcpy(b, a, sizeof a);
    CHECK_EQ_INT(df__ct_equal(a, b, 64), 1);
    CHECK_EQ_INT(df__ct_equal(a, b, 0), 1);
    CHECK_EQ_INT(df__ct_equal("abc", "abd", 2), 1);
    CHECK_EQ_INT(df__ct_equal("abc", "abd", 3), 0);
    int wrong = 0;
    for (int i = 0; i < 64; i++)      /* every single-bit difference, at every position */
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (unsigned char)(1u << bit);
            wrong += df__ct_equal(a, b, 64) != 0;
            b[i] ^= (unsigned char)(1u << bit);
        }
    CHECK_EQ_INT(wrong, 0);
    memset(b, 0, sizeof b);
    for (int i = 0; i < 64; i++) b[i] = (unsigned char)~a[i];   /* every bit differs */
    CHECK_EQ_INT(df__ct_equal(a, b, 64), 0);
}

DF_TEST(random_bytes_from_the_os) {
    unsigned char x[64], y[64], zero[64];
    memset(zero, 0, sizeof zero);
    memset(x, 0, sizeof x); memset(y, 0, sizeof y);
    CHECK_EQ_INT(df__random_bytes(x, sizeof x), 0);
    CHECK_EQ_INT(df__random_bytes(y, sizeof y), 0);
    CHECK(memcmp(x, zero, 64) != 0);
    CHECK(memcmp(x, y, 64) != 0);
    CHECK_EQ_INT(df__random_bytes(x, 0), 0);
    /* the whole buffer is written: over 8 calls into a zeroed buffer every byte of 1000 comes
       out nonzero at least once (all 8 zero by chance: 2^-64 a byte) */
    static unsigned char seen[1000], r[1000];
    memset(seen, 0, sizeof seen);
    for (int call = 0; call < 8; call++) {
        memset(r, 0, sizeof r);
        CHECK_EQ_INT(df__random_bytes(r, sizeof r), 0);
        for (size_t i = 0; i < sizeof r; i++) seen[i] |= r[i] != 0;
    }
    size_t never = 0;
    for (size_t i = 0; i < sizeof seen; i++) never += !seen[i];
    CHECK_EQ_INT(never, 0);
    /* a large request (several calls of the system call where it returns less) */
    size_t big = (size_t)1 << 20;
    unsigned char *p = (unsigned char *)calloc(1, big);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(df__random_bytes(p, big), 0);
        CHECK(memcmp(p + big - 64, zero, 64) != 0);
        free(p);
    }
    /* the /dev/urandom fallback on its own */
    memset(x, 0, sizeof x); memset(y, 0, sizeof y);
    CHECK_EQ_INT(df__urandom(x, sizeof x), 0);
    CHECK_EQ_INT(df__urandom(y, sizeof y), 0);
    CHECK(memcmp(x, zero, 64) != 0);
    CHECK(memcmp(x, y, 64) != 0);
}
