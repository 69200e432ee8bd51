#!/usr/bin/env python3
"""TensorFlow 1.x-style peer for the dataflow executor benchmarks.

Run with the virtualenv made by bench/peers/setup.sh:

    .venv/bin/python bench/peers/tf_executor.py --threads 1
    .venv/bin/python bench/peers/tf_executor.py --threads 2 --only while --quick

Graph mode (tf.compat.v1, disable_v2_behavior) with v1 control flow
(disable_control_flow_v2: while_loop builds Enter/Merge/Switch/Exit/
NextIteration), one DirectSession whose inter_op and intra_op thread pools
both have --threads threads.

Benchmarks (steady state: warm-up runs, then the median of timed
session.run calls, time.perf_counter):
  chain  10,000 NoOps, each with a control dependency on the previous one;
         the last one is run as a target.           -> ns per node
  dag    D levels of W NoOps (default 1024 x 1024); node i of level d has
         control dependencies on nodes i and (i+1)%W of level d-1; the target
         is one final NoOp depending on every node of the last level.
                                                    -> ns per node (W*D+1 nodes)
  while  i = 0; while i < N: i += 1  (int32 scalars, tf.compat.v1.while_loop,
         parallel_iterations=10, N fed through a placeholder, N = 1,000,000
         or 100,000 with --quick; result checked == N) -> us per iteration

Graph optimisation is switched OFF in the session (OptimizerOptions L0 and
Grappler's meta optimizer disabled).  With TF's defaults, common-subexpression
elimination merges all the identical NoOps of a DAG level and Grappler's
dependency optimizer removes NoOps, so the 1024x1024 DAG runs as 2 nodes and
the benchmark would measure nothing.  A traced run checks how many nodes
actually execute.  --defaults keeps TensorFlow's default optimisation (what a
user gets; the executor is then not what is measured).

The graphs are built as GraphDef protobufs.  The chain (10k nodes) goes
through the public tf.compat.v1.import_graph_def.  For the 1M-node DAG that
public path costs ~80 us per node in Python (it wraps every node in a Python
Operation), so the DAG is imported with the C-level importer the public
function itself uses (TF_GraphImportGraphDefWithResults) and only the target
op gets a Python wrapper; if that private API is missing the script falls
back to import_graph_def with a 256x256 DAG (same shape rule).

stdout carries only machine-readable lines:
  tf_version X.Y.Z threads T
  tf_chain_ns_per_node 1234.5
  tf_dag_ns_per_node 567.8 dims 1024x1024
  tf_while_us_per_iter 25.3
Timings of each phase (build, import, first run, ...) go to stderr.
"""

import argparse
import gc
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

tf.get_logger().setLevel("ERROR")
v1 = tf.compat.v1
v1.disable_v2_behavior()
v1.disable_control_flow_v2()

CHAIN_LEN = 10_000
DAG_DEFAULT = (1024, 1024)       # width x depth
DAG_QUICK = (256, 256)
DAG_FALLBACK = (256, 256)        # when the fast C-level import is unavailable
WHILE_N = 1_000_000
WHILE_N_QUICK = 100_000
WHILE_WARM_N = 1000


def info(msg):
    print("# " + msg, file=sys.stderr, flush=True)


def out(msg):
    print(msg, flush=True)


DEFAULTS = False   # --defaults: TensorFlow's default graph optimisation


def session_config(threads):
    cfg = v1.ConfigProto(inter_op_parallelism_threads=threads,
                         intra_op_parallelism_threads=threads)
    if DEFAULTS:
        return cfg
    # No CSE / constant folding / inlining, no Grappler: run the graph as built.
    cfg.graph_options.optimizer_options.opt_level = v1.OptimizerOptions.L0
    cfg.graph_options.rewrite_options.disable_meta_optimizer = True
    return cfg


def new_graphdef():
    gd = v1.GraphDef()
    gd.versions.producer = tf.version.GRAPH_DEF_VERSION
    return gd


def add_noop(gd, name, deps=()):
    n = gd.node.add()
    n.name = name
    n.op = "NoOp"
    if deps:
        n.input.extend(["^" + d for d in deps])
    return n


def fast_import_available():
    try:
        from tensorflow.python.client import pywrap_tf_session as c_api
        from tensorflow.python.framework import c_api_util
        need = ("TF_NewBufferFromString", "TF_DeleteBuffer",
                "TF_GraphImportGraphDefWithResults",
                "TF_ImportGraphDefOptionsSetPrefix",
                "TF_ImportGraphDefOptionsAddReturnOperation",
                "TF_ImportGraphDefResultsReturnOperations")
        return (all(hasattr(c_api, f) for f in need)
                and hasattr(c_api_util, "ScopedTFImportGraphDefOptions")
                and hasattr(c_api_util, "ScopedTFImportGraphDefResults")
                and hasattr(tf.Graph, "_create_op_from_tf_operation")
                and hasattr(tf.Graph, "_mutation_lock"))
    except Exception:  # pragma: no cover - depends on TF build
        return False


