"""The Executor: plan caching, run-time print/assert, dynamic dims, feed checks, op errors."""
import gc
import os
import weakref

import numpy as np
import pytest

import runtime as rt
from runtime import tracing

SPEC = rt.InputSpec([None, 3], "float32", name="x")
X = np.arange(6, dtype=np.float32).reshape(2, 3)
THIS_FILE = os.path.basename(__file__)


def trace(fn, *specs):
    program, _, _ = rt.trace(fn, list(specs or [SPEC]))
    return program


# --- plans --------------------------------------------------------------------------------

def test_plan_compiled_once_and_cached():
    prog = trace(lambda x: x.sum(axis=1) * 2.0)
    ex = rt.Executor()
    plan = ex.compile(prog)
    assert isinstance(plan, rt.Plan)
    assert ex.compile(prog) is plan
    ex.run(prog, {"x": X})
    assert ex.compile(prog) is plan
    assert rt.Executor().compile(prog) is plan          # one cache per Program, shared by executors
    assert "def plan(x):" in plan.source


@pytest.mark.parametrize("passes", [None, []], ids=["default", "no passes"])
def test_cached_plans_do_not_keep_their_program_alive(passes):
    prog = trace(lambda x: x.sum(axis=1) * 2.0)
    plan = rt.Executor(passes=passes).compile(prog)
    np.testing.assert_array_equal(plan.run({"x": X})[0].numpy(), X.sum(axis=1) * 2)
    alive = weakref.ref(prog)
    del prog
    gc.collect()
    assert alive() is None


def test_plan_recompiled_after_program_changes():
    prog, _, out = rt.trace(lambda x: x + 1.0, [SPEC])
    ex = rt.Executor()
    plan = ex.compile(prog)
    np.testing.assert_array_equal(ex.run(prog, {"x": X})[0].numpy(), X + 1)
    with tracing.block_guard(prog.global_block):
        doubled = out * 3.0
    prog.outputs = [doubled.value]                      # the Program holds the Variable a Tracer wraps
    new_plan = ex.compile(prog)
    assert new_plan is not plan
    np.testing.assert_array_equal(ex.run(prog, {"x": X})[0].numpy(), (X + 1) * 3)
    assert ex.compile(prog) is new_plan


def test_plan_recompiled_when_outputs_are_reassigned():
    prog, (x,), out = rt.trace(lambda x: x + 1.0, [SPEC])
    ex = rt.Executor()
    plan = ex.compile(prog)
    prog.outputs = [x.value]                            # no op recorded: only the outputs changed
    assert ex.compile(prog) is not plan
    np.testing.assert_array_equal(ex.run(prog, {"x": X})[0].numpy(), X)


def test_plan_is_callable_with_arrays():
    prog = trace(lambda x: x * 2.0)
    plan = rt.Executor().compile(prog)
    (out,) = plan(X)
    np.testing.assert_array_equal(out, X * 2)


def test_outputs_are_tensors_in_program_order():
    prog = trace(lambda x: (x.max(), x.min(), x.argmax()))
    outs = rt.Executor().run(prog, {"x": X})
    assert [type(o) for o in outs] == [rt.Tensor] * 3
    assert [o.item() for o in outs] == [5.0, 0.0, 5]


def test_no_passes_gives_the_same_results():
    prog = trace(lambda x: rt.cond(x.sum() > 3, lambda: x * 2.0 + 1.0, lambda: x - 1.0))
    for x in (X, -X):
        a = rt.Executor().run(prog, {"x": x})[0].numpy()
        b = rt.Executor(passes=[]).run(prog, {"x": x})[0].numpy()
        np.testing.assert_array_equal(a, b)


def test_unknown_pass_is_an_error():
    with pytest.raises(ValueError, match="unknown pass"):
        rt.Executor(passes=["no_such_pass"]).run(trace(lambda x: x), {"x": X})


# --- parameters ------------------------------------------------------------------------------

def test_parameters_fed_by_reference_and_overridable():
    w = rt.tensor(np.ones(3, np.float32))
    prog = trace(lambda x: x * w)
    name = prog.inputs[1].name
    assert prog.inputs[1].persistable and prog.parameters[name] is w
    ex = rt.Executor()
    np.testing.assert_array_equal(ex.run(prog, {"x": X})[0].numpy(), X)
    w.data = np.full(3, 2.0, np.float32)                 # updated weights are seen on the next run
    np.testing.assert_array_equal(ex.run(prog, {"x": X})[0].numpy(), X * 2)
    np.testing.assert_array_equal(ex.run(prog, {"x": X, name: np.zeros(3, np.float32)})[0].numpy(), X * 0)


