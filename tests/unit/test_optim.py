"""rt.optim against hand-written NumPy updates (and torch.optim when PyTorch is importable)."""
import numpy as np
import pytest

import runtime as rt

RNG = np.random.default_rng(0)
STEPS = 5


def numpy_sgd(p, grads, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    buf = None
    for g in grads:
        g = (-g if maximize else g) + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def numpy_adam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
               decoupled=False):
    (b1, b2), m, v, v_max = betas, np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        if amsgrad:
            v_max = np.maximum(v_max, v)
        p = p - lr / (1 - b1 ** t) * m / (np.sqrt(v_max if amsgrad else v) / np.sqrt(1 - b2 ** t) + eps)
    return p


def numpy_adamw(p, grads, weight_decay=1e-2, **kw):
    return numpy_adam(p, grads, weight_decay=weight_decay, decoupled=True, **kw)


def numpy_adagrad(p, grads, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                  maximize=False):
    total = np.full_like(p, initial_accumulator_value)
    for t, g in enumerate(grads, 1):
        g = (-g if maximize else g) + weight_decay * p
        total = total + g * g
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(total) + eps)
    return p


def numpy_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                  maximize=False):
    sq, avg_g, buf = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for g in grads:
        g = (-g if maximize else g) + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            avg_g = alpha * avg_g + (1 - alpha) * g
        step = g / (np.sqrt(sq - avg_g * avg_g) + eps)
        buf = momentum * buf + step
        p = p - lr * (buf if momentum else step)
    return p


CASES = {
    "sgd": (rt.optim.SGD, numpy_sgd, {"lr": 0.1}),
    "sgd_momentum": (rt.optim.SGD, numpy_sgd, {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.05}),
    "sgd_nesterov": (rt.optim.SGD, numpy_sgd, {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}),
    "adam": (rt.optim.Adam, numpy_adam, {"lr": 0.1}),
    "adam_l2_amsgrad": (rt.optim.Adam, numpy_adam, {"lr": 0.05, "betas": (0.8, 0.99), "weight_decay": 0.1,
                                                    "amsgrad": True}),
    "adamw": (rt.optim.AdamW, numpy_adamw, {"lr": 0.1}),
    "adamw_maximize": (rt.optim.AdamW, numpy_adamw, {"lr": 0.02, "eps": 1e-6, "weight_decay": 0.3,
                                                     "maximize": True}),
    "adagrad": (rt.optim.Adagrad, numpy_adagrad, {"lr": 0.1}),
    "adagrad_decay": (rt.optim.Adagrad, numpy_adagrad, {"lr": 0.1, "lr_decay": 0.2, "weight_decay": 0.1,
                                                        "initial_accumulator_value": 0.5, "maximize": True}),
    "rmsprop": (rt.optim.RMSprop, numpy_rmsprop, {"lr": 0.01}),
    "rmsprop_centered_momentum": (rt.optim.RMSprop, numpy_rmsprop, {"lr": 0.01, "alpha": 0.9, "momentum": 0.8,
                                                                   "centered": True, "weight_decay": 0.1}),
}


def run_ours(cls, kwargs, start, grads):
    params = [rt.Parameter(a.copy()) for a in start]
    opt = cls(params, **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = rt.tensor(g)
        opt.step()
    return params, opt


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_the_numpy_formula_over_several_steps(name, dtype):
    cls, oracle, kwargs = CASES[name]
    start = [RNG.standard_normal((3, 4)).astype(dtype), RNG.standard_normal(5).astype(dtype)]
    grads = [[RNG.standard_normal(a.shape).astype(dtype) for a in start] for _ in range(STEPS)]
    params, _ = run_ours(cls, kwargs, start, grads)
    rtol = 1e-12 if dtype == "float64" else 2e-5
    for i, p in enumerate(params):
        want = oracle(start[i].astype(np.float64), [g[i].astype(np.float64) for g in grads], **kwargs)
        assert p.dtype == np.dtype(dtype)
        np.testing.assert_allclose(p.numpy(), want, rtol=rtol, atol=rtol * 1e-2)


def test_defaults_are_pytorchs():
    p = [rt.Parameter(np.zeros(2, np.float32))]
    assert rt.optim.SGD(p).defaults == dict(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                                            nesterov=False, maximize=False)
    adam = rt.optim.Adam(p).defaults
    assert (adam["lr"], adam["betas"], adam["eps"], adam["weight_decay"], adam["amsgrad"]) == \
        (1e-3, (0.9, 0.999), 1e-8, 0.0, False)
    assert rt.optim.AdamW(p).defaults["weight_decay"] == 1e-2


def test_parameters_keep_identity_and_without_grad_are_left_alone():
    a, b = rt.Parameter(np.ones(2, np.float32)), rt.Parameter(np.ones(2, np.float32))
    opt = rt.optim.SGD([a, b], lr=0.5)
    a.grad = rt.tensor(np.ones(2, np.float32))
    opt.step()
    assert opt.param_groups[0]["params"][0] is a
    np.testing.assert_array_equal(a.numpy(), [0.5, 0.5])
    np.testing.assert_array_equal(b.numpy(), [1, 1])


def test_zero_grad_sets_none_or_zeros():
    p = rt.Parameter(np.ones(2, np.float32))
    opt = rt.optim.Adam([p])
    p.grad = rt.tensor(np.ones(2, np.float32))
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), [0, 0])
    opt.zero_grad()
    assert p.grad is None


