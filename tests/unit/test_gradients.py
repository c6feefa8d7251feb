"""Every op's gradient rule (its `vjp` facet) against central finite differences in float64.

The test walks the whole registry: an op must have a gradient rule or be marked
`differentiable=False` (or sit in `runtime.ops.gradients.NO_RULE_YET`, which says why
it has none yet). For each differentiable op, every conformance sample of
test_ops_conformance.py (and of EXTRA below) is run with its float arrays in float64, and
each call of the op it makes is checked:

  (a) eager: for a random cotangent g and random directions dx of the floating inputs
      (complex ones as pairs of reals, cotangents as dL/dRe + i dL/dIm),
      <vjp(g), dx> equals (<g, f(x + eps dx)> - <g, f(x - eps dx)>) / (2 eps), at the
      sample point and at a nearby one; integer and literal inputs get None;
  (b) traced: a Program applying the op and its rule, run by the executor, gives the
      eager cotangents, also with every array input's first dim unknown;
  (c) float32: cotangents keep their input's dtype, eagerly and as the executor computes them.
"""
import numpy as np
import pytest

import runtime as rt
from runtime.ops import dispatch
from runtime.ops.dispatch import apply
from runtime.ops.gradients import NO_RULE_YET
from runtime.ops.registry import REGISTRY
from runtime.tensor import Tensor

from test_ops_conformance import Sample, samples_of

# control flow and tensor arrays: the autodiff engine differentiates them itself (scan: its rule is
# checked against finite differences and the unrolled loop in test_scan.py)
ENGINE_OPS = {"cond", "while", "scan"} | {name for name in REGISTRY if name.startswith("array_")}
EPS = 1e-6
# ops whose samples sit where they are not differentiable (remainder jumps at the whole numbers
# the samples hold; sort and topk samples hold ties on purpose): checked at a point near each sample
KINKED_SAMPLES = {"remainder", "sort", "topk"}
# where a rule gives NaN because the derivative does not exist there, and why
SINGULAR = {"std": "the std of equal elements: sqrt has no derivative at 0"}


@pytest.mark.parametrize("name", sorted(set(REGISTRY) - ENGINE_OPS))
def test_every_op_has_a_rule_or_is_marked(name):
    opdef = REGISTRY[name]
    if not opdef.differentiable:
        assert opdef.vjp is None, f"{name} is marked non-differentiable yet has a gradient rule"
        return
    assert opdef.vjp is not None or name in NO_RULE_YET, (
        f"op {name!r} has no gradient rule: attach one with facet({name!r}, 'vjp') in runtime/ops/gradients/, "
        f"or mark it with nondifferentiable({name!r}) there if no gradient flows through it")


def test_extra_samples_name_ops_with_rules():
    assert all(REGISTRY[name].vjp is not None for name in EXTRA), sorted(n for n in EXTRA if REGISTRY[n].vjp is None)


def test_no_rule_yet_lists_real_ops_without_rules():
    for name, reason in NO_RULE_YET.items():
        assert REGISTRY[name].vjp is None and REGISTRY[name].differentiable, name
        assert reason


_WIDE = {"float32": np.float64, "complex64": np.complex128}
_NARROW = {"f": np.float32, "c": np.complex64}


def _as64(value):
    if isinstance(value, np.ndarray) and value.dtype.name in _WIDE:
        return value.astype(_WIDE[value.dtype.name])
    return value


def _calls_of(name, sample):
    """(inputs, attrs) of each eager call of op `name` the sample makes, float inputs in float64."""
    seen = []
    run_eager = dispatch.run_eager

    def spy(opdef, inputs, attrs, device=None):
        if opdef.name == name:
            seen.append((list(inputs), dict(attrs)))
        return run_eager(opdef, inputs, attrs, device)
    args = [rt.tensor(_as64(a)) if isinstance(a, np.ndarray) else a for a in sample.args]
    dispatch.run_eager = spy
    try:
        sample.fn(*args, **sample.kwargs)
    finally:
        dispatch.run_eager = run_eager
    calls = []
    for inputs, attrs in seen[:2]:
        inputs = [rt.tensor(_as64(x.numpy())) if isinstance(x, Tensor) else x for x in inputs]
        calls.append((inputs, attrs))
    return calls


def _outputs(value):
    return value if isinstance(value, tuple) else (value,)


def _run(opdef, inputs, attrs):
    rt.seed(0)          # dropout draws the same mask on every evaluation
    return apply(opdef, inputs, attrs)


