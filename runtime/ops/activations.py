"""More elementwise math that model code uses: erf, erfinv, softplus, silu, leaky_relu, elu, and logsumexp.

Each is one op computed without overflow (softplus and logsumexp never
exponentiate a large positive number), in the input's float dtype; integer
inputs compute in float32, as the other activations do.
"""
import math

import numpy as np

from .dispatch import apply
from .nn_ops import _float_array, _float_result, erf_kernel
from .registry import OpDef, register
from .rules import Spec, dtype_of, norm_axes, shape_of
from .samples import sample_array


def _rand(shape, dtype="float32", lo=-4.0, hi=4.0):     # activations are sampled well into both tails
    return sample_array(shape, dtype, lo, hi)


def _activation(name, kernel, oracle, domain=(-4.0, 4.0), rtol64=1e-12, **attrs_samples):
    def infer(x, **attrs):
        return Spec(shape_of(x), _float_result(name, dtype_of(x)))

    def samples():
        public = ACTIVATION_FUNCTIONS[name]
        lo, hi = domain
        cases = [dict(fn=public, args=(_rand((3, 4), lo=lo, hi=hi),), oracle=oracle, rtol=1e-5, atol=1e-6),
                 dict(fn=public, args=(_rand((5,), "float64", lo * 7.5, hi * 7.5) if domain == (-4.0, 4.0) else
                                       _rand((5,), "float64", lo, hi),), oracle=oracle, rtol=rtol64, atol=rtol64)]
        for kwargs in attrs_samples.get("kwargs", ()):
            cases.append(dict(fn=lambda a, kw=kwargs: public(a, **kw), args=(_rand((2, 3)),),
                              oracle=lambda a, kw=kwargs: oracle(a, **kw), rtol=1e-5, atol=1e-6))
        return cases
    return register(OpDef(name, kernel, infer, elementwise=True, example=samples))


# --- kernels (xp = numpy or cupy) and their NumPy oracles ---------------------------------------

def _erf_kernel(xp, x):
    x = _float_array(xp, x)
    return erf_kernel(xp, x).astype(x.dtype, copy=False)


def _np_erf(a):
    return np.vectorize(math.erf, otypes=[np.float64])(a).astype(a.dtype)


# Giles' single-precision erfinv ("Approximating the erfinv function", 2010): the start of Newton's method
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv_kernel(xp, x):
    """y with erf(y) = x in float64: Giles' approximation, then Newton steps on erf; +-inf at +-1, NaN
    outside [-1, 1]. The relative error is below 1e-9 for |x| < 1 - 1e-8 (erf_kernel's own error bounds it)
    and float32's rounding anywhere."""
    x = _float_array(xp, x)
    z = xp.asarray(x, dtype=np.float64)
    inside = xp.abs(z) < 1
    safe = xp.where(inside, z, 0.0)
    w = -xp.log((1.0 - safe) * (1.0 + safe))
    central, tail = w - 2.5, xp.sqrt(w) - 3.0
    pc, pt = xp.zeros_like(w), xp.zeros_like(w)
    for a, b in zip(_ERFINV_CENTRAL, _ERFINV_TAIL):
        pc, pt = pc * central + a, pt * tail + b
    y = xp.where(w < 5.0, pc, pt) * safe
    refine = w < 20.0      # nearer to +-1 erf(y) - x loses its digits, and the start is as good as float64 gets
    for _ in range(2):
        step = (erf_kernel(xp, y) - safe) / (1.1283791670955126 * xp.exp(-y * y))
        y = y - xp.where(refine, step, 0.0)
    y = xp.where(inside, y, xp.where(xp.abs(z) == 1, xp.copysign(xp.inf, z), xp.nan))
    return y.astype(x.dtype, copy=False)


def _np_erfinv(a):
    def one(v):
        if v == 0:
            return 0.0
        if abs(v) >= 1:
            return math.copysign(math.inf, v) if abs(v) == 1 else math.nan
        lo, hi = -6.0, 6.0
        for _ in range(200):         # bisection on math.erf: slow and sure
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return (lo + hi) / 2
    return np.vectorize(one, otypes=[np.float64])(a).astype(a.dtype)


def _softplus_kernel(xp, x, beta=1.0, threshold=20.0):
    x = _float_array(xp, x)
    z = x * beta
    # log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|)); above the threshold it is z itself (PyTorch's rule)
    out = (xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))) / beta
    return xp.where(z > threshold, x, out).astype(x.dtype, copy=False)


def _np_softplus(a, beta=1.0, threshold=20.0):
    z = a.astype(np.float64) * beta
    out = np.where(z > threshold, a, np.logaddexp(0, z) / beta)
    return out.astype(a.dtype)


