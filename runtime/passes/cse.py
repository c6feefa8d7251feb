"""Common-subexpression elimination: one op computes each value once.

Two pure ops with the same type, the same inputs (the same Variables, or equal
literals of the same Python type) and the same attrs make the same values; the
later one is dropped and its outputs read from the earlier one. The earlier op
must dominate the later: it is in the same block, before it, or in a block
that encloses it. So an op in a loop body or a branch reuses a value computed
before the loop or the branch, never one computed in a sibling branch.

    s = sum(h); a = less(s, 100)           s = sum(h); a = less(s, 100)
    t = sum(h); b = greater(t, 0)    ->    b = greater(s, 0)

cond/while ops, impure ops and ops touching tensor arrays (mutable lists:
two `array_new` make two lists) are never merged.
"""
from ..ir import Variable
from . import register_pass
from ._graph import CONTROL_FLOW, finish, is_pure, remove_ops, replace_uses, sub_blocks, touches_arrays


@register_pass("cse")
def eliminate_common_subexpressions(program):
    mapping, dead = {}, set()

    def resolve(x):
        return mapping.get(id(x), x) if isinstance(x, Variable) else x

    def visit(block, table):
        for op in block.ops:
            op.inputs = [resolve(x) for x in op.inputs]
            if op.type in CONTROL_FLOW:
                for sub in sub_blocks(op):
                    visit(sub, dict(table))
                continue
            key = _key(op)
            if key is None:
                continue
            first = table.get(key)
            if first is None:
                table[key] = op
                continue
            for mine, theirs in zip(op.outputs, first.outputs):
                mapping[id(mine)] = theirs
            dead.add(id(op))
        block.results = [resolve(x) for x in block.results]

    visit(program.global_block, {})
    replace_uses(program, mapping)
    remove_ops(program, dead)
    return finish(program)


def _key(op):
    if not op.outputs or touches_arrays(op) or not is_pure(op):
        return None
    try:
        return (op.type, tuple(_input_key(x) for x in op.inputs), _attr_key(op.attrs))
    except TypeError:
        return None


def _input_key(x):
    if isinstance(x, Variable):
        return ("v", id(x))
    return ("lit", type(x).__name__, _literal(x))


def _literal(x):
    if isinstance(x, (float, complex)):
        return repr(x)          # -0.0 != 0.0 here, and nan == nan
    return x


def _attr_key(value):
    if isinstance(value, dict):
        return ("d",) + tuple(sorted((str(k), _attr_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("l",) + tuple(_attr_key(v) for v in value)
    if isinstance(value, (bool, int, float, str, type(None))):
        return (type(value).__name__, _literal(value))
    hash(value)
    return (type(value).__name__, value)
