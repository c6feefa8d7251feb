"""Model files written for PyTorch (tests/ports: nanoGPT's model.py, torchvision's ResNet-18, the
pytorch/examples LSTM language model) run after changing only their imports, eagerly and under
`to_static`. With torch installed they are compared with torch's run of the same file, torch's
weights copied with `load_state_dict`, within 1e-5; without it the static run is compared with the
eager one."""
import dataclasses
import sys
import pathlib

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
_rng = np.random.default_rng(4)


@pytest.fixture(autouse=True)
def _seeded():
    """torch's initial weights (copied into ours) the same on every run: the comparisons are deterministic."""
    if torch is not None:
        torch.manual_seed(0)
    rt.manual_seed(0)


def _same(ours, theirs, atol=1e-5):
    want = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    np.testing.assert_allclose(ours.numpy(), want, rtol=1e-5, atol=atol)


def _gpt_config(module, flash):
    return module.GPTConfig(block_size=8, vocab_size=48, n_layer=2, n_head=2, n_embd=16, dropout=0.0, flash=flash)


def test_port_changes_only_the_imports():
    source = (ports.HERE / "gpt.py").read_text()
    ported = ports.port_source(source)
    changed = [(a, b) for a, b in zip(source.splitlines(), ported.splitlines()) if a != b]
    assert changed == [("import torch", "import runtime as torch"), ("import torch.nn as nn", "import runtime.nn as nn"),
                       ("from torch.nn import functional as F", "from runtime.nn import functional as F")]


