"""How often tracing threw a trace attempt away and traced the same code again, by cause.

A tensor-dependent if/while is traced once when everything it writes is known before it runs
(the converter declares it). What only the trace can show (a write in a function the converter
cannot see, a loop variable whose shape settles, a branch that raises) costs a rollback and a second
trace; each such retrace is counted here under its cause, so tests and `bench` can see which remain.
"""
import collections

COUNTS = collections.Counter()    # cause -> retraces since the process started (or `reset`)

CALLED_ATTRIBUTES = "attributes set by a called function"       # transpiler.operators.regions
UNSEEN_CONTAINERS = "containers changed, given to no name"      # transpiler.operators.conditionals
TENSOR_WRITES = "tensors written in place, not declared"        # runtime.control_flow.carried
LOOP_SETTLING = "loop variables settling"                       # runtime.control_flow.loops
UNROLLED_FOR = "static-length for unrolled after a graph trace"  # transpiler.operators.loops
BRANCH_RAISES = "branch raising when taken"                     # transpiler.operators.conditionals
SCAN = "scan carry settling or refused"                         # runtime.scan_loop, transpiler.scan_for


def note(cause):
    COUNTS[cause] += 1


def reset():
    """Forget the counts (a test or benchmark measuring one piece of code)."""
    COUNTS.clear()