# --- print and assert --------------------------------------------------------------------------

def with_prints(x):
    s = x.sum()

    def big():
        rt.print_("big:", s)
        return s

    def small():
        rt.print_("small:", s, "{braces}")
        return -s
    return rt.cond(s > 4, big, small)


def test_print_prints_at_run_time_on_the_path_taken(capsys):
    prog = trace(with_prints)
    assert capsys.readouterr().out == ""                 # nothing printed while tracing
    assert [op.type for op in prog.ops()].count("print") == 2
    rt.Executor().run(prog, {"x": X})
    assert capsys.readouterr().out == "big: 15.0\n"
    rt.Executor().run(prog, {"x": X * 0})
    assert capsys.readouterr().out == "small: 0.0 {braces}\n"


def test_print_in_loop_prints_every_iteration(capsys):
    def fn(x):
        def body(i, acc):
            rt.print_("step", i, acc.sum())
            return i + 1, acc + 1.0
        return rt.while_loop(lambda i, acc: i < rt.dim(x, 0), body, (0, x))

    prog = trace(fn)
    rt.Executor().run(prog, {"x": np.zeros((3, 3), np.float32)})
    assert capsys.readouterr().out == "step 0 0.0\nstep 1 9.0\nstep 2 18.0\n"


def test_print_eagerly_prints_now(capsys):
    rt.print_("value", rt.tensor([1, 2]))
    assert capsys.readouterr().out == "value [1 2]\n"


def test_assert_passes_and_fails_with_message():
    def fn(x):
        rt.assert_(x.sum() > 0, "sum must be positive")
        return x * 2.0

    prog = trace(fn)
    assert "assert" in [op.type for op in prog.ops()]
    np.testing.assert_array_equal(rt.Executor().run(prog, {"x": X})[0].numpy(), X * 2)
    with pytest.raises(AssertionError, match="sum must be positive") as info:
        rt.Executor().run(prog, {"x": -X})
    assert THIS_FILE in str(info.value)                  # the user's line


def test_assert_only_on_the_path_taken():
    def fn(x):
        def checked():
            rt.assert_(x.min() > 100, "never true")
            return x
        return rt.cond(x.sum() > 100, checked, lambda: x + 1.0)

    prog = trace(fn)
    np.testing.assert_array_equal(rt.Executor().run(prog, {"x": X})[0].numpy(), X + 1)
    with pytest.raises(AssertionError, match="never true"):
        rt.Executor().run(prog, {"x": X + 50})


def test_assert_eagerly_checks_now():
    rt.assert_(rt.tensor(True), "fine")
    with pytest.raises(AssertionError, match="eager message"):
        rt.assert_(rt.tensor([True, False]), "eager message")


# --- dynamic dims -------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [1, 2, 7])
def test_dynamic_batch_resolved_at_run_time(batch):
    def fn(x):
        flat = x.reshape(x.shape[0], -1)
        return flat @ rt.ones((3, 2)), rt.zeros((x.shape[0], 1)) + x.sum(), rt.dim(x, 0)

    prog = trace(fn)
    x = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)
    a, b, n = rt.Executor().run(prog, {"x": x})
    np.testing.assert_array_equal(a.numpy(), x @ np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(b.numpy(), np.zeros((batch, 1), np.float32) + x.sum())
    assert n.item() == batch


def test_empty_batch():
    prog = trace(lambda x: (x * 2.0, x.sum(axis=1), rt.dim(x, 0)))
    a, b, n = rt.Executor().run(prog, {"x": np.zeros((0, 3), np.float32)})
    assert a.shape == (0, 3) and b.shape == (0,) and n.item() == 0


def test_one_plan_serves_every_batch_size():
    prog = trace(lambda x: x * 2.0)
    ex = rt.Executor()
    plan = ex.compile(prog)
    for batch in (1, 3, 5):
        ex.run(prog, {"x": np.ones((batch, 3), np.float32)})
    assert ex.compile(prog) is plan


# --- feeds ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("feed,pattern", [
    ({}, r"missing input 'x' \(float32\[\?, 3\]\)"),
    ({"x": X.astype(np.float64)}, r"input 'x': expected dtype float32, got float64"),
    ({"x": X.astype(np.int32)}, r"input 'x': expected dtype float32, got int32"),
    ({"x": X[0]}, r"input 'x': expected shape \[None, 3\], got \[3\]"),
    ({"x": X[None]}, r"input 'x': expected shape \[None, 3\], got \[1, 2, 3\]"),
    ({"x": np.ones((2, 4), np.float32)}, r"input 'x': expected shape \[None, 3\], got \[2, 4\]"),
    ({"x": X, "y": X}, r"unknown input\(s\) \['y'\].*\['x'\]"),
])
def test_bad_feeds_raise_feed_error(feed, pattern):
    prog = trace(lambda x: x + 1.0)
    with pytest.raises(rt.FeedError, match=pattern):
        rt.Executor().run(prog, feed)


