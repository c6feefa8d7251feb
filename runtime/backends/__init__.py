"""Where arrays live. A Backend is a small protocol: array module, transfers, sync.

`get_backend("cpu" | "gpu")` returns a process-wide singleton, so `is` comparison
of backends is cheap in the eager hot path.
"""
from .base import Backend, DeviceUnavailableError
from .cupy_backend import CupyBackend
from .numpy_backend import NumpyBackend

_BACKENDS = {}


def get_backend(device="cpu"):
    if isinstance(device, Backend):
        return device
    name = _canonical(device)
    backend = _BACKENDS.get(name)
    if backend is None:
        if name == "cpu":
            backend = NumpyBackend()
        else:
            backend = CupyBackend()
        _BACKENDS[name] = backend
    return backend


def _canonical(device):
    name = str(device).lower()
    if name in ("cpu", "numpy"):
        return "cpu"
    if name in ("gpu", "cuda", "cupy") or name.startswith("cuda:") or name.startswith("gpu:"):
        return "gpu"
    raise ValueError(f"unknown device {device!r}: use 'cpu' or 'gpu'")


def gpu_available():
    try:
        get_backend("gpu")
    except DeviceUnavailableError:
        return False
    return True


__all__ = ["Backend", "DeviceUnavailableError", "get_backend", "gpu_available"]
