"""Graph passes: each changes no result (Programs run with the pass on and off give equal
outputs) and does its job (op counts before/after, the generated plan's shape).

Programs come from `rt.trace` and from `to_static(...).get_program(...)` over the
conversion corpus and the differential test's generated functions, so every pass sees
cond/while nests, tensor arrays, breaks and returns.
"""
import gc
import random
import re
import time
import types

import numpy as np
import pytest

import runtime as rt
from runtime import passes
from runtime.backends.numpy_backend import NumpyBackend
from runtime.codegen.plan import compile_plan
from runtime.executor import Executor
from runtime.ir import Program
from runtime.ops.dispatch import constant
from runtime.passes.fusion import FUSED
from runtime.serialization import ProgramFormatError, program_from_dict, program_to_dict
from transpiler import to_static

from tests.conversion.corpus import CASES
from tests.conversion.oracle import inputs as oracle_inputs
from bench import pass_scaling     # the Program shapes the pass-scaling benchmark times
from bench.workloads import peak_memory
from tests.conversion.test_differential import HEADER, _Gen, _state

ALL = list(passes.PASSES)
# passes that change no arithmetic: their results are bit for bit the same
EXACT = [p for p in ALL if p not in ("strength_reduce", "hoist_gather_matmul")]


@pytest.fixture(autouse=True)
def _numpy_plans(monkeypatch):
    """These tests read the NumPy plan's source (its buffers, in-place calls, `.dot`): the native tier off,
    also where the suite runs with it forced on (a native region's plan code calls its kernel instead)."""
    monkeypatch.setenv("DY2STATIC_NATIVE", "0")


def _feed(program, arrays):
    names = [v.name for v in program.inputs if not v.persistable]
    return dict(zip(names, arrays))


def _run(program, arrays, pass_list):
    outs = Executor(passes=pass_list).run(program, _feed(program, arrays))
    return [o if isinstance(o, list) else o.numpy() for o in outs]


def _same(got, want, exact):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, list):
            _same([t.numpy() for t in g], [t.numpy() for t in w], exact)
        elif exact:
            np.testing.assert_array_equal(g, w)
            assert np.asarray(g).dtype == np.asarray(w).dtype
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _ops(program, op_type=None):
    return [op for op in program.ops() if op_type is None or op.type == op_type]


def _optimize(program, pass_list):
    return passes.run_passes(program, pass_list)


def _valid(program):
    """The optimized Program is a valid Program: it survives the strict JSON reader."""
    return program_from_dict(program_to_dict(program), source="<test>", check_types=True)


# --- no pass changes a result --------------------------------------------------------------

_corpus_inputs = oracle_inputs


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_corpus_same_results_with_each_pass(case):
    static = to_static(case["fn"], passes=[])
    program = static.get_program(*[rt.tensor(a) for a in _corpus_inputs(case, 0)], *case["scalars"])
    for seed in (0, 1):
        arrays = _corpus_inputs(case, seed)
        want = _run(program, arrays, [])
        for name in ALL + [None]:
            pass_list = None if name is None else [name]
            _same(_run(program, arrays, pass_list), want, exact=name in EXACT)
    _valid(_optimize(program, None))


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_corpus_programs_verify_after_every_pass(case):
    """Each default pass, applied in turn, leaves a Program `rt.verify` accepts (blocks closed and
    every op's declared outputs what its shape/dtype rule makes)."""
    program = to_static(case["fn"], passes=[]).get_program(
        *[rt.tensor(a) for a in _corpus_inputs(case, 0)], *case["scalars"])
    rt.verify(program)
    current = program.clone()
    for name in passes.DEFAULT_PIPELINE:
        current = passes.PASSES[name](current)
        try:
            rt.verify(current)
        except ProgramFormatError as e:
            pytest.fail(f"after {name}: {e}\n{current}")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    import importlib.util
    path = tmp_path_factory.mktemp("gen") / "generated_for_passes.py"
    sources = [_Gen(seed).program(f"prog_{seed}") for seed in range(40)]
    path.write_text(HEADER + "\n\n".join(sources))
    spec = importlib.util.spec_from_file_location("generated_for_passes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", range(40))
