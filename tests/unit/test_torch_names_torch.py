"""PyTorch's spellings against torch itself, on the same inputs, gradients too where the op is
differentiable (an optional cross-check: skipped without PyTorch, which CI does not install)."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

torch = pytest.importorskip("torch")
F = rt.nn.functional
TF = torch.nn.functional
_rng = np.random.default_rng(11)


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _leaves(arrays, grad):
    ours = [rt.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    return ours, theirs


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(ours_fn, torch_fn, *arrays, grad=True, static=False, atol=1e-5):
    """Same values (and, for float leaves, same gradients of a random cotangent) from both."""
    ours, theirs = _leaves(arrays, grad)
    fn = to_static(ours_fn) if static else ours_fn
    got, want = _flat(fn(*ours)), _flat(torch_fn(*theirs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w_np = w.detach().numpy() if isinstance(w, torch.Tensor) else np.asarray(w)
        g_np = g.numpy() if isinstance(g, rt.Tensor) else np.asarray(g)
        assert g_np.shape == w_np.shape, (g_np.shape, w_np.shape)
        np.testing.assert_allclose(g_np, w_np, rtol=1e-5, atol=atol)
    if not grad or static:
        return
    pairs = [(g, w) for g, w in zip(got, want) if isinstance(w, torch.Tensor) and w.requires_grad]
    if not pairs:
        return
    total_ours, total_theirs = 0, 0
    for g, w in pairs:
        c = _rng.standard_normal(tuple(w.shape)).astype(np.float32)
        total_ours = total_ours + (g * rt.tensor(c)).sum()
        total_theirs = total_theirs + (w * torch.tensor(c)).sum()
    total_ours.backward()
    total_theirs.backward()
    for o, t in zip(ours, theirs):
        if t.requires_grad:
            expect = np.zeros(t.shape, np.float32) if t.grad is None else t.grad.numpy()
            got_grad = np.zeros(o.shape, np.float32) if o.grad is None else o.grad.numpy()
            np.testing.assert_allclose(got_grad, expect, rtol=1e-4, atol=1e-5)


# --- nn.functional.scaled_dot_product_attention ---------------------------------------------------

Q, K, V = _r(2, 3, 4, 8), _r(2, 3, 5, 8), _r(2, 3, 5, 8)
MASK = _rng.random((4, 5)) > 0.4
MASK[1] = False


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": MASK}, {"scale": 0.3},
                                    {"attn_mask": _r(4, 5)}], ids=["plain", "causal", "bool", "scale", "float"])
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_scaled_dot_product_attention(kwargs, static):
    def ours(q, k, v):
        kw = {n: rt.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
        return F.scaled_dot_product_attention(q, k, v, **kw)

    def theirs(q, k, v):
        kw = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
        return TF.scaled_dot_product_attention(q, k, v, **kw)
    check(ours, theirs, Q, K, V, static=static)


def test_scaled_dot_product_attention_grouped_query():
    q, k, v = _r(2, 4, 3, 8), _r(2, 2, 5, 8), _r(2, 2, 5, 8)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
          lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v)
