"""The namespace's PyTorch spellings: `rt.cat`, `rt.sum(x, dim=1, keepdim=True)`, `rt.zeros(2, 3)`,
`rt.max(x, 1)` as `(values, indices)`, `rt.manual_seed`, `rt.long`, `@rt.no_grad()`, `rt.multinomial`.

`runtime/__init__` puts these over the array API functions they extend: a call in the array API's
spelling reaches the array API function unchanged, a call with PyTorch's keywords (or PyTorch's
positional meaning where the array API has none, as `rt.max(x, 1)`) goes to the tensor method of
the same name (`runtime/torch_methods.py`), so each spelling is defined once.
"""
import builtins
import functools

import numpy as np

from . import backends, ops
from .autodiff import tape
from .dtypes import as_dtype
from .ops.creation import asarray, tensor
from .rng import seed
from .tensor import Tensor
from .torch_methods import TorchMethods, sort_result, topk_result
from .tracer import Tracer

# PyTorch's dtype names (rt.float32 and the rest are NumPy's, which PyTorch shares)
float = np.float32          # noqa: A001
double = np.float64
half = np.float16
long = np.int64
int = np.int32              # noqa: A001
short = np.int16
cfloat = np.complex64
cdouble = np.complex128

_TORCH_KEYWORDS = frozenset({"dim", "keepdim", "unbiased", "correction", "diagonal", "dims"})


def _array(x):
    return x if isinstance(x, TorchMethods) else asarray(x)


def _method_spelling(array_fn, method, positional_is_torch=False):
    """`array_fn` in the array API's spelling; the method `method` of x given PyTorch's keywords (or, with
    `positional_is_torch`, any positional argument after x, where the array API takes keywords only)."""
    @functools.wraps(array_fn)
    def fn(x, *args, **kwargs):
        if (kwargs and not _TORCH_KEYWORDS.isdisjoint(kwargs)) or (positional_is_torch and args):
            return getattr(_array(x), method)(*args, **kwargs)
        return array_fn(x, *args, **kwargs)
    return fn


sum = _method_spelling(ops.sum, "sum")          # noqa: A001
mean = _method_spelling(ops.mean, "mean")
prod = _method_spelling(ops.prod, "prod")
any = _method_spelling(ops.any, "any")          # noqa: A001
all = _method_spelling(ops.all, "all")          # noqa: A001
argmax = _method_spelling(ops.argmax, "argmax")
argmin = _method_spelling(ops.argmin, "argmin")
cumsum = _method_spelling(ops.cumsum, "cumsum")
logsumexp = _method_spelling(ops.logsumexp, "logsumexp")
max = _method_spelling(ops.max, "max", positional_is_torch=True)      # noqa: A001
min = _method_spelling(ops.min, "min", positional_is_torch=True)      # noqa: A001
std = _method_spelling(ops.std, "std", positional_is_torch=True)
var = _method_spelling(ops.var, "var", positional_is_torch=True)
tril = _method_spelling(ops.tril, "tril", positional_is_torch=True)
triu = _method_spelling(ops.triu, "triu", positional_is_torch=True)
squeeze = _method_spelling(ops.squeeze, "squeeze")
flip = _method_spelling(ops.flip, "flip")
diff = _method_spelling(ops.diff, "diff", positional_is_torch=True)


def roll(x, /, shift=None, *args, axis=None, shifts=None, dims=None):
    """The array API's `roll(x, shift, axis=)`; PyTorch's `roll(x, shifts, dims)` too."""
    if shifts is not None:
        if shift is not None:
            raise TypeError("roll(): give shift (the array API's spelling) or shifts= (PyTorch's), not both")
        shift = shifts
    if shift is None:
        raise TypeError("roll() missing its shift")
    if args:
        if len(args) > 1 or dims is not None:
            raise TypeError("roll() takes x, shift and one dims")
        dims = args[0]
    if dims is not None:
        if axis is not None:
            raise TypeError("roll(): give axis= (the array API's spelling) or dims (PyTorch's), not both")
        axis = dims
    return _array(x).roll(shift, axis)


def amax(x, dim=None, keepdim=False, *, axis=None, keepdims=False):
    return _array(x).amax(dim, keepdim, axis=axis, keepdims=keepdims)


def amin(x, dim=None, keepdim=False, *, axis=None, keepdims=False):
    return _array(x).amin(dim, keepdim, axis=axis, keepdims=keepdims)


