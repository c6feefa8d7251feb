"""Loop-invariant code motion out of loops (region ops whose `region.loop` is set: while, scan).

`licm`: an op at the top level of a loop's condition or body block whose
Variable inputs are all defined outside the loop (or by ops already hoisted)
computes the same value on every iteration; it moves to just before the
`while` op and runs once.

    while(...)                                  wt = permute_dims(w)
      body: wt = permute_dims(w)          ->    while(...)
            h = matmul(h, wt)                     body: h = matmul(h, wt)

The rule for what may move, since a hoisted op runs even when the loop
runs zero times:
- from the condition block (a region's `first_blocks`: a scan's body when its
  length is not 0): any pure op (the condition runs at least once whenever the
  loop runs, so the op ran before too);
- from the body: only pure ops that cannot raise for the shapes the tracer
  checked (their OpDef's `safe_when_static`: elementwise ops, matmul, casts,
  creation ops, reshapes/transposes, reductions — over non-empty arrays when
  the op has `needs_nonempty` —, getitem with constant in-range indices), all
  with fully static shapes (a dynamic dim could break a broadcast at run time). Such an op may still emit a NumPy floating-point
  warning (overflow, 0/0) for a loop that runs zero times; it cannot raise
  (unless the user turned warnings into errors).
Never moved: ops inside branches of the body (they run conditionally), region
ops, impure ops, ops touching tensor arrays (a fresh list per iteration
matters). Inner loops are done first, so an invariant of two nested loops
moves out of both. Blocks are closed: an op reading the loop's closure params
reads the loop's inputs they stand for once hoisted, and the ops left in the
loop read the hoisted values through new closure params (`close_new_reads`).

`hoist_gather_matmul`: `matmul(x[i], u)` in a loop body, with x and u defined
outside, x of static shape (T, ..., k) and rank >= 3, u a static matrix and i
a scalar index on the first axis, becomes `p[i]` with `p = matmul(x, u)` hoisted:
one batched product of the whole sequence instead of one small product per
step (NumPy computes each slice of a stacked matmul as it computes that slice
alone). It is speculative like any hoist: a loop that stops early wasted the
unused slices; P is limited to GATHER_LIMIT elements.

`fold_gather_addend`: `p[i] + c` in a loop body, with p and c defined outside,
i a scalar index on p's first axis and c broadcasting into p[i]'s shape, becomes
`q[i]` with `q = p + c` hoisted: a bias added to a gathered row (`x[i] @ u + b`,
after hoist_gather_matmul) is added once to the whole sequence instead of once
per step. Every element is the same add of the same two operands, so the result
is bit for bit the unfolded one. A sum in another order (`(p[i] + m) + c`, W3's
`x[i] @ u + h @ w + b`) is left alone: moving c next to p[i] would reassociate a
float sum, and a pass may reorder only where the bits stay the same. All values
share one float dtype; p[i] has no other reader; q is limited to GATHER_LIMIT
elements.
"""
from ..ir import Variable
from ..ops.elementwise import ADD
from ..ops.indexing import GETITEM
from ..ops.linalg import MATMUL
from ..ops.rules import broadcast_shapes
from ..ops.registry import get_op
from .pipeline import register_pass
from ._graph import (Insertions, blocks_under, close_new_reads, first_axis_scalar, is_pure, is_static, move_var,
                     outside_values, readers, region_of, remove_ops, size_of, sub_blocks, touches_arrays)

GATHER_LIMIT = 1 << 24


@register_pass("licm")
def hoist_loop_invariants(program):
    loops = _loops_inner_first(program)
    if not loops:
        return program          # nothing to move (a valid Program in, the same out)
    pending = Insertions()
    for op in loops:
        _hoist(op, pending)
    pending.apply_all()
    close_new_reads(program)
    return program


def _loops_inner_first(program):
    out = []

    def visit(block):
        for op in block.ops:
            region = region_of(op)
            if region is None:
                continue
            for sub in region.blocks(op):
                visit(sub)
            if region.loop:
                out.append(op)
    visit(program.global_block)
    return out


def _defined_inside(loop, pending):
    """ids of the values the loop's blocks (nested ones too) define, closure params aside (they stand for
    values from outside the loop); what inner loops hoisted is placed first."""
    inside = set()
    for block in blocks_under(loop):
        pending.apply(block)
        inside.update(id(p) for p in block.params)
        for op in block.ops:
            inside.update(id(o) for o in op.outputs)
    return inside


def _hoist(loop, pending):
    region = region_of(loop)
    first = region.first_blocks(loop)           # blocks that run whenever the loop runs (its condition)
    inside = _defined_inside(loop, pending)     # inner loops' hoisted ops may move on out of this one
    hoisted = []
    for block in region.blocks(loop):
        kept = []
        for op in block.ops:
            movable = _movable(op, in_condition=any(block is b for b in first))
            if movable and not any(id(v) in inside for v in op.input_vars()):
                hoisted.append(op)
                for o in op.outputs:
                    inside.discard(id(o))
            else:
                kept.append(op)
        block.ops = kept
    if hoisted:
        for op in hoisted:
            for o in op.outputs:
                move_var(o, loop.block)
        pending.add(loop, [_outside(op, loop) for op in hoisted])


