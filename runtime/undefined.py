"""`Undefined`: the value of a name on a path that never assigned it (below every layer that passes it along)."""


AT_RUN_TIME = "at run time"


class Undefined:
    """The value of a name on a path that never assigned it.

    Harmless while it is only passed around (into and out of branches and
    loops); any real use of it — arithmetic, an op, truth, attribute access,
    returning it — raises UnboundLocalError naming the variable, where it was
    left undefined, and (through the frame) the line that read it.
    """

    __slots__ = ("name", "origin", "fill", "bound")

    def __init__(self, name, origin=None, fill=False, bound=None):
        self.name = name
        self.origin = origin
        # True: may be replaced by a zeros placeholder (values whose reads are guarded); AT_RUN_TIME: by an
        # `undefined` op (a name a branch that returns/breaks/continues left unbound: Python reads it on no
        # path that follows, and a read there would raise when the Program runs)
        self.fill = fill
        # the value the name has on the paths that do bind it (a tensor `if` that binds it in one branch):
        # a tensor loop whose body leaves the name so carries it with an `undefined` op for the other paths
        self.bound = bound

    def __repr__(self):
        return f"Undefined({self.name!r})"

    def error(self):
        where = f" (it is assigned only on some paths through the code at {self.origin})" if self.origin else ""
        return UnboundLocalError(
            f"local variable '{self.name}' is referenced before assignment: it has no value on every "
            f"path{where}")

    def raise_error(self, *args, **kwargs):
        raise self.error()

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        raise self.error()

    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __setitem__ = raise_error
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = raise_error
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = raise_error
    __rmatmul__ = __neg__ = __pos__ = __abs__ = __invert__ = __index__ = __float__ = __int__ = raise_error
    __lt__ = __le__ = __gt__ = __ge__ = raise_error
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = raise_error
    __array__ = raise_error

    def __eq__(self, other):
        raise self.error()

    def __ne__(self, other):
        raise self.error()

    __hash__ = object.__hash__
