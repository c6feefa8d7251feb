"""The array API standard's namespace-level promises that the op conformance test does not cover:
version, constants, data-type functions, namespace info, asarray's copy=, interchange (DLPack),
array attributes and named results. (The official array-api-tests run against `runtime` too:
`ARRAY_API_TESTS_MODULE=runtime pytest array_api_tests` in a checkout of data-apis/array-api-tests.)"""
import inspect
import math

import numpy as np
import pytest

import runtime as rt


def test_version_constants_and_info():
    assert rt.__array_api_version__ == "2024.12"
    assert (rt.e, rt.pi, rt.newaxis) == (math.e, math.pi, None) and math.isinf(rt.inf) and math.isnan(rt.nan)
    info = rt.__array_namespace_info__()
    assert info.default_device() == "cpu" and "cpu" in info.devices()
    assert info.default_dtypes()["real floating"] == np.float32
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                                 "uint64"}
    x = rt.asarray(np.ones((2, 3), np.float32))
    assert x.__array_namespace__() is rt
    with pytest.raises(ValueError, match="2019.01"):
        x.__array_namespace__(api_version="2019.01")


def test_dtype_functions():
    assert rt.isdtype(rt.float32, "real floating") and not rt.isdtype(rt.int8, ("real floating", "bool"))
    assert rt.isdtype(rt.uint8, "integral") and rt.isdtype(rt.complex64, "numeric")
    assert rt.can_cast(rt.int8, rt.int16) and not rt.can_cast(rt.float64, rt.float32)
    assert rt.result_type(rt.int8, rt.float32) == np.float32
    assert rt.result_type(rt.asarray(np.ones(2, np.float32)), 1.0) == np.float32
    with pytest.raises(ValueError, match="unknown kind"):
        rt.isdtype(rt.int8, "whole")


def test_asarray_copy_and_defaults():
    a = np.arange(3.0)
    assert rt.asarray(a, copy=False).array is a
    assert not np.shares_memory(rt.asarray(a, copy=True).array, a)
    with pytest.raises(ValueError, match="without a copy"):
        rt.asarray([1.0, 2.0], copy=False)
    assert rt.asarray(1.5).dtype == np.float32 and rt.asarray(1j).dtype == np.complex64
    assert rt.asarray([1j, 2]).dtype == np.complex64 and rt.asarray(np.complex128(1j)).dtype == np.complex128


def test_asarray_copy_false_is_the_array_itself():
    # copy=False never copies: on a Tensor it is that Tensor, so an assignment into it shows through
    x = rt.asarray(np.array(False))
    out = rt.asarray(x, copy=False)
    x[()] = True
    assert out is x and out.item() is True
    empty = np.empty((0, 2), np.float32)          # shares_memory is False for empty arrays: no copy made either
    assert rt.asarray(empty, copy=False).array is empty
    e = rt.asarray(empty)
    assert rt.asarray(e, copy=False, dtype="float32") is e
    with pytest.raises(ValueError, match="without a copy"):
        rt.asarray(e, copy=False, dtype="float64")


def test_interchange_and_attributes():
    x = rt.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(np.from_dlpack(x), x.numpy())
    assert rt.from_dlpack(np.ones(2)).shape == (2,)
    assert x.to_device("cpu") is x and x.device == "cpu"
    assert x.mT.shape == (3, 2) and x.T.shape == (3, 2) and x.size == 6
    assert rt.astype(x, "float32") is not x and rt.astype(x, "float32", copy=False) is x


def test_named_results():
    m = rt.asarray(np.array([[2.0, 1.0], [1.0, 3.0]]))
    assert rt.linalg.eigh(m).eigenvalues.shape == (2,)
    q, r = rt.linalg.qr(m)
    np.testing.assert_allclose((q @ r).numpy(), m.numpy())
    assert rt.linalg.slogdet(m).sign.item() == 1.0 and rt.linalg.svd(m).S.shape == (2,)
    u = rt.unique_all(rt.asarray(np.array([3, 1, 3])))
    assert u.values.tolist() == [1, 3] and u.counts.tolist() == [1, 2] and u.inverse_indices.tolist() == [1, 0, 1]
    assert isinstance(rt.meshgrid(rt.arange(2), rt.arange(3)), list)


def test_size_is_numpys_count_and_pytorchs_call_and_parameters_need_no_backend():
    from runtime import nn
    x = rt.asarray(np.ones((2, 3), np.float32))
    assert x.size == 6 and x.size() == (2, 3) and x.size(0) == 2 and x.size(-1) == 3
    with pytest.raises(IndexError, match="out of range"):
        x.size(2)
    p = nn.Parameter(np.ones((2, 2), np.float32))
    assert isinstance(p, rt.Parameter) and p.device == "cpu" and p.dtype == np.float32
    assert nn.Parameter([1.0, 2.0], dtype="float64").dtype == np.float64


