"""Every corpus function: converted result == the same code run with NumPy."""
import types

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .corpus import CASES


def _inputs(case, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in case["shapes"]:
        a = rng.standard_normal(shape).astype(case["dtype"])
        if case["positive"]:
            a = np.abs(a) + 0.1
        arrays.append(a)
    return arrays


def _numpy_twin(fn):
    """The same code object with `xp` bound to NumPy instead of runtime."""
    g = dict(fn.__globals__)
    g["xp"] = np
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def _oracle(case, arrays):
    py = _numpy_twin(case["fn"])
    return py(*[a.copy() for a in arrays], *case["scalars"])


def _compare(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    got = got.numpy() if isinstance(got, rt.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_converted_matches_numpy(case):
    static = to_static(case["fn"])
    for seed in (0, 1, 2):
        arrays = _inputs(case, seed)
        want = _oracle(case, arrays)
        got = static(*[rt.tensor(a) for a in arrays], *case["scalars"])
        _compare(got, want)
    assert static.cache_size == 1, "same signature must not retrace"
    program = static.get_program(*[rt.tensor(a) for a in _inputs(case, 0)], *case["scalars"])
    types_ = {op.type for op in program.ops()}
    assert case["ops"] <= types_, f"expected ops {case['ops']} in {sorted(types_)}"
    assert not (case["no_ops"] & types_), f"unexpected ops {case['no_ops'] & types_}"
