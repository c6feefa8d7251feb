"""The runtime on the GPU (CuPy) against NumPy as the oracle.

Eager Tensors on "gpu", transfers, every op family, Programs traced with
`rt.trace` and run by `rt.Executor(device="gpu")` (cond/while included), feed
checks, mixed-device errors and `synchronize`. Every test is marked `gpu`:
tests/gpu/conftest.py skips them without CUDA.
"""
import importlib.util
import os

import numpy as np
import pytest

import runtime as rt

try:
    import cupy
except Exception:  # no CuPy here: every test below is skipped by the conftest
    cupy = None

pytestmark = pytest.mark.gpu

RTOL, ATOL = 1e-5, 1e-6


def _rng(seed=0):
    return np.random.default_rng(seed)


def _x(*shape, seed=0, dtype=np.float32, lo=-2.0, hi=2.0):
    return _rng(seed).uniform(lo, hi, size=shape).astype(dtype)


def g(a, dtype=None):
    return rt.tensor(a, dtype=dtype, device="gpu")


def assert_on_gpu(t):
    assert isinstance(t, rt.Tensor), type(t)
    assert t.device == "gpu"
    assert isinstance(t.array, cupy.ndarray), type(t.array)


def check(t, expected, rtol=RTOL, atol=ATOL, device="gpu"):
    """t is a Tensor on `device` equal (value, dtype, shape) to the NumPy `expected`."""
    if device == "gpu":
        assert_on_gpu(t)
    expected = np.asarray(expected)
    actual = t.numpy()
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, NumPy gives {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape}, NumPy gives {expected.shape}"
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


# --- tensors and transfers ------------------------------------------------------------------

def test_tensor_on_gpu_holds_a_cupy_array():
    a = _x(3, 4)
    t = g(a)
    assert_on_gpu(t)
    assert t.shape == (3, 4) and t.ndim == 2 and t.size == 12 and t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), a)
    assert isinstance(t.numpy(), np.ndarray)
    assert "device='gpu'" in repr(t)


def test_tensor_dtype_rules_match_the_cpu():
    assert g([1.0, 2.0]).dtype == np.float32            # Python floats: float32, as on the CPU
    assert g(1.5).dtype == np.float32
    assert g(np.ones(2, np.float64)).dtype == np.float64
    assert g([1, 2]).dtype == rt.tensor([1, 2]).dtype
    assert g([True, False]).dtype == np.bool_
    assert g([1, 2], dtype="float16").dtype == np.float16


def test_tensor_from_cupy_and_from_tensors():
    c = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    t = g(c)
    assert_on_gpu(t)
    assert t.array is c or bool((t.array == c).all())
    host = rt.tensor(c)                                  # a CuPy array asked onto the CPU is copied down
    assert host.device == "cpu" and isinstance(host.array, np.ndarray)
    np.testing.assert_array_equal(host.numpy(), cupy.asnumpy(c))
    again = g(t)
    assert_on_gpu(again)
    np.testing.assert_array_equal(rt.tensor(t).numpy(), cupy.asnumpy(c))


def test_transfers_round_trip():
    a = _x(2, 5, seed=1)
    cpu = rt.tensor(a)
    gpu = cpu.to("gpu")
    assert_on_gpu(gpu)
    assert gpu.to("gpu") is gpu and cpu.to("cpu") is cpu
    back = gpu.to("cpu")
    assert back.device == "cpu" and isinstance(back.array, np.ndarray)
    np.testing.assert_array_equal(back.numpy(), a)
    np.testing.assert_array_equal(cpu.gpu().cpu().numpy(), a)
    np.testing.assert_array_equal(np.asarray(gpu), a)
    np.testing.assert_array_equal(np.asarray(gpu, dtype=np.float64), a.astype(np.float64))
    for alias in ("cuda", "cuda:0", "GPU", "cupy"):
        assert cpu.to(alias).device == "gpu"


