/* test_gpu_worker.c - GPU devices on workers: a worker started with num_gpu_devices serves
   /job:worker/replica:0/task:N/device:GPU:j, and a master places on it.

   Workers run in this process on loopback (df_worker_start), the master is a session with a
   target. Values cross between tasks in host memory: a value in a worker's GPU memory goes to
   the host before the wire, and a Recv into a GPU copies it from the host; under the emulator a
   device pointer read on the host faults at once (or fails the send with EFAULT), so these
   tests also prove that no device memory is read as host memory on the way.
     - HELLO names the GPU after the CPU; df_worker_start refuses GPUs it cannot have;
     - a MatMul on task 0's GPU fed from the master, its result on task 1's CPU and back on
       task 0's GPU, against the same graph run in one process on the CPU;
     - a variable in task 0's GPU memory updated over several steps from the master and read
       on task 1;
     - soft placement: an op without a GPU kernel asked for on a worker's GPU runs on that
       task's CPU (without it: INVALID_ARGUMENT naming the node);
     - the same MatMul on a keyed cluster (every frame signed).

   Built with the GPU test programs (build.sh: the emulated GPU; tests/cuda/device_check.sh:
   dataflow_cuda.o on a real GPU). The emulator's counters are weak, NULL on a real GPU. */
#define _POSIX_C_SOURCE 200809L
#include "../harness.h"
#include "gpu_emulator.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#pragma weak df_emu_launches
#pragma weak df_emu_h2d_copies
#pragma weak df_emu_d2h_copies
#pragma weak df_emu_pinned_regions

static void gw_quiet(void *user, const char *line) { (void)user; (void)line; }
static int64_t gw_launches(void) { return df_emu_launches ? df_emu_launches() : 0; }
static int64_t gw_h2d(void) { return df_emu_h2d_copies ? df_emu_h2d_copies() : 0; }
static int64_t gw_d2h(void) { return df_emu_d2h_copies ? df_emu_d2h_copies() : 0; }

/* Workers 0..n-1 in this process (worker 0 with `gpus` GPUs, the others with none); their
   addresses into target. */
static int gw_start(int n, int gpus, const char *key_file, df_worker **w, char *target, size_t tn) {
    target[0] = '\0';
    for (int i = 0; i < n; i++) {
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = i;
        o.num_gpu_devices = i == 0 ? gpus : 0;
        o.key_file = key_file;
        o.log = gw_quiet;
        df_status st;
        if (!(w[i] = df_worker_start(&o, &st))) {
            CHECK_MSG(0, "worker %d: %s", i, st.message);
            for (int k = 0; k < i; k++) df_worker_stop(w[k]);
            return 0;
        }
        size_t k = strlen(target);
        snprintf(target + k, tn - k, "%s127.0.0.1:%d", i ? "," : "", df_worker_port(w[i]));
    }
    return 1;
}

/* The device of the partition holding the node named `name`; NULL if none does. */
static const char *gw_device_of(df_session *s, const char *name) {
    for (int i = 0; i < df_session_num_partitions(s); i++) {
        const char *dev = NULL;
        const df_graph *p = df_session_partition(s, i, &dev);
        if (p && df_graph_find(p, name)) return dev;
    }
    return NULL;
}

static df_tensor *gw_matrix(int rows, int cols, float base) {
    df_tensor *t = df_tensor_new(DF_FLOAT, 2, (const int64_t[]){rows, cols}, NULL);
    for (int i = 0; t && i < rows * cols; i++) ((float *)df_tensor_data(t))[i] = base + 0.25f * (float)((i * 7) % 11) - 1.0f;
    return t;
}

