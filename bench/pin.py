"""Pin a benchmark process to one CPU: thread-count variables are only a request (XLA and
some BLAS builds keep their own pools), an affinity mask is enforced by the kernel.

`python -m bench` picks the CPU (`BENCH_CPU`, else the last one this process may run on)
and every child pins itself before importing NumPy or a peer, so our variants and the
peers' run on the same single core.
"""
import os

ENV = "BENCH_CPU"


def choose():
    """The CPU to pin to: $BENCH_CPU, else the highest-numbered allowed CPU (None: no affinity API)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    if os.environ.get(ENV):
        return int(os.environ[ENV])
    return max(os.sched_getaffinity(0))


def pin(cpu=None):
    """Pin this process (and the threads it starts later) to one CPU; returns it, or None."""
    cpu = choose() if cpu is None else cpu
    if cpu is None:
        return None
    os.sched_setaffinity(0, {cpu})
    return cpu
