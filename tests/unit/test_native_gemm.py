"""The native GEMM (runtime/native/gemm.py): a 2-D float32 `linear` (+ the ReLU after it) with the bits of
the plan's NumPy lines (`matmul(x, w.T)`, `+= bias`, `maximum(., 0)`), compared exactly (`same_bits`)."""
import numpy as np
import pytest

import runtime as rt
from runtime import native, nn
from runtime.native import gemm
from runtime.native.numpy_loops import probe_values, same_bits
from runtime.nn import functional as F
from transpiler import InputSpec, to_static

pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")


def _kernel_or_skip(found, m=None):
    why = gemm.check(found, m)
    if why:
        pytest.skip(f"this CPU's BLAS: {why}")


def test_k_blocks_are_openblas_skylakex_driver_blocks():
    assert gemm.blocks(448) == [(0, 448)]
    assert gemm.blocks(512) == [(0, 256), (256, 512)]         # 448 < k < 896: two halves
    assert gemm.blocks(1344) == [(0, 448), (448, 896), (896, 1344)]
    assert gemm.blocks(1024) == [(0, 448), (448, 736), (736, 1024)]
    assert gemm.blocks(500) is None         # one-thread driver 256 + 244, threaded 250 + 250: bits depend on threads
    assert gemm.blocks(900) is None


@needs_llvm
@pytest.mark.parametrize("k,n", [(512, 256), (256, 128), (300, 64), (100, 40), (64, 17), (37, 70), (1344, 48),
                                 (1024, 33)])
@pytest.mark.parametrize("bias,relu", [(True, True), (True, False), (False, True), (False, False)])
def test_bits_equal_numpy_for_every_row_tail_and_column_tail(k, n, bias, relu):
    found = (k, n, bias, relu)
    _kernel_or_skip(found)
    rng = np.random.default_rng(k * n)
    low = gemm.smallest_rows(k, n)
    for rows in (low, low + 7, 2 * low + 13):
        for scale in (1.0, 1e4):
            x = (rng.standard_normal((rows, k)) * scale).astype(np.float32)
            w = rng.standard_normal((n, k)).astype(np.float32)
            b = rng.standard_normal(n).astype(np.float32) if bias else None
            want = gemm.numpy_linear(x, w, b, relu)
            got = gemm.multiply(found, x, w, b, np.empty((rows, n), np.float32))
            assert same_bits(got, want), (rows, k, n, bias, relu)


@needs_llvm
def test_special_values_keep_numpy_bits():
    found = (512, 96, True, True)
    _kernel_or_skip(found)
    x = probe_values(np.float32, 40 * 512).reshape(40, 512)
    w = np.roll(probe_values(np.float32, 96 * 512), 7).reshape(96, 512)
    b = probe_values(np.float32, 96)
    with np.errstate(all="ignore"):
        want = gemm.numpy_linear(x, w, b, True)
        got = gemm.multiply(found, x, w, b, np.empty((40, 96), np.float32))
    assert np.isnan(want).any() and same_bits(got, want)


@needs_llvm
def test_the_k_blocking_is_what_gives_numpy_bits():
    """One FMA chain over all of k (no OpenBLAS K blocks) is a different sum: the test can fail."""
    found = (512, 64, False, False)
    _kernel_or_skip(found)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    w = rng.standard_normal((64, 512)).astype(np.float32)
    want = gemm.numpy_linear(x, w, None, False)
    one_chain = gemm.Call(found)
    one_chain.bounds = np.array([0, 512], np.int64)
    one_chain.nblocks, one_chain.bounds_at, one_chain.scratch_shape = 1, one_chain.bounds.ctypes.data, (512 * gemm.NR,)
    got = gemm.multiply(found, x, w, None, np.empty((64, 64), np.float32), one_chain)
    assert not same_bits(got, want)
    assert same_bits(gemm.multiply(found, x, w, None, np.empty((64, 64), np.float32)), want)


def _mlp():
    rt.seed(0)

    class MLP(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(512, 256), nn.Linear(256, 128), nn.Linear(128, 2)

        def forward(self, x):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))
    return MLP()


def _numpy_mlp(model, x):
    h = x
    for i, fc in enumerate((model.fc1, model.fc2, model.fc3)):
        h = h @ fc.weight.numpy().T
        h += fc.bias.numpy()
        if i < 2:
            np.maximum(h, 0, out=h)
    return h


@needs_llvm
def test_mlp_plan_runs_the_linears_native_with_numpy_bits_and_sees_in_place_weight_writes(monkeypatch):
    monkeypatch.setenv(native.ENV, "sync")
    _kernel_or_skip((512, 256, True, True), 256)
    model = _mlp()
    forward = to_static(model.forward)
    x = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
    native.reset_stats()
    with rt.no_grad():
        got = forward(rt.tensor(x)).numpy()
    assert same_bits(got, _numpy_mlp(model, x))
    stats = native.stats()
    # fc1 and fc2 (with their ReLUs) GEMMs; fc3 (256 x 128 x 2: OpenBLAS's small-matrix kernels, not the
    # GEMM's order) NumPy's CBLAS call in a straight native region (test_native_straight.py)
    assert stats["native"] == 3 and stats["declined_calls"] == 0, stats
    model.fc1.weight.numpy()[3, :] = 0.25         # a write no Tensor API call sees: nothing is cached
    model.fc2.bias.numpy()[:] = -1.0
    with rt.no_grad():
        got = forward(rt.tensor(x)).numpy()
    assert same_bits(got, _numpy_mlp(model, x))


