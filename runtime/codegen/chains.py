"""A fused op on NumPy: one ufunc call per step, results in scratch buffers reused as values die.

    buf = xp_multiply(x, 0.5)
    xp_add(buf, b, buf)              # s0 is dead after this step: its buffer takes s1
    y = xp_tanh(buf, buf)

A step of static shape writes into any dead buffer of its shape and dtype; one of
unknown shape only into a dying argument's buffer that broadcasting cannot grow.
With `into=k` (the `inplace` pass) input k's buffer is the first scratch buffer,
when the plan's own liveness agrees it is the plan's to overwrite. A step's number
that is exactly a value of the dtype it meets is a 0-d array of that dtype, made once.

A chain over arrays too big for the cache runs block by block (`block_rows`): each step of a
block reads what the step before it wrote a moment ago, from cache, where over the
whole array every step streams the array through memory again. The scratch buffers
are block-sized, the last step writes straight into the result's block, and the
result's block is itself a scratch buffer until then:

    multiply_3 = xp_empty((1000000,), 'float32')
    buf = xp_empty((65536,), 'float32')
    for start in range(0, 1000000, 65536):
        if start == 983040:
            buf = buf[:16960]                  # the last block is short
        x_block = x[start:start + 65536]
        multiply_3_block = multiply_3[start:start + 65536]
        xp_multiply(0.5, x_block, multiply_3_block)
        xp_square(x_block, buf)
        ...
        xp_multiply(multiply_3_block, buf, multiply_3_block)
    del buf, x_block, multiply_3_block, start

Ufuncs compute each element from the same elements alone, so every block holds the
same bits the whole-array chain would.
"""
import math

import numpy as np

from ..ops import fused as _fused
from .liveness import is_big, is_static

# One block's buffer. Measured on GELU over 1M float32 (one EPYC core, 512 KiB L2): 128, 256
# and 512 KiB blocks are within noise of each other; 64 KiB loses, each block paying ~1 µs of
# Python per ufunc call.
BLOCK_BYTES = 256 * 1024
# Blocks only when the arrays the whole-array chain streams (its full-size inputs, scratch
# buffers and result) add up to more than this share of the last-level cache. Below it every
# step already reads from cache, as fast as from a block in L2 for the cheap ufuncs (measured:
# `multiply` costs ~0.14 ns an element at 16K, 64K and 1M float32), and the block loop only
# adds calls: chains over two 4 MB arrays ran 10-20% slower blocked, GELU over three ran ~5%
# faster, and every chain measured over 8 MB arrays ran as fast or faster blocked.
CACHE_BYTES = 8 * 1024 * 1024
# A block boundary falls on a multiple of this many elements, so a SIMD loop splits each
# block into the same vectors it splits the whole array into.
_ALIGN = 64


def fused_chain(gen, op, steps):
    """The plan's statements computing the fused op into its output."""
    specs = _fused.step_specs(op.inputs, steps)
    into = op.attrs.get("into")
    if into is not None and gen.donations.get(id(op)) != into:
        into = None                     # not provably ours to overwrite: allocate instead
    rows = block_rows(op, steps, specs, into)
    if rows is not None:
        return _blocked_chain(gen, op, steps, specs, into, rows)
    buffers = []                        # [python name, shape, dtype, key of the value it holds]
    if into is not None:
        v = op.inputs[into]
        buffers.append([gen.value(v), v.static_shape, v.dtype, ("in", into)])
    inputs = [gen.value(v) for v in op.inputs]
    out = gen.name(op.outputs[0])
    calls = [] if len(steps) >= TABLE_RUN else None
    names, lines = _steps(gen, op, steps, specs, inputs, buffers, out, scratch=None, calls=calls)
    if calls is not None:
        lines = _tabled(gen, lines, calls)
    temps = [n for j, n in names.items() if n.startswith("buf") and n != out]
    temps = list(dict.fromkeys(temps))
    if temps and (is_big(op.outputs[0]) or not is_static(op.outputs[0])):
        lines.append("del " + ", ".join(temps))    # the result keeps its buffer alive by its own name
    return lines


def _last_reads(steps):
    last_read = {}
    for j, step in enumerate(steps):
        for a in step[1:]:
            if isinstance(a, dict):
                last_read[tuple(*a.items())] = j
    return last_read


