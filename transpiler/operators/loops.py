"""`while` and `for`: Python's loop on Python values, a while op on traced ones. A `for` with a static
length whose body changes what the loop carries unrolls as Python would."""
import sys

import runtime as rt
from runtime import pytree, retraces, tracing
from runtime.control_flow import as_variable
from runtime.errors import ControlFlowError
from runtime.ops.control import WHILE
from runtime.ops.registry import get_op

from .base import _is_array, _symbolic, _tensorish, _tuple, _untuple
from .regions import (_carrying_attributes, _cell_values, _check_captured, _check_list_aliases, _check_objects,
                      _graph_region, _keep_partial_state, _made_op, _moved_attributes, _undo_point, _watch_objects)
from .logical import _graph_logical, convert_logical_not
from .conditionals import _write_back, convert_ifelse
from .iterables import _as_symbolic_iterable, SymbolicIterable, SymbolicRange
from ..scan_for import scanned_for


def convert_while(cond_fn, body_fn, args, names, state=None):
    try:
        return _convert_while(cond_fn, body_fn, args, names, state)
    except BaseException as e:
        _keep_partial_state(e, (cond_fn, body_fn), names, sys._getframe(1))
        raise


def _convert_while(cond_fn, body_fn, args, names, state):
    n = len(names)
    body, returned = _tracking_body(body_fn, n)
    block = tracing.current_block()
    start = len(block.ops) if block is not None else 0
    watched = _watch_objects(state, cond_fn, body_fn) if block is not None else []
    captured = _cell_values(cond_fn, body_fn)
    undo = _undo_point(state) if block is not None else None
    with _graph_region("while"):
        outs = rt.while_loop(cond_fn, body, tuple(args), names=names, state=state)
        moved = list(_moved_attributes(watched)) if _made_op(block, start, WHILE) else []
        if moved:       # attributes a method called in the body sets (`self.step()`): carried, traced again
            retraces.note(retraces.CALLED_ATTRIBUTES)
            undo()
            state = _carrying_attributes(state, moved, watched)
            outs = rt.while_loop(cond_fn, body, tuple(args), names=names, state=state)
    if _made_op(block, start, WHILE):    # a graph loop
        _check_captured("while", captured, cond_fn, body_fn)
        _check_objects("while", watched)
    outs = _write_back(outs, args, names, returned)
    _check_list_aliases("while", args, _tuple(outs, n), names)
    return _untuple(outs, n)


def _tracking_body(body_fn, n, offset=0):
    """body_fn as `state -> state tuple`, noting which containers every call returned as it got them."""
    returned = [j for j in range(n)]

    def body(*state):
        given = state[offset:]
        out = _tuple(body_fn(*state), n)
        for k in range(n):
            if returned[k] is not None and not (out[k] is given[k] and type(given[k]) in (list, dict)):
                returned[k] = None
        return out
    return body, returned


def convert_for(iterable, body_fn, args, names, until=None, state=None):
    """`until`: the name (one of `names`) of a flag that ends the loop once true: a lowered `break`."""
    try:
        return _convert_for(iterable, body_fn, args, names, until, state)
    except BaseException as e:
        _keep_partial_state(e, (body_fn,), names, sys._getframe(1))
        raise


def _convert_for(iterable, body_fn, args, names, until, state):
    n = len(names)
    extra_test = None if until is None else _not_flag(names.index(until))
    if isinstance(iterable, SymbolicIterable) or _symbolic(iterable):
        it = _as_symbolic_iterable(iterable)
        length = it.length()
        if not _symbolic(length) and length == 0:      # runs no iteration: its body is never traced, as in Python
            return _python_for(it, body_fn, tuple(args), names, extra_test, state)
        grown = {}
        if _symbolic(length) or not _changes_structure(it, body_fn, tuple(args), n, state, grown):
            undo = None if _symbolic(length) else _undo_point(state)
            first_op = len(tracing.current_block().ops)
            try:
                outs = _graph_for(it, length, body_fn, tuple(args), names, extra_test, state)
                if grown and not _replayable(tracing.current_block().ops[first_op:]):
                    raise _Unroll()     # a list item set or popped in the body: the unrolled loop has gradients
                if extra_test is None:      # every iteration appended the same number of items: a known length
                    for j, (start, step) in grown.items():
                        out = _tuple(outs, n)[j]
                        if _is_array(out):
                            out.length = start + step * length
                _check_list_aliases("for", args, _tuple(outs, n), names)    # a static length then unrolls
                return outs
            except Exception as e:  # noqa: BLE001 - a static length: what one trace of the body cannot
                if undo is not None:    # carry (a dtype or rank that changes after the first iteration, an
                    retraces.note(retraces.UNROLLED_FOR)
                    undo()              # item read at an index earlier iterations fill) unrolls as Python does
                else:
                    if isinstance(e, ControlFlowError) and not isinstance(it, SymbolicRange) \
                            and "different structure" in str(e):
                        raise ControlFlowError(
                            f"{e}. The loop walks a tensor whose dimension 0 is dynamic, so it cannot unroll as "
                            "Python would: give that dimension a fixed size in the input_spec, or keep what the "
                            "loop carries one structure (append tensors to a list and rt.stack it)") from None
                    raise
        iterable = it       # a static length and a body that grows what it carries: unroll as Python does
    elif extra_test is None and (state is None or not tuple(state())):   # a long range over a big body: a scan op
                                                                          # after one iteration (no places to carry)
        iterable, args = scanned_for(iterable, body_fn, tuple(args), n)
    return _python_for(iterable, body_fn, tuple(args), names, extra_test, state)


