"""`if`, `while` and `for` → functions and one runtime operator call each.

    if x.mean() > 0:                  def __true_fn_0(y):
        y = x * 2                         y = x * 2
    else:                     →           return y
        y = x - 1                     def __false_fn_0(y):
                                          y = x - 1
                                          return y
                                      y = _jst.convert_ifelse(x.mean() > 0, __true_fn_0, __false_fn_0, (y,), ('y',))

Which names flow in and out comes from the analysis annotations, computed once
on the tree after jumps were lowered:
- outputs of an `if` = names either branch binds that are live after it, and names whose list/dict
  it changes in place only (another name may hold that object: `m2 = m; if c: m['a'] = v`);
- loop variables = names the body binds that are live at the loop's entry or
  after it (a name used only inside the body stays local to the body);
- a branch/body function takes as parameters the outputs plus the names it
  binds and reads, passed in by value (so `y = y + 1` works in a nested def);
- a parameter with no value yet (and not read before the statement) starts as
  `_jst.undefined('y')`: harmless until read, an UnboundLocalError when read;
- a name a closure captures (`def via(): return i`) stays the enclosing
  function's variable: the body function takes it as `__i_0`, declares
  `nonlocal i` and sets `i = __i_0` first, so the closure sees what Python shows it;
  a `global`/`nonlocal` name the body rebinds is kept the same way (`global n`)
  and always flows out (its scope outlives the call).
Inner statements are converted first; the operators decide at run time
whether the condition is a Python value (plain Python control flow) or a
tensor (a `cond`/`while` op). Two things are decided here instead: an `if`
whose test is a Python bool whatever its operands (`x is not None`) stays as
written, and an `if` without `else` that only passes its parameters through
gets `None` for its false function. A `for` loop's exit flag
(`Anno.EXIT_FLAG`) is passed by name: `_jst.convert_for(..., until='__break_0')`.
"""
import gast

from ..analysis import Anno, getanno, maybe_defined_in, rebound_names
from ..analysis.closures import has_call, rebound_by_closures, written_by_closures
from ..analysis.scope import assigned_names
from . import templates
from .base import Transformer, const, jst, load, located, store
from .expressions import mark_truth_only, python_valued
from .state import (call_sites, changed_arguments, changed_only_in_place, state_keyword, tensor_writers,
                    written_into)


def _names_tuple(names):
    return gast.Tuple(elts=[load(n) for n in names], ctx=gast.Load())


def _str_tuple(names):
    return gast.Tuple(elts=[const(n) for n in names], ctx=gast.Load())


def _return(names):
    if not names:
        return []
    value = load(names[0]) if len(names) == 1 else _names_tuple(names)
    return [gast.Return(value=value)]


def _def(name, params, body, origin, cells=None, globals_=frozenset()):
    """`def name(params): body`; `cells` maps a parameter kept in the enclosing scope (a global
    when in `globals_`, else the enclosing function's variable) to the parameter's own name."""
    cells = cells or {}
    prologue = []
    outer = sorted(n for n in cells if n in globals_)
    enclosing = sorted(n for n in cells if n not in globals_)
    if outer:
        prologue.append(gast.Global(names=outer))
    if enclosing:
        prologue.append(gast.Nonlocal(names=enclosing))
    prologue += [stmt for n in sorted(cells) for stmt in templates.replace("name = cell", name=n, cell=cells[n])]
    (fn,) = templates.replace("def fn(params):\n    body", fn=name, params=[cells.get(p, p) for p in params],
                              body=prologue + body or [gast.Pass()])
    return located(fn, origin)


def _bind(names, call, origin):
    """`a, b = call` / `a = call` / `call` for zero names."""
    if not names:
        return located(gast.Expr(value=call), origin)
    target = store(names[0]) if len(names) == 1 else gast.Tuple(elts=[store(n) for n in names], ctx=gast.Store())
    return located(gast.Assign(targets=[target], value=call, type_comment=None), origin)


def _call(op, args):
    return gast.Call(func=jst(op), args=args, keywords=[])


def _add_state(call, composites, bound, into=(), calls=(), tensors=()):
    keyword = state_keyword(composites, bound, into, calls, tensors)
    if keyword is not None:
        call.keywords.append(keyword)


