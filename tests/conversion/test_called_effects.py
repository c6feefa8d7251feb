"""Places written by functions a tensor-dependent if/while calls (issue 26 §4).

Where the converter converts the callee (a method of the object, a callable object, a Layer's
forward, a module function given the object), what it writes through its parameters is declared
at the call site (`transpiler/effects/calls.py`): the construct is traced once, carrying those
places (runtime.retraces counts no retrace). Code the converter cannot see (a builtin `setattr`, a
method found by `getattr` with a computed name) is still found by tracing: traced again,
with Python's results. Objects the call makes are values of each call (called twice, each call
equals eager Python). Oracle: the same function run eagerly.
"""
import collections
import types

import numpy as np
import pytest

import runtime as rt
from runtime import retraces
from transpiler import to_static


def _t(v):
    return rt.tensor(np.float32(v))


def _cost(fn, *args):
    before = collections.Counter(retraces.COUNTS)
    out = fn(*args)
    after = collections.Counter(retraces.COUNTS)
    after.subtract(before)
    return out, {cause: n for cause, n in after.items() if n}


class Counter:
    def __init__(self):
        self.count = 0
        self.last = rt.zeros((2,))

    def bump(self, x):
        self.count += 1
        self.last = x * 2
        return x + 1

    def __call__(self, x):
        return self.bump(x)


class Net(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.inner = Counter()
        self.seen = 0

    def forward(self, x):
        self.seen += 1
        return self.inner(x) * 2


def method_under_if(m, x):
    if x.sum() > 0:
        y = m.bump(x)
    else:
        y = x - 1
    return y + m.count + m.last


def callable_object_in_while(m, x):
    while x.sum() < 20:
        x = m(x)
    return x + m.count + m.last


def layer_under_if(net, x):
    if x.sum() > 0:
        x = net(x)
    return x + net.seen + net.inner.count


def _store(d, v):
    d["k"] = v * 3
    d["n"] = d["n"] + 1


def helper_writes_a_dict_argument(d, x):
    if x.sum() > 0:
        _store(d, x)
    return x + d["k"]


@pytest.mark.parametrize("fn, make", [(method_under_if, Counter), (callable_object_in_while, Counter),
                                      (layer_under_if, Net)])
def test_attributes_a_converted_callee_sets_are_declared(fn, make):
    eager, static_object = make(), make()
    static = to_static(fn)
    for v in ([1, 2], [-1, -2], [3, 1]):
        want = fn(eager, _t(v))
        got, cost = _cost(static, static_object, _t(v))
        np.testing.assert_allclose(got.numpy(), want.numpy())
        assert retraces.CALLED_ATTRIBUTES not in cost
        assert vars(static_object).keys() == vars(eager).keys()
    inner = lambda o: o.inner if isinstance(o, Net) else o      # noqa: E731
    assert int(inner(static_object).count) == inner(eager).count
    np.testing.assert_allclose(inner(static_object).last.numpy(), inner(eager).last.numpy())


def test_items_a_module_function_sets_on_a_dict_argument_are_declared():
    """Was a ControlFlowError: the dict was changed where the conversion could not carry the change out."""
    static = to_static(helper_writes_a_dict_argument)
    eager_d, static_d = {"k": _t([0, 0]), "n": 0}, {"k": _t([0, 0]), "n": 0}
    for v in ([1, 2], [-1, -2], [3, 1]):
        want = helper_writes_a_dict_argument(eager_d, _t(v))
        got, cost = _cost(static, static_d, _t(v))
        np.testing.assert_allclose(got.numpy(), want.numpy())
        assert cost.get(retraces.UNSEEN_CONTAINERS, 0) == 0
        np.testing.assert_allclose(static_d["k"].numpy(), eager_d["k"].numpy())
        assert int(static_d["n"]) == eager_d["n"]


def _bump(t, k):
    t.add_(k)


def _bumping(v):
    def f(x):
        if x.sum() > 0:
            _bump(v, x.sum())       # a Tensor written in place through the callee's parameter
        return x * v
    return f


def test_a_tensor_a_callee_writes_in_place_through_a_parameter_is_declared():
    eager_v, static_v = _t(1.0), _t(1.0)
    static = to_static(_bumping(static_v))
    for v in ([1, 2], [-1, -3], [2, 2]):
        want = _bumping(eager_v)(_t(v))
        got, cost = _cost(static, _t(v))
        np.testing.assert_allclose(got.numpy(), want.numpy())
        np.testing.assert_allclose(static_v.numpy(), eager_v.numpy())
        assert retraces.TENSOR_WRITES not in cost


STATS = types.SimpleNamespace(total=_t(0.0))


def _note(x):
    STATS.total = STATS.total + x.sum()     # a global object's attribute, written by the callee


def notes_a_global(x):
    if x.mean() > 0:
        _note(x)
    return x + STATS.total


def test_an_attribute_of_a_global_object_a_callee_sets_is_declared():
    """Was a ValueError: the value the if computed was left on the object, outside the branch that made it."""
    static = to_static(notes_a_global)
    want_total = 0.0
    for v in ([1, 2], [-1, -3], [2, 2]):
        x = _t(v)
        if np.mean(v) > 0:
            want_total += float(np.sum(v))
        got, cost = _cost(static, x)
        np.testing.assert_allclose(got.numpy(), np.float32(v) + want_total)
        np.testing.assert_allclose(STATS.total.numpy(), want_total)
        assert cost == {}


# code the converter cannot see: found by tracing, traced again, still Python's results

def set_by_a_builtin(m, x):
    if x.sum() > 0:
        setattr(m, "count", m.count + 1)
        y = x * 2
    else:
        y = x
    return y + m.count


def set_through_getattr(m, x):
    name = "bu" + "mp"
    if x.sum() > 0:
        y = getattr(m, name)(x)
    else:
        y = x
    return y + m.count + m.last


@pytest.mark.parametrize("fn", [set_by_a_builtin, set_through_getattr])
def test_writes_the_converter_cannot_see_are_found_by_a_retrace(fn):
    eager, static_object = Counter(), Counter()
    static = to_static(fn)
    costs = []
    for v in ([1, 2], [-1, -2], [3, 1]):
        want = fn(eager, _t(v))
        got, cost = _cost(static, static_object, _t(v))
        costs.append(cost)
        np.testing.assert_allclose(got.numpy(), want.numpy())
        assert int(static_object.count) == eager.count
    assert costs[0].get(retraces.CALLED_ATTRIBUTES) == 1      # the first call's trace found them


# what the call makes is a value of each call, also when a callee it calls changes it

class Box:
    def __init__(self):
        self.v = rt.zeros((2,))
        self.n = 0

    def add(self, x):
        self.v = self.v + x
        self.n += 1


def made_and_changed_by_a_callee(x):
    box = Box()
    if x.sum() > 0:
        box.add(x)
    box.add(x * 0.5)
    return box.v + box.n


def made_list_changed_by_a_helper(x):
    acc = {"n": 0, "v": x * 0}
    _store(acc, x)
    if x.mean() > 0:
        _store(acc, x * 2)
    return acc["k"] + acc["n"]


@pytest.mark.parametrize("fn", [made_and_changed_by_a_callee, made_list_changed_by_a_helper])
def test_an_object_the_call_makes_and_a_callee_changes_is_fresh_each_call(fn):
    static = to_static(fn)
    for v in ([1, 2], [1, 2], [-3, 1], [1, 2]):      # the same input twice: nothing carries over
        x = _t(v)
        np.testing.assert_allclose(static(x).numpy(), fn(x).numpy())
