"""Strength reduction: `x ** n` for n in {2, 3, 4} as products.

NumPy's `power` with a scalar exponent calls the C library's `pow` per element
(for float32 about 30 times the cost of a multiply); `x ** 2` is `square(x)`,
`x ** 3` is `square(x) * x`, `x ** 4` is `square(square(x))` — what PyTorch
does for the same exponents. For integer dtypes the result is identical; for
floats it may differ from `pow` in the last bit (a correctly rounded product
vs the library's `pow`, both within 1 ulp of the true value). Only applied
when the result has x's dtype (`int ** 3.0` is float64 in NumPy: left alone).
"""
from ..ir import Variable
from .pipeline import register_pass
from ._graph import finish

_CHAINS = {2: ("square",), 3: ("square", "multiply"), 4: ("square", "square")}


@register_pass("strength_reduce")
def reduce_strength(program):
    for block in program.blocks:
        ops = []
        for op in block.ops:
            chain = _chain(op)
            if chain is None:
                ops.append(op)
                continue
            x, out = op.inputs[0], op.outputs[0]
            value = x
            for i, step in enumerate(chain):
                last = i == len(chain) - 1
                target = out if last else block.create_var(step, out.static_shape, out.dtype)
                inputs = [value] if step == "square" else [value, x]
                ops.append(type(op)(step, inputs, [target], {}, op.origin, block))
                value = target
        block.ops = ops
    return finish(program)


def _chain(op):
    if op.type != "pow" or len(op.inputs) != 2:
        return None
    x, n = op.inputs
    if not isinstance(x, Variable) or isinstance(n, bool) or not isinstance(n, (int, float)) or n not in _CHAINS:
        return None
    out = op.outputs[0]
    if x.kind != "dense" or x.dtype != out.dtype or x.dtype.kind not in "iuf" or x.static_shape != out.static_shape:
        return None
    return _CHAINS[int(n)]
