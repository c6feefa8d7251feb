"""Gradients of `cond` and `while`: control flow is differentiated, not unrolled.

cond: the backward is a `cond` on the same predicate whose branches are the
VJPs of the forward branches (each recomputes what its VJP needs of its
branch, then runs the engine over it).

while: nothing is edited. The VJP builds a forward-with-tape, a new while op
(the loop's blocks cloned) that also saves what the backward needs — the loop
variables that the needed ops of the body read (liveness: nothing else),
pushed onto tensor arrays each iteration — and counts its iterations; it takes
the loop op's place in the block being traced, the loop op left as it was. The
backward is a reverse `while` that runs that many iterations; iteration k reads
the values saved at k, recomputes the needed body ops, and turns the
cotangents of the body's results into those of its loop variables (carried)
and closure params (summed: the cotangents of the op's closure inputs). A data-dependent trip count,
`break`/`continue`/`return` (lowered to flag variables) and tensor arrays are
all just loop state.
"""
import weakref

from .. import tracing
from ..control_flow import cond, while_loop
from ..ir import Operator, Variable
from ..tracer import Tracer, tracer_of, value_of, values_of
from ..ops import add, array_append, array_new, array_read, full, greater, subtract, zeros_like
from ..ops.regions import region_of, sub_blocks
from ..ops.registry import facet, get_op
from .arrays import array_zeros_like, scatter_sum
from .engine import add_cotangents, backprop, carries_gradient
from .replay import clone_block, hint, needed_ops, replay


def _dense_float(v):
    return isinstance(v, (Variable, Tracer)) and v.kind == "dense" and carries_gradient(v)


def block_vjp(ops, mapping, seeds, wrt, block):
    """Recompute the `ops` that the gradient needs into `block` (inputs through `mapping`), then
    backpropagate `seeds` (forward value -> cotangent) to `wrt` (forward values). {wrt value: cotangent}."""
    selected, _ = needed_ops(ops, wrt)
    keys = {}
    start = len(block.ops)
    records = replay(selected, mapping, block, keys)
    mapped_seeds = {}
    for value, g in seeds:
        key = keys.get(value, mapping.get(value, value))
        mapped_seeds[key] = g if key not in mapped_seeds else add_cotangents(mapped_seeds[key], g)
    wrt_keys = [keys.get(w, mapping.get(w, w)) for w in wrt]
    cots = backprop(records, mapped_seeds, wrt_keys)
    result = {w: cots.get(k) for w, k in zip(wrt, wrt_keys)}
    prune(block, start, [g for g in result.values() if g is not None])
    return result


def prune(block, start, targets):
    """Drop the ops recorded into `block` since `start` that no target depends on (recomputed forward
    values the VJPs did not read): what stays is what the backward really needs."""
    live = {value_of(t): True for t in targets if isinstance(t, (Variable, Tracer))}
    kept = []
    for op in reversed(block.ops[start:]):
        if any(o in live for o in op.outputs) or not get_op(op.type).pure:
            kept.append(op)
            for v in op.input_vars():
                live[v] = True
            for sub in op.sub_blocks():
                for inner in _nested_ops(sub):
                    for v in inner.input_vars():
                        live[v] = True
                live.update((r, True) for r in sub.results if isinstance(r, Variable))
    kept.reverse()
    block.ops[start:] = kept
    return live


def _nested_ops(block):
    for op in block.ops:
        yield op
        for sub in op.sub_blocks():
            yield from _nested_ops(sub)


def _zeros_like(v):
    if v.kind == "array":
        return array_zeros_like(v)
    return zeros_like(v)


# --- cond -----------------------------------------------------------------------------------

