"""Ports in the style of TensorFlow AutoGraph's own tests (loop_basic, cond_basic, loop_control_flow,
nested_control_flow, early_return, composite_names, basic_list, call_to_user_function, loop_with_variable_type).

Oracle: the same function run eagerly; see peers.like_eager (three calls: same input, another, same again).
"""
import numpy as np
import pytest

import runtime as rt

from .peers import case_id, like_eager

f32 = np.float32


def s(v, dtype=f32):
    return np.asarray(v, dtype)


POS, NEG, ZERO = (s(3.0),), (s(-2.0),), (s(0.0),)
VEC = (s([1.0, -2.0, 3.0, 4.0]),)
VEC2 = (s([-1.0, 5.0, 0.5, -4.0]),)
I5, I0, I3 = (s(5, np.int32),), (s(0, np.int32),), (s(3, np.int32),)


# --- cond_basic ------------------------------------------------------------------------------------

def if_no_vars(x):
    v = x * 0
    if x > 0:
        v = v + 1
    return v


def if_else_one_var(x):
    if x > 0:
        y = x * 2
    else:
        y = -x
    return y


def if_else_two_vars(x):
    a, b = x, x
    if x > 0:
        a = a + 1
        b = b * 3
    else:
        a = a - 1
    return a, b


def if_elif_else(x):
    if x > 2:
        y = 1.0
    elif x > 0:
        y = 2.0
    else:
        y = 3.0
    return x * y


def if_nested(x):
    if x > 0:
        if x > 2:
            y = x * 10
        else:
            y = x * 20
    else:
        if x < -1:
            y = x - 100
        else:
            y = x + 100
    return y


def if_python_and_tensor(x, flag):
    y = x
    if flag and x > 0:
        y = y + 1
    if not flag or x < 0:
        y = y - 1
    return y


def ternary_tensor(x):
    return x * 2 if x > 0 else x / 2


def ternary_nested(x):
    return 1.0 if x > 2 else (2.0 if x > 0 else 3.0)


def cond_on_reduction(x):
    if rt.sum(x) > 0:
        x = x - rt.mean(x)
    else:
        x = x + 1
    return x


def cond_with_python_number(x):
    n = 0
    if x > 0:
        n = 1
    return n + x


def cond_result_dtype_int(x):
    if x > 0:
        k = 3
    else:
        k = -7
    return k // 2, k % 2


def cond_or_short_circuit(x):
    if x > 0 or x < -5:
        return x * 2
    return x


def cond_and_chain(x):
    y = x
    if x > -10 and x < 10 and x != 0:
        y = y * 3
    return y


def compare_chain(x):
    if -1 < x < 4:
        return x + 10
    return x - 10


def cond_not_tensor(x):
    y = x
    if not x > 0:
        y = -x
    return y


# --- loop_basic --------------------------------------------------------------------------------------

def while_tensor_counter(n):
    i = 0
    s_ = 0
    while i < n:
        s_ = s_ + i
        i += 1
    return s_, i


def while_tensor_accumulate(x):
    while rt.sum(x) < 100:
        x = x * 2 + 1
    return x


def for_range_python(x):
    for i in range(4):
        x = x + i
    return x


def for_range_tensor(n):
    acc = 0.0
    for i in range(n):
        acc = acc + i * 0.5
    return acc


def for_range_tensor_start_step(n):
    total = 0
    for i in range(1, n, 2):
        total += i
    return total


def for_over_tensor_rows(x):
    s_ = rt.zeros(x.shape[1:])
    for row in x:
        s_ = s_ + row * row
    return s_


def for_over_tensor_elements(x):
    m = x[0]
    for v in x:
        if v > m:
            m = v
    return m


def for_over_python_list(x):
    for w in [1.0, 2.0, 3.0]:
        x = x * w
    return x


def for_enumerate_tensor(x):
    acc = x[0] * 0
    for i, v in enumerate(x):
        acc = acc + i * v
    return acc


def for_zip_tensors(x):
    y = x * 2
    acc = x[0] * 0
    for a, b in zip(x, y):
        acc = acc + a * b
    return acc


def for_zip_list_and_tensor(x):
    acc = x[0] * 0
    for w, v in zip([1.0, -1.0, 2.0, 0.5], x):
        acc = acc + w * v
    return acc


def for_dict_items(x):
    d = {"a": 1.0, "b": 2.0}
    for k, v in d.items():
        if k == "a":
            x = x + v
        else:
            x = x * v
    return x


def while_loop_variable_type(n):
    # a Python int that becomes a tensor inside the loop
    i = 0
    x = 1
    while i < n:
        x = x * 2
        i = i + 1
    return x


def nested_loops(n):
    s_ = 0
    for i in range(n):
        for j in range(i):
            s_ = s_ + j
    return s_


def while_else_no_break(n):
    i = 0
    while i < n:
        i += 1
    else:
        i = i + 100
    return i


def while_else_break(n):
    i = 0
    while i < 10:
        if i == n:
            break
        i += 1
    else:
        i = -1
    return i


