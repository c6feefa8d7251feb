"""rt.cond / rt.while_loop: Python on concrete values, cond/while ops on Variables.

Every executed Program is compared with a plain NumPy/Python loop computing the
same thing (the oracle), for inputs that take each path.
"""
import numpy as np
import pytest

import runtime as rt

X = np.arange(6, dtype=np.float32).reshape(2, 3)
SPEC = rt.InputSpec([None, 3], "float32", name="x")


def op_types(program):
    return [op.type for op in program.ops()]


def run(program, **feed):
    outs = rt.Executor().run(program, feed)
    return [o.numpy() if isinstance(o, rt.Tensor) else o for o in outs]


def check(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


# --- concrete predicates run as Python -----------------------------------------------------------

@pytest.mark.parametrize("pred,taken", [(True, "t"), (False, "f"), (1, "t"), (0, "f"),
                                        (rt.tensor(True), "t"), (rt.tensor(0.0), "f"),
                                        (rt.tensor([[2.0]]) > 1, "t")])
def test_cond_on_concrete_values_calls_one_branch(pred, taken):
    called = []
    out = rt.cond(pred, lambda: called.append("t") or "T", lambda: called.append("f") or "F")
    assert called == [taken] and out == taken.upper()


def test_cond_passes_operands():
    assert rt.cond(False, lambda a, b: a + b, lambda a, b: a - b, 5, 2) == 3


def test_while_loop_on_concrete_values_is_python():
    calls = []

    def body(i, acc):
        calls.append(i)
        return i + 1, acc * 2

    assert rt.while_loop(lambda i, acc: i < 4, body, (0, 1)) == (4, 16)
    assert calls == [0, 1, 2, 3]
    assert rt.while_loop(lambda i, acc: i < 4, body, [0, 1]) == [4, 16]          # list in, list out
    assert rt.while_loop(lambda i: i > 0, lambda i: (i - 1,), (0,)) == (0,)      # zero iterations


def test_while_loop_on_eager_tensors():
    i, x = rt.while_loop(lambda i, x: x.sum() < 100, lambda i, x: (i + 1, x * 2.0), (0, rt.tensor(X)))
    expected, n = X.copy(), 0
    while expected.sum() < 100:
        expected, n = expected * 2.0, n + 1
    assert i == n
    assert isinstance(x, rt.Tensor)
    check(x.numpy(), expected)


# --- symbolic predicates record ops ----------------------------------------------------------------

def oracle_cond(x):
    s = x.sum()
    return (x * 2.0, x[0]) if s > 10 else (x - 1.0, x[-1])


def test_cond_records_op_and_runs_both_paths():
    def fn(x):
        return rt.cond(x.sum() > 10, lambda: (x * 2.0, x[0]), lambda: (x - 1.0, x[-1]))

    prog, _, out = rt.trace(fn, [SPEC])
    assert op_types(prog) == ["sum", "greater", "cond", "multiply", "getitem", "subtract", "getitem"]
    assert isinstance(out, tuple) and out[0].static_shape == (-1, 3) and out[1].static_shape == (3,)
    for x in (X, X - 5, np.ones((4, 3), np.float32)):
        for got, want in zip(run(prog, x=x), oracle_cond(x)):
            check(got, want)


def test_cond_with_non_bool_predicate_tests_nonzero():
    prog, _, _ = rt.trace(lambda x: rt.cond(x.sum(), lambda: x + 1.0, lambda: x - 1.0), [SPEC])
    assert "not_equal" in op_types(prog)
    check(run(prog, x=X)[0], X + 1.0)
    check(run(prog, x=np.zeros((1, 3), np.float32))[0], np.full((1, 3), -1.0, np.float32))


def test_cond_predicate_must_have_one_element():
    with pytest.raises(ValueError, match="ambiguous"):
        rt.trace(lambda x: rt.cond(x[0] > 1, lambda: x, lambda: x), [SPEC])


def test_cond_branch_shapes_relax_to_unknown_dims():
    spec = rt.InputSpec([4, 3], "float32", name="x")
    prog, _, out = rt.trace(lambda x: rt.cond(x.sum() > 0, lambda: x[:2], lambda: x), [spec])
    assert out.static_shape == (-1, 3)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    check(run(prog, x=x)[0], x[:2])
    check(run(prog, x=-x - 1)[0], -x - 1)


def test_cond_python_numbers_in_branches_are_weak():
    def fn(x):
        y = rt.cond(x.sum() > 0, lambda: 1, lambda: 2.5)
        return x * y

    prog, _, out = rt.trace(fn, [SPEC])
    assert out.dtype == np.float32
    check(run(prog, x=X)[0], X * np.float32(1))
    check(run(prog, x=-X - 1)[0], (-X - 1) * np.float32(2.5))


def test_cond_same_python_value_in_both_branches_stays_python():
    prog, _, out = rt.trace(lambda x: rt.cond(x.sum() > 0, lambda: (x, "tag"), lambda: (-x, "tag")), [SPEC])
    assert out[1] == "tag"
    check(run(prog, x=X)[0], X)


def test_cond_captures_eager_tensors_as_persistable_inputs():
    w = rt.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    prog, _, _ = rt.trace(lambda x: rt.cond(x.sum() > 0, lambda: x * w, lambda: x), [SPEC])
    assert [v.persistable for v in prog.inputs] == [False, True]
    check(run(prog, x=X)[0], X * w.numpy())


@pytest.mark.parametrize("true_out,false_out,pattern", [
    (lambda x: (x, x), lambda x: x, r"different structures.*tuple.*tensor"),
    (lambda x: [x], lambda x: (x,), r"different structures"),
    (lambda x: {"a": x}, lambda x: {"b": x}, r"different structures"),
    (lambda x: x, lambda x: x.astype("int32"), r"dtype float32 in the true branch and int32 in the false branch"),
    (lambda x: x, lambda x: x[0], r"changes rank"),
    (lambda x: x, lambda x: "text", r"differs between the branches.*str"),
])
def test_cond_branch_mismatch_errors(true_out, false_out, pattern):
    with pytest.raises(rt.ControlFlowError, match=pattern):
        rt.trace(lambda x: rt.cond(x.sum() > 0, lambda: true_out(x), lambda: false_out(x)), [SPEC])


def test_cond_mismatch_error_names_the_variable():
    def fn(x):
        return rt.cond(x.sum() > 0, lambda: (x, x), lambda: (x, x.astype("float64")), names=("h", "c"))

    with pytest.raises(rt.ControlFlowError, match=r"'c' has dtype float32.*float64"):
        rt.trace(fn, [SPEC])


def oracle_while(x):
    i, acc = 0, x.copy()
    while acc.sum() < 100:
        i, acc = i + 1, acc * 2.0 + np.float32(i)
    return np.int64(i), acc


def test_while_records_op_and_matches_python_loop():
    def fn(x):
        return rt.while_loop(lambda i, acc: acc.sum() < 100, lambda i, acc: (i + 1, acc * 2.0 + i), (0, x))

    prog, _, (i, acc) = rt.trace(fn, [SPEC])
    assert op_types(prog).count("while") == 1
    assert acc.dtype == np.float32 and acc.static_shape == (-1, 3)
    for x in (X, X + 100, np.full((5, 3), 0.5, np.float32)):
        got_i, got_acc = run(prog, x=x)
        want_i, want_acc = oracle_while(x)
        check(got_i, want_i)
        check(got_acc, want_acc)


def test_python_int_while_only_unrolls():
    def fn(x):
        return rt.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc * 2.0), (0, x))

    prog, _, (i, acc) = rt.trace(fn, [SPEC])
    assert i == 3 and "while" not in op_types(prog)
    assert op_types(prog) == ["multiply"] * 3
    check(run(prog, x=X)[0], X * 8)


