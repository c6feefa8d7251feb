"""More of PyTorch's surface (torch.isclose, unique, median, cummax, x.unfold, index_add, ...), each eagerly
and under to_static, against NumPy (runs without torch; the torch cross-checks are in
test_torch_surface_torch.py)."""
import math

import numpy as np
import pytest

import runtime as rt
from runtime.ops.activations import _np_erfinv
from transpiler import to_static

_rng = np.random.default_rng(5)
X = _rng.standard_normal((3, 5)).astype(np.float32)
P = _rng.uniform(0.05, 0.95, (3, 5)).astype(np.float32)
TIES = np.array([[1., 3., 3., 2., 5., 5.], [0., 0., 4., 0., -1., 9.]], np.float32)
INTS = np.array([[3, 1, 3], [2, 7, 1]], np.int64)
SPECIAL = np.array([np.nan, 1.0, np.inf, -np.inf, -2.0], np.float32)


def _np_unfold(a, dim, size, step):
    count = (a.shape[dim] - size) // step + 1
    windows = [np.take(a, np.arange(k * step, k * step + size), axis=dim) for k in range(count)]
    return np.moveaxis(np.stack(windows, axis=dim), dim + 1, -1)


def _np_cumulative(a, dim, better):
    values, index = np.moveaxis(a.copy(), dim, -1), np.zeros(np.moveaxis(a, dim, -1).shape, np.int64)
    for i in range(values.shape[-1]):
        index[..., i] = i
        if i:
            keep = better(values[..., i - 1], values[..., i])
            values[..., i] = np.where(keep, values[..., i - 1], values[..., i])
            index[..., i] = np.where(keep, index[..., i - 1], i)
    return np.moveaxis(values, -1, dim), np.moveaxis(index, -1, dim)


def _np_kth(a, k, dim):
    order = np.argsort(a, axis=dim, kind="stable")
    where = np.take(order, [k], axis=dim)
    return np.take_along_axis(a, where, dim).squeeze(dim), where.squeeze(dim).astype(np.int64)


def _np_fmod(a, b):
    return np.fmod(a, np.asarray(b, a.dtype))


def _np_index_add(a, dim, index, src, alpha=1):
    out = a.copy()
    for k, i in enumerate(index):
        target = (slice(None),) * dim + (i,)
        out[target] += alpha * np.take(src, k, axis=dim)
    return out


def _np_histc(a, bins, low, high):
    counts, _ = np.histogram(a[(a >= low) & (a <= high)], bins=bins, range=(low, high))
    return counts.astype(a.dtype)


def _np_tensor_split(a, sections_or_indices, dim):
    return tuple(np.array_split(a, sections_or_indices, axis=dim))


def _np_diag(v, k):
    return np.diag(v, k)


