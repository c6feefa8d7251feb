"""Gradient rules of the products (runtime/ops/linalg.py). tensordot and einsum share one
rule: the cotangent of an einsum operand is an einsum of g with the other operands."""
from ..registry import facet
from .support import norm_axes, rt, takes_gradient, unbroadcast


def _swap_last(a):
    """a with its last two axes swapped (a matrix transpose of every batch entry)."""
    order = list(range(a.ndim))
    order[-2], order[-1] = order[-1], order[-2]
    return rt.permute_dims(a, tuple(order))


@facet("matmul", "vjp")
def _matmul_vjp(g, inputs, outputs):
    """NumPy's 1-D rules: a vector a is a (1, k) row, a vector b a (k, 1) column."""
    a, b = inputs
    a2 = rt.expand_dims(a, 0) if a.ndim == 1 else a
    b2 = rt.expand_dims(b, -1) if b.ndim == 1 else b
    g2 = rt.expand_dims(g, -1) if b.ndim == 1 else g
    g2 = rt.expand_dims(g2, -2) if a.ndim == 1 else g2
    ga = gb = None
    if takes_gradient(a):
        ga = unbroadcast(rt.matmul(g2, _swap_last(b2)), a)       # (..., 1, k) sums to (k,) for a vector
    if takes_gradient(b):
        gb = rt.matmul(_swap_last(a2), g2)
        gb = unbroadcast(rt.squeeze(gb, -1) if b.ndim == 1 else gb, b)
    return ga, gb


def _einsum_parts(subscripts, n):
    """(input terms, output term) of an einsum with the output spelled out."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->")
        return ins.split(","), out
    terms = spec.split(",")
    letters = "".join(terms).replace("...", "")
    single = sorted(c for c in set(letters) if letters.count(c) == 1)
    return terms, ("..." if "..." in spec else "") + "".join(single)


def _einsum_grads(g, operands, subscripts):
    terms, out = _einsum_parts(subscripts, len(operands))
    grads = []
    for i, x in enumerate(operands):
        if not takes_gradient(x):
            grads.append(None)
            continue
        term, diagonals = _distinct_letters(terms[i], x)
        # ones of x's shape name every index of x, also those only x has (summed away in the forward);
        # an identity per repeated index puts the cotangent on that diagonal only
        others = [t for j, t in enumerate(terms) if j != i]
        wanted = term if "..." in term or "..." not in out else "..." + term   # others' broadcast dims: summed below
        spec = ",".join([out] + others + [pair for pair, _ in diagonals] + [term]) + "->" + wanted
        eyes = [rt.eye(n, dtype=x.dtype) for _, n in diagonals]
        back = rt.einsum(spec, g, *[o for j, o in enumerate(operands) if j != i], *eyes, rt.ones_like(x))
        grads.append(unbroadcast(back, x))
    return tuple(grads)


def _distinct_letters(term, x):
    """term with each repeat of an index renamed to a fresh letter, and ("ab", size) per renaming."""
    if "..." in term or len(set(term)) == len(term):
        return term, []
    used, letters, diagonals = set(term), [], []
    spare = (c for c in _LETTERS.upper() if c not in used)
    for k, c in enumerate(term):
        if c in letters:
            fresh = next(spare)
            diagonals.append((c + fresh, rt.shape(x)[k]))
            c = fresh
        letters.append(c)
    return "".join(letters), diagonals


@facet("einsum", "vjp")
def _einsum_vjp(g, inputs, outputs, subscripts):
    return _einsum_grads(g, inputs, subscripts)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _tensordot_subscripts(a, b, axes):
    if isinstance(axes, int):
        ax_a, ax_b = tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes))
    else:
        ax_a, ax_b = ((axes[0],) if isinstance(axes[0], int) else axes[0]), \
            ((axes[1],) if isinstance(axes[1], int) else axes[1])
    ax_a, ax_b = [i % a.ndim for i in ax_a], [j % b.ndim for j in ax_b]
    ta = list(_LETTERS[:a.ndim])
    tb = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for i, j in zip(ax_a, ax_b):
        tb[j] = ta[i]
    out = [c for k, c in enumerate(ta) if k not in ax_a] + [c for k, c in enumerate(tb) if k not in ax_b]
    return "".join(ta) + "," + "".join(tb) + "->" + "".join(out)


@facet("tensordot", "vjp")
def _tensordot_vjp(g, inputs, outputs, axes=2):
    a, b = inputs
    return _einsum_grads(g, inputs, _tensordot_subscripts(a, b, axes))


@facet("vecdot", "vjp")
def _vecdot_vjp(g, inputs, outputs, axis=-1):
    a, b = inputs
    spread = rt.expand_dims(g, norm_axes(axis, g.ndim + 1))
    ga = unbroadcast(spread * b, a) if takes_gradient(a) else None
    gb = unbroadcast(spread * a, b) if takes_gradient(b) else None
    return ga, gb
