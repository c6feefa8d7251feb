"""fast_math (runtime/native/fast_math.py): opt-in; float32 exp and tanh within fast_math.ULPS of the
correctly rounded result (float64 NumPy, rounded), IEEE at the special values; everything else exact."""
import re

import numpy as np
import pytest

import runtime as rt
from runtime import native
from runtime.native import elementwise, fast_math
from runtime.native.numpy_loops import same_bits

needs_llvm = pytest.mark.skipif(not native.available(), reason=f"native tier off: {native.why_unavailable()}")
pytestmark = pytest.mark.usefixtures("compile_at_once")    # regions compile as soon as a plan is built
F32 = np.finfo(np.float32)


@pytest.fixture(autouse=True)
def _compile_at_once(monkeypatch):
    monkeypatch.setenv(native.tiering.ENV, "0")


def _values():
    """Every 4099th float32 bit pattern (all signs and exponents), a dense sweep where the functions
    bend, and the edges: ±0, ±inf, NaN, subnormals, extremes, the overflow and underflow thresholds."""
    patterns = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    sweep = np.linspace(-30, 30, 200_001, dtype=np.float32)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, F32.tiny, -F32.tiny, F32.tiny / 8, F32.max, F32.min,
                      F32.eps, 1e-30, -1e-30, 0.625, -0.625, 0.62499994, 9.0, -9.0, 44.0, 88.72283, 88.72284,
                      88.7, 89.0, -87.33654, -87.4, -103.97, -103.98, -104.0, -200.0, 200.0], np.float32)
    return np.concatenate([edges, sweep, patterns])


def _ulps(a, b):
    """|a - b| in float32 units in the last place (ordered bit patterns; +0 and -0 one apart)."""
    def ordered(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF) - 1, i)
    return np.abs(ordered(a) - ordered(b))


def _run(fn, x, fast):
    program, _, _ = rt.trace(lambda v: fn(v * 1.0), [rt.InputSpec([-1], "float32", name="x")])
    plan = rt.Executor(native=True, fast_math=fast).compile(program)
    native.wait()
    assert [why for _, why in plan.native_regions] == ["native"]
    with np.errstate(all="ignore"):
        return plan.run({"x": x})[0].numpy()


@needs_llvm
@pytest.mark.parametrize("name", sorted(fast_math.APPROXIMATED))
def test_within_the_ulp_bound_of_the_correctly_rounded_result(name):
    x = _values()
    got = _run(getattr(rt, name), x, True)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x.astype(np.float64)).astype(np.float32)     # correctly rounded (float64 first)
        assert not same_bits(got, getattr(np, name)(x))                        # it is not NumPy's loop
    assert np.array_equal(np.isnan(got), np.isnan(want))
    normal = ~np.isnan(want) & ((np.abs(want) >= F32.tiny) | (want == 0))
    assert _ulps(got[normal], want[normal]).max() <= fast_math.ULPS
    # infinities, signed zeros and exact ones are IEEE's
    special = np.isinf(want) | (want == 0) | (np.abs(want) == 1)
    assert same_bits(got[special & (np.abs(x) > 1)], want[special & (np.abs(x) > 1)])
    assert same_bits(got[x == 0], want[x == 0])
    # a subnormal result may be flushed to zero, else is close
    sub = (np.abs(want) < F32.tiny) & (want != 0)
    assert np.all((got[sub] == 0) | (np.abs(got[sub] - want[sub]) <= 4 * F32.smallest_subnormal))


@needs_llvm
def test_a_sigmoid_chain_is_close_and_a_chain_without_exp_or_tanh_keeps_numpys_bits():
    x = _values()
    sigmoid = lambda v: 1.0 / (1.0 + rt.exp(-v))          # noqa: E731
    got, want = _run(sigmoid, x, True), _run(sigmoid, x, False)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.allclose(got[ok], want[ok], rtol=4 * F32.eps, atol=F32.tiny)
    arithmetic = lambda v: (v * 3.0 + 1.0) / (v - 2.0)     # noqa: E731
    assert same_bits(_run(arithmetic, x, True), _run(arithmetic, x, False))


