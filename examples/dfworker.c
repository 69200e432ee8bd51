/* dfworker: a worker process. It listens on a TCP port and serves what a master session sends
   (see docs/clusters.md and SECURITY.md), until a master holding the cluster key asks it to
   shut down or it is killed.

     build/dfworker --port 2222 [--key-file PATH] [--host ADDR] [--task N] [--cpus N] [--gpus N]
                    [--data-dir DIR] [--memory-limit BYTES] [--cluster H:P,H:P]
                    [--max-message-bytes B] [--insecure] [--no-shutdown]

   Prints "dfworker: task N listening on HOST:PORT" once it listens (--port 0 picks a free
   port; the line says which). Errors are one "dfworker: ..." line on stderr. --gpus N serves N
   GPUs (-1: every visible one) as /job:worker/task:N/device:GPU:j: build it with
   -DDATAFLOW_CUDA and link dataflow_cuda.o (see docs/clusters.md, "GPUs on workers"). */
#include "../dataflow.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctx { const char *host; int task; } ctx;
static void listening(int port, void *user) {
    const ctx *c = (const ctx *)user;
    printf("dfworker: task %d listening on %s:%d\n", c->task, c->host ? c->host : "127.0.0.1", port);
    fflush(stdout);
}
static void log_line(void *user, const char *line) {
    const ctx *c = (const ctx *)user;
    fprintf(stderr, "dfworker task %d: %s\n", c->task, line);
}
#define DFW_USAGE "dfworker --port PORT [--key-file PATH] [--host ADDR] [--task N] [--cpus N] [--gpus N] [--data-dir DIR]\n" \
    "         [--memory-limit BYTES[K|M|G]] [--cluster HOST:PORT,...] [--max-message-bytes B] [--insecure] [--no-shutdown]"
static int usage(const char *why) {
    fprintf(stderr, "dfworker: %s (usage: dfworker --port PORT [options]; dfworker --help lists them)\n", why);
    return 2;
}
/* "123", "64K", "512M", "2G": bytes, or 0 when malformed */
static unsigned long long bytes_of(const char *v) {
    char *end = NULL;
    unsigned long long n = strtoull(v, &end, 10), mul = 1;
    if (!end || end == v || *v == '-') return 0;
    if (*end == 'K' || *end == 'k') mul = 1ull << 10;
    else if (*end == 'M' || *end == 'm') mul = 1ull << 20;
    else if (*end == 'G' || *end == 'g') mul = 1ull << 30;
    else if (*end) return 0;
    if (mul > 1 && end[1]) return 0;
    return n > ~0ull / mul ? 0 : n * mul;
}
int main(int argc, char **argv) {
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.port = -1;
    ctx c = {NULL, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(DFW_USAGE "\n"
                   "  serves graph partitions to dataflow master sessions over TCP (PORT 0: any free port)\n"
                   "  --key-file PATH     the cluster's secret (16+ bytes, mode 600): masters and workers\n"
                   "                      prove it before anything else, and every frame is signed with it;\n"
                   "                      masters read it from DF_CLUSTER_KEY_FILE. Make one with\n"
                   "                      (umask 077; openssl rand -hex 32 > cluster.key)\n"
                   "  --host ADDR         the address to listen on (127.0.0.1); another needs --key-file or --insecure\n"
                   "  --data-dir DIR      files the graphs save and restore stay inside DIR (none: no file access)\n"
                   "  --gpus N            serve N GPUs after the CPUs (-1: every visible GPU; needs a -DDATAFLOW_CUDA build)\n"
                   "  --memory-limit B    bytes per device, variables included (over it: RESOURCE_EXHAUSTED)\n"
                   "  --cluster LIST      the only workers this one sends tensors to\n"
                   "  --insecure          listen beyond loopback without a key (a trusted network only)\n"
                   "  --no-shutdown       refuse SHUTDOWN messages, even from a keyed master\n"
                   "  SECURITY.md says what the key protects and what it does not.\n");
            return 0;
        }
        if (!strcmp(a, "--insecure")) { o.insecure = 1; continue; }
        if (!strcmp(a, "--no-shutdown")) { o.shutdown = DF_WORKER_SHUTDOWN_NEVER; continue; }
        if (!v) return usage("an option without its value");
        i++;
        long long n = strtoll(v, &end, 10);
        int numeric = end && !*end && *v;
        if (!strcmp(a, "--port") && numeric && n >= 0 && n <= 65535) o.port = (int)n;
        else if (!strcmp(a, "--task") && numeric && n >= 0 && n < 1000000) o.task = (int)n;
        else if (!strcmp(a, "--cpus") && numeric && n >= 1 && n <= 16) o.num_cpu_devices = (int)n;
        else if (!strcmp(a, "--gpus") && numeric && n >= -1 && n <= 16) o.num_gpu_devices = (int)n;
        else if (!strcmp(a, "--max-message-bytes") && numeric && n >= 1024) o.max_message_bytes = (uint64_t)n;
        else if (!strcmp(a, "--memory-limit") && bytes_of(v) >= 4096) o.memory_limit = (size_t)bytes_of(v);
        else if (!strcmp(a, "--host")) o.host = v;
        else if (!strcmp(a, "--key-file")) o.key_file = v;
        else if (!strcmp(a, "--data-dir")) o.data_dir = v;
        else if (!strcmp(a, "--cluster")) o.cluster = v;
        else return usage("a bad option or value");
    }
    if (o.port < 0) return usage("--port is required");
    c.host = o.host;
    c.task = o.task;
    o.on_listening = listening;
    o.log = log_line;
    o.log_user = &c;
    df_status st;
    if (df_worker_serve(&o, &st) != DF_OK) {
        fprintf(stderr, "dfworker: %s\n", st.message);
        return 1;
    }
    return 0;
}
