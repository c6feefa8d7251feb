"""Chains longer than one native function takes (runtime/native/pieces.py): cut into pieces of at most
PIECE_STEPS steps, each its own kernel, the values crossing a cut materialised once: NumPy's bits end to end."""
import threading

import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.ir import Spec
from runtime.native import elementwise, pieces
from runtime.native.numpy_loops import probe_values, same_bits
from runtime.native.plan import chain_call
from types import SimpleNamespace

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built


def _line(n, unary=None):
    """`y = y * c + d` n/2 times over input 0 (a step of `unary` every fifth pair), input 1 added each tenth."""
    steps, prev = [], {"in": 0}
    for t in range(n // 2):
        steps.append(["multiply", prev, 1.0 + t / 1024])
        if t % 10 == 9:
            steps.append(["add", {"step": len(steps) - 1}, {"in": 1}])
        elif unary and t % 5 == 4:
            steps.append([unary, {"step": len(steps) - 1}])
        else:
            steps.append(["add", {"step": len(steps) - 1}, 0.5])
        prev = {"step": len(steps) - 1}
    return steps


def _variables(*shapes_dtypes):
    return [Spec(tuple(s), np.dtype(d)) for s, d in shapes_dtypes]


def _run_split(inputs, out, steps, arrays):
    """The chain run by its compiled pieces (not the plan's trial: every call native), and NumPy's."""
    kernel = pieces.split_job(inputs, out, steps)()
    assert isinstance(kernel, pieces.SplitKernel), kernel
    run = kernel.call(lambda k, o, s: chain_call(k, SimpleNamespace(outputs=[o]), s, None))
    with np.errstate(all="ignore"):
        return run(*arrays), elementwise.reference(steps, arrays), kernel


def test_a_plain_chain_is_cut_every_piece_steps():
    steps = _line(300)
    ranges = pieces.cut(steps)
    assert ranges[0] == (0, pieces.INLINE_PIECE_STEPS - 1) and ranges[-1][1] == len(steps) - 1
    assert all(ranges[k][1] + 1 == ranges[k + 1][0] for k in range(len(ranges) - 1))
    steps = _line(300, unary="tanh")           # a step calling a NumPy loop: shorter pieces
    with_loops = [b - a + 1 for a, b in pieces.cut(steps) if any(s[0] == "tanh" for s in steps[a:b + 1])]
    assert with_loops and max(with_loops) == pieces.LOOP_PIECE_STEPS


def test_a_value_read_far_ahead_ends_a_piece_of_its_own():
    steps = [["tanh", {"in": 0}]] + [["multiply", {"step": j}, 0.5] for j in range(200)]
    steps.append(["add", {"step": 200}, {"step": 0}])           # the tanh read again at the very end
    ranges = pieces.cut(steps)
    assert ranges[0] == (0, 0)
    # no piece after it lets a value other than its last escape it
    for a, b in ranges:
        for later in steps[b + 1:]:
            for arg in later[1:]:
                if isinstance(arg, dict) and "step" in arg:
                    assert not (a <= arg["step"] < b)


def test_a_chain_that_cannot_be_cut_into_pieces_of_several_steps_stays_on_numpy():
    lag = 100           # every value read 100 steps on: only one-step pieces would keep them
    steps = [["negative", {"in": 0}]] + [["add", {"step": j}, {"step": max(j - lag, 0)}] for j in range(400)]
    assert pieces.split_job(_variables(([64], "float64")), _variables(([64], "float64"))[0], steps)() \
        == pieces.NO_CUTS


@needs_llvm
@pytest.mark.parametrize("n,unary", [(pieces.PIECE_STEPS + 1, None), (pieces.INLINE_PIECE_STEPS, None),
                                     (pieces.INLINE_PIECE_STEPS + 1, None), (2 * pieces.INLINE_PIECE_STEPS + 1, None),
                                     (pieces.PIECE_STEPS + 1, "tanh"), (2 * pieces.LOOP_PIECE_STEPS + 1, "exp"),
                                     (300, "tanh")])
def test_a_split_chain_gives_numpys_bits_at_lengths_around_the_cut(n, unary):
    steps = _line(n + 1, unary)[:n]
    inputs = _variables(([4, 700], "float32"), ([700], "float32"))
    arrays = [probe_values("float32", 2800).reshape(4, 700), probe_values("float32", 700)[::-1].copy()]
    got, want, kernel = _run_split(inputs, inputs[0], steps, arrays)
    assert len(kernel.kernels) == len(pieces.cut(steps)) >= (1 if n <= pieces.INLINE_PIECE_STEPS and not unary else 2)
    assert same_bits(got, want)


@needs_llvm
def test_values_read_across_cuts_and_of_other_dtypes_keep_numpys_bits(monkeypatch):
    """A NumPy-loop step (tanh), a value read three pieces later, a bool materialised at a cut, a
    broadcast row and a float64 step: each value crossing a cut is the one NumPy computes."""
    monkeypatch.setattr(pieces, "INLINE_PIECE_STEPS", 40)      # more cuts
    steps = [["tanh", {"in": 0}]]
    for j in range(150):
        steps.append(["multiply", {"step": len(steps) - 1}, 0.75] if j % 3 else
                     ["add", {"step": len(steps) - 1}, {"in": 1}])
    steps.append(["less", {"step": len(steps) - 1}, 0.25])                  # bool, then read after a cut
    steps += [["multiply", {"step": 0}, 1.5]] + [["add", {"step": len(steps) + j}, 0.125] for j in range(70)]
    steps.append(["multiply", {"step": len(steps) - 1}, {"step": 151}])     # float32 * bool
    steps.append(["add", {"step": len(steps) - 1}, {"step": 0}])            # the tanh again
    steps.append(["multiply", {"step": len(steps) - 1}, {"in": 2}])         # float32 * float64 -> float64
    inputs = _variables(([3, 600], "float32"), ([600], "float32"), ([3, 600], "float64"))
    out = _variables(([3, 600], "float64"))[0]
    arrays = [probe_values("float32", 1800).reshape(3, 600), probe_values("float32", 600),
              np.linspace(-2, 2, 1800).reshape(3, 600)]
    got, want, kernel = _run_split(inputs, out, steps, arrays)
    assert len(kernel.kernels) >= 4 and got.dtype == np.float64
    assert same_bits(got, want)


@needs_llvm
def test_a_split_chain_round_trips_through_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DY2STATIC_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setattr(elementwise, "_KERNELS", {})       # compiled here, so written to this cache
    steps = _line(200, unary="exp")
    inputs = _variables(([2, 600], "float32"), ([600], "float32"))
    arrays = [probe_values("float32", 1200).reshape(2, 600) * 0.01, probe_values("float32", 600) * 0.01]
    got, want, kernel = _run_split(inputs, inputs[0], steps, arrays)
    assert not kernel.from_disk and same_bits(got, want)
    monkeypatch.setattr(elementwise, "_KERNELS", {})       # a later process: nothing compiled in it
    loaded = pieces.split_job(inputs, inputs[0], steps).probe()
    assert isinstance(loaded, pieces.SplitKernel) and loaded.from_disk
    run = loaded.call(lambda k, o, s: chain_call(k, SimpleNamespace(outputs=[o]), s, None))
    with np.errstate(all="ignore"):
        assert same_bits(run(*arrays), want)


def _program(ops, outputs_in_the_middle=False):
    def f(x, b):
        mid = None
        for t in range(ops):
            x = x * (1.0 + t / 1024) + 0.5
            if t % 10 == 9:
                x = x - b
            if outputs_in_the_middle and t == ops // 2:
                mid = x
        return (x, mid) if outputs_in_the_middle else x
    return rt.trace(f, [rt.InputSpec([4, 300], "float32", name="x"), rt.InputSpec([300], "float32", name="b")])[0]


@needs_llvm
@pytest.mark.parametrize("ops,middle", [(40, False), (100, False), (150, True)])
def test_a_long_chain_in_a_plan_runs_native_in_pieces_with_numpys_bits(ops, middle):
    program = _program(ops, middle)
    feed = {"x": probe_values("float32", 1200).reshape(4, 300), "b": probe_values("float32", 300)}
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
    with np.errstate(all="ignore"):
        for _ in range(40):             # through the trial: NumPy and native calls alike
            got = [t.numpy() for t in plan.run(feed)]
            assert all(same_bits(g, w) for g, w in zip(got, want))
    chains = [why for name, why in plan.native_regions]
    assert chains and not any("chain of" in why for why in chains), chains
    assert any(why in ("native", "slower than NumPy: kept on NumPy") for why in chains), chains


@needs_llvm
@pytest.mark.parametrize("cache", ["on", "off"])
def test_a_split_chain_compiled_before_is_found_by_the_probe_not_warmed_again(monkeypatch, cache):
    monkeypatch.setenv(native.ENV, "1")        # tiered, also where the suite runs with DY2STATIC_NATIVE=sync
    """A new plan of a split chain whose pieces are compiled (here by an earlier plan; a later process:
    the disk) asks the compiler thread for them once its NumPy time paid for the asking, and runs native
    without warming up to its compile threshold; with no cache folder (the cache off, a fresh install)
    it finds what this process compiled."""
    if cache == "off":
        monkeypatch.setenv("DY2STATIC_NATIVE_CACHE", "0")
    rt.Executor(native=True).compile(_program(92))      # threshold 0: queued at once
    program = _program(92)          # the same steps in a new Program (a plan of its own)
    native.wait()
    monkeypatch.setenv("DY2STATIC_NATIVE_THRESHOLD_MS", "1e9")       # would never warm up
    native.reset_stats()
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    assert [why for _, why in plan.native_regions] == ["warming"]      # the first calls never probe
    feed = {"x": probe_values("float32", 1200).reshape(4, 300), "b": probe_values("float32", 300)}
    with np.errstate(all="ignore"):
        for _ in range(10_000):         # until its NumPy time has paid for the probe (pieces.probe_seconds)
            plan.run(feed)
            if plan.native_regions[0][1] != "warming":
                break
    native.wait()
    assert [why for _, why in plan.native_regions] == ["native"]
    assert native.stats()["native"] == 1 and native.stats()["warming"] == 0, native.stats()


@needs_llvm
def test_a_split_chain_compiles_a_piece_a_turn_so_regions_queued_meanwhile_go_first(monkeypatch):
    """The compiler thread takes one piece at a time (`job.step`), the next queued behind whatever came
    meanwhile: a region queued after a long chain does not wait for all of its pieces."""
    from runtime.native import compiler
    monkeypatch.setenv(native.ENV, "1")        # in the background, also where the suite runs with sync
    release, started = threading.Event(), threading.Event()
    compiler.submit(lambda: (started.set(), release.wait(60)), lambda _: None)      # hold the thread
    started.wait(60)
    plan = rt.Executor(native=True).compile(_program(160))      # threshold 0: its first piece queued
    seen = []
    compiler.submit(lambda: [why for _, why in plan.native_regions], seen.append)   # queued after it
    release.set()
    native.wait()
    assert seen == [["compiling"]]      # ran between two pieces of the chain
    assert [why for _, why in plan.native_regions] == ["native"]


@needs_llvm
def test_a_split_jobs_steps_compile_one_piece_each():
    steps = _line(300, unary="tanh")
    x = _variables(([2, 64], "float32"), ([64], "float32"))
    job = pieces.split_job(x, x[0], steps)
    turns = [job.step() for _ in range(len(pieces.cut(steps)))]
    assert turns[:-1] == [None] * (len(turns) - 1) and isinstance(turns[-1], pieces.SplitKernel)


@needs_llvm
@pytest.mark.parametrize("unrolled", [8, 150])
def test_a_loop_whose_chains_are_too_long_for_one_function_stays_on_numpy_with_numpys_bits(unrolled):
    """A loop is one function (it is not split): over region.MAX_CHAIN_STEPS chain steps it runs on
    NumPy, says why, and keeps NumPy's bits; a short one is native."""
    from runtime.native import region

    def body(h, i):
        for k in range(unrolled):
            h = h * (0.999 + k / 8192) + float(k % 5)
        return h, i + 1

    def f(x):
        i = rt.zeros((), "int64")
        h, i = rt.while_loop(lambda h, i: i < 3, body, (x, i))
        return h

    program = rt.trace(f, [rt.InputSpec([8, 64], "float32", name="x")])[0]
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    state = [why for name, why in plan.native_regions if name.startswith("while")]
    if 2 * unrolled > region.MAX_CHAIN_STEPS:
        assert len(state) == 1 and "chain steps in one region" in state[0], state
    else:
        assert state == ["native"], state
    feed = {"x": probe_values("float32", 512).reshape(8, 64)}
    with np.errstate(all="ignore"):
        assert same_bits(plan.run(feed)[0].numpy(), rt.Executor(native=False).run(program, feed)[0].numpy())


@pytest.mark.parametrize("shape,to", [((3,), (2, 3)), ((1, 3), (2, 3)), ((2, 1), (2, 3)), ((), (4,)),
                                      ((3,), (3, 1)), ((2, 3), (3,)), ((0,), (2, 0)), ((1,), (2, 0)),
                                      ((2,), (2, 0)), ((4, 1, 5), (2, 4, 3, 5)), ((5, 1), (2, 4, 3, 5))])
def test_the_chain_analysis_broadcast_check_agrees_with_numpy(shape, to):
    from runtime.native import region
    try:
        want = np.broadcast_shapes(shape, to) == to
    except ValueError:
        want = False
    v, out = SimpleNamespace(static_shape=shape), SimpleNamespace(static_shape=to)
    try:
        region._check_broadcast(SimpleNamespace(type="fused_elementwise"), v, out)
        got = True
    except region._NotNative:
        got = False
    assert got == want


@needs_llvm
def test_a_split_chain_with_a_dynamic_dim_and_a_number_input_keeps_numpys_bits():
    def f(x, s):
        for t in range(60):
            x = x * (1.0 + t / 1024) + s
            if t % 7 == 3:
                x = rt.tanh(x)
        return x

    program = rt.trace(f, [rt.InputSpec([None, 64], "float32", name="x"), rt.InputSpec([], "float32", name="s")])[0]
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    assert [why for _, why in plan.native_regions] == ["native"]
    for rows in (3, 5, 1):
        feed = {"x": probe_values("float32", rows * 64).reshape(rows, 64), "s": np.float32(0.25)}
        want = rt.Executor(native=False).run(program, feed)[0].numpy()
        with np.errstate(all="ignore"):
            for _ in range(40):         # through the trial: NumPy and native calls alike
                assert same_bits(plan.run(feed)[0].numpy(), want)


CHILD = """
import json, sys, numpy as np
import runtime as rt
from runtime import native
def f(x):
    for t in range(60):
        x = rt.tanh(x * (1.0 + t / 1024) + 0.5) if t % 9 == 4 else x * (1.0 + t / 1024) + 0.5
    return x
program = rt.trace(f, [rt.InputSpec([4, 64], "float32", name="x")])[0]
feed = {"x": np.linspace(-2, 2, 256, dtype=np.float32).reshape(4, 64)}
plan = rt.Executor(native=True).compile(program)
native.wait()
calls = 0
while plan.native_regions[0][1] == "warming" and calls < 20000:
    plan.run(feed)
    calls += 1
native.wait()
got, want = plan.run(feed)[0].numpy(), rt.Executor(native=False).run(program, feed)[0].numpy()
print(json.dumps({"state": plan.native_regions[0][1], "from_disk": native.stats()["from_disk"],
                  "same": bool((got.view(np.uint32) == want.view(np.uint32)).all())}))
"""


@needs_llvm
def test_a_later_process_finds_a_split_chains_pieces_on_disk(tmp_path):
    """Compiled by one process (sync), the pieces are on disk: a later, tiered process that would never
    reach its compile threshold probes once the chain's NumPy time paid for it and runs native from the disk."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    results = []
    for mode, threshold in (("sync", "0"), ("1", "1e9")):
        env = dict(os.environ, PYTHONPATH=root, DY2STATIC_NATIVE=mode, DY2STATIC_NATIVE_THRESHOLD_MS=threshold,
                   DY2STATIC_NATIVE_CACHE=str(tmp_path / "cache"))
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, later = results
    assert first["state"] == "native" and first["from_disk"] == 0 and first["same"]
    assert later["state"] == "native" and later["from_disk"] == 1 and later["same"]
