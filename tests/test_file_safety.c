/* test_file_safety.c - files the library opens by a name from a graph or a caller: a FIFO given
   as a checkpoint or a .npy file is refused at once (FAILED_PRECONDITION), never a thread
   blocked for good; checkpoint writes go through a new, unguessable temporary file that leaves
   nothing behind. POSIX (mkfifo) and the public API. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static void temp_dir(char *dir, size_t n) {
    snprintf(dir, n, "/tmp/df_file_safety_%ld", (long)getpid());
    mkdir(dir, 0700);
}
/* Entries of dir other than . and .. */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

DF_TEST(fifo_named_as_a_checkpoint_or_npy_is_refused_at_once) {
    char dir[128], fifo[192];
    temp_dir(dir, sizeof dir);
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    df_status st = {0};
    df_tensor *t = df_checkpoint_read(fifo, "w", &st);
    CHECK(t == NULL);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "not a regular file");
    df_status_clear(&st);
    t = df_tensor_read_npy(fifo, &st);
    CHECK(t == NULL);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "not a regular file");
    int64_t dims[1] = {3};
    df_tensor *x = df_tensor_new(DF_FLOAT, 1, dims, NULL);
    CHECK_EQ_INT(df_tensor_write_npy(x, fifo), DF_FAILED_PRECONDITION);   /* nobody reads it: ENXIO, not a block */
    df_tensor_release(x);
    unlink(fifo);
    rmdir(dir);
}

DF_TEST(checkpoint_writes_leave_no_temporary_file) {
    char dir[128], path[192];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck", dir);
    int64_t dims[1] = {4};
    df_tensor *x = df_tensor_new(DF_FLOAT, 1, dims, NULL);
    for (int i = 0; i < 4; i++) ((float *)df_tensor_data(x))[i] = (float)i;
    const char *names[1] = {"w"};
    df_status st = {0};
    for (int k = 0; k < 3; k++) CHECK_EQ_INT(df_checkpoint_write(path, 1, names, &x, &st), DF_OK);
    CHECK_EQ_INT(entries(dir), 1);
    df_tensor *back = df_checkpoint_read(path, "w", &st);
    CHECK(back != NULL && ((const float *)df_tensor_data(back))[3] == 3.0f);
    df_tensor_release(back);
    df_tensor_release(x);
    unlink(path);
    rmdir(dir);
}
