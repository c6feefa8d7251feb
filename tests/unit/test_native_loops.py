"""Whole `while` loops as one native function (runtime/native/region.py): NumPy's bits, NumPy's errors.

Each test runs a Program through the native plan and the NumPy plan and compares bits exactly
(`same_bits`), and checks the loop really ran native (`plan.native_regions`), or why it did not.
"""
import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.errors import IterationLimitError
from runtime.native import blas, reductions
from runtime.native.numpy_loops import same_bits
from transpiler import to_static

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built
RNG = np.random.default_rng(5)


def _tensor(*shape, dtype="float32", scale=1.0):
    return rt.tensor((RNG.standard_normal(shape) * scale).astype(dtype))


def _run_both(fn, *args, max_iterations=None):
    """(native plan, native outputs, NumPy outputs) of fn traced on args."""
    program = to_static(fn).get_program(*args)
    feed = {v.name: a for v, a in zip(program.inputs, args)}
    plan = rt.Executor(native=True, max_iterations=max_iterations).compile(program)
    native.wait()
    declined = native.stats()["declined_calls"]
    got = [t.numpy() for t in plan.run(feed)]
    if all(why == "native" for _, why in plan.native_regions):      # and it ran native: no call handed back
        assert native.stats()["declined_calls"] == declined, "a native loop handed its call back to NumPy"
    want = [t.numpy() for t in rt.Executor(native=False, max_iterations=max_iterations).run(program, feed)]
    return plan, got, want


def _loops(plan):
    return [why for name, why in plan.native_regions if name.startswith("while")]


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same_bits(g, w), (g, w)


@needs_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hidden", [1, 7, 128])
def test_the_while_rnn_is_one_native_loop_with_numpys_bits(dtype, hidden):
    u, w, b = _tensor(16, hidden, dtype=dtype), _tensor(hidden, hidden, dtype=dtype, scale=0.3), _tensor(hidden, dtype=dtype)

    def rnn(x):
        h = rt.zeros((1, hidden), dtype=dtype)
        i = 0
        while i < 40 and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h, i

    plan, got, want = _run_both(rnn, _tensor(40, 1, 16, dtype=dtype))
    scalar_product = "matmul of shape (1, 1) @ (1, 1) takes no BLAS call in NumPy"
    assert _loops(plan) == ["native" if hidden > 1 else scalar_product]
    _assert_same(got, want)


@needs_llvm
def test_a_cond_in_the_body_and_the_test_stopping_early():
    w = _tensor(8, 8, scale=0.5)

    def f(x):
        s = x.sum() * 0.0
        i = 0
        while i < 100 and s < 25.0:
            if s > 3.0:
                x = rt.exp(x @ w) * 0.25
            else:
                x = x * 1.5 + 0.125
            s = s + x.sum()
            i += 1
        return x, s, i

    plan, got, want = _run_both(f, _tensor(4, 8))
    assert _loops(plan) == ["native"]
    _assert_same(got, want)
    assert 0 < int(got[2]) < 100


@needs_llvm
def test_swapped_state_and_a_loop_that_never_runs():
    def f(a, b, n):
        i = 0
        while i < n:
            a, b = b, a + b
            i += 1
        return a, b

    a, b = _tensor(5), _tensor(5)
    for n in (0, 1, 2, 7):
        plan, got, want = _run_both(f, a, b, rt.tensor(np.int64(n)))
        assert _loops(plan) == ["native"]
        _assert_same(got, want)
        if n == 0:      # the NumPy plan's values, and fresh arrays: the caller's inputs are never handed back
            assert same_bits(got[0], a.numpy())


@needs_llvm
def test_matrix_products_of_every_blas_path_and_a_matrix_state():
    a, b, v = _tensor(6, 9), _tensor(9, 9, scale=0.3), _tensor(9, 1)

    def f(x, n):
        y = x @ v
        i = 0
        while i < n:
            x = rt.tanh(x @ b) + (a * x) @ b          # gemm, gemm
            y = rt.tanh(x @ v) * 0.5 + y              # gemv (one column)
            i += 1
        return x, y

    plan, got, want = _run_both(f, _tensor(6, 9), rt.tensor(5))
    assert _loops(plan) == ["native"]
    _assert_same(got, want)


