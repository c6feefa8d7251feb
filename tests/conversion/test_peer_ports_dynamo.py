"""Ports in the style of PyTorch's TorchDynamo `test_functions.py` (small functions over tensors mixing
Python builtins, the standard library and user code) and TorchScript's control-flow tests.

Oracle: the same function run eagerly; see peers.like_eager (three calls: same input, another, same again).
"""
import functools
import itertools
import math
import operator

import numpy as np
import pytest

import runtime as rt

from .peers import like_eager

f32 = np.float32


def s(v, dtype=f32):
    return np.asarray(v, dtype)


A = s([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
B = s([[-1.0, 2.0, 0.0], [2.0, -3.0, 1.5]])
POS, NEG = (s(2.5),), (s(-1.5),)
AB, BA = (A, B), (B, A)
V = (s([1.0, -2.0, 3.0, 4.0]),)
W = (s([-1.0, 5.0, 0.5, -4.0]),)

# --- dynamo test_functions style ------------------------------------------------------------------


def add_sub_consts(a, b):
    return a + b * 2 - 1, a - b / 2


def python_math_on_constants(a, b):
    return a * math.sqrt(4.0) + b * math.pi - math.floor(2.7)


def operator_module(a, b):
    return operator.add(a, b), operator.mul(a, 2), operator.neg(b), operator.truediv(a, 4)


def functools_partial(a, b):
    f = functools.partial(rt.where, a > b)
    return f(a, b)


def partial_of_user_fn(a, b):
    def scale(x, k, shift=0):
        if rt.sum(x) > 0:
            return x * k + shift
        return x - k
    g = functools.partial(scale, k=3)
    return g(a), g(b, shift=1)


def itertools_product(a, b):
    acc = a * 0
    for i, j in itertools.product(range(2), range(3)):
        acc = acc + a[i, j] * b[i, j]
    return acc


def itertools_chain(a, b):
    acc = a[0] * 0
    for row in itertools.chain(a, b):
        acc = acc + row
    return acc


def builtin_min_max_abs(a, b):
    return max(a[0, 0], b[0, 0]), min(a[1, 1], b[1, 1]), abs(a - b)


def builtin_min_max_python(a, b):
    return a * max(1, 2, 3) + min([4.0, 2.0])


def is_none_default(a, b=None):
    if b is None:
        return a * 2
    return a + b


def is_none_checks(a, b):
    c = None
    if rt.sum(a) > 0:
        c = a
    return is_none_default(a) + is_none_default(a, b) + (0 if c is None else 1)


def is_not_none_arg(a, b):
    out = a if b is not None else a * 2
    return out


def getattr_hasattr(a, b):
    class C:
        scale = 2.0
    c = C()
    k = getattr(c, "scale", 1.0) + (1.0 if hasattr(c, "shift") else 0.0)
    setattr(c, "shift", b)
    return a * k + getattr(c, "shift")


def tuple_unpack_star(a, b):
    first, *rest = (a, b, a * b)
    x, (y, z) = a, (b, 3)
    return first + rest[0] + rest[1] + x * y * z


def tuple_ops(a, b):
    t = (a, b)
    t2 = t + (a + b,)
    return t2[-1] * len(t2), t2[::2]


def list_methods(a, b):
    xs = [a, b]
    xs.extend([a * 2])
    xs.insert(0, b * 3)
    xs.reverse()
    del xs[1]
    return xs, len(xs)


def list_of_numbers_methods(a, b):
    ks = [3, 1, 2]
    ks.sort()
    ks.append(ks.index(2) + ks.count(1))
    return a * ks[0] + b * ks[-1], sorted(ks, reverse=True)


def dict_methods(a, b):
    d = {"a": a}
    d.setdefault("b", b)
    d.update({"c": a * b})
    v = d.pop("a")
    total = v
    for k in sorted(d):
        total = total + d[k]
    return total, list(d.keys()), d.get("zz", 7)


def dict_comprehension_cond(a, b):
    d = {f"k{i}": a * i for i in range(4) if i % 2}
    return d


def list_comprehension_cond(a, b):
    return [r * 2 for r in [a, b, a - b] if r is not None]


def nested_comprehension(a, b):
    return [[x * y for y in (1, 2)] for x in (a, b)]


def comprehension_over_tensor_rows(a, b):
    return rt.stack([row.sum() for row in a if True])


def generator_expr_sum(a, b):
    return sum(x * y for x, y in zip(a, b))


def any_all_python(a, b):
    flags = [True, False]
    return a * any(flags) + b * all(flags)


def string_format_shapes(a, b):
    name = "shape {} {}".format(a.shape, b.ndim)
    return name, f"{a.shape[0]}x{a.shape[1]}", a * len(name)


def format_tensor_value(a, b):
    return f"{a.shape}-{a.dtype}"


def lambda_default_capture(a, b):
    fs = [lambda x, k=k: x * k for k in range(3)]
    return [f(a) for f in fs]


def closure_late_binding(a, b):
    fs = [lambda x: x * k for k in range(3)]
    return [f(a) for f in fs]


def closure_reads_outer_tensor(a, b):
    def inner(x):
        return x + a
    return inner(b) + inner(a)


def nonlocal_counter(a, b):
    count = 0

    def bump(x):
        nonlocal count
        count += 1
        return x * count
    return bump(a) + bump(b), count


def nonlocal_under_tensor_if(a, b):
    total = a * 0

    def add(x):
        nonlocal total
        total = total + x

    if rt.sum(a) > rt.sum(b):
        add(a)
    else:
        add(b)
    return total


def inline_default_tensor(a, b):
    def f(x, y=b):
        return x * y
    return f(a) + f(a, a)


def kwargs_only(a, b):
    def f(x, *, scale=1.0, shift=0.0):
        return x * scale + shift
    return f(a, shift=1.0) + f(b, scale=2.0, shift=-1.0)


def star_args_forward(a, b):
    def inner(*args, **kwargs):
        return args[0] + kwargs.get("extra", 0)

    def outer(*args, **kwargs):
        return inner(*args, **kwargs)
    return outer(a, b, extra=3)


def callable_object(a, b):
    class Scaler:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            if rt.mean(x) > 0:
                return x * self.k
            return x / self.k
    return Scaler(2.0)(a) + Scaler(4.0)(b)


def staticmethod_classmethod(a, b):
    class M:
        base = 3.0

        @staticmethod
        def double(x):
            return x * 2

        @classmethod
        def add_base(cls, x):
            return x + cls.base
    return M.double(a) + M.add_base(b)


def property_access(a, b):
    class P:
        def __init__(self, v):
            self._v = v

        @property
        def v(self):
            return self._v * 2
    return P(a).v + P(b).v


def dataclass_like(a, b):
    from dataclasses import dataclass

    @dataclass
    class Pair:
        x: object
        y: object
    p = Pair(a, b)
    if rt.sum(p.x) > 0:
        p.y = p.y + 1
    return p.x * p.y


def namedtuple_result(a, b):
    import collections
    Out = collections.namedtuple("Out", ["lo", "hi"])
    o = Out(rt.minimum(a, b), rt.maximum(a, b))
    return o.hi - o.lo, o._fields


def enumerate_start(a, b):
    acc = a[0] * 0
    for i, row in enumerate(a, start=1):
        acc = acc + row * i
    return acc


def zip_three(a, b):
    acc = a[0] * 0
    for x, (i, y), k in zip(a, enumerate(b), range(100)):
        acc = acc + x * y * (i + k)
    return acc


def reversed_range(a, b):
    out = []
    for i in reversed(range(a.shape[0])):
        out.append(a[i])
    return rt.stack(out)


def range_len_shape(a, b):
    acc = a[:, 0] * 0
    for j in range(len(a[0])):
        acc = acc + a[:, j]
    return acc


def integer_div_mod_signs(a, b):
    i = a.astype("int32")
    return i // 3, i % 3, -7 // 2, -7 % 2, i // -3, i % -3


def float_mod_signs(a, b):
    return a % 2.0, a % -2.0, a // 2.0


def python_int_float_promotion(a, b):
    return a * 2, a * 2.5, a + True, (a > 0) * 3, (a > 0) + (b > 0)


def int_tensor_promotion(a, b):
    i = (a * 10).astype("int32")
    return i * 2, i * 2.5, i / 2, i + 1.0, i ** 2


def pow_and_rpow(a, b):
    return a ** 2, 2 ** a, a ** 0.5 if rt.all(a > 0) else rt.abs(a) ** 0.5


def comparison_chains(a, b):
    return (a < b) & (b < 3), rt.where((a > -1) & (a < 2), a, b)


def bool_ops_tensor_python(a, b):
    c = rt.sum(a) > 0
    if c and True:
        r = a
    else:
        r = b
    if False or c:
        r = r * 2
    return r


def item_then_python_math(a, b):
    v = float(a.sum())
    return a * v


def shape_arithmetic(a, b):
    n, m = a.shape
    return a.reshape(m, n) * (n * m), a.reshape(-1)[: n + 1]


def assert_on_tensor(a, b):
    assert rt.all(rt.isfinite(a)), "non-finite"
    return a * 2


def try_except_tensor_ops(a, b):
    try:
        out = a @ b
    except ValueError:
        out = a * b
    return out


def try_finally(a, b):
    out = a
    try:
        out = out + 1
    finally:
        out = out * 2
    return out


def isinstance_dispatch(a, b):
    def norm(v):
        if isinstance(v, (list, tuple)):
            return sum(norm(x) for x in v)
        return v.sum()
    return norm([a, (b, a)])


def global_constant_read(a, b):
    return a * _SCALE + _OFFSETS[1]


_SCALE = 3.0
_OFFSETS = [0.5, 1.5]


def recursion_over_structure(a, b):
    def flatten(t):
        if isinstance(t, (list, tuple)):
            out = []
            for v in t:
                out.extend(flatten(v))
            return out
        return [t]
    return rt.stack(flatten([a[0], [b[0], (a[1], b[1])]]))


# --- TorchScript control-flow style ----------------------------------------------------------------


def ts_if_in_loop(a, b):
    acc = a * 0
    for i in range(a.shape[0]):
        if rt.sum(a[i]) > rt.sum(b[i]):
            acc[i] = a[i]
        else:
            acc[i] = b[i]
    return acc


def ts_while_tensor_counter(a, b):
    i = rt.tensor(np.int64(0))
    out = a
    while i < 3:
        out = out * 2
        i += 1
    return out, i


def ts_loop_with_early_return(a, b):
    for i in range(a.shape[0]):
        if rt.sum(a[i]) < 0:
            return a[i]
    return b[0]


def ts_nested_if_return(a, b):
    if rt.sum(a) > 0:
        if rt.sum(b) > 0:
            return a + b
        return a - b
    return b


def ts_while_break_continue(a, b):
    i = 0
    s_ = a[0] * 0
    while i < a.shape[0] * 3:
        i += 1
        if i % 2 == 0:
            continue
        s_ = s_ + a[i % a.shape[0]]
        if rt.sum(s_) > 5:
            break
    return s_, i


def ts_loop_carried_shape_change(a, b):
    x = a[0:1]
    n = 0
    while rt.sum(x) < 10 and n < 4:
        x = rt.concat([x, x + 1], axis=0)
        n += 1
    return x


def ts_list_of_tensors_in_loop(a, b):
    outs = []
    h = a[0]
    for i in range(3):
        h = rt.tanh(h + b[i % 2])
        outs.append(h)
    return rt.stack(outs)


def ts_augmented_item(a, b):
    c = a * 1
    c[0] += b[0]
    c[1, 1:] *= 2
    c[:, 0] -= 1
    return c


def ts_min_max_loop(a, b):
    best = a[0, 0]
    for v in a.reshape(-1):
        best = rt.maximum(best, v)
    return best


def ts_dtype_casting(a, b):
    mask = a > 0
    n = mask.sum()
    return n, n.astype("float32") / a.size, mask.astype("int32") * 2


CASES = [(f, AB, BA) for f in [
    add_sub_consts, python_math_on_constants, operator_module, functools_partial, partial_of_user_fn,
    itertools_product, itertools_chain, builtin_min_max_abs, builtin_min_max_python,
    is_not_none_arg, getattr_hasattr, tuple_unpack_star, tuple_ops, list_methods, list_of_numbers_methods,
    dict_methods, dict_comprehension_cond, list_comprehension_cond, nested_comprehension,
    comprehension_over_tensor_rows, generator_expr_sum, any_all_python, string_format_shapes,
    format_tensor_value, lambda_default_capture, closure_late_binding, closure_reads_outer_tensor,
    nonlocal_counter, nonlocal_under_tensor_if, inline_default_tensor, kwargs_only, star_args_forward,
    callable_object, staticmethod_classmethod, property_access, dataclass_like, namedtuple_result,
    enumerate_start, zip_three, reversed_range, range_len_shape, integer_div_mod_signs, float_mod_signs,
    python_int_float_promotion, int_tensor_promotion, pow_and_rpow, comparison_chains, bool_ops_tensor_python,
    item_then_python_math, shape_arithmetic, assert_on_tensor, try_except_tensor_ops, try_finally,
    isinstance_dispatch, global_constant_read, recursion_over_structure,
    ts_if_in_loop, ts_while_tensor_counter, ts_loop_with_early_return, ts_nested_if_return,
    ts_while_break_continue, ts_loop_carried_shape_change, ts_list_of_tensors_in_loop, ts_augmented_item,
    ts_min_max_loop, ts_dtype_casting,
]] + [(is_none_default, (A,), (A, B))]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_like_eager(case):
    like_eager(case[0], *case[1:])


def test_none_or_tensor_from_a_tensor_if_is_an_error_at_the_users_line():
    from runtime.errors import ControlFlowError
    from transpiler import to_static
    with pytest.raises(ControlFlowError, match="'c' differs between the branches") as info:
        to_static(is_none_checks)(rt.tensor(A), rt.tensor(B))
    assert "is_none_checks" in str(info.value) and "if rt.sum(a) > 0:" in str(info.value)
