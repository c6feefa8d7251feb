"""Functions written once against `xp`: run with xp = numpy they are the oracle,
converted with xp = runtime they are the system under test.

Each case names its inputs and which graph ops its Program must (or must not) hold.
"""
import numpy as np

import runtime as xp

CASES = []


def case(*shapes, ops=(), no_ops=(), dtype="float32", ints=False, scalars=(), positive=False, tag=""):
    """Register fn with input shapes, the op types its Program must hold and must not hold."""
    def wrap(fn):
        CASES.append(dict(fn=fn, shapes=shapes, ops=set(ops), no_ops=set(no_ops), dtype=dtype, ints=ints,
                          scalars=scalars, positive=positive, tag=tag))
        return fn
    return wrap


# --- if / elif / else ---------------------------------------------------------------------

@case((4, 3), ops={"cond"}, tag="ifelse")
def if_else_tensor(x):
    if x.mean() > 0:
        y = x * 2
    else:
        y = x - 1
    return y


@case((4, 3), ops={"cond"}, tag="ifelse")
def if_without_else(x):
    y = x + 1
    if x.sum() > 0:
        y = y * 3
    return y


@case((5,), ops={"cond"}, tag="ifelse")
def elif_chain(x):
    s = x.sum()
    if s > 1:
        y = x * 1
    elif s > 0:
        y = x * 2
    elif s > -1:
        y = x * 3
    else:
        y = x * 4
    return y


@case((3, 3), ops={"cond"}, tag="ifelse")
def nested_if(x):
    if x.max() > 0:
        if x.min() < 0:
            y = x - x.min()
        else:
            y = x
        z = y * 2
    else:
        z = -x
    return z


@case((4,), no_ops={"cond", "while"}, scalars=(True,), tag="ifelse")
def if_python_flag(x, flag):
    if flag:
        x = x + 1
    else:
        x = x - 1
    return x


@case((4,), ops={"cond"}, tag="expressions")
def ternary(x):
    return x * 2 if x.sum() > 0 else x / 2


@case((4,), ops={"cond"}, tag="expressions")
def and_or_not(x):
    if x.sum() > 0 and x.max() < 5 or not x.min() > -5:
        y = x + 10
    else:
        y = x - 10
    return y


@case((4,), ops={"cond"}, tag="expressions")
def chained_compare(x):
    if -1 < x.mean() < 1:
        return x * 0
    return x


@case((4,), ops={"cond"}, tag="expressions")
def mixed_python_tensor_and(x):
    n = 3
    if n > 2 and x.sum() > 0:
        return x + n
    return x - n


@case((4,), ops={"cond"}, tag="ifelse")
def tuple_outputs(x):
    if x.sum() > 0:
        a, b = x + 1, x * 2
    else:
        a, b = x - 1, x / 2
    return a, b


@case((4,), ops={"cond"}, tag="ifelse")
def branch_python_number(x):
    if x.sum() > 0:
        k = 2
    else:
        k = 3
    return x * k


# --- while ------------------------------------------------------------------------------

@case((2, 3), ops={"while"}, positive=True, tag="loops")
def while_tensor(x):
    h = x
    i = 0
    while h.sum() < 100:
        h = h * 2
        i += 1
    return h, i


@case((2, 3), ops={"while"}, tag="loops")
def while_counter_times_tensor(x):
    i = 0
    acc = x * 0
    while i < x.shape[0] * 3 and acc.sum() > -1e9:
        acc = acc + x * i
        i = i + 1
    return acc


@case((3,), no_ops={"while"}, tag="loops")
def while_python(x):
    i = 0
    while i < 3:
        x = x + i
        i += 1
    return x


@case((3,), ops={"while", "cond"}, positive=True, tag="loops")
def while_with_if(x):
    s = x.sum() * 0
    while s < 20:
        if s > 5:
            s = s + 3
        else:
            s = s + 1
    return s


@case((3,), ops={"while"}, positive=True, tag="jumps")
def while_break(x):
    i = 0
    while i < 100:
        x = x * 1.5
        if x.sum() > 50:
            break
        i += 1
    return x, i


@case((3,), ops={"cond"}, no_ops={"while"}, positive=True, tag="jumps")
def while_continue(x):
    i = 0
    total = x * 0
    while i < 10:
        i += 1
        if (x * i).sum() < 10:
            continue
        total = total + x
    return total


@case((3,), ops={"while"}, positive=True, tag="jumps")
def while_else(x):
    i = 0
    while x.sum() < 30:
        x = x * 2
        i += 1
        if i > 50:
            break
    else:
        x = x + 1000
    return x


@case((3,), ops={"while"}, positive=True, tag="loops")
def nested_while(x):
    i = 0
    total = x.sum() * 0
    while total < 50:
        j = 0
        while j < 3:
            total = total + x.sum()
            j += 1
        i += 1
    return total, i


@case((3,), ops={"while"}, positive=True, tag="returns")
def return_in_while(x):
    while x.sum() < 1000:
        x = x * 2
        if x.max() > 20:
            return x - 1
    return x