def test_the_setting_is_opt_in_and_checked(monkeypatch):
    monkeypatch.delenv(native.FAST_MATH_ENV, raising=False)
    monkeypatch.delenv(native.ENV, raising=False)
    assert rt.Executor().fast_math is False
    monkeypatch.setenv(native.FAST_MATH_ENV, "1")
    ex = rt.Executor()
    assert ex.fast_math is ex.native and ex.native is native.available()
    assert rt.Executor(fast_math=False).fast_math is False
    with pytest.raises(ValueError, match="fast_math=True needs the native tier"):
        rt.Executor(native=False, fast_math=True)
    with pytest.raises(ValueError, match="fast_math must be True, False or None"):
        rt.Executor(fast_math="yes")


@needs_llvm
def test_fast_math_plans_are_cached_apart_from_exact_ones():
    program, _, _ = rt.trace(lambda v: rt.tanh(v * 2.0), [rt.InputSpec([64], "float32", name="x")])
    fast, exact = rt.Executor(fast_math=True).compile(program), rt.Executor(native=True).compile(program)
    assert fast is not exact
    native.wait()
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    assert same_bits(exact.run({"x": x})[0].numpy(), np.tanh(x * np.float32(2.0)))


def _vector_body(ir_text):
    body = ir_text[ir_text.index("vector.body:"):]
    return body[:body.index("br i1")]


@needs_llvm
def test_the_approximations_vectorise_with_fused_multiply_adds_eight_vectors_an_iteration():
    f32 = np.dtype(np.float32)
    gelu = [("multiply", {"in": 0}, 0.5), ("multiply", {"in": 0}, {"in": 0}), ("multiply", {"step": 1}, 0.7),
            ("tanh", {"step": 2}), ("add", {"step": 3}, 1.0), ("multiply", {"step": 0}, {"step": 4})]
    chain = ([(f32, (-1,))], (f32, (-1,)), gelu)
    body = _vector_body(elementwise.optimized_ir(*chain, fast_math=True))
    # every lane at once: tanh's one division a vector, fast_math.INTERLEAVE of them an iteration
    assert len(re.findall(r"= fdiv( \w+)* <16 x float>", body)) == fast_math.INTERLEAVE == 8
    assert "@llvm.fma.v" in body and "fptosi" not in body and "call float" not in body
    exact = elementwise.optimized_ir(*chain)
    assert "llvm.fma" not in exact and "interleave" not in exact        # the exact chain is as it was


@needs_llvm
def test_tanh_takes_thirteen_floating_point_operations_a_vector():
    """W5's GELU is mostly tanh: 2|x| is never formed (the reduction's constants doubled and halved) and
    e^r - 1 is of degree 6, so a vector of tanh is 13 floating-point operations (it was 15)."""
    f32 = np.dtype(np.float32)
    body = _vector_body(elementwise.optimized_ir([(f32, (-1,))], (f32, (-1,)), [("tanh", {"in": 0})],
                                                 fast_math=True))
    ops = re.findall(r"= (fadd|fsub|fmul|fdiv)( \w+)* <|@llvm\.fma\.v", body)
    assert len(ops) == 13 * fast_math.INTERLEAVE


@needs_llvm
def test_only_tanhs_own_division_may_be_an_estimate():
    """tanh's division may be the CPU's reciprocal estimate with a Newton step (AVX-512 only); the
    chain's own division (a sigmoid's 1 / (1 + e^-x)) stays an IEEE division, as everywhere else."""
    f32 = np.dtype(np.float32)
    sigmoid = [("negative", {"in": 0}), ("exp", {"step": 0}), ("add", 1.0, {"step": 1}),
               ("divide", 1.0, {"step": 2})]
    body = _vector_body(elementwise.optimized_ir([(f32, (-1,))], (f32, (-1,)), sigmoid, fast_math=True))
    divisions = re.findall(r"= fdiv( \w+)* <", body)
    assert divisions and all(flags == "" for flags in divisions)
    tanh = _vector_body(elementwise.optimized_ir([(f32, (-1,))], (f32, (-1,)), [("tanh", {"in": 0})],
                                                 fast_math=True))
    assert (" arcp " in tanh) == bool(fast_math._division_flags())
