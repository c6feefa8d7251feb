"""Program → compiled plan → run.

A Program is compiled once per (backend, passes, version) into a *plan*: one
generated Python function with every block inlined (`cond` → `if`, `while` →
`while True: ... break`) that calls the registry's kernels with attrs bound as
literals. Running a plan costs about what the same NumPy calls written by hand
cost. When an op fails, the plan's line tells which op, and the op's origin
tells the user's file and line.
"""
import itertools
import keyword
import math
import re

import numpy as np

from .backends import get_backend
from .errors import FeedError, IterationLimitError, ProgramRunError
from .ir import Variable, sub_block_attrs
from .ops.registry import get_op
from .ops.control import UndefinedValue
from .tensor import Tensor
from . import passes as _passes
from .ops import fused as _fused
from .passes import _graph, inplace as _inplace

_RESERVED = {"xp", "plan", "True", "False", "None", "int"}   # int: slice bounds call it
INLINE_LIMIT = 200          # longest attr repr pasted into generated source


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
    """Runs Programs on one device; compiled plans are cached on the Program.

    `max_iterations` (opt-in, None = unbounded) stops any one run of a `while` loop
    after that many iterations with an IterationLimitError naming the loop's line:
    a bound for Programs one did not write.
    """

    def __init__(self, device="cpu", passes=None, max_iterations=None):
        self.backend = get_backend(device)
        self.passes = passes
        if max_iterations is not None and (not isinstance(max_iterations, int) or isinstance(max_iterations, bool)
                                           or max_iterations < 0):
            raise ValueError(f"max_iterations must be a non-negative int or None, not {max_iterations!r}")
        self.max_iterations = max_iterations

    def compile(self, program):
        key = (self.backend.name, _passes.pipeline_key(self.passes), self.max_iterations)
        # version counts recorded ops; inputs/outputs are plain lists a caller may reassign
        stamp = (program.version, tuple(map(id, program.inputs)), tuple(map(id, program.outputs)))
        cached = program._plans.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        optimized = _passes.run_passes(program, self.passes)
        plan = compile_plan(optimized, self.backend, self.max_iterations)
        program._plans[key] = (stamp, plan)
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
        array = _python_values(var, value, backend)
    else:
        array = backend.asarray(value)
    shape = tuple(array.shape)
    if array.dtype != var.dtype and array.dtype.newbyteorder("=") == var.dtype:
        order = {">": "big", "<": "little"}.get(array.dtype.byteorder, "non-native")
        raise FeedError(f"input '{var.name}': expected {var.dtype.name} in native byte order, got {order}-endian "
                        f"{array.dtype.name} ('{array.dtype.str}', shape {shape}); convert it with "
                        f".astype('{var.dtype.name}')")
    if array.dtype != var.dtype:
        raise FeedError(f"input '{var.name}': expected dtype {var.dtype.name}, got {array.dtype.name} "
                        f"(shape {shape}); cast it with .astype('{var.dtype.name}')")
    expected = var.static_shape
    if len(shape) != len(expected) or any(e != -1 and e != a for e, a in zip(expected, shape)):
        dims = ", ".join("None" if d == -1 else str(d) for d in expected)
        raise FeedError(f"input '{var.name}': expected shape [{dims}], got {list(shape)}")
    return array


# Python numbers fed to an input of each kind (weak, like scalars in an expression): no silent
# truncation of floats into ints, no complex into reals, no strings parsed as numbers
_PYTHON_KINDS = {"b": "b", "i": "bi", "u": "bi", "f": "bif", "c": "bifc"}
_KIND_NAMES = {"b": "bools", "i": "ints", "u": "ints", "f": "floats", "c": "complex numbers", "U": "strings",
               "S": "bytes", "O": "objects that are not numbers"}


def _python_values(var, value, backend):
    """A Python number or (nested) list of them as an array of var's dtype, or a FeedError naming the input."""
    what = f"input '{var.name}' ({var.type_str()})"
    try:
        host = _np.asarray(value)
    except (ValueError, TypeError) as e:
        raise FeedError(f"{what}: cannot make an array of the {type(value).__name__} given ({e})") from None
    if host.size and host.dtype.kind not in _PYTHON_KINDS.get(var.dtype.kind, ""):
        got = _KIND_NAMES.get(host.dtype.kind, f"{host.dtype.name} values")
        got = f"a {type(value).__name__} of {got}" if isinstance(value, (list, tuple)) else f"{value!r}"
        raise FeedError(f"{what}: got {got}, which {var.dtype.name} cannot hold; "
                        f"pass an array of dtype {var.dtype.name}")
    try:
        return backend.asarray(value, dtype=var.dtype)
    except (OverflowError, ValueError, TypeError) as e:
        raise FeedError(f"{what}: {e}") from None


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
        self.kernel_names = {}
        self.name_counts = {}
        self.names = {}
        self.used = set(_RESERVED)

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
        if _is_literal(value):
            text = repr(value)
            if len(text) <= INLINE_LIMIT:
                return text
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


