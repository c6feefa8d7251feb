"""Corpus cases for user functions, nested functions, closures, lambdas, builtins, NumPy constants (Calls transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("calls")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)
