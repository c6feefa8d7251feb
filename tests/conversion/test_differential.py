"""Differential test: many generated programs of nested if/while/for/break/continue/return
over tensors; the converted function must give what Python gives on the same code with NumPy.

The programs also define closures over names they rebind later, wrap control flow in
try/except/finally and `with`, read tensors from outside the function (a module global `G`, an attribute `H.w`)
and make constants inside it (`c0`, loop counters from `xp.asarray(0)`): every one of them must
stay its own Program input through loops, retraces and branches.

They write state too (`_Gen.state_stmt`): attributes and dict items of an object `st` passed in,
and items of a local dict `loc`, under tensor `if`/`while`; after every call `st` must hold what
Python left there. And they write what they make themselves (`_Gen.made_stmt`): an object built in
the call (`mk = Box(xp)`, its methods too), a local list and dict holding tensors, and a tensor
from `xp.asarray` written in place, alone or under tensor `if`/`while`. Each static function is
called three times per flag (an input, another one, the first again): what the call made is fresh
on every call, so each call must equal Python's."""
import importlib.util
import os
import random
import types

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

N_PROGRAMS = int(os.environ.get("DY2STATIC_DIFF_PROGRAMS", "150"))   # raise it to search harder
FIRST_SEED = int(os.environ.get("DY2STATIC_DIFF_FIRST", "0"))         # start past seeds a long run already passed
SEEDS = range(FIRST_SEED, FIRST_SEED + N_PROGRAMS)
TENSOR_CONDS = ["a.sum() > {c}", "b.mean() < {c}", "(a * b).sum() > {c}", "a.max() > b.min() + {c}",
                "max(a.sum(), b.sum()) > {c}", "a[:1] > {c} and b.mean() < {c}", "c0 > {c}",
                "(not (a[:1] > {c}) or a.sum() in [b.sum(), {c}])"]
PY_CONDS = ["k > {i}", "flag", "k % 2 == 0"]


STATE_WRITES = [
    "st.n = st.n + 1",
    "st.t = st.t * 0.5 + a",
    "st.d['k'] = st.d['k'] * 0.9 + b",
    "st.d['c'] += 1",
    "loc['v'] = loc['v'] + a * 0.5",
    "loc['c'] = loc['c'] + 1",
    "a = a + st.t * 0.1 + st.d['k'] * 0.1",
    "b = b * 0.9 + loc['v'] * 0.1",
    "st.n = st.n + a.sum() * 0.1",
]
STATE_CONDS = TENSOR_CONDS + ["st.t.sum() > {c}", "st.d['k'].mean() < {c}"]

# writes to what the call itself made (`MADE`): fresh values on every call
MADE = ["mk = Box(xp)", "ml = [x * 0.0, xp.asarray(np.float32(1.0))]",
        "md = {'p': xp.asarray(np.float32([0.5, -1.0, 2.0])), 'q': 0}", "mv = xp.asarray([1.0, 2.0, 3.0])"]
MADE_WRITES = [
    "mk.v = mk.v * 0.5 + a",
    "mk.n = mk.n + 1",
    "ml[0] = ml[0] + a * 0.5",
    "ml[1] = ml[1] * 2",
    "md['p'] = md['p'] * 0.9 + b",
    "md['q'] += 1",
    "mv[1:] = mv[:-1] + a[:2]",
    "mv[0] += 1",
    "a = a + ml[0] * 0.1 + mv * 0.01",
]
MADE_CONDS = TENSOR_CONDS + ["mv.sum() > {c} * 6", "mk.v.mean() < {c}", "ml[0].sum() > {c}"]
MADE_CALLS = ["mk.add(a)", "mk.bump(b)", "mk.add(b * 0.5)"]     # methods writing self: before any tensor if/while
MADE_RESULT = "mk.v * 0.01 + mk.n * 0.1 + ml[0] * 0.1 + ml[1] * 0.01 + md['p'] * 0.1 + md['q'] + mv * 0.01"


