"""A chain of n elementwise ops costs work linear in n from source to first result (issue 27: 4000 ops in
≤ 0.5 s; `python -m bench.pass_scaling --first-call` times it). The work is counted, not timed: Python
function calls (cProfile's count, the same on every machine) of converting the source and of tracing,
optimizing, compiling and running it, at n and 4n ops."""
import cProfile
import importlib.util
import pstats
import sys

import numpy as np
import pytest

import runtime as rt
from bench.pass_scaling import chain_source
from runtime import passes
from runtime.codegen.plan import compile_plan
from runtime.tracing import line_of
from transpiler.conversion import convert_function, converted_source

SPEC = [rt.InputSpec([8, 8], "float32", "x")]
X = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)


def _chain(tmp_path, n, form):
    path = tmp_path / f"chain_{form}_{n}.py"
    path.write_text(chain_source(n, form))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.chain


def _calls(fn, *args):
    profile = cProfile.Profile()
    profile.enable()
    try:
        result = fn(*args)
    finally:
        profile.disable()
    return pstats.Stats(profile).total_calls, result


def _first_result(converted):
    program, _, _ = rt.trace(converted, SPEC)
    return compile_plan(passes.run_passes(program), rt.Executor().backend)(X)[0]


@pytest.mark.parametrize("form", ["mixed_lines", "mixed_loop"])
def test_work_from_source_to_first_result_is_linear_in_the_op_count(tmp_path, form):
    _first_result(convert_function(_chain(tmp_path, 20, form)))        # imports and caches: paid once
    counts = {}
    for n in (250, 1000):
        fn = _chain(tmp_path, n, form)
        converting, converted = _calls(convert_function, fn)
        running, result = _calls(_first_result, converted)
        counts[n] = (converting, running)
        np.testing.assert_array_equal(result, fn(rt.tensor(X)).numpy())     # the same bits as eager
    (convert_small, run_small), (convert_big, run_big) = counts[250], counts[1000]
    assert convert_big <= 4.2 * convert_small, counts
    assert run_big <= 4.2 * run_small, counts


def _called(stats, path_part):
    """Names of the functions under files whose path holds `path_part` that the profile saw called."""
    return {name for (filename, _, name) in stats.stats if path_part in filename.replace("\\", "/")}


@pytest.mark.parametrize("form", ["lines", "mixed_lines"])
def test_straight_line_code_converts_to_itself_without_a_gast_round_trip(tmp_path, form):
    """A function no transform rewrites (issue 27's chain written out, calling library functions or not)
    is compiled from its parse: no gast tree, no transform, no analysis; its source and its results are
    the function's own."""
    fn = _chain(tmp_path, 200, form)
    profile = cProfile.Profile()
    profile.enable()
    try:
        converted = convert_function(fn)
    finally:
        profile.disable()
    stats = pstats.Stats(profile)
    assert not _called(stats, "/gast/"), _called(stats, "/gast/")
    assert not _called(stats, "transpiler/transforms/") - {"needs_conversion", "applies", "_names_of", "<genexpr>",
                                                          "leaves_as_written", "<listcomp>", "left_as_written",
                                                          "_kind", "_root_name", "_module_attribute",
                                                          "is_library_object", "_is_array_constructor"}
    for analysis in ("activity.py", "cfg.py", "liveness.py", "definedness.py", "closures.py"):
        assert not _called(stats, "transpiler/analysis/" + analysis), analysis
    np.testing.assert_array_equal(converted(rt.tensor(X)).numpy(), fn(rt.tensor(X)).numpy())
    assert converted_source(fn) == "".join(chain_source(200, form).splitlines(True)[3:])


