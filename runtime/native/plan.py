"""Plans with native regions: the NumPy plan, each fused elementwise chain one native call where it can be.

    native_result = native_chain_1.run(x, b)   # one LLVM function for the whole chain (elementwise.py)
    if native_result is None:                  # not native (yet), or declined: the NumPy plan's own chain
        ...                                    # (timed: native_chain_1.numpy_took(began))
    else:
        multiply_7 = native_result

`NativePlanCodegen` is the executor's `PlanCodegen` with its chain, loop, cond and product hooks changed:
a fused op's steps (`ufunc_steps`) become a call of a `NativeChain` when `elementwise.chain_job` takes
them, and stay NumPy's `out=` chain otherwise (a one-step chain is already one NumPy call; a 0-d result
is cheaper as NumPy scalars). Every region keeps the NumPy plan's own code under `if result is None:`.
A region compiled before (by any plan, or by an earlier process: the disk cache) runs native from the
first call. A new one runs that NumPy code, timed (`tiering.Warming.numpy_took`), until it has taken
`tiering.threshold()` seconds, then compiles in a background thread (`compiler.py`) while its calls
still run on NumPy; the compiled function is swapped in (one attribute store) once it passed its
self-test, on trial against the NumPy code's times (`tiering.judged`). With DY2STATIC_NATIVE=sync the
plan compiles it first instead. The native call allocates the result (or takes the input the `inplace`
pass donated) and returns None for a call the kernel declines (an input not of the rank, dtype or
broadcastable shape it was compiled for): the NumPy code computes it or raises NumPy's error with the
user's line (a 0-d input, which may be a NumPy scalar, is passed as `asarray` of it).
Every region decided is counted in `stats()` and listed on the plan (`plan.native_regions`:
[result name, 'native', 'warming', 'compiling' or why it runs on NumPy]).
"""
import math
import threading
from time import perf_counter
from types import SimpleNamespace

import numpy as np

from ..codegen.fast import PlanCodegen
from ..codegen.liveness import dead_after
from ..codegen.plan import compile_plan
from ..ir import Variable
from ..ops.native_forms import native_form
from . import compiler, dynamic, elementwise, gemm, pieces, products, region as regions, tiering
from .blas import flat_product_check, flat_product_known, product_call
from .reductions import MAX_INLINE_SUM

_STATS = {"native": 0, "numpy": 0, "compiling": 0, "warming": 0, "declined_calls": 0, "from_disk": 0,
          "inline_gemvs": 0, "reasons": {}}
_STATS_LOCK = threading.Lock()
SLOWER = "slower than NumPy: kept on NumPy"


def stats():
    """Counts of regions compiled native (`from_disk` of them loaded from the disk cache), kept on NumPy
    (with why) and still compiling, of calls a native kernel handed back to NumPy, and of the products
    native regions compute inline (`inline_gemvs`: gemv.py)."""
    with _STATS_LOCK:
        return dict(_STATS, reasons=dict(_STATS["reasons"]))


def reset_stats():
    with _STATS_LOCK:
        _STATS.update(native=0, numpy=0, compiling=0, warming=0, declined_calls=0, from_disk=0, inline_gemvs=0,
                      reasons={})


def _count(why, pending=0, warming=0, kernel=None, was_native=0):
    with _STATS_LOCK:
        _STATS["native"] -= was_native
        if not why and getattr(kernel, "from_disk", False):
            _STATS["from_disk"] += 1
        if not why:
            _STATS["inline_gemvs"] += getattr(kernel, "inline_gemvs", 0)
        _STATS["compiling"] -= pending
        _STATS["warming"] -= warming
        if why in ("compiling", "warming"):
            _STATS[why] += 1
        elif why:
            _STATS["numpy"] += 1
            _STATS["reasons"][why] = _STATS["reasons"].get(why, 0) + 1
        else:
            _STATS["native"] += 1


class NativeChain(tiering.Warming):
    """A plan's call of one chain: `run(*arrays)` is None (the plan runs its own NumPy chain, timed by
    `numpy_took` while warming or on trial) until the native kernel is ready, then its result, or None
    where the kernel declines the call."""

    def __init__(self, op, steps, donated, region):
        super().__init__()
        self.op, self.steps, self.donated, self.region = op, steps, donated, region
        self.run = _on_numpy

    def use(self, kernel):
        """Swap in the kernel (or record why not), on trial against the plan's NumPy chain (`tiering.judged`;
        not a fast_math kernel, whose bits are not NumPy's); called once, by the plan or the compiler thread."""
        self.warm = None
        if isinstance(kernel, str):
            self.region[1] = kernel
            return
        native = self.native_call(kernel)
        if kernel.approximate:          # fast_math asked for its bits: a trial would mix NumPy's in
            self.run = native
            self.region[1] = "native"
            return
        self.numpy_times = list(self.warm_times)
        self.run = tiering.judged(native, _on_numpy, self.numpy_times,
                                  lambda faster: self._settle(native if faster else None), numpy_timed=False)
        self.region[1] = "native"

    def _settle(self, native):
        """The trial's verdict: the kernel for good, or (None) NumPy for good, counted so in `stats()`."""
        self.numpy_times = None
        if native is not None:
            self.run = native
            return
        self.run = _on_numpy
        self.region[1] = SLOWER
        _count(SLOWER, was_native=1)

    def native_call(self, kernel):
        return chain_call(kernel, self.op, self.steps, self.donated)


