"""Gradient rules of the linear-algebra functions (runtime/ops/decompositions.py).

Symmetric inputs (cholesky, eigh, eigvalsh) are read from their lower triangle only, as
LAPACK does, so their cotangents live on that triangle: an off-diagonal element stands
for itself and its mirror image.
"""
from ..decompositions import cross, eigh, inv, solve, svd
from ..dispatch import apply
from ..registry import facet, get_op
from .support import (as_tuple, broadcast_back, cast_like, nondifferentiable, rt, takes_gradient,
                      unbroadcast, zeros_for_missing)

nondifferentiable("linalg_matrix_rank")


def _mT(a):
    return rt.matrix_transpose(a)


def _eye_mask(x, k=0):
    """A bool (rows, cols) mask of x's k-th diagonal, for any (also unknown) matrix size."""
    rows = rt.expand_dims(rt.arange(rt.shape(x)[-2]), -1)
    cols = rt.expand_dims(rt.arange(rt.shape(x)[-1]), 0)
    return rt.equal(rows + k, cols)


def _on_lower_triangle(grad):
    """The cotangent of a matrix read from its lower triangle, from that of the symmetric
    matrix it stands for."""
    both = grad + _mT(grad)
    return rt.tril(both) - rt.where(_eye_mask(grad), grad, 0)


def _matrix_scale(g):
    """g of one value per matrix, with two unit axes to scale whole matrices."""
    return rt.expand_dims(rt.expand_dims(g, -1), -1)


@facet("linalg_inv", "vjp")
def _inv_vjp(g, inputs, outputs):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    y_t = _mT(outputs)
    return (cast_like(-rt.matmul(rt.matmul(y_t, g), y_t), x),)


@facet("linalg_det", "vjp")
def _det_vjp(g, inputs, outputs):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    return (cast_like(_matrix_scale(g * outputs) * _mT(inv(x)), x),)


@facet("linalg_slogdet", "vjp")
def _slogdet_vjp(g, inputs, outputs):
    (x,) = inputs
    g_log = as_tuple(g)[1]
    if not takes_gradient(x) or g_log is None:
        return (None,)
    return (cast_like(_matrix_scale(g_log) * _mT(inv(x)), x),)


@facet("linalg_solve", "vjp")
def _solve_vjp(g, inputs, outputs):
    """X = A^-1 B: B's cotangent G solves A^T G = g, A's is -G X^T (a 1-D B is one column)."""
    a, b = inputs
    vector = b.ndim == 1
    g_cols = rt.expand_dims(g, -1) if vector else g
    x_cols = rt.expand_dims(outputs, -1) if vector else outputs
    gb = solve(_mT(a), g_cols)
    ga = unbroadcast(-rt.matmul(gb, _mT(x_cols)), a) if takes_gradient(a) else None
    return ga, (unbroadcast(rt.squeeze(gb, -1) if vector else gb, b) if takes_gradient(b) else None)


@facet("linalg_cholesky", "vjp")
def _cholesky_vjp(g, inputs, outputs, upper=False):
    """Murray (2016): with P the lower triangle of L^T g (diagonal halved), the symmetric
    cotangent is L^-T P L^-1, symmetrized."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    lower, g_lower = (_mT(outputs), _mT(g)) if upper else (outputs, g)
    phi = rt.matmul(_mT(lower), g_lower)
    phi = rt.tril(phi) - 0.5 * rt.where(_eye_mask(phi), phi, 0)
    l_inv = inv(lower)
    s = rt.matmul(rt.matmul(_mT(l_inv), phi), l_inv)
    return (cast_like(_on_lower_triangle(0.5 * (s + _mT(s))), x),)


@facet("linalg_eigh", "vjp")
def _eigh_vjp(g, inputs, outputs):
    """V (diag(gw) + F * sym-part of V^T gV) V^T with F[i, j] = 1 / (w[j] - w[i]) off the diagonal."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    w, v = outputs
    g_w, g_v = as_tuple(g)
    inner = rt.zeros_like(x)
    if g_w is not None:
        inner = inner + rt.where(_eye_mask(x), rt.expand_dims(g_w, -2), 0)
    if g_v is not None:
        gaps = rt.expand_dims(w, -2) - rt.expand_dims(w, -1)
        diagonal = _eye_mask(x)
        f = rt.where(diagonal, 0, rt.reciprocal(rt.where(diagonal, 1, gaps)))
        inner = inner + f * rt.matmul(_mT(v), g_v)
    grad = rt.matmul(rt.matmul(v, inner), _mT(v))
    return (cast_like(_on_lower_triangle(0.5 * (grad + _mT(grad))), x),)


