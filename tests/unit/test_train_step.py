"""A whole training step (forward, backward, optimizer step, zero_grad) as one Program, against the eager step."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from transpiler import InputSpec, to_static

RNG = np.random.default_rng(0)
STEPS = 4


def batches(n=STEPS, batch=8):
    return [(RNG.standard_normal((batch, 6)).astype(np.float32), RNG.integers(0, 3, batch)) for _ in range(n)]


def make(norm=False):
    rt.seed(1)
    layers = [nn.Linear(6, 16)] + ([nn.BatchNorm1D(16)] if norm else []) + [nn.ReLU(), nn.Linear(16, 3)]
    return nn.Sequential(*layers)


def stepper(model, opt):
    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return train_step


def assert_same_state(a, b, opt_a, opt_b, rtol=1e-5):
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=rtol, atol=1e-6, err_msg=name)
    sa, sb = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    for i in sa:
        for k in sa[i]:
            np.testing.assert_allclose(sb[i][k].numpy(), sa[i][k].numpy(), rtol=rtol, atol=1e-6, err_msg=f"{i}.{k}")


OPTIMIZERS = {
    "sgd_momentum": lambda ps: rt.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "adam": lambda ps: rt.optim.Adam(ps, lr=0.01, amsgrad=True),
    "adamw": lambda ps: rt.optim.AdamW(ps, lr=0.01),
}


@pytest.mark.parametrize("norm", [False, True], ids=["mlp", "batchnorm"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_static_training_step_matches_the_eager_one(name, norm):
    eager_model, static_model = make(norm), make(norm)
    eager_opt, static_opt = OPTIMIZERS[name](eager_model.parameters()), OPTIMIZERS[name](static_model.parameters())
    eager_step = stepper(eager_model, eager_opt)
    static_step = to_static(stepper(static_model, static_opt))
    params = static_model.parameters()
    for x, y in batches():
        want = eager_step(rt.tensor(x), rt.tensor(y))
        got = static_step(rt.tensor(x), rt.tensor(y))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    assert static_step.cache_size == 1
    assert static_model.parameters() == params and all(p.grad is None for p in params)
    assert_same_state(eager_model, static_model, eager_opt, static_opt)


def test_eager_and_static_steps_continue_one_trajectory_and_lr_changes_without_retrace():
    eager_model, mixed_model = make(), make()
    eager_opt, mixed_opt = rt.optim.Adam(eager_model.parameters(), lr=0.02), \
        rt.optim.Adam(mixed_model.parameters(), lr=0.02)
    eager_step, eager_of_mixed = stepper(eager_model, eager_opt), stepper(mixed_model, mixed_opt)
    static_step = to_static(eager_of_mixed, input_spec=[InputSpec([None, 6]), InputSpec([None], "int64")])
    data = [batches(1, batch=5 + k)[0] for k in range(6)]      # another batch size each step: one trace
    for k, (x, y) in enumerate(data):
        if k == 3:
            eager_opt.param_groups[0]["lr"] = mixed_opt.param_groups[0]["lr"] = 0.005
        eager_step(rt.tensor(x), rt.tensor(y))
        (eager_of_mixed if k % 2 else static_step)(rt.tensor(x), rt.tensor(y))
    assert static_step.cache_size == 1 and static_step.retrace_reasons == []
    assert_same_state(eager_model, mixed_model, eager_opt, mixed_opt)


def test_value_and_grad_with_a_hand_written_update_in_one_program():
    rt.seed(2)
    w = nn.Parameter(RNG.standard_normal((6, 3)).astype(np.float32))
    start = w.numpy()

    def loss_fn(w, x, y):
        return F.cross_entropy(x @ w, y)

    @to_static
    def sgd_step(x, y):
        loss, g = rt.value_and_grad(loss_fn)(w, x, y)
        w.set_value(w - 0.5 * g)
        return loss

    data = batches()
    for x, y in data:
        sgd_step(rt.tensor(x), rt.tensor(y))
    want = start
    for x, y in data:                      # the same descent in NumPy: softmax cross-entropy's gradient
        logits = x @ want
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(y)), y] -= 1
        want = want - 0.5 * x.T @ p / len(y)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-4, atol=1e-6)
    assert sgd_step.cache_size == 1


def test_saving_a_training_step_is_refused(tmp_path):
    import transpiler
    model = make()
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    step = to_static(stepper(model, opt))
    x, y = batches(1)[0]
    step(rt.tensor(x), rt.tensor(y))
    with pytest.raises(ValueError, match="training step"):
        transpiler.save(step, str(tmp_path / "step"))


def test_a_static_update_reads_the_gradients_each_eager_backward_leaves():
    w = nn.Parameter(np.ones(3, np.float32))
    unused = nn.Parameter(np.ones(2, np.float32))
    opt = rt.optim.SGD([w, unused], lr=0.1, momentum=0.5)

    @to_static
    def update(x):
        opt.step()
        return x

    x = rt.tensor(np.zeros(1, np.float32))
    want, buf = np.ones(3), None
    for k in (1.0, 2.0, 3.0):
        (w * k).sum().backward()
        update(x)
        opt.zero_grad()
        g = np.full(3, k)
        buf = g if buf is None else 0.5 * buf + g
        want = want - 0.1 * buf
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(unused.numpy(), [1, 1])
    assert update.cache_size == 1
    unused.grad = rt.tensor(np.ones(2, np.float32))          # a gradient where the trace saw None: retrace
    w.grad = rt.tensor(np.zeros(3, np.float32))
    update(x)
    np.testing.assert_allclose(unused.numpy(), [0.9, 0.9], rtol=1e-6)
    assert update.retrace_reasons and "parameter 1.grad" in update.retrace_reasons[-1]


@pytest.mark.parametrize("clear", ["optimizer", "layer"])
def test_a_static_update_after_an_eager_backward_clears_the_gradients_on_every_call(clear):
    # zero_grad() in the traced update used to clear `.grad` while tracing only: from the second call on, the
    # gradients of earlier eager backward() calls piled up and every step used their sum
    eager_model, mixed_model = make(), make()
    eager_opt = rt.optim.SGD(eager_model.parameters(), lr=0.1, momentum=0.9)
    mixed_opt = rt.optim.SGD(mixed_model.parameters(), lr=0.1, momentum=0.9)

    def update(model, opt):
        opt.step()
        opt.zero_grad() if clear == "optimizer" else model.clear_gradients()

    static_update = to_static(lambda: update(mixed_model, mixed_opt))
    for x, y in batches():
        for model in (eager_model, mixed_model):
            F.cross_entropy(model(rt.tensor(x)), rt.tensor(y)).backward()
        update(eager_model, eager_opt)
        static_update()
        assert all(p.grad is None for p in mixed_model.parameters())
    assert static_update.cache_size == 1
    assert_same_state(eager_model, mixed_model, eager_opt, mixed_opt)