class _Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.srng = random.Random(10**6 + seed)    # state statements: their own draws, old kinds unchanged
        self.mrng = random.Random(2 * 10**6 + seed)    # writes to what the call made: their own draws too
        self.loops = 0

    def cond(self):
        if self.rng.random() < 0.75:
            return self.rng.choice(TENSOR_CONDS).format(c=round(self.rng.uniform(-1, 1), 2))
        return self.rng.choice(PY_CONDS).format(i=self.rng.randint(0, 3))

    def assign(self):
        target = self.rng.choice("ab")
        other = "b" if target == "a" else "a"
        return self.rng.choice([
            f"{target} = xp.tanh({target} * 1.3 + {other})",
            f"{target} = {target} - {other} * 0.5",
            f"{target} = {target} * 0.9 + x",
            f"{target} = {target} + G * c0",
            f"{target} = {target} * H.w + G",
            f"{target} = {target} + sum(rows) * 0.1",
            f"{target} = {target} + min(rows, key=lambda r: r.sum()) * 0.2",
            "k = k + 1",
        ])

    def block(self, depth, in_loop, indent):
        lines = []
        for _ in range(self.rng.randint(1, 3)):
            lines += self.stmt(depth, in_loop, indent)
            if self.mrng.random() < 0.2:
                lines += self.made_stmt(depth, indent)
        return lines

    def made_stmt(self, depth, indent):
        """Writes to the object, list, dict and tensor the call made, alone or under a tensor `if`/`while`."""
        pad = "    " * indent
        rng = self.mrng
        writes = lambda: [pad + "    " + w for w in rng.sample(MADE_WRITES, rng.randint(1, 3))]   # noqa: E731
        cond = rng.choice(MADE_CONDS).format(c=round(rng.uniform(-1, 1), 2))
        r = rng.random()
        if depth >= 3 or r < 0.3:
            return [pad + w.strip() for w in writes()]
        if r < 0.7:
            out = [f"{pad}if {cond}:"] + writes()
            return out + ([f"{pad}else:"] + writes() if rng.random() < 0.5 else [])
        m = f"m{self.loops}"
        self.loops += 1
        return [f"{pad}{m} = 0", f"{pad}while {cond} and {m} < 3:", f"{pad}    {m} += 1"] + writes()

    def stmt(self, depth, in_loop, indent):
        pad = "    " * indent
        r = self.rng.random()
        if depth >= 3 or r < 0.35:
            return [pad + self.assign()]
        if r < 0.55:
            out = [f"{pad}if {self.cond()}:"] + self.block(depth + 1, in_loop, indent + 1)
            if self.rng.random() < 0.5:
                out += [f"{pad}else:"] + self.block(depth + 1, in_loop, indent + 1)
            return out
        if r < 0.68:
            n = f"n{self.loops}"
            self.loops += 1
            if self.rng.random() < 0.5:
                head = [f"{pad}{n} = 0", f"{pad}while {self.cond()} and {n} < 4:", f"{pad}    {n} += 1"]
            else:   # a tensor counter made in the function, tested first
                head = [f"{pad}{n} = xp.asarray(0)", f"{pad}while {n} < 4 and {self.cond()}:",
                        f"{pad}    {n} = {n} + 1"]
            return head + self.block(depth + 1, True, indent + 1)
        if r < 0.8:
            it = self.rng.choice(["range(3)", "rows", "range(rows.shape[0])"])
            var = f"i{self.loops}"
            self.loops += 1
            body = self.block(depth + 1, True, indent + 1)
            use = f"{pad}    a = a + {var} * 0.1" if it != "rows" else f"{pad}    b = b + {var}"
            return [f"{pad}for {var} in {it}:", use] + body
        if in_loop and r < 0.88:
            return [f"{pad}if {self.cond()}:", f"{pad}    {self.rng.choice(['break', 'continue'])}"]
        if r < 0.94:
            return [f"{pad}if {self.cond()}:", f"{pad}    return a - b"]
        return self.scoping(depth, in_loop, indent) + self.state_stmt(depth, indent)

    def scoping(self, depth, in_loop, indent):
        """A closure (def or lambda) over names later statements rebind, called after them; or
        try/except/finally and `with` around control flow (a tensor `if` in the `finally` too)."""
        pad = "    " * indent
        n = self.loops
        self.loops += 1
        r = self.rng.random()
        if r < 0.4:
            r = self.rng.random()
            if r < 0.35:
                head = [f"{pad}def via{n}():", f"{pad}    return a * 0.25 - b * 0.5 + k"]
            elif r < 0.7:
                head = [f"{pad}via{n} = lambda: xp.tanh(a) + k * 0.1"]
            else:       # a closure that rebinds what the program reads
                head = [f"{pad}def via{n}():", f"{pad}    nonlocal b", f"{pad}    b = b * 0.5 + a * 0.1",
                        f"{pad}    return b * 0.1"]
            use = [f"{pad}{self.rng.choice('ab')} = {self.rng.choice('ab')} * 0.5 + via{n}()"]
            if self.rng.random() < 0.5:      # called in a loop that rebinds what it reads
                m = f"m{n}"
                use = [f"{pad}{m} = 0", f"{pad}while {self.cond()} and {m} < 3:", f"{pad}    {m} += 1",
                       f"{pad}    a = a * 0.9 + via{n}() * 0.1", f"{pad}    k = k + 1"]
            return head + self.block(depth + 1, in_loop, indent) + use
        if r < 0.75:
            out = [f"{pad}try:"] + self.block(depth + 1, in_loop, indent + 1)
            if self.rng.random() < 0.4:
                out += [f"{pad}except ZeroDivisionError:", f"{pad}    a = a * 0"]
            if self.rng.random() < 0.5:
                final = [f"{pad}    if {self.cond()}:", f"{pad}        b = b * 0.5 + a * 0.1"]
            else:
                final = [f"{pad}    a = a - b * 0.25"]
            return out + [f"{pad}finally:"] + final
        return [f"{pad}with CTX:"] + self.block(depth + 1, in_loop, indent + 1)

    def state_stmt(self, depth, indent):
        """Writes to attributes and dict items, alone or under a tensor `if`/`while` (drawn from srng)."""
        pad = "    " * indent
        rng = self.srng
        writes = lambda: [pad + "    " + w for w in rng.sample(STATE_WRITES, rng.randint(1, 3))]   # noqa: E731
        cond = rng.choice(STATE_CONDS).format(c=round(rng.uniform(-1, 1), 2))
        r = rng.random()
        if depth >= 3 or r < 0.3:
            return [pad + w.strip() for w in writes()]
        if r < 0.7:
            out = [f"{pad}if {cond}:"] + writes()
            return out + ([f"{pad}else:"] + writes() if rng.random() < 0.6 else [])
        m = f"m{self.loops}"
        self.loops += 1
        return [f"{pad}{m} = 0", f"{pad}while {cond} and {m} < 3:", f"{pad}    {m} += 1"] + writes()

    def program(self, name):
        body = ["a = x * 1.0", "b = x * 0.5", "k = 0", "c0 = xp.asarray(0.5, dtype=xp.float32)",
                "loc = {'v': x * 0.0, 'c': 0}"] + MADE + self.mrng.sample(MADE_CALLS, self.mrng.randint(0, 2))
        body += self.block(0, False, 0)
        if self.srng.random() < 0.3:
            body += self.state_stmt(0, 0)
        body.append(f"return a + b + loc['v'] * 0.01 + loc['c'] + {MADE_RESULT}")
        return f"def {name}(x, rows, flag, st):\n" + "\n".join("    " + line for line in body) + "\n"


