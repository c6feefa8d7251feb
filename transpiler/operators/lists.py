"""List comprehensions and list/dict mutation (append, pop, insert, extend, del, item get and set):
Python's on Python containers, tensor array ops on a list grown in a tensor-dependent loop."""
import functools

import numpy as np

import runtime as rt
from runtime import tracing
from runtime.tracer import Tracer

from ..effects.aliases import array_item, write_through
from .base import _decided, _is_array, _symbolic
from .calls import convert_call
from .exceptions import EmptyListRead
from .conditionals import _raise_if, convert_ifelse, convert_ifexp
from .iterables import SymbolicIterable
from .loops import convert_for


def convert_list_comp(iterable, keep_fn, item_fn, unpack):
    """`[item for target in iterable if keep]`: Python's list while every `keep` is a Python truth; a tensor
    `keep` appends under a cond, as the loop `for ...: if keep: out.append(item)` does (a tensor array)."""
    def step(element, out):
        args = tuple(element) if unpack else (element,)
        keep = _decided(keep_fn(*args))
        if _symbolic(keep):
            return convert_ifelse(keep, lambda acc: convert_append(acc, item_fn(*args)), None, (out,),
                                  ("comprehension",))
        return convert_append(out, item_fn(*args)) if keep else out

    if _walks_in_python(iterable):
        out = []
        for element in iterable:
            out = step(element, out)
        return out
    return convert_for(iterable, step, ([],), ("comprehension",))     # rows known only when the Program runs


def _walks_in_python(iterable):
    """Whether Python can iterate this while tracing (a tensor or a tensor-bounded range of static length)."""
    if isinstance(iterable, SymbolicIterable):
        return not _symbolic(iterable.length())
    if _symbolic(iterable):
        if iterable.kind == "array":
            return iterable.length is not None
        return bool(iterable.static_shape) and iterable.static_shape[0] != -1
    return True


def convert_append(container, value):
    if _symbolic(container) and container.kind == "array":
        return rt.array_append(container, value)
    container.append(value)
    return container


def convert_pop(container, *index):
    """`xs.pop(...)` as (xs after it, the removed item): a tensor array pops in the graph."""
    if _is_array(container):
        return rt.array_pop(container, *index)
    return container, container.pop(*index)


def convert_insert(container, index, value):
    if _is_array(container):
        return rt.array_insert(container, index, value)
    container.insert(index, value)
    return container


def convert_extend(container, values):
    if _is_array(container):
        return rt.array_extend(container, values)
    container.extend(values)
    return container


def convert_delitem(container, index):
    if _is_array(container):
        return rt.array_pop(container, index)[0]
    del container[index]
    return container


def _array_setitem(arr, index, value):
    """`xs[i] = v` on a tensor array: the item at i replaced in the graph (the item popped, v inserted there).
    A negative i counts from the end; one out of range stays out of range, so the pop raises IndexError."""
    length = rt.array_length(arr)
    if _symbolic(index):
        index = rt.where(index < 0, rt.where(index + length >= 0, index + length, length), index)
    elif index < 0:
        index = rt.where(index + length >= 0, index + length, length)
    arr = rt.array_pop(arr, index)[0]
    return rt.array_insert(arr, index, value)


def convert_getitem(container, index):
    """`xs[i]`; a Python list of tensors read at a tensor index is read in the graph."""
    if type(container) is list and not container and (_symbolic(index) or type(index) is int):
        raise EmptyListRead("list index out of range")
    if type(container) is list and _symbolic(index) and container:
        if all(callable(item) and not isinstance(item, (Tracer, rt.Tensor)) for item in container):
            return _choose(container, index, "list")
        if _numbers_of_one_type(container):
            return _weak_items(rt.asarray(np.asarray(container)), index)   # Python numbers: a weak item
        _check_one_kind(container, "read")
        item = rt.stack(container)[index]
        item.weak = _all_weak(container)          # Python numbers that became tensors stay Python numbers
        return item
    if _is_array(container) and not isinstance(index, slice):
        return array_item(container[index])
    return container[index]


def _check_one_kind(items, what):
    """A list used at a tensor index goes through its stack: only what Python would give back unchanged,
    tensors of one shape and dtype; Python numbers among 0-d tensors whose dtype holds them as they are
    (`[1, 1]` grown by int32 items in a tensor loop)."""
    kinds = {(v.static_shape if isinstance(v, Tracer) else tuple(v.shape), np.dtype(v.dtype))
             if isinstance(v, (Tracer, rt.Tensor)) else None for v in items}
    numbers = {type(v) for v in items if not isinstance(v, (Tracer, rt.Tensor))}
    if numbers and numbers <= {bool, int, float} and len(kinds - {None}) == 1:
        (shape, dtype), = kinds - {None}
        holds = {bool: "b", int: "iuf", float: "f"}
        if shape == () and all(dtype.kind in holds[t] for t in numbers):
            kinds = {(shape, dtype)}
    if None in kinds or len(kinds) != 1:
        raise TypeError(f"a list {what} at a tensor index: its items must be tensors of one shape and dtype "
                        "(the graph reads them through their stack) or Python numbers of one type; index it "
                        "with a Python int, or keep the values in one tensor")


