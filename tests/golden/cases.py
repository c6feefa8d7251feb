"""Golden cases: small functions whose converted source and Program text are pinned.

Each case is registered with the arguments its Program is traced for (InputSpecs
for tensors, plain values for Python arguments). `golden_outputs/<name>.py` holds
`to_source(fn)`, `golden_outputs/<name>.program.txt` holds `str(program)`.
Add a case: write the function, decorate it, run `pytest tests/golden --update-golden`
and read the two new files before committing them.

Loops are bounded by a counter or by the rows they walk, so every case also runs
(eagerly and as a Program) on any input: test_golden checks both give the same result.
"""
import importlib.util
from pathlib import Path

import numpy as np

import runtime as rt
from runtime import nn
from transpiler import InputSpec

CASES = {}


def golden(*args, name=None):
    """Register fn under `name` (default: its own name), traced for `args`."""
    def wrap(fn):
        key = name or fn.__name__
        assert key not in CASES, key
        CASES[key] = dict(fn=fn, args=args)
        return fn
    return wrap


def vec(n=4):
    return InputSpec([n], "float32")


def batch(cols=4):
    return InputSpec([None, cols], "float32")


# --- if / elif / else / ternary / boolean operators ----------------------------------------

@golden(batch())
def if_else(x):
    if x.mean() > 0:
        y = x * 2
    else:
        y = x - 1
    return y


@golden(vec())
def if_without_else(x):
    y = x + 1
    if x.sum() > 0:
        y = y * 3
    return y


@golden(vec())
def elif_chain(x):
    s = x.sum()
    if s > 1:
        y = x * 1
    elif s > 0:
        y = x * 2
    elif s > -1:
        y = x * 3
    else:
        y = x * 4
    return y


@golden(batch(3))
def nested_if(x):
    if x.max() > 0:
        if x.min() < 0:
            y = x - x.min()
        else:
            y = x
        z = y * 2
    else:
        z = -x
    return z


@golden(vec(), True)
def if_python_flag(x, flag):
    if flag:
        x = x + 1
    else:
        x = x - 1
    return x


@golden(vec())
def ternary(x):
    return x * 2 if x.sum() > 0 else x / 2


@golden(vec())
def and_or_not(x):
    if x.sum() > 0 and x.max() < 5 or not x.min() > -5:
        y = x + 10
    else:
        y = x - 10
    return y


@golden(vec())
def chained_compare(x):
    if -1 < x.mean() < 1:
        return x * 0
    return x


@golden(vec())
def tuple_outputs(x):
    if x.sum() > 0:
        a, b = x + 1, x * 2
    else:
        a, b = x - 1, x / 2
    return a, b


@golden(vec())
def undefined_in_one_branch(x):
    if x.sum() > 0:
        scratch = x * 2
        y = scratch + 1
    else:
        y = x
    return y


# --- while -------------------------------------------------------------------------------------

@golden(batch(3))
def while_tensor(x):
    h = rt.tanh(x)
    i = 0
    while rt.sum(h) < 100 and i < 10:
        h = h * 2
        i += 1
    return h, i


@golden(vec(3))
def while_python(x):
    i = 0
    while i < 3:
        x = x + i
        i += 1
    return x


@golden(vec(3))
def while_else(x):
    i = 0
    while x.sum() < 30 and i < 20:
        x = x + 1
        i += 1
        if x.max() > 10:
            break
    else:
        x = x + 1000
    return x


@golden(vec(3))
def nested_while(x):
    i = 0
    total = x.sum() * 0
    while total < 50 and i < 5:
        j = 0
        while j < 3:
            total = total + x.sum()
            j += 1
        i += 1
    return total, i


@golden(vec(3))
def while_break(x):
    i = 0
    while i < 8:
        x = x * 1.5
        if x.sum() > 50:
            break
        i += 1
    return x, i


@golden(vec(3))
def while_continue(x):
    i = 0
    total = x * 0
    while i < 6:
        i += 1
        if (x * i).sum() < 0:
            continue
        total = total + x
    return total


@golden(vec(3))
def var_created_in_loop(x):
    i = 0
    while x.sum() < 10 and i < 6:
        last = x
        x = x + 1
        i += 1
    return last


# --- for ---------------------------------------------------------------------------------------

@golden(batch(2))
def for_range_dynamic(x):
    total = x[0] * 0
    for i in range(x.shape[0]):
        total = total + x[i] * i
    return total


