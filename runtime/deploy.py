"""Save a Program for deployment and load it back, with no access to the code that made it.

    save_program(program, "out/model")   # out/model.program.json + out/model.params.npz
    model = load_program("out/model")    # a LoadedProgram
    y = model(x)                         # runs on rt.Executor("cpu"); outputs as the traced function returned them

`path.program.json` is the versioned IR (`runtime.serialization`), which also
describes each parameter by name, shape and dtype; `path.params.npz` holds the
persistable inputs' values as plain .npy arrays. Loading executes nothing from
either file and allocates no more than they really hold, and parameters no
larger than 16x the .npz file's size + 64 MiB unless `max_bytes=` allows more:
any problem is a `ProgramFormatError` (a ValueError) naming the file; a
missing file is a FileNotFoundError. `max_iterations=` bounds the `while` loop iterations of each call.
"""
import hashlib
import io
import json
import os
import threading

import numpy as np

from .atomic_files import replacing
from .executor import Executor
from .serialization import (MAX_OPS, ProgramFormatError, parse_json, program_from_dict, program_to_dict, read_params,
                            write_params)
from .shape_text import shape_text
from .tensor import Tensor, host
from .tracing import InputSpec, rebuild_outputs

PROGRAM_SUFFIX = ".program.json"
PARAMS_SUFFIX = ".params.npz"

__all__ = ["save_program", "load_program", "LoadedProgram", "program_paths", "program_from_payload", "program_payload",
           "ProgramFormatError"]


def program_paths(path):
    """(json path, npz path) for a save path; a path already ending in either suffix is accepted."""
    path = os.fspath(path)
    for suffix in (PROGRAM_SUFFIX, PARAMS_SUFFIX):
        if path.endswith(suffix):
            path = path[:-len(suffix)]
            break
    return path + PROGRAM_SUFFIX, path + PARAMS_SUFFIX


def save_program(program, path, origins=True):
    """Write `path.program.json` and `path.params.npz`; returns their paths.

    The parameters written are the current values of `program.parameters`
    (one per persistable input); each must match its Variable's shape and dtype.
    A Program the loader would refuse is refused here (ProgramFormatError).
    Each op keeps the user's file and line it came from, for error messages,
    as the file relative to its package (`serialization.relative_origin`:
    "pkg/mod.py:12", a script's bare name), never an absolute path;
    `origins=False` writes none.
    """
    json_path, npz_path = program_paths(path)
    arrays = parameter_arrays(program)
    data = program_to_dict(program, origins="relative" if origins else False)
    # what is saved must load: check it with the reader that will read it
    program_from_dict(data, source=f"Program '{program.name}' (not saved)")
    with _save_lock(json_path):
        # parameters first, then the Program naming their digest (of the bytes written, not of what the
        # path holds by then): a save interrupted between the two leaves a Program whose digest the
        # parameters file does not match, which load refuses
        data["params_sha256"] = _atomic_write(npz_path, lambda f: write_params(f, arrays))
        text = json.dumps(data, indent=1)
        _atomic_write(json_path, lambda f: f.write(text.encode("utf-8")))
    return json_path, npz_path


# saves to one path in one process take turns (the two files are one save); striped, so bounded
_SAVE_LOCKS = [threading.Lock() for _ in range(64)]


def _save_lock(json_path):
    return _SAVE_LOCKS[hash(os.path.realpath(json_path)) % len(_SAVE_LOCKS)]


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parameter_arrays(program):
    """{name: NumPy array} of the Program's persistable inputs, checked against their Variables."""
    arrays = {}
    for var in program.inputs:
        if not var.persistable:
            continue
        if var.name not in program.parameters:
            raise ValueError(f"persistable input '{var.name}' has no value in program.parameters")
        value = program.parameters[var.name]
        array = host(value) if isinstance(value, Tensor) else np.asarray(value)
        if array.dtype != var.dtype or len(array.shape) != var.ndim or any(
                d != -1 and d != a for d, a in zip(var.static_shape, array.shape)):
            raise ValueError(f"parameter '{var.name}' is {array.dtype.name}{shape_text(array.shape)}; "
                             f"the Program declares {var.type_str()}")
        arrays[var.name] = array
    return arrays


