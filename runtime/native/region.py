"""A whole `while` loop (its test, its body, the `cond`s in them) as one native function: which loops.

`analyse(op)` decides, from the ops' forms (`ops/native_forms.py`, the `native` facet) and their
static shapes and dtypes, whether the loop can be native, and why not; `region_job` compiles it (once
per distinct region, in the compiler thread): first the self-tests of the BLAS calls and NumPy loops it
uses, then `loop_emitter.LoopEmitter` builds the function (what it computes, and the codes it returns
where the NumPy plan would raise, are described there).
"""
import math
import threading
from types import SimpleNamespace

import numpy as np

from ..ir import Variable
from ..ops.native_forms import native_form
from ..ops.regions import region_of
from . import disk_cache
from . import elementwise as ew
from .blas import product_call, stacked_items_check
from .llvm import engine, may_be_available
from .loop_emitter import ARRAY_FULL, BAD_ARGUMENT, LoopEmitter, load_kernel
from .numpy_loops import strided_loop
from .reductions import MAX_INLINE_SUM, pairwise_check, reduce_loop

__all__ = ["ARRAY_FULL", "BAD_ARGUMENT", "Region", "analyse", "analyse_cond", "analyse_straight", "region_job"]

_KERNELS = {}
_LOCK = threading.Lock()


class Region:
    """What analysis found: the loop op, its arguments (distinct Variables, in order), what each op of
    its blocks compiles as (`forms[id(op)]`), a key naming the region's structure, and which state
    positions are tensor arrays."""

    def __init__(self, op, args, forms, key, arrays=(), checks=(), kind="loop"):
        self.op, self.args, self.forms, self.key = op, args, forms, key
        self.kind = kind                # "loop": a while; "branch": a cond outside loops, run once a call;
        #                                 "straight": a run of top-level ops (`analyse_straight`)
        self.arrays = list(arrays)      # state positions that are tensor arrays (appended to)
        self.checks = list(checks)      # the self-tests compiling runs first: ("blas" | "reduce" | "loop", ...)
        self.tested = None              # what they said ('' all passed), once run: they fill `forms` in place


def analyse(op):
    """A Region for the `while` op, or a string saying why it stays on NumPy."""
    if not may_be_available():
        return "llvmlite unavailable"
    if native_form(op) != ("loop",):
        return "not a loop"
    args = _distinct_inputs(op)
    forms, key, checks = {}, [], []
    numbers = {}
    cond_block, body_block = op.sub_blocks()
    try:
        arrays, allowed = _array_states(op, cond_block, body_block)
    except _NotNative as e:
        return str(e)
    number = _numbering(numbers, allowed)
    try:
        for v in args:
            number(v)
        _loop(op, forms, key, number, checks)
    except _NotNative as e:
        return str(e)
    key = repr(([numbers[id(v)] for v in args], [number(o) for o in op.outputs], key))
    return Region(op, args, forms, key, arrays, checks)


def analyse_cond(op):
    """A Region for a `cond` op outside loops (its chosen branch as one native call), or why it stays on
    NumPy: its branches must hold array work (a branch of views and numbers is cheaper as Python)."""
    if not may_be_available():
        return "llvmlite unavailable"
    if native_form(op) != ("branch",):
        return "not a cond"
    args = _distinct_inputs(op)
    worth = [o for sub in op.sub_blocks() for o in sub.ops
             if o.outputs and o.outputs[0].ndim and (native_form(o) or ("",))[0] not in ("view", "index")]
    if not worth:
        return "a cond without array work (cheaper on NumPy)"
    if all(_numpy_calls(sub) <= 1 for sub in op.sub_blocks()):
        return ONE_CALL_BRANCHES
    forms, key, checks, numbers = {}, [], [], {}
    number = _numbering(numbers)
    try:
        for v in args:
            number(v)
        _walk(SimpleNamespace(ops=[op]), forms, key, number, checks)
    except _NotNative as e:
        return str(e)
    key = repr(("cond", [numbers[id(v)] for v in args], [number(o) for o in op.outputs], key))
    return Region(op, args, forms, key, checks=checks, kind="branch")


ONE_CALL_BRANCHES = "a cond whose branches are one NumPy call each (cheaper on NumPy)"


def _numpy_calls(block):
    """About how many NumPy calls a branch's array work makes in the plan (a chain's steps each one): a
    native call of a branch making one saves none and costs its call (W4: `x * 2` or `x - 1`)."""
    calls = 0
    for o in block.ops:
        if not o.outputs or not o.outputs[0].ndim:
            continue
        form = native_form(o) or ("",)
        if form[0] in ("view", "index"):
            continue
        calls += len(form[1]) if form[0] == "chain" else 1
    return calls


