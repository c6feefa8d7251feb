"""A 0-d Parameter survives save/load and export_python with its shape (issue 9 item 14: it was
written as shape [1], and load then refused the file save had just written)."""
import importlib.util

import numpy as np

import runtime as rt
import transpiler
from transpiler import InputSpec, to_static


class Scaled(rt.nn.Layer):
    def __init__(self):
        super().__init__()
        self.scale = rt.Parameter(np.asarray(np.float32(2.5)), rt.get_backend("cpu"))
        self.offset = rt.Parameter(np.asarray(np.int64(3)), rt.get_backend("cpu"))

    def forward(self, x):
        y = x * self.scale + self.offset
        while y.sum() > 100:
            y = y * self.scale * 0.1
        return y


def _x():
    return rt.tensor(np.arange(4, dtype=np.float32))


def test_zero_d_parameters_round_trip_through_save_and_load(tmp_path):
    model = Scaled()
    transpiler.save(model, tmp_path / "scaled", input_spec=[InputSpec([4], "float32", "x")])
    loaded = transpiler.load(tmp_path / "scaled")
    assert loaded.state_dict()["scale"].shape == () and loaded.state_dict()["offset"].shape == ()
    np.testing.assert_array_equal(loaded(_x()).numpy(), to_static(model.forward)(_x()).numpy())


def test_zero_d_parameters_round_trip_through_export_python(tmp_path):
    model = Scaled()
    py_path, _ = transpiler.export_python(model, tmp_path / "scaled_np", input_spec=[InputSpec([4], "float32", "x")])
    spec = importlib.util.spec_from_file_location("scaled_np", py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_array_equal(module.run(x=_x().numpy()), to_static(model.forward)(_x()).numpy())
