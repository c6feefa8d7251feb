"""What Python asks of a traced value answers as it would eagerly (issues 18.2, 18.7, 18.8, 9.6, 9.11).

The oracle is the same function run eagerly (plain Python on eager Tensors) or with NumPy.
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .oracle import compare


def eager_and_static(fn, *args):
    """fn run eagerly and converted, on the same arguments; the results must agree."""
    want = fn(*args)
    got = to_static(fn)(*args)
    compare(got, want)
    return got


def t(value, dtype=np.float32):
    return rt.tensor(np.asarray(value, dtype))


# --- isinstance ------------------------------------------------------------------------------------

def test_isinstance_of_a_traced_value_is_true_for_tensor():
    def f(x):
        y = x * 2
        if isinstance(y, rt.Tensor) and isinstance(x, (int, rt.Tensor)):
            return y + 1
        return y - 1
    eager_and_static(f, t([1.0, 2.0]))


def test_isinstance_of_a_traced_value_is_false_for_what_it_is_not_eagerly():
    def f(x):
        flags = (isinstance(x, (int, float)), isinstance(x, np.ndarray), isinstance(x, list),
                 isinstance(x, rt.Parameter), isinstance(x * 1, rt.Tensor))
        return x, flags
    got = eager_and_static(f, t([1.0]))
    assert got[1] == (False, False, False, False, True)


def test_isinstance_of_a_captured_parameter_is_parameter():
    weight = rt.Parameter(np.ones(2, np.float32), rt.tensor(np.ones(2, np.float32)).backend)

    def f(x):
        w = weight
        if isinstance(w, rt.Parameter):
            return x * w
        return x
    eager_and_static(f, t([3.0, 4.0]))


def test_isinstance_through_a_variable():
    def f(x):
        check = isinstance
        return x + 1 if check(x, rt.Tensor) else x - 1
    eager_and_static(f, t([3.0]))


# --- predicates known while tracing ---------------------------------------------------------------

def test_predicate_on_a_constant_made_in_the_function_takes_the_python_path():
    def f(x):
        c = rt.asarray([10])
        if c == 10:
            y = (x, x * 2)          # branches differ in structure and rank, as they may eagerly
        else:
            y = rt.zeros((2, 3))
        z = x + 1 if (c * 2).sum() > 25 else rt.zeros((4, 4))
        assert c < 11, "c is small"
        return y, z, (not c), (c == 10) and x, (c == 3) or x
    static = to_static(f)
    eager_and_static(f, t([1.0, 2.0]))
    assert "cond" not in {op.type for op in static.get_program(t([1.0, 2.0])).ops()}


def test_known_false_assert_raises_while_tracing_like_eager():
    def f(x):
        c = rt.asarray(3)
        assert c > 5, "c must exceed 5"
        return x
    with pytest.raises(AssertionError, match="c must exceed 5"):
        f(t(1.0))
    with pytest.raises(AssertionError, match="c must exceed 5"):
        to_static(f)(t(1.0))


LIMIT = rt.asarray([10])


def test_predicate_on_a_captured_global_is_read_when_the_program_runs():
    def f(x):
        if LIMIT == 10:
            y = x + 1
        else:
            y = x - 1
        return y
    static = to_static(f)
    before = LIMIT.numpy().copy()
    try:
        assert float(static(t(1.0))) == 2.0
        LIMIT.data[...] = 3                     # an in-place update between calls
        assert float(static(t(1.0))) == float(f(t(1.0))) == 0.0
        assert static.cache_size == 1
    finally:
        LIMIT.data[...] = before


def test_predicate_mixing_a_constant_and_an_input_stays_a_graph_op():
    def f(x):
        c = rt.asarray(2.0)
        if c * x.sum() > 3:
            return x * 2
        return x
    static = to_static(f)
    for value in ([0.5, 0.5], [2.0, 3.0]):
        compare(static(t(value)), f(t(value)))
    assert "cond" in {op.type for op in static.get_program(t([1.0, 1.0])).ops()}


# --- rt.zeros(shape) with a tensor shape ---------------------------------------------------------

def test_zeros_with_a_shape_tensor_eagerly():
    shape = rt.asarray([2, 3])
    np.testing.assert_array_equal(rt.zeros(shape).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(rt.ones(rt.asarray(np.array([3], np.int64)), dtype="int32").numpy(),
                                  np.ones(3, np.int32))
    with pytest.raises(TypeError):
        rt.zeros(rt.asarray([2.0, 3.0]))


SHAPE = rt.asarray([2, 2])


def test_zeros_with_a_traced_shape_has_dynamic_dims():
    def f(x, shape):
        a = rt.zeros(shape) + x           # an input: read when the Program runs
        b = rt.ones(SHAPE)                # a captured global: read when the Program runs
        c = rt.zeros(rt.asarray([1, 2]))  # made here from constants: static
        return a.sum(), b.sum(), c
    static = to_static(f)
    for dims in ([4, 5], [1, 3]):
        compare(static(t(1.0), rt.asarray(dims)), f(t(1.0), rt.asarray(dims)))
    before = SHAPE.numpy().copy()
    try:
        SHAPE.data[...] = [3, 3]
        compare(static(t(1.0), rt.asarray([1, 1])), f(t(1.0), rt.asarray([1, 1])))
    finally:
        SHAPE.data[...] = before
    assert static.cache_size == 1
    program = static.get_program(t(1.0), rt.asarray([4, 5]))
    zeros = [op for op in program.ops() if op.type == "zeros"]
    assert [o.outputs[0].static_shape for o in zeros] == [(-1, -1), (1, 2)]
