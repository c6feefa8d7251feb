"""Registering the module's globals after a trace walks only the ones the trace rebound (or the
function names): a big list or dict global the function never reads is not iterated, however
many times the function retraces (bench/retrace_globals.py times it), while a global the trace
rebinds to a traced value still becomes a written place."""
import numpy as np

import runtime as rt
from transpiler import to_static

from bench import retrace_globals


class _CountingList(list):
    """A list that counts how often anything iterates it or reads an item."""

    walks = 0

    def __iter__(self):
        _CountingList.walks += 1
        return super().__iter__()

    def __getitem__(self, i):
        _CountingList.walks += 1
        return super().__getitem__(i)


class _CountingDict(dict):
    walks = 0

    def __iter__(self):
        _CountingDict.walks += 1
        return super().__iter__()

    def __getitem__(self, k):
        _CountingDict.walks += 1
        return super().__getitem__(k)


UNREAD_LIST = _CountingList([i] for i in range(1000))
UNREAD_DICT = _CountingDict((i, [i]) for i in range(1000))
last = None


def double(x):
    return x * 2


def keep_last(x):
    global last
    if x.sum() > 0:            # a tensor condition: `last` holds a traced value after the trace
        last = x * 3
    else:
        last = x
    return x + 1


def _walks():
    return _CountingList.walks + _CountingDict.walks


def test_the_counters_count():
    before = _walks()
    list(UNREAD_LIST)
    dict(UNREAD_DICT.items()) and UNREAD_DICT[0]
    assert _walks() > before


def test_unread_globals_are_not_walked_on_any_retrace():
    static = to_static(double)
    before = _walks()
    for n in (2, 3, 4, 5):                           # each shape is a new trace
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(static(rt.tensor(x)).numpy(), x * 2)
    assert len(static.retrace_reasons) == 3
    assert _walks() == before


def test_a_rebound_global_is_still_a_written_place_beside_them():
    global last
    static = to_static(keep_last)
    before = _walks()
    for n in (2, 3):
        x = np.arange(n, dtype=np.float32) - 0.5
        np.testing.assert_array_equal(static(rt.tensor(x)).numpy(), x + 1)
        np.testing.assert_array_equal(last.numpy(), x * 3 if x.sum() > 0 else x)
        static(rt.tensor(-x - 1))                    # the same Program, the other branch: stored after the run
        np.testing.assert_array_equal(last.numpy(), -x - 1)
    assert _walks() == before
    last = None


def test_the_benchmark_runs(capsys):
    retrace_globals.main(["--items", "1000", "--retraces", "3"])
    assert "ratio:" in capsys.readouterr().out


NESTED = {"a": {"b": None}, "n": [[0]]}
CYCLE = [1.0]
CYCLE.append(CYCLE)


def write_nested(x):
    NESTED["a"]["b"] = x * 2          # a traced value two levels down a global the function names
    return x + CYCLE[0]               # a global that holds itself: searched once, not forever


def test_a_traced_value_deep_in_a_named_global_is_found():
    static = to_static(write_nested)
    for n in (2, 3):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(static(rt.tensor(x)).numpy(), x + 1)
        np.testing.assert_array_equal(NESTED["a"]["b"].numpy(), x * 2)
        static(rt.tensor(x + 5))                     # a cache hit: the stored value is this run's
        np.testing.assert_array_equal(NESTED["a"]["b"].numpy(), (x + 5) * 2)
    NESTED["a"]["b"] = None
