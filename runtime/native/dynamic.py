"""A region whose values have dynamic dims (-1: a Program traced with `InputSpec([None, 8])`), made static
for one call's dims: `specialize` copies the region's ops with every shape concrete, each op's shape
given by its own rule (`OpDef.infer`, the rule tracing ran) on the call's argument shapes, so
`region.analyse` and the loop emitter see a static region.

Why one kernel per distinct set of dims rather than one kernel taking the dims as arguments: the BLAS
call NumPy makes depends on the dims (sdot, sgemv or sgemm; none for an empty or k=1 product) and so
does its self-test, and so do the reduce loops' lengths and the buffers; a kernel for one set of dims
keeps every check the static region has, and its key names the dims, so the disk cache keeps each apart.

Not specialized (the NumPy plan runs the call; why is said): a loop state or cond output whose shape
differs between its start and its next value (a dim that grows per iteration), an op whose result shape
its rule leaves unknown (data-dependent), an op the rule rejects for these shapes (the NumPy plan raises
what NumPy raises). A tensor array of dynamic element shape takes its items' shape, or, with no item yet,
the shape of what the loop appends to it (the other arguments' dims decide it).
"""
import copy

import numpy as np

from ..ir import Block, Spec, Variable
from ..ops.regions import region_of
from ..ops.registry import get_op
from ..ops.rules import input_types
from .llvm import may_be_available

__all__ = ["has_dynamic_dims", "specialize", "why_never_native"]


class _NotStatic(Exception):
    pass


def has_dynamic_dims(op):
    """Whether a value op reads, makes or holds in its blocks has a -1 dim."""
    def dynamic(v):
        return isinstance(v, Variable) and any(d < 0 for d in v.static_shape)

    def walk(o):
        if any(dynamic(v) for v in (*o.inputs, *o.outputs)):
            return True
        return any(dynamic(v) for sub in o.sub_blocks() for v in (*sub.params, *sub.results)) or any(
            walk(inner) for sub in o.sub_blocks() for inner in sub.ops)

    return walk(op)


def why_never_native(op):
    """Why region op cannot be native for any dims (llvmlite missing, an op with no native form at all),
    or '': checked once, when the plan is made, so such a region never specializes."""
    if not may_be_available():
        return "llvmlite unavailable"
    for o in (op, *(inner for sub in op.sub_blocks() for inner in _ops(sub))):
        opdef = get_op(o.type)
        if opdef.native is None and opdef.ufunc is None and opdef.as_ufunc is None:
            return f"op '{o.type}' is not native"
    return ""


def _ops(block):
    for o in block.ops:
        yield o
        for sub in o.sub_blocks():
            yield from _ops(sub)


def specialize(op, args, shapes):
    """A copy of region op `op` whose every value has a static shape, given the concrete `shapes` of its
    arguments `args` (distinct Variables; a tensor array's shape is its items' shape); or a string saying
    why not."""
    shapes = list(shapes)
    for _ in range(len(args) + 1):
        copier = _Copier()
        try:
            for k, (v, shape) in enumerate(zip(args, shapes)):
                copier.bind(v, shape, origin=k)
            return copier.op(op)
        except _ItemShape as found:         # an empty tensor array takes the shape the loop appends
            shapes[found.position] = found.shape
        except _NotStatic as e:
            return str(e)
    return "the tensor arrays' element shapes do not settle"


class _ItemShape(Exception):
    """Argument `position`, an empty tensor array of dynamic element shape, is appended items of `shape`."""

    def __init__(self, position, shape):
        super().__init__(position, shape)
        self.position, self.shape = position, shape


