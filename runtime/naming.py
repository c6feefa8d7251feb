"""Names of values, made when a Program is written: a value's `name` is only a hint.

A value is its identity and its type (as JAX's `Var`); two values may carry the same hint.
Whoever writes text — the printer, the serializer, the code generators, the ONNX
exporter — asks `value_names(program)` for one name per value: the hints made unique in
definition order (`Program.all_vars`), the first value keeping its hint and the next ones
getting `_1`, `_2`, ... suffixes. A Program's inputs come first, so they keep their hints
(the tracer keeps those unique: feeds and parameters are looked up by them).
"""
import keyword
import re

_IDENT = re.compile(r"[^0-9a-zA-Z_.]")   # dots kept: parameter names like "fc1.weight"


def clean_hint(hint):
    """`hint` as a name generated code can bind: ASCII letters, digits, `_` and `.`, no leading digit,
    no keyword (nor `__debug__`); "t" for an empty hint."""
    base = _IDENT.sub("_", str(hint)) or "t"
    if base[0].isdigit():
        base = "_" + base
    if keyword.iskeyword(base) or base == "__debug__":     # names generated code cannot bind
        base += "_"
    return base


class UniqueNames:
    """Hands out names, each once: a clean hint as it is the first time, then `hint_1`, `hint_2`, ...
    (skipping any taken already)."""

    def __init__(self, taken=()):
        self.used = set(taken)
        self.counts = {}
        self.cleaned = {}       # hint -> clean_hint(hint): most hints repeat (op names)

    def claim(self, hint):
        base = self.cleaned.get(hint)
        if base is None:
            base = self.cleaned[hint] = clean_hint(hint)
        used = self.used
        if base not in used:
            used.add(base)
            return base
        n = self.counts.get(base, 1)
        while f"{base}_{n}" in used:
            n += 1
        self.counts[base] = n + 1
        name = f"{base}_{n}"
        used.add(name)
        return name


_CLOSURE_SUFFIX = re.compile(r"\.in(_\d+)?$")


def closure_hint(name):
    """`x.in` for the closure param standing for `x` (and for `x.in_1` one level out): a name of its own
    kind, so the names of the Program's other values read as they did before blocks were closed."""
    return _CLOSURE_SUFFIX.sub("", name) + ".in"


def value_names(program):
    """{id(value): its name} for every value of the Program, unique among them, in definition order.

    A closure param keeping the hint `close_blocks` gave it is named after the value it stands for, as
    written (`x_1.in` for `x_1`; through nested blocks, the value outside them all)."""
    stands_for = {}         # id(closure param) -> the op input it stands for (the op's last inputs)
    for op in program.ops():
        for sub in op.sub_blocks():
            n = len(sub.closure)
            if n:
                stands_for.update(zip(map(id, sub.closure), op.inputs[len(op.inputs) - n:]))
    names, out = UniqueNames(), {}
    claim = names.claim
    for v in program.all_vars():
        hint = v.name
        x = stands_for.get(id(v))
        if x is not None:
            while id(x) in stands_for:
                x = stands_for[id(x)]
            if id(x) in out and hint == closure_hint(x.name):
                hint = closure_hint(out[id(x)])
        out[id(v)] = claim(hint)
    return out


def input_name(program, hint):
    """A name for a new input of `program`, unique among its inputs: feeds and parameters are looked up by
    input name (`program.parameters`, `Executor.run`'s feed), and inputs come first in `value_names`, so an
    input is always written under this name."""
    return UniqueNames(v.name for v in program.inputs).claim(hint)
