"""Save a `@to_static` Layer, load it back without its Python source, and export it as a NumPy-only module.

    python examples/deploy.py [--out DIR]

`transpiler.save` writes `model.program.json` (versioned, readable IR) and
`model.params.npz` (weights, read with allow_pickle=False); `transpiler.load`
returns a callable that runs the Program: no class, no source, nothing executed
from the files. `transpiler.export_python` writes one standalone `.py` + `.npz`
that needs only NumPy. A fresh Python process proves the loaded model needs
nothing of this file.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

import runtime as rt
import transpiler
from runtime import nn
from runtime.nn import functional as F
from transpiler import InputSpec, to_static

SPEC = [InputSpec([None, 16], "float32", "x")]


class Scorer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    @to_static(input_spec=SPEC)
    def forward(self, x):
        h = F.relu(self.fc1(x))
        if h.mean() > 0.5:                  # data-dependent branch: saved as a `cond` op
            h = h * 0.5
        return F.log_softmax(self.fc2(h), axis=-1)


FRESH_PROCESS = """
import sys, numpy as np, transpiler
model = transpiler.load(sys.argv[1])
x = np.load(sys.argv[2])
np.save(sys.argv[3], model(x=x).numpy())
print("inputs:", ", ".join(repr(s) for s in model.input_specs))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder to write to (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out or tmp
        run(folder)


def run(folder):
    rt.seed(0)
    model = Scorer()
    model.eval()
    x = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    want = model(rt.tensor(x)).numpy()

    path = os.path.join(folder, "scorer")
    for written in transpiler.save(model, path, input_spec=SPEC):
        print(f"saved {os.path.basename(written)} ({os.path.getsize(written)} bytes)")

    loaded = transpiler.load(path)
    for batch in (5, 2):
        got = loaded(x=x[:batch]).numpy()
        np.testing.assert_allclose(got, want[:batch], rtol=1e-6, atol=1e-6)
        print(f"loaded model, batch {batch}: output shape {got.shape}, same as the Layer")

    np.save(os.path.join(folder, "x.npy"), x)
    out_npy = os.path.join(folder, "fresh.npy")
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS, path, os.path.join(folder, "x.npy"), out_npy],
                          capture_output=True, text=True, check=True)
    print("fresh process " + done.stdout.strip())
    np.testing.assert_allclose(np.load(out_npy), want, rtol=1e-6, atol=1e-6)
    print("fresh process (no import of this file): same outputs")

    module_path = os.path.join(folder, "scorer_np")
    py_file, npz_file = transpiler.export_python(model, module_path, input_spec=SPEC)
    sys.path.insert(0, folder)
    try:
        import scorer_np                   # plain NumPy code: no dy2static import
    finally:
        sys.path.remove(folder)
    exported = scorer_np.run(x=x)
    np.testing.assert_allclose(np.asarray(exported), want, rtol=1e-5, atol=1e-6)
    imports = sorted({line.split()[1].split(".")[0] for line in open(py_file)
                      if line.startswith(("import ", "from "))})
    print(f"exported {os.path.basename(py_file)} + {os.path.basename(npz_file)}: imports {', '.join(imports)}; "
          "same outputs")


if __name__ == "__main__":
    main()
