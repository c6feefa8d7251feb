"""A region `analyse` accepted (`region.py`) as one LLVM function.

    rc = kernel(budget, arg0, ..., out0, ..., counts, scratch)  # PyObject* ndarrays; rc >= 0: iterations run

`LoopEmitter(region).build()` writes the function and compiles it to a `RegionKernel`. In the function:

- every value has a static shape and one contiguous buffer: the loop state, each op's result and
  each chain step's value in the caller's `scratch` array (offsets fixed at compile time), 0-d
  values in stack slots (registers, after LLVM's mem2reg); arguments are read in place, never written;
- the state starts as a copy of the loop's inputs and is copied to fresh outputs at the end, so
  no array the caller holds is written and none the caller gets back is shared;
- the test is inline; per iteration the body's results are copied into the state (a result that
  is, or views, a state buffer first into a staging buffer: all positions change at once);
- ufunc chains are `elementwise`'s steps (inline IEEE operations or NumPy's strided loops) over the
  whole value, as the NumPy plan calls them; matmul is the BLAS call NumPy makes (`blas.py`); a whole
  float sum, max or min is NumPy's loop in reduce form (`reductions.py`); `x[i, a:b]` is a view where
  NumPy's is contiguous, else a copy; argmax, all/any, where, split, embedding rows are inline;
- what the NumPy plan would raise is a negative return code instead, and the caller runs the loop
  on NumPy from its start (nothing outside the function's own buffers was written): -1 an index out
  of range, -2 the iteration budget (`max_iterations`) spent, -3 a NumPy loop failed, -4 an argument
  not of the type, shape or layout compiled for (the caller retries once with contiguous copies), -5 a
  tensor array's buffer full (the caller runs it again with a larger one);
- a tensor array the loop carries and only appends to is a buffer (capacity, element shape) the caller
  passes with its items so far; the count goes back in `counts`, and the caller appends the new items
  to the list (the NumPy plan's `append` grows the list in place); a nested loop carrying it appends to
  the same buffer and count; one the loop only reads comes as its items' rows (the count: its first dim).
"""
import ctypes
import hashlib
import math

import numpy as np

from ..ir import Variable
from ..ops.regions import region_of
from . import elementwise as ew
from . import gemv, objects, relocations
from .blas import COL_MAJOR, NO_TRANS, ROW_MAJOR, TRANS, copied_transpose_call
from .llvm import ARRAY_LAYOUT, engine

INDEX_ERROR, BUDGET_SPENT, LOOP_FAILED, BAD_ARGUMENT, ARRAY_FULL = -1, -2, -3, -4, -5
ALIGN = 64
STACK_SCRATCH = 1 << 16     # a straight run's scratch up to this many bytes is on its entry's stack



class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


METH_FASTCALL = 0x80


def builtin(address, name):
    """A Python builtin function calling the METH_FASTCALL C function at address (`straight_entry`), and
    what must stay alive with it (its PyMethodDef)."""
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    definition = _MethodDef(name.encode(), address, METH_FASTCALL, None)
    return new(ctypes.addressof(definition), None, None), definition


class RegionKernel:
    """A compiled region: `cfunc(budget, *args, *outs, counts, scratch)` and the same as `fast(budget, ...)`
    (`LoopEmitter.loop_entry`: a builtin, no ctypes), or for a straight run only its Python entry
    `fast(*args)` (`LoopEmitter.straight_entry`); keeps what its code points into."""

    def __init__(self, address, n_args, n_outs, scratch_bytes, keep, fast=None, straight=False):
        # CFUNCTYPE: the GIL is released while the loop runs (it calls no Python: NumPy loops that need
        # the Python API are never used, BLAS needs none; the caller's arguments hold the arrays alive)
        self.cfunc = None if straight else ctypes.CFUNCTYPE(
            ctypes.c_int64, ctypes.c_int64, *[ctypes.py_object] * (n_args + n_outs + 2))(address)
        self.fast = fast            # the Python entry: a straight run's `fast(*args)`, a loop's `fast(budget, ...)`
        self.scratch_bytes, self.keep = scratch_bytes, keep
        self.declined = 0           # calls handed back to the NumPy loop (an error to raise, a budget spent)
        self.saved = None           # (meta, object code, shared library) for the disk cache, None: not kept
        self.from_disk = False


def load_kernel(meta, obj, shared, keep=()):
    """A RegionKernel of object code (`LoopEmitter.build`, or the disk cache): loaded, its address table
    filled with this process's addresses (`relocations.py`); or a string saying why it cannot run here."""
    name = meta["name"]
    for shape in meta.get("copied_transposes", ()):      # the gemm on a copy of b.T gives NumPy's bits here too
        why = copied_transpose_call(*shape)
        if isinstance(why, str):
            return why
    gemvs = [f"{name}_{gemv.function_name(k, n, kind)}" for kind, k, n in meta.get("gemvs", ())]
    entry = [meta["fast"]] if meta.get("fast") else []
    loaded = objects.load(obj, shared, [name, name + "_table"] + gemvs + entry)
    if loaded is None:
        return "the compiled loop could not be loaded"
    addresses, holder = loaded
    for fn_name, (kind, k, n) in zip(gemvs, meta.get("gemvs", ())):    # OpenBLAS's order of sums, here
        why = gemv.test_function(addresses[fn_name], k, n, kind)
        if why:
            return why
    kept = relocations.install(addresses[name + "_table"], meta["relocations"])
    if isinstance(kept, str):
        return kept
    fast = builtin(addresses[entry[0]], entry[0]) if entry else (None, None)
    kernel = RegionKernel(addresses[name], meta["n_args"], meta["n_outs"], meta["scratch_bytes"],
                          list(keep) + kept + [holder, fast[1]], fast[0], meta.get("kind") == "straight")
    kernel.copied_transposes = len(meta.get("copied_transposes", ()))     # weights multiplied through a copy of .T
    kernel.inline_gemvs = len(meta.get("gemvs", ()))        # vector @ matrix products inline (gemv.py)
    return kernel


def _all_inline(plan):
    """Whether every step of a chain's plan is an inline IEEE operation (no NumPy loop, no approximation)."""
    return all(st["inline"] is True for st in plan["steps"])


class _Val:
    """A value in the function: a typed pointer to its elements, its dtype and shape, and the loop
    state it is (or views), if any."""

    def __init__(self, ptr, dtype, shape, state=None):
        self.ptr, self.dtype, self.shape, self.state = ptr, np.dtype(dtype), tuple(shape), state
        self.size = math.prod(self.shape)


