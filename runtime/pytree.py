"""Nested tuples/lists/dicts of values, flattened to leaves and rebuilt.

Control flow (`cond`, `while_loop`) and Program outputs carry arbitrary nests of
values; a TreeDef records the nest so two branches can be compared and a
Program's flat outputs rebuilt into what the user's function returned.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeDef:
    kind: str                 # "leaf", "tuple", "list", "dict", "namedtuple"
    children: tuple = ()
    keys: tuple = ()          # dict keys, or the namedtuple class for "namedtuple"

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __str__(self):
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(str(c) for c in self.children)
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, self.children)) + "}"
        return f"{self.keys[0].__name__}({inner})"


LEAF = TreeDef("leaf")


def flatten(tree):
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if isinstance(tree, tuple):
        kids = tuple(_flatten(t, leaves) for t in tree)
        if hasattr(tree, "_fields"):
            return TreeDef("namedtuple", kids, (type(tree),))
        return TreeDef("tuple", kids)
    if isinstance(tree, list):
        return TreeDef("list", tuple(_flatten(t, leaves) for t in tree))
    if isinstance(tree, dict):
        keys = tuple(tree)
        return TreeDef("dict", tuple(_flatten(tree[k], leaves) for k in keys), keys)
    leaves.append(tree)
    return LEAF


def unflatten(treedef, leaves):
    it = iter(leaves)
    out = _unflatten(treedef, it)
    return out


def _unflatten(td, it):
    if td.kind == "leaf":
        return next(it)
    kids = [_unflatten(c, it) for c in td.children]
    if td.kind == "tuple":
        return tuple(kids)
    if td.kind == "list":
        return kids
    if td.kind == "dict":
        return dict(zip(td.keys, kids))
    return td.keys[0](*kids)


def leaf_paths(treedef, prefix=""):
    """Human-readable path of every leaf ("[0]", "['h']", ...), for error messages."""
    if treedef.kind == "leaf":
        return [prefix]
    out = []
    for i, child in enumerate(treedef.children):
        key = treedef.keys[i] if treedef.kind == "dict" else i
        out.extend(leaf_paths(child, f"{prefix}[{key!r}]"))
    return out


def to_json(treedef):
    if treedef.kind == "leaf":
        return "*"
    if treedef.kind == "namedtuple":
        raise TypeError(f"cannot serialize namedtuple output {treedef.keys[0].__name__}; return a tuple or dict")
    node = {"kind": treedef.kind, "children": [to_json(c) for c in treedef.children]}
    if treedef.kind == "dict":
        node["keys"] = list(treedef.keys)
    return node


def from_json(node):
    if node == "*":
        return LEAF
    if not isinstance(node, dict) or node.get("kind") not in ("tuple", "list", "dict"):
        raise ValueError(f"bad output tree node {node!r}")
    keys = tuple(node.get("keys", ()))
    children = tuple(from_json(c) for c in node["children"])
    if node["kind"] == "dict" and len(keys) != len(children):
        raise ValueError("output tree: dict keys and children differ in number")
    return TreeDef(node["kind"], children, keys)
