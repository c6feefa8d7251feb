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


def accumulate_range(x, a, b, c):
    s = x * 0
    for i in range(a, b, c):      # i is a Python int: float32 s stays float32 whatever the bounds' dtype
        s = s + i
    return s


@pytest.mark.parametrize("bounds", [(0, 5, 2), (5, 0, -2), (2, 2, 1), (-3, 3, 3)])
def test_range_items_are_python_ints_whatever_the_bounds_dtype(bounds):
    x = np.float32([1.0, 2.0])
    want = accumulate_range(x, *bounds)
    got = to_static(accumulate_range)(rt.tensor(x), *[rt.tensor(np.int32(b)) for b in bounds])
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), want)


def test_a_zero_tensor_step_is_the_value_error_of_range():
    with pytest.raises(ValueError, match="must not be zero"):
        to_static(accumulate_range)(rt.tensor(np.float32([1.0])), rt.tensor(0), rt.tensor(5), rt.tensor(0))
