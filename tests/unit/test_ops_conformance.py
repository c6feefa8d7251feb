"""Every registered op, three ways, against NumPy as an independent oracle.

The test is parametrized over the WHOLE op registry (`runtime.ops.registry.REGISTRY`),
so a newly registered op is picked up automatically and fails
`test_every_op_has_a_sample` until someone gives it sample inputs. For each sample:

  (a) eager: the public function on eager Tensors == the NumPy oracle (values and dtype);
  (b) traced: the same call traced with `rt.trace` and run by `rt.Executor` == the oracle,
      and the Program really holds an op of the type under test;
  (c) inference: the traced Variable's `static_shape`/`dtype` match the actual result;
      traced again with the first dim of every array input unknown (-1), where the op
      allows it, the inferred dims are -1 or the actual ones;
  (d) the traced Program survives a JSON round trip and still gives the oracle's result.

Where samples come from
-----------------------
1. `OpDef.example` — a zero-argument callable returning a list of samples. This is
   how ops defined outside this table provide theirs (the `nn` ops in
   `runtime/ops/nn_ops.py` are expected to; an nn op without an `example` fails here,
   loudly, by design). A sample is a dict with the keys of `Sample` below:
       fn       callable making the op through the PUBLIC function, e.g. `lambda x: F.relu(x)`
       args     tuple; every `np.ndarray` becomes a tensor input (eager Tensor, or a traced
                input Variable), anything else is passed as is (Python scalars, dtypes, ...)
       oracle   the same computation with NumPy only (never our kernels), same args
       kwargs   optional, passed to both fn and oracle
       dynamic  optional, default True: also trace with every array input's first dim unknown
       data_dependent  optional, default False: the output's size depends on input VALUES
                (a boolean mask), so even the static trace may infer -1 for it
       rtol, atol  optional tolerances for floating results
2. `SAMPLES` below, keyed by op name — the ops of every other module of `runtime.ops`.

Ops registered by `runtime/ops/nn_ops.py` are checked by `test_nn_op_has_an_example` and
their cases carry ids starting with `nn.`, so they run with the nn suite (and are
deselected by `-k "not nn"`); every other op must have a sample here
(`test_every_op_has_a_sample`).

`EXEMPT` lists the ops covered by their own tests (control flow, side effects, tensor
arrays: see test_control_flow.py and test_executor.py); it is explicit on purpose.
"""
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import runtime as rt
from runtime.ops.dispatch import apply, constant
from runtime.ops.registry import REGISTRY

EXEMPT = {
    "cond", "while",                                    # test_control_flow.py
    "scan",                                             # test_scan.py
    "print", "assert",                                  # test_executor.py
    "raise",                                            # tests/conversion/test_raise.py
    "undefined",                                        # test_control_flow.py (names first bound in a loop)
    "array_new", "array_from_list", "array_append", "array_length",
    "array_read", "array_stack", "array_concat",        # test_control_flow.py (tensor arrays)
    "array_slice", "array_unslice",                     # tests/conversion/test_lists.py (slices, reversed)
    "array_pop", "array_insert",                        # tests/conversion/test_state.py (list methods)
    "array_unstack", "array_split_like", "array_zeros_like", "array_onehot",
    "array_add", "array_scatter_add", "array_gather",   # tests/unit/test_autodiff.py (tensor-array cotangents)
    "array_scatter_rows", "array_gather_rows",          # tests/conversion/test_grad_loop_tape.py
    "rand", "randn", "randint", "randperm",             # tests/unit/test_random.py (no oracle predicts a draw)
}


@dataclass
class Sample:
    fn: Callable
    args: tuple
    oracle: Callable
    kwargs: dict = field(default_factory=dict)
    dynamic: bool = True
    data_dependent: bool = False
    rtol: float = 1e-5
    atol: float = 1e-6


_rng = np.random.default_rng(1234)


def rand(shape, dtype="float32", lo=-2.0, hi=2.0):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return _rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return _rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return _rng.uniform(lo, hi, size=shape).astype(dtype)


def S(fn, *args, oracle, **options):
    kwargs = options.pop("kwargs", {})
    return Sample(fn, args, oracle, kwargs, **options)


# --- elementwise ------------------------------------------------------------------------

