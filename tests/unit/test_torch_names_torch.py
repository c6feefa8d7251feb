"""PyTorch's spellings against torch itself, on the same inputs, gradients too where the op is
differentiable (an optional cross-check: skipped without PyTorch, which CI does not install)."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

torch = pytest.importorskip("torch")
F = rt.nn.functional
TF = torch.nn.functional
_rng = np.random.default_rng(11)


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _leaves(arrays, grad):
    ours = [rt.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    return ours, theirs


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(ours_fn, torch_fn, *arrays, grad=True, static=False, atol=1e-5):
    """Same values (and, for float leaves, same gradients of a random cotangent) from both."""
    ours, theirs = _leaves(arrays, grad)
    fn = to_static(ours_fn) if static else ours_fn
    got, want = _flat(fn(*ours)), _flat(torch_fn(*theirs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w_np = w.detach().numpy() if isinstance(w, torch.Tensor) else np.asarray(w)
        g_np = g.numpy() if isinstance(g, rt.Tensor) else np.asarray(g)
        assert g_np.shape == w_np.shape, (g_np.shape, w_np.shape)
        np.testing.assert_allclose(g_np, w_np, rtol=1e-5, atol=atol)
    if not grad or static:
        return
    pairs = [(g, w) for g, w in zip(got, want) if isinstance(w, torch.Tensor) and w.requires_grad]
    if not pairs:
        return
    total_ours, total_theirs = 0, 0
    for g, w in pairs:
        c = _rng.standard_normal(tuple(w.shape)).astype(np.float32)
        total_ours = total_ours + (g * rt.tensor(c)).sum()
        total_theirs = total_theirs + (w * torch.tensor(c)).sum()
    total_ours.backward()
    total_theirs.backward()
    for o, t in zip(ours, theirs):
        if t.requires_grad:
            expect = np.zeros(t.shape, np.float32) if t.grad is None else t.grad.numpy()
            got_grad = np.zeros(o.shape, np.float32) if o.grad is None else o.grad.numpy()
            np.testing.assert_allclose(got_grad, expect, rtol=1e-4, atol=1e-5)


# --- nn.functional.scaled_dot_product_attention ---------------------------------------------------

Q, K, V = _r(2, 3, 4, 8), _r(2, 3, 5, 8), _r(2, 3, 5, 8)
MASK = _rng.random((4, 5)) > 0.4
MASK[1] = False


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": MASK}, {"scale": 0.3},
                                    {"attn_mask": _r(4, 5)}], ids=["plain", "causal", "bool", "scale", "float"])
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_scaled_dot_product_attention(kwargs, static):
    def ours(q, k, v):
        kw = {n: rt.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
        return F.scaled_dot_product_attention(q, k, v, **kw)

    def theirs(q, k, v):
        kw = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
        return TF.scaled_dot_product_attention(q, k, v, **kw)
    check(ours, theirs, Q, K, V, static=static)


def test_scaled_dot_product_attention_grouped_query():
    q, k, v = _r(2, 4, 3, 8), _r(2, 2, 5, 8), _r(2, 2, 5, 8)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
          lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v)


# --- tensor methods and functions: the same code on torch tensors and ours -----------------------------

X = _r(2, 3, 4)
IDX = _rng.integers(0, 3, (2, 2, 4)).astype(np.int64)
MASK3 = _rng.random((2, 3, 4)) > 0.5

METHODS = {
    "sum_dim": (lambda x: x.sum(dim=1, keepdim=True), X),
    "sum_dims": (lambda x: x.sum(dim=(0, 2)), X),
    "mean_dim": (lambda x: x.mean(-1, keepdim=True), X),
    "max_dim": (lambda x: x.max(1), X),
    "max_dim_kw": (lambda x: x.max(dim=-1, keepdim=True), X),
    "min_dim": (lambda x: x.min(dim=0), X),
    "max_all": (lambda x: x.max(), X),
    "max_other": (lambda x: x.max(x * 0.5), X),
    "amax": (lambda x: x.amax(dim=(0, 1)), X),
    "argmax": (lambda x: x.argmax(dim=1, keepdim=True), X),
    "std_dim": (lambda x: x.std(dim=1), X),
    "var_biased": (lambda x: x.var(-1, unbiased=False, keepdim=True), X),
    "var_correction": (lambda x: x.var(dim=0, correction=0), X),
    "prod": (lambda x: x.prod(dim=2), X),
    "logsumexp": (lambda x: x.logsumexp(dim=1), X),
    "cumsum": (lambda x: x.cumsum(dim=1), X),
    "cumprod": (lambda x: x.cumprod(dim=2), X),
    "norm": (lambda x: x.norm(), X),
    "norm_dim": (lambda x: x.norm(dim=-1, keepdim=True), X),
    "softmax": (lambda x: x.softmax(dim=1), X),
    "log_softmax": (lambda x: x.log_softmax(-1), X),
    "sort": (lambda x: x.sort(dim=1, descending=True), X),
    "argsort": (lambda x: x.argsort(dim=-1), X),
    "topk": (lambda x: x.topk(2, dim=1), X),
    "topk_smallest": (lambda x: x.topk(3, largest=False), X),
    "view": (lambda x: x.view(6, 4), X),
    "view_infer": (lambda x: x.view(-1, 2, 2), X),
    "reshape_star": (lambda x: x.reshape(4, 6), X),
    "view_as": (lambda x: x.view_as(x.reshape(4, 6)), X),
    "permute": (lambda x: x.permute(2, 0, 1), X),
    "transpose": (lambda x: x.transpose(1, 2), X),
    "transpose_neg": (lambda x: x.transpose(-2, -1), X),
    "transpose_2d": (lambda x: x[0].transpose(0, 1), X),
    "t": (lambda x: x[0].t(), X),
    "mT": (lambda x: x.mT, X),
    "flatten": (lambda x: x.flatten(), X),
    "flatten_from": (lambda x: x.flatten(1), X),
    "flatten_range": (lambda x: x.flatten(0, 1), X),
    "unflatten": (lambda x: x.unflatten(2, (2, 2)), X),
    "unsqueeze": (lambda x: x.unsqueeze(1), X),
    "squeeze_dim": (lambda x: x[:, :1].squeeze(1), X),
    "squeeze_not_one": (lambda x: x.squeeze(1), X),
    "squeeze_all": (lambda x: x[:1, :, :1].squeeze(), X),
    "expand": (lambda x: x[:, :1].expand(2, 5, 4), X),
    "expand_keep": (lambda x: x[:, :1].expand(3, -1, -1, -1), X),
    "expand_as": (lambda x: x[:, :1].expand_as(x), X),
    "repeat": (lambda x: x.repeat(2, 1, 3), X),
    "repeat_more_dims": (lambda x: x.repeat(2, 1, 1, 1), X),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=1), X),
    "chunk": (lambda x: x.chunk(2, dim=-1), X),
    "chunk_uneven": (lambda x: x.chunk(2, dim=1), X),
    "split_size": (lambda x: x.split(2, dim=1), X),
    "split_sizes": (lambda x: x.split([1, 3], dim=2), X),
    "unbind": (lambda x: x.unbind(1), X),
    "narrow": (lambda x: x.narrow(2, 1, 2), X),
    "masked_fill": (lambda x, m: x.masked_fill(m, -1.5), X, MASK3),
    "masked_fill_inf": (lambda x, m: x.masked_fill(m[0], float("-inf")).softmax(-1), X, MASK3),
    "masked_select": (lambda x, m: x.masked_select(m), X, MASK3),
    "gather": (lambda x, i: x.gather(1, i), X, IDX),
    "gather_smaller": (lambda x, i: x.gather(2, i[:, :, :2]), X, IDX),
    "scatter": (lambda x, i: x.scatter(1, i[:, :1], x[:, :1] * 2), X, IDX),
    "scatter_value": (lambda x, i: x.scatter(2, i[:, :, :1], 7.0), X, IDX),
    "scatter_add": (lambda x, i: x.scatter_add(1, i, x[:, :2] * 3), X, IDX),
    "index_select": (lambda x, i: x.index_select(2, i[0, 0]), X, IDX),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), X),
    "clamp_min": (lambda x: x.clamp(min=0.1), X),
    "clip": (lambda x: x.clip(max=0.2), X),
    "where": (lambda x, m: x.where(m, x * 3), X, MASK3),
    "flip": (lambda x: x.flip(0, 2), X),
    "flip_list": (lambda x: x.flip([1]), X),
    "roll": (lambda x: x.roll(1, 2), X),
    "roll_dims": (lambda x: x.roll((1, -1), (0, 2)), X),
    "tril": (lambda x: x.tril(diagonal=-1), X),
    "triu": (lambda x: x.triu(1), X),
    "clone": (lambda x: x.clone() * 2, X),
    "contiguous": (lambda x: x.transpose(0, 1).contiguous().view(3, 8), X),
    "detach": (lambda x: x.detach() * x, X),
    "dtype_methods": (lambda x: (x.double(), x.long(), x.int(), x.bool(), x.float(), x.half().float()), X),
    "type_as": (lambda x, i: x.type_as(i), X, IDX),
    "new_zeros": (lambda x: x.new_zeros(2, 3) + x.new_ones((2, 3)) + x.new_full((2, 3), 4.0), X),
    "new_tensor": (lambda x: x.new_tensor([1, 2, 3]), X),
    "add_alpha": (lambda x: x.add(x, alpha=2), X),
    "elementwise": (lambda x: (x.neg(), x.sigmoid(), x.relu(), x.abs().sqrt(), x.abs().rsqrt(), x.exp(),
                               x.abs().log(), x.tanh(), x.sin(), x.cos(), x.floor(), x.ceil(), x.sign(),
                               x.pow(2), x.square(), x.reciprocal()), X),
    "compare": (lambda x: (x.eq(x), x.ne(x * 2), x.lt(0), x.le(0), x.gt(0.1), x.ge(0.1)), X),
    "matmul": (lambda x: x.matmul(x.transpose(1, 2)) + x.bmm(x.transpose(-2, -1)), X),
    "mm": (lambda x: x[0].mm(x[1].t()), X),
    "facts": (lambda x: (x.numel(), x.dim(), x.size(), x.size(-1), x.shape[0]), X),
    "item": (lambda x: x.sum().item(), X),
    "tolist": (lambda x: x[0].tolist(), X),
}


def _to_py(value):
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(value)
    return value


def _run_both(fn, arrays, grad):
    ours, theirs = _leaves(arrays, grad)
    return fn, ours, theirs


@pytest.mark.parametrize("name", list(METHODS))
def test_method_against_torch(name):
    fn, *arrays = METHODS[name]
    probe = fn(*[torch.tensor(a) for a in arrays])
    if isinstance(probe, (int, float, list, tuple)) and not isinstance(probe, torch.Tensor) and \
            not (isinstance(probe, tuple) and all(isinstance(p, torch.Tensor) for p in probe)):
        got = fn(*[rt.tensor(a) for a in arrays])
        assert got == probe or list(got) == list(probe), (got, probe)
        return
    if isinstance(probe, tuple) and hasattr(probe, "_fields"):      # torch.return_types: named fields too
        got = fn(*[rt.tensor(a) for a in arrays])
        assert got._fields == probe._fields == ("values", "indices")
    check(fn, fn, *arrays)


@pytest.mark.parametrize("name", [n for n in METHODS if n not in ("item", "tolist", "facts", "masked_select")])
def test_method_in_static_code_against_torch(name):
    fn, *arrays = METHODS[name]

    def run(*args):
        return fn(*args)
    check(run, fn, *arrays, static=True)


FUNCTIONS = {
    "cat": (lambda m, x: m.cat([x, x * 2], dim=1), X),
    "cat_tuple": (lambda m, x: m.cat((x, x), 0), X),
    "stack": (lambda m, x: m.stack([x, x], dim=-1), X),
    "sum": (lambda m, x: m.sum(x, dim=1, keepdim=True), X),
    "mean": (lambda m, x: m.mean(x, dim=(0, 2)), X),
    "max": (lambda m, x: m.max(x, 1), X),
    "max_kw": (lambda m, x: m.max(x, dim=2, keepdim=True), X),
    "max_elementwise": (lambda m, x: m.max(x, x * 0.3), X),
    "min": (lambda m, x: m.min(x, dim=0), X),
    "argmax": (lambda m, x: m.argmax(x, dim=-1), X),
    "std": (lambda m, x: m.std(x, dim=1), X),
    "var": (lambda m, x: m.var(x, 2, keepdim=True), X),
    "cumsum": (lambda m, x: m.cumsum(x, dim=0), X),
    "logsumexp": (lambda m, x: m.logsumexp(x, dim=-1), X),
    "softmax": (lambda m, x: m.softmax(x, dim=1), X),
    "log_softmax": (lambda m, x: m.log_softmax(x, -1), X),
    "sigmoid_relu": (lambda m, x: m.sigmoid(x) + m.relu(x) + m.rsqrt(m.abs(x)), X),
    "transpose": (lambda m, x: m.transpose(x, 0, 2), X),
    "permute": (lambda m, x: m.permute(x, (1, 2, 0)), X),
    "flatten": (lambda m, x: m.flatten(x, 1), X),
    "unsqueeze_squeeze": (lambda m, x: m.squeeze(m.unsqueeze(x, 0), 0), X),
    "chunk": (lambda m, x: m.chunk(x, 3, 1), X),
    "split": (lambda m, x: m.split(x, 3, dim=2), X),
    "narrow": (lambda m, x: m.narrow(x, 1, 0, 2), X),
    "masked_fill": (lambda m, x: m.masked_fill(x, x > 0, 0.0), X),
    "gather": (lambda m, x, i: m.gather(x, 1, i), X, IDX),
    "index_select": (lambda m, x, i: m.index_select(x, 0, i[0, 0, :2]), X, IDX),
    "clamp": (lambda m, x: m.clamp(x, min=-0.2, max=0.4), X),
    "where": (lambda m, x: m.where(x > 0, x, x * 0.1), X),
    "tril": (lambda m, x: m.tril(x, diagonal=1) + m.triu(x, 1), X),
    "flip_roll": (lambda m, x: m.roll(m.flip(x, [0, 1]), 1, 2), X),
    "topk": (lambda m, x: m.topk(x, 2, dim=1), X),
    "sort": (lambda m, x: m.sort(x, dim=2), X),
    "clone": (lambda m, x: m.clone(x), X),
    "bmm": (lambda m, x: m.bmm(x, m.transpose(x, 1, 2)), X),
    "zeros": (lambda m, x: (m.zeros(2, 3), m.ones((2, 3)), m.zeros(2, dtype=m.long), m.full((2,), 3.0)), X),
    "zeros_like": (lambda m, x: m.zeros_like(x, dtype=m.int64) + m.ones_like(x, dtype=m.long), X),
    "arange": (lambda m, x: (m.arange(5), m.arange(1, 7, 2), m.arange(0, 4, dtype=m.float)), X),
    "numel": (lambda m, x: m.numel(x), X),
    "exp_log": (lambda m, x: m.exp(x) + m.log(m.abs(x)) + m.tanh(x), X),
    "einsum": (lambda m, x: m.einsum("bij,bkj->bik", x, x), X),
    "where_ints": (lambda m, x: m.where(x > 0, 1.0, 0.0), X),
    "div_rounding": (lambda m, x: (m.div(x, 0.3, rounding_mode="trunc"), m.div(x, -0.3, rounding_mode="floor"),
                                   m.div(m.arange(-5, 6), 3, rounding_mode="trunc"), x.div(0.7)), X),
    "addmm_family": (lambda m, x: (m.addmm(x[0, :, :3], x[1], x[0].t(), beta=0.5, alpha=2),
                                   m.baddbmm(x[:, :, :3], x, x.transpose(1, 2)),
                                   m.addbmm(x[0, :, :3], x, x.transpose(1, 2), alpha=-1),
                                   m.addmv(x[0, :, 0], x[1], x[0, 0]), x[0].addr(x[1, :, 0], x[0, 0], beta=2)), X),
    "legacy_constructors": (lambda m, x: (m.LongTensor([1, 2]) * 2, m.FloatTensor([0.5]) + 1), X),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_function_against_torch(name):
    fn, *arrays = FUNCTIONS[name]
    probe = fn(torch, *[torch.tensor(a) for a in arrays])
    if isinstance(probe, int):
        assert fn(rt, *[rt.tensor(a) for a in arrays]) == probe
        return
    check(lambda *a: fn(rt, *a), lambda *a: fn(torch, *a), *arrays)


def test_dtype_aliases_are_torchs():
    for name in ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "float",
                 "double", "half", "long", "int", "short", "complex64"):
        ours, theirs = getattr(rt, name), getattr(torch, name)
        assert np.dtype(ours) == np.dtype(str(theirs).removeprefix("torch.").replace("bool", "bool_")
                                         .replace("float", "float32").replace("float3232", "float32")
                                         .replace("float3264", "float64").replace("float3216", "float16")
                                         if name in ("float", "double", "half") else
                                         torch.empty(0, dtype=theirs).numpy().dtype), name


def test_in_place_methods_against_torch():
    def steps(m, x):
        y = x.clone()
        y.add_(1.5)
        y.mul_(2)
        y.sub_(x, alpha=0.5)
        y.div_(3)
        y.clamp_(-1, 2)
        y.masked_fill_(y > 1.9, 0.0)
        z = m.zeros(3)
        z.fill_(2.0)
        z.zero_()
        w = m.ones(2, 3)
        w.copy_(x[0, :2, :3])
        return y, z, w
    check(lambda x: steps(rt, x), lambda x: steps(torch, x), X)


def test_multinomial_frequencies_match_the_probabilities():
    rt.manual_seed(0)
    p = np.array([0.1, 0.2, 0.0, 0.7], np.float32)
    draws = rt.multinomial(rt.tensor(p), 20000, replacement=True).numpy()
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / 20000, p, atol=0.015)
    rows = rt.multinomial(rt.tensor(np.tile(p, (500, 1))), 3).numpy()
    assert rows.shape == (500, 3) and all(len(set(r)) == 3 for r in rows) and not (rows == 2).any()
    first = np.bincount(rows[:, 0], minlength=4) / 500
    np.testing.assert_allclose(first, p, atol=0.06)      # torch's first draw has the same law
    assert tuple(torch.multinomial(torch.tensor(np.tile(p, (5, 1))), 3).shape) == rows.shape[:0] + (5, 3)


# --- nn.functional with PyTorch's signatures ----------------------------------------------------------

LOGITS = _r(5, 4)
TARGET = np.array([0, 3, -1, 2, 1], np.int64)
IMG = _r(2, 3, 5, 6)
W_CONV = _r(4, 3, 3, 3) * 0.3
CLASS_W = np.abs(_r(4)) + 0.5

FUNCTIONAL = {
    "softmax": (lambda F, x: F.softmax(x, dim=0), LOGITS),
    "softmax_dtype": (lambda F, x: F.softmax(x, -1, dtype=torch.float64 if F is TF else rt.float64), LOGITS),
    "log_softmax": (lambda F, x: F.log_softmax(x, dim=1), LOGITS),
    "softmin": (lambda F, x: F.softmin(x, dim=1), LOGITS),
    "glu": (lambda F, x: F.glu(x, dim=-1), LOGITS),
    "cross_entropy_ignore": (lambda F, x: F.cross_entropy(x, _t(F, TARGET), ignore_index=-1), LOGITS),
    "cross_entropy_smooth": (lambda F, x: F.cross_entropy(x, _t(F, np.abs(TARGET)), label_smoothing=0.2,
                                                          reduction="sum"), LOGITS),
    "cross_entropy_weight": (lambda F, x: F.cross_entropy(x, _t(F, TARGET), weight=_t(F, CLASS_W),
                                                          ignore_index=-1), LOGITS),
    "cross_entropy_spatial": (lambda F, x: F.cross_entropy(x, _t(F, np.array([[0, 2, 1, 0, 2, 1]] * 5))),
                              _r(5, 3, 6)),
    "nll_loss_weight": (lambda F, x: F.nll_loss(F.log_softmax(x, 1), _t(F, np.abs(TARGET)), weight=_t(F, CLASS_W)),
                        LOGITS),
    "pad": (lambda F, x: F.pad(x, (1, 2, 0, 1)), IMG),
    "pad_reflect": (lambda F, x: F.pad(x, (2, 1, 1, 0), mode="reflect"), IMG),
    "pad_value": (lambda F, x: F.pad(x, (1, 1, 1, 1), value=0.5), IMG),
    "interpolate": (lambda F, x: F.interpolate(x, scale_factor=2, mode="nearest"), IMG),
    "interpolate_bilinear": (lambda F, x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False), IMG),
    "normalize": (lambda F, x: F.normalize(x, dim=-1), LOGITS),
    "normalize_p1": (lambda F, x: F.normalize(x, p=1.0, dim=0), LOGITS),
    "cosine_similarity": (lambda F, x: F.cosine_similarity(x, x.flip(0), dim=1), LOGITS),
    "embedding": (lambda F, w: F.embedding(_t(F, np.array([[0, 2], [4, 1]])), w), LOGITS),
    "embedding_padding": (lambda F, w: F.embedding(_t(F, np.array([0, 2, 1])), w, padding_idx=2), LOGITS),
    "dropout_eval": (lambda F, x: F.dropout(x, 0.3, training=False), LOGITS),
    "gelu_tanh": (lambda F, x: F.gelu(x, approximate="tanh"), LOGITS),
    "activations": (lambda F, x: (F.relu(x, inplace=False), F.leaky_relu(x, 0.2), F.elu(x, alpha=0.5),
                                  F.silu(x), F.hardtanh(x, -0.5, 0.5), F.relu6(x * 5), F.mish(x),
                                  F.hardswish(x), F.hardsigmoid(x), F.logsigmoid(x), F.softplus(x, beta=2.0),
                                  F.sigmoid(x), F.tanh(x)), LOGITS),
    "layer_norm": (lambda F, x: F.layer_norm(x, (4,), eps=1e-6), LOGITS),
    "linear": (lambda F, x: F.linear(x, x[:3]), LOGITS),
    "conv2d": (lambda F, x, w: F.conv2d(x, w, stride=2, padding=1), IMG, W_CONV),
    "conv2d_same": (lambda F, x, w: F.conv2d(x, w, padding="same", dilation=1), IMG, W_CONV),
    "conv1d": (lambda F, x, w: F.conv1d(x, w, stride=1, padding=2, dilation=2), IMG[:, :, 0], W_CONV[:, :, 0]),
    "max_pool2d": (lambda F, x: F.max_pool2d(x, kernel_size=2, stride=2), IMG),
    "avg_pool2d": (lambda F, x: F.avg_pool2d(x, 3, stride=1, padding=1), IMG),
    "avg_pool2d_ceil": (lambda F, x: (F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
                                      F.avg_pool2d(x, 2, ceil_mode=True, count_include_pad=False),
                                      F.avg_pool2d(x, 3, 2, ceil_mode=True)), IMG),
    "adaptive_avg_pool2d": (lambda F, x: F.adaptive_avg_pool2d(x, (1, 1)), IMG),
    "mse_l1": (lambda F, x: (F.mse_loss(x, x * 0.5), F.l1_loss(x, x * 0.5, reduction="sum")), LOGITS),
    "pixel_shuffle": (lambda F, x: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2)),
                      _r(2, 8, 3, 4)),
}


def test_padding_and_pixel_shuffle_layers_against_torch():
    x = _r(2, 8, 3, 4)
    for make in (lambda nn: nn.ReflectionPad2d((1, 2, 2, 1)), lambda nn: nn.ReplicationPad2d(2),
                 lambda nn: nn.ConstantPad2d((1, 0, 0, 3), -1.5), lambda nn: nn.PixelShuffle(2),
                 lambda nn: nn.Sequential(nn.PixelShuffle(2), nn.PixelUnshuffle(2)),
                 lambda nn: nn.Conv2d(8, 2, 3, padding=(1, 2), padding_mode="reflect"),
                 lambda nn: nn.Conv2d(8, 2, 3, padding=1, padding_mode="circular"),
                 lambda nn: nn.Conv2d(8, 2, 3, padding=2, padding_mode="replicate")):
        ours, theirs = make(rt.nn), make(torch.nn)
        ours.load_state_dict(theirs.state_dict())
        for run in (ours, to_static(ours)):
            np.testing.assert_allclose(run(rt.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                       rtol=1e-5, atol=1e-6)


def _t(F, a):
    return torch.tensor(a) if F is TF else rt.tensor(a)


@pytest.mark.parametrize("name", list(FUNCTIONAL))
def test_functional_against_torch(name):
    fn, *arrays = FUNCTIONAL[name]
    check(lambda *a: fn(F, *a), lambda *a: fn(TF, *a), *arrays)


def test_one_hot_is_torchs():
    idx = np.array([0, 3, 1])
    for kwargs in ({}, {"num_classes": 5}):
        ours, theirs = F.one_hot(rt.tensor(idx), **kwargs), TF.one_hot(torch.tensor(idx), **kwargs)
        assert ours.dtype == np.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# --- nn: PyTorch's class names, Module methods, state_dict round trips -----------------------------------

def test_torch_named_layers_load_torch_state_dicts():
    pairs = [(rt.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(3, 4, 3, padding=1), IMG),
             (rt.nn.BatchNorm2d(3).eval(), torch.nn.BatchNorm2d(3).eval(), IMG),
             (rt.nn.Sequential(rt.nn.Conv1d(3, 2, 3), rt.nn.ReLU(inplace=True), rt.nn.MaxPool1d(2),
                               rt.nn.Flatten(start_dim=1), rt.nn.Dropout(0.1, inplace=False)).eval(),
              torch.nn.Sequential(torch.nn.Conv1d(3, 2, 3), torch.nn.ReLU(inplace=True), torch.nn.MaxPool1d(2),
                                  torch.nn.Flatten(start_dim=1), torch.nn.Dropout(0.1)).eval(), IMG[:, :, 0]),
             (rt.nn.AdaptiveAvgPool2d((1, 1)), torch.nn.AdaptiveAvgPool2d((1, 1)), IMG)]
    for ours, theirs, x in pairs:
        ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
        with torch.no_grad():
            want = theirs(torch.tensor(x)).numpy()
        np.testing.assert_allclose(ours(rt.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_module_methods_match_torchs():
    def build(nn):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})
                self.register_buffer("scale", (torch if nn is torch.nn else rt).ones(4), persistent=False)
                self.register_buffer("shift", (torch if nn is torch.nn else rt).zeros(4))
        return Block()
    ours, theirs = build(rt.nn), build(torch.nn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    same_kind = {"LayerList": "ModuleList", "LayerDict": "ModuleDict"}
    assert [same_kind.get(type(m).__name__, type(m).__name__) for m in ours.children()] == \
        [type(m).__name__ for m in theirs.children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    seen, seen_torch = [], []
    ours.apply(lambda m: seen.append(same_kind.get(type(m).__name__, type(m).__name__)))
    theirs.apply(lambda m: seen_torch.append(type(m).__name__))
    assert seen == seen_torch
    assert ours.get_submodule("heads.b").weight.shape == (3, 4)


def test_load_state_dict_takes_torch_tensors_directly():
    theirs = torch.nn.Linear(3, 2).double()
    ours = rt.nn.Linear(3, 2)
    ours.load_state_dict(theirs.state_dict())          # torch tensors, float64: cast into float32
    assert ours.weight.dtype == np.float32
    np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-6)
    ours.load_state_dict(dict(theirs.named_parameters()))   # tensors that require grad too


def test_transformer_encoder_rmsnorm_parameter_containers_against_torch():
    rng = np.random.default_rng(5)
    theirs = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True), 2,
        norm=torch.nn.LayerNorm(16), enable_nested_tensor=False).eval()
    ours = rt.nn.TransformerEncoder(rt.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                                                  norm_first=True), 2, norm=rt.nn.LayerNorm(16))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.eval().load_state_dict(theirs.state_dict())
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    with torch.no_grad():
        want = theirs(torch.tensor(x), mask=mask, is_causal=True)
    np.testing.assert_allclose(ours(rt.tensor(x), mask=rt.tensor(mask.numpy()), is_causal=True).numpy(),
                               want.numpy(), rtol=1e-5, atol=1e-5)
    norm_t, norm_o = torch.nn.RMSNorm(16), rt.nn.RMSNorm(16)
    with torch.no_grad():
        norm_t.weight.uniform_()
    norm_o.load_state_dict(norm_t.state_dict())
    check(lambda a: norm_o(a), lambda a: norm_t(a), x, grad=False)
    plist = rt.nn.ParameterList([rt.nn.Parameter(np.ones(2, np.float32)) for _ in range(2)])
    assert list(plist.state_dict()) == list(torch.nn.ParameterList(
        [torch.nn.Parameter(torch.ones(2)) for _ in range(2)]).state_dict())


def test_complex_helpers_against_torch():
    a = _r(3, 4, 2)
    check(lambda x: rt.view_as_real(rt.view_as_complex(x) * rt.polar(rt.ones(3, 4), x[..., 0])),
          lambda x: torch.view_as_real(torch.view_as_complex(x) * torch.polar(torch.ones(3, 4), x[..., 0])), a,
          grad=False)
    check(lambda x: (rt.hstack([x, x]), rt.vstack([x[0], x[1]]), rt.outer(x[0, :, 0], x[1, :, 1])),
          lambda x: (torch.hstack([x, x]), torch.vstack([x[0], x[1]]), torch.outer(x[0, :, 0], x[1, :, 1])), a)
