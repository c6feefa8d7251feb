"""Batch inference on Dask: a Program mapped over the row chunks of Dask arrays.

    y = transpiler.map_batches(model, x)      # x: dask array (N, 784) -> y: dask array (N, 10), lazy
    y.compute()                               # on dask's current scheduler (a distributed.Client once made)

Workers receive a pickled LoadedProgram (Program JSON + parameters: see
`runtime.deploy.program_from_payload`), never the user's code: they need dy2static
installed, nothing else. Each chunk of rows is one call of the Program, so the
result equals one call over the whole input only for functions that treat rows
independently (no reductions over the batch axis). `dask[array,distributed]` is
an optional extra, imported when first needed.
"""
import os
import uuid

import numpy as np

import runtime as rt
from runtime import deploy, pytree
from runtime.atomic_files import Staged, commit_all, discard_all
from runtime.tracing import InputSpec, rebuild_outputs

from .api import StaticFunction, to_static
from .batches import check_outputs_spare_inputs, create_npy, write_errors

__all__ = ["map_batches", "NpyFile", "run_on_scheduler"]


def map_batches(fn_or_loaded, *arrays):
    """Run a Program over the chunks of Dask arrays along axis 0; returns its outputs as Dask arrays.

    `fn_or_loaded`: a LoadedProgram, a StaticFunction, a to_static Layer, or a
    function (converted here). A StaticFunction without an input_spec is traced
    for the arrays' dtypes and trailing dims with a dynamic first dim. Inputs are
    rechunked to one chunk past axis 0 and to the first array's row chunks.
    Output chunks and dtypes come from the Program's output specs: every output's
    first dim must be the (dynamic) batch dim, its other dims static. The result
    has the function's output structure (a tuple of Dask arrays for a tuple), with
    any Python constant it returned left as it is.
    """
    da = _dask_array()
    from dask import delayed
    arrays = [a if isinstance(a, da.Array) else da.asarray(a) for a in arrays]
    loaded = _loaded_for(fn_or_loaded, arrays)
    arrays = _aligned(arrays, loaded, da)
    outputs = _output_specs(loaded.program)
    name = loaded.program.name
    # one graph key holds the Program: each worker fetches it once, not once per chunk; named here because
    # dask would otherwise hash it by pickling it
    program = delayed(loaded, name=f"{name}-program-{uuid.uuid4().hex}", traverse=False)
    pairs = []
    for i, array in enumerate(arrays):
        pairs += [array, ("b",) + tuple(f"in{i}_{d}" for d in range(1, array.ndim))]
    results = da.blockwise(_run_chunk, ("b",), program, None, *pairs, token=f"{name}-run", concatenate=True,
                           dtype=object, meta=np.empty((0,), dtype=object))
    columns = []
    for k, (shape, dtype) in enumerate(outputs):
        new = {f"out{k}_{d}": n for d, n in enumerate(shape[1:], 1)}
        columns.append(da.blockwise(_pick, ("b", *new), results, ("b",), k, None, token=f"{name}-out{k}",
                                    new_axes=new, dtype=dtype, meta=np.empty((0,) * len(shape), dtype=dtype)))
    return rebuild_outputs(loaded.program, columns)


def _dask_array():
    try:
        import dask.array
    except ImportError:
        raise ImportError("map_batches needs Dask: pip install 'dy2static[dask]' "
                          "(dask[array,distributed])") from None
    return dask.array


def _loaded_for(obj, arrays, device=None):
    """A LoadedProgram for obj, a fresh copy (through its pickle payload) unless obj is one.

    It runs on `device`, else where the function's parameters are (else the CPU).
    """
    if isinstance(obj, deploy.LoadedProgram):
        return obj
    if isinstance(obj, rt.nn.Layer):
        obj = obj.forward
    if not isinstance(obj, StaticFunction):
        if not callable(obj):
            raise TypeError(f"map_batches runs a LoadedProgram, a static function, a Layer or a function, "
                            f"not {type(obj).__name__}")
        obj = to_static(obj)
    if obj._input_spec is not None:
        program = obj.deployed_program()
    else:
        program = obj.get_program(*[InputSpec((None,) + tuple(a.shape[1:]), a.dtype, None) for a in arrays])
    device = device or next((t.device for t in program.parameters.values()), "cpu")
    return deploy.program_from_payload(*deploy.program_payload(program), device)


def _aligned(arrays, loaded, da):
    """The arrays checked against the Program's inputs and chunked alike: the first's rows, whole past axis 0."""
    specs = loaded.input_specs
    if not arrays:
        raise TypeError("map_batches needs at least one array to split into chunks of rows")
    if len(arrays) != len(specs):
        raise TypeError(f"{loaded.program.name}() takes {len(specs)} input(s) {list(loaded.input_names)}, "
                        f"got {len(arrays)} array(s)")
    for array, spec, name in zip(arrays, specs, loaded.input_names):
        shape = spec.shape
        if array.ndim == 0 or len(shape) == 0:
            raise ValueError(f"input '{name}': map_batches splits inputs along axis 0; a scalar has no rows")
        if (array.dtype != spec.dtype or array.ndim != len(shape)
                or any(d != -1 and d != n for d, n in zip(shape[1:], array.shape[1:]))):
            raise ValueError(f"input '{name}' is {_describe(array.dtype, array.shape)}; the Program takes "
                             f"{_describe(spec.dtype, shape)}")
    rows = {name: array.shape[0] for array, name in zip(arrays, loaded.input_names)}
    if len(set(rows.values())) > 1:
        raise ValueError(f"map_batches needs every input to have the same number of rows (first dim): {rows}")
    chunks = arrays[0].chunks[0] if arrays else ()
    for spec, name in zip(specs, loaded.input_names):
        if spec.shape[0] != -1 and any(c != spec.shape[0] for c in chunks):
            raise ValueError(f"input '{name}' has a static first dim {spec.shape[0]}, but the chunks have "
                             f"{sorted(set(chunks))} rows: trace it with a dynamic first dim "
                             "(InputSpec([None, ...]))")
    return [a.rechunk((chunks,) + tuple((n,) for n in a.shape[1:])) for a in arrays]


