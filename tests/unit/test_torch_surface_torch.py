"""test_torch_surface.py's functions against torch itself, eagerly with gradients and under to_static (an
optional cross-check: skipped without PyTorch, which CI does not install)."""
import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")
from tests.unit.test_torch_names_torch import check  # noqa: E402

_rng = np.random.default_rng(23)
X = _rng.standard_normal((3, 5)).astype(np.float32)
P = _rng.uniform(0.05, 0.95, (3, 5)).astype(np.float32)
NO_TIES = np.argsort(_rng.random((3, 6)), axis=1).astype(np.float32)   # distinct values per row
SPECIAL = np.array([np.nan, 1.0, np.inf, -np.inf, -2.0, 0.0], np.float32)
INTS = np.array([[3, 1, 3, 0], [2, 7, 1, 1]], np.int64)

FUNCTIONS = {   # name: (fn(m, *tensors) with m torch or runtime, arrays, differentiable)
    "isclose": (lambda m, x: m.isclose(x, x + 1e-6), (X,), False),
    "isclose_special": (lambda m, s: m.isclose(s, s * 1.0, equal_nan=True), (SPECIAL,), False),
    "nan_to_num": (lambda m, s: m.nan_to_num(s, posinf=5.0), (SPECIAL,), False),
    "lerp": (lambda m, x, p: m.lerp(x, p, 0.3), (X, P), True),
    "lerp_tensor_weight": (lambda m, x, p: m.lerp(x, x * 2, p), (X, P), True),
    "fmod": (lambda m, x: m.fmod(x * 4, 1.5), (X,), True),
    "fmod_ints": (lambda m, i: m.fmod(i - 3, 2), (INTS,), False),
    "diag_vector": (lambda m, x: m.diag(x[0], -2), (X,), True),
    "diag_matrix": (lambda m, x: m.diag(x, 1), (X,), True),
    "diagonal": (lambda m, x: m.diagonal(x.reshape(3, 1, 5), 0, 0, 2), (X,), True),
    "trace_method": (lambda m, x: x.trace(), (X,), True),
    "select": (lambda m, x: x.select(1, -2), (X,), True),
    "ravel": (lambda m, x: x.t().ravel(), (X,), True),
    "movedim": (lambda m, x: m.movedim(x.reshape(1, 3, 5), (0, 1), (2, 0)), (X,), True),
    "moveaxis": (lambda m, x: m.moveaxis(x.reshape(1, 3, 5), 0, -1), (X,), True),
    "broadcast_tensors": (lambda m, x: m.broadcast_tensors(x, x[:, :1]), (X,), True),
    "tensor_split": (lambda m, x: m.tensor_split(x, 3, dim=1), (X,), True),
    "tensor_split_indices": (lambda m, x: x.tensor_split([1, 9, 2], 1), (X,), True),
    "flip_dims": (lambda m, x: x.flip(dims=[0]), (X,), True),
    "diff": (lambda m, x: m.diff(x, dim=1), (X,), True),
    "diff_n_append": (lambda m, x: m.diff(x, n=2, dim=0, append=x[:1]), (X,), True),
    "nonzero_method": (lambda m, x: (x > 0.2).nonzero(), (X,), False),
    "index_fill": (lambda m, x: x.index_fill(1, m.tensor([0, 3]), -1.0), (X,), True),
    "index_add": (lambda m, x, p: x.index_add(0, m.tensor([2, 2, 0]), p, alpha=0.5), (X, P), True),
    "index_copy": (lambda m, x, p: x.index_copy(1, m.tensor([4, 0]), p[:, :2]), (X, P), True),
    "unfold": (lambda m, x: x.unfold(1, 2, 2), (X,), True),
    "unfold_dim0": (lambda m, x: x.unfold(0, 2, 1), (X,), True),
    "median_all": (lambda m, x: x.median(), (X,), True),
    "median_dim": (lambda m, x: m.median(x, dim=1, keepdim=True), (NO_TIES,), True),
    "kthvalue": (lambda m, x: x.kthvalue(3, 0), (X,), True),
    "aminmax": (lambda m, x: m.aminmax(x, dim=0), (X,), False),
    "cummax": (lambda m, x: m.cummax(x, dim=1), (X,), True),
    "cummin": (lambda m, x: x.cummin(0), (X,), True),
    "cummax_ties": (lambda m, i: i.cummax(1), (INTS,), False),
    "erfinv": (lambda m, p: m.erfinv(p * 2 - 1), (P,), True),
    "logit": (lambda m, p: m.logit(p), (P,), True),
    "logit_eps": (lambda m, x: m.logit(x, eps=0.2), (X,), False),
    "xlogy": (lambda m, x, p: m.xlogy(x * (x > 0), p), (X, P), True),
    "sinc": (lambda m, x: m.sinc(x * (x > 0)), (X,), True),
    "std_mean": (lambda m, x: m.std_mean(x, dim=1), (X,), True),
    "var_mean_all": (lambda m, x: m.var_mean(x), (X,), True),
    "var_mean_correction": (lambda m, x: m.var_mean(x, 0, correction=0, keepdim=True), (X,), True),
    "bucketize": (lambda m, x: m.bucketize(x, m.tensor([-0.5, 0.0, 0.5])), (X,), False),
    "bucketize_right": (lambda m, x: m.bucketize(x.round(), m.tensor([-1.0, 0.0, 1.0]), right=True), (X,), False),
    "histc": (lambda m, x: m.histc(x, bins=4, min=-1, max=1), (X,), False),
    "histc_own_range": (lambda m, x: m.histc(x, bins=7), (X,), False),
    "cdist": (lambda m, x, p: m.cdist(x, p[:2] * 3), (X, P), True),
    "cdist_p1": (lambda m, x, p: m.cdist(x[None], p[None], p=1), (X, P), True),
    "dist": (lambda m, x, p: m.dist(x, p), (X, P), True),
    "dist_inf": (lambda m, x, p: m.dist(x, p, float("inf")), (X, P), True),
    "addcdiv": (lambda m, x, p: m.addcdiv(x, x, p, value=0.1), (X, P), True),
}


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_function_against_torch(name, static):
    fn, arrays, differentiable = FUNCTIONS[name]

    def ours(*args):
        return fn(rt, *args)
    check(ours, lambda *args: fn(torch, *args), *arrays, grad=differentiable, static=static)


def test_unique_against_torch():
    for kwargs in ({}, {"return_inverse": True}, {"return_counts": True},
                   {"return_inverse": True, "return_counts": True}):
        got = rt.unique(rt.tensor(INTS), **kwargs)
        want = torch.unique(torch.tensor(INTS), **kwargs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_as_tensor_and_named_results_as_torchs():
    assert rt.as_tensor([1, 2, 3]).tolist() == torch.as_tensor([1, 2, 3]).tolist()
    x = rt.tensor(X)
    for ours, theirs in ((x.median(0), torch.tensor(X).median(0)), (x.kthvalue(1), torch.tensor(X).kthvalue(1)),
                         (rt.cummax(x, 0), torch.cummax(torch.tensor(X), 0)),
                         (rt.aminmax(x), torch.aminmax(torch.tensor(X)))):
        for field in ours._fields:
            np.testing.assert_allclose(getattr(ours, field).numpy(), getattr(theirs, field).numpy())
