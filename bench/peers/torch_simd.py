"""PyTorch's side of bench_simd: the same chains of elementwise ops, Softmax and MaxPool on one
thread (torch.set_num_threads(1)), eager, in place where PyTorch has an in-place form (as our
chains compute in place after their first node).

Per case: a chain of `chain` calls of the op on x (float32, the shape bench_simd gives): the
first makes a new tensor from x, the others work in place where PyTorch can, as our chain does
(its first node allocates, the others take their input's buffer); x is the same every run.
Add and Mul: y.add_(b), y.mul_(b) with b of the same shape; Relu, Exp, Tanh, Sigmoid:
y.relu_() ...; Softmax: torch.softmax(y, -1); MaxPool: F.max_pool2d(y, 3, 1, 1) on
an NHWC (channels_last) tensor, TensorFlow's 3x3 stride 1 SAME). Warm-up runs, then the median
of `reps` timed runs; printed: one line "OP TIER NS_PER_ELEMENT" per case, or "skip REASON".

Usage: torch_simd.py --cases OP:TIER:D0xD1x..:CHAIN,... [--reps N] [--warm N]"""
import argparse
import statistics
import time

from peer_util import out, info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--warm", type=int, default=2)
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        out("skip torch not importable: %s" % e)
        return
    torch.set_num_threads(1)
    out("version %s" % torch.__version__)
    gen = torch.Generator().manual_seed(3)
    for case in args.cases.split(","):
        op, tier, shape, chain = case.split(":")
        dims = [int(d) for d in shape.split("x")]
        chain = int(chain)
        n = 1
        for d in dims:
            n *= d
        x = torch.rand(*dims, generator=gen) * 2 - 1
        if op == "Mul":
            b = torch.where(torch.rand(*dims, generator=gen) < 0.5, -1.0, 1.0)
        else:
            b = torch.rand(*dims, generator=gen) * 0.01
        if op == "MaxPool":    # dims are NHWC: the same memory as channels_last NCHW
            x = x.permute(0, 3, 1, 2)
            assert x.is_contiguous(memory_format=torch.channels_last)

        first = {"Add": lambda y: y + b, "Mul": lambda y: y * b, "Relu": torch.relu, "Exp": torch.exp,
                 "Tanh": torch.tanh, "Sigmoid": torch.sigmoid, "Softmax": lambda y: torch.softmax(y, -1),
                 "MaxPool": lambda y: F.max_pool2d(y, 3, 1, 1)}[op]

        def run():
            y = first(x)
            for _ in range(chain - 1):
                if op == "Add":
                    y.add_(b)
                elif op == "Mul":
                    y.mul_(b)
                elif op == "Relu":
                    y.relu_()
                elif op == "Exp":
                    y.exp_()
                elif op == "Tanh":
                    y.tanh_()
                elif op == "Sigmoid":
                    y.sigmoid_()
                elif op == "Softmax":
                    y = torch.softmax(y, -1)
                elif op == "MaxPool":
                    y = F.max_pool2d(y, 3, 1, 1)
            return y

        with torch.no_grad():
            for _ in range(args.warm):
                run()
            ts = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                run()
                ts.append(time.perf_counter() - t0)
        out("%s %s %.4f" % (op, tier, statistics.median(ts) * 1e9 / (chain * n)))
    info("torch_simd done")


if __name__ == "__main__":
    main()
