"""Greedy decoding with a GRU that stops early on EOS: a `for` over a Python range with a tensor `break`,
growing a list of tokens. The range unrolls; every step after the first runs under a `cond` on the break
flag, and the tokens become a tensor array whose length depends on the data.

    python examples/greedy_decoder.py

The decoder embeds the last token, steps a GRUCell, picks the most likely next
token with argmax and stops once every sequence has produced EOS. One Program
serves every batch size (`InputSpec([None, 16])`) and every output length.
"""
import numpy as np

import runtime as rt
from runtime import nn
from transpiler import InputSpec, to_static

BOS, EOS = 1, 2


class GreedyDecoder(nn.Layer):
    def __init__(self, vocab=12, hidden=16, max_len=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)
        self.max_len = max_len

    @to_static(input_spec=[InputSpec([None, 16], "float32", "h")])
    def forward(self, h):
        token = rt.full((h.shape[0],), BOS, dtype="int64")
        done = rt.zeros((h.shape[0],), dtype="bool")
        tokens = []
        for _ in range(self.max_len):
            h = self.cell(self.embed(token), h)
            token = rt.where(done, EOS, rt.argmax(self.out(h), axis=-1))
            tokens.append(token)
            done = done | (token == EOS)
            if rt.all(done):             # a tensor break: later steps run under a cond
                break
        return rt.stack(tokens, axis=1)


def main():
    rt.seed(3)
    decoder = GreedyDecoder()
    decoder.out.bias.data[EOS] = 0.4          # make EOS likely enough that decoding stops early sometimes
    rng = np.random.default_rng(0)
    for batch, scale in ((1, 0.1), (4, 1.0), (3, 3.0)):
        h = rt.tensor((rng.standard_normal((batch, 16)) * scale).astype(np.float32))
        tokens = decoder(h).numpy()
        eager = decoder.forward.rollback()(h).numpy()
        np.testing.assert_array_equal(tokens, eager)
        print(f"batch {batch}: {tokens.shape[1]} steps, tokens {tokens.tolist()} (same as eager)")
    print(f"cache_size {decoder.forward.cache_size}")
    program = decoder.forward.get_program(InputSpec([None, 16], "float32", "h"))
    print("op types:", ", ".join(sorted({op.type for op in program.ops()})))


if __name__ == "__main__":
    main()
