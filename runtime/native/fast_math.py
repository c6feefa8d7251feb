"""fast_math (opt-in): float32 `exp` and `tanh` inline as branch-free approximations, so a chain of them
is one vectorised loop instead of a call of NumPy's loop per block.

The contract (docs/semantics.md, "fast_math"): each approximated function is within ULPS units in the
last place of the correctly rounded result for every float32 input whose result is normal; results
that would be subnormal may be flushed to zero (exp below about -87.3); infinities, NaN and signed
zeros are as IEEE says (exp(-inf) = 0, exp(inf) = inf, tanh(±inf) = ±1, tanh(-0) = -0, NaN in NaN
out). Arithmetic (+ − × ÷) stays exact IEEE, one rounding an operation; other ufuncs stay NumPy's.
tests/unit/test_native_fast_math.py checks the bound against float64 NumPy over every special value
and a dense sweep of each function's range.

The code is Cephes' `expf` and `tanhf` (S. L. Moshier): exp by Cody-Waite reduction x = n·ln2 + r
(ln2 split in two so n·C1 is exact), a degree-7 polynomial in r, then 2^n applied in two halves (so n
up to 128 and subnormal results need no special case); tanh by an odd polynomial below |x| = 0.625
and 1 − 2/(e^{2|x|} + 1) above, x's sign copied on. Each is selects on values, no branches.
"""
import numpy as np

APPROXIMATED = {"exp", "tanh"}      # float32 ufuncs fast_math computes inline
ULPS = 2                            # the documented bound (measured: 1, over every 17th float32)
# a function holding an approximation is vectorised 16 floats wide where the CPU has AVX-512 (LLVM
# prefers 8 by default there): measured twice as fast for these arithmetic-dense loops
FUNCTION_ATTRIBUTES = '"prefer-vector-width"="512"'

_LOG2E = 1.44269504088896341
_C1, _C2 = 0.693359375, -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
             5.0000001201e-1)
_EXP_HI, _EXP_LO = 88.72283935546875, -103.972084045410     # above: inf; below: 0
_TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)


def approximated(name, loop_in, result):
    """Whether fast_math computes this step inline."""
    f32 = np.dtype(np.float32)
    return name in APPROXIMATED and list(loop_in) == [f32] and result == f32


def emit(ir, b, module, name, x):
    """The IR value of name(x) for one float32 value x."""
    return _exp(ir, b, module, x) if name == "exp" else _tanh(ir, b, module, x)


def _const(ir, v):
    return ir.Constant(ir.FloatType(), float(np.float32(v)))


def _intrinsic(ir, module, name):
    f32 = ir.FloatType()
    try:
        return module.get_global(f"{name}.f32")
    except KeyError:
        arity = 2 if name == "llvm.copysign" else 1
        return module.declare_intrinsic(name, [f32], ir.FunctionType(f32, [f32] * arity))


def _horner(ir, b, coefficients, r):
    y = _const(ir, coefficients[0])
    for c in coefficients[1:]:
        y = b.fadd(b.fmul(y, r), _const(ir, c))
    return y


def _exp(ir, b, module, x):
    i32 = ir.IntType(32)
    is_nan = b.fcmp_unordered("uno", x, x)
    # clamped (and NaN as 0) so that n is always a small integer; the selects at the end decide
    xc = b.select(b.fcmp_ordered(">", x, _const(ir, 88.8)), _const(ir, 88.8), x)
    xc = b.select(b.fcmp_ordered("<", xc, _const(ir, -104.0)), _const(ir, -104.0), xc)
    xc = b.select(is_nan, _const(ir, 0.0), xc)
    n = b.call(_intrinsic(ir, module, "llvm.floor"), [b.fadd(b.fmul(xc, _const(ir, _LOG2E)), _const(ir, 0.5))])
    r = b.fsub(b.fsub(xc, b.fmul(n, _const(ir, _C1))), b.fmul(n, _const(ir, _C2)))
    z = b.fmul(r, r)
    y = b.fadd(b.fadd(b.fmul(_horner(ir, b, _EXP_POLY, r), z), r), _const(ir, 1.0))
    k = b.fptosi(n, i32)
    half = b.ashr(k, ir.Constant(i32, 1))
    for part in (half, b.sub(k, half)):         # 2^k as two factors 2^half, 2^(k - half): both normal
        bits = b.shl(b.add(part, ir.Constant(i32, 127)), ir.Constant(i32, 23))
        y = b.fmul(y, b.bitcast(bits, ir.FloatType()))
    y = b.select(b.fcmp_ordered(">", x, _const(ir, _EXP_HI)), _const(ir, np.inf), y)
    y = b.select(b.fcmp_ordered("<", x, _const(ir, _EXP_LO)), _const(ir, 0.0), y)
    return b.select(is_nan, x, y)


def _tanh(ir, b, module, x):
    ax = b.call(_intrinsic(ir, module, "llvm.fabs"), [x])
    z = b.fmul(x, x)
    small = b.fadd(b.fmul(b.fmul(_horner(ir, b, _TANH_POLY, z), z), x), x)
    e = _exp(ir, b, module, b.fadd(ax, ax))
    large = b.fsub(_const(ir, 1.0), b.fdiv(_const(ir, 2.0), b.fadd(e, _const(ir, 1.0))))
    y = b.select(b.fcmp_ordered("<", ax, _const(ir, 0.625)), small, large)
    return b.call(_intrinsic(ir, module, "llvm.copysign"), [y, x])     # odd: x's sign (tanh(-0) = -0)
