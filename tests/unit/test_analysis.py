"""Tests of transpiler.analysis: activity, liveness and definedness.

Each case is a small function; the statement a case is about carries a `# <`
comment. Expected sets are exact, so a case fails on any extra or missing name.
A property test checks liveness and definedness against an independent oracle
that enumerates the paths of random loop-and-branch programs.
"""
import textwrap

import gast
import pytest
from hypothesis import given, settings, strategies as st

from transpiler.analysis import Activity, Anno, activity_of, analyze, getanno, hasanno, setanno
from transpiler.analysis.activity import scope_statements


def analyzed(src):
    fn = gast.parse(textwrap.dedent(src)).body[0]
    analyze(fn)
    return fn


def marked(fn, src):
    """The outermost statement on the line carrying `# <`."""
    lines = textwrap.dedent(src).splitlines()
    lineno = next(i for i, line in enumerate(lines, 1) if '# <' in line)
    return next(n for n in gast.walk(fn)
                if isinstance(n, gast.stmt) and getattr(n, 'lineno', None) == lineno)


def case(name, src, expected):
    return pytest.param(src, frozenset(expected), id=name)


# ---------------------------------------------------------------- liveness

LIVE_IN = [
    case('if-else-reads-test-and-branches', '''
        def f(c, x):
            if c:  # <
                y = x
            else:
                y = 2
            return y
    ''', {'c', 'x'}),
    case('if-without-else-keeps-old-value-live', '''
        def f(c, x, y):
            if c:  # <
                y = x
            return y
    ''', {'c', 'x', 'y'}),
    case('body-local-not-live-at-loop-entry', '''
        def f(n, x):
            i = 0
            while i < n:  # <
                t = x * 2
                x = t + 1
                i += 1
            return x
    ''', {'i', 'n', 'x'}),
    case('loop-carried-accumulator', '''
        def f(xs):
            s = 0
            for v in xs:  # <
                s = s + v
            return s
    ''', {'s', 'xs'}),
    case('read-before-write-in-body-is-live-at-entry', '''
        def f(xs):
            for v in xs:  # <
                print(t)
                t = v
    ''', {'t', 'xs'}),
    case('for-target-not-live-at-entry', '''
        def f(n):
            for i in range(n):  # <
                y = i
    ''', {'n'}),
    case('for-target-read-after-loop-may-keep-old-value', '''
        def f(r, i):
            for i in r:  # <
                pass
            return i
    ''', {'i', 'r'}),
    case('iterable-evaluated-once', '''
        def f(xs):
            for x in xs:  # <
                xs = x
    ''', {'xs'}),
    case('inner-loop-does-not-reread-outer-range', '''
        def f(n, m):
            total = 0
            for i in range(n):
                for j in range(m):  # <
                    total = total + i * j
            return total
    ''', {'m', 'total', 'i'}),
    case('outer-loop-nested', '''
        def f(n, m):
            total = 0
            for i in range(n):  # <
                for j in range(m):
                    total = total + i * j
            return total
    ''', {'n', 'm', 'total'}),
    case('break-goes-to-after-loop', '''
        def f(xs, y):
            for x in xs:
                if x:
                    break  # <
                y = x
            return y
    ''', {'y'}),
    case('continue-in-for-goes-to-next-item', '''
        def f(xs, y):
            for x in xs:
                if x:
                    continue  # <
                y = y + x
            return y
    ''', {'y'}),
    case('continue-in-while-goes-to-test', '''
        def f(n, i):
            while i < n:
                i += 1
                if i:
                    continue  # <
                print(0)
    ''', {'i', 'n'}),
    case('return-reads-only-its-value', '''
        def f(x, y):
            if x:
                return x  # <
            return y
    ''', {'x'}),
    case('raise-reads-only-its-value', '''
        def f(x, y, z):
            if x:
                raise ValueError(y)  # <
            return z
    ''', {'y'}),
    case('def-reads-free-names-and-defaults', '''
        def f(a, b, d):
            @deco(d)
            def g(c, k=b):  # <
                u = c
                return a + c + u
            return g
    ''', {'a', 'b', 'd'}),
    case('lambda-reads-free-names-only', '''
        def f(x, k):
            h = lambda v: v + k  # <
            return h(x)
    ''', {'k', 'x'}),
    case('comprehension-target-is-not-a-read', '''
        def f(xs, s):
            i = 0
            ys = [i * s for i in xs]  # <
            return ys
    ''', {'xs', 's'}),
    case('comprehension-first-iterable-is-outer', '''
        def f(x):
            return [x for x in x]  # <
    ''', {'x'}),
    case('walrus-in-comprehension-may-not-bind', '''
        def f(xs, last):
            ys = [(last := v) for v in xs]  # <
            return last
    ''', {'xs', 'last'}),
    case('walrus-behind-and-may-not-bind', '''
        def f(c, y):
            z = c and (y := 2)  # <
            return y
    ''', {'c', 'y'}),
    case('walrus-in-test-binds', '''
        def f(xs, n):
            if (n := len(xs)) > 3:  # <
                return n
            return 0
    ''', {'xs'}),
    case('global-is-not-local', '''
        def f(x):
            global counter
            counter = counter + x  # <
            return counter
    ''', {'x'}),
    case('nonlocal-is-not-local', '''
        def f(x):
            nonlocal acc
            acc += x  # <
            return acc
    ''', {'x'}),
    case('augassign-reads-target', '''
        def f(x):
            x += 1  # <
            return x
    ''', {'x'}),
    case('subscript-store-reads-container', '''
        def f(x, v):
            x[0] = v  # <
            return 1
    ''', {'x', 'v'}),
    case('del-does-not-read', '''
        def f(x):
            y = x
            del y  # <
            return x
    ''', {'x'}),
    case('handler-keeps-pre-try-value-live', '''
        def f(x):
            y = 0
            try:  # <
                y = g(x)
                z = 1
            except E:
                return y
            return z
    ''', {'x', 'y'}),
    case('except-as-binds-name', '''
        def f(x):
            try:
                x = g()
            except E as err:
                x = err  # <
            return x
    ''', {'err'}),
    case('with-header-reads-binds', '''
        def f(p):
            with open(p) as fh:  # <
                data = fh.read()
            return data
    ''', {'p'}),
    case('match-may-run-no-case', '''
        def f(cmd, d):
            match cmd:  # <
                case [a, b]:
                    d = a
                case {'k': v}:
                    d = v
            return d
    ''', {'cmd', 'd'}),
    case('match-with-wildcard-always-runs-a-case', '''
        def f(cmd, d):
            match cmd:  # <
                case [a, b]:
                    d = a
                case _:
                    d = 0
            return d
    ''', {'cmd'}),
    case('while-else-break-skips-else', '''
        def f(n, y):
            i = 0
            while i < n:  # <
                if i == y:
                    break
                i += 1
            else:
                y = -1
            return y
    ''', {'i', 'n', 'y'}),
    case('elif-chain', '''
        def f(a, b, x):
            if a:  # <
                y = 1
            elif b:
                y = x
            else:
                y = 3
            return y
    ''', {'a', 'b', 'x'}),
    case('code-after-return-is-dead', '''
        def f(x, y):
            return x
            print(y)  # <
    ''', set()),
]

