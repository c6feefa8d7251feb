"""The array API's `linalg` extension: solves, inverses, decompositions, determinants and norms.

Each function is one op over the last two axes (a stack of matrices), with
NumPy's results; decompositions with several results are multi-output ops.
Float inputs keep their precision (float32 stays float32); integer inputs
compute in float64, as NumPy's linalg does.
"""
from collections import namedtuple

import numpy as np

from ..shape_text import shape_text
from .dispatch import apply
from .linalg import einsum, matmul
from .registry import OpDef, register
from .rules import Spec, broadcast_shapes, dtype_of, norm_axes, shape_of


def _float(dtype):
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _real(dtype):
    return np.dtype(np.float32) if dtype == np.complex64 else (
        np.dtype(np.float64) if dtype.kind == "c" else dtype)


def _matrices(name, x, square=True):
    shape = tuple(shape_of(x))
    if len(shape) < 2:
        raise ValueError(f"linalg.{name}: needs a matrix (at least 2 dims), got shape {shape_text(shape)}")
    if square and -1 not in shape[-2:] and shape[-1] != shape[-2]:
        raise ValueError(f"linalg.{name}: needs square matrices, got shape {shape_text(shape)}")
    return shape


def _sample_matrix(n=3, batch=(), spd=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n))
    a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n) if spd else a + n * np.eye(n)
    return a.astype(np.float32)


def _as_float(xp, x):
    return x if x.dtype.kind in "fc" else x.astype(np.float64)


# --- one definition per function: (kernel, infer, samples) ------------------------------------------

def _unary_matrix(name, kernel, out, square=True, samples=None, num_outputs=1):
    """An op over stacks of matrices whose result specs `out(shape, dtype)` follow from x's."""
    def infer(x, *arrays, **attrs):      # arrays: pinv/matrix_rank's rtol as an array
        specs = out(_matrices(name, x, square), _float(dtype_of(x)), **attrs)
        for a in arrays:
            broadcast_shapes(shape_of(a), _matrices(name, x, square)[:-2])
        return specs if isinstance(specs, Spec) else list(specs)
    return register(OpDef(name if name.startswith("linalg_") else f"linalg_{name}", kernel, infer,
                          num_outputs=num_outputs, example=samples))


def _kernel(fn_name, **fixed):
    def kernel(xp, x, **attrs):
        return getattr(xp.linalg, fn_name)(_as_float(xp, x), **fixed, **attrs)
    return kernel


_inv = _unary_matrix("inv", _kernel("inv"), lambda s, d: Spec(s, d), samples=lambda: [
    dict(fn=lambda a: inv(a), args=(_sample_matrix(),), oracle=np.linalg.inv, rtol=1e-4, atol=1e-5),
    dict(fn=lambda a: inv(a), args=(_sample_matrix(2, (3,)),), oracle=np.linalg.inv, rtol=1e-4, atol=1e-5)])

_cholesky = _unary_matrix("cholesky", lambda xp, x, upper=False: _cholesky_kernel(xp, x, upper),
                          lambda s, d, upper=False: Spec(s, d), samples=lambda: [
    dict(fn=lambda a: cholesky(a), args=(_sample_matrix(spd=True),), oracle=np.linalg.cholesky, rtol=1e-4, atol=1e-5),
    dict(fn=lambda a: cholesky(a, upper=True), args=(_sample_matrix(3, (2,), spd=True),),
         oracle=lambda a: np.swapaxes(np.linalg.cholesky(a), -1, -2), rtol=1e-4, atol=1e-5)])


def _cholesky_kernel(xp, x, upper):
    lower = xp.linalg.cholesky(_as_float(xp, x))
    return xp.swapaxes(lower, -1, -2).conj() if upper else lower


_det = _unary_matrix("det", _kernel("det"), lambda s, d: Spec(s[:-2], d), samples=lambda: [
    dict(fn=lambda a: det(a), args=(_sample_matrix(),), oracle=np.linalg.det, rtol=1e-4),
    dict(fn=lambda a: det(a), args=(_sample_matrix(2, (4,)),), oracle=np.linalg.det, rtol=1e-4)])

