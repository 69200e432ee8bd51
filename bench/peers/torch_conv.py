#!/usr/bin/env python3
"""PyTorch peer for bench/bench_kernels.c (convolutions and a small CNN).

Run with the virtualenv made by bench/peers/setup.sh; bench_kernels starts it
after writing its inputs (build/kernels_*.npy):

    .venv/bin/python bench/peers/torch_conv.py --threads 1,2 --case 8,56,56,64,3,64,1,0 ...
        [--warm 1 --reps 5 --cnn-warm 3 --cnn-reps 15 --cnn-losses 5] [--dir build]

--case n,h,w,c,k,oc,stride,check: the NHWC convolution of bench_kernels in
PyTorch's own layout, eager mode, CPU: x [n,c,h,w], w [oc,c,k,k] and dy
[n,oc,oh,ow] contiguous NCHW, F.conv2d(x, w, stride=s, padding=k//2) (the same
output size as TensorFlow's SAME, and what a PyTorch user writes). The forward
runs under torch.no_grad(); the gradients come from autograd on a graph built
once: torch.autograd.grad(y, x, dy, retain_graph=True) for the input gradient
and the same with w for the filter gradient (autograd computes only the one
asked for). Warm-up calls, then the median of individually timed calls
(time.perf_counter).

With check=1 the inputs are bench_kernels' own (kernels_conv<i>_in_{x,w,dy}
.npy, NHWC and HWIO, transposed here) and the three outputs are computed
once more with TensorFlow's SAME padding, which is uneven for a stride of 2
(F.pad, then an unpadded convolution), and written back in NHWC / HWIO to
kernels_conv<i>_pytorch_{y,dx,dw}.npy.

The CNN: the model of tf_conv.py in NCHW (conv 5x5x32 padding 2 + bias + relu
+ max_pool2d 2, conv 5x5x64 + bias + relu + max_pool2d 2, flatten, dense 128
+ relu, dense 10, F.cross_entropy), from kernels_cnn_*.npy; the first dense
weight's rows are reordered from NHWC to NCHW flattening once, at load. One
step: zero_grad(set_to_none=True), forward, loss.backward(),
torch.optim.SGD(lr=0.01).step().

torch.set_num_threads(t) for each thread count t.

stdout carries only machine-readable lines:
  version 2.x.y
  conv <case> <threads> fwd_us|bwd_input_us|bwd_filter_us <median microseconds>
  checked <case>
  cnn <threads> loss<k> <loss of step k, from 0>
  cnn <threads> step_us <median microseconds>
or one line "skip REASON" when torch or the inputs are missing.
"""

import argparse
import os

from peer_util import out, median_us

LR = 0.01


def parse_case(s):
    n, h, w, c, k, oc, stride, check = (int(v) for v in s.split(","))
    return dict(n=n, h=h, w=w, c=c, k=k, oc=oc, stride=stride, check=check)


