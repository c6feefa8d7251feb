"""More model files written for PyTorch by other people (tests/ports: torchvision's MobileNetV2 and
VGG-11-BN, milesial's U-Net, the Annotated Transformer, minGPT, a char-RNN generator, a BERT layer) run
after changing only their imports: torch's weights loaded with `load_state_dict`, the outputs equal
torch's within 1e-5 eagerly and under `to_static` (three calls with different inputs), and the gradients
of a loss equal torch's. Without torch (CI), the NumPy-oracle smoke tests compare static with eager."""
import pathlib
import sys

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import ports  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional cross-check)")
_rng = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def _seeded():
    if torch is not None:
        torch.manual_seed(0)
    rt.manual_seed(0)


def _np(value):
    return value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)


def _same(ours, theirs, atol=1e-5):
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-5, atol=atol)


def _pair(name, tmp_path, build):
    """(torch module, ours) built by build(module) from the file as it is and as ported, torch's weights
    (and buffers) copied into ours."""
    ours_mod, torch_mod = ports.load(name, tmp_path), ports.load(name, tmp_path, backend="torch")
    theirs, ours = build(torch_mod), build(ours_mod)
    result = ours.load_state_dict(theirs.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    return torch_mod, theirs, ours_mod, ours


def _check(theirs, ours, inputs, first=lambda out: out, atol=1e-5, grads=True):
    """Outputs equal torch's eagerly and under to_static for each input tuple; with grads, the gradient
    of sum(first(out)**2)... (a loss) w.r.t. every parameter equals torch's, eagerly."""
    static = to_static(ours)
    for i, args in enumerate(inputs):
        want = first(theirs(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]))
        for run in (ours, static):
            got = first(run(*[rt.tensor(a) if isinstance(a, np.ndarray) else a for a in args]))
            _same(got, want, atol)
        if grads and i == 0:
            theirs.zero_grad()
            ours.zero_grad()
            (want ** 2).mean().backward()
            got = first(ours(*[rt.tensor(a) if isinstance(a, np.ndarray) else a for a in args]))
            (got ** 2).mean().backward()
            torch_grads = dict(theirs.named_parameters())
            for name, p in ours.named_parameters():
                if torch_grads[name].grad is not None:
                    _same(p.grad, torch_grads[name].grad, atol)


def _images(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _randomize_bn(theirs):
    with torch.no_grad():                       # running statistics that are not the defaults
        for m in theirs.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)


@needs_torch
def test_mobilenet_v2_matches_torch(tmp_path):
    torch_mod, theirs, ours_mod, ours = _pair("mobilenetv2", tmp_path,
                                              lambda m: m.mobilenet_v2(num_classes=10, width_mult=0.35))
    _randomize_bn(theirs)
    ours.load_state_dict(theirs.state_dict())
    theirs.eval(), ours.eval()
    assert ours_mod._make_divisible(32 * 0.35, 8) == 16
    _check(theirs, ours, [(_images(2, 3, 32, 32),), (_images(2, 3, 32, 32),), (_images(1, 3, 40, 40),)], atol=2e-5)


@needs_torch
def test_vgg11_bn_matches_torch(tmp_path):
    torch_mod, theirs, ours_mod, ours = _pair("vgg", tmp_path, lambda m: m.vgg11_bn(num_classes=10))
    _randomize_bn(theirs)
    ours.load_state_dict(theirs.state_dict())
    theirs.eval(), ours.eval()
    _check(theirs, ours, [(_images(1, 3, 32, 32),), (_images(2, 3, 32, 32),), (_images(1, 3, 48, 48),)],
           grads=False)


@needs_torch
@pytest.mark.parametrize("bilinear", [False, True], ids=["transposed_conv", "bilinear"])
def test_unet_matches_torch(bilinear, tmp_path):
    torch_mod, theirs, ours_mod, ours = _pair("unet", tmp_path, lambda m: m.UNet(3, 2, bilinear=bilinear))
    theirs.eval(), ours.eval()
    # 36 and 20: odd sizes below the bottleneck, so Up pads by the diffs
    _check(theirs, ours, [(_images(1, 3, 32, 32),), (_images(1, 3, 36, 36),), (_images(2, 3, 20, 28),)],
           atol=5e-5)


