"""@to_static functions and runtime.nn layers called with GPU tensors.

Converted control flow (if/while/for/append/break/return) traced for GPU inputs
runs on CuPy, keeps its outputs on the GPU and matches a NumPy oracle; layers
moved with `.to("gpu")` match their CPU results. Every test is marked `gpu`.
"""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from transpiler import InputSpec, to_static

try:
    import cupy
except Exception:  # no CuPy here: every test below is skipped by the conftest
    cupy = None

pytestmark = pytest.mark.gpu


def _x(*shape, seed=0, dtype=np.float32, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)


def g(a, dtype=None):
    return rt.tensor(a, dtype=dtype, device="gpu")


def check(t, expected, rtol=1e-5, atol=1e-5):
    assert isinstance(t, rt.Tensor), type(t)
    assert t.device == "gpu", f"output is on {t.device}"
    assert isinstance(t.array, cupy.ndarray), type(t.array)
    expected = np.asarray(expected)
    actual = t.numpy()
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape}, expected {expected.shape}"
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, expected)


def op_types(program):
    return [op.type for op in program.ops()]


# --- converted control flow ----------------------------------------------------------------

@to_static
def f_if(x):
    if x.mean() > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def np_if(a):
    return a * np.float32(2) if a.mean() > 0 else -a


@to_static
def f_while(x):
    i = 0
    while rt.sum(x) < 100.0 and i < 10:
        x = x * 2.0
        i += 1
    return x, i


def np_while(a):
    i = 0
    while a.sum() < 100 and i < 10:
        a = a * np.float32(2)
        i += 1
    return a, i


@to_static
def f_for_range(x, n):
    s = rt.zeros_like(x[0])
    for i in range(n):
        s = s + x[i] * i
    return s


def np_for_range(a, n):
    s = np.zeros_like(a[0])
    for i in range(n):
        s = s + a[i] * np.float32(i)
    return s


@to_static
def f_append(x):
    rows = []
    for row in x:
        if row.sum() > 0:
            rows.append(row * 2.0)
        else:
            rows.append(-row)
    return rt.stack(rows)


def np_append(a):
    return np.stack([r * np.float32(2) if r.sum() > 0 else -r for r in a])


@to_static(input_spec=[InputSpec([None, 4], "float32")])
def f_break(x):
    total = rt.zeros((4,), "float32")
    for row in x:
        if row.max() > 1.5:
            break
        total = total + row
    return total


def np_break(a):
    total = np.zeros(4, np.float32)
    for row in a:
        if row.max() > 1.5:
            break
        total = total + row
    return total


@to_static
def f_return(x):
    for row in x:
        if row.max() > 1.5:
            return row
    return x[0] * 0.0


def np_return(a):
    for row in a:
        if row.max() > 1.5:
            return row
    return a[0] * np.float32(0)


@pytest.mark.parametrize("seed", range(3))
def test_if_on_gpu(seed):
    a = _x(3, 4, seed=seed, lo=-1.0 - seed, hi=1.0)
    check(f_if(g(a)), np_if(a))
    assert "cond" in op_types(f_if.get_program(g(a)))


@pytest.mark.parametrize("seed", range(3))
def test_while_on_gpu(seed):
    a = _x(2, 3, seed=seed, lo=0.0, hi=0.5 + seed)
    out, i = f_while(g(a))
    expected, n = np_while(a)
    check(out, expected)
    assert int(i) == n
    assert "while" in op_types(f_while.get_program(g(a)))


def test_for_over_tensor_range_on_gpu():
    a = _x(5, 3, seed=4)
    for n in (0, 2, 5):
        check(f_for_range(g(a), g(np.int64(n))), np_for_range(a, n))
    assert "while" in op_types(f_for_range.get_program(g(a), g(np.int64(2))))


def test_append_in_tensor_loop_on_gpu():
    a = _x(6, 3, seed=5)
    check(f_append(g(a)), np_append(a))
    types = op_types(f_append.get_program(g(a)))
    assert "while" in types and "cond" in types


@pytest.mark.parametrize("seed", range(4))
def test_break_on_gpu(seed):
    a = _x(3 + seed, 4, seed=seed, hi=1.6 + 0.2 * seed)
    check(f_break(g(a)), np_break(a))


