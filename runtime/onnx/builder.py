"""The graph builder an op's ONNX lowering writes into.

A lowering (`OpDef.onnx`, registered beside the op in `runtime/ops/onnx_lowerings/`)
is `lower(g, op) -> value name | list of value names`: it reads the op's inputs with
`g.value(x, dtype)` (a Variable's ONNX value, cast when asked; a Python literal as
a constant of that dtype) and emits nodes with `g.node("Add", [a, b])`. Nodes are
plain records here; only the exporter turns them into protobuf, so lowerings
never import onnx.

Value names are unique across the model, subgraphs included: a Variable's value
takes the Variable's name in the Program's text (`naming.value_names`: a Variable's
own name is only a hint) the first time it is made (so a model reads like the
Program), every other value a fresh `hint__N`. Values are bound by identity.
"""
from dataclasses import dataclass, field

import numpy as np

from ..ir import Variable
from ..export import ExportError

LITERALS = (bool, int, float)


@dataclass
class ValueType:
    """What a graph input or output holds: a tensor, or a sequence of tensors (a tensor array)."""
    dtype: np.dtype
    shape: tuple                      # -1: unknown dim
    sequence: bool = False
    dim_params: dict = field(default_factory=dict)    # axis -> symbolic dim name

    @staticmethod
    def of(like):
        """The type of a Variable, or of a (dtype, shape) pair."""
        if isinstance(like, ValueType):
            return like
        if isinstance(like, Variable):
            return ValueType(like.dtype, like.static_shape, like.kind == "array")
        dtype, shape = like
        return ValueType(np.dtype(dtype), tuple(shape))


@dataclass
class Node:
    op_type: str
    inputs: list
    outputs: list
    attrs: dict


class Names:
    """Value names for one model: each Variable's name once, then `hint__N`."""

    def __init__(self, reserved):
        self.reserved = set(reserved)     # every Variable's name in the Program's text
        self.taken = set()
        self.counts = {}

    def claim(self, name):
        """`name` itself when unused so far, else a fresh name from it."""
        if name not in self.taken:
            self.taken.add(name)
            return name
        return self.fresh(name)

    def fresh(self, hint):
        n = self.counts.get(hint, 0)
        while True:
            n += 1
            name = f"{hint}__{n}"
            if name not in self.taken and name not in self.reserved:
                break
        self.counts[hint] = n
        self.taken.add(name)
        return name