def for_else_break(x):
    found = -1
    for i in range(4):
        if x[i] > 2:
            found = i
            break
    else:
        found = 99
    return found


def for_else_tensor_range(n):
    r = 0
    for i in range(n):
        r = r + i
        if r > 5:
            break
    else:
        r = r * 10
    return r


# --- loop_control_flow -------------------------------------------------------------------------------

def break_in_while(x):
    i = 0
    while i < 10:
        x = x + 1
        if x > 5:
            break
        i += 1
    return x, i


def continue_in_for(x):
    acc = x[0] * 0
    for v in x:
        if v < 0:
            continue
        acc = acc + v
    return acc


def break_and_continue(n):
    s_ = 0
    for i in range(10):
        if i % 2 == 0:
            continue
        if i > n:
            break
        s_ = s_ + i
    return s_


def break_in_nested_inner(n):
    s_ = 0
    for i in range(4):
        for j in range(4):
            if j > i or i + j > n:
                break
            s_ = s_ + 1
    return s_


def continue_in_while_tensor(n):
    i = 0
    s_ = 0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        s_ += i
    return s_


def break_in_tensor_rows(x):
    acc = x[0] * 0
    for v in x:
        if v > 2:
            break
        acc = acc + v
    return acc


# --- early_return --------------------------------------------------------------------------------------

def return_in_if(x):
    if x > 0:
        return x * 2
    return x - 1


def return_in_if_else(x):
    if x > 0:
        return 1.0
    else:
        return -1.0


def return_in_loop(n):
    for i in range(10):
        if i == n:
            return i * 100
    return -1


def return_in_while(x):
    i = 0
    while i < 5:
        x = x + 1
        if x > 4:
            return x
        i += 1
    return x * 0


def return_in_nested_loops(n):
    for i in range(5):
        for j in range(5):
            if i * j == n:
                return i, j
    return -1, -1


def return_none_or_value(x):
    if x > 0:
        return x
    return None


def return_early_then_python(x, k):
    if k > 2:
        return x
    if x > 0:
        return x + k
    return x - k


def complicated_unbound(x):
    if x:
        if x == 2:
            return 1
        else:
            a = 2
    else:
        a = 4
    return a + 1


# --- composite names, attributes --------------------------------------------------------------------

class Holder:
    def __init__(self, v):
        self.v = v


def attribute_in_cond(x):
    h = Holder(x)
    if x > 0:
        h.v = h.v * 10
    return h.v


def attribute_in_loop(n):
    h = Holder(0)
    i = 0
    while i < n:
        h.v = h.v + i
        i += 1
    return h.v


def subscript_in_cond(x):
    d = {"a": x, "b": x * 0}
    if x > 0:
        d["b"] = x + 1
    return d["a"] + d["b"]


def list_item_in_loop(n):
    lst = [0, 0]
    i = 0
    while i < n:
        lst[0] = lst[0] + 1
        lst[1] = lst[1] + i
        i += 1
    return lst[0], lst[1]


def augassign_on_item(x):
    d = {"s": x * 0}
    for v in x:
        d["s"] += v
    return d["s"]


def nested_attribute(x):
    h = Holder(Holder(x))
    if x > 1:
        h.v.v = h.v.v - 1
    return h.v.v


# --- basic_list ------------------------------------------------------------------------------------

def list_append_in_tensor_loop(n):
    xs = []
    i = 0
    while i < n:
        xs.append(i * 2.0)
        i += 1
    return xs, rt.stack(xs) if xs else rt.zeros([0], dtype="float64")


def list_append_rows_then_stack(x):
    out = []
    for row in x:
        out.append(row + 1)
    return rt.stack(out)


def list_pop_python(x):
    xs = [x, x * 2, x * 3]
    last = xs.pop()
    return last + xs[0] + len(xs)


def list_of_python_numbers_in_cond(x):
    ys = [1, 2, 3]
    if x > 0:
        ys = [4, 5, 6]
    return x * ys[1]


# --- call_to_user_function --------------------------------------------------------------------------

def _helper_abs(v):
    if v < 0:
        return -v
    return v


def _helper_default(v, scale=2.0, shift=0.0):
    return v * scale + shift


def call_user_fn(x):
    return _helper_abs(x) + 1


def call_user_fn_kwargs(x):
    return _helper_default(x, shift=1.0) + _helper_default(x, 3.0)


def call_lambda(x):
    f = lambda v: v * v if v > 0 else -v  # noqa: E731
    return f(x)


def call_nested_function(x):
    def inner(v):
        while v < 10:
            v = v * 2
        return v
    return inner(x) + inner(x + 1)


def call_in_loop(x):
    acc = x * 0
    for i in range(3):
        acc = acc + _helper_abs(x - i)
    return acc


def call_star_args(x):
    def total(*vs):
        s_ = 0
        for v in vs:
            s_ = s_ + v
        return s_
    return total(x, x * 2, 3)


def call_kwargs_dict(x):
    def f(**kw):
        return kw["a"] * kw["b"]
    return f(a=x, b=x + 1)


