"""The native tier (runtime/native/): opt-in, NumPy's bits on every sample, NumPy's plan where it declines.

Bits are compared exactly (`same_bits`: dtype, shape, NaN positions, signed zeros), never with a
tolerance: the native tier must give what the NumPy plan gives. Without llvmlite these tests skip,
except the one that runs with llvmlite hidden and checks the fallback.
"""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import elementwise, fast_math
from runtime.native.numpy_loops import same_bits, strided_loop, probe_values
from runtime.ops.fused import ufunc_op
from runtime.ops.registry import REGISTRY
from transpiler import to_static
from tests.conversion.corpus import CASES as CORPUS
from tests.conversion.oracle import inputs as corpus_inputs
from tests.conversion.test_differential import HEADER, _Gen, _state
from tests.unit.test_ops_conformance import CASES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")


pytestmark = pytest.mark.usefixtures("compile_at_once")    # new chains compile at once (tiering: test_native_tiering.py)


def _gelu(x):
    return 0.5 * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x ** 3)))


def _both(program, feed):
    """(native plan, its outputs, NumPy plan's outputs) for one Program and feed."""
    plan = rt.Executor(native=True).compile(program)
    native.wait()                           # new chains compile in the background: run them native
    with np.errstate(all="ignore"):         # special values on purpose; the native tier does not warn
        got = [t.numpy() for t in plan.run(feed)]
        want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
    return plan, got, want


# --- the setting -------------------------------------------------------------------------------------
def test_setting_is_on_by_default_where_llvmlite_is_and_checked(monkeypatch):
    monkeypatch.delenv(native.ENV, raising=False)
    assert rt.Executor().native is native.available()         # the default: on wherever llvmlite imports
    assert rt.Executor(native=False).native is False
    for on in ("1", "sync"):
        monkeypatch.setenv(native.ENV, on)
        assert rt.Executor().native is True
        assert rt.Executor(native=False).native is False
    monkeypatch.setenv(native.ENV, "0")
    assert rt.Executor().native is False
    assert rt.Executor(native=True).native is True
    with pytest.raises(ValueError, match="native must be True, False or None"):
        rt.Executor(native="yes")
    monkeypatch.setenv(native.ENV, "yes")
    with pytest.raises(ValueError, match="DY2STATIC_NATIVE must be 0 .off., 1 .*'yes'"):
        rt.Executor()


@needs_llvm
def test_native_and_numpy_plans_are_cached_apart():
    program, _, _ = rt.trace(_gelu, [rt.InputSpec([8], "float32", name="x")])
    a, b = rt.Executor(native=True).compile(program), rt.Executor(native=False).compile(program)
    native.wait()
    assert a is not b and a is rt.Executor(native=True).compile(program)
    assert hasattr(a, "native_regions") and not hasattr(b, "native_regions")


# --- whole functions ---------------------------------------------------------------------------------
@needs_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 63, 512, 1000, 200_003])
def test_gelu_is_one_native_region_with_numpy_bits(dtype, n):
    x = probe_values(dtype, n)
    program, _, _ = rt.trace(_gelu, [rt.InputSpec([n], dtype, name="x")])
    native.reset_stats()
    plan, got, want = _both(program, {"x": x})
    assert plan.native_regions and all(why == "native" for _, why in plan.native_regions), plan.native_regions
    assert "native_chain" in plan.source
    assert native.stats()["native"] >= 1
    assert same_bits(got[0], want[0])