@facet("linalg_eigvalsh", "vjp")
def _eigvalsh_vjp(g, inputs, outputs):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    v = eigh(x)[1]
    grad = rt.matmul(v * rt.expand_dims(g, -2), _mT(v))
    return (cast_like(_on_lower_triangle(0.5 * (grad + _mT(grad))), x),)


@facet("linalg_qr", "vjp")
def _qr_vjp(g, inputs, outputs, mode="reduced"):
    """TensorFlow's QrGrad, for A with at least as many rows as columns (R invertible; the
    signs LAPACK picks for R's diagonal stay put under small changes of A)."""
    (a,) = inputs
    if not takes_gradient(a):
        return (None,)
    rows, cols = rt.shape(a)[-2:]
    if isinstance(rows, int) and isinstance(cols, int) and (rows < cols or (mode == "complete" and rows != cols)):
        raise NotImplementedError(f"linalg.qr: gradients need rows >= columns (and a square matrix for "
                                  f"mode='complete'), got a {rows}x{cols} matrix")
    q, r = outputs
    g_q, g_r = zeros_for_missing(g, outputs)
    qdq = rt.matmul(_mT(q), g_q)
    rdr = rt.matmul(r, _mT(g_r))
    lower = rt.tril(qdq - _mT(qdq) + rdr - _mT(rdr))
    r_inv_t = _mT(inv(r))
    grad = rt.matmul(q, g_r + rt.matmul(lower, r_inv_t)) + rt.matmul(g_q - rt.matmul(q, qdq), r_inv_t)
    return (cast_like(grad, a),)


@facet("linalg_svd", "vjp")
def _svd_vjp(g, inputs, outputs, full_matrices=True):
    """Townsend (2016), for distinct nonzero singular values. The columns of U and V beyond
    k = min(m, n) (full_matrices=True, not square) are any orthonormal completion, not a
    function of A: a cotangent on them is ignored."""
    (a,) = inputs
    if not takes_gradient(a):
        return (None,)
    u, s, vh = outputs
    g_u, g_s, g_vh = as_tuple(g)
    k = rt.shape(s)[-1]
    u, vh = u[..., :, :k], vh[..., :k, :]
    v = _mT(vh)
    grad = rt.matmul(u * rt.expand_dims(g_s, -2) if g_s is not None else rt.zeros_like(u), vh)
    if g_u is None and g_vh is None:
        return (cast_like(grad, a),)
    s_row, s_col = rt.expand_dims(s, -2), rt.expand_dims(s, -1)
    square = _eye_mask(rt.matmul(_mT(u), u))
    f = rt.where(square, 0, rt.reciprocal(rt.where(square, 1, s_row * s_row - s_col * s_col)))
    g_u = rt.zeros_like(u) if g_u is None else g_u[..., :, :k]
    g_v = rt.zeros_like(v) if g_vh is None else _mT(g_vh[..., :k, :])
    ut_gu, vt_gv = rt.matmul(_mT(u), g_u), rt.matmul(_mT(v), g_v)
    inner = f * (ut_gu - _mT(ut_gu)) * s_row + s_col * (f * (vt_gv - _mT(vt_gv)))
    grad = grad + rt.matmul(rt.matmul(u, inner), vh)
    inv_s = rt.reciprocal(s_row)
    grad = grad + rt.matmul((g_u - rt.matmul(u, ut_gu)) * inv_s, vh)
    grad = grad + rt.matmul(u * inv_s, _mT(g_v - rt.matmul(v, vt_gv)))
    return (cast_like(grad, a),)


