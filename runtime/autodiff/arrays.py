"""Gradients of tensor arrays (the IR form of a list that grows in a loop).

The cotangent of a tensor array is a tensor array of the elements'
cotangents. An append's VJP pops the last cotangent off (the reverse of the
append); a stack's VJP unstacks. The helper ops below exist only for these
rules; each builds a fresh list, except where a rule consumes its cotangent
array (an append's VJP pops from it, like the append it undoes).
"""
from ..ops import (array_concat, array_insert, array_length, array_pop, array_read, array_slice, array_stack,
                   zeros_like)
from ..ops.dispatch import apply
from ..ops.gradients.indexing import _add_at
from ..ops.indexing import _getitem_infer, decode_index
from ..ops.registry import OpDef, facet, get_op, register
from ..ops.rules import Spec, norm_axes


def _array_spec(shape, dtype):
    return Spec(tuple(shape), dtype, False, "array")


def _unstack_infer(x, axis=0):
    (axis,) = norm_axes(axis, len(x.static_shape))
    return _array_spec(x.static_shape[:axis] + x.static_shape[axis + 1:], x.dtype)


def _unstack_kernel(xp, x, axis=0):
    return [xp.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _split_like_kernel(xp, x, like, axis=0):
    out, start = [], 0
    for a in like:
        n = a.shape[axis]
        out.append(xp.take(x, xp.arange(start, start + n), axis=axis))
        start += n
    return out


def _zeros_like_kernel(xp, arr):
    return [xp.zeros_like(a) for a in arr]


def _onehot_kernel(xp, g, arr, index):
    i = int(index) % len(arr)
    return [g if j == i else xp.zeros_like(a) for j, a in enumerate(arr)]


def _add_kernel(xp, a, b):
    if len(a) != len(b):
        raise ValueError(f"array_add: tensor arrays of lengths {len(a)} and {len(b)}")
    return [x + y for x, y in zip(a, b)]


def _unslice_kernel(xp, arr, g, start=None, stop=None, step=None):
    out = [xp.zeros_like(a) for a in arr]
    for i, gi in zip(range(len(arr))[start:stop:step], g):
        out[i] = gi
    return out


_unstack = register(OpDef("array_unstack", _unstack_kernel, _unstack_infer))
_split_like = register(OpDef("array_split_like", _split_like_kernel,
                             lambda x, like, axis=0: _array_spec(like.static_shape, x.dtype)))
_zeros_like = register(OpDef("array_zeros_like", _zeros_like_kernel,
                             lambda arr: _array_spec(arr.static_shape, arr.dtype)))
# zeros like the array (input 1) with g (input 0) at one position: a read's gradient, which a reverse loop
# accumulates sparsely (`scatters_cotangent`, as `getitem_grad`)
_onehot = register(OpDef("array_onehot", _onehot_kernel,
                         lambda g, arr, index: _array_spec(arr.static_shape, arr.dtype), scatters_cotangent=True))
_unslice = register(OpDef("array_unslice", _unslice_kernel,
                          lambda arr, g, start=None, stop=None, step=None: _array_spec(arr.static_shape, arr.dtype)))
_add = register(OpDef("array_add", _add_kernel, lambda a, b: _array_spec(a.static_shape, a.dtype)))


def array_add(a, b):
    return apply(_add, (a, b), {})


def array_zeros_like(arr):
    """A tensor array of zeros shaped like each element of arr (a cotangent where none flows)."""
    return apply(_zeros_like, (arr,), {})


@facet("array_from_list", "vjp")
def _from_list_vjp(g, inputs, outputs):
    return tuple(array_read(g, i) for i in range(len(inputs)))


@facet("array_append", "vjp")
def _append_vjp(g, inputs, outputs):
    rest, last = array_pop(g, -1)
    return rest, last


@facet("array_insert", "vjp")
def _insert_vjp(g, inputs, outputs):
    rest, item = array_pop(g, inputs[1])
    return rest, None, item


@facet("array_pop", "vjp")
def _pop_vjp(g, inputs, outputs):
    g_arr, g_value = g
    if g_arr is None:
        g_arr = array_zeros_like(outputs[0])
    if g_value is None:
        g_value = zeros_like(outputs[1])
    index = inputs[1]
    if isinstance(index, int) and index == -1:
        return array_insert(g_arr, _length(g_arr), g_value), None
    return array_insert(g_arr, index, g_value), None


def _length(arr):
    return array_length(arr)


@facet("array_read", "vjp")
def _read_vjp(g, inputs, outputs):
    return apply(_onehot, (g, inputs[0], inputs[1]), {}), None


@facet("array_slice", "vjp")
def _slice_vjp(g, inputs, outputs, start=None, stop=None, step=None):
    """Each element's cotangent goes back to the place the slice took it from; zeros elsewhere."""
    return (apply(_unslice, (inputs[0], g), {"start": start, "stop": stop, "step": step}),)


@facet("array_unslice", "vjp")
def _unslice_vjp(g, inputs, outputs, start=None, stop=None, step=None):
    return None, array_slice(g, start, stop, step)


@facet("array_stack", "vjp")
def _stack_vjp(g, inputs, outputs, axis=0):
    return (apply(_unstack, (g,), {"axis": axis}),)


@facet("array_concat", "vjp")
def _concat_vjp(g, inputs, outputs, axis=0):
    return (apply(_split_like, (g, inputs[0]), {"axis": axis}),)


@facet("array_add", "vjp")
def _add_vjp(g, inputs, outputs):
    return g, g


@facet("array_unstack", "vjp")
def _unstack_vjp(g, inputs, outputs, axis=0):
    return (array_stack(g, axis),)


@facet("array_split_like", "vjp")
def _split_like_vjp(g, inputs, outputs, axis=0):
    return array_concat(g, axis), None


@facet("array_onehot", "vjp")
def _onehot_vjp(g, inputs, outputs):
    return array_read(g, inputs[2]), None, None


for _name in ("array_new", "array_length", "array_zeros_like"):
    get_op(_name).differentiable = False


# --- sparse accumulation: the cotangent of `x[i]` read once per loop iteration ---------------------
# A reverse loop would otherwise add a full-size scatter of g into x's cotangent every iteration
# (O(T * x.size)); instead it appends g and the index values to tensor arrays, and one
# `array_scatter_add` after the loop adds them all into zeros of x's shape.

def _index_values(arr_idx, k):
    return [a[k] for a in arr_idx]


def _scatter_add_kernel(xp, like, arr_g, *arr_idx, index):
    out = xp.zeros(like.shape, dtype=arr_g[0].dtype if arr_g else like.dtype)
    for k, g in enumerate(arr_g):
        inputs = _index_values(arr_idx, k)
        where = decode_index(index, inputs)
        if any(getattr(v, "ndim", 0) and v.dtype.kind != "b" for v in inputs):
            _add_at(xp)(out, where, g)        # an integer array may name one element twice
        else:
            out[where] += g
    return out


def _gather_kernel(xp, x, *arr_idx, index):
    n = len(arr_idx[0]) if arr_idx else 0
    return [x[decode_index(index, _index_values(arr_idx, k))] for k in range(n)]


def _scatter_add_infer(like, arr_g, *arr_idx, index):
    return Spec(like.static_shape, arr_g.dtype)


def _gather_infer(x, *arr_idx, index):
    elements = [Spec(a.shape, a.dtype) for a in arr_idx]     # an element of each index array
    spec = _getitem_infer(x, *elements, index=index)
    return _array_spec(spec.shape, spec.dtype)


_scatter_add = register(OpDef("array_scatter_add", _scatter_add_kernel, _scatter_add_infer))
_gather = register(OpDef("array_gather", _gather_kernel, _gather_infer))


def array_scatter_add(like, arr_g, arr_idx, index):
    """zeros like `like`, plus every arr_g[k] added at index `index` filled with the arr_idx[j][k]."""
    return apply(_scatter_add, (like, arr_g, *arr_idx), {"index": index})


@facet("array_scatter_add", "vjp")
def _scatter_add_vjp(g, inputs, outputs, index):
    arr_idx = inputs[2:]
    return (None, apply(_gather, (g, *arr_idx), {"index": index})) + (None,) * len(arr_idx)


@facet("array_gather", "vjp")
def _gather_vjp(g, inputs, outputs, index):
    x, arr_idx = inputs[0], inputs[1:]
    return (array_scatter_add(x, g, arr_idx, index),) + (None,) * len(arr_idx)


# --- the same for a tensor array read as `arr[k]` once per iteration (a loop over a list an earlier loop
# filled; a second-order gradient reading a forward loop's saved values): the cotangents and positions
# go onto two tensor arrays, and one `array_scatter_rows` after the loop adds them into a zero array

def _scatter_rows_kernel(xp, like, arr_g, arr_pos):
    out = [xp.zeros_like(a) for a in like]
    for g, pos in zip(arr_g, arr_pos):
        i = int(pos) % len(out)
        out[i] = out[i] + g
    return out


def _gather_rows_kernel(xp, arr, arr_pos):
    return [arr[int(pos) % len(arr)] for pos in arr_pos]


_scatter_rows = register(OpDef("array_scatter_rows", _scatter_rows_kernel,
                               lambda like, arr_g, arr_pos: _array_spec(like.static_shape, arr_g.dtype)))
_gather_rows = register(OpDef("array_gather_rows", _gather_rows_kernel,
                              lambda arr, arr_pos: _array_spec(arr.static_shape, arr.dtype)))


def scatter_sum(like, arr_g, arr_idx, index):
    """The sum of a reverse loop's sparse cotangents of `like`: arr_g[k] added at the place the k-th
    read took (index values arr_idx[j][k]): a tensor shaped like `like`, or for a tensor array a tensor
    array like it."""
    if like.kind == "array":
        return apply(_scatter_rows, (like, arr_g, arr_idx[0]), {})
    return array_scatter_add(like, arr_g, arr_idx, index)


@facet("array_scatter_rows", "vjp")
def _scatter_rows_vjp(g, inputs, outputs):
    return None, apply(_gather_rows, (g, inputs[2]), {}), None


@facet("array_gather_rows", "vjp")
def _gather_rows_vjp(g, inputs, outputs):
    return apply(_scatter_rows, (inputs[0], g, inputs[1]), {}), None