def test_weak_counter():
    def fn(x):
        return rt.while_loop(lambda i, y: y.sum() < 50, lambda i, y: (i + 1, y + x * i), (0, x))

    prog, _, (i, y) = rt.trace(fn, [SPEC])
    assert isinstance(i, rt.Tracer) and i.weak and i.dtype == np.int64
    assert y.dtype == np.float32                       # x * i keeps float32
    assert all(op.outputs[0].dtype != np.float64 for op in prog.ops() if op.outputs)
    n, want = 0, X.copy()
    while want.sum() < 50:
        n, want = n + 1, want + X * np.float32(n)
    got_i, got_y = run(prog, x=X)
    check(got_i, np.int64(n))
    check(got_y, want)


def test_weak_counter_adopts_float_when_body_adds_float():
    def fn(x):
        return rt.while_loop(lambda t, y: t < x.sum(), lambda t, y: (t + 0.5, y + 1.0), (0, x))

    prog, _, (t, y) = rt.trace(fn, [SPEC])
    assert t.dtype == np.float64 and t.weak       # a Python float: held as Python holds it
    got_t, got_y = run(prog, x=X)
    t_ref, y_ref = 0.0, X.copy()
    while t_ref < X.sum():
        t_ref, y_ref = t_ref + 0.5, y_ref + 1.0
    check(got_t, np.float64(t_ref))
    check(got_y, y_ref)


