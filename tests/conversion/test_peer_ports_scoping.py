"""Ports: TF AutoGraph's loop_scoping / cond_with_lambda / type_check tests and MindSpore's lists of
tensors and functions under tensor control flow.

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


def loop_created_variable_read_after(n):
    i = 0
    while i < n:
        tmp = i * 2
        i += 1
    return tmp


def loop_variable_bound_in_tensor_loop(x):
    for v in x:
        last = v
        if v > 2:
            hi = v
    return last


def lambda_chosen_by_tensor_if(x):
    f = (lambda v: v + 1) if x[0] > 0 else (lambda v: v - 1)
    return f(x)


def list_of_runtime_functions(x):
    fs = [rt.sin, rt.cos, rt.tanh]
    out = x
    for f in fs:
        if rt.sum(out) > 0:
            out = f(out)
    return out


def list_read_at_tensor_counter(x):
    ws = [x, x * 2, x * 3]
    i = 0
    total = x * 0
    while i < 3:
        total = total + ws[i]
        i += 1
    return total


def zip_of_lists_of_tensors_with_tensor_if(x):
    a = [x[0], x[1]]
    b = [x[2], x[0]]
    out = x[0] * 0
    for p, q in zip(a, b):
        if p > q:
            out = out + p
        else:
            out = out - q
    return out


def function_defined_in_tensor_range_loop(n):
    total = 0
    for i in range(n):
        def add(k):
            return k + i
        total = add(total)
    return total


def isinstance_of_a_traced_value(x):
    y = x
    if isinstance(y, rt.Tensor):
        y = y * 2
    return y


def ternary_keeps_or_scales_in_loop(x):
    res = x
    for _ in range(2):
        res = res if rt.max(res) > 10 else res * 3
    return res


def collatz_steps_tensor_while(n):
    i = n
    steps = 0
    while i != 1 and steps < 100:
        i = i // 2 if i % 2 == 0 else 3 * i + 1
        steps += 1
    return steps


CASES = [
    (loop_created_variable_read_after, N5, N3),
    (loop_variable_bound_in_tensor_loop, X, Y),
    (lambda_chosen_by_tensor_if, X, Y),
    (list_of_runtime_functions, X, Y),
    (list_read_at_tensor_counter, X, Y),
    (zip_of_lists_of_tensors_with_tensor_if, X, Y),
    (function_defined_in_tensor_range_loop, N5, N3),
    (isinstance_of_a_traced_value, X, Y),
    (ternary_keeps_or_scales_in_loop, X, Y),
    (collatz_steps_tensor_while, N5, N3),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_like_eager(case):
    like_eager(case[0], *case[1:])
