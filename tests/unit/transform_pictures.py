"""Before/after pictures of single transforms: source in, one transform (or a few) run, source out.

Used by tests/unit/test_transform_*.py. A transform after the analysis (ControlFlow, Raises,
Expressions, Calls) reads the analysis's annotations: `picture(..., analyzed=True)` runs it first.
"""
import builtins
import textwrap

import astor
import gast

import numpy as np
import runtime as rt
from transpiler.analysis import analyze
from transpiler.emit import source_text, wrap_lines
from transpiler.naming import Namer
from transpiler.transforms.base import Context

NAMESPACE = {"rt": rt, "np": np}


def picture(source, *transforms, analyzed=False, namespace=None):
    """The converted source text of the one function in `source` after `transforms` ran in order."""
    node = gast.parse(textwrap.dedent(source)).body[0]
    names = {**NAMESPACE, **(namespace or {})}

    def resolve(name):
        if name in names:
            return True, names[name]
        return (True, getattr(builtins, name)) if hasattr(builtins, name) else (False, None)
    ctx = Context(node, "<picture>", Namer(node), resolve)
    if analyzed:
        analyze(node)
    for transform in transforms:
        transform(ctx).transform(node)
    return source_text(node)


def dedent(text_):
    return textwrap.dedent(text_).lstrip("\n")


def text(stmts):
    """Source of a list of gast statements."""
    return wrap_lines(astor.to_source(gast.gast_to_ast(gast.Module(body=list(stmts), type_ignores=[]))))
