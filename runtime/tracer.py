"""The traced value: what a value being recorded does in user code.

A `Tracer` wraps an IR value (`tracer.value`, a runtime.ir Variable of the
Program being recorded), as JAX's tracers wrap their avals, and adds what only a
traced value can do: NumPy's operators and methods (ArrayMethods: each records
an op), `bool()` and `int()` refused with a clear error, iteration and `len()`
over a static first dim, `.item()`, a tensor array's `+`, and a weak value's
operators computing what Python's do on numbers. The Program holds Variables
only; user code, `rt.*` functions, control-flow builders and gradient rules hold
Tracers. The recording door (ops/dispatch.py) unwraps an op's inputs and wraps
its outputs; the builders of region ops (control_flow/, scan_loop.py) and the
gradient code do the same at their boundaries. `tracer_of(var)` is the one
Tracer of a Variable while its trace runs (a memo in the trace context), so the
identity user code sees (`a is b`) is the Variable's.
"""
import numpy as np

from . import array_methods
from .array_methods import ArrayMethods
from .errors import SymbolicBoolError
from .ir import Variable
from .shape_text import shape_text
from .trace_context import _state, python_numbers


class Tracer(ArrayMethods):
    """A value of a Program being traced, as user code holds it: wraps its Variable (see the module docstring)."""

    __array_priority__ = 1000
    __slots__ = ("value", "__dict__", "__weakref__")   # __dict__: the two below when set, user attributes
    length = None           # a tensor array's number of items when the trace knows it (a loop of static length
                            # that appended to it once per iteration): Python may walk it then
    dim_of = None           # (Variable x, axis) when this is `x.shape[axis]` traced (ops.dim): rules see it
                            # (Spec.dim_of)

    def __init__(self, value):
        self.value = value      # the IR Variable this stands for

    # the value's type and place, read from its Variable (`weak` is written through: `item()` marks one)
    name = property(lambda self: self.value.name)
    static_shape = property(lambda self: self.value.static_shape)
    dtype = property(lambda self: self.value.dtype)
    kind = property(lambda self: self.value.kind)
    block = property(lambda self: self.value.block)
    persistable = property(lambda self: self.value.persistable)
    ndim = property(lambda self: len(self.value.static_shape))
    spec = property(lambda self: self.value.spec)

    @property
    def weak(self):
        return self.value.weak

    @weak.setter
    def weak(self, weak):
        self.value.weak = weak

    def type_str(self):
        return self.value.type_str()

    def describe(self):
        return self.value.describe()

    def __repr__(self):
        return f"Tracer({self.value.name}: {self.value.type_str()})"

    def _no_flag(self, value, name):
        raise TypeError(f"cannot set {name} on the traced value '{self.name}' (an attribute of an object or an "
                        f"argument): write `x = x.detach()`, or set it on a local name (`x.stop_gradient = True`), "
                        "which converted code turns into that")

    stop_gradient = property(None, lambda self, value: self._no_flag(value, "stop_gradient"))

    def requires_grad_(self, requires_grad=True):
        """PyTorch's `x.requires_grad_(False)` on a traced value (`self.pe[:, :t].requires_grad_(False)`): the value
        with no gradient flowing back through it; True leaves it as it is (a Program's values carry gradients)."""
        return self if requires_grad else self.detach()
    requires_grad = property(None, lambda self, value: self._no_flag(value, "requires_grad"))

    @property
    def shape(self):
        """Static dims as ints; unknown dims as scalar int Variables while tracing."""
        if -1 not in self.static_shape:
            return self.static_shape
        return array_methods.namespace().shape(self)


    def __str__(self):
        """No text: a string made while tracing would hold a placeholder on every run, where Python's
        holds the value (repr() still shows the placeholder, for debugging)."""
        raise TypeError(f"{self.describe()} has no value while tracing, so str() or formatting it would give "
                        "the same placeholder text on every run: print(...) it (printed when the Program runs), "
                        "or return the tensor and format it outside the function")

    def __format__(self, spec):
        return self.__str__()

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise SymbolicBoolError(self)

    def __len__(self):
        if self.kind == "array" and self.length is not None:
            return self.length
        if self.kind == "array":        # its static_shape is an element's: never the list's length
            raise TypeError(
                f"len() of the tensor array '{self.name}' in plain Python: its length is known only when the "
                "Program runs; inside @to_static len(xs) and reversed(xs) are converted for you, or rt.stack it")
        if self.static_shape and self.static_shape[0] != -1:
            return self.static_shape[0]
        raise TypeError(
            f"len() of Variable '{self.name}' with unknown first dim: use rt.shape(x)[0] "
            "(inside @to_static, len(x) is converted for you)")

    def __iter__(self):
        """Rows of the first axis, as an eager Tensor iterates, when that dim is static in this trace.

        Python code that iterates (`sum(x)`, `list(x)`, `a, b = x`, `zip(x, y)`) then
        unrolls exactly as it would eagerly; a dynamic first dim has no Python length.
        """
        if self.kind == "array" and self.length is not None:
            return (self[i] for i in range(self.length))
        if self.kind == "array":
            raise TypeError(
                f"cannot iterate the tensor array '{self.name}' in plain Python: its length is known only "
                "when the Program runs; iterate it with a `for` loop inside @to_static, or rt.stack it first")
        if not self.static_shape:
            raise TypeError("iteration over a 0-d tensor")
        n = self.static_shape[0]
        if n == -1:
            raise TypeError(
                f"cannot iterate a tensor of shape {shape_text(self.static_shape)} in plain Python: dimension 0 "
                "is dynamic (known only when the Program runs), so Python cannot unroll over its rows. "
                "Use a `for` loop over it inside @to_static (it becomes a while op), rt.while_loop, a "
                "reduction such as x.sum(axis=0) instead of sum(x), or give that dimension a fixed size in "
                "the input_spec")
        return (self[i] for i in range(n))


    def _no_value(self, *args, **kwargs):
        raise TypeError(f"{self.describe()} has no value while tracing: .tolist() works on the function's "
                        "results, not inside it (use the tensor itself, or rt.print_ to see it)")

    tolist = _no_value

    def __array__(self, dtype=None, copy=None):
        """NumPy cannot hold a value that exists only when the Program runs: rather than an object array
        of symbols that every run would return unchanged, a TypeError (converted code maps `np.asarray`
        and `np.array` of a traced value to the value itself)."""
        raise TypeError(f"numpy.asarray cannot run on {self.describe()} (it has no value while tracing): use "
                        "the value itself, or rt.asarray; inside @to_static code np.asarray/np.array of it is "
                        "the value itself")

    def numpy(self):
        """Inside a traced function the array is the traced value itself (its ops are NumPy's): its value
        exists only when the Program runs."""
        return self

    def item(self, *args):
        """The Python number of a one-element value: in the graph a weakly typed 0-d value (as `int(x)`), a
        float for a float dtype (held as float64, what a Python float is), computed when the Program runs."""
        if args:
            return self._no_value()
        shape = [1 if d == -1 else d for d in self.static_shape]
        if int(np.prod(shape)) != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        ns = array_methods.namespace()
        out = ns.reshape(self, ())     # a dynamic dim: the reshape fails when the Program runs unless it is 1
        kind = np.dtype(self.dtype).kind
        if kind == "f" and np.dtype(self.dtype) != np.float64:
            out = ns.astype(out, "float64")
        elif kind == "c" and np.dtype(self.dtype) != np.complex128:
            out = ns.astype(out, "complex128")
        elif out is self:
            out = ns.astype(out, self.dtype)   # a fresh value to mark weak
        out.weak = True
        return out

    def _no_python_number(self, *args):
        raise TypeError(
            f"{self.describe()} is not known while tracing (it exists only when the Program runs), so it cannot "
            "become a Python int, float or index: keep it a tensor — index with it (x[i], rt.take), compare it "
            "(rt.where, a tensor `if`), or take sizes from x.shape")

    __index__ = __int__ = __float__ = __complex__ = _no_python_number

    # what only a traced value can be (an eager Tensor never is): a tensor array, a weak Python int
    def __add__(self, other):
        if self.kind == "array" and (type(other) is list or getattr(other, "kind", None) == "array"):
            return array_methods.namespace().array_join(self, other)   # `xs + [v]`: a new array, as for a list
        return ArrayMethods.__add__(self, other)

    def __radd__(self, other):
        if self.kind == "array" and type(other) is list:
            return array_methods.namespace().array_join(other, self)
        return ArrayMethods.__radd__(self, other)

    def __iadd__(self, other):
        if self.kind == "array" and (isinstance(other, (list, tuple)) or getattr(other, "kind", None) == "array"):
            return array_methods.namespace().array_extend(self, other)   # `xs += [v]`: Python's in-place extend
        return ArrayMethods.__iadd__(self, other)

    def __pow__(self, other):
        if type(other) is int and other < 0 and self.weak and self.dtype.kind in "iub":
            ns = array_methods.namespace()
            self = ns.astype(self, "float64")      # a Python int to a negative power is a float (NumPy: error)
            self.weak = True
        return ArrayMethods.__pow__(self, other)


    # the number protocol of what stands for a Python number (`round(float(v))`, `math.floor(x.item())`)
    def _integral(self, ufunc):
        """A Python int from a one-element value, as math.floor/ceil/trunc give one: a weak int64."""
        ns = array_methods.namespace()
        if self.static_shape != ():
            self._no_python_number()
        out = ns.astype(self if self.dtype.kind in "iub" else getattr(ns, ufunc)(self), "int64")
        out.weak = True
        return out

    def __floor__(self):
        return self._integral("floor")

    def __ceil__(self):
        return self._integral("ceil")

    def __trunc__(self):
        if not self.weak:       # as eagerly: a Tensor has no __trunc__ (math.trunc(float(t)) works)
            raise TypeError("type Tensor doesn't define __trunc__ method")
        return self._integral("trunc")

    def __round__(self, ndigits=None):
        """Python's round of a number (halves to even): an int without ndigits, else the number's type."""
        if not self.weak:       # as eagerly: round() of a Tensor is a TypeError (round(float(t)) works)
            raise TypeError("type Tensor doesn't define __round__ method")
        if ndigits is None:
            return self._integral("round")
        out = array_methods.namespace().round(self, decimals=ndigits)
        out = out if out is not self else array_methods.namespace().astype(self, self.dtype)
        out.weak = True
        return out

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self


def _python_operator(method):
    """A Tracer's operator, which on a weak value is Python's operator on a number."""
    def operator(self, *args):
        if not self.value.weak:
            return method(self, *args)
        with python_numbers():
            return method(self, *args)
    operator.__name__ = method.__name__
    return operator


for _name in array_methods.OPERATORS:     # a weak Tracer's operators compute what Python's do
    setattr(Tracer, _name, _python_operator(getattr(Tracer, _name)))


def tracer_of(value):
    """The Tracer of IR value `value` (a Variable; anything else is returned as it is): while this thread
    traces, the same Tracer each time (a memo in the trace context, dropped when the trace ends)."""
    if type(value) is not Variable:
        return value
    if not _state.blocks:
        return Tracer(value)
    memo = _state.tracers
    tracer = memo.get(id(value))
    if tracer is None or tracer.value is not value:
        tracer = memo[id(value)] = Tracer(value)
    return tracer


def value_of(x):
    """The IR value a Tracer stands for; anything else (a Variable, a literal) as it is."""
    return x.value if type(x) is Tracer else x


def values_of(xs):
    return [x.value if type(x) is Tracer else x for x in xs]
