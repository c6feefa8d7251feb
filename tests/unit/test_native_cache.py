"""The native tier's disk cache (runtime/native/disk_cache.py): a later process runs native from its first
call; a damaged, foreign or switched-off entry is never loaded and never an error."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from runtime import native
from runtime.native import disk_cache
from runtime.native.numpy_loops import same_bits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built

# a fresh process: trace a GELU chain, build its native plan, say how its region started and what it gave
CHILD = textwrap.dedent("""
    import json, sys, numpy as np
    import runtime as rt
    from runtime import native
    def gelu(x):
        return 0.5 * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
    program, _, _ = rt.trace(gelu, [rt.InputSpec([-1, 37], "float32", name="x")])
    plan = rt.Executor(native=True).compile(program)
    started = [r[1] for r in plan.native_regions]
    llvmlite_loaded = "llvmlite" in sys.modules
    x = np.linspace(-6, 6, 5 * 37, dtype=np.float32).reshape(5, 37)
    out = plan.run({"x": x})[0].numpy()
    native.wait()
    print(json.dumps({"started": started, "llvmlite": llvmlite_loaded, "out": out.tolist(),
                      "want": rt.Executor(native=False).run(program, {"x": x})[0].numpy().tolist()}))
""")


def _child(cache, sync=False):
    env = dict(os.environ, DY2STATIC_NATIVE_CACHE=str(cache), PYTHONPATH=ROOT,
               DY2STATIC_NATIVE="sync" if sync else "1",
               DY2STATIC_NATIVE_THRESHOLD_MS="0")
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    got, want = np.array(result["out"], np.float32), np.array(result["want"], np.float32)
    assert same_bits(got, want)
    return result


def _entries(cache):
    return sorted(p for p in os.listdir(cache) if p.endswith(".dy2n")) if os.path.isdir(cache) else []


@needs_llvm
def test_a_later_process_runs_native_from_its_first_call_without_llvmlite(tmp_path):
    first = _child(tmp_path)
    assert first["started"] == ["compiling"]            # empty cache: compiled in the background
    assert len(_entries(tmp_path)) == 1
    second = _child(tmp_path)
    assert second["started"] == ["native"]
    if sys.platform.startswith("linux") and shutil.which("ld"):     # a shared library: loaded by dlopen
        assert second["llvmlite"] is False


@needs_llvm
@pytest.mark.parametrize("damage", ["flip a byte of the code", "truncate", "flip a byte of the checksum",
                                    "another key's entry"])
def test_a_damaged_or_foreign_entry_is_recompiled_not_loaded(tmp_path, damage):
    _child(tmp_path, sync=True)
    (name,) = _entries(tmp_path)
    path = tmp_path / name
    data = bytearray(path.read_bytes())
    if damage == "flip a byte of the code":
        data[-100] ^= 0x40
    elif damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "flip a byte of the checksum":
        data[len(disk_cache.MAGIC) + 3] ^= 1
    path.write_bytes(bytes(data))
    if damage == "another key's entry":         # a valid entry, under the name of a key it is not for
        os.rename(path, tmp_path / ("0" * 40 + ".dy2n"))
    result = _child(tmp_path)
    assert result["started"] == ["compiling"]           # not loaded: compiled again, in the background
    assert same_bits(np.array(result["out"], np.float32), np.array(result["want"], np.float32))
    assert _child(tmp_path)["started"] == ["native"]    # the entry was written again, whole


def test_read_checks_checksum_and_key(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    assert disk_cache.write("key one", {"name": "f"}, b"object code", b"library")
    meta, obj, shared = disk_cache.read("key one")
    assert (meta["name"], obj, shared) == ("f", b"object code", b"library")
    assert disk_cache.read("key two") is None
    (entry,) = tmp_path.iterdir()
    os.rename(entry, disk_cache._path("key two"))       # the right bytes under another key's name
    assert disk_cache.read("key two") is None
    os.rename(disk_cache._path("key two"), entry)
    data = bytearray(entry.read_bytes())
    for at in range(len(data)):                          # any one byte changed: never read
        data[at] ^= 0x10
        entry.write_bytes(bytes(data))
        assert disk_cache.read("key one") is None, at
        data[at] ^= 0x10
    entry.write_bytes(bytes(data))
    assert disk_cache.read("key one") is not None


@pytest.mark.parametrize("value", ["0", "off", ""])
def test_the_cache_can_be_turned_off(tmp_path, monkeypatch, value):
    monkeypatch.setenv(disk_cache.ENV, value)
    assert disk_cache.directory() is None
    assert disk_cache.write("k", {}, b"x") is False
    assert disk_cache.read("k") is None


def test_with_the_cache_off_no_key_is_made(monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, "off")
    monkeypatch.setattr(disk_cache, "environment", lambda: pytest.fail("the environment was computed"))
    assert disk_cache.entry_key("region") is None
    assert disk_cache.read(None) is None and disk_cache.write(None, {}, b"x") is False
    assert disk_cache.lookup("region") is None


def test_a_lookup_in_a_cache_folder_not_made_yet_makes_no_key_and_writes_nothing(tmp_path, monkeypatch):
    """A fresh install's first calls: no environment computed (its emitter hash would be written), no folder."""
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "not yet"))
    monkeypatch.setattr(disk_cache, "environment", lambda: pytest.fail("the environment was computed"))
    assert disk_cache.lookup("region") is None
    assert list(tmp_path.iterdir()) == []


