"""test_torch_surface.py's functions against torch itself, eagerly with gradients and under to_static (an
optional cross-check: skipped without PyTorch, which CI does not install)."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

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


IMG = _rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
Y = np.array([1, -1, 1], np.float32)
SQ = (X[:, :3] @ X[:, :3].T + 3 * np.eye(3)).astype(np.float32)


def _f(m):
    return m.nn.functional


MORE = {   # name: (fn(m, *tensors), arrays, differentiable)
    "frac_exp2": (lambda m, x: (x.frac(), m.exp2(x)), (X,), True),
    "dot_mv_outer": (lambda m, x: (m.dot(x[0], x[1]), x[:, :3].mv(x[0, :3]), x[0].outer(x[1])), (X,), True),
    "count_nonzero": (lambda m, x: m.count_nonzero(x > 0, dim=1), (X,), False),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, m.tensor([[0], [4], [2]]), dim=1), (X,), True),
    "logcumsumexp": (lambda m, x: m.logcumsumexp(x * 50, dim=1), (X,), True),
    "rot90": (lambda m, x: (m.rot90(x), m.rot90(x, -1, [1, 0]), x.rot90(2)), (X,), True),
    "index_put_accumulate": (lambda m, x, p: x.index_put((m.tensor([0, 0, 2]),), p, accumulate=True), (X, P), True),
    "masked_scatter": (lambda m, x, p: x.masked_scatter(x > 0, p), (X, P), True),
    "searchsorted": (lambda m, x: (m.searchsorted(m.tensor([-0.5, 0.0, 0.5]), x, right=True),
                                   m.searchsorted(m.sort(x, dim=1).values, x)), (X,), False),
    "tril_triu_indices": (lambda m, x: (m.tril_indices(4, 3, 1), m.triu_indices(3, 5, -1)), (X,), False),
    "kron_block_diag": (lambda m, x: (m.kron(x[:2, :2], x[:, :3]), m.block_diag(x[:2, :2], x[2:, 1:])), (X,), True),
    "cartesian_prod": (lambda m, x: m.cartesian_prod(x[0], x[1, :2], x[2, :3]), (X,), True),
    "trapezoid": (lambda m, x: (m.trapezoid(x), m.trapezoid(x, dx=0.3, dim=0)), (X,), True),
    "tensordot": (lambda m, x: m.tensordot(x, x, dims=([0], [0])), (X,), True),
    "cross": (lambda m, x: m.cross(x[:, :3], x[:, 2:], dim=1), (X,), True),
    "det_inverse_logdet": (lambda m, s: (m.det(s), m.inverse(s), m.logdet(s)), (SQ,), True),
    "norm": (lambda m, x: (m.norm(x), m.norm(x, dim=1), m.norm(x, p=1, dim=0, keepdim=True)), (X,), True),
    "linalg_norm": (lambda m, x: (m.linalg.norm(x), m.linalg.norm(x, dim=-1), m.linalg.norm(x, ord=1),
                                  m.linalg.norm(x, ord=float("inf"), dim=(1, 0)),
                                  m.linalg.vector_norm(x, ord=3, dim=0, keepdim=True)), (X,), True),
    "linalg_multi_dot": (lambda m, x: m.linalg.multi_dot([x, x.t(), x]), (X,), True),
    "fill_diagonal_": (lambda m, x: x.clone().fill_diagonal_(2.0), (X,), False),
    "activations": (lambda m, x: (_f(m).selu(x), _f(m).celu(x, 0.7), _f(m).hardshrink(x, 0.4), _f(m).softshrink(x),
                                  _f(m).tanhshrink(x), _f(m).threshold(x, 0.2, -3.0), _f(m).rrelu(x)), (X,), True),
    "rms_norm": (lambda m, x: _f(m).rms_norm(x, (5,), m.ones(5) * 2, eps=1e-5), (X,), True),
    "unfold": (lambda m, i: _f(m).unfold(i, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), (IMG,), True),
    "fold": (lambda m, i: _f(m).fold(_f(m).unfold(i, 3, padding=1), (5, 6), 3, padding=1), (IMG,), True),
    "conv_transpose1d": (lambda m, x, p: _f(m).conv_transpose1d(x[None], p[:, :4].reshape(3, 2, 2), m.ones(2), stride=2,
                                                                padding=1, output_padding=1), (X, P), True),
    "bilinear": (lambda m, x, p: _f(m).bilinear(x, p, m.ones(2, 5, 5) * 0.1, m.ones(2)), (X, P), True),
    "local_response_norm": (lambda m, i: _f(m).local_response_norm(i, 3, alpha=0.1), (IMG,), True),
    "affine_grid": (lambda m, x: (_f(m).affine_grid(x.reshape(-1)[:12].reshape(2, 2, 3), (2, 1, 3, 4)),
                                  _f(m).affine_grid(x.reshape(-1)[:12].reshape(2, 2, 3), (2, 1, 2, 5),
                                                    align_corners=True)),
                    (X,), True),
    "kl_div": (lambda m, x, p: (_f(m).kl_div(x.log_softmax(-1), p.softmax(-1), reduction="batchmean"),
                                _f(m).kl_div(x.log_softmax(-1), p.log(), reduction="sum", log_target=True),
                                _f(m).kl_div(x, (p > 0.5).float() * 0.3, reduction="mean")), (X, P), True),
    "margin_losses": (lambda m, x, y: (_f(m).margin_ranking_loss(x[:, 0], x[:, 1], y.detach(), margin=0.2),
                                       _f(m).hinge_embedding_loss(x[:, 2], y.detach(), margin=0.5),
                                       _f(m).soft_margin_loss(x[:, 3], y.detach(), reduction="sum")), (X, Y), True),
    "multilabel_soft_margin": (lambda m, x, p: _f(m).multilabel_soft_margin_loss(x, (p > 0.5).float(),
                                                                              weight=m.ones(5) * 0.5), (X, P), True),
    "distances": (lambda m, x, p: (_f(m).pairwise_distance(x, p, keepdim=True), m.pdist(x), m.pdist(x, p=1),
                                   _f(m).pairwise_distance(x, p, p=1)), (X, P), True),
    "triplet": (lambda m, x, p: (_f(m).triplet_margin_loss(x, p, p.flip(0)),
                                 _f(m).triplet_margin_loss(x, p, p.flip(0), margin=2.0, p=1, swap=True)), (X, P), True),
    "cosine_embedding": (lambda m, x, p, y: _f(m).cosine_embedding_loss(x, p, y, margin=0.1), (X, P, Y), True),
    "poisson_nll": (lambda m, x, p: (_f(m).poisson_nll_loss(x, p * 4, full=True),
                                     _f(m).poisson_nll_loss(p, x * x, log_input=False, reduction="sum")), (X, P), True),
    "gaussian_nll": (lambda m, x, p: (_f(m).gaussian_nll_loss(x, x.flip(0), p, full=True),
                                      _f(m).gaussian_nll_loss(x, x.flip(0), p[:, 0] * 1e-8, eps=1e-3)), (X, P), True),
    "embedding_bag": (lambda m, x, p: (_f(m).embedding_bag(m.tensor([0, 2, 1, 2, 0]), x, m.tensor([0, 3]),
                                                           mode="sum", per_sample_weights=p[0]),
                                       _f(m).embedding_bag(m.tensor([[0, 2], [1, 1]]), x, mode="mean"),
                                       _f(m).embedding_bag(m.tensor([[0, 2], [1, 1]]), x, mode="max"),
                                       _f(m).embedding_bag(m.tensor([0, 2, 1]), x, m.tensor([0, 1, 3]), mode="mean",
                                                           include_last_offset=True)), (X, P), True),
}


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", list(MORE))
def test_more_against_torch(name, static):
    fn, arrays, differentiable = MORE[name]

    def ours(*args):
        return fn(rt, *args)
    check(ours, lambda *args: fn(torch, *args), *arrays, grad=differentiable, static=static, atol=2e-5)


X3 = _rng.standard_normal((2, 4, 8)).astype(np.float32)
X4 = _rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
X2 = X3[0]
LAYERS = {   # name: (constructor source with nn and m = torch or runtime, inputs)
    "KLDivLoss": ("nn.KLDivLoss(reduction='batchmean', log_target=True)", [X2, X2[::-1].copy()]),
    "MarginRankingLoss": ("nn.MarginRankingLoss(0.3)", [X2[0], X2[1], np.sign(X2[2])]),
    "CosineEmbeddingLoss": ("nn.CosineEmbeddingLoss(margin=0.2)", [X2, X2[::-1].copy(), np.float32([1, -1, 1, -1])]),
    "HingeEmbeddingLoss": ("nn.HingeEmbeddingLoss(0.5)", [X2, np.sign(X2)]),
    "SoftMarginLoss": ("nn.SoftMarginLoss()", [X2, np.sign(X2)]),
    "MultiLabelSoftMarginLoss": ("nn.MultiLabelSoftMarginLoss(weight=m.ones(8))", [X2, (X2 > 0).astype(np.float32)]),
    "TripletMarginLoss": ("nn.TripletMarginLoss(margin=0.5, swap=True)", [X2, X2[::-1].copy(), X2 * 2]),
    "PoissonNLLLoss": ("nn.PoissonNLLLoss(full=True)", [X2, np.abs(X2) * 3]),
    "GaussianNLLLoss": ("nn.GaussianNLLLoss()", [X2, X2[::-1].copy(), np.abs(X2) + 0.1]),
    "PairwiseDistance": ("nn.PairwiseDistance(p=1.5)", [X2, X2[::-1].copy()]),
    "BCEWithLogitsLoss_weights": ("nn.BCEWithLogitsLoss(weight=m.ones(8) * 0.5, pos_weight=m.ones(8) * 2)",
                                  [X2, (X2 > 0).astype(np.float32)]),
    "BCELoss_weight": ("nn.BCELoss(weight=m.ones(8) * 3)", [1 / (1 + np.exp(-X2)), (X2 > 0).astype(np.float32)]),
    "activations": ("nn.Sequential(nn.SELU(), nn.CELU(0.5), nn.Hardshrink(0.1), nn.Softshrink(0.05), "
                    "nn.Tanhshrink(), nn.Threshold(0.01, -1.0), nn.RReLU(), nn.GLU(), nn.Softmin(-1))", [X3]),
    "Softmax2d": ("nn.Softmax2d()", [X4]),
    "LocalResponseNorm": ("nn.LocalResponseNorm(3, alpha=0.01, k=2.0)", [X4]),
    "Unfold_Fold": ("nn.Sequential(nn.Unfold(3, padding=1), nn.Fold((6, 6), 3, padding=1))", [X4]),
    "ConvTranspose1d": ("nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)", [X3]),
    "Bilinear": ("nn.Bilinear(8, 8, 3)", [X2, X2[::-1].copy()]),
    "EmbeddingBag": ("nn.EmbeddingBag(5, 3, mode='max')", [np.array([[1, 2, 0], [3, 1, 2]], np.int64)]),
    "pads": ("nn.Sequential(nn.ConstantPad1d((1, 2), 0.5), nn.ReflectionPad1d(2), nn.ReplicationPad1d((0, 3)))", [X3]),
    "upsampling": ("nn.Sequential(nn.UpsamplingNearest2d(scale_factor=2), nn.UpsamplingBilinear2d(size=(7, 9)))",
                   [X4]),
    "ChannelShuffle": ("nn.ChannelShuffle(2)", [X4]),
}


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_against_torch(name, static):
    source, inputs = LAYERS[name]
    torch.manual_seed(0)
    theirs = eval(source, {"nn": torch.nn, "m": torch}).eval()
    ours = eval(source, {"nn": rt.nn, "m": rt}).eval()
    ours.load_state_dict(theirs.state_dict())
    assert set(ours.state_dict()) == set(theirs.state_dict())
    differentiable = all(a.dtype.kind == "f" for a in inputs) and name not in NO_TARGET_GRADIENT
    check(to_static(ours) if static else ours, theirs, *inputs, grad=differentiable)


NO_TARGET_GRADIENT = {"SoftMarginLoss", "MultiLabelSoftMarginLoss"}     # torch refuses a target that requires grad


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_against_torch(mode, padding_mode, align_corners, static):
    grid = _rng.uniform(-1.2, 1.2, (2, 3, 4, 2)).astype(np.float32)

    def run(m):
        return lambda x, g: _f(m).grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    check(run(rt), run(torch), IMG, grid, static=static, atol=2e-5)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_against_torch(norm_first, static):
    torch.manual_seed(0)
    theirs = torch.nn.Transformer(8, 2, 2, 2, 16, 0.0, batch_first=True, norm_first=norm_first,
                                  activation="gelu").eval()
    ours = rt.nn.Transformer(8, 2, 2, 2, 16, 0.0, batch_first=True, norm_first=norm_first, activation="gelu").eval()
    ours.load_state_dict(theirs.state_dict())
    assert set(ours.state_dict()) == set(theirs.state_dict())
    src, tgt = X3[:, :3], _rng.standard_normal((2, 5, 8)).astype(np.float32)
    pad = np.array([[False, False, True], [False, False, False]])

    def call(model, mask_of):
        def run(s, t):
            return model(s, t, tgt_mask=mask_of(5), src_key_padding_mask=pad_of(model),
                         memory_key_padding_mask=pad_of(model))
        return run

    def pad_of(model):
        return (torch.tensor(pad) if isinstance(model, torch.nn.Module) else rt.tensor(pad))
    mine = call(ours, rt.nn.Transformer.generate_square_subsequent_mask)
    check(to_static(mine) if static else mine, call(theirs, torch.nn.Transformer.generate_square_subsequent_mask),
          src, tgt, atol=3e-5)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
def test_scatter_reduce_against_torch(reduce, include_self):
    index = np.array([[2, 0, 1, 0, 0], [2, 1, 1, 0, 0], [0, 1, 2, 0, 0], [2, 2, 0, 0, 1]], np.int64)
    src = _rng.standard_normal((4, 5)).astype(np.float32)

    def run(m):
        return lambda x, s: x.scatter_reduce(0, m.tensor(index), s, reduce, include_self=include_self)
    check(run(rt), run(torch), X, src)
