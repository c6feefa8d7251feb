"""The eager tape: what `loss.backward()` walks.

While grad mode is on, every differentiable op that `dispatch.apply` runs on a
Tensor that requires grad leaves a Record, reachable from its outputs through
their `Slot`. The tape is that graph of Records: it lives exactly as long as
the tensors that can still reach it (no global list to clear), and
`backward()` orders the part its loss reaches and hands it to the engine.
Records keep their own handles on the arrays (not the caller's Tensors), so a
later `x[...] = v` on a Tensor never changes what an earlier op saw.
"""
import threading
from contextlib import contextmanager

from .records import Record, carries_gradient



class _GradMode(threading.local):
    """Whether ops on tracked tensors are recorded, per thread (a thread serving under no_grad
    never stops another from training)."""

    enabled = True


GRAD_MODE = _GradMode()


class Slot:
    """A Tensor's autodiff state: the Record that made it (None for a leaf), its output index,
    whether a leaf requires grad, and the leaf's accumulated `.grad`."""

    __slots__ = ("record", "index", "requires", "grad", "keeps_grad")

    def __init__(self, record=None, index=0, requires=True, keeps_grad=True):
        self.record, self.index, self.requires, self.grad = record, index, requires, None
        self.keeps_grad = keeps_grad     # False for rt.grad's own leaves: nothing reads their .grad

    def tracks(self):
        return self.record is not None or self.requires


@contextmanager
def _grad_mode(enabled):
    before, GRAD_MODE.enabled = GRAD_MODE.enabled, enabled
    try:
        yield
    finally:
        GRAD_MODE.enabled = before


def no_grad():
    """Run ops without recording them for backward() (inference, optimizer updates); also a decorator."""
    return _grad_mode(False)


def enable_grad():
    """Record again inside a no_grad region (what rt.grad does for the function it differentiates)."""
    return _grad_mode(True)


def record(opdef, inputs, attrs, result, Tensor):
    """Called by dispatch after an eager op on a tracked Tensor: link its outputs to a new Record.
    (`Tensor` is handed down: the tape sits below runtime.tensor, which imports it.)"""
    if not opdef.differentiable or result is None or type(result) is list:
        return
    in_keys = [x._ag if isinstance(x, Tensor) and x._ag is not None and x._ag.tracks() else None
               for x in inputs]
    if not any(k is not None for k in in_keys):
        return
    single = not isinstance(result, tuple)
    outs = (result,) if single else result
    saved_in = [Tensor(x.data, x.backend) if isinstance(x, Tensor) else x for x in inputs]
    saved_out = tuple(Tensor(o.data, o.backend) for o in outs)
    out_keys = []
    rec = Record(opdef, saved_in, saved_out[0] if single else saved_out, attrs, in_keys, out_keys, single)
    for i, out in enumerate(outs):
        if carries_gradient(out):
            out._ag = Slot(rec, i, requires=False)
            out_keys.append(out._ag)
        else:
            out_keys.append(None)


def reachable(slot):
    """The Records `slot` depends on, inputs before users (a depth-first postorder), and the leaf
    slots that require grad among their inputs."""
    order, leaves, seen = [], [], set()
    if slot.record is None:
        return order, [slot] if slot.requires else []
    stack = [(slot.record, False)]
    while stack:
        rec, done = stack.pop()
        if done:
            order.append(rec)
            continue
        if id(rec) in seen:
            continue
        seen.add(id(rec))
        stack.append((rec, True))
        for key in rec.in_keys:
            if key is None:
                continue
            if key.record is None:
                if key.requires and id(key) not in seen:
                    seen.add(id(key))
                    leaves.append(key)
            elif id(key.record) not in seen:
                stack.append((key.record, False))
    return order, leaves
