"""Fused chains over big arrays run block by block (runtime/codegen/chains.py): the same bits as
the whole-array chain and as NumPy, on sizes around block boundaries, broadcast, strided and
mixed-dtype inputs; no blocks where they cannot win (the whole-array chain fits the cache,
broadcast steps, dynamic shapes); memory O(block) beyond the result.

Blocks are made small here (`small_blocks`) so boundaries fall at sizes a test can afford.
"""

import numpy as np
import pytest

import runtime as rt
from bench.workloads import peak_memory
from runtime.backends import get_backend
from runtime.codegen import chains
from runtime.codegen.plan import compile_plan
from runtime import passes

BLOCK_BYTES = 4096                   # 1024 float32 elements
UNIT = BLOCK_BYTES // 4


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(chains, "BLOCK_BYTES", BLOCK_BYTES)
    monkeypatch.setattr(chains, "CACHE_BYTES", 4 * BLOCK_BYTES)


def _plans(fn, specs):
    """(blocked plan, whole-array plan) of fn's optimized Program; the caller sets the block sizes."""
    program = passes.run_passes(rt.trace(fn, [rt.InputSpec(s, d) for s, d in specs])[0], None)
    blocked = compile_plan(program, get_backend("cpu"))
    min_bytes = chains.CACHE_BYTES
    chains.CACHE_BYTES = 1 << 62
    try:
        whole = compile_plan(program, get_backend("cpu"))
    finally:
        chains.CACHE_BYTES = min_bytes
    assert "for start" not in whole.source, whole.source
    return blocked, whole


def _is_blocked(plan):
    return "for start in range(" in plan.source


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.tobytes() == want.tobytes()        # the same bits: -0.0 and NaN payloads included


def gelu(x, m=rt):
    return 0.5 * x * (1 + m.tanh(0.79788456 * (x + 0.044715 * (x * x * x))))


def transcendental(x, m=rt):
    return m.exp(m.sin(x) * 0.5) - m.log(m.abs(x) + 1.0) / (x * x + 2.0)


def clipped(x, m=rt):
    return m.maximum(m.minimum(x * 3.0 - 1.0, 2.0), -0.5) * m.sqrt(m.abs(x))


CHAINS = [gelu, transcendental, clipped]
# sizes around the boundaries of 1024-element blocks: one short of, at and past a multiple,
# the smallest blocked size, and a last block of one element
SIZES = [2 * UNIT, 2 * UNIT + 1, 3 * UNIT - 1, 3 * UNIT, 5 * UNIT + 7, 7 * UNIT + 1]


@pytest.mark.parametrize("fn", CHAINS, ids=[f.__name__ for f in CHAINS])
@pytest.mark.parametrize("n", SIZES)
def test_blocked_chain_is_bit_for_bit_the_whole_array_chain_and_numpy(small_blocks, fn, n):
    blocked, whole = _plans(fn, [([n], "float32")])
    assert _is_blocked(blocked), blocked.source
    x = (np.random.default_rng(n).standard_normal(n) * 3).astype(np.float32)
    x[:3] = [0.0, -0.0, np.nan]
    with np.errstate(all="ignore"):
        want = fn(x, np)
        _exact(whole(x)[0], want)
        _exact(blocked(x)[0], want)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_blocked_chain_over_other_float_dtypes(small_blocks, dtype):
    n = 4 * UNIT + 3
    blocked, whole = _plans(gelu, [([n], dtype)])
    assert _is_blocked(blocked), blocked.source
    x = np.random.default_rng(0).standard_normal(n).astype(dtype)
    _exact(blocked(x)[0], whole(x)[0])
    _exact(blocked(x)[0], gelu(x, np))


def test_mixed_dtypes_promote_as_the_whole_array_chain_does(small_blocks):
    def f(x, k, h):
        return (x * k + 1.5) * h - k           # float32 * int32 -> float64; float16 joins it

    n = 3 * UNIT + 5
    blocked, whole = _plans(f, [([n], "float32"), ([n], "int32"), ([n], "float16")])
    assert _is_blocked(blocked), blocked.source
    rng = np.random.default_rng(1)
    args = (rng.standard_normal(n).astype(np.float32), rng.integers(-9, 9, n).astype(np.int32),
            rng.standard_normal(n).astype(np.float16))
    _exact(blocked(*args)[0], whole(*args)[0])
    _exact(blocked(*args)[0], f(*args))


def test_boolean_steps_and_where_like_chains(small_blocks):
    def f(x):
        return (x > 0.25) * x + (x < -1.0) * 2.0

    n = 4 * UNIT + 1
    blocked, whole = _plans(f, [([n], "float32")])
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    _exact(blocked(x)[0], whole(x)[0])
    _exact(blocked(x)[0], f(x))