def import_target(gd, target, fast):
    """Import gd into a new tf.Graph; return (graph, target Operation)."""
    g = tf.Graph()
    if not fast:
        with g.as_default():
            v1.import_graph_def(gd, name="")
        return g, g.get_operation_by_name(target)
    from tensorflow.python.client import pywrap_tf_session as c_api
    from tensorflow.python.framework import c_api_util
    buf = c_api.TF_NewBufferFromString(gd.SerializeToString())
    try:
        opts = c_api_util.ScopedTFImportGraphDefOptions()
        c_api.TF_ImportGraphDefOptionsSetPrefix(opts.options, "")
        c_api.TF_ImportGraphDefOptionsAddReturnOperation(opts.options, target)
        with g._mutation_lock():  # pylint: disable=protected-access
            res = c_api_util.ScopedTFImportGraphDefResults(
                c_api.TF_GraphImportGraphDefWithResults(
                    g._c_graph, buf, opts.options))  # pylint: disable=protected-access
            c_op = c_api.TF_ImportGraphDefResultsReturnOperations(res.results)[0]
            op = g._create_op_from_tf_operation(c_op)  # pylint: disable=protected-access
    finally:
        c_api.TF_DeleteBuffer(buf)
    return g, op


def executed_nodes(sess, target):
    """Number of (non-internal) nodes a traced run of target executes."""
    md = v1.RunMetadata()
    sess.run(target, options=v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE),
             run_metadata=md)
    return sum(1 for ds in md.step_stats.dev_stats for ns in ds.node_stats
               if not ns.node_name.startswith("_"))


def timed_runs(fn, warm, reps):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts), max(ts)


# --------------------------------------------------------------------- chain
def bench_chain(args):
    t0 = time.perf_counter()
    gd = new_graphdef()
    add_noop(gd, "c0")
    for k in range(1, CHAIN_LEN):
        add_noop(gd, "c%d" % k, ("c%d" % (k - 1),))
    g, target = import_target(gd, "c%d" % (CHAIN_LEN - 1), fast=False)
    g.finalize()
    del gd
    t1 = time.perf_counter()
    with v1.Session(graph=g, config=session_config(args.threads)) as sess:
        sess.run(target)
        t2 = time.perf_counter()
        n_exec = executed_nodes(sess, target)
        if n_exec != CHAIN_LEN:
            info("WARNING chain: traced run executed %d nodes, expected %d"
                 % (n_exec, CHAIN_LEN))
        warm, reps = (5, 11) if args.quick else (20, 51)
        med, lo, hi = timed_runs(lambda: sess.run(target), warm, reps)
    # session.run overhead, for reference: a graph with one NoOp
    g1 = tf.Graph()
    with g1.as_default():
        one = v1.no_op(name="one")
    with v1.Session(graph=g1, config=session_config(args.threads)) as sess:
        med_empty, _, _ = timed_runs(lambda: sess.run(one), warm, reps)
    t3 = time.perf_counter()
    info("chain: %d nodes, build+import %.2fs, first run %.2fs, executed "
         "nodes (traced) %d, median run %.3f ms (min %.3f, max %.3f, %d reps); "
         "1-NoOp session.run %.1f us (chain net of it: %.1f ns/node); "
         "part total %.1fs"
         % (CHAIN_LEN, t1 - t0, t2 - t1, n_exec, med * 1e3, lo * 1e3,
            hi * 1e3, reps, med_empty * 1e6,
            (med - med_empty) / CHAIN_LEN * 1e9, t3 - t0))
    out("tf_chain_ns_per_node %.1f" % (med / CHAIN_LEN * 1e9))


# ----------------------------------------------------------------------- dag
def build_dag(w, d):
    gd = new_graphdef()
    for lvl in range(d):
        for i in range(w):
            if lvl:
                add_noop(gd, "n%d_%d" % (lvl, i),
                         ("n%d_%d" % (lvl - 1, i),
                          "n%d_%d" % (lvl - 1, (i + 1) % w)))
            else:
                add_noop(gd, "n0_%d" % i)
    add_noop(gd, "final", ["n%d_%d" % (d - 1, i) for i in range(w)])
    return gd


