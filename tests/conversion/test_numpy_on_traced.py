"""NumPy functions applied to traced values compute what they compute eagerly (issue 24).

The oracle is NumPy itself on the same data, and the same function run eagerly on Tensors.
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import not_to_static, to_static


def _value(out):
    return out.numpy() if isinstance(out, rt.Tensor) else np.asarray(out)


# --- np.asarray / np.array of a traced value ------------------------------------------------------

def test_asarray_of_a_traced_reduction_is_that_value_on_every_call():
    def f(x):
        return np.asarray(np.sum(np.mean(x.numpy(), 1)))

    static = to_static(f)
    for data in ([[0, 1, 2], [3, 4, 5]], [[1, 1, 1], [2, 2, 2]], [[0, 1, 2], [3, 4, 5]]):
        x = rt.tensor(np.asarray(data, np.float32))
        got = static(x)
        assert isinstance(got, rt.Tensor)
        np.testing.assert_array_equal(_value(got), f(x))


def test_array_with_dtype_and_ndmin_of_a_traced_value():
    import numpy

    def f(x):
        a = numpy.array(x * 2, dtype=np.float64, ndmin=3)
        return np.asanyarray([x[0], x[1]]) + a[0, 0]

    x = rt.tensor(np.arange(2, dtype=np.float32))
    got = to_static(f)(x)
    want = f(x.numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_asarray_of_python_data_in_converted_code_is_still_numpy():
    def f(x):
        return x + np.asarray([1.0, 2.0], np.float32).sum()

    x = rt.tensor(np.ones(2, np.float32))
    np.testing.assert_array_equal(to_static(f)(x).numpy(), f(x).numpy())


def test_asarray_of_a_traced_value_in_code_that_is_not_converted_is_a_type_error():
    @not_to_static
    def helper(v):
        return np.asarray(v)

    def f(x):
        return helper(x * 2)

    with pytest.raises(TypeError, match="numpy.asarray cannot run on the traced value"):
        to_static(f)(rt.tensor(np.ones(2, np.float32)))


# --- NumPy functions on traced values: a table, static against eager against NumPy -------------------

_SQUARE = np.eye(3, dtype=np.float32) * 3

NUMPY_CALLS = {   # one lambda a line: Python 3.10 has no co_positions to tell lambdas on a line apart
    "sum": lambda x: np.sum(x, axis=1),
    "mean": lambda x: np.mean(x, 0),
    "amax": lambda x: np.amax(x, axis=0),
    "prod": lambda x: np.prod(x, 1),
    "std": lambda x: np.std(x),
    "var": lambda x: np.var(x, axis=0),
    "any": lambda x: np.any(x > 0, axis=1),
    "argmax": lambda x: np.argmax(x, axis=1),
    "cumsum": lambda x: np.cumsum(x, axis=1),
    "cumprod": lambda x: np.cumprod(x, axis=1),
    "cumprod_flat": lambda x: np.cumprod(x),
    "abs": lambda x: np.abs(x),
    "exp": lambda x: np.exp(x),
    "clip": lambda x: np.clip(x, -0.5, 0.5),
    "clip_keywords": lambda x: np.clip(x, a_min=-0.5, a_max=0.5),
    "where": lambda x: np.where(x > 0, x, 0.0),
    "concatenate": lambda x: np.concatenate([x, x], axis=0),
    "stack": lambda x: np.stack([x, x], axis=1),
    "vstack": lambda x: np.vstack([x[0], x[1]]),
    "hstack": lambda x: np.hstack([x, x]),
    "hstack_1d": lambda x: np.hstack([x[0], x[1]]),
    "dstack": lambda x: np.dstack([x, x]),
    "column_stack": lambda x: np.column_stack([x[0], x[1]]),
    "atleast_2d": lambda x: np.atleast_2d(x[0]),
    "atleast_3d": lambda x: np.atleast_3d(x),
    "reshape": lambda x: np.reshape(x, (4, 3)),
    "ravel": lambda x: np.ravel(x),
    "transpose": lambda x: np.transpose(x, (1, 0)),
    "swapaxes": lambda x: np.swapaxes(x, 0, 1),
    "moveaxis": lambda x: np.moveaxis(x, 0, 1),
    "expand_dims": lambda x: np.expand_dims(x, 0),
    "fliplr": lambda x: np.fliplr(x),
    "flipud": lambda x: np.flipud(x),
    "roll": lambda x: np.roll(x, 1, axis=1),
    "tile": lambda x: np.tile(x, (2, 1)),
    "repeat": lambda x: np.repeat(x, 2, axis=0),
    "tril": lambda x: np.tril(x, -1),
    "triu": lambda x: np.triu(x, 1),
    "pad": lambda x: np.pad(x, ((1, 1), (0, 2))),
    "diff": lambda x: np.diff(x, axis=1),
    "split": lambda x: np.split(x, 2, axis=1)[1],
    "meshgrid_1d": lambda x: np.meshgrid(x[0], x[1]),
    "meshgrid_2d": lambda x: np.meshgrid(x, x[:2], indexing="ij"),
    "broadcast_to": lambda x: np.broadcast_to(x[0], (2, 4)),
    "einsum": lambda x: np.einsum("ij,kj->ik", x, x),
    "tensordot": lambda x: np.tensordot(x, x, axes=([1], [1])),
    "dot": lambda x: np.dot(x, x.T),
    "dot_vector": lambda x: np.dot(x, x[0]),
    "outer": lambda x: np.outer(x[0], x[1]),
    "inner": lambda x: np.inner(x, x),
    "vdot": lambda x: np.vdot(x[0], x[1]),
    "kron": lambda x: np.kron(x[:2, :2], x[1:, 2:]),
    "sort": lambda x: np.sort(x, axis=1),
    "argsort": lambda x: np.argsort(x, axis=1),
    "round": lambda x: np.round(x, 2),
    "around": lambda x: np.around(x, 1),
    "take": lambda x: np.take(x, [0, 2], axis=1),
    "take_flat": lambda x: np.take(x, [[0, 5], [7, 1]]),
    "average": lambda x: np.average(x, axis=0),
    "average_weights": lambda x: np.average(x, axis=1, weights=[1.0, 2.0, 3.0, 4.0]),
    "median": lambda x: np.median(x, axis=1),
    "median_all": lambda x: np.median(x),
    "ptp": lambda x: np.ptp(x, axis=1),
    "trace": lambda x: np.trace(x),
    "trace_offset": lambda x: np.trace(x, 1),
    "diagonal": lambda x: np.diagonal(x, 1),
    "diag_of_matrix": lambda x: np.diag(x),
    "diag_of_vector": lambda x: np.diag(x[0], -1),
    "cross": lambda x: np.cross(x[:, :3], x[:, 1:]),
    "nansum": lambda x: np.nansum(np.log(x)),
    "nanmean": lambda x: np.nanmean(np.log(x), axis=0),
    "nan_to_num": lambda x: np.nan_to_num(np.log(x)),
    "isclose": lambda x: np.isclose(x, 0.1, atol=0.5),
    "allclose": lambda x: np.allclose(x, x + 1e-9),
    "array_equal": lambda x: np.array_equal(x, x),
    "sinc": lambda x: np.sinc(x),
    "heaviside": lambda x: np.heaviside(x, 0.5),
    "angle": lambda x: np.angle(x, deg=True),
    "copy": lambda x: np.copy(x) + 0,
    "shape": lambda x: x + np.shape(x)[1],
    "ndim": lambda x: x * np.ndim(x),
    "size": lambda x: x * np.size(x),
    "unique": lambda x: np.unique(np.round(x)),
    "argwhere": lambda x: np.argwhere(x > 0),
    "flatnonzero": lambda x: np.flatnonzero(x > 0),
    "linalg.norm": lambda x: np.linalg.norm(x),
    "linalg.norm_axis": lambda x: np.linalg.norm(x, axis=1),
    "linalg.norm_matrix": lambda x: np.linalg.norm(x, "fro", axis=(0, 1), keepdims=True),
    "linalg.inv": lambda x: np.linalg.inv(x[:, :3] + _SQUARE),
    "linalg.det": lambda x: np.linalg.det(x[:, :3] + _SQUARE),
    "linalg.solve": lambda x: np.linalg.solve(x[:, :3] + _SQUARE, x),
    "linalg.matrix_power": lambda x: np.linalg.matrix_power(x[:, :3], 3),
    "linalg.eigh": lambda x: np.linalg.eigh(x[:, :3] @ x[:, :3].T + _SQUARE)[0],
    "linalg.svd": lambda x: np.linalg.svd(x)[1],
    "fft.fft": lambda x: np.fft.fft(x, 8, 0),
    "fft.fft_norm": lambda x: np.fft.fft(x, norm=None),
    "fft.ifft": lambda x: np.fft.ifft(x, axis=0),
    "fft.rfft": lambda x: np.fft.rfft(x),
    "fft.irfft": lambda x: np.fft.irfft(x),
    "fft.fftshift": lambda x: np.fft.fftshift(x),
    "fft.fftshift_axes": lambda x: np.fft.fftshift(x, axes=1),
    "fft.ifftshift": lambda x: np.fft.ifftshift(x, axes=(0,)),
    "fft.fft2": lambda x: np.fft.fftn(x),
}


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value.numpy() if isinstance(value, rt.Tensor) else np.asarray(value)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")      # np.log of negative values: NaN on purpose
@pytest.mark.parametrize("name", sorted(NUMPY_CALLS))
def test_numpy_function_on_a_traced_value_equals_eager_and_numpy(name):
    fn = NUMPY_CALLS[name]
    static = to_static(fn)
    for seed in (0, 1, 0):
        data = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
        want, eager, got = _leaves(fn(data)), _leaves(fn(rt.tensor(data))), _leaves(static(rt.tensor(data)))
        assert len(got) == len(eager) == len(want)
        for g, e, w in zip(got, eager, want):
            assert g.dtype == e.dtype == w.dtype and g.shape == e.shape == w.shape, (g, e, w)
            np.testing.assert_array_equal(g, e)
            np.testing.assert_allclose(e, w, rtol=2e-6, atol=1e-6)


def test_fftshift_of_a_traced_value_is_rt_fft_fftshift():
    def f(x):
        return np.fft.fftshift(x * 2)

    x = rt.tensor(np.arange(6, dtype=np.float32))
    static = to_static(f)
    np.testing.assert_array_equal(static(x).numpy(), np.fft.fftshift(np.arange(6) * 2))
    assert "fftshift" in {op.attrs.get("transform", op.type) for op in static.get_program(x).ops()} | \
        {op.type for op in static.get_program(x).ops()}


def test_a_numpy_function_with_no_counterpart_names_itself():
    def f(x):
        return np.cov(x)

    with pytest.raises(TypeError, match="numpy.cov cannot run on a traced Variable"):
        to_static(f)(rt.tensor(np.ones((2, 3), np.float32)))
