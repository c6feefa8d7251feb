"""Ports in the style of Paddle's dygraph_to_static tests (ifelse, loop, break_continue, return, list, dict,
tensor_methods, closure) and MindSpore's control tests (Cell.construct with tensor if/while/for), with the
state they write: globals, attributes of objects made before the call, nonlocal cells.

Oracle: the same function run eagerly; see peers.like_eager (three calls: same input, another, same again).
"""
import numpy as np
import pytest

import runtime as rt
from runtime import nn

from .peers import agree, fresh, like_eager

f32 = np.float32


def s(v, dtype=f32):
    return np.asarray(v, dtype)


X = (s([[1.0, 2.0], [3.0, -4.0]]),)
Y = (s([[-5.0, 0.5], [-1.0, 2.0]]),)
POS, NEG = (s(4.0),), (s(-3.0),)
N5, N2 = (s(5, np.int64),), (s(2, np.int64),)


# --- ifelse ----------------------------------------------------------------------------------------

def dyfunc_with_if_else(x):
    if rt.mean(x) > 0:
        x = x - 1
    else:
        x = x + 1
    return x


def dyfunc_with_if_else_shape(x):
    # a Python condition on the static shape, a tensor one on the values
    if x.shape[0] > 1:
        y = x[0]
    else:
        y = x
    if rt.mean(y) > 0:
        y = y * 2
    return y


def nested_if_else_with_numbers(x):
    y = 0
    if rt.sum(x) > 0:
        y = 1
        if rt.max(x) > 2:
            y = y + 10
    else:
        y = -1
    return x * y, y


def if_with_and_or_mixed(x):
    a = rt.sum(x) > 0
    b = rt.max(x) > 2
    if a and not b or (b and rt.min(x) < 0):
        return x + 100
    return x


def if_tensor_numpy_cond(x):
    # Paddle tests branch on x.numpy()[0] in converted code
    if x.numpy()[0, 0] > 0:
        return x * 3
    return x / 3


def if_builds_different_values(x):
    if rt.sum(x) > 0:
        out = {"a": x, "b": x * 2}
    else:
        out = {"a": -x, "b": x}
    return out["a"] + out["b"]


def if_in_comprehension_ternary(x):
    return [r if rt.sum(r) > 0 else -r for r in x]


# --- loops -----------------------------------------------------------------------------------------

def while_loop_dyfunc(x):
    i = x * 0
    while rt.sum(i) < 10:
        i = i + 1
    return i


def while_loop_with_python_and_tensor_cond(x):
    i = 0
    while i < 10 and rt.sum(x) < 50:
        x = x * 2
        i += 1
    return x, i


def for_loop_class_var(x):
    class Foo:
        def __init__(self):
            self.a = 1
            self.b = 2
            self.c = 5
    foo = Foo()
    for i in range(foo.c):
        foo.b += i
        x = x + foo.b
    return x, foo.b


def var_create_in_for_loop(n):
    for i in range(n):
        res = i * 2
    return res


def for_iter_list_append(x):
    z = [1, 2, 3]
    res = []
    for v in z:
        res.append(x * v)
    return res


def for_enumerate_rows_with_break(x):
    total = x[0] * 0
    for i, row in enumerate(x):
        total = total + row
        if rt.sum(total) > 2:
            break
    return total, i


def while_tensor_list_pop(n):
    xs = [rt.tensor(np.float32(1)), rt.tensor(np.float32(2)), rt.tensor(np.float32(3))]
    i = 0
    out = rt.tensor(np.float32(0))
    while i < n and i < 3:
        out = out + xs.pop()
        i += 1
    return out


def loop_increment_var_inside(x):
    i = 0
    a = x
    while i < 5:
        if rt.sum(a) > 10:
            i += 2
        a = a + 1
        i += 1
    return a


# --- break / continue ------------------------------------------------------------------------------

def continue_in_for_at_end(x):
    for i in range(10):
        x = x + 1
        if rt.sum(x) > 5:
            continue
    return x


def break_in_while_tensor_cond(x):
    i = 0
    while rt.sum(x) < 100:
        x = x + 3
        i += 1
        if i > 6:
            break
    return x, i


def optim_break_in_while(x):
    a = x * 0
    while rt.sum(a) < 15:
        a = a + 1
        if rt.sum(a) > 10:
            break
    return a


def continue_break_nested_while(x):
    i = 0
    j_total = 0
    while i < 4:
        i += 1
        j = 0
        while j < 4:
            j += 1
            if rt.sum(x) * j > 5:
                break
            if j == 2:
                continue
            j_total += j
    return j_total


# --- return ----------------------------------------------------------------------------------------

def return_in_while_2(x):
    while True:
        x = x + 1
        if rt.sum(x) > 5:
            return x


def return_different_length_if_body(x):
    y = x + 1
    if rt.sum(x) > 0:
        return x, y
    else:
        return x * 2, y * 2


