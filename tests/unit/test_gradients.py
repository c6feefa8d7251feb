"""Every op's gradient rule (its `vjp` facet) against central finite differences in float64.

The test walks the whole registry: an op must have a gradient rule or be marked
`differentiable=False` (or sit in `runtime.ops.gradients.NO_RULE_YET`, which says why
it has none yet). For each differentiable op, every conformance sample of
test_ops_conformance.py is run with its float arrays in float64, and each call of the
op it makes is checked:

  (a) eager: for a random cotangent g and random directions dx of the float inputs,
      <vjp(g), dx> equals (<g, f(x + eps dx)> - <g, f(x - eps dx)>) / (2 eps), at the
      sample point and at a nearby one; integer and literal inputs get None;
  (b) traced: a Program applying the op and its rule, run by the executor, gives the
      eager cotangents, also with every array input's first dim unknown.
"""
import numpy as np
import pytest

import runtime as rt
from runtime.ops import dispatch
from runtime.ops.dispatch import apply
from runtime.ops.gradients import NO_RULE_YET
from runtime.ops.registry import REGISTRY
from runtime.tensor import Tensor

from test_ops_conformance import samples_of

ENGINE_OPS = {"cond", "while"} | {name for name in REGISTRY if name.startswith("array_")}   # wt-engine's rules
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


def test_no_rule_yet_lists_real_ops_without_rules():
    for name, reason in NO_RULE_YET.items():
        assert REGISTRY[name].vjp is None and REGISTRY[name].differentiable, name
        assert reason


def _as64(value):
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value.astype(np.float64)
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
        inputs = [rt.tensor(x.numpy().astype(np.float64)) if isinstance(x, Tensor) and x.dtype.kind == "f" else x
                  for x in inputs]
        calls.append((inputs, attrs))
    return calls


def _outputs(value):
    return value if isinstance(value, tuple) else (value,)


def _run(opdef, inputs, attrs):
    rt.seed(0)          # dropout draws the same mask on every evaluation
    return apply(opdef, inputs, attrs)


def _inner(gs, outs):
    return sum(float(np.sum(np.where(g == 0, 0.0, g * o.numpy()))) for g, o in zip(gs, _outputs(outs))
               if g is not None)


def _cotangents(outs, rng):
    gs = []
    for o in _outputs(outs):
        if o.dtype.kind != "f":
            gs.append(None)
            continue
        g = rng.standard_normal(o.shape)
        gs.append(np.where(np.isfinite(o.numpy()), g, 0.0))     # a NaN output (sort's sample) counts for nothing
    return gs


def _vjp(opdef, g_values, inputs, outs, attrs):
    gs = [None if g is None else rt.tensor(g) for g in g_values]
    return opdef.vjp(tuple(gs) if isinstance(outs, tuple) else gs[0], tuple(inputs), outs, **attrs)


def _is_float_tensor(x):
    return isinstance(x, Tensor) and x.dtype.kind == "f"


def _check_finite_differences(name, opdef, inputs, attrs, rng):
    outs = _run(opdef, inputs, attrs)
    g_values = _cotangents(outs, rng)
    if all(g is None for g in g_values):
        return                   # no real floating output: complex cotangents are not checked here
    grads = _vjp(opdef, g_values, inputs, outs, attrs)
    assert isinstance(grads, tuple) and len(grads) == len(inputs), (
        f"{name}: the rule returned {type(grads).__name__} of {len(grads)}, want a tuple of {len(inputs)}")
    directions = {}
    for i, (x, gx) in enumerate(zip(inputs, grads)):
        if not (isinstance(x, Tensor) and x.dtype.kind in "fc"):
            assert gx is None, f"{name}: input {i} ({type(x).__name__}) takes no gradient, got one"
            continue
        if gx is None or not _is_float_tensor(x):
            continue
        assert gx.shape == x.shape and gx.dtype == x.dtype, (
            f"{name}: cotangent of input {i} is {gx.dtype}{gx.shape}, the input is {x.dtype}{x.shape}")
        directions[i] = rng.standard_normal(x.shape)
    predicted = sum(float(np.sum(grads[i].numpy() * d)) for i, d in directions.items())
    if name in SINGULAR and not np.isfinite(predicted):
        return

    def moved(t):
        return [rt.tensor(x.numpy() + t * directions[i]) if i in directions else x for i, x in enumerate(inputs)]
    observed = (_inner(g_values, _run(opdef, moved(EPS), attrs))
                - _inner(g_values, _run(opdef, moved(-EPS), attrs))) / (2 * EPS)
    assert abs(predicted - observed) <= 1e-5 * (1 + abs(observed)), (
        f"{name}: <vjp(g), dx> = {predicted!r}, finite differences give {observed!r}")
    return g_values, grads


def _gradient_cases():
    for name in sorted(REGISTRY):
        opdef = REGISTRY[name]
        if name in ENGINE_OPS or opdef.vjp is None:
            continue
        for i, sample in enumerate(samples_of(name) or ()):
            yield pytest.param(name, sample, id=f"{name}-{i}")


CASES = list(_gradient_cases())


@pytest.mark.parametrize("name,sample", CASES)
def test_rule_matches_finite_differences(name, sample):
    opdef = REGISTRY[name]
    calls = _calls_of(name, sample)
    assert calls, f"the sample makes no eager {name!r} call"
    rng = np.random.default_rng(7)
    for inputs, attrs in calls:
        if name not in KINKED_SAMPLES:
            _check_finite_differences(name, opdef, inputs, attrs, rng)
        nearby = [rt.tensor(x.numpy() + 0.01 * rng.standard_normal(x.shape)) if _is_float_tensor(x) else x
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


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name,sample", CASES)
def test_traced_rule_matches_eager(name, sample, dynamic):
    if dynamic and not sample.dynamic:
        pytest.skip("the sample cannot be traced with unknown dims")
    opdef = REGISTRY[name]
    if not opdef.pure:
        pytest.skip("an impure op (dropout) draws anew in each run")
    rng = np.random.default_rng(11)
    for inputs, attrs in _calls_of(name, sample):
        outs = _run(opdef, inputs, attrs)
        g_values = _cotangents(outs, rng)
        if all(g is None for g in g_values):
            continue
        expected = [g for g in _vjp(opdef, g_values, inputs, outs, attrs) if g is not None]
        program, feed = _trace_rule(opdef, inputs, attrs, g_values, dynamic)
        results = rt.Executor().run(program, feed)
        assert len(results) == len(expected)
        for got, want in zip(results, expected):
            assert got.dtype == want.dtype and got.shape == want.shape, (
                f"{name}: traced cotangent {got.dtype}{got.shape}, eager {want.dtype}{want.shape}")
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