# op name -> (NumPy oracle, input domain (lo, hi)); the oracle is NumPy's, not our table's
UNARY = {
    "negative": (np.negative, None), "positive": (np.positive, None), "abs": (np.abs, None),
    "sign": (np.sign, None), "exp": (np.exp, None), "expm1": (np.expm1, None),
    "log": (np.log, (0.1, 3)), "log1p": (np.log1p, (-0.5, 3)), "log2": (np.log2, (0.1, 3)),
    "log10": (np.log10, (0.1, 3)), "sqrt": (np.sqrt, (0, 4)), "square": (np.square, None),
    "reciprocal": (np.reciprocal, (0.5, 2)), "sin": (np.sin, None), "cos": (np.cos, None),
    "tan": (np.tan, (-1, 1)), "asin": (np.arcsin, (-0.9, 0.9)), "acos": (np.arccos, (-0.9, 0.9)),
    "atan": (np.arctan, None), "sinh": (np.sinh, None), "cosh": (np.cosh, None), "tanh": (np.tanh, None),
    "asinh": (np.arcsinh, None), "acosh": (np.arccosh, (1, 3)), "atanh": (np.arctanh, (-0.9, 0.9)),
    "floor": (np.floor, None), "ceil": (np.ceil, None), "trunc": (np.trunc, None), "round": (np.rint, None),
}

BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2, "hypot": np.hypot,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
           "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift}

SAMPLES = {}


def _fn(name):
    return getattr(rt, name)


for _name, (_np_fn, _dom) in UNARY.items():
    lo, hi = _dom or (-2, 2)
    SAMPLES[_name] = [
        S(_fn(_name), rand((4, 3), "float32", lo, hi), oracle=_np_fn),
        S(_fn(_name), rand((2, 3, 2), "float64", lo, hi), oracle=_np_fn),
    ]
for _name in ("negative", "abs", "sign", "square", "positive"):
    SAMPLES[_name].append(S(_fn(_name), rand((5,), "int32", -5, 5), oracle=UNARY[_name][0]))
SAMPLES["sqrt"].append(S(rt.sqrt, rand((5,), "int32", 0, 9), oracle=np.sqrt))        # int -> float64
SAMPLES["exp"].append(S(rt.exp, np.float32(0.5) * np.ones((), np.float32), oracle=np.exp))  # 0-d

_special = np.array([[0.0, -1.5, np.nan], [np.inf, -np.inf, 2.0]], np.float32)
SAMPLES["isnan"] = [S(rt.isnan, _special, oracle=np.isnan)]
SAMPLES["isinf"] = [S(rt.isinf, _special, oracle=np.isinf)]
SAMPLES["isfinite"] = [S(rt.isfinite, _special, oracle=np.isfinite),
                       S(rt.isfinite, rand((3,), "int64"), oracle=np.isfinite)]
SAMPLES["logical_not"] = [S(rt.logical_not, rand((3, 4), "bool"), oracle=np.logical_not),
                          S(rt.logical_not, rand((4,), "float32"), oracle=np.logical_not)]
SAMPLES["bitwise_invert"] = [S(rt.bitwise_invert, rand((3, 4), "int32", -8, 8), oracle=np.invert),
                             S(rt.bitwise_invert, rand((4,), "bool"), oracle=np.invert)]

for _name, _np_fn in BINARY.items():
    positive = _name in ("divide", "floor_divide", "remainder", "pow")
    lo, hi = (0.5, 3) if positive else (-3, 3)
    a = np.round(rand((4, 3), "float32", lo, hi))           # whole numbers: equal/less see ties
    a = np.where(a == 0, 1, a).astype(np.float32)
    b = np.round(rand((3,), "float32", lo, hi))
    b = np.where(b == 0, 1, b).astype(np.float32)
    SAMPLES[_name] = [
        S(_fn(_name), a, b, oracle=_np_fn),                                  # broadcasting
        S(_fn(_name), rand((2, 3), "float64", lo, hi), rand((2, 3), "float32", lo, hi), oracle=_np_fn),
        S(_fn(_name), a, 2.0, oracle=_np_fn),                                # weak float: stays float32
        S(_fn(_name), 3, b, oracle=_np_fn),                                  # weak int on the left
    ]
    if _name not in ("atan2", "hypot"):
        ia = rand((3, 4), "int32", 1, 6)
        SAMPLES[_name].append(S(_fn(_name), ia, rand((3, 4), "int64", 1, 3), oracle=_np_fn))
        SAMPLES[_name].append(S(_fn(_name), ia, 2, oracle=_np_fn))          # weak int: stays int32
    SAMPLES[_name].append(S(_fn(_name), rand((2, 3), "int32", 1, 4), rand((2, 3), "float32", lo, hi),
                            oracle=_np_fn))                                  # int32 with float32 -> float64
