"""CNN and MLP against PyTorch eager and onnxruntime: `python -m bench.cnn [--quick] [--json PATH]`.

Pinned to one CPU, one thread (bench/pin.py), each workload's variants interleaved (bench/timing.py):

- digits CNN (8x8 images, conv 1->16 and 16->32 with 3x3 kernels and padding 1, each followed by
  ReLU and a 2x2 max-pool, then 128 -> 64 -> 10, Adam): one training epoch (1347 images in batches
  of 64, the last one of 3, the size of scikit-learn's digits training split; the data is a fixed
  random draw of that shape: scikit-learn is not a dependency) as a static training step, against
  the same epoch in PyTorch eager with the same weights; and prediction (argmax of the logits) of the
  450 test images in one call, and of one image (per-call costs), static under `rt.no_grad()` against
  PyTorch eager under `torch.no_grad()`.
- examples/mlp.py's MLP (nn.Linear 512 -> 256 -> 128 -> 2 with ReLUs, batch 256) exported with
  `transpiler.export_onnx` and run by onnxruntime (one thread), against the same static forward run by
  our executor under `rt.no_grad()` (inference; "static on the tape" is the call with grad on);
  `--only mlp_parts` times its parts in NumPy (each GEMM with the weight (out, in) and (in, out), the
  bias and ReLU passes).

A variant that does not import (torch in the project's venv, onnxruntime in torch's) is skipped with
its reason. Targets: static <= 1.0x PyTorch eager (epoch, prediction), <= 1.0x onnxruntime (MLP).
"""
import argparse
import json
import os
import sys
import tempfile

from .pin import pin

PINNED_CPU = pin()      # before NumPy or a peer starts a thread

import numpy as np  # noqa: E402

from . import timing  # noqa: E402

TRAIN, TEST, BATCH = 1347, 450, 64


def _optional(name):
    try:
        module = __import__(name)
    except Exception as e:  # noqa: BLE001 - absent, or a broken install
        return None, f"{type(e).__name__}: {e}"
    return module, None


def digits_data():
    """Fixed random images and labels in the digits' shapes (values in [0, 1], as data / 16)."""
    rng = np.random.default_rng(0)
    x = (rng.integers(0, 17, (TRAIN + TEST, 1, 8, 8)) / 16.0).astype(np.float32)
    y = rng.integers(0, 10, TRAIN + TEST).astype(np.int64)
    return x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]


