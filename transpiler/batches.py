"""`dy2static run --batch-size N`: stream memory-mapped inputs through a Program, writing outputs as it goes.

    run_batches(call, [("x", np.load("x.npy", mmap_mode="r"))], 128, "out", progress)
    # out/out0.npy, out/out1.npy, ...: one .npy per output leaf (pytree order, as in `run --out FILE.npz`)

Inputs are split along axis 0; every input must have the same number of rows.
Each batch is copied out of the memory map, run, and its outputs are written
into temporary `.npy` files beside DIR/outI.npy, whose disk space is reserved
when they are made, so memory holds one batch at a time whatever the inputs'
size; when every batch has run they are renamed into place. A run that fails
(a full disk is one clear error) leaves DIR as it was, and an outI.npy that is
an input is refused before anything runs. Every tensor output must have one row
per input row; a Python constant the function returns is saved once (it is the
same for every batch). Results equal one call over the whole input only for
functions that treat rows independently (no reductions over the batch axis).
"""
import contextlib
import errno
import math
import os
import re
import time

import numpy as np

import runtime as rt
from runtime import pytree
from runtime.atomic_files import Staged, commit_all
from runtime.shape_text import shape_text

__all__ = ["BatchError", "ProgressBar", "run_batches", "check_outputs_spare_inputs", "create_npy", "write_errors"]


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
    check_outputs_spare_inputs(out_dir, [array.filename for _, array in named_arrays
                                         if isinstance(array, np.memmap) and array.filename])
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
        return writer.close()
    except BaseException:
        writer.abort()
        raise
    finally:
        if progress is not None:
            progress.close()


class _Writer:
    """One .npy per output leaf, created at the first batch and filled row range by row range.

    Each output is written to a temporary beside DIR/outI.npy (`runtime.atomic_files`), its
    data's disk blocks reserved when it is created, rows written with `write` (never through a
    shared memory map, where a full disk is a SIGBUS); `close` renames them all into place.
    """

    def __init__(self, out_dir, total):
        self.out_dir, self.total = out_dir, total
        self.files = None       # [_Output]
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
        for i, (leaf, output) in enumerate(zip(leaves, self.files)):
            if output.file is None:
                if isinstance(leaf, np.ndarray) or not _same_constant(leaf, output.constant):
                    raise BatchError(f"out{i} changed between batches (rows {start}:{stop}): {leaf!r} after "
                                     f"{output.constant!r}")
                continue
            if not isinstance(leaf, np.ndarray) or leaf.dtype != output.dtype or leaf.shape[1:] != output.row_shape:
                got = _describe(leaf) if isinstance(leaf, np.ndarray) else type(leaf).__name__
                first = _describe(np.empty((0,) + output.row_shape, output.dtype))
                raise BatchError(f"out{i} is {got} for rows {start}:{stop} but {first} for the first batch; "
                                 "--batch-size needs every batch's outputs to agree past the first dim")
            with write_errors(output.staged.path):
                _write_at(output.file, output.offset + start * output.row_bytes, leaf)

    def _open(self, leaves):
        self.made_dir = not os.path.isdir(self.out_dir)
        self.files = []
        with write_errors(self.out_dir):
            os.makedirs(self.out_dir, exist_ok=True)
        for i, leaf in enumerate(leaves):
            path = os.path.join(self.out_dir, f"out{i}.npy")
            if not isinstance(leaf, np.ndarray) and np.asarray(leaf).dtype == object:
                raise BatchError(f"out{i} is a Python {type(leaf).__name__}, which cannot be saved as .npy")
            with write_errors(path):
                output = _Output(Staged(path))
                self.files.append(output)
                if isinstance(leaf, np.ndarray):
                    output.create((self.total,) + leaf.shape[1:], leaf.dtype)
                else:
                    output.constant = leaf
                    with open(output.staged.temp, "wb") as file:      # (np.save would add ".npy" to a name)
                        np.save(file, np.asarray(leaf), allow_pickle=False)

    def close(self):
        """Flush every output to disk and rename them all into place; returns their paths."""
        for output in self.files:
            with write_errors(output.staged.path):
                output.close()
        with write_errors(self.out_dir):
            commit_all([output.staged for output in self.files])
        paths = [output.staged.path for output in self.files]
        self.files = []
        return paths

    def abort(self):
        """Remove the temporaries of a run that did not finish: DIR keeps what it held (no half-written outputs)."""
        for output in self.files or ():
            try:
                output.close()
            except OSError:
                pass
            output.staged.discard()
        self.files = []
        if self.made_dir and os.path.isdir(self.out_dir) and not os.listdir(self.out_dir):
            os.rmdir(self.out_dir)
            self.made_dir = False


