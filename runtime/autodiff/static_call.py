"""A static function's call as one entry of the eager tape.

When a Program runs on tensors that require grad (its arguments, or captured
parameters), the call leaves ONE Record on the tape. Its VJP runs the
*backward Program* of that forward Program: built once per Program by
tracing — replaying the forward ops and running the engine over them with
symbolic cotangents — then compiled like any Program. So a `to_static`
Layer takes part in `loss.backward()` like any eager op.
"""
import weakref

from .. import rng, tracing
from ..executor import Executor
from ..naming import value_names
from ..ops import zeros_like
from ..ops.registry import OpDef, get_op
from ..tensor import Tensor
from ..tracing import InputSpec, trace
from .engine import backprop
from .records import carries_gradient
from .replay import replay
from .tape import OneOutput, OpRecord, SavedArrays, Slot

_BACKWARD = weakref.WeakKeyDictionary()     # forward Program -> its backward Program (built on first use)
_CALL_OPS = weakref.WeakKeyDictionary()     # forward Program -> its tape signature (`_tape_signature`)
_RANDOM = weakref.WeakKeyDictionary()       # forward Program -> does it draw random numbers
_NO_PATH = weakref.WeakKeyDictionary()      # forward Program -> its float inputs no output's gradient reaches


def draws_random(program):
    """Does the Program hold ops drawing from the generator (dropout)? A call of it that goes on the tape
    keeps the generator state from before its run: the backward Program replays those ops from it, so they
    draw the same masks (`rng.get_state`, before the run) and the generator's own sequence is untouched."""
    found = _RANDOM.get(program)
    if found is None:
        found = _RANDOM[program] = any(get_op(op.type).random for block in program.blocks for op in block.ops)
    return found


def backward_program(program):
    """The Program computing the forward Program's input cotangents from its inputs and the
    cotangents of its float outputs: inputs (x..., params..., d_out...), outputs (d_x..., d_params...),
    one per float input (zeros where no gradient flows)."""
    bprog = _BACKWARD.get(program)
    if bprog is None:
        bprog, _NO_PATH[program] = _trace_backward(program)
        _BACKWARD[program] = bprog
    return bprog


def _differentiable(var):
    return var.kind == "dense" and carries_gradient(var)


def _trace_backward(program):
    ins = list(program.inputs)
    outs = [o for o in program.outputs if _differentiable(o)]
    names = value_names(program)        # the cotangent of an output is fed as `d_<its name in the text>`
    specs = [InputSpec(v.static_shape, v.dtype, v.name) for v in ins]
    specs += [InputSpec(o.static_shape, o.dtype, f"d_{names[id(o)]}") for o in outs]

    def body(*values):
        mapping = dict(zip(ins, values[:len(ins)]))
        block = tracing.current_block()
        keys = {}
        records = replay(program.global_block.ops, mapping, block, keys, rerun=True)
        seeds = {}
        for o, g in zip(outs, values[len(ins):]):
            key = keys.get(o, mapping.get(o, o))
            seeds[key] = g if key not in seeds else seeds[key] + g
        wrt = [mapping[v] for v in ins if _differentiable(v)]
        cots = backprop(records, seeds, wrt)
        no_path.update(v.name for v, w in zip([v for v in ins if _differentiable(v)], wrt) if w not in cots)
        return [cots[w] if w in cots else zeros_like(w) for w in wrt]

    no_path = set()
    grad_program, _, _ = trace(body, specs, name=f"{program.name}_grad")
    return grad_program, frozenset(no_path)


