"""Adamax, NAdam, RAdam and the added lr schedules against NumPy re-statements of PyTorch's formulas (runs
without torch), eagerly and in a static training step; torch cross-checks are at the end (skipped without it)."""
import math

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

_rng = np.random.default_rng(2)
W0 = _rng.standard_normal((4, 3)).astype(np.float32)
X = _rng.standard_normal((5, 4)).astype(np.float32)
STEPS = 6


def _grad(w):
    """d/dw mean((X @ w) ** 2)."""
    return (2 * X.T @ (X @ w) / (X.shape[0] * w.shape[1])).astype(np.float64)


def _np_adamax(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    w, m, u = W0.astype(np.float64), 0.0, 0.0
    for t in range(1, STEPS + 1):
        g = _grad(w) + weight_decay * w
        m = m + (1 - betas[0]) * (g - m)
        u = np.maximum(betas[1] * u, np.abs(g) + eps)
        w = w - lr / (1 - betas[0] ** t) * m / u
    return w


def _np_nadam(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3, decoupled=False):
    w, m, v, mu_product = W0.astype(np.float64), 0.0, 0.0, 1.0
    for t in range(1, STEPS + 1):
        g = _grad(w)
        if decoupled:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        mu = betas[0] * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = betas[0] * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        mu_product *= mu
        m = m + (1 - betas[0]) * (g - m)
        v = betas[1] * v + (1 - betas[1]) * g * g
        denom = np.sqrt(v / (1 - betas[1] ** t)) + eps
        w = w - lr * (1 - mu) / (1 - mu_product) * g / denom - lr * mu_next / (1 - mu_product * mu_next) * m / denom
    return w


def _np_radam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, steps=STEPS):
    w, m, v = W0.astype(np.float64), 0.0, 0.0
    rho_inf = 2 / (1 - betas[1]) - 1
    for t in range(1, steps + 1):
        g = _grad(w) + weight_decay * w
        m = m + (1 - betas[0]) * (g - m)
        v = betas[1] * v + (1 - betas[1]) * g * g
        rho_t = rho_inf - 2 * t * betas[1] ** t / (1 - betas[1] ** t)
        step = m / (1 - betas[0] ** t)
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            step = step * rect * math.sqrt(1 - betas[1] ** t) / (np.sqrt(v) + eps)
        w = w - lr * step
    return w


