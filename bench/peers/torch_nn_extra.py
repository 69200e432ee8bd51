#!/usr/bin/env python3
"""PyTorch peer for bench/bench_nn_extra.c (depthwise convolution and batch norm).

Run with the virtualenv made by bench/peers/setup.sh; bench_nn_extra starts it:

    .venv/bin/python bench/peers/torch_nn_extra.py --threads 1,2 --dw 1,112,112,32,1 ... --bn 8,56,56,144
        [--warm 2 --reps 15]

--dw n,h,w,c,stride: a 3x3 depthwise convolution (channel multiplier 1) in PyTorch's own
layout, eager mode, CPU: x [n,c,h,w] contiguous NCHW, w [c,1,3,3],
F.conv2d(x, w, stride=s, padding=1, groups=c) (TensorFlow's SAME output size; what a
PyTorch user writes). The forward runs under torch.no_grad(); the gradients come from
autograd on a graph built once: torch.autograd.grad(y, x, dy, retain_graph=True) for the
input gradient, the same with w for the filter gradient.

--bn n,h,w,c: F.batch_norm(x, running_mean, running_var, weight, bias, training=True,
momentum=0.1, eps=0.001) on x [n,c,h,w] (the forward under no_grad), and its backward
torch.autograd.grad(y, [x, weight, bias], dy, retain_graph=True).

torch.set_num_threads(t) for each thread count t. Warm-up calls, then the median of
individually timed calls (time.perf_counter; with --cpu, time.process_time: CPU time of the
process, all its threads).

stdout carries only machine-readable lines:
  version 2.x.y
  dw <case> <threads> fwd_us|bwd_input_us|bwd_filter_us <median microseconds>
  bn <case> <threads> fwd_us|bwd_us <median microseconds>
or one line "skip REASON" when torch is missing.
"""

import argparse
import statistics
import time

from peer_util import out, median_us


def median_cpu_us(fn, warm, reps):
    """median_us with the process's CPU time instead of the wall clock."""
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        ts.append(time.process_time() - t0)
    return statistics.median(ts) * 1e6


def ints(s):
    return [int(v) for v in s.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1", help="comma-separated thread counts")
    ap.add_argument("--dw", action="append", default=[], type=ints)
    ap.add_argument("--bn", action="append", default=[], type=ints)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--cpu", action="store_true", help="time with the process's CPU time")
    args = ap.parse_args()
    timed = median_cpu_us if args.cpu else median_us
    threads = [int(t) for t in args.threads.split(",") if t]
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip torch not importable in this Python (bench/peers/setup.sh could not install it?): %s" % e)
        return
    out("version %s" % torch.__version__)
    gen = torch.Generator().manual_seed(7)
    for i, (n, h, w, c, s) in enumerate(args.dw):
        oh, ow = -(-h // s), -(-w // s)
        xin = torch.rand(n, c, h, w, generator=gen) * 2 - 1
        win = torch.rand(c, 1, 3, 3, generator=gen) * 0.2 - 0.1
        dy = torch.rand(n, c, oh, ow, generator=gen) * 2 - 1
        x = xin.clone().requires_grad_(True)
        wt = win.clone().requires_grad_(True)
        y = F.conv2d(x, wt, stride=s, padding=1, groups=c)
        if tuple(y.shape) != (n, c, oh, ow):
            out("skip dw case %d: PyTorch's output is %s" % (i, list(y.shape)))
            return

        def forward():
            with torch.no_grad():
                return F.conv2d(xin, win, stride=s, padding=1, groups=c)

        for t in threads:
            torch.set_num_threads(t)
            out("dw %d %d fwd_us %.1f" % (i, t, timed(forward, args.warm, args.reps)))
            us = timed(lambda: torch.autograd.grad(y, x, dy, retain_graph=True), args.warm, args.reps)
            out("dw %d %d bwd_input_us %.1f" % (i, t, us))
            us = timed(lambda: torch.autograd.grad(y, wt, dy, retain_graph=True), args.warm, args.reps)
            out("dw %d %d bwd_filter_us %.1f" % (i, t, us))
    for i, (n, h, w, c) in enumerate(args.bn):
        xin = torch.rand(n, c, h, w, generator=gen) * 2 - 1
        dy = torch.rand(n, c, h, w, generator=gen) * 2 - 1
        rm, rv = torch.zeros(c), torch.ones(c)
        g = torch.rand(c, generator=gen) + 0.5
        b = torch.rand(c, generator=gen) - 0.5

        def forward():
            with torch.no_grad():
                return F.batch_norm(xin, rm, rv, g, b, training=True, momentum=0.1, eps=0.001)

        x = xin.clone().requires_grad_(True)
        gp, bp = g.clone().requires_grad_(True), b.clone().requires_grad_(True)
        y = F.batch_norm(x, rm.clone(), rv.clone(), gp, bp, training=True, momentum=0.1, eps=0.001)
        for t in threads:
            torch.set_num_threads(t)
            out("bn %d %d fwd_us %.1f" % (i, t, timed(forward, args.warm, args.reps)))
            us = timed(lambda: torch.autograd.grad(y, [x, gp, bp], dy, retain_graph=True), args.warm, args.reps)
            out("bn %d %d bwd_us %.1f" % (i, t, us))


if __name__ == "__main__":
    main()
