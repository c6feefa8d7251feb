"""Branches whose results nobody uses, and branches this call does not take (issue 24 §3).

The oracle is the same function run eagerly.
"""
import sys

import numpy as np
import pytest

import runtime as rt
import transpiler
from transpiler import InputSpec, to_static


def t(value):
    return rt.tensor(np.asarray(value, np.float32))


# --- a cond whose outputs all died, holding a list-growing while, in a while's condition -----------

def _grows_a_list_it_never_reads(s):
    if rt.sum(s) > 0:
        parts = []
        i = 0
        while i < rt.sum(s):
            parts.append(s * i)
            i += 1
    return rt.sum(s) > 1


def count_down(x):
    s = x
    while _grows_a_list_it_never_reads(s):
        s = s - 1
    return s


@pytest.mark.parametrize("data", [[3.0], [-2.0], [1.5]])
def test_dead_cond_with_a_growing_list_in_a_loop_condition_compiles_and_runs(data):
    np.testing.assert_array_equal(to_static(count_down)(t(data)).numpy(), count_down(t(data)).numpy())


def test_dead_code_elimination_drops_the_list_nobody_reads_with_its_loop_and_branch():
    from runtime.passes.pipeline import run_passes
    program = to_static(count_down).get_program(InputSpec([1], "float32", "x"))
    assert {"cond", "array_append"} <= {op.type for op in program.ops()}
    optimized = run_passes(program)
    assert not {"cond", "array_append", "array_new"} & {op.type for op in optimized.ops()}


def test_dead_cond_with_a_growing_list_in_a_loop_condition_exports(tmp_path):
    import importlib.util
    py_path, _ = transpiler.export_python(to_static(count_down), tmp_path / "m",
                                          input_spec=[InputSpec([1], "float32", "x")])
    spec = importlib.util.spec_from_file_location("dead_cond_module", py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_array_equal(module.run(x=np.asarray([3.0], np.float32)), count_down(t([3.0])).numpy())


# --- an error in a branch this call does not take is raised only if the Program takes it -------------

W = rt.tensor(np.ones((3, 2), np.float32))


def shape_error_in_dead_branch(x):
    if rt.sum(x) > 100:
        y = x @ W                       # x is [4]: fails, but only for inputs that take this branch
    else:
        y = x * 2
    return y


def shape_error_in_dead_ternary(x):
    return x @ W if rt.sum(x) > 100 else x * 3


def errors_in_both_branches(x):
    if rt.sum(x) > 100:
        y = x @ W
    else:
        y = x + name_that_is_not_defined  # noqa: F821
    return y


def _eager_error(fn, x):
    with pytest.raises(Exception) as info:
        fn(x)
    return info.value


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fn, line", [(shape_error_in_dead_branch, "y = x @ W"),
                                      (shape_error_in_dead_ternary, "return x @ W")])
def test_a_shape_error_in_a_branch_not_taken_is_raised_only_when_taken(fn, line):
    static = to_static(fn)
    small, big = t([1, 1, 1, 1]), t([50, 50, 50, 50])
    for x in (small, t([2, 0, 1, 3]), small):
        np.testing.assert_array_equal(static(x).numpy(), fn(x).numpy())
    want = _eager_error(fn, big)
    with pytest.raises(type(want)) as info:
        static(big)
    assert str(info.value) == str(want)
    if sys.version_info >= (3, 11):      # the user's line is a note (add_note: 3.11+)
        assert f"{__file__}:{_line_of(fn, line)}" in " ".join(info.value.__notes__)
    np.testing.assert_array_equal(static(small).numpy(), fn(small).numpy())


def test_errors_in_both_branches_each_raise_when_their_branch_runs():
    static = to_static(errors_in_both_branches)
    for x in (t([1, 1, 1, 1]), t([50, 50, 50, 50])):
        want = _eager_error(errors_in_both_branches, x)
        with pytest.raises(type(want), match=str(want).replace("(", r"\(").replace(")", r"\)")):
            static(x)


def _python_int(v):
    return int(v)


def limit_of_tracing_in_a_branch(x):
    if rt.sum(x) > 100:
        y = x + transpiler.not_to_static(_python_int)(x[0])
    else:
        y = x
    return y


def test_a_limit_of_tracing_in_a_branch_is_still_an_error_while_tracing():
    with pytest.raises(TypeError, match="not known while tracing"):
        to_static(limit_of_tracing_in_a_branch)(t([1, 1, 1, 1]))


POSITIVE = 0


def python_assert_in_dead_branch(x):
    if rt.sum(x) > 100:
        assert POSITIVE > 0, "POSITIVE must be positive"
        y = x + POSITIVE
    else:
        y = x
    return y


def test_a_python_assert_in_a_branch_not_taken_fails_only_when_taken():
    static = to_static(python_assert_in_dead_branch)
    small = t([1, 1, 1, 1])
    np.testing.assert_array_equal(static(small).numpy(), python_assert_in_dead_branch(small).numpy())
    with pytest.raises(AssertionError, match="POSITIVE must be positive"):
        static(t([50, 50, 50, 50]))
