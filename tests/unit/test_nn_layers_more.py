"""The second wave of layers and losses: eager == traced (one Program, `while` ops for recurrences),
NumPy oracles where they are short, and PyTorch with copied weights when torch is importable
(an optional cross-check: `pip install torch` and the torch cases run; without it they skip)."""
import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from transpiler import InputSpec, to_static

try:
    import torch
except ImportError:       # the cross-checks skip; everything else runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional cross-check)")
RNG = np.random.default_rng(0)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def traced(layer, *inputs):
    """The layer's forward traced into a Program and run by the executor."""
    specs = [rt.InputSpec(a.shape, a.dtype, f"x{i}") for i, a in enumerate(inputs)]
    program, _, _ = rt.trace(lambda *xs: layer(*xs), specs)
    return program, rt.Executor().run(program, {f"x{i}": a for i, a in enumerate(inputs)})


def first(value):
    return value[0] if isinstance(value, tuple) else value


LAYERS = {
    "conv1d": (lambda: nn.Conv1D(3, 4, 3, stride=2, padding=1), [(2, 3, 9)]),
    "avgpool": (lambda: nn.AvgPool2D(2), [(2, 3, 6, 6)]),
    "conv_transpose": (lambda: nn.ConvTranspose2D(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                       [(2, 4, 5, 4)]),
    "avgpool_pad": (lambda: nn.AvgPool2D(3, stride=2, padding=1, count_include_pad=False), [(1, 2, 7, 7)]),
    "adaptive": (lambda: nn.AdaptiveAvgPool2D((3, 2)), [(2, 3, 7, 5)]),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), [(3, 4, 5)]),
    "batchnorm_eval": (lambda: nn.BatchNorm2D(3).eval(), [(2, 3, 4, 4)]),
    "rnn_cell": (lambda: nn.RNNCell(4, 6), [(3, 4)]),
    "gru_cell": (lambda: nn.GRUCell(4, 6), [(3, 4)]),
    "lstm_cell": (lambda: nn.LSTMCell(4, 6), [(3, 4)]),
    "rnn": (lambda: nn.RNN(4, 5, num_layers=2, nonlinearity="relu"), [(6, 2, 4)]),
    "gru": (lambda: nn.GRU(4, 5, num_layers=2), [(6, 2, 4)]),
    "lstm": (lambda: nn.LSTM(4, 5, batch_first=True), [(2, 6, 4)]),
    "bi_gru": (lambda: nn.GRU(4, 5, num_layers=2, bidirectional=True), [(6, 2, 4)]),
    "mha": (lambda: nn.MultiheadAttention(8, 2), [(4, 2, 8), (5, 2, 8), (5, 2, 8)]),
    "encoder": (lambda: nn.TransformerEncoderLayer(8, 2, 16).eval(), [(4, 2, 8)]),
    "identity": (lambda: nn.Identity(), [(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_traced_matches_eager(name):
    make, shapes = LAYERS[name]
    rt.seed(1)
    layer = make()
    inputs = [arr(*s) for s in shapes]
    eager = first(layer(*[rt.tensor(a) for a in inputs]))
    program, outs = traced(layer, *inputs)
    np.testing.assert_allclose(outs[0].numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
    rt.verify(program)


def test_bidirectional_lengths_reverse_each_sequence_within_its_length():
    lstm = nn.LSTM(3, 4, bidirectional=True)
    x = arr(5, 2, 3)
    out, (h, c) = lstm(rt.tensor(x), lengths=rt.tensor(np.array([5, 3])))
    alone, (h_alone, _) = lstm(rt.tensor(x[:3, 1:2]))       # sequence 1 on its own, 3 steps
    np.testing.assert_allclose(out.numpy()[:3, 1], alone.numpy()[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out.numpy()[3:, 1], 0)
    np.testing.assert_allclose(h.numpy()[:, 1], h_alone.numpy()[:, 0], rtol=1e-5, atol=1e-6)
    program, outs = traced(lambda a, n: lstm(a, lengths=n)[0], x, np.array([5, 3]))
    np.testing.assert_allclose(outs[0].numpy(), out.numpy(), rtol=1e-5, atol=1e-6)
    assert [op.type for op in program.ops()].count("while") == 2


@pytest.mark.parametrize("name", ["rnn", "gru", "lstm", "bi_gru"])
def test_recurrences_are_one_while_op_per_layer_and_take_any_length(name):
    make, shapes = LAYERS[name]
    layer = make()
    static = to_static(layer.forward)
    layers = layer.num_layers * (2 if layer.bidirectional else 1)
    t_axis = 1 if layer.batch_first else 0
    spec = [None] * 3
    spec[2], spec[1 - t_axis] = 4, 2
    program = static.get_program(InputSpec(spec, "float32"))
    assert [op.type for op in program.ops()].count("while") == layers
    for steps in (1, 3, 7):
        shape = list(shapes[0])
        shape[t_axis] = steps
        x = arr(*shape)
        np.testing.assert_allclose(first(static(rt.tensor(x))).numpy(), first(layer(rt.tensor(x))).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_gru_lengths_freeze_finished_sequences():
    gru = nn.GRU(3, 4)
    x = arr(5, 2, 3)
    lengths = np.array([5, 2])
    out, h = gru(rt.tensor(x), lengths=rt.tensor(lengths))
    # sequence 1 ends after 2 steps: its state is what a 2-step run leaves, its later outputs are zero
    out2, h2 = gru(rt.tensor(x[:2, 1:2]))
    np.testing.assert_allclose(h.numpy()[0, 1], h2.numpy()[0, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out.numpy()[2:, 1], 0)
    full, hf = gru(rt.tensor(x[:, 0:1]))
    np.testing.assert_allclose(h.numpy()[0, 0], hf.numpy()[0, 0], rtol=1e-5, atol=1e-6)


def test_losses_against_numpy():
    a, b = arr(4, 3), arr(4, 3)
    ta, tb = rt.tensor(a), rt.tensor(b)
    np.testing.assert_allclose(F.mse_loss(ta, tb).numpy(), np.mean((a - b) ** 2), rtol=1e-6)
    np.testing.assert_allclose(F.l1_loss(ta, tb, reduction="sum").numpy(), np.sum(np.abs(a - b)), rtol=1e-6)
    d = np.abs(a - b)
    np.testing.assert_allclose(F.huber_loss(ta, tb, reduction="none", delta=0.5).numpy(),
                               np.where(d < 0.5, 0.5 * d * d, 0.5 * (d - 0.25)), rtol=1e-6)
    logp = a - np.log(np.exp(a).sum(1, keepdims=True))
    target = np.array([0, 2, -100, 1])
    want = -np.mean([logp[0, 0], logp[1, 2], logp[3, 1]])
    np.testing.assert_allclose(F.nll_loss(rt.tensor(logp), rt.tensor(target)).numpy(), want, rtol=1e-6)
    t = (RNG.random((4, 3)) < 0.5).astype(np.float32)
    p = 1 / (1 + np.exp(-a.astype(np.float64)))
    want = -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p))
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(ta, rt.tensor(t)).numpy(), want, rtol=1e-5)


def test_batchnorm_training_updates_running_stats_and_buffers_are_state():
    bn = nn.BatchNorm1D(3)
    x = arr(8, 3)
    out = bn(rt.tensor(x))
    np.testing.assert_allclose(out.numpy(), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * x.var(0, ddof=1), rtol=1e-5)
    assert int(bn.num_batches_tracked) == 1
    assert set(bn.state_dict()) == {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}
    other = nn.BatchNorm1D(3)
    other.load_state_dict(bn.state_dict())
    np.testing.assert_array_equal(other.running_var.numpy(), bn.running_var.numpy())


def test_layer_list_and_dict():
    blocks = nn.LayerList([nn.Linear(3, 3) for _ in range(2)])
    heads = nn.LayerDict({"a": nn.Linear(3, 1), "b": nn.Identity()})

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.blocks, self.heads = blocks, heads

        def forward(self, x):
            for block in self.blocks:
                x = F.relu(block(x))
            return self.heads["a"](self.heads["b"](x))

    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                                                     "blocks.1.bias", "heads.a.weight", "heads.a.bias"]
    x = arr(2, 3)
    np.testing.assert_allclose(to_static(net.forward)(rt.tensor(x)).numpy(), net(rt.tensor(x)).numpy(), rtol=1e-6)
    assert len(blocks) == 2 and "b" in heads and len(heads) == 2


# --- PyTorch cross-checks (optional) ------------------------------------------------------------

def _copy_weights(ours, theirs):
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


TORCH_PAIRS = {
    "conv1d": (lambda: nn.Conv1D(3, 4, 3, stride=2, padding=1), lambda: torch.nn.Conv1d(3, 4, 3, stride=2, padding=1),
               [(2, 3, 9)]),
    "conv_transpose": (lambda: nn.ConvTranspose2D(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                                  dilation=2),
                       lambda: torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                                        dilation=2), [(2, 4, 5, 4)]),
    "avgpool_pad": (lambda: nn.AvgPool2D(3, stride=2, padding=1, count_include_pad=False),
                    lambda: torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [(1, 2, 7, 7)]),
    "adaptive": (lambda: nn.AdaptiveAvgPool2D((3, 2)), lambda: torch.nn.AdaptiveAvgPool2d((3, 2)), [(2, 3, 7, 5)]),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4), [(3, 4, 5)]),
    "batchnorm_train": (lambda: nn.BatchNorm2D(3), lambda: torch.nn.BatchNorm2d(3), [(4, 3, 2, 2)]),
    "gru_cell": (lambda: nn.GRUCell(4, 6), lambda: torch.nn.GRUCell(4, 6), [(3, 4)]),
    "lstm_cell": (lambda: nn.LSTMCell(4, 6), lambda: torch.nn.LSTMCell(4, 6), [(3, 4)]),
    "rnn": (lambda: nn.RNN(4, 5, num_layers=2), lambda: torch.nn.RNN(4, 5, num_layers=2), [(6, 2, 4)]),
    "gru": (lambda: nn.GRU(4, 5, num_layers=2), lambda: torch.nn.GRU(4, 5, num_layers=2), [(6, 2, 4)]),
    "lstm": (lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True),
             lambda: torch.nn.LSTM(4, 5, num_layers=2, batch_first=True), [(2, 6, 4)]),
    "bi_lstm": (lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True),
                lambda: torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True), [(6, 2, 4)]),
    "bi_gru": (lambda: nn.GRU(4, 5, bidirectional=True, batch_first=True),
               lambda: torch.nn.GRU(4, 5, bidirectional=True, batch_first=True), [(2, 6, 4)]),
    "mha": (lambda: nn.MultiheadAttention(8, 2), lambda: torch.nn.MultiheadAttention(8, 2),
            [(4, 2, 8), (5, 2, 8), (5, 2, 8)]),
    "encoder": (lambda: nn.TransformerEncoderLayer(8, 2, 16).eval(),
                lambda: torch.nn.TransformerEncoderLayer(8, 2, 16).eval(), [(4, 2, 8)]),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(TORCH_PAIRS))
