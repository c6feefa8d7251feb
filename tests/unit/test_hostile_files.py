"""Damaged and hostile Program/parameter files: a clear ProgramFormatError naming the file, nothing else.

Nothing in a file may be executed, nothing allocated beyond what the file
really holds. The fuzz test at the end mutates a valid save a few hundred ways
(seeded) and accepts only documented outcomes.
"""
import copy
import io
import json
import os
import random
import signal
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import runtime as rt
from runtime.deploy import load_program, save_program
from runtime.naming import clean_hint
from runtime.serialization import (MAX_BLOCK_DEPTH, MAX_LOOP_DEPTH, ProgramFormatError, default_max_bytes,
                                   write_params)

W = rt.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)


def model(x):
    h = rt.matmul(x, W)
    i = rt.zeros((), "int64")
    h, i = rt.while_loop(lambda h, i: rt.logical_and(rt.sum(h) < 50.0, i < 4), lambda h, i: (h * 2.0, i + 1), (h, i))
    y = rt.cond(rt.mean(h) > 0, lambda: h[:, 1:], lambda: -h[:, :2])
    rt.assert_(rt.all(rt.isfinite(y)), "finite")
    return {"y": y, "s": rt.sum(y, axis=1, keepdims=True), "i": i}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A valid save: (prefix, JSON document, npz bytes). The document does not name the digest of its
    parameters file (`params_sha256`), as a hand-assembled pair would not: these tests craft parameter
    files and check what the reader makes of them (test_serialization checks the digest)."""
    program, _, _ = rt.trace(model, [rt.InputSpec([None, 4], "float32", "x")])
    prefix = str(tmp_path_factory.mktemp("base") / "m")
    json_path, npz_path = save_program(program, prefix)
    with open(json_path) as f:
        doc = json.load(f)
    del doc["params_sha256"]
    with open(npz_path, "rb") as f:
        npz = f.read()
    return prefix, doc, npz


@pytest.fixture
def files(saved, tmp_path):
    """Writers for a fresh copy of the save in tmp_path."""
    _, doc, npz = saved

    class Files:
        prefix = str(tmp_path / "m")
        json_path = prefix + ".program.json"
        npz_path = prefix + ".params.npz"

        def doc(self):
            return copy.deepcopy(doc)

        def write_json(self, value):
            data = value if isinstance(value, (str, bytes)) else json.dumps(value)
            with open(self.json_path, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)

        def write_npz(self, data):
            with open(self.npz_path, "wb") as f:
                f.write(data)

        def load(self):
            return load_program(self.prefix)

        def fails(self, match, source=None):
            with pytest.raises(ProgramFormatError, match=match) as info:
                self.load()
            assert (source or self.json_path) in str(info.value)
            return info.value

    f = Files()
    f.write_json(doc)
    f.write_npz(npz)
    return f


def ops(doc, op_type):
    return [op for block in doc["blocks"] for op in block["ops"] if op["type"] == op_type]


def var(doc, name):
    return next(v for block in doc["blocks"] for v in block["vars"] if v["name"] == name)


def test_base_save_loads_and_runs(files):
    y = files.load()(np.ones((2, 4), np.float32))
    assert y["y"].shape == (2, 2)


# --- the JSON ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("", "not valid JSON"),
    ("{\"format\": \"dy2static.program\", \"vers", "not valid JSON"),
    ("{nope}", "not valid JSON"),
    (b"\xff\xfe\x00garbage", "not valid JSON"),
    ("[]", "not a dy2static Program: the top level is a JSON list"),
    ("42", "not a dy2static Program"),
    ("\"program\"", "not a dy2static Program"),
    ("null", "not a dy2static Program"),
    ("{}", "not a dy2static Program"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ("{\"a\":" * 50000 + "1" + "}" * 50000, "nested too deeply"),
    ("{\"format\": \"dy2static.program\", \"version\": 1, \"blocks\": " + "[" * 150 + "]" * 150 + "}",
     "nested too deeply"),
    ("{\"format\": \"dy2static.program\", \"version\": " + "9" * 5000 + "}", "not valid JSON"),
])
def test_bad_json_text(files, text, match):
    files.write_json(text)
    files.fails(match)


def test_truncated_json(files, saved):
    text = json.dumps(saved[1])
    for cut in (1, len(text) // 3, len(text) - 1):
        files.write_json(text[:cut])
        files.fails("not valid JSON")


def _set(path, value):
    def mutate(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        if value is KeyError:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return mutate


def _matmul(doc):
    return ops(doc, "matmul")[0]


def _true(doc):
    return ops(doc, "cond")[0]["attrs"]["true_block"]


MUTATIONS = {
    # format and version
    "wrong format": (_set(["format"], "onnx"), "not a dy2static Program"),
    "version 3": (_set(["version"], 3), "unsupported format version 3"),
    "version string": (_set(["version"], "1"), "unsupported format version '1'"),
    "version true": (_set(["version"], True), "unsupported format version True"),
    "no version": (_set(["version"], KeyError), "unsupported format version None"),
    "name not str": (_set(["name"], ["f"]), "'name' is list"),
    # blocks
    "no blocks": (_set(["blocks"], KeyError), "has no 'blocks'"),
    "blocks dict": (_set(["blocks"], {}), "'blocks' is dict"),
    "empty blocks": (_set(["blocks"], []), "at least one block"),
    "block not object": (_set(["blocks", 1], [1]), "'blocks' holds list"),
    "block cycle": (_set(["blocks", 1, "parent"], 2), "invalid parent 2"),
    "self parent": (_set(["blocks", 1, "parent"], 1), "invalid parent 1"),
    "root parent": (_set(["blocks", 0, "parent"], 0), "invalid parent 0"),
    "block index": (_set(["blocks", 2, "idx"], 7), "block 2 has index 7"),
    "bool index": (_set(["blocks", 0, "idx"], False), "'idx' is bool"),
    "unused block": (lambda d: d["blocks"].append({"idx": len(d["blocks"]), "parent": 0, "vars": [], "ops": []}),
                     "is not used by any op"),
    # variables
    "var name int": (_set(["blocks", 0, "vars", 0, "name"], 5), "'name' is int"),
    "var name empty": (_set(["blocks", 0, "vars", 0, "name"], ""), "invalid name"),
    "var name newline": (_set(["blocks", 0, "vars", 0, "name"], "x\nimport os"), "invalid name"),
    "var name huge": (_set(["blocks", 0, "vars", 0, "name"], "x" * 10000), "invalid name"),
    "shape string": (_set(["blocks", 0, "vars", 0, "shape"], "4"), "'shape' is str"),
    "shape float": (_set(["blocks", 0, "vars", 0, "shape"], [1.5]), "invalid shape"),
    "shape bool": (_set(["blocks", 0, "vars", 0, "shape"], [True]), "invalid shape"),
    "shape negative": (_set(["blocks", 0, "vars", 0, "shape"], [-5, 4]), "invalid shape"),
    "shape 2**62": (_set(["blocks", 0, "vars", 0, "shape"], [2 ** 62]), "invalid shape"),
    "shape absurd product": (_set(["blocks", 0, "vars", 0, "shape"], [2 ** 31, 2 ** 31]), "absurd shape"),
    "rank 65": (_set(["blocks", 0, "vars", 0, "shape"], [1] * 65), "invalid shape"),
    "dtype object": (_set(["blocks", 0, "vars", 0, "dtype"], "object"), "unsupported dtype"),
    "dtype subarray": (_set(["blocks", 0, "vars", 0, "dtype"], "(1000000000,)f8"), "unsupported dtype"),
    "dtype int": (_set(["blocks", 0, "vars", 0, "dtype"], 5), "'dtype' is int"),
    "dtype short name": (_set(["blocks", 0, "vars", 0, "dtype"], "f4"), "unsupported dtype"),
    "persistable string": (_set(["blocks", 0, "vars", 0, "persistable"], "yes"), "'persistable' is str"),
    "kind": (_set(["blocks", 0, "vars", 0, "kind"], "sparse"), "unknown kind"),
    "duplicate var": (lambda d: d["blocks"][0]["vars"].append(dict(d["blocks"][0]["vars"][0])), "declared twice"),
    "duplicate var across blocks": (lambda d: d["blocks"][1]["vars"].append(dict(d["blocks"][0]["vars"][0])),
                                    "declared twice"),
    "persistable not input": (_set(["blocks", 0, "vars", 2, "persistable"], True), "persistable but not an input"),
    # inputs and outputs
    "input undeclared": (_set(["inputs", 0], "nope"), "input 'nope' is not a declared variable"),
    "input twice": (lambda d: d["inputs"].append(d["inputs"][0]), "listed twice"),
    "input not str": (_set(["inputs", 0], {"x": 1}), "'inputs' holds dict"),
    "input of sub-block": (lambda d: d["inputs"].append(d["blocks"][1]["vars"][0]["name"]), "not of block 0"),
    "output undefined": (_set(["outputs", 0], "ghost"), "undefined variable 'ghost'"),
    "output never defined": (lambda d: (d["blocks"][0]["vars"].append(
        {"name": "ghost", "shape": [], "dtype": "float32"}), d["outputs"].__setitem__(0, "ghost")), "never defined"),
    "output list": (_set(["outputs", 0], ["y"]), "'outputs' holds list"),
    "output tree garbage": (_set(["output_tree"], {"kind": "set", "children": []}), "invalid node"),
    "output tree count": (_set(["output_tree"], "*"), "does not match the number of outputs"),
    "output tree keys": (_set(["output_tree", "keys"], ["y", "y", "i"]), "keys do not match"),
    "output consts key": (_set(["output_consts"], {"abc": 1}), "invalid key"),
    "output consts range": (lambda d: (d["output_consts"].__setitem__("99", 1), d["outputs"].pop()),
                            "does not match the number of outputs"),
    # parameter table
    "param table shape": (_set(["parameters", 0, "shape"], [4, 4]), "describes"),
    "param table extra": (lambda d: d["parameters"].append({"name": "x", "shape": [-1, 4], "dtype": "float32"}),
                          "not a persistable input"),
    "param table missing": (_set(["parameters"], []), "does not describe"),
    # ops
    "unknown op": (lambda d: _matmul(d).__setitem__("type", "os.system"), "unknown op type 'os.system'"),
    "op type list": (lambda d: _matmul(d).__setitem__("type", ["matmul"]), "'type' is list"),
    "op inputs str": (lambda d: _matmul(d).__setitem__("inputs", "x"), "'inputs' is str"),
    "undefined input": (lambda d: _matmul(d)["inputs"].__setitem__(0, "ghost"), "undefined variable 'ghost'"),
    "input int": (lambda d: _matmul(d)["inputs"].__setitem__(0, 3), "invalid op input 3"),
    "input literal list": (lambda d: _matmul(d)["inputs"].__setitem__(0, {"lit": [1, 2]}), "invalid literal"),
    "input complex str": (lambda d: _matmul(d)["inputs"].__setitem__(0, {"complex": "ab"}), "invalid complex"),
    "input tagged": (lambda d: _matmul(d)["inputs"].__setitem__(0, {"code": "import os"}), "invalid op input"),
    "use before def": (lambda d: d["blocks"][0]["ops"].reverse(), "before any op defines it"),
    "defined twice": (lambda d: d["blocks"][0]["ops"].append(copy.deepcopy(_matmul(d))), "defined twice"),
    "output of other block": (lambda d: _matmul(d)["outputs"].__setitem__(0, d["blocks"][1]["vars"][0]["name"]),
                              "does not enclose it"),
    "output of enclosing block": (lambda d: d["blocks"][_true(d)]["ops"][0]["outputs"].__setitem__(
        0, ops(d, "mean")[0]["outputs"][0]), "declared in block 0"),
    "attrs list": (lambda d: _matmul(d).__setitem__("attrs", []), "'attrs' is list"),
    "attr not identifier": (lambda d: ops(d, "sum")[0]["attrs"].__setitem__("a b", 1), "not an identifier"),
    "attr keyword": (lambda d: ops(d, "sum")[0]["attrs"].__setitem__("lambda", 1), "not an identifier"),
    "attr unknown": (lambda d: ops(d, "sum")[0]["attrs"].__setitem__("evil", 1), "does not declare"),
    "assert extra attr": (lambda d: ops(d, "assert")[0]["attrs"].__setitem__("evil", 1),
                          r"attr\(s\) \['evil'\] that the op does not declare"),
    "assert attr names xp": (lambda d: ops(d, "assert")[0]["attrs"].__setitem__("xp", 1), "does not declare"),
    "assert attr names input": (lambda d: ops(d, "assert")[0]["attrs"].__setitem__("cond", 1), "does not accept"),
    "assert no input": (lambda d: ops(d, "assert")[0]["attrs"].clear() or ops(d, "assert")[0]["inputs"].clear(),
                           "does not accept"),
    "cond extra attr": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__("evil", 1), "does not declare"),
    "attr fullwidth": (lambda d: ops(d, "sum")[0]["attrs"].__setitem__("\uff41xis", 0), "not an identifier"),
    "attr bad axis": (lambda d: ops(d, "sum")[0]["attrs"].__setitem__("axis", 7), "does not accept"),
    "attr axis str": (lambda d: ops(d, "sum")[0]["attrs"].__setitem__("axis", "abc"), "does not accept"),
    "attr deep": (lambda d: ops(d, "sum")[0]["attrs"].__setitem__("axis", json.loads("[" * 120 + "]" * 120)),
                  "nested too deeply"),
    "zeros 2**62": (lambda d: ops(d, "zeros")[0]["inputs"].append({"lit": 2 ** 62}), "absurd shape|declares"),
    "zeros absurd": (lambda d: (ops(d, "zeros")[0]["inputs"].extend([{"lit": 2 ** 30}] * 2),
                                var(d, ops(d, "zeros")[0]["outputs"][0]).__setitem__("shape", [-1, -1])),
                     "absurd shape"),
    "output dtype lies": (lambda d: var(d, _matmul(d)["outputs"][0]).__setitem__("dtype", "float64"),
                          "declares output"),
    "output rank lies": (lambda d: var(d, _matmul(d)["outputs"][0]).__setitem__("shape", [-1]), "declares output"),
    "too many outputs": (lambda d: (d["blocks"][0]["vars"].append({"name": "extra", "shape": [], "dtype": "float32"}),
                                    _matmul(d)["outputs"].append("extra")), "declares 2 outputs"),
    # control flow
    "cond same block twice": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__(
        "false_block", ops(d, "cond")[0]["attrs"]["true_block"]), "used by more than one op"),
    "cond block 0": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__("true_block", 0), "invalid sub-block 0"),
    "cond block 99": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__("true_block", 99), "invalid sub-block 99"),
    "cond block -1": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__("true_block", -1), "invalid sub-block -1"),
    "cond block str": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__("true_block", "3"), "invalid sub-block"),
    "cond block bool": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__("true_block", True), "invalid sub-block"),
    "cond block float": (lambda d: ops(d, "cond")[0]["attrs"].__setitem__("true_block", 3.0), "invalid sub-block"),
    "cond no block": (lambda d: ops(d, "cond")[0]["attrs"].clear(), "invalid sub-block None"),
    "while other's block": (lambda d: ops(d, "while")[0]["attrs"].__setitem__(
        "body_block", _true(d)), "loop state does not match"),
    "cond results": (lambda d: d["blocks"][ops(d, "cond")[0]["attrs"]["true_block"]]["results"].clear(),
                     "yields 0 values"),
    "cond params": (lambda d: (d["blocks"][_true(d)]["vars"].append({"name": "p", "shape": [], "dtype": "bool"}),
                               d["blocks"][_true(d)]["params"].append("p")), "cannot have params"),
    "while results": (lambda d: d["blocks"][ops(d, "while")[0]["attrs"]["body_block"]]["results"].pop(),
                      "loop state does not match"),
    "while two preds": (lambda d: d["blocks"][ops(d, "while")[0]["attrs"]["cond_block"]]["results"].append(
        {"lit": True}), "exactly one value"),
    "while param foreign": (lambda d: d["blocks"][ops(d, "while")[0]["attrs"]["body_block"]]["params"].__setitem__(
        0, d["inputs"][0]), "declared in block 0"),
    "root params": (lambda d: d["blocks"][0]["params"].append(d["inputs"][0]), "block 0 cannot have params"),
    "root results": (lambda d: d["blocks"][0]["results"].append(d["inputs"][0]), "block 0 cannot have results"),
    "sub-block reads later var": (lambda d: d["blocks"][ops(d, "while")[0]["attrs"]["body_block"]]["results"]
                                  .__setitem__(0, d["blocks"][0]["ops"][-1]["outputs"][0]),
                                  "a block reads only its params, its closure params and values defined earlier"),
    "sibling block var": (lambda d: d["blocks"][ops(d, "cond")[0]["attrs"]["false_block"]]["results"].__setitem__(
        0, d["blocks"][ops(d, "cond")[0]["attrs"]["true_block"]]["ops"][0]["outputs"][0]), "does not enclose it"),
    "cond result dtype": (lambda d: _yield_closure(d, ops(d, "while")[0]["outputs"][1]), "does not match output"),
}


def _yield_closure(d, outer):
    """The cond's true branch yields `outer` (of another dtype than the cond's output), read through a new
    closure param of each branch fed by a new input of the op."""
    op = ops(d, "cond")[0]
    op["inputs"].append(outer)
    var = next(v for b in d["blocks"] for v in b["vars"] if v["name"] == outer)
    for key in ("true_block", "false_block"):
        block = d["blocks"][op["attrs"][key]]
        name = f"{outer}_{key}"
        block["vars"].append(dict(var, name=name))
        block["closure"].append(name)
        if key == "true_block":
            block["results"][0] = name


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_hostile_json(files, name):
    mutate, match = MUTATIONS[name]
    doc = files.doc()
    mutate(doc)
    files.write_json(doc)
    files.fails(match)


def test_attr_key_injection_is_refused_not_run(files, tmp_path):
    marker = tmp_path / "PWNED"
    doc = files.doc()
    ops(doc, "sum")[0]["attrs"][f"axis=__import__('os').system('touch {marker}'),x"] = 1
    files.write_json(doc)
    files.fails("not an identifier")
    assert not marker.exists()


def test_codegen_refuses_bad_attr_keys():
    program, _, _ = rt.trace(model, [rt.InputSpec([None, 4], "float32", "x")])
    op = next(op for op in program.ops() if op.type == "sum")
    op.attrs["keepdims=False) or __import__('os').getcwd(#"] = 1
    with pytest.raises(ValueError, match="not an identifier"):
        rt.Executor().run(program, {"x": np.ones((2, 4), np.float32)})


def _nested(levels, op_type):
    """A Program of `levels` nested cond (or while) ops, each in the previous one's block."""
    blocks = [{"idx": 0, "parent": -1, "vars": [{"name": "p", "shape": [], "dtype": "bool"}], "ops": []}]
    parent = blocks[0]
    for _ in range(levels):
        a, b = len(blocks), len(blocks) + 1
        keys = ("true_block", "false_block") if op_type == "cond" else ("cond_block", "body_block")
        parent["ops"].append({"type": op_type, "inputs": ["p"], "outputs": [], "attrs": dict(zip(keys, (a, b)))})
        first = {"idx": a, "parent": parent["idx"], "vars": [], "ops": [],
                 "results": ["p"] if op_type == "while" else []}
        blocks += [first, {"idx": b, "parent": parent["idx"], "vars": [], "ops": []}]
        parent = blocks[b] if op_type == "while" else first
    return {"format": "dy2static.program", "version": 1, "name": "deep", "inputs": ["p"], "outputs": [],
            "blocks": blocks}


