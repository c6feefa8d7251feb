"""Gradients through converted control flow: `cond` and `while` are differentiated, not unrolled.

Each function is checked three ways against NumPy: the gradient Program of the static
function (rt.grad(to_static(f))), the eager tape (rt.grad(f) running plain Python), and
central finite differences in float64; the analytic gradient written in NumPy where short.
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .gradcheck import numeric_grad, of_tensors


def branchy(x):
    if x.sum() > 0:
        y = rt.sin(x) * x
    else:
        y = rt.exp(x) * 2.0
    return y.sum()


def branchy_np_grad(x):
    if x.sum() > 0:
        return np.cos(x) * x + np.sin(x)
    return 2.0 * np.exp(x)


def grow(x):
    """A data-dependent trip count: the loop runs until the sum passes 10."""
    while x.sum() < 10.0:
        x = x * 1.5 + rt.sin(x)
    return x.sum()


def grow_np_grad(x):
    states = []
    while x.sum() < 10.0:
        states.append(x)
        x = x * 1.5 + np.sin(x)
    g = np.ones_like(x)
    for s in reversed(states):
        g = g * (1.5 + np.cos(s))
    return g


def grow_with_break(x):
    i = 0
    while i < 100:
        x = rt.tanh(x) * 3.0 + x
        if x.sum() > 20.0:
            break
        i += 1
    return (x * x).sum()


def loop_returns_early(x, w):
    i = 0
    while i < 50:
        x = x * w + 0.5
        if x.sum() > 5.0:
            return rt.sin(x).sum()
        i += 1
    return x.sum()


def loop_with_continue(x):
    i = 0
    acc = x * 0.0
    while i < 6:
        i += 1
        if (x * i).sum() < 1.0:
            continue
        acc = acc + rt.sin(x * i)
    return acc.sum()


def collects(x):
    rows = []
    while x.sum() < 8.0:
        x = x + rt.exp(x * 0.1)
        rows.append(x * x)
    return rt.stack(rows).sum()


def nested(x):
    while x.sum() < 6.0:
        if x[0] > 1.0:
            x = x * 1.2 + 0.1
        else:
            x = rt.exp(x)
    return (x * x).sum()


def collects_some(x):
    """A list appended to under a tensor condition inside the loop: a tensor array through a cond."""
    rows = [x]
    i = 0
    while i < 4:
        x = rt.sin(x) * 1.5
        if x.sum() > 0:
            rows.append(x * 2.0)
        i += 1
    return rt.stack(rows).sum()


POINTS = {
    branchy: [np.array([0.5, 1.0, -0.2]), np.array([-0.5, -1.0, 0.2])],
    grow: [np.array([1.0, 2.0]), np.array([0.1, 0.2]), np.array([3.0, 8.0])],
    grow_with_break: [np.array([0.3, -0.4]), np.array([2.0, 1.0])],
    loop_with_continue: [np.array([0.1, 0.05]), np.array([0.4, 0.3])],
    collects: [np.array([0.5, 1.0]), np.array([2.0, 3.0])],
    collects_some: [np.array([0.3, 0.9]), np.array([-0.5, 0.2])],
    nested: [np.array([0.5, 0.2]), np.array([1.5, 0.2])],
}


@pytest.mark.parametrize("fn", list(POINTS), ids=lambda f: f.__name__)
def test_static_gradient_matches_tape_and_finite_differences(fn):
    static = rt.grad(to_static(fn))
    for a in POINTS[fn]:
        got = static(rt.tensor(a)).numpy()
        eager = rt.grad(fn)(rt.tensor(a)).numpy()
        (num,) = numeric_grad(of_tensors(fn), [a.copy()])
        np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got, eager, rtol=1e-12, atol=1e-14)
    assert static.cache_size == 1       # one Program for every trip count and branch
    rt.verify(static.get_program(rt.tensor(POINTS[fn][0])))   # a well-formed Program (no orphaned blocks)


@pytest.mark.parametrize("fn, oracle", [(branchy, branchy_np_grad), (grow, grow_np_grad)],
                         ids=["cond", "while"])
def test_against_numpy_written_gradient(fn, oracle):
    for a in POINTS[fn]:
        np.testing.assert_allclose(rt.grad(to_static(fn))(rt.tensor(a)).numpy(), oracle(a), rtol=1e-12)


def _ops(program):
    return [op.type for op in program.ops()]


def test_gradient_of_cond_is_a_cond():
    program = rt.grad(to_static(branchy)).get_program(rt.tensor(POINTS[branchy][0]))
    assert _ops(program).count("cond") == 2      # the forward cond and the backward one


def test_gradient_of_while_is_a_reverse_while_not_unrolled():
    static = rt.grad(to_static(grow))
    program = static.get_program(rt.tensor(POINTS[grow][0]))
    types = _ops(program)
    assert types.count("while") == 2             # the forward loop (saving its state) and the reverse loop
    assert types.count("sin") <= 2 and types.count("cos") == 1   # one body each, whatever the trip count
    assert "array_append" in types and "array_read" in types


def test_forward_loop_saves_only_what_the_backward_reads():
    def f(x, n):
        i = 0
        y = x
        while i < n:
            y = y * 2.0 + 1.0      # a linear body: its VJP reads no loop state
            i += 1
        return y.sum()
    program = rt.grad(to_static(f)).get_program(rt.tensor(np.ones(3)), rt.tensor(np.int64(4)))
    assert "array_append" not in _ops(program)   # only the trip count is kept
    g = rt.grad(to_static(f))(rt.tensor(np.ones(3)), rt.tensor(np.int64(4)))
    np.testing.assert_allclose(g.numpy(), np.full(3, 16.0))


def test_two_arguments_and_early_return():
    static = rt.grad(to_static(loop_returns_early), argnums=(0, 1))
    for a, w in [(np.array([0.5, 0.2]), np.array([1.3, 1.1])), (np.array([2.0, 4.0]), np.array([1.2, 0.9]))]:
        gx, gw = static(rt.tensor(a), rt.tensor(w))
        nx, nw = numeric_grad(of_tensors(loop_returns_early), [a.copy(), w.copy()])
        np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-5, atol=1e-7)
    assert static.cache_size == 1


def test_grad_inside_converted_code_around_control_flow():
    @to_static
    def step(x):
        value, g = rt.value_and_grad(grow)(x)
        return value, x - 0.1 * g
    for a in POINTS[grow]:
        value, moved = step(rt.tensor(a))
        np.testing.assert_allclose(moved.numpy(), a - 0.1 * grow_np_grad(a), rtol=1e-12)


def test_backward_through_a_static_forward_with_a_loop():
    x = rt.tensor(POINTS[grow][0], requires_grad=True)
    to_static(grow)(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), grow_np_grad(POINTS[grow][0]), rtol=1e-12)


# --- the conversion corpus: every case with float outputs ------------------------------------------

from .corpus import CASES  # noqa: E402
from .oracle import inputs  # noqa: E402


def _float_leaves(out):
    from runtime import pytree
    return [leaf for leaf in pytree.flatten(out)[0]
            if isinstance(leaf, (rt.Tensor, rt.Tracer)) and leaf.dtype.kind == "f"]


def _scalar_loss(fn, scalars):
    """A scalar of fn's float outputs that every output element moves: sum(sin(output))."""
    def loss(*xs):
        total = 0.0
        for leaf in _float_leaves(fn(*xs, *scalars)):
            total = total + rt.sin(leaf).sum()
        return total
    loss.__name__ = f"loss_of_{fn.__name__}"
    return loss


