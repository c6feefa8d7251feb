"""Neural-network ops: activations, softmax, linear, conv2d, pooling, normalization, losses.

Each op is one registered OpDef (kernel against `xp`, shape/dtype rule), so a
Program shows `conv2d(x, conv1.weight, conv1.bias, stride=(1, 1), ...)` rather
than the dozens of ops it would take to compose it. Shape rules are written over
(shape, dtype) pairs: tracing runs them on types (Specs, -1 = unknown dim) and the
public functions run the same rule on eager Tensors, so a bad shape gives the
same clear error in both modes. Layouts follow PyTorch: NCHW images, Linear
weight (out, in), Conv2D weight (out, in/groups, kh, kw).
"""
import math

import numpy as np

from .. import tracing
from ..dtypes import DEFAULT_FLOAT, scalar_dtype
from ..ir import Variable
from ..rng import default_rng
from ..shape_text import shape_text
from ..tensor import Tensor
from .dispatch import apply
from .registry import PREVIOUS, OpDef, StepValue, get_op, register
from .rules import Spec, norm_axes


# --- rules over (shape, dtype) ------------------------------------------------------

def _meta(x):
    """(shape, dtype) of an op input (-1 for unknown dims), or None for an absent one."""
    if x is None:
        return None
    if isinstance(x, Spec):
        return x.shape, x.dtype
    if isinstance(x, (Tensor, np.ndarray, np.generic)) or hasattr(x, "__cuda_array_interface__"):
        return tuple(x.shape), np.dtype(x.dtype)
    return (), scalar_dtype(x)


def _defop(name, rule, kernel, **options):
    """Register an op whose infer rule reads (shape, dtype) pairs; the rule is kept on the OpDef.

    Its conformance samples (inputs and a NumPy-only oracle) are attached by runtime/nn/op_samples.py.
    """
    def infer(*inputs, **attrs):
        return rule(*map(_meta, inputs), **attrs)
    opdef = register(OpDef(name, kernel, infer, **options))
    opdef.rule = rule
    return opdef


def _call(opdef, inputs, attrs):
    """apply(), checking shapes eagerly with the op's rule (tracing checks them when recording)."""
    if not tracing._state.blocks:
        opdef.rule(*map(_meta, inputs), **attrs)
    return apply(opdef, inputs, attrs)


def _same(a, b):
    """Two dims agree (an unknown dim agrees with anything)."""
    return a == b or a == -1 or b == -1


def _float_result(op, dtype):
    """Activations compute in floating point: floats keep their dtype, ints and bools become float32."""
    if dtype.kind == "f":
        return dtype
    if dtype.kind in "biu":
        return DEFAULT_FLOAT
    raise TypeError(f"{op}: expected a real-valued input, got dtype {dtype}")


def _require_float(op, what, dtype):
    if dtype.kind != "f":
        raise TypeError(f"{op}: {what} must be a floating-point array, got dtype {dtype}")


def _require_same_dtype(op, x, what, other):
    if other is not None and other[1] != x[1]:
        raise TypeError(f"{op}: input dtype {x[1]} and {what} dtype {other[1]} differ; "
                        f"cast one with .astype('{x[1]}')")


def _float_array(xp, x):
    x = xp.asarray(x, dtype=DEFAULT_FLOAT) if isinstance(x, (bool, int, float)) else x
    return x if x.dtype.kind == "f" else x.astype(DEFAULT_FLOAT)


def int_pair(value, what):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, (int, np.integer)) for v in value):
        return int(value[0]), int(value[1])
    raise TypeError(f"{what} must be an int or a pair of ints, got {value!r}")


def positive_pair(value, what):
    pair = int_pair(value, what)
    if min(pair) < 1:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return pair


# --- elementwise activations -----------------------------------------------------------

def _activation_rule(op):
    def rule(x):
        return Spec(x[0], _float_result(op, x[1]))
    return rule


def _relu_rule(x):
    if x[1].kind not in "iuf":
        raise TypeError(f"relu: expected a real-valued input, got dtype {x[1]}")
    return Spec(x[0], x[1])


def _relu_kernel(xp, x):
    return xp.maximum(x, 0)


_relu = _defop("relu", _relu_rule, _relu_kernel, elementwise=True, template="xp.maximum({0}, 0)", fresh=True,
               safe_when_static=True, as_ufunc=lambda inputs: ("maximum", [inputs[0], 0]) if len(inputs) == 1 else None)


def relu(x):
    """max(x, 0), elementwise (NaN stays NaN)."""
    return apply(_relu, (x,), {})


def masked(xp, mask, g):
    """g where mask is true, else +0 (mask broadcasts g): `where(mask, g, 0)` for a float g. On NumPy an
    AND of g's bits with all-ones or zeros: the same bits, 15-50x faster than `where`, which branches
    per element (mispredicted on a mask of window maxima or of ReLU's active units) and, for operands
    not C-contiguous (a convolution's results), also leaves its fast loop."""
    if xp is not np or g.dtype.kind != "f" or g.dtype.itemsize not in (2, 4, 8):
        return xp.where(mask, g, 0)
    bits = np.dtype(f"u{g.dtype.itemsize}")
    ones = np.negative(mask, dtype=bits)
    return np.bitwise_and(g.view(bits), ones, out=ones).view(g.dtype)