def _steps(gen, op, steps, specs, inputs, buffers, out, scratch, calls=None):
    """(names of the step values, the calls computing them).

    Unblocked (`scratch` None): a step with no dead buffer to write into allocates one,
    and the last step's value is bound to `out`. Blocked: such a step gets a new
    block-sized buffer, appended to `scratch` as [name, shape, dtype] for the caller to
    allocate once, and the last step writes into `out`, the result's block. With a list
    `calls`, each line's call is described there for `_tabled` (None: a line it keeps)."""
    last_read = _last_reads(steps)
    names, lines = {}, []
    for j, step in enumerate(steps):
        fn = gen.bound(step[0])
        refs = [b for b in step[1:] if isinstance(b, dict)]
        met = None if len(refs) == len(step) - 1 else {  # the dtypes a number meets (none: no number)
            np.dtype(_fused.step_arg(b, op.inputs, specs).dtype) for b in refs}
        parts = [(_fused.step_arg(a, inputs, names), _LOCAL) if isinstance(a, dict) else (_number(gen, a, met), a)
                 for a in step[1:]]
        args = ", ".join([text for text, _ in parts])
        spec = specs[j]
        shape, dtype = tuple(spec.shape), np.dtype(spec.dtype)
        last = j == len(steps) - 1
        target = None
        if scratch is not None and last:
            target = next(buf for buf in buffers if buf[0] == out)
        elif scratch is not None or -1 not in shape and len(shape) >= 1:
            if scratch is not None:
                shape = buffers[0][1]             # every step of a blocked chain is block-shaped
            for buf in buffers:
                if buf[1] == shape and buf[2] == dtype and last_read.get(buf[3], -1) <= j:
                    target = buf
                    break
            if target is None and scratch is not None:
                target = [gen.temp("buf"), shape, dtype, None]
                scratch.append(target[:3])
                buffers.append(target)
        elif len(shape) >= 1:
            target = _dying_argument_buffer(step, j, shape, dtype, buffers, last_read, op, specs)
        if target is not None:
            target[3] = ("step", j)
            names[j] = target[0]
            out_arg = f"out={target[0]}" if step[0] in _fused.KEYWORD_OUT else target[0]
            assign = out + " = " if last and scratch is None else ""
            lines.append(f"{assign}{fn}({args}, {out_arg})")
            if calls is not None:
                calls.append(None if assign else _call(gen, fn, parts, out_arg))
        else:
            name = out if last else gen.temp("buf")
            names[j] = name
            lines.append(f"{name} = {fn}({args})")
            if calls is not None:
                calls.append(None)
            if len(shape) >= 1:
                buffers.append([name, shape, dtype, ("step", j)])
    return names, lines


# --- long chains as a loop over a table of calls ---------------------------------------------------

# A run of at least this many calls that write into a buffer and differ only in the ufunc and the
# numbers they pass runs as a loop over a table of (ufunc, form, numbers): compiling a 4000-step chain
# line by line cost ~45 ms (a third of its plan), the loop's few lines nothing; each call stays the
# same call on the same operands (the same bits), ~30 ns slower for the loop's bookkeeping.
TABLE_RUN = 64
TABLE_FORMS = 4         # distinct call forms one loop tells apart (an if/elif on the form's number)
_LOCAL = object()       # an argument that is a local (a buffer or input), not a number


def _call(gen, fn, parts, out_arg):
    """(form, ufunc, numbers) of the line `fn(args, out_arg)`: the form is the line with its ufunc and
    numbers left out (which locals it reads, where its numbers go, where it writes)."""
    form = tuple(text if value is _LOCAL else None for text, value in parts) + (out_arg,)
    numbers = tuple(gen.namespace.get(text, value) for text, value in parts if value is not _LOCAL)
    return form, gen.namespace[fn], numbers


