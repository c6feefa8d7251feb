"""parsing: the tree of a function carries the line numbers of its file, also in a syntax error."""
import importlib.util
import linecache

import gast
import pytest

from transpiler.errors import ConversionError
from transpiler.parsing import parse_function

SOURCE = '''import math


class Holder:
    def method(self, x):
        y = x + 1
        if y > 2:
            y = y * 2
        return y
'''


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_node_has_its_line_in_the_file(tmp_path):
    path = tmp_path / "lines_module.py"
    path.write_text(SOURCE)
    fn = _load(path).Holder.method
    node = parse_function(fn).node
    assert node.lineno == 5 == fn.__code__.co_firstlineno
    lines = {type(n).__name__: n.lineno for n in gast.walk(node) if isinstance(n, (gast.If, gast.Return))}
    assert lines == {"If": 7, "Return": 9}
    assert node.body[0].end_lineno == 6


def test_a_syntax_error_in_a_changed_file_is_reported_at_its_line(tmp_path):
    path = tmp_path / "changed_module.py"
    path.write_text(SOURCE)
    fn = _load(path).Holder.method
    path.write_text(SOURCE.replace("y = y * 2", "y = y * * 2"))     # the file changed after the import
    linecache.checkcache(str(path))
    with pytest.raises(ConversionError, match="syntax error") as caught:
        parse_function(fn)
    assert caught.value.lineno == 8 and caught.value.filename == str(path)
