"""What `load` refuses up front, so a loaded Program never fails later in a way the file chose: names the
generated code cannot bind, attrs of a type the kernels do not take, and Programs past the loader's limits."""
import json
import re

import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime.deploy import load_program, save_program
from runtime.export import export_python
from runtime.naming import UniqueNames
from runtime.serialization import ProgramFormatError


def _save(tmp_path, fn, specs):
    program, _, _ = rt.trace(fn, specs)
    json_path, _ = save_program(program, tmp_path / "m")
    with open(json_path) as f:
        return json_path, json.load(f)


def _write(json_path, doc):
    doc.pop("params_sha256", None)
    with open(json_path, "w") as f:
        json.dump(doc, f)


def _rename(doc, old, new):
    """The document with variable `old` called `new` everywhere it is named."""
    return json.loads(re.sub(rf'"{re.escape(old)}"', json.dumps(new), json.dumps(doc)))


def _ops(doc, op_type):
    return [op for block in doc["blocks"] for op in block["ops"] if op["type"] == op_type]


def _double(x):
    return rt.tanh(x) * 2.0


@pytest.mark.parametrize("name", ["__debug__", "class", "None", "lambda", "1x"])
def test_a_variable_named_what_code_cannot_bind_is_refused_at_load(tmp_path, name):
    json_path, doc = _save(tmp_path, _double, [rt.InputSpec([3], "float32", "x")])
    renamed = _rename(doc, "tanh", name)
    assert renamed != doc
    _write(json_path, renamed)
    with pytest.raises(ProgramFormatError, match="invalid name"):
        load_program(tmp_path / "m")


def test_generated_code_never_binds_debug_or_keywords():
    block = rt.Program("p").global_block
    assert block.create_var("__debug__").name == "__debug___"
    assert block.create_var("class").name == "class_"
    assert block.create_var(None).name == "None_"
    assert UniqueNames().claim("class") == "class_"


def test_an_input_named_self_is_passed_by_keyword(tmp_path):
    json_path, doc = _save(tmp_path, _double, [rt.InputSpec([3], "float32", "x")])
    _write(json_path, _rename(doc, "x", "self"))
    loaded = load_program(tmp_path / "m")
    assert loaded.input_names == ("self",)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(loaded(self=x).numpy(), np.tanh(x) * 2.0, rtol=1e-6)


def _take(x):
    return rt.take(x, rt.asarray([2, 0]), axis=0)


def _reduce(x):
    return rt.sum(x, axis=1, keepdims=True)


def _sorted(x):
    return rt.sort(x, axis=-1, descending=True)


@pytest.mark.parametrize("fn, op_type, attr, value", [
    (_take, "take", "axis", False),
    (_take, "take", "axis", True),
    (_reduce, "sum", "axis", [True]),
    (_reduce, "sum", "keepdims", 1),
    (_reduce, "sum", "dtype", "float128"),
    (_sorted, "sort", "descending", "yes"),
    (_sorted, "sort", "axis", 1.5),
])
def test_attrs_of_a_type_the_kernels_do_not_take_are_refused(tmp_path, fn, op_type, attr, value):
    json_path, doc = _save(tmp_path, fn, [rt.InputSpec([3, 3], "float32", "x")])
    (op,) = _ops(doc, op_type)
    op["attrs"][attr] = value
    _write(json_path, doc)
    with pytest.raises(ProgramFormatError, match=f"attr '{attr}'"):
        load_program(tmp_path / "m")


def test_a_plan_and_an_exported_module_agree_on_every_attr_that_loads(tmp_path):
    """The case that disagreed: `take(axis=false)` ran as axis 0 in a plan and raised in the module."""
    json_path, doc = _save(tmp_path, _take, [rt.InputSpec([3, 3], "float32", "x")])
    loaded = load_program(tmp_path / "m")
    py_path, _ = export_python(loaded.program, tmp_path / "exported")
    namespace = {"__file__": py_path}
    exec(compile(open(py_path).read(), py_path, "exec"), namespace)
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(namespace["run"](x=x), loaded(x).numpy())
    np.testing.assert_array_equal(loaded(x).numpy(), x[[2, 0]])


def _three_nested(n):
    total = rt.zeros((), "int64")
    i = rt.zeros((), "int64")
    while i < n:
        j = rt.zeros((), "int64")
        while j < n:
            k = rt.zeros((), "int64")
            while k < n:
                total = total + 1
                k = k + 1
            j = j + 1
        i = i + 1
    return total


def _save_nested(tmp_path):
    transpiler.save(transpiler.to_static(_three_nested), tmp_path / "nested",
                    input_spec=[transpiler.InputSpec([], "int64", "n")])
    return tmp_path / "nested"


def test_max_iterations_is_a_budget_for_the_whole_call(tmp_path):
    path = _save_nested(tmp_path)
    bounded = transpiler.load(path, max_iterations=1000)
    with pytest.raises(rt.IterationLimitError, match="ran more than 1000 iterations, counting every loop"):
        bounded(np.int64(60))       # 60 + 60**2 + 60**3 iterations, each loop far below 1000
    assert bounded(np.int64(5)).numpy() == 125      # 5 + 25 + 125 = 155 iterations: within the budget, every call


def test_max_iterations_counts_every_iteration_of_every_loop(tmp_path):
    path = _save_nested(tmp_path)
    total = 3 + 9 + 27
    assert transpiler.load(path, max_iterations=total)(np.int64(3)).numpy() == 27
    with pytest.raises(rt.IterationLimitError):
        transpiler.load(path, max_iterations=total - 1)(np.int64(3))


def _chain(x):
    for _ in range(30):
        x = rt.tanh(x) * 0.5
    return x


def test_programs_over_the_op_limit_are_refused_before_they_are_read(tmp_path):
    path = tmp_path / "chain"
    transpiler.save(transpiler.to_static(_chain), path, input_spec=[transpiler.InputSpec([3], "float32", "x")])
    ops = sum(len(b.ops) for b in transpiler.load(path).program.blocks)
    assert ops == 60
    with pytest.raises(ProgramFormatError, match="60 ops, over the limit of 59 .*max_ops=N"):
        transpiler.load(path, max_ops=59)
    x = np.ones(3, np.float32)
    np.testing.assert_allclose(transpiler.load(path, max_ops=60)(x).numpy(), _chain(rt.tensor(x)).numpy())
    with pytest.raises(ValueError, match="max_ops"):
        transpiler.load(path, max_ops=True)


def test_the_default_op_limit_applies_to_files_and_pickles(tmp_path, monkeypatch):
    import pickle
    import runtime.deploy as deploy
    static = transpiler.to_static(_chain, input_spec=[transpiler.InputSpec([3], "float32", "x")])
    transpiler.save(static, tmp_path / "chain")
    payload = pickle.dumps(static)
    monkeypatch.setattr(deploy, "MAX_OPS", 50)
    with pytest.raises(ProgramFormatError, match="over the limit of 50"):
        transpiler.load(tmp_path / "chain")
    with pytest.raises(ProgramFormatError, match="over the limit of 50"):
        pickle.loads(payload)