def test_pinv_and_matrix_rank_take_an_array_rtol():
    # rtol may be an array broadcasting against the stack of matrices: one cutoff per matrix
    a = np.random.default_rng(0).standard_normal((3, 2, 4)).astype(np.float32)
    rtol = np.array([0.1, 0.6, 40.0], np.float32)
    np.testing.assert_array_equal(rt.linalg.matrix_rank(rt.asarray(a), rtol=rt.asarray(rtol)).numpy(),
                                  np.linalg.matrix_rank(a, rtol=rtol))
    np.testing.assert_allclose(rt.linalg.pinv(rt.asarray(a), rtol=rt.asarray(rtol)).numpy(),
                               np.linalg.pinv(a, rtol=rtol), rtol=1e-4, atol=1e-5)
    assert rt.linalg.pinv(rt.asarray(a[:0]), rtol=rt.asarray(rtol[:0])).shape == (0, 4, 2)
    assert rt.linalg.matrix_rank(rt.asarray(a), rtol=0.6).shape == (3,)


def test_axis_out_of_bounds_is_an_index_error_and_a_value_error():
    # the standard asks IndexError of expand_dims; NumPy's AxisError is both, and so is ours (any op's axis)
    x = rt.asarray(np.ones(3, np.float32))
    for call in (lambda: rt.expand_dims(x, axis=2), lambda: rt.expand_dims(x, axis=-3), lambda: rt.sum(x, axis=1),
                 lambda: rt.linalg.vector_norm(x, axis=1), lambda: rt.vecdot(x, x, axis=1)):
        with pytest.raises(IndexError, match="out of"):
            call()
        with pytest.raises(ValueError):
            call()
    assert issubclass(rt.AxisError, IndexError) and rt.expand_dims(x, axis=-2).shape == (1, 3)


