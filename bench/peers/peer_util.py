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
