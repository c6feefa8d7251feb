"""PyTorch's spellings beside the array API's, checked against NumPy (runs without torch; the torch
cross-checks are in test_torch_names_torch.py)."""
import math

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

F = rt.nn.functional
_rng = np.random.default_rng(7)


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), bool))
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    w = _np_softmax(np.where(np.isneginf(s).all(-1, keepdims=True), 0, s))
    w = np.where(np.isneginf(s).all(-1, keepdims=True), 0, w)
    return w @ v


Q, K, V = _r(2, 3, 4, 8), _r(2, 3, 5, 8), _r(2, 3, 5, 8)
MASK = _rng.random((4, 5)) > 0.4
MASK[2] = False                 # a query that may attend nowhere: zeros, as PyTorch gives


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": MASK}, {"scale": 0.25},
                                    {"attn_mask": _r(4, 5)}], ids=["plain", "causal", "bool", "scale", "float"])
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_scaled_dot_product_attention_is_pytorchs(kwargs, static):
    """One output (not (out, weights)); a boolean mask's True means "may attend"."""
    mask = kwargs.get("attn_mask")
    expect = _np_sdpa(Q, K, V, mask, kwargs.get("is_causal", False), kwargs.get("scale"))
    ours = {k: rt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, **ours)
    fn = to_static(attend) if static else attend
    out = fn(rt.tensor(Q), rt.tensor(K), rt.tensor(V))
    assert isinstance(out, rt.Tensor)
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-5, atol=1e-6)


def test_scaled_dot_product_attention_refuses_mask_and_causal_together():
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(rt.tensor(Q), rt.tensor(K), rt.tensor(V), attn_mask=rt.tensor(MASK),
                                       is_causal=True)


# --- tensor methods with PyTorch's names, against NumPy ------------------------------------------------

X = _r(2, 3, 4)
IDX = _rng.integers(0, 3, (2, 2, 4)).astype(np.int64)
MASK3 = _rng.random((2, 3, 4)) > 0.5


def _np_split(a, sizes, axis):
    return tuple(np.split(a, np.cumsum(sizes)[:-1], axis=axis))


