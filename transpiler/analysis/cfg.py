"""A control-flow graph of one function body, and one dataflow solver for it.

Liveness (backward, union) and definedness (forward, intersection) are both
instances of `solve`, so loops, jumps and exceptions are modelled once, here.

Nodes are simple statements, plus one node per evaluation step of a compound
statement (an `if`/`while` test, a `for` iterable, the `for` "next item" point
and its target binding, a `with` header, an `except` clause, a `match` subject
and each case pattern). Every compound statement also gets an empty entry and
an empty join node, so "before" and "after the whole statement" are plain
points of the graph. Modelling choices, all conservative:
- any statement in a `try` body may jump to every handler, and to `finally`;
- `finally` is built twice: once on the normal path, once on the exceptional
  and jumping paths (return/break/continue/raise), whose copy then resumes the
  pending jumps; its statements get a span per copy;
- a `match` may run any one case, or none; loop tests are never assumed
  constant (`while True:` can still exit through its test);
- `except E as e:` unbinds `e` when the handler ends, as Python does;
- a `with` never suppresses exceptions.
"""
import collections

import gast

from .activity import TRY_STMTS, effects_of
from .annos import Anno, getanno

_EMPTY = frozenset()


class Node:
    """One step: what it reads, binds and unbinds (`del x`)."""

    __slots__ = ('ast', 'read', 'bound', 'unbound', 'succ', 'pred')

    def __init__(self, ast, read=_EMPTY, bound=_EMPTY, unbound=_EMPTY):
        self.ast, self.read, self.bound, self.unbound = ast, read, bound, unbound
        self.succ, self.pred = [], []

    def __repr__(self):
        return (f'Node({type(self.ast).__name__} line {getattr(self.ast, "lineno", "?")}, '
                f'read={sorted(self.read)}, bound={sorted(self.bound)})')


class Graph:
    """`spans[stmt]` lists (first, last) node pairs: last's "after" is after stmt."""

    def __init__(self):
        self.nodes, self.spans = [], collections.defaultdict(list)
        self.entry, self.exit = self.add(None), self.add(None)

    def add(self, ast, read=_EMPTY, bound=_EMPTY, unbound=_EMPTY):
        node = Node(ast, read, bound, unbound)
        self.nodes.append(node)
        return node


def link(preds, node):
    for pred in preds:
        if node not in pred.succ:
            pred.succ.append(node)
            node.pred.append(pred)


# Frames route jumps: `jump` offers one to the innermost enclosing loop, try or
# finally first; `catch` links it (or records it) and says whether it stops there.

class _Loop:
    def __init__(self, head):
        self.head, self.breaks = head, []

    def catch(self, kind, node):
        if kind == 'break':
            self.breaks.append(node)
        elif kind == 'continue':
            link([node], self.head)
        return kind in ('break', 'continue')


class _Handlers:
    def __init__(self, entries):
        self.entries = entries

    def catch(self, kind, node):
        if kind == 'raise':
            for entry in self.entries:
                link([node], entry)
        return False  # the exception may match no handler and go on up


class _Finally:
    def __init__(self):
        self.kinds = set()

    def catch(self, kind, node):
        self.kinds.add(kind)  # the node is linked to the finally copy later
        return True


def _irrefutable(case):
    """`case _:` or `case name:` without a guard: the match cannot fall through."""
    return (case.guard is None and isinstance(case.pattern, gast.MatchAs)
            and case.pattern.pattern is None)


_JUMPS = {gast.Return: 'return', gast.Raise: 'raise', gast.Break: 'break',
          gast.Continue: 'continue'}


