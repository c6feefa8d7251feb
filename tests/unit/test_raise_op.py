"""The `raise` op: a built-in exception named by string, a print-style message; what a file may
name is checked on load (nothing in a file reaches user code or a non-exception builtin)."""
import json

import numpy as np
import pytest

import runtime as rt
from runtime.deploy import load_program, save_program


def test_eager_raise_formats_like_print():
    with pytest.raises(ValueError) as info:
        rt.raise_(ValueError, "x is {} and {}", rt.tensor(np.float32(1.5)), rt.tensor(np.arange(2)))
    assert str(info.value) == "x is 1.5 and [0 1]"
    with pytest.raises(KeyError) as info:
        rt.raise_(KeyError)
    assert info.value.args == ()


@pytest.mark.parametrize("name", ["SystemExit", "KeyboardInterrupt", "__import__", "eval", "object", "os"])
def test_only_builtin_exception_types(name):
    with pytest.raises(ValueError, match="not a built-in exception type"):
        rt.raise_(name, "no")


def _saved_with(tmp_path, **attrs):
    def f(x):
        return rt.cond(x.sum() > 0, lambda: rt.raise_(ValueError, "big {}", x.sum()) or x, lambda: x)
    program, _, _ = rt.trace(f, [rt.InputSpec([2], "float32", "x")])
    json_path, _ = save_program(program, tmp_path / "p")
    doc = json.loads(open(json_path).read())
    found = 0
    for block in doc["blocks"]:
        for op in block["ops"]:
            if op["type"] == "raise":
                op["attrs"].update(attrs)
                found += 1
    assert found == 1
    open(json_path, "w").write(json.dumps(doc))
    return tmp_path / "p"


def test_a_saved_raise_runs_after_load(tmp_path):
    loaded = load_program(_saved_with(tmp_path))
    np.testing.assert_array_equal(loaded(rt.tensor(-np.ones(2, np.float32))).numpy(), [-1, -1])
    with pytest.raises(ValueError) as info:
        loaded(rt.tensor(np.ones(2, np.float32)))
    assert str(info.value) == "big 2.0"


@pytest.mark.parametrize("attrs", [{"exception": "SystemExit"}, {"exception": "__import__"},
                                   {"message": "big {0.__class__}"}, {"message": "big {:>999999999}"},
                                   {"message": "big {} {}"}, {"message": None}])
def test_hostile_raise_attrs_are_refused_on_load(tmp_path, attrs):
    with pytest.raises(rt.ProgramFormatError):
        load_program(_saved_with(tmp_path, **attrs))
