"""The functional door, as in JAX: `grad(fn)` and `value_and_grad(fn)` return new functions.

Eagerly, the arguments being differentiated get fresh tape slots and the
engine walks the tape from fn's value. While tracing, the engine walks the ops
fn recorded into the current block, so the backward ops land in the same
Program. On a static function (`to_static`), the result is a static function
too: its Program computes the value and the gradient.
"""
import functools

from .. import pytree, tracing
from ..control_flow import as_variable
from ..ops import ones_like, zeros_like
from ..tensor import Tensor
from ..tracer import Tracer
from .engine import backprop, records_of_ops
from .tape import Slot, enable_grad, no_grad, reachable

NOT_TO_STATIC = "__dy2static_not_to_static__"


def grad(fn, argnums=0, has_aux=False):
    """d fn / d args[argnums] (a scalar fn), shaped like those arguments (nests of tensors included).
    With has_aux, fn returns (value, aux) and the result is (grads, aux)."""
    both = _value_and_grad(fn, argnums, has_aux)

    def gradient(*args, **kwargs):
        value, grads = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return _like_static(fn, gradient)


def value_and_grad(fn, argnums=0, has_aux=False):
    """A function returning (fn(*args), grads); with has_aux, ((value, aux), grads)."""
    return _like_static(fn, _value_and_grad(fn, argnums, has_aux))


def _value_and_grad(fn, argnums, has_aux):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def value_and_gradient(*args, **kwargs):
        for i in nums:
            if not -len(args) <= i < len(args):
                raise IndexError(f"value_and_grad: argnums={argnums!r} but the function got {len(args)} "
                                 "positional arguments")
        if tracing.current_block() is not None:
            return _traced(fn, nums, has_aux, args, kwargs)
        return _eager(fn, nums, has_aux, args, kwargs)
    return _unpack(value_and_gradient, isinstance(argnums, int))


def _unpack(run, single):
    def call(*args, **kwargs):
        value, grads = run(*args, **kwargs)
        return value, grads[0] if single else tuple(grads)
    return call


def _like_static(fn, wrapper):
    """On a static function, the gradient function is static too (its own Program per signature)."""
    functools.update_wrapper(wrapper, fn, updated=())
    setattr(wrapper, NOT_TO_STATIC, True)      # library code: converted code calls it as is
    if hasattr(fn, "derived"):
        return fn.derived(wrapper)
    return wrapper


def _split_value(out, has_aux, name):
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"value_and_grad(has_aux=True): {name} must return a pair (value, aux)")
        value, aux = out
    else:
        value, aux = out, None
    if not isinstance(value, (Tensor, Tracer)) or value.dtype.kind not in "fc":
        raise TypeError(f"grad: {name} must return a float tensor, got {_describe(value)}")
    shape = value.static_shape if isinstance(value, Tracer) else tuple(value.shape)
    if any(d != 1 for d in shape):
        dims = ", ".join("None" if d == -1 else str(d) for d in shape)
        raise TypeError(f"grad: {name} must return a scalar (one element), got shape [{dims}]; "
                        "reduce it first (e.g. .sum()), or call backward(grad) with a cotangent")
    return value, aux


def _describe(value):
    if isinstance(value, (Tensor, Tracer)):
        return f"a {value.dtype.name} tensor"
    return type(value).__name__


def _leaves(args, nums, name):
    """Flat differentiable leaves of args[nums] and the trees to rebuild each argument's gradient."""
    flat, trees = [], []
    for i in nums:
        leaves, tree = pytree.flatten(args[i])
        for leaf in leaves:
            if not isinstance(leaf, (Tensor, Tracer)) or leaf.dtype.kind not in "fc":
                raise TypeError(f"grad of {name}: argument {i} holds {_describe(leaf)}; only float tensors "
                                "(and nests of them) can be differentiated")
        flat.append(leaves)
        trees.append(tree)
    return flat, trees


def _with_leaves(args, nums, trees, new_leaves):
    args = list(args)
    for i, tree, leaves in zip(nums, trees, new_leaves):
        args[i] = pytree.unflatten(tree, leaves)
    return args


def _eager(fn, nums, has_aux, args, kwargs):
    name = getattr(fn, "__name__", "fn")
    flat, trees = _leaves(args, nums, name)
    fresh = [[_fresh(t) for t in leaves] for leaves in flat]
    keys = [t._ag for leaves in fresh for t in leaves]      # before fn: `x[i] = v` inside moves x._ag on
    slot_of = {id(t): t._ag for leaves in fresh for t in leaves}
    with enable_grad():
        out = fn(*_with_leaves(args, nums, trees, fresh), **kwargs)
    value, aux = _split_value(out, has_aux, name)
    if value._ag is not None and value._ag.tracks():
        records, _ = reachable(value._ag)
        with no_grad():
            cots = backprop(records, {value._ag: ones_like(value)}, keys)
    else:
        cots = {}
    grads = _rebuild(fresh, trees, lambda t: cots.get(slot_of[id(t)]))
    value = value.detach()
    return ((value, aux) if has_aux else value), grads


def _fresh(t):
    if isinstance(t, Tracer):
        raise TypeError("grad: a traced value reached an eager gradient")
    out = Tensor(t.array, t.backend)
    out._ag = Slot(keeps_grad=False)
    return out


def _rebuild(flat_leaves, trees, cotangent_of):
    grads = []
    for leaves, tree in zip(flat_leaves, trees):
        gs = []
        for leaf in leaves:
            g = cotangent_of(leaf)
            gs.append(zeros_like(leaf) if g is None else g)
        grads.append(pytree.unflatten(tree, gs))
    return grads


def _traced(fn, nums, has_aux, args, kwargs):
    name = getattr(fn, "__name__", "fn")
    flat, trees = _leaves(args, nums, name)
    flat = [[as_variable(t) for t in leaves] for leaves in flat]
    block = tracing.current_block()
    start = len(block.ops)
    out = tracing.converted(fn)(*_with_leaves(args, nums, trees, flat), **kwargs)
    value, aux = _split_value(out, has_aux, name)
    value = as_variable(value)
    keys = [v for leaves in flat for v in leaves]
    cots = backprop(records_of_ops(block.ops[start:]), {value: ones_like(value)}, keys)
    grads = _rebuild(flat, trees, lambda v: cots.get(v))
    return ((value, aux) if has_aux else value), grads
