"""Programs as versioned, human-readable JSON, parameters as .npz; and back.

Reading treats the file as hostile. Nothing from it is executed: op types must
be in the registry, attrs are plain data whose keys are identifiers and whose
values have the types the kernels take (an attr name means one thing across
ops: `axis` is an int, never a bool), variable names are ones generated code
can bind (no keyword, no `__debug__`), and every reference is checked (variables declared once, defined before use, in a block
that encloses the use; sub-block indices in range, each block used by exactly
one op, no cycles; `cond`/`while` arities consistent, and every value their
blocks read from outside listed among their inputs). Each op's own shape
rule re-derives its outputs, so a file cannot declare types the op does not
make. Nothing is allocated beyond the file's real content: absurd shapes,
nesting deeper than `MAX_DEPTH` and npy headers that claim more data than the
file holds are refused before any array is made. Every problem is a
`ProgramFormatError` naming the file and what is wrong.
"""
import functools
import inspect
import io
import json
import keyword
import math
import os
import re
import reprlib
import zipfile

import numpy as np

from . import pytree
from .ir import Block, Operator, Program, Variable, close_blocks, sub_block_attrs
from .naming import value_names
from .ops.registry import REGISTRY
from .ops.regions import RegionError
from .ops.rules import Spec, input_types
from .shape_text import shape_text

FORMAT = "dy2static.program"
VERSION = 2
OPEN_BLOCKS_VERSION = 1     # files whose sub-blocks read enclosing values by name: closed when read

MAX_ELEMENTS = 2 ** 40      # elements of one static shape
MAX_RANK = 64
MAX_DEPTH = 100             # nesting of JSON arrays/objects
MAX_BLOCK_DEPTH = 64        # nesting of sub-blocks (Python allows ~99 indentation levels)
MAX_LOOP_DEPTH = 16         # nesting of while ops (Python allows 20 nested loops)
MAX_NAME_LENGTH = 256
MAX_OPS = 200_000           # ops of a loaded Program, all blocks together, unless load(..., max_ops=N)
# what `naming.value_names` writes: ASCII only, so no two names alias once Python
# NFKC-normalizes identifiers (`ｖ` is `v` in generated code)
VAR_NAME = re.compile(r"[A-Za-z0-9_.]+")
ATTR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DTYPES = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64", "complex64", "complex128"])


# What an attr of each name holds, for every op that has one (an attr name means one thing across the
# registry): the loader refuses other types before a kernel sees them, so a plan and an exported module
# (which call kernels with these values) never differ on a value NumPy takes in one spelling and refuses
# in another (`axis=False` is axis 0 to `ndarray.take`, a TypeError to `np.take`). Names not listed
# hold data any literal may be (a constant's value, a getitem index, a print template).
_INT_ATTRS = frozenset([      # an int (never a bool), None, or (nested) lists of those
    "axis", "axes", "source", "destination", "shift", "k", "n", "m", "groups", "offset", "num", "num_classes",
    "minlength", "ignore_index", "stride", "padding", "dilation", "kernel_size", "output_padding",
    "repetitions", "repeats", "sections", "shape", "normalized_shape", "into"])
_BOOL_ATTRS = frozenset([     # exactly True or False
    "keepdims", "descending", "ceil_mode", "endpoint", "upper", "full_matrices", "include_initial", "largest",
    "inverse", "real", "prepend", "append"])
_NUMBER_ATTRS = frozenset([   # an int or float (never a bool), or None
    "start", "stop", "step", "correction", "eps", "p", "beta", "threshold", "negative_slope", "alpha",
    "label_smoothing", "d", "rtol"])
_STR_ATTRS = frozenset([      # a string, or None
    "origin", "mode", "kind", "reduction", "side", "norm", "indexing", "approximate", "subscripts", "reduce"])


def _attr_fits(name, value):
    """Whether `value` is of the type the kernels take for an attr called `name` (see _INT_ATTRS...)."""
    if name in _INT_ATTRS:
        if isinstance(value, (list, tuple)):
            return all(_attr_fits(name, v) for v in value)
        return value is None or _is_int(value)
    if name in _BOOL_ATTRS:
        return isinstance(value, bool)
    if name in _NUMBER_ATTRS:
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if name in _STR_ATTRS:
        return value is None or isinstance(value, str)
    if name == "dtype":
        return value is None or (isinstance(value, str) and value in DTYPES)
    return True


class ProgramFormatError(ValueError):
    """A Program or parameters file (or JSON text) is malformed; the message names the source and the problem."""


_brief = reprlib.Repr()
_brief.maxstring = _brief.maxother = 60
_brief.maxlist = _brief.maxtuple = _brief.maxdict = 6
_brief.maxlevel = 3


def brief(value):
    """A short repr of a value read from an untrusted file, for error messages."""
    return _brief.repr(value)


# --- writing --------------------------------------------------------------------------

def _canon(value):
    """Attrs as JSON data: tuples become lists, non-finite floats become tagged strings."""
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if isinstance(value, (np.generic,)):
        return _canon(value.item())
    return value


