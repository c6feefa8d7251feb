"""Compiled native code kept on disk, so a later process runs native from its first call.

One file per compiled region, named by the SHA-256 of its key:

    DY2SN1\\n  sha256(body) (32 bytes)  body = len(meta) (4 bytes) + meta (JSON) + object code + shared library

`meta` holds the whole key (so a hash collision or a renamed file is not loaded), the function's name
and the lengths of the two payloads. The key is the region's own key (dtypes, ranks, steps) plus
`environment()`: the CPU's name and features, the Python, NumPy, llvmlite and dy2static builds and
the native emitter's source, so code compiled for another CPU or by another emitter is never found.
An entry whose checksum or key does not match is ignored (and replaced by the next compile): never
loaded, never an error. Nothing from a file runs except the object code we wrote (`objects.load`).

Location: DY2STATIC_NATIVE_CACHE names the folder ('0', 'off' or '' turns the cache off); by default
the platform's cache folder: $XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS,
%LOCALAPPDATA% on Windows, then `dy2static/native`. Writes are atomic (`atomic_files.replacing`).
"""
import hashlib
import json
import os
import struct
import sys
import threading
from importlib.util import find_spec as _find_spec

import numpy as np

from ..atomic_files import replacing

ENV = "DY2STATIC_NATIVE_CACHE"
MAGIC = b"DY2SN1\n"
_OFF = ("0", "off", "false", "no", "")
_STATE = {}
_LOCK = threading.Lock()
BLAS_SETTINGS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "GOTO_NUM_THREADS")


def directory():
    """The cache folder (str), or None when the cache is off."""
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in _OFF else os.path.abspath(os.path.expanduser(chosen))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "dy2static", "native")


def environment():
    """What besides the region decides the machine code: CPU, builds, the emitter's source (computed once)."""
    if "environment" not in _STATE:
        _STATE["environment"] = {"cpu": _cpu(), "python": sys.version, "platform": sys.platform,
                                 "numpy": [np.__version__, os.path.dirname(np.__file__)],
                                 "blas": _blas_settings(), "llvmlite": _llvmlite_build(), "dy2static": _emitter()}
    return _STATE["environment"]


def entry_key(region_key):
    """The full key of a region (a string): its own key and the environment; None when the cache is off
    (nothing is read or written, and the environment is not computed)."""
    if directory() is None:
        return None
    return json.dumps({"region": region_key, "environment": environment()}, sort_keys=True)


def lookup(region_key):
    """`read(entry_key(region_key))`, without making the key where nothing can be stored: the cache off, or
    its folder not made yet (a fresh install: its first calls compute no environment and write nothing)."""
    if not may_hold_entries():
        return None
    return read(entry_key(region_key))


def may_hold_entries():
    """Whether the cache is on and its folder exists (a fresh install has none: nothing to look up)."""
    folder = directory()
    return folder is not None and os.path.isdir(folder)


def remembered(test, run, passed):
    """`run()`, a self-test returning `passed` when it passes, unless it passed before in this environment
    (the entries' key: CPU, builds, BLAS threads): its verdicts are kept on disk, one file an environment,
    so a later process loads a cached region without running its tests again (~3 ms of its first call).
    Only passes are kept; with the cache off every test runs."""
    if directory() is None:
        return run()
    name, path = json.dumps(test, sort_keys=True), _verdicts_path()
    if name in _passed(path):
        return passed
    result = run()
    if result == passed:
        with _LOCK:
            known = _passed(path)
            known.add(name)
            _write_json(path, sorted(known | _verdicts_on_disk(path)))     # another process's passes kept
    return result


def _passed(path):
    """The verdicts file's passes, read once per process (per folder and environment)."""
    if ("passed", path) not in _STATE:
        _STATE[("passed", path)] = _verdicts_on_disk(path)
    return _STATE[("passed", path)]


def _verdicts_on_disk(path):
    found = _read_json(path)
    return {t for t in found if isinstance(t, str)} if isinstance(found, list) else set()


def _verdicts_path():
    digest = hashlib.sha256(json.dumps(environment(), sort_keys=True).encode()).hexdigest()[:40]
    return os.path.join(directory(), f"selftests-{digest}.json")


def _read_json(path):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode())
    except (OSError, ValueError):
        return None


def _write_json(path, value):
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with replacing(path) as temp:
            with open(temp, "w") as f:
                json.dump(value, f)
    except OSError:
        pass


