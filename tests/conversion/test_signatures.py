"""The signature cache: keys by exact value or by an identity kept alive (never a bare id that Python reuses),
bounded (least recently used dropped), and a failing trace or run leaves it as it was."""
import gc
import warnings
import weakref

import numpy as np
import pytest

import runtime as rt
from runtime import tracing
from transpiler import to_static


def scale(x, v):
    return x * v + 1


def test_numpy_scalars_are_keyed_by_dtype_and_value():
    x = rt.tensor(np.float32([1, 2]))
    static = to_static(scale, max_signatures=4)
    values = np.linspace(0.1, 1.0, 10, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in values:                       # each element dies before the next: its id is reused
            np.testing.assert_array_equal(static(x, v).numpy(), x.numpy() * v + 1)
    for v in (np.int64(3), np.int32(3), np.float64(3)):
        got = static(x, v).numpy()
        want = x.numpy() * v + 1
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_zero_and_negative_zero_are_different_arguments():
    def inv(x, v):
        return x / v
    static = to_static(inv)
    x = rt.tensor(np.float32([1.0]))
    assert static(x, 0.0).numpy()[0] == np.inf
    assert static(x, -0.0).numpy()[0] == -np.inf
    assert static(x, 0.0).numpy()[0] == np.inf


def test_nan_argument_does_not_retrace_every_call():
    static = to_static(scale)
    x = rt.tensor(np.float32([1.0]))
    for _ in range(3):
        assert np.isnan(static(x, float("nan")).numpy()[0])
    assert static.cache_size == 1


class Config:
    def __init__(self, k):
        self.k = k


def with_config(x, cfg):
    return x * cfg.k


def test_object_arguments_are_keyed_by_an_identity_kept_alive():
    static = to_static(with_config, max_signatures=8)
    x = rt.tensor(np.float32([1, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(40):                    # each Config dies after its call: Python reuses its id
            np.testing.assert_array_equal(static(x, Config(k)).numpy(), x.numpy() * k)


def test_attribute_of_an_object_argument_is_guarded():
    static = to_static(with_config)
    x = rt.tensor(np.float32([1, 2]))
    cfg = Config(2)
    np.testing.assert_array_equal(static(x, cfg).numpy(), [2, 4])
    cfg.k = 5
    np.testing.assert_array_equal(static(x, cfg).numpy(), [5, 10])
    assert static.retrace_reasons == ["cfg.k: 2 -> 5"]


def test_cache_is_bounded_and_frees_what_it_drops():
    static = to_static(scale, max_signatures=3)
    first = rt.tensor(np.ones(1, np.float32))
    static(first, 2)
    program = weakref.ref(static.get_program(first, 2))
    with pytest.warns(UserWarning, match=r"max_signatures=3.*latest retraces: .*shape") as record:
        for n in range(2, 8):
            static(rt.tensor(np.ones(n, np.float32)), 2)
    assert [w.filename for w in record] == [__file__]          # once, at the caller's line
    assert static.cache_size == 3
    assert len(static.retrace_reasons) <= 3
    gc.collect()
    assert program() is None                  # the dropped Program (and its plan) are gone
    np.testing.assert_array_equal(static(first, 2).numpy(), [3])   # retraced when needed again
    assert static.cache_size == 3


def test_max_signatures_must_be_positive():
    with pytest.raises(ValueError, match="max_signatures"):
        to_static(scale, max_signatures=0)


def fails_midway(x, k):
    y = x * 2
    if k > 1:
        raise KeyError("no such key")
    return y


def test_a_failed_trace_leaves_no_entry_and_no_tracing_state():
    static = to_static(fails_midway)
    x = rt.tensor(np.float32([1, 2]))
    static(x, 1)
    with pytest.raises(KeyError):
        static(x, 2)
    assert static.cache_size == 1 and tracing.current_block() is None
    assert tracing._state.blocks == [] and tracing._active == [0]
    np.testing.assert_array_equal(static(x, 1).numpy(), [2, 4])
    with pytest.raises(KeyError):
        static.get_program(x, 2)
    assert static.cache_size == 1 and tracing._state.blocks == []


W = rt.tensor(np.float32([1, 2]))


def checked(x):
    y = x * W
    assert rt.sum(y) < 100, "too big"
    return y + W


def test_a_failed_run_leaves_cache_and_parameters_as_they_were():
    static = to_static(checked)
    small = rt.tensor(np.float32([1, 1]))
    np.testing.assert_array_equal(static(small).numpy(), [2, 4])
    before = W.numpy().copy()
    with pytest.raises(AssertionError, match="too big"):
        static(rt.tensor(np.float32([100, 100])))
    np.testing.assert_array_equal(W.numpy(), before)
    assert static.cache_size == 1 and static.retrace_reasons == []
    np.testing.assert_array_equal(static(small).numpy(), [2, 4])


B = rt.tensor(np.float32([10, 20, 30]))


def picks(x, i):
    y = x * 2
    return y + B[i]


def test_a_kernel_error_while_running_leaves_everything_as_it_was():
    static = to_static(picks)
    x = rt.tensor(np.float32([1, 2, 3]))
    np.testing.assert_array_equal(static(x, rt.tensor(np.int64(1))).numpy(), [22, 24, 26])
    with pytest.raises(IndexError):
        static(x, rt.tensor(np.int64(7)))
    np.testing.assert_array_equal(B.numpy(), [10, 20, 30])
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])
    assert static.cache_size == 1 and static.retrace_reasons == []
    np.testing.assert_array_equal(static(x, rt.tensor(np.int64(2))).numpy(), [32, 34, 36])


def test_max_signatures_reaches_methods_and_rewrapped_functions():
    class Model:
        def forward(self, x):
            return x + 1

    bound = to_static(Model().forward, max_signatures=2)
    again = to_static(to_static(scale), max_signatures=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(1, 6):
            bound(rt.tensor(np.ones(n, np.float32)))
            again(rt.tensor(np.ones(n, np.float32)), 1)
    assert bound.cache_size == 2 and again.cache_size == 2
