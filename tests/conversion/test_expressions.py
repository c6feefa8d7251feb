"""Corpus cases for and/or/not, chained comparisons, ternaries (Expressions transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("expressions")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)
