"""The join of two traced values: what a cond's branches or a loop's state before and after one
iteration become as one value. Structures must match; dtypes meet (a Python number is weak and
adopts the other side's; two weak ints meet at the non-default one); shapes relax to -1 where they
differ; a list of tensors on one side and a tensor array on the other become a tensor array; a
name bound on one side only gets a placeholder. Also: making a Python value a traced one
(`as_variable`, `as_predicate`) and naming a value in the user's terms for messages.
"""
import re

import numpy as np

from .. import pytree, tracing
from ..dtypes import DEFAULT_INT, result_type, weak_dtype
from ..errors import ControlFlowError
from ..ir import LITERAL_TYPES
from ..ops import array_from_list, array_length, array_new, astype, full, greater, not_equal, undefined_value, zeros
from ..shape_text import shape_text
from ..tensor import Tensor
from ..tracer import Tracer
from ..undefined import AT_RUN_TIME, Undefined


def _truth(pred):
    return bool(pred)


def _is_number(value):
    return isinstance(value, LITERAL_TYPES)


def _is_numpy_number(value):
    """A NumPy scalar (`np.float32(0)`): a number of a fixed dtype, which may become a tensor like one."""
    return isinstance(value, np.generic) and value.dtype.kind in "biufc"


def _is_scalar(value):
    return _is_number(value) or _is_numpy_number(value)


def _describe(value):
    if isinstance(value, Tracer):
        return f"a tensor ({value.type_str()})"
    if isinstance(value, Tensor):
        return f"a tensor ({value.dtype.name}{shape_text(value.shape)})"
    if isinstance(value, Undefined):
        return "undefined"
    if callable(value) and hasattr(value, "__name__"):
        return f"{type(value).__name__} '{value.__name__}'"     # not its repr: converted code's qualname is ours
    text = repr(value)
    if text.startswith("<"):
        return f"a {type(value).__name__} object"
    return f"{type(value).__name__} {text}"


_GENERATED = re.compile(
    r"^(__return_value|__return_flag|__break|__continue|__item|for_index|output)(_\d+)?(?=$|\[)")


_GENERATED_SUBJECTS = {
    "__return_value": "the return value", "__return_flag": "whether `return` ran",
    "__break": "whether `break` ran", "__continue": "whether `continue` ran", "__item": "the loop's item",
    "for_index": "the loop's index", "output": "the result",
}


def _subject(name, role=""):
    """A leaf name as an error message's subject, in the user's terms: `'x'` (`loop variable 'x'`)
    for the user's names, a description for the transpiler's (`__return_value`) and for unnamed
    results (`output`): messages never name a variable the user did not write."""
    match = _GENERATED.match(name)
    if match is None:
        return f"{role} '{name}'" if role else f"'{name}'"
    path = name[match.end():]
    text = _GENERATED_SUBJECTS[match.group(1)]
    return f"{text} (item {path})" if path else text


def _leaf_names(treedef, names):
    """A readable name for every leaf: the variable's name plus its path inside it."""
    paths = pytree.leaf_paths(treedef)
    if not names or treedef.kind not in ("tuple", "list") or len(treedef.children) != len(names):
        return [f"output{p}" if p else "output" for p in paths]
    out = []
    for name, child in zip(names, treedef.children):
        out.extend(name + p for p in pytree.leaf_paths(child))
    return out


def _weak_constant(value):
    """A Python number as a weakly typed scalar Variable of the current block."""
    var = full((), value, weak_dtype(value))
    var.weak = True
    return var


def as_variable(value):
    """Any tensor-like leaf as a Variable of the current block."""
    if isinstance(value, Tracer):
        return value
    if isinstance(value, Tensor):
        return tracing.lift_tensor(value)
    if _is_number(value):
        return _weak_constant(value)
    if _is_numpy_number(value):
        return full((), value, value.dtype)
    raise TypeError(f"not a tensor value: {_describe(value)}")