@golden(vec(3))
def for_python_range(x):
    for i in range(4):
        x = x + i
    return x


@golden(batch(3))
def for_over_tensor(x):
    total = x[0] * 0
    for row in x:
        total = total + row * 2
    return total


@golden(InputSpec([4, 2], "float32"))
def for_enumerate(x):
    acc = x[0] * 0
    for i, row in enumerate(x):
        acc = acc + row * i
    return acc


@golden(InputSpec([4, 2], "float32"), InputSpec([4, 2], "float32"))
def for_zip(x, y):
    acc = x[0] * 0
    for a, b in zip(x, y):
        acc = acc + a * b
    return acc


@golden(vec(3))
def for_python_list(x):
    for k in [1.0, 2.0, 3.0]:
        x = x * k
    return x


@golden(vec())
def for_break(x):
    total = x[0] * 0
    for v in x:
        if total > 2:
            break
        total = total + v
    return total


@golden(vec())
def for_continue(x):
    total = x[0] * 0
    for v in x:
        if v < 0:
            continue
        total = total + v
    return total


@golden(vec())
def for_else(x):
    found = x[0] * 0
    for v in x:
        if v > 100:
            found = v
            break
    else:
        found = found - 1
    return found


@golden(vec(3))
def python_range_tensor_break(x):
    for i in range(5):
        if x.sum() > 10:
            break
        x = x * 2
    return x


# --- return ------------------------------------------------------------------------------------

@golden(vec())
def early_return(x):
    if x.sum() > 0:
        return x * 10
    y = x - 1
    return y


@golden(vec())
def several_returns(x):
    s = x.sum()
    if s > 2:
        return x + 2
    if s > 0:
        return x + 1
    if s > -2:
        return x - 1
    return x - 2


@golden(vec(3))
def return_in_loop(x):
    i = 0
    while i < 10:
        x = x * 2
        if x.max() > 20:
            return x - 1
        i += 1
    return x


# --- lists, subscripts, builtins ---------------------------------------------------------------

@golden(batch(2))
def list_append_in_tensor_loop(x):
    outs = []
    for row in x:
        outs.append(row * 2)
    return rt.stack(outs)


@golden(InputSpec([4, 3], "float32"))
def subscript_assign(x):
    x[0] = x[1] * 2
    x[:, 1] = 0
    x[2] += 1
    return x


@golden(InputSpec([None, 2, 3], "float32"))
def len_and_shape(x):
    n = len(x)
    flat = x.reshape(x.shape[0], -1)
    return flat * x.shape[2] + n


@golden(vec(3))
def print_tensor(x):
    y = x * 2
    print("y =", y)
    return y


@golden(vec(3))
def assert_tensor(x):
    y = rt.abs(x) + 1
    assert y.min() > 0, "y must be positive"
    return y


# --- functions, lambdas, calls, layers -------------------------------------------------------

@golden(vec(3))
def nested_function(x):
    scale = 3.0

    def helper(v):
        if v.sum() > 0:
            return v * scale
        return v / scale
    return helper(x) + helper(-x)


@golden(vec(3))
def lambda_call(x):
    g = lambda v: v * 2 if v.sum() > 0 else v * 3  # noqa: E731
    return g(x)


def _bounded_grow(v, k=2):
    i = 0
    while v.sum() < 10 and i < 5:
        v = v + k
        i += 1
    return v


@golden(vec(3))
def calls_user_function(x):
    return _bounded_grow(x, k=3) + _bounded_grow(x)


class GatedMLP(nn.Layer):
    """A Layer whose forward branches on its activations."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        h = nn.functional.relu(self.fc1(x))
        if h.mean() > 0.5:
            h = h * 0.5
        return self.fc2(h)


rt.seed(0)
gated_mlp = GatedMLP()
golden(batch(), name="layer_forward")(gated_mlp.forward)


class Scaler:
    """A plain class: its bound method is converted like a function, `self` bound."""

    def __init__(self, factor):
        self.factor = factor

    def apply(self, x):
        if x.sum() > 0:
            return x * self.factor
        return x


golden(vec(), name="plain_method")(Scaler(2.0).apply)


@golden(vec(3))
def numpy_constant(x):
    w = np.ones((3,), np.float32) * 2
    return x * w


def _example(name):
    """A module of examples/ (not a package), loaded by path."""
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rt.seed(3)
golden(InputSpec([None, 16], "float32"), name="greedy_decoder")(
    _example("greedy_decoder").GreedyDecoder().forward.rollback())