@pytest.mark.parametrize("flash", [True, False], ids=["sdpa", "manual_attention"])
def test_gpt_static_matches_eager(flash, tmp_path):
    gpt = ports.load("gpt", tmp_path)
    rt.manual_seed(0)
    model = gpt.GPT(_gpt_config(gpt, flash))
    idx = rt.tensor(_rng.integers(0, 48, (2, 8)))
    logits, loss = model(idx, idx)
    static_logits, static_loss = to_static(model)(idx, idx)
    np.testing.assert_allclose(static_logits.numpy(), logits.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(static_loss.numpy(), loss.numpy(), rtol=1e-6)
    out = model.eval().generate(idx[:, :3], 4, top_k=5)
    assert out.shape == (2, 7) and out.dtype == np.int64


def test_resnet18_and_lstm_lm_static_match_eager(tmp_path):
    resnet = ports.load("resnet", tmp_path)
    rt.manual_seed(0)
    model = resnet.resnet18(num_classes=10).eval()
    x = rt.tensor(_rng.standard_normal((2, 3, 32, 32)).astype(np.float32))
    np.testing.assert_allclose(to_static(model)(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    lm = ports.load("word_language_model", tmp_path)
    model = lm.RNNModel("LSTM", 30, 8, 8, 2, dropout=0.5).eval()
    hidden = model.init_hidden(3)
    tokens = rt.tensor(_rng.integers(0, 30, (5, 3)))
    out, (h, c) = model(tokens, hidden)
    s_out, (s_h, s_c) = to_static(model)(tokens, hidden)
    np.testing.assert_allclose(s_out.numpy(), out.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s_c.numpy(), c.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("flash", [True, False], ids=["sdpa", "manual_attention"])
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_gpt_matches_torch(flash, static, tmp_path):
    ours_mod, torch_mod = ports.load("gpt", tmp_path), ports.load("gpt", tmp_path, backend="torch")
    theirs = torch_mod.GPT(_gpt_config(torch_mod, flash))
    ours = ours_mod.GPT(_gpt_config(ours_mod, flash))
    ours.load_state_dict(theirs.state_dict())             # torch tensors, the tied weight under both names
    idx = _rng.integers(0, 48, (3, 8))
    targets = idx.copy()
    targets[0, :2] = -1                                   # ignored positions
    want_logits, want_loss = theirs(torch.tensor(idx), torch.tensor(targets))
    want_loss.backward()
    run = to_static(ours) if static else ours
    logits, loss = run(rt.tensor(idx), rt.tensor(targets))
    _same(logits, want_logits)
    _same(loss, want_loss)
    last, none = run(rt.tensor(idx))
    assert none is None
    _same(last, theirs(torch.tensor(idx))[0])
    if not static:
        loss.backward()
        grads = dict(theirs.named_parameters())
        for name, p in ours.named_parameters():
            _same(p.grad, grads[name].grad, atol=1e-5)


@needs_torch
def test_gpt_training_step_matches_torch(tmp_path):
    ours_mod, torch_mod = ports.load("gpt", tmp_path), ports.load("gpt", tmp_path, backend="torch")
    # bias=False: the key projection's bias gets a gradient that is zero but for rounding, which Adam's
    # normalization would blow up to a step of lr in either framework's own direction
    theirs = torch_mod.GPT(dataclasses.replace(_gpt_config(torch_mod, True), bias=False))
    ours = ours_mod.GPT(dataclasses.replace(_gpt_config(ours_mod, True), bias=False))
    ours.load_state_dict(theirs.state_dict())
    opt_t = theirs.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")
    opt_o = ours.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")

    @to_static
    def step(idx, targets):
        _, loss = ours(idx, targets)
        loss.backward()
        rt.nn.utils.clip_grad_norm_(ours.parameters(), 1.0)
        opt_o.step()
        opt_o.zero_grad(set_to_none=True)
        return loss
    for _ in range(3):
        idx = _rng.integers(0, 48, (2, 8))
        _, want = theirs(torch.tensor(idx), torch.tensor(idx))
        want.backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
        opt_t.step()
        opt_t.zero_grad(set_to_none=True)
        _same(step(rt.tensor(idx), rt.tensor(idx)), want)
    assert step.cache_size == 1
    for name, p in theirs.named_parameters():
        _same(dict(ours.named_parameters())[name], p, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_resnet18_matches_torch(static, tmp_path):
    ours_mod, torch_mod = ports.load("resnet", tmp_path), ports.load("resnet", tmp_path, backend="torch")
    theirs = torch_mod.resnet18(num_classes=10).eval()
    ours = ours_mod.resnet18(num_classes=10).eval()
    with torch.no_grad():               # running statistics that are not the defaults
        for m in theirs.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    result = ours.load_state_dict(theirs.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    x = _rng.standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = theirs(torch.tensor(x))
    _same((to_static(ours) if static else ours)(rt.tensor(x)), want, atol=2e-5)


@needs_torch
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_word_language_model_matches_torch(rnn_type, static, tmp_path):
    ours_mod, torch_mod = ports.load("word_language_model", tmp_path), ports.load("word_language_model", tmp_path,
                                                                                  backend="torch")
    theirs = torch_mod.RNNModel(rnn_type, 40, 16, 16, 2, dropout=0.5, tie_weights=True).eval()
    ours = ours_mod.RNNModel(rnn_type, 40, 16, 16, 2, dropout=0.5, tie_weights=True).eval()
    ours.load_state_dict(theirs.state_dict())
    tokens = _rng.integers(0, 40, (6, 3))
    with torch.no_grad():
        want, want_hidden = theirs(torch.tensor(tokens), theirs.init_hidden(3))
    got, hidden = (to_static(ours) if static else ours)(rt.tensor(tokens), ours.init_hidden(3))
    _same(got, want)
    for a, b in zip(hidden if rnn_type == "LSTM" else [hidden], want_hidden if rnn_type == "LSTM" else [want_hidden]):
        _same(a, b)
    pe_t, pe_o = torch_mod.PositionalEncoding(16, dropout=0.0, max_len=20), ours_mod.PositionalEncoding(16, 0.0, 20)
    x = _rng.standard_normal((5, 2, 16)).astype(np.float32)
    _same(pe_o(rt.tensor(x)), pe_t(torch.tensor(x)))


class _Args:
    log_interval, dry_run = 1, False


@needs_torch
@pytest.mark.parametrize("static", [False, True], ids=["eager", "static_forward"])
def test_mnist_example_trains_as_torch(static, tmp_path, capsys):
    """The example's own train() and test(), Adadelta and StepLR as its main() uses them, on a few batches."""
    ours_mod, torch_mod = ports.load("mnist", tmp_path), ports.load("mnist", tmp_path, backend="torch")
    theirs, ours = torch_mod.Net(), ours_mod.Net()
    ours.load_state_dict(theirs.state_dict())
    for model in (theirs, ours):                 # dropout's masks come from different generators
        model.dropout1.p = model.dropout2.p = 0.0
    images = _rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    labels = _rng.integers(0, 10, 8)
    loader_t = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(images),
                                                                          torch.tensor(labels)), batch_size=4)
    loader_o = rt.utils.data.DataLoader(rt.utils.data.TensorDataset(rt.tensor(images), rt.tensor(labels)),
                                        batch_size=4)
    opt_t, opt_o = torch.optim.Adadelta(theirs.parameters(), lr=1.0), rt.optim.Adadelta(ours.parameters(), lr=1.0)
    sched_t = torch.optim.lr_scheduler.StepLR(opt_t, step_size=1, gamma=0.7)
    sched_o = rt.optim.lr_scheduler.StepLR(opt_o, step_size=1, gamma=0.7)
    runnable = to_static(ours) if static else ours
    for epoch in (1, 2):
        torch_mod.train(_Args, theirs, "cpu", loader_t, opt_t, epoch)
        ours_mod.train(_Args, runnable, "cpu", loader_o, opt_o, epoch)
        sched_t.step()
        sched_o.step()
    for name, p in theirs.named_parameters():
        _same(dict(ours.named_parameters())[name], p, atol=2e-5)
    want = torch_mod.test(theirs, "cpu", loader_t)
    got = ours_mod.test(runnable, "cpu", loader_o)
    assert got[1] == want[1]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert "Test set: Average loss" in capsys.readouterr().out


def test_initializers_fill_a_tensors_data_as_pytorch_code_writes():
    conv = rt.nn.Conv2d(2, 3, 3)
    rt.nn.init.normal_(conv.weight.data, 0.0, 0.02)          # DCGAN's weights_init writes through .data
    rt.nn.init.constant_(conv.bias.data, 0)
    assert conv.bias.numpy().tolist() == [0.0, 0.0, 0.0] and 0 < conv.weight.numpy().std() < 0.05


@needs_torch
@pytest.mark.parametrize("name", ["dcgan", "vae", "patch_embed", "llama_rms_rotary", "seq2seq_attention"])
def test_model_snippets_match_torch(name, tmp_path):
    ours_mod, torch_mod = ports.load("snippets", tmp_path), ports.load("snippets", tmp_path, backend="torch")

    def pair(cls_name, *args):
        theirs, ours = getattr(torch_mod, cls_name)(*args), getattr(ours_mod, cls_name)(*args)
        ours.load_state_dict(theirs.state_dict())
        return theirs.eval(), ours.eval()

    def both(theirs, ours, *arrays):
        with torch.no_grad():
            want = theirs(*[torch.tensor(a) for a in arrays])
        for run in (ours, to_static(ours)):
            _same(run(*[rt.tensor(a) for a in arrays]), want)
    if name == "dcgan":
        for cls, shape in (("Generator", (2, 8, 1, 1)), ("Discriminator", (2, 3, 16, 16))):
            theirs, ours = pair(cls)
            theirs.apply(torch_mod.weights_init)
            ours.apply(ours_mod.weights_init)         # runs through .data, as the example writes it
            ours.load_state_dict(theirs.state_dict())
            both(theirs, ours, _rng.standard_normal(shape).astype(np.float32))
    elif name == "vae":
        theirs, ours = pair("VAE")
        x = _rng.random((3, 16)).astype(np.float32)
        want = torch_mod.loss_function(*theirs(torch.tensor(x))[:1], torch.tensor(x), *theirs(torch.tensor(x))[1:])
        got = ours(rt.tensor(x))
        _same(ours_mod.loss_function(got[0], rt.tensor(x), *got[1:]), want)
    elif name == "patch_embed":
        both(*pair("PatchEmbed"), _rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    elif name == "llama_rms_rotary":
        x = _rng.standard_normal((2, 5, 2, 8)).astype(np.float32)
        both(*pair("RMSNorm", 8), x)
        want = torch_mod.apply_rotary_emb(torch.tensor(x), torch.tensor(x * 2), torch_mod.precompute_freqs_cis(8, 5))
        freqs = ours_mod.precompute_freqs_cis(8, 5)
        for run in (ours_mod.apply_rotary_emb, to_static(ours_mod.apply_rotary_emb)):
            got = run(rt.tensor(x), rt.tensor(x * 2), freqs)
            _same(got[0], want[0])
            _same(got[1], want[1])
    else:
        both(*pair("Seq2SeqAttn"), _rng.standard_normal((2, 4, 8)).astype(np.float32),
             _rng.standard_normal((1, 2, 8)).astype(np.float32))


@pytest.mark.parametrize("flash", [True, False], ids=["sdpa", "manual_attention"])
def test_gpt_one_trace_serves_every_batch_and_length(flash, tmp_path):
    """`b, t = idx.size()` with both dims dynamic (an InputSpec of [None, None]): one Program."""
    from transpiler import InputSpec
    gpt = ports.load("gpt", tmp_path)
    rt.manual_seed(0)
    model = gpt.GPT(_gpt_config(gpt, flash)).eval()
    static = to_static(model.forward, input_spec=[InputSpec([None, None], "int64")])
    for b, t in ((2, 8), (3, 5), (1, 1)):
        idx = rt.tensor(_rng.integers(0, 48, (b, t)))
        with rt.no_grad():
            want = model(idx)[0]
        np.testing.assert_allclose(static(idx)[0].numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert static.cache_size == 1


@needs_torch
def test_gpt_in_float64_matches_torch_after_double(tmp_path):
    ours_mod, torch_mod = ports.load("gpt", tmp_path), ports.load("gpt", tmp_path, backend="torch")
    theirs = torch_mod.GPT(_gpt_config(torch_mod, True)).double()
    ours = ours_mod.GPT(_gpt_config(ours_mod, True)).double()
    ours.load_state_dict(theirs.state_dict())
    idx = _rng.integers(0, 48, (2, 8))
    want_logits, want_loss = theirs(torch.tensor(idx), torch.tensor(idx))
    logits, loss = to_static(ours)(rt.tensor(idx), rt.tensor(idx))
    assert logits.dtype == np.float64
    np.testing.assert_allclose(logits.numpy(), want_logits.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(loss.numpy(), want_loss.detach().numpy(), rtol=1e-12)
    assert ours.half().lm_head.weight.dtype == np.float16 and ours(rt.tensor(idx))[0].dtype == np.float16
