"""runtime.nn in eager mode: every functional op and layer against a hand-written NumPy oracle,
plus the Layer machinery (registration, names, state_dict, modes, seeding) and its errors."""
import math
import warnings

import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.nn import functional as F
from runtime.ops.nn_ops import erf_kernel

RNG = np.random.default_rng(1234)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def t(a):
    return rt.tensor(a)


# --- oracles (plain NumPy / math, written for the tests) ------------------------------------

def conv2d_ref(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * padding[0], wd + 2 * padding[1]), np.float64)
    xp[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + wd] = x
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for ni in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for ci in range(cg):
                        for ki in range(kh):
                            for kj in range(kw):
                                acc += (xp[ni, g * cg + ci, i * stride[0] + ki * dilation[0],
                                           j * stride[1] + kj * dilation[1]] * w[oc, ci, ki, kj])
                    out[ni, oc, i, j] = acc + (0.0 if b is None else b[oc])
    return out


def max_pool2d_ref(x, k, s, p, d=(1, 1), ceil_mode=False):
    n, c, h, w = x.shape
    sizes = []
    for size, kk, ss, pp, dd in zip((h, w), k, s, p, d):
        span = size + 2 * pp - dd * (kk - 1) - 1
        out = (-(-span // ss) if ceil_mode else span // ss) + 1
        if ceil_mode and (out - 1) * ss >= size + pp:
            out -= 1
        sizes.append(out)
    out = np.full((n, c) + tuple(sizes), -np.inf)
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            for ki in range(k[0]):
                for kj in range(k[1]):
                    r, q = i * s[0] - p[0] + ki * d[0], j * s[1] - p[1] + kj * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        out[:, :, i, j] = np.maximum(out[:, :, i, j], x[:, :, r, q])
    return out


def softmax_ref(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gelu_ref(x):
    return np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64).ravel()]).reshape(x.shape)


def cross_entropy_ref(logits, target, reduction="mean", ignore_index=-100):
    logp = np.log(softmax_ref(logits, 1))
    losses, count = [], 0
    for i, c in enumerate(target):
        if c == ignore_index:
            losses.append(0.0)
        else:
            losses.append(-logp[i, c])
            count += 1
    losses = np.array(losses)
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / count


# --- activations ----------------------------------------------------------------------------

def test_relu_matches_maximum_and_keeps_dtype():
    x = randn(4, 5)
    out = F.relu(t(x))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), np.maximum(x, 0))
    assert F.relu(t(np.array([-2, 3], np.int32))).tolist() == [0, 3]


def test_sigmoid_is_stable_for_large_inputs():
    x = np.array([-1000.0, -20.0, -1.0, 0.0, 2.0, 1000.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.sigmoid(t(x)).numpy()
    ref = np.array([0.5 * (1 + math.tanh(v / 2)) for v in x.astype(np.float64)])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-30)


def test_erf_kernel_is_accurate():
    x = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-30, 6, 2000)])
    ref = np.array([math.erf(v) for v in x])
    got = erf_kernel(np, x)
    assert np.max(np.abs(got - ref)) < 1e-10
    small = (np.abs(x) < 2) & (x != 0)
    assert np.max(np.abs(got - ref)[small] / np.abs(ref[small])) < 1e-12
    assert erf_kernel(np, np.array([np.inf, -np.inf])).tolist() == [1.0, -1.0]
    assert np.isnan(erf_kernel(np, np.array([np.nan]))[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_exact_matches_erf_formula(dtype):
    x = np.concatenate([randn(50), np.array([-8.0, -3.0, 0.0, 3.0, 8.0])]).astype(dtype)
    out = F.gelu(t(x))
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), gelu_ref(x), rtol=1e-6 if dtype == np.float32 else 1e-11, atol=1e-7)


