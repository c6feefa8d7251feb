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