def _relu_grad_rule(g, x):
    if g[1].kind != "f":
        raise TypeError(f"relu_grad: the cotangent must be a floating-point array, got dtype {g[1]}")
    if len(g[0]) != len(x[0]) or not all(_same(a, b) for a, b in zip(g[0], x[0])):
        raise ValueError(f"relu_grad: cotangent shape {shape_text(g[0])} differs from input shape {shape_text(x[0])}")
    return Spec(x[0], g[1])


def _relu_grad_kernel(xp, g, x):
    """relu's cotangent: g where x > 0, else 0 (NaN x gives 0, as `where(x > 0, g, 0)`)."""
    g = xp.asarray(g)
    return masked(xp, xp.greater(x, 0), g) if g.shape == x.shape else xp.where(xp.greater(x, 0), g, 0)


_relu_grad = _defop("relu_grad", _relu_grad_rule, _relu_grad_kernel, fresh=True, safe_when_static=True)


def _sigmoid_kernel(xp, x):
    x = _float_array(xp, x)
    # exp(min(x, 0)) / (1 + exp(-|x|)): 1 / (1 + exp(-x)) for x >= 0, exp(x) / (1 + exp(x)) below;
    # neither exp overflows, and five ufunc calls cost less than a `where` over two branches
    return xp.exp(xp.minimum(x, 0)) / (1 + xp.exp(xp.minimum(x, -x)))


def _sigmoid_as_ufuncs(op, producer):
    """The kernel's ufuncs as ops of their own: `fuse_elementwise` then runs them in one chain with the
    sigmoid's neighbours, into reused buffers, where the kernel call allocated four temporaries (three
    sigmoids a step are most of a small LSTM's time). Exact: the same ufuncs on the same dtypes.

    x is read three times; a gate split off along a later axis is a strided view, which each ufunc
    reads through NumPy's slower iterator (~3 µs on 8x64), so it is copied once first (`positive`)."""
    x, out = op.inputs[0], op.outputs[0]
    if (not isinstance(x, Variable) or x.kind != "dense" or x.dtype != out.dtype or x.dtype.kind != "f"
            or x.static_shape != out.static_shape):
        return None
    minimum, exp, negative, add, divide, positive = map(get_op, ("minimum", "exp", "negative", "add", "divide",
                                                                 "positive"))
    steps, source = [], x
    if _strided_piece(x, producer(x)):
        steps, source = [(positive, [x])], StepValue(0)
    numerator = StepValue(len(steps) + 1)
    return steps + [(minimum, [source, 0]), (exp, [PREVIOUS]),                          # exp(min(x, 0))
                    (negative, [source]), (minimum, [source, PREVIOUS]), (exp, [PREVIOUS]),
                    (add, [1, PREVIOUS]),                                               # 1 + exp(-|x|)
                    (divide, [numerator, PREVIOUS])]


def _strided_piece(x, made):
    """Whether x is a piece of a split along a later axis with more than one row before it."""
    if made is None or made.type != "split" or not x.ndim:
        return False
    (axis,) = norm_axes(made.attrs.get("axis", 0), x.ndim)
    lead = x.static_shape[:axis]
    return -1 in lead or math.prod(lead) > 1


_sigmoid = _defop("sigmoid", _activation_rule("sigmoid"), _sigmoid_kernel, elementwise=True, copies=True,
                  safe_when_static=True, cheaper=_sigmoid_as_ufuncs)


def sigmoid(x):
    """1 / (1 + exp(-x)), elementwise, computed without overflow."""
    return apply(_sigmoid, (x,), {})


# erf(x) for x in [0, 2]: x * P(x*x / 2 - 1); for x in [2, 6]: 1 - exp(-x*x) * Q(6 / x - 2);
# erf(x) rounds to 1 in float64 beyond 6. P and Q are Chebyshev least-squares fits made for
# this file against math.erf; the absolute error is below 2e-12 everywhere and the
# relative error below 2e-14 on [0, 2] (tests/unit/test_nn.py checks both).
_ERF_SMALL = (
    0.674933236039654, -0.2611118609313792, 0.11947913860992578, -0.04866277744413087,
    0.017128344570333034, -0.00523487589044419, 0.001405091435290425, -0.000335143275285336,
    7.18009633069968e-05, -1.3946903437143052e-05, 2.475897313738527e-06, -4.0368900906335043e-07,
    6.108430040615542e-08, -9.15932312891806e-09, 1.2023693311476188e-09)
_ERFC_LARGE = (
    0.17900115118896795, 0.081558389542923, -0.005039360270168689, -0.0002321515468214633,
    0.00012459619592992637, -1.736445332787822e-05, -1.0781992131917802e-07, 6.806644408861266e-07,
    -1.5724724059956293e-07)


