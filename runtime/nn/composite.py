"""Functions built from the runtime's ops (no kernel of their own): the piecewise activations, pooling by
averaging, batch/group/instance normalization, padding, resizing, 1-D and 3-D convolution, attention, the
recurrent cells and the common losses.

Composed of registered ops, they run eagerly, trace into ordinary Programs and
work on NumPy and CuPy alike; semantics and defaults are PyTorch's
(`torch.nn.functional`), axes are called `axis` as elsewhere in the runtime.
"""
import math

import numpy as np

from .. import ops as rt
from ..control_flow import while_loop
from ..ops.nn_ops import (conv2d, dropout as _dropout, embedding as _embedding, int_pair, linear, max_pool2d,
                          positive_pair, sigmoid, softmax)
from ..ops.activations import softplus
from ..tracer import Tracer


def _static_shape(x):
    return x.static_shape if isinstance(x, Tracer) else tuple(x.shape)


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


def nll_loss(input, target, reduction="mean", ignore_index=-100, weight=None):
    """-weight[c] * input[n, c] at c = target[n], for log-probabilities input (N, C) or (N, C, d1, ...) and
    class indices target (N,) or (N, d1, ...); the mean divides by the summed weights of the kept targets."""
    shape = _static_shape(input)
    if len(shape) < 2:
        raise ValueError(f"nll_loss: input must be (N, C) or (N, C, d1, ...) log-probabilities, got shape {shape}")
    if len(shape) > 2:       # classes last, then one row per position, as PyTorch's spatial loss
        loss = nll_loss(rt.reshape(rt.moveaxis(input, 1, -1), (-1, shape[1])), rt.reshape(target, (-1,)),
                        "none" if reduction == "none" else reduction, ignore_index, weight)
        return rt.reshape(loss, tuple(target.shape)) if reduction == "none" else loss
    keep = target != ignore_index
    safe = rt.where(keep, target, 0)
    picked = rt.take_along_axis(input, rt.expand_dims(safe, axis=1), axis=1)[:, 0]
    scale = keep.astype(input.dtype) if weight is None else rt.where(keep, rt.take(weight, safe), 0.0)
    loss = rt.where(keep, -picked, 0.0) if weight is None else -picked * scale
    if reduction == "mean":
        return rt.sum(loss) / rt.sum(scale)
    return _reduce(loss, reduction, "nll_loss")


