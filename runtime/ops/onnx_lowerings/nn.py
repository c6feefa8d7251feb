"""ONNX lowerings of the neural-network ops and activations (PyTorch's layouts are ONNX's)."""
import math

import numpy as np

from ..nn_ops import _pool_out_size
from ..registry import facet
from .elementwise import expm1, refuse_float64
from .reduction import reduce


def _float_input(g, op):
    """The op's first input in its (float) result dtype, as the kernels compute."""
    return g.value(op.inputs[0], op.outputs[0].dtype)


@facet("relu", "onnx")
def _relu(g, op):
    return g.node("Relu", [_float_input(g, op)])


@facet("relu_grad", "onnx")
def _relu_grad(g, op):
    """relu's cotangent: Where(x > 0, g, 0)."""
    grad, x = op.inputs
    dtype = op.outputs[0].dtype
    positive = g.node("Greater", [g.value(x), g.const(0, x.dtype)])
    return g.node("Where", [positive, g.value(grad, dtype), g.const(0, dtype)])


@facet("sigmoid", "onnx")
def _sigmoid(g, op):
    return g.node("Sigmoid", [_float_input(g, op)])


@facet("silu", "onnx")
def _silu(g, op):
    x = _float_input(g, op)
    return g.node("Mul", [x, g.node("Sigmoid", [x])])


@facet("erf", "onnx")
def _erf(g, op):
    refuse_float64(g, op, "Erf")
    return g.node("Erf", [_float_input(g, op)])


@facet("gelu", "onnx")
def _gelu(g, op):
    x = _float_input(g, op)
    dtype = op.outputs[0].dtype
    if op.attrs.get("approximate", "none") == "tanh":
        c = math.sqrt(2 / math.pi)
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Mul", [g.node("Add", [x, g.node("Mul", [cube, g.const(0.044715, dtype)])]), g.const(c, dtype)])
        half = g.node("Add", [g.node("Tanh", [inner]), g.const(1, dtype)])
    else:
        refuse_float64(g, op, "Erf")
        half = g.node("Add", [g.node("Erf", [g.node("Mul", [x, g.const(1 / math.sqrt(2), dtype)])]),
                              g.const(1, dtype)])
    return g.node("Mul", [g.node("Mul", [x, half]), g.const(0.5, dtype)])


@facet("leaky_relu", "onnx")
def _leaky_relu(g, op):
    """Where, not LeakyRelu: ONNX's alpha attr is a float32, too coarse for float64."""
    x = _float_input(g, op)
    dtype = op.outputs[0].dtype
    slope = g.node("Mul", [x, g.const(op.attrs.get("negative_slope", 0.01), dtype)])
    return g.node("Where", [g.node("GreaterOrEqual", [x, g.const(0, dtype)]), x, slope])


@facet("elu", "onnx")
def _elu(g, op):
    """x where x > 0, else alpha * expm1(x) (the kernel's form; ONNX's Elu alpha is a float32)."""
    x = _float_input(g, op)
    dtype = op.outputs[0].dtype
    negative = expm1(g, g.node("Min", [x, g.const(0, dtype)]), dtype)
    scaled = g.node("Mul", [negative, g.const(op.attrs.get("alpha", 1.0), dtype)])
    return g.node("Where", [g.node("Greater", [x, g.const(0, dtype)]), x, scaled])


@facet("softplus", "onnx")
def _softplus(g, op):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's rule)."""
    x = _float_input(g, op)
    dtype = op.outputs[0].dtype
    beta, threshold = op.attrs.get("beta", 1.0), op.attrs.get("threshold", 20.0)
    scaled = g.node("Mul", [x, g.const(beta, dtype)])
    soft = g.node("Div", [g.node("Softplus", [scaled]), g.const(beta, dtype)])
    return g.node("Where", [g.node("Greater", [scaled, g.const(threshold, dtype)]), x, soft])


@facet("softmax", "onnx")
def _softmax(g, op):
    return g.node("Softmax", [_float_input(g, op)], axis=int(op.attrs.get("axis", -1)))


