"""Patterns real model code uses (issue 24): each computes what the same Python computes eagerly.

Oracle: the function run eagerly on fresh inputs; the static function is called several times, with
inputs that take different tensor paths, and must equal eager on every call.
"""
import numpy as np
import pytest

import runtime as rt
from runtime.errors import ControlFlowError
from transpiler import to_static


def _t(value, dtype=np.float32):
    return rt.tensor(np.asarray(value, dtype))


def _plain(value):
    if isinstance(value, rt.Tensor):
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def like_eager(fn, *calls):
    """Call fn eagerly and static on each argument tuple in turn; every result must agree."""
    static = to_static(fn)
    for args in calls:
        want = _plain(fn(*args))
        got = _plain(static(*args))
        if isinstance(want, np.ndarray):
            assert isinstance(got, np.ndarray) and got.dtype == want.dtype, (got, want)
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-6)
    return static


# --- writes through an alias and nested item assignment ------------------------------------------

def kv_cache_alias(k, pos):
    caches = [rt.zeros((2, 4)), rt.zeros((2, 4))]
    for i in range(2):
        c = caches[i]
        c[:, pos] = k * (i + 1)
    return caches[0] + caches[1] * 10


def test_write_through_an_alias_reaches_the_list():
    like_eager(kv_cache_alias, (_t([1, 2]), 1), (_t([3, -4]), 3))


def alias_in_dict_and_list(x):
    c = x * 1
    held = {"k": c, "all": [c, x]}
    c[0] = 7
    return held["k"] + held["all"][0] + held["all"][1]


def test_write_through_an_alias_reaches_dicts_and_nested_lists():
    like_eager(alias_in_dict_and_list, (_t([1, 2]),), (_t([-3, 5]),))


def alias_written_under_tensor_if(x):
    caches = [x * 1, x * 2]
    c = caches[0]
    if x.sum() > 0:
        c[0] = 0
    return caches[0] + c


def test_write_through_an_alias_under_a_tensor_if_is_a_clear_error():
    with pytest.raises(ControlFlowError, match=r"(?s)assign through the container.*line \d+"):
        to_static(alias_written_under_tensor_if)(_t([1, 2]))


def alias_in_tuple(x):
    pair = (x * 1, x)
    c = pair[0]
    c[0] = 5
    return pair[0]


def test_write_through_an_alias_in_a_tuple_is_a_clear_error():
    with pytest.raises(TypeError, match="keep such tensors in a list"):
        to_static(alias_in_tuple)(_t([1, 2]))


def kv_cache_nested(k, steps):
    cache = [rt.zeros((1, 2, 4)), rt.zeros((1, 2, 4))]
    pos = 0
    while pos < steps:
        for i in range(2):
            cache[i][:, :, pos] = k * (i + 1) + pos
        pos += 1
    return cache[0] + cache[1]


def test_nested_item_assignment_in_a_tensor_loop():
    like_eager(kv_cache_nested, (_t([1, 2]), _t(3, np.int64)), (_t([5, -1]), _t(1, np.int64)),
               (_t([1, 2]), _t(4, np.int64)))


def nested_dict_item(x):
    d = {"k": rt.zeros((2,)), "v": [x * 0, x * 0]}
    d["k"][...] = x
    d["v"][1][0] += x[1]
    if x.sum() > 0:
        d["k"][1] = 10
    return d["k"] + d["v"][1]


def test_nested_item_assignment_through_a_dict():
    like_eager(nested_dict_item, (_t([1, 2]),), (_t([-3, 1]),))


def nested_item_of_a_tensor(x):
    y = x * 1
    y[0][1] = 9          # y[0] is a copy: eagerly y keeps its values
    return y


def test_nested_item_of_a_tensor_is_a_copy_as_eagerly():
    like_eager(nested_item_of_a_tensor, (_t([[1, 2], [3, 4]]),))


def subscript_in_tuple_target(x):
    a = rt.zeros((3,))
    i = 0
    foo, a[0], bar = 1, x.sum(), 3
    i, a[i + 1] = 1, x[0]
    return a + foo + bar


def test_subscript_inside_a_tuple_target():
    like_eager(subscript_in_tuple_target, (_t([1, 2]),), (_t([4, -2]),))


# --- a name bound on every path that reaches its read (the others return or break) -----------------

def complicated(x):
    if x:
        if x == 2:
            return 1
        else:
            a = 2
    else:
        a = 4
    return a + 1


def test_names_bound_on_every_path_that_does_not_return():
    like_eager(complicated, (_t(2),), (_t(0),), (_t(3),), (_t(2),))


