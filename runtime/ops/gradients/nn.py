"""Gradient rules of the neural-network ops (runtime/ops/nn_ops.py) written with runtime ops."""
import math

import numpy as np

from ..dispatch import apply
from ..nn_ops import _relu_grad, log_softmax
from ..registry import facet
from .indexing import scatter_rows
from .support import cast_like, count, rt, takes_gradient, unbroadcast


@facet("relu", "vjp")
def _relu_vjp(g, inputs, outputs):
    """One `relu_grad` op, g where x > 0: `where` on a convolution's batch-last results took ~1 ms a
    CNN step (see nn_ops.masked)."""
    (x,) = inputs
    return (apply(_relu_grad, (g, x), {}) if takes_gradient(x) else None,)


@facet("relu_grad", "vjp")
def _relu_grad_vjp(gg, inputs, outputs):
    """Linear in g (the same mask); x only picks the mask."""
    g, x = inputs
    return (apply(_relu_grad, (gg, x), {}) if takes_gradient(g) else None), None


def _relu_grad_samples():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    x[0, :2] = 0.0, np.nan
    g = rng.standard_normal((4, 3)).astype(np.float32)
    g[1, :] = -0.0, np.inf, np.nan
    oracle = lambda g, x: np.where(x > 0, g, np.zeros((), g.dtype))  # noqa: E731
    fn = lambda g, x: apply(_relu_grad, (g, x), {})  # noqa: E731
    return [dict(fn=fn, args=(g, x), oracle=oracle),
            dict(fn=fn, args=(g.astype(np.float64), x.astype(np.float64)), oracle=oracle),
            dict(fn=fn, args=(g[2:, :2], np.array([[1, -2], [0, 3]], np.int64)), oracle=oracle)]


_relu_grad.example = _relu_grad_samples


@facet("sigmoid", "vjp")
def _sigmoid_vjp(g, inputs, outputs):
    (x,) = inputs
    return (cast_like(g * outputs * (1.0 - outputs), x) if takes_gradient(x) else None,)


_SQRT_HALF = 1 / math.sqrt(2.0)
_INV_SQRT_2PI = 1 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@facet("gelu", "vjp")
def _gelu_vjp(g, inputs, outputs, approximate="none"):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        t = rt.tanh(inner)
        slope = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * x * x)
    else:
        cdf = 0.5 * (1.0 + rt.astype(rt.erf(x * _SQRT_HALF), x.dtype))
        slope = cdf + x * rt.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return (cast_like(g * slope, x),)


@facet("softmax", "vjp")
def _softmax_vjp(g, inputs, outputs, axis=-1):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    y = outputs
    return (cast_like(y * (g - rt.sum(g * y, axis=axis, keepdims=True)), x),)


@facet("log_softmax", "vjp")
def _log_softmax_vjp(g, inputs, outputs, axis=-1):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    return (cast_like(g - rt.exp(outputs) * rt.sum(g, axis=axis, keepdims=True), x),)


@facet("linear", "vjp")
def _linear_vjp(g, inputs, outputs):
    x, weight, bias = inputs
    gx = rt.matmul(g, weight) if takes_gradient(x) else None
    gw = gb = None
    rows = rt.reshape(g, (-1, rt.shape(weight)[0]))
    if takes_gradient(weight):
        gw = rt.matmul(rt.permute_dims(rows, (1, 0)), rt.reshape(x, (-1, rt.shape(weight)[1])))
    if takes_gradient(bias):
        gb = rt.sum(rows, axis=0)
    return gx, gw, gb


@facet("cross_entropy", "vjp")
def _cross_entropy_vjp(g, inputs, outputs, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    """d loss / d logits = softmax * (total target mass) - target, per sample, times that sample's
    cotangent (g itself, or g spread evenly under "sum"/"mean")."""
    logits, target = inputs
    axis = 1 if logits.ndim > 1 else 0
    classes = count(logits, axis)          # a number of logits' dtype when unknown while tracing
    logp = log_softmax(logits, axis)
    p = rt.exp(logp)
    if target.dtype.kind == "f":
        smooth = target * (1.0 - label_smoothing) + label_smoothing / classes if label_smoothing else target
        per_sample = _per_sample(g, reduction, count(logits, None) / classes, axis)
        glogits = per_sample * (p * rt.sum(smooth, axis=axis, keepdims=True) - smooth)
        gtarget = None
        if takes_gradient(target):
            gtarget = per_sample * (-(1.0 - label_smoothing)) * logp
        return cast_like(glogits, logits), gtarget
    valid = rt.not_equal(target, ignore_index)
    safe = rt.where(valid, target, 0)
    iota = rt.reshape(rt.arange(rt.shape(logits)[axis]), (-1,) + (1,) * (logits.ndim - axis - 1))
    picked = rt.astype(rt.equal(rt.expand_dims(safe, axis), iota), logits.dtype)
    glogits = p - (1.0 - label_smoothing) * picked - label_smoothing / classes
    glogits = rt.where(rt.expand_dims(valid, axis), glogits, 0)
    n = rt.sum(rt.astype(valid, logits.dtype))
    per_sample = _per_sample(g, reduction, rt.maximum(n, 1.0), axis)
    return cast_like(glogits * per_sample, logits), None


def _per_sample(g, reduction, n, axis):
    """The cotangent of each sample's loss, with a class axis to broadcast over the logits."""
    if reduction == "none":
        return rt.expand_dims(g, axis)
    return g / n if reduction == "mean" else g


@facet("embedding", "vjp")
def _embedding_vjp(g, inputs, outputs):
    """Rows picked by ids get g added back (ids repeating a row add up): embedding is weight[ids]."""
    ids, weight = inputs
    return None, (scatter_rows(g, weight, ids) if takes_gradient(weight) else None)


@facet("dropout", "vjp")
def _dropout_vjp(g, inputs, outputs, p):
    """Kept elements pass g / (1 - p). The mask is read off the output (nonzero = kept), so an
    input element that is exactly 0 passes no gradient; the mask is not stored separately."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    if p >= 1:
        return (rt.zeros_like(g),)
    return (rt.where(rt.not_equal(outputs, 0), g * (1.0 / (1.0 - p)), 0),)


@facet("layer_norm", "vjp")
def _layer_norm_vjp(g, inputs, outputs, normalized_shape, eps):
    x, weight, bias = inputs
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    n = count(x, axes)
    centered = x - rt.mean(x, axis=axes, keepdims=True)
    inv_std = rt.reciprocal(rt.sqrt(rt.mean(centered * centered, axis=axes, keepdims=True) + eps))
    normed = centered * inv_std
    gn = g * weight if weight is not None else g
    gx = None
    if takes_gradient(x):
        gx = inv_std * (gn - rt.sum(gn, axis=axes, keepdims=True) / n
                        - normed * rt.sum(gn * normed, axis=axes, keepdims=True) / n)
    gw = unbroadcast(g * normed, weight) if takes_gradient(weight) else None
    gb = unbroadcast(g, bias) if takes_gradient(bias) else None
    return gx, gw, gb
