"""What the native tier may compile an op as: its `native` facet, or its ufunc.

The region emitter (`runtime/native/region.py`) knows a few forms, and asks each op of a region for
its form with `native_form(op)`; None means the op is not native and the region stays on NumPy.

- `("chain", steps, inputs)`: ufunc steps as a `fused_elementwise` op lists them, over `inputs`
  (Variables); every op that is one ufunc call (its `ufunc`, or `as_ufunc` for these inputs) is a
  one-step chain;
- `("matmul", a, b)`: NumPy's matmul of two Variables;
- `("take", x, i)`: `x[i]`, one index (a 0-d integer Variable or an int) on the first axis;
- `("reduce", ufunc, x)`: `ufunc.reduce` of a whole array to a 0-d value (`sum` of a float array);
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
    return ("matmul", a, b) if isinstance(a, Variable) and isinstance(b, Variable) else None


@facet("getitem", "native")
def _getitem(op):
    index = op.attrs.get("index")
    x = op.inputs[0]
    if set(op.attrs) != {"index"} or not isinstance(index, (list, tuple)) or len(index) != 1:
        return None
    if not isinstance(x, Variable) or x.kind != "dense" or x.ndim < 1:
        return None
    item = index[0]
    if isinstance(item, dict) and set(item) == {"$"} and len(op.inputs) == 2:
        i = op.inputs[item["$"]]
        if isinstance(i, Variable) and i.ndim == 0 and i.dtype.kind in "iu":
            return ("take", x, i)
    elif isinstance(item, int) and not isinstance(item, bool) and len(op.inputs) == 1:
        return ("take", x, item)
    return None


@facet("sum", "native")
def _sum(op):
    x = op.inputs[0]
    if (set(op.attrs) - {"axis", "keepdims", "dtype"} or op.attrs.get("axis") is not None
            or op.attrs.get("keepdims") or op.attrs.get("dtype") is not None):
        return None
    if not isinstance(x, Variable) or x.dtype.kind != "f":
        return None
    return ("reduce", "add", x)


facet("while", "native")(lambda op: ("loop",))
facet("cond", "native")(lambda op: ("branch",))
