"""Tiering (runtime/native/tiering.py): a new region runs on NumPy until its calls have taken the
threshold, then compiles in the background; no caller ever waits for LLVM."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import compiler, gemm, llvm, pieces, plan as plan_module, tiering
from runtime.native.numpy_loops import probe_values, same_bits
from runtime.ops.fused import FUSED_OP
from transpiler import to_static

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
_unique = iter(range(1, 1 << 30))


@pytest.fixture(autouse=True)
def _tiered(monkeypatch):
    """These tests observe the tiering itself: compiles in the background, also where the suite runs
    with the tier forced on (DY2STATIC_NATIVE=sync compiles before the first call)."""
    monkeypatch.setenv(native.ENV, "1")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _new_chain_program(n=300):
    """A chain no other test compiled (its constant is new), so it starts cold."""
    k = 1.0 + next(_unique) / 4096

    def f(x):
        return rt.tanh(x * k + 0.25) * 0.5

    return rt.trace(f, [rt.InputSpec([n], "float32", name="x")])[0]


def _state(plan):
    return [why for _, why in plan.native_regions]


def test_the_threshold_setting(monkeypatch):
    monkeypatch.delenv(tiering.ENV, raising=False)
    assert tiering.threshold() == tiering.DEFAULT_MS / 1e3
    monkeypatch.setenv(tiering.ENV, "2.5")
    assert tiering.threshold() == 0.0025
    monkeypatch.setenv(tiering.ENV, "0")
    assert tiering.threshold() == 0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(tiering.ENV, bad)
        with pytest.raises(ValueError, match=tiering.ENV):
            tiering.threshold()


def test_meter_starts_once_past_the_threshold():
    started, kept = [], tiering.samples()
    add = tiering.meter(0.003, lambda: started.append(1), kept)
    add(0.001)
    assert started == []
    add(0.002)
    add(0.002)
    assert started == [1] and list(kept) == [0.001, 0.002, 0.002]


@needs_llvm
def test_a_cold_region_warms_on_numpy_then_compiles_and_swaps_in(monkeypatch):
    monkeypatch.setenv(tiering.ENV, "20")
    program = _new_chain_program(4096)
    plan = rt.Executor(native=True).compile(program)
    assert _state(plan) == ["warming"]
    x = probe_values("float32", 4096)
    with np.errstate(all="ignore"):
        want = rt.Executor(native=False).run(program, {"x": x})[0].numpy()
        got = plan.run({"x": x})[0].numpy()
        assert same_bits(got, want) and _state(plan) == ["warming"]       # one call is not 20 ms
        calls = 1
        while _state(plan) == ["warming"]:
            assert same_bits(plan.run({"x": x})[0].numpy(), want)
            calls += 1
            assert calls < 10 ** 6
    native.wait()
    assert _state(plan) == ["native"]
    with np.errstate(all="ignore"):
        assert same_bits(plan.run({"x": x})[0].numpy(), want)
    # the kernel is the process's now: a new plan of the same chain is native at once
    assert _state(rt.Executor(native=True).compile(program)) == ["native"]


@needs_llvm
def test_a_region_that_never_runs_long_is_never_compiled(monkeypatch):
    monkeypatch.setenv(tiering.ENV, "60000")
    before = native.stats()["compiling"]
    plan = rt.Executor(native=True).compile(_new_chain_program())
    x = probe_values("float32", 300)
    with np.errstate(all="ignore"):
        for _ in range(50):
            plan.run({"x": x})
    assert _state(plan) == ["warming"] and native.stats()["compiling"] == before


@needs_llvm
def test_callers_are_never_blocked_while_the_compile_runs(monkeypatch):
    monkeypatch.setenv(tiering.ENV, "0.001")
    release = threading.Event()
    compiler.submit(lambda: release.wait(60), lambda _: None)      # holds the compiler thread
    try:
        program = _new_chain_program()
        plan = rt.Executor(native=True).compile(program)
        x = probe_values("float32", 300)
        results, errors = [], []

        def caller():
            try:
                with np.errstate(all="ignore"):
                    for _ in range(200):
                        results.append(plan.run({"x": x})[0].numpy())
            except Exception as e:          # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=caller) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads) and not errors      # all done while LLVM is held
        assert _state(plan) == ["compiling"]                               # past the threshold: queued
    finally:
        release.set()
    with np.errstate(all="ignore"):
        want = rt.Executor(native=False).run(program, {"x": x})[0].numpy()
    assert len(results) == 800 and all(same_bits(r, want) for r in results)
    native.wait()
    assert _state(plan) == ["native"]


def _new_loop_program():
    """A while loop (a recurrent cell) no other test compiled (its constant is new), so it starts cold."""
    k = 0.5 + next(_unique) / 4096

    def f(x, h, n):
        i = 0
        while i < n:
            h = rt.tanh(h * k + x)
            i += 1
        return h

    return to_static(f).get_program(rt.tensor(np.zeros(64, np.float32)), rt.tensor(np.zeros(64, np.float32)),
                                    rt.tensor(np.int64(6)))


@needs_llvm
def test_a_cold_loop_warms_on_numpy_then_compiles_and_swaps_in(monkeypatch):
    monkeypatch.setenv(tiering.ENV, "5")
    program = _new_loop_program()
    before = native.stats()["compiling"]
    plan = rt.Executor(native=True).compile(program)
    loops = lambda: [why for name, why in plan.native_regions if name.startswith("while")]     # noqa: E731
    assert loops() == ["warming"] and native.stats()["compiling"] == before     # nothing queued by building it
    feed = dict(zip([v.name for v in program.inputs],
                    [probe_values("float32", 64), np.linspace(-1, 1, 64, dtype=np.float32), np.int64(6)]))
    with np.errstate(all="ignore"):
        want = rt.Executor(native=False).run(program, feed)[0].numpy()
        assert same_bits(plan.run(feed)[0].numpy(), want) and loops() == ["warming"]
        calls = 1
        while loops() == ["warming"]:
            assert same_bits(plan.run(feed)[0].numpy(), want)
            calls += 1
            assert calls < 10 ** 6
        native.wait()
        assert loops() == ["native"]
        for _ in range(2 * tiering.SAMPLES):                # on trial, then settled: NumPy's bits throughout
            assert same_bits(plan.run(feed)[0].numpy(), want)
    assert loops() in (["native"], [plan_module.SLOWER])          # the trial's verdict (tested below)


def _new_mlp_program(rows=256):
    """x @ w.T + b, ReLU, of a width no other test compiled (a new GEMM key), so it starts cold."""
    n = 64 + next(_unique) % 4096
    rng = np.random.default_rng(n)
    w, b = rt.tensor(rng.standard_normal((n, 128)).astype(np.float32)), rt.tensor(np.zeros(n, np.float32))

    def f(x):
        return rt.nn.functional.relu(rt.nn.functional.linear(x, w, b))

    program = rt.trace(f, [rt.InputSpec([rows, 128], "float32", name="x")])[0]
    return program, (128, n, True, True)


@needs_llvm
def test_a_cold_gemm_warms_on_numpy_then_compiles_and_swaps_in(monkeypatch):
    """A 2-D linear's native GEMM warms like the other regions: building its plan and the first calls
    queue no self-test (and load no GEMM), the NumPy lines run, timed, until the threshold."""
    monkeypatch.setenv(tiering.ENV, "500")     # well above one call, even descheduled on a loaded machine
    program, found = _new_mlp_program()
    before = native.stats()["compiling"]
    plan = rt.Executor(native=True).compile(program)
    gemms = lambda: [why for name, why in plan.native_regions if not name.startswith(("while", "cond"))]  # noqa: E731
    if len(gemms()) != 1 or gemms()[0] not in ("warming", "compiling", "native"):
        pytest.skip(f"no native GEMM for this linear here: {gemms()}")
    assert gemms() == ["warming"] and native.stats()["compiling"] == before and gemm.known(found, 256) is None    # nothing queued
    x = np.random.default_rng(1).standard_normal((256, 128)).astype(np.float32)
    want = rt.Executor(native=False).run(program, {"x": x})[0].numpy()
    assert same_bits(plan.run({"x": x})[0].numpy(), want) and gemms() == ["warming"]
    assert gemm.known(found, 256) is None
    calls = 1
    while gemms() == ["warming"]:
        assert same_bits(plan.run({"x": x})[0].numpy(), want)
        calls += 1
        assert calls < 10 ** 6
    native.wait()
    assert gemm.known(found, 256) is not None
    for _ in range(3):
        assert same_bits(plan.run({"x": x})[0].numpy(), want)
    assert gemms() == ["native"] or gemm.known(found, 256), gemms()     # or its self-test said why not


def test_a_fresh_process_first_call_starts_no_compile(tmp_path):
    """With the tier on and an empty cache, the first call (of a loop, of an MLP's GEMMs) runs the NumPy
    plan and leaves LLVM alone: no compiler thread, llvmlite not imported (its import alone costs ~40 ms of CPU)."""
    code = textwrap.dedent("""
        import sys, threading
        import numpy as np
        import runtime as rt
        from transpiler import to_static

        def f(x, h, n):
            i = 0
            while i < n:
                h = rt.tanh(h + x * 0.5)
                i += 1
            return h * 2.0 + 1.0

        out = to_static(f)(rt.tensor(np.ones(8, np.float32)), rt.tensor(np.zeros(8, np.float32)),
                           rt.tensor(np.int64(4)))
        out.numpy()
        mlp = rt.nn.Sequential(rt.nn.Linear(128, 96), rt.nn.ReLU(), rt.nn.Linear(96, 64))    # native GEMMs
        with rt.no_grad():
            to_static(mlp.forward)(rt.tensor(np.ones((256, 128), np.float32))).numpy()
        print(rt.Executor().native, "llvmlite" in sys.modules,
              any(t.name == "dy2static-native-compiler" for t in threading.enumerate()))
    """)
    env = dict(os.environ, DY2STATIC_NATIVE="1", DY2STATIC_NATIVE_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=ROOT)
    env.pop(tiering.ENV, None)
    script = tmp_path / "first_call.py"         # converted code needs its source in a file
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "False"]


def test_a_compile_in_flight_never_delays_interpreter_exit(tmp_path):
    """The compiler thread is a daemon: a process whose compile never ends still exits at once, rc 0,
    and a job queued behind it is dropped."""
    code = textwrap.dedent("""
        import threading
        from runtime.native import compiler
        compiler.submit(threading.Event().wait, print)          # never returns
        compiler.submit(lambda: "ran", print)                   # queued behind it: dropped at exit
        (thread,) = [t for t in threading.enumerate() if t.name == "dy2static-native-compiler"]
        print("daemon", thread.daemon)
    """)
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=120)     # a hang fails here
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.split() == ["daemon", "True"]



def test_exit_waits_for_a_call_inside_llvm_and_refuses_new_ones(tmp_path):
    """Exit tears down LLVM's globals (C++ static destructors): a compile inside LLVM in the daemon thread
    then aborted the process after the user's program had finished. Exit now waits for a call inside the
    gate (here one that takes 0.5 s) and refuses calls after it."""
    marker = tmp_path / "finished"
    code = textwrap.dedent(f"""
        import threading, time
        from runtime.native import compiler, llvm
        inside = threading.Event()

        def job():
            with llvm.GATE:                 # stands for an LLVM call in flight
                inside.set()
                time.sleep(0.5)
                open({str(marker)!r}, "w").write("done")
            return "compiled"

        compiler.submit(job, print)
        inside.wait()
    """)
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert marker.read_text() == "done"         # without the gate the daemon thread died mid-call

    gate = llvm._Gate()
    assert gate.close(timeout=0)
    with pytest.raises(RuntimeError, match="interpreter is exiting"):
        with gate:
            pass


# --- a kernel on trial: kept only where it is faster than NumPy ------------------------------------
def test_judged_keeps_the_faster_and_fills_numpys_times_by_interleaving():
    ran, verdicts = [], []
    trial = tiering.judged(lambda a: ran.append("native") or a, lambda a: ran.append("numpy") or a, [],
                           verdicts.append)
    for k in range(2 * tiering.SAMPLES):
        assert trial(k) == k
    assert ran.count("native") == ran.count("numpy") == tiering.SAMPLES     # no NumPy times yet: interleaved
    assert len(verdicts) == 1 and isinstance(verdicts[0], bool)
    ran.clear()
    trial = tiering.judged(lambda a: ran.append("native") or a, lambda a: ran.append("numpy") or a,
                           [1.0] * tiering.SAMPLES, verdicts.append)       # NumPy took a second a call
    for k in range(tiering.SAMPLES):
        trial(k)
    assert ran == ["native"] * tiering.SAMPLES and verdicts[1] is True


def _run_judged(monkeypatch, margin):
    """A chain compiled at once, run past its trial with MARGIN `margin`: (plan, stats), every result
    checked bit for bit against the NumPy plan's."""
    monkeypatch.setenv(tiering.ENV, "0")
    monkeypatch.setattr(tiering, "MARGIN", margin)
    program = _new_chain_program(2048)
    native.reset_stats()
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    x = probe_values("float32", 2048)
    with np.errstate(all="ignore"):
        want = rt.Executor(native=False).run(program, {"x": x})[0].numpy()
        for _ in range(3 * tiering.SAMPLES):
            assert same_bits(plan.run({"x": x})[0].numpy(), want)
    return plan, native.stats()


@needs_llvm
def test_a_kernel_not_faster_than_numpy_is_swapped_back_for_good(monkeypatch):
    plan, stats = _run_judged(monkeypatch, 1.0)        # native must take no time at all: it never does
    assert _state(plan) == [native.plan.SLOWER]
    assert stats["reasons"].get(native.plan.SLOWER) == 1 and stats["native"] == 0


@needs_llvm
def test_a_kernel_faster_than_numpy_stays(monkeypatch):
    plan, stats = _run_judged(monkeypatch, -1e9)       # any kernel is fast enough
    assert _state(plan) == ["native"]
    assert stats["native"] == 1 and native.plan.SLOWER not in stats["reasons"]


def _relu_layer(x, w, b):
    return rt.maximum(x @ w + b, 0.0)           # the chain writes into the matmul's result (donated)


def _gelu(x, w, b):
    return 0.5 * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x ** 3)))    # a value read by a later step


