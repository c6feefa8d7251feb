"""The workloads: each builds its variants (hand-written NumPy floor, dy2static static and
eager, peers) over the same data and checks that they agree.

Static variants assert that their Program holds the graph op the source's tensor
control flow must become (`while` for W3, `cond` for W4): a benchmark of a loop
that was silently unrolled or run in Python would measure the wrong thing.
"""
import numpy as np

import runtime as rt
from transpiler import to_static

from . import peers

SEED = 0
MLP_DIMS = (512, 256, 128, 2)
RNN_T, RNN_IN, RNN_HIDDEN = 50, 64, 128
GELU_N = 1_000_000
KMEANS_N, KMEANS_D, KMEANS_K, KMEANS_ITERS = 5000, 2, 8, 50


def _rng():
    return np.random.default_rng(SEED)


def _to(device, arrays):
    return [rt.tensor(a, device=device) for a in arrays]


def _numpy_of(device):
    if device == "gpu":
        import cupy
        return cupy
    return np


def floor_name(device):
    """The floor is hand-written NumPy on the CPU, hand-written CuPy on the GPU."""
    return "numpy" if device == "cpu" else "cupy"


def _sync_of(device):
    if device == "gpu":
        import cupy
        return cupy.cuda.get_current_stream().synchronize
    return None


def _assert_ops(static, args, must=(), must_not=()):
    types = {op.type for op in static.get_program(*args).ops()}
    for t in must:
        assert t in types, f"the Program should hold a '{t}' op: {sorted(types)}"
    for t in must_not:
        assert t not in types, f"the Program should not hold a '{t}' op"
    return sorted(types)


def _check_close(results, floor, rtol=1e-4, atol=1e-5):
    want = np.asarray(results[floor])
    bad = {}
    for name, got in results.items():
        try:
            np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)
        except AssertionError as e:
            bad[name] = str(e).splitlines()[-1][:120]
    if bad:
        raise AssertionError(f"variants disagree with {floor}: {bad}")


def _host(value):
    if isinstance(value, (tuple, list)):
        return tuple(_host(v) for v in value)
    if isinstance(value, rt.Tensor):
        return value.numpy()
    if hasattr(value, "get"):
        return value.get()
    if hasattr(value, "detach"):
        return value.detach().numpy()
    return np.asarray(value)


# --- W1 / W2: MLP ------------------------------------------------------------------------------

def mlp_weights():
    rng = _rng()
    ws = []
    for fan_in, fan_out in zip(MLP_DIMS, MLP_DIMS[1:]):
        ws.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
        ws.append((rng.standard_normal(fan_out) * 0.1).astype(np.float32))
    return ws


def numpy_mlp(x, w1, b1, w2, b2, w3, b3, xp=np):
    h = xp.maximum(x @ w1 + b1, 0)
    h = xp.maximum(h @ w2 + b2, 0)
    return h @ w3 + b3


def make_rt_mlp(tw):
    w1, b1, w2, b2, w3, b3 = tw

    def mlp(x):
        h = rt.maximum(x @ w1 + b1, 0)
        h = rt.maximum(h @ w2 + b2, 0)
        return h @ w3 + b3
    return mlp


def mlp(batch, device="cpu", eager=False, peer_names=()):
    xp = _numpy_of(device)
    ws = mlp_weights()
    x = _rng().standard_normal((batch, MLP_DIMS[0])).astype(np.float32)
    xw = [xp.asarray(a) for a in [x] + ws]
    tw = _to(device, ws)
    (xt,) = _to(device, [x])
    fn = make_rt_mlp(tw)
    static = to_static(fn)
    variants = {floor_name(device): lambda: numpy_mlp(*xw, xp=xp),
                "dy2static": lambda: static(xt)}
    if eager:
        variants["dy2static eager"] = lambda: fn(xt)
    ops = _assert_ops(static, [xt], must_not=("while", "cond"))
    if device == "cpu":
        variants.update(peers.mlp(x, ws, peer_names))
    return dict(variants=variants, check=lambda r: _check_close(r, next(iter(variants))), ops=ops)


# --- W3: data-dependent while RNN -----------------------------------------------------------------