def _child_env(**changes):
    """This process's environment for a child, with `changes` (None: the variable removed)."""
    env = dict(os.environ, PYTHONPATH=ROOT, DY2STATIC_NATIVE="1", DY2STATIC_NATIVE_THRESHOLD_MS="0")
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


@needs_llvm
@pytest.mark.parametrize("home", ["read-only", "not a folder"])
def test_an_unwritable_default_location_is_skipped_silently(tmp_path, home):
    """The default folder under a HOME that cannot hold it: the tier compiles and runs, no warning, no
    error, nothing written (as root a read-only mode does not stop writes: a HOME that is a file does)."""
    if home == "read-only":
        place = tmp_path / "home"
        place.mkdir()
        place.chmod(0o555)
    else:
        place = tmp_path / "home"
        place.write_text("")
    env = _child_env(DY2STATIC_NATIVE="sync", HOME=str(place), DY2STATIC_NATIVE_CACHE=None, XDG_CACHE_HOME=None)
    try:
        done = subprocess.run([sys.executable, "-W", "error", "-c", CHILD], env=env, capture_output=True,
                              text=True, timeout=300)
    finally:
        if place.is_dir():
            place.chmod(0o755)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["started"] == ["native"]
    assert same_bits(np.array(result["out"], np.float32), np.array(result["want"], np.float32))


@needs_llvm
def test_two_processes_writing_the_same_entry_leave_one_whole_entry(tmp_path):
    """Two processes compile the same region at once into one cache: both run, the entry is whole (one
    writer's, renamed into place), no temporary is left, and a third process runs native from it."""
    env = _child_env(DY2STATIC_NATIVE="sync", DY2STATIC_NATIVE_CACHE=str(tmp_path))
    children = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert same_bits(np.array(result["out"], np.float32), np.array(result["want"], np.float32))
    assert len(_entries(tmp_path)) == 1
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert _child(tmp_path)["started"] == ["native"]


def test_a_self_test_that_passed_here_is_not_run_again(tmp_path, monkeypatch):
    """Self-test verdicts are kept on disk under the environment: a pass is remembered (by a later process
    too: the file is read afresh), a failure is not, a damaged file is as none, and with the cache off
    every test runs."""
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    runs = []

    def test(verdict):
        return lambda: runs.append(verdict) or verdict

    assert disk_cache.remembered(["t", 1], test(""), "") == ""
    assert disk_cache.remembered(["t", 1], test("never run"), "") == ""
    assert disk_cache.remembered(["t", 2], test("differs"), "") == "differs"
    assert disk_cache.remembered(["t", 2], test("differs again"), "") == "differs again"
    assert runs == ["", "differs", "differs again"]
    (verdicts,) = [p for p in tmp_path.iterdir() if p.name.startswith("selftests-")]
    assert json.loads(verdicts.read_text()) == [json.dumps(["t", 1])]
    disk_cache._STATE.pop(("passed", str(verdicts)))                    # as a later process: read from disk
    assert disk_cache.remembered(["t", 1], test("not run"), "") == "" and runs[-1] == "differs again"
    for damaged in ("[1, 2", '{"a": 1}', "[3]"):
        verdicts.write_text(damaged)
        disk_cache._STATE.pop(("passed", str(verdicts)))
        assert disk_cache.remembered(["t", 1], test(True), True) is True and runs[-1] is True
        del runs[-1]
    monkeypatch.setenv(disk_cache.ENV, "off")
    assert disk_cache.remembered(["t", 1], test("ran"), "") == "ran"