@needs_llvm
def test_an_index_out_of_range_raises_numpys_error():
    def f(x, n):
        h = x[0] * 0.0
        i = 0
        while i < n:
            h = h + x[i - 3]
            i += 1
        return h

    x, n = _tensor(10, 3), rt.tensor(14)
    program = to_static(f).get_program(x, n)
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    assert _loops(plan) == ["native"]
    with pytest.raises(IndexError, match="out of bounds"):
        plan.run({program.inputs[0].name: x, program.inputs[1].name: n})
    _, got, want = _run_both(f, x, rt.tensor(12))       # x[-3] .. x[8]: negative indices wrap as in NumPy
    _assert_same(got, want)


@needs_llvm
def test_the_iteration_budget_is_the_numpy_plans():
    def f(x, n):
        i = 0
        while i < n:
            x = x * 0.5 + 1.0
            i += 1
        return x

    x, n = _tensor(3), rt.tensor(30)
    plan, got, want = _run_both(f, x, n, max_iterations=30)
    assert _loops(plan) == ["native"]
    _assert_same(got, want)
    program = to_static(f).get_program(x, n)
    with pytest.raises(IterationLimitError, match="more than 29 iterations"):
        rt.Executor(native=True, max_iterations=29).run(program, {program.inputs[0].name: x,
                                                                  program.inputs[1].name: n})


@needs_llvm
def test_strided_arguments_and_0d_inputs():
    w = rt.tensor(np.asfortranarray(RNG.standard_normal((6, 6)).astype(np.float32) * 0.3))

    def f(x, k):
        i = 0
        while i < k:
            x = rt.tanh(x @ w)
            i += 1
        return x

    plan, got, want = _run_both(f, rt.tensor(RNG.standard_normal((2, 6)).astype(np.float32)[:, :]), rt.tensor(4))
    assert _loops(plan) == ["native"]
    _assert_same(got, want)


@needs_llvm
def test_an_unsupported_op_keeps_the_loop_on_numpy_and_says_why():
    def f(x, n):
        i = 0
        while i < n:
            x = rt.sort(x) + 1.0
            i += 1
        return x

    plan, got, want = _run_both(f, _tensor(5), rt.tensor(3))
    assert _loops(plan) == ["op 'sort' is not native"]
    _assert_same(got, want)


def test_blas_calls_match_numpys_matmul_on_many_shapes():
    for dtype in ("float32", "float64"):
        for m, k, n in [(1, 2, 2), (1, 128, 128), (1, 64, 300), (2, 3, 4), (17, 33, 65), (64, 1, 64), (40, 40, 1)]:
            call = blas.product_call(dtype, m, k, n)
            if k == 1:
                assert "no BLAS call" in call
            elif blas.symbol("sgemv") is not None:
                assert not isinstance(call, str), call


def test_sums_are_numpys_add_loop_in_reduce_form():
    for dtype in ("float32", "float64"):
        for n in (0, 1, 7, 8, 9, 127, 128, 129, 1000, 8193, 100_003):
            found = reductions.reduce_loop("add", dtype, n)
            assert not isinstance(found, str), found
            x = np.concatenate([[-0.0], RNG.standard_normal(n)])[:n].astype(dtype)
            assert same_bits(np.asarray(reductions.call_reduce(found[0], x, found[1])), np.asarray(np.add.reduce(x)))


@needs_llvm
@pytest.mark.parametrize("batch", [1, 3])
def test_greedy_gru_decoding_embedding_linear_split_argmax_where_all(batch):
    from runtime import nn

    rt.seed(3)
    embed, cell, out = nn.Embedding(16, 8), nn.GRUCell(8, 8), nn.Linear(8, 16)

    def decode(h):
        token = rt.full((h.shape[0],), 1, dtype="int64")
        done = rt.zeros((h.shape[0],), dtype="bool")
        steps = 0
        while steps < 30 and not rt.all(done):
            h = cell(embed(token), h)
            token = rt.where(done, 2, rt.argmax(out(h), axis=-1))
            done = done | (token == 2)
            steps += 1
        return h, token, steps

    plan, got, want = _run_both(decode, _tensor(batch, 8))
    assert _loops(plan) == ["native"]
    _assert_same(got, want)


