"""The autodiff engine through both doors: eager backward()/.grad and rt.grad/value_and_grad
(eagerly, inside @to_static code, on static functions), checked against NumPy-written gradients
and central finite differences in float64."""
import gc

import numpy as np
import pytest

import runtime as rt
from runtime import nn
from transpiler import to_static
from conversion.gradcheck import numeric_grad, of_tensors

A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
B = np.array([[0.3, 0.1], [-0.2, 0.4], [0.5, -0.6]])


def loss_fn(x, w):
    return (rt.tanh(rt.matmul(x, w)) * 2.0).sum()


def loss_np_grads(x, w):
    t = np.tanh(x @ w)
    g = 2.0 * (1 - t * t)
    return g @ w.T, x.T @ g


# --- the imperative door ----------------------------------------------------------------------

def test_backward_fills_grad_of_leaves():
    x = rt.tensor(A, requires_grad=True)
    w = rt.tensor(B, requires_grad=True)
    loss_fn(x, w).backward()
    gx, gw = loss_np_grads(A, B)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-12)
    assert isinstance(x.grad, rt.Tensor) and x.grad.dtype == np.float64


def test_backward_accumulates_until_zeroed():
    x = rt.tensor(A, requires_grad=True)
    w = rt.tensor(B)
    loss_fn(x, w).backward()
    loss_fn(x, w).backward()
    gx, _ = loss_np_grads(A, B)
    np.testing.assert_allclose(x.grad.numpy(), 2 * gx, rtol=1e-12)
    assert w.grad is None and not w.requires_grad
    x.grad = None
    loss_fn(x, w).backward()
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12)


def test_value_used_twice_sums_its_cotangents():
    x = rt.tensor(np.array([0.3, -0.7]), requires_grad=True)
    y = rt.sin(x)
    (y * y + y).sum().backward()
    a = x.numpy()
    np.testing.assert_allclose(x.grad.numpy(), (2 * np.sin(a) + 1) * np.cos(a), rtol=1e-12)


def test_detach_and_stop_gradient_block_the_flow():
    x = rt.tensor(np.array([0.3, -0.7]), requires_grad=True)
    (x * rt.stop_gradient(x) + x.detach() * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x.numpy(), rtol=1e-12)
    assert not x.detach().requires_grad and x.detach().stop_gradient


def test_paddle_stop_gradient_flag():
    x = rt.tensor(np.array([1.0, 2.0]))
    assert x.stop_gradient
    x.stop_gradient = False
    assert x.requires_grad
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_no_grad_records_nothing():
    x = rt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with rt.no_grad():
        y = x * 2.0
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_parameters_require_grad_by_default():
    rt.seed(0)
    layer = nn.Linear(3, 2)
    x = rt.tensor(A.astype(np.float32))
    assert all(p.requires_grad for p in layer.parameters())
    layer(x).sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.broadcast_to(A.sum(0), (2, 3)), rtol=1e-6)
    np.testing.assert_allclose(layer.bias.grad.numpy(), [2.0, 2.0])


def test_backward_errors_name_the_problem():
    x = rt.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="single-element"):
        (x * 2.0).backward()
    with pytest.raises(TypeError, match="float"):
        rt.tensor(np.arange(3), requires_grad=True)
    y = x * 2.0
    y.backward(rt.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 2.0))


def test_setitem_after_use_does_not_change_recorded_inputs():
    x = rt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = x * 1.0
    y = h * h
    h[0] = 10.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])



def test_the_tape_keeps_arrays_and_wraps_them_for_backward():
    """Records save the arrays an op read, not Tensors (inference with parameters never pays for
    wrappers); backward() wraps them, and numbers, NumPy arrays and ops with several outputs reach
    the gradient rules as they were passed."""
    x = rt.tensor(np.array([1.0, 2.0, 3.0, 4.0]), requires_grad=True)
    c = np.array([2.0, 0.5, 1.0, 3.0])
    before = sum(isinstance(o, rt.Tensor) for o in gc.get_objects())
    a, b = rt.split(x * c, 2)
    y = (a * b * 3.0 - 1.0).sum()
    del a, b
    assert sum(isinstance(o, rt.Tensor) for o in gc.get_objects()) - before == 1     # y alone
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 18.0, 6.0, 9.0])        # c * (3b, 3a) at x * c


def test_an_op_result_is_a_tracked_non_leaf():
    x = rt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 2.0
    assert y.requires_grad and not y.is_leaf and y.grad is None
    y.requires_grad = True
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad = False
    y.grad = rt.ones_like(y)
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])

# --- the functional door ----------------------------------------------------------------------

def test_grad_and_value_and_grad_eager():
    gx, gw = loss_np_grads(A, B)
    g = rt.grad(loss_fn)(rt.tensor(A), rt.tensor(B))
    np.testing.assert_allclose(g.numpy(), gx, rtol=1e-12)
    value, (g0, g1) = rt.value_and_grad(loss_fn, argnums=(0, 1))(rt.tensor(A), rt.tensor(B))
    assert float(value) == pytest.approx(float((np.tanh(A @ B) * 2).sum()))
    np.testing.assert_allclose(g1.numpy(), gw, rtol=1e-12)
    assert not value.requires_grad


