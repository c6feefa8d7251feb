"""`dy2static run --batch-size N`: stream memory-mapped inputs through a Program, writing outputs as it goes.

    run_batches(call, [("x", np.load("x.npy", mmap_mode="r"))], 128, "out", progress)
    # out/out0.npy, out/out1.npy, ...: one .npy per output leaf (pytree order, as in `run --out FILE.npz`)

Inputs are split along axis 0; every input must have the same number of rows.
Each batch is copied out of the memory map, run, and its outputs are written
into `.npy` files opened with `np.lib.format.open_memmap`, so memory holds one
batch at a time whatever the inputs' size. Every tensor output must have one row
per input row; a Python constant the function returns is saved once (it is the
same for every batch). Results equal one call over the whole input only for
functions that treat rows independently (no reductions over the batch axis).
"""
import os
import time

import numpy as np

import runtime as rt
from runtime import pytree
from runtime.shape_text import shape_text

__all__ = ["BatchError", "ProgressBar", "run_batches"]


class BatchError(Exception):
    """Inputs or outputs that cannot be streamed in batches; the message says which and why."""


def common_rows(named_arrays):
    """The number of rows (first dim) all inputs share; a BatchError if they differ or one is a scalar."""
    rows = {}
    for label, array in named_arrays:
        if array.ndim == 0:
            raise BatchError(f"--batch-size splits inputs along their first dim, but {label} is a scalar")
        rows[label] = array.shape[0]
    if len(set(rows.values())) > 1:
        sizes = ", ".join(f"{label} has {n}" for label, n in rows.items())
        raise BatchError(f"--batch-size needs every input to have the same number of rows (first dim): {sizes}")
    return next(iter(rows.values()), 0)


def run_batches(call, named_arrays, batch_size, out_dir, progress=None):
    """Run `call([(name, array), ...])` on consecutive row batches; returns the .npy paths written.

    `named_arrays`: [(name or None, array)], arrays typically memory-mapped.
    `call` raises what it raises; the caller adds the rows it was running.
    """
    if batch_size < 1:
        raise BatchError(f"--batch-size must be at least 1, got {batch_size}")
    labels = [(name or f"input {i}", array) for i, (name, array) in enumerate(named_arrays)]
    total = common_rows(labels)
    if total == 0:
        raise BatchError("the inputs have no rows to run")
    writer = _Writer(out_dir, total)
    try:
        for start in range(0, total, batch_size):
            stop = min(total, start + batch_size)
            batch = [(name, np.ascontiguousarray(array[start:stop])) for name, array in named_arrays]
            try:
                result = call(batch)
            except Exception as e:
                e.rows = (start, stop)
                raise
            writer.write(start, stop, result)
            if progress is not None:
                progress.update(stop)
    except BaseException:
        writer.abort()
        raise
    finally:
        if progress is not None:
            progress.close()
    return writer.close()


class _Writer:
    """One .npy per output leaf, created at the first batch and filled row range by row range."""

    def __init__(self, out_dir, total):
        self.out_dir, self.total = out_dir, total
        self.files = None       # [(path, memmap or None for a constant, constant)]
        self.made_dir = False

    def _leaves(self, result, start, stop):
        leaves, _ = pytree.flatten(result)
        arrays = []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, rt.Tensor):
                array = leaf.numpy()
                if array.ndim == 0 or array.shape[0] != stop - start:
                    raise BatchError(f"out{i} is {_describe(array)} for a batch of {stop - start} rows (rows "
                                     f"{start}:{stop}); --batch-size needs every output to have one row per input "
                                     "row (run without --batch-size for reductions over the batch)")
                arrays.append(array)
            else:
                arrays.append(leaf)
        return arrays

    def write(self, start, stop, result):
        leaves = self._leaves(result, start, stop)
        if self.files is None:
            self._open(leaves)
        if len(leaves) != len(self.files):
            raise BatchError(f"rows {start}:{stop} gave {len(leaves)} output(s), earlier rows {len(self.files)}")
        for i, (leaf, (path, mm, constant)) in enumerate(zip(leaves, self.files)):
            if mm is None:
                if isinstance(leaf, np.ndarray) or not _same_constant(leaf, constant):
                    raise BatchError(f"out{i} changed between batches (rows {start}:{stop}): {leaf!r} after "
                                     f"{constant!r}")
                continue
            if not isinstance(leaf, np.ndarray) or leaf.dtype != mm.dtype or leaf.shape[1:] != mm.shape[1:]:
                got = _describe(leaf) if isinstance(leaf, np.ndarray) else type(leaf).__name__
                raise BatchError(f"out{i} is {got} for rows {start}:{stop} but {_describe(mm[:0])} for the "
                                 "first batch; --batch-size needs every batch's outputs to agree past the first dim")
            mm[start:stop] = leaf

    def _open(self, leaves):
        self.made_dir = not os.path.isdir(self.out_dir)
        os.makedirs(self.out_dir, exist_ok=True)
        self.files = []
        for i, leaf in enumerate(leaves):
            path = os.path.join(self.out_dir, f"out{i}.npy")
            if isinstance(leaf, np.ndarray):
                shape = (self.total,) + leaf.shape[1:]
                self.files.append((path, np.lib.format.open_memmap(path, mode="w+", dtype=leaf.dtype,
                                                                    shape=shape), None))
            else:
                value = np.asarray(leaf)
                if value.dtype == object:
                    self.abort()
                    raise BatchError(f"out{i} is a Python {type(leaf).__name__}, which cannot be saved as .npy")
                np.save(path, value, allow_pickle=False)
                self.files.append((path, None, leaf))

    def close(self):
        paths = []
        for path, mm, _ in self.files:
            if mm is not None:
                mm.flush()
                del mm
            paths.append(path)
        self.files = []
        return paths

    def abort(self):
        """Remove the files of a run that did not finish (no half-written outputs left behind)."""
        for path, mm, _ in self.files or ():
            del mm
            if os.path.exists(path):
                os.unlink(path)
        self.files = []
        if self.made_dir and not os.listdir(self.out_dir):
            os.rmdir(self.out_dir)
            self.made_dir = False


def _same_constant(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _describe(array):
    return f"{array.dtype.name}{shape_text(array.shape)}"


class ProgressBar:
    """A one-line text bar on a terminal stream, redrawn at most ten times a second."""

    def __init__(self, stream, total, width=30):
        self.stream, self.total, self.width = stream, total, width
        self.last = None
        self.shown = False

    def update(self, done):
        now = time.monotonic()
        if done < self.total and self.last is not None and now - self.last < 0.1:
            return
        self.last = now
        filled = self.width * done // self.total
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done}/{self.total} rows ({100 * done // self.total}%)")
        self.stream.flush()
        self.shown = True

    def close(self):
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False
