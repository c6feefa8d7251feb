"""rt.scan: a region op added through the OpDef door alone (ops/scan.py), checked end to end.

NumPy is the oracle (the same body run over NumPy arrays); gradients are checked against central
finite differences and against the same loop unrolled; the ONNX model against onnxruntime.
"""
import importlib.util

import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime.export import export_python
from runtime.passes.pipeline import run_passes
from runtime.serialization import ProgramFormatError, program_from_dict, program_to_dict
from transpiler import InputSpec, to_static

RNG = np.random.default_rng(7)
W = RNG.standard_normal((6, 3, 3)) * 0.5
B = RNG.standard_normal((6, 3))
C = RNG.standard_normal(3)


def cell(c, x):
    """A recurrent step: the new state and a per-step reading."""
    h = rt.tanh(c @ x[0] + x[1])
    return h, rt.sum(h * h)


def cell_np(c, x):
    h = np.tanh(c @ x[0] + x[1])
    return h, np.sum(h * h)


def scan_np(f, init, xs, n):
    carry, ys = init, []
    for i in range(n):
        carry, y = f(carry, tuple(x[i] for x in xs))
        ys.append(y)
    return carry, np.stack(ys)


def run_scan(c0, w, b):
    return rt.scan(cell, c0, (w, b))


def traced(fn, *arrays):
    specs = [rt.InputSpec(list(a.shape), a.dtype.name, f"a{k}") for k, a in enumerate(arrays)]
    program, _, _ = rt.trace(fn, specs)
    return program, {f"a{k}": a for k, a in enumerate(arrays)}


def test_eager_and_traced_match_numpy():
    want_c, want_ys = scan_np(cell_np, C, (W, B), 6)
    c, ys = run_scan(rt.tensor(C), rt.tensor(W), rt.tensor(B))
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    np.testing.assert_allclose(ys.numpy(), want_ys, rtol=1e-12)
    program, feed = traced(run_scan, C, W, B)
    assert [op.type for op in program.global_block.ops] == ["scan"]
    rt.verify(program)
    c, ys = rt.Executor().run(program, feed)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    np.testing.assert_allclose(ys.numpy(), want_ys, rtol=1e-12)


def test_program_text_is_readable():
    program, _ = traced(run_scan, C, W, B)
    text = str(program)
    assert "scan(a0, a1, a2, length=6, num_carry=1)" in text
    assert "body block 1(carry: float64[3], x: float64[3, 3], x_1: float64[3]):" in text
    assert "yield (tanh, sum)" in text


def test_nested_pytrees_counter_and_no_output():
    """A tuple carry with a weak Python counter (it adopts int64 from the body), a dict of xs, ys None."""
    def body(carry, x):
        total, i = carry
        return (total + x["v"] * i, i + 1), None

    def fn(v):
        return rt.scan(body, (rt.zeros((), "float64"), 0), {"v": v})

    v = RNG.standard_normal(5)
    (total, i), ys = fn(rt.tensor(v))
    assert ys is None and i == 5
    program, feed = traced(fn, v)
    total_t, i_t = rt.Executor().run(program, feed)
    want = sum(v[k] * k for k in range(5))
    np.testing.assert_allclose([total.numpy(), total_t.numpy()], [want, want], rtol=1e-12)
    assert int(i_t.numpy()) == 5


def test_length_without_xs_and_zero_length():
    def fn(x):
        return rt.scan(lambda c, _: (c * 2, c), x, None, length=4)

    x = np.arange(3.0)
    program, feed = traced(fn, x)
    c, ys = rt.Executor().run(program, feed)
    np.testing.assert_array_equal(c.numpy(), x * 16)
    np.testing.assert_array_equal(ys.numpy(), np.stack([x * 2 ** k for k in range(4)]))
    program, feed = traced(lambda x: rt.scan(lambda c, _: (c * 2, c), x, None, length=0), x)
    c, ys = rt.Executor().run(program, feed)
    np.testing.assert_array_equal(c.numpy(), x)
    assert ys.numpy().shape == (0, 3)