def test_param_groups_have_their_own_hyperparameters():
    a, b = rt.Parameter(np.ones(2)), rt.Parameter(np.ones(2))
    opt = rt.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    for p in (a, b):
        p.grad = rt.tensor(np.ones(2))
    opt.step()
    np.testing.assert_allclose(a.numpy(), [0.9, 0.9])
    np.testing.assert_allclose(b.numpy(), [0.5, 0.5])
    opt.param_groups[0]["lr"] = 1.0                  # a schedule: the next step uses it
    opt.step()
    np.testing.assert_allclose(a.numpy(), 0.9 - 1.0 * (0.9 * 1 + 1))


def test_state_dict_round_trip_continues_the_same_trajectory():
    start = [RNG.standard_normal(4).astype(np.float32)]
    grads = [[RNG.standard_normal(4).astype(np.float32)] for _ in range(6)]
    straight, _ = run_ours(rt.optim.Adam, {"lr": 0.1}, start, grads)
    first, opt = run_ours(rt.optim.Adam, {"lr": 0.1}, start, grads[:3])
    saved = opt.state_dict()
    assert sorted(saved["state"][0]) == ["exp_avg", "exp_avg_sq", "step"] and saved["param_groups"][0]["params"] == [0]
    copy = [rt.Parameter(first[0].numpy())]
    resumed = rt.optim.Adam(copy, lr=0.5)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == 0.1
    for (g,) in grads[3:]:
        copy[0].grad = rt.tensor(g)
        resumed.step()
    np.testing.assert_allclose(copy[0].numpy(), straight[0].numpy(), rtol=1e-6)


