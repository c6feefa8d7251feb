"""`range()` over a tensor takes integers only, as Python's does: a float tensor bound is a TypeError for every
value, NaN and inf included (issue: it ran 3 iterations for 2.7, 0 for NaN and hung for inf)."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static


def count_to(x):
    n = rt.sum(x)
    s = 0
    for i in range(n):
        s = s + i
    return s


def count_between(x):
    s = x[0] * 0
    for i in range(1, rt.sum(x), 2):
        s = s + i
    return s


@pytest.mark.parametrize("fn", [count_to, count_between])
@pytest.mark.parametrize("value", [2.7, 3.0, float("nan"), float("inf"), -float("inf")])
def test_float_tensor_bound_is_a_type_error(fn, value):
    x = np.float32([value])
    with pytest.raises(TypeError):
        fn(x)                                 # run eagerly: the oracle
    with pytest.raises(TypeError, match="'float32' tensor cannot be interpreted as an integer") as info:
        to_static(fn)(rt.tensor(x))
    assert "test_range_types.py" in str(info.value)


@pytest.mark.parametrize("fn", [count_to, count_between])
def test_integer_tensor_bound_still_loops(fn):
    x = np.int64([7])
    got = to_static(fn)(rt.tensor(x))
    assert int(got.numpy()) == int(fn(x))


def test_python_float_with_a_tensor_bound_is_a_type_error():
    def mixed(x):
        s = 0
        for i in range(0.5, rt.sum(x)):
            s = s + i
        return s
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        to_static(mixed)(rt.tensor(np.int64([3])))
