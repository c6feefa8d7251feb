"""`runtime.nn.utils`: gradient clipping with PyTorch's names (`clip_grad_norm_`, `clip_grad_value_`).

Each reads the parameters' `.grad` and sets a new `.grad`, with runtime ops only, so it runs eagerly
after `loss.backward()` or inside a static training step between `loss.backward()` and `opt.step()`
(the Program computes the clipped gradients that the step then reads).
"""
import math

from .. import ops
from ..autodiff.tape import no_grad
from ..tensor import EagerTensor, Tensor
from ..torch_methods import module_getattr as _module_getattr


def _with_grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so that their joint `norm_type`-norm is at most `max_norm`
    (by max_norm / (norm + 1e-6), as PyTorch); returns the norm before clipping (a 0-d tensor)."""
    params = _with_grads(parameters)
    if not params:
        return ops.zeros(())
    order = float(norm_type)
    with no_grad():
        grads = [p.grad for p in params]
        norms = ops.stack([ops.decompositions.vector_norm(g, ord=order) for g in grads])
        total = ops.max(norms) if math.isinf(order) else ops.decompositions.vector_norm(norms, ord=order)
        if error_if_nonfinite and isinstance(total, EagerTensor) and not math.isfinite(float(total)):
            raise RuntimeError(f"the total norm of order {norm_type} of the gradients is non-finite, so it cannot "
                               "be clipped (error_if_nonfinite=True)")
        coef = ops.clip(float(max_norm) / (total + 1e-6), None, 1.0)
        for p, g in zip(params, grads):
            p.grad = g * ops.astype(coef, g.dtype)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clip every gradient element into [-clip_value, clip_value]."""
    with no_grad():
        for p in _with_grads(parameters):
            p.grad = ops.clip(p.grad, -float(clip_value), float(clip_value))


def parameters_to_vector(parameters):
    """All parameters flattened into one vector, in order."""
    return ops.concat([ops.reshape(p, (-1,)) for p in parameters])


__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector"]

# torch.nn.utils names with no function here, and what to use instead
NOT_PORTED = {
    "rnn": "pass lengths= (one per sequence) to nn.LSTM / nn.GRU / nn.RNN instead of packing sequences",
    "weight_norm": "compute the weight from g and v in forward: g * v / v.norm(dim=..., keepdim=True)",
    "spectral_norm": "not supported",
    "parametrizations": "compute the parametrized weight in forward",
    "prune": "multiply the weight by a mask in forward",
}


__getattr__ = _module_getattr("runtime.nn.utils", "torch.nn.utils", NOT_PORTED)