CORE = {   # name: (our method call, NumPy's result, arrays)
    "sum_dim": (lambda x: x.sum(dim=1, keepdim=True), lambda a: a.sum(1, keepdims=True), X),
    "mean_dims": (lambda x: x.mean(dim=[0, 2]), lambda a: a.mean((0, 2)), X),
    "max_dim": (lambda x: x.max(1), lambda a: (a.max(1), a.argmax(1)), X),
    "min_dim_keep": (lambda x: x.min(dim=-1, keepdim=True), lambda a: (a.min(-1, keepdims=True),
                                                                        a.argmin(-1, keepdims=True)), X),
    "max_axis_numpy": (lambda x: x.max(axis=1), lambda a: a.max(1), X),
    "max_numpy_keywords": (lambda x: x.max(-1, keepdims=True), lambda a: a.max(-1, keepdims=True), X),
    "max_other": (lambda x: x.max(x * 0.5), lambda a: np.maximum(a, a * 0.5), X),
    "std_dim_unbiased": (lambda x: x.std(dim=1), lambda a: a.std(1, ddof=1), X),
    "std_numpy": (lambda x: x.std(), lambda a: a.std(), X),
    "var_biased": (lambda x: x.var(-1, unbiased=False), lambda a: a.var(-1), X),
    "sort": (lambda x: x.sort(dim=1, descending=True),
             lambda a: (-np.sort(-a, 1), np.argsort(-a, 1, kind="stable")), X),
    "topk": (lambda x: x.topk(2, dim=-1), lambda a: (-np.sort(-a, -1)[..., :2],
                                                      np.argsort(-a, -1, kind="stable")[..., :2]), X),
    "view": (lambda x: x.view(6, 4), lambda a: a.reshape(6, 4), X),
    "view_tuple": (lambda x: x.view((-1, 2)), lambda a: a.reshape(-1, 2), X),
    "permute": (lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), X),
    "transpose_pair": (lambda x: x.transpose(1, 2), lambda a: a.swapaxes(1, 2), X),
    "transpose_2d_pair": (lambda x: x[0].transpose(0, 1), lambda a: a[0].T, X),
    "transpose_numpy": (lambda x: x.transpose(1, 0, 2), lambda a: a.transpose(1, 0, 2), X),
    "flatten": (lambda x: x.flatten(1), lambda a: a.reshape(2, 12), X),
    "unsqueeze": (lambda x: x.unsqueeze(-1), lambda a: a[..., None], X),
    "squeeze_not_one": (lambda x: x.squeeze(1), lambda a: a, X),
    "expand": (lambda x: x[:, :1].expand(-1, 3, -1), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4)), X),
    "repeat": (lambda x: x.repeat(1, 2, 1), lambda a: np.tile(a, (1, 2, 1)), X),
    "chunk": (lambda x: x.chunk(2, dim=1), lambda a: _np_split(a, [2, 1], 1), X),
    "split": (lambda x: x.split(3, dim=2), lambda a: _np_split(a, [3, 1], 2), X),
    "split_sizes": (lambda x: x.split([1, 2], 1), lambda a: _np_split(a, [1, 2], 1), X),
    "narrow": (lambda x: x.narrow(2, 1, 2), lambda a: a[:, :, 1:3], X),
    "masked_fill": (lambda x, m: x.masked_fill(m, -1.0), lambda a, m: np.where(m, -1.0, a).astype(np.float32),
                    X, MASK3),
    "masked_select": (lambda x, m: x.masked_select(m), lambda a, m: a[m], X, MASK3),
    "gather": (lambda x, i: x.gather(1, i), lambda a, i: np.take_along_axis(a[:, :, :], i, 1), X, IDX),
    "scatter": (lambda x, i: x.scatter(2, i[:, :, :1], 7.0),
                lambda a, i: _np_scatter(a, 2, i[:, :, :1], 7.0), X, IDX),
    "index_select": (lambda x, i: x.index_select(2, i[0, 0]), lambda a, i: a[:, :, i[0, 0]], X, IDX),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), X),
    "where": (lambda x, m: x.where(m, 0.0), lambda a, m: np.where(m, a, 0).astype(np.float32), X, MASK3),
    "flip": (lambda x: x.flip(0, 2), lambda a: a[::-1, :, ::-1], X),
    "roll": (lambda x: x.roll(1, 2), lambda a: np.roll(a, 1, 2), X),
    "clone": (lambda x: x.clone(), lambda a: a, X),
    "long": (lambda x: x.long(), lambda a: a.astype(np.int64), X),
    "double": (lambda x: x.double(), lambda a: a.astype(np.float64), X),
    "type_as": (lambda x, i: x.type_as(i), lambda a, i: a.astype(np.int64), X, IDX),
    "new_full": (lambda x: x.new_full((2, 2), 3.0), lambda a: np.full((2, 2), 3.0, np.float32), X),
    "softmax": (lambda x: x.softmax(dim=1), lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True), X),
}


def _np_scatter(a, axis, index, value):
    out = a.copy()
    region = tuple(slice(0, n) if k != axis else slice(None) for k, n in enumerate(index.shape))
    part = out[region]
    np.put_along_axis(part, index, value, axis)
    out[region] = part
    return out


