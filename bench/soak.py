"""Soak: one converted model served from a thread pool for a fixed number of requests.

`python -m bench.soak [--requests N] [--workers W] [--json PATH]` builds a small
Layer model whose forward holds a tensor-dependent `if`, converts it with
`to_static`, checks a sample of answers against eager runs, then serves
requests of mixed batch sizes (a few signatures) from W threads. It reports
throughput, p50/p99 latency per request, and the process's resident memory
after warm-up and at the end: memory must not grow once every signature has
been traced (the cache is bounded, nothing is kept per request).
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")      # the pool is the parallelism: BLAS threads per request would fight it

import numpy as np  # noqa: E402

import runtime as rt  # noqa: E402
from runtime import nn  # noqa: E402
from transpiler import to_static  # noqa: E402

BATCHES = (1, 4, 16, 64)
FEATURES, HIDDEN, CLASSES = 64, 128, 10
RSS_GROWTH_LIMIT_MB = 8.0


class Classifier(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, CLASSES)
        self.temperature = 1.0

    def forward(self, x):
        h = rt.tanh(self.fc1(x))
        if rt.mean(h) > 0:
            h = h * 2
        else:
            h = -h
        return nn.functional.softmax(self.fc2(h) / self.temperature, axis=-1)


def rss_mb():
    """Resident memory of this process now, in MiB (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _requests(n, seed=0):
    rng = np.random.default_rng(seed)
    pool = [rt.tensor(rng.standard_normal((b, FEATURES)).astype(np.float32)) for b in BATCHES for _ in range(4)]
    return [pool[i] for i in rng.integers(0, len(pool), n)], pool


def _percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def run(requests=20000, workers=16):
    model = Classifier()
    model.eval()
    eager = model.forward
    static = to_static(model.forward)
    stream, pool = _requests(requests)
    for x in pool:                                  # every signature traced, answers checked against eager
        np.testing.assert_allclose(static(x).numpy(), eager(x).numpy(), rtol=1e-5, atol=1e-6)

    latencies = np.empty(len(stream))

    def serve(first, stop):
        """One thread's share of requests [first, stop) (every `workers`-th): nothing kept per request."""
        for i in range(first, stop, workers):
            t0 = time.perf_counter()
            static(stream[i])
            latencies[i] = time.perf_counter() - t0

    warm = requests // 10
    with ThreadPoolExecutor(workers) as executor:
        list(executor.map(lambda w: serve(w, warm), range(workers)))          # warm-up: threads, allocator
        rss_warm = rss_mb()
        start = time.perf_counter()
        list(executor.map(lambda w: serve(warm + w, requests), range(workers)))
        wall = time.perf_counter() - start
    requests -= warm
    latencies = np.sort(latencies[warm:])
    rss_end = rss_mb()
    report = {
        "requests": requests, "workers": workers, "signatures": static.cache_size,
        "throughput_per_s": requests / wall,
        "p50_us": _percentile(latencies, 0.50) * 1e6, "p99_us": _percentile(latencies, 0.99) * 1e6,
        "rss_after_warmup_mb": rss_warm, "rss_end_mb": rss_end, "rss_growth_mb": rss_end - rss_warm,
    }
    report["rss_ok"] = report["rss_growth_mb"] <= RSS_GROWTH_LIMIT_MB
    assert static.cache_size == len(BATCHES) and static.retrace_reasons[len(BATCHES) - 1:] == []
    return report


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--json", metavar="PATH", help="also write the numbers to PATH")
    args = p.parse_args(argv)
    r = run(args.requests, args.workers)
    print(f"soak: {r['requests']} requests, {r['workers']} threads, {r['signatures']} signatures")
    print(f"  throughput {r['throughput_per_s']:,.0f} req/s   p50 {r['p50_us']:.1f} µs   p99 {r['p99_us']:.1f} µs")
    print(f"  RSS after warm-up {r['rss_after_warmup_mb']:.1f} MB, at the end {r['rss_end_mb']:.1f} MB "
          f"(growth {r['rss_growth_mb']:+.1f} MB, limit {RSS_GROWTH_LIMIT_MB} MB: {'ok' if r['rss_ok'] else 'GROWS'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0 if r["rss_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
