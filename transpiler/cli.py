"""The `dy2static` command: show converted source, show Programs, run functions on saved arrays.

    dy2static convert model.py                      every @to_static function (else every top-level one)
    dy2static convert model.py::f --diff            unified diff, original vs converted
    dy2static program model.py::f --spec 'x:float32[None,784]' [--format text|json|dot] [--optimized] [--grad]
    dy2static run model.py::f --input x=x.npy [--out out.npz]
    dy2static run model.py::f --input x=big.npy --batch-size 128 --out outdir   memory-mapped, in batches
    dy2static run model.py::f --input x=big.npy --scheduler tcp://host:8786 --out outdir   on a Dask cluster
    dy2static export model.py::f --spec 'x:float32[None,784]' --out build/f [--format python|program|onnx]
    dy2static export build/f.program.json --out build/f_np        a saved Program: no --spec needed
    dy2static run f.program.json --input x=x.npy --max-iterations 100000 --max-bytes 10000000   an untrusted one

TARGET is `FILE.py` or `FILE.py::QUALNAME` (`run` and `export` also take a saved
Program, `PATH.program.json`, which needs no source and no --spec). QUALNAME is a dotted path from the
module: a function (`f`), a method of a class (`Net.forward`: `convert` only, the
method is converted as a plain function), or an attribute path through a
module-level object (`model.forward`, or just `model` for a Layer instance, which
means its `forward`); `program` and `run` need something callable without `self`,
that is a function or a path through an instance.

The user's file is imported by path under a unique module name, with its folder
first on sys.path (as `python FILE.py` would have it). Outputs are written to
temporaries and renamed into place when whole; an output that is an input is
refused. Errors are one line on stderr and exit status 1 (`--traceback` shows
the whole Python traceback); usage errors exit with status 2.
"""
import argparse
import difflib
import importlib.util
import inspect
import itertools
import os
import re
import shutil
import subprocess
import sys
import textwrap
import traceback
import types

import numpy as np

import runtime as rt
from runtime import atomic_files, deploy, export, pytree
from runtime.printer import program_to_dot
from runtime.serialization import MAX_OPS, PARAMS_RATIO, PARAMS_SLACK
from runtime.shape_text import shape_text
from runtime.tracing import InputSpec

from . import batches, cluster
from .api import StaticFunction, to_source, to_static
from .errors import ConversionError
from runtime import onnx as runtime_onnx

PROG = "dy2static"
SPEC_GRAMMAR = ("[NAME:]DTYPE[DIM, ...] where DIM is an integer, or None / ? / -1 for a dynamic dim, "
                "e.g. 'x:float32[None,784]' or 'int64[]' for a scalar")
_module_ids = itertools.count()


class CLIError(Exception):
    """A failure to report as one line on stderr, exit status 1."""


# --- loading the user's file ---------------------------------------------------------------

def split_target(target):
    """'FILE.py::QUALNAME' → (FILE.py, QUALNAME or None)."""
    path, sep, qualname = target.partition("::")
    if sep and not qualname:
        raise CLIError(f"'{target}': nothing after '::' (expected FILE.py::QUALNAME, e.g. model.py::forward)")
    return path, qualname or None


