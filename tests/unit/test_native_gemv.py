"""The inline float32 gemv (runtime/native/gemv.py): OpenBLAS's order of sums, NumPy's bits.

NumPy's matmul is the oracle throughout: the inline function, a native loop whose product it is, and
the stacked product outside loops must give np.matmul's bits; shapes whose order the code does not
reproduce must keep the CBLAS call (or the NumPy line). A NumPy model of the order (below) checks the
reading of OpenBLAS's kernels without LLVM, against np.matmul too.
"""
import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import gemv, llvm
from runtime.native.numpy_loops import probe_values, same_bits
from transpiler import to_static

pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built

needs_llvm = pytest.mark.skipif(llvm.engine() is None, reason="llvmlite not available")


def _fma(a, b, c):
    """float32 fma, correctly rounded: the exact product in float64, the sum rounded to odd, then to float32."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        p = a * b
        s = p + c
        back = s - c
        err = (p - back) + (c - (s - back))
        fix = (err != 0) & np.isfinite(s) & ((s.view(np.int64) & 1) == 0)
        s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        return s.astype(np.float32)


def model(x, w):
    """x (k,) @ w (k, n) in the order gemv.py's docstring gives (OpenBLAS's SkylakeX sgemv_n, beta 0, alpha 1)."""
    k, n = w.shape
    y = np.zeros(n, np.float32)
    if k <= 48 and k != 4:
        acc = np.zeros(n, np.float32)
        for j in range(k):
            acc = _fma(w[j], x[j], acc)
        return _fma(acc, 1, y)
    rows = n & -4
    head = (rows & 4) + (rows & 8)
    j = 0
    for size in [8] * (k // 8) + [s for s in (4, 2, 1) if k % 8 & s]:
        cols = range(j, j + size)
        t = np.zeros(rows, np.float32)
        for c in cols:
            t = _fma(w[c, :rows], x[c], t)
        main = _fma(t, 1, y[:rows])
        if size >= 4:
            t4, t5 = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
            for c in cols[0::2]:
                t4 = _fma(w[c, :rows], x[c], t4)
            for c in cols[1::2]:
                t5 = _fma(w[c, :rows], x[c], t5)
            with np.errstate(all="ignore"):
                split = (t4 + t5) + y[:rows]
            main[:head] = split[:head]
        y[:rows] = main
        j += size
    for i in range(rows, n):
        t = np.float32(0)
        for c in range(k):
            t = _fma(w[c, i], x[c], t)
        y[i] = _fma(1, t, 0)
    return y


SHAPES = [(128, 128), (64, 128), (64, 64), (128, 384), (4, 16), (48, 100), (49, 100), (8, 4), (5, 7),
          (9, 12), (16, 8), (200, 333), (7, 1000), (33, 20), (96, 13), (100, 30)]


@pytest.mark.parametrize("k,n", SHAPES)
def test_model_is_numpys_order(k, n):
    """The order read from OpenBLAS's source reproduces np.matmul's bits (no LLVM involved)."""
    rng = np.random.default_rng(k * 1000 + n)
    for scale in (1.0, 1e3):
        x = (rng.standard_normal(k) * scale).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        assert same_bits(model(x, w), np.matmul(x[None], w)[0])


@needs_llvm
@pytest.mark.parametrize("k,n", SHAPES)
def test_inline_function_gives_numpys_bits(k, n):
    assert gemv.check(k, n) == ""
    call = gemv.stacked_kernel(3, k, n)
    assert callable(call)
    for trial in range(2):
        a = (probe_values(np.float32, 3 * k) if trial == 0 else
             np.random.default_rng(n).standard_normal(3 * k).astype(np.float32)).reshape(3, 1, k)
        w = np.roll(probe_values(np.float32, k * n), trial + 2).reshape(k, n)
        got = np.empty((3, 1, n), np.float32)
        call(a, w, got)
        with np.errstate(all="ignore"):
            assert same_bits(got, np.matmul(a, w))


def test_declines_what_it_does_not_model():
    assert gemv.applies(np.float64, 64, 64)
    assert gemv.applies(np.float32, 64, 3)          # n < 4: OpenBLAS's lda == n special cases
    assert gemv.applies(np.float32, 64, gemv.MAX_N + 1)
    assert gemv.check(64, 2)


def _rnn(u, w, b, steps):
    def rnn(x):
        h = rt.zeros((1, w.shape[0]))
        i = 0
        while i < steps and h.sum() < 1e9:      # a tensor test: a `while` op, not an unrolled loop
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h
    return rnn


def _numpy_rnn(x, u, w, b, steps):
    h = np.zeros((1, w.shape[0]), np.float32)
    for i in range(steps):
        h = np.tanh(x[i] @ u + h @ w + b)
    return h


@needs_llvm
@pytest.mark.parametrize("hidden,inputs", [(128, 64), (36, 20), (64, 5)])
def test_loop_products_inline_with_numpys_bits(monkeypatch, hidden, inputs):
    """W3's shape and others: the loop's h @ W inline (and the hoisted x @ U a stacked inline gemv where
    one gemm of its rows would change bits), bit for bit the NumPy floor's result."""
    monkeypatch.setenv("DY2STATIC_NATIVE", "sync")
    monkeypatch.setenv("DY2STATIC_NATIVE_CACHE", "0")
    rng = np.random.default_rng(hidden)
    steps = 12
    u = (rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)).astype(np.float32)
    w = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    b = (rng.standard_normal(hidden) * 0.1).astype(np.float32)
    x = rng.standard_normal((steps, 1, inputs)).astype(np.float32)
    native.reset_stats()
    fn = to_static(_rnn(rt.tensor(u), rt.tensor(w), rt.tensor(b), steps))
    fn(rt.tensor(x))
    native.wait()
    got = fn(rt.tensor(x)).numpy()
    assert same_bits(got, _numpy_rnn(x, u, w, b, steps))
    found = native.stats()
    assert found["inline_gemvs"] >= 1, found
    if (hidden, inputs) == (128, 64):           # W3's: one gemm of the 12 rows changes bits, the stack is inline too
        assert found["inline_gemvs"] == 2, found