def bench_dag(args):
    t0 = time.perf_counter()
    fast = fast_import_available()
    if args.dag_dims:
        w, d = args.dag_dims
    elif args.quick:
        w, d = DAG_QUICK
    else:
        w, d = DAG_DEFAULT
    if not fast:
        info("dag: C-level GraphDef import unavailable; using "
             "tf.compat.v1.import_graph_def")
        if not args.dag_dims:
            w, d = DAG_FALLBACK
    nodes = w * d + 1

    # Check, on a small DAG with the same shape rule, that the session
    # config really executes every node (no CSE / dependency optimizer).
    cg, ctarget = import_target(build_dag(32, 32), "final", fast=False)
    with v1.Session(graph=cg, config=session_config(args.threads)) as sess:
        n_exec = executed_nodes(sess, ctarget)
    if n_exec != 32 * 32 + 1:
        info("WARNING dag: traced 32x32 check executed %d nodes, expected %d"
             % (n_exec, 32 * 32 + 1))
    del cg, ctarget

    tb = time.perf_counter()
    gd = build_dag(w, d)
    ti = time.perf_counter()
    g, target = import_target(gd, "final", fast=fast)
    g.finalize()
    del gd
    gc.collect()
    t1 = time.perf_counter()
    with v1.Session(graph=g, config=session_config(args.threads)) as sess:
        sess.run(target)
        t2 = time.perf_counter()
        warm, reps = (1, 3) if args.quick else (3, 7)
        med, lo, hi = timed_runs(lambda: sess.run(target), warm, reps)
    del g, target
    gc.collect()
    t3 = time.perf_counter()
    info("dag: %dx%d (%d nodes), 32x32 check executed %d nodes, GraphDef "
         "build %.2fs, import (%s) %.2fs, first run %.2fs, median run %.2f ms "
         "(min %.2f, max %.2f, %d reps); part total %.1fs"
         % (w, d, nodes, n_exec, ti - tb,
            "C-level" if fast else "import_graph_def", t1 - ti, t2 - t1,
            med * 1e3, lo * 1e3, hi * 1e3, reps, t3 - t0))
    out("tf_dag_ns_per_node %.1f dims %dx%d" % (med / nodes * 1e9, w, d))


# --------------------------------------------------------------------- while
def bench_while(args):
    t0 = time.perf_counter()
    n_iter = WHILE_N_QUICK if args.quick else WHILE_N
    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        res = v1.while_loop(lambda i: tf.less(i, n),
                            lambda i: tf.add(i, tf.constant(1, tf.int32)),
                            [tf.constant(0, tf.int32)])
    types = {op.type for op in g.get_operations()}
    missing = {"Enter", "Merge", "Switch", "Exit", "NextIteration"} - types
    if missing:
        info("WARNING while: v1 control-flow ops missing: %s" % sorted(missing))
    g.finalize()
    with v1.Session(graph=g, config=session_config(args.threads)) as sess:
        def run(k):
            v = sess.run(res, {n: k})
            if v != k:
                raise SystemExit("while: got %r, expected %d" % (v, k))
        t1 = time.perf_counter()
        for _ in range(5):
            run(WHILE_WARM_N)
        t2 = time.perf_counter()
        warm, reps = (0, 3) if args.quick else (1, 5)
        med, lo, hi = timed_runs(lambda: run(n_iter), warm, reps)
    t3 = time.perf_counter()
    info("while: N=%d, %d graph ops, warm-up (5 x N=%d) %.2fs, median run "
         "%.3f s (min %.3f, max %.3f, %d reps); part total %.1fs"
         % (n_iter, len(g.get_operations()), WHILE_WARM_N, t2 - t1, med, lo,
            hi, reps, t3 - t0))
    out("tf_while_us_per_iter %.3f" % (med / n_iter * 1e6))


def parse_dims(s):
    try:
        w, d = (int(x) for x in s.lower().split("x"))
        if w < 2 or d < 1:
            raise ValueError
        return w, d
    except ValueError:
        raise argparse.ArgumentTypeError("expected WIDTHxDEPTH, e.g. 256x256")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1,
                    help="inter_op and intra_op parallelism threads (default 1)")
    ap.add_argument("--only", choices=("chain", "dag", "while"),
                    help="run only this benchmark")
    ap.add_argument("--quick", action="store_true",
                    help="while N=100,000, dag 256x256, fewer repetitions")
    ap.add_argument("--dag-dims", type=parse_dims, metavar="WxD",
                    help="DAG width x depth (default 1024x1024, 256x256 "
                         "with --quick)")
    ap.add_argument("--defaults", action="store_true",
                    help="TensorFlow's default graph optimisation (Grappler on)")
    args = ap.parse_args()
    global DEFAULTS
    DEFAULTS = args.defaults
    if args.threads < 1:
        ap.error("--threads must be >= 1")

    t0 = time.perf_counter()
    out("tf_version %s threads %d" % (tf.__version__, args.threads))
    for name, fn in (("chain", bench_chain), ("dag", bench_dag),
                     ("while", bench_while)):
        if args.only in (None, name):
            fn(args)
    info("total %.1fs" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
