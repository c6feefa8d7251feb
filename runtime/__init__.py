"""dy2static's runtime: `import runtime as rt` gives a NumPy-like array namespace.

Eager Tensors run ops now; inside a trace the same calls record a Program that
the Executor compiles and runs on NumPy (CPU) or CuPy (GPU).
"""
from . import dtypes
from .dtypes import (bool, complex64, complex128, finfo, float16, float32, float64, iinfo, int8, int16, int32,  # noqa: A004
                     int64, uint8, uint16, uint32, uint64)
from .tensor import Parameter, Tensor
from .ir import Block, Operator, Program, Variable
from .tracer import Tracer
from .ops import *  # noqa: F401,F403  (the array namespace)
from .ops import FUNCTIONS as _FUNCTIONS, NUMPY_NAMES as _NUMPY_NAMES, print_, assert_, raise_
from .ops.creation import asarray, tensor
from .ops.registry import REGISTRY, OpDef, defop, get_op, register
from .control_flow import Undefined, cond, while_loop
from .scan_loop import scan
from .tracing import InputSpec, trace
from .codegen.plan import Plan
from .executor import Executor
from .ops.gradients import fused as _fused_gradient  # noqa: E402,F401  (every op's gradient rule; fused's op comes from runtime.passes)
from . import writes  # noqa: E402,F401  (gives Tensor set_value and Parameter its in-place operators)
from .backends import get_backend, gpu_available, DeviceUnavailableError
from .errors import AxisError, ControlFlowError, FeedError, IterationLimitError, ProgramRunError, SymbolicBoolError
from . import printer  # noqa: F401  (gives Program its str)
from .serialization import ProgramFormatError
from .verify import verify
from .rng import default_rng, seed
from .autodiff import control_flow as _control_flow_gradients, arrays as _array_gradients  # noqa: F401  (vjp rules)
from .autodiff import scan as _scan_gradient  # noqa: F401  (scan's vjp rule)
from .autodiff.functional import grad, value_and_grad
from .autodiff.tape import enable_grad, no_grad
from .autodiff import backward as _backward  # noqa: E402,F401  (gives Tensor and Variable .backward())
from . import nn  # noqa: E402
from . import optim  # noqa: E402
from . import distributions, utils  # noqa: E402
import importlib as _importlib  # noqa: E402
linalg = _importlib.import_module(".linalg", __name__)   # the extension, not runtime.ops.linalg that `*` brought in
fft = _importlib.import_module(".fft", __name__)
from .array_api import (__array_api_version__, __array_namespace_info__, can_cast, e, empty, empty_like,  # noqa: E402
                        from_dlpack, inf, isdtype, nan, newaxis, pi, result_type)
from . import torch_functions as _torch_functions  # noqa: E402
from .torch_methods import module_getattr as _module_getattr  # noqa: E402
from .torch_functions import *  # noqa: E402,F401,F403  (PyTorch's spellings over the array API functions they extend)

__all__ = sorted(_FUNCTIONS) + sorted(_NUMPY_NAMES) + [
    "tensor", "asarray", "Tensor", "Parameter", "Program", "Block", "Operator", "Variable", "Tracer", "cond", "while_loop", "scan",
    "InputSpec", "trace", "verify", "Executor", "Plan", "get_backend", "gpu_available", "seed", "print_", "assert_",
    "raise_", "grad", "value_and_grad", "no_grad", "enable_grad",
    "Undefined", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "float32", "float64", "complex64", "complex128", "finfo", "iinfo", "nn", "optim", "distributions", "utils", "linalg", "fft", "can_cast", "isdtype",
    "result_type", "e", "pi", "inf", "nan", "newaxis", "empty", "empty_like", "from_dlpack",
]
__all__ += sorted(set(_torch_functions.__all__) - set(__all__))

# PyTorch's torch.* names of nn.functional's functions
cosine_similarity, pairwise_distance, pdist = nn.functional.cosine_similarity, nn.functional.pairwise_distance, \
    nn.functional.pdist
__all__ += ["cosine_similarity", "pairwise_distance", "pdist"]


# a torch.* name with no spelling here says what to write instead
__getattr__ = _module_getattr("runtime", "torch", _torch_functions.NOT_PORTED)
