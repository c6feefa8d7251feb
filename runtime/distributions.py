"""`rt.distributions.Categorical`: PyTorch's categorical distribution (sample, log_prob, entropy).

Written with runtime ops (sampling with `rt.multinomial`), so it works eagerly and in traced code;
`log_prob` and `entropy` are differentiable in the logits or probabilities.
"""
import math

import numpy as np

from . import ops
from .ops.creation import asarray
from .torch_functions import multinomial


class Categorical:
    """Categories 0..K-1 over the last dim of `probs` (non-negative, normalized here) or `logits`
    (unnormalized log-probabilities); the leading dims are the batch shape."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: give exactly one of probs or logits")
        if probs is not None:
            self.probs = probs / ops.sum(probs, axis=-1, keepdims=True)
            self.logits = ops.log(ops.clip(self.probs, _tiny(self.probs), None))
        else:
            self.logits = logits - ops.logsumexp(logits, axis=-1, keepdims=True)
            self.probs = ops.exp(self.logits)
        self.batch_shape = tuple(self.probs.shape[:-1])
        self._num_events = self.probs.shape[-1]

    @property
    def param_shape(self):
        return tuple(self.probs.shape)

    def sample(self, sample_shape=()):
        """Category indices of shape sample_shape + batch_shape (int64)."""
        shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        n = math.prod(shape)
        rows = ops.reshape(self.probs, (-1, self._num_events))
        drawn = multinomial(rows, max(n, 1), replacement=True)                # (batch, n)
        drawn = ops.permute_dims(drawn, (1, 0))[:n]                            # (n, batch)
        return ops.reshape(drawn, shape + self.batch_shape)

    def log_prob(self, value):
        """log P(value) for category indices `value` (broadcast against the batch shape)."""
        value = ops.astype(asarray(value), "int64")
        shape = tuple(ops.broadcast_arrays(value, self.logits[..., 0])[0].shape)
        logits = ops.broadcast_to(self.logits, shape + (self._num_events,))
        index = ops.expand_dims(ops.broadcast_to(value, shape), axis=-1)
        return ops.take_along_axis(logits, index, axis=-1)[..., 0]

    def entropy(self):
        """-sum p log p over the categories (0 log 0 = 0)."""
        p_log_p = ops.where(self.probs > 0, self.probs * self.logits, 0.0)
        return -ops.sum(p_log_p, axis=-1)

    @property
    def mean(self):
        raise NotImplementedError("a Categorical has no mean (its values are labels), as in PyTorch")

    @property
    def mode(self):
        return ops.argmax(self.probs, axis=-1)


def _tiny(x):
    return float(np.finfo(x.dtype).tiny)


__all__ = ["Categorical"]