def _compare(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    assert isinstance(got, rt.Tensor), type(got)
    assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype, (got.shape, np.shape(want),
                                                                                got.dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", list(CORE))
def test_pytorch_method_against_numpy(name, static):
    ours, numpy_fn, *arrays = CORE[name]

    def run(*args):
        return ours(*args)
    if static and name == "masked_select":
        pytest.skip("an output whose size depends on the values: covered eagerly")
    got = (to_static(run) if static else run)(*[rt.tensor(a) for a in arrays])
    _compare(got, numpy_fn(*arrays))


def test_max_with_a_dim_is_a_named_tuple_of_values_and_indices():
    out = rt.tensor(X).max(dim=1)
    assert out._fields == ("values", "indices") and out.values.shape == (2, 4) and out.indices.dtype == np.int64
    v, i = rt.max(rt.tensor(X), 2)
    _compare((v, i), (X.max(2), X.argmax(2)))


def test_size_numel_dim_item():
    x = rt.tensor(X)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.numel() == 24 and x.dim() == 3
    assert isinstance(x.sum().item(), float)


def test_namespace_functions_take_pytorchs_spellings():
    x = rt.tensor(X)
    _compare(rt.cat([x, x], dim=2), np.concatenate([X, X], 2))
    _compare(rt.sum(x, dim=1, keepdim=True), X.sum(1, keepdims=True))
    _compare(rt.zeros(2, 3), np.zeros((2, 3), np.float32))
    _compare(rt.ones((2, 3), dtype=rt.long), np.ones((2, 3), np.int64))
    _compare(rt.zeros((2, 3), "int32"), np.zeros((2, 3), np.int32))       # NumPy's (shape, dtype) too
    _compare(rt.transpose(x, 0, 2), X.swapaxes(0, 2))
    _compare(rt.transpose(x, (2, 0, 1)), X.transpose(2, 0, 1))
    _compare(rt.split(x, 2, dim=2), tuple(np.split(X, 2, 2)))
    _compare(rt.split(x, 3, axis=1), tuple(np.split(X, 3, 1)))             # NumPy's sections
    assert rt.long is np.int64 and rt.float is np.float32 and rt.double is np.float64 and rt.half is np.float16


def test_in_place_methods_write_into_the_tensor():
    y = rt.tensor(np.ones(3, np.float32))
    alias = y
    y.add_(2).mul_(3)
    y.sub_(rt.tensor(np.ones(3, np.float32)), alpha=2)
    assert alias is y and y.tolist() == [7.0, 7.0, 7.0]
    y.zero_()
    assert y.tolist() == [0.0, 0.0, 0.0]
    w = rt.tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad"):
        w.mul_(2)
    with rt.no_grad():
        w.mul_(2)
    assert w.tolist() == [2.0, 2.0] and w.requires_grad


def test_in_place_method_on_a_traced_value_says_what_to_write():
    def f(x):
        return x.add_(1)          # a statement `x.add_(1)` is rebound by the conversion; a value has no place
    with pytest.raises(TypeError, match=r"x = x.add\(...\)"):
        to_static(f)(rt.tensor(X))


def test_in_place_on_a_captured_tensor_in_static_code_writes_it_each_run():
    counter = rt.tensor(np.zeros((), np.float32))

    @to_static
    def step(x):
        counter.add_(1)
        return x * 2
    for _ in range(3):
        step(rt.tensor(X))
    assert counter.item() == 3.0 and step.cache_size == 1


def test_no_grad_is_a_decorator_and_manual_seed_seeds():
    @rt.no_grad()
    def f(a):
        return a * 2

    @rt.no_grad
    def g(a):
        return a * 2
    w = rt.tensor([1.0], requires_grad=True)
    assert not f(w).requires_grad and not g(w).requires_grad and (w * 2).requires_grad
    rt.manual_seed(5)
    a = rt.randn(2, 3)
    rt.manual_seed(5)
    assert rt.randn(2, 3).tolist() == a.tolist() and a.shape == (2, 3)


def test_requires_grad_and_to_dtype():
    x = rt.tensor(X).requires_grad_()
    assert x.requires_grad
    assert x.to(rt.float64).dtype == np.float64 and x.to("cpu") is x and x.to("cpu", rt.long).dtype == np.int64
    assert x.float() is x       # already float32: the same tensor, gradients flow as in PyTorch


# --- nn.functional and nn with PyTorch's signatures --------------------------------------------------

def test_functional_takes_pytorchs_keywords():
    x = rt.tensor(X[0])
    _compare(F.softmax(x, dim=0), np.exp(X[0]) / np.exp(X[0]).sum(0, keepdims=True))
    _compare(F.log_softmax(x, dim=-1), X[0] - np.log(np.exp(X[0]).sum(-1, keepdims=True)))
    _compare(F.relu(x, inplace=True), np.maximum(X[0], 0))
    _compare(F.dropout(x, 0.5, training=False, inplace=False), X[0])
    _compare(F.normalize(x, dim=0), X[0] / np.linalg.norm(X[0], axis=0, keepdims=True))
    _compare(F.flatten(rt.tensor(X), 1), X.reshape(2, 12))
    onehot = F.one_hot(rt.tensor(np.array([0, 2, 1])))
    assert onehot.dtype == np.int64 and onehot.shape == (3, 3)


def test_cross_entropy_takes_class_weights_and_legacy_flags():
    logits, target = _r(5, 4), np.array([0, 3, 1, 2, 1])
    w = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    picked = -logp[np.arange(5), target] * w[target]
    got = F.cross_entropy(rt.tensor(logits), rt.tensor(target), weight=rt.tensor(w))
    np.testing.assert_allclose(got.numpy(), picked.sum() / w[target].sum(), rtol=1e-5)
    none = F.cross_entropy(rt.tensor(logits), rt.tensor(target), reduce=False)
    np.testing.assert_allclose(none.numpy(), -logp[np.arange(5), target], rtol=1e-5)
    layer = rt.nn.CrossEntropyLoss(weight=rt.tensor(w))
    np.testing.assert_allclose(layer(rt.tensor(logits), rt.tensor(target)).numpy(), got.numpy(), rtol=1e-6)


def test_torch_class_names_and_module_methods():
    nn = rt.nn
    assert nn.Module is nn.Layer and nn.ModuleList is nn.LayerList and nn.ModuleDict is nn.LayerDict
    assert nn.Conv2d is nn.Conv2D and nn.BatchNorm2d is nn.BatchNorm2D and nn.MaxPool2d is nn.MaxPool2D
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(inplace=True), nn.Flatten(start_dim=1))
    assert [n for n, _ in net.named_modules()] == ["", "0", "1", "2"] and len(net.modules()) == 4
    assert net.get_submodule("0").out_features == 3 and net.get_parameter("0.bias").shape == (3,)
    assert len(net.parameters(recurse=False)) == 0 and len(list(net.children())) == 3


def test_layer_to_dtype_and_dtype_on_constructors():
    net = rt.nn.Sequential(rt.nn.Linear(4, 3), rt.nn.BatchNorm1d(3))
    assert net.double() is net and all(p.dtype == np.float64 for p in net.parameters() + net.buffers()
                                       if p.dtype.kind == "f")
    x = rt.tensor(_r(2, 4).astype(np.float64))
    assert net(x).dtype == np.float64
    net.to("cpu", rt.float32)
    assert all(p.dtype == np.float32 for p in net.parameters())
    assert rt.nn.Linear(4, 2, dtype=rt.float64).weight.dtype == np.float64
    assert rt.nn.Embedding(5, 2, device="cpu", dtype=rt.float64).weight.dtype == np.float64
    with pytest.raises(TypeError, match="floating-point"):
        net.to(rt.int64)


def test_load_state_dict_casts_float64_into_float32_as_pytorch_copies():
    layer = rt.nn.Linear(3, 2)
    layer.load_state_dict({"weight": np.ones((2, 3)), "bias": np.zeros(2)})      # float64 arrays
    assert layer.weight.dtype == np.float32 and layer.weight.numpy().sum() == 6.0


# --- porting errors: the PyTorch spelling that is missing and the one to use, at the user's line ----------

def test_a_missing_pytorch_method_names_the_spelling_to_use_at_the_users_line():
    def f(x):
        return x.as_strided((2, 2), (1, 1))
    with pytest.raises(AttributeError, match=r"PyTorch's x.as_strided is not supported\): no strided views") as info:
        to_static(f)(rt.tensor(X[0, :3, :3]))
    assert "test_torch_names.py" in str(info.value) and "return x.as_strided((2, 2), (1, 1))" in str(info.value)
    with pytest.raises(AttributeError, match="rt.unique_counts"):
        rt.tensor(X).mode()
    assert not hasattr(rt.tensor(X), "grad_fn") and not hasattr(rt.tensor(X), "no_such_name")


def test_a_missing_torch_function_names_the_spelling_to_use():
    with pytest.raises(AttributeError, match="torch.compile is not supported.*to_static"):
        rt.compile
    with pytest.raises(AttributeError, match="no attribute 'no_such_function'$"):
        rt.no_such_function
    with pytest.raises(AttributeError, match="DataParallel is not supported"):
        rt.nn.DataParallel
    with pytest.raises(AttributeError, match="ctc_loss is not supported"):
        F.ctc_loss


def test_in_place_on_a_leaf_that_requires_grad_is_refused_as_in_pytorch():
    p = rt.nn.Parameter(np.ones(3, np.float32))
    with pytest.raises(RuntimeError, match="no_grad"):
        p.add_(1)


def test_more_nn_names():
    x = rt.tensor(X)
    assert rt.nn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    norm = rt.nn.RMSNorm(4, eps=1e-6)
    _compare(norm(x), X / np.sqrt((X * X).mean(-1, keepdims=True) + 1e-6))
    params = rt.nn.ParameterList([np.ones(2, np.float32), np.zeros(3, np.float32)])
    assert len(params) == 2 and params[1].shape == (3,) and list(params.state_dict()) == ["0", "1"]
    table = rt.nn.ParameterDict({"scale": np.ones(2, np.float32)})
    assert "scale" in table and table["scale"].requires_grad
    layer = rt.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    encoder = rt.nn.TransformerEncoder(layer, 2).eval()
    assert encoder.layers[0] is not encoder.layers[1] and encoder.layers[0].linear1.weight.device == "cpu"
    src = rt.tensor(_r(5, 2, 8))
    manual = encoder.layers[1](encoder.layers[0](src))
    _compare(encoder(src), manual.numpy())
    w = rt.nn.Parameter(np.zeros((3, 5), np.float32))
    rt.nn.init.orthogonal_(w)
    np.testing.assert_allclose(w.numpy() @ w.numpy().T, np.eye(3), atol=1e-5)
    rt.nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w.numpy()).max() <= 0.5


