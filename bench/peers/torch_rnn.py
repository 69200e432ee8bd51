"""PyTorch's side of bench_rnn (eager, CPU), on the input and weights tf_rnn.py --make wrote.

  lstm_fwd / lstm_bwd (cell)  the LSTM cell of bench_rnn written out in torch ops and run by a
                              Python loop over the 50 steps (z = [x, h] @ kernel + bias, the
                              same math and weights as TensorFlow's graph); forward (outputs
                              stacked), and forward + backward of loss = sum(outputs^2) to x,
                              kernel and bias (autograd)
  lstm_fwd / lstm_bwd (nn)    torch.nn.LSTM (its fused C++ sequence kernel) with the same
                              weights (gates reordered, the forget bias's +1 folded in)
  map (loop)                  a Python loop over the 10,000 rows: r * r + 1, then torch.stack
  map (vmap)                  torch.vmap of the same function (one vectorised op, not a loop)

Prints "time KEY VARIANT WALL_US CPU_US" (medians after warm-up: wall time, process CPU time)
and "value KEY NUMBER".
Usage: torch_rnn.py --dir DIR --threads N"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np                      # noqa: E402
import torch                            # noqa: E402
from peer_util import out, info, median_us_cpu   # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    info("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()))
    x = torch.from_numpy(np.load(os.path.join(a.dir, "lstm_x.npy")))
    kernel = torch.from_numpy(np.load(os.path.join(a.dir, "lstm_kernel.npy")))
    bias = torch.from_numpy(np.load(os.path.join(a.dir, "lstm_bias.npy")))
    steps, batch, dim = x.shape
    units = bias.shape[0] // 4

    def cell_forward(x, kernel, bias):
        c = torch.zeros(batch, units)
        h = torch.zeros(batch, units)
        outs = []
        for t in range(steps):
            z = torch.addmm(bias, torch.cat([x[t], h], 1), kernel)
            i, j, f, o = z.chunk(4, 1)
            c = torch.sigmoid(f + 1.0) * c + torch.sigmoid(i) * torch.tanh(j)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs)

    def cell_fwd():
        with torch.no_grad():
            return cell_forward(x, kernel, bias)

    xg, kg, bg = (v.clone().requires_grad_(True) for v in (x, kernel, bias))

    def cell_bwd():
        xg.grad = kg.grad = bg.grad = None
        y = cell_forward(xg, kg, bg)
        loss = (y * y).sum()
        loss.backward()
        return loss

    # torch.nn.LSTM: gates [i, f, g, o] of weight_ih [4U, D], weight_hh [4U, U]; ours [i, j, f, o].
    lstm = torch.nn.LSTM(dim, units)
    order = [0, 2, 1, 3]                          # torch gate k is TF gate order[k]
    kt = kernel.t().reshape(4, units, dim + units)[order].reshape(4 * units, dim + units)
    bt = bias.reshape(4, units).clone()
    bt[2] += 1.0                                  # forget gate's +1
    bt = bt[order].reshape(4 * units)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(kt[:, :dim])
        lstm.weight_hh_l0.copy_(kt[:, dim:])
        lstm.bias_ih_l0.copy_(bt)
        lstm.bias_hh_l0.zero_()

    def nn_fwd():
        with torch.no_grad():
            return lstm(x)[0]

    xn = x.clone().requires_grad_(True)

    def nn_bwd():
        lstm.zero_grad()
        xn.grad = None
        y = lstm(xn)[0]
        loss = (y * y).sum()
        loss.backward()
        return loss

    out("time lstm_fwd cell %.1f %.1f" % median_us_cpu(cell_fwd, 3, 15))
    out("time lstm_bwd cell %.1f %.1f" % median_us_cpu(cell_bwd, 3, 9))
    out("time lstm_fwd nn %.1f %.1f" % median_us_cpu(nn_fwd, 3, 15))
    out("time lstm_bwd nn %.1f %.1f" % median_us_cpu(nn_bwd, 3, 9))
    out("value lstm_loss_cell %.9g" % float(cell_bwd().detach()))
    out("value lstm_gk_sum_cell %.9g" % float(kg.grad.double().sum()))
    out("value lstm_loss_nn %.9g" % float(nn_bwd().detach()))

    elems = torch.from_numpy(np.load(os.path.join(a.dir, "map_elems.npy")))

    def fn(r):
        return r * r + 1.0

    def map_loop():
        with torch.no_grad():
            return torch.stack([fn(r) for r in elems])

    out("time map loop %.1f %.1f" % median_us_cpu(map_loop, 1, 5))
    out("value map_sum %.9g" % float(map_loop().double().sum()))
    vmap = getattr(torch, "vmap", None) or getattr(getattr(torch, "func", None), "vmap", None)
    if vmap is not None:
        vf = vmap(fn)
        out("time map vmap %.1f %.1f" % median_us_cpu(lambda: vf(elems), 3, 15))
    return 0


if __name__ == "__main__":
    sys.exit(main())