def sort(x, /, *args, axis=-1, descending=False, stable=True, dim=None):
    """The array API's sorted values (`axis=`, `descending=`, `stable=` keywords); PyTorch's
    `sort(x, dim, descending, stable)` as (values, indices) given `dim=` or a dim positionally."""
    if not args and dim is None:
        return ops.sort(x, axis=axis, descending=descending, stable=stable)
    if len(args) > 3:
        raise TypeError("sort() takes at most 3 positional arguments after x (dim, descending, stable)")
    if len(args) > 1 and descending:
        raise TypeError("sort(): descending given twice")
    if args and dim is not None:
        raise TypeError("sort(): dim given twice")
    flags = {"descending": descending, "stable": stable}
    for name in ("descending", "stable")[:len(args) - 1]:
        del flags[name]
    return _array(x).sort(*args, **({} if dim is None else {"dim": dim}), **flags)


def topk(x, k, dim=-1, largest=True, sorted=True, *, axis=None):
    """(values, indices) of the k largest (smallest) along `dim` (`axis`), as a named tuple."""
    return _array(x).topk(k, dim, largest, sorted, axis=axis)


def cat(tensors, dim=0, *, axis=None):
    """PyTorch's cat: rt.concat along `dim`."""
    return ops.concat(list(tensors), axis=dim if axis is None else axis)


def concat(arrays, axis=0, *, dim=None):
    return ops.concat(arrays, axis=axis if dim is None else dim)


concatenate = concat


def stack(arrays, axis=0, *, dim=None):
    return ops.stack(arrays, axis=axis if dim is None else dim)


def transpose(x, *axes, **kwargs):
    """`rt.transpose(x, d0, d1)` swaps two dims (PyTorch); `rt.transpose(x, axes)` permutes (NumPy)."""
    if "dim0" in kwargs or "dim1" in kwargs:
        return _array(x).swapaxes(kwargs.pop("dim0"), kwargs.pop("dim1"))
    if "axes" in kwargs:
        axes = (kwargs.pop("axes"),)
    if kwargs:
        raise TypeError(f"transpose() got unexpected keywords {sorted(kwargs)}")
    return _array(x).transpose(*axes)


def softmax(x, dim=-1, *, axis=None, dtype=None):
    return _array(x).softmax(dim, axis=axis, dtype=dtype)


def log_softmax(x, dim=-1, *, axis=None, dtype=None):
    return _array(x).log_softmax(dim, axis=axis, dtype=dtype)


def sigmoid(x):
    return ops.nn_ops.sigmoid(x)


def relu(x):
    return ops.nn_ops.relu(x)


def rsqrt(x):
    return _array(x).rsqrt()