def test_complex_and_stacking_helpers():
    a = _r(3, 4, 2)
    z = rt.view_as_complex(rt.tensor(a))
    np.testing.assert_allclose(z.numpy(), a[..., 0] + 1j * a[..., 1], rtol=1e-6)
    _compare(rt.view_as_real(z), a)
    _compare(rt.hstack([rt.tensor(a), rt.tensor(a)]), np.hstack([a, a]))
    assert rt.Size([2, 3]) == (2, 3) and rt.cuda.is_available() == rt.gpu_available()


def test_in_place_methods_on_traced_locals_are_rebindings_in_converted_code():
    def f(x, m):
        y = x * 2
        y.add_(1, alpha=3)                      # y = y + 3
        y.masked_fill_(m, 0.0)
        z = rt.zeros_like(x)
        z.fill_(2.0)
        for i in range(2):                      # a Python loop: unrolled
            z.mul_(y)
        w = x.clone()
        if x.sum() > 0:                         # a tensor if: the rebinding flows out of the branch
            w.clamp_(min=0.0)
        else:
            w.zero_()
        return y, z, w
    x, m = rt.tensor(X), rt.tensor(MASK3)
    eager = f(x, m)
    static = to_static(f)(x, m)
    for a, b in zip(static, eager):
        _compare(a, b.numpy())
    y = np.where(MASK3, 0.0, X * 2 + 3).astype(np.float32)
    _compare(static[0], y)
    assert x.numpy().tolist() == X.tolist()             # the caller's tensor: untouched (clone, then writes)


