"""rt.cond and rt.while_loop: Python control flow on concrete values, graph ops on symbolic ones.

On concrete predicates they *are* Python `if`/`while` (so the transpiler's
converted code stays exact on Python values). On a Variable predicate they trace
each body into a sub-block and record one `cond`/`while` op. Values that cross
the boundary are checked: same structure, same dtype (Python numbers are weak
and adopt the other side's dtype), shapes relaxed to -1 where they differ.
"""
import re

import numpy as np

from . import pytree, tracing
from .autodiff.tape import GRAD_MODE
from .dtypes import DEFAULT_INT, result_type, weak_dtype
from .errors import ControlFlowError
from .ir import LITERAL_TYPES, Variable, captures
from .ops import (array_from_list, array_length, array_new, astype, full, greater, not_equal, undefined_value,
                  zeros)
from .ops.control import block_raises, mark_raising
from .shape_text import shape_text
from .state import AttrCell, TensorValueCell, collecting_writes
from .tensor import EagerTensor, Tensor
from .undefined import AT_RUN_TIME, Undefined


# --- helpers ------------------------------------------------------------------------

def _truth(pred):
    return bool(pred)


def _is_number(value):
    return isinstance(value, LITERAL_TYPES)


def _is_numpy_number(value):
    """A NumPy scalar (`np.float32(0)`): a number of a fixed dtype, which may become a tensor like one."""
    return isinstance(value, np.generic) and value.dtype.kind in "biufc"


def _is_scalar(value):
    return _is_number(value) or _is_numpy_number(value)


def _describe(value):
    if isinstance(value, Variable):
        return f"a tensor ({value.type_str()})"
    if isinstance(value, Tensor):
        return f"a tensor ({value.dtype.name}{shape_text(value.shape)})"
    if isinstance(value, Undefined):
        return "undefined"
    if callable(value) and hasattr(value, "__name__"):
        return f"{type(value).__name__} '{value.__name__}'"     # not its repr: converted code's qualname is ours
    text = repr(value)
    if text.startswith("<"):
        return f"a {type(value).__name__} object"
    return f"{type(value).__name__} {text}"


_GENERATED = re.compile(
    r"^(__return_value|__return_flag|__break|__continue|__item|for_index|output)(_\d+)?(?=$|\[)")
_GENERATED_SUBJECTS = {
    "__return_value": "the return value", "__return_flag": "whether `return` ran",
    "__break": "whether `break` ran", "__continue": "whether `continue` ran", "__item": "the loop's item",
    "for_index": "the loop's index", "output": "the result",
}


def _subject(name, role=""):
    """A leaf name as an error message's subject, in the user's terms: `'x'` (`loop variable 'x'`)
    for the user's names, a description for the transpiler's (`__return_value`) and for unnamed
    results (`output`): messages never name a variable the user did not write."""
    match = _GENERATED.match(name)
    if match is None:
        return f"{role} '{name}'" if role else f"'{name}'"
    path = name[match.end():]
    text = _GENERATED_SUBJECTS[match.group(1)]
    return f"{text} (item {path})" if path else text


def _leaf_names(treedef, names):
    """A readable name for every leaf: the variable's name plus its path inside it."""
    paths = pytree.leaf_paths(treedef)
    if not names or treedef.kind not in ("tuple", "list") or len(treedef.children) != len(names):
        return [f"output{p}" if p else "output" for p in paths]
    out = []
    for name, child in zip(names, treedef.children):
        out.extend(name + p for p in pytree.leaf_paths(child))
    return out


def _weak_constant(value):
    """A Python number as a weakly typed scalar Variable of the current block."""
    var = full((), value, weak_dtype(value))
    var.weak = True
    return var


def as_variable(value):
    """Any tensor-like leaf as a Variable of the current block."""
    if isinstance(value, Variable):
        return value
    if isinstance(value, Tensor):
        return tracing.lift_tensor(value)
    if _is_number(value):
        return _weak_constant(value)
    if _is_numpy_number(value):
        return full((), value, value.dtype)
    raise TypeError(f"not a tensor value: {_describe(value)}")


