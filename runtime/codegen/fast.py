"""PlanCodegen: the executor's generator, Codegen plus what brings a plan to the NumPy floor."""
import re

import numpy as np

from ..errors import IterationLimitError
from ..ir import Variable
from ..ops.registry import get_op
from ..passes import _graph, inplace as _inplace
from ..passes.licm import cannot_fail
from .chains import fused_chain
from .cupy_fusion import fused_kernel
from .generic import Codegen
from .layout import blas_ready, c_contiguous_facts
from .liveness import dead_after

_XP_CALL = re.compile(r"\bxp\.([A-Za-z_][A-Za-z0-9_]*)\(")


class PlanCodegen(Codegen):
    """The executor's generator: Codegen plus what brings a plan to the NumPy floor.

    - array-module functions are bound as globals (`xp_tanh(x)`: no attribute lookup), and an
      op that is one ufunc call (its `template` or `as_ufunc`) is that call;
    - ops with a 0-d result are Python operators (`i + 1`, `s < 100`: NumPy scalar
      arithmetic, ~20x cheaper than a ufunc call on a 0-d array);
    - an op's own fast form, its OpDef's `emit(gen, op)` (ops/*.py): float reductions
      as `ufunc.reduce`, getitem as an inline subscript, constants made once at compile
      time, ...; `emit` may ask this generator for `numpy`, `xp`, `value`, `attr`,
      `bound`, `constant`, `is_array`, `only_copying_readers`, `c_contiguous` and `ufunc_steps`;
      matmul asks `c_contiguous` for its `a.dot(b)` form (`layout.py`), whose input checks open the plan;
    - `fused_elementwise` ops run on NumPy as one ufunc call per step writing with
      `out=` into scratch buffers reused as values die (`chains.py`), on other
      backends as one kernel compiled by `backend.fuse` (`cupy_fusion.py`);
    - a while loop's state lives in the loop's output variables (no copies per iteration), and
      a condition block that cannot raise is the `while` test itself (`loop_test`).
    The exporter keeps the plain Codegen: its module must not depend on this namespace.
    """

    def __init__(self, program, backend, max_iterations=None):
        super().__init__(program, backend.xp)
        self.backend = backend
        self.max_iterations = max_iterations
        self.xp = backend.xp
        self.numpy = backend.xp is np
        self.donations = _inplace.donations(program)
        self.readers = _graph.readers(program)
        self.globals = {}
        self.layout = None          # c_contiguous_facts, made when an emit first asks
        self.layout_checks = {}     # frozenset of input ids -> the name of the plan's check of them
        self.iterations = None      # the local counting loop iterations against max_iterations, once a loop needs it
        self.typed = {}

    def bound(self, attr, obj=None):
        """A global name for xp.<attr> (or obj)."""
        key = (attr, id(obj))
        name = self.globals.get(key)
        if name is None:
            base = "xp_" + attr.replace(".", "_")
            name, n = base, 1
            while name in self.used or name in self.namespace:
                name, n = f"{base}_{n}", n + 1
            self.used.add(name)
            value = obj
            if value is None:
                value = self.xp
                for part in attr.split("."):
                    value = getattr(value, part)
            self.namespace[name] = value
            self.globals[key] = name
        return name

    def typed_constant(self, value):
        """A global name for a read-only 0-d array, one per (dtype, value)."""
        key = (value.dtype.str, value.tobytes())
        name = self.typed.get(key)
        if name is None:
            value = self.xp.asarray(value)
            if self.numpy:
                value.flags.writeable = False
            name = self.typed[key] = self.constant(value)
        return name

    def op(self, op, indent):
        opdef = get_op(op.type)
        line = opdef.emit(self, op) if opdef.emit is not None else None
        if line is None:
            line = self.generic(op)
        if line is None:
            return super().op(op, indent)
        if isinstance(line, list):          # several statements (a fused op); the op marks each
            for text in line:
                self.emit(indent, text, op)
            return
        self.emit(indent, f"{self.targets(op)} = {line}" if op.outputs else line, op)

    # --- generic forms ----------------------------------------------------------------
    def generic(self, op):
        opdef = get_op(op.type)
        if op.attrs:
            return None
        if opdef.template is None:      # an op that is one ufunc call here (a one-sided clip) is that call
            call = opdef.as_ufunc(list(op.inputs)) if opdef.as_ufunc is not None else None
            if call is None:
                return None
            return f"{self.bound(call[0])}({', '.join(self.value(a) for a in call[1])})"
        args = [self.value(x) for x in op.inputs]
        symbol = opdef.operator
        if (symbol is not None and len(op.outputs) == 1 and op.outputs[0].ndim == 0
                and op.outputs[0].kind == "dense" and any(isinstance(x, Variable) for x in op.inputs)):
            return f"({symbol}{args[0]})" if len(args) == 1 else f"({args[0]} {symbol} {args[1]})"
        return _XP_CALL.sub(lambda m: self.bound(m.group(1)) + "(", opdef.template).format(*args)

    # --- what an op's `emit` code generator may ask (ops/*.py) ---------------------------
    @staticmethod
    def is_array(x):
        """Whether x's value is an array when the plan runs, so its methods may be called: a dense
        Variable of rank >= 1 (a 0-d value may be a NumPy scalar)."""
        return isinstance(x, Variable) and x.kind == "dense" and x.ndim >= 1

    def only_copying_readers(self, var):
        """Whether every reader of var is an op of its block that copies (none can hand var, or a view
        of it, to the caller): then one array may serve every run."""
        found = self.readers.get(id(var), [])
        return all(r is not None and r.block is var.block and get_op(r.type).copies for r in found)

    def c_contiguous(self, *values):
        """Whether the values are C-contiguous arrays when the plan runs (`layout.py`): True, False, or
        the name of a check the plan makes of its inputs at its start."""
        if self.layout is None:
            self.layout = c_contiguous_facts(self.program)
        needed = frozenset()
        for v in values:
            fact = self.layout.get(id(v)) if isinstance(v, Variable) else None
            if fact is None:
                return False
            needed |= fact
        if not needed:
            return True
        name = self.layout_checks.get(needed)
        if name is None:
            name = self.layout_checks[needed] = self.temp("c_contiguous")
        return name

    def function(self, fn_name):
        super().function(fn_name)
        lines = []
        if self.iterations is not None:     # one budget for every loop of the call
            lines.append(f"    {self.iterations} = 0")
        if self.layout_checks:          # each check once, before the body: the inputs do not change
            check = self.bound("blas_ready", blas_ready)
            for needed, name in self.layout_checks.items():
                args = ", ".join(self.name(v) for v in self.program.inputs if id(v) in needed)
                lines.append(f"    {name} = {check}({args})")
        if lines:
            self.lines[1:1] = lines
            self.line_ops = {(n + len(lines) if n > 1 else n): op for n, op in self.line_ops.items()}

    def ufunc_steps(self, op, steps):
        """A fused op's steps: on NumPy one ufunc call each into reused buffers; else one backend.fuse kernel."""
        return fused_chain(self, op, steps) if self.numpy else fused_kernel(self, op, steps)

    # --- control flow -----------------------------------------------------------------------
    def block(self, block, indent):
        """Ops in order; a big value's name is deleted after its last reader, so its memory is
        reused by the next allocation instead of piling up until the plan returns (which
        makes the allocator hand pages back to the OS and fault them in again next call)."""
        dead = dead_after(block, self.program)
        for i, op in enumerate(block.ops):
            self.any_op(op, indent)
            if i in dead:
                self.emit(indent, "del " + ", ".join(self.name(v) for v in dead[i]))

    def count_iteration(self, op, indent):
        """One iteration of loop `op` against the call's budget: iterations of every loop in this call are
        counted in one local set to 0 where the plan starts (`function`); the check is not mapped to the op:
        the error names the loop itself."""
        if self.max_iterations is None:
            return
        if self.iterations is None:
            self.iterations = self.temp("iterations")
        stop = self.constant(iteration_limit(op, self.max_iterations))
        self.emit(indent, f"{self.iterations} += 1")
        self.emit(indent, f"if {self.iterations} > {self.max_iterations}:")
        self.emit(indent + 1, f"{stop}()")

    def state_loop(self, op, cb, bb, indent):
        for block in (cb, bb):
            for param, out in zip(block.params, op.outputs):
                self.names[id(param)] = self.name(out)
        n = len(bb.params)
        self.assign(op.outputs, op.inputs[:n], indent)
        test = self.loop_test(cb)
        if test is not None:
            self.emit(indent, f"while {test}:", op)
        else:
            self.emit(indent, "while True:", op)
            self.block(cb, indent + 1)
            self.emit(indent + 1, f"if not {self.value(cb.results[0])}:", op)
            self.emit(indent + 2, "break")
        start = len(self.lines)
        self.count_iteration(op, indent + 1)
        direct = self.direct_results(bb)
        for k in direct:
            self.names[id(bb.results[k])] = self.name(op.outputs[k])
        self.block(bb, indent + 1)
        rest = [k for k in range(n) if k not in direct]
        self.assign([op.outputs[k] for k in rest], [bb.results[k] for k in rest], indent + 1)
        if len(self.lines) == start:
            self.emit(indent + 1, "pass")

    def direct_results(self, body):
        """Positions k whose next value the body's op writes straight into the loop variable
        (`h = xp_tanh(...)`, `i = (i + 1)`; no temporary and no tuple assignment per iteration): the
        op is the body's own and not a region op (its blocks would read k after it is written), its
        one output is yielded at k alone, and nothing after it (nor another position's result) reads
        the current value of variable k."""
        position = {}
        for k, r in enumerate(body.results):
            if isinstance(r, Variable):
                position.setdefault(id(r), []).append(k)
        params = {id(p): k for k, p in enumerate(body.params)}
        read_later = set(params[id(r)] for r in body.results if isinstance(r, Variable) and id(r) in params)
        direct = set()
        for op in reversed(body.ops):
            if (len(op.outputs) == 1 and len(position.get(id(op.outputs[0]), ())) == 1
                    and get_op(op.type).region is None):     # an inner loop's state lives in its outputs
                k = position[id(op.outputs[0])][0]
                if k not in read_later and k < len(body.params):
                    direct.add(k)
            read_later.update(params[id(x)] for x in op.inputs if isinstance(x, Variable) and id(x) in params)
        return direct

    def loop_test(self, block):
        """A loop's condition block as one expression (`while i < n and s < 1e9:`), or None.

        Each iteration then stores and loads no temporaries and takes no `if ...: break` (W7's empty
        loop, the RNN's test). Only where no op can raise (`licm.cannot_fail`): an error would name
        the loop rather than the op; and each value is read once, so nothing is computed twice.
        `and`/`or` of tensors (a cond whose other branch yields its predicate) stay short-circuit."""
        saved = dict(self.names)
        reads = {}
        _count_reads(block, reads)
        test = self.inline_block(block, reads)
        if test is None:
            self.names = saved
        elif test.startswith("(") and _atomic(test):
            test = test[1:-1]
        return test

    def inline_block(self, block, reads):
        """Block as one expression of its result (each value read once, no op that can raise), or None."""
        for op in block.ops:
            if len(op.outputs) != 1 or reads.get(id(op.outputs[0])) != 1 or not _graph.is_pure(op):
                return None
            opdef = get_op(op.type)
            if opdef.region is not None:
                self.bind_closure(opdef.region, op)
                text = opdef.region.inline(self, op, reads)       # cond: `and`/`or`/`if else`
            elif not cannot_fail(op):
                return None
            else:
                text = opdef.emit(self, op) if opdef.emit is not None else None
                text = self.generic(op) if text is None else text
            if not isinstance(text, str):
                return None
            self.names[id(op.outputs[0])] = text if _atomic(text) else f"({text})"
        return self.value(block.results[0])


