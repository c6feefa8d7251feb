"""Save/load round trips: `load_program(save_program(p))` runs like `p`, prints like `p`.

Programs are traced with `rt.trace` over functions using rt.cond / rt.while_loop,
tensor arrays and eager weight Tensors (which become persistable parameters).
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runtime as rt
from runtime.deploy import LoadedProgram, load_program, program_paths, save_program
from runtime.serialization import program_from_json, program_to_dict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RNG = np.random.default_rng(0)
W1 = rt.tensor(RNG.standard_normal((4, 8)).astype(np.float32))
W2 = rt.tensor(RNG.standard_normal((8, 3)).astype(np.float32))
B2 = rt.tensor(np.linspace(-1, 1, 3).astype(np.float32))


def loop_and_branch(x):
    h = rt.tanh(rt.matmul(x, W1))
    i = rt.zeros((), "int64")
    h, i = rt.while_loop(lambda h, i: rt.logical_and(rt.sum(rt.abs(h)) < 200.0, i < 10),
                         lambda h, i: (h * 1.5, i + 1), (h, i))
    out = rt.cond(rt.mean(h) > 0, lambda: h, lambda: -h)
    return {"out": out, "rows": rt.sum(out, axis=1, keepdims=True), "steps": i, "tag": "v1"}


def mlp(x):
    h = rt.maximum(rt.matmul(x, W1), 0.0)
    logits = rt.matmul(h, W2) + B2
    e = rt.exp(logits - rt.max(logits, axis=-1, keepdims=True))
    probs = e / rt.sum(e, axis=-1, keepdims=True)
    return probs, rt.argmax(probs, axis=1)


def nested_control(x, n):
    def body(acc, k):
        acc = rt.cond(k % 2 == 0, lambda: acc + rt.mean(x, axis=0), lambda: acc * 0.5)
        return acc, k + 1
    acc, k = rt.while_loop(lambda acc, k: k < n, body, (rt.zeros((4,), "float32"), rt.zeros((), "int32")))
    return [acc, (k, x[:, ::-1], rt.clip(x, -float("inf"), 0.5))]


def tensor_array(x):
    arr = rt.array_new((4,), "float32")
    arr, i = rt.while_loop(lambda arr, i: i < rt.shape(x)[0],
                           lambda arr, i: (rt.array_append(arr, x[i] * 2.0), i + 1), (arr, rt.zeros((), "int64")))
    return rt.stack(arr), rt.array_length(arr)


def literals(x):
    z = rt.multiply(x, 1j)
    rt.assert_(rt.all(rt.isfinite(x)), "inputs must be finite")
    return x, rt.abs(z), 7, None


CASES = {
    "loop_and_branch": (loop_and_branch, [rt.InputSpec([None, 4], "float32", "x")]),
    "mlp": (mlp, [rt.InputSpec([None, 4], "float32", "x")]),
    "nested_control": (nested_control, [rt.InputSpec([None, 4], "float32", "x"), rt.InputSpec([], "int32", "n")]),
    "tensor_array": (tensor_array, [rt.InputSpec([None, 4], "float32", "x")]),
    "literals": (literals, [rt.InputSpec([2, 4], "float32", "x")]),
}


def feed_for(specs, batch=3):
    feed = {}
    for spec in specs:
        if spec.dtype.kind == "i":
            feed[spec.name] = np.array(5, dtype=spec.dtype)
        else:
            shape = [batch if d == -1 else d for d in spec.shape]
            feed[spec.name] = RNG.standard_normal(shape).astype(spec.dtype)
    return feed


def assert_same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, rt.Tensor):
        assert isinstance(b, rt.Tensor) and a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    else:
        assert a == b


def traced(name):
    fn, specs = CASES[name]
    program, _, _ = rt.trace(fn, specs)
    return program, specs


def run_original(program, feed):
    outs = rt.Executor().run(program, feed)
    return rt.tracing.rebuild_outputs(program, outs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_same_outputs_and_text(name, tmp_path):
    program, specs = traced(name)
    json_path, npz_path = save_program(program, tmp_path / name)
    assert json_path.endswith(".program.json") and npz_path.endswith(".params.npz")
    loaded = load_program(tmp_path / name)
    assert isinstance(loaded, LoadedProgram)
    assert str(loaded.program) == str(program)
    assert program_to_dict(loaded.program) == program_to_dict(program, origins="relative")    # no absolute paths
    assert loaded.input_names == tuple(v.name for v in program.inputs if not v.persistable)
    for batch in (1, 3, 6):
        feed = feed_for(specs, batch if -1 in specs[0].shape else 2)
        assert_same(loaded(**feed), run_original(program, feed))
        assert_same(loaded(*[feed[n] for n in loaded.input_names]), run_original(program, feed))


def test_parameters_in_json_and_npz(tmp_path):
    program, _ = traced("mlp")
    json_path, npz_path = save_program(program, tmp_path / "mlp")
    doc = json.loads(open(json_path).read())
    table = {p["name"]: (p["shape"], p["dtype"]) for p in doc["parameters"]}
    assert sorted(table.values()) == sorted([([4, 8], "float32"), ([8, 3], "float32"), ([3], "float32")])
    with np.load(npz_path, allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(table)
        for name, value in program.parameters.items():
            np.testing.assert_array_equal(npz[name], value.numpy())
    state = load_program(tmp_path / "mlp").state_dict()
    assert sorted(state) == sorted(table)
    for name, value in state.items():
        assert isinstance(value, rt.Tensor)
        np.testing.assert_array_equal(value.numpy(), program.parameters[name].numpy())


def test_saves_current_parameter_values(tmp_path):
    program, specs = traced("mlp")
    name = next(iter(program.parameters))
    program.parameters[name] = rt.tensor(np.zeros(program.parameters[name].shape, np.float32))
    save_program(program, tmp_path / "m")
    loaded = load_program(tmp_path / "m")
    np.testing.assert_array_equal(loaded.state_dict()[name].numpy(), 0)
    feed = feed_for(specs)
    assert_same(loaded(**feed), run_original(program, feed))


def test_paths_accept_either_suffix(tmp_path):
    assert program_paths(tmp_path / "m.program.json") == program_paths(tmp_path / "m.params.npz") \
        == (str(tmp_path / "m.program.json"), str(tmp_path / "m.params.npz"))
    program, specs = traced("mlp")
    save_program(program, str(tmp_path / "m.program.json"))
    assert sorted(os.listdir(tmp_path)) == ["m.params.npz", "m.program.json"]
    feed = feed_for(specs)
    assert_same(load_program(tmp_path / "m.params.npz")(**feed), run_original(program, feed))


def test_call_errors_name_the_inputs(tmp_path):
    program, _ = traced("nested_control")
    save_program(program, tmp_path / "m")
    loaded = load_program(tmp_path / "m")
    x = np.ones((2, 4), np.float32)
    assert loaded.input_names == ("x", "n")
    assert [s.shape for s in loaded.input_specs] == [(-1, 4), ()]
    with pytest.raises(TypeError, match=r"missing input\(s\) \['n'\]"):
        loaded(x)
    with pytest.raises(TypeError, match="multiple values for input 'x'"):
        loaded(x, x=x)
    with pytest.raises(TypeError, match="'y' is not an input"):
        loaded(x, n=np.int32(1), y=1)
    with pytest.raises(TypeError, match="takes 2 input"):
        loaded(x, np.int32(1), 3)
    with pytest.raises(rt.FeedError, match="expected dtype float32, got float64"):
        loaded(x.astype(np.float64), n=np.int32(1))
    with pytest.raises(rt.FeedError, match=r"expected shape \[None, 4\]"):
        loaded(np.ones((2, 5), np.float32), n=np.int32(1))


def test_program_run_errors_keep_the_op(tmp_path):
    program, _ = traced("literals")
    save_program(program, tmp_path / "m")
    loaded = load_program(tmp_path / "m")
    with pytest.raises(AssertionError, match="inputs must be finite"):
        loaded(np.full((2, 4), np.nan, np.float32))


def test_json_is_readable_and_versioned(tmp_path):
    program, _ = traced("loop_and_branch")
    json_path, _ = save_program(program, tmp_path / "m")
    text = open(json_path).read()
    doc = json.loads(text)
    assert doc["format"] == "dy2static.program" and doc["version"] == 2
    assert "\n" in text and '"type": "while"' in text
    assert program_to_dict(program_from_json(text)) == program_to_dict(program, origins="relative")


def test_clone_is_an_equal_structural_copy_sharing_parameters():
    program, _ = traced("loop_and_branch")
    copy = program.clone()
    assert copy == program and copy is not program
    assert copy.parameters == program.parameters


SAVER = textwrap.dedent("""
    import sys
    import numpy as np
    import runtime as rt
    from runtime.deploy import save_program

    rng = np.random.default_rng(1)
    w = rt.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    v = rt.tensor(rng.standard_normal((8,)).astype(np.float32))

    def f(x):
        h = rt.tanh(rt.matmul(x, w))
        i = rt.zeros((), "int64")
        h, i = rt.while_loop(lambda h, i: rt.logical_and(rt.max(h) < 3.0, i < 5),
                             lambda h, i: (h + v, i + 1), (h, i))
        return rt.cond(rt.sum(h) > 0, lambda: h, lambda: h * -1.0), i

    program, _, _ = rt.trace(f, [rt.InputSpec([None, 4], "float32", "x")])
    save_program(program, "model")
    expected = {}
    for batch in (1, 3, 7):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        out, steps = rt.tracing.rebuild_outputs(program, rt.Executor().run(program, {"x": x}))
        expected[f"x{batch}"], expected[f"out{batch}"], expected[f"steps{batch}"] = x, out.numpy(), steps.numpy()
    np.savez("expected.npz", **expected)