def test_python_conversions_on_gpu():
    t = g(np.array([3.0, -1.0, 2.5], np.float32))
    assert len(t) == 3
    assert [float(r) for r in t] == [3.0, -1.0, 2.5]
    for row in t:
        assert_on_gpu(row)
    s = t.sum()
    assert float(s) == pytest.approx(4.5)
    assert s.item() == pytest.approx(4.5)
    assert bool(s > 4) is True
    assert int(g(np.int64(7))) == 7
    assert [0, 1, 2, 3][g(np.int64(2))] == 2                 # operator.index
    assert t.tolist() == [3.0, -1.0, 2.5]
    assert f"{s:.1f}" == "4.5"


def test_backend_protocol():
    backend = rt.get_backend("gpu")
    assert backend is rt.get_backend("cuda") is rt.get_backend("gpu:0")
    assert backend.name == "gpu" and backend.xp is cupy
    c = backend.asarray(np.ones(3, np.float32))
    assert backend.is_native(c) and not backend.is_native(np.ones(3))
    assert isinstance(backend.to_numpy(c), np.ndarray)
    assert isinstance(backend.to_numpy(np.ones(2)), np.ndarray)
    assert backend.asarray([1, 2], dtype="float32").dtype == np.float32
    cpu = rt.get_backend("cpu")
    np.testing.assert_array_equal(cpu.asarray(c), np.ones(3, np.float32))   # device -> host
    assert rt.gpu_available() is True
    fused = backend.fuse(lambda a, b: a * b + 1)
    np.testing.assert_allclose(cupy.asnumpy(fused(c, c)), np.full(3, 2, np.float32))


def test_synchronize():
    backend = rt.get_backend("gpu")
    a = _x(512, 512, seed=2)
    t = g(a)
    for _ in range(5):
        t = rt.tanh(t @ t * 1e-3)
    assert backend.synchronize() is None          # waits for the queued kernels
    expected = a
    for _ in range(5):
        expected = np.tanh(expected @ expected * 1e-3)
    check(t, expected, rtol=1e-4, atol=1e-5)
    rt.get_backend("cpu").synchronize()           # a no-op on the CPU


# --- op families, eager ----------------------------------------------------------------------

UNARY = {
    "negative": np.negative, "abs": np.abs, "exp": np.exp, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
    "square": np.square, "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "round": np.rint,
    "expm1": np.expm1, "atan": np.arctan, "sinh": np.sinh, "isnan": np.isnan, "isfinite": np.isfinite,
}
POSITIVE = {"log": np.log, "sqrt": np.sqrt, "log1p": np.log1p, "log2": np.log2, "reciprocal": np.reciprocal}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "pow": None, "atan2": np.arctan2, "hypot": np.hypot,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    a = _x(4, 5, seed=3)
    check(getattr(rt, name)(g(a)), UNARY[name](a))


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_unary_positive_domain(name):
    a = _x(4, 5, seed=4, lo=0.1, hi=3.0)
    check(getattr(rt, name)(g(a)), POSITIVE[name](a))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_broadcasting(name):
    a, b = _x(3, 4, seed=5), _x(4, seed=6, lo=0.5, hi=2.0)
    if name == "pow":
        a = np.abs(a) + 0.1
        expected = np.power(a, b)
    else:
        expected = BINARY[name](a, b)
    check(getattr(rt, name)(g(a), g(b)), expected)