def test_gelu_tanh_approximation_and_bad_mode():
    x = randn(30)
    xd = x.astype(np.float64)
    ref = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3)))
    np.testing.assert_allclose(F.gelu(t(x), approximate="tanh").numpy(), ref, rtol=1e-5, atol=1e-6)
    assert not np.allclose(F.gelu(t(x), approximate="tanh").numpy(), F.gelu(t(x)).numpy(), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(t(x), approximate="fast")


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis):
    x = randn(3, 4, 5) * 10
    np.testing.assert_allclose(F.softmax(t(x), axis=axis).numpy(), softmax_ref(x, axis), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(F.log_softmax(t(x), axis=axis).numpy(), np.log(softmax_ref(x, axis)),
                               rtol=1e-5, atol=1e-5)


def test_softmax_does_not_overflow():
    x = np.array([[1000.0, 1001.0, 1002.0]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.softmax(t(x)).numpy()
        logp = F.log_softmax(t(x)).numpy()
    np.testing.assert_allclose(out, softmax_ref(np.array([[0.0, 1.0, 2.0]]), -1), rtol=1e-6)
    assert np.isfinite(logp).all()
    with pytest.raises(ValueError, match="out of bounds"):
        F.softmax(t(x), axis=2)


# --- linear / conv / pool -------------------------------------------------------------------

def test_linear_matches_matmul_with_torch_weight_layout():
    x, w, b = randn(2, 3, 4), randn(5, 4), randn(5)
    np.testing.assert_allclose(F.linear(t(x), t(w), t(b)).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.linear(t(x), t(w)).numpy(), x @ w.T, rtol=1e-5, atol=1e-6)
    assert F.linear(t(x[0, 0]), t(w)).shape == (5,)


def test_linear_shape_and_dtype_errors():
    with pytest.raises(ValueError, match=r"in_features=4"):
        F.linear(t(randn(2, 3)), t(randn(5, 4)))
    with pytest.raises(ValueError, match=r"bias must have shape \[5\]"):
        F.linear(t(randn(2, 4)), t(randn(5, 4)), t(randn(3)))
    with pytest.raises(TypeError, match="float64 and weight dtype float32"):
        F.linear(t(randn(2, 4, dtype=np.float64)), t(randn(5, 4)))


CONV_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
    dict(groups=2),
    dict(padding=1, dilation=2, groups=2, stride=2),
]


def _batch_last(a):
    """a with its values and shape, in the memory order conv2d leaves its results in: (C, H, W, N)."""
    return np.ascontiguousarray(a.transpose(1, 2, 3, 0)).transpose(3, 0, 1, 2)


@pytest.mark.parametrize("kw", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_loops(kw, bias):
    groups = kw.get("groups", 1)
    x, w, b = randn(2, 4, 7, 6), randn(6, 4 // groups, 3, 2), randn(6)
    out = F.conv2d(t(x), t(w), t(b) if bias else None, **kw)
    pair = lambda v: v if isinstance(v, tuple) else (v, v)  # noqa: E731
    ref = conv2d_ref(x, w, b if bias else None, pair(kw.get("stride", 1)), pair(kw.get("padding", 0)),
                     pair(kw.get("dilation", 1)), groups)
    assert out.dtype == np.float32 and out.shape == ref.shape
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw", CONV_CASES)
def test_conv2d_and_its_cotangents_give_the_same_bits_in_either_memory_order(kw):
    """conv2d leaves its result batch-last in memory (an NCHW view); the next convolution, its
    cotangents and pooling read that order: the values and bits must not depend on it."""
    from runtime.ops.registry import get_op
    groups = kw.get("groups", 1)
    pair = lambda v: v if isinstance(v, tuple) else (v, v)  # noqa: E731
    pad = pair(kw.get("padding", 0))
    attrs = {"stride": pair(kw.get("stride", 1)), "padding": (pad[0], pad[0], pad[1], pad[1]),
             "dilation": pair(kw.get("dilation", 1)), "groups": groups}
    x, w, b = randn(3, 4, 7, 6), randn(6, 4 // groups, 3, 2), randn(6)
    out = get_op("conv2d").kernel(np, x, w, b, **attrs)
    assert out.transpose(1, 2, 3, 0).flags.c_contiguous          # the batch-last memory order
    np.testing.assert_allclose(out, conv2d_ref(x, w, b, attrs["stride"], pad, attrs["dilation"], groups),
                               rtol=1e-4, atol=1e-5)
    g = randn(*out.shape)
    for name, args in (("conv2d", (x, w, b)), ("conv2d_input_grad", (g, x, w)), ("conv2d_weight_grad", (g, x, w))):
        kernel = get_op(name).kernel
        same = kernel(np, *args, **attrs)
        moved = kernel(np, *[_batch_last(a) if a.ndim == 4 and a is not w else a for a in args], **attrs)
        np.testing.assert_array_equal(np.ascontiguousarray(moved).view(np.uint32),
                                      np.ascontiguousarray(same).view(np.uint32), err_msg=name)


def test_conv2d_same_padding_and_unbatched_input():
    x, w = randn(3, 5, 6), randn(2, 3, 3, 4)
    out = F.conv2d(t(x), t(w), padding="same")
    assert out.shape == (2, 5, 6)
    # even kernel width: PyTorch puts the extra column of padding on the right
    padded = np.pad(x, ((0, 0), (1, 1), (1, 2)))
    np.testing.assert_allclose(out.numpy(), conv2d_ref(padded[None], w)[0], rtol=1e-4, atol=1e-5)
    assert F.conv2d(t(x), t(w), padding="valid").shape == (2, 3, 3)


def test_conv2d_errors_name_the_shapes():
    x = t(randn(1, 3, 5, 5))
    with pytest.raises(ValueError, match=r"input has 3 channels .* expects 4"):
        F.conv2d(x, t(randn(2, 4, 3, 3)))
    with pytest.raises(ValueError, match="smaller than the kernel"):
        F.conv2d(x, t(randn(2, 3, 7, 7)))
    with pytest.raises(ValueError, match="4-D"):
        F.conv2d(t(randn(3, 5)), t(randn(2, 3, 3, 3)))
    with pytest.raises(ValueError, match="not divisible by groups"):
        F.conv2d(t(randn(1, 4, 5, 5)), t(randn(3, 2, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="same"):
        F.conv2d(x, t(randn(2, 3, 3, 3)), padding="same", stride=2)
    with pytest.raises(TypeError, match="floating-point"):
        F.conv2d(t(np.ones((1, 3, 5, 5), np.int64)), t(np.ones((2, 3, 3, 3), np.int64)))


POOL_CASES = [
    ((2, 2), None, (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((3, 2), (1, 2), (1, 0), (1, 1), False),
    ((2, 2), (2, 2), (0, 0), (1, 1), True),
    ((3, 3), (2, 2), (1, 1), (2, 1), True),
    ((2, 2), (2, 2), (1, 1), (1, 1), True),       # ceil_mode drops a window that would start in the padding
]


@pytest.mark.parametrize("k,s,p,d,ceil_mode", POOL_CASES)
def test_max_pool2d_matches_loops(k, s, p, d, ceil_mode):
    x = randn(2, 3, 7, 8)
    out = F.max_pool2d(t(x), k, s, p, d, ceil_mode)
    ref = max_pool2d_ref(x, k, s or k, p, d, ceil_mode)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out.numpy(), ref.astype(np.float32))


def test_max_pool2d_int_input_and_errors():
    x = np.arange(16, dtype=np.int64).reshape(1, 1, 4, 4) - 20
    out = F.max_pool2d(t(x), 2, padding=1)
    np.testing.assert_array_equal(out.numpy(), max_pool2d_ref(x, (2, 2), (2, 2), (1, 1)).astype(np.int64))
    with pytest.raises(ValueError, match="at most half"):
        F.max_pool2d(t(randn(1, 1, 6, 6)), 2, padding=2)
    with pytest.raises(ValueError, match="positive"):
        F.max_pool2d(t(randn(1, 1, 6, 6)), 0)


@pytest.mark.parametrize("k,s", [((1, 1), (1, 1)), ((2, 2), (2, 2)), ((3, 3), (1, 1)), ((9, 8), (1, 2))])
def test_max_pool2d_nans_propagate_for_every_window_size(k, s):
    """Small windows take the max of per-tap views, a 9x8 one (72 taps) reduces the window view."""
    x = randn(2, 3, 12, 11)
    x[0, 1, 4, 5] = x[1, 2, 0, 0] = np.nan
    out = F.max_pool2d(t(x), k, s)
    ref = max_pool2d_ref(np.where(np.isnan(x), np.inf, x), k, s, (0, 0))
    ref[np.isinf(ref)] = np.nan            # the windows that hold a NaN
    np.testing.assert_array_equal(out.numpy(), ref.astype(np.float32))


def _max_pool2d_grad_by_add_at(g, x, k, s, p, d):
    """The reference the taps kernel must equal bit for bit: g added with `add.at` at each window's
    first maximum (argmax over the -inf-padded window view)."""
    from runtime.ops.gradients.conv import _first_maxima
    shape, where = _first_maxima(np, x, g.shape[-2:], k, s, p, d)
    out = np.zeros(shape, g.dtype)
    np.add.at(out, where, g)
    return out[:, :, p[0]:p[0] + x.shape[2], p[1]:p[1] + x.shape[3]]


@pytest.mark.parametrize("layout", ["nchw", "batch_last"])
@pytest.mark.parametrize("k,s,p,d,ceil_mode", POOL_CASES + [((3, 3), (1, 1), (1, 1), (1, 1), False),
                                                        ((2, 2), (2, 2), (0, 0), (1, 1), False)])
def test_max_pool2d_grad_by_taps_has_add_ats_bits(k, s, p, d, ceil_mode, layout):
    """Ties, NaNs, -0.0 cotangents and overlapping windows whose sums depend on their order (1e8 and
    1): the per-tap kernel gives every bit of the argmax + add.at one it replaced, on x in NCHW memory
    and in a convolution's batch-last memory."""
    from runtime.ops.registry import get_op
    x = np.round(randn(2, 3, 8, 8))                     # many ties
    x[0, 0, 2:4, 2:4] = np.nan
    x[1, 1, :3, :3] = -np.inf
    if layout == "batch_last":
        x = _batch_last(x)
    s = s or k
    attrs = {"kernel_size": k, "stride": s, "padding": p, "dilation": d, "ceil_mode": ceil_mode}
    pooled = get_op("max_pool2d").kernel(np, x, **attrs)
    g = np.where(RNG.random(pooled.shape) < 0.5, 1e8, 1.0).astype(np.float32) * np.sign(randn(*pooled.shape))
    g.flat[::7] = -0.0
    out = get_op("max_pool2d_grad").kernel(np, g, x, **attrs)
    ref = _max_pool2d_grad_by_add_at(g, x, k, s, p, d)
    assert out.shape == x.shape
    np.testing.assert_array_equal(np.ascontiguousarray(out).view(np.uint32), np.ascontiguousarray(ref).view(np.uint32))


def test_relu_cotangent_is_one_relu_grad_op_with_wheres_bits():
    """relu's rule is the `relu_grad` op (its NumPy kernel ANDs g's bits with the mask): the values of
    `where(x > 0, g, 0)`, -0.0, inf and NaN in g and NaN in x included, in a convolution's batch-last
    memory order too."""
    from runtime.ops.registry import get_op
    x, g = randn(4, 3, 5, 5), randn(4, 3, 5, 5)
    x.flat[::9], g.flat[::7], g.flat[1::11], g.flat[2::13] = np.nan, -0.0, np.inf, np.nan
    for xs, gs in ((x, g), (_batch_last(x), _batch_last(g)), (x, _batch_last(g))):
        out = get_op("relu_grad").kernel(np, gs, xs)
        np.testing.assert_array_equal(np.ascontiguousarray(out).view(np.uint32),
                                      np.where(x > 0, g, np.float32(0)).view(np.uint32))
    finite = np.where(np.isfinite(g), g, np.float32(1))
    xt = rt.tensor(x, requires_grad=True)
    (F.relu(xt) * t(finite)).sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(x > 0, finite, np.float32(0)))
    program = rt.trace(lambda a: rt.grad(lambda v: F.relu(v).sum())(a), [rt.InputSpec([4, 3], "float32", "a")])[0]
    assert [op.type for op in program.global_block.ops].count("relu_grad") == 1


def test_linear_result_is_fresh_so_the_relu_after_it_writes_in_place():
    """linear allocates its result (a matmul's): the plan may write the next elementwise op into it, as
    it does after a matmul (an MLP layer's ReLU then allocates nothing)."""
    from runtime.executor import Executor
    w, b = t(randn(8, 4)), t(randn(8))
    program = rt.trace(lambda x: F.relu(F.linear(x, w, b)), [rt.InputSpec([3, 4], "float32", "x")])[0]
    source = Executor().compile(program).source
    assert "out=linear" in source, source
    x = randn(3, 4)
    np.testing.assert_array_equal(Executor().run(program, {program.inputs[0].name: x})[0].numpy(),
                                  np.maximum(x @ w.numpy().T + b.numpy(), 0))


# --- normalization, dropout, losses, lookup ---------------------------------------------------

@pytest.mark.parametrize("shape", [(4,), (3, 4)])
def test_layer_norm_matches_mean_var(shape):
    x, w, b = randn(2, 3, 4) * 3 + 1, randn(*shape), randn(*shape)
    axes = tuple(range(3 - len(shape), 3))
    xd = x.astype(np.float64)
    norm = (xd - xd.mean(axes, keepdims=True)) / np.sqrt(xd.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(F.layer_norm(t(x), shape, t(w), t(b)).numpy(), norm * w + b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(F.layer_norm(t(x), shape).numpy(), norm, rtol=1e-4, atol=1e-5)
    assert F.layer_norm(t(x), shape, eps=10.0).numpy().std() < 0.9 * norm.std()


def test_layer_norm_errors():
    with pytest.raises(ValueError, match=r"does not end with normalized_shape \[5\]"):
        F.layer_norm(t(randn(2, 4)), 5)
    with pytest.raises(ValueError, match="weight shape"):
        F.layer_norm(t(randn(2, 4)), 4, weight=t(randn(3)))


def test_dropout_masks_scales_and_is_seeded():
    x = np.ones((200, 50), np.float32)
    rt.seed(7)
    a = F.dropout(t(x), 0.3).numpy()
    rt.seed(7)
    b = F.dropout(t(x), 0.3).numpy()
    c = F.dropout(t(x), 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)
    assert set(np.unique(a).tolist()) == {0.0, np.float32(1 / 0.7)}
    assert abs((a == 0).mean() - 0.3) < 0.02
    assert a.dtype == np.float32


def test_dropout_identity_cases_and_bad_p():
    x = t(randn(3, 4))
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).numpy().any()
    for p in (-0.1, 1.5, "0.5"):
        with pytest.raises(ValueError, match="between 0 and 1"):
            F.dropout(x, p)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_log_softmax_pick(reduction):
    logits, target = randn(6, 5) * 4, np.array([0, 4, 2, 2, 1, 3])
    out = F.cross_entropy(t(logits), t(target), reduction=reduction)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), cross_entropy_ref(logits, target, reduction), rtol=1e-5, atol=1e-6)


def test_cross_entropy_ignore_index_probabilities_smoothing_and_spatial():
    logits, target = randn(5, 4), np.array([1, -100, 3, 0, -100])
    np.testing.assert_allclose(F.cross_entropy(t(logits), t(target)).numpy(),
                               cross_entropy_ref(logits, target), rtol=1e-5)
    assert np.isnan(F.cross_entropy(t(logits), t(np.full(5, -100))).numpy())
    probs = softmax_ref(randn(5, 4), 1).astype(np.float32)
    logp = np.log(softmax_ref(logits, 1))
    np.testing.assert_allclose(F.cross_entropy(t(logits), t(probs)).numpy(), -(probs * logp).sum(1).mean(), rtol=1e-5)
    hard = np.array([1, 2, 3, 0, 0])
    smooth = 0.9 * -logp[np.arange(5), hard] + 0.1 * -logp.mean(1)
    np.testing.assert_allclose(F.cross_entropy(t(logits), t(hard), label_smoothing=0.1).numpy(), smooth.mean(),
                               rtol=1e-5)
    spatial, spatial_target = randn(2, 4, 3), np.array([[0, 1, 2], [3, 3, 0]])
    flat = np.moveaxis(spatial, 1, -1).reshape(-1, 4)
    np.testing.assert_allclose(F.cross_entropy(t(spatial), t(spatial_target), reduction="none").numpy(),
                               cross_entropy_ref(flat, spatial_target.ravel(), "none").reshape(2, 3), rtol=1e-5)


def test_cross_entropy_errors():
    logits = t(randn(3, 4))
    with pytest.raises(ValueError, match=r"class-index targets of shape \[3\]"):
        F.cross_entropy(logits, t(np.array([0, 1])))
    with pytest.raises(IndexError, match="target 4 is out of range for 4 classes"):
        F.cross_entropy(logits, t(np.array([0, 4, 1])))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, t(np.array([0, 1, 1])), reduction="avg")
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(logits, t(np.array([True, False, True])))


def test_embedding_picks_rows_and_checks_range():
    w, ids = randn(10, 3), np.array([[1, 9], [0, 1]])
    out = F.embedding(t(ids), t(w))
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy(), w[ids])
    with pytest.raises(IndexError, match="index 10 is out of range for 10"):
        F.embedding(t(np.array([10])), t(w))
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(t(np.array([-1])), t(w))
    with pytest.raises(TypeError, match="integers"):
        F.embedding(t(np.array([1.0])), t(w))


def test_flatten():
    x = t(randn(2, 3, 4, 5))
    assert F.flatten(x).shape == (120,)
    assert F.flatten(x, 1).shape == (2, 60)
    assert F.flatten(x, 1, 2).shape == (2, 12, 5)
    assert F.flatten(x, -2).shape == (2, 3, 20)
    assert F.flatten(x, 2, 2) is x
    np.testing.assert_array_equal(F.flatten(x, 1).numpy(), x.numpy().reshape(2, 60))
    with pytest.raises(ValueError, match="must not come after"):
        F.flatten(x, 2, 1)


# --- layers -----------------------------------------------------------------------------------

def test_linear_layer_shapes_init_and_forward():
    rt.seed(0)
    fc = nn.Linear(16, 3)
    assert fc.weight.shape == (3, 16) and fc.bias.shape == (3,)
    assert fc.weight.dtype == np.float32 and isinstance(fc.weight, rt.Parameter)
    w = fc.weight.numpy()
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.2       # kaiming_uniform(a=sqrt 5): U(+-1/sqrt(16))
    assert np.abs(fc.bias.numpy()).max() <= 0.25
    x = randn(4, 16)
    np.testing.assert_allclose(fc(t(x)).numpy(), x @ w.T + fc.bias.numpy(), rtol=1e-5, atol=1e-6)
    assert nn.Linear(4, 2, bias=False).bias is None
    assert [n for n, _ in nn.Linear(4, 2, bias=False).named_parameters()] == ["weight"]


def test_conv2d_layer():
    rt.seed(0)
    conv = nn.Conv2D(4, 6, 3, stride=2, padding=1, groups=2)
    assert conv.weight.shape == (6, 2, 3, 3) and conv.bias.shape == (6,)
    assert np.abs(conv.weight.numpy()).max() <= 1 / math.sqrt(2 * 9)
    x = randn(2, 4, 8, 8)
    ref = conv2d_ref(x, conv.weight.numpy(), conv.bias.numpy(), (2, 2), (1, 1), (1, 1), 2)
    np.testing.assert_allclose(conv(t(x)).numpy(), ref, rtol=1e-4, atol=1e-5)
    assert nn.Conv2D(3, 2, (3, 1), padding="same")(t(randn(1, 3, 5, 5))).shape == (1, 2, 5, 5)
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2D(3, 6, 3, groups=2)


def test_small_layers():
    x = randn(2, 3, 6, 6)
    np.testing.assert_array_equal(nn.MaxPool2D(2)(t(x)).numpy(), max_pool2d_ref(x, (2, 2), (2, 2), (0, 0)))
    np.testing.assert_array_equal(nn.ReLU()(t(x)).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.GELU()(t(x[0, 0])).numpy(), gelu_ref(x[0, 0]), rtol=1e-6, atol=1e-7)
    assert nn.GELU("tanh").approximate == "tanh"
    np.testing.assert_allclose(nn.Softmax(1)(t(x)).numpy(), softmax_ref(x, 1), rtol=1e-5)
    assert nn.Flatten()(t(x)).shape == (2, 108)
    assert nn.Flatten(0, 1)(t(x)).shape == (6, 6, 6)
    with pytest.raises(ValueError, match="positive"):
        nn.MaxPool2D(0)


def test_layer_norm_and_embedding_layers():
    ln = nn.LayerNorm((2, 3))
    assert ln.weight.numpy().tolist() == [[1.0] * 3] * 2 and not ln.bias.numpy().any()
    x = randn(4, 2, 3)
    xd = x.astype(np.float64)
    ref = (xd - xd.mean((1, 2), keepdims=True)) / np.sqrt(xd.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln(t(x)).numpy(), ref, rtol=1e-4, atol=1e-5)
    assert nn.LayerNorm(3, elementwise_affine=False).parameters() == []
    rt.seed(0)
    emb = nn.Embedding(7, 4, padding_idx=-1)
    assert emb.padding_idx == 6 and not emb.weight.numpy()[6].any() and emb.weight.numpy()[:6].all()
    assert emb.weight.dtype == np.float32
    ids = np.array([[0, 6], [3, 3]])
    np.testing.assert_array_equal(emb(t(ids)).numpy(), emb.weight.numpy()[ids])


def test_dropout_layer_follows_train_and_eval():
    drop = nn.Dropout(0.5)
    x = t(np.ones((50, 40), np.float32))
    assert drop.training
    assert (drop(x).numpy() == 0).any()
    assert drop.eval() is drop and not drop.training
    assert drop(x) is x
    drop.train()
    assert (drop(x).numpy() == 0).any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(2)


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)
        self.scale = 2.0

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_named_parameters_in_registration_order():
    model = nn.Sequential(MLP(), nn.Dropout(0.1), nn.Linear(4, 2))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.fc1.weight", "0.fc1.bias", "0.fc2.weight", "0.fc2.bias", "2.weight", "2.bias"]
    assert [p.shape for p in model.parameters()] == [(16, 8), (16,), (4, 16), (4,), (2, 4), (2,)]
    assert all(isinstance(p, rt.Parameter) for p in model.parameters())
    assert [n for n, _ in model.named_parameters(prefix="net")][0] == "net.0.fc1.weight"
    assert model[0].named_parameters(include_sublayers=False) == []


def test_sublayers_children_and_sequential_container():
    mlp = MLP()
    model = nn.Sequential(mlp, nn.Linear(4, 2))
    assert model.children() == [mlp, model[1]]
    assert [n for n, _ in model.named_sublayers()] == ["0", "0.fc1", "0.act", "0.fc2", "1"]
    assert model.sublayers() == [mlp, mlp.fc1, mlp.act, mlp.fc2, model[1]]
    assert model.sublayers(include_self=True)[0] is model
    assert len(model) == 2 and model[-1] is model[1] and list(model) == [mlp, model[1]]
    assert isinstance(model[:1], nn.Sequential) and len(model[:1]) == 1 and model[:1][0] is mlp
    with pytest.raises(IndexError):
        model[2]
    x = randn(3, 8)
    np.testing.assert_allclose(model(t(x)).numpy(), model[1](mlp(t(x))).numpy())
    model.append(nn.ReLU())
    assert len(model) == 3 and [n for n, _ in model.named_children()][-1] == "2"


def test_attribute_registration_rules():
    layer = MLP()
    assert "fc1" in layer._sublayers and "fc1" not in layer.__dict__ and layer.scale == 2.0
    layer.extra = rt.Parameter(np.zeros(3, np.float32), rt.get_backend("cpu"))
    assert [n for n, _ in layer.named_parameters()][0] == "extra"     # own parameters before sublayers'
    with pytest.raises(TypeError, match="Parameter or None"):
        layer.extra = rt.tensor(np.zeros(3, np.float32))
    layer.extra = None
    assert "extra" not in [n for n, _ in layer.named_parameters()]
    del layer.fc2
    assert [n for n, _ in layer.named_sublayers()] == ["fc1", "act"]
    with pytest.raises(AttributeError, match="fc2"):
        layer.fc2
    layer.register_parameter("gain", None)
    assert layer.gain is None
    with pytest.raises(KeyError, match="already has an attribute"):
        layer.register_parameter("scale", None)
    with pytest.raises(KeyError, match=r"no '\.'"):
        layer.add_sublayer("a.b", nn.ReLU())
    with pytest.raises(TypeError, match="Layer or None"):
        layer.add_sublayer("bad", 3)

    class Forgot(nn.Layer):
        def __init__(self):
            self.fc = nn.Linear(2, 2)
    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Forgot()
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Layer()(1)


def test_state_dict_round_trip():
    rt.seed(1)
    a, b = MLP(), MLP()
    x = t(randn(5, 8))
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    state = a.state_dict()
    assert list(state) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(type(v) is rt.Tensor for v in state.values())
    weight = b.fc1.weight
    result = b.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.fc1.weight is weight                                  # same Parameter object, new value
    np.testing.assert_array_equal(b(x).numpy(), a(x).numpy())
    b.load_state_dict({k: v.numpy() * 0 for k, v in state.items()})   # NumPy arrays load too
    assert not b(x).numpy().any()
    assert a(x).numpy().any()                                      # the source was copied, not aliased


def test_load_state_dict_errors_are_clear_and_atomic():
    model = MLP()
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    before = model.fc1.weight.numpy().copy()
    bad = dict(state, **{"fc1.weight": np.zeros((16, 9), np.float32)})
    bad.pop("fc2.bias")
    bad["fc3.weight"] = np.zeros(2, np.float32)
    with pytest.raises(ValueError) as info:
        model.load_state_dict(bad)
    message = str(info.value)
    assert "missing key(s): 'fc2.bias'" in message
    assert "unexpected key(s): 'fc3.weight'" in message
    assert "shape mismatch for 'fc1.weight': the value has shape [16, 9], the parameter has shape [16, 8]" in message
    np.testing.assert_array_equal(model.fc1.weight.numpy(), before)   # nothing was loaded
    with pytest.raises(ValueError, match=r"dtype mismatch for 'fc1.bias': the value is int64.*astype"):
        model.load_state_dict(dict(state, **{"fc1.bias": np.arange(16)}))     # another kind: never cast
    model.load_state_dict(dict(state, **{"fc1.bias": np.full(16, 0.1, np.float64)}))   # PyTorch's copy_ casts
    assert model.fc1.bias.dtype == np.float32 and model.fc1.bias.numpy()[0] == np.float32(0.1)
    partial = {"fc1.bias": np.ones(16, np.float32), "other": np.ones(1, np.float32)}
    result = model.load_state_dict(partial, strict=False)
    assert result.missing_keys == ["fc1.weight", "fc2.weight", "fc2.bias"] and result.unexpected_keys == ["other"]
    assert model.fc1.bias.numpy().tolist() == [1.0] * 16


def test_shared_parameters_listed_once_but_saved_under_each_name():
    fc = nn.Linear(3, 3)
    model = nn.Sequential(fc, nn.ReLU(), fc)
    assert len(model.parameters()) == 2
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_train_eval_propagate():
    model = nn.Sequential(MLP(), nn.Dropout(0.5))
    assert model.eval() is model
    assert not any(layer.training for layer in model.sublayers(include_self=True))
    model.train()
    assert all(layer.training for layer in model.sublayers(include_self=True))


def test_seed_makes_initialization_deterministic():
    rt.seed(42)
    a = nn.Sequential(nn.Linear(4, 5), nn.Conv2D(1, 2, 3), nn.Embedding(4, 2))
    rt.seed(42)
    b = nn.Sequential(nn.Linear(4, 5), nn.Conv2D(1, 2, 3), nn.Embedding(4, 2))
    rt.seed(43)
    c = nn.Sequential(nn.Linear(4, 5), nn.Conv2D(1, 2, 3), nn.Embedding(4, 2))
    for (name, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy(), err_msg=name)
        assert not np.array_equal(pa.numpy(), pc.numpy()), name


def test_to_device_and_repr():
    model = MLP()
    weight = model.fc1.weight
    assert model.to("cpu") is model and model.fc1.weight is weight and weight.device == "cpu"
    if not rt.gpu_available():
        with pytest.raises(rt.DeviceUnavailableError):
            model.to("gpu")
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.Conv2D(1, 2, 3, bias=False), nn.GELU("tanh")))
    assert "(0): Linear(in_features=2, out_features=3, bias=True)" in text
    assert "(1): Conv2D(1, 2, kernel_size=(3, 3), stride=(1, 1), padding=(0, 0), bias=False)" in text
    assert "(2): GELU(approximate='tanh')" in text


# --- layers models port from Paddle/PyTorch: activations, padding, resizing, Conv3D, InstanceNorm, losses ---------
# Each runs eagerly and as a static function with a dynamic batch, against a NumPy oracle.

from transpiler import InputSpec, to_static  # noqa: E402


def _bilinear_ref(x, oh, ow, align_corners):
    """PyTorch's bilinear resize: half-pixel source coordinates clamped at 0, or corners aligned."""
    def coords(o, i):
        d = np.arange(o, dtype=np.float64)
        if align_corners:
            s = d * ((i - 1) / (o - 1)) if o > 1 else np.zeros(o)
        else:
            s = np.maximum((d + 0.5) * (i / o) - 0.5, 0)
        lo = np.minimum(np.floor(s).astype(int), i - 1)
        return lo, np.minimum(lo + 1, i - 1), s - lo
    y0, y1, fy = coords(oh, x.shape[2])
    x0, x1, fx = coords(ow, x.shape[3])
    top = x[:, :, y0][:, :, :, x0] * (1 - fx) + x[:, :, y0][:, :, :, x1] * fx
    bottom = x[:, :, y1][:, :, :, x0] * (1 - fx) + x[:, :, y1][:, :, :, x1] * fx
    return top * (1 - fy)[:, None] + bottom * fy[:, None]


def _conv3d_ref(x, w, b, s, p, groups):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0)) + tuple((q, q) for q in p))
    o, cg, kd, kh, kw = w.shape
    od, oh, ow = [(x.shape[2 + i] - k) // s[i] + 1 for i, k in enumerate((kd, kh, kw))]
    out = np.zeros((x.shape[0], o, od, oh, ow))
    for oc in range(o):
        g = oc // (o // groups)
        for i, j, k in np.ndindex(od, oh, ow):
            patch = x[:, g * cg:(g + 1) * cg, i * s[0]:i * s[0] + kd, j * s[1]:j * s[1] + kh, k * s[2]:k * s[2] + kw]
            out[:, oc, i, j, k] = (patch * w[oc]).sum(axis=(1, 2, 3, 4)) + b[oc]
    return out


_X4 = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32) * 4
_X5 = RNG.standard_normal((2, 4, 5, 6, 7)).astype(np.float32)
_A, _B = RNG.standard_normal((4, 6)).astype(np.float32), RNG.standard_normal((4, 6)).astype(np.float32)
_P = RNG.uniform(0.05, 0.95, (4, 6)).astype(np.float32)
_T = RNG.uniform(0, 1, (4, 6)).astype(np.float32)