def test_feed_error_is_a_value_error():
    assert issubclass(rt.FeedError, ValueError)


def test_feeds_accept_tensors_and_lists():
    prog = trace(lambda x: x + 1.0)
    np.testing.assert_array_equal(rt.Executor().run(prog, {"x": rt.tensor(X)})[0].numpy(), X + 1)
    np.testing.assert_array_equal(rt.Executor().run(prog, {"x": [[1.0, 2.0, 3.0]]})[0].numpy(), [[2.0, 3.0, 4.0]])


def test_feed_of_fixed_dims_and_scalars():
    prog = trace(lambda x, n: x * n, rt.InputSpec([2, 3], "float32", name="x"), rt.InputSpec([], "int64", name="n"))
    out = rt.Executor().run(prog, {"x": X, "n": np.int64(3)})[0]
    np.testing.assert_array_equal(out.numpy(), X * 3)
    assert out.dtype == np.float64                      # float32 * int64 tensor: NumPy promotion
    with pytest.raises(rt.FeedError, match=r"expected shape \[2, 3\], got \[3, 3\]"):
        rt.Executor().run(prog, {"x": np.ones((3, 3), np.float32), "n": np.int64(3)})
    with pytest.raises(rt.FeedError, match=r"input 'n': expected dtype int64, got float32"):
        rt.Executor().run(prog, {"x": X, "n": np.float32(3)})


# --- errors while running --------------------------------------------------------------------------

def test_failing_op_names_the_op_and_the_user_line():
    a, b = rt.InputSpec([None, None], name="a"), rt.InputSpec([None, None], name="b")
    prog = trace(lambda a, b: (a + 1.0) @ b, a, b)
    ok = rt.Executor().run(prog, {"a": np.ones((2, 3), np.float32), "b": np.ones((3, 1), np.float32)})
    np.testing.assert_array_equal(ok[0].numpy(), np.full((2, 1), 6.0, np.float32))
    with pytest.raises(ValueError) as info:
        rt.Executor().run(prog, {"a": np.ones((2, 3), np.float32), "b": np.ones((2, 3), np.float32)})
    message = str(info.value)
    assert "while running op 'matmul'" in message
    assert THIS_FILE in message
    assert info.value.op.type == "matmul"


def test_failing_op_inside_a_loop_body_is_named():
    def fn(x, y):
        return rt.while_loop(lambda i, acc: i < rt.dim(x, 0), lambda i, acc: (i + 1, acc + (x @ y).sum()), (0, x.sum()))

    prog = trace(fn, rt.InputSpec([None, None], name="x"), rt.InputSpec([None, None], name="y"))
    with pytest.raises(ValueError, match="while running op 'matmul'"):
        rt.Executor().run(prog, {"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32)})


def test_failing_op_after_the_plans_layout_check_is_named():
    """The plan's first lines check its inputs' layout (for `dot`): the lines after it still map to their ops."""
    prog = trace(lambda a, b, c: rt.exp(a @ b) + c, rt.InputSpec([2, 3], name="a"), rt.InputSpec([3, 4], name="b"),
                 rt.InputSpec([None], name="c"))
    plan = rt.Executor().compile(prog)
    assert "blas_ready(a, b)" in plan.source.splitlines()[1] and "a.dot(b)" in plan.source, plan.source
    ones = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(ValueError) as info:
        rt.Executor().run(prog, {"a": ones[0], "b": ones[1], "c": np.ones(3, np.float32)})
    assert "while running op 'fused_elementwise'" in str(info.value) and THIS_FILE in str(info.value)


def test_broadcast_failure_at_run_time_names_the_op():
    prog = trace(lambda a, b: a + b, rt.InputSpec([None], name="a"), rt.InputSpec([None], name="b"))
    with pytest.raises(ValueError, match="while running op 'add'"):
        rt.Executor().run(prog, {"a": np.ones(3, np.float32), "b": np.ones(2, np.float32)})


# --- devices ----------------------------------------------------------------------------------------

def test_gpu_without_cuda_is_a_clear_error():
    if rt.gpu_available():
        pytest.skip("a GPU is available")
    with pytest.raises(rt.DeviceUnavailableError, match="gpu"):
        rt.Executor("gpu")
    with pytest.raises(rt.DeviceUnavailableError):
        rt.tensor([1.0], device="gpu")
