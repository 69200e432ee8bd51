#!/usr/bin/env python3
"""TensorFlow's cost of a traced run, beside bench_executor's "traced" column.

    .venv/bin/python bench/peers/tf_trace.py [--threads 1] [--quick]

The chain of 10,000 NoOps of bench/peers/tf_executor.py (the same session config: Grappler
and the graph passes off, so every node runs), timed untraced and with
RunOptions(trace_level=FULL_TRACE) into a RunMetadata. Prints ns per node for both and
their ratio."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tf_executor as te  # noqa: E402  (its graph building and session config)

v1 = te.v1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    gd = te.new_graphdef()
    te.add_noop(gd, "c0")
    for k in range(1, te.CHAIN_LEN):
        te.add_noop(gd, "c%d" % k, ("c%d" % (k - 1),))
    g, target = te.import_target(gd, "c%d" % (te.CHAIN_LEN - 1), fast=False)
    g.finalize()
    warm, reps = (3, 7) if args.quick else (10, 25)
    opts = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE)
    with v1.Session(graph=g, config=te.session_config(args.threads)) as sess:
        sess.run(target)
        off, _, _ = te.timed_runs(lambda: sess.run(target), warm, reps)

        def traced():
            md = v1.RunMetadata()
            sess.run(target, options=opts, run_metadata=md)
        on, _, _ = te.timed_runs(traced, warm, reps)
    n = te.CHAIN_LEN
    te.out("tensorflow chain of %d NoOps, %d thread(s): untraced %.1f ns/node, FULL_TRACE %.1f ns/node, "
           "traced/untraced %.2fx" % (n, args.threads, off / n * 1e9, on / n * 1e9, on / off))


if __name__ == "__main__":
    main()
