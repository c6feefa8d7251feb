"""ONNX export, checked by onnx.checker (full_check) and run by onnxruntime against the Program.

Every golden case, corpus function and example whose ops all have an ONNX lowering
round-trips: onnxruntime's outputs equal the executor's (dtype, shape, values at
rtol 1e-5) on inputs of several sizes. Those that cannot be exported are listed in
NOT_EXPORTABLE with the reason, and must fail with an ExportError naming the op and
the user's line. Every conformance sample of every lowered op runs through
onnxruntime against its NumPy oracle (ops refusing some inputs are in PARTIAL).
"""
import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import runtime as rt  # noqa: E402
import transpiler  # noqa: E402
from runtime.export import ExportError  # noqa: E402
from runtime.onnx import export_onnx, model_proto  # noqa: E402
from runtime.ops.registry import REGISTRY  # noqa: E402
from transpiler import InputSpec, to_static  # noqa: E402
from transpiler.cli import main as cli_main  # noqa: E402
from transpiler.deploy import program_for  # noqa: E402

from tests.conversion import oracle  # noqa: E402
from tests.conversion.corpus import CASES as CORPUS  # noqa: E402
from tests.golden.cases import CASES as GOLDEN  # noqa: E402
from tests.unit.test_ops_conformance import CASES as SAMPLES, _check_value, _np_args, _trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# golden case / corpus function -> why it has no ONNX form (ONNX graphs cannot print or raise)
NOT_EXPORTABLE = {
    "print_tensor": "print",                 # a side effect with no ONNX counterpart
    "assert_tensor": "assert",               # an ONNX graph cannot raise
    "var_created_in_loop": "undefined",      # raises UnboundLocalError when the loop ran zero times
}
# lowered ops that refuse some of their conformance samples, and which
PARTIAL = {
    "setitem": "integer-array indices (a repeated index is unspecified in ONNX)",
    "conj": "complex inputs", "real": "complex inputs", "imag": "complex inputs",
    "cumulative": "kind='prod' (no ONNX operator)",
    "repeat": "per-element repeat counts",
    "linalg_diagonal": "matrix dims unknown while tracing", "linalg_trace": "matrix dims unknown while tracing",
    "scatter": "reduce='set' (ONNX leaves repeated indices unspecified)",
    "max_pool2d": "integer inputs (no onnxruntime kernel)",
    **{name: "float64 (no onnxruntime kernel)" for name in
       ("asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "gelu")},
}


def session(model):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    data = model.SerializeToString() if hasattr(model, "SerializeToString") else Path(model).read_bytes()
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def assert_runs_like_program(program, feeds, path):
    """Export `program` to `path`; onnxruntime's outputs == the executor's for every feed."""
    written = export_onnx(program, path)
    model = onnx.load(written)
    onnx.checker.check_model(model, full_check=True)
    sess = session(written)
    for feed in feeds:
        want = rt.Executor().run(program, feed)
        got = sess.run(None, feed)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            w = w.numpy()
            assert (g.dtype, g.shape) == (w.dtype, w.shape), \
                f"onnx {g.dtype}{list(g.shape)} vs {w.dtype}{list(w.shape)}"
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return model


def random_feeds(program, sizes=(1, 4, 7)):
    feeds = []
    for k, size in enumerate(sizes):
        rng = np.random.default_rng(k)
        feeds.append({v.name: rng.standard_normal(tuple(size if d == -1 else d for d in v.static_shape))
                      .astype(v.dtype) for v in program.inputs if not v.persistable})
    return feeds


def golden_program(name):
    case = GOLDEN[name]
    return to_static(case["fn"]).get_program(*case["args"])


def corpus_program(case):
    arrays = oracle.inputs(case, 0)
    program = to_static(case["fn"]).get_program(*[rt.tensor(a) for a in arrays], *case["scalars"])
    names = [v.name for v in program.inputs if not v.persistable]
    return program, [dict(zip(names, oracle.inputs(case, seed))) for seed in (0, 1, 2)]


def example(name):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"onnx_examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_program(name):
    """The example's model as transpiler.export_onnx sees it (its own input_spec; mlp's is given here)."""
    module = example(name)
    rt.seed(0)
    if name == "control_flow":
        return program_for(module.shrink_then_squash)
    if name == "mlp":
        return program_for(module.MLP(), [InputSpec([None, 512], "float32", "x")])
    layer = {"layer_forward": "Classifier", "deploy": "Scorer", "greedy_decoder": "GreedyDecoder"}[name]
    return program_for(getattr(module, layer)())


def assert_refused(program, op_type, tmp_path):
    with pytest.raises(ExportError) as info:
        export_onnx(program, tmp_path / "m.onnx")
    origin = next(op.origin for op in program.ops() if op.type == op_type)
    assert f"op '{op_type}' at {origin}" in str(info.value)
    assert not (tmp_path / "m.onnx").exists()


# --- every golden case, corpus function and example -------------------------------------------

@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_case(name, tmp_path):
    program = golden_program(name)
    if name in NOT_EXPORTABLE:
        assert_refused(program, NOT_EXPORTABLE[name], tmp_path)
    else:
        assert_runs_like_program(program, random_feeds(program), tmp_path / "m.onnx")


@pytest.mark.parametrize("case", CORPUS, ids=[c["fn"].__name__ for c in CORPUS])
def test_corpus_function(case, tmp_path):
    program, feeds = corpus_program(case)
    if case["fn"].__name__ in NOT_EXPORTABLE:
        assert_refused(program, NOT_EXPORTABLE[case["fn"].__name__], tmp_path)
    else:
        assert_runs_like_program(program, feeds, tmp_path / "m.onnx")


@pytest.mark.parametrize("name", ["control_flow", "deploy", "greedy_decoder", "layer_forward", "mlp"])
def test_example(name, tmp_path):
    program = example_program(name)
    feeds = random_feeds(program)
    if name == "control_flow":             # loops of 0 to several steps, both branches
        feeds = [{"x": np.full((b, 4), v, np.float32)} for b, v in ((2, 3.0), (5, -0.1), (1, 40.0))]
    assert_runs_like_program(program, feeds, tmp_path / "m.onnx")


class ConvNet(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.pool = rt.nn.Conv2D(3, 4, 3, padding=1), rt.nn.BatchNorm2D(4), rt.nn.MaxPool2D(2)
        self.fc = rt.nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        h = self.pool(rt.nn.functional.relu(self.bn(self.conv(x))))
        return self.fc(h.reshape(h.shape[0], -1))


class Recurrent(rt.nn.Layer):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(rt.nn, kind)(6, 8)

    def forward(self, x):
        return self.rnn(x)


LAYERS = {   # name -> (make the layer, input spec); a recurrent layer's time loop is a Loop with a 0-d counter
    "conv_bn_pool": (ConvNet, InputSpec([None, 3, 8, 8], "float32", "x")),
    "gru": (lambda: Recurrent("GRU"), InputSpec([None, 2, 6], "float32", "x")),
    "lstm": (lambda: Recurrent("LSTM"), InputSpec([None, 2, 6], "float32", "x")),
    "transformer": (lambda: rt.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True),
                    InputSpec([2, None, 8], "float32", "x")),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer(name, tmp_path):
    rt.seed(0)
    make, spec = LAYERS[name]
    layer = make()
    layer.eval()
    program = program_for(layer, [spec])
    assert_runs_like_program(program, random_feeds(program, sizes=(1, 5)), tmp_path / "m.onnx")


def test_not_exportable_list_is_exact():
    """Every entry names a real case whose Program holds the op it blames."""
    names = set(GOLDEN) | {c["fn"].__name__ for c in CORPUS}
    for name, op_type in NOT_EXPORTABLE.items():
        assert name in names and REGISTRY[op_type].onnx is None
        if name in GOLDEN:
            assert op_type in {op.type for op in golden_program(name).ops()}


# --- every conformance sample of every lowered op ---------------------------------------------

LOWERED = [p for p in SAMPLES if REGISTRY[p.values[0]].onnx is not None]


@pytest.mark.parametrize("name,sample", LOWERED, ids=[p.id for p in LOWERED])
def test_op_sample_through_onnxruntime(name, sample):
    expected = np.asarray(sample.oracle(*_np_args(sample), **sample.kwargs))
    for dynamic in (False, True):
        if dynamic and not (sample.dynamic and any(isinstance(a, np.ndarray) and a.ndim for a in sample.args)):
            continue
        program, _, feed = _trace(sample, dynamic)
        try:
            model = model_proto(program)
        except ExportError as e:
            assert name in PARTIAL, f"{name} has an ONNX lowering but refused a sample: {e}"
            assert f"op '{name}' at " in str(e)
            return
        (got,) = session(model).run(None, feed)
        _check_value(got, expected, sample, f"onnxruntime {name}{' (dynamic)' if dynamic else ''}")


# --- structure of the model --------------------------------------------------------------------

def test_cond_and_while_become_if_and_loop_with_named_dims(tmp_path):
    program = example_program("control_flow")
    model = assert_runs_like_program(program, random_feeds(program), tmp_path / "m.onnx")
    assert {"If", "Loop"} <= {n.op_type for n in model.graph.node}
    (x,) = model.graph.input
    dims = x.type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["x_dim0", 4]
    loop = next(n for n in model.graph.node if n.op_type == "Loop")
    assert loop.input[0] == ""                        # no trip count: the data-dependent test decides
    body = next(a.g for a in loop.attribute if a.name == "body")
    assert [i.name for i in body.input][:2] == ["iteration", "running"] and len(body.output) == len(loop.output) + 1


def test_tensor_array_is_a_loop_carried_sequence(tmp_path):
    program = golden_program("list_append_in_tensor_loop")
    model = assert_runs_like_program(program, random_feeds(program), tmp_path / "m.onnx")
    loop = next(n for n in model.graph.node if n.op_type == "Loop")
    body = next(a.g for a in loop.attribute if a.name == "body")
    assert "SequenceInsert" in {n.op_type for n in body.node}
    assert any(o.type.HasField("sequence_type") for o in body.output)
    assert "ConcatFromSequence" in {n.op_type for n in model.graph.node}


def test_parameters_are_initializers(tmp_path):
    program = example_program("layer_forward")
    model = assert_runs_like_program(program, random_feeds(program), tmp_path / "m.onnx")
    params = {v.name for v in program.inputs if v.persistable}
    assert params == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert {t.name for t in model.graph.initializer} == params
    assert [i.name for i in model.graph.input] == ["x"]
    (out,) = model.graph.output
    assert [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim] == ["x_dim0", 3]
    weight = next(t for t in model.graph.initializer if t.name == "fc1.weight")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weight), program.parameters["fc1.weight"].numpy())


def test_export_from_a_loaded_program_and_opset(tmp_path):
    module = example("deploy")
    rt.seed(0)
    model = module.Scorer()
    transpiler.save(model, tmp_path / "scorer")
    loaded = transpiler.load(tmp_path / "scorer")
    path = transpiler.export_onnx(loaded, tmp_path / "scorer", opset=20)
    assert path == str(tmp_path / "scorer.onnx")
    assert onnx.load(path).opset_import[0].version == 20
    x = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)
    (got,) = session(path).run(None, {"x": x})
    np.testing.assert_allclose(got, loaded(x=x).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ExportError, match="opset 17 is too old"):
        transpiler.export_onnx(loaded, tmp_path / "old.onnx", opset=17)