def analyse_straight(ops, outputs):
    """A Region for a run of consecutive top-level ops (a batch-1 MLP's reshape, linears, bias adds and
    ReLUs) as one native call computing `outputs` (the values read after the run, dense and of rank >= 1,
    each a fresh array), or why it stays on NumPy. Its arguments are the values its ops read from before it."""
    if not may_be_available():
        return "llvmlite unavailable"
    if not outputs:
        return "nothing of the run is read after it (dead code the passes did not remove)"
    made = {id(o) for op in ops for o in op.outputs}
    reads = []
    for op in ops:
        for v in op.inputs:
            if isinstance(v, Variable) and id(v) not in made and all(v is not a for a in reads):
                reads.append(v)
    run = SimpleNamespace(ops=list(ops), inputs=reads, outputs=list(outputs), type="straight")
    forms, key, checks, numbers = {}, [], [], {}
    number = _numbering(numbers)
    try:
        for v in reads:
            number(v)
        _walk(run, forms, key, number, checks)
    except _NotNative as e:
        return str(e)
    if any(o.ndim == 0 for o in outputs):
        return "a number read after the run (NumPy scalars are cheaper)"
    key = repr(("straight", [numbers[id(v)] for v in reads], [number(o) for o in outputs], key))
    return Region(run, reads, forms, key, checks=checks, kind="straight")


class _NotNative(Exception):
    pass


def distinct_inputs(op):
    """op's Variable inputs, each once, in order: a region function's arguments, as the plan passes them."""
    return _distinct_inputs(op)


def _distinct_inputs(op):
    """op's Variable inputs, each once, in order: the region function's arguments."""
    args = []
    for v in op.inputs:
        if isinstance(v, Variable) and all(v is not a for a in args):
            args.append(v)
    return args


def _numbering(numbers, arrays_allowed=frozenset()):
    """`number(v)`: v's place in the region's key (its index among the values met, dtype and shape; a
    literal's repr), raising _NotNative for a value the emitter cannot hold (a tensor array unless its
    id is in arrays_allowed)."""
    def number(v):
        if not isinstance(v, Variable):
            return repr(v) if isinstance(v, (bool, int, float)) else None
        if id(v) not in numbers:
            why = _why_not_value(v, id(v) in arrays_allowed)
            if why:
                raise _NotNative(why)
            numbers[id(v)] = (len(numbers), v.dtype.str, tuple(v.static_shape))
        return numbers[id(v)]
    return number


def _loop(op, forms, key, number, checks):
    """Check a `while` (the region's, or one nested in it) and walk its blocks: each state keeps one type,
    the test is a boolean scalar, the body yields the state's types."""
    cond_block, body_block = op.sub_blocks()
    _closure_key(op, key, number)
    for k, out in enumerate(op.outputs):
        number(out)
        init = op.inputs[k]
        if isinstance(init, Variable) and (init.dtype != out.dtype or init.static_shape != out.static_shape):
            raise _NotNative(f"loop state {k} starts as {init.dtype}{list(init.static_shape)}, "
                             f"is {out.dtype}{list(out.static_shape)}")
    for block in (cond_block, body_block):
        for p, out in zip(block.params, op.outputs):
            number(p)
            if p.dtype != out.dtype or p.static_shape != out.static_shape:
                raise _NotNative("a loop parameter's type differs from the state's")
    key.append("test:")
    _walk(cond_block, forms, key, number, checks)
    key.append("body:")
    _walk(body_block, forms, key, number, checks)
    if len(cond_block.results) != 1 or len(body_block.results) != len(op.outputs):
        raise _NotNative("the loop's blocks yield an unexpected number of values")
    test = cond_block.results[0]
    if isinstance(test, Variable) and (test.ndim != 0 or test.dtype.kind != "b"):
        raise _NotNative("the loop test is not a boolean scalar")
    key.append(("test", number(test)))
    for r, out in zip(body_block.results, op.outputs):
        if isinstance(r, Variable) and (r.dtype != out.dtype or r.static_shape != out.static_shape):
            raise _NotNative(f"the body yields {r.dtype}{list(r.static_shape)} for a state of "
                             f"{out.dtype}{list(out.static_shape)}")
        key.append(("yield", number(r)))


