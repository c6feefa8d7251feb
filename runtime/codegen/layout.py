"""Which plan values are C-contiguous arrays, and on what condition: where a 2-D float matmul
may run as `a.dot(b)`.

Why it matters: `ndarray.dot` costs about 0.8 µs less per call than the `matmul` ufunc, and for
C-contiguous float operands both make the same gemv/gemm call with the same arguments, so the
results are equal bit for bit. For other layouts they part ways (dot copies an operand that is
not one segment, matmul passes a blasable operand's strides to BLAS or loops without BLAS), and
so may the last bits.

A value's fact is the set of plan inputs whose C-contiguity makes it C-contiguous; a value
without a fact may have any layout. The plan checks the inputs a `dot` needs once, at its start.
  - a creation op's value, a matmul's: always (NumPy allocates them C-contiguous);
  - a plan input: itself;
  - a ufunc op, a fused elementwise op: when all its array inputs are (a ufunc allocates its
    result in its inputs' memory order; a fused chain writes into inputs or buffers it made);
  - x[i] with one scalar index on the first axis: when x is;
  - a region op's output (`ops/regions.py` slots): when the slot's own inputs and the block results
    making it are; in a loop, its params likewise, up to a fixed point (a while's state: when its start
    and every iteration's result are; a cond's output: when both branches' are).
"""
from ..ir import Variable
from ..ops.fused import FUSED
from ..ops.indexing import GETITEM
from ..ops.linalg import MATMUL
from ..ops.registry import get_op
from ..passes._graph import first_axis_scalar

ALWAYS = frozenset()


def c_contiguous_facts(program):
    """{id(Variable): frozenset of the ids of the plan inputs that must be C-contiguous for it to be}."""
    facts = {id(v): frozenset([id(v)]) for v in program.inputs if v.kind == "dense"}
    _visit(program.global_block, facts)
    return facts


def _fact(x, facts):
    if not isinstance(x, Variable):
        return ALWAYS               # a literal: not an array the plan hands on
    if x.kind == "dense" and x.ndim == 0:
        return ALWAYS               # a 0-d value has one layout
    return facts.get(id(x))


def _meet(a, b):
    return None if a is None or b is None else a | b


def _visit(block, facts):
    for op in block.ops:
        region = get_op(op.type).region
        if region is not None:
            _region(op, region, facts)
        else:
            fact = _op_fact(op, facts) if len(op.outputs) == 1 and op.outputs[0].kind == "dense" else None
            for out in op.outputs:
                _set(facts, out, fact)      # a loop's body is visited again: no fact of an earlier pass stays


def _op_fact(op, facts):
    opdef = get_op(op.type)
    if opdef.creation or op.type == MATMUL.name:
        return ALWAYS
    if opdef.ufunc is not None or op.type == FUSED:
        fact = ALWAYS
        for x in op.inputs:
            fact = _meet(fact, _fact(x, facts))
        return fact
    if op.type == GETITEM.name and first_axis_scalar(op.attrs.get("index"), op.inputs[1:]):
        return _fact(op.inputs[0], facts)
    return None


def _region(op, region, facts):
    blocks, slots = region.blocks(op), region.slots(op)
    values = [slot.values(op, blocks) for slot in slots]
    state = []
    for _, inputs, _, _ in values:
        fact = ALWAYS
        for x in inputs:
            fact = _meet(fact, _fact(x, facts))
        state.append(fact)
    while True:
        for (_, _, params, _), fact in zip(values, state):
            for param in params:
                _set(facts, param, fact)
        for block in blocks:
            _visit(block, facts)
        after = []
        for (_, _, _, results), fact in zip(values, state):
            for r in results:
                fact = _meet(fact, _fact(r, facts))
            after.append(fact)
        if not region.loop or after == state:
            break
        state = after                # facts only grow or vanish: this ends
    for slot, (out, _, _, _), fact in zip(slots, values, after):
        if out is not None:
            _set(facts, out, ALWAYS if slot.stacked else fact)     # a stacked output is a new array


def _set(facts, var, fact):
    if fact is None:
        facts.pop(id(var), None)
    else:
        facts[id(var)] = fact


def blas_ready(*arrays):
    """Whether every array is C-contiguous and aligned (what the facts assume of the plan's inputs)."""
    for a in arrays:
        flags = getattr(a, "flags", None)
        if flags is None or not (flags.c_contiguous and flags.aligned):
            return False
    return True
