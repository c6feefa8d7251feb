"""Places the converter declares (`state=`) are carried from a region's first trace.

A tensor-dependent if/while that writes into a Tensor in place (`h.buf[0] = v`, a Layer buffer
assigned) used to be traced once, found writing the Tensor, rolled back and traced again carrying it.
Where the converter sees the write, the Tensor is carried from the first trace: the branch or body is
traced once. A declared write the trace does not make is passed through by the op (no second trace), so
the results are Python's either way. Oracle: the same function run eagerly.
"""
import collections
import itertools
import types

import numpy as np
import pytest

import runtime as rt
from runtime import retraces
from runtime.errors import ControlFlowError
from transpiler import to_static


def _holder():
    return types.SimpleNamespace(buf=rt.tensor(np.zeros(3, np.float32)))


def _check(make, x, expected_traces):
    eager_h, static_h = _holder(), _holder()
    want = make(eager_h, itertools.count())(x)
    traces = itertools.count()
    got = to_static(make(static_h, traces))(x)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    np.testing.assert_allclose(static_h.buf.numpy(), eager_h.buf.numpy())
    assert next(traces) == expected_traces


def _if_writing(write, write_else=True):
    def make(h, traces):
        def f(x):
            if x.sum() > 0:
                next(traces)
                if write:
                    h.buf[0] = x.sum()
            else:
                if write_else:
                    h.buf[1] = x.mean()
            return x * 2
        return f
    return make


def test_a_declared_tensor_write_in_an_if_is_traced_once():
    _check(_if_writing(True), rt.tensor(np.float32([1.0, 2.0])), 1)
    _check(_if_writing(True), rt.tensor(np.float32([-1.0, -2.0])), 1)


def test_a_declared_write_the_trace_does_not_make_keeps_python_results():
    _check(_if_writing(False), rt.tensor(np.float32([1.0, 2.0])), 1)     # the else branch writes the Tensor
    # neither branch writes it (a Python-false `if` around the write): the op passes it through, traced once
    _check(_if_writing(False, write_else=False), rt.tensor(np.float32([1.0, 2.0])), 1)


def test_a_declared_tensor_write_in_a_while_is_traced_once():
    def make(h, traces):
        def f(x):
            i = 0
            while i < x.sum():
                next(traces)
                h.buf[2] = h.buf[2] + 1.0
                i += 1
            return x + h.buf[2]
        return f
    eager_h, static_h = _holder(), _holder()
    x = rt.tensor(np.float32([1.0, 2.0]))
    want = make(eager_h, itertools.count())(x)
    traces = itertools.count()
    got = to_static(make(static_h, traces))(x)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    np.testing.assert_allclose(static_h.buf.numpy(), eager_h.buf.numpy())
    body_traces = next(traces)
    assert body_traces <= 2       # the while op's own settling may trace the body twice; no retrace for the write


def _made_in_the_call(traces):
    def f(x):
        mv = rt.asarray([1.0, 2.0, 3.0])          # an eager Tensor the call makes: written in place below
        if x.sum() > 0:
            next(traces)
            mv[1:] = mv[:-1] + x[:2]
        i = 0
        while i < x.sum():
            mv[0] += 1
            i += 1
        return x.sum() + mv
    return f


def test_a_local_tensor_written_into_is_declared_and_traced_once():
    x = rt.tensor(np.float32([1.0, 2.0]))
    want = _made_in_the_call(itertools.count())(x)
    traces = itertools.count()
    static = to_static(_made_in_the_call(traces))
    assert static.code.count("_jst.tensor_cell(lambda: mv, 'mv')") == 1     # the if's; the while carries mv
    for _ in range(2):      # each call makes mv afresh, as Python does
        np.testing.assert_allclose(static(x).numpy(), want.numpy())
    assert next(traces) == 1


def test_a_local_list_written_into_carries_no_tensor():
    def f(x):
        ys = [x, x * 2]
        if x.sum() > 0:
            ys[0] = ys[1] + 1
        return ys[0]
    static = to_static(f)
    x = rt.tensor(np.float32([1.0, 2.0]))
    np.testing.assert_allclose(static(x).numpy(), f(x).numpy())
    np.testing.assert_allclose(static(-x).numpy(), f(-x).numpy())


def _retraces(fn, *args):
    """fn(*args) and the retraces (runtime.retraces) it cost, by cause."""
    before = collections.Counter(retraces.COUNTS)
    out = fn(*args)
    after = collections.Counter(retraces.COUNTS)
    after.subtract(before)
    return out, {cause: n for cause, n in after.items() if n}


def _dict_through_a_dead_name(x):
    d = {"a": x}
    d2 = d
    if x[0] > 0:
        d["a"] = x + 10
        d["b"] = x
    else:
        d["b"] = x * 2
    return d2["a"] + d2["b"]      # `d` is dead after the if: the change reaches d2 through the one dict


def test_a_dict_changed_in_place_through_a_name_dead_after_the_if_is_declared():
    """The name is an output of the if from the first trace (it was traced, found changed, traced again)."""
    static = to_static(_dict_through_a_dead_name)
    for v in ([1.0, 2.0], [-1.0, 2.0]):
        x = rt.tensor(np.float32(v))
        got, cost = _retraces(static, x)
        np.testing.assert_allclose(got.numpy(), _dict_through_a_dead_name(x).numpy())
        assert cost == {}


def _list_grown_through_a_dead_name(x):
    lst = [x]
    lst2 = lst
    if x[0] > 0:
        lst.append(x + 10)
    return len(lst2)


def test_a_list_grown_under_a_tensor_if_through_a_dead_name_another_name_holds_is_an_error():
    """It becomes a tensor array bound to 'lst' alone; 'lst2' would silently keep one item (it did)."""
    with pytest.raises(ControlFlowError, match="'lst2' holds the same list"):
        to_static(_list_grown_through_a_dead_name)(rt.tensor(np.float32([1.0, 2.0])))


def _in_place_methods(h):
    def f(x):
        if x.sum() > 0:
            h.buf.set_value(h.buf + x.sum())      # an attribute chain: declared `_jst.tensor_cell(lambda: h.buf, ...)`
        i = 0
        while i < x.sum():
            h.buf.add_(1.0)                       # a PyTorch in-place method on a captured Tensor
            i += 1
        return x * h.buf.sum()
    return f


def test_tensor_in_place_methods_under_tensor_control_flow_are_declared():
    eager_h, static_h = _holder(), _holder()
    static = to_static(_in_place_methods(static_h))
    for v in ([1.0, 2.0], [-1.0, 0.5], [2.0, 2.0]):
        x = rt.tensor(np.float32(v))
        want = _in_place_methods(eager_h)(x)
        got, cost = _retraces(static, x)
        np.testing.assert_allclose(got.numpy(), want.numpy())
        np.testing.assert_allclose(static_h.buf.numpy(), eager_h.buf.numpy())
        assert retraces.TENSOR_WRITES not in cost