CASES = {   # name: (our call, NumPy's result, arrays)
    "isclose": (lambda x: rt.isclose(x, x + 1e-6), lambda a: np.isclose(a, a + np.float32(1e-6), rtol=1e-5,
                                                                          atol=1e-8), X),
    "isclose_special": (lambda s: rt.isclose(s, s, equal_nan=True),
                        lambda s: np.isclose(s, s, equal_nan=True), SPECIAL),
    "isclose_method": (lambda x: x.isclose(x * 1.1, rtol=0.05), lambda a: np.isclose(a, a * np.float32(1.1),
                                                                                        rtol=0.05, atol=1e-8), X),
    "nan_to_num": (lambda s: rt.nan_to_num(s), lambda s: np.nan_to_num(s), SPECIAL),
    "nan_to_num_values": (lambda s: s.nan_to_num(nan=0.5, posinf=9.0, neginf=-9.0),
                          lambda s: np.nan_to_num(s, nan=0.5, posinf=9.0, neginf=-9.0), SPECIAL),
    "lerp": (lambda x, p: rt.lerp(x, p, 0.25), lambda a, p: a + np.float32(0.25) * (p - a), X, P),
    "lerp_tensor_weight": (lambda x, p: rt.lerp(x, x * 2, p), lambda a, p: a + p * (a * 2 - a), X, P),
    "fmod": (lambda x: rt.fmod(x * 4, 1.5), lambda a: _np_fmod(a * 4, 1.5), X),
    "fmod_ints": (lambda i: rt.fmod(i - 4, 3), lambda i: np.fmod(i - 4, 3), INTS),
    "fmod_method": (lambda x, p: (x * 4).fmod(p - 0.5), lambda a, p: np.fmod(a * 4, p - np.float32(0.5)), X, P),
    "diag_vector": (lambda x: rt.diag(x[0]), lambda a: _np_diag(a[0], 0), X),
    "diag_vector_above": (lambda x: rt.diag(x[0], 2), lambda a: _np_diag(a[0], 2), X),
    "diag_vector_below": (lambda x: x[1].diag(-1), lambda a: _np_diag(a[1], -1), X),
    "diag_matrix": (lambda x: rt.diag(x, 1), lambda a: np.diag(a, 1), X),
    "diagonal_dims": (lambda x: rt.diagonal(x.reshape(1, 3, 5), 0, 1, 2), lambda a: a.reshape(1, 3, 5).diagonal(
        0, 1, 2), X),
    "trace_method": (lambda x: x.trace(), lambda a: np.trace(a), X),
    "select": (lambda x: x.select(1, 2), lambda a: a[:, 2], X),
    "select_negative": (lambda x: x.select(-2, -1), lambda a: a[-1], X),
    "ravel": (lambda x: x.ravel(), lambda a: a.ravel(), X),
    "movedim": (lambda x: rt.movedim(x.reshape(1, 3, 5), 0, -1), lambda a: np.moveaxis(a.reshape(1, 3, 5), 0, -1),
                X),
    "moveaxis_method": (lambda x: x.reshape(1, 3, 5).moveaxis([0, 1], [2, 0]),
                        lambda a: np.moveaxis(a.reshape(1, 3, 5), [0, 1], [2, 0]), X),
    "broadcast_tensors": (lambda x: rt.broadcast_tensors(x, x[0], x[:, :1]),
                          lambda a: tuple(np.broadcast_arrays(a, a[0], a[:, :1])), X),
    "tensor_split_sections": (lambda x: rt.tensor_split(x, 3, dim=1), lambda a: _np_tensor_split(a, 3, 1), X),
    "tensor_split_indices": (lambda x: x.tensor_split([1, 4], dim=1), lambda a: _np_tensor_split(a, [1, 4], 1), X),
    "tensor_split_past_end": (lambda x: x.tensor_split([2, 9, 1], 1),
                              lambda a: (a[:, :2], a[:, 2:], a[:, 5:5], a[:, 1:]), X),
    "flip_dims_keyword": (lambda x: x.flip(dims=[0]), lambda a: a[::-1], X),
    "flip_namespace_dims": (lambda x: rt.flip(x, dims=(0, 1)), lambda a: a[::-1, ::-1], X),
    "diff_dim": (lambda x: rt.diff(x, dim=1), lambda a: np.diff(a, axis=1), X),
    "diff_positional_n": (lambda x: rt.diff(x, 2, 0), lambda a: np.diff(a, 2, axis=0), X),
    "diff_method": (lambda x: x.diff(dim=0, prepend=x[:1]), lambda a: np.diff(a, axis=0, prepend=a[:1]), X),
    "nonzero_method": (lambda x: (x > 0.3).nonzero(), lambda a: np.argwhere(a > 0.3).astype(np.int64), X),
    "index_fill": (lambda x: x.index_fill(1, rt.tensor([0, 3]), -1.0),
                   lambda a: np.where(np.isin(np.arange(5), [0, 3]), np.float32(-1), a), X),
    "index_fill_tensor_value": (lambda x: rt.index_fill(x, 0, rt.tensor([2]), x[0, 0]),
                                lambda a: np.concatenate([a[:2], np.full((1, 5), a[0, 0])]), X),
    "index_add": (lambda x: rt.zeros(4, 5).index_add(0, rt.tensor([0, 0, 3]), x),
                  lambda a: _np_index_add(np.zeros((4, 5), np.float32), 0, [0, 0, 3], a), X),
    "index_add_dim1_alpha": (lambda x: x.index_add(1, rt.tensor([4, 1]), x[:, :2], alpha=2.0),
                             lambda a: _np_index_add(a, 1, [4, 1], a[:, :2], 2.0), X),
    "index_copy": (lambda x: x.index_copy(0, rt.tensor([2, 0]), x[:2] * 10),
                   lambda a: np.stack([a[1] * 10, a[1], a[0] * 10]), X),
    "unfold": (lambda x: x.unfold(1, 2, 1), lambda a: _np_unfold(a, 1, 2, 1), X),
    "unfold_step": (lambda x: x.unfold(1, 3, 2), lambda a: _np_unfold(a, 1, 3, 2), X),
    "unfold_dim0_3d": (lambda x: x.reshape(3, 5, 1).unfold(0, 2, 1), lambda a: _np_unfold(a.reshape(3, 5, 1),
                                                                                           0, 2, 1), X),
    "median_all": (lambda x: x.median(), lambda a: np.sort(a.ravel())[(a.size - 1) // 2], X),
    "median_dim": (lambda x: rt.median(x, 1), lambda a: _np_kth(a, 2, 1), X),
    "median_even_lower": (lambda t: t.median(dim=1, keepdim=True),
                          lambda a: tuple(v[:, None] for v in _np_kth(a, 2, 1)), TIES),
    "kthvalue": (lambda x: x.kthvalue(2, dim=0), lambda a: _np_kth(a, 1, 0), X),
    "kthvalue_default_dim": (lambda x: rt.kthvalue(x, 4), lambda a: _np_kth(a, 3, 1), X),
    "aminmax": (lambda x: rt.aminmax(x), lambda a: (a.min(), a.max()), X),
    "aminmax_dim": (lambda x: x.aminmax(dim=1, keepdim=True), lambda a: (a.min(1, keepdims=True),
                                                                        a.max(1, keepdims=True)), X),
    "cummax": (lambda t: rt.cummax(t, dim=1), lambda a: _np_cumulative(a, 1, lambda e, l: e > l), TIES),
    "cummin": (lambda t: t.cummin(1), lambda a: _np_cumulative(a, 1, lambda e, l: e < l), TIES),
    "cummax_dim0": (lambda x: rt.cummax(x, 0), lambda a: _np_cumulative(a, 0, lambda e, l: e > l), X),
    "cummax_ints": (lambda i: i.cummax(1), lambda a: _np_cumulative(a, 1, lambda e, l: e > l), INTS),
    "erfinv": (lambda p: rt.erfinv(p * 2 - 1), lambda p: _np_erfinv(p * 2 - 1), P),
    "logit": (lambda p: rt.logit(p), lambda p: np.log(p / (1 - p)), P),
    "logit_eps": (lambda x: x.logit(eps=0.1), lambda a: np.log(np.clip(a, 0.1, 0.9) / (1 - np.clip(a, 0.1, 0.9))),
                  X),
    "xlogy": (lambda x, p: rt.xlogy(x * (x > 0), p), lambda a, p: np.where(a > 0, a * np.log(p), 0), X, P),
    "sinc": (lambda x: rt.sinc(x * (x > 0)), lambda a: np.sinc(a * (a > 0)), X),
    "std_mean": (lambda x: rt.std_mean(x, dim=1), lambda a: (a.std(1, ddof=1), a.mean(1)), X),
    "std_mean_all": (lambda x: rt.std_mean(x), lambda a: (a.std(ddof=1), a.mean()), X),
    "var_mean_biased": (lambda x: rt.var_mean(x, 0, unbiased=False, keepdim=True),
                        lambda a: (a.var(0, keepdims=True), a.mean(0, keepdims=True)), X),
    "bucketize": (lambda x: rt.bucketize(x, rt.tensor([-0.5, 0.0, 0.5])),
                  lambda a: np.searchsorted(np.float32([-0.5, 0, 0.5]), a, side="left").astype(np.int64), X),
    "bucketize_right_int32": (lambda t: rt.bucketize(t, rt.tensor([0.0, 3.0]), right=True, out_int32=True),
                              lambda a: np.searchsorted(np.float32([0, 3]), a, side="right").astype(np.int32),
                              TIES),
    "histc": (lambda x: rt.histc(x, bins=4, min=-1, max=1), lambda a: _np_histc(a, 4, -1, 1), X),
    "histc_own_range": (lambda t: t.histc(bins=5), lambda a: _np_histc(a, 5, a.min(), a.max()), TIES),
    "dist": (lambda x, p: rt.dist(x, p), lambda a, p: np.linalg.norm((a - p).ravel()), X, P),
    "dist_p1": (lambda x, p: rt.dist(x, p, 1), lambda a, p: np.abs(a - p).sum(), X, P),
    "cdist": (lambda x, p: rt.cdist(x, p[:2]), lambda a, p: np.linalg.norm(a[:, None] - p[None, :2], axis=-1),
              X, P),
    "cdist_batched_p1": (lambda x, p: rt.cdist(x[None], p[None], p=1.0),
                         lambda a, p: np.abs(a[:, None] - p[None]).sum(-1)[None], X, P),
    "round_method": (lambda x: (x * 4).round(), lambda a: np.round(a * 4), X),
    "round_decimals": (lambda x: x.round(decimals=1), lambda a: np.round(a, 1), X),
    "addcmul": (lambda x, p: rt.addcmul(x, p, x, value=0.5), lambda a, p: a + np.float32(0.5) * p * a, X, P),
}


def _compare(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (type(got), got)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    assert isinstance(got, rt.Tensor), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", list(CASES))
def test_pytorch_function_against_numpy(name, static):
    ours, numpy_fn, *arrays = CASES[name]

    def run(*args):
        return ours(*args)
    got = (to_static(run) if static else run)(*[rt.tensor(a) for a in arrays])
    _compare(got, numpy_fn(*arrays))


def test_as_tensor_without_a_device_keeps_the_datas():
    out = rt.as_tensor([1, 2, 3])
    assert out.dtype == np.int64 and out.tolist() == [1, 2, 3] and out.device == "cpu"
    x = rt.tensor(X)
    assert rt.as_tensor(x) is x
    assert rt.as_tensor([1.5], dtype=rt.float64, device="cpu").dtype == np.float64

    @to_static
    def made_inside(x):
        return x + rt.as_tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    _compare(made_inside(x), X + np.float32([1, 2, 3, 4, 5]))


def test_unique_sorted_with_inverse_and_counts():
    data = np.array([[3, 1, 3], [2, 7, 1]], np.int64)
    values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True)
    x = rt.tensor(data)
    _compare(rt.unique(x), values)
    _compare(x.unique(sorted=True, return_inverse=True), (values, inverse.reshape(data.shape)))
    _compare(rt.unique(x, return_counts=True), (values, counts))
    _compare(rt.unique(x, return_inverse=True, return_counts=True), (values, inverse.reshape(data.shape), counts))

    @to_static
    def static_unique(x):
        return rt.unique(x, return_inverse=True, return_counts=True)
    _compare(static_unique(x), (values, inverse.reshape(data.shape), counts))
    with pytest.raises(ValueError, match="dim"):
        rt.unique(x, dim=0)


def test_random_draws_have_the_asked_shapes_and_laws():
    rt.manual_seed(0)
    draws = rt.normal(2.0, 0.5, size=(4000,))
    assert draws.shape == (4000,) and draws.dtype == np.float32
    assert abs(float(draws.mean()) - 2.0) < 0.05 and abs(float(draws.std()) - 0.5) < 0.05
    means = rt.tensor(np.array([0.0, 100.0], np.float32))
    assert rt.normal(means, 1.0).shape == (2,) and float(rt.normal(means, 1.0)[1]) > 90
    assert rt.normal(means, rt.ones(3, 1)).shape == (3, 2)
    with pytest.raises(TypeError, match="size"):
        rt.normal(0.0, 1.0)
    p = rt.tensor(np.array([0.0, 1.0, 0.3], np.float32)).expand(5000, 3)
    flips = rt.bernoulli(p)
    assert flips.dtype == np.float32 and set(np.unique(flips.numpy())) <= {0.0, 1.0}
    assert flips[:, 0].sum().item() == 0 and flips[:, 1].sum().item() == 5000
    assert abs(flips[:, 2].mean().item() - 0.3) < 0.03
    assert abs(rt.zeros(4000).bernoulli(0.25).mean().item() - 0.25) < 0.03

    @to_static
    def noisy(x):
        return rt.bernoulli(x) + rt.normal(x, 0.0)
    out = noisy(rt.tensor(np.array([0.0, 1.0], np.float32)))
    assert out.tolist() == [0.0, 2.0]


def test_in_place_forms_write_eagerly_and_in_converted_code():
    x = rt.tensor(X)
    y = x.clone()
    y.index_fill_(1, rt.tensor([0]), 0.0)
    y.index_add_(0, rt.tensor([1]), rt.ones(1, 5))
    y.addcmul_(y, y, value=0.5)
    want = X.copy()
    want[:, 0] = 0
    want[1] += 1
    want = want + 0.5 * want * want
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    u = rt.tensor(np.array([0.25, -0.5], np.float32))
    u.erfinv_()
    np.testing.assert_allclose(u.numpy(), _np_erfinv(np.array([0.25, -0.5], np.float32)), rtol=1e-6)
    flips = rt.zeros(1000)
    flips.bernoulli_(0.5)
    assert 400 < flips.sum().item() < 600

    @to_static
    def step(x):
        y = x * 1.0
        y.index_fill_(1, rt.tensor([0]), 0.0)
        y.index_add_(0, rt.tensor([1]), rt.ones(1, 5))
        y.addcmul_(y, y, value=0.5)
        return y
    np.testing.assert_allclose(step(x).numpy(), want, rtol=1e-6)


def test_gradients_flow_through_the_compositions():
    x = rt.tensor(X, requires_grad=True)
    p = rt.tensor(P, requires_grad=True)
    total = (x.unfold(1, 2, 1).sum() + rt.cdist(x, x[:2] + 1).sum() + rt.median(x, 1).values.sum()
             + rt.cummax(x, 1).values.sum() + rt.lerp(x, p, 0.25).sum() + rt.logit(p).sum()
             + rt.erfinv(p * 0.5).sum() + x.index_add(0, rt.tensor([0]), p[:1]).sum())
    total.backward()
    unfold_g = np.array([1, 2, 2, 2, 1], np.float32)
    gap = X[:, None] - (X[None, :2] + 1)
    unit = gap / np.linalg.norm(gap, axis=-1, keepdims=True)
    cdist_g = unit.sum(1)
    cdist_g[:2] -= unit.sum(0)                  # x[:2] is cdist's second argument too
    median_g = np.zeros_like(X)
    np.put_along_axis(median_g, np.argsort(X, 1, kind="stable")[:, 2:3], 1, 1)
    running = np.maximum.accumulate(X, axis=1)
    cummax_g = np.zeros_like(X)
    for i in range(3):
        for j in range(5):
            cummax_g[i, np.flatnonzero(X[i, :j + 1] == running[i, j])[-1]] += 1
    want_x = unfold_g + cdist_g + median_g + cummax_g + 0.75 + 1
    np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-4, atol=1e-5)
    erfinv_g = 0.5 * math.sqrt(math.pi) / 2 * np.exp(_np_erfinv(P * 0.5) ** 2)
    want_p = 0.25 + 1 / (P * (1 - P)) + erfinv_g + np.concatenate([np.ones((1, 5)), np.zeros((2, 5))])
    np.testing.assert_allclose(p.grad.numpy(), want_p, rtol=1e-4, atol=1e-5)


def test_pytorch_names_the_array_api_keeps():
    """Where the array API and PyTorch give one name two meanings, the namespace keeps the array API's."""
    x = rt.tensor(X)
    assert isinstance(rt.nonzero(x > 0), tuple)
    assert rt.equal(x, x).shape == X.shape
    assert rt.allclose(x, x + 1e-9) is True and rt.allclose(x, x + 1) is False


def test_bad_arguments_say_what_was_wrong():
    x = rt.tensor(X)
    with pytest.raises(ValueError, match="unfold: a window of 9"):
        x.unfold(1, 9, 1)
    with pytest.raises(IndexError, match="kthvalue: k = 6"):
        x.kthvalue(6)
    with pytest.raises(ValueError, match="diag: expects a 1-D or 2-D"):
        rt.diag(x.reshape(1, 3, 5))
    with pytest.raises(ValueError, match="sections must be at least 1"):
        x.tensor_split(0)
    with pytest.raises(TypeError, match="dims given twice"):
        x.flip(0, dims=[1])


def test_a_same_dtype_cast_of_a_tensor_that_requires_grad_keeps_its_gradient():
    """x.astype(x.dtype) copies, and the copy is recorded: masked_fill's tensor value, index_add's source and
    PyTorch's x.to(x.dtype) / x.type(t) feed gradients back as PyTorch's do."""
    x = rt.tensor(X, requires_grad=True)
    copy = rt.astype(x, "float32")
    assert copy is not x and copy.requires_grad
    (copy * 2 + rt.zeros(3, 5).masked_fill(rt.tensor(X > 0), x.sum())).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 + (X > 0).sum(), rtol=1e-6)


