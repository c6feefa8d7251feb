"""What a call makes is fresh on every call (issue 24.1): a static function called again equals eager again.

Python builds the objects, lists, dicts and tensors a call creates anew on every
call, so writes to them never reach the next call. Only state that existed before
the call (captured tensors, attributes of objects the function did not create,
globals) carries writes across calls. Every test calls the static function three
times (same input, another input, the same again) and compares each call with a
fresh eager run of the same code.
"""
import importlib.util
import inspect

import numpy as np
import pytest

import runtime as rt
import transpiler
from transpiler import InputSpec, to_static

from .oracle import CASES, inputs


def _value(out):
    if isinstance(out, (tuple, list)):
        return [_value(o) for o in out]
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


def _assert_same(got, want, what):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), what
        for g, w in zip(got, want):
            _assert_same(g, w, what)
        return
    assert got.dtype == want.dtype and got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_every_corpus_function_called_three_times_equals_eager(case):
    """Same input, another input, the same again: each static call equals a fresh eager run of the code."""
    fn, scalars = case["fn"], case["scalars"]
    static = to_static(fn)
    first, other = inputs(case, 0), inputs(case, 1)
    for n, arrays in enumerate((first, other, first)):
        want = _value(fn(*[rt.tensor(a) for a in arrays], *scalars))
        got = _value(static(*[rt.tensor(a) for a in arrays], *scalars))
        _assert_same(got, want, f"{fn.__name__}, call {n + 1}")


def three_calls(fn, first, other):
    """fn's static form called on `first`, `other`, `first` again equals fn run eagerly each time."""
    static = to_static(fn)
    for args in (first, other, first):
        want = _value(fn(*[rt.tensor(a) for a in args]))
        got = _value(static(*[rt.tensor(a) for a in args]))
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                                   rtol=1e-6, err_msg=f"{fn.__name__}{tuple(np.asarray(a).tolist() for a in args)}")
    assert static.retrace_reasons == [], static.retrace_reasons     # nothing the call made is state to guard
    return static


ONE, TWO = (np.float32(1),), (np.float32(2),)
NEG = (np.float32(-3),)


class Net:
    def __init__(self):
        self.b = rt.asarray(np.float32(4))      # made inside the traced call

    def __call__(self, x):
        if x > 0:
            self.b += 1
        return x + self.b


def object_made_in_call(x):
    return Net()(x)


def test_object_made_in_the_call_written_under_a_tensor_if():
    three_calls(object_made_in_call, ONE, NEG)


class Scale:
    def __init__(self):
        self.b = rt.asarray(np.float32(1))

    def step(self, x):
        self.b = self.b * x                     # no control flow at all
        return self.b


def method_writes_self(x):
    m = Scale()
    for _ in range(3):
        m.step(x)
    return m.b


def test_method_rebinding_self_attribute_without_control_flow():
    three_calls(method_writes_self, (np.float32(4),), TWO)


class Counter:
    def __init__(self):
        self.n = 0
        self.t = rt.asarray(np.float32(1))

    def step(self, x):
        self.n += 1                             # a Python number on an object the call made
        self.t = self.t * x
        return self.t * self.n


def python_counter_on_made_object(x):
    c = Counter()
    c.step(x)
    return c.step(x)


def test_python_number_on_an_object_made_in_the_call_is_not_guarded():
    three_calls(python_counter_on_made_object, TWO, NEG)


def local_list_item(x):
    items = [rt.asarray(np.float32(1)), rt.asarray(np.float32(2))]
    if x > 0:
        items[0] = items[0] + x
    return items[0] * items[1]


def local_dict_item(x):
    d = {"a": rt.asarray(np.float32(1))}
    if x > 0:
        d["a"] = d["a"] + x
    return d["a"]


def local_list_item_in_loop(x):
    items = [rt.asarray(np.float32(1))]
    i = 0
    while i < x:
        items[0] = items[0] * 2
        i += 1
    return items[0]


def local_list_python_counter(x):
    count = [0]
    if x > 0:
        count[0] += 1
    return x * count[0]


def dict_item_written_in_place(x):
    d = {"k": rt.asarray([1.0, 2.0, 3.0])}
    d["k"][0] += x
    return d["k"] * 1


