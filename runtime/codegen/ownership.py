"""Which of a Program's outputs may share memory with what outlives a run.

A run's result is the caller's to edit (`out = f(x).numpy(); out /= out.sum()`). An
output that may be a Program input, a parameter, a constant made once per plan, or a
view of one of them, would let that edit change every later run (and what `save`
writes). Decided once per plan, from the graph: a value is *shared* when

- it is a Program input (fed or persistable);
- an op whose OpDef does not say `copies` made it from a shared input (a view:
  reshape, getitem, astype(copy=False), a tensor array holding one, ...);
  ops that make their value from literals and attrs (`creation`, random draws)
  make a new value on every run (the plan's `constant` copies where it escapes);
- a `cond` output whose branch may yield a shared value, or a `while` output whose
  initial value or body result may be shared (the loop may run zero times; the
  body is read as if all its state were shared).

The plan returns a copy of exactly those outputs; every other output is made by the
run itself and costs nothing more.
"""
from ..ir import Variable, sub_block_attrs
from ..ops.registry import get_op


def shared_outputs(program):
    """Indices k of `program.outputs` whose value may share memory with an input, parameter or constant."""
    shared = {id(v) for v in program.inputs}
    _block(program, program.global_block, shared)
    return [k for k, v in enumerate(program.outputs) if id(v) in shared]


def _is_shared(x, shared):
    return isinstance(x, Variable) and id(x) in shared


def _block(program, block, shared):
    for op in block.ops:
        if op.type == "cond":
            branches = [program.blocks[op.attrs[k]] for k in sub_block_attrs("cond")]
            for branch in branches:
                _block(program, branch, shared)
            for k, out in enumerate(op.outputs):
                if any(_is_shared(b.results[k], shared) for b in branches if k < len(b.results)):
                    shared.add(id(out))
        elif op.type == "while":
            _while(program, op, shared)
        elif not get_op(op.type).copies and any(_is_shared(x, shared) for x in op.inputs):
            shared.update(id(o) for o in op.outputs)


def _while(program, op, shared):
    """Loop state k is shared if its initial value or the body's result k may be. The body is read once,
    as if every state value were shared (a loop's state may be any of them after a few iterations): an
    over-approximation that costs a copy at most, and keeps the analysis linear in nested loops."""
    cond_block, body = (program.blocks[op.attrs[k]] for k in sub_block_attrs("while"))
    for block in (cond_block, body):
        shared.update(id(p) for p in block.params)
        _block(program, block, shared)
    for k, out in enumerate(op.outputs):
        if _is_shared(op.inputs[k], shared) or (k < len(body.results) and _is_shared(body.results[k], shared)):
            shared.add(id(out))


def owned_expression(var, text):
    """Source for a copy of the output `text` (var's value) that shares no memory with the Program.

    A value that is not an array (a NumPy scalar or Python number: immutable; an undefined-value
    marker the caller raises for) is returned as is; a tensor array's items are copied."""
    if var.kind == "array":
        return (f"([a.copy() if isinstance(a, xp.ndarray) else a for a in {text}] "
                f"if isinstance({text}, list) else {text})")
    return f"({text}.copy() if isinstance({text}, xp.ndarray) else {text})"
