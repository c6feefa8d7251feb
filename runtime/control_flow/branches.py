"""rt.cond: Python's `if` on a concrete predicate, a `cond` op on a traced one (each branch traced into
a sub-block, their values joined).
"""
from .. import pytree, tracing
from ..autodiff.tape import GRAD_MODE
from ..errors import ControlFlowError
from ..ir import close_blocks
from ..ops.control import block_raises, mark_raising
from ..tensor import EagerTensor, Tensor
from ..tracer import Tracer, tracer_of, values_of
from ..undefined import Undefined
from .carried import _carrying_tensor_writes, _load_cells, _put_back
from .join import (as_predicate, as_variable, _describe, _fill, _hint, _is_scalar, _leaf_names, _merge_shapes,
                   _placeholder_tree, _same_python_value, _structure_message, _subject, _tensorish, _truth,
                   _unify_dtypes, _unify_lists)


def cond(pred, true_fn, false_fn, *operands, names=None, state=None):
    """`true_fn(*operands) if pred else false_fn(*operands)`; a `cond` op when pred is symbolic.

    `state` (a callable returning `runtime.state` cells) names places outside the
    function's locals that the branches may write: each branch starts from their
    value before the `if`, and after it they hold the `cond` op's results.
    """
    if not isinstance(pred, Tracer):
        return true_fn(*operands) if _truth(pred) else false_fn(*operands)
    cells = tuple(state()) if state is not None else ()
    return _carrying_tensor_writes(cells, lambda all_cells: _cond_with_cells(
        pred, true_fn, false_fn, operands, names, all_cells) if all_cells else
        _cond(pred, true_fn, false_fn, operands, names))


def _cond(pred, true_fn, false_fn, operands, names):
    block = tracing.current_block()
    program = block.program
    pred = as_predicate(pred)
    written = tracing.trace_state(program).written
    saved = dict(written)           # a Tensor written in place in one branch: the other starts from before
    tb = program.new_block(block)
    with tracing.block_guard(tb):
        t_out = true_fn(*operands)
    t_written = dict(written)       # what each branch left: a Tensor it yields is read as it left it
    _put_back(written, saved)
    fb = program.new_block(block)
    with tracing.block_guard(fb):
        f_out = false_fn(*operands)
    f_written = dict(written)
    _put_back(written, saved)
    if block_raises(tb) or block_raises(fb):
        # a branch that raises never yields: it takes the other's values (zeros of its specs)
        if block_raises(tb) and block_raises(fb):
            mark_raising(block)
        raising, like = (fb, t_out) if block_raises(fb) else (tb, f_out)
        with tracing.block_guard(raising):
            filler = _placeholder_tree(like)
        t_out, f_out = (filler, f_out) if raising is tb else (t_out, filler)
    t_out = _fill(t_out, f_out, tb)
    f_out = _fill(f_out, t_out, fb)
    if isinstance(t_out, tuple) and isinstance(f_out, tuple) and len(t_out) == len(f_out):
        pairs = [_unify_lists(a, b, tb, fb) for a, b in zip(t_out, f_out)]
        t_out, f_out = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    t_leaves, t_def = pytree.flatten(t_out)
    f_leaves, f_def = pytree.flatten(f_out)
    if t_def != f_def:
        raise ControlFlowError(_structure_message("the branches of an if/cond", t_out, f_out, names,
                                                  "true branch", "false branch"))
    leaf_names = _leaf_names(t_def, names)
    out_leaves, t_res, f_res, outs = [], [], [], []
    for name, a, b in zip(leaf_names, t_leaves, f_leaves):
        if isinstance(a, Undefined) or isinstance(b, Undefined):
            out_leaves.append(_one_sided(a, b))
            continue
        if not _tensorish(a) and not _tensorish(b) and _same_python_value(a, b) or \
                a is b and isinstance(a, EagerTensor):     # one Tensor object (`self.p += x` on a Parameter)
            out_leaves.append(a)
            continue
        if not (_tensorish(a) or _is_scalar(a)) or not (_tensorish(b) or _is_scalar(b)):
            raise ControlFlowError(
                f"{_subject(name)} differs between the branches: {_describe(a)} in the true branch, "
                f"{_describe(b)} in the false branch (only tensors and numbers can differ)")
        with tracing.block_guard(tb):
            va = _branch_variable(a, t_written)
        with tracing.block_guard(fb):
            vb = _branch_variable(b, f_written)
        va, vb = _unify_dtypes(va, vb, tb, fb, name, "true branch", "false branch")
        if va.kind != vb.kind:
            raise ControlFlowError(f"{_subject(name)} is a tensor array in one branch and a tensor in the other")
        shape = _merge_shapes(va.static_shape, vb.static_shape, name)
        out = tracer_of(block.create_var(_hint(name, "cond"), shape, va.dtype, weak=va.weak and vb.weak,
                                         kind=va.kind))
        t_res.append(va)
        f_res.append(vb)
        outs.append(out)
        out_leaves.append(out)
    tb.results, fb.results = values_of(t_res), values_of(f_res)
    block.append_op("cond", [pred.value] + close_blocks([tb, fb]), values_of(outs),
                    {"true_block": tb, "false_block": fb}, origin=tracing.user_origin(),
                    no_grad=not GRAD_MODE.enabled)
    return pytree.unflatten(t_def, out_leaves)