def _prelu():
    layer = nn.PReLU(3)
    layer.weight.set_value(rt.tensor(np.array([0.1, 0.2, 0.3], np.float32)))
    return layer


def _conv3d():
    rt.seed(3)
    return nn.Conv3D(4, 6, (3, 2, 3), stride=(2, 1, 2), padding=(1, 1, 0), groups=2)


x64 = _X4.astype(np.float64)
MORE_LAYERS = [
    ("ReLU6", nn.ReLU6, (_X4,), lambda x: np.clip(x, 0, 6)),
    ("Hardswish", nn.Hardswish, (_X4,), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("Hardsigmoid", nn.Hardsigmoid, (_X4,), lambda x: np.clip(x + 3, 0, 6) / 6),
    ("Hardtanh", lambda: nn.Hardtanh(-2, 2), (_X4,), lambda x: np.clip(x, -2, 2)),
    ("Softsign", nn.Softsign, (_X4,), lambda x: x / (1 + np.abs(x))),
    ("LogSigmoid", nn.LogSigmoid, (_X4,), lambda x: -np.logaddexp(0, -x64)),
    ("Mish", nn.Mish, (_X4,), lambda x: x64 * np.tanh(np.logaddexp(0, x64))),
    ("Tanh", nn.Tanh, (_X4,), np.tanh),
    ("LeakyReLU", lambda: nn.LeakyReLU(0.2), (_X4,), lambda x: np.where(x >= 0, x, 0.2 * x)),
    ("ELU", lambda: nn.ELU(0.5), (_X4,), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x64))),
    ("SiLU", nn.SiLU, (_X4,), lambda x: x64 / (1 + np.exp(-x64))),
    ("Softplus", nn.Softplus, (_X4,), lambda x: np.logaddexp(0, x64)),
    ("LogSoftmax", lambda: nn.LogSoftmax(1), (_X4,), lambda x: x64 - np.log(np.exp(x64).sum(1, keepdims=True))),
    ("PReLU", _prelu, (_X4,), lambda x: np.where(x >= 0, x, np.array([.1, .2, .3])[None, :, None, None] * x)),
    ("Pad2D-reflect", lambda: nn.Pad2D([1, 2, 2, 1], mode="reflect"), (_X4,),
     lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="reflect")),
    ("Pad2D-replicate", lambda: nn.Pad2D([0, 1, 3, 0], mode="replicate"), (_X4,),
     lambda x: np.pad(x, ((0, 0), (0, 0), (3, 0), (0, 1)), mode="edge")),
    ("Pad2D-constant", lambda: nn.Pad2D(1, value=2.0), (_X4,), lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)),
                                                                               constant_values=2.0)),
    ("Upsample-nearest", lambda: nn.Upsample(scale_factor=2), (_X4,), lambda x: x.repeat(2, 2).repeat(2, 3)),
    ("Upsample-NEAREST", lambda: nn.Upsample(scale_factor=2, mode="NEAREST"), (_X4,),      # Paddle's spelling
     lambda x: x.repeat(2, 2).repeat(2, 3)),
    ("Upsample-nearest-size", lambda: nn.Upsample(size=(7, 4)), (_X4,),
     lambda x: x[:, :, np.floor(np.arange(7) * 5 / 7).astype(int)][:, :, :, np.floor(np.arange(4) * 1.5).astype(int)]),
    ("Upsample-bilinear", lambda: nn.Upsample(size=(7, 9), mode="bilinear"), (_X4,),
     lambda x: _bilinear_ref(x64, 7, 9, False)),
    ("Upsample-bilinear-corners", lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), (_X4,),
     lambda x: _bilinear_ref(x64, 10, 12, True)),
    ("InstanceNorm2D", lambda: nn.InstanceNorm2D(3), (_X4,),
     lambda x: (x64 - x64.mean((2, 3), keepdims=True)) / np.sqrt(x64.var((2, 3), keepdims=True) + 1e-5)),
    ("Conv3D", _conv3d, (_X5,), lambda x: _conv3d_ref(x, _conv3d().weight.numpy(), _conv3d().bias.numpy(),
                                                      (2, 1, 2), (1, 1, 0), 2)),
    ("CosineSimilarity", nn.CosineSimilarity, (_A, _B),
     lambda a, b: (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))),
    ("AdaptiveMaxPool2D", lambda: nn.AdaptiveMaxPool2D((2, 4)), (_X4,),
     lambda x: np.stack([np.stack([x[:, :, r0:r1, c0:c1].max(axis=(2, 3)) for c0, c1 in ((0, 2), (1, 3), (3, 5), (4, 6))],
                                  -1) for r0, r1 in ((0, 3), (2, 5))], -2)),
    ("AdaptiveMaxPool2D-even", lambda: nn.AdaptiveMaxPool2D(1), (_X4,), lambda x: x.max(axis=(2, 3), keepdims=True)),
    ("MaxPool1D", lambda: nn.MaxPool1D(2, 1, padding=1), (_A[:, None],),
     lambda a: np.maximum(np.pad(a, ((0, 0), (0, 0), (1, 1)), constant_values=-np.inf)[:, :, :-1],
                          np.pad(a, ((0, 0), (0, 0), (1, 1)), constant_values=-np.inf)[:, :, 1:])),
    ("AvgPool1D", lambda: nn.AvgPool1D(3), (_A[:, None],), lambda a: a.reshape(4, 1, 2, 3).mean(-1)),
    ("AdaptiveAvgPool1D", lambda: nn.AdaptiveAvgPool1D(4), (_A[:, None],),
     lambda a: np.stack([a[:, :, s:e].mean(-1) for s, e in ((0, 2), (1, 3), (3, 5), (4, 6))], -1)),
    ("AdaptiveMaxPool1D", lambda: nn.AdaptiveMaxPool1D(2), (_A[:, None],), lambda a: a.reshape(4, 1, 2, 3).max(-1)),
    ("MSELoss", nn.MSELoss, (_A, _B), lambda a, b: ((a - b) ** 2).mean()),
    ("L1Loss-sum", lambda: nn.L1Loss("sum"), (_A, _B), lambda a, b: np.abs(a - b).sum()),
    ("SmoothL1Loss", nn.SmoothL1Loss, (_A, _B),
     lambda a, b: np.where(np.abs(a - b) < 1, 0.5 * (a - b) ** 2, np.abs(a - b) - 0.5).mean()),
    ("BCELoss", nn.BCELoss, (_P, _T), lambda p, t: -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()),
]