T_SHAPES = [(128, 384), (128, 64), (64, 256), (12, 8), (20, 12), (36, 44), (100, 100),
            (784, 10), (256, 10), (12, 2), (64, 6), (1000, 130)]      # n % 4 == 2: sgemv_kernel_4x2's outputs


@needs_llvm
@pytest.mark.parametrize("k,n", T_SHAPES)
def test_transposed_inline_function_gives_numpys_bits(k, n):
    """x @ W.T and W @ column (OpenBLAS's sgemv_t), heads of 4 and 8 numbers included (k & 4, k & 8)."""
    assert gemv.check(k, n, "t") == ""


def test_transposed_declines_what_it_does_not_model():
    assert gemv.applies(np.float32, 8, 64, "t")        # k <= 8: OpenBLAS's SkylakeX small kernel
    assert gemv.applies(np.float32, 66, 64, "t")       # k % 4: scalar tail code
    assert gemv.applies(np.float32, 64, 65, "t")       # n % 4 == 1 or 3: the 4x1 kernel, not modelled
    assert gemv.applies(np.float32, 64, 67, "t")


def _decoder(hidden, vocab):
    from runtime import nn
    rt.seed(5)
    cell, out = nn.GRUCell(hidden, hidden), nn.Linear(hidden, vocab)

    def decode(h):
        steps = 0
        while steps < 8 and rt.sum(h) < 1e9:
            h = cell(h, h)
            h = h + rt.tanh(out(h))[:, :1]
            steps += 1
        return h
    return decode


@needs_llvm
def test_gru_cell_products_inline_with_the_numpy_plans_bits(monkeypatch):
    """R1's shapes: (1, 128) @ (384, 128).T and @ (64, 128).T inline (sgemv_t), the loop's result the
    NumPy plan's bits."""
    monkeypatch.setenv("DY2STATIC_NATIVE_CACHE", "0")
    h = rt.tensor((np.random.default_rng(4).standard_normal((1, 128)) * 0.5).astype(np.float32))
    monkeypatch.setenv("DY2STATIC_NATIVE", "0")
    want = to_static(_decoder(128, 64))(h).numpy()
    monkeypatch.setenv("DY2STATIC_NATIVE", "sync")
    native.reset_stats()
    fn = to_static(_decoder(128, 64))
    fn(h)
    native.wait()
    assert same_bits(fn(h).numpy(), want)
    assert native.stats()["inline_gemvs"] >= 2, native.stats()
