"""The background compiler: one daemon thread compiling native regions while their plans run on NumPy.

`submit(job, done)` queues `done(job())`; the calling thread never waits. `wait()` blocks until the
queue is empty (tests, benchmarks). DY2STATIC_NATIVE=sync compiles in the caller instead
(`in_background()` is False): every region is native from its first call, which pays the compile.
The thread is a daemon: at exit, queued jobs are dropped and the one running is not waited for, except
while it is inside an LLVM call (`llvm.GATE`: exit's C++ destructors would abort that call, and the process).
A forked child (`os.fork`, multiprocessing's fork) has no compiler thread: it starts its own on its next
submit, with a fresh queue, taking over the jobs its parent had queued; where the parent was compiling
at the fork, LLVM's and the compile's locks may be held in the child for good, so the child compiles
nothing (`done` gets why at once: those regions run on NumPy there) and its `wait()` never waits.
"""
import atexit
import os
import queue
import threading

_QUEUE = queue.Queue()
_STARTED = []
_LOCK = threading.Lock()
_STOPPING = threading.Event()
_RUNNING = []           # [job] while the thread runs one (read at a fork)
_FORKED_MID_COMPILE = []    # [why] in a child forked while its parent compiled
FORKED = "not compiled: the process forked while its parent was compiling (LLVM's state is unsafe here)"


def in_background():
    """Whether new regions compile in the background thread (not with DY2STATIC_NATIVE=sync; always in a
    child forked mid-compile, whose `submit` then says why it compiles nothing: no caller may wait on a
    lock its parent's compiler thread held)."""
    return os.environ.get("DY2STATIC_NATIVE", "").strip() != "sync" or bool(_FORKED_MID_COMPILE)


def submit(job, done):
    if _FORKED_MID_COMPILE:
        done(_FORKED_MID_COMPILE[0])
        return
    _QUEUE.put((job, done))
    _ensure_thread()


def wait():
    """Block until every region submitted so far has compiled (or failed to)."""
    if _QUEUE.unfinished_tasks:         # queued in a parent before a fork: this process's thread runs them
        _ensure_thread()
    _QUEUE.join()


def _ensure_thread():
    if not _STARTED:
        with _LOCK:
            if not _STARTED:
                threading.Thread(target=_work, name="dy2static-native-compiler", daemon=True).start()
                _STARTED.append(True)


def _work():
    while True:
        job, done = _QUEUE.get()
        try:
            if not _STOPPING.is_set():
                _RUNNING.append(job)
                try:
                    result = job()
                except Exception as e:          # a compiler failure keeps the region on NumPy
                    result = f"compile failed: {type(e).__name__}: {e}"
                finally:
                    _RUNNING.clear()
                done(result)
        finally:
            _QUEUE.task_done()


def _after_fork_in_child():
    """The child of a fork: only the forking thread exists, so no compiler thread; a fresh queue and lock
    (the parent's may be held), holding the jobs the parent had queued (its thread starts on demand)."""
    global _QUEUE, _LOCK
    queued = list(_QUEUE.queue)     # one thread now: no lock needed to read it
    _QUEUE, _LOCK = queue.Queue(), threading.Lock()
    _STARTED.clear()
    if _RUNNING:
        _RUNNING.clear()
        _FORKED_MID_COMPILE.append(FORKED)
        return
    for item in queued:
        _QUEUE.put(item)


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _stop():
    _STOPPING.set()
