"""Functions built from the runtime's ops (no kernel of their own): pooling by averaging, batch and
group normalization, 1-D convolution, attention, the recurrent cells and the common losses.

Composed of registered ops, they run eagerly, trace into ordinary Programs and
work on NumPy and CuPy alike; semantics and defaults are PyTorch's
(`torch.nn.functional`), axes are called `axis` as elsewhere in the runtime.
"""
import math

import numpy as np

from .. import ops as rt
from ..ir import Variable
from ..ops.nn_ops import conv2d, int_pair, linear, positive_pair, sigmoid, softmax
from ..ops.activations import softplus


def _static_shape(x):
    return x.static_shape if isinstance(x, Variable) else tuple(x.shape)


def _reduce(loss, reduction, what):
    if reduction == "mean":
        return rt.mean(loss)
    if reduction == "sum":
        return rt.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{what}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


# --- losses -------------------------------------------------------------------------------------

def mse_loss(input, target, reduction="mean"):
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def l1_loss(input, target, reduction="mean"):
    return _reduce(rt.abs(input - target), reduction, "l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 * d**2 where |d| < delta, else delta * (|d| - 0.5 * delta)."""
    d = rt.abs(input - target)
    loss = rt.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss, reduction, "huber_loss")


def nll_loss(input, target, reduction="mean", ignore_index=-100):
    """-input[n, target[n]] for log-probabilities input (N, C) and class indices target (N,)."""
    if len(_static_shape(input)) != 2:
        raise ValueError(f"nll_loss: input must be (N, C) log-probabilities, got shape {_static_shape(input)}")
    keep = target != ignore_index
    safe = rt.where(keep, target, 0)
    picked = rt.take_along_axis(input, rt.expand_dims(safe, axis=1), axis=1)[:, 0]
    loss = rt.where(keep, -picked, 0.0)
    if reduction == "mean":
        return rt.sum(loss) / rt.sum(keep.astype(loss.dtype))
    return _reduce(loss, reduction, "nll_loss")


def binary_cross_entropy_with_logits(input, target, reduction="mean", pos_weight=None):
    """-[t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x))], computed without overflow."""
    if pos_weight is None:
        loss = softplus(-input) * target + softplus(input) * (1 - target)
    else:
        loss = softplus(-input) * target * pos_weight + softplus(input) * (1 - target)
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


# --- pooling by averaging ---------------------------------------------------------------------------

