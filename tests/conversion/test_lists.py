"""Corpus cases for list.append in loops, subscript assignment, augmented assignment (InPlaceUpdates transform): converted result == NumPy oracle."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .oracle import cases, check_case, compare, ids, numpy_twin

CASES = cases("lists")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)


def _set_items_of_a_list_grown_in_a_tensor_loop(x, n):
    items = []
    for i in range(n):                 # a tensor bound: `items` is a tensor array
        items.append(x * i)
    for i in range(n):
        if i % 2 == 0:
            items[i] = items[i] + 100  # set at a tensor index
    items[-1] = items[-1] * 0
    items[0] += 1
    return rt.stack(items)


def _set_items_of_a_list_display_at_a_tensor_index(x, n):
    items = [x, x * 2, x * 3]
    for i in range(n):
        items[i % 3] = items[i % 3] + i
    items[n - 4] = -x                  # negative (n = 1): counts from the end
    return items[0], items[1], items[2]


@pytest.mark.parametrize("fn", [_set_items_of_a_list_grown_in_a_tensor_loop,
                                _set_items_of_a_list_display_at_a_tensor_index])
def test_list_items_set_at_a_tensor_index(fn):
    x = np.arange(3, dtype=np.float32)
    for n in (1, 4, 5):
        want = numpy_twin(fn, "rt")(x.copy(), n)
        compare(to_static(fn)(rt.tensor(x), rt.tensor(n)), want)


def test_list_item_set_at_a_tensor_index_out_of_range_is_an_index_error():
    def fn(x, n):
        items = []
        for i in range(n):
            items.append(x * i)
        items[n] = x
        return rt.stack(items)
    with pytest.raises(IndexError):
        to_static(fn)(rt.tensor(np.ones(2, np.float32)), rt.tensor(3))


def test_len_of_a_list_grown_in_a_tensor_loop_is_a_python_int():
    def fn(x, n):
        items = []
        for i in range(n):
            items.append(x * i)
        return x / len(items)         # float32 / int: float32, as eagerly
    x = np.float32([1.0, 2.0])
    got = to_static(fn)(rt.tensor(x), rt.tensor(3))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), x / 3)


def test_a_list_of_tensors_of_two_dtypes_read_at_a_tensor_index_is_a_clear_error():
    def fn(x, i):
        items = [x.astype("int32"), x * 2]
        return items[i]
    with pytest.raises(TypeError, match="one shape and dtype"):     # their stack was float64: int32 lost
        to_static(fn)(rt.tensor(np.float32([1.0, 2.0])), rt.tensor(0))


def test_a_list_of_python_floats_read_at_a_tensor_index_keeps_python_bits():
    def fn(x, i):
        weights = [0.1, 0.2, 0.3]
        return x * weights[i], weights[i] + 0.1
    x = np.float32([1.0, 2.0])
    scaled, w = to_static(fn)(rt.tensor(x), rt.tensor(2))
    assert scaled.dtype == np.float32 and w.numpy().item() == 0.3 + 0.1


def test_a_list_extended_with_plus_equals_in_a_tensor_loop():
    def fn(x, n):
        items = [x]
        i = 0
        while i < n:
            items += [x * i, x + i]          # Python's in-place extend
            i += 1
        return rt.stack(items)
    x = np.float32([1.0, 2.0])
    want = numpy_twin(fn, "rt")(x.copy(), 3)
    np.testing.assert_array_equal(to_static(fn)(rt.tensor(x), rt.tensor(3)).numpy(), want)
