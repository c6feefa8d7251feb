"""Gradient rules of conv2d, conv_transpose2d and max_pool2d (runtime/ops/nn_ops.py).

Their cotangents are ops of their own, each one kernel against `xp` (as the forward
ops are), reading the run-time shapes, so they work with unknown dims:
`conv2d_input_grad` (the adjoint of conv2d in its input: a transposed convolution
onto the padded input, cropped), `conv2d_weight_grad` (the windows of the padded
input against g) and `max_pool2d_grad` (g added at each window's first maximum).
"""
import numpy as np

from ..nn_ops import _pool_out_size, _windows, conv2d
from ..registry import OpDef, facet, get_op, register
from ..dispatch import apply
from ..rules import Spec, dtype_of, shape_of
from .support import rt, takes_gradient


def _conv2d_input_grad_kernel(xp, g, x, weight, stride, padding, dilation, groups):
    """The cotangent of conv2d's input: each output pixel's g sent back through the filter taps."""
    unbatched = g.ndim == 3
    if unbatched:
        g = g[None]
    n, out_ch, oh, ow = g.shape
    c, h, w = x.shape[-3:]
    top, bottom, left, right = padding
    group_ch, kh, kw = weight.shape[1:]
    (sh, sw), (dh, dw) = stride, dilation
    full = xp.zeros((n, c, h + top + bottom, w + left + right), dtype=g.dtype)
    per_group = out_ch // groups
    for k in range(groups):
        gk = g[:, k * per_group:(k + 1) * per_group]
        wk = weight[k * per_group:(k + 1) * per_group]
        taps = xp.tensordot(gk, wk, axes=([1], [0]))                 # (n, oh, ow, group_ch, kh, kw)
        for i in range(kh):
            for j in range(kw):
                full[:, k * group_ch:(k + 1) * group_ch, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                     j * dw:j * dw + (ow - 1) * sw + 1:sw] += taps[..., i, j].transpose(0, 3, 1, 2)
    out = full[:, :, top:top + h, left:left + w]
    return out[0] if unbatched else xp.ascontiguousarray(out)


def _conv2d_weight_grad_kernel(xp, g, x, weight, stride, padding, dilation, groups):
    """The cotangent of conv2d's weight: every window of the padded input weighted by g."""
    if g.ndim == 3:
        g, x = g[None], x[None]
    top, bottom, left, right = padding
    if top or bottom or left or right:
        x = xp.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    out_ch, group_ch, kh, kw = weight.shape
    windows = _windows(xp, x, (kh, kw), stride, dilation, g.shape[-2:])   # (n, c, oh, ow, kh, kw)
    per_group = out_ch // groups
    parts = [xp.tensordot(g[:, k * per_group:(k + 1) * per_group], windows[:, k * group_ch:(k + 1) * group_ch],
                          axes=([0, 2, 3], [0, 2, 3])) for k in range(groups)]
    return (parts[0] if groups == 1 else xp.concatenate(parts, axis=0)).astype(weight.dtype, copy=False)