@needs_llvm
def test_inline_steps_between_numpy_loops_run_as_one_loop_and_keep_only_what_is_read_later():
    """W5's exact GELU: steps 0-5 inline, tanh NumPy's loop, steps 7-8 inline. Each run of inline steps is
    one loop over the block; only step 0 (read by step 8), step 5 (tanh's operand) and tanh's result get
    block buffers (and the input's gather buffer): it was one buffer and one loop a step. Same bits."""
    f32 = np.dtype(np.float32)
    steps = [["multiply", 0.5, {"in": 0}], ["square", {"in": 0}], ["multiply", {"step": 1}, {"in": 0}],
             ["multiply", 0.044715, {"step": 2}], ["add", {"in": 0}, {"step": 3}],
             ["multiply", 0.79788456, {"step": 4}], ["tanh", {"step": 5}], ["add", 1, {"step": 6}],
             ["multiply", {"step": 0}, {"step": 7}]]
    chain = ([(f32, (-1,))], (f32, (-1,)), steps)
    ir_text = elementwise.optimized_ir(*chain)
    assert len(re.findall(r"alloca \[%d x float\]" % elementwise.BLOCK, ir_text)) == 4
    if fast_math._division_flags():      # AVX-512: the runs around NumPy's loop take 16 floats a vector
        assert "<16 x float>" in ir_text
    # a value read by a step after a NumPy loop, and one read by an inline step of the same run only,
    # in float32 and float64 (casts inside a run), over blocks and a ragged end
    kernel = elementwise.compile_chain(*chain)
    mixed = [["multiply", {"in": 0}, {"in": 1}], ["exp", {"step": 0}], ["add", {"step": 1}, {"in": 1}],
             ["subtract", {"step": 2}, {"step": 0}], ["sin", {"step": 3}], ["multiply", {"step": 4}, {"step": 2}],
             ["add", {"step": 5}, {"step": 0}]]
    f64 = np.dtype(np.float64)
    mixed_kernel = elementwise.compile_chain([(f32, (-1,)), (f64, (1,))], (f64, (-1,)), mixed)
    assert not isinstance(kernel, str) and not isinstance(mixed_kernel, str), (kernel, mixed_kernel)
    x = np.concatenate([probe_values(f32, 1000), np.linspace(-12, 12, 2 * elementwise.BLOCK + 91, dtype=f32)])
    scale = np.array([0.75])
    with np.errstate(all="ignore"):
        for k, st, arrays in ((kernel, steps, [x]), (mixed_kernel, mixed, [x, scale])):
            want = elementwise.reference(st, arrays)
            got = np.empty_like(want)
            assert k.cfunc(got, *arrays) == 0
            assert same_bits(got, want)


@needs_llvm
def test_dynamic_batch_broadcast_and_strided_inputs():
    def f(x, b, s):
        return rt.tanh(x * 0.5 + b) * s - x / 3.0

    specs = [rt.InputSpec([None, 7], "float32", name="x"), rt.InputSpec([7], "float32", name="b"),
             rt.InputSpec([None, 1], "float64", name="s")]
    program, _, _ = rt.trace(f, specs)
    rng = np.random.default_rng(0)
    for rows in (1, 5, 300):
        x = np.asfortranarray(rng.standard_normal((rows, 7)).astype(np.float32))     # not C-contiguous
        b = rng.standard_normal(14).astype(np.float32)[::2]                          # strided
        s = rng.standard_normal((rows, 1))
        plan, got, want = _both(program, {"x": x, "b": b, "s": s})
        assert [why for _, why in plan.native_regions] == ["native"]
        assert same_bits(got[0], want[0])


@needs_llvm
def test_a_0d_value_computed_as_a_numpy_scalar_runs_native():
    def f(x, s):
        t = s * 0.5 + 1.0                   # 0-d: the plan computes it as NumPy scalars
        return rt.tanh(x * t + 1.0) * 2.0

    program, _, _ = rt.trace(f, [rt.InputSpec([4], "float32", name="x"), rt.InputSpec([], "float32", name="s")])
    native.reset_stats()
    plan, got, want = _both(program, {"x": np.arange(4, dtype=np.float32), "s": np.float32(3.0)})
    assert [why for _, why in plan.native_regions] == ["native"]
    assert same_bits(got[0], want[0])
    assert native.stats()["declined_calls"] == 0


