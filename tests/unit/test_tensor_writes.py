"""Writes into Tensors that last (`set_value`, `param -= ...`, buffer assignment), eagerly and from Programs."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from transpiler import to_static

RNG = np.random.default_rng(0)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_set_value_eagerly_keeps_identity_casts_and_broadcasts():
    t = rt.tensor(np.zeros((2, 3), np.float32))
    same = t
    t.set_value(np.arange(3))                       # int64 row: broadcast, cast to float32
    assert same is t and t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.tile(np.arange(3, dtype=np.float32), (2, 1)))
    source = np.ones((2, 3), np.float32)
    t.set_value(source)
    source[0, 0] = 7                                # the tensor holds its own copy
    assert t.numpy()[0, 0] == 1
    with pytest.raises(ValueError, match="cannot be written"):
        t.set_value(np.ones((4,), np.float32))
    with pytest.raises(TypeError, match="same_kind"):
        rt.tensor(np.zeros(3, np.int64)).set_value(np.ones(3, np.float32))


def test_augmented_assignment_writes_into_a_parameter_but_rebinds_a_tensor():
    p = rt.Parameter(np.ones(3, np.float32))
    alias = p
    p -= 0.25
    assert alias is p and isinstance(p, rt.Parameter)
    np.testing.assert_array_equal(alias.numpy(), np.full(3, 0.75, np.float32))
    t = rt.tensor(np.ones(3, np.float32))
    before = t
    t -= 1
    assert before is not t and before.numpy()[0] == 1


class Scaler(nn.Layer):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.ones(3, np.float32))
        self.register_buffer("total", rt.zeros((3,)))

    def forward(self, x):
        self.w -= 0.5 * x                           # in place, as PyTorch
        self.total = self.total + x                 # a buffer assignment writes into the buffer
        return self.w * self.total


def test_a_program_writes_parameters_and_buffers_after_every_run():
    eager, static = Scaler(), Scaler()
    w, total = static.w, static.total
    fn = to_static(static)
    for _ in range(4):
        x = arr(3)
        np.testing.assert_allclose(fn(rt.tensor(x)).numpy(), eager(rt.tensor(x)).numpy(), rtol=1e-6)
    assert static.w is w and static.total is total and static.forward.cache_size == 1
    np.testing.assert_allclose(w.numpy(), eager.w.numpy(), rtol=1e-6)
    np.testing.assert_allclose(total.numpy(), eager.total.numpy(), rtol=1e-6)


def test_another_program_that_captured_the_tensor_reads_the_written_value():
    p = rt.Parameter(np.zeros(2, np.float32))

    @to_static
    def bump(x):
        p.set_value(p + x)
        return p.sum()

    @to_static
    def read(x):
        return p * x

    one = rt.tensor(np.ones(2, np.float32))
    np.testing.assert_array_equal(read(one).numpy(), [0, 0])
    bump(one)
    bump(one)
    np.testing.assert_array_equal(read(one).numpy(), [2, 2])
    assert bump.cache_size == 1 and read.cache_size == 1


def test_a_write_under_a_tensor_condition_is_refused_with_the_line():
    p = rt.Parameter(np.zeros(2, np.float32))

    @to_static
    def f(x):
        if x.sum() > 0:
            p.set_value(x)
        return x

    with pytest.raises(rt.ControlFlowError, match="tensor-dependent if/while") as info:
        f(rt.tensor(np.ones(2, np.float32)))
    assert "p.set_value(x)" in str(info.value)
    np.testing.assert_array_equal(p.numpy(), [0, 0])


def _bn_model():
    rt.seed(3)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1D(3), nn.ReLU(), nn.Linear(3, 2), nn.BatchNorm1D(2, momentum=None))


def test_batchnorm_training_in_a_static_forward_matches_eager_statistics():
    eager, static = _bn_model(), _bn_model()
    fn = to_static(static)
    for _ in range(5):
        x = arr(8, 4)
        np.testing.assert_allclose(fn(rt.tensor(x)).numpy(), eager(rt.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    for (name, want), (_, got) in zip(eager.named_buffers(), static.named_buffers()):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)
    assert int(static[1].num_batches_tracked) == 5 and static.forward.cache_size == 1


def test_train_and_eval_retrace_a_function_that_calls_a_global_model():
    model = _bn_model()

    @to_static
    def predict(x):
        return model(x)

    x = rt.tensor(arr(8, 4))
    predict(x)
    predict(x)
    model.eval()
    before = model[1].running_mean.numpy()
    out = predict(x)
    np.testing.assert_array_equal(model[1].running_mean.numpy(), before)     # eval: statistics are read only
    np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=1e-6)
    assert int(model[1].num_batches_tracked) == 2
    assert predict.retrace_reasons == ["model.0.training: True -> False"]
    model.train()
    predict(x)
    assert int(model[1].num_batches_tracked) == 3
