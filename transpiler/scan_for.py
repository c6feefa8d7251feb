"""`for i in range(n)` with a static n whose unrolled body would be large: one `scan` op.

A Python `for` over a range of Python ints unrolls while tracing (each iteration's ops recorded
again, `i` a Python int), which is exact and lets the body use `i` as Python does (index a list of
layers, decide an `if` at trace time). When one iteration records many ops and the range is long,
the Program grows with n: then the loop becomes `rt.scan` over the loop's values with `i` a weak
int carried from `start` by `step`, traced once. Only where the scan computes what the unrolled loop
would: no `break` (a flag), no attribute or container writes carried as state, loop values that are
all tensors or numbers, and a body that traces with a symbolic `i` (a body that needs a Python `i`
raises while it is traced, the attempt is undone and the loop unrolls as before).
"""
import numbers

import runtime as rt
from runtime import tracing
from runtime.ir import Variable

UNROLL_LIMIT = 1000     # ops an unrolled loop may record (its iterations together) before it becomes a scan


def scanned_for(iterable, body_fn, values, n):
    """The loop's values after it ran as a scan op (a tuple of n), or None: unroll it.

    A loop whose first iteration changes what it carries (`h = 0` becoming a tensor, a float32 start
    made float64) runs that iteration as Python and scans the rest."""
    block = tracing.current_block()
    if (block is None or type(iterable) is not range or len(iterable) < 2
            or not all(_carriable(v) for v in values)):
        return None
    probe = _probe(block, iterable[0], body_fn, values, n)
    if probe is None or probe[0] * len(iterable) <= UNROLL_LIMIT:
        return None
    point = tracing.checkpoint(block)
    outs = _scan(iterable, body_fn, values, n, probe[1])
    if outs is None:
        tracing.rollback(point)
        try:
            peeled = _tuple(body_fn(iterable[0], *values), n)
        except Exception:  # noqa: BLE001 - the unrolled loop reports it
            peeled = None
        if peeled is not None and all(_carriable(v) for v in peeled):
            outs = _scan(iterable[1:], body_fn, peeled, n, probe[1])
        if outs is None:
            tracing.rollback(point)
    return outs


def _scan(iterable, body_fn, values, n, fixed):
    """`rt.scan` over the loop's values (the positions in `fixed` hold Python numbers the body leaves as
    they are: not carried), the index carried from `start` by `step`; None if the body cannot trace so."""
    if any(k in fixed and not isinstance(values[k], numbers.Number) for k in range(n)):
        return None

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
        return None
    return tuple(merged(outs))


def _carriable(value):
    return isinstance(value, (Variable, rt.Tensor)) or isinstance(value, numbers.Number) and not \
        isinstance(value, bool)


def _probe(block, i, body_fn, values, n):
    """(ops one iteration records, nested blocks included; the positions of Python numbers it leaves as
    they are), found by tracing it once and undoing that; None if the body fails there (the unrolled
    loop reports it) or changes a Python number to another one (a Python counter stays Python)."""
    point = tracing.checkpoint(block)
    program = block.program
    first, blocks = len(block.ops), len(program.blocks)
    try:
        out = _tuple(body_fn(i, *values), n)
        size = len(block.ops) - first + sum(len(b.ops) for b in program.blocks[blocks:])
    except Exception:  # noqa: BLE001
        return None
    finally:
        tracing.rollback(point)
    if len(out) != n:
        return None
    fixed = set()
    for k, (before, after) in enumerate(zip(values, out)):
        if isinstance(before, numbers.Number) and isinstance(after, numbers.Number):
            if type(before) is not type(after) or before != after:
                return None
            fixed.add(k)
    return size, fixed


def _tuple(result, n):
    if n == 0:
        return ()
    return (result,) if n == 1 else tuple(result)
