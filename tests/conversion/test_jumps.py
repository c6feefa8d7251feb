"""Corpus cases for break, continue, while/else, for/else (Jumps transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("jumps")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)