def as_predicate(pred):
    """A symbolic truth value: bool, and of size one. A list grown in a tensor-dependent loop (a tensor
    array) is true when it is not empty, as a Python list."""
    if pred.kind == "array":
        return greater(array_length(pred), 0)
    if any(d not in (1, -1) for d in pred.static_shape):
        raise ValueError(
            f"the truth value of a tensor with shape {shape_text(pred.static_shape)} is ambiguous: "
            "reduce it first with .any() or .all()")
    if pred.dtype.kind != "b":
        pred = not_equal(pred, 0)
    return pred


def _merge_shapes(a, b, name):
    if len(a) != len(b):
        raise ControlFlowError(f"{_subject(name)} changes rank: shapes {shape_text(a)} and {shape_text(b)}")
    return tuple(x if x == y else -1 for x, y in zip(a, b))


def _cast(var, dtype):
    """astype that keeps a weak value weak (a Python number stays a Python number)."""
    out = astype(var, dtype)
    if var.weak and isinstance(out, Tracer):
        out.weak = True
    return out


def _fill(value, like, block, fill_only=True):
    """Replace fillable Undefined parts of value by zeros shaped like the other side's values."""
    if isinstance(value, Undefined):
        if value.fill == AT_RUN_TIME and not isinstance(like, Undefined):
            if not (_tensorish(like) or _is_scalar(like)):
                return value
            with tracing.block_guard(block):
                return _undefined_like(like, value)
        if (value.fill or not fill_only) and not isinstance(like, Undefined):
            with tracing.block_guard(block):
                return _placeholder_tree(like, None if value.fill else value)
        if not fill_only and isinstance(like, Undefined) and like is not value and like.bound is not None \
                and value.bound is None:
            # a loop body that binds the name only under a tensor `if` (and no path before the loop binds it)
            with tracing.block_guard(block):
                return _undefined_like(like.bound, value)
        return value
    if isinstance(value, (tuple, list)) and isinstance(like, (tuple, list)) and len(value) == len(like):
        items = [_fill(v, w, block, fill_only) for v, w in zip(value, like)]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if type(value) is dict and type(like) is dict and list(value) == list(like):
        return {k: _fill(value[k], like[k], block, fill_only) for k in value}
    return value


def _undefined_like(bound, undefined):
    """An `undefined` op shaped like `bound`, a tensor or number that a branch binds the name to."""
    if isinstance(bound, Tracer):
        return _placeholder_tree(bound, undefined)
    if isinstance(bound, Tensor):
        return undefined_value(undefined.name, bound.shape, bound.dtype, undefined.origin)
    weak = _is_number(bound)
    var = undefined_value(undefined.name, (), weak_dtype(bound) if weak else bound.dtype, undefined.origin)
    var.weak = weak
    return var


def _placeholder_tree(like, undefined=None):
    """A value with like's structure, dtypes and static shapes for a path that has none.

    For a fillable Undefined (a return value, read only under its flag): zeros. For
    a user's name first bound inside a loop: an `undefined` op, whose run-time value
    raises UnboundLocalError naming the variable if it is ever used (the loop ran
    zero times and the code read it anyway).
    """
    leaves, treedef = pytree.flatten(like)
    out = []
    for leaf in leaves:
        if isinstance(leaf, Tracer):
            if leaf.kind == "array":
                out.append(array_new(leaf.static_shape, leaf.dtype))
            elif undefined is not None:
                out.append(undefined_value(undefined.name, leaf.static_shape, leaf.dtype, undefined.origin))
            else:
                var = zeros(tuple(0 if d == -1 else d for d in leaf.static_shape), leaf.dtype)
                var.weak = leaf.weak
                out.append(var)
        elif isinstance(leaf, Tensor):
            out.append(zeros(leaf.shape, leaf.dtype))
        elif _is_number(leaf):
            out.append(type(leaf)(0))
        else:
            out.append(leaf)
    return pytree.unflatten(treedef, out)


def _tensorish(value):
    return isinstance(value, (Tracer, Tensor))


