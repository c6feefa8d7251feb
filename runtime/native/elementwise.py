"""A chain of ufunc steps (a `fused_elementwise` op's) as one native function over NumPy arrays.

    rc = kernel(out, in0, in1, ...)        # PyObject* ndarrays; 0 = done, else run the chain on NumPy

The function reads each array's data, dims and strides from its struct (`llvm.ARRAY_LAYOUT`),
checks its type, rank and dtype, broadcasts it against `out`'s shape (a C-contiguous array the
caller made) and walks `out` in flat order, BLOCK elements at a time. Per block each run of
consecutive inline steps is one loop (each element's values in registers) and each other step one call
of NumPy's loop; a step's value is stored in a stack buffer only where a later run or loop reads it
(the last step into `out`'s block):

- `add`, `subtract`, `multiply`, `divide`, `negative`, `square`, `reciprocal` on floats and ints and the
  comparisons are inline IEEE operations (no fast-math flags: no FMA contraction, no reassociation);
- every other ufunc is NumPy's own strided loop for the step's dtypes (`numpy_loops`), called on
  the block: the bits are NumPy's.

An input of `out`'s layout is read in place, one broadcast along every dim as one value, any
other broadcast gathered into a block buffer first. Step dtypes are NumPy's (`ufunc.resolve_dtypes`,
a number weak as NEP 50 says), operands cast inline where NumPy casts them. `compile_chain` returns
a reason string instead of a kernel for what it does not handle, and the caller keeps the NumPy
chain; a compiled kernel must give the NumPy chain's bits on a test input before it is used.
"""
import ctypes
import hashlib
import threading

import numpy as np

from ..ops.fused import step_arg
from . import disk_cache, objects
from . import fast_math as _fast_math
from .llvm import ARRAY_LAYOUT, engine, may_be_available
from .numpy_loops import same_bits, strided_loop, probe_values

