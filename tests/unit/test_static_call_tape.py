"""A static call that goes on the eager tape keeps arrays, as an eager op's record does (issue 27: the
d2l MLP and Paddle's LinearNet at batch 1, whose Parameters require grad, paid ~7 µs a call for Tensor
wrappers of every input and output), and backward() through it is unchanged."""
import gc

import numpy as np

import runtime as rt
from runtime import nn
from transpiler import to_static


def _tensors():
    """Every live Tensor the garbage collector knows (held, so that no new one can take an old one's id)."""
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, rt.Tensor)]


def test_a_static_call_on_the_tape_makes_no_tensor_but_its_result():
    rt.seed(0)
    net = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    static = to_static(net.forward)
    x = rt.tensor(np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32))
    static(x), static(x)                   # traced, then the fast call
    outs = []
    for _ in range(2):
        held = _tensors()
        before = {id(t) for t in held}
        outs.append(static(x))
        assert outs[-1].requires_grad
        made = [t for t in _tensors() if id(t) not in before]
        assert len(made) == 1 and made[0] is outs[-1]    # the result alone: the record holds arrays
        del held, made
    out = outs[-1]
    record = out._ag.record
    assert all(a is p.array for a, p in zip(record.saved[1:4], net.parameters()))
    out.sum().backward()
    eager = [p.grad.numpy().copy() for p in net.parameters()]
    for p in net.parameters():
        p.grad = None
    net(x).sum().backward()
    for got, want in zip(eager, (p.grad.numpy() for p in net.parameters())):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_integer_outputs_stay_off_the_tape_and_float_ones_carry_gradient():
    rt.seed(1)
    layer = nn.Linear(4, 3)

    @to_static
    def f(x):
        y = layer(x)
        return y, rt.argmax(y, axis=-1)

    x = rt.tensor(np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32))
    for _ in range(2):
        layer.weight.grad = None
        y, k = f(x)
        assert y.requires_grad and not k.requires_grad
        (y * 2.0).sum().backward()
        np.testing.assert_allclose(layer.weight.grad.numpy(), np.tile(2.0 * x.numpy().sum(0), (3, 1)), rtol=1e-6)


def test_linear_runs_inline_in_the_plan_with_the_kernels_bits():
    """`linear` is written into the NumPy plan as its kernel's two calls (no kernel frame a call: at batch 1
    a layer is a 2-4 µs gemv); the bits are the kernel's, with and without bias, for 1-D to 3-D inputs."""
    from runtime.nn import functional as F
    from runtime.ops.nn_ops import _linear_kernel
    rng = np.random.default_rng(2)
    w = rt.tensor(rng.standard_normal((5, 7)).astype(np.float32))
    b = rt.tensor(rng.standard_normal(5).astype(np.float32))
    for shape in [(7,), (1, 7), (3, 7), (2, 3, 7)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for bias in (b, None):
            static = to_static(lambda x: F.linear(x, w, bias))
            got = static(rt.tensor(x)).numpy()
            want = _linear_kernel(np, x, w.numpy(), None if bias is None else bias.numpy())
            assert got.shape == want.shape and np.array_equal(got, want)
            source = list(static._cache.values())[0].plan.source
            assert "k_linear" not in source and "matmul" in source


def test_a_one_output_fast_call_leaves_one_compact_record_and_backward_matches_eager():
    """Issue 27 (R8/R9): a Program with one float output goes on the tape as one CallOutputRecord (record and
    slot in one object, made inline by the fast call: no record_call, no Slot), with the arrays fed and the
    inputs' keys; backward() through it, and through a chain of two such calls, gives eager's gradients."""
    from runtime.autodiff.static_call import CallOutputRecord
    rt.seed(3)
    first, second = nn.Linear(6, 5), nn.Sequential(nn.ReLU(), nn.Linear(5, 2))
    f, g = to_static(first.forward), to_static(second.forward)
    x = rt.tensor(np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32))
    for call in range(3):                    # traced, then the fast call twice
        for p in [*first.parameters(), *second.parameters()]:
            p.grad = None
        h = f(x)
        out = g(h)
        if call:
            for t in (h, out):
                assert isinstance(t._ag, CallOutputRecord) and t._ag.record is t._ag
            assert out._ag.saved[len(out._ag.saved) // 2] is h._ag     # the first call's record: g's input key
            assert h._ag.saved[0] is x.array and h._ag.saved[3] is None  # x requires no grad: no key
        (out * out).sum().backward()
        got = [p.grad.numpy().copy() for p in [*first.parameters(), *second.parameters()]]
        for p in [*first.parameters(), *second.parameters()]:
            p.grad = None
        eager = second(first(x))
        (eager * eager).sum().backward()
        for a, p in zip(got, [*first.parameters(), *second.parameters()]):
            np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_the_fast_call_records_only_what_tracks_a_gradient():
    """No record under no_grad or when nothing requires grad; an input whose slot tracks nothing (a .grad
    set on a constant tensor) is no key; a tensor that requires grad as an argument is one."""
    layer = nn.Linear(3, 2)
    static = to_static(layer.forward)
    x = rt.tensor(np.ones((1, 3), np.float32))
    static(x), static(x)
    with rt.no_grad():
        assert static(x)._ag is None
    for p in layer.parameters():
        p.requires_grad = False
    x.grad = rt.tensor(np.ones((1, 3), np.float32))       # a Slot that tracks nothing
    assert static(x)._ag is None
    xr = rt.tensor(np.ones((1, 3), np.float32), requires_grad=True)
    out = static(xr)
    assert out._ag.saved[3] is xr._ag and out._ag.saved[4] is None
    out.sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), layer.weight.numpy().sum(0, keepdims=True), rtol=1e-6)


def test_a_served_output_and_its_record_copy_as_an_eager_ones():
    """copy.copy and copy.deepcopy of a fast call's output (its CallOutputRecord shadows no slot of a base)."""
    import copy
    layer = nn.Linear(3, 2)
    static = to_static(layer.forward)
    x = rt.tensor(np.ones((1, 3), np.float32))
    static(x)
    served = static(x)
    for copied in (copy.copy(served), copy.deepcopy(served)):
        np.testing.assert_array_equal(copied.numpy(), served.numpy())
        assert copied.requires_grad
    copy.deepcopy(served).sum().backward()        # through the copied record, into the copied leaves
    assert layer.weight.grad is None
    served.sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.ones((2, 3), np.float32))
