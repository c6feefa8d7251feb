"""`raise` under a tensor-dependent condition is a run-time check of the Program (issue 18 item 4):
the same exception type and message, raised when and only when that path runs — in the traced
Program, in a Program loaded from disk and in the exported module."""
import importlib.util
import sys

import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime.ops.control import Text
from transpiler import InputSpec, to_static

from .oracle import numpy_twin


def check_not_one(x):
    if x == 1:
        raise ValueError("x should not be 1")
    return x * 2


def formatted(x):
    if x.sum() > 10:
        raise RuntimeError(f"sum {x.sum()} is over {10}; shape {x.shape} {{literal}}")
    else:
        y = x - 1                    # bound only on the path that does not raise
    return y


def validate(v):
    if v.max() > 3:
        raise IndexError(f"index {v.max()} out of range")
    return v


def calls_a_raising_function(x):
    if x.sum() > 0:
        x = validate(x) + 1
    return x


def raise_in_loop(x):
    i = 0
    while x.sum() < 100:
        x = x * 2
        i += 1
        if i > 5:
            raise OverflowError("too many steps")
    return x, i


def raise_class_only(x):
    if x.mean() < 0:
        raise KeyError
    return x


def _expect(fn, x, static):
    """static(x) does what fn(x) does on eager tensors: the same value, or the same error."""
    try:
        want = fn(x)
    except Exception as e:
        with pytest.raises(type(e)) as info:
            static(x)
        assert str(info.value) == str(e) and type(info.value) is type(e)
        return
    got = static(x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(np.asarray(g.numpy() if hasattr(g, "numpy") else g),
                                      np.asarray(w.numpy() if hasattr(w, "numpy") else w))


CASES = [
    (check_not_one, [np.float32(1), np.float32(2)], None),
    (formatted, [np.arange(3, dtype=np.float32), np.arange(3, 6, dtype=np.float32)], None),
    (calls_a_raising_function, [np.array([1, 2], np.int32), np.array([1, 5], np.int32),
                                np.array([-1, 9], np.int32)], None),
    (raise_in_loop, [np.array([30.0], np.float32), np.array([1e-3], np.float32)], None),
    (raise_class_only, [np.ones(2, np.float32), -np.ones(2, np.float32)], None),
]


@pytest.mark.parametrize("fn, values, _", CASES, ids=[c[0].__name__ for c in CASES])
def test_raise_is_a_run_time_check_on_the_path_taken(fn, values, _):
    static = to_static(fn)
    for v in values:
        _expect(fn, rt.tensor(v), static)
    assert static.cache_size == 1            # one trace: no value raised while tracing


def test_the_raise_op_is_in_the_program_and_points_at_the_users_line():
    static = to_static(check_not_one)
    program = static.get_program(rt.tensor(np.float32(1)))
    (op,) = [op for op in program.ops() if op.type == "raise"]
    assert op.attrs == {"exception": "ValueError", "message": "x should not be 1"}
    with pytest.raises(ValueError) as info:
        static(rt.tensor(np.float32(1)))
    if sys.version_info >= (3, 11):                      # exception notes
        assert any(f"{__file__}:" in note for note in info.value.__notes__)


def _spec(v):
    return [InputSpec(list(np.shape(v)), np.asarray(v).dtype.name, "x")]


@pytest.mark.parametrize("fn, values, _", CASES, ids=[c[0].__name__ for c in CASES])
def test_raise_survives_save_and_load(tmp_path, fn, values, _):
    transpiler.save(to_static(fn), tmp_path / "f", input_spec=_spec(values[0]))
    loaded = transpiler.load(tmp_path / "f")
    for v in values:
        _expect(fn, rt.tensor(v), loaded)


@pytest.mark.parametrize("fn, values, _", CASES, ids=[c[0].__name__ for c in CASES])
def test_raise_survives_export_python(tmp_path, fn, values, _):
    py_path, _ = transpiler.export_python(to_static(fn), tmp_path / f"{fn.__name__}_np", input_spec=_spec(values[0]))
    spec = importlib.util.spec_from_file_location(f"{fn.__name__}_np", py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def run(x):
        out = module.run(x=x.numpy())
        return tuple(rt.tensor(o) for o in out) if isinstance(out, (tuple, list)) else rt.tensor(out)
    for v in values:
        _expect(fn, rt.tensor(v), run)


class MyError(ValueError):
    pass


def test_a_user_exception_class_under_a_tensor_condition_is_refused_clearly():
    def f(x):
        if x.sum() > 0:
            raise MyError("mine")
        return x
    with pytest.raises(TypeError, match="cannot raise MyError under a tensor-dependent condition"):
        to_static(f)(rt.tensor(np.ones(2, np.float32)))


def test_raise_outside_tensor_control_flow_is_plain_python():
    def f(x, n):
        if n > 2:
            raise MyError(f"n is {n}")             # a Python condition: raised while tracing, any class
        try:
            if n > 1:
                raise KeyError("caught")
        except KeyError as e:
            x = x + len(str(e))
        return x
    static = to_static(f)
    np.testing.assert_array_equal(static(rt.tensor(np.zeros(2, np.float32)), 2).numpy(), [8, 8])   # len("'caught'")
    with pytest.raises(MyError, match="n is 3"):
        static(rt.tensor(np.zeros(2, np.float32)), 3)


def test_a_loaded_program_naming_a_non_builtin_exception_is_refused(tmp_path):
    import json
    transpiler.save(to_static(check_not_one), tmp_path / "f", input_spec=_spec(np.float32(1)))
    path = tmp_path / "f.program.json"
    text = path.read_text().replace('"ValueError"', '"__import__"')
    path.write_text(text)
    assert "__import__" in json.dumps(json.loads(text))
    with pytest.raises(rt.ProgramFormatError, match="not a built-in exception type"):
        transpiler.load(tmp_path / "f")


def test_f_string_fields_keep_pythons_conversions_and_specs():
    def f(x, name):
        if x.sum() > 0:
            raise ValueError(f"{name!r:>8}|{3.14159:.2f}|{x.sum()}|{{}}")
        return x
    static = to_static(f)
    x = rt.tensor(np.ones(2, np.float32))
    with pytest.raises(ValueError) as want:
        f(x, "ab")
    with pytest.raises(ValueError) as got:
        static(x, "ab")
    assert str(got.value) == str(want.value) == "    'ab'|3.14|2.0|{}"


def test_a_tensor_with_a_format_spec_in_a_branch_message_is_formatted_when_it_raises():
    def f(x):
        if x.sum() > 0:
            raise ValueError(f"sum is {x.sum():.2f}")
        return x
    with pytest.raises(ValueError, match=r"^sum is 2\.00\b"):
        to_static(f)(rt.tensor(np.ones(2, np.float32)))


def test_a_tensor_with_a_long_padding_in_a_branch_message_is_refused_clearly():
    def f(x):
        if x.sum() > 0:
            raise ValueError(f"sum is {x.sum():>1000}")
        return x
    with pytest.raises(TypeError, match=r"two digits"):
        to_static(f)(rt.tensor(np.ones(2, np.float32)))


def both_branches_raise(x):
    y = x
    if x.sum() > 0:
        if x.max() > 2:
            y = x * 3
            raise ValueError("big")
        else:
            y = x.astype("int32")[:1]       # another dtype and shape: never yielded, it raises
            raise TypeError("small")
    return y * 2


def test_a_branch_whose_paths_all_raise_yields_nothing_that_must_agree():
    static = to_static(both_branches_raise)
    for v in ([1.0, 3.0], [1.0, 0.5], [-1.0, -3.0]):
        _expect(both_branches_raise, rt.tensor(np.array(v, np.float32)), static)
    assert static.cache_size == 1


def prints_f_strings(x):
    print(f"start {x.sum()} {{braces}} {3:>3}")
    while x.sum() < 10:
        x = x * 2
        print(f"x is {x}", "max", x.max())
    return x


def test_print_of_an_f_string_formats_tensors_when_the_program_runs(capsys):
    numpy_twin(prints_f_strings)(np.ones(2, np.float32))
    want = capsys.readouterr().out
    static = to_static(prints_f_strings)
    static.get_program(rt.tensor(np.ones(2, np.float32)))       # tracing prints nothing
    assert capsys.readouterr().out == ""
    static(rt.tensor(np.ones(2, np.float32)))
    assert capsys.readouterr().out == want
    assert "x is [8. 8.] max 8.0" in want


def asserts_with_f_string(x):
    while x.sum() < 10:
        x = x * 2
        assert x.max() < 5, f"max {x.max()} of {x} too big"
    return x


def test_assert_f_string_message_formats_tensors_when_the_program_runs():
    static = to_static(asserts_with_f_string)
    with pytest.raises(AssertionError) as want:
        numpy_twin(asserts_with_f_string)(np.array([1.0, 2.0], np.float32))
    with pytest.raises(AssertionError) as got:
        static(rt.tensor(np.array([1.0, 2.0], np.float32)))
    message = "max 8.0 of [4. 8.] too big"        # (pytest rewrites this module's asserts: it adds to want's text)
    assert str(want.value).startswith(message)
    assert str(got.value).startswith(message + " (at ")          # the message, then the user's line
    np.testing.assert_array_equal(static(rt.tensor(np.array([5.0, 6.0], np.float32))).numpy(), [5, 6])


def _raising_helper():
    raise ValueError("from a helper")


def caught_in_the_taken_branch(c):
    if c:
        return 2
    try:
        return _raising_helper()
    except ValueError:
        pass
    return 1


def uncaught_type_in_a_try(x):
    if x > 0:
        try:
            raise KeyError("k")
        except ValueError:
            pass
    return x


def test_a_raise_in_a_called_function_that_a_try_in_the_branch_catches_is_caught():
    # AutoGraph's early_return_test: the helper's raise was a `raise` op the `except` could not catch
    static = to_static(caught_in_the_taken_branch)
    for c in (True, False):
        assert int(static(rt.tensor(c))) == caught_in_the_taken_branch(np.bool_(c))


def test_a_raise_in_a_try_whose_handlers_do_not_catch_it_is_a_run_time_check():
    static = to_static(uncaught_type_in_a_try)
    assert int(static(rt.tensor(np.int32(-1)))) == -1
    with pytest.raises(KeyError, match="k"):
        static(rt.tensor(np.int32(1)))


def prints_with_format_specs(x):
    if x.sum() > 0:
        print(f"sum {x.sum():>8.3f} max {x.max():.2e}")
    return x


def test_print_of_an_f_string_with_format_specs_formats_when_the_program_runs(capsys):
    numpy_twin(prints_with_format_specs)(np.array([1.0, 2.5], np.float32))
    want = capsys.readouterr().out
    to_static(prints_with_format_specs)(rt.tensor(np.array([1.0, 2.5], np.float32)))
    assert capsys.readouterr().out == want == "sum    3.500 max 2.50e+00\n"


def test_a_long_padding_is_refused_in_a_program_template():
    with pytest.raises(ValueError, match="two-digit"):
        rt.trace(lambda x: rt.print_(Text("{:>1000}", [x])), [rt.InputSpec([], "float32", "x")])