def test_weak_values_stay_weak_through_arithmetic():
    half = rt.InputSpec([3], "float16", name="x")

    def fn(x):
        i, _ = rt.while_loop(lambda i, y: y.sum() < 10, lambda i, y: (i + 1, y * 2.0), (0, x))
        return i + 0.5, x * (i + 0.5)

    prog, _, (j, y) = rt.trace(fn, [half])
    assert j.weak and j.dtype == np.float64
    assert y.dtype == np.float16
    x = np.ones(3, np.float16)
    n = 0
    while (x * 2 ** n).sum() < 10:
        n += 1
    got_j, got_y = run(prog, x=x)
    check(got_j, np.float64(n + 0.5))
    check(got_y, x * np.float16(n + 0.5))


def test_weak_counter_stays_weak_when_promoted():
    half = rt.InputSpec([3], "float16", name="x")

    def fn(x):
        return rt.while_loop(lambda t, y: t < x.sum(), lambda t, y: (t + 0.5, y * t), (0, x))

    prog, _, (t, y) = rt.trace(fn, [half])
    assert t.weak and y.dtype == np.float16


def test_cond_of_python_numbers_stays_weak():
    half = rt.InputSpec([3], "float16", name="x")
    prog, _, out = rt.trace(lambda x: x * rt.cond(x.sum() > 0, lambda: 1, lambda: 2.5), [half])
    assert out.dtype == np.float16


def test_condition_python_first_then_tensor():
    """The counter is a Python int until the body makes it a tensor: one unrolled step, then a while op."""
    def fn(x):
        def body(i, acc):
            return i + rt.sum(x > 100) + 1, acc * 2.0
        return rt.while_loop(lambda i, acc: i < 3, body, (0, x))

    prog, _, (i, acc) = rt.trace(fn, [SPEC])
    types = op_types(prog)
    assert types.count("while") == 1 and types.index("multiply") < types.index("while")
    for x in (X, X + 200):
        i_ref, acc_ref = 0, x.copy()
        while i_ref < 3:
            i_ref, acc_ref = i_ref + int((x > 100).sum()) + 1, acc_ref * 2.0
        got_i, got_acc = run(prog, x=x)
        check(got_i, np.int64(i_ref))
        check(got_acc, acc_ref)


def test_growing_loop_var_gets_relaxed_dims():
    def fn(x):
        v = x[0]
        return rt.while_loop(lambda v: v.sum() < 40, lambda v: (rt.concat([v, v[-1:]]),), (v,))

    prog, _, (v,) = rt.trace(fn, [SPEC])
    assert v.static_shape == (-1,)
    for x in (X, X + 50):
        ref = x[0].copy()
        while ref.sum() < 40:
            ref = np.concatenate([ref, ref[-1:]])
        check(run(prog, x=x)[0], ref)


def test_loop_var_shape_relaxes_only_changing_dims():
    spec = rt.InputSpec([2, 3], "float32", name="x")

    def fn(x):
        return rt.while_loop(lambda y: rt.dim(y, 0) < 5, lambda y: (rt.concat([y, y[:1]]),), (x,))

    prog, _, (y,) = rt.trace(fn, [spec])
    assert y.static_shape == (-1, 3)
    ref = X.copy()
    while ref.shape[0] < 5:
        ref = np.concatenate([ref, ref[:1]])
    check(run(prog, x=X)[0], ref)