def _polyval(u, coeffs):
    """sum(c[i] * u**i) by Horner's rule, in place after the first step."""
    acc = u * coeffs[-1]
    acc += coeffs[-2]
    for c in coeffs[-3::-1]:
        acc *= u
        acc += c
    return acc


def erf_kernel(xp, x):
    """The error function in float64, from xp's arithmetic alone (NumPy has no erf)."""
    z = xp.asarray(x, dtype=np.float64)
    a = xp.minimum(xp.abs(z), 6.0).reshape(-1)      # 1-D, so even a 0-d input is an array below
    out = _polyval(a * a * 0.5 - 1.0, _ERF_SMALL)
    out *= a
    tail = a >= 2.0                  # few elements in practice: evaluate the tail formula on those only
    if bool(xp.any(tail)):
        at = a[tail]
        erfc = _polyval(6.0 / at - 2.0, _ERFC_LARGE)
        erfc *= xp.exp(-at * at)
        out[tail] = 1.0 - erfc
    return xp.copysign(out.reshape(z.shape), z)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu_kernel(xp, x, approximate="none"):
    x = _float_array(xp, x)
    if approximate == "tanh":
        inner = x * x
        inner *= 0.044715 * _SQRT_2_OVER_PI
        inner += _SQRT_2_OVER_PI
        inner *= x
        out = xp.tanh(inner)
        out += 1
        out *= x
        out *= 0.5
        return out
    x64 = x.astype(np.float64)
    out = erf_kernel(xp, x64 * (1 / math.sqrt(2.0)))
    out += 1.0
    out *= x64
    out *= 0.5
    return out.astype(x.dtype, copy=False)


def _gelu_rule(x, approximate="none"):
    return Spec(x[0], _float_result("gelu", x[1]))


_gelu = _defop("gelu", _gelu_rule, _gelu_kernel, elementwise=True, copies=True, safe_when_static=True)


def gelu(x, approximate="none"):
    """x * Phi(x) with the exact erf form; approximate="tanh" uses the tanh formula (as PyTorch)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return apply(_gelu, (x,), {"approximate": approximate})


# --- softmax ---------------------------------------------------------------------------

def _softmax_rule(op):
    def rule(x, axis=-1):
        norm_axes(axis, len(x[0]), f"{op} axis")
        return Spec(x[0], _float_result(op, x[1]))
    return rule


def _softmax_kernel(xp, x, axis=-1):
    """The reductions are the array's methods: `xp.max(x)` adds 1-2 µs of dispatch a call."""
    x = _float_array(xp, x)
    e = x - x.max(axis=axis, keepdims=True)
    xp.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _log_softmax_kernel(xp, x, axis=-1):
    x = _float_array(xp, x)
    shifted = x - x.max(axis=axis, keepdims=True)
    shifted -= xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))
    return shifted


