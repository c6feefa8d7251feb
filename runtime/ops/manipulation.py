"""Shape manipulation: reshape, transpose, stack/concat, squeeze, broadcast, flip, dim."""
import numpy as np

from .. import tracing
from ..dtypes import result_type
from ..shape_text import shape_text
from ..tracer import Tracer
from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, broadcast_shapes, dtype_of, is_weak, norm_axes, promote_operand, shape_of
from .tensor_array import array_concat, array_stack


# --- reshape ---------------------------------------------------------------------

def _reshape_infer(x, *shape):
    src = list(shape_of(x))
    # a symbolic dim that is x's own unknown dim (x.reshape(x.shape[0], -1)) cancels out: x is input 0
    cancelled = [isinstance(d, Spec) and d.dim_of is not None and d.dim_of[0] == 0 for d in shape]
    for d, c in zip(shape, cancelled):
        if c and src[d.dim_of[1]] == -1:
            src[d.dim_of[1]] = 1
    dims = [d if isinstance(d, int) else (1 if c else -2) for d, c in zip(shape, cancelled)]  # -2: unknown now
    if dims.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 in the new shape, got {tuple(shape)}")
    if -1 in dims:
        known = int(np.prod([d for d in dims if d >= 0]))
        if -1 not in src and -2 not in dims and known:
            total = int(np.prod(src))
            if total % known:
                raise ValueError(f"reshape: cannot reshape {shape_text(src)} into {tuple(shape)}")
            dims[dims.index(-1)] = total // known
    if -1 not in src and -2 not in dims and -1 not in dims and int(np.prod(src)) != int(np.prod(dims)):
        raise ValueError(f"reshape: cannot reshape array of shape {shape_text(src)} into {tuple(shape)}")
    return Spec(tuple(-1 if d < 0 or c else d for d, c in zip(dims, cancelled)), dtype_of(x), is_weak(x))


def _reshape_kernel(xp, x, *shape):
    return xp.reshape(x, tuple(int(d) for d in shape))


def _emit_reshape(gen, op):
    """Plan code: the array's method with the shape as a literal (xp.reshape and the int() per dim cost ~4 µs)."""
    x, *shape = op.inputs
    if not gen.is_array(x) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        return None
    return f"{gen.value(x)}.reshape({tuple(shape)!r})"


_reshape = register(OpDef("reshape", _reshape_kernel, _reshape_infer, safe_when_static=True, emit=_emit_reshape))


def reshape(x, /, shape, *, copy=None):
    if isinstance(shape, (int, Tracer)):
        shape = (shape,)
    return apply(_reshape, (x,) + tuple(int(d) if isinstance(d, (int, np.integer)) else d for d in shape), {})


# --- permute_dims ----------------------------------------------------------------

def _permute_infer(x, axes=None):
    shape = shape_of(x)
    axes = tuple(reversed(range(len(shape)))) if axes is None else axes
    if sorted(a % max(len(shape), 1) for a in axes) != list(range(len(shape))):
        raise ValueError(f"permute_dims: axes {tuple(axes)} are not a permutation of {len(shape)} dims")
    return Spec(tuple(shape[a] for a in axes), dtype_of(x), is_weak(x))


_permute = register(OpDef("permute_dims", lambda xp, x, axes=None: xp.transpose(x, axes), _permute_infer,
                          safe_when_static=True))


def permute_dims(x, axes=None):
    return apply(_permute, (x,), {"axes": None if axes is None else tuple(int(a) for a in axes)})


# --- expand_dims / squeeze ---------------------------------------------------------

def _expand_infer(x, axis):
    shape = list(shape_of(x))
    for a in sorted(norm_axes(axis, len(shape) + len(axis), "expand_dims axis")):
        shape.insert(a, 1)
    return Spec(tuple(shape), dtype_of(x), is_weak(x))


def _expand_kernel(xp, x, axis):
    """A reshape to the longer shape: xp.expand_dims costs ten times as much on a small array."""
    x = xp.asarray(x)
    shape = list(x.shape)
    ndim = len(shape) + len(axis)
    for a in norm_axes(axis, ndim, "expand_dims axis"):
        shape.insert(a, 1)
    return x.reshape(shape)


def _emit_expand(gen, op):
    """Plan code: a subscript with `None` at the new axes (`x[:, None]`), a view as the reshape is."""
    x = op.inputs[0]
    axis = op.attrs.get("axis")
    if not gen.is_array(x) or set(op.attrs) != {"axis"}:
        return None
    ndim = x.ndim + len(axis)
    new = set(norm_axes(axis, ndim, "expand_dims axis"))
    return f"{gen.value(x)}[{', '.join('None' if i in new else ':' for i in range(ndim))}]"


_expand = register(OpDef("expand_dims", _expand_kernel, _expand_infer, safe_when_static=True, emit=_emit_expand))


def expand_dims(x, axis=0):
    axis = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(int(a) for a in axis)
    return apply(_expand, (x,), {"axis": axis})


def _squeeze_infer(x, axis=None):
    shape = shape_of(x)
    if axis is None:
        if -1 in shape:
            raise ValueError("squeeze: give `axis` when the shape has unknown dims")
        return Spec(tuple(d for d in shape if d != 1), dtype_of(x), is_weak(x))
    axes = norm_axes(axis, len(shape))
    for a in axes:
        if shape[a] not in (1, -1):
            raise ValueError(f"squeeze: cannot squeeze axis {a} of size {shape[a]}")
    return Spec(tuple(d for i, d in enumerate(shape) if i not in axes), dtype_of(x), is_weak(x))


