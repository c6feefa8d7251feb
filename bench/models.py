"""Real-model workloads (issue 13): what users run, each against the NumPy a competent user writes.

Small tensors in data-dependent loops (decoding, beam search, NMS, a masked LSTM) measure the
per-iteration cost of the generated loop; the Transformer layer and LeNet measure straight-line
plans of many small ops. Every static variant is checked against its NumPy floor in the same
process, and must hold the `while` op its source's tensor loop becomes.
"""
import math

import numpy as np

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from transpiler import to_static

from .workloads import _assert_ops, _check_close, _numpy_of, _rng, _to, floor_name

HIDDEN, VOCAB, MAX_LEN, BOS, EOS = 128, 64, 50, 1, 2
BEAM, BEAM_STEPS = 4, 20
NMS_N, NMS_IOU = 300, 0.5
LSTM_T, LSTM_N, LSTM_IN, LSTM_HIDDEN = 50, 8, 32, 64
ENC_D, ENC_HEADS, ENC_FF, ENC_L, ENC_N = 64, 4, 128, 32, 8


def _np(p):
    return np.asarray(p.numpy())


def _on(device, arrays):
    """The floor's copies of the weights: NumPy arrays, or CuPy arrays on the GPU."""
    xp = _numpy_of(device)
    return [xp.asarray(a) for a in arrays]


def _variants(device, floor, static, eager):
    """The floor and the static function everywhere; the eager rows on the CPU, where the model's
    creation functions (`rt.full`, `rt.arange`, ...) make their tensors."""
    variants = {floor_name(device): floor, "dy2static": static}
    if device == "cpu":
        variants["dy2static eager"] = eager
    return variants


def _sigmoid(x, xp=np):
    return 1 / (1 + xp.exp(-x))


def _gru(x, h, w_ih, w_hh, b_ih, b_hh, xp=np):
    """PyTorch's GRU cell in NumPy (or CuPy), gates (reset, update, new)."""
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    i_r, i_z, i_n = xp.split(gi, 3, axis=-1)
    h_r, h_z, h_n = xp.split(gh, 3, axis=-1)
    r, z = _sigmoid(i_r + h_r, xp), _sigmoid(i_z + h_z, xp)
    n = xp.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


# --- R1: greedy GRU decoding, stops when every sequence has produced EOS ----------------------------

class Decoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.cell = nn.GRUCell(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, h):
        token = rt.full((h.shape[0],), BOS, dtype="int64")
        done = rt.zeros((h.shape[0],), dtype="bool")
        steps = 0
        while steps < MAX_LEN and not rt.all(done):
            h = self.cell(self.embed(token), h)
            token = rt.where(done, EOS, rt.argmax(self.out(h), axis=-1))
            done = done | (token == EOS)
            steps += 1
        return h, steps


def _decoder_weights(model):
    return [_np(p) for p in (model.embed.weight, model.cell.weight_ih, model.cell.weight_hh, model.cell.bias_ih,
                             model.cell.bias_hh, model.out.weight, model.out.bias)]


def numpy_decode(h, emb, w_ih, w_hh, b_ih, b_hh, w_out, b_out, xp=np):
    token = xp.full(h.shape[0], BOS, xp.int64)
    done = xp.zeros(h.shape[0], bool)
    steps = 0
    while steps < MAX_LEN and not done.all():
        h = _gru(emb[token], h, w_ih, w_hh, b_ih, b_hh, xp)
        token = xp.where(done, EOS, (h @ w_out.T + b_out).argmax(-1))
        done |= token == EOS
        steps += 1
    return h, steps


def greedy_decode(device="cpu"):
    rt.seed(0)
    model = Decoder()
    model.out.bias.data[EOS] = -1.0              # EOS unlikely: decoding runs close to MAX_LEN steps
    h = (_rng().standard_normal((1, HIDDEN)) * 0.5).astype(np.float32)
    hd, *weights = _on(device, [h, *_decoder_weights(model)])
    model.to(device)
    (ht,) = _to(device, [h])
    static = to_static(model.forward)
    ops = _assert_ops(static, [ht], must=("while",))
    xp = _numpy_of(device)
    variants = _variants(device, lambda: numpy_decode(hd, *weights, xp=xp), lambda: static(ht), lambda: model(ht))

    def check(results):
        _check_close({k: v[0] for k, v in results.items()}, floor_name(device))
        steps = {k: int(v[1]) for k, v in results.items()}
        assert len(set(steps.values())) == 1, f"decoders stopped after different step counts: {steps}"
    return dict(variants=variants, check=check, ops=ops)


