"""runtime.nn traced into Programs (dynamic batch via InputSpec([None, ...])) and run by the Executor,
against NumPy oracles; parameters as named persistable inputs; dropout at run time; trace-time errors."""
import math

import numpy as np
import pytest

import runtime as rt
from runtime import nn, tracing
from runtime.nn import functional as F

RNG = np.random.default_rng(99)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def trace(fn, *specs):
    program, _, _ = rt.trace(fn, [rt.InputSpec(shape, dtype, f"x{i}") for i, (shape, dtype) in enumerate(specs)])
    return program


def run(program, *arrays):
    return [o.numpy() for o in rt.Executor().run(program, {f"x{i}": a for i, a in enumerate(arrays)})]


# --- oracles (independent of the kernels: direct formulas, loops over kernel offsets) -----------

def conv2d_ref(x, w, b, stride, pad, groups=1):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    return out + b[None, :, None, None]


def max_pool_ref(x, k):
    n, c, h, w = x.shape
    return x[:, :, :h // k * k, :w // k * k].reshape(n, c, h // k, k, w // k, k).max(axis=(3, 5))


def softmax_ref(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm_ref(x, w, b):
    x = x.astype(np.float64)
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b


W, B = randn(5, 6), randn(5)
CW, CB = randn(6, 2, 3, 3), randn(6)
EMB = randn(9, 4)
LN_W, LN_B = randn(6), randn(6)

# name, traced function, input specs (shape with None, dtype), inputs for a batch of n, oracle, op type
CASES = [
    ("relu", F.relu, [((None, 6), "float32")], lambda n: [randn(n, 6)], lambda x: np.maximum(x, 0), "relu"),
    ("sigmoid", F.sigmoid, [((None, 6), "float32")], lambda n: [randn(n, 6)], lambda x: 1 / (1 + np.exp(-x)),
     "sigmoid"),
    ("gelu", F.gelu, [((None, 6), "float32")], lambda n: [randn(n, 6)],
     np.vectorize(lambda v: v * 0.5 * (1 + math.erf(v / math.sqrt(2)))), "gelu"),
    ("gelu_tanh", lambda x: F.gelu(x, "tanh"), [((None, 6), "float32")], lambda n: [randn(n, 6)],
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), "gelu"),
    ("softmax", lambda x: F.softmax(x, axis=1), [((None, 3, 4), "float32")], lambda n: [randn(n, 3, 4)],
     lambda x: softmax_ref(x, 1), "softmax"),
    ("log_softmax", F.log_softmax, [((None, 6), "float32")], lambda n: [randn(n, 6)],
     lambda x: np.log(softmax_ref(x)), "log_softmax"),
    ("linear", lambda x: F.linear(x, rt.tensor(W), rt.tensor(B)), [((None, 6), "float32")],
     lambda n: [randn(n, 6)], lambda x: x @ W.T + B, "linear"),
    ("conv2d", lambda x: F.conv2d(x, rt.tensor(CW), rt.tensor(CB), stride=2, padding=1, groups=2),
     [((None, 4, 7, 6), "float32")], lambda n: [randn(n, 4, 7, 6)], lambda x: conv2d_ref(x, CW, CB, 2, 1, 2),
     "conv2d"),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), [((None, 3, 6, 5), "float32")], lambda n: [randn(n, 3, 6, 5)],
     lambda x: max_pool_ref(x, 2), "max_pool2d"),
    ("layer_norm", lambda x: F.layer_norm(x, 6, rt.tensor(LN_W), rt.tensor(LN_B)), [((None, 2, 6), "float32")],
     lambda n: [randn(n, 2, 6)], lambda x: layer_norm_ref(x, LN_W, LN_B), "layer_norm"),
    ("cross_entropy", F.cross_entropy, [((None, 5), "float32"), ((None,), "int64")],
     lambda n: [randn(n, 5) * 3, RNG.integers(0, 5, n)],
     lambda x, y: -np.log(softmax_ref(x.astype(np.float64)))[np.arange(len(y)), y].mean(), "cross_entropy"),
    ("embedding", lambda ids: F.embedding(ids, rt.tensor(EMB)), [((None, 3), "int64")],
     lambda n: [RNG.integers(0, 9, (n, 3))], lambda ids: EMB[ids], "embedding"),
    ("flatten", lambda x: F.flatten(x, 1), [((None, 3, 4), "float32")], lambda n: [randn(n, 3, 4)],
     lambda x: x.reshape(len(x), 12), "reshape"),
]


