#!/usr/bin/env python3
"""TensorFlow peer of bench/bench_distributed.c: the tiny step over two workers.

    .venv/bin/python bench/peers/tf_dist_step.py [--steps 200] [--reps 9] [--warm 50]

Two tf.distribute.Server tasks of one cluster {"worker": [two loopback ports]}, each started in
a subprocess of its own (as our workers are processes of their own), then a tf.compat.v1
graph-mode Session against grpc://task 0 (the master, as TF's distributed runtime has it:
task 0's server is the master and worker 0 at once) running x + 1 on /job:worker/task:0 and
then + 1 on /job:worker/task:1, x fed from this process and the sum fetched here. Warm-up
runs, then REPS timings of STEPS steps each; the median per-step time.

stdout carries only machine-readable lines:
  tf_version X.Y.Z
  tf_dist_step_us 1234.5 reps 9 steps 200
Notes (server start, checks) go to stderr.
"""

import argparse
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_util import info, out  # noqa: E402

SERVER = r"""
import sys, os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf
spec = tf.train.ClusterSpec({"worker": sys.argv[1].split(",")})
cfg = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=1)
server = tf.distribute.Server(spec, job_name="worker", task_index=int(sys.argv[2]), config=cfg, start=True)
print("ready", flush=True)
sys.stdin.read()          # until the parent closes our stdin
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--warm", type=int, default=50)
    a = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    hosts = ",".join("127.0.0.1:%d" % free_port() for _ in range(2))
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", SERVER, hosts, str(i)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for i in range(2)]
    try:
        for p in procs:
            if p.stdout.readline().strip() != "ready":
                info("a tf.distribute.Server did not start")
                return 1
        info("servers up in %.1f s: %s" % (time.perf_counter() - t0, hosts))
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()
        out("tf_version %s" % tf.__version__)
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [], name="x")
            with tf.device("/job:worker/task:0"):
                y = x + 1.0
            with tf.device("/job:worker/task:1"):
                y = y + 1.0
        cfg = tf.compat.v1.ConfigProto()
        with tf.compat.v1.Session("grpc://" + hosts.split(",")[0], graph=g, config=cfg) as s:
            v = s.run(y, {x: 1.0})
            if v != 3.0:
                info("wrong value %r" % v)
                return 1
            for _ in range(a.warm):
                s.run(y, {x: 1.0})
            ts = []
            for _ in range(a.reps):
                t = time.perf_counter()
                for _ in range(a.steps):
                    s.run(y, {x: 1.0})
                ts.append((time.perf_counter() - t) / a.steps * 1e6)
            ts.sort()
            info("per-step us, sorted: " + " ".join("%.1f" % u for u in ts))
            out("tf_dist_step_us %.1f reps %d steps %d" % (ts[len(ts) // 2], a.reps, a.steps))
    finally:
        for p in procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
