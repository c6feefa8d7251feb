"""The static graph: Program → Blocks → Operators over Variables.

A Program is what tracing produces, passes rewrite, the executor compiles and
serialization writes; it holds the graph and nothing else (compiled plans are
cached by the executor, trace-time memos kept by the tracer). Variable names are
unique across the whole Program, so a sub-block reads its enclosing blocks'
values by name (lexical scoping) and the executor can inline every block into
one Python function. What a cond/while op's blocks read from enclosing blocks is
listed among its inputs (`captures`), so every reader of the graph sees a
block's outside reads at the op.

Operator inputs are Variables or Python scalar literals (`multiply(x, 2.0)`):
literals keep the IR readable and keep Python scalars weakly typed.

This module is data and imports nothing above it: `str(program)` and `repr(op)` are
attached by printer.py, `to_json`/`from_json`/`==` by serialization.py, and a
Variable's dynamic dims come from the array namespace (`rt.shape`).
"""
import keyword
import re

import numpy as np

from . import array_methods
from .array_methods import ArrayMethods
from .errors import SymbolicBoolError
from .shape_text import shape_text

_IDENT = re.compile(r"[^0-9a-zA-Z_.]")   # dots kept: parameter names like "fc1.weight"
LITERAL_TYPES = (bool, int, float, complex)