def same_pads(size, k, s):
    """TensorFlow's SAME padding of one dimension: (before, after)."""
    o = -(-size // s)
    total = max((o - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1", help="comma-separated thread counts")
    ap.add_argument("--dir", default="build", help="where bench_kernels wrote kernels_*.npy")
    ap.add_argument("--case", action="append", default=[], type=parse_case)
    ap.add_argument("--warm", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cnn-warm", type=int, default=3)
    ap.add_argument("--cnn-reps", type=int, default=15)
    ap.add_argument("--cnn-losses", type=int, default=5)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t]
    try:
        import numpy as np
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip torch not importable in this Python (bench/peers/setup.sh could not install it?): %s" % e)
        return
    out("version %s" % torch.__version__)

    def path(name):
        return os.path.join(args.dir, "kernels_%s.npy" % name)

    gen = torch.Generator().manual_seed(7)
    for i, cs in enumerate(args.case):
        n, h, w, c, k, oc, s = (cs[key] for key in ("n", "h", "w", "c", "k", "oc", "stride"))
        oh, ow = -(-h // s), -(-w // s)
        if cs["check"]:
            try:
                xin = torch.from_numpy(np.load(path("conv%d_in_x" % i))).permute(0, 3, 1, 2).contiguous()
                win = torch.from_numpy(np.load(path("conv%d_in_w" % i))).permute(3, 2, 0, 1).contiguous()
                dyin = torch.from_numpy(np.load(path("conv%d_in_dy" % i))).permute(0, 3, 1, 2).contiguous()
            except OSError as e:
                out("skip missing input (run bench_kernels): %s" % e)
                return
        else:
            xin = torch.rand(n, c, h, w, generator=gen) * 2 - 1
            win = torch.rand(oc, c, k, k, generator=gen) * 0.2 - 0.1
            dyin = torch.rand(n, oc, oh, ow, generator=gen) * 2 - 1
        x = xin.clone().requires_grad_(True)
        wt = win.clone().requires_grad_(True)
        pad = k // 2
        y = F.conv2d(x, wt, stride=s, padding=pad)
        if tuple(y.shape) != (n, oc, oh, ow):
            out("skip case %d: PyTorch's output is %s, not [%d,%d,%d,%d]" % (i, list(y.shape), n, oc, oh, ow))
            return

        def forward():
            with torch.no_grad():
                return F.conv2d(xin, win, stride=s, padding=pad)

        for t in threads:
            torch.set_num_threads(t)
            out("conv %d %d fwd_us %.1f" % (i, t, median_us(forward, args.warm, args.reps)))
            us = median_us(lambda: torch.autograd.grad(y, x, dyin, retain_graph=True), args.warm, args.reps)
            out("conv %d %d bwd_input_us %.1f" % (i, t, us))
            us = median_us(lambda: torch.autograd.grad(y, wt, dyin, retain_graph=True), args.warm, args.reps)
            out("conv %d %d bwd_filter_us %.1f" % (i, t, us))
        del y
        if cs["check"]:
            ph, pw = same_pads(h, k, s), same_pads(w, k, s)
            yc = F.conv2d(F.pad(x, (pw[0], pw[1], ph[0], ph[1])), wt, stride=s)
            dx, dw = torch.autograd.grad(yc, [x, wt], dyin)
            np.save(path("conv%d_pytorch_y" % i), yc.detach().permute(0, 2, 3, 1).contiguous().numpy())
            np.save(path("conv%d_pytorch_dx" % i), dx.permute(0, 2, 3, 1).contiguous().numpy())
            np.save(path("conv%d_pytorch_dw" % i), dw.permute(2, 3, 1, 0).contiguous().numpy())
            out("checked %d" % i)

    # The CNN.
    try:
        xb = torch.from_numpy(np.load(path("cnn_x")).astype(np.float32)).permute(0, 3, 1, 2).contiguous()
        labels = torch.from_numpy(np.load(path("cnn_y")).astype(np.int64))
        w = {k: np.load(path("cnn_" + k)) for k in ("c1w", "c1b", "c2w", "c2b", "d1w", "d1b", "d2w", "d2b")}
    except OSError as e:
        out("skip missing CNN input (run bench_kernels): %s" % e)
        return
    c2 = w["c2w"].shape[3]
    side = int(round((w["d1w"].shape[0] // c2) ** 0.5))
    # rows of d1w follow NHWC flattening (y, x, c); NCHW flattening is (c, y, x)
    w["d1w"] = w["d1w"].reshape(side, side, c2, -1).transpose(2, 0, 1, 3).reshape(side * side * c2, -1)
    w["c1w"] = w["c1w"].transpose(3, 2, 0, 1)
    w["c2w"] = w["c2w"].transpose(3, 2, 0, 1)
    for t in threads:
        torch.set_num_threads(t)
        p = {k: torch.nn.Parameter(torch.from_numpy(a.copy())) for k, a in w.items()}
        opt = torch.optim.SGD(list(p.values()), lr=LR)

        def step():
            opt.zero_grad(set_to_none=True)
            hid = F.max_pool2d(torch.relu(F.conv2d(xb, p["c1w"], p["c1b"], padding=2)), 2)
            hid = F.max_pool2d(torch.relu(F.conv2d(hid, p["c2w"], p["c2b"], padding=2)), 2)
            hid = torch.relu(hid.reshape(hid.shape[0], -1) @ p["d1w"] + p["d1b"])
            loss = F.cross_entropy(hid @ p["d2w"] + p["d2b"], labels)
            loss.backward()
            opt.step()
            return loss

        steps = max(args.cnn_losses, args.cnn_warm)
        for k in range(steps):
            lv = step().item()
            if k < args.cnn_losses:
                out("cnn %d loss%d %.6f" % (t, k, lv))
        out("cnn %d step_us %.1f" % (t, median_us(step, max(0, args.cnn_warm - steps), args.cnn_reps)))


if __name__ == "__main__":
    main()