def bound_unless_break(x, n):
    i = 0
    total = x * 0
    while i < n:
        if (x > i).all():
            y = x * 2
        else:
            break
        total = total + y
        i += 1
    return total + i


def bound_unless_break_python_loop(x):
    total = x * 0
    for i in range(4):
        if x.sum() > i:
            y = x + i
        elif i > 2:
            continue
        else:
            break
        total = total + y
    return total


def test_names_bound_on_every_path_that_does_not_break():
    like_eager(bound_unless_break, (_t([3, 4]), _t(5, np.int64)), (_t([0.5, 4]), _t(5, np.int64)),
               (_t([9, 9]), _t(2, np.int64)))
    like_eager(bound_unless_break_python_loop, (_t([3, 4]),), (_t([0.5, 0.25]),), (_t([-1, 0]),))


def read_after_a_break_that_left_it_unbound(x):
    for v in x:
        if v > 0:
            y = v * 2
        else:
            break
    return y


def test_a_read_python_would_not_make_raises_when_the_program_runs():
    static = like_eager(read_after_a_break_that_left_it_unbound, (_t([1, 2, -1]),))
    with pytest.raises(UnboundLocalError, match="'y'"):
        static(_t([-1, 2, 3]))


# --- a generator expression consumed at once inside a tensor loop -----------------------------------

_STAGES = [[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]]


def rk4(y, t_end):
    t = t_end * 0
    h = 0.1
    while t < t_end:
        ks = []
        for i in range(4):
            yi = y + h * sum(a * k for a, k in zip(_STAGES[i], ks))
            ks.append(-yi)
        y = y + h * (ks[0] + 2 * ks[1] + 2 * ks[2] + ks[3]) / 6
        t = t + h
    return y


def lazy_generator_in_tensor_while(x):
    while x.sum() < 10:
        parts = [x, x * 2]
        total = max(p.sum() for p in parts) + min((p.max() for p in parts))
        x = x + total
    return x


def generator_kept_in_a_name_inside_a_tensor_while(y, t_end):
    t = t_end * 0
    while t < t_end:
        ks = [y, y * 2]
        halves = (k * 0.5 for k in ks)           # consumed on the next line, through a name
        y = y + rt.stack(list(halves)).sum(0)
        t = t + 1
    return y


def test_a_generator_expression_consumed_at_once_inside_a_tensor_while():
    like_eager(generator_kept_in_a_name_inside_a_tensor_while, (_t([1, 2]), _t(2)), (_t([-1, 3]), _t(0)))
    like_eager(rk4, (_t([1, 2]), _t(0.35)), (_t([3, -1]), _t(0.05)), (_t([1, 2]), _t(0.55)))
    like_eager(lazy_generator_in_tensor_while, (_t([1, 2]),), (_t([0.1, 0.2]),))


# --- lists read and set at a tensor index -----------------------------------------------------------

def tree_sum(x, left, right, is_leaf):
    hs = []                                  # grows in the tensor loop, read at tensor indices (Tree-LSTM)
    n = 0
    while n < x.shape[0]:
        if is_leaf[n]:
            h = x[n]
        else:
            h = hs[left[n]] * 2 + hs[right[n]]
        hs.append(h)
        n += 1
    return hs[-1]


def _tree(leaf, left, right):
    return (_t(np.arange(10).reshape(5, 2)), _t(left, np.int64), _t(right, np.int64), _t(leaf, bool))


def test_a_list_grown_in_a_tensor_loop_read_at_tensor_indices_inside_a_tensor_if():
    like_eager(tree_sum, _tree([1, 1, 0, 1, 0], [0, 0, 0, 0, 2], [0, 0, 1, 0, 3]),
               _tree([1, 0, 0, 0, 0], [0, 0, 1, 2, 3], [0, 0, 0, 1, 0]))


def first_read_before_any_append(x):
    hs = []
    n = 0
    while n < x.shape[0]:
        if x[n] > 0:
            h = x[n]
        else:
            h = hs[n - 1] + 1
        hs.append(h)
        n += 1
    return hs[-1]


def test_an_empty_list_read_at_a_tensor_index_raises_index_error_when_that_branch_runs():
    static = like_eager(first_read_before_any_append, (_t([1, -2, 3]),), (_t([4, -1, -1]),))
    with pytest.raises(IndexError, match="list index out of range"):
        static(_t([-1, 2, 3]))