def _output_specs(program):
    """[(static shape, dtype)] of the tensor outputs; a ValueError naming an output that is not per row."""
    leaves = [i for i in range(program.output_tree.num_leaves) if i not in program.output_consts]
    specs = []
    for leaf, var in zip(leaves, program.outputs):
        what = f"output out{leaf} ('{var.name}', {var.type_str()})"
        if var.kind != "dense":
            raise ValueError(f"{what} is a tensor array; map_batches needs arrays with one row per input row")
        shape = var.static_shape
        if len(shape) == 0 or shape[0] != -1:
            raise ValueError(f"{what}: map_batches needs every output's first dim to be the batch (a dynamic "
                             "first dim, one row per input row); reduce over the batch after the map instead")
        if -1 in shape[1:]:
            raise ValueError(f"{what} has a dynamic dim past the first: map_batches needs them static to chunk "
                             "the result")
        specs.append((shape, var.dtype))
    return specs


def _run_chunk(loaded, *blocks):
    """One chunk of rows through the Program: its tensor outputs as NumPy arrays, each checked to be per row."""
    rows = blocks[0].shape[0]
    outputs = loaded.executor.run(loaded.program, dict(zip(loaded.input_names, blocks)))
    arrays = []
    for var, output in zip(loaded.program.outputs, outputs):
        array = output.numpy()
        if array.shape[0] != rows:
            raise ValueError(f"output '{var.name}' has {array.shape[0]} rows for a chunk of {rows}: map_batches "
                             "needs one output row per input row")
        arrays.append(array)
    return tuple(arrays)


def _pick(results, k):
    return results[k]


def _describe(dtype, shape):
    return f"{np.dtype(dtype).name}[{', '.join('None' if d == -1 else str(d) for d in shape)}]"


class NpyFile:
    """A .npy file as an array-like that pickles as its path: each worker maps the file itself.

    `dask.array.from_array(NpyFile(path), ...)` reads chunks straight from the file on
    whichever worker runs them (a memmap would be pickled with all its data), and
    `dask.array.store(..., NpyFile(path, writable=True))` writes them there; the
    path must be one the workers see.
    """

    def __init__(self, path, writable=False):
        self.path, self.writable = path, writable
        header = np.load(path, mmap_mode="r", allow_pickle=False)
        self.shape, self.dtype, self.ndim = header.shape, header.dtype, header.ndim

    def _map(self):
        return np.load(self.path, mmap_mode="r+" if self.writable else "r", allow_pickle=False)

    def __getitem__(self, index):
        return np.asarray(self._map()[index])

    def __setitem__(self, index, value):
        array = self._map()
        array[index] = value
        array.flush()

    def __reduce__(self):
        return NpyFile, (self.path, self.writable)


def run_on_scheduler(address, fn_or_loaded, paths, out_dir, rows_per_chunk=None, device="cpu"):
    """`dy2static run --scheduler`: map_batches over .npy files on the cluster at `address`.

    The workers read the inputs and write `out_dir/out0.npy, out1.npy, ...` (one per
    output leaf, as `run --batch-size`) themselves, chunk by chunk: nothing passes
    through this process but the task graph. The workers run the Program on `device`.
    They write temporaries beside those names, renamed into place once every chunk is
    written. Returns the paths written; on failure none are left behind.
    """
    check_outputs_spare_inputs(out_dir, paths)
    da = _dask_array()
    from distributed import Client
    with Client(address, timeout=30):       # unreachable: an OSError before any file is touched
        inputs = []
        for path in paths:
            source = NpyFile(path)
            if source.ndim == 0:
                raise ValueError(f"{path} holds a scalar: inputs are split along their first dim")
            inputs.append(da.from_array(source, chunks=(rows_per_chunk or "auto",) + (-1,) * (source.ndim - 1)))
        loaded = _loaded_for(fn_or_loaded, inputs, device)
        leaves, _ = pytree.flatten(map_batches(loaded, *inputs))
        os.makedirs(out_dir, exist_ok=True)
        staged, sources, targets = [], [], []
        try:
            for i, leaf in enumerate(leaves):
                path = os.path.join(out_dir, f"out{i}.npy")
                with write_errors(path):
                    staged.append(Staged(path))
                    if isinstance(leaf, da.Array):
                        create_npy(staged[-1].temp, leaf.shape, leaf.dtype)[0].close()    # disk reserved here
                        sources.append(leaf)
                        targets.append(NpyFile(staged[-1].temp, writable=True))
                    else:
                        with open(staged[-1].temp, "wb") as file:
                            np.save(file, np.asarray(leaf), allow_pickle=False)
            da.store(sources, targets, lock=False)
            with write_errors(out_dir):
                commit_all(staged)
        except BaseException:
            discard_all(staged)
            raise
    return [one.path for one in staged]
