"""The readable text form of a Program (`str(program)`), sub-blocks indented under their op.

ir.py is data only; this module gives Program its `str` and Operator its `repr` (bottom).
"""
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


def _format_block(block, indent, lines):
    program = block.program
    for op in block.ops:
        lines.append(format_op(op, indent))
        for key in sub_block_attrs(op.type):
            sub = program.blocks[op.attrs[key]]
            params = ", ".join(f"{p.name}: {p.type_str()}" for p in sub.params)
            lines.append(f"{indent}  {key.replace('_block', '')} block {sub.idx}({params}):")
            _format_block(sub, indent + "    ", lines)
            results = ", ".join(_value(r) for r in sub.results)
            lines.append(f"{indent}    yield ({results})")


def format_program(program):
    params = ", ".join(f"{v.name}: {v.type_str()}" for v in program.inputs)
    lines = [f"program {program.name}({params}):"]
    _format_block(program.global_block, "  ", lines)
    lines.append(f"  return ({', '.join(v.name for v in program.outputs)})")
    return "\n".join(lines)


def _operator_repr(op):
    return f"Operator({op.type}: {format_op(op).strip()})"


Program.__str__ = format_program
Operator.__repr__ = _operator_repr