def test_generated_programs_same_results_with_each_pass(generated, seed):
    fn = getattr(generated, f"prog_{seed}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(3).astype(np.float32)
    rows = rng.standard_normal((4, 3)).astype(np.float32)
    for flag in (True, False):
        program = to_static(fn, passes=[]).get_program(rt.tensor(x), rt.tensor(rows), flag, _state(rt))
        want = _run(program, [x, rows], [])
        for name in ALL + [None]:
            _same(_run(program, [x, rows], None if name is None else [name]), want, exact=name in EXACT)
        _valid(_optimize(program, None))
        current = program.clone()
        for name in passes.DEFAULT_PIPELINE:             # well-typed after every pass, not only the last
            current = passes.PASSES[name](current)
            try:
                rt.verify(current)
            except ProgramFormatError as e:
                pytest.fail(f"after {name}: {e}\n{current}")


def test_default_pipeline_names_registered_passes():
    assert passes.DEFAULT_PIPELINE and set(passes.DEFAULT_PIPELINE) <= set(passes.PASSES)
    with pytest.raises(ValueError, match="unknown pass"):
        Executor(passes=["no_such_pass"]).compile(rt.trace(lambda x: x + 1, [rt.InputSpec([2])])[0])


def test_passes_run_on_a_copy_and_get_program_shows_both():
    def f(x):
        a = x.sum()
        b = x.sum()
        unused = x * 3
        return a + b

    static = to_static(f)
    x = rt.tensor(np.ones(4, np.float32))
    traced = static.get_program(x)
    optimized = static.get_program(x, optimized=True)
    assert len(_ops(traced, "sum")) == 2 and len(_ops(optimized, "sum")) == 1
    assert not _ops(optimized, "multiply")
    assert str(static.get_program(x)) == str(traced)          # the traced Program is untouched
    assert to_static(f, passes=[]).get_program(x, optimized=True) == traced


def _counter():
    """A loop counter that is a tensor from the start, so the loop is a `while` op."""
    return rt.zeros((), "int64")


# --- dce -------------------------------------------------------------------------------------

def _trace(fn, *specs):
    return rt.trace(fn, [rt.InputSpec(s, "float32") for s in specs])[0]


def test_dce_removes_unused_ops_and_keeps_side_effects():
    def f(x):
        unused = rt.exp(x) * 2
        rt.print_("x is", x)
        return x + 1

    program = _trace(f, [3])
    optimized = _optimize(program, ["dce"])
    assert [op.type for op in optimized.ops()] == ["print", "add"]
    _valid(optimized)


def test_dce_drops_unused_cond_outputs_and_whole_conds():
    def f(x):
        def true_fn():
            return x * 2, rt.exp(x)
        def false_fn():
            return x - 1, rt.log(rt.abs(x) + 1)
        y, z = rt.cond(x.sum() > 0, true_fn, false_fn)
        w, _ = rt.cond(x.mean() > 0, true_fn, false_fn)     # wholly unused
        return y

    program = _trace(f, [4])
    optimized = _optimize(program, ["dce"])
    conds = _ops(optimized, "cond")
    assert len(conds) == 1 and len(conds[0].outputs) == 1
    assert not _ops(optimized, "exp") and not _ops(optimized, "log") and not _ops(optimized, "mean")
    assert len(optimized.blocks) == 3
    _valid(optimized)
    x = np.array([1, -2, 3, 0.5], np.float32)
    _same(_run(optimized, [x], []), _run(program, [x], []), exact=True)


def test_dce_drops_unused_loop_state_but_keeps_what_the_condition_reads():
    def f(x):
        def cond(i, h, junk):
            return i < 5
        def body(i, h, junk):
            return i + 1, rt.tanh(h + x), junk * 2 + h
        i, h, junk = rt.while_loop(cond, body, (_counter(), x, x))
        return h

    program = _trace(f, [3])
    optimized = _optimize(program, ["dce"])
    (loop,) = _ops(optimized, "while")
    assert len(loop.outputs) == 2                        # i (read by the condition) and h
    assert not _ops(optimized, "multiply")
    _valid(optimized)
    x = np.array([0.1, 0.2, -0.3], np.float32)
    _same(_run(optimized, [x], []), _run(program, [x], []), exact=True)


def test_dce_inside_sub_blocks():
    def f(x):
        def body(i, h):
            dead = rt.sin(h) * 3
            return i + 1, h * 0.5
        return rt.while_loop(lambda i, h: i < 3, body, (_counter(), x))[1]

    optimized = _optimize(_trace(f, [2]), ["dce"])
    assert not _ops(optimized, "sin")


# --- fold ------------------------------------------------------------------------------------

def test_fold_evaluates_ops_on_constants():
    def f(x):
        c = rt.sqrt(rt.full((), 4.0, "float32")) * rt.ones((3,), "float32")
        return x + c

    program = _trace(f, [3])
    optimized = _optimize(program, ["fold", "dce"])
    assert [op.type for op in optimized.ops()] == ["constant", "add"]
    _valid(optimized)
    x = np.arange(3, dtype=np.float32)
    _same(_run(optimized, [x], []), _run(program, [x], []), exact=True)


def test_fold_leaves_big_results_and_failing_ops_alone():
    def f(x):
        big = rt.zeros((100, 100), "float32") + 1           # 10,000 elements: over the limit
        bad = rt.full((), 1.0, "float32") / rt.zeros((), "float32")   # warns at run time: stays there
        return x + big.sum() + bad * 0

    program = _trace(f, [2])
    optimized = _optimize(program, ["fold"])
    assert _ops(optimized, "add") and _ops(optimized, "divide")
    assert all(op.type != "constant" for op in optimized.ops())


# --- cse -------------------------------------------------------------------------------------

def test_cse_merges_equal_ops_and_reuses_outer_values_in_blocks():
    def f(x):
        a = rt.tanh(x).sum()
        b = rt.tanh(x).sum()
        def true_fn():
            return rt.tanh(x) * 2          # reuses the outer tanh
        def false_fn():
            return rt.tanh(x) * 3
        y = rt.cond(a > 0, true_fn, false_fn)
        return y + b

    program = _trace(f, [4])
    optimized = _optimize(program, ["cse", "dce"])
    assert len(_ops(optimized, "tanh")) == 1 and len(_ops(optimized, "sum")) == 1
    _valid(optimized)
    x = np.linspace(-1, 2, 4, dtype=np.float32)
    _same(_run(optimized, [x], []), _run(program, [x], []), exact=True)


def test_cse_never_merges_across_sibling_branches_or_literal_types():
    def f(x):
        def true_fn():
            return rt.exp(x)
        def false_fn():
            return rt.exp(x) + 1
        y = rt.cond(x.sum() > 0, true_fn, false_fn)
        return y + x * 2 + x * 2.0 + x * -0.0 + x * 0.0

    optimized = _optimize(_trace(f, [3]), ["cse"])
    assert len(_ops(optimized, "exp")) == 2
    assert len(_ops(optimized, "multiply")) == 4


def test_cse_keeps_tensor_arrays_and_impure_ops_apart():
    def f(x):
        a = rt.array_new((3,), "float32")
        b = rt.array_new((3,), "float32")
        a = rt.array_append(a, x)
        return rt.array_length(a), rt.array_length(b), rt.nn.functional.dropout(x, 0.5, True), \
            rt.nn.functional.dropout(x, 0.5, True)

    optimized = _optimize(_trace(f, [3]), ["cse", "dce"])
    assert len(_ops(optimized, "array_new")) == 2 and len(_ops(optimized, "dropout")) == 2
    outs = _run(optimized, [np.ones(3, np.float32)], [])
    assert outs[0] == 1 and outs[1] == 0


def test_while_condition_computes_the_sum_once():
    w = rt.tensor(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32) * 0.5)

    def f(h):
        while h.sum() < 100:
            h = rt.tanh(h @ w) + h * 1.5 + 0.1
        return h

    static = to_static(f)
    h = rt.tensor(np.full((1, 8), 0.1, np.float32))
    optimized = static.get_program(h, optimized=True)
    assert len(_ops(optimized, "sum")) == 1 and len(_ops(optimized, "while")) == 1
    np.testing.assert_array_equal(static(h).numpy(), to_static(f, passes=[])(h).numpy())


# --- licm ------------------------------------------------------------------------------------

def _loop_body_ops(program):
    (loop,) = _ops(program, "while")
    return [op.type for op in loop.attrs["body_block"].ops]


def test_licm_hoists_invariant_ops_out_of_the_body():
    w = rt.tensor(np.eye(3, dtype=np.float32))

    def f(x, h):
        def body(i, h):
            scale = rt.exp(x) * 2                 # invariant: moves
            return i + 1, rt.tanh(h @ w.T) * scale  # w.T invariant: moves; the rest reads h
        return rt.while_loop(lambda i, h: i < 4, body, (_counter(), h))[1]

    program = _trace(f, [3], [1, 3])
    optimized = _optimize(program, ["licm"])
    body = _loop_body_ops(optimized)
    assert "exp" not in body and "permute_dims" not in body and "matmul" in body and "tanh" in body
    top = [op.type for op in optimized.global_block.ops]
    assert top.index("exp") < top.index("while")
    _valid(optimized)
    arrays = [np.array([0.1, 0.2, 0.3], np.float32), np.ones((1, 3), np.float32)]
    _same(_run(optimized, arrays, []), _run(program, arrays, []), exact=True)


def test_licm_keeps_ops_that_could_fail_or_run_conditionally():
    def f(x, idx):
        def body(i, h):
            g = x[idx.astype("int64")]                     # dynamic index: could be out of range
            def t():
                return h + rt.exp(x).sum()                 # in a branch of the body: stays
            def e():
                return h
            return i + 1, rt.cond(h.sum() > 0, t, e) + g
        return rt.while_loop(lambda i, h: i < 2, body, (_counter(), x[0]))[1]

    program = rt.trace(f, [rt.InputSpec([3], "float32"), rt.InputSpec([], "float32")])[0]
    optimized = _optimize(program, ["licm"])
    body = _loop_body_ops(optimized)
    assert "getitem" in body[:3] and "astype" not in body       # the cast cannot fail: moved
    assert any(op.type == "exp" for op in optimized.ops()) and "exp" not in [op.type for op in optimized.global_block.ops]


