"""@to_static on nn.Layer.forward and on methods: per-instance caches, parameters as inputs."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from transpiler import InputSpec, to_static


class Gate(nn.Layer):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.scale = 2.0

    @to_static
    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            h = h * self.scale
        else:
            h = -h
        return h


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.inner = Gate(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        h = self.inner(x)
        i = 0
        while h.sum() > 1.0 and i < 5:
            h = h * 0.5
            i += 1
        return self.out(h)


def _np_gate(layer, x):
    h = x @ layer.fc.weight.numpy().T + layer.fc.bias.numpy()
    return h * layer.scale if h.mean() > 0 else -h


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_layer_forward_matches_numpy_and_has_cond():
    rt.seed(0)
    layer = Gate(3, 5)
    for seed in range(3):
        x = _x(2, 3, seed=seed)
        np.testing.assert_allclose(layer(rt.tensor(x)).numpy(), _np_gate(layer, x), rtol=1e-5, atol=1e-6)
    program = layer.forward.get_program(rt.tensor(_x(2, 3)))
    assert "cond" in [op.type for op in program.ops()]
    names = {v.name for v in program.inputs if v.persistable}
    assert names == {"fc.weight", "fc.bias"}
    assert "constant" not in [op.type for op in program.ops()]


def test_each_instance_has_its_own_cache_and_weights():
    rt.seed(1)
    a, b = Gate(3, 3), Gate(3, 3)
    x = rt.tensor(_x(4, 3))
    ya, yb = a(x), b(x)
    assert a.forward.cache_size == 1 and b.forward.cache_size == 1
    assert not np.allclose(ya.numpy(), yb.numpy())
    np.testing.assert_allclose(yb.numpy(), _np_gate(b, x.numpy()), rtol=1e-5, atol=1e-6)


def test_weights_changed_after_tracing_are_used():
    rt.seed(2)
    layer = Gate(3, 3)
    x = rt.tensor(_x(2, 3))
    layer(x)
    state = {k: rt.tensor(v.numpy() * 3) for k, v in layer.state_dict().items()}
    layer.load_state_dict(state)
    np.testing.assert_allclose(layer(x).numpy(), _np_gate(layer, x.numpy()), rtol=1e-5, atol=1e-6)
    assert layer.forward.cache_size == 1


def test_nested_layers_converted_recursively():
    rt.seed(3)
    block = Block()
    static = to_static(block.forward)
    for seed in range(3):
        x = _x(3, 4, seed=seed)
        h = _np_gate(block.inner, x)
        i = 0
        while h.sum() > 1.0 and i < 5:
            h = h * 0.5
            i += 1
        want = h @ block.out.weight.numpy().T + block.out.bias.numpy()
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    types_ = [op.type for op in static.get_program(rt.tensor(_x(3, 4))).ops()]
    assert "cond" in types_ and "while" in types_


def test_dynamic_batch_with_input_spec_does_not_retrace():
    rt.seed(4)
    layer = Gate(3, 2)
    static = to_static(layer.forward, input_spec=[InputSpec([None, 3], "float32", "x")])
    for batch in (1, 4, 9):
        x = _x(batch, 3, seed=batch)
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), _np_gate(layer, x), rtol=1e-5, atol=1e-6)
    assert static.cache_size == 1


def test_train_and_eval_mode_are_separate_signatures():
    rt.seed(5)

    class WithDropout(nn.Layer):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)

        @to_static
        def forward(self, x):
            return self.drop(x)

    layer = WithDropout()
    x = rt.tensor(np.ones((50, 50), np.float32))
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy(), x.numpy())
    layer.train()
    out = layer(x).numpy()
    assert (out == 0).any() and layer.forward.cache_size == 2


class Counter:
    def __init__(self, step):
        self.step = step

    @to_static
    def run(self, x):
        while x.sum() < 10:
            x = x + self.step
        return x

    def __call__(self, x):
        if x.sum() > 0:
            return x * self.step
        return x


def test_plain_class_methods_and_callable_objects():
    x = rt.tensor(np.zeros(2, np.float32))
    c1, c2 = Counter(1.0), Counter(3.0)
    np.testing.assert_allclose(c1.run(x).numpy(), [5.0, 5.0])
    np.testing.assert_allclose(c2.run(x).numpy(), [6.0, 6.0])

    def uses_callable(v):
        return c2(v) + 1
    out = to_static(uses_callable)(rt.tensor(np.ones(2, np.float32)))
    np.testing.assert_allclose(out.numpy(), [4.0, 4.0])


def test_rollback_and_code():
    rt.seed(6)
    layer = Gate(2, 2)
    assert "convert_ifelse" in layer.forward.code
    original = layer.forward.rollback()
    x = rt.tensor(_x(1, 2))
    np.testing.assert_allclose(original(x).numpy(), layer(x).numpy(), rtol=1e-6)


def test_python_scalar_arguments_are_part_of_the_key():
    def f(x, n):
        for _ in range(n):
            x = x * 2
        return x
    static = to_static(f)
    x = rt.tensor(np.ones(2, np.float32))
    np.testing.assert_allclose(static(x, 2).numpy(), [4, 4])
    np.testing.assert_allclose(static(x, 3).numpy(), [8, 8])
    np.testing.assert_allclose(static(rt.tensor(np.full(2, 2, np.float32)), 3).numpy(), [16, 16])
    assert static.cache_size == 2


def test_user_layers_inside_sequential_are_converted():
    rt.seed(8)

    class Flip(nn.Layer):
        def forward(self, x):
            if x.sum() > 0:
                return -x
            return x

    model = nn.Sequential(nn.Linear(3, 3), Flip(), nn.ReLU())
    static = to_static(model.forward)
    for seed in range(3):
        x = _x(2, 3, seed=seed)
        h = x @ model[0].weight.numpy().T + model[0].bias.numpy()
        h = -h if h.sum() > 0 else h
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), np.maximum(h, 0), rtol=1e-5, atol=1e-6)
    assert "cond" in [op.type for op in static.get_program(rt.tensor(_x(2, 3))).ops()]


def test_retraces_are_explained():
    def f(x, k):
        return x * k
    static = to_static(f)
    static(rt.tensor(np.ones(2, np.float32)), 1)
    static(rt.tensor(np.ones(3, np.float32)), 1)
    static(rt.tensor(np.ones(3, np.float32)), 2)
    assert static.retrace_reasons == ["tensor argument 0: shape [2] -> [3]", "argument 1: 1 -> 2"]
    with pytest.warns(UserWarning, match=r"traced for 8 input signatures \(latest retraces: .*shape"):
        for n in range(4, 9):
            static(rt.tensor(np.ones(n, np.float32)), 2)


class DropoutNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(rt.tanh(self.fc(x)))


def _dropout_run(static):
    rt.seed(7)
    net = DropoutNet()
    net.train()
    f = to_static(net) if static else net
    x = rt.tensor(_x(4, 6))
    c = _x(4, 5, seed=1)
    outs, grads = [], []
    for _ in range(2):              # each backward must use the mask of its own forward run
        out = f(x)
        (out * rt.tensor(c)).sum().backward()
        outs.append(out.numpy())
        grads.append(net.fc.weight.grad.numpy())
        net.fc.weight.grad = None
    outs.append(f(x).numpy())       # the backward drew nothing from the generator
    return outs, grads, x.numpy(), c, net


def test_eager_backward_through_a_static_layer_with_dropout_uses_the_forward_mask():
    """Was NotImplementedError ('cannot differentiate through dropout inside a loop or branch'): the backward
    Program of a static call replays its forward, and a replayed dropout would draw a new mask."""
    want_outs, want_grads, x, c, net = _dropout_run(static=False)
    outs, grads, _, _, net = _dropout_run(static=True)
    for got, want in zip(outs + grads, want_outs + want_grads):
        np.testing.assert_array_equal(got, want)
    w, b = net.fc.weight.numpy(), net.fc.bias.numpy()       # NumPy: d/dW of sum(c * drop(tanh(x W^T + b)))
    h = np.tanh(x @ w.T + b)
    for out, grad in zip(outs[:2], grads):
        g_pre = c * (out != 0) * 2.0 * (1 - h * h)           # the kept elements, scaled by 1/(1-p)
        np.testing.assert_allclose(grad, g_pre.T @ x, rtol=1e-5, atol=1e-6)


def _batchnorm_step(static):
    rt.seed(3)
    bn = nn.BatchNorm2D(3)
    bn.train()
    f = to_static(bn) if static else bn
    x = rt.tensor(_x(2, 3, 4, 4))
    c = _x(2, 3, 4, 4, seed=2)
    (f(x) * rt.tensor(c)).sum().backward()
    return bn, x.numpy(), c


def test_eager_backward_through_a_static_layer_that_updates_batchnorm_statistics():
    """Was RuntimeError 'does not require grad': a Program writing tensors never went on the tape, yet
    writing buffers (running statistics) leaves it a function of its inputs (only a training step is not)."""
    eager, x, c = _batchnorm_step(static=False)
    bn, _, _ = _batchnorm_step(static=True)
    xhat = (x - x.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(x.var(axis=(0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(bn.weight.grad.numpy(), (c * xhat).sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.bias.grad.numpy(), c.sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(bn.weight.grad.numpy(), eager.weight.grad.numpy())
    np.testing.assert_array_equal(bn.running_mean.numpy(), eager.running_mean.numpy())
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.mean(axis=(0, 2, 3)), rtol=1e-6)


class Hooked(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x) + 1


def test_forward_hooks_run_in_static_calls_and_registering_one_retraces():
    """Hooks on a sublayer registered after the first call: the cached Program must not be reused."""
    rt.seed(0)
    net = Hooked()
    x = _x(4, 3)
    w, b = net.fc.weight.numpy(), net.fc.bias.numpy()
    static = to_static(net)
    with rt.no_grad():
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), x @ w.T + b + 1, rtol=1e-6)
        post = net.fc.register_forward_post_hook(lambda layer, args, out: out * 2)
        pre = net.register_forward_pre_hook(lambda layer, args: args[0] - 1)
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), ((x - 1) @ w.T + b) * 2 + 1, rtol=1e-6)
        post.remove()
        pre.remove()
        np.testing.assert_allclose(static(rt.tensor(x)).numpy(), x @ w.T + b + 1, rtol=1e-6)
    assert any("_hook_version" in r for r in net.forward.retrace_reasons)


class Detaching(nn.Layer):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)

    def forward(self, x):
        p = self.a(x)
        p.stop_gradient = True          # Paddle's flag on a computed tensor: detached from here on
        q = self.b(x)
        with rt.no_grad():
            r = self.b(x) * 2
        return (p * q + r).sum()


@pytest.mark.parametrize("static", [False, True])
def test_no_grad_and_stop_gradient_inside_forward_cut_the_gradient(static):
    """Static ignored both: `with rt.no_grad():` ops were differentiated (b got 3x its gradient) and
    `p.stop_gradient = True` on a traced value was a silently ignored attribute (a got a gradient)."""
    rt.seed(0)
    net = Detaching()
    x = _x(2, 3)
    f = to_static(net) if static else net
    if static:
        with rt.no_grad():          # a trace made under the caller's no_grad serves calls with grad too
            f(rt.tensor(x))
    f(rt.tensor(x)).backward()
    p = x @ net.a.weight.numpy().T + net.a.bias.numpy()
    assert net.a.weight.grad is None
    np.testing.assert_allclose(net.b.weight.grad.numpy(), p.T @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.b.bias.grad.numpy(), p.sum(axis=0), rtol=1e-5, atol=1e-6)


def test_no_grad_inside_a_static_training_step():
    rt.seed(0)
    net = Detaching()
    x = _x(2, 3)

    @to_static
    def step(x):
        loss = net(x)
        loss.backward()
        return loss

    step(rt.tensor(x))
    p = x @ net.a.weight.numpy().T + net.a.bias.numpy()
    assert net.a.weight.grad is None
    np.testing.assert_allclose(net.b.weight.grad.numpy(), p.T @ x, rtol=1e-5, atol=1e-6)


def test_stop_gradient_on_an_attribute_value_detaches_it():
    class Holder(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            self.h = self.fc(x)
            self.h.stop_gradient = True
            return (self.h * x).sum()

    net = Holder()
    x = rt.tensor(_x(2, 3), requires_grad=True)
    to_static(net)(x).backward()
    assert net.fc.weight.grad is None
    np.testing.assert_allclose(x.grad.numpy(), net.h.numpy(), rtol=1e-6)     # h is a constant to the gradient
    with pytest.raises(TypeError, match="detach"):      # an argument's flag cannot be rebound
        to_static(lambda x: setattr(x, "stop_gradient", True) or x)(rt.tensor(_x(2, 3)))


def _scan(x, w):
    outs = []
    h = rt.zeros_like(x[0])
    for t in range(x.shape[0]):         # a dynamic first dim: a while op appending to a tensor array
        h = h * w + x[t]
        outs.append(h)
    return rt.stack(outs)


def test_eager_backward_through_a_static_loop_that_appends_to_a_list():
    """The backward Program of a static call replays its forward but skipped the appends (as a loop's own
    gradient does, where the arrays exist): its lists stayed empty, so the gradient through the appended
    values was zero (one GRU layer) or the replay failed ('stack of an empty tensor array', two layers)."""
    x = _x(5, 3)
    w = rt.tensor(np.full(3, 0.5, np.float32), requires_grad=True)
    xs = rt.tensor(x, requires_grad=True)
    static = to_static(_scan, input_spec=[InputSpec([None, 3]), InputSpec([3])])
    (static(xs, w) * 2).sum().backward()
    hs = [np.zeros(3)]                  # NumPy: h_t = w h_{t-1} + x_t, loss = 2 * sum_t h_t
    for t in range(5):
        hs.append(hs[-1] * 0.5 + x[t])
    dh = np.zeros(3)
    dw, dx = np.zeros(3), np.zeros((5, 3))
    for t in range(4, -1, -1):
        dh = dh * 0.5 + 2.0             # the loss's own term plus what h_{t+1} passes back
        dw += dh * hs[t]
        dx[t] = dh
    np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-5)
    np.testing.assert_allclose(xs.grad.numpy(), dx, rtol=1e-5)


def test_eager_backward_through_a_static_two_layer_gru_matches_eager():
    def grads(static):
        rt.seed(4)
        gru = nn.GRU(2, 3, num_layers=2, dropout=0.3)
        f = to_static(gru) if static else gru
        out, h = f(rt.tensor(_x(4, 2, 2)))
        (out.sum() + h.sum()).backward()
        return [p.grad.numpy() for p in gru.parameters()]
    for got, want in zip(grads(True), grads(False)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class ListInput(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, inputs, scale):
        src, mask = inputs
        return self.fc(src * mask) * scale


def test_nested_input_spec_for_a_list_argument():
    """Paddle's input_spec=[[InputSpec, ...], ...] for a list argument: was a TypeError."""
    rt.seed(0)
    net = ListInput()
    x, m, s = _x(4, 3), (_x(4, 3, seed=1) > 0).astype(np.float32), _x(2, seed=2)
    want = ((x * m) @ net.fc.weight.numpy().T + net.fc.bias.numpy()) * s
    static = to_static(net.forward, input_spec=[[InputSpec([None, 3]), InputSpec([None, 3])], InputSpec([2])])
    with rt.no_grad():
        got = static([rt.tensor(x), rt.tensor(m)], rt.tensor(s))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
        static([rt.tensor(x[:2]), rt.tensor(m[:2])], rt.tensor(s))         # another batch: the same Program
    assert static.cache_size == 1
    program = static.deployed_program()
    assert [v.name for v in program.inputs[:3]] == ["inputs_0", "inputs_1", "scale"]