def _atomic_write(path, write):
    """Write `path` through a unique temporary beside it, renamed into place when whole
    (`atomic_files.replacing`: no half-written files, no temporary shared by two writers);
    returns the SHA-256 of the bytes written."""
    with replacing(path) as temp:
        with open(temp, "wb") as f:
            write(f)
        return _sha256(temp)


def load_program(path, device="cpu", max_bytes=None, max_iterations=None, max_ops=None):
    """Load `path.program.json` + `path.params.npz` into a LoadedProgram that runs on `device`.

    `max_bytes`: the most bytes the parameters may take; by default 16 times the
    .npz file's size plus 64 MiB (`serialization.default_max_bytes`), so a small
    compressed file cannot inflate to gigabytes. `max_iterations`: opt-in budget of
    `while` loop iterations per call, all loops together (IterationLimitError naming the
    loop that ran out); loops nest at most `serialization.MAX_LOOP_DEPTH` deep.
    `max_ops`: the most ops the Program may have, all blocks together (default
    `serialization.MAX_OPS`, 200,000), counted before anything else is read.
    """
    json_path, npz_path = program_paths(path)
    max_ops = _op_limit(max_ops)
    with open(json_path, "rb") as f:
        data = parse_json(f.read(), json_path)      # the text is let go here: only its data is kept
    return _checked(data, npz_path, json_path, _sha256, device, max_bytes, max_iterations,
                    "a save was interrupted, or files of two saves were mixed", max_ops)


def _op_limit(max_ops):
    if max_ops is None:
        return MAX_OPS
    if not isinstance(max_ops, int) or isinstance(max_ops, bool) or max_ops < 0:
        raise ValueError(f"max_ops must be a non-negative int or None, not {max_ops!r}")
    return max_ops


def program_from_payload(json_text, params, device="cpu", max_iterations=None, max_ops=None):
    """The LoadedProgram a pickle names (`LoadedProgram.__reduce__`): Program JSON + its .npz as bytes.

    The one constructor a pickled Program or static function calls: the payload
    is checked exactly as `load_program` checks files, and the Program is
    compiled here, from data only. Beyond a file's checks, the JSON carries
    `payload_sha256`, the SHA-256 of the JSON (without that field) and the
    parameters together: a payload with either half altered, or halves of two
    payloads, is a ProgramFormatError. That is an integrity check against
    accidents and edited halves, not authentication: whoever can edit a pickle
    can make it run any code (pickle's design), so untrusted Programs are
    loaded from files with `load_program`, never unpickled.
    """
    if not isinstance(json_text, str) or not isinstance(params, bytes):
        raise ProgramFormatError(f"a pickled Program is (JSON text, .npz bytes), got ({type(json_text).__name__}, "
                                 f"{type(params).__name__})")
    max_ops = _op_limit(max_ops)
    return _checked(parse_json(json_text, "the pickled Program"), params, "the pickled Program",
                    lambda data: hashlib.sha256(data).hexdigest(), device, None, max_iterations,
                    "the payload was altered, or two payloads were mixed", max_ops, payload=True)


def _check_payload_digest(data, params):
    """The pickled JSON data carries the SHA-256 of itself (less that field) and the parameters together."""
    claimed = data.get("payload_sha256")
    if not isinstance(claimed, str) or claimed != _payload_sha256(
            {k: v for k, v in data.items() if k != "payload_sha256"}, params):
        raise ProgramFormatError("the pickled Program is not the one pickled: the SHA-256 of its Program JSON and "
                                 "parameters together differs from the one it carries (payload_sha256; the payload "
                                 "was altered, or two payloads were mixed)" if isinstance(claimed, str) else
                                 "the pickled Program carries no payload_sha256 (the SHA-256 of its Program JSON "
                                 "and parameters): it was not made by pickling a Program")


def _payload_sha256(data, params):
    """The SHA-256 over a pickled Program's JSON data (canonical form, without this digest) and .npz bytes."""
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    digest.update(b"\0")
    digest.update(params)
    return digest.hexdigest()


