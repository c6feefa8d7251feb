"""The array API's `fft` extension: discrete Fourier transforms as one op, `fft(x, kind=...)`.

Every transform is NumPy's (`numpy.fft` / `cupy.fft`) of the same name, so one
op with the transform's name as an attr covers all ten; the result dtype is
what NumPy gives for that input dtype (float32 stays single precision).
"""
import numpy as np

from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, dtype_of, norm_axes, shape_of

ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
MANY_AXES = ("fftn", "ifftn", "rfftn", "irfftn")
_NORMS = ("backward", "ortho", "forward")
_DTYPES = {}


def _result_dtype(kind, dtype):
    key = (kind, dtype)
    if key not in _DTYPES:
        probe = np.ones((4,) * (2 if kind in MANY_AXES else 1), dtype)
        _DTYPES[key] = getattr(np.fft, kind)(probe).dtype
    return _DTYPES[key]


def _out_len(kind, size, n):
    """The transformed axis' length for input length `size` (-1 unknown) and requested length n."""
    if kind in ("rfft", "ihfft", "rfftn"):
        m = n if n is not None else size
        return -1 if m == -1 else m // 2 + 1
    if kind in ("irfft", "hfft", "irfftn"):
        if n is not None:
            return n
        return -1 if size == -1 else 2 * (size - 1)
    return n if n is not None else size


def _fft_infer(x, kind, n=None, axes=(-1,), norm="backward"):
    if kind not in ONE_AXIS + MANY_AXES:
        raise ValueError(f"fft: unknown transform {kind!r}")
    if norm not in _NORMS:
        raise ValueError(f"fft.{kind}: norm must be one of {', '.join(_NORMS)}, got {norm!r}")
    shape = list(shape_of(x))
    axes = [norm_axes(a, len(shape))[0] for a in axes]
    sizes = n if isinstance(n, (list, tuple)) else [n] * len(axes)
    if len(sizes) != len(axes):
        raise ValueError(f"fft.{kind}: s and axes differ in length")
    for i, (a, m) in enumerate(zip(axes, sizes)):
        last = i == len(axes) - 1
        shape[a] = _out_len(kind if last or kind in ONE_AXIS else "fft", shape[a], m)
    return Spec(tuple(shape), _result_dtype(kind, dtype_of(x)))


def _fft_kernel(xp, x, kind, n=None, axes=(-1,), norm="backward"):
    fn = getattr(xp.fft, kind)
    if kind in ONE_AXIS:
        return fn(x, n=n, axis=axes[0], norm=norm)
    return fn(x, s=None if n is None else list(n), axes=list(axes), norm=norm)


def _samples():
    rng = np.random.default_rng(9)
    real = rng.standard_normal((3, 8)).astype(np.float32)
    cplx = (real + 1j * rng.standard_normal((3, 8))).astype(np.complex64)
    r64 = real.astype(np.float64)
    return [
        dict(fn=lambda a: fft(a), args=(cplx,), oracle=np.fft.fft, rtol=1e-4, atol=1e-5),
        dict(fn=lambda a: ifft(a, n=5, axis=0, norm="ortho"), args=(cplx,),
             oracle=lambda a: np.fft.ifft(a, n=5, axis=0, norm="ortho"), rtol=1e-4, atol=1e-5, dynamic=False),
        dict(fn=lambda a: rfft(a), args=(r64,), oracle=np.fft.rfft, rtol=1e-10),
        dict(fn=lambda a: irfft(a), args=(cplx,), oracle=np.fft.irfft, rtol=1e-4, atol=1e-5),
        dict(fn=lambda a: hfft(a, n=6), args=(cplx,), oracle=lambda a: np.fft.hfft(a, n=6), rtol=1e-4, atol=1e-4),
        dict(fn=lambda a: ihfft(a), args=(real,), oracle=np.fft.ihfft, rtol=1e-4, atol=1e-5),
        dict(fn=lambda a: fftn(a), args=(cplx,), oracle=np.fft.fftn, rtol=1e-4, atol=1e-4),
        dict(fn=lambda a: ifftn(a, s=(2, 4), norm="forward"), args=(cplx,),
             oracle=lambda a: np.fft.ifftn(a, s=(2, 4), axes=(0, 1), norm="forward"), rtol=1e-4, atol=1e-4,
             dynamic=False),
        dict(fn=lambda a: rfftn(a), args=(real,), oracle=np.fft.rfftn, rtol=1e-4, atol=1e-4),
        dict(fn=lambda a: irfftn(a, s=(3, 6)), args=(cplx,), oracle=lambda a: np.fft.irfftn(a, s=(3, 6), axes=(0, 1)),
             rtol=1e-4, atol=1e-4, dynamic=False),
    ]