def _np_logcumsumexp(a, axis):
    return np.logaddexp.accumulate(a.astype(np.float64), axis=axis).astype(a.dtype)


def _np_unfold_2d(a, k, stride=1, padding=0, dilation=1):
    a = np.pad(a, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, w = a.shape
    oh, ow = (h - dilation * (k - 1) - 1) // stride + 1, (w - dilation * (k - 1) - 1) // stride + 1
    cols = np.zeros((n, c, k, k, oh, ow), a.dtype)
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = a[:, :, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                                 j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
    return cols.reshape(n, c * k * k, oh * ow)


def _np_fold_2d(cols, size, k, stride=1):
    n, ckk, _ = cols.shape
    c = ckk // (k * k)
    oh, ow = (size[0] - k) // stride + 1, (size[1] - k) // stride + 1
    out = np.zeros((n, c) + tuple(size), cols.dtype)
    blocks = cols.reshape(n, c, k, k, oh, ow)
    for i in range(k):
        for j in range(k):
            out[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride] += blocks[:, :, i, j]
    return out


def _np_log_sigmoid(a):
    return -np.logaddexp(0, -a.astype(np.float64))


def _np_kl(log_p, q):
    return np.where(q > 0, q * (np.log(np.where(q > 0, q, 1)) - log_p), -q * log_p)


SQ = (X[:, :3] @ X[:, :3].T + 3 * np.eye(3)).astype(np.float32)
Y = np.array([1, -1, 1], np.float32)
IMG = _rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
F = rt.nn.functional

MORE = {
    "frac": (lambda x: (x * 3).frac(), lambda a: np.modf(a * 3)[0], X),
    "exp2": (lambda x: rt.exp2(x), lambda a: np.exp2(a), X),
    "dot": (lambda x: rt.dot(x[0], x[1]), lambda a: np.dot(a[0], a[1]), X),
    "mv": (lambda x: x.mv(x[0]), lambda a: a @ a[0], X[:, :3]),
    "outer_method": (lambda x: x[0].outer(x[1]), lambda a: np.outer(a[0], a[1]), X),
    "count_nonzero_dim": (lambda x: rt.count_nonzero(x > 0, dim=0), lambda a: np.count_nonzero(a > 0, axis=0), X),
    "argwhere": (lambda x: rt.argwhere(x > 0), lambda a: np.argwhere(a > 0), X),
    "where_condition_only": (lambda x: rt.where(x > 0), lambda a: np.nonzero(a > 0), X),
    "take_along_dim": (lambda x, i: rt.take_along_dim(x[:2], i[:, :1] % 5, dim=1),
                       lambda a, i: np.take_along_axis(a[:2], i[:, :1] % 5, 1), X, INTS),
    "take_along_dim_flat": (lambda x, i: rt.take_along_dim(x, i), lambda a, i: a.ravel()[i.ravel()], X, INTS),
    "logcumsumexp": (lambda x: rt.logcumsumexp(x * 300, 1), lambda a: _np_logcumsumexp(a * 300, 1), X),
    "rot90": (lambda x: rt.rot90(x), lambda a: np.rot90(a), X),
    "rot90_k3_dims": (lambda x: x.reshape(3, 5, 1).rot90(3, [0, 1]), lambda a: np.rot90(a.reshape(3, 5, 1), 3), X),
    "rot90_k2": (lambda x: rt.rot90(x, 2, (1, 0)), lambda a: np.rot90(a, 2, (1, 0)), X),
    "index_put": (lambda x: x.index_put((rt.tensor([0, 2]), rt.tensor([1, 1])), rt.tensor(9.0)),
                  lambda a: np.where(np.isin(np.arange(15).reshape(3, 5), [1, 11]), np.float32(9), a), X),
    "index_put_accumulate": (lambda x: x.index_put((rt.tensor([0, 0, 2]),), x[:3] * 0 + 1, accumulate=True),
                             lambda a: a + np.array([[2], [0], [1]], np.float32), X),
    "index_put_accumulate_full": (lambda x: x.index_put((rt.tensor([0, 0, 2]), rt.tensor([1, 1, 4])), rt.tensor(2.0),
                                                        accumulate=True),
                                  lambda a: a + np.float32([[0, 4, 0, 0, 0], [0] * 5, [0, 0, 0, 0, 2]]), X),
    "masked_scatter": (lambda x: x.masked_scatter(x > 0, rt.arange(15, dtype="float32")),
                       lambda a: _np_masked_scatter(a, a > 0, np.arange(15, dtype=np.float32)), X),
    "fliplr_flipud": (lambda x: (rt.fliplr(x), rt.flipud(x)), lambda a: (np.fliplr(a), np.flipud(a)), X),
    "eq_ne_lt": (lambda x: (rt.eq(x, 0), rt.ne(x, x), rt.gt(x, 0)), lambda a: (a == 0, a != a, a > 0), X),
    "sub_alpha": (lambda x: rt.sub(x, x * 3, alpha=0.5), lambda a: a - np.float32(0.5) * a * 3, X),
    "linspace_steps": (lambda x: rt.linspace(0, 1, steps=5), lambda a: np.linspace(0, 1, 5, dtype=np.float32), X),
    "searchsorted_right": (lambda x: rt.searchsorted(rt.tensor([-0.5, 0.0, 0.5]), x, right=True),
                           lambda a: np.searchsorted(np.float32([-0.5, 0, 0.5]), a, side="right"), X),
    "searchsorted_rows": (lambda x: rt.searchsorted(rt.sort(x, dim=1).values, x[:, :2]),
                          lambda a: np.stack([np.searchsorted(np.sort(r), r[:2]) for r in a]), X),
    "tril_indices": (lambda x: rt.tril_indices(3, 4, -1), lambda a: np.stack(np.tril_indices(3, -1, 4)), X),
    "triu_indices": (lambda x: rt.triu_indices(4, 3), lambda a: np.stack(np.triu_indices(4, 0, 3)), X),
    "atleast": (lambda x: (rt.atleast_2d(x[0]), rt.atleast_3d(x), rt.atleast_1d(x[0, 0])),
                lambda a: (np.atleast_2d(a[0]), np.atleast_3d(a), np.atleast_1d(a[0, 0])), X),
    "dstack_column_stack": (lambda x: (rt.dstack([x, x]), rt.column_stack([x[0], x[1]])),
                            lambda a: (np.dstack([a, a]), np.column_stack([a[0], a[1]])), X),
    "kron": (lambda x: rt.kron(x[:2, :3], x[1:, 3:]), lambda a: np.kron(a[:2, :3], a[1:, 3:]), X),
    "kron_vector_matrix": (lambda x: rt.kron(x[0], x[:2, :2]), lambda a: np.kron(a[0], a[:2, :2]), X),
    "block_diag": (lambda x: rt.block_diag(x[:2, :2], x[2], x[0, :1]),
                   lambda a: _np_block_diag(a[:2, :2], a[2:3], a[0:1, :1]), X),
    "cartesian_prod": (lambda i: rt.cartesian_prod(i[0], i[1, :2]),
                       lambda i: np.array([[p, q] for p in i[0] for q in i[1, :2]]), INTS),
    "trapezoid": (lambda x: (rt.trapezoid(x), rt.trapz(x, dx=0.5, dim=0), rt.trapezoid(x, x[0] * 0 + rt.arange(5))),
                  lambda a: (np.trapezoid(a), np.trapezoid(a, dx=0.5, axis=0), np.trapezoid(a, np.arange(5))), X),
    "tensordot_dims": (lambda x: rt.tensordot(x, x, dims=([1], [1])), lambda a: np.tensordot(a, a, ([1], [1])), X),
    "cross_default_dim": (lambda x: rt.cross(x[:, :3].T, x[:, 2:].T), lambda a: np.cross(a[:, :3].T, a[:, 2:].T,
                                                                                          axis=0), X),
    "det_inverse_logdet": (lambda s: (rt.det(s), rt.inverse(s), rt.logdet(s)),
                           lambda s: (np.linalg.det(s), np.linalg.inv(s), np.log(np.linalg.det(s))), SQ),
    "norm_function": (lambda x: (rt.norm(x), rt.norm(x, dim=1), rt.norm(x, p=1, dim=0, keepdim=True)),
                      lambda a: (np.linalg.norm(a), np.linalg.norm(a, axis=1),
                                 np.abs(a).sum(0, keepdims=True)), X),
    "linalg_norm": (lambda x: (rt.linalg.norm(x), rt.linalg.norm(x, dim=-1), rt.linalg.norm(x, ord=1, dim=(0, 1)),
                               rt.linalg.vector_norm(x, 3, dim=0, keepdim=True)),
                    lambda a: (np.linalg.norm(a), np.linalg.norm(a, axis=-1), np.linalg.norm(a, 1),
                               np.linalg.norm(a, 3, axis=0, keepdims=True)), X),
    "multi_dot": (lambda x: rt.linalg.multi_dot([x, x.T, x]), lambda a: a @ a.T @ a, X),
    "fill_diagonal": (lambda x: x._diagonal_filled(0.0), lambda a: np.where(np.eye(3, 5, dtype=bool), 0, a), X),
    "F_selu_celu": (lambda x: (F.selu(x), F.celu(x, 0.5)),
                    lambda a: (1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * np.expm1(a)),
                               np.where(a > 0, a, 0.5 * np.expm1(a / 0.5))), X),
    "F_shrinks": (lambda x: (F.hardshrink(x, 0.3), F.softshrink(x), F.tanhshrink(x), F.threshold(x, 0.1, 20.0)),
                  lambda a: (np.where(np.abs(a) > 0.3, a, 0), np.sign(a) * np.maximum(np.abs(a) - 0.5, 0),
                             a - np.tanh(a), np.where(a > 0.1, a, 20)), X),
    "F_rrelu_eval": (lambda x: F.rrelu(x), lambda a: np.where(a >= 0, a, a * (1 / 8 + 1 / 3) / 2), X),
    "F_rms_norm": (lambda x: F.rms_norm(x, (5,), eps=1e-6),
                   lambda a: a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6), X),
    "F_unfold": (lambda m: F.unfold(m, 3), lambda a: _np_unfold_2d(a, 3), IMG),
    "F_unfold_stride_pad_dilation": (lambda m: F.unfold(m, 2, dilation=2, padding=1, stride=2),
                                     lambda a: _np_unfold_2d(a, 2, 2, 1, 2), IMG),
    "F_fold": (lambda m: F.fold(F.unfold(m, 2, stride=2), (4, 6), 2, stride=2),
               lambda a: _np_fold_2d(_np_unfold_2d(a[:, :, :4], 2, 2), (4, 6), 2, 2), IMG),
    "F_fold_overlapping": (lambda m: F.fold(F.unfold(m, 3), (5, 6), 3),
                           lambda a: _np_fold_2d(_np_unfold_2d(a, 3), (5, 6), 3), IMG),
    "F_bilinear": (lambda x, p: F.bilinear(x, p, rt.ones(2, 5, 5), rt.ones(2)),
                   lambda a, p: np.stack([(a.sum(1) * p.sum(1))] * 2, 1) + 1, X, P),
    "F_local_response_norm": (lambda m: F.local_response_norm(m, 2),
                              lambda a: a / (1 + 1e-4 / 2 * (a * a + np.pad(a * a, ((0, 0), (1, 0), (0, 0), (0, 0)))[
                                  :, :3])) ** 0.75, IMG),
    "F_kl_div": (lambda x, p: (F.kl_div(x.log_softmax(-1), p, reduction="batchmean"),
                               F.kl_div(x, p.log(), reduction="none", log_target=True)),
                 lambda a, p: (_np_kl(a - np.log(np.exp(a).sum(-1, keepdims=True)), p).sum() / 3,
                               p * (np.log(p) - a)), X, P),
    "F_margin_ranking": (lambda x, y: F.margin_ranking_loss(x[:, 0], x[:, 1], y, margin=0.1),
                         lambda a, y: np.maximum(0, -y * (a[:, 0] - a[:, 1]) + 0.1).mean(), X, Y),
    "F_hinge_embedding": (lambda x, y: F.hinge_embedding_loss(x[:, 0], y, reduction="sum"),
                          lambda a, y: np.where(y == 1, a[:, 0], np.maximum(0, 1 - a[:, 0])).sum(), X, Y),
    "F_soft_margin": (lambda x, y: F.soft_margin_loss(x[:, 0], y), lambda a, y: np.log1p(np.exp(-y * a[:, 0])).mean(),
                      X, Y),
    "F_multilabel_soft_margin": (lambda x, p: F.multilabel_soft_margin_loss(x, (p > 0.5).float()),
                                 lambda a, p: (-((p > 0.5) * _np_log_sigmoid(a) + (p <= 0.5) * _np_log_sigmoid(-a))
                                               ).mean(-1).mean(), X, P),
    "F_pairwise_distance": (lambda x, p: F.pairwise_distance(x, p), lambda a, p: np.linalg.norm(a - p + 1e-6, axis=-1),
                            X, P),
    "pdist": (lambda x: rt.pdist(x), lambda a: np.array([np.linalg.norm(a[i] - a[j]) for i in range(3)
                                                          for j in range(i + 1, 3)]), X),
    "F_triplet": (lambda x, p: F.triplet_margin_loss(x, p, p.flip(0), swap=True),
                  lambda a, p: _np_triplet(a, p, p[::-1]), X, P),
    "F_cosine_embedding": (lambda x, p, y: F.cosine_embedding_loss(x, p, y, margin=0.2),
                           lambda a, p, y: _np_cosine_embedding(a, p, y, 0.2), X, P, Y),
    "F_poisson_nll": (lambda x, p: (F.poisson_nll_loss(x, p * 4, full=True), F.poisson_nll_loss(p, x, log_input=False)),
                      lambda a, p: (_np_poisson(a, p * 4, True), (p - a * np.log(p + 1e-8)).mean()), X, P),
    "F_gaussian_nll": (lambda x, p: F.gaussian_nll_loss(x, x.flip(0), p[:, 0], full=True),
                       lambda a, p: (0.5 * (np.log(p[:, :1]) + (a - a[::-1]) ** 2 / p[:, :1])).mean()
                       + 0.5 * np.log(2 * np.pi), X, P),
    "F_embedding_bag_offsets": (lambda x, i: (F.embedding_bag(rt.tensor([0, 2, 1, 2]), x, rt.tensor([0, 3])),
                                              F.embedding_bag(i % 3, x, mode="sum")),
                                lambda a, i: (np.stack([a[[0, 2, 1]].mean(0), a[[2]].mean(0)]), a[i % 3].sum(1)),
                                X, INTS),
    "F_affine_grid": (lambda x: F.affine_grid(rt.tensor(np.float32([[[1, 0, 0], [0, 1, 0]]])), (1, 1, 2, 3)),
                      lambda a: np.stack(np.meshgrid(np.float32([-2, 0, 2]) / 3, np.float32([-0.5, 0.5])), -1)[None],
                      X),
    "F_conv_transpose1d": (lambda x: F.conv_transpose1d(x[None], rt.ones(3, 2, 3), stride=2, padding=1),
                           lambda a: _np_conv_transpose1d(a[None], np.ones((3, 2, 3), np.float32), 2, 1), X),
}


