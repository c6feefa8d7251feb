"""Gradient rules of conv2d, conv_transpose2d and max_pool2d (runtime/ops/nn_ops.py).

Their cotangents are ops of their own, each one kernel against `xp` (as the forward
ops are), reading the run-time shapes, so they work with unknown dims:
`conv2d_input_grad` (the adjoint of conv2d in its input: a transposed convolution
onto the padded input, cropped), `conv2d_weight_grad` (the windows of the padded
input against g) and `max_pool2d_grad` (g added at each window's first maximum).
"""
import numpy as np

from ..nn_ops import (_POOL_TAPS, _batch_last, _batch_last_windows, _pool_out_size, _windows, conv2d, masked,
                      strided_view)
from ..registry import OpDef, facet, get_op, register
from ..dispatch import apply
from ..rules import Spec, dtype_of, shape_of
from .support import rt, takes_gradient
from .conv_samples import SAMPLES


def _conv2d_input_grad_kernel(xp, g, x, weight, stride, padding, dilation, groups):
    """The cotangent of conv2d's input: each output pixel's g sent back through the filter taps.

    One GEMM per group gives every tap's contribution as col2im's columns, (C, KH, KW, OH, OW, N)
    (the batch last, as conv2d lays out its patches); each tap's (C, OH, OW, N) slab is added into its
    strided view of the padded input, kept (C, H, W, N), in raster order (the order of the taps the
    sum always had); the result is that buffer's NCHW view."""
    unbatched = g.ndim == 3
    if unbatched:
        g = g[None]
    n, out_ch, oh, ow = g.shape
    c, h, w = x.shape[-3:]
    top, bottom, left, right = padding
    group_ch, kh, kw = weight.shape[1:]
    (sh, sw), (dh, dw) = stride, dilation
    per_group = out_ch // groups
    gs = _batch_last(xp, g, (0, 0, 0, 0)).reshape(groups, per_group, oh * ow * n)
    filters = weight.reshape(groups, per_group, group_ch * kh * kw).transpose(0, 2, 1)
    cols = xp.matmul(filters, gs).reshape(c, kh, kw, oh, ow, n)
    full = xp.zeros((c, h + top + bottom, w + left + right, n), dtype=g.dtype)
    for i in range(kh):
        for j in range(kw):
            full[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw] += cols[:, i, j]
    out = full[:, top:top + h, left:left + w].transpose(3, 0, 1, 2)
    return out[0] if unbatched else out


def _conv2d_weight_grad_kernel(xp, g, x, weight, stride, padding, dilation, groups):
    """The cotangent of conv2d's weight: every window of the padded input weighted by g.

    One GEMM per group: g as (O/G, OH*OW*N) times the patches gathered as conv2d gathers them,
    (C/G*KH*KW, OH*OW*N), read transposed (the batch last: rows of OW*N elements, where tensordot's
    patches-last gather copied KW pixels at a time)."""
    if g.ndim == 3:
        g, x = g[None], x[None]
    n, out_ch, oh, ow = g.shape
    _, group_ch, kh, kw = weight.shape
    per_group = out_ch // groups
    windows = _batch_last_windows(xp, _batch_last(xp, x, padding), (kh, kw), stride, dilation, (oh, ow))
    cols = windows.reshape(groups, group_ch * kh * kw, oh * ow * n)
    gs = _batch_last(xp, g, (0, 0, 0, 0)).reshape(groups, per_group, oh * ow * n)
    out = xp.matmul(gs, cols.transpose(0, 2, 1))                       # (G, O/G, C/G*KH*KW)
    return out.reshape(weight.shape).astype(weight.dtype, copy=False)


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
    if kernel_size[0] * kernel_size[1] <= _POOL_TAPS:
        out = _max_pool2d_grad_by_taps(xp, g, x, kernel_size, stride, padding, dilation)
        return out[0] if unbatched else out
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


def _max_pool2d_grad_by_taps(xp, g, x, kernel_size, stride, padding, dilation):
    """max_pool2d_grad without argmax over the window view and `add.at` (~30x slower on a 2x2 pool).

    x is taken as (A, H, W, B): (N*C, H, W, 1) for NCHW memory, (C, H, W, N) for the batch-last
    memory of a convolution's result (rows of W*N elements, not W). It is padded as `_first_maxima`
    pads it, its windows' taps copied once into one contiguous (KH*KW, A, OH, OW, B) stack; a tap
    takes g where it equals its window's maximum (or is NaN, which `max` propagates) and no earlier
    tap did. Each tap's share is added into its strided view of the result in reverse order, so a
    pixel shared by overlapping windows receives their g in the windows' raster order, the order
    `add.at` sums in: the bits are the same. The result has x's memory order."""
    n, c, h, w = x.shape
    oh, ow = g.shape[-2:]
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = kernel_size, stride, dilation, padding
    batch_last = n > 1 and x.transpose(1, 2, 3, 0).flags.c_contiguous
    if batch_last:
        xa, ga = x.transpose(1, 2, 3, 0), g.transpose(1, 2, 3, 0)
    else:
        xa, ga = x.reshape(n * c, h, w, 1), g.reshape(n * c, oh, ow, 1)
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - size - 2 * p)
             for o, size, k, s, p, d in zip((oh, ow), (h, w), kernel_size, stride, padding, dilation)]
    shape = (xa.shape[0], h + 2 * ph + extra[0], w + 2 * pw + extra[1], xa.shape[3])
    padded = xa
    if shape != xa.shape:
        padded = xp.full(shape, -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min, x.dtype)
        padded[:, ph:ph + h, pw:pw + w] = xa
    st = padded.strides
    windows = strided_view(xp, padded, (kh, kw, shape[0], oh, ow, shape[3]),
                           (st[1] * dh, st[2] * dw, st[0], st[1] * sh, st[2] * sw, st[3]))
    taps = xp.ascontiguousarray(windows).reshape(kh * kw, shape[0], oh, ow, shape[3])
    hit = xp.equal(taps, taps.max(axis=0))
    if x.dtype.kind == "f":
        xp.logical_or(hit, xp.isnan(taps), out=hit)
    seen = hit[0].copy()
    for t in range(1, kh * kw):                       # the first hit of each window only
        later = xp.logical_and(seen, hit[t])          # (a loop: logical_or.accumulate takes ~50x longer)
        xp.logical_or(seen, hit[t], out=seen)
        xp.not_equal(hit[t], later, out=hit[t])
    shares = masked(xp, hit, ga)
    out = xp.zeros(shape, dtype=g.dtype)
    if (sh, sw) == (kh, kw) and (dh, dw) == (1, 1) and shape[1:3] == (oh * kh, ow * kw):
        # windows tile the padded input: one add through an (A, OH, KH, OW, KW, B) view
        tiles = out.reshape(shape[0], oh, kh, ow, kw, shape[3])
        tiles += shares.reshape(kh, kw, shape[0], oh, ow, shape[3]).transpose(2, 3, 0, 4, 1, 5)
    else:
        for t in reversed(range(kh * kw)):
            i, j = divmod(t, kw)
            out[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw] += shares[t]
    out = out[:, ph:ph + h, pw:pw + w]
    if batch_last:
        return out.transpose(3, 0, 1, 2)
    return xp.ascontiguousarray(out).reshape(n, c, h, w)


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