def _mixed(x, w, b):
    return (x * 2 + b) - (w[0] > 0).astype("float32") * rt.exp(x)      # a bool cast, broadcasts


@needs_llvm
@needs_llvm
@pytest.mark.parametrize("threshold", ["1e9", "0"])
def test_a_chains_numpy_side_is_the_numpy_plans_own_code(monkeypatch, threshold):
    """Warming, on trial, or kept on NumPy, a chain's NumPy calls are the NumPy plan's own chain (a big
    chain blocked, buffers reused), never the fused op's reference steps (one new array a step: ~9x
    slower on 1M elements)."""
    monkeypatch.setenv(tiering.ENV, threshold)
    monkeypatch.setattr(FUSED_OP, "kernel", lambda *a, **k: pytest.fail("the reference steps ran"))
    program = rt.trace(lambda x: _gelu(x, None, None), [rt.InputSpec([1 << 16], "float32", name="x")])[0]
    plan = rt.Executor(native=True).compile(program)
    native.wait()
    x = {"x": np.random.default_rng(4).standard_normal(1 << 16).astype(np.float32)}
    want = rt.Executor(native=False).run(program, x)[0].numpy()
    for _ in range(2 * tiering.SAMPLES + 2):        # warming, or on trial (NumPy calls interleaved), then settled
        assert same_bits(plan.run(x)[0].numpy(), want)


