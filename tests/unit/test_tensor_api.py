"""The eager Tensor API against NumPy: creation, operators, methods, indexing, promotion.

NumPy is the oracle throughout: a result is compared with what the same expression
gives on NumPy arrays, values and dtype. Where we differ from NumPy on purpose
(Python floats make float32 tensors), the test says so.
"""
import operator

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
B = np.array([[2.0, 1.0, -3.0], [4.0, 0.5, 2.0]], np.float32)
I = np.array([[1, -2, 3], [4, 5, -6]], np.int32)
I_POS = np.abs(I)


def same(actual, expected):
    """actual (a Tensor) equals expected (NumPy) in type, dtype, shape and value."""
    assert isinstance(actual, rt.Tensor), f"got {type(actual).__name__}, not a Tensor"
    expected = np.asarray(expected)
    got = actual.numpy()
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, NumPy gives {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape}, NumPy gives {expected.shape}"
    np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)


# --- creation -----------------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype", [
    (1.5, np.float32),                    # a Python float: float32 (our default), not NumPy's float64
    ([1.0, 2.0], np.float32),
    ([[1, 2], [3, 4]], np.int64),
    (3, np.int64),
    (True, np.bool_),
    ([True, False], np.bool_),
    (np.float64(2.5), np.float64),        # NumPy data keeps its dtype
    (np.array([1.0, 2.0]), np.float64),
    (np.array([1, 2], np.int8), np.int8),
    ([np.float64(1.0), 2.0], np.float64),
])
def test_tensor_dtype(value, dtype):
    t = rt.tensor(value)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(value))
    assert rt.asarray(value).dtype == np.dtype(dtype)


def test_tensor_explicit_dtype_and_copy_of_tensor():
    t = rt.tensor([1, 2, 3], dtype="float64")
    assert t.dtype == np.float64
    assert rt.tensor([1.5], dtype=rt.float16).dtype == np.float16
    u = rt.tensor(t)
    same(u, np.array([1.0, 2.0, 3.0]))
    assert t.device == "cpu"


@pytest.mark.parametrize("make,expected", [
    (lambda: rt.zeros((2, 3)), np.zeros((2, 3), np.float32)),
    (lambda: rt.zeros(4), np.zeros(4, np.float32)),
    (lambda: rt.zeros((2,), dtype=rt.int64), np.zeros(2, np.int64)),
    (lambda: rt.ones((3, 1), dtype="float64"), np.ones((3, 1))),
    (lambda: rt.ones(()), np.ones((), np.float32)),
    (lambda: rt.full((2, 2), 7), np.full((2, 2), 7, np.int64)),
    (lambda: rt.full((2, 2), 0.5), np.full((2, 2), 0.5, np.float32)),
    (lambda: rt.full(3, -1, dtype=np.int8), np.full(3, -1, np.int8)),
    (lambda: rt.arange(4), np.arange(4)),
    (lambda: rt.arange(1, 7, 2), np.arange(1, 7, 2)),
    (lambda: rt.arange(0, 1, 0.25), np.arange(0, 1, 0.25, dtype=np.float32)),
    (lambda: rt.arange(3, dtype=rt.float64), np.arange(3, dtype=np.float64)),
    (lambda: rt.linspace(0, 1, 3), np.linspace(0, 1, 3, dtype=np.float32)),
    (lambda: rt.linspace(2, 3, 4, endpoint=False), np.linspace(2, 3, 4, endpoint=False, dtype=np.float32)),
    (lambda: rt.eye(2), np.eye(2, dtype=np.float32)),
    (lambda: rt.eye(2, 3, k=-1), np.eye(2, 3, k=-1, dtype=np.float32)),
    (lambda: rt.zeros_like(rt.tensor(I)), np.zeros_like(I)),
    (lambda: rt.ones_like(rt.tensor(A)), np.ones_like(A)),
    (lambda: rt.full_like(rt.tensor(I), 9), np.full_like(I, 9)),
    (lambda: rt.full_like(rt.tensor(I), 0.5, dtype="float32"), np.full_like(I, 0.5, np.float32)),
    (lambda: rt.zeros_like(rt.tensor(A), dtype=rt.int32), np.zeros_like(A, np.int32)),
])
def test_creation(make, expected):
    same(make(), expected)


