/* A worker's devices in a build without GPUs (tests/cuda/test_gpu_worker.c has the GPU side):
   num_gpu_devices is refused with a status that says how to get GPUs, HELLO names the CPUs, and
   soft placement sends an op asked for on a worker's missing GPU to that same task's CPU (not
   to the first task's). */
#include "harness.h"

static void quiet(void *user, const char *line) { (void)user; (void)line; }

DF_TEST(worker_devices_gpus_refused_without_cuda_and_hello_names_the_cpus) {
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.log = quiet;
    o.task = 2;
    o.num_cpu_devices = 2;
    df_status st;
#ifndef DATAFLOW_CUDA
    o.num_gpu_devices = 1;
    CHECK(df_worker_start(&o, &st) == NULL);
    CHECK_STATUS(&st, DF_UNIMPLEMENTED, "DATAFLOW_CUDA");
    o.num_gpu_devices = -1;                       /* every visible GPU: none here, so none */
    df_worker *none = df_worker_start(&o, &st);
    CHECK_MSG(none != NULL, "num_gpu_devices -1 without CUDA: %s", st.message);
    df_worker_stop(none);
#endif
    o.num_gpu_devices = -2;
    CHECK(df_worker_start(&o, &st) == NULL);
    CHECK(st.code == DF_INVALID_ARGUMENT);
    o.num_gpu_devices = 0;
    df_worker *w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "worker: %s", st.message);
    if (!w) return;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", df_worker_port(w));
    df_worker_info info;
    memset(&info, 0, sizeof info);
    CHECK_EQ_INT(df_worker_hello(addr, 2000, &info, &st), DF_OK);
    CHECK_EQ_INT(info.num_devices, 2);
    CHECK_MSG(!strcmp(info.devices[0], "/job:worker/replica:0/task:2/device:CPU:0"), "%s", info.devices[0]);
    CHECK_MSG(!strcmp(info.devices[1], "/job:worker/replica:0/task:2/device:CPU:1"), "%s", info.devices[1]);
    df_worker_stop(w);
}

DF_TEST(worker_devices_soft_placement_keeps_the_task) {
    df_worker *w[2] = {NULL, NULL};
    char target[128] = "";
    for (int i = 0; i < 2; i++) {
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = i;
        o.log = quiet;
        o.key_file = getenv("DF_CLUSTER_KEY_FILE");
        df_status st;
        if (!(w[i] = df_worker_start(&o, &st))) { CHECK_MSG(0, "worker %d: %s", i, st.message); if (i) df_worker_stop(w[0]); return; }
        size_t k = strlen(target);
        snprintf(target + k, sizeof target - k, "%s127.0.0.1:%d", i ? "," : "", df_worker_port(w[i]));
    }
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_graph_push_device(g, "/job:worker/task:1/device:GPU:0");
    df_output y = df_mul(g, x, df_scalar_f32(g, 3));
    df_graph_pop_device(g);
    for (int soft = 0; soft < 2; soft++) {
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.target = target;
        so.soft_placement = soft;
        df_status st;
        df_session *s = df_session_new(g, &so, &st);
        CHECK_MSG(s != NULL, "session: %s", st.message);
        if (!s) continue;
        df_tensor *xv = df_tensor_scalar_f32(2), *out = NULL;
        df_session_run(s, &x, &xv, 1, &y, &out, 1, NULL, 0, &st);
        if (!soft) {
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "GPU:0");
            CHECK(out == NULL);
        } else {
            CHECK_OK(&st);
            if (out) CHECK_NEAR(*(float *)df_tensor_data(out), 6, 0);
            const char *dev = NULL;
            for (int i = 0; i < df_session_num_partitions(s); i++) {
                const char *d = NULL;
                const df_graph *p = df_session_partition(s, i, &d);
                if (p && df_graph_find(p, df_node_name(y.node))) dev = d;
            }
            CHECK_MSG(dev && !strcmp(dev, "/job:worker/replica:0/task:1/device:CPU:0"), "Mul on %s", dev ? dev : "nothing");
        }
        df_tensor_release(out);
        df_tensor_release(xv);
        df_session_free(s);
    }
    df_graph_free(g);
    for (int i = 0; i < 2; i++) df_worker_stop(w[i]);
}