def _silu_kernel(xp, x):
    x = _float_array(xp, x)
    e = xp.exp(-xp.abs(x))
    sig = xp.where(x >= 0, 1 / (1 + e), e / (1 + e))
    return (x * sig).astype(x.dtype, copy=False)


def _np_silu(a):
    a64 = a.astype(np.float64)
    return (a64 / (1 + np.exp(-a64))).astype(a.dtype)


def _leaky_relu_kernel(xp, x, negative_slope=0.01):
    x = _float_array(xp, x)
    return xp.where(x >= 0, x, x * negative_slope).astype(x.dtype, copy=False)


def _np_leaky_relu(a, negative_slope=0.01):
    return np.where(a >= 0, a, a * np.asarray(negative_slope, a.dtype)).astype(a.dtype)


def _elu_kernel(xp, x, alpha=1.0):
    x = _float_array(xp, x)
    return xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, 0))).astype(x.dtype, copy=False)


def _np_elu(a, alpha=1.0):
    return np.where(a > 0, a, alpha * np.expm1(np.minimum(a, 0).astype(np.float64))).astype(a.dtype)


_erf = _activation("erf", _erf_kernel, _np_erf)
_erfinv = _activation("erfinv", _erfinv_kernel, _np_erfinv, domain=(-0.999, 0.999), rtol64=1e-9)
_softplus = _activation("softplus", _softplus_kernel, _np_softplus, kwargs=({"beta": 2.0, "threshold": 3.0},))
_silu = _activation("silu", _silu_kernel, _np_silu)
_leaky_relu = _activation("leaky_relu", _leaky_relu_kernel, _np_leaky_relu, kwargs=({"negative_slope": 0.2},))
_elu = _activation("elu", _elu_kernel, _np_elu, kwargs=({"alpha": 0.5},))


def erf(x):
    """The error function, elementwise."""
    return apply(_erf, (x,), {})


def erfinv(x):
    """The inverse error function, elementwise (x in [-1, 1])."""
    return apply(_erfinv, (x,), {})


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear above `threshold` (torch.nn.functional.softplus)."""
    return apply(_softplus, (x,), {"beta": float(beta), "threshold": float(threshold)})


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    return apply(_silu, (x,), {})


def leaky_relu(x, negative_slope=0.01):
    return apply(_leaky_relu, (x,), {"negative_slope": float(negative_slope)})


def elu(x, alpha=1.0):
    return apply(_elu, (x,), {"alpha": float(alpha)})


# --- logsumexp ------------------------------------------------------------------------------------

def _logsumexp_infer(x, axis=None, keepdims=False):
    shape = shape_of(x)
    axes = norm_axes(axis, len(shape))
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    return Spec(out, _float_result("logsumexp", dtype_of(x)))


def _logsumexp_kernel(xp, x, axis=None, keepdims=False):
    x = _float_array(xp, x)
    top = xp.max(x, axis=axis, keepdims=True)
    top = xp.where(xp.isfinite(top), top, 0)         # all -inf (or an inf) along the axis: no shift
    out = xp.log(xp.sum(xp.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else xp.squeeze(out, axis=axis)


def _np_logsumexp(a, axis=None, keepdims=False):
    a64 = a.astype(np.float64)
    top = np.max(a64, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a64 - top), axis=axis, keepdims=True)) + top
    return (out if keepdims else np.squeeze(out, axis=axis)).astype(a.dtype)


_logsumexp = register(OpDef("logsumexp", _logsumexp_kernel, _logsumexp_infer, example=lambda: [
    dict(fn=lambda a: logsumexp(a), args=(_rand((3, 4), lo=-50, hi=80),), oracle=_np_logsumexp, rtol=1e-5),
    dict(fn=lambda a: logsumexp(a, axis=1, keepdims=True), args=(_rand((3, 4), "float64", -500, 900),),
         oracle=lambda a: _np_logsumexp(a, axis=1, keepdims=True), rtol=1e-12),
    dict(fn=lambda a: logsumexp(a, axis=(0, 2)), args=(_rand((2, 3, 2)),),
         oracle=lambda a: _np_logsumexp(a, axis=(0, 2)), rtol=1e-5)]))


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over axis, without overflow."""
    if axis is not None and not isinstance(axis, (int, np.integer)):
        axis = tuple(int(a) for a in axis)
    return apply(_logsumexp, (x,), {"axis": None if axis is None else axis, "keepdims": bool(keepdims)})


ACTIVATION_FUNCTIONS = {f.__name__: f for f in (erf, erfinv, softplus, silu, leaky_relu, elu, logsumexp)}
