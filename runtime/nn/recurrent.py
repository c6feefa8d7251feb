"""Recurrent layers: RNNCell, GRUCell, LSTMCell, and multi-layer RNN, GRU, LSTM over a time axis.

Parameter names, shapes, gate order and initialization are PyTorch's, so
`load_state_dict` of a torch layer's arrays copies weights across. The time loop
is `rt.while_loop` on a tensor counter: eagerly a Python loop, traced one `while`
op whatever the sequence length (the Program is not unrolled, and a dynamic
time dim works). Per-sequence `lengths` freeze each sequence's state after its
end and zero its outputs there, as packed sequences do in PyTorch.
"""
import math

from .. import ops as rt
from ..control_flow import while_loop
from ..ops.creation import tensor
from ..tracer import Tracer
from . import composite, init
from .functional import dropout
from .layer import Layer, new_parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _uniform(shape, hidden_size):
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size else 0.0
    return init.uniform_(new_parameter(shape), -bound, bound)


def _step(mode, gi, state, w_hh, b_hh):
    """One time step of one layer: the new state ((h,) or (h, c)) from the input's projection gi."""
    if mode == "LSTM":
        return composite.lstm_cell_from_input_gates(gi, state[0], state[1], w_hh, b_hh)
    if mode == "GRU":
        return (composite.gru_cell_from_input_gates(gi, state[0], w_hh, b_hh),)
    nonlinearity = "tanh" if mode == "RNN_TANH" else "relu"
    return (composite.rnn_cell_from_input_gates(gi, state[0], w_hh, b_hh, nonlinearity),)


def _append(outs, value):
    """outs + [value]; once the loop has made outs a tensor array (a traced while), an array append."""
    if isinstance(outs, Tracer):
        return rt.array_append(outs, value)
    return outs + [value]


def _reverse(x, lengths):
    """Each sequence of x (T, N, C) reversed in time within its length (padding stays where it is)."""
    if lengths is None:
        return rt.flip(x, axis=0)
    t = rt.expand_dims(rt.arange(x.shape[0]), axis=1)                  # (T, 1)
    n = rt.expand_dims(rt.astype(lengths, "int64"), axis=0)             # (1, N)
    index = rt.where(t < n, n - 1 - t, t)                               # (T, N)
    return rt.take_along_axis(x, rt.expand_dims(index, axis=-1), axis=0)


# --- cells ---------------------------------------------------------------------------------------------