def _same_python_value(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _hint(name, default):
    base = name.split("[")[0] if name and not name.startswith("output") else default
    return base or default


def _weak_join(a, b):
    """The dtype where a weak (Python-number) Variable meets another value: NumPy 2's weak promotion.
    Two weak integers meet at the one that is not the default int, since a weak int32 stands for
    "a Python int or an int32 tensor" and Python int + int32 tensor stays int32; this also makes
    loop state settle (it only ever moves up)."""
    if a.weak and b.weak and a.dtype.kind in "iu" and b.dtype.kind in "iu":
        if a.dtype == DEFAULT_INT:
            return b.dtype
        if b.dtype == DEFAULT_INT:
            return a.dtype
        return np.promote_types(a.dtype, b.dtype)
    return result_type((a.dtype, a.weak), (b.dtype, b.weak))


def _unify_dtypes(va, vb, block_a, block_b, name, side_a, side_b):
    if va.dtype == vb.dtype:
        return va, vb
    if va.weak or vb.weak:
        common = _weak_join(va, vb)
        if va.dtype != common:
            with tracing.block_guard(block_a):
                va = _cast(va, common)
        if vb.dtype != common:
            with tracing.block_guard(block_b):
                vb = _cast(vb, common)
        return va, vb
    raise ControlFlowError(
        f"{_subject(name)} has dtype {va.dtype.name} in the {side_a} and {vb.dtype.name} in the {side_b}; "
        f"cast one side with .astype()")


def _structure_message(what, a, b, names, side_a, side_b):
    if names and isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) == len(names):
        for name, x, y in zip(names, a, b):
            found = _key_set_on_one_side(name, x, y)
            if found is not None:
                label, key, in_a = found
                side = side_a if in_a else side_b
                return (f"key {key!r} of '{label}' is set in the {side} only ({what}): afterwards it would exist "
                        f"for some inputs only; give '{label}[{key!r}]' a value before it, or on every path")
            if pytree.flatten(x)[1] != pytree.flatten(y)[1]:
                return (f"{_subject(name)} has a different structure in {what}: {_shape_of_tree(x)} in the {side_a}, "
                        f"{_shape_of_tree(y)} in the {side_b}")
    return f"{what} produce different structures: {_shape_of_tree(a)} vs {_shape_of_tree(b)}"


def _key_set_on_one_side(label, a, b):
    """(label of the dict, key, whether a has it) for a key that one side has and the other lacks,
    searched through dicts and lists nested alike on both sides (`x['a']['b'] = v` in one branch); or None."""
    if type(a) is dict and type(b) is dict:
        if set(a) != set(b):
            key = next(k for k in [*a, *b] if k not in a or k not in b)
            return label, key, key in a
        pairs = [(k, a[k], b[k]) for k in a]
    elif type(a) is list and type(b) is list and len(a) == len(b):
        pairs = [(i, x, y) for i, (x, y) in enumerate(zip(a, b))]
    else:
        return None
    for key, x, y in pairs:
        found = _key_set_on_one_side(f"{label}[{key!r}]", x, y)
        if found is not None:
            return found
    return None


def _shape_of_tree(value):
    leaves, treedef = pytree.flatten(value)
    if treedef.kind == "leaf":
        return _describe(value)
    return f"{type(value).__name__} {treedef}"


def _is_tensor_list(value):
    return type(value) is list and all(_tensorish(v) or _is_scalar(v) for v in value)


def _to_array(items, like, block):
    """A Python list of tensors as a tensor array Variable of `block` (element spec from like)."""
    with tracing.block_guard(block):
        if items:
            return array_from_list([as_variable(v) for v in items])
        if isinstance(like, Tracer):
            return array_new(like.static_shape, like.dtype)
        if _is_number(like):      # a Python number appended while a loop's state was still Python
            return array_new((), weak_dtype(like))
        return array_new(tuple(like.shape), like.dtype)


def _is_array(value):
    return isinstance(value, Tracer) and value.kind == "array"


def _unify_lists(a, b, block_a, block_b):
    """Lists of different lengths in two branches become tensor arrays (append under a tensor if);
    so does a list on one side of a tensor array (appended to in a nested tensor if)."""
    if _is_array(a) and _is_tensor_list(b):
        return a, _to_array(b, a, block_b)
    if _is_tensor_list(a) and _is_array(b):
        return _to_array(a, b, block_a), b
    if not (_is_tensor_list(a) and _is_tensor_list(b)) or len(a) == len(b):
        return a, b
    like = (a or b)[-1]
    return _to_array(a, like, block_a), _to_array(b, like, block_b)
