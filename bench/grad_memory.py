"""Peak memory of the backward of a while-RNN: what the forward loop saves for the reverse loop.

A tanh RNN over T steps (a `while` op, T known only at run time) is differentiated with
rt.grad(to_static(...)); the gradient Program runs the forward loop, which pushes the one loop
variable the backward reads (h, N x H floats per step), then the reverse loop. Peak memory
(tracemalloc: NumPy's allocations included) is reported against the forward alone and against
T * N * H * itemsize, the size of the saved states.
Run as `python -m bench.grad_memory [--steps 1000] [--batch 16] [--hidden 64]`.
"""
import argparse
import tracemalloc

import numpy as np

import runtime as rt
from transpiler import InputSpec, to_static


def rnn_loss(h, w, xs):
    t = 0
    while t < xs.shape[0]:
        h = rt.tanh(rt.matmul(h, w) + xs[t])
        t += 1
    return (h * h).sum()


def peak_bytes(fn, *args):
    fn(*args)                                   # trace and compile outside the measurement
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn(*args)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=64)
    a = parser.parse_args()
    rng = np.random.default_rng(0)
    n, hidden, steps = a.batch, a.hidden, a.steps
    spec = [InputSpec([n, hidden]), InputSpec([hidden, hidden]), InputSpec([None, n, hidden])]
    args = [rt.tensor(rng.normal(size=(n, hidden)).astype(np.float32)),
            rt.tensor((rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)),
            rt.tensor(rng.normal(size=(steps, n, hidden)).astype(np.float32))]
    forward = to_static(rnn_loss, input_spec=spec)
    gradient = rt.grad(to_static(rnn_loss, input_spec=spec), argnums=(0, 1, 2))
    saved = steps * n * hidden * 4
    f_peak, g_peak = peak_bytes(forward, *args), peak_bytes(gradient, *args)
    mib = 1 << 20
    print(f"while-RNN T={steps} N={n} H={hidden} float32")
    print(f"  forward peak      {f_peak / mib:8.2f} MiB")
    print(f"  gradient peak     {g_peak / mib:8.2f} MiB   (inputs xs: {steps * n * hidden * 4 / mib:.2f} MiB, "
          f"its cotangent the same)")
    print(f"  saved h states    {saved / mib:8.2f} MiB   (T x N x H x 4 bytes)")


if __name__ == "__main__":
    main()
