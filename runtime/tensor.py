"""Eager Tensor: an array on a backend, with NumPy's operators and methods.

Eager calls go straight through the op registry's kernels, so eager and static
results agree by construction. A Tensor is deliberately thin: `array` (the
backend's array) and `backend`; everything else is derived. `t.data` is PyTorch's:
a Tensor without gradient that shares t's array (`DataView`, attached by writes.py). `rt.tensor`/`rt.asarray`,
which also take traced Variables, are in ops/creation.py over `to_tensor` here.
"""
import numpy as np

from . import buffers, tracing
from .array_methods import ArrayMethods, ElementCount, namespace
from .torch_methods import to_arguments
from .backends import get_backend
from .dtypes import as_dtype
from .tracer import Tracer
from .autodiff import tape
from .autodiff.tape import Slot, no_grad


class EagerTensor(ArrayMethods):
    """What only an eager Tensor is: runtime code that treats an eager Tensor and a traced value
    differently asks `isinstance(x, EagerTensor)` (a plain, fast check), never `Tensor`, which a
    traced value is an instance of too."""
    __slots__ = ()


class TensorType(type):
    """Tensor's metaclass: a traced value is an instance of what it stands for eagerly — `Tensor`, the
    Parameter's own class for a captured Parameter, `list` (not Tensor) for a tensor array — wherever it
    is asked: library code, `@not_to_static` helpers, a metaclass's `__instancecheck__`. CPython answers
    `isinstance(t, Tensor)` for an exact Tensor without calling this, so eager code pays nothing there.
    `type(x) is Tensor` stays False for a traced value (its type is `Tracer`)."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or isinstance(obj, Tracer) and issubclass(stands_for(obj), cls)


def stands_for(var):
    """The eager class a traced value stands for (what `type(x)` is when the same code runs eagerly)."""
    if var.kind == "array":
        return list
    captured = var.block.program.parameters.get(var.name) if var.persistable and var.block is not None else None
    return type(captured) if captured is not None else Tensor


class Tensor(EagerTensor, metaclass=TensorType):
    __slots__ = ("array", "backend", "_ag", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, data, backend):
        self.array = data
        self.backend = backend
        self._ag = None          # autodiff.tape.Slot once it requires grad, was made by a recorded op, or has .grad

    # --- gradients (see runtime.autodiff) -------------------------------------------
    @property
    def requires_grad(self):
        return self._ag is not None and self._ag.tracks()

    @requires_grad.setter
    def requires_grad(self, value):
        if self._ag is not None and self._ag.record is not None:
            if not value:
                raise RuntimeError("requires_grad=False on a tensor computed from others: use .detach()")
            return
        if self._ag is None:
            if value:
                self._ag = Slot()
        else:
            self._ag.requires = bool(value)

    @property
    def stop_gradient(self):
        """Paddle's spelling: True when no gradient flows to this tensor."""
        return not self.requires_grad

    @stop_gradient.setter
    def stop_gradient(self, value):
        if value and self._ag is not None and self._ag.record is not None:
            self._ag = None     # Paddle's flag on a computed tensor: it is detached (ops that follow see a constant)
            return
        self.requires_grad = not value

    @property
    def is_leaf(self):
        return self._ag is None or self._ag.record is None

    @property
    def grad(self):
        """The gradient accumulated by backward() (a Tensor), or None."""
        return None if self._ag is None else self._ag.grad

    @grad.setter
    def grad(self, value):
        if self._ag is None:
            if value is None:
                return
            self._ag = Slot(requires=False)
        self._ag.grad = value


    # --- facts -------------------------------------------------------------
    @property
    def shape(self):
        return tuple(self.array.shape)

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def ndim(self):
        return self.array.ndim

    @property
    def size(self):
        return ElementCount(self.array.size, self.array.shape)

    @property
    def device(self):
        return self.backend.name

    # --- conversion --------------------------------------------------------
    def numpy(self):
        """The values as a NumPy array: on the CPU the tensor's own array, so writing into it writes the
        tensor (as PyTorch's `.numpy()`); the array is then marked escaped (`runtime.buffers`)."""
        out = np.asarray(self.backend.to_numpy(self.array))
        buffers.escape(out)
        return out

    def __array__(self, dtype=None, copy=None):
        if copy or (dtype is not None and np.dtype(dtype) != self.dtype):     # a copy: nothing escapes
            return np.array(host(self), dtype=dtype, copy=True)
        return self.numpy()

    def item(self):
        return host(self).item()

    def tolist(self):
        return host(self).tolist()

    def to(self, *args, **kwargs):
        """This tensor on `device` and/or as `dtype` (PyTorch's `to(device)`, `to(dtype)`, `to(device,
        dtype)`, `to(other)`); itself when nothing changes."""
        device, dtype = to_arguments(args, dict(kwargs))
        out = self if dtype is None or as_dtype(dtype) == self.dtype else namespace().astype(self, dtype)
        backend = out.backend if device is None else get_backend(device)
        if backend is out.backend:
            return out
        return Tensor(backend.asarray(out.backend.to_numpy(out.array)), backend)

    def cpu(self):
        return self.to("cpu")

    def gpu(self):
        return self.to("gpu")

    def __bool__(self):
        return bool(host(self))

    def __float__(self):
        return float(host(self))

    def __int__(self):
        return int(host(self))

    def __index__(self):
        return host(self).__index__()

    def __complex__(self):
        return complex(host(self))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        if self._ag is not None and self._ag.tracks():     # rows are ops on the tape, as x[i] is
            for i in range(self.array.shape[0]):
                yield self[i]
            return
        for i in range(self.array.shape[0]):
            yield Tensor(self.array[i], self.backend)

    def __hash__(self):
        return id(self)

    # --- the array API's interchange and device methods ----------------------------------
    def to_device(self, device, /, *, stream=None):
        return self.to(device)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        buffers.escape(self.array)       # the consumer may write into it
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __setitem__(self, index, value):
        if tracing.current_block() is not None:
            raise TypeError(
                "cannot assign into an eager Tensor inside traced code: the change would not be part of "
                "the Program; make a new value instead: y = rt.setitem(x, index, value)")
        slot = self._ag
        if slot is not None and slot.record is None and slot.keeps_grad:
            with no_grad():             # a leaf collecting .grad (a Parameter being initialized): new data only
                self.array = namespace().setitem(self, index, value).array
            return
        out = namespace().setitem(self, index, value)
        if out._ag is not None:         # the tape follows the new value: self is now computed by the setitem
            self._ag = out._ag
        self.array = out.array

    def __repr__(self):
        body = np.array2string(host(self), separator=", ", prefix="tensor(")
        dev = "" if self.backend.name == "cpu" else f", device='{self.backend.name}'"
        return f"tensor({body}, dtype={self.dtype.name}{dev})"

    __str__ = __repr__

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(str(self), spec)


