"""`runtime.nn.functional`: neural-network functions over Tensors and traced Variables.

The heavy ones are single registered ops (defined in `runtime/ops/nn_ops.py`),
so a traced Program reads `conv2d(...)`, `layer_norm(...)`; `flatten` is a
`reshape` whose unknown dims (a dynamic batch) are read from the input at run
time. Semantics, defaults and layouts follow `torch.nn.functional`; axes are
called `axis` as in the rest of the runtime.
"""
from ..ops import nn_ops
from ..ops.nn_ops import conv2d, conv_transpose2d, gelu, layer_norm, linear, max_pool2d, sigmoid

from ..ops import activations
from ..ops.activations import erf, softplus
from .. import ops as _ops
from ..ops import selection
from . import composite
from .composite import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
                        avg_pool1d, avg_pool2d, embedding, max_pool1d, batch_norm, binary_cross_entropy,
                        binary_cross_entropy_with_logits, conv1d, conv3d, group_norm,
                        huber_loss, instance_norm, l1_loss, log_sigmoid, mse_loss, pad, pixel_shuffle,
                        pixel_unshuffle, prelu,
                        scaled_dot_product_attention,
                        smooth_l1_loss, softsign, upsample, sequence_mask, gather_tree, temporal_shift,
                        label_smooth)
from ..torch_methods import module_getattr as _module_getattr
from ..tracer import Tracer

__all__ = ["relu", "gelu", "sigmoid", "softmax", "log_softmax", "linear", "conv2d", "conv_transpose2d", "max_pool2d",
           "layer_norm", "dropout", "cross_entropy", "embedding", "flatten", "elu", "erf", "leaky_relu", "logsumexp",
           "silu", "softplus", "one_hot", "adaptive_avg_pool2d", "avg_pool2d", "batch_norm",
           "binary_cross_entropy_with_logits", "conv1d", "group_norm", "huber_loss", "l1_loss", "mse_loss",
           "nll_loss", "scaled_dot_product_attention", "tanh", "binary_cross_entropy", "conv3d", "cosine_similarity",
           "hardsigmoid", "hardswish", "hardtanh", "instance_norm", "interpolate", "log_sigmoid", "mish", "normalize",
           "pad", "prelu", "relu6", "smooth_l1_loss", "softsign", "upsample", "sequence_mask", "gather_tree",
           "temporal_shift", "label_smooth", "adaptive_max_pool2d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "avg_pool1d", "max_pool1d", "logsigmoid", "softmin", "glu", "dropout1d", "dropout2d", "dropout3d",
           "pixel_shuffle", "pixel_unshuffle"]


tanh = _ops.tanh
logsigmoid = log_sigmoid     # PyTorch's name


# --- PyTorch's signatures: dim= (axis= too), inplace= accepted (tensors are values here) ---------------------

def _axis(dim, axis, default):
    if dim is not None and axis is not None:
        raise TypeError("give dim= (PyTorch's spelling) or axis=, not both")
    return default if dim is None and axis is None else (dim if dim is not None else axis)