def _inner(gs, outs):
    """<g, out>, the real inner product (complex values as pairs of reals)."""
    return sum(float(np.sum(np.where(g == 0, 0.0, np.conj(g) * o.numpy())).real) for g, o in zip(gs, _outputs(outs))
               if g is not None)


def _random_like(shape, dtype, rng):
    value = rng.standard_normal(shape)
    return value + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else value


def _cotangents(outs, rng, name, attrs, inputs):
    gs = []
    for o in _outputs(outs):
        if o.dtype.kind not in "fc":
            gs.append(None)
            continue
        g = _random_like(o.shape, o.dtype, rng)
        gs.append(np.where(np.isfinite(o.numpy()), g, 0.0))     # a NaN output (sort's sample) counts for nothing
    return _unique_part(name, attrs, inputs, gs)


def _unique_part(name, attrs, inputs, g_values):
    """No cotangent on outputs that are not functions of the input: U and Vh of a full SVD of a
    matrix that is not square hold an arbitrary orthonormal completion."""
    if name == "linalg_svd" and attrs.get("full_matrices", True) and inputs[0].shape[-1] != inputs[0].shape[-2]:
        return [None, g_values[1], None]
    return g_values


def _vjp(opdef, g_values, inputs, outs, attrs):
    gs = [None if g is None else rt.tensor(g) for g in g_values]
    return opdef.vjp(tuple(gs) if isinstance(outs, tuple) else gs[0], tuple(inputs), outs, **attrs)


def _is_float_tensor(x):
    """An input that takes a cotangent: a floating or complex tensor."""
    return isinstance(x, Tensor) and x.dtype.kind in "fc"


def _check_finite_differences(name, opdef, inputs, attrs, rng):
    outs = _run(opdef, inputs, attrs)
    g_values = _cotangents(outs, rng, name, attrs, inputs)
    if all(g is None for g in g_values):
        return
    grads = _vjp(opdef, g_values, inputs, outs, attrs)
    assert isinstance(grads, tuple) and len(grads) == len(inputs), (
        f"{name}: the rule returned {type(grads).__name__} of {len(grads)}, want a tuple of {len(inputs)}")
    directions = {}
    for i, (x, gx) in enumerate(zip(inputs, grads)):
        if not _is_float_tensor(x):
            assert gx is None, f"{name}: input {i} ({type(x).__name__}) takes no gradient, got one"
            continue
        if gx is None:
            continue
        assert gx.shape == x.shape and gx.dtype == x.dtype, (
            f"{name}: cotangent of input {i} is {gx.dtype}{gx.shape}, the input is {x.dtype}{x.shape}")
        directions[i] = _random_like(x.shape, x.dtype, rng)
    predicted = sum(float(np.sum(np.conj(grads[i].numpy()) * d).real) for i, d in directions.items())
    if name in SINGULAR and not np.isfinite(predicted):
        return

    def moved(t):
        return [rt.tensor(x.numpy() + t * directions[i]) if i in directions else x for i, x in enumerate(inputs)]
    observed = (_inner(g_values, _run(opdef, moved(EPS), attrs))
                - _inner(g_values, _run(opdef, moved(-EPS), attrs))) / (2 * EPS)
    assert abs(predicted - observed) <= 1e-5 * (1 + abs(observed)), (
        f"{name}: <vjp(g), dx> = {predicted!r}, finite differences give {observed!r}")
    return g_values, grads


_rng = np.random.default_rng(5)


def _r(*shape, lo=-2.0, hi=2.0):
    return _rng.uniform(lo, hi, size=shape)


def _spd(n, *batch):
    a = _rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _x(fn, *args, **kwargs):
    return Sample(fn, args, oracle=None, kwargs=kwargs)


