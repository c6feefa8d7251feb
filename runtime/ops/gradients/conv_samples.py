"""Conformance samples of the convolution and pooling cotangent ops, with oracles written
as plain loops over every output pixel and filter tap (NumPy only, independent of the kernels)."""
import numpy as np

from ..dispatch import apply
from ..registry import get_op
from ..samples import sample_array


def _conv_taps(x_shape, w_shape, g_shape, stride, padding, dilation, groups):
    """(n, o, oy, ox, c, i, j, y, x) for every product conv2d sums: input pixel (y, x) of channel c,
    tap (i, j) of filter o; y, x index the unpadded input and may fall outside it."""
    n_, c_all, _, _ = x_shape
    o_all, group_ch, kh, kw = w_shape
    per_group = o_all // groups
    top, _, left, _ = padding
    for n in range(n_):
        for o in range(o_all):
            k = o // per_group
            for oy in range(g_shape[2]):
                for ox in range(g_shape[3]):
                    for cc in range(group_ch):
                        for i in range(kh):
                            for j in range(kw):
                                y = oy * stride[0] + i * dilation[0] - top
                                x = ox * stride[1] + j * dilation[1] - left
                                yield n, o, oy, ox, k * group_ch + cc, cc, i, j, y, x


def _input_grad_oracle(attrs):
    def oracle(g, x, w):
        out = np.zeros(x.shape, np.float64)
        for n, o, oy, ox, c, cc, i, j, y, xx in _conv_taps(x.shape, w.shape, g.shape, **attrs):
            if 0 <= y < x.shape[2] and 0 <= xx < x.shape[3]:
                out[n, c, y, xx] += g[n, o, oy, ox] * w[o, cc, i, j]
        return out.astype(g.dtype)
    return oracle


def _weight_grad_oracle(attrs):
    def oracle(g, x, w):
        out = np.zeros(w.shape, np.float64)
        for n, o, oy, ox, c, cc, i, j, y, xx in _conv_taps(x.shape, w.shape, g.shape, **attrs):
            if 0 <= y < x.shape[2] and 0 <= xx < x.shape[3]:
                out[o, cc, i, j] += g[n, o, oy, ox] * x[n, c, y, xx]
        return out.astype(w.dtype)
    return oracle


def _conv_samples(op, oracle):
    cases = []
    for x_shape, w_shape, attrs in [
            ((2, 3, 5, 4), (4, 3, 3, 2), dict(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)),
            ((1, 4, 6, 6), (2, 2, 3, 3), dict(stride=(2, 1), padding=(1, 2, 0, 1), dilation=(1, 2), groups=2))]:
        oh = (x_shape[2] + attrs["padding"][0] + attrs["padding"][1] - attrs["dilation"][0] * (w_shape[2] - 1) - 1) \
            // attrs["stride"][0] + 1
        ow = (x_shape[3] + attrs["padding"][2] + attrs["padding"][3] - attrs["dilation"][1] * (w_shape[3] - 1) - 1) \
            // attrs["stride"][1] + 1
        g = sample_array((x_shape[0], w_shape[0], oh, ow))
        cases.append(dict(fn=lambda g, x, w, a=attrs: apply(get_op(op), (g, x, w), a),
                          args=(g, sample_array(x_shape), sample_array(w_shape)), oracle=oracle(attrs),
                          rtol=1e-4, atol=1e-5))
    return cases


def _pool_oracle(attrs):
    def oracle(g, x):
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (attrs[k] for k in ("kernel_size", "stride", "padding", "dilation"))
        out = np.zeros(x.shape, g.dtype)
        for n, c, oy, ox in np.ndindex(*g.shape):
            best = None
            for i in range(kh):
                for j in range(kw):
                    y, xx = oy * sh + i * dh - ph, ox * sw + j * dw - pw
                    if 0 <= y < x.shape[2] and 0 <= xx < x.shape[3] and (best is None or x[n, c, y, xx] > best[0]):
                        best = (x[n, c, y, xx], y, xx)
            out[n, c, best[1], best[2]] += g[n, c, oy, ox]
        return out
    return oracle


def _select_oracle(attrs):
    def oracle(g, x):
        grad = _pool_oracle(attrs)
        out_hw = _POOLED[x.shape]
        out = np.zeros(x.shape[:2] + out_hw, g.dtype)
        for pos in np.ndindex(*out.shape):
            unit = np.zeros(out.shape, g.dtype)
            unit[pos] = 1
            out[pos] = np.sum(grad(unit, x) * g)          # the adjoint, one output at a time
        return out
    return oracle


def _pool_samples(op="max_pool2d_grad"):
    cases = []
    for x_shape, g_hw, attrs in [
            ((2, 3, 4, 4), (2, 2), dict(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1),
                                        ceil_mode=False)),
            ((1, 2, 5, 5), (3, 3), dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1),
                                        ceil_mode=False)),
            ((1, 2, 5, 4), (1, 3), dict(kernel_size=(3, 2), stride=(2, 1), padding=(0, 0), dilation=(2, 1),
                                        ceil_mode=True))]:
        _POOLED[x_shape] = g_hw
        g = sample_array(x_shape[:2] + (g_hw if op == "max_pool2d_grad" else x_shape[2:]))
        oracle = _pool_oracle if op == "max_pool2d_grad" else _select_oracle
        cases.append(dict(fn=lambda g, x, a=attrs: apply(get_op(op), (g, x), a),
                          args=(g, sample_array(x_shape, lo=-3, hi=3)), oracle=oracle(attrs)))
    return cases


_POOLED = {}


SAMPLES = {
    "conv2d_input_grad": lambda: _conv_samples("conv2d_input_grad", _input_grad_oracle),
    "conv2d_weight_grad": lambda: _conv_samples("conv2d_weight_grad", _weight_grad_oracle),
    "max_pool2d_grad": _pool_samples,
    "max_pool2d_select": lambda: _pool_samples("max_pool2d_select"),
}