def load_module(path):
    """Import the file at `path` under a fresh, unique module name."""
    if not os.path.exists(path):
        raise CLIError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CLIError(f"{path}: is a directory, expected a Python file")
    full = os.path.abspath(path)
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(full))[0])
    name = f"dy2static_user_{stem}_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, full)
    if spec is None or spec.loader is None:
        raise CLIError(f"{path}: cannot import this file (expected a .py file)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = os.path.dirname(full)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        del sys.modules[name]
        where = f"{display_path(e.filename or full)}:{e.lineno}" if e.lineno else display_path(e.filename or full)
        raise CLIError(f"{where}: syntax error: {e.msg}") from None
    except SystemExit as e:
        del sys.modules[name]
        raise CLIError(f"importing {path} failed: it called sys.exit({e.code!r}){_user_location(e, full)}; keep a "
                       "script's work under `if __name__ == '__main__':`") from e
    except Exception as e:
        del sys.modules[name]
        raise CLIError(f"importing {path} failed: {_one_line(e)}{_user_location(e, full)}") from e
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def resolve(module, path, qualname):
    """(object, parent) for a dotted `qualname` inside `module`."""
    obj, parent = module, None
    walked = []
    for part in qualname.split("."):
        walked.append(part)
        try:
            obj, parent = inspect.getattr_static(obj, part) if isinstance(obj, type) else getattr(obj, part), obj
        except AttributeError:
            if len(walked) == 1:
                what = "function" if part == qualname else "name"
                raise CLIError(f"{path}: no {what} '{part}'{_candidates(module)}") from None
            raise CLIError(f"{path}: '{'.'.join(walked[:-1])}' has no attribute '{part}'") from None
    if isinstance(parent, type) and isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    return obj, parent


def _candidates(module):
    names = [name for name, _ in top_level_functions(module)]
    return f" (its functions: {', '.join(names)})" if names else " (it defines no functions)"


def top_level_functions(module):
    """(name, function) of functions defined in the module itself, in source order."""
    found = [(name, value) for name, value in vars(module).items()
             if isinstance(value, types.FunctionType) and value.__module__ == module.__name__]
    return sorted(found, key=lambda item: item[1].__code__.co_firstlineno)


def static_functions(module):
    """(qualname, StaticFunction) of every @to_static in the module: top level and in its classes."""
    found = []
    for name, value in vars(module).items():
        if isinstance(value, StaticFunction) and value.__module__ == module.__name__:
            found.append((name, value))
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                if isinstance(member, StaticFunction):
                    found.append((f"{name}.{attr}", member))
    return sorted(found, key=lambda item: inspect.unwrap(item[1]).__code__.co_firstlineno)


def _function_of(obj):
    """The plain Python function behind obj (StaticFunction, method, function), or None."""
    if isinstance(obj, rt.nn.Layer):
        obj = obj.forward
    if isinstance(obj, StaticFunction):
        return inspect.unwrap(obj)
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
        return inspect.unwrap(obj) if isinstance(obj, StaticFunction) else obj
    return obj if isinstance(obj, types.FunctionType) else None


def static_callable(obj, parent, target):
    """A StaticFunction to trace/run, for `program` and `run`."""
    if isinstance(obj, rt.nn.Layer):
        obj = obj.forward
    unbound = obj.rollback() if isinstance(obj, StaticFunction) else obj
    if isinstance(parent, type) and isinstance(unbound, types.FunctionType):
        raise CLIError(f"{target}: is a method of class {parent.__name__} and needs an instance; give a "
                       "top-level function or a path through a module-level instance (e.g. FILE.py::model.forward)")
    if isinstance(obj, StaticFunction):
        return obj
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        return to_static(obj)
    raise CLIError(f"{target}: is a {type(obj).__name__}, not a function, method or Layer")


# --- formatting errors -----------------------------------------------------------------------

def display_path(path):
    """A path relative to the current folder when it is below it (shorter, machine-independent)."""
    if not path:
        return "<unknown>"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _one_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _user_location(error, user_file):
    """' (file:line)' of the innermost frame of the user's file in error's traceback."""
    filename, lineno = getattr(error, "filename", None), getattr(error, "lineno", None)
    if not (isinstance(filename, str) and isinstance(lineno, int)):
        filename = lineno = None
        for frame, line in traceback.walk_tb(error.__traceback__):
            if os.path.abspath(frame.f_code.co_filename) == user_file:
                filename, lineno = frame.f_code.co_filename, line
    return f" ({display_path(filename)}:{lineno})" if filename else ""


def describe_error(error, user_file):
    """One line for any exception raised while converting, tracing or running the user's code."""
    if isinstance(error, ConversionError):
        where = f"{display_path(error.filename)}:{error.lineno}: " if error.filename else ""
        hint = f" (hint: {error.hint})" if error.hint else ""
        return f"{where}cannot convert: {error.reason}{hint}"
    return _one_line(error) + _user_location(error, user_file)


# --- specs and inputs ------------------------------------------------------------------------

_SPEC = re.compile(r"^\s*(?:(?P<name>[A-Za-z_]\w*)\s*:)?\s*(?P<dtype>[A-Za-z_]\w*)\s*\[(?P<dims>[^\]]*)\]\s*$")


def parse_spec(text):
    """'x:float32[None,784]' → InputSpec([None, 784], 'float32', 'x')."""
    match = _SPEC.match(text)
    if not match:
        raise CLIError(f"bad --spec '{text}': expected {SPEC_GRAMMAR}")
    dims = []
    for dim in (d.strip() for d in match["dims"].split(",")) if match["dims"].strip() else ():
        if dim in ("None", "?", "-1"):
            dims.append(None)
        elif dim.isdigit():
            dims.append(int(dim))
        else:
            raise CLIError(f"bad --spec '{text}': dim '{dim}' is not an integer or None; expected {SPEC_GRAMMAR}")
    try:
        return InputSpec(dims, match["dtype"], match["name"])
    except TypeError as e:
        raise CLIError(f"bad --spec '{text}': unknown dtype '{match['dtype']}' ({e})") from None


def bind_arguments(static, named, target, what):
    """Arguments for the function from [(name or None, value)]: named ones by parameter, others in order."""
    params = list(inspect.signature(static.rollback()).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {}
    unnamed = []
    for name, value in named:
        if name is None:
            unnamed.append(value)
        elif name not in {p.name for p in params}:
            raise CLIError(f"{what} '{name}': {target} has no parameter '{name}' "
                           f"(its parameters: {', '.join(p.name for p in params) or 'none'})")
        elif name in by_name:
            raise CLIError(f"{what} '{name}' given twice")
        else:
            by_name[name] = value
    free = iter(p for p in positional if p.name not in by_name)
    for value in unnamed:
        param = next(free, None)
        if param is None:
            raise CLIError(f"too many {what}s: {target} takes {len(positional)} positional argument(s)")
        by_name[param.name] = value
    args, kwargs = [], {}
    for p in params:
        if p.name not in by_name:
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise CLIError(f"missing {what} for parameter '{p.name}' of {target}")
            continue
        if p in positional and len(args) == positional.index(p) and not kwargs:
            args.append(by_name[p.name])
        else:
            kwargs[p.name] = by_name[p.name]
    return args, kwargs


def split_input(text):
    """'x=path.npy' → ('x', 'path.npy'); 'path.npy' → (None, 'path.npy')."""
    name, sep, path = text.partition("=")
    if not sep:
        return None, text
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise CLIError(f"bad --input '{text}': expected NAME=FILE.npy or FILE.npy")
    return name, path


def parse_input(text, mmap=False):
    """'x=path.npy' → ('x', array); 'path.npy' → (None, array); memory-mapped read-only with `mmap`."""
    name, path = split_input(text)
    if not os.path.exists(path):
        raise CLIError(f"--input {text}: {path}: no such file")
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except Exception as e:
        raise CLIError(f"--input {text}: cannot read {path} as a .npy array ({_one_line(e)})") from None
    if not isinstance(array, np.ndarray):
        raise CLIError(f"--input {text}: {path} holds several arrays (an .npz); give one .npy file per input")
    return name, array


# --- Graphviz rendering ----------------------------------------------------------------------

def render_dot(dot_text, out_path):
    """Run Graphviz's `dot` to write out_path (format from its extension)."""
    dot = shutil.which("dot")
    if dot is None:
        raise CLIError(f"cannot write {out_path}: Graphviz's 'dot' program is not installed (install it with "
                       "`apt-get install graphviz`, `brew install graphviz` or `conda install graphviz`), "
                       "or write the DOT text with --out FILE.dot")
    fmt = os.path.splitext(out_path)[1].lstrip(".").lower()
    done = subprocess.run([dot, f"-T{fmt}", "-o", out_path], input=dot_text, text=True, capture_output=True)
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[0] if done.stderr.strip() else f"exit status {done.returncode}"
        raise CLIError(f"dot -T{fmt} failed: {reason}")


# --- subcommands -----------------------------------------------------------------------------

def _targets_for_convert(module, path, qualname):
    if qualname is not None:
        obj, _ = resolve(module, path, qualname)
        fn = _function_of(obj)
        if fn is None:
            raise CLIError(f"{path}::{qualname}: is a {type(obj).__name__}, not a function, method or Layer")
        return [(qualname, fn)]
    found = [(name, inspect.unwrap(static)) for name, static in static_functions(module)]
    found = found or top_level_functions(module)
    if not found:
        raise CLIError(f"{path}: defines no functions to convert")
    return found


def cmd_convert(args, out):
    path, qualname = split_target(args.target)
    module = load_module(path)
    targets = _targets_for_convert(module, path, qualname)
    user_file = os.path.abspath(path)
    chunks = []
    for name, fn in targets:
        try:
            code = to_source(fn)
        except Exception as e:
            raise CLIError(describe_error(e, user_file)) from e
        if args.diff:
            original = textwrap.dedent(inspect.getsource(fn))
            code = "".join(difflib.unified_diff(original.splitlines(True), code.splitlines(True),
                                                f"{path}::{name} (original)", f"{path}::{name} (converted)"))
        elif len(targets) > 1:
            code = f"# {path}::{name}\n{code}"
        chunks.append(code)
    out.write("\n".join(chunks))
    return 0


def static_target(args):
    """(path, StaticFunction) of the FILE.py::QUALNAME a command names."""
    path, qualname = split_target(args.target)
    if qualname is None:
        raise CLIError(f"'{args.target}': say which function, as FILE.py::QUALNAME")
    module = load_module(path)
    obj, parent = resolve(module, path, qualname)
    return path, static_callable(obj, parent, args.target)


def traced_program(args, optimized=False, grad=False):
    """The Program of args.target for the --spec inputs (its backward Program with grad=True); errors as
    CLIError with the user's line."""
    specs = [parse_spec(text) for text in args.spec]
    path, static = static_target(args)
    call_args, call_kwargs = bind_arguments(static, [(s.name, s) for s in specs], args.target, "--spec")
    try:
        return static.get_program(*call_args, optimized=optimized, grad=grad, **call_kwargs)
    except Exception as e:
        raise CLIError(describe_error(e, os.path.abspath(path))) from e


def cmd_program(args, out):
    program = traced_program(args, optimized=args.optimized, grad=args.grad)
    if args.format == "json":
        text = program.to_json()
        text = text if text.endswith("\n") else text + "\n"
    elif args.format == "dot":
        text = program_to_dot(program)
    else:
        text = str(program) + "\n"
    if args.out is None:
        out.write(text)
        return 0
    ext = os.path.splitext(args.out)[1].lower()
    if args.format == "dot" and ext not in (".dot", ".gv", ""):
        render_dot(text, args.out)
    else:
        with atomic_files.replacing(args.out) as temp, open(temp, "w", encoding="utf-8") as fh:
            fh.write(text)
    out.write(f"wrote {args.out}\n")
    return 0


def run_target(args):
    """(call, user file or None) for `run`: call([(name or None, array)]) runs TARGET on those inputs."""
    if is_saved_program(args.target):
        loaded = load_saved(args.target, device=args.device, **load_limits(args))

        def call(named):
            positional = [value for name, value in named if name is None]
            keywords = {name: value for name, value in named if name is not None}
            try:
                feed = loaded.bind(positional, keywords)
            except TypeError as e:
                raise CLIError(f"--input: {e}") from e
            return loaded.run({name: _to_tensor(value, args.device) for name, value in feed.items()})
        return call, None

    refuse_load_limits(args)
    path, static = static_target(args)

    def call(named):
        tensors = [(name, _to_tensor(value, args.device)) for name, value in named]
        call_args, call_kwargs = bind_arguments(static, tensors, args.target, "--input")
        return static(*call_args, **call_kwargs)
    return call, os.path.abspath(path)


def _to_tensor(array, device):
    try:
        return rt.tensor(array, device=device)
    except Exception as e:
        raise CLIError(f"--device {device}: {_one_line(e)}") from e


def _run_error(error, user_file):
    if isinstance(error, CLIError):
        return error
    rows = getattr(error, "rows", None)
    where = f"rows {rows[0]}:{rows[1]}: " if rows else ""
    message = describe_error(error, user_file) if user_file else _one_line(error)
    return CLIError(where + message)


def cmd_run(args, out):
    if args.scheduler is not None:
        return run_on_cluster(args, out)
    if args.batch_size is not None:
        return run_in_batches(args, out)
    if args.out is not None:
        check_out_is_no_input(args)
    inputs = [parse_input(text) for text in args.input]
    call, user_file = run_target(args)
    try:
        result = call(inputs)
    except Exception as e:
        raise _run_error(e, user_file) from e
    leaves, _ = pytree.flatten(result)
    arrays = {}
    for i, leaf in enumerate(leaves):
        arrays[f"out{i}"] = leaf.numpy() if isinstance(leaf, rt.Tensor) else np.asarray(leaf)
    if args.out is not None:
        write_npz(args.out, arrays)
        out.write(f"wrote {len(arrays)} output(s) to {args.out}: {', '.join(arrays)}\n")
        return 0
    for key, array in arrays.items():
        out.write(f"{key}: {array.dtype.name}{shape_text(array.shape)}\n{np.array2string(array, threshold=200)}\n")
    return 0


def write_npz(path, arrays):
    """`run --out FILE.npz`: written whole to a temporary and renamed onto FILE (".npz" added as np.savez does)."""
    path = path if path.endswith(".npz") else path + ".npz"
    try:
        with atomic_files.replacing(path) as temp, open(temp, "wb") as file:
            np.savez(file, **arrays)
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or _one_line(e)}") from e


def check_out_is_no_input(args):
    """A CLIError, before anything runs or is written, if `run --out FILE.npz` is one of the --input files."""
    path = args.out if args.out.endswith(".npz") else args.out + ".npz"
    for text in args.input:
        source = split_input(text)[1]
        if os.path.exists(path) and os.path.exists(source) and os.path.samefile(path, source):
            raise CLIError(f"--out {args.out} is the input {source} (the same file), which the outputs would "
                           "replace; give another --out")


def run_in_batches(args, out):
    """`run --batch-size N --out DIR`: memory-mapped inputs in, one .npy per output written batch by batch."""
    if args.out is None or args.out.endswith(".npz"):
        raise CLIError("--batch-size writes each output to its own file as it goes: give --out DIR (a folder "
                       "that receives out0.npy, out1.npy, ...)")
    inputs = [parse_input(text, mmap=True) for text in args.input]
    call, user_file = run_target(args)
    try:
        total = batches.common_rows([(name or f"input {i}", a) for i, (name, a) in enumerate(inputs)])
    except batches.BatchError as e:
        raise CLIError(str(e)) from None
    stderr = getattr(args, "stderr", None) or sys.stderr
    show = not args.quiet and total > 0 and hasattr(stderr, "isatty") and stderr.isatty()
    progress = batches.ProgressBar(stderr, total) if show else None
    try:
        written = batches.run_batches(call, inputs, args.batch_size, args.out, progress)
    except batches.BatchError as e:
        raise CLIError(str(e)) from None
    except Exception as e:
        raise _run_error(e, user_file) from e
    names = ", ".join(os.path.basename(p) for p in written)
    out.write(f"wrote {len(written)} output(s) for {total} rows to {args.out}: {names}\n")
    return 0


def run_on_cluster(args, out):
    """`run --scheduler ADDRESS --out DIR`: chunks of rows on a Dask cluster's workers, outputs as DIR/outI.npy."""
    if args.out is None or args.out.endswith(".npz"):
        raise CLIError("--scheduler has the workers write each output to its own file: give --out DIR (a folder "
                       "that receives out0.npy, out1.npy, ...)")
    if args.batch_size is not None and args.batch_size < 1:
        raise CLIError(f"--batch-size must be at least 1, got {args.batch_size}")
    named = [(name, array.filename) for name, array in (parse_input(text, mmap=True) for text in args.input)]
    user_file = None
    if is_saved_program(args.target):
        target = load_saved(args.target, device=args.device, **load_limits(args))
        try:
            feed = target.bind([p for name, p in named if name is None], {n: p for n, p in named if n is not None})
        except TypeError as e:
            raise CLIError(f"--input: {e}") from e
        paths = [feed[name] for name in target.input_names]
    else:
        refuse_load_limits(args)
        path, target = static_target(args)
        user_file = os.path.abspath(path)
        paths, keywords = bind_arguments(target, named, args.target, "--input")
        if keywords:
            raise CLIError(f"--scheduler passes inputs by position; give --input for every parameter before "
                           f"{', '.join(keywords)}")
    try:
        written = cluster.run_on_scheduler(args.scheduler, target, paths, args.out, args.batch_size, args.device)
    except batches.BatchError as e:
        raise CLIError(str(e)) from None
    except ImportError as e:
        raise CLIError(f"--scheduler: {e}") from None
    except OSError as e:
        raise CLIError(f"--scheduler {args.scheduler}: {_one_line(e)}") from e
    except Exception as e:
        raise _run_error(e, user_file) from e
    names = ", ".join(os.path.basename(p) for p in written)
    out.write(f"wrote {len(written)} output(s) to {args.out} on the cluster at {args.scheduler}: {names}\n")
    return 0


def is_saved_program(target):
    """Whether TARGET names a saved Program (`PATH.program.json`) rather than a Python file."""
    return target.endswith(deploy.PROGRAM_SUFFIX)


def load_saved(target, device="cpu", max_bytes=None, max_iterations=None, max_ops=None):
    """The LoadedProgram saved at TARGET, under `transpiler.load`'s limits; its problems as one-line CLIErrors."""
    if not os.path.exists(target):
        raise CLIError(f"{target}: no such file")
    try:
        return deploy.load_program(target, device=device, max_bytes=max_bytes, max_iterations=max_iterations,
                                   max_ops=max_ops)
    except Exception as e:
        raise CLIError(f"cannot load {target}: {_one_line(e)}") from e


def load_limits(args):
    """{max_bytes, max_iterations, max_ops} given on the command line (None: the library's default)."""
    return {"max_bytes": args.max_bytes, "max_iterations": getattr(args, "max_iterations", None),
            "max_ops": args.max_ops}


def refuse_load_limits(args):
    """--max-bytes/--max-iterations/--max-ops bound what is loaded from a saved Program; refused for FILE.py."""
    given = [flag for flag, value in (("--max-bytes", args.max_bytes),
                                      ("--max-iterations", getattr(args, "max_iterations", None)),
                                      ("--max-ops", args.max_ops))
             if value is not None]
    if given:
        raise CLIError(f"{' and '.join(given)}: bound{'s' if len(given) == 1 else ''} a saved Program "
                       f"(PATH{deploy.PROGRAM_SUFFIX}) as it is loaded; {args.target} is Python code, which is "
                       "traced and run as written")


def cmd_export(args, out):
    if is_saved_program(args.target):
        if args.spec:
            raise CLIError(f"{args.target}: a saved Program has its own input specs; leave out --spec")
        program = load_saved(args.target, **load_limits(args)).program
    else:
        refuse_load_limits(args)
        program = traced_program(args)
    try:
        _make_parent(args.out)
        if args.format == "python":
            written = export.export_python(program, args.out, device=args.device)
        elif args.format == "onnx":
            written = (_export_onnx(program, args.out),)
        else:
            written = deploy.save_program(program, args.out)
    except (OSError, ValueError) as e:
        raise CLIError(f"cannot write {args.out}: {_one_line(e)}") from e
    out.write(f"wrote {', '.join(written)}\n")
    return 0


def _export_onnx(program, path):
    try:
        return runtime_onnx.export_onnx(program, path)
    except ImportError as e:
        raise CLIError(str(e)) from e
    except export.ExportError as e:
        raise CLIError(_one_line(e)) from e


def _make_parent(path):
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)


