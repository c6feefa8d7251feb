"""What a graph `for` walks by index (a length and an item per index): rows of a tensor, a range
with a tensor bound, enumerate/zip of those, a tensor array; and len/reversed of traced values."""
import builtins
import operator

import numpy as np

import runtime as rt
from runtime import tracing

from ..effects.aliases import array_item
from .base import _is_array, _symbolic, _tensorish
from .calls import overload
from .conditionals import _raise_if


class SymbolicIterable:
    """Something a `for` can walk by index in a while op: a length and an item per index.

    Plain Python iteration (`list(enumerate(x))`, `dict(zip(x, names))`) walks it
    with Python int indices when its length is static in this trace, as Python would.
    """

    def length(self):
        raise NotImplementedError

    def item(self, i):
        raise NotImplementedError

    def __iter__(self):
        n = self.length()
        if _symbolic(n):
            raise TypeError(
                f"cannot iterate in plain Python over {self.what_is_dynamic()} (known only when the Program "
                "runs): use a `for` loop over it (it becomes a while op), or " + self.how_to_fix())
        return (self.item(i) for i in builtins.range(n))

    def what_is_dynamic(self):
        return "a tensor whose dimension 0 is dynamic"

    def how_to_fix(self):
        return "give that dimension a fixed size in the input_spec"


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
        if isinstance(self.step, int) and self.step == 0:
            raise ValueError("range() arg 3 must not be zero")
        with tracing.python_numbers():          # len(range(...)) is a Python int
            return self._length()

    def _length(self):
        if isinstance(self.step, int):
            span = self.stop - self.start if not (isinstance(self.start, int) and self.start == 0) else self.stop
            if self.step == 1:
                return rt.maximum(span, 0)
            pad = self.step - 1 if self.step > 0 else self.step + 1
            return rt.maximum((span + pad) // self.step, 0)
        _raise_if(self.step == 0, ValueError, "range() arg 3 must not be zero")
        span = self.stop - self.start
        return rt.maximum(rt.where(self.step > 0, span + self.step - 1, span + self.step + 1) // self.step, 0)

    def what_is_dynamic(self):
        return "a range() with a tensor bound, whose length is a tensor"

    def how_to_fix(self):
        return "give range() Python int bounds"

    def item(self, i):
        offset = i if isinstance(self.step, int) and self.step == 1 else i * self.step
        value = offset if isinstance(self.start, int) and self.start == 0 else self.start + offset
        if _symbolic(value) and not value.weak:     # range() yields Python ints, whatever its bounds' dtype
            value = rt.astype(value, np.int64)
            value.weak = True
        return value


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
        with tracing.python_numbers():          # the shortest length, a Python int
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
        if isinstance(i, int):
            return self.seq[i]
        odd = [v for v in self.seq if not (_tensorish(v) or isinstance(v, (bool, int, float)))]
        if odd:
            raise TypeError(
                f"a tensor-dependent loop (a tensor whose dimension 0 is dynamic) cannot walk a Python "
                f"{type(self.seq).__name__} holding {type(odd[0]).__name__} values alongside it: only tensors "
                "and numbers can be indexed by the loop's run-time index; give that dimension a fixed size in "
                "the input_spec (the loop then unrolls), or loop over range(len(...)) of the Python list")
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
    if type(value) is builtins.range:
        return _PythonRange(value)
    if isinstance(value, np.ndarray) and value.ndim > 0 and value.dtype.kind in "biufc":
        return _TensorRows(rt.asarray(value))       # its rows as constants of the graph
    raise TypeError(f"cannot iterate over {type(value).__name__} inside a tensor-dependent loop")


class _PythonRange(SymbolicIterable):
    """A Python range zipped with a tensor: Python ints, weak int64 at a symbolic index."""

    def __init__(self, numbers):
        self.numbers = numbers

    def length(self):
        return len(self.numbers)

    def item(self, i):
        if isinstance(i, int):
            return self.numbers[i]
        value = rt.astype(i * self.numbers.step + self.numbers.start, np.int64)
        value.weak = True
        return value


class _ArrayItems(SymbolicIterable):
    def __init__(self, arr):
        self.arr = arr

    def length(self):
        return rt.array_length(self.arr) if self.arr.length is None else self.arr.length

    def item(self, i):
        return array_item(rt.array_read(self.arr, i))


@overload(builtins.range)
def convert_range(*args):
    if not any(_symbolic(a) for a in args):
        return builtins.range(*args)
    for a in args:
        _check_range_argument(a)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    return SymbolicRange(start, stop, step)


def _check_range_argument(value):
    """range() takes integers only, as Python's does: a float tensor is a TypeError for every value (NaN, inf too).

    The dtype is known while tracing, so the error is raised then, at the user's line.
    """
    if not _symbolic(value):
        operator.index(value)
        return
    kind = np.dtype(value.dtype).kind
    if kind in "iu" or (kind == "b" and value.weak):
        return
    raise TypeError(f"'{np.dtype(value.dtype).name}' tensor cannot be interpreted as an integer: range() takes "
                    f"integer tensors (cast with .astype('int64') after rounding the way you mean)")


@overload(builtins.enumerate)
def convert_enumerate(iterable, start=0):
    if isinstance(iterable, SymbolicIterable) or _symbolic(iterable):
        return _Enumerate(_as_symbolic_iterable(iterable), start)
    return builtins.enumerate(iterable, start)


@overload(builtins.zip)
def convert_zip(*iterables, **kwargs):
    if any(isinstance(it, SymbolicIterable) or _symbolic(it) for it in iterables):
        return _Zip([_as_symbolic_iterable(it) for it in iterables])
    return builtins.zip(*iterables, **kwargs)


@overload(builtins.len)
def convert_len(value):
    if _symbolic(value):
        if value.kind == "array":
            return rt.array_length(value) if value.length is None else value.length
        if value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        first = value.static_shape[0]
        return first if first != -1 else rt.dim(value, 0)
    return builtins.len(value)


@overload(builtins.reversed)
def convert_reversed(seq):
    """reversed(xs) of a list grown in a tensor-dependent loop: the array sliced [::-1] in the graph
    (its length is known only at run time); Python's reversed otherwise."""
    if _is_array(seq):
        return rt.array_slice(seq, None, None, -1)
    return builtins.reversed(seq)
