"""An MLP 512 -> 256 -> 128 -> 2 run eagerly and as a static Program: same outputs, and the time per call.

    python examples/mlp.py [--batch 64] [--calls 50] [--device cpu|gpu]

Eager mode runs each op as it is called; `to_static(model.forward)` converts the
method, traces it once into a Program and afterwards runs only the compiled plan.
"""
import argparse
import statistics
import time

import numpy as np

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from transpiler import to_static


class MLP(nn.Layer):
    def __init__(self, sizes=(512, 256, 128, 2)):
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.fc2 = nn.Linear(sizes[1], sizes[2])
        self.fc3 = nn.Linear(sizes[2], sizes[3])

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return self.fc3(h)


def median_ms(fn, x, calls, device):
    """Median wall time of one call, in milliseconds (after two warm-up calls)."""
    sync = rt.get_backend(device).synchronize
    for _ in range(2):
        fn(x)
    sync()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(x)
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--calls", type=int, default=50, help="calls timed per mode (the median is shown)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    args = parser.parse_args()

    rt.seed(0)
    model = MLP()
    if args.device == "gpu":
        model.to("gpu")
    x = rt.tensor(np.random.default_rng(0).standard_normal((args.batch, 512)).astype(np.float32),
                  device=args.device)

    static_forward = to_static(model.forward)           # same weights: the Program reads the layer's parameters
    eager_out = model(x).numpy()
    static_out = static_forward(x).numpy()
    diff = float(np.max(np.abs(eager_out - static_out)))
    np.testing.assert_allclose(static_out, eager_out, rtol=1e-5, atol=1e-5)

    print(f"MLP 512 -> 256 -> 128 -> 2, batch {args.batch}, device {args.device}")
    print(f"output shape: {tuple(static_out.shape)}")
    print(f"max |eager - static| = {diff:.1e}: outputs match")
    eager_ms = median_ms(model, x, args.calls, args.device)
    static_ms = median_ms(static_forward, x, args.calls, args.device)
    print(f"eager : {eager_ms:8.3f} ms/call (median of {args.calls})")
    print(f"static: {static_ms:8.3f} ms/call (median of {args.calls})")
    print(f"traced signatures: {static_forward.cache_size}")


if __name__ == "__main__":
    main()