def test_grad_matches_finite_differences():
    num = numeric_grad(of_tensors(loss_fn), [A.copy(), B.copy()])
    got = rt.grad(loss_fn, argnums=(0, 1))(rt.tensor(A), rt.tensor(B))
    for a, b in zip(got, num):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-6, atol=1e-8)


def test_grad_over_nested_arguments_and_aux():
    def f(params, x):
        return (rt.tanh(rt.matmul(x, params["w"])) * params["scale"][0]).sum(), "aux"

    params = {"w": rt.tensor(B), "scale": [rt.tensor(np.array(2.0))]}
    grads, aux = rt.grad(f, has_aux=True)(params, rt.tensor(A))
    assert aux == "aux" and set(grads) == {"w", "scale"} and isinstance(grads["scale"], list)
    np.testing.assert_allclose(grads["w"].numpy(), loss_np_grads(A, B)[1], rtol=1e-12)
    np.testing.assert_allclose(float(grads["scale"][0]), np.tanh(A @ B).sum(), rtol=1e-12)


def test_grad_of_unused_argument_is_zero_and_leaves_grads_alone():
    w = rt.tensor(B, requires_grad=True)
    g = rt.grad(lambda x, y: (x * 2.0).sum(), argnums=1)(rt.tensor(A), rt.tensor(B))
    np.testing.assert_array_equal(g.numpy(), np.zeros_like(B))
    rt.grad(lambda x: loss_fn(x, w))(rt.tensor(A))
    assert w.grad is None


def test_grad_errors():
    with pytest.raises(TypeError, match="scalar"):
        rt.grad(lambda x: x * 2.0)(rt.tensor(A))
    with pytest.raises(TypeError, match="float tensors"):
        rt.grad(lambda x: x.sum())(rt.tensor(np.arange(3)))


def _grad_inside(x, w):
    return rt.grad(loss_fn, argnums=(0, 1))(x, w)


def test_grad_inside_to_static_records_backward_ops():
    static = to_static(_grad_inside)
    gx, gw = static(rt.tensor(A), rt.tensor(B))
    ex, ew = loss_np_grads(A, B)
    np.testing.assert_allclose(gx.numpy(), ex, rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), ew, rtol=1e-12)
    types = [op.type for op in static.get_program(rt.tensor(A), rt.tensor(B)).ops()]
    assert types.count("matmul") >= 3       # the forward matmul and its two VJP matmuls, in one Program


def test_grad_of_static_function_is_static():
    static = rt.value_and_grad(to_static(loss_fn), argnums=(0, 1))
    value, (gx, gw) = static(rt.tensor(A), rt.tensor(B))
    ex, ew = loss_np_grads(A, B)
    np.testing.assert_allclose(gw.numpy(), ew, rtol=1e-12)
    assert static.cache_size == 1
    program = static.get_program(rt.tensor(A), rt.tensor(B))
    assert [op.type for op in program.ops()].count("matmul") >= 3


# --- a static forward on the tape, and backward() inside traced code ------------------------------

class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        h = rt.tanh(self.fc(x))
        if h.sum() > 0:
            h = h * 2.0
        return h


def _eager_and_static_nets():
    rt.seed(3)
    eager = _Net()
    rt.seed(3)
    static = to_static(_Net())
    return eager, static


def test_static_layer_takes_part_in_backward_like_an_eager_op():
    eager, static = _eager_and_static_nets()
    x_e = rt.tensor(A.astype(np.float32), requires_grad=True)
    x_s = rt.tensor(A.astype(np.float32), requires_grad=True)
    (eager(x_e) * 3.0).sum().backward()
    for _ in range(2):                       # the second call takes the fast path: still on the tape
        static.fc.weight.grad = static.fc.bias.grad = x_s.grad = None
        (static(x_s) * 3.0).sum().backward()
    np.testing.assert_allclose(static.fc.weight.grad.numpy(), eager.fc.weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(static.fc.bias.grad.numpy(), eager.fc.bias.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x_s.grad.numpy(), x_e.grad.numpy(), rtol=1e-6)


def test_get_program_grad_is_the_backward_program():
    _, static = _eager_and_static_nets()
    program = static.forward.get_program(rt.InputSpec([None, 3], "float32"), grad=True)
    names = [v.name for v in program.inputs]
    assert names[:3] == ["x", "fc.weight", "fc.bias"] and names[3].startswith("d_")
    assert len(program.outputs) == 3 and [op.type for op in program.ops()].count("cond") == 2


def test_no_grad_inference_records_nothing_for_a_static_layer():
    _, static = _eager_and_static_nets()
    with rt.no_grad():
        out = static(rt.tensor(A.astype(np.float32)))
    assert not out.requires_grad


def test_backward_inside_traced_code_writes_grad_after_each_run():
    rt.seed(1)
    layer = nn.Linear(3, 2)
    x = rt.tensor(A.astype(np.float32))
    rt.tanh(layer(x)).sum().backward()
    want = layer.weight.grad.numpy().copy()
    layer.weight.grad = layer.bias.grad = None

    @to_static
    def step(x):
        loss = rt.tanh(layer(x)).sum()
        loss.backward()
        return loss

    step(x)
    assert isinstance(layer.weight.grad, rt.Tensor)
    np.testing.assert_allclose(layer.weight.grad.numpy(), want, rtol=1e-6)
    step(x)                                   # .grad was None when traced, a tensor now: retraced, accumulates
    step(x)
    np.testing.assert_allclose(layer.weight.grad.numpy(), 3 * want, rtol=1e-6)
    assert len(step.retrace_reasons) == 1 and ".grad" in step.retrace_reasons[0]


def test_assigning_into_a_leaf_changes_its_data_and_keeps_it_a_leaf():
    p = rt.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    p[0] = 0.0                                # e.g. initializing a padding row
    assert p.is_leaf and p.requires_grad
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [0.0, 4.0, 6.0])


