"""Native loops of Programs with dynamic dims (runtime/native/dynamic.py): one kernel per distinct set of
dims, the NumPy plan's bits for every batch size (0 included), NumPy where a dim changes inside the loop.

Each test traces with an `InputSpec` of a `None` dim, runs the native plan with the tier forced on
(DY2STATIC_NATIVE=sync: a new shape compiles at its first call) and the NumPy plan on the same feeds,
and compares bits exactly.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import dynamic, plan as native_plan, region as regions
from runtime.native.numpy_loops import same_bits
from transpiler import to_static
from tests.unit.test_native_loops import _region_cases as loop_cases, sample_in_a_loop

pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
RNG = np.random.default_rng(11)


def _array(*shape, dtype="float32", scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def _program(fn, specs, *example):
    return to_static(fn, input_spec=specs).get_program(*(rt.tensor(a) for a in example))


def _loops(plan):
    return [why for name, why in plan.native_regions if name.startswith("while")]


def _compare(program, plan, feed):
    """The native plan's outputs on feed, checked bit for bit against the NumPy plan's."""
    got = [t.numpy() for t in plan.run(feed)]
    want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same_bits(g, w), (g, w)
    return got


def _rnn(hidden, dtype):
    w, b = rt.tensor(_array(hidden, hidden, dtype=dtype, scale=0.3)), rt.tensor(_array(hidden, dtype=dtype))

    def rnn(h, n):
        i = 0
        while i < n:
            h = rt.tanh(h @ w + b)
            i += 1
        return h, i
    return rnn


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setenv(native.ENV, "sync")


@needs_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_batch_dynamic_hidden_state_runs_native_for_each_batch_size(forced, dtype):
    hidden = 8
    specs = [rt.InputSpec([None, hidden], dtype, name="h"), rt.InputSpec([], "int64", name="n")]
    program = _program(_rnn(hidden, dtype), specs, _array(2, hidden, dtype=dtype), np.int64(3))
    plan = rt.Executor(native=True).compile(program)
    assert _loops(plan) == [native_plan.PER_SHAPE]
    before = native.stats()
    for batch in (1, 3, 64, 3, 1):
        _compare(program, plan, {"h": _array(batch, hidden, dtype=dtype), "n": np.int64(12)})
    after = native.stats()
    assert _loops(plan) == ["native"]
    assert after["native"] - before["native"] == 3          # one kernel per batch size, each compiled once
    assert after["declined_calls"] == before["declined_calls"]


@needs_llvm
def test_an_empty_batch_runs_on_numpy_with_its_reason_and_numpys_bits(forced):
    specs = [rt.InputSpec([None, 8], "float32", name="h"), rt.InputSpec([], "int64", name="n")]
    program = _program(_rnn(8, "float32"), specs, _array(2, 8), np.int64(3))
    plan = rt.Executor(native=True).compile(program)
    before = native.stats()["reasons"]
    got = _compare(program, plan, {"h": _array(0, 8), "n": np.int64(5)})
    assert got[0].shape == (0, 8)
    reason = "matmul of shape (0, 8) @ (8, 8) takes no BLAS call in NumPy"
    assert native.stats()["reasons"].get(reason, 0) == before.get(reason, 0) + 1
    _compare(program, plan, {"h": _array(4, 8), "n": np.int64(5)})
    assert _loops(plan) == ["native"]                       # the other batch sizes are native all the same


@needs_llvm
def test_compiled_in_the_background_the_first_call_of_new_dims_runs_on_numpy(monkeypatch):
    monkeypatch.setenv(native.ENV, "1")
    specs = [rt.InputSpec([None, 16], "float32", name="h"), rt.InputSpec([], "int64", name="n")]
    program = _program(_rnn(16, "float32"), specs, _array(2, 16), np.int64(3))
    plan = rt.Executor(native=True).compile(program)
    feed = {"h": _array(5, 16), "n": np.int64(7)}
    _compare(program, plan, feed)                   # queued; this call ran the NumPy loop
    native.wait()
    assert _loops(plan) == ["native"]
    _compare(program, plan, feed)


@needs_llvm
def test_a_dynamic_batch_with_a_static_input_and_a_reduction_in_the_test(forced):
    """W3's loop with a batch-dynamic input sequence: x[i] @ u in the body, h.sum() in the test."""
    u, w, b = (rt.tensor(a) for a in (_array(6, 10, scale=0.4), _array(10, 10, scale=0.3), _array(10)))

    def rnn(x):
        h = rt.zeros((x.shape[1], 10))
        i = 0
        while i < 9 and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h

    program = _program(rnn, [rt.InputSpec([9, None, 6], "float32", name="x")], _array(9, 2, 6))
    plan = rt.Executor(native=True).compile(program)
    for batch in (1, 3, 64):
        _compare(program, plan, {"x": _array(9, batch, 6)})
    assert _loops(plan) == ["native"]


