"""ONNX lowerings of `cond` (If) and `while` (Loop).

cond:  If(pred) with each block as a branch subgraph returning the op's outputs.
while: the condition block is lowered once before the loop (the first test) and
       again at the end of the body, so Loop's body graph is
       (iteration, cond, *state) -> (next test, *next state); the trip count is
       left open: the loop runs until its data-dependent condition is false.
A block's closure params are bound to the ONNX values of the op's closure inputs
(`exporter.lower_op`), which subgraphs read from the outer scope.
"""
import numpy as np

from ..registry import facet


@facet("cond", "onnx")
def _cond(g, op):
    if not op.outputs:
        return []
    true_block, false_block = op.sub_blocks()
    then_graph = g.branch(true_block, op.outputs, "then")
    else_graph = g.branch(false_block, op.outputs, "else")
    outs = g.node("If", [g.predicate(op.inputs[0])], outputs=len(op.outputs),
                  then_branch=then_graph, else_branch=else_graph)
    return [outs] if len(op.outputs) == 1 else outs


@facet("while", "onnx")
def _while(g, op):
    cond_block, body_block = op.sub_blocks()
    state_vars = op.outputs
    init = [g.value(x, v.dtype) for x, v in zip(op.inputs, state_vars)]
    (first_test,) = g.inline(cond_block, init)
    first_test = g.predicate(first_test)
    body = g.child("body")
    body.add_input("iteration", (np.int64, ()))
    body.add_input("running", (np.bool_, ()))
    state = [body.add_input(param, var) for param, var in zip(body_block.params, state_vars)]
    results = body.inline(body_block, state)
    next_state = [body.value(r, v.dtype) for r, v in zip(results, state_vars)]
    (test,) = body.inline(cond_block, next_state)
    body.add_output(body.predicate(test), (np.bool_, ()), hint="running")
    for value, var in zip(next_state, state_vars):
        body.add_output(value, var, hint=body.var_name(var))
    outs = g.node("Loop", ["", first_test, *init], outputs=len(state_vars), body=body)
    return [outs] if len(state_vars) == 1 else outs
