"""Errors point at the user's file and line, name what is wrong, and say what to do."""
import warnings

import numpy as np
import pytest

import runtime as rt
from transpiler import ConversionError, ConversionWarning, InputSpec, not_to_static, to_static

THIS_FILE = __file__


def _t(*shape, seed=0):
    return rt.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


def gen(x):
    yield x


def try_around_failing_tensor_if(x):
    try:
        if x.sum() > 0:
            x = x + np.ones(7, np.float32)      # fails while tracing: shapes (3,) and (7,)
    except ValueError:
        x = x * 0
    return x


def undefined_after_if(x):
    if x.sum() > 0:
        y = x + 1
    return y * 2


def structure_mismatch(x):
    if x.sum() > 0:
        y = (x, x)
    else:
        y = x
    return y


def dtype_mismatch(x):
    if x.sum() > 0:
        y = x
    else:
        y = x.astype("int32")
    return y


def shape_error(x):
    w = rt.ones((5, 2))
    h = x @ w
    return h


@not_to_static
def opted_out(x):
    if x.sum() > 0:
        return x
    return -x


def calls_opted_out(x):
    return opted_out(x) + 1


def numpy_on_variable(x):
    return np.cov(x)           # (np.linalg.norm is ours: runtime/ops/numpy_functions.py)


def test_yield_is_a_conversion_error_with_line_and_hint():
    with pytest.raises(ConversionError) as info:
        to_static(gen)(_t(3))
    msg = str(info.value)
    assert THIS_FILE in msg and f"line {_line_of(gen, 'yield')}" in msg
    assert "yield x" in msg and "hint:" in msg


def test_exception_traced_in_a_tensor_if_is_not_caught_by_except():
    """Tracing both branches raised; eager code raises only when the branch runs: the except cannot stand in."""
    with pytest.raises(ConversionError, match="ValueError raised while tracing the tensor-dependent `if`") as info:
        to_static(try_around_failing_tensor_if)(_t(3))
    fn = try_around_failing_tensor_if
    assert f"line {_line_of(fn, 'except ValueError')}" in str(info.value)
    assert f":{_line_of(fn, 'if x.sum() > 0')}" in str(info.value)


def test_python_if_inside_try_still_works():
    def f(x, flag):
        try:
            if flag:
                x = x + 1
        except ValueError:
            pass
        return x
    out = to_static(f)(_t(3), True)
    np.testing.assert_allclose(out.numpy(), _t(3).numpy() + 1)


def test_reading_a_name_defined_in_one_branch_fails_for_every_input():
    static = to_static(undefined_after_if)
    for sign in (1, -1):
        x = rt.tensor(np.full(3, sign, np.float32))
        with pytest.raises(UnboundLocalError) as info:
            static(x)
        msg = str(info.value)
        assert "'y'" in msg
        assert f"line {_line_of(undefined_after_if, 'return y * 2')}" in msg
        assert f":{_line_of(undefined_after_if, 'if x.sum() > 0')}" in msg


def test_python_if_keeps_exact_unbound_semantics():
    def f(x, flag):
        if flag:
            y = x
        return y
    np.testing.assert_allclose(to_static(f)(_t(2), True).numpy(), _t(2).numpy())
    with pytest.raises(UnboundLocalError, match="'y'"):
        to_static(f)(_t(2), False)


def test_branch_structure_mismatch_names_the_variable():
    with pytest.raises(TypeError) as info:
        to_static(structure_mismatch)(_t(3))
    msg = str(info.value)
    assert "'y'" in msg and "tuple" in msg and "tensor" in msg
    assert f"line {_line_of(structure_mismatch, 'if x.sum() > 0')}" in msg


def test_branch_dtype_mismatch_names_both_dtypes():
    with pytest.raises(TypeError) as info:
        to_static(dtype_mismatch)(_t(3))
    msg = str(info.value)
    assert "'y'" in msg and "float32" in msg and "int32" in msg


def test_trace_time_error_points_at_user_line():
    with pytest.raises(ValueError) as info:
        to_static(shape_error)(_t(2, 3))
    msg = str(info.value)
    assert "matmul" in msg and THIS_FILE in msg
    assert f"line {_line_of(shape_error, 'h = x @ w')}" in msg


