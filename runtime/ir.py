"""The static graph: Program → Blocks → Operators over Variables.

A Program is what tracing produces, passes rewrite, the executor compiles and
serialization writes; it holds the graph and nothing else (compiled plans are
cached by the executor, trace-time memos kept by the tracer). Blocks are closed
(as JAX's closed jaxprs): a sub-block of a region op reads only its own params,
its closure params and values defined earlier in it. Every value it needs from
outside is a closure param fed by one of the op's inputs (`close_blocks` makes
them when the op is built), so a pass, a code generator or a gradient sees a
block's outside reads at the op.

A value is its identity and its type; its `name` is only a hint (as JAX's `Var`): making
one touches no table, two values may share a hint, and rolling a trace back takes no name
back. Whoever writes text (printer, serializer, code generators, ONNX exporter) names the
values when it writes (`naming.value_names`: the hints made unique in definition order,
`Program.all_vars`). Only a Program's inputs keep unique names: feeds and parameters are
found by them.

Operator inputs are Variables or Python scalar literals (`multiply(x, 2.0)`):
literals keep the IR readable and keep Python scalars weakly typed.

This module is data and imports nothing above it: `str(program)` and `repr(op)` are
attached by printer.py, `to_json`/`from_json`/`==` by serialization.py. What a
traced value does in user code is runtime.tracer's `Tracer`, which wraps a
Variable: a Program holds Variables only, however it was made.
"""
from typing import NamedTuple

import numpy as np

from .naming import clean_hint, closure_hint, value_names
from .shape_text import shape_text

LITERAL_TYPES = (bool, int, float, complex)


class Spec(NamedTuple):
    """A value's type: what shape rules read and return (`infer` rules take Specs for array inputs, never
    Variables, so a rule runs the same on a traced value, an eager Tensor and a loaded file's value)."""

    shape: tuple
    dtype: np.dtype
    weak: bool = False
    kind: str = "dense"
    dim_of: tuple = None    # in a rule's inputs, a 0-d int traced as `x.shape[axis]`: (k, axis), x is input k

    @property
    def static_shape(self):
        """The shape (-1 = unknown), by the name a Variable gives it."""
        return self.shape

    @property
    def ndim(self):
        return len(self.shape)

    def type_str(self):
        text = f"{np.dtype(self.dtype).name}{shape_text(self.shape)}"
        if self.kind == "array":
            text = f"array<{text}>"
        return text + " weak" if self.weak else text


class Variable:
    """A value of the graph: its identity, a name hint (not unique: see `naming.value_names`), its
    type and its block.

    kind "dense" is an ordinary array; kind "array" is a tensor array (a growing
    list of arrays of one element shape/dtype, what `append` in a loop builds).
    `weak` marks values that came from Python numbers (they promote like them).
    Data only: what a traced value does in user code (operators, `bool()`,
    iteration, `.item()`) is runtime.tracer's `Tracer`, which wraps a Variable
    (`tracer.value`) while a trace runs.
    """

    def __init__(self, name, shape, dtype, block, persistable=False, weak=False, kind="dense"):
        self.name = name
        self.static_shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.block = block
        self.persistable = persistable
        self.weak = weak
        self.kind = kind

    @property
    def ndim(self):
        return len(self.static_shape)

    @property
    def spec(self):
        """This value's type (a Spec): what shape rules see of it."""
        return Spec(self.static_shape, self.dtype, self.weak, self.kind)

    def type_str(self):
        text = self.spec.type_str()
        return text + " persistable" if self.persistable else text

    def __repr__(self):
        return f"Variable({self.name}: {self.type_str()})"

    def describe(self):
        """This value in the user's terms: the op that computes it and the user's line, when known."""
        for block in (self.block.program.blocks if self.block is not None else ()):
            for op in block.ops:
                if any(o is self for o in op.outputs):
                    where = f" at {op.origin}" if op.origin else ""
                    return f"the traced value computed by `{op.type}`{where}"
        return f"the traced input '{self.name}'"


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

    def replace(self, **changes):
        """A new Operator like this one but for `changes` (type, inputs, outputs, attrs, origin, block,
        no_grad): passes swap an op for its rewrite (`block.ops[i] = op.replace(...)`) rather than edit
        an op another pass, a plan or a tape may hold. A region op's copy holds the same blocks."""
        fields = {k: getattr(self, k) for k in self.__slots__}
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Operator.replace: no field(s) {sorted(unknown)}")
        fields.update(changes)
        return Operator(**fields)

    def sub_blocks(self):
        keys = _SUB_BLOCK_ATTRS.get(self.type)
        return [self.attrs[k] for k in keys] if keys else []


_SUB_BLOCK_ATTRS = {}       # op type -> the attrs holding its sub-blocks: declared by the op registry (regions)


