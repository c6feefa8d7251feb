"""The readable text form of a Program (`str(program)`), sub-blocks indented under their op, and its
Graphviz DOT picture (`program_to_dot`, what `dy2static program --format dot` writes).

ir.py is data only; this module gives Program its `str` and Operator its `repr` (bottom). A value's
`name` is a hint: the text names each value by `naming.value_names` (hints made unique in definition
order); an Operator printed alone shows its values' hints.
"""
import itertools
import textwrap

from .ir import Operator, Program, Variable, sub_block_attrs
from .naming import value_names


def _value(x, names=None):
    if isinstance(x, Variable):
        return names[id(x)] if names is not None else x.name
    return repr(x)


def _name(v, names):
    return names[id(v)] if names is not None else v.name


def _attr(value):
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_attr(v) for v in value) + (",)" if len(value) == 1 else ")")
    return repr(value)


def format_op(op, indent="", names=None):
    """One op as a line; `names`: the Program's value names (`value_names`), else the values' hints."""
    outs = ", ".join(f"{_name(o, names)}: {o.type_str()}" for o in op.outputs)
    args = [_value(x, names) for x in op.inputs]
    shown = {k: v for k, v in op.attrs.items() if k not in sub_block_attrs(op.type) and k != "origin"}
    args += [f"{k}={_attr(v)}" for k, v in shown.items()]
    call = f"{op.type}({', '.join(args)})"
    return f"{indent}{outs} = {call}" if outs else f"{indent}{call}"


def _format_block(block, indent, lines, number, names):
    """`number` counts blocks in the order they are printed (the global block is 0): a block has no
    number of its own, and this is the order `Program.blocks` and saved files use."""
    for op in block.ops:
        lines.append(format_op(op, indent, names))
        for key in sub_block_attrs(op.type):
            sub = op.attrs[key]
            params = ", ".join(f"{names[id(p)]}: {p.type_str()}" for p in sub.params)
            closure = ", ".join(f"{names[id(p)]} = {_value(x, names)}" for p, x in _closure_pairs(op, sub))
            closure = f" closure({closure})" if closure else ""
            lines.append(f"{indent}  {key.replace('_block', '')} block {next(number)}({params}){closure}:")
            _format_block(sub, indent + "    ", lines, number, names)
            results = ", ".join(_value(r, names) for r in sub.results)
            lines.append(f"{indent}    yield ({results})")


def _closure_pairs(op, sub):
    """(closure param, the op input it stands for): the op's last inputs feed every block's closure."""
    n = len(sub.closure)
    return list(zip(sub.closure, op.inputs[len(op.inputs) - n:])) if n else []


def format_program(program):
    names = value_names(program)
    params = ", ".join(f"{names[id(v)]}: {v.type_str()}" for v in program.inputs)
    lines = [f"program {program.name}({params}):"]
    _format_block(program.global_block, "  ", lines, itertools.count(1), names)
    lines.append(f"  return ({', '.join(names[id(v)] for v in program.outputs)})")
    return "\n".join(lines)


def _dot_quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def program_to_dot(program):
    """Graphviz DOT text of a Program: ops as boxes, values as labeled edges, sub-blocks as clusters."""
    lines = [f"digraph {_dot_quote(program.name)} {{", "  compound=true;", "  rankdir=TB;",
             '  node [fontname="Helvetica", fontsize=10];', '  edge [fontname="Helvetica", fontsize=9];']
    names = value_names(program)
    producer = {}          # id(value) -> node id that makes it
    counter = itertools.count()
    block_number = itertools.count(1)

    def node(label, indent, **style):
        node_id = f"n{next(counter)}"
        attrs = ", ".join([f"label={_dot_quote(label)}"] + [f"{k}={_dot_quote(v)}" for k, v in style.items()])
        lines.append(f"{indent}{node_id} [{attrs}];")
        return node_id

    def edges_into(node_id, values, indent):
        for value in values:
            if isinstance(value, Variable) and id(value) in producer:
                lines.append(f"{indent}{producer[id(value)]} -> {node_id} [label={_dot_quote(names[id(value)])}];")

    for var in program.inputs:
        shape = "box3d" if var.persistable else "ellipse"
        producer[id(var)] = node(f"{names[id(var)]}\n{var.type_str()}", "  ", shape=shape, style="filled",
                                  fillcolor="#dbe9f6" if not var.persistable else "#eeeeee")

    def emit_block(block, indent, root=False):
        first = None
        for var in block.params:
            producer[id(var)] = node(f"{names[id(var)]}\n{var.type_str()}", indent, shape="ellipse")
            first = first or producer[id(var)]
        for op in block.ops:
            extras = [repr(v) for v in op.inputs if not isinstance(v, Variable)]
            extras += [f"{k}={v!r}" for k, v in op.attrs.items() if k not in sub_block_attrs(op.type) and k != "origin"]
            label = op.type + ("\n" + textwrap.shorten(", ".join(extras), 60) if extras else "")
            shape = "diamond" if sub_block_attrs(op.type) else "box"      # a region op: cond, while, ...
            op_id = node(label, indent, shape=shape, style="rounded" if shape == "box" else "solid")
            first = first or op_id
            edges_into(op_id, op.inputs, indent)
            for key in sub_block_attrs(op.type):
                sub, number = op.attrs[key], next(block_number)
                for p, x in _closure_pairs(op, sub):      # an edge from where the value is made
                    if isinstance(x, Variable) and id(x) in producer:
                        producer[id(p)] = producer[id(x)]
                cluster = f"cluster_b{number}"
                lines.append(f"{indent}subgraph {cluster} {{")
                title = f"{op.type} {key.replace('_block', '')} block {number}"
                lines.append(f"{indent}  label={_dot_quote(title)};")
                lines.append(f'{indent}  style="dashed";')
                entry = emit_block(sub, indent + "  ")
                lines.append(f"{indent}}}")
                lines.append(f'{indent}{op_id} -> {entry} [lhead={cluster}, style="dashed", arrowhead="odot"];')
            for out in op.outputs:
                producer[id(out)] = op_id
        yield_id = node("yield", indent, shape="plaintext") if not root else None
        if yield_id is not None:
            edges_into(yield_id, block.results, indent)
        return first or yield_id

    emit_block(program.global_block, "  ", root=True)
    out_id = node("return", "  ", shape="doublecircle")
    edges_into(out_id, program.outputs, "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _operator_repr(op):
    return f"Operator({op.type}: {format_op(op).strip()})"


Program.__str__ = format_program
Operator.__repr__ = _operator_repr