@facet("cond", "vjp")
def _cond_vjp(g, inputs, outputs, *, true_block, false_block):
    pred, captured = inputs[0], inputs[1:]
    wrt = [j for j, c in enumerate(captured) if isinstance(c, Tracer) and carries_gradient(c)]   # arrays too
    if not wrt:
        return (None,) * len(inputs)

    def branch(block):
        def run():
            # the branch reads closure param j where the op reads captured[j]: its gradient is captured[j]'s
            mapping = dict(zip(block.closure, captured))
            seeds = [(r, gi) for r, gi in zip(block.results, g) if gi is not None]
            params = [block.closure[j] for j in wrt]
            cots = block_vjp(block.ops, mapping, seeds, params, tracing.current_block())
            return tuple(cots[p] if cots[p] is not None else _zeros_like(captured[j]) for p, j in zip(params, wrt))
        return run

    true_branch, false_branch = sub_blocks(region_op(outputs))
    grads = cond(pred, branch(true_branch), branch(false_branch))
    by_index = dict(zip(wrt, grads))
    return (None,) + tuple(by_index.get(j) for j in range(len(captured)))


# --- while ----------------------------------------------------------------------------------

class _LoopTape:
    """What the forward-with-tape of a while op adds to its loop, by position: after the loop's own
    `n_state` state values, one tensor array per saved body param (`save`: their indices, each taken
    every iteration), then the iteration count. Positions, not values: the cache holding it must not
    keep the Program alive."""

    def __init__(self, n_state, save):
        self.n_state, self.save = n_state, list(save)

    def saved(self, op):
        """{body param index: the op's tensor array output saving it}"""
        return {i: op.outputs[self.n_state + k] for k, i in enumerate(self.save)}

    def count(self, op):
        return op.outputs[-1]


# Program -> {id(a forward-with-tape's count output): (weak reference to that output, _LoopTape)}: weak
# both ways (an entry holds nothing of the Program), so a dropped Program takes its entries along, and
# nothing is written on the Program itself
_TAPED = weakref.WeakKeyDictionary()


def region_op(outputs):
    """(A gradient rule's way to its region op, whose blocks it reads.) The op of `outputs[0]`'s block
    that makes it now: the region op a record describes, or the forward-with-tape that took its place
    (which makes the same values, and more)."""
    first = value_of(outputs[0])
    block = first.block
    for op in block.ops:
        if op.outputs and op.outputs[0] is first:
            return op
    raise ValueError("region vjp: the forward op is not in its outputs' block")


def _tape_of(op):
    last = op.outputs[-1] if op.outputs else None
    known = _TAPED.get(op.block.program, {}).get(id(last))
    return known[1] if known is not None and known[0]() is last else None


def _with_tape(op, save):
    """A new while op in `op`'s place: `op`'s loop (its blocks cloned) that also pushes the body params
    `save` onto tensor arrays each iteration and counts its iterations; its first outputs are op's own.
    `op` is never edited, and the blocks it held stay as they were (orphans the trace compacts away)."""
    block, region = op.block, region_of(op)
    cb, bb = sub_blocks(op)
    n = len(op.outputs)
    params = [bb.params[i] for i in save]
    first = len(block.ops)
    with tracing.block_guard(block):
        inits = [array_new(p.static_shape, p.dtype) for p in params] + [full((), 0, "int64")]
    made = block.ops[first:]
    del block.ops[first:]
    mapping = {}
    new_cb, new_bb = clone_block(cb, mapping, block), clone_block(bb, mapping, block)
    tapes = [tracer_of(new_bb.create_var(f"saved_{hint(p)}", p.static_shape, p.dtype, kind="array"))
             for p in params]
    count = tracer_of(new_bb.create_var("iteration", (), "int64"))
    with tracing.block_guard(new_bb):
        pushed = [array_append(arr, mapping[p]) for arr, p in zip(tapes, params)] + [add(count, 1)]
    new_bb.params += values_of(tapes + [count])
    new_bb.results += values_of(pushed)
    new_cb.params += [new_cb.create_var(v.name, v.static_shape, v.dtype, kind=v.kind) for v in tapes + [count]]
    outs = [block.create_var(f"saved_{hint(p)}", p.static_shape, p.dtype, kind="array") for p in params]
    outs.append(block.create_var("trip_count", (), "int64"))
    attrs = dict(op.attrs)
    attrs.update(zip(region.block_attrs, (new_cb, new_bb)))
    taped = Operator(op.type, op.inputs[:n] + values_of(inits) + op.inputs[n:], op.outputs + outs, attrs, op.origin,
                     block, op.no_grad)
    at = block.ops.index(op)
    block.ops[at:at + 1] = made + [taped]
    tape = _LoopTape(n, save)
    _TAPED.setdefault(block.program, {})[id(outs[-1])] = (weakref.ref(outs[-1]), tape)
    return taped, tape


