"""Errors while a Program runs keep their type and name the user's line."""
import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime.codegen.plan import _same_kind
from transpiler import InputSpec, to_static

def huge(x):
    return rt.zeros((x.shape[0], x.shape[0], x.shape[0])) + 1        # 4 PB: NumPy refuses to allocate it


def _check_memory_error(call):
    with pytest.raises(MemoryError) as info:
        call()
    assert isinstance(info.value, rt.ProgramRunError)      # also what `except ProgramRunError` catches
    assert "Unable to allocate" in str(info.value)
    assert f"test_program_errors.py:{huge.__code__.co_firstlineno + 1}]" in str(info.value)   # relative once saved


def test_memory_error_in_a_plan_stays_a_memory_error(tmp_path):
    static = to_static(huge, input_spec=[InputSpec([None], "float32", "x")])
    x = np.ones(100_000, np.float32)
    _check_memory_error(lambda: static(rt.tensor(x)))
    _check_memory_error(lambda: static(rt.tensor(x)))       # the cache-hit path
    transpiler.save(static, tmp_path / "m")
    _check_memory_error(lambda: transpiler.load(tmp_path / "m")(x))


class NeedsTwo(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


@pytest.mark.parametrize("error, kinds", [
    (ValueError("bad"), (ValueError,)),
    (MemoryError("no room"), (MemoryError,)),
    (OSError(28, "No space left on device"), (OSError,)),
    (NeedsTwo(1, 2), (NeedsTwo, rt.ProgramRunError)),
    (KeyError("k"), (KeyError, rt.ProgramRunError)),
])
def test_errors_keep_their_type_and_carry_the_message(error, kinds):
    new = _same_kind(error, "message [while running op 'x' at f.py:3]")
    assert isinstance(new, kinds)
    assert str(new) == "message [while running op 'x' at f.py:3]"


def test_a_located_error_of_a_made_type_pickles():
    import pickle
    from numpy._core._exceptions import _ArrayMemoryError
    error = _ArrayMemoryError((10 ** 9, 10 ** 9), np.dtype("float64"))
    new = _same_kind(error, "no room [while running op 'zeros' at f.py:3]")
    again = pickle.loads(pickle.dumps(new))
    assert isinstance(again, MemoryError) and isinstance(again, rt.ProgramRunError)
    assert str(again) == str(new)