@facet("linalg_svdvals", "vjp")
def _svdvals_vjp(g, inputs, outputs):
    """U diag(g) Vh (distinct singular values)."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    u, _, vh = svd(x, full_matrices=False)
    return (cast_like(rt.matmul(u * rt.expand_dims(g, -2), vh), x),)


@facet("linalg_pinv", "vjp")
def _pinv_vjp(g, inputs, outputs, rtol=None):
    """Golub and Pereyra's derivative of the pseudo-inverse P (where the rank does not change):
    -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A). No gradient flows to an array rtol."""
    a, rest = inputs[0], tuple(None for _ in inputs[1:])
    if not takes_gradient(a):
        return (None,) + rest
    p = outputs
    p_t = _mT(p)
    rows = rt.astype(_eye_mask(rt.matmul(a, p)), p.dtype)
    cols = rt.astype(_eye_mask(rt.matmul(p, a)), p.dtype)
    g_t = _mT(g)
    grad = (-rt.matmul(rt.matmul(p_t, g), p_t)
            + rt.matmul(rt.matmul(rows - rt.matmul(a, p), g_t), rt.matmul(p, p_t))
            + rt.matmul(rt.matmul(rt.matmul(p_t, p), g_t), cols - rt.matmul(p, a)))
    return (cast_like(grad, a),) + rest


@facet("linalg_matrix_power", "vjp")
def _matrix_power_vjp(g, inputs, outputs, n):
    """sum over k of (A^T)^k g (A^T)^(n-1-k); a negative power is that of the inverse."""
    (x,) = inputs
    if not takes_gradient(x) or n == 0:
        return (None,)
    base = x if n > 0 else inv(x)
    m = abs(n)
    powers = [None, _mT(base)]           # powers[k] = (base^T)^k, for k >= 1
    for k in range(2, m):
        powers.append(rt.matmul(powers[-1], powers[1]))
    total = None
    for k in range(m):
        term = g if k == 0 else rt.matmul(powers[k], g)
        term = term if m - 1 - k == 0 else rt.matmul(term, powers[m - 1 - k])
        total = term if total is None else total + term
    if n < 0:
        total = -rt.matmul(rt.matmul(_mT(base), total), _mT(base))
    return (cast_like(total, x),)


@facet("linalg_vector_norm", "vjp")
def _vector_norm_vjp(g, inputs, outputs, axis=None, keepdims=False, ord=2):
    (x,) = inputs
    if not takes_gradient(x) or ord == 0:
        return (None,)
    norm = broadcast_back(outputs, x, axis, keepdims)
    spread = broadcast_back(g, x, axis, keepdims)
    magnitude = rt.abs(x)
    if ord in (float("inf"), float("-inf")):
        hit = rt.equal(magnitude, norm)
        ties = broadcast_back(rt.sum(rt.astype(hit, x.dtype), axis=axis, keepdims=keepdims), x, axis, keepdims)
        grad = rt.where(hit, spread * rt.sign(x), 0) / ties
    elif ord == 1:
        grad = spread * rt.sign(x)
    elif ord == 2:
        grad = spread * x / rt.where(rt.equal(norm, 0), 1, norm)
    else:
        grad = spread * rt.sign(x) * rt.pow(magnitude, ord - 1) / rt.pow(norm, ord - 1)
    return (cast_like(grad, x),)


@facet("linalg_matrix_norm", "vjp")
def _matrix_norm_vjp(g, inputs, outputs, keepdims=False, ord="fro"):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    if not keepdims:
        g, outputs = _matrix_scale(g), _matrix_scale(outputs)
    if ord == "fro":
        return (cast_like(g * x / outputs, x),)
    if ord in ("nuc", 2, -2):
        u, s, vh = svd(x, full_matrices=False)
        if ord == "nuc":
            return (cast_like(g * rt.matmul(u, vh), x),)
        k = 0 if ord == 2 else -1          # singular values come largest first
        top = rt.expand_dims(u[..., :, k], -1) * rt.expand_dims(vh[..., k, :], -2)
        return (cast_like(g * top, x),)
    # 1 / -1: the largest / smallest column sum of |x|; inf / -inf: the same over rows
    along = -2 if ord in (1, -1) else -1
    sums = rt.sum(rt.abs(x), axis=along, keepdims=True)
    hit = rt.astype(rt.equal(sums, outputs), x.dtype)
    share = hit / rt.sum(hit, axis=(-2, -1), keepdims=True)
    return (cast_like(g * share * rt.sign(x), x),)


@facet("linalg_diagonal", "vjp")
def _diagonal_vjp(g, inputs, outputs, offset=0):
    """g placed on the offset diagonal of zeros."""
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    steps = rt.arange(rt.shape(g)[-1])
    rows, cols = (steps, steps + offset) if offset >= 0 else (steps - offset, steps)
    return (apply(get_op("getitem_grad"), (g, x, rows, cols), {"index": ["...", {"$": 1}, {"$": 2}]}),)


@facet("linalg_trace", "vjp")
def _trace_vjp(g, inputs, outputs, offset=0, dtype=None):
    (x,) = inputs
    if not takes_gradient(x):
        return (None,)
    return (cast_like(rt.where(_eye_mask(x, offset), _matrix_scale(g), 0) + rt.zeros_like(x), x),)


@facet("linalg_outer", "vjp")
def _outer_vjp(g, inputs, outputs):
    a, b = inputs
    ga = cast_like(rt.matmul(g, b), a) if takes_gradient(a) else None
    gb = cast_like(rt.matmul(a, g), b) if takes_gradient(b) else None
    return ga, gb


@facet("linalg_cross", "vjp")
def _cross_vjp(g, inputs, outputs, axis=-1):
    a, b = inputs
    ga = unbroadcast(cross(b, g, axis=axis), a) if takes_gradient(a) else None
    gb = unbroadcast(cross(g, a, axis=axis), b) if takes_gradient(b) else None
    return ga, gb
