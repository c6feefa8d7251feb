"""The standard layers, with PyTorch's arguments, parameter layouts and default initialization.

Each layer's forward is one call into `nn.functional`; the layer holds the
configuration and the Parameters (float32, on the CPU until `.to(device)`).
"""
import math

import numpy as np

from . import composite, functional as F
from . import init
from .layer import Layer, new_parameter
from ..ops.nn_ops import conv_padding, int_pair, positive_pair


class Linear(Layer):
    """y = x @ weight.T + bias; weight (out_features, in_features), kaiming-uniform initialized."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = new_parameter((self.out_features, self.in_features))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            self.bias = init.fan_in_uniform_(new_parameter((self.out_features,)), self.in_features)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _conv_channels(layer, name, in_channels, out_channels, groups):
    """Check and set a convolution's channel counts (both divisible by groups)."""
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must both "
                         f"be divisible by groups ({groups})")
    layer.in_channels, layer.out_channels, layer.groups = int(in_channels), int(out_channels), int(groups)


def _conv_parameters(layer, shape, bias):
    """A convolution's weight of `shape` and its bias, initialized as PyTorch does (kaiming/fan-in uniform)."""
    layer.weight = init.kaiming_uniform_(new_parameter(shape), a=math.sqrt(5))
    fan_in = init.calculate_fan_in_and_fan_out(shape)[0]
    if bias:
        layer.bias = init.fan_in_uniform_(new_parameter((layer.out_channels,)), fan_in)
    else:
        layer.register_parameter("bias", None)


