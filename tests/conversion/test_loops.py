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


def nested_while_loops(n1, n2):
    i = 0
    l = []
    while i < n1:
        j = 0
        s = 0
        while j < n2:
            s = s * 10 + i * j
            j += 1
        l.append(s)
        i += 1
    return rt.stack(l)


def test_a_list_first_appended_a_python_number_in_a_tensor_loop_becomes_a_tensor_array():
    # AutoGraph's loop_basic_test: the first body trace appends the Python 0 (the counter is
    # still a Python number then), later traces a tensor
    static, oracle = to_static(nested_while_loops), numpy_twin(nested_while_loops, "rt")
    for n1 in (1, 3):
        got = static(rt.tensor(np.int32(n1)), 3)
        np.testing.assert_array_equal(got.numpy(), oracle(np.int32(n1), 3))


def while_pads_with_the_counter(n):
    m = rt.asarray([[0, 0], [0, 0]])
    i = 0
    while i < n:
        m = rt.pad(m, [[1, 1], [1, 1]], constant_values=i)
        i += 1
    return m


@pytest.mark.parametrize("n", [0, 1, 2])
def test_pad_with_a_tensor_constant_value_in_a_loop_that_grows_the_matrix(n):
    # AutoGraph's loop_with_variable_type_test while_with_variable_shape_growing_matrix: the
    # counter is a tensor, and constant_values could only be a Python number
    got = to_static(while_pads_with_the_counter)(rt.tensor(np.int32(n)))
    np.testing.assert_array_equal(got.numpy(), numpy_twin(while_pads_with_the_counter, "rt")(np.int32(n)))


def read_write_loop(n):
    l = []
    l.append(1)
    l.append(1)
    for i in range(2, n):
        l.append(l[i - 1] + l[i - 2])
        l[i - 2] = -l[i - 2]
    return rt.stack(l)


def pops_inside_a_statement(n):
    l = [1, 2, 3, 4]
    s = 0
    for _ in range(n):
        s += l.pop()
    return s, len(l)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_an_item_of_a_list_grown_in_a_tensor_loop_set_at_the_loop_index(n):
    # AutoGraph's basic_list_test read_write_loop with a tensor bound: `l[i - 2] = ...` took the
    # tensor index as a Python int
    got = to_static(read_write_loop)(rt.tensor(np.int32(n)))
    np.testing.assert_array_equal(got.numpy(), numpy_twin(read_write_loop, "rt")(np.int32(n)))


@pytest.mark.parametrize("n", [0, 2, 4])
def test_a_pop_inside_an_augmented_assignment_in_a_tensor_loop(n):
    # AutoGraph's basic_list_test simple_empty: `s += l.pop()` was left a method call on the loop's array
    s, length = to_static(pops_inside_a_statement)(rt.tensor(np.int32(n)))
    assert (int(s), int(length)) == pops_inside_a_statement(n)


def initializes_on_the_first_item(l):
    s = 0
    for i in l:
        if i == l[0]:
            x = 0
        else:
            x += 1
        s = s * 10 + x
    return s


def test_a_for_over_a_tensor_with_a_static_length_of_zero_never_traces_its_body():
    # AutoGraph's loop_scoping_test for_initializes_local_var with an empty tensor: tracing the body
    # read l[0] of an empty tensor (IndexError) where Python runs no iteration
    empty = np.zeros(0, np.int32)
    assert int(to_static(initializes_on_the_first_item)(rt.tensor(empty))) == initializes_on_the_first_item(empty)


def alternate_slots(n):
    l = [0, 0]
    i = 0
    while i < n:
        l[i % 2] = l[i % 2] + i
        i += 1
    return l


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_python_list_read_and_set_at_the_tensor_loop_counter(n):
    got = to_static(alternate_slots)(rt.tensor(np.int32(n)))
    assert [int(v) for v in got] == alternate_slots(n)


def accumulate_from_a_numpy_scalar(n, x):
    s = np.float32(0.0)
    parts = []
    i = 0
    while i < n:
        s = s + x
        parts.append(np.float32(1.5))
        i += 1
    return s, rt.stack(parts)


def test_numpy_scalars_as_loop_state_become_tensors_of_their_dtype():
    # `s = np.float32(0)` changing in a tensor loop was "only tensors and numbers can change", and a
    # list of NumPy scalars grown there "a different structure": NumPy scalars are numbers too
    s, parts = to_static(accumulate_from_a_numpy_scalar)(rt.tensor(np.int32(3)), rt.tensor(np.float32(2.0)))
    want_s, want_parts = numpy_twin(accumulate_from_a_numpy_scalar, "rt")(3, np.float32(2.0))
    assert s.dtype == np.float32 and float(s) == float(want_s)
    np.testing.assert_array_equal(parts.numpy(), want_parts)


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