def test_matches_pytorch_with_copied_weights(name):
    make_ours, make_theirs, shapes = TORCH_PAIRS[name]
    ours, theirs = make_ours(), make_theirs()
    _copy_weights(ours, theirs)
    inputs = [arr(*s) for s in shapes]
    with torch.no_grad():
        want = first(theirs(*[torch.from_numpy(a) for a in inputs]))
    got = first(ours(*[rt.tensor(a) for a in inputs]))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    if name == "batchnorm_train":
        np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5)


@needs_torch
def test_mha_masks_match_pytorch():
    ours, theirs = nn.MultiheadAttention(8, 2, batch_first=True), torch.nn.MultiheadAttention(8, 2, batch_first=True)
    _copy_weights(ours, theirs)
    q = arr(2, 4, 8)
    pad = np.array([[False, False, True, True], [False, False, False, True]])
    causal = np.triu(np.ones((4, 4), bool), 1)
    with torch.no_grad():
        want, w_want = theirs(*(torch.from_numpy(q),) * 3, key_padding_mask=torch.from_numpy(pad),
                              attn_mask=torch.from_numpy(causal))
    got, w_got = ours(*(rt.tensor(q),) * 3, key_padding_mask=rt.tensor(pad), attn_mask=rt.tensor(causal))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w_got.numpy(), w_want.numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
def test_losses_match_pytorch():
    a, b = arr(4, 3), arr(4, 3)
    tf = torch.nn.functional
    pairs = [(F.huber_loss(rt.tensor(a), rt.tensor(b), delta=0.7), tf.huber_loss(torch.from_numpy(a),
                                                                                 torch.from_numpy(b), delta=0.7)),
             (F.binary_cross_entropy_with_logits(rt.tensor(a), rt.tensor(np.abs(b) / 3)),
              tf.binary_cross_entropy_with_logits(torch.from_numpy(a), torch.from_numpy(np.abs(b) / 3)))]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)


def test_to_static_of_a_layer_returns_it_with_a_static_forward():
    rt.seed(2)
    net = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    x = arr(3, 4)
    want = net(rt.tensor(x)).numpy()
    assert to_static(net, input_spec=[InputSpec([None, 4], "float32")]) is net
    np.testing.assert_allclose(net(rt.tensor(x)).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(net(rt.tensor(arr(5, 4))).shape, (5, 2))
    assert net.forward.cache_size == 1
    assert "linear" in [op.type for op in net.forward.get_program(InputSpec([None, 4], "float32")).ops()]
