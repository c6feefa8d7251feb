"""Shape and dtype inference rules, shared by families of ops.

Shapes use -1 for a dim unknown until run time. Dtypes come from NumPy's own
promotion (`result_type`, ufunc type resolution) so traced dtypes match what
the kernels produce.
"""
import numpy as np

from ..dtypes import as_dtype, result_type, scalar_dtype
from ..errors import AxisError
from ..ir import Spec, Variable
from ..shape_text import shape_text
from ..tracer import Tracer


TYPED = (Spec, Variable, Tracer)    # what has a type of its own (a rule's array input: a Spec; dispatch: a
                                    # Variable; an rt function's argument: a Tracer)


def type_of(x):
    """What a shape rule sees of an op input: a Variable's (or Tracer's) type (a Spec); literals as they are."""
    return x.spec if isinstance(x, Variable) or type(x) is Tracer else x


def input_types(inputs, traced=None):
    """What a shape rule sees of an op's inputs (Variables and literals): each Variable's type; literals as
    they are. `traced`: the values the caller passed (Tracers), whose traced dim of another input
    (`x.reshape(x.shape[0], -1)`, a Tracer's `dim_of`) is marked as that input's (Spec.dim_of)."""
    types = [type_of(x) for x in inputs]
    for j, x in enumerate(traced or ()):
        source = x.dim_of if type(x) is Tracer else None     # (a Variable has none; a literal is asked nothing)
        if source is not None and x.value is inputs[j]:
            k = next((k for k, y in enumerate(inputs) if y is source[0]), None)
            if k is not None:
                types[j] = types[j]._replace(dim_of=(k, source[1]))
    return types


def shape_of(x):
    if type(x) in _PYTHON_SCALARS:
        return ()           # what np.shape says of one, at a fraction of its cost (a step's or op's literal)
    return x.static_shape if isinstance(x, TYPED) else np.shape(x)


_PYTHON_SCALARS = frozenset({bool, int, float, complex})


def dtype_of(x):
    return x.dtype if isinstance(x, TYPED) else scalar_dtype(x)


def is_weak(x):
    return x.weak if isinstance(x, TYPED) else isinstance(x, (bool, int, float, complex))


def promote_operand(x):
    """What NumPy's promotion should see for x: a dtype, or a Python scalar when weak."""
    if isinstance(x, TYPED):
        return (x.dtype, x.weak)
    return x


def broadcast_shapes(*shapes):
    ranked = [s for s in shapes if s]
    if ranked and all(s == ranked[0] for s in ranked):
        return tuple(ranked[0])      # one shape and scalars (most elementwise ops): that shape
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-ndim, 0):
        dims = [s[axis] for s in shapes if len(s) >= -axis]
        known = {d for d in dims if d not in (1, -1)}
        if len(known) > 1:
            raise ValueError(f"shapes {' and '.join(shape_text(s) for s in shapes)} cannot be broadcast together")
        if known:
            out.append(known.pop())
        elif -1 in dims:
            out.append(-1)
        else:
            out.append(1)
    return tuple(out)


def norm_axes(axis, ndim, what="axis"):
    """axis (None, int or tuple) -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise AxisError(f"{what} {a} is out of bounds for an array of rank {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in {what} {axis}")
    return tuple(sorted(out))


def elementwise(ufunc_name):
    """Rule for ops that are a NumPy ufunc: broadcast shapes, ufunc's own dtype resolution.

    The answer depends on the inputs' (shape, dtype, weak) and the literals' Python types alone, so it is
    remembered per those (`elementwise_key`): a long chain traces and plans each step's type with one
    dict lookup instead of broadcasting and promoting again."""
    ufunc = getattr(np, ufunc_name)
    known = {}

    def infer(*inputs):
        key = elementwise_key(inputs)
        spec = known.get(key) if key is not None else None
        if spec is None:
            shape = broadcast_shapes(*(shape_of(x) for x in inputs))
            dtype = _resolve(ufunc, inputs)
            spec = Spec(shape, dtype, dtype.kind != "b" and all(is_weak(x) for x in inputs))
            if key is not None:
                if len(known) >= ELEMENTWISE_MEMO:
                    known.clear()
                known[key] = spec
        return spec
    return infer


ELEMENTWISE_MEMO = 1024     # types remembered per ufunc (a few in any one program; cleared when full)


def elementwise_key(inputs):
    """What an elementwise rule's answer depends on: each typed input's (shape, dtype, weak), each
    literal's Python type; None when an input is neither (a NumPy array or scalar: by value)."""
    key = []
    for x in inputs:
        kind = type(x)
        if kind in _PYTHON_SCALARS:
            key.append(kind)
        elif kind is Spec:
            key.append((x.shape, x.dtype, x.weak))
        elif isinstance(x, TYPED):
            key.append((x.static_shape, x.dtype, x.weak))
        else:
            return None
    return tuple(key)


_RESOLVED = {}   # (ufunc, common dtype, arity) -> result dtype: NumPy's answer never changes


def _resolve(ufunc, inputs):
    common = result_type(*map(promote_operand, inputs))
    key = (ufunc, common, len(inputs))
    resolved = _RESOLVED.get(key)
    if resolved is None:
        try:
            resolved = np.dtype(ufunc.resolve_dtypes(tuple(common for _ in inputs) + (None,) * ufunc.nout)[-1])
        except TypeError as e:
            raise TypeError(f"{ufunc.__name__} does not support dtype {common}") from e
        _RESOLVED[key] = resolved
    return resolved


def reduction(dtype_rule=None):
    """Rule for reductions with axis/keepdims; dtype_rule(dtype) gives the result dtype."""
    def infer(x, axis=None, keepdims=False):
        shape = shape_of(x)
        axes = norm_axes(axis, len(shape))
        if keepdims:
            out = tuple(1 if i in axes else d for i, d in enumerate(shape))
        else:
            out = tuple(d for i, d in enumerate(shape) if i not in axes)
        dtype = dtype_of(x) if dtype_rule is None else np.dtype(dtype_rule(dtype_of(x)))
        return Spec(out, dtype)
    return infer


def fixed(shape, dtype):
    return Spec(tuple(shape), as_dtype(dtype))