def ours_cnn(nn):
    return nn.Sequential(nn.Conv2D(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                         nn.Conv2D(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                         nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def torch_cnn(torch):
    tnn = torch.nn
    return tnn.Sequential(tnn.Conv2d(1, 16, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                          tnn.Conv2d(16, 32, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                          tnn.Flatten(), tnn.Linear(128, 64), tnn.ReLU(), tnn.Linear(64, 10))


def cnn_variants(torch):
    """({variant: one epoch}, {"450" / "1": {variant: one prediction of that many test images}},
    {variant: first epoch's mean loss}, (the static training step, the static prediction))."""
    import runtime as rt
    from runtime import nn
    from runtime.nn import functional as F
    from transpiler import InputSpec, to_static
    x, y, x_test, _ = digits_data()
    batches = [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, TRAIN, BATCH)]
    rt.seed(0)
    model = ours_cnn(nn)
    opt = rt.optim.Adam(model.parameters(), lr=1e-3)

    @to_static(input_spec=[InputSpec([None, 1, 8, 8], "float32", "x"), InputSpec([None], "int64", "y")])
    def train_step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    @to_static(input_spec=[InputSpec([None, 1, 8, 8], "float32", "x")])
    def predict(xb):
        return rt.argmax(model(xb), axis=-1)

    ours_batches = [(rt.tensor(a), rt.tensor(b)) for a, b in batches]
    tx_test, tx_one = rt.tensor(x_test), rt.tensor(x_test[:1])

    def static_epoch():
        return sum(float(train_step(a, b)) * len(b) for a, b in ours_batches) / TRAIN

    epochs = {"static": static_epoch}
    def static_predict(images):
        with rt.no_grad():                    # inference, as PyTorch's under torch.no_grad()
            return predict(images)

    predictions = {"static": lambda: static_predict(tx_test)}
    one = {"static": lambda: static_predict(tx_one)}
    net = None
    if torch is not None:
        net = torch_cnn(torch)
        net.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    first = {"static": static_epoch()}
    if torch is not None:
        topt = torch.optim.Adam(net.parameters(), lr=1e-3)
        torch_batches = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in batches]
        px_test, px_one = torch.from_numpy(x_test), torch.from_numpy(x_test[:1])

        def torch_epoch():
            total = 0.0
            for a, b in torch_batches:
                loss = torch.nn.functional.cross_entropy(net(a), b)
                loss.backward()
                topt.step()
                topt.zero_grad()
                total += loss.item() * len(b)
            return total / TRAIN

        def torch_predict():
            with torch.no_grad():
                return net(px_test).argmax(-1)

        def torch_predict_one():
            with torch.no_grad():
                return net(px_one).argmax(-1)

        first["torch eager"] = torch_epoch()
        epochs["torch eager"] = torch_epoch
        predictions["torch eager"] = torch_predict
        one["torch eager"] = torch_predict_one
        agree = np.mean(predict(tx_test).numpy() == torch_predict().numpy())
        first["predictions agreeing"] = float(agree)
    return epochs, {"450": predictions, "1": one}, first, (train_step, predict)


def ours_mlp(nn, F, sizes=(512, 256, 128, 2)):
    """examples/mlp.py's MLP: nn.Linear layers (weights (out, in), as PyTorch) with ReLUs."""
    class MLP(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(sizes[0], sizes[1])
            self.fc2 = nn.Linear(sizes[1], sizes[2])
            self.fc3 = nn.Linear(sizes[2], sizes[3])

        def forward(self, x):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))
    return MLP()


def mlp_variants(ort, batch=256):
    """{variant: one call} for examples/mlp.py's MLP (512 -> 256 -> 128 -> 2): our static forward under
    `rt.no_grad()` (inference, as onnxruntime's), the same call on the tape (the parameters require grad),
    and onnxruntime on its `transpiler.export_onnx` model (float32, batch 256)."""
    import runtime as rt
    import transpiler
    from runtime import nn
    from runtime.nn import functional as F
    from transpiler import InputSpec, to_static
    rt.seed(0)
    model = ours_mlp(nn, F)
    spec = [InputSpec([None, 512], "float32", "x")]
    static = to_static(model.forward)            # as examples/mlp.py: traced for the batch it is called with
    x = np.random.default_rng(0).standard_normal((batch, 512)).astype(np.float32)
    xt = rt.tensor(x)

    def inference():
        with rt.no_grad():
            return static(xt)

    variants = {"static": inference, "static on the tape": lambda: static(xt)}
    if ort is not None:
        folder = tempfile.mkdtemp()
        path = transpiler.export_onnx(model.forward, os.path.join(folder, "mlp.onnx"), input_spec=spec)
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        ours, theirs = inference().numpy(), session.run(None, {name: x})[0]
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        variants["onnxruntime"] = lambda: session.run(None, {name: x})
    return variants


def mlp_parts(batch=256):
    """{part: one call}: where the MLP's time goes, each part in NumPy as the plan calls it — the whole
    forward with the weights as `nn.Linear` keeps them ((out, in): `x @ w.T`, OpenBLAS's transposed-B
    GEMM) and stored (in, out) (`x.dot(w)`, the plain GEMM), each layer's GEMM in both layouts, and
    the passes over the first layer's (batch, 256) result that onnxruntime fuses into its GEMM."""
    import runtime as rt
    from runtime import nn
    from runtime.nn import functional as F
    rt.seed(0)
    model = ours_mlp(nn, F)
    x = np.random.default_rng(0).standard_normal((batch, 512)).astype(np.float32)
    layers = [(fc.weight.numpy(), fc.bias.numpy()) for fc in (model.fc1, model.fc2, model.fc3)]
    stored = [(np.ascontiguousarray(w.T), b) for w, b in layers]

    def forward(weights, transposed):
        h = x
        for i, (w, b) in enumerate(weights):
            h = h @ w.T if transposed else h.dot(w)
            h += b
            if i < 2:
                np.maximum(h, 0, out=h)
        return h

    assert np.array_equal(forward(layers, True), forward(stored, False)), "the two layouts' bits differ"
    inputs, h = [x], x
    for w, b in layers[:2]:
        h = np.maximum(h @ w.T + b, 0)
        inputs.append(h)
    out1 = inputs[1].copy()
    parts = {"forward, w (out, in)": lambda: forward(layers, True), "forward, w (in, out)": lambda: forward(stored, False)}
    for i, ((w, _), (wt, _), a) in enumerate(zip(layers, stored, inputs), 1):
        parts[f"GEMM {i} x @ w.T"] = lambda a=a, w=w: a @ w.T
        parts[f"GEMM {i} x.dot(w_in_out)"] = lambda a=a, wt=wt: a.dot(wt)
    parts["bias 1 (+= in place)"] = lambda: np.add(out1, layers[0][1], out=out1)
    parts["ReLU 1 (in place)"] = lambda: np.maximum(out1, 0, out=out1)
    return parts


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.cnn", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--only", nargs="*", choices=("epoch", "predict", "mlp", "mlp_parts"),
                   default=("epoch", "predict", "mlp"))
    args = p.parse_args(argv)
    torch, torch_why = _optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
    ort, ort_why = _optional("onnxruntime")
    where = f"pinned to CPU {PINNED_CPU}" if PINNED_CPU is not None else "not pinned"
    report = {"pinned_cpu": PINNED_CPU, "torch": torch_why or torch.__version__,
              "onnxruntime": ort_why or ort.__version__, "native": os.environ.get("DY2STATIC_NATIVE", ""),
              "results": {}}
    print(f"CNN / MLP, {where}, one thread; torch: {report['torch']}; onnxruntime: {report['onnxruntime']}")
    repeats, target = (5, 0.05) if args.quick else (11, 0.3)
    work = {}
    if {"epoch", "predict"} & set(args.only):
        epochs, predictions, first, _ = cnn_variants(torch)
        print("first epoch's loss / agreement: " + ", ".join(f"{k} {v:.6f}" for k, v in first.items()))
        report["first"] = first
        if "epoch" in args.only:
            work["digits CNN epoch"] = (epochs, "torch eager")
        if "predict" in args.only:
            work["digits CNN predict 450"] = (predictions["450"], "torch eager")
            work["digits CNN predict 1"] = (predictions["1"], "torch eager")
    if "mlp" in args.only:
        work["MLP 512-256-128-2 batch 256"] = (mlp_variants(ort), "onnxruntime")
    if "mlp_parts" in args.only:
        parts = mlp_parts()
        if ort is not None:
            parts["onnxruntime"] = mlp_variants(ort)["onnxruntime"]
        work["MLP 512-256-128-2 batch 256, in parts"] = (parts, "onnxruntime")
    for name, (variants, peer) in work.items():
        medians, samples = timing.measure(variants, repeats=repeats, target_s=target)
        ratio = medians["static"] / medians[peer] if peer in medians and "static" in medians else None
        report["results"][name] = {"median_us": medians, "spread_us": {k: [min(v), max(v)] for k, v in samples.items()},
                                   f"static / {peer}": ratio}
        print(f"\n{name}:")
        for variant, us in medians.items():
            versus = f"  {us / medians[peer]:.2f}x {peer}" if peer in medians and variant != peer else ""
            print(f"  {variant:<24} {us:>12,.1f} µs{versus}")
        if ratio is not None:
            print(f"  static / {peer}: {ratio:.2f}x (target <= 1.0: {'ok' if ratio <= 1.0 else 'MISS'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