def test_nested_scan_and_captured_values():
    """A scan inside a scan's body, reading a value captured from the enclosing block."""
    scale = np.array([1.0, -2.0, 0.5])

    def fn(m, s):
        def outer(c, row):
            inner_c, _ = rt.scan(lambda a, x: (a + x * s, None), c, row)
            return inner_c, rt.sum(inner_c)
        return rt.scan(outer, rt.zeros(3, "float64"), m)

    m = RNG.standard_normal((4, 2, 3))
    program, feed = traced(fn, m, scale)
    rt.verify(program)
    c, ys = rt.Executor().run(program, feed)
    acc, want_ys = np.zeros(3), []
    for row in m:
        for x in row:
            acc = acc + x * scale
        want_ys.append(acc.sum())
    np.testing.assert_allclose(c.numpy(), acc, rtol=1e-12)
    np.testing.assert_allclose(ys.numpy(), want_ys, rtol=1e-12)


def loss(c0, w, b):
    c, ys = rt.scan(cell, c0, (w, b))
    return rt.sum(c) + rt.sum(ys * ys)


def loss_unrolled(c0, w, b):
    c, ys = c0, []
    for i in range(6):
        c, y = cell(c, (w[i], b[i]))
        ys.append(y)
    ys = rt.stack(ys)
    return rt.sum(c) + rt.sum(ys * ys)


def loss_np(c0, w, b):
    c, ys = scan_np(cell_np, c0, (w, b), 6)
    return np.sum(c) + np.sum(ys * ys)


def test_gradient_matches_the_unrolled_loop_and_finite_differences():
    grads = to_static(rt.grad(loss, argnums=(0, 1, 2)))(rt.tensor(C), rt.tensor(W), rt.tensor(B))
    want = rt.grad(loss_unrolled, argnums=(0, 1, 2))(rt.tensor(C), rt.tensor(W), rt.tensor(B))
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
    args = [C, W, B]
    for k, g in enumerate(grads):
        numeric = np.zeros_like(args[k])
        for idx in np.ndindex(args[k].shape):
            plus, minus = [a.copy() for a in args], [a.copy() for a in args]
            plus[k][idx] += 1e-6
            minus[k][idx] -= 1e-6
            numeric[idx] = (loss_np(*plus) - loss_np(*minus)) / 2e-6
        np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-5, atol=1e-7)


def test_gradient_of_captured_values_and_integer_carry():
    def f(w, xs):
        def body(carry, x):
            h, i = carry
            return (rt.tanh(h * w + x) + i * 0.0, i + 1), h * w
        (h, _), ys = rt.scan(body, (rt.zeros_like(w), rt.asarray(0)), xs)
        return rt.sum(h) + rt.sum(ys)

    def f_np(w, xs):
        h, total = np.zeros_like(w), 0.0
        for x in xs:
            total += np.sum(h * w)
            h = np.tanh(h * w + x)
        return np.sum(h) + total

    w, xs = RNG.standard_normal(3), RNG.standard_normal((5, 3))
    g = to_static(rt.grad(f))(rt.tensor(w), rt.tensor(xs)).numpy()
    numeric = np.array([(f_np(w + e, xs) - f_np(w - e, xs)) / 2e-6 for e in np.eye(3) * 1e-6])
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-7)


def test_save_load_verify_and_export_python(tmp_path):
    static = to_static(loss)
    spec = [InputSpec([3], "float64", "c0"), InputSpec([6, 3, 3], "float64", "w"), InputSpec([6, 3], "float64", "b")]
    want = loss_np(C, W, B)
    transpiler.save(static, str(tmp_path / "f"), input_spec=spec)
    loaded = transpiler.load(str(tmp_path / "f"))
    np.testing.assert_allclose(loaded(c0=C, w=W, b=B).numpy(), want, rtol=1e-12)
    program = static.get_program(*spec)
    assert program_from_dict(program_to_dict(program)) == program
    paths = export_python(program, str(tmp_path / "mod"))
    spec_ = importlib.util.spec_from_file_location("scan_mod", paths[0])
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    assert "for step in range(6):" in (tmp_path / "mod.py").read_text()