@pytest.mark.parametrize("name,fn,specs,inputs,oracle,op_type", CASES, ids=[c[0] for c in CASES])
def test_traced_op_matches_oracle_for_any_batch(name, fn, specs, inputs, oracle, op_type):
    program = trace(fn, *specs)
    assert op_type in [op.type for op in program.ops()]
    assert "constant" not in [op.type for op in program.ops()]
    (out_var,) = program.outputs
    for n in (2, 5):
        arrays = inputs(n)
        (out,) = run(program, *arrays)
        expected = oracle(*arrays)
        assert out.shape == np.shape(expected)
        assert out_var.static_shape == tuple(-1 if i == 0 else d for i, d in enumerate(out.shape))
        assert out.dtype == out_var.dtype
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        eager = fn(*map(rt.tensor, arrays)).numpy()
        np.testing.assert_array_equal(out, eager)


def test_infer_rules_keep_unknown_dims_unknown():
    program = trace(lambda x: F.conv2d(x, rt.tensor(CW), rt.tensor(CB), padding=1, groups=2),
                    ((None, 4, None, None), "float32"))
    assert program.outputs[0].static_shape == (-1, 6, -1, -1)
    (out,) = run(program, x := randn(1, 4, 5, 3))
    np.testing.assert_allclose(out, conv2d_ref(x, CW, CB, 1, 1, 2), rtol=1e-5, atol=1e-5)
    program = trace(lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True), ((None, 2, 7, None), "float32"))
    assert program.outputs[0].static_shape == (-1, 2, 3, -1)
    program = trace(lambda x, y: F.cross_entropy(x, y, reduction="none"), ((None, 4, 3), "float32"),
                    ((None, 3), "int64"))
    assert program.outputs[0].static_shape == (-1, 3)


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_parameters_are_named_persistable_inputs_not_constants():
    model = MLP()
    with tracing.parameter_names(model.named_parameters()):
        program, _, _ = rt.trace(lambda x: model(x), [rt.InputSpec([None, 8], "float32", "x")])
    persistable = {v.name: v for v in program.inputs if v.persistable}
    # the IR spells the dots of "fc1.weight" as underscores in Variable names; accept either
    assert {n.replace(".", "_") for n in persistable} == {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"}
    assert [v.name for v in program.inputs if not v.persistable] == ["x"]
    assert all(op.type != "constant" for op in program.ops())
    assert {id(p) for p in program.parameters.values()} == {id(p) for p in model.parameters()}
    weight_var = next(v for n, v in persistable.items() if n.replace(".", "_") == "fc1_weight")
    assert weight_var.static_shape == (16, 8)

    x = randn(4, 8)
    (before,) = rt.Executor().run(program, {"x": x})
    np.testing.assert_allclose(before.numpy(), model(rt.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    model.fc1.weight.data = model.fc1.weight.data * 2           # change a weight after tracing
    (after,) = rt.Executor().run(program, {"x": x})
    assert not np.allclose(after.numpy(), before.numpy())
    np.testing.assert_allclose(after.numpy(), model(rt.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_reaches_an_already_traced_program():
    rt.seed(5)
    source, model = MLP(), MLP()
    program, _, _ = rt.trace(lambda x: model(x), [rt.InputSpec([None, 8], "float32", "x")])
    x = randn(3, 8)
    model.load_state_dict(source.state_dict())
    (out,) = rt.Executor().run(program, {"x": x})
    np.testing.assert_allclose(out.numpy(), source(rt.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_cnn_with_dynamic_batch():
    rt.seed(0)
    model = nn.Sequential(nn.Conv2D(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 10), nn.LayerNorm(10), nn.Dropout(0.5))
    model.eval()
    with tracing.parameter_names(model.named_parameters()):
        program, _, _ = rt.trace(lambda x: model(x), [rt.InputSpec([None, 1, 8, 8], "float32", "x")])
    types = [op.type for op in program.ops()]
    assert [t for t in types if t not in ("dim",)] == ["conv2d", "relu", "max_pool2d", "reshape", "linear",
                                                      "layer_norm"]
    assert program.outputs[0].static_shape == (-1, 10)
    p = {n: v.numpy() for n, v in model.state_dict().items()}
    for n in (1, 3):
        x = randn(n, 1, 8, 8)
        h = np.maximum(conv2d_ref(x, p["0.weight"], p["0.bias"], 1, 1), 0)
        h = max_pool_ref(h, 2).reshape(n, -1) @ p["4.weight"].T + p["4.bias"]
        ref = layer_norm_ref(h, p["5.weight"], p["5.bias"])
        (out,) = rt.Executor().run(program, {"x": x})
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_dropout_draws_a_new_mask_each_run():
    drop = nn.Dropout(0.5)
    program, _, _ = rt.trace(lambda x: drop(x), [rt.InputSpec([None, 64], "float32", "x")])
    assert [op.type for op in program.ops()] == ["dropout"]
    x = np.ones((8, 64), np.float32)
    ex = rt.Executor()
    rt.seed(3)
    first = ex.run(program, {"x": x})[0].numpy()
    second = ex.run(program, {"x": x})[0].numpy()
    rt.seed(3)
    again = ex.run(program, {"x": x})[0].numpy()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, again)
    assert set(np.unique(first).tolist()) == {0.0, 2.0}
    drop.eval()
    program, _, _ = rt.trace(lambda x: drop(x), [rt.InputSpec([None, 64], "float32", "x")])
    assert "dropout" not in [op.type for op in program.ops()]
    np.testing.assert_array_equal(rt.Executor().run(program, {"x": x})[0].numpy(), x)


def test_only_dropout_is_impure():
    # passes may merge or drop pure ops; two dropouts must never become one
    ops = ["relu", "sigmoid", "gelu", "softmax", "log_softmax", "linear", "conv2d", "max_pool2d", "layer_norm",
           "cross_entropy", "embedding"]
    assert all(rt.get_op(name).pure for name in ops)
    assert not rt.get_op("dropout").pure


def test_shape_errors_surface_while_tracing():
    with pytest.raises(ValueError, match="in_features=5"):
        trace(lambda x: nn.Linear(5, 2)(x), ((None, 4), "float32"))
    with pytest.raises(ValueError, match="input has 3 channels"):
        trace(lambda x: nn.Conv2D(2, 4, 3)(x), ((None, 3, 8, 8), "float32"))
    with pytest.raises(ValueError, match="class-index targets"):
        trace(F.cross_entropy, ((None, 4), "float32"), ((None, 2), "int64"))
    with pytest.raises(TypeError, match="float64 and weight dtype float32"):
        trace(lambda x: nn.Linear(4, 2)(x), ((None, 4), "float64"))


def test_run_time_errors_name_the_op():
    program = trace(lambda ids: F.embedding(ids, rt.tensor(EMB)), ((None,), "int64"))
    with pytest.raises(IndexError, match=r"out of range for 9 embeddings.*while running op 'embedding'"):
        run(program, np.array([1, 9]))


def test_nn_programs_survive_a_json_round_trip():
    rt.seed(2)
    model = nn.Sequential(nn.Conv2D(2, 3, 3, stride=(2, 1), padding=1), nn.MaxPool2D(2, 1),
                          nn.Flatten(), nn.Linear(3 * 3 * 5, 4), nn.GELU("tanh"))
    with tracing.parameter_names(model.named_parameters()):
        program, _, _ = rt.trace(lambda x: F.softmax(model(x)), [rt.InputSpec([None, 2, 8, 6], "float32", "x")])
    text = str(program)
    assert "conv2d(x, " in text and "stride=(2, 1)" in text and "approximate='tanh'" in text
    loaded = rt.Program.from_json(program.to_json())
    x = randn(2, 2, 8, 6)
    feed = {"x": x, **{name: tensor for name, tensor in program.parameters.items()}}
    (expected,) = rt.Executor().run(program, {"x": x})
    (out,) = rt.Executor().run(loaded, feed)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_allclose(expected.numpy(), F.softmax(model(rt.tensor(x))).numpy(), rtol=1e-6)