@pytest.mark.parametrize("fn", [_relu_layer, _gelu, _mixed])
def test_the_numpy_chain_a_region_warms_on_gives_the_numpy_plans_bits(monkeypatch, fn):
    """The chain a region runs on NumPy (warming, or for good when slower) writes its steps into one
    buffer where the steps allow it: the NumPy plan's bits, its inputs untouched."""
    monkeypatch.setenv(tiering.ENV, "1e9")                  # warms for ever: always the NumPy chain
    rng = np.random.default_rng(3)
    feed = {"x": rng.standard_normal((16, 16)).astype(np.float32),
            "w": rng.standard_normal((16, 16)).astype(np.float32), "b": rng.standard_normal(16).astype(np.float32)}
    specs = [rt.InputSpec([16, 16], "float32", name="x"), rt.InputSpec([16, 16], "float32", name="w"),
             rt.InputSpec([16], "float32", name="b")]
    program = rt.trace(fn, specs)[0]
    plan = rt.Executor(native=True).compile(program)
    assert "warming" in _state(plan)
    kept = {k: v.copy() for k, v in feed.items()}
    want = rt.Executor(native=False).run(program, feed)[0].numpy()
    for _ in range(3):
        assert same_bits(plan.run(feed)[0].numpy(), want)
    assert all(same_bits(feed[k], kept[k]) for k in feed)