def _closure_key(op, key, number):
    """Which value each closure param of op's blocks stands for: the kernel reads that value there, so
    two regions alike but for these bindings (a param standing for the first argument or the second)
    must not share a kernel."""
    for p, x in region_of(op).closure_pairs(op):
        key.append(("closure", number(p), number(x)))


def _array_states(op, cond_block, body_block):
    """The positions of the loop state that are tensor arrays, and the ids of every value that holds one
    of their lists (or a tensor array the loop only reads: an argument whose items the caller passes):
    their items live in a buffer the caller grows. Each is used in a line (`_carried`): in the body,
    reads (`arr[i]`, `len(arr)`, also in nested blocks), then one append or nested loop carrying it, and
    so on, its last value the body's result; in the test only reads; no value read once appended to."""
    positions = [k for k, out in enumerate(op.outputs) if out.kind == "array"]
    inits = [op.inputs[k] for k in positions]
    if any(not isinstance(v, Variable) or v.kind != "array" for v in inits) or len({id(v) for v in inits}) < len(inits):
        raise _NotNative("a tensor array the loop carries does not start as one array of its own")
    region = region_of(op)
    captured = region.closure_inputs(op)
    if any(x is v for x in captured for v in inits):
        raise _NotNative("a tensor array the loop carries is also read by its blocks as it was")
    held = {id(v) for v in inits}
    for k in positions:
        if any(d < 0 for d in op.outputs[k].static_shape):
            raise _NotNative(f"tensor array {op.outputs[k].name} has a dynamic element shape")
        held |= _carried(op, k)
    for j, v in enumerate(captured):          # what the loop reads from outside: its closure params
        if isinstance(v, Variable) and v.kind == "array" and id(v) not in held:
            params = [(block, block.closure[j]) for block in (cond_block, body_block)]
            if any(use != "read" for block, p in params for use in _uses(block, p)):
                raise _NotNative(f"tensor array {v.name} is used in the loop other than by reads")
            held.add(id(v))
            held.update(id(p) for _, p in params)
    _held_through_closures(op, held)
    return positions, held


def _held_through_closures(op, held):
    """Add to `held` the closure params of the regions nested in op's blocks that stand for a held list
    (a nested loop or cond reading the list sees it through its own closure param)."""
    for block in op.sub_blocks():
        for o in block.ops:
            region = region_of(o)
            if region is None:
                continue
            for p, x in region.closure_pairs(o):
                if id(x) in held:
                    held.add(id(p))
            _held_through_closures(o, held)


def _carried(op, k):
    """Check that while op's tensor array state k is used in a line (see `_array_states`); the ids of
    the values holding its list in the op's blocks (and in the loops nested in them that carry it)."""
    cond_block, body_block = op.sub_blocks()
    why = f"tensor array {op.outputs[k].name} is used in the loop other than by reads and appends"
    if any(use != "read" for use in _uses(cond_block, cond_block.params[k])):
        raise _NotNative(why)
    held = {id(op.outputs[k]), id(cond_block.params[k])}
    if _follow(body_block, body_block.params[k], held, why) is not body_block.results[k]:
        raise _NotNative(why)
    return held


def _follow(block, value, held, why):
    """The value the list held by `value` (live when block starts) has when block ends: the ops of block
    may read it, then append to it or carry it in a nested loop (its next value), and so on; nothing else
    may read it, and no value of it once superseded. Adds the ids of the values to `held`."""
    held.add(id(value))
    gone = []
    for o in block.ops:
        if any(x is g for g in gone for x in o.inputs) or any(_uses(sub, g) for g in gone for sub in o.sub_blocks()):
            raise _NotNative(why)
        form = native_form(o) or ("",)
        uses = [j for j, x in enumerate(o.inputs) if x is value]
        carries = form[0] == "loop" and len(uses) == 1 and uses[0] < len(o.outputs) and o.outputs[uses[0]].kind == "array"
        if form[0] == "append" and form[1] is value and len(uses) == 1:
            gone.append(value)
            value = o.outputs[0]
            held.add(id(value))
        elif carries:
            inner = uses[0]
            if any(_uses(sub, value) for sub in o.sub_blocks()):
                raise _NotNative(why)       # the outer value read inside the loop that appends to it
            held |= _carried(o, inner)
            gone.append(value)
            value = o.outputs[inner]
        elif uses or o.sub_blocks():
            if any(use != "read" for use in _op_uses(o, value)):
                raise _NotNative(why)
    if any(r is g for g in gone for r in block.results) or sum(r is value for r in block.results) > 1:
        raise _NotNative(why)
    return value


