"""Errors the runtime raises where the user's input, not our code, is wrong."""


class SymbolicBoolError(TypeError):
    """`bool()` of a traced Variable: Python control flow cannot branch on a value that does not exist yet."""

    def __init__(self, var):
        super().__init__(
            f"the truth value of Variable '{var.name}' ({var.type_str()}) is not known while tracing: "
            "Python `if`/`while`/`and`/`or` cannot branch on it here. Put the code in a function "
            "decorated with @to_static (which converts such control flow into cond/while ops), "
            "or use rt.cond / rt.while_loop / rt.where directly")


class ControlFlowError(TypeError):
    """Branches or loop iterations disagree in structure or dtype."""


class FeedError(ValueError):
    """A value fed to a Program does not fit the Program's declared input."""


class ProgramRunError(RuntimeError):
    """An op failed while a Program ran; the message names the op and the user's line."""


class IterationLimitError(ProgramRunError):
    """A `while` loop ran more iterations than the executor's opt-in `max_iterations` allows."""


class AxisError(ValueError, IndexError):
    """An axis out of bounds for the array's rank: both a ValueError and an IndexError, as NumPy's."""