def test_operators_and_weak_python_scalars():
    a, b = _x(3, 4, seed=7), _x(3, 4, seed=8, lo=0.5, hi=2.0)
    x, y = g(a), g(b)
    check(x + y, a + b)
    check(x - y, a - b)
    check(x * y, a * b)
    check(x / y, a / b)
    check(x // y, a // b)
    check(x % y, a % b)
    check(y ** 2, b ** 2)
    check(-x, -a)
    check(abs(x), np.abs(a))
    check(x * 2.0, a * np.float32(2.0))             # a Python float keeps float32
    check(2.0 - x, np.float32(2.0) - a)
    check(x + 1, a + np.float32(1))
    check(x < 0.5, a < 0.5)
    check((x > 0) & (y > 1), (a > 0) & (b > 1))
    check(rt.logical_not(x > 0), ~(a > 0))
    i = g(np.array([1, 2, 3], np.int32))
    check(i * 2, np.array([2, 4, 6], np.int32))     # int32 stays int32 with a Python int
    check(i / 2, np.array([1, 2, 3], np.int32) / 2)
    check(x + np.ones(4, np.float32), a + 1)         # a NumPy array operand moves to the GPU
    check(np.tanh(x), np.tanh(a))                    # NumPy ufuncs dispatch to our ops


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "std", "var"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    a = _x(3, 4, 5, seed=9, lo=0.5, hi=1.5)
    out = getattr(rt, name)(g(a), axis=axis, keepdims=keepdims)
    check(out, getattr(np, name)(a, axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-5)
    method = getattr(g(a), name)(axis=axis, keepdims=keepdims)
    check(method, getattr(np, name)(a, axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_bool_and_arg_reductions(axis, keepdims):
    a = _x(4, 6, seed=10)
    m = a > 0.5
    check(rt.any(g(m), axis=axis, keepdims=keepdims), np.any(m, axis=axis, keepdims=keepdims))
    check(rt.all(g(m), axis=axis, keepdims=keepdims), np.all(m, axis=axis, keepdims=keepdims))
    check(rt.argmax(g(a), axis=axis, keepdims=keepdims), np.argmax(a, axis=axis, keepdims=keepdims))
    check(rt.argmin(g(a), axis=axis, keepdims=keepdims), np.argmin(a, axis=axis, keepdims=keepdims))


def test_sum_of_ints_and_cumsum():
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(rt.sum(g(i)), np.sum(i))
    check(rt.sum(g(i), axis=1), np.sum(i, axis=1))
    check(rt.mean(g(i)), np.mean(i))
    check(rt.cumsum(g(i), axis=1), np.cumsum(i, axis=1))
    check(rt.cumsum(g(i)), np.cumsum(i))


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 6)), ((2, 3, 4), (2, 4, 2)),
                                   ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,)), ((5, 1, 3, 4), (2, 4, 3))])
