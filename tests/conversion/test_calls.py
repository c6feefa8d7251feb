"""Corpus cases for user functions, nested functions, closures, lambdas, builtins, NumPy constants (Calls transform): converted result == NumPy oracle."""
import numpy as np
import pytest

import runtime as rt
from transpiler import not_to_static, to_source, to_static

from .oracle import cases, check_case, ids

CASES = cases("calls")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)


class _Helper(rt.nn.Layer):
    def total(self, x):
        if x.shape[0] > 1:           # Python-valued: fine unconverted
            x = x + 1
        return rt.sum(x)

    def outer(self, x):
        return self.total(x) * 2


def test_not_to_static_of_a_bound_method_keeps_it_python():
    net = _Helper()
    assert not_to_static(net.total) == net.total
    static = to_static(net.outer)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(static(rt.tensor(x)).numpy(), (x + 1).sum() * 2)
    assert "convert_ifelse" not in to_source(to_static(net.total))