LIVE_OUT = [
    case('if-else-outputs', '''
        def f(c, x):
            if c:  # <
                y = x
            else:
                y = 2
            return y
    ''', {'y'}),
    case('loop-body-local-not-live-out-of-loop', '''
        def f(n, x):
            i = 0
            while i < n:  # <
                t = x * 2
                x = t + 1
                i += 1
            return x
    ''', {'x'}),
    case('inside-loop-body-killed-before-read', '''
        def f(n, x):
            i = 0
            while i < n:
                t = x * 2  # <
                x = t + 1
                i += 1
            return x
    ''', {'t', 'i', 'n'}),
    case('for-target-live-out-when-read-after', '''
        def f(r):
            for i in r:  # <
                pass
            return i
    ''', {'i'}),
    case('read-before-write-body-not-live-after', '''
        def f(xs):
            for v in xs:  # <
                print(t)
                t = v
    ''', set()),
    case('inner-loop-out-feeds-outer-head', '''
        def f(n, m):
            total = 0
            for i in range(n):
                for j in range(m):  # <
                    total = total + i * j
            return total
    ''', {'total', 'm'}),
    case('return-nothing-after', '''
        def f(x, y):
            if x:
                return x  # <
            return y
    ''', set()),
    case('if-with-return-branch', '''
        def f(x, y):
            if x:  # <
                return x
            return y
    ''', {'y'}),
    case('if-whose-branches-all-return', '''
        def f(x, y):
            if x:  # <
                return x
            else:
                return 1
            print(y)
    ''', set()),
    case('break-carries-after-loop-reads', '''
        def f(xs, y):
            for x in xs:
                if x:
                    break  # <
                y = x
            return y
    ''', {'y'}),
    case('for-else-break-skips-else', '''
        def f(xs, found):
            for x in xs:
                if x:
                    found = x
                    break
            else:
                found = None  # <
            return found
    ''', {'found'}),
    case('def-binds-its-name', '''
        def f(a, b):
            def g(c):  # <
                return a + c
            return g(b)
    ''', {'g', 'b', 'a'}),   # g(b) reads a: a name a closure captures is live everywhere
    case('comprehension-does-not-bind-target', '''
        def f(xs, i):
            ys = [i for i in xs]  # <
            return ys, i
    ''', {'ys', 'i'}),
    case('walrus-in-comprehension-binds-outer', '''
        def f(xs):
            ys = [(last := v) for v in xs]  # <
            return last
    ''', {'last'}),
    case('try-body-stmt-may-jump-to-handler', '''
        def f(x):
            y = 0  # <
            try:
                y = g(x)
            except E:
                return y
            return 1
    ''', {'x', 'y'}),
    case('any-try-body-stmt-may-raise-to-handler', '''
        def f(x):
            try:
                y = g(x)
                z = h(y)  # <
            except E:
                return y
            return z
    ''', {'y', 'z'}),
    case('try-stmt-before-finally', '''
        def f(x):
            try:
                y = x  # <
            finally:
                print(x)
            return y
    ''', {'x', 'y'}),
    case('try-whole', '''
        def f(x):
            try:  # <
                y = x
            finally:
                print(x)
            return y
    ''', {'y'}),
    case('return-in-try-runs-finally', '''
        def f(x, y):
            try:
                return x  # <
            finally:
                print(y)
    ''', {'y'}),
    case('break-in-try-runs-finally-then-leaves-loop', '''
        def f(xs, y, z):
            for x in xs:
                try:
                    break  # <
                finally:
                    print(y)
            return z
    ''', {'y', 'z'}),
    case('with-outputs', '''
        def f(p):
            with open(p) as fh:  # <
                data = fh.read()
            return data
    ''', {'data'}),
    case('subscript-store-keeps-container-live', '''
        def f(x, i, v):
            x[i] = v  # <
            return x
    ''', {'x'}),
]


