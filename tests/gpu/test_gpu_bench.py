"""`python -m bench --device gpu`: every workload it runs builds on CuPy, and each variant agrees
with the hand-written CuPy floor before anything is timed. Marked `gpu`: skipped without CUDA.
"""
import pytest

from bench import suite, workloads

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", suite.GPU_WORKLOADS)
def test_every_gpu_workload_agrees_with_its_cupy_floor(name):
    w = suite.ALL[name]("gpu", ())
    assert next(iter(w["variants"])) == "cupy"
    w["check"](workloads.run_variants_once(w["variants"]))
