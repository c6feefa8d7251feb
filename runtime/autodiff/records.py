"""What the tape and the engine share, with no imports: the tape sits below the ops that feed it."""


class Record:
    """One op application: `outputs = opdef(*inputs, **attrs)`; keys name the values for the engine."""

    __slots__ = ("opdef", "inputs", "outputs", "attrs", "in_keys", "out_keys", "single", "origin")

    def __init__(self, opdef, inputs, outputs, attrs, in_keys, out_keys, single, origin=None):
        self.opdef, self.inputs, self.outputs, self.attrs = opdef, inputs, outputs, attrs
        self.in_keys, self.out_keys, self.single, self.origin = in_keys, out_keys, single, origin


def carries_gradient(value):
    """Whether a gradient can flow through this value: float or complex, dense or tensor array."""
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dtype.kind in "fc"
