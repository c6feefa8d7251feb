"""Array creation. Shapes may hold scalar Variables (a dynamic batch dim)."""
import operator

import numpy as np

from .. import tracing
from ..dtypes import DEFAULT_FLOAT, DEFAULT_INT, as_dtype, scalar_dtype, weak_example
from ..ir import Variable
from ..tensor import EagerTensor, Tensor, to_tensor
from ..tracer import Tracer
from .dispatch import apply
from .elementwise import astype
from .known import is_trace_constant, known_value, note_trace_constant
from .manipulation import stack
from .registry import defop
from .rules import Spec, dtype_of, shape_of


def _dims(shape):
    """A shape argument as op inputs: ints stay literals, Variables stay symbolic.

    A 1-d tensor of sizes is a shape as in NumPy: its values while they are known
    (eagerly, or made in this trace from constants), else one scalar dim per entry,
    read when the Program runs (dynamic dims).
    """
    if isinstance(shape, (Tracer, EagerTensor)) and shape.ndim == 1:
        shape = _tensor_dims(shape)
    elif isinstance(shape, (int, np.integer)) or isinstance(shape, Tracer) or hasattr(shape, "backend"):
        shape = (shape,)
    return tuple(int(d) if isinstance(d, (int, np.integer)) else d for d in shape)


def _tensor_dims(shape):
    if shape.dtype.kind not in "iub":
        raise TypeError(f"a shape tensor must hold integers, not {shape.dtype.name}")
    if isinstance(shape, EagerTensor):
        block = tracing.current_block()
        if block is None or is_trace_constant(block.program, shape):
            return tuple(operator.index(d) for d in shape.numpy())
        shape = tracing.lift_tensor(shape)      # captured: its values are read when the Program runs
    known = known_value(shape)
    if known is not None:
        return tuple(operator.index(d) for d in known)
    if shape.static_shape[0] == -1:
        raise TypeError("a shape tensor needs a static length (the number of dims) while tracing")
    return tuple(shape[i] for i in range(shape.static_shape[0]))


def _static(dims):
    return tuple(d if isinstance(d, int) else -1 for d in dims)


def _concrete(dims):
    return tuple(int(d) for d in dims)


def _emit_constant(gen, op):
    """Plan code: the value is made once, when the plan is compiled; copied on each run only
    when a reader may hand it (or a view of it) to the caller."""
    if len(op.outputs) != 1:
        return None
    name = gen.constant(_constant.kernel(gen.xp, **op.attrs))
    return name if gen.only_copying_readers(op.outputs[0]) else f"{name}.copy()"


def _emit_full(gen, op):
    """Plan code: a 0-d `full` of a literal (a loop counter's start) is a host NumPy scalar, on every
    backend: counters then stay on the host (`i + 1`, `i < n`, `x[i]` with no device kernel or sync)."""
    out = op.outputs[0]
    if out.ndim != 0 or len(op.inputs) != 1 or isinstance(op.inputs[0], Variable):
        return None
    return gen.constant(np.asarray(op.inputs[0], dtype=out.dtype)[()])


_CREATION = {"creation": True, "safe_when_static": True}


@defop("constant", infer=lambda value, dtype, shape: Spec(tuple(shape), as_dtype(dtype)), emit=_emit_constant,
       **_CREATION)
def _constant(xp, value, dtype, shape):
    return xp.asarray(value, dtype=dtype).reshape(shape)


CONSTANT = _constant      # the op folded values become (passes/fold.py)


@defop("zeros", infer=lambda *dims, dtype: Spec(_static(dims), as_dtype(dtype)), **_CREATION)
def _zeros(xp, *dims, dtype):
    return xp.zeros(_concrete(dims), dtype=dtype)


@defop("ones", infer=lambda *dims, dtype: Spec(_static(dims), as_dtype(dtype)), **_CREATION)
def _ones(xp, *dims, dtype):
    return xp.ones(_concrete(dims), dtype=dtype)


@defop("full", infer=lambda value, *dims, dtype: Spec(_static(dims), as_dtype(dtype)), emit=_emit_full, **_CREATION)
def _full(xp, value, *dims, dtype):
    return xp.full(_concrete(dims), value, dtype=dtype)


def _arange_infer(start, stop, step, dtype):
    if all(isinstance(v, (int, float)) for v in (start, stop, step)):
        n = max(0, int(np.ceil((stop - start) / step)))
        return Spec((n,), as_dtype(dtype))
    return Spec((-1,), as_dtype(dtype))


@defop("arange", infer=_arange_infer, **_CREATION)
def _arange(xp, start, stop, step, dtype):
    return xp.arange(start, stop, step, dtype=dtype)


@defop("linspace", infer=lambda start, stop, num, dtype, endpoint: Spec((num,), as_dtype(dtype)), **_CREATION)
def _linspace(xp, start, stop, num, dtype, endpoint):
    return xp.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)


@defop("eye", infer=lambda n, m, k, dtype: Spec((n, m), as_dtype(dtype)), **_CREATION)
def _eye(xp, n, m, k, dtype):
    return xp.eye(n, m, k, dtype=dtype)


@defop("full_like", infer=lambda x, value, dtype: Spec(shape_of(x), as_dtype(dtype)))
def _full_like(xp, x, value, dtype):
    return xp.full(xp.shape(x), value, dtype=dtype)


# --- public functions ------------------------------------------------------------