@pytest.mark.parametrize("name, make, inputs, oracle", MORE_LAYERS, ids=[m[0] for m in MORE_LAYERS])
def test_more_layers_match_numpy_eagerly_and_static(name, make, inputs, oracle):
    layer = make()
    want = oracle(*inputs)
    tensors = [rt.tensor(a) for a in inputs]
    with rt.no_grad():
        np.testing.assert_allclose(layer(*tensors).numpy(), want, rtol=1e-4, atol=1e-5)
        spec = [InputSpec([None] + list(a.shape[1:]), "float32") for a in inputs]
        static = to_static(lambda *xs: layer(*xs), input_spec=spec)
        np.testing.assert_allclose(static(*tensors).numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn", [F.hardswish, F.instance_norm, F.mish,
                                lambda t: F.interpolate(t, size=(5, 7), mode="bilinear"),
                                lambda t: F.pad(t, [1, 2, 1, 1], mode="reflect")])
def test_more_functions_gradients_match_finite_differences(fn):
    x = RNG.standard_normal((1, 2, 3, 4))
    weights = RNG.standard_normal(fn(rt.tensor(x)).shape)

    def loss(t):
        return (fn(t) * rt.tensor(weights)).sum()
    g = rt.grad(loss)(rt.tensor(x)).numpy()
    num = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[i] = 1e-6
        num[i] = (loss(rt.tensor(x + d)).numpy() - loss(rt.tensor(x - d)).numpy()) / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


