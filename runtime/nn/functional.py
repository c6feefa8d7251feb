"""`runtime.nn.functional`: neural-network functions over Tensors and traced Variables.

The heavy ones are single registered ops (defined in `runtime/ops/nn_ops.py`),
so a traced Program reads `conv2d(...)`, `layer_norm(...)`; `flatten` is a
`reshape` whose unknown dims (a dynamic batch) are read from the input at run
time. Semantics, defaults and layouts follow `torch.nn.functional`; axes are
called `axis` as in the rest of the runtime.
"""
from ..ops.nn_ops import (conv2d, conv_transpose2d, cross_entropy, dropout, gelu, layer_norm, linear,
                          log_softmax, max_pool2d, relu, sigmoid, softmax)

from ..ops.activations import elu, erf, leaky_relu, logsumexp, silu, softplus
from .. import ops as _ops
from ..ops.selection import one_hot
from .composite import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
                        avg_pool1d, avg_pool2d, embedding, max_pool1d, batch_norm, binary_cross_entropy,
                        binary_cross_entropy_with_logits, conv1d, conv3d, cosine_similarity, group_norm, hardsigmoid,
                        hardswish, hardtanh, huber_loss, instance_norm, interpolate, l1_loss, log_sigmoid, mish,
                        mse_loss, nll_loss, normalize, pad, prelu, relu6, scaled_dot_product_attention,
                        smooth_l1_loss, softsign, upsample, sequence_mask, gather_tree, temporal_shift,
                        label_smooth)

__all__ = ["relu", "gelu", "sigmoid", "softmax", "log_softmax", "linear", "conv2d", "conv_transpose2d", "max_pool2d",
           "layer_norm", "dropout", "cross_entropy", "embedding", "flatten", "elu", "erf", "leaky_relu", "logsumexp",
           "silu", "softplus", "one_hot", "adaptive_avg_pool2d", "avg_pool2d", "batch_norm",
           "binary_cross_entropy_with_logits", "conv1d", "group_norm", "huber_loss", "l1_loss", "mse_loss",
           "nll_loss", "scaled_dot_product_attention", "tanh", "binary_cross_entropy", "conv3d", "cosine_similarity",
           "hardsigmoid", "hardswish", "hardtanh", "instance_norm", "interpolate", "log_sigmoid", "mish", "normalize",
           "pad", "prelu", "relu6", "smooth_l1_loss", "softsign", "upsample", "sequence_mask", "gather_tree",
           "temporal_shift", "label_smooth", "adaptive_max_pool2d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "avg_pool1d", "max_pool1d"]


tanh = _ops.tanh


def flatten(x, start_dim=0, end_dim=-1, *, start_axis=None, stop_axis=None):
    """Merge dims start_dim..end_dim (inclusive) into one, like torch.flatten (Paddle's names
    start_axis/stop_axis too); a dynamic batch while tracing is read with a `dim` op (`x.flatten`)."""
    return x.flatten(start_dim if start_axis is None else start_axis, end_dim if stop_axis is None else stop_axis)
