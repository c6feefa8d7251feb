"""The gradient rule of `fused_elementwise` (made by the fusion pass, runtime/passes/fusion.py):
replay its steps with the ops they were, then run those ops' rules backwards through them.

Imported by `runtime/__init__.py` once the passes have registered the op.
"""
from ..dispatch import apply
from ..elementwise import BINARY, UNARY
from ..registry import facet, get_op
from .support import cast_like

_OP_OF_UFUNC = {ufunc: name for name, ufunc in {**UNARY, **BINARY}.items()}


@facet("fused_elementwise", "vjp")
def _fused_vjp(g, inputs, outputs, steps, into=None):
    def ref(a):
        if not isinstance(a, dict):
            return a, None
        (kind, k), = a.items()
        return (inputs[k], ("in", k)) if kind == "in" else (values[k], ("step", k))

    values, args, ops = [], [], []
    for step in steps:
        opdef = get_op(_OP_OF_UFUNC[step[0]])
        step_args = [ref(a) for a in step[1:]]
        values.append(apply(opdef, [v for v, _ in step_args], {}))
        args.append(step_args)
        ops.append(opdef)
    cotangents = {("step", len(steps) - 1): g}
    for j in reversed(range(len(steps))):
        gj = cotangents.pop(("step", j), None)
        if gj is None or ops[j].vjp is None:
            continue
        grads = ops[j].vjp(gj, tuple(v for v, _ in args[j]), values[j])
        for (_, key), grad in zip(args[j], grads):
            if key is not None and grad is not None:
                cotangents[key] = grad if key not in cotangents else cotangents[key] + grad
    return tuple(cast_like(cotangents[("in", k)], x) if ("in", k) in cotangents else None
                 for k, x in enumerate(inputs))
