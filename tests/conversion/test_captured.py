"""Tensors captured from outside the function (globals, attributes, closures) and constants made inside it:
each is its own Program input, whatever loops and retraces happen around it (issue: two captured constants
collided on one name and one was fed the other's value)."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

P = rt.asarray(np.float32(2.0))
Q = rt.asarray(np.float32(0.5))


def global_in_loop(x, end):
    i = rt.asarray(0)
    while i < end:
        x = x + P
        i = i + 1
    return x


def two_loops(x, end):
    i = rt.asarray(0)
    while i < end:
        x = x + P
        i = i + 1
    j = rt.asarray(0)
    while j < end:
        x = x * Q + P
        j = j + 1
    return x


def loop_in_python_for(x, end):
    for _ in range(2):
        i = rt.asarray(0)
        while i < end:
            x = x + P
            i = i + 1
    return x


def nested_loops_and_branches(x, end):
    i = rt.asarray(0)
    acc = rt.asarray(np.float32(0))
    while i < end:
        j = rt.asarray(0)
        while j < i:
            if x > P:
                acc = acc + Q
            else:
                acc = acc - P
            x = x + Q
            j = j + 1
        i = i + 1
    return acc + x


def constant_as_carry(x, end):
    s = rt.asarray(np.float32(1.0))
    i = rt.asarray(np.int32(0))
    while i < end:
        s = s * P + Q
        i = i + 1
    return s + x


class Holder:
    def __init__(self):
        self.p = rt.asarray(np.float32(3.0))
        self.q = rt.asarray(np.float32(-1.0))

    def step(self, x, end):
        i = rt.asarray(0)
        while i < end:
            x = x + self.p
            i = i + 1
        k = rt.asarray(0)
        while k < end:
            x = x * self.q
            k = k + 1
        return x


def make_closure():
    c = rt.asarray(np.float32(1.5))
    d = rt.asarray(np.float32(4.0))

    def closure(x, end):
        i = rt.asarray(0)
        while i < end:
            x = x + c
            if x > d:
                x = x - d
            i = i + 1
        return x
    return closure


FUNCTIONS = [global_in_loop, two_loops, loop_in_python_for, nested_loops_and_branches, constant_as_carry,
             Holder().step, make_closure()]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("end", [0, 1, 3, 5])
def test_captured_tensors_keep_their_values(fn, end):
    x, n = rt.asarray(np.float32(1.0)), rt.asarray(np.int32(end))
    want = fn(x, n).numpy()                       # eager Python over the runtime's tensors: the oracle
    static = to_static(fn)
    for _ in range(3):                            # the same each run (once it alternated between values)
        np.testing.assert_allclose(static(x, n).numpy(), want, rtol=1e-6)
    program = static.get_program(x, n)
    rt.verify(program)
    names = [v.name for v in program.inputs]
    assert len(names) == len(set(names)), names


def test_the_issue_example():
    static = to_static(global_in_loop)
    assert float(static(rt.asarray(np.float32(1)), rt.asarray(np.int32(3)))) == 7.0


def test_verify_rejects_two_values_with_one_name():
    def f(x):
        return x + 1
    program, _, _ = rt.trace(f, [rt.InputSpec([2], "float32", "x")])
    rt.verify(program)
    block = program.global_block
    impostor = rt.Variable("x", (2,), "float32", block, persistable=True)
    program.inputs.append(impostor)
    with pytest.raises(rt.ProgramFormatError, match="'x'"):
        rt.verify(program)
