"""Places outside the graph: what a trace reads and writes that is no value of the Program.

A place is a `runtime.state` cell — an attribute, an item (a global is an item of
its module's dict), a list/dict's contents, a closure cell, or a Tensor's contents —
with read (`get`), write (`set`, noted in the trace's journal while tracing) and
store (`_store`: restore on a rollback, store after a run). This package finds
and keeps them for a static function, one module per job, bottom to top:

  aliases      a write into a traced tensor reaches the lists and dicts of converted code holding it
  lifetimes    which written places outlive a call (the object existed before it) and which are values
               of the run (the call made the object)
  objects      places written through Python objects without a cell, found by comparing snapshots
  outer_names  globals and closure variables the trace rebinds, and global lists/dicts it changes
  calls        what a converted function writes through its parameters, declared where a construct calls it
  store        after each run, the Program's values stored into the places (`StateWrites`)
  collector    one collector per trace (`Effects`): the journal, collect, undo, store-after-run
"""
from .collector import Effects, note_instance
from .store import GENERATION, StateWrites, current

__all__ = ["Effects", "GENERATION", "StateWrites", "current", "note_instance"]