@needs_llvm
def test_max_min_any_argmax_over_the_whole_array_and_broadcasts():
    def f(x, y):
        i = 0
        while rt.max(x) > 0.5 and i < 20:
            k = rt.argmax(x)
            x = rt.where((x > rt.min(y)) | rt.any(y > 3.0), x * 0.75, x - 0.125) + y[k % 4] * 0.0
            y = y * 0.5 + x[:4] * 0.25 + rt.reshape(x[:4], (4, 1))[0]
            i += 1
        return x, y, i

    plan, got, want = _run_both(f, _tensor(12, scale=3.0), _tensor(4))
    assert _loops(plan) == ["native"], plan.native_regions
    _assert_same(got, want)


def test_argmax_semantics_first_largest_first_nan():
    from runtime.native.numpy_loops import probe_values
    for dtype in ("float32", "float64", "int32", "uint8", "bool"):
        x = probe_values(dtype, 40)
        for a in (x, x[::-1], np.sort(x), np.zeros(5, dtype)):
            nan = np.flatnonzero(np.isnan(a)) if a.dtype.kind == "f" else []
            first = nan[0] if len(nan) else int(np.flatnonzero(a == a.max())[0])
            assert np.argmax(a) == first


@needs_llvm
def test_nms_reductions_over_the_last_axis_and_2d_indexing():
    from bench.models import NMS_N, _boxes, rt_nms

    boxes, scores = _boxes()
    plan, got, want = _run_both(rt_nms, rt.tensor(boxes), rt.tensor(scores))
    assert _loops(plan) == ["native"] and NMS_N == len(got[0])
    _assert_same(got, want)

    def rows(x):
        i = 0
        while rt.sum(x) < 1e6 and i < 6:
            x = x + rt.reshape(rt.sum(x, axis=-1) + rt.prod(x[:, :3], axis=1) - rt.max(x, axis=-1)
                               + rt.min(x, axis=1), (5, 1)) * 0.001
            i += 1
        return x

    plan, got, want = _run_both(rows, _tensor(5, 300))
    assert _loops(plan) == ["native"]
    _assert_same(got, want)


# --- every op the region emitter handles, on the registry's conformance samples, inside a loop ------
def _region_cases():
    from runtime.ops.registry import REGISTRY
    from tests.unit.test_ops_conformance import CASES

    for case in CASES:
        name, sample = case.values
        opdef = REGISTRY[name]
        if name not in ("while", "cond") and (opdef.native is not None or opdef.ufunc is not None
                                              or opdef.as_ufunc is not None):
            yield case


def sample_in_a_loop(sample, positions):
    """A function of the sample's array inputs (at `positions`) and a trip count `n`: a `while_loop` whose
    state is the sample's op applied on every iteration (what the conformance tests run native)."""
    def traced(*variables):
        *values, n = variables
        args = list(sample.args)
        for i, v in zip(positions, values):
            args[i] = v
        first = sample.fn(*args, **sample.kwargs)
        if not isinstance(first, rt.Tensor):
            pytest.skip("the sample's result is not one tensor")
        return rt.while_loop(lambda i, out: i < n,
                             lambda i, out: (i + 1, rt.astype(sample.fn(*args, **sample.kwargs), out.dtype)),
                             (rt.zeros((), dtype="int64"), first))[1]
    return traced


@needs_llvm
@pytest.mark.parametrize("name,sample", list(_region_cases()))
def test_conformance_sample_in_a_native_loop(name, sample):
    """The sample's op computes a loop's state on every iteration (the test needs the op, the loop
    runs once): the native loop gives the NumPy plan's bits, or stays on NumPy saying why."""
    positions = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]
    if not positions:
        pytest.skip("no array input")
    specs = [rt.InputSpec(list(sample.args[i].shape), sample.args[i].dtype, name=f"in{k}")
             for k, i in enumerate(positions)] + [rt.InputSpec([], "int64", name="n")]
    feed = {f"in{k}": sample.args[i] for k, i in enumerate(positions)}
    feed["n"] = np.int64(1)

    try:
        program, _, _ = rt.trace(sample_in_a_loop(sample, positions), specs)
    except (TypeError, ValueError) as e:       # the state's shape changes, or the sample needs static values
        pytest.skip(f"not a loop state: {e}")
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    declined = native.stats()["declined_calls"]
    with np.errstate(all="ignore"):
        got = [t.numpy() for t in plan.run(feed)]
    if all(why == "native" for _, why in plan.native_regions):
        assert native.stats()["declined_calls"] == declined, "a native loop handed its call back to NumPy"
    with np.errstate(all="ignore"):
        want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
    _assert_same(got, want)
    assert all(why == "native" or why for _, why in plan.native_regions)


