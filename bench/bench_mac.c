/* What a frame's MAC costs (issue 28: every frame carries an HMAC-SHA256 over its payload,
   in place of the crc32c it carried): on a 64 MiB buffer (one large tensor), the crc32c
   (df_crc32c, what frames and checkpoints check now), HMAC-SHA256 on the x86 SHA extensions
   and on the portable compression, and SHA-256 alone on each: 5 rounds after a warm-up, each
   round timing every row once. Printed: the median time and GB/s of each, and the median of
   its per-round ratio to the crc32c's time.
   src/crypto.c is compiled here (its functions are internal to dataflow.c).
   Usage: bench_mac [--mib N] [--reps N] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#define DF_PRIVATE static
#include "../src/crypto.c"

enum { MAX_REPS = 101, N_ROWS = 5 };
static size_t bytes;
static const unsigned char *buf;
static uint32_t crc_sink;
static unsigned char mac_sink[32];
static df__hmac_key key;

static void run_crc(void) { crc_sink = df_crc32c(0, buf, bytes); }
static void run_hmac(void) {
    df__hmac m;
    df__hmac_begin(&m, &key);
    df__hmac_update(&m, buf, bytes);
    df__hmac_final(&m, mac_sink);
}
static void run_sha(void) { df__sha256_hash(buf, bytes, mac_sink); }

typedef struct row { const char *name; void (*fn)(void); int portable; double t[MAX_REPS], ratio[MAX_REPS]; } row;
static double timed(const row *r) {
    df__sha256_force_portable(r->portable);
    double t0 = now();
    r->fn();
    return now() - t0;
}

int main(int argc, char **argv) {
    int reps = 5;
    long mib = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = atol(argv[++i]);
        else { fprintf(stderr, "usage: bench_mac [--mib N] [--reps N]\n"); return 2; }
    }
    if (reps < 1 || reps > MAX_REPS || mib < 1 || mib > 4096) { fprintf(stderr, "bench_mac: bad --reps or --mib\n"); return 2; }
    bytes = (size_t)mib << 20;
    unsigned char *p = (unsigned char *)malloc(bytes);
    if (!p) { fprintf(stderr, "bench_mac: cannot allocate %ld MiB\n", mib); return 1; }
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < bytes; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; p[i] = (unsigned char)x; }
    buf = p;
    unsigned char secret[32];
    if (df__random_bytes(secret, sizeof secret)) { fprintf(stderr, "bench_mac: no random bytes from the OS\n"); return 1; }
    df__hmac_key_init(&key, secret, sizeof secret);

    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    df__sha256_force_portable(0);
    int has_ni = !strcmp(df__sha256_impl(), "sha-ni");
    static row rows[N_ROWS] = {{"crc32c (df_crc32c)", run_crc, 0, {0}, {0}},
                               {"HMAC-SHA256, SHA extensions", run_hmac, 0, {0}, {0}},
                               {"SHA-256, SHA extensions", run_sha, 0, {0}, {0}},
                               {"HMAC-SHA256, portable", run_hmac, 1, {0}, {0}},
                               {"SHA-256, portable", run_sha, 1, {0}, {0}}};
    unsigned char mac_ni[32], mac_portable[32];
    /* Each round times every row once, one after another, so a change in the machine's load
       or clock falls on all of them: the ratios are per round, then their median. */
    for (int r = -1; r < reps; r++) {          /* round -1: warm-up, not counted */
        for (int i = 0; i < N_ROWS; i++) {
            if (!has_ni && i >= 1 && i <= 2) continue;
            double t = timed(&rows[i]);
            if (i == 1) memcpy(mac_ni, mac_sink, 32);
            if (i == 3) memcpy(mac_portable, mac_sink, 32);
            if (r >= 0) rows[i].t[r] = t;
        }
        for (int i = 0; r >= 0 && i < N_ROWS; i++) rows[i].ratio[r] = rows[i].t[r] / rows[0].t[r];
    }
    df__sha256_force_portable(0);
    if (has_ni && memcmp(mac_ni, mac_portable, 32)) { fprintf(stderr, "bench_mac: the two paths' MACs differ\n"); return 1; }

    printf("MAC cost on %ld MiB, medians of %d rounds (CPU: %s; SHA extensions: %s)\n", mib, reps, cpu,
           has_ni ? "yes" : "no (or DF_NO_SHA_NI set)");
    printf("%-30s %10s %10s %16s\n", "", "ms", "GB/s", "time vs crc32c");
    for (int i = 0; i < N_ROWS; i++) {
        if (!has_ni && i >= 1 && i <= 2) continue;
        double t = median(rows[i].t, reps);
        printf("%-30s %10.2f %10.2f %15.2fx\n", rows[i].name, t * 1e3, (double)bytes / 1e9 / t, median(rows[i].ratio, reps));
    }
    printf("(crc32c of the buffer %08x)\n", (unsigned)crc_sink);
    free(p);
    return 0;
}
