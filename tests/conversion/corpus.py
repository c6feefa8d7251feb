"""The corpus: functions written once against `rt`. Run with rt = numpy they are the
oracle, converted with rt = runtime they are the system under test.

Each case names its inputs, which graph ops its Program must (or must not) hold,
and its tags: the suite that runs it (`ifelse`, `loops`, ...) and `golden` where
its converted source and Program text are pinned too (tests/golden). A `None`
dimension is dynamic in the golden trace and of size 5 in the oracle runs.
"""
import numpy as np

import runtime as rt

CASES = []


def case(*shapes, ops=(), no_ops=(), dtype="float32", scalars=(), positive=False, tags=()):
    """Register fn with input shapes, the op types its Program must hold and must not hold, and its tags."""
    def wrap(fn):
        CASES.append(dict(fn=fn, shapes=shapes, ops=set(ops), no_ops=set(no_ops), dtype=dtype,
                          scalars=scalars, positive=positive, tags=frozenset(tags)))
        return fn
    return wrap


# --- if / elif / else ---------------------------------------------------------------------

@case((None, 4), ops={"cond"}, tags={"ifelse", "golden"})
def if_else(x):
    if x.mean() > 0:
        y = x * 2
    else:
        y = x - 1
    return y


@case((4,), ops={"cond"}, tags={"ifelse", "golden"})
def if_without_else(x):
    y = x + 1
    if x.sum() > 0:
        y = y * 3
    return y


@case((4,), ops={"cond"}, tags={"ifelse", "golden"})
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


@case((None, 3), ops={"cond"}, tags={"ifelse", "golden"})
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


@case((4,), no_ops={"cond", "while"}, scalars=(True,), tags={"ifelse", "golden"})
def if_python_flag(x, flag):
    if flag:
        x = x + 1
    else:
        x = x - 1
    return x


@case((4,), ops={"cond"}, tags={"expressions", "golden"})
def ternary(x):
    return x * 2 if x.sum() > 0 else x / 2


@case((4,), ops={"cond"}, tags={"expressions", "golden"})
def and_or_not(x):
    if x.sum() > 0 and x.max() < 5 or not x.min() > -5:
        y = x + 10
    else:
        y = x - 10
    return y


@case((4,), ops={"cond"}, tags={"expressions", "golden"})
def chained_compare(x):
    if -1 < x.mean() < 1:
        return x * 0
    return x


@case((4,), ops={"cond"}, tags={"expressions"})
def mixed_python_tensor_and(x):
    n = 3
    if n > 2 and x.sum() > 0:
        return x + n
    return x - n


@case((4,), ops={"cond"}, tags={"ifelse", "golden"})
def tuple_outputs(x):
    if x.sum() > 0:
        a, b = x + 1, x * 2
    else:
        a, b = x - 1, x / 2
    return a, b


@case((4,), ops={"cond"}, tags={"ifelse"})
def branch_python_number(x):
    if x.sum() > 0:
        k = 2
    else:
        k = 3
    return x * k


@case((4,), ops={"cond"}, tags={"ifelse", "golden"})
def undefined_in_one_branch(x):
    if x.sum() > 0:
        scratch = x * 2
        y = scratch + 1
    else:
        y = x
    return y


# --- while ------------------------------------------------------------------------------

@case((None, 3), ops={"while"}, tags={"loops", "golden"})
def while_tensor(x):
    h = rt.tanh(x)
    i = 0
    while rt.sum(h) < 100 and i < 10:
        h = h * 2
        i += 1
    return h, i


@case((2, 3), ops={"while"}, positive=True, tags={"loops"})
def while_tensor_unbounded(x):
    h = x
    i = 0
    while h.sum() < 100:
        h = h * 2
        i += 1
    return h, i


@case((2, 3), ops={"while"}, tags={"loops"})
def while_counter_times_tensor(x):
    i = 0
    acc = x * 0
    while i < x.shape[0] * 3 and acc.sum() > -1e9:
        acc = acc + x * i
        i = i + 1
    return acc


@case((3,), no_ops={"while"}, tags={"loops", "golden"})
def while_python(x):
    i = 0
    while i < 3:
        x = x + i
        i += 1
    return x


@case((3,), ops={"while", "cond"}, positive=True, tags={"loops"})
def while_with_if(x):
    s = x.sum() * 0
    while s < 20:
        if s > 5:
            s = s + 3
        else:
            s = s + 1
    return s


@case((3,), ops={"while"}, tags={"jumps", "golden"})
def while_break(x):
    i = 0
    while i < 8:
        x = x * 1.5
        if x.sum() > 50:
            break
        i += 1
    return x, i


