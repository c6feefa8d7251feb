"""Graph facts the passes share (and the plan's liveness: `readers`): who defines
and who reads a Variable, and the clean-up every rewrite ends with.

Passes rewrite the Program they are given (a clone made by `run_passes`, which no compiled plan is
keyed by): an op that changes is replaced by its rewrite (`Operator.replace`, `with_inputs`), never
edited in place (a region op's rewrite holds the same blocks: removing its dead slots, `Region.drop`,
edits their params and results). Blocks are closed (`ir.close_blocks`): a pass that makes a block read
a value from outside it (cse reusing an enclosing block's value, licm hoisting an op out of a loop)
closes those reads again with `close_new_reads`; the others keep every read within its block.
"""
from ..ir import Variable, close_blocks
from ..ops.registry import REGISTRY
from ..ops.regions import region_of, sub_blocks  # noqa: F401  (sub_blocks: the passes' name for it)


def blocks_under(op):
    """Every block nested under op (its sub-blocks, theirs, ...), outermost first."""
    out = []
    todo = sub_blocks(op)
    while todo:
        block = todo.pop(0)
        out.append(block)
        for inner in block.ops:
            todo.extend(sub_blocks(inner))
    return out


def is_pure(op):
    """No side effects: a region op is pure when everything inside it is."""
    opdef = REGISTRY[op.type]
    if opdef.region is not None:
        return all(is_pure(inner) for block in sub_blocks(op) for inner in block.ops)
    return opdef.pure


def touches_arrays(op):
    """Whether op reads or makes a tensor array (a mutable list: never merged, moved or folded)."""
    for v in op.inputs:
        if isinstance(v, Variable) and v.kind == "array":
            return True
    for o in op.outputs:
        if o.kind == "array":
            return True
    return False


def is_static(var):
    return -1 not in var.static_shape


def size_of(var):
    n = 1
    for d in var.static_shape:
        n *= d
    return n


def first_axis_scalar(index, dynamic):
    """index is one scalar integer on the first axis: a literal int or one 0-d integer input."""
    if not isinstance(index, (list, tuple)) or len(index) != 1:
        return False
    item = index[0]
    if isinstance(item, bool):
        return False
    if isinstance(item, int):
        return not dynamic
    if isinstance(item, dict) and len(dynamic) == 1 and isinstance(dynamic[0], Variable):
        v = dynamic[0]
        return v.ndim == 0 and v.dtype.kind in "iu"
    return False


def readers(program):
    """id(Variable) -> who reads it: ops (any block's), or None for a block result / Program output."""
    found = {}
    for block in program.blocks:
        for op in block.ops:
            for v in op.inputs:
                if isinstance(v, Variable):
                    found.setdefault(id(v), []).append(op)
        for v in block.results:
            if isinstance(v, Variable):
                found.setdefault(id(v), []).append(None)
    for v in program.outputs:
        found.setdefault(id(v), []).append(None)
    return found


def read_counts(program):
    """id(Variable) -> how many times it is read (`readers`' lists, counted: what fusion asks)."""
    count = {}
    get = count.get
    for block in program.blocks:
        for op in block.ops:
            for v in op.inputs:
                if isinstance(v, Variable):
                    count[id(v)] = get(id(v), 0) + 1
        for v in block.results:
            if isinstance(v, Variable):
                count[id(v)] = get(id(v), 0) + 1
    for v in program.outputs:
        count[id(v)] = get(id(v), 0) + 1
    return count


def last_reads(block):
    """id(Variable) -> index of the last op of block that reads it (a region op reads its closure inputs)."""
    last = {}
    for i, op in enumerate(block.ops):
        for v in op.inputs:
            if isinstance(v, Variable):
                last[id(v)] = i
    return last


def replace_uses(program, mapping):
    """Read mapping[id(v)] wherever v was read (op inputs, block results, program outputs)."""
    if not mapping:
        return

    def sub(x):
        return mapping.get(id(x), x) if isinstance(x, Variable) else x

    for block in program.blocks:
        block.ops = [with_inputs(op, [sub(x) for x in op.inputs]) for op in block.ops]
        block.results = [sub(x) for x in block.results]
    program.outputs = [sub(x) for x in program.outputs]


def with_inputs(op, inputs):
    """op itself when it reads `inputs` already (the same values), else its rewrite reading them."""
    same = len(inputs) == len(op.inputs) and all(a is b for a, b in zip(inputs, op.inputs))
    return op if same else op.replace(inputs=inputs)


def close_new_reads(program):
    """Close the reads a pass made of values outside their block: each region op (inner ones first, so an
    outer op sees a nested op's new inputs) gets a closure input and params for them (`ir.close_blocks`).
    Only region ops' blocks are walked: free for a Program without control flow."""
    def visit(block):
        for i, op in enumerate(block.ops):
            region = region_of(op)
            if region is None:
                continue
            subs = region.blocks(op)
            for sub in subs:
                visit(sub)
            new = close_blocks(subs)
            if new:
                block.ops[i] = op.replace(inputs=list(op.inputs) + new)

    visit(program.global_block)


def outside_values(op):
    """id(closure param of op's blocks) -> the op input it stands for (empty for an ordinary op)."""
    region = region_of(op)
    return {} if region is None else {id(p): x for p, x in region.closure_pairs(op)}


def remove_ops(program, dead):
    """Remove the ops whose id is in `dead` (their outputs go with them: a value is where an op makes it)."""
    if not dead:
        return
    for block in program.blocks:
        block.ops = [op for op in block.ops if id(op) not in dead]


def move_var(var, block):
    """Make var a value of `block` (an op that made it moved there)."""
    var.block = block


class Insertions:
    """Ops to insert before anchor ops, applied to each block in one rebuild of its op list.

    (One `list.index` + slice insert per anchor is quadratic in a block with many loops.)
    """

    def __init__(self):
        self.before = {}        # id(anchor op) -> ops to run just before it
        self.blocks = {}        # id(block) -> block with pending insertions

    def add(self, anchor, ops):
        self.before.setdefault(id(anchor), []).extend(ops)
        self.blocks[id(anchor.block)] = anchor.block

    def apply(self, block):
        if self.blocks.pop(id(block), None) is None:
            return
        ops = []
        for op in block.ops:
            ops.extend(self.before.pop(id(op), ()))
            ops.append(op)
        block.ops = ops

    def apply_all(self):
        for block in list(self.blocks.values()):
            self.apply(block)
