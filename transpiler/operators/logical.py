"""`and`, `or` and `not`: Python's on Python truths, a cond op once an operand is a traced value
(the rest runs only when needed), a chain of graph predicates for a loop test."""
import builtins

import runtime as rt
from runtime.control_flow import as_predicate

from .base import _decided, _symbolic


def convert_logical_and(value, *thunks, name=None):
    for i, thunk in enumerate(thunks):
        truth = _decided(value)
        if _symbolic(truth):
            return _graph_logical(value, thunks[i:], is_and=True, name=name)
        if not truth:
            return value
        value = thunk()
    return value


def convert_logical_or(value, *thunks, name=None):
    for i, thunk in enumerate(thunks):
        truth = _decided(value)
        if _symbolic(truth):
            return _graph_logical(value, thunks[i:], is_and=False, name=name)
        if truth:
            return value
        value = thunk()
    return value


def _graph_logical(value, thunks, is_and, name=None):
    """`value and rest...` with a tensor `value`: a cond op, so `rest` runs only when needed.

    Its result is one of the operands, as in Python: they must merge like branch values
    (a Python number adopts the tensor's dtype); an error names the variable it is assigned to.
    """
    chain = convert_logical_and if is_and else convert_logical_or
    names = None if name is None else (name,)

    def rest():
        result = chain(thunks[0](), *thunks[1:])
        return result if name is None else (result,)

    def same():
        return value if name is None else (value,)

    picked = rt.cond(value, rest, same, names=names) if is_and else rt.cond(value, same, rest, names=names)
    return picked if name is None else picked[0]


def convert_test_and(value, *thunks):
    """`a and b ...` used only for its truth (a loop test): tensor operands of any rank of size one."""
    return _truth_chain(value, thunks, is_and=True)


def convert_test_or(value, *thunks):
    return _truth_chain(value, thunks, is_and=False)


def _truth_chain(value, thunks, is_and):
    for i, thunk in enumerate(thunks):
        known = _decided(value)
        if _symbolic(known):
            pred = _truth(value)
            rest = lambda: _truth(_truth_chain(thunks[i](), thunks[i + 1:], is_and))  # noqa: E731
            decided = lambda: pred  # noqa: E731  (False for `and`, True for `or`)
            return rt.cond(pred, rest, decided) if is_and else rt.cond(pred, decided, rest)
        if builtins.bool(known) != is_and:
            return value
        value = thunk()
    return value


def _truth(value):
    """Python's truth of value: a 0-d bool Variable for a tensor of size one, a bool otherwise."""
    if _symbolic(value):
        value = as_predicate(value)
        return rt.reshape(value, ()) if value.ndim else value
    return builtins.bool(value)


def convert_logical_not(value):
    truth = _decided(value)
    if not _symbolic(truth):
        return not truth
    return rt.logical_not(value) if value.dtype == rt.bool else rt.equal(value, 0)