class ControlFlow(Transformer):
    statements_only = True
    constructs = frozenset({"If", "While", "For", "Try", "TryStar"})

    def transform(self, fn_node):
        scope = getanno(fn_node, Anno.SCOPE)
        self.globals, self.declared = scope.globals, scope.globals | scope.nonlocals
        self.captured = getanno(fn_node, Anno.CAPTURED)
        self.rebound_by_calls = rebound_by_closures(fn_node, scope.params | scope.modified)
        self.written_by_calls = written_by_closures(fn_node, self.captured)
        return super().transform(fn_node)

    def _written_by_calls(self, *blocks):
        """Where the blocks (as written) call something: the places a closure of the function writes
        through a captured name (`def bump(): c.k += 1` called in a loop body) are state too."""
        stmts = [stmt for block in blocks for stmt in block]
        return self.written_by_calls if has_call(stmts) else frozenset()

    def _call_sites(self, stmts, targets=()):
        """The calls of these statements that may write through what they are given (`transforms/state.call_sites`)."""
        return call_sites(stmts, assigned_names(list(stmts) + list(targets)), self.ctx.resolve)

    def _def(self, name, params, body, origin):
        """A branch/body function; captured and global/nonlocal names stay the enclosing scope's (module doc)."""
        cells = {p: self.ctx.namer.new(p.strip("_")) for p in params if p in self.captured or p in self.declared}
        return _def(name, params, body, origin, cells, self.globals)

    def _args(self, names):
        """The values passed in: a global/nonlocal may have none yet (`_jst.outer_value` → Undefined)."""
        def arg(name):
            if name not in self.declared:
                return load(name)
            return templates.expression("_jst.outer_value(lambda: name, key)", name=name, key=const(name))
        return gast.Tuple(elts=[arg(n) for n in names], ctx=gast.Load())

    def _rebound_declared(self, *blocks):
        """Names these blocks rebind that flow out whatever liveness says: global/nonlocal names (their
        scope outlives the call), and names a closure rebinds (`nonlocal n` in a def) when a block calls."""
        stmts = [stmt for block in blocks for stmt in block]
        return rebound_names(stmts, self.declared) | (self.rebound_by_calls if has_call(stmts) else frozenset())

    def visit_If(self, node):
        declared = self._rebound_declared(node.body, node.orelse)
        by_calls = self._written_by_calls(node.body, node.orelse)
        into = written_into(node.body + node.orelse) - self.declared
        calls = self._call_sites(node.body + node.orelse)
        tensors = tensor_writers(node.body + node.orelse, assigned_names(node.body + node.orelse))
        in_place = changed_only_in_place(node.body + node.orelse) | changed_arguments(self.ctx.fn_node,
                                                                                      node.body + node.orelse)
        node.body = self.visit_block(node.body)
        node.orelse = self.visit_block(node.orelse)
        if python_valued(node.test):        # `if self.downsample is not None:` is Python's own `if`
            return node
        body_act = getanno(node, Anno.BODY_ACTIVITY)
        else_act = getanno(node, Anno.ORELSE_ACTIVITY)
        live_in = getanno(node, Anno.LIVE_IN)
        live_out = getanno(node, Anno.LIVE_OUT)
        modified = body_act.modified | else_act.modified
        outputs = sorted(modified & (live_out | in_place) | declared)
        params = sorted(modified & (live_in | set(outputs)) | declared)
        true_name = self.ctx.namer.new("true_fn")
        stmts = self._undefined_inits(node, params, live_in)
        stmts.append(self._def(true_name, params, node.body + _return(outputs), node))
        if node.orelse or params != outputs or any(p in self.captured or p in self.declared for p in params):
            false_fn = load(self.ctx.namer.new("false_fn"))
            stmts.append(self._def(false_fn.id, params, node.orelse + _return(outputs), node))
        else:                               # nothing to do but pass the outputs through
            false_fn = const(None)
        call = _call("convert_ifelse", [mark_truth_only(node.test), load(true_name), false_fn, self._args(params),
                                        _str_tuple(outputs)])
        _add_state(call, body_act.composites | else_act.composites | by_calls, modified, into, calls, tensors)
        stmts.append(_bind(outputs, located(call, node), node))
        return stmts

    def visit_While(self, node):
        declared = self._rebound_declared(node.body)
        by_calls = self._written_by_calls(node.body, [gast.Expr(value=node.test)])
        calls = self._call_sites(node.body + [gast.Expr(value=node.test)])
        tensors = tensor_writers(node.body, assigned_names(node.body))
        node.body = self.visit_block(node.body)
        body_act = getanno(node, Anno.BODY_ACTIVITY)
        live_in, live_out = getanno(node, Anno.LIVE_IN), getanno(node, Anno.LIVE_OUT)
        loop_vars = sorted(body_act.modified & (live_in | live_out | changed_arguments(self.ctx.fn_node, node.body))
                           | declared)
        namer = self.ctx.namer
        cond_name, body_name = namer.new("while_cond"), namer.new("while_body")
        stmts = self._undefined_inits(node, loop_vars, live_in)
        stmts.append(self._def(cond_name, loop_vars, [located(gast.Return(value=node.test), node.test)], node))
        stmts.append(self._def(body_name, loop_vars, node.body + _return(loop_vars), node))
        call = _call("convert_while", [load(cond_name), load(body_name), self._args(loop_vars),
                                       _str_tuple(loop_vars)])
        _add_state(call, body_act.composites | by_calls, body_act.modified, calls=calls, tensors=tensors)
        stmts.append(_bind(loop_vars, located(call, node), node))
        return stmts

    def visit_For(self, node):
        declared = self._rebound_declared(node.body, [node.target])
        by_calls = self._written_by_calls(node.body)
        calls = self._call_sites(node.body, [node.target])
        tensors = tensor_writers(node.body, assigned_names(node.body + [node.target]))
        node.body = self.visit_block(node.body)
        body_act = getanno(node, Anno.BODY_ACTIVITY)
        target_act = getanno(node, Anno.TEST_ACTIVITY)
        live_in, live_out = getanno(node, Anno.LIVE_IN), getanno(node, Anno.LIVE_OUT)
        targets = target_act.modified
        break_flag = getanno(node, Anno.EXIT_FLAG, None)
        loop_vars = set((body_act.modified | targets) & (live_in | live_out | changed_arguments(self.ctx.fn_node,
                                                                                                 node.body)))
        loop_vars |= declared
        if break_flag:
            loop_vars.add(break_flag)
        loop_vars = sorted(loop_vars)
        namer = self.ctx.namer
        body_name = namer.new("for_body")
        if isinstance(node.target, gast.Name) and node.target.id not in loop_vars:
            item, body = node.target.id, node.body
        else:
            item = namer.new("item")
            body = [located(stmt, node) for stmt in templates.replace("target = item", target=node.target, item=item)]
            body += node.body
        stmts = self._undefined_inits(node, loop_vars, live_in)
        stmts.append(self._def(body_name, [item] + loop_vars, body + _return(loop_vars), node))
        call = _call("convert_for", [node.iter, load(body_name), self._args(loop_vars), _str_tuple(loop_vars)])
        if break_flag:
            call.keywords.append(gast.keyword(arg="until", value=const(break_flag)))
        _add_state(call, body_act.composites | by_calls, body_act.modified | targets, calls=calls, tensors=tensors)
        stmts.append(_bind(loop_vars, located(call, node), node))
        return stmts

    def _undefined_inits(self, node, names, live_in):
        """`y = _jst.undefined('y')` for parameters with no value yet on some path.

        Safe where the old value is never read (not live in), and needed where no
        path has bound the name yet; a name bound on some paths and read keeps its value.
        """
        defined = getanno(node, Anno.DEFINED_IN)
        out = []
        for name in names:
            if name in defined or name in self.declared:
                continue
            if name not in live_in or name not in maybe_defined_in(self.ctx.fn_node, node):
                out += [located(stmt, node) for stmt in
                        templates.replace("name = _jst.undefined(key)", name=name, key=const(name))]
        return out

    def visit_Try(self, node):
        """The try machinery stays Python (it runs while tracing); control flow inside converts.

        A graph cannot catch at run time, so an exception raised while tracing a
        tensor-dependent region of the body must not be handled as if it had
        happened: each handler first lets `_jst.check_caught` refuse such an exception.
        """
        self.generic_visit(node)
        if isinstance(node, gast.Try):      # `except*` receives groups: left as written
            for handler in node.handlers:
                if handler.name is None:
                    handler.name = store(self.ctx.namer.new("caught"))
                check = templates.replace("_jst.check_caught(caught)", caught=handler.name.id)
                handler.body[:0] = [located(stmt, handler) for stmt in
                                    check + self._partial_state(handler.name.id, node.body)]
        return node

    def _partial_state(self, caught, body):
        """`x = partial[x]` for each name the try body binds, where the exception left a branch or loop body
        run as Python with x bound there (Python's locals would hold it: `operators.partial_state`)."""
        names = sorted(name for name in assigned_names(body) if not name.startswith("__"))
        if not names:
            return []
        partial = self.ctx.namer.new("partial")
        out = templates.replace("partial = _jst.partial_state(caught)", partial=partial, caught=caught)
        for name in names:
            out += templates.replace("if key in partial:\n    name = partial[key]", key=const(name), partial=partial,
                                     name=name)
        return out

    visit_TryStar = visit_Try