def test_in_place_method_keeps_the_dtype_as_pytorch():
    def f(i):
        i.add_(1)
        i.mul_(2)
        return i
    got = to_static(f)(rt.tensor(np.array([1, 2], np.int32)))
    assert got.dtype == np.int32 and got.tolist() == [4, 6]


def test_in_place_method_on_a_temporary_is_its_value_in_converted_code():
    def f(x):
        start = rt.empty(x.shape[0], 1, dtype=rt.long).fill_(3)
        noise = rt.zeros_like(x).add_(x, alpha=2).clamp_(max=1.0)
        return start, noise
    eager, static = f(rt.tensor(X[0])), to_static(f)(rt.tensor(X[0]))
    for a, b in zip(static, eager):
        _compare(a, b.numpy())
    _compare(static[0], np.full((3, 1), 3, np.int64))
    _compare(static[1], np.minimum(X[0] * 2, 1.0))


def test_size_of_a_dynamic_shape_is_callable_in_traced_code():
    from transpiler import InputSpec

    def f(x):
        b, t = x.size()
        return x.view(b * t), x.size(1), x.size(0) * 2, x.numel()
    static = to_static(f, input_spec=[InputSpec([None, 3], "float32")])
    for rows in (2, 5):
        flat, cols, twice, count = static(rt.tensor(np.ones((rows, 3), np.float32)))
        assert flat.shape == (rows * 3,) and cols == 3 and int(twice) == 2 * rows and int(count) == rows * 3
    assert static.cache_size == 1


def test_channel_dropout_embedding_from_pretrained_and_nn_utils_hints():
    rt.manual_seed(2)
    y = rt.nn.Dropout2d(0.5)(rt.ones(4, 6, 3, 3)).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and all(len(set(y[n, c].ravel())) == 1 for n in range(4) for c in range(6))
    assert (rt.nn.Dropout2d(0.5).eval()(rt.ones(2, 2, 2)).numpy() == 1).all()
    table = rt.nn.Embedding.from_pretrained(rt.tensor(X[0]))
    _compare(table(rt.tensor([2, 0])), X[0][[2, 0]])
    assert not table.weight.requires_grad
    with pytest.raises(AttributeError, match="lengths="):
        rt.nn.utils.rnn


