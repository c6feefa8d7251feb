"""Programs as versioned, human-readable JSON, and back.

Loading never executes anything from the file: the JSON names op types, which
must be in the registry, and every reference is checked (variables defined
before use, block indices in range, no block cycles). Errors name the source
and what is wrong.
"""
import json
import math

import numpy as np

from . import pytree
from .ir import Block, Operator, Program, Variable, sub_block_attrs
from .ops.registry import REGISTRY

FORMAT = "dy2static.program"
VERSION = 1


class ProgramFormatError(ValueError):
    """A Program file (or JSON text) is malformed; the message names the source and the problem."""


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


def _encode_input(x):
    if isinstance(x, Variable):
        return x.name
    if isinstance(x, complex):
        return {"complex": [x.real, x.imag]}
    return {"lit": _canon(x)}


def program_to_dict(program):
    blocks = []
    for b in program.blocks:
        blocks.append({
            "idx": b.idx,
            "parent": b.parent_idx,
            "vars": [_var_dict(v) for v in b.vars.values()],
            "params": [v.name for v in b.params],
            "results": [_encode_input(v) for v in b.results],
            "ops": [{"type": op.type,
                     "inputs": [_encode_input(x) for x in op.inputs],
                     "outputs": [o.name for o in op.outputs],
                     "attrs": _canon(op.attrs),
                     "origin": op.origin} for op in b.ops],
        })
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": program.name,
        "inputs": [v.name for v in program.inputs],
        "outputs": [v.name for v in program.outputs],
        "output_tree": pytree.to_json(program.output_tree) if program.output_tree is not None else None,
        "output_consts": {str(k): _canon(v) for k, v in program.output_consts.items()},
        "blocks": blocks,
    }


def _var_dict(v):
    return {"name": v.name, "shape": list(v.static_shape), "dtype": v.dtype.name,
            "persistable": v.persistable, "weak": v.weak, "kind": v.kind}


def program_to_json(program, indent=1):
    return json.dumps(program_to_dict(program), indent=indent)


# --- reading --------------------------------------------------------------------------

def _tuplify(value):
    if isinstance(value, list):
        return tuple(_tuplify(v) for v in value)
    if isinstance(value, dict):
        if set(value) == {"float"}:
            return float(value["float"])
        return {k: _tuplify(v) for k, v in value.items()}
    return value


def program_from_json(text, source="<string>"):
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ProgramFormatError(f"{source}: not valid JSON ({e})") from None
    return program_from_dict(data, source)


def program_from_dict(data, source="<dict>"):
    try:
        return _Reader(data, source).read()
    except ProgramFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
        raise ProgramFormatError(f"{source}: malformed Program ({type(e).__name__}: {e})") from None


_MAX_ELEMENTS = 2 ** 40


