"""Precise points of DESIGN §3: dynamic shapes, liveness-chosen loop state, weak counters, iteration order."""
import numpy as np
import pytest

import runtime as rt
from transpiler import InputSpec, to_source, to_static


def test_dynamic_dims_are_scalar_variables_and_reshape_works():
    def f(x):
        n = x.shape[0]
        m = len(x)
        y = x.reshape(n, -1)
        return y * 2 + m
    static = to_static(f, input_spec=[InputSpec([None, 2, 3], "float32", "x")])
    for batch in (1, 3, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 3)).astype(np.float32)
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), x.reshape(batch, -1) * 2 + batch, rtol=1e-6)
    program = static.get_program(InputSpec([None, 2, 3], "float32", "x"))
    assert program.outputs[0].static_shape == (-1, 6)
    assert "dim" in [op.type for op in program.ops()]
    assert static.cache_size == 1


def test_static_len_unrolls_dynamic_len_loops():
    def f(x):
        total = x[0] * 0
        for i in range(len(x)):
            total = total + x[i]
        return total
    fixed = to_static(f)
    dynamic = to_static(f, input_spec=[InputSpec([None, 3], "float32")])
    x = rt.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    np.testing.assert_allclose(fixed(x).numpy(), x.numpy().sum(0))
    np.testing.assert_allclose(dynamic(x).numpy(), x.numpy().sum(0))
    assert "while" not in [op.type for op in fixed.get_program(x).ops()]
    assert "while" in [op.type for op in dynamic.get_program(x).ops()]


def test_loop_state_is_chosen_by_liveness():
    def f(x):
        while x.sum() < 100:
            scratch = x * 3          # bound in the body, never read after: not loop state
            x = x + scratch
        return x
    program = to_static(f).get_program(rt.tensor(np.ones(2, np.float32)))
    (loop,) = [op for op in program.ops() if op.type == "while"]
    assert len(loop.outputs) == 1        # only x: `scratch` is body-local
    assert "scratch" not in to_source(f).split("def __while_body_0(")[1].split(")")[0]


def test_counter_turned_tensor_stays_weak():
    def f(x):
        i = 0
        while x.sum() < 50:
            x = x + 1
            i += 1
        return x * i
    static = to_static(f)
    out = static(rt.tensor(np.ones(3, np.float32)))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.full(3, 17.0 * 16.0))


def test_iterable_evaluated_once_rebinding_does_not_change_iteration():
    def f(x):
        items = [1.0, 2.0, 3.0]
        for v in items:
            items = [10.0]
            x = x + v
        return x
    np.testing.assert_allclose(to_static(f)(rt.tensor(np.zeros(1, np.float32))).numpy(), [6.0])


def test_while_condition_python_then_tensor():
    def f(x):
        flag = True
        n = 0
        while flag:
            n += 1
            flag = x.sum() * n < 10
        return n
    static = to_static(f)
    x = np.array([1.0, 2.0], np.float32)
    n, want = 0, True
    while want:
        n += 1
        want = x.sum() * n < 10
    assert int(static(rt.tensor(x)).item()) == n
    assert "while" in [op.type for op in static.get_program(rt.tensor(x)).ops()]


def test_args_kwargs_and_stacked_decorators():
    import functools

    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            wrapper.calls += 1
            return fn(*a, **k)
        wrapper.calls = 0
        return wrapper

    @logged
    @to_static
    def f(x, *rest, scale=1.0, **extra):
        total = x * scale
        for r in rest:
            total = total + r
        if extra.get("negate", False):
            total = -total
        return total

    a, b = rt.tensor(np.ones(2, np.float32)), rt.tensor(np.full(2, 2.0, np.float32))
    np.testing.assert_allclose(f(a, b, b, scale=3.0).numpy(), [7.0, 7.0])
    np.testing.assert_allclose(f(a, b, scale=3.0, negate=True).numpy(), [-5.0, -5.0])
    assert f.calls == 2


def test_list_append_under_tensor_if_in_loop():
    def f(x):
        picked = []
        for row in x:
            if row.sum() > 0:
                picked.append(row)
        return rt.stack(picked) if len(picked) > 0 else x[:0]
    x = np.array([[1, 2], [-3, -4], [5, 6]], np.float32)

    def oracle(x):
        return np.stack([r for r in x if r.sum() > 0])
    out = to_static(f)(rt.tensor(x))
    np.testing.assert_allclose(out.numpy(), oracle(x))


def test_subscript_assignment_is_functional_in_graph():
    def f(x):
        y = x
        if x.sum() > 0:
            x[0] = 100.0
        return x, y
    x = rt.tensor(np.ones(3, np.float32))
    out, alias = to_static(f)(x)
    np.testing.assert_allclose(out.numpy(), [100.0, 1.0, 1.0])
    np.testing.assert_allclose(x.numpy(), np.ones(3))   # the caller's tensor is never mutated by a Program


