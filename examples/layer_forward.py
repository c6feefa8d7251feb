"""`@to_static` on a Layer's `forward`: one Program serves every batch size.

    python examples/layer_forward.py

`InputSpec([None, 16])` declares the batch dim dynamic, so calls with 1, 7 or
64 rows reuse the one traced Program (cache_size stays 1). The layer's weights
are persistable inputs of the Program, read on every call, never baked in.
"""
import numpy as np

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from transpiler import InputSpec, to_static


class Classifier(nn.Layer):
    def __init__(self, features=16, hidden=32, classes=3):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    @to_static(input_spec=[InputSpec([None, 16], "float32", "x")])
    def forward(self, x):
        h = F.relu(self.fc1(x))
        if h.mean() > 1.0:                  # data-dependent: a `cond` op in the Program
            h = h / h.mean()
        return F.softmax(self.fc2(h), axis=-1)


def main():
    rt.seed(0)
    model = Classifier()
    model.eval()
    rng = np.random.default_rng(0)
    for batch in (1, 7, 64):
        x = rt.tensor(rng.standard_normal((batch, 16)).astype(np.float32))
        probs = model(x).numpy()
        eager = model.forward.rollback()(x).numpy()     # the original Python forward
        np.testing.assert_allclose(probs, eager, rtol=1e-5, atol=1e-6)
        assert np.allclose(probs.sum(axis=-1), 1.0, atol=1e-5)
        print(f"batch {batch:2d} -> output shape {probs.shape}, rows sum to 1, same as eager")
    print(f"cache_size {model.forward.cache_size}")
    print()
    print(model.forward.get_program(InputSpec([None, 16], "float32", "x")))


if __name__ == "__main__":
    main()
