"""Strength reduction: an op with a cheaper equivalent (its OpDef's `cheaper` rule) becomes it.

    y = pow(x, 3)        ->      t = square(x)
                                 y = multiply(t, x)
    y = sigmoid(x)       ->      the kernel's ufuncs, one op each (fused with their neighbours later)

The rule (declared beside the op, e.g. `pow`'s in ops/elementwise.py) says when
it applies and what it costs in exactness: `x ** 2/3/4` as products may differ
from `pow` in the last bit for floats; `sigmoid` as its kernel's own ufuncs is exact.
"""
from ..ops.registry import PREVIOUS, StepValue, get_op
from .pipeline import register_pass


@register_pass("strength_reduce")
def reduce_strength(program):
    for block in program.blocks:
        made_by = {id(out): op for op in block.ops for out in op.outputs}

        def producer(var):
            return made_by.get(id(var))
        ops = []
        for op in block.ops:
            rule = get_op(op.type).cheaper
            steps = rule(op, producer) if rule is not None else None
            if not steps:
                ops.append(op)
                continue
            out, values = op.outputs[0], []
            for i, (opdef, inputs) in enumerate(steps):
                target = out if i == len(steps) - 1 else block.create_var(opdef.name, out.static_shape, out.dtype)
                inputs = [values[-1] if x is PREVIOUS else values[x.index] if isinstance(x, StepValue) else x
                          for x in inputs]
                ops.append(type(op)(opdef.name, inputs, [target], {}, op.origin, block))
                values.append(target)
        block.ops = ops
    return program
