"""The functions converted code calls: Python semantics on Python values, graph ops on tensors.

Each operator reads like the Python it stands for: the Python path first
(exactly what the original statement did), the graph path second (when a
condition or iterable is a symbolic Variable). Converted code refers to this
module as `_jst`.
"""
import builtins

import runtime as rt
from runtime import tracing
from runtime.control_flow import Undefined, as_variable
from runtime.errors import SymbolicBoolError
from runtime.ir import Variable
from runtime.state import attr_cell, contents_cell, item_cell

from .errors import ConversionError


def _symbolic(value):
    return isinstance(value, Variable)


def _tuple(result, n):
    """A branch/body function's return value as a tuple of its n outputs."""
    if n == 0:
        return ()
    return (result,) if n == 1 else tuple(result)


def _untuple(values, n):
    if n == 0:
        return None
    return values[0] if n == 1 else tuple(values)


def undefined(name):
    """The placeholder for a name that has no value yet (see runtime.control_flow.Undefined)."""
    return Undefined(name, tracing.user_origin())


def outer_value(read, name):
    """A global/nonlocal passed into a branch or loop body: its value, or a placeholder while it has none."""
    try:
        return read()
    except NameError:
        return undefined(name)


def return_placeholder():
    """The return value before any `return` ran: filled with zeros where a graph needs a value."""
    return Undefined("return value", tracing.user_origin(), fill=True)


# --- if / ternary ----------------------------------------------------------------------

def convert_ifelse(pred, true_fn, false_fn, args, names, state=None):
    """`state`: a function returning the cells (attributes, items) the branches write; see runtime.state."""
    if not _symbolic(pred):
        return true_fn(*args) if pred else false_fn(*args)
    n = len(names)
    returned = {}

    def branch(fn, side):
        def run():
            copies = _copy_containers(args)
            out = _tuple(fn(*copies), n)
            returned[side] = _returned_args(out, copies, args)
            return out
        return run

    with _graph_region("if"):
        outs = rt.cond(pred, branch(true_fn, "true"), branch(false_fn, "false"), names=names, state=state)
    outs = _write_back(outs, args, names, returned["true"], returned["false"])
    return _untuple(outs, n)


def convert_ifexp(pred, true_thunk, false_thunk):
    if not _symbolic(pred):
        return true_thunk() if pred else false_thunk()
    return rt.cond(pred, true_thunk, false_thunk)


def _copy_containers(args):
    """Each traced branch mutates its own copy of a Python list or dict (only one branch runs later)."""
    return tuple(type(a)(a) if type(a) in (list, dict) else a for a in args)


def _returned_args(outs, given, originals):
    """For each output: the index of the argument whose copy the code returned (mutated in place), or None."""
    return [next((j for j, (g, o) in enumerate(zip(given, originals)) if out is g and g is not o), None)
            for out in outs]


def _write_back(outs, args, names, *returned):
    """A container that every traced path mutated in place is the user's own object afterwards.

    The graph paths worked on copies; Python's `d["k"] = v` changes the object
    itself (which other names may share), so its merged contents go back into it.
    """
    outs = list(outs)
    for k, j in enumerate(returned[0]):
        if j is None or any(r[k] != j for r in returned[1:]):
            continue
        original, merged = args[j], outs[k]
        if merged is original or type(merged) is not type(original):
            continue
        contents_cell(original, names[k]).set(merged)   # a cell: a static function writes it after each run
        outs[k] = original
    return tuple(outs)


# --- exceptions raised while tracing a graph region -----------------------------------------

_GRAPH_ORIGIN = "_dy2s_graph_origin"


