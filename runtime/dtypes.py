"""Dtypes are NumPy's: one vocabulary for NumPy, CuPy, the IR and the JSON form.

Python scalars are *weakly typed* (NumPy 2 / NEP 50, JAX): `x * 2.0` keeps
float32. A traced Variable that came from a Python number carries `weak=True`
and promotes the same way, through `result_type` below. It also keeps the
Python number's precision (a float is a float64), so a float that a tensor
`if` or `while` carries computes what Python computes.
"""
import builtins

import numpy as np

bool = np.bool_  # noqa: A001  (array-API name, shadows the builtin on purpose)
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128


class finfo:  # noqa: N801  (the array API's lower-case name)
    """Machine limits of a floating dtype (or of an array's), as Python floats: the array API's finfo."""

    def __init__(self, type):
        info = np.finfo(_dtype_of(type))
        self.bits, self.dtype = int(info.bits), info.dtype
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal, self.resolution = float(info.smallest_normal), float(info.resolution)
        self.tiny = self.smallest_normal

    def __repr__(self):
        return f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, dtype={self.dtype.name})"


class iinfo:  # noqa: N801
    """Limits of an integer dtype (or of an array's), as Python ints: the array API's iinfo."""

    def __init__(self, type):
        info = np.iinfo(_dtype_of(type))
        self.bits, self.min, self.max, self.dtype = int(info.bits), int(info.min), int(info.max), info.dtype

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"


def _dtype_of(value):
    if isinstance(value, (np.dtype, str)) or isinstance(value, type):
        return np.dtype(value)
    return np.dtype(value.dtype)

DEFAULT_FLOAT = np.dtype(np.float32)
DEFAULT_INT = np.dtype(np.int64)

_WEAK_EXAMPLE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def as_dtype(dtype):
    """Normalize anything dtype-like ('float32', np.float32, rt.float32) to np.dtype."""
    if isinstance(dtype, np.dtype):
        return dtype
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"not a dtype: {dtype!r}") from e


def scalar_dtype(value):
    """The dtype a Python scalar takes when it must stand alone (float32 default for floats)."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return DEFAULT_INT
    if isinstance(value, float):
        return DEFAULT_FLOAT
    if isinstance(value, complex):
        return np.dtype(np.complex64)
    return np.asarray(value).dtype


def weak_dtype(value):
    """The dtype of a weak Variable standing for the Python number `value`: one that holds it as Python
    does (float64 for a float, complex128 for a complex), so Python arithmetic on it keeps Python's bits."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return DEFAULT_INT
    if isinstance(value, float):
        return np.dtype(np.float64)
    if isinstance(value, complex):
        return np.dtype(np.complex128)
    return np.asarray(value).dtype


def weak_example(dtype):
    """A Python scalar of dtype's kind: what NumPy treats as a weak operand."""
    return _WEAK_EXAMPLE[as_dtype(dtype).kind]


_PROMOTED = {}      # operands' key -> result_type: NumPy 2 promotes Python scalars by their type alone
_SCALARS = (bool, int, float, complex)


def result_type(*operands):
    """NumPy-2 promotion over (dtype, weak) pairs and Python scalars (remembered per operand types:
    tracing asks it once or twice per op, with a few distinct answers)."""
    key = tuple(op if type(op) is tuple else type(op) for op in operands)
    if not all(type(k) is tuple or k in _SCALARS for k in key):
        return _result_type(operands)       # arrays, NumPy scalars: by value
    promoted = _PROMOTED.get(key)
    if promoted is None:
        promoted = _PROMOTED[key] = _result_type(operands)
    return promoted


def _result_type(operands):
    args = []
    for op in operands:
        if isinstance(op, tuple):
            dtype, weak = op
            args.append(weak_example(dtype) if weak else dtype)
        else:
            args.append(op)
    if all(not isinstance(a, np.dtype) for a in args):
        # only weak operands: Python arithmetic on Python numbers, held exactly (float64: a Python float)
        kinds = [type(a) for a in args]
        for py in (complex, float, int):
            if py in kinds:
                return weak_dtype(py())
        return np.dtype(np.bool_)
    return np.result_type(*args)