def rnn_weights():
    rng = _rng()
    u = (rng.standard_normal((RNN_IN, RNN_HIDDEN)) / np.sqrt(RNN_IN)).astype(np.float32)
    w = (rng.standard_normal((RNN_HIDDEN, RNN_HIDDEN)) / np.sqrt(RNN_HIDDEN)).astype(np.float32)
    b = (rng.standard_normal(RNN_HIDDEN) * 0.1).astype(np.float32)
    x = rng.standard_normal((RNN_T, 1, RNN_IN)).astype(np.float32)
    return x, u, w, b


def numpy_rnn(x, u, w, b, xp=np):
    h = xp.zeros((1, RNN_HIDDEN), xp.float32)
    i = 0
    while i < RNN_T and h.sum() < 1e9:
        h = xp.tanh(x[i] @ u + h @ w + b)
        i += 1
    return h


def make_rt_rnn(u, w, b):
    def rnn(x):
        h = rt.zeros((1, RNN_HIDDEN))
        i = 0
        while i < RNN_T and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h
    return rnn


def while_rnn(device="cpu", peer_names=()):
    xp = _numpy_of(device)
    x, u, w, b = rnn_weights()
    arrays = [xp.asarray(a) for a in (x, u, w, b)]
    xt, ut, wt, bt = _to(device, [x, u, w, b])
    static = to_static(make_rt_rnn(ut, wt, bt))
    ops = _assert_ops(static, [xt], must=("while",))
    variants = {floor_name(device): lambda: numpy_rnn(*arrays, xp=xp),
                "dy2static": lambda: static(xt)}
    if device == "cpu":
        variants.update(peers.rnn(x, u, w, b, RNN_T, peer_names))
    return dict(variants=variants, check=lambda r: _check_close(r, next(iter(variants))), ops=ops)


# --- W4: if on a tensor --------------------------------------------------------------------------

def numpy_ifelse(x):
    if x.mean() > 0:
        y = x * 2
    else:
        y = x - 1
    return y


def rt_ifelse(x):
    if x.mean() > 0:
        y = x * 2
    else:
        y = x - 1
    return y


def ifelse_small(peer_names=()):
    x = _rng().standard_normal((64, 64)).astype(np.float32) + 0.01
    (xt,) = _to("cpu", [x])
    static = to_static(rt_ifelse)
    ops = _assert_ops(static, [xt], must=("cond",))
    variants = {"numpy": lambda: numpy_ifelse(x), "dy2static": lambda: static(xt)}
    variants.update(peers.ifelse(x, peer_names))
    return dict(variants=variants, check=lambda r: _check_close(r, "numpy"), ops=ops)


# --- W5: GELU on 1M floats ----------------------------------------------------------------------

def numpy_gelu(x, xp=np):
    """The floor: what a competent NumPy user writes (`x * x * x`: `x ** 3` is libm `powf`)."""
    return 0.5 * x * (1 + xp.tanh(0.79788456 * (x + 0.044715 * (x * x * x))))


def numpy_gelu_naive(x, xp=np):
    """The textbook form, `x ** 3`: a second row, never the floor."""
    return 0.5 * x * (1 + xp.tanh(0.79788456 * (x + 0.044715 * x ** 3)))


def rt_gelu(x):
    return 0.5 * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x ** 3)))


def gelu_1m(device="cpu", peer_names=()):
    xp = _numpy_of(device)
    x = _rng().standard_normal(GELU_N).astype(np.float32)
    xd = xp.asarray(x)
    (xt,) = _to(device, [x])
    static = to_static(rt_gelu)
    ops = _assert_ops(static, [xt])
    floor = floor_name(device)
    variants = {floor: lambda: numpy_gelu(xd, xp=xp), f"{floor} (x ** 3)": lambda: numpy_gelu_naive(xd, xp=xp),
                "dy2static": lambda: static(xt)}
    extra = {}
    if device == "cpu":
        variants.update(peers.gelu(x, peer_names))
        extra["peak_extra_memory_x_input"] = {
            "numpy": peak_memory(lambda: numpy_gelu(x)) / x.nbytes,
            "dy2static": peak_memory(lambda: static(xt)) / x.nbytes}
    return dict(variants=variants, check=lambda r: _check_close(r, floor, rtol=1e-5, atol=1e-6), ops=ops,
                extra=extra)


def peak_memory(fn):
    """Peak bytes allocated (NumPy data included) during one call, above what was live before it."""
    import tracemalloc
    fn()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


# --- k-means to convergence (a tensor `while`; broadcast distances, argmin, one-hot update) -------