class _Output:
    """One output's temporary .npy: its open file, where its data starts and how a row is laid out."""

    def __init__(self, staged):
        self.staged, self.file, self.constant = staged, None, None

    def create(self, shape, dtype):
        self.file, self.offset = create_npy(self.staged.temp, shape, dtype)
        self.dtype, self.row_shape = dtype, tuple(shape[1:])
        self.row_bytes = dtype.itemsize * math.prod(self.row_shape)

    def close(self):
        if self.file is not None:
            file, self.file = self.file, None
            file.close()


def create_npy(path, shape, dtype):
    """Write the .npy header for (shape, dtype) into the empty file at `path` and reserve its data's disk blocks.

    Returns (the file, open for writing, the data's offset). Reserving makes a full disk an
    OSError here, before any row is computed, and keeps writes through a memory map of the
    file (the Dask workers') from hitting unallocated blocks, which is a SIGBUS.
    """
    file = open(path, "r+b")
    try:
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
                  "shape": tuple(shape)}
        try:
            np.lib.format.write_array_header_1_0(file, header)
        except ValueError:          # a header over 64 KiB
            np.lib.format.write_array_header_2_0(file, header)
        file.flush()
        offset = file.tell()
        _reserve(file.fileno(), offset, np.dtype(dtype).itemsize * math.prod(shape))
    except BaseException:
        file.close()
        raise
    return file, offset


def _reserve(fd, offset, length):
    """Allocate `length` bytes of disk from `offset` (posix_fallocate), or at least size the file where the
    filesystem cannot reserve (then a full disk shows when rows are written, as an OSError)."""
    if length and hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, offset, length)
            return
        except OSError as e:
            if e.errno not in _CANNOT_RESERVE:
                raise
    os.ftruncate(fd, offset + length)


_CANNOT_RESERVE = {errno.EINVAL, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP), errno.ENOSYS}


def _write_at(file, offset, array):
    """Write an array's bytes at `offset` of `file` (a plain write: a full disk is an OSError)."""
    file.seek(offset)
    file.write(memoryview(np.ascontiguousarray(array)).cast("B"))


@contextlib.contextmanager
def write_errors(path):
    """An OSError writing outputs (a full disk, a file-size limit, no permission) as a BatchError naming the file."""
    try:
        yield
    except OSError as e:
        raise BatchError(f"cannot write {path}: {e.strerror or e}") from e


def check_outputs_spare_inputs(out_dir, input_paths):
    """A BatchError if a file the outputs would replace (DIR/outI.npy) is one of the inputs, under any name
    (a symlink or hard link too): checked before anything is written."""
    if not os.path.isdir(out_dir):
        return
    inputs = {}
    for path in input_paths:
        info = os.stat(path)
        inputs.setdefault((info.st_dev, info.st_ino), path)
    for entry in sorted(os.listdir(out_dir)):
        if not _OUTPUT_NAME.fullmatch(entry):
            continue
        try:
            info = os.stat(os.path.join(out_dir, entry))
        except OSError:         # a dangling symlink: replacing it touches no input
            continue
        source = inputs.get((info.st_dev, info.st_ino))
        if source is not None:
            raise BatchError(f"--out {out_dir}: its {entry} is the input {source} (the same file), which the "
                             "outputs would replace; give another --out folder")


_OUTPUT_NAME = re.compile(r"out\d+\.npy")


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