_slogdet = _unary_matrix("slogdet", lambda xp, x: tuple(xp.linalg.slogdet(_as_float(xp, x))),
                         lambda s, d: (Spec(s[:-2], d), Spec(s[:-2], _real(d))), num_outputs=2, samples=lambda: [
    dict(fn=lambda a: slogdet(a)[0], args=(-_sample_matrix(),), oracle=lambda a: np.linalg.slogdet(a)[0]),
    dict(fn=lambda a: slogdet(a)[1], args=(_sample_matrix(2, (3,)),), oracle=lambda a: np.linalg.slogdet(a)[1],
         rtol=1e-4)])

_eigh = _unary_matrix("eigh", lambda xp, x: tuple(xp.linalg.eigh(_as_float(xp, x))),
                      lambda s, d: (Spec(s[:-1], _real(d)), Spec(s, d)), num_outputs=2, samples=lambda: [
    dict(fn=lambda a: eigh(a)[0], args=(_sample_matrix(spd=True),), oracle=lambda a: np.linalg.eigh(a)[0],
         rtol=1e-4, atol=1e-4),
    # eigenvectors are defined up to sign: compare their outer products
    dict(fn=lambda a: _outer_products(eigh(a)[1]), args=(_sample_matrix(spd=True, seed=1),),
         oracle=lambda a: np.einsum("ik,jk->kij", np.linalg.eigh(a)[1], np.linalg.eigh(a)[1]), rtol=1e-3, atol=1e-4)])

_eigvalsh = _unary_matrix("eigvalsh", _kernel("eigvalsh"), lambda s, d: Spec(s[:-1], _real(d)), samples=lambda: [
    dict(fn=lambda a: eigvalsh(a), args=(_sample_matrix(3, (2,), spd=True),), oracle=np.linalg.eigvalsh,
         rtol=1e-4, atol=1e-4)])


def _outer_products(v):
    return einsum("ik,jk->kij", v, v)


def _qr_infer(s, d, mode="reduced"):
    m, n = s[-2], s[-1]
    k = -1 if -1 in (m, n) else min(m, n)
    if mode == "complete":
        return Spec(s[:-2] + (m, m), d), Spec(s, d)
    return Spec(s[:-2] + (m, k), d), Spec(s[:-2] + (k, n), d)


_qr = _unary_matrix("qr", lambda xp, x, mode="reduced": tuple(xp.linalg.qr(_as_float(xp, x), mode=mode)),
                    _qr_infer, square=False, num_outputs=2, samples=lambda: [
    dict(fn=lambda a: _qr_product(a), args=(_sample_matrix()[:, :2].copy(),), oracle=lambda a: a, rtol=1e-4, atol=1e-5),
    dict(fn=lambda a: abs(qr(a)[1]), args=(_sample_matrix(),), oracle=lambda a: np.abs(np.linalg.qr(a)[1]),
         rtol=1e-4, atol=1e-5)])


def _qr_product(a):
    q, r = qr(a)
    return matmul(q, r)


def _svd_infer(s, d, full_matrices=True):
    m, n = s[-2], s[-1]
    k = -1 if -1 in (m, n) else min(m, n)
    u = (m, m) if full_matrices else (m, k)
    vh = (n, n) if full_matrices else (k, n)
    return Spec(s[:-2] + u, d), Spec(s[:-2] + (k,), _real(d)), Spec(s[:-2] + vh, d)


_svd = _unary_matrix("svd", lambda xp, x, full_matrices=True: tuple(
    xp.linalg.svd(_as_float(xp, x), full_matrices=full_matrices)), _svd_infer, square=False, num_outputs=3,
    samples=lambda: [dict(fn=lambda a: svd(a)[1], args=(_sample_matrix()[:2].copy(),),
                          oracle=lambda a: np.linalg.svd(a)[1], rtol=1e-4, atol=1e-5)])

_svdvals = _unary_matrix("svdvals", lambda xp, x: xp.linalg.svd(_as_float(xp, x), compute_uv=False),
                         lambda s, d: _svd_infer(s, d, False)[1], square=False, samples=lambda: [
    dict(fn=lambda a: svdvals(a), args=(_sample_matrix(3, (2,)),), oracle=lambda a: np.linalg.svd(a, compute_uv=False),
         rtol=1e-4, atol=1e-5)])

# pinv and matrix_rank: rtol is a number (an attr) or an array broadcasting against the batch of matrices
# (a second input)
def _rtol(rtol, rtol_array):
    return {} if rtol is None and rtol_array is None else {"rtol": rtol if rtol_array is None else rtol_array}


