"""`runtime.nn.functional`: neural-network functions over Tensors and traced Variables.

The heavy ones are single registered ops (defined in `runtime/ops/nn_ops.py`),
so a traced Program reads `conv2d(...)`, `layer_norm(...)`; `flatten` is a
`reshape` whose unknown dims (a dynamic batch) are read from the input at run
time. Semantics, defaults and layouts follow `torch.nn.functional`; axes are
called `axis` as in the rest of the runtime.
"""
import numpy as _np

from ..ops import nn_ops
from ..ops.nn_ops import conv2d, conv_transpose2d, gelu, layer_norm, linear, max_pool2d, sigmoid

from ..ops import activations
from ..ops.activations import erf, softplus
from .. import ops as _ops
from ..ops import selection
from . import composite
from .composite import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
                        avg_pool1d, avg_pool2d, embedding, max_pool1d, batch_norm, conv1d, conv3d, group_norm,
                        huber_loss, instance_norm, l1_loss, log_sigmoid, mse_loss, pad, pixel_shuffle,
                        pixel_unshuffle, prelu,
                        scaled_dot_product_attention,
                        smooth_l1_loss, softsign, upsample, sequence_mask, gather_tree, temporal_shift,
                        label_smooth)
from . import losses
from .losses import (cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, kl_div, margin_ranking_loss,
                     multilabel_soft_margin_loss, pairwise_distance, pdist, poisson_nll_loss, soft_margin_loss,
                     triplet_margin_loss)
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
           "pixel_shuffle", "pixel_unshuffle", "selu", "celu", "threshold", "hardshrink", "softshrink", "tanhshrink",
           "rrelu", "rms_norm", "conv_transpose1d", "unfold", "fold", "gumbel_softmax", "bilinear", "embedding_bag",
           "local_response_norm", "affine_grid", "grid_sample"] + losses.__all__


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


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-[t * log(p) + (1 - t) * log(1 - p)] for probabilities p, times `weight`."""
    return composite.binary_cross_entropy(input, target, weight, _legacy_reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy of sigmoid(input), computed without overflow; `pos_weight` weighs the positive
    term, `weight` each element."""
    if isinstance(weight, str):             # the old (input, target, reduction, pos_weight) order
        weight, reduction = None, weight
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        return composite.binary_cross_entropy_with_logits(input, target, reduction, pos_weight)
    loss = composite.binary_cross_entropy_with_logits(input, target, "none", pos_weight) * weight
    return composite._reduce(loss, reduction, "binary_cross_entropy_with_logits")


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


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def selu(input, inplace=False):
    return _SELU_SCALE * activations.elu(input, _SELU_ALPHA)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return activations.elu(input / alpha, 1.0) * alpha


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _ops.where(input > threshold, input, _ops.full_like(input, value))


def hardshrink(input, lambd=0.5):
    return _ops.where(_ops.abs(input) > lambd, input, _ops.zeros_like(input))


def softshrink(input, lambd=0.5):
    zero = _ops.zeros_like(input)
    return _ops.where(input > lambd, input - lambd, zero) + _ops.where(input < -lambd, input + lambd, zero)