def test_licm_zero_trip_loop_still_does_not_fail():
    def f(x, n):
        def body(i, h):
            return i + 1, h + x[5]               # x's size is unknown: x[5] could fail, so it stays
        return rt.while_loop(lambda i, h: i < n, body, (_counter(), x.sum()))[1]

    program = rt.trace(f, [rt.InputSpec([None], "float32"), rt.InputSpec([], "int64")])[0]
    optimized = _optimize(program, None)
    assert "getitem" in _loop_body_ops(optimized)
    assert _run(program, [np.ones(3, np.float32), np.int64(0)], None)[0] == 3.0
    with pytest.raises(IndexError, match="getitem"):
        _run(program, [np.ones(3, np.float32), np.int64(1)], None)


def test_licm_hoists_from_nested_loops_outward():
    def f(x):
        def outer(i, acc):
            def inner(j, a):
                return j + 1, a + rt.exp(x)                  # invariant of both loops
            return i + 1, rt.while_loop(lambda j, a: j < 2, inner, (_counter(), acc))[1]
        return rt.while_loop(lambda i, a: i < 3, outer, (_counter(), x))[1]

    program = _trace(f, [2])
    optimized = _optimize(program, ["licm"])
    assert [op.type for op in optimized.global_block.ops].count("exp") == 1
    x = np.array([0.5, -1], np.float32)
    _same(_run(optimized, [x], []), _run(program, [x], []), exact=True)


def _rnn(u, w, b, steps=50):
    def rnn(x):
        h = rt.zeros((1, u.shape[1]))
        i = 0
        while i < steps and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + h @ w + b)
            i += 1
        return h
    return rnn


def test_hoist_gather_matmul_batches_the_input_projection():
    rng = np.random.default_rng(0)
    u, w = (rt.tensor(rng.standard_normal(s).astype(np.float32) * 0.2) for s in [(16, 32), (32, 32)])
    b = rt.tensor(rng.standard_normal(32).astype(np.float32))
    static = to_static(_rnn(u, w, b, steps=20), passes=[])
    x = rng.standard_normal((20, 1, 16)).astype(np.float32)
    program = static.get_program(rt.tensor(x))
    assert len(_ops(program, "while")) == 1
    optimized = _optimize(program, ["hoist_gather_matmul", "dce"])
    assert _loop_body_ops(optimized).count("matmul") == 1
    assert [op.type for op in optimized.global_block.ops].count("matmul") == 1
    _same(_run(optimized, [x], []), _run(program, [x], []), exact=False)
    _valid(optimized)


def _bias_first_rnn(u, w, b, steps):
    def rnn(x):
        h = rt.zeros((1, u.shape[1]))
        i = 0
        while i < steps and h.sum() < 1e9:
            h = rt.tanh(x[i] @ u + b + h @ w)
            i += 1
        return h
    return rnn


def _rnn_case(make):
    rng = np.random.default_rng(0)
    u, w = (rng.standard_normal(s).astype(np.float32) * 0.2 for s in [(16, 32), (32, 32)])
    b = rng.standard_normal(32).astype(np.float32)
    static = to_static(make(rt.tensor(u), rt.tensor(w), rt.tensor(b), steps=20), passes=[])
    x = rng.standard_normal((20, 1, 16)).astype(np.float32)
    program = static.get_program(rt.tensor(x))
    optimized = _optimize(program, ["hoist_gather_matmul", "fold_gather_addend", "dce"])
    _valid(optimized)
    return optimized, x, u, w, b


def test_fold_gather_addend_keeps_w3s_summation_order():
    """W3's `x[i] @ u + h @ w + b` adds b last: folding b into the hoisted product would add it first,
    another float sum (it moved W3 up to 2.4e-7 from NumPy). The pass leaves it, bit for bit NumPy's."""
    optimized, x, u, w, b = _rnn_case(_rnn)
    assert [op.type for op in optimized.global_block.ops].count("add") == 0
    xu = np.matmul(x, u)                 # hoist_gather_matmul: one stacked product, the same slices
    h = np.zeros((1, 32), np.float32)
    for i in range(20):
        h = np.tanh(xu[i] + h @ w + b)
    _same(_run(optimized, [x], []), [h], exact=True)


def test_fold_gather_addend_adds_a_bias_met_by_the_row_once():
    """`x[i] @ u + b + h @ w`: b meets the gathered row first, so `(p + b)[i]` is the same add of the
    same operands, hoisted: one add before the loop, the step's sums in NumPy's order, bit for bit."""
    optimized, x, u, w, b = _rnn_case(_bias_first_rnn)
    assert [op.type for op in optimized.global_block.ops].count("add") == 1
    assert _loop_body_ops(optimized).count("add") == 2              # the step's sum and i + 1
    xu = np.matmul(x, u)
    h = np.zeros((1, 32), np.float32)
    for i in range(20):
        h = np.tanh(xu[i] + b + h @ w)
    _same(_run(optimized, [x], []), [h], exact=True)


def _step_program(step, c_shape=(32,), c_dtype="float32"):
    """A 3-step loop h = step(x[i], h, c, i) over x: (3, 1, 32), with c a captured tensor."""
    c = rt.tensor(np.linspace(-1, 1, int(np.prod(c_shape))).reshape(c_shape).astype(c_dtype))

    def f(x, h):
        return rt.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, step(x, h, c, i)), (_counter(), h))[1]

    return _trace(f, [3, 1, 32], [1, 32])


def _row_twice(row, h, c):
    return rt.tanh((row + c) * row + h)


FOLD_CASES = {
    "folds": (lambda x, h, c, i: rt.tanh((x[i] + c) + h), {}, True),
    "folds, operands swapped": (lambda x, h, c, i: rt.tanh(h + (c + x[i])), {}, True),
    "c added last (a reassociation)": (lambda x, h, c, i: rt.tanh((x[i] + h) + c), {}, False),
    "c added last, swapped": (lambda x, h, c, i: rt.tanh(c + (h + x[i])), {}, False),
    "c made in the loop": (lambda x, h, c, i: rt.tanh((x[i] + c * h) + h), {}, False),
    "c widens x[i]": (lambda x, h, c, i: rt.tanh((x[i] + c) + h)[:1], {"c_shape": (2, 32)}, False),
    "c of another dtype": (lambda x, h, c, i: rt.tanh((x[i] + c) + h).astype("float32"), {"c_dtype": "float64"},
                           False),
    "x[i] read twice": (lambda x, h, c, i: _row_twice(x[i], h, c), {}, False),
    "not a first-axis gather": (lambda x, h, c, i: rt.tanh((x[:, 0][i] + c) + h[0])[None], {}, False),
    "subtract": (lambda x, h, c, i: rt.tanh((x[i] - c) + h), {}, False),
}