@needs_llvm
def test_a_state_whose_dim_changes_per_iteration_stays_on_numpy_with_why(forced):
    def shrink(h, n):
        i = 0
        while i < n:
            h = h[1:] * 0.5
            i += 1
        return h

    specs = [rt.InputSpec([None, 4], "float32", name="h"), rt.InputSpec([], "int64", name="n")]
    program = _program(shrink, specs, _array(6, 4), np.int64(2))
    plan = rt.Executor(native=True).compile(program)
    got = _compare(program, plan, {"h": _array(6, 4), "n": np.int64(3)})
    assert got[0].shape == (3, 4)
    assert "changes shape per iteration" in _loops(plan)[0]


@needs_llvm
def test_the_region_key_names_the_dims_so_kernels_and_the_disk_cache_keep_them_apart():
    specs = [rt.InputSpec([None, 8], "float32", name="h"), rt.InputSpec([], "int64", name="n")]
    program = _program(_rnn(8, "float32"), specs, _array(2, 8), np.int64(3))
    loop = next(op for op in program.global_block.ops if op.sub_blocks())
    args = regions.distinct_inputs(loop)
    assert regions.analyse(loop) == "h has a dynamic shape [-1, 8]"

    def key(batch):
        shapes = [(batch, 8) if v.name == "h" else v.static_shape for v in args]
        return regions.analyse(dynamic.specialize(loop, args, shapes)).key

    assert key(3) == key(3) and len({key(2), key(3), key(5)}) == 3
    assert "(3, 8)" in key(3)
    assert dynamic.specialize(loop, args, [(3, 9) if v.name == "h" else v.static_shape for v in args]) \
        == "h is [3, 9], not [-1, 8]"
    assert loop.inputs[0].static_shape == (-1, 8) and loop.outputs[0].static_shape == (-1, 8)   # the Program unchanged


@needs_llvm
def test_more_distinct_dims_than_the_limit_run_on_numpy_and_are_not_kept(forced, monkeypatch):
    monkeypatch.setattr(native_plan, "MAX_SHAPES", 2)
    made = []

    class Recorded(native_plan.DynamicLoop):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(native_plan, "DynamicLoop", Recorded)
    specs = [rt.InputSpec([None, 8], "float32", name="h"), rt.InputSpec([], "int64", name="n")]
    program = _program(_rnn(8, "float32"), specs, _array(2, 8), np.int64(3))
    plan = rt.Executor(native=True).compile(program)
    before = native.stats()
    for batch in (2, 3, 4, 5, 6, 7, 2):
        _compare(program, plan, {"h": _array(batch, 8), "n": np.int64(4)})
    after = native.stats()
    assert after["native"] - before["native"] == 2
    why = "dynamic dims: more than 2 distinct shapes (the others run on NumPy)"
    assert after["reasons"].get(why, 0) - before["reasons"].get(why, 0) == 1         # said once
    assert [len(loop.loops) for loop in made] == [2]       # the later sizes leave nothing behind
    assert _loops(plan) == ["native"]


CHILD = textwrap.dedent("""
    import json, sys, numpy as np
    import runtime as rt
    from runtime import native
    from transpiler import to_static
    rng = np.random.default_rng(0)
    w = rt.tensor((rng.standard_normal((8, 8)) * 0.3).astype("float32"))
    b = rt.tensor(rng.standard_normal(8).astype("float32"))
    def rnn(h, n):
        i = 0
        while i < n:
            h = rt.tanh(h @ w + b)
            i += 1
        return h
    specs = [rt.InputSpec([None, 8], "float32", name="h"), rt.InputSpec([], "int64", name="n")]
    program = to_static(rnn, input_spec=specs).get_program(rt.tensor(np.zeros((2, 8), "float32")), rt.tensor(3))
    plan = rt.Executor(native=True).compile(program)
    found = {}
    for batch in map(int, sys.argv[1:]):
        feed = {"h": rng.standard_normal((batch, 8)).astype("float32"), "n": np.int64(6)}
        before = native.stats()["from_disk"]
        got = plan.run(feed)[0].numpy()
        want = rt.Executor(native=False).run(program, feed)[0].numpy()
        found[batch] = {"from_disk": native.stats()["from_disk"] - before, "same": got.tobytes() == want.tobytes()}
    native.wait()
    print(json.dumps(found))
""")