@needs_torch
def test_annotated_transformer_matches_torch(tmp_path):
    torch_mod, theirs, ours_mod, ours = _pair("annotated_transformer", tmp_path,
                                              lambda m: m.make_model(11, 13, N=2, d_model=16, d_ff=32, h=4))
    theirs.eval(), ours.eval()

    def inputs(b, s, t):
        src = _rng.integers(1, 11, (b, s))
        src[0, -1] = 0                                    # padding, masked out
        tgt = _rng.integers(1, 13, (b, t))
        src_mask = (src != 0)[:, None, :]
        tgt_mask = np.broadcast_to(np.triu(np.ones((t, t)), 1) == 0, (b, t, t)).copy()
        return src, tgt, src_mask, tgt_mask
    _check(theirs, ours, [inputs(2, 5, 4), inputs(2, 5, 4), inputs(3, 6, 3)])
    for size in (1, 4):
        np.testing.assert_array_equal(_np(ours_mod.subsequent_mask(size)), _np(torch_mod.subsequent_mask(size)))
    src = _rng.integers(1, 11, (1, 6))
    want = torch_mod.greedy_decode(theirs, torch.tensor(src), torch.ones(1, 1, 6, dtype=torch.bool), 5, 1)
    got = ours_mod.greedy_decode(ours, rt.tensor(src), rt.ones(1, 1, 6, dtype=rt.bool), 5, 1)
    np.testing.assert_array_equal(_np(got), _np(want))


@needs_torch
def test_mingpt_matches_torch(tmp_path):
    def build(m):
        return m.GPT(m.GPTConfig(n_layer=2, n_head=2, n_embd=16, vocab_size=20, block_size=8))
    torch_mod, theirs, ours_mod, ours = _pair("mingpt", tmp_path, build)
    theirs.eval(), ours.eval()
    idx = [_rng.integers(0, 20, (2, 8)), _rng.integers(0, 20, (2, 8)), _rng.integers(0, 20, (3, 5))]
    _check(theirs, ours, [(i,) for i in idx], first=lambda out: out[0])
    want = theirs(torch.tensor(idx[0]), torch.tensor(idx[0]))[1]
    for run in (ours, to_static(ours)):
        _same(run(rt.tensor(idx[0]), rt.tensor(idx[0]))[1], want)
    greedy = ours.generate(rt.tensor(idx[2][:1]), 4)
    np.testing.assert_array_equal(_np(greedy), _np(theirs.generate(torch.tensor(idx[2][:1]), 4)))
    sampled = ours.generate(rt.tensor(idx[2]), 3, do_sample=True, top_k=3)
    assert sampled.shape == (3, 8)


@needs_torch
@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_char_rnn_matches_torch(rnn, tmp_path):
    torch_mod, theirs, ours_mod, ours = _pair("char_rnn", tmp_path,
                                              lambda m: m.CharRNN(m.n_characters, 16, m.n_characters, rnn, 2))
    theirs.eval(), ours.eval()
    hidden = _images(2, 3, 16)
    if rnn == "lstm":
        inputs = [(_rng.integers(0, 100, (3, 5)), (hidden, hidden * 0.5)) for _ in range(3)]
        inputs = [(a, tuple(h for h in hs)) for a, hs in inputs]
    else:
        inputs = [(_rng.integers(0, 100, (3, 5)), _images(2, 3, 16)) for _ in range(3)]
    static = to_static(ours)

    def wrap(lib, value):
        return tuple(lib.tensor(h) for h in value) if isinstance(value, tuple) else lib.tensor(value)
    for tokens, h in inputs:
        want, want_h = theirs(torch.tensor(tokens), wrap(torch, h))
        for run in (ours, static):
            got, got_h = run(rt.tensor(tokens), wrap(rt, h))
            _same(got, want)
            for a, b in zip(got_h if rnn == "lstm" else [got_h], want_h if rnn == "lstm" else [want_h]):
                _same(a, b)
    h0 = ours.init_hidden(4)
    assert (h0[0] if rnn == "lstm" else h0).shape == (2, 4, 16)
    text = ours_mod.generate(ours, "Th", predict_len=6, top_k=3)
    assert len(text) == 8 and text.startswith("Th") and all(c in ours_mod.all_characters for c in text)
    step = to_static(ours_mod.sample_next)
    for _ in range(3):
        logits = rt.tensor(_images(2, 100))
        choice = step(logits, 0.8, 3)
        top3 = np.argsort(-logits.numpy(), axis=-1)[:, :3]
        assert choice.shape == (2, 1) and all(choice.numpy()[i, 0] in top3[i] for i in range(2))