def return_nested_function_result(x):
    def inner(v):
        if rt.sum(v) > 0:
            return v - 1
        return v + 1
    return inner(inner(x))


def recursive_return(x, depth=3):
    if depth == 0:
        return x
    if rt.sum(x) > 0:
        return recursive_return(x - 1, depth - 1)
    return recursive_return(x + 2, depth - 1)


def return_tuple_python_and_tensor(x):
    if rt.sum(x) > 0:
        return x, 1
    return x * 0, 2


# --- list / dict -----------------------------------------------------------------------------------

def list_append_in_for_loop_with_concat(x):
    a = []
    for i in range(3):
        a.append(x * i)
    return rt.concat(a, axis=0)


def list_append_in_while_tensor_cond(x):
    a = []
    i = 0
    while rt.sum(x) < 20 and i < 5:
        x = x + 2
        a.append(x)
        i += 1
    return rt.stack(a) if len(a) else x[None], len(a)


def list_setitem_in_loop(x):
    xs = [x, x, x]
    for i in range(3):
        xs[i] = xs[i] * i
    return xs


def list_setitem_tensor_index(n):
    flags = [0, 0, 0]
    i = 0
    while i < n and i < 3:
        flags[i] = 1
        i += 1
    return flags


def dict_pop_and_update(x):
    d = {"a": x, "b": x * 2}
    if rt.sum(x) > 0:
        d["c"] = d.pop("a") + 1
    else:
        d["c"] = d.pop("a") - 1
    return d


def dict_in_loop(x):
    d = {"acc": x * 0, "n": 0}
    for row in x:
        d["acc"] = d["acc"] + row
        d["n"] += 1
    return d["acc"] / d["n"]


def dict_of_lists(x):
    cache = {"k": [x[0]], "v": [x[1]]}
    for i in range(2):
        cache["k"].append(cache["k"][-1] + 1)
        cache["v"].append(cache["v"][-1] * 2)
    return rt.stack(cache["k"]) + rt.stack(cache["v"])


# --- tensor methods --------------------------------------------------------------------------------

def tensor_methods(x):
    return x.sum(axis=0), x.mean(), x.max(), x.argmax(), x.transpose(), x.reshape([4]).astype("int32"), \
        x.abs().sqrt(), x.clip(0, 2), x.T.shape, x.ndim, x.size


def tensor_clone_and_setitem(x):
    y = x.copy() if hasattr(x, "copy") else x * 1
    y[0, 0] = 100
    return x, y


def tensor_item_conditions(x):
    v = x[0, 0].item()
    if v > 0:
        return x * v
    return x


# --- closures ----------------------------------------------------------------------------------------

def closure_in_loop_late_binding(x):
    fns = []
    for i in range(3):
        def f(v):
            return v * i
        fns.append(f)
    return [g(x) for g in fns]


def closure_modified_after_def(x):
    k = 1

    def f(v):
        return v * k
    k = 5
    return f(x)


def nested_closure_with_tensor_cond(x):
    def outer(v):
        def inner(w):
            if rt.sum(w) > 0:
                return w * 2
            return w
        return inner(v) + inner(-v)
    return outer(x)


# --- MindSpore Cell.construct style -----------------------------------------------------------------

class IfInWhileNet(nn.Layer):
    def forward(self, x):
        i = 0
        out = x
        while i < 3:
            if rt.sum(out) > 0:
                out = out - 1
            else:
                out = out + 2
            i += 1
        return out


class ForInIfNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.weights = [1.0, 2.0, 3.0]

    def forward(self, x):
        if rt.sum(x) > 0:
            for w in self.weights:
                x = x * w
        else:
            for w in self.weights:
                x = x - w
        return x


class SubNet(nn.Layer):
    def forward(self, x):
        if rt.max(x) > 1:
            return x / 2
        return x * 2


class SwitchLayerNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.subs = nn.LayerList([SubNet(), SubNet()])

    def forward(self, x):
        out = x
        for layer in self.subs:
            out = layer(out)
        return out


def net_if_in_while(x):
    return IfInWhileNet()(x)


def net_for_in_if(x):
    return ForInIfNet()(x)


def net_switch_layers(x):
    return SwitchLayerNet()(x)


