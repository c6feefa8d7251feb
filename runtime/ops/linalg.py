"""Matrix products."""
from ..dtypes import result_type
from .dispatch import apply
from .registry import OpDef, register
from .rules import Spec, broadcast_shapes, promote_operand, shape_of


def _matmul_infer(a, b):
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ValueError("matmul: operands must have at least one dimension (use multiply for scalars)")
    a2 = (1,) + tuple(sa) if len(sa) == 1 else tuple(sa)
    b2 = tuple(sb) + (1,) if len(sb) == 1 else tuple(sb)
    k1, k2 = a2[-1], b2[-2]
    if k1 != -1 and k2 != -1 and k1 != k2:
        raise ValueError(f"matmul: inner dimensions differ: {tuple(sa)} @ {tuple(sb)} ({k1} != {k2})")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return Spec(out, result_type(promote_operand(a), promote_operand(b)))


_matmul = register(OpDef("matmul", lambda xp, a, b: xp.matmul(a, b), _matmul_infer, promote=True,
                           template="xp.matmul({0}, {1})"))


def matmul(a, b):
    """Matrix product with NumPy's batching and 1-D rules (`a @ b`)."""
    return apply(_matmul, (a, b), {})