@needs_llvm
def test_a_shape_mismatch_raises_numpys_error_from_the_native_plan():
    def f(x, y):
        return rt.exp(x + y) * 2.0

    specs = [rt.InputSpec([None], "float32", name="x"), rt.InputSpec([None], "float32", name="y")]
    program, _, _ = rt.trace(f, specs)
    feed = {"x": np.ones(3, np.float32), "y": np.ones(4, np.float32)}
    rt.Executor(native=True).compile(program)
    native.wait()
    with pytest.raises(ValueError) as native_error:
        rt.Executor(native=True).run(program, feed)
    with pytest.raises(ValueError) as numpy_error:
        rt.Executor(native=False).run(program, feed)
    assert str(native_error.value) == str(numpy_error.value)
    assert "while running op" in str(native_error.value)


@needs_llvm
def test_the_while_rnn_runs_its_body_chain_native():
    u = rt.tensor(np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))
    b = rt.tensor(np.random.default_rng(2).standard_normal(8).astype(np.float32))

    def rnn(x):
        h = rt.zeros((1, 8))
        i = 0
        while i < 6 and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h * 0.5 + b)
            i += 1
        return h

    x = rt.tensor(np.random.default_rng(3).standard_normal((6, 1, 4)).astype(np.float32))
    static = to_static(rnn)
    program = static.get_program(x)
    feed = {program.inputs[0].name: x}
    plan, got, want = _both(program, feed)
    assert "native" in [why for _, why in plan.native_regions]
    assert same_bits(got[0], want[0])


# --- compiling in the background ---------------------------------------------------------------------
def _unique_chain_program():
    """A Program whose chain no earlier test compiled (its number is new), so it is not cached."""
    k = float(np.random.default_rng().integers(1 << 30)) + 0.5

    def f(x):
        return rt.tanh(x * k + 1.0) * 0.5

    return rt.trace(f, [rt.InputSpec([300], "float32", name="x")])[0]


@needs_llvm
def test_a_new_chain_runs_on_numpy_until_the_background_compile_swaps_it_in(monkeypatch):
    import threading
    from runtime.native import compiler

    monkeypatch.setenv(native.ENV, "1")
    release = threading.Event()
    compiler.submit(lambda: release.wait(30), lambda _: None)      # holds the compiler thread
    try:
        program = _unique_chain_program()
        plan = rt.Executor(native=True).compile(program)           # returns at once: nothing compiled yet
        assert [why for _, why in plan.native_regions] == ["compiling"]
        assert native.stats()["compiling"] >= 1
        x = probe_values("float32", 300)
        with np.errstate(all="ignore"):
            before = plan.run({"x": x})[0].numpy()                 # the NumPy chain meanwhile
            want = rt.Executor(native=False).run(program, {"x": x})[0].numpy()
        assert same_bits(before, want)
    finally:
        release.set()
    native.wait()
    assert [why for _, why in plan.native_regions] == ["native"]
    with np.errstate(all="ignore"):
        assert same_bits(plan.run({"x": x})[0].numpy(), want)


@needs_llvm
def test_sync_compiles_before_the_first_call(monkeypatch):
    monkeypatch.setenv(native.ENV, "sync")
    plan = rt.Executor().compile(_unique_chain_program())
    assert [why for _, why in plan.native_regions] == ["native"]


# --- every op the emitter handles, on the registry's conformance samples -----------------------------
def _chain_cases():
    for case in CASES:
        name, sample = case.values
        opdef = REGISTRY[name]
        if name == "fused_elementwise" or opdef.ufunc is not None or opdef.as_ufunc is not None:
            yield case


def _twice_undone(y):
    """Two more steps that give y's bits back (so the op is one step of a chain of three)."""
    if y.dtype == np.bool_:
        return rt.logical_not(rt.logical_not(y))
    return rt.negative(rt.negative(y))


