"""Corpus cases for if/elif/else, nested ifs, Python-valued ifs (ControlFlow transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("ifelse")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)
