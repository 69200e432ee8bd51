"""Helpers the peer scripts share: line output to the C benchmark, notes on stderr, and the
median time of repeated calls."""
import statistics
import sys
import time


def out(msg):
    print(msg, flush=True)


def info(msg):
    print("# " + msg, file=sys.stderr, flush=True)


def median_us(fn, warm, reps):
    """Runs fn warm times untimed, then reps times; the median in microseconds."""
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def gpu_bench_args(doc, default_device, device_help):
    """The command line bench_cuda gives its GPU peers (torch_gpu.py, jax_gpu.py)."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--device", default=default_device, help=device_help)
    ap.add_argument("--adds", type=int, default=1000)
    ap.add_argument("--iters", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, nargs=2, default=[1024, 1024])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--warm", type=int, default=3)
    return ap.parse_args()


def median_us_cpu(fn, warm, reps):
    """As median_us, and also the median process CPU time (all threads) of a call: the pair
    (wall microseconds, CPU microseconds). On a loaded machine the CPU time of a one-thread run
    is the steadier figure."""
    for _ in range(warm):
        fn()
    wall, cpu = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) * 1e6, statistics.median(cpu) * 1e6