def _method(name, doc):
    def fn(x, *args, **kwargs):
        return getattr(_array(x), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


permute = _method("permute", "PyTorch's permute: rt.permute_dims.")
flatten = _method("flatten", "Merge dims start_dim..end_dim into one (PyTorch's torch.flatten).")
unsqueeze = _method("unsqueeze", "A new dim of size 1 at `dim` (rt.expand_dims).")
chunk = _method("chunk", "`chunks` pieces along `dim` (PyTorch's torch.chunk).")
narrow = _method("narrow", "x[..., start:start + length] along `dim`.")
masked_fill = _method("masked_fill", "x with `value` where mask is True.")
masked_select = _method("masked_select", "The elements of x where mask is True, 1-D.")
gather = _method("gather", "PyTorch's gather(x, dim, index) (rt.take_along_axis).")
scatter = _method("scatter", "PyTorch's scatter(x, dim, index, src): a copy with src written at index.")
index_select = _method("index_select", "PyTorch's index_select(x, dim, index) (rt.take).")
clamp = _method("clamp", "rt.clip under PyTorch's name.")
clone = _method("clone", "A copy that gradients flow through.")
numel = _method("numel", "The number of elements.")
swapaxes = _method("swapaxes", "Swap two dims.")
swapdims = swapaxes
unbind = _method("unbind", "The slices along `dim`, as a tuple.")
repeat_interleave = _method("repeat_interleave", "Each element repeated along `dim` (rt.repeat).")
bmm = mm = ops.matmul
movedim = moveaxis = _method("movedim", "Move dims `source` to `destination` (rt.moveaxis).")
select = _method("select", "x[..., index] along `dim`, that dim removed.")
tensor_split = _method("tensor_split", "PyTorch's tensor_split: n nearly equal pieces, or pieces between indices.")
index_fill = _method("index_fill", "A copy with the slices `index` along `dim` set to `value`.")
index_add = _method("index_add", "A copy with source's slices added at `index` along `dim`.")
index_copy = _method("index_copy", "A copy with the slices `index` along `dim` replaced by source's.")
isclose = _method("isclose", "|a - b| <= atol + rtol * |b|, elementwise.")
allclose = _method("allclose", "Whether every element is close (isclose): a Python bool.")
nan_to_num = _method("nan_to_num", "NaN, +inf and -inf replaced by numbers.")
lerp = _method("lerp", "start + weight * (end - start).")
fmod = _method("fmod", "The remainder with the dividend's sign.")
xlogy = _method("xlogy", "x * log(y), 0 where x is 0.")
logit = _method("logit", "log(p / (1 - p)).")
sinc = _method("sinc", "sin(pi x) / (pi x), 1 at 0.")
diag = _method("diag", "A vector's diagonal matrix, or a matrix's diagonal.")
diagonal = _method("diagonal", "The diagonal over two dims (PyTorch's torch.diagonal).")
median = _method("median", "PyTorch's lower median, or (values, indices) along `dim`.")
kthvalue = _method("kthvalue", "(values, indices) of the k-th smallest along `dim`.")
aminmax = _method("aminmax", "(min, max), over all or along `dim`.")
cummax = _method("cummax", "(values, indices) of the running maximum along `dim`.")
cummin = _method("cummin", "(values, indices) of the running minimum along `dim`.")
histc = _method("histc", "Counts in `bins` equal bins over [min, max].")
ravel = _method("ravel", "x as 1-D.")
unique = _method("unique", "PyTorch's unique: sorted distinct values (inverse, counts when asked).")
unfold = _method("unfold", "Windows of `size` every `step` along `dim`, as a new last dim.")
addcmul = _method("addcmul", "x + value * t1 * t2.")
addcdiv = _method("addcdiv", "x + value * t1 / t2.")

clamp_min = _method("clamp_min", "x clamped from below.")
clamp_max = _method("clamp_max", "x clamped from above.")
cumprod = _method("cumprod", "The running product along `dim`.")
frac = _method("frac", "x - trunc(x).")
exp2 = _method("exp2", "2 ** x.")
dot = inner = _method("dot", "The inner product of two 1-D tensors.")
mv = _method("mv", "matrix @ vector.")
argwhere = _method("argwhere", "The (n, ndim) indices of the non-zero elements.")
take_along_dim = _method("take_along_dim", "take_along_axis (over the flattened tensor without dim).")
logcumsumexp = _method("logcumsumexp", "log(cumsum(exp(x))) along `dim`, without overflow.")
rot90 = _method("rot90", "Rotate by 90 degrees k times in the plane of `dims`.")
index_put = _method("index_put", "A copy with x[indices] = values (or added, accumulate=True).")
scatter_reduce = _method("scatter_reduce", "A copy with src reduced ('sum', 'mean', 'amax', 'amin', 'prod') at index.")
masked_scatter = _method("masked_scatter", "A copy with source's elements where mask is True.")
t = _method("t", "A matrix transposed.")
count_nonzero = _method_spelling(ops.count_nonzero, "count_nonzero", positional_is_torch=True)
fliplr = _method("fliplr", "x flipped along dim 1.")
flipud = _method("flipud", "x flipped along dim 0.")
eq, ne, lt, le, gt, ge = ops.equal, ops.not_equal, ops.less, ops.less_equal, ops.greater, ops.greater_equal
sub = _method("sub", "x - alpha * other.")
mul = _method("mul", "x * other.")
absolute = ops.abs


def where(condition, x=None, y=None):
    """The array API's where(condition, x, y); PyTorch's where(condition) alone is nonzero(as_tuple=True)."""
    if x is None and y is None:
        return tuple(ops.nonzero(condition))
    return ops.where(condition, x, y)


def linspace(start, stop, num=None, *, steps=None, dtype=None, device=None, endpoint=True, requires_grad=False):
    """The array API's linspace(start, stop, num); PyTorch's `steps=` for num."""
    if steps is not None:
        if num is not None:
            raise TypeError("linspace: give num (the array API's spelling) or steps= (PyTorch's), not both")
        num = steps
    if num is None:
        raise TypeError("linspace() missing num (PyTorch's steps)")
    return _grad(ops.linspace(start, stop, num, dtype=dtype, device=device, endpoint=endpoint), requires_grad)


def searchsorted(sorted_sequence, values, *, side="left", sorter=None, right=False, out_int32=False):
    """The array API's searchsorted(x1, x2, side=); PyTorch's `right=`, `out_int32=` and rows of sorted
    sequences (each row of values searched in its own row)."""
    side = "right" if right else side
    seq, vals = _array(sorted_sequence), _array(values)
    if seq.ndim <= 1 or sorter is not None:
        found = ops.searchsorted(seq, vals, side=side, sorter=sorter)
    else:
        before = ops.expand_dims(seq, axis=-2) < ops.expand_dims(vals, axis=-1) if side == "left" else \
            ops.expand_dims(seq, axis=-2) <= ops.expand_dims(vals, axis=-1)
        found = ops.sum(before, axis=-1, dtype="int64")
    return ops.astype(found, "int32" if out_int32 else "int64") if (out_int32 or seq.ndim > 1) else found


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, n) row and column indices of the lower triangle of a row x col matrix."""
    return tensor(np.stack(np.tril_indices(row, offset, col)), dtype=dtype or np.int64,
                  **({"device": device} if device else {}))


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, n) row and column indices of the upper triangle of a row x col matrix."""
    return tensor(np.stack(np.triu_indices(row, offset, col)), dtype=dtype or np.int64,
                  **({"device": device} if device else {}))


