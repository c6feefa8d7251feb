"""Annotations: facts the analyses attach to gast nodes, keyed by an enum.

Transformers read these facts instead of re-deriving them, so the keys are an
enum (as in AutoGraph's pyct `anno`): what a node may carry is listed in one
place, and every reader and writer of a fact can be found with grep.

The values live in one dict attribute on the node rather than in `_fields`, so
gast/astor printers and `gast.dump` never see them; a node built by a
transformer simply carries none until `analyze` runs again. The facts a
transform leaves for later ones (a loop's exit flag, a lowered return) are
keys here too, never attributes of their own.
"""
import enum

_ATTR = '_dy2static_anno'
_RAISE = object()


class Anno(enum.Enum):
    """What `analyze` records. Name sets hold local names only."""

    LIVE_IN = 'names live just before the statement'
    LIVE_OUT = 'names live just after the statement (after the whole compound statement)'
    DEFINED_IN = 'names bound on every path that reaches the statement'
    MAYBE_DEFINED_IN = 'names bound on at least one path that reaches the statement (see maybe_defined_in)'
    CFG = 'on the FunctionDef: (control-flow graph, parameters), for analyses solved on demand'
    BODY_ACTIVITY = 'Activity of node.body'
    ORELSE_ACTIVITY = 'Activity of node.orelse'
    TEST_ACTIVITY = 'Activity of an if/while test, or of a for loop iter and target'
    SCOPE = 'Activity of a whole function body, with its parameters'
    CAPTURED = 'on the FunctionDef: local names a nested def/lambda/class/generator reads (closure cells)'
    # set by transforms, for the transforms and analyses after them
    EXIT_FLAG = 'on a loop: the flag whose truth ends it (a lowered break, or the return flag)'
    RETURN_VALUE = 'on an Assign: it stores the value of a lowered `return`'
    RETURNED = 'on an IfExp the return lowering built (a folded if/return): it picks the return value'
    TRUTH_ONLY = 'on an and/or/not/comparison: only its truth is used (a test)'
    CONVERTED = 'on a nested user FunctionDef: converted on its own already'


def getanno(node, key, default=_RAISE):
    """The value stored under `key`; `default` if given, else KeyError."""
    annotations = getattr(node, _ATTR, {})
    if key in annotations:
        return annotations[key]
    if default is _RAISE:
        raise KeyError(f'{type(node).__name__} at line {getattr(node, "lineno", "?")} '
                       f'has no annotation {key}')
    return default


def setanno(node, key, value):
    """Store `value` under `key`, replacing any earlier value."""
    annotations = getattr(node, _ATTR, None)
    if annotations is None:
        annotations = {}
        setattr(node, _ATTR, annotations)
    annotations[key] = value


def hasanno(node, key):
    return key in getattr(node, _ATTR, {})