def test_pad_and_interpolate_reject_what_they_do_not_support():
    x = rt.tensor(_X4)
    with pytest.raises(ValueError, match="mode"):
        F.pad(x, [1, 1], mode="mirror")
    with pytest.raises(ValueError, match="exactly one"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="mode"):
        F.interpolate(x, scale_factor=2, mode="bicubic")


def test_create_parameter_add_parameter_and_apply():
    """Paddle's Layer API: create_parameter (Xavier-uniform, zeros for a bias), add_parameter, apply."""
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([4, 6])
            self.b = self.add_parameter("b", self.create_parameter([6], is_bias=True))
            self.c = self.create_parameter([2], default_initializer=lambda t: nn.init.constant_(t, 0.5))
            self.fc = nn.Linear(2, 2)

    rt.seed(0)
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["w", "b", "c", "fc.weight", "fc.bias"]
    bound = math.sqrt(6 / (4 + 6))
    assert np.abs(net.w.numpy()).max() <= bound and net.w.numpy().std() > 0
    np.testing.assert_array_equal(net.b.numpy(), np.zeros(6, np.float32))
    np.testing.assert_array_equal(net.c.numpy(), np.full(2, 0.5, np.float32))
    seen = []
    assert net.apply(lambda layer: seen.append(type(layer).__name__)) is net
    assert seen == ["Linear", "Net"]