def test_pytree_loop_vars():
    def fn(x):
        def body(state, extras):
            i, (a, b) = state
            return (i + 1, [a + b, b * 2.0]), {"total": extras["total"] + a.sum(), "name": extras["name"]}
        init = ((0, [x, x[0]]), {"total": x.sum() * 0, "name": "fixed"})
        return rt.while_loop(lambda state, extras: state[0] < rt.dim(x, 0) + 2, body, init)

    prog, _, out = rt.trace(fn, [SPEC])
    (i, (a, b)), extras = out
    assert isinstance(out, tuple) and isinstance(out[0][1], list) and set(extras) == {"total", "name"}
    assert extras["name"] == "fixed"
    got = run(prog, x=X)
    ii, aa, bb, tot = 0, X.copy(), X[0].copy(), np.float32(0)
    while ii < X.shape[0] + 2:
        ii, aa, bb, tot = ii + 1, aa + bb, bb * 2.0, tot + aa.sum()
    for g, w in zip(got, (np.int64(ii), aa, bb, tot)):
        check(g, w)


def test_cond_with_pytree_outputs():
    def fn(x):
        return rt.cond(x.sum() > 0, lambda: {"a": [x, x[0]], "b": (x.sum(),)},
                       lambda: {"a": [-x, x[1]], "b": (x.max(),)})

    prog, _, out = rt.trace(fn, [SPEC])
    assert set(out) == {"a", "b"} and isinstance(out["a"], list) and isinstance(out["b"], tuple)
    for x in (X, -X - 1):
        want = ([x, x[0]], x.sum()) if x.sum() > 0 else ([-x, x[1]], x.max())
        got = run(prog, x=x)
        for g, w in zip(got, (want[0][0], want[0][1], want[1])):
            check(g, w)


def test_while_structure_mismatch_error():
    with pytest.raises(rt.ControlFlowError, match="structure"):
        rt.trace(lambda x: rt.while_loop(lambda a: a.sum() < 10, lambda a: ((a, a),), (x,)), [SPEC])


def test_while_dtype_change_error_names_variable():
    def fn(x):
        return rt.while_loop(lambda a: a.sum() < 10, lambda a: (a.astype("float64") * 2,), (x,), names=("acc",))

    with pytest.raises(rt.ControlFlowError, match=r"'acc'.*float32.*float64"):
        rt.trace(fn, [SPEC])


def test_while_rank_change_error():
    with pytest.raises(rt.ControlFlowError, match="rank"):
        rt.trace(lambda x: rt.while_loop(lambda a: a.sum() < 10, lambda a: (a[None],), (x,)), [SPEC])


def test_while_zero_iterations_returns_initial_state():
    prog, _, _ = rt.trace(lambda x: rt.while_loop(lambda a: a.sum() < 0, lambda a: (a + 1.0,), (x,)), [SPEC])
    check(run(prog, x=X)[0], X)


# --- nesting --------------------------------------------------------------------------------------

def nested(x):
    """while (outer) > cond > while (inner): each outer step adds i (inner loop of i +1s) or subtracts 1."""
    def outer_body(i, acc):
        def true_branch():
            return rt.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + 1.0), (0, acc))[1]
        return i + 1, rt.cond(acc.sum() > 0, true_branch, lambda: acc - 1.0)
    return rt.while_loop(lambda i, acc: i < rt.dim(x, 0) + 2, outer_body, (0, x))


def nested_oracle(x):
    i, acc = 0, x.copy()
    while i < x.shape[0] + 2:
        if acc.sum() > 0:
            j = 0
            while j < i:
                j, acc = j + 1, acc + 1.0
        else:
            acc = acc - 1.0
        i += 1
    return np.int64(i), acc


def test_nested_while_in_cond_in_while():
    prog, _, _ = rt.trace(nested, [SPEC])
    assert op_types(prog).count("while") == 2 and op_types(prog).count("cond") == 1
    outer = next(op for op in prog.global_block.ops if op.type == "while")
    body = outer.attrs["body_block"]
    cond_op = next(op for op in body.ops if op.type == "cond")
    assert "while" in [op.type for op in cond_op.attrs["true_block"].ops]
    for x in (X, -X, np.full((1, 3), -0.1, np.float32), np.ones((3, 3), np.float32)):
        got = run(prog, x=x)
        for g, w in zip(got, nested_oracle(x)):
            check(g, w)


def test_cond_inside_cond():
    def fn(x):
        s = x.sum()
        return rt.cond(s > 0, lambda: rt.cond(s > 20, lambda: x * 3.0, lambda: x * 2.0), lambda: -x)

    prog, _, _ = rt.trace(fn, [SPEC])
    assert op_types(prog).count("cond") == 2
    for x in (X, X / 10, -X - 1):
        s = x.sum()
        check(run(prog, x=x)[0], (x * 3.0 if s > 20 else x * 2.0) if s > 0 else -x)


