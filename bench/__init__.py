"""Benchmarks (not tests): `python -m bench [--quick] [--json PATH] [--device gpu]`.

Each workload runs in a fresh subprocess pinned to one CPU (bench/pin.py) and one thread; every variant of
a workload (hand-written NumPy, dy2static static and eager, the peers that
import) is timed in that same process, interleaved, so ratios compare like
with like. See bench/RESULTS.md for a full run and what it means.
"""