def _gather_tree_ref(ids, parents):
    out, beam = np.zeros_like(ids), np.tile(np.arange(ids.shape[2]), (ids.shape[1], 1))
    for t in range(ids.shape[0] - 1, -1, -1):
        out[t] = np.take_along_axis(ids[t], beam, 1)
        beam = np.take_along_axis(parents[t], beam, 1)
    return out


def _temporal_shift_ref(x, seg, ratio):
    x5 = x.reshape((-1, seg) + x.shape[1:])
    out, c = np.zeros_like(x5), x.shape[1]
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    out[:, 1:, :c1] = x5[:, :-1, :c1]
    out[:, :-1, c1:c2] = x5[:, 1:, c1:c2]
    out[:, :, c2:] = x5[:, :, c2:]
    return out.reshape(x.shape)


@pytest.mark.parametrize("spec", [None, [None, None, 3]])
def test_gather_tree_follows_parents_back_for_static_and_dynamic_steps(spec):
    ids, parents = RNG.integers(0, 9, (5, 2, 3)), RNG.integers(0, 3, (5, 2, 3))
    fn = (lambda a, b: F.gather_tree(a, b))
    static = to_static(fn, input_spec=None if spec is None else [InputSpec(spec, "int64")] * 2)
    want = _gather_tree_ref(ids, parents)
    np.testing.assert_array_equal(F.gather_tree(rt.tensor(ids), rt.tensor(parents)).numpy(), want)
    np.testing.assert_array_equal(static(rt.tensor(ids), rt.tensor(parents)).numpy(), want)


