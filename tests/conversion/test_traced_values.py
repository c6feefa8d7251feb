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


# --- `in`, list.index, tuple.index ----------------------------------------------------------------

def membership(x, y):
    flags = (x in [y, y + 1, y + 2], x not in (y, y * 2), 3 in [1, 2, 3], x in [x, y])
    if x in [y, y + 1, y + 2]:
        r = x * 10
    else:
        r = -x
    return r, flags


@pytest.mark.parametrize("x, y", [(3.0, 1.0), (7.0, 1.0), (2.0, 2.0), (np.nan, 1.0)])
def test_in_and_not_in_compare_item_by_item(x, y):
    eager_and_static(membership, t(x), t(y))


def test_in_a_tensor_compares_its_rows():
    def f(x, v):
        return v in x, v not in x
    for v in (2.0, 5.0):
        eager_and_static(f, t([1.0, 2.0, 3.0]), t(v))


def test_in_with_every_value_known_is_a_python_value():
    def f(x):
        c = rt.asarray(2)
        return x, c in [rt.asarray(1), rt.asarray(2)], c in (5, 6)
    got = eager_and_static(f, t(1.0))
    assert got[1] is True and got[2] is False


def index_of(x, y):
    items = [y, y + 1, y + 2]
    return items.index(x), (y, x).index(x), items.index(x, 1), [1, 2, 3].index(2)


@pytest.mark.parametrize("x", [2.0, 3.0])
def test_list_and_tuple_index_find_the_first_equal_item(x):
    eager_and_static(index_of, t(x), t(1.0))


def test_index_of_a_missing_tensor_is_value_error_when_the_program_runs():
    def f(x, y):
        return [y, y + 1].index(x)
    static = to_static(f)
    assert int(static(t(2.0), t(1.0))) == 1
    with pytest.raises(ValueError, match="not in list"):
        f(t(5.0), t(1.0))
    with pytest.raises(ValueError, match="not in list"):
        static(t(5.0), t(1.0))


# --- and / or / not: truth-only tests, Python operands in value position ---------------------------

def mixed_rank_tests(x, y, n):
    if (x > 0) and y and not (n > 5):
        r = x
    else:
        r = -x
    z = x * 2 if (y > 0) or (x > 5) else x * 3
    assert (x > -100) and (y > -100) and n < 100, "bounds"
    while (x < 10) and not (y > 100):
        x = x + 1
    if x > 0 > y or n:
        r = r + 1
    return r, z, x


@pytest.mark.parametrize("x, y", [([1.0], 1.0), ([-1.0], 0.0), ([3.0], -2.0)])
def test_and_or_not_as_tests_take_operands_of_any_rank_and_dtype(x, y):
    eager_and_static(mixed_rank_tests, t(x), rt.tensor(np.int32(y)), 1)


def test_and_or_in_value_position_keep_python_operands():
    def f(x, y):
        a = (x.sum() > 0) and (x.min() > -0.5)     # the second comparison only when the first holds
        b = x.max() or y                           # x.max() when it is nonzero, else y
        c = x.min() and y * 2                      # y * 2 when x.min() is nonzero, else x.min()
        return a, b, c
    for x in ([1.0, 2.0], [0.0, 0.0], [-1.0, 1.0]):
        eager_and_static(f, t(x), t(5.0))


def test_and_in_value_position_names_the_variable_when_operands_cannot_merge():
    def rank(x, y):
        picked = (x > 0) and (y > 0)    # shape [1] or shape [], by the data
        return picked

    def dtype(x, y):
        chosen = (x.sum() > 0) or y     # bool or float32, by the data: no one graph value
        return chosen
    for fn, message in ((rank, "'picked' changes rank"), (dtype, "'chosen' has dtype bool")):
        with pytest.raises(TypeError, match=message) as info:
            to_static(fn)(t([1.0]), t(2.0))
        assert "output" not in str(info.value) and "__" not in str(info.value)


# --- a tensor if that picks a function -----------------------------------------------------------

def double(x):
    return x * 2


def decrement(x):
    return x - 1


def as_pair(x):
    return x, x


class Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        if x.sum() > 100:           # user code with its own tensor control flow, converted when called
            return x
        return x * self.k


def test_if_that_picks_a_function_calls_each_in_its_branch():
    def f(x):
        if x.sum() > 5:
            g = double
        else:
            g = decrement
        h = Scale(3) if x.sum() < 0 else (lambda v: v + 100)
        return g(x), h(x), g(g(x))
    static = to_static(f)
    for value in ([1.0, 2.0], [4.0, 5.0], [-3.0, 1.0]):
        compare(static(t(value)), f(t(value)))
    assert static.cache_size == 1


def test_if_that_picks_the_same_function_on_both_paths_keeps_it():
    scale = Scale(2)

    def f(x):
        g = double
        if x.sum() > 0:
            g = double
        h = scale.__call__ if x.sum() > 1 else scale.__call__     # two bound-method objects, one method
        return g(x), h(x), g is double, isinstance(h, type(scale.__call__))
    got = eager_and_static(f, t([1.0]))
    assert got[2] is True and got[3] is True


def test_picked_functions_whose_results_cannot_merge_name_the_variable_and_functions():
    def f(x):
        if x.sum() > 5:
            g = double
        else:
            g = as_pair
        return g(x)
    with pytest.raises(TypeError, match=r"'g' is 'double' or 'as_pair'") as info:
        to_static(f)(t([1.0]))
    assert "<locals>" not in str(info.value) and "__" not in str(info.value)


def test_function_in_one_branch_and_a_tensor_in_the_other_is_an_error_in_user_terms():
    def f(x):
        if x.sum() > 5:
            g = double
        else:
            g = x
        return g
    with pytest.raises(TypeError, match=r"'g' is the function 'double' in the true branch and a tensor in the "
                                         r"false branch") as info:
        to_static(f)(t([1.0]))
    assert "<locals>" not in str(info.value) and "__" not in str(info.value)


NP_LIMIT = np.array([10])


def test_tensor_made_from_a_global_numpy_array_is_not_decided_while_tracing():
    def f(x):
        c = rt.asarray(NP_LIMIT)         # may share the array's memory: read when the Program runs
        if c == 10:
            y = x + 1
        else:
            y = x - 1
        return y
    static = to_static(f)
    try:
        assert float(static(t(1.0))) == 2.0
        NP_LIMIT[0] = 3
        assert float(static(t(1.0))) == float(f(t(1.0))) == 0.0
    finally:
        NP_LIMIT[0] = 10


class Vocabulary:
    def __init__(self, words):
        self.words = words

    def index(self, x):
        if x.sum() > 0:             # tensor control flow: needs the converted method
            return x * 0 + self.words.index("b")
        return x * 0 - 1


def test_a_user_class_index_method_is_still_converted():
    vocab = Vocabulary(["a", "b"])

    def f(x):
        return vocab.index(x), "abc".index("c")
    for value in (1.0, -1.0):
        eager_and_static(f, t(value))


def test_isinstance_of_a_name_assigned_on_one_path_only_is_unbound_local_error():
    def f(x):
        if x.sum() > 0:
            y = x
        return isinstance(y, rt.Tensor)
    with pytest.raises(UnboundLocalError):
        f(t([-1.0]))
    with pytest.raises(NameError, match="'y'"):
        to_static(f)(t([-1.0]))