class Variable(ArrayMethods):
    """A symbolic value: name, static shape (-1 = unknown), dtype.

    kind "dense" is an ordinary array; kind "array" is a tensor array (a growing
    list of arrays of one element shape/dtype, what `append` in a loop builds).
    `weak` marks values that came from Python numbers (they promote like them).
    """

    __array_priority__ = 1000

    def __init__(self, name, shape, dtype, block, persistable=False, weak=False, kind="dense"):
        self.name = name
        self.static_shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.block = block
        self.persistable = persistable
        self.weak = weak
        self.kind = kind
        self.length = None      # a tensor array's number of items when the trace knows it (a loop of static
                                # length that appended to it once per iteration): Python may walk it then

    @property
    def ndim(self):
        return len(self.static_shape)

    def _no_flag(self, value, name):
        raise TypeError(f"cannot set {name} on the traced value '{self.name}' (an attribute of an object or an "
                        f"argument): write `x = x.detach()`, or set it on a local name (`x.stop_gradient = True`), "
                        "which converted code turns into that")

    stop_gradient = property(None, lambda self, value: self._no_flag(value, "stop_gradient"))

    def requires_grad_(self, requires_grad=True):
        """PyTorch's `x.requires_grad_(False)` on a traced value (`self.pe[:, :t].requires_grad_(False)`): the value
        with no gradient flowing back through it; True leaves it as it is (a Program's values carry gradients)."""
        return self if requires_grad else self.detach()
    requires_grad = property(None, lambda self, value: self._no_flag(value, "requires_grad"))

    @property
    def shape(self):
        """Static dims as ints; unknown dims as scalar int Variables while tracing."""
        if -1 not in self.static_shape:
            return self.static_shape
        return array_methods.namespace().shape(self)

    def type_str(self):
        text = f"{self.dtype.name}{shape_text(self.static_shape)}"
        if self.kind == "array":
            text = f"array<{text}>"
        if self.weak:
            text += " weak"
        if self.persistable:
            text += " persistable"
        return text

    def __repr__(self):
        return f"Variable({self.name}: {self.type_str()})"

    def __str__(self):
        """No text: a string made while tracing would hold a placeholder on every run, where Python's
        holds the value (repr() still shows the placeholder, for debugging)."""
        raise TypeError(f"{self.describe()} has no value while tracing, so str() or formatting it would give "
                        "the same placeholder text on every run: print(...) it (printed when the Program runs), "
                        "or return the tensor and format it outside the function")

    def __format__(self, spec):
        return self.__str__()

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise SymbolicBoolError(self)

    def __len__(self):
        if self.kind == "array" and self.length is not None:
            return self.length
        if self.kind == "array":        # its static_shape is an element's: never the list's length
            raise TypeError(
                f"len() of the tensor array '{self.name}' in plain Python: its length is known only when the "
                "Program runs; inside @to_static len(xs) and reversed(xs) are converted for you, or rt.stack it")
        if self.static_shape and self.static_shape[0] != -1:
            return self.static_shape[0]
        raise TypeError(
            f"len() of Variable '{self.name}' with unknown first dim: use rt.shape(x)[0] "
            "(inside @to_static, len(x) is converted for you)")

    def __iter__(self):
        """Rows of the first axis, as an eager Tensor iterates, when that dim is static in this trace.

        Python code that iterates (`sum(x)`, `list(x)`, `a, b = x`, `zip(x, y)`) then
        unrolls exactly as it would eagerly; a dynamic first dim has no Python length.
        """
        if self.kind == "array" and self.length is not None:
            return (self[i] for i in range(self.length))
        if self.kind == "array":
            raise TypeError(
                f"cannot iterate the tensor array '{self.name}' in plain Python: its length is known only "
                "when the Program runs; iterate it with a `for` loop inside @to_static, or rt.stack it first")
        if not self.static_shape:
            raise TypeError("iteration over a 0-d tensor")
        n = self.static_shape[0]
        if n == -1:
            raise TypeError(
                f"cannot iterate a tensor of shape {shape_text(self.static_shape)} in plain Python: dimension 0 "
                "is dynamic (known only when the Program runs), so Python cannot unroll over its rows. "
                "Use a `for` loop over it inside @to_static (it becomes a while op), rt.while_loop, a "
                "reduction such as x.sum(axis=0) instead of sum(x), or give that dimension a fixed size in "
                "the input_spec")
        return (self[i] for i in range(n))

    def describe(self):
        """This value in the user's terms: the op that computes it and the user's line, when known."""
        for block in (self.block.program.blocks if self.block is not None else ()):
            for op in block.ops:
                if any(o is self for o in op.outputs):
                    where = f" at {op.origin}" if op.origin else ""
                    return f"the traced value computed by `{op.type}`{where}"
        return f"the traced input '{self.name}'"

    def _no_value(self, *args, **kwargs):
        raise TypeError(f"{self.describe()} has no value while tracing: .tolist() works on the function's "
                        "results, not inside it (use the tensor itself, or rt.print_ to see it)")

    tolist = _no_value

    def __array__(self, dtype=None, copy=None):
        """NumPy cannot hold a value that exists only when the Program runs: rather than an object array
        of symbols that every run would return unchanged, a TypeError (converted code maps `np.asarray`
        and `np.array` of a traced value to the value itself)."""
        raise TypeError(f"numpy.asarray cannot run on {self.describe()} (it has no value while tracing): use "
                        "the value itself, or rt.asarray; inside @to_static code np.asarray/np.array of it is "
                        "the value itself")

    def numpy(self):
        """Inside a traced function the array is the traced value itself (its ops are NumPy's): its value
        exists only when the Program runs."""
        return self

    def item(self, *args):
        """The Python number of a one-element value: in the graph a weakly typed 0-d value (as `int(x)`), a
        float for a float dtype (held as float64, what a Python float is), computed when the Program runs."""
        if args:
            return self._no_value()
        shape = [1 if d == -1 else d for d in self.static_shape]
        if int(np.prod(shape)) != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        ns = array_methods.namespace()
        out = ns.reshape(self, ())     # a dynamic dim: the reshape fails when the Program runs unless it is 1
        kind = np.dtype(self.dtype).kind
        if kind == "f" and np.dtype(self.dtype) != np.float64:
            out = ns.astype(out, "float64")
        elif kind == "c" and np.dtype(self.dtype) != np.complex128:
            out = ns.astype(out, "complex128")
        elif out is self:
            out = ns.astype(out, self.dtype)   # a fresh value to mark weak
        out.weak = True
        return out

    def _no_python_number(self, *args):
        raise TypeError(
            f"{self.describe()} is not known while tracing (it exists only when the Program runs), so it cannot "
            "become a Python int, float or index: keep it a tensor — index with it (x[i], rt.take), compare it "
            "(rt.where, a tensor `if`), or take sizes from x.shape")

    __index__ = __int__ = __float__ = __complex__ = _no_python_number

    # what only a traced value can be (an eager Tensor never is): a tensor array, a weak Python int
    def __add__(self, other):
        if self.kind == "array" and (type(other) is list or getattr(other, "kind", None) == "array"):
            return array_methods.namespace().array_join(self, other)   # `xs + [v]`: a new array, as for a list
        return ArrayMethods.__add__(self, other)

    def __radd__(self, other):
        if self.kind == "array" and type(other) is list:
            return array_methods.namespace().array_join(other, self)
        return ArrayMethods.__radd__(self, other)

    def __iadd__(self, other):
        if self.kind == "array" and (isinstance(other, (list, tuple)) or getattr(other, "kind", None) == "array"):
            return array_methods.namespace().array_extend(self, other)   # `xs += [v]`: Python's in-place extend
        return ArrayMethods.__iadd__(self, other)

    def __pow__(self, other):
        if type(other) is int and other < 0 and self.weak and self.dtype.kind in "iub":
            ns = array_methods.namespace()
            self = ns.astype(self, "float64")      # a Python int to a negative power is a float (NumPy: error)
            self.weak = True
        return ArrayMethods.__pow__(self, other)


    # the number protocol of what stands for a Python number (`round(float(v))`, `math.floor(x.item())`)
    def _integral(self, ufunc):
        """A Python int from a one-element value, as math.floor/ceil/trunc give one: a weak int64."""
        ns = array_methods.namespace()
        if self.static_shape != ():
            self._no_python_number()
        out = ns.astype(self if self.dtype.kind in "iub" else getattr(ns, ufunc)(self), "int64")
        out.weak = True
        return out

    def __floor__(self):
        return self._integral("floor")

    def __ceil__(self):
        return self._integral("ceil")

    def __trunc__(self):
        if not self.weak:       # as eagerly: a Tensor has no __trunc__ (math.trunc(float(t)) works)
            raise TypeError("type Tensor doesn't define __trunc__ method")
        return self._integral("trunc")

    def __round__(self, ndigits=None):
        """Python's round of a number (halves to even): an int without ndigits, else the number's type."""
        if not self.weak:       # as eagerly: round() of a Tensor is a TypeError (round(float(t)) works)
            raise TypeError("type Tensor doesn't define __round__ method")
        if ndigits is None:
            return self._integral("round")
        out = array_methods.namespace().round(self, decimals=ndigits)
        out = out if out is not self else array_methods.namespace().astype(self, self.dtype)
        out.weak = True
        return out

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self


