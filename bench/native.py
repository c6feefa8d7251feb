"""The native tier against the NumPy plan and the hand-written NumPy floor, one process, one core.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c 0 python -m bench.native [--cpu] [--only=NAME] [results.json]

Each workload runs three ways: `numpy` (the floor), `dy2static` (to_static, the NumPy plan) and
`dy2static native` (to_static with DY2STATIC_NATIVE=1 when it traced: its fused chains compiled by
runtime/native/). The two static variants must give the same bits, checked before timing; the table
gives median µs per call and the ratio to the floor. The workloads: W3 (the while-loop RNN: the
whole loop one native function), W5 (GELU over 1M float32), GELU over 1K float32 (a chain where the
per-call cost, not memory, dominates), and the real-model loops of bench/models.py: R1 greedy GRU
decoding, R2 beam search, R3 NMS, R4 the masked LSTM, and an ACT-style halting loop (a step repeated
until its halting probabilities add up to 0.99; `native regions` says which loops ran native and why the
others did not); W3 and R1 traced with a dynamic batch dim, at batch 1 and 16 (`--only=dynamic`: these alone;
`--only=NAME` keeps the workloads whose name holds NAME). With --cpu the times are the thread's CPU time (`time.thread_time`), not wall time: on a
machine shared with other processes, what their time slices add to every variant's wall time (in
proportion to how long a call runs) is left out.
"""
import json
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import runtime as rt  # noqa: E402
from runtime import native  # noqa: E402
from runtime.native.numpy_loops import same_bits  # noqa: E402
from transpiler import to_static  # noqa: E402

from . import models as M, timing, workloads as W  # noqa: E402


def _static(fn, args, on, fast_math=False, spec=None):
    """fn converted (for `spec`, a list of InputSpecs, where given), traced now with the native tier (and
    fast_math) on or off (read when it traces)."""
    settings = {native.ENV: "1" if on else "0", native.FAST_MATH_ENV: "1" if fast_math else "0",
                native.tiering.ENV: "0"}        # steady state: compile at once, not once hot
    before = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        static = to_static(fn, input_spec=spec)
        static(*args)
        native.wait()                   # its chains compiled in the background: time them native
    finally:
        for k, v in before.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    return static


def _leaves(result):
    return [t.numpy() for t in (result if isinstance(result, (tuple, list)) else [result])]


def variants(fn, args, floor, fast_math=False, spec=None):
    off, on = _static(fn, args, False, spec=spec), _static(fn, args, True, spec=spec)
    for a, b in zip(_leaves(off(*args)), _leaves(on(*args))):
        if not same_bits(np.asarray(a), np.asarray(b)):
            raise AssertionError(f"{fn.__name__}: the native tier's bits differ from the NumPy plan's")
    found = {"numpy": floor, "dy2static": lambda: off(*args), "dy2static native": lambda: on(*args)}
    if fast_math:           # approximations: close, not the same bits
        fast = _static(fn, args, True, fast_math=True)
        if not np.allclose(fast(*args).numpy(), off(*args).numpy(), rtol=1e-5, atol=1e-6):
            raise AssertionError(f"{fn.__name__}: fast_math results are not close to the NumPy plan's")
        found["dy2static fast_math"] = lambda: fast(*args)
    return found


def workloads():
    x, u, w, b = W.rnn_weights()
    xt, ut, wt, bt = (rt.tensor(a) for a in (x, u, w, b))
    found = {"W3 while_rnn": variants(W.make_rt_rnn(ut, wt, bt), (xt,), lambda: W.numpy_rnn(x, u, w, b))}
    g = W._rng().standard_normal(W.GELU_N).astype(np.float32)
    found["W5 gelu_1m"] = variants(W.rt_gelu, (rt.tensor(g),), lambda: W.numpy_gelu(g), fast_math=True)
    small = g[:1000].copy()
    found["gelu_1k"] = variants(W.rt_gelu, (rt.tensor(small),), lambda: W.numpy_gelu(small), fast_math=True)
    found.update(model_loops())
    found.update(dynamic_batch())
    return found


DYNAMIC_BATCHES = (1, 16)


def numpy_rnn_batch(x, u, w, b):
    """W3's loop over a batch of sequences, x (T, batch, IN): the floor of its dynamic-batch variant."""
    h = np.zeros((x.shape[1], W.RNN_HIDDEN), np.float32)
    i = 0
    while i < W.RNN_T and h.sum() < 1e9:
        h = np.tanh(x[i] @ u + h @ w + b)
        i += 1
    return h


def make_rt_rnn_batch(u, w, b):
    def rnn(x):
        h = rt.zeros((x.shape[1], W.RNN_HIDDEN))
        i = 0
        while i < W.RNN_T and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h
    return rnn


