"""The eager tape: what `loss.backward()` walks.

While grad mode is on, every differentiable op that `dispatch.apply` runs on a
Tensor that requires grad leaves a record, reachable from its outputs through
their slot (`Tensor._ag`). The tape is that graph of records: it lives exactly
as long as the tensors that can still reach it (no global list to clear), and
`backward()` orders the part its loss reaches and hands it to the engine.
Records keep the arrays themselves (not the caller's Tensors), so a later
`x[...] = v` on a Tensor, which gives it a new array, never changes what an
earlier op saw.

Recording is on the eager hot path of every model whose Parameters require
grad, inference included, so a record is kept small: arrays instead of
wrappers, and one object for a one-output op and its output's slot.
"""
import threading
from contextlib import ContextDecorator

from .records import carries_gradient

Tensor = None       # runtime.tensor's class, set there: the tape sits below the module that defines it


class _GradMode(threading.local):
    """Whether ops on tracked tensors are recorded, per thread (a thread serving under no_grad
    never stops another from training)."""

    enabled = True


GRAD_MODE = _GradMode()


class Slot:
    """A Tensor's autodiff state: the Record that made it (None for a leaf), its output index,
    whether it requires grad (a leaf's own flag; always, for an op's output, as in PyTorch), and
    the leaf's accumulated `.grad`."""

    __slots__ = ("record", "index", "requires", "grad", "keeps_grad")

    def __init__(self, record=None, index=0, requires=True, keeps_grad=True):
        self.record, self.index, self.requires, self.grad = record, index, requires, None
        self.keeps_grad = keeps_grad     # False for rt.grad's own leaves: nothing reads their .grad

    def tracks(self):
        return self.record is not None or self.requires


class _grad_mode(ContextDecorator):
    """Grad mode set to `enabled` inside the block (or the decorated function), put back after it.

    A class, not a generator context manager: `with rt.no_grad():` around a served call costs
    ~0.2 µs instead of ~1.5 µs. Each decorated call enters a fresh copy (`_recreate_cm`), so threads
    and recursion never share the saved mode."""

    __slots__ = ("enabled", "before")

    def __init__(self, enabled):
        self.enabled = enabled

    def _recreate_cm(self):
        return _grad_mode(self.enabled)

    def __enter__(self):
        self.before = GRAD_MODE.enabled
        GRAD_MODE.enabled = self.enabled

    def __exit__(self, *exc):
        GRAD_MODE.enabled = self.before


def no_grad():
    """Run ops without recording them for backward() (inference, optimizer updates); also a decorator."""
    return _grad_mode(False)


def enable_grad():
    """Record again inside a no_grad region (what rt.grad does for the function it differentiates)."""
    return _grad_mode(True)


def record(opdef, inputs, args, attrs, result, backend):
    """Called by dispatch after a differentiable op read a Tensor with a slot, in grad mode: link the
    float outputs to a new record when some input tracks. `args` are the arrays the kernel read: the
    record keeps them (a later `x[i] = v` gives x a new array, it never writes into this one)."""
    single = type(result) is not tuple
    if single:
        if not carries_gradient(result.array):
            return
    else:
        results = tuple([o.array for o in result])
        out_keys = [carries_gradient(o) for o in results]      # then each output's Slot, or None
        if True not in out_keys:
            return
    saved, n = args, len(args)      # the arrays, then each input's key (see _SavedOp)
    literals, tracked = (), False
    for x in inputs:
        if isinstance(x, Tensor):
            slot = x._ag
            if slot is not None and slot.requires:
                saved.append(slot)
                tracked = True
                continue
        else:
            literals += ((len(saved) - n, x),)
        saved.append(None)
    if not tracked:
        return
    if single:
        result._ag = OutputRecord(opdef, attrs, saved, literals, result.array, backend)
        return
    rec = OpRecord(opdef, attrs, saved, literals, results, backend, out_keys)
    for i, out in enumerate(result):
        if out_keys[i]:
            out_keys[i] = out._ag = Slot(rec, i)
        else:
            out_keys[i] = None


class SavedArrays:
    """What the tape keeps of one op: the arrays it read and made, not Tensors. Wrappers
    cost as much as a small op, and most records never meet backward() (inference with
    Parameters that require grad), so `inputs` and `outputs` wrap the arrays when the engine
    reads them. `literals` are the (position, value) of the inputs that were not Tensors:
    numbers, NumPy arrays and tensor arrays reach the gradient rule as they were passed.

    The arrays and the inputs' keys share one list, `saved` (n arrays, then n keys): while the
    tape is alive the garbage collector walks every object it holds, and on small arrays those
    walks cost as much as the ops. No slots of its own: a subclass says where `saved`,
    `literals` and `backend` live (instance slots, or class attributes shared by every call of
    one static Program: `autodiff.static_call.CallOutputRecord`)."""

    __slots__ = ()
    origin = None

    @property
    def in_keys(self):
        saved = self.saved
        return saved[len(saved) // 2:]

    @property
    def inputs(self):
        saved, backend = self.saved, self.backend
        values = [Tensor(a, backend) for a in saved[:len(saved) // 2]]
        for i, x in self.literals:
            values[i] = x
        return values


class _SavedOp(SavedArrays):
    """An eager op's record: everything in instance slots."""

    __slots__ = ("opdef", "attrs", "saved", "literals", "results", "backend")


class OpRecord(_SavedOp):
    """The record of an op with several outputs; each float output has a Slot pointing here."""

    __slots__ = ("out_keys",)
    single = False

    def __init__(self, opdef, attrs, saved, literals, results, backend, out_keys):
        self.opdef, self.attrs, self.saved, self.literals = opdef, attrs, saved, literals
        self.results, self.backend, self.out_keys = results, backend, out_keys

    @property
    def outputs(self):
        return tuple(Tensor(o, self.backend) for o in self.results)


class OneOutput:
    """A record of one output that is that output's Slot too: one object where a Record and a Slot
    would be two (for the garbage collector's sake, as above). The subclass holds `grad`."""

    __slots__ = ()
    single = True
    index = 0
    requires = True
    keeps_grad = True

    @property
    def record(self):
        return self

    @property
    def out_keys(self):
        return [self]

    @property
    def outputs(self):
        return Tensor(self.results, self.backend)

    def tracks(self):
        return True


class OutputRecord(OneOutput, _SavedOp):
    """The record of an eager op with one output, and that output's Slot."""

    __slots__ = ("grad",)

    def __init__(self, opdef, attrs, saved, literals, results, backend):
        self.opdef, self.attrs, self.saved, self.literals = opdef, attrs, saved, literals
        self.results, self.backend, self.grad = results, backend, None


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
