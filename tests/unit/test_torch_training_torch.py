"""The training utilities against torch (optional: skipped without PyTorch, which CI does not install)."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.optim import lr_scheduler

torch = pytest.importorskip("torch")
TS = torch.optim.lr_scheduler


def _sequence(optim, sched_mod, make, opt_name="SGD", steps=14, metrics=None, **opt_kwargs):
    if optim is torch.optim:
        params = [torch.nn.Parameter(torch.zeros(2))]
    else:
        params = [nn.Parameter(np.zeros(2, np.float32))]
    opt = getattr(optim, opt_name)(params, lr=0.1, **opt_kwargs)
    sched = make(sched_mod, opt)
    out = []
    for i in range(steps):
        group = opt.param_groups[0]
        out.append((group["lr"], group.get("momentum", 0.0), group.get("betas", (0.0,))[0]))
        opt.step()
        sched.step(metrics[i]) if metrics else sched.step()
    return np.array(out)


SCHEDULES = {
    "step": lambda m, o: m.StepLR(o, 3, gamma=0.5),
    "multistep": lambda m, o: m.MultiStepLR(o, [2, 5, 9], gamma=0.3),
    "exponential": lambda m, o: m.ExponentialLR(o, 0.8),
    "cosine": lambda m, o: m.CosineAnnealingLR(o, T_max=6, eta_min=0.001),
    "lambda": lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e + 0.1),
    "linear": lambda m, o: m.LinearLR(o, start_factor=0.2, total_iters=6),
    "onecycle_cos": lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=14),
    "onecycle_linear_three": lambda m, o: m.OneCycleLR(o, max_lr=0.5, epochs=2, steps_per_epoch=7,
                                                       anneal_strategy="linear", three_phase=True, pct_start=0.25),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("opt_name,kwargs", [("SGD", {"momentum": 0.9}), ("Adam", {})], ids=["sgd", "adam"])
def test_schedule_against_torch(name, opt_name, kwargs):
    make = SCHEDULES[name]
    ours = _sequence(rt.optim, lr_scheduler, make, opt_name, **kwargs)
    theirs = _sequence(torch.optim, TS, make, opt_name, **kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_reduce_on_plateau_against_torch():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85]
    make = lambda m, o: m.ReduceLROnPlateau(o, patience=2, factor=0.3, cooldown=1, threshold=0.01)  # noqa: E731
    np.testing.assert_allclose(_sequence(rt.optim, lr_scheduler, make, metrics=metrics),
                               _sequence(torch.optim, TS, make, metrics=metrics), rtol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_against_torch(norm_type):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4,), (2, 2)]]
    ours = [nn.Parameter(a) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    for p, q, a in zip(ours, theirs, arrays):
        p.grad = rt.tensor(a * 3)
        q.grad = torch.tensor(a * 3)
    n1 = nn.utils.clip_grad_norm_(ours, 1.5, norm_type)
    n2 = torch.nn.utils.clip_grad_norm_(theirs, 1.5, norm_type)
    np.testing.assert_allclose(n1.numpy(), n2.numpy(), rtol=1e-6)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    nn.utils.clip_grad_value_(ours, 0.1)
    torch.nn.utils.clip_grad_value_(theirs, 0.1)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_categorical_against_torch_with_gradients():
    logits = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    value = np.array([0, 4, 2])
    ours_l = rt.tensor(logits, requires_grad=True)
    theirs_l = torch.tensor(logits, requires_grad=True)
    d1 = rt.distributions.Categorical(logits=ours_l)
    d2 = torch.distributions.Categorical(logits=theirs_l)
    lp1, lp2 = d1.log_prob(rt.tensor(value)), d2.log_prob(torch.tensor(value))
    e1, e2 = d1.entropy(), d2.entropy()
    np.testing.assert_allclose(lp1.numpy(), lp2.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(e1.numpy(), e2.detach().numpy(), rtol=1e-5)
    (lp1.sum() + e1.sum()).backward()
    (lp2.sum() + e2.sum()).backward()
    np.testing.assert_allclose(ours_l.grad.numpy(), theirs_l.grad.numpy(), rtol=1e-5, atol=1e-6)
    probs = np.abs(logits)
    d3, d4 = rt.distributions.Categorical(probs=rt.tensor(probs)), torch.distributions.Categorical(
        probs=torch.tensor(probs))
    np.testing.assert_allclose(d3.log_prob(rt.tensor(value)).numpy(), d4.log_prob(torch.tensor(value)).numpy(),
                               rtol=1e-5)
    assert tuple(d3.sample((7,)).shape) == tuple(d4.sample((7,)).shape)


def test_data_loader_batches_as_torchs():
    xs, ys = np.arange(10, dtype=np.float32).reshape(5, 2), np.arange(5)
    ours = rt.utils.data.DataLoader(rt.utils.data.TensorDataset(rt.tensor(xs), rt.tensor(ys)), batch_size=2)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(xs), torch.tensor(ys)),
                                         batch_size=2)
    assert len(ours) == len(theirs)
    for (a, b), (c, d) in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), c.numpy())
        np.testing.assert_array_equal(b.numpy(), d.numpy())