def test_broadcast_inputs_are_passed_whole_and_sliced_by_rows(small_blocks):
    def f(x, row, col, one_row, s):
        return ((x * row + col) * one_row - s) * x

    n, d = 205, 24                     # rows of 24: blocks of 40 rows (960 = 15 * 64 elements), the last 5
    specs = [([n, d], "float32"), ([d], "float32"), ([n, 1], "float32"), ([1, d], "float32"), ([], "float32")]
    blocked, whole = _plans(f, specs)
    assert _is_blocked(blocked), blocked.source
    sliced = {name for name in ("x0", "x1", "x2", "x3", "x4") if f"{name}[start" in blocked.source}
    assert sliced == {"x0", "x2"}, blocked.source
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32) for s, _ in specs]
    _exact(blocked(*args)[0], whole(*args)[0])
    _exact(blocked(*args)[0], f(*args))


def test_block_boundaries_fall_on_whole_rows_and_aligned_elements(small_blocks):
    def f(x):
        return rt.tanh(x * 0.5) + x

    blocked, _ = _plans(f, [([300, 7], "float32")])
    assert _is_blocked(blocked), blocked.source
    # rows of 7: 1024 // 7 = 146 rows, rounded down to 128 so each block is 896 = 14 * 64 elements
    assert "range(0, 300, 128)" in blocked.source, blocked.source


def test_strided_inputs(small_blocks):
    def f(x, y):
        return rt.exp(x * 0.5) * y + x

    n, d = 160, 16
    blocked, whole = _plans(f, [([n, d], "float32"), ([n, d], "float32")])
    assert _is_blocked(blocked), blocked.source
    rng = np.random.default_rng(4)
    big = rng.standard_normal((d, 2 * n)).astype(np.float32)
    x = big.T[::2]                            # (n, d), neither C nor F contiguous
    y = rng.standard_normal((n, 2 * d)).astype(np.float32)[:, ::2]
    assert not x.flags.c_contiguous and not y.flags.c_contiguous
    _exact(blocked(x, y)[0], whole(x, y)[0])
    _exact(blocked(x, y)[0], f(x, y))
    _exact(blocked(x, y)[0], blocked(np.ascontiguousarray(x), np.ascontiguousarray(y))[0])


def test_inplace_chain_writes_each_block_into_the_dying_input(small_blocks):
    def f(x, w):
        return gelu(x @ w)

    n = 512                           # 8192 float32: the matmul's result dies in the chain
    blocked, whole = _plans(f, [([n, 16], "float32"), ([16, 16], "float32")])
    assert _is_blocked(blocked) and "xp_empty((512, 16)" not in blocked.source, blocked.source
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((n, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    keep = x.copy(), w.copy()
    _exact(blocked(x, w)[0], whole(x, w)[0])
    _exact(blocked(x, w)[0], gelu(x @ w, np))
    np.testing.assert_array_equal(x, keep[0])
    np.testing.assert_array_equal(w, keep[1])


def test_result_read_by_other_ops_and_returned(small_blocks):
    def f(x):
        y = gelu(x)
        return y, y.sum(), y[5:9] * 2.0

    n = 3 * UNIT + 17
    blocked, whole = _plans(f, [([n], "float32")])
    assert _is_blocked(blocked), blocked.source
    x = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    for got, want in zip(blocked(x), whole(x)):
        _exact(got, want)


def test_no_blocks_where_they_cannot_win(small_blocks):
    specs = {
        "one_block": ([2 * UNIT - 1], "float32"),         # fewer than two blocks
        "dynamic": ([None], "float32"),                     # unknown extent: no static blocks
        "one_long_row": ([1, 8 * UNIT], "float32"),        # a row is more than a block
        "zero_d": ([], "float32"),
    }
    for name, spec in specs.items():
        blocked, _ = _plans(gelu, [spec])
        assert not _is_blocked(blocked), (name, blocked.source)

    def broadcast_step(x, b):
        return x + rt.exp(b * 2.0)          # exp(b * 2) is a (d,) step: it would rerun per block
    blocked, _ = _plans(broadcast_step, [([8 * UNIT, 4], "float32"), ([4], "float32")])
    assert not _is_blocked(blocked), blocked.source


def test_blocks_only_where_the_whole_array_chain_outgrows_the_cache(monkeypatch, small_blocks):
    monkeypatch.setattr(chains, "CACHE_BYTES", 64 * 1024)
    n = 6000                          # 24 KB a float32 array
    short, _ = _plans(lambda x: (x + 1.0) * x, [([n], "float32")])           # x and the result: 48 KB
    assert not _is_blocked(short), short.source
    long, whole = _plans(gelu, [([n], "float32")])                         # x, a buffer, the result: 72 KB
    assert _is_blocked(long), long.source
    x = np.random.default_rng(8).standard_normal(n).astype(np.float32)
    _exact(long(x)[0], whole(x)[0])


def test_gelu_over_1m_blocks_by_default_with_one_scratch_buffer():
    n = 1_000_000
    blocked, whole = _plans(gelu, [([n], "float32")])
    assert _is_blocked(blocked), blocked.source
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    _exact(blocked(x)[0], whole(x)[0])
    _exact(blocked(x)[0], gelu(x, np))
    peak = peak_memory(lambda: blocked(x))
    # the result, one block-sized scratch buffer, and small change
    assert peak <= x.nbytes + chains.BLOCK_BYTES + 16 * 1024, peak / x.nbytes