BLOCK = 512         # elements per block: a multiple of 64, so a SIMD loop splits a block as it splits the array
_INLINE_FLOAT = {"add", "subtract", "multiply", "divide", "true_divide", "negative", "square", "reciprocal",
                 "less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}
_INLINE_INT = {"add", "subtract", "multiply", "negative", "square",
               "less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}
INLINE_STEPS = _INLINE_FLOAT         # steps that may be inline (for floats; ints: fewer), by name alone
_COMPARE = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=", "equal": "==",
            "not_equal": "!="}
_SUPPORTED = {np.dtype(c) for c in "?bhilqBHILQfd"}

_KERNELS = {}
_LOCK = threading.Lock()


class ChainKernel:
    """A compiled chain: `run(*arrays)` computes it (NumPy's chain where the native one declines)."""

    def __init__(self, address, arity, keep):
        self.keep = keep            # the NumPy loops' capsules and the constants the code points into
        self.cfunc = ctypes.PYFUNCTYPE(ctypes.c_int, *[ctypes.py_object] * (arity + 1))(address)
        self.declined = 0           # calls the kernel handed back to NumPy (shape or dtype not as compiled)
        self.approximate = False    # fast_math's approximations: not NumPy's bits (so never swapped with it)


def compile_chain(inputs, out, steps):
    """A ChainKernel for steps over inputs [(dtype, static shape)] giving out (dtype, static shape),
    or a string saying why not."""
    job = chain_job(inputs, out, steps)
    return job if isinstance(job, str) else job()


def chain_job(inputs, out, steps, fast_math=False):
    """What compiling the chain takes, split so the costly part may run later in another thread: a
    string saying why the chain cannot be native, or a function `job()` that compiles it (once per
    distinct chain; a ChainKernel, or why not) with `job.cached()`, what an earlier job made or the
    disk cache holds (loaded without llvmlite), or None. With fast_math, float32 exp and tanh steps are
    `fast_math.py`'s approximations (the kernel then differs from a chain's without)."""
    if not may_be_available():
        return "llvmlite unavailable"
    plan = _plan(inputs, out, steps, fast_math)
    if isinstance(plan, str):
        return plan
    plan["source"] = (inputs, out, steps)
    key = repr(plan["key"])

    def job():
        kernel = _KERNELS.get(key)
        if kernel is None:
            with _LOCK:
                kernel = _KERNELS.get(key)
                if kernel is None:
                    if engine() is None:
                        kernel = "llvmlite unavailable"
                    else:
                        kernel = _from_disk(plan, with_llvmlite=True) or _compile(plan)
                    _KERNELS[key] = kernel
        return kernel

    def cached():
        kernel = _KERNELS.get(key)
        if kernel is None:          # not under _LOCK: a compile in another thread never blocks this one
            kernel = _from_disk(plan, with_llvmlite=False)
            if kernel is not None:
                kernel = _KERNELS.setdefault(key, kernel)
        return kernel

    job.cached = cached
    return job


def optimized_ir(inputs, out, steps, fast_math=False, assembly=False):
    """What LLVM makes of a chain (arguments as `chain_job`'s): its optimised IR, or the host's assembly,
    as text; or why the chain is not native. For tests, and for reading whether a loop vectorised."""
    if engine() is None:
        return "llvmlite unavailable"
    plan = _plan(inputs, out, steps, fast_math)
    plan = plan if isinstance(plan, str) else _with_loops(plan)
    if isinstance(plan, str):
        return plan
    module = engine().optimized(_module(plan)[1])
    return engine().target_machine.emit_assembly(module) if assembly else str(module)


def _with_loops(plan):
    """The plan with NumPy's loops for its non-inline steps (`numpy_loops.strided_loop`: fetched and
    self-tested, ~1 ms each the first time, so not at plan build), or why one is unusable."""
    steps = []
    for j, st in enumerate(plan["steps"]):
        if isinstance(st["loop"], tuple):
            ufunc, resolved = st["loop"]
            loop = strided_loop(ufunc, resolved)
            if loop is None:
                return f"step {j} ({st['ufunc']}): no usable NumPy loop for {resolved}"
            st = dict(st, loop=loop)
        steps.append(st)
    return dict(plan, steps=steps)


def _from_disk(plan, with_llvmlite):
    """The kernel the disk cache holds for the plan, or None (none, cache off, or it needs llvmlite to
    load and with_llvmlite is False, or it fails the self-test here)."""
    entry = disk_cache.lookup(repr(plan["key"]))
    if entry is None or (entry[2] is None and not with_llvmlite):
        return None
    plan = _with_loops(plan)
    if isinstance(plan, str):
        return None
    meta, obj, shared = entry
    kernel = _load(plan, meta.get("name", ""), obj, shared)
    if not isinstance(kernel, str):
        kernel.from_disk = True
    return None if isinstance(kernel, str) else kernel


def _compile(plan):
    """Compile the plan to object code, load it, self-test it, and keep it on disk: a ChainKernel or why not."""
    plan = _with_loops(plan)
    if isinstance(plan, str):
        return plan
    name, text = _module(plan)
    obj = engine().emit_object(text)
    shared = objects.link(obj)
    kernel = _load(plan, name, obj, shared)
    if not isinstance(kernel, str):
        disk_cache.write(disk_cache.entry_key(repr(plan["key"])), {"name": name}, obj, shared)
    return kernel


def _load(plan, name, obj, shared):
    """The code loaded, its address table filled with this process's addresses, self-tested."""
    loaded = objects.load(obj, shared, [name, name + "_table"])
    if loaded is None:
        return "the compiled code could not be loaded"
    addresses, holder = loaded
    table = _table(plan)
    (ctypes.c_uint64 * len(table)).from_address(addresses[name + "_table"])[:] = table
    kernel = ChainKernel(addresses[name], len(plan["inputs"]), list(plan["keep"]) + [holder] + [
        st["loop"] for st in plan["steps"] if st["loop"] is not None])
    kernel.approximate = plan["approximate"]
    return _self_test(kernel, *plan["source"], approximate=plan["approximate"]) or kernel


def _table(plan):
    """What the code reads from its table: NumPy's array type, then each NumPy loop's function,
    context and auxdata (addresses of this process)."""
    table = [id(np.ndarray)]
    for st in plan["steps"]:
        if st["loop"] is not None:
            table += [st["loop"].loop, st["loop"].context or 0, st["loop"].auxdata or 0]
    return table


# --- what each step computes, in which dtypes -------------------------------------------------------
def _plan(inputs, out, steps, fast_math=False):
    in_dtypes = [np.dtype(d) for d, _ in inputs]
    out_dtype, out_shape = np.dtype(out[0]), tuple(out[1])
    for d in in_dtypes + [out_dtype]:
        if d not in _SUPPORTED or not d.isnative:
            return f"dtype {d} is not supported natively"
    if any(len(shape) > len(out_shape) for _, shape in inputs):
        return "an input has more dims than the result"
    planned, dtypes, keep = [], [], []
    for j, step in enumerate(steps):
        ufunc = getattr(np, step[0], None)
        if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1:
            return f"step {j} ({step[0]}) is not a one-output ufunc"
        args = step[1:]
        kinds = [step_arg(a, in_dtypes, dtypes) if isinstance(a, dict) else type(a) for a in args]
        try:
            resolved = ufunc.resolve_dtypes(tuple(kinds) + (None,))
        except Exception as e:
            return f"step {j} ({step[0]}): {e}"
        if any(d not in _SUPPORTED for d in resolved):
            return f"step {j} ({step[0]}) computes in {resolved}, not supported natively"
        loop_in, result = resolved[:-1], resolved[-1]
        operands = []
        for a, kind, want in zip(args, kinds, loop_in):
            if isinstance(a, dict):
                (where, k), = a.items()
                if kind != want and not _castable(kind, want):
                    return f"step {j} ({step[0]}) casts {kind} to {want}"
                operands.append((where, k, kind))
            else:
                value = _number(a, want)
                if value is None:
                    return f"step {j} ({step[0]}): {a!r} is not a {want} value"
                keep.append(value)
                operands.append(("num", value, want))
        inline = _inline(step[0], loop_in, result)
        if not inline and fast_math and _fast_math.approximated(step[0], loop_in, result):
            inline = "approximate"
        loop = None if inline else (ufunc, resolved)        # fetched and self-tested by _with_loops
        planned.append({"ufunc": step[0], "args": operands, "loop_in": loop_in, "dtype": result,
                        "inline": inline, "loop": loop})
        dtypes.append(result)
    if dtypes[-1] != out_dtype:
        return f"the chain computes {dtypes[-1]}, the op says {out_dtype}"
    approximate = any(p["inline"] == "approximate" for p in planned)
    key = ([(d.str, len(s)) for d, (_, s) in zip(in_dtypes, inputs)], (out_dtype.str, len(out_shape)),
           [(p["ufunc"], [(w, k.tobytes() if w == "num" else k, np.dtype(d).str) for w, k, d in p["args"]],
             [d.str for d in p["loop_in"]]) for p in planned]) + (("fast_math",) if approximate else ())
    return {"key": key, "approximate": approximate, "inputs": [(d, len(s)) for d, (_, s) in zip(in_dtypes, inputs)],
            "out": (out_dtype, len(out_shape)), "steps": planned, "keep": keep}


def _castable(src, dst):
    """Casts NumPy makes between a step's operand and its loop that are one LLVM instruction here."""
    if dst.kind == "f":
        return src.kind in "biu" or (src.kind == "f" and src.itemsize <= dst.itemsize)
    if dst.kind in "iu":
        return src.kind == "b" or (src.kind in "iu" and src.itemsize <= dst.itemsize
                                   and (src.kind == dst.kind or src.kind == "u" and dst.kind == "i"))
    return False


def _number(a, dtype):
    """A step's number as a 0-d array of the loop's dtype (NEP 50 converts the weak number so), or None."""
    try:
        with np.errstate(all="raise"):
            value = np.asarray(a, dtype=dtype)
    except (OverflowError, ValueError, TypeError, FloatingPointError):
        return None
    if dtype.kind in "biu" and value.item() != a:
        return None
    return np.ascontiguousarray(value.reshape(1))


def _inline(name, loop_in, result):
    kinds = {d.kind for d in loop_in}
    if len(set(loop_in)) != 1 or kinds == {"b"}:
        return False
    if kinds == {"f"}:
        return name in _INLINE_FLOAT
    return name in _INLINE_INT


# --- the LLVM function ------------------------------------------------------------------------------
def _module(plan):
    """(function name, LLVM module text) of the chain; addresses it needs come from `{name}_table`."""
    import llvmlite.ir as ir

    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    p8 = ir.PointerType(i8)
    n_in = len(plan["inputs"])
    out_dtype, nd = plan["out"]
    name = "chain_" + hashlib.sha256(repr(plan["key"]).encode()).hexdigest()[:24]
    module = ir.Module(name=name)
    module.triple = engine().target_machine.triple
    fn = ir.Function(module, ir.FunctionType(i32, [p8] * (n_in + 1)), name)
    table_values = _table(plan)
    table = ir.GlobalVariable(module, ir.ArrayType(i64, len(table_values)), name + "_table")
    table.initializer = ir.Constant(ir.ArrayType(i64, len(table_values)), None)
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    with b.goto_block(entry):
        slots = [b.load(b.gep(table, [ir.Constant(i32, 0), ir.Constant(i32, k)])) for k in range(len(table_values))]
    loop_slots = iter(range(1, len(table_values), 3))
    fail_shape, fail_type, fail_loop = (fn.append_basic_block(n) for n in ("bad_shape", "bad_type", "loop_failed"))
    for block, code in ((fail_shape, 1), (fail_type, 2), (fail_loop, 3)):
        ir.IRBuilder(block).ret(ir.Constant(i32, code))

    def c64(v):
        return ir.Constant(i64, int(v))

    def field(obj, key, ty):
        ptr = b.gep(obj, [c64(ARRAY_LAYOUT[key])])
        return b.load(b.bitcast(ptr, ir.PointerType(ty)))

    def check(cond, bad):
        ok = fn.append_basic_block("ok")
        b.cbranch(cond, ok, bad)
        b.position_at_end(ok)

    def array(obj, dtype, rank):
        """(data, [dims], [strides]) of an ndarray argument, after checking its type, rank and dtype."""
        check(b.icmp_unsigned("==", field(obj, "ob_type", i64), slots[0]), fail_type)
        check(b.icmp_signed("==", field(obj, "nd", i32), ir.Constant(i32, rank)), fail_type)
        descr = field(obj, "descr", p8)
        type_num = b.load(b.bitcast(b.gep(descr, [c64(ARRAY_LAYOUT["type_num"])]), ir.PointerType(i32)))
        check(b.icmp_signed("==", type_num, ir.Constant(i32, dtype.num)), fail_type)
        data = field(obj, "data", p8)
        dims_p = field(obj, "dimensions", ir.PointerType(i64))
        strides_p = field(obj, "strides", ir.PointerType(i64))
        dims = [b.load(b.gep(dims_p, [c64(d)])) for d in range(rank)]
        strides = [b.load(b.gep(strides_p, [c64(d)])) for d in range(rank)]
        return data, dims, strides

    def alloca_block(ty, count=BLOCK):
        with b.goto_block(entry):
            b.position_at_start(entry)
            slot = b.alloca(ir.ArrayType(ty, count))
            slot.align = 64
        return b.bitcast(slot, ir.PointerType(ty))

    def var(ty, init):
        with b.goto_block(entry):
            b.position_at_start(entry)
            slot = b.alloca(ty)
        b.store(init, slot)
        return slot

    # out: C-contiguous, of the kernel's rank and dtype
    out_data, out_dims, out_strides = array(fn.args[0], out_dtype, nd)
    c_strides, step = [None] * nd, c64(out_dtype.itemsize)
    for d in reversed(range(nd)):
        c_strides[d] = step
        step = b.mul(step, out_dims[d])
    for d in range(nd):
        ok = b.or_(b.icmp_signed("<=", out_dims[d], c64(1)), b.icmp_signed("==", out_strides[d], c_strides[d]))
        check(ok, fail_type)
    total = c64(1)
    for d in out_dims:
        total = b.mul(total, d)

    # inputs: each dim equal to out's or 1 (then stride 0); one of out's layout, one value, or neither
    sources = []
    for k, (dtype, rank) in enumerate(plan["inputs"]):
        data, dims, strides = array(fn.args[k + 1], dtype, rank)
        size = c64(dtype.itemsize)
        bstrides = [c64(0)] * (nd - rank)
        for d in range(rank):
            od = out_dims[nd - rank + d]
            same = b.icmp_signed("==", dims[d], od)
            check(b.or_(same, b.icmp_signed("==", dims[d], c64(1))), fail_shape)
            bstrides.append(b.select(same, strides[d], c64(0)))
        scalar = ir.Constant(ir.IntType(1), 1)
        contiguous = ir.Constant(ir.IntType(1), 1)
        expect = size
        for d in reversed(range(nd)):
            short = b.icmp_signed("<=", out_dims[d], c64(1))
            scalar = b.and_(scalar, b.or_(short, b.icmp_signed("==", bstrides[d], c64(0))))
            contiguous = b.and_(contiguous, b.or_(short, b.icmp_signed("==", bstrides[d], expect)))
            expect = b.mul(expect, out_dims[d])
        sources.append({"dtype": dtype, "data": data, "bstrides": bstrides, "contiguous": contiguous,
                        "scalar": scalar, "gather": alloca_block(_ltype(ir, dtype))})

    done = fn.append_basic_block("done")
    ir.IRBuilder(done).ret(ir.Constant(i32, 0))
    start = var(i64, c64(0))
    head = fn.append_basic_block("block")
    check(b.icmp_signed(">", total, c64(0)), done)
    b.branch(head)
    b.position_at_end(head)
    first = b.load(start)
    left = b.sub(total, first)
    n = b.select(b.icmp_signed("<", left, c64(BLOCK)), left, c64(BLOCK))

    # where each input's block is: (pointer, element stride 0/1)
    blocks = []
    for src in sources:
        ty = _ltype(ir, src["dtype"])
        ptr_slot, es_slot = var(ir.PointerType(ty), ir.Constant(ir.PointerType(ty), None)), var(i64, c64(0))
        typed = b.bitcast(src["data"], ir.PointerType(ty))
        with b.if_else(src["contiguous"]) as (then, other):
            with then:
                b.store(b.gep(typed, [first]), ptr_slot)
                b.store(c64(1), es_slot)
            with other:
                with b.if_else(src["scalar"]) as (one, gather):
                    with one:
                        b.store(typed, ptr_slot)
                        b.store(c64(0), es_slot)
                    with gather:
                        _gather(ir, b, fn, src, out_dims, first, n, var)
                        b.store(src["gather"], ptr_slot)
                        b.store(c64(1), es_slot)
        blocks.append((b.load(ptr_slot), b.load(es_slot)))

    # the steps
    values = []
    out_typed = b.bitcast(out_data, ir.PointerType(_ltype(ir, out_dtype)))

    def operands_of(j, st, values):
        operands = []
        for where, k, dtype in st["args"]:
            if where == "in":
                ptr, es = blocks[k]
            elif where == "step":
                ptr, es = values[k], c64(1)
            else:
                const = ir.GlobalVariable(module, _ltype(ir, dtype), f"num_{j}_{len(operands)}")
                const.global_constant = True
                const.linkage = "internal"
                const.initializer = ir.Constant(_ltype(ir, dtype), k.item() if dtype.kind != "b" else int(k.item()))
                ptr, es = const, c64(0)
            operands.append((ptr, es, np.dtype(dtype)))
        return operands

    steps = plan["steps"]
    for run in _inline_runs(steps):
        if steps[run[0]]["inline"]:
            dests = {}
            for j in run:
                if j == len(steps) - 1:
                    dests[j] = b.gep(out_typed, [first])
                elif _read_after(steps, j, run[-1]):
                    dests[j] = alloca_block(_ltype(ir, steps[j]["dtype"]))
            _fused_run(ir, b, fn, steps, run, operands_of, values, dests, n)
            values += [dests.get(j) for j in run]
            continue
        j, = run
        st = steps[j]
        dest = b.gep(out_typed, [first]) if j == len(steps) - 1 else alloca_block(_ltype(ir, st["dtype"]))
        operands = [_cast_block(ir, b, fn, o, want, n, alloca_block)
                    for o, want in zip(operands_of(j, st, values), st["loop_in"])]
        k = next(loop_slots)
        _call_loop(ir, b, st["loop"], slots[k:k + 3], operands, dest, n, fail_loop, fn)
        values.append(dest)

    after = b.add(first, n)
    b.store(after, start)
    b.cbranch(b.icmp_signed("<", after, total), head, done)
    text = str(module)
    if plan["approximate"] or any(st["loop"] is not None for st in plan["steps"]):
        # 16-float vectors where the CPU has AVX-512 (LLVM prefers 8 there): fast_math's arithmetic-dense
        # loops, and the inline runs around a NumPy loop, whose block is the unit (W5's exact GELU 8-10%
        # faster; the same operations, so the same bits). Not for all-inline chains: nothing measured faster
        head = f'define i32 @"{name}"(' + ", ".join(f'i8* %".{k + 1}"' for k in range(n_in + 1)) + ")"
        text = text.replace(head, head + " #0", 1) + f"\nattributes #0 = {{ {_fast_math.FUNCTION_ATTRIBUTES} }}\n"
    return name, text


def _ltype(ir, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return ir.FloatType() if dtype.itemsize == 4 else ir.DoubleType()
    return ir.IntType(8 * dtype.itemsize)


def _gather(ir, b, fn, src, out_dims, first, n, var):
    """Copy n elements of a broadcast input, from flat position `first` of out on, into its block buffer:
    a run along the last dim at a time (a bias row, say), each a loop LLVM vectorises where the run is
    contiguous, the index carried into the dims before it between runs."""
    i64 = ir.IntType(64)
    nd = len(out_dims)
    ty = _ltype(ir, src["dtype"])
    index = [var(i64, ir.Constant(i64, 0)) for _ in range(nd)]
    offset = var(i64, ir.Constant(i64, 0))
    rest = first
    for d in reversed(range(nd)):
        b.store(b.srem(rest, out_dims[d]), index[d])
        b.store(b.add(b.load(offset), b.mul(b.load(index[d]), src["bstrides"][d])), offset)
        rest = b.sdiv(rest, out_dims[d])
    gathered = var(i64, ir.Constant(i64, 0))
    last, stride = out_dims[nd - 1], src["bstrides"][nd - 1]
    body, carry, after = (fn.append_basic_block(name) for name in ("gather_run", "gather_carry", "gathered"))
    b.branch(body)
    b.position_at_end(body)
    at = b.load(gathered)
    row_left, block_left = b.sub(last, b.load(index[nd - 1])), b.sub(n, at)
    run = b.select(b.icmp_signed("<", row_left, block_left), row_left, block_left)
    base = b.gep(src["data"], [b.load(offset)])
    dest = b.gep(src["gather"], [at])

    def copy(element_at):
        def one(i):
            value = b.load(b.bitcast(element_at(i), ir.PointerType(ty)))
            value.align = 1
            b.store(value, b.gep(dest, [i]))
        return one

    with b.if_else(b.icmp_signed("==", stride, ir.Constant(i64, src["dtype"].itemsize))) as (dense, strided):
        with dense:
            typed = b.bitcast(base, ir.PointerType(ty))
            _loop(ir, b, fn, run, copy(lambda i: b.bitcast(b.gep(typed, [i]), ir.PointerType(ir.IntType(8)))))
        with strided:
            _loop(ir, b, fn, run, copy(lambda i: b.gep(base, [b.mul(i, stride)])))
    b.store(b.add(at, run), gathered)
    b.store(b.add(b.load(offset), b.mul(run, stride)), offset)
    b.store(b.add(b.load(index[nd - 1]), run), index[nd - 1])
    b.cbranch(b.icmp_signed("<", b.add(at, run), n), carry, after)
    # the run ended its row: the last index back to 0, carrying into the dims before it
    b.position_at_end(carry)
    carried = fn.append_basic_block("gather_carried")
    for d in reversed(range(nd)):
        if d < nd - 1:
            b.store(b.add(b.load(index[d]), ir.Constant(i64, 1)), index[d])
            b.store(b.add(b.load(offset), src["bstrides"][d]), offset)
            wrap = fn.append_basic_block("wrap")
            b.cbranch(b.icmp_signed("<", b.load(index[d]), out_dims[d]), carried, wrap)
            b.position_at_end(wrap)
        b.store(b.sub(b.load(offset), b.mul(out_dims[d], src["bstrides"][d])), offset)
        b.store(ir.Constant(i64, 0), index[d])
    b.branch(carried)
    b.position_at_end(carried)
    b.branch(body)
    b.position_at_end(after)


def _convert(ir, b, value, src, dst):
    """NumPy's cast of one value from src to dst (only the casts `_castable` admits)."""
    if src == dst:
        return value
    ty = _ltype(ir, dst)
    if dst.kind == "f":
        if src.kind == "f":
            return b.fpext(value, ty)
        return b.sitofp(value, ty) if src.kind == "i" else b.uitofp(value, ty)
    if src.itemsize == dst.itemsize:
        return value
    return b.sext(value, ty) if src.kind == "i" else b.zext(value, ty)


def _loop(ir, b, fn, n, emit_body, interleave=None):
    """for i in range(n): emit_body(i)  (n >= 1); `interleave`: how many vectors LLVM's vectoriser
    computes per iteration (its own choice without)."""
    i64 = ir.IntType(64)
    pre = b.block
    body, after = fn.append_basic_block("elements"), fn.append_basic_block("elements_done")
    b.branch(body)
    b.position_at_end(body)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), pre)
    emit_body(i)
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, b.block)
    back = b.cbranch(b.icmp_signed("<", nxt, n), body, after)
    if interleave:
        module = fn.module
        count = module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                     ir.Constant(ir.IntType(32), interleave)])
        loop_id = module.add_metadata([count, ir.MetaDataString(module, body.name)])
        loop_id.operands = (loop_id,) + tuple(loop_id.operands)     # a loop's id names itself first
        back.set_metadata("llvm.loop", loop_id)
    b.position_at_end(after)


