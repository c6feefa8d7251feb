"""Train an MLP on scikit-learn's handwritten digits with a whole training step as one Program.

    python examples/train_digits.py [--epochs N] [--out DIR]     (needs scikit-learn: pip install -e '.[train]')

`train_step` runs the forward pass, `loss.backward()`, `opt.step()` and
`opt.zero_grad()`; under `@to_static` it is traced once into one Program that
computes the loss, the gradients and the Adam update, and every call writes the
new parameters and optimizer state into the same Tensors. The first epoch runs
the same step eagerly (the optimizer state carries over), so the two can be
timed against each other. The trained model is saved with `transpiler.save`
and loaded back for inference, without this file's source.
"""
import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # 64x128 matrices: BLAS threads only wait on each other
import numpy as np  # noqa: E402

import runtime as rt  # noqa: E402
import transpiler  # noqa: E402
from runtime import nn  # noqa: E402
from runtime.nn import functional as F  # noqa: E402
from transpiler import InputSpec, to_static  # noqa: E402

BATCH = 64


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def load_data():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)


rt.seed(0)
model = MLP()
opt = rt.optim.Adam(model.parameters(), lr=1e-2)


def train_step(x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


static_train_step = to_static(train_step, input_spec=[InputSpec([None, 64], "float32", "x"),
                                                      InputSpec([None], "int64", "y")])


@to_static(input_spec=[InputSpec([None, 64], "float32", "x")])
def predict(x):
    return rt.argmax(model(x), axis=-1)


def progress(epoch, epochs, done, total, loss):
    """A one-line progress bar on stderr (redrawn in place on a terminal)."""
    if not sys.stderr.isatty() and done < total:
        return
    width = 24
    bar = "#" * (width * done // total) + "-" * (width - width * done // total)
    end = "\n" if done == total else ""
    sys.stderr.write(f"\repoch {epoch:2d}/{epochs} [{bar}] {done}/{total} loss {loss:.4f}{end}")
    sys.stderr.flush()


def run_epoch(step, x, y, rng, epoch, epochs):
    order = rng.permutation(len(x))
    batches = range(0, len(x), BATCH)
    start = time.perf_counter()
    total = 0.0
    for k, i in enumerate(batches, 1):
        idx = order[i:i + BATCH]
        loss = step(rt.tensor(x[idx]), rt.tensor(y[idx]))
        total += float(loss) * len(idx)
        progress(epoch, epochs, k, len(batches), total / min(i + BATCH, len(x)))
    return time.perf_counter() - start, total / len(x)


def accuracy(predicted, y):
    return float(np.mean(np.asarray(predicted) == y))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=int(os.environ.get("DIGITS_EPOCHS", 30)))
    parser.add_argument("--out", help="folder to save the model in (default: a temporary folder)")
    args = parser.parse_args()
    x_train, x_test, y_train, y_test = load_data()
    print(f"digits: {len(x_train)} training and {len(x_test)} test images of 8x8, MLP 64 -> 128 -> 64 -> 10, Adam")
    rng = np.random.default_rng(0)
    eager_s, loss = run_epoch(train_step, x_train, y_train, rng, 1, args.epochs)
    print(f"epoch  1 (eager) : loss {loss:.4f}, {eager_s * 1e3:7.1f} ms")
    static_times = []
    for epoch in range(2, args.epochs + 1):
        seconds, loss = run_epoch(static_train_step, x_train, y_train, rng, epoch, args.epochs)
        static_times.append(seconds)
        print(f"epoch {epoch:2d} (static): loss {loss:.4f}, {seconds * 1e3:7.1f} ms"
              + (" (includes the trace)" if epoch == 2 else ""))
    steady = float(np.median(static_times[1:] or static_times))
    print(f"time per epoch: eager {eager_s * 1e3:.1f} ms, static {steady * 1e3:.1f} ms "
          f"({eager_s / steady:.1f}x faster); training step traced {static_train_step.cache_size} time(s)")
    acc = accuracy(predict(rt.tensor(x_test)).numpy(), y_test)
    print(f"test accuracy: {acc:.4f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(args.out or tmp, "digits")
        transpiler.save(predict, path)
        loaded = transpiler.load(path)
        reloaded = accuracy(loaded(x=x_test).numpy(), y_test)
    print(f"saved and reloaded with transpiler.save/load: test accuracy {reloaded:.4f}"
          + (" (same)" if reloaded == acc else " (DIFFERENT)"))


if __name__ == "__main__":
    main()
