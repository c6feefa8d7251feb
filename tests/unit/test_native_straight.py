"""Straight runs of top-level ops with matrix products as one native call (region.analyse_straight).

A batch-1 MLP (reshape, linear, ReLU, linear) is one call of one compiled function whose products are
gemv.py's inline code (or the CBLAS call NumPy makes, where the inline code does not give NumPy's bits
for a shape). The NumPy plan is the oracle throughout: every result must have its bits; the plan must
list the run as one native region; weights written between calls must be read again.
"""
import numpy as np
import pytest

import runtime as rt
from runtime import native, nn
from runtime.errors import IterationLimitError
from runtime.native.numpy_loops import same_bits
from runtime.nn import functional as F
from transpiler import to_static

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built
RNG = np.random.default_rng(27)


def _plans(fn, *args):
    """(native plan, NumPy plan, feed) of fn traced on args, the native plan's regions compiled."""
    program = to_static(fn).get_program(*args)
    feed = {v.name: a for v, a in zip(program.inputs, args)}
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    return plan, rt.Executor(native=False).compile(program), feed


def _same(plan, numpy_plan, feed, calls=40):
    """Run both plans `calls` times (past the native kernel's trial): the same bits every time."""
    for _ in range(calls):
        got, want = [t.numpy() for t in plan.run(feed)], [t.numpy() for t in numpy_plan.run(feed)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert same_bits(g, w), (g, w)


def _straight(plan):
    return [why for name, why in plan.native_regions if name.startswith("straight")]


def _mlp(k, hidden, out, seed=0):
    rt.seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(k, hidden), nn.ReLU(), nn.Linear(hidden, out))


@needs_llvm
@pytest.mark.parametrize("k, hidden, out", [(784, 256, 10), (64, 32, 5), (100, 33, 7), (13, 8, 1), (48, 96, 3),
                                            (3, 17, 2), (300, 2, 4)])
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_an_mlp_is_one_native_call_with_the_numpy_plans_bits(k, hidden, out, batch):
    net = _mlp(k, hidden, out)
    x = rt.tensor((RNG.standard_normal((batch, 1, k)) * 3).astype(np.float32))
    plan, numpy_plan, feed = _plans(net.forward, x)
    assert _straight(plan) == ["native"], plan.native_regions
    assert plan.source.count(".run(") == 1, plan.source      # reshape, both linears and the ReLU: one call
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_a_product_numpy_makes_without_blas_ends_the_run():
    net = _mlp(256, 1, 4)           # Linear(1, 4): k == 1, no BLAS call in NumPy: its line stays NumPy's
    x = rt.tensor(RNG.standard_normal((1, 256)).astype(np.float32))
    plan, numpy_plan, feed = _plans(net.forward, x)
    assert _straight(plan) == ["native"], plan.native_regions
    assert plan.source.count(".run(") == 1 and "xp_matmul(relu" in plan.source.split("else:")[-1], plan.source
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_a_linear_at_batch_one_runs_its_product_inline():
    fc = nn.Linear(784, 12)         # n % 4 == 0: gemv.py models OpenBLAS's sgemv_t for it
    x = rt.tensor(RNG.standard_normal((1, 784)).astype(np.float32))
    native.reset_stats()
    plan, numpy_plan, feed = _plans(fc.forward, x)
    assert _straight(plan) == ["native"], plan.native_regions
    assert native.stats()["inline_gemvs"] >= 1, native.stats()        # gemv.py's code, not a CBLAS call
    _same(plan, numpy_plan, feed)


@needs_llvm
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")       # the NumPy plan's inf * 0
def test_special_values_keep_the_numpy_plans_bits():
    fc1, fc2 = nn.Linear(40, 24), nn.Linear(24, 6)

    def f(x):
        return F.relu(fc2(F.relu(fc1(x)) * 0.5 - 1.0))

    values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38, 1.0], np.float32)
    x = rt.tensor(RNG.choice(values, (1, 40)).astype(np.float32))
    plan, numpy_plan, feed = _plans(f, x)
    assert _straight(plan) == ["native"], plan.native_regions
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_weights_written_between_calls_are_read_again():
    net = _mlp(64, 32, 4, seed=3)
    forward = to_static(net.forward)
    x = rt.tensor(RNG.standard_normal((1, 64)).astype(np.float32))
    numpy_plan = rt.Executor(native=False).compile(forward.get_program(x))

    def want():
        return numpy_plan.run({v.name: a for v, a in zip(numpy_plan.program.inputs,
                                                         [x] + [p for p in net.parameters()])})[0].numpy()

    with rt.no_grad():
        forward(x)
        native.wait()
        for _ in range(20):
            assert same_bits(forward(x).numpy(), want())
        net[1].weight.numpy()[3, :] = 0.25        # written in place: no Tensor API call sees it
        net[3].bias.numpy()[:] = -1.0
        assert same_bits(forward(x).numpy(), want())
    opt = rt.optim.SGD(net.parameters(), lr=0.1)
    loss = (net(x) ** 2).sum()
    loss.backward()
    opt.step()
    with rt.no_grad():
        assert same_bits(forward(x).numpy(), want())