def dynamic_batch():
    """W3 and R1 traced once with a dynamic batch dim (InputSpec None) and run at batch sizes
    DYNAMIC_BATCHES: their native loops compile one kernel per batch size (runtime/native/dynamic.py)."""
    found = {}
    _, u, w, b = W.rnn_weights()
    rnn = make_rt_rnn_batch(*(rt.tensor(a) for a in (u, w, b)))
    rnn_spec = [rt.InputSpec([W.RNN_T, None, W.RNN_IN], "float32", name="x")]
    rt.seed(0)
    decoder = M.Decoder()
    decoder.out.bias.data[M.EOS] = -1.0
    weights = M._decoder_weights(decoder)
    decode_spec = [rt.InputSpec([None, M.HIDDEN], "float32", name="h")]
    for batch in DYNAMIC_BATCHES:
        x = W._rng().standard_normal((W.RNN_T, batch, W.RNN_IN)).astype(np.float32)
        found[f"W3 dynamic batch {batch}"] = variants(rnn, (rt.tensor(x),), lambda x=x: numpy_rnn_batch(x, u, w, b),
                                                      spec=rnn_spec)
        h = (W._rng().standard_normal((batch, M.HIDDEN)) * 0.5).astype(np.float32)
        found[f"R1 dynamic batch {batch}"] = variants(decoder.forward, (rt.tensor(h),),
                                                      lambda h=h: M.numpy_decode(h, *weights), spec=decode_spec)
    return found


ACT_HIDDEN, ACT_MAX = 64, 40


def act_weights():
    rng = W._rng()
    w = (rng.standard_normal((ACT_HIDDEN, ACT_HIDDEN)) / np.sqrt(ACT_HIDDEN)).astype(np.float32)
    b = (rng.standard_normal(ACT_HIDDEN) * 0.1).astype(np.float32)
    wh = (rng.standard_normal((ACT_HIDDEN, 1)) * 0.05).astype(np.float32)
    x = rng.standard_normal((1, ACT_HIDDEN)).astype(np.float32)
    return x, w, b, wh


def numpy_act(x, w, b, wh):
    """Adaptive computation time: repeat the step, weigh each state by its halting probability."""
    h, out = x, np.zeros_like(x)
    halt, n = np.float32(0.0), 0
    while halt < 0.99 and n < ACT_MAX:
        h = np.tanh(h @ w + b)
        p = (1 / (1 + np.exp(-(h @ wh - 3.0)))).sum()
        out = out + p * h
        halt = halt + p
        n += 1
    return out, n


def make_rt_act(w, b, wh):
    def act(x):
        h, out = x, rt.zeros_like(x)
        halt, n = rt.zeros((), dtype="float32"), 0
        while halt < 0.99 and n < ACT_MAX:
            h = rt.tanh(h @ w + b)
            p = rt.sum(1 / (1 + rt.exp(-(h @ wh - 3.0))))
            out = out + p * h
            halt = halt + p
            n += 1
        return out, n
    return act


def model_loops():
    """The real-model loops (bench/models.py), each with its NumPy floor."""
    found = {}
    h = (W._rng().standard_normal((1, M.HIDDEN)) * 0.5).astype(np.float32)
    rt.seed(0)
    decoder = M.Decoder()
    decoder.out.bias.data[M.EOS] = -1.0         # EOS unlikely: decoding runs close to MAX_LEN steps
    weights = M._decoder_weights(decoder)
    found["R1 greedy_decode"] = variants(decoder.forward, (rt.tensor(h),), lambda: M.numpy_decode(h, *weights))
    rt.seed(1)
    beam = M.Beam()
    beam_weights = M._decoder_weights(beam)
    found["R2 beam_search"] = variants(beam.forward, (rt.tensor(h),), lambda: M.numpy_beam(h, *beam_weights))
    boxes, scores = M._boxes()
    found["R3 nms"] = variants(M.rt_nms, (rt.tensor(boxes), rt.tensor(scores)), lambda: M.numpy_nms(boxes, scores))
    rt.seed(2)
    lstm = M.nn.LSTM(M.LSTM_IN, M.LSTM_HIDDEN)
    rng = W._rng()
    x = rng.standard_normal((M.LSTM_T, M.LSTM_N, M.LSTM_IN)).astype(np.float32)
    lengths = rng.integers(M.LSTM_T // 2, M.LSTM_T + 1, M.LSTM_N).astype(np.int64)
    lstm_weights = [M._np(p) for p in (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0)]

    def masked(x, lengths):
        out, (h, c) = lstm(x, lengths=lengths)
        return out, h[0]
    found["R4 masked_lstm"] = variants(masked, (rt.tensor(x), rt.tensor(lengths)),
                                       lambda: M.numpy_lstm(x, lengths, *lstm_weights))
    ax, aw, ab, awh = act_weights()
    found["ACT halting loop"] = variants(make_rt_act(*(rt.tensor(a) for a in (aw, ab, awh))), (rt.tensor(ax),),
                                         lambda: numpy_act(ax, aw, ab, awh))
    return found


def main():
    if not native.available():
        print(f"native tier unavailable: {native.why_unavailable()}")
        return 1
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    print(f"CPUs this process may run on: {affinity}")
    args = [a for a in sys.argv[1:] if a != "--cpu" and not a.startswith("--only=")]
    only = [a[len("--only="):] for a in sys.argv[1:] if a.startswith("--only=")]
    clock = time.thread_time if "--cpu" in sys.argv[1:] else time.perf_counter
    print(f"clock: {clock.__name__}")
    native.reset_stats()
    found = dynamic_batch() if only == ["dynamic"] else workloads()
    found = {name: vs for name, vs in found.items() if not only or any(o in name for o in only)}
    print(f"native regions: {native.stats()}")
    report = {}
    for name, vs in found.items():
        medians, _ = timing.measure(vs, repeats=9, target_s=0.1 if "1m" in name else 0.05, clock=clock)
        report[name] = medians
        print(f"{name}:")
        for label, us in medians.items():
            print(f"    {label:<20} {us:>10.1f} µs  {us / medians['numpy']:5.2f}×")
    if args:
        with open(args[0], "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
