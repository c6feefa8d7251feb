"""The builtins converted code calls in their place (min, max, any, all, sum, int, float, bool,
isinstance, print) and Paddle's `stop_gradient` flag: Python's on Python values, graph ops on tensors."""
import builtins

import numpy as np

import runtime as rt
from runtime import tracing
from runtime.control_flow import Undefined
from runtime.ops.known import known_value
from runtime.tensor import stands_for

from .base import _decided, _is_array, _symbolic, _tensorish
from .calls import overload
from .logical import _truth
from .conditionals import _raise_if, convert_ifexp
from .iterables import _as_symbolic_iterable
from .membership import _any_truth


_NO_DEFAULT = object()


@overload(builtins.max)
def convert_max(*args, key=None, default=_NO_DEFAULT):
    """Python's max: the first item that no later item is greater than (`item > best`)."""
    return _extreme(builtins.max, "max", args, key, default, lambda a, b: a > b)


@overload(builtins.min)
def convert_min(*args, key=None, default=_NO_DEFAULT):
    """Python's min: the first item that no later item is less than (`item < best`)."""
    return _extreme(builtins.min, "min", args, key, default, lambda a, b: a < b)


def _extreme(python_fn, name, args, key, default, better):
    """min/max walked as CPython does; a tensor comparison picks with a cond instead of Python's `if`."""
    items = list(args[0]) if len(args) == 1 else list(args)
    if key is None and not any(_tensorish(v) for v in items) or len(args) > 1 and default is not _NO_DEFAULT:
        kwargs = {} if default is _NO_DEFAULT else {"default": default}
        return python_fn(items, key=key, **kwargs) if len(args) == 1 else python_fn(*args, key=key, **kwargs)
    if not items:
        if default is _NO_DEFAULT:
            raise ValueError(f"{name}() iterable argument is empty")
        return default
    best = items[0]
    best_key = best if key is None else key(best)
    for item in items[1:]:
        item_key = item if key is None else key(item)
        take = better(item_key, best_key)
        if _symbolic(take):
            best, best_key = convert_ifexp(take, lambda: (item, item_key), lambda: (best, best_key))
        elif take:
            best, best_key = item, item_key
    return best


@overload(builtins.isinstance)
def convert_isinstance(obj, classinfo):
    """isinstance as it would answer eagerly: a traced value is what it stands for, an rt.Tensor
    (the Parameter itself for a captured one, a Python list for a tensor array; outside converted
    code Tensor's metaclass answers the same, except that a tensor array is no list there)."""
    if _symbolic(obj):
        # a class's own __instancecheck__ (a user metaclass asking isinstance(obj, rt.Tensor)) sees the value
        return builtins.issubclass(stands_for(obj), classinfo) or builtins.isinstance(obj, classinfo)
    if isinstance(obj, Undefined):
        raise obj.error()       # reading a name no path assigned, as eagerly
    return builtins.isinstance(obj, classinfo)


@overload(builtins.any)
def convert_any(iterable):
    """Python's any: the truth of each item in turn; tensor truths are or-ed in the graph."""
    truths = []
    for value in iterable:
        known = _decided(value)
        if _symbolic(known):
            truths.append(_truth(value))
        elif known:
            return True
    return _any_truth(truths)


@overload(builtins.all)
def convert_all(iterable):
    """Python's all: False at the first false item; tensor truths are and-ed in the graph."""
    truths = []
    for value in iterable:
        known = _decided(value)
        if _symbolic(known):
            truths.append(_truth(value))
        elif not known:
            return False
    out = True
    for truth in truths:
        out = truth if out is True else rt.logical_and(out, truth)
    return out


@overload(builtins.sum)
def convert_sum(iterable, /, start=0):
    """Python's sum, `start + item 0 + item 1 + ...` in order. Over a list grown in a tensor-dependent
    loop (a tensor array) or a tensor whose first dim is dynamic the same additions run in a while loop,
    from `start + 0` shaped as an item (an empty list sums to those zeros)."""
    dynamic_rows = _symbolic(iterable) and iterable.kind != "array" and iterable.ndim > 0 and \
        iterable.static_shape[0] == -1
    if not (_is_array(iterable) or dynamic_rows):
        return builtins.sum(iterable, start)
    item_shape = iterable.static_shape if _is_array(iterable) else iterable.static_shape[1:]
    if -1 in item_shape:
        raise TypeError(f"sum() of {iterable.describe()}: its items' shape {item_shape} is not static, so the "
                        "running total has no shape to start from; rt.stack the items and use rt.sum")
    items = _as_symbolic_iterable(iterable)
    n = items.length()
    total = start + rt.zeros(item_shape, dtype=iterable.dtype)
    _, total = rt.while_loop(lambda i, total: i < n, lambda i, total: (i + 1, total + items.item(i)), (0, total))
    return total


def _python_number(value, kind):
    """What int()/float()/bool() of a traced tensor with one element is: a weakly typed 0-d tensor (a
    Python number in the graph: `y * int(n)` keeps y's dtype), or the Python number when it is known."""
    known = known_value(value)
    if known is not None:
        return kind(known)
    dtype = np.dtype(value.dtype)
    # the shapes and dtypes NumPy converts (eager Tensors convert through NumPy): its error otherwise; a
    # dynamic dim is taken as 1 here, and a run where it is not fails in the reshape
    kind(np.ones([1 if d == -1 else d for d in value.static_shape], dtype))
    scalar = rt.reshape(value, ())
    if kind is bool:
        out = rt.not_equal(scalar, 0)
    else:
        if kind is int and dtype.kind == "f":
            _raise_if(rt.isnan(scalar), ValueError, "cannot convert float NaN to integer")
            _raise_if(rt.isinf(scalar), OverflowError, "cannot convert float infinity to integer")
        out = rt.astype(scalar, dtype if kind is int and dtype.kind in "iu" else np.int64 if kind is int else
                        np.float64)
    out.weak = True
    return out


@overload(builtins.int)
def convert_int(value=0, *args):
    if _symbolic(value) and not args:
        return _python_number(value, int)
    return builtins.int(value, *args)


@overload(builtins.float)
def convert_float(value=0.0):
    if _symbolic(value):
        return _python_number(value, float)
    return builtins.float(value)


@overload(builtins.bool)
def convert_bool(value=False):
    if _symbolic(value):
        return _python_number(value, bool)
    return builtins.bool(value)


def convert_stop_gradient(x, value):
    """`x.stop_gradient = value` (Paddle's flag) on a local name: a traced value is rebound to
    rt.stop_gradient(x) when value is True, so no gradient flows back through the uses that follow (what the
    flag does eagerly); anything else gets the attribute set."""
    if _symbolic(x):
        if _symbolic(value):
            raise TypeError("stop_gradient must be set to a Python bool, not a tensor")
        return rt.stop_gradient(x) if value else x
    x.stop_gradient = value
    return x


@overload(builtins.print)
def convert_print(*args, sep=" ", end="\n", file=None, flush=False):
    """While tracing, every print becomes a print op: it prints on each run, on the path taken."""
    if tracing.current_block() is not None and file is None:
        return rt.print_(*args, sep=sep)
    return builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