@pytest.mark.parametrize('src, expected', LIVE_IN)
def test_live_in(src, expected):
    assert getanno(marked(analyzed(src), src), Anno.LIVE_IN) == expected


@pytest.mark.parametrize('src, expected', LIVE_OUT)
def test_live_out(src, expected):
    assert getanno(marked(analyzed(src), src), Anno.LIVE_OUT) == expected


# ------------------------------------------------------------- definedness

DEFINED_IN = [
    case('params-of-every-kind', '''
        def f(a, /, b, *c, d, e=1, **g):
            return 0  # <
    ''', {'a', 'b', 'c', 'd', 'e', 'g'}),
    case('if-assigns-in-one-branch', '''
        def f(c):
            if c:
                y = 1
            return y  # <
    ''', {'c'}),
    case('if-assigns-in-both-branches', '''
        def f(c):
            if c:
                y = 1
            else:
                y = 2
            return y  # <
    ''', {'c', 'y'}),
    case('returning-branch-does-not-reach', '''
        def f(c):
            if c:
                return 0
            else:
                y = 1
            return y  # <
    ''', {'c', 'y'}),
    case('returning-else-does-not-reach', '''
        def f(c):
            if c:
                y = 1
            else:
                raise ValueError()
            print(y)  # <
    ''', {'c', 'y'}),
    case('inside-branch', '''
        def f(c):
            if c:
                y = 1
                print(y)  # <
    ''', {'c', 'y'}),
    case('while-body-names-not-defined-after', '''
        def f(n):
            i = 0
            while i < n:
                t = i
                i += 1
            return i  # <
    ''', {'n', 'i'}),
    case('while-true-is-not-special', '''
        def f():
            while True:
                y = 1
                break
            return y  # <
    ''', set()),
    case('for-target-not-defined-after', '''
        def f(xs):
            for x in xs:
                pass
            return 0  # <
    ''', {'xs'}),
    case('in-loop-body-after-binding', '''
        def f(xs):
            for x in xs:
                y = x
                print(y)  # <
    ''', {'xs', 'x', 'y'}),
    case('in-loop-body-before-binding', '''
        def f(xs):
            for x in xs:
                print(y)  # <
                y = x
    ''', {'xs', 'x'}),
    case('loop-test-sees-pre-loop-state', '''
        def f(xs):
            for x in xs:  # <
                y = x
    ''', {'xs'}),
    case('for-else-and-break-both-bind', '''
        def f(xs):
            for x in xs:
                if x:
                    y = x
                    break
            else:
                y = None
            return y  # <
    ''', {'xs', 'y'}),
    case('del-unbinds', '''
        def f(x):
            y = x
            del y
            return x  # <
    ''', {'x'}),
    case('del-in-one-branch', '''
        def f(c, y):
            if c:
                del y
            return c  # <
    ''', {'c'}),
    case('del-subscript-keeps-name', '''
        def f(x):
            del x[0]
            return x  # <
    ''', {'x'}),
    case('try-except-both-bind', '''
        def f():
            try:
                y = g()
            except E:
                y = None
            return y  # <
    ''', {'y'}),
    case('try-except-handler-does-not-bind', '''
        def f():
            try:
                y = g()
            except E:
                pass
            return y  # <
    ''', set()),
    case('handler-sees-pre-try-state', '''
        def f():
            try:
                y = g()
                z = 1
            except E:
                print(0)  # <
    ''', set()),
    case('except-as-bound-inside-handler', '''
        def f():
            try:
                pass
            except E as e:
                print(e)  # <
    ''', {'e'}),
    case('handler-sees-deletions-in-try-body', '''
        def f(y):
            try:
                del y
            except E:
                print(0)  # <
    ''', set()),
    case('except-as-unbinds-earlier-value', '''
        def f(e):
            try:
                pass
            except E as e:
                pass
            return 0  # <
    ''', set()),
    case('except-as-unbound-after-handler', '''
        def f():
            try:
                pass
            except E as e:
                pass
            return 0  # <
    ''', set()),
    case('try-finally-normal-path', '''
        def f():
            try:
                y = g()
            finally:
                cleanup()
            return y  # <
    ''', {'y'}),
    case('finally-also-runs-on-exception', '''
        def f():
            try:
                y = g()
            finally:
                cleanup()  # <
    ''', set()),
    case('with-as-and-body', '''
        def f(p):
            with open(p) as fh:
                data = fh.read()
            return data  # <
    ''', {'p', 'fh', 'data'}),
    case('match-without-wildcard', '''
        def f(cmd):
            match cmd:
                case [a]:
                    d = a
                case _ if cmd:
                    d = 0
            return d  # <
    ''', {'cmd'}),
    case('match-with-wildcard', '''
        def f(cmd):
            match cmd:
                case [a]:
                    d = a
                case _:
                    d = 0
            return d  # <
    ''', {'cmd', 'd'}),
    case('def-import-class-walrus-bind', '''
        def f(xs):
            import numpy as np
            from os import path
            def g():
                pass
            class K:
                pass
            if (n := len(xs)):
                pass
            return 0  # <
    ''', {'xs', 'np', 'path', 'g', 'K', 'n'}),
    case('conditional-walrus-does-not-bind', '''
        def f(c):
            z = c or (y := 1)
            return 0  # <
    ''', {'c', 'z'}),
    case('global-is-never-defined-locally', '''
        def f():
            global g
            g = 1
            return g  # <
    ''', set()),
    case('unreachable-code-vacuously-defined', '''
        def f(c):
            return c
            y = 1  # <
    ''', {'c', 'y'}),
]