def _dry_run(op, bb, carried, wrt_captured, captured):
    """Trace one reverse iteration into a scratch block (then dropped) to learn two facts:
    liveness — the body params its pruned ops really read (all the forward loop must save) — and
    which captured values (`wrt_captured`: positions in `captured`, the op's closure inputs) get their
    cotangent from one `x[i]` read (`_sparse_gather`)."""
    program = op.block.program
    first = program.block_mark()
    scratch = program.new_block(op.block)
    params = list(bb.params)
    stand_ins = {p: scratch.create_var(hint(p), p.static_shape, p.dtype, weak=p.weak, kind=p.kind) for p in params}
    with tracing.block_guard(scratch):
        seeds = [(bb.results[i], tracer_of(scratch.create_var("g", bb.results[i].static_shape,
                                                              bb.results[i].dtype, kind=bb.results[i].kind)))
                 for i in carried]
        closure = [bb.closure[j] for j in wrt_captured]
        wrt = [params[i] for i in carried] + closure
        cots = block_vjp(bb.ops, {**stand_ins, **dict(zip(bb.closure, captured))}, seeds, wrt, scratch)
    live = {v for inner in _nested_ops(scratch) for v in inner.input_vars()}
    read = {p for p, s in stand_ins.items() if s in live}
    sparse = {}
    for j, p in zip(wrt_captured, closure):
        gather = _sparse_gather(scratch, cots[p], captured[j])
        if gather is not None:
            g, idx = gather.inputs[0], gather.inputs[2:]
            sparse[j] = ((g.static_shape, g.dtype), [(i.static_shape, i.dtype) for i in idx], gather.attrs.get("index"))
    program.discard_blocks(first)
    return read, sparse


def _sparse_gather(block, cotangent, captured):
    """The gather-gradient op (`scatters_cotangent`: `getitem_grad`, or `array_onehot` for a tensor
    array) of `block` that alone makes `cotangent` (the scatter of one `captured[i]` read, by dynamic
    index values only), or None."""
    cotangent, captured = value_of(cotangent), value_of(captured)
    if not isinstance(cotangent, Variable) or cotangent.block is not block:
        return None
    for op in block.ops:
        if op.outputs and op.outputs[0] is cotangent:
            dynamic = all(isinstance(i, Variable) and i.kind == "dense" for i in op.inputs[2:])
            if get_op(op.type).scatters_cotangent and op.inputs[1] is captured and op.inputs[2:] and dynamic:
                uses = sum(1 for other in _nested_ops(block) for v in other.input_vars() if v is cotangent)
                return op if uses == 0 else None
            return None
    return None


