"""PyTorch's training utilities: gradient clipping, learning-rate schedules (which reach a compiled step
without a retrace), Categorical, multinomial, DataLoader. NumPy oracles here; torch cross-checks in
test_torch_training_torch.py."""
import math

import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.optim import lr_scheduler
from runtime.utils.data import DataLoader, TensorDataset
from transpiler import to_static

F = nn.functional


def _model():
    rt.seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


_rng = np.random.default_rng(2)
X = _rng.standard_normal((16, 4)).astype(np.float32)
Y = _rng.integers(0, 3, 16)


def _grads(model):
    return [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("max_norm,norm_type", [(0.1, 2.0), (100.0, 2.0), (0.05, math.inf), (0.2, 1.0)])
def test_clip_grad_norm_scales_all_gradients_together(max_norm, norm_type):
    model = _model()
    F.cross_entropy(model(rt.tensor(X)), rt.tensor(Y)).backward()
    before = _grads(model)
    flat = np.concatenate([g.ravel() for g in before])
    total = np.abs(flat).max() if math.isinf(norm_type) else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    got = nn.utils.clip_grad_norm_(model.parameters(), max_norm, norm_type)
    np.testing.assert_allclose(got.numpy(), total, rtol=1e-5)
    coef = min(max_norm / (total + 1e-6), 1.0)
    for g, p in zip(before, model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5, atol=1e-8)


def test_clip_grad_value_clips_each_element():
    model = _model()
    F.cross_entropy(model(rt.tensor(X)), rt.tensor(Y)).backward()
    before = _grads(model)
    nn.utils.clip_grad_value_(model.parameters(), 0.01)
    for g, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.01, 0.01))


def test_clipping_inside_a_static_training_step_matches_eager():
    def train(static):
        model = _model()
        opt = rt.optim.SGD(model.parameters(), lr=0.5)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.05)
            opt.step()
            opt.zero_grad()
            return loss
        fn = to_static(step) if static else step
        losses = [fn(rt.tensor(X), rt.tensor(Y)).item() for _ in range(4)]
        return losses, [p.numpy() for p in model.parameters()], fn
    eager_losses, eager_params, _ = train(False)
    static_losses, static_params, fn = train(True)
    np.testing.assert_allclose(static_losses, eager_losses, rtol=1e-5)
    for a, b in zip(static_params, eager_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert fn.cache_size == 1


def _lrs(make, steps=12, metric=None, lr=0.1):
    opt = rt.optim.SGD([nn.Parameter(np.zeros(2, np.float32))], lr=lr, momentum=0.9)
    sched = make(opt)
    out = [opt.param_groups[0]["lr"]]
    for i in range(steps):
        opt.step()
        sched.step(metric(i)) if metric else sched.step()
        out.append(opt.param_groups[0]["lr"])
    return out


SCHEDULES = {
    "step": (lambda o: lr_scheduler.StepLR(o, 3, gamma=0.5), lambda e: 0.1 * 0.5 ** (e // 3)),
    "multistep": (lambda o: lr_scheduler.MultiStepLR(o, [2, 7], 0.1), lambda e: 0.1 * 0.1 ** ((e >= 2) + (e >= 7))),
    "exponential": (lambda o: lr_scheduler.ExponentialLR(o, 0.9), lambda e: 0.1 * 0.9 ** e),
    "cosine": (lambda o: lr_scheduler.CosineAnnealingLR(o, 10, eta_min=0.01),
               lambda e: 0.01 + 0.09 * (1 + math.cos(math.pi * e / 10)) / 2),
    "lambda": (lambda o: lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)), lambda e: 0.1 / (e + 1)),
    "linear": (lambda o: lr_scheduler.LinearLR(o, 0.25, 1.0, total_iters=4), lambda e: 0.1 * (0.25 + 0.75 * min(e, 4) / 4)),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedules_follow_their_formulas(name):
    make, formula = SCHEDULES[name]
    np.testing.assert_allclose(_lrs(make), [formula(e) for e in range(13)], rtol=1e-12)


def test_one_cycle_goes_up_then_down_and_cycles_momentum():
    opt = rt.optim.SGD([nn.Parameter(np.zeros(2, np.float32))], lr=0.1, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    lrs, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
    for _ in range(9):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
    assert lrs[0] == pytest.approx(1.0 / 25) and max(lrs) == pytest.approx(1.0) and lrs[-1] == pytest.approx(4e-6)
    assert moms[0] == pytest.approx(0.95) and min(moms) == pytest.approx(0.85) and moms[-1] == pytest.approx(0.95)
    with pytest.raises(ValueError, match="total_steps"):
        sched.step()
        sched.step()


def test_reduce_on_plateau_waits_patience_then_reduces():
    lrs = _lrs(lambda o: lr_scheduler.ReduceLROnPlateau(o, patience=2, factor=0.5), steps=8, metric=lambda i: 1.0)
    assert lrs == [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025]


def test_a_schedule_reaches_a_compiled_step_without_retracing():
    model = _model()
    opt = rt.optim.SGD(model.parameters(), lr=0.2)
    sched = lr_scheduler.StepLR(opt, 1, gamma=0.5)

    @to_static
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    w = model[0].weight
    for i in range(3):
        before = w.numpy().copy()
        step(rt.tensor(X), rt.tensor(Y))
        moved = np.abs(w.numpy() - before).max()
        if i:
            assert moved == pytest.approx(previous * 0.5, rel=0.2)     # the halved rate is what the step used
        previous = moved
        sched.step()
    assert step.cache_size == 1


def test_categorical_log_prob_entropy_and_sampling():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.0, 0.4]], np.float32)
    dist = rt.distributions.Categorical(probs=rt.tensor(p))
    np.testing.assert_allclose(dist.log_prob(rt.tensor([2, 0])).numpy(), np.log([0.5, 0.6]), rtol=1e-6)
    ent = -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(-1)
    np.testing.assert_allclose(dist.entropy().numpy(), ent, rtol=1e-6)
    by_logits = rt.distributions.Categorical(logits=rt.tensor(np.log(p[:1] * 3)))
    np.testing.assert_allclose(by_logits.probs.numpy(), p[:1], rtol=1e-6)
    rt.manual_seed(1)
    draws = dist.sample((4000,)).numpy()
    assert draws.shape == (4000, 2) and draws.dtype == np.int64 and not (draws[:, 1] == 1).any()
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=3) / 4000, p[0], atol=0.03)


