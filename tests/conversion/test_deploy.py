"""transpiler.save / load / export_python: Programs leave the process and come back without the source."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runtime as rt
import transpiler
from transpiler import InputSpec, to_static

from .oracle import CASES, inputs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

USER_MODULE = '''
import runtime as rt
from runtime import nn


class Model(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        h = rt.tanh(self.fc1(x))
        steps = 0
        while h.sum() > 1.0 and steps < 6:
            h = h * 0.5
            steps += 1
        if h.mean() > 0:
            out = self.fc2(h)
        else:
            out = -self.fc2(h)
        return out, steps
'''

SAVE = '''
import sys, numpy as np, runtime as rt, transpiler
from transpiler import InputSpec
import usermodel
rt.seed(7)
model = usermodel.Model()
transpiler.save(model, "saved/model", input_spec=[InputSpec([None, 4], "float32", "x")])
expected = {}
for batch in (1, 3, 7):
    x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
    out, steps = transpiler.to_static(model.forward)(rt.tensor(x))
    expected[f"x{batch}"], expected[f"out{batch}"], expected[f"steps{batch}"] = x, out.numpy(), steps.numpy()
np.savez("expected.npz", **expected)
'''

LOAD = '''
import sys, numpy as np, transpiler
loaded = transpiler.load("saved/model")
assert "usermodel" not in sys.modules
expected = np.load("expected.npz", allow_pickle=False)
for batch in (1, 3, 7):
    out, steps = loaded(expected[f"x{batch}"])
    np.testing.assert_allclose(out.numpy(), expected[f"out{batch}"], rtol=1e-6)
    assert int(steps.item()) == int(expected[f"steps{batch}"])
print("loaded ok", sorted(loaded.state_dict()))
'''


def _run(code, cwd):
    env = dict(os.environ, PYTHONPATH=REPO)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_save_in_one_process_load_in_another_without_the_source(tmp_path):
    (tmp_path / "usermodel.py").write_text(USER_MODULE)
    _run(SAVE, tmp_path)
    os.remove(tmp_path / "usermodel.py")
    for cache in tmp_path.glob("__pycache__"):
        for f in cache.iterdir():
            f.unlink()
    out = _run(LOAD, tmp_path)
    assert "loaded ok ['fc1.bias', 'fc1.weight', 'fc2.bias', 'fc2.weight']" in out


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_round_trip_every_corpus_function(case, tmp_path):
    static = to_static(case["fn"])
    arrays = inputs(case, 0)
    tensors = [rt.tensor(a) for a in arrays]
    want = static(*tensors, *case["scalars"])
    if case["scalars"]:
        return    # Python arguments are baked into the Program: the corpus's scalar cases are covered above
    program = static.get_program(*tensors)
    transpiler.save(static, tmp_path / "f", input_spec=[InputSpec.from_value(a) for a in arrays])
    loaded = transpiler.load(tmp_path / "f")
    assert str(loaded.program) == str(program)
    got = loaded(*tensors)
    for g, w in zip(_leaves(got), _leaves(want)):
        np.testing.assert_allclose(np.asarray(g.numpy() if hasattr(g, "numpy") else g),
                                   np.asarray(w.numpy() if hasattr(w, "numpy") else w), rtol=1e-6)


def _leaves(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def test_export_python_runs_without_dy2static(tmp_path):
    def f(x, w):
        h = x @ w
        while h.sum() > 1.0:
            h = h * 0.5
        return h if h.mean() > 0 else -h
    w = rt.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))

    def model(x):
        return f(x, w)
    py_path, _ = transpiler.export_python(model, tmp_path / "exported", input_spec=[InputSpec([None, 4], "float32", "x")])
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    site = os.path.dirname(os.path.dirname(np.__file__))   # numpy's site-packages; `-S` skips its .pth hooks
    code = f'''
import sys
sys.path = [p for p in sys.path if p not in ("", ".", "{REPO}")] + ["{site}"]
sys.path.insert(0, "{tmp_path}")
import numpy as np
try:
    import runtime
    raise SystemExit("runtime importable")
except ImportError:
    pass
import exported
(out,) = [exported.run(x=np.load("{tmp_path}/x.npy"))]
np.save("{tmp_path}/out.npy", out)
'''
    result = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert result.returncode == 0, result.stderr
    want = to_static(model)(rt.tensor(x)).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-6)


def test_save_needs_a_spec_when_ambiguous(tmp_path):
    static = to_static(lambda x: x * 2)
    with pytest.raises(ValueError, match="input_spec"):
        transpiler.save(static, tmp_path / "g")