def _is_ascii_identifier(name):
    return name.isascii() and name.isidentifier() and not keyword.iskeyword(name)


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


class PlanCodegen(Codegen):
    """The executor's generator: Codegen plus what brings a plan to the NumPy floor.

    - array-module functions are bound as globals (`xp_tanh(x)`: no attribute lookup);
    - ops with a 0-d result are Python operators (`i + 1`, `s < 100`: NumPy scalar
      arithmetic, ~20x cheaper than a ufunc call on a 0-d array);
    - on NumPy, sum/max/min/prod of floats are `ufunc.reduce` calls, mean of a static
      float array is `add.reduce(x) / n` (what np.mean computes, less its Python layers),
      getitem is an inline subscript;
    - `constant` values are made once at compile time (copied per run only when the
      value may reach the caller or be viewed);
    - `fused_elementwise` ops run on NumPy as one ufunc call per step writing with
      `out=` into scratch buffers reused as values die (of unknown shape: only a dying
      argument's buffer that broadcasting cannot grow), and into a dying input when
      the `inplace` pass chose one and liveness confirms it; on other backends as one
      kernel compiled by `backend.fuse`;
    - a while loop's state lives in the loop's output variables (no copies per iteration).
    The exporter keeps the plain Codegen: its module must not depend on this namespace.
    """

    def __init__(self, program, backend, max_iterations=None):
        super().__init__(program, backend.xp)
        self.backend = backend
        self.max_iterations = max_iterations
        self.xp = backend.xp
        self.numpy = backend.xp is _np
        self.donations = _inplace.donations(program)
        self.readers = _graph.readers(program)
        self.globals = {}
        self.temp_counts = {}
        self.read_cache = {}

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
        if opdef.template is None or op.attrs:
            return None
        args = [self.value(x) for x in op.inputs]
        symbol = opdef.operator
        if (symbol is not None and len(op.outputs) == 1 and op.outputs[0].ndim == 0
                and op.outputs[0].kind == "dense" and any(isinstance(x, Variable) for x in op.inputs)):
            return f"({symbol}{args[0]})" if len(args) == 1 else f"({args[0]} {symbol} {args[1]})"
        return _XP_CALL.sub(lambda m: self.bound(m.group(1)) + "(", opdef.template).format(*args)

    # --- what an op's `emit` code generator may ask (ops/*.py) ---------------------------
    def only_copying_readers(self, var):
        """Whether every reader of var is an op of its block that copies (none can hand var, or a view
        of it, to the caller): then one array may serve every run."""
        found = self.readers.get(id(var), [])
        return all(r is not None and r.block is var.block and get_op(r.type).copies for r in found)

    def ufunc_steps(self, op, steps):
        """A fused op's steps: on NumPy one ufunc call each into reused buffers; else one backend.fuse kernel."""
        if not self.numpy:
            return self.fused_kernel(op, steps)
        return self.fused_chain(op, steps)

    def fused_kernel(self, op, steps):
        """Other backends: one kernel from backend.fuse (cached per steps)."""
        args = ", ".join(self.value(x) for x in op.inputs)
        if len(steps) == 1:
            return f"{self.bound(steps[0][0])}({', '.join(self.step_arg(a, op, {}) for a in steps[0][1:])})"
        key = (self.backend.name, repr(steps), len(op.inputs))
        kernel = _FUSED_KERNELS.get(key)
        if kernel is None:
            kernel = _FUSED_KERNELS[key] = self.backend.fuse(_fused_function(steps, len(op.inputs), self.xp))
        return f"{self.bound('fused', kernel)}({args})"

    def step_arg(self, a, op, names):
        if isinstance(a, dict):
            (kind, k), = a.items()
            return self.value(op.inputs[k]) if kind == "in" else names[k]
        return self.value(a)

    def fused_chain(self, op, steps):
        """NumPy: one ufunc call per step, results in scratch buffers reused as values die."""
        specs = _fused.step_specs(op.inputs, steps)
        last_read = {}
        for j, step in enumerate(steps):
            for a in step[1:]:
                if isinstance(a, dict):
                    last_read[tuple(*a.items())] = j
        into = op.attrs.get("into")
        if into is not None and self.donations.get(id(op)) != into:
            into = None                     # not provably ours to overwrite: allocate instead
        buffers = []                        # [python name, shape, dtype, key of the value it holds]
        if into is not None:
            v = op.inputs[into]
            buffers.append([self.value(v), v.static_shape, v.dtype, ("in", into)])
        names, lines = {}, []
        out = op.outputs[0]
        for j, step in enumerate(steps):
            fn = self.bound(step[0])
            args = ", ".join(self.step_arg(a, op, names) for a in step[1:])
            spec = specs[j]
            shape, dtype = tuple(spec.shape), _np.dtype(spec.dtype)
            static = -1 not in shape and len(shape) >= 1
            target = None
            if static:
                for buf in buffers:
                    if buf[1] == shape and buf[2] == dtype and last_read.get(buf[3], -1) <= j:
                        target = buf
                        break
            elif len(shape) >= 1:
                target = _dying_argument_buffer(step, j, shape, dtype, buffers, last_read, op, specs)
            last = j == len(steps) - 1
            if target is not None:
                target[3] = ("step", j)
                names[j] = target[0]
                # NumPy 2.4 deprecates a positional `out` for maximum/minimum only
                out_arg = f"out={target[0]}" if step[0] in _fused.KEYWORD_OUT else target[0]
                lines.append(f"{self.name(out) + ' = ' if last else ''}{fn}({args}, {out_arg})")
            else:
                name = self.name(out) if last else self.temp("buf")
                names[j] = name
                lines.append(f"{name} = {fn}({args})")
                if len(shape) >= 1:
                    buffers.append([name, shape, dtype, ("step", j)])
        temps = [n for j, n in names.items() if n.startswith("buf") and n != self.name(out)]
        temps = list(dict.fromkeys(temps))
        if temps and (_big(out) or not _static(out)):
            lines.append("del " + ", ".join(temps))    # the result keeps its buffer alive by its own name
        return lines

    # --- control flow -----------------------------------------------------------------------
    def block(self, block, indent):
        """Ops in order; a big value's name is deleted after its last reader, so its memory is
        reused by the next allocation instead of piling up until the plan returns (which
        makes the allocator hand pages back to the OS and fault them in again next call)."""
        dead_after = self.dead_after(block)
        for i, op in enumerate(block.ops):
            self.any_op(op, indent)
            if i in dead_after:
                self.emit(indent, "del " + ", ".join(self.name(v) for v in dead_after[i]))

    def dead_after(self, block):
        """{op index: big Variables of this block no later op, nested block or result reads}."""
        keep = {id(v) for v in block.results if isinstance(v, Variable)}
        keep.update(id(v) for v in self.program.outputs)
        last, own = {}, {}
        for i, op in enumerate(block.ops):
            for v in self.reads(op):
                last[id(v)] = i
            for o in op.outputs:
                if _big(o) and id(o) not in keep:
                    own[id(o)] = o
                    last.setdefault(id(o), i)
        out = {}
        for key, var in own.items():
            out.setdefault(last[key], []).append(var)
        return out

    def reads(self, op):
        """Variables op reads, its nested blocks' reads included (not trusting capture lists)."""
        if op.type not in ("cond", "while"):
            return op.input_vars()
        cached = self.read_cache.get(id(op))
        if cached is None:
            cached = list(op.input_vars())
            for key in sub_block_attrs(op.type):
                sub = self.program.blocks[op.attrs[key]]
                for inner in sub.ops:
                    cached.extend(self.reads(inner))
                cached.extend(v for v in sub.results if isinstance(v, Variable))
            self.read_cache[id(op)] = cached
        return cached

    def while_(self, op, indent):
        cb, bb = (self.program.blocks[op.attrs[k]] for k in sub_block_attrs("while"))
        for block in (cb, bb):
            for param, out in zip(block.params, op.outputs):
                self.names[id(param)] = self.name(out)
        n = len(bb.params)
        self.assign(op.outputs, op.inputs[:n], indent)
        count = None
        if self.max_iterations is not None:     # iterations of this run of the loop (not mapped to the op:
            count = self.temp("iterations")     # the error names the loop itself)
            self.emit(indent, f"{count} = 0")
        self.emit(indent, "while True:", op)
        self.block(cb, indent + 1)
        self.emit(indent + 1, f"if not {self.value(cb.results[0])}:", op)
        self.emit(indent + 2, "break")
        start = len(self.lines)
        if count is not None:
            stop = self.constant(_iteration_limit(op, self.max_iterations))
            self.emit(indent + 1, f"{count} += 1")
            self.emit(indent + 1, f"if {count} > {self.max_iterations}:")
            self.emit(indent + 2, f"{stop}()")
        self.block(bb, indent + 1)
        self.assign(op.outputs, bb.results, indent + 1)
        if len(self.lines) == start:
            self.emit(indent + 1, "pass")


