"""Gradient rules of the spectral ops (runtime/ops/spectral.py)."""
from ..dispatch import apply
from ..registry import facet, get_op
from .support import no_rule_yet, nondifferentiable, takes_gradient

nondifferentiable("fftfreq")
no_rule_yet("complex cotangents: the convention for complex inputs and outputs is not settled", "fft")


@facet("fftshift", "vjp")
def _fftshift_vjp(g, inputs, outputs, axes=None, inverse=False):
    """A shift is undone by the opposite shift."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    return (apply(get_op("fftshift"), (g,), {"axes": axes, "inverse": not inverse}),)