# --- exact semantics: NumPy's rules, not ONNX's defaults ------------------------------------------

def integer_semantics(a, b):
    return (a // b, a % b, a // (b - b), a % (b - b), a / b, rt.floor_divide(a, 3), a % -3, -a // 2, a * 2.5, a > 1.5,
            rt.sum(a > 0), rt.mean(a, axis=0, keepdims=True), rt.max(a, axis=1), a.astype("bool") & (b > 0),
            rt.where(a > 0, a, 0.5), (a + True), rt.abs(a) ** 2, (a > 0) + (b > 0), (a > 0) * (b < 0),
            rt.maximum(a > 1, b > 1), rt.minimum(a > 1, b > 1), rt.abs(a > 2), (a > 0) < (b > 0))


def float_semantics(x, y):
    return (x // y, x % y, (y * 0 + 1) // 0.1, x // (y - y), rt.remainder(x, -0.75), x[::-1, 1:], x[-1],
            x[None, ..., ::2], x[..., -2:, None],
            x[1:-1:2, ::-2], rt.sum(x, axis=(0, 1), keepdims=True), rt.prod(x, axis=-1), rt.any(x > 1, axis=0),
            rt.all(x > -3), rt.argmax(x, keepdims=True), rt.cumsum(x), x.astype("float64") * y, rt.log1p(x * 1e-9),
            rt.expm1(x * 1e-9), rt.std(x, axis=0, correction=1), rt.clip(x, -0.5, None), rt.trunc(x * 3),
            rt.setitem(x, (1, slice(None)), 7.0), rt.setitem(x, -1, y[0]), x[x > 0], x[[0, -1], 1:], x[:, [3, 0]],
            x[y > 0, None], rt.setitem(x, x > 1, 0.0), rt.atan2(x, x[::-1] - 1),
            rt.setitem(x, (slice(None), slice(1, None, 2)), y[:, :2]),
            rt.setitem(x, (Ellipsis, -1), -2.0))


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("fn,dtypes", [(integer_semantics, ("int32", "int64")),
                                       (float_semantics, ("float32", "float64"))])