def read(key):
    """(meta, object code, shared library or None) stored under key, or None: missing, cache off,
    unreadable, checksum or key not matching."""
    path = _path(key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = len(MAGIC)
    if data[:head] != MAGIC or hashlib.sha256(data[head + 32:]).digest() != data[head:head + 32]:
        return None
    body = data[head + 32:]
    try:
        (size,) = struct.unpack("<I", body[:4])
        meta = json.loads(body[4:4 + size].decode())
        if meta.get("key") != key:
            return None
        start = 4 + size
        obj = body[start:start + meta["object"]]
        shared = body[start + meta["object"]:start + meta["object"] + meta["shared"]] or None
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    if len(obj) != meta["object"] or len(shared or b"") != meta["shared"]:
        return None
    return meta, obj, shared


def write(key, meta, obj, shared=None):
    """Store an entry (atomically); False when the cache is off or the folder is not writable."""
    path = _path(key)
    if path is None:
        return False
    meta = dict(meta, key=key, object=len(obj), shared=len(shared or b""))
    encoded = json.dumps(meta).encode()
    body = struct.pack("<I", len(encoded)) + encoded + obj + (shared or b"")
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with replacing(path) as temp:
            with open(temp, "wb") as f:
                f.write(MAGIC + hashlib.sha256(body).digest() + body)
    except OSError:
        return False
    return True


def _path(key):
    folder = directory()
    if folder is None or key is None:
        return None
    return os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:40] + ".dy2n")


def _cpu():
    """The CPU's model and feature flags, read without loading llvmlite where the OS says them
    (/proc/cpuinfo), else llvmlite's host CPU name and features."""
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read(1 << 16).split("\n\n")[0]
        fields = dict(line.split(":", 1) for line in first.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        wanted = [fields.get(k, "") for k in ("vendor_id", "cpu family", "model", "model name", "flags",
                                              "Features", "CPU implementer", "CPU part")]
        if any(wanted):
            return hashlib.sha256("|".join(wanted).encode()).hexdigest()
    except OSError:
        pass
    try:
        import llvmlite.binding as llvm
        return f"{llvm.get_host_cpu_name()}|{llvm.get_host_cpu_features().flatten()}"
    except Exception:       # no llvmlite: nothing will be compiled or loaded anyway
        return "unknown"


def _blas_settings():
    """What may change how NumPy's BLAS splits a product (threads, kernel choice): the variables OpenBLAS
    and MKL read and the CPUs this process may run on (OpenBLAS's default thread count)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [cpus] + [os.environ.get(name) for name in BLAS_SETTINGS]


def _llvmlite_build():
    """llvmlite's library, by size and time (no import: importing llvmlite costs ~40 ms)."""
    spec = _find_spec("llvmlite")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    folder = os.path.join(list(spec.submodule_search_locations)[0], "binding")
    try:
        return sorted(f"{n}:{os.stat(os.path.join(folder, n)).st_size}:{os.stat(os.path.join(folder, n)).st_mtime_ns}"
                      for n in os.listdir(folder) if n.startswith("libllvmlite"))
    except OSError:
        return "unknown"


def _emitter():
    """The native tier's own source, hashed: code written by another version of the emitter is not found.
    Hashing it reads ~200 KB (~10 ms on a loaded machine, on a fresh process's first call), so the hash
    is kept in the cache folder under a fingerprint of the files (name, size, mtime, ctime, inode: any
    write changes the ctime) and read back by every later process with the same files."""
    here = os.path.dirname(os.path.abspath(__file__))
    names = sorted(name for name in os.listdir(here) if name.endswith(".py"))
    stats = [os.stat(os.path.join(here, name)) for name in names]
    fingerprint = json.dumps([here] + [[n, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
                                       for n, st in zip(names, stats)])
    folder = directory()
    memo = None if folder is None else os.path.join(
        folder, "emitter-" + hashlib.sha256(fingerprint.encode()).hexdigest()[:40] + ".sha256")
    try:
        with open(memo, "rb") as f:
            kept = f.read(65).decode()
        if len(kept) == 64 and set(kept) <= set("0123456789abcdef"):
            return kept
    except (OSError, TypeError, UnicodeDecodeError):      # none kept (or the cache off: memo is None)
        pass
    digest = hashlib.sha256()
    for name in names:
        with open(os.path.join(here, name), "rb") as f:
            digest.update(name.encode() + f.read())
    found = digest.hexdigest()
    if memo is not None:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            with replacing(memo) as temp:
                with open(temp, "w") as f:
                    f.write(found)
        except OSError:
            pass
    return found