_fft = register(OpDef("fft", _fft_kernel, _fft_infer, example=_samples))


def _one_axis(kind):
    def transform(x, /, *, n=None, axis=-1, norm="backward"):
        return apply(_fft, (x,), {"kind": kind, "n": None if n is None else int(n), "axes": (int(axis),),
                                  "norm": norm})
    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = f"numpy.fft.{kind} along one axis (n: the transform's length)."
    return transform


def _many_axes(kind):
    def transform(x, /, *, s=None, axes=None, norm="backward"):
        ndim = len(shape_of(x))
        if axes is None:
            axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
        return apply(_fft, (x,), {"kind": kind, "n": None if s is None else tuple(int(d) for d in s),
                                  "axes": tuple(int(a) for a in axes), "norm": norm})
    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = f"numpy.fft.{kind} over `axes` (all by default; s: the transform's lengths)."
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = (_one_axis(k) for k in ONE_AXIS)
fftn, ifftn, rfftn, irfftn = (_many_axes(k) for k in MANY_AXES)


# --- frequencies and shifts -----------------------------------------------------------------

def _freq_infer(n, d=1.0, real=False, dtype="float32"):
    return Spec((n // 2 + 1 if real else n,), np.dtype(dtype))


def _freq_kernel(xp, n, d=1.0, real=False, dtype="float32"):
    return (xp.fft.rfftfreq if real else xp.fft.fftfreq)(n, d).astype(dtype)


_freq = register(OpDef("fftfreq", _freq_kernel, _freq_infer, example=lambda: [
    dict(fn=lambda: fftfreq(8, d=0.5), args=(), oracle=lambda: np.fft.fftfreq(8, 0.5).astype(np.float32)),
    dict(fn=lambda: rfftfreq(7, dtype="float64"), args=(), oracle=lambda: np.fft.rfftfreq(7))]))


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Sample frequencies of an n-point DFT with sample spacing d."""
    return apply(_freq, (), {"n": int(n), "d": float(d), "real": False,
                             "dtype": np.dtype(dtype or np.float32).name}, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Sample frequencies of an n-point real DFT (n // 2 + 1 of them)."""
    return apply(_freq, (), {"n": int(n), "d": float(d), "real": True,
                             "dtype": np.dtype(dtype or np.float32).name}, device)


def _shift_infer(x, axes=None, inverse=False):
    if axes is not None:
        norm_axes(axes, len(shape_of(x)))
    return Spec(shape_of(x), dtype_of(x))


def _shift_kernel(xp, x, axes=None, inverse=False):
    return (xp.fft.ifftshift if inverse else xp.fft.fftshift)(x, axes=axes)


_shift = register(OpDef("fftshift", _shift_kernel, _shift_infer, example=lambda: [
    dict(fn=lambda a: fftshift(a), args=(np.arange(12, dtype=np.float32).reshape(3, 4),), oracle=np.fft.fftshift),
    dict(fn=lambda a: ifftshift(a, axes=1), args=(np.arange(10, dtype=np.int64).reshape(2, 5),),
         oracle=lambda a: np.fft.ifftshift(a, axes=1))]))


def fftshift(x, /, *, axes=None):
    """The zero-frequency term moved to the centre."""
    return apply(_shift, (x,), {"axes": _axes(axes), "inverse": False})


def ifftshift(x, /, *, axes=None):
    return apply(_shift, (x,), {"axes": _axes(axes), "inverse": True})


def _axes(axes):
    if axes is None or isinstance(axes, int):
        return axes
    return tuple(int(a) for a in axes)

