"""A traced value is an instance of `rt.Tensor` everywhere, not only in converted code (issue 24 §2).

The oracle is the same function run eagerly.
"""
import numpy as np
import pytest

import runtime as rt
from runtime.tensor import EagerTensor
from transpiler import not_to_static, to_static


def t(value):
    return rt.tensor(np.asarray(value, np.float32))


@not_to_static
def _doubled_if_tensor(v):
    return v * 2 if isinstance(v, rt.Tensor) else v


class _TensorLike(type):
    def __instancecheck__(cls, obj):          # a library's duck type, asked in its own (unconverted) code
        return isinstance(obj, rt.Tensor)


class TensorLike(metaclass=_TensorLike):
    pass


def test_isinstance_in_a_not_to_static_helper_sees_a_tensor():
    def f(x):
        return _doubled_if_tensor(x + 1)

    x = t([1, 2])
    np.testing.assert_array_equal(to_static(f)(x).numpy(), f(x).numpy())


def test_isinstance_through_a_user_metaclass_sees_a_tensor():
    def f(x):
        return x + (1 if isinstance(x, TensorLike) else 0)

    x = t([1, 2])
    np.testing.assert_array_equal(to_static(f)(x).numpy(), f(x).numpy())


def test_a_captured_parameter_is_a_parameter_outside_converted_code_too():
    w = rt.Parameter(np.ones(2, np.float32))

    @not_to_static
    def kind(v):
        return 2.0 if isinstance(v, rt.Parameter) else 1.0 if isinstance(v, rt.Tensor) else 0.0

    def f(x):
        return x * kind(w) + kind(x)

    x = t([1, 2])
    np.testing.assert_array_equal(to_static(f)(x).numpy(), f(x).numpy())


def test_a_traced_value_is_not_an_eager_tensor_and_its_type_is_not_tensor():
    seen = []

    @not_to_static
    def note(v):
        seen.append((isinstance(v, rt.Tensor), isinstance(v, EagerTensor), type(v) is rt.Tensor))
        return v

    to_static(lambda x: note(x * 2))(t([1]))
    assert seen == [(True, False, False)]


def test_a_traced_value_assigned_to_a_layer_attribute_is_not_registered_as_a_parameter():
    class Net(rt.nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = rt.Parameter(np.full(2, 3, np.float32))

        def forward(self, x):
            self.last = self.w
            return x * self.last

    net = Net()
    out = to_static(net)(t([1, 2]))
    np.testing.assert_array_equal(out.numpy(), [3, 6])
    assert [name for name, _ in net.named_parameters()] == ["w"]


@pytest.mark.parametrize("value", [1.0, np.float32(1), np.ones(2), [1.0]])
def test_other_values_are_no_tensors(value):
    assert not isinstance(value, rt.Tensor) and not isinstance(value, rt.Parameter)
