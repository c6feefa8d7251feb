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
- a region op's output (`ops/regions.py` slots) whose own inputs or block results may be
  shared: a `cond` output whose branch may yield a shared value, a `while` output whose
  initial value or body result may be (the loop may run zero times); a loop's blocks are
  read as if all their params were shared.

The plan returns a copy of exactly those outputs; every other output is made by the
run itself and costs nothing more.
"""
from ..ir import Variable
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
        region = get_op(op.type).region
        if region is not None:
            _region(program, op, region, shared)
        elif not get_op(op.type).copies and any(_is_shared(x, shared) for x in op.inputs):
            shared.update(id(o) for o in op.outputs)


def _region(program, op, region, shared):
    """A slot's output is shared if its inputs or results may be. A loop's blocks are read once, as if every
    param were shared (a loop's state may be any of them after a few iterations): an over-approximation
    that costs a copy at most, and keeps the analysis linear in nested loops."""
    blocks = region.blocks(op)
    values = [slot.values(op, blocks) for slot in region.slots(op)]
    for _, inputs, params, _ in values:
        if region.loop or any(_is_shared(x, shared) for x in inputs):
            shared.update(id(p) for p in params)
    for block in blocks:
        _block(program, block, shared)
    for slot, (out, inputs, _, results) in zip(region.slots(op), values):
        if out is not None and not slot.stacked and any(_is_shared(x, shared) for x in inputs + results):
            shared.add(id(out))


def owned_expression(var, text):
    """Source for a copy of the output `text` (var's value) that shares no memory with the Program.

    A value that is not an array (a NumPy scalar or Python number: immutable; an undefined-value
    marker the caller raises for) is returned as is; a tensor array's items are copied."""
    if var.kind == "array":
        return (f"([a.copy() if isinstance(a, xp.ndarray) else a for a in {text}] "
                f"if isinstance({text}, list) else {text})")
    return f"({text}.copy() if isinstance({text}, xp.ndarray) else {text})"