def _count_reads(block, reads):
    """How often the inlined expression reads each value (a region op says for its blocks: a cond's
    predicate yielded back by its other branch is the `and`/`or` operand itself, read once)."""
    for op in block.ops:
        region = get_op(op.type).region
        if region is not None:
            region.count_reads(op, reads, _count_reads)
            continue
        for x in op.inputs:
            if isinstance(x, Variable):
                reads[id(x)] = reads.get(id(x), 0) + 1
    for x in block.results:
        if isinstance(x, Variable):
            reads[id(x)] = reads.get(id(x), 0) + 1


_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\(")


def _atomic(text):
    """Whether text binds as one operand wherever it is pasted: a name, or `f(...)` / `(...)` whose
    first parenthesis closes at its end."""
    if text.isidentifier():
        return True
    start = _CALL.match(text)
    opening = start.end() - 1 if start else 0 if text.startswith("(") else None
    if opening is None:
        return False
    depth, quote, escaped = 0, None, False
    for k in range(opening, len(text)):
        c = text[k]
        if quote:
            quote, escaped = (None if c == quote and not escaped else quote), c == "\\" and not escaped
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return k == len(text) - 1
    return False


def iteration_limit(op, limit):
    """What a loop calls when the call's loops have run `limit` iterations in all (names this loop's line)."""
    where = f" at {op.origin}" if op.origin else ""
    message = (f"while loop{where} ran more than {limit} iterations, counting every loop of this call (the "
               f"executor's max_iterations is a budget per call; pass a larger one, or None, to run longer)")

    def stop():
        raise IterationLimitError(message)
    return stop
