"""PyTorch's tensor methods beside NumPy's, for eager Tensors and traced Variables alike.

`ArrayMethods` inherits `TorchMethods`, so `x.sum(dim=1, keepdim=True)`, `x.view(B, T, C)`,
`x.transpose(1, 2)` and `x.masked_fill(m, v)` work where `x.sum(axis=1, keepdims=True)` does.
Every method composes existing ops through the array namespace (`_ns`, bound with
`array_methods.bind_namespace`), so an op's semantics still live only in the op registry and
gradients come from those ops' rules.

Where one spelling means two things the call decides: `x.max(1)` / `x.max(dim=1)` give PyTorch's
`(values, indices)`, `x.max(axis=1)` NumPy's array; `x.transpose(0, 1)` swaps two dims (PyTorch),
`x.transpose(1, 0, 2)` permutes them all (NumPy); `x.std()` / `x.var()` with NumPy's keywords or no
argument are NumPy's (ddof 0), with a dim or PyTorch's keywords PyTorch's (unbiased).
In-place methods (`add_`, `zero_`, ...) are attached to Tensor by `runtime.writes`, the layer that
writes into tensors; a traced local value has no place to write to, so here they say what to write.
"""
from collections import namedtuple

import numpy as np

_ns = None


def bind_namespace(namespace):
    global _ns
    _ns = namespace


# what PyTorch returns for a reduction over one dim that also finds where (`torch.return_types`)
max_result = namedtuple("max", ["values", "indices"])
min_result = namedtuple("min", ["values", "indices"])
sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
median_result = namedtuple("median", ["values", "indices"])
kthvalue_result = namedtuple("kthvalue", ["values", "indices"])
cummax_result = namedtuple("cummax", ["values", "indices"])
cummin_result = namedtuple("cummin", ["values", "indices"])
aminmax_result = namedtuple("aminmax", ["min", "max"])

# PyTorch's dtype methods: x.float() is x.astype(float32)
DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                 "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool", "cfloat": "complex64",
                 "cdouble": "complex128"}
# PyTorch methods that are the namespace function of the same job (elementwise; no axis)
ELEMENTWISE = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
               "sinh": "sinh", "cosh": "cosh", "log1p": "log1p", "expm1": "expm1", "log2": "log2",
               "log10": "log10", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "sign": "sign",
               "square": "square", "neg": "negative", "negative": "negative", "reciprocal": "reciprocal",
               "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "logical_not": "logical_not",
               "erf": "erf", "bitwise_not": "bitwise_invert", "conj": "conj"}
BINARY = {"add": "add", "sub": "subtract", "subtract": "subtract", "mul": "multiply", "multiply": "multiply",
          "div": "divide", "divide": "divide", "true_divide": "divide", "floor_divide": "floor_divide",
          "remainder": "remainder", "pow": "pow", "eq": "equal", "ne": "not_equal",
          "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "maximum": "maximum",
          "minimum": "minimum", "logical_and": "logical_and", "logical_or": "logical_or",
          "logical_xor": "logical_xor", "atan2": "atan2", "matmul": "matmul", "mm": "matmul", "bmm": "matmul",
          "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
          "hypot": "hypot", "copysign": "copysign", "greater": "greater", "less": "less", "equal": "equal",
          "not_equal": "not_equal", "greater_equal": "greater_equal", "less_equal": "less_equal"}


def _static_shape(x):
    return x.static_shape if hasattr(x, "static_shape") else tuple(x.shape)


def _dims(value):
    """An axis argument in either spelling: an int, or a tuple for a list/tuple (PyTorch passes lists)."""
    if isinstance(value, (list, tuple)):
        return tuple(int(d) for d in value)
    return value


def _axis(axis, dim, what):
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{what}: give axis= (NumPy's spelling) or dim= (PyTorch's), not both")
        return _dims(dim)
    return _dims(axis)


def _keep(keepdims, keepdim):
    return bool(keepdims) or bool(keepdim)


def _norm_dim(d, ndim):
    if not -max(ndim, 1) <= d < max(ndim, 1):
        raise IndexError(f"dimension {d} is out of range for a tensor of rank {ndim}")
    return d % max(ndim, 1)


def _sizes(args):
    """`*size` as PyTorch takes it: `f(2, 3)` or `f((2, 3))` / `f([2, 3])`."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _is_array(value):
    return isinstance(value, TorchMethods)


def _is_dtype(value):
    if isinstance(value, (str, np.dtype)) or (isinstance(value, type) and issubclass(value, np.generic)):
        try:
            np.dtype(value)
            return True
        except TypeError:
            return False
    return False


def to_arguments(args, kwargs):
    """(device, dtype) of PyTorch's `x.to(device)`, `x.to(dtype)`, `x.to(device, dtype)`, `x.to(other)`;
    "cuda" names the GPU backend ("gpu")."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None), kwargs.pop("copy", None), kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keywords {sorted(kwargs)}")
    for arg in args:
        if _is_array(arg):
            device, dtype = arg.device, arg.dtype
        elif _is_dtype(arg) and not (isinstance(arg, str) and arg.split(":")[0] in ("cpu", "gpu", "cuda")):
            dtype = arg
        elif arg is not None and not isinstance(arg, bool):
            device = arg
    if device is not None:
        device = str(device).split(":")[0]
        device = "gpu" if device == "cuda" else device
    return device, dtype


def _reduced_with_indices(x, args, axis, keepdims, dim, keepdim, reduce, arg, result, other_fn):
    """max/min in both spellings: an array over all or NumPy's axis=; PyTorch's (values, indices) for
    a dim; elementwise against another tensor, as torch.max(a, b)."""
    if args and _is_array(args[0]):
        if len(args) > 1 or axis is not None or dim is not None:
            raise TypeError(f"{reduce}(other): an elementwise {other_fn} takes no dim")
        return getattr(_ns, other_fn)(x, args[0])
    if len(args) > 2:
        raise TypeError(f"{reduce}() takes at most 2 positional arguments (dim, keepdim)")
    if args:
        if dim is not None:
            raise TypeError(f"{reduce}(): dim given twice")
        dim = args[0]
        if len(args) == 2:
            keepdim = args[1]
    if dim is None or isinstance(dim, (tuple, list)) or axis is not None or keepdims is not None:
        a = _axis(axis, dim, reduce)
        return getattr(_ns, reduce)(x, axis=a, keepdims=_keep(keepdims, keepdim))
    keep = bool(keepdim)
    return result(getattr(_ns, reduce)(x, axis=dim, keepdims=keep), getattr(_ns, arg)(x, axis=dim, keepdims=keep))


