"""Neural-network layers (PyTorch/Paddle style) over the runtime's ops.

`Layer` is the base class; `functional` holds the functions (`F.conv2d`, ...);
`init` the initializers. Parameters are `runtime.Parameter` Tensors, which a
traced Program reads as persistable inputs, never as constants.
"""
from ..tensor import Parameter
from . import functional, init
from .container import Sequential
from .layer import Layer, LoadResult
from .layers import (GELU, Conv2D, Dropout, Embedding, Flatten, LayerNorm, Linear, MaxPool2D, ReLU, Sigmoid,
                     Softmax)

__all__ = ["Layer", "Parameter", "Sequential", "Linear", "Conv2D", "MaxPool2D", "ReLU", "GELU", "Sigmoid",
           "Softmax", "Flatten", "Dropout", "LayerNorm", "Embedding", "LoadResult", "functional", "init"]
