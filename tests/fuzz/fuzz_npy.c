/* Fuzz target: the .npy reader and writer.

   The bytes go to a file (the reader takes a path) and df_tensor_read_npy reads it: any bytes
   must give a tensor or a status, never a crash, a leak or an out-of-bounds read. A tensor it
   reads is written back with df_tensor_write_npy and read again: dtype, shape and bytes must
   match (big-endian files come back little-endian, so the comparison is of the values read).
   A mismatch is a library bug and aborts, which the fuzzer reports with the input.

   The two temporary files are made once per process (mkstemp, in $TMPDIR or /tmp) and
   rewritten for each input; they are removed at exit. */
#define _POSIX_C_SOURCE 200809L          /* mkstemp, ftruncate, pwrite with -std=c11 */
#include "../../dataflow.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char input_path[4096], copy_path[4096];
static int input_fd = -1;

static void remove_temp_files(void) {
    if (input_path[0]) unlink(input_path);
    if (copy_path[0]) unlink(copy_path);
}

static void die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_npy: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

/* A harness failure (no temporary file), not a library bug, but there is nothing to go on with. */
static void make_temp_files(void) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(input_path, sizeof input_path, "%s/fuzz_npy_in_XXXXXX", dir);
    snprintf(copy_path, sizeof copy_path, "%s/fuzz_npy_copy_XXXXXX", dir);
    input_fd = mkstemp(input_path);
    int copy_fd = mkstemp(copy_path);
    if (input_fd < 0 || copy_fd < 0) die("cannot make temporary files in", dir);
    close(copy_fd);
    atexit(remove_temp_files);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (input_fd < 0) make_temp_files();
    if (ftruncate(input_fd, 0) != 0 || (size && pwrite(input_fd, data, size, 0) != (ssize_t)size))
        die("cannot write the input to", input_path);

    df_status st;
    df_tensor *t = df_tensor_read_npy(input_path, &st);
    if (!t) return 0;

    df_code code = df_tensor_write_npy(t, copy_path);
    if (code != DF_OK) die("a tensor read from .npy does not write back", df_code_name(code));
    df_tensor *back = df_tensor_read_npy(copy_path, &st);
    if (!back) die("a written .npy does not read back", st.message);

    if (df_tensor_dtype(back) != df_tensor_dtype(t)) die("the round trip changed the dtype", df_dtype_name(df_tensor_dtype(back)));
    if (df_tensor_rank(back) != df_tensor_rank(t)) die("the round trip changed the rank", NULL);
    for (int i = 0; i < df_tensor_rank(t); i++)
        if (df_tensor_dim(back, i) != df_tensor_dim(t, i)) die("the round trip changed the shape", NULL);
    if (df_tensor_nbytes(back) != df_tensor_nbytes(t) ||
        (df_tensor_nbytes(t) && memcmp(df_tensor_data(back), df_tensor_data(t), df_tensor_nbytes(t))))
        die("the round trip changed the data", NULL);

    df_tensor_release(back);
    df_tensor_release(t);
    return 0;
}
