"""topk on rows long enough to select before sorting: the selection must give exactly the full stable
order's first k (ties by lowest index, NaNs first when largest and last when smallest, -0.0 equal to 0.0),
in eager mode and in a compiled plan. The oracle is Python's own sort of (NaN flag, value, index) keys."""
import math

import numpy as np
import pytest

import runtime as rt
from runtime.ops.sorting import _SELECT_MIN
from transpiler import to_static

N = _SELECT_MIN + 952          # a row long enough to take the selecting path


def oracle(row, k, largest):
    def key(i):
        v = float(row[i])
        if math.isnan(v):
            return (0 if largest else 1, 0.0, i)
        return (1 if largest else 0, -v if largest else v, i)
    index = np.array(sorted(range(len(row)), key=key)[:k], np.int64)
    return row[index], index


def assert_rows_match(values, index, x, k, largest):
    for r in range(len(x)):
        want_values, want_index = oracle(x[r], k, largest)
        np.testing.assert_array_equal(index[r], want_index)
        np.testing.assert_array_equal(values[r], want_values)


def rows(dtype, nans, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, (3, N)).astype(dtype)          # few distinct values: ties everywhere
    if np.dtype(dtype).kind == "f":
        x[rng.random(x.shape) < 0.2] = -0.0
        x[rng.random(x.shape) < 0.01] = np.inf
        x[rng.random(x.shape) < nans] = np.nan
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("k", [1, 9, N // 4])
def test_topk_selecting_matches_the_stable_order(dtype, largest, axis, k):
    x = rows(dtype, nans=0.001, seed=k)
    values, index = rt.topk(rt.asarray(x if axis == -1 else x.T), k, axis=axis, largest=largest)
    values, index = values.numpy(), index.numpy()
    if axis == 0:
        values, index = values.T, index.T
    assert index.dtype == np.int64 and values.dtype == x.dtype and values.shape == (3, k)
    assert_rows_match(values, index, x, k, largest)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("nans", [0.3, 0.9])      # the k-th value itself a NaN, when largest
def test_topk_selecting_with_many_nans(largest, nans):
    x = rows("float32", nans, seed=7)
    k = N // 4
    values, index = rt.topk(rt.asarray(x), k, largest=largest)
    assert_rows_match(values.numpy(), index.numpy(), x, k, largest)


def test_topk_selecting_in_a_plan():
    x = rows("float32", nans=0.01, seed=3)

    def f(a):
        values, index = rt.topk(a, 5)
        return values, index
    values, index = to_static(f)(rt.asarray(x))
    assert_rows_match(values.numpy(), index.numpy(), x, 5, True)
