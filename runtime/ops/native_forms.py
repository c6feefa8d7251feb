"""What the native tier may compile an op as: its `native` facet, or its ufunc.

The region emitter (`runtime/native/region.py`) knows a few forms, and asks each op of a region for
its form with `native_form(op)`; None means the op is not native and the region stays on NumPy.

- `("chain", steps, inputs)`: ufunc steps as a `fused_elementwise` op lists them, over `inputs`
  (Variables); every op that is one ufunc call (its `ufunc`, or `as_ufunc` for these inputs) is a
  one-step chain;
- `("matmul", a, b, transposed, bias)`: NumPy's `matmul(a, b.T if transposed else b)`, then
  `+= bias` where bias is a Variable (`linear`);
- `("index", x, axes)`: `x[...]` with, per axis, `("at", i)` (an int or a 0-d integer Variable, wrapped
  and range-checked as NumPy does), `("range", start, stop, step)` (a static slice, normalised) or
  `("new",)` (a new axis of 1);
- `("rows", table, ids, wrap)`: `table[ids]` on the first axis for an integer array ids, which must be in
  range (`embedding`), or may also count from the end (`wrap`: `take(x, ids, axis=0)`);
- `("softmax", x, log)`: (log_)softmax over the last axis, as its kernel computes it;
- `("layer_norm", x, weight, bias, eps)`: layer_norm over the last axis, as its kernel computes it (weight
  and bias Variables or None);
- `("topk", x, k)`: the k largest of each last-axis row and their indices, in the kernel's order;
- `("split", x, axis, bounds)`: the pieces `x[..., lo:hi]` of one axis;
- `("select", c, x, y)`: `where(c, x, y)`, x and y Variables or numbers;
- `("reduce", ufunc, x)`: `ufunc.reduce` of a whole array to a 0-d value (`sum`, `prod`, `max`, `min` of
  a float array; `all`/`any` as `logical_and`/`logical_or`); `("reduce_rows", ufunc, x)`: over the last axis;
- `("argmax", x, axis)` / `("argmin", x, axis)`: the first index of the largest / smallest value (a NaN
  first) over all, or the last axis;
- `("reduce_first", ufunc, x)`: `ufunc.reduce(x, axis=0)` of a 2-D float array (`sum(x, 0)`, ...);
- `("cast", x, dtype)`: `x.astype(dtype)`;
- `("transpose", x)`: `x.T` of a 2-D x (`permute_dims`, `.T`): a matmul reads it as NumPy's BLAS call does;
- `("append", arr, x)`: `arr.append(x)` on a tensor array a loop carries (its items kept in a buffer);
- `("array_read", arr, i)`, `("array_length", arr)`: `arr[i]` (i an int or a 0-d integer) and `len(arr)`
  of such an array;
- `("view", x)`: x's elements in the same C order under another static shape (reshape, squeeze, expand_dims);
- `("loop",)`, `("branch",)`: a `while` / `cond` whose sub-blocks are regions themselves.

Forms are a property of the op here, beside its OpDef, so no module outside runtime/ops names op types.
"""
from numbers import Number

from ..ir import Variable
from .fused import FUSED
from .registry import facet, get_op


def native_form(op):
    """The form op compiles as natively, or None."""
    opdef = get_op(op.type)
    if opdef.native is not None:
        return opdef.native(op)
    call = None
    if opdef.ufunc is not None and not op.attrs:
        call = (opdef.ufunc, list(op.inputs))
    elif opdef.as_ufunc is not None and not op.attrs:
        call = opdef.as_ufunc(list(op.inputs))
    if call is None:
        return None
    name, args = call
    inputs, step = [], [name]
    for a in args:
        if isinstance(a, Variable):
            step.append({"in": len(inputs)})
            inputs.append(a)
        elif isinstance(a, Number) and not isinstance(a, complex):
            step.append(a)
        else:
            return None
    return ("chain", (tuple(step),), inputs)


@facet(FUSED, "native")
def _fused(op):
    if set(op.attrs) - {"steps", "into"} or not all(isinstance(v, Variable) for v in op.inputs):
        return None
    return ("chain", tuple(tuple(s) for s in op.attrs["steps"]), list(op.inputs))


@facet("matmul", "native")
def _matmul(op):
    a, b = op.inputs
    return ("matmul", a, b, False, None) if isinstance(a, Variable) and isinstance(b, Variable) else None