def atleast_1d(*tensors):
    out = tuple(x if _array(x).ndim >= 1 else ops.reshape(x, (1,)) for x in map(_array, tensors))
    return out[0] if len(out) == 1 else out


def atleast_2d(*tensors):
    out = tuple(x if x.ndim >= 2 else ops.reshape(x, (1, -1) if x.ndim else (1, 1)) for x in map(_array, tensors))
    return out[0] if len(out) == 1 else out


def atleast_3d(*tensors):
    def three(x):
        if x.ndim >= 3:
            return x
        return ops.reshape(x, (1, 1, 1) if x.ndim == 0 else (1, -1, 1) if x.ndim == 1 else tuple(x.shape) + (1,))
    out = tuple(three(x) for x in map(_array, tensors))
    return out[0] if len(out) == 1 else out


def dstack(tensors):
    return ops.concat([atleast_3d(t) for t in tensors], axis=2)


def column_stack(tensors):
    return ops.concat([t if _array(t).ndim >= 2 else ops.reshape(t, (-1, 1)) for t in tensors], axis=1)


def kron(a, b):
    """The Kronecker product: every element of a times the whole of b, laid out in blocks."""
    a, b = _array(a), _array(b)
    ndim = builtins.max(a.ndim, b.ndim)
    a_shape = (1,) * (ndim - a.ndim) + tuple(a.shape)
    b_shape = (1,) * (ndim - b.ndim) + tuple(b.shape)
    spread_a = ops.reshape(a, tuple(d for n in a_shape for d in (n, 1)))
    spread_b = ops.reshape(b, tuple(d for n in b_shape for d in (1, n)))
    return ops.reshape(spread_a * spread_b, tuple(m * n for m, n in zip(a_shape, b_shape)))


def block_diag(*tensors):
    """The tensors (matrices; a vector is one row) on the diagonal of one matrix, zeros elsewhere."""
    blocks = [atleast_2d(t) for t in tensors]
    dtype = np.result_type(*[b.dtype for b in blocks])
    widths = [b.shape[1] for b in blocks]
    rows = []
    for i, b in enumerate(blocks):
        left, right = builtins.sum(widths[:i]), builtins.sum(widths[i + 1:])
        parts = ([ops.zeros((b.shape[0], left), dtype=dtype)] if left else []) + [ops.astype(b, dtype)] + \
            ([ops.zeros((b.shape[0], right), dtype=dtype)] if right else [])
        rows.append(ops.concat(parts, axis=1) if len(parts) > 1 else parts[0])
    return ops.concat(rows, axis=0)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (the first varies slowest)."""
    if len(tensors) == 1:
        return _array(tensors[0])
    grids = ops.meshgrid(*[_array(t) for t in tensors], indexing="ij")
    return ops.stack([ops.reshape(g, (-1,)) for g in grids], axis=1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule's integral of y along `dim`, at spacing dx (1) or at the points x."""
    y = _array(y)
    d = dim % y.ndim
    n = y.shape[d]
    upper = y[(slice(None),) * d + (slice(1, n),)]
    lower = y[(slice(None),) * d + (slice(0, n - 1),)]
    if x is not None:
        x = _array(x)
        widths = ops.diff(x, axis=dim if x.ndim > 1 else 0)
        if x.ndim == 1 and y.ndim > 1:
            widths = ops.reshape(widths, (-1,) + (1,) * (y.ndim - 1 - d))
        return ops.sum((upper + lower) * widths, axis=d) / 2
    return ops.sum(upper + lower, axis=d) * ((1.0 if dx is None else dx) / 2)