def test_matmul(sa, sb):
    a, b = _x(*sa, seed=11), _x(*sb, seed=12)
    check(rt.matmul(g(a), g(b)), np.matmul(a, b), rtol=1e-5, atol=1e-5)
    check(g(a) @ g(b), a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_float64_and_large():
    a, b = _x(64, 128, seed=13, dtype=np.float64), _x(128, 32, seed=14, dtype=np.float64)
    check(g(a) @ g(b), a @ b, rtol=1e-12, atol=1e-12)
    a, b = _x(256, 512, seed=15), _x(512, 256, seed=16)
    check(g(a) @ g(b), a @ b, rtol=1e-4, atol=1e-4)


def test_shape_ops():
    a = _x(2, 3, 4, seed=17)
    x = g(a)
    check(rt.reshape(x, (6, 4)), a.reshape(6, 4))
    check(x.reshape(4, -1), a.reshape(4, -1))
    check(x.reshape((-1,)), a.reshape(-1))
    check(x.flatten(), a.reshape(-1))
    check(rt.permute_dims(x, (2, 0, 1)), np.transpose(a, (2, 0, 1)))
    check(x.transpose(1, 0, 2), np.transpose(a, (1, 0, 2)))
    check(x.T, a.T)
    check(rt.expand_dims(x, 1), np.expand_dims(a, 1))
    check(rt.expand_dims(x, (0, -1)), np.expand_dims(a, (0, -1)))
    check(rt.squeeze(g(a[:, :1]), 1), np.squeeze(a[:, :1], 1))
    check(rt.squeeze(g(a[:1, :1])), np.squeeze(a[:1, :1]))
    check(rt.broadcast_to(g(a[:, :1]), (2, 5, 4)), np.broadcast_to(a[:, :1], (2, 5, 4)))
    check(rt.flip(x, 1), np.flip(a, 1))
    check(rt.flip(x), np.flip(a))
    b = _x(2, 5, 4, seed=18)
    check(rt.concat([x, g(b)], axis=1), np.concatenate([a, b], axis=1))
    check(rt.concat([x, g(a)], axis=None), np.concatenate([a, a], axis=None))
    check(rt.concat([g(a[0]), g(a[1].astype(np.float64))]), np.concatenate([a[0], a[1].astype(np.float64)]))
    check(rt.stack([x, x * 2], axis=0), np.stack([a, a * 2], axis=0))
    check(rt.stack([x, x], axis=-1), np.stack([a, a], axis=-1))
    assert int(rt.dim(x, 2)) == 4


def test_indexing():
    a = _x(4, 5, 6, seed=19)
    x = g(a)
    check(x[1], a[1])
    check(x[-1], a[-1])
    check(x[1:3], a[1:3])
    check(x[::2, 1:-1, ::-1], a[::2, 1:-1, ::-1])
    check(x[:, None, 2], a[:, None, 2])
    check(x[..., 0], a[..., 0])
    check(x[1, 2, 3], a[1, 2, 3])
    idx = np.array([3, 0, 0, 2], np.int64)
    check(x[g(idx)], a[idx])                         # integer-tensor gather on the GPU
    check(x[:, g(idx[:2])], a[:, idx[:2]])
    check(x[[0, 2]], a[[0, 2]])                      # a Python list index moves to the GPU
    mask = a[:, :, 0] > 0
    check(x[g(mask)], a[mask])                       # boolean mask on the GPU
    check(x[x > 0], a[a > 0])
    n = g(np.int64(2))
    check(x[n], a[2])                                # a scalar tensor as an index
    check(x[n:], a[2:])


def test_setitem():
    a = _x(4, 5, seed=20)
    x = g(a)
    x[0] = 0.0
    x[1:3, 2:] = g(np.ones((2, 3), np.float32))
    x[-1] = np.arange(5, dtype=np.float32)
    x[x > 1.5] = -1.0
    expected = a.copy()
    expected[0] = 0.0
    expected[1:3, 2:] = 1.0
    expected[-1] = np.arange(5, dtype=np.float32)
    expected[expected > 1.5] = -1.0
    check(x, expected)
    y = rt.setitem(g(a), (slice(None), 1), 7.0)
    e2 = a.copy()
    e2[:, 1] = 7.0
    check(y, e2)


def test_where_clip_astype():
    a, b = _x(3, 4, seed=21), _x(3, 4, seed=22)
    x, y = g(a), g(b)
    check(rt.where(x > 0, x, y), np.where(a > 0, a, b))
    check(rt.where(x > 0, x, 0.0), np.where(a > 0, a, np.float32(0)))
    check(rt.where(x > 0, 1.0, x), np.where(a > 0, np.float32(1), a))
    check(rt.clip(x, -0.5, 0.5), np.clip(a, -0.5, 0.5))
    check(rt.clip(x, min=0.0), np.clip(a, 0.0, None))
    check(rt.clip(x, max=0.0), np.clip(a, None, 0.0))
    check(x.clip(y - 1, y + 1), np.clip(a, b - 1, b + 1))
    check(rt.astype(x, "float64"), a.astype(np.float64))
    check(x.astype(rt.int32), a.astype(np.int32))
    check(x.astype("float16"), a.astype(np.float16))
    check((x > 0).astype("float32"), (a > 0).astype(np.float32))
    assert rt.astype(x, "float32") is x


def test_creation_on_gpu():
    check(rt.zeros((2, 3), device="gpu"), np.zeros((2, 3), np.float32))
    check(rt.ones(4, dtype="int64", device="gpu"), np.ones(4, np.int64))
    check(rt.full((2, 2), 3.5, device="gpu"), np.full((2, 2), 3.5, np.float32))
    check(rt.arange(5, device="gpu"), np.arange(5, dtype=np.int64))
    check(rt.arange(0.0, 1.0, 0.25, device="gpu"), np.arange(0.0, 1.0, 0.25, dtype=np.float32))
    check(rt.linspace(0, 1, 5, device="gpu"), np.linspace(0, 1, 5, dtype=np.float32))
    check(rt.eye(3, 4, k=1, device="gpu"), np.eye(3, 4, k=1, dtype=np.float32))
    x = g(_x(2, 3))
    check(rt.zeros_like(x), np.zeros((2, 3), np.float32))    # *_like follow their argument's device
    check(rt.ones_like(x, dtype="int32"), np.ones((2, 3), np.int32))
    check(rt.full_like(x, 7.0), np.full((2, 3), 7.0, np.float32))


def test_mixed_devices_is_a_clear_error():
    x, y = g(_x(2, 3)), rt.tensor(_x(2, 3))
    for op in (lambda: x + y, lambda: y * x, lambda: rt.matmul(x, y.T), lambda: rt.where(x > 0, x, y),
               lambda: rt.concat([x, y])):
        with pytest.raises(ValueError) as info:
            op()
        message = str(info.value)
        assert "different devices" in message and "gpu" in message and "cpu" in message
        assert ".to(" in message
    with pytest.raises(ValueError, match="different devices"):
        x[rt.tensor(np.array([0, 1]))]
    check(x + y.to("gpu"), x.numpy() + y.numpy())


# --- every registered op, from the conformance table ----------------------------------------

def _conformance_cases():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit",
                        "test_ops_conformance.py")
    if cupy is None or not os.path.exists(path):
        return []
    spec = importlib.util.spec_from_file_location("_gpu_ops_conformance", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = []
    for case in module.CASES:           # pytest.param(name, sample, id=...)
        name, sample = case.values
        cases.append(pytest.param(name, sample, module, id=case.id))
    return cases


CONFORMANCE = _conformance_cases()


_CREATION = {"constant", "zeros", "ones", "full", "arange", "linspace", "eye"}


def _gpu_tolerances(sample):
    return max(sample.rtol, 1e-5) * 10, max(sample.atol, 1e-6) * 10


@pytest.mark.skipif(not CONFORMANCE, reason="tests/unit/test_ops_conformance.py not found")
@pytest.mark.parametrize("name,sample,module", CONFORMANCE)
def test_registry_op_eager_on_gpu(name, sample, module):
    if name in _CREATION or not any(isinstance(a, np.ndarray) for a in sample.args):
        pytest.skip("creation op or no array input: eagerly it makes a CPU tensor unless given device= "
                    "(see test_creation_on_gpu; the traced sweep runs it on the GPU executor)")
    expected = np.asarray(sample.oracle(*module._np_args(sample), **sample.kwargs))
    args = tuple(g(a) if isinstance(a, np.ndarray) else a for a in sample.args)
    out = sample.fn(*args, **sample.kwargs)
    assert isinstance(out, rt.Tensor) and out.device == "gpu", f"{name}: {out!r}"
    rtol, atol = _gpu_tolerances(sample)
    check(out, expected, rtol, atol, device=None)


@pytest.mark.skipif(not CONFORMANCE, reason="tests/unit/test_ops_conformance.py not found")
@pytest.mark.parametrize("name,sample,module", CONFORMANCE)
def test_registry_op_traced_on_gpu_executor(name, sample, module):
    expected = np.asarray(sample.oracle(*module._np_args(sample), **sample.kwargs))
    program, _, feed = module._trace(sample, dynamic=False)
    feed = {k: g(v) for k, v in feed.items()}
    (result,) = rt.Executor(device="gpu").run(program, feed)
    assert result.device == "gpu"
    rtol, atol = _gpu_tolerances(sample)
    check(result, expected, rtol, atol, device=None)


# --- Programs on the GPU executor ---------------------------------------------------------

def _program_fn(x, n):
    h = rt.tanh(x)

    def grow(h, i):
        return h * 2.0, i + 1

    h, _ = rt.while_loop(lambda h, i: rt.logical_and(rt.sum(h) < 100.0, i < n), grow, (h, rt.zeros((), "int64")))
    return rt.cond(rt.mean(h) > 0, lambda: h + 1.0, lambda: -h)


def _program_oracle(a, n):
    h = np.tanh(a)
    i = 0
    while h.sum() < 100 and i < n:
        h = h * np.float32(2.0)
        i += 1
    return h + np.float32(1) if h.mean() > 0 else -h


def _traced_program():
    program, _, _ = rt.trace(_program_fn, [rt.InputSpec([None, 8], "float32", "x"),
                                           rt.InputSpec([], "int64", "n")])
    return program


@pytest.mark.parametrize("seed", range(4))
def test_program_with_cond_and_while_on_gpu(seed):
    program = _traced_program()
    types = [op.type for op in program.ops()]
    assert "while" in types and "cond" in types
    a = _x(3 + seed, 8, seed=seed, lo=-1.0 if seed % 2 else -0.2, hi=0.2 if seed % 2 else 1.0)
    n = np.int64(2 + seed)
    executor = rt.Executor(device="gpu")
    (out,) = executor.run(program, {"x": g(a), "n": g(n)})
    check(out, _program_oracle(a, n), rtol=1e-5, atol=1e-5)
    (host_fed,) = executor.run(program, {"x": a, "n": n})         # NumPy feeds are moved onto the GPU
    check(host_fed, _program_oracle(a, n), rtol=1e-5, atol=1e-5)
    (cpu_out,) = rt.Executor().run(program, {"x": a, "n": n})    # the same Program on the CPU agrees
    np.testing.assert_allclose(out.numpy(), cpu_out.numpy(), rtol=1e-5, atol=1e-6)


def test_plans_are_cached_per_backend():
    program = _traced_program()
    gpu_plan = rt.Executor(device="gpu").compile(program)
    cpu_plan = rt.Executor().compile(program)
    assert gpu_plan is not cpu_plan
    assert gpu_plan.backend.name == "gpu" and cpu_plan.backend.name == "cpu"
    assert rt.Executor(device="gpu").compile(program) is gpu_plan
    assert "while True" in gpu_plan.source
    a = _x(2, 8, seed=3)
    (out,) = gpu_plan(cupy.asarray(a), cupy.asarray(np.int64(3)))
    assert isinstance(out, cupy.ndarray)


def test_program_json_round_trip_runs_on_gpu():
    program = _traced_program()
    loaded = rt.Program.from_json(program.to_json())
    a = _x(4, 8, seed=5, lo=-0.1, hi=0.3)
    (out,) = rt.Executor(device="gpu").run(loaded, {"x": a, "n": np.int64(4)})
    check(out, _program_oracle(a, 4), rtol=1e-5, atol=1e-5)


def test_program_with_captured_gpu_tensor():
    w = g(_x(8, 3, seed=6))
    b = g(_x(3, seed=7))

    def f(x):
        return rt.nn.functional.relu(x @ w + b)

    program, _, _ = rt.trace(f, [rt.InputSpec([None, 8], "float32", "x")])
    persistable = [v for v in program.inputs if v.persistable]
    assert len(persistable) == 2 and "constant" not in [op.type for op in program.ops()]
    a = _x(5, 8, seed=8)
    expected = np.maximum(a @ w.numpy() + b.numpy(), 0)
    (out,) = rt.Executor(device="gpu").run(program, {"x": a})
    check(out, expected, rtol=1e-5, atol=1e-5)
    (cpu_out,) = rt.Executor().run(program, {"x": a})          # GPU parameters are copied for a CPU run
    assert cpu_out.device == "cpu"
    np.testing.assert_allclose(cpu_out.numpy(), expected, rtol=1e-5, atol=1e-5)
    w.data = w.data * 0                                         # parameters are fed by reference
    (zeroed,) = rt.Executor(device="gpu").run(program, {"x": a})
    check(zeroed, np.maximum(np.broadcast_to(b.numpy(), (5, 3)), 0), rtol=1e-6, atol=1e-6)


def test_program_with_indexing_shapes_and_reductions():
    def f(x, idx):
        y = x[:, 1:] * 2.0
        y = rt.concat([y, x[:, :1]], axis=1)
        z = rt.permute_dims(rt.reshape(y, (x.shape[0], 2, -1)), (0, 2, 1))
        picked = y[idx]
        return rt.sum(z, axis=1, keepdims=True), picked.mean(axis=0), rt.argmax(y, axis=1)

    program, _, _ = rt.trace(f, [rt.InputSpec([None, 6], "float32", "x"), rt.InputSpec([None], "int64", "idx")])
    a = _x(4, 6, seed=9)
    idx = np.array([0, 3, 3], np.int64)
    outs = rt.Executor(device="gpu").run(program, {"x": g(a), "idx": g(idx)})
    y = np.concatenate([a[:, 1:] * 2, a[:, :1]], axis=1)
    z = np.transpose(y.reshape(4, 2, -1), (0, 2, 1))
    expected = [z.sum(axis=1, keepdims=True), y[idx].mean(axis=0), y.argmax(axis=1)]
    for out, e in zip(outs, expected):
        check(out, e, rtol=1e-5, atol=1e-5)


def test_program_print_and_assert_run_on_gpu(capsys):
    def f(x):
        rt.print_("total:", rt.sum(x))
        rt.assert_(rt.all(x > 0), "x must be positive")
        return x * 2.0

    program, _, _ = rt.trace(f, [rt.InputSpec([3], "float32", "x")])
    executor = rt.Executor(device="gpu")
    (out,) = executor.run(program, {"x": np.array([1.0, 2.0, 3.0], np.float32)})
    check(out, np.array([2.0, 4.0, 6.0], np.float32))
    assert "total: 6.0" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="x must be positive"):
        executor.run(program, {"x": np.array([1.0, -2.0, 3.0], np.float32)})


