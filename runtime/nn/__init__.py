"""Neural-network layers (PyTorch/Paddle style) over the runtime's ops.

`Layer` is the base class; `functional` holds the functions (`F.conv2d`, ...);
`init` the initializers. Parameters are `runtime.Parameter` Tensors, which a
traced Program reads as persistable inputs, never as constants.
"""
from ..tensor import Parameter
from . import functional, init, op_samples, utils  # noqa: F401  (op_samples: the nn ops' conformance samples)
from .container import LayerDict, LayerList, ParameterDict, ParameterList, Sequential
from .layer import Layer, LoadResult
from .layers import (ELU, GELU, AdaptiveAvgPool1D, AdaptiveAvgPool2D, AdaptiveMaxPool1D, AdaptiveMaxPool2D, AvgPool1D,
                     AvgPool2D, Conv2DTranspose, MaxPool1D, BCELoss, BCEWithLogitsLoss, Conv1D, Conv2D, Conv3D,
                     ConvTranspose2D, CosineSimilarity, CrossEntropyLoss, Dropout, Embedding, Flatten, Hardsigmoid,
                     Hardswish, Hardtanh, HuberLoss, Identity, L1Loss, LayerNorm, LeakyReLU, Linear, LogSigmoid,
                     LogSoftmax, MaxPool2D, Mish, MSELoss, NLLLoss, Pad2D, PReLU, ReLU, ReLU6, Sigmoid, SiLU,
                     SmoothL1Loss, Softmax, Softplus, Softsign, Tanh, Upsample, ZeroPad2D, Unflatten, RMSNorm,
                     ReflectionPad2d, ReplicationPad2d, ConstantPad2d, PixelShuffle, PixelUnshuffle,
                     Dropout1d, Dropout2d, Dropout3d)
from .normalization import (BatchNorm1D, BatchNorm2D, BatchNorm3D, GroupNorm, InstanceNorm1D, InstanceNorm2D,
                            InstanceNorm3D)
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from . import more_layers, transformer
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer
from .more_layers import *  # noqa: F401,F403  (more of torch.nn's classes: losses, activations, Unfold, ...)
from ..torch_methods import module_getattr as _module_getattr

__all__ = ["Layer", "Parameter", "Sequential", "LayerList", "LayerDict", "Linear", "Conv1D", "Conv2D",
           "ConvTranspose2D", "MaxPool2D", "AvgPool2D", "AdaptiveAvgPool2D", "ReLU", "GELU", "Sigmoid", "Softmax",
           "Flatten", "Dropout", "Identity", "LayerNorm", "BatchNorm1D", "BatchNorm2D", "GroupNorm", "Embedding",
           "RNNCell", "GRUCell", "LSTMCell", "RNN", "GRU", "LSTM", "MultiheadAttention", "TransformerEncoderLayer",
           "LoadResult", "functional", "init", "utils", "Tanh", "ReLU6", "Hardswish", "Hardsigmoid", "Hardtanh", "Softsign",
           "LogSigmoid", "Mish", "SiLU", "LeakyReLU", "ELU", "Softplus", "LogSoftmax", "PReLU", "Pad2D", "ZeroPad2D",
           "Upsample", "Conv3D", "CosineSimilarity", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
           "BCEWithLogitsLoss", "NLLLoss", "CrossEntropyLoss", "BatchNorm3D", "InstanceNorm1D", "InstanceNorm2D",
           "InstanceNorm3D", "AdaptiveMaxPool2D", "AdaptiveAvgPool1D", "AdaptiveMaxPool1D", "MaxPool1D", "AvgPool1D",
           "Conv2DTranspose"]

# PyTorch's spellings of the same classes (torch.nn), so a model file ports by changing its imports
Module, ModuleList, ModuleDict = Layer, LayerList, LayerDict
Conv1d, Conv2d, Conv3d, ConvTranspose2d = Conv1D, Conv2D, Conv3D, ConvTranspose2D
BatchNorm1d, BatchNorm2d, BatchNorm3d = BatchNorm1D, BatchNorm2D, BatchNorm3D
InstanceNorm1d, InstanceNorm2d, InstanceNorm3d = InstanceNorm1D, InstanceNorm2D, InstanceNorm3D
MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d = MaxPool1D, MaxPool2D, AvgPool1D, AvgPool2D
AdaptiveAvgPool1d, AdaptiveAvgPool2d = AdaptiveAvgPool1D, AdaptiveAvgPool2D
AdaptiveMaxPool1d, AdaptiveMaxPool2d = AdaptiveMaxPool1D, AdaptiveMaxPool2D
ZeroPad2d = ZeroPad2D
__all__ += ["Module", "ModuleList", "ModuleDict", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d", "BatchNorm1d",
            "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "MaxPool1d",
            "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
            "AdaptiveMaxPool2d", "ZeroPad2d", "TransformerEncoder", "ParameterList", "ParameterDict", "Unflatten",
            "RMSNorm", "Dropout1d", "Dropout2d", "Dropout3d", "ReflectionPad2d", "ReplicationPad2d", "ConstantPad2d",
            "PixelShuffle", "PixelUnshuffle"] + more_layers.__all__ + transformer.__all__

# torch.nn names with no layer here, and what to use instead
NOT_PORTED = {
    "DataParallel": "one process: call the model directly",
    "SyncBatchNorm": "BatchNorm1d/2d/3d",
    "LazyLinear": "Linear with in_features given",
    "parallel": "one process: call the model directly",
}


__getattr__ = _module_getattr("runtime.nn", "torch.nn", NOT_PORTED)