@needs_llvm
def test_a_later_process_loads_a_cached_loop_without_running_its_self_tests(tmp_path):
    """The first process runs the BLAS, reduction and NumPy-loop self-tests (and keeps their passes);
    a later one loads the cached loop native from its first call and runs none of them."""
    code = textwrap.dedent("""
        import json, numpy as np
        import runtime as rt
        from runtime import native
        from runtime.native import blas, numpy_loops, reductions
        from transpiler import to_static
        ran = []
        for module in (blas, numpy_loops, reductions):
            test = module._self_test
            module._self_test = lambda *a, _test=test, _name=module.__name__, **k: ran.append(_name) or _test(*a, **k)

        def rnn(x, h, u, n):
            i = 0
            while i < n:
                h = rt.tanh(x[i] + h @ u)
                i += 1
            return h.sum()

        rng = np.random.default_rng(0)
        args = [rt.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((5, 2, 8), (2, 8), (8, 8))]
        program = to_static(rnn).get_program(*args, rt.tensor(np.int64(5)))
        plan = rt.Executor(native=True).compile(program)
        print(json.dumps({"started": [r[1] for r in plan.native_regions], "self_tests": sorted(set(ran))}))
    """)
    script = tmp_path / "child.py"
    script.write_text(code)
    env = _child_env(DY2STATIC_NATIVE="sync", DY2STATIC_NATIVE_CACHE=str(tmp_path / "cache"))
    results = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "native" in results[0]["started"] and results[0]["self_tests"]
    assert results[1]["started"] == results[0]["started"] and results[1]["self_tests"] == []


def test_the_default_folder_follows_the_platform(monkeypatch, tmp_path):
    monkeypatch.delenv(disk_cache.ENV, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.directory() == os.path.join(str(tmp_path), "dy2static", "native")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert disk_cache.directory() == os.path.join(os.path.expanduser("~/.cache"), "dy2static", "native")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert disk_cache.directory() == os.path.join(os.path.expanduser("~/Library/Caches"), "dy2static", "native")
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path))
    assert disk_cache.directory() == os.path.join(str(tmp_path), "dy2static", "native")


def test_an_unwritable_folder_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(disk_cache.ENV, str(blocker / "cache"))
    assert disk_cache.write("k", {}, b"x") is False
    assert disk_cache.read("k") is None


def test_the_key_names_the_cpu_and_the_builds():
    environment = disk_cache.environment()
    assert set(environment) == {"cpu", "python", "platform", "numpy", "blas", "llvmlite", "dy2static"}
    assert environment["numpy"] == [np.__version__, os.path.dirname(np.__file__)]
    assert len(environment["blas"]) == 1 + len(disk_cache.BLAS_SETTINGS)      # CPUs, then the BLAS variables
    assert json.loads(disk_cache.entry_key("region"))["environment"] == environment


@needs_llvm
def test_without_a_linker_the_object_code_is_cached_and_loads_through_llvmlite(tmp_path, monkeypatch):
    from runtime.native import elementwise, objects
    from runtime.native.numpy_loops import probe_values

    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    monkeypatch.setattr(objects, "link", lambda obj: None)          # as on macOS, Windows, or no `ld`
    steps = [("multiply", {"in": 0}, 3.0 + os.getpid() % 1000 / 1024), ("tanh", {"step": 0})]   # a new chain
    inputs, out = [("float32", (-1,))], ("float32", (-1,))
    kernel = elementwise.compile_chain(inputs, out, steps)
    assert not isinstance(kernel, str), kernel
    plan = elementwise._plan(inputs, out, steps)
    plan["source"] = (inputs, out, steps)
    meta, obj, shared = disk_cache.read(disk_cache.entry_key(repr(plan["key"])))
    assert shared is None and obj
    assert elementwise._from_disk(plan, with_llvmlite=False) is None    # would need llvmlite: left to the compiler
    loaded = elementwise._from_disk(plan, with_llvmlite=True)
    x = probe_values("float32", 1000)
    got = np.empty_like(x)
    with np.errstate(all="ignore"):
        want = elementwise.reference(steps, [x])
        assert loaded.cfunc(got, x) == 0
    assert same_bits(got, want)


def test_the_emitters_source_hash_is_kept_and_read_back(tmp_path, monkeypatch):
    """A fresh process's first call does not hash the emitter's source again: the hash is kept in the cache
    folder under the files' fingerprint (size, mtime, ctime, inode) and read back while they are unchanged."""
    import hashlib

    here = os.path.dirname(os.path.abspath(disk_cache.__file__))
    want = hashlib.sha256()
    for name in sorted(n for n in os.listdir(here) if n.endswith(".py")):
        with open(os.path.join(here, name), "rb") as f:
            want.update(name.encode() + f.read())
    monkeypatch.setenv(disk_cache.ENV, "off")
    assert disk_cache._emitter() == want.hexdigest()      # the cache off: hashed each time
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    assert disk_cache._emitter() == want.hexdigest()
    (memo,) = [p for p in tmp_path.iterdir() if p.name.startswith("emitter-")]
    assert memo.read_text() == want.hexdigest()
    memo.write_text("f" * 64)                              # what a later process reads instead of hashing
    assert disk_cache._emitter() == "f" * 64
    memo.write_text("not a hash")                          # a damaged memo: hashed again and rewritten
    assert disk_cache._emitter() == want.hexdigest() and memo.read_text() == want.hexdigest()
