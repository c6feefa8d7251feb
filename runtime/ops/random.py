"""Random arrays (`rand`, `randn`, `randint`, `randperm`, `rand_like`, `randn_like`), as PyTorch and Paddle
name them, drawn from the generator `rt.seed(n)` resets.

Each is an op marked `random`: impure, so no pass folds, merges or hoists it, and a Program draws new
numbers on every run, as the eager call does on every call. On the GPU a draw seeds CuPy's generator
from ours, so `rt.seed` makes GPU draws reproducible too.
"""
import numpy as np

from ..dtypes import DEFAULT_FLOAT, DEFAULT_INT, as_dtype
from ..rng import default_rng
from ..tracer import Tracer
from .creation import _concrete, _dims, _static
from .dispatch import apply
from .manipulation import dim
from .registry import defop
from .rules import Spec, shape_of

_RANDOM = {"pure": False, "random": True, "differentiable": False}


def _device_rng(xp):
    """CuPy's generator, seeded from ours (one draw of it), or ours on NumPy."""
    rng = default_rng()
    return rng if xp is np else xp.random.RandomState(int(rng.integers(2 ** 63)))


def _float_spec(*dims, dtype):
    return Spec(_static(dims), as_dtype(dtype))


def _float_dtype(dtype):
    dtype = as_dtype(dtype or DEFAULT_FLOAT)
    if dtype.kind != "f":
        raise TypeError(f"random floats need a floating dtype, not {dtype.name}")
    return dtype.name


@defop("rand", infer=_float_spec, **_RANDOM)
def _rand(xp, *dims, dtype):
    rng, shape = _device_rng(xp), _concrete(dims)
    if xp is np:
        return rng.random(shape, dtype=np.float64 if dtype == "float64" else np.float32).astype(dtype, copy=False)
    return rng.random_sample(shape).astype(dtype)


@defop("randn", infer=_float_spec, **_RANDOM)
def _randn(xp, *dims, dtype):
    rng, shape = _device_rng(xp), _concrete(dims)
    if xp is np:
        return rng.standard_normal(shape, dtype=np.float64 if dtype == "float64" else np.float32).astype(
            dtype, copy=False)
    return rng.standard_normal(shape).astype(dtype)


def _randint_infer(low, high, *dims, dtype):
    dtype = as_dtype(dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"randint needs an integer dtype, not {dtype.name}")
    for bound in (low, high):
        if isinstance(bound, Spec) and (bound.dtype.kind not in "iub" or bound.ndim != 0):
            raise TypeError(f"randint's bounds must be integers, not {bound.dtype.name}[{bound.ndim}-d]")
    return Spec(_static(dims), dtype)


@defop("randint", infer=_randint_infer, **_RANDOM)
def _randint(xp, low, high, *dims, dtype):
    rng, shape = _device_rng(xp), _concrete(dims)
    if xp is np:
        return rng.integers(int(low), int(high), shape, dtype=dtype)
    return rng.randint(int(low), int(high), shape).astype(dtype)


def _randperm_infer(n, dtype):
    return Spec((n if isinstance(n, int) else -1,), as_dtype(dtype))


@defop("randperm", infer=_randperm_infer, **_RANDOM)
def _randperm(xp, n, dtype):
    return _device_rng(xp).permutation(int(n)).astype(dtype)


def _shape_args(shape):
    """`rand(2, 3)` (PyTorch) and `rand((2, 3))` / `rand([2, 3])` (NumPy, Paddle) name the same shape."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return _dims(shape)


def rand(*shape, dtype=None, device=None):
    """Uniform samples in [0, 1) (float32 unless `dtype` says otherwise)."""
    return apply(_rand, _shape_args(shape), {"dtype": _float_dtype(dtype)}, device)


def randn(*shape, dtype=None, device=None):
    """Standard normal samples (float32 unless `dtype` says otherwise)."""
    return apply(_randn, _shape_args(shape), {"dtype": _float_dtype(dtype)}, device)


def randint(low, high=None, shape=(1,), dtype=None, device=None):
    """Integers in [low, high), or in [0, low) when high is None (NumPy's, PyTorch's and Paddle's meaning)."""
    if high is None:
        low, high = 0, low
    if isinstance(low, int) and isinstance(high, int) and low >= high:
        raise ValueError(f"randint: low ({low}) must be less than high ({high})")
    return apply(_randint, (low, high) + _dims(shape), {"dtype": as_dtype(dtype or DEFAULT_INT).name}, device)


def randperm(n, dtype=None, device=None):
    """A random permutation of 0 .. n-1."""
    return apply(_randperm, (n,), {"dtype": as_dtype(dtype or DEFAULT_INT).name}, device)


def rand_like(x, dtype=None, device=None):
    """Uniform samples in [0, 1) shaped like x (x's dtype unless `dtype` says otherwise)."""
    return rand(_like_shape(x), dtype=dtype or x.dtype, device=device or _device_of(x))


def randn_like(x, dtype=None, device=None):
    """Standard normal samples shaped like x (x's dtype unless `dtype` says otherwise)."""
    return randn(_like_shape(x), dtype=dtype or x.dtype, device=device or _device_of(x))


def _like_shape(x):
    static = shape_of(x)
    if isinstance(x, Tracer) and -1 in static:
        return tuple(d if d != -1 else dim(x, axis) for axis, d in enumerate(static))
    return tuple(static)


def _device_of(x):
    return None if isinstance(x, Tracer) else getattr(getattr(x, "backend", None), "name", None)


RANDOM_FUNCTIONS = {f.__name__: f for f in (rand, randn, randint, randperm, rand_like, randn_like)}