def kmeans_data():
    """KMEANS_K Gaussian blobs in KMEANS_D dimensions; the first K points start as centroids."""
    rng = _rng()
    centres = rng.uniform(-10, 10, (KMEANS_K, KMEANS_D))
    x = centres[rng.integers(0, KMEANS_K, KMEANS_N)] + rng.standard_normal((KMEANS_N, KMEANS_D))
    x = x.astype(np.float32)
    return x, x[:KMEANS_K].copy()


def numpy_kmeans(x, c, xp=np):
    ar = xp.arange(KMEANS_K)
    it = 0
    moved = True
    while moved and it < KMEANS_ITERS:
        d = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
        onehot = (d.argmin(1)[:, None] == ar[None, :]).astype(xp.float32)
        new = (onehot.T @ x) / xp.maximum(onehot.sum(0), 1.0)[:, None]
        moved = xp.abs(new - c).max() > 1e-6
        c = new
        it += 1
    return c


def rt_kmeans(x, c):
    ar = rt.arange(KMEANS_K)
    it = 0
    moved = rt.abs(c).max() >= 0
    while moved and it < KMEANS_ITERS:
        d = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
        onehot = (d.argmin(1)[:, None] == ar[None, :]).astype("float32")
        new = (onehot.T @ x) / rt.maximum(onehot.sum(0), 1.0)[:, None]
        moved = rt.abs(new - c).max() > 1e-6
        c = new
        it += 1
    return c


def kmeans(device="cpu"):
    """Static with the default pipeline and without `fuse_elementwise` (the regression of issue 13)."""
    from runtime.passes import DEFAULT_PIPELINE
    xp, floor = _numpy_of(device), floor_name(device)
    x, c = kmeans_data()
    xd, cd = xp.asarray(x), xp.asarray(c)
    xt, ct = _to(device, [x, c])
    static = to_static(rt_kmeans)
    unfused = to_static(rt_kmeans, passes=[p for p in DEFAULT_PIPELINE if p != "fuse_elementwise"])
    ops = _assert_ops(static, [xt, ct], must=("while",))
    variants = {floor: lambda: numpy_kmeans(xd, cd, xp=xp), "dy2static": lambda: static(xt, ct),
                "dy2static no fusion": lambda: unfused(xt, ct)}
    if device == "cpu":
        variants["dy2static eager"] = lambda: rt_kmeans(xt, ct)

    def check(results):
        if device != "cpu":                      # CUDA kernels may contract to FMA: compare to the last bits
            return _check_close(results, floor)
        for name, got in results.items():       # the same float32 steps in the same order: bit-identical
            assert np.array_equal(np.asarray(got), results[floor]), f"{name} differs from {floor}"
    return dict(variants=variants, check=check, ops=ops)


# --- cache-hit overhead ---------------------------------------------------------------------------

def rt_add_one(x):
    return x + 1


def cache_hit():
    x = np.ones(1, np.float32)
    (xt,) = _to("cpu", [x])
    static = to_static(rt_add_one)
    return dict(variants={"numpy": lambda: x + 1, "dy2static": lambda: static(xt)},
                check=lambda r: _check_close(r, "numpy"), ops=_assert_ops(static, [xt]))


WORKLOADS = {
    "mlp_b1": lambda device, peer_names: mlp(1, device, eager=True, peer_names=peer_names),
    "mlp_b256": lambda device, peer_names: mlp(256, device, peer_names=peer_names),
    "while_rnn": lambda device, peer_names: while_rnn(device, peer_names),
    "ifelse_small": lambda device, peer_names: ifelse_small(peer_names),
    "gelu_1m": lambda device, peer_names: gelu_1m(device, peer_names),
    "kmeans": lambda device, peer_names: kmeans(device),
    "cache_hit": lambda device, peer_names: cache_hit(),
}
GPU_WORKLOADS = ("mlp_b256", "while_rnn", "gelu_1m", "kmeans")
LABELS = {"mlp_b1": "W1", "mlp_b256": "W2", "while_rnn": "W3", "ifelse_small": "W4", "gelu_1m": "W5", "kmeans": "R5",
          "cache_hit": "W6b"}


def run_variants_once(variants):
    """Each variant's result on the host, for the agreement check."""
    return {name: _host(fn()) for name, fn in variants.items()}
