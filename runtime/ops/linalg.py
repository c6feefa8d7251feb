"""Products: matmul, tensordot, vecdot, einsum."""
import numpy as np

from ..dtypes import result_type
from ..errors import AxisError
from ..ir import Variable
from ..shape_text import shape_text
from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, broadcast_shapes, dtype_of, promote_operand, shape_of


def _matmul_infer(a, b):
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ValueError("matmul: operands must have at least one dimension (use multiply for scalars)")
    a2 = (1,) + tuple(sa) if len(sa) == 1 else tuple(sa)
    b2 = tuple(sb) + (1,) if len(sb) == 1 else tuple(sb)
    k1, k2 = a2[-1], b2[-2]
    if k1 != -1 and k2 != -1 and k1 != k2:
        raise ValueError(f"matmul: inner dimensions differ: {tuple(sa)} @ {tuple(sb)} ({k1} != {k2})")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return Spec(out, result_type(promote_operand(a), promote_operand(b)))


def _emit_matmul(gen, op):
    """Plan code: a 2-D float product on NumPy as `a.dot(b)`, about 0.8 µs less per call than the
    matmul ufunc. For C-contiguous operands of one float dtype, k > 1 and n > 1 the two make the
    same BLAS call (gemv for one row, else gemm), so the results are equal bit for bit; where the
    layout is known only at run time the plan checks its inputs once and keeps matmul otherwise.
    (k == 1 or n == 1 take other paths in dot: scalar or vector code, not matmul's.)"""
    a, b = op.inputs
    if not (gen.numpy and isinstance(a, Variable) and isinstance(b, Variable) and a.ndim == 2 and b.ndim == 2):
        return None
    if not (a.dtype == b.dtype == op.outputs[0].dtype and a.dtype in _BLAS_FLOATS):
        return None
    k, n = b.static_shape
    if not (k > 1 and n > 1 and a.static_shape[1] == k):
        return None
    layout = gen.c_contiguous(a, b)
    if layout is False:
        return None
    dot = f"{gen.value(a)}.dot({gen.value(b)})"
    return dot if layout is True else f"{dot} if {layout} else {gen.bound('matmul')}({gen.value(a)}, {gen.value(b)})"


_BLAS_FLOATS = (np.dtype("float32"), np.dtype("float64"))
MATMUL = register(OpDef("matmul", lambda xp, a, b: xp.matmul(a, b), _matmul_infer, promote=True,
                        template="xp.matmul({0}, {1})", fresh=True, safe_when_static=True, emit=_emit_matmul))


def matmul(a, b):
    """Matrix product with NumPy's batching and 1-D rules (`a @ b`)."""
    return apply(MATMUL, (a, b), {})


# --- products over chosen axes ------------------------------------------------------------------

def _tensordot_axes(axes, ndim_a):
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {axes}")
        return tuple(range(ndim_a - axes, ndim_a)), tuple(range(axes))
    a, b = axes
    return tuple(int(i) for i in ((a,) if isinstance(a, int) else a)), \
        tuple(int(i) for i in ((b,) if isinstance(b, int) else b))


def _tensordot_infer(a, b, axes=2):
    sa, sb = shape_of(a), shape_of(b)
    ax_a, ax_b = _tensordot_axes(axes, len(sa))
    ax_a, ax_b = [i % max(len(sa), 1) for i in ax_a], [i % max(len(sb), 1) for i in ax_b]
    if len(ax_a) != len(ax_b):
        raise ValueError(f"tensordot: axes {axes} pair up unequal counts of axes")
    for i, j in zip(ax_a, ax_b):
        if -1 not in (sa[i], sb[j]) and sa[i] != sb[j]:
            raise ValueError(f"tensordot: contracted dims differ: {tuple(sa)} axis {i} vs {tuple(sb)} axis {j}")
    out = tuple(d for i, d in enumerate(sa) if i not in ax_a) + tuple(d for j, d in enumerate(sb) if j not in ax_b)
    return Spec(out, result_type(promote_operand(a), promote_operand(b)))


def _tensordot_samples():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 4)).astype("float32"), rng.standard_normal((3, 4, 5)).astype("float32")
    return [dict(fn=lambda x, y: tensordot(x, y), args=(a, b), oracle=lambda x, y: np.tensordot(x, y)),
            dict(fn=lambda x, y: tensordot(x, y, axes=([1], [0])), args=(a, b),
                 oracle=lambda x, y: np.tensordot(x, y, axes=([1], [0])), rtol=1e-4),
            dict(fn=lambda x, y: tensordot(x, y, axes=0), args=(a[0, 0], b[0, 0]),
                 oracle=lambda x, y: np.tensordot(x, y, axes=0))]


_tensordot = register(OpDef("tensordot", lambda xp, a, b, axes=2: xp.tensordot(a, b, axes=axes), _tensordot_infer,
                            promote=True, example=_tensordot_samples))


def tensordot(x1, x2, /, *, axes=2):
    """Sum of products over the last `axes` dims of x1 and the first of x2 (or the given axis lists)."""
    if not isinstance(axes, int):
        a, b = axes
        axes = (tuple(a) if not isinstance(a, int) else (a,), tuple(b) if not isinstance(b, int) else (b,))
    return apply(_tensordot, (x1, x2), {"axes": axes})


