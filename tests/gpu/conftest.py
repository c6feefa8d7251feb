"""GPU tests: everything marked `gpu` is skipped unless `runtime.gpu_available()`.

`runtime.gpu_available()` is True only when CuPy imports AND a CUDA device is
visible, so on a CPU-only machine (CI) these tests report SKIPPED, never fail.
Tests that check the CPU-only behaviour (tests/gpu/test_gpu_unavailable.py)
are not marked and skip themselves when a GPU *is* available.
"""
import functools

import pytest


@functools.lru_cache(maxsize=None)
def gpu_available():
    import runtime
    return runtime.gpu_available()


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA and CuPy: runtime.gpu_available() is False")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
