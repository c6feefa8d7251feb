"""A chain too long for one LLVM function, as pieces that each compile as their own kernel.

LLVM's time on one chain function grows faster than its steps (every step that calls a NumPy loop is an
inner loop of the function's block loop, and the loop passes revisit that whole outer body for each:
measured in bench/RESULTS.md), so a chain of more than PIECE_STEPS steps is cut into pieces that each
compile as an `elementwise` chain of their own (cached in this process and on disk by their own key):
up to INLINE_PIECE_STEPS steps where all are inline (one loop, values in registers), LOOP_PIECE_STEPS
once one calls a NumPy loop. Sizes measured (bench/RESULTS.md): shorter pieces run faster (a long
dependent chain in one loop gets less interleaving from LLVM) and compile for ~80 ms a kernel plus LLVM's
time per step, which grows with a piece's steps where each calls a NumPy loop.
A cut falls only where no value of the piece before it is read after it but the piece's last one: that
value is materialised once (an array of its step's own shape and dtype, what NumPy computes) and read
by the later pieces as an input, so every step computes what NumPy's does, in the same order: NumPy's
bits. A value read far ahead (a `tanh(x)` the chain adds back at its end) ends a piece of its own.

`split_job` returns, like `elementwise.chain_job`, a job and no cost at plan build: the cut, the dtypes
and the pieces' plans are made when the job runs (in the compiler thread unless DY2STATIC_NATIVE=sync);
`job.probe()` is the job without LLVM (what this process or the disk holds, else None), for a plan that
asks the disk without waiting. `SplitKernel.call` runs the pieces one after another, each
piece's inputs the chain's own and the values materialised before it (freed after their last reader).
"""
import math
import threading

from ..ops.fused import step_specs
from . import disk_cache, elementwise

PIECE_STEPS = 64        # a chain of more steps is split (LLVM's time per step grows past it: bench/RESULTS.md)
INLINE_PIECE_STEPS = 32     # steps a piece of inline steps only (one loop, registers) holds at most
LOOP_PIECE_STEPS = 16       # ... and one with a step calling a NumPy loop (a loop a step: superlinear)
_INLINE = elementwise.INLINE_STEPS
PROBE_SECONDS_PER_STEP = 25e-6      # planning a piece's step (dtypes, key) for the probe, measured
MIN_MEAN_STEPS = 4      # a chain whose cuts leave shorter pieces on average stays on NumPy (a call each)
NO_CUTS = "no cuts into pieces of several steps (values read far ahead everywhere)"
_SPLIT = {}             # a split chain's key -> its pieces' kernels, compiled in this process


def needs_split(steps):
    """Whether a fused chain of `steps` is compiled as pieces rather than one function."""
    return len(steps) > PIECE_STEPS


def estimated_pieces(steps):
    """About how many pieces a chain is cut into (its compile costs about that many chains')."""
    return max(1, math.ceil(len(steps) / INLINE_PIECE_STEPS))


def probe_seconds(steps):
    """NumPy time a split chain runs before it asks for its pieces compiled already (`split_job`'s probe):
    what planning them costs (~25 µs of CPU a step), so a chain run once never pays it."""
    return PROBE_SECONDS_PER_STEP * len(steps)


def cut(steps, size=None, loop_size=None):
    """[(first, last)] step ranges of the pieces: the longest piece from each start whose values, but its
    last, are read only inside it (a one-step piece always qualifies), of at most `size` steps
    (INLINE_PIECE_STEPS), or `loop_size` (LOOP_PIECE_STEPS) once it holds a step that calls a NumPy loop."""
    size, loop_size = size or INLINE_PIECE_STEPS, loop_size or LOOP_PIECE_STEPS
    last_reader = list(range(len(steps)))       # step j's value is read by steps up to last_reader[j]
    for i, step in enumerate(steps):
        for a in step[1:]:
            if isinstance(a, dict) and "step" in a:
                j = a["step"]
                if last_reader[j] < i:
                    last_reader[j] = i
    last_reader[-1] = len(steps)                # the chain's result is read after it
    pieces, start = [], 0
    while start < len(steps):
        end, reach, limit = start, start, size
        for e in range(start, len(steps)):
            if steps[e][0] not in _INLINE:
                limit = min(limit, loop_size)
            if e - start >= limit:
                break
            if reach <= e:          # every value before e is read by e at the latest: a cut after e
                end = e
            reach = max(reach, last_reader[e])
        pieces.append((start, end))
        start = end + 1
    return pieces


def _piece_steps(steps, first, last, refs):
    """The steps first..last re-indexed for a piece: its own steps as steps, the chain's inputs and the
    earlier pieces' results as its inputs (appended to `refs`, ('in', k) or ('step', j), on first use)."""
    local = []
    for step in steps[first:last + 1]:
        args = [step[0]]
        for a in step[1:]:
            if isinstance(a, dict):
                (kind, k), = a.items()
                if kind == "step" and k >= first:
                    a = {"step": k - first}
                else:
                    ref = (kind, k)
                    if ref not in refs:
                        refs.append(ref)
                    a = {"in": refs.index(ref)}
            args.append(a)
        local.append(args)
    return local