class GraphBuilder:
    """One ONNX graph (the model's, or an If branch / Loop body) under construction."""

    def __init__(self, names, lower_op, parent=None, name="main", var_names=None):
        self.names, self.parent, self.name = names, parent, name
        self.var_names = var_names if var_names is not None else parent.var_names   # id(Variable) -> its name
        self._lower_op = lower_op          # the exporter's per-op lowering (registry lookup, errors)
        self.nodes, self.inputs, self.outputs = [], [], []
        self.env = {}                      # id(Variable) -> value name
        self.op = None                     # the Operator being lowered (for errors)
        self._constants = {}

    # --- reading op inputs ------------------------------------------------------------------

    def value(self, x, dtype=None):
        """The ONNX value of an op input: a Variable (cast to dtype when given), a literal, or None."""
        if x is None:
            return ""
        if isinstance(x, Variable):
            name = self.lookup(x)
            if dtype is not None and x.kind != "array" and np.dtype(dtype) != x.dtype:
                return self.cast(name, dtype)
            return name
        if isinstance(x, LITERALS) or isinstance(x, np.generic):
            return self.const(x, self.dtype(x) if dtype is None else dtype)
        self.fail(f"an input of type {type(x).__name__} ({x!r}) has no ONNX form")

    def lookup(self, var):
        graph, key = self, id(var)
        while graph is not None:
            if key in graph.env:
                return graph.env[key]
            graph = graph.parent
        raise ExportError(f"value '{self.var_name(var)}' is read before it is defined")

    def var_name(self, var):
        """The Variable's name in the Program's text: what its value is called when free."""
        return self.var_names.get(id(var), var.name)

    @staticmethod
    def dtype(x):
        """A Variable's dtype; NumPy's for a literal (bool, int64, float64)."""
        return x.dtype if isinstance(x, Variable) else np.asarray(x).dtype

    @staticmethod
    def shape(x):
        return x.static_shape if isinstance(x, Variable) else ()

    def rank(self, x):
        return len(self.shape(x))

    def fail(self, reason):
        """Raise ExportError naming the op being lowered and the user's line."""
        op = self.op
        where = f" at {op.origin}" if op is not None and op.origin else ""
        what = f"op '{op.type}'{where}" if op is not None else "the Program"
        raise ExportError(f"cannot export {what} to ONNX: {reason}")

    # --- emitting nodes ---------------------------------------------------------------------

    def node(self, op_type, inputs, outputs=1, **attrs):
        """Append a node; returns its output name (a list when `outputs` != 1)."""
        hint = self.var_name(self.op.outputs[0]) if self.op is not None and self.op.outputs else op_type.lower()
        names = [self.names.fresh(hint) for _ in range(outputs)]
        self.nodes.append(Node(op_type, list(inputs), names, {k: v for k, v in attrs.items() if v is not None}))
        return names[0] if outputs == 1 else names

    def const(self, value, dtype=None):
        """A constant tensor (made once per graph and dtype/value)."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        graph = self
        while graph is not None:
            if key in graph._constants:
                return graph._constants[key]
            graph = graph.parent
        name = self.names.fresh("const")
        self.nodes.append(Node("Constant", [], [name], {"value": array}))
        self._constants[key] = name
        return name

    def ints(self, values):
        """A 1-D int64 constant (axes, shapes, starts...)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    def cast(self, name, dtype):
        return self.node("Cast", [name], to=np.dtype(dtype))

    def scalar_int(self, x):
        """An int (literal or 0-d Variable) as a 0-d int64 value."""
        return self.value(x, np.int64)

    def shape_vector(self, dims):
        """A shape of ints and scalar Variables as a 1-D int64 value."""
        if all(isinstance(d, (int, np.integer)) for d in dims):
            return self.ints(dims)
        parts = [self.ints([d]) if isinstance(d, (int, np.integer)) else
                 self.node("Reshape", [self.value(d, np.int64), self.ints([1])]) for d in dims]
        return self.node("Concat", parts, axis=0)

    def predicate(self, x):
        """A 0-d bool value (If/Loop conditions) from a one-element Variable or literal."""
        name = self.value(x, np.bool_)
        return name if self.rank(x) == 0 else self.node("Reshape", [name, self.ints([])])

    # --- blocks and subgraphs ---------------------------------------------------------------

    def child(self, name):
        return GraphBuilder(self.names, self._lower_op, parent=self, name=name)

    def add_input(self, var_or_name, like):
        """A graph input typed like `like` (a Variable or (dtype, shape)); a Variable's name is bound to it."""
        is_var = isinstance(var_or_name, Variable)
        name = self.names.claim(self.var_name(var_or_name) if is_var else var_or_name)
        if is_var:
            self.env[id(var_or_name)] = name
        self.inputs.append((name, ValueType.of(like)))
        return name

    def add_output(self, name, like, hint="output"):
        """Make `name` an output; through an Identity when it is not this graph's own new value or is one already."""
        produced = {o for node in self.nodes for o in node.outputs if node.op_type != "Constant"}
        if name not in produced or name in {n for n, _ in self.outputs}:
            identity = self.names.claim(hint)
            self.nodes.append(Node("Identity", [name], [identity], {}))
            name = identity
        self.outputs.append((name, ValueType.of(like)))
        return name

    def inline(self, block, values):
        """Lower `block` into this graph with its params bound to `values`; returns its results (as given)."""
        for param, value in zip(block.params, values):
            self.env[id(param)] = value
        self.lower_block(block)
        return block.results

    def lower_block(self, block):
        for op in block.ops:
            self._lower_op(self, op)

    def branch(self, block, out_vars, name):
        """An If branch: `block` lowered into a subgraph returning its results as `out_vars`' types."""
        graph = self.child(name)
        graph.lower_block(block)
        for result, var in zip(block.results, out_vars):
            graph.add_output(graph.value(result, var.dtype), var, hint=f"{name}_{self.var_name(var)}")
        return graph
