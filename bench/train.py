"""Training steps: `python -m bench.train [--quick]` (pinned to one CPU, one thread).

- digits MLP (64 -> 128 -> 64 -> 10, batch 64, Adam) and a GRU (T=50, batch 16, 32 -> 64, linear head,
  Adam): the whole step (forward, backward, update) as one static Program, the same step eagerly,
  and PyTorch eager (when torch imports; skipped otherwise). Targets: static <= 0.5x our eager,
  static <= 1.0x PyTorch.
- a while-RNN over T=1000 steps (a `while` op with a data-independent but dynamic trip count):
  the peak memory (tracemalloc: NumPy reports its buffers there) of one static forward, and of
  one static value_and_grad (forward that saves what the backward needs + reverse while).
"""
import argparse
import json
import sys
import tracemalloc

from .pin import pin

PINNED_CPU = pin()      # before NumPy or a peer starts a thread

import numpy as np  # noqa: E402

from . import timing  # noqa: E402

TARGETS = {"static / eager": 0.5, "static / torch": 1.0}


def _torch():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - absent, or a broken install
        return None, f"{type(e).__name__}: {e}"
    torch.set_num_threads(1)
    return torch, None


def digits_mlp_steps(torch):
    import runtime as rt
    from runtime import nn
    from runtime.nn import functional as F
    from transpiler import to_static
    rng = np.random.default_rng(0)
    x = rng.random((64, 64), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    layers = lambda: [nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)]  # noqa: E731
    return _steps(rt, lambda: nn.Sequential(*layers()), lambda out, t: F.cross_entropy(out, t), x, y, torch,
                  lambda: torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64),
                                              torch.nn.ReLU(), torch.nn.Linear(64, 10)),
                  lambda out, t: torch.nn.functional.cross_entropy(out, t), to_static)


class _GRUModel:
    """A GRU over (T, N, C) and a linear head on the last hidden state."""

    @staticmethod
    def ours(rt, nn):
        class Net(nn.Layer):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(32, 64)
                self.head = nn.Linear(64, 1)

            def forward(self, x):
                out, h = self.gru(x)
                return self.head(h[0])
        return Net()

    @staticmethod
    def theirs(torch):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = torch.nn.GRU(32, 64)
                self.head = torch.nn.Linear(64, 1)

            def forward(self, x):
                out, h = self.gru(x)
                return self.head(h[0])
        return Net()


def gru_steps(torch):
    import runtime as rt
    from runtime import nn
    from runtime.nn import functional as F
    from transpiler import to_static
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 16, 32)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    return _steps(rt, lambda: _GRUModel.ours(rt, nn), lambda out, t: F.mse_loss(out, t), x, y, torch,
                  lambda: _GRUModel.theirs(torch), lambda out, t: torch.nn.functional.mse_loss(out, t), to_static)


def _steps(rt, make_model, loss_fn, x, y, torch, torch_model, torch_loss, to_static):
    """{variant: zero-argument step} for our eager and static steps (two models made from one seed)
    and PyTorch's eager step with the same weights; plus the losses of each step's first call."""
    rt.seed(0)
    model = make_model()
    opt = rt.optim.Adam(model.parameters(), lr=1e-3)
    rt.seed(0)
    twin = make_model()
    twin_opt = rt.optim.Adam(twin.parameters(), lr=1e-3)
    tx, ty = rt.tensor(x), rt.tensor(y)

    def eager_step():
        loss = loss_fn(model(tx), ty)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    @to_static
    def static_step(xb, yb):
        loss = loss_fn(twin(xb), yb)
        loss.backward()
        twin_opt.step()
        twin_opt.zero_grad()
        return loss

    variants = {"our eager": eager_step, "static": lambda: static_step(tx, ty)}
    if torch is not None:
        net = torch_model()
        net.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in twin.state_dict().items()})
    first = {name: float(fn()) for name, fn in variants.items()}
    if torch is not None:
        topt = torch.optim.Adam(net.parameters(), lr=1e-3)
        px, py = torch.from_numpy(x), torch.from_numpy(y)

        def torch_step():
            loss = torch_loss(net(px), py)
            loss.backward()
            topt.step()
            topt.zero_grad()
            return loss
        variants["torch eager"] = torch_step
        first["torch eager"] = float(torch_step().detach())
    return variants, first, static_step


def rnn_memory(T=1000, N=32, H=64):
    """Peak traced memory (bytes) of one static forward and one static value_and_grad of a while-RNN."""
    import runtime as rt
    from transpiler import InputSpec, to_static

    def rnn(x, w, u):
        h = rt.zeros((x.shape[1], w.shape[1]))
        t = 0
        while t < x.shape[0]:
            h = rt.tanh(x[t] @ w + h @ u)
            t += 1
        return (h * h).sum()

    rng = np.random.default_rng(0)
    x = rt.tensor(rng.standard_normal((T, N, H)).astype(np.float32) * 0.1)
    w = rt.tensor(rng.standard_normal((H, H)).astype(np.float32) * 0.1)
    u = rt.tensor(rng.standard_normal((H, H)).astype(np.float32) * 0.1)
    spec = [InputSpec([None, N, H], "float32", "x"), InputSpec([H, H], "float32", "w"),
            InputSpec([H, H], "float32", "u")]
    forward = to_static(rnn, input_spec=spec)
    both = rt.value_and_grad(forward, argnums=(1, 2))
    out = {"T": T, "N": N, "H": H, "hidden_state_bytes": N * H * 4, "all_states_bytes": T * N * H * 4}
    for name, fn in (("forward", lambda: forward(x, w, u)), ("value_and_grad", lambda: both(x, w, u))):
        fn()
        tracemalloc.start()
        fn()
        out[f"{name}_peak_bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.train", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    torch, why = _torch()
    report = {"pinned_cpu": PINNED_CPU, "torch": why or torch.__version__, "steps": {}}
    where = f"pinned to CPU {PINNED_CPU}" if PINNED_CPU is not None else "not pinned"
    print(f"training steps, {where}, one thread; torch: {report['torch']}")
    for name, build in (("digits MLP", digits_mlp_steps), ("GRU T=50", gru_steps)):
        variants, first, static = build(torch)
        medians, samples = timing.measure(variants, repeats=5 if args.quick else 11,
                                          target_s=0.02 if args.quick else 0.1)
        ratios = {"static / eager": medians["static"] / medians["our eager"]}
        if "torch eager" in medians:
            ratios["static / torch"] = medians["static"] / medians["torch eager"]
        report["steps"][name] = {"median_us": medians, "ratios": ratios, "first_losses": first,
                                 "static_traces": static.cache_size}
        print(f"\n{name}: first-step losses " + ", ".join(f"{k} {v:.6f}" for k, v in first.items()))
        for variant, us in medians.items():
            print(f"  {variant:<12} {us:>10,.0f} µs/step")
        for ratio, value in ratios.items():
            print(f"  {ratio:<15} {value:.2f}x (target <= {TARGETS[ratio]:.1f}: "
                  f"{'ok' if value <= TARGETS[ratio] else 'MISS'})")
    mem = rnn_memory(T=200 if args.quick else 1000)
    report["rnn_memory"] = mem
    print(f"\nwhile-RNN T={mem['T']}, N={mem['N']}, H={mem['H']}: peak {mem['forward_peak_bytes'] / 2**20:.2f} MiB "
          f"forward, {mem['value_and_grad_peak_bytes'] / 2**20:.2f} MiB value_and_grad "
          f"(all T hidden states: {mem['all_states_bytes'] / 2**20:.2f} MiB)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