def python_numbers_set_at_a_tensor_index(x):
    flags = [0, 0, 0]
    i = rt.argmax(x)
    flags[i] = 1
    flags[i - 1] += 2
    return x * flags[0] + flags[1] * 10 + flags[2] * 100


def test_a_list_of_python_numbers_set_at_a_tensor_index():
    like_eager(python_numbers_set_at_a_tensor_index, (_t([1, 5, 2]),), (_t([9, 5, 2]),), (_t([1, 5, 7]),))


# --- builtins over tensor rows with Python and NumPy iterables --------------------------------------

def zip_of_rows_enumerate_and_range(x, y):
    s = x[0] * 0
    for a, (j, b), k in zip(x, enumerate(y), range(100)):
        s = s + a * b + j * k
    return s


def zip_of_ndarray_and_rows(x):
    s = 0
    for a, b in zip(np.ones((3, 2), np.float32) * 2, x):
        s = s + a * b
    return s


def sum_with_a_list_start(x):
    return sum(x, [5, 6]) + sum([x[0], x[1]], [1.5, 2])


def test_zip_of_rows_with_enumerate_range_and_ndarray():
    rows = rt.InputSpec([None, 2], "float32")
    like_eager(zip_of_rows_enumerate_and_range, (_t([[1, 2], [3, 4]]), _t([[5, 6], [7, 8]])),
               (_t([[1, 2], [3, 4], [0, 1]]), _t([[5, 6], [7, 8], [2, 2]])))
    static = to_static(zip_of_rows_enumerate_and_range, input_spec=[rows, rows])
    x, y = _t([[1, 2], [3, 4], [0, 1]]), _t([[5, 6], [7, 8], [2, 2]])
    np.testing.assert_allclose(static(x, y).numpy(), zip_of_rows_enumerate_and_range(x, y).numpy())
    like_eager(zip_of_ndarray_and_rows, (_t([[1, 2], [3, 4], [0, 1]]),), (_t([[1, 0], [0, 4], [5, 1]]),))


def test_sum_with_a_list_start():
    like_eager(sum_with_a_list_start, (_t([[1, 2], [3, 4]]),), (_t([[0, -2], [3, 9], [1, 1]]),))


# --- attributes set by a method called under tensor control flow: one rule for every kind of call -----

class _Counter:
    def __init__(self):
        self.count = 0
        self.last = rt.zeros((2,))

    def bump(self, x):
        self.count += 1
        self.last = x * 2
        return x + 1


class _OwnCall(_Counter):
    def __call__(self, x):
        return self.bump(x)


class _Base:
    def __call__(self, x):
        return self.forward(x)


class _InheritedCall(_Base, _Counter):
    def forward(self, x):
        return self.bump(x)


