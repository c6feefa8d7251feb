"""A tensor-dependent if that binds a name to different functions (`g = f` / `g = k`).

A graph cannot carry a function, so each branch's function is kept aside and the
name becomes a `BranchChoice`: calling it calls, in a cond on the same predicate,
the function each branch picked (both must return values a cond can merge).
"""
import builtins

import runtime as rt
from runtime.control_flow import Undefined
from runtime.errors import ControlFlowError
from runtime.tracer import Tracer


class FunctionChoices:
    """The callables one cond's branches return, per output: parked while the cond merges the rest.

    `convert_call` is operators' (this module sits below it): a chosen function is called converted.
    """

    def __init__(self, pred, names, convert_call):
        self.pred, self.names, self.convert_call = pred, names, convert_call
        self.slots, self.picked, self.outputs = {}, ({}, {}), [None, None]

    def park(self, side, outs):
        self.outputs[side] = outs
        parked = []
        for i, value in enumerate(outs):
            if callable(value) and not isinstance(value, (Undefined, Tracer, rt.Tensor)):
                self.picked[side][i] = value
                value = self.slots.setdefault(i, _Slot())
            parked.append(value)
        return tuple(parked)

    def resolve(self, outs):
        resolved = []
        for i, value in enumerate(outs):
            if isinstance(value, _Slot):
                on_true, on_false = self.picked[0][i], self.picked[1][i]
                same = on_true is on_false or type(on_true) is type(on_false) and _equal(on_true, on_false)
                value = on_true if same else BranchChoice(self.pred, on_true, on_false, self.names[i],
                                                                  self.convert_call)
            resolved.append(value)
        return tuple(resolved)

    def explain(self):
        """A function in one branch and something else in the other: say so in the user's terms."""
        for i in self.slots:
            sides = [i in self.picked[0], i in self.picked[1]]
            if sides[0] != sides[1]:
                fn_side = 0 if sides[0] else 1
                other = self.outputs[1 - fn_side][i]
                fn = self.picked[fn_side][i]
                branch = ("true", "false")
                raise ControlFlowError(
                    f"'{self.names[i]}' is the function '{_name_of(fn)}' in the {branch[fn_side]} branch and "
                    f"{_what(other)} in the {branch[1 - fn_side]} branch of a tensor-dependent if: only a "
                    "function in both branches can be chosen at run time")


def copy_containers(args):
    """Each traced branch mutates its own copy of a Python list or dict (only one branch runs later),
    down to the lists and dicts inside it: `x["a"]["b"] = v` in one branch must not show in the other."""
    return tuple(_copy_container(a) for a in args)


def _copy_container(value):
    if type(value) is list:
        return [_copy_container(v) for v in value]
    if type(value) is dict:
        return {k: _copy_container(v) for k, v in value.items()}
    return value


def _equal(a, b):
    """a == b as a plain truth (bound methods of one object and function compare equal), else False."""
    try:
        return builtins.bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == is not a truth value is not "the same"
        return False


class _Slot:
    """Stands in a branch's output for a parked function (the same object in both branches)."""


def _name_of(fn):
    return getattr(fn, "__name__", None) or type(fn).__name__


def _what(value):
    if isinstance(value, (Tracer, rt.Tensor)):
        return "a tensor"
    return f"a {type(value).__name__}"


class BranchChoice:
    """The function a tensor-dependent if chose: calling it calls each branch's function in a cond on
    the same predicate (so both must return values a cond can merge)."""

    def __init__(self, pred, on_true, on_false, name, convert_call):
        self.pred, self.on_true, self.on_false, self.name = pred, on_true, on_false, name
        self.convert_call = convert_call
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        def call(fn):
            return lambda: (self.convert_call(fn)(*copy_containers(args), **kwargs),)
        label = f"{self.name}(...)"
        try:
            return rt.cond(self.pred, call(self.on_true), call(self.on_false), names=(label,))[0]
        except ControlFlowError as e:
            raise ControlFlowError(
                f"{e} — '{self.name}' is '{_name_of(self.on_true)}' or '{_name_of(self.on_false)}' depending on "
                "a tensor, so both must return values of one structure and dtype") from None

    def __repr__(self):
        return f"<'{self.name}': '{_name_of(self.on_true)}' or '{_name_of(self.on_false)}' chosen by a tensor>"
