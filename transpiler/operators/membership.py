"""`in`, `not in` and `list.index` over lists, tuples and tensors: Python's walk, item by item, with
tensor truths or-ed in the graph."""
import builtins

import runtime as rt

from .base import _decided, _symbolic, _tensorish
from .calls import convert_call
from .logical import _truth


def convert_in(value, container):
    """`value in container`: for a list, tuple or tensor, Python's walk (`item is value or item == value`,
    the truth of each); with tensors that truth is an `or` of graph predicates."""
    if not _walks_items(value, container):
        return value in container
    found = [i for i, _ in _matches(value, container, stop_at_true=True)]
    return _any_truth(found)


def convert_not_in(value, container):
    found = convert_in(value, container)
    return rt.logical_not(found) if _symbolic(found) else not found


def convert_index(receiver, *args):
    """`seq.index(value[, start[, stop]])`: for a list or tuple holding tensors (or asked for one), the
    first position whose item equals value, as a graph value when that depends on tensors."""
    if type(receiver) not in (list, tuple) or not args or not _walks_items(args[0], receiver):
        return convert_call(receiver.index)(*args)      # a user class's own `index` is converted code
    value, start, stop = args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None
    positions = builtins.range(len(receiver))[start:stop]
    matches = list(_matches(value, [receiver[i] for i in positions], stop_at_true=True))
    if not matches or matches[-1][0] is not True:
        found = _any_truth([truth for truth, _ in matches])
        missing = f"{type(receiver).__name__}.index(x): x not in {type(receiver).__name__}" \
            if type(receiver) is tuple else "list.index(x): x not in list"
        if not _symbolic(found):
            raise ValueError(missing)
        _raise_unless(found, missing)
    result = None
    for truth, k in reversed(matches):
        index = positions[k]
        result = index if result is None or truth is True else rt.where(truth, index, result)
    return result


def _walks_items(value, container):
    """Whether `in`/`index` must compare item by item here (a tensor is involved)."""
    if _tensorish(container):
        return True
    return type(container) in (list, tuple) and (_tensorish(value) or any(_tensorish(v) for v in container))


def _matches(value, items, stop_at_true):
    """(truth, position) per item compared as Python does; a truth is True or a 0-d bool Variable.
    Items whose truth is a Python False are left out; the walk stops at a Python True."""
    for k, item in enumerate(items):
        if item is value:
            truth = True
        else:
            equal = item == value
            known = _decided(equal)
            truth = _truth(equal) if _symbolic(known) else builtins.bool(known)
        if truth is False:
            continue
        yield truth, k
        if truth is True and stop_at_true:
            return


def _any_truth(truths):
    if any(t is True for t in truths):
        return True
    if not truths:
        return False
    out = truths[0]
    for t in truths[1:]:
        out = rt.logical_or(out, t)
    return out


def _raise_unless(found, message, error=ValueError):
    """`error` raised when the Program runs and found is False (Python raises it at the call)."""
    def missing():
        rt.raise_(error, message.replace("{", "{{").replace("}", "}}"))
    rt.cond(found, lambda: None, missing)