class _Scale(nn.Layer):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k


class _SwitchNet(nn.Layer):
    """A layer picked by a tensor index (MindSpore's switch_layer): from a tuple, and from a layer list
    in a tensor loop."""

    def __init__(self):
        super().__init__()
        self.cells = nn.LayerList([_Scale(4), _Scale(5), _Scale(6)])
        self.pair = (nn.ReLU(), _Scale(-1))

    def forward(self, t, i, j):
        out = self.pair[j](t)
        while i < 3:
            out = out + self.cells[i](t)
            i += 1
        return out


def test_a_layer_picked_by_a_tensor_index_runs_in_its_branch():
    net, static = _SwitchNet(), to_static(_SwitchNet())
    t = rt.tensor(np.array([1.0, -2.0], np.float32))
    for i, j in ((0, 0), (1, 1), (2, -1), (3, -2)):
        want = np.maximum(t.numpy(), 0) if j in (0, -2) else -t.numpy()
        want = want + sum(k * t.numpy() for k in (4, 5, 6)[i:])
        got = static(t, rt.tensor(np.int32(i)), rt.tensor(np.int32(j)))
        np.testing.assert_allclose(got.numpy(), want)
        np.testing.assert_allclose(net(t, rt.tensor(np.int32(i)), rt.tensor(np.int32(j))).numpy(), want)
    with pytest.raises(IndexError):
        static(t, rt.tensor(np.int32(0)), rt.tensor(np.int32(2)))
