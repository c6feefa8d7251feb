"""ONNX lowering of `scan`: a `Loop` with a static trip count.

Loop's body graph is (iteration, running, *carry) -> (running, *next carry, *rows of ys): each
scanned input's row is `Gather(xs, iteration)`, and Loop stacks the per-iteration outputs
itself (its scan outputs), which is exactly `ys`.
"""
import numpy as np

from ..registry import facet


@facet("scan", "onnx")
def _scan(g, op):
    (body_block,) = op.sub_blocks()
    nc, length = op.attrs["num_carry"], op.attrs["length"]
    nx = len(body_block.params) - nc
    carry_vars, ys_vars = op.outputs[:nc], op.outputs[nc:]
    init = [g.value(x, v.dtype) for x, v in zip(op.inputs[:nc], carry_vars)]
    xs = [g.value(x) for x in op.inputs[nc:nc + nx]]
    body = g.child("body")
    iteration = body.add_input("iteration", (np.int64, ()))
    running = body.add_input("running", (np.bool_, ()))
    state = [body.add_input(param, var) for param, var in zip(body_block.params[:nc], carry_vars)]
    rows = [body.node("Gather", [x, iteration], axis=0) for x in xs]
    results = body.inline(body_block, state + rows)
    body.add_output(running, (np.bool_, ()), hint="running")
    for r, var in zip(results[:nc], carry_vars):
        body.add_output(body.value(r, var.dtype), var, hint=body.var_name(var))
    for r, var in zip(results[nc:], ys_vars):
        body.add_output(body.value(r, var.dtype), (var.dtype, var.static_shape[1:]), hint=f"{body.var_name(var)}_row")
    count = g.const(np.int64(length))
    outs = g.node("Loop", [count, g.const(np.bool_(True)), *init], outputs=len(op.outputs), body=body)
    return [outs] if len(op.outputs) == 1 else outs