class SplitKernel:
    """Compiled pieces: `call(*arrays)` the chain's result from its inputs, or None where a piece declines
    (the plan's NumPy chain then computes it, or raises NumPy's error with the user's line)."""

    def __init__(self, pieces, kernels):
        self.pieces, self.kernels = pieces, kernels
        self.approximate = any(k.approximate for k in kernels)
        self.from_disk = all(getattr(k, "from_disk", False) for k in kernels)
        self.inline_gemvs = 0

    @property
    def declined(self):
        return sum(k.declined for k in self.kernels)

    def call(self, chain_call):
        """The function the plan calls: each piece's `chain_call(kernel, out, steps)` in turn."""
        calls = [(chain_call(kernel, piece.out, piece.steps), piece.reads)
                 for piece, kernel in zip(self.pieces, self.kernels)]
        frees = _last_reads([reads for _, reads in calls], self.pieces[0].n_inputs)
        calls = [(run, reads, free) for (run, reads), free in zip(calls, frees)]

        def run(*arrays):
            values = list(arrays)
            for piece_run, reads, free in calls:
                result = piece_run(*[values[k] for k in reads])
                if result is None:
                    return None
                values.append(result)
                for k in free:          # a materialised value no later piece reads: its memory back now
                    values[k] = None
            return values[-1]
        return run


def _last_reads(reads, n_inputs):
    """For each piece, the materialised values (positions >= n_inputs) it is the last to read."""
    last = {}
    for p, positions in enumerate(reads):
        for k in positions:
            if k >= n_inputs:
                last[k] = p
    frees = [[] for _ in reads]
    for k, p in last.items():
        frees[p].append(k)
    return frees


class _Piece:
    """One piece: its steps over its inputs, `reads` (their positions among the chain's inputs and the
    pieces' results), `out` (the value it materialises: `.static_shape`, `.dtype`), its chain job."""

    def __init__(self, steps, reads, out, n_inputs, job):
        self.steps, self.reads, self.out, self.n_inputs, self.job = steps, reads, out, n_inputs, job


def split_job(inputs, out, steps, fast_math=False):
    """A job compiling the chain (`steps` over the Variables `inputs`, giving `out`) as pieces: `job()` a
    SplitKernel or why not (the first piece's reason); `job.step()` one piece of that work (None while
    pieces remain: the compiler thread takes other regions' compiles between pieces); `job.probe()` a
    SplitKernel from this process or the disk, or None; `job.cached()` None (nothing is looked up at plan
    build: the probe does it later)."""
    planned = []
    lock = threading.Lock()

    def pieces():
        with lock:
            if not planned:
                planned.append(_plan(inputs, out, steps, fast_math))
        return planned[0]

    def key():
        return repr(([(v.dtype.str, _shape(v)) for v in inputs], out.dtype.str, _shape(out), steps, fast_math))

    compiled = []           # the kernels of the first pieces, compiled (or found) so far
    turn = threading.Lock()

    def step():
        """One turn: plan the pieces or compile the next one; None while pieces remain, then `job()`'s."""
        found = pieces()
        if isinstance(found, str):
            return found
        with turn:
            if len(compiled) < len(found):
                kernel = found[len(compiled)].job()
                if isinstance(kernel, str):
                    return f"a piece of the chain: {kernel}"
                compiled.append(kernel)
                if len(compiled) < len(found):
                    return None
            _SPLIT[key()] = list(compiled)
        return SplitKernel(found, list(compiled))

    def job():
        result = None
        while result is None:
            result = step()
        return result

    def probe():
        if not disk_cache.may_hold_entries():       # a fresh install: only this process may have compiled it
            if _SPLIT.get(key()) is None:           # (the key: ~1 ms for 1000 steps; planning: ~25 ms)
                return None
        found = pieces()
        if isinstance(found, str):
            return None
        kernels = [piece.job.cached() for piece in found]
        return None if any(k is None or isinstance(k, str) for k in kernels) else SplitKernel(found, kernels)

    job.step, job.probe, job.cached = step, probe, lambda: None
    return job


def _plan(inputs, out, steps, fast_math):
    """The pieces of the chain with their chain jobs, or why it cannot be split."""
    ranges = cut(steps)
    if len(steps) < MIN_MEAN_STEPS * len(ranges):
        return NO_CUTS
    specs = step_specs(inputs, steps)
    n = len(inputs)
    position = {("in", k): k for k in range(n)}         # where each value sits in SplitKernel.call's list
    found = []
    for first, last in ranges:
        refs = []
        local = _piece_steps(steps, first, last, refs)
        ins = [inputs[k] if kind == "in" else specs[k] for kind, k in refs]
        result = out if last == len(steps) - 1 else specs[last]
        if result is not out and result.weak:      # a number NumPy keeps weak: an array of it would not be
            return f"a piece of the chain (steps {first}-{last}) ends in a weak value"
        shape = _shape(result)
        job = elementwise.chain_job([(v.dtype, _shape(v)) for v in ins], (result.dtype, shape), local, fast_math)
        if isinstance(job, str):
            return f"a piece of the chain (steps {first}-{last}): {job}"
        found.append(_Piece(local, [position[r] for r in refs], _Out(shape, result.dtype), n, job))
        position[("step", last)] = n + len(found) - 1
    return found


def _shape(v):
    """A Variable's static shape or a step Spec's shape, a dynamic dim as -1."""
    shape = getattr(v, "static_shape", None)
    return tuple(-1 if d is None else d for d in (v.shape if shape is None else shape))


class _Out:
    """What a piece materialises (the `op.outputs[0]` its chain call reads)."""

    def __init__(self, static_shape, dtype):
        self.static_shape, self.dtype = tuple(static_shape), dtype