@pytest.mark.parametrize("op_type, limit", [("cond", MAX_BLOCK_DEPTH), ("while", MAX_LOOP_DEPTH)])
def test_nesting_limits(files, op_type, limit):
    files.write_npz(_npz({}))
    files.write_json(_nested(limit + 1, op_type))
    files.fails("nested")
    files.write_json(_nested(limit if op_type == "while" else limit // 2, op_type))
    assert files.load()(np.bool_(False)) == ()


def test_block_depth_limit_for_chains(files):
    files.write_npz(_npz({}))
    files.write_json(_nested(MAX_BLOCK_DEPTH, "cond"))
    files.fails(f"nested {MAX_BLOCK_DEPTH + 1} levels deep")


def test_huge_but_real_attr_is_read_not_amplified(files):
    doc = files.doc()
    ops(doc, "sum")[0]["attrs"]["axis"] = [0] * 200000
    files.write_json(doc)
    files.fails("does not accept|declares output")


def test_missing_files(files):
    os.remove(files.npz_path)
    with pytest.raises(FileNotFoundError, match="params.npz"):
        files.load()
    os.remove(files.json_path)
    with pytest.raises(FileNotFoundError, match="program.json"):
        files.load()


# --- the parameters (.npz) --------------------------------------------------------------------

def _npz(arrays, compression=zipfile.ZIP_STORED, raw=None):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, array in arrays.items():
            with zf.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, array, allow_pickle=True)
        for name, data in (raw or {}).items():
            zf.writestr(name, data)
    return buf.getvalue()


def _param_name(files):
    return files.doc()["parameters"][0]["name"]


def _good_weight():
    return W.numpy()


class _Payload:
    """Unpickling this would create the marker file: proof that nothing was unpickled."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_npz_object_array_is_refused_unread(files, tmp_path):
    marker = tmp_path / "UNPICKLED"
    evil = np.empty((4, 3), dtype=object)
    evil[0, 0] = _Payload(str(marker))
    files.write_npz(_npz({_param_name(files): evil}))
    files.fails("holds Python objects", files.npz_path)
    assert not marker.exists()


@pytest.mark.parametrize("case, match", [
    ("missing", r"missing parameter\(s\)"),
    ("extra", "unexpected parameter 'stowaway'"),
    ("shape", r"float32\[3, 4\] in the file; the Program declares float32\[4, 3\]"),
    ("dtype", r"float64\[4, 3\] in the file"),
    ("int8", r"int8\[4, 3\] in the file"),
    ("structured", "unsupported dtype"),
    ("string", "unsupported dtype"),
    ("not zip", "not a valid parameters file"),
    ("empty", "not a valid parameters file"),
    ("member not npy", "unexpected member 'README.txt'"),
    ("duplicate", "stored twice"),
    ("npy garbage", "not a valid parameters file"),
    ("npy version 3", "unsupported .npy version"),
    ("trailing", "trailing data"),
    ("truncated member", "truncated"),
])
def test_npz_problems(files, case, match):
    name, w = _param_name(files), _good_weight()
    data = {
        "missing": lambda: _npz({}),
        "extra": lambda: _npz({name: w, "stowaway": w}),
        "shape": lambda: _npz({name: w.reshape(3, 4)}),
        "dtype": lambda: _npz({name: w.astype(np.float64)}),
        "int8": lambda: _npz({name: w.astype(np.int8)}),
        "structured": lambda: _npz({name: np.zeros((4, 3), dtype=[("a", "f4")])}),
        "string": lambda: _npz({name: np.full((4, 3), "x")}),
        "not zip": lambda: b"PK\x03\x04 this is not really a zip file",
        "empty": lambda: b"",
        "member not npy": lambda: _npz({name: w}, raw={"README.txt": b"hi"}),
        "duplicate": lambda: _duplicate_member(name, w),
        "npy garbage": lambda: _npz({}, raw={name + ".npy": b"\x93NUMPY\x01\x00\xff\xff{'descr': ..."}),
        "npy version 3": lambda: _npz({}, raw={
            name + ".npy": _npy_bytes(w).replace(b"\x93NUMPY\x01", b"\x93NUMPY\x03")}),
        "trailing": lambda: _npz({}, raw={name + ".npy": _npy_bytes(w) + b"extra"}),
        "truncated member": lambda: _npz({}, raw={name + ".npy": _npy_bytes(w)[:-5]}),
    }[case]()
    files.write_npz(data)
    files.fails(match, files.npz_path)


def _npy_bytes(array):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=(1, 0))
    return buf.getvalue()


def _duplicate_member(name, array):
    buf = io.BytesIO()
    with pytest.warns(UserWarning), zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(name + ".npy", _npy_bytes(array))
        zf.writestr(name + ".npy", _npy_bytes(array))
    return buf.getvalue()


def test_npz_truncated_file(files, saved):
    data = saved[2]
    for cut in (10, len(data) // 2, len(data) - 3):
        files.write_npz(data[:cut])
        files.fails("not a valid parameters file|truncated", files.npz_path)


@pytest.mark.parametrize("variant", ["big-endian", "fortran", "compressed"])
def test_npz_variants_that_are_fine(files, variant):
    name, w = _param_name(files), _good_weight()
    arrays = {name: w.astype(">f4") if variant == "big-endian" else np.asfortranarray(w)}
    files.write_npz(_npz(arrays, zipfile.ZIP_DEFLATED if variant == "compressed" else zipfile.ZIP_STORED))
    loaded = files.load()
    value = loaded.state_dict()[name].numpy()
    assert value.dtype == np.float32 and value.dtype.isnative
    np.testing.assert_array_equal(value, w)


def test_header_claiming_8_gib_allocates_nothing(files):
    """A parameter declared (consistently, in JSON and npy header) as 8 GiB, holding 16 bytes."""
    doc = files.doc()
    doc["blocks"][0]["vars"].append({"name": "big", "shape": [2 ** 20, 2 ** 10], "dtype": "float64",
                                     "persistable": True})
    doc["inputs"].append("big")
    doc["parameters"].append({"name": "big", "shape": [2 ** 20, 2 ** 10], "dtype": "float64"})
    files.write_json(doc)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (2 ** 20, 2 ** 10)})
    buf = io.BytesIO()
    write_params(buf, {_param_name(files): _good_weight()})
    with zipfile.ZipFile(buf, "a") as zf:
        zf.writestr("big.npy", header.getvalue() + b"\0" * 16)
    files.write_npz(buf.getvalue())
    tracemalloc.start()
    try:
        files.fails(r"'big' would bring the parameters to 85899\d+ bytes, over the limit", files.npz_path)
        with pytest.raises(ProgramFormatError, match=r"'big' is truncated \(16 of 8589934592 bytes\)"):
            load_program(files.prefix, max_bytes=2 ** 34)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2 ** 20


def test_deflate_bomb_is_bounded_by_the_declared_shape(files):
    name = _param_name(files)
    bomb = _npy_bytes(_good_weight()) + b"\0" * (64 * 2 ** 20)
    files.write_npz(_npz({}, zipfile.ZIP_DEFLATED, raw={name + ".npy": bomb}))
    assert os.path.getsize(files.npz_path) < 2 ** 20
    tracemalloc.start()
    try:
        files.fails("trailing data", files.npz_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2 ** 20


def _with_big_parameter(files, shape, dtype="float32"):
    """The save plus a persistable input 'big' of `shape`, declared consistently in the JSON."""
    doc = files.doc()
    doc["blocks"][0]["vars"].append({"name": "big", "shape": list(shape), "dtype": dtype, "persistable": True})
    doc["inputs"].append("big")
    doc["parameters"].append({"name": "big", "shape": list(shape), "dtype": dtype})
    files.write_json(doc)


def test_deflate_bomb_of_a_declared_huge_parameter_is_refused_before_inflating(files):
    """128 KiB of deflated zeros that the JSON and npy header both call a 128 MiB parameter."""
    shape = (2 ** 25,)
    _with_big_parameter(files, shape)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    buf = io.BytesIO()
    write_params(buf, {_param_name(files): _good_weight()})
    with zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as zf, \
            zf.open("big.npy", "w", force_zip64=True) as member:
        member.write(header.getvalue())
        zeros = bytes(2 ** 24)
        for _ in range(4 * shape[0] // len(zeros)):
            member.write(zeros)
    files.write_npz(buf.getvalue())
    size = os.path.getsize(files.npz_path)
    assert size < 2 ** 20
    tracemalloc.start()
    try:
        error = files.fails("over the limit", files.npz_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2 ** 20
    assert f"limit of {default_max_bytes(size)} bytes" in str(error) and "max_bytes=" in str(error)


def test_max_bytes_sets_the_limit(files):
    _with_big_parameter(files, (1000,))
    name = _param_name(files)
    big = np.arange(1000, dtype=np.float32)
    files.write_npz(_npz({name: _good_weight(), "big": big}, zipfile.ZIP_DEFLATED))
    np.testing.assert_array_equal(files.load().state_dict()["big"].numpy(), big)     # under the default
    with pytest.raises(ProgramFormatError, match="over the limit of 4000 bytes .max_bytes."):
        load_program(files.prefix, max_bytes=4000)                                    # 48 + 4000 bytes
    assert load_program(files.prefix, max_bytes=4048).state_dict()["big"].shape == (1000,)
    with pytest.raises(ValueError, match="max_bytes"):
        load_program(files.prefix, max_bytes=-1)


def test_transpiler_load_passes_the_limits_through(files):
    import transpiler
    with pytest.raises(ProgramFormatError, match="over the limit of 10 bytes"):
        transpiler.load(files.prefix, max_bytes=10)
    loaded = transpiler.load(files.prefix, max_iterations=0)
    with pytest.raises(rt.IterationLimitError, match="ran more than 0 iterations"):
        loaded(np.ones((2, 4), np.float32))


# --- huge literals, endless loops ------------------------------------------------------------

def test_huge_assert_message_is_not_pasted_into_the_plan(files):
    message = "m" * (8 * 2 ** 20)
    doc = files.doc()
    ops(doc, "assert")[0]["attrs"]["message"] = message
    files.write_json(doc)
    loaded = files.load()
    plan = loaded.executor.compile(loaded.program)
    assert len(plan.source) < 20000
    with pytest.raises(AssertionError) as info:
        loaded(np.full((2, 4), np.nan, np.float32))
    assert str(info.value).startswith(message)


def test_huge_constant_compiles_in_linear_time():
    """A 4 MiB constant: not compared element by element by cse, not pasted into source."""
    c = np.arange(2 ** 19, dtype=np.float64)
    program, _, _ = rt.trace(lambda x: x + c, [rt.InputSpec([2 ** 19], "float64", "x")])
    start = time.process_time()
    plan = rt.Executor().compile(program)
    assert time.process_time() - start < 3.0
    assert len(plan.source) < 2000
    x = np.ones(2 ** 19)
    np.testing.assert_array_equal(plan.run({"x": x})[0].numpy(), x + c)


def _endless(x):
    i = rt.zeros((), "int64")
    x, i = rt.while_loop(lambda x, i: i >= 0, lambda x, i: (x + 1.0, i + 1), (x, i))
    return x


def test_max_iterations_bounds_while_loops(tmp_path):
    program, _, _ = rt.trace(_endless, [rt.InputSpec([2], "float32", "x")])
    line = _endless.__code__.co_firstlineno + 2
    with pytest.raises(rt.IterationLimitError, match=rf"while loop at .*test_hostile_files.py:{line} ran more than "
                                                    r"1000 iterations") as info:
        rt.Executor(max_iterations=1000).run(program, {"x": np.zeros(2, np.float32)})
    assert "__" not in str(info.value)
    save_program(program, tmp_path / "endless")
    loaded = load_program(tmp_path / "endless", max_iterations=5)
    with pytest.raises(rt.IterationLimitError, match="ran more than 5 iterations"):
        loaded(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="max_iterations"):
        rt.Executor(max_iterations=-1)


def test_max_iterations_allows_exactly_that_many(files):
    x = np.ones((2, 4), np.float32)
    expected = files.load()(x)
    runs = expected["i"].numpy().item()
    assert runs >= 2
    same = load_program(files.prefix, max_iterations=runs)(x)
    for key in expected:
        np.testing.assert_array_equal(same[key].numpy(), expected[key].numpy())
    with pytest.raises(rt.IterationLimitError):
        load_program(files.prefix, max_iterations=runs - 1)(x)


# --- fuzz ---------------------------------------------------------------------------------

class _Timeout(BaseException):
    """A mutated Program may loop forever: that is its semantics, not a loader bug."""


def _on_alarm(signum, frame):
    raise _Timeout()


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


_ODD_VALUES = [None, True, False, 0, -1, 1, 2, 3, 7, 2 ** 31, 2 ** 62, -2 ** 63, 1.5, float("nan"), "", "x", "while",
               "cond", "matmul", "float64", "object", "*", [], {}, [[]], {"lit": 1}, {"float": "inf"}, ["slice"],
               {"$": 5}, "__import__('os')", "a b", "\uff58", "x\u00b2", "\u017fum", "m" * 100000]


def _mutate_doc(doc, rnd):
    names = [v["name"] for b in doc["blocks"] for v in b["vars"]]
    paths = [p for p in _paths(doc) if p]
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        path = rnd.choice(paths)
        parent, key = _get(doc, path[:-1]), path[-1]
        action = rnd.randrange(6)
        try:
            if action == 0:                                   # delete a key / an element
                del parent[key]
            elif action == 1:                                 # swap in an odd value or a type
                parent[key] = copy.deepcopy(rnd.choice(_ODD_VALUES))
            elif action == 2:                                 # swap in another variable's name
                parent[key] = rnd.choice(names)
            elif action == 3:                                 # swap two values of the document
                other = rnd.choice(paths)
                o_parent, o_key = _get(doc, other[:-1]), other[-1]
                parent[key], o_parent[o_key] = o_parent[o_key], parent[key]
            elif action == 4 and isinstance(parent, list):    # duplicate an element
                parent.insert(key, copy.deepcopy(parent[key]))
            elif isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
                parent[key] = parent[key] + rnd.choice((-2, -1, 1, 2, 1000))
            else:
                parent[key] = copy.deepcopy(rnd.choice(_ODD_VALUES))
        except (KeyError, IndexError, TypeError):
            pass                                              # the path moved under an earlier mutation
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
    return doc


def _mutate_bytes(data, rnd):
    data = bytearray(data)
    action = rnd.randrange(3)
    if action == 0:
        for _ in range(rnd.randrange(1, 8)):
            data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
    elif action == 1:
        del data[rnd.randrange(len(data)):]
    else:
        pos = rnd.randrange(len(data))
        data[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 5)))
    return bytes(data)


def _feed(loaded):
    feed = {}
    for spec in loaded.input_specs:
        shape = [2 if d == -1 else d for d in spec.shape]
        if spec.dtype.kind == "V" or np.prod(shape) > 10 ** 5:
            return None
        feed[spec.name] = np.ones(shape, spec.dtype)
    return feed


def _check_outcome(files, outcome_counts):
    try:
        loaded = files.load()
    except ProgramFormatError as e:
        assert files.json_path in str(e) or files.npz_path in str(e), e
        outcome_counts["refused"] += 1
        return
    feed = _feed(loaded)
    if feed is None:
        outcome_counts["loaded"] += 1
        return
    signal.setitimer(signal.ITIMER_REAL, 0.25)
    try:
        loaded(**feed)
        outcome_counts["ran"] += 1
    except _Timeout:
        outcome_counts["looped"] += 1
    except (rt.FeedError, AssertionError):
        outcome_counts["run error"] += 1
    except Exception as e:  # an op failed: the error must name it
        assert hasattr(e, "op") or isinstance(e, rt.ProgramRunError), repr(e)
        outcome_counts["run error"] += 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_fuzz_json_and_npz(files, saved):
    _, doc, npz = saved
    text = json.dumps(doc, indent=1).encode()
    rnd = random.Random(20240607)
    counts = {"refused": 0, "loaded": 0, "ran": 0, "looped": 0, "run error": 0}
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for i in range(600):
            kind = i % 4
            if kind in (0, 1):                        # structural mutations of the JSON document
                files.write_json(_mutate_doc(copy.deepcopy(doc), rnd))
                files.write_npz(npz)
            elif kind == 2:                           # byte flips, truncations, insertions in the JSON text
                files.write_json(_mutate_bytes(text, rnd))
                files.write_npz(npz)
            else:                                     # ... and in the parameters file
                files.write_json(text)
                files.write_npz(_mutate_bytes(npz, rnd))
            _check_outcome(files, counts)
    finally:
        signal.signal(signal.SIGALRM, previous)
    print(counts)
    # closed blocks made more of the document load-bearing (closure lists, their params): ~14 of 600 run
    assert counts["refused"] > 200 and counts["ran"] > 10, counts


# --- names that alias, names that do not compile ----------------------------------------------

def _aliasing_model(x):
    t = rt.matmul(x, W4)
    r = rt.reshape(W4, (4, 4))          # a view of the weight
    return t * 2.0 + 1.0, r             # fused, written in place into the dying matmul result


W4 = rt.tensor(np.ones((4, 4), np.float32))


def _rename(doc, old, new):
    """`old` renamed to `new` everywhere in the document."""
    def walk(node):
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return new if node == old else node
    return walk(doc)


@pytest.mark.parametrize("alias", ["\uff52eshape", "re\u017fhape", "ｒｅｓｈａｐｅ"])
def test_names_that_alias_after_nfkc_are_refused(tmp_path, alias):
    """`ｒeshape` is `reshape` to Python: the in-place write would land in the weight's view."""
    program, _, _ = rt.trace(_aliasing_model, [rt.InputSpec([4, 4], "float32", "x")])
    prefix = str(tmp_path / "m")
    json_path, _ = save_program(program, prefix)
    with open(json_path) as f:
        doc = json.load(f)
    with open(json_path, "w") as f:
        json.dump(_rename(doc, "matmul", alias), f)
    with pytest.raises(ProgramFormatError, match="invalid name"):
        load_program(prefix)


def _run_three_times(program):
    x = np.ones((4, 4), np.float32)
    weight = W4.numpy().copy()
    results = [[t.numpy() for t in rt.Executor().run(program, {"x": x})] for _ in range(3)]
    np.testing.assert_array_equal(W4.numpy(), weight)
    np.testing.assert_array_equal(x, np.ones((4, 4), np.float32))
    return results


@pytest.mark.parametrize("new_name", ["\uff52eshape", "y\u00b2-", "\u00b2", "class", "k_add", "x y"])
def test_generated_names_compile_and_never_alias(new_name, tmp_path):
    """A Program made in memory with odd names runs as its printed IR says (no SyntaxError, no aliasing).

    A name is a hint: the printer and the serializer write it cleaned (`naming.clean_hint`), so the
    text is valid and the saved file loads and runs the same."""
    program, _, _ = rt.trace(_aliasing_model, [rt.InputSpec([4, 4], "float32", "x")])
    expected = _run_three_times(program)
    renamed = program.clone()
    var = renamed.find_var("matmul")
    var.name = new_name
    assert f"{clean_hint(new_name)}: float32[4, 4] = matmul(" in str(renamed)
    for got in _run_three_times(renamed):
        for a, b in zip(got, expected[0]):
            np.testing.assert_array_equal(a, b)
    save_program(renamed, str(tmp_path / "renamed"))
    loaded = load_program(str(tmp_path / "renamed"))
    assert clean_hint(new_name) in str(loaded.program)
    np.testing.assert_array_equal(loaded(np.ones((4, 4), np.float32))[0].numpy(), expected[0][0])


# --- feeds at the edge ------------------------------------------------------------------------

def _double(x):
    return x * 2


@pytest.fixture
def loaded_double(tmp_path):
    def load(dtype="float32"):
        program, _, _ = rt.trace(_double, [rt.InputSpec([2], dtype, "x")])
        save_program(program, str(tmp_path / dtype))
        return load_program(str(tmp_path / dtype))
    return load


def test_big_endian_input_says_so(loaded_double):
    with pytest.raises(rt.FeedError, match=r"input 'x': expected float32 in native byte order, got big-endian "
                                            r"float32 \('>f4'"):
        loaded_double()(np.ones(2, ">f4"))


@pytest.mark.parametrize("dtype, value, match", [
    ("float32", [1 + 2j, 3j], "list of complex numbers"),
    ("float32", ["1", "2"], "list of strings"),
    ("float32", [1, [2]], "cannot make an array"),
    ("uint8", [1.5, 2.0], "list of floats"),
    ("uint8", [300, 1], "out of bounds"),
    ("int32", 2.5, "got 2.5, which int32 cannot hold"),
])
def test_python_values_that_do_not_fit_are_a_feed_error_naming_the_input(loaded_double, dtype, value, match):
    with pytest.raises(rt.FeedError, match=rf"input 'x' \({dtype}") as info:
        loaded_double(dtype)(value)
    assert info.match(match)


def test_python_values_that_fit_are_converted(loaded_double):
    np.testing.assert_array_equal(loaded_double()([1, 2]).numpy(), np.float32([2, 4]))
    np.testing.assert_array_equal(loaded_double("complex64")([1j, 2]).numpy(), np.complex64([2j, 4]))
    np.testing.assert_array_equal(loaded_double("int64")([True, 3]).numpy(), np.int64([2, 6]))


# --- fuzz: Unicode names, deflate bombs, huge literals, long op chains ----------------------------

def _all_names(doc):
    return [v["name"] for b in doc["blocks"] for v in b["vars"]]


def _nfkc_alias(name, rnd):
    """A name Python reads as `name` (fullwidth letters, long s, ligatures) or a non-ASCII look-alike."""
    i = rnd.randrange(len(name))
    c = name[i]
    if c.isascii() and c.isalnum():
        c = rnd.choice([chr(ord(c) + 0xFEE0), "\u017f" if c == "s" else chr(ord(c) + 0xFEE0), c + "\u0301"])
    else:
        c = rnd.choice(["\u00b2", "\u00e9", "\ufb01", "\u212a", "\u2168", "\U0001d431"])
    return name[:i] + c + name[i + 1:]


_CHAIN_OPS = [("add", 2), ("multiply", 2), ("subtract", 2), ("maximum", 2), ("tanh", 1), ("negative", 1),
              ("abs", 1), ("sin", 1)]


def _long_chain(doc, n, rnd):
    """doc with n elementwise ops appended to block 0 (from input 'x', returned as one more output),
    and a NumPy function computing that output."""
    block = doc["blocks"][0]
    x = doc["inputs"][0]
    prev, steps = x, []
    for k in range(n):
        op_type, arity = rnd.choice(_CHAIN_OPS)
        name = f"chain_{k}"
        block["vars"].append({"name": name, "shape": [-1, 4], "dtype": "float32"})
        other = rnd.choice(["prev", "x", 0.5, 2, -1.0, True]) if arity == 2 else None
        encoded = {"prev": prev, "x": x}.get(other, {"lit": other})
        block["ops"].append({"type": op_type, "inputs": [prev] + ([encoded] if arity == 2 else []),
                             "outputs": [name], "attrs": {}})
        steps.append((op_type, other))
        prev = name
    doc["outputs"].append(prev)
    doc["output_tree"] = {"kind": "tuple", "children": [doc["output_tree"], "*"]}

    def oracle(xv):
        value = xv
        for op_type, other in steps:
            args = [value] if other is None else [value, {"prev": value, "x": xv}.get(other, other)]
            value = getattr(np, op_type)(*args)
        return value
    return doc, oracle


def test_fuzz_unicode_names_are_refused(files, saved):
    """A name renamed to a look-alike of any name (its own, another's): refused, whatever it aliases."""
    rnd = random.Random(7)
    for _ in range(60):
        doc = files.doc()
        names = _all_names(doc)
        old, target = rnd.choice(names), rnd.choice(names)
        doc = _rename(doc, old, _nfkc_alias(target, rnd))
        files.write_json(doc)
        files.fails("invalid name")


def test_fuzz_long_chains_load_fast_and_run_right(files, saved):
    """Chains of 500 to 3000 random elementwise ops, some mutated: documented outcomes, near-linear cost."""
    rnd = random.Random(11)
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    outcomes = []
    for i in range(8):
        n = rnd.choice((500, 1000, 3000))
        doc, oracle = _long_chain(files.doc(), n, rnd)
        mutated = i % 3 == 2
        if mutated:
            doc = _mutate_doc(doc, rnd)
        files.write_json(doc)
        start = time.process_time()
        try:
            loaded = load_program(files.prefix, max_iterations=100)
            loaded.executor.compile(loaded.program)
        except ProgramFormatError as e:
            assert mutated and files.json_path in str(e), e
            outcomes.append("refused")
            continue
        assert time.process_time() - start < 1 + n / 500, n
        try:
            got = loaded(x)
        except (rt.FeedError, AssertionError, rt.ProgramRunError):
            assert mutated
            outcomes.append("run error")
            continue
        except Exception as e:  # an op failed: the error must name it
            assert mutated and hasattr(e, "op"), repr(e)
            outcomes.append("run error")
            continue
        outcomes.append("ran")
        if not mutated:
            np.testing.assert_array_equal(got[1].numpy(), oracle(x))
    assert outcomes.count("ran") >= 5, outcomes


def test_fuzz_huge_literals(files, saved):
    """Megabyte messages, origins and attr lists: loaded or refused, never pasted into generated source."""
    rnd = random.Random(13)
    for i in range(8):
        doc = files.doc()
        size = rnd.choice((2 ** 20, 4 * 2 ** 20))
        where = i % 3
        if where == 0:
            ops(doc, "assert")[0]["attrs"]["message"] = rnd.choice("ab\u00e9\"'\\") * size
        elif where == 1:
            rnd.choice([op for b in doc["blocks"] for op in b["ops"]])["origin"] = "f.py:" + "9" * size
        else:
            ops(doc, "sum")[0]["attrs"]["axis"] = [1] * (size // 4)
        files.write_json(doc)
        try:
            loaded = files.load()
        except ProgramFormatError as e:
            assert where == 2 and "does not accept" in str(e), e
            continue
        plan = loaded.executor.compile(loaded.program)
        assert len(plan.source) < 20000
        loaded(np.ones((2, 4), np.float32))


def test_fuzz_deflate_bombs(files, saved):
    """Bombs of random declared sizes and limits: refused from the headers (memory stays small) or loaded."""
    rnd = random.Random(17)
    name = _param_name(files)
    for _ in range(6):
        elements = rnd.choice((2 ** 10, 2 ** 20, 2 ** 24))
        _with_big_parameter(files, (elements,))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            zf.writestr(name + ".npy", _npy_bytes(_good_weight()))
            zf.writestr("big.npy", _npy_bytes(np.zeros(elements, np.float32)))
        files.write_npz(buf.getvalue())
        max_bytes = rnd.choice((None, 2 ** 12, 2 ** 27))
        fits = 48 + 4 * elements <= (default_max_bytes(len(buf.getvalue())) if max_bytes is None else max_bytes)
        tracemalloc.start()
        try:
            if fits:
                loaded = load_program(files.prefix, max_bytes=max_bytes)
                assert loaded.state_dict()["big"].shape == (elements,)
            else:
                with pytest.raises(ProgramFormatError, match="over the limit"):
                    load_program(files.prefix, max_bytes=max_bytes)
                assert tracemalloc.get_traced_memory()[1] < 8 * 2 ** 20
        finally:
            tracemalloc.stop()


def test_a_variable_named_like_a_builtin_the_plan_calls():
    """Slice bounds are `int(n)` in the plan: a variable named `int` must not shadow it."""
    program, _, _ = rt.trace(lambda x, n: x[n:] * 2.0, [rt.InputSpec([5], "float32", "x"),
                                                       rt.InputSpec([], "int64", "n")])
    n = next(v for v in program.inputs if v.name == "n")
    n.name = "int"
    x = np.arange(5, dtype=np.float32)
    (y,) = rt.Executor().run(program, {"x": x, "int": np.int64(2)})
    np.testing.assert_array_equal(y.numpy(), x[2:] * 2)
