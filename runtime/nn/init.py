"""Parameter initializers (PyTorch's `nn.init` names and formulas), in place.

Every draw comes from `runtime.default_rng()`, so `rt.seed(n)` makes layer
construction reproducible. Samples are drawn in float64 on the host, then cast
to the parameter's dtype and placed on its device.
"""
import math

import numpy as np

from ..rng import default_rng
from ..shape_text import shape_text
from ..tensor import EagerTensor


def _fill(tensor, values):
    if isinstance(tensor, np.ndarray):
        tensor[...] = values        # a Tensor's `.data` (PyTorch code writes `init.normal_(m.weight.data, ...)`)
        return tensor
    if not isinstance(tensor, EagerTensor):
        raise TypeError(f"initializers fill a runtime Tensor/Parameter, got {type(tensor).__name__}")
    tensor.array = tensor.backend.asarray(np.asarray(values).astype(tensor.dtype, copy=False))
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "identity"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"unsupported nonlinearity {nonlinearity!r}")


def calculate_fan_in_and_fan_out(shape):
    """(fan_in, fan_out) of a weight of `shape`: (out, in, *kernel) as in PyTorch."""
    shape = tuple(shape)
    if len(shape) < 2:
        raise ValueError(f"fan in and fan out need a weight with at least 2 dims, got shape {shape_text(shape)}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(shape, mode):
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")


def uniform_(tensor, a=0.0, b=1.0):
    return _fill(tensor, default_rng().uniform(a, b, size=tensor.shape))


def normal_(tensor, mean=0.0, std=1.0):
    return _fill(tensor, default_rng().normal(mean, std, size=tensor.shape))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """Normal(mean, std) samples redrawn until they fall in [a, b] (PyTorch's truncated normal)."""
    rng = default_rng()
    values = rng.normal(mean, std, size=tensor.shape)
    outside = (values < a) | (values > b)
    while outside.any():
        values[outside] = rng.normal(mean, std, size=int(outside.sum()))
        outside = (values < a) | (values > b)
    return _fill(tensor, values)


def orthogonal_(tensor, gain=1.0):
    """A (semi-)orthogonal matrix over the first dim and the rest flattened, scaled by gain."""
    rows = tensor.shape[0]
    cols = int(np.prod(tensor.shape[1:])) if len(tensor.shape) > 1 else 1
    flat = default_rng().normal(0.0, 1.0, size=(rows, cols))
    q, r = np.linalg.qr(flat.T if rows < cols else flat)
    q = q * np.sign(np.diag(r))
    return _fill(tensor, gain * (q.T if rows < cols else q).reshape(tensor.shape))


def eye_(tensor):
    return _fill(tensor, np.eye(*tensor.shape))


def constant_(tensor, value):
    return _fill(tensor, np.full(tensor.shape, value))


def zeros_(tensor):
    return constant_(tensor, 0)


def ones_(tensor):
    return constant_(tensor, 1)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al.)."""
    fan = _fan(tensor.shape, mode)
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan) if fan else 0.0
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    fan = _fan(tensor.shape, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0
    return normal_(tensor, 0.0, std)


def xavier_uniform_(tensor, gain=1.0):
    """U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor.shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor.shape)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return normal_(tensor, 0.0, std)


def fan_in_uniform_(tensor, fan_in):
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for Linear and Conv biases."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return uniform_(tensor, -bound, bound)
