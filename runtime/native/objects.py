"""Machine code as bytes: a module emitted as an object file, linked into a shared library where a
linker is at hand, and loaded back into the process, so what the disk cache keeps is what runs.

The shared library loads with `dlopen` (through an anonymous in-memory file, after the caller checked
the bytes: what is loaded is what was checked) and needs no llvmlite, so a process whose regions are
all cached never imports it (~40 ms). Without a linker (`ld`, Linux only here) the object code is
loaded by llvmlite's MCJIT (`llvm.Engine.load_object`). Process addresses (NumPy's array type, its
loops) are not in the code: each function reads them from a table the loader fills.
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

from .llvm import engine


def link(obj):
    """A shared library made of the object code, or None (no linker, not Linux, or it failed)."""
    ld = shutil.which("ld") if sys.platform.startswith("linux") and hasattr(os, "memfd_create") else None
    if ld is None:
        return None
    with tempfile.TemporaryDirectory(prefix="dy2static-native-") as folder:
        src, dst = os.path.join(folder, "region.o"), os.path.join(folder, "region.so")
        with open(src, "wb") as f:
            f.write(obj)
        try:
            subprocess.run([ld, "-shared", "-o", dst, src], check=True, timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(dst, "rb") as f:
                return f.read()
        except (OSError, subprocess.SubprocessError):
            return None


def load(obj, shared, names):
    """({name: address}, what must stay alive) for the code, or None when it cannot be loaded here."""
    if shared is not None and hasattr(os, "memfd_create"):
        # the file stays open: dlopen knows a library by its path, and a reused /proc/self/fd/N would
        # be answered with the library loaded before under that name
        fd = os.memfd_create("dy2static-native", getattr(os, "MFD_CLOEXEC", 0))
        try:
            os.write(fd, shared)
            library = ctypes.CDLL(f"/proc/self/fd/{fd}")
            return {n: ctypes.addressof(ctypes.c_char.in_dll(library, n)) for n in names}, (library, fd)
        except (OSError, ValueError):
            os.close(fd)
    eng = engine()
    if eng is None:
        return None
    return eng.load_object(obj, names)