def _uses(block, v):
    """How block (and the blocks nested in it) uses v: 'read' (`arr[i]`, `len(arr)`) or 'other' each time."""
    found = []
    for o in block.ops:
        found += _op_uses(o, v)
    return found + ["other" for r in block.results if r is v]


def _op_uses(o, v):
    """How op o uses v: as an input of its own (a region op's closure inputs are not uses: what its
    blocks do with the closure params standing for them is)."""
    form = native_form(o) or ("",)
    region = region_of(o)
    if region is None:
        reads = form[0] in ("array_read", "array_length") and form[1] is v
        return ["read" if reads else "other" for x in o.inputs if x is v]
    found = ["other" for x in o.inputs[:region.own_count(o)] if x is v]
    inputs = region.closure_inputs(o)
    for sub in region.blocks(o):
        for p, x in zip(sub.closure, inputs):
            if x is v:
                found += _uses(sub, p)
    return found


def _why_not_value(v, array_state=False):
    if v.kind != "dense" and not (v.kind == "array" and array_state):
        return f"{v.name} is a {v.kind}, not a dense array"
    if any(d < 0 for d in v.static_shape):
        return f"{v.name} has a dynamic shape {list(v.static_shape)}"
    if np.dtype(v.dtype) not in ew._SUPPORTED or not np.dtype(v.dtype).isnative:
        return f"{v.name} is {v.dtype}, not supported natively"
    return ""


# A region's chains hold at most this many steps in all: LLVM's time on one function grows about
# quadratically in the steps that call NumPy loops (a loop whose body has 144 such steps: 2.2 s of CPU, 36:
# 0.35 s; bench/RESULTS.md); a top-level chain beyond a piece's length is split (pieces.py), a loop is not.
MAX_CHAIN_STEPS = 256


