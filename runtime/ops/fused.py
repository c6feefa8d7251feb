"""`fused_elementwise`: a chain of ufunc steps over some inputs, one op (what `fuse_elementwise` makes).

    y = fused_elementwise(x, a, steps=[['multiply', 0.5, {'in': 0}],     # s0 = 0.5 * x
                                       ['add', {'step': 0}, {'in': 1}]])  # y = s0 + a

A step is `[ufunc name, *args]`; an arg is a number, `{'in': k}` (input k) or
`{'step': j}` (an earlier step's value). Step names are the `ufunc` of a
registered op, checked on every use, so a Program file cannot name any other
function. `into=k` (set by the `inplace` pass) lets the plan write the result
into input k's buffer; the code generator checks that again.
"""
import numpy as np

from .registry import REGISTRY, OpDef, register

FUSED = "fused_elementwise"
# NumPy 2.4 deprecates a positional `out` for these ufuncs only: the plan passes `out=` to them
KEYWORD_OUT = frozenset(["maximum", "minimum"])

_BY_UFUNC = {}          # ufunc name -> the op that is it
_INDEXED = [0]          # how many registered ops _BY_UFUNC has seen


def ufunc_op(name):
    """The registered op whose ufunc is `name`, or None (the only functions a step may call)."""
    if _INDEXED[0] != len(REGISTRY):
        for opdef in REGISTRY.values():
            if opdef.ufunc is not None:
                _BY_UFUNC.setdefault(opdef.ufunc, opdef)
        _INDEXED[0] = len(REGISTRY)
    return _BY_UFUNC.get(name) if isinstance(name, str) else None


def arity(name):
    """How many arguments the step's ufunc takes."""
    nin = _ARITY.get(name)
    if nin is None:
        nin = _ARITY[name] = getattr(np, name).nin
    return nin


_ARITY = {}             # ufunc name -> nin (asked once per step of every fused op planned or loaded)


def ufunc_call(op):
    """(ufunc name, args) when op is one elementwise ufunc call (a fusable step), else None."""
    if op.attrs:
        return None
    opdef = REGISTRY.get(op.type)
    if opdef is None:
        return None
    if opdef.as_ufunc is not None:      # decides for an op with a ufunc too (floor_divide: not for floats)
        return opdef.as_ufunc(list(op.inputs))
    if opdef.ufunc is not None:
        return opdef.ufunc, list(op.inputs)
    return None


def check_steps(steps, n_inputs):
    """Raise ValueError unless steps is a well-formed list of ufunc steps over n_inputs inputs."""
    if not isinstance(steps, (list, tuple)) or not steps:
        raise ValueError(f"{FUSED}: steps must be a non-empty list")
    checked = set()         # step names known to be ufuncs of registered ops (a chain repeats a few)
    for j, step in enumerate(steps):
        if not isinstance(step, (list, tuple)) or not step:
            raise ValueError(f"{FUSED}: step {j} is not a known ufunc call: {str(step)[:80]}")
        name = step[0]
        if type(name) is not str or name not in checked:
            if ufunc_op(name) is None:
                raise ValueError(f"{FUSED}: step {j} is not a known ufunc call: {str(step)[:80]}")
            checked.add(name)
        if len(step) - 1 != arity(name):
            raise ValueError(f"{FUSED}: step {j} ({name}) takes {arity(name)} arguments")
        for arg in step[1:]:
            if type(arg) in _NUMBERS:
                continue
            if isinstance(arg, dict):
                if len(arg) != 1:
                    raise ValueError(f"{FUSED}: step {j} has a malformed reference {arg!r}")
                (kind, k), = arg.items()
                limit = n_inputs if kind == "in" else j if kind == "step" else -1
                if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < limit):
                    raise ValueError(f"{FUSED}: step {j} refers to {kind} {k!r}, which does not exist")
            elif not isinstance(arg, (bool, int, float)):
                raise ValueError(f"{FUSED}: step {j} has an argument {str(arg)[:40]} that is not a number")


_NUMBERS = frozenset({bool, int, float})


def step_specs(inputs, steps):
    """The Spec of every step's value (the shape rules of the ops the steps were)."""
    specs = []
    for step in steps:
        args = [step_arg(a, inputs, specs) if isinstance(a, dict) else a for a in step[1:]]
        specs.append(ufunc_op(step[0]).infer(*args))
    return specs


def step_arg(a, inputs, values):
    """A step's argument: the input or earlier step value a reference names, or the number itself."""
    if isinstance(a, dict):
        (kind, k), = a.items()
        return inputs[k] if kind == "in" else values[k]
    return a


def _fused_infer(*inputs, steps, into=None):
    check_steps(steps, len(inputs))
    if into is not None and not (isinstance(into, int) and 0 <= into < len(inputs)):
        raise ValueError(f"{FUSED}: into={into!r} is not an input index")
    return step_specs(inputs, steps)[-1]


def _fused_kernel(xp, *inputs, steps, into=None):
    """Reference semantics: the steps one after another (plans compile them instead). `infer` checked
    the steps; this check alone keeps the kernel (copied by export) from calling anything but a ufunc."""
    values = []
    for step in steps:
        if not isinstance(getattr(np, step[0], None), np.ufunc):
            raise ValueError(f"fused_elementwise: step {step[0]!r} is not a ufunc")
        args = [(inputs[a["in"]] if "in" in a else values[a["step"]]) if isinstance(a, dict) else a for a in step[1:]]
        values.append(getattr(xp, step[0])(*args))
    return values[-1]


def _emit_fused(gen, op):
    steps = op.attrs.get("steps")
    check_steps(steps, len(op.inputs))
    if set(op.attrs) - {"steps", "into"}:
        raise ValueError(f"{FUSED}: unknown attrs {sorted(set(op.attrs) - {'steps', 'into'})}")
    return gen.ufunc_steps(op, steps)


FUSED_OP = register(OpDef(FUSED, _fused_kernel, _fused_infer, elementwise=True, fresh=True, emit=_emit_fused))
