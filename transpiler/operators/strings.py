"""f-strings: the text itself on Python values, a Text formatted when the Program runs when a field
holds a traced value."""
import builtins

from runtime.ops.control import safe_field, Text

from .base import _in_branch, _symbolic


_CONVERSIONS = {-1: lambda v: v, ord("s"): builtins.str, ord("r"): builtins.repr, ord("a"): builtins.ascii}


def convert_fstring(literals, values, conversions, specs):
    """An f-string given in pieces: the text itself on Python values; a Text when a value
    is a tensor being traced (plain `{x}` fields only: what print can format)."""
    fields = [format(_CONVERSIONS[c](v), spec) if not _symbolic(v) else None
              for v, c, spec in zip(values, conversions, specs)]
    if None not in fields:
        return "".join(lit + field for lit, field in zip(literals, fields + [""]))
    template, tensors = [], []
    for lit, field, v, c, spec in zip(literals, fields, values, conversions, specs):
        template.append(_escape(lit))
        if field is not None:
            template.append(_escape(field))
        elif safe_field("", spec, None if c == -1 else chr(c)):     # formatted when the Program runs
            template.append("{" + ("" if c == -1 else "!" + chr(c)) + (":" + spec if spec else "") + "}")
            tensors.append(v)
        elif _in_branch():
            raise TypeError("a tensor in an f-string message under a tensor-dependent condition is formatted "
                            "when the Program runs: write it as {value}, {value!r} or with a short :spec "
                            "(widths and precisions of two digits at most)")
        else:       # raised while tracing, on every run: the Variable has no value to show
            template.append(_escape(repr(v)))
    template.append(_escape(literals[-1]))
    return Text("".join(template), tensors)


def _escape(text):
    return text.replace("{", "{{").replace("}", "}}")
