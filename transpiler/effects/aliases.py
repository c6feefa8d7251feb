"""A write into a traced tensor reaches the lists and dicts that hold that same tensor, as eagerly.

Eagerly `c = caches[i]; c[:, pos] = k` changes the one Tensor object both `c` and `caches[i]` reach.
While tracing a tensor is a value: the write makes a new Variable and rebinds `c`. So that `caches[i]`
shows the write too, the new value replaces the old one in every list and dict the frames of converted
code hold it in (their locals, and the lists, dicts and tuples nested in those). Inside a tensor
`if`/`while` such a container is not carried by the construct (only the names it rebinds are), so a
write there through a name into a tensor from outside the construct that a container also holds is a
ControlFlowError at the user's line; so is one whose tensor sits in a tuple (which cannot change),
other than a `*args` tuple, which only passes arguments on.
Other names bound to the same tensor keep the old value (docs/semantics.md, "State").
"""
import inspect
import sys
import weakref

from runtime import tracing
from runtime.errors import ControlFlowError

CONVERTED_CODES = set()    # code objects of converted functions: the user's frames (errors, aliases)
_DEPTH = 4                 # how deep inside a frame's lists, dicts and tuples a held tensor is looked for


def array_item(item):
    """item, read from a tensor array (a list grown in a loop): noted, so that a write into it is refused."""
    _ARRAY_ITEMS[id(item)] = weakref.ref(item, lambda _, key=id(item): _ARRAY_ITEMS.pop(key, None))
    return item


_ARRAY_ITEMS = {}       # id -> weak reference of the items read from tensor arrays


def write_through(old, new, replaced=None):
    """Put new wherever a list or dict of converted code holds old (the tensor a write just replaced);
    `replaced`: the containers a nested item assignment already updated or replaced, up to its root."""
    ref = _ARRAY_ITEMS.get(id(old))
    if replaced is None and ref is not None and ref() is old:
        raise TypeError("writing into a tensor read from a list that grows in a loop (a tensor array): eagerly the "
                        "list's item would change too, but the item read is a copy here; assign through the list "
                        "(`xs[i][...] = v`), or write `v` into a new list")
    skip = {id(c) for c in replaced or ()}
    places = [(container, key) for container, key in _places(old) if id(container) not in skip]
    if not places:
        return
    outside = old.block is not tracing.current_block()
    for container, key in places:
        if type(container) is tuple:
            raise TypeError(f"writing into the tensor '{old.name}', which a tuple also holds: eagerly the tuple "
                            "would show the write, but a traced tuple cannot change; keep such tensors in a list")
        if outside:
            raise ControlFlowError(
                "writing into a tensor that a list or dict also holds, inside a tensor-dependent if/while: "
                "the construct carries names, not the container, so the list or dict would miss the write; "
                "assign through the container (`caches[i][:, pos] = v`), or write before the if/while")
    for container, key in places:
        container[key] = new


def _places(old):
    """(container, key) for every list/dict/tuple item that is old, in the frames of converted code."""
    seen = set()
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code in CONVERTED_CODES:
            varargs = code.co_varnames[code.co_argcount + code.co_kwonlyargcount] \
                if code.co_flags & inspect.CO_VARARGS else None
            for name, value in frame.f_locals.items():
                # a `*args` tuple only passes the arguments on (a wrapper's): what it holds is not looked at again
                yield from _walk(value, old, seen, _DEPTH, report=name != varargs)
        frame = frame.f_back


def _walk(value, old, seen, depth, report=True):
    kind = type(value)
    if kind not in (list, dict, tuple) or depth == 0 or id(value) in seen:
        return
    seen.add(id(value))
    for key, item in (value.items() if kind is dict else enumerate(value)):
        if item is old:
            if report:
                yield value, key
        else:
            yield from _walk(item, old, seen, depth - 1)
