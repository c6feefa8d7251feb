"""The native GEMM keeps a weight packed across calls (runtime/native/gemm.py, `Call.packed_weight`), and
the write barrier that keeps it right (runtime/buffers.py): after every kind of write between two calls
the next call gives NumPy's bits for the new weight, compared exactly (`same_bits`)."""
import gc
import threading
import time

import numpy as np
import pytest

import runtime as rt
from runtime import buffers, native, nn
from runtime.executor import Executor
from runtime.native import gemm
from runtime.native.numpy_loops import same_bits
from runtime.nn import functional as F
from transpiler import to_static

pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
FOUND = (512, 64, True, True)


@pytest.fixture
def packs(monkeypatch):
    """Counts whole-weight packings (a kept copy made), per weight array."""
    why = gemm.check(FOUND, 40)
    if why:
        pytest.skip(f"this CPU's BLAS: {why}")
    made = []
    pack = gemm.Call.pack

    def counted(self, w):
        made.append(w)
        return pack(self, w)
    monkeypatch.setattr(gemm.Call, "pack", counted)
    monkeypatch.setenv(native.ENV, "sync")
    return made


def _layer():
    rt.seed(3)
    fc = nn.Linear(512, 64)
    return fc, to_static(lambda x: F.relu(fc(x)))


def _check(forward, fc, x):
    with rt.no_grad():
        got = forward(rt.tensor(x)).numpy()
    w, b = fc.weight.array, fc.bias.array
    assert same_bits(got, gemm.numpy_linear(x, w, b, True))


def _x(seed=0, rows=40):
    return np.random.default_rng(seed).standard_normal((rows, 512)).astype(np.float32)


def _new_weight(seed):
    return np.random.default_rng(seed).standard_normal((64, 512)).astype(np.float32)


def test_escape_marks_the_array_and_the_array_it_views():
    a = np.ones((64, 64), np.float32)
    assert not buffers.escaped(a)
    assert buffers.escaped(a[1:])               # a view: its owner may be written through another view
    buffers.escape(a[:1, :1])                   # a small view of a large array marks the array
    assert buffers.escaped(a)
    t = rt.tensor(np.arange(64 * 64.0).reshape(64, 64).tolist())     # made from a list: the runtime's own array
    assert not buffers.escaped(t.array)
    t.numpy()
    assert buffers.escaped(t.array)
    shared = np.zeros(8192, np.float32)
    assert buffers.escaped(rt.asarray(shared).array)      # the caller's array, no copy
    assert buffers.escaped(np.zeros(buffers.WATCHED - 1))  # never marked: counts as escaped


def test_marks_go_with_their_arrays():
    a = np.ones(8192, np.float32)
    buffers.escape(a)
    key = id(a)
    del a
    gc.collect()
    assert key not in buffers._ESCAPED


def test_runtime_reads_do_not_escape():
    t = rt.tensor(np.ones((64, 64)).tolist())
    float(t.sum()), repr(t), t.tolist(), np.array(t, copy=True), np.asarray(t, dtype=np.float64)
    assert not buffers.escaped(t.array)


@needs_llvm
def test_an_unchanged_weight_is_packed_once_and_gives_numpy_bits(packs):
    fc, forward = _layer()
    x = _x()
    for seed in range(4):
        _check(forward, fc, _x(seed))
    assert len(packs) == 1 and packs[0] is fc.weight.array      # the second call packed it; later ones reuse it
    assert not buffers.escaped(fc.weight.array)


@needs_llvm
@pytest.mark.parametrize("write", ["set_value", "setitem", "augmented", "data", "in_place_method",
                                   "load_state_dict", "optimizer", "static_write"])
def test_every_api_write_between_calls_is_seen(packs, write):
    fc, forward = _layer()
    x = _x()
    for _ in range(3):
        _check(forward, fc, x)
    assert len(packs) == 1
    new = _new_weight(7)
    if write == "set_value":
        fc.weight.set_value(new)
    elif write == "setitem":
        with rt.no_grad():
            fc.weight[2:5] = new[2:5]
    elif write == "augmented":
        with rt.no_grad():
            fc.weight -= 0.5 * rt.tensor(new)
    elif write == "data":
        fc.weight.data = rt.tensor(new, copy=True)     # (without the copy, `new` would be the weight's array)
    elif write == "in_place_method":
        with rt.no_grad():
            fc.weight.mul_(0.5)
    elif write == "load_state_dict":
        state = fc.state_dict()
        fc.load_state_dict({"weight": rt.tensor(new), "bias": state["bias"]})
    elif write == "optimizer":
        opt = rt.optim.SGD(fc.parameters(), lr=0.1)
        F.relu(fc(rt.tensor(x))).sum().backward()
        opt.step()
    elif write == "static_write":
        to_static(lambda: fc.weight.set_value(fc.weight * 0.5))()
    _check(forward, fc, x)
    _check(forward, fc, x)       # packed again from this call: the new array's second
    assert len(packs) == 2 and packs[1] is fc.weight.array