@pytest.mark.parametrize("fn", [local_list_item, local_dict_item, local_list_item_in_loop, local_list_python_counter,
                                dict_item_written_in_place])
def test_items_of_local_lists_and_dicts(fn):
    three_calls(fn, TWO, NEG)


def shift_right(y):
    x = rt.asarray([0.0, 1.0, 2.0, 3.0])
    x[1:] = x[:-1] + 0
    return x + y


def setitem_under_tensor_if(x):
    t = rt.asarray([1.0, 2.0, 3.0])
    if x > 0:
        t[0] = t[0] + x
    return t * 1


def set_value_of_made_tensor(x):
    t = rt.asarray([1.0, 2.0])
    t.set_value(t * x)
    return t * 1


def setitem_on_array_backed_tensor(x):
    t = rt.asarray(np.zeros(3, np.float32))
    t[1:] = t[:-1] + x
    return t


def written_in_one_branch_and_by_a_loop_in_the_other(x):
    t = rt.asarray([1.0, 2.0, 3.0])
    if x > 0:
        t[1:] = t[:-1] + x              # the branch yields `t` as it left it, not as before the if
    else:
        i = 0
        while i < -x:                   # a while op: it carries `t` as a name
            t[1:] = t[:-1] + x
            i += 1
    return t * 1


@pytest.mark.parametrize("fn", [setitem_under_tensor_if, set_value_of_made_tensor, setitem_on_array_backed_tensor,
                                written_in_one_branch_and_by_a_loop_in_the_other])
def test_in_place_writes_into_a_tensor_made_in_the_call(fn):
    three_calls(fn, TWO, NEG)


def test_shifted_slice_assignment_of_a_local_tensor():
    three_calls(shift_right, (np.zeros(4, np.float32),), (np.ones(4, np.float32),))