# --- operators ------------------------------------------------------------------------------

BINARY_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                    operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
                    operator.gt, operator.ge]


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda f: f.__name__)
def test_binary_operator(op):
    a, b = np.abs(A) + 0.5, np.abs(B) + 0.5
    same(op(rt.tensor(a), rt.tensor(b)), op(a, b))
    same(op(rt.tensor(a), b), op(a, b))                     # a NumPy array on the right
    same(op(rt.tensor(I), rt.tensor(I % 3 + 1)), op(I, I % 3 + 1))


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("scalar", [2, 2.5], ids=["int", "float"])
def test_operator_with_python_scalar_both_sides(op, scalar):
    a = np.abs(A) + 0.5
    same(op(rt.tensor(a), scalar), op(a, scalar))           # weak scalar: float32 stays float32
    same(op(scalar, rt.tensor(a)), op(scalar, a))           # reflected form
    same(op(rt.tensor(I_POS), scalar), op(I_POS, scalar))   # int32 with 2 stays int32; with 2.5 -> float64


def test_matmul_operator():
    same(rt.tensor(A) @ rt.tensor(B.T), A @ B.T)
    same(rt.tensor(A) @ B.T, A @ B.T)
    same(B.T @ rt.tensor(A), B.T @ A)                       # __rmatmul__ via NumPy's left operand
    same(rt.tensor(A[0]) @ rt.tensor(B[0]), A[0] @ B[0])    # 1-D @ 1-D: a 0-d result


def test_unary_operators():
    same(-rt.tensor(A), -A)
    same(+rt.tensor(A), +A)
    same(abs(rt.tensor(A)), abs(A))
    same(abs(rt.tensor(I)), abs(I))
    same(~rt.tensor(I), ~I)
    same(~rt.tensor(A > 0), ~(A > 0))
    same(rt.tensor(A > 0) & rt.tensor(B > 0), (A > 0) & (B > 0))
    same(rt.tensor(A > 0) | (B > 0), (A > 0) | (B > 0))
    same(rt.tensor(I) ^ 3, I ^ 3)


def test_comparison_result_is_tensor_not_bool():
    eq = rt.tensor(A) == rt.tensor(A)
    assert isinstance(eq, rt.Tensor) and eq.dtype == np.bool_
    assert bool((rt.tensor(A) == A).all())


# --- methods ------------------------------------------------------------------------------

X3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5