def _inline_loop(ir, b, fn, st, operands, dest, n):
    want = st["loop_in"][0]
    name = st["ufunc"]

    def body(i):
        args = []
        for ptr, es, dtype in operands:
            value = b.load(b.gep(ptr, [b.mul(i, es)]))
            value.align = 1
            args.append(_convert(ir, b, value, dtype, want))
        if st["inline"] == "approximate":
            value = _fast_math.emit(ir, b, fn.module, name, args[0])
        else:
            value = _compute(ir, b, name, want, args)
        b.store(value, b.gep(dest, [i]))

    _loop(ir, b, fn, n, body, interleave=_fast_math.INTERLEAVE if st["inline"] == "approximate" else None)


def _inline_runs(steps):
    """The chain's steps as runs: each run of consecutive inline steps one run, each NumPy loop step its own."""
    runs = []
    for j, st in enumerate(steps):
        if st["inline"] and runs and steps[runs[-1][-1]]["inline"]:
            runs[-1].append(j)
        else:
            runs.append([j])
    return runs


def _read_after(steps, j, end):
    """Whether a step after `end` reads step j's value (so it must be kept in a block buffer)."""
    return any(where == "step" and k == j for st in steps[end + 1:] for where, k, _ in st["args"])


def _fused_run(ir, b, fn, steps, run, operands_of, values, dests, n):
    """The inline steps `run` (consecutive) as one loop over the block, each element's step values in
    registers (the same operations, in the same order and dtypes, as a loop a step: the same bits); only
    the values in `dests` ({step: block pointer}: the chain's result, and what a later NumPy loop or run
    reads) are stored, the rest never materialised. `values`: the block buffers of the steps before."""
    inside = set(run)
    operands = {j: operands_of(j, steps[j], [None if k in inside else v for k, v in enumerate(values)]
                                + [None] * len(run)) for j in run}

    def body(i):
        computed = {}
        for j in run:
            st = steps[j]
            want = st["loop_in"][0]
            args = []
            for (where, k, _), (ptr, es, dtype) in zip(st["args"], operands[j]):
                if where == "step" and k in computed:
                    value = computed[k]
                else:
                    value = b.load(b.gep(ptr, [b.mul(i, es)]))
                    value.align = 1
                args.append(_convert(ir, b, value, dtype, want))
            if st["inline"] == "approximate":
                computed[j] = _fast_math.emit(ir, b, fn.module, st["ufunc"], args[0])
            else:
                computed[j] = _compute(ir, b, st["ufunc"], want, args)
        for j, dest in dests.items():
            b.store(computed[j], b.gep(dest, [i]))

    approximate = any(steps[j]["inline"] == "approximate" for j in run)
    _loop(ir, b, fn, n, body, interleave=_fast_math.INTERLEAVE if approximate else None)