class Accumulate(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", rt.asarray(np.float32(0)))

    def forward(self, x):
        self.total = self.total + 1             # a buffer write, on a Layer the call built
        return x + self.total


def layer_made_in_call(x):
    return Accumulate()(x)


def test_buffer_of_a_layer_made_in_the_call():
    three_calls(layer_made_in_call, TWO, NEG)


G = rt.asarray(np.array([1.0, 2.0], np.float32))


def global_in_local_list(x):
    items = [G]
    if x > 0:
        items[0] = items[0] + x
    return items[0] * 1


def reads_global(x):
    return G * x


def test_a_local_list_holding_a_global_tensor_never_rebinds_the_global():
    reader = to_static(reads_global)
    three_calls(global_in_local_list, TWO, NEG)
    np.testing.assert_array_equal(reader(rt.tensor(np.float32(1))).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(G.numpy(), [1.0, 2.0])


def cubed(x):
    m = Scale()
    for _ in range(3):
        m.step(x)
    return m.b


def test_gradient_of_a_function_writing_what_it_made():
    x = (np.float32(4),)
    want = rt.grad(cubed)(rt.tensor(x[0])).item()
    assert want == 48.0
    of_static = rt.grad(to_static(cubed))
    static_of = to_static(rt.grad(cubed))
    for _ in range(3):
        assert of_static(rt.tensor(x[0])).item() == want
        assert static_of(rt.tensor(x[0])).item() == want
    three_calls(rt.grad(object_made_in_call), ONE, NEG)


# --- what the call made and left on an object that outlives it -------------------------------------

class Holder:
    pass


HOLDER = Holder()


def stores_made_values(x):
    HOLDER.t = rt.asarray([1.0, 2.0])           # a new tensor each call
    HOLDER.net = Net()                          # a new object each call
    HOLDER.net(x)
    return HOLDER.t * x + HOLDER.net.b


def test_made_values_stored_on_a_pre_existing_object_are_fresh_each_call():
    inputs = (1.0, -3.0, 1.0)
    wants = []
    for v in inputs:
        out = stores_made_values(rt.tensor(np.float32(v))).numpy()
        wants.append((out, HOLDER.net.b.item()))
    static = to_static(stores_made_values)
    seen = []
    for v, (want, want_b) in zip(inputs, wants):
        np.testing.assert_allclose(static(rt.tensor(np.float32(v))).numpy(), want)
        assert HOLDER.net.b.item() == want_b    # the caller sees what Python leaves there
        np.testing.assert_array_equal(HOLDER.t.numpy(), [1.0, 2.0])
        seen.append(HOLDER.t)
        HOLDER.t[0] = 100.0                     # changing what one call left never reaches the next call
    assert seen[0] is not seen[2]


def test_pre_existing_state_still_carries_writes():
    class Acc:
        def __init__(self):
            self.total = rt.asarray(np.float32(0))

    acc = Acc()

    def add(x):
        if x > 0:
            acc.total = acc.total + x
        return acc.total * 1

    static = to_static(add)
    got = [static(rt.tensor(np.float32(2))).item() for _ in range(3)]
    assert got == [2.0, 4.0, 6.0] and acc.total.item() == 6.0


def _with_default():
    def accumulate(x, acc=[rt.asarray(np.float32(0))]):      # noqa: B006 - Python's mutable default: state
        if x > 0:
            acc[0] = acc[0] + x
        return acc[0] * 1
    return accumulate


_REGISTRY = {"t": rt.asarray(np.float32(0))}


@transpiler.not_to_static
def _registry():
    return _REGISTRY


def uses_registry(x):
    d = _registry()             # a dict that existed before the call, reached through a helper
    if x > 0:
        d["t"] = d["t"] + x
    return d["t"] * 1


def test_state_reached_through_defaults_and_helpers_still_carries_writes():
    eager, static = _with_default(), to_static(_with_default())
    x = rt.tensor(np.float32(2))
    assert [eager(x).item() for _ in range(3)] == [static(x).item() for _ in range(3)] == [2.0, 4.0, 6.0]
    want = [uses_registry(x).item() for _ in range(3)]
    _REGISTRY["t"] = rt.asarray(np.float32(0))
    assert [to_static(uses_registry)(x).item() for _ in range(3)] == want == [2.0, 4.0, 6.0]


# --- the same values through save / load / export_python -------------------------------------------

@pytest.mark.parametrize("fn", [object_made_in_call, shift_right, local_list_item, method_writes_self])
def test_saved_and_exported_programs_are_fresh_each_call(fn, tmp_path):
    x = np.ones(4, np.float32) if fn is shift_right else np.float32(2)
    name = next(iter(inspect.signature(fn).parameters))
    spec = [InputSpec.from_value(np.asarray(x), name)]
    static = to_static(fn)
    want = fn(rt.tensor(x)).numpy()
    transpiler.save(static, tmp_path / "f", input_spec=spec)
    loaded = transpiler.load(tmp_path / "f")
    py_path, _ = transpiler.export_python(static, tmp_path / "exported", input_spec=spec)
    module_spec = importlib.util.spec_from_file_location("exported_fresh", py_path)
    exported = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(exported)
    for _ in range(3):
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), want)
        np.testing.assert_allclose(loaded(rt.tensor(x)).numpy(), want)
        out = exported.run(**{name: np.asarray(x)})
        np.testing.assert_allclose(out, want)


def test_state_is_found_whatever_a_module_namespace_reaches():
    """The walk for what existed before the call skips a namespace's own machinery (`__loader__`,
    `__builtins__`...): under a test runner a module's `__loader__` reaches the whole session, which
    would exhaust the walk's budget and make a local list look like state."""
    from transpiler.effects import lifetimes

    def f(x):
        buf = [x * 0, x * 0]
        i = 0
        while i < rt.sum(x):
            buf[1] = buf[1] + x
            i += 1
        return buf[0] + buf[1]

    huge = type("Machinery", (), {})()
    huge.items = [[n] for n in range(lifetimes.LIMIT)]
    f.__globals__["__machinery__"] = huge
    try:
        x = rt.tensor(np.float32([1, 2]))
        static = to_static(f)
        for _ in range(3):
            np.testing.assert_array_equal(static(x).numpy(), f(x).numpy())
        assert not static._cache[next(iter(static._cache))].state     # nothing stored: the list was local
    finally:
        del f.__globals__["__machinery__"]
