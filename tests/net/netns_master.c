/* The master side of the network-namespace test (build.sh: netns_check): three dfworker
   processes, each in a network namespace of its own with its own address, serve a while loop
   whose body spans all three, forward and gradient; the results must equal one process's.
   Usage: netns_master host:port,host:port,host:port   (exit 0: equal; 1: not; 2: no run) */
#include "span_loop.h"

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: netns_master host:port,host:port,host:port\n"); return 2; }
    return span_loop_check("netns_master", argv[1]);
}