class LoopEmitter:
    """Writes one region's LLVM function: values, forms, the loop; `build()` compiles it."""

    def __init__(self, region):
        import llvmlite.ir as ir
        self.ir, self.region = ir, region
        self.eng = engine()
        self.i1, self.i8, self.i32, self.i64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
        self.p8 = ir.PointerType(self.i8)
        # named by the region: the same code in every process, and apart from any other loop's (dlopen)
        self.name = "loop_" + hashlib.sha256(repr(region.key).encode()).hexdigest()[:24]
        self.module = ir.Module(name=self.name)
        self.module.triple = self.eng.target_machine.triple
        self.scratch_bytes = 0
        self.keep = []
        self.env = {}
        self.constants = 0
        self.invariant = set()      # ids of the arguments: read in place, the same in every iteration
        self.copies = {}            # id(b) -> (its transposed copy, the slot saying how far it is made)
        self.copied_shapes = []     # [dtype, m, k, n] of each copied-transpose gemm: checked again at load
        self.gemvs = []             # [kind, k, n] of each inline sgemv (gemv.py): its function exported, tested at load
        self.relocations = []       # descriptors of the process addresses the code reads from its table
        self.direct = {}            # id(output var) -> its output array's data (a straight run computes into it)
        self.fast_entry = None      # the name of the kernel's Python entry (a METH_FASTCALL function), if any
        self.aligned = {}           # id(matrix argument) -> its data at a 64-byte boundary (`aligned_matrix`)
        self.repeats = 0            # > 0 while emitting code that runs more than once a call (a loop's)
        self.summed = {id(form[4]) for form in region.forms.values()       # chains their sum computes
                       if form[0] == "reduce_rows" and len(form) > 4 and form[3] and form[4] is not None}

    # --- small helpers
    def c64(self, v):
        return self.ir.Constant(self.i64, int(v))

    def ltype(self, dtype):
        return ew._ltype(self.ir, dtype)

    def new_block(self, name):
        return self.fn.append_basic_block(name)

    def entry_alloca(self, ty):
        b = self.b
        with b.goto_block(self.entry):
            b.position_at_start(self.entry)
            slot = b.alloca(ty)
        return slot

    def alloc(self, dtype, shape, state=None):
        """A fresh value's storage: a stack slot (0-d) or a scratch buffer."""
        dtype = np.dtype(dtype)
        ty = self.ltype(dtype)
        if len(shape) == 0:
            return _Val(self.entry_alloca(ty), dtype, shape, state)
        nbytes = math.prod(shape) * dtype.itemsize
        offset = self.scratch_bytes
        self.scratch_bytes += (nbytes + ALIGN - 1) // ALIGN * ALIGN
        ptr = self.b.bitcast(self.b.gep(self.scratch, [self.c64(offset)]), self.ir.PointerType(ty))
        return _Val(ptr, dtype, shape, state)

    def fresh(self, var):
        """A new buffer (or stack slot) for var's value, bound as var's: its output array's memory for
        a straight run's output (`direct`)."""
        if id(var) in self.direct:
            out = self.env[id(var)] = _Val(self.direct[id(var)], var.dtype, var.static_shape)
            return out
        out = self.env[id(var)] = self.alloc(var.dtype, var.static_shape)
        return out

    def memcpy(self):
        """LLVM's memcpy intrinsic, declared in this module."""
        return self.module.declare_intrinsic("llvm.memcpy", [self.p8, self.p8, self.i64])

    def constant(self, value, dtype):
        """A 0-d value holding a number as NumPy converts it to dtype."""
        dtype = np.dtype(dtype)
        val = self.alloc(dtype, ())
        number = np.asarray(value).astype(dtype).item()
        self.b.store(self.ir.Constant(self.ltype(dtype), int(number) if dtype.kind in "biu" else number), val.ptr)
        return val

    def value(self, x, like):
        if isinstance(x, Variable):
            return self.env[id(x)]
        return self.constant(x, like.dtype)

    def copy(self, dst, src):
        if dst.size == 0:
            return
        if not dst.shape:
            self.b.store(self.b.load(src.ptr), dst.ptr)
            return
        memcpy = self.memcpy()
        self.b.call(memcpy, [self.b.bitcast(dst.ptr, self.p8), self.b.bitcast(src.ptr, self.p8),
                             self.c64(dst.size * dst.dtype.itemsize), self.ir.Constant(self.i1, 0)])

    def align_up(self, ptr):
        """ptr rounded up to the next ALIGN-byte boundary (an i8*)."""
        b = self.b
        at = b.ptrtoint(ptr, self.i64)
        return b.inttoptr(b.and_(b.add(at, self.c64(ALIGN - 1)), self.c64(-ALIGN)), self.p8)

    def aligned_matrix(self, var):
        """A pointer to an invariant argument's data at an ALIGN-byte boundary: the data itself where it
        is, else a copy made once at the start of the call (vector loads across cache lines made an inline
        gemv up to ~1.7x slower: the weights a loop reads every iteration are worth one copy a call)."""
        if id(var) in self.aligned:
            return self.aligned[id(var)]
        ir, b = self.ir, self.b
        src = self.env[id(var)]
        with b.goto_block(self.hoist):
            copy = self.alloc(var.dtype, var.static_shape)
            at = b.ptrtoint(src.ptr, self.i64)
            misaligned = b.icmp_unsigned("!=", b.and_(at, self.c64(ALIGN - 1)), self.c64(0))
            with b.if_then(misaligned):
                self.copy(copy, src)
            ptr = b.select(misaligned, copy.ptr, src.ptr)
            self.hoist = b.block            # where the next hoisted code goes (`compiled` ends it)
        self.aligned[id(var)] = ptr
        return ptr

    def check(self, cond, bad):
        ok = self.new_block("ok")
        self.b.cbranch(cond, ok, bad)
        self.b.position_at_end(ok)

    def field(self, obj, key, ty):
        ptr = self.b.gep(obj, [self.c64(ARRAY_LAYOUT[key])])
        return self.b.load(self.b.bitcast(ptr, self.ir.PointerType(ty)))

    def argument(self, obj, v, leading=False):
        """The data pointer of an ndarray argument, after checking its type, dtype, shape and layout; with
        `leading`, of an array with one more (first) dim of any size, and that size too."""
        ir, b = self.ir, self.b
        bad = self.fail[BAD_ARGUMENT]
        self.check(b.icmp_unsigned("==", self.field(obj, "ob_type", self.i64), self.process_address(np.ndarray)), bad)
        rank = v.ndim + int(leading)
        self.check(b.icmp_signed("==", self.field(obj, "nd", self.i32), ir.Constant(self.i32, rank)), bad)
        descr = self.field(obj, "descr", self.p8)
        type_num = b.load(b.bitcast(b.gep(descr, [self.c64(ARRAY_LAYOUT["type_num"])]), ir.PointerType(self.i32)))
        self.check(b.icmp_signed("==", type_num, ir.Constant(self.i32, np.dtype(v.dtype).num)), bad)
        dims_p = self.field(obj, "dimensions", ir.PointerType(self.i64))
        strides_p = self.field(obj, "strides", ir.PointerType(self.i64))
        step = np.dtype(v.dtype).itemsize
        for d in reversed(range(v.ndim)):
            size, at = v.static_shape[d], self.c64(d + int(leading))
            self.check(b.icmp_signed("==", b.load(b.gep(dims_p, [at])), self.c64(size)), bad)
            if size > 1:
                self.check(b.icmp_signed("==", b.load(b.gep(strides_p, [at])), self.c64(step)), bad)
            step *= size
        if not leading:
            return self.field(obj, "data", self.p8)
        first = b.load(dims_p)
        self.check(b.or_(b.icmp_signed("<=", first, self.c64(1)),
                         b.icmp_signed("==", b.load(strides_p), self.c64(step))), bad)
        return self.field(obj, "data", self.p8), first

    # --- the function
    def build(self):
        ir = self.ir
        region = self.region
        op = region.op
        dense = [k for k in range(len(op.outputs)) if k not in region.arrays]
        n_args, n_outs = len(region.args), len(dense)
        self.fn = ir.Function(self.module, ir.FunctionType(self.i64, [self.i64] + [self.p8] * (n_args + n_outs + 2)),
                              self.name)
        self.entry = self.new_block("entry")
        self.b = b = ir.IRBuilder(self.entry)
        self.fail = {}
        for code in (INDEX_ERROR, BUDGET_SPENT, LOOP_FAILED, BAD_ARGUMENT, ARRAY_FULL):
            block = self.new_block(f"fail_{-code}")
            ir.IRBuilder(block).ret(self.c64(code))
            self.fail[code] = block
        start = self.new_block("start")
        b.branch(start)
        b.position_at_end(start)
        budget = self.fn.args[0]
        objs = self.fn.args[1:]
        table = ir.GlobalVariable(self.module, self.i64, self.name + "_table")
        table.initializer = self.c64(0)
        self.table = b.inttoptr(b.load(table), ir.PointerType(self.i64))
        if region.kind == "straight":       # called by its Python entry only (`straight_entry`): scratch on its stack
            scratch, counts = objs[-1], None
        else:
            scratch = self.field(objs[-1], "data", self.p8)
            counts = b.bitcast(self.field(objs[-2], "data", self.p8), ir.PointerType(self.i64))
        self.scratch = self.align_up(scratch)       # the caller's is ALIGN bytes longer (`RegionKernel`)
        for v, obj in zip(region.args, objs):
            if v.kind == "array":       # its items' buffer: (capacity, *element shape)
                data, capacity = self.argument(obj, v, leading=True)
                self.env[id(v)] = _Val(b.bitcast(data, ir.PointerType(self.ltype(v.dtype))), v.dtype, v.static_shape)
                self.env[id(v)].capacity = capacity
                self.env[id(v)].count = self.entry_alloca(self.i64)     # one only read: all its rows are items
                b.store(capacity, self.env[id(v)].count)
                continue
            data = self.argument(obj, v)
            self.invariant.add(id(v))
            val = _Val(b.bitcast(data, ir.PointerType(self.ltype(v.dtype))), v.dtype, v.static_shape)
            if v.ndim == 0:         # a number: into a stack slot, where LLVM keeps it in a register
                slot = self.alloc(v.dtype, ())
                self.copy(slot, val)
                val = slot
            self.env[id(v)] = val
        out_ptrs = {k: b.bitcast(self.field(obj, "data", self.p8), ir.PointerType(self.ltype(op.outputs[k].dtype)))
                    for obj, k in zip(objs[n_args:n_args + n_outs], dense)}
        self.hoist, body = self.new_block("hoisted"), self.new_block("main")     # `aligned_matrix`'s copies
        b.branch(self.hoist)
        b.position_at_end(body)
        self.after_hoist = body
        if region.kind == "branch":         # a cond outside loops: its chosen branch, its outputs copied out
            return self.build_branch(op, out_ptrs, budget, n_args, n_outs)
        if region.kind == "straight":
            return self.build_straight(op, out_ptrs, budget, n_args, n_outs)

        states = []
        for k, o in enumerate(op.outputs):
            if k in region.arrays:      # items so far: the caller's count
                items = self.env[id(op.inputs[k])]
                state = _Val(items.ptr, o.dtype, o.static_shape, state=k)
                state.capacity, state.count = items.capacity, self.entry_alloca(self.i64)
                b.store(b.load(b.gep(counts, [self.c64(region.arrays.index(k))])), state.count)
            else:
                state = self.alloc(o.dtype, o.static_shape, state=k)
                self.copy(state, self.value(op.inputs[k], state))
            states.append(state)
        count = self.count = self.entry_alloca(self.i64)       # iterations of every loop in the region
        self.budget = budget
        b.store(self.c64(0), count)
        self.iterate(op, states, region.arrays)
        for k, state in enumerate(states):
            if k in region.arrays:
                b.store(b.load(state.count), b.gep(counts, [self.c64(region.arrays.index(k))]))
            else:
                self.copy(_Val(out_ptrs[k], state.dtype, state.shape), state)
        b.ret(b.load(count))
        self.loop_entry(n_args + n_outs + 2)
        return self.compiled(n_args, n_outs)

    def build_branch(self, op, out_ptrs, budget, n_args, n_outs):
        """The function of a cond region (`region.analyse_cond`): the branch the predicate picks, its
        outputs copied to the fresh outputs; it returns 0 (no loop iterations)."""
        self.count, self.budget = self.entry_alloca(self.i64), budget
        self.b.store(self.c64(0), self.count)
        self.emit_branch(op, self.region.forms[id(op)])
        for k, var in enumerate(op.outputs):
            self.copy(_Val(out_ptrs[k], var.dtype, var.static_shape), self.env[id(var)])
        self.b.ret(self.c64(0))
        self.loop_entry(n_args + n_outs + 2)
        return self.compiled(n_args, n_outs)

    def build_straight(self, run, out_ptrs, budget, n_args, n_outs):
        """The function of a straight run (`region.analyse_straight`): its ops in order, each output
        computed into its fresh output array where its op makes a new value (`fresh`), else copied there;
        it returns 0. Its Python entry (`straight_entry`) makes the outputs and the scratch."""
        self.count, self.budget = self.entry_alloca(self.i64), budget
        self.b.store(self.c64(0), self.count)
        self.direct = {id(var): out_ptrs[k] for k, var in enumerate(run.outputs)}
        self.emit_block(run)
        for k, var in enumerate(run.outputs):
            value = self.env[id(var)]
            if value.ptr is not out_ptrs[k]:
                self.copy(_Val(out_ptrs[k], var.dtype, var.static_shape), value)
        self.b.ret(self.c64(0))
        self.straight_entry(run, n_args)
        return self.compiled(n_args, n_outs)

    def straight_entry(self, run, n_args):
        """`{name}_fast`, a METH_FASTCALL function (a builtin: no ctypes marshalling, ~0.1 us a call instead
        of ~1.5 us): `fast(*args)` makes each output with NumPy's PyArray_Empty and the scratch on its
        stack (a NumPy array where it is big), runs the function (the GIL released where the run holds a
        while), and returns the output (a tuple of them for several), or None where the function declined
        (its code < 0: the caller runs NumPy's code)."""
        ir = self.ir
        main, p8 = self.fn, self.p8
        fn, b, argv, nargs = self.begin_python_entry()
        i32 = self.i32
        none_block, error_block = fn.append_basic_block("declined"), fn.append_basic_block("error")
        self.check(b.icmp_signed("==", nargs, self.c64(n_args)), none_block)
        objs = [b.load(b.gep(argv, [self.c64(j)])) for j in range(n_args)]
        empty = self.capi_function("numpy_api", "PyArray_Empty", p8, [i32, ir.PointerType(self.i64), p8, i32])
        descr = self.capi_function("numpy_api", "PyArray_DescrFromType", p8, [i32])
        decref = self.capi_function("capi", "Py_DecRef", ir.VoidType(), [p8])
        made = []           # the objects made so far (dropped if a later one cannot be made)

        def unless_null(value, owned, name):
            """Go on where `value` is an object; where it is NULL, drop `owned` and return NULL (the error
            NumPy or Python set stands)."""
            failed, ok = fn.append_basic_block("no_" + name), fn.append_basic_block(name)
            b.cbranch(b.icmp_unsigned("==", b.ptrtoint(value, self.i64), self.c64(0)), failed, ok)
            with b.goto_block(failed):
                for obj in owned:
                    b.call(decref, [obj])
                b.branch(error_block)
            b.position_at_end(ok)

        def new_array(shape, dtype):
            self.constants += 1
            dims = ir.GlobalVariable(self.module, ir.ArrayType(self.i64, len(shape)), f"dims_{self.constants}")
            dims.global_constant = True
            dims.initializer = ir.Constant(ir.ArrayType(self.i64, len(shape)), [int(d) for d in shape])
            array = b.call(empty, [ir.Constant(i32, len(shape)), b.bitcast(dims, ir.PointerType(self.i64)),
                                   b.call(descr, [ir.Constant(i32, np.dtype(dtype).num)]), ir.Constant(i32, 0)])
            unless_null(array, made, "allocated")
            made.append(array)
            return array

        size = self.scratch_bytes + ALIGN        # the function aligns its start
        if size <= STACK_SCRATCH:
            slot = self.entry_alloca(ir.ArrayType(self.i8, size))
            slot.align = ALIGN
            scratch, scratch_obj = b.bitcast(slot, p8), None
        else:
            scratch_obj = new_array((size,), np.uint8)
            scratch = self.field(scratch_obj, "data", p8)
        outs = [new_array(var.static_shape, var.dtype) for var in run.outputs]
        looping = any(form[0] == "loop" for form in self.region.forms.values())
        if looping:         # a while in the run may run long: the GIL released, as a loop's entry does
            state = b.call(self.capi_function("capi", "PyEval_SaveThread", p8, []), [])
        rc = b.call(main, [self.c64(-1)] + objs + outs + [ir.Constant(p8, None), scratch])
        if looping:
            b.call(self.capi_function("capi", "PyEval_RestoreThread", ir.VoidType(), [p8]), [state])
        if scratch_obj is not None:
            b.call(decref, [scratch_obj])
        ran = fn.append_basic_block("ran")
        failed = fn.append_basic_block("failed")
        b.cbranch(b.icmp_signed("<", rc, self.c64(0)), failed, ran)
        with b.goto_block(failed):
            for obj in outs:
                b.call(decref, [obj])
            b.branch(none_block)
        b.position_at_end(ran)
        if len(outs) == 1:
            b.ret(outs[0])
        else:
            new_tuple = self.capi_function("capi", "PyTuple_New", p8, [self.i64])
            set_item = self.capi_function("capi", "PyTuple_SetItem", i32, [p8, self.i64, p8])
            result = b.call(new_tuple, [self.c64(len(outs))])
            unless_null(result, outs, "tuple")
            for k, obj in enumerate(outs):
                b.call(set_item, [result, self.c64(k), obj])        # steals the reference
            b.ret(result)
        b.position_at_end(none_block)
        none = b.inttoptr(self.process_address(["none"]), p8)
        b.call(self.capi_function("capi", "Py_IncRef", ir.VoidType(), [p8]), [none])
        b.ret(none)
        b.position_at_end(error_block)      # NumPy's MemoryError is set
        b.ret(ir.Constant(p8, None))
        self.fast_entry = fn.name
        self.fn = main

    def begin_python_entry(self):
        """Start `{name}_fast(self, args, nargs)`, a METH_FASTCALL function of this module, as the function
        being built (`self.fn`, its entry block for allocas, the builder in the block after it, the
        relocation table read): (function, builder, args, nargs). The caller sets `self.fn` back."""
        ir, p8 = self.ir, self.p8
        fn = ir.Function(self.module, ir.FunctionType(p8, [p8, ir.PointerType(p8), self.i64]), self.name + "_fast")
        self.fn, self.entry = fn, fn.append_basic_block("entry")
        self.b = b = ir.IRBuilder(self.entry)
        body = fn.append_basic_block("body")
        b.branch(body)
        b.position_at_end(body)
        self.table = b.inttoptr(b.load(self.module.get_global(self.name + "_table")), ir.PointerType(self.i64))
        _, argv, nargs = fn.args
        return fn, b, argv, nargs

    def loop_entry(self, n_objects):
        """`{name}_fast`, a METH_FASTCALL function: `fast(budget, *args, *outs, counts, scratch)` is the
        function's code as a Python int, run with the GIL released (as a CFUNCTYPE call would, without
        ctypes' ~1.5 us of marshalling a call)."""
        ir = self.ir
        main, p8 = self.fn, self.p8
        fn, b, argv, nargs = self.begin_python_entry()
        as_long = self.capi_function("capi", "PyLong_AsLongLong", self.i64, [p8])
        from_long = self.capi_function("capi", "PyLong_FromLongLong", p8, [self.i64])
        save = self.capi_function("capi", "PyEval_SaveThread", p8, [])
        restore = self.capi_function("capi", "PyEval_RestoreThread", ir.VoidType(), [p8])
        bad = fn.append_basic_block("bad_call")
        self.check(b.icmp_signed("==", nargs, self.c64(n_objects + 1)), bad)
        budget = b.call(as_long, [b.load(argv)])
        objs = [b.load(b.gep(argv, [self.c64(j + 1)])) for j in range(n_objects)]
        state = b.call(save, [])
        rc = b.call(main, [budget] + objs)
        b.call(restore, [state])
        b.ret(b.call(from_long, [rc]))
        b.position_at_end(bad)
        b.ret(b.call(from_long, [self.c64(BAD_ARGUMENT)]))
        self.fast_entry = fn.name
        self.fn = main

    def capi_function(self, kind, name, returns, params):
        """A C API function (`relocations`: ["capi", name] or ["numpy_api", name]) as a callable value."""
        ir = self.ir
        address = self.process_address([kind, name])
        return self.b.inttoptr(address, ir.PointerType(ir.FunctionType(returns, params)))

    def compiled(self, n_args, n_outs):
        """The module compiled to object code, linked and loaded: a RegionKernel (its code and meta kept
        for the disk cache where it names no process address), or why not."""
        self.ir.IRBuilder(self.hoist).branch(self.after_hoist)
        text = str(self.module)
        obj = self.eng.emit_object(text)
        shared = objects.link(obj)
        meta = {"name": self.name, "relocations": self.relocations, "n_args": n_args, "n_outs": n_outs,
                "scratch_bytes": self.scratch_bytes + ALIGN, "copied_transposes": self.copied_shapes,
                "gemvs": self.gemvs, "fast": self.fast_entry, "kind": self.region.kind}
        kernel = load_kernel(meta, obj, shared, self.keep)
        if not isinstance(kernel, str) and not relocations.embedded(text, self.keep):
            kernel.saved = (meta, obj, shared)
        return kernel

    def process_address(self, thing, field=None):
        """An address of this process (NumPy's array type, a NumPy loop's field, a BLAS function) as an
        i64, read from the table the loader fills: the code holds none, so it can be kept on disk."""
        descriptor = relocations.describe(thing, field)
        if descriptor not in self.relocations:
            self.relocations.append(descriptor)
        slot = self.b.gep(self.table, [self.c64(self.relocations.index(descriptor))])
        return self.b.load(slot)

    def loop_addresses(self, loop):
        """A NumPy strided loop's function, context and auxdata, for `elementwise._call_loop`."""
        return [self.process_address(loop, field) for field in relocations.LOOP_FIELDS]

    def iterate(self, op, states, arrays):
        """The loop of `while` op over its state values: the test inline, each iteration counted against
        the call's budget (every loop's iterations, as the NumPy plan counts them), the body, the next
        state (tensor arrays at positions `arrays` are appended to in place); ends in the `done` block."""
        ir, b = self.ir, self.b
        cond_block, body_block = op.sub_blocks()
        self.bind_closure(op)
        head, body, done = self.new_block("test"), self.new_block("body"), self.new_block("done")
        b.branch(head)

        b.position_at_end(head)
        for p, state in zip(cond_block.params, states):
            self.env[id(p)] = state
        self.repeats += 1
        self.emit_block(cond_block)
        test = self.value(cond_block.results[0], _Val(None, np.bool_, ()))
        b.cbranch(b.icmp_unsigned("!=", b.load(test.ptr), ir.Constant(self.i8, 0)), body, done)

        b.position_at_end(body)
        ran = b.load(self.count)
        spent = b.and_(b.icmp_signed(">=", self.budget, self.c64(0)), b.icmp_signed(">=", ran, self.budget))
        self.check(b.not_(spent), self.fail[BUDGET_SPENT])
        b.store(b.add(ran, self.c64(1)), self.count)
        for p, state in zip(body_block.params, states):
            self.env[id(p)] = state
        self.emit_block(body_block)
        self.next_state(states, body_block.results, arrays)
        self.repeats -= 1
        b.branch(head)
        b.position_at_end(done)

    def bind_closure(self, op):
        """A region op's closure params are the values its inputs hold (no copy), invariant where they are."""
        for p, x in region_of(op).closure_pairs(op):
            self.env[id(p)] = self.env[id(x)]
            if id(x) in self.invariant:
                self.invariant.add(id(p))

    def emit_loop(self, op, form):
        """A `while` nested in the region: its state in buffers of its own, copied from its inputs each time
        it starts; its outputs are those buffers once its test fails (nothing writes them until it runs again).
        A tensor array it carries stays the enclosing loop's buffer and count (its list grows in place)."""
        states, arrays = [], []
        for k, o in enumerate(op.outputs):
            if o.kind == "array":       # a tensor array it carries: the enclosing loop's buffer, appended to in place
                states.append(self.env[id(op.inputs[k])])
                arrays.append(k)
                continue
            state = self.alloc(o.dtype, o.static_shape, state=k)
            self.copy(state, self.value(op.inputs[k], state))
            states.append(state)
        self.iterate(op, states, arrays)
        for var, state in zip(op.outputs, states):
            self.env[id(var)] = state

    def next_state(self, states, results, arrays):
        """Every state position takes its result at once: numbers loaded first, results that are (or
        view) a state buffer copied to staging first; tensor arrays (positions `arrays`) are appended to
        in place: nothing to copy."""
        states = [s for k, s in enumerate(states) if k not in arrays]
        results = [r for k, r in enumerate(results) if k not in arrays]
        sources = [self.value(r, s) for r, s in zip(results, states)]
        numbers = [(s, self.b.load(src.ptr)) for s, src in zip(states, sources) if not s.shape]
        staged = []
        for s, src in zip(states, sources):
            if s.shape and src.state is not None and src.ptr is not s.ptr:
                stage = self.alloc(s.dtype, s.shape)
                self.copy(stage, src)
                src = stage
            staged.append(src)
        for s, src in zip(states, staged):
            if s.shape and src.ptr is not s.ptr:
                self.copy(s, src)
        for s, number in numbers:
            self.b.store(number, s.ptr)

    def emit_block(self, block):
        for op in block.ops:
            form = self.region.forms[id(op)]
            getattr(self, "emit_" + form[0])(op, form)

    # --- the forms
    def emit_chain(self, op, form):
        _, plan, inputs = form[:3]
        if id(op) in self.summed:          # computed by the sum that alone reads it (`emit_reduce_rows`)
            return
        out_var = op.outputs[0]
        out = self.fresh(out_var)
        n = out.size
        if n == 0:
            return
        ir, b = self.ir, self.b
        if _all_inline(plan):       # one pass, each element's step values in registers, broadcasts by strides
            rows, length = math.prod(out.shape[:-1]), out.shape[-1] if out.shape else 1
            element = self.chain_element(plan, inputs, out.shape)
            ew._loop(ir, b, self.fn, self.c64(rows), lambda r: ew._loop(ir, b, self.fn, self.c64(length), lambda i: b.store(
                element(r, i), b.gep(out.ptr, [b.add(b.mul(r, self.c64(length)), i)]))))
            self.keep.extend(plan["keep"])
            return
        values, sources = [], []
        for v in inputs:            # each input once: read in place, one value, or broadcast into a buffer
            val = self.env[id(v)]
            sources.append(self.operand(val, out.shape))
        for j, st in enumerate(plan["steps"]):
            last = j == len(plan["steps"]) - 1
            dest = out if last else self.alloc(st["dtype"], out.shape)
            operands = []
            for where, k, dtype in st["args"]:
                if where == "in":
                    operands.append(sources[k])
                elif where == "step":
                    operands.append((values[k].ptr, self.c64(1), values[k].dtype))
                else:
                    ty = self.ltype(dtype)
                    self.constants += 1
                    const = ir.GlobalVariable(self.module, ty, f"num_{self.constants}")
                    const.global_constant = True
                    const.initializer = ir.Constant(ty, k.item() if np.dtype(dtype).kind != "b" else int(k.item()))
                    operands.append((const, self.c64(0), np.dtype(dtype)))
            count = self.c64(n)
            if st["inline"]:
                ew._inline_loop(ir, b, self.fn, st, operands, dest.ptr, count)
            else:
                operands = [self.cast(o, want, n) for o, want in zip(operands, st["loop_in"])]
                ew._call_loop(ir, b, st["loop"], self.loop_addresses(st["loop"]), operands, dest.ptr, count, self.fail[LOOP_FAILED], self.fn)
                self.keep.append(st["loop"])
            values.append(dest)
        self.keep.extend(plan["keep"])

    def chain_element(self, plan, inputs, shape):
        """`element(r, i)`: the chain's value at row r (of the dims before the last), column i of `shape`,
        every step inline in registers: the same IEEE operations in the same dtypes as its step-by-step
        form, so the same bits. Each input is read where NumPy's broadcasting puts it (a stride of 0 along
        a dim it is broadcast on), never copied."""
        ir, b = self.ir, self.b
        nd = len(shape)
        lead = shape[:-1]
        reads = []
        for v in inputs:
            val = self.env[id(v)]
            dims = (1,) * (nd - len(val.shape)) + val.shape
            strides, step = [0] * nd, 1
            for d in reversed(range(nd)):
                strides[d] = step if dims[d] == shape[d] and shape[d] != 1 else 0
                step *= dims[d]
            reads.append((val, strides))

        def offset(strides, r, i):
            """The element offset of row r, column i for an input of these strides (the row's index split
            into the leading dims' indices only where some stride needs it)."""
            at = b.mul(i, self.c64(strides[-1])) if nd and strides[-1] else self.c64(0)
            rest, inner = r, 1
            for d in reversed(range(len(lead))):
                if strides[d]:
                    index = b.urem(b.udiv(r, self.c64(inner)), self.c64(lead[d])) if d else b.udiv(r, self.c64(inner))
                    at = b.add(at, b.mul(index, self.c64(strides[d])))
                inner *= lead[d]
            return at

        def element(r, i):
            loaded = [b.load(b.gep(val.ptr, [offset(strides, r, i)])) for val, strides in reads]
            values = []
            for st in plan["steps"]:
                want = st["loop_in"][0]
                args = []
                for where, k, dtype in st["args"]:
                    if where == "in":
                        value = loaded[k]
                    elif where == "step":
                        value = values[k]
                    else:
                        value = ir.Constant(self.ltype(dtype), k.item() if np.dtype(dtype).kind != "b" else int(k.item()))
                    args.append(ew._convert(ir, b, value, dtype, want))
                values.append(ew._compute(ir, b, st["ufunc"], want, args))
            return values[-1]

        return element

    def operand(self, val, shape):
        """(pointer, element stride, dtype) reading val broadcast to shape in flat order."""
        size = math.prod(shape)
        if val.size == size:
            return val.ptr, self.c64(1), val.dtype
        if val.size == 1:
            return val.ptr, self.c64(0), val.dtype
        return self.expand(val, shape).ptr, self.c64(1), val.dtype

    def expand(self, src, shape):
        """src broadcast to shape, copied into a buffer (NumPy's broadcasting: trailing dims align)."""
        b = self.b
        dest = self.alloc(src.dtype, shape)
        if dest.size == 0:
            return dest
        nd = len(shape)
        dims = (1,) * (nd - len(src.shape)) + src.shape
        source_strides, dest_strides, step, out_step = [0] * nd, [0] * nd, 1, 1
        for d in reversed(range(nd)):
            source_strides[d] = step if dims[d] == shape[d] else 0
            dest_strides[d] = out_step
            step *= dims[d]
            out_step *= shape[d]

        def nest(d, at, to):
            if d == nd:
                b.store(b.load(b.gep(src.ptr, [at])), b.gep(dest.ptr, [to]))
                return
            ew._loop(self.ir, b, self.fn, self.c64(shape[d]), lambda i: nest(
                d + 1, b.add(at, b.mul(i, self.c64(source_strides[d]))), b.add(to, b.mul(i, self.c64(dest_strides[d])))))

        nest(0, self.c64(0), self.c64(0))
        return dest

    def cast(self, operand, want, n):
        ptr, es, dtype = operand
        if dtype == want:
            return operand
        ir, b = self.ir, self.b
        dest = self.alloc(want, (n,))

        def body(i):
            value = b.load(b.gep(ptr, [b.mul(i, es)]))
            b.store(ew._convert(ir, b, value, dtype, want), b.gep(dest.ptr, [i]))

        ew._loop(ir, b, self.fn, self.c64(n), body)
        return dest.ptr, self.c64(1), want

    def emit_matmul(self, op, form):
        _, (symbol, args), a, b_var, bias = form
        ir, b = self.ir, self.b
        out_var = op.outputs[0]
        out = self.fresh(out_var)
        slots = {"a": self.env[id(a)].ptr, "b": self.env[id(b_var)].ptr, "out": out.ptr}
        operands = {"a": a, "b": b_var}
        if a.ndim == 3:         # a stack: each item's 2-D product, as NumPy's matmul makes them
            (m, k), n = a.static_shape[-2:], out_var.static_shape[-1]
            stacked = a.static_shape[0] > 1

            def item(t):
                at = dict(slots, a=b.gep(slots["a"], [b.mul(t, self.c64(m * k))]),
                          out=b.gep(out.ptr, [b.mul(t, self.c64(m * n))]))
                if not self.inline_gemv(symbol, args, at, operands, stacked):
                    self.blas_call(symbol, args, at, _Val(at["out"], out.dtype, (m, n)))

            if out.size:
                ew._loop(ir, b, self.fn, self.c64(a.static_shape[0]), item)
            symbol = None
        copied = None
        if symbol is None:
            pass
        elif len(args) == 14 and args[1] == NO_TRANS and args[2] == TRANS and id(b_var) in self.invariant:   # a @ weight.T
            m, n, k = args[3:6]
            copied = copied_transpose_call(out.dtype, m, k, n)
            if not isinstance(copied, str) and id(b_var) not in self.copies:
                self.copied_shapes.append([out.dtype.str, m, k, n])
        if symbol is None or copied is None and self.inline_gemv(symbol, args, slots, operands):
            pass
        elif copied is None or isinstance(copied, str):
            self.blas_call(symbol, args, slots, out)
        else:
            self.copied_transpose_product(b_var, (symbol, args), copied, slots, out)
        if bias is not None and out.size:          # linear: `out += bias`, NumPy's add (one IEEE add each)
            add = {"ufunc": "add", "loop_in": [out.dtype], "inline": True}
            operands = [(out.ptr, self.c64(1), out.dtype), self.operand(self.env[id(bias)], out.shape)]
            ew._inline_loop(ir, b, self.fn, add, operands, out.ptr, self.c64(out.size))

    def inline_gemv(self, symbol, args, slots, operands, stacked=False):
        """The product inline (`gemv.py`: OpenBLAS's order of sums) where NumPy's call is an sgemv (a row
        by a matrix: row-major, its sgemv_n; by a matrix's .T, or a matrix by a column: column-major, its
        sgemv_t) and the inline code gives its bits on that shape here; False: not taken. A matrix that
        is an argument, multiplied more than once a call (in a loop, or by a stack), is read at an
        ALIGN-byte boundary (`aligned_matrix`)."""
        if symbol.name != "sgemv" or args[1] != TRANS or args[0] not in (ROW_MAJOR, COL_MAJOR):
            return False
        kind = "n" if args[0] == ROW_MAJOR else "t"
        k, n = args[2:4]
        if gemv.check(k, n, kind):
            return False
        matrix = operands[args[5]]
        repeated = id(matrix) in self.invariant and matrix.ndim == 2 and (self.repeats or stacked)
        ptr = self.ir.PointerType(self.ir.FloatType())
        pointers = [self.b.bitcast(slots[x], ptr) for x in (args[7], args[5], args[10])]
        if repeated and kind == "n" and self.panel_product(k, n, matrix, pointers):
            return True
        emit = gemv.emit if kind == "n" else gemv.emit_t
        fn = emit(self.module, k, n, name=f"{self.name}_{gemv.function_name(k, n, kind)}")
        if [kind, k, n] not in self.gemvs:
            self.gemvs.append([kind, k, n])
        if repeated:
            slots = dict(slots, **{args[5]: self.aligned_matrix(matrix)})
        self.b.call(fn, [self.b.bitcast(slots[x], ptr) for x in (args[7], args[5], args[10])])
        return True

    def panel_product(self, k, n, matrix, pointers):
        """x @ matrix (pointers: x, the matrix, y) by `gemv.emit(..., panel=)`, the matrix's panels copied
        once a call (`hoisted`), read forwards and backwards in turn (the panels one call reads last are
        the next call's first, still in L1); False where the shape takes no panels or fails their test."""
        b = self.b
        panel = gemv.panel_rows(k, n)
        kind = f"p{panel}"
        if not panel or gemv.check(k, n, kind):
            return False
        product, packing = gemv.emit_panel_test(self.module, k, n, panel, prefix=f"{self.name}_")
        if [kind, k, n] not in self.gemvs:
            self.gemvs.append([kind, k, n])
        key = ("panels", id(matrix))
        if key not in self.aligned:
            with b.goto_block(self.hoist):
                panels = self.alloc(np.float32, (gemv.panel_floats(k, n, panel),))
                b.call(packing, [self.env[id(matrix)].ptr, panels.ptr])     # (defined before `hoisted`)
                turn = self.entry_alloca(self.i64)
                b.store(self.c64(0), turn)
                self.hoist = b.block
            self.aligned[key] = panels.ptr, turn
        panels, turn = self.aligned[key]
        backwards = b.load(turn)
        b.call(product, pointers + [panels, backwards])
        b.store(b.xor(backwards, self.c64(1)), turn)
        return True

    def copied_transpose_product(self, b_var, plain, copied, slots, out):
        """a @ b.T for a loop-invariant b: NumPy's call the first time in a call of the kernel; from the
        second on the gemm on a copy of b.T (made then, once: a loop that multiplies once pays no copy),
        which gives the same bits (blas.copied_transpose_call) and is faster."""
        ir, b = self.ir, self.b
        if id(b_var) not in self.copies:
            n, k = b_var.static_shape
            buffer = self.alloc(b_var.dtype, (k, n))
            made = self.entry_alloca(self.i8)
            with b.goto_block(self.entry):
                b.store(ir.Constant(self.i8, 0), made)          # 0: not used yet, 1: used once, 2: copy made
            self.copies[id(b_var)] = (buffer, made)
        buffer, made = self.copies[id(b_var)]
        state = b.load(made)
        first, later, after = self.new_block("product_first"), self.new_block("product_later"), self.new_block("product_done")
        b.cbranch(b.icmp_unsigned("==", state, ir.Constant(self.i8, 0)), first, later)
        b.position_at_end(first)
        self.blas_call(*plain, slots, out)
        b.store(ir.Constant(self.i8, 1), made)
        b.branch(after)
        b.position_at_end(later)
        copy, copied_already = self.new_block("copy_transpose"), self.new_block("copied")
        b.cbranch(b.icmp_unsigned("==", state, ir.Constant(self.i8, 1)), copy, copied_already)
        b.position_at_end(copy)
        self.transpose_into(buffer, self.env[id(b_var)])
        b.store(ir.Constant(self.i8, 2), made)
        b.branch(copied_already)
        b.position_at_end(copied_already)
        self.blas_call(*copied, dict(slots, b=buffer.ptr), out)
        b.branch(after)
        b.position_at_end(after)

    def transpose_into(self, dest, src, tile=16):
        """dest (k, n) = src.T for a C-contiguous src (n, k), in tile x tile blocks where both dims are
        multiples of the tile (each block's rows and columns stay in cache: ~4x a row-by-row copy)."""
        b = self.b
        n, k = src.shape
        if n % tile or k % tile:
            tile = 1

        def block(jb, ib):
            def row(j):
                j = b.add(b.mul(jb, self.c64(tile)), j)

                def element(i):
                    i = b.add(b.mul(ib, self.c64(tile)), i)
                    b.store(b.load(b.gep(src.ptr, [b.add(b.mul(j, self.c64(k)), i)])),
                            b.gep(dest.ptr, [b.add(b.mul(i, self.c64(n)), j)]))
                ew._loop(self.ir, b, self.fn, self.c64(tile), element)
            ew._loop(self.ir, b, self.fn, self.c64(tile), row)

        ew._loop(self.ir, b, self.fn, self.c64(n // tile),
                 lambda jb: ew._loop(self.ir, b, self.fn, self.c64(k // tile), lambda ib: block(jb, ib)))

    def blas_call(self, symbol, args, slots, out):
        """The CBLAS call (symbol, args), its operand slots' pointers from `slots`; a dot's number into out."""
        ir, b = self.ir, self.b
        real = self.ltype(out.dtype)
        int_type = ir.IntType(8 * ctypes.sizeof(symbol.int_type))
        values, types = [], []
        is_dot = len(args) == 5
        n_enums = 0 if is_dot else 2 if len(args) == 12 else 3      # gemv: order, trans; gemm: order, transa, transb
        for j, x in enumerate(args):
            if isinstance(x, str):
                values.append(b.bitcast(slots[x], self.p8))
                types.append(self.p8)
            elif isinstance(x, float):
                values.append(ir.Constant(real, x))
                types.append(real)
            elif j < n_enums:
                values.append(ir.Constant(self.i32, x))
                types.append(self.i32)
            else:
                values.append(ir.Constant(int_type, x))
                types.append(int_type)
        returns = real if is_dot else ir.VoidType()
        target = b.inttoptr(self.process_address(symbol), ir.PointerType(ir.FunctionType(returns, types)))
        result = b.call(target, values)
        if is_dot:
            b.store(result, out.ptr)
        self.keep.append(symbol)

    def emit_rows(self, op, form):
        _, table, ids, wrap = form
        ir, b = self.ir, self.b
        out_var = op.outputs[0]
        out = self.fresh(out_var)
        src, index = self.env[id(table)], self.env[id(ids)]
        rows, width = table.static_shape[0], math.prod(table.static_shape[1:])
        if out.size == 0:
            return
        isz = out.dtype.itemsize
        memcpy = self.memcpy()

        def body(j):
            if wrap:            # take: -rows <= id < rows
                at = self.index_value(_Val(b.gep(index.ptr, [j]), index.dtype, ()), rows)
            else:
                at = b.load(b.gep(index.ptr, [j]))
                if at.type.width < 64:
                    at = b.sext(at, self.i64) if index.dtype.kind == "i" else b.zext(at, self.i64)
                inside = b.icmp_unsigned("<", at, self.c64(rows))      # a negative id is huge unsigned: out of range
                self.check(inside, self.fail[INDEX_ERROR])
            to = b.bitcast(b.gep(out.ptr, [b.mul(j, self.c64(width))]), self.p8)
            row = b.bitcast(b.gep(src.ptr, [b.mul(at, self.c64(width))]), self.p8)
            b.call(memcpy, [to, row, self.c64(width * isz), ir.Constant(self.i1, 0)])

        ew._loop(ir, b, self.fn, self.c64(index.size), body)

    def emit_split(self, op, form):
        _, x, axis, bounds = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        shape = x.static_shape
        outer, inner, size = math.prod(shape[:axis]), math.prod(shape[axis + 1:]), shape[axis]
        memcpy = self.memcpy()
        for out_var, (lo, hi) in zip(op.outputs, bounds):
            if outer == 1:          # a contiguous piece: a view, as NumPy's slice
                self.env[id(out_var)] = _Val(b.gep(src.ptr, [self.c64(lo * inner)]), src.dtype,
                                             out_var.static_shape, src.state)
                continue
            out = self.fresh(out_var)
            piece = (hi - lo) * inner
            if out.size == 0:
                continue

            def body(r, out=out, lo=lo, piece=piece):
                to = b.bitcast(b.gep(out.ptr, [b.mul(r, self.c64(piece))]), self.p8)
                at = b.bitcast(b.gep(src.ptr, [b.add(b.mul(r, self.c64(size * inner)), self.c64(lo * inner))]), self.p8)
                b.call(memcpy, [to, at, self.c64(piece * src.dtype.itemsize), ir.Constant(self.i1, 0)])

            ew._loop(ir, b, self.fn, self.c64(outer), body)

    def emit_select(self, op, form):
        _, c, x, y = form
        ir, b = self.ir, self.b
        out_var = op.outputs[0]
        out = self.fresh(out_var)
        if out.size == 0:
            return
        operands = []
        for v in (c, x, y):
            if isinstance(v, Variable):
                operands.append(self.operand(self.env[id(v)], out.shape))
            else:
                operands.append((self.constant(v, out.dtype).ptr, self.c64(0), out.dtype))

        def body(i):
            loaded = [b.load(b.gep(ptr, [b.mul(i, es)])) for ptr, es, _ in operands]
            pick = b.icmp_unsigned("!=", loaded[0], ir.Constant(self.i8, 0))
            then, other = (ew._convert(ir, b, v, dtype, out.dtype) for v, (_, _, dtype) in zip(loaded[1:], operands[1:]))
            b.store(b.select(pick, then, other), b.gep(out.ptr, [i]))

        ew._loop(ir, b, self.fn, self.c64(out.size), body)

    def emit_transpose(self, op, form):
        """x.T of a 2-D x: nothing (analysis took it only where products alone read it: they read x as
        NumPy's call reads the view, `a.T` in their BLAS arguments)."""

    def emit_cast(self, op, form):
        """x.astype(dtype): NumPy's cast of each element (the casts `elementwise._castable` admits: one
        instruction each); to its own dtype the value itself (astype(copy=False) returns x)."""
        _, x, dtype = form
        src = self.env[id(x)]
        out_var = op.outputs[0]
        if src.dtype == np.dtype(dtype):
            self.env[id(out_var)] = src
            return
        out = self.fresh(out_var)
        if out.size:
            self.cast_into(src, out)

    def cast_into(self, src, out):
        ir, b = self.ir, self.b

        def body(i):
            value = b.load(b.gep(src.ptr, [i]))
            b.store(ew._convert(ir, b, value, src.dtype, out.dtype), b.gep(out.ptr, [i]))

        ew._loop(ir, b, self.fn, self.c64(out.size), body)

    def emit_reduce_first(self, op, form):
        """ufunc.reduce(x, axis=0) of a 2-D x as NumPy's iterator makes it: the result starts as the
        identity (add: +0.0, multiply: 1) or the first row (maximum, minimum), then takes each row in
        turn, element by element (inline IEEE adds and products; NumPy's loop for maximum and minimum)."""
        _, loop, ufunc, x = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        out = self.fresh(op.outputs[0])
        rows, width = x.static_shape
        if out.size == 0:
            return
        first = 0
        if ufunc in ("add", "multiply"):
            identity = ir.Constant(self.ltype(out.dtype), 0.0 if ufunc == "add" else 1.0)
            ew._loop(ir, b, self.fn, self.c64(width), lambda j: b.store(identity, b.gep(out.ptr, [j])))
        else:
            self.copy(out, _Val(src.ptr, src.dtype, (width,)))
            first = 1
        if rows <= first:
            return
        one = self.c64(1)

        def row(i):
            i = b.add(i, self.c64(first))
            operands = [(out.ptr, one, out.dtype), (b.gep(src.ptr, [b.mul(i, self.c64(width))]), one, src.dtype)]
            if loop is None:
                step = {"ufunc": ufunc, "loop_in": [out.dtype], "inline": True}
                ew._inline_loop(ir, b, self.fn, step, operands, out.ptr, self.c64(width))
            else:
                ew._call_loop(ir, b, loop, self.loop_addresses(loop), operands, out.ptr, self.c64(width),
                              self.fail[LOOP_FAILED], self.fn)

        ew._loop(ir, b, self.fn, self.c64(rows - first), row)
        if loop is not None:
            self.keep.append(loop)

    def emit_argmin(self, op, form):
        """NumPy's argmin: the first index of the smallest value, or of the first NaN."""
        self.emit_argmax(op, form, smallest=True)

    def emit_argmax(self, op, form, smallest=False):
        """NumPy's argmax: the first index of the largest value, or of the first NaN."""
        _, x, axis = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        out_var = op.outputs[0]
        out = self.fresh(out_var)
        length = src.size if axis is None else x.static_shape[-1]
        is_float = src.dtype.kind == "f"
        best_slot, index_slot = self.entry_alloca(self.ltype(src.dtype)), self.entry_alloca(self.i64)
        nan_slot = self.entry_alloca(self.i1)
        order = "<" if smallest else ">"

        def row(r):
            base = b.mul(r, self.c64(length))
            first = b.load(b.gep(src.ptr, [base]))
            b.store(first, best_slot)
            b.store(self.c64(0), index_slot)
            b.store(b.fcmp_unordered("uno", first, first) if is_float else ir.Constant(self.i1, 0), nan_slot)

            def element(j):
                j = b.add(j, self.c64(1))
                v, best, found = b.load(b.gep(src.ptr, [b.add(base, j)])), b.load(best_slot), b.load(nan_slot)
                if is_float:
                    nan = b.fcmp_unordered("uno", v, v)
                    take = b.and_(b.not_(found), b.or_(nan, b.fcmp_ordered(order, v, best)))
                    b.store(b.or_(found, nan), nan_slot)
                else:
                    take = (b.icmp_signed if src.dtype.kind == "i" else b.icmp_unsigned)(order, v, best)
                b.store(b.select(take, v, best), best_slot)
                b.store(b.select(take, j, b.load(index_slot)), index_slot)

            if length > 1:
                ew._loop(ir, b, self.fn, self.c64(length - 1), element)
            b.store(b.load(index_slot), b.gep(out.ptr, [r]))

        ew._loop(ir, b, self.fn, self.c64(src.size // length), row)

    def emit_logical(self, op, form):
        """all / any: whether every / some element is nonzero (a NaN is nonzero)."""
        _, ufunc, x = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        out_var = op.outputs[0]
        out = self.alloc(out_var.dtype, ())
        self.env[id(out_var)] = out
        is_and = ufunc == "logical_and"
        acc = self.entry_alloca(self.i1)
        b.store(ir.Constant(self.i1, int(is_and)), acc)

        def body(i):
            v = b.load(b.gep(src.ptr, [i]))
            if src.dtype.kind == "f":
                nonzero = b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
            else:
                nonzero = b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
            b.store((b.and_ if is_and else b.or_)(b.load(acc), nonzero), acc)

        if src.size:
            ew._loop(ir, b, self.fn, self.c64(src.size), body)
        b.store(b.zext(b.load(acc), self.i8), out.ptr)

    def emit_index(self, op, form):
        """x[...] of ints and static slices: a view where the result is contiguous, else a copy."""
        _, x, axes = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        out_var = op.outputs[0]
        strides, step = [0] * x.ndim, 1
        for d in reversed(range(x.ndim)):
            strides[d] = step
            step *= x.static_shape[d]
        offset, dims, steps = self.c64(0), [], []
        d = 0
        for axis in axes:
            if axis[0] == "new":
                dims.append(1)
                steps.append(0)
                continue
            d += 1
            if axis[0] == "range":
                _, start, stop, stride = axis
                offset = b.add(offset, self.c64(start * strides[d - 1]))
                dims.append(len(range(start, stop, stride)))
                steps.append(stride * strides[d - 1])
                continue
            at = self.index_value(axis[1], x.static_shape[d - 1])
            offset = b.add(offset, b.mul(at, self.c64(strides[d - 1])))
        if tuple(dims) != tuple(out_var.static_shape):
            raise RuntimeError(f"getitem's result shape {dims} is not {list(out_var.static_shape)}")
        base = b.gep(src.ptr, [offset])
        expect, contiguous = 1, True
        for d in reversed(range(len(dims))):
            contiguous = contiguous and (dims[d] <= 1 or steps[d] == expect)
            expect *= dims[d]
        if contiguous and dims:         # a view, as NumPy's
            self.env[id(out_var)] = _Val(base, src.dtype, dims, src.state)
            return
        out = self.alloc(out_var.dtype, dims)       # a number, or a strided piece: copied
        self.env[id(out_var)] = out
        if out.size == 0:
            return
        out_strides, step = [0] * len(dims), 1
        for d in reversed(range(len(dims))):
            out_strides[d] = step
            step *= dims[d]

        def nest(d, at, to):
            if d == len(dims):
                b.store(b.load(b.gep(base, [at])), b.gep(out.ptr, [to]))
                return
            ew._loop(ir, b, self.fn, self.c64(dims[d]), lambda i: nest(
                d + 1, b.add(at, b.mul(i, self.c64(steps[d]))), b.add(to, b.mul(i, self.c64(out_strides[d])))))

        nest(0, self.c64(0), self.c64(0))

    def emit_append(self, op, form):
        """arr.append(x): x's elements into the next row of the items' buffer (ARRAY_FULL when none is left)."""
        _, arr, x = form
        b = self.b
        items, value = self.env[id(arr)], self.env[id(x)]
        count = b.load(items.count)
        self.check(b.icmp_signed("<", count, items.capacity), self.fail[ARRAY_FULL])
        row = _Val(b.gep(items.ptr, [b.mul(count, self.c64(items.size))]), items.dtype, items.shape)
        self.copy(row, value)
        b.store(b.add(count, self.c64(1)), items.count)
        self.env[id(op.outputs[0])] = items

    def emit_array_read(self, op, form):
        """arr[i] of a tensor array the loop carries: its row in the items' buffer (rows below the count
        are never written again), i wrapping and checked against the count as a list index is."""
        _, arr, i = form
        items = self.env[id(arr)]
        index = self.index_value(i, self.b.load(items.count))
        row = _Val(self.b.gep(items.ptr, [self.b.mul(index, self.c64(items.size))]), items.dtype, items.shape)
        if not row.shape:           # a number: a slot of its own (numbers are read from stack slots)
            number = self.alloc(row.dtype, ())
            self.copy(number, row)
            row = number
        self.env[id(op.outputs[0])] = row

    def emit_array_length(self, op, form):
        """len(arr) of a tensor array the loop carries: its count."""
        out = self.alloc(np.int64, ())
        self.b.store(self.b.load(self.env[id(form[1])].count), out.ptr)
        self.env[id(op.outputs[0])] = out

    def emit_view(self, op, form):
        src = self.env[id(form[1])]
        out_var = op.outputs[0]
        view = _Val(src.ptr, src.dtype, out_var.static_shape, src.state)
        if not view.shape:          # a number: a slot of its own (numbers are read from stack slots)
            view = self.alloc(src.dtype, ())
            self.copy(view, src)
        self.env[id(out_var)] = view

    def index_value(self, i, size):
        """An index into an axis of `size` (a number, or an i64 value: a tensor array's count) as i64:
        negative ones wrap; out of range returns INDEX_ERROR."""
        ir, b = self.ir, self.b
        rows = self.c64(size) if isinstance(size, int) else size
        if isinstance(i, (Variable, _Val)):
            index = b.load((i if isinstance(i, _Val) else self.env[id(i)]).ptr)
            unsigned = np.dtype(i.dtype).kind == "u"
            if index.type.width < 64:
                index = b.zext(index, self.i64) if unsigned else b.sext(index, self.i64)
            if unsigned and np.dtype(i.dtype).itemsize == 8:
                self.check(b.icmp_unsigned("<", index, rows), self.fail[INDEX_ERROR])
                return index
        else:
            index = self.c64(i)
        index = b.select(b.icmp_signed("<", index, self.c64(0)), b.add(index, rows), index)
        inside = b.and_(b.icmp_signed(">=", index, self.c64(0)), b.icmp_signed("<", index, rows))
        self.check(inside, self.fail[INDEX_ERROR])
        return index

    def emit_reduce(self, op, form):
        _, (loop, identity), x = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        out_var = op.outputs[0]
        out = self.alloc(out_var.dtype, ())
        self.env[id(out_var)] = out
        rest, count = src.ptr, src.size
        if identity is None:        # maximum, minimum: from the first element, over the others
            b.store(b.load(src.ptr), out.ptr)
            rest, count = b.gep(src.ptr, [self.c64(1)]), src.size - 1
        else:
            b.store(ir.Constant(self.ltype(out_var.dtype), identity), out.ptr)
        if count == 0:
            return
        zero = self.c64(0)
        # loop(context, [out, x, out], &n, [0, itemsize, 0], auxdata): the reduce form of a binary loop
        operands = [(out.ptr, zero, src.dtype), (rest, self.c64(1), src.dtype)]
        ew._call_loop(ir, b, loop, self.loop_addresses(loop), operands, out.ptr, self.c64(count), self.fail[LOOP_FAILED], self.fn, out_stride=zero)
        self.keep.append(loop)

    def emit_reduce_rows(self, op, form, src=None, out=None, length=None):
        _, (loop, identity), x, *inline = form
        ir, b = self.ir, self.b
        if src is None:
            src = self.env.get(id(x))      # None: a chain this sum computes itself
            out_var = op.outputs[0]
            out = self.fresh(out_var)
            length = x.static_shape[-1]
        if out.size == 0:
            return
        producer = inline[1] if len(inline) > 1 else None       # an all-inline chain only this sum reads (its
        #                                                         sum inline: `region._run_self_tests` drops it else)
        if inline and inline[0] and producer is not None and id(producer) in self.summed:
            _, plan, inputs = self.region.forms[id(producer)][:3]       # computed row by row, never stored
            element = self.chain_element(plan, inputs, x.static_shape)
            ew._loop(ir, b, self.fn, self.c64(out.size), lambda r: b.store(self.pairwise_sum(
                None, length, np.dtype(x.dtype), values=[element(r, self.c64(i)) for i in range(length)]), b.gep(out.ptr, [r])))
            self.keep.extend(plan["keep"])
            return
        if inline and inline[0]:        # NumPy's pairwise order inline (checked: `reductions.pairwise_check`)
            ew._loop(ir, b, self.fn, self.c64(out.size), lambda r: b.store(
                self.pairwise_sum(b.gep(src.ptr, [b.mul(r, self.c64(length))]), length, src.dtype), b.gep(out.ptr, [r])))
            return
        count = length if identity is not None else length - 1
        zero = self.c64(0)

        def row(r):
            at, row_start = b.gep(out.ptr, [r]), b.gep(src.ptr, [b.mul(r, self.c64(length))])
            if identity is None:
                b.store(b.load(row_start), at)
                row_start = b.gep(row_start, [self.c64(1)])
            else:
                b.store(ir.Constant(self.ltype(out.dtype), identity), at)
            if count:
                operands = [(at, zero, src.dtype), (row_start, self.c64(1), src.dtype)]
                ew._call_loop(ir, b, loop, self.loop_addresses(loop), operands, at, self.c64(count), self.fail[LOOP_FAILED], self.fn,
                              out_stride=zero)

        ew._loop(ir, b, self.fn, self.c64(out.size), row)
        self.keep.append(loop)

    def pairwise_sum(self, ptr, n, dtype, values=None):
        """`reductions.pairwise_sum` of the n values at ptr (or of `values`), op by op (IEEE adds, no
        reassociation), plus the identity +0.0 as NumPy's loop in reduce form adds it."""
        b = self.b
        zero = self.ir.Constant(self.ltype(dtype), 0.0)
        if values is None:
            values = [b.load(b.gep(ptr, [self.c64(i)])) for i in range(n)]
        if n < 8:
            res = zero
            for v in values:
                res = b.fadd(res, v)
        else:
            lanes = values[:8]
            i = 8
            while i < n - n % 8:
                lanes = [b.fadd(lanes[j], values[i + j]) for j in range(8)]
                i += 8
            res = b.fadd(b.fadd(b.fadd(lanes[0], lanes[1]), b.fadd(lanes[2], lanes[3])),
                         b.fadd(b.fadd(lanes[4], lanes[5]), b.fadd(lanes[6], lanes[7])))
            for v in values[i:]:
                res = b.fadd(res, v)
        return b.fadd(zero, res)

    def emit_layer_norm(self, op, form):
        """Its kernel's steps, row by row: mean = sum / n (NumPy's mean: the pairwise sum, divided in double
        by the count and rounded back), c = x - mean, var = mean(c * c), var += eps, c *= 1 / sqrt(var)
        (NumPy's sqrt loop), c *= weight, c += bias; each an IEEE operation in the array's dtype."""
        _, x, weight, bias, eps, sqrt = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        out = self.fresh(op.outputs[0])
        length = x.static_shape[-1]
        if out.size == 0:
            return
        ty, wide = self.ltype(src.dtype), ir.DoubleType()
        count = ir.Constant(wide, float(length))
        w, bs = (self.env[id(p)] if p is not None else None for p in (weight, bias))
        root = self.entry_alloca(ty)
        one = self.c64(1)

        def mean(total):
            return b.fptrunc(b.fdiv(b.fpext(total, wide), count), ty) if ty != wide else b.fdiv(total, count)

        def row(r):
            base = b.mul(r, self.c64(length))
            xs = [b.load(b.gep(src.ptr, [b.add(base, self.c64(i))])) for i in range(length)]
            m = mean(self.pairwise_sum(None, length, src.dtype, values=xs))
            centered = [b.fsub(v, m) for v in xs]
            var = mean(self.pairwise_sum(None, length, src.dtype, values=[b.fmul(c, c) for c in centered]))
            b.store(b.fadd(var, ir.Constant(ty, float(np.asarray(eps, src.dtype)))), root)
            ew._call_loop(ir, b, sqrt, self.loop_addresses(sqrt), [(root, one, src.dtype)], root, one,
                          self.fail[LOOP_FAILED], self.fn)
            scale = b.fdiv(ir.Constant(ty, 1.0), b.load(root))
            for i, c in enumerate(centered):
                value = b.fmul(c, scale)
                if w is not None:
                    value = b.fmul(value, b.load(b.gep(w.ptr, [self.c64(i)])))
                if bs is not None:
                    value = b.fadd(value, b.load(b.gep(bs.ptr, [self.c64(i)])))
                b.store(value, b.gep(out.ptr, [b.add(base, self.c64(i))]))

        ew._loop(ir, b, self.fn, self.c64(out.size // length), row)
        self.keep.append(sqrt)

    def emit_softmax(self, op, form):
        """Its kernel's calls: m = max(x, -1); e = x - m; [log_]softmax from exp(e) and its row sums."""
        _, x, log, (maximum, add, exp, *rest), inline_sums = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        out_var = op.outputs[0]
        shape, rows, length = x.static_shape, math.prod(x.static_shape[:-1]), x.static_shape[-1]
        if log or src.size == 0:
            m = self.row_reduce(src, maximum, rows, length)
        else:       # softmax alone: a max of the row inline (its value is NumPy's: only a zero's sign may
            m = self.row_max(src, rows, length)        # differ, and exp(x - (+-0)) is the same either way)
        shifted = self.alloc(out_var.dtype, shape)
        self.env[id(out_var)] = shifted
        n = self.c64(src.size)
        if src.size == 0:
            return
        one = self.c64(1)
        self.by_rows(shifted, src, m, rows, length, b.fsub)
        e = self.alloc(src.dtype, shape)
        ew._call_loop(ir, b, exp, self.loop_addresses(exp), [(shifted.ptr, one, src.dtype)], e.ptr, n, self.fail[LOOP_FAILED], self.fn)
        total = self.row_reduce(e, add, rows, length, inline_sums)
        if log:         # shifted -= log(sum)
            ew._call_loop(ir, b, rest[0], self.loop_addresses(rest[0]), [(total.ptr, one, src.dtype)], total.ptr, self.c64(rows),
                          self.fail[LOOP_FAILED], self.fn)
            self.by_rows(shifted, shifted, total, rows, length, b.fsub)
        else:           # e /= sum
            self.by_rows(e, e, total, rows, length, b.fdiv)
            self.env[id(out_var)] = e
        self.keep.extend([maximum[0], add[0], exp] + rest)

    def by_rows(self, dest, src, per_row, rows, length, operation):
        """dest[r, i] = operation(src[r, i], per_row[r]): one IEEE operation per element, the row's value
        read once (no broadcast copy)."""
        ir, b = self.ir, self.b

        def row(r):
            value = b.load(b.gep(per_row.ptr, [r]))
            base = b.mul(r, self.c64(length))
            ew._loop(ir, b, self.fn, self.c64(length), lambda i: b.store(
                operation(b.load(b.gep(src.ptr, [b.add(base, i)])), value), b.gep(dest.ptr, [b.add(base, i)])))

        ew._loop(ir, b, self.fn, self.c64(rows), row)

    def row_max(self, src, rows, length):
        """Each row's largest value (NaN where the row holds one), inline."""
        ir, b = self.ir, self.b
        out = self.alloc(src.dtype, (rows,))
        ty = self.ltype(src.dtype)
        best, nan = self.entry_alloca(ty), self.entry_alloca(self.i1)

        def row(r):
            base = b.mul(r, self.c64(length))
            first = b.load(b.gep(src.ptr, [base]))
            b.store(first, best)
            b.store(b.fcmp_unordered("uno", first, first), nan)

            def element(j):
                v = b.load(b.gep(src.ptr, [b.add(base, b.add(j, self.c64(1)))]))
                b.store(b.or_(b.load(nan), b.fcmp_unordered("uno", v, v)), nan)
                b.store(b.select(b.fcmp_ordered(">", v, b.load(best)), v, b.load(best)), best)

            if length > 1:
                ew._loop(ir, b, self.fn, self.c64(length - 1), element)
            b.store(b.select(b.load(nan), ir.Constant(ty, float("nan")), b.load(best)), b.gep(out.ptr, [r]))

        ew._loop(ir, b, self.fn, self.c64(rows), row)
        return out

    def row_reduce(self, src, loop_identity, rows, length, inline=False):
        """A buffer of each row's reduction (NumPy's loop in reduce form, or with `inline` its pairwise sum
        inline, as emit_reduce_rows)."""
        out = self.alloc(src.dtype, (rows,))
        self.emit_reduce_rows(None, ("reduce_rows", loop_identity, None, inline), src=src, out=out, length=length)
        return out

    def emit_topk(self, op, form):
        """The kernel's order for the largest k: NaNs first, larger values first, ties by lower index."""
        _, x, k = form
        ir, b = self.ir, self.b
        src = self.env[id(x)]
        values_var, index_var = op.outputs
        values, indices = self.alloc(values_var.dtype, values_var.static_shape), self.alloc(np.int64, index_var.static_shape)
        self.env[id(values_var)], self.env[id(index_var)] = values, indices
        length = x.static_shape[-1]
        if values.size == 0:
            return
        is_float = src.dtype.kind == "f"
        before_v = self.entry_alloca(self.ltype(src.dtype))
        before_i, best_i = self.entry_alloca(self.i64), self.entry_alloca(self.i64)
        best_v = self.entry_alloca(self.ltype(src.dtype))
        found = self.entry_alloca(self.i1)

        def precedes(av, ai, bv, bi):
            """(av, ai) comes before (bv, bi) in the kernel's order."""
            if is_float:
                a_nan, b_nan = b.fcmp_unordered("uno", av, av), b.fcmp_unordered("uno", bv, bv)
                larger = b.fcmp_ordered(">", av, bv)
                same = b.fcmp_ordered("==", av, bv)
                tie = b.or_(same, b.and_(a_nan, b_nan))
                return b.or_(b.and_(a_nan, b.not_(b_nan)),
                             b.or_(b.and_(b.not_(b.or_(a_nan, b_nan)), larger),
                                   b.and_(tie, b.icmp_signed("<", ai, bi))))
            compare = b.icmp_signed if src.dtype.kind == "i" else b.icmp_unsigned
            return b.or_(compare(">", av, bv), b.and_(b.icmp_signed("==", av, bv), b.icmp_signed("<", ai, bi)))

        def row(r):
            base = b.mul(r, self.c64(length))

            def pick(j):
                b.store(ir.Constant(self.i1, 0), found)

                def scan(i):
                    v = b.load(b.gep(src.ptr, [b.add(base, i)]))
                    after_previous = b.or_(b.icmp_signed("==", j, self.c64(0)),
                                           precedes(b.load(before_v), b.load(before_i), v, i))
                    better = b.or_(b.not_(b.load(found)), precedes(v, i, b.load(best_v), b.load(best_i)))
                    take = b.and_(after_previous, better)
                    b.store(b.select(take, v, b.load(best_v)), best_v)
                    b.store(b.select(take, i, b.load(best_i)), best_i)
                    b.store(b.or_(b.load(found), take), found)

                ew._loop(ir, b, self.fn, self.c64(length), scan)
                at = b.add(b.mul(r, self.c64(k)), j)
                b.store(b.load(best_v), b.gep(values.ptr, [at]))
                b.store(b.load(best_i), b.gep(indices.ptr, [at]))
                b.store(b.load(best_v), before_v)
                b.store(b.load(best_i), before_i)

            ew._loop(ir, b, self.fn, self.c64(k), pick)

        ew._loop(ir, b, self.fn, self.c64(values.size // k), row)

    def emit_branch(self, op, form):
        ir, b = self.ir, self.b
        outs = [self.alloc(o.dtype, o.static_shape) for o in op.outputs]
        pred = b.load(self.env[id(op.inputs[0])].ptr)
        self.bind_closure(op)
        then, other, after = self.new_block("then"), self.new_block("else"), self.new_block("endif")
        b.cbranch(b.icmp_unsigned("!=", pred, ir.Constant(self.i8, 0)), then, other)
        for block, sub in zip((then, other), op.sub_blocks()):
            b.position_at_end(block)
            self.emit_block(sub)
            for o, r in zip(outs, sub.results):
                self.copy(o, self.value(r, o))
            b.branch(after)
        b.position_at_end(after)
        for var, val in zip(op.outputs, outs):
            self.env[id(var)] = val