def declare_sub_blocks(op_type, attrs):
    """Say which attrs of op_type hold sub-blocks (the registry does, for each region op)."""
    _SUB_BLOCK_ATTRS[op_type] = tuple(attrs)


def sub_block_attrs(op_type):
    return _SUB_BLOCK_ATTRS.get(op_type, ())


def outside_reads(block):
    """The values `block` reads that it does not define (its params, closure params and ops' outputs), in
    the order first read: what a closure param must stand for. A nested region op is closed, so only its
    inputs can name them."""
    defined = {id(v) for v in block.params}
    defined.update(id(v) for v in block.closure)
    seen, out = set(), []
    for op in block.ops:
        for v in op.inputs:
            if isinstance(v, Variable) and id(v) not in defined and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        defined.update(id(o) for o in op.outputs)
    for v in block.results:
        if isinstance(v, Variable) and id(v) not in defined and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def close_blocks(blocks):
    """Close one region op's blocks: the values they read from outside (`outside_reads`, in the order first
    read, blocks in order) become one new closure param in EVERY block (appended to `block.closure`; the
    blocks' ops and results read the param instead). Returns those values: the inputs the op appends to
    its own, in the closure params' order. Nested region ops must be closed already."""
    outer, index = [], {}
    for block in blocks:
        for v in outside_reads(block):
            if id(v) not in index:
                index[id(v)] = len(outer)
                outer.append(v)
    if not outer:
        return outer
    for block in blocks:
        params = [block.create_var(closure_hint(v.name), v.static_shape, v.dtype, weak=v.weak, kind=v.kind)
                  for v in outer]
        _substitute(block, {id(v): p for v, p in zip(outer, params)})
        block.closure = block.closure + params
    return outer


def _substitute(block, mapping):
    """Read mapping[id(v)] instead of v in block's ops (replaced, not edited) and results."""
    def sub(x):
        return mapping.get(id(x), x) if isinstance(x, Variable) else x

    ops = []
    for op in block.ops:
        inputs = [sub(x) for x in op.inputs]
        ops.append(op if all(a is b for a, b in zip(inputs, op.inputs)) else op.replace(inputs=inputs))
    block.ops = ops
    block.results = [sub(x) for x in block.results]


