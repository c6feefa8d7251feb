"""The benchmark's real models (bench/models.py, k-means) agree with their hand-written NumPy floors.

The benchmark checks this before it times anything; running the same builders here keeps a
model or a floor from drifting apart between benchmark runs, and runs each model's converted
`forward` (`while` on tensors, top-k, NMS, masked LSTM, attention, LeNet) as a user would.
The GPU path of the same builders (`python -m bench --device gpu`) is in tests/gpu.
"""
import pytest

from bench import suite, workloads

REAL_MODELS = ["kmeans", *suite.MODEL_WORKLOADS]


@pytest.mark.parametrize("name", REAL_MODELS)
def test_every_variant_agrees_with_the_numpy_floor(name):
    w = suite.ALL[name]("cpu", ())
    assert next(iter(w["variants"])) == "numpy"
    assert {"dy2static", "dy2static eager"} <= set(w["variants"]) or name == "empty_while"
    w["check"](workloads.run_variants_once(w["variants"]))


def test_a_disagreeing_variant_fails_the_check():
    w = suite.ALL["nms"]("cpu", ())
    results = workloads.run_variants_once(w["variants"])
    results["dy2static"] = ~results["dy2static"]
    with pytest.raises(AssertionError, match="kept boxes differ"):
        w["check"](results)


def test_gpu_runs_every_real_model():
    assert set(REAL_MODELS) <= set(suite.GPU_WORKLOADS)
