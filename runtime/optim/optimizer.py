"""The optimizer base: parameter groups, per-parameter state, zero_grad, state_dict (PyTorch's shapes).

Everything a step reads lives in Tensors made when the optimizer is: the state
(moments, step counts) and each group's numeric hyperparameters (a 0-d float64
Tensor beside the Python number). A traced step therefore reads them as inputs
and writes the state in place: `group["lr"] = 0.01` (a schedule) reaches a
compiled training step on its next run without retracing, and the state a
Program wrote is the state the next eager step continues from.
"""
import numpy as np

from ..backends import get_backend
from ..tensor import Tensor, host
from .. import ops, tracing
from ..autodiff.tape import no_grad
from ..autodiff.traced import GradPlace, set_grad
from ..tracer import Tracer

# Hyperparameters whose being zero or not changes the form of the update (which ops a step runs).
_FORM_KEYS = ("momentum", "weight_decay", "nesterov", "amsgrad", "maximize")


class ParamGroup(dict):
    """One group: `params` and its hyperparameters, a dict as in PyTorch. Each number (or tuple of
    numbers, `betas`) also lives in 0-d float64 Tensors (`tensors[key]`), updated on assignment, which
    `check` (the optimizer's) validates as the constructor does: `group["lr"] = nan` is refused."""

    def __init__(self, values, device, check=None):
        super().__init__()
        self.device = device
        self.tensors = {}
        self.check = None
        for key, value in values.items():
            self[key] = value
        self.check = check

    def __setitem__(self, key, value):
        if self.check is not None and key != "params":
            self.check({**self, key: value})
        self.check_form(key, value)
        super().__setitem__(key, value)
        if key == "params" or isinstance(value, bool):
            return
        if _is_number(value):
            self._hold(key, value)
        elif isinstance(value, tuple) and value and all(_is_number(v) for v in value):
            for i, v in enumerate(value):
                self._hold((key, i), v)

    def check_form(self, key, value):
        """Refuse a new value that switches a term of the update on or off (see _FORM_KEYS)."""
        if key in _FORM_KEYS and key in self and bool(self[key]) != bool(value):
            raise ValueError(f"changing {key!r} from {self[key]!r} to {value!r} changes the form of the update; "
                             "make a new optimizer (with load_state_dict to keep its state)")

    def _hold(self, key, value):
        held = self.tensors.get(key)
        if held is None:
            backend = get_backend(self.device)
            self.tensors[key] = Tensor(backend.asarray(np.float64(value)), backend)
        else:
            held.array = held.backend.asarray(np.float64(value))

    def scalar(self, key, dtype):
        """The hyperparameter as a 0-d tensor of `dtype` (read by reference in a traced step)."""
        return ops.astype(self.tensors[key], dtype)


def _is_number(value):
    return isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_finite(value):
    return _is_number(value) and bool(np.isfinite(value))


