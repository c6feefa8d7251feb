"""Program → compiled plan → run.

A Program is compiled once per (backend, passes, max_iterations) into a
*plan*: one generated Python function with every block inlined (`cond` → `if`,
`while` → `while True: ... break`) that calls the registry's kernels with attrs
bound as literals (runtime/codegen/). Running a plan costs about what the same
NumPy calls written by hand cost. When an op fails, the plan's line tells which
op, and the op's origin tells the user's file and line.
"""
import weakref

import numpy as np

from .backends import get_backend
from . import passes as _passes
from .codegen.plan import compile_plan
from .gc_pause import paused_gc
from . import native as _native

# Program -> {(backend, passes, max_iterations): (stamp, plan)}; a plan never holds the Program
# it is keyed by (it runs a copy), so a Program nobody else holds takes its plans with it. The key is
# the Program object itself: a Program is not edited once it runs (tracing finishes before the first
# run, passes edit a clone); code that edits one after it ran calls `forget_plans` (or edits a clone).
_PLANS = weakref.WeakKeyDictionary()


def forget_plans(program):
    """Drop the plans compiled for `program` (it was edited in place after it ran)."""
    _PLANS.pop(program, None)


class Executor:
    """Runs Programs on one device; compiled plans are cached per Program (weakly) and per settings.

    `max_iterations` (opt-in, None = unbounded) is a budget per call: the iterations
    of all `while` loops of one run together (nested loops multiply), past which an
    IterationLimitError names the loop that ran out: a bound for Programs one did not write.

    `native` (None follows the DY2STATIC_NATIVE environment variable: on where llvmlite is installed
    unless it is '0'; False turns it off) runs the regions the native tier compiles (runtime/native/) as machine code, NumPy's bits kept; the
    rest, or all of it without llvmlite, is the NumPy plan. `fast_math` (opt-in; None follows
    DY2STATIC_FAST_MATH) lets the native tier approximate float32 exp and tanh within the documented
    ulp bound (docs/semantics.md, "fast_math"); it turns the native tier on.
    """

    def __init__(self, device="cpu", passes=None, max_iterations=None, native=None, fast_math=None):
        self.backend = get_backend(device)
        self.passes = passes
        if max_iterations is not None and (not isinstance(max_iterations, int) or isinstance(max_iterations, bool)
                                           or max_iterations < 0):
            raise ValueError(f"max_iterations must be a non-negative int or None, not {max_iterations!r}")
        self.max_iterations = max_iterations
        fast_math, native = _native.fast_math_setting(fast_math, native)
        self.native = _native.setting(native) and self.backend.xp is np
        self.fast_math = fast_math and self.native

    def compile(self, program):
        key = (self.backend.name, _passes.pipeline_key(self.passes), self.max_iterations, self.native,
               self.fast_math)
        # inputs/outputs are plain lists a caller may reassign
        stamp = (tuple(map(id, program.inputs)), tuple(map(id, program.outputs)))
        plans = _PLANS.get(program)
        cached = plans.get(key) if plans is not None else None
        if cached is not None and cached[0] == stamp:
            return cached[1]
        with paused_gc():
            optimized = _passes.run_passes(program, self.passes)
            if optimized is program:    # no passes: the plan runs a copy (holding its key would keep it alive)
                optimized = program.clone()
                optimized.parameters = program.parameters       # fed by default as before: the live table
            if self.native:
                plan = _native.compile_native_plan(optimized, self.backend, self.max_iterations, self.fast_math)
            else:
                plan = compile_plan(optimized, self.backend, self.max_iterations)
        if plans is None:
            plans = _PLANS.setdefault(program, {})
        plans[key] = (stamp, plan)
        return plan

    def run(self, program, feed=None):
        """Outputs as a list of Tensors, in the order of `program.outputs`."""
        return self.compile(program).run(feed)
