"""The real models of bench/ (R5 k-means, R6 a Transformer encoder layer) and the forms they need native.

R5's `while` needs argmin, a bool -> float cast, `onehot.T @ x` (NumPy's gemm reading the transposed view)
and a sum over the first axis; each is checked here against the NumPy plan bit for bit, over shapes with
tails, ties, signed zeros and NaNs, then the whole loop.
"""
import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native.numpy_loops import probe_values, same_bits
from tests.unit.test_native_straight import _plans
from transpiler import to_static

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built
RNG = np.random.default_rng(27)


def _run_both(fn, *args):
    """(native plan, native outputs, NumPy outputs) of fn traced on args; the native plan run past its trial."""
    plan, numpy_plan, feed = _plans(fn, *args)
    declined = native.stats()["declined_calls"]
    with np.errstate(all="ignore"):
        got = [t.numpy() for t in plan.run(feed)]
        want = [t.numpy() for t in numpy_plan.run(feed)]
    if all(why == "native" for _, why in plan.native_regions):
        assert native.stats()["declined_calls"] == declined, "a native region handed its call back to NumPy"
    return plan, got, want


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same_bits(g, w), (g, w)


def _regions(plan, prefix):
    return [why for name, why in plan.native_regions if name.startswith(prefix)]


def _all_native(plan):
    """Whether the plan has regions (a while, or a straight run holding it) and all are native."""
    return bool(plan.native_regions) and all(why == "native" for _, why in plan.native_regions)


def _loop(step, init, n=2):
    """A `while` on a tensor counter whose state takes step(state) n times (what runs native)."""
    return rt.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, step(s)), (rt.zeros((), dtype="int64"), init))[1]


@needs_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("which", ["argmin", "argmax"])
def test_argmin_and_argmax_in_a_loop_first_index_first_nan_signed_zeros(dtype, which):
    pick = getattr(rt, which)
    values = probe_values(dtype, 40)
    cases = [values.reshape(5, 8), values[::-1].reshape(4, 10).copy(), np.sort(values).reshape(8, 5),
             np.zeros((3, 7), dtype)]
    if np.dtype(dtype).kind == "f":
        cases.append(np.array([[0.0, -0.0, 0.0], [-0.0, 0.0, -0.0], [np.nan, 1.0, np.nan], [1.0, 1.0, -1.0]], dtype))
    for a in cases:
        for axis in (None, -1, 1):
            def f(x, axis=axis):
                return _loop(lambda k: pick(x, axis=axis) + k * 0, pick(x, axis=axis))
            plan, got, want = _run_both(f, rt.tensor(a))
            assert _all_native(plan)
            _assert_same(got, want)
            assert np.array_equal(want[0], getattr(np, which)(a, axis=axis))


@needs_llvm
@pytest.mark.parametrize("src, dst", [("bool", "float32"), ("bool", "float64"), ("int32", "float64"),
                                      ("int64", "float32"), ("float32", "float64"), ("uint8", "int32"),
                                      ("float32", "float32")])
def test_astype_in_a_loop_is_numpys_cast(src, dst):
    a = probe_values(src, 24).reshape(4, 6)
    if src == "int64":
        a = np.array([0, 1, -1, 2 ** 24 + 1, 2 ** 62 + 3, -(2 ** 53) - 1] * 4, "int64").reshape(4, 6)

    def f(x):
        return _loop(lambda y: rt.astype(x, dst) + y * 0, rt.astype(x, dst) * 0)
    plan, got, want = _run_both(f, rt.tensor(a))
    assert _all_native(plan)
    _assert_same(got, want)