def _first_maxima(xp, x, out_hw, kernel_size, stride, padding, dilation):
    """(padded shape, index) of the first maximum of each pooling window of NCHW x, as PyTorch
    picks it: the index addresses x padded by (padding, padding + what ceil_mode adds)."""
    n, c, h, w = x.shape
    oh, ow = out_hw
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - size - 2 * p)
             for o, size, k, s, p, d in zip((oh, ow), (h, w), kernel_size, stride, padding, dilation)]
    (ph, pw), (sh, sw), (dh, dw), (kh, kw) = padding, stride, dilation, kernel_size
    padded = xp.pad(x, ((0, 0), (0, 0), (ph, ph + extra[0]), (pw, pw + extra[1])), constant_values=-np.inf)
    windows = _windows(xp, padded, kernel_size, stride, dilation, (oh, ow)).reshape(n, c, oh, ow, kh * kw)
    first = xp.argmax(windows, axis=-1)
    rows = xp.arange(oh).reshape(1, 1, oh, 1) * sh + (first // kw) * dh
    cols = xp.arange(ow).reshape(1, 1, 1, ow) * sw + (first % kw) * dw
    return padded.shape, (xp.arange(n).reshape(n, 1, 1, 1), xp.arange(c).reshape(1, c, 1, 1), rows, cols)


def _max_pool2d_grad_kernel(xp, g, x, kernel_size, stride, padding, dilation, ceil_mode):
    """g added at the first maximum of each window."""
    unbatched = x.ndim == 3
    if unbatched:
        g, x = g[None], x[None]
    shape, where = _first_maxima(xp, x, g.shape[-2:], kernel_size, stride, padding, dilation)
    out = xp.zeros(shape, dtype=g.dtype)
    add = getattr(xp, "add")
    if hasattr(add, "at"):
        add.at(out, where, g)
    else:                     # CuPy: scatter_add lives in cupyx
        import cupyx
        cupyx.scatter_add(out, where, g)
    (ph, pw), (h, w) = padding, x.shape[-2:]
    out = out[:, :, ph:ph + h, pw:pw + w]
    return out[0] if unbatched else xp.ascontiguousarray(out)


def _max_pool2d_select_kernel(xp, g, x, kernel_size, stride, padding, dilation, ceil_mode):
    """g (x's shape) read at the first maximum of each window: max_pool2d_grad's adjoint."""
    unbatched = x.ndim == 3
    if unbatched:
        g, x = g[None], x[None]
    out_hw = [_pool_out_size(size, k, s, p, d, ceil_mode)
              for size, k, s, p, d in zip(x.shape[-2:], kernel_size, stride, padding, dilation)]
    shape, where = _first_maxima(xp, x, out_hw, kernel_size, stride, padding, dilation)
    (ph, pw), (h, w) = padding, x.shape[-2:]
    padded = xp.pad(g, ((0, 0), (0, 0), (ph, shape[2] - h - ph), (pw, shape[3] - w - pw)))
    out = padded[where]
    return out[0] if unbatched else out


def _select_infer(g, x, **attrs):
    return Spec(get_op("max_pool2d").infer(x, **attrs).shape, dtype_of(g))


def _like_infer(position):
    def infer(g, *inputs, **attrs):
        like = inputs[position]
        return Spec(shape_of(like), dtype_of(g))
    return infer


def _grad_samples(name):
    def samples():
        from .conv_samples import SAMPLES
        return SAMPLES[name]()
    return samples


_conv2d_input_grad = register(OpDef("conv2d_input_grad", _conv2d_input_grad_kernel, _like_infer(0),
                                    example=_grad_samples("conv2d_input_grad")))
_conv2d_weight_grad = register(OpDef("conv2d_weight_grad", _conv2d_weight_grad_kernel, _like_infer(1),
                                     example=_grad_samples("conv2d_weight_grad")))
_max_pool2d_grad = register(OpDef("max_pool2d_grad", _max_pool2d_grad_kernel, _like_infer(0),
                                  example=_grad_samples("max_pool2d_grad")))
_max_pool2d_select = register(OpDef("max_pool2d_select", _max_pool2d_select_kernel, _select_infer,
                                    example=_grad_samples("max_pool2d_select")))


def _bias_grad(g, bias):
    if not takes_gradient(bias):
        return None
    return rt.sum(g, axis=(0, 2, 3) if g.ndim == 4 else (1, 2))


@facet("conv2d", "vjp")
def _conv2d_vjp(g, inputs, outputs, **attrs):
    x, weight, bias = inputs
    gx = apply(_conv2d_input_grad, (g, x, weight), attrs) if takes_gradient(x) else None
    gw = apply(_conv2d_weight_grad, (g, x, weight), attrs) if takes_gradient(weight) else None
    return gx, gw, _bias_grad(g, bias)


@facet("conv_transpose2d", "vjp")
def _conv_transpose2d_vjp(g, inputs, outputs, stride, padding, output_padding, dilation, groups):
    """conv_transpose2d is the adjoint of conv2d with the same weight: its input's cotangent is
    conv2d of g (cropped: output_padding rows reach no input), its weight's the conv2d weight
    cotangent with the roles of input and output swapped."""
    x, weight, bias = inputs
    ph, pw = padding
    attrs = {"stride": tuple(stride), "padding": (ph, ph, pw, pw), "dilation": tuple(dilation), "groups": groups}
    gx = gw = None
    if takes_gradient(x):
        gx = conv2d(g, weight, None, stride, (ph, pw), dilation, groups)
        gx = gx[(Ellipsis, slice(0, rt.shape(x)[-2]), slice(0, rt.shape(x)[-1]))]
    if takes_gradient(weight):
        gw = apply(_conv2d_weight_grad, (x, g, weight), attrs)
    return gx, gw, _bias_grad(g, bias)


@facet("conv2d_input_grad", "vjp")
def _conv2d_input_grad_vjp(gg, inputs, outputs, **attrs):
    """conv2d_input_grad(g, x, w) is the adjoint of conv2d(., w) applied to g: linear in g and w."""
    g, x, weight = inputs
    d_g = apply(get_op("conv2d"), (gg, weight, None), attrs) if takes_gradient(g) else None
    d_w = apply(_conv2d_weight_grad, (g, gg, weight), attrs) if takes_gradient(weight) else None
    return d_g, None, d_w


@facet("conv2d_weight_grad", "vjp")
def _conv2d_weight_grad_vjp(gw, inputs, outputs, **attrs):
    """conv2d_weight_grad(g, x, w) pairs g with the windows of x: linear in g and x (w gives a shape)."""
    g, x, weight = inputs
    d_g = apply(get_op("conv2d"), (x, gw, None), attrs) if takes_gradient(g) else None
    d_x = apply(_conv2d_input_grad, (g, x, gw), attrs) if takes_gradient(x) else None
    return d_g, d_x, None


@facet("max_pool2d_grad", "vjp")
def _max_pool2d_grad_vjp(gg, inputs, outputs, **attrs):
    """Linear in g; in x only the positions of the maxima matter (no gradient)."""
    g, x = inputs
    return (apply(_max_pool2d_select, (gg, x), attrs) if takes_gradient(g) else None), None


@facet("max_pool2d_select", "vjp")
def _max_pool2d_select_vjp(gs, inputs, outputs, **attrs):
    g, x = inputs
    return (apply(_max_pool2d_grad, (gs, x), attrs) if takes_gradient(g) else None), None


@facet("max_pool2d", "vjp")
def _max_pool2d_vjp(g, inputs, outputs, **attrs):
    (x,) = inputs
    return (apply(_max_pool2d_grad, (g, x), attrs) if takes_gradient(x) else None,)
