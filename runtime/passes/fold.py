"""Constant folding: ops whose inputs are all known now run now.

A value is known when a `constant` op makes it, when a creation op (`zeros`,
`full`, ...) makes it from literals alone, or when it was folded. A pure op
whose Variable inputs are all known is evaluated with its own NumPy kernel
while the pass runs and becomes a `constant` op holding the result:

    c = full(2.0, dtype='float32')            c = full(2.0, dtype='float32')   (DCE drops it if unused)
    d = sqrt(c)                         ->    d = constant(value=1.414..., dtype='float32', shape=())

Limits: results (and the known inputs read) of at most FOLD_LIMIT elements,
so the Program never carries big arrays as attrs; no tensor arrays, no
complex results (not JSON data); an op whose kernel raises or warns (1/0,
an index out of range) is left alone, so it still fails or warns when the
Program runs, as it would have.
"""
import warnings

import numpy as np

from ..ir import Variable
from ..ops.creation import CONSTANT
from ..ops.registry import get_op
from .pipeline import register_pass
from ._graph import is_pure, is_static, region_of, size_of, touches_arrays

FOLD_LIMIT = 1024


@register_pass("fold")
def fold_constants(program):
    known = {}
    for block in program.blocks:                # parents before children: definitions come first
        for i, op in enumerate(block.ops):
            region = region_of(op)
            if region is not None:      # a closure param is known when the value it stands for is
                known.update((id(p), known[id(x)]) for p, x in region.closure_pairs(op) if id(x) in known)
                continue
            creation = get_op(op.type).creation
            variables = op.input_vars()
            if not creation and (not variables or any(id(v) not in known for v in variables)):
                continue            # (most ops: a value not known now; asked first, it is the cheapest test)
            if touches_arrays(op) or not is_pure(op) or len(op.outputs) != 1:
                continue
            out = op.outputs[0]
            if not is_static(out) or size_of(out) > FOLD_LIMIT:
                continue
            if creation:
                if not variables:
                    value = _evaluate(op, list(op.inputs))
                    if value is not None:
                        known[id(out)] = value
                continue
            value = _evaluate(op, [known[id(v)] if isinstance(v, Variable) else v for v in op.inputs])
            if value is None or value.dtype.kind == "c":
                continue
            known[id(out)] = value
            block.ops[i] = op.replace(type=CONSTANT.name, inputs=[], attrs={
                "value": value.tolist(), "dtype": value.dtype.name, "shape": list(value.shape)})
    return program


def _evaluate(op, args):
    """The op's value computed with NumPy now, or None when it fails, warns or is not what the op declares."""
    out = op.outputs[0]
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            value = np.asarray(get_op(op.type).kernel(np, *args, **op.attrs))
    except Exception:  # noqa: BLE001 - whatever the kernel raises, it raises again at run time
        return None
    if value.shape != out.static_shape or value.dtype != out.dtype or value.dtype.kind not in "biufc":
        return None
    return value
