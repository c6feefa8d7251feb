"""Rearranging elements: moveaxis, roll, tile, repeat, tril/triu, pad, diff, and the multi-array
splits and grids (unstack, split, meshgrid, broadcast_arrays), with NumPy's semantics.

Ops whose output count depends on an attr (unstack, split, meshgrid) make one
output per piece: the count is known while tracing because it comes from a
static dim or the attr itself.
"""
import numpy as np

from ..dtypes import result_type
from ..tensor import Tensor
from ..tracer import Tracer
from .creation import ones_like
from .dispatch import apply
from .elementwise import astype, where
from .registry import OpDef, register
from .rules import Spec, broadcast_shapes, dtype_of, is_weak, norm_axes, promote_operand, shape_of
from .samples import sample_array as _rand


def _ints(values):
    return (int(values),) if isinstance(values, (int, np.integer)) else tuple(int(v) for v in values)


def _like(x, shape):
    return Spec(tuple(shape), dtype_of(x), is_weak(x))


# --- moveaxis ---------------------------------------------------------------------------------

def _moveaxis_infer(x, source, destination):
    ndim = len(shape_of(x))
    src = [norm_axes(a, ndim)[0] for a in source]
    dst = [norm_axes(a, ndim)[0] for a in destination]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: source {tuple(source)} and destination {tuple(destination)} must be "
                         "distinct axes of the same count")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _like(x, [shape_of(x)[a] for a in order])


_moveaxis = register(OpDef(
    "moveaxis", lambda xp, x, source, destination: xp.moveaxis(x, source, destination), _moveaxis_infer,
    example=lambda: [
        dict(fn=lambda a: moveaxis(a, 0, -1), args=(_rand((2, 3, 4)),), oracle=lambda a: np.moveaxis(a, 0, -1)),
        dict(fn=lambda a: moveaxis(a, (0, 2), (2, 0)), args=(_rand((2, 3, 4)),),
             oracle=lambda a: np.moveaxis(a, (0, 2), (2, 0)))]))


def moveaxis(x, source, destination, /):
    return apply(_moveaxis, (x,), {"source": _ints(source), "destination": _ints(destination)})


def matrix_transpose(x, /):
    """Swap the last two axes (`x.mT`)."""
    if len(shape_of(x)) < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dims, got shape {tuple(shape_of(x))}")
    return moveaxis(x, -1, -2)


# --- roll -------------------------------------------------------------------------------------

def _roll_infer(x, shift, axis=None):
    if axis is not None:
        norm_axes(axis, len(shape_of(x)))
        if len(_ints(shift)) not in (1, len(_ints(axis))):
            raise ValueError(f"roll: shift {shift} and axis {axis} differ in length")
    return _like(x, shape_of(x))


_roll = register(OpDef(
    "roll", lambda xp, x, shift, axis=None: xp.roll(x, shift, axis), _roll_infer,
    example=lambda: [
        dict(fn=lambda a: roll(a, 2), args=(_rand((3, 4)),), oracle=lambda a: np.roll(a, 2)),
        dict(fn=lambda a: roll(a, -1, axis=0), args=(_rand((3, 4)),), oracle=lambda a: np.roll(a, -1, axis=0)),
        dict(fn=lambda a: roll(a, (1, 3), axis=(1, 0)), args=(_rand((3, 4), "int32"),),
             oracle=lambda a: np.roll(a, (1, 3), axis=(1, 0)))]))


def roll(x, /, shift, *, axis=None):
    """Elements shifted along axis (flattened when None), wrapping around."""
    shift = int(shift) if isinstance(shift, (int, np.integer)) else _ints(shift)
    axis = None if axis is None else (int(axis) if isinstance(axis, (int, np.integer)) else _ints(axis))
    return apply(_roll, (x,), {"shift": shift, "axis": axis})


# --- tile / repeat ------------------------------------------------------------------------------

