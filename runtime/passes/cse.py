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
two `array_new` make two lists) are never merged. Blocks are closed: an op
reading a closure param is keyed by the value the param stands for, and a
block that reuses an enclosing block's value reads it through a new closure
param (`close_new_reads`).
"""
from ..ir import Variable
from .pipeline import register_pass
from ._graph import (close_new_reads, is_pure, outside_values, region_of, remove_ops, replace_uses, sub_blocks,
                     touches_arrays, with_inputs)


@register_pass("cse")
def eliminate_common_subexpressions(program):
    mapping, dead = {}, set()

    def resolve(x):
        return mapping.get(id(x), x) if isinstance(x, Variable) else x

    table = {}      # key -> first op, for the block being visited and the blocks enclosing it
    stands = {}     # id(closure param) -> id of the value it stands for, in the outermost block

    def visit(block):
        added = []
        for i, op in enumerate(block.ops):
            if mapping:
                op = block.ops[i] = with_inputs(op, [resolve(x) for x in op.inputs])
            if region_of(op) is not None:
                for p, x in outside_values(op).items():
                    stands[p] = stands.get(id(x), id(x)) if isinstance(x, Variable) else None
                for sub in sub_blocks(op):
                    visit(sub)
                continue
            key = _key(op, stands)
            if key is None:
                continue
            first = table.get(key)
            if first is None:
                table[key] = op
                added.append(key)
                continue
            for mine, theirs in zip(op.outputs, first.outputs):
                mapping[id(mine)] = theirs
            dead.add(id(op))
        if mapping:
            block.results = [resolve(x) for x in block.results]
        for key in added:           # a sibling block must not see this block's ops (no copy per block)
            del table[key]

    visit(program.global_block)
    if not dead:
        return program          # nothing merged: the Program is as it came
    remove_ops(program, dead)
    replace_uses(program, mapping)
    close_new_reads(program)
    return program


# Attrs bigger than this (a constant's values) are not compared: the key would cost as much
# as the data, for every such op; two big equal constants stay two ops.
KEY_BUDGET = 4096


_NO_ATTRS = ("d",)          # _attr_key({}, ...), the attrs of most ops


def _key(op, stands):
    if not op.outputs or touches_arrays(op) or not is_pure(op):
        return None
    try:
        return (op.type, tuple([_input_key(x, stands) for x in op.inputs]),
                _attr_key(op.attrs, [KEY_BUDGET]) if op.attrs else _NO_ATTRS)
    except (TypeError, _TooBig):
        return None


class _TooBig(Exception):
    pass


def _input_key(x, stands):
    if isinstance(x, Variable):
        return ("v", stands.get(id(x)) or id(x))
    return ("lit", type(x).__name__, _literal(x))


def _literal(x):
    if isinstance(x, (float, complex)):
        return repr(x)          # -0.0 != 0.0 here, and nan == nan
    return x


def _attr_key(value, budget):
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig()
    if isinstance(value, dict):
        return ("d",) + tuple(sorted((str(k), _attr_key(v, budget)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("l",) + tuple(_attr_key(v, budget) for v in value)
    if isinstance(value, (bool, int, float, str, type(None))):
        return (type(value).__name__, _literal(value))
    hash(value)
    return (type(value).__name__, value)
