"""A whole training step as one Program on CuPy: parameters and optimizer state stay on the GPU and match
the same step on the CPU. Every test is marked `gpu` (skipped without CUDA and CuPy)."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from transpiler import to_static

pytestmark = pytest.mark.gpu


def _trained(device, steps=3):
    rt.seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1D(8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = rt.optim.AdamW(model.parameters(), lr=0.01)

    @to_static
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = rt.tensor(rng.standard_normal((5, 6)).astype(np.float32), device=device)
        y = rt.tensor(rng.integers(0, 3, 5), device=device)
        step(x, y)
    return model, opt, step


def test_training_step_on_the_gpu_matches_the_cpu():
    gpu_model, gpu_opt, step = _trained("gpu")
    cpu_model, cpu_opt, _ = _trained("cpu")
    assert step.cache_size == 1
    for (name, a), (_, b) in zip(gpu_model.state_dict().items(), cpu_model.state_dict().items()):
        assert a.device == "gpu"
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    for state in gpu_opt.state.values():
        assert all(t.device == "gpu" for t in state.values())
