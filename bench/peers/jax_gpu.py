#!/usr/bin/env python3
"""JAX peer for bench/cuda/bench_cuda.c: the same GPU work as torch_gpu.py, the JAX way.

bench_cuda runs it, from the repository root, with the first of .venv/bin/python and python3
whose jax sees a GPU:

    python bench/peers/jax_gpu.py [--device gpu] [--adds 1000] [--iters 10000]
        [--batch 256] [--hidden 1024 1024] [--steps 20] [--reps 7] [--warm 3]

  add chain  x = x + one, --adds times, dispatched op by op (eager: jit would fuse the chain
             into one kernel, which is not the per-node cost), then block_until_ready:
             microseconds per Add
  while      lax.while_loop under jit: an int32 counter and x = x + 1.0, --iters iterations,
             the whole loop one XLA program on the GPU: microseconds per iteration
  mlp        784-H1-H2-10 (relu), softmax cross-entropy on fixed random pixels and labels
             i % 10, plain SGD(0.01) as one jitted step (value_and_grad and the update) and the
             loss read back per step: microseconds per step

Float32 matrix products at full precision (no TF32), as bench_cuda's. Each figure is the
median of --reps timed runs after --warm untimed ones (time.perf_counter).

stdout carries only machine-readable lines:
  jax_gpu version 0.x.y
  jax_gpu add_chain_us_per_node 12.3
  jax_gpu while_us_per_iter 12.3
  jax_gpu mlp_step_us 456.7
or one line "skip REASON" when jax or its GPU is missing. Notes go to stderr.
"""

from peer_util import gpu_bench_args, info, median_us, out


def median_us_per(fn, per, warm, reps):
    return median_us(fn, warm, reps) / per


def main():
    args = gpu_bench_args(__doc__, "gpu", "gpu (the benchmark) or cpu (a check of the script)")
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip jax not importable in this Python: %s" % e)
        return
    try:
        dev = jax.devices(args.device)[0]
    except Exception as e:  # noqa: BLE001
        out("skip jax %s sees no %s: %s" % (jax.__version__, args.device, str(e).split("\n")[0]))
        return
    jax.config.update("jax_default_matmul_precision", "highest")
    info("jax %s on %s" % (jax.__version__, dev.device_kind))
    out("jax_gpu version %s" % jax.__version__)

    with jax.default_device(dev):
        one = jnp.ones(1, jnp.float32)
        x0 = jnp.zeros(1, jnp.float32)
        result = [None]

        def chain():
            x = x0
            for _ in range(args.adds):
                x = x + one
            result[0] = x.block_until_ready()

        us = median_us_per(chain, args.adds, args.warm, args.reps)
        if float(result[0][0]) != args.adds:
            info("add chain gave %g, expected %d" % (float(result[0][0]), args.adds))
        out("jax_gpu add_chain_us_per_node %.3f" % us)

        n = args.iters

        @jax.jit
        def loop(x):
            return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + 1.0), (jnp.int32(0), x))[1]

        def run_loop():
            result[0] = loop(x0).block_until_ready()

        us = median_us_per(run_loop, args.iters, args.warm, args.reps)
        if float(result[0][0]) != args.iters:
            info("while loop gave %g, expected %d" % (float(result[0][0]), args.iters))
        out("jax_gpu while_us_per_iter %.3f" % us)

        h1, h2 = args.hidden
        key = jax.random.PRNGKey(0)
        widths = [784, h1, h2, 10]
        params = []
        for i in range(3):
            key, k = jax.random.split(key)
            r = (6.0 / (widths[i] + widths[i + 1])) ** 0.5
            params += [jax.random.uniform(k, (widths[i], widths[i + 1]), jnp.float32, -r, r),
                       jnp.zeros(widths[i + 1], jnp.float32)]
        key, k = jax.random.split(key)
        xb = jax.random.uniform(k, (args.batch, 784), jnp.float32)
        yb = jnp.arange(args.batch) % 10

        def loss_fn(p):
            h = xb
            for i in range(3):
                h = h @ p[2 * i] + p[2 * i + 1]
                if i < 2:
                    h = jax.nn.relu(h)
            logp = jax.nn.log_softmax(h)
            return -jnp.mean(jnp.take_along_axis(logp, yb[:, None], axis=1))

        @jax.jit
        def step(p):
            loss, g = jax.value_and_grad(loss_fn)(p)
            return [w - 0.01 * d for w, d in zip(p, g)], loss

        state = [params]
        losses = []

        def steps():
            for _ in range(args.steps):
                state[0], loss = step(state[0])
                losses.append(float(loss))

        us = median_us_per(steps, args.steps, args.warm, args.reps)
        info("mlp loss %.4f first, %.4f last" % (losses[0], losses[-1]))
        out("jax_gpu mlp_step_us %.3f" % us)


if __name__ == "__main__":
    main()