trapz = trapezoid


def tensordot(a, b, dims=2, *, axes=None):
    """The array API's tensordot(a, b, axes=); PyTorch's `dims=` (an int, or two lists of dims)."""
    return ops.tensordot(a, b, axes=dims if axes is None else axes)


def cross(input, other, dim=None):
    """The cross product of 3-vectors along `dim` (PyTorch's default: the first dim of size 3)."""
    input, other = _array(input), _array(other)
    if dim is None:
        shape = ops.broadcast_arrays(input, other)[0].shape
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise ValueError(f"cross: no dim of size 3 in shape {tuple(shape)}")
    return ops.decompositions.cross(input, other, axis=dim)


def det(x):
    return ops.decompositions.det(x)


def logdet(x):
    """log(det(x)); NaN where the determinant is negative, as PyTorch's."""
    return ops.log(ops.decompositions.det(x))


def inverse(x):
    return ops.decompositions.inv(x)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """PyTorch's torch.norm: the vector p-norm over all elements or `dim` ('fro' is the 2-norm)."""
    return _array(input).norm(p, dim, keepdim, dtype)



def erfinv(x):
    return ops.erfinv(x)


def broadcast_tensors(*tensors):
    """The tensors broadcast against each other."""
    return tuple(ops.broadcast_arrays(*[_array(t) for t in tensors]))


def std_mean(x, dim=None, *, correction=None, keepdim=False, unbiased=None):
    """(std, mean) over `dim` (all when None); the std is unbiased unless `correction=0` / `unbiased=False`."""
    x = _array(x)
    ddof = correction if correction is not None else (0 if unbiased is False else 1)
    return x.std(dim=dim, correction=ddof, keepdim=keepdim), x.mean(dim=dim, keepdim=keepdim)


def var_mean(x, dim=None, *, correction=None, keepdim=False, unbiased=None):
    """(var, mean), as std_mean."""
    x = _array(x)
    ddof = correction if correction is not None else (0 if unbiased is False else 1)
    return x.var(dim=dim, correction=ddof, keepdim=keepdim), x.mean(dim=dim, keepdim=keepdim)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value among sorted `boundaries`: i with boundaries[i-1] < x <= boundaries[i]
    (`right=True`: boundaries[i-1] <= x < boundaries[i])."""
    found = ops.searchsorted(_array(boundaries), _array(input), side="right" if right else "left")
    return ops.astype(found, "int32" if out_int32 else "int64")


def cdist(x1, x2, p=2.0, compute_mode=None):
    """The p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M): (..., P, R)."""
    x1, x2 = _array(x1), _array(x2)
    gap = ops.expand_dims(x1, axis=-2) - ops.expand_dims(x2, axis=-3)
    return ops.decompositions.vector_norm(gap, axis=-1, ord=p)


def dist(input, other, p=2):
    """The p-norm of input - other, over all elements."""
    return ops.decompositions.vector_norm(_array(input) - other, ord=p)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Normal samples: of one mean and std (numbers) in a tensor of `size`, or elementwise of tensors of
    means and stds (broadcast)."""
    if size is not None:
        noise = ops.randn(*tuple(size), dtype=dtype or (mean.dtype if isinstance(mean, TorchMethods) else None),
                          device=device)
        return noise * std + mean
    arrays = [a for a in (mean, std) if isinstance(a, TorchMethods)]
    if not arrays:
        raise TypeError("normal(mean, std): give size= when mean and std are numbers")
    like = arrays[0] if len(arrays) == 1 else ops.broadcast_arrays(mean, std)[0]
    return ops.randn_like(like) * std + mean


def bernoulli(input, p=None, *, generator=None):
    """1 with probability input (or `p`), else 0, in input's dtype."""
    return _array(input).bernoulli(p)