@needs_llvm
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name,sample", list(_chain_cases()))
def test_conformance_sample_through_both_tiers(name, sample, dynamic):
    positions = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]
    if not positions:
        pytest.skip("no array input")
    specs, feed = [], {}
    for k, i in enumerate(positions):
        shape = list(sample.args[i].shape)
        if dynamic and shape:
            shape[0] = None
        specs.append(rt.InputSpec(shape, sample.args[i].dtype, name=f"in{k}"))
        feed[f"in{k}"] = sample.args[i]

    def traced(*variables):
        args = list(sample.args)
        for i, v in zip(positions, variables):
            args[i] = v
        return _twice_undone(sample.fn(*args, **sample.kwargs))

    program, _, _ = rt.trace(traced, specs)
    plan, got, want = _both(program, feed)
    assert same_bits(got[0], want[0]), f"{name}: native {got[0]!r} != NumPy plan {want[0]!r}"
    kinds = {np.dtype(v.dtype).kind for op in program.ops() for v in list(op.inputs) + list(op.outputs)
             if hasattr(v, "dtype")}
    if "c" not in kinds and np.dtype(want[0].dtype).itemsize > 2 and want[0].ndim:
        regions = [why for _, why in plan.native_regions]
        assert "native" in regions or all("no usable NumPy loop" in why for why in regions), regions


_UFUNC_STEPS = sorted({op.ufunc for op in REGISTRY.values() if op.ufunc is not None and ufunc_op(op.ufunc)})


@needs_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("ufunc", _UFUNC_STEPS)
def test_every_step_ufunc_on_special_values(ufunc, dtype):
    """Each ufunc a fused step may call, on zeros of both signs, infinities, NaN, subnormals and
    extremes, compiled native (or declined with a reason) and equal to NumPy's bits."""
    nin = getattr(np, ufunc).nin
    args = [{"in": k} for k in range(nin)]
    try:
        with np.errstate(all="ignore"):
            result = getattr(np, ufunc)(*[probe_values(dtype, 4) for _ in range(nin)])
    except (TypeError, ValueError) as e:
        pytest.skip(f"NumPy's {ufunc} does not take these {dtype} values: {e}")
    undo = "logical_not" if result.dtype == np.bool_ else "negative"
    steps = [[ufunc, *args], [undo, {"step": 0}], [undo, {"step": 1}]]
    shape = (elementwise.BLOCK + 100,)
    kernel = elementwise.compile_chain([(np.dtype(dtype), shape)] * nin, (result.dtype, shape), steps)
    if isinstance(kernel, str):
        assert "no usable NumPy loop" in kernel or "not supported natively" in kernel, kernel
        pytest.skip(kernel)
    arrays = [np.roll(probe_values(dtype, shape[0]), 5 * k) for k in range(nin)]
    with np.errstate(all="ignore"):
        want = elementwise.reference(steps, arrays)
        got = np.empty(shape, result.dtype)
        assert kernel.cfunc(got, *arrays) == 0
    assert same_bits(got, want)


@needs_llvm
def test_numpy_loops_are_numpys_own():
    loop = strided_loop(np.tanh, ("float32", "float32"))
    x = probe_values("float32", 1000)
    out = np.empty_like(x)
    assert loop(x, out) == 0 and same_bits(out, np.tanh(x))
    assert strided_loop(np.add, ("float32", "float64", "float64")) is None      # not a loop NumPy has


