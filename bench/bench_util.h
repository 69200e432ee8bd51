/* Helpers the benchmarks share: a monotonic clock, the median of a sample, the CPU's name. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
/* Sorts v in place. */
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}
/* The "model name" line of /proc/cpuinfo, or "unknown". */
static inline void cpu_model(char *out, size_t size) {
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        line[strcspn(line, "\n")] = 0;
        snprintf(out, size, "%s", v);
        break;
    }
    fclose(f);
}
#endif
