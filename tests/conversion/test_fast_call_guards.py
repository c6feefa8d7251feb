"""The fast call's guards (issue 27: one `or` chain of subscript reads, not a statement per watched place)
still fire on every change Python would see between calls, and a rebound same-shape parameter is fed
without a retrace and without leaving the fast call."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from transpiler import to_static
from transpiler.fast_call import MISS

RNG = np.random.default_rng(27)


def _x(*shape):
    return rt.tensor(RNG.standard_normal(shape).astype(np.float32))


def _served_fast(static, *args):
    """The result of the fast call installed for these arguments (it must not miss)."""
    out = static._fast_call(args)
    assert out is not MISS
    return out


def test_a_rebound_parameter_of_the_same_shape_is_fed_by_the_fast_call_without_a_retrace():
    net = nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))
    static = to_static(net.forward)
    x = _x(2, 3, 4)
    static(x), static(x)
    new = rt.Parameter(RNG.standard_normal((3, 8)).astype(np.float32))
    net[3].weight = new
    got = _served_fast(static, x)
    np.testing.assert_allclose(got.numpy(), net(x).numpy(), rtol=1e-6)
    assert static.cache_size == 1
    net[3].weight = rt.Parameter(RNG.standard_normal((3, 8, 1)).astype(np.float32)[..., 0].T.copy().T)
    assert static._fast_call((x,)) is not MISS          # same shape again: still served
    net[1].bias = rt.Parameter(np.zeros(8, np.float32) + 5)
    np.testing.assert_allclose(static(x).numpy(), net(x).numpy(), rtol=1e-6)


def test_every_kind_of_change_between_calls_misses_the_fast_call_and_gives_pythons_result():
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    static = to_static(net.forward)
    x = _x(1, 4)
    static(x), static(x)
    changes = [
        lambda: setattr(net[0], "bias", None),                                             # parameter removed
        lambda: net.append(nn.Linear(4, 2)),                                              # sublayer added
        lambda: net[0].register_forward_post_hook(lambda layer, args, out: out * 2),       # hook registered
        lambda: net.eval(),                                                                # train/eval mode
    ]
    for change in changes:
        change()
        want = net(x).numpy()
        assert static._fast_call((x,)) is MISS
        np.testing.assert_allclose(static(x).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(_served_fast(static, x).numpy(), want, rtol=1e-6)


class Scaled:
    factor = 2.0           # a class attribute, until an instance shadows it

    def __init__(self):
        self.offset = 1.0

    @to_static
    def __call__(self, x):
        return x * self.factor + self.offset


def test_attributes_written_deleted_and_shadowed_between_calls():
    obj, x = Scaled(), _x(3)
    for _ in range(2):
        np.testing.assert_allclose(obj(x).numpy(), x.numpy() * 2.0 + 1.0)
    obj.offset = 3.0
    np.testing.assert_allclose(obj(x).numpy(), x.numpy() * 2.0 + 3.0)
    obj.factor = 5.0                                  # the instance now shadows the class attribute
    np.testing.assert_allclose(obj(x).numpy(), x.numpy() * 5.0 + 3.0)
    del obj.factor
    Scaled.factor = 7.0
    np.testing.assert_allclose(obj(x).numpy(), x.numpy() * 7.0 + 3.0)
    del obj.offset                                    # gone: Python's AttributeError, from the user's line
    with pytest.raises(AttributeError, match="offset"):
        obj(x)
    Scaled.factor = 2.0


SCALE = 1.0
TABLE = [1.0, 2.0, 3.0]


def _read_globals(x):
    return x * SCALE + TABLE[2]


def test_globals_and_list_items_changed_between_calls():
    global SCALE
    static = to_static(_read_globals)
    x = _x(3)
    static(x), static(x)
    SCALE = -0.0                                      # equal to 0.0 and its bits differ: exact compare
    np.testing.assert_array_equal(static(x).numpy(), x.numpy() * np.float32(-0.0) + 3.0)
    SCALE = 1
    assert static(x).dtype == rt.float32
    TABLE[2] = 10.0
    np.testing.assert_allclose(static(x).numpy(), x.numpy() + 10.0)
    TABLE.pop()                                       # the item read is gone: Python's IndexError
    try:
        with pytest.raises(IndexError):
            static(x)
    finally:
        TABLE.append(3.0)
        SCALE = 1.0
    np.testing.assert_allclose(static(x).numpy(), x.numpy() + 3.0)


def test_a_closure_variable_rebound_between_calls():
    k = 2.0

    @to_static
    def f(x):
        return x * k

    x = _x(3)
    f(x), f(x)
    k = 4.0
    np.testing.assert_allclose(f(x).numpy(), x.numpy() * 4.0)


def test_more_watched_places_than_one_chain_holds_each_still_fire():
    """Watches beyond the first `or` chain (64 a chain) are checked too: a layer of 40 sublayers has ~200."""
    net = nn.Sequential(*[nn.Linear(3, 3) for _ in range(40)])
    static = to_static(net.forward)
    x = _x(1, 3)
    static(x), static(x)
    assert len(next(iter(static._cache.values())).guard.watches) > 128
    net[39].eval()                                    # the last layer's mode: a watch in the last chain
    assert static._fast_call((x,)) is MISS
    net[39].bias = rt.Parameter(np.full(3, 100.0, np.float32))
    np.testing.assert_allclose(static(x).numpy(), net(x).numpy(), rtol=1e-5)
    net[20].weight = rt.Parameter(np.zeros((3, 3), np.float32))   # a same-shape rebind in a middle chain
    np.testing.assert_allclose(_served_fast(static, x).numpy(), net(x).numpy(), rtol=1e-5)