@pytest.mark.parametrize("seed", range(4))
def test_early_return_on_gpu(seed):
    a = _x(4, 3, seed=seed, hi=1.0 + 0.3 * seed)
    check(f_return(g(a)), np_return(a))


def test_signature_cache_keys_on_device():
    @to_static
    def f(x):
        return f_if(x) + 1.0

    a = _x(2, 3, seed=6)
    cpu = f(rt.tensor(a))
    assert cpu.device == "cpu"
    gpu = f(g(a))
    check(gpu, np_if(a) + np.float32(1))
    assert f.cache_size == 2                     # one Program per device
    f(g(a))
    assert f.cache_size == 2
    np.testing.assert_allclose(gpu.numpy(), cpu.numpy(), rtol=1e-6)


def test_to_static_with_captured_gpu_weights():
    w = g(_x(4, 3, seed=7))

    @to_static
    def f(x):
        h = x @ w
        if rt.max(h) > 0:
            h = rt.tanh(h)
        return h

    a = _x(5, 4, seed=8)
    h = a @ w.numpy()
    check(f(g(a)), np.tanh(h) if h.max() > 0 else h)
    program = f.get_program(g(a))
    assert "constant" not in op_types(program)
    assert any(v.persistable for v in program.inputs)


def test_dynamic_batch_on_gpu():
    @to_static(input_spec=[InputSpec([None, 4], "float32")])
    def f(x):
        y = x.reshape(x.shape[0], 2, 2)
        return rt.sum(y, axis=1).mean(axis=0)

    for n in (1, 3, 7):
        a = _x(n, 4, seed=n)
        check(f(g(a)), a.reshape(n, 2, 2).sum(axis=1).mean(axis=0))
    assert f.cache_size == 1


def test_numpy_input_after_gpu_trace_is_separate():
    a = _x(2, 2, seed=9)
    assert f_if(a).device == "cpu"                # a NumPy array argument is a CPU input
    check(f_if(g(a)), np_if(a))


# --- layers ------------------------------------------------------------------------------------

class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(16, 4)
        self.norm = nn.LayerNorm(4)

    @to_static
    def forward(self, x):
        h = self.act(self.fc1(x))
        if h.mean() > 0:
            h = h * 0.5
        return self.norm(self.fc2(h))


class CNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2D(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                                  nn.Conv2D(4, 4, 3, stride=1, padding="same", groups=2), nn.Sigmoid(),
                                  nn.Flatten(), nn.Linear(4 * 4 * 4, 5))

    @to_static
    def forward(self, x):
        return F.softmax(self.body(x), axis=-1)


class TextModel(nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6, padding_idx=0)
        self.norm = nn.LayerNorm(6)
        self.out = nn.Linear(6, 3)
        self.drop = nn.Dropout(0.5)

    @to_static
    def forward(self, ids, target):
        h = self.drop(self.norm(self.emb(ids))).mean(axis=1)
        logits = self.out(h)
        return logits, F.cross_entropy(logits, target)


def _cpu_then_gpu(layer, *arrays, rtol=1e-4, atol=1e-5):
    """Run layer on the CPU, move it to the GPU, run again: same results, outputs on the GPU."""
    expected = layer(*(rt.tensor(a) for a in arrays))
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert layer.to("gpu") is layer
    assert all(p.device == "gpu" and isinstance(p.array, cupy.ndarray) for p in layer.parameters())
    out = layer(*(g(a) for a in arrays))
    out = out if isinstance(out, tuple) else (out,)
    for o, e in zip(out, expected):
        check(o, e.numpy(), rtol=rtol, atol=atol)
    return out


def test_mlp_layer_on_gpu():
    rt.seed(0)
    model = MLP()
    a = _x(5, 8, seed=10)
    (out,) = _cpu_then_gpu(model, a)
    # an independent NumPy oracle for the same weights
    w1, b1, w2, b2 = (p.numpy() for p in (model.fc1.weight, model.fc1.bias, model.fc2.weight, model.fc2.bias))
    h = a @ w1.T + b1
    h = 0.5 * h * (1 + np.vectorize(__import__("math").erf)(h / np.sqrt(2))).astype(np.float32)
    h = h * 0.5 if h.mean() > 0 else h
    y = h @ w2.T + b2
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.numpy(), y, rtol=1e-4, atol=1e-4)
    program = model.forward.get_program(g(a))
    assert {v.name for v in program.inputs if v.persistable} >= {"fc1.weight", "fc2.bias", "norm.weight"}