def _tabled(gen, lines, calls):
    """The lines with each run of >= TABLE_RUN tabled calls (at most TABLE_FORMS forms) as one loop:

        for f, form, a in c_7:                 # ((xp_multiply, 0, 1.0001), (xp_add, 0, c_3), (xp_tanh, 1, None), ...)
            if form == 0:
                f(buf, a, buf)
            else:
                f(buf, buf)
    """
    out, start, n = [], 0, len(lines)
    while start < n:
        if calls[start] is None:
            out.append(lines[start])
            start += 1
            continue
        forms, end = {}, start
        while end < n and calls[end] is not None:
            form = calls[end][0]
            if form not in forms:
                if len(forms) == TABLE_FORMS:
                    break
                forms[form] = len(forms)
            end += 1
        if end - start < TABLE_RUN:
            out.extend(lines[start:end])
            start = end
            continue
        width = max(len(calls[k][2]) for k in range(start, end))
        table = tuple((fn, forms[form]) + numbers + (None,) * (width - len(numbers))
                      for form, fn, numbers in calls[start:end])
        f, which = gen.temp("f"), gen.temp("form")
        slots = [gen.temp("a") for _ in range(width)]
        out.append(f"for {', '.join([f, which] + slots)} in {gen.constant(table)}:")
        for form, k in forms.items():
            free = iter(slots)
            args = ", ".join([text if text is not None else next(free) for text in form])
            test = "if" if k == 0 else "elif" if k < len(forms) - 1 else "else"
            if len(forms) == 1:
                out.append(f"    {f}({args})")
            else:
                out.append(f"    {test} {which} == {k}:" if test != "else" else "    else:")
                out.append(f"        {f}({args})")
        start = end
    return out


def block_rows(op, steps, specs, into=None):
    """Rows of the result per block when the chain is worth running block by block, else None.

    Blocks are runs of whole rows (leading-axis slices): a slice of any array along its
    first axis is a view whatever its strides, so non-contiguous inputs need no copy. It
    takes every step to be the result's static shape (a step over broadcast inputs alone
    would run again in every block), and every input either the result's leading extent
    (sliced with it) or constant along the leading axis (fewer dims, or 1 there: passed
    whole, broadcasting as before)."""
    shape = tuple(op.outputs[0].static_shape)
    if not shape or -1 in shape or shape[0] < 2:
        return None
    if any(tuple(s.shape) != shape for s in specs):
        return None
    for v in op.inputs:
        vs = tuple(v.static_shape)
        if -1 in vs or (len(vs) == len(shape) and vs[0] not in (1, shape[0])):
            return None
    itemsize = max(np.dtype(s.dtype).itemsize for s in specs)
    row = math.prod(shape[1:])
    if row == 0:
        return None
    unit = _ALIGN // math.gcd(row, _ALIGN)
    rows = BLOCK_BYTES // (itemsize * row) // unit * unit
    if rows == 0 or 2 * rows > shape[0]:
        return None
    sliced, scratch, _, _ = _block_arrays(_DryRun(), op, steps, specs, into, rows)
    arrays = [op.inputs[k].dtype for k in sliced] + [dtype for _, _, dtype in scratch]
    if into is None:
        arrays.append(op.outputs[0].dtype)
    if math.prod(shape) * sum(np.dtype(d).itemsize for d in arrays) <= CACHE_BYTES:
        return None
    return rows


class _DryRun:
    """Stands in for the plan's generator to learn which buffers a blocked chain would use."""

    def __init__(self):
        self.count = 0

    def bound(self, attr):
        return attr

    def value(self, x):
        return repr(x)

    def temp(self, hint="buf"):
        self.count += 1
        return f"{hint}_{self.count}"

    def typed_constant(self, value):
        return repr(value)


def _block_arrays(gen, op, steps, specs, into, rows):
    """The buffers one block uses: (indices of the inputs sliced per block, the scratch
    buffers as [name, shape, dtype], the calls computing a block, (what each step reads
    each input as: its block's name or, broadcast, its own; the result block's name))."""
    shape = tuple(op.outputs[0].static_shape)
    block_shape = (rows,) + shape[1:]
    sliced = [k for k, v in enumerate(op.inputs)
              if len(v.static_shape) == len(shape) and v.static_shape[0] == shape[0]]
    inputs = [gen.temp(f"{gen.value(v)}_block") if k in sliced else gen.value(v) for k, v in enumerate(op.inputs)]
    if into is not None:
        out_block, key = inputs[into], ("in", into)
    else:
        out_block, key = gen.temp(f"{gen.value(op.outputs[0])}_block"), ("out",)
    buffers = [[out_block, block_shape, np.dtype(op.outputs[0].dtype), key]]
    scratch = []
    _, calls = _steps(gen, op, steps, specs, inputs, buffers, out_block, scratch)
    return sliced, scratch, calls, (inputs, out_block)