def _np_masked_scatter(a, mask, source):
    out = a.copy()
    out[mask] = source[:mask.sum()]
    return out


def _np_block_diag(*blocks):
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)), blocks[0].dtype)
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _np_triplet(a, p, n):
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=-1)  # noqa: E731
    return np.maximum(d(a, p) - np.minimum(d(a, n), d(p, n)) + 1, 0).mean()


def _np_cosine_embedding(a, p, y, margin):
    cos = (a * p).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((p * p).sum(-1) + 1e-12))
    return np.where(y == 1, 1 - cos, np.maximum(0, cos - margin)).mean()


def _np_poisson(a, t, full):
    loss = np.exp(a) - t * a
    if full:
        safe = np.where(t > 1, t, 1)
        loss = loss + np.where(t > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0)
    return loss.mean()


def _np_conv_transpose1d(x, w, stride, padding):
    n, c, length = x.shape
    k = w.shape[2]
    full = np.zeros((n, w.shape[1], (length - 1) * stride + k), x.dtype)
    for i in range(length):
        full[:, :, i * stride:i * stride + k] += np.einsum("nc,cok->nok", x[:, :, i], w)
    return full[:, :, padding:full.shape[2] - padding]


def _compare_loose(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare_loose(g, w)
        return
    want = np.asarray(want)
    assert isinstance(got, rt.Tensor) and got.shape == want.shape, (type(got), getattr(got, "shape", None),
                                                                     want.shape)
    assert got.dtype.kind == want.dtype.kind or (got.dtype.kind in "iu" and want.dtype.kind in "iu")
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", list(MORE))
def test_more_pytorch_functions_against_numpy(name, static):
    ours, numpy_fn, *arrays = MORE[name]
    if static and name in ("argwhere", "where_condition_only"):
        pytest.skip("an output whose size depends on the values: covered eagerly")

    def run(*args):
        return ours(*args)
    _compare_loose((to_static(run) if static else run)(*[rt.tensor(a) for a in arrays]), numpy_fn(*arrays))


def test_gumbel_softmax_samples_and_the_straight_through_gradient():
    rt.manual_seed(3)
    logits = rt.tensor(np.log(np.float32([[0.7, 0.2, 0.1]] * 3000)), requires_grad=True)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert set(np.unique(hard.numpy())) == {0.0, 1.0} and (hard.numpy().sum(-1) == 1).all()
    assert abs(hard.numpy()[:, 0].mean() - 0.7) < 0.04
    (hard * rt.tensor(np.float32([1, 2, 3]))).sum().backward()
    assert np.abs(logits.grad.numpy()).sum() > 0          # the soft sample's gradient flows back
    soft = F.gumbel_softmax(logits[:2])
    np.testing.assert_allclose(soft.numpy().sum(-1), 1, rtol=1e-6)


def test_in_place_fill_diagonal_index_put_and_masked_scatter():
    x = rt.tensor(X)
    y = x.clone()
    y.fill_diagonal_(7.0)
    y.index_put_((rt.tensor([2]), rt.tensor([4])), rt.tensor(-1.0))
    want = np.where(np.eye(3, 5, dtype=bool), np.float32(7), X)
    want[2, 4] = -1
    np.testing.assert_array_equal(y.numpy(), want)

    @to_static
    def step(x):
        y = x * 1.0
        y.fill_diagonal_(7.0)
        y.index_put_((rt.tensor([2]), rt.tensor([4])), rt.tensor(-1.0))
        return y
    np.testing.assert_array_equal(step(x).numpy(), want)
    tall = rt.zeros(7, 3)
    tall.fill_diagonal_(1.0, wrap=True)
    np.testing.assert_array_equal(tall.numpy(), _np_fill_wrapped(np.zeros((7, 3), np.float32), 1.0))


def _np_fill_wrapped(a, v):
    np.fill_diagonal(a, v, wrap=True)
    return a


def test_loss_tensor_options_are_buffers_in_state_dict_as_pytorchs():
    """A model holding `nn.BCEWithLogitsLoss(pos_weight=w)` has `criterion.pos_weight` in its state_dict."""
    w = rt.tensor(np.float32([1, 2, 3]))
    assert set(rt.nn.BCEWithLogitsLoss(pos_weight=w, weight=w).state_dict()) == {"weight", "pos_weight"}
    assert set(rt.nn.BCELoss(weight=w).state_dict()) == {"weight"} and not rt.nn.BCELoss().state_dict()
    assert set(rt.nn.CrossEntropyLoss(weight=w).state_dict()) == {"weight"}
    logits, target = rt.tensor(X[:, :3]), rt.tensor((X[:, :3] > 0).astype(np.float32))
    plain = np.logaddexp(0, -X[:, :3]) * (X[:, :3] > 0) + np.logaddexp(0, X[:, :3]) * (X[:, :3] <= 0)
    want = (plain * np.float32([1, 2, 3])).mean()
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(logits, target, w).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(rt.nn.BCEWithLogitsLoss(weight=w)(logits, target).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(rt.nn.BCEWithLogitsLoss("sum")(logits, target).numpy(), plain.sum(), rtol=1e-5)


def test_more_layer_classes_against_numpy():
    nn = rt.nn
    img = rt.tensor(IMG[:, :2])
    np.testing.assert_array_equal(nn.ChannelShuffle(2)(rt.tensor(IMG[:, :2].repeat(2, 1))).numpy(),
                                  IMG[:, :2].repeat(2, 1).reshape(2, 2, 2, 5, 6).swapaxes(1, 2).reshape(2, 4, 5, 6))
    e = np.exp(IMG - IMG.max(1, keepdims=True))
    np.testing.assert_allclose(nn.Softmax2d()(rt.tensor(IMG)).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)
    x = rt.tensor(X[None])
    np.testing.assert_array_equal(nn.ConstantPad1d((1, 2), 3.5)(x).numpy(),
                                  np.pad(X[None], ((0, 0), (0, 0), (1, 2)), constant_values=3.5))
    np.testing.assert_array_equal(nn.ReflectionPad1d(2)(x).numpy(),
                                  np.pad(X[None], ((0, 0), (0, 0), (2, 2)), "reflect"))
    np.testing.assert_array_equal(nn.ReplicationPad1d(1)(x).numpy(), np.pad(X[None], ((0, 0), (0, 0), (1, 1)), "edge"))
    assert nn.UpsamplingNearest2d(scale_factor=2)(img).shape == (2, 2, 10, 12)
    np.testing.assert_allclose(nn.Unfold(2, stride=2)(img).numpy(), _np_unfold_2d(IMG[:, :2], 2, 2), rtol=1e-6)
    bag = nn.EmbeddingBag(5, 3, mode="sum")
    np.testing.assert_allclose(bag(rt.tensor(INTS % 5)).numpy(), bag.weight.numpy()[INTS % 5].sum(1), rtol=1e-6)
    bilinear = nn.Bilinear(5, 5, 2)
    assert bilinear.weight.shape == (2, 5, 5) and bilinear.bias.shape == (2,)
    np.testing.assert_allclose(bilinear(rt.tensor(X), rt.tensor(P)).numpy(),
                               np.einsum("bi,kij,bj->bk", X, bilinear.weight.numpy(), P) + bilinear.bias.numpy(),
                               rtol=1e-5, atol=1e-6)
    up = nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, bias=False)
    assert up.weight.shape == (3, 2, 3)
    np.testing.assert_allclose(up(x).numpy(), _np_conv_transpose1d(X[None], up.weight.numpy(), 2, 1), rtol=1e-5,
                               atol=1e-6)
    loss = nn.KLDivLoss(reduction="batchmean")(rt.tensor(X).log_softmax(-1), rt.tensor(P))
    np.testing.assert_allclose(loss.numpy(), _np_kl(X - np.log(np.exp(X).sum(-1, keepdims=True)), P).sum() / 3,
                               rtol=1e-5)


def _np_grid_sample(a, grid, align_corners, border):
    n, c, h, w = a.shape
    out = np.zeros((n, c) + grid.shape[1:3], np.float64)
    for b in range(n):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                x, y = grid[b, i, j]
                px = (x + 1) / 2 * (w - 1) if align_corners else ((x + 1) * w - 1) / 2
                py = (y + 1) / 2 * (h - 1) if align_corners else ((y + 1) * h - 1) / 2
                if border:
                    px, py = min(max(px, 0), w - 1), min(max(py, 0), h - 1)
                x0, y0 = math.floor(px), math.floor(py)
                for xx, yy, wt in ((x0, y0, (x0 + 1 - px) * (y0 + 1 - py)), (x0 + 1, y0, (px - x0) * (y0 + 1 - py)),
                                   (x0, y0 + 1, (x0 + 1 - px) * (py - y0)), (x0 + 1, y0 + 1, (px - x0) * (py - y0))):
                    if 0 <= xx < w and 0 <= yy < h:
                        out[b, :, i, j] += wt * a[b, :, yy, xx]
    return out


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("align_corners, padding_mode", [(False, "zeros"), (True, "zeros"), (False, "border")])
def test_grid_sample_against_numpy(align_corners, padding_mode, static):
    grid = _rng.uniform(-1.3, 1.3, (2, 3, 4, 2)).astype(np.float32)

    def sample(x, g):
        return F.grid_sample(x, g, padding_mode=padding_mode, align_corners=align_corners)
    got = (to_static(sample) if static else sample)(rt.tensor(IMG), rt.tensor(grid))
    np.testing.assert_allclose(got.numpy(), _np_grid_sample(IMG, grid, align_corners, padding_mode == "border"),
                               rtol=1e-5, atol=1e-5)
    identity = F.affine_grid(rt.tensor(np.float32([[[1, 0, 0], [0, 1, 0]]] * 2)), (2, 3, 5, 6))
    np.testing.assert_allclose(F.grid_sample(rt.tensor(IMG), identity).numpy(), IMG, rtol=1e-5, atol=1e-6)


def _np_layer_norm(a, w, b, eps=1e-5):
    mu, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    return (a - mu) / np.sqrt(var + eps) * w + b


def _np_mha(attn, q, k, v, mask=None):
    """batch_first multi-head attention with the module's weights, in NumPy."""
    weights = {name: p.numpy() for name, p in attn.named_parameters()}
    wq, wk, wv = np.split(weights["in_proj_weight"], 3)
    bq, bk, bv = np.split(weights["in_proj_bias"], 3)
    heads, d = attn.num_heads, attn.head_dim

    def split(t, w, b):
        return (t @ w.T + b).reshape(t.shape[0], t.shape[1], heads, d).transpose(0, 2, 1, 3)
    qh, kh, vh = split(q, wq, bq), split(k, wk, bk), split(v, wv, bv)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(d) + (0 if mask is None else mask)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    out = (e / e.sum(-1, keepdims=True)) @ vh
    out = out.transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], heads * d)
    return out @ weights["out_proj.weight"].T + weights["out_proj.bias"]