class _Cell(Layer):
    mode = None

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__()
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        gates = _GATES[self.mode] * self.hidden_size
        self.weight_ih = _uniform((gates, self.input_size), self.hidden_size)
        self.weight_hh = _uniform((gates, self.hidden_size), self.hidden_size)
        if bias:
            self.bias_ih = _uniform((gates,), self.hidden_size)
            self.bias_hh = _uniform((gates,), self.hidden_size)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def _weights(self):
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def _cell_step(self, x, state):
        w_ih, w_hh, b_ih, b_hh = self._weights()
        return _step(self.mode, composite.linear(x, w_ih, b_ih), state, w_hh, b_hh)

    def _zeros(self, x):
        batch = x.shape[:-1]
        return rt.zeros(tuple(batch) + (self.hidden_size,), dtype=x.dtype)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class RNNCell(_Cell):
    """h' = tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh"):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias)

    def forward(self, x, h=None):
        return self._cell_step(x, (self._zeros(x) if h is None else h,))[0]


class GRUCell(_Cell):
    mode = "GRU"

    def forward(self, x, h=None):
        return self._cell_step(x, (self._zeros(x) if h is None else h,))[0]


class LSTMCell(_Cell):
    mode = "LSTM"

    def forward(self, x, hx=None):
        """Returns (h', c')."""
        h, c = (self._zeros(x), self._zeros(x)) if hx is None else hx
        return self._cell_step(x, (h, c))


# --- multi-layer, over time ----------------------------------------------------------------------------

class _Recurrent(Layer):
    mode = None

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = int(input_size), int(hidden_size), int(num_layers)
        self.bias, self.batch_first, self.dropout = bool(bias), bool(batch_first), float(dropout)
        self.bidirectional = bool(bidirectional)
        self._directions = ("", "_reverse") if self.bidirectional else ("",)
        gates = _GATES[self.mode] * self.hidden_size
        for k in range(self.num_layers):
            width = self.input_size if k == 0 else self.hidden_size * len(self._directions)
            for suffix in self._directions:
                setattr(self, f"weight_ih_l{k}{suffix}", _uniform((gates, width), self.hidden_size))
                setattr(self, f"weight_hh_l{k}{suffix}", _uniform((gates, self.hidden_size), self.hidden_size))
                if bias:
                    setattr(self, f"bias_ih_l{k}{suffix}", _uniform((gates,), self.hidden_size))
                    setattr(self, f"bias_hh_l{k}{suffix}", _uniform((gates,), self.hidden_size))

    def _weights(self, k, suffix=""):
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        return tuple(getattr(self, f"{n}_l{k}{suffix}", None) for n in names)

    def _run(self, x, hx, lengths):
        """x (T, N, C) time-major; hx a tuple of (layers * directions, N, H) states, ordered as PyTorch's
        (layer 0 forward, layer 0 reverse, layer 1 forward, ...). Returns (output, final states)."""
        n_state = 2 if self.mode == "LSTM" else 1
        if hx is None:
            zeros = rt.zeros((self.num_layers * len(self._directions), x.shape[1], self.hidden_size), dtype=x.dtype)
            hx = (zeros,) * n_state
        finals = [[] for _ in range(n_state)]
        layer_input = x
        for k in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(self._directions):
                state = tuple(h[k * len(self._directions) + d] for h in hx)
                seq = layer_input if not d else _reverse(layer_input, lengths)
                out, state = self._scan(seq, state, self._weights(k, suffix), lengths)
                outputs.append(out if not d else _reverse(out, lengths))
                for i, s in enumerate(state):
                    finals[i].append(s)
            layer_input = outputs[0] if len(outputs) == 1 else rt.concat(outputs, axis=-1)
            if self.dropout and self.training and k < self.num_layers - 1:
                layer_input = dropout(layer_input, self.dropout, True)
        return layer_input, tuple(rt.stack(f) for f in finals)

    def _scan(self, x, state, weights, lengths):
        mode = self.mode
        w_ih, w_hh, b_ih, b_hh = weights
        gates = composite.linear(x, w_ih, b_ih)    # every step's input projection in one matmul, as PyTorch

        def cond(t, state, outs):
            return t < x.shape[0]

        def body(t, state, outs):
            new = _step(mode, gates[t], state, w_hh, b_hh)
            out = new[0]
            if lengths is not None:
                alive = rt.expand_dims(t < lengths, axis=-1)
                new = tuple(rt.where(alive, a, b) for a, b in zip(new, state))
                out = rt.where(alive, out, 0.0)
            return t + 1, new, _append(outs, out)

        _, state, outs = while_loop(cond, body, (tensor(0), tuple(state), []))
        return rt.stack(outs), state

    def forward(self, x, hx=None, lengths=None):
        if self.batch_first:
            x = rt.permute_dims(x, (1, 0, 2))
        if hx is not None and self.mode != "LSTM":
            hx = (hx,)
        output, finals = self._run(x, hx, lengths)
        if self.batch_first:
            output = rt.permute_dims(output, (1, 0, 2))
        return (output, finals) if self.mode == "LSTM" else (output, finals[0])

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.batch_first:
            text += ", batch_first=True"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


class RNN(_Recurrent):
    """Elman RNN: (output (T, N, H), h_n (layers, N, H)); nonlinearity 'tanh' or 'relu'."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional)


class GRU(_Recurrent):
    """GRU: (output, h_n)."""
    mode = "GRU"


class LSTM(_Recurrent):
    """LSTM: (output, (h_n, c_n)); hx, when given, is the pair (h_0, c_0)."""
    mode = "LSTM"
