"""Ports: small model code as PyTorch users write it (recurrences, masks, softmax, per-column writes).

Oracle: the same function run eagerly; see peers.like_eager (three calls: same input, another, same again).
"""
import numpy as np
import pytest

import runtime as rt
from runtime import nn

from .peers import like_eager


def s(v, dtype=np.float32):
    return np.asarray(v, dtype)


X = (s([[1.5, -2.5, 3.0], [0.5, 1.0, -1.0]]),)
Y = (s([[-0.5, 4.0, -3.5], [2.0, 2.0, 2.0]]),)
W = rt.tensor(np.arange(9, dtype=np.float32).reshape(3, 3) / 10)

def residual_tanh_with_tensor_rescale(x):
    h = x @ W
    for _ in range(3):
        h = rt.tanh(h @ W) + h
        if rt.mean(h) > 1:
            h = h / 2
    return h
def causal_mask_softmax(x):
    scores = x @ x.T
    mask = rt.triu(rt.ones_like(scores), k=1) > 0
    scores = rt.where(mask, -1e9, scores)
    return nn.functional.softmax(scores, axis=-1)
def rnn_over_time_steps(x):
    b, t = x.shape
    h = rt.zeros((b,))
    outs = []
    for i in range(t):
        h = rt.tanh(x[:, i] + h * 0.5)
        outs.append(h)
    return rt.stack(outs, axis=1)
def stable_softmax(x):
    m = x.max(axis=1, keepdims=True)
    e = rt.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)
def clip_and_normalize(x):
    y = x * 1
    y = rt.clip(y, -1, 1)
    n = rt.sqrt((y ** 2).sum(axis=-1, keepdims=True))
    return y / (n + 1e-6)
def best_row_none_start(x):
    best = None
    for row in x:
        if best is None or rt.sum(row) > rt.sum(best):
            best = row
    return best
def rotate_rows_python_loop(x):
    k = 0
    while k < x.shape[0]:
        x = rt.concat([x[1:], x[:1]], axis=0)
        k += 1
    return x
def leaky_relu_per_column_write(x):
    out = x
    for i in range(x.shape[1]):
        col = out[:, i]
        out[:, i] = rt.where(col > 0, col, 0.1 * col)
    return out
def argmax_gather(x):
    idx = rt.argmax(x, axis=1)
    return rt.take_along_axis(x, idx[:, None], axis=1), idx
def python_float_loss_accumulator(x):
    loss = 0.0
    for i in range(x.shape[0]):
        loss = loss + ((x[i] - 1) ** 2).mean()
    return loss / x.shape[0]

CASES = [
    residual_tanh_with_tensor_rescale,
    causal_mask_softmax,
    rnn_over_time_steps,
    stable_softmax,
    clip_and_normalize,
    best_row_none_start,
    rotate_rows_python_loop,
    leaky_relu_per_column_write,
    argmax_gather,
    python_float_loss_accumulator,
]


@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_like_eager(fn):
    like_eager(fn, X, Y)
