"""Codegen: a Program as the source of one Python function, every block inlined.

A region op (`ops/regions.py`) writes its own code through its OpDef's `region.emit`, with
this generator's vocabulary: `if_else` (cond: `if/else`), `state_loop` (while: `while True:
... if not pred: break ...`), `block`, `assign`, `temp`, `count_iteration`; every other op is a
call of its kernel (or its `template`) with attrs as literals.
Shared by the executor's plans (`fast.PlanCodegen` adds the NumPy-fast forms) and
by `runtime.export` (a standalone module).
"""
import keyword
import math

from ..ir import Variable
from ..naming import value_names
from ..ops.registry import get_op
from .ownership import owned_expression, shared_outputs

_RESERVED = {"xp", "plan", "True", "False", "None", "int"}   # int: slice bounds call it
INLINE_LIMIT = 200          # longest attr repr pasted into generated source


class Codegen:
    """Program -> the source of one Python function, every block inlined.

    Used by the executor (the plan) and by `runtime.export` (a standalone
    module). The two differ only in how the function reaches kernels and
    constants: here they are bound in the exec namespace; the exporter
    overrides `kernel` and `constant` to write them into the module.
    """

    def __init__(self, program, xp=None):
        self.program = program
        self.lines = []
        self.line_ops = {}
        self.namespace = {"xp": xp}
        self.kernel_names = {}
        self.name_counts = {}
        self.names = {}
        self.hints = value_names(program)     # unique among the Program's values; the plan's own names add to them
        self.used = set(_RESERVED)
        self.temp_counts = {}

    # --- how the function reaches kernels and constants (hooks) ---------------------
    def kernel(self, op_type, opdef):
        """The name the function calls op_type's kernel by (an ASCII identifier, one per op type)."""
        name = self.kernel_names.get(op_type)
        if name is None:
            base = "k_" + "".join(c if c.isascii() and c.isalnum() else "_" for c in op_type)
            name, n = base, 1
            while name in self.namespace:
                name, n = f"{base}_{n}", n + 1
            self.namespace[name] = opdef.kernel
            self.kernel_names[op_type] = name
        return name

    def constant(self, value):
        """The name the function reads a value that has no literal form by."""
        const = f"c_{len(self.namespace)}"
        self.namespace[const] = value
        return const

    # --- emission ----------------------------------------------------------------
    def function(self, fn_name):
        """Emit `def fn_name(<program.inputs>): ... return (<program.outputs>,)`; an output that may share
        memory with an input, parameter or constant is returned as a copy (`ownership.py`)."""
        params = ", ".join(self.name(v) for v in self.program.inputs)
        self.emit(0, f"def {fn_name}({params}):")
        self.block(self.program.global_block, 1)
        shared = set(shared_outputs(self.program))   # the caller's results never alias the Program's own arrays
        outs = ", ".join(owned_expression(v, self.value(v)) if k in shared else self.value(v)
                         for k, v in enumerate(self.program.outputs))
        self.emit(1, f"return ({outs}{',' if len(self.program.outputs) == 1 else ''})")

    def name(self, var):
        name = self.names.get(id(var))
        if name is None:
            name = self.hints.get(id(var)) or var.name
            # k_* and c_* name kernels and constants; a variable must not shadow them
            # ASCII only: Python NFKC-normalizes identifiers, so `ｖ` would be the same local as `v`
            if (not _is_ascii_identifier(name) or name in self.used or name.startswith(("k_", "c_"))):
                base = "v_" + "".join(c if c.isascii() and c.isalnum() else "_" for c in name)
                n = self.name_counts.get(base, 0)
                name = base if n == 0 else f"{base}_{n}"
                while name in self.used:
                    n += 1
                    name = f"{base}_{n}"
                self.name_counts[base] = n + 1
            self.used.add(name)
            self.names[id(var)] = name
        return name

    def value(self, x):
        if isinstance(x, Variable):
            return self.name(x)
        if x is None or isinstance(x, (bool, int)) or (isinstance(x, float) and math.isfinite(x)):
            return repr(x)
        return self.constant(x)

    def emit(self, indent, text, op=None):
        self.lines.append("    " * indent + text)
        if op is not None:
            self.line_ops[len(self.lines)] = op

    def block(self, block, indent):
        for op in block.ops:
            self.any_op(op, indent)

    def any_op(self, op, indent):
        region = get_op(op.type).region
        if region is not None:
            self.bind_closure(region, op)
            region.emit(self, op, indent)
        else:
            self.op(op, indent)

    def bind_closure(self, region, op):
        """A region op's closure params read as the values they stand for: each is given its input's name
        (or literal) here, so the plan copies nothing and reads the value where it was made."""
        for p, x in region.closure_pairs(op):
            self.names[id(p)] = self.value(x)

    def temp(self, hint="buf"):
        """A fresh local name (`buf`, `buf_1`, ...); the count per hint carries on (no rescan from 1)."""
        n = self.temp_counts.get(hint, 0)
        name = hint if n == 0 else f"{hint}_{n}"
        while name in self.used or name in self.namespace:
            n += 1
            name = f"{hint}_{n}"
        self.temp_counts[hint] = n + 1
        self.used.add(name)
        return name

    def count_iteration(self, op, indent):
        """Emit the check of the call's iteration budget for one iteration of loop `op` (the plan's
        `max_iterations`; nothing here)."""

    def branch(self, block, indent, outputs):
        start = len(self.lines)
        self.block(block, indent)
        self.assign(outputs, block.results, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass")

    def assign(self, targets, sources, indent):
        if targets:
            lhs = ", ".join(self.name(t) for t in targets)
            rhs = ", ".join(self.value(s) for s in sources)
            self.emit(indent, f"{lhs} = {rhs}")

    def op(self, op, indent):
        opdef = get_op(op.type)
        args = [self.value(x) for x in op.inputs]
        if opdef.template is not None and not op.attrs:
            call = opdef.template.format(*args)
        else:
            for key in op.attrs:
                if not isinstance(key, str) or not _is_ascii_identifier(key):
                    raise ValueError(f"op '{op.type}' has an attr named {key!r}, which is not an identifier")
            kwargs = [f"{k}={self.attr(v)}" for k, v in op.attrs.items()]
            call = f"{self.kernel(op.type, opdef)}(xp{''.join(', ' + a for a in args + kwargs)})"
        self.emit(indent, f"{self.targets(op)} = {call}" if op.outputs else call, op)

    def targets(self, op):
        """The assignment targets of op's outputs (`a,` for a one-piece result of a multi-output op)."""
        outs = ", ".join(self.name(o) for o in op.outputs)
        return outs + "," if len(op.outputs) == 1 and get_op(op.type).num_outputs != 1 else outs

    def attr(self, value):
        """A literal in the source when short; else a constant: a 25 MiB message pasted into the
        source would cost the compiler GBs."""
        if is_literal(value):
            text = repr(value)
            if len(text) <= INLINE_LIMIT:
                return text
        return self.constant(value)

    # --- the vocabulary of region ops' `emit` -------------------------------------------------
    def if_else(self, op, pred, tb, fb, indent):
        """`if pred:` block tb `else:` block fb, each yielding op's outputs."""
        self.emit(indent, f"if {self.value(pred)}:", op)
        self.branch(tb, indent + 1, op.outputs)
        self.emit(indent, "else:")
        self.branch(fb, indent + 1, op.outputs)

    def while_(self, op, indent):
        """A `while` op's code (`WhileRegion.emit` asks for it): `state_loop` over its two blocks; the hook a
        generator with its own form of a whole loop overrides (the native tier's)."""
        cb, bb = get_op(op.type).region.blocks(op)
        self.state_loop(op, cb, bb, indent)

    def state_loop(self, op, cb, bb, indent):
        """A loop over state: op's outputs start as its first inputs; while block cb (params: the state)
        yields a true test, block bb (params: the state) makes the next state."""
        n = len(bb.params)
        self.assign(op.outputs, op.inputs[:n], indent)
        self.emit(indent, "while True:", op)
        self.assign(cb.params, op.outputs, indent + 1)
        self.block(cb, indent + 1)
        self.emit(indent + 1, f"if not {self.value(cb.results[0])}:", op)
        self.emit(indent + 2, "break")
        self.assign(bb.params, op.outputs, indent + 1)
        self.block(bb, indent + 1)
        self.assign(op.outputs, bb.results, indent + 1)


def _is_ascii_identifier(name):
    """A name generated code can bind: not a keyword, nor `__debug__` (assigning it is a SyntaxError)."""
    return name.isascii() and name.isidentifier() and not keyword.iskeyword(name) and name != "__debug__"


def is_literal(value):
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return all(is_literal(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_literal(v) for k, v in value.items())
    return False