@needs_llvm
def test_beam_search_log_softmax_topk_take_newaxis():
    from bench.models import Beam

    rt.seed(1)
    model = Beam()
    h = rt.tensor((RNG.standard_normal((1, 128)) * 0.5).astype(np.float32))
    plan, got, want = _run_both(model.forward, h)
    assert _loops(plan) == ["native"]
    _assert_same(got, want)


@needs_llvm
def test_softmax_topk_on_ties_nans_and_signed_zeros():
    def f(x, n):
        i = 0
        s = rt.softmax(x, axis=-1)
        values, index = rt.topk(x * 2.0, 5)
        while i < n:
            values, index = rt.topk(x, 5)
            s = rt.softmax(x, axis=-1) + rt.log_softmax(x, axis=1) * 0.5 + rt.take(s, index % 3, axis=0)[0, 0]
            x = x * 0.5
            i += 1
        return s, values, index

    x = np.array([[np.nan, 1.0, 1.0, -0.0, 0.0, 3.0, np.nan, -np.inf],
                  [2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 0.5, np.inf],
                  [0.0, -0.0, 0.0, -0.0, 5.0, 5.0, -1.0, -2.0]], np.float32)
    with np.errstate(all="ignore"):
        plan, got, want = _run_both(f, rt.tensor(x), rt.tensor(2))
    assert _loops(plan) == ["native"], plan.native_regions
    _assert_same(got, want)


@needs_llvm
def test_the_masked_lstm_appends_to_a_tensor_array_natively():
    from runtime import nn

    rt.seed(2)
    lstm = nn.LSTM(6, 5)
    x = _tensor(30, 3, 6)
    lengths = rt.tensor(np.array([30, 12, 21], np.int64))

    def run(x, lengths):
        out, (h, c) = lstm(x, lengths=lengths)
        return out, h[0]

    plan, got, want = _run_both(run, x, lengths)
    assert _loops(plan) == ["native"]
    _assert_same(got, want)


@needs_llvm
def test_a_list_grown_in_a_loop_past_its_buffer_and_a_list_read_in_the_loop():
    def grow(x, n):
        outs = [x]
        i = 0
        while i < n:
            x = rt.tanh(x * 1.5 + 0.25)
            outs.append(x)
            i += 1
        return rt.stack(outs), x

    for n in (0, 3, 40):            # 40 appends: the first buffer (16) fills twice
        plan, got, want = _run_both(grow, _tensor(2, 3), rt.tensor(n))
        assert _loops(plan) == ["native"]
        _assert_same(got, want)

    def reads(x, n):
        outs = [x]
        i = 0
        while i < n:
            x = outs[-1] * 0.5
            outs.append(x)
            i += 1
        return rt.stack(outs)

    plan, got, want = _run_both(reads, _tensor(4), rt.tensor(5))
    assert _loops(plan) == ["native"], plan.native_regions       # outs[-1]: read from the items' buffer
    _assert_same(got, want)


@needs_llvm
def test_loops_differing_only_in_how_an_index_is_read_compile_apart():
    from runtime.nn import functional as F

    table = _tensor(6, 3)

    def looked_up(ids, n):
        out = table[:2] * 0.0
        i = 0
        while i < n:
            out = out + F.embedding(ids, table)
            i += 1
        return out

    def taken(ids, n):
        out = table[:2] * 0.0
        i = 0
        while i < n:
            out = out + rt.take(table, ids, axis=0)
            i += 1
        return out

    ids = rt.tensor(np.array([-1, 2], np.int64))
    program = to_static(looked_up).get_program(ids, rt.tensor(2))
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    with pytest.raises(IndexError):
        plan.run({program.inputs[0].name: ids, program.inputs[1].name: rt.tensor(2)})
    plan, got, want = _run_both(taken, ids, rt.tensor(2))      # the same shapes: a kernel of its own, which wraps
    assert _loops(plan) == ["native"]
    _assert_same(got, want)