class SplitChain(NativeChain):
    """A chain too long for one function (`pieces.py`): its kernel a `pieces.SplitKernel`, one call of
    each piece in turn. `started` says the kernel is on its way (queued, or found by the probe), once."""

    def __init__(self, op, steps, donated, region):
        super().__init__(op, steps, donated, region)
        self.lock = threading.Lock()
        self.started = False

    def start(self):
        """True once: for whichever of the meter and the probe asks first."""
        with self.lock:
            first, self.started = not self.started, True
        return first

    def native_call(self, kernel):
        return kernel.call(lambda piece_kernel, out, steps: chain_call(
            piece_kernel, SimpleNamespace(outputs=[out]), steps, None))


def _on_numpy(*arrays):
    """A region's `run` while its NumPy code runs (the plan's own, under `if result is None:`)."""
    return None


class NativePlanCodegen(PlanCodegen):
    """PlanCodegen whose fused elementwise chains run as native kernels where they compile."""

    def __init__(self, program, backend, max_iterations=None):
        super().__init__(program, backend, max_iterations)
        self.native_regions = []        # [output name, 'native', 'warming', 'compiling' or why NumPy]
        self.fast_math = False          # float32 exp/tanh approximated (fast_math.py); set by compile_native_plan
        self.in_fallback = 0            # inside a native loop's NumPy code: plain NumPy, nothing compiled
        self.in_loop = 0                # inside a loop's code: a cond stays Python (a native call per iteration costs more)
        self.relu_done = {}             # id(ReLU op) -> the name of the linear whose native GEMM applied it

    def ufunc_steps(self, op, steps):
        if self.in_fallback:
            return super().ufunc_steps(op, steps)
        why = self._why_not(op, steps)
        job = None
        split = pieces.needs_split(steps)
        if not why:
            out = op.outputs[0]
            if split:           # cut into pieces when the job runs (nothing planned at plan build)
                job = pieces.split_job(op.inputs, out, steps, self.fast_math)
            else:
                job = elementwise.chain_job([(v.dtype, tuple(v.static_shape)) for v in op.inputs],
                                            (out.dtype, tuple(out.static_shape)), steps, self.fast_math)
            if isinstance(job, str):
                why, job = job, None
        region = [self.name(op.outputs[0]), why or "compiling"]
        self.native_regions.append(region)
        if job is None:
            _count(why)
            return super().ufunc_steps(op, steps)
        if split:
            chain = SplitChain(op, steps, self._donated(op), region)
            defer = lambda: _warm_split(chain, job, region, steps)       # noqa: E731
        else:
            chain = NativeChain(op, steps, self._donated(op), region)
            defer = lambda: _warm(chain, job, region)       # noqa: E731
        if not _start(job, chain, region, defer):
            return super().ufunc_steps(op, steps)
        name = self.bound(f"native_chain_{len(self.native_regions)}", chain)
        asarray = self.bound("asarray")         # a 0-d value may be a NumPy scalar: the kernel reads arrays
        args = ", ".join(f"{asarray}({self.value(v)})" if v.ndim == 0 else self.value(v) for v in op.inputs)
        out, result = self.name(op.outputs[0]), self.temp("native_result")    # out may name an input (loop state)
        began, clock = self.temp("numpy_began"), self.bound("perf_counter", perf_counter)
        numpy_code = super().ufunc_steps(op, steps)      # the NumPy plan's own chain (blocked, buffers reused)
        return ([f"{result} = {name}.run({args})", f"if {result} is None:", f"    {began} = {clock}()"]
                + ["    " + line for line in numpy_code]
                + [f"    {name}.numpy_took({began})", "else:", f"    {out} = {result}",
                   f"    del {result}"])       # the result's memory is the value's alone (freed after its last reader)

    def block(self, block, indent):
        """The top-level block's ops, each run of consecutive ops that holds a matrix product and can be
        native (`_straight_end`) as one call of a straight region, its NumPy code kept for a None."""
        if self.in_fallback or not self.numpy or block is not self.program.global_block:
            return super().block(block, indent)
        dead = dead_after(block, self.program)
        ops, i = block.ops, 0
        while i < len(ops):
            end = self._straight_end(ops, i)
            if end > i and self._straight(ops[i:end], indent, [dead.get(t, []) for t in range(i, end)]):
                i = end
                continue
            for t in range(i, max(end, i + 1)):      # not native: the run's ops as the plan has them
                self.any_op(ops[t], indent)
                if t in dead:
                    self.emit(indent, "del " + ", ".join(self.name(v) for v in dead[t]))
            i = max(end, i + 1)

    def _straight_end(self, ops, start):
        """Where a straight run starting at ops[start] ends (start: none): the ops after it that each have
        a native form a straight region takes, no value of a view-like op or a number read after the run
        (the NumPy plan's views and scalars stay its own), and among them a matrix product the native GEMM
        does not take (2-D, or a stack of them by one matrix), a softmax or a layer_norm (NumPy's calls
        over short rows: the reductions' iterator costs more than their sums)."""
        end = start
        while end < len(ops) and self._joins(ops[end]):
            end += 1
        while end > start:
            inside = {id(op) for op in ops[start:end]}
            cut = next((t for t in range(start, end) if any(
                (o.ndim == 0 or (native_form(ops[t]) or ("",))[0] in _VIEWS) and self._escapes(o, inside)
                for o in ops[t].outputs)), None)
            if cut is None:
                break
            end = cut
        if not any(_worth_a_call(native_form(op)) for op in ops[start:end]):
            return start
        return end

    def _joins(self, op):
        if id(op) in self.relu_done or not op.outputs:
            return False
        if not all(isinstance(o, Variable) and o.kind == "dense" for o in op.outputs):
            return False
        form = native_form(op)
        if form is None or form[0] not in _STRAIGHT_FORMS + ("loop",):
            return False
        if form[0] == "loop":       # a while whose loops the call's iteration budget need not count
            return self.max_iterations is None
        if form[0] == "chain" and pieces.needs_split(form[1]):     # a long chain: its own pieces (pieces.py)
            return False
        if form[0] in ("cast", "transpose", "layer_norm", "reduce_first"):     # only where the region takes it
            return _taken(form, op, self.readers.get(id(op.outputs[0]), []))
        if form[0] == "matmul":
            _, a, b, transposed, _ = form
            if not (isinstance(a, Variable) and isinstance(b, Variable) and b.ndim == 2):
                return False
            if a.ndim == 3:     # a stack (a hoisted input product's rows, a sequence's batches): per item
                a = SimpleNamespace(static_shape=a.static_shape[1:], dtype=a.dtype)
            elif a.ndim != 2:
                return False
            (m, k), n = a.static_shape, b.static_shape[0 if transposed else 1]
            if isinstance(product_call(a.dtype, m, k, n, transposed, verify=False), str):
                return False            # no BLAS call in NumPy (k == 1, ...): its line stays
            return not transposed or isinstance(gemm.analyse(form, op.outputs[0], False), str)
        return True

    def _escapes(self, var, inside):
        return any(r is None or id(r) not in inside for r in self.readers.get(id(var), []))

    def _straight(self, ops, indent, dead):
        """ops as one call of their straight region (True), or False where it cannot be native: then
        nothing is emitted. `dead[t]`: the big values deleted after ops[t]."""
        inside = {id(op) for op in ops}
        outs = [o for op in ops for o in op.outputs if self._escapes(o, inside)]
        found = regions.analyse_straight(ops, outs)
        names = [self.name(o) for o in outs]
        status = [f"straight -> {', '.join(names)}", found if isinstance(found, str) else "compiling"]
        self.native_regions.append(status)
        if isinstance(found, str):
            _count(found)
            return False
        user = NativeStraight(found, status, self._maybe_strided(found.args, ops[0].block))
        job = regions.region_job(found)
        if not _start(job, user, status, lambda: _warm(user, job, status)):
            return False
        name = self.bound(f"native_straight_{len(self.native_regions)}", user)
        asarray = self.bound("asarray")         # a 0-d value may be a NumPy scalar: the kernel reads arrays
        args = ", ".join(f"{asarray}({self.value(v)})" if v.ndim == 0 else self.value(v) for v in found.args)
        result = self.temp("native_result")
        self.emit(indent, f"{result} = {name}.run({args})", ops[0])
        self.emit(indent, f"if {result} is None:", ops[0])
        began, clock = self.temp("numpy_began"), self.bound("perf_counter", perf_counter)
        self.emit(indent + 1, f"{began} = {clock}()")
        args_dead = []
        self.in_fallback += 1
        try:
            for op, gone in zip(ops, dead):
                self.any_op(op, indent + 1)
                mine = [v for v in gone if any(v is o for o2 in ops for o in o2.outputs)]
                args_dead += [v for v in gone if not any(v is m for m in mine)]
                if mine:
                    self.emit(indent + 1, "del " + ", ".join(self.name(v) for v in mine))
        finally:
            self.in_fallback -= 1
        self.emit(indent + 1, f"{name}.numpy_took({began})")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{', '.join(names)} = {result}", ops[-1])      # one output, or a tuple
        self.emit(indent, f"del {result}")
        if args_dead:
            self.emit(indent, "del " + ", ".join(self.name(v) for v in args_dead))
        return True

    def _maybe_strided(self, args, block):
        """Whether an argument of a straight run is made in `block` by an op whose result may be a strided
        view (a NumPy view-like op, or one with no native form: `permute_dims` of 4 dims, `moveaxis`): the
        run's call then retries with contiguous copies (the copy NumPy's reshape of it makes anyway)."""
        made = {id(o): op for op in (block.ops if block is not None else ()) for o in op.outputs}
        for v in args:
            op = made.get(id(v))
            if op is not None and (native_form(op) or ("",))[0] in _VIEWS + ("",):
                return True
        return False

    def while_(self, op, indent):
        """A loop as one native call, its NumPy loop run where the call returns None (still compiling,
        or the native code declined: the NumPy loop raises what NumPy raises)."""
        if self.in_fallback:
            return super().while_(op, indent)
        found = self._analysed(op, regions.analyse)
        self.in_loop += 1
        try:
            self._region(op, found, "while", indent, super().while_, counts_iterations=True)
        finally:
            self.in_loop -= 1

    def if_else(self, op, pred, tb, fb, indent):
        """A cond outside loops as one native call (its chosen branch), its Python if/else run where the
        call returns None."""
        plain = super().if_else
        if self.in_fallback or self.in_loop:
            return plain(op, pred, tb, fb, indent)
        found = self._analysed(op, regions.analyse_cond)
        self._region(op, found, "cond", indent, lambda o, at: plain(o, pred, tb, fb, at), counts_iterations=False)

    def _analysed(self, op, analyse):
        """`analyse(op)` (a Region, or why not), or for a region with dynamic dims a PerShape: analysed
        and compiled for each call's dims (`dynamic.py`), or why it cannot be native for any."""
        if not self.numpy:
            return "not on NumPy"
        if not dynamic.has_dynamic_dims(op):
            return analyse(op)
        why = dynamic.why_never_native(op)
        return why or PerShape(op, regions.distinct_inputs(op), analyse)

    def _region(self, op, found, label, indent, numpy_code, counts_iterations):
        """Op as a call of its native region `found` (or its NumPy code, `numpy_code(op, indent)`, where
        found says why not), the NumPy code kept for calls the region returns None."""
        outs = [self.name(o) for o in op.outputs]
        status = [f"{label} -> {', '.join(outs)}", found if isinstance(found, str) else "compiling"]
        self.native_regions.append(status)
        if isinstance(found, str):
            _count(found)
            return numpy_code(op, indent)
        if isinstance(found, PerShape):
            loop = DynamicLoop(op, found, status)
        else:
            loop = NativeLoop(op, found, status)
            job = regions.region_job(found)
            if not _start(job, loop, status, lambda: _warm(loop, job, status)):
                return numpy_code(op, indent)
        name = self.bound(f"native_{label}_{len(self.native_regions)}", loop)
        args = ", ".join(self.value(v) for v in found.args)
        budget = "-1"
        if self.max_iterations is not None and counts_iterations:   # the call's loops share one budget
            if self.iterations is None:
                self.iterations = self.temp("iterations")
            budget = f"{self.max_iterations} - {self.iterations}"
        result, ran = self.temp("native_result"), self.temp("native_iterations")
        self.emit(indent, f"{result} = {name}.run({budget}, {args})", op)
        self.emit(indent, f"if {result} is None:", op)
        began, clock = self.temp("numpy_began"), self.bound("perf_counter", perf_counter)
        self.emit(indent + 1, f"{began} = {clock}()")          # the region's trial times the NumPy code
        self.in_fallback += 1
        try:
            numpy_code(op, indent + 1)
        finally:
            self.in_fallback -= 1
        self.emit(indent + 1, f"{name}.numpy_took({began})")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{', '.join(outs)}, {ran} = {result}", op)
        if self.max_iterations is not None and counts_iterations:
            self.emit(indent + 1, f"{self.iterations} += {ran}")

    def op(self, op, indent):
        """A stacked matmul by one matrix (a recurrent layer's hoisted `linear`) as one BLAS call where
        its self-test passes (`products.py`); a 2-D `linear` (and the ReLU after it) as the native GEMM
        (`gemm.py`); the plan's own line where the call returns None."""
        if id(op) in self.relu_done:        # the GEMM before applied it, into the same buffer
            self.emit(indent, f"{self.name(op.outputs[0])} = {self.relu_done[id(op)]}", op)
            return
        form = native_form(op) if self.numpy and not self.in_fallback and len(op.outputs) == 1 else None
        if form is not None and form[0] == "matmul" and form[3] and form[1].ndim == 2:
            return self._gemm(op, form, indent)
        found = products.analyse(form, op.outputs[0]) if form is not None and form[0] == "matmul" else None
        if found is None or isinstance(found, str):
            return super().op(op, indent)
        out = self.name(op.outputs[0])
        status = [out, "compiling"]
        self.native_regions.append(status)
        product = products.FlatProduct(found, form[1].static_shape, op.outputs[0].static_shape, status)
        job = products.product_job(found)
        if not _start(job, product, status, lambda: _warm(product, job, status)):
            return super().op(op, indent)
        name = self.bound(f"native_product_{len(self.native_regions)}", product)
        operands = [form[1], form[2]] + ([form[4]] if form[4] is not None else [])
        result = self.temp("native_result")         # out may name an operand (loop state)
        self.emit(indent, f"{result} = {name}.run({', '.join(self.value(v) for v in operands)})", op)
        self.emit(indent, f"if {result} is None:", op)
        began, clock = self.temp("numpy_began"), self.bound("perf_counter", perf_counter)
        self.emit(indent + 1, f"{began} = {clock}()")          # timed while the product warms
        super().op(op, indent + 1)
        self.emit(indent + 1, f"{name}.numpy_took({began})")
        self.emit(indent, "else:", op)
        self.emit(indent + 1, f"{out} = {result}", op)
        self.emit(indent + 1, f"del {result}")

    def _gemm(self, op, form, indent):
        """A 2-D `linear` as one call of the native GEMM, with the bias and (where the ReLU is its only
        reader) the ReLU applied to each tile before it is stored; the NumPy lines where it returns None."""
        out = op.outputs[0]
        relu = self._relu_after(op)
        found = gemm.analyse(form, out, relu is not None)
        name = self.name(out)
        status = [name, found if isinstance(found, str) else "compiling"]
        self.native_regions.append(status)
        if isinstance(found, str):
            _count(found)
            return super().op(op, indent)
        rows = form[1].static_shape[0]
        product = gemm.NativeGemm(found, rows if rows > 0 else None, status)
        job = gemm.check_job(found, product.m)
        if not _start(job, product, status, lambda: _warm(product, job, status)):
            return super().op(op, indent)
        if relu is not None:
            self.relu_done[id(relu)] = name
        call = self.bound(f"native_gemm_{len(self.native_regions)}", product)
        operands = [form[1], form[2]] + ([form[4]] if form[4] is not None else [])
        self.emit(indent, f"{name} = {call}.run({', '.join(self.value(v) for v in operands)})", op)
        self.emit(indent, f"if {name} is None:", op)
        began, clock = self.temp("numpy_began"), self.bound("perf_counter", perf_counter)
        self.emit(indent + 1, f"{began} = {clock}()")          # timed while the GEMM warms
        super().op(op, indent + 1)
        if relu is not None:
            self.emit(indent + 1, f"{name} = {self.bound('maximum')}({name}, 0, out={name})", op)
        self.emit(indent + 1, f"{call}.numpy_took({began})")

    def _relu_after(self, op):
        """The op after `op` in its block when it is maximum(op's result, +0) and the only reader of it."""
        out = op.outputs[0]
        ops = op.block.ops if op.block is not None else []
        at = next((j for j, o in enumerate(ops) if o is op), None)
        if at is None or at + 1 >= len(ops) or self.readers.get(id(out), []) != [ops[at + 1]]:
            return None
        after = ops[at + 1]
        form = native_form(after)
        if (form is None or form[0] != "chain" or len(form[2]) != 1 or form[2][0] is not out
                or len(after.outputs) != 1):
            return None
        steps = form[1]
        if len(steps) != 1 or steps[0][0] != "maximum" or len(steps[0]) != 3:
            return None
        arg, zero = steps[0][1], steps[0][2]
        if arg != {"in": 0} or type(zero) not in (int, float) or zero != 0 or np.signbit(zero):
            return None
        result = after.outputs[0]
        if np.dtype(result.dtype) != np.dtype(out.dtype) or tuple(result.static_shape) != tuple(out.static_shape):
            return None
        return after

    def _why_not(self, op, steps):
        if not self.numpy:
            return "not on NumPy"
        if len(steps) < 2:
            return "one step (already one NumPy call)"
        out = op.outputs[0]
        if out.ndim == 0:
            return "0-d result (NumPy scalars are cheaper)"
        if not all(isinstance(v, Variable) and v.kind == "dense" for v in op.inputs):
            return "an input is not a dense array"
        return ""

    def _donated(self, op):
        into = op.attrs.get("into")
        if into is None or self.donations.get(id(op)) != into:
            return None
        v, out = op.inputs[into], op.outputs[0]
        if (tuple(v.static_shape) != tuple(out.static_shape) or -1 in tuple(out.static_shape)
                or np.dtype(v.dtype) != np.dtype(out.dtype)):
            return None
        return into


