"""Region ops: ops that hold blocks (cond, while, scan), described by their OpDef's `region`.

No stage outside `runtime/ops/` knows a region op by name. An OpDef with `region=` says what
every stage asks of an op that holds blocks:

- `block_attrs`: the attrs holding its sub-blocks (the Block objects: the op owns them); `attrs`: its other attrs;
- `own_count(op)`: how many leading inputs are its own (cond's predicate, while's initial state, scan's
  carry and scanned inputs); the rest are its closure inputs: blocks are closed (`ir.close_blocks`), and
  closure input j feeds closure param j of EVERY block (`block.closure[j]`), which is all a block may
  read of the world outside it (`closure_pairs`);
- `own_slots(op)`: its data flow as `Slot`s; `slots(op)` adds one `closure` slot per closure input. A
  slot ties one output (or none) to the own inputs that start it, the block params bound from it and
  the block results that make it: cond's output k is made by each branch's result k; while's state k
  starts from input k, is bound to both blocks' param k and made by the body's result k; scan's scanned
  input j is bound to the body's param (a row of it: the slot is `stacked`) and has no output; closure
  input j is bound to closure param j of each block and has no output.
  Dead-code elimination (a slot lives when its output or a param of it is needed), layout and ownership
  facts, the loader's type check and tensor-array families all read slots, never positions;
- `control(op)`: values needed whenever the op runs (cond's predicate, while's condition result);
- `loop`: its blocks run repeatedly (loop-invariant motion, loop nesting limits, ownership);
  `first_blocks(op)`: blocks that run whenever the op runs (any pure op may be hoisted out of them);
  `body(op)`: the block each iteration runs, or None;
- `drop(op, keep)`: the op without the slots not in `keep` (dead-code elimination), generic over slots:
  a new op (`Operator.replace`) holding the same blocks, whose params and results lose those slots;
- `check(op, check_types)`: the loader's structural checks beyond slots (arity, param counts), raising
  `RegionError` with the text after the op's description;
- `emit(gen, op, indent)`: its plan code, written with the code generator's vocabulary (`emit`, `block`,
  `assign`, `value`, `name`, `names`, `temp`, `if_else`, `while_`/`state_loop`, `count_iteration`), the way an
  ordinary op's `emit` is; `inline(gen, op, reads)` an expression form for a loop test (built with
  `gen.inline_block`), or None, and `count_reads(op, reads, visit)` how often such an expression reads
  each value.
- `check_closure(op)`: each block has one closure param per closure input (the checker calls it);
`register` (registry.py) declares each region's block attrs to `ir`, which walks blocks without
knowing op types. Gradients and ONNX lowerings are the usual `vjp`/`onnx` facets.
"""
from dataclasses import dataclass

from ..ir import Variable
from .registry import REGISTRY


class RegionError(ValueError):
    """A region op's structure does not hold together (raised by `Region.check`)."""


@dataclass(frozen=True)
class Slot:
    """One strand of a region op's data flow: positions in the op's outputs/inputs and in its blocks'
    params/results ((block position, item position) pairs; blocks in `block_attrs` order)."""
    output: object = None        # int position in op.outputs, or None
    inputs: tuple = ()
    params: tuple = ()
    results: tuple = ()
    stacked: bool = False        # the output/inputs stack the params/results along a new first axis
    #                              (scan's scanned inputs and stacked outputs): a stacked output is a new array
    closure: bool = False        # params are positions in the blocks' `closure` (a value read from outside)

    def values(self, op, blocks):
        """(output or None, [inputs], [params], [results]) as values."""
        out = None if self.output is None else op.outputs[self.output]
        return (out, [op.inputs[i] for i in self.inputs], self.param_values(blocks),
                [blocks[b].results[i] for b, i in self.results])

    def param_values(self, blocks):
        if self.closure:
            return [blocks[b].closure[i] for b, i in self.params]
        return [blocks[b].params[i] for b, i in self.params]


