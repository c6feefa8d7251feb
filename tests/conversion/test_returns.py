"""Corpus cases for early and several returns, returns inside loops (Returns transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("returns")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)