@needs_llvm
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_numpy_view_written_after_a_call_is_seen(packs, when):
    fc, forward = _layer()
    x = _x()
    view = fc.weight.numpy() if when == "before" else None
    for _ in range(3):
        _check(forward, fc, x)
    if view is None:
        view = fc.weight.numpy()          # taken after the weight was packed: the kept copy is not used again
    for seed in (8, 9):
        view[...] = _new_weight(seed)
        _check(forward, fc, x)
    assert packs == ([] if when == "before" else [fc.weight.array])


@needs_llvm
def test_writes_through_data_state_dict_and_dlpack_are_seen(packs):
    fc, forward = _layer()
    x = _x()
    for write in (lambda v: fc.weight.data.numpy().__setitem__(Ellipsis, v),
                  lambda v: fc.state_dict()["weight"].numpy().__setitem__(Ellipsis, v),
                  lambda v: np.from_dlpack(fc.weight).__setitem__(Ellipsis, v),
                  lambda v: np.asarray(fc.weight).__setitem__(Ellipsis, v)):
        fc.weight.set_value(_new_weight(1))     # a fresh array: packed again from its second call
        for _ in range(3):
            _check(forward, fc, x)
        write(_new_weight(2))
        _check(forward, fc, x)


@needs_llvm
@pytest.mark.parametrize("adopt", ["data", "Parameter", "asarray", "register_buffer"])
def test_a_numpy_array_a_weight_adopted_without_a_copy_is_never_kept_packed(packs, adopt):
    fc, forward = _layer()
    mine = _new_weight(11)
    if adopt == "data":
        fc.weight.data = mine
    elif adopt == "Parameter":
        fc.weight = nn.Parameter(mine)
    elif adopt == "asarray":
        fc.weight.data = rt.asarray(mine)
    else:
        del fc.weight                            # the weight a buffer (a frozen layer), from the caller's array
        fc.register_buffer("weight", mine)
    assert np.shares_memory(fc.weight.array, mine)
    x = _x()
    for seed in range(3):
        _check(forward, fc, x)
        mine[:, seed] = 3.0
    _check(forward, fc, x)
    assert packs == []


@needs_llvm
def test_a_numpy_weight_fed_as_it_is_is_never_kept_packed(packs):
    w = _new_weight(4)
    b = np.zeros(64, np.float32)
    forward = to_static(lambda x, w, b: F.relu(F.linear(x, w, b)))
    x = _x()
    for seed in range(3):
        with rt.no_grad():
            got = forward(rt.tensor(x), w, b).numpy()
        assert same_bits(got, gemm.numpy_linear(x, w, b, True))
        w[seed] = 1.5                           # the caller's own array, written between calls
    assert packs == []


@needs_llvm
def test_an_executor_feed_is_never_kept_packed(packs):
    fc, _ = _layer()
    prog, _, _ = rt.trace(lambda x, w: F.relu(F.linear(x, w, fc.bias)),
                          [rt.InputSpec([40, 512], "float32", "x"), rt.InputSpec([64, 512], "float32", "w")])
    w, x, exe = _new_weight(5), _x(), Executor()
    for seed in range(3):
        with rt.no_grad():
            (got,) = exe.run(prog, {"x": x, "w": w})
        assert same_bits(got.numpy(), gemm.numpy_linear(x, w, fc.bias.array, True))
        w[:, seed] = -2.0
    assert packs == []


@needs_llvm
def test_kept_copies_go_with_their_weights_and_are_bounded(packs):
    run = gemm.gemm_call(FOUND)
    x, b = _x(), np.zeros(64, np.float32)
    ws = [_new_weight(s) for s in range(gemm.PACKS_KEPT + 3)]
    for w in ws:
        for _ in range(2):
            assert same_bits(run(x, w, b), gemm.numpy_linear(x, w, b, True))
        assert len(run.call.packs) <= gemm.PACKS_KEPT
    assert len(packs) == len(ws)
    del ws, w, packs[:]
    gc.collect()
    assert run.call.packs == {}


