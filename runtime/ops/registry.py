"""The op registry: every op is defined here ONCE.

An OpDef holds the kernel (written against the backend's array module `xp`),
the shape/dtype inference rule used while tracing, and the facets later stages
need (the gradient rule, the ONNX lowering). Eager execution, tracing, the
executor, autodiff and export all read the same OpDef, so no op's semantics
exist in two places. A facet written in another module is attached with
`facet(op_name, "vjp")(fn)`, the way JAX registers a primitive's rules beside it.
"""
from dataclasses import dataclass, field
from typing import Callable, Optional

REGISTRY = {}


@dataclass
class OpDef:
    name: str
    kernel: Callable                 # kernel(xp, *inputs, **attrs) -> array | tuple of arrays
    infer: Callable                  # infer(*inputs, **attrs) -> Spec | tuple[Spec]; inputs are Variables or literals
    num_outputs: int = 1             # -1: the kernel returns a tuple whose length infer decides
    elementwise: bool = False        # same-shape, per-element: fusable
    promote: bool = False            # inputs share one dtype after NumPy promotion (weak operands cast)
    pure: bool = True                # no side effects: removable when unused, mergeable when equal
    vjp: Optional[Callable] = None   # gradient rule: vjp(cotangents, inputs, outputs, **attrs) -> input cotangents
    differentiable: bool = True      # False: no gradient flows through (comparisons, argmax, integer ops)
    onnx: Optional[Callable] = None  # ONNX lowering, see transpiler's ONNX exporter
    template: Optional[str] = None   # inline form for generated code, e.g. "xp.tanh({0})"; else a kernel call
    example: Optional[Callable] = field(default=None, repr=False)  # makes sample inputs for conformance tests


def register(opdef):
    if opdef.name in REGISTRY:
        raise ValueError(f"op {opdef.name!r} is defined twice")
    REGISTRY[opdef.name] = opdef
    return opdef


def defop(name=None, *, infer, **options):
    """Decorator: register a kernel function as an op; returns the OpDef."""
    def wrap(kernel):
        return register(OpDef(name or kernel.__name__, kernel, infer, **options))
    return wrap


FACETS = ("vjp", "onnx")


def facet(op_name, kind):
    """Decorator: attach a facet (`"vjp"`, `"onnx"`) to a registered op, once."""
    if kind not in FACETS:
        raise ValueError(f"unknown op facet {kind!r}; facets are {FACETS}")

    def attach(fn):
        opdef = get_op(op_name)
        if getattr(opdef, kind) is not None:
            raise ValueError(f"op {op_name!r} has a {kind} rule already")
        setattr(opdef, kind, fn)
        return fn
    return attach


def get_op(name):
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown op type {name!r}") from None