def _checked(data, params, source, digest_of, device, max_bytes, max_iterations, why_mismatch, max_ops,
             payload=False):
    """A LoadedProgram from Program JSON data and parameters (a path or bytes), after every check the loader
    makes."""
    program = program_from_dict(data, source=source, max_ops=max_ops)
    expected = {v.name: (v.static_shape, v.dtype) for v in program.inputs if v.persistable}
    arrays = read_params(params, expected, max_bytes=max_bytes)
    digest = data.get("params_sha256")    # after the reader's checks (data is a dict): those say what is wrong first
    if digest is not None and (not isinstance(digest, str) or digest != digest_of(params)):
        where = "the pickled parameters are" if isinstance(params, bytes) else f"{params}: the parameters file is"
        raise ProgramFormatError(f"{where} not the one saved with {source} (its SHA-256 differs: {why_mismatch})")
    if payload:
        _check_payload_digest(data, params)
    executor = Executor(device, max_iterations=max_iterations)
    backend = executor.backend
    program.parameters = {name: Tensor(backend.asarray(arrays[name]), backend) for name in expected}
    return LoadedProgram(program, executor)


def program_payload(program):
    """(JSON text, .npz bytes) of a Program and its parameters: what a pickle of it carries (origins relative,
    as `save_program` writes them)."""
    arrays = parameter_arrays(program)
    data = program_to_dict(program, origins="relative")
    program_from_dict(data, source=f"Program '{program.name}' (not pickled)")
    buffer = io.BytesIO()
    write_params(buffer, arrays)
    params = buffer.getvalue()
    data["params_sha256"] = hashlib.sha256(params).hexdigest()
    data["payload_sha256"] = _payload_sha256(data, params)     # over all of it: a pickle is one object
    return json.dumps(data), params


class LoadedProgram:
    """A loaded Program, callable like the function it was traced from.

    Call it with the Program's non-persistable inputs, positionally (in
    `input_names` order) or by name; it returns the outputs nest of Tensors
    (and any Python constants the function returned). Wrong arguments are a
    TypeError; values of the wrong dtype or shape a FeedError; an op failing
    while the Program runs raises with the op and its origin in the message.
    """

    def __init__(self, program, executor):
        self.program = program
        self.executor = executor
        self.input_names = tuple(v.name for v in program.inputs if not v.persistable)

    @property
    def device(self):
        return self.executor.backend.name

    @property
    def input_specs(self):
        """InputSpecs of the inputs (None for a dynamic dim), in call order."""
        return [InputSpec(v.static_shape, v.dtype, v.name) for v in self.program.inputs if not v.persistable]

    def state_dict(self):
        """{parameter name: Tensor} (the values the Program runs with)."""
        return dict(self.program.parameters)

    def __call__(self, /, *args, **kwargs):      # positional-only: an input may be called `self`
        return self.run(self.bind(args, kwargs))

    def run(self, feed):
        """The outputs nest for `feed`, a {input name: value} dict (as `bind` makes it)."""
        outputs = self.executor.run(self.program, feed)
        return rebuild_outputs(self.program, outputs)

    def bind(self, args, kwargs):
        """{input name: value} for a call's arguments; a TypeError for missing, extra or unknown ones."""
        names = self.input_names
        if len(args) > len(names):
            raise TypeError(f"{self.program.name}() takes {len(names)} input(s) {list(names)}, got {len(args)}")
        feed = dict(zip(names, args))
        for name, value in kwargs.items():
            if name in feed:
                raise TypeError(f"{self.program.name}() got multiple values for input '{name}'")
            if name not in names:
                what = "a parameter, not an input" if name in self.program.parameters else "not an input"
                raise TypeError(f"{self.program.name}(): '{name}' is {what}; the inputs are {list(names)}")
            feed[name] = value
        missing = [n for n in names if n not in feed]
        if missing:
            raise TypeError(f"{self.program.name}() is missing input(s) {missing}")
        return feed

    def __reduce__(self):
        """Pickled as its Program JSON and parameters (never code): unpickling checks them as `load` does."""
        return program_from_payload, program_payload(self.program) + (self.device, self.executor.max_iterations)

    def __repr__(self):
        specs = ", ".join(repr(s) for s in self.input_specs)
        return f"<LoadedProgram {self.program.name}({specs}) on {self.device}>"
