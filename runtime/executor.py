"""Program → compiled plan → run.

A Program is compiled once per (backend, passes, version) into a *plan*: one
generated Python function with every block inlined (`cond` → `if`, `while` →
`while True: ... break`) that calls the registry's kernels with attrs bound as
literals. Running a plan costs about what the same NumPy calls written by hand
cost. When an op fails, the plan's line tells which op, and the op's origin
tells the user's file and line.
"""
import keyword
import math

import numpy as np

from .backends import get_backend
from .errors import FeedError, ProgramRunError
from .ir import Variable, sub_block_attrs
from .ops.registry import get_op
from .ops.control import UndefinedValue
from .tensor import Tensor
from . import passes as _passes

_RESERVED = {"xp", "plan", "True", "False", "None"}


class Plan:
    """A compiled Program: call it with backend arrays in `program.inputs` order."""

    def __init__(self, program, backend, fn, source, line_ops):
        self.program = program
        self.backend = backend
        self.fn = fn
        self.source = source
        self.line_ops = line_ops
        self.inputs = list(program.inputs)

    def __call__(self, *arrays):
        try:
            return self.fn(*arrays)
        except Exception as e:
            raise _located(e, self) from None

    def run(self, feed=None):
        """Run on a feed dict (name -> Tensor/array); returns Tensors in `program.outputs` order."""
        arrays = prepare_feed(self.program, self.backend, feed or {})
        outs = self(*arrays)
        return [wrap_output(o, self.backend) for o in outs]


def wrap_output(value, backend):
    if type(value) is UndefinedValue:
        raise value.error()
    if isinstance(value, list):
        return [Tensor(v, backend) for v in value]
    return Tensor(value, backend)


class Executor:
    """Runs Programs on one device; compiled plans are cached on the Program."""

    def __init__(self, device="cpu", passes=None):
        self.backend = get_backend(device)
        self.passes = passes

    def compile(self, program):
        key = (self.backend.name, _passes.pipeline_key(self.passes))
        cached = program._plans.get(key)
        if cached is not None and cached[0] == program.version:
            return cached[1]
        optimized = _passes.run_passes(program, self.passes)
        plan = compile_plan(optimized, self.backend)
        program._plans[key] = (program.version, plan)
        return plan

    def run(self, program, feed=None):
        """Outputs as a list of Tensors, in the order of `program.outputs`."""
        return self.compile(program).run(feed)


# --- feeds ----------------------------------------------------------------------------

def prepare_feed(program, backend, feed):
    unknown = set(feed) - {v.name for v in program.inputs}
    if unknown:
        raise FeedError(f"unknown input(s) {sorted(unknown)}; the Program's inputs are "
                        f"{[v.name for v in program.inputs]}")
    arrays = []
    for var in program.inputs:
        if var.name in feed:
            value = feed[var.name]
        elif var.name in program.parameters:
            value = program.parameters[var.name]
        else:
            raise FeedError(f"missing input '{var.name}' ({var.type_str()})")
        arrays.append(check_feed(var, value, backend))
    return arrays


def check_feed(var, value, backend):
    """The backend array for a fed value, after checking it against the declared Variable."""
    if isinstance(value, Tensor):
        array = value.data if value.backend is backend else backend.asarray(value.backend.to_numpy(value.data))
    elif backend.is_native(value):
        array = value
    elif isinstance(value, (bool, int, float, complex, list, tuple)):
        array = backend.asarray(value, dtype=var.dtype)
    else:
        array = backend.asarray(value)
    shape = tuple(array.shape)
    if array.dtype != var.dtype:
        raise FeedError(f"input '{var.name}': expected dtype {var.dtype.name}, got {array.dtype.name} "
                        f"(shape {shape}); cast it with .astype('{var.dtype.name}')")
    expected = var.static_shape
    if len(shape) != len(expected) or any(e != -1 and e != a for e, a in zip(expected, shape)):
        dims = ", ".join("None" if d == -1 else str(d) for d in expected)
        raise FeedError(f"input '{var.name}': expected shape [{dims}], got {list(shape)}")
    return array