_np = np
_XP_CALL = re.compile(r"\bxp\.([A-Za-z_][A-Za-z0-9_]*)\(")
_FUSED_KERNELS = {}


def _dying_argument_buffer(step, j, shape, dtype, buffers, last_read, op, specs):
    """A scratch buffer a step of unknown shape may write into, or None.

    Only the buffer of one of the step's own arguments that dies here, of the result's dtype
    and symbolic shape, and only where broadcasting cannot grow it: at every unknown dim the
    other arguments are 1 or absent. (Without this a chain over a dynamic batch allocated a
    fresh array per step where the unfused plan's in-place writes did not.)"""
    def arg_shape(a):
        if not isinstance(a, dict):
            return ()
        (kind, k), = a.items()
        return tuple(op.inputs[k].static_shape) if kind == "in" else tuple(specs[k].shape)

    refs = [tuple(*a.items()) for a in step[1:] if isinstance(a, dict)]
    for buf in buffers:
        if buf[3] not in refs or buf[1] != shape or buf[2] != dtype or last_read.get(buf[3], -1) > j:
            continue
        others = [arg_shape(a) for a in step[1:] if not (isinstance(a, dict) and tuple(*a.items()) == buf[3])]
        if all(len(o) <= len(shape) and all(o[i - len(shape)] == 1 for i in range(len(shape))
                                            if shape[i] == -1 and i - len(shape) >= -len(o))
               for o in others):
            return buf
    return None


