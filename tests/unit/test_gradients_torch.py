"""The nn ops' gradient rules against torch.autograd (optional: skipped without PyTorch)."""
import numpy as np
import pytest

import runtime as rt
from runtime.ops.registry import REGISTRY

torch = pytest.importorskip("torch")
F = rt.nn.functional
TF = torch.nn.functional
_rng = np.random.default_rng(3)


def _r(*shape):
    return _rng.standard_normal(shape)


def _vjp(name, fn, args, g):
    """Our cotangents of fn's float array args: the rule of the single `name` op fn records."""
    calls = []
    from runtime.ops import dispatch
    run_eager = dispatch.run_eager

    def spy(opdef, inputs, attrs, device=None):
        out = run_eager(opdef, inputs, attrs, device)
        if opdef.name == name:
            calls.append((opdef, inputs, attrs, out))
        return out
    dispatch.run_eager = spy
    try:
        fn(*[rt.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    finally:
        dispatch.run_eager = run_eager
    (opdef, inputs, attrs, out), = calls
    return [None if c is None else c.numpy() for c in opdef.vjp(rt.tensor(g), tuple(inputs), out, **attrs)]


CASES = [
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=2),
     lambda x, w, b: TF.conv2d(x, w, b, stride=2, padding=1, groups=2), (_r(2, 4, 7, 6), _r(6, 2, 3, 3), _r(6))),
    ("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
     lambda x, w, b: TF.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
     (_r(2, 3, 4, 4), _r(3, 5, 3, 3), _r(5))),
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, stride=2, padding=1), lambda x: TF.max_pool2d(x, 3, 2, 1),
     (_r(2, 3, 7, 7),)),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (5,), w, b), lambda x, w, b: TF.layer_norm(x, (5,), w, b),
     (_r(3, 4, 5), _r(5), _r(5))),
    ("gelu", lambda x: F.gelu(x), lambda x: TF.gelu(x), (_r(4, 5),)),
    ("log_softmax", lambda x: F.log_softmax(x, 1), lambda x: TF.log_softmax(x, 1), (_r(4, 5),)),
    ("linear", F.linear, TF.linear, (_r(3, 4), _r(2, 4), _r(2))),
]


@pytest.mark.parametrize("name,ours,theirs,args", CASES, ids=[c[0] for c in CASES])
def test_rule_matches_torch_autograd(name, ours, theirs, args):
    assert REGISTRY[name].vjp is not None
    leaves = [torch.tensor(a, requires_grad=True) for a in args]
    out = theirs(*leaves)
    g = _rng.standard_normal(tuple(out.shape))
    out.backward(torch.tensor(g))
    for mine, leaf in zip(_vjp(name, ours, args, g), leaves):
        np.testing.assert_allclose(mine, leaf.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_cross_entropy_matches_torch_autograd():
    logits, target = _r(6, 4), np.array([0, 3, 1, 1, -100, 2])
    leaf = torch.tensor(logits, requires_grad=True)
    loss = TF.cross_entropy(leaf, torch.tensor(target), label_smoothing=0.1)
    loss.backward()
    mine = _vjp("cross_entropy", lambda l, t: F.cross_entropy(l, t, label_smoothing=0.1), (logits, target),
                np.float64(1.0))
    np.testing.assert_allclose(mine[0], leaf.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert mine[1] is None
