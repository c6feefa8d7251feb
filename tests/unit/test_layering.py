"""Layers import downward only: the module import graph of runtime/ and transpiler/, read from the source.

Every `import` counts, at the top of a module or inside a function, with Python's own
meaning: importing `runtime.ops.registry` from outside `runtime.ops` runs `runtime/ops/__init__`
first, so it depends on that package too. The graph must have no cycle, and every edge must
go from a layer to the same or a lower one in LAYERS (the order docs/architecture.md draws).
A function-level import would hide a cycle from a reader, so inside functions only optional
third-party packages may be imported, or our modules that import one at their top (`runtime.onnx`
needs `onnx`). Run this file as a script to print the layers.
"""
import ast
import functools
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("runtime", "transpiler")
OPTIONAL = {"cupy", "cupyx", "onnx", "onnxruntime", "dask", "distributed", "torch", "llvmlite"}

# Bottom to top; see layer_of for which layer a module is in.
LAYERS = [
    ("base", ["runtime.atomic_files", "runtime.buffers", "runtime.gc_pause", "runtime.dtypes", "runtime.errors", "runtime.pytree", "runtime.backends",
              "runtime.undefined", "runtime.rng", "runtime.retraces", "runtime.shape_text", "runtime.naming",
              "runtime.array_methods",
              "runtime.torch_methods", "runtime.autodiff",
              "runtime.autodiff.records", "runtime.autodiff.tape"]),
    ("ir", ["runtime.ir"]),
    ("tracing", ["runtime.trace_context", "runtime.tracer", "runtime.tracing", "runtime.state"]),
    ("tensor", ["runtime.tensor"]),
    ("ops", ["runtime.ops"]),
    ("control flow, writes", ["runtime.control_flow", "runtime.scan_loop", "runtime.writes"]),
    ("printer, serialization, verify", ["runtime.printer", "runtime.serialization", "runtime.verify"]),
    ("passes", ["runtime.passes"]),
    ("executor", ["runtime.codegen", "runtime.native", "runtime.executor"]),
    ("deploy, export", ["runtime.deploy", "runtime.export", "runtime.onnx"]),
    ("array API extras", ["runtime.array_api", "runtime.linalg", "runtime.fft", "runtime.torch_functions",
                           "runtime.distributions", "runtime.utils"]),
    ("autodiff", ["runtime.autodiff.engine", "runtime.autodiff.replay", "runtime.autodiff.arrays",
                  "runtime.autodiff.control_flow", "runtime.autodiff.scan", "runtime.autodiff.traced", "runtime.autodiff.backward",
                  "runtime.autodiff.functional", "runtime.autodiff.static_call"]),
    ("nn", ["runtime.nn"]),
    ("optim", ["runtime.optim"]),
    ("runtime namespace", ["runtime"]),
    ("analysis", ["transpiler.analysis"]),
    ("transforms", ["transpiler.errors", "transpiler.naming", "transpiler.parsing", "transpiler.transforms"]),
    ("effects", ["transpiler.effects"]),
    ("operators", ["transpiler.choices", "transpiler.scan_for", "transpiler.operators"]),
    ("emit", ["transpiler.emit"]),
    ("trace bookkeeping", ["transpiler.guards"]),
    ("api", ["transpiler.conversion", "transpiler.signatures", "transpiler.fast_call",
             "transpiler.static_function", "transpiler.api"]),
    ("deploy, cluster, batches", ["transpiler.deploy", "transpiler.cluster", "transpiler.batches"]),
    ("transpiler namespace", ["transpiler"]),
    ("cli", ["transpiler.cli", "transpiler.__main__"]),
]