CASES = [
    (dyfunc_with_if_else, X, Y), (dyfunc_with_if_else_shape, X, Y), (nested_if_else_with_numbers, X, Y),
    (if_with_and_or_mixed, X, Y), (if_builds_different_values, X, Y),
    (if_in_comprehension_ternary, X, Y), (while_loop_dyfunc, X, Y),
    (while_loop_with_python_and_tensor_cond, X, Y), (for_loop_class_var, X, Y), (var_create_in_for_loop, N5, N2),
    (for_iter_list_append, X, Y), (for_enumerate_rows_with_break, X, Y), (while_tensor_list_pop, N5, N2),
    (loop_increment_var_inside, X, Y), (continue_in_for_at_end, X, Y), (break_in_while_tensor_cond, X, Y),
    (optim_break_in_while, X, Y), (continue_break_nested_while, X, Y), (return_in_while_2, X, Y),
    (return_different_length_if_body, X, Y), (return_nested_function_result, X, Y), (recursive_return, X, Y),
    (return_tuple_python_and_tensor, X, Y), (list_append_in_for_loop_with_concat, X, Y),
    (list_append_in_while_tensor_cond, X, Y), (list_setitem_in_loop, X, Y), (list_setitem_tensor_index, N5, N2),
    (dict_pop_and_update, X, Y), (dict_in_loop, X, Y), (dict_of_lists, X, Y), (tensor_methods, X, Y),
    (tensor_clone_and_setitem, X, Y), (tensor_item_conditions, X, Y), (closure_in_loop_late_binding, X, Y),
    (closure_modified_after_def, X, Y), (nested_closure_with_tensor_cond, X, Y), (net_if_in_while, X, Y),
    (net_for_in_if, X, Y), (net_switch_layers, X, Y), (if_tensor_numpy_cond, X, Y),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_like_eager(case):
    like_eager(case[0], *case[1:])


# --- state written across calls -----------------------------------------------------------------------

COUNTER = {"n": 0}
TOTAL = rt.tensor(np.float32(0))
CALLS = 0


def writes_global_dict_and_tensor(x):
    global TOTAL
    COUNTER["n"] += 1
    if rt.sum(x) > 0:
        TOTAL = TOTAL + rt.sum(x)
    return x * COUNTER["n"]


def test_global_dict_and_rebound_tensor_like_eager():
    def reset():
        global TOTAL
        COUNTER["n"] = 0
        TOTAL = rt.tensor(np.float32(0))

    def state():
        return COUNTER["n"], TOTAL.numpy().copy()
    # state is compared after each pair of runs: eager and static start from the same state
    reset()
    static_fn = to_static_fn(writes_global_dict_and_tensor)
    for args in (X, Y, X, X):
        before = (COUNTER["n"], TOTAL)
        want = writes_global_dict_and_tensor(*fresh(args))
        want_state = state()
        _put(before)
        got = static_fn(*fresh(args))
        agree(got, want)
        got_state = state()
        assert got_state[0] == want_state[0]
        np.testing.assert_array_equal(got_state[1], want_state[1])


def _put(before):
    global TOTAL
    COUNTER["n"], TOTAL = before


def to_static_fn(fn):
    from transpiler import to_static
    return to_static(fn)


def global_int_counter(x):
    global CALLS
    CALLS += 1
    return x + CALLS


def test_global_int_counter_retraces_and_counts_like_eager():
    global CALLS
    CALLS = 0
    static_fn = to_static_fn(global_int_counter)
    wants = []
    for _ in range(3):
        wants.append(global_int_counter(rt.tensor(s(1.0))).numpy())
    CALLS = 0
    gots = [static_fn(rt.tensor(s(1.0))).numpy() for _ in range(3)]
    np.testing.assert_array_equal(gots, wants)
    assert CALLS == 3


class Accumulator:
    def __init__(self):
        self.steps = 0
        self.best = rt.tensor(np.float32(-1e9))
        self.history = []

    def update(self, x):
        self.steps += 1
        m = rt.max(x)
        if m > self.best:
            self.best = m
        self.history.append(self.steps)
        return self.best * self.steps


def test_object_made_before_the_call_keeps_its_writes_like_eager():
    eager, static_obj = Accumulator(), Accumulator()
    static_update = to_static_fn(static_obj.update)
    for args in (X, Y, X, (s([[9.0, 0.0], [0.0, 0.0]]),), Y):
        want = eager.update(*fresh(args))
        got = static_update(*fresh(args))
        agree(got, want)
        assert static_obj.steps == eager.steps and static_obj.history == eager.history
        np.testing.assert_array_equal(static_obj.best.numpy(), eager.best.numpy())


class RunningMean(nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", rt.tensor(np.zeros(2, np.float32)))
        self.count = 0

    def forward(self, x):
        self.count += 1
        for row in x:
            if rt.sum(row) > 0:
                self.mean = self.mean + (row - self.mean) / self.count
        return self.mean * 1


def test_layer_buffer_written_under_tensor_if_in_loop_like_eager():
    eager, static_layer = RunningMean(), RunningMean()
    static_call = to_static_fn(static_layer)
    for args in (X, Y, X):
        want = eager(*fresh(args))
        got = static_call(*fresh(args))
        agree(got, want)
        assert static_layer.count == eager.count
        np.testing.assert_array_equal(static_layer.mean.numpy(), eager.mean.numpy())
