"""Values known while tracing: what a Variable holds on every run when that depends on no input.

A Variable is known when pure ops compute it from literals, NumPy constants and
eager Tensors made inside this trace from Python or NumPy data (`c = rt.asarray([10])`
in the traced function: every call makes the same value). A Tensor captured from
outside the trace (a global, an attribute, a closure cell, a Parameter) is an input
read when the Program runs — it may be updated in place between calls — so nothing
computed from it is known. Nor is a Tensor made from a NumPy array (it may share
the array's memory). Converted code asks this where eager code would take a Python
branch (`if c == 10:` whose branches differ in shape); the ops stay in the Program
either way. A Tensor made in the trace and kept afterwards (stored on an object) is a
captured input of every later trace, so only the trace that made it decides on it.
"""
import warnings

import numpy as np

from .. import tracing
from ..ir import Variable
from ..tensor import host
from ..tracer import value_of
from .registry import REGISTRY

SIZE_LIMIT = 1 << 16     # larger intermediates are not computed while tracing (the graph path stays exact)
_NOT_EVALUATED = frozenset(["cond", "while"])     # their blocks are not evaluated here


def note_trace_constant(tensor):
    """Record an eager Tensor made inside the current trace from Python/NumPy data alone."""
    block = tracing.current_block()
    if block is not None:
        tracing.trace_state(block.program).constants[id(tensor)] = tensor     # held, so the id stays this tensor's


def is_trace_constant(program, tensor):
    return tracing.trace_state(program).constants.get(id(tensor)) is tensor


def known_value(value):
    """The NumPy value a traced value (its Variable) has on every run of its Program, or None when it may vary."""
    value = value_of(value)
    if not isinstance(value, Variable) or value.kind != "dense" or value.block is None:
        return None
    program = value.block.program
    state = tracing.trace_state(program)
    memo = state.known                        # id(var) -> (var, value or None); the var is held
    stack = [value]
    while stack:
        var = stack[-1]
        if _memo_get(memo, var) is not _MISSING:
            stack.pop()
            continue
        op = _defining_op(state, var)
        if var.persistable:
            tensor = program.parameters.get(var.name)
            known = host(tensor) if tensor is not None and is_trace_constant(program, tensor) else None
            memo[id(var)] = (var, known)
        elif op is None or not _evaluable(op):
            memo[id(var)] = (var, None)
        else:
            pending = [v for v in op.input_vars() if _memo_get(memo, v) is _MISSING]
            if pending:
                stack.extend(pending)
                continue
            _evaluate_into(memo, op)
        stack.pop()
    return memo[id(value)][1]


_MISSING = object()


def _memo_get(memo, var):
    entry = memo.get(id(var))
    return entry[1] if entry is not None and entry[0] is var else _MISSING


def _evaluable(op):
    if op.type in _NOT_EVALUATED or not REGISTRY[op.type].pure:
        return False
    variables = op.input_vars() + op.outputs
    return all(v.kind == "dense" and -1 not in v.static_shape and _size(v) <= SIZE_LIMIT for v in variables)


def _size(var):
    n = 1
    for d in var.static_shape:
        n *= d
    return n


def _evaluate_into(memo, op):
    """Run op's kernel on its known inputs now; its outputs are known when that succeeds cleanly."""
    args = [_memo_get(memo, x) if isinstance(x, Variable) else x for x in op.inputs]
    results = None
    if all(a is not None for a in args):
        try:
            with warnings.catch_warnings(), np.errstate(all="raise"):
                warnings.simplefilter("error")
                out = REGISTRY[op.type].kernel(np, *args, **op.attrs)
            results = [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]
        except Exception:  # noqa: BLE001 - it raises or warns again when the Program runs
            results = None
    if results is not None and (len(results) != len(op.outputs) or any(
            r.shape != o.static_shape or r.dtype != o.dtype for r, o in zip(results, op.outputs))):
        results = None
    for i, out in enumerate(op.outputs):
        memo[id(out)] = (out, None if results is None else results[i])


def _defining_op(state, var):
    """The op whose output var is: looked up in an index of var's block, extended as ops are recorded."""
    index, scanned = state.defs             # id(var) -> (var, op); id(block) -> (block, ops indexed)
    block = var.block
    for full in (False, True):
        entry = index.get(id(var))
        if entry is not None and entry[0] is var:
            return entry[1]
        seen = scanned.get(id(block))
        start = seen[1] if not full and seen is not None and seen[0] is block and seen[1] <= len(block.ops) else 0
        for op in block.ops[start:]:
            for out in op.outputs:
                index[id(out)] = (out, op)
        scanned[id(block)] = (block, len(block.ops))
    return None
