"""Run a corpus case both ways: the same code with NumPy (oracle) and converted with runtime."""
import types

import numpy as np

import runtime as rt
from transpiler import to_static

from .corpus import CASES


def cases(tag):
    selected = [c for c in CASES if tag in c["tags"]]
    assert selected, f"no corpus cases tagged {tag!r}"
    return selected


def ids(selected):
    return [c["fn"].__name__ for c in selected]


def inputs(case, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in case["shapes"]:
        a = rng.standard_normal([5 if d is None else d for d in shape]).astype(case["dtype"])
        if case["positive"]:
            a = np.abs(a) + 0.1
        arrays.append(a)
    return arrays


def numpy_twin(fn, alias="xp"):
    """The same code object with `alias` (the name runtime is imported as) bound to NumPy instead."""
    g = dict(fn.__globals__)
    g[alias] = np
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def compare(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            compare(g, w)
        return
    got = got.numpy() if isinstance(got, rt.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5)


def check_case(case):
    """Converted == oracle on three inputs, one trace, and the expected graph ops (or none)."""
    static = to_static(case["fn"])
    oracle = numpy_twin(case["fn"], "rt")     # the corpus imports runtime as rt
    for seed in (0, 1, 2):
        arrays = inputs(case, seed)
        want = oracle(*[a.copy() for a in arrays], *case["scalars"])
        got = static(*[rt.tensor(a) for a in arrays], *case["scalars"])
        compare(got, want)
    assert static.cache_size == 1 and static.retrace_reasons == [], \
        f"same signature must not retrace: {static.retrace_reasons}"
    program = static.get_program(*[rt.tensor(a) for a in inputs(case, 0)], *case["scalars"])
    types_ = {op.type for op in program.ops()}
    assert case["ops"] <= types_, f"expected ops {case['ops']} in {sorted(types_)}"
    assert not (case["no_ops"] & types_), f"unexpected ops {case['no_ops'] & types_}"
