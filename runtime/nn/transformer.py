"""nn.TransformerDecoderLayer, nn.TransformerDecoder and nn.Transformer, with PyTorch's parameters, defaults,
state_dict keys and masks, composed of MultiheadAttention, Linear, LayerNorm and Dropout."""
import copy
import math

from .. import ops as rt
from . import init
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer, feed_forward_activation
from .container import LayerList
from .layer import Layer
from .layers import Dropout, LayerNorm, Linear


class TransformerDecoderLayer(Layer):
    """Self-attention, attention over the encoder's memory, then a feed-forward block, each with dropout, a
    residual and LayerNorm (post-norm by default, norm_first=True for pre-norm)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1, self.dropout2, self.dropout3 = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.activation = feed_forward_activation("TransformerDecoderLayer", activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._self_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._memory_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                       memory_is_causal)
            x = x + self._feed_forward(self.norm3(x))
        else:
            x = self.norm1(x + self._self_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._memory_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._feed_forward(x))
        return x

    def _self_block(self, x, mask, padding, is_causal):
        out, _ = self.self_attn(x, x, x, key_padding_mask=padding, need_weights=False, attn_mask=mask,
                                is_causal=bool(is_causal))
        return self.dropout1(out)

    def _memory_block(self, x, memory, mask, padding, is_causal):
        out, _ = self.multihead_attn(x, memory, memory, key_padding_mask=padding, need_weights=False, attn_mask=mask,
                                     is_causal=bool(is_causal))
        return self.dropout2(out)

    def _feed_forward(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Layer):
    """`num_layers` copies of `decoder_layer` applied in turn over the same memory, then `norm` when given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = LayerList([copy.deepcopy(decoder_layer) for _ in range(int(num_layers))])
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Layer):
    """An encoder stack and a decoder stack (each ending in a LayerNorm), weights xavier-uniform initialized,
    as torch.nn.Transformer."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        options = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                       layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first, bias=bias)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **options), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **options), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, bool(batch_first)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The (sz, sz) float mask that hides later positions: -inf above the diagonal, 0 elsewhere."""
        return rt.triu(rt.full((sz, sz), -math.inf, dtype=dtype or "float32"), k=1)


__all__ = ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]