def test_cnn_layer_on_gpu():
    rt.seed(1)
    model = CNN()
    a = _x(2, 3, 8, 8, seed=11)
    (out,) = _cpu_then_gpu(model, a)
    np.testing.assert_allclose(out.numpy().sum(axis=-1), np.ones(2), rtol=1e-5)


def test_embedding_layernorm_cross_entropy_layer_on_gpu():
    rt.seed(2)
    model = TextModel().eval()
    ids = np.array([[1, 2, 0, 9], [3, 3, 4, 0]], np.int64)
    target = np.array([2, 0], np.int64)
    logits, loss = _cpu_then_gpu(model, ids, target)
    lg = logits.numpy().astype(np.float64)
    logp = lg - lg.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    np.testing.assert_allclose(float(loss), -logp[[0, 1], target].mean(), rtol=1e-5)


def test_dropout_in_training_on_gpu():
    rt.seed(3)
    x = g(np.ones((200, 100), np.float32))
    y = F.dropout(x, 0.25, training=True)
    assert y.device == "gpu"
    values = np.unique(y.numpy())
    assert set(values.tolist()) <= {0.0, np.float32(1 / 0.75)}
    kept = float((y.numpy() != 0).mean())
    assert 0.70 < kept < 0.80
    assert F.dropout(x, 0.25, training=False) is x
    layer = nn.Dropout(0.5).to("gpu")

    @to_static
    def f(h):
        return layer(h)

    out = f(x)
    assert out.device == "gpu" and 0.4 < float((out.numpy() != 0).mean()) < 0.6
    again = f(x)                                  # a new mask each run of the Program
    assert not np.array_equal(out.numpy(), again.numpy())


def test_state_dict_round_trip_keeps_gpu():
    rt.seed(4)
    model = MLP().to("gpu")
    a = _x(3, 8, seed=12)
    before = model(g(a)).numpy()
    state = {k: v.numpy() * 0 for k, v in model.state_dict().items()}     # host arrays in
    model.load_state_dict(state)
    assert all(p.device == "gpu" and isinstance(p.array, cupy.ndarray) for p in model.parameters())
    after = model(g(a))                        # the traced Program reads the new values
    check(after, np.zeros((3, 4), np.float32), atol=1e-6)
    model.load_state_dict({k: g(v) for k, v in state.items()})          # GPU tensors in
    assert all(p.device == "gpu" for p in model.parameters())
    assert not np.allclose(before, 0)


def test_parameters_updated_in_place_are_seen_on_gpu():
    rt.seed(5)
    layer = nn.Linear(3, 2).to("gpu")
    fwd = to_static(layer.forward)
    a = _x(4, 3, seed=13)
    first = fwd(g(a)).numpy()
    layer.weight.data = layer.weight.data * 2
    layer.bias.data = layer.bias.data * 0
    check(fwd(g(a)), a @ (layer.weight.numpy().T), rtol=1e-5, atol=1e-5)
    assert not np.allclose(first, fwd(g(a)).numpy())


# --- nn.functional eager on the GPU -------------------------------------------------------------

