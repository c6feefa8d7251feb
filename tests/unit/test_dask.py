"""map_batches and `dy2static run --scheduler` on a distributed.LocalCluster with worker processes.

Every result is compared with one in-process call of the static function over the
whole input: chunked on two worker processes it must be identical. The functions
treat rows independently (the `while` and `if` below give each row the same
result whatever the chunk), as map_batches requires.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import runtime as rt  # noqa: E402
import transpiler  # noqa: E402
from transpiler import InputSpec, cli, map_batches, to_static  # noqa: E402

ROWS = 37


class Net(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = rt.nn.Linear(4, 3)

    def forward(self, x):
        return rt.nn.functional.relu(self.fc(x)) * 2.0


def halve_until_small(x, y):
    """A data-dependent tensor `while`, a tensor `if`, two inputs, three outputs of three dtypes."""
    s = x * 3.0
    steps = rt.zeros(x.shape[:1], dtype="int32")
    while (s > 1.0).any():
        big = s > 1.0
        s = rt.where(big, s * 0.5, s)
        steps = steps + rt.astype(big.any(axis=1), "int32")
    if rt.isfinite(s).all():
        s = s + y[:, :1]
    else:
        s = s * 0.0
    return s, steps, (s.sum(axis=1) > 1.0)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.random((ROWS, 4), dtype=np.float32) * 4, rng.random((ROWS, 2), dtype=np.float32)


def test_control_flow_with_several_inputs_and_outputs(client, data):
    x, y = data
    lazy = map_batches(halve_until_small, da.from_array(x, chunks=10), da.from_array(y, chunks=(7, 1)))
    assert [(a.dtype, a.chunks) for a in lazy] == [
        (np.float32, ((10, 10, 10, 7), (4,))), (np.int32, ((10, 10, 10, 7),)), (np.bool_, ((10, 10, 10, 7),))]
    with distributed.get_task_stream(client) as stream:
        got = client.compute(lazy, sync=True)
    assert {task["worker"] for task in stream.data} <= set(client.scheduler_info()["workers"]) and stream.data
    want = to_static(halve_until_small)(rt.tensor(x), rt.tensor(y))
    assert len(want) == 3 and max(want[1].numpy()) > 1
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.numpy())


def test_layer_with_parameters_and_its_loaded_program(client, data, tmp_path):
    x = da.from_array(data[0], chunks=8)
    net = Net()
    want = net(rt.tensor(data[0])).numpy()
    np.testing.assert_array_equal(map_batches(to_static(net), x).compute(), want)
    transpiler.save(net, tmp_path / "net", input_spec=[InputSpec([None, 4], "float32", "x")])
    loaded = transpiler.load(tmp_path / "net")
    np.testing.assert_array_equal(map_batches(loaded, x).compute(), want)
    np.testing.assert_array_equal(map_batches(loaded, x).compute(scheduler="threads"), want)


def test_outputs_that_are_not_per_row_are_refused_before_running(data):
    x = da.from_array(data[0], chunks=8)
    with pytest.raises(ValueError, match=r"output out0 .*first dim to be the batch"):
        map_batches(lambda v: v.sum(axis=0), x)
    dynamic = to_static(lambda v: v * 2.0, input_spec=[InputSpec([None, None], "float32", "v")])
    with pytest.raises(ValueError, match=r"output out0 .*dynamic dim past the first"):
        map_batches(dynamic, x)
    with pytest.raises(ValueError, match=r"input 'x' is float64\[37, 4\]; the Program takes float32\[None, 4\]"):
        map_batches(to_static(Net(), input_spec=[InputSpec([None, 4], "float32", "x")]), x.astype("float64"))
    with pytest.raises(ValueError, match="same number of rows"):
        map_batches(halve_until_small, x, x[:5, :2])
    with pytest.raises(ValueError, match=r"input 'x' has a static first dim 8, but the chunks have \[5, 8\] rows"):
        map_batches(to_static(Net(), input_spec=[InputSpec([8, 4], "float32", "x")]), x)
    with pytest.raises(TypeError, match=r"takes 2 input\(s\) \['x', 'y'\], got 1 array"):
        map_batches(to_static(halve_until_small, input_spec=[InputSpec([None, 4], "float32", "x"),
                                                             InputSpec([None, 2], "float32", "y")]), x)


def write_model(folder):
    path = folder / "model.py"
    path.write_text("import runtime as rt\n\n\n"
                    "def f(x, y):\n"
                    "    s = x * 2.0\n"
                    "    while (s > 1).any():\n"
                    "        s = rt.where(s > 1, s * 0.5, s)\n"
                    "    return s + y, (x * y).sum(axis=1)\n")
    return path


def test_cli_scheduler_writes_what_one_call_gives(client, data, tmp_path):
    x, y = data
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y[:, :1].repeat(4, axis=1))
    model = write_model(tmp_path)
    address = client.scheduler.address
    inputs = ["--input", f"y={tmp_path / 'y.npy'}", "--input", f"x={tmp_path / 'x.npy'}"]
    assert cli.main(["run", f"{model}::f", *inputs, "--out", str(tmp_path / "whole.npz")]) == 0
    whole = np.load(tmp_path / "whole.npz")
    assert cli.main(["run", f"{model}::f", *inputs, "--scheduler", address, "--batch-size", "9",
                     "--out", str(tmp_path / "dist")]) == 0
    for i in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / "dist" / f"out{i}.npy"), whole[f"out{i}"])
    static = to_static(lambda x, y: x * 2.0 + y)     # a saved Program: no source needed, inputs by name
    transpiler.save(static, tmp_path / "saved", input_spec=[InputSpec([None, 4], "float32", "x"),
                                                            InputSpec([None, 4], "float32", "y")])
    assert cli.main(["run", str(tmp_path / "saved.program.json"), *inputs, "--scheduler", address,
                     "--out", str(tmp_path / "saved_out")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "saved_out" / "out0.npy"), x * 2.0 + np.load(tmp_path / "y.npy"))


def test_cli_scheduler_errors_are_one_line(client, data, tmp_path, capsys):
    np.save(tmp_path / "x.npy", data[0])
    model = write_model(tmp_path)
    argv = ["run", f"{model}::f", "--input", f"x={tmp_path / 'x.npy'}", "--scheduler", client.scheduler.address]
    assert cli.main(argv + ["--out", str(tmp_path / "o.npz")]) == 1
    assert "give --out DIR" in capsys.readouterr().err
    assert cli.main(argv + ["--out", str(tmp_path / "o"), "--batch-size", "0"]) == 1
    assert "--batch-size must be at least 1" in capsys.readouterr().err
    assert cli.main(argv + ["--out", str(tmp_path / "o")]) == 1
    assert "missing --input for parameter 'y'" in capsys.readouterr().err
    np.save(tmp_path / "short.npy", data[0][:3])
    assert cli.main(argv + ["--input", f"y={tmp_path / 'short.npy'}", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "same number of rows" in err
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_a_static_function_submitted_to_a_worker_travels_as_its_program(client, data):
    specs = [InputSpec([None, 4], "float32", "x"), InputSpec([None, 2], "float32", "y")]
    static = to_static(halve_until_small, input_spec=specs)
    got = client.submit(lambda fn, x, y: [t.numpy() for t in fn(x, y)], static, *data).result()
    for g, w in zip(got, static(rt.tensor(data[0]), rt.tensor(data[1]))):
        np.testing.assert_array_equal(g, w.numpy())
