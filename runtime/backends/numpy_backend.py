"""The default backend: NumPy on the CPU, always available."""
import numpy as np

from .base import Backend


class NumpyBackend(Backend):
    name = "cpu"
    xp = np

    def asarray(self, value, dtype=None):
        if hasattr(value, "__cuda_array_interface__") and hasattr(value, "get"):
            value = value.get()
        return np.asarray(value, dtype=dtype)

    def to_numpy(self, array):
        return np.asarray(array)

    def is_native(self, array):
        return isinstance(array, (np.ndarray, np.generic))