HEADER = """import contextlib
import types
import numpy as np
import runtime as xp

CTX = contextlib.nullcontext()

G = xp.asarray(np.float32(0.3))
H = types.SimpleNamespace(w=xp.asarray(np.float32(-0.7)))


class Box:     # built inside the programs (`mk = Box(xp)`): a fresh object on every call

    def __init__(self, xp):
        self.v = xp.asarray(np.float32([0.25, -0.5, 1.0]))
        self.n = 0

    def add(self, a):
        self.v = self.v * 0.9 + a
        self.n += 1
        return self.v

    def bump(self, a):
        if a.sum() > 0:
            self.v = self.v + a
            self.n = self.n + 1
        return self.n


"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    path = tmp_path_factory.mktemp("gen") / "generated_programs.py"
    sources = [_Gen(seed).program(f"prog_{seed}") for seed in SEEDS]
    path.write_text(HEADER + "\n\n".join(sources))
    spec = importlib.util.spec_from_file_location("generated_programs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, sources


def _numpy_twin(fn):
    g = dict(fn.__globals__)
    g["xp"] = np
    g["G"] = np.asarray(fn.__globals__["G"].numpy())
    g["H"] = types.SimpleNamespace(w=np.asarray(fn.__globals__["H"].w.numpy()))
    return types.FunctionType(fn.__code__, g, fn.__name__)


def _state(xp):
    return types.SimpleNamespace(n=1.0, t=xp.asarray(np.float32([0.5, -0.5, 1.0])),
                                 d={"k": xp.asarray(np.float32([1.0, 0.0, -1.0])), "c": 0})


def _state_values(st):
    def value(v):
        return np.asarray(v.numpy() if isinstance(v, rt.Tensor) else v, np.float64)
    return {"n": value(st.n), "t": value(st.t), "k": value(st.d["k"]), "c": value(st.d["c"]),
            "keys": sorted(vars(st)) + sorted(st.d)}


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_program_matches_python(generated, seed):
    module, sources = generated
    fn = getattr(module, f"prog_{seed}")
    static = to_static(fn)
    rng = np.random.default_rng(seed)
    want_state, got_state = _state(np), _state(rt)
    draws = [(rng.standard_normal(3).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32))
             for _ in range(2)]
    for flag in (True, False):
        for x, rows in (draws[0], draws[1], draws[0]):     # the same input, another, the same again
            want = _numpy_twin(fn)(x.copy(), rows.copy(), flag, want_state)
            got = static(rt.tensor(x), rt.tensor(rows), flag, got_state)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5,
                                       err_msg=f"program:\n{sources[seed - FIRST_SEED]}")
            got_values, want_values = _state_values(got_state), _state_values(want_state)
            assert got_values.pop("keys") == want_values.pop("keys"), f"program:\n{sources[seed - FIRST_SEED]}"
            for name, value in want_values.items():
                np.testing.assert_allclose(got_values[name], value, rtol=1e-4, atol=1e-5,
                                           err_msg=f"st.{name} after the call; program:\n{sources[seed - FIRST_SEED]}")