def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over kernel_size windows of NCHW input (stride defaults to kernel_size)."""
    kh, kw = positive_pair(kernel_size, "avg_pool2d kernel_size")
    sh, sw = (kh, kw) if stride is None else positive_pair(stride, "avg_pool2d stride")
    ph, pw = int_pair(padding, "avg_pool2d padding")
    if ceil_mode:
        raise NotImplementedError("avg_pool2d: ceil_mode=True is not supported; pad the input instead")
    n, c, h, w = _static_shape(x)
    if -1 in (h, w):
        raise ValueError("avg_pool2d: the spatial dims must be known while tracing")
    if ph or pw:
        x = rt.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        h, w = h + 2 * ph, w + 2 * pw
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    total = None
    for i in range(kh):
        for j in range(kw):
            window = x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            total = window if total is None else total + window
    if count_include_pad or not (ph or pw):
        return total / (kh * kw)
    ones = np.pad(np.ones((h - 2 * ph, w - 2 * pw), np.float32), ((ph, ph), (pw, pw)))
    counts = sum(ones[i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] for i in range(kh) for j in range(kw))
    return total / counts.astype(np.float32)


def adaptive_avg_pool2d(x, output_size):
    """Mean over the windows that split H and W into output_size cells (PyTorch's start/end rule)."""
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    n, c, h, w = _static_shape(x)
    oh = h if oh is None else oh
    ow = w if ow is None else ow
    if -1 in (h, w):
        raise ValueError("adaptive_avg_pool2d: the spatial dims must be known while tracing")
    if h % oh == 0 and w % ow == 0:            # equal windows: one reshape and a mean
        return rt.mean(rt.reshape(x, (x.shape[0], c, oh, h // oh, ow, w // ow)), axis=(3, 5))
    rows = []
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        cols = [rt.mean(x[:, :, r0:r1, (j * w) // ow:-((-(j + 1) * w) // ow)], axis=(2, 3)) for j in range(ow)]
        rows.append(rt.stack(cols, axis=-1))
    return rt.stack(rows, axis=-2)


# --- normalization -------------------------------------------------------------------------------------

def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize each channel (axis 1) by batch statistics when training, else by the running ones.

    Returns the output; while training, the caller updates the running statistics with
    `batch_statistics` (the unbiased variance, as PyTorch does).
    """
    ndim = len(_static_shape(x))
    axes = (0,) + tuple(range(2, ndim))
    shape = (1, -1) + (1,) * (ndim - 2)
    if training:
        mean = rt.mean(x, axis=axes, keepdims=True)
        var = rt.mean((x - mean) * (x - mean), axis=axes, keepdims=True)
    else:
        mean, var = rt.reshape(running_mean, shape), rt.reshape(running_var, shape)
    out = (x - mean) / rt.sqrt(var + eps)
    if weight is not None:
        out = out * rt.reshape(weight, shape)
    if bias is not None:
        out = out + rt.reshape(bias, shape)
    return out


def batch_statistics(x):
    """(mean, unbiased variance) of each channel over the batch and spatial dims."""
    ndim = len(_static_shape(x))
    axes = (0,) + tuple(range(2, ndim))
    return rt.mean(x, axis=axes), rt.var(x, axis=axes, correction=1)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize over groups of channels (and all spatial dims), then scale and shift per channel."""
    shape = _static_shape(x)
    c = shape[1]
    if c % num_groups:
        raise ValueError(f"group_norm: {c} channels do not split into {num_groups} groups")
    grouped = rt.reshape(x, (x.shape[0], num_groups, -1))
    mean = rt.mean(grouped, axis=2, keepdims=True)
    var = rt.mean((grouped - mean) * (grouped - mean), axis=2, keepdims=True)
    out = rt.reshape((grouped - mean) / rt.sqrt(var + eps), tuple(x.shape))
    affine = (1, c) + (1,) * (len(shape) - 2)
    if weight is not None:
        out = out * rt.reshape(weight, affine)
    if bias is not None:
        out = out + rt.reshape(bias, affine)
    return out


# --- 1-D convolution -------------------------------------------------------------------------------------

def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) input with weight (out, in/groups, k): a conv2d of height 1."""
    if isinstance(padding, str):
        pad2 = padding
    else:
        pad2 = (0, int(padding if isinstance(padding, int) else padding[0]))
    out = conv2d(rt.expand_dims(x, axis=2), rt.expand_dims(weight, axis=2), bias, (1, _one(stride)), pad2,
                 (1, _one(dilation)), groups)
    return rt.squeeze(out, axis=2)


def _one(value):
    return int(value if isinstance(value, int) else value[0])


# --- attention ----------------------------------------------------------------------------------------------

def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q @ k^T / sqrt(d) + mask) @ v, returning (output, attention weights).

    `mask` is additive (float, -inf where attention is not allowed) or boolean (True = not allowed).
    """
    d = _static_shape(q)[-1]
    scores = rt.matmul(q, rt.matrix_transpose(k)) / math.sqrt(d)
    if mask is not None:
        scores = rt.where(mask, -math.inf, scores) if getattr(mask, "dtype", None) == np.bool_ else scores + mask
    weights = softmax(scores, axis=-1)
    return rt.matmul(weights, v), weights


# --- recurrent cells ------------------------------------------------------------------------------------------

def rnn_cell_from_input_gates(gi, h, w_hh, b_hh=None, nonlinearity="tanh"):
    """A simple RNN step from the input's projection `gi` (x @ w_ih.T + b_ih: a time loop computes every
    step's in one matmul before the loop, as PyTorch does)."""
    pre = gi + linear(h, w_hh, b_hh)
    return rt.tanh(pre) if nonlinearity == "tanh" else rt.maximum(pre, 0)


def gru_cell_from_input_gates(gi, h, w_hh, b_hh=None):
    """PyTorch's GRU cell from the input's projection: gates ordered (reset, update, new)."""
    gh = linear(h, w_hh, b_hh)
    i_r, i_z, i_n = rt.split(gi, 3, axis=-1)
    h_r, h_z, h_n = rt.split(gh, 3, axis=-1)
    r = sigmoid(i_r + h_r)
    z = sigmoid(i_z + h_z)
    n = rt.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def lstm_cell_from_input_gates(gi, h, c, w_hh, b_hh=None):
    """PyTorch's LSTM cell from the input's projection: gates ordered (input, forget, cell, output); (h, c)."""
    gates = gi + linear(h, w_hh, b_hh)
    i, f, g, o = rt.split(gates, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * rt.tanh(g)
    return sigmoid(o) * rt.tanh(c), c


__all__ = ["mse_loss", "l1_loss", "huber_loss", "nll_loss", "binary_cross_entropy_with_logits", "avg_pool2d",
           "adaptive_avg_pool2d", "batch_norm", "group_norm", "conv1d", "scaled_dot_product_attention",
           "rnn_cell_from_input_gates", "gru_cell_from_input_gates", "lstm_cell_from_input_gates"]
