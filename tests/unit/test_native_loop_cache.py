"""Whole native loops on the disk cache (runtime/native/relocations.py, region.py): the loop's code holds no
process address (NumPy's array type, NumPy's loops and the CBLAS functions are read from a table the loader
fills), so a later process loads it and runs the loop native from its first call, with NumPy's bits."""
import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import blas, disk_cache, region as regions, relocations
from runtime.native.numpy_loops import same_bits, strided_loop
from transpiler import to_static

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built

# a fresh process: an RNN loop (BLAS products, NumPy's tanh loop, a sum in reduce form, a tensor array)
CHILD = textwrap.dedent("""
    import json, sys, numpy as np
    import runtime as rt
    from runtime import native
    from transpiler import to_static
    rng = np.random.default_rng(0)
    u = rt.tensor(rng.standard_normal((16, 24)).astype("float32"))
    w = rt.tensor((rng.standard_normal((24, 24)) * 0.3).astype("float32"))
    b = rt.tensor(rng.standard_normal(24).astype("float32"))
    def rnn(x):
        h = rt.zeros((1, 24), dtype="float32")
        hs = []
        i = 0
        while i < 20 and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            hs.append(h)
            i += 1
        return h, i, rt.stack(hs)
    x = rt.tensor(rng.standard_normal((20, 1, 16)).astype("float32"))
    program = to_static(rnn).get_program(x)
    feed = {program.inputs[0].name: x}
    plan = rt.Executor(native=True).compile(program)
    loops = [why for name, why in plan.native_regions if name.startswith("while")]
    llvmlite = "llvmlite" in sys.modules
    got = [np.asarray(t.numpy()).tolist() for t in plan.run(feed)]
    stats = native.stats()
    native.wait()
    want = [np.asarray(t.numpy()).tolist() for t in rt.Executor(native=False).run(program, feed)]
    print(json.dumps({"loops": loops, "llvmlite": llvmlite, "got": got, "want": want,
                      "from_disk": stats["from_disk"], "declined": stats["declined_calls"]}))
""")


def _child(folder, mode):
    """Run CHILD (a file: dy2static converts functions defined in files) with its cache in folder/cache."""
    script = folder / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, DY2STATIC_NATIVE_CACHE=str(folder / "cache"), PYTHONPATH=ROOT, DY2STATIC_NATIVE=mode,
               DY2STATIC_NATIVE_THRESHOLD_MS="0")
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for got, want in zip(result["got"], result["want"]):
        assert same_bits(np.array(got, np.float32), np.array(want, np.float32))
    return result


@needs_llvm
def test_a_later_process_runs_the_whole_loop_native_from_its_first_call(tmp_path):
    first = _child(tmp_path, "sync")            # compiled before the first call, written to the cache
    assert first["loops"] == ["native"] and first["from_disk"] == 0
    assert any(p.endswith(".dy2n") for p in os.listdir(tmp_path / "cache"))
    second = _child(tmp_path, "1")              # background mode: native at once only if the disk has it
    assert second["loops"] == ["native"]
    assert second["from_disk"] >= 1 and second["declined"] == 0
    if sys.platform.startswith("linux"):        # a shared library, loaded by dlopen: llvmlite never imported
        assert second["llvmlite"] is False


@needs_llvm
def test_a_damaged_loop_entry_is_compiled_again_not_loaded(tmp_path):
    _child(tmp_path, "sync")
    for name in os.listdir(tmp_path / "cache"):
        path = tmp_path / "cache" / name
        data = bytearray(path.read_bytes())
        data[-64] ^= 0x40
        path.write_bytes(bytes(data))
    again = _child(tmp_path, "1")
    assert again["loops"] == ["compiling"] and again["from_disk"] == 0


def _loop_program(n=6):
    w = rt.tensor(np.linspace(-1, 1, n * n, dtype=np.float32).reshape(n, n))

    def f(x):
        i = 0
        while i < 5 and x.sum() > -1e30:
            x = rt.exp(rt.tanh(x @ w)) - x.sum()
            i += 1
        return x

    return to_static(f).get_program(rt.tensor(np.ones((2, n), np.float32)))


@needs_llvm
def test_the_loops_code_holds_no_process_address(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    program = _loop_program(7)
    (op,) = [o for o in program.global_block.ops if o.type == "while"]
    region = regions.analyse(op)
    kernel = regions.region_job(region)()
    assert not isinstance(kernel, str), kernel
    meta, obj, shared = kernel.saved
    kinds = {d[0] for d in meta["relocations"]}
    assert kinds == {"ndarray", "loop", "blas", "capi"}      # capi: its Python entry's calls (Py_IncRef, ...)
    capi = [relocations.resolve(d)[0] for d in meta["relocations"] if d[0] == "capi"]
    for address in [id(np.ndarray), blas.symbol("sgemm").address] + capi:
        assert address.to_bytes(8, "little") not in obj
    assert disk_cache.read(disk_cache.entry_key(region.key)) is not None


def test_descriptors_find_the_same_addresses():
    loop = strided_loop(np.tanh, [np.dtype("float32")] * 2)
    gemm = blas.symbol("dgemm")
    for thing, field, address in [(np.ndarray, None, id(np.ndarray)), (loop, "loop", loop.loop),
                                  (loop, "context", loop.context or 0), (gemm, None, gemm.address)]:
        descriptor = relocations.describe(thing, field)
        assert json.loads(json.dumps(descriptor)) == descriptor
        assert relocations.resolve(descriptor)[0] == address
    assert relocations.resolve(["loop", "tanh", ["<f4", "<f4"], "nonsense"]) is None
    assert relocations.resolve(["blas", "no_such_function"]) is None
    with pytest.raises(ValueError):
        relocations.describe(object())


def test_install_fills_the_table_and_says_what_is_missing():
    slot = ctypes.c_uint64(0)
    keep = relocations.install(ctypes.addressof(slot), [["ndarray"], ["blas", "sgemv"]])
    table = (ctypes.c_uint64 * 2).from_address(slot.value)
    assert list(table) == [id(np.ndarray), blas.symbol("sgemv").address] and keep[0] is not None
    assert "not available" in relocations.install(ctypes.addressof(slot), [["loop", "no_ufunc", [], "loop"]])


def test_code_that_names_an_address_is_not_kept():
    loop = strided_loop(np.exp, [np.dtype("float64")] * 2)
    assert relocations.embedded(f"call i64 inttoptr (i64 {loop.loop} to ...)", [loop])
    assert not relocations.embedded(f"call i64 inttoptr (i64 {loop.loop}7 to ...)", [loop])
    assert not relocations.embedded("%x = load i64, i64* %table", [loop])


@needs_llvm
def test_the_gil_is_released_while_a_loop_runs(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    program = _loop_program(5)
    (op,) = [o for o in program.global_block.ops if o.type == "while"]
    kernel = regions.region_job(regions.analyse(op))()
    assert not kernel.cfunc._flags_ & ctypes._FUNCFLAG_PYTHONAPI      # CFUNCTYPE: ctypes drops the GIL
    relocated = kernel.saved[0]["relocations"]      # and its builtin entry (what plans call) drops it too
    assert ["capi", "PyEval_SaveThread"] in relocated and ["capi", "PyEval_RestoreThread"] in relocated
