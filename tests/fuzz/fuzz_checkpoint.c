/* Fuzz target: the checkpoint reader (df_checkpoint_read_buffer, the same parser as a file).

   Any bytes must give a tensor or a status, never a crash, a leak or an out-of-bounds read. The
   first byte picks the name looked up ("a", "b", "w", "layer/w" or the empty name); the rest is
   the file. A tensor read is checked against the bytes of the file it came from by writing it
   to a new checkpoint and reading that back: dtype, shape and bytes must match.

   The seeds (tests/fuzz/corpus/checkpoint/) are checkpoints written by df_checkpoint_write:
   one float vector, several dtypes and shapes, an empty tensor, a scalar, and a damaged copy. */
#define _POSIX_C_SOURCE 200809L
#include "../../dataflow.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char copy_path[4096];
static void remove_copy(void) { if (copy_path[0]) unlink(copy_path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const names[] = {"a", "b", "w", "layer/w", ""};
    if (!size) return 0;
    const char *name = names[data[0] % 5];
    df_status st;
    df_tensor *t = df_checkpoint_read_buffer(data + 1, size - 1, name, &st);
    if (!t) {
        if (st.code == DF_OK) { fprintf(stderr, "fuzz_checkpoint: no tensor and no error\n"); abort(); }
        return 0;
    }
    if (!copy_path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(copy_path, sizeof copy_path, "%s/fuzz_checkpoint_%ld.ckpt", dir && *dir ? dir : "/tmp", (long)getpid());
        atexit(remove_copy);
    }
    if (df_checkpoint_write(copy_path, 1, &name, &t, &st) != DF_OK) { fprintf(stderr, "fuzz_checkpoint: rewrite: %s\n", st.message); abort(); }
    df_tensor *u = df_checkpoint_read(copy_path, name, &st);
    int same = u && df_tensor_dtype(u) == df_tensor_dtype(t) && df_tensor_rank(u) == df_tensor_rank(t) &&
               df_tensor_nbytes(u) == df_tensor_nbytes(t) && !memcmp(df_tensor_data(u), df_tensor_data(t), df_tensor_nbytes(t));
    for (int d = 0; same && d < df_tensor_rank(t); d++) same = df_tensor_dim(u, d) == df_tensor_dim(t, d);
    if (!same) { fprintf(stderr, "fuzz_checkpoint: a tensor read does not survive a rewrite\n"); abort(); }
    df_tensor_release(u);
    df_tensor_release(t);
    return 0;
}