def test_bad_arguments_are_clear_errors():
    p = rt.Parameter(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="Nesterov"):
        rt.optim.SGD([p], momentum=0.0, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        rt.optim.Adam([p], betas=(0.9, 1.5))
    with pytest.raises(ValueError, match="empty parameter list"):
        rt.optim.Adam([])
    with pytest.raises(TypeError, match="float tensors"):
        rt.optim.SGD([rt.tensor(np.zeros(2, np.int64))])
    opt = rt.optim.SGD([p], momentum=0.9)
    with pytest.raises(ValueError, match="form of the update"):
        opt.param_groups[0]["momentum"] = 0.0
    with pytest.raises(ValueError, match="different number"):
        opt.load_state_dict({"state": {}, "param_groups": []})


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_optim(name):
    torch = pytest.importorskip("torch")
    cls, _, kwargs = CASES[name]
    start = [RNG.standard_normal((3, 4)).astype(np.float32)]
    grads = [[RNG.standard_normal((3, 4)).astype(np.float32)] for _ in range(STEPS)]
    params, _ = run_ours(cls, kwargs, start, grads)
    theirs = torch.nn.Parameter(torch.from_numpy(start[0].copy()))
    opt = getattr(torch.optim, cls.__name__)([theirs], **kwargs)
    for (g,) in grads:
        theirs.grad = torch.from_numpy(g)
        opt.step()
    np.testing.assert_allclose(params[0].numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_negative_learning_rate_is_refused_by_every_optimizer():
    for cls in (rt.optim.SGD, rt.optim.Adam, rt.optim.AdamW):
        with pytest.raises(ValueError, match="invalid lr"):
            cls([rt.Parameter(np.zeros(2, np.float32))], lr=-0.1)


OPTIMIZER_CLASSES = (rt.optim.SGD, rt.optim.Adam, rt.optim.AdamW, rt.optim.Adagrad, rt.optim.RMSprop)


@pytest.mark.parametrize("cls", OPTIMIZER_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("lr, error", [(True, TypeError), (float("nan"), ValueError), (float("inf"), ValueError),
                                       ("0.1", TypeError), (None, TypeError), (-1, ValueError)])
def test_constructors_refuse_a_learning_rate_that_is_not_a_usable_number(cls, lr, error):
    # SGD(lr=True) used to be taken, then failed at the first step with a bare KeyError: 'lr'
    with pytest.raises(error, match=f"{cls.__name__}: invalid lr"):
        cls([rt.Parameter(np.zeros(2, np.float32))], lr=lr)


def _trained_adam():
    params = [rt.Parameter(np.ones(3, np.float32)), rt.Parameter(np.ones((2, 2), np.float32))]
    opt = rt.optim.Adam(params, lr=0.1)
    for _ in range(2):
        for p in params:
            p.grad = rt.tensor(np.full(p.shape, 0.5, np.float32))
        opt.step()
    return params, opt


def _other_state():
    """A valid state_dict of another run (other step count, moments and lr), as plain data to tamper with."""
    _, other = _trained_adam()
    other.param_groups[0]["lr"] = 0.02
    for state in other.state.values():
        for t in state.values():
            t.set_value(t + 7)
    saved = other.state_dict()
    return {"state": {i: {k: v.numpy() for k, v in s.items()} for i, s in saved["state"].items()},
            "param_groups": [dict(g) for g in saved["param_groups"]]}


def _tamper_group(**values):
    def tamper(saved):
        saved["param_groups"][0].update(values)
    return tamper


def _tamper_state(name, value):
    def tamper(saved):
        saved["state"][1][name] = value        # the last parameter's: the first one's state comes before it
    return tamper


@pytest.mark.parametrize("tamper, error, match", [
    (_tamper_group(lr=-1), ValueError, "invalid lr"),
    (_tamper_group(lr=float("nan")), ValueError, "invalid lr"),
    (_tamper_group(lr="0.1"), TypeError, "invalid lr"),
    (_tamper_group(lr=None), TypeError, "invalid lr"),
    (_tamper_group(lr=True), TypeError, "invalid lr"),
    (_tamper_group(betas=(2, 5)), ValueError, "betas"),
    (_tamper_group(betas=[0.9]), TypeError, "betas"),
    (_tamper_group(eps=-1), ValueError, "eps"),
    (_tamper_group(amsgrad=True), ValueError, "form of the update"),
    (_tamper_state("step", "five"), TypeError, "'step' of parameter 1"),
    (_tamper_state("exp_avg", np.zeros(4, np.float32)), ValueError, "'exp_avg' of parameter 1 has shape"),
    (_tamper_state("exp_avg_sq", np.zeros((2, 2), np.complex64)), TypeError, "does not cast"),
], ids=["negative-lr", "nan-lr", "str-lr", "none-lr", "bool-lr", "betas-range", "betas-length", "negative-eps",
        "form-change", "str-step", "shape", "dtype"])
def test_a_refused_load_state_dict_changes_nothing(tamper, error, match):
    params, opt = _trained_adam()
    before = {(i, k): (t, t.numpy().copy()) for i, s in enumerate(opt.state.values()) for k, t in s.items()}
    groups = [dict(g) for g in opt.param_groups]
    saved = _other_state()
    tamper(saved)
    with pytest.raises(error, match=match):
        opt.load_state_dict(saved)
    for key, (tensor, array) in before.items():
        now = list(opt.state.values())[key[0]][key[1]]
        assert now is tensor and now.numpy().tobytes() == array.tobytes(), key
    assert [dict(g) for g in opt.param_groups] == groups
    opt.load_state_dict(_other_state())        # the optimizer is still whole: a valid state loads
    assert opt.param_groups[0]["lr"] == 0.02 and float(opt.state[params[0]]["step"].numpy()) == 9.0


def test_load_state_dict_refuses_what_is_not_a_state_dict():
    _, opt = _trained_adam()
    for bad in (None, {"state": {}}, {"param_groups": [], "state": []}, {"state": {}, "param_groups": [5]}):
        with pytest.raises(ValueError, match="load_state_dict"):
            opt.load_state_dict(bad)


@pytest.mark.parametrize("value, error", [(float("nan"), ValueError), (True, TypeError), ("0.1", TypeError),
                                          (-0.5, ValueError)])
def test_a_schedule_setting_an_unusable_learning_rate_is_refused_and_changes_nothing(value, error):
    # `group["lr"] = True` used to be stored beside the old lr tensor, which the next step kept using
    p = rt.Parameter(np.ones(2, np.float32))
    opt = rt.optim.SGD([p], lr=0.1)
    with pytest.raises(error, match="invalid lr"):
        opt.param_groups[0]["lr"] = value
    assert opt.param_groups[0]["lr"] == 0.1
    opt.param_groups[0]["lr"] = 0.5
    p.grad = rt.tensor(np.ones(2, np.float32))
    opt.step()
    np.testing.assert_allclose(p.numpy(), [0.5, 0.5])


def test_flags_and_pairs_take_what_pytorch_takes():
    """0/1 for a flag and a list for betas are what configs loaded from JSON hold; PyTorch accepts both."""
    p = rt.Parameter(np.zeros(2, np.float32))
    assert rt.optim.Adam([p], amsgrad=0, betas=[0.8, 0.9]).param_groups[0]["betas"] == (0.8, 0.9)
    rt.optim.SGD([p], momentum=0.9, nesterov=1)
    with pytest.raises(TypeError, match="amsgrad"):
        rt.optim.Adam([p], amsgrad=2)
    with pytest.raises(TypeError, match="amsgrad"):
        rt.optim.Adam([p], amsgrad="yes")