def _static(var):
    return -1 not in var.static_shape


_BIG_BYTES = 1 << 16


def _big(var):
    """Worth a `del` after its last use: 64 KiB or more, or of unknown size, or a tensor array."""
    if var.kind != "dense" or not _static(var):
        return True
    return math.prod(var.static_shape) * var.dtype.itemsize >= _BIG_BYTES


def _fused_function(steps, n_inputs, xp):
    """A Python function computing the steps with xp's ufuncs (what backend.fuse compiles)."""
    params = [f"a{k}" for k in range(n_inputs)]
    lines = [f"def fused({', '.join(params)}):"]
    for j, step in enumerate(steps):
        args = []
        for a in step[1:]:
            if isinstance(a, dict):
                (kind, k), = a.items()
                args.append(params[k] if kind == "in" else f"s{k}")
            else:
                args.append(repr(a) if not isinstance(a, float) or math.isfinite(a) else f"float('{a!r}')")
        lines.append(f"    s{j} = xp.{step[0]}({', '.join(args)})")
    lines.append(f"    return s{len(steps) - 1}")
    namespace = {"xp": xp}
    exec(compile("\n".join(lines) + "\n", "<dy2static fused kernel>", "exec"), namespace)
    return namespace["fused"]


def _iteration_limit(op, limit):
    """What a loop calls when it has run `limit` iterations (its message names the loop's line)."""
    where = f" at {op.origin}" if op.origin else ""
    message = (f"while loop{where} ran more than {limit} iterations (the executor's max_iterations; "
               f"pass a larger max_iterations, or None, to run it longer)")

    def stop():
        raise IterationLimitError(message)
    return stop


def generate_source(program, backend, max_iterations=None):
    gen = PlanCodegen(program, backend, max_iterations)
    gen.function("plan")
    return "\n".join(gen.lines) + "\n", gen.line_ops, gen.namespace


_plan_numbers = itertools.count(1)   # next() is atomic: plans compiled in two threads never share a name


def compile_plan(program, backend, max_iterations=None):
    source, line_ops, namespace = generate_source(program, backend, max_iterations)
    filename = f"<dy2static plan {next(_plan_numbers)}: {program.name}>"
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
    if get_op(op.type).user_error:      # the user's own exception: its message stays theirs, the line is a note
        if op.origin and hasattr(error, "add_note"):      # Python 3.11+
            error.add_note(f"raised at {op.origin}")
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