def _tile_infer(x, repetitions):
    shape = list(shape_of(x))
    reps = list(repetitions)
    n = max(len(shape), len(reps))
    shape = [1] * (n - len(shape)) + shape
    reps = [1] * (n - len(reps)) + reps
    return _like(x, [-1 if d == -1 else d * r for d, r in zip(shape, reps)])


_tile = register(OpDef(
    "tile", lambda xp, x, repetitions: xp.tile(x, repetitions), _tile_infer,
    example=lambda: [
        dict(fn=lambda a: tile(a, (2, 1)), args=(_rand((2, 3)),), oracle=lambda a: np.tile(a, (2, 1))),
        dict(fn=lambda a: tile(a, (2, 1, 3)), args=(_rand((2, 3), "int64"),),
             oracle=lambda a: np.tile(a, (2, 1, 3)))]))


def tile(x, repetitions, /):
    return apply(_tile, (x,), {"repetitions": _ints(repetitions)})


def _repeat_infer(x, repeats, axis=None):
    shape = shape_of(x)
    if axis is None:                      # the flattened array
        shape, axis = (-1 if -1 in shape else int(np.prod(shape)),), 0
    else:
        (axis,) = norm_axes(axis, len(shape))
    count = shape[axis]
    n = -1 if isinstance(repeats, Spec) or count == -1 else int(repeats) * count   # per-element counts: data
    return _like(x, shape[:axis] + (n,) + shape[axis + 1:])


def _repeat_kernel(xp, x, repeats, axis=None):
    return xp.repeat(x, repeats, axis=axis)


_repeat = register(OpDef(
    "repeat", _repeat_kernel, _repeat_infer,
    example=lambda: [
        dict(fn=lambda a: repeat(a, 2), args=(_rand((2, 3)),), oracle=lambda a: np.repeat(a, 2)),
        dict(fn=lambda a: repeat(a, 3, axis=1), args=(_rand((2, 3)),), oracle=lambda a: np.repeat(a, 3, axis=1)),
        dict(fn=lambda a, r: repeat(a, r, axis=0), args=(_rand((3, 2)), np.array([1, 0, 2])),
             oracle=lambda a, r: np.repeat(a, r, axis=0), data_dependent=True)]))


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated `repeats` times (an int, or an int array of per-element counts)."""
    if isinstance(repeats, (int, np.integer)):
        repeats = int(repeats)
    return apply(_repeat, (x, repeats), {"axis": None if axis is None else int(axis)})


# --- tril / triu ---------------------------------------------------------------------------------

def _tri_infer(x, k=0):
    if len(shape_of(x)) < 2:
        raise ValueError(f"tril/triu: needs at least 2 dims, got shape {tuple(shape_of(x))}")
    return _like(x, shape_of(x))


_tril = register(OpDef(
    "tril", lambda xp, x, k=0: xp.tril(x, k), _tri_infer,
    example=lambda: [dict(fn=lambda a: tril(a), args=(_rand((3, 4)),), oracle=np.tril),
                     dict(fn=lambda a: tril(a, k=-1), args=(_rand((2, 3, 3), "int32"),),
                          oracle=lambda a: np.tril(a, -1))]))
_triu = register(OpDef(
    "triu", lambda xp, x, k=0: xp.triu(x, k), _tri_infer,
    example=lambda: [dict(fn=lambda a: triu(a), args=(_rand((4, 3)),), oracle=np.triu),
                     dict(fn=lambda a: triu(a, k=1), args=(_rand((2, 3, 3), "int32"),),
                          oracle=lambda a: np.triu(a, 1))]))


def tril(x, /, *, k=0):
    """The lower triangle of the last two axes (elements above the k-th diagonal zeroed)."""
    return apply(_tril, (x,), {"k": int(k)})


def triu(x, /, *, k=0):
    """The upper triangle of the last two axes (elements below the k-th diagonal zeroed)."""
    return apply(_triu, (x,), {"k": int(k)})


# --- pad ------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad_widths(pad_width, ndim):
    """NumPy's pad_width forms (n, (n,), (before, after), per-axis pairs) as per-axis pairs."""
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (ndim, 2))
    if (widths < 0).any():
        raise ValueError(f"pad: widths must be non-negative, got {pad_width}")
    return tuple((int(a), int(b)) for a, b in widths)