def test_feed_checks_on_gpu():
    program = _traced_program()
    executor = rt.Executor(device="gpu")
    a = _x(2, 8)
    with pytest.raises(rt.FeedError, match="dtype"):
        executor.run(program, {"x": g(a.astype(np.float64)), "n": np.int64(1)})
    with pytest.raises(rt.FeedError, match="dtype"):
        executor.run(program, {"x": cupy.asarray(a, dtype=cupy.float16), "n": np.int64(1)})
    with pytest.raises(rt.FeedError, match="shape"):
        executor.run(program, {"x": g(_x(2, 7)), "n": np.int64(1)})
    with pytest.raises(rt.FeedError, match="shape"):
        executor.run(program, {"x": g(a), "n": g(np.array([1], np.int64))})
    with pytest.raises(rt.FeedError, match="missing input 'n'"):
        executor.run(program, {"x": g(a)})
    with pytest.raises(rt.FeedError, match="unknown input"):
        executor.run(program, {"x": g(a), "n": np.int64(1), "y": g(a)})
    (out,) = executor.run(program, {"x": cupy.asarray(a), "n": cupy.asarray(np.int64(1))})  # raw CuPy feeds
    check(out, _program_oracle(a, 1), rtol=1e-5, atol=1e-5)
    (out,) = executor.run(program, {"x": rt.tensor(a), "n": 1})        # a CPU Tensor is moved over
    check(out, _program_oracle(a, 1), rtol=1e-5, atol=1e-5)


