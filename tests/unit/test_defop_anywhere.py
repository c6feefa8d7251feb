"""An op is its OpDef: one defined here, outside `runtime/`, works in every stage with no other edit.

`softsign_scaled` declares what the stages ask: a kernel and shape rule, the
properties the passes read (`safe_when_static`: licm may hoist it; `fresh`: its
result is a new array) and a NumPy fast path for the plan (`emit`). Eager calls,
tracing, every default pass, the compiled plan, JSON save/load and
`export_python` then handle it like a built-in op, and its gradient rule (a `vjp` facet)
passes the registry-wide finite-difference check. Loading still refuses op
types nobody registered (checked at the end).
"""
import importlib.util
import json

import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime.ops.dispatch import apply
from runtime.ops.registry import REGISTRY, defop, facet
from runtime.ops.rules import Spec, dtype_of, shape_of
from runtime.passes import DEFAULT_PIPELINE, PASSES
from runtime.serialization import ProgramFormatError

NAME = "softsign_scaled"


def _emit(gen, op):
    """The plan's form on NumPy: inline arithmetic over bound ufuncs (no kernel call)."""
    if not gen.numpy:
        return None
    x = gen.value(op.inputs[0])
    return f"{gen.bound('divide')}({x}, 1 + {gen.bound('absolute')}({x})) * {gen.attr(op.attrs['scale'])}"


def _example():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    return [{"fn": lambda x: softsign(x, 2.0), "args": (x,), "oracle": lambda x: _oracle(x, 2.0)}]


def _infer(x, scale):
    if dtype_of(x).kind != "f":
        raise TypeError(f"{NAME}: expected a floating array, got {dtype_of(x)}")
    return Spec(shape_of(x), dtype_of(x))


if NAME not in REGISTRY:         # pytest may import this module twice (a rerun); the registry is per process
    @defop(NAME, infer=_infer, elementwise=True, fresh=True, safe_when_static=True, emit=_emit, example=_example)
    def _softsign_scaled(xp, x, scale):
        return x / (1 + xp.abs(x)) * xp.asarray(scale, dtype=x.dtype)

    @facet(NAME, "vjp")           # its gradient rule, registered beside it like every facet
    def _softsign_scaled_vjp(g, inputs, outputs, scale):
        (x,) = inputs
        return (g * (scale / (1 + rt.abs(x)) ** 2),)
SOFTSIGN = REGISTRY[NAME]


def softsign(x, scale=1.0):
    return apply(SOFTSIGN, (x,), {"scale": float(scale)})


def _oracle(x, scale):
    return (x / (1 + np.abs(x)) * np.float32(scale)).astype(x.dtype)


def model(x):
    total = x * 0.0
    n = rt.zeros((), "int32")
    while n < 3:
        total = total + softsign(x, 2.0) + softsign(x, 2.0)     # invariant (licm), twice (cse)
        softsign(x, 0.5)                                        # read by nothing (dce)
        n = n + 1
    return total


def _model_oracle(x):
    return 3 * (2 * _oracle(x, 2.0))


SPEC = [rt.InputSpec([3, 4], "float32", name="x")]
X = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)


def _types(program):
    return [op.type for op in program.ops()]


def test_eager():
    out = softsign(rt.tensor(X), 2.0)
    np.testing.assert_allclose(out.numpy(), _oracle(X, 2.0), rtol=1e-6)


def test_its_shape_rule_checks_traced_inputs():
    with pytest.raises(TypeError, match="expected a floating array"):
        rt.trace(lambda x: softsign(x, 2.0), [rt.InputSpec([3], "int32")])


def test_traced_and_compiled_plan_uses_its_emit():
    program = rt.trace(lambda x: softsign(x, 2.0), SPEC)[0]
    assert _types(program) == [NAME]
    plan = rt.Executor(passes=[]).compile(program)
    assert "xp_absolute" in plan.source and "k_" not in plan.source, plan.source
    np.testing.assert_allclose(plan.run({"x": X})[0].numpy(), _oracle(X, 2.0), rtol=1e-6)


def test_every_default_pass_handles_it():
    static = transpiler.to_static(model)
    program = static.get_program(*SPEC)
    assert _types(program).count(NAME) == 3 and "while" in _types(program)
    for name in DEFAULT_PIPELINE:       # each pass alone, then the whole pipeline
        out = rt.Executor(passes=[name]).run(program, {"x": X})[0].numpy()
        np.testing.assert_allclose(out, _model_oracle(X), rtol=1e-6, err_msg=name)
        rt.verify(PASSES[name](program.clone()))
    optimized = static.get_program(*SPEC, optimized=True)
    top = [op.type for op in optimized.global_block.ops]
    assert _types(optimized).count(NAME) == 1 and NAME in top, optimized     # hoisted, merged, dead one gone
    np.testing.assert_allclose(static(rt.tensor(X)).numpy(), _model_oracle(X), rtol=1e-6)


def test_json_save_and_load(tmp_path):
    static = transpiler.to_static(model)
    transpiler.save(static, tmp_path / "m", input_spec=SPEC)
    loaded = transpiler.load(tmp_path / "m")
    np.testing.assert_allclose(loaded(X).numpy(), _model_oracle(X), rtol=1e-6)


def test_export_python(tmp_path):
    py_path, _ = transpiler.export_python(transpiler.to_static(model), tmp_path / "exported", input_spec=SPEC)
    spec = importlib.util.spec_from_file_location("exported_softsign", py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_allclose(np.asarray(module.run(x=X)), _model_oracle(X), rtol=1e-6)


def test_loading_refuses_an_op_nobody_registered():
    program = rt.trace(lambda x: softsign(x, 2.0), SPEC)[0]
    data = json.loads(program.to_json())
    data["blocks"][0]["ops"][0]["type"] = "softsign_unregistered"
    with pytest.raises(ProgramFormatError, match="unknown op type 'softsign_unregistered'"):
        rt.Program.from_json(json.dumps(data))