@pytest.mark.parametrize('src, expected', DEFINED_IN)
def test_defined_in(src, expected):
    assert getanno(marked(analyzed(src), src), Anno.DEFINED_IN) == expected


# ---------------------------------------------------------------- activity

def activity(name, src, key, read, modified):
    return pytest.param(src, key, frozenset(read), frozenset(modified), id=name)


ACTIVITIES = [
    activity('subscript-store-reads-and-modifies', '''
        def f(x, i, v):
            if i:  # <
                x[i] = v
    ''', Anno.BODY_ACTIVITY, {'x', 'i', 'v'}, {'x'}),
    activity('nested-subscript-augassign', '''
        def f(x, i, j, v):
            if i:  # <
                x[i][j] += v
    ''', Anno.BODY_ACTIVITY, {'x', 'i', 'j', 'v'}, {'x'}),
    activity('attribute-store-only-reads', '''
        def f(x, v):
            if v:  # <
                x.a = v
    ''', Anno.BODY_ACTIVITY, {'x', 'v'}, set()),
    activity('subscript-of-attribute-only-reads', '''
        def f(x, i, v):
            if v:  # <
                x.a[i] = v
    ''', Anno.BODY_ACTIVITY, {'x', 'i', 'v'}, set()),
    activity('orelse', '''
        def f(c, a):
            if c:  # <
                pass
            else:
                b = a
    ''', Anno.ORELSE_ACTIVITY, {'a'}, {'b'}),
    activity('if-test', '''
        def f(c, a):
            if c > a:  # <
                pass
    ''', Anno.TEST_ACTIVITY, {'c', 'a'}, set()),
    activity('while-test', '''
        def f(i, n):
            while i < n:  # <
                i += 1
    ''', Anno.TEST_ACTIVITY, {'i', 'n'}, set()),
    activity('for-iter-and-target', '''
        def f(xs):
            for i, (a, b) in enumerate(xs):  # <
                pass
    ''', Anno.TEST_ACTIVITY, {'enumerate', 'xs'}, {'i', 'a', 'b'}),
    activity('for-body', '''
        def f(xs):
            s = 0
            for x in xs:  # <
                s = s + x
    ''', Anno.BODY_ACTIVITY, {'s', 'x'}, {'s'}),
    activity('for-else', '''
        def f(xs):
            for x in xs:  # <
                pass
            else:
                y = 1
    ''', Anno.ORELSE_ACTIVITY, set(), {'y'}),
    activity('nested-def-binds-only-its-name', '''
        def f(a, d):
            if a:  # <
                @deco
                def g(c, k=d):
                    u = c
                    return a + c + u + len(c)
    ''', Anno.BODY_ACTIVITY, {'deco', 'd', 'a', 'len'}, {'g'}),
    activity('nested-def-nonlocal-reads-outer', '''
        def f(y):
            if y:  # <
                def g():
                    nonlocal y
                    y = 1
    ''', Anno.BODY_ACTIVITY, {'y'}, {'g'}),
    activity('nested-def-global-not-outer-read', '''
        def f(z):
            if z:  # <
                def g():
                    global z
                    return z
    ''', Anno.BODY_ACTIVITY, set(), {'g'}),
    activity('nested-nested-def-free-name', '''
        def f(z):
            if z:  # <
                def g():
                    def h():
                        return z
                    return h
    ''', Anno.BODY_ACTIVITY, {'z'}, {'g'}),
    activity('lambda', '''
        def f(k):
            if k:  # <
                h = lambda v, w=k: v + w + q
    ''', Anno.BODY_ACTIVITY, {'k', 'q'}, {'h'}),
    activity('comprehensions-do-not-leak', '''
        def f(xs, s):
            if s:  # <
                a = [i * s for i in xs if i]
                b = {k: v for k, v in xs}
                c = {j for row in xs for j in row}
                d = sum(t for t in xs)
    ''', Anno.BODY_ACTIVITY, {'xs', 's', 'sum'}, {'a', 'b', 'c', 'd'}),
    activity('walrus-in-comprehension-leaks', '''
        def f(xs):
            if xs:  # <
                ys = [(last := v) for v in xs]
    ''', Anno.BODY_ACTIVITY, {'xs'}, {'ys', 'last'}),
    activity('class-def', '''
        def f(base, v):
            if v:  # <
                class A(base):
                    k = v
                    m = k
    ''', Anno.BODY_ACTIVITY, {'base', 'v'}, {'A'}),
    activity('global-excluded-in-sub-block', '''
        def f(c):
            global g
            if c:  # <
                g = 1
                y = g
    ''', Anno.BODY_ACTIVITY, set(), {'y'}),
    activity('binding-forms', '''
        def f(p):
            with open(p) as (fh, gh):  # <
                import os.path
                from m import x as y
                try:
                    pass
                except E as err:
                    pass
                del p
                z: int
                w: int = 1
    ''', Anno.BODY_ACTIVITY, {'E'}, {'os', 'y', 'err', 'p', 'w'}),
    activity('match-captures', '''
        def f(cmd):
            if cmd:  # <
                match cmd:
                    case [a, *rest]:
                        pass
                    case {'k': v, **kw}:
                        pass
                    case P(x=z) as w if z:
                        pass
    ''', Anno.BODY_ACTIVITY, {'cmd', 'P', 'z'}, {'a', 'rest', 'v', 'kw', 'z', 'w'}),
    activity('try-body', '''
        def f(x):
            try:  # <
                y = x
            except E:
                z = 1
    ''', Anno.BODY_ACTIVITY, {'x'}, {'y'}),
]


