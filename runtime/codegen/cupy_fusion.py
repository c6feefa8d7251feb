"""A fused op on a backend other than NumPy: one kernel compiled by `backend.fuse` (cupy.fuse).

Kernels are cached per (backend, steps, number of inputs): a plan compiled again
reuses the compiled kernel.
"""
import math

from ..ops.fused import step_arg

FUSED_KERNELS = {}


def fused_kernel(gen, op, steps):
    """The plan's call of the op's kernel (a single step is a plain ufunc call)."""
    if len(steps) == 1:
        return f"{gen.bound(steps[0][0])}({', '.join(gen.value(step_arg(a, op.inputs, ())) for a in steps[0][1:])})"
    key = (gen.backend.name, repr(steps), len(op.inputs))
    kernel = FUSED_KERNELS.get(key)
    if kernel is None:
        kernel = FUSED_KERNELS[key] = gen.backend.fuse(fused_function(steps, len(op.inputs), gen.xp))
    return f"{gen.bound('fused', kernel)}({', '.join(gen.value(x) for x in op.inputs)})"


def fused_function(steps, n_inputs, xp):
    """A Python function computing the steps with xp's ufuncs (what backend.fuse compiles)."""
    params = [f"a{k}" for k in range(n_inputs)]
    lines = [f"def fused({', '.join(params)}):"]
    for j, step in enumerate(steps):
        args = []
        for a in step[1:]:
            if isinstance(a, dict):
                (kind, k), = a.items()
                args.append(params[k] if kind == "in" else f"s{k}")
            else:
                args.append(repr(a) if not isinstance(a, float) or math.isfinite(a) else f"float('{a!r}')")
        lines.append(f"    s{j} = xp.{step[0]}({', '.join(args)})")
    lines.append(f"    return s{len(steps) - 1}")
    namespace = {"xp": xp}
    exec(compile("\n".join(lines) + "\n", "<dy2static fused kernel>", "exec"), namespace)
    return namespace["fused"]