def _walk(block, forms, key, number, checks):
    """Check every op of a block (and of the conds in it); record each op's form and what to compile."""
    transposed_sources = {}     # id(x.T made in this block) -> x: a product reads x as NumPy's call reads x.T
    summed = {}                 # id(value of an all-inline chain of this block) -> its op: a sum may compute it
    for op in block.ops:
        form = native_form(op)
        if form is None:
            raise _NotNative(f"op '{op.type}' is not native")
        kind = form[0]
        ins = [number(x) for x in op.inputs]
        outs = [number(o) for o in op.outputs]
        if any(i is None and not (x is None and kind in ("layer_norm", "matmul")) for i, x in zip(ins, op.inputs)):
            raise _NotNative(f"op '{op.type}' has an input native code does not take")     # (no weight or bias: None)
        if kind == "chain":
            _, steps, inputs = form
            out = op.outputs[0]
            size = math.prod(out.static_shape)
            for v in inputs:
                _check_broadcast(op, v, out)
            plan = ew._plan([(v.dtype, tuple(v.static_shape)) for v in inputs],
                            (out.dtype, tuple(out.static_shape)), steps)
            if isinstance(plan, str):
                raise _NotNative(f"op '{op.type}': {plan}")
            in_region = len(steps) + sum(len(f[1]["steps"]) for f in forms.values() if f[0] == "chain")
            if in_region > MAX_CHAIN_STEPS:
                raise _NotNative(f"{in_region} chain steps in one region (over {MAX_CHAIN_STEPS}: LLVM's time "
                                 f"grows faster than the steps)")
            forms[id(op)] = (kind, plan, inputs)
            key.append((kind, plan["key"], [number(v) for v in inputs], outs))
            if all(st["inline"] is True for st in plan["steps"]) and out.ndim:
                summed[id(out)] = op
        elif kind == "matmul":
            _, a, b, transposed, bias = form
            out = op.outputs[0]
            if a.ndim not in (2, 3) or b.ndim != 2 or not a.dtype == b.dtype == out.dtype:
                raise _NotNative(f"op '{op.type}' other than 2-D (or a stack of them) @ 2-D of one dtype")
            (m, k), n = a.static_shape[-2:], b.static_shape[0 if transposed else 1]
            a_of = transposed_sources.get(id(a))
            if a_of is not None and a_of is not b:      # x.T @ b: NumPy's call on x's memory, read transposed
                call = product_call(a.dtype, m, k, n, transposed, verify=False, a_transposed=True)
                if isinstance(call, str):
                    raise _NotNative(call)
                call = ("blas", a.dtype.str, m, k, n, transposed, "a.T")
                checks.append(call)
                if bias is not None:
                    raise _NotNative(f"op '{op.type}' of a transposed operand with a bias")
                forms[id(op)] = (kind, call, a_of, b, bias)
                key.append((kind, transposed, "a.T", [number(a_of)] + ins[1:], outs))
                continue
            call = product_call(a.dtype, m, k, n, transposed, verify=False)
            if isinstance(call, str):
                raise _NotNative(call)
            if a.ndim == 3:         # each item's product, as NumPy's matmul makes them (checked: "items")
                checks.append(("items", a.dtype.str, a.static_shape[0], m, k, n, transposed))
            call = ("blas", a.dtype.str, m, k, n, transposed)
            checks.append(call)
            if bias is not None:
                if bias.dtype != out.dtype:
                    raise _NotNative(f"op '{op.type}' adds a bias of another dtype")
                _check_broadcast(op, bias, out)
            forms[id(op)] = (kind, call, a, b, bias)
            key.append((kind, transposed, ins, outs))
        elif kind == "rows":
            _, table, ids, wrap = form
            if ids.dtype.kind not in "iu" or op.outputs[0].dtype != table.dtype:
                raise _NotNative(f"op '{op.type}' of {ids.dtype} ids")
            forms[id(op)] = form
            key.append((kind, wrap, ins, outs))
        elif kind == "softmax":
            _, x, log = form
            if op.outputs[0].dtype != x.dtype or x.static_shape[-1] == 0:
                raise _NotNative(f"op '{op.type}' of {x.dtype}{list(x.static_shape)}")
            rows, length = math.prod(x.static_shape[:-1]), x.static_shape[-1]
            loops = []
            for ufunc in ("maximum", "add"):
                why = reduce_loop(ufunc, x.dtype, length, rows=rows, verify=False)
                if isinstance(why, str):
                    raise _NotNative(f"op '{op.type}': {why}")
                loops.append(("reduce", ufunc, x.dtype.str, length, rows))
            loops += [("loop", ufunc, x.dtype.str) for ufunc in (("exp", "log") if log else ("exp",))]
            checks.extend(loops)
            forms[id(op)] = (kind, x, log, loops, _inline_sum(checks, "add", x))
            key.append((kind, log, ins, outs))
        elif kind == "layer_norm":
            _, x, weight, bias, eps = form
            out = op.outputs[0]
            length = x.static_shape[-1]
            if out.dtype != x.dtype or not 1 <= length <= MAX_INLINE_SUM:
                raise _NotNative(f"op '{op.type}' of {x.dtype}{list(x.static_shape)}")
            for p in (weight, bias):
                if p is not None and (p.dtype != x.dtype or tuple(p.static_shape) != (length,)):
                    raise _NotNative(f"op '{op.type}' with a {p.dtype}{list(p.static_shape)} weight or bias")
            sums = ("pairwise", x.dtype.str, length, math.prod(x.static_shape[:-1]), "required")
            sqrt = ("loop", "sqrt", x.dtype.str)
            checks.extend([sums, sqrt])
            forms[id(op)] = (kind, x, weight, bias, eps, sqrt)
            key.append((kind, eps, ins, outs))
        elif kind == "topk":
            _, x, k = form
            if x.dtype.kind not in "fiu" or not 0 <= k <= x.static_shape[-1]:
                raise _NotNative(f"op '{op.type}' of {x.dtype}")
            forms[id(op)] = form
            key.append((kind, k, ins, outs))
        elif kind == "append":
            _, arr, x = form
            if x.dtype != arr.dtype or x.static_shape != arr.static_shape:
                raise _NotNative(f"op '{op.type}' appends {x.dtype}{list(x.static_shape)}")
            forms[id(op)] = form
            key.append((kind, ins, outs))
        elif kind == "array_read":
            _, arr, i = form
            if op.outputs[0].dtype != arr.dtype or op.outputs[0].static_shape != arr.static_shape:
                raise _NotNative(f"op '{op.type}' reads {op.outputs[0].dtype}{list(op.outputs[0].static_shape)}")
            forms[id(op)] = form
            key.append((kind, ins, outs))
        elif kind == "array_length":
            if op.outputs[0].dtype != np.int64 or op.outputs[0].ndim:
                raise _NotNative(f"op '{op.type}' gives {op.outputs[0].dtype}")
            forms[id(op)] = form
            key.append((kind, ins, outs))
        elif kind == "view":
            if op.outputs[0].dtype != form[1].dtype or math.prod(op.outputs[0].static_shape) != math.prod(
                    form[1].static_shape):
                raise _NotNative(f"op '{op.type}' changes the size or dtype")
            forms[id(op)] = form
            key.append((kind, ins, outs))
        elif kind == "split":
            forms[id(op)] = form
            key.append((kind, form[2], form[3], ins, outs))
        elif kind == "select":
            _, c, x, y = form
            out = op.outputs[0]
            for v in (c, x, y):
                if isinstance(v, Variable):
                    _check_broadcast(op, v, out)
            for v in (x, y):
                if isinstance(v, Variable) and v.dtype != out.dtype and not ew._castable(v.dtype, out.dtype):
                    raise _NotNative(f"op '{op.type}' casts {v.dtype} to {out.dtype}")
                if not isinstance(v, Variable) and ew._number(v, out.dtype) is None:
                    raise _NotNative(f"op '{op.type}': {v!r} is not a {out.dtype} value")
            forms[id(op)] = form
            key.append((kind, ins, outs))
        elif kind == "transpose":
            x = form[1]
            if not _only_products_read(block, op.outputs[0], x):     # a copy would change a product's BLAS call
                raise _NotNative(f"op '{op.type}': a transpose read other than as a product's first operand")
            forms[id(op)] = form
            key.append((kind, ins, outs))
            transposed_sources[id(op.outputs[0])] = x
        elif kind == "cast":
            _, x, dtype = form
            if x.dtype != dtype and not ew._castable(x.dtype, dtype):
                raise _NotNative(f"op '{op.type}' casts {x.dtype} to {dtype}")
            forms[id(op)] = form
            key.append((kind, ins, outs))
        elif kind == "reduce_first":
            _, ufunc, x = form
            out = op.outputs[0]
            if out.dtype != x.dtype or ufunc not in ("add", "multiply", "maximum", "minimum"):
                raise _NotNative(f"{ufunc}.reduce over the first axis to {out.dtype} (not native yet)")
            loop = None
            if ufunc in ("maximum", "minimum"):     # NumPy's binary loop, row by row (NaNs as NumPy's)
                loop = ("loop", ufunc, x.dtype.str)
                checks.append(loop)
            forms[id(op)] = (kind, loop, ufunc, x)
            key.append((kind, ufunc, ins, outs))
        elif kind in ("argmax", "argmin"):
            _, x, axis = form
            if x.dtype.kind not in "fiub" or math.prod(x.static_shape) == 0:
                raise _NotNative(f"op '{op.type}' of an empty or {x.dtype} array")
            forms[id(op)] = form
            key.append((kind, axis, ins, outs))
        elif kind == "index":
            forms[id(op)] = form
            key.append((kind, [a if a[0] != "at" or not isinstance(a[1], Variable) else ("at", number(a[1]))
                               for a in form[2]], ins, outs))
        elif kind == "reduce_rows":
            _, ufunc, x = form
            out = op.outputs[0]
            if ufunc in _LOGICAL or out.dtype != x.dtype:
                raise _NotNative(f"{ufunc}.reduce over an axis to {out.dtype} (not native yet)")
            length = x.static_shape[-1]
            loop = reduce_loop(ufunc, x.dtype, length, rows=math.prod(x.static_shape[:-1]), verify=False)
            if isinstance(loop, str):
                raise _NotNative(loop)
            loop = ("reduce", ufunc, x.dtype.str, length, math.prod(x.static_shape[:-1]))
            checks.append(loop)
            chain = summed.get(id(x))
            if chain is not None and not _only_read_by(block, x, op):
                chain = None
            forms[id(op)] = (kind, loop, x, _inline_sum(checks, ufunc, x), chain)
            key.append((kind, ufunc, ins, outs))
        elif kind == "reduce" and form[1] in _LOGICAL:
            _, ufunc, x = form
            if op.outputs[0].dtype.kind != "b" or op.outputs[0].ndim != 0:
                raise _NotNative(f"{ufunc}.reduce to {op.outputs[0].dtype}")
            forms[id(op)] = ("logical", ufunc, x)
            key.append((kind, ufunc, ins, outs))
        elif kind == "reduce":
            _, ufunc, x = form
            out = op.outputs[0]
            if out.dtype != x.dtype or out.ndim != 0:
                raise _NotNative(f"{ufunc}.reduce to {out.dtype}{list(out.static_shape)}")
            loop = reduce_loop(ufunc, x.dtype, math.prod(x.static_shape), verify=False)
            if isinstance(loop, str):
                raise _NotNative(loop)
            loop = ("reduce", ufunc, x.dtype.str, math.prod(x.static_shape), None)
            checks.append(loop)
            forms[id(op)] = (kind, loop, x)
            key.append((kind, ufunc, ins, outs))
        elif kind == "branch":
            pred = op.inputs[0]
            if not isinstance(pred, Variable) or pred.ndim != 0 or pred.dtype.kind != "b":
                raise _NotNative("a cond whose predicate is not a boolean scalar")
            forms[id(op)] = form
            key.append((kind, ins, outs))
            _closure_key(op, key, number)
            for sub in op.sub_blocks():
                key.append("{")
                _walk(sub, forms, key, number, checks)
                if len(sub.results) != len(op.outputs):
                    raise _NotNative("a cond branch yields an unexpected number of values")
                for r, o in zip(sub.results, op.outputs):
                    if isinstance(r, Variable) and (r.dtype != o.dtype or r.static_shape != o.static_shape):
                        raise _NotNative("a cond branch yields a value of another type than the cond's")
                    key.append(("yield", number(r)))
                key.append("}")
        elif kind == "loop":        # a nested while: its state in buffers of its own (dense values only)
            if len(op.inputs) < len(op.outputs):
                raise _NotNative("a nested loop with fewer inputs than states")
            forms[id(op)] = form
            key.append(("loop", ins, outs, "{"))
            _loop(op, forms, key, number, checks)
            key.append("}")
        else:
            raise _NotNative(f"op '{op.type}' ({kind}) is not native inside a loop yet")