for _name in array_methods.OPERATORS:     # a weak Variable's operators compute what Python's do
    setattr(Variable, _name, array_methods.python_operator(getattr(Variable, _name)))


class Operator:
    """One op: `outputs = type(inputs, **attrs)`; a region op (cond, while, scan) names its sub-blocks in attrs."""

    __slots__ = ("type", "inputs", "outputs", "attrs", "origin", "block", "no_grad")

    def __init__(self, type, inputs, outputs, attrs=None, origin=None, block=None, no_grad=False):
        self.type = type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        self.origin = origin          # "file.py:line" of the user's code that made the op
        self.block = block
        self.no_grad = no_grad        # recorded under `with rt.no_grad():`: gradients never flow through it

    def input_vars(self):
        return [v for v in self.inputs if isinstance(v, Variable)]

    def sub_blocks(self):
        return [self.block.program.blocks[self.attrs[k]] for k in _SUB_BLOCK_ATTRS.get(self.type, ())]


_SUB_BLOCK_ATTRS = {}       # op type -> the attrs naming its sub-blocks: declared by the op registry (regions)


def declare_sub_blocks(op_type, attrs):
    """Say which attrs of op_type name sub-blocks (the registry does, for each region op)."""
    _SUB_BLOCK_ATTRS[op_type] = tuple(attrs)


def captures(blocks, exclude=()):
    """What `blocks` (one region op's sub-blocks) read from enclosing blocks, in the order first read.

    The one rule for an op's captured inputs: tracing lists them, passes refresh them,
    the loader checks them. A nested region op counts as reading its inputs (its own
    captures must be current), so each op's blocks are read once.
    """
    seen, out = {id(v) for v in exclude}, []
    for block in blocks:
        for values in [op.inputs for op in block.ops] + [block.results]:
            for v in values:
                if isinstance(v, Variable) and id(v) not in seen:
                    seen.add(id(v))
                    if not any(b.is_ancestor_of(v.block) for b in blocks):
                        out.append(v)
    return out


def sub_block_attrs(op_type):
    return _SUB_BLOCK_ATTRS.get(op_type, ())


