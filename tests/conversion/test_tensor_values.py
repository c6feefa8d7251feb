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


# --- Python ints meeting int32 tensors in loops; augmented assignment (issue 9 item 9) -----

def counter_meets_int32_in_inner_loop(x, n):
    i = 0
    j = 0
    while i < n:
        j = 0
        while j < i:
            j = j + x[j] + 1
        i = i + 1
    return i, j


def nested_ranges_over_int32(x, n):
    s = 0
    for i in range(n):
        for j in range(i):
            s = s + x[j]
    return s


def test_python_ints_and_int32_tensors_settle_by_weak_promotion():
    x, n = np.arange(6, dtype=np.int32), np.int32(5)
    for fn in (counter_meets_int32_in_inner_loop, nested_ranges_over_int32):
        got = to_static(fn)(rt.tensor(x), rt.tensor(n))
        want = numpy_twin(fn)(x, n)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            assert g.item() == w
            if isinstance(w, np.ndarray):            # a tensor in Python keeps its int32
                assert g.dtype == w.dtype == np.int32


def augmented_float_by_int32(x, n):
    i = xp.asarray(0, dtype=xp.int32)
    while i < n:
        x += i
        x *= xp.asarray(2, dtype=xp.int64)
        i += 1
    return x


def augmented_unrolled(x, y):
    x += y
    x -= y * 3
    x /= y + 4
    x **= 2
    return x


def test_augmented_assignment_keeps_the_targets_dtype_like_numpy_in_place():
    _check(augmented_float_by_int32, np.ones(3, np.float32), np.int32(4))
    _check(augmented_unrolled, np.arange(3, dtype=np.float32), np.arange(3, dtype=np.int32))
    _check(augmented_unrolled, np.arange(3, dtype=np.float32), np.arange(3, dtype=np.float64))


def augmented_int_by_float(x):
    x += 1.5
    return x


def augmented_broadcast_grows(x, y):
    x += y
    return x


def test_augmented_assignment_refuses_what_numpy_refuses():
    x = np.arange(3, dtype=np.int32)
    message = "Cannot cast ufunc 'add' output from dtype\\('float64'\\) to dtype\\('int32'\\)"
    with pytest.raises(TypeError, match=message):
        numpy_twin(augmented_int_by_float)(x.copy())
    for run in (augmented_int_by_float, to_static(augmented_int_by_float)):
        with pytest.raises(TypeError, match=message):
            run(rt.tensor(x))
    y = np.ones((2, 3), np.int32)
    for run in (augmented_broadcast_grows, to_static(augmented_broadcast_grows)):
        with pytest.raises(ValueError, match="non-broadcastable output operand"):
            run(rt.tensor(x), rt.tensor(y))


def test_augmented_assignment_on_a_python_counter_is_python_rebinding():
    def f(x):
        i = 0
        while x.sum() < 10:
            x = x + 1
            i += 0.5                       # a Python number: becomes a float, as in Python
        return i
    x = rt.tensor(np.ones(3, np.float32))
    assert to_static(f)(x).item() == f(x) == 1.5


# --- Python numbers carried by tensor control flow keep Python's precision ------------------------

def python_float_in_a_tensor_loop(x):
    s = 0.1
    n = 0
    while x.sum() > s:
        s = s * 1.1 + 0.01
        n += 1
    return s, n


def python_float_from_a_tensor_if(x):
    s = 1.0
    if x.sum() > 0:
        s = 1.0 / 3.0
    return x * s, s


def test_a_python_float_carried_by_a_tensor_loop_is_computed_in_double_precision():
    x = np.array([10.0], np.float32)
    s, n = to_static(python_float_in_a_tensor_loop)(rt.tensor(x))
    want_s, want_n = python_float_in_a_tensor_loop(rt.tensor(x))      # plain Python floats
    assert float(s) == want_s and int(n) == want_n
    y, s = to_static(python_float_from_a_tensor_if)(rt.tensor(x))
    assert float(s) == 1.0 / 3.0
    assert y.dtype == np.float32 and y.numpy()[0] == np.float32(10.0) * np.float32(1.0 / 3.0)


# --- an rt function of Python numbers returns NumPy's strongly typed result, as eagerly ----------

def functions_of_python_numbers(x):
    return x * xp.abs(-3), xp.maximum(2, 3) * x, x / xp.sqrt(x.shape[0]), xp.exp(1.0) + x


def functions_of_a_python_counter(x):
    i = 0
    while x.sum() > i:
        i += 1
    return x * xp.abs(i), x * xp.maximum(i, 2.5), x * (i * 0.5), x * abs(-i)


def test_rt_functions_of_python_numbers_promote_as_numpy_does():
    _check(functions_of_python_numbers, np.array([0.5, -1.0, 2.0], np.float32))


def test_rt_functions_of_a_python_counter_promote_as_numpy_does_and_operators_as_python_does():
    _check(functions_of_a_python_counter, np.array([0.5, 1.0, 2.0], np.float32))


def test_an_rt_function_of_a_dynamic_dim_promotes_as_numpy_does():
    from transpiler import InputSpec
    x = np.array([0.5, 1.0, 2.0], np.float32)
    f = to_static(lambda x: x / xp.sqrt(x.shape[0]), input_spec=[InputSpec([None], "float32")])
    got = f(rt.tensor(x))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.numpy(), x / np.sqrt(3))