_LOGICAL = ("logical_and", "logical_or")


def _inline_sum(checks, ufunc, x):
    """The check that lets rows of x be summed inline (`reductions.pairwise_sum`'s order), or None: the
    NumPy loop is called per row (its verdict is known once the compiler thread ran it)."""
    length, rows = x.static_shape[-1], math.prod(x.static_shape[:-1])
    if ufunc != "add" or not 1 <= length <= MAX_INLINE_SUM or x.dtype.kind != "f":
        return None
    check = ("pairwise", x.dtype.str, length, rows, "")
    checks.append(check)
    return check


def _only_read_by(block, var, reader):
    """Whether `reader` (an op of block) is the only thing that reads var: no other op of block (nor of the
    blocks nested in it), not a block result."""
    if any(r is var for r in list(getattr(block, "results", ())) + list(getattr(block, "outputs", ()))):
        return False
    for o in block.ops:
        if o is reader:
            if sum(x is var for x in o.inputs) != 1:
                return False
            continue
        region = region_of(o)
        if any(x is var for x in o.inputs) or region is not None and any(x is var for x in region.closure_inputs(o)):
            return False
    return True


def _only_products_read(block, var, source):
    """Whether every reader of var (source.T, made in block) is a matmul of block taking it as its first
    operand and not source as its second (NumPy's `a.T @ a` is a syrk): then its copy is never made (the
    product reads the source as NumPy's call reads the view)."""
    if any(r is var for r in list(getattr(block, "results", ())) + list(getattr(block, "outputs", ()))):
        return False
    for o in block.ops:
        region = region_of(o)
        if region is not None and any(x is var for x in region.closure_inputs(o)):
            return False
        for j, x in enumerate(o.inputs):
            if x is var:
                form = native_form(o) or ("",)
                if form[0] != "matmul" or j != 0 or form[1] is not var or form[2] is var or form[2] is source:
                    return False
    return True


