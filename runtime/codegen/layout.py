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
  - a while loop's state: when its start and every iteration's result are (a fixed point);
  - a cond's output: when both branches' are.
"""
from ..ir import Variable
from ..ops.fused import FUSED
from ..ops.indexing import GETITEM
from ..ops.linalg import MATMUL
from ..ops.registry import get_op
from ..passes._graph import first_axis_scalar, sub_blocks

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
        if op.type == "while":
            _while(op, facts)
        elif op.type == "cond":
            _cond(op, facts)
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


def _while(op, facts):
    cond_block, body = sub_blocks(op)
    state = [_fact(x, facts) for x in op.inputs[:len(body.params)]]
    while True:
        for block in (cond_block, body):
            for param, fact in zip(block.params, state):
                _set(facts, param, fact)
        _visit(cond_block, facts)
        _visit(body, facts)
        after = [_meet(fact, _fact(r, facts)) for fact, r in zip(state, body.results)]
        if after == state:
            break
        state = after                # facts only grow or vanish: this ends
    for out, fact in zip(op.outputs, state):
        _set(facts, out, fact)


def _cond(op, facts):
    branches = sub_blocks(op)
    for block in branches:
        _visit(block, facts)
    for k, out in enumerate(op.outputs):
        _set(facts, out, _meet(_fact(branches[0].results[k], facts), _fact(branches[1].results[k], facts)))


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