""")

LOADER = textwrap.dedent("""
    import sys
    import numpy as np
    from runtime.deploy import load_program

    assert "f" not in sys.modules and "__main__" in sys.modules
    model = load_program("model")
    results = {}
    with np.load("expected.npz", allow_pickle=False) as expected:
        for batch in (1, 3, 7):
            out, steps = model(expected[f"x{batch}"])
            assert out.shape == (batch, 8), out.shape
            results[f"out{batch}"], results[f"steps{batch}"] = out.numpy(), steps.numpy()
    np.savez("results.npz", **results)
    print("loaded", model)
""")


def test_cross_process_save_then_load(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO)
    for script in (SAVER, LOADER):
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
    assert "loaded <LoadedProgram f(InputSpec([None, 4], 'float32', name='x')) on cpu>" in done.stdout
    with np.load(tmp_path / "expected.npz") as expected, np.load(tmp_path / "results.npz") as results:
        for batch in (1, 3, 7):
            np.testing.assert_array_equal(results[f"out{batch}"], expected[f"out{batch}"])
            np.testing.assert_array_equal(results[f"steps{batch}"], expected[f"steps{batch}"])


def test_save_refuses_what_load_would_refuse(tmp_path):
    program, _ = traced("loop_and_branch")
    program.new_block(program.global_block)          # a sub-block no op uses
    with pytest.raises(rt.ProgramFormatError, match=r"Program 'loop_and_branch' \(not saved\): block 5 is not used"):
        save_program(program, tmp_path / "m")
    assert os.listdir(tmp_path) == []


def test_save_checks_parameter_values(tmp_path):
    program, _ = traced("mlp")
    name = next(iter(program.parameters))
    program.parameters[name] = rt.tensor(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match=f"parameter '{name}' is float32\\[2, 2\\]"):
        save_program(program, tmp_path / "m")
    del program.parameters[name]
    with pytest.raises(ValueError, match=f"'{name}' has no value"):
        save_program(program, tmp_path / "m")


def test_an_interrupted_save_never_loads_with_wrong_parameters(tmp_path, monkeypatch):
    """Two saves of one Program with different weights; the second is interrupted after its parameters
    file is in place but before its Program file: load must refuse the mix, never run old JSON + new weights."""
    import runtime.deploy as deploy
    w = rt.tensor(np.ones((3,), np.float32))
    program, _, _ = rt.trace(lambda x: x * w, [rt.InputSpec([3], "float32", "x")])
    path = tmp_path / "m"
    save_program(program, path)
    np.testing.assert_array_equal(load_program(path)(x=np.ones(3, np.float32)).numpy(), np.ones(3))

    program.parameters[program.inputs[1].name] = rt.tensor(np.full((3,), 7.0, np.float32))
    real_write = deploy._atomic_write

    def crash_on_the_program_file(target, write):
        if str(target).endswith(".program.json"):
            raise KeyboardInterrupt("power cut")
        real_write(target, write)
    monkeypatch.setattr(deploy, "_atomic_write", crash_on_the_program_file)
    with pytest.raises(KeyboardInterrupt):
        save_program(program, path)
    monkeypatch.setattr(deploy, "_atomic_write", real_write)
    with pytest.raises(rt.ProgramFormatError, match="SHA-256"):
        load_program(path)
    save_program(program, path)              # a complete save loads again, with the new weights
    np.testing.assert_array_equal(load_program(path)(x=np.ones(3, np.float32)).numpy(), np.full(3, 7.0))


def nested_regions(x):
    """A loop holding a branch that holds a loop: blocks three deep, each owned by its op."""
    def outer_body(h, i):
        def inner(h):
            return rt.while_loop(lambda g, j: j < 3, lambda g, j: (g * 0.5 + x, j + 1),
                                 (h, rt.zeros((), "int64")))[0]
        h = rt.cond(rt.sum(h) > 0, lambda: inner(h), lambda: h - 1.0)
        return h, i + 1
    return rt.while_loop(lambda h, i: i < 4, outer_body, (x, rt.zeros((), "int64")))[0]


def test_nested_regions_round_trip_as_owned_blocks(tmp_path):
    program, _, _ = rt.trace(nested_regions, [rt.InputSpec([2, 3])])
    save_program(program, tmp_path / "nested")
    loaded = load_program(tmp_path / "nested").program
    assert str(loaded) == str(program)
    data = program_to_dict(loaded)
    assert [b["idx"] for b in data["blocks"]] == list(range(7))       # numbered when written, parents first
    assert all(b["parent"] < b["idx"] for b in data["blocks"][1:])
    for prog in (program, loaded):
        blocks = prog.blocks
        assert len(blocks) == 7 and blocks[0] is prog.global_block
        for op in prog.ops():
            for sub in op.sub_blocks():                 # the op's attrs hold the Block objects
                assert sub.parent is op.block and sub.program is prog
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    assert_same(rt.Executor().run(loaded, {"x0": x}), rt.Executor().run(program, {"x0": x}))


# --- files written before blocks were closed (format version 1) ----------------------------------

OPEN_BLOCKS_V1 = os.path.join(os.path.dirname(__file__), "data", "open_blocks_v1")   # data/make_open_blocks_v1.py


def _open_blocks_model(x):
    """What data/make_open_blocks_v1.py traced (at b52a1cd), run eagerly here as the oracle."""
    w = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)
    b = x.sum(axis=0)
    h = x
    for _ in range(3):
        h = np.tanh(h @ w) + b if h.sum() > 0 else h * np.float32(0.5) - x
    s, ys = np.zeros(3, np.float32), []
    for row in h:
        ys.append(s * np.float32(2.0))
        s = s + row * b
    return h, s, np.stack(ys)


def test_a_file_with_open_blocks_loads_closed_and_runs():
    """A version-1 file (sub-blocks read enclosing values by name) is closed as it is read: each region op
    reads those values as closure inputs, its blocks through closure params; it verifies, saves as the
    current version and computes what the traced function did."""
    with open(OPEN_BLOCKS_V1 + ".program.json") as f:
        assert json.load(f)["version"] == 1
    loaded = load_program(OPEN_BLOCKS_V1)
    program = loaded.program
    rt.verify(program)
    for op in program.ops():
        for block in op.sub_blocks():
            defined = {id(v) for v in block.params + block.closure}
            for inner in block.ops:
                assert all(id(v) in defined for v in inner.input_vars()), (inner, str(program))
                defined.update(id(o) for o in inner.outputs)
    loop = next(op for op in program.global_block.ops if op.sub_blocks())
    assert [v.name for v in loop.inputs] == ["x", "zeros", "const", "sum", "x"]    # state, then closure inputs
    assert [len(b.closure) for b in loop.sub_blocks()] == [3, 3]
    x = np.linspace(-2, 3, 12, dtype=np.float32).reshape(4, 3)
    for got, want in zip(loaded(x=x), _open_blocks_model(x)):
        np.testing.assert_allclose(np.asarray(got.numpy()), want, rtol=1e-5, atol=1e-6)
    again = program_from_json(json.dumps(program_to_dict(program)))
    assert program_to_dict(again)["version"] == 2 and str(again) == str(program)


def test_a_version_1_file_must_still_list_what_its_blocks_read():
    with open(OPEN_BLOCKS_V1 + ".program.json") as f:
        doc = json.load(f)
    loop = next(op for op in doc["blocks"][0]["ops"] if op["type"] == "while")
    loop["inputs"] = loop["inputs"][:2]          # the loop's body reads const, sum and x: listed no more
    with pytest.raises(rt.ProgramFormatError, match="its blocks read 'const' from an enclosing block, but the op "
                                                    "does not list it among its inputs"):
        program_from_json(json.dumps(doc))
