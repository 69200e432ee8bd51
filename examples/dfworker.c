/* dfworker: a worker process. It listens on a TCP port and serves what a master session sends
   (see docs/clusters.md), until a master asks it to shut down or it is killed.

     build/dfworker --port 2222 [--host 0.0.0.0] [--task N] [--cpus N] [--max-message-bytes B]

   Prints "dfworker: task N listening on HOST:PORT (incarnation X)" once it listens (--port 0
   picks a free port; the line says which). Errors are one "dfworker: ..." line on stderr. */
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
static int usage(const char *why) {
    fprintf(stderr, "dfworker: %s (usage: dfworker --port PORT [--host ADDR] [--task N] [--cpus N] [--max-message-bytes B])\n", why);
    return 2;
}
int main(int argc, char **argv) {
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.port = -1;
    ctx c = {NULL, 0};
    for (int i = 1; i < argc; i += 2) {   /* each option takes one value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("dfworker --port PORT [--host ADDR] [--task N] [--cpus N] [--max-message-bytes B]\n"
                   "  serves graph partitions to dataflow master sessions over TCP (PORT 0: any free port)\n");
            return 0;
        }
        if (!v) return usage("an option without its value");
        long long n = strtoll(v, &end, 10);
        int numeric = end && !*end && *v;
        if (!strcmp(a, "--port") && numeric && n >= 0 && n <= 65535) o.port = (int)n;
        else if (!strcmp(a, "--task") && numeric && n >= 0 && n < 1000000) o.task = (int)n;
        else if (!strcmp(a, "--cpus") && numeric && n >= 1 && n <= 16) o.num_cpu_devices = (int)n;
        else if (!strcmp(a, "--max-message-bytes") && numeric && n >= 1024) o.max_message_bytes = (uint64_t)n;
        else if (!strcmp(a, "--host")) o.host = v;
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
