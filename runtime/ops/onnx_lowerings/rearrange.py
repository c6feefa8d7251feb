"""ONNX lowerings of gathers, sorting and rearrangements (take, topk, sort, tile, roll, pad, einsum...)."""
import string

import numpy as np

from ...dtypes import result_type
from ..registry import facet
from ..rules import promote_operand
from .nn import batched
from .reduction import reduce

_BIG = np.iinfo(np.int64)


@facet("take", "onnx")
def _take(g, op):
    x, indices = op.inputs
    return g.node("Gather", [g.value(x), g.value(indices, np.int64)], axis=int(op.attrs.get("axis") or 0))


@facet("take_along_axis", "onnx")
def _take_along_axis(g, op):
    x, indices = op.inputs
    if g.shape(x)[:-1] != g.shape(indices)[:-1] and len(g.shape(x)) > 1:
        shape = [max(a, b) if -1 not in (a, b) else -1 for a, b in zip(g.shape(x), g.shape(indices))]
        if -1 in shape:
            g.fail("take_along_axis that broadcasts dynamic dims has no ONNX lowering here")
    axis = int(op.attrs.get("axis", -1)) % g.rank(x)
    data, index = g.value(x), g.value(indices, np.int64)
    target = list(op.outputs[0].static_shape)
    if -1 not in target:                      # NumPy broadcasts the other dims of both
        x_shape = [d if a == axis else t for a, (d, t) in enumerate(zip(g.shape(x), target))]
        data = g.node("Expand", [data, g.ints(x_shape)])
        index = g.node("Expand", [index, g.ints(target)])
    return g.node("GatherElements", [data, index], axis=axis)


@facet("one_hot", "onnx")
def _one_hot(g, op):
    (indices,) = op.inputs
    classes = g.node("Range", [g.const(0, np.int64), g.const(op.attrs["num_classes"], np.int64),
                               g.const(1, np.int64)])
    hits = g.node("Equal", [g.node("Unsqueeze", [g.value(indices, np.int64), g.ints([-1])]), classes])
    return g.cast(hits, op.outputs[0].dtype)


@facet("tril", "onnx")
@facet("triu", "onnx")
def _trilu(g, op):
    (x,) = op.inputs
    return g.node("Trilu", [g.value(x), g.const(int(op.attrs.get("k", 0)), np.int64)], upper=int(op.type == "triu"))


@facet("tile", "onnx")
def _tile(g, op):
    (x,) = op.inputs
    reps = list(op.attrs["repetitions"])
    rank = g.rank(x)
    value = g.value(x)
    if len(reps) > rank:
        value = g.node("Unsqueeze", [value, g.ints(range(len(reps) - rank))])
    reps = [1] * (rank - len(reps)) + reps
    return g.node("Tile", [value, g.ints(reps)])


@facet("repeat", "onnx")
def _repeat(g, op):
    """Each element `repeats` times along axis: a new axis after it, expanded, then merged."""
    x, repeats = op.inputs
    if not isinstance(repeats, int):
        g.fail("repeat with per-element counts (a tensor) has no ONNX lowering here")
    value, axis = g.value(x), op.attrs.get("axis")
    if axis is None:
        value, axis = g.node("Reshape", [value, g.ints([-1])]), 0
    axis = axis % max(g.rank(x), 1) if op.attrs.get("axis") is not None else 0
    shape = g.node("Shape", [value])
    expanded = g.node("Unsqueeze", [value, g.ints([axis + 1])])
    tiled_shape = g.node("Concat", [g.node("Slice", [shape, g.ints([0]), g.ints([axis + 1])]), g.ints([repeats]),
                                    g.node("Slice", [shape, g.ints([axis + 1]), g.ints([_BIG.max])])], axis=0)
    tiled = g.node("Expand", [expanded, tiled_shape])
    size = g.node("Mul", [g.node("Slice", [shape, g.ints([axis]), g.ints([axis + 1])]), g.ints([repeats])])
    merged = g.node("Concat", [g.node("Slice", [shape, g.ints([0]), g.ints([axis])]), size,
                               g.node("Slice", [shape, g.ints([axis + 1]), g.ints([_BIG.max])])], axis=0)
    return g.node("Reshape", [tiled, merged])


