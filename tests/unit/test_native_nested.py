"""Loops nested in a native loop (runtime/native/region.py `_loop`, loop_emitter.py `emit_loop`): one native
function for the whole nest, NumPy's bits, the NumPy plan's iteration budget (every loop's iterations)."""
import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.errors import IterationLimitError
from runtime.native.numpy_loops import same_bits
from transpiler import to_static

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built
RNG = np.random.default_rng(11)


def _tensor(*shape, dtype="float32", scale=1.0):
    return rt.tensor((RNG.standard_normal(shape) * scale).astype(dtype))


def _plans(fn, *args, max_iterations=None):
    program = to_static(fn).get_program(*args)
    feed = {v.name: a for v, a in zip(program.inputs, args)}
    plan = rt.Executor(native=True, max_iterations=max_iterations).compile(program)
    native.wait()
    return program, feed, plan


def _run_both(fn, *args, max_iterations=None):
    program, feed, plan = _plans(fn, *args, max_iterations=max_iterations)
    declined = native.stats()["declined_calls"]
    got = [t.numpy() for t in plan.run(feed)]
    assert native.stats()["declined_calls"] == declined, "the native loop handed its call back to NumPy"
    want = [t.numpy() for t in rt.Executor(native=False, max_iterations=max_iterations).run(program, feed)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same_bits(g, w), (g, w)
    return plan


def _loops(plan):
    return [why for name, why in plan.native_regions if name.startswith("while")]


W = _tensor(8, 8, scale=0.4)


def _nested(x, n):
    h = x
    total = x.sum() * 0.0
    i = 0
    while i < n:
        j = 0
        while j < i + 1 and total < 1e6:        # its trip count depends on the outer state
            h = rt.tanh(h @ W + 0.1)
            total = total + rt.exp(h).sum()
            j += 1
        h = h * 0.5
        i += 1
    return h, total, i


@needs_llvm
@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_while_inside_a_while_is_one_native_loop(n):
    plan = _run_both(_nested, _tensor(3, 8), rt.tensor(n))
    assert _loops(plan) == ["native"]           # one region: the inner loop is part of the outer's function


@needs_llvm
def test_the_budget_counts_the_inner_loops_iterations():
    x, n = _tensor(3, 8), rt.tensor(4)              # outer 4 iterations + inner 1 + 2 + 3 + 4 = 14
    _run_both(_nested, x, n, max_iterations=14)
    program, feed, plan = _plans(_nested, x, n, max_iterations=13)
    assert _loops(plan) == ["native"]
    with pytest.raises(IterationLimitError, match="more than 13 iterations"):
        plan.run(feed)


@needs_llvm
def test_nested_loops_swapping_state_and_two_loops_in_one_body():
    def f(a, b, n):
        i = 0
        while i < n:
            k = 0
            while k < 3:
                a, b = b, a + b * 0.5           # swapped: every position takes its value at once
                k += 1
            m = 0
            while m < i:
                a = rt.maximum(a, b) - 0.25
                m += 1
            i += 1
        return a, b

    plan = _run_both(f, _tensor(2, 5), _tensor(2, 5), rt.tensor(4))
    assert _loops(plan) == ["native"]


@needs_llvm
@pytest.mark.parametrize("n", [0, 3, 9])          # 9: 46 items, past the buffer's first capacity
def test_an_inner_loop_carrying_a_tensor_array_is_in_the_outer_native_loop(n):
    """The inner loop appends to the list the outer loop carries (one buffer and count for both), reading
    its last item and its length as it goes."""
    def f(x, n):
        items = [x]
        i = 0
        while i < n:
            j = 0
            while j < i + 1:
                items.append(x * 0.5 + items[-1] * 0.25)
                j += 1
            x = x + items[len(items) - 1 - i]
            i += 1
        return x, rt.stack(items)

    plan = _run_both(f, _tensor(4), rt.tensor(n))
    assert _loops(plan) == ["native"]          # one region: the inner loop is in the outer's function


@needs_llvm
def test_an_inner_loop_appending_after_the_outer_body_appended():
    def f(x, n):
        items = [x]
        i = 0
        while i < n:
            items.append(x * 2.0)
            j = 0
            while j < i % 3:
                items.append(items[-1] - 1.0)
                j += 1
            x = x * 0.5 + items[-2]
            i += 1
        return x, rt.stack(items)

    plan = _run_both(f, _tensor(3), rt.tensor(6))
    assert _loops(plan) == ["native"]


def _conds(plan):
    return [why for name, why in plan.native_regions if name.startswith("cond")]


@needs_llvm
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_top_level_cond_is_one_native_region(sign):
    def f(x):
        if x.sum() > 0:
            y = rt.tanh(x @ W) * 2.0 + 1.0
            z = y.sum()
        else:
            y = rt.exp(x) - x @ W
            z = y.max()
        return y, z

    plan = _run_both(f, rt.tensor(np.abs(RNG.standard_normal((3, 8))).astype(np.float32) * sign))
    assert _conds(plan) == ["native"]


@needs_llvm
def test_a_cond_of_numbers_or_in_a_loop_stays_python():
    def small(x, a):
        if a > 0:
            b = a * 2
        else:
            b = a - 1
        return x * b

    plan = _run_both(small, _tensor(3), rt.tensor(2.0))
    assert _conds(plan) == ["a cond without array work (cheaper on NumPy)"]

    def in_loop(x, n):
        i = 0
        while i < n:
            if x.sum() > 0:
                x = rt.tanh(x @ W) - 1.0
            else:
                x = rt.sort(x) + 1.0            # sort: the loop stays on NumPy, its cond in its code
            i += 1
        return x

    plan = _run_both(in_loop, _tensor(2, 8), rt.tensor(4))
    assert _conds(plan) == [] and _loops(plan) == ["op 'sort' is not native"]