class Optimizer:
    """Holds parameter groups and state; subclasses define `defaults`, `_new_state(p)` and `_update`."""

    def __init__(self, params, defaults):
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}                 # Parameter -> {name: Tensor}, as PyTorch's optimizer.state
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        group = dict(group)
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__} optimizes Tensors (Parameters), got {type(p).__name__}")
            if p.dtype.kind not in "fc":
                raise TypeError(f"{type(self).__name__} can only optimize float tensors, got {p.dtype}")
            if any(p is q for g in self.param_groups for q in g["params"]):
                raise ValueError("a parameter appears in more than one parameter group")
        unknown = set(group) - set(self.defaults) - {"params"}
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown hyperparameter(s) {sorted(unknown)}")
        values = {**self.defaults, **group, "params": params}
        self._check(values)
        device = params[0].device if params else "cpu"
        self.param_groups.append(ParamGroup(values, device, self._check))
        for p in params:
            self.state[p] = self._new_state(p, values)

    NON_NEGATIVE = ("lr",)     # hyperparameters that may not be negative (each optimizer lists its own)
    FLAGS = ("maximize",)      # hyperparameters that are True or False; the others are numbers
    PAIRS = ()                 # ... or pairs of numbers (Adam's betas)

    def _check(self, group):
        """Raise for a hyperparameter that is not what its default is (TypeError: a number, not a bool or a
        string; a tuple of as many numbers, `betas`; True/False for a flag) or out of its range (ValueError:
        NaN or infinite, negative where NON_NEGATIVE; subclasses add their own checks)."""
        name = type(self).__name__
        for key in self.defaults:
            value = group[key]
            if key in self.FLAGS:
                if not isinstance(value, (bool, np.bool_)) and not (_is_number(value) and value in (0, 1)):
                    raise TypeError(f"{name}: {key} must be True or False, got {value!r}")   # 0/1 too, as in PyTorch
                continue
            values = value if key in self.PAIRS else (value,)
            if key in self.PAIRS and (not isinstance(value, (tuple, list)) or len(value) != 2):
                raise TypeError(f"{name}: {key} must be two numbers, got {value!r}")
            if not all(_is_number(v) for v in values):
                raise TypeError(f"{name}: invalid {key} {value!r} (must be a number)")
            if not all(_is_finite(v) for v in values):
                raise ValueError(f"{name}: invalid {key} {value!r} (must be finite)")
        for key in self.NON_NEGATIVE:
            if group[key] < 0:
                raise ValueError(f"{type(self).__name__}: invalid {key} {group[key]!r} (must be >= 0)")

    def _new_state(self, p, group):
        raise NotImplementedError

    @staticmethod
    def _l2_gradient(p, grad, group):
        """grad (negated under `maximize`) plus weight_decay * p: PyTorch's coupled (L2) weight decay."""
        g = -grad if group["maximize"] else grad
        if group["weight_decay"]:
            g = g + group.scalar("weight_decay", p.dtype) * p
        return g

    def _update(self, p, grad, state, group):
        raise NotImplementedError

    def step(self):
        """Update every parameter that has a `.grad` (parameters without one are left alone)."""
        with no_grad():            # an update is not part of what a later backward() differentiates
            number = 0
            for group in self.param_groups:
                for p in group["params"]:
                    grad = _read_grad(p, f"{type(self).__name__} parameter {number}")
                    number += 1
                    if grad is not None:
                        self._update(p, grad, self.state[p], group)

    def minimize(self, loss=None):
        """Paddle's name for step() after `loss.backward()` (it does not differentiate)."""
        self.step()

    def clear_grad(self, set_to_zero=False):
        """Paddle's name for zero_grad."""
        self.zero_grad(set_to_none=not set_to_zero)

    def zero_grad(self, set_to_none=True):
        """Forget the gradients: `.grad = None` (PyTorch's default), or zeros with set_to_none=False."""
        number = 0
        for group in self.param_groups:
            for p in group["params"]:
                label = f"{type(self).__name__} parameter {number}.grad"
                number += 1
                if set_to_none:
                    set_grad(p, None, label)
                elif p.grad is not None:
                    set_grad(p, ops.zeros_like(p.grad), label)

    # --- state ----------------------------------------------------------------------------
    def state_dict(self):
        """{"state": {index: {name: Tensor}}, "param_groups": [{hyperparameters, "params": [index]}]},
        parameters numbered in group order, as PyTorch's."""
        index, groups, state = 0, [], {}
        for group in self.param_groups:
            numbers = []
            for p in group["params"]:
                state[index] = {k: Tensor(v.array, v.backend) for k, v in self.state[p].items()}
                numbers.append(index)
                index += 1
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": numbers})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Take hyperparameters and state from `state_dict` (PyTorch's layout; Tensors or arrays), writing
        into this optimizer's own state Tensors, so compiled training steps continue from it.

        Everything is checked first (the layout, each group's hyperparameters as the constructor checks
        them, each state value's shape and dtype), then written: a refused state_dict changes nothing."""
        if not isinstance(state_dict, dict) or not isinstance(state_dict.get("state"), dict) or \
                not isinstance(state_dict.get("param_groups"), (list, tuple)):
            raise ValueError("load_state_dict: expected {'state': {...}, 'param_groups': [...]}, the layout "
                             "state_dict() returns")
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                not isinstance(g, dict) or not isinstance(g.get("params"), (list, tuple)) or
                len(g["params"]) != len(own["params"]) for g, own in zip(groups, self.param_groups)):
            raise ValueError("load_state_dict: the state has a different number of parameter groups or "
                             "parameters per group than this optimizer")
        hyperparameters = [self._loaded_group(i, g, own) for i, (g, own) in enumerate(zip(groups, self.param_groups))]
        writes = []
        for g, own in zip(groups, self.param_groups):
            for number, p in zip(g["params"], own["params"]):
                saved = state_dict["state"].get(number, {})
                for name, tensor in self.state[p].items():
                    if not isinstance(saved, dict) or name not in saved:
                        raise ValueError(f"load_state_dict: parameter {number} has no {name!r} in the state")
                    writes.append((tensor, _loaded_array(saved[name], tensor, f"{name!r} of parameter {number}")))
        for tensor, array in writes:
            tensor.set_value(array)
        for own, values in hyperparameters:
            for key, value in values.items():
                own[key] = value

    def _loaded_group(self, index, saved, own):
        """(own group, the hyperparameters to give it), checked as the constructor checks them."""
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k != "params"}
        try:
            self._check({**{k: v for k, v in own.items() if k != "params"}, **values})
            for key, value in values.items():
                own.check_form(key, value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"load_state_dict: parameter group {index}: {e}") from None
        return own, values

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])


def _loaded_array(value, tensor, label):
    """A state value as a host array that set_value takes without fail (the shape and dtype checked here)."""
    array = np.asarray(host(value) if isinstance(value, Tensor) else value)
    if array.shape != tensor.shape:
        raise ValueError(f"load_state_dict: {label} has shape {array.shape}, expected {tensor.shape}")
    if array.dtype.kind not in "biufc" or not np.can_cast(array.dtype, tensor.dtype, casting="same_kind"):
        raise TypeError(f"load_state_dict: {label} is {array.dtype}, which does not cast to {tensor.dtype}")
    return array


def _read_grad(p, label):
    """p.grad; while tracing, an eager gradient (from a backward() before the call) is a place read on
    every call: a Program feeds the `.grad` each call finds there, and None <-> tensor retraces."""
    grad = p.grad
    if tracing.current_block() is not None and not isinstance(grad, Tracer):
        tracing.note_place_read(f"{label}.grad", GradPlace(p), "grad", grad)
    return grad


def eager_zeros(p):
    """A zero Tensor like `p` (same backend), made directly: never recorded, even while tracing."""
    return Tensor(p.backend.xp.zeros(p.shape, dtype=p.dtype), p.backend)


def step_counter(p):
    """A parameter's step count: a 0-d float32 Tensor beside it, as PyTorch keeps it."""
    return Tensor(p.backend.xp.zeros((), dtype="float32"), p.backend)
