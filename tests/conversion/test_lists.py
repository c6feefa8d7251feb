"""Corpus cases for list.append in loops, subscript assignment, augmented assignment (InPlaceUpdates transform): converted result == NumPy oracle."""
import numpy as np
import pytest

import runtime as rt
from transpiler import InputSpec, to_static

from .oracle import cases, check_case, compare, ids, numpy_twin

CASES = cases("lists")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)


# --- slicing and reversing a list grown in a tensor-dependent loop (a tensor array) ------------------


def _rows_doubled(x):
    outs = []
    for i in range(x.shape[0]):          # dynamic first dim: a while op, outs a tensor array
        outs.append(x[i] * (i + 1))
    return outs


def reversed_list(x):
    res = []
    for o in reversed(_rows_doubled(x)):
        res.append(o)
    return rt.stack(res)


def sliced_lists(x):
    outs = _rows_doubled(x)
    return rt.concat(outs[::-1], axis=0), rt.stack(outs[1:]), rt.stack(outs[:-1:2])


def _numpy_rows(x):
    return [x[i] * (i + 1) for i in range(x.shape[0])]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_reversed_and_sliced_tensor_array_match_numpy(n):
    """reversed(xs) used the element's first dim as the list's length (a silently short result);
    xs[::-1] on a tensor array was a TypeError."""
    x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
    spec = [InputSpec([None, 3], "float32")]
    rows = _numpy_rows(x)
    got = to_static(reversed_list, input_spec=spec)(rt.tensor(x)).numpy()
    np.testing.assert_array_equal(got, np.stack(rows[::-1]))
    if n > 1:
        cat, tail, every = to_static(sliced_lists, input_spec=spec)(rt.tensor(x))
        np.testing.assert_array_equal(cat.numpy(), np.concatenate(rows[::-1], axis=0))
        np.testing.assert_array_equal(tail.numpy(), np.stack(rows[1:]))
        np.testing.assert_array_equal(every.numpy(), np.stack(rows[:-1:2]))


def test_gradient_flows_through_a_sliced_tensor_array():
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    w = np.arange(1, 4, dtype=np.float32)

    def loss(x):
        outs = _rows_doubled(x)
        return (rt.stack(outs[:0:-1]) * w).sum()

    g = to_static(rt.grad(loss), input_spec=[InputSpec([None, 3], "float32")])(rt.tensor(x)).numpy()
    want = np.zeros_like(x)
    want[1:] = np.arange(2, 5, dtype=np.float32)[:, None] * w        # row 0 is not in the slice
    np.testing.assert_allclose(g, want)


def test_len_of_a_tensor_array_in_plain_python_is_an_error():
    """Its static shape is an element's: len() must not answer with the element's first dim."""
    def f(x):
        arr = rt.array_append(rt.array_new((3,), "float32"), x[0])
        with pytest.raises(TypeError, match="tensor array"):
            len(arr)
        return x

    rt.trace(f, [rt.InputSpec([4, 3], "float32", "x")])


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


def test_plus_of_a_tensor_array_and_a_list_is_a_new_array_as_list_concatenation():
    """`xs + [v]` and `[v] + xs` on a list grown in a tensor loop: a new list; the old one (an alias) unchanged."""
    def fn(x, n):
        items = []
        i = 0
        while i < n:
            items.append(x * i)
            i += 1
        alias = items
        items = items + [x + 10, x + 20]
        front = [x - 1] + alias + []
        grown = []
        i = 0
        while i < n:
            grown = grown + [x + i]
            i += 1
        return rt.stack(items), rt.stack(alias), rt.stack(front), rt.stack([x] + grown), len(items)
    x = np.float32([1.0, 2.0])
    static = to_static(fn)
    for n in (1, 3):
        want = numpy_twin(fn, "rt")(x.copy(), n)
        got = static(rt.tensor(x), rt.tensor(n))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g.numpy()), w)


@pytest.mark.parametrize("how", ["plus", "plus_equals", "extend"])
def test_joining_two_lists_grown_in_tensor_loops_is_a_clear_type_error(how):
    """Not an elementwise add of the two (what `xs + ys` traced to before): a TypeError at the user's line."""
    def fn(x, n):
        xs, ys = [], []
        i = 0
        while i < n:
            xs.append(x * i)
            ys.append(x + i)
            i += 1
        if how == "plus":
            xs = xs + ys
        elif how == "plus_equals":
            xs += ys
        else:
            xs.extend(ys)
        return rt.stack(xs)
    with pytest.raises(TypeError, match="not supported"):
        to_static(fn)(rt.tensor(np.float32([1.0, 2.0])), rt.tensor(3))