_pinv = _unary_matrix("pinv", lambda xp, x, rtol_array=None, rtol=None: xp.linalg.pinv(
    _as_float(xp, x), **_rtol(rtol, rtol_array)), lambda s, d, rtol=None: Spec(s[:-2] + (s[-1], s[-2]), d),
    square=False, samples=lambda: [
    dict(fn=lambda a: pinv(a), args=(_sample_matrix()[:2].copy(),), oracle=np.linalg.pinv, rtol=1e-3, atol=1e-4),
    dict(fn=lambda a, r: pinv(a, rtol=r), args=(_sample_matrix(3, (2,)), np.array([1e-3, 1e-6], np.float32)),
         oracle=lambda a, r: np.linalg.pinv(a, rtol=r), rtol=1e-3, atol=1e-4)])

_matrix_rank = _unary_matrix("matrix_rank", lambda xp, x, rtol_array=None, rtol=None: xp.asarray(
    xp.linalg.matrix_rank(_as_float(xp, x), **_rtol(rtol, rtol_array))).astype(np.int64),
    lambda s, d, rtol=None: Spec(s[:-2], np.dtype(np.int64)), square=False, samples=lambda: [
    dict(fn=lambda a: matrix_rank(a), args=(np.array([[1.0, 2.0], [2.0, 4.0]], np.float32),),
         oracle=lambda a: np.asarray(np.linalg.matrix_rank(a), np.int64)),
    dict(fn=lambda a, r: matrix_rank(a, rtol=r), args=(_sample_matrix(3, (2,)), np.array([0.9, 1e-6], np.float32)),
         oracle=lambda a, r: np.asarray(np.linalg.matrix_rank(a, rtol=r), np.int64))])


def _with_rtol(opdef, x, rtol):
    """A number is the op's attr; an array (NumPy's, a Tensor, a Variable) its second input."""
    if rtol is None or isinstance(rtol, (int, float, np.number)):
        return apply(opdef, (x,), {"rtol": None if rtol is None else float(rtol)})
    return apply(opdef, (x, rtol), {"rtol": None})


def _matrix_power_infer(x, n):
    shape = _matrices("matrix_power", x)
    return Spec(shape, dtype_of(x) if n >= 0 else _float(dtype_of(x)))   # NumPy keeps ints for n >= 0


_matrix_power = register(OpDef("linalg_matrix_power", lambda xp, x, n: xp.linalg.matrix_power(
    x if n >= 0 else _as_float(xp, x), n), _matrix_power_infer, example=lambda: [
    dict(fn=lambda a: matrix_power(a, 3), args=(_sample_matrix(2),), oracle=lambda a: np.linalg.matrix_power(a, 3),
         rtol=1e-4),
    dict(fn=lambda a: matrix_power(a, 2), args=(np.arange(4, dtype=np.int32).reshape(2, 2),),
         oracle=lambda a: np.linalg.matrix_power(a, 2)),
    dict(fn=lambda a: matrix_power(a, -1), args=(_sample_matrix(2, (2,)),),
         oracle=lambda a: np.linalg.matrix_power(a, -1), rtol=1e-4, atol=1e-5)]))


def _solve_infer(a, b):
    sa, sb = _matrices("solve", a), tuple(shape_of(b))
    dtype = _float(np.result_type(dtype_of(a), dtype_of(b)))
    if len(sb) == 1:
        return Spec(sa[:-2] + (sb[0],) if len(sa) > 2 else (sb[0],), dtype)
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    return Spec(batch + sb[-2:], dtype)


def _solve_kernel(xp, a, b):
    a, b = _as_float(xp, a), _as_float(xp, b)
    if b.ndim == 1:
        return xp.linalg.solve(a, b[..., None])[..., 0]
    return xp.linalg.solve(a, b)


def _np_solve(a, b):
    return np.linalg.solve(a, b[..., None])[..., 0] if b.ndim == 1 else np.linalg.solve(a, b)


_solve = register(OpDef("linalg_solve", _solve_kernel, _solve_infer, example=lambda: [
    dict(fn=lambda a, b: solve(a, b), args=(_sample_matrix(), np.arange(3, dtype=np.float32)),
         oracle=_np_solve, rtol=1e-4, atol=1e-5, dynamic=False),
    dict(fn=lambda a, b: solve(a, b), args=(_sample_matrix(3, (2,)), np.ones((2, 3, 2), np.float32)),
         oracle=_np_solve, rtol=1e-4, atol=1e-5)]))


# --- norms, trace, diagonal, outer, cross ----------------------------------------------------------

