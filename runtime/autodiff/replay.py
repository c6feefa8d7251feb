"""Copy recorded ops into the block being traced: how a gradient recomputes a forward it needs.

The gradient of a Program, of a `cond` branch or of a `while` body is built by
re-recording (replaying) the forward ops it needs into the block where the
backward is traced, with their inputs mapped to the values available there,
then running the engine over the copies. Sub-blocks of `cond`/`while` ops are
copied too. Impure ops (tensor-array appends, prints) are never run twice: an
append's result is the array it appended to.
"""
import re

from ..ir import Variable, sub_block_attrs
from ..tracer import tracer_of, value_of, values_of
from ..ops.regions import sub_blocks
from ..ops.registry import get_op
from .engine import Record, active_records, records_of_ops

_SUFFIX = re.compile(r"_\d+$")


def hint(var):
    return _SUFFIX.sub("", var.name) or "t"


class Alias:
    """The engine's name for an in-place array op's result: the same list at run time as its input
    (what later ops read), yet a value of its own for the gradient (the array after the append)."""

    __slots__ = ("var",)

    def __init__(self, var):
        self.var = var


def replay(ops, mapping, block, keys=None, rerun=False):
    """Record copies of `ops` into `block`; `mapping` (forward Variable -> value: a Variable of the copy or a
    traced value's Tracer) grows with their outputs.
    Returns engine Records of the copies; `keys` (forward Variable -> engine key) grows too, where a
    key differs from the value (in-place array ops).

    `rerun`: the copy recomputes a whole Program from its inputs in another Program (a static call's
    backward), so impure ops with outputs run again there, in sub-blocks too: appends fill the arrays the
    copy makes (left out, the copy's lists stayed empty), and ops drawing from the generator (dropout) draw
    the same numbers when the caller restores the generator state of the run it replays. Otherwise (a
    loop's or branch's gradient, inside the Program that ran them) an append's result is the array it
    appended to, and dropout is an error: recomputing it would draw new numbers."""
    keys = {} if keys is None else keys
    records = []
    for op in ops:
        ins = [value_of(mapping.get(x, x)) if isinstance(x, Variable) else x for x in op.inputs]
        in_keys = [value_of(keys.get(x, mapping.get(x, x))) if isinstance(x, Variable) else None for x in op.inputs]
        opdef = get_op(op.type)
        if not opdef.pure and not (rerun and op.outputs):
            if opdef.grows_input:
                mapping[op.outputs[0]] = ins[0]
                keys[op.outputs[0]] = alias = Alias(ins[0])
                records.append(Record(opdef, [tracer_of(x) for x in ins], tracer_of(ins[0]), op.attrs, in_keys,
                                      [alias], True, op.origin))
                continue
            if op.outputs and opdef.random:
                raise NotImplementedError(f"cannot differentiate through '{op.type}' inside a loop or branch "
                                          f"(at {op.origin}): recomputing it would draw new random numbers; "
                                          "move it out of the loop or branch")
            if op.outputs:
                raise NotImplementedError(f"cannot differentiate through '{op.type}' inside a loop or branch "
                                          f"(at {op.origin}): it changes its input in place")
            continue
        attrs = dict(op.attrs)
        for key, sub in zip(sub_block_attrs(op.type), sub_blocks(op)):
            attrs[key] = copy_block(sub, mapping, block, rerun)
        outs = [block.create_var(hint(o), o.static_shape, o.dtype, weak=o.weak, kind=o.kind) for o in op.outputs]
        mapping.update(zip(op.outputs, outs))
        copy = block.append_op(op.type, ins, outs, attrs, op.origin, op.no_grad)
        for record in records_of_ops([copy]):      # none for an op recorded under no_grad
            record.in_keys = in_keys
            records.append(record)
    return records


def copy_block(source, mapping, parent, rerun=False):
    """A new child block of `parent` holding a copy of `source` (params, ops, results)."""
    new = parent.program.new_block(parent)
    new.params = [new.create_var(hint(p), p.static_shape, p.dtype, weak=p.weak, kind=p.kind) for p in source.params]
    new.closure = [new.create_var(hint(p), p.static_shape, p.dtype, weak=p.weak, kind=p.kind) for p in source.closure]
    mapping.update(zip(source.params, new.params))
    mapping.update(zip(source.closure, new.closure))
    replay(source.ops, mapping, new, rerun=rerun)
    new.results = values_of(mapping.get(r, r) for r in source.results)
    return new


def clone_block(source, mapping, parent):
    """A new child block of `parent` that is `source` op for op under new names, impure ops (appends,
    prints, draws) included: a loop's blocks as written, for a new op that runs the loop again in place
    of the one it copies (the while gradient's forward-with-tape). `mapping` grows with the copies."""
    new = parent.program.new_block(parent)
    new.params = [_like(p, new) for p in source.params]
    new.closure = [_like(p, new) for p in source.closure]
    mapping.update(zip(source.params, new.params))
    mapping.update(zip(source.closure, new.closure))
    for op in source.ops:
        attrs = dict(op.attrs)
        for key, sub in zip(sub_block_attrs(op.type), sub_blocks(op)):
            attrs[key] = clone_block(sub, mapping, new)
        outs = [_like(o, new) for o in op.outputs]
        mapping.update(zip(op.outputs, outs))
        ins = [value_of(mapping.get(x, x)) if isinstance(x, Variable) else x for x in op.inputs]
        new.append_op(op.type, ins, outs, attrs, op.origin, op.no_grad)
    new.results = values_of(mapping.get(r, r) for r in source.results)
    return new


def _like(var, block):
    return block.create_var(hint(var), var.static_shape, var.dtype, weak=var.weak, kind=var.kind)


def needed_ops(ops, wrt):
    """The ops a gradient w.r.t. `wrt` must recompute: every op on a differentiable path from wrt
    (its vjp may read any of its inputs and outputs) and the ops computing those values."""
    live, _ = active_records(records_of_ops(ops), wrt)
    needed = {}
    for r in live:
        for v in list(r.in_keys) + list(r.out_keys):
            if isinstance(v, Variable):
                needed[v] = True
    selected = []
    for op in reversed(ops):
        if any(o in needed for o in op.outputs):
            selected.append(op)
            for v in op.input_vars():
                needed[v] = True
    selected.reverse()
    return selected, needed