# --- without llvmlite ---------------------------------------------------------------------------------
@pytest.mark.parametrize("setting", ["1", None])
def test_without_llvmlite_the_native_setting_runs_the_numpy_plan(tmp_path, setting):
    """llvmlite made unimportable: asked for (1) the tier runs the NumPy plan and says why; by default
    (unset) the Executor is simply off. The same bits either way, never an error."""
    script = textwrap.dedent("""
        import sys
        sys.modules["llvmlite"] = None          # `import llvmlite...` raises ImportError, as when absent
        import numpy as np
        import runtime as rt
        from runtime import native
        from transpiler import to_static

        def gelu(x):
            return 0.5 * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x ** 3)))

        x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
        out = to_static(gelu)(rt.tensor(x)).numpy()
        plain = rt.Executor(native=False)
        program, _, _ = rt.trace(gelu, [rt.InputSpec([1000], "float32", name="x")])
        want = plain.run(program, {"x": x})[0].numpy()
        assert np.array_equal(out, want), "results differ"
        assert not native.available() and "llvmlite is not installed" in native.why_unavailable()
        stats = native.stats()
        if sys.argv[1:] == ["1"]:
            assert rt.Executor().native is True
            assert stats["native"] == 0 and stats["reasons"] == {"llvmlite unavailable": 1}, stats
        else:
            assert rt.Executor().native is False
            assert stats["native"] == 0 and stats["reasons"] == {}, stats
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("DY2STATIC_NATIVE", None)
    if setting is not None:
        env["DY2STATIC_NATIVE"] = setting
    path = tmp_path / "no_llvmlite.py"          # a file: to_static reads the function's source
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)] + ([setting] if setting else []), env=env,
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# --- the conversion corpus and generated programs, both tiers, bit for bit ----------------------------
def _outputs(program, arrays, native_on):
    names = [v.name for v in program.inputs if not v.persistable]
    plan = rt.Executor(native=native_on).compile(program)
    native.wait()
    with np.errstate(all="ignore"):
        outs = plan.run(dict(zip(names, arrays)))
    return [[t.numpy() for t in o] if isinstance(o, list) else o.numpy() for o in outs]


def _same_outputs(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, list):
            _same_outputs(g, w)
        else:
            assert same_bits(g, w), f"native {g!r} != NumPy plan {w!r}"


@needs_llvm
@pytest.mark.parametrize("case", CORPUS, ids=[c["fn"].__name__ for c in CORPUS])
def test_corpus_native_bits(case):
    program = to_static(case["fn"]).get_program(*[rt.tensor(a) for a in corpus_inputs(case, 0)], *case["scalars"])
    for seed in (0, 1):
        arrays = corpus_inputs(case, seed)
        _same_outputs(_outputs(program, arrays, True), _outputs(program, arrays, False))


GENERATED = 60          # `DY2STATIC_NATIVE_GENERATED=5000` runs more (each new chain compiles in ~0.1-0.2 s)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    import importlib.util
    count = int(os.environ.get("DY2STATIC_NATIVE_GENERATED", GENERATED))
    path = tmp_path_factory.mktemp("gen") / "generated_for_native.py"
    path.write_text(HEADER + "\n\n".join(_Gen(seed).program(f"prog_{seed}") for seed in range(count)))
    spec = importlib.util.spec_from_file_location("generated_for_native", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, count


@needs_llvm
def test_generated_programs_native_bits(generated):
    module, count = generated
    native.reset_stats()
    for seed in range(count):
        fn = getattr(module, f"prog_{seed}")
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(3).astype(np.float32)
        rows = rng.standard_normal((4, 3)).astype(np.float32)
        for flag in (True, False):
            program = to_static(fn).get_program(rt.tensor(x), rt.tensor(rows), flag, _state(rt))
            _same_outputs(_outputs(program, [x, rows], True), _outputs(program, [x, rows], False))
    assert native.stats()["native"] > count // 4       # the chains really ran native


@needs_llvm
@pytest.mark.parametrize("out_shape, b_shape", [((3, 700), (700,)), ((700, 3), (700, 1)), ((5, 7, 300), (7, 1)),
                                                ((5, 7, 300), (5, 1, 300)), ((1000,), (1,)), ((513, 2), (2,)),
                                                ((4, 3, 129), (3, 129))])
@pytest.mark.parametrize("strided", [False, True])
def test_broadcast_inputs_gathered_a_row_at_a_time_across_blocks(out_shape, b_shape, strided):
    """A broadcast input (a bias row, a column) is gathered into each block a run along the last dim at a
    time, the runs crossing rows and block ends: NumPy's bits, contiguous or strided."""
    steps = [["add", {"in": 0}, {"in": 1}], ["multiply", {"step": 0}, 2.0]]
    kernel = elementwise.compile_chain([(np.float32, out_shape), (np.float32, b_shape)],
                                       (np.float32, out_shape), steps)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(out_shape).astype(np.float32)
    b = rng.standard_normal(b_shape[:-1] + (2 * b_shape[-1],)).astype(np.float32)
    b = b[..., ::2] if strided else np.ascontiguousarray(b[..., :b_shape[-1]])
    out = np.empty(out_shape, np.float32)
    assert kernel.cfunc(out, x, b) == 0
    assert same_bits(out, (x + b) * np.float32(2.0))