def convert_setitem(container, index, value):
    """`x[i] = v`: x after it. A traced tensor gets a new value, which also replaces it in the lists and
    dicts holding it (`c = caches[i]; c[:, p] = k` shows in caches[i], as eagerly)."""
    updated = _setitem(container, index, value)
    if _symbolic(container) and container.kind == "dense":
        write_through(container, updated)
    return updated


def convert_setitem_path(root, path, index, value):
    """`root[p0]...[pn][index] = value` (`cache[i][:, :, pos] = k`, `d["k"][...] = v`): root after it. The
    innermost item is set; where that gives a new value (a traced tensor's), it is stored back into the
    item's holder, level by level up to root, while the holder is a list, dict or tensor array. A traced
    tensor's item is a copy (as eagerly `x[0][1] = v` leaves x as it was), so storing stops there."""
    holders = [root]
    for key in path:
        holders.append(convert_getitem(holders[-1], key))
    item = _setitem(holders[-1], index, value)
    new = item
    for holder, key, old in reversed(list(zip(holders, path, holders[1:]))):
        if new is old or (_symbolic(holder) and holder.kind == "dense"):
            return root
        if isinstance(holder, tuple):    # a new tuple for the name it came from (other names keep the old one)
            items = list(holder)
            items[key] = new
            new = type(holder)(*items) if hasattr(holder, "_fields") else type(holder)(items)
            continue
        new = _setitem(holder, key, new)
    inner = holders[-1]
    if _symbolic(inner) and inner.kind == "dense" and inner.block is tracing.current_block():
        write_through(inner, item, replaced=holders[:-1])   # other lists and dicts holding it see the write
    return new


def _setitem(container, index, value):
    if _is_array(container) and not isinstance(index, (slice, tuple)):
        return _array_setitem(container, index, value)
    if _symbolic(container):
        return rt.setitem(container, index, value)
    if type(container) is list and _symbolic(index) and container:
        return _list_setitem(container, index, value)
    container[index] = value
    return container


def _list_setitem(items, index, value):
    """`xs[i] = v` on a Python list of tensors at a tensor index: the item i of their stack replaced in the
    graph, each item read back from it. Only where that is what Python leaves: tensors of one shape and dtype,
    or Python numbers of one type (each item then a weak 0-d tensor holding that number)."""
    if _numbers_of_one_type(items + [value]):
        stacked = rt.setitem(rt.asarray(np.asarray(items)), index, value)
        items[:] = [_weak_items(stacked, k) for k in range(len(items))]
        return items
    _check_one_kind(items + [value], "item set")
    stacked = rt.setitem(rt.stack(items), index, value)
    weak = _all_weak(items + [value])
    items[:] = [stacked[k] for k in range(len(items))]
    for item in items:
        item.weak = weak
    return items


def _all_weak(values):
    return all(type(v) in (bool, int, float) or _symbolic(v) and v.weak for v in values)


def _numbers_of_one_type(items):
    return all(type(item) in (bool, int, float) for item in items) and len({type(item) for item in items}) == 1


def _weak_items(values, index):
    item = values[index]
    item.weak = True
    return item


def convert_call_item(container, index):
    """`fs[i](...)`: a tensor i picks among the callables of a list, tuple or layer list by tensor
    conditions, each called in its branch (MindSpore's switch_layer); any other index: the item itself."""
    if _symbolic(index) and not _symbolic(container) and isinstance(container, (list, tuple, rt.nn.Layer)) and \
            hasattr(container, "__len__"):
        items = list(container)
        if items and all(callable(item) for item in items):
            return convert_call(_choose(items, index, type(container).__name__))
    return convert_call(container[index])


def _choose(items, index, kind):
    """items[index] for a tensor index: nested conditional expressions, so a function is chosen per branch
    (choices.FunctionChoices); an index out of range raises IndexError when the Program runs."""
    n = len(items)
    index = rt.where(index < 0, index + n, index)
    _raise_if(rt.logical_or(index < 0, index >= n), IndexError, f"{kind} index out of range")
    chosen = functools.partial(_item, items, n - 1)
    for k in reversed(range(n - 1)):
        chosen = functools.partial(convert_ifexp, index == k, functools.partial(_item, items, k), chosen)
    return chosen()


def _item(items, k):
    return items[k]