for _name, _np_fn in LOGICAL.items():
    SAMPLES[_name] = [S(_fn(_name), rand((3, 4), "bool"), rand((4,), "bool"), oracle=_np_fn),
                      S(_fn(_name), rand((3,), "float32"), True, oracle=_np_fn)]
for _name, _np_fn in BITWISE.items():
    SAMPLES[_name] = [S(_fn(_name), rand((3, 4), "int32", 0, 30), rand((4,), "int32", 0, 4), oracle=_np_fn),
                      S(_fn(_name), rand((3,), "int64", 0, 30), 2, oracle=_np_fn),
                      S(_fn(_name), rand((3,), "uint8", 0, 30), rand((3,), "uint8", 0, 4), oracle=_np_fn)]
for _name in ("bitwise_left_shift", "bitwise_right_shift"):      # `1 << s`: a weak int on the left
    SAMPLES[_name].append(S(_fn(_name), 1, rand((3,), "int32", 0, 4), oracle=BITWISE[_name]))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    SAMPLES[_name].append(S(_fn(_name), rand((3,), "bool"), rand((3,), "bool"), oracle=BITWISE[_name]))

# the array API's remaining elementwise functions
_cplx = (rand((3, 4)) + 1j * rand((3, 4))).astype(np.complex64)
SAMPLES["copysign"] = [S(rt.copysign, rand((3, 4)), rand((4,)), oracle=np.copysign),
                       S(rt.copysign, rand((3,), "float64"), -1.0, oracle=np.copysign)]
SAMPLES["logaddexp"] = [S(rt.logaddexp, rand((3, 4), lo=-50, hi=50), rand((3, 4), lo=-50, hi=50), oracle=np.logaddexp),
                        S(rt.logaddexp, rand((2,), "float64"), 700.0, oracle=np.logaddexp)]
SAMPLES["nextafter"] = [S(rt.nextafter, rand((3, 4)), rand((3, 4)), oracle=np.nextafter),
                        S(rt.nextafter, rand((3,), "float64"), np.float64(np.inf) * np.ones(3), oracle=np.nextafter)]
SAMPLES["signbit"] = [S(rt.signbit, np.array([-0.0, 0.0, -1.5, np.nan, -np.inf], np.float32), oracle=np.signbit)]
SAMPLES["conj"] = [S(rt.conj, _cplx, oracle=np.conj), S(rt.conj, rand((3,)), oracle=np.conj)]
SAMPLES["real"] = [S(rt.real, _cplx, oracle=np.real), S(rt.real, rand((3,), "float64"), oracle=np.real)]
SAMPLES["imag"] = [S(rt.imag, _cplx, oracle=np.imag),
                   S(rt.imag, rand((3,), "float32"), oracle=lambda a: np.imag(a).copy())]

SAMPLES["where"] = [
    S(rt.where, rand((3, 4), "bool"), rand((3, 4)), rand((4,)), oracle=np.where),
    S(rt.where, rand((3,), "bool"), rand((3,), "int32", -5, 5), 0.5,
      oracle=lambda c, x, y: np.where(c, x, np.float64(y))),  # int32 with a weak float -> float64
    S(rt.where, rand((3,), "bool"), rand((3,)), 0.5, oracle=np.where),     # weak float: float32
]
SAMPLES["clip"] = [
    S(rt.clip, rand((3, 4)), -0.5, 0.5, oracle=np.clip),
    S(rt.clip, rand((3, 4)), None, 0.5, oracle=lambda x, lo, hi: np.minimum(x, np.float32(hi))),
    S(rt.clip, rand((3, 4), "int32", -5, 5), rand((4,), "int32", -3, 0), 2, oracle=np.clip),
]
SAMPLES["astype"] = [
    S(rt.astype, rand((3, 4), "float32", -5, 5), "int32", oracle=lambda x, d: x.astype(d)),
    S(rt.astype, rand((3,), "int32"), rt.float64, oracle=lambda x, d: x.astype(np.float64)),
    S(rt.astype, rand((3,), "float32"), rt.bool, oracle=lambda x, d: x.astype(np.bool_)),
]

# --- reductions ---------------------------------------------------------------------------


