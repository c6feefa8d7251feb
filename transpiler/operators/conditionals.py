"""`if` and conditional expressions: Python's when the condition is known, a cond op otherwise. The
branches work on copies of the containers they change; a container every traced path changed in place
is written back into the user's own object afterwards, as Python would have changed it."""
import re
import sys

import runtime as rt
from runtime import pytree, retraces, tracing
from runtime.control_flow import Undefined
from runtime.errors import ControlFlowError
from runtime.ops.dispatch import record as record_op
from runtime.state import contents_cell
from runtime.undefined import AT_RUN_TIME

from ..choices import copy_containers, FunctionChoices
from .base import _decided, _symbolic, _tuple, _untuple
from .calls import convert_call
from .strings import _escape
from .regions import (_carrying_attributes, _cell_values, _check_captured, _check_list_aliases, _check_objects,
                      _graph_region, _keep_partial_state, _moved_attributes, _undo_point, _watch_objects)
from .exceptions import _caught, convert_assert, EmptyListRead


def convert_ifelse(pred, true_fn, false_fn, args, names, state=None):
    """`false_fn` None: an `if` without `else` whose outputs are its arguments (they pass through).
    `state`: a function returning the cells (attributes, items) the branches write; see runtime.state."""
    n = len(names)
    if false_fn is None:
        false_fn = lambda *values: _untuple(values, n)   # noqa: E731
    pred = _decided(pred)
    if not _symbolic(pred):
        try:
            return true_fn(*args) if pred else false_fn(*args)
        except BaseException as e:
            _keep_partial_state(e, (true_fn, false_fn), names, sys._getframe(1))
            raise
    returned, changed = {}, {}
    choice = FunctionChoices(pred, names, convert_call)

    def branch(fn, side, extra):
        def run():
            copies = copy_containers(args)
            out = _branch_or_raise(lambda: _jumped_unbound(_tuple(fn(*copies), n), names), names)
            returned[side] = _returned_args(out, copies, args)
            changed[side] = {j for j, (c, a) in enumerate(zip(copies, args)) if _container_changed(c, a)}
            return choice.park(side, out) + tuple(copies[j] for j in extra)
        return run

    undo = _undo_point(state)
    watched, captured = _watch_objects(state, true_fn, false_fn), _cell_values(true_fn, false_fn)
    extra, called_writes = (), False
    while True:
        labels = tuple(_param_name(true_fn, j) for j in extra)
        try:
            with _graph_region("if"):
                outs = rt.cond(pred, branch(true_fn, 0, extra), branch(false_fn, 1, extra), names=names + labels,
                               state=state)
        except ControlFlowError:
            choice.explain()
            raise
        moved = [] if called_writes else list(_moved_attributes(watched))
        if moved:       # attributes a method called in a branch sets (`self.bump()`): carried, traced again
            retraces.note(retraces.CALLED_ATTRIBUTES)
            undo()
            state, called_writes = _carrying_attributes(state, moved, watched), True
            undo = _undo_point(state)
            continue
        given = {j for side in returned.values() for j in side if j is not None}
        unseen = sorted((changed[0] | changed[1]) - given)
        if extra or not unseen:
            break
        # a container changed in a branch yet given to no name after the if (`y = x["a"]`, then
        # `y["b"] = v` in a branch): trace again with it as an output, so its merged value goes back
        retraces.note(retraces.UNSEEN_CONTAINERS)
        undo()
        extra = tuple(unseen)
    _check_captured("if", captured, true_fn, false_fn)
    _check_objects("if", watched)
    for j, label, merged in zip(extra, labels, outs[n:]):
        _write_into(args[j], merged, label)
    outs = _write_back(choice.resolve(outs[:n]), args, names, returned[0], returned[1])
    _check_list_aliases("if", args, outs, names)
    return _untuple(outs, n)


def _branch_or_raise(trace_branch, names):
    """trace_branch() inside a tensor `if`'s branch; an error Python would raise only when the branch
    runs (`_deferrable`: a shape error in dead code, an empty list read there) makes the branch a `raise`
    op instead, whose values (None, one per name) are never used: the cond takes the other branch's
    values there (runtime.control_flow: a branch that raises), and where both raise nothing runs after it."""
    start = tracing.checkpoint(tracing.current_block())
    try:
        return trace_branch()
    except Exception as error:
        if not (isinstance(error, EmptyListRead) or _deferrable(error)):
            raise
        retraces.note(retraces.BRANCH_RAISES)
        tracing.rollback(start)
        _raise_when_taken(error)
        return (None,) * len(names)


_NOT_DEFERRED = (RecursionError, MemoryError, StopIteration, StopAsyncIteration)


def _deferrable(error):
    """An error raised while tracing a branch of a tensor `if` that Python raises only when the branch
    runs: a built-in exception (the `raise` op's kind) raised by Python or a library in the user's code,
    or by an op refusing its inputs (a shape error in dead code); not a limit of tracing (a traced value
    asked for its Python value), a conversion error, or one an open `try` of converted code catches."""
    cls = type(error)
    if cls.__module__ != "builtins" or isinstance(error, _NOT_DEFERRED) or _caught(cls):
        return False
    frames = _traceback_frames(error)
    if frames and (tracing.is_user_file(frames[-1].f_code.co_filename) or
                   frames[-1].f_code is convert_assert.__code__):      # Python's `assert` on Python values
        return True
    return any(frame.f_code is _RECORD_CODE for frame in frames)


