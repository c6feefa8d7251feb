"""What makes native loops fast keeps NumPy's bits: a weight multiplied every iteration goes through a
copy of its transpose (runtime/native/blas.py `copied_transpose_call`, loop_emitter.py)."""
import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import blas, region
from runtime.native.numpy_loops import same_bits
from runtime.nn import functional as F
from transpiler import to_static

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built
RNG = np.random.default_rng(27)
M, K, N = 8, 64, 256


def _tensor(*shape, scale=1.0):
    return rt.tensor((RNG.standard_normal(shape) * scale).astype("float32"))


@pytest.fixture
def copy_is_faster(monkeypatch):
    """Fresh kernels and self-tests, the copy timed as faster (whether it is depends on the CPU's BLAS;
    the bits never may): the tests see the copied path wherever its bits are NumPy's."""
    monkeypatch.setattr(blas, "_COPIED", {})
    monkeypatch.setattr(region, "_KERNELS", {})
    monkeypatch.setattr(blas, "_seconds", lambda dtype, m, k, n, call, copy_b, repeats=5: 1.0 if copy_b else 2.0)
    found = blas.copied_transpose_call("float32", M, K, N)
    if isinstance(found, str):
        pytest.skip(f"this CPU's BLAS: {found}")


def _run(fn, *args):
    """(native outputs, NumPy outputs, the loop's kernel) of fn traced on args."""
    program = to_static(fn).get_program(*args)
    feed = {v.name: a for v, a in zip(program.inputs, args)}
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    assert [why for name, why in plan.native_regions if name.startswith("while")] == ["native"]
    got = [t.numpy() for t in plan.run(feed)]
    want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
    kernels = [k for k in region._KERNELS.values() if not isinstance(k, str)]
    assert len(kernels) == 1
    return got, want, kernels[0]


@needs_llvm
@pytest.mark.parametrize("steps", [0, 1, 2, 3, 7])
@pytest.mark.parametrize("m, k, n", [(M, K, N), (5, 24, 40)])      # copied in 16 x 16 tiles, or element by element
def test_a_loop_invariant_weight_goes_through_a_copy_of_its_transpose_with_numpys_bits(copy_is_faster, steps, m, k, n):
    if isinstance(blas.copied_transpose_call("float32", m, k, n), str):
        pytest.skip(f"this CPU's BLAS: {blas.copied_transpose_call('float32', m, k, n)}")
    w, bias, w2 = _tensor(n, k, scale=0.2), _tensor(n), _tensor(n, k, scale=0.1)

    def cell(h, n):
        i = 0
        while i < n:
            h = rt.tanh(F.linear(h, w, bias) @ w2)     # (m, k) @ (n, k).T, then back to (m, k)
            i += 1
        return h, i

    got, want, kernel = _run(cell, _tensor(m, k), rt.tensor(steps))
    assert kernel.copied_transposes == 1
    for g, x in zip(got, want):
        assert same_bits(g, x), (g, x)


@needs_llvm
def test_a_weight_the_loop_changes_is_multiplied_as_numpy_does(copy_is_faster):
    bias = _tensor(N)

    def cell(h, w, n):
        i = 0
        while i < n:
            out = F.linear(h, w, bias)                  # w is loop state: no copy made once for the call
            w = w * 0.5
            h = h + out[:, :K] * 0.01
            i += 1
        return h, w

    got, want, kernel = _run(cell, _tensor(M, K), _tensor(N, K, scale=0.2), rt.tensor(4))
    assert kernel.copied_transposes == 0
    for g, x in zip(got, want):
        assert same_bits(g, x), (g, x)


def test_the_copied_transpose_gemm_is_only_taken_with_numpys_bits(monkeypatch):
    monkeypatch.setattr(blas, "_COPIED", {})
    monkeypatch.setattr(blas, "_seconds", lambda dtype, m, k, n, call, copy_b, repeats=5: 1.0 if copy_b else 2.0)
    for dtype in ("float32", "float64"):
        for m, k, n in [(2, 3, 4), (4, 128, 64), (4, 128, 384), (8, 64, 256), (17, 33, 65)]:
            found = blas.copied_transpose_call(dtype, m, k, n)
            if isinstance(found, str):
                assert found.startswith("self-test") or "BLAS" in found, found
                continue
            a = RNG.standard_normal((m, k)).astype(dtype)
            b = RNG.standard_normal((n, k)).astype(dtype)
            bt, got = np.ascontiguousarray(b.T), np.empty((m, n), dtype)
            slots = {"a": a.ctypes.data, "b": bt.ctypes.data, "out": got.ctypes.data}
            found[0].call(*[slots.get(x, x) if isinstance(x, str) else x for x in found[1]])
            assert same_bits(got, np.matmul(a, b.T))
    assert isinstance(blas.copied_transpose_call("float32", 1, 64, 256), str)     # one row: NumPy's gemv


def _plans(fn, *args):
    program = to_static(fn).get_program(*args)
    feed = {v.name: a for v, a in zip(program.inputs, args)}
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    return program, feed, plan


@needs_llvm
@pytest.mark.parametrize("with_bias", [True, False])
def test_a_stacked_linear_is_one_blas_call_with_numpys_bits(with_bias):
    w, bias = _tensor(N, K, scale=0.2), _tensor(N)

    def hoisted(x):
        return F.linear(x, w, bias if with_bias else None)

    x = _tensor(50, M, K)
    program, feed, plan = _plans(hoisted, x)
    if blas.flat_product_known("float32", 50, M, K, N, True):
        pytest.skip(f"this CPU's BLAS: {blas.flat_product_known('float32', 50, M, K, N, True)}")
    products = [why for name, why in plan.native_regions if not name.startswith("while")]
    assert products == ["native"]
    want = rt.Executor(native=False).run(program, feed)[0].numpy()
    assert same_bits(plan.run(feed)[0].numpy(), want)
    strided = {k: rt.tensor(np.asarray(v.numpy())[:, ::-1]) for k, v in feed.items()}   # not C-contiguous
    want = rt.Executor(native=False).run(program, strided)[0].numpy()
    assert same_bits(plan.run(strided)[0].numpy(), want)


def test_the_one_call_product_is_checked_against_numpys_stacked_matmul():
    for dtype in ("float32", "float64"):
        for batch, m, k, n, transposed in [(50, 8, 32, 256, True), (3, 5, 7, 11, False), (2, 1, 64, 128, True)]:
            why = blas.flat_product_check(dtype, batch, m, k, n, transposed)
            assert why == "" or why.startswith("self-test"), why
            assert blas.flat_product_known(dtype, batch, m, k, n, transposed) == why
    assert blas.flat_product_known("float32", 9, 9, 9, 9, True) is None       # not checked: not used
