"""NumPy's own strided inner loops, for native code to call: the bits are NumPy's by construction.

`ufunc._resolve_dtypes_and_context` + `ufunc._get_strided_loop` (NumPy >= 1.24, NEP 43) fill a
capsule with the loop NumPy would run for those exact dtypes: a function
`int loop(context, char **data, npy_intp *dimensions, npy_intp *strides, auxdata)` and the context
and auxdata to pass it. `strided_loop` checks, once per (ufunc, dtypes), that calling it on a test
vector (contiguous and strided) gives the ufunc's own bits; a loop that needs the Python API, or
fails the check, is not used (the chain runs on NumPy).
"""
import ctypes
import threading

import numpy as np

from . import disk_cache

_CAPSULE = b"numpy_1.24_ufunc_call_info"


class _CallInfo(ctypes.Structure):
    _fields_ = [("loop", ctypes.c_void_p), ("context", ctypes.c_void_p), ("auxdata", ctypes.c_void_p),
                ("requires_pyapi", ctypes.c_bool), ("no_floatingpoint_errors", ctypes.c_bool)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_LOOP_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                              ctypes.POINTER(ctypes.c_ssize_t), ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p)


class StridedLoop:
    """One ufunc's inner loop for fixed dtypes: addresses of (loop, context, auxdata); holds the capsule."""

    def __init__(self, ufunc, dtypes, capsule, info):
        self.ufunc, self.dtypes, self.capsule = ufunc, dtypes, capsule
        self.loop, self.context, self.auxdata = info.loop, info.context, info.auxdata or 0

    def __call__(self, *arrays):
        """Run the loop over 1-d arrays (inputs then output) from Python: the self-test's way in."""
        n = len(arrays[-1])
        data = (ctypes.c_void_p * len(arrays))(*[a.__array_interface__["data"][0] for a in arrays])
        dims = (ctypes.c_ssize_t * 1)(n)
        strides = (ctypes.c_ssize_t * len(arrays))(*[a.strides[0] for a in arrays])
        return _LOOP_TYPE(self.loop)(self.context, data, dims, strides, self.auxdata)


_LOOPS = {}
_LOCK = threading.Lock()


def strided_loop(ufunc, dtypes):
    """NumPy's loop of `ufunc` for exactly `dtypes` (inputs then outputs), or None (unusable here)."""
    key = (ufunc.__name__, tuple(np.dtype(d).str for d in dtypes))
    if key not in _LOOPS:
        with _LOCK:
            if key not in _LOOPS:
                _LOOPS[key] = _fetch(ufunc, tuple(np.dtype(d) for d in dtypes))
    return _LOOPS[key]


def _fetch(ufunc, dtypes):
    try:
        resolved, capsule = ufunc._resolve_dtypes_and_context(dtypes)
        if tuple(resolved) != dtypes:
            return None
        ufunc._get_strided_loop(capsule)
        info = _CallInfo.from_address(_get_pointer(capsule, _CAPSULE))
    except Exception:           # NumPy < 1.24, or no loop for these dtypes
        return None
    if info.requires_pyapi or not info.loop:
        return None
    loop = StridedLoop(ufunc, dtypes, capsule, info)
    test = ["loop", ufunc.__name__, [d.str for d in dtypes]]
    return loop if disk_cache.remembered(test, lambda: _self_test(loop), True) else None


def probe_values(dtype, n):
    """n values of dtype covering the cases whose bits differ first: zeros of both signs, infinities,
    NaN, subnormals, extremes, then random values."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(12345)
    if dtype.kind == "f":
        info = np.finfo(dtype)
        special = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan, float(info.tiny) / 4,
                   -float(info.tiny), float(info.max), float(info.min), float(info.eps), 3.0, 20.0, -20.0, 700.0]
        rest = rng.standard_normal(n) * rng.choice([0.01, 1.0, 10.0, 100.0], n)
        values = np.concatenate([np.array(special), rest])[:n]
        with np.errstate(all="ignore"):
            return values.astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    info = np.iinfo(dtype)
    special = np.array([0, 1, info.max, info.min, 2, 3, 7], dtype=object)
    rest = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True)
    return np.concatenate([special.astype(dtype), rest.astype(dtype)])[:n]


def _self_test(loop):
    n = 301
    ins = [probe_values(d, n) for d in loop.dtypes[:loop.ufunc.nin]]
    if len(ins) == 2:
        ins[1] = np.roll(ins[1], 7)
    with np.errstate(all="ignore"):
        try:
            want = loop.ufunc(*ins, dtype=loop.dtypes[-1]) if loop.ufunc.nout == 1 else None
        except Exception:
            return False
        if want is None or want.dtype != loop.dtypes[-1]:
            return False
        for step in (1, 3):
            sub = [a[::step] for a in ins]
            got = np.empty(len(sub[0]), loop.dtypes[-1])
            if loop(*sub, got) != 0 or not same_bits(got, want[::step]):
                return False
    return True


def same_bits(a, b):
    """Equal dtype, shape and values, NaN where NaN, zeros of the same sign (NaN payloads aside)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if not np.array_equal(nan_a, nan_b):
        return False
    bits = np.dtype(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else np.dtype(f"u{a.dtype.itemsize // 2}")
    return bool(np.array_equal(a[~nan_a].view(bits), b[~nan_b].view(bits)))
