"""Graph passes and the executor's CuPy code paths on the GPU.

On CuPy a `fused_elementwise` op runs as one kernel compiled by `backend.fuse`
(cupy.fuse); ops with 0-d results run as Python operators on 0-d device arrays.
Each test compares the default pipeline against no passes, and the GPU against
NumPy. Marked `gpu`: skipped without CUDA (tests/gpu/conftest.py).
"""
import numpy as np
import pytest

import runtime as rt
from runtime.executor import Executor
from runtime.passes import run_passes
from runtime.passes.fusion import FUSED
from transpiler import to_static

pytestmark = pytest.mark.gpu


def _gelu(x):
    return 0.5 * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x ** 3)))


def _mlp(ws):
    w1, b1, w2, b2 = ws

    def mlp(x):
        h = rt.maximum(x @ w1 + b1, 0)
        return rt.maximum(h @ w2 + b2, 0)
    return mlp


def _rnn(u, w, b, steps):
    def rnn(x):
        h = rt.zeros((1, w.shape[0]))
        i = 0
        while i < steps and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h
    return rnn


def _host(t):
    return t.numpy()


def test_fused_gelu_runs_as_one_kernel_and_matches_numpy():
    import cupy
    x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    program = rt.trace(_gelu, [rt.InputSpec(x.shape, "float32")])[0]
    optimized = run_passes(program, None)
    assert [op.type for op in optimized.ops()] == [FUSED]
    plan = Executor("gpu").compile(program)
    assert "xp_fused" in plan.source, plan.source
    got = plan(cupy.asarray(x))[0]
    want = Executor("gpu", passes=[]).compile(program)(cupy.asarray(x))[0]
    np.testing.assert_allclose(cupy.asnumpy(got), cupy.asnumpy(want), rtol=1e-5, atol=1e-6)
    cpu = Executor("cpu").compile(program)(x)[0]
    np.testing.assert_allclose(cupy.asnumpy(got), cpu, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [1, 256])
def test_mlp_on_gpu_with_and_without_passes(batch):
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in [(64, 32), (32,), (32, 8), (8,)]]
    x = rng.standard_normal((batch, 64)).astype(np.float32)
    on = to_static(_mlp([rt.tensor(w, device="gpu") for w in ws]))
    off = to_static(_mlp([rt.tensor(w, device="gpu") for w in ws]), passes=[])
    cpu = to_static(_mlp([rt.tensor(w) for w in ws]))
    xg = rt.tensor(x, device="gpu")
    np.testing.assert_allclose(_host(on(xg)), _host(off(xg)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_host(on(xg)), _host(cpu(rt.tensor(x))), rtol=1e-4, atol=1e-5)
    assert on(xg).device == "gpu"


def test_while_rnn_on_gpu_with_and_without_passes():
    rng = np.random.default_rng(2)
    u, w = (rng.standard_normal(s).astype(np.float32) * 0.2 for s in [(16, 32), (32, 32)])
    b = rng.standard_normal(32).astype(np.float32)
    x = rng.standard_normal((12, 1, 16)).astype(np.float32)
    gpu = [rt.tensor(a, device="gpu") for a in (u, w, b)]
    on = to_static(_rnn(*gpu, steps=12))
    off = to_static(_rnn(*gpu, steps=12), passes=[])
    cpu = to_static(_rnn(*[rt.tensor(a) for a in (u, w, b)], steps=12))
    xg = rt.tensor(x, device="gpu")
    assert "while" in {op.type for op in on.get_program(xg).ops()}
    np.testing.assert_allclose(_host(on(xg)), _host(off(xg)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_host(on(xg)), _host(cpu(rt.tensor(x))), rtol=1e-4, atol=1e-5)


def test_scalar_operator_forms_on_device_scalars():
    def f(x):
        i = 0
        s = x.sum()
        while i < 5 and s < 100:
            s = s * 2 + 1
            i += 1
        return s, -s, (s > 3)

    x = np.ones(4, np.float32)
    on = to_static(f)
    got = on(rt.tensor(x, device="gpu"))
    want = to_static(f, passes=[])(rt.tensor(x))
    for g, w in zip(got, want):
        np.testing.assert_allclose(_host(g), _host(w))


def test_fused_kernels_are_cached_per_expression():
    from runtime.codegen import cupy_fusion
    program = rt.trace(_gelu, [rt.InputSpec([128], "float32")])[0]
    Executor("gpu").compile(program)
    before = len(cupy_fusion.FUSED_KERNELS)
    again = rt.trace(_gelu, [rt.InputSpec([128], "float32")])[0]
    Executor("gpu").compile(again)
    assert len(cupy_fusion.FUSED_KERNELS) == before