_softmax = _defop("softmax", _softmax_rule("softmax"), _softmax_kernel, copies=True)
_log_softmax = _defop("log_softmax", _softmax_rule("log_softmax"), _log_softmax_kernel, copies=True)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max so it cannot overflow."""
    return _call(_softmax, (x,), {"axis": int(axis)})


def log_softmax(x, axis=-1):
    """log(softmax(x)) along `axis`, computed as x - max - log(sum(exp(x - max)))."""
    return _call(_log_softmax, (x,), {"axis": int(axis)})


# --- linear ----------------------------------------------------------------------------

def _linear_rule(x, weight, bias):
    xs, ws = x[0], weight[0]
    _require_float("linear", "input", x[1])
    _require_same_dtype("linear", x, "weight", weight)
    _require_same_dtype("linear", x, "bias", bias)
    if len(ws) != 2:
        raise ValueError(f"linear: weight must be 2-D (out_features, in_features), got shape {shape_text(ws)}")
    if not xs:
        raise ValueError("linear: input must have at least one dimension")
    if not _same(xs[-1], ws[1]):
        raise ValueError(f"linear: input shape {shape_text(xs)} does not fit weight shape {shape_text(ws)}: "
                         f"the last input dim must be in_features={ws[1]}")
    if bias is not None and (len(bias[0]) != 1 or not _same(bias[0][0], ws[0])):
        raise ValueError(f"linear: bias must have shape {shape_text([ws[0]])}, got {shape_text(bias[0])}")
    return Spec(tuple(xs[:-1]) + (ws[0],), x[1])


def _linear_kernel(xp, x, weight, bias):
    out = xp.matmul(x, weight.T)
    if bias is not None:
        out += bias
    return out


def _emit_linear(gen, op):
    """Plan code on NumPy: the kernel's two calls inline, `matmul(x, w.T)` then `+= bias` into its fresh
    result (the same calls, so the same bits), without a Python frame per call (~0.3-0.8 µs: a layer at
    batch 1 is a 2-4 µs gemv)."""
    if not gen.numpy:
        return None
    x, weight, bias = op.inputs
    out = gen.targets(op)
    lines = [f"{out} = {gen.bound('matmul')}({gen.value(x)}, {gen.value(weight)}.T)"]
    if bias is not None:
        lines.append(f"{out} += {gen.value(bias)}")
    return lines


_linear = _defop("linear", _linear_rule, _linear_kernel, fresh=True, emit=_emit_linear)


def linear(x, weight, bias=None):
    """x @ weight.T + bias, with weight of shape (out_features, in_features) as in PyTorch."""
    return _call(_linear, (x, weight, bias), {})


# --- conv2d / max_pool2d -----------------------------------------------------------------

def _out_size(size, pad_total, kernel, stride, dilation, ceil_mode=False):
    if size == -1:
        return -1
    span = size + pad_total - dilation * (kernel - 1) - 1
    if span < 0:
        return 0
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    return out


def _image_rank(op, shape):
    if len(shape) not in (3, 4):
        raise ValueError(f"{op}: expected a 4-D (N, C, H, W) or 3-D (C, H, W) input, got shape {shape_text(shape)}")


def _conv_operands(op, x, weight, bias, layout):
    """The checks every convolution makes of its operands; returns (input shape, weight shape)."""
    xs, ws = x[0], weight[0]
    _image_rank(op, xs)
    _require_float(op, "input", x[1])
    _require_same_dtype(op, x, "weight", weight)
    _require_same_dtype(op, x, "bias", bias)
    if len(ws) != 4:
        raise ValueError(f"{op}: weight must be 4-D {layout}, got shape {shape_text(ws)}")
    return xs, ws


def _conv2d_rule(x, weight, bias, stride, padding, dilation, groups):
    xs, ws = _conv_operands("conv2d", x, weight, bias, "(out_channels, in_channels/groups, kh, kw)")
    out_ch, group_ch, kh, kw = ws
    if out_ch != -1 and out_ch % groups:
        raise ValueError(f"conv2d: out_channels={out_ch} (weight shape {shape_text(ws)}) is not divisible by groups={groups}")
    channels = xs[-3]
    if channels != -1 and group_ch != -1 and channels != group_ch * groups:
        raise ValueError(f"conv2d: input has {channels} channels (shape {shape_text(xs)}) but weight {shape_text(ws)} "
                         f"with groups={groups} expects {group_ch * groups}")
    if bias is not None and (len(bias[0]) != 1 or not _same(bias[0][0], out_ch)):
        raise ValueError(f"conv2d: bias must have shape {shape_text([out_ch])}, got {shape_text(bias[0])}")
    top, bottom, left, right = padding
    oh = _out_size(xs[-2], top + bottom, kh, stride[0], dilation[0]) if kh != -1 else -1
    ow = _out_size(xs[-1], left + right, kw, stride[1], dilation[1]) if kw != -1 else -1
    if oh == 0 or ow == 0:
        raise ValueError(f"conv2d: input spatial size {shape_text(xs[-2:])} with padding {tuple(padding)} is smaller "
                         f"than the kernel ({kh}, {kw}) at dilation {tuple(dilation)}")
    return Spec(tuple(xs[:-3]) + (out_ch, oh, ow), x[1])


def strided_view(xp, x, shape, strides):
    """A view of x's memory with these shape and strides. For a C-contiguous NumPy x, the ndarray
    constructor over its buffer: the same view as `as_strided`, which costs ~5 µs more a call (a
    convolution of one image makes two)."""
    if xp is np and x.flags.c_contiguous:
        return np.ndarray(shape, x.dtype, x, 0, strides)
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)


def _windows(xp, x, kernel, stride, dilation, out_hw):
    """View (N, C, OH, OW, KH, KW) of the sliding windows of an NCHW array (no copy)."""
    n, c = x.shape[:2]
    s = x.strides
    shape = (n, c, out_hw[0], out_hw[1], kernel[0], kernel[1])
    strides = (s[0], s[1], s[2] * stride[0], s[3] * stride[1], s[2] * dilation[0], s[3] * dilation[1])
    return strided_view(xp, x, shape, strides)


def _padded(xp, x, padding, value=0):
    """x (NCHW) with (top, bottom, left, right) rows and columns of `value` around it; x itself when
    there are none. A filled array and one slice assignment: xp.pad costs ~20 µs a call."""
    top, bottom, left, right = padding
    if not (top or bottom or left or right):
        return x
    n, c, h, w = x.shape
    shape = (n, c, h + top + bottom, w + left + right)
    out = xp.zeros(shape, x.dtype) if value == 0 else xp.full(shape, value, x.dtype)
    out[:, :, top:top + h, left:left + w] = x
    return out


def _batch_last(xp, x, padding):
    """NCHW x as a (C, H, W, N) array, padded by (top, bottom, left, right) zeros: the layout the
    convolutions gather their patches from. A window tap's (OH, OW, N) slab is then rows of OW*N
    elements (stride 1), where NCHW gave rows of OW pixels: on small images (8x8 digits, LeNet's
    later layers) NumPy's per-row cost made the gather most of a convolution. x already in that
    memory order (the convolutions' own results are) is a view, or one copy when padded."""
    top, bottom, left, right = padding
    n, c, h, w = x.shape
    moved = x.transpose(1, 2, 3, 0)
    if not (top or bottom or left or right):
        return xp.ascontiguousarray(moved)
    out = xp.zeros((c, h + top + bottom, w + left + right, n), x.dtype)
    out[:, top:top + h, left:left + w] = moved
    return out


def _batch_last_windows(xp, x, kernel, stride, dilation, out_hw):
    """View (C, KH, KW, OH, OW, N) of the sliding windows of a (C, H, W, N) array (no copy)."""
    s = x.strides
    shape = (x.shape[0], kernel[0], kernel[1], out_hw[0], out_hw[1], x.shape[3])
    strides = (s[0], s[1] * dilation[0], s[2] * dilation[1], s[1] * stride[0], s[2] * stride[1], s[3])
    return strided_view(xp, x, shape, strides)


def _conv2d_kernel(xp, x, weight, bias, stride, padding, dilation, groups):
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    n = x.shape[0]
    out_ch, group_ch, kh, kw = weight.shape
    top, bottom, left, right = padding
    oh = _out_size(x.shape[2] + top + bottom, 0, kh, stride[0], dilation[0])
    ow = _out_size(x.shape[3] + left + right, 0, kw, stride[1], dilation[1])
    if oh <= 0 or ow <= 0:
        raise ValueError(f"conv2d: padded input size {tuple(x.shape[2:])} is smaller than the dilated kernel")
    # im2col with the batch last: per group, (O/G, C/G*KH*KW) filters times (C/G*KH*KW, OH*OW*N)
    # patches, one GEMM (one per image cost a BLAS call each), summed over (c, kh, kw) as before.
    # The result stays (O, OH, OW, N) in memory and is returned as its NCHW view: a transposing copy
    # cost as much as the GEMM, and the ops after a convolution (activations, pooling, the next
    # convolution's gather) run on that layout as fast or faster.
    windows = _batch_last_windows(xp, _batch_last(xp, x, padding), (kh, kw), stride, dilation, (oh, ow))
    cols = windows.reshape(groups, group_ch * kh * kw, oh * ow * n)
    out = xp.matmul(weight.reshape(groups, out_ch // groups, group_ch * kh * kw), cols)   # (G, O/G, OH*OW*N)
    out = out.reshape(out_ch, oh, ow, n)
    if bias is not None:
        out += bias.reshape(out_ch, 1, 1, 1)
    out = out.transpose(3, 0, 1, 2)
    return out[0] if unbatched else out


_conv2d = _defop("conv2d", _conv2d_rule, _conv2d_kernel)


# --- conv_transpose2d (the gradient of conv2d with respect to its input) --------------------

def _conv_transpose2d_rule(x, weight, bias, stride, padding, output_padding, dilation, groups):
    xs, ws = _conv_operands("conv_transpose2d", x, weight, bias, "(in_channels, out_channels/groups, kh, kw)")
    if ws[0] != -1 and (ws[0] % groups or (xs[-3] != -1 and xs[-3] != ws[0])):
        raise ValueError(f"conv_transpose2d: input has {xs[-3]} channels (shape {shape_text(xs)}) but weight {shape_text(ws)} "
                         f"expects {ws[0]} (groups={groups})")
    for o, s_, d in zip(output_padding, stride, dilation):
        if o >= max(s_, d):
            raise ValueError(f"conv_transpose2d: output_padding {tuple(output_padding)} must be smaller than the "
                             f"stride or the dilation")
    out_ch = -1 if ws[1] == -1 else ws[1] * groups
    if bias is not None and (len(bias[0]) != 1 or not _same(bias[0][0], out_ch)):
        raise ValueError(f"conv_transpose2d: bias must have shape {shape_text([out_ch])}, got {shape_text(bias[0])}")
    size = [-1 if n == -1 else (n - 1) * s_ - 2 * p + d * (k - 1) + o + 1
            for n, s_, p, d, k, o in zip(xs[-2:], stride, padding, dilation, ws[2:], output_padding)]
    if any(n == 0 or n < -1 for n in size):
        raise ValueError(f"conv_transpose2d: the output size {tuple(size)} is not positive")
    return Spec(tuple(xs[:-3]) + (out_ch,) + tuple(size), x[1])


def _conv_transpose2d_kernel(xp, x, weight, bias, stride, padding, output_padding, dilation, groups):
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    n, c, h, w = x.shape
    in_g, out_g, kh, kw = weight.shape[0] // groups, weight.shape[1], weight.shape[2], weight.shape[3]
    (sh, sw), (dh, dw), (ph, pw), (oph, opw) = stride, dilation, padding, output_padding
    full_h, full_w = (h - 1) * sh + dh * (kh - 1) + 1 + oph, (w - 1) * sw + dw * (kw - 1) + 1 + opw
    full = xp.zeros((n, out_g * groups, full_h, full_w), dtype=x.dtype)
    for g in range(groups):
        xg = x[:, g * in_g:(g + 1) * in_g]
        wg = weight[g * in_g:(g + 1) * in_g]
        for i in range(kh):
            for j in range(kw):
                # each input pixel scatters x * w[:, :, i, j] to (row * stride + i * dilation, col * ...)
                part = xp.tensordot(xg, wg[:, :, i, j], axes=([1], [0])).transpose(0, 3, 1, 2)
                full[:, g * out_g:(g + 1) * out_g, i * dh:i * dh + (h - 1) * sh + 1:sh,
                     j * dw:j * dw + (w - 1) * sw + 1:sw] += part
    out = full[:, :, ph:full_h - ph, pw:full_w - pw]
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    out = xp.ascontiguousarray(out)
    return out[0] if unbatched else out


_conv_transpose2d = _defop("conv_transpose2d", _conv_transpose2d_rule, _conv_transpose2d_kernel)


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution over NCHW input; weight (in_channels, out_channels/groups, kh, kw) as PyTorch."""
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"conv_transpose2d: groups must be a positive int, got {groups!r}")
    attrs = {"stride": positive_pair(stride, "conv_transpose2d stride"),
             "padding": int_pair(padding, "conv_transpose2d padding"),
             "output_padding": int_pair(output_padding, "conv_transpose2d output_padding"),
             "dilation": positive_pair(dilation, "conv_transpose2d dilation"), "groups": groups}
    return _call(_conv_transpose2d, (x, weight, bias), attrs)


def conv_padding(padding, kernel_size, dilation, stride, op="conv2d"):
    """PyTorch's padding argument (int, pair, "valid", "same") as (top, bottom, left, right)."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding != "same":
            raise ValueError(f"{op}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
        if stride != (1, 1):
            raise ValueError(f"{op}: padding='same' needs stride 1, got stride {stride}")
        pads = []
        for k, d in zip(kernel_size, dilation):
            total = d * (k - 1)
            pads += [total // 2, total - total // 2]
        return tuple(pads)
    ph, pw = int_pair(padding, f"{op} padding")
    if min(ph, pw) < 0:
        raise ValueError(f"{op}: padding must be non-negative, got {padding!r}")
    return (ph, ph, pw, pw)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) over NCHW input, PyTorch's arguments and layouts."""
    stride = positive_pair(stride, "conv2d stride")
    dilation = positive_pair(dilation, "conv2d dilation")
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"conv2d: groups must be a positive int, got {groups!r}")
    kernel = _meta(weight)[0][-2:]
    attrs = {"stride": stride, "padding": conv_padding(padding, kernel, dilation, stride),
             "dilation": dilation, "groups": int(groups)}
    return _call(_conv2d, (x, weight, bias), attrs)


def _max_pool2d_rule(x, kernel_size, stride, padding, dilation, ceil_mode):
    xs = x[0]
    _image_rank("max_pool2d", xs)
    if x[1].kind not in "iuf":
        raise TypeError(f"max_pool2d: expected a real-valued input, got dtype {x[1]}")
    for k, p, d in zip(kernel_size, padding, dilation):
        if p * 2 > d * (k - 1) + 1:
            raise ValueError(f"max_pool2d: padding {tuple(padding)} must be at most half of the effective "
                             f"kernel size {tuple(kernel_size)} (dilation {tuple(dilation)})")
    dims = []
    for size, k, s, p, d in zip(xs[-2:], kernel_size, stride, padding, dilation):
        out = _pool_out_size(size, k, s, p, d, ceil_mode)
        if out == 0:
            raise ValueError(f"max_pool2d: input spatial size {shape_text(xs[-2:])} with padding {tuple(padding)} "
                             f"is smaller than the kernel {tuple(kernel_size)}")
        dims.append(out)
    return Spec(tuple(xs[:-2]) + tuple(dims), x[1])


def _pool_out_size(size, kernel, stride, pad, dilation, ceil_mode):
    out = _out_size(size, 2 * pad, kernel, stride, dilation, ceil_mode)
    if ceil_mode and out > 0 and (out - 1) * stride >= size + pad:
        out -= 1                    # the last window must start inside the input or the left padding
    return out


def _max_pool2d_kernel(xp, x, kernel_size, stride, padding, dilation, ceil_mode):
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    h, w = x.shape[2:]
    out_hw = [_pool_out_size(size, k, s, p, d, ceil_mode)
              for size, k, s, p, d in zip((h, w), kernel_size, stride, padding, dilation)]
    if min(out_hw) <= 0:
        raise ValueError(f"max_pool2d: input size ({h}, {w}) is smaller than the kernel {tuple(kernel_size)}")
    # right/bottom padding also covers windows that ceil_mode lets run past the edge
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - size - 2 * p)
             for o, size, k, s, p, d in zip(out_hw, (h, w), kernel_size, stride, padding, dilation)]
    if any(padding) or any(extra):
        low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        x = _padded(xp, x, (padding[0], padding[0] + extra[0], padding[1], padding[1] + extra[1]), low)
    if kernel_size[0] * kernel_size[1] > _POOL_TAPS:
        out = xp.max(_windows(xp, x, kernel_size, stride, dilation, out_hw), axis=(4, 5))
    else:
        out = _max_of_taps(xp, x, kernel_size, stride, dilation, out_hw)
    return out[0] if unbatched else out


_POOL_TAPS = 64     # larger windows reduce over the window view (one call, however slow per element)


def _max_of_taps(xp, x, kernel_size, stride, dilation, out_hw):
    """The elementwise maximum of the window's taps, one strided view of x per tap (the top-left pixels
    of every window, the next ones, ...): a 2x2 pool is three `maximum` calls, 10-50x faster than
    reducing the window view's two short strided axes. NaNs propagate as in `max`."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel_size, stride, dilation, out_hw
    taps = [x[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            for i in range(kh) for j in range(kw)]
    if len(taps) == 1:
        return taps[0].copy()
    out = xp.maximum(taps[0], taps[1])
    for tap in taps[2:]:
        xp.maximum(out, tap, out=out)
    return out


_max_pool2d = _defop("max_pool2d", _max_pool2d_rule, _max_pool2d_kernel)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over sliding windows of NCHW input; stride defaults to kernel_size; padding is -inf."""
    kernel_size = positive_pair(kernel_size, "max_pool2d kernel_size")
    stride = kernel_size if stride is None else positive_pair(stride, "max_pool2d stride")
    padding = int_pair(padding, "max_pool2d padding")
    if min(padding) < 0:
        raise ValueError(f"max_pool2d: padding must be non-negative, got {padding}")
    dilation = positive_pair(dilation, "max_pool2d dilation")
    attrs = {"kernel_size": kernel_size, "stride": stride, "padding": padding, "dilation": dilation,
             "ceil_mode": bool(ceil_mode)}
    return _call(_max_pool2d, (x,), attrs)


# --- layer_norm ------------------------------------------------------------------------------

def _layer_norm_rule(x, weight, bias, normalized_shape, eps):
    xs, norm = x[0], tuple(normalized_shape)
    _require_float("layer_norm", "input", x[1])
    _require_same_dtype("layer_norm", x, "weight", weight)
    _require_same_dtype("layer_norm", x, "bias", bias)
    if not norm or len(norm) > len(xs) or not all(_same(a, b) for a, b in zip(xs[len(xs) - len(norm):], norm)):
        raise ValueError(f"layer_norm: input shape {shape_text(xs)} does not end with normalized_shape {shape_text(norm)}")
    for what, p in (("weight", weight), ("bias", bias)):
        if p is not None and (len(p[0]) != len(norm) or not all(_same(a, b) for a, b in zip(p[0], norm))):
            raise ValueError(f"layer_norm: {what} shape {shape_text(p[0])} must equal normalized_shape {shape_text(norm)}")
    return Spec(xs, x[1])


def _layer_norm_kernel(xp, x, weight, bias, normalized_shape, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    centered = x - xp.mean(x, axis=axes, keepdims=True)
    var = xp.mean(centered * centered, axis=axes, keepdims=True)
    var += eps
    centered *= 1 / xp.sqrt(var)     # float32 stays float32: the Python 1 is weak
    if weight is not None:
        centered *= weight
    if bias is not None:
        centered += bias
    return centered


_layer_norm = _defop("layer_norm", _layer_norm_rule, _layer_norm_kernel, copies=True)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing `normalized_shape` dims (biased variance), then scale and shift."""
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(d) for d in normalized_shape)
    return _call(_layer_norm, (x, weight, bias), {"normalized_shape": normalized_shape, "eps": float(eps)})


# --- dropout ---------------------------------------------------------------------------------

def _uniform(xp, shape):
    """Uniform [0, 1) samples from runtime's seeded generator (`rt.seed`), on xp's device."""
    rng = default_rng()
    if xp is np:
        return rng.random(shape, dtype=np.float32)
    return xp.random.RandomState(int(rng.integers(2 ** 63))).random_sample(shape, dtype=np.float32)


def _dropout_rule(x, p):
    _require_float("dropout", "input", x[1])
    return Spec(x[0], x[1])


def _dropout_kernel(xp, x, p):
    if p >= 1:
        return xp.zeros_like(x)
    keep = _uniform(xp, x.shape) >= p
    return xp.where(keep, x * (1 / (1 - p)), 0)


_dropout = _defop("dropout", _dropout_rule, _dropout_kernel, pure=False, random=True)


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p); the identity when not training.

    The mask is drawn each time the op runs (each eager call, each run of a
    Program) from the generator `rt.seed(n)` resets.
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, got {p!r}")
    if not training or p == 0:
        return x
    return _call(_dropout, (x,), {"p": float(p)})


# --- cross_entropy ---------------------------------------------------------------------------

_REDUCTIONS = ("mean", "sum", "none")


def _cross_entropy_rule(logits, target, reduction, ignore_index, label_smoothing):
    ls, ts = logits[0], target[0]
    _require_float("cross_entropy", "logits", logits[1])
    if not ls:
        raise ValueError("cross_entropy: logits must have a class dimension, got a 0-d array")
    class_axis = 1 if len(ls) > 1 else 0
    if target[1].kind == "f":
        _require_same_dtype("cross_entropy", logits, "probability target", target)
        if len(ts) != len(ls) or not all(_same(a, b) for a, b in zip(ts, ls)):
            raise ValueError(f"cross_entropy: a probability target must have the logits' shape {shape_text(ls)}, "
                             f"got {shape_text(ts)}")
    elif target[1].kind in "iu":
        expected = ls[:class_axis] + ls[class_axis + 1:]
        if len(ts) != len(expected) or not all(_same(a, b) for a, b in zip(ts, expected)):
            raise ValueError(f"cross_entropy: logits of shape {shape_text(ls)} (classes on axis {class_axis}) need "
                             f"class-index targets of shape {shape_text(expected)}, got {shape_text(ts)}")
    else:
        raise TypeError(f"cross_entropy: target must hold integer class indices or float probabilities, "
                        f"got dtype {target[1]}")
    shape = ls[:class_axis] + ls[class_axis + 1:] if reduction == "none" else ()
    return Spec(shape, logits[1])


def _cross_entropy_kernel(xp, logits, target, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    axis = 1 if logits.ndim > 1 else 0
    classes = logits.shape[axis]
    logp = _log_softmax_kernel(xp, logits, axis)
    if target.dtype.kind == "f":
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        loss = -xp.sum(target * logp, axis=axis)
        count = None
    else:
        # array methods and plain indexing where they do the same work: NumPy's function wrappers
        # (take_along_axis, expand_dims, sum, any) made most of this kernel's ~20 µs at batch 64
        valid = target != ignore_index
        bad = valid & ((target < 0) | (target >= classes))
        if bool(bad.any()):
            value = int(target[bad].ravel()[0])
            raise IndexError(f"cross_entropy: target {value} is out of range for {classes} classes")
        safe = xp.where(valid, target, 0)
        if logp.ndim == 2:
            loss = -logp[xp.arange(logp.shape[0]), safe]
        else:
            loss = -xp.squeeze(xp.take_along_axis(logp, xp.expand_dims(safe, axis), axis=axis), axis=axis)
        if label_smoothing:
            loss = (1 - label_smoothing) * loss - label_smoothing * xp.mean(logp, axis=axis)
        loss = xp.where(valid, loss, 0)
        count = valid.sum()
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "mean":
        if count is None:
            total = total / max(loss.size, 1)
        else:                       # all targets ignored: NaN, as PyTorch
            total = xp.where(count > 0, total / xp.maximum(count, 1), np.nan)
    return xp.asarray(total, dtype=logits.dtype)


_cross_entropy = _defop("cross_entropy", _cross_entropy_rule, _cross_entropy_kernel, copies=True)


def cross_entropy(logits, target, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    """Softmax cross entropy of logits (N, C, ...) against class indices (N, ...) or probabilities.

    As PyTorch: targets equal to `ignore_index` count for nothing (the mean is
    over the others), `label_smoothing` mixes in the uniform distribution.
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing!r}")
    attrs = {"reduction": reduction, "ignore_index": int(ignore_index), "label_smoothing": float(label_smoothing)}
    return _call(_cross_entropy, (logits, target), attrs)


# --- embedding -------------------------------------------------------------------------------

def _embedding_rule(ids, weight):
    if ids[1].kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids[1]}")
    if len(weight[0]) != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got {shape_text(weight[0])}")
    return Spec(tuple(ids[0]) + (weight[0][1],), weight[1])


def _embedding_kernel(xp, ids, weight):
    ids = xp.asarray(ids)
    if xp is np:            # NumPy's take raises past the end itself: only negative ids need a look
        if not ids.size or ids.min() >= 0:
            try:
                return weight.take(ids, axis=0)
            except IndexError:
                pass
    elif not ids.size or (int(ids.min()) >= 0 and int(ids.max()) < weight.shape[0]):
        return xp.take(weight, ids, axis=0)
    low, high = int(ids.min()), int(ids.max())
    raise IndexError(f"embedding: index {low if low < 0 else high} is out of range for "
                     f"{weight.shape[0]} embeddings")


_embedding = _defop("embedding", _embedding_rule, _embedding_kernel)


def embedding(ids, weight):
    """Rows of `weight` (num_embeddings, embedding_dim) picked by integer `ids`: shape ids.shape + (dim,)."""
    return _call(_embedding, (ids, weight), {})
