"""A loop's inline gemv by one weight: the weight in panels, read forwards and backwards in turn, or read
at a 64-byte boundary (runtime/native/gemv.py `panel_rows`, loop_emitter.py `panel_product` and
`aligned_matrix`): speed only, so NumPy's bits throughout.

The oracles are np.matmul (the functions alone) and the NumPy plan and floor (the loops), with weights
at 64-byte boundaries and off them (the copy the kernel makes of those), hidden sizes with one panel
size, another, and none (64, 128, 200 and odd ones), odd step counts.
"""
import ctypes

import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import gemv, llvm, loop_emitter
from runtime.native.numpy_loops import probe_values, same_bits
from tests.unit.test_native_gemv import _rnn
from transpiler import to_static

pytestmark = [pytest.mark.usefixtures("compile_at_once"),
              pytest.mark.skipif(llvm.engine() is None, reason="llvmlite not available")]

PANEL_SHAPES = [(128, 128), (200, 200), (129, 131), (97, 333), (64, 200), (256, 200), (500, 68)]


def test_panel_rows_only_where_the_matrix_is_beyond_l1():
    assert gemv.panel_rows(128, 128) == 64          # W3's: two panels of 32 KiB
    assert gemv.panel_rows(200, 200) == 32
    assert gemv.panel_rows(64, 128) == 0            # 32 KiB: read from L1 anyway
    assert gemv.panel_rows(100, 100) == 0
    assert gemv.panel_rows(40, 4000) == 0           # k <= 48: sgemv_kernel_n_128's order, no groups
    assert gemv.panel_rows(4096, 68) == 0           # one panel would not fit L1
    assert gemv.panel_rows(256, 256) == 0           # whole-line rows, 4x L1: streams as fast without
    assert gemv.panel_rows(500, 64) == 0
    assert gemv.panel_rows(256, 200) == 32          # rows 800 bytes apart: half of them off a line


def _aligned(a, offset_floats=0):
    """A copy of a whose data starts offset_floats past a 64-byte boundary."""
    buf = np.empty(a.size + 32, a.dtype)
    at = (-buf.ctypes.data % 64) // a.itemsize + offset_floats
    out = buf[at:at + a.size].reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.parametrize("k,n", PANEL_SHAPES)
def test_panel_function_gives_numpys_bits_both_ways(k, n):
    """The product in panels, forwards and backwards, on fresh special and random values, the matrix
    on and off a 64-byte boundary: np.matmul's bits (the self-test `check` runs too)."""
    panel = gemv.panel_rows(k, n)
    assert panel
    assert gemv.check(k, n, f"p{panel}") == ""
    import llvmlite.ir as ir
    eng = llvm.engine()
    module = ir.Module(name="panels_test")
    module.triple = eng.target_machine.triple
    gemv.emit_panel_test(module, k, n, panel)
    name = gemv.function_name(k, n, f"p{panel}")
    call = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)(eng.compile(str(module), [name])[name])
    rng = np.random.default_rng(k + 7 * n)
    panels = np.empty(gemv.panel_floats(k, n, panel), np.float32)
    for trial, offset in enumerate((0, 1, 3)):
        x = (probe_values(np.float32, k + trial)[trial:] if trial < 2 else
             rng.standard_normal(k).astype(np.float32) * 30).reshape(1, k)
        w = _aligned(np.roll(probe_values(np.float32, k * n), 5 * trial).reshape(k, n) if trial == 1 else
                     rng.standard_normal((k, n)).astype(np.float32), offset)
        forwards, backwards = np.empty((1, n), np.float32), np.empty((1, n), np.float32)
        call(x.ctypes.data, w.ctypes.data, forwards.ctypes.data, panels.ctypes.data, backwards.ctypes.data)
        with np.errstate(all="ignore"):
            want = np.matmul(x, w)
        assert same_bits(forwards, want)
        assert same_bits(backwards, want)


def _numpy_rnn(x, u, w, b, steps):
    h = np.zeros((1, w.shape[0]), np.float32)
    i = 0
    while i < steps and h.sum() < 1e9:
        h = np.tanh(x[i] @ u + h @ w + b)
        i += 1
    return h


@pytest.mark.parametrize("hidden,inputs,steps,offset", [
    (128, 64, 50, 0), (128, 64, 7, 1), (64, 64, 13, 3), (200, 64, 9, 0), (200, 33, 11, 2),
    (131, 97, 5, 1), (97, 131, 6, 0)])
def test_w3_like_loops_give_the_numpy_plans_bits(monkeypatch, hidden, inputs, steps, offset):
    """W3-like loops whose weights start `offset` floats past a 64-byte boundary: the native loop (panels
    where the weight is beyond L1, an aligned copy where it is off the boundary) gives the NumPy plan's
    and the NumPy floor's bits, in every call (a call's panels are read alternately forwards and backwards,
    from the first call's direction)."""
    monkeypatch.setenv("DY2STATIC_NATIVE_CACHE", "0")
    rng = np.random.default_rng(hidden * 100 + inputs)
    u = _aligned((rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)).astype(np.float32), offset)
    w = _aligned((rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32), offset)
    b = (rng.standard_normal(hidden) * 0.1).astype(np.float32)
    x = rng.standard_normal((steps, 1, inputs)).astype(np.float32)
    metas = []
    load = loop_emitter.load_kernel

    def recorded(meta, *args, **kwargs):
        metas.append(meta)
        return load(meta, *args, **kwargs)
    monkeypatch.setattr(loop_emitter, "load_kernel", recorded)
    results = {}
    for setting in ("0", "sync"):
        monkeypatch.setenv("DY2STATIC_NATIVE", setting)
        fn = to_static(_rnn(rt.tensor(u), rt.tensor(w), rt.tensor(b), steps))
        fn(rt.tensor(x))
        native.wait()
        results[setting] = [fn(rt.tensor(x)).numpy() for _ in range(3)]
    want = _numpy_rnn(x, u, w, b, steps)
    for got in results["0"] + results["sync"]:
        assert same_bits(got, want)
    kinds = [kind for meta in metas for kind, k, n in meta.get("gemvs", ()) if (k, n) == (hidden, hidden)]
    panel = gemv.panel_rows(hidden, hidden)
    assert kinds == ([f"p{panel}"] if panel else ["n"]), metas