DF_TEST(gpu_worker_hello_names_its_gpu_after_its_cpu) {
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    o.task = 3;
    o.log = gw_quiet;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "worker: %s", st.message);
    if (!w) return;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", df_worker_port(w));
    df_worker_info info;
    memset(&info, 0, sizeof info);
    CHECK_EQ_INT(df_worker_hello(addr, 2000, &info, &st), DF_OK);
    CHECK_EQ_INT(info.num_devices, 2);
    CHECK_MSG(!strcmp(info.devices[0], "/job:worker/replica:0/task:3/device:CPU:0"), "device 0: %s", info.devices[0]);
    CHECK_MSG(!strcmp(info.devices[1], "/job:worker/replica:0/task:3/device:GPU:0"), "device 1: %s", info.devices[1]);
    df_worker_stop(w);
    /* -1: every visible GPU (at least the one above) */
    o.num_gpu_devices = -1;
    w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "worker with every GPU: %s", st.message);
    if (w) {
        snprintf(addr, sizeof addr, "127.0.0.1:%d", df_worker_port(w));
        CHECK_EQ_INT(df_worker_hello(addr, 2000, &info, &st), DF_OK);
        CHECK_MSG(info.num_devices >= 2 && strstr(info.devices[info.num_devices - 1], "/device:GPU:"), "last device: %s", info.devices[info.num_devices - 1]);
        df_worker_stop(w);
    }
    /* more GPUs than there are, or a negative count: refused with a status, nothing listens */
    o.num_gpu_devices = 1000;
    CHECK(df_worker_start(&o, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "GPU");
    o.num_gpu_devices = -2;
    CHECK(df_worker_start(&o, &st) == NULL);
    CHECK(st.code == DF_INVALID_ARGUMENT);
}

/* y = a b on task 0's GPU (a and b fed from the master), z = y + 1 on task 1's CPU, u = 2z back
   on task 0's GPU; without `devices`, the same graph unplaced (the reference, in one process). */
static df_graph *gw_matmul_graph(int devices, df_output *a, df_output *b, df_output *y, df_output *z, df_output *u) {
    df_graph *g = df_graph_new();
    *a = df_placeholder(g, "a", DF_FLOAT, 2, (const int64_t[]){4, 3});
    *b = df_placeholder(g, "b", DF_FLOAT, 2, (const int64_t[]){3, 5});
    if (devices) df_graph_push_device(g, "/job:worker/task:0/device:GPU:0");
    *y = df_matmul(g, *a, *b, 0, 0);
    if (devices) df_graph_pop_device(g);
    if (devices) df_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
    *z = df_add(g, *y, df_scalar_f32(g, 1));
    if (devices) df_graph_pop_device(g);
    if (devices) df_graph_push_device(g, "/job:worker/task:0/device:GPU:0");
    *u = df_mul(g, *z, df_scalar_f32(g, 2));
    if (devices) df_graph_pop_device(g);
    return g;
}