def modules():
    """{dotted name: (path, is_package)} for every module of the packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


class Import:
    def __init__(self, importer, target, line, in_function):
        self.importer, self.target, self.line, self.in_function = importer, target, line, in_function


def imports_of(name, path, is_package, known):
    """Every import statement of one module, resolved to the module it names."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend(Import(name, alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = ".".join(package[:len(package) - child.level + 1] + [child.module or ""]).strip(".") \
                    if child.level else child.module
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    found.append(Import(name, sub if sub in known else base, child.lineno, in_function))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def depends_on(importer, target, known):
    """The internal modules an import makes run: the target, and the packages holding it that are
    not already being imported around the importer."""
    parts = target.split(".")
    out = [target] if target in known else []
    for i in range(1, len(parts)):
        prefix = ".".join(parts[:i])
        if prefix in known and not (importer + ".").startswith(prefix + "."):
            out.append(prefix)
    return out


@functools.lru_cache(maxsize=None)
def graph():
    """({module: {module it depends on: [Import, ...]}}, [every Import])."""
    known = modules()
    edges, all_imports = {name: {} for name in known}, []
    for name, (path, is_package) in known.items():
        for imp in imports_of(name, path, is_package, known):
            all_imports.append(imp)
            for dep in depends_on(name, imp.target, known):
                if dep != name:
                    edges[name].setdefault(dep, []).append(imp)
    return edges, all_imports


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root), on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child), on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer_of(module):
    """The layer of the longest name in LAYERS that is the module or a package holding it
    (`runtime` and `transpiler` name only their own __init__)."""
    best, rank = "", None
    for i, (_, names) in enumerate(LAYERS):
        for n in names:
            holds = module == n or (module.startswith(n + ".") and n not in PACKAGES)
            if holds and len(n) > len(best):
                best, rank = n, i
    return rank


def _where(imp):
    return f"{imp.importer} line {imp.line} (import {imp.target})"


def test_no_import_cycles():
    edges, _ = graph()
    report = []
    for component in cycles(edges):
        members = set(component)
        lines = [_where(imps[0]) for m in component for dep, imps in edges[m].items() if dep in members]
        report.append(f"{len(component)} modules: " + "; ".join(lines))
    assert not report, "import cycles:\n" + "\n".join(report)


def test_every_module_has_a_layer():
    missing = sorted(m for m in modules() if layer_of(m) is None)
    assert not missing, f"modules in no layer (add them to LAYERS here and to docs/architecture.md): {missing}"


def test_imports_go_downward():
    edges, _ = graph()
    upward = [f"{_where(imps[0])}: layer '{LAYERS[layer_of(m)][0]}' imports layer '{LAYERS[layer_of(dep)][0]}'"
              for m, deps in edges.items() for dep, imps in deps.items()
              if None not in (layer_of(m), layer_of(dep)) and layer_of(dep) > layer_of(m)]
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_runtime_never_imports_transpiler():
    edges, _ = graph()
    bad = [_where(imps[0]) for m, deps in edges.items() if m.split(".")[0] == "runtime"
           for dep, imps in deps.items() if dep.split(".")[0] == "transpiler"]
    assert not bad


def needs_optional(all_imports):
    """Our modules whose import imports an optional package (at their top, or through a module they import)."""
    known = modules()
    top = [imp for imp in all_imports if not imp.in_function]
    found = {imp.importer for imp in top if imp.target.split(".")[0] in OPTIONAL}
    while True:
        more = {imp.importer for imp in top
                if imp.target in found or any(dep in found for dep in depends_on(imp.importer, imp.target, known))}
        if more <= found:
            return found
        found |= more


def test_function_level_imports_are_optional_packages_only():
    _, all_imports = graph()
    optional = needs_optional(all_imports)
    bad = [_where(imp) for imp in all_imports if imp.in_function
           and imp.target.split(".")[0] not in OPTIONAL and imp.target not in optional]
    assert not bad, "imports inside functions (move them to the top of the module):\n" + "\n".join(bad)


