"""A result handed to the caller is the caller's: editing it never changes the Program, its parameters,
its constants or the caller's input, for a static function, a loaded Program and an exported module."""
import importlib.util

import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime import nn
from runtime.codegen.ownership import shared_outputs
from transpiler import InputSpec, to_static


def made_constant(x):
    return rt.asarray([1., 2., 3.])


def picked_constant(x):
    if rt.sum(x) > 0:
        y = rt.asarray([1., 2., 3.])
    else:
        y = rt.asarray([4., 5., 6.])
    return y


def constant_view(x):
    return rt.reshape(rt.asarray([[1., 2., 3.]]), (3,))


def loop_over_constant(x):
    y = rt.asarray([1., 2., 3.])
    i = 0
    while rt.sum(x) < i:          # runs zero times: the loop's output is the constant itself
        y = y + 1.0
        i += 1
    return y


def returns_input(x):
    return x


def input_view(x):
    return x[1:]


def constant_in_a_nest(x):
    return {"c": rt.asarray([1., 2., 3.]), "d": [x * 2.0, rt.asarray([7., 8., 9.])]}


FUNCTIONS = [made_constant, picked_constant, constant_view, loop_over_constant, returns_input, input_view,
             constant_in_a_nest]


def _arrays(value):
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v)]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays(v)]
    return [value.numpy() if hasattr(value, "numpy") else np.asarray(value)]


def _scribble(value):
    """What a user may do with a result: edit it in place."""
    for array in _arrays(value):
        array[...] = -99


def _x():
    return np.arange(1., 4., dtype=np.float32)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_editing_a_static_result_changes_nothing(fn):
    static = to_static(fn)
    x = rt.tensor(_x())
    want = [a.copy() for a in _arrays(fn(rt.tensor(_x())))]
    _scribble(static(x))
    np.testing.assert_array_equal(x.numpy(), _x())
    for got, expected in zip(_arrays(static(x)), want):
        np.testing.assert_array_equal(got, expected)
    _scribble(static(x))        # the cache-hit path too
    for got, expected in zip(_arrays(static(x)), want):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_editing_a_loaded_result_changes_nothing_and_save_keeps_the_original(fn, tmp_path):
    spec = [InputSpec([3], "float32", "x")]
    transpiler.save(to_static(fn), tmp_path / "f", input_spec=spec)
    loaded = transpiler.load(tmp_path / "f")
    want = [a.copy() for a in _arrays(fn(rt.tensor(_x())))]
    _scribble(loaded(_x()))
    for got, expected in zip(_arrays(loaded(_x())), want):
        np.testing.assert_array_equal(got, expected)
    transpiler.save(loaded, tmp_path / "again")
    for got, expected in zip(_arrays(transpiler.load(tmp_path / "again")(_x())), want):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_editing_an_exported_result_changes_nothing(fn, tmp_path):
    py_path, _ = transpiler.export_python(to_static(fn), tmp_path / f"m_{fn.__name__}",
                                          input_spec=[InputSpec([3], "float32", "x")])
    spec = importlib.util.spec_from_file_location(f"m_{fn.__name__}", py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    want = [a.copy() for a in _arrays(fn(rt.tensor(_x())))]
    x = _x()
    _scribble(module.run(x=x))
    np.testing.assert_array_equal(x, _x())
    for got, expected in zip(_arrays(module.run(x=_x())), want):
        np.testing.assert_array_equal(got, expected)


def test_a_parameter_returned_directly_is_a_copy():
    layer = nn.Linear(3, 2)
    before = layer.weight.numpy().copy()
    static = to_static(lambda x: (layer(x), layer.weight))
    _, weight = static(rt.tensor(np.ones((1, 3), np.float32)))
    weight.numpy()[...] = 0
    np.testing.assert_array_equal(layer.weight.numpy(), before)


def test_only_outputs_that_may_alias_are_copied():
    """Decided at compile time: a value the run makes (tanh, matmul, a loop's fresh state) is not copied."""
    def fresh(x, w):
        h = rt.tanh(x @ w)
        while rt.sum(h) > 1.0:
            h = h * 0.5
        return h, x @ w, rt.reshape(w, (-1,))
    w = rt.tensor(np.ones((3, 2), np.float32))
    program = to_static(lambda x: fresh(x, w)).get_program(rt.tensor(np.ones((4, 3), np.float32)))
    assert shared_outputs(program) == [2]