class _graph_region:
    """Mark an exception raised while tracing a tensor-dependent region with where that region is."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        self.origin = tracing.user_origin()

    def __exit__(self, kind, error, tb):
        if isinstance(error, Exception) and getattr(error, _GRAPH_ORIGIN, None) is None:
            try:
                setattr(error, _GRAPH_ORIGIN, (self.kind, self.origin))
            except AttributeError:
                pass
        return False


def check_caught(exc):
    """First statement of an `except` clause: a graph cannot catch at run time what tracing raised.
    A ConversionError or `bool()` of a traced value goes on up as it is: eager code never raises them."""
    if isinstance(exc, (SymbolicBoolError, ConversionError)):
        raise exc
    kind, origin = getattr(exc, _GRAPH_ORIGIN, None) or (None, None)
    if origin is None:
        return
    filename, _, line = tracing.user_origin().rpartition(":")
    error = ConversionError(
        f"{type(exc).__name__} raised while tracing the tensor-dependent `{kind}` at {origin} reaches this "
        f"`except` clause; the graph cannot catch it when the Program runs ({exc})", filename, int(line),
        "catch it inside the branch or loop body, keep the failing code out of the tensor-dependent region, "
        "or use to_static(..., full_graph=False) to run the function eagerly")
    setattr(error, _GRAPH_ORIGIN, (kind, origin))
    raise error from exc


# --- and / or / not ---------------------------------------------------------------------

def convert_logical_and(value, *thunks):
    for i, thunk in enumerate(thunks):
        if _symbolic(value):
            return _graph_logical(value, thunks[i:], is_and=True)
        if not value:
            return value
        value = thunk()
    return value


def convert_logical_or(value, *thunks):
    for i, thunk in enumerate(thunks):
        if _symbolic(value):
            return _graph_logical(value, thunks[i:], is_and=False)
        if value:
            return value
        value = thunk()
    return value


def _graph_logical(value, thunks, is_and):
    """`value and rest...` with a tensor `value`: a cond op, so `rest` runs only when needed."""
    chain = convert_logical_and if is_and else convert_logical_or
    decided = {}

    def rest():
        result = chain(thunks[0](), *thunks[1:])
        if _dtype(result) != _dtype(value):
            decided["bool"] = True
            return _as_bool(result)
        return result

    def same():
        return _as_bool(value) if decided.get("bool") else value

    return rt.cond(value, rest, same) if is_and else rt.cond(value, same, rest)


def _dtype(value):
    if isinstance(value, (Variable, rt.Tensor)):
        return value.dtype
    return type(value)


def _as_bool(value):
    if isinstance(value, (Variable, rt.Tensor)):
        return value if value.dtype == rt.bool else rt.not_equal(value, 0)
    return builtins.bool(value)


def convert_logical_not(value):
    if not _symbolic(value):
        return not value
    return rt.logical_not(value) if value.dtype == rt.bool else rt.equal(value, 0)


# --- loops ------------------------------------------------------------------------------

def convert_while(cond_fn, body_fn, args, names, state=None):
    n = len(names)
    body, returned = _tracking_body(body_fn, n)
    with _graph_region("while"):
        outs = rt.while_loop(cond_fn, body, tuple(args), names=names, state=state)
    return _untuple(_write_back(outs, args, names, returned), n)


def _tracking_body(body_fn, n, offset=0):
    """body_fn as `state -> state tuple`, noting which containers every call returned as it got them."""
    returned = [j for j in range(n)]

    def body(*state):
        given = state[offset:]
        out = _tuple(body_fn(*state), n)
        for k in range(n):
            if returned[k] is not None and not (out[k] is given[k] and type(given[k]) in (list, dict)):
                returned[k] = None
        return out
    return body, returned


def convert_for(iterable, body_fn, args, names, extra_test=None, state=None):
    n = len(names)
    if isinstance(iterable, SymbolicIterable) or _symbolic(iterable):
        return _graph_for(_as_symbolic_iterable(iterable), body_fn, tuple(args), names, extra_test, state)
    values = tuple(args)
    for item in iterable:
        go_on = True if extra_test is None else extra_test(*values)
        if _symbolic(go_on):
            # a tensor-dependent `break` in an unrolled loop: later iterations run under a cond
            values = _tuple(convert_ifelse(go_on, lambda *s, _item=item: body_fn(_item, *s),
                                           lambda *s: _untuple(s, n), values, names, state), n)
        elif not go_on:
            break
        else:
            values = _tuple(body_fn(item, *values), n)
    return _untuple(values, n)


def _graph_for(it, body_fn, values, names, extra_test, state=None):
    """`for` over a tensor or a tensor-bounded range: a while op over an index."""
    n = len(names)
    args = values
    length = it.length()

    def cond(i, *s):
        if extra_test is None:
            return i < length
        return convert_logical_and(i < length, lambda: extra_test(*s))

    inner, returned = _tracking_body(lambda i, *s: body_fn(it.item(i), *s), n, offset=1)

    def body(i, *s):
        return (i + 1,) + inner(i, *s)

    index = as_variable(0)      # a symbolic index: iterating a tensor is a while op even for a static length
    with _graph_region("for"):
        outs = rt.while_loop(cond, body, (index,) + values, names=("for_index",) + tuple(names), state=state)
    return _untuple(_write_back(outs[1:], args, names, returned), n)


class SymbolicIterable:
    """Something a `for` can walk by index in a while op: a length and an item per index."""

    def length(self):
        raise NotImplementedError

    def item(self, i):
        raise NotImplementedError


class _TensorRows(SymbolicIterable):
    def __init__(self, x):
        self.x = x

    def length(self):
        return convert_len(self.x)

    def item(self, i):
        return self.x[i]


class SymbolicRange(SymbolicIterable):
    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def length(self):
        if isinstance(self.step, int):
            if self.step == 0:
                raise ValueError("range() arg 3 must not be zero")
            span = self.stop - self.start if not (isinstance(self.start, int) and self.start == 0) else self.stop
            if self.step == 1:
                return rt.maximum(span, 0)
            pad = self.step - 1 if self.step > 0 else self.step + 1
            return rt.maximum((span + pad) // self.step, 0)
        span = self.stop - self.start
        return rt.maximum(rt.where(self.step > 0, span + self.step - 1, span + self.step + 1) // self.step, 0)

    def item(self, i):
        offset = i if isinstance(self.step, int) and self.step == 1 else i * self.step
        return offset if isinstance(self.start, int) and self.start == 0 else self.start + offset


class _Enumerate(SymbolicIterable):
    def __init__(self, inner, start):
        self.inner, self.start = inner, start

    def length(self):
        return self.inner.length()

    def item(self, i):
        return (i + self.start, self.inner.item(i))


class _Zip(SymbolicIterable):
    def __init__(self, parts):
        self.parts = parts

    def length(self):
        lengths = [p.length() for p in self.parts]
        out = lengths[0]
        for other in lengths[1:]:
            out = rt.minimum(out, other) if _symbolic(out) or _symbolic(other) else builtins.min(out, other)
        return out

    def item(self, i):
        return tuple(p.item(i) for p in self.parts)


class _Sequence(SymbolicIterable):
    """A Python list/tuple walked by a symbolic index (inside a zip with a tensor)."""

    def __init__(self, seq):
        self.seq = seq

    def length(self):
        return len(self.seq)

    def item(self, i):
        return rt.stack(list(self.seq))[i]


def _as_symbolic_iterable(value):
    if isinstance(value, SymbolicIterable):
        return value
    if _symbolic(value):
        if value.kind == "array":
            return _ArrayItems(value)
        if value.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return _TensorRows(value)
    if isinstance(value, (list, tuple)):
        return _Sequence(value)
    raise TypeError(f"cannot iterate over {type(value).__name__} inside a tensor-dependent loop")


class _ArrayItems(SymbolicIterable):
    def __init__(self, arr):
        self.arr = arr

    def length(self):
        return rt.array_length(self.arr)

    def item(self, i):
        return rt.array_read(self.arr, i)


def convert_range(*args):
    if not any(_symbolic(a) for a in args):
        return builtins.range(*args)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    return SymbolicRange(start, stop, step)


def convert_enumerate(iterable, start=0):
    if isinstance(iterable, SymbolicIterable) or _symbolic(iterable):
        return _Enumerate(_as_symbolic_iterable(iterable), start)
    return builtins.enumerate(iterable, start)


def convert_zip(*iterables, **kwargs):
    if any(isinstance(it, SymbolicIterable) or _symbolic(it) for it in iterables):
        return _Zip([_as_symbolic_iterable(it) for it in iterables])
    return builtins.zip(*iterables, **kwargs)


# --- builtins and statements ------------------------------------------------------------

def convert_len(value):
    if _symbolic(value):
        if value.kind == "array":
            return rt.array_length(value)
        if value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        first = value.static_shape[0]
        return first if first != -1 else rt.dim(value, 0)
    return builtins.len(value)


def convert_print(*args, sep=" ", end="\n", file=None, flush=False):
    """While tracing, every print becomes a print op: it prints on each run, on the path taken."""
    if tracing.current_block() is not None and file is None:
        return rt.print_(*args, sep=sep)
    return builtins.print(*args, sep=sep, end=end, file=file, flush=flush)


def convert_assert(test, message_thunk):
    if _symbolic(test):
        rt.assert_(test, message=str(message_thunk()), origin=tracing.user_origin())
        return
    if not test:
        message = message_thunk()
        raise AssertionError(message) if message != "" else AssertionError()


def convert_append(container, value):
    if _symbolic(container) and container.kind == "array":
        return rt.array_append(container, value)
    container.append(value)
    return container


def _is_array(value):
    return _symbolic(value) and value.kind == "array"


def convert_pop(container, *index):
    """`xs.pop(...)` as (xs after it, the removed item): a tensor array pops in the graph."""
    if _is_array(container):
        return rt.array_pop(container, *index)
    return container, container.pop(*index)


def convert_insert(container, index, value):
    if _is_array(container):
        return rt.array_insert(container, index, value)
    container.insert(index, value)
    return container


def convert_extend(container, values):
    if _is_array(container):
        for value in values:
            container = rt.array_append(container, value)
        return container
    container.extend(values)
    return container


def convert_delitem(container, index):
    if _is_array(container):
        return rt.array_pop(container, index)[0]
    del container[index]
    return container


def convert_getitem(container, index):
    """`xs[i]`; a Python list of tensors read at a tensor index is read in the graph."""
    if type(container) is list and _symbolic(index) and container:
        return rt.stack(container)[index]
    return container[index]


def convert_setitem(container, index, value):
    if _symbolic(container):
        return rt.setitem(container, index, value)
    container[index] = value
    return container


def convert_call(fn):
    """The converted form of fn when it is user code; fn itself otherwise."""
    from .api import converted_callable
    return converted_callable(fn)


__all__ = [name for name in dict(globals()) if name.startswith("convert_")] + [
    "undefined", "return_placeholder", "attr_cell", "item_cell", "contents_cell", "check_caught", "outer_value"]