@pytest.mark.parametrize("case", FOLD_CASES, ids=list(FOLD_CASES))
def test_fold_gather_addend_applies_only_where_valid(case):
    step, options, folds = FOLD_CASES[case]
    program = _step_program(step, **options)
    optimized = _optimize(program, ["fold_gather_addend", "dce"])
    hoisted = [op.type for op in optimized.global_block.ops].count("add") - \
        [op.type for op in program.global_block.ops].count("add")
    assert hoisted == (1 if folds else 0), optimized
    _valid(optimized)
    rng = np.random.default_rng(1)
    x, h = rng.standard_normal((3, 1, 32)).astype(np.float32), rng.standard_normal((1, 32)).astype(np.float32)
    _same(_run(optimized, [x, h], []), _run(program, [x, h], []), exact=True)      # folded or not: same bits


# --- strength reduction ------------------------------------------------------------------------

def test_strength_reduce_powers():
    def f(x, k):
        return x ** 2 + x ** 3 + x ** 4 + x ** 2.5 + k ** 3 + k ** 3.0

    program = rt.trace(f, [rt.InputSpec([5], "float32"), rt.InputSpec([5], "int32")])[0]
    optimized = _optimize(program, ["strength_reduce"])
    pows = _ops(optimized, "pow")
    assert [p.inputs[1] for p in pows] == [2.5, 3.0]          # non-integer, and int ** 3.0 (float64)
    x = np.linspace(0.1, 3, 5).astype(np.float32)
    k = np.arange(-2, 3, dtype=np.int32)
    _same(_run(optimized, [x, k], []), _run(program, [x, k], []), exact=False)


def _edge_values(shape, seed=0):
    x = (np.random.default_rng(seed).standard_normal(shape) * 30).astype(np.float32)
    x.flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 200.0]
    return x


def test_sigmoid_becomes_its_ufuncs_fused_with_its_neighbours_bit_for_bit():
    def f(x, y):
        return rt.nn.functional.sigmoid(x + y) * y

    program = _trace(f, [4, 8], [4, 8])
    optimized = _optimize(program, None)
    assert [op.type for op in optimized.ops()] == [FUSED]
    assert "k_sigmoid" not in Executor().compile(program).source
    x, y = _edge_values((4, 8)), _edge_values((4, 8), seed=1)
    with np.errstate(invalid="ignore"):             # inf * 0 and NaNs, on purpose
        _same(_run(program, [x, y], None), _run(program, [x, y], []), exact=True)

    def gates(x):           # strided pieces: each copied once before the sigmoid reads it three times
        i, f = rt.split(x, 2, axis=1)
        return rt.nn.functional.sigmoid(i) * rt.nn.functional.sigmoid(f)

    program = _trace(gates, [4, 16])
    assert [op.type for op in _optimize(program, ["strength_reduce"]).ops()].count("positive") == 2
    x = _edge_values((4, 16))
    with np.errstate(invalid="ignore"):
        _same(_run(program, [x], None), _run(program, [x], []), exact=True)
    ints = rt.trace(rt.nn.functional.sigmoid, [rt.InputSpec([3], "int32")])[0]     # ints: the kernel casts
    assert [op.type for op in _optimize(ints, ["strength_reduce"]).ops()] == ["sigmoid"]


def test_numbers_in_fused_steps_are_typed_only_where_exact():
    def f(x, k):
        y = (x * 0.1 + 1) * -0.0 + x * 16777217 - 3 * x      # 0.1 and 2**24 + 1 are not float32 values
        return rt.maximum(y, 0) + 2.5, (k * 3 + 7) // 2

    program = rt.trace(f, [rt.InputSpec([6], "float32"), rt.InputSpec([6], "uint8")])[0]
    source = Executor().compile(program).source
    assert "0.1" in source and "16777217" in source, source    # kept as Python numbers
    x = _edge_values((6,))
    k = np.array([0, 1, 2, 100, 200, 255], np.uint8)
    with np.errstate(invalid="ignore", over="ignore"):
        _same(_run(program, [x, k], None), _run(program, [x, k], []), exact=True)


def test_one_sided_clip_fuses_and_a_short_axis_reduces_by_slices_bit_for_bit():
    def f(a, b):
        box = rt.clip(a - b, 0, None)
        return rt.prod(box, axis=-1), rt.max(rt.clip(a, None, 1.5), axis=0), rt.min(b, axis=1), rt.prod(a, axis=0)

    program = _trace(f, [3, 4], [3, 4])
    source = Executor().compile(program).source
    assert "k_clip" not in source and "multiply_reduce" not in source and "maximum_reduce" not in source, source
    assert "xp_multiply_reduce" in Executor().compile(_trace(lambda a: rt.prod(a, axis=0), [5, 4])).source
    a, b = _edge_values((3, 4)), _edge_values((3, 4), seed=1)
    with np.errstate(invalid="ignore", over="ignore"):
        _same(_run(program, [a, b], None), _run(program, [a, b], []), exact=True)
        want = [np.multiply.reduce(np.clip(a - b, 0, None), -1), np.max(np.clip(a, None, 1.5), 0), np.min(b, 1),
                np.multiply.reduce(a, 0)]
        _same(_run(program, [a, b], None), want, exact=True)


def test_ops_numpy_gets_wrong_at_special_values_fuse_only_for_the_dtypes_numpy_gets_right():
    """Float floor division by or of an infinity and complex tanh/expm1 at infinities follow the array API
    standard (NumPy's ufunc does not there): such an op runs its kernel, in the plan as eagerly; the same
    op over integers (floor_divide) or floats (tanh) is still one fusable ufunc step."""
    def floats(a, b):
        return rt.floor_divide(a * 1.0, b) * 1.0, rt.tanh(a * 0.5) * 2.0

    program = _trace(floats, [6], [6])
    fused = _ops(_optimize(program, None), "fused_elementwise")
    assert len(_ops(_optimize(program, None), "floor_divide")) == 1 and len(fused) == 2
    a = np.array([np.inf, -np.inf, 1.0, -1.0, 5.0, np.nan], np.float32)
    b = np.array([2.0, 2.0, -np.inf, np.inf, 2.0, 1.0], np.float32)
    with np.errstate(invalid="ignore"):
        got = _run(program, [a, b], None)
    want = np.array([np.inf, -np.inf, -0.0, -0.0, 2.0, np.nan], np.float32)
    np.testing.assert_array_equal(got[0], want)
    assert list(np.signbit(got[0][2:4])) == [True, True]
    ints = rt.trace(lambda i: rt.floor_divide(i * 3, 2) + 1, [rt.InputSpec([4], "int32")])[0]
    assert [op.type for op in _optimize(ints, None).ops()] == ["fused_elementwise"]

    z = np.array([complex(np.inf, 3), complex(-np.inf, 1), 0j, complex(np.inf, np.nan)], np.complex64)
    cplx = rt.trace(lambda z: (rt.tanh(z + 0), rt.expm1(z)), [rt.InputSpec([4], "complex64")])[0]
    with np.errstate(invalid="ignore"):
        th, em = _run(cplx, [z], None)
    assert th[:2].tolist() == [1 + 0j, -1 + 0j] and not np.signbit(th[:2].imag).any()
    assert em[2] == 0 and not np.signbit(em[2].real) and np.isinf(em[3].real) and np.isnan(em[3].imag)


