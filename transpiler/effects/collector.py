"""One collector per trace of a static function: the journal of every place it writes outside its graph.

The journal is `written` (cell identity -> (cell, value before)), handed to
`tracing.record` so the trace notes there each cell it leaves holding a
traced value (converted code writing under tensor control flow, a Tensor
written in place). Writes that go through no cell are found by comparing
with what the collector saw before the trace: objects (`objects`), globals
and closure cells (`outer_names`), list/dict arguments. After a trace that
succeeds they join the journal (`collect`); after one that fails every place
in it gets its old value back (`undo`); `state_writes` sorts the journal by
the lifetimes of the objects holding the places and makes the store-after-run.
"""
import contextlib

from runtime import rng, tracing
from runtime.tracing import put_back

from . import objects, outer_names
from .lifetimes import Lifetimes
from .store import StateWrites

class Effects:
    """What one trace of `fn` writes outside its graph: found, undone, or stored after each run."""

    def __init__(self, fn, instance, args, kwargs, call):
        """Snapshot, before the trace, what it may write: `args, kwargs` are the call's as the trace gets
        them, `call` the caller's own (args, kwargs), whose lists and dicts get the function's writes."""
        self.fn = fn
        self.objects = objects.snapshot({**outer_names.user_objects(fn),
                                         **objects.argument_objects(fn, instance, args, kwargs)})
        self.given = len(self.objects)       # the trace adds the objects whose methods it calls (some it makes)
        self.outer = outer_names.snapshot(fn)
        self.arguments = objects.ArgumentWrites(fn, instance, call)
        self.written = {}                    # the journal: cell identity -> (cell, value before)
        self.generator = rng.snapshot()

    @contextlib.contextmanager
    def collecting(self):
        """While the trace runs: the objects of the methods it calls are snapshotted too (`note_instance`)."""
        with tracing.frame(snapshot=self.objects):     # the trace context's frame holds it (this thread's)
            yield self

    def traced_with(self, args, kwargs):
        """Called with the rebuilt arguments just before the function runs."""
        self.arguments.traced_with(args, kwargs)

    def collect(self):
        """After a trace that succeeded: the places it wrote without a cell join the journal."""
        objects.register_writes(self.written, self.objects)
        outer_names.register(self.fn, self.outer, self.written)
        self.arguments.register(self.written)

    def undo(self):
        """After a trace that failed (any exception): every place it wrote, and the random generator, as before."""
        objects.register_writes(self.written, self.objects)
        outer_names.register(self.fn, self.outer, self.written, traced_only=False)
        put_back(self.written)
        rng.restore(self.generator)

    def state_writes(self, program, param_tensors, roots, made):
        """The store-after-run of the journal's places (`store.StateWrites`). `roots`: what the call could
        reach before it ran besides the objects and outer names snapshotted here; `made`: the Tensors the
        trace made (`tracing.Recording.made`)."""
        seen = (*roots, [entry[1:] for entry in self.objects[:self.given]], self.outer)
        return StateWrites(program, self.written, param_tensors, Lifetimes(seen, made))


def note_instance(obj):
    """A method of obj is about to run in the trace: snapshot obj first (a sub-layer's `self.n = ...` is a
    write of the Program like one on the function's own `self`), once per object."""
    snap = tracing.current_frame().snapshot
    if snap is not None and not any(entry[1] is obj for entry in snap):
        snap.extend(objects.snapshot({"self": obj}))
