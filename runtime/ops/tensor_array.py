"""Tensor arrays: the IR form of a Python list that grows inside a loop.

At run time a tensor array is a Python list of backend arrays. Appends mutate
it in place, exactly like the user's `list.append`; each run of a Program
starts from a fresh list made by `array_new`/`array_from_list`.
"""
import numpy as np

from ..dtypes import as_dtype
from ..tracer import Tracer
from .dispatch import apply
from .elementwise import astype
from .registry import OpDef, register
from .rules import Spec, dtype_of, norm_axes, shape_of


def _array_spec(shape, dtype):
    return Spec(tuple(shape), as_dtype(dtype), False, "array")


def _merge(a, b):
    if len(a) != len(b):
        raise ValueError(f"tensor array elements must have one rank, got shapes {a} and {b}")
    return tuple(x if x == y else -1 for x, y in zip(a, b))


_new = register(OpDef("array_new", lambda xp, shape, dtype: [],
                      lambda shape, dtype: _array_spec(shape, dtype), pure=True))
_from_list = register(OpDef(
    "array_from_list", lambda xp, *xs: list(xs),
    lambda *xs: _array_spec(_merge_all([shape_of(x) for x in xs]), dtype_of(xs[0]))))


def _merge_all(shapes):
    out = shapes[0]
    for s in shapes[1:]:
        out = _merge(out, s)
    return out


def _append_kernel(xp, arr, x):
    arr.append(x)
    return arr


def _append_infer(arr, x, op="array_append"):
    if dtype_of(x) != arr.dtype:
        raise TypeError(f"{op}: a tensor array of {arr.dtype.name} cannot hold a {dtype_of(x).name} "
                        f"value; cast it with .astype('{arr.dtype.name}')")
    return _array_spec(_merge(arr.static_shape, shape_of(x)), arr.dtype)


_append = register(OpDef("array_append", _append_kernel, _append_infer, pure=False, grows_input=True))


def _pop_kernel(xp, arr, index):
    value = arr.pop(int(index))
    return arr, value


def _pop_infer(arr, index):
    return [_array_spec(arr.static_shape, arr.dtype), Spec(arr.static_shape, arr.dtype)]


def _insert_kernel(xp, arr, index, x):
    arr.insert(int(index), x)
    return arr


def _insert_infer(arr, index, x):
    return _append_infer(arr, x, "array_insert")


_pop = register(OpDef("array_pop", _pop_kernel, _pop_infer, num_outputs=2, pure=False))
_insert = register(OpDef("array_insert", _insert_kernel, _insert_infer, pure=False, grows_input=True))
_length = register(OpDef("array_length", lambda xp, arr: np.int64(len(arr)),
                         lambda arr: Spec((), np.dtype(np.int64), weak=True)))   # len() is a Python int: weak
_read = register(OpDef("array_read", lambda xp, arr, i: arr[int(i)],
                       lambda arr, i: Spec(arr.static_shape, arr.dtype)))
_slice = register(OpDef("array_slice", lambda xp, arr, start=None, stop=None, step=None: arr[start:stop:step],
                        lambda arr, start=None, stop=None, step=None: _array_spec(arr.static_shape, arr.dtype)))


def _stack_infer(arr, axis=0):
    (axis,) = norm_axes(axis, len(arr.static_shape) + 1)
    return Spec(arr.static_shape[:axis] + (-1,) + arr.static_shape[axis:], arr.dtype)


def _concat_infer(arr, axis=0):
    shape = list(arr.static_shape)
    (axis,) = norm_axes(axis, len(shape))
    shape[axis] = -1
    return Spec(tuple(shape), arr.dtype)


def _stack_kernel(xp, arr, axis=0):
    if not arr:
        raise ValueError("stack of an empty tensor array (the loop appended nothing)")
    return xp.stack(arr, axis=axis)


