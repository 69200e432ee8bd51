/* What a frame's MAC costs (issue 28: every frame carries an HMAC-SHA256 over its payload,
   in place of the crc32c it carried): on a 64 MiB buffer (one large tensor), the crc32c
   (df_crc32c, what frames and checkpoints check now), HMAC-SHA256 on the x86 SHA extensions
   and on the portable compression, each the median of 5 timed runs after a warm-up. Printed:
   GB/s and the ratio of each MAC's time to the crc32c's. Also SHA-256 alone on each path.
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

enum { MAX_REPS = 101 };
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

/* The median seconds of reps timed runs of fn, after one untimed. */
static double time_median(void (*fn)(void), int reps) {
    double t[MAX_REPS];
    fn();
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        fn();
        t[i] = now() - t0;
    }
    return median(t, reps);
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
    printf("MAC cost on %ld MiB, median of %d runs (CPU: %s; SHA extensions: %s)\n", mib, reps, cpu,
           has_ni ? "yes" : "no (or DF_NO_SHA_NI set)");
    double t_crc = time_median(run_crc, reps);
    double gb = (double)bytes / 1e9;
    printf("%-30s %10s %10s %16s\n", "", "ms", "GB/s", "time vs crc32c");
    printf("%-30s %10.2f %10.2f %15.2fx\n", "crc32c (df_crc32c)", t_crc * 1e3, gb / t_crc, 1.0);
    unsigned char mac_ni[32] = {0}, mac_portable[32];
    for (int path = has_ni ? 0 : 1; path < 2; path++) {
        df__sha256_force_portable(path);
        const char *name = path ? "portable" : "SHA extensions";
        char label[64];
        double t = time_median(run_hmac, reps);
        memcpy(path ? mac_portable : mac_ni, mac_sink, 32);
        snprintf(label, sizeof label, "HMAC-SHA256, %s", name);
        printf("%-30s %10.2f %10.2f %15.2fx\n", label, t * 1e3, gb / t, t / t_crc);
        t = time_median(run_sha, reps);
        snprintf(label, sizeof label, "SHA-256, %s", name);
        printf("%-30s %10.2f %10.2f %15.2fx\n", label, t * 1e3, gb / t, t / t_crc);
    }
    df__sha256_force_portable(0);
    if (has_ni && memcmp(mac_ni, mac_portable, 32)) { fprintf(stderr, "bench_mac: the two paths' MACs differ\n"); return 1; }
    printf("(crc32c of the buffer %08x)\n", (unsigned)crc_sink);
    free(p);
    return 0;
}
