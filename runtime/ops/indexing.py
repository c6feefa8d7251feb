"""x[index] and the functional update x[index] = v.

An index is encoded as a JSON-able template: ints, ["slice", a, b, c], None
(new axis), "..." , and {"$": k} for a value that is op input k (a Variable
bound, an integer-array gather, a boolean mask). The kernel rebuilds the
Python index from the template, so the IR stays plain data.
"""
import numpy as np

from ..ir import Variable
from ..tensor import EagerTensor
from ..tracer import Tracer
from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, broadcast_shapes, dtype_of, is_weak, shape_of
from .tensor_array import array_read, array_slice


def encode_index(index):
    """(template, dynamic inputs) for a Python index."""
    if not isinstance(index, tuple):
        index = (index,)
    inputs = []

    def ref(value):
        inputs.append(value)
        return {"$": len(inputs)}

    def enc(item):
        if item is None:
            return None
        if item is Ellipsis:
            return "..."
        if isinstance(item, slice):
            return ["slice"] + [enc_scalar(v) for v in (item.start, item.stop, item.step)]
        if isinstance(item, (bool, np.bool_)):
            return ref(np.asarray(item))
        if isinstance(item, (int, np.integer)):
            return int(item)
        if isinstance(item, (Tracer, EagerTensor)):
            return ref(item)
        if isinstance(item, (list, np.ndarray)):
            return ref(np.asarray(item))
        raise TypeError(f"unsupported index {item!r} ({type(item).__name__})")

    def enc_scalar(v):
        if v is None or isinstance(v, (int, np.integer)):
            return None if v is None else int(v)
        if isinstance(v, (Tracer, EagerTensor)):
            return ref(v)
        raise TypeError(f"slice bounds must be integers, got {v!r}")

    return [enc(item) for item in index], inputs


def decode_index(template, inputs):
    def dec(item):
        if isinstance(item, dict):
            return inputs[item["$"] - 1]
        if item == "...":
            return Ellipsis
        if isinstance(item, (list, tuple)) and item and item[0] == "slice":
            return slice(*(_scalar(dec(v)) if v is not None else None for v in item[1:]))
        return item
    return tuple(dec(item) for item in template)


def _scalar(v):
    return v if isinstance(v, int) else int(v)


def index_source(template, names):
    """The index as Python subscript source over the inputs' source `names` (a plan inlines `x[i, 1:n]`),
    or None when an item is not plain (a bool, a malformed item from a file: the kernel call decides)."""
    def ref(item):
        if isinstance(item, dict) and set(item) == {"$"} and _is_int(item["$"]) and 1 <= item["$"] <= len(names):
            return names[item["$"] - 1]
        return None

    def bound(b):
        if b is None:
            return ""
        if _is_int(b):
            return repr(b)
        name = ref(b)
        return None if name is None else f"int({name})"

    def src(item):
        if item is None or item == "...":
            return str(item)
        if _is_int(item):
            return repr(item)
        if isinstance(item, (list, tuple)) and len(item) == 4 and item[0] == "slice":
            parts = [bound(b) for b in item[1:]]
            return None if None in parts else ":".join(parts)
        return ref(item)

    items = [src(item) for item in template]
    if None in items:
        return None
    return ", ".join(items) + ("," if items == ["..."] else "") if items else "()"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# --- shape inference ---------------------------------------------------------------

def _slice_len(dim, start, stop, step):
    if dim == -1 or any(isinstance(v, dict) for v in (start, stop, step)):
        return -1
    return len(range(*slice(start, stop, step).indices(dim)))