def _encode_input(x, names):
    if isinstance(x, Variable):
        return names[id(x)]
    if isinstance(x, complex):
        return {"complex": [x.real, x.imag]}
    return {"lit": _canon(x)}


def program_to_dict(program, origins="as is"):
    """The Program as JSON data. `origins` says what becomes of each op's "file:line" (and of the `origin`
    attrs of ops that report it): "as is"; "relative", the file relative to the folder above its package
    (`relative_origin`: what a saved file carries, no author's home directory); False, dropped (None)."""
    if origins not in ("as is", "relative", False):
        raise ValueError(f"origins must be 'as is', 'relative' or False, not {origins!r}")
    where = _ORIGIN_FORMS[origins]
    order = program.blocks                  # a block's number is its place in this order (as printed)
    number = {id(b): i for i, b in enumerate(order)}
    names = value_names(program)            # unique in the file: a value's own name is a hint
    declared = [[] for _ in order]          # each block's values, in definition order
    for v in program.all_vars():
        k = number.get(id(v.block))
        if k is not None:
            declared[k].append(v)

    def attrs_of(op):
        attrs = op.attrs if "origin" not in op.attrs or origins == "as is" else \
            dict(op.attrs, origin=where(op.attrs["origin"]))
        blocks = sub_block_attrs(op.type)
        return {k: number[id(v)] if k in blocks else v for k, v in attrs.items()} if blocks else attrs

    blocks = []
    for b in order:
        blocks.append({
            "idx": number[id(b)],
            "parent": -1 if b.parent is None else number[id(b.parent)],
            "vars": [_var_dict(v, names) for v in declared[number[id(b)]]],
            "params": [names[id(v)] for v in b.params],
            "closure": [names[id(v)] for v in b.closure],
            "results": [_encode_input(v, names) for v in b.results],
            "ops": [{"type": op.type,
                     "inputs": [_encode_input(x, names) for x in op.inputs],
                     "outputs": [names[id(o)] for o in op.outputs],
                     "attrs": _canon(attrs_of(op)),
                     "origin": where(op.origin)} for op in b.ops],
        })
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": program.name,
        "inputs": [names[id(v)] for v in program.inputs],
        "outputs": [names[id(v)] for v in program.outputs],
        "parameters": [{"name": names[id(v)], "shape": list(v.static_shape), "dtype": v.dtype.name}
                       for v in program.inputs if v.persistable],
        "output_tree": pytree.to_json(program.output_tree) if program.output_tree is not None else None,
        "output_consts": {str(k): _canon(v) for k, v in program.output_consts.items()},
        "blocks": blocks,
    }


def relative_origin(origin):
    """"pkg/sub/mod.py:12" for "/home/me/src/pkg/sub/mod.py:12": the file relative to the folder that holds
    its top package (the folders above it with an `__init__.py`), or its bare name for a script. Only an
    absolute path is changed: a relative one ("examples/mlp.py:3", an origin read back from a saved file)
    and a name that is no path ("<stdin>:3") stay as they are."""
    if not isinstance(origin, str):
        return origin
    filename, sep, line = origin.rpartition(":")
    if not sep or not line.isdigit():
        filename, line = origin, None
    if not os.path.isabs(filename):
        return origin
    relative = _relative_file(filename)
    return relative if line is None else f"{relative}:{line}"


@functools.lru_cache(maxsize=256)
def _relative_file(filename):
    folder, name = os.path.split(os.path.normpath(filename))
    parts = [name]
    while folder and os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        if not package:
            break
        parts.append(package)
    return "/".join(reversed(parts))


def with_relative_origins(program):
    """A structural copy whose ops name the user's files relative to their packages (`relative_origin`):
    what an exported module may carry."""
    copy = program.clone()
    for op in copy.ops():
        op.origin = relative_origin(op.origin)
        if "origin" in op.attrs:
            op.attrs["origin"] = relative_origin(op.attrs["origin"])
    return copy


_ORIGIN_FORMS = {"as is": lambda origin: origin, "relative": relative_origin, False: lambda origin: None}


def _var_dict(v, names):
    return {"name": names[id(v)], "shape": list(v.static_shape), "dtype": v.dtype.name,
            "persistable": v.persistable, "weak": v.weak, "kind": v.kind}


def program_to_json(program, indent=1):
    return json.dumps(program_to_dict(program), indent=indent)


# --- reading --------------------------------------------------------------------------

def _tuplify(value, sequence=tuple):
    """JSON attrs as Python values: lists as `sequence` (tuples), tagged non-finite floats as floats."""
    if isinstance(value, (list, tuple)):
        return sequence(_tuplify(v, sequence) for v in value)
    if isinstance(value, dict):
        if set(value) == {"float"}:
            return float(value["float"])
        return {k: _tuplify(v, sequence) for k, v in value.items()}
    return value


def program_from_json(text, source="<string>", max_ops=None):
    """Parse and validate Program JSON (str or bytes); ProgramFormatError on any problem."""
    return program_from_dict(parse_json(text, source), source, max_ops=max_ops)