def div(input, other, *, rounding_mode=None):
    """PyTorch's torch.div: true division, or rounding_mode 'floor' / 'trunc'."""
    return _array(input).div(other, rounding_mode=rounding_mode)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    return _array(input).addmm(mat1, mat2, beta=beta, alpha=alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    return _array(input).baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2).sum(0)."""
    return _array(input).addbmm(batch1, batch2, beta=beta, alpha=alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _array(input).addmv(mat, vec, beta=beta, alpha=alpha)


def _legacy_constructor(dtype, name):
    """PyTorch's legacy typed constructors: `torch.LongTensor([1, 2])` (the data as that dtype) or
    `torch.FloatTensor(2, 3)` (that shape; zeros where PyTorch leaves the memory uninitialized)."""
    def make(*args):
        if not args or builtins.all(isinstance(a, (builtins.int, np.integer)) for a in args):
            return ops.zeros(tuple(builtins.int(a) for a in args) or (0,), dtype=dtype)
        if len(args) != 1:
            raise TypeError(f"{name}(): give the data (a list or array) or the sizes as ints, got {args!r}")
        return tensor(args[0], dtype=dtype)
    make.__name__ = name
    make.__doc__ = _legacy_constructor.__doc__
    return make


FloatTensor = _legacy_constructor(np.float32, "FloatTensor")
DoubleTensor = _legacy_constructor(np.float64, "DoubleTensor")
HalfTensor = _legacy_constructor(np.float16, "HalfTensor")
LongTensor = _legacy_constructor(np.int64, "LongTensor")
IntTensor = _legacy_constructor(np.int32, "IntTensor")
ByteTensor = _legacy_constructor(np.uint8, "ByteTensor")
BoolTensor = _legacy_constructor(np.bool_, "BoolTensor")
outer = ops.decompositions.outer
Size = tuple                     # torch.Size: shapes are tuples here


def hstack(tensors):
    tensors = list(tensors)
    return ops.concat(tensors, axis=0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return ops.concat([t if t.ndim > 1 else ops.reshape(t, (1, -1)) for t in tensors], axis=0)


def polar(abs, angle):
    """abs * (cos(angle) + i sin(angle)), complex."""
    return abs * ops.cos(angle) + 1j * (abs * ops.sin(angle))


def view_as_complex(x):
    """A (..., 2) float tensor as complex numbers (real, imaginary): a new value, not a view."""
    return x[..., 0] + 1j * x[..., 1]


def view_as_real(x):
    """A complex tensor as (..., 2) floats (real, imaginary)."""
    return ops.stack([ops.real(x), ops.imag(x)], axis=-1)


class _Cuda:
    """`rt.cuda.is_available()` and friends: the GPU backend (CuPy) stands for CUDA."""

    @staticmethod
    def is_available():
        return backends.gpu_available()

    @staticmethod
    def device_count():
        return int(backends.gpu_available())

    @staticmethod
    def manual_seed(n):
        seed(n)

    manual_seed_all = manual_seed

    @staticmethod
    def synchronize(device=None):
        if backends.gpu_available():
            backends.get_backend("gpu").synchronize()


cuda = _Cuda()


def split(x, split_size_or_sections, axis=None, *, dim=None):
    """NumPy's `rt.split(x, n, axis)` (n equal pieces, or pieces between indices); PyTorch's
    `rt.split(x, size, dim=d)` (pieces of `size`, or of the listed sizes) given `dim=`."""
    if dim is not None:
        return _array(x).split(split_size_or_sections, dim)
    return ops.split(x, split_size_or_sections, axis=0 if axis is None else axis)


def _size_and_dtype(shape, sizes, size, dtype, what):
    """`zeros(2, 3)` / `zeros((2, 3))` / `zeros(size=(2, 3))` (PyTorch) and `zeros((2, 3), float32)` /
    `zeros(shape=(2, 3))` (NumPy, the array API)."""
    if size is not None:
        if shape is not None or sizes:
            raise TypeError(f"{what}: give the shape once (shape, or PyTorch's size=)")
        shape = size
    if shape is None:
        raise TypeError(f"{what}() missing its shape")
    if len(sizes) == 1 and not isinstance(sizes[0], (builtins.int, np.integer, Tracer)) and sizes[0] is not None:
        if dtype is not None:
            raise TypeError(f"{what}: dtype given twice")
        return shape, sizes[0]
    if not sizes:
        return shape, dtype
    return (shape,) + tuple(sizes), dtype


def zeros(shape=None, *sizes, size=None, dtype=None, device=None, requires_grad=False):
    shape, dtype = _size_and_dtype(shape, sizes, size, dtype, "zeros")
    return _grad(ops.zeros(shape, dtype=dtype, device=device), requires_grad)


def ones(shape=None, *sizes, size=None, dtype=None, device=None, requires_grad=False):
    shape, dtype = _size_and_dtype(shape, sizes, size, dtype, "ones")
    return _grad(ops.ones(shape, dtype=dtype, device=device), requires_grad)


def empty(shape=None, *sizes, size=None, dtype=None, device=None, requires_grad=False):
    """Zeros (an uninitialized tensor has no defined values to depend on)."""
    shape, dtype = _size_and_dtype(shape, sizes, size, dtype, "empty")
    return _grad(ops.zeros(shape, dtype=dtype, device=device), requires_grad)


def _grad(x, requires_grad):
    if requires_grad:
        x.requires_grad = True
    return x


def randint(low, high=None, size=None, *, shape=None, dtype=None, device=None):
    """Integers in [low, high): NumPy's `randint(low, high, shape)` and PyTorch's `randint(high, size)` /
    `randint(low, high, size)`."""
    if isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    shape = size if size is not None else (shape if shape is not None else (1,))
    return ops.randint(low, high, tuple(shape) if isinstance(shape, list) else shape, dtype=dtype, device=device)


def manual_seed(n):
    """PyTorch's name for rt.seed."""
    seed(n)