@pytest.mark.parametrize('src, key, read, modified', ACTIVITIES)
def test_activity(src, key, read, modified):
    found = getanno(marked(analyzed(src), src), key)
    assert (found.read, found.modified) == (read, modified)


def test_scope_activity_has_params_and_declarations():
    fn = analyzed('''
        def f(a, b=1, *c, **d):
            global g
            nonlocal n
            g = a
            n = b
            x = c
    ''')
    scope = getanno(fn, Anno.SCOPE)
    assert scope == Activity(read=frozenset({'a', 'b', 'c'}), modified=frozenset({'x'}),
                             globals=frozenset({'g'}), nonlocals=frozenset({'n'}),
                             params=frozenset({'a', 'b', 'c', 'd'}))


def test_sub_block_activity_reports_function_declarations():
    fn = analyzed('''
        def f(c):
            global g
            if c:
                g = 1
    ''')
    assert getanno(fn.body[1], Anno.BODY_ACTIVITY).globals == frozenset({'g'})


@pytest.mark.parametrize('expr, read', [
    ('lambda v: v + k', {'k'}),
    ('[x for x in x]', {'x'}),
    ('a if b else c', {'a', 'b', 'c'}),
    ('{k: w for k in ks}', {'ks', 'w'}),
])
def test_activity_of_expression(expr, read):
    assert activity_of(gast.parse(expr).body[0].value).read == frozenset(read)