def host(tensor):
    """The tensor's values as a NumPy array for the runtime's own reads (no copy on the CPU, not marked
    escaped: the caller must not write into it or hand it to user code)."""
    return np.asarray(tensor.backend.to_numpy(tensor.array))


tape.Tensor = Tensor     # the tape wraps the arrays it saved only when backward() reads them


class DataView(Tensor):
    """PyTorch's `t.data`: the same array as `t`, with no gradient history, so that a write through it
    (`m.weight.data.uniform_(-r, r)`, `p.grad.data.zero_()`, `init.normal_(m.weight.data)`) changes `t`
    and is not recorded: the view reads and writes its base's array, whatever array the base holds now."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base
        self.backend = base.backend
        self._ag = None

    @property
    def array(self):
        return self.base.array

    @array.setter
    def array(self, value):
        self.base.array = value


class Parameter(Tensor):
    """A Tensor owned by a Layer: a persistable input of every Program that uses it.

    `Parameter(array)` makes one from any array-like value (a NumPy/CuPy array, a Tensor, a
    nested list), on that value's device; `Parameter(array, dtype="float32")` casts it.
    `p -= lr * g` (any `op=`) writes into the Parameter, as in PyTorch, where a plain Tensor
    rebinds its name: the Layer and its optimizer keep holding the same object.
    """

    __slots__ = ()

    def __init__(self, data, backend=None, dtype=None, requires_grad=True):
        if backend is None:
            made = to_tensor(data, dtype=dtype, device=_device_of(data))
            data, backend = made.array, made.backend
        super().__init__(data, backend)
        if requires_grad:
            self.requires_grad = True
        tracing.note_made(self)       # a Layer built inside a traced call: its parameters are values of the run



def to_tensor(data, dtype=None, device="cpu", copy=None):
    """An eager Tensor from a Python/NumPy/CuPy value or a Tensor (float64 data stays float64; Python
    floats and complex numbers take the defaults float32 and complex64). `copy` is the array
    API's: True always copies, False never does (a ValueError where a copy is needed)."""
    backend = get_backend(device)
    source = data
    if isinstance(data, EagerTensor) and copy is False and data.backend is backend and \
            (dtype is None or as_dtype(dtype) == data.dtype):
        return data       # no copy: the array itself, as NumPy's asarray; x[i] = v on it shows through
    if isinstance(data, EagerTensor):
        data = data.array if data.backend is backend else data.backend.to_numpy(data.array)
    elif type(data) in _PYTHON_DEFAULTS and dtype is None:   # np.float64 (a float subclass) keeps float64
        dtype = _PYTHON_DEFAULTS[type(data)]
    elif isinstance(data, (list, tuple)) and dtype is None:
        probe = np.asarray(data)
        if probe.dtype.name in _WIDE and not _has_numpy_float64(data):
            dtype = _WIDE[probe.dtype.name]
    arr = backend.asarray(data, dtype=dtype)
    shared = backend.is_native(data) and (arr is data or bool(backend.xp.shares_memory(arr, data)))
    if copy is False and not shared:
        raise ValueError(f"asarray(copy=False): this {type(source).__name__} cannot become a tensor without a copy")
    if copy and shared:
        arr = backend.xp.array(arr, copy=True)
    elif shared:
        buffers.escape(arr)         # the caller's array: it may write into it whenever it likes
    return Tensor(arr, backend)


_PYTHON_DEFAULTS = {float: np.float32, complex: np.complex64}
_WIDE = {"float64": np.float32, "complex128": np.complex64}     # what lists of Python numbers become


def _device_of(data):
    if isinstance(data, EagerTensor):
        return data.backend.name
    return "gpu" if hasattr(data, "__cuda_array_interface__") else "cpu"


def _has_numpy_float64(seq):
    for item in seq:
        if isinstance(item, (list, tuple)):
            if _has_numpy_float64(item):
                return True
        elif isinstance(item, (np.ndarray, np.float64, np.complex128, EagerTensor)) and \
                getattr(item, "dtype", None) in (np.float64, np.complex128):
            return True
    return False