def recursion_static_depth(x):
    def fact(k):
        if k <= 1:
            return 1
        return k * fact(k - 1)
    return x * fact(5)


def recursion_tensor_arg_static_depth(x):
    def down(v, depth):
        if depth == 0:
            return v
        if v > 0:
            return down(v - 1, depth - 1)
        return down(v + 1, depth - 1)
    return down(x, 3)


def method_call(x):
    class Acc:
        def __init__(self):
            self.total = 0.0

        def add(self, v):
            if v > 0:
                self.total = self.total + v
            return self

    a = Acc()
    a.add(x).add(x - 1).add(-x)
    return a.total


CASES = [
    (if_no_vars, POS, NEG), (if_else_one_var, POS, NEG), (if_else_two_vars, POS, NEG),
    (if_elif_else, POS, (s(1.0),), NEG), (if_nested, POS, (s(1.0),), (s(-3.0),)),
    (if_python_and_tensor, (s(1.0), True), (s(-1.0), False)), (ternary_tensor, POS, NEG),
    (ternary_nested, POS, (s(1.0),)), (cond_on_reduction, VEC, VEC2), (cond_with_python_number, POS, NEG),
    (cond_result_dtype_int, POS, NEG), (cond_or_short_circuit, POS, (s(-7.0),)), (cond_and_chain, POS, ZERO),
    (compare_chain, POS, (s(5.0),)), (cond_not_tensor, POS, NEG),
    (while_tensor_counter, I5, I0), (while_tensor_accumulate, VEC, VEC2), (for_range_python, VEC),
    (for_range_tensor, I5, I0), (for_range_tensor_start_step, I5, (s(8, np.int32),)),
    (for_over_tensor_rows, (s(np.arange(6).reshape(3, 2)),), (s(-np.arange(6).reshape(3, 2)),)),
    (for_over_tensor_elements, VEC, VEC2), (for_over_python_list, VEC), (for_enumerate_tensor, VEC, VEC2),
    (for_zip_tensors, VEC, VEC2), (for_zip_list_and_tensor, VEC, VEC2), (for_dict_items, VEC),
    (while_loop_variable_type, I5, I0), (nested_loops, I5, I3), (while_else_no_break, I5, I0),
    (while_else_break, I3, (s(20, np.int32),)), (for_else_break, VEC, VEC2), (for_else_tensor_range, I5, I3),
    (break_in_while, POS, NEG), (continue_in_for, VEC, VEC2), (break_and_continue, I5, I0),
    (break_in_nested_inner, I3, I0), (continue_in_while_tensor, I5, (s(9, np.int32),)),
    (break_in_tensor_rows, VEC, VEC2), (return_in_if, POS, NEG), (return_in_if_else, POS, NEG),
    (return_in_loop, I3, (s(20, np.int32),)), (return_in_while, POS, NEG),
    (return_in_nested_loops, I3, (s(7, np.int32),)),
    (return_early_then_python, (s(1.0), 1), (s(-1.0), 1)), (return_early_then_python, (s(1.0), 5)),
    (complicated_unbound, (s(2, np.int32),), (s(1, np.int32),), (s(0, np.int32),)),
    (attribute_in_cond, POS, NEG), (attribute_in_loop, I5, I0), (subscript_in_cond, POS, NEG),
    (list_item_in_loop, I5, I0), (augassign_on_item, VEC, VEC2), (nested_attribute, POS, NEG),
    (list_append_in_tensor_loop, I5, I3), (list_append_rows_then_stack, (s(np.arange(6).reshape(3, 2)),)),
    (list_pop_python, POS, NEG), (list_of_python_numbers_in_cond, POS, NEG),
    (call_user_fn, POS, NEG), (call_user_fn_kwargs, POS, NEG), (call_lambda, POS, NEG),
    (call_nested_function, POS, (s(0.5),)), (call_in_loop, POS, NEG), (call_star_args, POS, NEG),
    (call_kwargs_dict, POS, NEG), (recursion_static_depth, POS), (recursion_tensor_arg_static_depth, POS, NEG),
    (method_call, POS, NEG),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_like_eager(case):
    like_eager(case[0], *case[1:])


def test_none_on_one_path_of_a_tensor_if_is_an_error_at_the_users_line():
    # outside the contract (only tensors and numbers can differ between branches): a clear error at the if
    from runtime.errors import ControlFlowError
    from transpiler import to_static
    with pytest.raises(ControlFlowError, match="NoneType None in the false branch") as info:
        to_static(return_none_or_value)(rt.tensor(s(3.0)))
    assert "test_peer_ports_tf.py" in str(info.value) and "if x > 0:" in str(info.value)
    assert return_none_or_value(rt.tensor(s(-3.0))) is None


def local_class_with_super(x):
    class Base:
        def __init__(self, k):
            self.k = k

        def f(self, v):
            return v * self.k

    class Child(Base):
        def f(self, v):
            if v > 0:
                return super().f(v) + 1
            return super().f(-v)

    return Child(3).f(x)


def test_a_class_defined_in_the_function_has_converted_methods():
    like_eager(local_class_with_super, POS, NEG)