def _reduction_samples(name, np_fn):
    x = rand((3, 4, 2))
    out = [S(_fn(name), x, oracle=np_fn),
           S(_fn(name), x, kwargs={"axis": 1}, oracle=np_fn),
           S(_fn(name), x, kwargs={"axis": (0, 2), "keepdims": True}, oracle=np_fn),
           S(_fn(name), x, kwargs={"axis": -1, "keepdims": False}, oracle=np_fn),
           S(_fn(name), rand((2, 5), "int32", -4, 4), kwargs={"axis": 0}, oracle=np_fn)]
    out.append(S(_fn(name), rand((3, 4), "bool"), kwargs={"axis": 1}, oracle=np_fn))
    out.append(S(_fn(name), x, kwargs={"axis": ()}, oracle=np_fn))            # reduces nothing
    out.append(S(_fn(name), rand((2, 3), "float64"), kwargs={"keepdims": True}, oracle=np_fn))
    return out


for _name, _np_fn in {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
                      "any": np.any, "all": np.all, "std": np.std, "var": np.var}.items():
    SAMPLES[_name] = _reduction_samples(_name, _np_fn)
# the array API's dtype= (sum, prod) and correction= (std, var)
SAMPLES["sum"].append(S(rt.sum, rand((3, 4), "int32"), kwargs={"dtype": "float64", "axis": 1}, oracle=np.sum))
SAMPLES["prod"].append(S(rt.prod, rand((3, 4), "float32"), kwargs={"dtype": "float64"}, oracle=np.prod))
SAMPLES["std"].append(S(lambda x: rt.std(x, axis=0, correction=1), rand((3, 4)),
                        oracle=lambda x: np.std(x, axis=0, ddof=1)))
SAMPLES["var"].append(S(lambda x: rt.var(x, correction=1.5), rand((3, 4), "float64"),
                        oracle=lambda x: np.var(x, ddof=1.5)))
for _name, _np_fn in {"argmax": np.argmax, "argmin": np.argmin}.items():
    SAMPLES[_name] = [S(_fn(_name), rand((3, 4)), oracle=_np_fn),
                      S(_fn(_name), rand((3, 4)), kwargs={"axis": 1}, oracle=_np_fn),
                      S(_fn(_name), rand((3, 4)), kwargs={"axis": 0, "keepdims": True}, oracle=_np_fn),
                      S(_fn(_name), rand((3, 4), "int32", -9, 9), kwargs={"axis": -1}, oracle=_np_fn),
                      S(_fn(_name), rand((3, 4)), kwargs={"keepdims": True}, oracle=_np_fn)]
SAMPLES["cumsum"] = [S(rt.cumsum, rand((3, 4)), oracle=np.cumsum),
                     S(rt.cumsum, rand((3, 4)), kwargs={"axis": 1}, oracle=np.cumsum),
                     S(rt.cumsum, rand((3, 4), "int32"), kwargs={"axis": 0}, oracle=np.cumsum)]

# --- linear algebra, shape manipulation ----------------------------------------------------