@facet("log_softmax", "onnx")
def _log_softmax(g, op):
    return g.node("LogSoftmax", [_float_input(g, op)], axis=int(op.attrs.get("axis", -1)))


@facet("logsumexp", "onnx")
def _logsumexp(g, op):
    x = _float_input(g, op)
    axis, keepdims = op.attrs.get("axis"), op.attrs.get("keepdims")
    top = reduce(g, "ReduceMax", x, axis, True)
    finite_top = g.node("Where", [g.node("IsInf", [top]), g.const(0, op.outputs[0].dtype), top])
    summed = reduce(g, "ReduceSum", g.node("Exp", [g.node("Sub", [x, finite_top])]), axis, True)
    out = g.node("Add", [g.node("Log", [summed]), finite_top])
    if not keepdims:
        axes = list(range(g.rank(op.inputs[0]))) if axis is None else \
            (list(axis) if isinstance(axis, (list, tuple)) else [axis])
        out = g.node("Squeeze", [out, g.ints(axes)])
    return out


@facet("linear", "onnx")
def _linear(g, op):
    x, weight, bias = op.inputs
    out = g.node("MatMul", [g.value(x), g.node("Transpose", [g.value(weight)], perm=[1, 0])])
    return out if bias is None else g.node("Add", [out, g.value(bias)])


@facet("embedding", "onnx")
def _embedding(g, op):
    ids, weight = op.inputs
    return g.node("Gather", [g.value(weight), g.value(ids, np.int64)], axis=0)


@facet("layer_norm", "onnx")
def _layer_norm(g, op):
    x, weight, bias = op.inputs
    dtype = op.outputs[0].dtype
    shape = tuple(op.attrs["normalized_shape"])
    scale = g.value(weight) if weight is not None else g.const(np.ones(shape, dtype))
    inputs = [g.value(x), scale] + ([g.value(bias)] if bias is not None else [])
    return g.node("LayerNormalization", inputs, axis=-len(shape), epsilon=float(op.attrs["eps"]))


def batched(g, op, make):
    """Run `make(value)` on NCHW input; an unbatched CHW input gets a batch of one around it."""
    x = g.value(op.inputs[0])
    if g.rank(op.inputs[0]) == 4:
        return make(x)
    out = make(g.node("Unsqueeze", [x, g.ints([0])]))
    return g.node("Squeeze", [out, g.ints([0])])


@facet("conv2d", "onnx")
def _conv2d(g, op):
    _, weight, bias = op.inputs
    top, bottom, left, right = op.attrs["padding"]
    inputs = [g.value(weight)] + ([g.value(bias)] if bias is not None else [])
    return batched(g, op, lambda x: g.node(
        "Conv", [x, *inputs], strides=list(op.attrs["stride"]), pads=[top, left, bottom, right],
        dilations=list(op.attrs["dilation"]), group=int(op.attrs["groups"])))


@facet("max_pool2d", "onnx")
def _max_pool2d(g, op):
    """MaxPool; ceil_mode as end padding, since PyTorch's rule (no window may start in the right
    padding) is not ONNX's."""
    if op.outputs[0].dtype.kind != "f":
        g.fail(f"onnxruntime's MaxPool has no {op.outputs[0].dtype.name} kernel")
    kernel, stride, dilation = op.attrs["kernel_size"], op.attrs["stride"], op.attrs["dilation"]
    begin = list(op.attrs["padding"])
    end = list(begin)
    if op.attrs["ceil_mode"]:
        sizes = g.shape(op.inputs[0])[-2:]
        if -1 in sizes:
            g.fail("max_pool2d with ceil_mode=True needs the spatial dims known while tracing")
        for i, (size, k, s, p, d) in enumerate(zip(sizes, kernel, stride, begin, dilation)):
            out = _pool_out_size(size, k, s, p, d, True)
            end[i] = max(p, (out - 1) * s + d * (k - 1) + 1 - size - p)
    return batched(g, op, lambda x: g.node(
        "MaxPool", [x], kernel_shape=list(kernel), strides=list(stride), pads=begin + end,
        dilations=list(dilation)))