# --- tensor arrays ----------------------------------------------------------------------------------

def test_tensor_array_filled_in_while_then_stacked():
    def fn(x):
        def body(i, arr):
            return i + 1, rt.array_append(arr, x[0] * i)
        n, arr = rt.while_loop(lambda i, arr: i < rt.dim(x, 0) + 1, body, (0, rt.array_new((3,), "float32")))
        return rt.stack(arr), rt.concat(arr), rt.array_length(arr), arr[1]

    prog, _, (stacked, flat, length, second) = rt.trace(fn, [SPEC])
    assert {"array_new", "array_append", "array_stack", "array_concat", "array_length", "array_read"} <= set(
        op_types(prog))
    assert stacked.static_shape == (-1, 3) and flat.static_shape == (-1,) and second.static_shape == (3,)
    for x in (X, np.ones((4, 3), np.float32)):
        rows = [x[0] * np.float32(i) for i in range(x.shape[0] + 1)]
        got = run(prog, x=x)
        check(got[0], np.stack(rows))
        check(got[1], np.concatenate(rows))
        check(got[2], np.int64(len(rows)))
        check(got[3], rows[1])


def test_tensor_array_fresh_on_every_run():
    def fn(x):
        def body(i, arr):
            return i + 1, rt.array_append(arr, x.sum() + i)      # weak i: the element stays float32
        n, arr = rt.while_loop(lambda i, arr: i < rt.dim(x, 0), body, (0, rt.array_new((), "float32")))
        return rt.stack(arr)

    prog, _, out = rt.trace(fn, [SPEC])
    assert out.dtype == np.float32
    first = run(prog, x=X)[0]
    second = run(prog, x=X)[0]
    check(first, np.array([X.sum(), X.sum() + 1], np.float32))
    check(second, first)


def test_tensor_array_element_dtype_is_checked():
    def fn(x):
        arr = rt.array_append(rt.array_new((), "float32"), 1)     # a Python number adopts float32
        return rt.stack(rt.array_append(arr, x.sum()))

    prog, _, out = rt.trace(fn, [SPEC])
    check(run(prog, x=X)[0], np.array([1.0, X.sum()], np.float32))
    with pytest.raises(TypeError, match="tensor array of float32 cannot hold a float64"):
        rt.trace(lambda x: rt.array_append(rt.array_new((3,), "float32"), x[0]), [rt.InputSpec([2, 3], "float64")])


def test_empty_tensor_array_stack_fails_at_run_time():
    def fn(x):
        body = lambda i, arr: (i + 1, rt.array_append(arr, x[0]))  # noqa: E731
        return rt.stack(rt.while_loop(lambda i, arr: i < rt.dim(x, 0), body, (0, rt.array_new((3,), "float32")))[1])

    prog, _, _ = rt.trace(fn, [SPEC])
    check(run(prog, x=X)[0], np.stack([X[0], X[0]]))
    with pytest.raises(ValueError, match="empty tensor array"):
        run(prog, x=np.zeros((0, 3), np.float32))


def test_eager_tensor_array():
    arr = rt.array_new((2,), "float32")
    for i in range(3):
        arr = rt.array_append(arr, rt.ones(2) * i)
    assert isinstance(arr, list) and all(isinstance(t, rt.Tensor) for t in arr)
    assert all(isinstance(t.array, np.ndarray) for t in arr)
    check(rt.stack(arr).numpy(), np.stack([np.ones(2, np.float32) * i for i in range(3)]))
    check(rt.array_length(arr).numpy(), np.int64(3))
    check(rt.array_read(arr, 2).numpy(), np.full(2, 2.0, np.float32))


# --- names first bound in a loop ---------------------------------------------------------------------

def test_name_first_bound_in_loop_body():
    def fn(x):
        return rt.while_loop(lambda i, y: i < rt.dim(x, 0), lambda i, y: (i + 1, x * 2.0),
                             (0, rt.Undefined("y")))

    prog, _, (i, y) = rt.trace(fn, [SPEC])
    assert isinstance(y, rt.Tracer) and y.static_shape == (-1, 3)
    check(run(prog, x=X)[1], X * 2.0)
    with pytest.raises(UnboundLocalError, match="'y'"):
        run(prog, x=np.zeros((0, 3), np.float32))