# --- fusion and in-place writes -------------------------------------------------------------------

def gelu(x):
    return 0.5 * x * (1 + rt.tanh(0.79788456 * (x + 0.044715 * x ** 3)))


def _allocated_buffers(source):
    """Names the plan's NumPy calls allocate (a call whose last argument is not a buffer it reuses)."""
    buffers = set()
    for line in source.splitlines():
        m = re.match(r"\s*(?:(\w+) = )?xp_\w+\((.*)\)$", line)
        if m is None:
            continue
        last = m.group(2).split(", ")[-1].replace("out=", "")
        if last not in buffers and m.group(1):
            buffers.add(m.group(1))
    return buffers


def test_gelu_fuses_into_one_op_and_two_buffers():
    program = _trace(gelu, [1000])
    optimized = _optimize(program, None)
    assert [op.type for op in optimized.ops()] == [FUSED]
    plan = Executor().compile(program)
    assert len(_allocated_buffers(plan.source)) == 2, plan.source
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    _same(_run(program, [x], None), _run(program, [x], []), exact=False)


def test_gelu_peak_memory_is_two_buffers():
    program = _trace(gelu, [1 << 20])
    plan = Executor().compile(program)
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    peak = peak_memory(lambda: plan(x))
    assert peak <= 2 * x.nbytes + 64 * 1024, peak / x.nbytes
    out = plan(x)
    naive = Executor(passes=[]).compile(program)
    np.testing.assert_allclose(out[0], naive(x)[0], rtol=1e-6, atol=1e-6)


def test_fused_chain_over_a_dynamic_batch_reuses_its_scratch_buffer():
    # the k-means distance: before, each step of a chain of unknown shape allocated afresh
    def dist(x, c):
        return ((x[:, None, :] - c[None, :, :]) ** 2 * 0.5 + 1.0).sum(-1)

    program = rt.trace(dist, [rt.InputSpec([None, 2], "float32"), rt.InputSpec([8, 2], "float32")])[0]
    plan = Executor().compile(program)
    assert len(_allocated_buffers(plan.source)) == 2, plan.source     # one scratch buffer, and the sum
    rng = np.random.default_rng(0)
    x, c = rng.standard_normal((300, 2)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)
    _same(_run(program, [x, c], None), _run(program, [x, c], []), exact=True)


def test_fused_chain_of_unknown_shape_never_writes_into_a_buffer_broadcasting_grows():
    # a * 2 is [-1, 3] like y, but at run time it may be (1, 3) and y (4, 3): no write into it
    def f(a, y):
        return (a * 2.0 + y) * 3.0

    program = rt.trace(f, [rt.InputSpec([None, 3], "float32"), rt.InputSpec([None, 3], "float32")])[0]
    plan = Executor().compile(program)
    assert "xp_add(buf, y0, buf)" not in plan.source.replace("out=", ""), plan.source
    a, y = np.ones((1, 3), np.float32), np.arange(12, dtype=np.float32).reshape(4, 3)
    got = _run(program, [a, y], None)
    _same(got, _run(program, [a, y], []), exact=True)
    assert got[0].shape == (4, 3)


def test_inplace_writes_only_into_dying_buffers_the_plan_owns():
    w = rt.tensor(np.full((4, 4), 0.5, np.float32))

    def f(x):
        m = x @ w                     # owned, dies at the add: written in place
        y = rt.maximum(m + 1, 0)
        v = y.reshape((16,))          # a view of y: y must not be overwritten afterwards
        z = y * 2
        return z, v, x * 3            # x is an input: never written

    program = _trace(f, [4, 4])
    optimized = _optimize(program, None)
    into = {op.outputs[0].name: op.attrs.get("into") for op in optimized.ops() if op.type == FUSED}
    assert sorted(v for v in into.values() if v is not None) == [0]
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    keep = x.copy()
    _same(_run(program, [x], None), _run(program, [x], []), exact=True)
    np.testing.assert_array_equal(x, keep)


def test_inplace_hint_in_a_program_file_cannot_overwrite_an_input():
    program = _trace(lambda x: x + 1, [3])
    d = program_to_dict(program)
    op = d["blocks"][0]["ops"][0]
    op.update(type=FUSED, inputs=[op["inputs"][0]], attrs={"steps": [["add", {"in": 0}, 1]], "into": 0})
    hostile = program_from_dict(d)
    x = np.zeros(3, np.float32)
    out = Executor(passes=[]).run(hostile, {"x0": x})[0].numpy()
    np.testing.assert_array_equal(out, [1, 1, 1])
    np.testing.assert_array_equal(x, [0, 0, 0])


def test_fused_steps_are_checked_against_the_ufunc_table():
    program = _trace(lambda x: x + 1, [3])
    d = program_to_dict(program)
    op = d["blocks"][0]["ops"][0]
    op.update(type=FUSED, inputs=[op["inputs"][0]], attrs={"steps": [["save", {"in": 0}, 1]]})
    with pytest.raises(ValueError, match="not a known ufunc"):
        program_from_dict(d)
    with pytest.raises(ValueError, match="not a known ufunc"):
        Executor(passes=[]).compile(program_from_dict(d, check_types=False))


def test_mlp_plan_runs_in_place_after_each_matmul():
    rng = np.random.default_rng(0)
    ws = [rt.tensor(rng.standard_normal(s).astype(np.float32)) for s in [(8, 6), (6,), (6, 2), (2,)]]

    def mlp(x):
        h = rt.maximum(x @ ws[0] + ws[1], 0)
        return h @ ws[2] + ws[3]

    program = _trace(mlp, [1, 8])
    plan = Executor().compile(program)
    assert "out=matmul)" in plan.source and "xp_add(matmul_1, " in plan.source, plan.source
    x = rng.standard_normal((1, 8)).astype(np.float32)
    _same(_run(program, [x], None), _run(program, [x], []), exact=True)


class _FakeDevice(NumpyBackend):
    """A backend whose array module is not numpy itself: the executor takes its fused-kernel path."""

    name = "fake"

    def __init__(self):
        self.xp = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
        self.fused = []

    def fuse(self, fn):
        self.fused.append(fn)
        return fn


def test_fused_kernel_path_for_other_backends():
    backend = _FakeDevice()
    program = _optimize(_trace(gelu, [64]), None)
    plan = compile_plan(program, backend)
    assert len(backend.fused) == 1 and "xp_fused" in plan.source
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    want = Executor(passes=[]).compile(_trace(gelu, [64]))(x)[0]
    np.testing.assert_allclose(plan(x)[0], want, rtol=1e-6, atol=1e-6)


# --- the plan's fast forms ---------------------------------------------------------------------

def _layouts(a):
    """a in the layouts a caller may feed: C order, Fortran order, a strided view, reversed rows, a
    transposed copy's transpose (also C-contiguous flags on a 1-row view), a misaligned copy."""
    out = {"C": a, "F": np.asfortranarray(a)}
    wide = np.repeat(a, 2, axis=-1)
    out["strided"] = wide[..., ::2]
    out["reversed"] = a[::-1].copy()[::-1]
    raw = np.zeros(a.nbytes + a.itemsize, np.uint8)[1:]
    if a.size:
        misaligned = raw[:a.nbytes].view(a.dtype).reshape(a.shape)
        misaligned[...] = a
        out["misaligned"] = misaligned
    return out


