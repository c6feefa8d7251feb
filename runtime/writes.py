"""Writing a new value into an existing Tensor: `t.set_value(v)`, `param -= lr * g`, a buffer assignment.

Tensors are values everywhere else (`x[i] = v` in traced code rebinds `x`), but
training needs places that last: a Parameter, a BatchNorm buffer, an optimizer's
moment estimate. Writing one keeps the Tensor object and replaces its array, so
everything holding it (a Layer, an optimizer, a Program that captured it) reads
the new value. Eagerly the array is replaced now; while tracing the write is
recorded (`state.write_tensor`): the Program computes the value, returns it as
an extra output, and the static function stores it in the Tensor after every run.
"""
import numpy as np

from . import ops, tracing
from .autodiff.tape import GRAD_MODE
from .buffers import escape
from .array_methods import _augmented
from .tracer import Tracer
from .ops.dispatch import constant
from .ops.stop import stop_gradient
from .state import write_tensor
from .tensor import DataView, EagerTensor, Parameter, Tensor
from .torch_methods import IN_PLACE


def set_value(tensor, value):
    """Write `value` (a Tensor, Variable, array or number broadcastable to tensor's shape, cast to its
    dtype under NumPy's 'same_kind' rule) into `tensor` in place; returns tensor."""
    return _write(tensor, value)


def _write(tensor, value, keep_grad=False):
    block = tracing.current_block()
    if block is None:
        new = _eager_value(tensor, value)
        tensor.array = new
        return tensor
    if not isinstance(value, Tracer):
        value = tracing.lift_tensor(value) if _is_tensor(value) else constant(_eager_array(value, tensor))
    value = _cast(value, tensor.dtype, _label(block.program, tensor))
    if tuple(value.static_shape) != tuple(tensor.shape):
        value = ops.broadcast_to(value, tuple(tensor.shape))
    if block is not block.program.global_block and not keep_grad:
        # inside a tensor-dependent if/while, as eagerly: set_value gives the Tensor the new array and no
        # gradient history, so no later read gets a gradient through the write (an item assignment,
        # `keep_grad`, is on the eager tape: the gradient flows through it)
        value = stop_gradient(value)
    write_tensor(tensor, value, _label(block.program, tensor))
    return tensor


def _eager_value(tensor, value):
    backend = tensor.backend
    if _is_tensor(value):
        if value.backend is not backend:
            raise ValueError(f"set_value: the tensor is on {tensor.device}, the value on {value.device}; "
                             f"move it first with .to({tensor.device!r})")
        array = value.array
    else:
        array = backend.asarray(_eager_array(value, tensor))
    if array.dtype != tensor.dtype:
        _check_cast(array.dtype, tensor.dtype, "the tensor")
        array = array.astype(tensor.dtype)
    if tuple(array.shape) != tuple(tensor.shape):
        try:
            array = backend.xp.broadcast_to(array, tensor.shape)
        except ValueError:
            raise ValueError(f"set_value: a value of shape {tuple(array.shape)} cannot be written into a tensor "
                             f"of shape {tuple(tensor.shape)}") from None
        array = backend.xp.array(array, copy=True)   # a broadcast view is read-only
    return array


def _eager_array(value, tensor):
    """A private copy of a non-tensor value (the caller may change its array later); a Python number
    is weak: it takes the tensor's dtype."""
    if isinstance(value, (bool, int, float, complex)):
        return np.asarray(value, dtype=tensor.dtype)
    return np.array(value, copy=True)


def _cast(value, dtype, label):
    if value.dtype == dtype:
        return value
    if not getattr(value, "weak", False):
        _check_cast(value.dtype, dtype, label)
    return ops.astype(value, dtype)


def _check_cast(source, target, label):
    if not np.can_cast(source, target, casting="same_kind"):
        raise TypeError(f"cannot write a {np.dtype(source).name} value into {label} ({np.dtype(target).name}) "
                        "with casting rule 'same_kind'; cast it with .astype() first")


def _label(program, tensor):
    var = tracing.trace_state(program).captured.get(id(tensor))
    return f"'{var.name}'" if var is not None else f"a tensor of shape {list(tensor.shape)}"


def _is_tensor(value):
    return isinstance(value, EagerTensor)


_eager_setitem = Tensor.__setitem__