def test_not_to_static_function_with_tensor_if_explains():
    with pytest.raises(ConversionError, match="not_to_static|not converted"):
        to_static(calls_opted_out)(_t(3))


def test_numpy_function_on_variable_names_runtime_equivalent():
    with pytest.raises(TypeError, match="numpy.cov cannot run on a traced Variable"):
        to_static(numpy_on_variable)(_t(3))


def test_numpy_ufunc_on_variable_becomes_op():
    def f(x):
        return np.tanh(x) + np.exp(x)
    static = to_static(f)
    x = _t(4)
    np.testing.assert_allclose(static(x).numpy(), np.tanh(x.numpy()) + np.exp(x.numpy()), rtol=1e-6)
    assert {"tanh", "exp"} <= {op.type for op in static.get_program(x).ops()}


def test_full_graph_false_warns_once_and_runs_eagerly():
    static = to_static(gen, full_graph=False)
    with pytest.warns(ConversionWarning, match="yield"):
        out = static(_t(3))
    assert list(out)[0].shape == (3,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        static(_t(3))      # no second warning


def test_assert_fails_at_run_time_with_message_and_line():
    def f(x):
        assert x.sum() > 0, "sum must be positive"
        return x * 2
    static = to_static(f)
    np.testing.assert_allclose(static(rt.tensor(np.ones(3, np.float32))).numpy(), 2 * np.ones(3))
    with pytest.raises(AssertionError) as info:
        static(rt.tensor(-np.ones(3, np.float32)))
    assert "sum must be positive" in str(info.value)
    assert f":{_line_of(f, 'assert x.sum()')}" in str(info.value)
    assert static.cache_size == 1


def test_print_runs_only_on_the_path_taken(capsys):
    def f(x):
        if x.sum() > 0:
            print("positive", x.sum())
        else:
            print("negative")
        return x
    static = to_static(f)
    static(rt.tensor(np.ones(2, np.float32)))
    static(rt.tensor(-np.ones(2, np.float32)))
    out = capsys.readouterr().out.splitlines()
    assert out == ["positive 2.0", "negative"]


def test_input_spec_mismatch_is_rejected_not_retraced():
    def f(x):
        return x * 2
    static = to_static(f, input_spec=[InputSpec([None, 3], "float32", "x")])
    static(_t(2, 3))
    static(_t(5, 3))
    assert static.cache_size == 1
    with pytest.raises(ValueError, match=r"'x'.*\[\?, 3\].*\[2, 4\]"):
        static(_t(2, 4))
    with pytest.raises(ValueError, match="'x'"):
        static(_t(3))
    with pytest.raises(TypeError, match="'x'.*float32.*float64"):
        static(rt.tensor(np.ones((2, 3))))
    assert static.cache_size == 1


def test_tensor_condition_in_unconverted_code_points_at_that_line():
    with pytest.raises(ConversionError) as info:
        to_static(calls_opted_out)(_t(3))
    assert f"line {_line_of(opted_out, 'if x.sum() > 0')}" in str(info.value)
    assert "if x.sum() > 0:" in str(info.value)


def test_a_traced_value_used_as_a_python_int_names_where_it_was_computed_and_what_to_do():
    import operator

    import numpy as np
    import runtime as rt
    from transpiler import to_static

    def head(x):
        count = x.sum() % 3
        # a library asks for a Python index (`int(count)` and `math.floor(count)` are graph casts)
        return x[:operator.index(count)]
    with pytest.raises(TypeError) as info:
        to_static(head)(rt.asarray(np.ones(4, np.float32)))
    message = str(info.value)
    assert "`remainder`" in message and f"{__file__}:" in message and "keep it a tensor" in message
    assert "Variable 'remainder'" not in message


def test_assert_of_a_tensor_of_several_elements_is_the_truth_value_error_of_eager():
    def f(x):
        assert x > 0
        return x
    for data in ([1.0, 2.0], [1.0, -2.0]):
        with pytest.raises(ValueError, match="ambiguous"):
            f(rt.tensor(np.array(data, np.float32)))
        with pytest.raises(ValueError, match="ambiguous"):
            to_static(f)(rt.tensor(np.array(data, np.float32)))