class Block:
    """Ops in order; `params` are bound on entry (loop state), `results` returned on exit."""

    def __init__(self, program, idx, parent_idx=-1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.vars = {}
        self.ops = []
        self.params = []
        self.results = []

    @property
    def parent(self):
        return None if self.parent_idx < 0 else self.program.blocks[self.parent_idx]

    def create_var(self, hint="t", shape=(), dtype="float32", **kw):
        var = Variable(self.program.unique_name(hint), shape, dtype, self, **kw)
        self.vars[var.name] = var
        return var

    def rename_var(self, var, hint):
        """Give a just-made Variable a readable name (e.g. the user's loop variable)."""
        del self.vars[var.name]
        var.name = self.program.unique_name(hint)
        self.vars[var.name] = var
        return var

    def append_op(self, type, inputs, outputs, attrs=None, origin=None, no_grad=False):
        op = Operator(type, inputs, outputs, attrs, origin, self, no_grad)
        self.ops.append(op)
        self.program.version += 1
        return op

    def is_ancestor_of(self, other):
        block = other
        while block is not None:
            if block is self:
                return True
            block = block.parent
        return False


class Program:
    """A traced function: blocks, its inputs (feeds and parameters) and outputs."""

    def __init__(self, name="main"):
        self.name = name
        self.blocks = [Block(self, 0)]
        self.inputs = []          # Variables fed on each run, in call order; persistables too
        self.outputs = []         # Variables returned, flat
        self.output_tree = None   # pytree.TreeDef rebuilding the function's return value
        self.output_consts = {}   # leaf index -> Python constant returned as is
        self.parameters = {}      # persistable name -> Tensor whose value is fed by default
        self.version = 0          # bumped by append_op and drop_blocks_from; compiled plans are keyed by it
        self._names = {}
        self._used = set()

    @property
    def global_block(self):
        return self.blocks[0]

    def new_block(self, parent):
        block = Block(self, len(self.blocks), parent.idx)
        self.blocks.append(block)
        return block

    def drop_blocks_from(self, idx):
        """Forget blocks idx.. (a discarded trace attempt); their names stay reserved."""
        del self.blocks[idx:]
        self.version += 1

    def unique_name(self, hint):
        base = _IDENT.sub("_", str(hint)) or "t"
        if base[0].isdigit():
            base = "_" + base
        if keyword.iskeyword(base) or base == "__debug__":     # names generated code cannot bind
            base += "_"
        if base not in self._used:
            self._used.add(base)
            return base
        n = self._names.get(base, 1)
        while f"{base}_{n}" in self._used:
            n += 1
        self._names[base] = n + 1
        name = f"{base}_{n}"
        self._used.add(name)
        return name

    def name_state(self):
        """A snapshot of the names handed out, to take back after a discarded trace attempt."""
        return set(self._used), dict(self._names)

    def restore_name_state(self, state):
        """Take back names handed out since `state`, except those of Variables the Program still holds."""
        self._used, self._names = set(state[0]), dict(state[1])
        for block in self.blocks:
            self._used.update(block.vars)
        self._used.update(v.name for v in self.inputs)

    def ops(self):
        """Every Operator of every block, nested sub-blocks included."""
        for block in self.blocks:
            yield from block.ops

    def all_vars(self):
        for block in self.blocks:
            yield from block.vars.values()

    def find_var(self, name):
        for block in self.blocks:
            if name in block.vars:
                return block.vars[name]
        raise KeyError(name)

    def clone(self):
        """A structural copy (new Blocks, Variables, Operators); parameters are shared, not copied."""
        copy = Program(self.name)
        copy.blocks = [Block(copy, b.idx, b.parent_idx) for b in self.blocks]
        mapping = {}
        for block, new_block in zip(self.blocks, copy.blocks):
            for var in block.vars.values():
                new = Variable(var.name, var.static_shape, var.dtype, new_block, var.persistable, var.weak, var.kind)
                new_block.vars[var.name] = mapping[id(var)] = new

        def remap(x):
            return mapping.get(id(x), x) if isinstance(x, Variable) else x

        for block, new_block in zip(self.blocks, copy.blocks):
            new_block.params = [remap(v) for v in block.params]
            new_block.results = [remap(v) for v in block.results]
            new_block.ops = [Operator(op.type, [remap(x) for x in op.inputs], [remap(o) for o in op.outputs],
                                      _copy_attrs(op.attrs), op.origin, new_block, op.no_grad) for op in block.ops]
        copy.inputs = [remap(v) for v in self.inputs]
        copy.outputs = [remap(v) for v in self.outputs]
        copy.output_tree, copy.output_consts = self.output_tree, dict(self.output_consts)
        copy.parameters = dict(self.parameters)
        copy._used, copy._names = set(self._used), dict(self._names)
        return copy

    __hash__ = object.__hash__      # kept when serialization.py attaches __eq__


def _copy_attrs(value):
    """Attrs are JSON data: copy the mutable containers, share the rest."""
    if isinstance(value, dict):
        return {k: _copy_attrs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_attrs(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def compact_blocks(program):
    """Drop blocks no op uses any more (their op was removed) and renumber the rest."""
    used, order = set(), []

    def visit(block):
        used.add(block.idx)
        order.append(block)
        for op in block.ops:
            for sub in [block.program.blocks[op.attrs[k]] for k in sub_block_attrs(op.type)]:
                visit(sub)

    visit(program.global_block)
    if len(used) == len(program.blocks):
        return
    keep = [b for b in program.blocks if b.idx in used]      # parents still come before children
    new_idx = {b.idx: i for i, b in enumerate(keep)}
    for block in keep:
        for op in block.ops:
            for key in sub_block_attrs(op.type):
                op.attrs[key] = new_idx[op.attrs[key]]
    for block in keep:
        block.parent_idx = new_idx[block.parent_idx] if block.parent_idx >= 0 else -1
        block.idx = new_idx[block.idx]
    program.blocks = keep
