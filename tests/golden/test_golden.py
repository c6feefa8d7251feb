"""Converted source and Program text of every golden case == golden_outputs/ (`--update-golden` rewrites them)."""
import ast
import difflib
import inspect
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import runtime as rt
from runtime import pytree
from transpiler import InputSpec, to_source, to_static
from transpiler.emit import WIDTH, wrap_lines

from .cases import CASES

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = ROOT / "golden_outputs"
NAMES = sorted(CASES)
# what would make a golden file differ between machines or runs
_MACHINE_SPECIFIC = [re.compile(re.escape(str(ROOT))), re.compile(re.escape(os.path.expanduser("~")) + "/"),
                     re.compile(r"0x[0-9a-fA-F]{6,}"), re.compile(r" object at "), re.compile(r"\.py:\d+")]


def _source(name):
    return to_source(CASES[name]["fn"])


def _program_text(name):
    case = CASES[name]
    return str(to_static(case["fn"]).get_program(*case["args"])) + "\n"


def _check(path, actual, update):
    for pattern in _MACHINE_SPECIFIC:
        found = pattern.search(actual)
        assert found is None, f"{path.name}: machine-specific text {found.group(0)!r} in:\n{actual}"
    if update:
        GOLDEN_DIR.mkdir(exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != actual:
            path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing; create it with `pytest tests/golden --update-golden`")
    expected = path.read_text(encoding="utf-8")
    if expected != actual:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            f"{path.relative_to(ROOT)} (golden)", f"{path.name} (now)"))
        pytest.fail(f"{path.name} differs from its golden file (if the change is intended, run "
                    f"`pytest tests/golden --update-golden` and review the diff):\n{diff}", pytrace=False)


@pytest.mark.parametrize("name", NAMES)
def test_converted_source(name, update_golden):
    _check(GOLDEN_DIR / f"{name}.py", _source(name), update_golden)


@pytest.mark.parametrize("name", NAMES)
def test_program_text(name, update_golden):
    _check(GOLDEN_DIR / f"{name}.program.txt", _program_text(name), update_golden)


def test_no_stale_golden_files(update_golden):
    expected = {f"{n}.py" for n in NAMES} | {f"{n}.program.txt" for n in NAMES}
    stale = sorted(p.name for p in GOLDEN_DIR.glob("*") if p.name not in expected) if GOLDEN_DIR.exists() else []
    if update_golden:
        for name in stale:
            (GOLDEN_DIR / name).unlink()
        return
    assert not stale, f"golden_outputs/ holds files of no case: {stale} (`--update-golden` removes them)"


# what the converter writes, by transform: each must show in some golden case's converted source
SHOWN = ["__return_value", "__return_flag", "__break_", "__continue_", "_jst.convert_append", "_jst.convert_setitem",
         "_jst.convert_ifelse", "_jst.convert_while", "_jst.convert_for", "_jst.undefined", "_jst.convert_test_and",
         "_jst.convert_ifexp", "_jst.convert_logical_not", "_jst.convert_call", "_jst.convert_range",
         "_jst.convert_len", "_jst.convert_print", "_jst.convert_assert"]


def test_cases_show_every_conversion():
    sources = "\n".join(_source(name) for name in NAMES)
    assert [marker for marker in SHOWN if marker not in sources] == []


def _non_blank(text):
    return sum(1 for line in text.splitlines() if line.strip())


def _original_lines(fn):
    """The function's own non-blank lines, from `def` on (decorators are not its code)."""
    source = textwrap.dedent(inspect.getsource(getattr(fn, "__dy2static_original__", fn)))
    node = ast.parse(source).body[0]
    return _non_blank("\n".join(source.splitlines()[node.lineno - 1:node.end_lineno]))


MAX_GROWTH = 2.5    # converted code a person would write: at most this many lines per original line


