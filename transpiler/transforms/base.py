"""What every transform shares: the conversion context and a base transformer."""
import gast

from ..analysis import Anno, getanno
from ..errors import ConversionError

JST = "_jst"   # the name converted code uses for transpiler.operators


class Context:
    """One function's conversion: its file, namer, and what names resolve to at conversion time."""

    def __init__(self, fn_node, filename, namer, resolve):
        self.fn_node = fn_node
        self.filename = filename
        self.namer = namer
        self.resolve = resolve     # name -> (found, value) from the function's globals/closure/builtins

    def error(self, node, message, hint=None):
        return ConversionError(message, self.filename, getattr(node, "lineno", None), hint)


class Transformer(gast.NodeTransformer):
    """Base: holds the context; skips nested user functions (already converted on their own).

    A transform that rewrites statements only sets `statements_only`: its visit then enters the
    statement blocks of a node (body, orelse, finalbody, handlers, cases) and never an expression,
    where it would find nothing to do (a statement never stands inside an expression) at the cost
    of a call per node.
    """

    statements_only = False
    # names of the node types whose presence gives this transform something to do (see `applies`);
    # None: it always runs
    constructs = None

    def __init__(self, ctx):
        self.ctx = ctx

    def generic_visit(self, node):
        if not self.statements_only:
            return super().generic_visit(node)
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if isinstance(block, list):     # a Lambda's body is an expression
                block[:] = self.visit_block(block)
        return node

    def visit_Constant(self, node):
        # a leaf; not ast.NodeVisitor's visit_Constant, which looks for the deprecated visit_Num, visit_Str, ...
        # of the transform on every constant
        return node

    def visit_FunctionDef(self, node):
        if getanno(node, Anno.CONVERTED, False):
            return node
        return self.generic_visit(node)

    @classmethod
    def applies(cls, fn_node, present):
        """Whether this transform can change fn_node, whose own scope holds nodes of the types named in
        `present`: a transform over a construct the function does not use is skipped, so straight-line
        code pays no walk per transform. fn_node may be a gast or a plain `ast` FunctionDef."""
        return cls.constructs is None or not present.isdisjoint(cls.constructs)

    def transform(self, fn_node):
        fn_node.body = self.visit_block(fn_node.body)
        return fn_node

    def visit_block(self, stmts):
        out = []
        for stmt in stmts:
            new = self.visit(stmt)
            if new is None:
                continue
            out.extend(new if isinstance(new, list) else [new])
        return out


_BLOCKS = ("body", "orelse", "handlers", "finalbody", "cases")


def is_jst_call(node):
    """A call to one of our operators (`_jst.x(...)`), which transforms leave alone."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == JST)


def jst(attr):
    return gast.Attribute(value=gast.Name(id=JST, ctx=gast.Load(), annotation=None, type_comment=None),
                          attr=attr, ctx=gast.Load())


def store(id_):
    return gast.Name(id=id_, ctx=gast.Store(), annotation=None, type_comment=None)


def load(id_):
    return gast.Name(id=id_, ctx=gast.Load(), annotation=None, type_comment=None)


def const(value):
    return gast.Constant(value=value, kind=None)


def located(node, origin):
    """Give `node` and its descendants without a location the first line of `origin`.

    One line, not origin's whole span: CPython (3.12+) places a method call at
    its attribute's *end* line, which for a copied multi-line span would be the
    last line of the user's `if`, not its first.
    """
    line, col = getattr(origin, "lineno", None), getattr(origin, "col_offset", 0) or 0
    stack = [node]
    while stack:   # a located node's subtree is located already (the user's or an earlier call's): skip it
        child = stack.pop()
        if "lineno" in child._attributes:
            if getattr(child, "lineno", None) is not None:
                continue
            child.lineno, child.col_offset = line, col
            child.end_lineno, child.end_col_offset = line, col
        stack.extend(gast.iter_child_nodes(child))
    return node