F = rt.nn.functional
# branches of the rules that the conformance samples do not reach
EXTRA = {
    "matmul": [_x(rt.matmul, _r(3), _r(2, 3, 4)), _x(rt.matmul, _r(2, 1, 3, 4), _r(5, 4, 2)),
               _x(rt.matmul, _r(3), _r(3))],
    "einsum": [_x(lambda a, b: rt.einsum("...ij,jk->...ik", a, b), _r(2, 3, 4), _r(4, 2)),
               _x(lambda a: rt.einsum("iij->j", a), _r(3, 3, 2))],
    "where": [_x(lambda c, x, y: rt.where(c > 0, x, y), _r(3, 1), _r(4), _r(3, 4))],
    "clip": [_x(rt.clip, _r(3, 4), _r(4, lo=-2, hi=-0.5), _r(3, 1, lo=0.5, hi=2))],
    "pow": [_x(rt.pow, _r(3, 4, lo=0.5, hi=2), _r(4))],
    "maximum": [_x(rt.maximum, _r(3, 4), _r(3, 1))],
    "mean": [_x(lambda x: rt.mean(x, axis=(0, 2)), _r(3, 4, 2))],
    "prod": [_x(lambda x: rt.prod(x, axis=(0, 2), keepdims=True), _r(3, 4, 2, lo=0.5, hi=2)),
             _x(lambda x: rt.prod(x, axis=1), np.array([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.0, 2.0, -1.0]]))],
    "concat": [_x(lambda a, b: rt.concat([a, b], axis=None), _r(2, 3), _r(4))],
    "stack": [_x(lambda a, b: rt.stack([a, b], axis=-1), _r(2, 3), _r(2, 3))],
    "getitem": [_x(lambda x: x[np.array([0, 2, 0, 0])], _r(3, 2)),
                _x(lambda x: x[:, np.array([[1, 1], [0, 1]])], _r(2, 3))],
    "setitem": [_x(lambda x, v: rt.setitem(x, (slice(None), np.array([0, 2])), v), _r(3, 4), _r(3, 1))],
    "take": [_x(lambda x: rt.take(x, np.array([[2, 0], [2, 2]]), axis=1), _r(2, 3)),
             _x(lambda x: rt.take(x, np.array([1, 1, -1])), _r(4))],
    "take_along_axis": [_x(lambda x: rt.take_along_axis(x, np.array([[0, 0, 2]]), axis=1), _r(3, 3))],
    "scatter": [_x(lambda x, s: rt.put_along_axis(x, np.array([[0], [2]]), s, axis=1), _r(2, 3), _r(2, 1))],
    "cumulative": [_x(lambda x: rt.cumulative_sum(x, axis=1, include_initial=True), _r(2, 3)),
                   _x(lambda x: rt.cumulative_prod(x, axis=0, include_initial=True), _r(3, 2, lo=0.5, hi=2))],
    "sort": [_x(lambda x: rt.sort(x, axis=0, descending=True), _r(4, 3))],
    "topk": [_x(lambda x: rt.topk(x, 2, axis=0, largest=False)[0], _r(4, 3))],
    "repeat": [_x(lambda x: rt.repeat(x, np.array([2, 0, 1]), axis=0), _r(3, 2)), _x(lambda x: rt.repeat(x, 2), _r(2, 2))],
    "tile": [_x(lambda x: rt.tile(x, (2, 1, 3)), _r(2, 3))],
    "roll": [_x(lambda x: rt.roll(x, (1, -2), axis=(0, 1)), _r(3, 4))],
    "pad": [_x(lambda x: rt.pad(x, ((1, 2), (2, 0)), mode="reflect"), _r(3, 4)),
            _x(lambda x: rt.pad(x, 2, mode="wrap"), _r(3))],
    "diff": [_x(lambda x: rt.diff(x, n=2, axis=0, append=0.5), _r(4, 3)),
             _x(lambda x, p, a: rt.diff(x, prepend=p, append=a), _r(2, 3), _r(2, 2), _r(2, 1))],
    "unstack": [_x(lambda x: rt.unstack(x, axis=1)[1], _r(2, 3))],
    "split": [_x(lambda x: rt.split(x, [1, 3], axis=1)[2], _r(2, 5))],
    "meshgrid": [_x(lambda a, b, c: rt.meshgrid(a, b, c)[2], _r(2), _r(3), _r(4)),
                 _x(lambda a, b: rt.meshgrid(a, b, indexing="ij")[0], _r(2), _r(3))],
    "softplus": [_x(lambda x: rt.softplus(x, beta=2.0, threshold=1.0), _r(3, 4))],
    "logsumexp": [_x(lambda x: rt.logsumexp(x, axis=(0, 2)), _r(2, 3, 2))],
    "gelu": [_x(lambda x: F.gelu(x, approximate="tanh"), _r(3, 4))],
    "softmax": [_x(lambda x: F.softmax(x, axis=0), _r(3, 4))],
    "linear": [_x(F.linear, _r(4), _r(3, 4)), _x(F.linear, _r(2, 5, 4), _r(3, 4), _r(3))],
    "cross_entropy": [_x(lambda l, t: F.cross_entropy(l, t, ignore_index=1, label_smoothing=0.1), _r(4, 3),
                         np.array([0, 1, 2, 2])),
                      _x(lambda l, t: F.cross_entropy(l, t, reduction="none", label_smoothing=0.3), _r(2, 3, 2),
                         _rng.dirichlet(np.ones(3), size=(2, 2)).transpose(0, 2, 1))],
    "embedding": [_x(F.embedding, np.array([[1, 3], [1, 1]]), _r(4, 3))],
    "conv2d": [_x(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
                  _r(2, 4, 6, 5), _r(6, 2, 3, 2), _r(6))],
    "conv_transpose2d": [_x(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2),
                            _r(1, 4, 3, 3), _r(4, 3, 3, 3)),
                         _x(lambda x, w: F.conv_transpose2d(x, w, stride=1, output_padding=1, dilation=2),
                            _r(1, 2, 3, 3), _r(2, 2, 2, 2))],
    "max_pool2d": [_x(lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), _r(1, 2, 6, 5))],
    "layer_norm": [_x(lambda x, b: F.layer_norm(x, (2, 3), None, b), _r(4, 2, 3), _r(2, 3))],
    "linalg_cholesky": [_x(lambda a: rt.linalg.cholesky(a, upper=True), _spd(3, 2))],
    "linalg_solve": [_x(rt.linalg.solve, _spd(3, 2), _r(3)), _x(rt.linalg.solve, _spd(2), _r(3, 2, 4))],
    "linalg_slogdet": [_x(lambda a: rt.linalg.slogdet(a)[1], _spd(3) - 6 * np.eye(3))],
    "linalg_eigh": [_x(lambda a: rt.linalg.eigh(a)[1], _spd(3))],
    "linalg_qr": [_x(lambda a: rt.linalg.qr(a)[0], _r(2, 4, 3)), _x(lambda a: rt.linalg.qr(a, mode="complete")[1],
                                                                  _r(3, 3))],
    "linalg_svd": [_x(lambda a: rt.linalg.svd(a, full_matrices=False)[0], _r(2, 4, 3)),
                   _x(lambda a: rt.linalg.svd(a, full_matrices=False)[2], _r(3, 5)),
                   _x(lambda a: rt.linalg.svd(a)[0] * rt.linalg.svd(a)[2], _r(3, 3))],
    "linalg_matrix_power": [_x(lambda a: rt.linalg.matrix_power(a, 3), _r(2, 3, 3)),
                            _x(lambda a: rt.linalg.matrix_power(a, -2), _spd(3))],
    "linalg_vector_norm": [_x(lambda a: rt.linalg.vector_norm(a, axis=0, ord=float("-inf")), _r(3, 4)),
                           _x(lambda a: rt.linalg.vector_norm(a, axis=1, keepdims=True), _r(3, 4))],
    "linalg_matrix_norm": [_x(lambda a: rt.linalg.matrix_norm(a, ord=o), _r(2, 3, 4))
                           for o in (2, -2, float("inf"), float("-inf"), -1)],
    "linalg_diagonal": [_x(lambda a: rt.linalg.diagonal(a, offset=o), _r(2, 3, 4)) for o in (1, -1)],
    "linalg_trace": [_x(lambda a: rt.linalg.trace(a, offset=-1), _r(2, 3, 4))],
    "linalg_cross": [_x(lambda a, b: rt.linalg.cross(a, b), _r(2, 3), _r(3))],
}


