"""Every script in examples/ runs (as a newcomer would run it) and prints what it promises."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run_example(name, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)     # a hang guard, not a speed test
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def check_mlp(out):
    lines = out.splitlines()
    assert lines[0] == "MLP 512 -> 256 -> 128 -> 2, batch 64, device cpu"
    assert "output shape: (64, 2)" in lines
    diff = re.search(r"^max \|eager - static\| = (\S+): outputs match$", out, re.M)
    assert diff and float(diff.group(1)) <= 1e-5
    for mode in ("eager ", "static"):
        timing = re.search(rf"^{mode}: +(\d+\.\d+) ms/call \(median of 20\)$", out, re.M)
        assert timing and 0 < float(timing.group(1)) < 1000, out
    assert lines[-1] == "traced signatures: 1"


def check_control_flow(out):
    for text in ("=== converted source (shrink_then_squash.code) ===", "def shrink_then_squash(x):",
                 "_jst.convert_while(__while_cond_0, __while_body_0", "_jst.convert_ifelse(x.mean() > 0",
                 "program shrink_then_squash(x: float32[?, 4]):", "= while(", "    cond block ", "    body block ",
                 "    true block ", "    false block ", "  return (y, "):
        assert text in out, text
    ops = re.search(r"^op types: (.*)$", out, re.M).group(1).split(", ")
    assert {"while", "cond", "tanh", "negative"} <= set(ops)
    runs = re.findall(r"^x = +(\S+) everywhere, batch (\d+): steps = +(\d+), y\[0, 0\] = (\S+) \(same as eager\)$",
                      out, re.M)
    assert runs == [("3.0", "2", "4", "+0.185333"), ("-0.1", "5", "0", "+0.100000"), ("40.0", "1", "7", "+0.302710")]
    assert out.rstrip().endswith("traced signatures: 1")


def check_layer_forward(out):
    for batch in (1, 7, 64):
        assert f"batch {batch:2d} -> output shape ({batch}, 3), rows sum to 1, same as eager" in out
    assert "\ncache_size 1\n" in out
    assert "program forward(x: float32[?, 16], fc1.weight: float32[32, 16] persistable" in out
    assert re.search(r"^  h: float32\[\?, 32\] = cond\(", out, re.M) and "= softmax(" in out


def check_deploy(out):
    saved = re.findall(r"^saved (\S+) \((\d+) bytes\)$", out, re.M)
    assert [name for name, _ in saved] == ["scorer.program.json", "scorer.params.npz"]
    assert all(int(size) > 0 for _, size in saved)
    for batch in (5, 2):
        assert f"loaded model, batch {batch}: output shape ({batch}, 4), same as the Layer" in out
    assert "fresh process inputs: InputSpec([None, 16], 'float32', name='x')" in out
    assert "fresh process (no import of this file): same outputs" in out
    exported = re.search(r"^exported scorer_np.py \+ scorer_np.npz: imports (.*); same outputs$", out, re.M)
    assert exported and "numpy" in exported.group(1).split(", ")
    assert not {"runtime", "transpiler"} & set(exported.group(1).split(", "))


def check_greedy_decoder(out):
    runs = re.findall(r"^batch (\d): (\d) steps, tokens (\[.*\]) \(same as eager\)$", out, re.M)
    assert [(b, s) for b, s, _ in runs] == [("1", "1"), ("4", "8"), ("3", "8")], out
    assert "\ncache_size 1\n" in out
    ops = re.search(r"^op types: (.*)$", out, re.M).group(1).split(", ")
    assert {"cond", "array_append", "array_stack", "argmax", "embedding"} <= set(ops)


def check_train_digits(out):
    assert out.startswith("digits: 1347 training and 450 test images of 8x8")
    losses = [float(v) for v in re.findall(r"^epoch +\d+ \((?:eager|static)\) *: loss (\S+),", out, re.M)]
    assert len(losses) == 4 and losses[-1] < losses[0], out
    timing = re.search(r"^time per epoch: eager (\S+) ms, static (\S+) ms \(.*\); training step traced 1 time\(s\)$",
                       out, re.M)
    assert timing and float(timing.group(1)) > 0 and float(timing.group(2)) > 0, out
    accuracy = float(re.search(r"^test accuracy: (\S+)$", out, re.M).group(1))
    assert accuracy >= 0.9, out                    # 4 epochs; the full 30 reach >= 0.97
    assert f"saved and reloaded with transpiler.save/load: test accuracy {accuracy:.4f} (same)" in out


CHECKS = {
    "train_digits.py": (check_train_digits, ["--epochs", "4"]),
    "greedy_decoder.py": (check_greedy_decoder, []),
    "deploy.py": (check_deploy, []),
    "mlp.py": (check_mlp, ["--calls", "20"]),
    "control_flow.py": (check_control_flow, []),
    "layer_forward.py": (check_layer_forward, []),
}


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example(name):
    if name == "train_digits.py":
        pytest.importorskip("sklearn")
    check, args = CHECKS[name]
    check(run_example(name, *args))
