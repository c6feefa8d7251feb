"""Code templates: real Python with placeholder names, filled with gast nodes.

    replace('''
        def NAME(PARAMS):
            BODY
            return RESULT
    ''', NAME="__true_fn_0", PARAMS=["y"], BODY=stmts, RESULT=result_node)

A placeholder is an upper-case name in the template. Filled with a string it
becomes a name; with an expression node, that node; in statement position with
a list of statements, those statements. Every placeholder must be filled (we
check), so reading a template shows exactly what the output looks like.
"""
import copy
import textwrap

import gast


def replace(template, location=None, **subs):
    tree = gast.parse(textwrap.dedent(template))
    filler = _Filler(subs)
    tree = filler.visit(tree)
    missing = set(subs) - filler.used
    if missing:
        raise ValueError(f"template placeholders not found: {sorted(missing)}")
    body = tree.body
    if location is not None:
        for stmt in body:
            for node in gast.walk(stmt):
                if hasattr(node, "lineno"):
                    gast.copy_location(node, location)
                    if hasattr(location, "end_lineno"):
                        node.end_lineno = location.end_lineno
    return body


def replace_expr(template, location=None, **subs):
    (stmt,) = replace(template, location, **subs)
    return stmt.value


def name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


class _Filler(gast.NodeTransformer):
    def __init__(self, subs):
        self.subs = subs
        self.used = set()

    def _take(self, key):
        """The substitute; a node used a second time is copied so the tree stays a tree."""
        value = self.subs[key]
        if key in self.used and isinstance(value, (gast.AST, list)):
            value = copy.deepcopy(value)
        self.used.add(key)
        return value

    def visit_Expr(self, node):
        if isinstance(node.value, gast.Name) and node.value.id in self.subs:
            value = self._take(node.value.id)
            if isinstance(value, list):
                return value
            if isinstance(value, gast.stmt):
                return value
            node.value = value if isinstance(value, gast.AST) else name(value)
            return node
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id not in self.subs:
            return node
        value = self._take(node.id)
        if isinstance(value, str):
            node.id = value
            return node
        if isinstance(value, (list, tuple)):
            elts = [name(v) if isinstance(v, str) else v for v in value]
            return gast.Tuple(elts=elts, ctx=node.ctx)
        if isinstance(node.ctx, gast.Store):
            value = _with_ctx(value, gast.Store())
        return value

    def visit_FunctionDef(self, node):
        if node.name in self.subs:
            node.name = self._take(node.name)
        args = node.args.args
        if len(args) == 1 and args[0].id in self.subs:
            params = self._take(args[0].id)
            node.args.args = [gast.Name(id=p, ctx=gast.Param(), annotation=None, type_comment=None)
                              for p in params]
        return self.generic_visit(node)


def _with_ctx(node, ctx):
    node = copy.deepcopy(node)
    if isinstance(node, (gast.Name, gast.Attribute, gast.Subscript)):
        node.ctx = ctx
    elif isinstance(node, (gast.Tuple, gast.List)):
        node.ctx = ctx
        node.elts = [_with_ctx(e, ctx) for e in node.elts]
    return node
