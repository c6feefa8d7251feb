"""rt.while_loop: Python's `while` on a concrete condition, a `while` op on a traced one (condition and
body traced over the loop state until its types settle).
"""
from .. import pytree, retraces, tracing
from ..autodiff.tape import GRAD_MODE
from ..errors import ControlFlowError
from ..ir import close_blocks
from ..tensor import Tensor
from ..tracer import Tracer, tracer_of, values_of
from ..undefined import Undefined
from .carried import _carrying_tensor_writes, _load_cells, _MAX_RETRACES, _put_back
from .join import (as_predicate, as_variable, _cast, _describe, _fill, _hint, _is_scalar, _is_tensor_list,
                   _leaf_names, _merge_shapes, _same_python_value, _structure_message, _subject, _tensorish,
                   _to_array, _truth, _weak_join)


def while_loop(cond_fn, body_fn, loop_vars, names=None, state=None):
    """`while cond_fn(*v): v = body_fn(*v)`; a `while` op once the condition is symbolic.

    loop_vars is a tuple/list (of pytrees); body_fn returns the same structure.
    A condition that is a Python value at first and turns symbolic later (a
    counter made a tensor by the body) continues as a `while` op from there.
    `state` (a callable returning `runtime.state` cells): places outside the
    locals the body may write, carried as extra loop variables of the op.
    """
    cells = None
    values = tuple(loop_vars)
    while True:
        pred = _probe(cond_fn, values)
        if isinstance(pred, Tracer):
            cells = tuple(state()) if state is not None else ()
            values = _carrying_tensor_writes(cells, lambda all_cells, values=values: _while_with_cells(
                cond_fn, body_fn, values, names, all_cells) if all_cells else
                _build_while(cond_fn, body_fn, values, names))
            break
        if not _truth(pred):
            break
        values = tuple(body_fn(*values))
    return type(loop_vars)(values) if isinstance(loop_vars, list) else values


def _while_with_cells(cond_fn, body_fn, values, names, cells):
    """The while op over (loop variables..., cell values...); each trace loads the cells from the params."""
    n = len(values)
    before = [c.get() for c in cells]
    kept = [False] * len(cells)     # per cell: the last body trace left the value it was given (no write)

    def cond_with(*state):
        _load_cells(cells, state[n:])
        return cond_fn(*state[:n])

    def body_with(*state):
        _load_cells(cells, state[n:])
        out = tuple(body_fn(*state[:n]))
        now = tuple(c.get() for c in cells)
        kept[:] = [a is b for a, b in zip(now, state[n:])]
        return out + now

    flat_names = (tuple(names) if names is not None and len(names) == n else ("output",) * n) + \
        tuple(c.label for c in cells)
    try:
        outs = _build_while(cond_with, body_with, values + tuple(before), flat_names)
    except BaseException:
        _load_cells(cells, before)
        raise
    _load_cells(cells, before)
    for cell, value, unwritten in zip(cells, outs[n:], kept):
        if not unwritten:       # a place the body never writes keeps its value: no write
            cell.set(value)
    return tuple(outs[:n])


def _probe(cond_fn, state):
    """Evaluate the condition; if symbolic, forget the ops it recorded (the loop records its own)."""
    block = tracing.current_block()
    if block is None:
        return cond_fn(*state)
    point = tracing.checkpoint(block)
    pred = cond_fn(*state)
    if isinstance(pred, Tracer):
        tracing.rollback(point)
    return pred


def _build_while(cond_fn, body_fn, init, names):
    """Trace cond and body over the loop state until its shapes/dtypes settle; record a while op.

    Each trace may teach something about the state that forces a retrace: a name
    first bound in the body (gets a placeholder), a list that grew (becomes a
    tensor array), a Python number that changed (becomes a weak Variable), a
    weak value promoted by the body, or a dim that changed (relaxed to -1).
    """
    block = tracing.current_block()
    program = block.program
    leaves, treedef = pytree.flatten(init)
    leaf_names = _leaf_names(treedef, names)
    carry = [_carry(leaf) for leaf in leaves]
    written = tracing.trace_state(program).written
    saved = dict(written)
    for _ in range(_MAX_RETRACES):
        _put_back(written, saved)
        first = program.block_mark()
        cb = program.new_block(block)
        c_params = _params(cb, carry, leaf_names)
        with tracing.block_guard(cb):
            pred = cond_fn(*pytree.unflatten(treedef, _inputs(carry, c_params)))
            pred = as_predicate(as_variable(pred))
        cb.results = [pred.value]
        bb = program.new_block(block)
        b_params = _params(bb, carry, leaf_names)
        with tracing.block_guard(bb):
            out = tuple(body_fn(*pytree.unflatten(treedef, _inputs(carry, b_params))))
        grown = _grow_dicts(init, out, names)
        restructured = _fill(grown, out, block, fill_only=False)
        if grown is not init and not _has_changed(restructured, init):
            restructured = grown
        if not _has_changed(restructured, init):
            restructured = _grow_lists(init, out, block)
        if restructured is not None:
            retraces.note(retraces.LOOP_SETTLING)
            program.discard_blocks(first)
            return _build_while(cond_fn, body_fn, restructured, names)
        out_leaves, out_def = pytree.flatten(out)
        if out_def != treedef:
            raise ControlFlowError(_structure_message("a loop iteration", init, out, names,
                                                      "loop's initial state", "state after the body"))
        results, changed = [], False
        for i, (name, new) in enumerate(zip(leaf_names, out_leaves)):
            settled, result = _settle(name, carry[i], new, b_params[i], block, bb)
            if settled is not carry[i]:
                carry[i], changed = settled, True
            elif result is not None:
                results.append(result)
        if changed:
            retraces.note(retraces.LOOP_SETTLING)
            program.discard_blocks(first)
            continue
        _put_back(written, saved)
        return _finish_while(block, cb, bb, carry, c_params, b_params, results, treedef, leaf_names)
    raise ControlFlowError("loop variables did not settle to fixed shapes/dtypes after "
                           f"{_MAX_RETRACES} traces of the loop body")