def _padding_mode(mode, padding, what):
    """PyTorch's padding_mode: 'zeros', or 'reflect'/'replicate'/'circular' (the input padded by that mode)."""
    if mode != "zeros" and mode not in composite._PAD_MODES or mode == "constant":
        raise ValueError(f"{what}: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if mode != "zeros" and isinstance(padding, str):
        raise NotImplementedError(f"{what}: padding={padding!r} with padding_mode={mode!r} is not supported: give the "
                                  "padding as ints")
    return mode


class Conv2D(Layer):
    """2-D convolution over NCHW input; weight (out_channels, in_channels/groups, kh, kw)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros"):
        super().__init__()
        _conv_channels(self, "Conv2D", in_channels, out_channels, groups)
        self.padding_mode = _padding_mode(padding_mode, padding, "Conv2D")
        self.kernel_size = positive_pair(kernel_size, "Conv2D kernel_size")
        self.stride = positive_pair(stride, "Conv2D stride")
        self.dilation = positive_pair(dilation, "Conv2D dilation")
        conv_padding(padding, self.kernel_size, self.dilation, self.stride, "Conv2D")     # validate now
        self.padding = padding if isinstance(padding, str) else int_pair(padding, "Conv2D padding")
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        _conv_parameters(self, shape, bias)

    def forward(self, x):
        if self.padding_mode != "zeros":        # PyTorch pads by the mode first, then convolves unpadded
            (ph, pw) = self.padding
            x = composite.pad(x, [pw, pw, ph, ph], self.padding_mode)
            return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        return text + ("" if self.bias is not None else ", bias=False")


class MaxPool2D(Layer):
    """Max over kernel_size windows of NCHW input (stride defaults to kernel_size)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        super().__init__()
        self.kernel_size = positive_pair(kernel_size, "MaxPool2D kernel_size")
        self.stride = self.kernel_size if stride is None else positive_pair(stride, "MaxPool2D stride")
        self.padding = int_pair(padding, "MaxPool2D padding")
        self.dilation = positive_pair(dilation, "MaxPool2D dilation")
        self.ceil_mode = bool(ceil_mode)

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Activation(Layer):
    """An activation layer; `inplace=True` (PyTorch's memory saving) is accepted and changes nothing,
    as tensors are values here."""

    def __init__(self, inplace=False):
        super().__init__()


class ReLU(_Activation):
    def forward(self, x):
        return F.relu(x)


class GELU(Layer):
    """GELU, exact (erf) by default; approximate="tanh" for the tanh formula."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return "" if self.approximate == "none" else f"approximate={self.approximate!r}"


class Sigmoid(Layer):
    def forward(self, x):
        return F.sigmoid(x)


class Softmax(Layer):
    def __init__(self, axis=-1, *, dim=None):
        super().__init__()
        self.axis = axis if dim is None else dim

    def forward(self, x):
        return F.softmax(x, self.axis)

    def extra_repr(self):
        return f"axis={self.axis}"


class Flatten(Layer):
    """Merge dims start_dim..end_dim (PyTorch's names; Paddle's start_axis/stop_axis too); the default
    keeps the (possibly dynamic) batch dim."""

    def __init__(self, start_dim=1, end_dim=-1, *, start_axis=None, stop_axis=None):
        super().__init__()
        self.start_dim = start_dim if start_axis is None else start_axis
        self.end_dim = end_dim if stop_axis is None else stop_axis

    def forward(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Layer):
    """Split dim `dim` into `unflattened_size` (PyTorch's nn.Unflatten)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = int(dim), tuple(unflattened_size)

    def forward(self, x):
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Dropout(Layer):
    """Zero elements with probability p while training (scaling the rest by 1/(1-p)); identity in eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, got {p!r}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class _ChannelDropout(Dropout):
    """Zero whole channels (dim 1) with probability p while training, scaling the rest by 1/(1-p)."""

    def forward(self, x):
        return F.channel_dropout(x, self.p, self.training)


class Dropout1d(_ChannelDropout):
    pass


class Dropout2d(_ChannelDropout):
    pass


class Dropout3d(_ChannelDropout):
    pass


class RMSNorm(Layer):
    """x / sqrt(mean(x**2 over the trailing normalized_shape dims) + eps) * weight (PyTorch's nn.RMSNorm;
    eps=None is the dtype's machine epsilon)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = init.ones_(new_parameter(self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        eps = float(np.finfo(x.dtype).eps) if self.eps is None else self.eps
        dims = tuple(range(-len(self.normalized_shape), 0))
        out = x * ((x * x).mean(dim=dims, keepdim=True) + eps).rsqrt()
        return out if self.weight is None else out * self.weight

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class LayerNorm(Layer):
    """Normalize over the trailing normalized_shape dims; weight ones and bias zeros to start."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps = float(eps)
        if elementwise_affine:
            self.weight = init.ones_(new_parameter(self.normalized_shape))
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = new_parameter(self.normalized_shape)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class Embedding(Layer):
    """A lookup table: weight (num_embeddings, embedding_dim) ~ N(0, 1); padding_idx's row starts at zero."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for "
                                 f"{self.num_embeddings} embeddings")
            padding_idx %= self.num_embeddings
        self.padding_idx = padding_idx
        self.weight = init.normal_(new_parameter((self.num_embeddings, self.embedding_dim)))
        if padding_idx is not None:
            self.weight[padding_idx] = 0.0

    def forward(self, ids):
        return composite.embedding(ids, self.weight, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is `embeddings` (2-D); frozen (no gradient) unless freeze=False."""
        if max_norm is not None or sparse or scale_grad_by_freq:
            raise NotImplementedError("Embedding.from_pretrained: max_norm, sparse and scale_grad_by_freq are "
                                      "not supported")
        rows, cols = embeddings.shape
        layer = cls(rows, cols, padding_idx=padding_idx)
        layer.weight.array = layer.weight.backend.asarray(np.array(embeddings, dtype=layer.weight.dtype))
        layer.weight.requires_grad = not freeze
        return layer

    def extra_repr(self):
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class Identity(Layer):
    """Returns its input (a placeholder where a model has an optional piece)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Conv1D(Layer):
    """1-D convolution over (N, C, L) input; weight (out_channels, in_channels/groups, kernel_size)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros"):
        super().__init__()
        _conv_channels(self, "Conv1D", in_channels, out_channels, groups)
        self.padding_mode = _padding_mode(padding_mode, padding, "Conv1D")
        self.kernel_size, self.stride, self.dilation = int(kernel_size), int(stride), int(dilation)
        self.padding = padding if isinstance(padding, str) else int(padding)
        shape = (self.out_channels, self.in_channels // self.groups, self.kernel_size)
        _conv_parameters(self, shape, bias)

    def forward(self, x):
        if self.padding_mode != "zeros":
            x = composite.pad(x, [self.padding, self.padding], self.padding_mode)
            return composite.conv1d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return composite.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class AvgPool2D(Layer):
    """Mean over kernel_size windows of NCHW input (stride defaults to kernel_size)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = positive_pair(kernel_size, "AvgPool2D kernel_size")
        self.stride = self.kernel_size if stride is None else positive_pair(stride, "AvgPool2D stride")
        self.padding = int_pair(padding, "AvgPool2D padding")
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)

    def forward(self, x):
        return composite.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2D(Layer):
    """Mean over the windows that split H and W into output_size cells."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return composite.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2D(Layer):
    """Max over the windows that split H and W into output_size cells."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return composite.adaptive_max_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1D(AdaptiveMaxPool2D):
    def forward(self, x):
        return composite.adaptive_avg_pool1d(x, self.output_size)


class AdaptiveMaxPool1D(AdaptiveMaxPool2D):
    def forward(self, x):
        return composite.adaptive_max_pool1d(x, self.output_size)


class MaxPool1D(Layer):
    """Max over kernel_size windows of (N, C, L) input (stride defaults to kernel_size)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.padding, self.dilation = int(kernel_size), int(padding), int(dilation)
        self.stride = self.kernel_size if stride is None else int(stride)
        self.ceil_mode = bool(ceil_mode)

    def forward(self, x):
        return composite.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1D(Layer):
    """Mean over kernel_size windows of (N, C, L) input (stride defaults to kernel_size)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size, self.padding = int(kernel_size), int(padding)
        self.stride = self.kernel_size if stride is None else int(stride)
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)

    def forward(self, x):
        return composite.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class ConvTranspose2D(Layer):
    """Transposed 2-D convolution over NCHW input; weight (in_channels, out_channels/groups, kh, kw)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1):
        super().__init__()
        _conv_channels(self, "ConvTranspose2D", in_channels, out_channels, groups)
        self.kernel_size = positive_pair(kernel_size, "ConvTranspose2D kernel_size")
        self.stride = positive_pair(stride, "ConvTranspose2D stride")
        self.padding = int_pair(padding, "ConvTranspose2D padding")
        self.output_padding = int_pair(output_padding, "ConvTranspose2D output_padding")
        self.dilation = positive_pair(dilation, "ConvTranspose2D dilation")
        shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        _conv_parameters(self, shape, bias)

    def forward(self, x):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


# --- activations (each a call of its nn.functional function) ----------------------------------------------

class Tanh(Layer):
    def forward(self, x):
        return F.tanh(x)


class ReLU6(_Activation):
    def forward(self, x):
        return composite.relu6(x)


class Hardswish(_Activation):
    def forward(self, x):
        return composite.hardswish(x)


class Hardsigmoid(_Activation):
    def forward(self, x):
        return composite.hardsigmoid(x)


class Softsign(Layer):
    def forward(self, x):
        return composite.softsign(x)


class LogSigmoid(Layer):
    def forward(self, x):
        return composite.log_sigmoid(x)


class Mish(_Activation):
    def forward(self, x):
        return composite.mish(x)


class SiLU(_Activation):
    def forward(self, x):
        return F.silu(x)


class Hardtanh(Layer):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val >= max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must be less than max_val ({max_val})")
        self.min_val, self.max_val = float(min_val), float(max_val)

    def forward(self, x):
        return composite.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class LeakyReLU(Layer):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class ELU(Layer):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, x):
        return F.elu(x, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class Softplus(Layer):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class LogSoftmax(Layer):
    def __init__(self, axis=-1, *, dim=None):
        super().__init__()
        self.axis = axis if dim is None else dim

    def forward(self, x):
        return F.log_softmax(x, self.axis)

    def extra_repr(self):
        return f"axis={self.axis}"


class PReLU(Layer):
    """max(0, x) + weight * min(0, x): one learned slope, or one per channel (num_parameters = channels)."""

    def __init__(self, num_parameters=1, init=0.25):
        super().__init__()
        self.num_parameters = int(num_parameters)
        self.weight = new_parameter((self.num_parameters,))
        self.weight[...] = float(init)

    def forward(self, x):
        return composite.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


# --- padding, resizing, 3-D convolution, similarity ----------------------------------------------------------

class Pad2D(Layer):
    """Pad the last two dims of NCHW input: `padding` an int or [left, right, top, bottom]; mode 'constant'
    (with `value`), 'reflect', 'replicate' or 'circular'."""

    def __init__(self, padding, mode="constant", value=0.0):
        super().__init__()
        padding = [int(padding)] * 4 if isinstance(padding, (int, np.integer)) else [int(p) for p in padding]
        if len(padding) != 4:
            raise ValueError(f"Pad2D: padding must be an int or [left, right, top, bottom], got {padding!r}")
        if mode not in composite._PAD_MODES:
            raise ValueError(f"Pad2D: mode must be one of {', '.join(composite._PAD_MODES)}, got {mode!r}")
        self.padding, self.mode, self.value = padding, mode, float(value)

    def forward(self, x):
        return composite.pad(x, self.padding, self.mode, self.value)

    def extra_repr(self):
        return f"padding={self.padding}, mode={self.mode!r}" + (f", value={self.value}" if self.value else "")


class ZeroPad2D(Pad2D):
    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad2d(Pad2D):
    """PyTorch's nn.ReflectionPad2d: `padding` an int or (left, right, top, bottom)."""

    def __init__(self, padding):
        super().__init__(padding, "reflect")


class ReplicationPad2d(Pad2D):
    """PyTorch's nn.ReplicationPad2d: `padding` an int or (left, right, top, bottom)."""

    def __init__(self, padding):
        super().__init__(padding, "replicate")


class ConstantPad2d(Pad2D):
    """PyTorch's nn.ConstantPad2d(padding, value)."""

    def __init__(self, padding, value):
        super().__init__(padding, "constant", value)


class PixelShuffle(Layer):
    """PyTorch's nn.PixelShuffle: (N, C*r*r, H, W) -> (N, C, H*r, W*r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = int(upscale_factor)

    def forward(self, x):
        return composite.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Layer):
    """PyTorch's nn.PixelUnshuffle: (N, C, H*r, W*r) -> (N, C*r*r, H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = int(downscale_factor)

    def forward(self, x):
        return composite.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Upsample(Layer):
    """Resize the spatial dims: nn.functional.interpolate with this layer's size/scale_factor/mode."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, x):
        return composite.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class Conv3D(Layer):
    """3-D convolution over (N, C, D, H, W) input; weight (out_channels, in_channels/groups, kd, kh, kw)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        _conv_channels(self, "Conv3D", in_channels, out_channels, groups)
        self.kernel_size = composite._triple(kernel_size, "kernel_size")
        self.stride = composite._triple(stride, "stride")
        self.padding = padding if isinstance(padding, str) else composite._triple(padding, "padding")
        self.dilation = composite._triple(dilation, "dilation")
        if min(self.kernel_size + self.stride + self.dilation) < 1:
            raise ValueError("Conv3D: kernel_size, stride and dilation must be positive")
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        _conv_parameters(self, shape, bias)

    def forward(self, x):
        return composite.conv3d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class CosineSimilarity(Layer):
    def __init__(self, axis=1, eps=1e-8, *, dim=None):
        super().__init__()
        self.axis, self.eps = (axis if dim is None else dim), eps

    def forward(self, x1, x2):
        return composite.cosine_similarity(x1, x2, self.axis, self.eps)


# --- losses (each a call of its nn.functional function, with the reduction) ----------------------------------------

class _Loss(Layer):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    def forward(self, input, target):
        return composite.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return composite.l1_loss(input, target, self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = float(beta)

    def forward(self, input, target):
        return composite.smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = float(delta)

    def forward(self, input, target):
        return composite.huber_loss(input, target, self.reduction, self.delta)


def _buffer_or_none(layer, name, value):
    """A loss's tensor option as PyTorch keeps it: a buffer (in state_dict), or None."""
    if value is not None:
        layer.register_buffer(name, value)
    else:
        setattr(layer, name, None)


class BCELoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        _buffer_or_none(self, "weight", weight)

    def forward(self, input, target):
        return composite.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        if isinstance(weight, str):          # this class's old (reduction, pos_weight) order
            weight, reduction = None, weight
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        _buffer_or_none(self, "weight", weight)
        _buffer_or_none(self, "pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class _WeightedLoss(_Loss):
    """PyTorch's signature: per-class `weight` (a buffer, in state_dict as PyTorch keeps it) and the
    deprecated size_average/reduce flags."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.ignore_index = int(ignore_index)
        _buffer_or_none(self, "weight", weight)


class NLLLoss(_WeightedLoss):
    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, ignore_index, reduce, reduction)
        self.label_smoothing = float(label_smoothing)

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


Conv2DTranspose = ConvTranspose2D      # Paddle's name
