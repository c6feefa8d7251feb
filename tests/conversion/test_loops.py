"""Corpus cases for while and for over ranges, tensors, enumerate, zip, lists, dicts (ControlFlow transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("loops")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)
