"""`rt.verify` type-checks: each op's own shape/dtype rule must make the outputs the Program
declares (as the JSON loader checks a file), and a refusal names the op, where the user's
code made it, and the mismatch. Every corpus Program passes, before and after each pass."""
import numpy as np
import pytest

import runtime as rt
from runtime import passes
from transpiler import to_static

from tests.conversion.corpus import CASES
from tests.conversion.oracle import inputs as oracle_inputs


def _tanh_program():
    def f(x):
        y = rt.tanh(x)
        return y * 2
    program, _, _ = rt.trace(f, [rt.InputSpec([2, 3], "float32", "x")])
    tanh = next(op for op in program.ops() if op.type == "tanh")
    return program, tanh.outputs[0]


def test_verify_accepts_a_well_typed_program():
    program, _ = _tanh_program()
    assert rt.verify(program) is program


@pytest.mark.parametrize("shape, dtype, made", [
    ((2, 3), "int8", "int8[2, 3]"),             # wrong dtype
    ((7,), "float32", "float32[7]"),            # wrong rank
    ((2, 4), "float32", "float32[2, 4]"),       # wrong static dim
    ((7,), "int8", "int8[7]"),                  # the example: both
])
def test_verify_rejects_a_mistyped_op(shape, dtype, made):
    program, out = _tanh_program()
    out.static_shape, out.dtype = shape, np.dtype(dtype)
    with pytest.raises(rt.ProgramFormatError) as info:
        rt.verify(program)
    message = str(info.value)
    assert "'tanh'" in message                          # the op
    assert "test_verify.py:" in message                 # where the user's code made it
    assert f"declares output '{out.name}' as {made}; the op makes float32[2, 3]" in message


def test_verify_rejects_a_mistyped_loop_carry():
    def f(x):
        i = rt.asarray(np.int32(0))
        while i < 3:
            x = x * 2
            i = i + 1
        return x
    program = to_static(f, passes=[]).get_program(rt.tensor(np.ones(3, np.float32)))
    rt.verify(program)
    loop = next(op for op in program.ops() if op.type == "while")
    carry = next(v for v in loop.outputs if v.dtype == np.float32)
    carry.dtype = np.dtype("float64")
    with pytest.raises(rt.ProgramFormatError, match="'while'.*does not match"):
        rt.verify(program)


def test_verify_accepts_a_declared_type_more_or_less_precise_than_the_rule():
    """A dim the rule knows but the Program left unknown (-1), or the reverse (a pass merged
    two branches' dims), is a compatible refinement, as in the loader."""
    program, out = _tanh_program()
    out.static_shape = (-1, 3)
    rt.verify(program)
    program, out = _tanh_program()
    program.inputs[0].static_shape = (-1, 3)           # the rule now makes float32[?, 3]
    rt.verify(program)


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_corpus_programs_type_check_after_each_pass_alone(case):
    """Each registered pass run alone (not only in the default order) leaves a well-typed Program."""
    program = to_static(case["fn"], passes=[]).get_program(
        *[rt.tensor(a) for a in oracle_inputs(case, 0)], *case["scalars"])
    rt.verify(program)
    for name in passes.PASSES:
        try:
            rt.verify(passes.PASSES[name](program.clone()))
        except rt.ProgramFormatError as e:
            pytest.fail(f"after {name} alone: {e}")