def _gradient_cases():
    for name in sorted(REGISTRY):
        opdef = REGISTRY[name]
        if name in ENGINE_OPS or opdef.vjp is None:
            continue
        for i, sample in enumerate(samples_of(name) or ()):
            yield pytest.param(name, sample, id=f"{name}-{i}")
        for i, sample in enumerate(EXTRA.get(name, ())):
            yield pytest.param(name, sample, id=f"{name}-extra{i}")


CASES = list(_gradient_cases())


@pytest.mark.parametrize("name,sample", CASES)
def test_float32_cotangents_keep_their_dtype(name, sample):
    """A rule run on float32 inputs gives float32 cotangents, eagerly and as traced (where a
    Python number meets a float32 array, the array's dtype must win in both)."""
    opdef = REGISTRY[name]
    rng = np.random.default_rng(3)
    for inputs, attrs in _calls_of(name, sample):
        inputs = [rt.tensor(x.numpy().astype(_NARROW[x.dtype.kind])) if _is_float_tensor(x) else x for x in inputs]
        try:
            outs = _run(opdef, inputs, attrs)
        except (TypeError, ValueError):
            continue                    # the op wants float64 here (a sample mixing dtypes on purpose)
        g_values = [None if g is None else g.astype(o.dtype)
                    for g, o in zip(_cotangents(outs, rng, name, attrs, inputs), _outputs(outs))]
        if all(g is None for g in g_values):
            continue
        grads = _vjp(opdef, g_values, inputs, outs, attrs)
        for x, gx in zip(inputs, grads):
            if gx is not None:
                assert gx.dtype == x.dtype, f"{name}: eager cotangent {gx.dtype} for a {x.dtype} input"
        program, feed = _trace_rule(opdef, inputs, attrs, g_values, dynamic=False)
        declared = [v.dtype for v in program.outputs]
        for got, dtype in zip(rt.Executor(passes=[]).run(program, feed), declared):
            assert got.dtype == dtype, f"{name}: the traced cotangent is {got.dtype}, its Variable says {dtype}"


