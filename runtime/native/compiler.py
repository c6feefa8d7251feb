"""The background compiler: one daemon thread compiling native regions while their plans run on NumPy.

`submit(job, done)` queues `done(job())`; the calling thread never waits. `wait()` blocks until the
queue is empty (tests, benchmarks). DY2STATIC_NATIVE=sync compiles in the caller instead
(`in_background()` is False): every region is native from its first call, which pays the compile.
At exit, queued jobs are dropped (the one running finishes: LLVM is not stopped half-way).
"""
import atexit
import os
import queue
import threading

_QUEUE = queue.Queue()
_STARTED = []
_LOCK = threading.Lock()
_STOPPING = threading.Event()


def in_background():
    """Whether new regions compile in the background thread (not with DY2STATIC_NATIVE=sync)."""
    return os.environ.get("DY2STATIC_NATIVE", "").strip() != "sync"


def submit(job, done):
    if not _STARTED:
        with _LOCK:
            if not _STARTED:
                threading.Thread(target=_work, name="dy2static-native-compiler", daemon=True).start()
                _STARTED.append(True)
    _QUEUE.put((job, done))


def wait():
    """Block until every region submitted so far has compiled (or failed to)."""
    _QUEUE.join()


def _work():
    while True:
        job, done = _QUEUE.get()
        try:
            if not _STOPPING.is_set():
                try:
                    result = job()
                except Exception as e:          # a compiler failure keeps the region on NumPy
                    result = f"compile failed: {type(e).__name__}: {e}"
                done(result)
        finally:
            _QUEUE.task_done()


@atexit.register
def _stop():
    _STOPPING.set()