def softmax(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    """softmax along `dim` (the last dim by default)."""
    x = input if dtype is None else _ops.astype(input, dtype)
    return nn_ops.softmax(x, axis=_axis(dim, axis, -1))


def softmin(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    return softmax(-input, dim, dtype=dtype, axis=axis)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    x = input if dtype is None else _ops.astype(input, dtype)
    return nn_ops.log_softmax(x, axis=_axis(dim, axis, -1))


def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=False):
    return activations.logsumexp(input, axis=_axis(dim, axis, None), keepdims=bool(keepdim or keepdims))


def glu(input, dim=-1):
    """a * sigmoid(b) for the two halves of `dim`."""
    a, b = input.chunk(2, dim)
    return a * sigmoid(b)


def relu(input, inplace=False):
    return nn_ops.relu(input)


def relu6(input, inplace=False):
    return composite.relu6(input)


def elu(input, alpha=1.0, inplace=False):
    return activations.elu(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return activations.leaky_relu(input, negative_slope)


def silu(input, inplace=False):
    return activations.silu(input)


def mish(input, inplace=False):
    return composite.mish(input)


def hardswish(input, inplace=False):
    return composite.hardswish(input)


def hardsigmoid(input, inplace=False):
    return composite.hardsigmoid(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return composite.hardtanh(input, min_val, max_val)


def dropout(input, p=0.5, training=True, inplace=False):
    return nn_ops.dropout(input, p, training)


def channel_dropout(input, p=0.5, training=True):
    """Zero whole channels (dim 1 of (N, C, ...)) with probability p, scaling the rest by 1/(1-p): one mask
    value per (sample, channel), drawn like dropout's."""
    if not training or p == 0:
        return input
    static = input.static_shape if isinstance(input, Tracer) else tuple(input.shape)
    mask_shape = tuple(input.shape[:2]) + (1,) * (len(static) - 2)
    keep = nn_ops.dropout(_ops.ones(mask_shape, dtype=input.dtype), p, True)
    return input * keep


def dropout1d(input, p=0.5, training=True, inplace=False):
    return channel_dropout(input, p, training)


dropout2d = dropout3d = dropout1d


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None, *, axis=None):
    return composite.normalize(input, p, _axis(None if axis is not None else dim, axis, 1), eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8, *, axis=None):
    return composite.cosine_similarity(x1, x2, _axis(None if axis is not None else dim, axis, 1), eps)


def one_hot(tensor, num_classes=-1, *, dtype="int64"):
    """PyTorch's one_hot: int64 (rt.one_hot's default is float32); num_classes=-1 reads max + 1, which
    needs the value, so only eagerly."""
    if num_classes == -1:
        if isinstance(tensor, Tracer):
            raise ValueError("one_hot: num_classes=-1 reads the largest class from the values, which a traced "
                             "tensor does not have: pass num_classes")
        num_classes = int(tensor.max().item()) + 1
    return selection.one_hot(tensor, num_classes, dtype=dtype)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    return composite.interpolate(input, size, scale_factor, mode, align_corners)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return composite.nll_loss(input, target, _legacy_reduction(size_average, reduce, reduction), ignore_index,
                              weight)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """PyTorch's cross_entropy: logits (N, C) or (N, C, d1, ...), class indices or class probabilities,
    `ignore_index`, `label_smoothing`, per-class `weight` (with class indices)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        return nn_ops.cross_entropy(input, target, reduction, ignore_index, label_smoothing)
    if label_smoothing:
        raise NotImplementedError("cross_entropy: weight= together with label_smoothing= is not supported; "
                                  "give one of them")
    if target.dtype.kind == "f":
        raise NotImplementedError("cross_entropy: weight= with probability targets is not supported")
    return composite.nll_loss(nn_ops.log_softmax(input, axis=1), target, reduction, ignore_index, weight)


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average/reduce flags, as it maps them."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def flatten(x, start_dim=0, end_dim=-1, *, start_axis=None, stop_axis=None):
    """Merge dims start_dim..end_dim (inclusive) into one, like torch.flatten (Paddle's names
    start_axis/stop_axis too); a dynamic batch while tracing is read with a `dim` op (`x.flatten`)."""
    return x.flatten(start_dim if start_axis is None else start_axis, end_dim if stop_axis is None else stop_axis)


# torch.nn.functional names with no function here, and what to use instead
NOT_PORTED = {
    "grid_sample": "index with rt.take_along_axis on computed integer coordinates",
    "affine_grid": "rt.meshgrid and a matmul with theta",
    "unfold": "slices stacked with rt.stack (or conv2d with an identity kernel)",
    "fold": "rt.scatter_add of the patches",
    "ctc_loss": "a loop over time with rt.logsumexp",
    "kl_div": "(target * (rt.log(target) - input)).sum() / N (reduction='batchmean')",
    "gumbel_softmax": "softmax((logits - rt.log(-rt.log(rt.rand(*logits.shape)))) / tau, dim)",
    "multi_head_attention_forward": "nn.MultiheadAttention",
    "embedding_bag": "embedding(...).sum(dim=1)",
    "local_response_norm": "compose it from avg_pool and pow",
    "margin_ranking_loss": "rt.maximum(0, -y * (x1 - x2) + margin).mean()",
    "triplet_margin_loss": "rt.maximum(d(a, p) - d(a, n) + margin, 0).mean()",
}


__getattr__ = _module_getattr("runtime.nn.functional", "torch.nn.functional", NOT_PORTED)