_squeeze = register(OpDef("squeeze", lambda xp, x, axis=None: xp.squeeze(x, axis), _squeeze_infer,
                          safe_when_static=True))


def squeeze(x, axis=None):
    if axis is not None:
        axis = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(int(a) for a in axis)
    return apply(_squeeze, (x,), {"axis": axis})


# --- concat / stack ----------------------------------------------------------------

def _join_dtype(xs):
    return result_type(*(promote_operand(x) for x in xs))


def _concat_infer(*xs, axis=0):
    shapes = [shape_of(x) for x in xs]
    if not shapes:
        raise ValueError("concat: needs at least one array")
    if axis is None:  # flattens every array first: ranks may differ
        total = -1 if any(-1 in s for s in shapes) else sum(int(np.prod(s)) for s in shapes)
        return Spec((total,), _join_dtype(xs))
    ndim = len(shapes[0])
    if any(len(s) != ndim for s in shapes):
        raise ValueError(f"concat: all arrays need the same rank, got shapes {shapes}")
    (axis,) = norm_axes(axis, ndim)
    out = []
    for i in range(ndim):
        dims = [s[i] for s in shapes]
        if i == axis:
            out.append(-1 if -1 in dims else sum(dims))
        else:
            known = {d for d in dims if d != -1}
            if len(known) > 1:
                raise ValueError(f"concat: shapes {shapes} differ on axis {i}")
            out.append(known.pop() if known else -1)
    return Spec(tuple(out), _join_dtype(xs))


_concat = register(OpDef("concat", lambda xp, *xs, axis=0: xp.concatenate(xs, axis=axis), _concat_infer))


def _stack_infer(*xs, axis=0):
    shapes = [shape_of(x) for x in xs]
    if not shapes:
        raise ValueError("stack: needs at least one array")
    shape = broadcast_shapes(*shapes) if len({len(s) for s in shapes}) == 1 else None
    if shape is None or any(len(s) != len(shape) for s in shapes):
        raise ValueError(f"stack: all arrays need the same shape, got {shapes}")
    for s in shapes:
        if any(a != b and -1 not in (a, b) for a, b in zip(s, shape)):
            raise ValueError(f"stack: all arrays need the same shape, got {shapes}")
    (axis,) = norm_axes(axis, len(shape) + 1)
    return Spec(shape[:axis] + (len(xs),) + shape[axis:], _join_dtype(xs))


_stack = register(OpDef("stack", lambda xp, *xs, axis=0: xp.stack(xs, axis=axis), _stack_infer))


def concat(arrays, axis=0):
    """Join arrays along an existing axis; also takes a tensor array built by append in a loop."""
    if isinstance(arrays, Tracer) and arrays.kind == "array":
        return array_concat(arrays, axis)
    return apply(_concat, tuple(arrays), {"axis": None if axis is None else int(axis)})


def stack(arrays, axis=0):
    """Join arrays along a new axis; also takes a tensor array built by append in a loop."""
    if isinstance(arrays, Tracer) and arrays.kind == "array":
        return array_stack(arrays, axis)
    return apply(_stack, tuple(arrays), {"axis": int(axis)})


# --- broadcast_to / flip / dim -------------------------------------------------------

def _broadcast_to_infer(x, *shape):
    dims = tuple(d if isinstance(d, int) else -1 for d in shape)
    out = broadcast_shapes(shape_of(x), dims)
    if len(out) != len(dims):
        raise ValueError(f"broadcast_to: cannot broadcast {shape_of(x)} to {dims}")
    return Spec(tuple(d if d != -1 else o for d, o in zip(dims, out)), dtype_of(x), is_weak(x))


_broadcast_to = register(OpDef(
    "broadcast_to", lambda xp, x, *shape: xp.broadcast_to(x, tuple(int(d) for d in shape)), _broadcast_to_infer,
    safe_when_static=True))


def broadcast_to(x, shape):
    return apply(_broadcast_to, (x,) + tuple(shape), {})


def _flip_infer(x, axis=None):
    norm_axes(axis, len(shape_of(x)))
    return Spec(shape_of(x), dtype_of(x), is_weak(x))


_flip = register(OpDef("flip", lambda xp, x, axis=None: xp.flip(x, axis), _flip_infer, safe_when_static=True))


def flip(x, axis=None):
    if axis is not None:
        axis = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(int(a) for a in axis)
    return apply(_flip, (x,), {"axis": axis})


def _dim_infer(x, axis):
    norm_axes(axis, len(shape_of(x)))
    return Spec((), np.dtype(np.int64), weak=True)     # a size is a Python int: weakly typed


def _dim_kernel(xp, x, axis):
    return np.int64(x.shape[axis])


_dim = register(OpDef("dim", _dim_kernel, _dim_infer))


def dim(x, axis):
    """Size of one dim as a scalar int (symbolic while tracing when unknown)."""
    out = apply(_dim, (x,), {"axis": int(axis)})
    if isinstance(out, Tracer) and isinstance(x, Tracer):
        out.dim_of = (x.value, int(axis) % max(len(x.static_shape), 1))   # lets reshape cancel it against x
    return out


def shape(x):
    """x.shape, with unknown dims as scalar int Variables while tracing (a Variable's `.shape` is this)."""
    if not isinstance(x, Tracer):
        return x.shape
    dims = x.static_shape
    if -1 not in dims or tracing.current_block() is None:
        return dims
    return tuple(d if d != -1 else dim(x, i) for i, d in enumerate(dims))