@case((3,), ops={"cond"}, no_ops={"while"}, tags={"jumps", "golden"})
def while_continue(x):
    i = 0
    total = x * 0
    while i < 6:
        i += 1
        if (x * i).sum() < 0:
            continue
        total = total + x
    return total


@case((3,), ops={"while"}, tags={"jumps", "golden"})
def while_else(x):
    i = 0
    while x.sum() < 30 and i < 20:
        x = x + 1
        i += 1
        if x.max() > 10:
            break
    else:
        x = x + 1000
    return x


@case((3,), ops={"while"}, tags={"loops", "golden"})
def nested_while(x):
    i = 0
    total = x.sum() * 0
    while total < 50 and i < 5:
        j = 0
        while j < 3:
            total = total + x.sum()
            j += 1
        i += 1
    return total, i


@case((3,), ops={"while"}, positive=True, tags={"returns"})
def return_in_while(x):
    while x.sum() < 1000:
        x = x * 2
        if x.max() > 20:
            return x - 1
    return x


@case((3,), ops={"while"}, tags={"returns", "golden"})
def return_in_loop(x):
    i = 0
    while i < 10:
        x = x * 2
        if x.max() > 20:
            return x - 1
        i += 1
    return x


@case((4,), ops={"cond"}, tags={"returns", "golden"})
def early_return(x):
    if x.sum() > 0:
        return x * 10
    y = x - 1
    return y


@case((4,), ops={"cond"}, tags={"returns", "golden"})
def several_returns(x):
    s = x.sum()
    if s > 2:
        return x + 2
    if s > 0:
        return x + 1
    if s > -2:
        return x - 1
    return x - 2


@case((3,), ops={"while"}, tags={"loops", "golden"})
def var_created_in_loop(x):
    i = 0
    while x.sum() < 10 and i < 6:
        last = x
        x = x + 1
        i += 1
    return last


# --- for ----------------------------------------------------------------------------------

@case((None, 2), tags={"loops", "golden"})
def for_range_dynamic(x):
    total = x[0] * 0
    for i in range(x.shape[0]):
        total = total + x[i] * i
    return total


@case((3,), no_ops={"while"}, tags={"loops", "golden"})
def for_python_range(x):
    for i in range(4):
        x = x + i
    return x


@case((None, 3), ops={"while"}, tags={"loops", "golden"})
def for_over_tensor(x):
    total = x[0] * 0
    for row in x:
        total = total + row * 2
    return total


@case((4, 2), ops={"while"}, tags={"loops", "golden"})
def for_enumerate(x):
    acc = x[0] * 0
    for i, row in enumerate(x):
        acc = acc + row * i
    return acc


@case((4, 2), (4, 2), ops={"while"}, tags={"loops", "golden"})
def for_zip(x, y):
    acc = x[0] * 0
    for a, b in zip(x, y):
        acc = acc + a * b
    return acc


@case((3,), no_ops={"while"}, tags={"loops", "golden"})
def for_python_list(x):
    for k in [1.0, 2.0, 3.0]:
        x = x * k
    return x


@case((3,), no_ops={"while"}, tags={"loops"})
def for_python_dict(x):
    weights = {"a": 1.0, "b": 2.0}
    for key in weights:
        x = x + weights[key]
    for key, w in weights.items():
        x = x * w
    return x


@case((6,), no_ops={"while"}, tags={"loops"})
def for_range_of_len(x):
    total = x[0] * 0
    for i in range(len(x)):
        total = total + x[i] * i
    return total


@case((4,), ops={"while"}, tags={"jumps", "golden"})
def for_break(x):
    total = x[0] * 0
    for v in x:
        if total > 2:
            break
        total = total + v
    return total


@case((4,), ops={"while"}, tags={"jumps", "golden"})
def for_continue(x):
    total = x[0] * 0
    for v in x:
        if v < 0:
            continue
        total = total + v
    return total


@case((4,), ops={"while"}, tags={"jumps", "golden"})
def for_else(x):
    found = x[0] * 0
    for v in x:
        if v > 100:
            found = v
            break
    else:
        found = found - 1
    return found


@case((3,), ops={"cond"}, tags={"jumps", "golden"})
def python_range_tensor_break(x):
    for i in range(5):
        if x.sum() > 10:
            break
        x = x * 2
    return x


_RK_STAGES = [[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]]


@case((3,), ops={"while"}, tags={"loops"})
def generator_in_tensor_while(x):
    t = x.sum() * 0
    y = x
    while t < 0.35:                         # a Runge-Kutta step per iteration
        ks = []
        for i in range(4):
            yi = y + 0.1 * sum(a * k for a, k in zip(_RK_STAGES[i], ks))
            ks.append(-yi)
        y = y + 0.1 * (ks[0] + 2 * ks[1] + 2 * ks[2] + ks[3]) / 6
        t = t + 0.1
    return y