def _branch_variable(value, written):
    """as_variable of a branch's output as the branch left it: a Tensor it wrote in place (`t[i] = v` on a
    tensor bound to a name the branch yields) is the value written there, not the Tensor as before the if."""
    if isinstance(value, Tensor):
        entry = written.get(tracing.tensor_cell_key(value))
        if entry is not None and entry[0].value is not None:
            return entry[0].value
    return as_variable(value)


def _one_sided(a, b):
    """The value after a tensor `if` of a name that one branch (or neither) leaves undefined.

    Reading it after the `if` is an error for every input; it keeps the value of the
    branch that binds it (`bound`) so that a tensor loop whose body binds the name
    only under such an `if` can carry it, undefined for the Program's other paths.
    """
    undefined, other = (a, b) if isinstance(a, Undefined) else (b, a)
    if isinstance(other, Undefined):
        return a if a.bound is not None or b.bound is None else b
    if undefined.fill or not (_tensorish(other) or _is_scalar(other)) or undefined.bound is other:
        return undefined
    return Undefined(undefined.name, undefined.origin, bound=other)


def _cond_with_cells(pred, true_fn, false_fn, operands, names, cells):
    """cond over (branch outputs..., cell values...): cells are restored before each branch is traced."""
    before = [c.get() for c in cells]
    seen = {}

    def branch(fn, side):
        def run():
            _load_cells(cells, before)
            out = fn(*operands)
            values = tuple(c.get() for c in cells)
            seen[side] = values
            return _join_outputs(out, names, values)
        return run

    flat_names = _joined_names(names, cells)
    try:
        outs = _cond(pred, branch(true_fn, "true"), branch(false_fn, "false"), (), flat_names)
    except BaseException:
        _load_cells(cells, before)
        raise
    for cell, a, b in zip(cells, seen["true"], seen["false"]):
        if isinstance(a, Undefined) != isinstance(b, Undefined):
            _load_cells(cells, before)
            side = "true" if isinstance(b, Undefined) else "false"
            raise ControlFlowError(
                f"'{cell.label}' is set only in the {side} branch of a tensor-dependent if: after the if it "
                f"would exist for some inputs only; give '{cell.label}' a value before the if or in both branches")
    out, values = _split_outputs(outs, names, len(cells))
    _load_cells(cells, before)
    for cell, value, was, a, b in zip(cells, values, before, seen["true"], seen["false"]):
        if not (a is was and b is was):     # a place neither branch wrote keeps its value: no write
            cell.set(value)
    return out


def _join_outputs(out, names, values):
    if names is not None and isinstance(out, tuple) and len(out) == len(names):
        return tuple(out) + values
    return (out,) + values


def _split_outputs(outs, names, k):
    n = len(outs) - k
    if names is not None and n == len(names):
        return tuple(outs[:n]), outs[n:]
    return outs[0], outs[1:]


def _joined_names(names, cells):
    labels = tuple(c.label for c in cells)
    return (tuple(names) if names is not None else ("output",)) + labels