def _float_cases():
    for case in CASES:
        if case.get("ints") or np.dtype(case["dtype"]).kind != "f" or not case["shapes"]:
            continue
        arrays = [a.astype(np.float64) for a in inputs(case, 0)]
        if _float_leaves(case["fn"](*[rt.tensor(a) for a in arrays], *case["scalars"])):
            yield pytest.param(case, id=case["fn"].__name__)


@pytest.mark.parametrize("case", list(_float_cases()))
def test_corpus_gradients_against_finite_differences(case):
    loss = _scalar_loss(case["fn"], case["scalars"])
    nums = tuple(range(len(case["shapes"])))
    static = rt.grad(to_static(loss), argnums=nums)
    for seed in (0, 1):
        arrays = [a.astype(np.float64) for a in inputs(case, seed)]
        got = static(*[rt.tensor(a) for a in arrays])
        tape = rt.grad(loss, argnums=nums)(*[rt.tensor(a) for a in arrays])
        want = numeric_grad(of_tensors(loss), [a.copy() for a in arrays])
        for g, t, w in zip(got, tape, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


# --- nesting, and a recurrent net over a dynamic number of steps -----------------------------------

def loops_in_loops(x):
    i = 0
    while i < 3:
        j = 0
        while (x * x).sum() < 4.0 * (i + 1) and j < 20:
            x = x * 1.1 + rt.sin(x) * 0.1
            j += 1
        x = rt.tanh(x) * 2.0
        i += 1
    return x.sum()


def loop_in_branch(x):
    if x.sum() > 0:
        while x.sum() < 5.0:
            x = x * 1.3 + 0.1
        y = x * x
    else:
        y = rt.exp(x)
    return y.sum()


@pytest.mark.parametrize("fn, a", [(loops_in_loops, [0.3, 0.2]), (loop_in_branch, [0.3, 0.2]),
                                   (loop_in_branch, [-0.3, 0.2])], ids=["while-in-while", "while-in-cond+",
                                                                        "while-in-cond-"])
def test_nested_control_flow(fn, a):
    a = np.array(a)
    static = rt.grad(to_static(fn))
    got = static(rt.tensor(a)).numpy()
    rt.verify(static.get_program(rt.tensor(a)))
    (num,) = numeric_grad(of_tensors(fn), [a.copy()])
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)


def rnn(h, w, xs):
    t = 0
    while t < xs.shape[0]:
        h = rt.tanh(rt.matmul(h, w) + xs[t])
        t += 1
    return (h * h).sum()


def test_recurrent_net_over_a_dynamic_number_of_steps():
    from transpiler import InputSpec
    spec = [InputSpec([2, 4], "float64"), InputSpec([4, 4], "float64"), InputSpec([None, 2, 4], "float64")]
    static = rt.grad(to_static(rnn, input_spec=spec), argnums=(0, 1, 2))
    rng = np.random.default_rng(0)
    for steps in (1, 7):
        args = [rng.normal(size=(2, 4)), rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(steps, 2, 4))]
        got = static(*[rt.tensor(a) for a in args])
        for g, n in zip(got, numeric_grad(of_tensors(rnn), [a.copy() for a in args])):
            np.testing.assert_allclose(g.numpy(), n, rtol=1e-6, atol=1e-8)
    assert static.cache_size == 1
    program = static.get_program(*spec)
    types = [op.type for op in program.ops()]
    assert types.count("while") == 2 and types.count("matmul") <= 4     # one body forward, one reverse: not unrolled
    assert "array_scatter_add" in types and "getitem_grad" not in types  # xs[t]'s cotangent: one scatter, after