def _pad_infer(x, pad_width, mode="constant", constant_values=0):
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    shape = shape_of(x)
    return _like(x, [-1 if d == -1 else d + a + b for d, (a, b) in zip(shape, pad_width)])


def _pad_kernel(xp, x, pad_width, mode="constant", constant_values=0):
    if mode == "constant":
        return xp.pad(x, pad_width, mode=mode, constant_values=constant_values)
    return xp.pad(x, pad_width, mode=mode)


_pad = register(OpDef(
    "pad", _pad_kernel, _pad_infer,
    example=lambda: [
        dict(fn=lambda a: pad(a, 1), args=(_rand((2, 3)),), oracle=lambda a: np.pad(a, 1)),
        dict(fn=lambda a: pad(a, ((0, 1), (2, 0)), constant_values=-1.5), args=(_rand((2, 3)),),
             oracle=lambda a: np.pad(a, ((0, 1), (2, 0)), constant_values=-1.5)),
        dict(fn=lambda a: pad(a, (1, 2), mode="reflect"), args=(_rand((3, 4), "int32"),),
             oracle=lambda a: np.pad(a, (1, 2), mode="reflect")),
        dict(fn=lambda a: pad(a, 2, mode="edge"), args=(_rand((3,)),), oracle=lambda a: np.pad(a, 2, mode="edge"))]))


def pad(x, pad_width, mode="constant", constant_values=0):
    """NumPy's pad: `pad_width` per axis as (before, after), one pair for all, or one int.

    A tensor `constant_values` (a loop counter, say) is not an attr: the pad is a zero pad and a
    `where` over a padded mask picks the value, cast to x's dtype as NumPy does."""
    widths = _pad_widths(pad_width, len(shape_of(x)))
    if mode == "constant" and isinstance(constant_values, (Tracer, Tensor)):
        padded = apply(_pad, (x,), {"pad_width": widths, "mode": mode, "constant_values": 0})
        inside = apply(_pad, (ones_like(x, dtype=np.bool_),), {"pad_width": widths, "mode": mode,
                                                                "constant_values": False})
        return where(inside, padded, astype(constant_values, dtype_of(x)))
    return apply(_pad, (x,), {"pad_width": widths, "mode": mode, "constant_values": constant_values})


# --- diff ------------------------------------------------------------------------------------------

def _diff_infer(x, *extra, axis=-1, n=1, prepend=False, append=False):
    shape = list(shape_of(x))
    if not shape:
        raise ValueError("diff: needs at least one dim")
    (a,) = norm_axes(axis, len(shape))
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    size = shape[a]
    for e in extra:              # a scalar joins as one slice; an array of x's rank by its own size
        es = shape_of(e)
        grow = es[a] if len(es) == len(shape) else 1
        size = -1 if -1 in (size, grow) else size + grow
    shape[a] = -1 if size == -1 else max(size - n, 0)
    return Spec(tuple(shape), result_type(promote_operand(x), *map(promote_operand, extra)))


def _diff_kernel(xp, x, *extra, axis=-1, n=1, prepend=False, append=False):
    def slab(e):              # a scalar or lower-rank value spans one slice along axis
        e = xp.asarray(e)
        if e.ndim != x.ndim:
            shape = list(x.shape)
            shape[axis] = 1
            e = xp.broadcast_to(e, shape)
        return e
    before = [slab(extra[0])] if prepend else []
    after = [slab(extra[-1])] if append else []
    if before or after:
        x = xp.concatenate(before + [x] + after, axis=axis)
    return xp.diff(x, n=n, axis=axis)


