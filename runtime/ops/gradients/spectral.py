"""Gradient rules of the spectral ops (runtime/ops/spectral.py).

Complex cotangents follow PyTorch: for a real loss L, the cotangent of a complex value z
is dL/dRe(z) + i dL/dIm(z). Every transform is linear, so its rule is its adjoint: the
opposite transform with the dual normalization (a padded input's adjoint is cut back to
the input's length, a cut one's is padded with zeros); a half spectrum (rfft) is the
full one's first n//2 + 1 bins, and irfft counts each bin but the first and the
Nyquist bin twice (it stands for its mirror image too).
"""
from ..dispatch import apply
from ..registry import facet, get_op
from .support import cast_like, nondifferentiable, rt, takes_gradient

nondifferentiable("fftfreq")

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_REAL = {"complex64": "float32", "complex128": "float64"}
_INVERSE = {"fft": "ifft", "ifft": "fft", "fftn": "ifftn", "ifftn": "fftn"}


def _transform(x, kind, axes, norm, n=None):
    many = kind.endswith("n")
    return apply(get_op("fft"), (x,), {"kind": kind, "n": None if n is None else (tuple(n) if many else n[0]),
                                       "axes": tuple(axes), "norm": norm})


def _fit(g, axis, length):
    """g along `axis` cut or zero-padded to `length` (the adjoint of the forward's pad or cut)."""
    have = rt.shape(g)[axis]
    if isinstance(have, int) and isinstance(length, int):
        if have >= length:
            return g if have == length else g[(slice(None),) * axis + (slice(0, length),)]
        widths = [(0, 0)] * g.ndim
        widths[axis] = (0, length - have)
        return rt.pad(g, widths)
    shape = list(rt.shape(g))
    shape[axis] = rt.maximum(length - have, 0)
    longer = rt.concat([g, rt.zeros(tuple(shape), dtype=g.dtype)], axis=axis)
    return longer[(slice(None),) * axis + (slice(0, length),)]


def _lengths(x, axes, n):
    """The transform length along each axis: n where given, else x's own."""
    sizes = n if isinstance(n, (list, tuple)) else [n] * len(axes)
    return [rt.shape(x)[a] if m is None else m for a, m in zip(axes, sizes)]


def _complex_adjoint(g, x, kind, axes, norm, n):
    """fft/ifft/fftn/ifftn: the opposite transform, dual norm, over the transform lengths."""
    back = _transform(g, _INVERSE[kind], axes, _DUAL[norm])
    for a in axes:
        back = _fit(back, a, rt.shape(x)[a])
    return back


def _rfft_adjoint(g, x, axes, norm, n):
    """rfft(n): the full spectrum's first bins; its adjoint zero-fills the rest, then inverts."""
    lengths = _lengths(x, axes, n)
    full = _fit(g, axes[-1], lengths[-1])
    back = _transform(full, "ifftn" if len(axes) > 1 else "ifft", axes, _DUAL[norm])
    for a in axes:
        back = _fit(back, a, rt.shape(x)[a])
    return rt.real(back)


def _irfft_adjoint(g, x, axes, norm, n):
    """irfft(n) of a half spectrum: its adjoint is the dual rfft, interior bins doubled."""
    sizes = n if isinstance(n, (list, tuple)) else [n] * len(axes)
    last = sizes[-1] if sizes[-1] is not None else 2 * (rt.shape(x)[axes[-1]] - 1)
    back = _transform(g, "rfftn" if len(axes) > 1 else "rfft", axes, _DUAL[norm])
    bins = rt.arange(rt.shape(back)[axes[-1]])
    interior = rt.logical_and(rt.greater(bins, 0), rt.less(bins * 2, last))
    weights = rt.astype(interior, _REAL[back.dtype.name]) + 1.0            # 2 inside, 1 at the ends
    back = back * rt.reshape(weights, (-1,) + (1,) * (back.ndim - 1 - axes[-1]))
    for a in axes:
        back = _fit(back, a, rt.shape(x)[a])
    return back


@facet("fft", "vjp")
def _fft_vjp(g, inputs, outputs, kind, n=None, axes=(-1,), norm="backward"):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    axes = [a % x.ndim for a in axes]
    if kind in _INVERSE:
        back = _complex_adjoint(g, x, kind, axes, norm, n)
    elif kind in ("rfft", "rfftn"):
        back = _rfft_adjoint(g, x, axes, norm, n)
    elif kind in ("irfft", "irfftn"):
        back = _irfft_adjoint(g, x, axes, norm, n)
    elif kind == "hfft":             # NumPy: irfft of conj(x) with the opposite normalization
        back = rt.conj(_irfft_adjoint(g, x, axes, _DUAL[norm], n))
    else:                            # ihfft: conj of rfft with the opposite normalization
        back = _rfft_adjoint(rt.conj(g), x, axes, _DUAL[norm], n)
    return (cast_like(rt.real(back) if x.dtype.kind != "c" else back, x),)


@facet("fftshift", "vjp")
def _fftshift_vjp(g, inputs, outputs, axes=None, inverse=False):
    """A shift is undone by the opposite shift."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    return (apply(get_op("fftshift"), (g,), {"axes": axes, "inverse": not inverse}),)
