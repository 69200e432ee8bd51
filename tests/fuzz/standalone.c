/* Replays fuzz inputs without libFuzzer: main() calls LLVMFuzzerTestOneInput on every file
   named on the command line and on every file in the directories named (not recursively).
   Linked with one fuzz target, it is the regression test of the committed corpora
   (./build.sh test) and a way to reproduce a crash with gcc and a debugger:

       cc -g -I. tests/fuzz/standalone.c tests/fuzz/fuzz_npy.c dataflow.c -lm -lpthread
       ./a.out build/fuzz-crashes/npy-crash-...

   Prints how many inputs ran; exits 2 when a path cannot be read (a missing corpus must not
   pass as an empty one). A bug in the library shows as a sanitizer report or an abort. */
#define _POSIX_C_SOURCE 200809L          /* scandir, alphasort, stat with -std=c11 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer's -max_len in ./build.sh fuzz is 64 KiB; a replayed file may be bigger (a crash
   found elsewhere), but not without bound. */
#define STANDALONE_MAX_INPUT ((long)64 << 20)

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "standalone: cannot open '%s'\n", path); return 0; }
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || size > STANDALONE_MAX_INPUT || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "standalone: cannot read '%s' (or it is over 64 MiB)\n", path);
        fclose(f);
        return 0;
    }
    /* An exact-size heap copy, so that ASan sees a read past the input's end. */
    uint8_t *data = (uint8_t *)malloc(size ? (size_t)size : 1);
    int ok = data && fread(data, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!ok) { fprintf(stderr, "standalone: cannot read '%s'\n", path); free(data); return 0; }
    LLVMFuzzerTestOneInput(data, (size_t)size);
    free(data);
    return 1;
}

int main(int argc, char **argv) {
    long n_inputs = 0;
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat info;
        if (stat(argv[i], &info) != 0) { fprintf(stderr, "standalone: no such file or directory '%s'\n", argv[i]); bad = 1; continue; }
        if (!S_ISDIR(info.st_mode)) { if (run_file(argv[i])) n_inputs++; else bad = 1; continue; }
        struct dirent **entries;
        int n = scandir(argv[i], &entries, NULL, alphasort);   /* sorted: the same order every run */
        if (n < 0) { fprintf(stderr, "standalone: cannot list '%s'\n", argv[i]); bad = 1; continue; }
        for (int k = 0; k < n; k++) {
            size_t len = strlen(argv[i]) + strlen(entries[k]->d_name) + 2;
            char *path = (char *)malloc(len);
            if (path) {
                snprintf(path, len, "%s/%s", argv[i], entries[k]->d_name);
                if (stat(path, &info) == 0 && S_ISREG(info.st_mode)) {
                    if (run_file(path)) n_inputs++;
                    else bad = 1;
                }
            } else bad = 1;
            free(path);
            free(entries[k]);
        }
        free(entries);
    }
    printf("standalone: %ld inputs ran\n", n_inputs);
    return bad ? 2 : 0;
}
