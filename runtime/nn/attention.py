"""MultiheadAttention and TransformerEncoderLayer, with PyTorch's parameters and defaults.

Attention is composed of matmul/softmax ops (see composite.py); masks follow
PyTorch: boolean True (or -inf when additive) means "may not attend", and
`key_padding_mask` (N, S) masks padded keys.
"""
import copy
import math

import numpy as np

from .. import ops as rt
from . import init
from .functional import dropout, gelu, linear, relu, softmax
from .container import LayerList
from .layer import Layer, new_parameter
from .layers import Dropout, LayerNorm, Linear


def _is_bool(mask):
    return np.dtype(mask.dtype) == np.bool_


def _additive(mask, dtype):
    """A mask as an additive float mask (0 where allowed, -inf where not)."""
    if _is_bool(mask):
        return rt.where(mask, -math.inf, 0.0).astype(dtype)
    return mask


class MultiheadAttention(Layer):
    """Attention over num_heads heads: in_proj_weight (3E, E), in_proj_bias (3E), out_proj (Linear E->E)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        self.embed_dim, self.num_heads, self.dropout = int(embed_dim), int(num_heads), float(dropout)
        self.head_dim, self.batch_first = self.embed_dim // self.num_heads, bool(batch_first)
        self.in_proj_weight = init.xavier_uniform_(new_parameter((3 * self.embed_dim, self.embed_dim)))
        if bias:
            self.in_proj_bias = new_parameter((3 * self.embed_dim,))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(self.embed_dim, self.embed_dim, bias=bias)
        if bias:
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """(output, weights): output like query; weights (N, L, S), or None when need_weights=False."""
        if self.batch_first:
            query, key, value = (rt.permute_dims(t, (1, 0, 2)) for t in (query, key, value))
        L, N, E = query.shape
        S = key.shape[0]
        w_q, w_k, w_v = rt.split(self.in_proj_weight, 3, axis=0)
        b_q, b_k, b_v = rt.split(self.in_proj_bias, 3) if self.in_proj_bias is not None else (None,) * 3
        q, k, v = (linear(t, w, b) for t, w, b in ((query, w_q, b_q), (key, w_k, b_k), (value, w_v, b_v)))
        q, k, v = (self._heads(t, n, N) for t, n in ((q, L), (k, S), (v, S)))      # (N, heads, len, head_dim)
        mask = None
        if is_causal and attn_mask is None:
            attn_mask = rt.triu(rt.ones((L, S), dtype="bool"), k=1)
        if attn_mask is not None:
            mask = _additive(attn_mask, q.dtype)
        if key_padding_mask is not None:
            pad = rt.reshape(_additive(key_padding_mask, q.dtype), (N, 1, 1, S))
            mask = pad if mask is None else mask + pad
        scores = rt.matmul(q, rt.matrix_transpose(k)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        weights = softmax(scores, axis=-1)
        if self.dropout and self.training:
            weights = dropout(weights, self.dropout, True)
        out = rt.matmul(weights, v)                                                  # (N, heads, L, head_dim)
        out = rt.reshape(rt.permute_dims(out, (2, 0, 1, 3)), (L, N, E))
        out = self.out_proj(out)
        if self.batch_first:
            out = rt.permute_dims(out, (1, 0, 2))
        if not need_weights:
            return out, None
        return out, (rt.mean(weights, axis=1) if average_attn_weights else weights)

    def _heads(self, t, length, batch):
        return rt.permute_dims(rt.reshape(t, (length, batch, self.num_heads, self.head_dim)), (1, 2, 0, 3))

    def extra_repr(self):
        return f"{self.embed_dim}, num_heads={self.num_heads}"


def feed_forward_activation(layer, activation):
    """A Transformer layer's `activation=`: "relu", "gelu" or a callable, as PyTorch takes it."""
    if activation not in ("relu", "gelu") and not callable(activation):
        raise ValueError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got {activation!r}")
    return {"relu": relu, "gelu": gelu}.get(activation, activation)


class TransformerEncoderLayer(Layer):
    """Self-attention then a feed-forward block, each with dropout, a residual and LayerNorm (post-norm
    by default, norm_first=True for pre-norm); activation "relu" or "gelu"."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = feed_forward_activation("TransformerEncoderLayer", activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._attention(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._feed_forward(self.norm2(x))
        else:
            x = self.norm1(x + self._attention(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._feed_forward(x))
        return x

    def _attention(self, x, mask, padding, is_causal):
        out, _ = self.self_attn(x, x, x, key_padding_mask=padding, need_weights=False, attn_mask=mask,
                                is_causal=is_causal)
        return self.dropout1(out)

    def _feed_forward(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))



class TransformerEncoder(Layer):
    """`num_layers` copies of `encoder_layer` applied in turn, then `norm` when given (PyTorch's
    nn.TransformerEncoder; its state_dict keys `layers.0...`, `norm...`)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = LayerList([copy.deepcopy(encoder_layer) for _ in range(int(num_layers))])
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)