# --- argument parsing ------------------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Convert Python control flow over tensors into static Programs, and inspect them.",
        epilog="TARGET is FILE.py or FILE.py::QUALNAME: a function, or a path through a module-level instance "
               "(model.forward, or model for a Layer); `convert` also takes Class.method (converted as a plain "
               "function). `run` and `export` also take a saved PATH.program.json. FILE.py is imported, so its "
               "top-level code runs: keep scripts under "
               "`if __name__ == '__main__':`. Run `dy2static COMMAND --help` for each command.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", help="show the full Python traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("convert", parents=[common],
                       help="print the converted source of a function (or of every function)",
                       description="Print the converted source (what `f.code` shows). Without ::QUALNAME: every "
                                   "@to_static function in the file, or every top-level function if it has none.")
    p.add_argument("target", metavar="FILE.py[::QUALNAME]")
    p.add_argument("--diff", action="store_true", help="show a unified diff, original vs converted")
    p.set_defaults(handler=cmd_convert)

    p = sub.add_parser("program", parents=[common],
                       help="trace a function and print its Program",
                       description="Trace FILE.py::QUALNAME for the given input specs and print the Program.",
                       epilog=f"SPEC grammar: {SPEC_GRAMMAR}. A named spec goes to the parameter of that name, "
                              "unnamed ones fill the remaining parameters in order.")
    p.add_argument("target", metavar="FILE.py::QUALNAME")
    p.add_argument("--spec", action="append", default=[], metavar="SPEC",
                   help="an input spec, e.g. 'x:float32[None,784]' (repeat per tensor argument)")
    p.add_argument("--format", choices=("text", "json", "dot"), default="text",
                   help="text (readable IR, the default), json (the saved form) or dot (Graphviz)")
    p.add_argument("--optimized", action="store_true", help="show the Program after the optimization passes")
    p.add_argument("--grad", action="store_true",
                   help="show the backward Program (inputs and d_<output> cotangents -> the inputs' cotangents)")
    p.add_argument("--out", metavar="FILE",
                   help="write to FILE instead of stdout; with --format dot and a .svg/.png/.pdf name, "
                        "render it with Graphviz's `dot`")
    p.set_defaults(handler=cmd_program)

    p = sub.add_parser("run", parents=[common],
                       help="run a function as a static Program on arrays saved with numpy.save",
                       description="Run FILE.py::QUALNAME (converted and traced), or a saved Program "
                                   "PATH.program.json, on .npy inputs and print or save its outputs; with "
                                   "--batch-size, in batches over memory-mapped inputs.")
    p.add_argument("target", metavar="FILE.py::QUALNAME|PATH.program.json")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an argument, read with numpy.load(allow_pickle=False); a bare FILE.npy fills the next "
                        "parameter (repeat per argument)")
    p.add_argument("--out", metavar="FILE.npz|DIR",
                   help="write the outputs (out0, out1, ...) to FILE.npz; with --batch-size, to DIR/out0.npy, "
                        "DIR/out1.npy, ... (one .npy per output, in the order of the returned nest)")
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu"), help="where to run (gpu needs CuPy)")
    p.add_argument("--batch-size", type=int, metavar="N",
                   help="stream the inputs, memory-mapped, through the Program N rows (first dim) at a time, "
                        "writing each batch's outputs straight into --out DIR: inputs larger than memory work. "
                        "All inputs must have the same number of rows; every output must have one row per "
                        "input row; rows must not depend on each other (no reductions over the batch)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.5:8786): the "
                        "workers read the --input .npy files and write --out DIR/out0.npy, ... in chunks of rows "
                        "(--batch-size rows each, else Dask's automatic size); the files must be on a filesystem "
                        "the workers share. Needs dy2static[dask] here and on the workers")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (it is shown on stderr with --batch-size when stderr is a terminal)")
    _add_load_limits(p, iterations=True)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("export", parents=[common],
                       help="save a function's Program for deployment: as a standalone .py, or as IR + weights",
                       description="Trace FILE.py::QUALNAME for the given specs (or load a saved Program, "
                                   "PATH.program.json, which needs no --spec) and write it out: --format python "
                                   "writes OUT.py + OUT.npz importing only numpy (or cupy with --device gpu); "
                                   "--format program writes OUT.program.json + OUT.params.npz for transpiler.load; "
                                   "--format onnx writes OUT.onnx (needs the onnx extra).",
                       epilog=f"SPEC grammar: {SPEC_GRAMMAR}.")
    p.add_argument("target", metavar="FILE.py::QUALNAME|PATH.program.json")
    p.add_argument("--spec", action="append", default=[], metavar="SPEC",
                   help="an input spec, e.g. 'x:float32[None,784]' (repeat per tensor argument)")
    p.add_argument("--format", choices=("python", "program", "onnx"), default="python",
                   help="python (a standalone module, the default), program (JSON IR + .npz weights) or "
                        "onnx (one .onnx model, weights as initializers)")
    p.add_argument("--out", required=True, metavar="PATH", help="output path without extension")
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu"),
                   help="the array module the exported .py imports: numpy (cpu) or cupy (gpu)")
    _add_load_limits(p, iterations=False)
    p.set_defaults(handler=cmd_export)
    return parser


