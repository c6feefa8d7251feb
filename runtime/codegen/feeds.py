"""Fed values checked against a Program's inputs: presence, dtype, byte order, static dims.

Python numbers and lists are taken like weak scalars (no float into an int
input, no complex into a real one); every problem is a FeedError naming the input.
"""
import numpy as np

from .. import buffers
from ..errors import FeedError
from ..tensor import Tensor


def prepare_feed(program, backend, feed):
    unknown = set(feed) - {v.name for v in program.inputs}
    if unknown:
        raise FeedError(f"unknown input(s) {sorted(unknown)}; the Program's inputs are "
                        f"{[v.name for v in program.inputs]}")
    arrays = []
    for var in program.inputs:
        if var.name in feed:
            value = feed[var.name]
        elif var.name in program.parameters:
            value = program.parameters[var.name]
        else:
            raise FeedError(f"missing input '{var.name}' ({var.type_str()})")
        arrays.append(check_feed(var, value, backend))
    return arrays


def check_feed(var, value, backend):
    """The backend array for a fed value, after checking it against the declared Variable."""
    if isinstance(value, Tensor):
        array = value.array if value.backend is backend else backend.asarray(value.backend.to_numpy(value.array))
    elif backend.is_native(value):
        array = value
        buffers.escape(array)       # the caller's array, fed as it is: it may write into it after the run
    elif isinstance(value, (bool, int, float, complex, list, tuple)):
        array = _python_values(var, value, backend)
    else:
        array = backend.asarray(value)
    shape = tuple(array.shape)
    if array.dtype != var.dtype and array.dtype.newbyteorder("=") == var.dtype:
        order = {">": "big", "<": "little"}.get(array.dtype.byteorder, "non-native")
        raise FeedError(f"input '{var.name}': expected {var.dtype.name} in native byte order, got {order}-endian "
                        f"{array.dtype.name} ('{array.dtype.str}', shape {shape}); convert it with "
                        f".astype('{var.dtype.name}')")
    if array.dtype != var.dtype:
        raise FeedError(f"input '{var.name}': expected dtype {var.dtype.name}, got {array.dtype.name} "
                        f"(shape {shape}); cast it with .astype('{var.dtype.name}')")
    expected = var.static_shape
    if len(shape) != len(expected) or any(e != -1 and e != a for e, a in zip(expected, shape)):
        dims = ", ".join("None" if d == -1 else str(d) for d in expected)
        raise FeedError(f"input '{var.name}': expected shape [{dims}], got {list(shape)}")
    return array


# Python numbers fed to an input of each kind (weak, like scalars in an expression): no silent
# truncation of floats into ints, no complex into reals, no strings parsed as numbers
_PYTHON_KINDS = {"b": "b", "i": "bi", "u": "bi", "f": "bif", "c": "bifc"}
_KIND_NAMES = {"b": "bools", "i": "ints", "u": "ints", "f": "floats", "c": "complex numbers", "U": "strings",
               "S": "bytes", "O": "objects that are not numbers"}


def _python_values(var, value, backend):
    """A Python number or (nested) list of them as an array of var's dtype, or a FeedError naming the input."""
    what = f"input '{var.name}' ({var.type_str()})"
    try:
        host = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise FeedError(f"{what}: cannot make an array of the {type(value).__name__} given ({e})") from None
    if host.size and host.dtype.kind not in _PYTHON_KINDS.get(var.dtype.kind, ""):
        got = _KIND_NAMES.get(host.dtype.kind, f"{host.dtype.name} values")
        got = f"a {type(value).__name__} of {got}" if isinstance(value, (list, tuple)) else f"{value!r}"
        raise FeedError(f"{what}: got {got}, which {var.dtype.name} cannot hold; "
                        f"pass an array of dtype {var.dtype.name}")
    try:
        return backend.asarray(value, dtype=var.dtype)
    except (OverflowError, ValueError, TypeError) as e:
        raise FeedError(f"{what}: {e}") from None
