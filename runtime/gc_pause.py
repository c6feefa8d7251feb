"""`paused_gc()`: Python's cyclic garbage collector paused while a Program is optimized and compiled.

Compiling allocates tens of objects per op (clones, rewrites, generated lines) that mostly live until the
plan is made, and each of the collector's full collections meanwhile walks the whole heap, freeing
nothing of ours: ~20-25% of a 4000-op chain's first call, growing faster than the op count. Paused,
what compiling made is walked once, by the first collection after it. Nested or concurrent pauses
(threads compiling at once) end together, when the last one ends; a collector the user had turned off
stays off.
"""
import contextlib
import gc
import threading

_lock = threading.Lock()
_state = {"pauses": 0, "was_enabled": False}


@contextlib.contextmanager
def paused_gc():
    with _lock:
        if _state["pauses"] == 0:
            _state["was_enabled"] = gc.isenabled()
            gc.disable()
        _state["pauses"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["pauses"] -= 1
            if _state["pauses"] == 0 and _state["was_enabled"]:
                gc.enable()
