"""`value.backward()`: one method for eager Tensors and traced Variables, attached to both here."""
from .. import ops
from ..array_methods import ArrayMethods
from ..tensor import Tensor
from ..tracer import Tracer
from .engine import backprop
from .tape import no_grad, reachable
from .traced import traced_backward


def backward(value, grad=None):
    """Add d value / d t into `t.grad` for every tensor t requiring grad that value was computed from:
    eagerly the leaves of the tape; while tracing the captured tensors that require grad (written back after
    each run of the Program)."""
    if isinstance(value, Tracer):
        return traced_backward(value, grad)
    return eager_backward(value, grad)


def eager_backward(tensor, grad=None):
    """`tensor.backward()`: add d tensor / d leaf to every leaf's `.grad` (creating it if None)."""
    slot = tensor._ag
    if slot is None or not slot.tracks():
        raise RuntimeError(
            "backward(): this tensor does not require grad: none of the tensors it was computed from has "
            "requires_grad=True (make inputs with rt.tensor(a, requires_grad=True), or use Parameters)")
    grad = _seed(tensor, grad)
    records, leaves = reachable(slot)
    with no_grad():
        cots = backprop(records, {slot: grad}, leaves)
        for leaf in leaves:
            g = cots.get(leaf)
            if g is not None:
                leaf.grad = g if leaf.grad is None else leaf.grad + g


def _seed(tensor, grad):
    if grad is None:
        if tensor.size != 1:
            raise RuntimeError(
                f"backward(): grad can be implied only for a single-element tensor, this one has shape "
                f"{tuple(tensor.shape)}; pass the cotangent: t.backward(grad)")
        return ops.ones_like(tensor)
    if not isinstance(grad, Tensor):
        grad = ops.asarray(grad, dtype=tensor.dtype, device=tensor.device)
    if tuple(grad.shape) != tuple(tensor.shape):
        raise ValueError(f"backward(grad): grad has shape {tuple(grad.shape)}, the tensor {tuple(tensor.shape)}")
    return grad


ArrayMethods.backward = backward
