"""What Python asks of a traced value answers as it would eagerly (issues 18.2, 18.7, 18.8, 9.6, 9.11).

The oracle is the same function run eagerly (plain Python on eager Tensors) or with NumPy.
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .oracle import compare


def eager_and_static(fn, *args):
    """fn run eagerly and converted, on the same arguments; the results must agree."""
    want = fn(*args)
    got = to_static(fn)(*args)
    compare(got, want)
    return got


def t(value, dtype=np.float32):
    return rt.tensor(np.asarray(value, dtype))


# --- isinstance ------------------------------------------------------------------------------------

def test_isinstance_of_a_traced_value_is_true_for_tensor():
    def f(x):
        y = x * 2
        if isinstance(y, rt.Tensor) and isinstance(x, (int, rt.Tensor)):
            return y + 1
        return y - 1
    eager_and_static(f, t([1.0, 2.0]))


def test_isinstance_of_a_traced_value_is_false_for_what_it_is_not_eagerly():
    def f(x):
        flags = (isinstance(x, (int, float)), isinstance(x, np.ndarray), isinstance(x, list),
                 isinstance(x, rt.Parameter), isinstance(x * 1, rt.Tensor))
        return x, flags
    got = eager_and_static(f, t([1.0]))
    assert got[1] == (False, False, False, False, True)


def test_isinstance_of_a_captured_parameter_is_parameter():
    weight = rt.Parameter(np.ones(2, np.float32), rt.tensor(np.ones(2, np.float32)).backend)

    def f(x):
        w = weight
        if isinstance(w, rt.Parameter):
            return x * w
        return x
    eager_and_static(f, t([3.0, 4.0]))


def test_isinstance_through_a_variable():
    def f(x):
        check = isinstance
        return x + 1 if check(x, rt.Tensor) else x - 1
    eager_and_static(f, t([3.0]))
