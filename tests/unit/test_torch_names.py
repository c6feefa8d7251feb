"""PyTorch's spellings beside the array API's, checked against NumPy (runs without torch; the torch
cross-checks are in test_torch_names_torch.py)."""
import math

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

F = rt.nn.functional
_rng = np.random.default_rng(7)


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), bool))
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    w = _np_softmax(np.where(np.isneginf(s).all(-1, keepdims=True), 0, s))
    w = np.where(np.isneginf(s).all(-1, keepdims=True), 0, w)
    return w @ v


Q, K, V = _r(2, 3, 4, 8), _r(2, 3, 5, 8), _r(2, 3, 5, 8)
MASK = _rng.random((4, 5)) > 0.4
MASK[2] = False                 # a query that may attend nowhere: zeros, as PyTorch gives


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": MASK}, {"scale": 0.25},
                                    {"attn_mask": _r(4, 5)}], ids=["plain", "causal", "bool", "scale", "float"])
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_scaled_dot_product_attention_is_pytorchs(kwargs, static):
    """One output (not (out, weights)); a boolean mask's True means "may attend"."""
    mask = kwargs.get("attn_mask")
    expect = _np_sdpa(Q, K, V, mask, kwargs.get("is_causal", False), kwargs.get("scale"))
    ours = {k: rt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, **ours)
    fn = to_static(attend) if static else attend
    out = fn(rt.tensor(Q), rt.tensor(K), rt.tensor(V))
    assert isinstance(out, rt.Tensor)
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-5, atol=1e-6)


def test_scaled_dot_product_attention_refuses_mask_and_causal_together():
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(rt.tensor(Q), rt.tensor(K), rt.tensor(V), attn_mask=rt.tensor(MASK),
                                       is_causal=True)