def test_activity_of_statements_sees_its_own_declarations():
    body = gast.parse('global g\ng = x\ny = g').body
    assert activity_of(body) == Activity(read=frozenset({'x'}), modified=frozenset({'y'}),
                                         globals=frozenset({'g'}))
    assert activity_of(body[1:], globals_=frozenset({'g'})).modified == frozenset({'y'})


# -------------------------------------------------------------------- API

def test_annotation_store():
    node = gast.parse('x = 1').body[0]
    assert not hasanno(node, Anno.LIVE_IN)
    with pytest.raises(KeyError):
        getanno(node, Anno.LIVE_IN)
    assert getanno(node, Anno.LIVE_IN, None) is None
    setanno(node, Anno.LIVE_IN, frozenset({'x'}))
    assert hasanno(node, Anno.LIVE_IN) and getanno(node, Anno.LIVE_IN) == {'x'}
    assert 'LIVE_IN' not in gast.dump(node)


CORPUS = [p.values[0] for p in LIVE_IN + LIVE_OUT + DEFINED_IN + ACTIVITIES]
_STMT_KEYS = (Anno.LIVE_IN, Anno.LIVE_OUT, Anno.DEFINED_IN)


@pytest.mark.parametrize('src', CORPUS)
def test_every_statement_of_the_scope_is_annotated(src):
    fn = analyzed(src)
    assert all(hasanno(s, k) for s in scope_statements(fn.body) for k in _STMT_KEYS)
    for nested in gast.walk(fn):
        if nested is not fn and isinstance(nested, (gast.FunctionDef, gast.ClassDef)):
            assert not any(hasanno(s, k) for s in nested.body for k in _STMT_KEYS)