_STRAIGHT_FORMS = ("chain", "matmul", "view", "index", "split", "select", "argmax", "argmin", "reduce",
                   "reduce_rows", "reduce_first", "softmax", "layer_norm", "topk", "rows", "cast", "transpose")
def _taken(form, op, readers):
    """Whether region analysis takes the op of this form (so a run it joins is not refused for it): a cast
    of one instruction, a transpose only products read as their first operand (not `x.T @ x`), a layer_norm
    over rows it sums inline, a first-axis reduction by add, multiply, maximum or minimum."""
    kind, x = form[0], form[1] if form[0] != "reduce_first" else form[2]
    if kind == "cast":
        return np.dtype(x.dtype) == np.dtype(form[2]) or elementwise._castable(np.dtype(x.dtype), np.dtype(form[2]))
    if kind == "transpose":
        out = op.outputs[0]
        return bool(readers) and all(r is not None and (native_form(r) or ("",))[0] == "matmul" and r.inputs[0] is out
                                     and r.inputs[1] is not x and r.inputs[1] is not out for r in readers)
    if kind == "layer_norm":
        return x.static_shape[-1] <= MAX_INLINE_SUM and np.dtype(x.dtype) in (np.dtype("float32"), np.dtype("float64"))
    return form[1] in ("add", "multiply", "maximum", "minimum")