def test_sequence_mask_temporal_shift_and_label_smooth():
    lengths = np.array([3, 0, 5])
    np.testing.assert_array_equal(F.sequence_mask(rt.tensor(lengths)).numpy(), np.arange(5) < lengths[:, None])
    mask = to_static(lambda n: F.sequence_mask(n, 6, "float32"))(rt.tensor(lengths)).numpy()
    np.testing.assert_array_equal(mask, (np.arange(6) < lengths[:, None]).astype(np.float32))
    x = RNG.standard_normal((8, 8, 2, 2)).astype(np.float32)
    shift = to_static(lambda a: F.temporal_shift(a, 4, 0.25), input_spec=[InputSpec([None, 8, 2, 2])])
    np.testing.assert_array_equal(shift(rt.tensor(x)).numpy(), _temporal_shift_ref(x, 4, 0.25))
    np.testing.assert_array_equal(F.temporal_shift(rt.tensor(x), 2, 0.125).numpy(), _temporal_shift_ref(x, 2, 0.125))
    onehot = np.eye(5, dtype=np.float32)[[1, 3]]
    np.testing.assert_allclose(F.label_smooth(rt.tensor(onehot), epsilon=0.1).numpy(), 0.9 * onehot + 0.02)


@pytest.mark.parametrize("static", [False, True])
def test_embedding_padding_idx_row_gets_no_gradient(static):
    """As in PyTorch and Paddle: the padding vector keeps its value while training (it got gradient)."""
    rt.seed(0)
    emb = nn.Embedding(5, 3, padding_idx=1)
    ids = np.array([[1, 2, 1], [4, 1, 2]])
    f = to_static(emb) if static else emb
    c = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    out = f(rt.tensor(ids))
    np.testing.assert_array_equal(out.numpy(), emb.weight.numpy()[ids])
    (out * rt.tensor(c)).sum().backward()
    want = np.zeros((5, 3), np.float32)
    np.add.at(want, ids[ids != 1], c[ids != 1])
    np.testing.assert_allclose(emb.weight.grad.numpy(), want, rtol=1e-6, atol=1e-6)


