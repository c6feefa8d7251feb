"""fast_math (opt-in): float32 `exp` and `tanh` inline as branch-free approximations, so a chain of them
is one vectorised loop instead of a call of NumPy's loop per block.

The contract (docs/semantics.md, "fast_math"): each approximated function is within ULPS units in the
last place of the correctly rounded result for every float32 input whose result is normal; results
that would be subnormal may be flushed to zero (exp below about -87.3); infinities, NaN and signed
zeros are as IEEE says (exp(-inf) = 0, exp(inf) = inf, tanh(±inf) = ±1, tanh(-0) = -0, NaN in NaN
out). Arithmetic (+ − × ÷) of the chain stays exact IEEE, one rounding an operation: only the
approximations' own operations fuse (`llvm.fma`); other ufuncs stay NumPy's.
tests/unit/test_native_fast_math.py checks the bound against float64 NumPy over every special value
and a dense sweep of each function's range.

exp is Cephes' `expf` (S. L. Moshier), arranged for SIMD: Cody-Waite reduction x = n·ln2 + r (ln2
split in two so n·C1 is exact), n rounded by adding 1.5·2^23 (the sum's low bits are n as an integer,
so 2^n is an integer add and shift, no float-to-int conversion), e^r - 1 by a degree-7 polynomial in r
with fused multiply-adds, then 2^n applied in two halves (so n up to 128 and subnormal results need no
special case). tanh(|x|) is em / (em + 2) with em = e^{2|x|} - 1 from the same reduction, as
2^n·(e^r - 1) + (2^n - 1): exact 2^n - 1, so no cancellation for small |x| and one formula (no second
polynomial, no select) over the whole range; |x| is clamped to 10 (tanh is 1.0 in float32 from 9.01
on) so e^{2|x|} is finite and 2^n one normal factor; x's sign copied on. Measured over every positive
float32 below 10 (tanh) and the tests' sweep: exp within 1 ulp, tanh within 2. NaN flows through
(no select for it), infinities by the clamps; no branches. LLVM vectorises the chain's loop with them
(`FUNCTION_ATTRIBUTES`, `INTERLEAVE`).
"""
import numpy as np

APPROXIMATED = {"exp", "tanh"}      # float32 ufuncs fast_math computes inline
ULPS = 2                            # the documented bound (measured: exp 1, tanh 2: every float32 below 10)
# a function holding an approximation is vectorised 16 floats wide where the CPU has AVX-512 (LLVM
# prefers 8 by default there): measured twice as fast for these arithmetic-dense loops. (tanh's division
# stays a division: the reciprocal estimate with a Newton step measured no faster, and less accurate.)
FUNCTION_ATTRIBUTES = '"prefer-vector-width"="512"'
# independent vectors a loop iteration computes (LLVM's vectoriser picks 1 for so long a body): each
# approximation is a long chain of dependent operations, and with four in flight the vector units stay
# busy instead of waiting on the chain (measured 1.4x on W5's GELU kernel)
INTERLEAVE = 4

_LOG2E = 1.44269504088896341
_ROUNDER = 12582912.0               # 1.5·2^23: v + it rounds v to an integer held in the low mantissa bits
_C1, _C2 = 0.693359375, -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
             5.0000001201e-1)
_EXP_HI, _EXP_LO = 88.72283935546875, -103.972084045410     # above: inf; below: 0
_TANH_ONE = 10.0
# tanh's e^{2|x|} takes ln2 in one part: r is off by n·1.9e-9, and that error reaches tanh scaled by about
# 2^(1-n): still within 2 ulps over every float32 (a degree-6 polynomial instead of 7 measured 3)
_LN2 = 0.693147182464599609375                    # |x| from which tanh(x) rounds to ±1 (from 9.01 on)


def approximated(name, loop_in, result):
    """Whether fast_math computes this step inline."""
    f32 = np.dtype(np.float32)
    return name in APPROXIMATED and list(loop_in) == [f32] and result == f32


def emit(ir, b, module, name, x):
    """The IR value of name(x) for one float32 value x."""
    return _exp(ir, b, module, x) if name == "exp" else _tanh(ir, b, module, x)