def test_failing_op_on_gpu_names_the_op():
    def f(x, y):
        return rt.matmul(x, y)

    program, _, _ = rt.trace(f, [rt.InputSpec([None, 4], "float32", "x"), rt.InputSpec([None, 2], "float32", "y")])
    with pytest.raises(Exception) as info:
        rt.Executor(device="gpu").run(program, {"x": g(_x(3, 4)), "y": g(_x(3, 2))})
    assert "matmul" in str(info.value)


def test_deploy_load_on_gpu(tmp_path):
    from runtime.deploy import load_program, save_program
    w = rt.tensor(_x(8, 3, seed=10))

    def f(x):
        return rt.tanh(x @ w)

    program, _, _ = rt.trace(f, [rt.InputSpec([None, 8], "float32", "x")])
    save_program(program, tmp_path / "model")
    model = load_program(tmp_path / "model", device="gpu")
    assert model.device == "gpu"
    assert all(t.device == "gpu" for t in model.state_dict().values())
    a = _x(2, 8, seed=11)
    out = model(g(a))
    check(out, np.tanh(a @ w.numpy()), rtol=1e-5, atol=1e-5)


# --- graph passes on the GPU -----------------------------------------------------------------

def _pass_workload(x, u, n):
    """Elementwise chains (fusion, strength reduction), a loop with invariant work (licm) and a
    gathered matmul (hoist_gather_matmul), repeated subexpressions (cse), dead code (dce)."""
    h = rt.tanh(x) * 2.0 + x ** 2 - rt.exp(-rt.abs(x))
    _unused = rt.sin(h) * 3.0

    def body(acc, i):
        scale = rt.sqrt(rt.sum(u * u)) + 1.0            # loop-invariant
        row = rt.matmul(h[i], u)                         # gather then matmul
        return acc + row / scale + (x[i] ** 3).sum(), i + 1

    acc, _ = rt.while_loop(lambda acc, i: i < n, body, (rt.zeros((u.shape[1],), "float32"), rt.zeros((), "int64")))
    same = rt.tanh(x) * 2.0
    return acc, rt.maximum(same, 0.0) * 0.5 + rt.minimum(same, 0.0)


