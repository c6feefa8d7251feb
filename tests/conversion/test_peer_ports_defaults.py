"""Ports: mutable default arguments (`acc=[]`, `cache={}`, a default object), which Python keeps across
calls. Each factory makes two twins with their own defaults: one runs eagerly, one static; every call
and the default's contents after it must agree (they were silently frozen at the first trace)."""
import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .peers import agree


def list_default():
    def f(x, acc=[]):
        acc.append(1)
        return x * len(acc)
    return f


def dict_default_with_tensors():
    def f(x, cache={}):
        if "k" in cache:
            out = x + cache["k"]
        else:
            out = x
        cache["k"] = out * 2
        return out
    return f


def keyword_only_default():
    def f(x, *, acc=[]):
        acc.append(x)
        return sum(acc)
    return f


class Counter:
    def __init__(self):
        self.n = 0
        self.t = rt.tensor(np.float32(0))


def object_default():
    def f(x, st=Counter()):
        st.n += 1
        if rt.sum(x) > 0:
            st.t = st.t + 1
        return x * st.n + st.t
    return f


def _default(fn):
    return (fn.__defaults__ or (None,))[-1] if fn.__defaults__ else fn.__kwdefaults__["acc"]


@pytest.mark.parametrize("factory", [list_default, dict_default_with_tensors, keyword_only_default,
                                     object_default])
def test_a_mutable_default_lives_across_calls_as_in_python(factory):
    eager, static_src = factory(), factory()
    static = to_static(static_src)
    inputs = [[1.0, 2.0], [-1.0, -3.0], [1.0, 2.0], [0.5, 0.5]]
    for n, value in enumerate(inputs):
        want = eager(rt.tensor(np.asarray(value, np.float32)))
        got = static(rt.tensor(np.asarray(value, np.float32)))
        agree(got, want, f"call {n + 1}")
        want_default, got_default = _default(eager), _default(static_src)
        if isinstance(want_default, Counter):
            assert got_default.n == want_default.n
            agree(got_default.t, want_default.t, "default object's tensor")
        else:
            agree(got_default, want_default, f"default after call {n + 1}")