def test_data_loader_batches_shuffles_with_the_seed_and_drops_last():
    data = TensorDataset(rt.tensor(np.arange(10, dtype=np.float32)), rt.tensor(np.arange(10) * 2))
    batches = list(DataLoader(data, batch_size=4))
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][1].tolist() == [0, 2, 4, 6]
    assert len(DataLoader(data, batch_size=4)) == 3 and len(DataLoader(data, batch_size=4, drop_last=True)) == 2
    assert [len(b[0]) for b in DataLoader(data, batch_size=4, drop_last=True)] == [4, 4]
    rt.manual_seed(3)
    first = [b[0].tolist() for b in DataLoader(data, batch_size=5, shuffle=True)]
    rt.manual_seed(3)
    again = [b[0].tolist() for b in DataLoader(data, batch_size=5, shuffle=True)]
    assert first == again and sorted(sum(first, [])) == list(range(10)) and first != [[0, 1, 2, 3, 4],
                                                                                      [5, 6, 7, 8, 9]]


def test_adadelta_follows_its_formula():
    p0 = np.array([1.0, -2.0, 0.5], np.float32)
    grads = [np.array([0.3, -0.1, 0.2], np.float32), np.array([-0.2, 0.4, 0.1], np.float32)]
    p = nn.Parameter(p0.copy())
    opt = rt.optim.Adadelta([p], lr=0.5, rho=0.8, eps=1e-6, weight_decay=0.1)
    want, sq, acc = p0.astype(np.float64), 0.0, 0.0
    for g in grads:
        p.grad = rt.tensor(g)
        opt.step()
        d = g + 0.1 * want
        sq = 0.8 * sq + 0.2 * d * d
        delta = np.sqrt(acc + 1e-6) / np.sqrt(sq + 1e-6) * d
        acc = 0.8 * acc + 0.2 * delta * delta
        want = want - 0.5 * delta
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-5)
    assert set(opt.state_dict()["state"][0]) == {"step", "square_avg", "acc_delta"}


def test_one_cycle_stepped_once_per_batch_never_sets_a_negative_rate():
    opt = rt.optim.SGD([nn.Parameter(np.zeros(2, np.float32))], lr=0.1, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=8, anneal_strategy="linear", three_phase=True)
    for _ in range(8):                      # as a training loop does: one step() per batch, total_steps times
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5 / 25 / 1e4)