_diff = register(OpDef(
    "diff", _diff_kernel, _diff_infer,
    example=lambda: [
        dict(fn=lambda a: diff(a), args=(_rand((3, 5)),), oracle=lambda a: np.diff(a)),
        dict(fn=lambda a: diff(a, axis=0, n=2), args=(_rand((4, 3), "int32"),), oracle=lambda a: np.diff(a, 2, 0)),
        dict(fn=lambda a, p: diff(a, prepend=p), args=(_rand((2, 4)), _rand((2, 1))),
             oracle=lambda a, p: np.diff(a, prepend=p))]))


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """n-th discrete difference along axis (NumPy's diff; prepend/append values join first)."""
    extra = tuple(e for e in (prepend, append) if e is not None)
    return apply(_diff, (x,) + extra, {"axis": int(axis), "n": int(n), "prepend": prepend is not None,
                                       "append": append is not None})


# --- several outputs: unstack, split, meshgrid, broadcast_arrays -------------------------------

def _unstack_infer(x, axis=0):
    shape = shape_of(x)
    (a,) = norm_axes(axis, len(shape))
    if shape[a] == -1:
        raise ValueError(f"unstack: axis {axis} has an unknown size while tracing; index it in a loop instead")
    piece = _like(x, shape[:a] + shape[a + 1:])
    return [piece] * shape[a]


def _pieces(out):
    """An op's outputs as a tuple, however many there are (apply returns one bare, none as None)."""
    if out is None:
        return ()
    return out if isinstance(out, tuple) else (out,)


def _unstack_kernel(xp, x, axis=0):
    return tuple(xp.moveaxis(x, axis, 0))


_unstack = register(OpDef(
    "unstack", _unstack_kernel, _unstack_infer, num_outputs=-1,
    example=lambda: [
        dict(fn=lambda a: unstack(a)[1], args=(_rand((3, 2)),), oracle=lambda a: a[1], dynamic=False),
        dict(fn=lambda a: unstack(a, axis=-1)[0], args=(_rand((2, 3, 2), "int32"),),
             oracle=lambda a: a[..., 0])]))


def unstack(x, /, *, axis=0):
    """The slices of x along `axis`, as a tuple."""
    return _pieces(apply(_unstack, (x,), {"axis": int(axis)}))


def _split_infer(x, sections, axis=0):
    shape = shape_of(x)
    (a,) = norm_axes(axis, len(shape))
    size = shape[a]
    if isinstance(sections, int):
        if size != -1 and size % sections:
            raise ValueError(f"split: axis {axis} of size {size} does not divide into {sections} equal parts")
        piece = -1 if size == -1 else size // sections
        return [_like(x, shape[:a] + (piece,) + shape[a + 1:])] * sections
    bounds = [0] + list(sections) + [size]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        n = -1 if -1 in (lo, hi) else max(0, min(hi, size) - min(lo, size))
        out.append(_like(x, shape[:a] + (n,) + shape[a + 1:]))
    return out