@pytest.mark.parametrize("name,sample", CASES)
def test_rule_matches_finite_differences(name, sample):
    opdef = REGISTRY[name]
    calls = _calls_of(name, sample)
    assert calls, f"the sample makes no eager {name!r} call"
    rng = np.random.default_rng(7)
    for inputs, attrs in calls:
        if name not in KINKED_SAMPLES:
            _check_finite_differences(name, opdef, inputs, attrs, rng)
        nearby = [rt.tensor(x.numpy() + 0.01 * _random_like(x.shape, x.dtype, rng)) if _is_float_tensor(x) else x
                  for x in inputs]
        _check_finite_differences(name, opdef, nearby, attrs, rng)


def _trace_rule(opdef, inputs, attrs, g_values, dynamic):
    """A Program applying the op and its rule to input Variables; returns (program, feed)."""
    arrays = [i for i, x in enumerate(inputs) if isinstance(x, Tensor)]
    cotangents = [k for k, g in enumerate(g_values) if g is not None]
    values = [inputs[i].numpy() for i in arrays] + [g_values[k] for k in cotangents]
    specs, feed = [], {}
    for n, value in enumerate(values):
        shape = list(value.shape)
        if dynamic and shape:
            shape[0] = None
        specs.append(rt.InputSpec(shape, value.dtype, name=f"in{n}"))
        feed[f"in{n}"] = value

    def fn(*variables):
        ins = list(inputs)
        for i, v in zip(arrays, variables):
            ins[i] = v
        outs = apply(opdef, ins, attrs)
        gs = [None] * len(g_values)
        for k, v in zip(cotangents, variables[len(arrays):]):
            gs[k] = v
        grads = opdef.vjp(tuple(gs) if isinstance(outs, tuple) else gs[0], tuple(ins), outs, **attrs)
        return [g for g in grads if g is not None]
    program, _, _ = rt.trace(fn, specs)
    return program, feed


@pytest.mark.parametrize("name,sample", CASES)
def test_traced_rule_matches_eager(name, sample):
    """The op and its rule traced into a Program (static, then with every first dim unknown)
    and run by the executor give the eager cotangents."""
    opdef = REGISTRY[name]
    rng = np.random.default_rng(11)
    for inputs, attrs in _calls_of(name, sample):
        outs = _run(opdef, inputs, attrs)
        g_values = _cotangents(outs, rng, name, attrs, inputs)
        if all(g is None for g in g_values):
            continue
        expected = [g for g in _vjp(opdef, g_values, inputs, outs, attrs) if g is not None]
        for dynamic in (False, True) if sample.dynamic else (False,):
            program, feed = _trace_rule(opdef, inputs, attrs, g_values, dynamic)
            rt.seed(0)                  # dropout draws the mask the eager run drew
            results = rt.Executor().run(program, feed)
            assert len(results) == len(expected)
            for got, want in zip(results, expected):
                assert got.dtype == want.dtype and got.shape == want.shape, (
                    f"{name}: traced cotangent {got.dtype}{got.shape}, eager {want.dtype}{want.shape}")
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12,
                                           err_msg=f"{name}, {'unknown' if dynamic else 'known'} first dims")