class _Copier:
    """Copies ops with concrete shapes: `clones` maps id(Variable) to its copy."""

    def __init__(self):
        self.clones = {}
        self.origins = {}       # id(copy of a tensor array of unknown element shape) -> its argument's position

    def bind(self, v, shape, origin=None):
        """v's copy with the concrete shape, checked against v's static dims; shape None: a tensor array
        argument with no item, its element shape unknown until an append says it (`origin`: its position)."""
        if shape is None:
            clone = self.clones[id(v)] = copy.copy(v)
            self.origins[id(clone)] = origin
            return clone
        shape = tuple(int(d) for d in shape)
        if len(shape) != v.ndim or any(s != d for s, d in zip(shape, v.static_shape) if d >= 0):
            raise _NotStatic(f"{v.name} is {list(shape)}, not {list(v.static_shape)}")
        clone = copy.copy(v)
        clone.static_shape = shape
        self.clones[id(v)] = clone
        return clone

    def value(self, x):
        if not isinstance(x, Variable):
            return x
        try:
            return self.clones[id(x)]
        except KeyError:
            raise _NotStatic(f"{x.name} is read before it is made") from None

    def op(self, op):
        region = region_of(op)
        if region is not None:
            return self.region_op(op, region)
        opdef = get_op(op.type)
        inputs = [self.value(x) for x in op.inputs]
        unknown = [self.origins[id(x)] for x in inputs if id(x) in self.origins]
        if unknown and opdef.grows_input and len(inputs) == 2 and -1 not in _shape(inputs[1]):
            raise _ItemShape(unknown[0], _shape(inputs[1]))     # append(arr, x): x's shape is the items'
        try:
            specs = opdef.infer(*input_types(inputs), **op.attrs)
        except Exception as e:      # noqa: BLE001 - the rule rejects these shapes: NumPy raises what it raises
            raise _NotStatic(f"op '{op.type}' rejects these shapes ({type(e).__name__})") from None
        specs = [specs] if isinstance(specs, Spec) else list(specs or ())
        if len(specs) != len(op.outputs):
            raise _NotStatic(f"op '{op.type}' makes {len(specs)} values, not {len(op.outputs)}")
        outputs = []
        for out, spec in zip(op.outputs, specs):
            if any(int(d) < 0 for d in spec.shape):
                raise _NotStatic(f"op '{op.type}' has a data-dependent shape")
            if np.dtype(spec.dtype) != out.dtype or spec.kind != out.kind:
                raise _NotStatic(f"op '{op.type}' makes {spec.dtype}, not {out.dtype}")
            outputs.append(self.bind(out, spec.shape))
        return op.replace(inputs=inputs, outputs=outputs, block=None)

    def region_op(self, op, region):
        """A cond or while (any region op whose slots carry no stacked values): each block param takes
        the shape of the slot's start; a loop's results must keep it; a cond's branches must agree."""
        inputs = [self.value(x) for x in op.inputs]
        blocks, slots = region.blocks(op), region.slots(op)
        starts = [[None] * len(b.params) for b in blocks]
        closure_starts = [[None] * len(b.closure) for b in blocks]     # closure param j: closure input j
        for slot in slots:
            if slot.stacked:
                raise _NotStatic(f"op '{op.type}' stacks values (not native)")
            start = inputs[slot.inputs[0]] if slot.inputs else None
            for b, i in slot.params:
                (closure_starts if slot.closure else starts)[b][i] = start
        copies = [self.block(b, s, c, op) for b, s, c in zip(blocks, starts, closure_starts)]
        outputs = [None] * len(op.outputs)
        for slot in slots:
            made = {_shape(copies[b].results[i]) for b, i in slot.results}
            start = _shape(inputs[slot.inputs[0]]) if slot.inputs else None
            if region.loop and start is not None and made - {start}:
                name = op.outputs[slot.output].name if slot.output is not None else "a loop value"
                raise _NotStatic(f"loop state {name} changes shape per iteration "
                                 f"(starts {list(start)}, becomes {list(sorted(made - {start})[0])})")
            if len(made | ({start} if start is not None else set())) > 1:
                raise _NotStatic(f"op '{op.type}' yields values of different shapes")
            if slot.output is not None:
                outputs[slot.output] = self.bind(op.outputs[slot.output], start if start is not None else made.pop())
        attrs = dict(op.attrs)
        for key, block in zip(region.block_attrs, copies):
            attrs[key] = block
        return op.replace(inputs=inputs, outputs=outputs, attrs=attrs, block=None)

    def block(self, block, starts, closure_starts, owner):
        copied = Block(None)
        for params, copies, values in ((block.params, copied.params, starts),
                                       (block.closure, copied.closure, closure_starts)):
            for p, start in zip(params, values):
                if start is None:
                    raise _NotStatic(f"op '{owner.type}': a block parameter with no start value")
                unknown = self.origins.get(id(start))
                copies.append(self.bind(p, None if unknown is not None else _shape(start), origin=unknown))
        copied.ops = [self.op(o) for o in block.ops]
        copied.results = [self.value(r) for r in block.results]
        return copied


def _shape(x):
    return tuple(x.static_shape) if isinstance(x, Variable) else np.shape(x)
