"""Generated code written as Python source with named holes, instead of hand-built gast.

    templates.replace("name = _jst.convert_setitem(name, index, value)", name="x", index=i, value=v)

gives the statement `x = _jst.convert_setitem(x, i, v)`. A hole is a name of the template;
what fills it:
- a str: a name, in the template's context there (`name` above is stored, then loaded);
  it also fills a hole that names a function (`def fn(params): ...`) or an attribute (`_jst.op(x)`);
- a gast node: that node (a copy where the hole occurs again);
- a list: spliced where the hole stands in a list (`f(args)`, `def f(params)`, a statement
  `body` alone on its line); a list of str in `def f(params)` gives the parameters.
The template is parsed once; the nodes made from it carry no location, so `base.located`
gives them the user's line.
"""
import copy
import functools
import textwrap

import gast

def replace(template, **holes):
    """The template's statements with the holes filled (see the module doc); a hole given that the
    template does not have is a ValueError (a misspelt hole would otherwise be left unfilled)."""
    filler = _Filler(holes)
    made = filler.statements(_parsed(template))
    missing = set(holes) - filler.filled
    if missing:
        raise ValueError(f"holes {sorted(missing)} are not in the template {template!r}")
    return made


def expression(template, **holes):
    """The template's one expression with the holes filled (`_jst.f(a, b)`)."""
    (stmt,) = replace(template, **holes)
    return stmt.value


@functools.lru_cache(maxsize=None)
def _parsed(template):
    return tuple(gast.parse(textwrap.dedent(template)).body)


class _Filler:
    """One filling of a template: every node made anew, holes replaced."""

    def __init__(self, holes):
        self.holes = holes
        self.used = set()       # node holes inserted once: copied from then on
        self.filled = set()

    def statements(self, stmts):
        return self._list(stmts)

    def _value(self, name, ctx):
        value = self.holes[name]
        if isinstance(value, str):
            return gast.Name(id=value, ctx=ctx, annotation=None, type_comment=None)
        if name in self.used:
            return copy.deepcopy(value)
        self.used.add(name)
        return value

    def _hole(self, node):
        """The hole a template node stands for (a name, or a statement that is one name), else None."""
        if isinstance(node, gast.Expr):
            node = node.value
        if isinstance(node, gast.Name) and node.id in self.holes:
            self.filled.add(node.id)
            return node.id
        return None

    def _list(self, nodes):
        out = []
        for node in nodes:
            hole = self._hole(node)
            if hole is not None and isinstance(self.holes[hole], list):
                for item in self.holes[hole]:
                    if isinstance(item, str):
                        ctx = node.ctx if isinstance(node, gast.Name) else gast.Load()
                        out.append(gast.Name(id=item, ctx=type(ctx)(), annotation=None, type_comment=None))
                    else:
                        out.append(item)
                continue
            out.append(self._node(node))
        return out

    def _node(self, node):
        if isinstance(node, list):
            return self._list(node)
        if not isinstance(node, gast.AST):
            return node
        hole = self._hole(node)
        if hole is not None and isinstance(node, gast.Name):
            return self._value(hole, type(node.ctx)())
        fields = {field: self._node(getattr(node, field)) for field in node._fields}
        if isinstance(node, gast.FunctionDef) and isinstance(self.holes.get(node.name), str):
            fields["name"] = self.holes[node.name]
            self.filled.add(node.name)
        elif isinstance(node, gast.Attribute) and isinstance(self.holes.get(node.attr), str):
            fields["attr"] = self.holes[node.attr]
            self.filled.add(node.attr)
        return type(node)(**fields)     # made from its fields alone: no location (the caller locates it)