def _worth_a_call(form):
    """Whether a run holding an op of this form is worth a native call: a softmax or layer_norm (NumPy's
    calls over short rows), or a 2-D product (or a stack of rows) NumPy makes with BLAS. A stack of
    matrices is only where one call of all its rows is known not to give NumPy's bits (a small one is
    checked here, ~0.1 ms: R6's (32, 8, 64) @ W.T); else `products.py` makes it one call (R4's hoisted
    product), which a run, calling NumPy's product per item, would not."""
    if form[0] in ("softmax", "layer_norm"):
        return True
    if form[0] != "matmul" or form[1].ndim < 2:
        return False
    a = form[1]
    if a.ndim == 2 or a.static_shape[1] == 1:
        return True
    key = products.analyse(form, SimpleNamespace(static_shape=a.static_shape[:-1] + (form[2].static_shape[
        0 if form[3] else 1],), dtype=a.dtype)) if form[2].ndim == 2 else "not a stack"
    if isinstance(key, str) or math.prod(key[1:5]) > _CHECKED_AT_BUILD:
        return False
    known = flat_product_known(*key)
    return bool(known if known is not None else flat_product_check(*key))


_CHECKED_AT_BUILD = 1 << 20      # multiply-adds of a stacked product whose one-call check a plan build runs

