"""Corpus cases for list.append in loops, subscript assignment, augmented assignment (InPlaceUpdates transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("lists")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)


# --- slicing and reversing a list grown in a tensor-dependent loop (a tensor array) ------------------

import numpy as np

import runtime as rt
from transpiler import InputSpec, to_static


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