def _float_or(dtype, default=DEFAULT_FLOAT):
    return as_dtype(default if dtype is None else dtype).name


def zeros(shape, dtype=None, device=None):
    return apply(_zeros, _dims(shape), {"dtype": _float_or(dtype)}, device)


def ones(shape, dtype=None, device=None):
    return apply(_ones, _dims(shape), {"dtype": _float_or(dtype)}, device)


def full(shape, fill_value, dtype=None, device=None):
    dtype = as_dtype(dtype) if dtype is not None else scalar_dtype(fill_value) if not isinstance(
        fill_value, Tracer) else fill_value.dtype
    return apply(_full, (fill_value,) + _dims(shape), {"dtype": dtype.name}, device)


def arange(start, stop=None, step=1, dtype=None, device=None):
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        floats = any(isinstance(v, float) or getattr(v, "dtype", np.dtype(int)).kind == "f" for v in (start, stop, step))
        dtype = DEFAULT_FLOAT if floats else DEFAULT_INT
    return apply(_arange, (start, stop, step), {"dtype": as_dtype(dtype).name}, device)


def linspace(start, stop, num, dtype=None, endpoint=True, device=None):
    return apply(_linspace, (start, stop, int(num)), {"dtype": _float_or(dtype), "endpoint": bool(endpoint)}, device)


def eye(n_rows, n_cols=None, k=0, dtype=None, device=None):
    return apply(_eye, (int(n_rows), int(n_cols if n_cols is not None else n_rows), int(k)),
                 {"dtype": _float_or(dtype)}, device)


def full_like(x, fill_value, dtype=None, device=None):
    return apply(_full_like, (x, fill_value), {"dtype": as_dtype(dtype if dtype is not None else dtype_of(x)).name}, device)


def zeros_like(x, dtype=None, device=None):
    return full_like(x, 0, dtype, device)


def ones_like(x, dtype=None, device=None):
    return full_like(x, 1, dtype, device)


# --- rt.tensor / rt.asarray ------------------------------------------------------------

def tensor(data, dtype=None, device="cpu", copy=None, requires_grad=False):
    """Make an eager Tensor from a Python/NumPy/CuPy value (float64 data stays float64; Python floats and
    complex numbers take the defaults float32 and complex64).

    On a traced Variable (or a list/tuple holding one) it is what NumPy's asarray is on an
    array: the value itself, a cast with `dtype=`, or the rows stacked. `copy` is the array
    API's: True always copies, False never does (a ValueError where a copy is needed).
    `requires_grad=True` makes it a leaf whose `.grad` backward() fills (see runtime.autodiff).
    """
    if _holds_variable(data):
        return symbolic_asarray(data, dtype)
    if requires_grad:
        made = tensor(data, dtype, device, copy)
        if made.dtype.kind not in "fc":
            raise TypeError(f"requires_grad=True needs a float or complex tensor, got {made.dtype.name}")
        made.requires_grad = True
        return made
    tracing_now = tracing.current_block() is not None
    out = to_tensor(data, dtype, device, copy)
    if tracing_now and out is not data:
        tracing.note_made(out)            # a new Tensor each call makes: a value of the run, never state
        if _python_data(data):            # ... and known while tracing (known.py)
            note_trace_constant(out)
    return out


asarray = tensor


def _python_data(data, top=True):
    """Whether data is Python/NumPy values whose copy the new Tensor holds: no tensor, and not an
    array at the top (the Tensor may share its memory, so an in-place update would show through)."""
    if isinstance(data, (bool, int, float, complex, np.generic)):
        return True
    if isinstance(data, np.ndarray):
        return not top and data.dtype != object
    if isinstance(data, (list, tuple)):
        return all(_python_data(d, top=False) for d in data)
    return False


def _holds_variable(data):
    if isinstance(data, Tracer):
        return True
    return isinstance(data, (list, tuple)) and any(_holds_variable(item) for item in data)


def symbolic_asarray(data, dtype=None):
    """`rt.asarray` on a Variable or a nested list/tuple holding one, with eager `rt.asarray`'s
    dtypes: a Variable is itself (a weak one becomes strong, as a Python number does in an
    array), a cast with `dtype=`; a sequence is its items cast to one dtype and stacked."""
    if dtype is None:
        dtype = _sequence_dtype(data) if isinstance(data, (list, tuple)) else data.dtype
    return _cast_and_stack(data, as_dtype(dtype))


def _cast_and_stack(data, dtype):
    if isinstance(data, (list, tuple)):
        return stack([_cast_and_stack(item, dtype) for item in data])
    return astype(data, dtype)


def _sequence_dtype(data):
    """NumPy's dtype for the nested sequence, with rt.asarray's rule for Python floats: float64
    only when some item really is float64, float32 otherwise."""
    leaves = []

    def walk(item):
        if isinstance(item, (list, tuple)):
            for sub in item:
                walk(sub)
        elif isinstance(item, Tracer):
            leaves.append((np.asarray(weak_example(item.dtype)).dtype, False) if item.weak else (item.dtype, True))
        elif type(item) in (bool, int, float, complex):
            leaves.append((np.asarray(item).dtype, False))
        else:
            leaves.append((np.asarray(item.numpy() if hasattr(item, "backend") else item).dtype, True))
    walk(data)
    dtype = np.result_type(*(d for d, _ in leaves))
    if dtype == np.float64 and not any(strong and d == np.float64 for d, strong in leaves):
        return DEFAULT_FLOAT
    return dtype
