"""Neural-network layers (PyTorch/Paddle style) over the runtime's ops.

`Layer` is the base class; `functional` holds the functions (`F.conv2d`, ...);
`init` the initializers. Parameters are `runtime.Parameter` Tensors, which a
traced Program reads as persistable inputs, never as constants.
"""
from ..tensor import Parameter
from . import functional, init, op_samples  # noqa: F401  (op_samples: the nn ops' conformance samples)
from .container import LayerDict, LayerList, Sequential
from .layer import Layer, LoadResult
from .layers import (GELU, AdaptiveAvgPool2D, AvgPool2D, Conv1D, Conv2D, ConvTranspose2D, Dropout, Embedding, Flatten,
                     Identity, LayerNorm, Linear, MaxPool2D, ReLU, Sigmoid, Softmax)
from .normalization import BatchNorm1D, BatchNorm2D, GroupNorm
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .attention import MultiheadAttention, TransformerEncoderLayer

__all__ = ["Layer", "Parameter", "Sequential", "LayerList", "LayerDict", "Linear", "Conv1D", "Conv2D",
           "ConvTranspose2D", "MaxPool2D", "AvgPool2D", "AdaptiveAvgPool2D", "ReLU", "GELU", "Sigmoid", "Softmax",
           "Flatten", "Dropout", "Identity", "LayerNorm", "BatchNorm1D", "BatchNorm2D", "GroupNorm", "Embedding",
           "RNNCell", "GRUCell", "LSTMCell", "RNN", "GRU", "LSTM", "MultiheadAttention", "TransformerEncoderLayer",
           "LoadResult", "functional", "init"]