class Region:
    """The default rules; a region op's OpDef holds an instance of a subclass."""

    block_attrs = ()
    attrs = ()
    loop = False

    def blocks(self, op):
        return [op.attrs[k] for k in self.block_attrs]

    def own_count(self, op):
        raise NotImplementedError

    def closure_inputs(self, op):
        """The inputs feeding the blocks' closure params (the values they read from outside)."""
        return op.inputs[self.own_count(op):]

    def closure_pairs(self, op):
        """(closure param, the op input it stands for) of every block: what a code generator binds by
        name, a gradient maps, an exporter reads from the enclosing scope."""
        inputs = self.closure_inputs(op)
        return [(p, x) for block in self.blocks(op) for p, x in zip(block.closure, inputs)]

    def own_slots(self, op):
        raise NotImplementedError

    def slots(self, op):
        """own_slots, then one closure slot per closure input."""
        own, blocks = self.own_count(op), self.blocks(op)
        n = len(op.inputs) - own
        return self.own_slots(op) + [Slot(None, (own + j,), tuple((b, j) for b in range(len(blocks))), (),
                                          closure=True) for j in range(n)]

    def check_closure(self, op):
        """Every block has one closure param per closure input, of its type."""
        inputs = self.closure_inputs(op)
        for key, block in zip(self.block_attrs, self.blocks(op)):
            if len(block.closure) != len(inputs):
                raise RegionError(f": block {key!r} has {len(block.closure)} closure params for "
                                  f"{len(inputs)} closure inputs")

    def control(self, op):
        return []

    def first_blocks(self, op):
        return []

    def body(self, op):
        return None

    def drop(self, op, keep):
        """The op without the slots whose index is not in `keep`: their output, own inputs, params and
        results go (op itself when every slot is kept)."""
        slots = self.slots(op)
        gone = [s for k, s in enumerate(slots) if k not in keep]
        if not gone:
            return op
        blocks = self.blocks(op)
        outs = {s.output for s in gone if s.output is not None}
        ins = {i for s in gone for i in s.inputs}
        params = {p for s in gone if not s.closure for p in s.params}
        closure = {p for s in gone if s.closure for p in s.params}
        results = {r for s in gone for r in s.results}
        for b, block in enumerate(blocks):
            block.params = [p for k, p in enumerate(block.params) if (b, k) not in params]
            block.closure = [p for k, p in enumerate(block.closure) if (b, k) not in closure]
            block.results = [r for k, r in enumerate(block.results) if (b, k) not in results]
        return op.replace(outputs=[o for k, o in enumerate(op.outputs) if k not in outs],
                          inputs=[x for k, x in enumerate(op.inputs) if k not in ins],
                          attrs=self.attrs_after_drop(op, [s for k, s in enumerate(slots) if k in keep]))

    def attrs_after_drop(self, op, kept):
        """The attrs once only the `kept` slots are left (op.attrs by default: none counts slots)."""
        return op.attrs

    def check(self, op, check_types):
        """Raise RegionError if the op's structure does not hold (beyond what slots check)."""

    def emit(self, gen, op, indent):
        raise NotImplementedError

    def inline(self, gen, op, reads):
        return None

    def count_reads(self, op, reads, visit):
        for x in op.inputs[:self.own_count(op)]:
            if isinstance(x, Variable):
                reads[id(x)] = reads.get(id(x), 0) + 1
        for sub in self.blocks(op):
            visit(sub, reads)
        count_closure_reads(self, op, reads)


def count_closure_reads(region, op, reads):
    """A closure input is read as often as its params are (the plan binds each param to its name)."""
    for p, x in region.closure_pairs(op):
        if isinstance(x, Variable) and reads.get(id(p)):
            reads[id(x)] = reads.get(id(x), 0) + reads[id(p)]


def stands_for(region, op, block, value):
    """The op input a closure param of `block` stands for (value itself otherwise)."""
    for p, x in zip(block.closure, region.closure_inputs(op)):
        if p is value:
            return x
    return value


