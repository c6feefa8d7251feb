"""Elementwise fusion: a tree of elementwise ufunc ops becomes one `fused_elementwise` op.

    m = multiply(0.5, x)
    p = power(x, 3)                          y = fused_elementwise(x, steps=(
    ...                               ->           ('multiply', 0.5, {'in': 0}),
    y = multiply(m, a)                             ('power', {'in': 0}, 3), ...,
                                                   ('multiply', {'step': 0}, {'step': 6})))

A region grows backwards from an elementwise op through the producers of its
inputs, taking a producer in when it is an elementwise op of the same block
and every read of its value is by an op of the region (the value lives and
dies inside). The region runs where its last op ran; its ops are pure, and
their inputs are all defined earlier, so moving them later is safe. Ops with
0-d results stay out (the executor runs scalar arithmetic as Python
operators, cheaper than any kernel).

How a fused op runs is the executor's business, per backend: on NumPy, the
steps inline as one ufunc call each, writing with `out=` into at most a few
scratch buffers reused as values die (and into a dying input, see
`inplace`); on CuPy, one kernel compiled with `backend.fuse` (cupy.fuse).
The fused op itself (its steps, checks and code generator) is defined in
`runtime/ops/fused.py`; what counts as one ufunc call is each op's `ufunc` or
`as_ufunc` (relu is `maximum(x, 0)`).
"""
from ..ir import Variable
from ..ops.fused import FUSED, ufunc_call
from .pipeline import register_pass
from ._graph import read_counts, remove_ops


def _literal_ok(x):
    return isinstance(x, (bool, int, float))


@register_pass("fuse_elementwise")
def fuse_elementwise(program):
    uses = read_counts(program)
    dead = set()
    for block in program.blocks:
        calls = {}                          # id(fusable op) -> its ufunc call
        for op in block.ops:
            call = _fusable(op)
            if call is not None:
                calls[id(op)] = call
        if len(calls) < 2:
            continue
        defs = {id(op.outputs[0]): op for op in block.ops if id(op) in calls}     # fusable producers only
        position = {id(op): i for i, op in enumerate(block.ops)}
        taken = set()
        for root in reversed(block.ops):
            if id(root) in taken or id(root) not in calls:
                continue
            members = _grow(root, defs, uses, taken)
            if len(members) < 2:
                continue
            ordered = sorted(members, key=lambda op: position[id(op)])
            block.ops[position[id(root)]] = _rewrite(root, ordered, calls)
            taken.update(id(op) for op in members)
            dead.update(id(op) for op in ordered if op is not root)
    if not dead:
        return program          # nothing fused: the Program is as it came
    remove_ops(program, dead)
    return program


def _fusable(op):
    """op's ufunc call (name, args) when it may join a fused op, else None."""
    if len(op.outputs) != 1:
        return None
    call = ufunc_call(op)
    if call is None:
        return None
    out = op.outputs[0]
    if out.kind == "dense" and out.ndim >= 1 and all(
            isinstance(x, Variable) and x.kind == "dense" or _literal_ok(x) for x in op.inputs):
        return call
    return None


def _grow(root, defs, uses, taken):
    """The region: root and every producer all of whose value's reads are region ops.

    A worklist, linear in the region's reads: each member counts its reads of each
    value once; a producer joins when those counts reach all of its value's reads.
    (Joining only makes the test easier for others, so the fixed point is the same
    whatever order members join in.)
    """
    members = {id(root): root}
    inside = {}                 # id(v) -> reads of v by members so far
    todo = [root]
    while todo:
        op = todo.pop()
        for v in op.inputs:
            if not isinstance(v, Variable):
                continue
            inside[id(v)] = reads = inside.get(id(v), 0) + 1
            producer = defs.get(id(v))          # (defs: the block's fusable ops)
            if producer is None or id(producer) in members or id(producer) in taken or reads != uses.get(id(v), 0):
                continue
            members[id(producer)] = producer
            todo.append(producer)
    return list(members.values())


def _rewrite(root, ordered, calls):
    """The fused op computing all of `ordered` (root last), in root's place (`calls`: each op's ufunc call)."""
    index = {}
    inputs, steps = [], []
    produced = {id(op.outputs[0]): j for j, op in enumerate(ordered)}
    for op in ordered:
        name, args = calls[id(op)]
        encoded = []
        for a in args:
            if isinstance(a, Variable):
                if id(a) in produced:
                    encoded.append({"step": produced[id(a)]})
                else:
                    if id(a) not in index:
                        index[id(a)] = len(inputs)
                        inputs.append(a)
                    encoded.append({"in": index[id(a)]})
            else:
                encoded.append(a)
        steps.append([name] + encoded)
    return root.replace(type=FUSED, inputs=inputs, attrs={"steps": steps})