_VIEWS = ("view", "index", "split", "transpose")   # NumPy's views: the plan's own where read after a straight run


def chain_call(kernel, op, steps, donated):
    """The plan's function for one native chain: the result array, or None where the kernel declines (the
    plan's NumPy chain then computes it, or raises NumPy's error with the user's line)."""
    cfunc = kernel.cfunc
    shape = tuple(op.outputs[0].static_shape)
    dtype = np.dtype(op.outputs[0].dtype)
    empty, broadcast = np.empty, np.broadcast

    def declined(arrays):
        kernel.declined += 1
        with _STATS_LOCK:
            _STATS["declined_calls"] += 1

    if donated is not None:
        def run(*arrays):
            if cfunc(arrays[donated], *arrays):
                return declined(arrays)
            return arrays[donated]
    elif -1 not in shape:
        def run(*arrays):
            out = empty(shape, dtype)
            if cfunc(out, *arrays):
                return declined(arrays)
            return out
    else:
        def run(*arrays):
            try:
                out = empty(broadcast(*arrays).shape, dtype)
            except ValueError:
                return declined(arrays)
            if cfunc(out, *arrays):
                return declined(arrays)
            return out
    return run


def _start(job, user, status, defer):
    """Give `user` (a chain or a loop) its kernel now where one is compiled (in this process or on disk) or may
    be compiled here (DY2STATIC_NATIVE=sync), else `defer()` it; False when the region cannot be native."""
    kernel = job.cached()
    if kernel is None and not compiler.in_background():
        kernel = job()
    if kernel is None:
        defer()
    else:
        user.use(kernel)
        _count("" if status[1] == "native" else status[1], kernel=kernel)
    return status[1] in ("native", "compiling", "warming")


