"""The while gradient's forward-with-tape is a new op, never an edit of the loop it differentiates.

The forward Program of a static function stays as traced (no tape pushes for a call under no_grad);
inside a trace, the loop op a gradient differentiates is left as it was and a new loop that also saves
what the reverse reads takes its place. Every gradient of one loop — a second request, a second-order
gradient, a gradient flowing into a tensor array an earlier loop filled — is checked against central
finite differences and the unrolled loop.
"""
import gc
import weakref

import numpy as np

import runtime as rt
from runtime import nn, tracing
from runtime.control_flow import while_loop
from runtime.executor import Executor
from runtime.ops.dispatch import apply
from runtime.ops.registry import get_op
from runtime.tracing import InputSpec
from runtime.ops.regions import sub_blocks
from transpiler import to_static

from .gradcheck import numeric_grad, of_tensors

TAPE_OPS = {"array_new", "array_append", "array_read"}


def grow(x):
    while x.sum() < 10.0:
        x = x * 1.5 + rt.sin(x)
    return x.sum()


def loop(x, n):
    i = 0
    while i < n:
        x = rt.sin(x) * 1.3 + x * x * 0.2
        i += 1
    return x.sum()


def unrolled(x, n):
    for _ in range(int(n)):
        x = rt.sin(x) * 1.3 + x * x * 0.2
    return x.sum()


def _types(program):
    return [op.type for op in program.ops()]


def test_the_forward_program_is_unchanged_by_its_gradients_and_runs_without_a_tape():
    static = to_static(grow)
    a = np.array([1.0, 2.0])
    program = static.get_program(rt.tensor(a))
    text = str(program)
    x = rt.tensor(a, requires_grad=True)
    static(x).backward()
    rt.grad(static)(rt.tensor(a))
    rt.value_and_grad(static)(rt.tensor(a))
    assert static.get_program(rt.tensor(a)) is program and str(program) == text
    assert not TAPE_OPS & set(_types(program))        # inference pays for no tape writes
    with rt.no_grad():
        np.testing.assert_allclose(static(rt.tensor(a)).numpy(), grow(rt.tensor(a)).numpy(), rtol=1e-12)
    assert "array_append" in _types(rt.grad(static).get_program(rt.tensor(a)))   # the gradient's own Program saves


def test_a_loop_gradient_puts_a_new_op_in_the_loops_place_and_leaves_the_loop_as_it_was():
    seen = {}

    def f(x, n):
        _, y = while_loop(lambda i, y: i < n, lambda i, y: (i + 1, rt.sin(y) * y), (0, x))
        op = tracing.current_block().ops[-1]
        seen["op"] = op
        seen["before"] = _snapshot(op)
        return y.sum()

    def step(x, n):
        value, g = rt.value_and_grad(f)(x, n)
        seen["block"] = list(tracing.current_block().ops)
        seen["after"] = _snapshot(seen["op"])
        return value, g

    program, _, _ = tracing.trace(step, [InputSpec((2,), "float64"), InputSpec((), "int64")])
    a, n = np.array([0.4, -0.3]), rt.tensor(np.int64(3))
    value, g = Executor().compile(program)(a, n.numpy())
    op = seen["op"]
    assert seen["after"] == seen["before"]                 # inputs, outputs, blocks: all as they were
    assert op not in seen["block"]
    (taped,) = [o for o in seen["block"] if o.outputs and o.outputs[0] is op.outputs[0]]
    assert all(a is b for a, b in zip(taped.outputs, op.outputs)) and len(taped.outputs) > len(op.outputs)
    def in_numpy(y):
        for _ in range(3):
            y = np.sin(y) * y
        return float(y.sum())
    (num,) = numeric_grad(in_numpy, [a.copy()])
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def _snapshot(op):
    """What an op is, by identity (traced values compare by building ops)."""
    def ids(values):
        return [id(v) for v in values]
    return (ids(op.inputs), ids(op.outputs), sorted(op.attrs.items()),
            [(ids(b.params), ids(b.results), ids(b.ops)) for b in sub_blocks(op)])


def test_second_order_gradient_of_a_while_matches_finite_differences_and_the_unrolled_loop():
    def of(fn):
        def h(x, n):
            return (rt.grad(fn)(x, n) * rt.cos(x)).sum()
        return h
    n = rt.tensor(np.int64(3))
    for a in (np.array([0.3, -0.7]), np.array([1.1, 0.2])):
        got = rt.grad(to_static(of(loop)))(rt.tensor(a), n).numpy()
        flat = rt.grad(to_static(of(unrolled)))(rt.tensor(a), 3).numpy()
        (num,) = numeric_grad(lambda x: float(to_static(of(loop))(rt.tensor(x), n).numpy()), [a.copy()])
        np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got, flat, rtol=1e-12, atol=1e-14)
    rt.verify(rt.grad(to_static(of(loop))).get_program(rt.tensor(np.ones(2)), n))   # no orphaned blocks


