"""A trace that fails leaves no state (issue 25, item 1).

An exception or a Ctrl-C while a training step is traced used to leave values of the dead trace in every
parameter's `.grad`, in attributes and in globals: every later call, and an eager backward on the model, then
failed with "belongs to another trace". Here a fault is injected at every step of a training trace, as an
exception and as a KeyboardInterrupt; afterwards every place the trace could touch holds exactly what it held
before, and the model trains on, eagerly and statically, as a twin that never saw the failed call.
"""
import numpy as np
import pytest

import runtime as rt
from runtime import nn, rng
from runtime.nn import functional as F
from transpiler import to_static

FAULT = {"at": None, "kind": ValueError}
POINTS = ["before_forward", "after_forward", "after_backward", "after_step", "after_zero_grad", "in_helper"]
LAST = None          # a global the step rebinds
HISTORY = []         # a global list the step appends to


def fault(at):
    if FAULT["at"] == at:
        raise FAULT["kind"](f"injected {at}")


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.norm = nn.BatchNorm1D(8)           # buffers written by every training forward
        self.fc2 = nn.Linear(8, 3)
        self.calls = 0                          # a Python number the forward changes
        self.last = None                        # an attribute the forward sets to a tensor

    def forward(self, x):
        self.calls += 1
        h = F.relu(self.norm(self.fc1(x)))
        self.last = h.mean()
        return self.fc2(h)


def bookkeeping(model, loss):
    model.seen = loss
    nn.Linear(2, 2)                             # draws from rt.seed's generator while tracing
    fault("in_helper")


def make_step(model, opt):
    def train_step(x, y):
        global LAST
        fault("before_forward")
        out = model(x)
        fault("after_forward")
        loss = F.cross_entropy(out, y)
        loss.backward()
        fault("after_backward")
        opt.step()
        fault("after_step")
        opt.zero_grad()
        fault("after_zero_grad")
        LAST = loss
        HISTORY.append(loss)
        bookkeeping(model, loss)
        return loss
    return train_step


def data(k):
    gen = np.random.default_rng(k)
    return rt.tensor(gen.standard_normal((8, 6)).astype(np.float32)), rt.tensor(gen.integers(0, 3, 8))


def trained_twin():
    """A model and its Adam after two eager steps, with an eager gradient pending (a backward before the call)."""
    rt.seed(3)
    model = Net()
    opt = rt.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    step = make_step(model, opt)
    for k in range(2):
        step(*data(k))
    F.cross_entropy(model(data(2)[0]), data(2)[1]).backward()
    return model, opt, step


def _objects(model):
    """Every attribute of the model and its sublayers, by identity (a Python number by value)."""
    return {(name, key): value for name, layer in [("", model)] + list(model.named_sublayers())
            for key, value in vars(layer).items() if key not in ("_parameters", "_buffers", "_sublayers")}


def snapshot(model, opt):
    return {
        "arrays": {n: t.array.copy() for n, t in list(model.named_parameters()) + list(model.named_buffers())},
        "registries": {n: t for n, t in list(model.named_parameters()) + list(model.named_buffers())},
        "grads": {n: p.grad for n, p in model.named_parameters()},
        "grad_arrays": {n: None if p.grad is None else p.grad.array.copy() for n, p in model.named_parameters()},
        "optimizer": {(i, k): (v, v.array.copy()) for i, s in enumerate(opt.state.values()) for k, v in s.items()},
        "groups": [dict(g) for g in opt.param_groups],
        "attributes": _objects(model),
        "globals": (LAST, list(HISTORY)),
        "rng": (rng.default_rng(), rng.get_state()),
    }


def assert_unchanged(before, after):
    for name, array in before["arrays"].items():
        assert after["arrays"][name].tobytes() == array.tobytes(), name
    assert all(after["registries"][n] is t for n, t in before["registries"].items())
    for name, grad in before["grads"].items():
        assert after["grads"][name] is grad, f"{name}.grad is {after['grads'][name]!r}"
        assert grad is None or grad.array.tobytes() == before["grad_arrays"][name].tobytes()
    for key, (tensor, array) in before["optimizer"].items():
        now, _ = after["optimizer"][key]
        assert now is tensor and now.array.tobytes() == array.tobytes(), key
    assert after["groups"] == before["groups"]
    assert after["attributes"].keys() == before["attributes"].keys()
    for key, value in before["attributes"].items():
        now = after["attributes"][key]
        assert now is value or (type(now) is type(value) and now == value), (key, now, value)
    assert after["globals"][0] is before["globals"][0]
    assert len(after["globals"][1]) == len(before["globals"][1])
    assert all(a is b for a, b in zip(after["globals"][1], before["globals"][1]))
    assert after["rng"][0] is before["rng"][0] and after["rng"][1] == before["rng"][1]


def assert_same_model(a, b, opt_a, opt_b):
    for (name, x), (_, y) in zip(list(a.named_parameters()) + list(a.named_buffers()),
                                 list(b.named_parameters()) + list(b.named_buffers())):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)
        assert (getattr(x, "grad", None) is None) == (getattr(y, "grad", None) is None), name
    for (i, sa), (_, sb) in zip(opt_a.state_dict()["state"].items(), opt_b.state_dict()["state"].items()):
        for k in sa:
            np.testing.assert_allclose(sb[k].numpy(), sa[k].numpy(), rtol=1e-5, atol=1e-7, err_msg=f"{i}.{k}")


@pytest.fixture(autouse=True)
def no_fault():
    yield
    FAULT["at"], FAULT["kind"] = None, ValueError
    HISTORY.clear()