@needs_torch
def test_bert_matches_torch(tmp_path):
    def build(m):
        return m.BertModel(m.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=32, max_position_embeddings=12))
    torch_mod, theirs, ours_mod, ours = _pair("bert", tmp_path, build)
    theirs.eval(), ours.eval()

    def inputs(b, s):
        mask = np.ones((b, s), np.int64)
        mask[0, -2:] = 0
        return _rng.integers(0, 30, (b, s)), mask, _rng.integers(0, 2, (b, s))
    _check(theirs, ours, [inputs(2, 6), inputs(2, 6), inputs(3, 4)], first=lambda out: out[0])
    _check(theirs, ours, [inputs(2, 6)], first=lambda out: out[1])


def test_unet_and_mingpt_static_match_eager(tmp_path):
    """The NumPy-only smoke test (CI has no torch): random init, three calls, static equal to eager."""
    unet = ports.load("unet", tmp_path)
    model = unet.UNet(3, 2, bilinear=True).eval()
    static = to_static(model)
    for shape in ((1, 3, 16, 16), (1, 3, 20, 20), (2, 3, 18, 16)):
        x = rt.tensor(_images(*shape))
        np.testing.assert_allclose(static(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)
    mingpt = ports.load("mingpt", tmp_path)
    model = mingpt.GPT(mingpt.GPTConfig(n_layer=2, n_head=2, n_embd=16, vocab_size=20, block_size=8)).eval()
    static = to_static(model)
    for b, t in ((2, 8), (2, 8), (3, 5)):
        idx = rt.tensor(_rng.integers(0, 20, (b, t)))
        np.testing.assert_allclose(static(idx, idx)[0].numpy(), model(idx, idx)[0].numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(static(idx, idx)[1].numpy(), model(idx, idx)[1].numpy(), rtol=1e-6)


def test_annotated_transformer_and_bert_static_match_eager(tmp_path):
    at = ports.load("annotated_transformer", tmp_path)
    model = at.make_model(11, 13, N=1, d_model=16, d_ff=32, h=4).eval()
    static = to_static(model)
    for b, s, t in ((2, 5, 4), (2, 5, 4), (1, 3, 2)):
        src, tgt = rt.tensor(_rng.integers(1, 11, (b, s))), rt.tensor(_rng.integers(1, 13, (b, t)))
        src_mask, tgt_mask = (src != 0).unsqueeze(-2), at.subsequent_mask(t)
        np.testing.assert_allclose(static(src, tgt, src_mask, tgt_mask).numpy(),
                                   model(src, tgt, src_mask, tgt_mask).numpy(), rtol=1e-5, atol=1e-5)
    bert = ports.load("bert", tmp_path)
    model = bert.BertModel(bert.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=4,
                                           intermediate_size=32, max_position_embeddings=12)).eval()
    static = to_static(model)
    for b, s in ((2, 6), (2, 6), (3, 4)):
        ids, mask = rt.tensor(_rng.integers(0, 30, (b, s))), rt.tensor(np.ones((b, s), np.int64))
        np.testing.assert_allclose(static(ids, mask)[0].numpy(), model(ids, mask)[0].numpy(), rtol=1e-5, atol=1e-5)