@needs_llvm
def test_a_list_appended_to_twice_an_iteration_is_native_too():
    def fn(x, n):
        items = [x]
        i = 0
        while i < n:
            items += [x * 2.0, x + 1.0]
            i += 1
        return rt.stack(items)

    for n in (3, 20):           # 20: 41 items, past the buffer's first capacity
        plan, got, want = _run_both(fn, _tensor(2), rt.tensor(n))
        assert _loops(plan) == ["native"]
        _assert_same(got, want)


@needs_llvm
def test_self_tests_run_in_the_compiler_thread_not_on_the_first_call(monkeypatch):
    import threading
    from runtime.native import compiler

    m, k = 1, int(np.random.default_rng().integers(200, 400))       # a product shape no test checked yet
    w = _tensor(k, 3)

    def f(x, n):
        i = 0
        while i < n:
            x = x * 0.5 + rt.sum(x @ w)
            i += 1
        return x

    monkeypatch.setenv(native.ENV, "1")
    release = threading.Event()
    compiler.submit(lambda: release.wait(30), lambda _: None)      # holds the compiler thread
    try:
        program = to_static(f).get_program(_tensor(m, k), rt.tensor(2))
        plan = rt.Executor(native=True).compile(program)
        assert _loops(plan) == ["compiling"]
        assert ("<f4", m, k, 3, False) not in blas._CHECKED      # the BLAS self-test waits for the compiler
    finally:
        release.set()
    native.wait()
    assert _loops(plan) == ["native"] and ("<f4", m, k, 3, False) in blas._CHECKED


# --- a loop on trial: kept native only where faster than the plan's NumPy loop -----------------------
@needs_llvm
@pytest.mark.parametrize("margin, kept", [(1.0, False), (-1e9, True)])
def test_a_loop_not_faster_than_its_numpy_loop_goes_back_for_good(monkeypatch, margin, kept):
    """MARGIN 1.0 asks the kernel to take no time (it never does): the loop is timed against the plan's
    NumPy loop for tiering.SAMPLES calls, then runs that NumPy loop for good; every call NumPy's bits."""
    from runtime.native import plan as native_plan, tiering

    monkeypatch.setattr(tiering, "MARGIN", margin)
    u, w, b = _tensor(16, 8), _tensor(8, 8, scale=0.3), _tensor(8)

    def rnn(x):
        h = rt.zeros((1, 8))
        i = 0
        while i < 12 and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h, i

    x = _tensor(12, 1, 16)
    plan, got, want = _run_both(rnn, x)
    assert _loops(plan) == ["native"]
    feed = {v.name: a for v, a in zip(to_static(rnn).get_program(x).inputs, [x])}
    for _ in range(3 * tiering.SAMPLES):
        _assert_same([t.numpy() for t in plan.run(feed)], want)
    assert _loops(plan) == (["native"] if kept else [native_plan.SLOWER])


def _reads_first(x, y, n):
    h, g = x, y
    i = 0
    while i < n:
        h = h * 0.5 + x         # the body reads the first argument from outside
        g = g * 0.5
        i += 1
    return h, g


def _reads_second(x, y, n):
    h, g = x, y
    i = 0
    while i < n:
        h = h * 0.5 + y         # the same ops, reading the second argument from outside
        g = g * 0.5
        i += 1
    return h, g


@needs_llvm
def test_two_loops_alike_but_for_what_a_closure_param_stands_for_do_not_share_a_kernel():
    """Both loops' blocks read one value from outside through a closure param; only which argument it
    stands for differs, so a region key without that binding would hand the second loop the first's
    kernel (a silent wrong value the differential test found with the tier forced on)."""
    x, y, n = _tensor(4), _tensor(4), rt.tensor(3)
    for fn in (_reads_first, _reads_second):
        program = to_static(fn).get_program(x, y, n)
        feed = {v.name: a for v, a in zip(program.inputs, (x, y, n))}
        plan = rt.Executor(native=True).compile(program)
        native.wait()
        want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
        for _ in range(4):          # on trial, NumPy and the kernel take turns: the kernel runs by the second call
            _assert_same([t.numpy() for t in plan.run(feed)], want)
        assert _loops(plan) == ["native"]