@case((4,), ops={"cond"}, tag="returns")
def early_return_if(x):
    if x.sum() > 0:
        return x * 10
    y = x - 1
    return y


@case((4,), ops={"cond"}, tag="returns")
def several_returns(x):
    s = x.sum()
    if s > 2:
        return x + 2
    if s > 0:
        return x + 1
    if s > -2:
        return x - 1
    return x - 2


@case((3,), ops={"while"}, positive=True, tag="loops")
def var_created_in_loop(x):
    i = 0
    while x.sum() < 10:
        last = x
        x = x * 2
        i += 1
    return last if i > 0 else x


# --- for ----------------------------------------------------------------------------------

@case((3,), no_ops={"while"}, tag="loops")
def for_python_range(x):
    for i in range(4):
        x = x + i
    return x


@case((5, 3), ops={"while"}, tag="loops")
def for_over_tensor_rows(x):
    total = x[0] * 0
    for row in x:
        total = total + row * 2
    return total


@case((4, 2), ops={"while"}, tag="loops")
def for_enumerate_tensor(x):
    acc = x[0] * 0
    for i, row in enumerate(x):
        acc = acc + row * i
    return acc


@case((4, 2), (4, 2), ops={"while"}, tag="loops")
def for_zip_tensors(x, y):
    acc = x[0] * 0
    for a, b in zip(x, y):
        acc = acc + a * b
    return acc


@case((3,), no_ops={"while"}, tag="loops")
def for_python_list(x):
    for k in [1.0, 2.0, 3.0]:
        x = x * k
    return x


@case((3,), no_ops={"while"}, tag="loops")
def for_python_dict(x):
    weights = {"a": 1.0, "b": 2.0}
    for key in weights:
        x = x + weights[key]
    for key, w in weights.items():
        x = x * w
    return x


@case((6,), no_ops={"while"}, tag="loops")
def for_range_of_len(x):
    total = x[0] * 0
    for i in range(len(x)):
        total = total + x[i] * i
    return total


@case((4,), ops={"while"}, tag="jumps")
def for_break(x):
    total = x[0] * 0
    for v in x:
        if total > 2:
            break
        total = total + v
    return total


@case((4,), ops={"while"}, tag="jumps")
def for_continue(x):
    total = x[0] * 0
    for v in x:
        if v < 0:
            continue
        total = total + v
    return total


@case((4,), ops={"while"}, tag="jumps")
def for_else(x):
    found = x[0] * 0
    for v in x:
        if v > 100:
            found = v
            break
    else:
        found = found - 1
    return found


@case((3,), ops={"cond"}, tag="jumps")
def for_python_range_tensor_break(x):
    for i in range(5):
        if x.sum() > 10:
            break
        x = x * 2
    return x


# --- lists, subscripts, builtins ---------------------------------------------------------

@case((5, 2), no_ops={"while"}, tag="lists")    # a static first dim and a growing list: unrolls (DESIGN §3)
def append_in_tensor_loop(x):
    outs = []
    for row in x:
        outs.append(row * 2)
    return xp.stack(outs)


@case((3,), no_ops={"while"}, tag="lists")
def append_python_loop(x):
    outs = []
    for i in range(3):
        outs.append(x * i)
    return xp.stack(outs)


@case((4, 3), no_ops={"cond", "while"}, tag="lists")
def subscript_assign(x):
    x[0] = x[1] * 2
    x[:, 1] = 0
    x[2] += 1
    return x


@case((4, 3), no_ops={"cond", "while"}, tag="calls")
def len_and_shape(x):
    n = len(x)
    rows, cols = x.shape
    return x * n + rows * cols


@case((6, 4), tag="lists")
def aug_assign_and_unpacking(x):
    a, (b, c) = x[0], (x[1], x[2])
    a += b
    a *= c
    a -= 1
    a /= 2
    return a


@case((3,), tag="calls")
def nested_function_and_closure(x):
    scale = 3.0

    def helper(v):
        if v.sum() > 0:
            return v * scale
        return v / scale
    return helper(x) + helper(-x)


@case((3,), tag="calls")
def lambda_call(x):
    g = lambda v: v * 2 if v.sum() > 0 else v * 3  # noqa: E731
    return g(x)


def _user_helper(v, k=2):
    while v.sum() < 10:
        v = v + k
    return v


@case((3,), ops={"while"}, tag="calls")
def calls_user_function(x):
    return _user_helper(x, k=3) + _user_helper(x)


@case((3,), tag="calls")
def default_and_kwargs(x, scale=2.0, *args, **kwargs):
    if x.sum() > 0:
        return x * scale
    return x


@case((4,), ops={"cond"}, tag="returns")
def return_none_or_tuple(x):
    if x.sum() > 0:
        out = (x, x + 1)
    else:
        out = (x - 1, x)
    return out


@case((3, 4), no_ops={"while", "cond"}, tag="calls")
def numpy_constant_at_trace_time(x):
    w = np.ones((4,), np.float32) * 2
    return x * w
