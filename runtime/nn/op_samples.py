"""Conformance samples for the nn ops: inputs plus a NumPy-only oracle for each.

They are attached to the nn ops' OpDefs as `example` (at the bottom: ops sit below nn). The registry-wide
conformance test (tests/unit/test_ops_conformance.py) runs each sample eagerly,
traced (static and dynamic batch) and after a JSON round trip, against the oracle.
The oracles are written independently of the kernels: direct formulas, loops over
kernel offsets and windows, `math.erf`. Nothing here runs unless a test asks.
"""
import math

import numpy as np

from . import functional as F
from .. import ops as rt_ops
from ..ops.registry import get_op

_rng = np.random.default_rng(2024)


def _rand(*shape, dtype=np.float32, scale=2.0):
    return (_rng.standard_normal(shape) * scale).astype(dtype)


def _sample(fn, *args, oracle, **options):
    kwargs = options.pop("kwargs", {})
    return dict(fn=fn, args=args, oracle=oracle, kwargs=kwargs, **options)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


# --- oracles ------------------------------------------------------------------------------

def _softmax(x, axis=-1):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def _log_softmax(x, axis=-1):
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


def _gelu(x, approximate="none"):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        return (0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))).astype(x.dtype)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x64 * (1 + erf(x64 / math.sqrt(2)))).astype(x.dtype)


def _linear(x, w, b=None):
    out = x.astype(np.float64) @ w.astype(np.float64).T
    return (out if b is None else out + b).astype(x.dtype)


