"""`verify(program)`: the Program invariants, checked on a live Program.

The JSON reader already checks every invariant a file can break; a live Program
is checked by the same reader over its JSON form, types included (each op's own
shape/dtype rule must make the outputs it declares; a dim one side leaves
unknown is a compatible refinement), plus what JSON cannot show: two inputs under
one name (feeds and parameters are found by input name; every other value's name is
only a hint, written unique by `naming.value_names`). About 3 ms for a corpus Program.
"""
from .serialization import ProgramFormatError, program_from_dict, program_to_dict


def verify(program):
    """Raise ProgramFormatError naming the first broken invariant (a mistyped op: the op, where the
    user's code made it, what it declares and what its rule makes); return the Program unchanged."""
    source = f"program '{program.name}'"
    listed, named = set(), {}
    for var in program.inputs:
        if id(var) in listed:
            raise ProgramFormatError(f"{source}: input '{var.name}' is listed twice")
        listed.add(id(var))
        if named.setdefault(var.name, var) is not var:
            raise ProgramFormatError(f"{source}: two inputs are both named '{var.name}' (feeds and parameters "
                                     "are found by an input's name)")
    program_from_dict(program_to_dict(program), source, check_types=True)
    return program