def no_grad(func=None):
    """`with rt.no_grad():`, `@rt.no_grad()` and `@rt.no_grad`: run without recording for backward()."""
    if callable(func):
        return tape.no_grad()(func)
    return tape.no_grad()


inference_mode = no_grad


def is_grad_enabled():
    return tape.GRAD_MODE.enabled


class set_grad_enabled:
    """PyTorch's set_grad_enabled: grad mode `mode` from the call on (this thread), or inside a `with`
    block, after which the mode before it comes back."""

    def __init__(self, mode):
        self.before = tape.GRAD_MODE.enabled
        tape.GRAD_MODE.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        tape.GRAD_MODE.enabled = self.before


def is_tensor(x):
    return isinstance(x, (Tensor, Tracer))


def from_numpy(array):
    """A Tensor over a NumPy array (its dtype kept)."""
    return asarray(np.asarray(array))


def as_tensor(data, dtype=None, device=None):
    """PyTorch's as_tensor: data as a tensor (a tensor itself when dtype and device already match); no
    device means the data's own, or the CPU."""
    if isinstance(data, TorchMethods) and (dtype is None or np.dtype(dtype) == np.dtype(data.dtype)) and \
            (device is None or globals()["device"](device) == data.device):
        return data
    if device is None:
        return asarray(data, dtype=dtype)
    return asarray(data, dtype=dtype, device=globals()["device"](device))


def device(name):
    """PyTorch's torch.device: the device's name here ("cuda" is the GPU backend, "gpu")."""
    name = str(name).split(":")[0]
    return "gpu" if name == "cuda" else name


def multinomial(input, num_samples, replacement=False):
    """`num_samples` category indices per row of non-negative weights `input` (1-D or 2-D), drawn from the
    generator `rt.seed` / `rt.manual_seed` reset; without replacement no index repeats in a row.

    With replacement each draw inverts the cumulative distribution at a uniform sample; without, the
    Gumbel-top-k trick draws the categories in PyTorch's sequential order of probability.
    """
    probs = _array(input)
    if probs.ndim not in (1, 2):
        raise ValueError(f"multinomial: input must be 1-D or 2-D, got {probs.ndim}-D")
    rows = probs if probs.ndim == 2 else ops.expand_dims(probs, axis=0)
    n_rows, n_cats = rows.shape
    if not replacement and isinstance(n_cats, builtins.int) and num_samples > n_cats:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from "
                         f"{n_cats} categories")
    p = ops.astype(rows, "float64")
    p = p / ops.sum(p, axis=-1, keepdims=True)
    if replacement:
        cdf = ops.cumsum(p, axis=-1)
        u = ops.rand(n_rows, num_samples, dtype="float64")
        picked = ops.sum(ops.expand_dims(u, axis=-1) >= ops.expand_dims(cdf, axis=-2), axis=-1)
        picked = ops.minimum(picked, n_cats - 1)
    else:
        u = ops.rand(n_rows, n_cats, dtype="float64")
        gumbel = -ops.log(-ops.log(ops.clip(u, 1e-300, None)))
        keys = ops.where(p > 0, ops.log(ops.where(p > 0, p, 1.0)) + gumbel, -np.inf)
        picked = ops.topk(keys, num_samples, axis=-1)[1]
    picked = ops.astype(picked, "int64")
    return picked if probs.ndim == 2 else picked[0]


