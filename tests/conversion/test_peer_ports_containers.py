"""Ports: containers, closures and nested loops as the peer suites mix them (Dynamo's list/dict/tuple
tests, TF AutoGraph's composite names and nested control flow, Paddle's closure tests).

Oracle: the same function run eagerly; see peers.like_eager (three calls: same input, another, same again).
"""
import numpy as np
import pytest

import runtime as rt

from .peers import like_eager


def s(v, dtype=np.float32):
    return np.asarray(v, dtype)


X = (s([1.5, -2.5, 3.0]),)
Y = (s([-0.5, 4.0, -3.5]),)
N5, N3 = (s(5, np.int32),), (s(3, np.int32),)


def nested_list_grid_writes(x):
    grid = [[0, 0], [0, 0]]
    for i in range(2):
        for j in range(2):
            grid[i][j] = i * 2 + j
    return x * grid[1][0], grid


def del_items_and_names(x):
    d = {"a": 1, "b": 2}
    del d["a"]
    lst = [x, x * 2, x * 3]
    del lst[0]
    y = x
    del y
    return lst, d


def nonlocal_under_tensor_if_in_python_loop(x):
    total = x * 0
    def acc(v):
        nonlocal total
        if rt.sum(v) > 0:
            total = total + v
    for r in [x, -x, x * 2]:
        acc(r)
    return total


def list_copy_by_slice(x):
    a = [1, 2, 3]
    b = a[:]
    b.append(4)
    return x * len(a), x * len(b)


def ternary_rebinding_in_loop(x):
    t = x
    for _ in range(2):
        t = t + 1 if rt.sum(t) > 0 else t - 1
    return t


def sorted_key_lambda_and_map(x):
    vals = sorted([3, 1, 2], key=lambda v: -v)
    return x * vals[0], list(map(lambda v: v * 2, vals))


def functools_reduce(x):
    import functools
    return functools.reduce(lambda a, b: a + b, [x, x, x])


def star_unpack_middle(x):
    a, *b, c = [x, x + 1, x + 2, x + 3]
    return a, b, c


def closure_sees_rebound_cell_in_loop(x):
    k = 2
    def scale(v):
        return v * k
    out = []
    for v in x:
        if v > 0:
            k = 3
        out.append(scale(v))
    return out


def nested_tensor_whiles(n):
    total = 0
    i = 0
    while i < n:
        j = i
        while j > 0:
            total += j
            j -= 2
        i += 1
    return total


def while_continue_break_else(n):
    i = 0
    out = 0
    while i < n:
        i += 1
        if i == 2:
            continue
        elif i == 4:
            break
        out = out * 10 + i
    else:
        out = -out
    return out


def iter_next_python(x):
    it = iter([1, 2, 3])
    first = next(it)
    return x * first + sum(it)


def if_elif_else_continue(x):
    acc = 0
    for i in range(len(x)):
        if x[i] > 0:
            acc = acc + x[i]
        elif x[i] < -2:
            acc = acc - 1
        else:
            continue
        acc = acc * 2
    return acc


def return_inside_tensor_range(n):
    x = 1
    for i in range(n):
        if i % 2:
            x = x * 3
        else:
            x = x - 1
        if x > 10:
            return x, i
    return x, -1


def int_keyed_dict_counts(x):
    # Dynamo: dict keyed by ints, updated in a tensor loop
    counts = {0: 0, 1: 0}
    for v in x:
        if v > 0:
            counts[1] += 1
        else:
            counts[0] += 1
    return counts


def dict_state_in_tensor_while(x):
    state = {"h": x * 0, "steps": 0}
    i = 0
    while i < 3:
        state["h"] = state["h"] + x
        state["steps"] += 1
        i += 1
    return state


def tuple_rebound_in_tensor_if(x):
    pair = (x, 0)
    if x[0] > 0:
        pair = (x * 2, 1)
    return pair


def swap_list_items_in_tensor_if(x):
    lst = [x[0], x[1]]
    if x[2] > 0:
        lst[0], lst[1] = lst[1], lst[0]
    return lst


def chained_assignment_then_rebind(x):
    a = b = x
    if x[0] > 0:
        a = a + 1
    return a, b


def continue_and_break_in_nested_ranges(n):
    res = 0
    for i in range(n):
        if i == 0:
            continue
        for j in range(i):
            if j == 2:
                break
            res += i * j
    return res


def dict_alias_written_in_tensor_if(x):
    m = {"a": x}
    m2 = m
    if x[0] > 0:
        m["a"] = x + 10
    return m2["a"]


def list_alias_item_written_in_tensor_if(x):
    lst = [x]
    lst2 = lst
    if x[0] > 0:
        lst[0] = x + 10
    return lst2[0]


def early_return_in_python_loop_after_tensor_if(x):
    out = x * 0
    for i in range(3):
        if x[i] > 0:
            out = out + i
        if x[i] > 2:
            return out
    return out - 1


CASES = [
    (nested_list_grid_writes, X, Y),
    (del_items_and_names, X, Y),
    (nonlocal_under_tensor_if_in_python_loop, X, Y),
    (list_copy_by_slice, X, Y),
    (ternary_rebinding_in_loop, X, Y),
    (sorted_key_lambda_and_map, X, Y),
    (functools_reduce, X, Y),
    (star_unpack_middle, X, Y),
    (closure_sees_rebound_cell_in_loop, X, Y),
    (nested_tensor_whiles, N5, N3),
    (while_continue_break_else, N5, N3),
    (iter_next_python, X, Y),
    (if_elif_else_continue, X, Y),
    (return_inside_tensor_range, N5, N3),
    (int_keyed_dict_counts, X, Y),
    (dict_state_in_tensor_while, X, Y),
    (tuple_rebound_in_tensor_if, X, Y),
    (swap_list_items_in_tensor_if, X, Y),
    (chained_assignment_then_rebind, X, Y),
    (continue_and_break_in_nested_ranges, N5, N3),
    (dict_alias_written_in_tensor_if, X, Y),
    (list_alias_item_written_in_tensor_if, X, Y),
    (early_return_in_python_loop_after_tensor_if, X, Y),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_like_eager(case):
    like_eager(case[0], *case[1:])
