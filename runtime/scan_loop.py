"""rt.scan: a loop over a static trip count carrying state and stacking outputs, as `jax.lax.scan`.

    carry, ys = rt.scan(f, init, xs, length=None)      # f(carry, x) -> (carry, y)

is, in Python,

    for i in range(length):
        carry, y = f(carry, [leaf[i] for leaf in xs])   # xs a pytree of tensors, leaf[i] its row i
        ys.append(y)
    return carry, stack(ys)                            # each leaf of y stacked along a new first axis

Eagerly it is that loop. While tracing it is one `scan` op (`ops/scan.py`): the body is traced once,
the carry keeps its structure, dtype and rank (a weak Python number adopts the dtype the body gives it;
a dim the body changes becomes unknown; each is a retrace), and every iteration of the Program runs
the same body. The trip count is static: `length`, or the first dim of every leaf of xs.
"""
import numpy as np

from . import pytree, retraces, tracing
from .autodiff.tape import GRAD_MODE
from .control_flow import as_variable
from .errors import ControlFlowError
from .ir import LITERAL_TYPES, close_blocks
from .ops import astype, stack, zeros
from .ops.scan import SCAN
from .tensor import Tensor
from .tracer import Tracer, tracer_of, values_of

_MAX_RETRACES = 8


def scan(f, init, xs=None, length=None):
    """`(carry, ys)`: f applied `length` times, carrying `carry`, with row i of every leaf of `xs`;
    ys stacks each iteration's second result (a pytree of tensors, numbers or None) along a new axis 0."""
    xs_leaves, xs_def = pytree.flatten(xs) if xs is not None else ([], None)
    n = _trip_count(xs_leaves, length)
    if tracing.current_block() is None:
        return _eager(f, init, xs_leaves, xs_def, n)
    return _traced(f, init, xs_leaves, xs_def, n)


def _trip_count(leaves, length):
    for leaf in leaves:
        if not isinstance(leaf, (Tracer, Tensor)) or len(leaf.shape) == 0:
            raise TypeError(f"rt.scan: every leaf of xs must be a tensor of rank >= 1, not {type(leaf).__name__}")
        rows = leaf.static_shape[0] if isinstance(leaf, Tracer) else leaf.shape[0]
        if rows == -1:
            raise ValueError("rt.scan: xs has a dynamic first dim; scan takes a static trip count (use "
                             "rt.while_loop for a trip count known only at run time)")
        if length is None:
            length = rows
        elif rows != length:
            raise ValueError(f"rt.scan: xs leaves have {rows} rows but the trip count is {length}")
    if length is None:
        raise ValueError("rt.scan: give length= when xs is empty")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise ValueError(f"rt.scan: length must be a Python int >= 0, not {length!r}")
    return int(length)