def test_the_graph_sees_what_python_imports():
    """The reader resolves relative, package and submodule imports as Python does."""
    edges, all_imports = graph()
    assert "runtime.ir" in edges["runtime.tracing"]                     # from .ir import Program
    assert "runtime.ops.registry" in edges["runtime.ops.dispatch"]      # from .registry import get_op
    assert "runtime.ops" in edges["runtime.serialization"]              # runtime/ops/__init__ runs first
    assert "runtime.ops" not in edges["runtime.ops.dispatch"]           # ...but not from inside runtime.ops
    assert "runtime.ops.nn_ops" in edges["runtime.ops"]                 # from . import nn_ops
    assert "runtime" in edges["transpiler.api"]                         # import runtime as rt
    probe = [imp for imp in all_imports if imp.importer == "runtime.backends.cupy_backend"]
    assert [(imp.target, imp.in_function) for imp in probe if imp.target == "cupy"] == [("cupy", True)]
    assert cycles({"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}) == [["a", "b", "c"]]
    wrapper = [Import("runtime.w", "cupy", 1, False), Import("runtime.u", "runtime.w", 1, False),
               Import("runtime.v", "runtime.u", 9, True)]
    assert needs_optional(all_imports + wrapper) >= {"runtime.w", "runtime.u"}
    assert "runtime.v" not in needs_optional(all_imports + wrapper)
    assert layer_of("runtime.ops.nn_ops") == layer_of("runtime.ops") < layer_of("runtime.nn.layers")
    assert layer_of("transpiler.cli") > layer_of("transpiler") and layer_of("runtime.new_module") is None


if __name__ == "__main__":
    edges, _ = graph()
    for rank, (label, names) in enumerate(LAYERS):
        members = sorted(m for m in edges if layer_of(m) == rank)
        print(f"{rank:2d} {label}: {', '.join(members)}")
    sys.exit(1 if cycles(edges) else 0)


def _op_names_compared(tree):
    """String constants an `<x>.type` is compared with (`op.type == "getitem"`, `op.type in (...)`,
    or `op.type in NAMES` with NAMES a module-level tuple of strings)."""
    named = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Attribute) and s.attr == "type" for s in sides):
            continue
        for side in sides:
            if isinstance(side, ast.Name) and side.id in named:
                side = named[side.id]
            for const in ast.walk(side):
                if isinstance(const, ast.Constant) and isinstance(const.value, str):
                    yield const.value, node.lineno


def test_only_runtime_ops_names_an_op_type():
    """What a stage asks about an op is a property of its OpDef: outside runtime/ops/ no module
    compares an op's type with a name, the region ops `cond` and `while` included (a stage asks
    their OpDef's `region`, ops/regions.py)."""
    from runtime.ops.registry import REGISTRY
    found = []
    for name, (path, _) in modules().items():
        if name.startswith("runtime.ops"):
            continue
        for value, line in _op_names_compared(ast.parse(path.read_text())):
            if value in REGISTRY:
                found.append(f"{path.relative_to(ROOT)}:{line} names op {value!r}")
    assert not found, "\n".join(found)


REGION_OPS = ("cond", "while", "scan")


def _region_names_compared(tree):
    """Lines where any comparison (`x == "while"`, `t in ("cond", "while")`, `k != 'scan'`) has the name of
    a region op as a string constant on either side, whatever the other side is."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                for const in ast.walk(side):
                    if isinstance(const, ast.Constant) and const.value in REGION_OPS:
                        yield const.value, node.lineno


def test_no_stage_compares_with_a_region_op_name():
    """No module outside runtime/ops/ compares anything with "cond", "while" or "scan": passes, codegen,
    serialization, printer and the converter ask the OpDef's `region` (names as hints or facet keys are fine)."""
    found = []
    for name, (path, _) in modules().items():
        if name.startswith("runtime.ops"):
            continue
        for value, line in _region_names_compared(ast.parse(path.read_text())):
            found.append(f"{path.relative_to(ROOT)}:{line} compares with {value!r}")
    assert not found, "\n".join(found)
    probe = ast.parse('if op.type in ("cond", "while") or kind == "scan":\n    pass\nf("while")\n')
    assert [v for v, _ in _region_names_compared(probe)] == ["cond", "while", "scan"]
