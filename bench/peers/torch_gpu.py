#!/usr/bin/env python3
"""PyTorch peer for bench/cuda/bench_cuda.c: the same GPU work in eager mode.

bench_cuda runs it, from the repository root, with the first of .venv/bin/python and python3
whose torch sees a GPU:

    python bench/peers/torch_gpu.py [--device cuda] [--adds 1000] [--iters 10000]
        [--batch 256] [--hidden 1024 1024] [--steps 20] [--reps 7] [--warm 3]

  add chain  x = x + one, --adds times, on a one-element tensor (one = ones(1)), then a
             synchronise: microseconds per Add
  while      a Python while loop with a host-side counter, x = x + 1.0 on a one-element tensor,
             --iters iterations, then a synchronise: microseconds per iteration
  mlp        784-H1-H2-10 (nn.Linear, relu), F.cross_entropy on fixed random pixels and labels
             i % 10, torch.optim.SGD(lr=0.01): zero_grad, forward, backward, step and
             loss.item() per step; --steps steps then a synchronise: microseconds per step

Float32 matrix products without TF32, as bench_cuda's. Each figure is the median of --reps
timed runs after --warm untimed ones (time.perf_counter).

stdout carries only machine-readable lines:
  torch_gpu version 2.x.y
  torch_gpu add_chain_us_per_node 12.3
  torch_gpu while_us_per_iter 12.3
  torch_gpu mlp_step_us 456.7
or one line "skip REASON" when torch or its GPU is missing. Notes go to stderr.
"""

import statistics
import time

from peer_util import gpu_bench_args, info, out


def median_us_per(fn, sync, per, warm, reps):
    """fn() then sync(), warm times untimed and reps times timed: the median in microseconds,
    divided by per."""
    for _ in range(warm):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6 / per


def main():
    args = gpu_bench_args(__doc__, "cuda", "cuda (the benchmark) or cpu (a check of the script)")
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip torch not importable in this Python: %s" % e)
        return
    if args.device == "cuda" and not torch.cuda.is_available():
        out("skip torch %s sees no GPU" % torch.__version__)
        return
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if dev.type == "cuda":
        info("torch %s on %s" % (torch.__version__, torch.cuda.get_device_name(dev)))

        def sync():
            torch.cuda.synchronize(dev)
    else:
        def sync():
            pass
    out("torch_gpu version %s" % torch.__version__)

    # 1000 one-element Adds, each its own kernel
    one = torch.ones(1, device=dev)
    x0 = torch.zeros(1, device=dev)
    result = [None]

    def chain():
        x = x0
        for _ in range(args.adds):
            x = x + one
        result[0] = x

    us = median_us_per(chain, sync, args.adds, args.warm, args.reps)
    if result[0].item() != args.adds:
        info("add chain gave %g, expected %d" % (result[0].item(), args.adds))
    out("torch_gpu add_chain_us_per_node %.3f" % us)

    # the loop: the counter on the host, as a Python loop over a GPU tensor has it
    def loop():
        x = x0
        i = 0
        while i < args.iters:
            x = x + 1.0
            i += 1
        result[0] = x

    us = median_us_per(loop, sync, args.iters, args.warm, args.reps)
    if result[0].item() != args.iters:
        info("while loop gave %g, expected %d" % (result[0].item(), args.iters))
    out("torch_gpu while_us_per_iter %.3f" % us)

    # the MLP training step
    torch.manual_seed(0)
    h1, h2 = args.hidden
    model = torch.nn.Sequential(torch.nn.Linear(784, h1), torch.nn.ReLU(), torch.nn.Linear(h1, h2),
                                torch.nn.ReLU(), torch.nn.Linear(h2, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xb = torch.rand(args.batch, 784, device=dev)
    yb = torch.arange(args.batch, device=dev) % 10
    losses = []

    def steps():
        for _ in range(args.steps):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())

    us = median_us_per(steps, sync, args.steps, args.warm, args.reps)
    info("mlp loss %.4f first, %.4f last" % (losses[0], losses[-1]))
    out("torch_gpu mlp_step_us %.3f" % us)


if __name__ == "__main__":
    main()