def test_sequential_of_name_layer_pairs():
    """Paddle's form: Sequential(("conv", layer), ...) names the sublayers."""
    rt.seed(0)
    seq = nn.Sequential(("fc", nn.Linear(3, 2)), ("act", nn.Tanh()))
    assert [n for n, _ in seq.named_parameters()] == ["fc.weight", "fc.bias"]
    x = randn(4, 3)
    want = np.tanh(x @ seq.fc.weight.numpy().T + seq.fc.bias.numpy())
    np.testing.assert_allclose(seq(rt.tensor(x)).numpy(), want, rtol=1e-6)


def test_nearest_upsample_by_whole_factors_on_dynamic_spatial_dims():
    """YOLOv3's upsample with InputSpec([None, C, None, None]): was 'the spatial dims must be known'."""
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    up = to_static(lambda a: F.interpolate(a, scale_factor=2.0, mode="NEAREST"),
                   input_spec=[InputSpec([None, 3, None, None])])
    np.testing.assert_array_equal(up(rt.tensor(x)).numpy(), x.repeat(2, 2).repeat(2, 3))
    np.testing.assert_array_equal(F.interpolate(rt.tensor(x), scale_factor=(1, 3)).numpy(), x.repeat(3, 3))


def test_paddle_training_names():
    """Paddle's loop: loss.backward(); opt.minimize(loss); model.clear_gradients() (or opt.clear_grad())."""
    rt.seed(0)
    model = nn.Linear(3, 2)
    opt = rt.optim.SGD(model.parameters(), lr=0.5)
    x = randn(4, 3)
    before = model.weight.numpy().copy()
    loss = model(rt.tensor(x)).sum()
    loss.backward()
    opt.minimize(loss)
    np.testing.assert_allclose(model.weight.numpy(), before - 0.5 * np.tile(x.sum(axis=0), (2, 1)), rtol=1e-6)
    model.clear_gradients()
    assert all(p.grad is None for p in model.parameters())
    model(rt.tensor(x)).sum().backward()
    opt.clear_grad()
    assert all(p.grad is None for p in model.parameters())
    other = nn.Linear(3, 2)
    other.set_state_dict(model.state_dict())
    np.testing.assert_array_equal(other.weight.numpy(), model.weight.numpy())


@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_resize_of_float64_keeps_float64_weights(align_corners):
    """The interpolation weights are float64 for float64 input (they were float32: 1e-7 off PyTorch's double)."""
    x = RNG.standard_normal((1, 2, 5, 7))
    got = F.interpolate(rt.tensor(x), size=(9, 11), mode="bilinear", align_corners=align_corners)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), _bilinear_ref(x, 9, 11, align_corners), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("mode, np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_conv_padding_mode_pads_the_input_by_that_mode(mode, np_mode):
    """PyTorch's Conv2d/Conv1d(padding_mode=): the same as an unpadded convolution of the input padded by the mode."""
    x = RNG.standard_normal((2, 3, 6, 7)).astype(np.float32)
    conv = nn.Conv2d(3, 4, 3, padding=(1, 2), padding_mode=mode)
    plain = nn.Conv2d(3, 4, 3)
    plain.load_state_dict(conv.state_dict())
    want = plain(rt.tensor(np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=np_mode))).numpy()
    for run in (conv, to_static(lambda v: conv(v))):
        np.testing.assert_allclose(run(rt.tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)
    conv1 = nn.Conv1d(3, 2, 3, padding=2, padding_mode=mode)
    plain1 = nn.Conv1d(3, 2, 3)
    plain1.load_state_dict(conv1.state_dict())
    np.testing.assert_allclose(conv1(rt.tensor(x[:, :, 0])).numpy(),
                               plain1(rt.tensor(np.pad(x[:, :, 0], ((0, 0), (0, 0), (2, 2)), mode=np_mode))).numpy(),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")


def _avg_pool_ref(x, k, s, p, ceil_mode, count_include_pad):
    """PyTorch's avg_pool2d by its definition, one window at a time (square kernel, stride, padding)."""
    h, w = x.shape[2:]

    def out(size):
        o = (-(-(size + 2 * p - k) // s) if ceil_mode else (size + 2 * p - k) // s) + 1
        return o - 1 if ceil_mode and (o - 1) * s >= size + p else o
    res = np.zeros(x.shape[:2] + (out(h), out(w)), x.dtype)
    for i in range(out(h)):
        for j in range(out(w)):
            r0, c0 = i * s - p, j * s - p
            r1, c1 = min(r0 + k, h + p), min(c0 + k, w + p)
            cells = x[:, :, max(r0, 0):min(r1, h), max(c0, 0):min(c1, w)]
            count = (r1 - r0) * (c1 - c0) if count_include_pad else cells.shape[2] * cells.shape[3]
            res[:, :, i, j] = cells.sum((2, 3)) / count
    return res


@pytest.mark.parametrize("k, s, p", [(2, 2, 0), (3, 2, 1), (3, 3, 1)])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_ceil_mode_is_pytorchs(k, s, p, count_include_pad):
    x = RNG.standard_normal((2, 3, 8, 7)).astype(np.float32)
    layer = nn.AvgPool2d(k, s, p, ceil_mode=True, count_include_pad=count_include_pad)
    want = _avg_pool_ref(x, k, s, p, True, count_include_pad)
    for run in (layer, to_static(lambda v: layer(v))):
        got = run(rt.tensor(x)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