@needs_llvm
def test_threads_share_a_kept_copy_and_see_a_new_weight(packs):
    fc, forward = _layer()
    xs = [_x(s, 40 + 9 * s) for s in range(4)]
    wrong = []

    def work(x):
        for _ in range(10):
            with rt.no_grad():
                got = forward(rt.tensor(x)).numpy()
            if not same_bits(got, gemm.numpy_linear(x, fc.weight.array, fc.bias.array, True)):
                wrong.append(x.shape)

    for seed in (0, 1):
        fc.weight.set_value(_new_weight(seed))
        threads = [threading.Thread(target=work, args=(x,)) for x in xs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not wrong
    assert len(packs) >= 2        # each weight kept packed (per plan; threads racing to pack one may each pack it)


@needs_llvm
@pytest.mark.parametrize("by_objects", [True, False])
def test_both_entries_and_both_weight_forms_give_numpy_bits(packs, monkeypatch, by_objects):
    """The kernel called with the arrays (data pointers read natively) or with their addresses, on the
    weight as it is or packed whole: NumPy's bits each way."""
    if not by_objects:
        monkeypatch.setattr(gemm.kernel(), "gemm_objects", None)
    elif gemm.kernel().gemm_objects is None:
        pytest.skip("NumPy's array struct is not the layout the native tier reads")
    call, rng = gemm.Call(FOUND), np.random.default_rng(6)
    for rows in (40, 41, 300):
        x = rng.standard_normal((rows, 512)).astype(np.float32)
        w, b = _new_weight(rows), rng.standard_normal(64).astype(np.float32)
        want = gemm.numpy_linear(x, w, b, True)
        for packed in (None, call.pack(w)):
            assert same_bits(gemm.multiply(FOUND, x, w, b, np.empty((rows, 64), np.float32), call, packed), want)


@needs_llvm
def test_a_kept_weight_marked_later_is_packed_inside_each_call_again(packs):
    run = gemm.gemm_call(FOUND)
    x, b, w = _x(), np.zeros(64, np.float32), _new_weight(12)
    for _ in range(3):
        assert same_bits(run(x, w, b), gemm.numpy_linear(x, w, b, True))
    assert run.call.packs[id(w)][1] is not None
    buffers.escape(w)                   # as `.numpy()` does: a write may follow at any time
    w[:7] = 0.5
    assert same_bits(run(x, w, b), gemm.numpy_linear(x, w, b, True))
    assert id(w) not in run.call.packs  # the kept copy is let go
    w[7:9] = -1.0
    assert same_bits(run(x, w, b), gemm.numpy_linear(x, w, b, True))
    assert len(packs) == 1


@needs_llvm
@pytest.mark.parametrize("k,n,bias,relu", [(512, 64, True, True), (512, 64, False, False), (37, 130, True, False),
                                           (1344, 48, False, True), (100, 41, True, True), (64, 70, True, True),
                                           (1024, 33, False, False)])
def test_a_kept_weight_runs_through_the_builtin_entry_with_numpy_bits_and_one_reference(packs, k, n, bias, relu):
    """From a weight's second call the product is one builtin call (`dy2s_gemm_fast`: no ctypes), for
    every row tail, odd k and n (K blocks, masked column tails), with and without a bias and ReLU; what it
    returns is a new array the caller alone holds. (Weights of buffers.WATCHED elements or more: smaller
    ones are never kept packed.)"""
    import sys
    found = (k, n, bias, relu)
    if gemm.check(found) or gemm.kernel().fast is None:
        pytest.skip(f"not native here: {gemm.check(found) or 'another array struct layout'}")
    rng = np.random.default_rng(k + n)
    run, w = gemm.gemm_call(found), rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32) if bias else None
    low = gemm.smallest_rows(k, n)
    for rows in (low, low, low + 1, low + 7, 3 * low + 5):
        x = (rng.standard_normal((rows, k)) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)
        got = run(x, w, b)
        assert same_bits(got, gemm.numpy_linear(x, w, b, relu)), (found, rows)
        assert sys.getrefcount(got) == 2           # `got` and getrefcount's argument: no leak, no stray free
    assert run.call.fast is gemm.kernel().fast[0] and run.call.packs[id(w)][1] is not None
    calls = []
    fast = run.call.fast
    run.call.fast = lambda *args: calls.append(args) or fast(*args)
    assert same_bits(run(x, w, b), gemm.numpy_linear(x, w, b, relu)) and len(calls) == 1


@needs_llvm
def test_the_builtin_entry_releases_the_gil_while_the_product_runs(packs):
    """Another thread runs while one kept-weight product does (as the ctypes entry allowed). Python's
    switch interval made long, this thread gives the GIL up only where C code releases it."""
    import sys
    run, w = gemm.gemm_call(FOUND), _new_weight(21)
    if gemm.kernel().fast is None:
        pytest.skip("NumPy's array struct is not the layout the native tier reads")
    x, b = _x(2, rows=6000), np.zeros(64, np.float32)
    for _ in range(2):                      # packed whole on its second call
        run(x, w, b)
    fast, packed, params = run.call.fast, run.call.packs[id(w)][1], run.call.fast_params
    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0)                   # (gives the GIL up between ticks)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    thread = threading.Thread(target=count)
    thread.start()
    during = []
    try:
        for _ in range(20):
            out = np.empty((6000, 64), np.float32)
            before = ticks[0]
            fast(x, packed, out, b, params)
            during.append(ticks[0] - before)
            if during[-1] > 0:
                break
            time.sleep(0.001)
    finally:
        stop.set()
        sys.setswitchinterval(interval)
        thread.join()
    assert max(during) > 0