SAMPLES["matmul"] = [
    S(rt.matmul, rand((2, 3)), rand((3, 4)), oracle=np.matmul),
    S(rt.matmul, rand((3,)), rand((3, 4)), oracle=np.matmul),
    S(rt.matmul, rand((2, 3)), rand((3,)), oracle=np.matmul),
    S(rt.matmul, rand((5, 2, 3)), rand((3, 4)), oracle=np.matmul),
    S(rt.matmul, rand((2, 3), "int32"), rand((3, 2), "float32"), oracle=np.matmul),
    S(lambda a, b: a @ b, rand((2, 3), "float64"), rand((3, 2)), oracle=lambda a, b: a @ b),
]
SAMPLES["reshape"] = [
    S(rt.reshape, rand((4, 3)), (3, 4), oracle=np.reshape),
    S(rt.reshape, rand((4, 3)), (-1,), oracle=np.reshape),
    S(rt.reshape, rand((4, 3)), (2, -1, 3), oracle=np.reshape),
    S(lambda x: rt.reshape(x, (x.shape[0], 3, 1)), rand((4, 3)), oracle=lambda x: x.reshape(x.shape[0], 3, 1)),
    S(lambda x: x.reshape(-1, 2), rand((4, 3), "int32"), oracle=lambda x: x.reshape(-1, 2)),
]
SAMPLES["permute_dims"] = [
    S(rt.permute_dims, rand((2, 3, 4)), (1, 0, 2), oracle=np.transpose),
    S(rt.permute_dims, rand((2, 3, 4)), (2, 0, 1), oracle=np.transpose),
    S(lambda x: x.T, rand((2, 3)), oracle=lambda x: x.T),
]
SAMPLES["expand_dims"] = [
    S(rt.expand_dims, rand((2, 3)), 0, oracle=np.expand_dims),
    S(rt.expand_dims, rand((2, 3)), -1, oracle=np.expand_dims),
    S(rt.expand_dims, rand((2, 3)), (0, 2), oracle=np.expand_dims),
]
SAMPLES["squeeze"] = [
    S(rt.squeeze, rand((1, 3, 1)), oracle=np.squeeze, dynamic=False),   # axis=None needs known dims
    S(rt.squeeze, rand((1, 3, 1)), 0, oracle=np.squeeze),
    S(rt.squeeze, rand((1, 3, 1)), (0, 2), oracle=np.squeeze),
    S(rt.squeeze, rand((2, 1)), -1, oracle=np.squeeze),
]
SAMPLES["concat"] = [
    S(lambda a, b: rt.concat([a, b]), rand((2, 3)), rand((4, 3)), oracle=lambda a, b: np.concatenate([a, b])),
    S(lambda a, b: rt.concat([a, b], axis=1), rand((2, 3)), rand((2, 1)),
      oracle=lambda a, b: np.concatenate([a, b], axis=1)),
    S(lambda a, b: rt.concat((a, b), axis=None), rand((2, 3)), rand((4,), "int32"),
      oracle=lambda a, b: np.concatenate([a, b], axis=None)),
    S(lambda a, b: rt.concat([a, b], axis=-1), rand((3,), "int32"), rand((2,), "float32"),
      oracle=lambda a, b: np.concatenate([a, b], axis=-1)),
]
SAMPLES["stack"] = [
    S(lambda a, b: rt.stack([a, b]), rand((2, 3)), rand((2, 3)), oracle=lambda a, b: np.stack([a, b])),
    S(lambda a, b: rt.stack([a, b], axis=1), rand((2, 3)), rand((2, 3)), oracle=lambda a, b: np.stack([a, b], 1)),
    S(lambda a, b: rt.stack((a, b), axis=-1), rand((4,), "int32"), rand((4,), "int64"),
      oracle=lambda a, b: np.stack([a, b], -1)),
]
SAMPLES["broadcast_to"] = [
    S(rt.broadcast_to, rand((3,)), (2, 3), oracle=np.broadcast_to),
    S(rt.broadcast_to, rand((1, 3)), (4, 2, 3), oracle=np.broadcast_to),
    S(lambda x, y: rt.broadcast_to(x, (y.shape[0], 3)), rand((1, 3)), rand((5, 2)),
      oracle=lambda x, y: np.broadcast_to(x, (y.shape[0], 3))),
]
SAMPLES["flip"] = [
    S(rt.flip, rand((2, 3)), oracle=np.flip),
    S(rt.flip, rand((2, 3)), kwargs={"axis": 0}, oracle=np.flip),
    S(rt.flip, rand((2, 3, 2)), kwargs={"axis": (0, 2)}, oracle=np.flip),
]
SAMPLES["dim"] = [
    S(rt.dim, rand((4, 3)), 1, oracle=lambda x, axis: np.int64(x.shape[axis])),
    S(rt.dim, rand((4, 3)), 0, oracle=lambda x, axis: np.int64(x.shape[axis])),
    S(rt.dim, rand((4, 3)), -1, oracle=lambda x, axis: np.int64(x.shape[axis])),
]

# --- indexing -------------------------------------------------------------------------------


def _get(index):
    return S(lambda x: x[index], rand((4, 3, 2)), oracle=lambda x: x[index])


