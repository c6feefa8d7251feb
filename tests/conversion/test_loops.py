"""Corpus cases for while and for over ranges, tensors, enumerate, zip, lists, dicts (ControlFlow transform): converted result == NumPy oracle."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .oracle import cases, check_case, ids, numpy_twin

CASES = cases("loops")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)


def _sum_rows_into_int32(x):
    z = rt.zeros([1], dtype="int32")
    for i, v in enumerate(x, 1):
        z = z + v                 # int32 + int64 row: int64 from the first iteration on
        if i > 2:
            continue
        z = z + i
    return z


def _read_items_earlier_iterations_appended(x):
    feats = {"key": []}
    for i, v in enumerate(x):
        if i > 1:
            last = feats["key"][-2]
        feats["key"].append(v * 2)
    return last


@pytest.mark.parametrize("fn", [_sum_rows_into_int32, _read_items_earlier_iterations_appended])
def test_static_length_loop_a_while_op_cannot_carry_unrolls_as_python(fn):
    """A dtype that changes after the first iteration, a list read at an index earlier iterations fill:
    with a static length the loop runs as Python runs it."""
    x = np.array([3, 1, 4, 1, 5], np.int64)
    want = numpy_twin(fn, "rt")(x.copy())
    got = to_static(fn)(rt.tensor(x))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def _walrus_in_a_tensor_while_test(x):
    n = x.sum()
    k = 0
    while (n := n - 1) > 0:
        k += 1
        if k > 2:
            break
        if k == 1:
            continue
        x = x * 2
    else:
        x = -x
    return x, n


@pytest.mark.parametrize("data", [[1.0, 2.0], [0.5, 0.2], [3.0, 3.0]])
def test_a_while_test_that_binds_a_name_rebinds_it_each_iteration(data):
    x = np.array(data, np.float32)
    want = numpy_twin(_walrus_in_a_tensor_while_test, "rt")(x.copy())
    got = to_static(_walrus_in_a_tensor_while_test)(rt.tensor(x))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