def test_two_gradient_requests_of_one_loop_share_its_tape():
    rt.seed(0)
    w = nn.Linear(2, 2)

    def step(x, n):
        y = loop_values(w(x), n)
        y.sum().backward()
        first = w.weight.grad * 1.0
        (y * y).sum().backward()
        return first, w.weight.grad

    def loop_values(x, n):
        i = 0
        while i < n:
            x = rt.tanh(x) + x * 0.5
            i += 1
        return x

    a, n = np.array([[0.3, -0.2]]), rt.tensor(np.int64(4))
    static = to_static(step)
    first, both = static(rt.tensor(a, dtype="float32"), n)
    program = static.get_program(rt.tensor(a, dtype="float32"), n)
    assert _types(program).count("while") == 3        # one forward-with-tape, two reverse loops
    weight = w.weight.numpy().astype(np.float64)

    def loss_of(wt, power):
        x = a @ wt.T + w.bias.numpy()
        for _ in range(4):
            x = np.tanh(x) + x * 0.5
        return float((x ** power).sum())
    d1, = numeric_grad(lambda wt: loss_of(wt, 1), [weight.copy()])
    d2, = numeric_grad(lambda wt: loss_of(wt, 2), [weight.copy()])
    np.testing.assert_allclose(first.numpy(), d1, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(both.numpy(), d1 + d2, rtol=1e-3, atol=1e-4)


def two_loops(x, n):
    rows = []
    i = 0
    while i < n:
        x = rt.sin(x) + 0.5 * x
        rows.append(x * x)
        i += 1
    total = x * 0.0
    j = 0
    while j < n:
        total = total + rt.cos(rows[j]) * (j + 1)
        j += 1
    return total.sum()


def test_a_loop_reading_a_tensor_array_an_earlier_loop_filled_passes_its_gradient_back():
    # the second loop captures the tensor array: its cotangent was dropped (a zero gradient)
    n = rt.tensor(np.int64(3))
    for a in (np.array([0.3, -0.7]), np.array([1.5, 0.1])):
        got = rt.grad(to_static(two_loops))(rt.tensor(a), n).numpy()
        (num,) = numeric_grad(lambda x: float(two_loops(rt.tensor(x), n).numpy()), [a.copy()])
        np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got, rt.grad(two_loops)(rt.tensor(a), n).numpy(), rtol=1e-12)
    program = rt.grad(to_static(two_loops)).get_program(rt.tensor(np.ones(2)), n)
    types = _types(program)
    assert "array_scatter_rows" in types and "array_onehot" not in types   # one scatter after the loop, O(T)
    rt.verify(program)


def test_scatter_rows_and_gather_rows_are_each_others_adjoint():
    rng = np.random.default_rng(0)
    like = [rt.tensor(np.zeros(3)) for _ in range(4)]
    g = [rt.tensor(rng.normal(size=3)) for _ in range(5)]
    pos = [rt.tensor(np.int64(p)) for p in (2, 0, 2, -1, 3)]
    out = apply(get_op("array_scatter_rows"), (like, g, pos), {})
    want = np.zeros((4, 3))
    for gi, p in zip(g, (2, 0, 2, -1, 3)):
        want[p] += gi.numpy()
    np.testing.assert_allclose(np.stack([o.numpy() for o in out]), want)
    c = [rt.tensor(rng.normal(size=3)) for _ in range(4)]       # <scatter(g), c> == <g, gather(c)>
    (_, gathered, _) = get_op("array_scatter_rows").vjp(c, (like, g, pos), out)
    lhs = sum(float((o.numpy() * ci.numpy()).sum()) for o, ci in zip(out, c))
    rhs = sum(float((gi.numpy() * hi.numpy()).sum()) for gi, hi in zip(g, gathered))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    (back, _) = get_op("array_gather_rows").vjp(g, (c, pos), gathered)
    np.testing.assert_allclose(np.stack([b.numpy() for b in back]), want)


def test_a_program_holding_a_forward_with_tape_is_freed_with_its_tape():
    def f(x, n):
        _, y = while_loop(lambda i, y: i < n, lambda i, y: (i + 1, rt.sin(y) * y), (0, x))
        return y.sum()

    def step(x, n):
        return rt.value_and_grad(f)(x, n)

    program, inputs, result = tracing.trace(step, [InputSpec((2,), "float64"), InputSpec((), "int64")])
    assert "array_append" in _types(program)
    ref = weakref.ref(program)
    del program, inputs, result
    gc.collect()
    assert ref() is None            # the tape cache keeps nothing of the Program alive