@pytest.mark.parametrize("passes", ["none", "default", "each"])
def test_passes_change_no_result_on_gpu(passes):
    program, _, _ = rt.trace(_pass_workload, [rt.InputSpec([None, 4], "float32", "x"),
                                              rt.InputSpec([4, 3], "float32", "u"),
                                              rt.InputSpec([], "int64", "n")])
    a, u = _x(5, 4, seed=30), _x(4, 3, seed=31)
    feed = {"x": a, "u": u, "n": np.int64(5)}
    reference = [o.numpy() for o in rt.Executor(passes=[]).run(program, feed)]
    pipelines = {"none": [[]], "default": [None],
                 "each": [[name] for name in rt.passes.DEFAULT_PIPELINE]}[passes]
    for pipeline in pipelines:
        outs = rt.Executor(device="gpu", passes=pipeline).run(program, {k: g(v) for k, v in feed.items()})
        for out, ref in zip(outs, reference):
            assert_on_gpu(out)
            np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5, err_msg=f"passes={pipeline}")


def test_fused_elementwise_runs_as_one_gpu_kernel():
    def f(x, y):
        return rt.tanh(x) * y + rt.exp(-x) * 0.5 - y ** 2

    program, _, _ = rt.trace(f, [rt.InputSpec([None, 64], "float32", "x"), rt.InputSpec([None, 64], "float32", "y")])
    a, b = _x(128, 64, seed=32), _x(128, 64, seed=33)
    expected = np.tanh(a) * b + np.exp(-a) * np.float32(0.5) - b ** 2
    executor = rt.Executor(device="gpu")
    (out,) = executor.run(program, {"x": g(a), "y": g(b)})
    check(out, expected, rtol=1e-5, atol=1e-5)
    (again,) = executor.run(program, {"x": g(b), "y": g(a)})    # the compiled kernel is reused
    check(again, np.tanh(b) * a + np.exp(-b) * np.float32(0.5) - a ** 2, rtol=1e-5, atol=1e-5)
    assert rt.get_backend("gpu").synchronize() is None


def test_scan_runs_on_the_gpu_as_on_numpy():
    """A scan op's plan on CuPy (xp.empty for the stacked outputs, rows written by index) and its gradient."""
    def cell(c, x):
        h = rt.tanh(c @ x[0] + x[1])
        return h, rt.sum(h * h)

    def fn(c0, w, b):
        c, ys = rt.scan(cell, c0, (w, b))
        return c, ys, rt.grad(lambda c0: rt.sum(rt.scan(cell, c0, (w, b))[1]))(c0)

    arrays = [_x(3, seed=1), _x(5, 3, 3, seed=2) * 0.5, _x(5, 3, seed=3)]
    specs = [rt.InputSpec(list(a.shape), "float32", f"a{k}") for k, a in enumerate(arrays)]
    program, _, _ = rt.trace(fn, specs)
    feed = {f"a{k}": a for k, a in enumerate(arrays)}
    want = rt.Executor().run(program, feed)
    got = rt.Executor(device="gpu").run(program, {k: g(v) for k, v in feed.items()})
    for a, b in zip(got, want):
        assert_on_gpu(a)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=RTOL, atol=ATOL)