@pytest.mark.parametrize("method", ["sum", "mean", "max", "min", "prod", "any", "all", "std", "var"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_methods(method, axis, keepdims):
    x = rt.tensor(X3)
    expected = getattr(X3, method)(axis=axis, keepdims=keepdims)
    same(getattr(x, method)(axis=axis, keepdims=keepdims), expected)
    if method not in ("max", "min", "std", "var"):    # positional: the same in PyTorch (test_torch_names.py)
        same(getattr(x, method)(axis, keepdims), expected)
    same(getattr(rt, method)(x, axis=axis, keepdims=keepdims), expected)


def test_reductions_of_ints_follow_numpy_dtypes():
    x = rt.tensor(I)
    same(x.sum(), I.sum())            # int32 sums to int64, as NumPy does
    same(x.mean(axis=0), I.mean(axis=0))
    same(x.prod(1), I.prod(1))
    same(x.max(), I.max())


@pytest.mark.parametrize("method", ["argmax", "argmin"])
def test_arg_methods(method):
    x = rt.tensor(X3)
    same(getattr(x, method)(), getattr(X3, method)())
    same(getattr(x, method)(1), getattr(X3, method)(1))
    same(getattr(x, method)(axis=-1, keepdims=True), getattr(X3, method)(axis=-1, keepdims=True))


def test_shape_methods():
    x = rt.tensor(X3)
    same(x.reshape(4, 6), X3.reshape(4, 6))
    same(x.reshape((4, 6)), X3.reshape((4, 6)))
    same(x.reshape([6, -1]), X3.reshape([6, -1]))
    same(x.reshape(-1), X3.reshape(-1))
    same(rt.reshape(x, 24), X3.reshape(24))
    same(x.flatten(), X3.flatten())
    same(x.T, X3.T)
    same(x.transpose(), X3.transpose())
    same(x.transpose(1, 0, 2), X3.transpose(1, 0, 2))
    same(x.transpose((2, 0, 1)), X3.transpose((2, 0, 1)))
    same(rt.permute_dims(x, (0, 2, 1)), np.permute_dims(X3, (0, 2, 1)))
    y = rt.tensor(X3[:1, :, :1])
    same(y.squeeze(), X3[:1, :, :1].squeeze())
    same(y.squeeze(0), X3[:1, :, :1].squeeze(0))
    same(y.squeeze((0, 2)), X3[:1, :, :1].squeeze((0, 2)))
    same(rt.expand_dims(x, 1), np.expand_dims(X3, 1))


@pytest.mark.parametrize("dtype", [rt.int64, "int32", np.float64, rt.bool, rt.float16, "uint8"])
def test_astype(dtype):
    same(rt.tensor(A).astype(dtype), A.astype(dtype))
    same(rt.astype(rt.tensor(A), dtype), A.astype(dtype))


def test_astype_to_same_dtype_is_unchanged():
    x = rt.tensor(A)
    same(x.astype("float32"), A)


def test_elementwise_methods():
    x = rt.tensor(np.abs(A) + 0.1)
    for name in ("abs", "exp", "log", "sqrt", "tanh"):
        same(getattr(x, name)(), getattr(np, name)(np.abs(A) + 0.1))
    same(rt.tensor(A).clip(-1, 1), A.clip(-1, 1))
    same(rt.tensor(A).cumsum(), A.cumsum())


# --- facts and Python conversions -------------------------------------------------------------

def test_facts():
    x = rt.tensor(X3)
    assert x.shape == (2, 3, 4) and all(type(d) is int for d in x.shape)
    assert x.dtype == np.float32 and isinstance(x.dtype, np.dtype)
    assert x.ndim == 3 and x.size == 24 and isinstance(x.size, int) and not isinstance(x.size, np.integer)   # a Python int (whose call explains PyTorch's size(dim))
    arr = x.numpy()
    assert isinstance(arr, np.ndarray)
    np.testing.assert_array_equal(arr, X3)
    np.testing.assert_array_equal(np.asarray(x), X3)
    assert x.tolist() == X3.tolist()


def test_item_and_python_conversions():
    x = rt.tensor(A)
    assert x[0, 2].item() == 3.0 and type(x[0, 2].item()) is float
    assert rt.tensor(I)[1, 1].item() == 5 and type(rt.tensor(I)[1, 1].item()) is int
    assert bool(x[0, 0]) is True and bool(rt.tensor(0.0)) is False
    assert float(x[1, 1]) == 4.0
    assert int(x[0, 0]) == 1
    assert complex(x[0, 0]) == 1.5 + 0j
    assert len(x) == 2
    rows = list(x)
    assert len(rows) == 2 and all(isinstance(r, rt.Tensor) for r in rows)
    same(rows[1], A[1])
    assert operator.index(rt.tensor(I)[1, 2]) == -6
    assert list(range(rt.tensor(3))) == [0, 1, 2]
    assert [10, 20, 30][rt.tensor(np.int64(1))] == 20
    assert f"{x[0, 0]:.2f}" == "1.50"


def test_conversion_errors_match_numpy():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(rt.tensor(A))
    with pytest.raises(TypeError):
        operator.index(rt.tensor(1.5))               # a float is not an index
    with pytest.raises(TypeError, match="0-d"):
        len(rt.tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(rt.tensor(1.0)).__next__()
    with pytest.raises(ValueError):
        rt.tensor(A).item()                          # only size-1 tensors have an item


# --- indexing ----------------------------------------------------------------------------------

INDICES = [
    0, -1, (1, 2), (-1, -2, -3), slice(None), slice(1, None), slice(None, None, -1), (slice(None), 1),
    (0, slice(None, None, 2)), None, (None, 0), (Ellipsis, 1), (0, Ellipsis), (Ellipsis, None, 2),
    (slice(None), None, slice(1, 3)), [1, 0, 1], ([1, 0], [2, 2]), (slice(None), [2, 0]),
    (0, [0, 2], slice(1, None)), np.array([1, 0]), X3.sum(axis=(1, 2)) > 0, X3 > 0, (0, X3[0, :, 0] > -5),
]


@pytest.mark.parametrize("index", INDICES, ids=[f"i{k}" for k in range(len(INDICES))])
def test_getitem(index):
    same(rt.tensor(X3)[index], X3[index])


def test_getitem_with_tensor_indices():
    x = rt.tensor(X3)
    same(x[rt.tensor([1, 0])], X3[[1, 0]])
    same(x[rt.tensor(1)], X3[1])
    same(x[:, rt.tensor([[0, 2], [1, 1]])], X3[:, [[0, 2], [1, 1]]])
    same(x[x > 0], X3[X3 > 0])
    same(x[0, rt.tensor(X3[0, :, 0] > -5)], X3[0, X3[0, :, 0] > -5])
    same(x[rt.tensor(0):rt.tensor(1)], X3[0:1])


def test_getitem_errors():
    x = rt.tensor(A)
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[rt.tensor([0.5])]


@pytest.mark.parametrize("index,value", [
    (0, 5.0), (-1, rt.tensor([7.0, 8.0, 9.0])), ((1, 2), -3), ((slice(None), 1), 0.25),
    ((Ellipsis, 0), rt.tensor([1.0, 2.0])), ([0, 1], 3.0), (A > 0, 0.0),
    ((slice(None), slice(None, None, 2)), rt.tensor([[1.0, 2.0], [3.0, 4.0]])),
])
def test_setitem(index, value):
    x = rt.tensor(A)
    alias = x
    x[index] = value
    expected = A.copy()
    expected[index] = value.numpy() if isinstance(value, rt.Tensor) else value
    same(x, expected)
    assert alias is x
    np.testing.assert_array_equal(A, A.copy())          # the source array is untouched


def test_setitem_on_eager_tensor_inside_a_trace_is_a_clear_error():
    w = rt.tensor(np.zeros(3, np.float32))

    def fn(x):
        w[0] = x[0]
        return x

    with pytest.raises(TypeError, match="cannot assign into an eager Tensor inside traced code"):
        rt.trace(fn, [rt.InputSpec([3])])
    assert isinstance(w.array, np.ndarray)
    np.testing.assert_array_equal(w.numpy(), np.zeros(3, np.float32))       # nothing was written into w


def test_setitem_casts_to_the_tensor_dtype():
    x = rt.tensor(I)
    x[0, 0] = 2.7                                     # NumPy truncates into the int32 array
    expected = I.copy()
    expected[0, 0] = 2.7
    same(x, expected)


# --- dtype promotion ------------------------------------------------------------------------------

PAIRS = [("int32", "float32"), ("int64", "float32"), ("int8", "uint8"), ("int16", "float16"),
         ("float32", "float64"), ("bool", "int8"), ("uint8", "int64"), ("float16", "float32"),
         ("int32", "int64"), ("bool", "float16"), ("uint32", "int32"), ("complex64", "float64")]


@pytest.mark.parametrize("d1,d2", PAIRS)
def test_promotion_between_tensors_is_numpys(d1, d2):
    a, b = np.ones(3, d1), np.ones(3, d2)
    expected = (a + b).dtype                           # NumPy 2's own answer (int32 + float32 -> float64)
    assert (rt.tensor(a) + rt.tensor(b)).dtype == expected
    assert (rt.tensor(b) * rt.tensor(a)).dtype == (b * a).dtype
    prog, _, out = rt.trace(lambda x, y: x + y, [rt.InputSpec([3], d1), rt.InputSpec([3], d2)])
    assert out.dtype == expected
    (res,) = rt.Executor().run(prog, {"x0": a, "x1": b})
    assert res.dtype == expected


@pytest.mark.parametrize("dtype,scalar,expected", [
    ("float32", 2.0, "float32"), ("float32", 2, "float32"), ("float16", 2.5, "float16"),
    ("int32", 1, "int32"), ("int8", 3, "int8"), ("uint8", 1, "uint8"), ("int32", 1.5, "float64"),
    ("bool", 1, "int64"), ("bool", 1.0, "float64"), ("bool", True, "bool"), ("float64", 1.0, "float64"),
    ("complex64", 1.0, "complex64"), ("float32", 1j, "complex64"),
])
def test_python_scalars_are_weak(dtype, scalar, expected):
    x = rt.tensor(np.ones(3, dtype))
    assert (x * scalar).dtype == np.dtype(expected)
    assert (scalar * x).dtype == np.dtype(expected)
    prog, _, out = rt.trace(lambda v: v * scalar, [rt.InputSpec([3], dtype)])
    assert out.dtype == np.dtype(expected)
    assert rt.Executor().run(prog, {"x0": np.ones(3, dtype)})[0].dtype == np.dtype(expected)


def test_weak_scalar_matches_numpy2():
    for dtype in ("float32", "int32", "uint8", "float16"):
        arr = np.ones(2, dtype)
        assert (rt.tensor(arr) + 1).dtype == (arr + 1).dtype
        assert (rt.tensor(arr) * 0.5).dtype == (arr * 0.5).dtype


def test_scalar_out_of_range_for_int_dtype():
    with pytest.raises(OverflowError):
        rt.tensor(np.ones(2, np.int8)) + 1000        # NumPy 2 refuses too


# --- NumPy interop ------------------------------------------------------------------------------

def test_numpy_ufuncs_on_tensors():
    x = rt.tensor(A)
    same(np.tanh(x), np.tanh(A))
    same(np.add(x, 1), A + 1)
    same(np.maximum(x, rt.tensor(B)), np.maximum(A, B))
    same(np.absolute(x), np.abs(A))
    same(np.power(x, 2), A ** 2)


def test_numpy_functions_on_tensors():
    x = rt.tensor(A)
    same(np.sum(x), A.sum())
    same(np.mean(x, axis=0), A.mean(axis=0))
    same(np.concatenate([x, x]), np.concatenate([A, A]))
    same(np.transpose(x), A.T)
    np.testing.assert_array_equal(np.median(x), np.median(A))     # no runtime op: NumPy runs it


def test_numpy_ufunc_forms_without_an_op_run_numpy_on_eager_tensors():
    x = rt.tensor(A)
    np.testing.assert_array_equal(np.cbrt(x), np.cbrt(A))                      # no rt.cbrt: NumPy runs it
    np.testing.assert_array_equal(np.add.reduce(x, axis=1), np.add.reduce(A, axis=1))
    np.testing.assert_array_equal(np.multiply.accumulate(x), np.multiply.accumulate(A))
    buf = np.empty_like(A)
    np.add(x, 1, out=buf)
    np.testing.assert_array_equal(buf, A + 1)
    with pytest.raises(TypeError, match="out= cannot be a Tensor"):
        np.add(x, 1, out=x)


@pytest.mark.parametrize("call,name", [(lambda v: np.cbrt(v), "numpy.cbrt"),
                                       (lambda v: np.add.reduce(v), "numpy.add.reduce"),
                                       (lambda v: np.add(v, 1, out=np.empty(3, np.float32)), "numpy.add")])
def test_numpy_ufunc_forms_without_an_op_on_variable_are_clear_errors(call, name):
    with pytest.raises(TypeError, match=f"{name}.*cannot run on a traced Variable"):
        rt.trace(call, [rt.InputSpec([3])])


def test_numpy_ufunc_on_variable_maps_to_op():
    prog, _, out = rt.trace(lambda v: np.tanh(v) + np.exp(v), [rt.InputSpec([2, 3])])
    assert [op.type for op in prog.ops()] == ["tanh", "exp", "add"]
    (res,) = rt.Executor().run(prog, {"x0": A})
    same(res, np.tanh(A) + np.exp(A))


def test_numpy_function_without_op_on_variable_is_a_clear_error():
    with pytest.raises(TypeError, match="numpy.cov"):         # (np.median is ours: numpy_functions.py)
        rt.trace(lambda v: np.cov(v), [rt.InputSpec([2, 3])])


# --- the namespace's dtypes --------------------------------------------------------------------

def test_dtype_objects():
    assert rt.float32 is np.float32 and rt.int64 is np.int64 and rt.bool is np.bool_
    assert np.dtype(rt.float16) == np.float16 and np.dtype(rt.uint8) == np.uint8
    assert rt.zeros(2, dtype=rt.bool).dtype == np.bool_
    assert rt.finfo(rt.float32).eps == np.finfo(np.float32).eps
    assert rt.finfo(rt.float64).max == np.finfo(np.float64).max
    assert rt.iinfo(rt.int32).max == 2 ** 31 - 1
    assert rt.iinfo(rt.uint8).min == 0


# --- errors ------------------------------------------------------------------------------------

def test_add_shape_mismatch_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"add.*\[2, 3\].*\[3, 2\]"):
        rt.tensor(A) + rt.ones((3, 2))
    with pytest.raises(ValueError, match=r"\[2, 3\].*\[3, 2\]"):
        rt.trace(lambda a, b: a + b, [rt.InputSpec([2, 3]), rt.InputSpec([3, 2])])


def test_matmul_inner_dim_mismatch():
    with pytest.raises(ValueError, match=r"matmul: inner dimensions differ.*3 != 2"):
        rt.tensor(A) @ rt.tensor(A)
    with pytest.raises(ValueError, match=r"matmul: inner dimensions differ"):
        rt.trace(lambda a: a @ a, [rt.InputSpec([2, 3])])


def test_reshape_size_mismatch():
    with pytest.raises(ValueError, match=r"reshape: cannot reshape .*\[2, 3\] into \(4, 2\)"):
        rt.tensor(A).reshape(4, 2)
    with pytest.raises(ValueError, match=r"reshape: cannot reshape"):
        rt.trace(lambda a: a.reshape(4, 2), [rt.InputSpec([2, 3])])
    with pytest.raises(ValueError, match=r"reshape: cannot reshape"):
        rt.tensor(A).reshape(4, -1)


def test_eager_and_traced_raise_the_same_error_type():
    for fn in (lambda a: a.sum(axis=3), lambda a: rt.concat([a, a[0]]), lambda a: a[0, 0, 0],
               lambda a: a.sum(axis=(0, 0)), lambda a: rt.expand_dims(a, (1, 1)), lambda a: a.reshape(5, -1)):
        with pytest.raises((ValueError, IndexError)) as eager:
            fn(rt.tensor(A))
        with pytest.raises((ValueError, IndexError)) as traced:
            rt.trace(fn, [rt.InputSpec([2, 3])])
        assert eager.type is traced.type, (eager.value, traced.value)


def test_duplicate_axes_rejected_while_tracing():
    with pytest.raises(ValueError, match="duplicate"):
        rt.trace(lambda a: a.max(axis=(1, -1)), [rt.InputSpec([2, 3])])


def test_bad_dtype_and_device():
    with pytest.raises(TypeError, match="not a dtype"):
        rt.zeros(2, dtype="floaty")
    with pytest.raises(ValueError, match="unknown device"):
        rt.tensor([1.0], device="tpu")


def test_variable_python_conversions_are_clear_errors():
    def fn(v):
        with pytest.raises(rt.SymbolicBoolError, match="truth value"):
            bool(v)
        with pytest.raises(TypeError, match="len"):
            len(v)
        with pytest.raises(TypeError, match="iterate"):
            iter(v)
        with pytest.raises(TypeError, match="Python int"):
            operator.index(v)
        assert v.shape[1] == 3 and isinstance(v.shape[0], rt.Tracer)
        return v
    rt.trace(fn, [rt.InputSpec([None, 3])])


# --- NumPy's spellings and round(x, decimals) ----------------------------------------------------------

@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_round_to_decimals_is_numpys(decimals, dtype):
    a = (np.array([1.2345, -2.5551, 1234.5, 0.125, -0.5, 98765.4321]) * 3).astype(dtype)
    want = np.round(a, decimals)
    for got in (rt.round(rt.tensor(a), decimals), to_static(lambda x: rt.round(x, decimals))(rt.tensor(a))):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)


def test_numpy_spellings_name_the_same_functions():
    a = np.array([[0.5, -0.25], [0.75, 1.0]], np.float32)
    x = rt.tensor(a)
    pairs = [(rt.power(x, 3), np.power(a, 3)), (rt.absolute(x), np.absolute(a)), (rt.arctan2(x, x + 1), np.arctan2(a, a + 1)),
             (rt.concatenate([x, x], axis=1), np.concatenate([a, a], axis=1)), (rt.transpose(x), np.transpose(a)),
             (rt.amax(x, axis=0), np.amax(a, axis=0)), (rt.mod(x, 0.3), np.mod(a, 0.3))]
    for got, want in pairs:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