@needs_llvm
@pytest.mark.parametrize("k, m, n", [(5000, 8, 2), (37, 5, 3), (2, 2, 2), (129, 17, 33)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_transposed_product_is_numpys_gemm_on_the_view(k, m, n, dtype):
    a = (RNG.standard_normal((k, m)) * 3).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    def f(x, y):
        return _loop(lambda out: rt.permute_dims(x + out.sum() * 0, (1, 0)) @ y + out * 0.5, x.T @ y, n=3)
    plan, got, want = _run_both(f, rt.tensor(a), rt.tensor(b))
    assert _all_native(plan)
    _assert_same(got, want)


@needs_llvm
def test_a_transpose_read_otherwise_or_a_syrk_stays_on_numpy():
    def read_otherwise(x):
        def step(out):
            t = (x + out.sum() * 0).T
            return t @ x[:, :3] + t[:, :3] * 0
        return _loop(step, x.T @ x[:, :3])

    def gram(x):
        def step(out):
            y = x + out.sum() * 0
            return y.T @ y + out
        return _loop(step, x.T @ x)

    for fn, why in ((read_otherwise, "a transpose read other than as a product's first operand"),
                    (gram, "a transpose read other than as a product's first operand")):
        plan, got, want = _run_both(fn, rt.tensor(RNG.standard_normal((9, 4)).astype("float32")))
        assert any(why in reason for _, reason in plan.native_regions), plan.native_regions
        _assert_same(got, want)


@needs_llvm
@pytest.mark.parametrize("reduce", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("shape", [(5000, 8), (1, 5), (7, 3), (100, 33)])
def test_a_reduction_over_the_first_axis_is_numpys_order(reduce, shape):
    a = (RNG.standard_normal(shape) * RNG.integers(1, 1000, shape)).astype("float32")
    if shape[0] > 2:
        a[1, 0], a[2, -1], a[0, 1] = np.nan, -0.0, -0.0
    fn = getattr(rt, reduce)

    def f(x):
        return _loop(lambda s: fn(x, axis=0) + s * 0, fn(x, axis=0))
    plan, got, want = _run_both(f, rt.tensor(a))
    assert _all_native(plan)
    _assert_same(got, want)
    with np.errstate(all="ignore"):
        direct = getattr(np, reduce)(a, axis=0)
    if not np.isinf(direct).any():      # (the loop's `s * 0` makes an inf NaN)
        _assert_same(got, [direct])


@needs_llvm
def test_the_kmeans_loop_runs_native_with_numpys_bits():
    from bench.workloads import kmeans_data, numpy_kmeans, rt_kmeans

    x, c = kmeans_data()
    plan, got, want = _run_both(rt_kmeans, rt.tensor(x), rt.tensor(c))
    assert _all_native(plan)
    _assert_same(got, want)
    _assert_same(got, [numpy_kmeans(x, c)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_ported_pairwise_sum_is_numpys_add_reduce_over_rows(dtype):
    from runtime.native import reductions

    for n in list(range(1, 40)) + [63, 64, 65, 100, 127, 128]:
        for rows in (1, 3, 1000):
            assert reductions._pairwise_test(np.dtype(dtype), n, rows) == "", (n, rows)
    assert reductions.pairwise_check(dtype, 129, 4)          # longer rows: NumPy's loop is called per row


@needs_llvm
@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 16, 31, 32, 33, 64, 127, 128, 129, 300])
def test_row_sums_inline_and_a_broadcast_chain_summed_without_its_temporary(n):
    a = (RNG.standard_normal((6, 1, n)) * 10.0 ** RNG.integers(-3, 5, (6, 1, n))).astype("float32")
    c = RNG.standard_normal((1, 4, n)).astype("float32")
    a[0, 0, 0], a[1, 0, -1], c[0, 1, 0] = np.nan, -0.0, -0.0

    def distances(x, y):     # (x - y) ** 2 summed over the last axis: the chain is computed row by row
        return _loop(lambda d: ((x - y - d[:, :, None] * 0) ** 2).sum(-1), ((x - y) ** 2).sum(-1))

    def read_twice(x, y):    # the chain's value is also read otherwise: stored, then summed
        def step(d):
            t = (x - y - d[:, :, None] * 0) ** 2
            return t.sum(-1) + t[:, :, 0]
        return _loop(step, ((x - y) ** 2).sum(-1))

    def plain(x):
        return _loop(lambda s: rt.sum(x * 1.5 + s[:, None] * 0, axis=-1), rt.sum(x, axis=-1))

    for fn, args in ((distances, (a, c)), (read_twice, (a, c)), (plain, (a[:, 0, :],))):
        plan, got, want = _run_both(fn, *(rt.tensor(v) for v in args))
        assert _all_native(plan), plan.native_regions
        _assert_same(got, want)


@needs_llvm
@pytest.mark.parametrize("n", [2, 32, 128])
def test_the_summed_chain_never_makes_its_temporary(monkeypatch, n):
    from runtime.native import region

    monkeypatch.setattr(region, "_KERNELS", {})
    x, y = rt.tensor(RNG.standard_normal((500, 1, n)).astype("float32")), rt.tensor(
        RNG.standard_normal((1, 8, n)).astype("float32"))

    def distances(x, y):
        return _loop(lambda d: ((x - y - d[:, :, None] * 0) ** 2).sum(-1), ((x - y) ** 2).sum(-1))
    plan, got, want = _run_both(distances, x, y)
    _assert_same(got, want)
    kernels = [k for k in region._KERNELS.values() if not isinstance(k, str)]
    # the state and the sum's result, (500, 8) each: no (500, 8, n) buffer for the chain
    assert len(kernels) == 1 and kernels[0].scratch_bytes <= 2 * 500 * 8 * 4 + 2 * 64, kernels[0].scratch_bytes


# --- R6: layer_norm, softmax and stacked linears as straight runs --------------------------------------
@pytest.fixture
def kernels_kept(monkeypatch):
    """A swapped-in kernel's trial always keeps it (the tests check what runs, never how fast)."""
    from runtime.native import tiering
    monkeypatch.setattr(tiering, "MARGIN", -1e9)


def _plans_agree(fn, *args, calls=40):
    """Both plans of fn over `calls` calls (past the native kernel's trial): the same bits every time, and
    every straight run's calls native once its trial settled (none handed back to NumPy)."""
    program = to_static(fn).get_program(*args)
    feed = {v.name: a for v, a in zip(program.inputs, args)}
    plan, numpy_plan = rt.Executor(native=True).compile(program), rt.Executor(native=False).compile(program)
    native.wait()
    declined = native.stats()["declined_calls"]
    for _ in range(calls):
        with np.errstate(all="ignore"):
            _assert_same([t.numpy() for t in plan.run(feed)], [t.numpy() for t in numpy_plan.run(feed)])
    assert native.stats()["declined_calls"] == declined, "a native region handed its call back to NumPy"
    for name, user in plan.fn.__globals__.items():      # each straight run's trial settled: its calls ran native
        if name.startswith("xp_native_straight") and user.kernel is not None:
            assert user.run is user.entry, f"{name} never ran native"
    return plan


@needs_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 5, 8, 13, 64, 128])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_is_its_kernels_bits_in_a_straight_run_and_a_loop(kernels_kept, dtype, n, affine):
    from runtime.nn import functional as F

    x = (RNG.standard_normal((3, 7, n)) * 10.0 ** RNG.integers(-3, 4, (3, 7, n))).astype(dtype)
    x[0, 0, 0], x[1, 2, :] = -0.0, 5.0         # a constant row: variance 0
    w = rt.tensor(RNG.standard_normal(n).astype(dtype)) if affine else None
    b = rt.tensor(RNG.standard_normal(n).astype(dtype)) if affine else None

    def straight(x):
        return F.layer_norm(F.softmax(x * 0.5, axis=-1) + x, (n,), w, b, eps=1e-5)

    plan = _plans_agree(straight, rt.tensor(x))
    assert _regions(plan, "straight") == ["native"], plan.native_regions

    def looped(x):
        return _loop(lambda s: F.layer_norm(s * 1.25 + x, (n,), w, b, eps=1e-3), x)
    plan, got, want = _run_both(looped, rt.tensor(x))
    assert _all_native(plan), plan.native_regions
    _assert_same(got, want)


@needs_llvm
def test_stacked_linears_and_a_strided_argument_in_one_straight_run(kernels_kept):
    from runtime.nn import functional as F

    rt.seed(0)
    w1, b1 = rt.tensor(RNG.standard_normal((24, 16)).astype("float32")), rt.tensor(RNG.standard_normal(24).astype("float32"))
    w2 = rt.tensor(RNG.standard_normal((16, 24)).astype("float32"))

    def f(x):
        y = rt.permute_dims(x, (1, 0, 2))          # a strided view the run reads through a reshape
        h = F.relu(F.linear(rt.reshape(y, (5, 6, 16)), w1, b1))
        return F.layer_norm(F.linear(h, w2) + rt.reshape(y, (5, 6, 16)), (16,))

    plan = _plans_agree(f, rt.tensor(RNG.standard_normal((6, 5, 16)).astype("float32")))
    assert _regions(plan, "straight") == ["native"], plan.native_regions


@needs_llvm
def test_the_encoder_layer_runs_native_with_the_numpy_plans_bits(kernels_kept):
    from bench.models import ENC_D, ENC_FF, ENC_HEADS, ENC_L, ENC_N, _rng

    rt.seed(3)
    layer = rt.nn.TransformerEncoderLayer(ENC_D, ENC_HEADS, dim_feedforward=ENC_FF, dropout=0.0)
    layer.eval()
    x = rt.tensor(_rng().standard_normal((ENC_L, ENC_N, ENC_D)).astype(np.float32))
    plan = _plans_agree(layer.forward, x)
    # the QKV products (NumPy's 32 calls each: one call of their 256 rows has other bits), the attention's
    # softmax, and the rest of the layer from its output projection on: one call each
    assert _regions(plan, "straight") == ["native"] * 3 and _all_native(plan), plan.native_regions


@needs_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_inline_on_nans_infinities_and_signed_zeros(kernels_kept, dtype, log):
    from runtime.nn import functional as F

    x = probe_values(dtype, 9 * 33).reshape(9, 33).copy()
    x[0] = 0.0
    x[1, ::2] = -0.0
    x[2] = -np.inf
    x[3, 5] = np.inf
    x[4, 7] = np.nan
    x[5] = RNG.standard_normal(33) * 50

    def f(x):
        return (F.log_softmax if log else F.softmax)(x * 1.0, axis=-1)

    plan = _plans_agree(f, rt.tensor(x))
    assert _regions(plan, "straight") == ["native"], plan.native_regions


@needs_llvm
def test_ops_a_region_would_refuse_end_a_straight_run_instead_of_refusing_it(kernels_kept):
    from runtime.nn import functional as F

    w = rt.tensor(RNG.standard_normal((300, 16)).astype("float32"))

    def f(x):
        h = F.relu(F.linear(x, w))                  # batch 1: the run's product
        n = F.layer_norm(h, (300,))                 # rows longer than the inline sums: NumPy's
        t = rt.permute_dims(h, (1, 0))              # read other than by a product: NumPy's view
        return rt.astype(n * 4.0, "int32"), t + 0.0, rt.sum(h, axis=0, keepdims=False)

    plan = _plans_agree(f, rt.tensor(RNG.standard_normal((1, 16)).astype("float32")))
    assert _regions(plan, "straight")[:1] == ["native"], plan.native_regions
