"""`for i in range(n)` with a static n whose unrolled body would be large: one `scan` op.

A Python `for` over a range of Python ints unrolls while tracing (each iteration's ops recorded
again, `i` a Python int), which is exact and lets the body use `i` as Python does (index a list of
layers, decide an `if` at trace time). When one iteration records many ops and the range is long,
the Program grows with n: then, after its first iteration, the loop becomes `rt.scan` over the loop's
values with `i` a weak int carried by `step`, traced once. Only where the scan computes what the unrolled loop
would: no `break` (a flag), no attribute or container writes carried as state, loop values that are
all tensors or numbers, and a body that traces with a symbolic `i` (a body that needs a Python `i`
raises while it is traced, the attempt is undone and the loop unrolls as before).
"""
import numbers

import runtime as rt
from runtime import retraces, tracing
from runtime.ir import ops_under
from runtime.tracer import Tracer

UNROLL_LIMIT = 1000     # ops an unrolled loop may record (its iterations together) before it becomes a scan


def scanned_for(iterable, body_fn, values, n):
    """(what of the range is left to run as Python, the loop's values so far).

    The first iteration runs as Python does (what it records is the measure of the body: nothing is
    traced twice); when the rest would record more than UNROLL_LIMIT ops, it is one scan op from there
    (so a first iteration that changes what the loop carries, `h = 0` made a tensor, is no obstacle)."""
    block = tracing.current_block()
    if (block is None or type(iterable) is not range or len(iterable) < 2
            or not all(_carriable(v) for v in values)):
        return iterable, values
    first_op = len(block.ops)
    after = _tuple(body_fn(iterable[0], *values), n)
    rest = iterable[1:]
    size = sum(1 for _ in ops_under(block.ops[first_op:]))
    if size * len(rest) <= UNROLL_LIMIT or not all(_carriable(v) for v in after):
        return rest, after
    fixed = set()               # Python numbers the body leaves as they are: not carried
    for k, (before, now) in enumerate(zip(values, after)):
        if isinstance(before, numbers.Number) and isinstance(now, numbers.Number):
            if type(before) is not type(now) or before != now:
                return rest, after          # a Python counter stays Python: unroll
            fixed.add(k)
    outs = _scan(rest, body_fn, after, n, fixed)
    return (rest, after) if outs is None else (range(0), outs)


def _scan(iterable, body_fn, values, n, fixed):
    """`rt.scan` over the loop's values but the `fixed` positions, the index carried from `start` by
    `step`; None (and nothing recorded) if the body cannot trace so."""
    point = tracing.checkpoint(tracing.current_block())

    def merged(state):
        it = iter(state)
        return [values[k] if k in fixed else next(it) for k in range(n)]

    def step(carry, _):
        i, state = carry
        out = _tuple(body_fn(i, *merged(state)), n)
        return (i + iterable.step, tuple(v for k, v in enumerate(out) if k not in fixed)), None

    try:
        carried = tuple(v for k, v in enumerate(values) if k not in fixed)
        (_, outs), _ = rt.scan(step, (iterable.start, carried), None, length=len(iterable))
    except Exception:  # noqa: BLE001 - what a symbolic `i` cannot trace, the unrolled loop does as Python
        retraces.note(retraces.SCAN)
        tracing.rollback(point)
        return None
    return tuple(merged(outs))


def _carriable(value):
    return isinstance(value, (Tracer, rt.Tensor)) or isinstance(value, numbers.Number) and not \
        isinstance(value, bool)


def _tuple(result, n):
    if n == 0:
        return ()
    return (result,) if n == 1 else tuple(result)