def test_hoisted_copies_come_before_the_loop():
    """The panels and aligned copies are made in the `hoisted` block, once a call, not in the loop."""
    rng = np.random.default_rng(5)
    w = _aligned(rng.standard_normal((128, 128)).astype(np.float32), 1)
    u = _aligned(rng.standard_normal((64, 128)).astype(np.float32), 1)
    texts = []
    emitted = loop_emitter.LoopEmitter.compiled

    def compiled(self, *args):
        kernel = emitted(self, *args)
        texts.append(str(self.module))
        return kernel
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DY2STATIC_NATIVE", "sync")
        mp.setenv("DY2STATIC_NATIVE_CACHE", "0")
        mp.setattr(loop_emitter.LoopEmitter, "compiled", compiled)
        fn = to_static(_rnn(rt.tensor(u), rt.tensor(w), rt.tensor(np.zeros(128, np.float32)), 9))
        fn(rt.tensor(rng.standard_normal((9, 1, 64)).astype(np.float32)))
        native.wait()
    text = next(t for t in texts if "panels64_128_128" in t)
    main = text[:text.index("\n}\n")]           # the loop function, defined first
    blocks, label = {}, None
    for line in main.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            label = line[:-1].strip('"')
        elif label:
            blocks[label] = blocks.get(label, "") + line + "\n"
    making = [label for label, code in blocks.items() if "panels64_128_128\"(" in code]
    assert len(making) == 1 and making[0].startswith("hoisted"), making    # made once, before the loop
    copying = [label for label, code in blocks.items() if "llvm.memcpy" in code and label.startswith("hoisted")]
    assert copying, sorted(blocks)          # u (off the boundary) copied there too


def test_a_cond_of_one_numpy_call_per_branch_stays_python(monkeypatch):
    """W4 (`x * 2` or `x - 1` by `x.mean() > 0`): a native call of the chosen branch saves no NumPy call
    and its trial found it slower; the plan keeps its plain if/else (no native call, no timing around it),
    with the NumPy plan's bits. A branch of two calls (a chain) is still one native region."""
    from runtime.native import region as regions

    def one_call(x):
        if x.mean() > 0:
            y = x * 2
        else:
            y = x - 1
        return y

    def two_calls(x):
        if x.mean() > 0:
            y = x * 2 + 1
        else:
            y = x - 1
        return y

    monkeypatch.setenv("DY2STATIC_NATIVE_CACHE", "0")
    x = np.random.default_rng(4).standard_normal((64, 64)).astype(np.float32) + 0.01
    for f, want in ((one_call, regions.ONE_CALL_BRANCHES), (two_calls, "native")):
        for sign in (1, -1):
            program = to_static(f).get_program(rt.tensor(x * sign))
            plan = rt.Executor(native=True).compile(program)
            native.wait()
            assert [why for name, why in plan.native_regions if name.startswith("cond")] == [want]
            feed = {program.inputs[0].name: rt.tensor(x * sign)}
            for _ in range(2):
                (got,) = plan.run(feed)
                assert same_bits(got.numpy(), f(x * sign))


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_a_loops_product_by_a_transposed_weight_off_a_line_gives_numpys_bits(monkeypatch, offset):
    """A Linear's h @ W.T (OpenBLAS's sgemv_t, inline) in a loop, W 0-2 floats off a 64-byte boundary:
    read through the aligned copy where it is off one, the NumPy plan's bits."""
    from runtime import nn
    monkeypatch.setenv("DY2STATIC_NATIVE_CACHE", "0")
    rng = np.random.default_rng(offset)
    w = _aligned((rng.standard_normal((96, 64)) / 8).astype(np.float32), offset)
    x = rt.tensor(rng.standard_normal((1, 64)).astype(np.float32))
    rt.seed(3)
    layer = nn.Linear(64, 96)
    layer.weight.data = w
    assert layer.weight.numpy().ctypes.data % 64 == 4 * offset       # adopted, not copied

    def f(h):
        i = 0
        while i < 9 and rt.sum(h) < 1e9:
            h = rt.tanh(layer(h))[:, :64] + h
            i += 1
        return h

    metas = []
    load = loop_emitter.load_kernel
    monkeypatch.setattr(loop_emitter, "load_kernel", lambda meta, *a, **k: metas.append(meta) or load(meta, *a, **k))
    monkeypatch.setenv("DY2STATIC_NATIVE", "0")
    want = to_static(f)(x).numpy()
    monkeypatch.setenv("DY2STATIC_NATIVE", "sync")
    native.reset_stats()
    fn = to_static(f)
    fn(x)
    native.wait()
    for _ in range(2):
        assert same_bits(fn(x).numpy(), want)
    assert native.stats()["native"] == 1 and native.stats()["inline_gemvs"] == 1, native.stats()
    # the kernel is compiled once a process (the same region for every offset): its product is sgemv_t's
    assert all(meta["gemvs"] == [["t", 64, 96]] for meta in metas), metas