class _Unroll(Exception):
    """A static-length loop whose while op would lose what Python's unrolled walk keeps."""


def _replayable(ops):
    """Whether a gradient can replay the sub-blocks of these ops: none of their ops changes its input in place
    (a tensor array's item set or popped; an append is fine) or draws random numbers (runtime.autodiff.replay)."""
    for op in ops:
        for block in op.sub_blocks():
            if any(not get_op(inner.type).pure and not get_op(inner.type).grows_input and inner.outputs
                   for inner in block.ops) or not _replayable(block.ops):
                return False
    return True


def _not_flag(k):
    return lambda *state: convert_logical_not(state[k])


def _changes_structure(it, body_fn, state, n, cells=None, grown=None):
    """Whether a while op cannot carry this loop but Python's unrolled walk can: its items cannot be
    indexed by a symbolic index (a list of strings zipped with a tensor), or one trace of the body
    changes the structure of the loop state (grows a tuple, adds a dict key; a list of tensors it appends
    to is a tensor array the while op carries: `grown` gets, per such list, its length and how many items
    one iteration appends). Nothing recorded here is kept."""
    block = tracing.current_block()
    point = tracing.checkpoint(block)
    cells = tuple(cells()) if cells is not None else ()      # places the body writes: put back after the probe
    held = [c.get() for c in cells]
    try:
        try:
            item = it.item(as_variable(0))
        except Exception:  # noqa: BLE001 - no symbolic item: only Python can walk it
            return True
        if not any(isinstance(v, (tuple, list, dict)) for v in state):
            return False        # only tensors and numbers: a new name's value fills in, nothing can grow
        leaves, treedef = pytree.flatten(state)
        try:
            out = _tuple(body_fn(item, *pytree.unflatten(treedef, leaves)), n)
        except Exception:  # noqa: BLE001 - the while op's own trace reports it
            return False
        if len(out) != len(state) or any(not _appended_to(before, after) and
                                         pytree.flatten(before)[1] != pytree.flatten(after)[1]
                                         for before, after in zip(state, out)):
            return True
        grown.update({j: (len(before), len(after) - len(before)) for j, (before, after) in enumerate(zip(state, out))
                      if type(before) is list and type(after) is list and len(after) > len(before)})
        return False
    finally:
        for cell, value in zip(cells, held):
            cell._store(value)
        tracing.rollback(point)


def _appended_to(before, after):
    """A list of tensors the body appended tensors to (under a tensor `if` too: then a tensor array
    already): a tensor array the while op carries."""
    if type(before) is not list or not all(_tensorish(v) for v in before):
        return False
    return _is_array(after) or type(after) is list and len(after) > len(before) and all(_tensorish(v) for v in after)


def _python_for(iterable, body_fn, values, names, extra_test, state=None):
    n = len(names)
    for item in iterable:
        go_on = True if extra_test is None else extra_test(*values)
        if _symbolic(go_on):
            # a tensor-dependent `break` in an unrolled loop: later iterations run under a cond
            values = _tuple(convert_ifelse(go_on, lambda *s, _item=item: body_fn(_item, *s),
                                           lambda *s: _untuple(s, n), values, names, state), n)
        elif not go_on:
            break
        else:
            values = _tuple(body_fn(item, *values), n)
    return _untuple(values, n)


def _graph_for(it, length, body_fn, values, names, extra_test, state=None):
    """`for` over a tensor or a tensor-bounded range: a while op over an index."""
    n = len(names)
    args = values

    def cond(i, *s):
        more = i < length       # symbolic (never decided while tracing): the index is the loop's state
        if extra_test is None:
            return more
        return _graph_logical(more, (lambda: extra_test(*s),), is_and=True)

    inner, returned = _tracking_body(lambda i, *s: body_fn(it.item(i), *s), n, offset=1)

    def body(i, *s):
        return (i + 1,) + inner(i, *s)

    undo = _undo_point(state)
    index = as_variable(0)      # a symbolic index: iterating a tensor is a while op even for a static length
    watched, captured = _watch_objects(state, body_fn), _cell_values(body_fn)
    with _graph_region("for"):
        outs = rt.while_loop(cond, body, (index,) + values, names=("for_index",) + tuple(names), state=state)
        moved = list(_moved_attributes(watched))
        if moved:       # attributes a method called in the body sets: carried, traced again
            retraces.note(retraces.CALLED_ATTRIBUTES)
            undo()
            state = _carrying_attributes(state, moved, watched)
            index = as_variable(0)
            outs = rt.while_loop(cond, body, (index,) + values, names=("for_index",) + tuple(names), state=state)
    _check_captured("for", captured, body_fn)
    _check_objects("for", watched)
    return _untuple(_write_back(outs[1:], args, names, returned), n)