def _compute(ir, b, name, dtype, args):
    is_float = dtype.kind == "f"
    if name in _COMPARE:
        op = _COMPARE[name]
        if is_float:
            flag = b.fcmp_unordered(op, *args) if name == "not_equal" else b.fcmp_ordered(op, *args)
        elif dtype.kind == "i":
            flag = b.icmp_signed(op, *args)
        else:
            flag = b.icmp_unsigned(op, *args)
        return b.zext(flag, ir.IntType(8))
    if name == "negative":
        return b.fneg(args[0]) if is_float else b.neg(args[0])
    if name == "square":
        args = [args[0], args[0]]
        name = "multiply"
    if name == "reciprocal":
        return b.fdiv(ir.Constant(args[0].type, 1.0), args[0])
    ops = {"add": (b.fadd, b.add), "subtract": (b.fsub, b.sub), "multiply": (b.fmul, b.mul),
           "divide": (b.fdiv, None), "true_divide": (b.fdiv, None)}
    return ops[name][0 if is_float else 1](*args)


def _cast_block(ir, b, fn, operand, want, n, alloca_block):
    """An operand in the loop's dtype: itself, or its block cast into a buffer."""
    ptr, es, dtype = operand
    if dtype == want:
        return operand
    dest = alloca_block(_ltype(ir, want))

    def body(i):
        value = b.load(b.gep(ptr, [b.mul(i, es)]))
        value.align = 1
        b.store(_convert(ir, b, value, dtype, want), b.gep(dest, [i]))

    _loop(ir, b, fn, n, body)
    return dest, ir.Constant(ir.IntType(64), 1), want