_RECORD_CODE = record_op.__code__        # dispatch.record: an op's rule checking its inputs while tracing


def _traceback_frames(error):
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _raise_when_taken(error):
    """A `raise` op of error's type and message, at the user's line where it was raised."""
    message = _escape(str(error)) if error.args else None
    rt.raise_(next(c for c in type(error).__mro__ if c.__module__ == "builtins"), message)   # EmptyListRead: IndexError
    origin = next((f"{f.f_code.co_filename}:{f.f_lineno}" for f in reversed(_traceback_frames(error))
                   if tracing.is_user_file(f.f_code.co_filename)), None)
    if origin is not None:
        tracing.current_block().ops[-1].origin = origin


def _jumped_unbound(outs, names):
    """A branch that returns, breaks or continues (it sets a jump flag) leaves its unbound names to be
    filled by an `undefined` op: the code Python runs next on that path reads none of them (it is guarded by
    the flag), so the name is bound after the `if` wherever it is read (`complicated(x)`: `a` is bound on
    every path that reaches `return a + 1`); a read that does happen raises when the Program runs."""
    jumps = {_JUMP_FLAG.match(name).group(1) for name, value in zip(names, outs)
             if value is True and _JUMP_FLAG.match(name)}
    if not jumps:
        return outs
    # after a `return` nothing reads it: zeros, as for the return value (a gradient may read those)
    fill = True if any(jump.startswith("return") for jump in jumps) else AT_RUN_TIME
    return tuple(Undefined(v.name, v.origin, fill=fill, bound=v.bound)
                 if type(v) is Undefined and not v.fill and not _JUMP_FLAG.match(name) else v
                 for name, v in zip(names, outs))


_JUMP_FLAG = re.compile(r"__(return_flag(_\d+)?|break_\d+|continue_\d+)$")


def _container_changed(copy, original):
    """Did a branch change its copy of a list or dict (items, length, keys, or inside them)?"""
    if type(original) not in (list, dict):
        return False
    a, b = pytree.flatten(copy), pytree.flatten(original)
    return a[1] != b[1] or any(x is not y for x, y in zip(a[0], b[0]))


def _param_name(fn, j):
    code = getattr(fn, "__code__", None)
    return code.co_varnames[j] if code is not None and j < code.co_argcount else f"argument {j}"


def convert_ifexp(pred, true_thunk, false_thunk, name=None):
    """`a if pred else b`; `name`: the variable (or `__return_value`) it gives its value to, for errors."""
    pred = _decided(pred)
    if not _symbolic(pred):
        return true_thunk() if pred else false_thunk()
    choice = FunctionChoices(pred, ("the function chosen by a conditional expression",), convert_call)
    watched, captured = _watch_objects(None, true_thunk, false_thunk), _cell_values(true_thunk, false_thunk)
    state, undo = None, _undo_point()
    try:
        while True:
            out = rt.cond(pred, lambda: choice.park(0, _branch_or_raise(lambda: (true_thunk(),), (name,))),
                          lambda: choice.park(1, _branch_or_raise(lambda: (false_thunk(),), (name,))),
                          names=None if name is None else (name,), state=state)
            moved = [] if state is not None else _moved_attributes(watched)
            if not moved:
                break
            retraces.note(retraces.CALLED_ATTRIBUTES)
            undo()          # attributes a method called in a branch sets: carried, traced again
            state = _carrying_attributes(state, moved, watched)
    except ControlFlowError:
        choice.explain()
        raise
    _check_captured("conditional expression", captured, true_thunk, false_thunk)
    _check_objects("conditional expression", watched)
    return choice.resolve(out)[0]


def _returned_args(outs, given, originals):
    """For each output: the index of the argument whose copy the code returned (mutated in place), or None."""
    return [next((j for j, (g, o) in enumerate(zip(given, originals)) if out is g and g is not o), None)
            for out in outs]


def _write_back(outs, args, names, *returned):
    """A container that every traced path mutated in place is the user's own object afterwards.

    The graph paths worked on copies; Python's `d["k"] = v` changes the object
    itself (which other names may share), so its merged contents go back into it.
    """
    outs = list(outs)
    for k, j in enumerate(returned[0]):
        if j is None or any(r[k] != j for r in returned[1:]):
            continue
        original, merged = args[j], outs[k]
        if merged is original or type(merged) is not type(original):
            continue
        outs[k] = _write_into(original, merged, names[k])
    return tuple(outs)


def _write_into(original, merged, label):
    """merged's contents into the container original, and so on into the lists and dicts inside it
    where merged has a container of their type (the paths mutated copies of those too): other names
    that share one see the change, as in Python. Returns what the place holds now."""
    if merged is original or type(merged) is not type(original) or type(original) not in (list, dict):
        return merged
    if type(original) is dict:
        new = {key: _write_into(original[key], value, f"{label}[{key!r}]") if key in original else value
               for key, value in merged.items()}
    elif len(merged) == len(original):
        new = [_write_into(o, m, f"{label}[{i}]") for i, (o, m) in enumerate(zip(original, merged))]
    else:
        new = merged
    contents_cell(original, label).set(new)   # a cell: a static function writes it after each run
    return original


def _raise_if(pred, exception, message):
    """Python raises where the Program would compute garbage: the same exception when the Program runs."""
    def fail():
        rt.raise_(exception, message)
    convert_ifelse(pred, fail, None, (), ())
