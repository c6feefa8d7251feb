"""Activity: which names a piece of code reads and binds, in one function scope.

This is the first analysis (AutoGraph calls it activity analysis): the CFG takes
each step's read/bound/unbound names from here, and transformers take the
names flowing through a branch or loop body from the BODY/ORELSE/TEST
annotations written by `annotate_activity`.

Scope rules, matching Python's:
- `x[i] = v`, `x[i] += v`, `del x[i]` read AND modify `x` where `x` is local: the
  transpiler turns a subscript store into a functional update that rebinds `x`.
  So does a call of a mutating list/dict method (`x.pop()`). Both are collected
  apart (`subscripted`, `mutated`): they do not make `x` local, as in Python, and
  `annotate_activity` counts them as modified where `x` is local and as the
  contents of an outside list/dict (a global's) otherwise.
- `x.a = v`, `x.a[k] = v`, `x.a.append(v)` only read `x`; the place they write is
  a `Composite` (AutoGraph's composite names): state carried through `if`/`while`
  like a name, but written on the object (see `runtime.state`).
- nested `def`/`lambda`/`class`/comprehensions are scopes of their own: only the
  def/class name is bound outside, and the names they read freely count as reads
  where they are defined (with decorators, defaults and annotations, which run
  there too). A comprehension's first iterable runs outside it; a walrus inside a
  comprehension binds in the enclosing function.
- names declared `global`/`nonlocal` are not local: they are left out of `read`
  and `modified` and reported in `globals`/`nonlocals`.
`read` keeps every other loaded name, builtins and module globals included:
only the whole function knows which names are local (SCOPE.params | SCOPE.modified).
"""
import ast
import dataclasses

import gast

from .annos import Anno, setanno
from .scope import own_scope

_EMPTY = frozenset()
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
                      "setdefault", "popitem"})


@dataclasses.dataclass(frozen=True)
class Activity:
    """Names a block loads (`read`) and binds or unbinds (`modified`), and the
    function's `global`/`nonlocal` declarations; `params` only on SCOPE;
    `mutated`: names whose list/dict a method call changes; `subscripted`: names whose
    items a subscript store or `del` changes (`x[i] = v`); `composites`: the
    attribute and item places the block writes."""

    read: frozenset
    modified: frozenset
    globals: frozenset = _EMPTY
    nonlocals: frozenset = _EMPTY
    params: frozenset = _EMPTY
    mutated: frozenset = _EMPTY
    composites: frozenset = _EMPTY
    subscripted: frozenset = _EMPTY


@dataclasses.dataclass(frozen=True)
class Composite:
    """A place written through an object: `self.n` ("attr"), `self.d['k']` ("item", constant key),
    or all of a list/dict (`self.log`, "contents": an append, pop or computed index)."""

    kind: str
    text: str          # as the user wrote it: what errors call it
    root: str          # the name the expression starts from
    node: object = dataclasses.field(compare=False, hash=False)   # attr/item: the target; contents: the object

    @property
    def container(self):
        """The expression of the object that holds the place."""
        return self.node if self.kind == "contents" else self.node.value


def _root_name(node):
    """The name an attribute/subscript chain starts from, or None (a call, a computed key on the way)."""
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        if isinstance(node, gast.Subscript) and not isinstance(node.slice, gast.Constant):
            return None
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def expr_text(node):
    """An expression as the user would write it."""
    return ast.unparse(gast.gast_to_ast(node))


def _composite(kind, node):
    root = _root_name(node.value if kind in ("attr", "item") else node)
    return None if root is None else Composite(kind, expr_text(node), root, node)


def _only_subscripts(node):
    while isinstance(node, gast.Subscript):
        node = node.value
    return isinstance(node, gast.Name)


