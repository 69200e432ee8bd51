/* What the fuzz targets let run: a graph's run must end in bounded time, in bounded memory,
   and touch nothing outside the process. A run with a deadline (df_session_options.
   run_timeout_ms) may hold anything that could run or wait without end: loops, queues
   (fuzz_runnable_with_deadline). Without one (a worker's steps, which only their master's
   deadline ends) such a graph is not run: loops (NextIteration; While before lowering) and
   queues (a dequeue waits for an enqueue) (fuzz_runnable). Neither runs a graph that touches
   files (SaveV2, RestoreV2) or other processes (_Send, _Recv), nor convolutions and pooling
   whose static shapes are unknown or whose work (at most the product of their two largest
   tensors) is over 4e7.
   Included by the fuzz targets that run what they build or import (static inline functions). */
#ifndef DF_FUZZ_BOUNDS_H
#define DF_FUZZ_BOUNDS_H
#include "../../dataflow.h"
#include <stdint.h>
#include <string.h>

static inline int fuzz_op_is(const df_node *n, const char *const *names) {
    for (int i = 0; names[i]; i++) if (!strcmp(df_node_op(n), names[i])) return 1;
    return 0;
}

/* The elements of o's static shape; -1 when it is not fully known. */
static inline int64_t fuzz_known_elements(df_output o) {
    int64_t dims[DF_MAX_RANK], n = 1;
    int rank = df_output_shape(o, dims);
    if (rank < 0) return -1;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) return -1;
        if (dims[d] && n > INT64_MAX / 4 / dims[d]) return INT64_MAX / 4;
        n *= dims[d];
    }
    return n;
}

/* Whether g's convolutions and pooling have fully known static shapes whose work (at most
   the product of the two largest tensors of each) is at most 4e7. */
static inline int fuzz_bounded_work(const df_graph *g) {
    static const char *const heavy[] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "AvgPool",
                                        "MaxPoolGrad", "AvgPoolGrad", NULL};
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *n = df_graph_node_at(g, i);
        if (!fuzz_op_is(n, heavy)) continue;
        int64_t big[2] = {0, 0};
        int n_in = df_node_num_inputs(n);
        for (int k = 0; k < n_in + df_node_num_outputs(n); k++) {
            df_output o = k < n_in ? df_node_input(n, k) : (df_output){n, k - n_in};
            int64_t e = fuzz_known_elements(o);
            if (e < 0) return 0;
            if (e > big[0]) { big[1] = big[0]; big[0] = e; }
            else if (e > big[1]) big[1] = e;
        }
        if (big[1] && big[0] > (int64_t)4e7 / big[1]) return 0;
    }
    return 1;
}

/* Whether a run of g with a deadline stays inside the process and within bounded work (see above). */
static inline int fuzz_runnable_with_deadline(const df_graph *g) {
    static const char *const refused[] = {"SaveV2", "RestoreV2", "_Send", "_Recv", "_HostSend", "_HostRecv", "_GpuGraph", NULL};
    for (int i = 0; i < df_graph_num_nodes(g); i++)
        if (fuzz_op_is(df_graph_node_at(g, i), refused)) return 0;
    return fuzz_bounded_work(g);
}

/* Whether a run of g is bounded in time and stays inside the process (see above). */
static inline int fuzz_runnable(const df_graph *g) {
    static const char *const unbounded[] = {"NextIteration", "While", "StatelessWhile", "FIFOQueueV2", "QueueEnqueueV2",
                                            "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2", "QueueCloseV2",
                                            "QueueSizeV2", "QueueIsClosedV2", NULL};
    for (int i = 0; i < df_graph_num_nodes(g); i++)
        if (fuzz_op_is(df_graph_node_at(g, i), unbounded)) return 0;
    return fuzz_runnable_with_deadline(g);
}

/* Whether every output of every node of g has a fully known static shape of at most max_elements. */
static inline int fuzz_small_shapes(const df_graph *g, int64_t max_elements) {
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *n = df_graph_node_at(g, i);
        for (int k = 0; k < df_node_num_outputs(n); k++) {
            int64_t e = fuzz_known_elements((df_output){n, k});
            if (e < 0 || e > max_elements) return 0;
        }
    }
    return 1;
}
#endif