def _queue(job, user, status, warming=0):
    """Compile in the background; the kernel is swapped into `user` when it is ready (no caller waits)."""
    status[1] = "compiling"
    _count("compiling", warming=warming)
    compiler.submit(job, lambda kernel: (user.use(kernel),
                                         _count("" if status[1] == "native" else status[1], pending=1,
                                                kernel=kernel)))


def _warm(user, job, status):
    """A chain, loop, cond or product new to the process: its NumPy code runs, timed by the plan (`numpy_took`),
    until it has run tiering.threshold() seconds; then queued (at once where the threshold is 0)."""
    seconds = tiering.threshold()
    if seconds <= 0:
        _queue(job, user, status)
        return
    status[1] = "warming"
    _count("warming")
    user.warm = tiering.meter(seconds, lambda: _queue(job, user, status, warming=1), user.warm_times)


def _queue_split(job, chain, status, warming=0):
    """`_queue` a piece at a time (`job.step`): each is one turn of the compiler thread, so a region queued
    meanwhile compiles between two pieces instead of after the whole chain."""
    status[1] = "compiling"
    _count("compiling", warming=warming)

    def turn(result):
        if result is None:          # pieces remain: the next one queued behind what came meanwhile
            compiler.submit(job.step, turn)
            return
        chain.use(result)
        _count("" if status[1] == "native" else status[1], pending=1, kernel=result)

    compiler.submit(job.step, turn)


def _warm_split(chain, job, status, steps):
    """A split chain new to the process: warming as `_warm` has it, its threshold a chain's times the
    pieces it compiles; once its NumPy time has also paid for a probe (`pieces.probe_seconds`: planning
    the pieces, which a first call never pays), the compiler thread asks whether they are compiled
    already (this process, the disk: `job.probe`, no LLVM) and swaps them in where they all are."""
    seconds = tiering.threshold() * pieces.estimated_pieces(steps)
    if seconds <= 0:
        chain.start()
        _queue_split(job, chain, status)
        return
    status[1] = "warming"
    _count("warming")
    compile_meter = tiering.meter(seconds, lambda: chain.start() and _queue_split(job, chain, status, warming=1),
                                  chain.warm_times)

    def found(kernel):
        if kernel is not None and chain.start():
            chain.use(kernel)
            _count("" if status[1] == "native" else status[1], warming=1, kernel=kernel)

    probe_meter = tiering.meter(pieces.probe_seconds(steps), lambda: compiler.submit(job.probe, found))

    def warm(took):
        probe_meter(took)
        compile_meter(took)
    chain.warm = warm


class NativeLoop(tiering.Warming):
    """A plan's call of one native loop: `run(budget, *args)` is None (run the NumPy loop) until the
    kernel is ready, then the outputs and the iterations run, or None where the kernel declines."""

    def __init__(self, op, region, status):
        super().__init__()
        self.op, self.region, self.status = op, region, status
        self.run = lambda budget, *args: None

    def use(self, kernel):
        """Swap in the kernel (or record why not), on trial against the plan's NumPy code (`tiering.judged`:
        the plan times that code where `run` returns None and reports it by `numpy_took`; the times taken
        while warming count)."""
        self.warm = None
        if isinstance(kernel, str):
            self.status[1] = kernel
            return
        native = self.native_call(kernel)
        self.numpy_times = list(self.warm_times)
        self.run = tiering.judged(native, lambda budget, *args: None, self.numpy_times,
                                  lambda faster: self._settle(native if faster else None), numpy_timed=False)
        self.status[1] = "native"

    def native_call(self, kernel):
        return loop_call(kernel, self.op, self.region)

    def _settle(self, native):
        """The trial's verdict: the kernel for good, or (None) the plan's NumPy code for good."""
        self.numpy_times = None
        if native is not None:
            self.run = native
            return
        self.run = lambda *args: None
        self.status[1] = SLOWER
        _count(SLOWER, was_native=1)


