"""The op registry: every op is defined here ONCE.

An OpDef holds the kernel (written against the backend's array module `xp`),
the shape/dtype inference rule used while tracing, the facets later stages
need (the plan's code generator, the gradient rule, the ONNX lowering) and the
properties passes ask (creation op, fresh array, copying reader, safe to hoist).
Eager execution, tracing, the passes, the executor, autodiff and export all
read the same OpDef, so no op's semantics exist in two places and no module
outside `runtime/ops` keeps a list of op names. A facet written in another
module is attached with `facet(op_name, "vjp")(fn)`, the way JAX registers a
primitive's rules beside it.
"""
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..ir import declare_sub_blocks

REGISTRY = {}


@dataclass
class OpDef:
    name: str
    kernel: Callable                 # kernel(xp, *inputs, **attrs) -> array | tuple of arrays
    infer: Callable                  # infer(*inputs, **attrs) -> Spec | tuple[Spec]; array inputs are Specs (types), others literals
    num_outputs: int = 1             # -1: the kernel returns a tuple whose length infer decides
    elementwise: bool = False        # same-shape, per-element: fusable
    promote: bool = False            # inputs share one dtype after NumPy promotion (weak operands cast)
    pure: bool = True                # no side effects: removable when unused, mergeable when equal
    vjp: Optional[Callable] = None   # gradient rule: vjp(cotangents, inputs, outputs, **attrs) -> input cotangents
    differentiable: bool = True      # False: no gradient flows through (comparisons, argmax, integer ops)
    onnx: Optional[Callable] = None  # ONNX lowering, see transpiler's ONNX exporter
    native: Optional[Callable] = None  # native(op) -> the form the native tier's region emitter compiles, or None
    template: Optional[str] = None   # inline form for generated code, e.g. "xp.tanh({0})"; else a kernel call
    example: Optional[Callable] = field(default=None, repr=False)  # makes sample inputs for conformance tests
    # --- what the passes and the plan's code generator ask -------------------------------------
    ufunc: Optional[str] = None      # the NumPy/CuPy ufunc the op is (a fusable step; fresh, copying, safe)
    operator: Optional[str] = None   # Python operator for 0-d arithmetic: "+" (binary), "-" (unary negative)
    as_ufunc: Optional[Callable] = None   # as_ufunc(inputs) -> (ufunc name, args): an op that is one ufunc call
    #                                       (or None); beside `ufunc`, it says for which inputs the op is that ufunc
    creation: bool = False           # makes its value from literal inputs and attrs alone
    fresh: bool = False              # its result is a new array the plan owns (may be written in place)
    copies: bool = False             # its result never shares memory with an input (a fresh op copies)
    safe_when_static: object = False  # cannot raise once the tracer checked static shapes; or a predicate of the op
    needs_nonempty: bool = False     # raises on an empty first input (max, argmin): safe only when it is not
    user_error: bool = False         # raises the user's own exception: its message stays theirs
    grows_input: bool = False        # impure: changes its first input (a tensor array) in place and returns it
    random: bool = False             # impure only by drawing from rt.seed's generator (dropout): a replay run
    #                                  from the generator state of the run it replays computes the same values
    scatters_cotangent: bool = False  # zeros like input 1 with input 0 added at an index: a gather's gradient
    cheaper: Optional[Callable] = None   # cheaper(op, producer) -> [(OpDef, inputs)] computing the same faster,
    #                                      or None; producer(var): the op of op's block that made var, or None
    emit: Optional[Callable] = None  # emit(gen, op) -> plan source for the op's value, a list of statements, or None
    region: Optional[object] = None  # a regions.Region: the op holds blocks (cond, while, scan); its rules

    def __post_init__(self):
        if self.ufunc is not None:
            self.fresh = self.copies = True
            self.safe_when_static = self.safe_when_static or True
        self.copies = self.copies or self.fresh


PREVIOUS = object()     # in a `cheaper` rewrite: the value of the step before


@dataclass(frozen=True)
class StepValue:
    """In a `cheaper` rewrite: the value of the rewrite's step `index` (0-based), for a step that reads
    an earlier value than the one just before it."""
    index: int


def register(opdef):
    if opdef.name in REGISTRY:
        raise ValueError(f"op {opdef.name!r} is defined twice")
    REGISTRY[opdef.name] = opdef
    if opdef.region is not None:
        declare_sub_blocks(opdef.name, opdef.region.block_attrs)
    return opdef


def defop(name=None, *, infer, **options):
    """Decorator: register a kernel function as an op; returns the OpDef."""
    def wrap(kernel):
        return register(OpDef(name or kernel.__name__, kernel, infer, **options))
    return wrap


FACETS = ("vjp", "onnx", "native")


def facet(op_name, kind):
    """Decorator: attach a facet (`"vjp"`, `"onnx"`, `"native"`) to a registered op, once."""
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