def _call_loop(ir, b, loop, addresses, operands, dest, n, fail, fn, out_stride=None):
    """NumPy's strided loop over the block: loop(context, data, &n, strides, auxdata), the three
    addresses read from the table (`addresses`), or, for code never kept on disk (None), the process's
    own; the result's element stride is 1, or out_stride (0: a binary loop's reduce form, dest also the
    first operand)."""
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    p8 = ir.PointerType(i8)
    count = len(operands) + 1
    with b.goto_block(fn.entry_basic_block):
        b.position_at_start(fn.entry_basic_block)
        data = b.alloca(ir.ArrayType(p8, count))
        strides = b.alloca(ir.ArrayType(i64, count))
        dims = b.alloca(i64)
    zero = ir.Constant(i32, 0)
    dest_stride = ir.Constant(i64, 1) if out_stride is None else out_stride
    for m, (ptr, es, dtype) in enumerate(list(operands) + [(dest, dest_stride, loop.dtypes[-1])]):
        b.store(b.bitcast(ptr, p8), b.gep(data, [zero, ir.Constant(i32, m)]))
        b.store(b.mul(es, ir.Constant(i64, np.dtype(dtype).itemsize)), b.gep(strides, [zero, ir.Constant(i32, m)]))
    b.store(n, dims)
    signature = ir.FunctionType(i32, [p8, ir.PointerType(p8), ir.PointerType(i64), ir.PointerType(i64), p8])
    if addresses is None:
        addresses = [ir.Constant(i64, a) for a in (loop.loop, loop.context, loop.auxdata)]
    function, context, auxdata = addresses
    target = b.inttoptr(function, ir.PointerType(signature))
    rc = b.call(target, [b.inttoptr(context, p8), b.gep(data, [zero, zero]), dims,
                         b.gep(strides, [zero, zero]), b.inttoptr(auxdata, p8)])
    ok = fn.append_basic_block("loop_ok")
    b.cbranch(b.icmp_signed("==", rc, zero), ok, fail)
    b.position_at_end(ok)


