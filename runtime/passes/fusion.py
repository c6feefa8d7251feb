"""Elementwise fusion: a tree of elementwise ufunc ops becomes one `fused_elementwise` op.

    m = multiply(0.5, x)
    p = power(x, 3)                          y = fused_elementwise(x, steps=(
    ...                               ->           ('multiply', 0.5, {'in': 0}),
    y = multiply(m, a)                             ('power', {'in': 0}, 3), ...,
                                                   ('multiply', {'step': 0}, {'step': 6})))

A region grows backwards from an elementwise op through the producers of its
inputs, taking a producer in when it is an elementwise op of the same block
and every read of its value is by an op of the region (the value lives and
dies inside). The region runs where its last op ran; its ops are pure, and
their inputs are all defined earlier, so moving them later is safe. Ops with
0-d results stay out (the executor runs scalar arithmetic as Python
operators, cheaper than any kernel).

How a fused op runs is the executor's business, per backend: on NumPy, the
steps inline as one ufunc call each, writing with `out=` into at most a few
scratch buffers reused as values die (and into a dying input, see
`inplace`); on CuPy, one kernel compiled with `backend.fuse` (cupy.fuse).
Step names are checked against the ufunc table on every use, so a Program
file cannot name any other function.
"""
from ..ir import Variable
from ..ops import elementwise as _elementwise
from ..ops.registry import REGISTRY, OpDef, register
from ..ops.rules import elementwise as _elementwise_rule
from .pipeline import register_pass
from ._graph import finish, remove_ops

FUSED = "fused_elementwise"

# ufunc name -> number of inputs: the only functions a step may call
UFUNCS = {**{name: 1 for name in _elementwise.UNARY.values()}, **{name: 2 for name in _elementwise.BINARY.values()}}
_RULES = {}


def ufunc_call(op):
    """(ufunc name, args) when op is one elementwise ufunc call, else None."""
    if op.attrs and op.type != FUSED:
        return None
    opdef = REGISTRY.get(op.type)
    name = getattr(opdef, "ufunc", None)
    if name is not None and name in UFUNCS:
        return name, list(op.inputs)
    if op.type == "relu" and len(op.inputs) == 1:
        return "maximum", [op.inputs[0], 0]
    return None


def _literal_ok(x):
    return isinstance(x, (bool, int, float))


def check_steps(steps, n_inputs):
    """Raise ValueError unless steps is a well-formed list of ufunc steps over n_inputs inputs."""
    if not isinstance(steps, (list, tuple)) or not steps:
        raise ValueError(f"{FUSED}: steps must be a non-empty list")
    for j, step in enumerate(steps):
        if not isinstance(step, (list, tuple)) or not step or step[0] not in UFUNCS:
            raise ValueError(f"{FUSED}: step {j} is not a known ufunc call: {str(step)[:80]}")
        if len(step) - 1 != UFUNCS[step[0]]:
            raise ValueError(f"{FUSED}: step {j} ({step[0]}) takes {UFUNCS[step[0]]} arguments")
        for arg in step[1:]:
            if isinstance(arg, dict):
                if len(arg) != 1:
                    raise ValueError(f"{FUSED}: step {j} has a malformed reference {arg!r}")
                (kind, k), = arg.items()
                limit = n_inputs if kind == "in" else j if kind == "step" else -1
                if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < limit):
                    raise ValueError(f"{FUSED}: step {j} refers to {kind} {k!r}, which does not exist")
            elif not isinstance(arg, (bool, int, float)):
                raise ValueError(f"{FUSED}: step {j} has an argument {str(arg)[:40]} that is not a number")


def step_specs(inputs, steps):
    """The Spec of every step's value (the rules of the ops the steps were)."""
    values, specs = [], []
    for step in steps:
        rule = _RULES.get(step[0])
        if rule is None:
            rule = _RULES[step[0]] = _elementwise_rule(step[0])
        args = [_arg(a, inputs, values) for a in step[1:]]
        spec = rule(*args)
        specs.append(spec)
        values.append(Variable("", spec.shape, spec.dtype, None, weak=spec.weak))
    return specs


