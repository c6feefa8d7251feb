"""DESIGN §3 State: attributes, dict items and list items written under tensor control flow are state.

Oracle: the same function run eagerly (plain Python over eager Tensors) on its
own copy of the objects; after every call the static function must have
returned the same value AND left the same things on the objects.
"""
import inspect

import numpy as np
import pytest

import runtime as rt
from runtime.errors import ControlFlowError
from transpiler import to_static


def _t(value, dtype=np.float32):
    return rt.tensor(np.asarray(value, dtype))


def _plain(value):
    """A comparable form: tensors as NumPy, containers recursively, objects by their attributes."""
    if isinstance(value, rt.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return {"__keys__": list(value), **{repr(k): _plain(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return [type(value).__name__] + [_plain(v) for v in value]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return _plain(vars(value))
    return value


def _same(got, want, what):
    _compare(_plain(got), _plain(want), what)


def _compare(got, want, what):
    if isinstance(want, dict):
        assert isinstance(got, dict) and got["__keys__"] == want["__keys__"], f"{what}: {got} != {want}"
        for k in want:
            if k != "__keys__":
                _compare(got[k], want[k], f"{what}[{k}]")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want) and got[0] == want[0], f"{what}: {got} != {want}"
        for i, (g, w) in enumerate(zip(got[1:], want[1:])):
            _compare(g, w, f"{what}[{i}]")
    else:
        assert type(got) is not str and type(want) is not str, f"{what}: {got} != {want}"
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-6,
                                   err_msg=what)


def run_both(fn, make_state, calls):
    """fn(state, *args) eagerly and static, each on its own state, call after call."""
    eager_state, static_state = make_state(), make_state()
    static = to_static(fn)
    for args in calls:
        want = fn(eager_state, *args)
        got = static(static_state, *args)
        _same(got, want, "result")
        _same(static_state, eager_state, "state after the call")
    return static


class Obj:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


# --- dict items ------------------------------------------------------------------------

def set_key_in_both_branches(obj, x):
    if x.sum() > 0:
        obj.d["b"] = x * 2
    else:
        obj.d["b"] = -x
    return obj.d["b"] + 1


def test_dict_item_set_in_both_branches_is_the_taken_branch():
    run_both(set_key_in_both_branches, lambda: Obj(d={"a": 1}),
             [(_t([1.0, 2.0]),), (_t([-3.0, 1.0]),), (_t([2.0, 2.0]),)])


def set_key_through_a_local_name(obj, x):
    d = obj.d
    if x.sum() > 0:
        d["b"] = x * 2
        d["a"] = d["a"] + 1
    else:
        d["b"] = -x
    return d["b"] + 1


def test_dict_mutated_through_a_local_name_is_the_same_object_after():
    run_both(set_key_through_a_local_name, lambda: Obj(d={"a": 1}),
             [(_t([1.0, 2.0]),), (_t([-3.0, 1.0]),), (_t([2.0, 2.0]),)])


def top_level_writes(obj, x):
    obj.total = obj.total + x
    obj.seen["last"] = x
    return obj.total


def test_writes_outside_control_flow_are_written_back_each_run():
    run_both(top_level_writes, lambda: Obj(total=_t([0.0]), seen={}), [(_t([1.0]),), (_t([2.0]),), (_t([-4.0]),)])


def local_dict(x):
    d = {"a": x}
    if x.sum() > 0:
        d["b"] = 1
    else:
        d["b"] = -1
    return d["b"] * x


def test_local_dict_item_takes_the_branch_taken():
    static = to_static(local_dict)
    for v in (1.0, -1.0):
        np.testing.assert_allclose(static(_t([v])).numpy(), local_dict(_t([v])).numpy())


def key_in_one_branch(x):
    d = {"a": x}
    if x.sum() > 0:
        d["b"] = x
    return d


def test_dict_key_set_in_one_branch_is_an_error_naming_key_and_line():
    line = inspect.getsourcelines(key_in_one_branch)[1] + 2
    with pytest.raises(ControlFlowError) as info:
        to_static(key_in_one_branch)(_t([1.0]))
    message = str(info.value)
    assert "'b'" in message and "'d'" in message and f"line {line}" in message
    assert "__" not in message.split("File")[0]


def key_created_in_loop(x, n):
    d = {}
    i = rt.asarray(0)
    while i < n:
        d["k"] = x * i
        i = i + 1
    return d["k"], d


def test_dict_key_first_created_in_a_tensor_loop_that_runs():
    static = to_static(key_created_in_loop)
    for n in (1, 3):
        got, want = static(_t([1.0, 2.0]), _t(n, np.int64)), key_created_in_loop(_t([1.0, 2.0]), _t(n, np.int64))
        _same(got, want, "result")
    with pytest.raises(UnboundLocalError, match=r"d\['k'\]"):
        static(_t([1.0, 2.0]), _t(0, np.int64))


def item_on_attribute(self, x):
    i = rt.asarray(0)
    while i < 3:
        if x.sum() > i:
            self.cache["hits"] = self.cache["hits"] + x
        i = i + 1
    return self.cache["hits"].sum()


def test_dict_item_on_an_attribute_in_tensor_if_and_while():
    run_both(item_on_attribute, lambda: Obj(cache={"hits": _t([0.0, 0.0])}),
             [(_t([1.0, 0.5]),), (_t([-1.0, 0.5]),), (_t([3.0, 2.0]),)])


# --- list items ------------------------------------------------------------------------

def list_updates(obj, x):
    items = obj.items
    if x.sum() > 0:
        items[0] = x
        items.pop()
        items.insert(0, x * 3)
    else:
        del items[0]
        items.extend([x])
        items[1] = -x
    return items[0] + items[1]


def test_list_items_pop_insert_del_extend_under_tensor_if():
    run_both(list_updates, lambda: Obj(items=[_t([1.0]), _t([2.0]), _t([3.0])]),
             [(_t([1.0]),), (_t([-2.0]),), (_t([4.0]),)])


def list_on_attribute(self, x):
    if x.sum() > 0:
        self.items[1] = x
        self.items.reverse()
    return self.items[0]


def test_list_on_an_attribute_under_tensor_if():
    run_both(list_on_attribute, lambda: Obj(items=[_t([1.0]), _t([2.0])]), [(_t([5.0]),), (_t([-2.0]),)])


def pop_in_one_branch(x):
    acc = [x, x * 2, x * 3]
    if x.sum() > 0:
        acc.pop()
    return rt.stack(acc)


def test_list_popped_in_one_branch_has_a_data_dependent_length():
    static = to_static(pop_in_one_branch)
    for v in (1.0, -1.0):
        np.testing.assert_allclose(static(_t([v])).numpy(), pop_in_one_branch(_t([v])).numpy())


# --- attributes ------------------------------------------------------------------------

class Counter:
    def __init__(self):
        self.n = 1.0

    def count(self, x, y):
        while x < y:
            self.n = self.n + 1
            x = x + 1
        return x


def test_float_attribute_incremented_in_tensor_while():
    run_both(Counter.count, Counter, [(_t(1.0), _t(10.0)), (_t(1.0), _t(10.0)), (_t(5.0), _t(7.0))])


class Stepper:
    def __init__(self):
        self.b = rt.asarray(np.float32(0))

    def run(self, x):
        while self.b < 6:
            x = x + 1
            self.b += 1
        return x


def test_while_condition_reading_an_attribute_its_body_updates():
    run_both(Stepper.run, Stepper, [(_t(1.0),), (_t(1.0),)])


class Accumulator:
    def __init__(self):
        self.total = rt.asarray(np.float32(0))
        self.calls = 0

    def add(self, x):
        if x.sum() > 0:
            self.total = self.total + x.sum()
        else:
            self.total = self.total - 1
        return self.total * 2


def test_attribute_updated_in_tensor_if_and_read_after_is_written_back_each_run():
    static = run_both(Accumulator.add, Accumulator,
                      [(_t([1.0, 2.0]),), (_t([-1.0, 0.0]),), (_t([0.5, 0.5]),), (_t([3.0, 1.0]),)])
    assert static.cache_size == 1


def set_in_one_branch(obj, x):
    if x.sum() > 0:
        obj.flag = x
    return x


def test_attribute_set_in_one_branch_is_an_error_naming_it():
    with pytest.raises(ControlFlowError, match=r"'obj\.flag' is set only in the true branch"):
        to_static(set_in_one_branch)(Obj(), _t([1.0]))


def attribute_in_tensor_for(obj, x, n):
    for i in range(n):
        obj.acc = obj.acc * 0.5 + x * i
        obj.steps += 1
    return obj.acc


def test_attributes_in_a_tensor_range_for():
    run_both(attribute_in_tensor_for, lambda: Obj(acc=_t([1.0, 2.0]), steps=0),
             [(_t([1.0, -1.0]), _t(3, np.int64)), (_t([2.0, 0.0]), _t(2, np.int64))])


def test_get_program_leaves_no_traced_values_on_the_object():
    acc = Accumulator()
    before = acc.total
    to_static(Accumulator.add).get_program(acc, _t([1.0]))
    assert acc.total is before


# --- lists read and grown in tensor loops ----------------------------------------------

def fibonacci(n):
    seq = [rt.asarray(0), rt.asarray(1)]
    i = rt.asarray(2)
    while i < n:
        seq.append(seq[i - 1] + seq[i - 2])
        i = i + 1
    return rt.stack(seq)


def test_list_indexed_by_a_tensor_counter_in_a_tensor_loop_reads_the_tensor_array():
    static = to_static(fibonacci)
    for n in (2, 7, 10):
        _same(static(_t(n, np.int64)), fibonacci(_t(n, np.int64)), f"fibonacci({n})")


def append_after_break_with_python_guarded_return(x, n):
    i = 0
    acc = []
    while rt.mean(x) > 0 and i < 4:
        i += 1
        if rt.sum(x) > 100:
            break
        else:
            if n > 5:
                return x
        acc.append(x * i)
    return rt.stack(acc)


@pytest.mark.parametrize("scale", [1.0, 40.0])
def test_list_appended_after_tensor_break_in_loop_with_python_return(scale):
    static = to_static(append_after_break_with_python_guarded_return)
    x = _t(np.ones(3) * scale)
    if scale > 1:   # breaks in the first iteration: nothing appended, and stack fails as in Python
        with pytest.raises(ValueError):
            append_after_break_with_python_guarded_return(x, 3)
        with pytest.raises(ValueError, match="empty"):
            static(x, 3)
        return
    _same(static(x, 3), append_after_break_with_python_guarded_return(x, 3), "result")


def pop_in_tensor_for(x, n):
    a = []
    b = [x - 1, x + 1]
    for i in range(n):
        a.append(x + i)
        b.append(x * 2)
    for _ in range(1):
        item = a.pop()
    return a[0], item, b[1], rt.stack(a)


def pop_in_tensor_while(x, n):
    a = []
    b = [x]
    b.append(x)
    b.pop()
    i = 0
    while i < n:
        a.append(x + i)
        b.append(x - i)
        i += 1
        if i % 2 == 1:
            a.pop()
    return a[0], b[2], rt.stack(a)


def insert_extend_del_in_tensor_loop(x, n):
    a = [x]
    i = rt.asarray(0)
    while i < n:
        a.insert(0, x * 2.0)
        a.extend([x + 1, x + 2])
        del a[1]
        i = i + 1
    last = a.pop(0)
    return rt.stack(a), last


@pytest.mark.parametrize("fn, n", [(pop_in_tensor_for, 3), (pop_in_tensor_while, 4),
                                   (insert_extend_del_in_tensor_loop, 3), (insert_extend_del_in_tensor_loop, 1)])
def test_list_pop_insert_extend_del_on_lists_grown_in_tensor_loops(fn, n):
    x = _t([1.0, 2.0])
    _same(to_static(fn)(x, _t(n, np.int64)), fn(x, _t(n, np.int64)), "result")


class Helper:
    def __init__(self):
        self.last = rt.asarray(np.float32(0))

    def remember(self, v):
        self.last = v * 2

    def run(self, x):
        if x.sum() > 0:
            self.remember(x.sum())
        return x


def test_attribute_written_by_a_method_called_inside_a_tensor_if_is_carried():
    run_both(Helper.run, Helper, [(_t([1.0]),), (_t([-1.0]),), (_t([3.0]),)])


class Shared:
    def __init__(self):
        self.t = rt.asarray(np.float32([1.0, 2.0]))

    def step(self, x):
        if x.sum() > 0:
            self.t = self.t * 0.5 + x
        return x

    def read(self, x):
        return self.t * x


def test_another_function_reads_what_a_write_back_left_on_the_object():
    eager, static = Shared(), Shared()
    step, read = to_static(Shared.step), to_static(Shared.read)
    x = _t([1.0, 1.0])
    for _ in range(3):
        _same(read(static, x), Shared.read(eager, x), "read")
        step(static, x)
        Shared.step(eager, x)
        _same(static, eager, "state")
    _same(read(static, x), Shared.read(eager, x), "read after steps")


class Monitored(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = rt.nn.Linear(3, 3)
        self.hits = rt.asarray(np.float32(0))
        self.stats = {"max": rt.asarray(np.float32(-1e9))}

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            self.hits = self.hits + 1
        self.stats["max"] = rt.maximum(self.stats["max"], y.max())
        return y


def test_layer_counters_and_stats_are_written_back_every_call():
    eager, static_layer = Monitored(), Monitored()
    static_layer.load_state_dict(eager.state_dict())
    forward = to_static(static_layer.forward)
    for seed in range(4):
        x = rt.tensor(np.random.default_rng(seed).standard_normal((2, 3)).astype(np.float32))
        _same(forward(x), eager(x), "output")
        _same(static_layer.hits, eager.hits, "hits")
        _same(static_layer.stats, eager.stats, "stats")
    assert forward.cache_size == 1


def fill_dict_argument(d, x):
    d["b"] = x * 2
    if x.sum() > 0:
        d["a"] = d["a"] + x
    else:
        d["a"] = d["a"] - 1
    return x


def test_a_dict_argument_holds_what_the_function_wrote():
    run_both(fill_dict_argument, lambda: {"a": _t([1.0, 1.0])}, [(_t([1.0, 2.0]),), (_t([-3.0, 1.0]),),
                                                                 (_t([2.0, 2.0]),), (_t([-1.0, -1.0]),)])


def extend_list_argument(items, x):
    if x.sum() > 0:
        items[0] = items[0] + x
    items.append(x)
    return x


def test_a_list_argument_holds_what_the_function_wrote():
    run_both(extend_list_argument, lambda: [_t([0.0])], [(_t([1.0]),), (_t([-2.0]),), (_t([3.0]),)])


class Tally:
    def __init__(self):
        self.count = 0
        self.total = 0

    def step(self, v):
        self.count += 1
        self.total = self.total + v


def tally_in_tensor_if(x):
    tally = Tally()
    if x.sum() > 0:
        tally.step(1)
    return tally.count


def test_a_python_attribute_set_by_a_method_called_in_a_tensor_if_is_carried():
    # the method's `self.count += 1` runs on the path taken only, as Python runs it
    def uses_a_captured_object(tally, x):
        if x.sum() > 0:
            tally.step(1)
        return x
    run_both(lambda tally, x: tally_in_tensor_if(x), Tally, [(_t([1.0]),), (_t([-1.0]),)])
    run_both(uses_a_captured_object, Tally, [(_t([1.0]),), (_t([-1.0]),), (_t([2.0]),)])


def tally_in_a_conditional_expression(x):
    tally = Tally()
    y = tally.step(1) if x.sum() > 0 else None      # step returns None too
    return y, tally.count


def test_a_python_attribute_set_by_a_method_called_in_a_tensor_conditional_expression_is_carried():
    run_both(lambda _, x: tally_in_a_conditional_expression(x), Tally, [(_t([1.0]),), (_t([-1.0]),)])


# --- module globals written through an item -------------------------------------------

CACHE = {"w": None}
TOTALS = [None]


def global_items(x):
    if x.sum() > 0:                  # `CACHE[...] = ...` does not make CACHE local (as in Python)
        CACHE["w"] = CACHE["w"] + x
    for i in range(x.shape[0]):
        TOTALS[0] = TOTALS[0] + x[i]
    return CACHE["w"] * 2, TOTALS[0]


def test_global_dict_and_list_items_written_in_tensor_if_and_for():
    static = to_static(global_items)
    for data in ([1.0, 2.0], [-3.0, 1.0], [4.0, 0.5]):
        x = np.array(data, np.float32)
        CACHE["w"], TOTALS[0] = rt.tensor(np.ones(2, np.float32)), rt.tensor(np.float32(0))
        w, total = static(rt.tensor(x))
        want_w = np.ones(2, np.float32) + (x if x.sum() > 0 else 0)
        np.testing.assert_allclose(w.numpy(), want_w * 2)
        np.testing.assert_allclose(total.numpy(), x.sum())
        np.testing.assert_allclose(CACHE["w"].numpy(), want_w)
        np.testing.assert_allclose(TOTALS[0].numpy(), x.sum())


# --- attributes of sub-layers (objects of the methods the function calls) ------------------

class _Counter(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.seen = rt.asarray(np.float32([0.0]))

    def forward(self, x):
        self.seen = self.seen + x.sum()
        return x * 2


class _CountingNet(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.counter = _Counter()

    def forward(self, x):
        return self.counter(x) + 1


class _CountingInIf(_CountingNet):
    def forward(self, x):
        if x.sum() > 0:
            x = self.counter(x)
        return x


def test_a_sub_layer_attribute_written_by_its_forward_is_written_back_each_run():
    eager, static = _CountingNet(), _CountingNet()
    forward = to_static(static)
    for data in ([1.0, 2.0], [-4.0, 0.5], [3.0, 3.0]):
        _same(forward(_t(data)), eager(_t(data)), "output")
        _same(static.counter.seen, eager.counter.seen, "sub-layer attribute")
        assert isinstance(static.counter.seen, rt.Tensor)


def test_a_sub_layer_attribute_written_under_a_tensor_if_is_carried():
    eager, static = _CountingInIf(), _CountingInIf()
    forward = to_static(static)
    for data in ([1.0, 2.0], [-4.0, 0.5], [3.0, 3.0]):
        _same(forward(_t(data)), eager(_t(data)), "output")
        _same(static.counter.seen, eager.counter.seen, "sub-layer attribute")


# --- objects named as globals, and objects held in attributes ------------------------------

class _Box:
    def __init__(self):
        self.n = rt.asarray(np.float32([0.0]))


BOX = _Box()


def _bump(box, x):
    box.n = box.n + x.sum()


def _writes_a_global_object(x):
    BOX.n = BOX.n * 2 + 1
    _bump(BOX, x)                    # a helper writing the object it is given
    return x


class _HoldsConfig:
    def __init__(self):
        self.cfg = _Box()

    def run(self, x):
        self.cfg.n = self.cfg.n + x.sum()
        return x


def test_attributes_of_a_global_object_and_of_an_attribute_object_are_written_back_each_run():
    BOX.n = _t([0.0])
    static = to_static(_writes_a_global_object)
    holder = _HoldsConfig()
    run = to_static(holder.run)
    want = 0.0
    for data in ([1.0, 2.0], [-4.0, 0.5], [3.0, 3.0]):
        static(_t(data))
        run(_t(data))
        want = want * 2 + 1 + sum(data)
        assert isinstance(BOX.n, rt.Tensor) and isinstance(holder.cfg.n, rt.Tensor)
        np.testing.assert_allclose(BOX.n.numpy(), [want])
    np.testing.assert_allclose(holder.cfg.n.numpy(), [sum(sum(d) for d in ([1.0, 2.0], [-4.0, 0.5], [3.0, 3.0]))])


class _Leaf(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.state = rt.asarray(np.float32([0.0, 0.0]))


class _WritesItsBlocks(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.first = _Leaf()
        self.blocks = rt.nn.LayerList([_Leaf(), _Leaf()])

    def forward(self, x):
        self.first.state = self.first.state * 2 + x        # a sub-layer's attribute, set by its parent
        for block in self.blocks:
            block.state = block.state + x                   # items of a layer list
        return x


def test_sub_layer_attributes_set_by_the_parent_are_written_back_each_run():
    eager, static = _WritesItsBlocks(), _WritesItsBlocks()
    forward = to_static(static)
    for data in ([1.0, 2.0], [-4.0, 0.5]):
        forward(_t(data))
        eager(_t(data))
        for got, want in ((static.first, eager.first), *zip(static.blocks, eager.blocks)):
            assert isinstance(got.state, rt.Tensor)
            _same(got.state, want.state, "sub-layer state")


# --- in-place writes to captured tensors inside tensor-dependent if/while (tf.Variable's pattern) ---------------

def _check_in_place(fn, make_state, inputs, input_spec=None):
    """Eager oracle: the same function on its own fresh state; after every call the static one must return
    the same value and leave the same values in the captured tensors."""
    eager_state, static_state = make_state(), make_state()
    static = to_static(fn(static_state), input_spec=input_spec)
    eager = fn(eager_state)
    for x in inputs:
        x = np.asarray(x)
        x = x.astype({"i": np.int32, "f": np.float32}[x.dtype.kind]) if x.dtype.itemsize == 8 else x
        want = eager(rt.tensor(x))
        got = static(rt.tensor(x))
        _same(got, want, f"result for {x!r}")
        _same(static_state, eager_state, f"captured tensors after {x!r}")
    return static


def _counter(dtype=np.int32, shape=()):
    return lambda: [rt.tensor(np.zeros(shape, dtype))]


def test_set_value_in_a_tensor_if_is_carried_through_both_branches():
    def fn(state):
        v, = state

        def f(x):
            if x.sum() > 0:
                v.set_value(v * 2 + x.sum())
            return v + 1
        return f
    static = _check_in_place(fn, lambda: [rt.tensor(np.float32(1))],
                             [[1.0, 2.0], [-3.0, 1.0], [2.0, 0.5], [-1.0, -1.0]])
    assert any(op.type == "cond" for op in static.get_program(_t([1.0, 2.0])).ops())


def test_set_value_in_both_branches_and_reads_inside_the_branch_see_the_write():
    def fn(state):
        v, w = state

        def f(x):
            if x.sum() > 0:
                v.set_value(v + x)
                y = v * 10            # reads the value just written
            else:
                v.set_value(v - 1)
                w.set_value(w + v)
                y = w + v
            return y, v
        return f
    _check_in_place(fn, lambda: [rt.tensor(np.zeros(2, np.float32)), rt.tensor(np.ones(2, np.float32))],
                    [[1.0, 2.0], [-3.0, 1.0], [-1.0, -1.0], [0.5, 0.5]])


def test_set_value_in_a_tensor_for_loop_sees_every_previous_iteration():
    def fn(state):
        v, = state

        def f(l):
            for _ in l:
                v.set_value(v + 1)
            return v
        return f
    for spec in (None, [rt.InputSpec([None], "int32")]):
        static = _check_in_place(fn, _counter(), [[1, 2], [5], [3, 4, 5, 6]] if spec is None else
                                 [[1, 2], [5], [3, 4, 5, 6], np.zeros(0, np.int32)], input_spec=spec)
        if spec is not None:
            assert any(op.type == "while" for op in static.get_program(_t([1, 2], np.int32)).ops())


def test_set_value_in_a_tensor_while_loop_with_zero_one_and_many_iterations():
    def fn(state):
        v, total = state

        def f(n):
            i = 0
            while i < n:
                total.set_value(total + v * i)      # reads last iteration's v
                v.set_value(v + 1)
                i += 1
            return i, v * 1
        return f
    _check_in_place(fn, lambda: [rt.tensor(np.float32(1)), rt.tensor(np.float32(0))],
                    [np.int32(0), np.int32(1), np.int32(4), np.int32(2)])


def test_set_value_in_an_if_nested_in_a_loop_and_a_loop_nested_in_an_if():
    def fn(state):
        evens, odds = state

        def f(x):
            for item in x:
                if item % 2 == 0:
                    evens.set_value(evens + item)
                else:
                    odds.set_value(odds + 1)
            if x.sum() > 3:
                k = 0
                while k < x.sum():
                    evens.set_value(evens * 2)
                    k += 2
            return evens + odds
        return f
    _check_in_place(fn, lambda: [rt.tensor(np.int32(0)), rt.tensor(np.int32(0))],
                    [[1, 2, 3], [2], [1], np.zeros(0, np.int32), [4, 4, 1]],
                    input_spec=[rt.InputSpec([None], "int32")])


class _Counts(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", rt.tensor(np.int32(0)))
        self.total = rt.Parameter(np.zeros(2, np.float32))
        self.total.requires_grad = False

    def forward(self, x):
        if x.sum() > 0:
            self.count.set_value(self.count + 1)
            self.total += x
        return x * 2


def test_a_buffer_and_a_parameter_without_grad_written_under_a_tensor_if():
    eager, static = _Counts(), _Counts()
    run = to_static(static)
    for x in ([1.0, 2.0], [-1.0, -2.0], [3.0, 0.0], [1.0, 1.0]):
        _same(run(_t(x)), eager(_t(x)), f"result for {x}")
        _same(static.count, eager.count, "count")
        _same(static.total, eager.total, "total")
    assert int(static.count.numpy()) == 3


def test_a_write_in_a_tensor_if_keeps_the_tensor_dtype_and_shape_or_is_a_clear_error():
    v = rt.tensor(np.zeros(2, np.int32))

    @to_static
    def weak(x):
        if x.sum() > 0:
            v.set_value(v + 1)          # a Python int stays int32; a scalar broadcasts as eagerly
        else:
            v.set_value(7)
        return v * 1

    np.testing.assert_array_equal(weak(_t([1.0, 2.0])).numpy(), [1, 1])
    np.testing.assert_array_equal(weak(_t([-1.0, -2.0])).numpy(), [7, 7])
    assert v.dtype == np.int32 and v.shape == (2,)

    @to_static
    def wrong_dtype(x):
        if x.sum() > 0:
            v.set_value(x * 1.5)
        return x

    with pytest.raises(TypeError, match="same_kind") as info:
        wrong_dtype(_t([1.0, 2.0]))
    assert "v.set_value(x * 1.5)" in str(info.value)

    @to_static
    def wrong_shape(x):
        i = 0
        while i < x.sum():
            v.set_value(rt.ones((3,), "int32"))
            i += 1
        return x

    with pytest.raises(ValueError) as info:
        wrong_shape(_t([1.0, 2.0]))
    assert 'v.set_value(rt.ones((3,), "int32"))' in str(info.value)
    np.testing.assert_array_equal(v.numpy(), [7, 7])


def test_a_tensor_that_requires_grad_written_in_a_tensor_if_is_still_refused():
    p = rt.Parameter(np.zeros(2, np.float32))

    @to_static
    def f(x):
        if x.sum() > 0:
            p.set_value(p + x)
        return x

    with pytest.raises(ControlFlowError, match="requires grad") as info:
        f(_t([1.0, 2.0]))
    assert "p.set_value(p + x)" in str(info.value)
    np.testing.assert_array_equal(p.numpy(), [0, 0])


def test_item_writes_into_a_captured_tensor_in_tensor_if_and_loop():
    def fn(state):
        u, = state

        def f(x):
            for r in x:
                if r > 1:
                    u[0] = u[0] + r
                else:
                    u[1, 1] += 1
            if x.sum() > 4:
                u[...] = u * 2
            return u[0, 0] * 1
        return f
    _check_in_place(fn, lambda: [rt.tensor(np.zeros((2, 3), np.int32))],
                    [[1, 2, 3], np.zeros(0, np.int32), [0], [5], [2, 2]],
                    input_spec=[rt.InputSpec([None], "int32")])


class _Accumulates(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", rt.tensor(np.float32(0)))
        self.register_buffer("hist", rt.tensor(np.zeros(3, np.float32)))
        self.total = rt.Parameter(np.zeros(2, np.float32))
        self.total.requires_grad = False

    def forward(self, x):
        i = 0
        while i < x.shape[0]:
            if x[i] > 0:
                self.running = self.running + x[i]       # a buffer assignment writes in place
                self.hist[0] += 1
            else:
                self.running = self.running * 0.5
                self.hist[2] = self.hist[2] + 1
            self.total += x[i]
            i += 1
        return self.running * 1


def test_buffers_and_a_parameter_without_grad_written_in_a_tensor_loop_of_a_layer():
    eager, static = _Accumulates(), _Accumulates()
    run = to_static(static, input_spec=[rt.InputSpec([None])])
    for x in ([1.0, 2.0], [], [-1.0, 3.0], [4.0], [-2.0, -2.0, 1.0]):
        _same(run(_t(x)), eager(_t(x)), f"result for {x}")
        for name in ("running", "hist", "total"):
            _same(getattr(static, name), getattr(eager, name), name)


def test_a_write_in_a_function_called_from_a_tensor_loop_body_is_carried():
    def fn(state):
        v, = state

        def bump(k):
            v.set_value(v + k)

        def f(x):
            i = 0
            while i < x.sum():
                if i % 2 == 0:
                    bump(i)
                i += 1
            return v * 1
        return f
    _check_in_place(fn, lambda: [rt.tensor(np.float32(1))], [[1.0], [0.0], [5.0], [2.5]])


def test_gradients_through_tensors_written_in_a_tensor_if_match_eager():
    """set_value is not on the eager tape (the Tensor takes the array only): no gradient flows through
    it; an item assignment is (the Tensor follows the setitem's record): the gradient flows through it."""
    def make():
        return [rt.tensor(np.float32(1)), rt.tensor(np.zeros(2, np.float32))]

    def fn(state):
        total, u = state

        def f(x):
            if x.sum() > 0:
                total.set_value(total + (x * x).sum())
                u[0] = (x * x).sum()
            return (x * 3 * total).sum() + (u * x).sum()
        return f

    eager_state, static_state = make(), make()
    eager, static = fn(eager_state), to_static(fn(static_state))
    for value in ([1.0, 2.0], [-1.0, -2.0], [0.5, 1.0]):
        grads = []
        for run in (eager, static):
            x = _t(value)
            x.requires_grad = True
            y = run(x)
            y.backward()
            grads.append((y.numpy(), x.grad.numpy()))
        np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-6)
        np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-6)
        _same(static_state, eager_state, f"captured tensors after {value!r}")