def _const(ir, v):
    return ir.Constant(ir.FloatType(), float(np.float32(v)))


def _int(ir, v):
    return ir.Constant(ir.IntType(32), int(v))


def _intrinsic(ir, module, name):
    f32 = ir.FloatType()
    try:
        return module.get_global(f"{name}.f32")
    except KeyError:
        arity = {"llvm.copysign": 2, "llvm.fma": 3}.get(name, 1)
        return module.declare_intrinsic(name, [f32], ir.FunctionType(f32, [f32] * arity))


def _fma(ir, b, module, x, y, z):
    """x·y + z rounded once (the approximations' own arithmetic only)."""
    return b.call(_intrinsic(ir, module, "llvm.fma"), [x, y, z])


def _horner(ir, b, module, coefficients, r):
    y = _const(ir, coefficients[0])
    for c in coefficients[1:]:
        y = _fma(ir, b, module, y, r, _const(ir, c))
    return y


def _at_most(ir, b, x, limit):
    """min(x, limit), NaN staying NaN (its bits flow through the integer steps harmlessly, the float ones
    make NaN again: no select for NaN needed)."""
    return b.select(b.fcmp_ordered(">", x, _const(ir, limit)), _const(ir, limit), x)


def _exp_parts(ir, b, module, x, poly=_EXP_POLY, ln2_parts=(_C1, _C2)):
    """(e^r - 1, n as i32) with x = n·ln2 + r, |r| <= ln2/2, for x of at most ±128·ln2 (or NaN)."""
    rounder = _const(ir, _ROUNDER)
    t = _fma(ir, b, module, x, _const(ir, _LOG2E), rounder)        # round(x·log2e) + 1.5·2^23, exactly
    n = b.fsub(t, rounder)
    r = x
    for part in ln2_parts:
        r = _fma(ir, b, module, n, _const(ir, -part), r)
    em1 = _fma(ir, b, module, _horner(ir, b, module, poly, r), b.fmul(r, r), r)
    k = b.sub(b.bitcast(t, ir.IntType(32)), b.bitcast(rounder, ir.IntType(32)))
    return em1, k


def _two_to(ir, b, k):
    """2^k for -126 <= k <= 127, from its bits."""
    return b.bitcast(b.shl(b.add(k, _int(ir, 127)), _int(ir, 23)), ir.FloatType())


def _exp(ir, b, module, x):
    # clamped so that n is a small integer (NaN stays NaN); the selects at the end decide
    xc = _at_most(ir, b, x, 88.8)
    xc = b.select(b.fcmp_ordered("<", xc, _const(ir, -104.0)), _const(ir, -104.0), xc)
    em1, k = _exp_parts(ir, b, module, xc)
    half = b.ashr(k, _int(ir, 1))
    s1, s2 = _two_to(ir, b, half), _two_to(ir, b, b.sub(k, half))     # 2^k as 2^half·2^(k-half): both normal
    y = b.fmul(_fma(ir, b, module, em1, s1, s1), s2)
    y = b.select(b.fcmp_ordered(">", x, _const(ir, _EXP_HI)), _const(ir, np.inf), y)
    return b.select(b.fcmp_ordered("<", x, _const(ir, _EXP_LO)), _const(ir, 0.0), y)


def _tanh(ir, b, module, x):
    a = _at_most(ir, b, b.call(_intrinsic(ir, module, "llvm.fabs"), [x]), _TANH_ONE)   # e^{2a} finite, n <= 29
    em1, k = _exp_parts(ir, b, module, b.fadd(a, a), _EXP_POLY, (_LN2,))
    scale = _two_to(ir, b, k)
    em = _fma(ir, b, module, em1, scale, b.fsub(scale, _const(ir, 1.0)))   # e^{2a} - 1: 2^n - 1 exact, no cancellation
    y = b.fdiv(em, b.fadd(em, _const(ir, 2.0)))                             # tanh(a) = (e^{2a} - 1) / (e^{2a} + 1)
    return b.call(_intrinsic(ir, module, "llvm.copysign"), [y, x])     # odd: x's sign (tanh(-0) = -0)