def as_predicate(pred):
    """A symbolic truth value: bool, and of size one. A list grown in a tensor-dependent loop (a tensor
    array) is true when it is not empty, as a Python list."""
    if pred.kind == "array":
        return greater(array_length(pred), 0)
    if any(d not in (1, -1) for d in pred.static_shape):
        raise ValueError(
            f"the truth value of a tensor with shape {shape_text(pred.static_shape)} is ambiguous: "
            "reduce it first with .any() or .all()")
    if pred.dtype.kind != "b":
        pred = not_equal(pred, 0)
    return pred


def _merge_shapes(a, b, name):
    if len(a) != len(b):
        raise ControlFlowError(f"{_subject(name)} changes rank: shapes {shape_text(a)} and {shape_text(b)}")
    return tuple(x if x == y else -1 for x, y in zip(a, b))


def _cast(var, dtype):
    """astype that keeps a weak value weak (a Python number stays a Python number)."""
    out = astype(var, dtype)
    if var.weak and isinstance(out, Variable):
        out.weak = True
    return out




# --- cond ---------------------------------------------------------------------------

def cond(pred, true_fn, false_fn, *operands, names=None, state=None):
    """`true_fn(*operands) if pred else false_fn(*operands)`; a `cond` op when pred is symbolic.

    `state` (a callable returning `runtime.state` cells) names places outside the
    function's locals that the branches may write: each branch starts from their
    value before the `if`, and after it they hold the `cond` op's results.
    """
    if not isinstance(pred, Variable):
        return true_fn(*operands) if _truth(pred) else false_fn(*operands)
    cells = tuple(state()) if state is not None else ()
    return _carrying_tensor_writes(cells, lambda all_cells: _cond_with_cells(
        pred, true_fn, false_fn, operands, names, all_cells) if all_cells else
        _cond(pred, true_fn, false_fn, operands, names))


def _carrying_tensor_writes(cells, build):
    """`build(cells)` (which traces a cond/while op carrying those cells); Tensors written in place
    inside it (`set_value`, a Parameter's `op=`, a buffer) that it does not carry yet: forgotten,
    and traced again with them as extra cells (`state.TensorValueCell`), so each write flows
    through the op as branch outputs / loop variables. The Tensors the converter saw written (a
    declared cell on a Tensor's contents, `self.buf[i] = v`, or on an attribute holding a Layer's
    Tensor, `self.running_mean = ...`) are carried from the first trace; one the trace turns out
    not to write is dropped, and the construct traced again without it."""
    point = tracing.checkpoint(tracing.current_block())
    fixed = [(c, c.get()) for c in cells if _holds_a_layer_tensor(c)]
    # `t[i] = v` on a captured Tensor t writes into it: carried as t's own state, not as a place of it
    declared = _declared_tensor_writes(cells, fixed)
    cells = tuple(c for c in cells if not any(c is f for f, _ in fixed) and not isinstance(c.obj, EagerTensor))
    carried = {c.identity() for c in cells}
    guessed = tuple(c for c in declared if c.identity() not in carried)
    for _ in range(_MAX_RETRACES):
        trial = cells + guessed
        before = [c.get() for c in trial]
        with collecting_writes() as found:
            out = build(trial)
        new = [(t, label) for key, (t, label) in found.items()
               if key not in carried and all(key != c.identity() for c in guessed)]
        unwritten = [c for c in guessed if c.identity() not in found]
        if not new and not unwritten:
            for cell, tensor in fixed:
                if cell.get() is not tensor:
                    raise ControlFlowError(
                        f"'{cell.label}' is given another tensor inside a tensor-dependent if/while; write into "
                        f"it instead ('{cell.label}.set_value(...)'), which keeps the Layer's own tensor")
            return out
        _load_cells(trial, before)
        tracing.rollback(point)
        guessed = tuple(c for c in guessed if c.identity() in found)
        cells = cells + tuple(TensorValueCell(t, label) for t, label in new)
        carried |= {c.identity() for c in cells}
    raise ControlFlowError("the tensors written in place inside a tensor-dependent if/while did not settle")