class NativeStraight(NativeLoop):
    """A plan's call of a straight run of ops (`region.analyse_straight`): `run(*args)` is None (the plan
    runs the ops' NumPy code) until the kernel is ready, then the kernel's Python entry itself (a builtin:
    the output, a tuple of outputs, or None where it declines)."""

    def __init__(self, region, status, retry=False):
        super().__init__(region.op, region, status)
        self.run = _on_numpy
        self.kernel = None
        self.retry = retry          # an argument may be a strided view: declined calls retry with copies
        self.entry = None           # what `run` is once the kernel is in (its builtin, or that with the retry)

    def native_call(self, kernel):
        self.kernel = kernel
        if not self.retry:
            self.entry = kernel.fast
            return self.entry
        fast, contiguous = kernel.fast, np.ascontiguousarray

        def call(*args):
            result = fast(*args)
            if result is None:
                result = fast(*[contiguous(a) for a in args])
            return result
        self.entry = call
        return call

    def numpy_took(self, began):
        super().numpy_took(began)
        if self.run is self.entry and self.entry is not None:     # settled native: the kernel declined this call
            self.kernel.declined += 1
            with _STATS_LOCK:
                _STATS["declined_calls"] += 1


class PerShape:
    """What analysis says of a region with dynamic dims: analyse (`region.analyse` or `analyse_cond`)
    and compile it for each call's dims (`DynamicLoop`); `args` are the region's arguments."""

    def __init__(self, op, args, analyse):
        self.op, self.args, self.analyse = op, args, analyse


PER_SHAPE = "dynamic dims: compiled for each call's dims at its first call"
MAX_SHAPES = 8          # kernels one region compiles for distinct dims; calls of further dims run on NumPy


class DynamicLoop:
    """A plan's call of a region with dynamic dims: one `NativeLoop` per distinct set of the arguments'
    dims (`dynamic.specialize` makes the region static for them; analysed, compiled or found on disk the
    first time those dims come), `run` None (the plan's NumPy code) where they cannot be native.
    `shapes` maps the dims (the dynamic arguments' shapes) to [label, 'native', 'compiling' or why not]."""

    def __init__(self, op, found, status):
        self.op, self.found, self.status = op, found, status
        args = found.args
        self.dims_at = [j for j, v in enumerate(args) if v.kind != "array" and min(v.static_shape, default=0) < 0]
        self.items_at = [j for j, v in enumerate(args) if v.kind == "array" and min(v.static_shape, default=0) < 0]
        self.loops, self.shapes = {}, {}
        self.overflowed = False         # a call came with dims beyond the first MAX_SHAPES
        self.lock = threading.Lock()
        self.last = _ON_NUMPY       # the loop of the last call, whose NumPy code the plan times (threads calling
        #                             at once may time another dims' NumPy code: a trial's verdict, never bits)
        status[1] = PER_SHAPE

    def run(self, budget, *args):
        try:
            key = (tuple(args[j].shape for j in self.dims_at)
                   + tuple(_items_shape(args[j]) for j in self.items_at))
        except Exception:       # noqa: BLE001 - not an array (an unbound name's marker raises): the NumPy code says what is wrong
            return None
        loop = self.loops.get(key)
        if loop is None:
            loop = self._specialized(key)
        self.last = loop
        return loop.run(budget, *args)

    def numpy_took(self, began):
        self.last.numpy_took(began)

    def _specialized(self, key):
        with self.lock:
            loop = self.loops.get(key)
            if loop is None and len(self.loops) >= MAX_SHAPES:     # not kept: a stream of sizes grows nothing
                if not self.overflowed:
                    self.overflowed = True
                    why = f"dynamic dims: more than {MAX_SHAPES} distinct shapes (the others run on NumPy)"
                    _count(why)
                    if self.status[1] != "native":
                        self.status[1] = why
                return _ON_NUMPY
            if loop is None:
                status = [f"{self.status[0]} {[list(s) if s is not None else None for s in key]}", "compiling"]
                self.shapes[key] = status
                loop = self.loops[key] = self._loop(key, status)
                self.summarize()
            return loop

    def _loop(self, key, status):
        """The NativeLoop of the region made static for the dims `key` (an _OnNumPy where it cannot be)."""
        given = dict(zip(self.dims_at + self.items_at, key))
        shapes = [given.get(j, v.static_shape) for j, v in enumerate(self.found.args)]
        static = dynamic.specialize(self.op, self.found.args, shapes)
        region = static if isinstance(static, str) else self.found.analyse(static)
        if isinstance(region, str):
            status[1] = region
            _count(region)
            return _ON_NUMPY
        loop = _ShapeLoop(static, region, status, self)
        job = regions.region_job(region)
        if not _start(job, loop, status, lambda: _warm(loop, job, status)):
            return _ON_NUMPY
        return loop

    def summarize(self):
        """The region's status: 'native' where the kernel of any dims is, else what the last dims say."""
        found = [s[1] for s in self.shapes.values()]
        for state in ("native", "compiling"):
            if state in found:
                self.status[1] = state
                return
        self.status[1] = found[-1] if found else PER_SHAPE


class _OnNumPy:
    """The dims of a call that run on NumPy: the plan's NumPy code each time."""

    def run(self, budget, *args):
        return None

    def numpy_took(self, began):
        pass


