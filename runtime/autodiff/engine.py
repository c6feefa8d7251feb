"""The one reverse-accumulation engine behind every gradient in dy2static.

A gradient is computed over a list of *records*, one per op application, in
the order the ops ran: (op definition, inputs, outputs, attrs) plus a key per
input and output that identifies the value (a Variable while tracing, a tape
slot eagerly; a caller may name a traced value by its Tracer, which stands for
its Variable). Walking the records backwards, each op's `vjp` rule turns the
cotangents of its outputs into cotangents of its inputs; a value used twice
sums its cotangents. Records no wrt value reaches, ops marked
`differentiable=False` and integer/bool values are skipped.

The rules are written with runtime ops, so the same walk runs eagerly (the
cotangents are Tensors) or while tracing (the backward ops are recorded into
the Program being built, next to the forward ops).
"""
from ..ir import Variable
from ..tracer import Tracer, tracer_of
from ..ops import add
from ..ops.registry import get_op
from .arrays import array_add
from .records import Record, carries_gradient


def records_of_ops(ops):
    """Records for Operators of a Block; a Variable is its own key, and the rules see Tracers of them."""
    out = []
    for op in ops:
        if op.no_grad:          # recorded under rt.no_grad(): a constant to every gradient, as eagerly
            continue
        opdef = get_op(op.type)
        single = len(op.outputs) == 1 and opdef.num_outputs == 1
        outputs = tracer_of(op.outputs[0]) if single else tuple(tracer_of(o) for o in op.outputs)
        in_keys = [x if isinstance(x, Variable) else None for x in op.inputs]
        out.append(Record(opdef, [tracer_of(x) for x in op.inputs], outputs, op.attrs, in_keys, list(op.outputs),
                          single, op.origin))
    return out


def active_records(records, wrt_keys):
    """The records some wrt value reaches through differentiable ops (forward activity analysis)."""
    active = set(k for k in wrt_keys if k is not None)
    live = []
    for r in records:
        if not r.opdef.differentiable or not any(k is not None and k in active for k in r.in_keys):
            continue
        outs = (r.outputs,) if r.single else r.outputs
        for key, value in zip(r.out_keys, outs):
            if carries_gradient(value):
                active.add(key)
        live.append(r)
    return live, active


def backprop(records, seeds, wrt_keys, accumulate=None):
    """Cotangents of the wrt keys, given the cotangents `seeds` ({key: cotangent}) of later values.

    Returns {key: cotangent} for every wrt key some seed reaches (absent: no path).
    `accumulate(a, b)` sums two cotangents (default: the runtime's add, or the
    tensor-array sum for arrays). A seed or wrt key may be a Tracer: it names its Variable.
    """
    accumulate = accumulate or add_cotangents
    given, wrt_keys = wrt_keys, [_key(k) for k in wrt_keys]
    live, active = active_records(records, wrt_keys)
    cot = {_key(k): g for k, g in seeds.items() if g is not None}
    for r in reversed(live):
        gs = [cot.get(k) for k in r.out_keys]
        if all(g is None for g in gs):
            continue
        if r.opdef.vjp is None:
            where = f" (at {r.origin})" if r.origin else ""
            raise NotImplementedError(
                f"no gradient rule for op '{r.opdef.name}'{where}: it is differentiable but has no vjp; "
                "wrap its input in rt.stop_gradient(...) if no gradient should flow through it")
        inputs = r.inputs
        grads = r.opdef.vjp(gs[0] if r.single else tuple(gs), inputs, r.outputs, **r.attrs)
        if len(grads) != len(inputs):
            raise ValueError(f"the vjp of '{r.opdef.name}' returned {len(grads)} cotangents for "
                             f"{len(inputs)} inputs")
        for key, g in zip(r.in_keys, grads):
            if g is None or key is None or key not in active:
                continue
            cot[key] = g if key not in cot else accumulate(cot[key], g)
    return {g: cot[k] for g, k in zip(given, wrt_keys) if k is not None and k in cot}


def _key(key):
    return key.value if type(key) is Tracer else key


def add_cotangents(a, b):
    if isinstance(a, Tracer) and a.kind == "array":
        return array_add(a, b)
    return add(a, b)