def _split(out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise ControlFlowError("rt.scan: the body must return a pair (carry, y)")
    return out


def _eager(f, init, xs_leaves, xs_def, n):
    carry, ys = init, []
    for i in range(n):
        carry, y = _split(f(carry, _rows(xs_def, [leaf[i] for leaf in xs_leaves])))
        ys.append(pytree.flatten(y)[0])
    if n == 0:          # the structure of y: f run once on rows of zeros, its results only shaped
        rows = [zeros(tuple(leaf.shape[1:]), leaf.dtype) for leaf in xs_leaves]
        y_leaves, y_def = pytree.flatten(_split(f(init, _rows(xs_def, rows)))[1])
        stacked = [None if v is None else zeros((0,) + tuple(np.shape(v)), _dtype(v)) for v in y_leaves]
        return carry, pytree.unflatten(y_def, stacked)
    y_def = pytree.flatten(y)[1]
    stacked = [None if column[0] is None else stack(list(column)) for column in zip(*ys)]
    return carry, pytree.unflatten(y_def, stacked)


def _rows(xs_def, leaves):
    """What the body gets for xs: its structure over the rows (None without xs)."""
    return None if xs_def is None else pytree.unflatten(xs_def, leaves)


def _dtype(value):
    return value.dtype if isinstance(value, (Tracer, Tensor, np.ndarray, np.generic)) else np.asarray(value).dtype


def _is_tensorish(value):
    return isinstance(value, (Tracer, Tensor)) or isinstance(value, LITERAL_TYPES) and value is not None or \
        isinstance(value, np.generic)


def _traced(f, init, xs_leaves, xs_def, n):
    block = tracing.current_block()
    program = block.program
    init_leaves, init_def = pytree.flatten(init)
    carry = [as_variable(v) if _is_tensorish(v) else v for v in init_leaves]     # Python objects stay static
    xs_vars = [as_variable(v) for v in xs_leaves]
    shapes = [v.static_shape if isinstance(v, Tracer) else None for v in carry]
    for _ in range(_MAX_RETRACES):
        point = tracing.checkpoint(block)
        body = program.new_block(block)
        params = [tracer_of(body.create_var("carry", shapes[k], v.dtype, weak=v.weak, kind=v.kind))
                  if isinstance(v, Tracer) else v for k, v in enumerate(carry)]
        rows = [tracer_of(body.create_var("x", v.static_shape[1:], v.dtype, weak=v.weak)) for v in xs_vars]
        with tracing.block_guard(body):
            new, y = _split(f(pytree.unflatten(init_def, params), _rows(xs_def, rows)))
            new_leaves, new_def = pytree.flatten(new)
            if new_def != init_def:
                raise ControlFlowError(f"rt.scan: the body returns a carry of another structure ({new_def}) "
                                       f"than it was given ({init_def})")
            results, retrace = _carry_results(carry, shapes, new_leaves, block)
            y_leaves, y_def = pytree.flatten(y)
            ys = [None if v is None else as_variable(v) for v in y_leaves]
        if retrace:
            retraces.note(retraces.SCAN)
            tracing.rollback(point)
            continue
        if any(isinstance(v, Tracer) and v.kind == "array" for v in carry + ys):
            raise ControlFlowError("rt.scan: a tensor array cannot be carried or stacked (use rt.while_loop)")
        body.params = [p.value for p in params if isinstance(p, Tracer)] + values_of(rows)
        body.results = values_of(results) + [v.value for v in ys if v is not None]
        outs = [tracer_of(block.create_var("carry", p.static_shape, p.dtype, weak=p.weak)) for p in params
                if isinstance(p, Tracer)]
        outs += [tracer_of(block.create_var("ys", (n,) + v.static_shape, v.dtype)) for v in ys if v is not None]
        inits = [v.value for v in carry if isinstance(v, Tracer)]
        block.append_op(SCAN.name, inits + values_of(xs_vars) + close_blocks([body]), values_of(outs),
                        {"body_block": body, "length": n, "num_carry": len(inits)},
                        origin=tracing.user_origin(), no_grad=not GRAD_MODE.enabled)
        it = iter(outs)
        carry_out = [next(it) if isinstance(v, Tracer) else v for v in carry]
        ys_out = [None if v is None else next(it) for v in ys]
        return pytree.unflatten(init_def, carry_out), pytree.unflatten(y_def, ys_out)
    raise ControlFlowError(f"rt.scan: the carry did not settle to fixed shapes/dtypes after {_MAX_RETRACES} "
                           "traces of the body")


def _carry_results(carry, shapes, new_leaves, outer):
    """The body's carry results (cast where a weak result meets a strong carry), and whether the carry
    must change first (a weak start the body promotes, a dim the body changes: `carry`/`shapes` updated)."""
    results, retrace = [], False
    for k, (old, new) in enumerate(zip(carry, new_leaves)):
        if not isinstance(old, Tracer):
            if new is not old and not (type(new) is type(old) and new == old):
                raise ControlFlowError(f"rt.scan: carry leaf {k} is {old!r} before the body and {new!r} after; "
                                       "only tensors and numbers can change")
            continue
        value = as_variable(new)
        if value.kind != old.kind or value.ndim != old.ndim:
            raise ControlFlowError(f"rt.scan: carry leaf {k} is {old.type_str()} before the body and "
                                   f"{value.type_str()} after; the carry keeps its kind and rank")
        if value.dtype != old.dtype:
            target = (np.promote_types(old.dtype, value.dtype) if value.weak else value.dtype) if old.weak else None
            if target is not None and target != old.dtype:
                with tracing.block_guard(outer):
                    carry[k] = _weak_as(astype(old, target), value.weak)
                retrace = True
                continue
            if not (old.weak or value.weak):
                raise ControlFlowError(f"rt.scan: carry leaf {k} has dtype {old.dtype.name} before the body and "
                                       f"{value.dtype.name} after; cast it with .astype() so both agree")
            value = astype(value, old.dtype)
        merged = tuple(a if a == b else -1 for a, b in zip(shapes[k], value.static_shape))
        if merged != shapes[k]:
            shapes[k], retrace = merged, True
        results.append(value)
    return results, retrace


def _weak_as(var, weak):
    var.weak = weak
    return var
