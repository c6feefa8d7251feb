"""Places in objects the call itself makes are values of that run, not state (issue 24 §3).

A local list whose item a tensor loop assigns is gone when the call returns: `save`, `export_python`
and `export_onnx` take such a function as pickle and Dask do. State that outlives the call (a global
list, an attribute of `self`) is still stored after every run. The oracle is the function run eagerly.
"""
import importlib.util

import numpy as np
import pytest

import runtime as rt
import transpiler
from transpiler import InputSpec, to_static


def t(value):
    return rt.tensor(np.asarray(value, np.float32))


def local_list_item(x):
    buf = [rt.zeros([2]), rt.zeros([2])]
    i = 0
    while i < rt.sum(x):
        buf[1] = buf[1] + x
        i += 1
    return buf[0] + buf[1]


def local_list_inside_another(x):
    inner = [x * 0, x * 0]
    rows = [inner]
    i = 0
    while i < rt.sum(x * 0) + 3:
        inner[1] = inner[1] + x
        i += 1
    return rows[0][1]


def local_object_attribute(x):
    class Acc:
        pass
    acc = Acc()
    acc.total = x * 0
    if rt.sum(x) > 0:
        acc.total = acc.total + x
    return acc.total


SPEC = [InputSpec([2], "float32", "x")]
FUNCTIONS = [local_list_item, local_list_inside_another, local_object_attribute]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_save_and_load_a_function_that_writes_its_own_local_objects(fn, tmp_path):
    x = t([1, 2])
    static = to_static(fn)
    np.testing.assert_array_equal(static(x).numpy(), fn(x).numpy())
    transpiler.save(static, str(tmp_path / "f"), input_spec=SPEC)
    loaded = transpiler.load(str(tmp_path / "f"))
    for data in ([1, 2], [-3, 1], [0.5, 0.5]):
        np.testing.assert_array_equal(loaded(x=t(data)).numpy(), fn(t(data)).numpy())


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_export_python_of_a_function_that_writes_its_own_local_objects(fn, tmp_path):
    py_path, _ = transpiler.export_python(to_static(fn), tmp_path / "m", input_spec=SPEC)
    spec = importlib.util.spec_from_file_location("m_" + fn.__name__, py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for data in ([1, 2], [-3, 1]):
        out = module.run(x=np.asarray(data, np.float32))
        np.testing.assert_array_equal(out, fn(t(data)).numpy())


def test_export_onnx_of_a_function_that_writes_its_own_local_list(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    path = transpiler.export_onnx(to_static(local_list_inside_another), tmp_path / "m.onnx", input_spec=SPEC)
    session = ort.InferenceSession(str(path))
    data = np.asarray([1, 2], np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": data})[0], local_list_inside_another(t(data)).numpy())


CACHE = [rt.zeros([2])]


def global_list_item(x):
    i = 0
    while i < 2:
        CACHE[0] = CACHE[0] + x
        i += 1
    return x


def test_a_global_list_written_in_a_tensor_loop_is_still_state(tmp_path):
    static = to_static(global_list_item)
    CACHE[0] = rt.zeros([2])
    static(t([1, 2]))
    static(t([1, 2]))
    np.testing.assert_array_equal(CACHE[0].numpy(), [4, 8])
    with pytest.raises(ValueError, match="writes tensors or attributes after each run"):
        transpiler.save(static, str(tmp_path / "g"), input_spec=SPEC)
