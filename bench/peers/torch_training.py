#!/usr/bin/env python3
"""PyTorch peer for bench/bench_training.c.

Run with the virtualenv made by bench/peers/setup.sh, after bench_training has
written the initial weights and the batch (build/training_*.npy):

    .venv/bin/python bench/peers/torch_training.py --threads 2 [--quick] [--dir build]

The models of examples/digits_mlp.c and examples/digits_rnn.c, in eager mode:

  mlp   logits = relu(x W1 + b1) W2 + b2                  x: [64, 64]
  rnn   h = 0; for t in range(8): h = tanh(x[:, t] Wx + h Wh + b)   (a Python
        loop over the rows), logits = h Wo + bo            x: [64, 8, 8]
  step  loss = F.cross_entropy(logits, y); zero_grad; loss.backward();
        torch.optim.Adam(lr=0.01).step()

torch.set_num_threads(--threads). Timing: warm-up steps, then the median of
individually timed steps (time.perf_counter).

stdout carries only machine-readable lines:
  version 2.x.y
  mlp_loss0 2.31234        (the loss of the first step, before any update)
  mlp_step_us 123.4
  rnn_loss0 2.30123
  rnn_step_us 456.7
or one line "skip REASON" when torch or the .npy files are missing.
"""

import argparse
import os

from peer_util import out, median_us

LR = 0.01


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dir", default="build", help="where bench_training wrote training_*.npy")
    ap.add_argument("--quick", action="store_true", help="fewer steps")
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip torch not importable in this Python (bench/peers/setup.sh could not install it?): %s" % e)
        return
    torch.set_num_threads(args.threads)

    def load(name):
        return np.load(os.path.join(args.dir, "training_%s.npy" % name))

    try:
        x = torch.from_numpy(load("x").astype(np.float32))
        y = torch.from_numpy(load("y").astype(np.int64))
        w = {k: load(k) for k in ("mlp_w1", "mlp_b1", "mlp_w2", "mlp_b2",
                                  "rnn_wx", "rnn_wh", "rnn_b", "rnn_wo", "rnn_bo")}
    except OSError as e:
        out("skip missing input (run bench_training first): %s" % e)
        return
    batch = x.shape[0]
    out("version %s" % torch.__version__)
    warm = 10 if args.quick else 30
    reps = {"mlp": 100 if args.quick else 500, "rnn": 50 if args.quick else 200}

    for kind in ("mlp", "rnn"):
        p = {k: torch.nn.Parameter(torch.from_numpy(a.copy())) for k, a in w.items() if k.startswith(kind)}
        opt = torch.optim.Adam(list(p.values()), lr=LR)
        if kind == "mlp":
            xin = x

            def forward():
                h = torch.relu(xin @ p["mlp_w1"] + p["mlp_b1"])
                return h @ p["mlp_w2"] + p["mlp_b2"]
        else:
            xin = x.reshape(batch, 8, 8)
            hidden = p["rnn_wh"].shape[0]

            def forward():
                h = torch.zeros(batch, hidden)
                for t in range(8):
                    h = torch.tanh(xin[:, t] @ p["rnn_wx"] + h @ p["rnn_wh"] + p["rnn_b"])
                return h @ p["rnn_wo"] + p["rnn_bo"]

        def step():
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(forward(), y)
            loss.backward()
            opt.step()
            return loss

        out("%s_loss0 %.6f" % (kind, step().item()))
        out("%s_step_us %.2f" % (kind, median_us(step, warm, reps[kind])))


if __name__ == "__main__":
    main()
