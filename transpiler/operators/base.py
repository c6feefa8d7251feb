"""What every operator asks of a value: is it traced (a Variable), its Python truth when that is
known while tracing, and the placeholders converted code binds before a name has a value."""
import runtime as rt
from runtime import tracing
from runtime.control_flow import Undefined
from runtime.tracer import Tracer
from runtime.ops.known import known_value


def _symbolic(value):
    return isinstance(value, Tracer)


def _tuple(result, n):
    """A branch/body function's return value as a tuple of its n outputs."""
    if n == 0:
        return ()
    return (result,) if n == 1 else tuple(result)


def _untuple(values, n):
    if n == 0:
        return None
    return values[0] if n == 1 else tuple(values)


def undefined(name):
    """The placeholder for a name that has no value yet (see runtime.undefined.Undefined)."""
    return Undefined(name, tracing.user_origin())


def outer_value(read, name):
    """A global/nonlocal passed into a branch or loop body: its value, or a placeholder while it has none."""
    try:
        return read()
    except NameError:
        return undefined(name)


def return_placeholder():
    """The return value before any `return` ran: filled with zeros where a graph needs a value."""
    return Undefined("return value", tracing.user_origin(), fill=True)


def _decided(pred):
    """pred's value when it is a Python value or known while tracing (it depends on no input and no
    captured tensor: runtime.ops.known); pred itself when only the Program can tell."""
    if _symbolic(pred):
        known = known_value(pred)
        if known is not None:
            return known
    return pred


def _tensorish(value):
    return isinstance(value, (Tracer, rt.Tensor))


def _in_branch():
    """Is tracing inside a branch or loop body (where a raise may or may not happen at run time)?"""
    block = tracing.current_block()
    return block is not None and block.parent is not None


def _is_array(value):
    return _symbolic(value) and value.kind == "array"
