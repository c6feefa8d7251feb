"""PyTorch's losses and distances beyond the core ones of `composite.py` (kl_div, the margin and embedding
losses, Poisson and Gaussian NLL, pairwise_distance, pdist), with torch.nn.functional's signatures.

Each is a composition of registered ops, so it runs eagerly, traces into a Program and differentiates
through those ops' rules.
"""
import math

import numpy as np

from .. import ops
from ..ops import activations, nn_ops
from .composite import _reduce


def _norm(x, p, dim=-1, keepdim=False):
    return ops.decompositions.vector_norm(x, axis=dim, keepdims=keepdim, ord=p)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log(target) - input), input holding log-probabilities; 'batchmean' divides the sum by the
    batch size (PyTorch's mathematically right mean)."""
    if log_target:
        pointwise = ops.exp(target) * (target - input)
    else:
        safe = ops.where(target > 0, target, ops.ones_like(target))
        pointwise = ops.where(target > 0, target * ops.log(safe), ops.zeros_like(target)) - target * input
    if reduction == "batchmean":
        batch = input.shape[0] if input.ndim else 1
        return ops.sum(pointwise) / batch
    return _reduce(pointwise, reduction, "kl_div")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    return _reduce(nn_ops.relu(-target * (input1 - input2) + margin), reduction, "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1."""
    loss = ops.where(target == 1, input, ops.zeros_like(input)) + \
        ops.where(target == -1, nn_ops.relu(margin - input), ops.zeros_like(input))
    return _reduce(loss, reduction, "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), computed without overflow."""
    return _reduce(activations.softplus(-target * input), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The binary cross entropy of each class's logit, averaged over the classes (the last dim)."""
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(ops.mean(loss, axis=-1), reduction, "multilabel_soft_margin_loss")


def _log_sigmoid(x):
    return -activations.softplus(-x)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim."""
    return _norm(x1 - x2 + eps, p, -1, keepdim)


def pdist(input, p=2.0):
    """The distances between every pair of rows i < j of an (N, M) tensor, in row-major order."""
    n = input.shape[0]
    first, second = np.triu_indices(n, 1)
    rows = ops.take(input, ops.creation.tensor(first.astype(np.int64)), axis=0)
    others = ops.take(input, ops.creation.tensor(second.astype(np.int64)), axis=0)
    return _norm(rows - others, p, -1)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0); with `swap` the nearer of the negative's
    distances to anchor and positive."""
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(nn_ops.relu(d_pos - d_neg + margin), reduction, "triplet_margin_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    eps = 1e-12                                         # PyTorch's: inside the square root of each norm
    dot = ops.sum(input1 * input2, axis=-1)
    cos = dot / ops.sqrt((ops.sum(input1 * input1, axis=-1) + eps) * (ops.sum(input2 * input2, axis=-1) + eps))
    zero = ops.zeros_like(cos)
    loss = ops.where(target == 1, 1 - cos, zero) + ops.where(target == -1, nn_ops.relu(cos - margin), zero)
    return _reduce(loss, reduction, "cosine_embedding_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); `full` adds Stirling's
    approximation of log(target!) where target > 1."""
    loss = ops.exp(input) - target * input if log_input else input - target * ops.log(input + eps)
    if full:
        safe = ops.where(target > 1, target, ops.ones_like(target))
        stirling = safe * ops.log(safe) - safe + 0.5 * ops.log(2 * math.pi * safe)
        loss = loss + ops.where(target > 1, stirling, ops.zeros_like(stirling))
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(var) + (input - target)^2 / var), var clamped to eps (without a gradient there); a var with
    one dim fewer than input (or a last dim of 1) is shared along input's last dim."""
    if var.ndim == input.ndim - 1:
        var = ops.expand_dims(var, axis=-1)
    var = var + ops.stop_gradient(ops.clip(var, eps, None) - var)     # clamp the value, keep var's gradient
    loss = 0.5 * (ops.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


__all__ = ["kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "pairwise_distance", "pdist", "triplet_margin_loss",
           "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss"]