@facet("roll", "onnx")
def _roll(g, op):
    (x,) = op.inputs
    shift, axis = op.attrs["shift"], op.attrs.get("axis")
    value = g.value(x)
    if axis is None:
        flat = _roll_axis(g, g.node("Reshape", [value, g.ints([-1])]), int(shift), 0)
        return g.node("Reshape", [flat, g.node("Shape", [value])])
    shifts = list(shift) if isinstance(shift, (list, tuple)) else [shift]
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    total = {}
    for s, a in zip(shifts, axes):           # NumPy adds the shifts of a repeated axis
        total[a % g.rank(x)] = total.get(a % g.rank(x), 0) + int(s)
    for a, s in total.items():
        value = _roll_axis(g, value, s, a)
    return g.node("Identity", [value])


def _roll_axis(g, value, shift, axis):
    """x[-k:] ++ x[:-k] along axis, with k = shift mod the axis' size (read at run time)."""
    size = g.node("Shape", [value], start=axis, end=axis + 1)
    cut = g.node("Sub", [size, g.node("Mod", [g.ints([shift]), size], fmod=0)])
    tail = g.node("Slice", [value, cut, g.ints([_BIG.max]), g.ints([axis])])
    head = g.node("Slice", [value, g.ints([0]), cut, g.ints([axis])])
    return g.node("Concat", [tail, head], axis=axis)