def _settle(name, state, new, param, block, body_block):
    """Check one loop variable after a body trace: (its state, unchanged or updated; its body result)."""
    kind, value = state[0], state[1]
    if kind == "static":
        if _same_python_value(value, new) or isinstance(value, Undefined) and isinstance(new, Undefined):
            return state, None
        if _is_scalar(value) and (_tensorish(new) or _is_scalar(new)):
            return ("var", _constant_in(block, value, _hint(name, "loop"))), None
        raise ControlFlowError(
            f"{_subject(name, 'loop variable')} changes inside a tensor-dependent loop from "
            f"{_describe(value)} to {_describe(new)}; only tensors and numbers can change")
    if isinstance(new, Undefined):
        raise ControlFlowError(f"{_subject(name, 'loop variable')} is deleted inside the loop body")
    with tracing.block_guard(body_block):
        result = as_variable(new)
    if result.kind != value.kind:
        raise ControlFlowError(f"{_subject(name, 'loop variable')} turns from a tensor array into a tensor")
    if result.dtype != value.dtype:
        common = _weak_join(value, result) if value.weak else value.dtype
        if common != value.dtype:
            with tracing.block_guard(block):
                return ("var", _cast(value, common)), None
        if not (value.weak or result.weak):
            raise ControlFlowError(
                f"{_subject(name, 'loop variable')} has dtype {value.dtype.name} before the loop and "
                f"{result.dtype.name} after an iteration; cast it with .astype() so both agree")
        with tracing.block_guard(body_block):
            result = _cast(result, value.dtype)
    merged = _merge_shapes(param.static_shape, result.static_shape, name)
    if merged != param.static_shape:
        return ("var", value, merged), None
    return state, result


def _grow_lists(init, out, block):
    """Loop state where a Python list grew in the body: the same state with those lists as tensor arrays."""
    if not (isinstance(out, tuple) and len(out) == len(init)):
        return None
    changed, new = False, list(init)
    for i, (before, after) in enumerate(zip(init, out)):
        if _is_tensor_list(before) and isinstance(after, Tracer) and after.kind == "array":
            new[i] = _to_array(before, after, block)
            changed = True
        elif _is_tensor_list(before) and _is_tensor_list(after) and len(after) != len(before) and after:
            new[i] = _to_array(before, after[-1], block)
            changed = True
    return tuple(new) if changed else None


def _grow_dicts(init, out, names):
    """Loop state where the body adds keys to a dict: the same state with those keys first Undefined.

    As for a name first bound in the body, the key then exists after the loop,
    and reading it when the loop ran zero times is an error naming it.
    """
    if not (isinstance(out, tuple) and isinstance(init, tuple) and len(out) == len(init)):
        return init
    changed, new = False, list(init)
    for i, (before, after) in enumerate(zip(init, out)):
        if type(before) is dict and type(after) is dict and not set(after) <= set(before):
            name = names[i] if names and len(names) == len(init) else "dict"
            grown = dict(before)
            for key in after:
                if key not in grown:
                    grown[key] = Undefined(f"{name}[{key!r}]", tracing.user_origin())
            new[i], changed = grown, True
    return tuple(new) if changed else init


def _has_changed(new, old):
    a, b = pytree.flatten(new)[0], pytree.flatten(old)[0]
    return len(a) != len(b) or any(x is not y for x, y in zip(a, b))


def _carry(leaf):
    if isinstance(leaf, Tracer):
        return ("var", leaf)
    if isinstance(leaf, Tensor):
        return ("var", tracing.lift_tensor(leaf))
    return ("static", leaf)


def _constant_in(block, value, hint):
    """A number as a Variable of `block`: weak for a Python number, of its own dtype for a NumPy one."""
    with tracing.block_guard(block):
        var = as_variable(value)
    block.rename_var(var.value, hint)
    return var


def _params(block, carry, leaf_names):
    params = []
    for state, name in zip(carry, leaf_names):
        if state[0] != "var":
            params.append(None)
            continue
        var = state[1]
        shape = state[2] if len(state) > 2 else var.static_shape
        params.append(tracer_of(block.create_var(_hint(name, "loop"), shape, var.dtype, weak=var.weak,
                                                 kind=var.kind)))
    return params


def _inputs(carry, params):
    return [p if p is not None else state[1] for state, p in zip(carry, params)]


def _finish_while(block, cb, bb, carry, c_params, b_params, results, treedef, leaf_names):
    inits = [state[1].value for state in carry if state[0] == "var"]
    cb.params = [p.value for p in c_params if p is not None]
    bb.params = [p.value for p in b_params if p is not None]
    bb.results = values_of(results)
    outs = [tracer_of(block.create_var(_hint(name, "loop"), p.static_shape, p.dtype, weak=p.weak, kind=p.kind))
            for name, p in zip(leaf_names, b_params) if p is not None]
    block.append_op("while", inits + close_blocks([cb, bb]), values_of(outs), {"cond_block": cb, "body_block": bb},
                    origin=tracing.user_origin(), no_grad=not GRAD_MODE.enabled)
    it = iter(outs)
    leaves = [next(it) if state[0] == "var" else state[1] for state in carry]
    return pytree.unflatten(treedef, leaves)