@pytest.mark.parametrize("kind", [ValueError, KeyboardInterrupt])
@pytest.mark.parametrize("point", POINTS)
def test_a_trace_failing_at_any_step_of_training_leaves_everything_as_it_was(point, kind):
    reference, reference_opt, reference_step = trained_twin()
    model, opt, eager_step = trained_twin()
    static_step = to_static(make_step(model, opt))
    before = snapshot(model, opt)
    FAULT["at"], FAULT["kind"] = point, kind
    with pytest.raises(kind, match=f"injected {point}"):     # a KeyboardInterrupt stays one
        static_step(*data(3))
    FAULT["at"] = None
    assert_unchanged(before, snapshot(model, opt))
    assert static_step.cache_size == 0

    # (a) eager forward, backward and step go on as on a model that never saw the failed trace
    want, got = reference_step(*data(4)), eager_step(*data(4))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert_same_model(reference, model, reference_opt, opt)
    # (b) the static step works afterwards and equals the eager one (twice: the second call is the cached Program)
    for k in (5, 6):
        want, got = reference_step(*data(k)), static_step(*data(k))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
        assert_same_model(reference, model, reference_opt, opt)
    assert static_step.cache_size == 1
    assert isinstance(model.seen, rt.Tensor) and isinstance(LAST, rt.Tensor) and model.calls == reference.calls


def test_a_failed_trace_puts_back_globals_and_attributes_holding_python_values():
    counter = {"n": 0}
    box = Net()
    calls, scale = 0, rt.tensor(np.float32(2.0))

    def step(x):
        global LAST
        nonlocal calls, scale
        LAST = "traced"
        calls += 1
        scale = scale * x.sum()
        counter["n"] += 1
        box.calls = 99
        box.tag = "new attribute"
        rt.seed(12)                         # replaces the generator
        fault("before_forward")
        return x * 2

    LAST_before, scale_before, generator = LAST, scale, rng.snapshot()
    FAULT["at"], FAULT["kind"] = "before_forward", KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        to_static(step)(rt.tensor(np.ones(3, np.float32)))
    assert LAST is LAST_before and counter == {"n": 0} and box.calls == 0 and not hasattr(box, "tag")
    assert calls == 0 and scale is scale_before
    assert rng.default_rng() is generator[0] and rng.get_state() == generator[1]


def test_a_failed_rt_trace_puts_back_the_gradients_it_wrote():
    w = rt.tensor(np.ones(3, np.float32))
    w.requires_grad = True
    w.grad = rt.tensor(np.full(3, 5.0, np.float32))
    grad = w.grad

    def loss(x):
        (x * w).sum().backward()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rt.trace(loss, [rt.InputSpec([3], "float32")])
    assert w.grad is grad and w.grad.numpy().tolist() == [5.0, 5.0, 5.0]


@pytest.mark.parametrize("clear", ["optimizer", "layer"])
def test_a_failed_update_step_after_an_eager_backward_keeps_the_eager_gradients(clear):
    rt.seed(4)
    model = nn.Linear(6, 3)
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def update():
        opt.step()
        opt.zero_grad() if clear == "optimizer" else model.clear_gradients()
        fault("after_zero_grad")

    F.cross_entropy(model(data(0)[0]), data(0)[1]).backward()
    grads = [p.grad for p in model.parameters()]
    FAULT["at"], FAULT["kind"] = "after_zero_grad", KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        to_static(update)()
    assert all(p.grad is g for p, g in zip(model.parameters(), grads))


class InterruptedOnce:
    """An object whose first put-back is interrupted by a Ctrl-C (before the value is stored)."""

    armed = []

    def __init__(self):
        self.value = 0

    def __setattr__(self, name, value):
        if name == "value" and self.armed:
            self.armed.clear()
            raise KeyboardInterrupt("pressed again while putting back")
        object.__setattr__(self, name, value)


FLAKY = InterruptedOnce()


def test_a_ctrl_c_while_a_failed_trace_is_put_back_still_puts_everything_back():
    rt.seed(5)
    model = nn.Linear(3, 2)
    w = model.weight

    def step(x):
        FLAKY.value = 5
        (model(x) ** 2).sum().backward()
        InterruptedOnce.armed.append(True)
        fault("after_backward")
        return x

    FAULT["at"] = "after_backward"
    with pytest.raises(KeyboardInterrupt, match="pressed again"):
        to_static(step)(rt.tensor(np.ones((2, 3), np.float32)))
    assert FLAKY.value == 0 and w.grad is None and model.bias.grad is None


class Trainer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = Net()
        self.opt = rt.optim.SGD(self.net.parameters(), lr=0.1, momentum=0.9)
        self.steps = 0

    @to_static
    def train_step(self, x, y):
        loss = F.cross_entropy(self.net(x), y)
        loss.backward()
        self.opt.step()
        self.steps += 1
        self.loss = loss
        fault("after_step")
        self.opt.zero_grad()
        return loss


@pytest.mark.parametrize("kind", [ValueError, KeyboardInterrupt])
def test_a_failed_trace_of_a_static_method_leaves_its_layer_as_it_was(kind):
    rt.seed(6)
    trainer = Trainer()
    before = snapshot(trainer.net, trainer.opt)
    FAULT["at"], FAULT["kind"] = "after_step", kind
    with pytest.raises(kind):
        trainer.train_step(*data(0))
    assert trainer.steps == 0 and not hasattr(trainer, "loss")
    assert_unchanged(before, snapshot(trainer.net, trainer.opt))
    FAULT["at"] = None
    loss = trainer.train_step(*data(0))
    assert trainer.steps == 1 and trainer.loss.numpy() == loss.numpy()
    assert all(p.grad is None for p in trainer.net.parameters())