def _call_opdef(program):
    """An (unregistered) op standing for one call of the Program on the tape."""
    ref = weakref.ref(program)

    def vjp(g, inputs, outputs, rng_state=None):
        forward = ref()
        bprog = backward_program(forward)
        backend = inputs[0].backend if inputs else None
        float_outs = [i for i, o in enumerate(forward.outputs) if _differentiable(o)]
        gs = g if isinstance(g, tuple) else (g,)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)    # one output's record (single)
        feeds = [t.array for t in inputs]
        for i in float_outs:
            feeds.append((gs[i] if gs[i] is not None else zeros_like(outputs[i])).array)
        plan = Executor(backend.name).compile(bprog)
        if draws_random(forward):
            if rng_state is None:
                raise RuntimeError(f"the backward of {forward.name} replays its dropout, but the generator state "
                                   "of its forward run was not kept")
            with rng.replaying(rng_state):
                results = iter(plan(*feeds))
        else:
            results = iter(plan(*feeds))
        no_path = _NO_PATH.get(forward, ())
        out = []
        for v in forward.inputs:            # None where no gradient flows (a parameter backward() leaves alone)
            value = next(results) if _differentiable(v) else None
            out.append(None if value is None or v.name in no_path else Tensor(value, backend))
        return tuple(out)

    return OpDef(f"call {program.name}", None, None, num_outputs=-1, vjp=vjp)


def tape_signature(program):
    """(the OpDef standing for a call of the Program, the positions of the inputs and of the outputs that
    carry a gradient): worked out once per Program, not on every call that goes on the tape (a fast call
    keeps its own)."""
    found = _CALL_OPS.get(program)
    if found is None:
        found = _CALL_OPS[program] = (
            _call_opdef(program), tuple(i for i, v in enumerate(program.inputs) if _differentiable(v)),
            tuple(i for i, v in enumerate(program.outputs) if _differentiable(v)))
    return found


class _CallRecord(OpRecord):
    """A static call's record: the arrays it was fed and made, as the eager tape keeps an op's (no
    Tensor wrappers: most records of inference with Parameters that require grad never meet backward()).
    Outputs that are not arrays (a tensor array's list) reach the gradient rule as they were."""

    __slots__ = ()

    @property
    def outputs(self):
        backend = self.backend
        return tuple(o if isinstance(o, list) else Tensor(o, backend) for o in self.results)


class CallOutputRecord(OneOutput, SavedArrays):
    """The record of a call of a Program with one float output, and that output's Slot, in one object
    (as an eager one-output op's). The fast call (transpiler.fast_call) makes one per call on the tape:
    `saved` (the arrays fed, then each input's key), `results` (the output array) and `grad` are its
    own; what every call of the Program shares (opdef, attrs, literals, backend) are class attributes
    of the subclass `call_record_class` makes once per signature (no slot of a base is shadowed, so
    copy.deepcopy of a served output copies its record as an eager op's). The backward Program is found
    only when backward() reaches the record (`backward_program`, built on first use)."""

    __slots__ = ("saved", "results", "grad")


def call_record_class(program, backend):
    """The CallOutputRecord subclass for calls of `program` (one float output, no random draws) on `backend`."""
    opdef = tape_signature(program)[0]
    shared = {"__slots__": (), "opdef": opdef, "attrs": {}, "literals": (), "backend": backend}
    return type(f"CallOf{program.name}", (CallOutputRecord,), shared)


def record_call(program, arrays, sources, outputs, backend, rng_state=None, signature=None):
    """After a run of `program` fed `arrays` (from `sources`: the argument Tensors and captured tensors,
    in input order; `outputs`: its results, wrapped): link the float outputs to one record when some
    source requires grad. `rng_state`: the generator's state before the run, for a Program that
    `draws_random`; `signature`: its `tape_signature`, where the caller keeps it."""
    opdef, float_inputs, float_outputs = signature or tape_signature(program)
    keys, tracked = [None] * len(arrays), False
    for i in float_inputs:
        slot = getattr(sources[i], "_ag", None)      # a Tensor's slot; None for a number
        if slot is not None and slot.tracks():
            keys[i] = slot
            tracked = True
    if not tracked:
        return
    attrs = {"rng_state": rng_state} if rng_state is not None else {}
    results = tuple([o if o.__class__ is list else o.array for o in outputs])     # a tensor array's list as is
    out_keys = [None] * len(results)
    record = _CallRecord(opdef, attrs, [*arrays, *keys], (), results, backend, out_keys)
    for i in float_outputs:
        out = outputs[i]
        if out.__class__ is not list:
            out_keys[i] = out._ag = Slot(record, i)
