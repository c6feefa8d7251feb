"""The IR value is data; the traced value (runtime.tracer.Tracer) is what user code holds; shape rules take types.

A Program's Variables carry a name, a type and a block, no operators: what a
traced value does in user code (operators, bool(), iteration, .item()) belongs to
the Tracer a trace makes. Shape rules see Specs (types), never Variables, so the
same rule runs on traced, eager and loaded values. Each thread has one trace
context whose frames are dropped when their scope ends, however it ends.
"""
import ast
import pathlib
import threading

import numpy as np
import pytest

import runtime as rt
from runtime import array_methods, tracing
from runtime.ir import Spec, Variable
from runtime.ops.registry import get_op
from runtime.serialization import program_from_json
from runtime.tracer import Tracer
from transpiler import to_static

ROOT = pathlib.Path(__file__).resolve().parents[2]
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_ir_imports_no_tracing_code():
    tree = ast.parse((ROOT / "runtime" / "ir.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert imported <= {"keyword", "re", "typing", "numpy", ".shape_text", ".naming"}, imported


def test_variable_has_no_operators_or_array_methods():
    names = set(array_methods.OPERATORS) | {
        "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__bool__", "__iter__",
        "__len__", "__array__", "__index__", "__int__", "__float__", "__round__", "__array_ufunc__",
        "__array_function__"}
    defined = {name for cls in Variable.__mro__ if cls is not object for name in vars(cls)}
    assert not names & defined, names & defined
    for name in ("item", "shape", "sum", "reshape", "astype", "numpy", "tolist", "backward", "length"):
        assert not hasattr(Variable, name), name
    assert not issubclass(Variable, array_methods.ArrayMethods)


def test_traced_values_are_tracers_and_stand_for_tensors():
    seen = []

    def f(x):
        y = x * 2.0 + 1.0
        seen.extend([x, y])
        return y

    program, inputs, out = tracing.trace(f, [rt.InputSpec([2, 3], "float32")])
    assert all(type(v) is Tracer for v in seen + inputs + [out])
    assert all(type(v) is Variable for v in program.all_vars())
    assert isinstance(out, rt.Tensor) and type(out) is not rt.Tensor
    assert seen[0] is inputs[0] and seen[0].value is program.inputs[0] and out.value is program.outputs[0]


def test_a_tracer_wraps_its_variable_and_is_not_one():
    """The tracer wraps an IR value (issue 26 §2), as JAX's tracers do: it is not a Variable, the Program
    holds the Variable, and one Variable has one Tracer while its trace runs (`a is b` is the values')."""
    assert not issubclass(Tracer, Variable)
    seen = []

    def f(x):
        y = x + 1.0
        seen.append((y, tracing.tracer_of(y.value)))
        y.weak = False                      # written through to the Variable the Program holds
        return y

    program, (x,), out = tracing.trace(f, [rt.InputSpec([2], "float32")])
    (y, again), = seen
    assert y is again is out and not isinstance(y, Variable)
    assert out.static_shape == (2,) and out.dtype == np.float32 and out.name == program.outputs[0].name
    assert repr(x) == "Tracer(x0: float32[2])"


def test_a_loaded_program_holds_plain_variables():
    program, _, _ = tracing.trace(lambda x: rt.tanh(x) * 3.0, [rt.InputSpec([2, 3], "float32")])
    loaded = program_from_json(program.to_json())
    assert all(type(v) is Variable for v in loaded.all_vars())
    x = loaded.inputs[0]
    with pytest.raises(TypeError):
        x * 2.0
    assert x == x and x != loaded.outputs[0]            # identity: a value of a graph, not an elementwise op
    assert len({x, x, loaded.outputs[0]}) == 2
    assert loaded.clone().inputs[0].__class__ is Variable and program.clone().inputs[0].__class__ is Variable


def test_shape_rules_take_types(monkeypatch):
    matmul = get_op("matmul")
    seen = []
    rule = matmul.infer

    def watching(*inputs, **attrs):
        seen.extend(inputs)
        return rule(*inputs, **attrs)

    monkeypatch.setattr(matmul, "infer", watching)
    tracing.trace(lambda a, b: a @ b, [rt.InputSpec([2, 3], "float32"), rt.InputSpec([3, 4], "float32")])
    assert [type(t) for t in seen] == [Spec, Spec]
    assert seen[0] == Spec((2, 3), np.dtype("float32"))
    seen.clear()
    with pytest.raises(ValueError, match="matmul"):         # the eager error names the rule's reason, from types
        rt.tensor(X) @ rt.tensor(X)
    assert [type(t) for t in seen] == [Spec, Spec]


def test_a_traced_dim_of_the_reshaped_value_cancels_by_position():
    def f(x, y):
        return x.reshape(x.shape[0], -1), x.reshape(y.shape[0], -1)

    program, _, (own, other) = tracing.trace(
        f, [rt.InputSpec([None, 2, 3], "float32"), rt.InputSpec([None, 2, 3], "float32")])
    assert own.static_shape == (-1, 6)
    assert other.static_shape == (-1, -1)       # y's batch may differ from x's: nothing cancels


def test_frames_are_dropped_however_their_scope_ends():
    outermost = tracing.current_frame()
    with pytest.raises(KeyError):
        with tracing.frame(catching=(lambda: (KeyError,),)):
            with tracing.python_numbers():
                assert tracing.current_frame().python_numbers
                raise KeyError("x")
    assert tracing.current_frame() is outermost


def test_each_thread_has_its_own_trace_context():
    inside, other = threading.Event(), {}

    def worker():
        inside.wait()
        other["frame"] = tracing.current_frame()
        other["block"] = tracing.current_block()

    thread = threading.Thread(target=worker)
    thread.start()

    def f(x):
        with tracing.python_numbers():
            inside.set()
            thread.join()
        return x + 1

    tracing.trace(f, [rt.InputSpec([2], "float32")])
    assert other["frame"].python_numbers is False and other["block"] is None


@to_static
def _raises_in_a_try(x):
    try:
        raise KeyError("k")
    except KeyError:
        pass
    return x + 1


def test_a_converted_try_leaves_no_frame_behind():
    outermost = tracing.current_frame()
    np.testing.assert_allclose(_raises_in_a_try(rt.tensor(X)).numpy(), X + 1)
    assert tracing.current_frame() is outermost


def test_trace_state_lives_in_the_one_trace_context():
    """No module keeps per-thread state of its own (grad mode aside, which eager code uses too), and the
    transpiler's services are installed through `tracing.install`, never assigned to module attributes."""
    own_locals, hooks = [], []
    for path in sorted((ROOT / "runtime").rglob("*.py")) + sorted((ROOT / "transpiler").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "local" and getattr(node.value, "id", None) == "threading":
                own_locals.append(rel)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr in (
                    "call_converter", "place_reader") for t in node.targets):
                hooks.append(rel)
    assert sorted(set(own_locals)) == ["runtime/autodiff/tape.py", "runtime/trace_context.py"]
    assert hooks == []


def test_install_names_only_the_known_services():
    with pytest.raises(TypeError, match="no trace service"):
        tracing.install(converter=lambda fn: fn)


def _values_of(program):
    """Every value a Program holds: its inputs and outputs, every value `all_vars` walks, each block's params,
    closure params and results, and every op's inputs and outputs (literals left out)."""
    out = list(program.inputs) + list(program.outputs) + list(program.all_vars())
    for block in program.blocks:
        out += list(block.params) + list(block.closure) + list(block.results)
        for op in block.ops:
            out += [x for x in op.inputs if not (x is None or isinstance(x, (bool, int, float, complex)))]
            out += list(op.outputs)
    return out


from tests.conversion.corpus import CASES  # noqa: E402
from tests.conversion.oracle import inputs as oracle_inputs  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_a_traced_corpus_program_holds_plain_variables_only(case):
    """The recording door unwraps: whatever the function does (branches, loops, tensor arrays, scans,
    writes), the Program it traces holds `ir.Variable`s, never the Tracers its code held."""
    program = to_static(case["fn"], passes=[]).get_program(
        *[rt.tensor(a) for a in oracle_inputs(case, 0)], *case["scalars"])
    bad = [v for v in _values_of(program) if type(v) is not Variable]
    assert not bad, bad[:3]


def test_gradient_programs_hold_plain_variables_only():
    """Gradients replay and build blocks (a while's forward-with-tape and reverse loop, a cond's branch
    VJPs, a scan's two scans): those Programs hold Variables only too, and compute what eager autodiff does."""
    def loss_of(x):
        def loss(w):
            h = x
            i = 0
            while rt.sum(h) < 100.0 and i < 5:
                h = rt.tanh(h @ w) + 1.0
                i += 1
            h = rt.cond(rt.mean(h) > 0, lambda: h * 2.0, lambda: -h)
            carry, ys = rt.scan(lambda c, r: (c * r, c + r), h, rt.ones((3, 2, 3)))
            return rt.sum(carry) + rt.sum(ys)
        return loss

    def f(x, w):
        return rt.grad(loss_of(x))(w)

    program, _, grad = tracing.trace(f, [rt.InputSpec([2, 3], "float32"), rt.InputSpec([3, 3], "float32")])
    assert {"while", "cond", "scan"} <= {op.type for op in program.ops()}
    bad = [v for v in _values_of(program) if type(v) is not Variable]
    assert not bad, bad[:3]
    x = np.linspace(-0.3, 0.4, 6, dtype=np.float32).reshape(2, 3)
    w = np.eye(3, dtype=np.float32) + 0.1
    (g,) = rt.Executor().run(program, {"x0": rt.tensor(x), "x1": rt.tensor(w)})
    eager = rt.grad(loss_of(rt.tensor(x)))(rt.tensor(w))
    np.testing.assert_allclose(g.numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
