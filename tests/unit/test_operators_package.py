"""transpiler.operators is `_jst` for converted code: every name a transform emits must be there, and a
builtin reached through a variable (`fn = range; fn(n)`) must get the same overload as one called by name."""
import ast
import builtins
import pathlib
import re

import numpy as np

from transpiler import operators
from transpiler.operators import calls
from transpiler.transforms.calls import BUILTIN_OVERLOADS

TRANSFORMS = pathlib.Path(__file__).resolve().parents[2] / "transpiler" / "transforms"


def emitted_names():
    """`_jst` attributes the transforms write: `jst("name")` calls, the operator names in their tables, and
    `_jst.name` in the source templates they fill."""
    names = set()
    for path in TRANSFORMS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "jst" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.startswith("convert_"):
                    names.add(node.value)
                names.update(re.findall(r"\b_jst\.(convert_\w+)", node.value))
    return names


def test_every_emitted_operator_exists():
    names = emitted_names()
    assert {"convert_ifelse", "convert_for", "attr_cell", "convert_setitem_path"} <= names
    missing = sorted(n for n in names if not callable(getattr(operators, n, None)))
    assert not missing, f"transforms emit _jst names the operators package lacks: {missing}"


def test_builtins_through_a_variable_get_the_same_overload():
    for name, operator in BUILTIN_OVERLOADS.items():
        assert operators.convert_call(getattr(builtins, name)) is getattr(operators, operator), name
    for numpy_fn in (np.asarray, np.array, np.asanyarray, np.ascontiguousarray):
        assert calls.convert_call(numpy_fn).__name__ == f"convert_{numpy_fn.__name__}"
    assert operators.convert_call(builtins.abs) is builtins.abs      # no overload: the builtin itself