def _vecdot_infer(a, b, axis=-1):
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ValueError("vecdot: operands need at least one dim")
    if not -min(len(sa), len(sb)) <= axis < min(len(sa), len(sb)):
        raise AxisError(f"vecdot: axis {axis} is out of range for shapes {tuple(sa)} and {tuple(sb)}")
    if -1 not in (sa[axis], sb[axis]) and sa[axis] != sb[axis]:
        raise ValueError(f"vecdot: dims differ along axis {axis}: {tuple(sa)} and {tuple(sb)}")
    shape = broadcast_shapes(_drop(sa, axis), _drop(sb, axis))
    return Spec(shape, result_type(promote_operand(a), promote_operand(b)))


def _drop(shape, axis):
    axis %= len(shape)
    return tuple(shape[:axis]) + tuple(shape[axis + 1:])


def _vecdot_kernel(xp, a, b, axis=-1):
    if a.shape[axis] != b.shape[axis]:        # the contracted dims must agree: they never broadcast
        raise ValueError(f"vecdot: dims differ along axis {axis}: {shape_text(a.shape)} and {shape_text(b.shape)}")
    product = xp.conj(a) * b if a.dtype.kind == "c" else a * b
    return xp.sum(product, axis=axis, dtype=product.dtype)


def _vecdot_samples():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 4)).astype("float32"), rng.standard_normal((4,)).astype("float32")
    return [dict(fn=lambda x, y: vecdot(x, y), args=(a, b), oracle=lambda x, y: np.vecdot(x, y)),
            dict(fn=lambda x, y: vecdot(x, y, axis=0), args=(a, a), oracle=lambda x, y: np.vecdot(x, y, axis=0))]


_vecdot = register(OpDef("vecdot", _vecdot_kernel, _vecdot_infer, promote=True, example=_vecdot_samples))


def vecdot(x1, x2, /, *, axis=-1):
    """Dot product of vectors along `axis` (conjugating x1 when complex), broadcasting the rest."""
    return apply(_vecdot, (x1, x2), {"axis": int(axis)})


def _einsum_infer(*operands, subscripts):
    """Run NumPy's einsum on small stand-ins: each index letter keeps its known size, unknown sizes
    become 2 and make the output dims they reach unknown."""
    spec = subscripts.replace(" ", "")
    terms = spec.split("->")[0].split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {subscripts!r} names {len(terms)} operands, got {len(operands)}")
    sizes, unknown = {}, set()
    for term, x in zip(terms, operands):
        letters = _letters(term, len(shape_of(x)))
        for c, d in zip(letters, shape_of(x)):
            if d == -1:
                unknown.add(c)
            elif d != 1 or c not in sizes:
                sizes[c] = d
    probes = []
    for term, x in zip(terms, operands):
        letters = _letters(term, len(shape_of(x)))
        dims = tuple(d if d != -1 else sizes.get(c, 2) for c, d in zip(letters, shape_of(x)))
        probes.append(np.empty(dims, dtype_of(x)))
    out = np.einsum(subscripts, *probes)
    out_letters = _output_letters(spec, terms, out.ndim)
    shape = tuple(-1 if c in unknown else d for c, d in zip(out_letters, out.shape))
    return Spec(shape, result_type(*map(promote_operand, operands)))


def _letters(term, ndim):
    """A term's index letters, its `...` spelled as one name per broadcast dim, counted from the
    right as broadcasting aligns them ('.1', '.0')."""
    if "..." not in term:
        return list(term)
    head, tail = term.split("...")
    n = ndim - len(head) - len(tail)
    return list(head) + [f".{n - 1 - i}" for i in range(n)] + list(tail)


def _output_letters(spec, terms, out_ndim):
    if "->" in spec:
        return _letters(spec.split("->")[1], out_ndim)
    counts = {}
    for term in terms:
        for c in term.replace("...", ""):
            counts[c] = counts.get(c, 0) + 1
    n_ellipsis = out_ndim - sum(1 for n in counts.values() if n == 1)
    return [f".{n_ellipsis - 1 - i}" for i in range(n_ellipsis)] + sorted(c for c, n in counts.items() if n == 1)


def _einsum_samples():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((3, 4)).astype("float32")
    c = rng.standard_normal((5, 2, 3)).astype("float32")
    return [dict(fn=lambda x, y: einsum("ij,jk->ik", x, y), args=(a, b),
                 oracle=lambda x, y: np.einsum("ij,jk->ik", x, y)),
            dict(fn=lambda x: einsum("bij->bji", x), args=(c,), oracle=lambda x: np.einsum("bij->bji", x)),
            dict(fn=lambda x, y: einsum("bij,jk", x, y), args=(c, b), oracle=lambda x, y: np.einsum("bij,jk", x, y),
                 rtol=1e-4),
            dict(fn=lambda x: einsum("ii", x), args=(b[:3, :3].copy(),), oracle=lambda x: np.einsum("ii", x),
                 dynamic=False)]


_einsum = register(OpDef("einsum", lambda xp, *ops, subscripts: xp.einsum(subscripts, *ops), _einsum_infer,
                         promote=True, example=_einsum_samples))


def einsum(subscripts, *operands):
    """Einstein summation over the operands (NumPy's subscripts, `->` optional, `...` allowed)."""
    return apply(_einsum, operands, {"subscripts": str(subscripts)})