FUNCTIONAL = {
    "relu": lambda x: F.relu(x),
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "sigmoid": lambda x: F.sigmoid(x),
    "softmax": lambda x: F.softmax(x, axis=1),
    "log_softmax": lambda x: F.log_softmax(x, axis=-1),
    "layer_norm": lambda x: F.layer_norm(x, (x.shape[-1],)),
    "flatten": lambda x: F.flatten(x, 1),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_matches_cpu(name):
    a = _x(3, 5, 4, seed=14, lo=-6.0, hi=6.0)
    cpu = FUNCTIONAL[name](rt.tensor(a))
    check(FUNCTIONAL[name](g(a)), cpu.numpy(), rtol=1e-5, atol=1e-6)


def test_softmax_and_cross_entropy_against_numpy():
    logits = _x(4, 5, seed=15)
    target = np.array([1, 0, 4, -100], np.int64)
    e = np.exp(logits - logits.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    check(F.softmax(g(logits)), sm, rtol=1e-5, atol=1e-6)
    logp = np.log(sm)
    valid = target != -100
    expected = -logp[np.arange(4)[valid], target[valid]].mean()
    check(F.cross_entropy(g(logits), g(target)), np.float32(expected), rtol=1e-5, atol=1e-6)
    none = F.cross_entropy(g(logits), g(target), reduction="none")
    np.testing.assert_allclose(none.numpy()[:3], -logp[np.arange(3), target[:3]], rtol=1e-5, atol=1e-6)
    assert none.numpy()[3] == 0
    probs = sm[::-1].copy()
    check(F.cross_entropy(g(logits), g(probs)), np.float32(-(probs * logp).sum(1).mean()), rtol=1e-5, atol=1e-6)
    smooth = F.cross_entropy(g(logits), g(target), label_smoothing=0.1)
    cpu = F.cross_entropy(rt.tensor(logits), rt.tensor(target), label_smoothing=0.1)
    check(smooth, cpu.numpy(), rtol=1e-5, atol=1e-6)
    all_ignored = F.cross_entropy(g(logits), g(np.full(4, -100, np.int64)))
    assert np.isnan(float(all_ignored))


def test_conv_pool_linear_embedding_match_cpu():
    a = _x(2, 4, 9, 9, seed=16)
    w = _x(6, 2, 3, 3, seed=17)
    b = _x(6, seed=18)
    for kwargs in ({}, {"stride": 2, "padding": 1}, {"padding": "same", "dilation": 2}, {"groups": 2}):
        ww = w if kwargs.get("groups") == 2 else _x(6, 4, 3, 3, seed=19)
        cpu = F.conv2d(rt.tensor(a), rt.tensor(ww), rt.tensor(b), **kwargs)
        check(F.conv2d(g(a), g(ww), g(b), **kwargs), cpu.numpy(), rtol=1e-4, atol=1e-5)
    for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                   {"kernel_size": 2, "ceil_mode": True}):
        cpu = F.max_pool2d(rt.tensor(a), **kwargs)
        check(F.max_pool2d(g(a), **kwargs), cpu.numpy())
    x, wl, bl = _x(3, 7, seed=20), _x(5, 7, seed=21), _x(5, seed=22)
    check(F.linear(g(x), g(wl), g(bl)), x @ wl.T + bl, rtol=1e-5, atol=1e-5)
    table = _x(10, 4, seed=23)
    ids = np.array([[0, 9], [3, 3]], np.int64)
    check(F.embedding(g(ids), g(table)), table[ids])


def test_nn_errors_on_gpu():
    with pytest.raises(IndexError, match="out of range"):
        F.cross_entropy(g(_x(2, 3)), g(np.array([0, 3], np.int64)))
    with pytest.raises(IndexError, match="out of range"):
        F.embedding(g(np.array([0, 10], np.int64)), g(_x(10, 4)))
    with pytest.raises(ValueError, match="different devices"):
        F.linear(g(_x(2, 3)), rt.tensor(_x(4, 3)))


def test_cpu_layer_with_gpu_input_is_a_clear_error_eagerly():
    layer = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="different devices"):
        layer(g(_x(2, 3)))


def test_cpu_layer_with_gpu_input_is_a_clear_error_in_converted_code():
    """A layer left on the CPU, called from converted code with a GPU tensor, must say so."""
    layer = nn.Linear(3, 2)

    @to_static
    def f(x):
        return layer(x)

    with pytest.raises((ValueError, TypeError, RuntimeError), match="(?i)device"):
        f(g(_x(2, 3)))


def test_to_static_passes_off_and_on_agree_on_gpu():
    def body(x, w):
        acc = rt.zeros_like(x[0])
        for row in x:
            h = rt.tanh(row @ w) * 2.0 + row ** 2
            if h.sum() > 0:
                acc = acc + h
            else:
                acc = acc - h * 0.5
        return acc

    plain, optimized = to_static(body, passes=[]), to_static(body)
    a, w = _x(6, 4, seed=40), _x(4, 4, seed=41)
    expected = plain(rt.tensor(a), rt.tensor(w)).numpy()
    check(plain(g(a), g(w)), expected, rtol=1e-5, atol=1e-5)
    check(optimized(g(a), g(w)), expected, rtol=1e-5, atol=1e-5)
