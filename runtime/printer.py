"""The readable text form of a Program (`str(program)`), sub-blocks indented under their op, and its
Graphviz DOT picture (`program_to_dot`, what `dy2static program --format dot` writes).

ir.py is data only; this module gives Program its `str` and Operator its `repr` (bottom).
"""
import itertools
import textwrap

from .ir import Operator, Program, Variable, sub_block_attrs


def _value(x):
    return x.name if isinstance(x, Variable) else repr(x)


def _attr(value):
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_attr(v) for v in value) + (",)" if len(value) == 1 else ")")
    return repr(value)


def format_op(op, indent=""):
    outs = ", ".join(f"{o.name}: {o.type_str()}" for o in op.outputs)
    args = [_value(x) for x in op.inputs]
    shown = {k: v for k, v in op.attrs.items() if k not in sub_block_attrs(op.type) and k != "origin"}
    args += [f"{k}={_attr(v)}" for k, v in shown.items()]
    call = f"{op.type}({', '.join(args)})"
    return f"{indent}{outs} = {call}" if outs else f"{indent}{call}"


def _format_block(block, indent, lines, number):
    """`number` counts blocks in the order they are printed (the global block is 0): a block has no
    number of its own, and this is the order `Program.blocks` and saved files use."""
    for op in block.ops:
        lines.append(format_op(op, indent))
        for key in sub_block_attrs(op.type):
            sub = op.attrs[key]
            params = ", ".join(f"{p.name}: {p.type_str()}" for p in sub.params)
            closure = ", ".join(f"{p.name} = {_value(x)}" for p, x in _closure_pairs(op, sub))
            closure = f" closure({closure})" if closure else ""
            lines.append(f"{indent}  {key.replace('_block', '')} block {next(number)}({params}){closure}:")
            _format_block(sub, indent + "    ", lines, number)
            results = ", ".join(_value(r) for r in sub.results)
            lines.append(f"{indent}    yield ({results})")


def _closure_pairs(op, sub):
    """(closure param, the op input it stands for): the op's last inputs feed every block's closure."""
    n = len(sub.closure)
    return list(zip(sub.closure, op.inputs[len(op.inputs) - n:])) if n else []


def format_program(program):
    params = ", ".join(f"{v.name}: {v.type_str()}" for v in program.inputs)
    lines = [f"program {program.name}({params}):"]
    _format_block(program.global_block, "  ", lines, itertools.count(1))
    lines.append(f"  return ({', '.join(v.name for v in program.outputs)})")
    return "\n".join(lines)


def _dot_quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def program_to_dot(program):
    """Graphviz DOT text of a Program: ops as boxes, values as labeled edges, sub-blocks as clusters."""
    lines = [f"digraph {_dot_quote(program.name)} {{", "  compound=true;", "  rankdir=TB;",
             '  node [fontname="Helvetica", fontsize=10];', '  edge [fontname="Helvetica", fontsize=9];']
    producer = {}          # variable name -> node id that makes it
    counter = itertools.count()
    block_number = itertools.count(1)

    def node(label, indent, **style):
        node_id = f"n{next(counter)}"
        attrs = ", ".join([f"label={_dot_quote(label)}"] + [f"{k}={_dot_quote(v)}" for k, v in style.items()])
        lines.append(f"{indent}{node_id} [{attrs}];")
        return node_id

    def edges_into(node_id, values, indent):
        for value in values:
            if isinstance(value, Variable) and value.name in producer:
                lines.append(f"{indent}{producer[value.name]} -> {node_id} [label={_dot_quote(value.name)}];")

    for var in program.inputs:
        shape = "box3d" if var.persistable else "ellipse"
        producer[var.name] = node(f"{var.name}\n{var.type_str()}", "  ", shape=shape, style="filled",
                                  fillcolor="#dbe9f6" if not var.persistable else "#eeeeee")

    def emit_block(block, indent, root=False):
        first = None
        for var in block.params:
            producer[var.name] = node(f"{var.name}\n{var.type_str()}", indent, shape="ellipse")
            first = first or producer[var.name]
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
                    if isinstance(x, Variable) and x.name in producer:
                        producer[p.name] = producer[x.name]
                cluster = f"cluster_b{number}"
                lines.append(f"{indent}subgraph {cluster} {{")
                title = f"{op.type} {key.replace('_block', '')} block {number}"
                lines.append(f"{indent}  label={_dot_quote(title)};")
                lines.append(f'{indent}  style="dashed";')
                entry = emit_block(sub, indent + "  ")
                lines.append(f"{indent}}}")
                lines.append(f'{indent}{op_id} -> {entry} [lhead={cluster}, style="dashed", arrowhead="odot"];')
            for out in op.outputs:
                producer[out.name] = op_id
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