def _child(folder, mode, *batches):
    script = folder / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, DY2STATIC_NATIVE_CACHE=str(folder / "cache"), PYTHONPATH=ROOT, DY2STATIC_NATIVE=mode)
    done = subprocess.run([sys.executable, str(script), *map(str, batches)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {int(k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


@needs_llvm
def test_a_later_process_finds_the_kernel_of_the_same_dims_on_disk_and_not_of_others(tmp_path):
    first = _child(tmp_path, "sync", 3)
    assert first[3] == {"from_disk": 0, "same": True}
    second = _child(tmp_path, "1", 3, 5)
    assert second[3] == {"from_disk": 1, "same": True}          # batch 3: native from its first call
    assert second[5] == {"from_disk": 0, "same": True}          # batch 5: another kernel, compiled anew


@needs_llvm
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_top_level_cond_of_dynamic_dims_is_native_for_each(forced, sign):
    w = rt.tensor(_array(8, 8, scale=0.4))

    def f(x):
        if x.sum() * sign > 0.0:
            y = rt.tanh(x @ w) * 0.5
        else:
            y = rt.exp(x * 0.25) - x
        return y

    program = _program(f, [rt.InputSpec([None, 8], "float32", name="x")], _array(2, 8))
    plan = rt.Executor(native=True).compile(program)
    for batch in (1, 3, 64):
        _compare(program, plan, {"x": _array(batch, 8) + 0.5})
    assert [why for name, why in plan.native_regions if name.startswith("cond")] == ["native"]


def _region_cases():
    return list(loop_cases())


@needs_llvm
@pytest.mark.parametrize("name,sample", _region_cases())
def test_conformance_sample_with_a_dynamic_first_dim_in_a_native_loop(forced, name, sample):
    """As test_native_loops' conformance test, the array inputs traced with a dynamic first dim: the loop's
    kernel for the sample's dims gives the NumPy plan's bits (each op's shape rule gave its buffers), or
    the loop stays on NumPy saying why."""
    positions = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]
    if not positions or all(sample.args[i].ndim == 0 for i in positions):
        pytest.skip("no array input with a dim")
    specs = [rt.InputSpec([None if d == 0 else n for d, n in enumerate(sample.args[i].shape)], sample.args[i].dtype,
                          name=f"in{k}") for k, i in enumerate(positions)] + [rt.InputSpec([], "int64", name="n")]
    feed = {f"in{k}": sample.args[i] for k, i in enumerate(positions)}
    feed["n"] = np.int64(2)

    try:
        program, _, _ = rt.trace(sample_in_a_loop(sample, positions), specs)
    except Exception as e:      # noqa: BLE001 - the sample needs static dims, or its state's shape changes
        pytest.skip(f"not a loop of dynamic dims: {type(e).__name__}")
    plan = rt.Executor(native=True).compile(program)
    declined = native.stats()["declined_calls"]
    with np.errstate(all="ignore"):
        got = [t.numpy() for t in plan.run(feed)]
    if all(why == "native" for _, why in plan.native_regions):
        assert native.stats()["declined_calls"] == declined, "a native loop handed its call back to NumPy"
    with np.errstate(all="ignore"):
        want = [t.numpy() for t in rt.Executor(native=False).run(program, feed)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same_bits(g, w), (g, w)
    assert all(why for _, why in plan.native_regions)


def _decode(start_empty):
    w = rt.tensor(_array(8, 8, scale=0.4))

    def decode(h, n):
        toks = [] if start_empty else [rt.argmax(h, axis=-1)]
        hs = []
        i = 0
        while i < n:
            h = rt.tanh(h @ w)
            toks.append(rt.argmax(h, axis=-1))
            hs.append(h * 2.0)
            i += 1
        return rt.stack(toks), rt.stack(hs), h
    return decode


@needs_llvm
@pytest.mark.parametrize("start_empty", [False, True])
def test_tensor_arrays_of_a_dynamic_element_shape_carried_by_the_loop(forced, start_empty):
    """Items of shape [batch] and [batch, 8]; a list that starts empty takes the shape the loop appends."""
    specs = [rt.InputSpec([None, 8], "float32", name="h"), rt.InputSpec([], "int64", name="n")]
    program = _program(_decode(start_empty), specs, _array(2, 8), np.int64(3))
    plan = rt.Executor(native=True).compile(program)
    for batch, n in ((1, 3), (3, 40), (5, 2)):          # 40: past the buffers' first capacity
        _compare(program, plan, {"h": _array(batch, 8), "n": np.int64(n)})
    assert _loops(plan) == ["native"]


@needs_llvm
def test_a_state_that_starts_unbound_raises_what_the_numpy_plan_raises(forced):
    """A loop state of dynamic dims first bound in the body: its start is the unbound name's marker, which
    raises when touched; the call runs the NumPy loop, which raises only where the loop never bound it."""
    def fn(x):
        return rt.while_loop(lambda i, y: i < rt.dim(x, 0), lambda i, y: (i + 1, x * 2.0), (0, rt.Undefined("y")))

    program, _, _ = rt.trace(fn, [rt.InputSpec([None, 3], "float32", name="x")])
    plan = rt.Executor(native=True).compile(program)
    x = _array(2, 3)
    assert same_bits(plan.run({"x": x})[1].numpy(), x * 2.0)
    with pytest.raises(UnboundLocalError, match="'y'"):
        plan.run({"x": np.zeros((0, 3), np.float32)})
