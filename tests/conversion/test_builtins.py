"""Python builtins over traced values (issues 18.5, 9.10): what they do eagerly, NumPy as the oracle.

Each function is written against `xp`: run with xp = numpy it is the oracle, converted with
xp = runtime it is the system under test.
"""
import numpy as np
import pytest

import runtime as xp
from transpiler import InputSpec, to_static

from .oracle import compare, numpy_twin


def check(fn, *arrays, ops=(), no_ops=()):
    """Converted == NumPy twin; the Program holds `ops` and none of `no_ops`."""
    static = to_static(fn)
    want = numpy_twin(fn)(*[np.array(a) for a in arrays])
    got = static(*[xp.tensor(a) for a in arrays])
    compare(got, want)
    types_ = {op.type for op in static.get_program(*[xp.tensor(a) for a in arrays]).ops()}
    assert set(ops) <= types_, f"expected ops {set(ops)} in {sorted(types_)}"
    assert not set(no_ops) & types_, f"unexpected ops {set(no_ops) & types_}"
    return static


ROWS = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
VEC = np.array([3.0, -7.0, 9.0, 1.0, 9.0], np.float32)


# --- builtins that iterate a tensor with a static first dim ----------------------------------------

def sum_rows(x):
    return sum(x)


def sum_with_start(x):
    return sum(x, x[0] * 10)


def list_and_tuple(x):
    rows = list(x)
    first, *rest = tuple(x)
    return xp.stack(rows[::-1]), first + rest[-1], len(rows)


def zip_with_python_list(x):
    out = []
    for row, w in zip(x, [1.0, 2.0, 3.0]):
        out.append(row * w)
    return xp.stack(out)


def zip_in_value_position(x):
    scaled = dict(zip(["a", "b", "c", "d"], x))
    return scaled["c"] - scaled["a"]


def map_user_function(x):
    def double_if_positive(r):
        if r.sum() > 0:
            return r * 2
        return r
    return xp.stack(list(map(double_if_positive, x)))


def enumerate_in_value_position(x):
    pairs = list(enumerate(x, 1))
    return pairs[2][0] * pairs[2][1]


def max_and_min_of_rows(x):
    return max(x), min(x)


def max_min_of_arguments(x):
    return max(x[0], x[1], x[2]), min(x[4], x[0])


def max_with_key(x):
    return max([x[0], x[1], x[2]], key=lambda r: -r)


def max_of_rows_of_matrix_with_key(x):
    return max(x, key=lambda r: r.sum())


def any_and_all_of_rows(x):
    flags = (any(x > 8), all(x > -8), any(x > 100), all(x > 2), any([]), all([]), any([0, x[0] > 100]))
    if any(x > 5) and all(x < 100):
        return x * 2, flags
    return x, flags


@pytest.mark.parametrize("fn, array", [
    (sum_rows, ROWS), (sum_with_start, ROWS), (list_and_tuple, ROWS),
    (zip_in_value_position, ROWS), (map_user_function, ROWS), (enumerate_in_value_position, ROWS),
    (max_and_min_of_rows, VEC), (max_min_of_arguments, VEC), (max_with_key, VEC),
    (max_of_rows_of_matrix_with_key, ROWS), (any_and_all_of_rows, VEC), (any_and_all_of_rows, VEC - 20),
], ids=lambda v: getattr(v, "__name__", ""))
def test_builtin_iterates_rows_like_python(fn, array):
    check(fn, array, no_ops={"while"})


def test_max_keeps_the_first_of_equal_items():
    def f(x):
        return max(x[2], x[4], key=lambda v: v * 0)     # all keys equal: Python keeps the first
    static = to_static(f)
    out = static(xp.tensor(np.array([0, 0, 5, 0, 6], np.float32)))
    assert float(out) == 5.0


def test_min_max_of_empty_sequence_with_default_and_plain_values():
    def f(x):
        return max([], default=3) + min(4, 2) + max([1, 5, 2]), x
    check(f, VEC)


def test_for_over_enumerate_growing_a_tuple_unrolls():
    def f(x):
        ret = ()
        for i, row in enumerate(x):
            ret += (row * i,)
        return ret
    check(f, ROWS, no_ops={"while"})


def test_for_over_a_tensor_growing_a_list_is_a_while_op_carrying_a_tensor_array():
    # the Program's size does not depend on the number of rows (issue 24)
    def f(x):
        out = []
        for row in x:
            out.append(row + 1)
        return out, len(out)
    check(f, ROWS, ops={"while"})
    check(zip_with_python_list, ROWS[:3], ops={"while"})


def test_for_over_zip_of_tensors_unpacks_pairs():
    def f(x, y):
        s = x[0] * 0
        for a, b in zip(x, y):
            s = s + a * b
        return s
    check(f, ROWS, ROWS * 2, ops={"while"})


def test_for_over_a_tensor_that_keeps_its_structure_stays_a_while_op():
    def f(x):
        s = x[0] * 0
        for row in x:
            s = s + row
        return s
    check(f, ROWS, ops={"while"})


def test_tuple_unpacking_a_tensor_with_static_first_dim():
    def f(x):
        a, b, c = x
        return a + b * c
    check(f, ROWS[:3])


def test_unpacking_the_wrong_count_is_python_error():
    def f(x):
        a, b = x
        return a + b
    with pytest.raises(ValueError, match="too many values to unpack"):
        to_static(f)(xp.tensor(ROWS))


def dynamic_list(x):
    return list(x)


def dynamic_max(x):
    return max(x)


def dynamic_unpack(x):
    a, b = x
    return a