@facet("linear", "native")
def _linear(op):
    x, w, bias = op.inputs
    if not (isinstance(x, Variable) and isinstance(w, Variable)) or x is w or op.attrs:
        return None
    if bias is not None and not isinstance(bias, Variable):
        return None
    return ("matmul", x, w, True, bias)


@facet("embedding", "native")
def _embedding(op):
    ids, table = op.inputs
    if op.attrs or not (isinstance(ids, Variable) and isinstance(table, Variable)) or table.ndim != 2:
        return None
    return ("rows", table, ids, False)


@facet("take", "native")
def _take(op):
    x, ids = op.inputs
    axis = op.attrs.get("axis")
    if set(op.attrs) - {"axis"} or not (isinstance(x, Variable) and isinstance(ids, Variable)) or not x.ndim:
        return None
    if (0 if axis is None else axis) not in (0, -x.ndim):
        return None
    return ("rows", x, ids, True)


def _softmax(log):
    def form(op):
        x = op.inputs[0]
        axis = op.attrs.get("axis", -1)
        if set(op.attrs) - {"axis"} or not isinstance(x, Variable) or not x.ndim or x.dtype.kind != "f":
            return None
        return ("softmax", x, log) if isinstance(axis, int) and axis % x.ndim == x.ndim - 1 else None
    return form


@facet("layer_norm", "native")
def _layer_norm(op):
    x, weight, bias = op.inputs
    norm, eps = op.attrs.get("normalized_shape"), op.attrs.get("eps")
    if set(op.attrs) != {"normalized_shape", "eps"} or not isinstance(x, Variable) or not x.ndim:
        return None
    if not isinstance(norm, (list, tuple)) or len(norm) != 1 or not isinstance(eps, float):
        return None
    if x.dtype.kind != "f" or any(p is not None and not isinstance(p, Variable) for p in (weight, bias)):
        return None
    return ("layer_norm", x, weight, bias, eps)


facet("softmax", "native")(_softmax(False))
facet("log_softmax", "native")(_softmax(True))


@facet("topk", "native")
def _topk(op):
    x = op.inputs[0]
    k, axis, largest = op.attrs.get("k"), op.attrs.get("axis", -1), op.attrs.get("largest", True)
    if set(op.attrs) - {"k", "axis", "largest"} or not isinstance(x, Variable) or not x.ndim or largest is not True:
        return None
    if not isinstance(k, int) or not isinstance(axis, int) or axis % x.ndim != x.ndim - 1:
        return None
    return ("topk", x, k)


@facet("split", "native")
def _split(op):
    x = op.inputs[0]
    sections, axis = op.attrs.get("sections"), op.attrs.get("axis", 0)
    if set(op.attrs) - {"sections", "axis"} or not isinstance(x, Variable) or not x.ndim:
        return None
    if not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        return None
    axis %= x.ndim
    size = x.static_shape[axis]
    if size <= 0 or not isinstance(sections, int) or sections <= 0 or size % sections:
        return None
    step = size // sections
    return ("split", x, axis, [(lo, lo + step) for lo in range(0, size, step)])


@facet("where", "native")
def _where(op):
    c, x, y = op.inputs
    if op.attrs or not isinstance(c, Variable) or c.dtype.kind != "b":
        return None
    for v in (x, y):
        if not isinstance(v, Variable) and not (isinstance(v, Number) and not isinstance(v, complex)):
            return None
    return ("select", c, x, y)


@facet("getitem", "native")
def _getitem(op):
    index = op.attrs.get("index")
    x = op.inputs[0]
    if set(op.attrs) != {"index"} or not isinstance(index, (list, tuple)):
        return None
    if not isinstance(x, Variable) or x.kind != "dense" or x.ndim < 1 or -1 in x.static_shape:
        return None
    items = list(index)
    if items.count("...") > 1:
        return None
    used = sum(1 for item in items if item is not None and item != "...")
    if "..." in items:
        at = items.index("...")
        items[at:at + 1] = [["slice", None, None, None]] * (x.ndim - used)
    if used > x.ndim:
        return None
    else:
        items += [["slice", None, None, None]] * (x.ndim - used)
    axes, dims = [], iter(x.static_shape)
    for item in items:
        if item is None:
            axes.append(("new",))
            continue
        dim = next(dims, None)
        if dim is None or isinstance(item, bool):
            return None
        if isinstance(item, int):
            axes.append(("at", item))
        elif isinstance(item, dict) and set(item) == {"$"}:
            i = op.inputs[item["$"]]
            if not (isinstance(i, Variable) and i.ndim == 0 and i.dtype.kind in "iu"):
                return None
            axes.append(("at", i))
        elif isinstance(item, (list, tuple)) and len(item) == 4 and item[0] == "slice":
            bounds = item[1:]
            if not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds):
                return None
            if bounds[2] == 0:
                return None
            axes.append(("range",) + slice(*bounds).indices(dim))
        else:
            return None
    return ("index", x, axes)