def parse_json(text, source):
    """The JSON data of Program text (str or bytes), or a ProgramFormatError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ProgramFormatError(f"{source}: JSON nested too deeply (over {MAX_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError, TypeError) as e:   # JSONDecodeError, int too long, bad encoding
        raise ProgramFormatError(f"{source}: not valid JSON ({str(e)[:200]})") from None


def program_from_dict(data, source="<dict>", check_types=True, max_ops=None):
    """Build a Program from its JSON data, checking every reference.

    `check_types` also re-runs each op's shape/dtype rule against the declared
    outputs (what an untrusted file needs; a copy of a live Program skips it).
    `max_ops`: the most ops (all blocks together) the Program may have, checked
    before anything else is read (None: no limit; `load` passes MAX_OPS).
    """
    try:
        if max_ops is not None:
            _check_op_count(data, source, max_ops)
        _check_depth(data, source)
        return _Reader(data, source, check_types).read()
    except ProgramFormatError:
        raise
    except RecursionError:
        raise ProgramFormatError(f"{source}: malformed Program (nested too deeply)") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
        raise ProgramFormatError(f"{source}: malformed Program ({type(e).__name__}: {str(e)[:200]})") from None


def _check_op_count(data, source, max_ops):
    blocks = data.get("blocks") if isinstance(data, dict) else None
    count = sum(len(b["ops"]) for b in blocks if isinstance(b, dict) and isinstance(b.get("ops"), list)) \
        if isinstance(blocks, list) else 0
    if count > max_ops:
        raise ProgramFormatError(f"{source}: the Program has {count} ops, over the limit of {max_ops} "
                                 f"(pass load(..., max_ops=N) to allow more)")


def _check_depth(data, source):
    """Refuse documents nested deeper than MAX_DEPTH (iteratively, a level at a time: no recursion on
    hostile input, and one pass over the containers of each level)."""
    level = [data] if isinstance(data, (list, dict)) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise ProgramFormatError(f"{source}: JSON nested too deeply (over {MAX_DEPTH} levels)")
        level = [c for node in level for c in (node.values() if isinstance(node, dict) else node)
                 if isinstance(c, (list, dict))]


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _has_type(value, types):
    if value.__class__ is types:        # the common case, at once (a bool's class is bool, never int)
        return True
    types = types if isinstance(types, tuple) else (types,)
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def _type_names(types):
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(t.__name__ for t in types)


def _static_size(shape):
    known = [d for d in shape if d > 0]
    return math.prod(known) if known else 0


def _attr_expectation(name):
    if name in _INT_ATTRS:
        return "an int, None or a list of ints; a bool is not an int here"
    if name in _BOOL_ATTRS:
        return "true or false"
    if name in _NUMBER_ATTRS:
        return "a number or None; a bool is not a number here"
    if name == "dtype":
        return f"one of {sorted(DTYPES)}"
    return "a string or None"


class _Reader:
    def __init__(self, data, source, check_types):
        self.data = data
        self.source = source
        self.check_types = check_types

    def fail(self, message):
        raise ProgramFormatError(f"{self.source}: {message}")

    # --- typed access to the JSON --------------------------------------------------
    def field(self, obj, key, types, where, default=KeyError):
        """obj[key], which must be of `types` (bool is not an int here); `default` when absent."""
        if key not in obj:
            if default is KeyError:
                self.fail(f"{where} has no {key!r}")
            return default
        value = obj[key]
        if not _has_type(value, types):
            self.fail(f"{where}: {key!r} is {type(value).__name__} {brief(value)}, expected {_type_names(types)}")
        return value

    def items(self, obj, key, types, where, default=KeyError):
        """obj[key], a list whose items are all of `types`."""
        values = self.field(obj, key, list, where, default)
        for v in values or ():
            if not _has_type(v, types):
                self.fail(f"{where}: {key!r} holds {type(v).__name__} {brief(v)}, expected {_type_names(types)}")
        return values

    # --- the Program ----------------------------------------------------------------
    def read(self):
        d = self.data
        if not isinstance(d, dict):
            self.fail(f"not a dy2static Program: the top level is a JSON {type(d).__name__}, not an object")
        if d.get("format") != FORMAT:
            self.fail(f"not a dy2static Program (expected \"format\": \"{FORMAT}\", got {brief(d.get('format'))})")
        version = d.get("version")
        if not _is_int(version) or version not in (VERSION, OPEN_BLOCKS_VERSION):
            self.fail(f"unsupported format version {brief(version)}; this dy2static reads versions "
                      f"{OPEN_BLOCKS_VERSION} and {VERSION}")
        self.closed = version == VERSION       # else each region op is closed once its blocks are read
        name = self.field(d, "name", str, "the Program", "main")
        if not name or len(name) > MAX_NAME_LENGTH or not name.isprintable():
            self.fail(f"the Program has an invalid name {brief(name)}")
        program = Program(name)
        self.read_blocks(program, self.items(d, "blocks", dict, "the Program"))
        self.vars = {}              # name -> Variable: names are unique in a file (a Program's are hints)
        self.declared = [[] for _ in self.blocks]       # each block's Variables
        for k, (bd, block) in enumerate(zip(self.blocks_data, self.blocks)):
            for vd in self.items(bd, "vars", dict, f"block {k}"):
                self.declared[k].append(self.add_var(block, vd))
        for bd, block in zip(self.blocks_data, self.blocks):
            names = self.items(bd, "params", str, f"block {self.number[id(block)]}", [])
            block.params = [self.own_var(n, block, "parameter") for n in names]
            closure = self.items(bd, "closure", str, f"block {self.number[id(block)]}", []) if self.closed else []
            block.closure = [self.own_var(n, block, "closure parameter") for n in closure]
            if self.number[id(block)] == 0 and (block.params or block.closure):
                self.fail("block 0 cannot have params (the Program's inputs are listed in \"inputs\")")
            if len(set(names + closure)) != len(names) + len(closure):
                self.fail(f"block {self.number[id(block)]} lists a parameter twice")
        program.inputs = self.read_inputs(d)
        self.used_blocks = set()
        defined = self.read_block(program, 0, {id(v) for v in program.inputs}, 0)
        unused = sorted(set(range(len(self.blocks))) - self.used_blocks)
        if unused:
            self.fail(f"block {unused[0]} is not used by any op")
        program.outputs = []
        for name in self.items(d, "outputs", str, "the Program"):
            var = self.var(name, program.global_block)
            if id(var) not in defined:
                self.fail(f"output '{name}' is never defined by an op or an input")
            program.outputs.append(var)
        self.read_output_tree(program, d)
        self.check_parameter_table(program, d)
        return program

    def read_blocks(self, program, blocks_data):
        if not blocks_data:
            self.fail("a Program needs at least one block")
        self.blocks, self.parents, self.number = [], [], {}
        depth = {-1: 0}
        for i, bd in enumerate(blocks_data):
            where = f"block {i}"
            idx = self.field(bd, "idx", int, where)
            parent = self.field(bd, "parent", int, where)
            if idx != i:
                self.fail(f"block {i} has index {idx}")
            if not (parent == -1 if i == 0 else 0 <= parent < i):
                self.fail(f"block {i} has invalid parent {parent} (parents must come first: no cycles)")
            depth[i] = depth[parent] + 1
            if depth[i] > MAX_BLOCK_DEPTH:
                self.fail(f"block {i} is nested {depth[i]} levels deep (at most {MAX_BLOCK_DEPTH})")
            block = program.global_block if i == 0 else Block(program, self.blocks[parent])
            self.blocks.append(block)
            self.parents.append(parent)
            self.number[id(block)] = i
        self.blocks_data = blocks_data

    def read_inputs(self, d):
        names = self.items(d, "inputs", str, "the Program")
        if len(set(names)) != len(names):
            self.fail("an input is listed twice in \"inputs\"")
        inputs = []
        for name in names:
            var = self.vars.get(name)
            if var is None:
                self.fail(f"input '{name}' is not a declared variable")
            if self.number[id(var.block)] != 0:
                self.fail(f"input '{name}' is a variable of block {self.number[id(var.block)]}, not of block 0")
            inputs.append(var)
        names = set(names)
        for var in self.vars.values():
            if var.persistable and var.name not in names:
                self.fail(f"variable '{var.name}' is persistable but not an input of the Program")
        return inputs

    def add_var(self, block, vd):
        where = f"a variable of block {self.number[id(block)]}"
        name = self.field(vd, "name", str, where)
        if len(name) > MAX_NAME_LENGTH or not VAR_NAME.fullmatch(name):
            self.fail(f"variable with invalid name {brief(name)} in block {self.number[id(block)]} (a name is 1 to "
                      f"{MAX_NAME_LENGTH} ASCII letters, digits, '_' or '.')")
        if name[0].isdigit() or keyword.iskeyword(name) or name == "__debug__":
            self.fail(f"variable with invalid name {brief(name)} in block {self.number[id(block)]} (a Python keyword, "
                      "'__debug__' or a name starting with a digit: no writer makes one)")
        if name in self.vars:
            self.fail(f"variable '{name}' is declared twice")
        where = f"variable '{name}'"
        shape = self.field(vd, "shape", list, where)
        if len(shape) > MAX_RANK or not all(_is_int(s) and -1 <= s <= MAX_ELEMENTS for s in shape):
            self.fail(f"variable '{name}' has an invalid shape {brief(shape)}")
        if _static_size(shape) > MAX_ELEMENTS:
            self.fail(f"variable '{name}' has an absurd shape {shape_text(shape)} (over 2**40 elements)")
        dtype = self.field(vd, "dtype", str, where)
        if dtype not in DTYPES:
            self.fail(f"variable '{name}' has unsupported dtype {brief(dtype)}")
        kind = self.field(vd, "kind", str, where, "dense")
        if kind not in ("dense", "array"):
            self.fail(f"variable '{name}' has unknown kind {brief(kind)}")
        var = Variable(name, shape, dtype, block, persistable=self.field(vd, "persistable", bool, where, False),
                       weak=self.field(vd, "weak", bool, where, False), kind=kind)
        self.vars[name] = var
        return var

    def var(self, name, block):
        var = self.vars.get(name) if isinstance(name, str) else None
        if var is None:
            self.fail(f"reference to undefined variable {brief(name)} in block {self.number[id(block)]}")
        if not var.block.is_ancestor_of(block):
            self.fail(f"block {self.number[id(block)]} uses variable '{name}' of block {self.number[id(var.block)]}, which does not enclose it")
        return var

    def own_var(self, name, block, what):
        var = self.var(name, block)
        if var.block is not block:
            self.fail(f"{what} '{name}' of block {self.number[id(block)]} is declared in block {self.number[id(var.block)]}")
        return var

    def value(self, x, block, defined):
        if isinstance(x, dict):
            if "lit" in x:
                lit = _tuplify(x["lit"])
                if lit is not None and not isinstance(lit, (bool, int, float)):
                    self.fail(f"invalid literal {brief(x)} in block {self.number[id(block)]}")
                return lit
            if "complex" in x:
                parts = x["complex"]
                if not (isinstance(parts, list) and len(parts) == 2 and
                        all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in parts)):
                    self.fail(f"invalid complex literal {brief(x)} in block {self.number[id(block)]}")
                return complex(float(parts[0]), float(parts[1]))
            self.fail(f"invalid op input {brief(x)} in block {self.number[id(block)]}")
        if not isinstance(x, str):
            self.fail(f"invalid op input {brief(x)} in block {self.number[id(block)]}")
        var = self.var(x, block)
        if id(var) not in defined:
            if self.closed and var.block is not block:
                self.fail(f"block {self.number[id(block)]} reads '{var.name}' of block {self.number[id(var.block)]}: "
                          "a block reads only its params, its closure params and values defined earlier in it "
                          "(a value from outside must be a closure param, fed by the op's inputs)")
            self.fail(f"variable '{var.name}' is used in block {self.number[id(block)]} before any op defines it")
        return var

    # --- blocks and ops ---------------------------------------------------------------
    def read_block(self, program, idx, defined, loop_depth):
        if idx in self.used_blocks:
            self.fail(f"block {idx} is used by more than one op")
        self.used_blocks.add(idx)
        block = self.blocks[idx]
        bd = self.blocks_data[idx]
        # a closed block (the current format) starts from its params and closure params alone; an open one
        # (OPEN_BLOCKS_VERSION) shares one set with the blocks around it: what a block defines is taken out
        # again when it ends (each variable belongs to one block), so reading stays linear
        defined.update(id(p) for p in block.params)
        defined.update(id(p) for p in block.closure)
        for n, od in enumerate(self.items(bd, "ops", dict, f"block {idx}")):
            self.read_op(program, block, od, n, defined, loop_depth)
        results = self.field(bd, "results", list, f"block {idx}", [])
        if idx == 0 and results:
            self.fail("block 0 cannot have results (the Program's outputs are listed in \"outputs\")")
        block.results = [self.value(x, block, defined) for x in results]
        if idx != 0:
            defined.difference_update(id(v) for v in self.declared[idx])
        return defined

    def read_op(self, program, block, od, n, defined, loop_depth):
        idx = self.number[id(block)]
        op_type = self.field(od, "type", str, f"op {n} of block {idx}")
        opdef = REGISTRY.get(op_type)
        if opdef is None:
            self.fail(f"unknown op type {brief(op_type)} in block {idx}")
        origin = od.get("origin")
        origin = origin if isinstance(origin, str) else None
        made_at = f", made at {brief(origin)}" if origin else ""
        where = f"op {n} ('{op_type}'{made_at}) of block {idx}"
        inputs = [self.value(x, block, defined) for x in self.field(od, "inputs", list, where)]
        outputs = [self.own_var(name, block, "output") for name in self.items(od, "outputs", str, where)]
        raw_attrs = self.field(od, "attrs", dict, where, {})
        for key in raw_attrs:
            if not ATTR_NAME.fullmatch(key) or keyword.iskeyword(key) or key == "__debug__":
                self.fail(f"{where} has an attr named {brief(key)}, which is not an identifier "
                          "(ASCII letters, digits, '_')")
        attrs = _tuplify(raw_attrs)
        self.check_attr_names(where, opdef, inputs, attrs)
        for key, value in attrs.items():
            if not _attr_fits(key, value):
                self.fail(f"{where} does not accept attr {key!r} = {brief(value)} ({_attr_expectation(key)})")
        region = opdef.region
        subs = []
        for key in sub_block_attrs(op_type):
            sub = attrs.get(key)
            if not _is_int(sub) or not 0 < sub < len(self.blocks) or self.parents[sub] != idx:
                self.fail(f"{where} names invalid sub-block {brief(sub)} (attr {key!r})")
            subs.append(self.blocks[sub])
            attrs[key] = self.blocks[sub]       # the op holds its blocks
        inner_loop_depth = loop_depth + bool(region is not None and region.loop)
        if inner_loop_depth > MAX_LOOP_DEPTH:
            self.fail(f"{where}: while loops nested more than {MAX_LOOP_DEPTH} deep")
        for sub in subs:
            self.read_block(program, self.number[id(sub)], defined if not self.closed else set(), inner_loop_depth)
        op = Operator(op_type, inputs, outputs, attrs, origin, block)
        if region is not None:
            if not self.closed:
                op = self.close_open_region(where, region, op, defined)
            self.check_region(where, region, op)
        elif self.check_types:
            self.check_inferred(where, opdef, inputs, attrs, outputs)
        elif opdef.num_outputs >= 0 and len(outputs) != opdef.num_outputs:
            self.fail(f"{where} has {len(outputs)} outputs; the op makes {opdef.num_outputs}")
        for o in outputs:
            if id(o) in defined:
                self.fail(f"variable '{o.name}' is defined twice")
            defined.add(id(o))
        block.ops.append(op)

    def check_attr_names(self, where, opdef, inputs, attrs):
        """Only attrs the op declares: a region op its blocks and `region.attrs`; other ops their kernel's
        keyword parameters (what would otherwise be a TypeError when the Program first runs)."""
        if opdef.region is not None:
            unknown = sorted(set(attrs) - set(opdef.region.block_attrs) - set(opdef.region.attrs))
            if unknown:
                self.fail(f"{where} has attr(s) {brief(unknown)} that the op does not declare")
            return
        key = (opdef.name, len(inputs), tuple(attrs))     # binding depends on nothing else: decided once
        problem = _BINDINGS.get(key, KeyError)
        if problem is KeyError:
            if len(_BINDINGS) > 4096:       # bounded, whatever files it has read
                _BINDINGS.clear()
            problem = _BINDINGS[key] = _binding_problem(opdef, len(inputs), attrs)
        if problem is not None:
            self.fail(f"{where} {problem}")

    def check_region(self, where, region, op):
        """A region op (`ops/regions.py`): its own structure checks, then each slot's values one type
        (with check_types), and every value its blocks read from outside listed among its inputs."""
        try:
            region.check(op, self.check_types)
            region.check_closure(op)
            slots = region.slots(op)
            blocks = region.blocks(op)
            values = [slot.values(op, blocks) for slot in slots]
        except RegionError as e:
            self.fail(f"{where}{e}")
        except IndexError:
            self.fail(f"{where}: its inputs, outputs and blocks' params and results do not match")
        if self.check_types:
            for slot, (out, inputs, params, results) in zip(slots, values):
                outer = [v for v in [out] + inputs if isinstance(v, Variable)]
                if not outer:
                    continue
                self.check_same(where, outer[0], *outer[1:], *([] if slot.stacked else params + results))
                if slot.stacked:
                    self.check_same(where, outer[0], *params, *results, rows=True)

    def close_open_region(self, where, region, op, defined):
        """A region op of a file with open blocks (OPEN_BLOCKS_VERSION): its blocks (nested ops closed
        already) get closure params for what they read from enclosing blocks, and the op reads those
        values as its closure inputs instead of the captures the file listed (it had to list each)."""
        try:
            own = region.own_count(op)
        except (IndexError, KeyError, TypeError):
            self.fail(f"{where}: its inputs, outputs and blocks' params and results do not match")
        listed = {id(v) for v in op.inputs[own:] if isinstance(v, Variable)}
        outer = close_blocks(region.blocks(op))
        for v in outer:
            if id(v) not in listed and not any(v is x for x in op.inputs[:own]):
                self.fail(f"{where}: its blocks read '{v.name}' from an enclosing block, but the op does not "
                          "list it among its inputs")
        return op.replace(inputs=list(op.inputs[:own]) + outer)

    def check_same(self, where, out, *values, rows=False):
        """Each value of out's type (dtype, kind, rank); `rows`: of the type of one row of out."""
        for v in values:
            if isinstance(v, Variable) and (v.dtype != out.dtype or v.kind != out.kind or v.ndim + rows != out.ndim):
                self.fail(f"{where}: '{v.name}' ({v.type_str()}) does not match output '{out.name}' ({out.type_str()})")

    def check_inferred(self, where, opdef, inputs, attrs, outputs):
        """The op's own rule must accept its inputs and attrs and make the declared outputs."""
        if opdef.infer is None:
            return
        specs = error = None
        # attrs were lists or tuples when traced; JSON keeps lists. Kernels take both, and so
        # should rules, but a rule that only takes one form is not the file's fault.
        for form in (_tuplify(attrs, list), attrs):
            try:
                specs = opdef.infer(*input_types(inputs), **form)
                break
            except Exception as e:  # noqa: BLE001 - any failure of the rule means the file is inconsistent
                error = error or e
        else:
            self.fail(f"{where} does not accept its inputs/attrs ({type(error).__name__}: {str(error)[:200]})")
        specs = [specs] if isinstance(specs, Spec) else list(specs or ())
        if len(specs) != len(outputs):
            self.fail(f"{where} declares {len(outputs)} outputs; the op makes {len(specs)}")
        for out, spec in zip(outputs, specs):
            shape = tuple(int(d) for d in spec.shape)
            if _static_size(shape) > MAX_ELEMENTS:
                self.fail(f"{where} makes an absurd shape {brief(shape)} (over 2**40 elements)")
            conflict = len(shape) != out.ndim or any(
                a != b and -1 not in (a, b) for a, b in zip(shape, out.static_shape))
            if conflict or np.dtype(spec.dtype) != out.dtype or spec.kind != out.kind:
                made = Spec(shape, spec.dtype, kind=spec.kind).type_str()
                self.fail(f"{where} declares output '{out.name}' as {out.type_str()}; the op makes {made}")

    # --- outputs and the parameter table -------------------------------------------------
    def read_output_tree(self, program, d):
        consts_data = self.field(d, "output_consts", (dict, type(None)), "the Program", None) or {}
        consts = {}
        for key, value in consts_data.items():
            if not key.isdigit() or len(key) > 9:
                self.fail(f"output_consts has an invalid key {brief(key)}")
            consts[int(key)] = _tuplify(value)
        tree = d.get("output_tree")
        program.output_tree = self.tree(tree) if tree is not None else pytree.flatten(tuple(program.outputs))[1]
        program.output_consts = consts
        leaves = program.output_tree.num_leaves
        if leaves != len(program.outputs) + len(consts) or any(k >= leaves for k in consts):
            self.fail("output_tree does not match the number of outputs")

    def tree(self, node):
        if isinstance(node, str) and node == "*":
            return pytree.LEAF
        if not isinstance(node, dict) or node.get("kind") not in ("tuple", "list", "dict"):
            self.fail(f"output_tree has an invalid node {brief(node)}")
        children = tuple(self.tree(c) for c in self.field(node, "children", list, "an output_tree node"))
        keys = ()
        if node["kind"] == "dict":
            keys = tuple(self.items(node, "keys", (str, int, float, bool, type(None)), "an output_tree node"))
            if len(keys) != len(children) or len(set(keys)) != len(keys):
                self.fail("output_tree: a dict node's keys do not match its children")
        return pytree.TreeDef(node["kind"], children, keys)

    def check_parameter_table(self, program, d):
        table = self.items(d, "parameters", dict, "the Program", None)
        if table is None:
            return
        declared = {v.name: v for v in program.inputs if v.persistable}
        seen = set()
        for entry in table:
            name = self.field(entry, "name", str, "a \"parameters\" entry")
            var = declared.get(name)
            if var is None or name in seen:
                self.fail(f"\"parameters\" lists {brief(name)}, which is not a persistable input (or is listed twice)")
            seen.add(name)
            shape = self.field(entry, "shape", list, f"parameter '{name}'")
            dtype = self.field(entry, "dtype", str, f"parameter '{name}'")
            if shape != list(var.static_shape) or dtype != var.dtype.name:
                self.fail(f"\"parameters\" describes '{name}' as {dtype}{brief(shape)}, but the variable is "
                          f"{var.type_str()}")
        missing = sorted(set(declared) - seen)
        if missing:
            self.fail(f"\"parameters\" does not describe persistable input(s) {missing}")