# torch.* names with no spelling here, and what to write instead (`rt.<name>` says it: runtime/__init__)
NOT_PORTED = {
    "compile": "decorate with transpiler.to_static (or call to_static(model))",
    "jit": "transpiler.to_static converts, transpiler.save / load deploy",
    "autocast": "mixed precision is not supported: cast with x.half() / model.half()",
    "bfloat16": "NumPy has no bfloat16: use rt.float16 or rt.float32",
    "Generator": "one generator: rt.manual_seed(n) / rt.seed(n)",
    "set_default_dtype": "float32 is the default; pass dtype= to the creation functions",
    "get_default_dtype": "float32 is the default",
    "set_num_threads": "NumPy's threads come from its BLAS (OMP_NUM_THREADS)",
    "use_deterministic_algorithms": "the NumPy backend is deterministic already",
    "save": "np.savez(path, **{k: v.numpy() for k, v in model.state_dict().items()}), or transpiler.save",
    "load": "dict(np.load(path)) for model.load_state_dict, or transpiler.load",
    "hub": "load weights with torch once and copy them with load_state_dict",
    "distributed": "one process: map a saved Program over Dask arrays with transpiler.map_batches",
}

TORCH_DTYPES = {"float": float, "double": double, "half": half, "long": long, "int": int, "short": short,
                "cfloat": cfloat, "cdouble": cdouble}

__all__ = sorted(TORCH_DTYPES) + [
    "sum", "mean", "prod", "any", "all", "argmax", "argmin", "cumsum", "logsumexp", "max", "min", "std", "var",
    "tril", "triu", "squeeze", "flip", "roll", "amax", "amin", "sort", "topk", "cat", "concat", "concatenate",
    "stack", "transpose", "softmax", "log_softmax", "sigmoid", "relu", "rsqrt", "permute", "flatten",
    "unsqueeze", "chunk", "narrow", "masked_fill", "masked_select", "gather", "scatter", "index_select",
    "clamp", "clone", "numel", "swapaxes", "swapdims", "unbind", "repeat_interleave", "bmm", "mm", "split",
    "zeros", "ones", "empty", "randint", "manual_seed", "no_grad", "inference_mode", "is_grad_enabled",
    "set_grad_enabled", "is_tensor", "from_numpy", "as_tensor", "device", "multinomial", "outer", "Size", "hstack",
    "vstack", "polar", "view_as_complex", "view_as_real", "cuda", "div", "addmm", "baddbmm", "addbmm", "addmv",
    "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor", "diff",
    "movedim", "moveaxis", "select", "tensor_split", "index_fill", "index_add", "index_copy", "isclose", "allclose",
    "nan_to_num", "lerp", "fmod", "xlogy", "logit", "sinc", "diag", "diagonal", "median", "kthvalue", "aminmax",
    "cummax", "cummin", "histc", "ravel", "unfold", "addcmul", "addcdiv", "erfinv", "broadcast_tensors",
    "std_mean", "var_mean", "bucketize", "unique", "cdist", "dist", "normal", "bernoulli", "clamp_min", "clamp_max",
    "cumprod", "frac", "exp2", "dot", "inner", "mv", "argwhere", "take_along_dim", "logcumsumexp", "rot90",
    "index_put", "masked_scatter", "t", "count_nonzero", "fliplr", "flipud", "eq", "ne", "lt", "le", "gt", "ge",
    "sub", "mul", "absolute", "where", "linspace", "searchsorted", "tril_indices", "triu_indices", "atleast_1d",
    "atleast_2d", "atleast_3d", "dstack", "column_stack", "kron", "block_diag", "cartesian_prod", "trapezoid",
    "trapz", "tensordot", "cross", "det", "logdet", "inverse", "norm", "scatter_reduce"]
del as_dtype, sort_result, topk_result