def tanhshrink(input):
    return input - _ops.tanh(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with the mean slope (lower + upper) / 2; in training a slope drawn per element."""
    if not training:
        return activations.leaky_relu(input, (lower + upper) / 2)
    slope = _ops.rand_like(input) * (upper - lower) + lower
    return _ops.where(input >= 0, input, input * slope)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    eps = float(_np.finfo(input.dtype).eps) if eps is None else eps
    dims = tuple(range(-len(shape), 0))
    out = input * _ops.divide(1, _ops.sqrt(_ops.mean(input * input, axis=dims, keepdims=True) + eps))
    return out if weight is None else out * weight


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """conv_transpose2d over (N, C, L) as (N, C, 1, L)."""
    def one(v):
        return v[0] if isinstance(v, (tuple, list)) else v
    out = conv_transpose2d(_ops.expand_dims(input, axis=2), _ops.expand_dims(weight, axis=2), bias,
                           (1, one(stride)), (0, one(padding)), (0, one(output_padding)), groups, (1, one(dilation)))
    return _ops.squeeze(out, axis=2)


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's im2col: (N, C, H, W) to (N, C * kh * kw, L), each column one sliding window (channel
    slowest, then the kernel's rows and columns)."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_pair, (kernel_size, dilation, padding, stride))
    x = pad(input, (pw, pw, ph, ph)) if ph or pw else input
    n, c, h, w = x.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"unfold: a {kh}x{kw} kernel (dilation {dh}x{dw}) does not fit a padded {h}x{w} input")
    windows = [x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
               for i in range(kh) for j in range(kw)]
    return _ops.reshape(_ops.stack(windows, axis=2), (n, c * kh * kw, oh * ow))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """unfold's adjoint (col2im): (N, C * kh * kw, L) columns summed back into (N, C, H, W), overlaps
    added."""
    (oh_full, ow_full), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(
        _pair, (output_size, kernel_size, dilation, padding, stride))
    n, ckk, length = input.shape
    c = ckk // (kh * kw)
    h, w = oh_full + 2 * ph, ow_full + 2 * pw
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if c * kh * kw != ckk or oh * ow != length:
        raise ValueError(f"fold: input of shape {tuple(input.shape)} does not hold {kh}x{kw} windows of "
                         f"{output_size} (expected ({n}, C * {kh * kw}, {oh * ow}))")
    blocks = _ops.reshape(input, (n, c, kh * kw, oh, ow))
    out = None
    for k in range(kh * kw):
        i, j = divmod(k, kw)
        region = (slice(None), slice(None), slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                  slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
        placed = _ops.setitem(_ops.zeros((n, c, h, w), dtype=input.dtype), region, blocks[:, :, k])
        out = placed if out is None else out + placed
    return out[:, :, ph:ph + oh_full, pw:pw + ow_full]


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau); `hard`: the one-hot of its argmax, with the soft sample's
    gradient (the straight-through estimator)."""
    u = _ops.rand_like(logits)
    gumbels = -_ops.log(-_ops.log(_ops.clip(u, 1e-20, None)))
    soft = nn_ops.softmax((logits + gumbels) / tau, axis=dim)
    if not hard:
        return soft
    d = dim % soft.ndim
    top = _ops.argmax(soft, axis=d, keepdims=True)
    one = _ops.put_along_axis(_ops.zeros_like(soft), top, _ops.ones_like(top, dtype=soft.dtype), d)
    return one - _ops.stop_gradient(soft) + soft


def bilinear(input1, input2, weight, bias=None):
    """out[..., k] = input1 @ weight[k] @ input2 (+ bias[k])."""
    out = _ops.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out if bias is None else out + bias


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The sum, mean or max of each bag's embeddings: the rows of a 2-D input, or the runs of a 1-D input
    starting at `offsets`."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if max_norm is not None:
        raise NotImplementedError("embedding_bag: max_norm (renormalizing the weight in place) is not supported")
    vectors = embedding(input, weight, padding_idx)
    keep = None if padding_idx is None else _ops.astype(input != padding_idx, weight.dtype)
    if per_sample_weights is not None:
        vectors = vectors * _ops.expand_dims(per_sample_weights, axis=-1)
    if input.ndim == 2:
        if mode == "max":
            return _ops.max(vectors, axis=1)
        total = _ops.sum(vectors, axis=1)
        if mode == "sum":
            return total
        count = input.shape[1] if keep is None else _ops.sum(keep, axis=1, keepdims=True)
        return total / _ops.maximum(count, 1) if keep is not None else total / count
    if offsets is None:
        raise ValueError("embedding_bag: a 1-D input needs offsets")
    if mode == "max":
        raise NotImplementedError("embedding_bag: mode='max' with offsets is not supported; pad the bags "
                                  "into a 2-D input")
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    positions = _ops.arange(input.shape[0], dtype="int64")
    bag = _ops.searchsorted(_ops.astype(offsets, "int64"), positions, side="right") - 1
    index = _ops.broadcast_to(_ops.expand_dims(bag, axis=-1), tuple(vectors.shape))
    total = _ops.scatter_add(_ops.zeros((bags, weight.shape[1]), dtype=weight.dtype), 0, index, vectors)
    if mode == "sum":
        return total
    ones = _ops.ones((input.shape[0],), dtype=weight.dtype) if keep is None else keep
    count = _ops.scatter_add(_ops.zeros((bags,), dtype=weight.dtype), 0, bag, ones)
    return total / _ops.expand_dims(_ops.maximum(count, 1), axis=-1)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta (dim 1 of (N, C, ...))."""
    squares = input * input
    c = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    shape = tuple(input.shape)
    padded = _ops.concat([_ops.zeros((shape[0], before) + shape[2:], dtype=input.dtype), squares,
                          _ops.zeros((shape[0], after) + shape[2:], dtype=input.dtype)], axis=1)
    total = None
    for j in range(size):
        part = padded[:, j:j + c]
        total = part if total is None else total + part
    return input / (total * (alpha / size) + k) ** beta


def affine_grid(theta, size, align_corners=False):
    """The sampling grid (N, H, W, 2) of 2-D affine matrices theta (N, 2, 3) over an output of `size`
    (N, C, H, W), in the normalized [-1, 1] coordinates grid_sample reads."""
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid: only 2-D (a size of 4 dims), got {tuple(size)}")
    n, _, h, w = size

    def steps(count):
        line = _np.linspace(-1, 1, count) if count > 1 else _np.zeros(1)
        return line if align_corners else line * (count - 1) / count
    xs, ys = _np.meshgrid(steps(w), steps(h))
    base = _np.stack([xs, ys, _np.ones_like(xs)], axis=-1).reshape(1, h * w, 3).astype(_np.dtype(theta.dtype))
    grid = _ops.matmul(_ops.creation.tensor(base), _ops.permute_dims(theta, (0, 2, 1)))
    return _ops.reshape(grid, (n, h, w, 2))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input (N, C, H, W) read at grid (N, Ho, Wo, 2)'s normalized (x, y) points in [-1, 1]: 'bilinear' or
    'nearest', outside points 'zeros' or clamped to the 'border'. Gradients reach input and grid."""
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode must be 'bilinear' or 'nearest', got {mode!r}")
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"grid_sample: padding_mode must be 'zeros' or 'border', got {padding_mode!r}")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise ValueError(f"grid_sample: expects input (N, C, H, W) and grid (N, Ho, Wo, 2), got "
                         f"{tuple(input.shape)} and {tuple(grid.shape)}")
    n, c, h, w = input.shape
    _, ho, wo, _ = grid.shape
    grid = _ops.astype(grid, input.dtype)

    def pixel(coord, size):
        if align_corners:
            at = (coord + 1) * ((size - 1) / 2)
        else:
            at = ((coord + 1) * size - 1) / 2
        return _ops.clip(at, 0, size - 1) if padding_mode == "border" else at
    ix, iy = pixel(grid[..., 0], w), pixel(grid[..., 1], h)
    flat = _ops.reshape(input, (n, c, h * w))

    def corner(x, y):
        """input at integer points (x, y) (N, Ho, Wo), 0 outside, as (N, C, Ho, Wo)."""
        inside = (x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1)
        xi = _ops.astype(_ops.clip(x, 0, w - 1), "int64")
        yi = _ops.astype(_ops.clip(y, 0, h - 1), "int64")
        where = _ops.reshape(yi * w + xi, (n, 1, ho * wo))
        values = _ops.take_along_axis(flat, _ops.broadcast_to(where, (n, c, ho * wo)), axis=2)
        values = _ops.reshape(values, (n, c, ho, wo))
        return values * _ops.expand_dims(_ops.astype(inside, input.dtype), axis=1)
    if mode == "nearest":
        return corner(_ops.round(ix), _ops.round(iy))
    x0, y0 = _ops.floor(ix), _ops.floor(iy)
    wx, wy = ix - x0, iy - y0

    def weight(v):
        return _ops.expand_dims(v, axis=1)
    return (corner(x0, y0) * weight((1 - wx) * (1 - wy)) + corner(x0 + 1, y0) * weight(wx * (1 - wy))
            + corner(x0, y0 + 1) * weight((1 - wx) * wy) + corner(x0 + 1, y0 + 1) * weight(wx * wy))


# torch.nn.functional names with no function here, and what to use instead
NOT_PORTED = {
    "ctc_loss": "a loop over time with rt.logsumexp",
    "multi_head_attention_forward": "nn.MultiheadAttention",
}


__getattr__ = _module_getattr("runtime.nn.functional", "torch.nn.functional", NOT_PORTED)
