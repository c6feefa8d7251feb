"""Tensor arrays read inside a native loop (`arr[i]`, `len(arr)`; region._array_states, emit_array_read): the
items the loop appended are read from its buffer, NumPy's bits, a list's IndexError where the NumPy plan raises."""
import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native.numpy_loops import same_bits
from transpiler import to_static

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built
RNG = np.random.default_rng(13)
W = rt.tensor((RNG.standard_normal((6, 6)) * 0.4).astype(np.float32))


def _tensor(*shape):
    return rt.tensor(RNG.standard_normal(shape).astype(np.float32))


def _compile(fn, *args):
    program = to_static(fn).get_program(*args)
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    return program, {v.name: a for v, a in zip(program.inputs, args)}, plan


def _run_both(fn, *args):
    program, feed, plan = _compile(fn, *args)
    declined = native.stats()["declined_calls"]
    got = [t.numpy() for t in plan.run(feed)]
    assert native.stats()["declined_calls"] == declined, "the native loop handed its call back to NumPy"
    want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same_bits(g, w), (g, w)
    return plan


def _loops(plan):
    return [why for name, why in plan.native_regions if name.startswith("while")]


def _attention_like(x, n):
    hs = [x]
    i = 0
    while i < n:
        last = hs[-1]
        first = hs[0]
        middle = hs[len(hs) // 2]
        h = rt.tanh(last @ W + first * 0.1) + middle * 0.01
        hs.append(h)
        i += 1
    return rt.stack(hs), i


@needs_llvm
@pytest.mark.parametrize("n", [0, 3, 40])        # 40: past the buffer's first capacity, run again larger
def test_the_last_and_first_items_and_the_length_read_in_the_loop(n):
    plan = _run_both(_attention_like, _tensor(2, 6), rt.tensor(n))
    assert _loops(plan) == ["native"]


@needs_llvm
def test_an_index_out_of_range_raises_the_lists_index_error():
    def f(x, n, k):
        hs = [x]
        i = 0
        while i < n:
            hs.append(hs[i - k] * 0.5)
            i += 1
        return rt.stack(hs)

    program, feed, plan = _compile(f, _tensor(4), rt.tensor(5), rt.tensor(1))
    assert _loops(plan) == ["native"]
    feed[program.inputs[2].name] = rt.tensor(3)         # i - 3 is below -len(hs) on the first iteration
    with pytest.raises(IndexError):
        plan.run(feed)
    _run_both(f, _tensor(4), rt.tensor(6), rt.tensor(1))


@needs_llvm
def test_reads_after_the_append_and_numbers_as_items():
    def f(x, n):
        sums = [x.sum()]
        i = 0
        while i < n:
            sums.append(sums[-1] * 0.5 + x[i % 4])
            x = x + sums[len(sums) - 1]         # the item just appended
            i += 1
        return x, rt.stack(sums)

    plan = _run_both(f, _tensor(4), rt.tensor(7))
    assert _loops(plan) == ["native"]


@needs_llvm
def test_a_read_after_the_append_of_the_array_before_it_stays_on_numpy():
    def f(x, n):
        hs = [x]
        i = 0
        while i < n:
            old = hs
            hs.append(x * 2.0)
            x = old[0] + 1.0        # `old` is the list after the append in Python: the same object
            i += 1
        return x, rt.stack(hs)

    _run_both(f, _tensor(3), rt.tensor(3))          # native or not, the bits are the NumPy plan's


# --- a tensor array the loop reads but does not carry (made by a loop before it) ------------------------
def _built_then_read(x, n, k):
    items = [x]
    i = 0
    while i < n:
        items.append(rt.tanh(items[-1] @ W))
        i += 1
    h = x
    j = 0
    while j < n:
        h = h * 0.5 + items[j] + items[len(items) - 1 - j] * 0.25 + items[j - k]
        j += 1
    return h, j


@needs_llvm
@pytest.mark.parametrize("n", [0, 3, 40])
def test_a_tensor_array_captured_and_only_read_by_a_loop(n):
    plan = _run_both(_built_then_read, _tensor(2, 6), rt.tensor(n), rt.tensor(1))
    assert _loops(plan) == ["native", "native"]


@needs_llvm
def test_a_captured_tensor_arrays_index_out_of_range_raises_the_lists_index_error():
    program, feed, plan = _compile(_built_then_read, _tensor(2, 6), rt.tensor(4), rt.tensor(1))
    assert _loops(plan) == ["native", "native"]
    feed[program.inputs[2].name] = rt.tensor(7)         # items[0 - 7]: below -len(items) (5 items)
    with pytest.raises(IndexError):
        plan.run(feed)
    with pytest.raises(IndexError):
        rt.Executor(native=False).run(program, feed)


@needs_llvm
def test_a_carried_tensor_array_read_by_the_loop_as_it_was_stays_on_numpy():
    """The loop reads the list it carries through the Variable it started as (the same list in the NumPy
    plan, growing): not the items' buffer and count the kernel keeps, so the loop stays on NumPy."""
    from runtime.ops import tensor_array as ta

    def f(x, n):
        items = ta.array_from_list([x])

        def body(i, arr):
            return i + 1, ta.array_append(arr, ta.array_read(items, i - 1) * 0.5)
        return ta.array_stack(rt.while_loop(lambda i, arr: i < n, body, (rt.zeros((), dtype="int64"), items))[1])

    program, _, _ = rt.trace(f, [rt.InputSpec([3], "float32", name="x"), rt.InputSpec([], "int64", name="n")])
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    feed = {"x": np.ones(3, np.float32), "n": np.int64(4)}
    assert same_bits(plan.run(feed)[0].numpy(), rt.Executor(native=False).run(program, feed)[0].numpy())
    assert _loops(plan) == ["a tensor array the loop carries is also read by its blocks as it was"]
