"""ONNX lowerings of x[index] (Slice, Gather, Unsqueeze) and x[index] = v (ScatterND / ScatterElements).

The index template (see runtime/ops/indexing.py) is read item by item after the
ellipsis is expanded: slices keep their axis, integer and scalar-tensor indices
drop it (Gather with a 0-d index; ONNX takes negative indices as Python does),
one integer array puts its dims in place of its axis, None adds an axis.
Boolean masks and several array indices (NumPy's advanced-index reordering)
are refused by name.
"""
import numpy as np

from ..indexing import decode_index
from ..registry import facet

_BIG = np.iinfo(np.int64)
_FULL = ["slice", None, None, None]


def expand_ellipsis(g, index, rank):
    """The index with '...' (explicit or implied at the end) replaced by full slices."""
    index = [list(it) if isinstance(it, tuple) else it for it in index]
    consumed = sum(1 for it in index if it is not None and it != "...")
    fill = [list(_FULL)] * (rank - consumed)
    if "..." in index:
        at = index.index("...")
        return index[:at] + fill + index[at + 1:]
    return index + fill


def _ref(refs, item):
    return refs[item["$"] - 1]


def _bound(g, refs, v):
    return _ref(refs, v) if isinstance(v, dict) else v


@facet("getitem", "onnx")
def _getitem(g, op):
    x, *refs = op.inputs
    items = expand_ellipsis(g, op.attrs["index"], g.rank(x))
    slices, gathers, new_axes = [], [], []
    axis = position = 0
    for item in items:
        if item is None:
            new_axes.append(position)
            position += 1
        elif isinstance(item, list):
            if item != _FULL:
                slices.append((axis, *(_bound(g, refs, v) for v in item[1:])))
            axis += 1
            position += 1
        else:
            index = _ref(refs, item) if isinstance(item, dict) else item
            if g.dtype(index).kind == "b":
                g.fail("boolean-mask indexing has no ONNX lowering here; use rt.where or rt.nonzero + rt.take")
            gathers.append((axis, index))
            axis += 1
            position += g.rank(index)
    if any(g.rank(i) for _, i in gathers) and len(gathers) > 1:
        g.fail("an index with an integer array and other integer indices (NumPy's advanced indexing) "
               "has no ONNX lowering here; index one axis at a time")
    value = g.value(x)
    if slices:
        value = _slice(g, value, slices)
    for axis, index in sorted(gathers, key=lambda item: -item[0]):
        value = g.node("Gather", [value, g.value(index, np.int64)], axis=axis)
    if new_axes:
        value = g.node("Unsqueeze", [value, g.ints(new_axes)])
    return g.node("Identity", [value]) if value == g.value(x) else value


def _slice(g, value, slices):
    starts, stops, axes, steps = [], [], [], []
    for axis, start, stop, step in slices:
        step = 1 if step is None else step
        if not isinstance(step, int) and (start is None or stop is None):
            g.fail("a slice with a tensor step and an open end has no ONNX lowering here")
        forward = not isinstance(step, int) or step > 0
        starts.append((0 if forward else _BIG.max) if start is None else start)
        stops.append((_BIG.max if forward else _BIG.min) if stop is None else stop)
        axes.append(axis)
        steps.append(step)
    return g.node("Slice", [value, g.shape_vector(starts), g.shape_vector(stops), g.ints(axes),
                            g.shape_vector(steps)])


@facet("setitem", "onnx")
def _setitem(g, op):
    x, new, *refs = op.inputs
    dtype = g.dtype(x)
    items = expand_ellipsis(g, op.attrs["index"], g.rank(x))
    n = _prefix(items)
    leading = [_ref(refs, it) if isinstance(it, dict) else it for it in items[:n]]
    if n and all(it == _FULL for it in items[n:]) and all(g.rank(i) == 0 and g.dtype(i).kind in "iu" for i in leading):
        return _set_rows(g, x, new, leading)
    if -1 in g.shape(x) or refs:
        g.fail("x[index] = v has an ONNX lowering for integer/tensor-scalar indices followed by full slices, or "
               "for constant indices into an array whose shape is known while tracing")
    shape = g.shape(x)
    positions = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[decode_index(op.attrs["index"], [])]
    region = g.ints(positions.shape)
    updates = g.node("Reshape", [g.node("Expand", [g.value(new, dtype), region]), g.ints([-1])])
    flat = g.node("Reshape", [g.value(x), g.ints([-1])])
    scattered = g.node("ScatterElements", [flat, g.ints(positions.reshape(-1)), updates], axis=0)
    return g.node("Reshape", [scattered, g.ints(shape)])


def _prefix(items):
    """How many leading items are integer or tensor indices."""
    n = 0
    while n < len(items) and isinstance(items[n], (int, dict)):
        n += 1
    return n


def _set_rows(g, x, new, indices):
    """x[i, j] = v for scalar i, j: one ScatterND row; negative indices counted from the end first."""
    data = g.value(x)
    shape = g.node("Shape", [data])
    parts = []
    for axis, index in enumerate(indices):
        i = g.scalar_int(index)
        size = g.node("Squeeze", [g.node("Shape", [data], start=axis, end=axis + 1), g.ints([0])])
        negative = g.cast(g.node("Less", [i, g.const(0, np.int64)]), np.int64)
        parts.append(g.node("Reshape", [g.node("Add", [i, g.node("Mul", [negative, size])]), g.ints([1])]))
    row = g.node("Unsqueeze", [g.node("Concat", parts, axis=0), g.ints([0])])
    tail = g.node("Slice", [shape, g.ints([len(indices)]), g.ints([_BIG.max])])
    update = g.node("Expand", [g.value(new, g.dtype(x)), tail])
    return g.node("ScatterND", [data, row, g.node("Unsqueeze", [update, g.ints([0])])])