def _check_broadcast(op, v, out):
    """v broadcasts to out's shape as it is (static shapes: each dim out's or 1; np.broadcast_shapes costs
    ~5-40 µs a call, a plan build's first call of it the most)."""
    shape, to = tuple(v.static_shape), tuple(out.static_shape)
    fits = len(shape) <= len(to) and all(d == t or d == 1 for d, t in zip(shape, to[len(to) - len(shape):]))
    if not fits:
        raise _NotNative(f"op '{op.type}' broadcasts {list(v.static_shape)} to {list(out.static_shape)}")


# --- compiling ---------------------------------------------------------------------------------------
def region_job(region):
    """`job()` compiles the region (once per distinct region: a RegionKernel, or why not), or loads what
    the disk cache holds for it; `job.cached()` is what an earlier job made or the disk cache holds
    (loaded without llvmlite where it is a shared library), or None."""
    def job():
        kernel = _KERNELS.get(region.key)
        if kernel is None:
            with _LOCK:
                kernel = _KERNELS.get(region.key)
                if kernel is None:
                    try:
                        kernel = _self_tests(region) or _from_disk(region, with_llvmlite=True) or _compile(region)
                    except Exception as e:      # noqa: BLE001 - an emitter gap keeps the loop on NumPy
                        kernel = f"compile failed: {type(e).__name__}: {e}"
                    _KERNELS[region.key] = kernel
        return kernel

    def cached():
        kernel = _KERNELS.get(region.key)
        if kernel is None:          # not under _LOCK: a compile in another thread never blocks this one
            kernel = _from_disk(region, with_llvmlite=False)
            if kernel is not None:
                kernel = _KERNELS.setdefault(region.key, kernel)
        return kernel

    job.cached = cached
    return job