def _scan_dict(program):
    data = program_to_dict(program)
    op = next(op for block in data["blocks"] for op in block["ops"] if op["type"] == "scan")
    return data, op


def test_loader_and_verify_refuse_a_broken_scan():
    program, _ = traced(run_scan, C, W, B)
    data, op = _scan_dict(program)
    op["attrs"]["length"] = 5
    with pytest.raises(ProgramFormatError, match="scanned input 'a1' must have 5 rows"):
        program_from_dict(data)
    data, op = _scan_dict(program)
    op["attrs"]["num_carry"] = True
    with pytest.raises(ProgramFormatError, match="attr 'num_carry' must be an int"):
        program_from_dict(data)
    body = program.blocks[1]
    body.params[1].dtype = np.dtype("float32")         # a row that is not a row of its input's type
    with pytest.raises(ProgramFormatError, match="'x' .* does not match"):
        rt.verify(program)


def test_passes_see_through_scan_by_its_slots():
    """dce drops an unused stacked output (and its body work) and an unused scanned input; licm hoists a
    loop-invariant product out of the body (the scan runs at least once)."""
    def fn(c0, w, b, u):
        def body(c, x):
            wt = rt.matrix_transpose(u)          # invariant
            return rt.tanh(c @ wt + x[1]), rt.sum(c @ x[0])
        c, _ = rt.scan(body, c0, (w, b))
        return c

    u = RNG.standard_normal((3, 3))
    program, feed = traced(fn, C, W, B, u)
    optimized = run_passes(program.clone())
    scan_op = next(op for op in optimized.global_block.ops if op.type == "scan")
    body = scan_op.attrs["body_block"]
    assert len(scan_op.outputs) == 1 and len(body.params) == 2      # ys and w's rows are gone
    assert "matrix_transpose" not in [op.type for op in body.ops]    # hoisted
    rt.verify(optimized)
    (c,) = rt.Executor().run(program, feed)
    h = C
    for i in range(6):
        h = np.tanh(h @ u.T + B[i])
    np.testing.assert_allclose(c.numpy(), h, rtol=1e-12)


def test_iteration_budget_counts_scan_iterations():
    program, feed = traced(run_scan, C, W, B)
    with pytest.raises(rt.IterationLimitError):
        rt.Executor(max_iterations=3).run(program, feed)
    rt.Executor(max_iterations=6).run(program, feed)


def test_onnx_loop_runs_in_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from runtime.onnx import export_onnx
    program, feed = traced(run_scan, C.astype(np.float32), W.astype(np.float32), B.astype(np.float32))
    path = export_onnx(program, str(tmp_path / "scan.onnx"))
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert "Loop" in [node.op_type for node in model.graph.node]
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)
    want = rt.Executor().run(program, feed)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="xs leaves have 3 rows but the trip count is 4"):
        rt.scan(lambda c, x: (c, x), rt.tensor(0.0), rt.tensor(np.zeros(3)), length=4)
    program_error = rt.ControlFlowError
    with pytest.raises(program_error, match="cast it with .astype"):
        traced(lambda x: rt.scan(lambda c, r: (rt.astype(c, "float32"), None), x, None, length=2), C)
    with pytest.raises(program_error, match="must return a pair"):
        traced(lambda x: rt.scan(lambda c, r: c, x, None, length=2), C)


# --- the converter: `for i in range(n)` over a big body ---------------------------------------------

def _recurrent(x, w, u):
    h = rt.zeros((x.shape[1], w.shape[1]))          # float32: the first iteration makes it float64 (peeled)
    for t in range(x.shape[0]):
        h = rt.tanh(x[t] @ w + h @ u)
        h = h * 0.5 + rt.sin(h) * 0.5
        h = rt.clip(h, -1, 1) + rt.cos(h) * 0.25
    return rt.sum(h)