def _vector_norm_infer(x, axis=None, keepdims=False, ord=2):
    shape = shape_of(x)
    axes = norm_axes(axis, len(shape))
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    return Spec(out, _real(_float(dtype_of(x))))


def _vector_norm_kernel(xp, x, axis=None, keepdims=False, ord=2):
    x = _as_float(xp, x)
    axes = norm_axes(axis, x.ndim, "vector_norm axis") if x.ndim else ()
    rest = [i for i in range(x.ndim) if i not in axes]
    # the norm axes moved last and flattened into one: a vector norm over all of them
    flat = xp.transpose(x, rest + list(axes)).reshape([x.shape[i] for i in rest] + [-1])
    out = xp.linalg.norm(flat, ord=ord, axis=-1)
    if keepdims:
        out = out.reshape([1 if i in axes else x.shape[i] for i in range(x.ndim)])
    return out


_vector_norm = register(OpDef("linalg_vector_norm", _vector_norm_kernel, _vector_norm_infer, example=lambda: [
    dict(fn=lambda a: vector_norm(a), args=(_sample_matrix(),), oracle=lambda a: np.linalg.vector_norm(a), rtol=1e-5),
    dict(fn=lambda a: vector_norm(a, axis=1, keepdims=True, ord=1), args=(_sample_matrix(),),
         oracle=lambda a: np.linalg.vector_norm(a, axis=1, keepdims=True, ord=1)),
    dict(fn=lambda a: vector_norm(a, axis=(0, 1), ord=3), args=(_sample_matrix(3, (2,)),),
         oracle=lambda a: np.linalg.vector_norm(a, axis=(0, 1), ord=3), rtol=1e-5),
    dict(fn=lambda a: vector_norm(a, ord=float("inf")), args=(_sample_matrix(),),
         oracle=lambda a: np.linalg.vector_norm(a, ord=np.inf))]))


def _matrix_norm_infer(x, keepdims=False, ord="fro"):
    s = _matrices("matrix_norm", x, square=False)
    out = s[:-2] + ((1, 1) if keepdims else ())
    return Spec(out, _real(_float(dtype_of(x))))


def _matrix_norm_kernel(xp, x, keepdims=False, ord="fro"):
    return xp.linalg.norm(_as_float(xp, x), ord=ord, axis=(-2, -1), keepdims=keepdims)


_matrix_norm = register(OpDef("linalg_matrix_norm", _matrix_norm_kernel, _matrix_norm_infer, example=lambda: [
    dict(fn=lambda a: matrix_norm(a), args=(_sample_matrix(3, (2,)),), oracle=lambda a: np.linalg.matrix_norm(a),
         rtol=1e-5),
    dict(fn=lambda a: matrix_norm(a, ord=1, keepdims=True), args=(_sample_matrix(),),
         oracle=lambda a: np.linalg.matrix_norm(a, ord=1, keepdims=True)),
    dict(fn=lambda a: matrix_norm(a, ord="nuc"), args=(_sample_matrix(),),
         oracle=lambda a: np.linalg.matrix_norm(a, ord="nuc"), rtol=1e-4)]))


def _diagonal_infer(x, offset=0):
    s = _matrices("diagonal", x, square=False)
    m, n = s[-2], s[-1]
    k = -1 if -1 in (m, n) else max(0, min(m + min(offset, 0), n - max(offset, 0)))
    return Spec(s[:-2] + (k,), dtype_of(x))


_diagonal = register(OpDef("linalg_diagonal", lambda xp, x, offset=0: xp.diagonal(x, offset, -2, -1).copy(),
                           _diagonal_infer, example=lambda: [
    dict(fn=lambda a: diagonal(a), args=(_sample_matrix(3, (2,)),), oracle=lambda a: np.linalg.diagonal(a)),
    dict(fn=lambda a: diagonal(a, offset=1), args=(_sample_matrix()[:2].copy(),),
         oracle=lambda a: np.linalg.diagonal(a, offset=1))]))


def _trace_infer(x, offset=0, dtype=None):
    s = _matrices("trace", x, square=False)
    out = dtype or np.trace(np.ones((1, 1), dtype_of(x))).dtype
    return Spec(s[:-2], np.dtype(out))