@case((4, 2), (4, 2), ops={"while"}, tags={"loops"})
def for_zip_enumerate_range(x, y):
    s = x[0] * 0
    for a, (j, b), k in zip(x, enumerate(y), range(100)):
        s = s + a * b + j * k
    for row, c in zip(np.arange(8.0, dtype=np.float32).reshape(4, 2), x):
        s = s + row * c
    return s + sum(x, [5, 6])



@case((None, 3), (3, 3), ops={"scan"}, no_ops={"while"}, tags={"loops"})
def for_long_python_range(x, w):
    # 8 ops an iteration, 200 iterations: past transpiler.scan_for.UNROLL_LIMIT, so one scan op after
    # the first iteration, `i` a traced index
    h = x
    for i in range(200):
        h = rt.tanh(h @ w) * 0.5 + rt.sin(h) * 0.25 + x * (i % 3) * 0.125
    return h

# --- lists, subscripts, builtins ---------------------------------------------------------

@case((None, 2), ops={"while"}, tags={"lists", "golden"})   # a growing list: a tensor array the while op carries
def list_append_in_tensor_loop(x):
    outs = []
    for row in x:
        outs.append(row * 2)
    return rt.stack(outs)


@case((6, 2), ops={"while"}, tags={"lists"})
def list_grown_then_walked_in_python(x):
    outs = [x[0] * 0]
    for row in x:
        if row.sum() > 0:
            row = row + 1
        outs.append(row * 2)
    return [o.sum() for o in outs][-1] + len(outs) + rt.stack(outs).sum(0)


@case((3,), no_ops={"while"}, tags={"lists"})
def append_python_loop(x):
    outs = []
    for i in range(3):
        outs.append(x * i)
    return rt.stack(outs)


@case((4, 3), no_ops={"cond", "while"}, tags={"lists", "golden"})
def subscript_assign(x):
    x[0] = x[1] * 2
    x[:, 1] = 0
    x[2] += 1
    return x


@case((4, 3), tags={"lists"})
def nested_item_assignment(x):
    caches = [x * 0, x * 0]                 # a per-layer cache in a Python list
    for layer in range(2):
        caches[layer][:, layer] = x[:, 2] + layer
        c = caches[layer]                   # writing through an alias reaches the list item
        c[0] += 1
    first, caches[1][1], last = 1.0, x[3], 2.0
    return caches[0] + caches[1] * first + last


@case((3,), ops={"cond"}, tags={"returns"})
def bound_where_not_returned(x):
    if x.sum() > 0:
        if x[0] > 0:
            return x * 2
        else:
            a = x + 1
    else:
        a = x - 1
    return a * 3


@case((None, 2, 3), no_ops={"cond", "while"}, tags={"calls", "golden"})
def len_and_shape(x):
    n = len(x)
    flat = x.reshape(x.shape[0], -1)
    return flat * x.shape[2] + n


@case((4, 3), no_ops={"cond", "while"}, tags={"calls"})
def len_and_shape_unpacked(x):
    n = len(x)
    rows, cols = x.shape
    return x * n + rows * cols


@case((6, 4), tags={"lists"})
def aug_assign_and_unpacking(x):
    a, (b, c) = x[0], (x[1], x[2])
    a += b
    a *= c
    a -= 1
    a /= 2
    return a


@case((3,), tags={"calls", "golden"})
def nested_function(x):
    scale = 3.0

    def helper(v):
        if v.sum() > 0:
            return v * scale
        return v / scale
    return helper(x) + helper(-x)


@case((3,), tags={"calls", "golden"})
def lambda_call(x):
    g = lambda v: v * 2 if v.sum() > 0 else v * 3  # noqa: E731
    return g(x)


def _bounded_grow(v, k=2):
    i = 0
    while v.sum() < 10 and i < 5:
        v = v + k
        i += 1
    return v


@case((3,), ops={"while"}, tags={"calls", "golden"})
def calls_user_function(x):
    return _bounded_grow(x, k=3) + _bounded_grow(x)


@case((3,), tags={"calls"})
def default_and_kwargs(x, scale=2.0, *args, **kwargs):
    if x.sum() > 0:
        return x * scale
    return x


@case((4,), ops={"cond"}, tags={"returns"})
def return_none_or_tuple(x):
    if x.sum() > 0:
        out = (x, x + 1)
    else:
        out = (x - 1, x)
    return out


@case((3,), no_ops={"while", "cond"}, tags={"calls", "golden"})
def numpy_constant(x):
    w = np.ones((3,), np.float32) * 2
    return x * w