# --- R2: beam search with top-k ----------------------------------------------------------------------

class Beam(Decoder):
    def forward(self, h):
        h = rt.broadcast_to(h, (BEAM, HIDDEN))
        token = rt.full((BEAM,), BOS, dtype="int64")
        score = rt.asarray([0.0] + [-1e9] * (BEAM - 1), dtype="float32")
        step = 0
        while step < BEAM_STEPS and not rt.all(token == EOS):
            h = self.cell(self.embed(token), h)
            logp = F.log_softmax(self.out(h), axis=-1)
            total = rt.reshape(score[:, None] + logp, (BEAM * VOCAB,))
            score, best = rt.topk(total, BEAM)
            parent = best // VOCAB
            token = best % VOCAB
            h = rt.take(h, parent, axis=0)
            step += 1
        return score, token


def _log_softmax(x, xp=np):
    m = x.max(-1, keepdims=True)
    return x - m - xp.log(xp.exp(x - m).sum(-1, keepdims=True))


def numpy_beam(h, emb, w_ih, w_hh, b_ih, b_hh, w_out, b_out, xp=np):
    h = xp.broadcast_to(h, (BEAM, HIDDEN))
    token = xp.full(BEAM, BOS, xp.int64)
    score = xp.array([0.0] + [-1e9] * (BEAM - 1), xp.float32)
    step = 0
    while step < BEAM_STEPS and not (token == EOS).all():
        step += 1
        h = _gru(emb[token], h, w_ih, w_hh, b_ih, b_hh, xp)
        total = (score[:, None] + _log_softmax(h @ w_out.T + b_out, xp)).reshape(-1)
        best = xp.argsort(-total, kind="stable")[:BEAM]
        score = total[best]
        token = best % VOCAB
        h = h[best // VOCAB]
    return score, token


def beam_search(device="cpu"):
    rt.seed(1)
    model = Beam()
    h = (_rng().standard_normal((1, HIDDEN)) * 0.5).astype(np.float32)
    hd, *weights = _on(device, [h, *_decoder_weights(model)])
    model.to(device)
    (ht,) = _to(device, [h])
    static = to_static(model.forward)
    ops = _assert_ops(static, [ht], must=("while",))
    xp, floor = _numpy_of(device), floor_name(device)
    variants = _variants(device, lambda: numpy_beam(hd, *weights, xp=xp), lambda: static(ht), lambda: model(ht))

    def check(results):
        _check_close({k: v[0] for k, v in results.items()}, floor, rtol=1e-3, atol=1e-3)
        for k, v in results.items():
            assert np.array_equal(v[1], results[floor][1]), f"{k}: beam tokens differ from {floor}"
    return dict(variants=variants, check=check, ops=ops)


# --- R3: non-maximum suppression -------------------------------------------------------------------

def _boxes():
    rng = _rng()
    xy = rng.uniform(0, 100, (NMS_N, 2))
    wh = rng.uniform(5, 30, (NMS_N, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32), rng.uniform(0, 1, NMS_N).astype(np.float32)


def numpy_nms(boxes, scores, xp=np):
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    alive = scores.copy()
    keep = xp.zeros(NMS_N, bool)
    while alive.max() > 0:
        i = alive.argmax()
        keep[i] = True
        lo = xp.maximum(boxes[i, :2], boxes[:, :2])
        hi = xp.minimum(boxes[i, 2:], boxes[:, 2:])
        inter = xp.clip(hi - lo, 0, None).prod(-1)
        iou = inter / (area[i] + area - inter)
        alive = xp.where(iou > NMS_IOU, 0, alive)
        alive[i] = 0
    return keep


def rt_nms(boxes, scores):
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    alive = scores
    keep = rt.zeros((NMS_N,), dtype="bool")
    index = rt.arange(NMS_N)
    while rt.max(alive) > 0:
        i = rt.argmax(alive)
        keep = keep | (index == i)
        lo = rt.maximum(boxes[i, :2], boxes[:, :2])
        hi = rt.minimum(boxes[i, 2:], boxes[:, 2:])
        inter = rt.prod(rt.clip(hi - lo, 0, None), axis=-1)
        iou = inter / (area[i] + area - inter)
        alive = rt.where((iou > NMS_IOU) | (index == i), 0.0, alive)
    return keep


def nms(device="cpu"):
    boxes, scores = _boxes()
    bd, sd = _on(device, [boxes, scores])
    bt, st = _to(device, [boxes, scores])
    static = to_static(rt_nms)
    ops = _assert_ops(static, [bt, st], must=("while",))
    xp, floor = _numpy_of(device), floor_name(device)
    variants = _variants(device, lambda: numpy_nms(bd, sd, xp), lambda: static(bt, st), lambda: rt_nms(bt, st))

    def check(results):
        for k, v in results.items():
            assert np.array_equal(v, results[floor]), f"{k}: kept boxes differ from {floor}"
    return dict(variants=variants, check=check, ops=ops)


# --- R4: a masked LSTM over sequence lengths -------------------------------------------------------

def numpy_lstm(x, lengths, w_ih, w_hh, b_ih, b_hh, xp=np):
    h = xp.zeros((x.shape[1], LSTM_HIDDEN), xp.float32)
    c = xp.zeros_like(h)
    outs = []
    for t in range(x.shape[0]):
        i, f, g, o = xp.split(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=-1)
        c_new = _sigmoid(f, xp) * c + _sigmoid(i, xp) * xp.tanh(g)
        h_new = _sigmoid(o, xp) * xp.tanh(c_new)
        alive = (t < lengths)[:, None]
        h, c = xp.where(alive, h_new, h), xp.where(alive, c_new, c)
        outs.append(xp.where(alive, h_new, 0.0))
    return xp.stack(outs), h


def masked_lstm(device="cpu"):
    rt.seed(2)
    lstm = nn.LSTM(LSTM_IN, LSTM_HIDDEN)
    rng = _rng()
    x = rng.standard_normal((LSTM_T, LSTM_N, LSTM_IN)).astype(np.float32)
    lengths = rng.integers(LSTM_T // 2, LSTM_T + 1, LSTM_N).astype(np.int64)
    xd, ld, *weights = _on(device, [x, lengths, *(_np(p) for p in (lstm.weight_ih_l0, lstm.weight_hh_l0,
                                                                   lstm.bias_ih_l0, lstm.bias_hh_l0))])
    lstm.to(device)
    xt, lt = _to(device, [x, lengths])

    def run(x, lengths):
        out, (h, c) = lstm(x, lengths=lengths)
        return out, h[0]
    static = to_static(run)
    ops = _assert_ops(static, [xt, lt], must=("while",))
    xp = _numpy_of(device)
    variants = _variants(device, lambda: numpy_lstm(xd, ld, *weights, xp=xp), lambda: static(xt, lt),
                         lambda: run(xt, lt))

    def check(results):
        for part in (0, 1):
            _check_close({k: v[part] for k, v in results.items()}, floor_name(device))
    return dict(variants=variants, check=check, ops=ops)


# --- R6: a Transformer encoder layer ----------------------------------------------------------------

def _layer_norm(x, w, b, eps=1e-5, xp=np):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + eps) * w + b


def numpy_encoder(x, w_in, b_in, w_o, b_o, w1, b1, w2, b2, n1w, n1b, n2w, n2b, xp=np):
    L, N, E = x.shape
    hd = E // ENC_HEADS
    q, k, v = xp.split(x @ w_in.T + b_in, 3, axis=-1)
    q, k, v = (t.reshape(L, N, ENC_HEADS, hd).transpose(1, 2, 0, 3) for t in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    s = xp.exp(s - s.max(-1, keepdims=True))
    a = (s / s.sum(-1, keepdims=True)) @ v
    a = a.transpose(2, 0, 1, 3).reshape(L, N, E) @ w_o.T + b_o
    x = _layer_norm(x + a, n1w, n1b, xp=xp)
    f = xp.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    return _layer_norm(x + f, n2w, n2b, xp=xp)


def encoder_layer(device="cpu"):
    rt.seed(3)
    layer = nn.TransformerEncoderLayer(ENC_D, ENC_HEADS, dim_feedforward=ENC_FF, dropout=0.0)
    layer.eval()
    x = _rng().standard_normal((ENC_L, ENC_N, ENC_D)).astype(np.float32)
    a = layer.self_attn
    xd, *weights = _on(device, [x, *(_np(p) for p in (
        a.in_proj_weight, a.in_proj_bias, a.out_proj.weight, a.out_proj.bias, layer.linear1.weight,
        layer.linear1.bias, layer.linear2.weight, layer.linear2.bias, layer.norm1.weight, layer.norm1.bias,
        layer.norm2.weight, layer.norm2.bias))])
    layer.to(device)
    (xt,) = _to(device, [x])
    static = to_static(layer.forward)
    ops = _assert_ops(static, [xt])
    xp = _numpy_of(device)
    variants = _variants(device, lambda: numpy_encoder(xd, *weights, xp=xp), lambda: static(xt), lambda: layer(xt))
    return dict(variants=variants, check=lambda r: _check_close(r, floor_name(device), rtol=1e-4, atol=1e-4),
                ops=ops)


# --- R7: LeNet-5 at batch 1 and 64 --------------------------------------------------------------------

class LeNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2D(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = rt.reshape(x, (x.shape[0], 400))
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def _numpy_conv(x, w, b, pad=0, xp=np):
    if pad:
        x = xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    windows = xp.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))   # N, C, H, W, kh, kw
    return xp.tensordot(windows, w, axes=((1, 4, 5), (1, 2, 3))).transpose(0, 3, 1, 2) + b[:, None, None]


def _numpy_pool(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def numpy_lenet(x, c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b, xp=np):
    x = _numpy_pool(xp.maximum(_numpy_conv(x, c1w, c1b, pad=2, xp=xp), 0))
    x = _numpy_pool(xp.maximum(_numpy_conv(x, c2w, c2b, xp=xp), 0)).reshape(x.shape[0], 400)
    x = xp.maximum(x @ f1w.T + f1b, 0)
    return xp.maximum(x @ f2w.T + f2b, 0) @ f3w.T + f3b


def lenet(batch, device="cpu"):
    rt.seed(4)
    model = LeNet()
    model.eval()
    x = _rng().standard_normal((batch, 1, 28, 28)).astype(np.float32)
    xd, *weights = _on(device, [x, *(_np(p) for layer in (model.conv1, model.conv2, model.fc1, model.fc2, model.fc3)
                                     for p in (layer.weight, layer.bias))])
    model.to(device)
    (xt,) = _to(device, [x])
    static = to_static(model.forward)
    ops = _assert_ops(static, [xt])
    xp = _numpy_of(device)
    variants = _variants(device, lambda: numpy_lenet(xd, *weights, xp=xp), lambda: static(xt), lambda: model(xt))
    return dict(variants=variants, check=lambda r: _check_close(r, floor_name(device), rtol=1e-4, atol=1e-4),
                ops=ops)


# --- layers users call once per request: the d2l MLP and Paddle's LinearNet at batch 1 ----------------

D2L_IN, D2L_HIDDEN, D2L_OUT, LINEARNET_IN, LINEARNET_OUT = 784, 256, 10, 784, 10


def numpy_d2l_mlp(x, w1, b1, w2, b2, xp=np):
    return xp.maximum(x.reshape(x.shape[0], -1) @ w1.T + b1, 0) @ w2.T + b2


def d2l_mlp(device="cpu"):
    """Dive into Deep Learning's concise MLP (`nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
    nn.Linear(256, 10))`) on one 28x28 image, called as users call it: Parameters that require grad, no
    `no_grad()`, so every static call also goes on the tape."""
    rt.seed(5)
    net = nn.Sequential(nn.Flatten(), nn.Linear(D2L_IN, D2L_HIDDEN), nn.ReLU(), nn.Linear(D2L_HIDDEN, D2L_OUT))
    x = _rng().standard_normal((1, 1, 28, 28)).astype(np.float32)
    xd, *weights = _on(device, [x, *(_np(p) for p in net.parameters())])
    net.to(device)
    (xt,) = _to(device, [x])
    static = to_static(net.forward)
    ops = _assert_ops(static, [xt], must=("linear",))
    xp = _numpy_of(device)
    variants = _variants(device, lambda: numpy_d2l_mlp(xd, *weights, xp=xp), lambda: static(xt), lambda: net(xt))
    return dict(variants=variants, check=lambda r: _check_close(r, floor_name(device)), ops=ops)


class LinearNet(nn.Layer):
    """Paddle's to_static tutorial model: one Linear(784, 10)."""

    def __init__(self):
        super().__init__()
        self._linear = nn.Linear(LINEARNET_IN, LINEARNET_OUT)

    def forward(self, x):
        return self._linear(x)


def linearnet(device="cpu"):
    """Paddle's LinearNet on one flattened image, its Parameters requiring grad (no `no_grad()`)."""
    rt.seed(6)
    net = LinearNet()
    x = _rng().standard_normal((1, LINEARNET_IN)).astype(np.float32)
    xd, w, b = _on(device, [x, _np(net._linear.weight), _np(net._linear.bias)])
    net.to(device)
    (xt,) = _to(device, [x])
    static = to_static(net.forward)
    ops = _assert_ops(static, [xt], must=("linear",))
    variants = _variants(device, lambda: xd @ w.T + b, lambda: static(xt), lambda: net(xt))
    return dict(variants=variants, check=lambda r: _check_close(r, floor_name(device)), ops=ops)


# --- the cost of one iteration of an empty tensor `while` ---------------------------------------------

EMPTY_WHILE_N = 1000


def numpy_count(n, xp=np):
    i = xp.asarray(0)
    while i < n:
        i = i + 1
    return i


def rt_count(n):
    i = rt.asarray(0)
    while i < n:
        i = i + 1
    return i


def empty_while(device="cpu"):
    xp = _numpy_of(device)
    (nt,) = _to(device, [np.asarray(EMPTY_WHILE_N)])
    static = to_static(rt_count)
    ops = _assert_ops(static, [nt], must=("while",))
    variants = {floor_name(device): lambda: numpy_count(xp.asarray(EMPTY_WHILE_N), xp),
                "dy2static": lambda: static(nt)}

    def per_iteration_us():
        import timeit
        best = min(timeit.repeat(lambda: static(nt), number=20, repeat=5)) / 20
        return best / EMPTY_WHILE_N * 1e6
    return dict(variants=variants, check=lambda r: _check_close(r, floor_name(device)), ops=ops,
                extra={"while_iteration_us": per_iteration_us()})


MODEL_WORKLOADS = {                 # each on the CPU or, with --device gpu, on CuPy against hand-written CuPy
    "empty_while": lambda device, peer_names: empty_while(device),
    "greedy_decode": lambda device, peer_names: greedy_decode(device),
    "beam_search": lambda device, peer_names: beam_search(device),
    "nms": lambda device, peer_names: nms(device),
    "masked_lstm": lambda device, peer_names: masked_lstm(device),
    "encoder_layer": lambda device, peer_names: encoder_layer(device),
    "lenet_b1": lambda device, peer_names: lenet(1, device),
    "lenet_b64": lambda device, peer_names: lenet(64, device),
    "d2l_mlp_b1": lambda device, peer_names: d2l_mlp(device),
    "linearnet_b1": lambda device, peer_names: linearnet(device),
}
MODEL_LABELS = {"empty_while": "W7", "greedy_decode": "R1", "beam_search": "R2", "nms": "R3", "masked_lstm": "R4",
                "encoder_layer": "R6", "lenet_b1": "R7a", "lenet_b64": "R7b",
                "d2l_mlp_b1": "R8", "linearnet_b1": "R9"}
