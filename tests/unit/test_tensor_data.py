"""PyTorch's `t.data`: a Tensor without gradient that shares t's array, so writes through it change t.

Oracle: the same code run eagerly (and, where torch's meaning is the question, the values it must leave)."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from transpiler import to_static


def _linear():
    rt.seed(0)
    return nn.Linear(3, 2)


def test_data_is_a_tensor_without_gradient_sharing_the_array():
    m = _linear()
    view = m.weight.data
    assert isinstance(view, rt.Tensor) and not isinstance(view, rt.Parameter)
    assert m.weight.requires_grad and not view.requires_grad
    assert view.array is m.weight.array
    np.testing.assert_array_equal(view.numpy(), m.weight.numpy())


@pytest.mark.parametrize("write, expected", [
    (lambda d: d.zero_(), lambda w: np.zeros_like(w)),
    (lambda d: d.fill_(2.5), lambda w: np.full_like(w, 2.5)),
    (lambda d: d.mul_(3.0), lambda w: w * np.float32(3.0)),
    (lambda d: d.add_(rt.ones((2, 3)), alpha=-0.5), lambda w: w - np.float32(0.5)),
    (lambda d: d.copy_(rt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))),
     lambda w: np.arange(6, dtype=np.float32).reshape(2, 3)),
    (lambda d: d.__setitem__((0, 1), 7.0), lambda w: np.where(np.arange(6).reshape(2, 3) == 1, np.float32(7), w)),
])
def test_a_write_through_data_changes_the_tensor_and_is_not_recorded(write, expected):
    m = _linear()
    before = m.weight.numpy().copy()
    write(m.weight.data)                    # a leaf that requires grad: only through .data, as in PyTorch
    np.testing.assert_array_equal(m.weight.numpy(), expected(before))
    assert m.weight.requires_grad and m.weight.grad is None


def test_initializers_and_random_fills_through_data():
    m = _linear()
    m.weight.data.uniform_(-0.1, 0.1)          # PyTorch's word_language_model init_weights
    w = m.weight.numpy()
    assert np.all(np.abs(w) <= 0.1) and len(np.unique(w)) == w.size
    nn.init.constant_(m.bias.data, 0.25)
    np.testing.assert_array_equal(m.bias.numpy(), np.full(2, 0.25, np.float32))
    m.weight.data.normal_(0.0, 0.02)
    assert m.weight.numpy().std() < 0.1


def test_assigning_data_replaces_the_array_and_keeps_the_object():
    m = _linear()
    weight = m.weight
    m.weight.data = m.weight.data * 2
    assert m.weight is weight and weight.requires_grad
    m.weight.data = np.ones((4, 3), np.float32)         # PyTorch lets .data change the shape
    assert m.weight.shape == (4, 3)
    with pytest.raises(TypeError, match=r"t.data = value takes a Tensor"):
        m.weight.data = [[1.0]]


def test_grad_data_zero():
    m = _linear()
    m(rt.ones((4, 3))).sum().backward()
    assert np.all(m.weight.grad.numpy() == 4)
    m.weight.grad.data.zero_()
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.zeros((2, 3), np.float32))


def _manual_sgd(model, update):
    def step(x, y):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        for p in model.parameters():
            update(p)
            p.grad = None
        return loss
    return step


def _sub(p):
    p.data -= 0.1 * p.grad.data


def _add_(p):
    p.data.add_(p.grad.data, alpha=-0.1)


def _assign(p):
    p.data = p.data - 0.1 * p.grad


@pytest.mark.parametrize("update", [_sub, _add_, _assign])
def test_a_static_training_step_writes_parameters_through_data(update):
    rng = np.random.RandomState(1)
    x, y = rt.tensor(rng.rand(4, 3).astype(np.float32)), rt.tensor(rng.rand(4, 2).astype(np.float32))
    eager, static = _linear(), _linear()
    step_e, step_s = _manual_sgd(eager, update), to_static(_manual_sgd(static, update))
    for _ in range(3):
        assert float(step_e(x, y)) == float(step_s(x, y))
        np.testing.assert_array_equal(eager.weight.numpy(), static.weight.numpy())
        np.testing.assert_array_equal(eager.bias.numpy(), static.bias.numpy())
    assert step_s.cache_size == 1


class _Scaled(nn.Layer):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.ones(3, np.float32))

    def forward(self, x):
        return x * self.w.data              # no gradient reaches w


def test_data_read_in_a_traced_forward_is_the_live_value_without_gradient():
    layer = _Scaled()
    f = to_static(layer)
    x = rt.ones(3)
    np.testing.assert_array_equal(f(x).numpy(), np.ones(3, np.float32))
    layer.w.data.fill_(3.0)
    np.testing.assert_array_equal(f(x).numpy(), np.full(3, 3.0, np.float32))
    program = f.forward.get_program(x)
    assert "stop_gradient" in [op.type for op in program.ops()]


def test_data_of_a_traced_value_is_its_detached_value_and_not_a_place():
    def fn(x):
        y = x.data * 2
        return y

    np.testing.assert_array_equal(to_static(fn)(rt.ones(2)).numpy(), np.full(2, 2.0, np.float32))

    def writes(x):
        y = x * 1
        y.data = x
        return y

    with pytest.raises(TypeError, match="not a place"):
        to_static(writes)(rt.ones(2))