DOT_SHAPES = [(1, 16, 8), (3, 16, 8), (1, 128, 128), (64, 3, 5), (1, 1, 8), (4, 1, 8), (1, 16, 1), (4, 16, 1),
              (0, 16, 8), (4, 0, 8), (4, 16, 0), (1, 2, 2)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("m,k,n", DOT_SHAPES, ids=["x".join(map(str, s)) for s in DOT_SHAPES])
def test_two_d_products_as_dot_equal_matmul_bit_for_bit(m, k, n, dtype):
    """A plan may run a 2-D float matmul as `a.dot(b)` (k > 1 and n > 1 only); in every layout the
    caller feeds, its result is NumPy's matmul bit for bit (the plan checks its inputs' layout)."""
    program = rt.trace(lambda a, b: a @ b, [rt.InputSpec([m, k], dtype), rt.InputSpec([k, n], dtype)])[0]
    plan = Executor().compile(program)
    assert (".dot(" in plan.source) == (dtype != "int32" and k > 1 and n > 1), plan.source
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = (rng.standard_normal((m, k)) * 10).astype(dtype)
    b = (rng.standard_normal((k, n)) * 10).astype(dtype)
    if dtype != "int32" and b.size:
        b[0, 0] = np.inf                        # an inf reaches the output the same way
    for la, fa in _layouts(a).items():
        for lb, fb in _layouts(b).items():
            (got,) = plan(fa, fb)
            want = np.matmul(fa, fb)
            assert got.dtype == want.dtype and got.shape == want.shape, (la, lb)
            np.testing.assert_array_equal(got, want, err_msg=f"{la} @ {lb}")


def test_dot_form_only_for_values_of_known_layout():
    """An operand that may be a strided view (a transpose) keeps matmul; ufunc results of the
    inputs need the plan's check of the inputs; matmul results need none."""
    def f(a, b):
        c = a @ b.T                             # b.T: a view of any layout
        d = rt.tanh(a) @ rt.exp(b)              # C-contiguous when a and b are
        e = c @ (b.T @ b)                       # matmul results: always C-contiguous
        return c, d, e

    program = _trace(f, [3, 4], [4, 4])
    plan = Executor().compile(program)
    src = plan.source
    assert src.count(".dot(") == 2 and src.count("xp_matmul(") == 3, src      # the checked one keeps a fallback
    assert src.count("xp_blas_ready(x0, x1)") == 1 and src.splitlines()[1].endswith("xp_blas_ready(x0, x1)"), src
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4, 4)])
    for fb in _layouts(b).values():
        c = a @ fb.T
        _same(plan(a, fb), [c, np.tanh(a) @ np.exp(fb), c @ (fb.T @ fb)], exact=True)


@pytest.mark.parametrize("transposed", [False, True])
def test_dot_form_follows_the_layout_of_a_loops_state(transposed):
    """A loop state is C-contiguous only when every iteration's result is: a transposed view as the
    next state keeps the product a matmul."""
    w = rt.tensor(np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32) * 0.3)

    def f(h):
        def body(i, h):
            h = rt.tanh(h @ w)
            return i + 1, h.T if transposed else h
        return rt.while_loop(lambda i, h: i < 3, body, (_counter(), h))[1]

    program = _trace(f, [4, 4])
    plan = Executor().compile(program)
    loop = plan.source[plan.source.index("    while "):]
    assert (".dot(" in loop) != transposed, plan.source
    h = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    want = h
    for _ in range(3):
        want = np.tanh(want @ w.numpy())
        want = want.T if transposed else want
    _same(_run(program, [h], None), [want], exact=True)


def test_rnn_plan_runs_its_recurrent_product_as_dot():
    """The loop state h = tanh(...) is C-contiguous on every iteration (a fixed point over the loop),
    so h @ w runs as `h.dot(w)`; the result is the NumPy loop's bit for bit."""
    rng = np.random.default_rng(0)
    u, w = (rng.standard_normal(s).astype(np.float32) * 0.2 for s in [(16, 32), (32, 32)])
    b = rng.standard_normal(32).astype(np.float32)
    static = to_static(_rnn(rt.tensor(u), rt.tensor(w), rt.tensor(b), steps=20),
                       passes=["licm", "cse", "dce", "fuse_elementwise", "inplace"])
    x = rng.standard_normal((20, 1, 16)).astype(np.float32)
    got = static(rt.tensor(x)).numpy()
    plan = Executor(passes=["licm", "cse", "dce", "fuse_elementwise", "inplace"]).compile(
        static.get_program(rt.tensor(x)))
    loop = plan.source[plan.source.index("    while "):]
    assert re.search(r"= h\w*\.dot\(", loop), plan.source
    h = np.zeros((1, 32), np.float32)
    i = 0
    while i < 20 and h.sum() < 1e9:
        h = np.tanh(x[i] @ u + h @ w + b)
        i += 1
    np.testing.assert_array_equal(got, h)


def _count_while(n):
    i = rt.zeros((), "int64")
    while i < n:
        i = i + 1
    return i


def _and_while(x):
    i, h = rt.zeros((), "int64"), x
    while i < 4 and h.sum() < 50.0:
        h, i = h * 2.0, i + 1
    return h


def _or_while(x):
    i, h = rt.zeros((), "int64"), x
    while i < 4 or h.sum() < -1e9:
        h, i = h * 2.0, i + 1
    return h


def _twice_read_while(x):
    i, h = rt.zeros((), "int64"), x
    while rt.logical_and(*[h.sum() < 50.0] * 2):
        h, i = h * 2.0, i + 1
    return h


LOOP_TESTS = {          # function, input shape, the plan's loop header (a regex)
    "count": (_count_while, None, r"while i\w* < n\w*:"),
    "and": (_and_while, [2, 3], r"while \(i\w* < 4\) and \(xp_add_reduce\(h\w*, None\) < 50\.0\):"),
    "or": (_or_while, [2, 3], r"while \(i\w* < 4\) or \(xp_add_reduce\(h\w*, None\) < -1000000000\.0\):"),
    "dynamic shape: may raise": (_and_while, [None, 3], r"while True:"),
    "a value read twice": (_twice_read_while, [2, 3], r"while True:"),
}


@pytest.mark.parametrize("case", LOOP_TESTS, ids=list(LOOP_TESTS))
def test_loop_condition_becomes_the_while_test(case):
    """A condition block of ops that cannot raise, each value read once, is the `while` test itself
    (no temporaries, no `if not ...: break`); `and`/`or` stay short-circuit."""
    fn, shape, header = LOOP_TESTS[case]
    static = to_static(fn)
    rng = np.random.default_rng(0)
    arg = np.int64(5) if shape is None else rng.uniform(0.5, 1.0, [2, 3]).astype(np.float32)
    got = static(rt.tensor(arg)).numpy()
    program = static.get_program(rt.tensor(arg) if shape is None else rt.InputSpec(shape, "float32"))
    source = Executor().compile(program).source
    loop = next(line.strip() for line in source.splitlines() if line.lstrip().startswith("while "))
    assert re.fullmatch(header, loop), source
    want = to_static(fn, passes=[])(rt.tensor(arg)).numpy()
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def _fibonacci(n):
    a, b, i = rt.zeros((), "int64"), rt.ones((), "int64"), rt.zeros((), "int64")
    while i < n:
        a, b = b, a + b
        i = i + 1
    return a, b


