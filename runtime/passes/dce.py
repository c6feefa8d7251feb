"""Dead-code elimination: drop pure ops nothing needs, in every block.

A value is needed when the Program returns it, when an impure op (print,
assert, dropout, a tensor-array append) reads it, or when a needed op reads
it. Control flow is looked through:

    y, z = cond(p, ...)          only y is read later   -> z leaves the op and both branches
    h, i, k = while(...)         k read by nobody, not even by the loop's own
                                 condition or by what makes h and i -> k leaves the loop
    a = matmul(x, w)             a unused               -> the op goes

A cond/while with nothing needed and nothing impure inside goes with its
blocks. An append to a tensor array that nothing reads (no value of its list,
`_array_families`, is needed) is dead too: a list a branch builds and never
uses goes with the loop that builds it. Pure ops that could fail at run time (an out-of-bounds index) are
dropped like the rest when unused, as in other graph compilers: a Program
reports the errors of the work it does.
"""
from ..ir import Variable
from .pipeline import register_pass
from ._graph import finish, is_pure, remove_ops, sub_blocks


@register_pass("dce")
def eliminate_dead_code(program):
    defs, owner, param_of = {}, {}, {}
    for block in program.blocks:
        for op in block.ops:
            for k, o in enumerate(op.outputs):
                defs[id(o)] = (op, k)
            for sub in sub_blocks(op):
                owner[sub.idx] = op
            if op.type == "while":
                for sub in sub_blocks(op):
                    for k, p in enumerate(sub.params):
                        param_of[id(p)] = (op, k)

    live_vars, live_ops, live_states = set(), set(), set()
    work = []

    def need(v):
        if isinstance(v, Variable) and id(v) not in live_vars:
            live_vars.add(id(v))
            work.append(v)

    def need_op(op):
        if id(op) in live_ops:
            return
        live_ops.add(id(op))
        if op.type == "cond":
            need(op.inputs[0])
        elif op.type == "while":
            need(sub_blocks(op)[0].results[0])      # the loop's condition decides how often it runs
        else:
            for v in op.inputs:
                need(v)
        if op.block.idx in owner:
            need_op(owner[op.block.idx])

    def need_state(op, k):
        if (id(op), k) not in live_states:
            live_states.add((id(op), k))
            need_op(op)
            need(op.inputs[k])
            need(sub_blocks(op)[1].results[k])

    for v in program.outputs:
        need(v)
    family, members = _array_families(program)
    mutators = {}           # family -> the ops growing or shrinking its list in place, needed once it is read
    for op in program.ops():
        if op.type not in ("cond", "while") and not is_pure(op):
            grown = _grown_family(op, family)
            if grown is None:
                need_op(op)
            else:
                mutators.setdefault(grown, []).append(op)

    while work or mutators:
        while work:
            v = work.pop()
            if id(v) in param_of:
                need_state(*param_of[id(v)])
                continue
            if id(v) not in defs:
                continue                                  # a Program input
            op, k = defs[id(v)]
            need_op(op)
            if op.type == "cond":
                for sub in sub_blocks(op):
                    need(sub.results[k])
            elif op.type == "while":
                need_state(op, k)
        read = [f for f in mutators if any(m in live_vars for m in members[f])]
        for f in read:
            for op in mutators.pop(f):
                need_op(op)
        if not read:
            break

    dead = {id(op) for op in program.ops() if id(op) not in live_ops}
    for op in program.ops():
        if id(op) in dead:
            continue
        if op.type == "cond":
            keep = {k for k, o in enumerate(op.outputs) if id(o) in live_vars}
            if len(keep) < len(op.outputs):
                _drop_outputs(op, keep)
                for sub in sub_blocks(op):
                    sub.results = [r for k, r in enumerate(sub.results) if k in keep]
        elif op.type == "while":
            keep = {k for k in range(len(op.outputs)) if (id(op), k) in live_states}
            if len(keep) < len(op.outputs):
                cb, bb = sub_blocks(op)
                n = len(op.outputs)
                _drop_outputs(op, keep)
                op.inputs = [x for k, x in enumerate(op.inputs[:n]) if k in keep] + op.inputs[n:]
                for sub in (cb, bb):
                    for k, p in enumerate(sub.params):
                        if k not in keep and sub.vars.get(p.name) is p:
                            del sub.vars[p.name]
                    sub.params = [p for k, p in enumerate(sub.params) if k in keep]
                bb.results = [r for k, r in enumerate(bb.results) if k in keep]
    remove_ops(program, dead)
    return finish(program)


def _array_families(program):
    """Tensor-array values that may be one list at run time (an append grows its input in place; a
    while carries it; a cond yields it): {id: family}, {family: [ids]}. A family nothing needs is
    dead with the appends that grow it (a list a branch builds and never reads)."""
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
        if op.type == "while":
            cb, bb = sub_blocks(op)
            for k, out in enumerate(op.outputs):
                join([op.inputs[k], cb.params[k], bb.params[k], bb.results[k], out])
        elif op.type == "cond":
            for k, out in enumerate(op.outputs):
                join([out] + [sub.results[k] for sub in sub_blocks(op)])
        else:
            join(list(op.input_vars()) + list(op.outputs))
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


def _drop_outputs(op, keep):
    block = op.block
    for k, o in enumerate(op.outputs):
        if k not in keep and block.vars.get(o.name) is o:
            del block.vars[o.name]
    op.outputs = [o for k, o in enumerate(op.outputs) if k in keep]
