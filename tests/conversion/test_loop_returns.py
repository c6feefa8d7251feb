"""`return` inside tensor loops with values of any shape, and control-flow errors in the user's terms
(issue 18 item 6): no message names `__return_value`, `output`, a `<locals>` path or another name the
user did not write."""
import re

import numpy as np
import pytest

import runtime as rt
from runtime.errors import ControlFlowError
from transpiler import to_static

GENERATED = re.compile(r"__\w+|\boutput\b|<locals>|dy2static_factory")


def return_in_while(x, bias):
    while x > 0:
        return bias
    return x


def return_after_steps(x, bias):
    while x > 0:
        x = x - 1
        if x < 2:
            return bias
    return bias * 0


def return_pair_from_nested_while(x, bias):
    while x > 0:
        while x > 1:
            x = x - 1
            if x < 3:
                return bias, x
        x = x - 1
    return x, bias


def break_with_compound_test(x, bias):
    while x > 0 and x < 10 or x > 100:
        x = x - 1
        if x < 2:
            break
    return x + bias


def _same(got, want):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("fn", [return_in_while, return_after_steps, return_pair_from_nested_while,
                                break_with_compound_test])
@pytest.mark.parametrize("start", [5.0, 2.0, -2.0, 150.0])
def test_return_and_break_in_a_while_over_shape_one_tensors(fn, start):
    x = rt.tensor(np.array([start], np.float32))
    bias = rt.tensor(np.array([0.5], np.float32))
    _same(to_static(fn)(x, bias), fn(x, bias))


def test_return_value_of_another_rank_is_named_as_the_return_value():
    x = rt.tensor(np.float32(2.0))                       # returns bias ([1]) or x ([]): no single shape
    with pytest.raises(ControlFlowError) as info:
        to_static(return_in_while)(x, rt.tensor(np.array([0.5], np.float32)))
    message = str(info.value)
    assert "the return value changes rank" in message and not GENERATED.search(message), message


def test_conditional_expression_of_two_ranks_names_no_generated_variable():
    def f(x):
        return x if x.sum() > 0 else x.sum()
    with pytest.raises(ControlFlowError) as info:
        to_static(f)(rt.tensor(np.ones(3, np.float32)))
    assert "changes rank" in str(info.value) and not GENERATED.search(str(info.value)), str(info.value)


def helper(v):
    return v + 1


def test_a_function_in_a_branch_error_shows_its_name_not_its_repr():
    def f(x):
        if x.sum() > 0:
            g = helper
        else:
            g = "not callable"
        return x, g
    with pytest.raises(ControlFlowError) as info:
        to_static(f)(rt.tensor(np.ones(3, np.float32)))
    message = str(info.value)
    assert "'g'" in message and "'helper'" in message and not GENERATED.search(message), message


def while_and_python_flag(x, bias):
    flag = bias.sum() > -100.0           # a tensor of shape []; x > 0 has shape [1]
    while x > 0 and flag:
        x = x - 1
    return x


def while_and_or(x, bias):
    while x > 0 and bias.sum() < 10 or x > 100:
        x = x - 1
        bias = bias + 1
    return x, bias


@pytest.mark.parametrize("fn", [while_and_python_flag, while_and_or])
@pytest.mark.parametrize("start", [3.0, -1.0, 150.0])
def test_a_while_test_is_used_only_for_its_truth(fn, start):
    x = rt.tensor(np.array([start], np.float32))
    bias = rt.tensor(np.array([0.5], np.float32))
    _same(to_static(fn)(x, bias), fn(x, bias))


def return_from_tensor_for(x):
    for row in x:
        if row.sum() > 1:
            return row * 2
    return x[0]


def return_from_loop_with_finally(x):
    total = x[0] * 0
    for row in x:
        try:
            if row.sum() > 1:
                return row + total
        finally:
            total = total + 1
    return total


@pytest.mark.parametrize("fn", [return_from_tensor_for, return_from_loop_with_finally])
@pytest.mark.parametrize("seed", range(4))
def test_a_loop_that_returns_stops_on_the_return_flag(fn, seed):
    """A loop with no break of its own exits on `__return_flag` (one with a `finally` keeps a break flag)."""
    x = np.random.default_rng(seed).standard_normal((5, 3)).astype(np.float32)
    want = fn(rt.tensor(x.copy()))
    got = to_static(fn)(rt.tensor(x.copy()))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_the_return_flag_is_the_loops_exit_test():
    from transpiler import to_source
    assert "until='__return_flag'" in to_source(return_from_tensor_for)
    assert "until='__break_0'" in to_source(return_from_loop_with_finally)


def returns_in_the_body_or_the_else(x):
    while x > 0:
        x -= 1
        if x == 7:
            return -1
    else:
        return 100


def returns_in_the_body_or_the_else_of_a_for(xs):
    for v in xs:
        if v > 2:
            return v * 10
    else:
        return -1
    return 0           # unreachable: Python compiles it away


@pytest.mark.parametrize("x", [0, 3, 9])
def test_a_loop_whose_else_returns_always_returns(x):
    # no break of its own: the loop ends only through its `else`, so the function never falls off its
    # end; the last return was `value if flag else None`, a tensor/None mismatch under a tensor flag
    assert int(to_static(returns_in_the_body_or_the_else)(rt.tensor(np.int32(x)))) == \
        returns_in_the_body_or_the_else(x)
    xs = np.arange(x, dtype=np.int32)
    assert int(to_static(returns_in_the_body_or_the_else_of_a_for)(rt.tensor(xs))) == \
        returns_in_the_body_or_the_else_of_a_for(xs)