def test_loop_body_writes_its_results_straight_into_the_loop_variables():
    """h = tanh(...) and i + 1 are written into the loop variables themselves; a + b, whose
    variable b is still read as the next a, goes through the tuple assignment."""
    rng = np.random.default_rng(0)
    u, w = (rng.standard_normal(s).astype(np.float32) * 0.2 for s in [(16, 32), (32, 32)])
    static = to_static(_rnn(rt.tensor(u), rt.tensor(w), rt.tensor(np.zeros(32, np.float32)), steps=20))
    x = rt.tensor(rng.standard_normal((20, 1, 16)).astype(np.float32))
    source = Executor().compile(static.get_program(x)).source
    header, *body = source[source.index("    while "):].splitlines()[:-1]
    h, i = re.search(r"\((\w+) < 20\) and \(xp_add_reduce\((\w+), None\)", header).group(2, 1)
    assert re.fullmatch(rf"        {h} = xp_tanh\((matmul_\d+), \1\)", body[-2]), source   # in place, into h
    assert body[-1] == f"        {i} = ({i} + 1)", source
    static = to_static(_fibonacci)
    n = rt.tensor(np.int64(10))
    source = Executor().compile(static.get_program(n)).source
    assert re.search(r"\n        \w+, \w+ = \w+, \w+\n", source), source
    assert [t.numpy() for t in static(n)] == [55, 89]


def test_constants_reaching_the_caller_are_fresh_each_run():
    def f(x):
        return x + 0, constant(np.array([1.0, 2.0], np.float32))

    program = _trace(f, [2])
    plan = Executor().compile(program)
    first = plan(np.zeros(2, np.float32))[1]
    first[0] = 99
    again = plan(np.zeros(2, np.float32))[1]
    np.testing.assert_array_equal(again, [1.0, 2.0])


def test_scalar_ops_reductions_and_indexing_match_the_kernels():
    def f(x, i):
        s = x.sum() * 2 - x.max() / 3 + x.mean() + x.min(axis=0).sum() + x.prod(axis=1, keepdims=True).sum()
        return s, x[i], x[1:, ::2], x[None, ..., -1], (i + 1) * 2 < 7, -i

    program = rt.trace(f, [rt.InputSpec([4, 5], "float32"), rt.InputSpec([], "int64")])[0]
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    for i in (np.int64(2), np.int64(-1)):
        _same(_run(program, [x, i], None), _run(program, [x, i], []), exact=True)


def test_random_programs_with_every_pass_subset():
    """Random subsets and orders of passes on the corpus agree with no passes at all."""
    rng = random.Random(0)
    for case in CASES[::3]:
        program = to_static(case["fn"], passes=[]).get_program(
            *[rt.tensor(a) for a in _corpus_inputs(case, 0)], *case["scalars"])
        arrays = _corpus_inputs(case, 1)
        want = _run(program, arrays, [])
        chosen = rng.sample(ALL, rng.randint(2, len(ALL)))
        _same(_run(program, arrays, chosen), want, exact=not set(chosen) - set(EXACT))


def test_program_class_is_unchanged_by_passes():
    program = _trace(gelu, [4])
    before = program_to_dict(program)
    _optimize(program, None)
    assert program_to_dict(program) == before and isinstance(program, Program)


@pytest.mark.parametrize("case", CASES[::2], ids=[c["fn"].__name__ for c in CASES[::2]])
def test_traced_blocks_are_closed(case):
    """Tracing closes every block: closing again finds nothing a block reads from outside."""
    from runtime.passes._graph import close_new_reads
    program = to_static(case["fn"], passes=[]).get_program(
        *[rt.tensor(a) for a in _corpus_inputs(case, 0)], *case["scalars"])
    copy = program.clone()
    close_new_reads(copy)
    assert program_to_dict(copy) == program_to_dict(program)


def test_plan_frees_big_values_after_their_last_use():
    def f(x):
        y = rt.exp(x)
        z = y * 2
        return rt.sin(z) + 1

    program = _trace(f, [1 << 18])
    plan = Executor(passes=[]).compile(program)
    assert "    del " in plan.source, plan.source
    x = np.linspace(0, 1, 1 << 18, dtype=np.float32)
    peak = peak_memory(lambda: plan(x))
    assert peak <= 2 * x.nbytes + 64 * 1024, peak / x.nbytes


def test_a_file_must_list_what_blocks_read_from_outside():
    """The plan's liveness reads a cond/while op's inputs as everything its blocks read from
    outside, so the loader refuses a file whose op leaves a closure input out (it would free `big` early)."""
    def f(x):
        big = rt.exp(x)
        return rt.cond(x.sum() > 0, lambda: big * 2, lambda: big - 1)

    program = _trace(f, [1 << 15])
    d = program_to_dict(program)
    for op in d["blocks"][0]["ops"]:
        if op["type"] == "cond":
            op["inputs"] = op["inputs"][:1]              # a file that lists no captures
    with pytest.raises(ProgramFormatError, match="block 'true_block' has 1 closure params for 0 closure inputs"):
        program_from_dict(d)


# --- scaling: every pass near-linear in the number of ops (bench/pass_scaling.py times them) ---------

@pytest.mark.parametrize("shape", [pass_scaling.chain, pass_scaling.branches], ids=["chain", "branches"])
def test_every_pass_is_fast_on_6000_ops(shape):
    """8000 elementwise ops took fuse_elementwise 8.6 s (it rescanned the region per added op)."""
    program, _, _ = rt.trace(shape(6000), [rt.InputSpec([8, 8], "float32", "x")])
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    expected = _run(program, [x], [])
    current = program.clone()
    gc.collect()
    gc.disable()        # time the pass, not a collection of what the rest of the suite left in memory
    try:
        for name in passes.DEFAULT_PIPELINE:
            start = time.process_time()
            current = passes.PASSES[name](current)
            assert time.process_time() - start < 1.5, name
    finally:
        gc.enable()
    got = compile_plan(current, NumpyBackend())(x)
    np.testing.assert_array_equal(got[0], expected[0])


# --- a loop in a branch in a loop: blocks owned by their ops through every pass -------------------

def _loop_in_branch_in_loop(x, w):
    def outer_body(h, i):
        scale = rt.sum(w * 2.0)                 # invariant in the outer loop: LICM hoists it
        unused = rt.exp(h) * 3.0                # dead: DCE drops it
        del unused

        def inner(h):
            def body(g, j):
                again = rt.sum(w * 2.0)         # same as `scale` (CSE) and invariant in both loops
                return rt.tanh(g @ w) * again * 0.01 + scale * 0.001, j + 1
            return rt.while_loop(lambda g, j: j < 2, body, (h, rt.zeros((), "int64")))[0]
        h = rt.cond(rt.sum(h) > 0, lambda: inner(h), lambda: h - scale * 0.1)
        return h, i + 1
    return rt.while_loop(lambda h, i: i < 3, outer_body, (x, rt.zeros((), "int64")))[0]