def _declared_tensor_writes(cells, fixed):
    """A `TensorValueCell` for each Tensor a declared cell says the construct writes in place, once each."""
    found = {}
    for cell, tensor in fixed:
        found.setdefault(tracing.tensor_cell_key(tensor), (tensor, cell.label))
    for cell in cells:
        if isinstance(cell.obj, EagerTensor) and not any(cell is f for f, _ in fixed):
            found.setdefault(tracing.tensor_cell_key(cell.obj), (cell.obj, cell.label))
    return tuple(TensorValueCell(tensor, label) for tensor, label in found.values())


def _holds_a_layer_tensor(cell):
    """`self.w` where w is a Parameter or buffer of the Layer self: the attribute keeps that Tensor (`self.w +=
    x` and a buffer assignment write into it in place, carried as the Tensor's own state), so it is no
    state of its own."""
    registries = [getattr(cell.obj, "__dict__", {}).get(r) for r in ("_parameters", "_buffers")]
    return isinstance(cell, AttrCell) and isinstance(cell.get(), EagerTensor) and \
        any(isinstance(r, dict) and r.get(cell.key) is cell.get() for r in registries)


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
        out = block.create_var(_hint(name, "cond"), shape, va.dtype, weak=va.weak and vb.weak, kind=va.kind)
        t_res.append(va)
        f_res.append(vb)
        outs.append(out)
        out_leaves.append(out)
    tb.results, fb.results = t_res, f_res
    block.append_op("cond", [pred] + captures([tb, fb], exclude=(pred,)), outs,
                    {"true_block": tb.idx, "false_block": fb.idx}, origin=tracing.user_origin(),
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
    for cell, value in zip(cells, values):
        cell.set(value)
    return out


def _put_back(written, saved):
    """The trace's written places as they were (`saved`): what one branch or body trace wrote in place
    is not seen by the next one (a construct that carries it loads it itself, `TensorValueCell`)."""
    if len(written) != len(saved) or any(written.get(k) is not v for k, v in saved.items()):
        written.clear()
        written.update(saved)


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


def _load_cells(cells, values):
    for cell, value in zip(cells, values):
        cell._store(value)


def _fill(value, like, block, fill_only=True):
    """Replace fillable Undefined parts of value by zeros shaped like the other side's values."""
    if isinstance(value, Undefined):
        if value.fill == AT_RUN_TIME and not isinstance(like, Undefined):
            if not (_tensorish(like) or _is_scalar(like)):
                return value
            with tracing.block_guard(block):
                return _undefined_like(like, value)
        if (value.fill or not fill_only) and not isinstance(like, Undefined):
            with tracing.block_guard(block):
                return _placeholder_tree(like, None if value.fill else value)
        if not fill_only and isinstance(like, Undefined) and like is not value and like.bound is not None \
                and value.bound is None:
            # a loop body that binds the name only under a tensor `if` (and no path before the loop binds it)
            with tracing.block_guard(block):
                return _undefined_like(like.bound, value)
        return value
    if isinstance(value, (tuple, list)) and isinstance(like, (tuple, list)) and len(value) == len(like):
        items = [_fill(v, w, block, fill_only) for v, w in zip(value, like)]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if type(value) is dict and type(like) is dict and list(value) == list(like):
        return {k: _fill(value[k], like[k], block, fill_only) for k in value}
    return value


def _undefined_like(bound, undefined):
    """An `undefined` op shaped like `bound`, a tensor or number that a branch binds the name to."""
    if isinstance(bound, Variable):
        return _placeholder_tree(bound, undefined)
    if isinstance(bound, Tensor):
        return undefined_value(undefined.name, bound.shape, bound.dtype, undefined.origin)
    weak = _is_number(bound)
    var = undefined_value(undefined.name, (), weak_dtype(bound) if weak else bound.dtype, undefined.origin)
    var.weak = weak
    return var


def _placeholder_tree(like, undefined=None):
    """A value with like's structure, dtypes and static shapes for a path that has none.

    For a fillable Undefined (a return value, read only under its flag): zeros. For
    a user's name first bound inside a loop: an `undefined` op, whose run-time value
    raises UnboundLocalError naming the variable if it is ever used (the loop ran
    zero times and the code read it anyway).
    """
    leaves, treedef = pytree.flatten(like)
    out = []
    for leaf in leaves:
        if isinstance(leaf, Variable):
            if leaf.kind == "array":
                out.append(array_new(leaf.static_shape, leaf.dtype))
            elif undefined is not None:
                out.append(undefined_value(undefined.name, leaf.static_shape, leaf.dtype, undefined.origin))
            else:
                var = zeros(tuple(0 if d == -1 else d for d in leaf.static_shape), leaf.dtype)
                var.weak = leaf.weak
                out.append(var)
        elif isinstance(leaf, Tensor):
            out.append(zeros(leaf.shape, leaf.dtype))
        elif _is_number(leaf):
            out.append(type(leaf)(0))
        else:
            out.append(leaf)
    return pytree.unflatten(treedef, out)


def _tensorish(value):
    return isinstance(value, (Variable, Tensor))


def _same_python_value(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _hint(name, default):
    base = name.split("[")[0] if name and not name.startswith("output") else default
    return base or default


def _weak_join(a, b):
    """The dtype where a weak (Python-number) Variable meets another value: NumPy 2's weak promotion.
    Two weak integers meet at the one that is not the default int, since a weak int32 stands for
    "a Python int or an int32 tensor" and Python int + int32 tensor stays int32; this also makes
    loop state settle (it only ever moves up)."""
    if a.weak and b.weak and a.dtype.kind in "iu" and b.dtype.kind in "iu":
        if a.dtype == DEFAULT_INT:
            return b.dtype
        if b.dtype == DEFAULT_INT:
            return a.dtype
        return np.promote_types(a.dtype, b.dtype)
    return result_type((a.dtype, a.weak), (b.dtype, b.weak))


def _unify_dtypes(va, vb, block_a, block_b, name, side_a, side_b):
    if va.dtype == vb.dtype:
        return va, vb
    if va.weak or vb.weak:
        common = _weak_join(va, vb)
        if va.dtype != common:
            with tracing.block_guard(block_a):
                va = _cast(va, common)
        if vb.dtype != common:
            with tracing.block_guard(block_b):
                vb = _cast(vb, common)
        return va, vb
    raise ControlFlowError(
        f"{_subject(name)} has dtype {va.dtype.name} in the {side_a} and {vb.dtype.name} in the {side_b}; "
        f"cast one side with .astype()")


def _structure_message(what, a, b, names, side_a, side_b):
    if names and isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) == len(names):
        for name, x, y in zip(names, a, b):
            found = _key_set_on_one_side(name, x, y)
            if found is not None:
                label, key, in_a = found
                side = side_a if in_a else side_b
                return (f"key {key!r} of '{label}' is set in the {side} only ({what}): afterwards it would exist "
                        f"for some inputs only; give '{label}[{key!r}]' a value before it, or on every path")
            if pytree.flatten(x)[1] != pytree.flatten(y)[1]:
                return (f"{_subject(name)} has a different structure in {what}: {_shape_of_tree(x)} in the {side_a}, "
                        f"{_shape_of_tree(y)} in the {side_b}")
    return f"{what} produce different structures: {_shape_of_tree(a)} vs {_shape_of_tree(b)}"


def _key_set_on_one_side(label, a, b):
    """(label of the dict, key, whether a has it) for a key that one side has and the other lacks,
    searched through dicts and lists nested alike on both sides (`x['a']['b'] = v` in one branch); or None."""
    if type(a) is dict and type(b) is dict:
        if set(a) != set(b):
            key = next(k for k in [*a, *b] if k not in a or k not in b)
            return label, key, key in a
        pairs = [(k, a[k], b[k]) for k in a]
    elif type(a) is list and type(b) is list and len(a) == len(b):
        pairs = [(i, x, y) for i, (x, y) in enumerate(zip(a, b))]
    else:
        return None
    for key, x, y in pairs:
        found = _key_set_on_one_side(f"{label}[{key!r}]", x, y)
        if found is not None:
            return found
    return None


def _shape_of_tree(value):
    leaves, treedef = pytree.flatten(value)
    if treedef.kind == "leaf":
        return _describe(value)
    return f"{type(value).__name__} {treedef}"


# --- while_loop -----------------------------------------------------------------------

def while_loop(cond_fn, body_fn, loop_vars, names=None, state=None):
    """`while cond_fn(*v): v = body_fn(*v)`; a `while` op once the condition is symbolic.

    loop_vars is a tuple/list (of pytrees); body_fn returns the same structure.
    A condition that is a Python value at first and turns symbolic later (a
    counter made a tensor by the body) continues as a `while` op from there.
    `state` (a callable returning `runtime.state` cells): places outside the
    locals the body may write, carried as extra loop variables of the op.
    """
    cells = None
    values = tuple(loop_vars)
    while True:
        pred = _probe(cond_fn, values)
        if isinstance(pred, Variable):
            cells = tuple(state()) if state is not None else ()
            values = _carrying_tensor_writes(cells, lambda all_cells, values=values: _while_with_cells(
                cond_fn, body_fn, values, names, all_cells) if all_cells else
                _build_while(cond_fn, body_fn, values, names))
            break
        if not _truth(pred):
            break
        values = tuple(body_fn(*values))
    return type(loop_vars)(values) if isinstance(loop_vars, list) else values


def _while_with_cells(cond_fn, body_fn, values, names, cells):
    """The while op over (loop variables..., cell values...); each trace loads the cells from the params."""
    n = len(values)
    before = [c.get() for c in cells]

    def cond_with(*state):
        _load_cells(cells, state[n:])
        return cond_fn(*state[:n])

    def body_with(*state):
        _load_cells(cells, state[n:])
        out = tuple(body_fn(*state[:n]))
        return out + tuple(c.get() for c in cells)

    flat_names = (tuple(names) if names is not None and len(names) == n else ("output",) * n) + \
        tuple(c.label for c in cells)
    try:
        outs = _build_while(cond_with, body_with, values + tuple(before), flat_names)
    except BaseException:
        _load_cells(cells, before)
        raise
    _load_cells(cells, before)
    for cell, value in zip(cells, outs[n:]):
        cell.set(value)
    return tuple(outs[:n])


def _probe(cond_fn, state):
    """Evaluate the condition; if symbolic, forget the ops it recorded (the loop records its own)."""
    block = tracing.current_block()
    if block is None:
        return cond_fn(*state)
    point = tracing.checkpoint(block)
    pred = cond_fn(*state)
    if isinstance(pred, Variable):
        tracing.rollback(point)
    return pred


_MAX_RETRACES = 8


def _build_while(cond_fn, body_fn, init, names):
    """Trace cond and body over the loop state until its shapes/dtypes settle; record a while op.

    Each trace may teach something about the state that forces a retrace: a name
    first bound in the body (gets a placeholder), a list that grew (becomes a
    tensor array), a Python number that changed (becomes a weak Variable), a
    weak value promoted by the body, or a dim that changed (relaxed to -1).
    """
    block = tracing.current_block()
    program = block.program
    leaves, treedef = pytree.flatten(init)
    leaf_names = _leaf_names(treedef, names)
    carry = [_carry(leaf) for leaf in leaves]
    written = tracing.trace_state(program).written
    saved = dict(written)
    for _ in range(_MAX_RETRACES):
        _put_back(written, saved)
        first, names_before = len(program.blocks), program.name_state()
        cb = program.new_block(block)
        c_params = _params(cb, carry, leaf_names)
        with tracing.block_guard(cb):
            pred = cond_fn(*pytree.unflatten(treedef, _inputs(carry, c_params)))
            pred = as_predicate(as_variable(pred))
        cb.results = [pred]
        bb = program.new_block(block)
        b_params = _params(bb, carry, leaf_names)
        with tracing.block_guard(bb):
            out = tuple(body_fn(*pytree.unflatten(treedef, _inputs(carry, b_params))))
        grown = _grow_dicts(init, out, names)
        restructured = _fill(grown, out, block, fill_only=False)
        if grown is not init and not _has_changed(restructured, init):
            restructured = grown
        if not _has_changed(restructured, init):
            restructured = _grow_lists(init, out, block)
        if restructured is not None:
            program.drop_blocks_from(first)
            program.restore_name_state(names_before)
            return _build_while(cond_fn, body_fn, restructured, names)
        out_leaves, out_def = pytree.flatten(out)
        if out_def != treedef:
            raise ControlFlowError(_structure_message("a loop iteration", init, out, names,
                                                      "loop's initial state", "state after the body"))
        results, changed = [], False
        for i, (name, new) in enumerate(zip(leaf_names, out_leaves)):
            settled, result = _settle(name, carry[i], new, b_params[i], block, bb)
            if settled is not carry[i]:
                carry[i], changed = settled, True
            elif result is not None:
                results.append(result)
        if changed:
            program.drop_blocks_from(first)
            program.restore_name_state(names_before)
            continue
        _put_back(written, saved)
        return _finish_while(block, cb, bb, carry, c_params, b_params, results, treedef, leaf_names)
    raise ControlFlowError("loop variables did not settle to fixed shapes/dtypes after "
                           f"{_MAX_RETRACES} traces of the loop body")


def _settle(name, state, new, param, block, body_block):
    """Check one loop variable after a body trace: (its state, unchanged or updated; its body result)."""
    kind, value = state[0], state[1]
    if kind == "static":
        if _same_python_value(value, new) or isinstance(value, Undefined) and isinstance(new, Undefined):
            return state, None
        if _is_scalar(value) and (_tensorish(new) or _is_scalar(new)):
            return ("var", _constant_in(block, value, _hint(name, "loop"))), None
        raise ControlFlowError(
            f"{_subject(name, 'loop variable')} changes inside a tensor-dependent loop from "
            f"{_describe(value)} to {_describe(new)}; only tensors and numbers can change")
    if isinstance(new, Undefined):
        raise ControlFlowError(f"{_subject(name, 'loop variable')} is deleted inside the loop body")
    with tracing.block_guard(body_block):
        result = as_variable(new)
    if result.kind != value.kind:
        raise ControlFlowError(f"{_subject(name, 'loop variable')} turns from a tensor array into a tensor")
    if result.dtype != value.dtype:
        common = _weak_join(value, result) if value.weak else value.dtype
        if common != value.dtype:
            with tracing.block_guard(block):
                return ("var", _cast(value, common)), None
        if not (value.weak or result.weak):
            raise ControlFlowError(
                f"{_subject(name, 'loop variable')} has dtype {value.dtype.name} before the loop and "
                f"{result.dtype.name} after an iteration; cast it with .astype() so both agree")
        with tracing.block_guard(body_block):
            result = _cast(result, value.dtype)
    merged = _merge_shapes(param.static_shape, result.static_shape, name)
    if merged != param.static_shape:
        return ("var", value, merged), None
    return state, result


def _is_tensor_list(value):
    return type(value) is list and all(_tensorish(v) or _is_scalar(v) for v in value)


def _to_array(items, like, block):
    """A Python list of tensors as a tensor array Variable of `block` (element spec from like)."""
    with tracing.block_guard(block):
        if items:
            return array_from_list([as_variable(v) for v in items])
        if isinstance(like, Variable):
            return array_new(like.static_shape, like.dtype)
        if _is_number(like):      # a Python number appended while a loop's state was still Python
            return array_new((), weak_dtype(like))
        return array_new(tuple(like.shape), like.dtype)


def _is_array(value):
    return isinstance(value, Variable) and value.kind == "array"


def _unify_lists(a, b, block_a, block_b):
    """Lists of different lengths in two branches become tensor arrays (append under a tensor if);
    so does a list on one side of a tensor array (appended to in a nested tensor if)."""
    if _is_array(a) and _is_tensor_list(b):
        return a, _to_array(b, a, block_b)
    if _is_tensor_list(a) and _is_array(b):
        return _to_array(a, b, block_a), b
    if not (_is_tensor_list(a) and _is_tensor_list(b)) or len(a) == len(b):
        return a, b
    like = (a or b)[-1]
    return _to_array(a, like, block_a), _to_array(b, like, block_b)


def _grow_lists(init, out, block):
    """Loop state where a Python list grew in the body: the same state with those lists as tensor arrays."""
    if not (isinstance(out, tuple) and len(out) == len(init)):
        return None
    changed, new = False, list(init)
    for i, (before, after) in enumerate(zip(init, out)):
        if _is_tensor_list(before) and isinstance(after, Variable) and after.kind == "array":
            new[i] = _to_array(before, after, block)
            changed = True
        elif _is_tensor_list(before) and _is_tensor_list(after) and len(after) != len(before) and after:
            new[i] = _to_array(before, after[-1], block)
            changed = True
    return tuple(new) if changed else None


def _grow_dicts(init, out, names):
    """Loop state where the body adds keys to a dict: the same state with those keys first Undefined.

    As for a name first bound in the body, the key then exists after the loop,
    and reading it when the loop ran zero times is an error naming it.
    """
    if not (isinstance(out, tuple) and isinstance(init, tuple) and len(out) == len(init)):
        return init
    changed, new = False, list(init)
    for i, (before, after) in enumerate(zip(init, out)):
        if type(before) is dict and type(after) is dict and not set(after) <= set(before):
            name = names[i] if names and len(names) == len(init) else "dict"
            grown = dict(before)
            for key in after:
                if key not in grown:
                    grown[key] = Undefined(f"{name}[{key!r}]", tracing.user_origin())
            new[i], changed = grown, True
    return tuple(new) if changed else init


def _has_changed(new, old):
    a, b = pytree.flatten(new)[0], pytree.flatten(old)[0]
    return len(a) != len(b) or any(x is not y for x, y in zip(a, b))


def _carry(leaf):
    if isinstance(leaf, Variable):
        return ("var", leaf)
    if isinstance(leaf, Tensor):
        return ("var", tracing.lift_tensor(leaf))
    return ("static", leaf)


def _constant_in(block, value, hint):
    """A number as a Variable of `block`: weak for a Python number, of its own dtype for a NumPy one."""
    with tracing.block_guard(block):
        var = as_variable(value)
    return block.rename_var(var, hint)


def _params(block, carry, leaf_names):
    params = []
    for state, name in zip(carry, leaf_names):
        if state[0] != "var":
            params.append(None)
            continue
        var = state[1]
        shape = state[2] if len(state) > 2 else var.static_shape
        params.append(block.create_var(_hint(name, "loop"), shape, var.dtype, weak=var.weak, kind=var.kind))
    return params


def _inputs(carry, params):
    return [p if p is not None else state[1] for state, p in zip(carry, params)]


def _finish_while(block, cb, bb, carry, c_params, b_params, results, treedef, leaf_names):
    inits = [state[1] for state in carry if state[0] == "var"]
    cb.params = [p for p in c_params if p is not None]
    bb.params = [p for p in b_params if p is not None]
    bb.results = results
    outs = [block.create_var(_hint(name, "loop"), p.static_shape, p.dtype, weak=p.weak, kind=p.kind)
            for name, p in zip(leaf_names, b_params) if p is not None]
    captured = captures([cb, bb])
    block.append_op("while", inits + captured, outs, {"cond_block": cb.idx, "body_block": bb.idx},
                    origin=tracing.user_origin(), no_grad=not GRAD_MODE.enabled)
    it = iter(outs)
    leaves = [next(it) if state[0] == "var" else state[1] for state in carry]
    return pytree.unflatten(treedef, leaves)
