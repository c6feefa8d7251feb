"""More of torch.nn's layer classes: the losses of `losses.py`, the activations, Unfold/Fold,
ConvTranspose1d, Bilinear and EmbeddingBag, each a call of its nn.functional function with PyTorch's
constructor arguments, parameter names and initialization."""
import math

from . import functional as F
from . import init
from .layer import Layer, new_parameter
from .layers import Upsample, _Activation, _buffer_or_none, _conv_channels, _conv_parameters, _Loss


class KLDivLoss(Layer):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__()
        if reduction not in ("mean", "batchmean", "sum", "none"):
            raise ValueError(f"KLDivLoss: reduction must be 'mean', 'batchmean', 'sum' or 'none', got {reduction!r}")
        self.reduction, self.log_target = reduction, bool(log_target)

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class _MarginLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        self.margin = float(margin)


class MarginRankingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(margin, reduction=reduction)

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _buffer_or_none(self, "weight", weight)

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        self.margin, self.p, self.eps, self.swap = float(margin), p, eps, bool(swap)

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                     reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(reduction)
        self.log_input, self.full, self.eps = bool(log_input), bool(full), eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, self.eps = bool(full), eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class PairwiseDistance(Layer):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, bool(keepdim)

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class SELU(_Activation):
    def forward(self, x):
        return F.selu(x)


class CELU(Layer):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, x):
        return F.celu(x, self.alpha)


class GLU(Layer):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)


class Softmin(Layer):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmin(x, self.dim)


class Threshold(Layer):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value = threshold, value

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value)


class Hardshrink(Layer):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return F.hardshrink(x, self.lambd)


class Softshrink(Hardshrink):
    def forward(self, x):
        return F.softshrink(x, self.lambd)


class Tanhshrink(Layer):
    def forward(self, x):
        return F.tanhshrink(x)


class RReLU(Layer):
    """leaky_relu with a slope drawn in [lower, upper] per element in training, their mean in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper = lower, upper

    def forward(self, x):
        return F.rrelu(x, self.lower, self.upper, self.training)


class LocalResponseNorm(Layer):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)


class Unfold(Layer):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, x):
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(Layer):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x):
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)


def _one(value):
    return value[0] if isinstance(value, (tuple, list)) else value


class ConvTranspose1d(Layer):
    """Transposed 1-D convolution over (N, C, L); weight (in_channels, out_channels/groups, kernel_size)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"ConvTranspose1d: only padding_mode='zeros' is supported, got {padding_mode!r}")
        _conv_channels(self, "ConvTranspose1d", in_channels, out_channels, groups)
        self.kernel_size, self.stride, self.padding = _one(kernel_size), _one(stride), _one(padding)
        self.output_padding, self.dilation = _one(output_padding), _one(dilation)
        _conv_parameters(self, (self.in_channels, self.out_channels // self.groups, self.kernel_size), bias)

    def forward(self, x):
        return F.conv_transpose1d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


class Bilinear(Layer):
    """out[..., k] = x1 @ weight[k] @ x2 + bias[k]; weight (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        bound = 1 / math.sqrt(in1_features)
        self.weight = init.uniform_(new_parameter((out_features, in1_features, in2_features)), -bound, bound)
        if bias:
            self.bias = init.uniform_(new_parameter((out_features,)), -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)


class EmbeddingBag(Layer):
    """The sum, mean or max of each bag's embeddings (F.embedding_bag); weight drawn from N(0, 1)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        self.mode, self.include_last_offset, self.padding_idx = mode, bool(include_last_offset), padding_idx
        self.max_norm = max_norm
        self.weight = init.normal_(new_parameter((num_embeddings, embedding_dim)))

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, mode=self.mode,
                               per_sample_weights=per_sample_weights, include_last_offset=self.include_last_offset,
                               padding_idx=self.padding_idx)


class Softmax2d(Layer):
    """softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W)."""

    def forward(self, x):
        return F.softmax(x, -3)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


class _Pad(Layer):
    """Pad the last `dims` dims: `padding` an int or (left, right[, top, bottom[, front, back]])."""

    dims, mode = 1, "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = (int(padding),) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 2 * self.dims:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {2 * self.dims} ints, got {padding!r}")
        self.value = float(value)

    def forward(self, x):
        return F.pad(x, self.padding, self.mode, self.value)

    def extra_repr(self):
        return f"padding={self.padding}"


class ConstantPad1d(_Pad):
    pass


class ConstantPad3d(_Pad):
    dims = 3


class ZeroPad1d(_Pad):
    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad1d(_Pad):
    mode = "reflect"

    def __init__(self, padding):
        super().__init__(padding)


class ReplicationPad1d(ReflectionPad1d):
    mode = "replicate"


class CircularPad1d(ReflectionPad1d):
    mode = "circular"


class ChannelShuffle(Layer):
    """(N, g * c, ...) with its channels regrouped as (N, c * g, ...): ShuffleNet's channel shuffle."""

    def __init__(self, groups):
        super().__init__()
        self.groups = int(groups)

    def forward(self, x):
        shape = tuple(x.shape)
        grouped = x.reshape((shape[0], self.groups, shape[1] // self.groups) + shape[2:])
        return grouped.swapaxes(1, 2).reshape(shape)


__all__ = ["KLDivLoss", "MarginRankingLoss", "CosineEmbeddingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "TripletMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss", "PairwiseDistance",
           "SELU", "CELU", "GLU", "Softmin", "Threshold", "Hardshrink", "Softshrink", "Tanhshrink", "RReLU",
           "LocalResponseNorm", "Unfold", "Fold", "ConvTranspose1d", "Bilinear", "EmbeddingBag", "Softmax2d",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "ConstantPad1d", "ConstantPad3d", "ZeroPad1d",
           "ReflectionPad1d", "ReplicationPad1d", "CircularPad1d", "ChannelShuffle"]
