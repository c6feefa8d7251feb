"""Where a plan deletes a big value: after the last op of its block that reads it.

A deleted name frees its memory for the next allocation instead of holding it
until the plan returns (which makes the allocator hand pages back to the OS and
fault them in again on the next call). Who reads what is the passes' map
(`passes._graph.last_reads`, what `inplace` asks too); a cond/while op's reads
are its inputs: its blocks are closed, and read what they need from outside
through closure params fed by the op's inputs.
"""
import math

from ..ir import Variable
from ..passes._graph import is_static, last_reads

_BIG_BYTES = 1 << 16


def is_big(var):
    """Worth a `del` after its last use: 64 KiB or more, or of unknown size, or a tensor array."""
    if var.kind != "dense" or not is_static(var):
        return True
    return math.prod(var.static_shape) * var.dtype.itemsize >= _BIG_BYTES


def dead_after(block, program):
    """{op index: big Variables of this block that no later op, nested block or result reads}."""
    keep = {id(v) for v in block.results if isinstance(v, Variable)}
    keep.update(id(v) for v in program.outputs)
    last, own = last_reads(block), {}
    for i, op in enumerate(block.ops):
        for o in op.outputs:
            if is_big(o) and id(o) not in keep:
                own[id(o)] = o
                last.setdefault(id(o), i)
    out = {}
    for key, var in own.items():
        out.setdefault(last[key], []).append(var)
    return out

