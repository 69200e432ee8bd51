/* The test runner: runs every registered test (or those whose name contains argv[1]), except
   those named in DF_TEST_SKIP (test names separated by commas or spaces), which are listed as
   skipped: a build that runs suites in another configuration (tests/cuda/force_gpu.h) leaves out
   the tests that depend on the configuration it changes. */
#include "harness.h"
#include <stdarg.h>
#include <sys/stat.h>

typedef struct { const char *name, *file; df_test_fn fn; } df_test_entry;
static df_test_entry *tests;
static int n_tests, cap_tests, current_failures;

void df_test_register(const char *name, const char *file, df_test_fn fn) {
    if (n_tests == cap_tests) {
        cap_tests = cap_tests ? cap_tests * 2 : 64;
        tests = (df_test_entry *)realloc(tests, (size_t)cap_tests * sizeof *tests);
        if (!tests) { fprintf(stderr, "out of memory\n"); exit(2); }
    }
    tests[n_tests].name = name; tests[n_tests].file = file; tests[n_tests].fn = fn; n_tests++;
}

void df_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    current_failures++;
    if (current_failures > 20) return;
    fprintf(stdout, "    %s:%d: ", file, line);
    va_start(ap, fmt); vfprintf(stdout, fmt, ap); va_end(ap);
    fputc('\n', stdout);
}

const char *df_test_tmpdir(void) {
    static const char *dir = "build/test-tmp";
    mkdir("build", 0755); mkdir(dir, 0755);
    return dir;
}

static int by_file_then_name(const void *a, const void *b) {
    const df_test_entry *x = (const df_test_entry *)a, *y = (const df_test_entry *)b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

/* Whether name is one of the words of list (separated by commas or spaces). */
static int in_list(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        while (*p == ',' || *p == ' ') p++;
        size_t k = 0;
        while (p[k] && p[k] != ',' && p[k] != ' ') k++;
        if (k == len && !strncmp(p, name, len)) return 1;
        p += k;
    }
    return 0;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0, skipped = 0;
    const char *filter = argc > 1 ? argv[1] : NULL, *skip = getenv("DF_TEST_SKIP");
    int trace = getenv("DF_TEST_TRACE") != NULL;   /* name each test before it runs (finds a crash) */
    qsort(tests, (size_t)n_tests, sizeof *tests, by_file_then_name);
    for (int i = 0; i < n_tests; i++) {
        if (filter && !strstr(tests[i].name, filter) && !strstr(tests[i].file, filter)) continue;
        if (skip && in_list(skip, tests[i].name)) { skipped++; printf("skip %s (DF_TEST_SKIP)\n", tests[i].name); continue; }
        current_failures = 0;
        if (trace) { printf("run  %s\n", tests[i].name); fflush(stdout); }
        tests[i].fn();
        if (current_failures) { failed++; printf("FAIL %s (%s)\n", tests[i].name, tests[i].file); }
        else { passed++; printf("ok   %s\n", tests[i].name); }
        fflush(stdout);
    }
    if (skipped) printf("(%d skipped)\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
