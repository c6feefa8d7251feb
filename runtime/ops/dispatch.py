"""apply(): the one road every op call takes — run the kernel now, or record it.

Outside tracing, inputs are unwrapped and the kernel runs on their backend
(the eager hot path: keep it thin). While a block is being recorded, the call
appends an Operator whose outputs are new Variables shaped by the op's rule:
this is the recording door, the one place that unwraps an op's inputs (a
Tracer -> its Variable) and wraps its outputs (a new Variable -> its Tracer).
"""
import numpy as np

from .. import tracing
from ..backends import get_backend
from ..ir import LITERAL_TYPES, Variable
from ..tensor import EagerTensor, Tensor
from ..tracer import Tracer
from ..undefined import Undefined
from .registry import get_op
from .rules import Spec, input_types, is_weak, promote_operand
from ..autodiff.tape import GRAD_MODE, record as record_on_tape
from ..dtypes import result_type

_CPU = get_backend("cpu")
_state = tracing._state      # per thread: .blocks is the stack being recorded into
_active = tracing._active    # [threads recording]: 0 almost always, so eager calls skip the thread-local


def apply(opdef, inputs, attrs, device=None):
    if _active[0] and _state.blocks:
        return record(opdef, inputs, attrs)
    return run_eager(opdef, inputs, attrs, device)


_EXACT_SCALARS = (bool, int, float, complex)


def _builtin_scalar(x):
    """NumPy treats only exact Python numbers as weak; a subclass (ElementCount) as the Python number it is."""
    return int(x) if isinstance(x, int) else float(x) if isinstance(x, float) else complex(x)


def run_eager(opdef, inputs, attrs, device=None):
    backend = None if device is None else get_backend(device)
    args = []
    tracked = False
    for x in inputs:
        if isinstance(x, EagerTensor):
            if x._ag is not None:
                tracked = True
            if backend is None:
                backend = x.backend
            elif x.backend is not backend:
                raise ValueError(
                    f"{opdef.name}: inputs are on different devices ({backend.name} and {x.backend.name}); "
                    "move one with .to(device)")
            args.append(x.array)
        elif type(x) is list:    # an eager tensor array: a list of Tensors, its kernels take raw arrays
            if backend is None and x and isinstance(x[0], EagerTensor):
                backend = x[0].backend
            args.append([t.array if isinstance(t, EagerTensor) else t for t in x])
        elif isinstance(x, (Tracer, Variable)):
            raise TypeError(f"{opdef.name}: the traced value '{x.name}' used outside the trace that made it")
        elif isinstance(x, (int, float, complex)) and type(x) not in _EXACT_SCALARS and not isinstance(x, np.generic):
            args.append(_builtin_scalar(x))   # an int subclass (x.size) is a Python int: weak, as when traced
        else:
            args.append(x)
    if backend is None:
        backend = _CPU
    elif backend is not _CPU:
        args = [backend.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    try:
        out = opdef.kernel(backend.xp, *args, **attrs)
    except (ValueError, TypeError, IndexError) as e:
        raise explain_failure(opdef, inputs, attrs, e) from e
    if out is None:
        return None
    if type(out) is tuple:
        result = tuple(Tensor(o, backend) for o in out)
    elif type(out) is list:
        return [Tensor(o, backend) for o in out]
    else:
        result = Tensor(out, backend)
    if tracked and opdef.differentiable and GRAD_MODE.enabled:
        record_on_tape(opdef, inputs, args, attrs, result, backend)
    return result


def explain_failure(opdef, inputs, attrs, error):
    """A kernel rejected its inputs: the op's own rule usually says why more clearly than
    the array library does, and says it the way tracing the same call would."""
    if opdef.infer is not None:
        types = [Spec(tuple(x.shape), x.dtype) if isinstance(x, EagerTensor) else x for x in inputs]
        try:
            opdef.infer(*types, **attrs)
        except (ValueError, TypeError, IndexError) as clear:
            error = clear
        except Exception:
            pass
    message = str(error)
    if message.startswith(f"{opdef.name}:"):
        return error
    try:
        return type(error)(f"{opdef.name}: {message}")
    except Exception:
        return error


def record(opdef, inputs, attrs):
    block = _state.blocks[-1]
    ins = [as_input(x, block, opdef.name) for x in inputs]
    if opdef.promote:
        ins = cast_weak_operands(ins)
    specs = opdef.infer(*input_types(ins, inputs), **attrs)
    single = isinstance(specs, Spec)
    # a Python operator of Python numbers is a Python number; an rt function of them is NumPy's strong result
    weak = _state.frames[-1].python_numbers or not all(is_weak(x) for x in ins if x is not None)
    outs = [block.create_var(opdef.name, s.shape, s.dtype, weak=s.weak and weak, kind=s.kind)
            for s in ([specs] if single else specs)]
    block.append_op(opdef.name, ins, outs, attrs, origin=tracing.user_origin(), no_grad=not GRAD_MODE.enabled)
    tracers = _state.tracers        # each new Variable's one Tracer (tracer.tracer_of's memo)
    if single:
        out = tracers[id(outs[0])] = Tracer(outs[0])
        return out
    return tuple(tracers.setdefault(id(o), Tracer(o)) for o in outs) if outs else None


def as_input(x, block, op_name):
    """An op input while recording: a Variable of an enclosing block (a Tracer's, or one a gradient rule's
    replay made), or a literal."""
    kind = type(x)
    if kind is Tracer:
        x = x.value
    elif kind in _EXACT_SCALARS or x is None:       # a literal (np.float64 subclasses float yet is strong)
        return x
    elif not isinstance(x, Variable):
        return _as_ir_input(x, op_name)
    if x.block.program is not block.program or not x.block.is_ancestor_of(block):
        raise ValueError(
            f"{op_name}: the traced value '{x.name}' belongs to another trace or to a branch/loop body "
            "that has ended; return it from that body to use it here")
    return x


def _as_ir_input(x, op_name):
    if isinstance(x, EagerTensor):
        return tracing.lift_tensor(x).value
    if isinstance(x, (np.ndarray, np.generic)):       # before literals: np.float64 subclasses float yet is strong
        return constant(x).value
    if x is None or isinstance(x, LITERAL_TYPES):
        return x
    if isinstance(x, Undefined):
        raise x.error()
    if type(x) in (list, tuple) and _numbers_only(x):
        return constant(np.asarray(x)).value      # what the kernel makes of it eagerly (`[5, 6] + t`)
    raise TypeError(f"{op_name}: cannot use a value of type {type(x).__name__} as an input")


def _numbers_only(items):
    """A (nested) list or tuple of Python numbers: NumPy data, as eagerly."""
    return all(_numbers_only(v) if type(v) in (list, tuple) else type(v) in (bool, int, float, complex)
               for v in items)


def constant(value):
    """Record a NumPy constant as a `constant` op (its value is part of the Program)."""
    arr = np.asarray(value)
    return apply(get_op("constant"), (), {"value": arr.tolist(), "dtype": arr.dtype.name, "shape": list(arr.shape)})


def cast_weak_operands(ins):
    """Weak Variables (Python numbers turned symbolic) take the strong operands' dtype, as in JAX (on op inputs
    as recorded: Variables and literals)."""
    if not any(isinstance(x, Variable) and x.weak for x in ins):
        return ins
    common = result_type(*map(promote_operand, ins))
    astype = get_op("astype")
    out = []
    for x in ins:
        if isinstance(x, Variable) and x.weak and x.dtype != common:
            x = apply(astype, (x,), {"dtype": common.name}).value
            x.weak = True       # still a Python number: `i + 0.5` of a weak int stays weak
        out.append(x)
    return out