@needs_llvm
def test_a_chain_longer_than_a_piece_warms_like_any_chain_with_numpy_bits(monkeypatch):
    """LLVM's compile time grows faster than a chain's steps: a chain of more than PIECE_STEPS steps
    compiles as pieces (pieces.py), tiered as any chain (warming at plan build, nothing compiled), with
    NumPy's bits."""
    monkeypatch.setenv(tiering.ENV, "1e9")

    def program(ops):
        def f(x):
            for t in range(ops):
                x = x * (1.0 + t / 1024) + 0.5
            return x
        return rt.trace(f, [rt.InputSpec([64], "float32", name="x")])[0]

    x = probe_values("float32", 64)
    for steps in (pieces.PIECE_STEPS, pieces.PIECE_STEPS + 2):
        prog = program(steps // 2)
        plan = rt.Executor(native=True).compile(prog)
        assert _state(plan) == ["warming"], _state(plan)
        with np.errstate(all="ignore"):
            assert same_bits(plan.run({"x": x})[0].numpy(), rt.Executor(native=False).run(prog, {"x": x})[0].numpy())


def test_a_forked_child_never_waits_on_its_parents_compiler_thread(tmp_path):
    """A fork copies the queue but not the compiler thread: the child starts its own (os.register_at_fork
    resets the compiler's state). Forked while its parent compiled, it compiles nothing (the parent's
    locks may be held there for good) and says why at once; forked while idle, it compiles as usual."""
    code = textwrap.dedent("""
        import multiprocessing, threading
        from runtime.native import compiler

        release, started = threading.Event(), threading.Event()
        compiler.submit(lambda: (started.set(), release.wait(60)), lambda _: None)     # a compile running
        started.wait(60)
        compiler.submit(lambda: "queued", lambda _: None)

        def child(results):
            got = []
            compiler.submit(lambda: "child", got.append)
            compiler.wait()
            results.put(got)

        fork = multiprocessing.get_context("fork")
        for moment in ("mid-compile", "idle"):
            results = fork.Queue()
            process = fork.Process(target=child, args=(results,))
            process.start()
            print(moment, results.get(timeout=60), flush=True)
            process.join(60)
            print("exit", process.exitcode, flush=True)
            release.set()
            compiler.wait()
    """)
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [f"mid-compile {[compiler.FORKED]}", "exit 0", "idle ['child']", "exit 0"]


@needs_llvm
def test_a_plan_in_a_child_forked_mid_compile_runs_on_numpy_with_numpy_bits():
    """The plan-level view of the fork: a child forked while its parent compiles builds a plan, whose region
    (past the threshold at once) is refused a compile, says why, and runs the NumPy plan's code."""
    code = textwrap.dedent("""
        import multiprocessing, threading
        import numpy as np
        import runtime as rt
        from runtime import native
        from runtime.native import compiler

        release, started = threading.Event(), threading.Event()
        compiler.submit(lambda: (started.set(), release.wait(60)), lambda _: None)     # a compile running
        started.wait(60)
        program = rt.trace(lambda x: rt.tanh(x * 1.2345 + 0.5) * 0.5,
                           [rt.InputSpec([256], "float32", name="x")])[0]
        x = np.linspace(-3, 3, 256, dtype=np.float32)
        want = rt.Executor(native=False).run(program, {"x": x})[0].numpy()

        def child(results):
            plan = rt.Executor(native=True).compile(program)
            outs = [plan.run({"x": x})[0].numpy() for _ in range(20)]
            native.wait()
            results.put((all(np.array_equal(o, want) for o in outs), [why for _, why in plan.native_regions]))

        fork = multiprocessing.get_context("fork")
        results = fork.Queue()
        process = fork.Process(target=child, args=(results,))
        process.start()
        same, regions = results.get(timeout=60)
        process.join(60)
        release.set()
        print(same, regions == [compiler.FORKED], process.exitcode)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT, DY2STATIC_NATIVE="1")
    env[tiering.ENV] = "0"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True", "0"], done.stdout