def _reduction(ufunc, kinds):
    """The `native` facet of a reduction op: whole (`reduce`), or over the last axis (`reduce_rows`)."""
    def form(op):
        x = op.inputs[0]
        axis = op.attrs.get("axis")
        if (set(op.attrs) - {"axis", "keepdims", "dtype"} or op.attrs.get("keepdims")
                or op.attrs.get("dtype") is not None or not isinstance(x, Variable) or x.dtype.kind not in kinds):
            return None
        if axis is None:
            return ("reduce", ufunc, x)
        if isinstance(axis, (list, tuple)) and len(axis) == 1:
            axis = axis[0]
        if (isinstance(axis, int) and not isinstance(axis, bool) and x.ndim and -x.ndim <= axis < x.ndim
                and axis % x.ndim == x.ndim - 1):
            return ("reduce_rows", ufunc, x)
        if (isinstance(axis, int) and not isinstance(axis, bool) and x.ndim == 2 and axis % 2 == 0
                and x.dtype.kind == "f"):
            return ("reduce_first", ufunc, x)
        return None
    return form


for _name, _ufunc, _kinds in (("sum", "add", "f"), ("prod", "multiply", "f"), ("max", "maximum", "f"),
                              ("min", "minimum", "f"), ("all", "logical_and", "biuf"), ("any", "logical_or", "biuf")):
    facet(_name, "native")(_reduction(_ufunc, _kinds))


def _arg_extreme(kind):
    """The `native` facet of argmax / argmin: over all, or over the last axis."""
    def form(op):
        x = op.inputs[0]
        axis = op.attrs.get("axis")
        if set(op.attrs) - {"axis", "keepdims"} or op.attrs.get("keepdims") or not isinstance(x, Variable) or not x.ndim:
            return None
        if axis is not None and (not isinstance(axis, int) or axis % x.ndim != x.ndim - 1):
            return None
        return (kind, x, axis)
    return form


facet("argmax", "native")(_arg_extreme("argmax"))
facet("argmin", "native")(_arg_extreme("argmin"))


@facet("astype", "native")
def _astype(op):
    x = op.inputs[0]
    if set(op.attrs) != {"dtype"} or not isinstance(x, Variable) or x.kind != "dense":
        return None
    return ("cast", x, op.outputs[0].dtype)


@facet("permute_dims", "native")
def _permute_dims(op):
    x = op.inputs[0]
    axes = op.attrs.get("axes")
    if set(op.attrs) - {"axes"} or not isinstance(x, Variable) or x.ndim != 2:
        return None
    return ("transpose", x) if axes is None or [a % 2 for a in axes] == [1, 0] else None


@facet("array_append", "native")
def _append(op):
    arr, x = op.inputs
    if op.attrs or not (isinstance(arr, Variable) and isinstance(x, Variable)) or arr.kind != "array":
        return None
    return ("append", arr, x)


@facet("array_read", "native")
def _array_read(op):
    arr, i = op.inputs
    if op.attrs or not isinstance(arr, Variable) or arr.kind != "array":
        return None
    if not (isinstance(i, int) or isinstance(i, Variable) and i.kind == "dense" and i.ndim == 0
            and i.dtype.kind in "biu"):
        return None
    return ("array_read", arr, i)


@facet("array_length", "native")
def _array_length(op):
    arr = op.inputs[0]
    return ("array_length", arr) if not op.attrs and isinstance(arr, Variable) and arr.kind == "array" else None


def _view(op):
    x = op.inputs[0]
    return ("view", x) if isinstance(x, Variable) and x.kind == "dense" else None


for _name in ("reshape", "squeeze", "expand_dims"):
    facet(_name, "native")(_view)

facet("while", "native")(lambda op: ("loop",))
facet("cond", "native")(lambda op: ("branch",))