static void gw_matmul_over_two_workers(const char *key_file) {
    df_worker *w[2] = {NULL, NULL};
    char target[256];
    if (!gw_start(2, 1, key_file, w, target, sizeof target)) return;
    df_output a, b, y, z, u, ra, rb, ry, rz, ru;
    df_graph *g = gw_matmul_graph(1, &a, &b, &y, &z, &u), *ref = gw_matmul_graph(0, &ra, &rb, &ry, &rz, &ru);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.cluster_key_file = key_file;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    df_session *rs = df_session_new(ref, NULL, &st);
    CHECK_MSG(rs != NULL, "reference session: %s", st.message);
    int64_t l0 = gw_launches(), h0 = gw_h2d(), d0 = gw_d2h();
    for (int step = 0; s && rs && step < 3; step++) {
        df_tensor *in[2] = {gw_matrix(4, 3, (float)step), gw_matrix(3, 5, 0.5f * (float)step)};
        df_tensor *out[3] = {NULL, NULL, NULL}, *want[3] = {NULL, NULL, NULL};
        df_output feeds[2] = {a, b}, fetch[3] = {y, z, u}, rfeeds[2] = {ra, rb}, rfetch[3] = {ry, rz, ru};
        CHECK_EQ_INT(df_session_run(s, feeds, in, 2, fetch, out, 3, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        CHECK_EQ_INT(df_session_run(rs, rfeeds, in, 2, rfetch, want, 3, NULL, 0, &st), DF_OK);
        for (int k = 0; k < 3; k++) {
            CHECK_MSG(out[k] && want[k] && df_tensor_num_elements(out[k]) == 20, "fetch %d missing or of the wrong size", k);
            for (int i = 0; out[k] && want[k] && i < 20; i++)
                CHECK_NEAR(((float *)df_tensor_data(out[k]))[i], ((float *)df_tensor_data(want[k]))[i], 1e-4);
            df_tensor_release(out[k]); df_tensor_release(want[k]);
        }
        df_tensor_release(in[0]); df_tensor_release(in[1]);
    }
    if (s) {                               /* where the nodes ran */
        const char *dy = gw_device_of(s, df_node_name(y.node)), *dz = gw_device_of(s, df_node_name(z.node)),
                   *du = gw_device_of(s, df_node_name(u.node));
        CHECK_MSG(dy && !strcmp(dy, "/job:worker/replica:0/task:0/device:GPU:0"), "MatMul on %s", dy ? dy : "nothing");
        CHECK_MSG(dz && !strcmp(dz, "/job:worker/replica:0/task:1/device:CPU:0"), "Add on %s", dz ? dz : "nothing");
        CHECK_MSG(du && !strcmp(du, "/job:worker/replica:0/task:0/device:GPU:0"), "Mul on %s", du ? du : "nothing");
    }
    if (df_emu_launches) {                 /* the emulated GPU ran the kernels; values crossed its memory */
        CHECK_MSG(gw_launches() - l0 >= 6, "%lld launches", (long long)(gw_launches() - l0));
        CHECK_MSG(gw_h2d() - h0 >= 9 && gw_d2h() - d0 >= 6, "%lld copies to the GPU, %lld back", (long long)(gw_h2d() - h0), (long long)(gw_d2h() - d0));
        CHECK_MSG(df_emu_pinned_regions() > 0, "the values left the GPU for the wire without pinned host memory");
    }
    df_session_free(s); df_session_free(rs);
    df_graph_free(g); df_graph_free(ref);
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}

DF_TEST(gpu_worker_matmul_on_a_worker_gpu_fed_from_the_master_against_the_cpu) { gw_matmul_over_two_workers(NULL); }

DF_TEST(gpu_worker_matmul_on_a_keyed_cluster) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/df_gpu_worker_key_%d", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    CHECK(f != NULL);
    if (!f) return;
    fputs("0123456789abcdef0123456789abcdef", f);
    fclose(f);
    gw_matmul_over_two_workers(path);
    remove(path);
}

/* v (a [2,3] variable) on task 0's GPU: v = 1 at first, then v += x (fed from the master) at each
   step, read on task 1's CPU as 10v. */
DF_TEST(gpu_worker_variable_on_a_worker_gpu_updated_over_steps) {
    df_worker *w[2] = {NULL, NULL};
    char target[256];
    if (!gw_start(2, 1, NULL, w, target, sizeof target)) return;
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){2, 3});
    df_graph_push_device(g, "/job:worker/task:0/device:GPU:0");
    df_output v = df_variable(g, "v", DF_FLOAT, 2, (const int64_t[]){2, 3});
    df_node *init = df_assign(g, v, x);
    df_node *upd = df_assign_add(g, v, x);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
    df_output r = df_mul(g, v, df_scalar_f32(g, 10));
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    float expect[6];
    df_tensor *ones = df_tensor_new(DF_FLOAT, 2, (const int64_t[]){2, 3}, NULL);
    for (int i = 0; i < 6; i++) { ((float *)df_tensor_data(ones))[i] = 1; expect[i] = 1; }
    if (s) {
        CHECK_EQ_INT(df_session_run(s, &x, &ones, 1, NULL, NULL, 0, &init, 1, &st), DF_OK);
        CHECK_OK(&st);
    }
    for (int step = 0; s && step < 5; step++) {
        df_tensor *xv = df_tensor_new(DF_FLOAT, 2, (const int64_t[]){2, 3}, NULL);
        for (int i = 0; i < 6; i++) { ((float *)df_tensor_data(xv))[i] = (float)(step + 1) * 0.5f + (float)i; expect[i] += (float)(step + 1) * 0.5f + (float)i; }
        CHECK_EQ_INT(df_session_run(s, &x, &xv, 1, NULL, NULL, 0, &upd, 1, &st), DF_OK);
        CHECK_OK(&st);
        df_tensor *out = NULL;
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &r, &out, 1, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        for (int i = 0; out && i < 6; i++) CHECK_NEAR(((float *)df_tensor_data(out))[i], 10 * expect[i], 1e-3);
        df_tensor_release(out);
        df_tensor_release(xv);
    }
    if (s) {
        const char *dv = gw_device_of(s, "v");     /* (the last run's plan: the read) */
        CHECK_MSG(dv && !strcmp(dv, "/job:worker/replica:0/task:0/device:GPU:0"), "the variable on %s", dv ? dv : "nothing");
    }
    df_tensor_release(ones);
    df_session_free(s);
    df_graph_free(g);
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}