# --- code generation ------------------------------------------------------------------

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
        self.names = {}
        self.used = set(_RESERVED)

    # --- how the function reaches kernels and constants (hooks) ---------------------
    def kernel(self, op_type, opdef):
        """The name the function calls op_type's kernel by."""
        name = f"k_{op_type}"
        self.namespace.setdefault(name, opdef.kernel)
        return name

    def constant(self, value):
        """The name the function reads a value that has no literal form by."""
        const = f"c_{len(self.namespace)}"
        self.namespace[const] = value
        return const

    # --- emission ----------------------------------------------------------------
    def function(self, fn_name):
        """Emit `def fn_name(<program.inputs>): ... return (<program.outputs>,)`."""
        params = ", ".join(self.name(v) for v in self.program.inputs)
        self.emit(0, f"def {fn_name}({params}):")
        self.block(self.program.global_block, 1)
        outs = ", ".join(self.value(v) for v in self.program.outputs)
        self.emit(1, f"return ({outs}{',' if len(self.program.outputs) == 1 else ''})")

    def name(self, var):
        name = self.names.get(id(var))
        if name is None:
            name = var.name
            # k_* and c_* name kernels and constants; a variable must not shadow them
            if (not name.isidentifier() or keyword.iskeyword(name) or name in self.used
                    or name.startswith(("k_", "c_"))):
                base = "v_" + "".join(c if c.isalnum() else "_" for c in name)
                name, n = base, 1
                while name in self.used:
                    name, n = f"{base}_{n}", n + 1
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
            if op.type == "cond":
                self.cond(op, indent)
            elif op.type == "while":
                self.while_(op, indent)
            else:
                self.op(op, indent)

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
                if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
                    raise ValueError(f"op '{op.type}' has an attr named {key!r}, which is not an identifier")
            kwargs = [f"{k}={self.attr(v)}" for k, v in op.attrs.items()]
            call = f"{self.kernel(op.type, opdef)}(xp{''.join(', ' + a for a in args + kwargs)})"
        outs = ", ".join(self.name(o) for o in op.outputs)
        self.emit(indent, f"{outs} = {call}" if outs else call, op)

    def attr(self, value):
        if _is_literal(value):
            return repr(value)
        return self.constant(value)

    def cond(self, op, indent):
        tb, fb = (self.program.blocks[op.attrs[k]] for k in sub_block_attrs("cond"))
        self.emit(indent, f"if {self.value(op.inputs[0])}:", op)
        self.branch(tb, indent + 1, op.outputs)
        self.emit(indent, "else:")
        self.branch(fb, indent + 1, op.outputs)

    def while_(self, op, indent):
        cb, bb = (self.program.blocks[op.attrs[k]] for k in sub_block_attrs("while"))
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


def _is_literal(value):
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return all(_is_literal(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_literal(v) for k, v in value.items())
    return False


def generate_source(program, backend):
    gen = Codegen(program, backend.xp)
    gen.function("plan")
    return "\n".join(gen.lines) + "\n", gen.line_ops, gen.namespace


_plan_counter = [0]


def compile_plan(program, backend):
    source, line_ops, namespace = generate_source(program, backend)
    _plan_counter[0] += 1
    filename = f"<dy2static plan {_plan_counter[0]}: {program.name}>"
    exec(compile(source, filename, "exec"), namespace)
    plan = Plan(program, backend, namespace["plan"], source, line_ops)
    plan.filename = filename
    return plan


def _located(error, plan):
    """The same kind of error, its message naming the failing op and the user's line."""
    tb = error.__traceback__
    op = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == plan.filename:
            op = plan.line_ops.get(tb.tb_lineno, op)
        tb = tb.tb_next
    if op is None or isinstance(error, AssertionError):
        return error
    where = f" at {op.origin}" if op.origin else ""
    message = f"{error} [while running op '{op.type}'{where}]"
    try:
        new = type(error)(message)
    except Exception:
        new = ProgramRunError(message)
    new.op = op
    new.__cause__ = error
    return new


del np