def test_numpy_semantics_survive_export(fn, dtypes, tmp_path):
    program = rt.trace(fn, [InputSpec([None, 4], dtypes[0], "a"), InputSpec([None, 4], dtypes[1], "b")])[0]
    feeds = []
    for seed, rows in ((0, 5), (1, 3)):
        rng = np.random.default_rng(seed)
        a = rng.integers(-9, 10, (rows, 4)) if dtypes[0].startswith("int") else rng.standard_normal((rows, 4)) * 3
        b = rng.integers(1, 5, (rows, 4)) * rng.choice([-1, 1], (rows, 4)) if dtypes[1].startswith("int") \
            else rng.uniform(0.5, 2, (rows, 4)) * rng.choice([-1, 1], (rows, 4))
        feeds.append({"a": a.astype(dtypes[0]), "b": b.astype(dtypes[1])})
    assert_runs_like_program(program, feeds, tmp_path / "m.onnx")


# --- errors ---------------------------------------------------------------------------------------

def test_op_without_lowering_names_the_op_and_the_users_line(tmp_path):
    def f(x):
        y = rt.unique_values(x)           # no ONNX lowering
        return y * 2
    line = inspect.getsourcelines(f)[1] + 1
    program = rt.trace(f, [InputSpec([3], "float32", "x")])[0]
    with pytest.raises(ExportError, match=rf"op 'unique_values' at {__file__}:{line} to ONNX: it has no ONNX lowering"):
        export_onnx(program, tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()


# --- the command line ------------------------------------------------------------------------------

def test_cli_export_format_onnx(tmp_path, capsys):
    source = tmp_path / "net.py"
    source.write_text("import runtime as rt\n\ndef net(x):\n    if x.sum() > 0:\n        x = x * 2\n"
                      "    return rt.tanh(x)\n")
    status = cli_main(["export", f"{source}::net", "--spec", "x:float32[None,3]", "--format", "onnx",
                       "--out", str(tmp_path / "out" / "net")])
    assert status == 0, capsys.readouterr()
    path = tmp_path / "out" / "net.onnx"
    assert f"wrote {path}" in capsys.readouterr().out
    x = np.array([[1, -2, 0.5], [3, 0, -1]], np.float32)
    (got,) = session(path).run(None, {"x": x})
    np.testing.assert_allclose(got, np.tanh(x * 2), rtol=1e-6)
    assert cli_main(["export", f"{source}::net", "--spec", "x:float32[None,3]", "--format", "program",
                     "--out", str(tmp_path / "saved")]) == 0
    status = cli_main(["export", str(tmp_path / "saved.program.json"), "--format", "onnx",
                       "--out", str(tmp_path / "s")])
    assert status == 0, capsys.readouterr()
    (from_saved,) = session(tmp_path / "s.onnx").run(None, {"x": x})
    np.testing.assert_array_equal(from_saved, got)
    bad = tmp_path / "bad.py"
    bad.write_text("import runtime as rt\n\ndef net(x):\n    return rt.unique_values(x)\n")
    status = cli_main(["export", f"{bad}::net", "--spec", "x:float32[3]", "--format", "onnx",
                       "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert status == 1 and f"op 'unique_values' at {bad}:4" in err, err


@pytest.mark.parametrize("name", ["nested_while", "greedy_decoder"])
def test_values_sharing_one_hint_export_apart(name, tmp_path):
    """A name is a hint: with every value but the inputs hinted `v`, the model names them apart
    (values are bound by identity) and computes what the Program computes."""
    program = golden_program(name)
    feeds = random_feeds(program)
    want = [[t.numpy() for t in rt.Executor().run(program, feed)] for feed in feeds]
    hinted = program.clone()
    inputs = {id(v) for v in hinted.inputs}
    for var in hinted.all_vars():
        if id(var) not in inputs:
            var.name = "v"
    assert "v_1" in str(hinted)
    assert_runs_like_program(hinted, feeds, tmp_path / "m.onnx")
    for feed, expected in zip(feeds, want):
        for got, w in zip(rt.Executor().run(hinted, feed), expected):
            np.testing.assert_array_equal(got.numpy(), w)
