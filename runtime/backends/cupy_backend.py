"""CuPy on an NVIDIA GPU: the same kernels as NumPy, run through `cupy`."""
import re

import numpy as np

from .base import Backend, DeviceUnavailableError

_INSTALL_HINT = (
    "install the GPU extra: `pip install 'dy2static[gpu]'` (CUDA 12, cupy-cuda12x) "
    "or `pip install cupy-cuda13x` for CUDA 13"
)


def _import_cupy():
    try:
        import cupy
    except ImportError as e:
        raise DeviceUnavailableError(f"device 'gpu' needs CuPy, which is not installed: {_INSTALL_HINT}") from e
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError when no driver is present
        raise DeviceUnavailableError(f"device 'gpu' needs a CUDA GPU and driver: {e}") from e
    if count == 0:
        raise DeviceUnavailableError("device 'gpu' needs a CUDA GPU; none was found")
    return cupy


class CupyBackend(Backend):
    name = "gpu"

    def __init__(self):
        self.xp = _import_cupy()

    def asarray(self, value, dtype=None):
        return self.xp.asarray(value, dtype=dtype)

    def to_numpy(self, array):
        if isinstance(array, self.xp.ndarray):
            return self.xp.asnumpy(array)
        return np.asarray(array)

    def is_native(self, array):
        return isinstance(array, self.xp.ndarray)

    def synchronize(self):
        self.xp.cuda.get_current_stream().synchronize()

    def fuse(self, fn):
        # the kernel is named after fn, and must be a C identifier: a lambda's "<lambda>" fails to compile
        name = "dy2static_" + re.sub(r"\W", "_", getattr(fn, "__name__", "fused"))
        return self.xp.fuse(kernel_name=name)(fn)