def _count(text):
    """A non-negative integer option (argparse type): anything else is a usage error."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _add_load_limits(parser, iterations):
    """The limits `transpiler.load` applies to an untrusted saved Program, as options (same defaults)."""
    parser.add_argument("--max-bytes", type=_count, metavar="N",
                        help="with a saved PATH.program.json: the most bytes its parameters may take once loaded "
                             f"(default, as transpiler.load: {PARAMS_RATIO}x the .params.npz file's size + "
                             f"{PARAMS_SLACK >> 20} MiB); parameters over it are refused before their data is read")
    parser.add_argument("--max-ops", type=_count, metavar="N",
                        help="with a saved PATH.program.json: the most ops it may hold, all blocks together "
                             f"(default, as transpiler.load: {MAX_OPS:,}); a larger file is refused before its ops "
                             "are read")
    if iterations:
        parser.add_argument("--max-iterations", type=_count, metavar="N",
                            help="with a saved PATH.program.json: a budget of N while-loop iterations per "
                                 "call, all loops together (nested ones multiply), past which an error names the "
                                 "loop that ran out (default, as transpiler.load: no limit); give it for Programs "
                                 "you did not write")


def main(argv=None, stdout=None, stderr=None):
    """Entry point of the `dy2static` command; returns the exit status."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args = build_parser().parse_args(argv)
    args.stderr = stderr
    try:
        return args.handler(args, stdout)
    except CLIError as e:
        if args.traceback and e.__cause__ is not None:
            traceback.print_exception(e.__cause__, file=stderr)
        stderr.write(f"{PROG}: error: {e}\n")
        return 1
    except BrokenPipeError:           # `dy2static ... | head`: stop quietly
        if stdout is sys.stdout:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as e:            # a bug of ours or an unexpected failure: still one line
        if args.traceback:
            traceback.print_exc(file=stderr)
        stderr.write(f"{PROG}: error: {_one_line(e)} (rerun with --traceback for details)\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
