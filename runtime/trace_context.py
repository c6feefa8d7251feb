"""One trace context per thread: everything tracing keeps about the code running now.

A thread's `TraceContext` holds the stack of blocks being recorded into, the
Programs being recorded, and a stack of `Frame`s: what a scope of traced code
sees of its surroundings (Python's number semantics on, the open `try` bodies of
converted code, where the trace notes its reads and the objects whose methods
ran). A scope pushes a changed copy of the top frame (`frame(...)`) and drops it
on exit, however it exits; a discarded trace attempt drops the frames it left
(`runtime.tracing.rollback`). The transpiler's two services (the converted form
of a callable, the note of a place read) are attributes of the context class,
installed once (`install`).
"""
import dataclasses
import threading
from contextlib import contextmanager


@dataclasses.dataclass(frozen=True)
class Frame:
    """What traced code in one scope sees; fields named for the module that owns them."""

    python_numbers: bool = False   # ops compute what Python's operators do on numbers (`python_numbers`)
    catching: tuple = ()           # transpiler.operators: handler thunks of the converted `try` bodies open
    reads: object = None           # transpiler.guards: the Reads of the trace being recorded, or None
    snapshot: object = None        # transpiler.effects.collector: the snapshot objects join as their methods run


_OUTERMOST = Frame()


class TraceContext(threading.local):
    """Tracing state belongs to the thread that traces: another thread's eager ops are never recorded."""

    call_converter = None   # the transpiler's: the converted form of a user callable (library and converted code)
    place_reader = None     # the transpiler's: note that the trace read `container.get(name)` (guarded per call)

    def __init__(self):
        self.blocks = []           # the stack of blocks being recorded into
        self.name_hints = {}       # id(tensor) -> preferred Program name (layer parameters)
        self.traces = {}           # id(Program) -> (Program, TraceState) of the Programs being recorded
        self.frames = [_OUTERMOST]  # innermost last: see `frame`
        self.tracers = {}          # id(Variable) -> its Tracer (runtime.tracer.tracer_of): one per value while
                                   # the thread traces, dropped when the outermost recording ends

    @property
    def frame(self):
        return self.frames[-1]


_state = TraceContext()
_active = [0]                      # threads recording now: while 0, hot paths skip the thread-local lookup
_active_lock = threading.Lock()


def install(**services):
    """Install the transpiler's services (it sits above the runtime): see TraceContext."""
    for name, service in services.items():
        if name not in ("call_converter", "place_reader"):
            raise TypeError(f"install: no trace service named {name!r}")
        setattr(TraceContext, name, staticmethod(service))


def current_frame():
    return _state.frames[-1]


@contextmanager
def frame(**changes):
    """Run the block with the top frame's fields changed; the frame is dropped on exit."""
    frames = _state.frames
    depth = len(frames)
    frames.append(dataclasses.replace(frames[-1], **changes))
    try:
        yield frames[-1]
    finally:
        del frames[depth:]


@contextmanager
def python_numbers():
    """Ops traced inside compute what Python's operators compute on numbers: a weak value (a Python
    number turned symbolic) stays weak. Outside, an rt function of weak values alone returns NumPy's
    strongly typed result, as `np.abs(3)` is an int64 where `abs(3)` is an int."""
    if _state.frames[-1].python_numbers:
        yield
        return
    with frame(python_numbers=True):
        yield