SAMPLES["getitem"] = [
    _get(1), _get(-1), _get((1, 2)), _get((slice(None), 0)), _get(slice(1, None, 2)),
    _get((slice(None, None, -1), slice(1, 3))), _get((None, Ellipsis, 0)), _get((Ellipsis, None)),
    _get(([2, 0, 0],)), _get((slice(None), [1, 0], 1)), _get((1, [0, 2], [1, 1])),
    _get((slice(None), [0, 1], [1, 0])), _get((0, slice(None), [1, 0])), _get(([0, 1], slice(None), 1)),
    _get(([0, 1], None, [1, 0])), _get((None, [0, 1])), _get((Ellipsis, [0, 1, 1])),
    _get((slice(None), [[0], [2]], [0, 1])), _get((slice(None, None, -2), slice(-1, 0, -1))), _get(slice(10, 20)),
    S(lambda x: x[np.array([True, False, True, True])], rand((4, 3, 2)),
      oracle=lambda x: x[np.array([True, False, True, True])], data_dependent=True),
    S(lambda x, i: x[i], rand((4, 3)), np.array([3, 0, 1]), oracle=lambda x, i: x[i]),
    S(lambda x, i: x[:, i], rand((4, 3)), np.array([[2, 0], [1, 1]]), oracle=lambda x, i: x[:, i]),
    S(lambda x, m: x[m], rand((4, 3)), rand((4, 3), "bool"), oracle=lambda x, m: x[m], data_dependent=True),
    S(lambda x: x[x > 0], rand((4, 3)), oracle=lambda x: x[x > 0], data_dependent=True),
    S(lambda x, i: x[i], rand((4, 3)), np.array(2), oracle=lambda x, i: x[i]),
    S(lambda x, i: x[i:], rand((4, 3)), np.array(1), oracle=lambda x, i: x[int(i):], data_dependent=True),
    S(lambda x, i: x[i, 1:], rand((4, 3)), np.array(-1), oracle=lambda x, i: x[int(i), 1:]),
    S(lambda x, m: x[m, 1], rand((4, 3, 2)), rand((4, 3), "bool"), oracle=lambda x, m: x[m, 1], data_dependent=True),
    S(lambda x, m: x[0, m], rand((4, 3, 2)), rand((3, 2), "bool"), oracle=lambda x, m: x[0, m], data_dependent=True),
    S(lambda x, i: x[i, :, [1, 0]], rand((4, 3, 2)), np.array(2), oracle=lambda x, i: x[i, :, [1, 0]]),
]


def _set(index, value):
    def oracle(x):
        out = x.copy()
        out[index] = value
        return out
    return S(lambda x: rt.setitem(x, index, value), rand((4, 3)), oracle=oracle)


def _set_oracle(index):
    def oracle(x, v):
        out = x.copy()
        out[index] = v
        return out
    return oracle


SAMPLES["setitem"] = [
    _set(0, 5.0), _set((slice(None), 1), -1.0), _set((1, 2), 7), _set(([0, 2],), 0.5),
    S(lambda x, v: rt.setitem(x, (slice(1, 3),), v), rand((4, 3)), rand((3,)), oracle=_set_oracle(slice(1, 3))),
    S(lambda x, v: rt.setitem(x, x > 0, v), rand((4, 3)), np.float32(0) * np.ones((), np.float32),
      oracle=lambda x, v: np.where(x > 0, v, x)),
]

# --- creation ---------------------------------------------------------------------------------