class _Layer(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.count = 0
        self.last = rt.zeros((2,))

    def forward(self, x):
        self.count += 1
        self.last = x * 2
        return x + 1


def call_under_tensor_if(m, x):
    if x.sum() > 0:
        y = m(x)
    else:
        y = x - 1
    return y + m.count + m.last


def call_in_tensor_while(m, x):
    while x.sum() < 20:
        x = m(x)
    return x + m.count + m.last


@pytest.mark.parametrize("cls", [_OwnCall, _InheritedCall, _Layer])
@pytest.mark.parametrize("fn", [call_under_tensor_if, call_in_tensor_while])
def test_an_attribute_set_by_a_method_called_under_tensor_control_flow(cls, fn):
    eager, static_object = cls(), cls()
    static = to_static(fn)
    for x in (_t([1, 2]), _t([-1, -2]), _t([3, 1])):
        want, got = fn(eager, x), static(static_object, x)
        np.testing.assert_allclose(got.numpy(), want.numpy())
        assert int(static_object.count) == eager.count
        np.testing.assert_allclose(np.asarray(static_object.last.numpy()), eager.last.numpy())


def nested_item_through_a_tuple(x):
    pair = (x * 1, [x * 2])
    pair[0][0] = 5
    pair[1][0][1] = 7
    return pair[0] + pair[1][0]


def writes_through_varargs(*xs):
    xs[0][0] = 3                 # a wrapper's *args tuple only passes its tensors on
    return xs[0] + xs[1]


def test_nested_item_assignment_through_a_tuple_and_varargs():
    like_eager(nested_item_through_a_tuple, (_t([1, 2]),), (_t([-1, 4]),))
    like_eager(lambda x, y: writes_through_varargs(x * 1, y), (_t([1, 2]), _t([3, 4])))


# --- a list appended to over a tensor's rows: a tensor array in a while op, whatever the row count ------

def doubled_rows(x):
    outs = []
    for row in x:
        outs.append(row * 2)
    return rt.stack(outs)


def rows_used_as_a_python_list_afterwards(x):
    outs = []
    for row in x:
        outs.append(row * 2)
        outs.append(row + 1)
    total = 0
    for o in outs:               # total changes rank: this loop unrolls over the known length
        total = total + o
    return [o * 2 for o in outs][-1] + total + len(outs) + outs[-3]


def rows_appended_under_a_tensor_if(x):
    kept = []
    for row in x:
        if row.sum() > 0:
            kept.append(row)
    return rt.stack(kept).sum(0) + len(kept) if len(kept) else x[0] * 0


def test_rows_appended_to_a_list_are_a_while_op_whatever_the_row_count():
    static = to_static(doubled_rows)
    sizes = set()
    for rows in (3, 50, 400):
        x = _t(np.arange(rows * 2).reshape(rows, 2))
        np.testing.assert_allclose(static(x).numpy(), doubled_rows(x).numpy())
        program = static.get_program(x)
        assert "while" in {op.type for op in program.ops()}
        sizes.add(sum(1 for _ in program.ops()))
    assert len(sizes) == 1, sizes          # the Program does not grow with the data
    like_eager(rows_used_as_a_python_list_afterwards, (_t(np.arange(8).reshape(4, 2)),),
               (_t(np.ones((4, 2))),))
    like_eager(rows_appended_under_a_tensor_if, (_t([[1, 2], [-3, 1], [2, 2]]),), (_t([[-1, 0], [0, 0], [1, -2]]),),
               (_t([[1, 0], [-3, 1], [5, 2]]),))


def alias_of_a_tensor_array_item(x):
    hs = []
    for row in x:
        hs.append(row * 1)
    h = hs[0]
    h[0] = 9
    return rt.stack(hs)


def nested_write_into_a_tensor_array_item(x):
    hs = []
    for row in x:
        hs.append(row * 1)
    hs[0][0] = 9
    hs[-1][1] += 1
    return rt.stack(hs)


def test_writes_into_items_of_a_list_grown_in_a_tensor_loop():
    like_eager(nested_write_into_a_tensor_array_item, (_t([[1, 2], [3, 4]]),), (_t([[5, 6], [7, 8], [0, 0]]),))
    with pytest.raises(TypeError, match=r"(?s)assign through the list.*line \d+"):
        to_static(alias_of_a_tensor_array_item)(_t([[1, 2], [3, 4]]))


class _Outer(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.inner = _Layer()          # a sub-layer
        self.helper = _OwnCall()       # a plain object held in an attribute

    def forward(self, x):
        if x.sum() > 0:
            x = self.inner(x) + self.helper(x)
        return x + self.inner.count * 10 + self.helper.count * 100


def test_an_attribute_of_a_sub_layer_set_under_a_tensor_if():
    eager, static_object = _Outer(), _Outer()
    static = to_static(lambda m, x: m(x))
    for x in (_t([1, 2]), _t([-1, -2]), _t([3, 1])):
        np.testing.assert_allclose(static(static_object, x).numpy(), eager(x).numpy())
        assert (int(static_object.inner.count), int(static_object.helper.count)) == \
            (eager.inner.count, eager.helper.count)


def tree_sum_with_a_conditional_expression(x, left, right, is_leaf):
    hs = []
    n = 0
    while n < x.shape[0]:
        hs.append(x[n] if is_leaf[n] else hs[left[n]] - hs[right[n]])
        n += 1
    return hs[-1]


def test_a_list_grown_in_a_tensor_loop_read_inside_a_conditional_expression():
    like_eager(tree_sum_with_a_conditional_expression, _tree([1, 1, 0, 1, 0], [0, 0, 0, 0, 2], [0, 0, 1, 0, 3]),
               _tree([1, 0, 0, 0, 0], [0, 0, 1, 2, 3], [0, 0, 0, 1, 0]))


def item_set_after_append(x):
    outs = []
    for row in x:
        outs.append(row * 2)
        if row.sum() > 0:
            outs[-1] = outs[-1] + 1      # a gradient cannot replay this on a tensor array: the loop unrolls
    return rt.stack(outs).sum()


def test_a_loop_that_sets_an_appended_item_keeps_its_gradient():
    x = _t([[1, 2], [-3, 1], [0.5, -2]])
    like_eager(item_set_after_append, (x,))
    got = rt.grad(to_static(item_set_after_append))(x)
    np.testing.assert_allclose(got.numpy(), rt.grad(item_set_after_append)(x).numpy())