def region_of(op):
    """The op's Region, or None for an ordinary op."""
    opdef = REGISTRY.get(op.type)
    return None if opdef is None else opdef.region


def sub_blocks(op):
    """The blocks op holds (none for an ordinary op)."""
    region = region_of(op)
    return [] if region is None else region.blocks(op)


# --- cond ---------------------------------------------------------------------------------------

class CondRegion(Region):
    """`outs = cond(pred, *closure)`: one branch block runs; each yields the outputs."""

    block_attrs = ("true_block", "false_block")

    def own_count(self, op):
        return 1

    def own_slots(self, op):
        return [Slot(k, (), (), ((0, k), (1, k))) for k in range(len(op.outputs))]

    def control(self, op):
        return op.inputs[:1]

    def check(self, op, check_types):
        if not op.inputs:
            raise RegionError(" has no predicate input")
        for key, sub in zip(self.block_attrs, self.blocks(op)):
            if sub.params:
                raise RegionError(f": branch block {key!r} cannot have params")
            if len(sub.results) != len(op.outputs):
                raise RegionError(f" has {len(op.outputs)} outputs but block {key!r} yields "
                                  f"{len(sub.results)} values")

    def emit(self, gen, op, indent):
        gen.if_else(op, op.inputs[0], *self.blocks(op), indent)

    def inline(self, gen, op, reads):
        """`p and t` / `p or f` / `t if p else f`: a branch that yields the predicate back is its operand."""
        true_block, false_block = self.blocks(op)
        pred = gen.value(op.inputs[0])
        if not false_block.ops and stands_for(self, op, false_block, false_block.results[0]) is op.inputs[0]:
            then = gen.inline_block(true_block, reads)
            return None if then is None else f"{pred} and {then}"
        if not true_block.ops and stands_for(self, op, true_block, true_block.results[0]) is op.inputs[0]:
            other = gen.inline_block(false_block, reads)
            return None if other is None else f"{pred} or {other}"
        then, other = gen.inline_block(true_block, reads), gen.inline_block(false_block, reads)
        return None if then is None or other is None else f"{then} if {pred} else {other}"

    def count_reads(self, op, reads, visit):
        pred = op.inputs[0]
        if isinstance(pred, Variable):
            reads[id(pred)] = reads.get(id(pred), 0) + 1
        for branch in self.blocks(op):
            # else: the and/or operand itself (a cond whose outputs all died yields nothing)
            if branch.ops or branch.results and stands_for(self, op, branch, branch.results[0]) is not pred:
                visit(branch, reads)
        count_closure_reads(self, op, reads)


# --- while --------------------------------------------------------------------------------------

class WhileRegion(Region):
    """`state = while(*init, *closure)`: the condition block yields the test, the body the next state;
    both take the state as params."""

    block_attrs = ("cond_block", "body_block")
    loop = True

    def own_count(self, op):
        return len(op.outputs)

    def own_slots(self, op):
        return [Slot(k, (k,), ((0, k), (1, k)), ((1, k),)) for k in range(len(op.outputs))]

    def control(self, op):
        return self.blocks(op)[0].results[:1]      # the loop's condition decides how often it runs

    def first_blocks(self, op):
        return self.blocks(op)[:1]                 # the condition runs at least once whenever the loop runs

    def body(self, op):
        return self.blocks(op)[1]

    def check(self, op, check_types):
        cb, bb = self.blocks(op)
        n = len(op.outputs)
        if len(op.inputs) < n or len(cb.params) != n or len(bb.params) != n or len(bb.results) != n:
            raise RegionError(f": loop state does not match ({n} outputs, {len(op.inputs)} inputs, "
                              f"{len(cb.params)}/{len(bb.params)} block params, {len(bb.results)} body results)")
        if len(cb.results) != 1:
            raise RegionError(": condition block must yield exactly one value")

    def emit(self, gen, op, indent):
        gen.while_(op, indent)          # state_loop over both blocks, unless the generator has its own form