def test_reanalysis_after_transformation_overwrites():
    fn = analyzed('''
        def f(x):
            y = x
            if x:
                pass
            return y
    ''')
    assign, branch = fn.body[0], fn.body[1]
    assert getanno(assign, Anno.LIVE_OUT) == {'x', 'y'}
    fn.body[2] = gast.Return(value=None)
    branch.body = [gast.parse('z = 1').body[0]]
    analyze(fn)
    assert getanno(assign, Anno.LIVE_OUT) == {'x'}
    assert getanno(branch, Anno.BODY_ACTIVITY).modified == {'z'}
    assert getanno(fn, Anno.SCOPE).modified == {'y', 'z'}


def test_analysis_does_not_run_the_code():
    fn = analyzed('''
        def f():
            raise SystemExit(open('/nonexistent').read())
    ''')
    (stmt,) = fn.body        # reached only if analysis did not raise SystemExit or open the file
    assert getanno(stmt, Anno.LIVE_IN) == set() and getanno(fn, Anno.SCOPE).modified == set()


# ------------------------------------------------- oracle: path enumeration

NAMES = 'abcd'


def _expr(draw):
    return draw(st.sampled_from(['0', *NAMES, 'a + b', 'c * d', 'b - c']))


@st.composite
def _block(draw, indent, depth, in_loop):
    lines, pad = [], '    ' * indent
    for _ in range(draw(st.integers(1, 3))):
        kinds = ['assign', 'assign', 'aug', 'del', 'return']
        kinds += ['if', 'for'] if depth < 2 else []
        kinds += ['break', 'continue'] if in_loop else []
        kind = draw(st.sampled_from(kinds))
        name = draw(st.sampled_from(NAMES))
        if kind == 'assign':
            lines.append(f'{pad}{name} = {_expr(draw)}')
        elif kind == 'aug':
            lines.append(f'{pad}{name} += {_expr(draw)}')
        elif kind == 'del':
            lines.append(f'{pad}del {name}')
        elif kind == 'return':
            lines.append(f'{pad}return {_expr(draw)}')
        elif kind in ('break', 'continue'):
            lines.append(pad + kind)
        elif kind == 'if':
            lines.append(f'{pad}if {_expr(draw)}:')
            lines += draw(_block(indent + 1, depth + 1, in_loop))
            if draw(st.booleans()):
                lines += [f'{pad}else:', *draw(_block(indent + 1, depth + 1, in_loop))]
        else:
            lines.append(f'{pad}for {name} in {draw(st.sampled_from(NAMES))}:')
            lines += draw(_block(indent + 1, depth + 1, True))
            if draw(st.booleans()):
                lines += [f'{pad}else:', *draw(_block(indent + 1, depth + 1, in_loop))]
    return lines


