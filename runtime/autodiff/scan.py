"""The gradient of `scan`: two new scans, the forward Program left as it was.

1. a forward scan again (the body replayed) whose stacked outputs are the carry each iteration
   started from: what the backward reads of the forward (recomputed, not spliced into the op);
2. a reverse scan over (those carries, xs, the cotangents of ys), rows flipped: iteration k
   replays the body on its saved carry, and the engine turns the cotangents of the body's results
   into those of its carry (carried to the previous iteration), of its row of xs (stacked: the
   cotangent of xs) and of its closure params (summed in the carry: the cotangents of the op's
   closure inputs).
"""
from .. import tracing
from ..ir import Variable
from ..tracer import Tracer, tracer_of
from ..ops import flip, zeros_like
from ..ops.regions import sub_blocks
from ..ops.registry import facet
from ..scan_loop import scan
from .control_flow import region_op, block_vjp
from .engine import carries_gradient
from .replay import replay


def _differentiable(v):
    return isinstance(v, (Variable, Tracer)) and v.kind == "dense" and carries_gradient(v)


@facet("scan", "vjp")
def _scan_vjp(g, inputs, outputs, *, body_block, length, num_carry):
    (body,) = sub_blocks(region_op(outputs))
    nc = num_carry
    nx = len(body.params) - nc
    init, xs, captured = list(inputs[:nc]), list(inputs[nc:nc + nx]), list(inputs[nc + nx:])
    params, results = body.params, body.results
    ny = len(results) - nc
    g = tuple(g) if isinstance(g, tuple) else (g,)
    d_carry = [k for k in range(nc) if _differentiable(params[k])]
    d_x = [j for j in range(nx) if _differentiable(params[nc + j])]
    d_y = [j for j in range(ny) if g[nc + j] is not None and _differentiable(results[nc + j])]
    d_c = [j for j, c in enumerate(captured) if _differentiable(c)]    # closure param j stands for captured[j]
    wrt_captured = [body.closure[j] for j in d_c]
    if not (d_carry or d_x or wrt_captured):
        return (None,) * len(inputs)

    def forward(carry, x):
        mapping = dict(zip(params, list(carry) + list(x)))
        mapping.update(zip(body.closure, captured))
        replay(body.ops, mapping, tracing.current_block())
        return tuple(tracer_of(mapping.get(r, r)) for r in results[:nc]), tuple(carry)

    _, saved = scan(forward, tuple(init), tuple(xs), length=length)
    wrt = [params[k] for k in d_carry] + [params[nc + j] for j in d_x] + wrt_captured

    def backward(state, row):
        g_carry, acc = state
        carry_k, x_k, gy_k = row
        mapping = dict(zip(params, list(carry_k) + list(x_k)))
        mapping.update(zip(body.closure, captured))
        seeds = [(results[k], gk) for k, gk in zip(d_carry, g_carry)]
        seeds += [(results[nc + j], gy) for j, gy in zip(d_y, gy_k)]
        cots = block_vjp(body.ops, mapping, seeds, wrt, tracing.current_block())
        new_g = tuple(_or_zeros(cots[params[k]], gk) for k, gk in zip(d_carry, g_carry))
        g_x = tuple(_or_zeros(cots[params[nc + j]], x_k[j]) for j in d_x)
        acc = tuple(a if cots[c] is None else a + cots[c] for a, c in zip(acc, wrt_captured))
        return (new_g, acc), g_x

    g0 = tuple(_or_zeros(g[k], outputs[k]) for k in d_carry)
    acc0 = tuple(zeros_like(captured[j]) for j in d_c)
    rows = (tuple(_reversed(s) for s in saved), tuple(_reversed(x) for x in xs),
            tuple(_reversed(g[nc + j]) for j in d_y))
    (g_init, g_captured), g_xs = scan(backward, (g0, acc0), rows, length=length)
    by_init = dict(zip(d_carry, g_init))
    by_x = {j: _reversed(gx) for j, gx in zip(d_x, g_xs)}
    by_captured = dict(zip(d_c, g_captured))
    return (tuple(by_init.get(k) for k in range(nc)) + tuple(by_x.get(j) for j in range(nx)) +
            tuple(by_captured.get(j) for j in range(len(captured))))


def _reversed(rows):
    return flip(rows, axis=0)


def _or_zeros(cotangent, like):
    return zeros_like(like) if cotangent is None else cotangent