@facet("moveaxis", "onnx")
def _moveaxis(g, op):
    (x,) = op.inputs
    rank = g.rank(x)
    source = [a % rank for a in op.attrs["source"]]
    destination = [a % rank for a in op.attrs["destination"]]
    order = [a for a in range(rank) if a not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return g.node("Transpose", [g.value(x)], perm=order)


@facet("unstack", "onnx")
def _unstack(g, op):
    (x,) = op.inputs
    axis = op.attrs.get("axis", 0) % g.rank(x)
    n = len(op.outputs)
    value = g.value(x)
    pieces = g.node("Split", [value], outputs=n, axis=axis, num_outputs=n) if n > 1 else [value]
    return [g.node("Squeeze", [p, g.ints([axis])]) for p in pieces]


@facet("topk", "onnx")
def _topk(g, op):
    """TopK: equal values keep their order (lower index first), as the kernel's stable sort does."""
    (x,) = op.inputs
    values, indices = g.node("TopK", [g.value(x), g.ints([op.attrs["k"]])], outputs=2,
                             axis=int(op.attrs.get("axis", -1)), largest=int(bool(op.attrs.get("largest", True))),
                             sorted=1)
    return [values, indices]


@facet("sort", "onnx")
@facet("argsort", "onnx")
def _sort(g, op):
    (x,) = op.inputs
    axis = int(op.attrs.get("axis", -1)) % g.rank(x)
    value = g.value(x)
    size = g.node("Shape", [value], start=axis, end=axis + 1)
    values, indices = g.node("TopK", [value, size], outputs=2, axis=axis,
                             largest=int(bool(op.attrs.get("descending"))), sorted=1)
    return values if op.type == "sort" else indices


@facet("count_nonzero", "onnx")
def _count_nonzero(g, op):
    (x,) = op.inputs
    nonzero = g.node("Not", [g.node("Equal", [g.value(x), g.const(0, g.dtype(x))])]) if g.dtype(x).kind != "b" \
        else g.value(x)
    return reduce(g, "ReduceSum", g.cast(nonzero, np.int64), op.attrs.get("axis"), op.attrs.get("keepdims"))


@facet("einsum", "onnx")
def _einsum(g, op):
    dtype = op.outputs[0].dtype
    if dtype.kind not in "fi":
        g.fail(f"einsum of {dtype.name} has no onnxruntime kernel")
    return g.node("Einsum", [g.value(x, dtype) for x in op.inputs], equation=op.attrs["subscripts"].replace(" ", ""))


@facet("tensordot", "onnx")
def _tensordot(g, op):
    """As an Einsum equation written here from the axes."""
    a, b = op.inputs
    ra, rb = g.rank(a), g.rank(b)
    axes = op.attrs.get("axes", 2)
    if isinstance(axes, int):
        pairs = list(zip(range(ra - axes, ra), range(axes)))
    else:
        left, right = axes
        left = [left] if isinstance(left, int) else left
        right = [right] if isinstance(right, int) else right
        pairs = [(x % ra, y % rb) for x, y in zip(left, right)]
    letters = iter(string.ascii_letters)
    la = [next(letters) for _ in range(ra)]
    lb = [next(letters) for _ in range(rb)]
    for x, y in pairs:
        lb[y] = la[x]
    contracted = {x for x, _ in pairs}
    out = [c for i, c in enumerate(la) if i not in contracted] + [c for j, c in enumerate(lb)
                                                                 if j not in {y for _, y in pairs}]
    dtype = op.outputs[0].dtype
    return g.node("Einsum", [g.value(a, dtype), g.value(b, dtype)],
                  equation=f"{''.join(la)},{''.join(lb)}->{''.join(out)}")


@facet("linalg_outer", "onnx")
def _outer(g, op):
    a, b = op.inputs
    dtype = op.outputs[0].dtype
    return g.node("Mul", [g.node("Unsqueeze", [g.value(a, dtype), g.ints([1])]),
                          g.node("Unsqueeze", [g.value(b, dtype), g.ints([0])])])


@facet("vecdot", "onnx")
def _vecdot(g, op):
    a, b = op.inputs
    dtype = op.outputs[0].dtype
    if dtype.kind == "c":
        g.fail("complex numbers have no ONNX kernels in onnxruntime")
    product = g.node("Mul", [g.value(a, dtype), g.value(b, dtype)])
    return reduce(g, "ReduceSum", product, op.attrs.get("axis", -1), False)


@facet("linalg_vector_norm", "onnx")
def _vector_norm(g, op):
    (x,) = op.inputs
    dtype = op.outputs[0].dtype
    value = g.node("Abs", [g.value(x, dtype)])
    axis, keepdims, order = op.attrs.get("axis"), op.attrs.get("keepdims"), op.attrs.get("ord", 2)
    if order == float("inf"):
        return reduce(g, "ReduceMax", value, axis, keepdims)
    if order == -float("inf"):
        return reduce(g, "ReduceMin", value, axis, keepdims)
    if order == 1:
        return reduce(g, "ReduceSum", value, axis, keepdims)
    if order == 2:
        return g.node("Sqrt", [reduce(g, "ReduceSum", g.node("Mul", [value, value]), axis, keepdims)])
    if order == 0 or order < 0:
        g.fail(f"vector_norm of ord={order} has no ONNX lowering here")
    powered = g.node("Pow", [value, g.const(order, dtype)])
    return g.node("Pow", [reduce(g, "ReduceSum", powered, axis, keepdims), g.const(1 / order, dtype)])


@facet("pad", "onnx")
def _pad(g, op):
    (x,) = op.inputs
    mode = op.attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        g.fail(f"pad mode {mode!r} has no ONNX lowering here")
    widths = [tuple(w) for w in op.attrs["pad_width"]]
    pads = g.ints([w[0] for w in widths] + [w[1] for w in widths])
    inputs = [g.value(x), pads]
    if mode == "constant":
        inputs.append(g.const(op.attrs.get("constant_values", 0), g.dtype(x)))
    return g.node("Pad", inputs, mode=mode)


@facet("signbit", "onnx")
def _signbit(g, op):
    (x,) = op.inputs
    return signbit(g, g.value(x), g.dtype(x))


def signbit(g, value, dtype):
    """x < 0, or x == -0.0 (where 1 / x is -inf); NaN counts as positive, booleans never have a sign."""
    if dtype.kind == "b":
        return g.node("ConstantOfShape", [g.node("Shape", [value])], value=np.zeros(1, np.bool_))
    negative = g.node("Less", [value, g.const(0, dtype)])
    if dtype.kind != "f":
        return negative
    zero = g.node("Equal", [value, g.const(0, dtype)])
    minus_zero = g.node("And", [zero, g.node("Less", [g.node("Div", [g.const(1, dtype), value]), g.const(0, dtype)])])
    return g.node("Or", [negative, minus_zero])


@facet("copysign", "onnx")
def _copysign(g, op):
    x, y = op.inputs
    dtype = op.outputs[0].dtype
    magnitude = g.node("Abs", [g.value(x, dtype)])
    return g.node("Where", [signbit(g, g.value(y, dtype), dtype), g.node("Neg", [magnitude]), magnitude])


@facet("real", "onnx")
@facet("imag", "onnx")
def _real_imag(g, op):
    (x,) = op.inputs
    if g.dtype(x).kind == "c":
        g.fail("complex numbers have no ONNX kernels in onnxruntime")
    if op.type == "real":
        return g.node("Identity", [g.value(x)])
    return g.node("ConstantOfShape", [g.node("Shape", [g.value(x)])], value=np.zeros(1, op.outputs[0].dtype))


def broadcast_shape(g, values):
    """The broadcast shape of `values` (Expand of one element over each shape in turn)."""
    probe = g.const(np.zeros((), np.bool_))
    for v in values:
        probe = g.node("Expand", [probe, g.node("Shape", [v])])
    return g.node("Shape", [probe])


@facet("broadcast_arrays", "onnx")
def _broadcast_arrays(g, op):
    values = [g.value(x) for x in op.inputs]
    shape = broadcast_shape(g, values)
    return [g.node("Expand", [v, shape]) for v in values]


@facet("meshgrid", "onnx")
def _meshgrid(g, op):
    n = len(op.inputs)
    xy = op.attrs.get("indexing", "xy") == "xy" and n >= 2
    positions = list(range(n))
    if xy:
        positions[0], positions[1] = 1, 0
    columns = []
    for x, position in zip(op.inputs, positions):
        shape = [1] * n
        shape[position] = -1
        columns.append(g.node("Reshape", [g.value(x), g.ints(shape)]))
    full = broadcast_shape(g, columns)
    return [g.node("Expand", [c, full]) for c in columns]


@facet("nonzero", "onnx")
def _nonzero(g, op):
    (x,) = op.inputs
    found = g.node("NonZero", [g.value(x)])
    return [g.node("Gather", [found, g.const(i, np.int64)], axis=0) for i in range(len(op.outputs))]


@facet("linspace", "onnx")
def _linspace(g, op):
    start, stop, num = op.inputs
    if not all(isinstance(v, (int, float)) for v in (start, stop, num)):
        g.fail("linspace with bounds known only at run time has no ONNX lowering here")
    values = np.linspace(start, stop, num, dtype=op.attrs["dtype"], endpoint=op.attrs["endpoint"])
    return g.node("Identity", [g.const(values)])


@facet("cumulative", "onnx")
def _cumulative(g, op):
    (x,) = op.inputs
    if op.attrs.get("kind", "sum") != "sum":
        g.fail("a cumulative product has no ONNX operator")
    dtype = op.outputs[0].dtype
    axis = op.attrs.get("axis")
    axis = 0 if axis is None else int(axis) % max(g.rank(x), 1)
    out = g.node("CumSum", [g.value(x, dtype), g.const(axis, np.int64)])
    if op.attrs.get("include_initial"):
        rank = g.rank(x)
        pads = [0] * (2 * rank)
        pads[axis] = 1
        out = g.node("Pad", [out, g.ints(pads), g.const(0, dtype)])
    return out


@facet("diff", "onnx")
def _diff(g, op):
    x, *extra = op.inputs
    axis = int(op.attrs.get("axis", -1)) % g.rank(x)
    dtype = op.outputs[0].dtype
    value = g.value(x, dtype)
    if extra:
        shape = g.node("Shape", [value])
        slab_shape = g.node("ScatterElements", [shape, g.ints([axis]), g.ints([1])], axis=0)
        slabs = [g.node("Expand", [g.value(e, dtype), slab_shape]) if g.rank(e) != g.rank(x) else g.value(e, dtype)
                 for e in extra]
        before = [slabs[0]] if op.attrs.get("prepend") else []
        after = [slabs[-1]] if op.attrs.get("append") else []
        value = g.node("Concat", before + [value] + after, axis=axis)
    for _ in range(int(op.attrs.get("n", 1))):
        upper = g.node("Slice", [value, g.ints([1]), g.ints([_BIG.max]), g.ints([axis])])
        lower = g.node("Slice", [value, g.ints([0]), g.ints([-1]), g.ints([axis])])
        value = g.node("Xor" if dtype.kind == "b" else "Sub", [upper, lower])
    return value


@facet("scatter", "onnx")
def _scatter(g, op):
    """Only reduce='add' (ScatterElements with reduction='add'): 'set' with repeated indices is unspecified in ONNX."""
    x, index, src = op.inputs
    if op.attrs.get("reduce", "set") != "add":
        g.fail("scatter with reduce='set' has no exact ONNX lowering (repeated indices are unspecified in ONNX)")
    dtype = g.dtype(x)
    indices = g.value(index, np.int64)
    updates = g.value(src, dtype)
    index_shape = g.node("Shape", [indices])
    if g.rank(src) == 0:
        updates = g.node("Expand", [updates, index_shape])
    elif g.shape(src) != g.shape(index) or -1 in g.shape(src):
        updates = g.node("Slice", [updates, g.ints([0] * g.rank(index)), index_shape])
    axis = int(op.attrs.get("axis", 0)) % g.rank(x)
    return g.node("ScatterElements", [g.value(x), indices, updates], axis=axis, reduction="add")


@facet("conv_transpose2d", "onnx")
def _conv_transpose2d(g, op):
    _, weight, bias = op.inputs
    ph, pw = op.attrs["padding"]
    inputs = [g.value(weight)] + ([g.value(bias)] if bias is not None else [])
    return batched(g, op, lambda x: g.node(
        "ConvTranspose", [x, *inputs], strides=list(op.attrs["stride"]), pads=[ph, pw, ph, pw],
        output_padding=list(op.attrs["output_padding"]), dilations=list(op.attrs["dilation"]),
        group=int(op.attrs["groups"])))



@facet("searchsorted", "onnx")
def _searchsorted(g, op):
    """How many sorted values come before each query: a < v ('left') or a <= v ('right'), NaN sorting last."""
    x1, x2, sorter = op.inputs
    dtype = result_type(promote_operand(x1), promote_operand(x2))
    values = g.value(x1, dtype)
    if sorter is not None:
        values = g.node("Gather", [values, g.value(sorter, np.int64)], axis=0)
    queries = g.node("Unsqueeze", [g.value(x2, dtype), g.ints([-1])])
    right = op.attrs.get("side", "left") == "right"
    before = g.node("LessOrEqual" if right else "Less", [values, queries])
    if dtype.kind == "f":
        nan_query = g.node("IsNaN", [queries])
        if not right:
            nan_query = g.node("And", [nan_query, g.node("Not", [g.node("IsNaN", [values])])])
        before = g.node("Or", [before, nan_query])
    return reduce(g, "ReduceSum", g.cast(before, np.int64), -1, False)


def _diagonal_mask(g, op, x):
    """A constant bool mask of the last two (static) dims marking the diagonal at op.attrs['offset']."""
    n, m = g.shape(x)[-2:]
    if -1 in (n, m):
        g.fail(f"{op.type} needs the last two dims known while tracing")
    offset = int(op.attrs.get("offset", 0))
    return g.const(np.eye(n, m, offset, dtype=np.bool_)), n, m, offset


@facet("linalg_diagonal", "onnx")
def _diagonal(g, op):
    """Each row's diagonal element (zeros elsewhere, summed away), for the rows the diagonal crosses."""
    (x,) = op.inputs
    mask, n, m, offset = _diagonal_mask(g, op, x)
    value = g.value(x)
    picked = g.node("Where", [mask, value, g.const(0, g.dtype(x))])
    rows = g.cast(picked, np.int8) if g.dtype(x).kind == "b" else picked
    summed = reduce(g, "ReduceSum", rows, -1, False)
    summed = g.cast(summed, np.bool_) if g.dtype(x).kind == "b" else summed
    start, stop = max(0, -offset), max(0, min(n, m - offset))
    return g.node("Slice", [summed, g.ints([start]), g.ints([stop]), g.ints([-1])])


@facet("linalg_trace", "onnx")
def _trace(g, op):
    (x,) = op.inputs
    mask, _, _, _ = _diagonal_mask(g, op, x)
    dtype = op.outputs[0].dtype
    picked = g.node("Where", [mask, g.value(x, dtype), g.const(0, dtype)])
    return reduce(g, "ReduceSum", picked, [-2, -1], False)


@facet("atan2", "onnx")
def _atan2(g, op):
    """atan(y / x) moved by ±pi into the quadrant of (x, y), with IEEE's answers on the axes and at infinities."""
    dtype = op.outputs[0].dtype
    if dtype != np.float32:
        g.fail(f"atan2 of {dtype.name}: onnxruntime's Atan has a float32 kernel only")
    y, x = (g.value(v, dtype) for v in op.inputs)
    zero, pi = g.const(0, dtype), g.const(np.pi, dtype)
    y_negative, x_negative = signbit(g, y, dtype), signbit(g, x, dtype)
    y_sign = g.node("Where", [y_negative, g.const(-1, dtype), g.const(1, dtype)])
    turn = g.node("Mul", [y_sign, pi])
    out = g.node("Atan", [g.node("Div", [y, x])])
    out = g.node("Where", [g.node("Less", [x, zero]), g.node("Add", [out, turn]), out])
    on_y_axis = g.node("Where", [g.node("IsNaN", [y]), y, g.node("Mul", [y_sign, g.const(np.pi / 2, dtype)])])
    x_zero = g.node("Equal", [x, zero])
    out = g.node("Where", [x_zero, on_y_axis, out])
    signed_zero = g.node("Mul", [y_sign, zero])                 # atan2(±0, +0) = ±0, atan2(±0, -0) = ±pi
    at_origin = g.node("Where", [x_negative, turn, signed_zero])
    out = g.node("Where", [g.node("And", [x_zero, g.node("Equal", [y, zero])]), at_origin, out])
    corner = g.node("Mul", [y_sign, g.node("Where", [x_negative, g.const(3 * np.pi / 4, dtype),
                                                      g.const(np.pi / 4, dtype)])])
    both_infinite = g.node("And", [g.node("IsInf", [x]), g.node("IsInf", [y])])
    return g.node("Where", [both_infinite, corner, out])
