"""Golden cases: small functions whose converted source and Program text are pinned.

Most come from the corpus (tests/conversion/corpus.py), the cases tagged
`golden`, traced for their shapes (a `None` dim stays dynamic); the few here
need what the NumPy oracle cannot run (Layers, a plain class, an example
module, `rt.abs`, a print). `golden_outputs/<name>.py` holds `to_source(fn)`,
`golden_outputs/<name>.program.txt` holds `str(program)`.
Add a case: tag a corpus function `golden` (or write one here and decorate it),
run `pytest tests/golden --update-golden` and read the two new files before committing them.

Loops are bounded by a counter or by the rows they walk, so every case also runs
(eagerly and as a Program) on any input: test_golden checks both give the same result.
"""
import importlib.util
from pathlib import Path

import runtime as rt
from runtime import nn
from transpiler import InputSpec

from tests.conversion import corpus

CASES = {}


def golden(*args, name=None):
    """Register fn under `name` (default: its own name), traced for `args`."""
    def wrap(fn):
        key = name or fn.__name__
        assert key not in CASES, key
        CASES[key] = dict(fn=fn, args=args)
        return fn
    return wrap


for _case in corpus.CASES:
    if "golden" in _case["tags"]:
        golden(*[InputSpec(list(shape), _case["dtype"]) for shape in _case["shapes"]], *_case["scalars"])(_case["fn"])


def vec(n=4):
    return InputSpec([n], "float32")


def batch(cols=4):
    return InputSpec([None, cols], "float32")


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