@pytest.mark.parametrize("name", NAMES)
def test_converted_source_stays_short(name):
    fn = CASES[name]["fn"]
    converted, original = _non_blank(_source(name)), _original_lines(fn)
    assert converted <= MAX_GROWTH * original, \
        f"{name}: {converted} converted lines for {original} original ones ({converted / original:.1f}x):\n" \
        f"{_source(name)}"


@pytest.mark.parametrize("name", NAMES)
def test_line_breaks_fall_between_arguments(name):
    """Never inside `rt.where` or `_jst.convert_ifelse`: no line ends or starts at a dot."""
    for line in _source(name).splitlines():
        assert not line.rstrip().endswith(".") and not line.lstrip().startswith("."), line


def test_long_lines_wrap_after_commas_only():
    line = ("    token, state = rt.where(done, EOS, rt.argmax(_jst.convert_call(self.out)(h), axis=-1)), "
            "_jst.convert_ifelse(rt.all(done), __true_fn_0, __false_fn_0, (a_long_name, another_long_name), "
            "('a_long_name', 'another_long_name'))\n")
    text = "def f():\n" + line
    wrapped = wrap_lines(text)
    assert ast.dump(ast.parse(wrapped)) == ast.dump(ast.parse(text))
    lines = wrapped.splitlines()
    assert len(lines) > 2 and all(len(x) <= WIDTH for x in lines), wrapped
    assert all(x.rstrip().endswith(",") for x in lines[1:-1]), wrapped
    assert "rt.where(" in wrapped and "_jst.convert_ifelse(" in wrapped


def _concrete(arg, rng):
    if not isinstance(arg, InputSpec):
        return arg
    shape = tuple(3 if d == -1 else d for d in arg.shape)
    return rng.standard_normal(shape).astype(arg.dtype)


def _leaves(value):
    leaves, _ = pytree.flatten(value)
    return [leaf.numpy() if isinstance(leaf, rt.Tensor) else np.asarray(leaf) for leaf in leaves]


# Known divergences in code outside this suite, each with its report; remove the entry once fixed.
_KNOWN_BUGS = {}   # name -> reason: a golden case whose Program is known to differ from eager (xfail)


def _eager_params():
    return [pytest.param(n, marks=pytest.mark.xfail(reason=_KNOWN_BUGS[n], strict=False)) if n in _KNOWN_BUGS
            else n for n in NAMES]


@pytest.mark.parametrize("name", _eager_params())
def test_program_matches_eager(name):
    """Each golden Program (same specs, dynamic dims included) computes what the function computes eagerly."""
    case = CASES[name]
    static = to_static(case["fn"], input_spec=[a for a in case["args"] if isinstance(a, InputSpec)])
    for seed in (0, 1):
        values = [_concrete(a, np.random.default_rng(seed)) for a in case["args"]]
        fresh = lambda: [rt.tensor(v.copy()) if isinstance(v, np.ndarray) else v for v in values]  # noqa: E731
        want = _leaves(case["fn"](*fresh()))
        got = _leaves(static(*fresh()))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert (g.shape, g.dtype) == (w.shape, w.dtype), \
                f"static {g.dtype}{list(g.shape)} vs eager {w.dtype}{list(w.shape)}"
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert static.cache_size == 1


@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip(name, tmp_path):
    """load(save(f)) runs the same Program (identical text) with the same outputs, for every golden case."""
    import transpiler
    case = CASES[name]
    if not all(isinstance(a, InputSpec) for a in case["args"]):
        pytest.skip("Python arguments are baked into the Program; covered by the Program text test")
    static = to_static(case["fn"], input_spec=list(case["args"]))
    program = static.get_program(*case["args"])
    transpiler.save(static, tmp_path / name, input_spec=list(case["args"]))
    loaded = transpiler.load(tmp_path / name)
    assert str(loaded.program) == str(program)
    values = [_concrete(a, np.random.default_rng(3)) for a in case["args"]]
    got = _leaves(loaded(*[rt.tensor(v) for v in values]))
    want = _leaves(static(*[rt.tensor(v) for v in values]))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