@facet("while", "vjp")
def _while_vjp(g, inputs, outputs, *, cond_block, body_block):
    # The op making these values now is the loop the record describes, or a forward-with-tape that
    # took its place (an earlier gradient of it, in this Program). The tape serves every gradient of
    # the loop's own state; only when cotangents reach the saved values themselves (a second-order
    # gradient) is the forward-with-tape differentiated as a loop of its own.
    op = region_op(outputs)
    g = tuple(g) if isinstance(g, tuple) else (g,)
    n_out = len(outputs)
    tape = _tape_of(op)
    if tape is not None and any(gi is not None for gi in g[tape.n_state:]):
        tape = None
    if tape is None and len(op.outputs) != n_out:
        raise RuntimeError("while vjp: the op making this loop's values is neither the loop nor a "
                           "forward-with-tape of it")
    n = n_out if tape is None else min(n_out, tape.n_state)
    bb = region_of(op).body(op)
    params = bb.params[:n]
    captured = inputs[n_out:]
    outs = tuple(outputs[:n])

    carried = [i for i in range(n) if _dense_float(params[i]) or
               (params[i].kind == "array" and carries_gradient(params[i]) and g[i] is not None)]
    # positions of the captured values (the op's closure inputs) that take a gradient: tensor arrays too
    wrt_captured = [j for j, c in enumerate(captured) if isinstance(c, Tracer) and carries_gradient(c)]
    if not carried:
        return (None,) * len(inputs)
    if tape is None:     # what to save does not depend on this call's cotangents: one tape serves every gradient
        every = [i for i in range(n) if carries_gradient(params[i])]
        read, _ = _dry_run(op, bb, every, wrt_captured, captured)
        op, tape = _with_tape(op, [i for i in range(n) if params[i].kind == "dense" and params[i] in read])
        bb = region_of(op).body(op)
        params = bb.params[:n]
    results = bb.results[:n]
    closure = [bb.closure[j] for j in wrt_captured]     # the body reads closure param j for captured[j]
    wrt_body = [params[i] for i in carried] + closure
    _, sparse = _dry_run(op, bb, carried, wrt_captured, captured)
    saved = tape.saved(op)
    array_outs = {i: outs[i] for i in range(n) if params[i].kind == "array"}

    def reverse_cond(k, gs, accs):
        return greater(k, 0)

    def reverse_body(k, gs, accs):
        k = subtract(k, 1)
        block = tracing.current_block()
        # loop state the backward does not read (liveness): a stand-in that no kept op uses
        mapping = {p: block.create_var(hint(p), p.static_shape, p.dtype, weak=p.weak, kind=p.kind) for p in params}
        mapping.update({params[i]: array_read(arr, k) for i, arr in saved.items() if i < n})
        mapping.update({params[i]: arr for i, arr in array_outs.items()})
        mapping.update(zip(bb.closure, captured))
        seeds = [(results[i], gi) for i, gi in zip(carried, gs)]
        cots = block_vjp(bb.ops, mapping, seeds, wrt_body, block)
        new_gs = tuple(cots[params[i]] if cots[params[i]] is not None else _like_cotangent(gi)
                       for i, gi in zip(carried, gs))
        new_accs = tuple(_accumulate(block, acc, cots[p], captured[j], j in sparse)
                         for acc, p, j in zip(accs, closure, wrt_captured))
        return k, new_gs, new_accs

    g0 = tuple(g[i] if g[i] is not None else _zeros_like(outs[i]) for i in carried)
    acc0 = tuple(_sparse_start(sparse[j]) if j in sparse else _zeros_like(captured[j]) for j in wrt_captured)
    _, g_init, g_captured = while_loop(reverse_cond, reverse_body, (tracer_of(tape.count(op)), g0, acc0))
    by_init = dict(zip(carried, g_init))
    by_captured = {j: scatter_sum(captured[j], acc[0], acc[1:], sparse[j][2]) if j in sparse else acc
                   for j, acc in zip(wrt_captured, g_captured)}
    return (tuple(by_init.get(i) for i in range(n)) + (None,) * (n_out - n) +
            tuple(by_captured.get(j) for j in range(len(captured))))


def _sparse_start(plan):
    (g_shape, g_dtype), idx_specs, _ = plan
    return (array_new(g_shape, g_dtype),) + tuple(array_new(shape, dtype) for shape, dtype in idx_specs)


def _accumulate(block, acc, cotangent, captured, sparse):
    """Add one iteration's cotangent of a captured value: densely, or (sparse) by appending the
    scattered slice and its index values to the accumulator's tensor arrays."""
    if not sparse:
        return acc if cotangent is None else add_cotangents(acc, cotangent)
    gather = _sparse_gather(block, cotangent, captured)
    if gather is None:
        raise RuntimeError("autodiff: a loop body's gradient changed shape between two traces of it")
    block.ops.remove(gather)
    g, idx = gather.inputs[0], gather.inputs[2:]
    return (array_append(acc[0], g),) + tuple(array_append(arr, i) for arr, i in zip(acc[1:], idx))


def _like_cotangent(g):
    if g.kind == "array":
        raise NotImplementedError("a tensor array's cotangent vanished inside a loop body")
    return _zeros_like(g)

