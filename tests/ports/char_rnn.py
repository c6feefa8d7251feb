"""A character-level GRU text generator in the style of spro/char-rnn.pytorch
(github.com/spro/char-rnn.pytorch, MIT licence: `model.py`'s CharRNN and `generate.py`'s sampling loop)
and of the Udacity char-RNN notebook's `predict`/`sample` (top-k sampling with `.topk`), written
against today's API (no `Variable`): batch-first training forward, hidden state from
`torch.zeros(self.n_layers, batch, hidden)`, sampling with `torch.multinomial` over a temperature
softmax, optionally restricted to the top k characters."""
import string

import torch
import torch.nn as nn
import torch.nn.functional as F

all_characters = string.printable
n_characters = len(all_characters)


def char_tensor(s):
    tensor = torch.zeros(len(s)).long()
    for c in range(len(s)):
        tensor[c] = all_characters.index(s[c])
    return tensor


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, model="gru", n_layers=1, dropout=0.0):
        super(CharRNN, self).__init__()
        self.model = model.lower()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers

        self.encoder = nn.Embedding(input_size, hidden_size)
        if self.model == "gru":
            self.rnn = nn.GRU(hidden_size, hidden_size, n_layers, dropout=dropout, batch_first=True)
        elif self.model == "lstm":
            self.rnn = nn.LSTM(hidden_size, hidden_size, n_layers, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden):
        batch_size = input.size(0)
        encoded = self.encoder(input)
        output, hidden = self.rnn(encoded, hidden)
        output = self.decoder(output.reshape(-1, self.hidden_size))
        return output.view(batch_size, -1, self.output_size), hidden

    def init_hidden(self, batch_size):
        if self.model == "lstm":
            return (torch.zeros(self.n_layers, batch_size, self.hidden_size),
                    torch.zeros(self.n_layers, batch_size, self.hidden_size))
        return torch.zeros(self.n_layers, batch_size, self.hidden_size)


def sample_next(output, temperature=0.8, top_k=None):
    """The next character's index from the last step's logits (batch, vocab)."""
    logits = output / temperature
    if top_k is not None:
        values, indices = logits.topk(top_k, dim=-1)
        probs = F.softmax(values, dim=-1)
        choice = torch.multinomial(probs, 1)
        return indices.gather(-1, choice)
    probs = F.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1)


@torch.no_grad()
def generate(decoder, prime_str="A", predict_len=100, temperature=0.8, top_k=None):
    hidden = decoder.init_hidden(1)
    prime_input = char_tensor(prime_str).unsqueeze(0)
    predicted = prime_str

    # Use priming string to "build up" hidden state
    for p in range(len(prime_str) - 1):
        _, hidden = decoder(prime_input[:, p:p + 1], hidden)

    inp = prime_input[:, -1:]
    for p in range(predict_len):
        output, hidden = decoder(inp, hidden)
        top_i = sample_next(output[:, -1], temperature, top_k)
        predicted_char = all_characters[top_i.item()]
        predicted += predicted_char
        inp = char_tensor(predicted_char).unsqueeze(0)
    return predicted