@needs_llvm
def test_a_view_read_after_the_run_stays_the_numpy_plans_own():
    fc = nn.Linear(12, 5)

    def f(x):
        flat = x.reshape([1, 12])
        return flat, fc(flat)

    x = rt.tensor(RNG.standard_normal((3, 4)).astype(np.float32))
    plan, numpy_plan, feed = _plans(f, x)
    assert _straight(plan) == ["native"], plan.native_regions
    assert "reshape(" in plan.source.split(".run(")[0]       # the view is made before the native call
    _same(plan, numpy_plan, feed)
    flat, _ = plan.run(feed)
    assert same_bits(flat.numpy(), x.numpy().reshape(1, 12))


@needs_llvm
def test_several_outputs_and_a_number_after_the_run():
    fc1, fc2 = nn.Linear(16, 8), nn.Linear(8, 3)

    def f(x):
        h = F.relu(fc1(x))
        y = fc2(h)
        return h, y, y.sum()

    x = rt.tensor(RNG.standard_normal((1, 16)).astype(np.float32))
    plan, numpy_plan, feed = _plans(f, x)
    assert _straight(plan) == ["native"], plan.native_regions
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_shapes_without_inline_code_keep_the_cblas_call_and_numpys_bits():
    def f(x, w):
        return rt.matmul(x, w) + 1.0        # (1, k) @ (k, n) of float64: the CBLAS call NumPy makes

    x = rt.tensor(RNG.standard_normal((1, 30)))
    w = rt.tensor(RNG.standard_normal((30, 7)))
    plan, numpy_plan, feed = _plans(f, x, w)
    assert _straight(plan) == ["native"], plan.native_regions
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_arguments_not_as_compiled_are_handed_back_to_numpy():
    fc = nn.Linear(8, 3)
    x = rt.tensor(RNG.standard_normal((1, 8)).astype(np.float32))
    plan, numpy_plan, feed = _plans(fc.forward, x)
    assert _straight(plan) == ["native"], plan.native_regions
    _same(plan, numpy_plan, feed)
    program = plan.program
    arrays = [x.numpy()] + [program.parameters[v.name].numpy() for v in program.inputs[1:]]
    strided = np.zeros((1, 16), np.float32)[:, ::2]
    strided[...] = arrays[0]
    declined = native.stats()["declined_calls"]
    got = plan(strided, *arrays[1:])[0]          # not C-contiguous: NumPy's code runs it
    assert same_bits(got, numpy_plan(arrays[0], *arrays[1:])[0])
    assert native.stats()["declined_calls"] == declined + 1


def _rnn(u, w, b, steps, hidden):
    def rnn(x):
        h = rt.zeros((1, hidden))
        i = 0
        while i < steps and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h
    return rnn


@needs_llvm
@pytest.mark.parametrize("hidden, inputs", [(128, 64), (10, 12), (7, 5)])
def test_a_hoisted_product_and_the_loop_after_it_are_one_call(hidden, inputs):
    u, w, b = (rt.tensor(RNG.standard_normal(s).astype(np.float32) * 0.3) for s in ((inputs, hidden), (hidden, hidden),
                                                                                 (hidden,)))
    x = rt.tensor(RNG.standard_normal((30, 1, inputs)).astype(np.float32))
    plan, numpy_plan, feed = _plans(_rnn(u, w, b, 30, hidden), x)
    assert _straight(plan) == ["native"], plan.native_regions      # x @ u for every step, then the while
    assert plan.source.count(".run(") == 1, plan.source
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_a_loop_under_an_iteration_budget_stays_its_own_region():
    u, w, b = (rt.tensor(RNG.standard_normal(s).astype(np.float32) * 0.3) for s in ((8, 16), (16, 16), (16,)))
    x = rt.tensor(RNG.standard_normal((30, 1, 8)).astype(np.float32))
    program = to_static(_rnn(u, w, b, 30, 16)).get_program(x)
    plan = rt.Executor(native=True, max_iterations=29).compile(program)
    native.wait()
    assert [why for name, why in plan.native_regions if name.startswith("while")] == ["native"], plan.native_regions
    with pytest.raises(IterationLimitError, match="more than 29 iterations"):
        plan.run({program.inputs[0].name: x})


