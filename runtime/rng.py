"""The random generator behind layer initialization and dropout: `rt.seed(n)` makes both reproducible."""
import numpy as np

_state = {"rng": np.random.default_rng(0)}


def seed(n):
    """Seed dy2static's random generator (layer initialization, dropout)."""
    _state["rng"] = np.random.default_rng(n)


def default_rng():
    return _state["rng"]