SAMPLES["constant"] = [
    S(lambda: constant(np.arange(6, dtype=np.int32).reshape(2, 3)),
      oracle=lambda: np.arange(6, dtype=np.int32).reshape(2, 3)),
    S(lambda: constant(np.float64(2.5)), oracle=lambda: np.float64(2.5)),
    S(lambda x: x + np.array([1.0, 2.0, 3.0], np.float32), rand((2, 3)),
      oracle=lambda x: x + np.array([1.0, 2.0, 3.0], np.float32)),
]
SAMPLES["zeros"] = [
    S(lambda: rt.zeros((2, 3)), oracle=lambda: np.zeros((2, 3), np.float32)),
    S(lambda: rt.zeros(4, dtype="int32"), oracle=lambda: np.zeros(4, np.int32)),
    S(lambda x: rt.zeros((x.shape[0], 2), dtype=rt.float64), rand((3, 1)),
      oracle=lambda x: np.zeros((x.shape[0], 2), np.float64)),
]
SAMPLES["ones"] = [
    S(lambda: rt.ones((2, 3)), oracle=lambda: np.ones((2, 3), np.float32)),
    S(lambda: rt.ones((), dtype="bool"), oracle=lambda: np.ones((), np.bool_)),
    S(lambda x: rt.ones(x.shape), rand((3, 2)), oracle=lambda x: np.ones(x.shape, np.float32)),
]
SAMPLES["full"] = [
    S(lambda: rt.full((2, 3), 1.5), oracle=lambda: np.full((2, 3), 1.5, np.float32)),  # Python float: float32
    S(lambda: rt.full((2,), 7), oracle=lambda: np.full((2,), 7, np.int64)),
    S(lambda: rt.full(3, True), oracle=lambda: np.full(3, True)),
    S(lambda: rt.full((2, 2), 3, dtype="float64"), oracle=lambda: np.full((2, 2), 3, np.float64)),
    S(lambda x: rt.full((x.shape[0],), 2.0), rand((3, 2)), oracle=lambda x: np.full((x.shape[0],), 2.0, np.float32)),
]
SAMPLES["arange"] = [
    S(lambda: rt.arange(5), oracle=lambda: np.arange(5, dtype=np.int64)),
    S(lambda: rt.arange(2, 11, 3), oracle=lambda: np.arange(2, 11, 3, dtype=np.int64)),
    S(lambda: rt.arange(0.0, 1.0, 0.25), oracle=lambda: np.arange(0.0, 1.0, 0.25, dtype=np.float32)),
    S(lambda: rt.arange(5, 0, -2), oracle=lambda: np.arange(5, 0, -2, dtype=np.int64)),
    S(lambda: rt.arange(4, dtype="float64"), oracle=lambda: np.arange(4, dtype=np.float64)),
    S(lambda x: rt.arange(x.shape[0]), rand((3, 2)), oracle=lambda x: np.arange(x.shape[0], dtype=np.int64)),
]
SAMPLES["linspace"] = [
    S(lambda: rt.linspace(0, 1, 5), oracle=lambda: np.linspace(0, 1, 5, dtype=np.float32)),
    S(lambda: rt.linspace(-1, 1, 4, endpoint=False, dtype="float64"),
      oracle=lambda: np.linspace(-1, 1, 4, endpoint=False)),
]
SAMPLES["eye"] = [
    S(lambda: rt.eye(3), oracle=lambda: np.eye(3, dtype=np.float32)),
    S(lambda: rt.eye(2, 4, k=1, dtype="int32"), oracle=lambda: np.eye(2, 4, k=1, dtype=np.int32)),
]
SAMPLES["full_like"] = [
    S(lambda x: rt.full_like(x, 2.5), rand((2, 3)), oracle=lambda x: np.full_like(x, 2.5)),
    S(lambda x: rt.full_like(x, 3, dtype="int64"), rand((2, 3)), oracle=lambda x: np.full_like(x, 3, np.int64)),
    S(rt.zeros_like, rand((2, 3), "int32"), oracle=np.zeros_like),
    S(rt.ones_like, rand((4,), "float64"), oracle=np.ones_like),
    S(lambda x: rt.ones_like(x, dtype=rt.bool), rand((4,)), oracle=lambda x: np.ones_like(x, np.bool_)),
]


# --- ops that passes introduce -------------------------------------------------------------------

def _fused(steps):
    return lambda *xs: apply(REGISTRY["fused_elementwise"], xs, {"steps": steps})


SAMPLES["fused_elementwise"] = [
    S(_fused((("multiply", {"in": 0}, 0.5), ("add", {"step": 0}, {"in": 1}), ("tanh", {"step": 1}))),
      rand((4, 3)), rand((3,)), oracle=lambda x, y: np.tanh(x * np.float32(0.5) + y)),
    S(_fused((("power", {"in": 0}, 2), ("maximum", {"step": 0}, 1.0), ("less", {"step": 1}, {"in": 1}))),
      rand((2, 3)), rand((2, 3)), oracle=lambda x, y: np.maximum(x ** 2, np.float32(1.0)) < y),
    S(_fused((("add", {"in": 0}, {"in": 1}), ("negative", {"step": 0}))),
      rand((2, 3), "int32"), rand((2, 3), "float32"), oracle=lambda x, y: -(x + y)),
]


# --- the tests --------------------------------------------------------------------------------

def samples_of(name):
    """The samples for op `name`: its OpDef.example, else this module's table; None when it has none."""
    opdef = REGISTRY[name]
    if opdef.example is not None:
        return [s if isinstance(s, Sample) else Sample(**s) for s in opdef.example()]
    return SAMPLES.get(name)


def _module_of(name):
    return getattr(REGISTRY[name].kernel, "__module__", None) or "?"


def _is_nn(name):
    return _module_of(name).endswith(".nn_ops")


def _cases():
    for name in sorted(REGISTRY):
        if name in EXEMPT:
            continue
        prefix = "nn." if _is_nn(name) else ""
        for i, sample in enumerate(samples_of(name) or ()):
            yield pytest.param(name, sample, id=f"{prefix}{name}-{i}")