_SIGNATURES = {}
_BINDINGS = {}      # (op name, number of inputs, attr names) -> what is wrong with such a call, or None


def _binding_problem(opdef, n_inputs, attrs):
    """Why the kernel cannot be called with n_inputs inputs and these attr names, or None."""
    signature = _kernel_signature(opdef)
    params = list(signature.parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    declared = {p.name for p in params[1:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and not p.name.startswith("_")}       # `_fn=...` defaults bind a kernel, never a file's attr
    unknown = sorted(set(attrs) - declared)
    if unknown:
        return f"has attr(s) {brief(unknown)} that the op does not declare"
    try:
        signature.bind(None, *([None] * n_inputs), **dict.fromkeys(attrs))
    except TypeError as e:
        return f"does not accept its inputs/attrs (TypeError: {str(e)[:200]})"
    return None


def _kernel_signature(opdef):
    """inspect.signature of the op's kernel, `kernel(xp, *inputs, **attrs)`, computed once per op."""
    sig = _SIGNATURES.get(opdef.name)
    if sig is None:
        sig = _SIGNATURES[opdef.name] = inspect.signature(opdef.kernel)
    return sig


# --- parameters (.npz) --------------------------------------------------------------------

_CHUNK = 1 << 20


def write_params(path, arrays):
    """Write {name: array} as an uncompressed .npz of plain numeric .npy members (no pickles)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, array in arrays.items():
            array = np.asarray(array, order="C")      # (ascontiguousarray makes a 0-d array 1-d)
            if array.dtype.name not in DTYPES:
                raise TypeError(f"parameter '{name}' has unsupported dtype {array.dtype}")
            with zf.open(f"{name}.npy", "w", force_zip64=array.nbytes > (1 << 30)) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


# Parameters may take at most PARAMS_RATIO times the .npz file's size plus PARAMS_SLACK bytes
# (files we write are uncompressed: ratio 1); a deflate bomb (1 MiB inflating to 1 GB) is refused
# before it is inflated. `load(..., max_bytes=N)` sets another limit.
PARAMS_RATIO = 16
PARAMS_SLACK = 64 << 20


def default_max_bytes(file_size):
    """The bytes the parameters of a `file_size`-byte .npz may take unless `max_bytes` says otherwise."""
    return PARAMS_RATIO * file_size + PARAMS_SLACK


def read_params(path, expected, max_bytes=None):
    """{name: np.ndarray} from an .npz (a path, or its bytes), checked against `expected` {name: (shape, dtype)}.

    Each member's .npy header is read and checked (numeric dtype, no Python
    objects, the declared shape and dtype) before its data; data is read in
    chunks as it arrives, so a header claiming more than the file holds costs
    nothing. All parameters together may take at most `max_bytes` (default:
    `default_max_bytes` of the file's size), checked from the headers before
    any data is inflated. FileNotFoundError if the file is absent;
    ProgramFormatError for anything wrong inside it.
    """
    in_memory = isinstance(path, bytes)
    source = "the pickled parameters" if in_memory else os.fspath(path)
    if max_bytes is not None and (not _is_int(max_bytes) or max_bytes < 0):
        raise ValueError(f"max_bytes must be a non-negative int or None, not {max_bytes!r}")
    with io.BytesIO(path) if in_memory else open(path, "rb") as fh:
        size = len(path) if in_memory else os.fstat(fh.fileno()).st_size
        limit = default_max_bytes(size) if max_bytes is None else max_bytes
        try:
            return _read_npz(fh, source, expected, _Budget(limit, size, max_bytes is None))
        except ProgramFormatError:
            raise
        except Exception as e:  # noqa: BLE001 - zipfile/npy parsing of hostile bytes fails in many ways
            raise ProgramFormatError(f"{source}: not a valid parameters file ({type(e).__name__}: "
                                     f"{str(e)[:200]})") from None


class _Budget:
    """Bytes the parameters may still take."""

    def __init__(self, limit, file_size, default):
        self.limit, self.left, self.file_size, self.default = limit, limit, file_size, default

    def take(self, name, nbytes, fail):
        if nbytes > self.left:
            how = (f"{PARAMS_RATIO}x the file's {self.file_size} bytes + {PARAMS_SLACK >> 20} MiB" if self.default
                   else "max_bytes")
            fail(f"parameter '{name}' would bring the parameters to {self.limit - self.left + nbytes} bytes, over "
                 f"the limit of {self.limit} bytes ({how}); pass load(..., max_bytes=N) to allow more")
        self.left -= nbytes


def _read_npz(fh, source, expected, budget):
    def fail(message):
        raise ProgramFormatError(f"{source}: {message}")

    arrays = {}
    with zipfile.ZipFile(fh) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                fail(f"unexpected member {brief(info.filename)} (a parameters file holds only .npy arrays)")
            name = info.filename[:-4]
            if name in arrays:
                fail(f"parameter '{name}' is stored twice")
            if name not in expected:
                fail(f"unexpected parameter {brief(name)}: the Program has no persistable input of that name")
            if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                fail(f"parameter '{name}' is encrypted or uses an unsupported compression")
            with zf.open(info) as member:
                arrays[name] = _read_npy(member, name, expected[name], fail, budget)
    missing = sorted(set(expected) - set(arrays))
    if missing:
        fail(f"missing parameter(s) {missing}")
    return arrays


def _read_npy(member, name, expected, fail, budget):
    shape_expected, dtype_expected = expected
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        fail(f"parameter '{name}' uses unsupported .npy version {version}")
    if dtype.hasobject:
        fail(f"parameter '{name}' holds Python objects (a pickle); refusing to load it")
    native = dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype
    if native.name not in DTYPES or dtype.fields is not None or dtype.subdtype is not None:
        fail(f"parameter '{name}' has unsupported dtype {brief(str(dtype))}")
    expected_shape = tuple(shape_expected)
    if (native != np.dtype(dtype_expected) or len(shape) != len(expected_shape)
            or any(e != -1 and e != a for e, a in zip(expected_shape, shape))):
        fail(f"parameter '{name}' is {native.name}{shape_text(shape)} in the file; the Program declares "
             f"{np.dtype(dtype_expected).name}{shape_text(expected_shape)}")
    if any(n < 0 for n in shape) or math.prod(shape) > MAX_ELEMENTS:
        fail(f"parameter '{name}' has an absurd shape {brief(shape)}")
    nbytes = math.prod(shape) * dtype.itemsize
    budget.take(name, nbytes, fail)
    data = bytearray()
    while len(data) < nbytes:
        chunk = member.read(min(_CHUNK, nbytes - len(data)))
        if not chunk:
            fail(f"parameter '{name}' is truncated ({len(data)} of {nbytes} bytes)")
        data += chunk
    if member.read(1):
        fail(f"parameter '{name}' has trailing data after its {nbytes} bytes")
    array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return np.asarray(array.astype(native, copy=False), order="C")


def _programs_equal(program, other):
    """Two Programs are equal when their JSON forms are (the same Program without serializing: weak
    dictionaries keyed by Program compare a key with itself on every lookup)."""
    if other is program:
        return True
    if not isinstance(other, Program):
        return NotImplemented
    return program_to_dict(program) == program_to_dict(other)


# ir.py is data only: the JSON methods users call on a Program are attached here.
Program.to_json = program_to_json
Program.from_json = staticmethod(program_from_json)
Program.__eq__ = _programs_equal