def _arg(a, inputs, values):
    if isinstance(a, dict):
        (kind, k), = a.items()
        return inputs[k] if kind == "in" else values[k]
    return a


def _fused_infer(*inputs, steps, into=None):
    check_steps(steps, len(inputs))
    if into is not None and not (isinstance(into, int) and 0 <= into < len(inputs)):
        raise ValueError(f"{FUSED}: into={into!r} is not an input index")
    return step_specs(inputs, steps)[-1]


def _fused_kernel(xp, *inputs, steps, into=None):
    """Reference semantics: the steps one after another (the executor compiles them instead)."""
    check_steps(steps, len(inputs))
    values = []
    for step in steps:
        values.append(getattr(xp, step[0])(*(_arg(a, inputs, values) for a in step[1:])))
    return values[-1]


register(OpDef(FUSED, _fused_kernel, _fused_infer, elementwise=True))


@register_pass("fuse_elementwise")
def fuse_elementwise(program):
    uses = _uses(program)
    dead = set()
    for block in program.blocks:
        defs = {id(o): op for op in block.ops for o in op.outputs}
        position = {id(op): i for i, op in enumerate(block.ops)}
        taken = set()
        for root in reversed(block.ops):
            if id(root) in taken or not _fusable(root):
                continue
            members = _grow(root, defs, uses, taken)
            if len(members) < 2:
                continue
            ordered = sorted(members, key=lambda op: position[id(op)])
            _rewrite(root, ordered)
            taken.update(id(op) for op in members)
            dead.update(id(op) for op in ordered if op is not root)
    remove_ops(program, dead)
    return finish(program)


def _fusable(op):
    if op.type == FUSED:
        return False
    if len(op.outputs) != 1 or ufunc_call(op) is None:
        return False
    out = op.outputs[0]
    return out.kind == "dense" and out.ndim >= 1 and all(
        isinstance(x, Variable) and x.kind == "dense" or _literal_ok(x) for x in op.inputs)


def _uses(program):
    """id(Variable) -> list of readers: ops, or None for a block result / program output."""
    uses = {}
    for block in program.blocks:
        for op in block.ops:
            for v in op.input_vars():
                uses.setdefault(id(v), []).append(op)
        for v in block.results:
            if isinstance(v, Variable):
                uses.setdefault(id(v), []).append(None)
    for v in program.outputs:
        uses.setdefault(id(v), []).append(None)
    return uses


def _grow(root, defs, uses, taken):
    """The region: root and every producer all of whose value's reads are region ops.

    A worklist, linear in the region's reads: each member counts its reads of each
    value once; a producer joins when those counts reach all of its value's reads.
    (Joining only makes the test easier for others, so the fixed point is the same
    whatever order members join in.)
    """
    members = {id(root): root}
    inside = {}                 # id(v) -> reads of v by members so far
    todo = [root]
    while todo:
        op = todo.pop()
        for v in op.input_vars():
            inside[id(v)] = inside.get(id(v), 0) + 1
            producer = defs.get(id(v))
            if (producer is None or id(producer) in members or id(producer) in taken
                    or inside[id(v)] != len(uses.get(id(v), ())) or not _fusable(producer)):
                continue
            members[id(producer)] = producer
            todo.append(producer)
    return list(members.values())


def _rewrite(root, ordered):
    """Turn root into the fused op computing all of `ordered` (root last)."""
    index = {}
    inputs, steps = [], []
    produced = {id(op.outputs[0]): j for j, op in enumerate(ordered)}
    for op in ordered:
        name, args = ufunc_call(op)
        encoded = []
        for a in args:
            if isinstance(a, Variable):
                if id(a) in produced:
                    encoded.append({"step": produced[id(a)]})
                else:
                    if id(a) not in index:
                        index[id(a)] = len(inputs)
                        inputs.append(a)
                    encoded.append({"in": index[id(a)]})
            else:
                encoded.append(a)
        steps.append([name] + encoded)
    root.type = FUSED
    root.inputs = inputs
    root.attrs = {"steps": steps}
