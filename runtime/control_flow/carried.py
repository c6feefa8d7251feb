"""Places outside a cond/while's locals carried through it as its values: state cells loaded
before each branch or trace attempt and set from the op's results after it, and Tensors written in place
inside it (found by tracing, then traced again with them carried).
"""
from .. import retraces, tracing
from ..errors import ControlFlowError
from ..state import AttrCell, TensorValueCell, collecting_writes
from ..tensor import EagerTensor


def _carrying_tensor_writes(cells, build):
    """`build(cells)` (which traces a cond/while op carrying those cells); Tensors written in place
    inside it (`set_value`, a Parameter's `op=`, a buffer) that it does not carry yet: forgotten,
    and traced again with them as extra cells (`state.TensorValueCell`), so each write flows
    through the op as branch outputs / loop variables. The Tensors the converter saw written (a
    declared cell on a Tensor's contents, `self.buf[i] = v`, or on an attribute holding a Layer's
    Tensor, `self.running_mean = ...`) are carried from the first trace; one the trace turns out
    not to write costs nothing more: the op passes its value through, and the place is not written after it."""
    point = tracing.checkpoint(tracing.current_block())
    fixed = [(c, c.get()) for c in cells if _holds_a_layer_tensor(c)]
    # `t[i] = v` on a captured Tensor t writes into it: carried as t's own state, not as a place of it
    declared = _declared_tensor_writes(cells, fixed)
    cells = tuple(c for c in cells if not any(c is f for f, _ in fixed) and not isinstance(c.obj, EagerTensor))
    carried = {c.identity() for c in cells}
    guessed = tuple(c for c in declared if c.identity() not in carried)
    for _ in range(_MAX_RETRACES):
        trial = cells + guessed
        before = [c.get() for c in trial]
        with collecting_writes() as found:
            out = build(trial)
        new = [(t, label) for key, (t, label) in found.items()
               if key not in carried and all(key != c.identity() for c in guessed)]
        if not new:
            for cell, tensor in fixed:
                if cell.get() is not tensor:
                    raise ControlFlowError(
                        f"'{cell.label}' is given another tensor inside a tensor-dependent if/while; write into "
                        f"it instead ('{cell.label}.set_value(...)'), which keeps the Layer's own tensor")
            return out
        retraces.note(retraces.TENSOR_WRITES)
        _load_cells(trial, before)
        tracing.rollback(point)
        cells = cells + tuple(TensorValueCell(t, label) for t, label in new)
        carried |= {c.identity() for c in cells}
    raise ControlFlowError("the tensors written in place inside a tensor-dependent if/while did not settle")


def _declared_tensor_writes(cells, fixed):
    """A `TensorValueCell` for each Tensor a declared cell says the construct writes in place, once each."""
    found = {}
    for cell, tensor in fixed:
        found.setdefault(tracing.tensor_cell_key(tensor), (tensor, cell.label))
    for cell in cells:
        if isinstance(cell.obj, EagerTensor) and not any(cell is f for f, _ in fixed):
            found.setdefault(tracing.tensor_cell_key(cell.obj), (cell.obj, cell.label))
    return tuple(TensorValueCell(tensor, label) for tensor, label in found.values())


def _holds_a_layer_tensor(cell):
    """`self.w` where w is a Parameter or buffer of the Layer self: the attribute keeps that Tensor (`self.w +=
    x` and a buffer assignment write into it in place, carried as the Tensor's own state), so it is no
    state of its own."""
    registries = [getattr(cell.obj, "__dict__", {}).get(r) for r in ("_parameters", "_buffers")]
    return isinstance(cell, AttrCell) and isinstance(cell.get(), EagerTensor) and \
        any(isinstance(r, dict) and r.get(cell.key) is cell.get() for r in registries)


def _put_back(written, saved):
    """The trace's written places as they were (`saved`): what one branch or body trace wrote in place
    is not seen by the next one (a construct that carries it loads it itself, `TensorValueCell`)."""
    if len(written) != len(saved) or any(written.get(k) is not v for k, v in saved.items()):
        written.clear()
        written.update(saved)


def _load_cells(cells, values):
    for cell, value in zip(cells, values):
        cell._store(value)


_MAX_RETRACES = 8