class _Builder:
    def __init__(self, declared):
        self.graph, self.declared, self.frames = Graph(), declared, []

    def node(self, ast, parts=(), preds=()):
        node = self.graph.add(ast, *effects_of(parts, self.declared))
        link(preds, node)
        return node

    def jump(self, kind, node):
        for frame in reversed(self.frames):
            if frame.catch(kind, node):
                return
        link([node], self.graph.exit)

    def block(self, stmts, preds):
        for stmt in stmts:
            preds = self.stmt(stmt, preds)
        return preds

    def stmt(self, stmt, preds):
        build = getattr(self, '_' + type(stmt).__name__, None)
        if isinstance(stmt, TRY_STMTS):
            build = self._Try
        if build is None:
            node = self.node(stmt, [stmt], preds)
            self.graph.spans[stmt].append((node, node))
            if type(stmt) in _JUMPS:
                self.jump(_JUMPS[type(stmt)], node)
                return []
            return [node]
        entry = self.node(None, preds=preds)
        join = self.node(None, preds=build(stmt, entry))
        self.graph.spans[stmt].append((entry, join))
        return [join]

    def _If(self, stmt, entry):
        test = self.node(stmt, [stmt.test], [entry])
        return self.block(stmt.body, [test]) + self.block(stmt.orelse, [test])

    def _loop(self, head, first, stmt):
        """Body from `first` back to `head`; else clause when `head` finds no more."""
        loop = _Loop(head)
        self.frames.append(loop)
        link(self.block(stmt.body, [first]), head)
        self.frames.pop()
        return self.block(stmt.orelse, [head]) + loop.breaks

    def _While(self, stmt, entry):
        test = self.node(stmt, [stmt.test], [entry])
        return self._loop(test, test, stmt)

    def _For(self, stmt, entry):
        iterable = self.node(stmt, [stmt.iter], [entry])
        # next(): the target is not bound yet; an exit flag (a lowered `break`) is read there too
        flag = getanno(stmt, Anno.EXIT_FLAG, None)
        extra = [gast.Name(id=flag, ctx=gast.Load(), annotation=None, type_comment=None)] if flag else []
        head = self.node(None, extra, preds=[iterable])
        target = self.node(stmt, [stmt.target], [head])
        return self._loop(head, target, stmt)

    _AsyncFor = _For

    def _With(self, stmt, entry):
        return self.block(stmt.body, [self.node(stmt, stmt.items, [entry])])

    _AsyncWith = _With

    def _Match(self, stmt, entry):
        subject = self.node(stmt, [stmt.subject], [entry])
        exits = [] if any(map(_irrefutable, stmt.cases)) else [subject]  # no case matched
        for case in stmt.cases:
            pattern = self.node(case, [case.pattern, case.guard], [subject])
            exits += self.block(case.body, [pattern])
        return exits

    def _Try(self, stmt, entry):
        first, final = len(self.graph.nodes), _Finally()
        if stmt.finalbody:
            self.frames.append(final)
        exits = self._try_except(stmt, entry)
        if not stmt.finalbody:
            return exits
        self.frames.pop()
        raisers = [entry] + self.graph.nodes[first:]
        exits = self.block(stmt.finalbody, exits)
        abrupt = self.block(stmt.finalbody, [self.node(None, preds=raisers)])
        for kind in sorted(final.kinds | {'raise'}):
            for node in abrupt:
                self.jump(kind, node)
        return exits

    def _try_except(self, stmt, entry):
        """Body, else and handlers; every step of the body may raise into every handler."""
        handlers = [self.node(h, [h.type, h.name]) for h in stmt.handlers]
        self.frames.append(_Handlers(handlers))
        body_first = len(self.graph.nodes)
        exits = self.block(stmt.body, [entry])
        self.frames.pop()
        for handler in handlers:
            link([entry] + self.graph.nodes[body_first:], handler)
        exits = self.block(stmt.orelse, exits)
        for clause, start in zip(stmt.handlers, handlers):
            ends = self.block(clause.body, [start])
            if clause.name is not None and ends:  # Python deletes `e` of `except E as e`
                unbound = frozenset({clause.name.id}) - self.declared
                cleanup = self.graph.add(clause, unbound=unbound)
                link(ends, cleanup)
                ends = [cleanup]
            exits += ends
        return exits


def build(body, declared=_EMPTY):
    """The CFG of a function body; `declared` are its global/nonlocal names."""
    builder = _Builder(frozenset(declared))
    link(builder.block(body, [builder.graph.entry]), builder.graph.exit)
    return builder.graph


def reachable(graph):
    """The nodes some path from the entry reaches (code after `return` is not)."""
    seen, stack = {graph.entry}, [graph.entry]
    while stack:
        for succ in stack.pop().succ:
            if succ not in seen:
                seen.add(succ)
                stack.append(succ)
    return seen


def solve(graph, *, forward, transfer, meet, boundary, top):
    """Fixpoint of a monotone dataflow problem by worklist.

    `transfer(node, value_flowing_in) -> value_flowing_out`; `meet(values)`
    joins the values of a node's predecessors (successors when backward).
    `boundary` flows into the entry (forward) or the exit (backward); every
    value starts at `top`. Returns (before, after): dicts node -> value at the
    point just before / just after the node, in program order, whatever the
    direction.
    """
    sources = (lambda n: n.pred) if forward else (lambda n: n.succ)
    targets = (lambda n: n.succ) if forward else (lambda n: n.pred)
    start = graph.entry if forward else graph.exit
    inflow, outflow = {}, {node: top for node in graph.nodes}
    work = collections.deque(graph.nodes if forward else reversed(graph.nodes))
    queued = set(work)
    while work:
        node = work.popleft()
        queued.discard(node)
        values = [outflow[source] for source in sources(node)]
        if node is start:
            values.append(boundary)
        inflow[node] = meet(values) if values else top
        value = transfer(node, inflow[node])
        if value != outflow[node]:
            outflow[node] = value
            for target in targets(node):
                if target not in queued:
                    queued.add(target)
                    work.append(target)
    return (inflow, outflow) if forward else (outflow, inflow)