@pytest.mark.parametrize("fn", [dynamic_list, dynamic_max, dynamic_unpack], ids=lambda f: f.__name__)
def test_dynamic_first_dim_names_the_dimension_and_the_alternatives(fn):
    static = to_static(fn, input_spec=[InputSpec([None, 3], "float32", "x")])
    with pytest.raises(TypeError, match=r"shape \[\?, 3\].*dimension 0 is dynamic.*input_spec"):
        static(xp.tensor(ROWS))


# --- builtins reached through a variable -------------------------------------------------------

def test_range_through_a_variable_with_a_tensor_bound():
    def f(x, n):
        fn = range
        s = x
        for i in fn(n):
            s = s + i
        return s
    static = to_static(f)
    for n in (0, 3, 5):
        got = static(xp.tensor(np.float32(1.5)), xp.tensor(np.int32(n)))
        assert float(got) == 1.5 + sum(range(n))
    assert static.cache_size == 1


def test_for_over_zip_of_names_and_rows_unrolls():
    def f(x):
        by_name = {}
        total = x[0] * 0
        for name, row in zip(["a", "b", "c"], x):
            by_name[name] = row
            total = total + row
        return by_name["c"] - by_name["a"], total
    check(f, ROWS)


def test_zip_of_names_with_a_dynamic_first_dim_is_a_clear_error():
    def f(x):
        out = {}
        for name, row in zip(["a", "b"], x):
            out[name] = row
        return out
    static = to_static(f, input_spec=[InputSpec([None, 3], "float32", "x")])
    with pytest.raises(TypeError, match=r"dimension 0 is dynamic.*str values.*input_spec"):
        static(xp.tensor(ROWS))


def test_growing_a_tuple_over_a_dynamic_first_dim_names_the_dimension():
    def f(x):
        ret = ()
        for i, row in enumerate(x):
            ret += (row * i,)
        return ret
    static = to_static(f, input_spec=[InputSpec([None, 3], "float32", "x")])
    with pytest.raises(TypeError, match=r"'ret' has a different structure.*dimension 0 is dynamic.*input_spec"):
        static(xp.tensor(ROWS))


def test_list_of_a_tensor_bounded_range_says_its_length_is_a_tensor():
    def f(x, n):
        return x, list(range(n))
    with pytest.raises(TypeError, match=r"range\(\) with a tensor bound"):
        to_static(f)(xp.tensor(ROWS), xp.tensor(np.int32(3)))


# --- int(), float(), bool() of a traced tensor -------------------------------------------------------

def scale_by_int_of_mean(x):
    n = int(x.mean())                  # truncates toward zero; weak: x keeps float32
    return x * n + float(x[0, 0]) + bool(x[1, 2] > 0)


def first_rows_by_int(x):
    return x[:int(x[0, 0] > -4) + 1]


@pytest.mark.parametrize("fn", [scale_by_int_of_mean, first_rows_by_int])
def test_int_float_bool_of_a_traced_one_element_tensor(fn):
    for array in (ROWS, -ROWS, ROWS + 7.5):
        got = to_static(fn)(xp.tensor(array))
        want = numpy_twin(fn)(array.copy())
        assert got.dtype == want.dtype
        compare(got, want)


def test_int_of_nan_and_of_a_tensor_with_several_elements_raise_as_python():
    static = to_static(lambda x: int(x))
    with pytest.raises(ValueError, match="NaN"):
        static(xp.tensor(np.float32("nan")))
    with pytest.raises(OverflowError, match="infinity"):
        static(xp.tensor(np.float32("inf")))
    with pytest.raises(TypeError):
        static(xp.tensor(VEC))
    assert int(static(xp.tensor(np.float32(-2.7)))) == -2


def item_of_the_mean(x):
    m = x.mean().item()                # a Python float: float64 weak, x keeps float32
    return x - m, m


def test_item_and_numpy_of_a_traced_value_are_computed_when_the_program_runs():
    def uses_numpy(x):
        if xp.mean(x).numpy() > 0:     # Paddle-style: `.numpy()` inside is the traced value itself
            return x - 1
        return x + 1
    for array in (ROWS, -ROWS - 1):
        got = to_static(item_of_the_mean)(xp.tensor(array))
        want = item_of_the_mean(xp.tensor(array))
        assert got[0].dtype == np.float32 and got[1].numpy().item() == want[1]
        compare(got[0], want[0].numpy())
        compare(to_static(uses_numpy)(xp.tensor(array)), uses_numpy(xp.tensor(array)).numpy())
    with pytest.raises(ValueError, match="size 1"):
        to_static(lambda x: x.item())(xp.tensor(VEC))


# --- sum() and the truth of a list grown in a tensor-dependent loop ------------------------------------

def sum_of_a_list_grown_in_a_tensor_loop(x):
    parts = []
    i = 0
    while x.sum() > i:
        parts.append(x[0] * i + 0.1)
        i += 1
    y = x + sum(parts) * 0.01 if parts else x - 1
    return y, sum(parts, 2.5)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_sum_and_truth_of_a_tensor_array_are_pythons(sign):
    check(sum_of_a_list_grown_in_a_tensor_loop, np.array([3.0, 1.5], np.float32) * sign, ops=("while",))


def sum_of_rows(x):
    return sum(x), sum(x, 10.0)


def test_sum_over_rows_of_a_dynamic_first_dim_adds_them_in_order():
    static = to_static(sum_of_rows, input_spec=[InputSpec([None, 3], "float32")])
    for n in (0, 1, 5):
        a = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        got = static(xp.tensor(a))
        want = (sum(a, np.zeros(3, np.float32)), sum(a, np.float32(10.0) + np.zeros(3, np.float32)))
        compare(got, want)