/* Lgamma has no GPU kernel: asked for on task 1's GPU, it runs on task 1's CPU with soft
   placement (not on task 0's), and fails naming the node without it. */
DF_TEST(gpu_worker_soft_placement_falls_back_to_the_same_task_cpu) {
    df_worker *w[2] = {NULL, NULL};
    char target[256];
    target[0] = '\0';
    for (int i = 0; i < 2; i++) {                /* task 0 without a GPU, task 1 with one */
        df_worker_options wo;
        memset(&wo, 0, sizeof wo);
        wo.task = i;
        wo.num_gpu_devices = i;
        wo.log = gw_quiet;
        df_status st;
        if (!(w[i] = df_worker_start(&wo, &st))) { CHECK_MSG(0, "worker %d: %s", i, st.message); if (i) df_worker_stop(w[0]); return; }
        size_t k = strlen(target);
        snprintf(target + k, sizeof target - k, "%s127.0.0.1:%d", i ? "," : "", df_worker_port(w[i]));
    }
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, (const int64_t[]){3});
    df_graph_push_device(g, "/job:worker/task:1/device:GPU:0");
    df_op_builder *ob = df_op_new(g, "Lgamma", "lg");
    df_op_add_input(ob, x);
    df_output lg = {df_op_finish(ob), 0};
    df_output sq = df_mul(g, lg, lg);            /* (a GPU kernel: stays on the GPU) */
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    for (int soft = 0; soft < 2; soft++) {
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.target = target;
        o.soft_placement = soft;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        CHECK_MSG(s != NULL, "session: %s", st.message);
        if (!s) continue;
        df_tensor *xv = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){3}, NULL), *out[2] = {NULL, NULL};
        for (int i = 0; i < 3; i++) ((float *)df_tensor_data(xv))[i] = (float)(2 * i + 1);
        df_output f[2] = {lg, sq};
        df_session_run(s, &x, &xv, 1, f, out, 2, NULL, 0, &st);
        if (!soft) {
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "lg");
            CHECK(out[0] == NULL);
        } else {
            CHECK_OK(&st);
            static const double want[3] = {0.0, 0.69314718, 3.17805383};   /* lgamma(1), lgamma(3), lgamma(5) */
            for (int i = 0; out[0] && out[1] && i < 3; i++) {
                CHECK_NEAR(((float *)df_tensor_data(out[0]))[i], want[i], 1e-5);
                CHECK_NEAR(((float *)df_tensor_data(out[1]))[i], want[i] * want[i], 1e-4);
            }
            const char *dl = gw_device_of(s, "lg"), *dm = gw_device_of(s, df_node_name(sq.node));
            CHECK_MSG(dl && !strcmp(dl, "/job:worker/replica:0/task:1/device:CPU:0"), "Lgamma on %s", dl ? dl : "nothing");
            CHECK_MSG(dm && !strcmp(dm, "/job:worker/replica:0/task:1/device:GPU:0"), "Mul on %s", dm ? dm : "nothing");
        }
        df_tensor_release(out[0]); df_tensor_release(out[1]); df_tensor_release(xv);
        df_session_free(s);
    }
    df_graph_free(g);
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}