def test_set_grad_enabled_as_a_call_and_as_a_block():
    w = rt.tensor([1.0], requires_grad=True)
    with rt.set_grad_enabled(False):
        assert not (w * 2).requires_grad and not rt.is_grad_enabled()
    assert (w * 2).requires_grad
    rt.set_grad_enabled(False)
    try:
        assert not (w * 2).requires_grad
    finally:
        rt.set_grad_enabled(True)
    assert rt.is_grad_enabled()


def test_requires_grad_false_detaches_a_traced_value():
    """`self.pe[:, :t].requires_grad_(False)` (the Annotated Transformer) is the detached value under
    to_static, as the buffer's slice is eagerly."""
    pe = rt.tensor(_r(1, 6, 4))
    w = rt.tensor(_r(4), dtype=np.float32)
    w.requires_grad = True

    def f(x, w):
        y = x * w + pe[:, :x.shape[1]].requires_grad_(False)
        return (y * w).sum()

    x = rt.tensor(_r(2, 3, 4))
    grad = rt.grad(f, argnums=1)
    want = grad(x, w)
    np.testing.assert_allclose(to_static(grad)(x, w).numpy(), want.numpy(), rtol=1e-5)
    xs = x.numpy()
    # d/dw of sum((x*w + pe)*w) = sum(2*x*w + pe)
    np.testing.assert_allclose(want.numpy(), (2 * xs * w.numpy() + pe.numpy()[:, :3]).sum((0, 1)), rtol=1e-5)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_div_rounding_modes_addmm_family_and_legacy_constructors(static):
    a = np.array([7, -7, 6, -6, 1, -1, 0], np.int64)
    b = np.array([2, 2, -4, -4, -3, 3, 5], np.int64)
    x, m1, m2 = _r(3, 5), _r(3, 4), _r(4, 5)
    b1, b2, v = _r(2, 3, 4), _r(2, 4, 5), _r(4)

    def f(a, b, x, m1, m2, b1, b2, v):
        return (rt.div(a, b, rounding_mode="trunc"), a.div(b, rounding_mode="floor"), rt.div(a, b),
                rt.div(a.float() * 0.5, b, rounding_mode="trunc"), rt.addmm(x, m1, m2, beta=0.5, alpha=2),
                x.addmm(m1, m2), rt.baddbmm(x, b1, b2, alpha=0.5), rt.addbmm(x, b1, b2, beta=2),
                rt.addmv(x[:, 0], m1, v), x[0, :4].addr(v, v, beta=0))
    got = (to_static(f) if static else f)(*[rt.tensor(t) for t in (a, b, x, m1, m2, b1, b2, v)])
    want = (np.trunc(a / b).astype(np.int64), a // b, a / b, np.trunc(a * 0.5 / b), 0.5 * x + 2 * (m1 @ m2),
            x + m1 @ m2, x + 0.5 * (b1 @ b2), 2 * x + (b1 @ b2).sum(0), x[:, 0] + m1 @ v, np.outer(v, v))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype or np.issubdtype(w.dtype, np.floating)
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5)
    assert np.isfinite(rt.addmm(rt.full((3, 5), np.nan), rt.tensor(m1), rt.tensor(m2), beta=0).numpy()).all()
    assert rt.LongTensor([1, 2]).dtype == np.int64 and rt.FloatTensor([1, 2]).dtype == np.float32
    assert rt.FloatTensor(2, 3).shape == (2, 3) and rt.BoolTensor([True]).dtype == np.bool_
    with pytest.raises(ValueError, match="rounding_mode"):
        rt.div(rt.tensor(a), 2, rounding_mode="round")


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_pixel_shuffle_and_reflection_padding_layers(static):
    x = _r(2, 8, 3, 4)
    want = x.reshape(2, 2, 2, 2, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 8)
    shuffle, unshuffle = rt.nn.PixelShuffle(2), rt.nn.PixelUnshuffle(2)
    reflect, replicate = rt.nn.ReflectionPad2d((1, 2, 2, 1)), rt.nn.ReplicationPad2d(1)
    constant = rt.nn.ConstantPad2d(1, 3.5)

    def f(x):
        y = shuffle(x)
        return y, unshuffle(y), reflect(x), replicate(x), constant(x), rt.nn.functional.pixel_shuffle(x, 2)
    got = (to_static(f) if static else f)(rt.tensor(x))
    widths = ((0, 0), (0, 0), (2, 1), (1, 2))
    for g, w in zip(got, (want, x, np.pad(x, widths, mode="reflect"), np.pad(x, 1, mode="edge")[1:-1, 1:-1],
                          np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=3.5), want)):
        np.testing.assert_array_equal(g.numpy(), w)
