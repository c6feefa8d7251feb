"""Values under to_static behave as the same code on NumPy arrays: `asarray` of a traced value, the
shift operators, the dtypes of mixed Python/tensor loop state and augmented assignment."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .oracle import numpy_twin

xp = rt


def _check(fn, *arrays):
    """Converted (traced) == NumPy twin, values and dtypes; eager runtime too."""
    want = numpy_twin(fn)(*[a.copy() if isinstance(a, np.ndarray) else a for a in arrays])
    for got in (to_static(fn)(*[rt.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]),
                fn(*[rt.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])):
        got, want_t = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert len(got) == len(want_t)
        for g, w in zip(got, want_t):
            w = np.asarray(w)
            assert g.dtype == w.dtype, (g.dtype, w.dtype)
            np.testing.assert_array_equal(g.numpy(), w)


# --- asarray of a traced value (issue 9 item 5) -----------------------------------------

def asarray_identity(x):
    y = xp.asarray(x)
    return y * 2


def asarray_cast(x):
    return xp.asarray(x, dtype=xp.float64) + 1


def asarray_stack(x, y):
    return xp.asarray([x, y * 2, x + y])


def asarray_nested(x):
    return xp.asarray([[x, x], (x * 3, x - 1)])


def test_asarray_of_a_traced_tensor_is_the_identity():
    _check(asarray_identity, np.arange(6, dtype=np.float32).reshape(2, 3))
    _check(asarray_identity, np.arange(4, dtype=np.int32))


def test_asarray_of_a_traced_tensor_with_dtype_is_a_cast():
    _check(asarray_cast, np.arange(3, dtype=np.float32) / 3)


def test_asarray_of_a_list_of_traced_tensors_stacks_them():
    _check(asarray_stack, np.arange(3, dtype=np.float32), np.ones(3, np.float32))
    _check(asarray_stack, np.arange(3, dtype=np.int32), np.ones(3, np.int64))
    _check(asarray_nested, np.arange(3, dtype=np.float64))


def test_asarray_of_traced_tensors_and_python_numbers_takes_eager_dtypes():
    def f(x):
        return rt.asarray([x[0], 2.0, x[1]]), rt.asarray([x[0], 1]), rt.asarray(x.sum() > 1)
    x = rt.tensor(np.array([1.5, 2.5], np.float32))
    eager, static = f(x), to_static(f)(x)
    for e, s in zip(eager, static):
        assert e.dtype == s.dtype
        np.testing.assert_array_equal(e.numpy(), s.numpy())
    assert eager[0].dtype == np.float32


def test_asarray_of_a_weak_counter_makes_a_strong_tensor():
    def f(x):
        i = 0
        while x.sum() < 20:
            x = x + 1
            i += 1
        return rt.asarray(i)
    x = rt.tensor(np.ones(2, np.float32))
    got, want = to_static(f)(x), f(x)
    assert got.dtype == want.dtype == np.int64 and got.item() == want.item() == 9
    assert to_static(f).get_program(x).outputs[0].weak is False


# --- << and >> (issue 18 item 9) --------------------------------------------------------

def shifts(x, s):
    y = x << 2
    y <<= 1
    z = x >> s
    z >>= 1
    return y, z, 1 << s, 64 >> s, x << s


def shift_in_loop(x, s):
    while xp.sum(x) < 1000:
        x <<= s
        x = x >> 1 << 1
    return x


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_shift_operators_match_numpy(dtype):
    _check(shifts, np.array([1, 3, 7], dtype), np.array([0, 1, 2], dtype))


def test_shift_operators_in_a_tensor_loop():
    _check(shift_in_loop, np.array([1, 3, 7], np.int32), np.array([1, 2, 1], np.int32))


def test_shift_of_a_float_tensor_is_numpys_type_error():
    with pytest.raises(TypeError, match="left_shift"):
        rt.tensor(np.ones(2, np.float32)) << 1