def _compile(region):
    """The region compiled (a RegionKernel, or why not), and kept on disk when its code holds no
    process address."""
    if engine() is None:
        return "llvmlite unavailable"
    kernel = LoopEmitter(region).build()
    if not isinstance(kernel, str) and kernel.saved is not None:
        meta, obj, shared = kernel.saved
        disk_cache.write(disk_cache.entry_key(region.key), meta, obj, shared)
    return kernel


def _from_disk(region, with_llvmlite):
    """The kernel the disk cache holds for the region, or None: none there, the cache off, object code
    only (it needs llvmlite to load) without with_llvmlite, or a self-test or an address failing here.
    The same self-tests as a compile run first (the BLAS calls and NumPy loops the code calls)."""
    entry = disk_cache.lookup(region.key)
    if entry is None or (entry[2] is None and not with_llvmlite):
        return None
    meta, obj, shared = entry
    try:
        if _self_tests(region):
            return None
        kernel = load_kernel(meta, obj, shared)
    except (KeyError, TypeError, ValueError):       # an entry of another shape: a miss
        return None
    if isinstance(kernel, str):
        return None
    kernel.from_disk = True
    return kernel


def _self_tests(region):
    """What `_run_self_tests` says, run once per region (a disk cache miss is followed by a compile)."""
    if region.tested is None:
        region.tested = _run_self_tests(region)
    return region.tested


def _run_self_tests(region):
    """'' when every BLAS call and NumPy loop the region uses gives NumPy's bits here, else why not; fills
    the forms' calls and loops (analysis, on a plan's first call, only checked they may be native)."""
    found = {}
    for check in region.checks:
        if check[0] == "blas":
            _, dtype, m, k, n, transposed, *a_transposed = check
            got = product_call(np.dtype(dtype), m, k, n, transposed, a_transposed=bool(a_transposed))
        elif check[0] == "items":      # '' passes: nothing to fill in
            why = stacked_items_check(np.dtype(check[1]), *check[2:])
            if why:
                return why
            continue
        elif check[0] == "pairwise":       # fails the region only where no NumPy loop call can stand in
            why = pairwise_check(*check[1:4])
            if why and check[4:] == ("required",):
                return why
            found[check] = not why
            continue
        elif check[0] == "reduce":
            _, ufunc, dtype, length, rows = check
            got = reduce_loop(ufunc, np.dtype(dtype), length, rows=rows)
        else:
            _, ufunc, dtype = check
            function = getattr(np, ufunc)
            got = (strided_loop(function, (np.dtype(dtype),) * (function.nin + 1))
                   or f"no usable NumPy {ufunc} loop for {dtype}")
        if isinstance(got, str):
            return got
        found[check] = got
    for op_id, form in list(region.forms.items()):      # the checked calls and loops for the emitter
        if form[0] == "reduce_rows":
            inline = form[3] is not None and found[form[3]]
            region.forms[op_id] = (form[0], found[form[1]], form[2], inline, form[4] if inline else None)
        elif form[0] in ("matmul", "reduce") or form[0] == "reduce_first" and form[1] is not None:
            region.forms[op_id] = (form[0], found[form[1]]) + form[2:]
        elif form[0] == "softmax":
            region.forms[op_id] = form[:3] + ([found[c] for c in form[3]], form[4] is not None and found[form[4]])
        elif form[0] == "layer_norm":
            region.forms[op_id] = form[:5] + (found[form[5]],)
        elif form[0] == "chain":        # its steps' NumPy loops, fetched and self-tested here (ew._with_loops)
            plan = ew._with_loops(form[1])
            if isinstance(plan, str):
                return plan
            region.forms[op_id] = (form[0], plan) + form[2:]
    return ""