def test_assigning_into_an_argument_inside_grad_is_differentiated():
    def f(x):
        x[0] = x[1] * 3.0
        return (x * x).sum()
    a = np.array([1.0, 2.0])
    g = rt.grad(f)(rt.tensor(a))
    np.testing.assert_allclose(g.numpy(), [0.0, 2 * 2.0 + 2 * 6.0 * 3.0])
    np.testing.assert_array_equal(a, [1.0, 2.0])          # the caller's array is untouched


def test_no_grad_is_per_thread_and_a_decorator():
    import threading
    x = rt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    seen = {}

    @rt.no_grad()
    def serve():
        seen["serving"] = (x * 2.0).requires_grad
        ready.set()
        done.wait(5)

    ready, done = threading.Event(), threading.Event()
    worker = threading.Thread(target=serve)
    worker.start()
    ready.wait(5)
    seen["training"] = (x * 2.0).requires_grad        # while the other thread is inside no_grad
    done.set()
    worker.join()
    assert seen == {"serving": False, "training": True}


def test_no_grad_nests_restores_after_an_error_and_one_decorator_serves_recursive_calls():
    """no_grad/enable_grad are plain context objects (issue 27: ~0.7 µs, not a generator's ~1.6 µs); each
    decorated call enters its own copy, so one decorator object recursing keeps every caller's mode."""
    from runtime.autodiff.tape import GRAD_MODE
    x = rt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with rt.no_grad():
        with rt.enable_grad():
            assert (x * 2.0).requires_grad
        assert not (x * 2.0).requires_grad
    try:
        with rt.no_grad():
            raise KeyError("inside")
    except KeyError:
        pass
    assert GRAD_MODE.enabled
    seen = []
    off = rt.no_grad()

    @off
    def down(n):
        seen.append(GRAD_MODE.enabled)
        if n:
            with rt.enable_grad():
                down(n - 1)
                seen.append(GRAD_MODE.enabled)
            seen.append(GRAD_MODE.enabled)

    down(2)
    assert seen == [False, False, False, True, False, True, False] and GRAD_MODE.enabled
    with rt.no_grad():          # entered with grad off, its recursive call with grad on: each restores its own
        down(1)
        assert not GRAD_MODE.enabled


def test_tensor_array_cotangent_ops():
    from runtime.autodiff.arrays import _gather, array_scatter_add
    from runtime.ops.dispatch import apply
    like = rt.tensor(np.zeros((3, 2)))
    gs = [rt.tensor(np.array([1.0, 2.0])), rt.tensor(np.array([10.0, 20.0])), rt.tensor(np.array([5.0, 5.0]))]
    idx = [rt.tensor(np.int64(2)), rt.tensor(np.int64(0)), rt.tensor(np.int64(2))]
    index = [{"$": 1}]
    out = array_scatter_add(like, gs, [idx], index)          # one index named twice: both added
    np.testing.assert_array_equal(out.numpy(), [[10.0, 20.0], [0.0, 0.0], [6.0, 7.0]])
    rows = apply(_gather, (rt.tensor(np.arange(6.0).reshape(3, 2)), idx), {"index": index})
    np.testing.assert_array_equal(np.stack([r.numpy() for r in rows]), [[4.0, 5.0], [0.0, 1.0], [4.0, 5.0]])


def test_value_and_grad_of_a_static_layer_forward():
    _, static = _eager_and_static_nets()
    x = A.astype(np.float32)
    both = rt.value_and_grad(lambda x: static(x).sum())
    value, g = both(rt.tensor(x))
    through_method = rt.grad(static.forward)
    assert type(through_method).__name__ == "StaticFunction"      # a static function's gradient is static
    leaf = rt.tensor(x, requires_grad=True)
    static(leaf).sum().backward()
    np.testing.assert_allclose(g.numpy(), leaf.grad.numpy(), rtol=1e-6)
    assert float(value) == pytest.approx(float(static(rt.tensor(x)).sum()))
