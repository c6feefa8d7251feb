"""The random generator behind layer initialization and dropout: `rt.seed(n)` makes both reproducible."""
import numpy as np

_state = {"rng": np.random.default_rng(0)}


def seed(n):
    """Seed dy2static's random generator (layer initialization, dropout)."""
    _state["rng"] = np.random.default_rng(n)


def default_rng():
    return _state["rng"]


def get_state():
    """The generator's state now: `replaying(state)` draws the same numbers again."""
    return _state["rng"].bit_generator.state


def snapshot():
    """The generator and its state now: `restore` undoes every draw since, and an `rt.seed` (a failed trace)."""
    generator = _state["rng"]
    return generator, generator.bit_generator.state


def restore(saved):
    generator, state = saved
    generator.bit_generator.state = state
    _state["rng"] = generator


class replaying:
    """Within the block the generator starts from `state` (what it drew then, it draws again); after it,
    the generator is the one before, untouched: a replay takes nothing from the program's sequence."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        self.saved = _state["rng"]
        _state["rng"] = np.random.Generator(type(self.saved.bit_generator)())
        _state["rng"].bit_generator.state = self.state

    def __exit__(self, *exc):
        _state["rng"] = self.saved
