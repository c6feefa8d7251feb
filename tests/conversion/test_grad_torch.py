"""Gradients through converted control flow against torch.autograd (skipped without PyTorch).

The same loops and branches written with torch run eagerly under autograd; ours are
differentiated as Programs (a reverse `while`, a backward `cond`).
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import InputSpec, to_static

from .test_grad_control_flow import branchy, grow, grow_with_break, rnn

torch = pytest.importorskip("torch")


def branchy_torch(x):
    y = torch.sin(x) * x if x.sum() > 0 else torch.exp(x) * 2.0
    return y.sum()


def grow_torch(x):
    while x.sum() < 10.0:
        x = x * 1.5 + torch.sin(x)
    return x.sum()


def grow_with_break_torch(x):
    i = 0
    while i < 100:
        x = torch.tanh(x) * 3.0 + x
        if x.sum() > 20.0:
            break
        i += 1
    return (x * x).sum()


def rnn_torch(h, w, xs):
    for t in range(xs.shape[0]):
        h = torch.tanh(h @ w + xs[t])
    return (h * h).sum()


def _torch_grads(fn, arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    fn(*ts).backward()
    return [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("ours, theirs, points", [
    (branchy, branchy_torch, [[0.5, 1.0, -0.2], [-0.5, -1.0, 0.2]]),
    (grow, grow_torch, [[1.0, 2.0], [0.1, 0.2]]),
    (grow_with_break, grow_with_break_torch, [[0.3, -0.4], [2.0, 1.0]]),
], ids=["cond", "while", "while-break"])
def test_control_flow_gradients_match_torch(ours, theirs, points):
    static = rt.grad(to_static(ours))
    for p in points:
        a = np.array(p)
        np.testing.assert_allclose(static(rt.tensor(a)).numpy(), _torch_grads(theirs, [a])[0], rtol=1e-10)


def test_rnn_gradients_match_torch():
    spec = [InputSpec([2, 4], "float64"), InputSpec([4, 4], "float64"), InputSpec([None, 2, 4], "float64")]
    static = rt.grad(to_static(rnn, input_spec=spec), argnums=(0, 1, 2))
    rng = np.random.default_rng(1)
    for steps in (3, 12):
        args = [rng.normal(size=(2, 4)), rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(steps, 2, 4))]
        for ours, theirs in zip(static(*[rt.tensor(a) for a in args]), _torch_grads(rnn_torch, args)):
            np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-10, atol=1e-12)