def _split_bounds(size, sections):
    """Where the pieces of an axis of `size` start and end (a piece is [lo, max(lo, hi))), or None when
    `sections` equal parts do not fit."""
    if isinstance(sections, int):
        if sections <= 0 or size % sections:
            return None
        return list(range(0, size + 1, size // sections)) if size else [0] * (sections + 1)
    return [0, *(min(max(int(i) + size if int(i) < 0 else int(i), 0), size) for i in sections), size]


def _split_kernel(xp, x, sections, axis=0):
    """Views by slicing (xp.split builds them through array_split: ten times slower on small arrays)."""
    size = x.shape[axis]
    bounds = _split_bounds(size, sections)
    if bounds is None:
        raise ValueError(f"split: an axis of size {size} does not split into {sections} equal sections")
    lead = (slice(None),) * (axis % x.ndim)
    return tuple(x[lead + (slice(lo, max(lo, hi)),)] for lo, hi in zip(bounds, bounds[1:]))


def _emit_split(gen, op):
    """Plan code: the pieces as inline slices of a static axis (`x[:, 0:64], x[:, 64:128]`)."""
    x = op.inputs[0]
    sections, axis = op.attrs.get("sections"), op.attrs.get("axis", 0)
    if not gen.is_array(x) or set(op.attrs) - {"sections", "axis"}:
        return None
    (a,) = norm_axes(axis, x.ndim)
    size = x.static_shape[a]
    bounds = None if size == -1 else _split_bounds(size, sections)
    if bounds is None:
        return None
    x_name, lead = gen.value(x), ":, " * a
    return ", ".join(f"{x_name}[{lead}{lo}:{max(lo, hi)}]" for lo, hi in zip(bounds, bounds[1:]))


_split = register(OpDef(
    "split", _split_kernel, _split_infer, num_outputs=-1, emit=_emit_split,
    example=lambda: [
        dict(fn=lambda a: split(a, 3)[2], args=(_rand((6, 2)),), oracle=lambda a: np.split(a, 3)[2], dynamic=False),
        dict(fn=lambda a: split(a, [1, 3], axis=1)[1], args=(_rand((2, 5)),),
             oracle=lambda a: np.split(a, [1, 3], axis=1)[1])]))


def split(x, indices_or_sections, axis=0):
    """NumPy's split: N equal parts, or the pieces between the given indices."""
    sections = int(indices_or_sections) if isinstance(indices_or_sections, (int, np.integer)) \
        else _ints(indices_or_sections)
    return _pieces(apply(_split, (x,), {"sections": sections, "axis": int(axis)}))


def _meshgrid_infer(*xs, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for x in xs:
        if len(shape_of(x)) != 1:
            raise ValueError(f"meshgrid: inputs must be 1-D, got shape {tuple(shape_of(x))}")
    sizes = [shape_of(x)[0] for x in xs]
    if indexing == "xy" and len(sizes) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    return [Spec(tuple(sizes), dtype_of(x)) for x in xs]


def _meshgrid_kernel(xp, *xs, indexing="xy"):
    return tuple(xp.meshgrid(*xs, indexing=indexing))


_meshgrid = register(OpDef(
    "meshgrid", _meshgrid_kernel, _meshgrid_infer, num_outputs=-1,
    example=lambda: [
        dict(fn=lambda a, b: meshgrid(a, b)[0], args=(_rand((3,)), _rand((4,))),
             oracle=lambda a, b: np.meshgrid(a, b)[0]),
        dict(fn=lambda a, b: meshgrid(a, b, indexing="ij")[1], args=(_rand((3,)), _rand((2,), "int32")),
             oracle=lambda a, b: np.meshgrid(a, b, indexing="ij")[1])]))


def meshgrid(*arrays, indexing="xy"):
    """Coordinate grids from 1-D arrays, as a list (the array API's return type)."""
    return list(_pieces(apply(_meshgrid, arrays, {"indexing": indexing})))


def _broadcast_arrays_infer(*xs):
    shape = broadcast_shapes(*(shape_of(x) for x in xs))
    return [_like(x, shape) for x in xs]


_broadcast_arrays = register(OpDef(
    "broadcast_arrays", lambda xp, *xs: tuple(xp.broadcast_arrays(*xs)), _broadcast_arrays_infer, num_outputs=-1,
    example=lambda: [
        dict(fn=lambda a, b: broadcast_arrays(a, b)[0], args=(_rand((3, 1)), _rand((4,))),
             oracle=lambda a, b: np.broadcast_arrays(a, b)[0], dynamic=False),
        dict(fn=lambda a, b: broadcast_arrays(a, b)[1], args=(_rand((3, 1)), _rand((4,), "int32")),
             oracle=lambda a, b: np.broadcast_arrays(a, b)[1], dynamic=False)]))


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other, as a list (the array API's return type)."""
    return list(_pieces(apply(_broadcast_arrays, arrays, {})))


REARRANGE_FUNCTIONS = {f.__name__: f for f in (moveaxis, matrix_transpose, roll, tile, repeat, tril, triu, pad,
                                                diff, unstack, split, meshgrid, broadcast_arrays)}
