"""Inputs for the conformance samples that OpDefs carry (`example=`): reproducible, NumPy only."""
import numpy as np


def sample_array(shape, dtype="float32", lo=-2.0, hi=2.0):
    """A reproducible array of `shape`: uniform floats in [lo, hi), or integers in [lo, hi]."""
    rng = np.random.default_rng(sum(shape) + 7 * len(shape))
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)