def _region_ops(program):
    return [op for op in program.ops() if op.sub_blocks()]


@pytest.mark.parametrize("name", ["licm", "cse", "dce", None])
def test_loop_in_branch_in_loop_stays_valid_and_equal(name):
    rng = np.random.default_rng(3)
    x, w = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3), (3, 3)])
    program, _, _ = rt.trace(_loop_in_branch_in_loop, [rt.InputSpec([2, 3]), rt.InputSpec([3, 3])])
    want = _run(program, [x, w], [])
    pass_list = [name] if name is not None else None
    optimized = _optimize(program, pass_list)
    rt.verify(optimized)
    _same(_run(program, [x, w], pass_list), want, exact=False)
    assert len(_region_ops(optimized)) == 3 and len(optimized.blocks) == 7
    for op in _region_ops(optimized):
        assert all(sub.parent is op.block for sub in op.sub_blocks())
    inner_while = next(op for op in _region_ops(optimized) if op.type == "while" and op.block is not optimized.global_block)
    inner_body = inner_while.attrs["body_block"]
    if name in ("licm", None):          # `sum(w * 2.0)` left both loops: nothing of it in the inner body
        assert not any(op.type == "sum" for op in inner_body.ops)
    if name in ("dce", None):
        assert not any(op.type == "exp" for op in optimized.ops())
    if name == "cse":                   # the inner body reads the outer `scale` instead of its own copy
        assert sum(op.type == "sum" for op in optimized.ops()) == 2     # scale, and the branch's predicate


def _op_fields(op):
    return (op.type, tuple(id(x) if isinstance(x, rt.ir.Variable) else repr(x) for x in op.inputs),
            tuple(map(id, op.outputs)), repr(op.attrs), id(op.block))


@pytest.mark.parametrize("case", CASES, ids=[c["fn"].__name__ for c in CASES])
def test_passes_replace_ops_rather_than_edit_them(case):
    """Every pass leaves the ops it was given as they were: it swaps in `Operator.replace` rewrites
    (a region op's rewrite holds the same blocks, which dead-code elimination may trim)."""
    program = to_static(case["fn"], passes=[]).get_program(
        *[rt.tensor(a) for a in _corpus_inputs(case, 0)], *case["scalars"])
    for name in ALL:
        current = program.clone()
        before = [(op, _op_fields(op)) for op in current.ops()]
        passes.PASSES[name](current)
        changed = [f"{op.type}: {fields} -> {_op_fields(op)}" for op, fields in before if _op_fields(op) != fields]
        assert not changed, f"{name} edited ops in place: {changed[:3]}"


# --- closed blocks: passes keep every block reading only its params and closure params ----------

def _loop_reading(x, w):
    i = rt.zeros((), "int64")

    def body(h, i):
        wt = rt.permute_dims(w, (1, 0))            # invariant: reads only the closure param for w
        return rt.tanh(h @ wt), i + 1

    h, _ = rt.while_loop(lambda h, i: i < 3, body, (x, i))
    return h


def _closed(program):
    """Every sub-block reads only its params, closure params and values defined earlier in it."""
    for op in program.ops():
        for block in op.sub_blocks():
            defined = {id(v) for v in block.params + block.closure}
            for inner in block.ops:
                assert all(id(v) in defined for v in inner.input_vars()), (inner, str(program))
                defined.update(id(o) for o in inner.outputs)
            assert all(id(v) in defined for v in block.results if isinstance(v, rt.Variable)), str(program)


def test_licm_hoists_an_op_reading_a_closure_param_and_closes_the_loop_over_its_result():
    program = _trace(_loop_reading, [2, 3], [3, 3])
    x, w = program.inputs
    after = passes.PASSES["licm"](program.clone())
    _valid(after)
    _closed(after)
    (hoisted,) = [op for op in after.global_block.ops if op.type == "permute_dims"]
    assert hoisted.inputs[0].name == w.name            # reads the loop's input, not the body's closure param
    loop = next(op for op in after.global_block.ops if op.sub_blocks())
    assert any(v is hoisted.outputs[0] for v in loop.inputs)      # the loop reads it as a closure input ...
    body = loop.sub_blocks()[1]
    matmul = next(op for op in body.ops if op.type == "matmul")
    assert any(v is matmul.inputs[1] for v in body.closure)       # ... through a closure param of its body
    arrays = [np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), np.eye(3, dtype=np.float32) * 0.5]
    _same(_run(program, arrays, ["licm"]), _run(program, arrays, []), exact=True)


def test_dce_drops_a_closure_input_no_block_reads():
    def f(x, y):
        return rt.cond(rt.sum(x) > 0, lambda: (x * 2.0, y + 1.0), lambda: (x - 1.0, y))[0]

    program = _trace(f, [3], [3])
    cond = next(op for op in program.ops() if op.sub_blocks())
    assert [v.name for v in cond.inputs[1:]] == ["x0", "x1"]
    after = passes.PASSES["dce"](program.clone())
    _valid(after)
    cond = next(op for op in after.ops() if op.sub_blocks())
    assert [v.name for v in cond.inputs[1:]] == ["x0"]            # y's only readers yielded the dead output
    assert all(len(b.closure) == 1 for b in cond.sub_blocks())


def test_cse_reuses_an_enclosing_value_through_a_closure_param():
    def f(x):
        s = rt.exp(x)
        return rt.cond(rt.sum(x) > 0, lambda: rt.exp(x) * 2.0, lambda: x)

    program = _trace(f, [3])
    after = passes.PASSES["cse"](program.clone())
    _valid(after)
    _closed(after)
    cond = next(op for op in after.ops() if op.sub_blocks())
    assert [op.type for op in cond.sub_blocks()[0].ops] == ["multiply"]      # exp(x) computed once, outside
    assert any(v.name == "exp" for v in cond.inputs[1:])
    arrays = [np.linspace(-1, 1, 3, dtype=np.float32)]
    _same(_run(program, arrays, ["cse"]), _run(program, arrays, []), exact=True)


def test_plan_reads_a_closure_param_by_its_inputs_name():
    """No copy and no name of its own in the plan: the closure param is its input's name."""
    program = _trace(_loop_reading, [2, 3], [3, 3])
    source = Executor(passes=[]).compile(program).source
    assert "_in" not in source and "k_permute_dims(xp, x1, " in source, source


def test_fold_sees_a_known_value_through_a_closure_param():
    def f(x):
        c = rt.full((), 4.0, "float32")
        return rt.cond(rt.sum(x) > 0, lambda: x * rt.sqrt(c), lambda: x)

    program = _trace(f, [3])
    after = passes.PASSES["fold"](program.clone())
    _valid(after)
    cond = next(op for op in after.ops() if op.sub_blocks())
    assert [op.type for op in cond.sub_blocks()[0].ops] == ["constant", "multiply"]     # sqrt(c) folded inside