@needs_llvm
def test_dynamic_batch_runs_native_where_openblas_takes_its_level3_driver(monkeypatch):
    monkeypatch.setenv(native.ENV, "sync")
    _kernel_or_skip((512, 256, True, True))
    model = _mlp()
    forward = to_static(model.forward, input_spec=[InputSpec([None, 512], "float32", "x")])
    rng = np.random.default_rng(1)
    for rows in (1, 5, 8, 37, 256):             # 1 and 5: gemv and small-matrix kernels, NumPy's lines
        x = rng.standard_normal((rows, 512)).astype(np.float32)
        with rt.no_grad():
            got = forward(rt.tensor(x)).numpy()
        assert same_bits(got, _numpy_mlp(model, x)), rows


@needs_llvm
def test_arrays_not_as_checked_are_declined():
    found = (64, 32, True, True)
    _kernel_or_skip(found)
    run = gemm.gemm_call(found)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((600, 64)).astype(np.float32)
    w = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    assert same_bits(run(x, w, b), gemm.numpy_linear(x, w, b, True))
    assert run(np.asfortranarray(x), w, b) is None
    assert run(x[:, ::-1], w, b) is None
    assert run(x.astype(np.float64), w, b) is None
    assert run(x[:3], w, b) is None             # m * n * k <= 1e6: OpenBLAS's small-matrix kernels
    assert run(x, w[:16], b) is None
    assert run(x, w, b[:16]) is None


@needs_llvm
def test_relu_is_fused_only_where_it_is_the_linears_only_reader(monkeypatch):
    monkeypatch.setenv(native.ENV, "sync")
    _kernel_or_skip((512, 64, True, False))
    rt.seed(1)
    fc = nn.Linear(512, 64)

    def both(x):
        h = fc(x)
        return h, F.relu(h), F.relu(fc(x * 2.0))

    x = np.random.default_rng(4).standard_normal((300, 512)).astype(np.float32)
    with rt.no_grad():
        h, r, r2 = (t.numpy() for t in to_static(both)(rt.tensor(x)))
    w, b = fc.weight.numpy(), fc.bias.numpy()
    assert (h < 0).any()                                    # the linear returned as is, not through the ReLU
    assert same_bits(h, gemm.numpy_linear(x, w, b, False))
    assert same_bits(r, gemm.numpy_linear(x, w, b, True))
    assert same_bits(r2, gemm.numpy_linear(x * np.float32(2.0), w, b, True))


@needs_llvm
def test_threads_calling_one_plan_at_once_get_numpy_bits():
    import threading
    found = (256, 96, True, True)
    _kernel_or_skip(found)
    run = gemm.gemm_call(found)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((96, 256)).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    xs = [rng.standard_normal((64 + 7 * j, 256)).astype(np.float32) for j in range(4)]
    wrong = []

    def work(x):
        for _ in range(20):
            if not same_bits(run(x, w, b), gemm.numpy_linear(x, w, b, True)):
                wrong.append(x.shape)

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def _openblas_order(x, w, bounds):
    """NumPy model of OpenBLAS SkylakeX's sgemm per element: C = +0; per K block an FMA chain from +0 in k
    order (each FMA emulated in x87 long double: the product is exact there, the sum rounded twice, which
    differs from one rounding only on a float32 midpoint: never met at these sizes), added to C."""
    c = np.zeros((x.shape[0], w.shape[0]), np.float32)
    xl, wl = x.astype(np.longdouble), w.astype(np.longdouble)
    for k0, k1 in bounds:
        acc = np.zeros_like(c)
        for kk in range(k0, k1):
            acc = (xl[:, kk, None] * wl[None, :, kk] + acc).astype(np.float32)
        c = c + acc
    return c


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="needs x87 long double to emulate an FMA")
@pytest.mark.parametrize("m,k,n", [(64, 512, 48), (40, 1344, 32), (200, 300, 20)])
def test_a_numpy_model_of_openblas_order_gives_numpys_sgemm_bits(m, k, n):
    """The order the kernel implements, checked against NumPy with no LLVM involved (where NumPy's BLAS is
    OpenBLAS on the SkylakeX core, as here; elsewhere the kernel's own self-test keeps such shapes on NumPy)."""
    if gemm.blocks(k) is None or m * n * k <= gemm.SMALL_MNK:
        pytest.skip("not a shape the kernel takes")
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    if gemm.openblas_core() != "SkylakeX":
        pytest.skip(f"NumPy's BLAS here is not OpenBLAS's SkylakeX sgemm ({gemm.openblas_core() or 'not OpenBLAS'})")
    numpy_bits = np.matmul(x, w.T)
    assert same_bits(_openblas_order(x, w, gemm.blocks(k)), numpy_bits)
    if len(gemm.blocks(k)) > 1:
        assert not same_bits(_openblas_order(x, w, [(0, k)]), numpy_bits)   # the K blocks matter
