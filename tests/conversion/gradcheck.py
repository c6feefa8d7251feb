"""Gradient checks for tests: central finite differences in float64, as the independent oracle."""
import numpy as np

import runtime as rt


def numeric_grad(f, arrays, eps=1e-6):
    """d f / d each array by central differences; f takes NumPy float64 arrays and returns a float."""
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        grads.append(g)
    return grads


def of_tensors(fn):
    """fn over Tensors as a function of float64 arrays returning a Python float (for numeric_grad)."""
    return lambda *arrays: float(np.asarray(fn(*(rt.tensor(a) for a in arrays))))
