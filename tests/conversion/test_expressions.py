"""Corpus cases for and/or/not, chained comparisons, ternaries (Expressions transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("expressions")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)


# --- a walrus in an operand that and/or/ternary evaluate only sometimes: the name is the function's ---------

import numpy as np

import runtime as rt
from transpiler import to_static


def _walrus_in_and_test(x, c):
    if c.sum() > 0 and (m := x.max()) > 1:
        return x * m
    return x


def _walrus_in_or_test_with_else(x, c):
    if c.sum() > 0 or (m := x.min()) < 0:
        y = x + 1
    else:
        y = x * m
    return y


def _walrus_in_ternary_branches(x, c):
    y = (m := x.max()) if c.sum() > 0 else (m := x.min())
    return y + m


def _walrus_in_and_value_and_chain(x, c):
    y = (m := x.max()) > 1 and c.sum() > 0 and (k := m * 2) > 5 or (n := x.min()) < 5
    return y, m + 1


def _walrus_in_while_test(x, c):
    i = 0
    while i < 3 and (v := x[i]) < 10:
        i += 1
    return v, i


def _walrus_in_assert(x, c):
    assert c.sum() > 0 or (m := x.min()) < 5
    return x


CASES_WALRUS = [_walrus_in_and_test, _walrus_in_or_test_with_else, _walrus_in_ternary_branches,
                _walrus_in_and_value_and_chain, _walrus_in_while_test, _walrus_in_assert]


@pytest.mark.parametrize("fn", CASES_WALRUS, ids=[f.__name__ for f in CASES_WALRUS])
@pytest.mark.parametrize("tensor_c", [False, True], ids=["python_c", "tensor_c"])
def test_walrus_in_a_later_operand_binds_the_functions_name(fn, tensor_c):
    x = np.array([2.0, 3.0, -1.0], np.float32)
    static = to_static(fn)
    for sign in (1.0, -1.0):
        c = np.full(2, sign, np.float32)
        want = fn(x, c)
        arg = rt.tensor(c) if tensor_c else _PythonSum(sign)
        got = static(rt.tensor(x), arg)
        for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(np.asarray(g.numpy() if hasattr(g, "numpy") else g), np.asarray(w))


class _PythonSum:
    """A Python-valued `c`: `c.sum()` is a float, so the and/or/ternary decides while tracing."""

    def __init__(self, value):
        self.value = value

    def sum(self):
        return self.value * 2


def test_walrus_in_a_later_operand_where_no_statement_can_hold_it_keeps_pythons_and_or():
    """In a comprehension or a call's argument the and/or/ternary stays Python's: the name is bound as in
    Python for Python operands (it was a NameError: the operand was a lambda)."""
    def fn(x, xs):
        ys = [v for v in xs if v > 0 and (u := v * 2) > 1]
        return ys, u, x + abs((t := 3) if xs else (s := 4)), abs(xs[0] > 0 and (r := -2)) + r
    x = np.float32([1.0, 2.0])
    want = fn(x, [1.0, 2.0])
    got = to_static(fn)(rt.tensor(x), [1.0, 2.0])
    assert got[0] == want[0] and got[1] == want[1] and got[3] == want[3]
    np.testing.assert_allclose(got[2].numpy(), want[2])