def _train(make_optimizer, static, steps=STEPS):
    w = rt.nn.Parameter(rt.tensor(W0.copy()))
    opt = make_optimizer([w])
    x = rt.tensor(X)

    def step(x):
        opt.zero_grad()
        loss = ((x @ w) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    run = to_static(step) if static else step
    for _ in range(steps):
        run(x)
    return w.numpy()


OPTIMIZERS = {
    "adamax": (lambda ps: rt.optim.Adamax(ps, lr=0.05), lambda: _np_adamax(lr=0.05)),
    "adamax_wd": (lambda ps: rt.optim.Adamax(ps, lr=0.05, betas=(0.8, 0.9), weight_decay=0.1),
                  lambda: _np_adamax(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    "nadam": (lambda ps: rt.optim.NAdam(ps, lr=0.05), lambda: _np_nadam(lr=0.05)),
    "nadam_decoupled": (lambda ps: rt.optim.NAdam(ps, lr=0.05, weight_decay=0.1, decoupled_weight_decay=True,
                                                  momentum_decay=0.01),
                        lambda: _np_nadam(lr=0.05, weight_decay=0.1, decoupled=True, momentum_decay=0.01)),
    "radam": (lambda ps: rt.optim.RAdam(ps, lr=0.05, weight_decay=0.1),
              lambda: _np_radam(lr=0.05, weight_decay=0.1)),
    "radam_rectified": (lambda ps: rt.optim.RAdam(ps, lr=0.05, betas=(0.9, 0.9)),   # rho_t > 5 at step 6
                        lambda: _np_radam(lr=0.05, betas=(0.9, 0.9))),
}


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_against_numpy(name, static):
    make, oracle = OPTIMIZERS[name]
    np.testing.assert_allclose(_train(make, static), oracle(), rtol=1e-4, atol=1e-5)


def _lrs(make_scheduler, steps=8, momentum=0.5):
    w = rt.nn.Parameter(rt.tensor(W0.copy()))
    opt = rt.optim.SGD([w], lr=0.1, momentum=momentum)
    scheduler = make_scheduler(opt, rt.optim.lr_scheduler)
    out = []
    for _ in range(steps):
        opt.step()
        scheduler.step()
        out.append(opt.param_groups[0]["lr"])
    return out


def _np_cyclic(base, top, up, epochs, mode="triangular"):
    out = []
    for e in epochs:
        cycle = math.floor(1 + e / (2 * up))
        x = abs(e / up - 2 * cycle + 1)
        scale = 1.0 if mode == "triangular" else 1 / 2 ** (cycle - 1)
        out.append(base + (top - base) * max(0.0, 1 - x) * scale)
    return out


SCHEDULES = {
    "constant": (lambda o, s: s.ConstantLR(o, factor=0.5, total_iters=3), [0.05] * 2 + [0.1] * 6),
    "polynomial": (lambda o, s: s.PolynomialLR(o, total_iters=5, power=2.0),
                   [0.1 * (1 - min(e, 5) / 5) ** 2 for e in range(1, 9)]),
    "multiplicative": (lambda o, s: s.MultiplicativeLR(o, lambda e: 0.9), [0.1 * 0.9 ** e for e in range(1, 9)]),
    "warm_restarts": (lambda o, s: s.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.01),
                      [0.01 + 0.09 * (1 + math.cos(math.pi * c / t)) / 2
                       for c, t in [(1, 2), (0, 4), (1, 4), (2, 4), (3, 4), (0, 8), (1, 8), (2, 8)]]),
    "cyclic": (lambda o, s: s.CyclicLR(o, 0.01, 0.1, step_size_up=2), _np_cyclic(0.01, 0.1, 2, range(1, 9))),
    "cyclic_triangular2": (lambda o, s: s.CyclicLR(o, 0.01, 0.1, step_size_up=2, mode="triangular2"),
                           _np_cyclic(0.01, 0.1, 2, range(1, 9), "triangular2")),
    "sequential": (lambda o, s: s.SequentialLR(o, [s.ConstantLR(o, 0.1, total_iters=3), s.ExponentialLR(o, 0.5)],
                                               milestones=[3]),
                   [0.01, 0.01, 0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125]),
    "chained": (lambda o, s: s.ChainedScheduler([s.ConstantLR(o, 0.5, total_iters=2), s.ExponentialLR(o, 0.9)]),
                [0.1 * 0.9 ** e * (0.5 if e < 2 else 1) for e in range(1, 9)]),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_against_its_formula(name):
    make, want = SCHEDULES[name]
    np.testing.assert_allclose(_lrs(make), want, rtol=1e-9)


def test_cyclic_momentum_moves_against_the_rate():
    w = rt.nn.Parameter(rt.tensor(W0.copy()))
    opt = rt.optim.SGD([w], lr=0.1, momentum=0.9)
    scheduler = rt.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, base_momentum=0.8, max_momentum=0.9)
    scheduler.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.055) and opt.param_groups[0]["momentum"] == pytest.approx(0.85)


def test_against_torch():
    torch = pytest.importorskip("torch")
    for name in ("Adamax", "NAdam", "RAdam"):
        for kwargs in ({}, {"weight_decay": 0.1}, {"betas": (0.8, 0.7), "lr": 0.1}):
            tw = torch.nn.Parameter(torch.tensor(W0.copy()))
            opt = getattr(torch.optim, name)([tw], **kwargs)
            for _ in range(STEPS):
                opt.zero_grad()
                ((torch.tensor(X) @ tw) ** 2).mean().backward()
                opt.step()
            got = _train(lambda ps, name=name, kwargs=kwargs: getattr(rt.optim, name)(ps, **kwargs), False)
            np.testing.assert_allclose(got, tw.detach().numpy(), rtol=1e-4, atol=1e-6)