def _setitem(tensor, index, value):
    """`t[index] = value`: eagerly, in place; in a static function's trace, on a captured Tensor that
    does not require grad, a write of `rt.setitem(t, index, value)` into it (as `set_value`: stored
    after each run, carried through a tensor-dependent if/while)."""
    block = tracing.current_block()
    if block is not None and tracing.trace_state(block.program).keeps_writes and not tensor.requires_grad:
        current = tracing.lift_tensor(tensor)
        if not isinstance(value, (Tracer, Tensor)):
            value = _eager_array(value, tensor) if isinstance(value, (bool, int, float, complex)) else value
        _write(tensor, ops.setitem(current, index, value), keep_grad=True)
        return
    _eager_setitem(tensor, index, value)


def _data(tensor):
    """PyTorch's `t.data`: eagerly a DataView (t's array, no gradient; writes through it change t); while
    tracing, t's value without gradient (a traced read of t, so a Program reads t's array of each run)."""
    if tracing.current_block() is not None:
        return tensor.detach()
    return DataView(tensor)


def _set_data(tensor, value):
    """`t.data = value`: t holds value's array from now on (its shape and dtype may change, as in PyTorch);
    while tracing, a write into t that lasts, as `set_value`."""
    if tracing.current_block() is not None or isinstance(value, Tracer):
        set_value(tensor, value)
        return
    if _is_tensor(value):
        if value.backend is not tensor.backend:
            raise ValueError(f"t.data = value: the tensor is on {tensor.device}, the value on {value.device}; "
                             f"move it first with .to({tensor.device!r})")
        tensor.array = value.array
    elif tensor.backend.is_native(value):
        tensor.array = tensor.backend.asarray(value)
        escape(tensor.array)        # the caller's array: it may write into it later
    else:
        raise TypeError(f"t.data = value takes a Tensor (or a {tensor.backend.name} array), "
                        f"not {type(value).__name__}: wrap it with rt.tensor(...)")


# Attached here, the layer that owns writing: Tensor sits below the ops these need.
Tensor.data = property(_data, _set_data)
Tensor.set_value = set_value
Tensor.__setitem__ = _setitem
Parameter.__iadd__ = lambda self, other: set_value(self, _augmented("add", self, other))
Parameter.__isub__ = lambda self, other: set_value(self, _augmented("subtract", self, other))
Parameter.__imul__ = lambda self, other: set_value(self, _augmented("multiply", self, other))
Parameter.__itruediv__ = lambda self, other: set_value(self, _augmented("divide", self, other))
Parameter.__ipow__ = lambda self, other: set_value(self, _augmented("pow", self, other))


# --- PyTorch's in-place methods (`x.add_(y)`, `w.zero_()`, `p.normal_(0, 0.02)`) on Tensors ----------------

def _in_place(tensor, value, name):
    """Write an in-place method's result into `tensor`: while tracing, a write that lasts (as `p -= g`);
    eagerly, the new array, and the tape follows the new value as after `x[i] = v`."""
    if tracing.current_block() is not None:
        return set_value(tensor, value)
    slot = tensor._ag
    if GRAD_MODE.enabled and slot is not None and slot.record is None and slot.tracks():
        raise RuntimeError(f"{name}(): a leaf tensor that requires grad cannot be changed in place where the "
                           "change would be recorded (as in PyTorch): do it under `with rt.no_grad():`")
    tensor.array = _eager_value(tensor, value)
    made = getattr(value, "_ag", None)
    if made is not None and made.record is not None and tuple(value.shape) == tuple(tensor.shape) and \
            value.dtype == tensor.dtype:
        tensor._ag = made
    return tensor


def _writing(name, base):
    def method(self, *args, **kwargs):
        return _in_place(self, getattr(self, base)(*args, **kwargs), name)
    method.__name__ = name
    method.__doc__ = f"x.{base}(...) written into x (PyTorch's in-place method)."
    return method


def _fill_(self, value):
    return _in_place(self, ops.full_like(self, value) if not _is_tensor(value) and not isinstance(value, Tracer)
                     else ops.broadcast_to(ops.astype(value, self.dtype), self.shape), "fill_")


for _name, _base in IN_PLACE.items():
    if _base is not None:
        setattr(Tensor, _name, _writing(_name, _base))
Tensor.fill_ = _fill_
Tensor.zero_ = lambda self: _in_place(self, ops.zeros_like(self), "zero_")
Tensor.copy_ = lambda self, src, non_blocking=False: _in_place(self, src, "copy_")
Tensor.normal_ = lambda self, mean=0.0, std=1.0: _in_place(
    self, ops.randn(*self.shape, dtype=self.dtype, device=self.device) * std + mean, "normal_")
Tensor.uniform_ = lambda self, a=0.0, b=1.0: _in_place(
    self, ops.rand(*self.shape, dtype=self.dtype, device=self.device) * (b - a) + a, "uniform_")