def binary_cross_entropy_with_logits(input, target, reduction="mean", pos_weight=None):
    """-[t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x))], computed without overflow."""
    if pos_weight is None:
        loss = softplus(-input) * target + softplus(input) * (1 - target)
    else:
        loss = softplus(-input) * target * pos_weight + softplus(input) * (1 - target)
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-[t * log(p) + (1 - t) * log(1 - p)] for probabilities p; each log is clamped at -100 (PyTorch's rule)."""
    log_p = rt.maximum(rt.log(input), -100.0)
    log_q = rt.maximum(rt.log(1 - input), -100.0)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 * d**2 / beta where |d| < beta, else |d| - 0.5 * beta (PyTorch's smooth_l1_loss)."""
    d = rt.abs(input - target)
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    loss = rt.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


# --- piecewise activations ------------------------------------------------------------------------

def hardtanh(x, min_val=-1.0, max_val=1.0):
    return rt.clip(x, min_val, max_val)


def relu6(x):
    """min(max(x, 0), 6), as MobileNets use it."""
    return rt.clip(x, 0.0, 6.0)


def hardsigmoid(x):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""
    return rt.clip(x + 3.0, 0.0, 6.0) / 6.0


def hardswish(x):
    """x * relu6(x + 3) / 6 (MobileNetV3)."""
    return x * rt.clip(x + 3.0, 0.0, 6.0) / 6.0


def softsign(x):
    return x / (1 + rt.abs(x))


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), without overflow for large |x|."""
    return -softplus(-x)


def mish(x):
    return x * rt.tanh(softplus(x))


def prelu(x, weight):
    """max(0, x) + weight * min(0, x); a weight of several elements holds one slope per channel (axis 1)."""
    wshape = _static_shape(weight)
    ndim = len(_static_shape(x))
    if math.prod(wshape) != 1:
        if ndim < 2:
            raise ValueError(f"prelu: a weight of {math.prod(wshape)} slopes needs an input with a channel axis")
        weight = rt.reshape(weight, (1, -1) + (1,) * (ndim - 2))
    return rt.where(x >= 0, x, weight * x)


# --- similarity ---------------------------------------------------------------------------------------

def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    """x1 . x2 / max(|x1| * |x2|, eps) along `axis` (inputs broadcast against each other)."""
    dot = rt.sum(x1 * x2, axis=axis)
    n1 = rt.sum(x1 * x1, axis=axis)
    n2 = rt.sum(x2 * x2, axis=axis)
    return dot / rt.sqrt(rt.maximum(n1 * n2, eps * eps))


def normalize(x, p=2.0, axis=1, eps=1e-12):
    """x / max(||x||_p, eps) along `axis`."""
    if p == 2:
        norm = rt.sqrt(rt.sum(x * x, axis=axis, keepdims=True))
    elif p == 1:
        norm = rt.sum(rt.abs(x), axis=axis, keepdims=True)
    else:
        norm = rt.sum(rt.abs(x) ** p, axis=axis, keepdims=True) ** (1.0 / p)
    return x / rt.maximum(norm, eps)


# --- pooling by averaging ---------------------------------------------------------------------------

def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over kernel_size windows of NCHW input (stride defaults to kernel_size), as PyTorch's: with
    ceil_mode a last partial window (starting inside the input or its left padding), whose divisor counts
    only the cells up to the right padding's end (count_include_pad) or the input's cells."""
    kh, kw = positive_pair(kernel_size, "avg_pool2d kernel_size")
    sh, sw = (kh, kw) if stride is None else positive_pair(stride, "avg_pool2d stride")
    ph, pw = int_pair(padding, "avg_pool2d padding")
    n, c, h, w = _static_shape(x)
    if -1 in (h, w):
        raise ValueError("avg_pool2d: the spatial dims must be known while tracing")
    oh, ow = _pool_out(h, kh, sh, ph, ceil_mode), _pool_out(w, kw, sw, pw, ceil_mode)
    extra_h, extra_w = max(0, (oh - 1) * sh + kh - h - 2 * ph), max(0, (ow - 1) * sw + kw - w - 2 * pw)
    if ph or pw or extra_h or extra_w:
        x = rt.pad(x, ((0, 0), (0, 0), (ph, ph + extra_h), (pw, pw + extra_w)))
    total = None
    for i in range(kh):
        for j in range(kw):
            window = x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            total = window if total is None else total + window
    if not (extra_h or extra_w) and (count_include_pad or not (ph or pw)):
        return total / (kh * kw)
    counts = np.outer(_window_counts(h, kh, sh, ph, oh, count_include_pad),
                      _window_counts(w, kw, sw, pw, ow, count_include_pad))
    return total / counts.astype(np.float64 if np.dtype(x.dtype) == np.float64 else np.float32)


def _pool_out(size, k, s, p, ceil_mode):
    """PyTorch's pooled length: floor or ceil of (size + 2p - k) / s, plus one; with ceil_mode a last window
    must start inside the input or its left padding."""
    if not ceil_mode:
        return (size + 2 * p - k) // s + 1
    out = -(-(size + 2 * p - k) // s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def _window_counts(size, k, s, p, out, count_include_pad):
    """Each window's divisor along one dim: its cells up to the right padding's end, or only the input's."""
    starts = np.arange(out) * s - p
    ends = np.minimum(starts + k, size + p)
    if count_include_pad:
        return ends - starts
    return np.minimum(ends, size) - np.maximum(starts, 0)


def adaptive_avg_pool2d(x, output_size):
    """Mean over the windows that split H and W into output_size cells (PyTorch's start/end rule)."""
    return _adaptive_pool2d(x, output_size, rt.mean, "adaptive_avg_pool2d")


def _adaptive_windows(size, out):
    """PyTorch's adaptive pooling windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def adaptive_max_pool2d(x, output_size):
    """Max over the windows that split H and W into output_size cells (PyTorch's start/end rule)."""
    return _adaptive_pool2d(x, output_size, rt.max, "adaptive_max_pool2d")


def _adaptive_pool2d(x, output_size, reduce, name):
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    n, c, h, w = _static_shape(x)
    oh = h if oh is None else oh
    ow = w if ow is None else ow
    if -1 in (h, w):
        raise ValueError(f"{name}: the spatial dims must be known while tracing")
    if h % oh == 0 and w % ow == 0:            # equal windows: one reshape and one reduction
        return reduce(rt.reshape(x, (x.shape[0], c, oh, h // oh, ow, w // ow)), axis=(3, 5))
    rows = [rt.stack([reduce(x[:, :, r0:r1, c0:c1], axis=(2, 3)) for c0, c1 in _adaptive_windows(w, ow)], axis=-1)
            for r0, r1 in _adaptive_windows(h, oh)]
    return rt.stack(rows, axis=-2)


def _as_2d(x, what):
    if len(_static_shape(x)) != 3:
        raise ValueError(f"{what}: expected (N, C, L) input, got shape {_static_shape(x)}")
    return rt.expand_dims(x, axis=2)


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over sliding windows of (N, C, L) input: max_pool2d over a height of 1."""
    k = _one(kernel_size)
    out = max_pool2d(_as_2d(x, "max_pool1d"), (1, k), (1, k if stride is None else _one(stride)),
                     (0, _one(padding)), (1, _one(dilation)), ceil_mode)
    return rt.squeeze(out, axis=2)


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of (N, C, L) input: avg_pool2d over a height of 1."""
    k = _one(kernel_size)
    out = avg_pool2d(_as_2d(x, "avg_pool1d"), (1, k), (1, k if stride is None else _one(stride)),
                     (0, _one(padding)), ceil_mode, count_include_pad)
    return rt.squeeze(out, axis=2)


def adaptive_avg_pool1d(x, output_size):
    return rt.squeeze(adaptive_avg_pool2d(_as_2d(x, "adaptive_avg_pool1d"), (1, _one(output_size))), axis=2)


def adaptive_max_pool1d(x, output_size):
    return rt.squeeze(adaptive_max_pool2d(_as_2d(x, "adaptive_max_pool1d"), (1, _one(output_size))), axis=2)


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


def instance_norm(x, weight=None, bias=None, eps=1e-5):
    """Normalize each sample's channels over their spatial dims (biased variance), then scale and shift."""
    ndim = len(_static_shape(x))
    if ndim < 3:
        raise ValueError(f"instance_norm: expected input of rank 3 or more (N, C, ...), got shape {_static_shape(x)}")
    axes = tuple(range(2, ndim))
    mean = rt.mean(x, axis=axes, keepdims=True)
    var = rt.mean((x - mean) * (x - mean), axis=axes, keepdims=True)
    out = (x - mean) / rt.sqrt(var + eps)
    affine = (1, -1) + (1,) * (ndim - 2)
    if weight is not None:
        out = out * rt.reshape(weight, affine)
    if bias is not None:
        out = out + rt.reshape(bias, affine)
    return out


# --- padding and resizing --------------------------------------------------------------------------------

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(x, pad, mode="constant", value=0.0):
    """torch.nn.functional.pad: `pad` holds (before, after) pairs from the LAST axis backwards
    ([left, right, top, bottom] for NCHW); modes constant, reflect, replicate and circular."""
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    pad = [int(p) for p in pad]
    ndim = len(_static_shape(x))
    if len(pad) % 2 or len(pad) // 2 > ndim:
        raise ValueError(f"pad: expected an even number of widths, at most two per axis of the rank-{ndim} input, "
                         f"got {len(pad)}")
    if any(p < 0 for p in pad):
        raise ValueError(f"pad: negative widths (cropping) are not supported, got {pad}")
    widths = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        widths[ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        return rt.pad(x, widths, constant_values=value)
    return rt.pad(x, widths, mode=_PAD_MODES[mode])


def _resize_sizes(x, size, scale_factor, what):
    shape = _static_shape(x)
    spatial = shape[2:]
    if not spatial:
        raise ValueError(f"{what}: expected input of rank 3 or more (N, C, ...), got shape {shape}")
    if -1 in spatial:
        raise ValueError(f"{what}: the spatial dims must be known while tracing, got shape {shape}")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{what}: give exactly one of size and scale_factor")
    k = len(spatial)
    if size is not None:
        out = (size,) * k if isinstance(size, int) else tuple(int(s) for s in size)
        scales = [i / o for i, o in zip(spatial, out)]
    else:
        factors = (scale_factor,) * k if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        out = tuple(int(math.floor(i * f)) for i, f in zip(spatial, factors))
        scales = [1.0 / f for f in factors]
    if len(out) != k:
        raise ValueError(f"{what}: expected {k} output sizes for input of shape {shape}, got {out}")
    return spatial, out, scales


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resize the spatial dims of (N, C, ...) input, as torch.nn.functional.interpolate: mode 'nearest'
    (source index floor(dst * in/out)), 'linear'/'bilinear' (half-pixel centres, or corners aligned).
    Nearest by whole scale factors also works on spatial dims known only at run time (YOLOv3's upsample)."""
    mode = mode.lower() if isinstance(mode, str) else mode        # Paddle also spells them "NEAREST", ...
    rank = len(_static_shape(x))
    if mode == "nearest" and size is None and scale_factor is not None and rank >= 3:
        factors = (scale_factor,) * (rank - 2) if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        if len(factors) == rank - 2 and all(float(f).is_integer() and f >= 1 for f in factors):
            for i, f in enumerate(factors):         # each source element f times: floor(dst / f) exactly
                if int(f) != 1:
                    x = rt.repeat(x, int(f), axis=2 + i)
            return x
    spatial, out, scales = _resize_sizes(x, size, scale_factor, "interpolate")
    if mode == "nearest":
        if align_corners:
            raise ValueError("interpolate: align_corners only applies to the linear modes")
        for i, (n_in, n_out, scale) in enumerate(zip(spatial, out, scales)):
            index = np.minimum(np.floor(np.arange(n_out) * scale).astype(np.int64), n_in - 1)
            if n_in != n_out:
                x = rt.take(x, index, axis=2 + i)
        return x
    if mode not in ("linear", "bilinear", "trilinear"):
        raise ValueError(f"interpolate: mode must be 'nearest', 'linear', 'bilinear' or 'trilinear', got {mode!r}")
    for i, (n_in, n_out, scale) in enumerate(zip(spatial, out, scales)):
        dst = np.arange(n_out, dtype=np.float64)
        if align_corners:
            src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
        else:
            src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
        lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        hi = np.minimum(lo + 1, n_in - 1)
        weight_dtype = np.float64 if np.dtype(x.dtype) == np.float64 else np.float32    # float64 stays exact
        frac = (src - lo).astype(weight_dtype).reshape((-1,) + (1,) * (len(spatial) - 1 - i))
        a, b = rt.take(x, lo, axis=2 + i), rt.take(x, hi, axis=2 + i)
        x = a + (b - a) * frac
    return x


def pixel_shuffle(x, upscale_factor):
    """(N, C*r*r, H, W) -> (N, C, H*r, W*r), as torch.nn.functional.pixel_shuffle (sub-pixel convolution)."""
    r = int(upscale_factor)
    *batch, c, h, w = _static_shape(x)
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the channels ({c}) must be divisible by upscale_factor**2 ({r * r})")
    x = rt.reshape(x, (*batch, c // (r * r), r, r, h, w))
    n = len(batch)
    x = rt.permute_dims(x, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return rt.reshape(x, (*batch, c // (r * r), h * r, w * r))


def pixel_unshuffle(x, downscale_factor):
    """(N, C, H*r, W*r) -> (N, C*r*r, H, W): pixel_shuffle's inverse, as torch.nn.functional.pixel_unshuffle."""
    r = int(downscale_factor)
    *batch, c, h, w = _static_shape(x)
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: the height and width ({h}, {w}) must be divisible by {r}")
    x = rt.reshape(x, (*batch, c, h // r, r, w // r, r))
    n = len(batch)
    x = rt.permute_dims(x, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return rt.reshape(x, (*batch, c * r * r, h // r, w // r))


def upsample(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(x, size, scale_factor, mode, align_corners)


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


def _triple(value, what):
    t = (value,) * 3 if isinstance(value, int) else tuple(int(v) for v in value)
    if len(t) != 3:
        raise ValueError(f"conv3d: {what} must be an int or three ints, got {value!r}")
    return t


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) input with weight (out, in/groups, kd, kh, kw): for each depth
    tap one conv2d over every output depth at once (depths moved into the batch), summed."""
    if isinstance(padding, str):
        if padding != "valid":
            raise ValueError(f"conv3d: padding must be 'valid', an int or three ints, got {padding!r}")
        padding = 0
    sd, sh, sw = _triple(stride, "stride")
    pd, ph, pw = _triple(padding, "padding")
    dd, dh, dw = _triple(dilation, "dilation")
    shape, wshape = _static_shape(x), _static_shape(weight)
    if len(shape) != 5 or len(wshape) != 5:
        raise ValueError(f"conv3d: expected input (N, C, D, H, W) and weight (O, C/groups, kd, kh, kw), got shapes "
                         f"{shape} and {wshape}")
    c, d = shape[1], shape[2]
    o, kd = wshape[0], wshape[2]
    if d == -1 or c == -1:
        raise ValueError(f"conv3d: the channel and depth dims must be known while tracing, got shape {shape}")
    if pd:
        x = rt.pad(x, ((0, 0), (0, 0), (pd, pd), (0, 0), (0, 0)))
        d += 2 * pd
    od = (d - dd * (kd - 1) - 1) // sd + 1
    if od < 1:
        raise ValueError(f"conv3d: the padded depth {d} is smaller than the dilated kernel depth {dd * (kd - 1) + 1}")
    h, w = x.shape[3], x.shape[4]
    total = None
    for i in range(kd):
        taps = x[:, :, i * dd:i * dd + sd * (od - 1) + 1:sd]                      # (N, C, OD, H, W)
        taps = rt.reshape(rt.permute_dims(taps, (0, 2, 1, 3, 4)), (-1, c, h, w))
        y = conv2d(taps, weight[:, :, i], None, (sh, sw), (ph, pw), (dh, dw), groups)
        total = y if total is None else total + y
    out = rt.permute_dims(rt.reshape(total, (-1, od, o, total.shape[2], total.shape[3])), (0, 2, 1, 3, 4))
    if bias is not None:
        out = out + rt.reshape(bias, (1, o, 1, 1, 1))
    return out


def _one(value):
    return int(value if isinstance(value, int) else value[0])


def embedding(ids, weight, padding_idx=None):
    """Rows of `weight` picked by integer `ids`; positions holding `padding_idx` pass no gradient to its row
    (PyTorch's and Paddle's rule: the padding vector stays as initialized while training)."""
    out = _embedding(ids, weight)
    if padding_idx is None:
        return out
    if padding_idx < 0:
        padding_idx += _static_shape(weight)[0]
    return rt.where(rt.expand_dims(ids == padding_idx, axis=-1), rt.stop_gradient(out), out)


# --- Paddle's sequence helpers (seq2seq, Transformer, TSM) ----------------------------------------------------

def sequence_mask(x, maxlen=None, dtype="int64"):
    """mask[..., j] = j < x[...]: lengths x to a mask of shape x.shape + (maxlen,) (maxlen: max(x) if None)."""
    if maxlen is None:
        maxlen = rt.max(x)
    return rt.astype(rt.arange(maxlen) < rt.expand_dims(x, axis=-1), dtype)


def gather_tree(ids, parents):
    """Paddle's gather_tree: the full beam-search sequences from the step-wise token ids and parent beams
    (both (T, batch, beam)), walking the parents back from the last step. T may be dynamic."""
    shape = _static_shape(ids)
    if len(shape) != 3 or len(_static_shape(parents)) != 3:
        raise ValueError(f"gather_tree: ids and parents must be (T, batch, beam), got shapes {shape} and "
                         f"{_static_shape(parents)}")
    beam = rt.broadcast_to(rt.astype(rt.arange(ids.shape[2]), parents.dtype), tuple(ids.shape[1:]))

    def step(t, beam, out):
        out = rt.setitem(out, t, rt.take_along_axis(ids[t], beam, axis=1))
        return t - 1, rt.take_along_axis(parents[t], beam, axis=1), out
    return while_loop(lambda t, beam, out: t >= 0, step, (ids.shape[0] - 1, beam, rt.zeros_like(ids)))[2]


def temporal_shift(x, seg_num, shift_ratio=0.25, data_format="NCHW"):
    """TSM's shift of (N*T, C, H, W) input along time T = seg_num: the first C*shift_ratio channels take the
    previous step's values, the next C*shift_ratio the following step's (zeros past either end)."""
    if data_format != "NCHW":
        raise ValueError(f"temporal_shift: only data_format 'NCHW' is supported, got {data_format!r}")
    c = _static_shape(x)[1]
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    x5 = rt.reshape(x, (-1, seg_num) + tuple(x.shape[1:]))
    padded = rt.pad(x5, ((0, 0), (1, 1), (0, 0), (0, 0), (0, 0)))
    out = rt.concat([padded[:, :seg_num, :c1], padded[:, 2:seg_num + 2, c1:c2], padded[:, 1:seg_num + 1, c2:]],
                    axis=2)
    return rt.reshape(out, tuple(x.shape))


def label_smooth(label, prior_dist=None, epsilon=0.1):
    """(1 - epsilon) * label + epsilon * prior (uniform over the last axis's classes by default)."""
    prior = 1.0 / _static_shape(label)[-1] if prior_dist is None else prior_dist
    return (1 - epsilon) * label + epsilon * prior


# --- attention ----------------------------------------------------------------------------------------------

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + bias) @ value: the output only, as `torch.nn.functional`'s.

    A boolean `attn_mask` says where a query may attend (True = attend; a row that may attend nowhere gives
    zeros, as PyTorch's does); a float mask is added to the scores. `is_causal` lets query i see keys
    0..i (an (L, S) lower triangle), `scale` defaults to 1/sqrt(E), `dropout_p` drops attention weights
    (always: pass `p if self.training else 0.0`, as PyTorch code does), and `enable_gqa` repeats the key
    and value heads (dim -3) to the query's count.
    """
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass attn_mask or is_causal=True, not both "
                         "(as in PyTorch)")
    q_shape, k_shape = query.shape, key.shape
    L, S = q_shape[-2], k_shape[-2]
    factor = 1.0 / math.sqrt(_static_shape(query)[-1]) if scale is None else float(scale)
    if enable_gqa and len(q_shape) >= 3 and _static_shape(key)[-3] != _static_shape(query)[-3]:
        groups = _static_shape(query)[-3] // _static_shape(key)[-3]
        key, value = rt.repeat(key, groups, axis=-3), rt.repeat(value, groups, axis=-3)
    scores = rt.matmul(query, rt.matrix_transpose(key)) * factor
    if is_causal:
        attn_mask = rt.tril(rt.ones((L, S), dtype="bool"))
    masked = attn_mask is not None and not is_causal
    if attn_mask is not None:
        if np.dtype(attn_mask.dtype) == np.bool_:
            scores = rt.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    if masked:      # a row that may attend nowhere gives zeros, as PyTorch's safe softmax does
        reachable = rt.any(scores != -math.inf, axis=-1, keepdims=True)
        weights = rt.where(reachable, softmax(rt.where(reachable, scores, 0.0), axis=-1), 0.0)
    else:
        weights = softmax(scores, axis=-1)
    if dropout_p:
        weights = _dropout(weights, dropout_p, True)
    return rt.matmul(weights, value)


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
           "binary_cross_entropy", "smooth_l1_loss", "hardtanh", "relu6", "hardsigmoid", "hardswish", "softsign",
           "log_sigmoid", "mish", "prelu", "cosine_similarity", "normalize", "instance_norm", "pad", "interpolate",
           "upsample", "conv3d", "embedding", "adaptive_max_pool2d", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "sequence_mask", "gather_tree", "temporal_shift", "label_smooth",
           "adaptive_avg_pool2d", "batch_norm", "group_norm", "conv1d", "scaled_dot_product_attention",
           "rnn_cell_from_input_gates", "gru_cell_from_input_gates", "lstm_cell_from_input_gates"]