def _getitem_infer(x, *inputs, index):
    shape = list(shape_of(x))
    consumed = sum(1 for it in index if it is not None and it != "..." and not _is_mask(it, inputs))
    consumed += sum(len(shape_of(inputs[it["$"] - 1])) for it in index if _is_mask(it, inputs))
    if consumed > len(shape):
        raise IndexError(f"too many indices for an array of rank {len(shape)}")
    n_ellipsis = sum(1 for it in index if it == "...")
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    template = list(index) + ([] if n_ellipsis else ["..."])
    # NumPy: once any index is an array, integer indices are advanced indices too (0-d ones);
    # the broadcast advanced dims go where the advanced indices are when those are adjacent,
    # else to the front
    has_arrays = any(isinstance(it, dict) and (len(shape_of(inputs[it["$"] - 1])) or _is_mask(it, inputs))
                     for it in index)
    out, axis, adv_shapes, adv_pos, adv_end = [], 0, [], None, None
    for item in template:
        adv_shape = None
        if item is None:
            out.append(1)
        elif item == "...":
            fill = len(shape) - consumed
            out.extend(shape[axis:axis + fill])
            axis += fill
        elif isinstance(item, int):
            dim = shape[axis]
            if dim != -1 and not -dim <= item < dim:
                raise IndexError(f"index {item} is out of bounds for axis {axis} with size {dim}")
            axis += 1
            if has_arrays:
                adv_shape = ()
        elif isinstance(item, (list, tuple)):     # ["slice", start, stop, step] (a tuple after JSON)
            out.append(_slice_len(shape[axis], *item[1:]))
            axis += 1
        else:  # an array input: integer gather, boolean mask, or a scalar Variable
            value = inputs[item["$"] - 1]
            vshape, vdtype = shape_of(value), dtype_of(value)
            if vdtype.kind == "b":
                adv_shape = (-1,)
                axis += len(vshape)
            elif vdtype.kind in "iu":
                adv_shape = tuple(vshape)
                axis += 1
            else:
                raise IndexError(f"arrays used as indices must be of integer or boolean type, not {vdtype}")
        if adv_shape is not None:
            adv_shapes.append(adv_shape)
            if adv_pos is None:
                adv_pos = len(out)
            elif adv_end != len(out):      # something came between two advanced indices
                adv_pos = "front"
            out.append(None)
            adv_end = len(out)
    if adv_shapes:
        adv = broadcast_shapes(*adv_shapes)
        out = [d for d in out if d is not None]
        pos = 0 if adv_pos == "front" else adv_pos
        out = out[:pos] + list(adv) + out[pos:]
    return Spec(tuple(out), dtype_of(x), is_weak(x))


def _is_mask(item, inputs):
    return isinstance(item, dict) and dtype_of(inputs[item["$"] - 1]).kind == "b"


def _getitem_kernel(xp, x, *inputs, index):
    return x[decode_index(index, inputs)]


def _emit_getitem(gen, op):
    """Plan code: an inline subscript."""
    index = op.attrs.get("index")
    if set(op.attrs) != {"index"} or not isinstance(index, (list, tuple)) or not isinstance(op.inputs[0], Variable):
        return None
    subscript = index_source(index, [gen.value(v) for v in op.inputs[1:]])
    return None if subscript is None else f"{gen.value(op.inputs[0])}[{subscript}]"


# with constant indices (range-checked while tracing) a getitem of static shapes cannot fail
GETITEM = register(OpDef("getitem", _getitem_kernel, _getitem_infer, emit=_emit_getitem,
                         safe_when_static=lambda op: not op.input_vars()[1:]))


def getitem(x, index):
    if isinstance(x, Tracer) and x.kind == "array":
        return array_slice(x, index.start, index.stop, index.step) if isinstance(index, slice) else array_read(x, index)
    template, inputs = encode_index(index)
    return apply(GETITEM, (x, *inputs), {"index": template})


def _setitem_infer(x, value, *inputs, index):
    _getitem_infer(x, *inputs, index=index)
    return Spec(shape_of(x), dtype_of(x), is_weak(x))


def _setitem_kernel(xp, x, value, *inputs, index):
    out = xp.array(x, copy=True)
    out[decode_index(index, inputs)] = value
    return out


_setitem = register(OpDef("setitem", _setitem_kernel, _setitem_infer))


def setitem(x, index, value):
    """Functional `x[index] = value`: a new array, x itself unchanged."""
    template, inputs = encode_index(index)
    return apply(_setitem, (x, value, *inputs), {"index": template})
