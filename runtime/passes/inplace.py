"""In-place writes: an elementwise op stores its result in the buffer of an input that dies there.

    m = matmul(x, w)                         m = matmul(x, w)
    h = fused_elementwise(m, b, steps=...)   h = fused_elementwise(m, b, steps=..., into=0)
    (m never read again)                     (on NumPy: np.add(m, b, m); np.maximum(m, 0, m))

The input's buffer may be written when all of these hold (checked from
liveness, per block):
- the plan owns it: an op of the same block whose OpDef says `fresh` made it
  (matmul, a ufunc op, a fused op: never a Program input, a parameter, a
  constant, a loop variable or a view made by reshape/getitem/astype);
- this op is its last reader, and every earlier reader is an op whose OpDef
  says `copies` (its result never shares memory with its inputs: a later
  `reshape` view would see the write);
- nothing outside the block reads it (no branch or loop body, no block
  result, no Program output);
- it has the result's static shape and dtype (so no broadcast into it).
A single elementwise op that qualifies becomes a one-step fused op. The
executor checks the same conditions again before it writes in place: a
Program file cannot make it write into memory it does not own.
"""
from ..ir import Variable
from ..ops.fused import FUSED, ufunc_call
from ..ops.registry import get_op
from .pipeline import register_pass
from ._graph import is_static, last_reads, region_of


def _makes_new_array(op):
    return get_op(op.type).fresh


def copying_reader(op):
    return get_op(op.type).copies


def _writes_elementwise(op):
    return op.type == FUSED or ufunc_call(op) is not None


def donations(program):
    """{id(op): k} for every elementwise op that may write its result into its input k."""
    escaping = set(id(v) for v in program.outputs)
    for block in program.blocks:
        escaping.update(id(v) for v in block.results if isinstance(v, Variable))
        for op in block.ops:
            for v in op.input_vars():
                if v.block is not block:
                    escaping.add(id(v))          # read from another block (a file's: the checker refuses it)
            region = region_of(op)
            if region is not None:              # read by a region op's blocks, through closure params
                escaping.update(id(v) for v in region.closure_inputs(op) if isinstance(v, Variable))
    found = {}
    for block in program.blocks:
        owned, aliased, last = set(), set(), last_reads(block)
        for op in block.ops:
            if not copying_reader(op):
                aliased.update(id(v) for v in op.input_vars())
            if len(op.outputs) == 1 and _makes_new_array(op):
                out = op.outputs[0]
                if out.kind == "dense" and out.ndim >= 1 and is_static(out):
                    owned.add(id(out))
        for i, op in enumerate(block.ops):
            if len(op.outputs) != 1 or not _writes_elementwise(op):
                continue
            out = op.outputs[0]
            if out.kind != "dense" or out.ndim < 1 or not is_static(out):
                continue
            for k, v in enumerate(op.inputs):
                if (isinstance(v, Variable) and id(v) in owned and last.get(id(v)) == i
                        and id(v) not in escaping and id(v) not in aliased
                        and v.static_shape == out.static_shape and v.dtype == out.dtype):
                    found[id(op)] = k
                    break
    return found


@register_pass("inplace")
def plan_inplace(program):
    chosen = donations(program)
    for block in program.blocks:
        block.ops = [_into(op, chosen[id(op)]) if id(op) in chosen else op for op in block.ops]
    return program


def _into(op, k):
    """op as a fused op writing its result into its input k."""
    if op.type != FUSED:
        name, args = ufunc_call(op)
        variables, encoded = [], []
        for a in args:
            if isinstance(a, Variable):
                if not any(v is a for v in variables):
                    variables.append(a)
                encoded.append({"in": _index(variables, a)})
            else:
                encoded.append(a)
        k = _index(variables, op.inputs[k])
        return op.replace(type=FUSED, inputs=variables, attrs={"steps": [[name] + encoded], "into": k})
    return op.replace(attrs=dict(op.attrs, into=k))


def _index(variables, var):
    return next(i for i, v in enumerate(variables) if v is var)
