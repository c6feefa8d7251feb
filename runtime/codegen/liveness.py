"""Where a plan deletes a big value: after the last op of its block that reads it.

A deleted name frees its memory for the next allocation instead of holding it
until the plan returns (which makes the allocator hand pages back to the OS and
fault them in again on the next call). Who reads what is the passes' map
(`passes._graph.readers`); a cond/while op's reads are its inputs and whatever
its blocks read (capture lists are not trusted).
"""
import math

from ..ir import Variable, sub_block_attrs

_BIG_BYTES = 1 << 16


def is_static(var):
    return -1 not in var.static_shape


def is_big(var):
    """Worth a `del` after its last use: 64 KiB or more, or of unknown size, or a tensor array."""
    if var.kind != "dense" or not is_static(var):
        return True
    return math.prod(var.static_shape) * var.dtype.itemsize >= _BIG_BYTES


def dead_after(block, program, cache):
    """{op index: big Variables of this block that no later op, nested block or result reads}."""
    keep = {id(v) for v in block.results if isinstance(v, Variable)}
    keep.update(id(v) for v in program.outputs)
    last, own = {}, {}
    for i, op in enumerate(block.ops):
        for v in reads(op, program, cache):
            last[id(v)] = i
        for o in op.outputs:
            if is_big(o) and id(o) not in keep:
                own[id(o)] = o
                last.setdefault(id(o), i)
    out = {}
    for key, var in own.items():
        out.setdefault(last[key], []).append(var)
    return out


def reads(op, program, cache):
    """Variables op reads, its nested blocks' reads included (cache: id(op) -> reads)."""
    if op.type not in ("cond", "while"):
        return op.input_vars()
    cached = cache.get(id(op))
    if cached is None:
        cached = list(op.input_vars())
        for key in sub_block_attrs(op.type):
            sub = program.blocks[op.attrs[key]]
            for inner in sub.ops:
                cached.extend(reads(inner, program, cache))
            cached.extend(v for v in sub.results if isinstance(v, Variable))
        cache[id(op)] = cached
    return cached