def test_special_values_numpy_gets_wrong():
    # the standard's special cases where NumPy's ufunc differs (the plan's form: test_passes)
    inf, nan = np.inf, np.nan
    a = rt.asarray(np.array([inf, -inf, 1.0, -1.0, 5.0, inf], np.float32))
    b = rt.asarray(np.array([2.0, 2.0, -inf, inf, 2.0, -3.0], np.float32))
    with np.errstate(invalid="ignore"):
        for out in (rt.floor_divide(a, b), a // b):
            np.testing.assert_array_equal(out.numpy(), [inf, -inf, -0.0, -0.0, 2.0, -inf])
            assert out.dtype == np.float32 and np.signbit(out.numpy()[2:4]).all()
        np.testing.assert_array_equal((a // 2.0).numpy(), [inf, -inf, 0.0, -1.0, 2.0, inf])
        z = rt.asarray(np.array([complex(-0.0, 0.0), complex(inf, 0), complex(-inf, inf), complex(inf, nan),
                                 complex(nan, 0), complex(0.5, 0.3)], np.complex64))
        e = rt.expm1(z).numpy()
    assert e[0] == 0 and not np.signbit(e[0].real) and e[1] == inf and e[2] == -1
    assert np.isposinf(e[3].real) and np.isnan(e[3].imag) and np.isnan(e[4].real) and e[4].imag == 0
    np.testing.assert_allclose(e[5], np.expm1(np.complex128(0.5 + 0.3j)), rtol=1e-6)
    t = rt.tanh(rt.asarray(np.array([complex(inf, 3), complex(-inf, 1), complex(inf, -3)], np.complex64))).numpy()
    assert t.tolist() == [1 + 0j, -1 + 0j, 1 - 0j] and list(np.signbit(t.imag)) == [False, False, True]
    assert rt.floor_divide(rt.asarray(np.array([7, -7])), 2).tolist() == [3, -4]


# The standard's signatures of the functions that runtime/torch_functions.py extends with PyTorch's spellings
# (data-apis/array-api, src/array_api_stubs/_2024_12): each must stay callable exactly as the standard says.
def _spec_signatures():
    def sum(x, /, *, axis=None, dtype=None, keepdims=False): ...
    def prod(x, /, *, axis=None, dtype=None, keepdims=False): ...
    def mean(x, /, *, axis=None, keepdims=False): ...
    def max(x, /, *, axis=None, keepdims=False): ...
    def min(x, /, *, axis=None, keepdims=False): ...
    def any(x, /, *, axis=None, keepdims=False): ...
    def all(x, /, *, axis=None, keepdims=False): ...
    def argmax(x, /, *, axis=None, keepdims=False): ...
    def argmin(x, /, *, axis=None, keepdims=False): ...
    def std(x, /, *, axis=None, correction=0.0, keepdims=False): ...
    def var(x, /, *, axis=None, correction=0.0, keepdims=False): ...
    def tril(x, /, *, k=0): ...
    def triu(x, /, *, k=0): ...
    def squeeze(x, /, axis): ...
    def flip(x, /, *, axis=None): ...
    def roll(x, /, shift, *, axis=None): ...
    def sort(x, /, *, axis=-1, descending=False, stable=True): ...
    def concat(arrays, /, *, axis=0): ...
    def stack(arrays, /, *, axis=0): ...
    def zeros(shape, *, dtype=None, device=None): ...
    def ones(shape, *, dtype=None, device=None): ...
    def empty(shape, *, dtype=None, device=None): ...
    def where(condition, x1, x2, /): ...
    def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True): ...
    def searchsorted(x1, x2, /, *, side="left", sorter=None): ...
    def tensordot(x1, x2, /, *, axes=2): ...
    def count_nonzero(x, /, *, axis=None, keepdims=False): ...
    def diff(x, /, *, axis=-1, n=1, prepend=None, append=None): ...
    return {f.__name__: inspect.signature(f) for f in (sum, prod, mean, max, min, any, all, argmax, argmin, std,
                                                       var, tril, triu, squeeze, flip, roll, sort, concat,
                                                       stack, zeros, ones, empty, where, linspace, searchsorted,
                                                       tensordot, count_nonzero, diff)}


@pytest.mark.parametrize("name, spec", sorted(_spec_signatures().items()))
def test_torch_spellings_keep_the_standard_signature(name, spec):
    # the official suite's test_signatures rule: positional parameters at the same place with the same name
    # (unless positional-only) and kind; keyword-only ones present, keyword-only or positional-or-keyword
    sig = inspect.signature(getattr(rt, name))
    params = list(sig.parameters.values())
    positional = [p for p in spec.parameters.values() if p.kind != inspect.Parameter.KEYWORD_ONLY]
    for i, want in enumerate(positional):
        assert i < len(params), f"{name}: {want.name} missing"
        if want.kind != inspect.Parameter.POSITIONAL_ONLY:
            assert (params[i].name, params[i].kind) == (want.name, want.kind), f"{name}: {params[i]} is not {want}"
    for want in spec.parameters.values():
        if want.kind == inspect.Parameter.KEYWORD_ONLY:
            assert want.name in sig.parameters, f"{name}: keyword {want.name} missing"
            assert sig.parameters[want.name].kind in (inspect.Parameter.KEYWORD_ONLY,
                                                      inspect.Parameter.POSITIONAL_OR_KEYWORD)


def test_standard_keywords_beside_torch_spellings():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    t = rt.asarray(x)
    for make, fill in ((rt.zeros, 0), (rt.ones, 1), (rt.empty, 0)):
        out = make(shape=(2, 3), dtype=rt.float64)
        assert out.shape == (2, 3) and out.dtype == np.float64 and (out.numpy() == fill).all()
        assert make(2, 3).shape == make((2, 3)).shape == make(size=(2, 3)).shape == (2, 3)   # PyTorch's
        assert make((2, 3), rt.int32).dtype == np.int32                                       # NumPy's
    np.testing.assert_array_equal(rt.sort(t, axis=0, descending=True, stable=False).numpy(), -np.sort(-x, axis=0))
    values, indices = rt.sort(t, 1, True)                                                   # PyTorch's
    np.testing.assert_array_equal(values.numpy(), -np.sort(-x, axis=1))
    np.testing.assert_array_equal(indices.numpy(), np.argsort(-x, axis=1, kind="stable"))
    np.testing.assert_array_equal(rt.roll(t, shift=1, axis=1).numpy(), np.roll(x, 1, axis=1))
    np.testing.assert_array_equal(rt.roll(t, (1, 2), (0, 1)).numpy(), np.roll(x, (1, 2), axis=(0, 1)))
    np.testing.assert_array_equal(rt.roll(t, shifts=1, dims=0).numpy(), np.roll(x, 1, axis=0))
    np.testing.assert_allclose(rt.std(t, axis=0, correction=1.5, keepdims=True).numpy(),
                               np.std(x, axis=0, ddof=1.5, keepdims=True))
    np.testing.assert_allclose(rt.var(t, correction=0).numpy(), np.var(x))
    with pytest.raises(TypeError, match="dims"):
        rt.roll(t, 1, 0, 1)
