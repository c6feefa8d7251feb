"""ONNX lowerings of x[index] (Slice, Gather/GatherND, Unsqueeze) and x[index] = v (ScatterND).

The index template (see runtime/ops/indexing.py) is read item by item after the
ellipsis is expanded: slices keep their axis (Slice), integer and scalar-tensor
indices drop it (Gather with a 0-d index; ONNX takes negative indices as Python
does), None adds an axis. Integer arrays and boolean masks (a mask is its
`nonzero()` coordinates, as in NumPy) are NumPy's advanced indexing: one GatherND
over those axes moved to the front, its dims then placed where NumPy puts them.
x[index] = v scatters v at the coordinates the same selection picks from a grid
of coordinates; integer-array indices are refused there (ScatterND leaves a
repeated index unspecified, NumPy's last write wins).
"""
import numpy as np

from ...ir import Variable
from ..registry import facet

_BIG = np.iinfo(np.int64)
_FULL = ["slice", None, None, None]


def expand_ellipsis(g, index, rank, refs=()):
    """The index with '...' (explicit or implied at the end) replaced by full slices."""
    index = [list(it) if isinstance(it, tuple) else it for it in index]
    consumed = sum(g.rank(_ref(refs, it)) if _is_mask(g, refs, it) else 1
                   for it in index if it is not None and it != "...")
    fill = [list(_FULL)] * (rank - consumed)
    if "..." in index:
        at = index.index("...")
        return index[:at] + fill + index[at + 1:]
    return index + fill


def _ref(refs, item):
    return refs[item["$"] - 1]


def _is_mask(g, refs, item):
    return isinstance(item, dict) and g.dtype(_ref(refs, item)).kind == "b"


def _bound(g, refs, v):
    return _ref(refs, v) if isinstance(v, dict) else v


@facet("getitem", "onnx")
def _getitem(g, op):
    x, *refs = op.inputs
    items = expand_ellipsis(g, op.attrs["index"], g.rank(x), refs)
    value = select(g, g.value(x), g.rank(x), items, refs)
    return g.node("Identity", [value]) if value == g.value(x) else value


def select(g, value, rank, items, refs):
    """value[items]: slices first (axes stay), then the integer/array indices, then one Unsqueeze for the Nones."""
    slices, advanced, kinds = [], [], []       # kinds: per item, "new" / "slice" / "advanced"
    axis = 0
    for item in items:
        if item is None:
            kinds.append("new")
        elif isinstance(item, list):
            if item != _FULL:
                slices.append((axis, *(_bound(g, refs, v) for v in item[1:])))
            kinds.append("slice")
            axis += 1
        else:
            index = _ref(refs, item) if isinstance(item, dict) else item
            kinds.append("advanced")
            if g.dtype(index).kind == "b":
                if g.rank(index) == 0:
                    g.fail("indexing with a 0-d boolean has no ONNX lowering here")
                found = g.node("NonZero", [g.value(index)])      # x[mask] is x[mask.nonzero()]
                for k in range(g.rank(index)):
                    advanced.append((axis + k, g.node("Gather", [found, g.const(k, np.int64)], axis=0), 1))
                axis += g.rank(index)
            else:
                advanced.append((axis, g.value(index, np.int64), g.rank(index)))
                axis += 1
    if slices:
        value = _slice(g, value, slices)
    if not any(r for _, _, r in advanced):          # scalars only: each Gather drops its axis
        for axis, index, _ in sorted(advanced, key=lambda item: -item[0]):
            value = g.node("Gather", [value, index], axis=axis)
        new_axes = _positions(kinds, 0, front=False)
    else:
        value, width = _gather_nd(g, value, advanced, rank)
        first = kinds.index("advanced")
        last = len(kinds) - kinds[::-1].index("advanced")
        front = any(k != "advanced" for k in kinds[first:last])   # NumPy: split advanced indices go first
        if not front:
            before = kinds[:first].count("slice")
            rest = kinds.count("slice")
            perm = list(range(width, width + before)) + list(range(width)) + list(range(width + before, width + rest))
            if perm != sorted(perm):
                value = g.node("Transpose", [value], perm=perm)
        new_axes = _positions(kinds, width, front)
    if new_axes:
        value = g.node("Unsqueeze", [value, g.ints(new_axes)])
    return value


def _positions(kinds, width, front):
    """Output positions of the Nones: advanced indices give `width` dims, once, at the first of them (or in front)."""
    positions, at, placed = [], width if front else 0, front
    for kind in kinds:
        if kind == "new":
            positions.append(at)
            at += 1
        elif kind == "slice":
            at += 1
        elif not placed:
            at += width
            placed = True
    return positions


def _gather_nd(g, value, advanced, rank):
    """GatherND over the advanced axes moved to the front: (broadcast index dims, remaining dims); its width."""
    axes = [a for a, _, _ in advanced]
    rest = [a for a in range(rank) if a not in axes]
    if axes + rest != list(range(rank)):
        value = g.node("Transpose", [value], perm=axes + rest)
    shape = g.node("Shape", [value])
    indices = []
    for k, (_, index, _) in enumerate(advanced):
        size = g.node("Gather", [shape, g.const(k, np.int64)])
        negative = g.cast(g.node("Less", [index, g.const(0, np.int64)]), np.int64)
        indices.append(g.node("Add", [index, g.node("Mul", [negative, size])]))
    probe = g.const(np.zeros((), np.bool_))
    for index in indices:
        probe = g.node("Expand", [probe, g.node("Shape", [index])])
    common = g.node("Shape", [probe])
    stacked = g.node("Concat", [g.node("Unsqueeze", [g.node("Expand", [i, common]), g.ints([-1])]) for i in indices],
                     axis=-1)
    width = max(r for _, _, r in advanced)
    return g.node("GatherND", [value, stacked]), width


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
    """ScatterND at the coordinates the index selects: the same selection applied to a grid of coordinates."""
    x, new, *refs = op.inputs
    if any(isinstance(r, Variable) and g.rank(r) and g.dtype(r).kind in "iu" for r in refs):
        g.fail("x[index] = v with an integer-array index has no exact ONNX lowering (a repeated index is "
               "unspecified in ONNX's ScatterND; NumPy's last write wins)")
    rank = g.rank(x)
    if rank == 0:
        g.fail("x[index] = v on a 0-d array has no ONNX lowering here")
    data = g.value(x)
    items = expand_ellipsis(g, op.attrs["index"], rank, refs) + [list(_FULL)]
    coordinates = select(g, _coordinate_grid(g, data, rank), rank + 1, items, refs)
    region = g.node("Slice", [g.node("Shape", [coordinates]), g.ints([0]), g.ints([-1])])
    updates = g.node("Expand", [g.value(new, g.dtype(x)), region])
    return g.node("ScatterND", [data, coordinates, updates])


def _coordinate_grid(g, data, rank):
    """An int64 array of data's shape + (rank,): at [i, j, ...] it holds (i, j, ...)."""
    shape = g.node("Shape", [data])
    columns = []
    for axis in range(rank):
        size = g.node("Gather", [shape, g.const(axis, np.int64)])
        line = g.node("Range", [g.const(0, np.int64), size, g.const(1, np.int64)])
        along = [1] * rank
        along[axis] = -1
        column = g.node("Expand", [g.node("Reshape", [line, g.ints(along)]), shape])
        columns.append(g.node("Unsqueeze", [column, g.ints([-1])]))
    return g.node("Concat", columns, axis=-1)