# --- checked before use -----------------------------------------------------------------------------
def _self_test(kernel, inputs, out, steps, approximate=False):
    """'' when the kernel gives the NumPy chain's bits on special and random values, else why not
    (`approximate`, fast_math: NaN where NaN, infinities equal, close elsewhere; the ulp bound of
    each approximation is fast_math.py's, tested in its tests)."""
    out_shape = [d if 0 < d <= 64 else 3 for d in out[1]]
    if out_shape and (out[1][-1] < 0 or out[1][-1] > 64):
        out_shape[-1] = BLOCK + 77              # crosses a block boundary
    arrays = []
    for k, (dtype, shape) in enumerate(inputs):
        shape = [1 if d == 1 else out_shape[len(out_shape) - len(shape) + i] for i, d in enumerate(shape)]
        size = int(np.prod(shape))
        arrays.append(np.roll(probe_values(dtype, size), 3 * k).reshape(shape))
    try:
        with np.errstate(all="ignore"):
            want = reference(steps, arrays)
            got = np.empty(want.shape, want.dtype)
            rc = kernel.cfunc(got, *arrays)
    except Exception as e:
        return f"self-test raised {type(e).__name__}: {e}"
    if rc != 0:
        return f"self-test: the kernel declined (code {rc})"
    if approximate:
        if not _close(got, want):
            return "self-test: fast_math results are not close to the NumPy chain's"
    elif not same_bits(got, want):
        return "self-test: bits differ from the NumPy chain"
    return ""


def _close(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind != "f":
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got, want, rtol=1e-3, atol=1e-5, equal_nan=True)
                and np.array_equal(np.isinf(got), np.isinf(want)))


def reference(steps, arrays):
    """The chain as NumPy runs it, one ufunc call per step (the NumPy plan's bits)."""
    values = []
    for step in steps:
        args = [step_arg(a, arrays, values) if isinstance(a, dict) else a for a in step[1:]]
        values.append(np.asarray(getattr(np, step[0])(*args)))
    return values[-1]
