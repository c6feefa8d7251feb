"""`loss.backward()` inside traced code: the backward ops are recorded into the same Program.

The gradients go to the captured tensors that require grad (layer parameters,
tensors made with requires_grad=True outside the function): each one's `.grad`
is written as state (runtime.state), so it holds the traced gradient for the
rest of the trace and, after every run of the Program, the eager result —
added to what `.grad` held before the call, as an eager backward() does.
"""
from .. import tracing
from ..state import attr_cell
from .engine import backprop, records_of_ops
from ..ops import ones_like


def traced_backward(loss, grad=None):
    block = tracing.current_block()
    program = block.program if block is not None else None
    if program is None or loss.block.program is not program:
        raise ValueError("backward(): this traced value belongs to a trace that has ended")
    if block is not program.global_block:
        raise ValueError("backward() inside a tensor-dependent branch or loop body is not supported: call it "
                         "after the if/while (compute the loss there and call backward once)")
    if grad is None:
        if any(d != 1 for d in loss.static_shape):
            raise RuntimeError(f"backward(): grad can be implied only for a single-element tensor, this one has "
                               f"shape {loss.static_shape}; pass the cotangent: t.backward(grad)")
        grad = ones_like(loss)
    targets = [(var, program.parameters[var.name]) for var in program.inputs
               if var.persistable and var.name in program.parameters and program.parameters[var.name].requires_grad]
    cots = backprop(records_of_ops(block.ops), {loss: grad}, [var for var, _ in targets])
    for var, tensor in targets:
        g = cots.get(var)
        if g is None:
            continue
        before = tensor.grad
        # None now and a tensor next call (or back): retrace
        tracing.note_place_read(f"{var.name}.grad", GradPlace(tensor), "grad", before)
        attr_cell(tensor, "grad", f"{var.name}.grad").set(g if before is None else before + g)


def set_grad(tensor, value, label):
    """`tensor.grad = value` (zero_grad, clear_gradients); while tracing, a written place of the trace like a
    traced backward's, so each run stores it (an eager `.grad` from before the call is cleared by every run,
    not only the trace) and a trace that fails puts the old one back."""
    if tracing.current_block() is None:
        tensor.grad = value
    else:
        attr_cell(tensor, "grad", label).set(value, always=True)


class GradPlace:
    """A tensor's `.grad` as a place the transpiler's guards can read (`get("grad")`) on every call."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def get(self, name, default=None):
        return self.tensor.grad