def _names(node, ctx):
    if node is None:
        return frozenset()
    return frozenset(n.id for n in gast.walk(node) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, ctx))


def _effect(reads=None, binds=None, extra_reads=frozenset()):
    """('eff', read, bound, deleted) of one step, read straight off Name contexts."""
    return ('eff', _names(reads, gast.Load) | extra_reads,
            _names(binds, gast.Store), _names(binds, gast.Del))


def _paths(stmts):
    """(events, how it ended) for every path through stmts; loops run 0-2 times."""
    if not stmts:
        return [([], 'normal')]
    result = []
    for events, end in _stmt_paths(stmts[0]):
        if end != 'normal':
            result.append((events, end))
        else:
            result += [(events + more, how) for more, how in _paths(stmts[1:])]
    return result


def _stmt_paths(s):
    enter, leave = ('enter', s), ('leave', s)
    if isinstance(s, gast.If):
        head = [enter, _effect(s.test)]
        return [(head + ev + [leave], end) if end == 'normal' else (head + ev, end)
                for ev, end in _paths(s.body) + _paths(s.orelse)]
    if isinstance(s, gast.For):
        return [([enter, _effect(s.iter)] + ev, end) for ev, end in _iterations(s, 2)]
    if isinstance(s, (gast.Break, gast.Continue)):
        return [([enter, leave], type(s).__name__.lower())]  # "after" is the jump target
    if isinstance(s, gast.Return):
        return [([enter, _effect(s.value)], 'return')]
    if isinstance(s, gast.AugAssign):
        return [([enter, _effect(s.value, s.target, {s.target.id}), leave], 'normal')]
    return [([enter, _effect(s, s), leave], 'normal')]


def _iterations(loop, left):
    """Paths of a loop from its "next item" point, with at most `left` more items."""
    done = [(ev + [('leave', loop)], end) if end == 'normal' else (ev, end)
            for ev, end in _paths(loop.orelse)]
    if not left:
        return done
    for ev, end in _paths(loop.body):
        ev = [_effect(None, loop.target)] + ev
        if end == 'break':
            done.append((ev + [('leave', loop)], 'normal'))
        elif end == 'return':
            done.append((ev, end))
        else:
            done += [(ev + more, how) for more, how in _iterations(loop, left - 1)]
    return done


def _read_before_write(events):
    live, killed = set(), set()
    for event in events:
        if event[0] == 'eff':
            live |= event[1] - killed
            killed |= event[2] | event[3]
    return frozenset(live)


def _oracle(fn):
    """LIVE_IN, LIVE_OUT, DEFINED_IN by brute force over the function's paths."""
    live_in, live_out, defined = {}, {}, {}
    for events, _ in _paths(fn.body):
        bound = _names(fn.args, gast.Param)
        for i, event in enumerate(events):
            kind, node = event[0], event[1]
            if kind == 'eff':
                bound = (bound | event[2]) - event[3]
            elif kind == 'enter':
                live_in[node] = live_in.get(node, frozenset()) | _read_before_write(events[i:])
                defined[node] = defined.get(node, bound) & bound
            else:
                live_out[node] = live_out.get(node, frozenset()) | _read_before_write(events[i:])
    return live_in, live_out, defined


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(NAMES), unique=True), _block(1, 0, False))
def test_matches_path_enumeration_oracle(params, body):
    src = f'def f({", ".join(params)}):\n' + '\n'.join(body)
    fn = gast.parse(src).body[0]
    analyze(fn)
    scope = getanno(fn, Anno.SCOPE)
    local_names = scope.params | scope.modified
    live_in, live_out, defined = _oracle(fn)
    for stmt in scope_statements(fn.body):
        where = f'line {stmt.lineno} of\n{src}'
        assert getanno(stmt, Anno.LIVE_IN) == live_in.get(stmt, frozenset()) & local_names, where
        assert getanno(stmt, Anno.LIVE_OUT) == live_out.get(stmt, frozenset()) & local_names, where
        assert getanno(stmt, Anno.DEFINED_IN) == defined.get(stmt, local_names), where
