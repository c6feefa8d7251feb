"""`value.backward()`: one method for eager Tensors and traced Variables."""
from ..ir import Variable


def backward(value, grad=None):
    """Eagerly, add into the `.grad` of the leaves requiring grad; while tracing, into the `.grad` of the
    captured tensors that require grad (written back after each run of the Program)."""
    if isinstance(value, Variable):
        from .traced import traced_backward
        return traced_backward(value, grad)
    from .tape import eager_backward
    return eager_backward(value, grad)
