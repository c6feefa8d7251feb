"""transpiler.conversion: one conversion per code object and module, never shared across files."""
import importlib.util

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static
from transpiler.conversion import convert_function

SOURCE = '''import runtime as rt


def helper(x):
    return x * 2


def f(x):
    if x.sum() > 0:
        x = helper(x)
    return x.reshape(-1, 5)
'''


def _load(path, text):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_same_def_in_two_files_is_converted_for_each(tmp_path):
    a = _load(tmp_path / "first_copy.py", SOURCE)
    b = _load(tmp_path / "second_copy.py", SOURCE)
    assert a.f.__code__ == b.f.__code__             # equal code objects: Python does not compare filenames
    assert convert_function(a.f).__code__.co_filename == str(tmp_path / "first_copy.py")
    assert convert_function(b.f).__code__.co_filename == str(tmp_path / "second_copy.py")
    with pytest.raises(ValueError, match="second_copy.py") as caught:     # the error names the file called
        to_static(b.f)(rt.tensor(np.ones(3, np.float32)))
    assert "first_copy.py" not in str(caught.value)


def test_a_def_run_again_shares_its_conversion(tmp_path):
    module = _load(tmp_path / "factory_copy.py", SOURCE + '''

def make(k):
    def g(x):
        return x * k
    return g
''')
    one, two = module.make(2), module.make(3)
    assert one.__code__ is two.__code__
    assert convert_function(one).__code__ is convert_function(two).__code__       # converted once
    x = rt.tensor(np.ones(2, np.float32))
    np.testing.assert_array_equal(to_static(two)(x).numpy(), [3.0, 3.0])