class _Collector(gast.NodeVisitor):
    """Names one scope loads and binds; nested scopes fold in as free reads."""

    def __init__(self, in_comprehension=False):
        self.read, self.modified, self.deleted = set(), set(), set()
        self.globals, self.nonlocals = set(), set()
        self.leaked = set()  # walrus targets of a comprehension: bound one scope up
        self.maybe, self.stored = set(), set()  # walrus that may not run; plain stores
        self.mutated, self.composites, self.subscripted = set(), set(), set()
        self.in_comprehension, self.conditional = in_comprehension, 0

    def visit_all(self, nodes):
        for node in nodes:
            if node is not None:
                self.visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load):
            self.read.add(node.id)
        elif isinstance(node.ctx, gast.Store):
            self.modified.add(node.id)
            self.stored.add(node.id)
        elif isinstance(node.ctx, gast.Del):
            self.modified.add(node.id)
            self.deleted.add(node.id)
        # Param: bound by the call, not the body; callers add `param_names`.

    def visit_AugAssign(self, node):
        if isinstance(node.target, gast.Name):
            self.read.add(node.target.id)
        self.generic_visit(node)

    def visit_Subscript(self, node):
        if not isinstance(node.ctx, gast.Load):
            if _only_subscripts(node):
                root = node.value
                while isinstance(root, gast.Subscript):
                    root = root.value
                self.subscripted.add(root.id)
            elif isinstance(node.slice, gast.Constant):
                self._add_composite("item", node)
            else:
                self._add_composite("contents", node.value)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if not isinstance(node.ctx, gast.Load):
            self._add_composite("attr", node)
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, gast.Attribute) and func.attr in MUTATORS:
            if isinstance(func.value, gast.Name):
                self.mutated.add(func.value.id)
            else:
                self._add_composite("contents", func.value)
        self.generic_visit(node)

    def _add_composite(self, kind, node):
        composite = _composite(kind, node)
        if composite is not None:
            self.composites.add(composite)

    def visit_AnnAssign(self, node):
        # Annotations of locals are never evaluated (PEP 526); `x: int` binds nothing.
        if node.value is not None:
            self.visit_all([node.value, node.target])
        elif not isinstance(node.target, gast.Name):
            self.generic_visit(node.target)

    def visit_Global(self, node):
        self.globals.update(node.names)

    def visit_Nonlocal(self, node):
        self.nonlocals.update(node.names)

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name != '*':
                self.modified.add(alias.asname or alias.name.split('.')[0])

    visit_ImportFrom = visit_Import

    def visit_MatchAs(self, node):
        if node.name:
            self.modified.add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node):
        if node.rest:
            self.modified.add(node.rest)
        self.generic_visit(node)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        if self.in_comprehension:
            self.leaked.add(node.target.id)
        elif self.conditional:
            self.modified.add(node.target.id)
            self.maybe.add(node.target.id)
        else:
            self.visit(node.target)

    def _visit_conditionally(self, nodes):
        self.conditional += 1
        self.visit_all(nodes)
        self.conditional -= 1

    def visit_BoolOp(self, node):
        self.visit(node.values[0])
        self._visit_conditionally(node.values[1:])

    def visit_IfExp(self, node):
        self.visit(node.test)
        self._visit_conditionally([node.body, node.orelse])

    # Nested scopes.

    def visit_FunctionDef(self, node):
        self.modified.add(node.name)
        self.visit_all(node.decorator_list)
        self._visit_signature(node.args)
        self.visit_all([node.returns])
        self.read |= _free_names(node.body, param_names(node.args))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._visit_signature(node.args)
        self.read |= _free_names([node.body], param_names(node.args))

    def visit_ClassDef(self, node):
        self.modified.add(node.name)
        self.visit_all(node.decorator_list + node.bases + node.keywords)
        self.read |= _free_names(node.body, _EMPTY)

    def _visit_signature(self, args):
        self.visit_all(args.defaults + args.kw_defaults)
        self.visit_all(p.annotation for p in _params(args))

    def _visit_comprehension(self, node, results):
        first = node.generators[0]
        self.visit(first.iter)
        inner = _Collector(in_comprehension=True)
        inner.visit_all([first.target, *first.ifs, *node.generators[1:], *results])
        self.read |= inner.read - inner.modified
        (self.leaked if self.in_comprehension else self.modified).update(inner.leaked)
        self.maybe |= inner.leaked  # the comprehension may run zero times

    def visit_ListComp(self, node):
        self._visit_comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._visit_comprehension(node, [node.key, node.value])