def test_name_first_bound_in_loop_checked_at_run_time():
    def f(x):
        while x.sum() < 10:
            last = x
            x = x * 2
        return last + 1
    static = to_static(f)
    np.testing.assert_allclose(static(rt.tensor(np.ones(2, np.float32))).numpy(), [5.0, 5.0])
    import pytest
    with pytest.raises(UnboundLocalError, match="'last'.*ran zero times"):
        static(rt.tensor(np.full(2, 20.0, np.float32)))
    assert static.cache_size == 1


def _eager_or_error(fn, *args):
    try:
        return fn(*args)
    except UnboundLocalError:
        return UnboundLocalError


def _break_under_if(x, n):
    for i in range(n):
        if x[i] > 2:
            y = x[i] * 2
            break
    else:
        y = x[0]
    return y


def _bound_under_if_in_loop(x, n):       # Paddle's for_loop_dyfunc2 shape: read after the loop
    for i in range(n):
        if x[i] > 2:
            z = x[i] + 1
        if i > 1:
            s = 7
    return z * s


def _bound_in_one_branch_of_while(x, n):
    i = 0
    while i < n:
        if x[i] > 2:
            s = x[i] + 1
        else:
            t = x[i]
        i += 1
    return s


@pytest.mark.parametrize("fn", [_break_under_if, _bound_under_if_in_loop, _bound_in_one_branch_of_while])
def test_name_bound_under_tensor_if_in_tensor_loop_is_read_after_the_loop(fn):
    """Python gives the value whenever the path that binds it ran, and UnboundLocalError otherwise."""
    x = np.array([1.0, 3.0, 5.0, 0.5], np.float32)
    static = to_static(fn)
    for n in range(5):
        expected = _eager_or_error(fn, x, n)
        if expected is UnboundLocalError:
            with pytest.raises(UnboundLocalError, match="referenced before assignment"):
                static(rt.tensor(x), rt.tensor(np.int64(n)))
        else:
            np.testing.assert_allclose(static(rt.tensor(x), rt.tensor(np.int64(n))).numpy(), expected)
    assert static.cache_size == 1


def test_name_bound_under_tensor_ifs_before_and_in_a_loop_stays_an_error_for_every_input():
    """Bound on some paths before the loop too: the loop cannot say on which, so (as after one tensor if)
    reading it is UnboundLocalError for every input, never a value on some paths and an error on others."""
    def f(x, n, c):
        if c.sum() > 0:
            y = x[0]
        for i in range(n):
            if x[i] > 2:
                y = x[i] * 2
        return y
    x = rt.tensor(np.array([1.0, 3.0, 5.0], np.float32))
    for n in (0, 3):
        with pytest.raises(UnboundLocalError, match="'y'.*no value on every path"):
            to_static(f)(x, rt.tensor(np.int64(n)), rt.tensor(np.ones(1, np.float32)))


def test_match_statement_is_printed_with_ast_unparse():
    """astor 0.8.1 has no printer for `match`: the converted source falls back to ast.unparse."""
    def f(x, mode):
        match mode:
            case "double":
                y = x * 2
            case _:
                y = x
        if y.sum() > 0:
            y = y + 1
        return y
    source = to_source(f)
    assert "match mode:" in source and "case 'double':" in source
    static = to_static(f)
    np.testing.assert_allclose(static(rt.tensor(np.ones(2, np.float32)), "double").numpy(), [3.0, 3.0])
    np.testing.assert_allclose(static(rt.tensor(-np.ones(2, np.float32)), "other").numpy(), [-1.0, -1.0])


def test_a_python_float_accumulated_in_a_tensor_loop_keeps_python_bits():
    def f(x, n):
        s = 0.0
        i = 0
        while i < n:                 # a tensor bound: s becomes a weak tensor, still a Python float
            s += 0.1
            i += 1
        return x + s, s
    x = np.array([1.0], np.float64)
    got_sum, got_s = to_static(f)(rt.tensor(x), rt.tensor(3))
    want_sum, want_s = f(x, 3)
    assert got_s.numpy().item() == want_s == 0.1 + 0.1 + 0.1
    assert got_sum.numpy().tolist() == want_sum.tolist()
    assert to_static(f)(rt.tensor(x.astype(np.float32)), rt.tensor(3))[0].dtype == np.float32   # still weak


def test_dividing_by_size_keeps_float32_eagerly_and_static():
    def f(x):
        return x / x.size
    x = np.ones((2, 3), np.float32)
    want = x / x.size                                     # NumPy: a Python int is weak
    for got in (f(rt.tensor(x)), to_static(f)(rt.tensor(x))):
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got.numpy(), want)


def test_a_python_int_counter_to_a_negative_power_is_a_float_as_in_python():
    def f(x, n):
        k = 0
        while k < n:
            k += 1
        return x * k ** -1, k ** -2
    x = np.float32([1.0, 2.0])
    scaled, inverse = to_static(f)(rt.tensor(x), rt.tensor(3))
    want_scaled, want_inverse = f(x, 3)
    assert scaled.dtype == np.float32 and inverse.numpy().item() == want_inverse == 3 ** -2
    np.testing.assert_array_equal(scaled.numpy(), want_scaled)
