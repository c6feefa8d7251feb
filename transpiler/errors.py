"""Errors that point at the user's own code, and the mapping of run-time errors back to it.

Converted code is compiled with the user's file name and original line numbers,
so every traceback frame of converted code already names the user's line; we
put that line into the exception *message* as well, so it survives logging
and test runners that show only `str(e)`.
"""
import linecache
import warnings


class ConversionError(Exception):
    """A function cannot be converted: unsupported syntax, or tensor control flow where it cannot go."""

    def __init__(self, message, filename=None, lineno=None, hint=None):
        self.filename, self.lineno, self.hint = filename, lineno, hint
        self.reason = message
        super().__init__(format_located(message, filename, lineno, hint))


class ConversionWarning(UserWarning):
    """Conversion failed and `full_graph=False` fell back to running the function eagerly."""


def source_line(filename, lineno):
    return linecache.getline(filename, lineno).strip() if filename and lineno else ""


def format_located(message, filename, lineno, hint=None):
    if not filename:
        return message + (f"\n  hint: {hint}" if hint else "")
    text = f"{message}\n  File \"{filename}\", line {lineno}"
    line = source_line(filename, lineno)
    if line:
        text += f"\n    {line}"
    if hint:
        text += f"\n  hint: {hint}"
    return text


def user_frames(tb, converted_codes):
    """(filename, lineno, name) of traceback frames that run converted (= the user's) code."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code in converted_codes:
            out.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return out


def relocate(error, converted_codes):
    """The same error, its message naming the user's innermost line; None if it has no user frame."""
    if getattr(error, "_dy2static_located", False) or isinstance(error, ConversionError):
        return None
    frames = user_frames(error.__traceback__, converted_codes)
    if not frames:
        return None
    filename, lineno, name = frames[-1]
    # a branch or loop body is the user's function itself: name it (generated names are `__kind_n`)
    name = next((n for _, _, n in reversed(frames) if not (n.startswith("__") and not n.endswith("__"))), name)
    line = source_line(filename, lineno)
    where = f"\n  File \"{filename}\", line {lineno}, in {name}" + (f"\n    {line}" if line else "")
    message = (str(error.args[0]) if len(error.args) == 1 else str(error)) + where
    try:
        new = type(error)(message)
    except Exception:
        return None
    new._dy2static_located = True
    new.filename, new.lineno = filename, lineno
    return new


def recursion_error(error, converted_codes):
    """A RecursionError while tracing that a converted function's calls of itself caused: a ConversionError
    naming that function and the line of its recursive call; None when no user function recurs."""
    calls, tb = [], error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code in converted_codes:
            calls.append((code, tb.tb_lineno))
        tb = tb.tb_next
    counts = {}
    for code, _ in calls:
        if not code.co_name.startswith("__"):
            counts[code] = counts.get(code, 0) + 1
    if not counts or max(counts.values()) < 8:
        return None
    code = max(counts, key=counts.get)
    deepest = max(i for i, (c, _) in enumerate(calls) if c is code)
    line = calls[deepest - 1][1] if deepest > 0 else code.co_firstlineno
    return ConversionError(
        f"'{code.co_name}' calls itself without end while it is traced: its base case depends on a tensor, so "
        "every traced call traces the recursive branch again", code.co_filename, line,
        "use to_static(..., full_graph=False) to run it eagerly, or write the recursion as a `while` loop "
        "(which converts to a graph loop)")


def warn_fallback(fn, error):
    warnings.warn(f"could not convert {getattr(fn, '__qualname__', fn)!s} to a static graph; running it "
                  f"eagerly (full_graph=False): {error}", ConversionWarning, stacklevel=3)
