"""Asking for the GPU without CUDA/CuPy is a clear DeviceUnavailableError (CPU-only machines).

Not marked `gpu`: these run in CI, and skip themselves where a GPU *is* available.
"""
import importlib.util

import numpy as np
import pytest

import runtime as rt
from runtime import nn

pytestmark = pytest.mark.skipif(rt.gpu_available(), reason="a CUDA GPU is available here")

_HAS_CUPY = importlib.util.find_spec("cupy") is not None


def _check_message(error):
    message = str(error)
    assert "gpu" in message.lower()
    if not _HAS_CUPY:     # the usual case: tell the user how to get CuPy
        assert "dy2static[gpu]" in message
        assert "cupy-cuda12x" in message and "cupy-cuda13x" in message
    else:                 # CuPy is installed but there is no usable device or driver
        assert "CUDA" in message


def test_error_type_is_public_and_a_runtime_error():
    assert issubclass(rt.DeviceUnavailableError, RuntimeError)
    assert rt.gpu_available() is False


@pytest.mark.parametrize("device", ["gpu", "cuda", "cuda:0", "GPU", "cupy"])
def test_tensor_on_gpu_raises(device):
    with pytest.raises(rt.DeviceUnavailableError) as info:
        rt.tensor(np.ones(3, np.float32), device=device)
    _check_message(info.value)


@pytest.mark.parametrize("make", [
    lambda: rt.get_backend("gpu"),
    lambda: rt.Executor(device="gpu"),
    lambda: rt.tensor([1.0, 2.0]).to("gpu"),
    lambda: rt.tensor([1.0, 2.0]).gpu(),
    lambda: rt.zeros((2, 3), device="gpu"),
    lambda: rt.arange(4, device="gpu"),
    lambda: nn.Linear(2, 3).to("gpu"),
], ids=["get_backend", "Executor", "Tensor.to", "Tensor.gpu", "zeros", "arange", "Layer.to"])
def test_every_road_to_the_gpu_raises_the_same_clear_error(make):
    with pytest.raises(rt.DeviceUnavailableError) as info:
        make()
    _check_message(info.value)


def test_the_error_repeats_and_leaves_the_cpu_working():
    for _ in range(2):          # a failed attempt is not cached as a half-made backend
        with pytest.raises(rt.DeviceUnavailableError):
            rt.get_backend("gpu")
    layer = nn.Linear(2, 3)
    with pytest.raises(rt.DeviceUnavailableError):
        layer.to("gpu")
    assert all(p.device == "cpu" for p in layer.parameters())
    x = rt.tensor(np.ones((1, 2), np.float32))
    assert layer(x).shape == (1, 3)


def test_unknown_device_is_a_value_error():
    with pytest.raises(ValueError, match="unknown device"):
        rt.tensor([1.0], device="tpu")