_trace = register(OpDef("linalg_trace", lambda xp, x, offset=0, dtype=None: xp.trace(
    x, offset, -2, -1, dtype=dtype), _trace_infer, example=lambda: [
    dict(fn=lambda a: trace(a), args=(_sample_matrix(3, (2,)),), oracle=lambda a: np.linalg.trace(a), rtol=1e-5),
    dict(fn=lambda a: trace(a, offset=-1), args=(np.arange(9, dtype=np.int32).reshape(3, 3),),
         oracle=lambda a: np.linalg.trace(a, offset=-1))]))


def _outer_infer(a, b):
    if len(shape_of(a)) != 1 or len(shape_of(b)) != 1:
        raise ValueError("linalg.outer: needs two 1-D arrays")
    return Spec((shape_of(a)[0], shape_of(b)[0]), np.result_type(dtype_of(a), dtype_of(b)))


_outer = register(OpDef("linalg_outer", lambda xp, a, b: xp.outer(a, b), _outer_infer, example=lambda: [
    dict(fn=lambda a, b: outer(a, b), args=(np.arange(3, dtype=np.float32), np.arange(4, dtype=np.int32)),
         oracle=np.outer)]))


def _cross_infer(a, b, axis=-1):
    sa, sb = shape_of(a), shape_of(b)
    if sa[axis] not in (3, -1) or sb[axis] not in (3, -1):
        raise ValueError(f"linalg.cross: axis {axis} must have size 3, got shapes {tuple(sa)} and {tuple(sb)}")
    return Spec(broadcast_shapes(sa, sb), np.result_type(dtype_of(a), dtype_of(b)))


_cross = register(OpDef("linalg_cross", lambda xp, a, b, axis=-1: xp.cross(a, b, axis=axis), _cross_infer,
                        example=lambda: [
    dict(fn=lambda a, b: cross(a, b), args=(_sample_matrix(), _sample_matrix(seed=2)),
         oracle=lambda a, b: np.linalg.cross(a, b), rtol=1e-5),
    dict(fn=lambda a, b: cross(a, b, axis=0), args=(_sample_matrix(), _sample_matrix(seed=3)),
         oracle=lambda a, b: np.cross(a, b, axis=0), rtol=1e-5)]))


# --- the public functions ---------------------------------------------------------------------------

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def inv(x, /):
    return apply(_inv, (x,), {})


def cholesky(x, /, *, upper=False):
    return apply(_cholesky, (x,), {"upper": bool(upper)})


def det(x, /):
    return apply(_det, (x,), {})


def slogdet(x, /):
    """(sign, logabsdet) of each matrix."""
    return SlogdetResult(*apply(_slogdet, (x,), {}))


def eigh(x, /):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric/Hermitian matrices."""
    return EighResult(*apply(_eigh, (x,), {}))


def eigvalsh(x, /):
    return apply(_eigvalsh, (x,), {})


def qr(x, /, *, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*apply(_qr, (x,), {"mode": mode}))


def svd(x, /, *, full_matrices=True):
    """(U, S, Vh) with x = U @ diag(S) @ Vh."""
    return SVDResult(*apply(_svd, (x,), {"full_matrices": bool(full_matrices)}))


def svdvals(x, /):
    return apply(_svdvals, (x,), {})


def pinv(x, /, *, rtol=None):
    return _with_rtol(_pinv, x, rtol)


def matrix_rank(x, /, *, rtol=None):
    return _with_rtol(_matrix_rank, x, rtol)


def matrix_power(x, n, /):
    return apply(_matrix_power, (x,), {"n": int(n)})


def solve(x1, x2, /):
    """The X with x1 @ X == x2 (x2 a vector when 1-D)."""
    return apply(_solve, (x1, x2), {})


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    if axis is not None and not isinstance(axis, (int, np.integer)):
        axis = tuple(int(a) for a in axis)
    return apply(_vector_norm, (x,), {"axis": None if axis is None else axis, "keepdims": bool(keepdims),
                                      "ord": ord if isinstance(ord, (int, float)) else float(ord)})


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return apply(_matrix_norm, (x,), {"keepdims": bool(keepdims), "ord": ord})


def diagonal(x, /, *, offset=0):
    return apply(_diagonal, (x,), {"offset": int(offset)})


def trace(x, /, *, offset=0, dtype=None):
    return apply(_trace, (x,), {"offset": int(offset), "dtype": None if dtype is None else np.dtype(dtype).name})


def outer(x1, x2, /):
    return apply(_outer, (x1, x2), {})


def cross(x1, x2, /, *, axis=-1):
    return apply(_cross, (x1, x2), {"axis": int(axis)})