class Block:
    """Ops in order; `params` are bound on entry (loop state, scanned rows), `closure` params to the values
    the block reads from outside (the op's closure inputs, in order), `results` returned on exit.

    A sub-block belongs to the region op whose attrs hold it (`parent`: the block that op is in); it has
    no number: printer and serializer number blocks when they write them (`Program.blocks` order)."""

    def __init__(self, program, parent=None):
        self.program = program
        self.parent = parent
        self.ops = []
        self.params = []
        self.closure = []
        self.results = []

    def create_var(self, hint="t", shape=(), dtype="float32", **kw):
        """A new value of this block named by `hint` (cleaned: `naming.clean_hint`); no table is
        touched: two values may share a hint, and writers make names unique (`naming.value_names`)."""
        return Variable(clean_hint(hint), shape, dtype, self, **kw)

    def rename_var(self, var, hint):
        """Give a just-made Variable a readable hint (e.g. the user's loop variable)."""
        var.name = clean_hint(hint)
        return var

    def append_op(self, type, inputs, outputs, attrs=None, origin=None, no_grad=False):
        op = Operator(type, inputs, outputs, attrs, origin, self, no_grad)
        self.ops.append(op)
        detached = self.program._detached
        for sub in op.sub_blocks():             # the op holds them now: no longer detached
            for k in range(len(detached) - 1, -1, -1):
                if detached[k] is sub:
                    del detached[k]
                    break
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
        self.global_block = Block(self)
        self._detached = []       # sub-blocks made by new_block that no op holds yet (being traced)
        self.inputs = []          # Variables fed on each run, in call order; persistables too
        self.outputs = []         # Variables returned, flat
        self.output_tree = None   # pytree.TreeDef rebuilding the function's return value
        self.output_consts = {}   # leaf index -> Python constant returned as is
        self.parameters = {}      # persistable input's name -> Tensor whose value is fed by default

    @property
    def blocks(self):
        """Every block, the global one first, each before the blocks nested in it (the order printer and
        serializer number them in); blocks being traced that no op holds yet come last (a block made by
        `new_block` for an op built without `append_op` is listed once, where its op holds it)."""
        out, seen = [], set()
        for root in [self.global_block] + self._detached:
            todo = [root]
            while todo:
                block = todo.pop()
                if id(block) in seen:
                    continue
                seen.add(id(block))
                out.append(block)
                for op in reversed(block.ops):
                    keys = _SUB_BLOCK_ATTRS.get(op.type)      # (op.sub_blocks(), without a call per op)
                    if keys:
                        todo.extend(op.attrs[k] for k in reversed(keys))
        return out

    def new_block(self, parent):
        """A sub-block of `parent` for a region op about to be recorded (the op's attrs will hold it)."""
        block = Block(self, parent)
        self._detached.append(block)
        return block

    def block_mark(self):
        """How many sub-blocks are being traced now: `discard_blocks(mark)` forgets those made since."""
        return len(self._detached)

    def discard_blocks(self, mark):
        """Forget the sub-blocks made since `mark` that no op holds (a discarded trace attempt)."""
        del self._detached[mark:]

    def ops(self):
        """Every Operator of every block, nested sub-blocks included."""
        for block in self.blocks:
            yield from block.ops

    def all_vars(self):
        """Every value of the Program once, in definition order: the inputs, then each block's params and
        ops in turn (a region op's blocks, params and ops, before their closure params and the op's
        outputs: the order tracing makes them in), blocks being traced last. A value read before any
        definition (a broken Program) comes where it is first read. Writers name values in this order."""
        seen, out, reads = set(), [], []
        _walk_values(self.inputs, seen, out)
        _walk_block(self.global_block, seen, out, reads)
        for block in self._detached:
            _walk_values(block.closure, seen, out)
            _walk_block(block, seen, out, reads)
        _walk_values(reads, seen, out)
        _walk_values(self.outputs, seen, out)
        return out

    def find_var(self, name):
        """The value printed as `name` (`naming.value_names`: the Program's text names them so)."""
        names = value_names(self)
        for var in self.all_vars():
            if names[id(var)] == name:
                return var
        raise KeyError(name)

    def clone(self):
        """A structural copy (new Blocks, Variables, Operators); parameters are shared, not copied."""
        copy = Program(self.name)
        mapping, new_of = {}, {id(self.global_block): copy.global_block}
        blocks = self.blocks
        for block in blocks:            # parents come first
            if id(block) not in new_of:
                new_of[id(block)] = Block(copy, new_of.get(id(block.parent)))
        for var in self.all_vars():
            new_block = new_of.get(id(var.block))
            if new_block is not None:
                mapping[id(var)] = Variable(var.name, var.static_shape, var.dtype, new_block, var.persistable,
                                            var.weak, var.kind)

        def remap(x):
            return mapping.get(id(x), x) if isinstance(x, Variable) else x

        for block in blocks:
            new_block = new_of[id(block)]
            new_block.params = [remap(v) for v in block.params]
            new_block.closure = [remap(v) for v in block.closure]
            new_block.results = [remap(v) for v in block.results]
            new_block.ops = []
            for op in block.ops:
                attrs = _copy_attrs(op.attrs)
                for key in _SUB_BLOCK_ATTRS.get(op.type, ()):
                    attrs[key] = new_of[id(attrs[key])]
                new_block.ops.append(Operator(op.type, [remap(x) for x in op.inputs], [remap(o) for o in op.outputs],
                                              attrs, op.origin, new_block, op.no_grad))
        copy._detached = [new_of[id(b)] for b in self._detached]
        copy.inputs = [remap(v) for v in self.inputs]
        copy.outputs = [remap(v) for v in self.outputs]
        copy.output_tree, copy.output_consts = self.output_tree, dict(self.output_consts)
        copy.parameters = dict(self.parameters)
        return copy

    __hash__ = object.__hash__      # kept when serialization.py attaches __eq__


def _walk_values(values, seen, out):
    for v in values:
        if isinstance(v, Variable) and id(v) not in seen:
            seen.add(id(v))
            out.append(v)


def _walk_block(block, seen, out, reads):
    """all_vars' walk of one block: params, then per op its blocks (params and ops; then the blocks'
    closure params) and its outputs. `reads` gathers what ops and results read (for values never defined)."""
    _walk_values(block.params, seen, out)
    for op in block.ops:
        reads += op.inputs
        keys = _SUB_BLOCK_ATTRS.get(op.type)
        if keys:
            subs = [op.attrs[k] for k in keys]
            for sub in subs:
                _walk_block(sub, seen, out, reads)
            for sub in subs:
                _walk_values(sub.closure, seen, out)
        _walk_values(op.outputs, seen, out)
    reads += block.results


def ops_under(ops):
    """The ops in `ops` and every op of the blocks they hold (nested ones too)."""
    for op in ops:
        yield op
        for sub in op.sub_blocks():
            yield from ops_under(sub.ops)


def _copy_attrs(value):
    """Attrs are JSON data: copy the mutable containers, share the rest."""
    if isinstance(value, dict):
        return {k: _copy_attrs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_attrs(v) if isinstance(v, (dict, list)) else v for v in value]
    return value