def _conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    o, cg, kh, kw = w.shape
    if padding == "same":
        th, tw = dh * (kh - 1), dw * (kw - 1)
        pads = ((th // 2, th - th // 2), (tw // 2, tw - tw // 2))
    else:
        ph, pw = (0, 0) if padding == "valid" else _pair(padding)
        pads = ((ph, ph), (pw, pw))
    unbatched = x.ndim == 3
    xp = np.pad((x[None] if unbatched else x).astype(np.float64), ((0, 0), (0, 0)) + pads)
    n, _, h, wd = xp.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return (out[0] if unbatched else out).astype(x.dtype)


def _max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    k, p, d = _pair(kernel_size), _pair(padding), _pair(dilation)
    s = k if stride is None else _pair(stride)
    unbatched = x.ndim == 3
    x4 = x[None] if unbatched else x
    sizes = []
    for size, kk, ss, pp, dd in zip(x4.shape[2:], k, s, p, d):
        span = size + 2 * pp - dd * (kk - 1) - 1
        out = (-(-span // ss) if ceil_mode else span // ss) + 1
        if ceil_mode and (out - 1) * ss >= size + pp:
            out -= 1
        sizes.append(out)
    out = np.full(x4.shape[:2] + tuple(sizes), -np.inf)
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            for a in range(k[0]):
                for c in range(k[1]):
                    r, q = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + c * d[1]
                    if 0 <= r < x4.shape[2] and 0 <= q < x4.shape[3]:
                        out[:, :, i, j] = np.maximum(out[:, :, i, j], x4[:, :, r, q])
    return (out[0] if unbatched else out).astype(x.dtype)


def _layer_norm(x, normalized_shape, w=None, b=None, eps=1e-5):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    axes = tuple(range(x.ndim - k, x.ndim))
    x64 = x.astype(np.float64)
    out = (x64 - x64.mean(axes, keepdims=True)) / np.sqrt(x64.var(axes, keepdims=True) + eps)
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    return out.astype(x.dtype)


def _cross_entropy(logits, target, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    axis = 1 if logits.ndim > 1 else 0
    logp = np.moveaxis(_log_softmax(logits.astype(np.float64), axis), axis, -1)   # classes last
    classes = logp.shape[-1]
    if target.dtype.kind == "f":
        probs = target.astype(np.float64) * (1 - label_smoothing) + label_smoothing / classes
        loss = -(np.moveaxis(probs, axis, -1) * logp).sum(-1)
        total, count = loss.sum(), loss.size
    else:
        flat_logp, flat_t = logp.reshape(-1, classes), target.reshape(-1)
        loss = np.zeros(flat_t.shape)
        for i, c in enumerate(flat_t):
            if c != ignore_index:
                loss[i] = (1 - label_smoothing) * -flat_logp[i, c] - label_smoothing * flat_logp[i].mean()
        loss = loss.reshape(target.shape)
        total, count = loss.sum(), int((target != ignore_index).sum())
    if reduction == "none":
        return loss.astype(logits.dtype)
    return np.asarray(total if reduction == "sum" else total / count, dtype=logits.dtype)


# --- samples, by op ---------------------------------------------------------------------------

def _relu():
    return [_sample(F.relu, _rand(4, 3), oracle=lambda x: np.maximum(x, 0)),
            _sample(F.relu, _rand(5, dtype=np.float64), oracle=lambda x: np.maximum(x, 0)),
            _sample(F.relu, np.array([-3, 0, 2], np.int32), oracle=lambda x: np.maximum(x, 0))]


def _sigmoid():
    stable = lambda x: (0.5 * (1 + np.tanh(x.astype(np.float64) / 2))).astype(np.float32)  # noqa: E731
    return [_sample(F.sigmoid, _rand(4, 3, scale=30), oracle=stable, atol=1e-7),
            _sample(F.sigmoid, np.array([[-2, 0, 5]], np.int64), oracle=stable)]


def _gelu_samples():
    x = np.concatenate([_rand(3, 4), np.array([[-7.0, -3.5, 0.0, 4.0]], np.float32)])
    return [_sample(F.gelu, x, oracle=_gelu, rtol=1e-6, atol=1e-7),
            _sample(F.gelu, _rand(6, dtype=np.float64), oracle=_gelu, rtol=1e-10, atol=1e-11),
            _sample(F.gelu, x, kwargs={"approximate": "tanh"}, oracle=_gelu)]


def _softmax_samples():
    x = _rand(3, 4, 5, scale=5)
    return [_sample(F.softmax, x, oracle=_softmax),
            _sample(F.softmax, x, kwargs={"axis": 1}, oracle=_softmax),
            _sample(F.softmax, np.array([[1000.0, 1001.0]], np.float32), oracle=_softmax)]


def _log_softmax_samples():
    x = _rand(3, 4, 5, scale=5)
    return [_sample(F.log_softmax, x, oracle=_log_softmax),
            _sample(F.log_softmax, x, kwargs={"axis": 0}, oracle=_log_softmax, atol=1e-5)]


def _linear_samples():
    return [_sample(F.linear, _rand(4, 3), _rand(5, 3), _rand(5), oracle=_linear),
            _sample(F.linear, _rand(2, 4, 3), _rand(5, 3), oracle=_linear),
            _sample(F.linear, _rand(3), _rand(2, 3), _rand(2), oracle=_linear)]


def _conv2d_samples():
    x = _rand(2, 4, 7, 6)
    tol = dict(rtol=1e-4, atol=1e-4)
    return [_sample(F.conv2d, x, _rand(3, 4, 3, 3), _rand(3), oracle=_conv2d, **tol),
            _sample(F.conv2d, x, _rand(6, 2, 3, 2), _rand(6), oracle=_conv2d,
                    kwargs={"stride": 2, "padding": (1, 2), "groups": 2}, **tol),
            _sample(F.conv2d, x, _rand(3, 4, 2, 2), oracle=_conv2d,           # even kernel: uneven padding
                    kwargs={"dilation": (1, 3), "padding": "same"}, **tol),
            _sample(F.conv2d, _rand(4, 5, 5), _rand(2, 4, 3, 3), _rand(2), oracle=_conv2d, kwargs={"padding": 1},
                    **tol)]


def _conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The definition: every input pixel adds x * w[:, :, i, j] at (row * stride + i * dilation, ...)."""
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    unbatched = x.ndim == 3
    x = (x[None] if unbatched else x).astype(np.float64)
    n, c, h, wd = x.shape
    cin, og, kh, kw = w.shape
    ig = cin // groups
    out = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph, (wd - 1) * sw + dw * (kw - 1) + 1 + opw))
    for b_ in range(n):
        for ci in range(cin):
            g = ci // ig
            for r in range(h):
                for q in range(wd):
                    for i in range(kh):
                        for j in range(kw):
                            out[b_, g * og:(g + 1) * og, r * sh + i * dh, q * sw + j * dw] += \
                                x[b_, ci, r, q] * w[ci, :, i, j]
    out = out[:, :, ph:out.shape[2] - ph, pw:out.shape[3] - pw]
    if b is not None:
        out += b[None, :, None, None]
    return (out[0] if unbatched else out).astype(np.float32)


def _conv_transpose2d_samples():
    tol = dict(rtol=1e-4, atol=1e-4)
    return [_sample(F.conv_transpose2d, _rand(2, 4, 3, 3), _rand(4, 3, 3, 3), _rand(3), oracle=_conv_transpose2d,
                    **tol),
            _sample(F.conv_transpose2d, _rand(1, 4, 3, 2), _rand(4, 2, 2, 3), _rand(4), oracle=_conv_transpose2d,
                    kwargs={"stride": 2, "padding": (1, 0), "output_padding": 1, "groups": 2}, **tol),
            _sample(F.conv_transpose2d, _rand(4, 3, 3), _rand(4, 2, 3, 3), oracle=_conv_transpose2d,
                    kwargs={"dilation": 2, "padding": 1}, **tol)]


def _max_pool2d_samples():
    x = _rand(2, 3, 7, 8)
    return [_sample(F.max_pool2d, x, 2, oracle=_max_pool2d),
            _sample(F.max_pool2d, x, 3, kwargs={"stride": 2, "padding": 1}, oracle=_max_pool2d),
            _sample(F.max_pool2d, x, (3, 2), kwargs={"stride": (2, 1), "dilation": (2, 1), "ceil_mode": True},
                    oracle=_max_pool2d),
            _sample(F.max_pool2d, x, 2, kwargs={"padding": 1, "ceil_mode": True}, oracle=_max_pool2d),
            _sample(F.max_pool2d, np.arange(2 * 5 * 5, dtype=np.int32).reshape(2, 5, 5) - 30, 2,
                    kwargs={"padding": 1}, oracle=_max_pool2d)]


def _layer_norm_samples():
    x = _rand(2, 3, 4) + 1
    return [_sample(F.layer_norm, x, 4, _rand(4), _rand(4), oracle=_layer_norm, rtol=1e-4, atol=1e-5),
            _sample(F.layer_norm, x, (3, 4), oracle=_layer_norm, rtol=1e-4, atol=1e-5),
            _sample(F.layer_norm, x, 4, kwargs={"eps": 0.5}, oracle=_layer_norm, rtol=1e-4, atol=1e-5)]


def _dropout_samples():
    def each_kept_or_zero(x, p=0.5):
        d = F.dropout(x, p)
        return rt_ops.logical_or(rt_ops.equal(d, 0), rt_ops.less(rt_ops.abs(d - x / (1 - p)), 1e-5))
    ones = np.ones((4, 6), np.float32)
    return [_sample(F.dropout, _rand(3, 4), 1.0, oracle=lambda x, p: np.zeros_like(x)),
            _sample(each_kept_or_zero, _rand(5, 6), oracle=lambda x: np.ones(x.shape, bool)),
            _sample(lambda x: F.dropout(x, 0.25) * 0, ones, oracle=lambda x: np.zeros_like(x))]


def _cross_entropy_samples():
    logits = _rand(6, 5)
    target = np.array([0, 4, 2, -100, 1, 3])
    probs = _softmax(_rand(6, 5))
    return [_sample(F.cross_entropy, logits, target, oracle=_cross_entropy),
            _sample(F.cross_entropy, logits, target, kwargs={"reduction": "sum"}, oracle=_cross_entropy),
            _sample(F.cross_entropy, logits, target, kwargs={"reduction": "none", "label_smoothing": 0.2},
                    oracle=_cross_entropy),
            _sample(F.cross_entropy, logits, probs, oracle=_cross_entropy),
            _sample(F.cross_entropy, _rand(2, 5, 3), np.array([[0, 1, 4], [2, 2, 3]]),
                    kwargs={"reduction": "none"}, oracle=_cross_entropy),
            _sample(F.cross_entropy, _rand(5), np.array(3), oracle=_cross_entropy)]


def _embedding_samples():
    w = _rand(10, 4)
    return [_sample(F.embedding, np.array([[1, 9, 0], [3, 3, 7]]), w, oracle=lambda ids, w: w[ids]),
            _sample(F.embedding, np.array([5], np.int32), w, oracle=lambda ids, w: w[ids])]


SAMPLES = {
    "relu": _relu, "sigmoid": _sigmoid, "gelu": _gelu_samples, "softmax": _softmax_samples,
    "log_softmax": _log_softmax_samples, "linear": _linear_samples, "conv2d": _conv2d_samples,
    "conv_transpose2d": _conv_transpose2d_samples,
    "max_pool2d": _max_pool2d_samples, "layer_norm": _layer_norm_samples, "dropout": _dropout_samples,
    "cross_entropy": _cross_entropy_samples, "embedding": _embedding_samples,
}

for _name, _make in SAMPLES.items():
    get_op(_name).example = _make