def _params(args):
    extra = [p for p in (args.vararg, args.kwarg) if p is not None]
    return args.posonlyargs + args.args + args.kwonlyargs + extra


def param_names(args):
    """Names a call binds: every kind of parameter of a gast.arguments."""
    return frozenset(p.id for p in _params(args))


def _free_names(body, params):
    inner = _Collector()
    inner.visit_all(body)
    declared = inner.globals | inner.nonlocals
    local = (inner.modified | params) - declared
    # A `nonlocal x` inside refers to (and keeps alive) the enclosing x.
    return (inner.read | inner.nonlocals) - local - inner.globals


def _collect(node):
    collector = _Collector()
    collector.visit_all(node if isinstance(node, (list, tuple)) else [node])
    return collector


def activity_of(node, *, globals_=_EMPTY, nonlocals=_EMPTY):
    """Activity of a statement list or an expression (or any gast node/list).

    `globals_`/`nonlocals` are the enclosing function's declarations, which a
    sub-block cannot see by itself; declarations found in `node` are added.
    """
    c = _collect(node)
    globals_, nonlocals = frozenset(c.globals | globals_), frozenset(c.nonlocals | nonlocals)
    declared = globals_ | nonlocals
    return Activity(read=frozenset(c.read - declared), modified=frozenset(c.modified - declared),
                    globals=globals_, nonlocals=nonlocals, mutated=frozenset(c.mutated),
                    composites=frozenset(c.composites), subscripted=frozenset(c.subscripted - declared))


def effects_of(parts, declared=_EMPTY):
    """(read, bound, unbound) names of parts evaluated as one step: a CFG node.

    `bound` holds only names the step surely binds: a walrus behind `and`/`or`,
    in a conditional expression or in a comprehension may not run.
    """
    c = _collect(list(parts))
    deleted = frozenset(c.deleted) - declared
    bound = frozenset(c.modified | c.subscripted) - declared - deleted - (c.maybe - c.stored)
    return frozenset(c.read) - declared, bound, deleted


TRY_STMTS = (gast.Try, getattr(gast, 'TryStar', gast.Try))  # TryStar: gast >= 0.5.4
_COMPOUND = (gast.If, gast.While, gast.For, gast.AsyncFor, gast.With, gast.AsyncWith) + TRY_STMTS


def scope_statements(stmts):
    """Every statement of a scope, depth first, not entering nested defs/classes."""
    return (node for node in own_scope(stmts) if isinstance(node, gast.stmt))


def annotate_activity(fn_node):
    """Write BODY/ORELSE/TEST activities on the function's statements, SCOPE on it."""
    scope = activity_of(fn_node.body)
    scope = dataclasses.replace(scope, params=param_names(fn_node.args))
    setanno(fn_node, Anno.SCOPE, scope)

    local = (scope.modified | scope.params) - scope.globals - scope.nonlocals

    def of(node):
        act = activity_of(node, globals_=scope.globals, nonlocals=scope.nonlocals)
        changed = act.mutated | act.subscripted
        if not changed:
            return act
        # a local list/dict changed in place is rebound (`x[i] = v` is a functional update); another one,
        # a global's, is a place
        outside = {Composite("contents", name, name, gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                                               type_comment=None))
                   for name in changed - local}
        return dataclasses.replace(act, modified=act.modified | (changed & local),
                                   composites=act.composites | outside)

    for stmt in scope_statements(fn_node.body):
        if isinstance(stmt, (gast.If, gast.While, gast.For, gast.AsyncFor)):
            setanno(stmt, Anno.ORELSE_ACTIVITY, of(stmt.orelse))
        if isinstance(stmt, (gast.If, gast.While)):
            setanno(stmt, Anno.TEST_ACTIVITY, of(stmt.test))
        elif isinstance(stmt, (gast.For, gast.AsyncFor)):
            setanno(stmt, Anno.TEST_ACTIVITY, of([stmt.iter, stmt.target]))
        if isinstance(stmt, _COMPOUND):
            setanno(stmt, Anno.BODY_ACTIVITY, of(stmt.body))
    return scope
