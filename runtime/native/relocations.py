"""The process addresses a compiled loop calls or compares with, kept out of its machine code.

NumPy's array type, NumPy's strided loops (function, context, auxdata) and the CBLAS functions NumPy
links live at other addresses in every process. A function that names them as constants could not be
kept on disk, so the loop emitter names each by a descriptor (JSON data saying how any process finds
it) and reads it from a table: the code loads the table's address from its `{name}_table` global,
which the loader fills (`install`) after looking every descriptor up in this process:

    ["ndarray"]                          id(np.ndarray)
    ["loop", ufunc, [dtypes], field]     NumPy's strided loop for those dtypes (`numpy_loops.strided_loop`,
                                         self-tested), its 'loop', 'context' or 'auxdata'
    ["blas", name]                       the CBLAS function NumPy calls ('sgemm', ...: `blas.symbol`)
    ["capi", name]                       a CPython C API function (`CAPI`), for a kernel's Python entry
    ["numpy_api", name]                  a NumPy C API function (`NUMPY_API`: its slot in NumPy's table)
    ["none"]                             Python's None
"""
import ctypes
import re

import numpy as np

from .blas import Symbol, symbol
from .numpy_loops import StridedLoop, strided_loop

LOOP_FIELDS = ("loop", "context", "auxdata")
CAPI = ("Py_IncRef", "Py_DecRef", "PyTuple_New", "PyTuple_SetItem", "PyLong_FromLongLong", "PyLong_AsLongLong",
        "PyEval_SaveThread", "PyEval_RestoreThread", "PyErr_Occurred")
NUMPY_API = {"PyArray_DescrFromType": 45, "PyArray_Empty": 184}      # slots of NumPy's C API table (stable since 1.x)


def describe(thing, field=None):
    """The descriptor (a list) of np.ndarray, a StridedLoop's field, or a blas Symbol."""
    if thing is np.ndarray:
        return ["ndarray"]
    if isinstance(thing, StridedLoop) and field in LOOP_FIELDS:
        return ["loop", thing.ufunc.__name__, [np.dtype(d).str for d in thing.dtypes], field]
    if isinstance(thing, Symbol) and thing.name:
        return ["blas", thing.name]
    if isinstance(thing, list) and (thing == ["none"] or thing[:1] == ["capi"] and thing[1] in CAPI
                                    or thing[:1] == ["numpy_api"] and thing[1] in NUMPY_API):
        return thing
    raise ValueError(f"no way to find {thing!r} ({field}) in another process")


def resolve(descriptor):
    """(address, what must stay alive) in this process, or None where it is not available here."""
    kind = descriptor[0]
    if kind == "ndarray":
        return id(np.ndarray), np.ndarray
    if kind == "loop":
        _, name, dtypes, field = descriptor
        ufunc = getattr(np, name, None)
        loop = strided_loop(ufunc, [np.dtype(d) for d in dtypes]) if isinstance(ufunc, np.ufunc) else None
        return None if loop is None or field not in LOOP_FIELDS else (getattr(loop, field) or 0, loop)
    if kind == "blas":
        found = symbol(descriptor[1])
        return None if found is None else (found.address, found)
    if kind == "none":
        return id(None), None
    if kind == "capi" and descriptor[1] in CAPI:
        function = getattr(ctypes.pythonapi, descriptor[1], None)
        return None if function is None else (ctypes.cast(function, ctypes.c_void_p).value, function)
    if kind == "numpy_api" and descriptor[1] in NUMPY_API:
        table = _numpy_api()
        return None if table is None else (table[NUMPY_API[descriptor[1]]] or 0, table)
    return None


def _numpy_api():
    """NumPy's C API table (the `_ARRAY_API` capsule's array of function pointers), or None."""
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    capsule = getattr(getattr(core, "_multiarray_umath", None), "_ARRAY_API", None)
    if capsule is None:
        return None
    pointer = ctypes.pythonapi.PyCapsule_GetPointer
    pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        address = pointer(capsule, None)
    except (ValueError, TypeError):
        return None
    return (ctypes.c_void_p * (max(NUMPY_API.values()) + 1)).from_address(address) if address else None


def install(table_address, descriptors):
    """Fill the code's `{name}_table` global (at table_address) with a table of this process's addresses;
    what must stay alive while the code may run (the table first), or a string saying what is missing."""
    values, keep = [], []
    for descriptor in descriptors:
        found = resolve(descriptor)
        if found is None:
            return f"{descriptor} is not available in this process"
        values.append(found[0])
        keep.append(found[1])
    table = (ctypes.c_uint64 * max(len(values), 1))(*values)
    ctypes.c_uint64.from_address(table_address).value = ctypes.addressof(table)
    return [table] + keep


def embedded(text, things):
    """Whether module text names any of these objects' process addresses as a constant (code that must
    not be kept on disk: an emitter path that bypassed the table)."""
    numbers = set()
    for thing in things:
        if isinstance(thing, StridedLoop):
            numbers.update(a for a in (thing.loop, thing.context, thing.auxdata) if a)
        elif isinstance(thing, Symbol):
            numbers.add(thing.address)
    numbers.add(id(np.ndarray))
    return any(re.search(rf"(?<![0-9]){n}(?![0-9])", text) for n in numbers if n > 1 << 16)
