"""NumPy functions applied to traced values compute what they compute eagerly (issue 24).

The oracle is NumPy itself on the same data, and the same function run eagerly on Tensors.
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import not_to_static, to_static


def _value(out):
    return out.numpy() if isinstance(out, rt.Tensor) else np.asarray(out)


# --- np.asarray / np.array of a traced value ------------------------------------------------------

def test_asarray_of_a_traced_reduction_is_that_value_on_every_call():
    def f(x):
        return np.asarray(np.sum(np.mean(x.numpy(), 1)))

    static = to_static(f)
    for data in ([[0, 1, 2], [3, 4, 5]], [[1, 1, 1], [2, 2, 2]], [[0, 1, 2], [3, 4, 5]]):
        x = rt.tensor(np.asarray(data, np.float32))
        got = static(x)
        assert isinstance(got, rt.Tensor)
        np.testing.assert_array_equal(_value(got), f(x))


def test_array_with_dtype_and_ndmin_of_a_traced_value():
    import numpy

    def f(x):
        a = numpy.array(x * 2, dtype=np.float64, ndmin=3)
        return np.asanyarray([x[0], x[1]]) + a[0, 0]

    x = rt.tensor(np.arange(2, dtype=np.float32))
    got = to_static(f)(x)
    want = f(x.numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_asarray_of_python_data_in_converted_code_is_still_numpy():
    def f(x):
        return x + np.asarray([1.0, 2.0], np.float32).sum()

    x = rt.tensor(np.ones(2, np.float32))
    np.testing.assert_array_equal(to_static(f)(x).numpy(), f(x).numpy())


def test_asarray_of_a_traced_value_in_code_that_is_not_converted_is_a_type_error():
    @not_to_static
    def helper(v):
        return np.asarray(v)

    def f(x):
        return helper(x * 2)

    with pytest.raises(TypeError, match="numpy.asarray cannot run on the traced value"):
        to_static(f)(rt.tensor(np.ones(2, np.float32)))
