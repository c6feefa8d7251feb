"""The harness of the peer-suite ports: a function run eagerly and static, call after call, must agree.

Each case gives argument tuples of NumPy arrays and Python values; every call gets fresh copies (arrays
become new eager Tensors), so a function that mutates its arguments starts from the same state both ways.
The static function is called on the first inputs, the second, then the first again, and each result must
equal a fresh eager run: values, dtypes, shapes, and the Python type of every non-tensor result.
"""
import numpy as np

import runtime as rt
from transpiler import to_static


def fresh(value):
    """A new copy of one argument: arrays as new eager Tensors, containers rebuilt, the rest as is."""
    if isinstance(value, np.ndarray):
        return rt.tensor(value.copy())
    if isinstance(value, list):
        return [fresh(v) for v in value]
    if isinstance(value, tuple):
        return tuple(fresh(v) for v in value)
    if isinstance(value, dict):
        return {k: fresh(v) for k, v in value.items()}
    return value


def agree(got, want, where="result"):
    """got (static) equals want (eager) in value, dtype, shape and Python type."""
    if isinstance(want, rt.Tensor):
        assert isinstance(got, rt.Tensor), f"{where}: {type(got).__name__} where eager gives a Tensor"
        g, w = got.numpy(), want.numpy()
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != eager {w.dtype}"
        assert g.shape == w.shape, f"{where}: shape {g.shape} != eager {w.shape}"
        np.testing.assert_array_equal(g, w, err_msg=where)
        return
    if isinstance(want, (bool, int, float)) and isinstance(got, rt.Tensor):
        # a Python number that depends on a tensor is a weakly typed 0-d tensor in the Program (docs/semantics.md)
        g = got.numpy()
        kind = {bool: "b", int: "i", float: "f"}[type(want)]
        assert g.shape == () and g.dtype.kind == kind, f"{where}: {got!r} for eager {type(want).__name__} {want!r}"
        np.testing.assert_array_equal(g, np.asarray(want), err_msg=where)
        return
    assert type(got) is type(want), f"{where}: {type(got).__name__} ({got!r}) != eager {type(want).__name__} ({want!r})"
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want), f"{where}: length {len(got)} != eager {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            agree(g, w, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)} != eager {list(want)}"
        for k in want:
            agree(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {got!r} != eager {want!r}"
        np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, float) and want != want:
        assert got != got, f"{where}: {got!r} != eager nan"
    else:
        assert got == want, f"{where}: {got!r} != eager {want!r}"


def like_eager(fn, *argsets, reset=None, state=None):
    """Static fn equals eager fn on argsets[0], argsets[-1], argsets[0] (one set: three times).

    reset/state: for a function that writes outside state (a global, an object it did not make): reset()
    puts the state back before each run, state() reads it; after each run it must agree too.
    """
    order = [argsets[0], argsets[-1], argsets[0]]
    static = to_static(fn)
    for n, args in enumerate(order):
        if reset:
            reset()
        want = fn(*fresh(args))
        want_state = state() if state else None
        if reset:
            reset()
        got = static(*fresh(args))
        agree(got, want, f"call {n + 1}")
        if state:
            agree(state(), want_state, f"state after call {n + 1}")
    return static


def case_id(case):
    return case[0].__name__
