"""How a shape is spelled in every message and in `str(program)`: [2, ?, 3], `?` a dim known only at run time."""


def shape_text(shape):
    return "[" + ", ".join("?" if d == -1 else str(d) for d in shape) + "]"