class TorchMethods:
    """Methods with both NumPy's and PyTorch's names and keywords (see the module docstring)."""

    __slots__ = ()

    # --- reductions: axis=/keepdims= or dim=/keepdim= ---------------------------------------------
    def sum(self, axis=None, keepdims=False, dtype=None, *, dim=None, keepdim=False):
        return _ns.sum(self, _axis(axis, dim, "sum"), dtype=dtype, keepdims=_keep(keepdims, keepdim))

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=False, dtype=None):
        x = self if dtype is None else _ns.astype(self, dtype)
        return _ns.mean(x, axis=_axis(axis, dim, "mean"), keepdims=_keep(keepdims, keepdim))

    def prod(self, axis=None, keepdims=False, dtype=None, *, dim=None, keepdim=False):
        return _ns.prod(self, _axis(axis, dim, "prod"), dtype=dtype, keepdims=_keep(keepdims, keepdim))

    def any(self, axis=None, keepdims=False, *, dim=None, keepdim=False):
        return _ns.any(self, axis=_axis(axis, dim, "any"), keepdims=_keep(keepdims, keepdim))

    def all(self, axis=None, keepdims=False, *, dim=None, keepdim=False):
        return _ns.all(self, axis=_axis(axis, dim, "all"), keepdims=_keep(keepdims, keepdim))

    def argmax(self, axis=None, keepdims=False, *, dim=None, keepdim=False):
        return _ns.argmax(self, axis=_axis(axis, dim, "argmax"), keepdims=_keep(keepdims, keepdim))

    def argmin(self, axis=None, keepdims=False, *, dim=None, keepdim=False):
        return _ns.argmin(self, axis=_axis(axis, dim, "argmin"), keepdims=_keep(keepdims, keepdim))

    def amax(self, dim=None, keepdim=False, *, axis=None, keepdims=False):
        return _ns.max(self, axis=_axis(axis, dim, "amax"), keepdims=_keep(keepdims, keepdim))

    def amin(self, dim=None, keepdim=False, *, axis=None, keepdims=False):
        return _ns.min(self, axis=_axis(axis, dim, "amin"), keepdims=_keep(keepdims, keepdim))

    def logsumexp(self, dim=None, keepdim=False, *, axis=None, keepdims=False):
        return _ns.logsumexp(self, axis=_axis(axis, dim, "logsumexp"), keepdims=_keep(keepdims, keepdim))

    def max(self, *args, axis=None, keepdims=None, dim=None, keepdim=False):
        """`x.max()`, `x.max(axis=1)`: the maximum (NumPy); `x.max(1)`, `x.max(dim=1)`: PyTorch's
        (values, indices); `x.max(y)`: the elementwise maximum."""
        return _reduced_with_indices(self, args, axis, keepdims, dim, keepdim, "max", "argmax", max_result,
                                     "maximum")

    def min(self, *args, axis=None, keepdims=None, dim=None, keepdim=False):
        """As `max`, for the minimum."""
        return _reduced_with_indices(self, args, axis, keepdims, dim, keepdim, "min", "argmin", min_result,
                                     "minimum")

    def _spread(self, name, args, axis, keepdims, ddof, dim, keepdim, unbiased, correction):
        torch_style = bool(args) or dim is not None or unbiased is not None or correction is not None or \
            keepdim is not None
        if args:
            if len(args) == 1 and isinstance(args[0], bool):      # x.std(False): PyTorch's unbiased flag
                unbiased = args[0]
            else:
                dim = args[0]
                if len(args) > 1:
                    unbiased = args[1]
                if len(args) > 2:
                    keepdim = args[2]
        if torch_style and ddof is None:
            ddof = correction if correction is not None else (1 if unbiased in (None, True) else 0)
        a = _axis(axis, dim, name)
        return getattr(_ns, name)(self, a, correction=ddof or 0, keepdims=_keep(keepdims, keepdim))

    def std(self, *args, axis=None, keepdims=False, ddof=None, dim=None, keepdim=None, unbiased=None,
            correction=None):
        """NumPy's (ddof=0) with no argument or NumPy's keywords; PyTorch's (unbiased unless
        `unbiased=False`/`correction=0`) given a dim or PyTorch's keywords."""
        return self._spread("std", args, axis, keepdims, ddof, dim, keepdim, unbiased, correction)

    def var(self, *args, axis=None, keepdims=False, ddof=None, dim=None, keepdim=None, unbiased=None,
            correction=None):
        """As `std`."""
        return self._spread("var", args, axis, keepdims, ddof, dim, keepdim, unbiased, correction)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """PyTorch's `x.norm()`: the 2-norm of all elements, or over `dim`; `p` a number or 'fro'."""
        order = 2 if p in ("fro", None) else p
        x = self if dtype is None else _ns.astype(self, dtype)
        return _ns.decompositions.vector_norm(x, axis=_dims(dim), keepdims=bool(keepdim), ord=order)

    def cumsum(self, axis=None, *, dim=None, dtype=None):
        x = self if dtype is None else _ns.astype(self, dtype)
        return _ns.cumsum(x, axis=_axis(axis, dim, "cumsum"))

    def cumprod(self, dim=None, *, axis=None, dtype=None):
        x = self if dtype is None else _ns.astype(self, dtype)
        return _ns.cumulative_prod(x, axis=_axis(axis, dim, "cumprod"))

    def softmax(self, dim=-1, *, axis=None, dtype=None):
        x = self if dtype is None else _ns.astype(self, dtype)
        return _ns.nn_ops.softmax(x, axis=_axis(axis, dim if axis is None else None, "softmax"))

    def log_softmax(self, dim=-1, *, axis=None, dtype=None):
        x = self if dtype is None else _ns.astype(self, dtype)
        return _ns.nn_ops.log_softmax(x, axis=_axis(axis, dim if axis is None else None, "log_softmax"))

    # --- sorting and selection ----------------------------------------------------------------------
    def sort(self, dim=-1, descending=False, stable=False, *, axis=None):
        """PyTorch's (values, indices) (ties keep their order: always stable)."""
        a = _axis(axis, dim if axis is None else None, "sort")
        return sort_result(_ns.sort(self, axis=a, descending=bool(descending)),
                           _ns.argsort(self, axis=a, descending=bool(descending)))

    def argsort(self, dim=-1, descending=False, stable=False, *, axis=None):
        a = _axis(axis, dim if axis is None else None, "argsort")
        return _ns.argsort(self, axis=a, descending=bool(descending))

    def topk(self, k, dim=-1, largest=True, sorted=True, *, axis=None):
        """PyTorch's (values, indices) of the k largest (smallest) along `dim`, in order."""
        values, indices = _ns.topk(self, k, axis=_axis(axis, dim if axis is None else None, "topk"),
                                   largest=bool(largest))
        return topk_result(values, indices)

    def gather(self, dim, index):
        """out[i][j] = x[index[i][j]][j] (dim 0); `index` may be smaller than x off `dim`."""
        d = _norm_dim(dim, self.ndim)
        x_shape, i_shape = _static_shape(self), _static_shape(index)
        if any(a != b for k, (a, b) in enumerate(zip(x_shape, i_shape)) if k != d):
            self = self[tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(i_shape))]
        return _ns.take_along_axis(self, index, axis=d)

    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        """A copy with out[index[i][j]][j] = src[i][j] (dim 0), or `value` there; reduce='add' adds."""
        source = value if src is None else src
        if source is None:
            raise TypeError("scatter() needs src (a tensor) or value (a number)")
        d = _norm_dim(dim, self.ndim)
        if _is_array(source):
            i_shape = _static_shape(index)
            if tuple(_static_shape(source)) != tuple(i_shape):
                source = source[tuple(slice(0, n) for n in i_shape)]
        else:
            source = _ns.full(tuple(index.shape), source, dtype=self.dtype)
        if reduce not in (None, "add", "sum"):
            raise ValueError(f"scatter: reduce must be None or 'add', got {reduce!r}")
        x_shape, i_shape = _static_shape(self), _static_shape(index)
        region = tuple(slice(None) if k == d or a == b else slice(0, b)
                       for k, (a, b) in enumerate(zip(x_shape, i_shape)))
        target = self[region] if any(r != slice(None) for r in region) else self
        if reduce is None:
            out = _ns.put_along_axis(target, index, source, axis=d)
        else:
            out = _ns.scatter_add(target, d, index, source)
        return out if target is self else _ns.setitem(self, region, out)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """A copy with src's values reduced into the places index names along `dim`: 'sum', 'mean', 'amax',
        'amin' or 'prod', x's own value taking part unless include_self=False (a place no index names keeps
        x's value). max/min/prod compare each source with each place (memory: src's size times dim's)."""
        if reduce not in ("sum", "mean", "amax", "amin", "prod"):
            raise ValueError(f"scatter_reduce: reduce must be 'sum', 'mean', 'amax', 'amin' or 'prod', got {reduce!r}")
        d = _norm_dim(dim, self.ndim)
        x_shape, i_shape = _static_shape(self), _static_shape(index)
        if tuple(_static_shape(src)) != tuple(i_shape) or any(a != b for k, (a, b) in enumerate(zip(x_shape, i_shape))
                                                            if k != d):
            raise NotImplementedError(f"scatter_reduce: needs src of index's shape {tuple(i_shape)} and x of that "
                                      f"shape off dim {dim}, got src {tuple(_static_shape(src))} and x "
                                      f"{tuple(x_shape)}")
        src = _cast(src, self.dtype)
        hits = _ns.scatter_add(_ns.zeros_like(self, dtype="int64"), d, index, _ns.ones_like(index, dtype="int64"))
        named = hits > 0
        if reduce in ("sum", "mean"):
            total = _ns.scatter_add(self if include_self else _ns.zeros_like(self), d, index, src)
            if reduce == "sum":
                return total if include_self else _ns.where(named, total, self)
            count = hits + (1 if include_self else 0)
            mean = total / _ns.maximum(count, 1)
            if np.dtype(self.dtype).kind in "iub":
                mean = _ns.floor_divide(total, _ns.astype(_ns.maximum(count, 1), self.dtype))
            return _ns.where(named, _ns.astype(mean, self.dtype), self)
        places = x_shape[d]
        # (..., n_src along d, ..., places): where each source goes, compared with every place
        one_hot = _ns.equal(_ns.expand_dims(index, axis=-1), _constant(self, np.arange(places, dtype=np.int64)))
        spread = _ns.expand_dims(src, axis=-1)
        if reduce == "prod":
            reduced = _ns.prod(_ns.where(one_hot, spread, _ns.ones_like(spread)), axis=d)
        else:
            dtype = np.dtype(self.dtype)
            if dtype.kind == "f":
                fill = -np.inf if reduce == "amax" else np.inf
            else:
                info = np.iinfo(dtype) if dtype.kind in "iu" else None
                fill = (info.min if reduce == "amax" else info.max) if info else reduce == "amin"
            reduced = getattr(_ns, "max" if reduce == "amax" else "min")(
                _ns.where(one_hot, spread, _ns.full_like(spread, fill)), axis=d)
        reduced = _ns.moveaxis(reduced, -1, d)                   # back to x's layout
        if include_self:
            combine = {"amax": _ns.maximum, "amin": _ns.minimum, "prod": _ns.multiply}[reduce]
            reduced = combine(reduced, self)
        return _ns.where(named, reduced, self)

    def scatter_add(self, dim, index, src):
        return self.scatter(dim, index, src, reduce="add")

    def index_select(self, dim, index):
        return _ns.take(self, index, axis=_norm_dim(dim, self.ndim))

    def masked_fill(self, mask, value):
        """x where mask is False, `value` (cast to x's dtype) where it is True."""
        if _is_array(value):
            value = _ns.astype(value, self.dtype)
        return _ns.where(mask, value, self)

    def masked_select(self, mask):
        """The elements where mask (broadcast against x) is True, as a 1-D tensor."""
        shape = tuple(_ns.broadcast_arrays(self, mask)[0].shape)
        return _ns.broadcast_to(self, shape)[_ns.broadcast_to(mask, shape)]

    def where(self, condition, other):
        """PyTorch's `x.where(c, y)`: x where c, else y."""
        return _ns.where(condition, self, other)

    def clamp(self, min=None, max=None):
        return _ns.clip(self, min, max)

    clip = clamp

    def clamp_min(self, min):
        return _ns.clip(self, min, None)

    def clamp_max(self, max):
        return _ns.clip(self, None, max)

    def tril(self, diagonal=0):
        return _ns.tril(self, k=diagonal)

    def triu(self, diagonal=0):
        return _ns.triu(self, k=diagonal)

    # --- shapes -------------------------------------------------------------------------------------
    def reshape(self, *shape):
        return _ns.reshape(self, _sizes(shape))

    def view(self, *shape):
        """PyTorch's view: a reshape (tensors are values here, so nothing is shared)."""
        if len(shape) == 1 and _is_dtype(shape[0]):
            raise TypeError("x.view(dtype) reinterprets bytes, which is not supported: use x.astype(dtype) "
                            "to convert the values")
        return _ns.reshape(self, _sizes(shape))

    def view_as(self, other):
        return _ns.reshape(self, tuple(other.shape))

    reshape_as = view_as

    def permute(self, *dims):
        return _ns.permute_dims(self, _sizes(dims))

    def transpose(self, *axes):
        """`x.transpose(d0, d1)` swaps two dims (PyTorch); `x.transpose()`, `x.transpose(1, 0, 2)`,
        `x.transpose((2, 0, 1))` permute them all (NumPy)."""
        if len(axes) == 2 and all(isinstance(a, (int, np.integer)) for a in axes):
            return self.swapaxes(*axes)
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ns.permute_dims(self, axes or None)

    def swapaxes(self, axis1, axis2):
        ndim = self.ndim
        order = list(range(ndim))
        a, b = _norm_dim(axis1, ndim), _norm_dim(axis2, ndim)
        order[a], order[b] = order[b], order[a]
        return self if a == b else _ns.permute_dims(self, tuple(order))

    swapdims = swapaxes

    def t(self):
        """PyTorch's t(): a 2-D tensor transposed (0-d and 1-D unchanged)."""
        if self.ndim > 2:
            raise ValueError(f"t() expects a tensor of at most 2 dims, got {self.ndim}: use x.transpose(d0, d1)")
        return self if self.ndim < 2 else _ns.permute_dims(self, (1, 0))

    def flatten(self, start_dim=0, end_dim=-1):
        """Merge dims start_dim..end_dim (inclusive) into one, like torch.flatten; `x.flatten()` is
        NumPy's too. A dynamic dim (a batch while tracing) is read with a `dim` op."""
        static = _static_shape(self)
        ndim = len(static)
        if ndim == 0:
            return _ns.reshape(self, (1,))
        start, stop = _norm_dim(start_dim, ndim), _norm_dim(end_dim, ndim)
        if start > stop:
            raise ValueError(f"flatten: start_dim ({start_dim}) must not come after end_dim ({end_dim}) "
                             f"for an input of rank {ndim}")
        if start == stop:
            return self
        merged = static[start:stop + 1]
        merged_dim = -1 if -1 in merged else int(np.prod(merged))
        keep = [d if d != -1 else _ns.dim(self, i) for i, d in enumerate(static) if not start <= i <= stop]
        return _ns.reshape(self, tuple(keep[:start]) + (merged_dim,) + tuple(keep[start:]))

    def unflatten(self, dim, sizes):
        d = _norm_dim(dim, self.ndim)
        shape = tuple(self.shape)
        return _ns.reshape(self, shape[:d] + tuple(sizes) + shape[d + 1:])

    def squeeze(self, *args, axis=None, dim=None):
        """NumPy's squeeze given `axis=` (a dim of size other than 1 is an error); PyTorch's given a dim
        (positional or dim=): such a dim is left as it is."""
        if len(args) > 1 or (args and dim is not None):
            raise TypeError("squeeze() takes one dim")
        torch_dim = args[0] if args else dim
        if torch_dim is None:
            return _ns.squeeze(self, _dims(axis))
        if axis is not None:
            raise TypeError("squeeze: give axis= (NumPy's spelling) or dim= (PyTorch's), not both")
        static = _static_shape(self)
        dims = _dims(torch_dim)
        keep = tuple(d for d in (dims if isinstance(dims, tuple) else (dims,))
                     if static[_norm_dim(d, len(static))] in (1, -1))
        return _ns.squeeze(self, keep) if keep else self

    def unsqueeze(self, dim=None, *, axis=None):
        return _ns.expand_dims(self, _axis(axis, dim, "unsqueeze"))

    def expand(self, *sizes):
        """Broadcast to `sizes`; -1 keeps that dim (PyTorch's expand)."""
        sizes = _sizes(sizes)
        shape = tuple(self.shape)
        lead = len(sizes) - len(shape)
        if lead < 0:
            raise ValueError(f"expand: {len(sizes)} sizes for a tensor of rank {len(shape)}")
        full = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
        return _ns.broadcast_to(self, full)

    def expand_as(self, other):
        return _ns.broadcast_to(self, tuple(other.shape))

    def broadcast_to(self, shape):
        return _ns.broadcast_to(self, tuple(shape))

    def repeat(self, *sizes):
        """PyTorch's repeat: the tensor tiled `sizes` times along each dim (NumPy's tile); NumPy's
        element repeat is `x.repeat_interleave(n, dim)` or `rt.repeat(x, n, axis=d)`."""
        return _ns.tile(self, _sizes(sizes))

    def repeat_interleave(self, repeats, dim=None):
        return _ns.repeat(self, repeats, axis=dim)

    def tile(self, *sizes):
        return _ns.tile(self, _sizes(sizes))

    def chunk(self, chunks, dim=0):
        """`chunks` pieces along `dim` of ceil(n / chunks) each, the last smaller (PyTorch's chunk)."""
        d = _norm_dim(dim, self.ndim)
        n = _static_shape(self)[d]
        if n == -1:
            raise ValueError(f"chunk: dim {dim} is dynamic (known only when the Program runs); give it a fixed "
                             "size in the input_spec, or use rt.split")
        size = -(-n // int(chunks))
        return self.split(max(size, 1), d)

    def split(self, split_size_or_sections, dim=0):
        """PyTorch's split: pieces of `split_size` along `dim` (the last smaller), or of the given sizes.
        (NumPy's `rt.split(x, n)` makes n equal pieces.)"""
        d = _norm_dim(dim, self.ndim)
        n = _static_shape(self)[d]
        if n == -1:
            raise ValueError(f"split: dim {dim} is dynamic (known only when the Program runs); give it a fixed "
                             "size in the input_spec, or use rt.split(x, sections, axis)")
        if isinstance(split_size_or_sections, (list, tuple)):
            sizes = [int(s) for s in split_size_or_sections]
            if sum(sizes) != n:
                raise ValueError(f"split: sizes {sizes} add up to {sum(sizes)}, not dim {dim}'s size {n}")
        else:
            step = int(split_size_or_sections)
            sizes = [min(step, n - s) for s in range(0, n, step)]
        bounds = list(np.cumsum(sizes)[:-1])
        if not bounds:
            return (self,)
        return tuple(_ns.split(self, [int(b) for b in bounds], axis=d))

    def tensor_split(self, indices_or_sections, dim=0):
        """PyTorch's tensor_split: n pieces whose sizes differ by at most one (the first ones larger), or the
        pieces between the given indices (past the end they are empty)."""
        d = _norm_dim(dim, self.ndim)
        n = _static_shape(self)[d]
        if n == -1:
            raise ValueError(f"tensor_split: dim {dim} is dynamic (known only when the Program runs); give it a "
                             "fixed size in the input_spec")
        if isinstance(indices_or_sections, (list, tuple)):
            bounds = [0] + [min(max(int(i) + (n if int(i) < 0 else 0), 0), n) for i in indices_or_sections] + [n]
        else:
            sections = int(indices_or_sections)
            if sections < 1:
                raise ValueError(f"tensor_split: sections must be at least 1, got {sections}")
            sizes = [n // sections + (1 if k < n % sections else 0) for k in range(sections)]
            bounds = [0] + [int(b) for b in np.cumsum(sizes)]
        return tuple(self[(slice(None),) * d + (slice(a, max(a, b)),)] for a, b in zip(bounds[:-1], bounds[1:]))

    def unbind(self, dim=0):
        return tuple(_ns.unstack(self, axis=dim))

    def narrow(self, dim, start, length):
        d = _norm_dim(dim, self.ndim)
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def flip(self, *dims, **kwargs):
        """PyTorch's flip(dims) (an int, a list, or several ints; or `dims=`), NumPy's `axis=`."""
        named = kwargs.pop("dims", kwargs.pop("axis", None))
        if kwargs:
            raise TypeError(f"flip() got unexpected keywords {sorted(kwargs)}")
        if named is not None:
            if dims:
                raise TypeError("flip(): dims given twice")
            dims = (named,)
        return _ns.flip(self, _sizes(dims) if dims else None)

    def fliplr(self):
        return _ns.flip(self, 1)

    def flipud(self):
        return _ns.flip(self, 0)

    def ravel(self):
        return _ns.reshape(self, (-1,))

    def select(self, dim, index):
        """x[..., index] along `dim`: that dim removed."""
        return self[(slice(None),) * _norm_dim(dim, self.ndim) + (index,)]

    def movedim(self, source, destination):
        return _ns.moveaxis(self, _dims(source), _dims(destination))

    moveaxis = movedim

    def unfold(self, dimension, size, step):
        """PyTorch's unfold: the windows of `size` every `step` along `dimension`, as a new last dim (that dim
        becomes the number of windows)."""
        d = _norm_dim(dimension, self.ndim)
        n = _static_shape(self)[d] if self.ndim else 1
        if n == -1:
            raise ValueError(f"unfold: dim {dimension} is dynamic (known only when the Program runs); give it a "
                             "fixed size in the input_spec")
        size, step = int(size), int(step)
        if size > n or size < 0 or step < 1:
            raise ValueError(f"unfold: a window of {size} every {step} does not fit dim {dimension} of size {n}")
        if self.ndim == 0:
            return _ns.reshape(self, (1,))
        count = (n - size) // step + 1
        where = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
        windows = _ns.take(self, _constant(self, where.astype(np.int64)), axis=d)
        shape = tuple(_static_shape(self))
        lead = tuple(_ns.dim(self, i) if s == -1 else s for i, s in enumerate(shape[:d]))
        rest = tuple(_ns.dim(self, d + 1 + i) if s == -1 else s for i, s in enumerate(shape[d + 1:]))
        windows = _ns.reshape(windows, lead + (count, size) + rest)
        return _ns.moveaxis(windows, d + 1, -1)

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        return _ns.diff(self, axis=dim, n=n, prepend=prepend, append=append)

    def roll(self, shifts, dims=None):
        return _ns.roll(self, _dims(shifts), axis=_dims(dims))

    # --- facts --------------------------------------------------------------------------------------
    def numel(self):
        return self.size

    nelement = numel

    def dim(self):
        """The number of dims (PyTorch's dim(); NumPy's ndim)."""
        return self.ndim

    ndimension = dim

    def is_floating_point(self):
        return np.dtype(self.dtype).kind == "f"

    def is_complex(self):
        return np.dtype(self.dtype).kind == "c"

    @property
    def device(self):
        """A traced value's device is the Program's, chosen when it runs: None here (`rt.arange(n,
        device=x.device)` then makes it where the Program runs). An eager Tensor has its own."""
        return None

    @property
    def is_cuda(self):
        return self.device == "gpu"

    def element_size(self):
        return np.dtype(self.dtype).itemsize

    # --- copies and dtypes --------------------------------------------------------------------------
    def clone(self, *, memory_format=None):
        """A copy that gradients flow through."""
        return _ns.astype(self, self.dtype, copy=True) if np.dtype(self.dtype) == np.bool_ else _ns.positive(self)

    def to(self, *args, **kwargs):
        """A traced value's `to`: a dtype casts it; the device is the Program's."""
        _, dtype = to_arguments(args, dict(kwargs))
        return self if dtype is None else _cast(self, dtype)

    def cpu(self):
        return self

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    def is_contiguous(self, memory_format=None):
        return True

    def pin_memory(self):
        return self

    def cuda(self, device=None, non_blocking=False):
        return self.to("gpu")

    def lerp(self, end, weight):
        return self + weight * (end - self)

    def frac(self):
        """x - trunc(x): the fractional part, with x's sign."""
        return self - _ns.trunc(self)

    def exp2(self):
        return _ns.pow(2.0, self)

    def dot(self, other):
        """The inner product of two 1-D tensors."""
        if self.ndim != 1 or other.ndim != 1:
            raise ValueError(f"dot: expects two 1-D tensors, got {self.ndim}-D and {other.ndim}-D")
        return _ns.matmul(self, other)

    inner = dot

    def mv(self, vec):
        """matrix @ vector."""
        return _ns.matmul(self, vec)

    def outer(self, other):
        return _ns.decompositions.outer(self, other)

    ger = outer

    def count_nonzero(self, dim=None):
        return _ns.sum(_ns.not_equal(self, 0), axis=_dims(dim), dtype="int64")

    def argwhere(self):
        """The (n, ndim) indices of the non-zero elements (x.nonzero())."""
        return self.nonzero()

    def take_along_dim(self, indices, dim=None):
        """take_along_axis; without `dim`, over the flattened tensor."""
        if dim is None:
            return _ns.take_along_axis(_ns.reshape(self, (-1,)), _ns.reshape(indices, (-1,)), axis=0)
        return _ns.take_along_axis(self, indices, axis=_norm_dim(dim, self.ndim))

    def logcumsumexp(self, dim):
        """log(cumsum(exp(x))) along `dim`, without overflow or underflow: a prefix scan of logaddexp."""
        x = self if self.ndim else _ns.reshape(self, (1,))
        d = _norm_dim(dim, x.ndim)
        n = _static_shape(x)[d]
        if n == -1:
            raise ValueError(f"logcumsumexp: dim {dim} is dynamic (known only when the Program runs)")
        step = 1
        while step < n:
            keep = x[(slice(None),) * d + (slice(0, step),)]
            merged = _ns.logaddexp(x[(slice(None),) * d + (slice(step, n),)],
                                   x[(slice(None),) * d + (slice(0, n - step),)])
            x = _ns.concat([keep, merged], axis=d)
            step *= 2
        return x if self.ndim else _ns.reshape(x, ())

    def rot90(self, k=1, dims=(0, 1)):
        """Rotate by 90 degrees k times in the plane of `dims`, from the first towards the second (np.rot90)."""
        a, b = (_norm_dim(d, self.ndim) for d in dims)
        if a == b:
            raise ValueError(f"rot90: dims must differ, got {tuple(dims)}")
        k = int(k) % 4
        if k == 0:
            return self
        if k == 2:
            return _ns.flip(self, (a, b))
        if k == 1:
            return _ns.flip(self, b).swapaxes(a, b)
        return _ns.flip(self.swapaxes(a, b), b)

    def _diagonal_filled(self, fill_value, wrap=False):
        """What x.fill_diagonal_(v) writes: the main diagonal (of a matrix, or of equal dims) set to v."""
        shape = _static_shape(self)
        if self.ndim < 2 or (self.ndim > 2 and len(set(shape)) != 1):
            raise ValueError(f"fill_diagonal_: expects a matrix or a tensor with all dims equal, got {shape}")
        if self.ndim == 2:
            mask = np.eye(shape[0], shape[1], dtype=bool)
            if wrap and shape[0] > shape[1] + 1:
                step = shape[1] + 1
                for start in range(step, shape[0], step):
                    mask[start:start + shape[1]] |= np.eye(min(shape[1], shape[0] - start), shape[1], dtype=bool)
        else:
            mask = np.zeros(shape, dtype=bool)
            mask[(np.arange(shape[0]),) * self.ndim] = True
        return _ns.where(_constant(self, mask), _ns.full_like(self, fill_value), self)

    def index_put(self, indices, values, accumulate=False):
        """A copy with x[indices] = values (`accumulate=True`: added, repeated indices all add)."""
        indices = tuple(indices)
        values = values if _is_array(values) else _ns.full((), values, dtype=self.dtype)
        if not accumulate:
            return _ns.setitem(self, indices, _ns.astype(values, self.dtype))
        if len(indices) > self.ndim:
            raise IndexError(f"index_put: {len(indices)} index tensors for a tensor of rank {self.ndim}")
        shape = tuple(_static_shape(self))
        lead, rest = shape[:len(indices)], shape[len(indices):]
        flat = None
        for i, index in enumerate(indices):        # the row-major position among the indexed (leading) dims
            part = _ns.astype(index, "int64") * int(np.prod(lead[i + 1:], dtype=np.int64))
            flat = part if flat is None else flat + part
        values = _ns.broadcast_to(_ns.astype(values, self.dtype), tuple(flat.shape) + rest)
        values = _ns.reshape(values, (-1,) + rest)
        spread = _ns.broadcast_to(_ns.reshape(flat, (-1,) + (1,) * len(rest)), tuple(values.shape))
        target = _ns.reshape(self, (int(np.prod(lead, dtype=np.int64)),) + rest)
        out = _ns.scatter_add(target, 0, spread, values)
        return _ns.reshape(out, tuple(self.shape))

    def masked_scatter(self, mask, source):
        """A copy with source's first elements, in order, written where mask (broadcast to x) is True."""
        shape = tuple(self.shape)
        where = _ns.reshape(_ns.broadcast_to(mask, shape), (-1,))
        position = _ns.cumsum(_ns.astype(where, "int64"), axis=0) - 1
        taken = _ns.take(_ns.reshape(source, (-1,)), _ns.clip(position, 0, None), axis=0)
        out = _ns.where(where, _ns.astype(taken, self.dtype), _ns.reshape(self, (-1,)))
        return _ns.reshape(out, shape)

    def round(self, decimals=0):
        """Halves to even, as PyTorch's (and NumPy's) round; `decimals` places."""
        return _ns.round(self, decimals=int(decimals))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|x - other| <= atol + rtol * |other| elementwise; equal infinities are close, NaN only to NaN
        with `equal_nan`."""
        finite = _ns.logical_and(_ns.isfinite(self), _ns.isfinite(other))
        a, b = _ns.where(finite, self, _ns.zeros_like(self)), _ns.where(finite, other, _ns.zeros_like(other))
        close = _ns.logical_or(_ns.equal(self, other),
                               _ns.logical_and(finite, _ns.abs(a - b) <= atol + rtol * _ns.abs(b)))
        if equal_nan:
            close = close | (_ns.isnan(self) & _ns.isnan(other))
        return close

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN as `nan`, +inf as `posinf` and -inf as `neginf` (the dtype's largest and smallest by default)."""
        if np.dtype(self.dtype).kind not in "fc":
            return _ns.positive(self)
        info = np.finfo(np.dtype(self.dtype))
        top = float(info.max) if posinf is None else posinf
        bottom = float(info.min) if neginf is None else neginf
        out = _ns.where(_ns.isnan(self), _ns.full_like(self, nan), self)
        out = _ns.where(_ns.logical_and(_ns.isinf(self), self > 0), _ns.full_like(self, top), out)
        return _ns.where(_ns.logical_and(_ns.isinf(self), self < 0), _ns.full_like(self, bottom), out)

    def fmod(self, other):
        """The remainder with the dividend's sign (C's fmod; `%` / remainder take the divisor's)."""
        r = _ns.remainder(self, other)
        wrong_sign = _ns.logical_and(_ns.not_equal(r, 0), _ns.not_equal(r < 0, self < 0))
        return r - _ns.where(wrong_sign, other, _ns.zeros_like(r))

    def xlogy(self, other):
        """x * log(other), 0 where x is 0 (unless other is NaN)."""
        safe = _ns.where(_ns.equal(self, 0), _ns.ones_like(other), other)
        out = self * _ns.log(safe)
        return _ns.where(_ns.isnan(other), _ns.astype(other, out.dtype), out)

    def logit(self, eps=None):
        """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given."""
        p = self if eps is None else _ns.clip(self, eps, 1 - eps)
        return _ns.log(p / (1 - p))

    def sinc(self):
        """sin(pi x) / (pi x), 1 at 0."""
        zero = _ns.equal(self, 0)
        t = np.pi * _ns.where(zero, _ns.ones_like(self), self)
        return _ns.where(zero, _ns.ones_like(t), _ns.sin(t) / t)

    def erfinv(self):
        return _ns.erfinv(self)

    def diag(self, diagonal=0):
        """A 1-D tensor's square matrix with it on diagonal `diagonal`; a 2-D tensor's diagonal."""
        k = int(diagonal)
        if self.ndim == 2:
            return _ns.decompositions.diagonal(self, offset=k)
        if self.ndim != 1:
            raise ValueError(f"diag: expects a 1-D or 2-D tensor, got {self.ndim}-D")
        n = _static_shape(self)[0]
        if n == -1:
            raise ValueError("diag: the vector's length is dynamic (known only when the Program runs)")
        pad = _ns.zeros((abs(k),), dtype=self.dtype)
        row = _ns.concat([pad, self] if k >= 0 else [self, pad], axis=0)
        mask = _constant(self, np.eye(n + abs(k), k=k, dtype=bool))
        return _ns.where(mask, _ns.expand_dims(row, axis=0), _ns.zeros((), dtype=self.dtype))

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal `offset` of the matrices over dims dim1 and dim2, as the last dim."""
        x = _ns.moveaxis(self, (_norm_dim(dim1, self.ndim), _norm_dim(dim2, self.ndim)), (-2, -1))
        return _ns.decompositions.diagonal(x, offset=int(offset))

    def _kth_along(self, position, dim, keepdim, result):
        """(values, indices) of the element at `position` of the sorted values along `dim` (stable)."""
        x = self if self.ndim else _ns.reshape(self, (1,))
        d = _norm_dim(dim, x.ndim)
        order = _ns.argsort(x, axis=d)
        where = order[(slice(None),) * d + (slice(position, position + 1),)]
        values = _ns.take_along_axis(x, where, axis=d)
        if not keepdim or self.ndim == 0:
            values, where = _ns.squeeze(values, axis=d), _ns.squeeze(where, axis=d)
        if self.ndim == 0:
            values, where = _ns.reshape(values, ()), _ns.reshape(where, ())
        return result(values, _ns.astype(where, "int64"))

    def median(self, dim=None, keepdim=False):
        """PyTorch's lower median: of all elements (a value), or (values, indices) along `dim`."""
        if dim is None:
            flat = _ns.reshape(self, (-1,))
            n = _static_shape(flat)[0]
            if n == -1:
                raise ValueError("median: the element count is dynamic (known only when the Program runs)")
            return _ns.sort(flat)[(n - 1) // 2]
        n = _static_shape(self)[_norm_dim(dim, self.ndim)] if self.ndim else 1
        if n == -1:
            raise ValueError(f"median: dim {dim} is dynamic (known only when the Program runs)")
        return self._kth_along((n - 1) // 2, dim, keepdim, median_result)

    def kthvalue(self, k, dim=-1, keepdim=False):
        """(values, indices) of the k-th smallest element (1-based) along `dim`."""
        n = _static_shape(self)[_norm_dim(dim, self.ndim)] if self.ndim else 1
        if not 1 <= int(k) <= n:
            raise IndexError(f"kthvalue: k = {k} is out of range for a dim of size {n}")
        return self._kth_along(int(k) - 1, dim, keepdim, kthvalue_result)

    def aminmax(self, *, dim=None, keepdim=False):
        return aminmax_result(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def _cumulative_extreme(self, dim, take_later, result):
        """Running max (min) and where it was along `dim`: a prefix scan of log2(n) steps, each comparing a
        position with the one 2^k before it (ties keep the later index, as PyTorch's)."""
        x = self if self.ndim else _ns.reshape(self, (1,))
        d = _norm_dim(dim, x.ndim)
        n = _static_shape(x)[d]
        if n == -1:
            raise ValueError(f"cummax/cummin: dim {dim} is dynamic (known only when the Program runs)")
        shape = [1] * x.ndim
        shape[d] = n
        index = _ns.broadcast_to(_constant(x, np.arange(n, dtype=np.int64).reshape(shape)), tuple(x.shape))
        values = x
        step = 1
        while step < n:
            head = (slice(None),) * d + (slice(0, n - step),)
            tail = (slice(None),) * d + (slice(step, n),)
            early, early_index = values[head], index[head]
            late, late_index = values[tail], index[tail]
            better = take_later(early, late)
            merged = _ns.where(better, early, late), _ns.where(better, early_index, late_index)
            keep = (slice(None),) * d + (slice(0, step),)
            values = _ns.concat([values[keep], merged[0]], axis=d)
            index = _ns.concat([index[keep], merged[1]], axis=d)
            step *= 2
        if self.ndim == 0:
            values, index = _ns.reshape(values, ()), _ns.reshape(index, ())
        return result(values, index)

    def cummax(self, dim):
        """(values, indices) of the running maximum along `dim`."""
        return self._cumulative_extreme(dim, lambda early, late: early > late, cummax_result)

    def cummin(self, dim):
        """(values, indices) of the running minimum along `dim`."""
        return self._cumulative_extreme(dim, lambda early, late: early < late, cummin_result)

    def index_fill(self, dim, index, value):
        """A copy with the slices `index` along `dim` set to `value`."""
        if _is_array(value):
            value = _ns.astype(value, self.dtype)
        return _ns.setitem(self, (slice(None),) * _norm_dim(dim, self.ndim) + (index,), value)

    def index_copy(self, dim, index, source):
        """A copy with the slices `index` along `dim` replaced by source's."""
        return _ns.setitem(self, (slice(None),) * _norm_dim(dim, self.ndim) + (index,),
                           _ns.astype(source, self.dtype))

    def index_add(self, dim, index, source, *, alpha=1):
        """A copy with source's slices added at `index` along `dim` (repeated indices all add)."""
        d = _norm_dim(dim, self.ndim)
        if alpha != 1:
            source = source * alpha
        shape = [1] * max(source.ndim, 1)
        shape[d] = -1
        spread = _ns.broadcast_to(_ns.reshape(index, tuple(shape)), tuple(source.shape))
        return _ns.scatter_add(self, d, spread, _ns.astype(source, self.dtype))

    def bernoulli(self, p=None):
        """1 with probability p (x's values, or the number `p`), else 0, in x's dtype."""
        chance = self if p is None else p
        return _ns.astype(_ns.rand_like(self, dtype="float64") < chance, self.dtype)

    def _bernoulli_filled(self, p=0.5):
        """What `x.bernoulli_(p)` writes: 1 with probability p (0.5 by default), else 0, in x's shape."""
        return _ns.astype(_ns.rand_like(self, dtype="float64") < p, self.dtype)

    def trace(self):
        """The sum of a matrix's diagonal (PyTorch's x.trace(); rt.trace is the tracing API)."""
        return _ns.decompositions.trace(self)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """PyTorch's unique: the sorted distinct values of all elements, with the inverse (x's shape) and
        the counts when asked."""
        if dim is not None:
            raise ValueError("unique(dim=...) is not supported: the distinct values of all elements are "
                             "x.unique(); compare rows with == for distinct rows")
        if return_inverse and return_counts:
            found = _ns.unique_all(self)
            return found.values, found.inverse_indices, found.counts
        if return_inverse:
            return tuple(_ns.unique_inverse(self))
        if return_counts:
            return tuple(_ns.unique_counts(self))
        return _ns.unique_values(self)

    def histc(self, bins=100, min=0, max=0):
        """Counts of x's values in `bins` equal bins over [min, max] (x's own range when both are 0); values
        outside are not counted."""
        low, high = float(min), float(max)
        flat = _ns.reshape(self, (-1,))
        if low == high:         # x's range; a single value v counts in [v - 1, v + 1], as PyTorch's
            low, high = _ns.min(flat), _ns.max(flat)
            same = _ns.equal(low, high)
            low, high = _ns.where(same, low - 1, low), _ns.where(same, high + 1, high)
        width = high - low
        where = _ns.astype(_ns.floor((flat - low) * (bins / width)), "int64")
        where = _ns.clip(where, 0, bins - 1)
        inside = _ns.logical_and(flat >= low, flat <= high)
        return _ns.scatter_add(_ns.zeros((int(bins),), dtype=self.dtype), 0, where, _ns.astype(inside, self.dtype))

    def addcmul(self, tensor1, tensor2, *, value=1):
        return self + value * tensor1 * tensor2

    def addcdiv(self, tensor1, tensor2, *, value=1):
        return self + value * tensor1 / tensor2

    def nonzero(self, *, as_tuple=False):
        """PyTorch's nonzero: an (n, ndim) int64 tensor of indices, or the array API's tuple with as_tuple."""
        parts = _ns.nonzero(self)
        return tuple(parts) if as_tuple else _ns.stack(list(parts), axis=1)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        close = _ns.abs(self - other) <= atol + rtol * _ns.abs(other)
        if equal_nan:
            close = close | (_ns.isnan(self) & _ns.isnan(other))
        return bool(_ns.all(close))

    def contiguous(self, memory_format=None):
        return self

    def type_as(self, other):
        return _cast(self, other.dtype)

    def type(self, dtype=None):
        if dtype is None:
            return f"runtime.{np.dtype(self.dtype).name}"
        return _cast(self, dtype)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return _ns.zeros(_sizes(size), dtype=dtype or self.dtype, device=device or getattr(self, "device", None))

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return _ns.ones(_sizes(size), dtype=dtype or self.dtype, device=device or getattr(self, "device", None))

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return _ns.zeros(_sizes(size), dtype=dtype or self.dtype, device=device or getattr(self, "device", None))

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return _ns.full(tuple(size), fill_value, dtype=dtype or self.dtype, device=device or getattr(self, "device", None))

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        device = device or getattr(self, "device", None)
        return _ns.creation.tensor(data, dtype=dtype or self.dtype, **({"device": device} if device else {}))


# PyTorch's in-place methods and the out-of-place method each writes back; runtime.writes gives
# Tensor the writing versions, a traced local value (which has no place to write) keeps these
IN_PLACE = {"add_": "add", "sub_": "sub", "mul_": "mul", "div_": "div", "pow_": "pow", "clamp_": "clamp",
            "clip_": "clamp", "neg_": "neg", "abs_": "abs", "exp_": "exp", "log_": "log", "sqrt_": "sqrt",
            "tanh_": "tanh", "sigmoid_": "sigmoid", "relu_": "relu", "masked_fill_": "masked_fill",
            "clamp_min_": "clamp_min", "clamp_max_": "clamp_max", "floor_": "floor", "ceil_": "ceil",
            "round_": "round", "sign_": "sign", "reciprocal_": "reciprocal", "square_": "square",
            "scatter_": "scatter", "scatter_add_": "scatter_add", "tril_": "tril", "triu_": "triu",
            "index_fill_": "index_fill", "index_add_": "index_add", "index_copy_": "index_copy",
            "nan_to_num_": "nan_to_num", "lerp_": "lerp", "fmod_": "fmod", "addcmul_": "addcmul",
            "addcdiv_": "addcdiv", "erfinv_": "erfinv", "logit_": "logit", "xlogy_": "xlogy", "sinc_": "sinc",
            "bernoulli_": "_bernoulli_filled", "fill_diagonal_": "_diagonal_filled",
            "index_put_": "index_put", "masked_scatter_": "masked_scatter", "scatter_reduce_": "scatter_reduce",
            "fill_": None, "zero_": None, "copy_": None, "normal_": None, "uniform_": None}


# PyTorch tensor methods that have no spelling here, with what to write instead (the AttributeError says it)
NOT_PORTED = {
    "data_ptr": "there is no raw memory here: use x.numpy() for the values",
    "storage": "there is no storage object: use x.numpy() for the values",
    "untyped_storage": "there is no storage object: use x.numpy() for the values",
    "stride": "strides are NumPy's business: use x.numpy().strides (bytes), after the Program ran",
    "as_strided": "no strided views: build the windows with slicing and rt.stack",
    "grad_fn": "there is no graph object on a tensor: x.requires_grad says whether one is recorded",
    "register_hook": "no tensor hooks: take the gradient with rt.grad(fn) or read .grad after backward()",
    "retain_grad": "only leaves keep .grad: differentiate with respect to it with rt.grad(fn, argnums=...)",
    "resize_": "tensors are values: x = x.reshape(...), or a new tensor",
    "set_": "write into a captured tensor with x.set_value(v)",
    "put_": "x = rt.setitem(x, index, v)",
    "exponential_": "x = -rt.log(rt.rand(*x.shape)) / lambd",
    "random_": "x = rt.randint(low, high, x.shape)",
    "log_normal_": "x = rt.exp(mean + std * rt.randn(*x.shape))",
    "geometric_": "draw with rt.rand and write with set_value",
    "cauchy_": "draw with rt.rand and write with set_value",
    "to_sparse": "sparse tensors are not supported: keep it dense",
    "to_dense": "tensors are always dense here: x itself",
    "coalesce": "sparse tensors are not supported",
    "dequantize": "quantized tensors are not supported",
    "mode": "count with rt.unique_counts",
    "bfloat16": "NumPy has no bfloat16: x.half() or x.float()",
    "apply_": "compute the new value with runtime ops",
    "map_": "compute the new value with runtime ops",
    "share_memory_": "there is one process here: x itself",
    "record_stream": "there are no CUDA streams here",
    "is_pinned": "there is no pinned memory here",
    "get_device": "x.device ('cpu' or 'gpu')",
    "is_sparse": "tensors are always dense here",
    "names": "named tensors are not supported",
    "refine_names": "named tensors are not supported",
    "align_to": "named tensors are not supported: x.permute(...)",
}


def module_getattr(module, torch_module, not_ported):
    """A module's `__getattr__`: a PyTorch name in `not_ported` (name -> what to write instead) is an
    AttributeError that says so; any other missing name is the plain AttributeError."""
    def __getattr__(name):
        hint = not_ported.get(name)
        if hint is None:
            raise AttributeError(f"module '{module}' has no attribute '{name}'")
        raise AttributeError(f"module '{module}' has no attribute '{name}' (PyTorch's {torch_module}.{name} is "
                             f"not supported): {hint}")
    return __getattr__


def _no_place(name, base):
    def method(self, *args, **kwargs):
        instead = f"x = x.{base}(...)" if base else "x = a new value (rt.zeros_like(x), rt.full_like(x, v), ...)"
        raise TypeError(f"x.{name}() writes into x in place, which a traced local value cannot (it is a value, "
                        f"not a place): write {instead}; a captured Tensor (a Parameter, a buffer) can be written "
                        "with x.set_value(...)")
    method.__name__ = name
    return method


def _constant(like, array):
    """A NumPy constant as a tensor on `like`'s device (a traced value's is the Program's)."""
    device = like.device
    return _ns.creation.tensor(array, **({"device": device} if device else {}))


def _cast(x, dtype):
    """x as dtype; x itself when it already is (PyTorch's `.float()` on a float32 keeps its gradient)."""
    return x if np.dtype(dtype) == np.dtype(x.dtype) and not getattr(x, "weak", False) else _ns.astype(x, dtype)


def _not_ported(name, hint):
    def missing(self):
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}' (PyTorch's x.{name} is "
                             f"not supported): {hint}")
    return property(missing, doc=f"Not supported (PyTorch's x.{name}): {hint}")


def _dtype_method(dtype):
    def method(self, memory_format=None):
        return _cast(self, dtype)
    method.__name__ = f"as_{dtype}"
    method.__doc__ = f"PyTorch's dtype method: x.astype({dtype!r})."
    return method


def _unary_method(name):
    def method(self):
        return getattr(_ns, name)(self)
    method.__doc__ = f"rt.{name}(x)"
    return method


def _binary_method(name):
    def method(self, other, *, alpha=None):
        if alpha is not None:
            other = _ns.multiply(other, alpha)
        return getattr(_ns, name)(self, other)
    method.__doc__ = f"rt.{name}(x, other)"
    return method


for _name, _dtype in DTYPE_METHODS.items():
    setattr(TorchMethods, _name, _dtype_method(_dtype))
for _name, _target in ELEMENTWISE.items():
    setattr(TorchMethods, _name, _unary_method(_target))
for _name, _target in BINARY.items():
    setattr(TorchMethods, _name, _binary_method(_target))
for _name, _base in IN_PLACE.items():
    setattr(TorchMethods, _name, _no_place(_name, _base))
for _name, _hint in NOT_PORTED.items():    # properties, not a __getattr__, which would slow every attribute read
    setattr(TorchMethods, _name, _not_ported(_name, _hint))
TorchMethods.rsqrt = lambda self: _ns.divide(1, _ns.sqrt(self))
TorchMethods.div = TorchMethods.divide = lambda self, other, *, rounding_mode=None: divide(self, other, rounding_mode)
TorchMethods.addmm = lambda self, mat1, mat2, *, beta=1, alpha=1: _add_scaled(self, _ns.matmul(mat1, mat2), beta, alpha)
TorchMethods.baddbmm = TorchMethods.addmm        # batched: matmul broadcasts the batch dim
TorchMethods.addbmm = lambda self, batch1, batch2, *, beta=1, alpha=1: _add_scaled(
    self, _ns.sum(_ns.matmul(batch1, batch2), axis=0), beta, alpha)
TorchMethods.addmv = lambda self, mat, vec, *, beta=1, alpha=1: _add_scaled(self, _ns.matmul(mat, vec), beta, alpha)
TorchMethods.addr = lambda self, vec1, vec2, *, beta=1, alpha=1: _add_scaled(
    self, _ns.multiply(_ns.expand_dims(vec1, axis=-1), vec2), beta, alpha)
TorchMethods.sigmoid = lambda self: _ns.nn_ops.sigmoid(self)
TorchMethods.relu = lambda self: _ns.nn_ops.relu(self)
TorchMethods.abs = _unary_method("abs")
TorchMethods.exp = _unary_method("exp")
TorchMethods.log = _unary_method("log")
TorchMethods.sqrt = _unary_method("sqrt")
TorchMethods.tanh = _unary_method("tanh")


def divide(x, y, rounding_mode=None):
    """PyTorch's div: true division, or rounded 'floor' (NumPy's floor_divide) or 'trunc' (towards zero; an
    integer result for integer operands, as PyTorch's)."""
    if rounding_mode is None:
        return _ns.divide(x, y)
    if rounding_mode == "floor":
        return _ns.floor_divide(x, y)
    if rounding_mode != "trunc":
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    q = _ns.floor_divide(x, y)
    if not np.issubdtype(np.dtype(q.dtype), np.integer):
        return _ns.trunc(_ns.divide(x, y))
    # floor and trunc differ by one where the signs differ and the division is not exact
    return q + _ns.astype(_ns.logical_and(q < 0, _ns.not_equal(q * y, x)), q.dtype)


def _add_scaled(x, product, beta, alpha):
    """PyTorch's addmm family: beta * x + alpha * product; x is not read when beta is 0 (its NaNs do not
    propagate), as PyTorch's."""
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        return out
    return out + (x if beta == 1 else x * beta)


def in_place_value(x, method, args, kwargs):
    """The value PyTorch's in-place `x.method(*args)` leaves in x, computed out of place: x's dtype (NumPy's
    'same_kind' rule, as `x op= y`) and x's shape. Converted code rebinds a traced local to it."""
    base = IN_PLACE[method]
    if base is not None:
        out = getattr(x, base)(*args, **kwargs)
    elif method == "zero_":
        out = _ns.zeros_like(x)
    elif method == "fill_":
        out = _ns.full_like(x, args[0] if args else kwargs["value"])
    elif method == "copy_":
        out = args[0] if args else kwargs["src"]
    elif method == "normal_":
        mean, std = (list(args) + [kwargs.get("mean", 0.0), kwargs.get("std", 1.0)][len(args):])[:2]
        out = _ns.randn_like(x) * std + mean
    else:   # uniform_
        low, high = (list(args) + [kwargs.get("a", 0.0), kwargs.get("b", 1.0)][len(args):])[:2]
        out = _ns.rand_like(x) * (high - low) + low
    if not _is_array(out):
        out = _ns.full_like(x, out)
    if np.dtype(out.dtype) != np.dtype(x.dtype):
        if not np.can_cast(out.dtype, x.dtype, casting="same_kind"):
            raise TypeError(f"x.{method}(): the result is {np.dtype(out.dtype).name}, which cannot be written into "
                            f"x ({np.dtype(x.dtype).name}) with casting rule 'same_kind'")
        out = _ns.astype(out, x.dtype)
    if tuple(_static_shape(out)) != tuple(_static_shape(x)):
        out = _ns.broadcast_to(out, tuple(x.shape))
    return out