_ON_NUMPY = _OnNumPy()


def _items_shape(items):
    """The shape of a tensor array's items (its element shape), None for an empty array."""
    return items[0].shape if type(items) is list and items and hasattr(items[0], "shape") else None


class _ShapeLoop(NativeLoop):
    """A NativeLoop of one set of dims of a DynamicLoop, which it tells when its kernel is swapped in or out."""

    def __init__(self, op, region, status, owner):
        super().__init__(op, region, status)
        self.owner = owner

    def use(self, kernel):
        super().use(kernel)
        self.owner.summarize()

    def _settle(self, native):
        super()._settle(native)
        self.owner.summarize()


def _contiguous(value):
    value = np.asarray(value)
    return value if value.ndim == 0 else np.ascontiguousarray(value)


def loop_call(kernel, op, region):
    """The plan's function for one native loop: fresh outputs and scratch (and a buffer for each tensor
    array the loop appends to, grown and run again when it fills; the items of one it only reads as rows
    of one array), the kernel, None where it declines."""
    cfunc = kernel.fast or kernel.cfunc         # the builtin entry: no ctypes marshalling
    arrays = region.arrays
    dense = [k for k in range(len(op.outputs)) if k not in arrays]
    specs = [(tuple(op.outputs[k].static_shape), np.dtype(op.outputs[k].dtype)) for k in dense]
    items_at = [next(j for j, v in enumerate(region.args) if v is op.inputs[k]) for k in arrays]
    elements = [((tuple(op.outputs[k].static_shape)), np.dtype(op.outputs[k].dtype)) for k in arrays]
    read_at = [j for j, v in enumerate(region.args) if v.kind == "array" and j not in items_at]   # only read
    read_elements = [(tuple(region.args[j].static_shape), np.dtype(region.args[j].dtype)) for j in read_at]
    capacity = [16] * len(arrays)           # grows to what the loop needed, for the next calls
    numbers = [k for k, v in enumerate(region.args) if v.kind == "dense" and v.ndim == 0]
    scratch = max(kernel.scratch_bytes, 1)
    empty, zeros, uint8, int64, ndarray, asarray = np.empty, np.zeros, np.uint8, np.int64, np.ndarray, np.asarray

    def declined():
        kernel.declined += 1
        with _STATS_LOCK:
            _STATS["declined_calls"] += 1

    def run(budget, *args):
        if numbers or arrays or read_at:
            args = list(args)
        if numbers:         # a 0-d value may be a NumPy scalar (or a name the loop never bound): the kernel reads arrays
            try:
                for k in numbers:
                    if type(args[k]) is not ndarray:
                        args[k] = asarray(args[k])
            except Exception:       # noqa: BLE001 - the NumPy loop raises what NumPy raises
                return declined()
        lists = [args[at] for at in items_at]
        if any(type(items) is not list for items in lists):
            return declined()
        for at, (shape, dtype) in zip(read_at, read_elements):     # its items as rows of one array
            items = args[at]
            if type(items) is not list:
                return declined()
            args[at] = empty((len(items),) + shape, dtype)
            try:
                if items:
                    args[at][...] = items
            except Exception:       # noqa: BLE001 - items of another shape: the NumPy loop says what is wrong
                return declined()
        counts = zeros(max(len(arrays), 1), int64)
        while True:
            stores = []
            for j, (at, items) in enumerate(zip(items_at, lists)):
                shape, dtype = elements[j]
                store = empty((max(capacity[j], 2 * len(items)),) + shape, dtype)
                try:
                    if items:
                        store[:len(items)] = items
                except Exception:       # noqa: BLE001 - items of another shape: the NumPy loop says what is wrong
                    return declined()
                counts[j] = len(items)
                args[at] = store
                stores.append(store)
            outs = [empty(shape, dtype) for shape, dtype in specs]
            rc = cfunc(budget, *args, *outs, counts, empty(scratch, uint8))
            if rc == regions.BAD_ARGUMENT:      # a strided or offset argument: once more with contiguous copies
                try:
                    args = [_contiguous(a) for a in args]
                except Exception:       # noqa: BLE001 - not an array: the NumPy loop says what is wrong
                    return declined()
                rc = cfunc(budget, *args, *outs, counts, empty(scratch, uint8))
            if rc != regions.ARRAY_FULL:
                break
            capacity[:] = [2 * len(store) for store in stores]
        if rc < 0:
            kernel.last_code = rc       # why, for a reader of the kernel (tests)
            return declined()
        found = [None] * len(op.outputs)
        for k, o in zip(dense, outs):
            found[k] = o if o.ndim else o[()]
        for j, k in enumerate(arrays):      # the NumPy plan's append grows the list in place
            lists[j].extend(stores[j][len(lists[j]):counts[j]])
            found[k] = lists[j]
        found.append(rc)
        return found
    return run


def compile_native_plan(program, backend, max_iterations=None, fast_math=False):
    """A Plan as `codegen.plan.compile_plan` makes it, its fused chains native where they compile
    (with `fast_math`, float32 exp and tanh approximated); `plan.native_regions` lists (result name,
    'native' or why it stayed on NumPy)."""
    made = []

    def codegen(*args):
        made.append(NativePlanCodegen(*args))
        made[-1].fast_math = fast_math
        return made[-1]

    plan = compile_plan(program, backend, max_iterations, codegen)
    plan.native_regions = made[0].native_regions
    return plan