def test_transformer_decoder_layer_against_numpy():
    rt.manual_seed(0)
    layer = rt.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True).eval()
    tgt, memory = _rng.standard_normal((2, 3, 8)).astype(np.float32), _rng.standard_normal((2, 4, 8)).astype(
        np.float32)
    mask = rt.nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.full((3, 3), -np.inf, np.float32), 1))
    p = {name: v.numpy() for name, v in layer.named_parameters()}
    x = _np_layer_norm(tgt + _np_mha(layer.self_attn, tgt, tgt, tgt, mask.numpy()), p["norm1.weight"], p["norm1.bias"])
    x = _np_layer_norm(x + _np_mha(layer.multihead_attn, x, memory, memory), p["norm2.weight"], p["norm2.bias"])
    ff = np.maximum(x @ p["linear1.weight"].T + p["linear1.bias"], 0) @ p["linear2.weight"].T + p["linear2.bias"]
    want = _np_layer_norm(x + ff, p["norm3.weight"], p["norm3.bias"])
    for run in (layer, to_static(layer)):
        got = run(rt.tensor(tgt), rt.tensor(memory), tgt_mask=mask)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    model = rt.nn.Transformer(8, 2, 1, 2, 16, 0.0)
    keys = set(model.state_dict())
    assert {"encoder.layers.0.self_attn.in_proj_weight", "encoder.norm.weight", "decoder.layers.1.multihead_attn"
            ".out_proj.bias", "decoder.layers.1.norm3.weight", "decoder.norm.bias"} <= keys
    assert model(rt.tensor(memory.transpose(1, 0, 2)), rt.tensor(tgt.transpose(1, 0, 2))).shape == (3, 2, 8)