def _op_types(program):
    return [op.type for op in program.ops()]


def test_long_range_over_a_big_body_converts_to_scan():
    from transpiler import scan_for
    x, w, u = RNG.standard_normal((300, 2, 3)), RNG.standard_normal((3, 4)), RNG.standard_normal((4, 4)) * 0.3
    args = [rt.tensor(a) for a in (x, w, u)]
    static = to_static(_recurrent)
    program = static.get_program(*args)
    assert _op_types(program).count("scan") == 1 and len(program.global_block.ops) < 40
    assert 10 * 300 > scan_for.UNROLL_LIMIT
    rt.verify(program)
    np.testing.assert_allclose(static(*args).numpy(), _recurrent(*args).numpy(), rtol=1e-12)
    grads = to_static(rt.grad(_recurrent, argnums=(1, 2)))(*args)
    want = rt.grad(_recurrent, argnums=(1, 2))(*args)          # eager: the Python loop on the tape
    for g, e in zip(grads, want):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-9, atol=1e-12)


def test_short_loops_python_indices_and_python_counters_still_unroll():
    x = rt.tensor(RNG.standard_normal((300, 3)))
    scales = [float(k) for k in range(300)]

    def short(x):
        s = x[0]
        for t in range(3):
            s = rt.tanh(s + x[t])
        return s

    def python_list(x):
        s = x[0]
        for t in range(300):
            s = rt.tanh(s * scales[t] + x[t]) + rt.sin(s) + rt.cos(s)     # a Python list read at t
        return s

    def counter(x):
        s, n = x[0], 0
        for t in range(300):
            s = rt.tanh(s + x[t]) + rt.sin(s) + rt.cos(s)
            n += 1                                     # a Python number that changes: stays Python
        return s * n

    for fn in (short, python_list, counter):
        static = to_static(fn)
        assert "scan" not in _op_types(static.get_program(x))
        np.testing.assert_allclose(static(x).numpy(), fn(x).numpy(), rtol=1e-12)


def test_rt_scan_in_converted_code_with_a_tensor_if_in_its_body():
    @to_static
    def f(c0, xs):
        def body(c, x):
            if rt.sum(x) > 0:
                c = c + x
            else:
                c = c - x
            return c, rt.max(c)
        return rt.scan(body, c0, xs)

    xs = RNG.standard_normal((6, 3))
    c, ys = f(rt.tensor(np.zeros(3)), rt.tensor(xs))
    want_c, want_ys = np.zeros(3), []
    for x in xs:
        want_c = want_c + x if x.sum() > 0 else want_c - x
        want_ys.append(want_c.max())
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    np.testing.assert_allclose(ys.numpy(), want_ys, rtol=1e-12)
    program = f.get_program(rt.tensor(np.zeros(3)), rt.tensor(xs))
    assert [op.type for op in program.global_block.ops] == ["scan"]
    assert "cond" in [op.type for op in program.blocks[1].ops]


def test_stacked_output_of_a_dynamic_shape_is_allocated_at_the_first_iteration():
    def fn(x):
        return rt.scan(lambda c, _: (c + 1, c * 2), x, None, length=3)

    x = RNG.standard_normal((4, 2))
    program, _, _ = rt.trace(fn, [rt.InputSpec([None, 2], "float64", "x")])
    c, ys = rt.Executor().run(program, {"x": x})
    np.testing.assert_allclose(ys.numpy(), np.stack([(x + k) * 2 for k in range(3)]), rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), x + 3, rtol=1e-12)
    (c0,) = rt.Executor().run(rt.trace(lambda x: rt.scan(lambda c, _: (c + 1, None), x, None, length=2)[0],
                                       [rt.InputSpec([None], "float64", "x")])[0], {"x": np.ones(3)})
    np.testing.assert_allclose(c0.numpy(), np.full(3, 3.0))
