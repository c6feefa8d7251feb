"""What a StaticFunction's cache is keyed by, and the checks and names of its tensor arguments.

The key (see `StaticFunction._signature`) holds tensor shapes, dtypes and devices, other
arguments by exact value or identity, the argument structure and a layer's mode;
`retrace_reason` says in words what differs between two keys.
"""
import re

import numpy as np

import runtime as rt
from runtime.buffers import escape
from runtime.shape_text import shape_text

from . import guards

def retrace_reason(old, new):
    """What differs between two signature keys, in words."""
    (old_tree, old_parts, old_mode), (new_tree, new_parts, new_mode) = old, new
    if old_mode != new_mode:
        return f"layer mode {'train' if old_mode else 'eval'} -> {'train' if new_mode else 'eval'}"
    if old_tree != new_tree or len(old_parts) != len(new_parts):
        return f"argument structure {old_tree} -> {new_tree}"
    for i, (a, b) in enumerate(zip(old_parts, new_parts)):
        if a == b:
            continue
        if a[0] == b[0] == "T":
            what = [f"{k} {guards.key_part(k, x)} -> {guards.key_part(k, y)}"
                    for k, x, y in zip(("shape", "dtype", "device"), a[1:], b[1:]) if x != y]
            return f"tensor argument {i}: " + ", ".join(what)
        if a[0] == b[0] == "V":
            return f"argument {i}: {guards.show_frozen(a[1])} -> {guards.show_frozen(b[1])}"
        return f"argument {i} kind"
    return "unknown"


def leaf_name(path, names, n):
    """An input's name: its parameter's (`inputs_2` for item 2 of a list argument `inputs`, a keyword's
    name for a keyword argument), else `x<n>`."""
    positional = re.match(r"\[0\]\[(\d+)\](.*)$", path)
    if positional and int(positional.group(1)) < len(names):
        base, rest = names[int(positional.group(1))], positional.group(2)
    else:
        keyword = re.match(r"\[1\]\['(\w+)'\](.*)$", path)
        if keyword is None:
            return f"x{n}"
        base, rest = keyword.group(1), keyword.group(2)
    inner = re.findall(r"\w+", rest)
    return "_".join([base] + inner)


def as_spec(spec):
    if isinstance(spec, rt.InputSpec):
        return spec
    if isinstance(spec, (rt.Tensor, np.ndarray)):
        return rt.InputSpec.from_value(spec)
    raise TypeError(f"input_spec entries must be InputSpec, Tensor or ndarray, got {type(spec).__name__}")


def is_tensor_like(value):
    return isinstance(value, (rt.Tensor, np.ndarray, rt.InputSpec))


def device_of(value):
    return value.backend.name if isinstance(value, rt.Tensor) else "cpu"


def feed_array(value, backend):
    if isinstance(value, rt.Tensor) and value.backend is backend:
        return value.array
    if isinstance(value, rt.InputSpec):
        raise TypeError("an InputSpec describes an input; call the function with a tensor")
    if isinstance(value, rt.Tensor):
        return backend.asarray(value.array)
    array = backend.asarray(value)
    escape(array)           # the caller's array when it needed no copy: it may write into it after the call
    return array


def check_against_spec(value, spec, name):
    shape, dtype = tuple(value.shape), np.dtype(value.dtype)
    if len(shape) != len(spec.shape) or any(e != -1 and e != a for e, a in zip(spec.shape, shape)):
        raise ValueError(f"argument '{name}': expected shape {shape_text(spec.shape)} (input_spec), "
                         f"got {shape_text(shape)}")
    if dtype != spec.dtype:
        raise TypeError(f"argument '{name}': expected dtype {spec.dtype.name} (input_spec), got {dtype.name}; "
                        f"cast it with .astype('{spec.dtype.name}')")