class _Reader:
    def __init__(self, data, source):
        self.data = data
        self.source = source

    def fail(self, message):
        raise ProgramFormatError(f"{self.source}: {message}")

    def read(self):
        d = self.data
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            self.fail(f"not a dy2static Program (expected \"format\": \"{FORMAT}\")")
        if d.get("version") != VERSION:
            self.fail(f"unsupported format version {d.get('version')!r}; this dy2static reads version {VERSION}")
        program = Program(str(d.get("name", "main")))
        blocks_data = d["blocks"]
        if not isinstance(blocks_data, list) or not blocks_data:
            self.fail("a Program needs at least one block")
        program.blocks = []
        for i, bd in enumerate(blocks_data):
            parent = int(bd["parent"])
            if bd["idx"] != i:
                self.fail(f"block {i} has index {bd['idx']!r}")
            if not (parent == -1 if i == 0 else 0 <= parent < i):
                self.fail(f"block {i} has invalid parent {parent} (parents must come first: no cycles)")
            program.blocks.append(Block(program, i, parent))
        self.vars = {}
        for bd, block in zip(blocks_data, program.blocks):
            for vd in bd["vars"]:
                self.add_var(program, block, vd)
        used_blocks = set()
        for bd, block in zip(blocks_data, program.blocks):
            block.params = [self.var(n, block) for n in bd.get("params", [])]
        self.defined = {id(v) for v in self.vars.values() if v.block.idx == 0 and v.name in d["inputs"]}
        for name in d["inputs"]:
            if name not in self.vars:
                self.fail(f"input '{name}' is not a declared variable")
        program.inputs = [self.vars[n] for n in d["inputs"]]
        self.read_block(program, blocks_data, 0, used_blocks, set(id(v) for v in program.inputs))
        program.outputs = [self.var(n, program.global_block) for n in d["outputs"]]
        tree = d.get("output_tree")
        consts = {int(k): _tuplify(v) for k, v in (d.get("output_consts") or {}).items()}
        program.output_tree = pytree.from_json(tree) if tree is not None else pytree.flatten(
            tuple(program.outputs))[1]
        program.output_consts = consts
        if program.output_tree.num_leaves != len(program.outputs) + len(consts):
            self.fail("output_tree does not match the number of outputs")
        return program

    def add_var(self, program, block, vd):
        name = vd["name"]
        if not isinstance(name, str) or not name:
            self.fail(f"variable with invalid name {name!r}")
        if name in self.vars:
            self.fail(f"variable '{name}' is declared twice")
        shape = vd["shape"]
        if not isinstance(shape, list) or len(shape) > 64 or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= -1 for s in shape):
            self.fail(f"variable '{name}' has an invalid shape {shape!r}")
        known = [s for s in shape if s > 0]
        if known and math.prod(known) > _MAX_ELEMENTS:
            self.fail(f"variable '{name}' has an absurd shape {shape} (over 2**40 elements)")
        try:
            dtype = np.dtype(vd["dtype"])
        except TypeError:
            self.fail(f"variable '{name}' has unknown dtype {vd['dtype']!r}")
        if dtype.kind not in "biufc":
            self.fail(f"variable '{name}' has unsupported dtype {dtype}")
        kind = vd.get("kind", "dense")
        if kind not in ("dense", "array"):
            self.fail(f"variable '{name}' has unknown kind {kind!r}")
        var = Variable(name, shape, dtype, block, persistable=bool(vd.get("persistable", False)),
                       weak=bool(vd.get("weak", False)), kind=kind)
        block.vars[name] = var
        self.vars[name] = var
        program._used.add(name)

    def var(self, name, block):
        var = self.vars.get(name) if isinstance(name, str) else None
        if var is None:
            self.fail(f"reference to undefined variable {name!r} in block {block.idx}")
        if not var.block.is_ancestor_of(block):
            self.fail(f"block {block.idx} uses variable '{name}' of block {var.block.idx}, which does not enclose it")
        return var

    def value(self, x, block, defined):
        if isinstance(x, dict):
            if "lit" in x:
                lit = _tuplify(x["lit"])
                if lit is not None and not isinstance(lit, (bool, int, float)):
                    self.fail(f"invalid literal {x!r} in block {block.idx}")
                return lit
            if "complex" in x:
                re_, im = x["complex"]
                return complex(float(re_), float(im))
            self.fail(f"invalid op input {x!r} in block {block.idx}")
        var = self.var(x, block)
        if id(var) not in defined:
            self.fail(f"variable '{var.name}' is used in block {block.idx} before any op defines it")
        return var

    def read_block(self, program, blocks_data, idx, used_blocks, defined):
        if idx in used_blocks:
            self.fail(f"block {idx} is used by more than one op")
        used_blocks.add(idx)
        block = program.blocks[idx]
        bd = blocks_data[idx]
        defined = set(defined) | {id(p) for p in block.params}
        for od in bd["ops"]:
            op_type = od["type"]
            if op_type not in REGISTRY:
                self.fail(f"unknown op type {op_type!r} in block {idx}")
            inputs = [self.value(x, block, defined) for x in od["inputs"]]
            attrs = _tuplify(od.get("attrs") or {})
            if not isinstance(attrs, dict):
                self.fail(f"op '{op_type}' has invalid attrs")
            outputs = [self.var(n, block) for n in od["outputs"]]
            for key in sub_block_attrs(op_type):
                sub = attrs.get(key)
                if not isinstance(sub, int) or not 0 < sub < len(program.blocks) or program.blocks[sub].parent_idx != idx:
                    self.fail(f"op '{op_type}' in block {idx} names invalid sub-block {sub!r}")
                self.read_block(program, blocks_data, sub, used_blocks, defined)
            for o in outputs:
                if o.block is not block:
                    self.fail(f"op '{op_type}' writes variable '{o.name}' of another block")
                if id(o) in defined:
                    self.fail(f"variable '{o.name}' is defined twice")
                defined.add(id(o))
            origin = od.get("origin")
            block.ops.append(Operator(op_type, inputs, outputs, attrs, origin if isinstance(origin, str) else None, block))
        block.results = [self.value(x, block, defined) for x in bd.get("results", [])]
        return defined


def clone_program(program):
    """A deep copy of the Program's structure; parameters are shared (same Tensors)."""
    copy = program_from_dict(program_to_dict(program), source=f"<copy of {program.name}>")
    copy.parameters = dict(program.parameters)
    return copy