@needs_llvm
def test_a_stacked_product_in_a_loop_body_is_native_with_numpys_bits():
    w = rt.tensor(RNG.standard_normal((6, 10)).astype(np.float32))

    def f(x):
        s = rt.zeros((4, 1, 10))
        i = 0
        while i < 5:
            s = rt.tanh(s + x @ w)       # (4, 1, 6) @ (6, 10): NumPy's matmul, one sgemv per row
            x = x * 0.5
            i += 1
        return s

    x = rt.tensor(RNG.standard_normal((4, 1, 6)).astype(np.float32))
    plan, numpy_plan, feed = _plans(f, x)
    assert plan.native_regions and all(why == "native" for _, why in plan.native_regions), plan.native_regions
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_a_run_holding_a_loop_releases_the_gil_while_it_runs():
    u, w, b = (rt.tensor(RNG.standard_normal(s).astype(np.float32) * 0.3) for s in ((8, 16), (16, 16), (16,)))
    x = rt.tensor(RNG.standard_normal((30, 1, 8)).astype(np.float32))
    plan, _, _ = _plans(_rnn(u, w, b, 30, 16), x)
    (user,) = [v for k, v in plan.fn.__globals__.items() if k.startswith("xp_native_straight")]
    relocated = user.kernel.saved[0]["relocations"] if user.kernel.saved else []
    assert ["capi", "PyEval_SaveThread"] in relocated and ["capi", "PyEval_RestoreThread"] in relocated


@needs_llvm
def test_a_straight_run_is_kept_on_disk_and_loaded_again(tmp_path, monkeypatch):
    from runtime.native import disk_cache, region as regions
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    net = _mlp(96, 40, 10, seed=4)
    x = rt.tensor(RNG.standard_normal((1, 96)).astype(np.float32))
    program = to_static(net.forward).get_program(x)
    ops = program.global_block.ops
    found = regions.analyse_straight(ops, [program.outputs[0]])
    kernel = regions.region_job(found)()
    assert not isinstance(kernel, str) and kernel.saved is not None, kernel
    monkeypatch.setattr(regions, "_KERNELS", {})
    again = regions.analyse_straight(ops, [program.outputs[0]])
    loaded = regions.region_job(again).cached()
    assert loaded is not None and loaded.from_disk and loaded is not kernel
    arrays = [x.numpy()] + [program.parameters[v.name].numpy() for v in program.inputs[1:]]
    want = rt.Executor(native=False).compile(program)(*arrays)[0]
    assert same_bits(loaded.fast(*arrays), want) and same_bits(kernel.fast(*arrays), want)
    assert loaded.fast(arrays[0][:, :48], *arrays[1:]) is None        # not the compiled shape: declined


@needs_llvm
def test_a_long_chain_ends_the_run():
    fc = nn.Linear(16, 8)

    def f(x):
        h = fc(x)
        for _ in range(40):
            h = h * 1.001 + 0.5         # one fused chain of 80 steps after the linear
        return h

    x = rt.tensor(RNG.standard_normal((1, 16)).astype(np.float32))
    plan, numpy_plan, feed = _plans(f, x)
    straight = [name for name, why in plan.native_regions if name.startswith("straight")]
    assert len(straight) == 1 and _straight(plan) == ["native"], plan.native_regions
    assert len(plan.native_regions) > 1, plan.native_regions        # the chain is a region of its own
    _same(plan, numpy_plan, feed)


@needs_llvm
def test_a_number_read_by_the_run_is_passed_as_an_array():
    fc = nn.Linear(16, 8)

    def f(x, s):
        return fc(x) * s + 1.0          # s: a 0-d input, a NumPy scalar in the plan

    x = rt.tensor(RNG.standard_normal((1, 16)).astype(np.float32))
    s = rt.tensor(np.float32(0.5))
    plan, numpy_plan, feed = _plans(f, x, s)
    assert _straight(plan) == ["native"], plan.native_regions
    declined = native.stats()["declined_calls"]
    _same(plan, numpy_plan, feed)
    assert native.stats()["declined_calls"] == declined


@needs_llvm
def test_a_run_nothing_reads_after_stays_numpy_code_without_passes():
    """Without passes nothing removes a product whose value is never read: such a run has no outputs, so
    it is no native call (it had made a plan line `= native_result` that did not compile)."""
    w = rt.tensor(RNG.standard_normal((8, 4)).astype(np.float32))

    def fn(x):
        unused = rt.maximum(x @ w, 0.0)     # noqa: F841 - dead, kept by passes=[]
        return x

    x = RNG.standard_normal((1, 8)).astype(np.float32)
    program, _, _ = rt.trace(fn, [rt.InputSpec([1, 8], "float32", "x")])
    plan = rt.Executor(native=True, passes=[]).compile(program)
    native.wait()
    assert not any(why == "native" for why in _straight(plan)), plan.native_regions
    got = plan.run({"x": x})[0].numpy()
    assert same_bits(got, rt.Executor(native=False, passes=[]).run(program, {"x": x})[0].numpy())
