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
polynomial, no select) over the whole range; its e^r - 1 is a degree-6 polynomial fitted for it, and
2|x| is never formed (the reduction's constants doubled and halved instead: the same bits); |x| is
clamped to 10 (tanh is 1.0 in float32 from 9.01 on) so e^{2|x|} is finite and 2^n one normal factor;
x's sign copied on; its division may be a reciprocal estimate refined (`ESTIMATE_FLAGS`). Measured over
every positive float32 below 10 (tanh) and the tests' sweep: exp within 1 ulp, tanh within 3 (2 but
for 7 inputs). NaN flows through
(no select for it), infinities by the clamps; no branches. LLVM vectorises the chain's loop with them
(`FUNCTION_ATTRIBUTES`, `INTERLEAVE`).
"""
import numpy as np

from .llvm import engine

APPROXIMATED = {"exp", "tanh"}      # float32 ufuncs fast_math computes inline
# the documented bound. Measured over every float32 in [0, 10]: exp 1; tanh 2, and 3 on 7 of its 1.08e9
# inputs (results just below a power of two) since its e^r - 1 is of degree 6, not 7: the contract was 2,
# loosened to 3 for the one FMA less (3-6% faster on W5)
ULPS = 3
# a function holding an approximation is vectorised 16 floats wide where the CPU has AVX-512 (LLVM
# prefers 8 by default there): measured twice as fast for these arithmetic-dense loops (elementwise.py
# also gives it to a chain calling a NumPy loop, for the inline runs around it)
FUNCTION_ATTRIBUTES = '"prefer-vector-width"="512"'
# tanh's one division, where the CPU has AVX-512: `arcp` (with `ninf`: its operands are finite, and
# `contract`) lets LLVM compute it as AVX-512's 14-bit reciprocal estimate refined by a Newton step on
# the quotient (vrcp14ps, a multiply, two FMAs) instead of the divider, which a 16-float vector holds
# for ~10 cycles: measured 2-5% faster on W5, and no other ulps over every float32 below 10. (Without
# `ninf` LLVM keeps the division; without AVX-512 the estimate has 12 bits: kept a division there.)
ESTIMATE_FLAGS = ("arcp", "ninf", "contract")
# independent vectors a loop iteration computes (LLVM's vectoriser picks 1 for so long a body): each
# approximation is a long chain of dependent operations, and with several in flight the vector units stay
# busy instead of waiting on the chain (measured on W5's GELU kernel: 4 vectors 1.4x faster than 1,
# 8 another 5-10%)
INTERLEAVE = 8

_LOG2E = 1.44269504088896341
_ROUNDER = 12582912.0               # 1.5·2^23: v + it rounds v to an integer held in the low mantissa bits
_C1, _C2 = 0.693359375, -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
             5.0000001201e-1)
_EXP_HI, _EXP_LO = 88.72283935546875, -103.972084045410     # above: inf; below: 0
_HOST = {}                          # whether the host has AVX-512, asked once
_TANH_ONE = 10.0                    # |x| clamped to it: tanh(x) rounds to ±1 from 9.01 on
# tanh's e^{2|x|} takes ln2 in one part: r is off by n·1.9e-9, and that error reaches tanh scaled by about
# 2^(1-n): within the bound over every float32
_LN2 = 0.693147182464599609375
# tanh's e^r - 1 = r + r²·P(r), |r| <= ln2/2: degree 6, fitted to e^r - 1's relative error (iteratively
# reweighted least squares on Chebyshev nodes; Cephes' degree-7 coefficients cut to 6 measured 7 ulps)
_TANH_POLY = (1.3858170e-3, 8.3666779e-3, 4.1667596e-2, 1.6666542e-1, 4.9999997e-1)


def approximated(name, loop_in, result):
    """Whether fast_math computes this step inline."""
    f32 = np.dtype(np.float32)
    return name in APPROXIMATED and list(loop_in) == [f32] and result == f32


def emit(ir, b, module, name, x):
    """The IR value of name(x) for one float32 value x."""
    return _exp(ir, b, module, x) if name == "exp" else _tanh(ir, b, module, x)


def _division_flags():
    """ESTIMATE_FLAGS where the host has AVX-512 (llvmlite's host features), else none: IEEE division."""
    if "avx512" not in _HOST:
        _HOST["avx512"] = bool(engine() is not None and engine().llvm.get_host_cpu_features().get("avx512f"))
    return list(ESTIMATE_FLAGS) if _HOST["avx512"] else []


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


def _exp_parts(ir, b, module, x):
    """(e^r - 1, n as i32) with x = n·ln2 + r, |r| <= ln2/2, for x of at most ±128·ln2 (or NaN)."""
    rounder = _const(ir, _ROUNDER)
    t = _fma(ir, b, module, x, _const(ir, _LOG2E), rounder)        # round(x·log2e) + 1.5·2^23, exactly
    n = b.fsub(t, rounder)
    r = x
    for part in (_C1, _C2):
        r = _fma(ir, b, module, n, _const(ir, -part), r)
    em1 = _fma(ir, b, module, _horner(ir, b, module, _EXP_POLY, r), b.fmul(r, r), r)
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
    # 2a = n·ln2 + r with the constants doubled and halved instead of 2a formed (the same t, n; h = r/2
    # exactly), e^r - 1 = r + r²·P(r) as 2·(h + h²·2P): P's coefficients scaled by powers of two (exact)
    rounder = _const(ir, _ROUNDER)
    t = _fma(ir, b, module, a, _const(ir, 2 * _LOG2E), rounder)
    h = _fma(ir, b, module, b.fsub(t, rounder), _const(ir, -_LN2 / 2), a)
    top = len(_TANH_POLY) - 1
    twice_p = _horner(ir, b, module, [c * 2.0 ** (top - j + 1) for j, c in enumerate(_TANH_POLY)], h)
    half_em1 = _fma(ir, b, module, twice_p, b.fmul(h, h), h)                 # (e^r - 1) / 2
    k = b.sub(b.bitcast(t, ir.IntType(32)), b.bitcast(rounder, ir.IntType(32)))
    twice = _two_to(ir, b, b.add(k, _int(ir, 1)))                            # 2^(n+1)
    scale_m1 = _fma(ir, b, module, twice, _const(ir, 0.5), _const(ir, -1.0))  # 2^n - 1, exact: no cancellation
    em = _fma(ir, b, module, half_em1, twice, scale_m1)                      # e^{2a} - 1 = 2^n·(e^r - 1) + 2^n - 1
    y = b.fdiv(em, b.fadd(em, _const(ir, 2.0)), flags=_division_flags())   # tanh(a) = (e^{2a} - 1) / (e^{2a} + 1)
    return b.call(_intrinsic(ir, module, "llvm.copysign"), [y, x])     # odd: x's sign (tanh(-0) = -0)
