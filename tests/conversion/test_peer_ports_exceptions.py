"""Ports: try/except around loops and branches (TF AutoGraph's and Dynamo's exception tests).

Python's loop and branch bodies bind the function's own locals, so an `except` clause sees what they had
bound when the exception left them. Converted, those names live in body functions: the values are kept on
the exception and restored at the `except` (they were silently the values from before the loop).
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import ConversionError, to_static

from .peers import like_eager


def s(v, dtype=np.float32):
    return np.asarray(v, dtype)


X = (s([1.5, -2.5, 3.0]),)
Y = (s([-0.5, 4.0, -3.5]),)


def raise_in_python_if(x, flag=True):
    n = 0
    try:
        if flag:
            n = 1
            raise ValueError
    except ValueError:
        pass
    return x + n


def raise_in_nested_python_loops(x):
    n = 0
    m = 0
    try:
        for i in range(3):
            m += 1
            for j in range(3):
                n += 1
                if i == 1 and j == 1:
                    raise KeyError
    except KeyError:
        pass
    return x + n * 10 + m


def _raises_after_counting(x):
    n = 5
    for i in range(3):
        n += 1
        if i == 1:
            raise ValueError
    return n


def raise_in_a_called_function(x):
    n = 0
    try:
        n = _raises_after_counting(x)     # the callee's `n` is not this one
    except ValueError:
        pass
    return x + n


def try_inside_a_loop_body(x):
    total = 0
    for i in range(3):
        try:
            for k in range(2):
                total += 1
                if k == i:
                    raise IndexError
        except IndexError:
            total += 100
    return x + total


def reraised_to_an_outer_handler(x):
    n = 0
    try:
        try:
            for i in range(3):
                n += 1
                if i == 1:
                    raise ValueError
        except ValueError:
            n += 10
            raise
    except ValueError:
        n += 100
    return x + n


def stop_iteration_over_tensor_rows(x):
    n = 0
    try:
        for v in x:
            n += 1
            if n == 2:
                raise StopIteration
    except StopIteration:
        pass
    return n


def value_error_over_tensor_rows(x):
    n = 0
    try:
        for v in x:
            n += 1
            if n == 2:
                raise ValueError("two")
    except ValueError:
        pass
    return n


def shape_error_caught(x):
    try:
        y = rt.reshape(x, (2, 2))
    except ValueError:
        y = x * 0
    return y


def index_error_caught(x):
    try:
        r = x[5]
    except IndexError:
        r = x[0]
    return r


CASES = [raise_in_python_if, raise_in_nested_python_loops, raise_in_a_called_function, try_inside_a_loop_body,
         reraised_to_an_outer_handler, stop_iteration_over_tensor_rows, value_error_over_tensor_rows,
         shape_error_caught, index_error_caught]


@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_like_eager(fn):
    like_eager(fn, X, Y)


def raise_in_tensor_while_caught(x):
    n = 0
    i = 0
    try:
        while i < 5:
            i += 1
            n = n + x[0]
            if i == 3:
                raise RuntimeError("stop")
    except RuntimeError:
        pass
    return n, i


def test_an_exception_from_a_tensor_while_reaching_an_except_is_a_conversion_error():
    with pytest.raises(ConversionError, match="reaches this `except` clause") as info:
        to_static(raise_in_tensor_while_caught)(rt.tensor(X[0]))
    assert "except RuntimeError:" in str(info.value)
