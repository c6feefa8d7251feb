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