CASES = list(_cases())


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if not _is_nn(n)))
def test_every_op_has_a_sample(name):
    if name in EXEMPT:
        return
    assert samples_of(name), (
        f"op {name!r} (registered in {_module_of(name)}) has no conformance sample: add it to SAMPLES in "
        "tests/unit/test_ops_conformance.py or give its OpDef an `example=` (see that module's docstring)")


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if _is_nn(n)))
def test_nn_op_has_an_example(name):
    assert REGISTRY[name].example is not None, (
        f"nn op {name!r} (registered in {_module_of(name)}) has no conformance sample: give its OpDef an "
        "`example=` returning sample dicts (see the docstring of tests/unit/test_ops_conformance.py)")


def test_exempt_ops_exist():
    """The exemption list names real ops (a renamed op must not hide behind a stale entry)."""
    assert EXEMPT <= set(REGISTRY), sorted(EXEMPT - set(REGISTRY))


def test_table_names_registered_ops():
    assert set(SAMPLES) <= set(REGISTRY), sorted(set(SAMPLES) - set(REGISTRY))


def _eager_args(sample):
    return [rt.tensor(a) if isinstance(a, np.ndarray) else a for a in sample.args]


def _np_args(sample):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in sample.args]


def _check_value(actual, expected, sample, what):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, NumPy gives {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, NumPy gives {expected.shape}"
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=sample.rtol, atol=sample.atol, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def _trace(sample, dynamic):
    """Trace sample.fn with one input Variable per array arg; returns (program, output, feed)."""
    positions = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]
    specs, feed = [], {}
    for k, i in enumerate(positions):
        a = sample.args[i]
        shape = list(a.shape)
        if dynamic and shape:
            shape[0] = None
        specs.append(rt.InputSpec(shape, a.dtype, name=f"in{k}"))
        feed[f"in{k}"] = a

    def traced(*variables):
        args = list(sample.args)
        for i, v in zip(positions, variables):
            args[i] = v
        return sample.fn(*args, **sample.kwargs)

    program, _, out = rt.trace(traced, specs)
    return program, out, feed


@pytest.mark.parametrize("name,sample", CASES)
def test_eager_matches_numpy(name, sample):
    expected = sample.oracle(*_np_args(sample), **sample.kwargs)
    out = sample.fn(*_eager_args(sample), **sample.kwargs)
    assert isinstance(out, rt.Tensor), f"{name}: eager call returned {type(out).__name__}, not a Tensor"
    _check_value(out.numpy(), expected, sample, f"eager {name}")


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name,sample", CASES)
def test_traced_matches_numpy(name, sample, dynamic):
    has_dims = any(isinstance(a, np.ndarray) and a.ndim for a in sample.args)
    if dynamic and not (sample.dynamic and has_dims):
        pytest.skip("no array input with a first dim to make dynamic")
    expected = np.asarray(sample.oracle(*_np_args(sample), **sample.kwargs))
    program, out, feed = _trace(sample, dynamic)
    assert name in [op.type for op in program.ops()], f"the sample does not record a {name!r} op:\n{program}"
    assert isinstance(out, rt.Tracer), f"traced {name} returned {type(out).__name__}"

    # (c) inferred shape and dtype against the real result
    assert out.dtype == expected.dtype, f"{name}: inferred dtype {out.dtype}, actual {expected.dtype}\n{program}"
    inferred = out.static_shape
    if dynamic or sample.data_dependent:
        assert len(inferred) == expected.ndim and all(d in (-1, e) for d, e in zip(inferred, expected.shape)), (
            f"{name}: inferred shape {inferred} does not fit actual {expected.shape}\n{program}")
    else:
        assert inferred == expected.shape, f"{name}: inferred shape {inferred}, actual {expected.shape}\n{program}"

    # (b) run by the executor, with its default passes and with none
    (result,) = rt.Executor().run(program, feed)
    _check_value(result.numpy(), expected, sample, f"traced {name}")
    (plain,) = rt.Executor(passes=[]).run(program, feed)
    _check_value(plain.numpy(), expected, sample, f"traced {name} without passes")

    # (d) the JSON form runs the same
    loaded = rt.Program.from_json(program.to_json())
    assert loaded == program
    (again,) = rt.Executor().run(loaded, feed)
    _check_value(again.numpy(), expected, sample, f"traced {name} after a JSON round trip")