def _concat_kernel(xp, arr, axis=0):
    if not arr:
        raise ValueError("concat of an empty tensor array (the loop appended nothing)")
    return xp.concatenate(arr, axis=axis)


_stack = register(OpDef("array_stack", _stack_kernel, _stack_infer))
_concat = register(OpDef("array_concat", _concat_kernel, _concat_infer))


def array_new(element_shape, dtype):
    return apply(_new, (), {"shape": list(element_shape), "dtype": as_dtype(dtype).name})


def array_from_list(values):
    return apply(_from_list, tuple(values), {})


def array_append(arr, value):
    """Append in place and return the array (the Variable after the append).

    Python numbers and weak values adopt the array's dtype; other dtypes must match it."""
    return apply(_append, (arr, _element(arr, value)), {})


def array_pop(arr, index=-1):
    """`arr.pop(index)` in place: (the array after it, the removed element), as Python's list.pop."""
    return apply(_pop, (arr, index), {})


def array_insert(arr, index, value):
    """`arr.insert(index, value)` in place; the value's dtype follows the rule of `array_append`."""
    return apply(_insert, (arr, index, _element(arr, value)), {})


def _element(arr, value):
    """An element for `arr`: a Python number becomes a 0-d value of the array's dtype (a bare number would
    be read as float32/int64 by the op's rule), a weak value is cast to it, others are left to the op."""
    if not isinstance(arr, Tracer):
        return value
    if isinstance(value, (bool, int, float, complex)):
        return np.asarray(value, arr.dtype)
    if isinstance(value, Tracer) and value.weak:
        return astype(value, arr.dtype)
    return value


def _is_array(value):
    return isinstance(value, Tracer) and value.kind == "array"


def array_join(left, right):
    """`left + right` where one is a tensor array and the other a Python list: a new tensor array holding
    the items of both in order, as Python's list concatenation gives a new list (neither is changed).

    The list's items follow the rule of `array_append` (Python numbers and weak values adopt the array's
    dtype). Built from a copy of the array (`array_slice`) and appends or inserts at the front."""
    if _is_array(left):
        return array_extend(array_slice(left), right)
    out = array_slice(right)
    for value in reversed(left):
        out = array_insert(out, 0, value)
    return out


def array_extend(arr, values):
    """`arr.extend(values)` (`arr += values`) in place, values a Python list or tuple; each item follows the rule
    of `array_append`. Another tensor array's items are not known while tracing: a TypeError says so."""
    if _is_array(values):
        raise TypeError("extending a list grown in a tensor-dependent loop by another such list (xs + ys, "
                        "xs += ys, xs.extend(ys)) is not supported: append ys's items in the loop that grows "
                        "it, or stack both (rt.concat([rt.stack(xs), rt.stack(ys)]))")
    for value in values:
        arr = array_append(arr, value)
    return arr


def array_length(arr):
    return apply(_length, (arr,), {})


def array_read(arr, index):
    return apply(_read, (arr, index), {})


def array_slice(arr, start=None, stop=None, step=None):
    """`arr[start:stop:step]` (`res[::-1]`, `reversed(res)`): a new tensor array, as a list slice is a new list.

    The bounds are Python ints or None: the length of the slice is then known from the array's at run time."""
    bounds = {"start": start, "stop": stop, "step": step}
    for name, value in bounds.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise TypeError(f"slicing a tensor array (a list grown in a tensor-dependent loop): {name} must be a "
                            f"Python int or None, got {type(value).__name__}; stack it first (rt.stack(xs)) to "
                            "slice by a tensor")
    if step == 0:
        raise ValueError("slice step cannot be zero")
    return apply(_slice, (arr,), {k: None if v is None else int(v) for k, v in bounds.items()})


def array_stack(arr, axis=0):
    return apply(_stack, (arr,), {"axis": int(axis)})


def array_concat(arr, axis=0):
    return apply(_concat, (arr,), {"axis": int(axis)})
