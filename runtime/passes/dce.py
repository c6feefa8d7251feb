"""Dead-code elimination: drop pure ops nothing needs, in every block.

A value is needed when the Program returns it, when an impure op (print,
assert, dropout, a tensor-array append) reads it, or when a needed op reads
it. Control flow is looked through:

    y, z = cond(p, ...)          only y is read later   -> z leaves the op and both branches
    h, i, k = while(...)         k read by nobody, not even by the loop's own
                                 condition or by what makes h and i -> k leaves the loop
    a = matmul(x, w)             a unused               -> the op goes

(generally: a region op's slots, `ops/regions.py`). A region op with nothing needed and nothing impure inside goes with its
blocks. A closure input no block reads (the op's closure slot: its params in
every block) goes with its params. An append to a tensor array that nothing reads (no value of its list,
`_array_families`, is needed) is dead too: a list a branch builds and never
uses goes with the loop that builds it. Pure ops that could fail at run time (an out-of-bounds index) are
dropped like the rest when unused, as in other graph compilers: a Program
reports the errors of the work it does.
"""
from ..ir import Variable
from .pipeline import register_pass
from ._graph import is_pure, region_of, remove_ops, touches_arrays


@register_pass("dce")
def eliminate_dead_code(program):
    """A region op (cond, while, scan) is looked through by its slots (`ops/regions.py`): a slot lives
    when its output or one of its block params is needed, and then needs its own inputs and results."""
    defs, owner, param_of, slots, regions = {}, {}, {}, {}, {}
    for block in program.blocks:
        for op in block.ops:
            region = region_of(op)
            for k, o in enumerate(op.outputs):
                defs[id(o)] = (op, k)
            if region is None:
                continue
            subs = region.blocks(op)
            for sub in subs:
                owner[id(sub)] = op
            slots[id(op)] = op_slots = region.slots(op)
            regions[id(op)] = (region, subs)
            for s, slot in enumerate(op_slots):
                for p in slot.param_values(subs):
                    param_of[id(p)] = (op, s)
                if slot.output is not None:
                    defs[id(op.outputs[slot.output])] = (op, ("slot", s))

    live_vars, live_ops, live_slots = set(), set(), set()
    work = []

    def need(v):
        if isinstance(v, Variable) and id(v) not in live_vars:
            live_vars.add(id(v))
            work.append(v)

    def need_op(op):
        if id(op) in live_ops:
            return
        live_ops.add(id(op))
        region = regions.get(id(op))
        for v in (region[0].control(op) if region is not None else op.inputs):
            if isinstance(v, Variable) and id(v) not in live_vars:       # need(v), inline: once per input
                live_vars.add(id(v))
                work.append(v)
        if id(op.block) in owner:
            need_op(owner[id(op.block)])

    def need_slot(op, s):
        if (id(op), s) not in live_slots:
            live_slots.add((id(op), s))
            need_op(op)
            _, inputs, _, results = slots[id(op)][s].values(op, regions[id(op)][1])
            for v in inputs + results:
                need(v)

    for v in program.outputs:
        need(v)
    family, members = _array_families(program, slots, regions)
    mutators = {}           # family -> the ops growing or shrinking its list in place, needed once it is read
    for op in program.ops():
        if id(op) not in regions and not is_pure(op):
            grown = _grown_family(op, family)
            if grown is None:
                need_op(op)
            else:
                mutators.setdefault(grown, []).append(op)

    while work or mutators:
        while work:
            v = work.pop()
            if id(v) in param_of:
                need_slot(*param_of[id(v)])
                continue
            if id(v) not in defs:
                continue                                  # a Program input
            op, k = defs[id(v)]
            if isinstance(k, tuple):
                need_slot(op, k[1])
            else:
                need_op(op)
        read = [f for f in mutators if any(m in live_vars for m in members[f])]
        for f in read:
            for op in mutators.pop(f):
                need_op(op)
        if not read:
            break

    dead = {id(op) for op in program.ops() if id(op) not in live_ops}
    dropped = False
    for block in (program.blocks if slots else ()):
        for i, op in enumerate(block.ops):
            if id(op) in dead or id(op) not in slots:
                continue
            keep = {s for s in range(len(slots[id(op)])) if (id(op), s) in live_slots}
            if len(keep) < len(slots[id(op)]):
                block.ops[i] = regions[id(op)][0].drop(op, keep)
                dropped = True
    if not dead and not dropped:
        return program          # everything is needed: the Program is as it came
    remove_ops(program, dead)
    return program


def _array_families(program, slots, regions):
    """Tensor-array values that may be one list at run time (an append grows its input in place; a
    region op's slot carries it: a while's state, a cond's result): {id: family}, {family: [ids]}. A
    family nothing needs is dead with the appends that grow it (a list a branch builds and never reads)."""
    parent = {}

    def find(i):
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(values):
        ids = [id(v) for v in values if isinstance(v, Variable) and v.kind == "array"]
        for i in ids[1:]:
            parent[find(i)] = find(ids[0])
        for i in ids[:1]:
            find(i)

    for op in program.ops():
        if id(op) not in regions:
            if touches_arrays(op):
                join(list(op.input_vars()) + list(op.outputs))
            continue
        subs = regions[id(op)][1]
        for slot in slots[id(op)]:
            out, inputs, params, results = slot.values(op, subs)
            join(inputs + params + results + ([out] if out is not None else []))
    members = {}
    for i in parent:
        members.setdefault(find(i), []).append(i)
    return {i: find(i) for i in parent}, members


def _grown_family(op, family):
    """The family of the list an impure op changes in place (it takes a tensor array and yields one:
    append, insert, pop), or None for an op impure for other reasons (print, assert, raise, random)."""
    arrays = [v for v in op.input_vars() if v.kind == "array"]
    if not arrays or not any(o.kind == "array" for o in op.outputs):
        return None
    return family[id(arrays[0])]