def test_a_transform_runs_only_where_its_construct_occurs(tmp_path):
    """Library calls and a `for` loop: the loop transforms, analysis and Calls run; the transforms of
    try/finally, walrus, global, raise and in-place list updates are never entered."""
    path = tmp_path / "loop_only.py"
    path.write_text("import runtime as xp\n\n\ndef f(x):\n    for i in range(3):\n        x = xp.tanh(x) * 2.0\n"
                    "    return x\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    profile = cProfile.Profile()
    profile.enable()
    try:
        converted = convert_function(module.f)
    finally:
        profile.disable()
    stats = pstats.Stats(profile)
    for skipped in ("finally_jumps.py", "walrus.py", "declarations.py", "raises.py", "lists.py"):
        assert _called(stats, "transforms/" + skipped) <= {"applies"}, skipped
    assert "transform" in _called(stats, "transforms/control_flow.py")
    assert "visit_Call" in _called(stats, "transforms/calls.py")
    np.testing.assert_array_equal(converted(rt.tensor(X)).numpy(), module.f(rt.tensor(X)).numpy())


@pytest.mark.parametrize("line, converted", [
    ("y = helper(x)", "y = _jst.convert_call(helper)(x)"),
    ("y = x * len(x)", "y = x * _jst.convert_len(x)"),
    ("y = np.asarray(x)", "y = _jst.convert_call(np.asarray)(x)"),
    ("y = [x, x].index(x)", "y = _jst.convert_index([x, x], x)"),
    ("helper = np.tanh; y = helper(x)", "y = _jst.convert_call(helper)(x)"),
    ("import numpy as xp; y = xp.sin(x)", "y = _jst.convert_call(xp.sin)(x)"),
    ("y = [v for v in range(3)][0]", "y = [v for v in _jst.convert_range(3)][0]"),
])
def test_straight_line_code_with_a_call_to_convert_is_converted(tmp_path, line, converted):
    """What Calls rewrites keeps a straight-line function off the path that compiles it as parsed (a local
    name shadowing a library one included)."""
    path = tmp_path / f"calls_{abs(hash(line))}.py"
    path.write_text("import numpy as np\nimport runtime as xp\n\n\ndef helper(v):\n    return v\n\n\n"
                    f"def f(x):\n    {line}\n    return y\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert converted in converted_source(module.f)


def test_tracing_promotes_dtypes_once_per_operand_types_not_once_per_op(tmp_path):
    """NumPy's result_type is asked per distinct (dtype, weak) operands, not per recorded op."""
    calls = {}
    for n in (250, 1000):
        converted = convert_function(_chain(tmp_path, n, "mixed_lines"))
        profile = cProfile.Profile()
        profile.enable()
        try:
            rt.trace(converted, SPEC)
        finally:
            profile.disable()
        stats = pstats.Stats(profile).stats
        calls[n] = sum(count for (filename, _, name), (count, *_) in stats.items()
                       if name == "result_type" and "numpy" in filename)
        shapes = sum(count for (filename, _, name), (count, *_) in stats.items()
                     if name == "shape" and "numpy" in filename)
        assert shapes == 0, shapes      # a literal operand's shape is () without asking NumPy
    assert calls[1000] <= calls[250] + 2, calls


def test_every_op_of_a_long_function_names_its_line(tmp_path):
    """Ops name the user's line (tracing.line_of: the code's line table read once, bisected, not CPython's
    scan from the function's start per op, which made tracing a long function quadratic)."""
    n = 600
    program, _, _ = rt.trace(convert_function(_chain(tmp_path, n, "lines")), SPEC)
    lines = [int(op.origin.rsplit(":", 1)[1]) for op in program.ops()]
    assert lines == [5 + k // 2 for k in range(n)]      # `x = x * 1.0001 + 0.5` from line 5: two ops a line


def _caller_lines():
    """(line_of, f_lineno) of the caller's frame, now (a live frame's line moves on)."""
    frame = sys._getframe(1)
    return line_of(frame), frame.f_lineno


def test_line_of_is_the_frames_line_number():
    seen = []
    for i in range(3):
        seen.append(_caller_lines())
        if i:
            seen.append(
                _caller_lines()
            )
    seen.append(_caller_lines())
    assert all(ours == python for ours, python in seen), seen
    assert len(set(seen)) == 3


def _calls_named(stats, name, path_part):
    return sum(count for (filename, _, fn), (count, *_) in stats.items()
               if fn == name and path_part in filename.replace("\\", "/"))


def test_elementwise_types_are_inferred_once_per_operand_types(tmp_path):
    """Tracing and planning a chain broadcast shapes once per distinct (shape, dtype, weak) operands of each
    ufunc, not once per op or fused step (`rules.elementwise` remembers its answers)."""
    seen = {}
    for n in (250, 1000):
        converted = convert_function(_chain(tmp_path, n, "mixed_lines"))
        profile = cProfile.Profile()
        profile.enable()
        try:
            _first_result(converted)
        finally:
            profile.disable()
        seen[n] = _calls_named(pstats.Stats(profile).stats, "broadcast_shapes", "runtime/ops/rules.py")
    assert seen[1000] == seen[250] and seen[250] < 20, seen


_TYPED_OPERANDS = [
    (rt.ir.Spec((3,), np.dtype("float32")), 2.0),
    (rt.ir.Spec((3,), np.dtype("float32"), True), 2.0),
    (rt.ir.Spec((3,), np.dtype("float32"), True), rt.ir.Spec((3,), np.dtype("float32"))),
    (rt.ir.Spec((1, 3), np.dtype("int8")), rt.ir.Spec((2, 1), np.dtype("int8"))),
    (rt.ir.Spec((3,), np.dtype("int8")), 2.0),
    (rt.ir.Spec((3,), np.dtype("int8")), 2),
    (rt.ir.Spec((-1, 3), np.dtype("int8")), True),
    (rt.ir.Spec((), np.dtype("int64"), True), 2),
    (rt.ir.Spec((3,), np.dtype("uint8")), np.float64(2.0)),
    (rt.ir.Spec((3,), np.dtype("uint8")), np.array([1, 2, 3], np.int16)),
]


def test_remembered_elementwise_types_are_the_rules_answers():
    """The remembered answers, asked in any order (weak and strong operands, literals of each type, NumPy
    values that promote by value), are what a rule with nothing remembered answers."""
    from runtime.ops.registry import get_op
    from runtime.ops.rules import elementwise
    infer = get_op("add").infer
    for inputs in _TYPED_OPERANDS + _TYPED_OPERANDS[::-1]:
        assert infer(*inputs) == elementwise("add")(*inputs), inputs


@pytest.mark.parametrize("name", ["licm", "hoist_gather_matmul", "fold_gather_addend", "fold", "cse", "dce"])
def test_a_pass_with_nothing_of_its_own_to_do_returns_the_program_untouched(tmp_path, name):
    """On a loop-free chain with nothing constant, repeated or dead, the pass neither rebuilds use lists nor
    closes new reads (a walk of the whole Program each): it returns the Program it was given, as it was."""
    program, _, _ = rt.trace(convert_function(_chain(tmp_path, 200, "mixed_lines")), SPEC)
    text = str(program)
    profile = cProfile.Profile()
    profile.enable()
    try:
        result = passes.PASSES[name](program)
    finally:
        profile.disable()
    stats = pstats.Stats(profile).stats
    assert result is program and str(program) == text
    for walk in ("readers", "read_counts", "close_new_reads", "remove_ops", "replace_uses"):
        assert _calls_named(stats, walk, "runtime/passes/") == 0, walk



def _many_forms(x, m=rt):
    """Steps of every call form a chain has: number second or first, unary, a value read twice, keyword
    `out=` (maximum/minimum), a comparison changing the dtype, a second buffer live beside the first."""
    for k in range(3):
        y = m.maximum(m.minimum(x * 3.0 - 1.0, 2.0), -0.5) * m.sqrt(m.abs(x))
        y = 0.5 - y / (y * y + 2.0)
        x = m.exp(m.sin(y) * 0.5) + m.tanh(x) * float(k)
        x = m.where(x > 0.25, x, -x) if m is np else rt.where(x > 0.25, x, -x)
    return x


@pytest.mark.parametrize("run", [2, 5, 64])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_long_chain_tabled_gives_the_bits_of_its_calls_line_by_line(monkeypatch, run, dtype):
    """A run of calls as a loop over a table (`chains._tabled`) computes exactly what its calls line by
    line did, and what NumPy does eagerly, whatever forms the run mixes."""
    from runtime.codegen import chains
    x = np.linspace(-2, 2, 24, dtype=dtype).reshape(4, 6)
    program = passes.run_passes(rt.trace(_many_forms, [rt.InputSpec([4, 6], dtype, "x")])[0])
    monkeypatch.setattr(chains, "TABLE_RUN", 1 << 30)
    lines = compile_plan(program, rt.Executor().backend)
    monkeypatch.setattr(chains, "TABLE_RUN", run)
    tabled = compile_plan(program, rt.Executor().backend)
    if run < 64:
        assert "for f, form, a in" in tabled.source and "for f" not in lines.source, tabled.source
    want = np.asarray(_many_forms(x, np))
    for plan in (lines, tabled):
        got = np.asarray(plan(x.copy())[0])
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_4000_op_chain_plans_to_a_few_lines(tmp_path):
    """What `compile()` reads of a 4000-op chain: a loop over its calls, not 4000 lines."""
    program, _, _ = rt.trace(convert_function(_chain(tmp_path, 4000, "lines")), SPEC)
    plan = compile_plan(passes.run_passes(program), rt.Executor().backend)
    assert plan.source.count("\n") < 10, plan.source
    np.testing.assert_array_equal(plan(X)[0], _chain(tmp_path, 4000, "lines")(rt.tensor(X)).numpy())


def _collections_during(fn, *args):
    """(how many collections the cyclic GC ran while fn ran with a threshold of 1: one per allocation
    unless paused, fn's result)."""
    import gc
    seen = []

    def count(phase, info):
        if phase == "start":
            seen.append(info["generation"])
    threshold = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(1)
    try:
        result = fn(*args)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(count)
    return len(seen), result


def test_converting_tracing_and_compiling_pause_the_garbage_collector(tmp_path):
    """Each of conversion, tracing and compiling a plan runs with the collector paused (its full
    collections walk the whole heap, freeing nothing of a long Program being made): one collection at
    the end of each and a few for the calls' own bookkeeping around it, where thousands would run with a
    threshold of 1."""
    fn = _chain(tmp_path, 400, "mixed_lines")
    collections, converted = _collections_during(convert_function, fn)
    assert collections <= 40, collections
    collections, (program, _, _) = _collections_during(rt.trace, converted, SPEC)
    assert collections <= 40, collections
    collections, plan = _collections_during(rt.Executor().compile, program)
    assert collections <= 40, collections
    np.testing.assert_array_equal(plan(X)[0], fn(rt.tensor(X)).numpy())


def test_a_paused_collector_comes_back_as_it_was():
    import gc
    import threading
    from runtime.gc_pause import paused_gc
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()           # the outer pause still holds
    assert gc.isenabled()
    started, finish = threading.Event(), threading.Event()

    def other_thread():
        with paused_gc():
            started.set()
            finish.wait(10)
    worker = threading.Thread(target=other_thread)
    worker.start()
    started.wait(10)
    with paused_gc():
        pass
    assert not gc.isenabled()               # another thread's pause still holds
    finish.set()
    worker.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()           # the user's own choice stays
    finally:
        gc.enable()