def _blocked_chain(gen, op, steps, specs, into, rows):
    out_var = op.outputs[0]
    shape, dtype = tuple(out_var.static_shape), np.dtype(out_var.dtype)
    n = shape[0]
    out = gen.name(out_var)
    start = gen.temp("start")
    window = f"[{start}:{start} + {rows}]"
    sliced, scratch, calls, (inputs, out_block) = _block_arrays(gen, op, steps, specs, into, rows)
    head = [f"{out} = {gen.value(op.inputs[into])}" if into is not None
            else f"{out} = {gen.bound('empty')}({shape!r}, {dtype.name!r})"]
    views = [(inputs[k], gen.value(op.inputs[k])) for k in sliced]
    if into is None:
        views.append((out_block, out))
    for name, buf_shape, buf_dtype in scratch:
        head.append(f"{name} = {gen.bound('empty')}({buf_shape!r}, {buf_dtype.name!r})")
    head.append(f"for {start} in range(0, {n}, {rows}):")
    tail = n % rows
    if tail and scratch:
        head.append(f"    if {start} == {n - tail}:")
        head.extend(f"        {name} = {name}[:{tail}]" for name, _, _ in scratch)
    body = [f"    {view} = {whole}{window}" for view, whole in views] + ["    " + c for c in calls]
    temps = [name for name, _, _ in scratch] + [view for view, _ in views] + [start]
    return head + body + ["del " + ", ".join(temps)]


def _number(gen, a, met):
    """A step's number as a 0-d array of the one dtype it meets (made once): a ufunc takes it ~0.4 µs
    faster than a Python number, which it converts on every call. Only where the number is exactly a
    value of that dtype, so NEP 50's conversion of the weak number gives the same operand."""
    if len(met) == 1 and not isinstance(a, bool):
        (dtype,) = met
        if dtype.kind in "iuf":
            key = (a, type(a), dtype)       # (not for zeros: -0.0 == 0.0; a NaN is never found again)
            typed = _EXACT.get(key, _UNKNOWN) if a else _UNKNOWN
            if typed is _UNKNOWN:
                typed = _exactly(a, dtype)
                if a:
                    if len(_EXACT) >= 4096:
                        _EXACT.clear()
                    _EXACT[key] = typed
            if typed is not None:
                return gen.typed_constant(typed)
    return gen.value(a)


_EXACT = {}             # (number, its type, dtype) -> _exactly's answer: a chain repeats a few numbers
_UNKNOWN = object()


def _exactly(a, dtype):
    """The number as a read-only 0-d array of dtype when it is exactly a finite value of it, else None."""
    try:
        typed = np.asarray(a, dtype)
    except (OverflowError, ValueError):
        return None
    if typed.item() == a and (dtype.kind != "f" or np.isfinite(typed)):
        typed.flags.writeable = False       # shared by every plan that meets this number
        return typed
    return None


def _dying_argument_buffer(step, j, shape, dtype, buffers, last_read, op, specs):
    """A scratch buffer a step of unknown shape may write into, or None.

    Only the buffer of one of the step's own arguments that dies here, of the result's dtype
    and symbolic shape, and only where broadcasting cannot grow it: at every unknown dim the
    other arguments are 1 or absent. (Without this a chain over a dynamic batch allocated a
    fresh array per step where the unfused plan's in-place writes did not.)"""
    def arg_shape(a):
        if not isinstance(a, dict):
            return ()
        (kind, k), = a.items()
        return tuple(op.inputs[k].static_shape) if kind == "in" else tuple(specs[k].shape)

    refs = [tuple(*a.items()) for a in step[1:] if isinstance(a, dict)]
    for buf in buffers:
        if buf[3] not in refs or buf[1] != shape or buf[2] != dtype or last_read.get(buf[3], -1) > j:
            continue
        others = [arg_shape(a) for a in step[1:] if not (isinstance(a, dict) and tuple(*a.items()) == buf[3])]
        if all(len(o) <= len(shape) and all(o[i - len(shape)] == 1 for i in range(len(shape))
                                            if shape[i] == -1 and i - len(shape) >= -len(o))
               for o in others):
            return buf
    return None