def test_extended_namespace_functions_keep_the_array_apis_spelling():
    x = rt.tensor(X)
    _compare(rt.where(x > 0, x, rt.zeros_like(x)), np.where(X > 0, X, 0).astype(np.float32))
    _compare(rt.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=np.float32))
    _compare(rt.searchsorted(rt.tensor(np.float32([0, 1, 2])), rt.tensor(np.float32([1.0])), side="right"),
             np.searchsorted(np.float32([0, 1, 2]), np.float32([1.0]), side="right").astype(np.int64))
    _compare(rt.tensordot(x, x, axes=([1], [1])), np.tensordot(X, X, ([1], [1])))
    _compare(rt.count_nonzero(x > 0, axis=0), np.count_nonzero(X > 0, axis=0).astype(np.int64))
    _compare(rt.diff(x, axis=0, n=1), np.diff(X, axis=0))
    _compare(rt.linalg.vector_norm(x, axis=1, keepdims=True), np.linalg.norm(X, axis=1, keepdims=True))


def test_gradient_of_a_float_divided_by_an_integer_tensor():
    """d(x / n)/dx is 1 / n: the rule used reciprocal(n), which is integer (0) for an integer n."""
    x = rt.tensor(np.ones(3, np.float32), requires_grad=True)
    (x / rt.tensor(np.array([1, 2, 4]))).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1, 0.5, 0.25])


def _np_scatter_reduce(a, index, src, reduce, include_self):
    out = a.astype(np.float64).copy()
    groups = {}
    for i in range(index.shape[0]):
        for j in range(index.shape[1]):
            groups.setdefault((index[i, j], j), []).append(src[i, j])
    combine = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min, "prod": np.prod}[reduce]
    for (r, c), values in groups.items():
        out[r, c] = combine(([a[r, c]] if include_self else []) + values)
    return out.astype(a.dtype)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
def test_scatter_reduce_against_numpy(reduce, include_self, static):
    index = np.array([[2, 0, 1, 0, 0], [2, 1, 1, 0, 0], [0, 1, 2, 0, 0], [2, 2, 0, 0, 1]], np.int64)
    src = _rng.standard_normal((4, 5)).astype(np.float32)

    def run(x, i, s):
        return rt.scatter_reduce(x, 0, i, s, reduce, include_self=include_self)
    got = (to_static(run) if static else run)(rt.tensor(X), rt.tensor(index), rt.tensor(src))
    np.testing.assert_allclose(got.numpy(), _np_scatter_reduce(X, index, src, reduce, include_self), rtol=1e-5,
                               atol=1e-6)
