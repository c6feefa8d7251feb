"""`verify(program)`: the Program invariants, checked on a live Program.

The JSON reader already checks every invariant a file can break; a live Program
is checked by the same reader over its JSON form, types included (each op's own
shape/dtype rule must make the outputs it declares; a dim one side leaves
unknown is a compatible refinement), plus what JSON cannot show: two distinct
Variables sharing one name (the reader would see one name twice as one value,
which is exactly the bug it must catch). About 3 ms for a corpus Program.
"""
from .ir import Variable
from .serialization import ProgramFormatError, program_from_dict, program_to_dict


def verify(program):
    """Raise ProgramFormatError naming the first broken invariant (a mistyped op: the op, where the
    user's code made it, what it declares and what its rule makes); return the Program unchanged."""
    source = f"program '{program.name}'"
    by_name = {}
    for var in _referenced(program):
        other = by_name.setdefault(var.name, var)
        if other is not var:
            raise ProgramFormatError(f"{source}: two different values are both named '{var.name}' "
                                     f"({other.type_str()} and {var.type_str()})")
    names = [v.name for v in program.inputs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ProgramFormatError(f"{source}: input '{dup}' is listed twice")
    program_from_dict(program_to_dict(program), source, check_types=True)
    return program


def _referenced(program):
    yield from program.inputs
    yield from program.outputs
    for block in program.blocks:
        yield from block.vars.values()
        yield from block.params
        yield from block.closure
        yield from block.results
        for op in block.ops:
            yield from (v for v in op.inputs if isinstance(v, Variable))
            yield from op.outputs