def _outside(op, loop):
    """op moved to the loop's block: reading the loop's inputs where it read the closure params for them."""
    outside = outside_values(loop)
    return op.replace(inputs=[outside.get(id(x), x) if isinstance(x, Variable) else x for x in op.inputs],
                      block=loop.block)


def _movable(op, in_condition):
    if region_of(op) is not None or not op.outputs or touches_arrays(op) or not is_pure(op):
        return False
    if in_condition:
        return True
    return cannot_fail(op)


def cannot_fail(op):
    """Whether op is pure and cannot raise at run time for the static shapes the tracer checked."""
    if not all(is_static(v) for v in op.input_vars() + op.outputs):
        return False
    opdef = get_op(op.type)
    if callable(opdef.safe_when_static):
        return opdef.safe_when_static(op)
    if opdef.needs_nonempty:
        return opdef.safe_when_static and size_of(op.input_vars()[0]) > 0
    return opdef.safe_when_static


# --- matmul(x[i], u) -> matmul(x, u)[i] ---------------------------------------------------------

@register_pass("hoist_gather_matmul")
def hoist_gather_matmul(program):
    loops = _loops_inner_first(program)
    if not loops:
        return program
    pending = Insertions()
    for loop in loops:
        _batch_gathers(loop, pending)
    pending.apply_all()
    close_new_reads(program)
    return program


def _batch_gathers(loop, pending):
    body = region_of(loop).body(loop)
    if body is None:
        return
    inside = _defined_inside(loop, pending)
    defs = {id(o): op for op in body.ops for o in op.outputs}
    products = []
    for i, op in enumerate(body.ops):
        if op.type != MATMUL.name or not all(isinstance(x, Variable) for x in op.inputs):
            continue
        rows, u = op.inputs
        gather = defs.get(id(rows))
        if gather is None or gather.type != GETITEM.name or id(u) in inside:
            continue
        x = gather.inputs[0]
        index = gather.attrs.get("index")
        if id(x) in inside or not first_axis_scalar(index, gather.inputs[1:]):
            continue
        if not (is_static(x) and is_static(u) and x.ndim >= 3 and u.ndim == 2 and x.dtype == u.dtype):
            continue
        shape = x.static_shape[:-1] + (u.static_shape[1],)
        n = 1
        for d in shape:
            n *= d
        if n > GATHER_LIMIT or x.static_shape[-1] != u.static_shape[0]:
            continue
        product = loop.block.create_var(MATMUL.name, shape, op.outputs[0].dtype)
        products.append(_outside(type(op)(MATMUL.name, [x, u], [product], {}, op.origin, loop.block), loop))
        body.ops[i] = op.replace(type=GETITEM.name, inputs=[product] + list(gather.inputs[1:]),
                                 attrs={"index": index})
    if products:
        pending.add(loop, products)


# --- p[i] + c -> (p + c)[i] -------------------------------------------------------------------------

@register_pass("fold_gather_addend")
def fold_gather_addend(program):
    loops = _loops_inner_first(program)
    if not loops:
        return program          # and no use lists built for nothing
    pending, folded = Insertions(), set()
    found = readers(program)
    for loop in loops:
        _fold_addends(loop, pending, found, folded)
    pending.apply_all()
    remove_ops(program, folded)         # each p[i] folded was read by its rewritten add alone
    close_new_reads(program)
    return program


def _fold_addends(loop, pending, found, folded):
    body = region_of(loop).body(loop)
    if body is None:
        return
    inside = _defined_inside(loop, pending)
    defs = {id(o): op for op in body.ops for o in op.outputs}
    sums = []
    for i, op in enumerate(body.ops):
        if op.type != ADD.name or not all(isinstance(x, Variable) for x in op.inputs):
            continue
        for position, (g, c) in enumerate((op.inputs, op.inputs[::-1])):
            gather = defs.get(id(g))
            if (id(c) in inside or gather is None or gather.type != GETITEM.name or found.get(id(g)) != [op]
                    or id(gather.inputs[0]) in inside
                    or not first_axis_scalar(gather.attrs.get("index"), gather.inputs[1:])
                    or not _fits(gather, c, [op.outputs[0]])):
                continue
            p = gather.inputs[0]
            q = loop.block.create_var(ADD.name, p.static_shape, p.dtype)
            operands = [p, c] if position == 0 else [c, p]          # the add's own operand order
            sums.append(_outside(type(op)(ADD.name, operands, [q], {}, op.origin, loop.block), loop))
            body.ops[i] = rewritten = op.replace(type=GETITEM.name, inputs=[q] + list(gather.inputs[1:]),
                                                 attrs=dict(gather.attrs))
            defs.update((id(o), rewritten) for o in rewritten.outputs)     # a later add may fold it again
            folded.add(id(gather))
            break
    if sums:
        pending.add(loop, sums)


def _fits(gather, c, values):
    """p + c is p's shape and (p + c)[i] is p[i] + c elementwise; one float dtype throughout."""
    p, row = gather.inputs[0], gather.outputs[0]
    if not (is_static(p) and is_static(c) and size_of(p) <= GATHER_LIMIT and c.ndim <= row.ndim):
        return False
    if any(v.dtype != p.dtype or v.weak for v in [c, row] + values) or p.dtype.kind != "f" or p.weak:
        return False
    try:
        return broadcast_shapes(row.static_shape, c.static_shape) == row.static_shape
    except ValueError:
        return False
