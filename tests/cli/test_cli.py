"""The `dy2static` command: every subcommand, in-process through main([...]) and as a real process."""
import errno
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest


import runtime as rt
from transpiler import InputSpec, batches, cli, to_source, to_static

ROOT = Path(__file__).resolve().parents[2]

MODEL = '''\
import runtime as rt
from runtime import nn
from transpiler import to_static


def helper(v):
    return v * 2


@to_static
def grow(x):
    h = rt.tanh(x)
    i = 0
    while rt.sum(h) < 100 and i < 10:
        h = h * 2
        i += 1
    return h if rt.mean(h) > 0 else -h


def pick(x, y, scale=2.0):
    if x.sum() > y.sum():
        return helper(x) * scale
    return y


def split(x):
    return x + 1, x * 2


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    @to_static
    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            h = nn.functional.relu(h)
        return h


class Plain:
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


rt.seed(0)
model = Net()
'''

PLAIN = '''\
def first(x):
    if x.sum() > 0:
        return x
    return -x


def second(x):
    for row in x:
        x = x + row
    return x
'''

BROKEN = {
    "syntax.py": "def f(x):\n    if x > 0\n        return x\n",
    "conversion.py": "def gen(x):\n    yield x\n",
    "eagerif.py": "from transpiler import not_to_static\n\n\n@not_to_static\ndef g(x):\n    if x.sum() > 0:\n"
                  "        return x\n    return -x\n\n\ndef f(x):\n    return g(x)\n",
    "importfail.py": "import dy2static_no_such_module\n",
    "runtimefail.py": "import runtime as rt\n\n\ndef f(x):\n    return rt.matmul(x, x)\n",
    "undefined.py": "def f(x):\n    if x.sum() > 0:\n        y = x\n    return y + 1\n",
    "exits.py": "import sys\n\nsys.exit(3)\n",
}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder holding the user's files and inputs; also the current directory."""
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "plain.py").write_text(PLAIN)
    for name, text in BROKEN.items():
        (tmp_path / name).write_text(text)
    np.save(tmp_path / "x.npy", np.arange(8, dtype=np.float32).reshape(2, 4) - 3)
    np.save(tmp_path / "y.npy", np.ones((2, 4), np.float32))
    np.savez(tmp_path / "both.npz", x=np.ones(3))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_process(*argv, cwd, command=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = command or [sys.executable, "-m", "transpiler"]
    done = subprocess.run(command + list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def load(workdir, name="model.py"):
    return cli.load_module(str(workdir / name))


def assert_one_line_error(code, err, *fragments):
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dy2static: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# --- help -------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [[], ["convert"], ["program"], ["run"]])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(command + ["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: dy2static")
    assert {"": "convert", "convert": "--diff", "program": "--spec", "run": "--input"}[" ".join(command)] in out


def test_run_help_documents_batches(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--batch-size N" in out and "memory-mapped" in out and "DIR/out0.npy" in out and "--quiet" in out


def test_program_help_states_the_spec_grammar(capsys):
    with pytest.raises(SystemExit):
        cli.main(["program", "--help"])
    assert "DTYPE[DIM" in capsys.readouterr().out.replace("\n", " ")


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    assert exit_.value.code == 2


# --- convert ----------------------------------------------------------------------------------

def test_convert_one_function_prints_exactly_its_code(workdir):
    code, out, err = run_main("convert", "model.py::pick")
    assert (code, err) == (0, "")
    assert out == to_source(load(workdir).pick)
    assert "_jst.convert_ifexp" in out     # `if c: return a` + `return b` is one ternary


def test_convert_static_function_prints_its_code(workdir):
    code, out, _ = run_main("convert", "model.py::grow")
    assert code == 0
    assert out == load(workdir).grow.code


def test_convert_whole_file_prints_every_to_static_function(workdir):
    code, out, _ = run_main("convert", "model.py")
    module = load(workdir)
    assert code == 0
    assert out == f"# model.py::grow\n{module.grow.code}\n# model.py::Net.forward\n{module.Net.forward.code}"
    assert "def pick" not in out


def test_convert_file_without_to_static_prints_every_top_level_function(workdir):
    code, out, _ = run_main("convert", "plain.py")
    module = load(workdir, "plain.py")
    assert code == 0
    assert out == f"# plain.py::first\n{to_source(module.first)}\n# plain.py::second\n{to_source(module.second)}"


def test_convert_class_method(workdir):
    code, out, _ = run_main("convert", "model.py::Plain.forward")
    assert code == 0
    assert out == to_source(load(workdir).Plain.forward)
    assert out.startswith("def forward(self, x):")


def test_convert_layer_instance_means_its_forward(workdir):
    code, out, _ = run_main("convert", "model.py::model")
    assert code == 0
    assert out == load(workdir).model.forward.code


def test_convert_diff(workdir):
    code, out, _ = run_main("convert", "model.py::pick", "--diff")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "--- model.py::pick (original)"
    assert lines[1] == "+++ model.py::pick (converted)"
    assert "-    if x.sum() > y.sum():" in lines
    assert any(line.startswith("+    return _jst.convert_ifexp(x.sum() > y.sum(),") for line in lines)


# --- program ----------------------------------------------------------------------------------

def test_program_text(workdir):
    code, out, err = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]")
    assert (code, err) == (0, "")
    assert out == str(load(workdir).grow.get_program(InputSpec([None, 8], "float32"))) + "\n"
    assert out.startswith("program grow(x: float32[?, 8]):")
    assert "= while(" in out and "= cond(" in out


def test_program_optimized(workdir):
    code, out, _ = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--optimized")
    assert code == 0
    assert out == str(load(workdir).grow.get_program(InputSpec([None, 8], "float32"), optimized=True)) + "\n"


def test_program_grad_shows_the_backward_program(workdir):
    code, out, err = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--grad")
    assert code == 0, err
    assert out == str(load(workdir).grow.get_program(InputSpec([None, 8], "float32"), grad=True)) + "\n"
    types = [line.split("= ")[1].split("(")[0] for line in out.splitlines() if "= " in line]
    assert types.count("while") == 2 and types.count("cond") >= 2     # differentiated, not unrolled
    assert "d_" in out.splitlines()[0]                                 # the cotangent input


def test_program_specs_by_name_and_position(workdir):
    expected = str(to_static(load(workdir).pick).get_program(InputSpec([3]), InputSpec([3]))) + "\n"
    for specs in (["x:float32[3]", "y:float32[3]"], ["y:float32[3]", "x:float32[3]"],
                  ["float32[3]", "float32[3]"], ["y:float32[3]", "float32[3]"]):
        code, out, err = run_main("program", "model.py::pick", *[a for s in specs for a in ("--spec", s)])
        assert (code, err, out) == (0, "", expected), specs


def test_program_of_layer_forward(workdir):
    expected = str(load(workdir).model.forward.get_program(InputSpec([None, 4]))) + "\n"
    for target in ("model.py::model.forward", "model.py::model"):
        code, out, _ = run_main("program", target, "--spec", "x:float32[?,4]")
        assert (code, out) == (0, expected)
    assert "persistable" in expected and "= linear(" in expected


def test_program_json(workdir):
    code, out, _ = run_main("program", "model.py::grow", "--spec", "x:float32[-1,8]", "--format", "json")
    assert code == 0
    assert json.loads(out)["name"] == "grow"
    program = load(workdir).grow.get_program(InputSpec([None, 8]))
    assert rt.Program.from_json(out) == program


def test_program_dot(workdir):
    code, out, _ = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--format", "dot")
    assert code == 0
    assert out.startswith('digraph "grow" {') and out.rstrip().endswith("}")
    for cluster in ("while cond block 1", "while body block 4", "cond true block 5", "cond false block 6"):
        assert f'label="{cluster}";' in out
    assert out.count("subgraph cluster_b") == 6
    assert 'label="tanh"' in out


def test_program_out_file(workdir):
    code, out, _ = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--format", "dot",
                            "--out", "grow.dot")
    assert (code, out) == (0, "wrote grow.dot\n")
    assert (workdir / "grow.dot").read_text().startswith("digraph")
    code, _, _ = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--out", "grow.txt")
    assert (workdir / "grow.txt").read_text().startswith("program grow(")


def test_program_out_file_is_replaced_whole_or_not_at_all(workdir, monkeypatch):
    """A write that fails halfway (disk full) leaves the file that was there, and no temporary beside it."""
    (workdir / "grow.txt").write_text("the old program\n")

    class HalfWritten(io.StringIO):
        def __init__(self, path):
            super().__init__()
            self.real = builtin_open(path, "w", encoding="utf-8")

        def write(self, text):
            self.real.write(text[: len(text) // 2])
            self.real.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

        def __exit__(self, *exc):
            self.real.close()

    builtin_open = open
    monkeypatch.setattr(cli, "open", lambda path, *a, **k: HalfWritten(path), raising=False)
    code, _, err = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--out", "grow.txt")
    assert code != 0 and "No space left on device" in err
    assert (workdir / "grow.txt").read_text() == "the old program\n"
    assert sorted(p.name for p in workdir.iterdir() if p.name.startswith(".grow.txt")) == []


def test_program_svg_without_graphviz_says_how_to_get_it(workdir, monkeypatch):
    monkeypatch.setattr(cli.shutil, "which", lambda name: None)
    code, _, err = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--format", "dot",
                            "--out", "grow.svg")
    assert_one_line_error(code, err, "Graphviz", "not installed", "apt-get install graphviz", "--out FILE.dot")
    assert not (workdir / "grow.svg").exists()


def test_program_svg_runs_dot(workdir, monkeypatch):
    """With a stand-in `dot` first on PATH: the DOT text goes to its stdin, -Tsvg -o FILE on its command line."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    fake.write_text('#!/bin/sh\necho "$1 $2" > "$3.args"\ncat > "$3"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    code, out, err = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--format", "dot",
                              "--out", "grow.svg")
    assert (code, out, err) == (0, "wrote grow.svg\n", "")
    assert (workdir / "grow.svg").read_text().startswith('digraph "grow"')
    assert (workdir / "grow.svg.args").read_text().strip() == "-Tsvg -o"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_program_svg_with_graphviz(workdir):
    code, _, _ = run_main("program", "model.py::grow", "--spec", "x:float32[None,8]", "--format", "dot",
                          "--out", "grow.svg")
    assert code == 0
    assert "<svg" in (workdir / "grow.svg").read_text()


# --- run --------------------------------------------------------------------------------------

def test_run_prints_outputs(workdir):
    code, out, err = run_main("run", "model.py::pick", "--input", "x=x.npy", "--input", "y=y.npy")
    assert (code, err) == (0, "")
    x = np.load(workdir / "x.npy")
    want = x * 4 if x.sum() > 8 else np.ones((2, 4), np.float32)
    assert out.splitlines()[0] == "out0: float32[2, 4]"
    assert out.splitlines()[1:] == np.array2string(want).splitlines()


def test_run_writes_npz(workdir):
    code, out, _ = run_main("run", "model.py::split", "--input", "x.npy", "--out", "out.npz")
    assert (code, out) == (0, "wrote 2 output(s) to out.npz: out0, out1\n")
    x = np.load(workdir / "x.npy")
    with np.load(workdir / "out.npz", allow_pickle=False) as saved:
        np.testing.assert_array_equal(saved["out0"], x + 1)
        np.testing.assert_array_equal(saved["out1"], x * 2)


def test_run_layer_forward_matches_eager(workdir):
    code, _, _ = run_main("run", "model.py::model.forward", "--input", "x=x.npy", "--out", "o.npz")
    assert code == 0
    model = load(workdir).model                     # the file seeds its weights: same ones as the run's
    eager = model.forward.rollback()(rt.tensor(np.load(workdir / "x.npy"))).numpy()
    with np.load(workdir / "o.npz") as saved:
        assert saved["out0"].shape == (2, 3)
        np.testing.assert_allclose(saved["out0"], eager, rtol=1e-6)


# --- errors: one line on stderr, status 1 -------------------------------------------------------

@pytest.mark.parametrize("argv, fragments", [
    (["convert", "missing.py"], ["missing.py: no such file"]),
    (["convert", "model.py::nope"], ["model.py: no function 'nope'", "helper, pick, split"]),
    (["convert", "model.py::Net.nope"], ["'Net' has no attribute 'nope'"]),
    (["convert", "model.py::modle.forward"], ["model.py: no name 'modle'", "(its functions: "]),
    (["convert", "exits.py"], ["importing exits.py failed: it called sys.exit(3) (exits.py:3)", "__main__"]),
    (["convert", "model.py::"], ["nothing after '::'"]),
    (["convert", "syntax.py"], ["syntax.py:2: syntax error"]),
    (["convert", "conversion.py::gen"], ["conversion.py:2: cannot convert", "yield"]),
    (["program", "eagerif.py::f", "--spec", "float32[3]"], ["eagerif.py:6: cannot convert", "not_to_static"]),
    (["convert", "importfail.py"], ["importing importfail.py failed", "ModuleNotFoundError", "importfail.py:1"]),
    (["program", "runtimefail.py::f", "--spec", "float32[3,4]"], ["ValueError", "matmul", "runtimefail.py:5"]),
    (["program", "undefined.py::f", "--spec", "float32[3]"], ["'y'"]),
    (["program", "model.py", "--spec", "float32[3]"], ["FILE.py::QUALNAME"]),
    (["program", "model.py::grow", "--spec", "x:float32[None,8"], ["bad --spec", "[NAME:]DTYPE[DIM, ...]"]),
    (["program", "model.py::grow", "--spec", "x:float32[None,a]"], ["dim 'a'", "[NAME:]DTYPE[DIM, ...]"]),
    (["program", "model.py::grow", "--spec", "x:floot32[3]"], ["unknown dtype 'floot32'"]),
    (["program", "model.py::grow", "--spec", "z:float32[3]"], ["no parameter 'z'", "(its parameters: x)"]),
    (["program", "model.py::grow", "--spec", "x:float32[3]", "--spec", "x:float32[3]"], ["given twice"]),
    (["program", "model.py::pick", "--spec", "x:float32[3]"], ["missing --spec for parameter 'y'"]),
    (["program", "model.py::grow"], ["missing --spec for parameter 'x'"]),
    (["program", "model.py::Plain.forward", "--spec", "float32[3]"], ["method of class Plain", "model.forward"]),
    (["program", "model.py::Net.forward", "--spec", "float32[3]"], ["method of class Net"]),
    (["program", "model.py::rt", "--spec", "float32[3]"], ["is a module"]),
    (["run", "model.py::pick", "--input", "x=x.npy", "--input", "y=nope.npy"], ["nope.npy: no such file"]),
    (["run", "model.py::pick", "--input", "x=both.npz", "--input", "y=y.npy"], ["several arrays"]),
    (["run", "model.py::pick", "--input", "1x=x.npy"], ["bad --input '1x=x.npy'"]),
    (["run", "model.py::grow", "--input", "x.npy", "--input", "y.npy"], ["too many --inputs"]),
])
def test_error_is_one_line(workdir, argv, fragments):
    code, out, err = run_main(*argv)
    assert out == ""
    assert_one_line_error(code, err, *fragments)


def test_run_on_gpu_without_one_is_one_line(workdir):
    if rt.gpu_available():
        pytest.skip("a GPU is available here")
    code, _, err = run_main("run", "model.py::split", "--input", "x.npy", "--device", "gpu")
    assert_one_line_error(code, err, "--device gpu", "DeviceUnavailableError")


@pytest.mark.gpu
@pytest.mark.skipif(not rt.gpu_available(), reason="needs CUDA and CuPy")
def test_run_on_gpu(workdir):
    code, out, err = run_main("run", "model.py::split", "--input", "x.npy", "--device", "gpu", "--out", "g.npz")
    assert (code, err) == (0, "")
    with np.load(workdir / "g.npz") as saved:
        np.testing.assert_array_equal(saved["out1"], np.load(workdir / "x.npy") * 2)


def test_traceback_option_shows_the_traceback(workdir):
    code, _, err = run_main("program", "runtimefail.py::f", "--spec", "float32[3,4]", "--traceback")
    assert code == 1
    assert "Traceback" in err and err.splitlines()[-1].startswith("dy2static: error: ValueError")


def test_user_folder_is_importable_and_sys_path_restored(workdir):
    (workdir / "sibling.py").write_text("FACTOR = 3\n")
    (workdir / "uses_sibling.py").write_text("from sibling import FACTOR\n\n\ndef f(x):\n    return x * FACTOR\n")
    before = list(sys.path)
    code, out, _ = run_main("program", "uses_sibling.py::f", "--spec", "float32[2]")
    assert code == 0 and "multiply(x, 3)" in out
    assert sys.path == before


# --- as a process ------------------------------------------------------------------------------

def test_python_dash_m_transpiler(workdir):
    code, out, err = run_process("program", "model.py::grow", "--spec", "x:float32[None,8]", cwd=workdir)
    assert (code, err) == (0, "")
    assert out.startswith("program grow(x: float32[?, 8]):")


def test_process_error_is_one_line_without_traceback(workdir):
    code, out, err = run_process("convert", "syntax.py", cwd=workdir)
    assert out == ""
    assert_one_line_error(code, err, "syntax.py:2: syntax error")


def test_console_script(workdir):
    from importlib import metadata
    scripts = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts")}
    assert scripts.get("dy2static") == "transpiler.cli:main"
    script = Path(sys.executable).parent / "dy2static"
    if not script.exists():
        pytest.skip("the dy2static script is not installed next to this Python (pip install -e .)")
    code, out, err = run_process("run", "model.py::split", "--input", "x.npy", cwd=workdir, command=[str(script)])
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "out0: float32[2, 4]"
    code, out, _ = run_process("--help", cwd=workdir, command=[str(script)])
    assert code == 0 and textwrap.dedent(out).startswith("usage: dy2static")


def test_export_python_and_program(workdir):
    code, out, err = run_main("export", "model.py::grow", "--spec", "x:float32[None,4]", "--out", "build/grow")
    assert code == 0, err
    assert "build/grow.py" in out and (workdir / "build" / "grow.npz").exists()
    code, out, err = run_main("export", "model.py::grow", "--spec", "x:float32[None,4]", "--format", "program",
                              "--out", "build/grow_ir")
    assert code == 0, err
    import importlib.util
    import transpiler
    spec = importlib.util.spec_from_file_location("grow_export", workdir / "build" / "grow.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.load(workdir / "x.npy")
    want = load(workdir).grow(rt.tensor(x))
    want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else [want])]
    got = module.run(x=x)
    got = got if isinstance(got, (tuple, list)) else [got]
    loaded = transpiler.load(workdir / "build" / "grow_ir")(rt.tensor(x))
    loaded = loaded if isinstance(loaded, (tuple, list)) else [loaded]
    for g, l, w in zip(got, loaded, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)
        np.testing.assert_allclose(l.numpy(), w, rtol=1e-6)


def test_export_errors_are_one_line(workdir):
    code, out, err = run_main("export", "model.py::nope", "--spec", "x:float32[3]", "--out", "b/x")
    assert_one_line_error(code, err, "nope")
    code, out, err = run_main("export", "model.py::grow", "--spec", "x:float33[3]", "--out", "b/x")
    assert_one_line_error(code, err, "float33")


# --- a saved Program as TARGET ------------------------------------------------------------------

def test_export_a_saved_program_needs_no_spec(workdir):
    import transpiler
    code, _, err = run_main("export", "model.py::model.forward", "--spec", "x:float32[None,4]", "--format",
                            "program", "--out", "build/net")
    assert code == 0, err
    code, out, err = run_main("export", "build/net.program.json", "--out", "build/net_np")
    assert (code, err) == (0, "")
    assert out == "wrote build/net_np.py, build/net_np.npz\n"
    code, out, err = run_main("export", "build/net.program.json", "--format", "program", "--out", "build/net2")
    assert (code, err) == (0, "")
    x = np.load(workdir / "x.npy")
    want = transpiler.load("build/net")(x).numpy()
    np.testing.assert_array_equal(transpiler.load("build/net2")(x).numpy(), want)
    child = ("import sys; sys.path.insert(0, 'build'); import numpy as np, net_np; "
             "assert 'runtime' not in sys.modules; np.save('got.npy', net_np.run(x=np.load('x.npy')))")
    done = subprocess.run([sys.executable, "-I", "-c", child], cwd=workdir, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(workdir / "got.npy"), want)


def test_run_a_saved_program(workdir):
    code, _, err = run_main("export", "model.py::split", "--spec", "x:float32[None,4]", "--format", "program",
                            "--out", "build/split")
    assert code == 0, err
    code, out, err = run_main("run", "build/split.program.json", "--input", "x=x.npy", "--out", "o.npz")
    assert (code, err) == (0, "")
    x = np.load(workdir / "x.npy")
    with np.load(workdir / "o.npz") as saved:
        np.testing.assert_array_equal(saved["out0"], x + 1)
        np.testing.assert_array_equal(saved["out1"], x * 2)


@pytest.mark.parametrize("argv, fragments", [
    (["export", "build/split.program.json", "--spec", "x:float32[3]", "--out", "b/x"], ["leave out --spec"]),
    (["export", "nothing.program.json", "--out", "b/x"], ["nothing.program.json: no such file"]),
    (["run", "build/split.program.json", "--input", "z=x.npy"], ["'z' is not an input", "['x']"]),
])
def test_saved_program_errors_are_one_line(workdir, argv, fragments):
    assert run_main("export", "model.py::split", "--spec", "x:float32[None,4]", "--format", "program",
                    "--out", "build/split")[0] == 0
    code, out, err = run_main(*argv)
    assert out == ""
    assert_one_line_error(code, err, *fragments)


# --- run --batch-size: memory-mapped inputs, outputs written batch by batch ------------------------

ROWWISE = '''\
import numpy as np
import runtime as rt

W = rt.tensor(np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32))


def f(x, y):
    h = rt.tanh(rt.matmul(x, W)) + y
    return {"h": rt.where(h > 0, h, -2 * h), "norm": rt.sum(x * x, axis=1)}, 3


def double(x):
    return x * 2 + 1


def total(x):
    return rt.sum(x)


def bounded(x):
    rt.assert_(rt.all(x < 3.0), "value out of range")
    return x
'''


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def rows(workdir):
    (workdir / "rowwise.py").write_text(ROWWISE)
    rng = np.random.default_rng(0)
    np.save(workdir / "bx.npy", rng.standard_normal((10_000, 4)).astype(np.float32))
    np.save(workdir / "by.npy", rng.standard_normal((10_000, 1)).astype(np.float32))
    return workdir


def test_batches_equal_one_whole_input_call(rows):
    code, out, err = run_main("run", "rowwise.py::f", "--input", "x=bx.npy", "--input", "y=by.npy",
                              "--out", "whole.npz")
    assert (code, err) == (0, "")
    code, out, err = run_main("run", "rowwise.py::f", "--input", "x=bx.npy", "--input", "y=by.npy",
                              "--batch-size", "128", "--out", "parts")
    assert (code, err) == (0, "")              # stderr is not a terminal: no progress bar
    assert out == "wrote 3 output(s) for 10000 rows to parts: out0.npy, out1.npy, out2.npy\n"
    with np.load(rows / "whole.npz", allow_pickle=False) as whole:
        for key in ("out0", "out1", "out2"):
            part = np.load(rows / "parts" / f"{key}.npy", allow_pickle=False)
            assert part.dtype == whole[key].dtype and part.shape == whole[key].shape
            np.testing.assert_allclose(part, whole[key], rtol=1e-6, atol=1e-7)
    assert np.load(rows / "parts" / "out2.npy") == 3


def test_batches_of_a_saved_program(rows):
    assert run_main("export", "rowwise.py::double", "--spec", "x:float32[None,4]", "--format", "program",
                    "--out", "build/double")[0] == 0
    code, _, err = run_main("run", "build/double.program.json", "--input", "bx.npy", "--batch-size", "999",
                            "--out", "d")
    assert (code, err) == (0, "")
    np.testing.assert_array_equal(np.load(rows / "d" / "out0.npy"), np.load(rows / "bx.npy") * 2 + 1)


def test_batches_show_a_progress_bar_on_a_terminal_only(rows):
    err = FakeTerminal()
    code = cli.main(["run", "rowwise.py::double", "--input", "x=bx.npy", "--batch-size", "128", "--out", "p"],
                    stdout=io.StringIO(), stderr=err)
    assert code == 0
    text = err.getvalue()
    assert text.startswith("\r[") and text.endswith("] 10000/10000 rows (100%)\n")
    assert "[" + "#" * 30 + "]" in text
    quiet = FakeTerminal()
    code = cli.main(["run", "rowwise.py::double", "--input", "x=bx.npy", "--batch-size", "128", "--out", "q",
                     "--quiet"], stdout=io.StringIO(), stderr=quiet)
    assert (code, quiet.getvalue()) == (0, "")


@pytest.mark.parametrize("argv, fragments", [
    (["run", "rowwise.py::f", "--input", "x=bx.npy", "--input", "y=y.npy", "--batch-size", "8", "--out", "o"],
     ["same number of rows", "x has 10000", "y has 2"]),
    (["run", "rowwise.py::double", "--input", "x=bx.npy", "--batch-size", "8"], ["--out DIR"]),
    (["run", "rowwise.py::double", "--input", "x=bx.npy", "--batch-size", "8", "--out", "o.npz"], ["--out DIR"]),
    (["run", "rowwise.py::double", "--input", "x=bx.npy", "--batch-size", "0", "--out", "o"], ["at least 1"]),
    (["run", "rowwise.py::total", "--input", "x=bx.npy", "--batch-size", "64", "--out", "o"],
     ["out0 is float32[] for a batch of 64 rows", "one row per input row"]),
    (["run", "rowwise.py::bounded", "--input", "x=bx.npy", "--batch-size", "64", "--out", "o"],
     ["rows ", "AssertionError: value out of range", "rowwise.py:21"]),
])
def test_batch_usage_errors_are_one_line(rows, argv, fragments):
    code, out, err = run_main(*argv)
    assert out == ""
    assert_one_line_error(code, err, *fragments)
    assert not (rows / "o").exists()                       # nothing half-written is left behind


def test_batches_keep_memory_far_below_the_input_size(rows):
    import tracemalloc
    big = np.lib.format.open_memmap(rows / "big.npy", mode="w+", dtype=np.float32, shape=(160_000, 64))
    for start in range(0, 160_000, 20_000):
        big[start:start + 20_000] = np.arange(start, start + 20_000, dtype=np.float32)[:, None]
    big.flush()
    del big
    size = os.path.getsize(rows / "big.npy")                 # ~41 MB
    run_main("run", "rowwise.py::double", "--input", "x=x.npy", "--batch-size", "2", "--out", "warm")
    tracemalloc.start()
    try:
        code, out, err = run_main("run", "rowwise.py::double", "--input", "x=big.npy", "--batch-size", "2048",
                                  "--out", "bigout")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (code, err) == (0, "")
    assert peak < size / 8, (peak, size)
    got = np.load(rows / "bigout" / "out0.npy", mmap_mode="r")
    assert got.shape == (160_000, 64)
    for start in (0, 2047, 2048, 80_000, 159_999):
        np.testing.assert_array_equal(got[start], np.full(64, 2 * start + 1, np.float32))


# --- outputs never destroy inputs; a full disk is one error and leaves no output ------------------------

def _files(folder):
    return sorted(p.name for p in Path(folder).iterdir()) if Path(folder).exists() else []


def _link(kind, target, link):
    if kind == "symlink":
        os.symlink(os.path.relpath(target, os.path.dirname(link)), link)
    else:
        os.link(target, link)


@pytest.mark.parametrize("kind", ["same name", "symlink", "hard link", "input through a symlink"])
@pytest.mark.parametrize("mode", [["--batch-size", "128"], ["--scheduler", "tcp://127.0.0.1:9"]])
def test_an_output_that_is_an_input_is_refused_before_anything_is_written(rows, kind, mode):
    (rows / "parts").mkdir()
    data = np.load(rows / "bx.npy")
    if kind == "same name":                  # the input is the file the first output would replace
        shutil.copy(rows / "bx.npy", rows / "parts" / "out0.npy")
        given = "parts/out0.npy"
    elif kind == "input through a symlink":
        shutil.copy(rows / "bx.npy", rows / "parts" / "out0.npy")
        _link("symlink", rows / "parts" / "out0.npy", str(rows / "alias.npy"))
        given = "alias.npy"
    else:
        _link(kind.split()[0], rows / "bx.npy", str(rows / "parts" / "out0.npy"))
        given = "bx.npy"
    before = {name: (rows / "parts" / name).read_bytes() for name in _files(rows / "parts")}
    code, out, err = run_main("run", "rowwise.py::double", "--input", f"x={given}", *mode, "--out", "parts")
    assert out == ""
    assert_one_line_error(code, err, "out0.npy is the input", "give another --out")
    assert {name: (rows / "parts" / name).read_bytes() for name in _files(rows / "parts")} == before
    np.testing.assert_array_equal(np.load(rows / given), data)


def test_run_out_npz_that_is_an_input_is_refused(rows):
    shutil.copy(rows / "bx.npy", rows / "data.npz")           # .npy bytes under an .npz name
    before = (rows / "data.npz").read_bytes()
    code, out, err = run_main("run", "rowwise.py::double", "--input", "x=data.npz", "--out", "data.npz")
    assert_one_line_error(code, err, "--out data.npz is the input data.npz")
    assert (rows / "data.npz").read_bytes() == before


def test_outputs_replace_old_ones_only_when_every_batch_ran(rows):
    (rows / "o").mkdir()
    np.save(rows / "o" / "out0.npy", np.arange(3))                  # an earlier run's output
    late = np.zeros((1000, 4), np.float32)
    late[900] = 5                                                   # batches 0-13 run, batch 14 fails
    np.save(rows / "late.npy", late)
    code, out, err = run_main("run", "rowwise.py::bounded", "--input", "x=late.npy", "--batch-size", "64",
                              "--out", "o")
    assert_one_line_error(code, err, "value out of range")
    assert _files(rows / "o") == ["out0.npy"]                        # no temporaries left
    np.testing.assert_array_equal(np.load(rows / "o" / "out0.npy"), np.arange(3))
    code, out, err = run_main("run", "rowwise.py::double", "--input", "x=bx.npy", "--batch-size", "999",
                              "--out", "o")
    assert (code, err) == (0, "")
    assert _files(rows / "o") == ["out0.npy"]
    np.testing.assert_array_equal(np.load(rows / "o" / "out0.npy"), np.load(rows / "bx.npy") * 2 + 1)


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("where", ["reserving", "writing rows"])
def test_a_full_disk_is_one_error_and_leaves_no_output(rows, monkeypatch, where):
    if where == "reserving":
        if not hasattr(os, "posix_fallocate"):
            pytest.skip("no posix_fallocate here")
        monkeypatch.setattr(os, "posix_fallocate", _no_space)
    else:
        calls = []
        real = batches._write_at

        def write_at(*args):                # the third batch finds the disk full
            calls.append(1)
            return _no_space() if len(calls) == 3 else real(*args)
        monkeypatch.setattr(batches, "_write_at", write_at)
    code, out, err = run_main("run", "rowwise.py::f", "--input", "x=bx.npy", "--input", "y=by.npy",
                              "--batch-size", "128", "--out", "o")
    assert out == ""
    assert_one_line_error(code, err, "cannot write o", "out0.npy", "No space left on device")
    assert not (rows / "o").exists()


_LIMITED = '''\
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
if sys.argv[1] == "no-fallocate":                   # a filesystem that cannot reserve: rows fail as written
    del os.posix_fallocate
from transpiler import cli
sys.exit(cli.main(sys.argv[2:]))
'''


@pytest.mark.skipif(not hasattr(os, "posix_fallocate") or sys.platform == "win32", reason="needs RLIMIT_FSIZE")
@pytest.mark.parametrize("how, out, written", [("fallocate", ["--batch-size", "1000", "--out", "o"], "o/out0.npy"),
                                               ("no-fallocate", ["--batch-size", "1000", "--out", "o"], "o/out0.npy"),
                                               ("fallocate", ["--out", "o/all.npz"], "o/all.npz")])
def test_a_file_size_limit_is_a_real_write_failure_reported_as_one_line(rows, how, out, written):
    (rows / "o").mkdir()
    np.save(rows / "o" / "keep.npy", np.arange(3))
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", _LIMITED, how, "run", "rowwise.py::double", "--input", "x=bx.npy",
                           *out], cwd=rows, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout == ""                                            # the output needs 160 kB: over the limit
    assert_one_line_error(done.returncode, done.stderr, f"cannot write {written}: File too large")
    assert _files(rows / "o") == ["keep.npy"]


# --- limits on an untrusted saved Program ---------------------------------------------------------------

ENDLESS = '''\
import runtime as rt


def spin(x):
    while rt.any(x > -1.0):
        x = x + 1.0
    return x


def affine(x):
    return x * W + 1.0


W = rt.tensor(__import__("numpy").ones((4,), "float32"))
'''


@pytest.fixture
def saved(workdir):
    (workdir / "endless.py").write_text(ENDLESS)
    for name in ("spin", "affine"):
        code, _, err = run_main("export", f"endless.py::{name}", "--spec", "x:float32[None,4]", "--format",
                                "program", "--out", f"build/{name}")
        assert code == 0, err
    return workdir


def test_max_iterations_stops_an_endless_saved_program(saved):
    code, out, err = run_process("run", "build/spin.program.json", "--input", "x=x.npy", "--max-iterations", "50",
                                 cwd=saved)                             # bounded: run_process has a timeout
    assert out == ""
    assert_one_line_error(code, err, "more than 50 iterations")
    code, out, err = run_main("run", "build/spin.program.json", "--input", "x=x.npy", "--batch-size", "1",
                              "--out", "o", "--max-iterations", "0")
    assert_one_line_error(code, err, "more than 0 iterations")
    assert not (saved / "o").exists()


def test_max_bytes_bounds_a_saved_programs_parameters(saved):
    code, out, err = run_main("run", "build/affine.program.json", "--input", "x=x.npy", "--max-bytes", "15")
    assert_one_line_error(code, err, "cannot load build/affine.program.json", "over the limit of 15 bytes")
    code, out, err = run_main("export", "build/affine.program.json", "--out", "build/np", "--max-bytes", "15")
    assert_one_line_error(code, err, "over the limit of 15 bytes")
    assert not (saved / "build" / "np.py").exists()
    code, out, err = run_main("run", "build/affine.program.json", "--input", "x=x.npy", "--max-bytes", "16",
                              "--max-iterations", "3", "--out", "a.npz")
    assert (code, err) == (0, "")
    np.testing.assert_array_equal(np.load(saved / "a.npz")["out0"], np.load(saved / "x.npy") + 1)
    assert run_main("export", "build/affine.program.json", "--out", "build/np", "--max-bytes", "16")[0] == 0


def test_max_ops_bounds_a_saved_programs_size(saved):
    code, out, err = run_main("run", "build/affine.program.json", "--input", "x=x.npy", "--max-ops", "0")
    assert_one_line_error(code, err, "cannot load build/affine.program.json", "max_ops")
    code, out, err = run_main("export", "build/affine.program.json", "--out", "build/np2", "--max-ops", "0")
    assert_one_line_error(code, err, "max_ops")
    assert not (saved / "build" / "np2.py").exists()
    code, out, err = run_main("run", "build/affine.program.json", "--input", "x=x.npy", "--max-ops", "100",
                              "--out", "b.npz")
    assert (code, err) == (0, "")


@pytest.mark.parametrize("argv, fragment", [
    (["run", "endless.py::affine", "--input", "x=x.npy", "--max-bytes", "10"], "--max-bytes: bounds a saved"),
    (["run", "endless.py::affine", "--input", "x=x.npy", "--max-iterations", "10"], "--max-iterations: bounds"),
    (["export", "endless.py::affine", "--spec", "x:float32[None,4]", "--out", "b/x", "--max-bytes", "1"],
     "is Python code"),
    (["run", "endless.py::affine", "--input", "x=x.npy", "--max-ops", "10"], "--max-ops: bounds a saved"),
])
def test_load_limits_on_python_code_are_refused(saved, argv, fragment):
    code, out, err = run_main(*argv)
    assert_one_line_error(code, err, fragment)


@pytest.mark.parametrize("value", ["-1", "many", "1.5"])
def test_load_limits_must_be_non_negative_integers(saved, value, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "build/spin.program.json", "--input", "x=x.npy", "--max-iterations", value])
    assert exit_.value.code == 2
    assert "expected a non-negative integer" in capsys.readouterr().err


def test_help_documents_the_load_limits(capsys):
    for command in ("run", "export"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--max-bytes N" in text and "16x the .params.npz file's size + 64 MiB" in text
        assert "--max-ops N" in text and "200,000" in text
        assert ("--max-iterations N" in text) == (command == "run")
